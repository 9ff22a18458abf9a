//! The skin-plus-residual encoding against bounds derived from its quanta.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use super::*;
use crate::format::impostor::cross;

/// A deterministic generator of values in `[0, 1)` (a 64-bit LCG's high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// The angle between unit vectors, radians (`atan2(|a x b|, a . b)`: accurate near 0).
fn angle(a: [f32; 3], b: [f32; 3]) -> f32 {
    let c = cross(a, b);
    dot(c, c).sqrt().atan2(dot(a, b))
}

fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d: [f32; 3] = std::array::from_fn(|i| a[i] - b[i]);
    dot(d, d).sqrt()
}

/// `R(q) v` for a unit quaternion `q = (x, y, z, w)`, in f64.
fn rotate(q: [f32; 4], v: [f32; 3]) -> [f32; 3] {
    let [x, y, z, w] = q.map(f64::from);
    let v = v.map(f64::from);
    // v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z).
    let u = [x, y, z];
    let c = |a: [f64; 3], b: [f64; 3]| {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    };
    let uv = c(u, v);
    let uuv = c(u, uv);
    std::array::from_fn(|i| (v[i] + 2.0 * w * uv[i] + 2.0 * uuv[i]) as f32)
}

#[test]
fn the_steps_round_within_the_bounds_and_bad_bounds_are_refused() {
    let b = ResidualBounds::default();
    b.validate().unwrap();
    // Half a step per component is the bound, as a distance and as an angle.
    assert!((3f32.sqrt() * b.position_step() / 2.0 - b.position_m).abs() <= b.position_m * 1e-6);
    assert!((b.normal_step() / 2f32.sqrt() - b.normal_rad).abs() <= b.normal_rad * 1e-6);
    assert!((3.0 * b.oct_step() / 2f32.sqrt() - b.normal_rad).abs() <= b.normal_rad * 1e-6);
    for bad in [
        ResidualBounds { position_m: 0.0, ..b },
        ResidualBounds { position_m: -1.0, ..b },
        ResidualBounds { position_m: 2.0, ..b },
        ResidualBounds { normal_rad: f32::NAN, ..b },
        ResidualBounds { normal_rad: 1.0, ..b },
    ] {
        assert!(matches!(bad.validate(), Err(Error::OutOfRange { .. } | Error::NotFinite { .. })), "{bad:?}");
    }
}

#[test]
fn extract_signed_is_wgsls_extract_bits_of_an_i32() {
    assert_eq!(extract_signed(0b1011_0000, 4, 4), -5);
    assert_eq!(extract_signed(0b0111_0000, 4, 4), 7);
    assert_eq!(extract_signed(0xFFFF_FFFF, 0, 1), -1);
    assert_eq!(extract_signed(0xFFFF_FFFF, 7, 0), 0);
    assert_eq!(extract_signed(0x8000_0000, 17, 15), -16384);
}

#[test]
fn the_stream_reads_back_every_field_at_every_offset() {
    let mut rng = Lcg(11);
    let mut writer = ResidualStreamWriter::new();
    let mut written = Vec::new();
    for _ in 0..300 {
        // Frames of up to 64 bits: one window or two.
        let bp = (rng.next() * 16.0) as u32;
        let bn = ((rng.next() * 16.0) as u32).min((64 - 3 * bp) / 2);
        let widths = ResidualWidths { position_bits: bp, normal_bits: bn, absolute_normal: rng.next() < 0.5 };
        let base = writer.position() as u32;
        let field = |rng: &mut Lcg, bits: u32| {
            if bits == 0 { 0 } else { (rng.next() * (1u32 << bits) as f32) as i32 - (1i32 << (bits - 1)) }
        };
        let frames: Vec<ResidualFields> = (0..5)
            .map(|_| ResidualFields {
                position: [field(&mut rng, bp), field(&mut rng, bp), field(&mut rng, bp)],
                normal: [field(&mut rng, bn), field(&mut rng, bn)],
            })
            .collect();
        for f in &frames {
            writer.push(f, widths);
        }
        written.push((base, widths, frames));
    }
    let bits = writer.position();
    let stream = writer.finish();
    assert_eq!(stream.len() as u64, bits.div_ceil(32) + 1, "one padding word");
    for (base, widths, frames) in written {
        assert_eq!(ResidualWidths::from_bits(widths.to_bits()), widths);
        for (f, fields) in frames.iter().enumerate() {
            assert_eq!(read_frame_fields(&stream, base, widths, f as u32), *fields, "{widths:?} frame {f}");
        }
    }
}

/// A test animation: `n` vertices on a 1 m ring around +Y, two bones (bone 0 still, bone 1 turning
/// about +Y by `0.1 f` radians at frame `f` and rising 1 cm a frame), each vertex weighted between
/// them by its angle; the source is that skin moved by `wobble` metres at most (smooth in the
/// vertex and frame) with its normal tilted by up to `tilt` radians, and vertex 0's normal reversed
/// (the tangent-plane residual cannot hold it).
struct Ring {
    /// Per vertex: rest position (= rest normal) and the weight of the turning bone.
    vertices: Vec<([f32; 3], f32)>,
    wobble: f32,
    tilt: f32,
}

impl Ring {
    fn new(n: u32, _frames: u32, wobble: f32, tilt: f32) -> Ring {
        let vertices = (0..n)
            .map(|v| {
                let a = v as f32 / n as f32 * std::f32::consts::TAU;
                ([a.cos(), 0.0, a.sin()], 0.5 + 0.5 * a.sin())
            })
            .collect();
        Ring { vertices, wobble, tilt }
    }

    /// The linear blend of the still bone and the turning one (rotation `0.1 f` about +Y, rising
    /// `0.01 f` m), weight `w` on the turning one; the normal rotated by the blend's linear part.
    fn skinned(&self, f: u32, v: u32) -> ([f32; 3], [f32; 3]) {
        let (rest, w) = self.vertices[v as usize];
        let turned = rotate([0.0, (0.05 * f as f32).sin(), 0.0, (0.05 * f as f32).cos()], rest);
        let blend: [f32; 3] = std::array::from_fn(|i| (1.0 - w) * rest[i] + w * turned[i]);
        let p = [blend[0], blend[1] + w * 0.01 * f as f32, blend[2]];
        (p, normalize3(blend))
    }

    fn source(&self, f: u32, v: u32) -> ([f32; 3], [f32; 3]) {
        let (p, n) = self.skinned(f, v);
        let phase = v as f32 * 0.7 + f as f32 * 0.3;
        let p = [p[0] + self.wobble * phase.sin(), p[1] + self.wobble * (1.3 * phase).cos(), p[2]];
        let (t1, _) = tangent_basis(n);
        let k = self.tilt * (0.9 * phase).sin();
        let mut n = normalize3(std::array::from_fn(|i| n[i] + k.tan() * t1[i]));
        if v == 0 {
            n = n.map(|c| -c);
        }
        (p, n)
    }
}

#[test]
fn every_stored_frame_decodes_within_the_bounds() {
    let bounds = ResidualBounds::default();
    let ring = Ring::new(64, 12, 0.004, 0.2);
    let encoded =
        encode_residuals(64, 12, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds).unwrap();
    // The bounds plus the f32 rounding of `skin + step * q` (a few ulp of a 1 m coordinate) and of
    // the normalisation.
    let (position_bound, normal_bound) = (bounds.position_m + 1e-6, bounds.normal_rad + 1e-5);
    let (mut worst_p, mut worst_n) = (0f32, 0f32);
    for v in 0..64 {
        let widths = encoded.widths[v as usize];
        for f in 0..12 {
            let fields = read_frame_fields(&encoded.stream, encoded.bases[v as usize], widths, f);
            let (p, n) = apply_residual(ring.skinned(f, v), &fields, widths, &bounds);
            let (sp, sn) = ring.source(f, v);
            worst_p = worst_p.max(distance(p, sp));
            worst_n = worst_n.max(angle(n, sn));
        }
    }
    assert!(worst_p <= position_bound, "position {worst_p} m over {position_bound}");
    assert!(worst_n <= normal_bound, "normal {worst_n} rad over {normal_bound}");
    // A 4 mm wobble against a 0.58 mm step: 4 to 5 bits a component; the reversed normal takes the
    // absolute code.
    assert!(encoded.widths[0].absolute_normal && !encoded.widths[1].absolute_normal);
    assert!(encoded.widths.iter().all(|w| (4..=5).contains(&w.position_bits)), "{:?}", encoded.widths);
    println!(
        "mean {:.2} bits per vertex per frame; worst {worst_p} m, {worst_n} rad",
        encoded.mean_frame_bits()
    );
}

#[test]
fn a_skin_that_is_the_source_costs_no_bits() {
    let bounds = ResidualBounds::default();
    let ring = Ring::new(16, 4, 0.0, 0.0);
    // Vertex 0's reversed normal aside, the skin is the source: every other vertex takes 0 bits.
    let encoded =
        encode_residuals(16, 4, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds).unwrap();
    assert!(encoded.widths[1..].iter().all(|w| w.frame_bits() == 0), "{:?}", encoded.widths);
    assert_eq!(encoded.bases[1..], [encoded.bases[1]; 15]);
}

#[test]
fn a_skin_too_far_from_its_source_is_refused_with_a_typed_error() {
    let bounds = ResidualBounds::default();
    // 30 m away against 0.58 mm steps: 16 bits a component, past the 15-bit field.
    let ring = Ring::new(8, 3, 30.0, 1.0);
    let err =
        encode_residuals(8, 3, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds).unwrap_err();
    assert!(matches!(err, Error::LimitExceeded { limit: 64, .. }), "{err:?}");
    let nan = encode_residuals(
        1,
        1,
        |_, _| ([f32::NAN; 3], [0.0, 1.0, 0.0]),
        |_, _| ([0.0; 3], [0.0, 1.0, 0.0]),
        &bounds,
    );
    assert!(matches!(nan, Err(Error::NotFinite { .. })));
    let bad = ResidualBounds { position_m: 0.0, ..bounds };
    assert!(
        encode_residuals(1, 1, |_, _| ([0.0; 3], [0.0, 1.0, 0.0]), |_, _| ([0.0; 3], [0.0, 1.0, 0.0]), &bad)
            .is_err()
    );
}

#[test]
fn vertices_encoded_out_of_order_and_appended_in_order_give_the_same_stream() {
    // What a parallel caller does: encode every vertex on its own (here in reverse), then push them
    // in vertex order.
    let bounds = ResidualBounds::default();
    let ring = Ring::new(32, 9, 0.004, 0.2);
    let whole = encode_residuals(32, 9, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds)
        .expect("the ring encodes within the default bounds");
    let mut vertices: Vec<(u32, VertexResidual)> = (0..32)
        .rev()
        .map(|v| {
            let r = encode_vertex_residual(9, |f| Ok((ring.skinned(f, v), ring.source(f, v))), &bounds)
                .expect("each vertex encodes on its own");
            (v, r)
        })
        .collect();
    vertices.sort_by_key(|(v, _)| *v);
    let mut encoder = ResidualEncoder::new(9);
    for (_, r) in &vertices {
        encoder.push(r).expect("a vertex of 9 frames is accepted");
    }
    assert_eq!(encoder.finish(), whole);

    // A vertex of another frame count, and an error from the frame callback, are refused.
    let mut encoder = ResidualEncoder::new(8);
    assert!(matches!(encoder.push(&vertices[0].1), Err(Error::OutOfRange { .. })));
    let failing = encode_vertex_residual(
        3,
        |f| {
            if f == 2 {
                Err(Error::ZeroCount { what: "test frame" })
            } else {
                Ok((ring.skinned(f, 0), ring.source(f, 0)))
            }
        },
        &bounds,
    );
    assert!(matches!(failing, Err(Error::ZeroCount { what: "test frame" })), "{failing:?}");
}

#[test]
fn frames_folded_in_any_order_and_written_frame_by_frame_give_the_vertex_order_stream() {
    // What an encoder that reads one source frame at a time does: fold every frame into each
    // vertex's extent (here frames split between two extents, each folded backwards, then merged),
    // take the widths, then write the frames in any order (here last to first).
    let bounds = ResidualBounds::default();
    for (wobble, tilt) in [(0.004, 0.2), (0.0, 0.0), (0.03, 1.2)] {
        let (n, frames) = (32u32, 9u32);
        let ring = Ring::new(n, frames, wobble, tilt);
        let whole = encode_residuals(n, frames, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds)
            .expect("the ring encodes within the default bounds");
        let q = |f: u32, v: u32| {
            FrameResidual::of(ring.skinned(f, v), ring.source(f, v), &bounds).expect("finite frames")
        };
        let widths: Vec<ResidualWidths> = (0..n)
            .map(|v| {
                let (mut early, mut late) = (ResidualExtent::default(), ResidualExtent::default());
                (0..frames / 2).rev().for_each(|f| early.add(&q(f, v)));
                (frames / 2..frames).rev().for_each(|f| late.add(&q(f, v)));
                early.merge(&late);
                early.widths().expect("within the field limits")
            })
            .collect();
        assert_eq!(widths, whole.widths, "wobble {wobble}, tilt {tilt}");
        let mut layout = ResidualStreamLayout::new(frames, widths.clone()).expect("a small stream");
        for f in (0..frames).rev() {
            for v in 0..n {
                layout.write(v, f, &q(f, v).fields(widths[v as usize])).expect("inside the layout");
            }
        }
        assert_eq!(layout.finish(), whole, "wobble {wobble}, tilt {tilt}");
    }
    // Both kinds of normal appear above (the flipped vertex 0 takes the octahedral code).
    let ring = Ring::new(32, 9, 0.004, 0.2);
    let whole = encode_residuals(32, 9, |f, v| ring.skinned(f, v), |f, v| ring.source(f, v), &bounds)
        .expect("the ring encodes");
    assert!(whole.widths[0].absolute_normal && !whole.widths[1].absolute_normal);
    // A stream past u32::MAX bits is refused, as the vertex-order encoder refuses it.
    let mut layout =
        ResidualStreamLayout::new(2, vec![ResidualWidths::default(); 3]).expect("a small stream");
    let fields = ResidualFields::default();
    assert!(matches!(layout.write(3, 0, &fields), Err(Error::OutOfRange { .. })), "a vertex past it");
    assert!(matches!(layout.write(0, 2, &fields), Err(Error::OutOfRange { .. })), "a frame past it");
    let wide = ResidualWidths { position_bits: 15, normal_bits: 15, absolute_normal: false };
    assert!(matches!(
        ResidualStreamLayout::new(u32::MAX / 64, vec![wide; 3]),
        Err(Error::LimitExceeded { what: "residual stream bits", .. })
    ));
    // A frame whose skin is not finite is refused.
    let nan = FrameResidual::of(([f32::NAN; 3], [0.0, 1.0, 0.0]), ([0.0; 3], [0.0, 1.0, 0.0]), &bounds);
    assert!(matches!(nan, Err(Error::NotFinite { .. })));
}

#[test]
fn the_residual_texture_is_as_narrow_as_its_rows_allow() {
    // 3,000 vertices of 0 bits and 4,000 stream words: 5,000 texels, two rows of 2,500 (not 4,096,
    // which would pad 3,192 texels); one row when it fits, and the reader's height rule holds.
    let encoded = EncodedResiduals {
        bases: vec![0; 3000],
        widths: vec![ResidualWidths::default(); 3000],
        stream: vec![7; 4000],
    };
    let texture = residual_texture(&encoded, 16384).expect("5,000 texels fit");
    assert_eq!((texture.width, texture.height), (2500, 2));
    assert_eq!(texture.bytes.len(), 5000 * 8);
    for texels in [1u32, 2, 4095, 4096, 4097, 8193, 12_289, 100_003] {
        let encoded = EncodedResiduals {
            bases: vec![0; texels as usize],
            widths: vec![ResidualWidths::default(); texels as usize],
            stream: Vec::new(),
        };
        let t = residual_texture(&encoded, 4096).expect("fits a 4096 square");
        assert!(t.width <= 4096 && t.height <= 4096, "{texels}: {} x {}", t.width, t.height);
        assert_eq!(u64::from(texels).div_ceil(u64::from(t.width)), u64::from(t.height), "{texels}");
        assert!(
            u64::from(t.width) * u64::from(t.height) - u64::from(texels) < u64::from(t.height),
            "{texels}"
        );
    }
}
