#[test]
fn textured_lists_every_texel_format_once() {
    // A new variant fails to compile here until it has a position in `TEXTURED` (or is said to have
    // no texels).
    let position = |f: VertexFormat| match f {
        VertexFormat::Packed64 => 0,
        VertexFormat::Unorm16 => 1,
        VertexFormat::F16 => 2,
        VertexFormat::F32 => 3,
        VertexFormat::Unorm8 => 4,
        VertexFormat::Split8 => 5,
        VertexFormat::SkinResidual => usize::MAX,
    };
    for (i, f) in VertexFormat::TEXTURED.iter().enumerate() {
        assert_eq!(position(*f), i, "{f:?}");
        assert!(!f.texel_formats().is_empty(), "{f:?}");
    }
    assert!(VertexFormat::SkinResidual.texel_formats().is_empty());
    // No texel codec for it: a typed error, not a panic.
    let err = decode_vertex_texel(VertexFormat::SkinResidual, [0; 3], &[], 0).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { what: "vertex format", .. }), "{err:?}");
}

use super::*;
use proptest::prelude::*;

const ALL_FORMATS: [VertexFormat; 6] = VertexFormat::TEXTURED;

/// xorshift64* (Vigna): a small deterministic generator for the measurement test.
struct XorShift64Star(u64);

impl XorShift64Star {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1) with 53 random bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A uniformly distributed unit vector from two uniforms in [0, 1) (Archimedes: z uniform).
fn unit_from(a: f64, b: f64) -> [f32; 3] {
    let z = 2.0 * a - 1.0;
    let r = (1.0 - z * z).max(0.0).sqrt();
    let phi = std::f64::consts::TAU * b;
    [(r * phi.cos()) as f32, (r * phi.sin()) as f32, z as f32]
}

fn angle_deg(decoded: [f32; 3], n: [f32; 3]) -> f64 {
    angle_between(decoded, n.map(f64::from)).to_degrees()
}

/// The analytic bound of `bits`-bit octahedral normals, degrees.
fn oct_bound_deg(bits: u32) -> f64 {
    oct_angle_bound_rad(oct_half_step(bits)).to_degrees()
}

fn unit_normal() -> impl Strategy<Value = [f32; 3]> {
    prop_oneof![
        9 => (0.0f64..1.0, 0.0f64..1.0).prop_map(|(a, b)| unit_from(a, b)),
        // Axes, fold edges and signed zeros, where the octahedral map has its seams.
        1 => prop::sample::select(vec![
            [0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0],
            [-0.0, -0.0, -1.0], [0.6, -0.8, 0.0], [-0.0, 0.6, -0.8], [0.577, 0.577, -0.577],
            [0.577, 0.577, 0.577],
        ]),
    ]
}

/// A box (min in [-100, 100] m, extents in [0, 50] m with exact zeros sometimes) and points in it.
fn box_and_points() -> impl Strategy<Value = Vec<[f32; 3]>> {
    let extent = prop_oneof![1 => Just(0.0f32), 9 => 1e-3f32..50.0];
    (prop::array::uniform3(-100.0f32..100.0), prop::array::uniform3(extent)).prop_flat_map(|(min, extent)| {
        prop::collection::vec(prop::array::uniform3(0.0f32..=1.0), 1..16).prop_map(move |ts| {
            // p = min + t * extent (f32) stays in [min, fl(min + extent)]: rounding is monotone.
            ts.iter().map(|t| [0, 1, 2].map(|a| min[a] + t[a] * extent[a])).collect()
        })
    })
}

/// Round trip through one texel; both roundings are exercised (they share every bound).
fn encode_decode(format: VertexFormat, bits: [u32; 3], n: [f32; 3], normal: [f32; 3]) -> DecodedTexel {
    let precise = encode_decode_with(format, bits, n, normal, NormalRounding::Precise);
    let nearest = encode_decode_with(format, bits, n, normal, NormalRounding::Nearest);
    // Positions do not depend on the normal rounding.
    assert_eq!(precise.position, nearest.position);
    nearest
}

fn encode_decode_with(
    format: VertexFormat,
    bits: [u32; 3],
    n: [f32; 3],
    normal: [f32; 3],
    rounding: NormalRounding,
) -> DecodedTexel {
    let mut textures = vec![Vec::new(); format.texel_formats().len()];
    encode_vertex_texel(format, bits, n, normal, rounding, &mut textures).unwrap();
    for (t, f) in textures.iter().zip(format.texel_formats()) {
        assert_eq!(t.len(), f.bytes_per_texel() as usize);
    }
    let slices: Vec<&[u8]> = textures.iter().map(|t| t.as_slice()).collect();
    decode_vertex_texel(format, bits, &slices, 0).unwrap()
}

#[test]
fn bounds_from_points_cover_every_point_and_reject_bad_input() {
    let b = PositionBounds::from_points([[0.1, -1.0, 2.0], [0.3, 1.19, 2.0], [-0.2, 0.0, 2.0]]).unwrap();
    assert_eq!(b.min, [-0.2, -1.0, 2.0]);
    assert_eq!(b.extent[2], 0.0);
    // The decode of n = 1 reaches the largest point even where max - min rounded down.
    for a in 0..3 {
        assert!(b.denormalize([1.0; 3])[a] >= [0.3, 1.19, 2.0][a]);
    }
    assert!((b.extent[0] - 0.5).abs() <= 2.0 * f32::EPSILON);
    assert_eq!(
        PositionBounds::from_points(std::iter::empty()),
        Err(Error::ZeroCount { what: "point count" })
    );
    assert!(matches!(PositionBounds::from_points([[0.0, f32::NAN, 0.0]]), Err(Error::NotFinite { .. })));
    assert!(matches!(PositionBounds::from_points([[f32::INFINITY, 0.0, 0.0]]), Err(Error::NotFinite { .. })));
    // A finite box too wide for f32.
    assert!(matches!(
        PositionBounds::from_points([[-3e38, 0.0, 0.0], [3e38, 0.0, 0.0]]),
        Err(Error::NotFinite { what: "position bounds extent" })
    ));
}

/// Texel by texel through [`encode_vertex_texel`], the definition [`encode_vertex_texels`] follows.
fn encode_one_by_one(
    format: VertexFormat,
    bits: [u32; 3],
    bounds: &PositionBounds,
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    rounding: NormalRounding,
) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new(); format.texel_formats().len()];
    for (p, n) in positions.iter().zip(normals) {
        encode_vertex_texel(format, bits, bounds.normalize(*p), *n, rounding, &mut out).unwrap();
    }
    out
}

#[test]
fn packed64_four_at_a_time_equals_texel_by_texel() {
    // Seeded points around and outside a box (NaN, infinities, zeros of both signs) and normals
    // of every kind the fold treats specially, in runs whose length is not a multiple of 4.
    let mut rng = XorShift64Star(0x0123_4567_89AB_CDEF);
    let specials =
        [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e38, -3e38, 1e-40, -1e-40, 1.0, -1.0, 0.5];
    let mut value = |scale: f32| {
        let r = rng.next_u64();
        if r.is_multiple_of(7) {
            specials[(r >> 8) as usize % specials.len()]
        } else {
            ((rng.next_f64() * 2.0 - 1.0) as f32) * scale
        }
    };
    let count = 4099;
    let positions: Vec<[f32; 3]> = (0..count).map(|_| [value(2.0), value(2.0), value(2.0)]).collect();
    let normals: Vec<[f32; 3]> = (0..count).map(|_| [value(1.0), value(1.0), value(1.0)]).collect();
    let boxes = [
        PositionBounds { min: [-1.5, -0.25, -2.0], extent: [3.0, 2.19, 1.35] },
        PositionBounds { min: [0.0, -1.0, 5.0], extent: [0.0, 2.0, 0.0] },
    ];
    for bounds in &boxes {
        for bits in [allocate_position_bits(bounds.extent), [20, 20, 0], [0, 20, 20], [13, 14, 13]] {
            for rounding in [NormalRounding::Nearest, NormalRounding::Precise] {
                for len in [0, 3, 4, 5, 64, count] {
                    let (p, n) = (&positions[..len], &normals[..len]);
                    let mut fast = vec![Vec::new()];
                    encode_vertex_texels(VertexFormat::Packed64, bits, bounds, p, n, rounding, &mut fast)
                        .unwrap();
                    let slow = encode_one_by_one(VertexFormat::Packed64, bits, bounds, p, n, rounding);
                    assert!(fast == slow, "{bounds:?} {bits:?} {rounding:?} {len}");
                }
            }
        }
    }
    assert!(Packed64Encoder::new(&boxes[0], [21, 19, 0]).is_err());
    assert!(Packed64Encoder::new(&boxes[0], [13, 13, 13]).is_err());
}

#[test]
fn normalize_clamps_maps_nan_to_zero_and_handles_zero_extent() {
    let b = PositionBounds { min: [1.0, -2.0, 0.0], extent: [2.0, 4.0, 0.0] };
    assert_eq!(b.normalize([2.0, 0.0, 5.0]), [0.5, 0.5, 0.0]);
    assert_eq!(b.normalize([-9.0, 9.0, f32::NAN]), [0.0, 1.0, 0.0]);
    assert_eq!(b.normalize([f32::NAN, f32::INFINITY, 0.0]), [0.0, 1.0, 0.0]);
    assert_eq!(b.normalize([1.0, -2.0, 0.0]).map(f32::to_bits), [0, 0, 0]); // +0.0, not -0.0
    assert_eq!(b.denormalize([0.5, 0.25, 1.0]), [2.0, -1.0, 0.0]);
}

#[test]
fn character_extent_gets_13_14_13_bits() {
    assert_eq!(allocate_position_bits([1.65, 2.19, 1.35]), [13, 14, 13]);
    assert_eq!(allocate_position_bits([1.0, 1.0, 1.0]), [14, 13, 13]); // ties: lowest axis first
    assert_eq!(allocate_position_bits([0.0, 0.0, 0.0]), [20, 20, 0]); // all steps tie at 0
    assert_eq!(allocate_position_bits([0.0, 5.0, 0.0]), [20, 20, 0]);
    assert_eq!(allocate_position_bits([f32::NAN, 1.0, -1.0]), [20, 20, 0]);
    assert_eq!(allocate_position_bits([1.0, f32::INFINITY, 1.0]), [10, 20, 10]);
    assert_eq!(allocate_position_bits([1e-30, 1.0, 1e30]), [0, 20, 20]);
}

proptest! {
    #[test]
    fn allocation_sums_to_40_with_at_most_20_per_axis(e in prop::array::uniform3(
        prop_oneof![Just(0.0f32), 0.0f32..1e6, prop::num::f32::ANY])
    ) {
        let bits = allocate_position_bits(e);
        prop_assert_eq!(bits.iter().sum::<u32>(), 40);
        prop_assert!(bits.iter().all(|&b| b <= 20));
        prop_assert!(validate_position_bits(bits).is_ok());
        // Greedy invariant for finite positive extents: when an axis got its last bit its step was
        // the largest among open axes, so taking that bit back leaves a step no smaller than the
        // final step of any axis that could still take bits (no reallocation lowers the maximum).
        if e.iter().all(|&x| x.is_finite() && x > 0.0) {
            let step = |i: usize, b: u32| f64::from(e[i]) / 2f64.powi(b as i32);
            let worst_open = (0..3).filter(|&i| bits[i] < 20).map(|i| step(i, bits[i])).fold(0.0, f64::max);
            for (j, &b) in bits.iter().enumerate() {
                if b > 0 {
                    prop_assert!(step(j, b - 1) >= worst_open, "{:?} {:?}", e, bits);
                }
            }
        }
    }
}

#[test]
fn quantize_maps_ends_rounds_to_nearest_and_never_panics() {
    assert_eq!(quantize_unorm(0.0, 8), 0);
    assert_eq!(quantize_unorm(1.0, 8), 255);
    assert_eq!(quantize_unorm(0.5, 8), 128); // 127.5 rounds half away from zero
    assert_eq!(quantize_unorm(0.499, 8), 127);
    assert_eq!(quantize_unorm(2.0, 20), (1 << 20) - 1);
    assert_eq!(quantize_unorm(-1.0, 20), 0);
    assert_eq!(quantize_unorm(f32::NAN, 16), 0);
    assert_eq!(quantize_unorm(0.7, 0), 0);
    assert_eq!(quantize_unorm(1.0, 40), (1 << 24) - 1);
    assert_eq!(dequantize_unorm(5, 0), 0.0);
    assert_eq!(dequantize_unorm(255, 8), 1.0);
    assert_eq!(dequantize_unorm(65535, 16), 1.0);
    assert_eq!(dequantize_unorm(1, 16), 1.0 / 65535.0);
    // Every 12-bit code survives decode and re-encode.
    for q in 0..4096 {
        assert_eq!(quantize_unorm(dequantize_unorm(q, 12), 12), q);
    }
}

#[test]
fn packed64_fields_straddle_the_word_boundary_as_specified() {
    let bits = [13, 14, 13];
    let q = [0x1234u32, 0x2345, 0x1ABC];
    let n = [0, 1, 2].map(|a| dequantize_unorm(q[a], bits[a]));
    let t = pack_texel(n, bits, [0xABC, 0x123]);
    // P = 0x1234 | 0x2345 << 13 | 0x1ABC << 27 (worked out by hand; qz straddles bit 32).
    assert_eq!(t, [0xE468_B234, 0x123A_BCD5]);
    assert_eq!(unpack_texel(t, bits), (q, [0xABC, 0x123]));
    // 20 + 20 + 0: the third axis is empty and the second lies in bits 20..40.
    let t = pack_texel([1.0, 1.0, 1.0], [20, 20, 0], [0xFFF, 0]);
    assert_eq!(t, [0xFFFF_FFFF, 0x000F_FFFF]);
    assert_eq!(decode_packed64(t, [20, 20, 0]).0, [1.0, 1.0, 0.0]);
    // An invalid allocation never touches the normal field.
    let t = pack_texel([1.0; 3], [20, 20, 20], [0, 0]);
    assert_eq!(t[1] >> 8, 0);
    assert_eq!(unpack_texel([u32::MAX; 2], [99, 99, 99]).1, [0xFFF, 0xFFF]);
}

#[test]
fn texel_layouts_are_little_endian_as_documented() {
    let n = [0.0, 0.5, 1.0];
    let up = [0.0, 0.0, 1.0];
    let enc = |format: VertexFormat| {
        let mut textures = vec![Vec::new(); format.texel_formats().len()];
        encode_vertex_texel(format, [13, 14, 13], n, up, NormalRounding::Nearest, &mut textures).unwrap();
        textures
    };
    let q16_half = quantize_unorm(0.5, 16) as u16; // 32768
    let oct16 = oct_encode(up, 16);
    let t = enc(VertexFormat::Unorm16);
    assert_eq!(t[0], [0, 0, q16_half.to_le_bytes()[0], q16_half.to_le_bytes()[1], 0xFF, 0xFF, 0, 0]);
    assert_eq!(
        t[1],
        [oct16[0] as u16, oct16[1] as u16].iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>()
    );
    let t = enc(VertexFormat::Split8);
    assert_eq!(t[0], [0, (q16_half >> 8) as u8, 0xFF, 0]);
    assert_eq!(t[1], [0, q16_half as u8, 0xFF, 0]);
    assert_eq!(t[2], [(oct16[0] >> 8) as u8, oct16[0] as u8, (oct16[1] >> 8) as u8, oct16[1] as u8]);
    let t = enc(VertexFormat::Unorm8);
    let oct8 = oct_encode(up, 8);
    assert_eq!(t[0], [0, 128, 255, 0]);
    assert_eq!(t[1], [oct8[0] as u8, oct8[1] as u8]);
    let t = enc(VertexFormat::F16);
    assert_eq!(t[0], [0x00, 0x00, 0x00, 0x38, 0x00, 0x3C, 0x00, 0x00]); // 0, 0.5, 1, 0 as binary16
    assert_eq!(t[1], [0, 0, 0, 0]); // +Z folds to (0, 0)
    let t = enc(VertexFormat::F32);
    assert_eq!(t[0], [0.0f32, 0.5, 1.0, 0.0].iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>());
    assert_eq!(t[1], [0u8; 8]);
    let t = enc(VertexFormat::Packed64);
    let w = encode_packed64(n, up, [13, 14, 13]);
    assert_eq!(t[0], w.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>());
    // A second texel is appended after the first and decodes by index.
    for format in ALL_FORMATS {
        let mut textures = vec![Vec::new(); format.texel_formats().len()];
        encode_vertex_texel(format, [13, 14, 13], [0.0; 3], up, NormalRounding::Nearest, &mut textures)
            .unwrap();
        encode_vertex_texel(
            format,
            [13, 14, 13],
            [1.0; 3],
            [1.0, 0.0, 0.0],
            NormalRounding::Nearest,
            &mut textures,
        )
        .unwrap();
        let slices: Vec<&[u8]> = textures.iter().map(|t| t.as_slice()).collect();
        let d = decode_vertex_texel(format, [13, 14, 13], &slices, 1).unwrap();
        assert_eq!(d.position, [1.0; 3], "{format:?}");
        assert!(angle_deg(d.normal, [1.0, 0.0, 0.0]) <= f64::from(normal_error_bound_degrees(format)));
    }
}

#[test]
fn codec_rejects_wrong_texture_counts_short_textures_and_bad_bits() {
    let mut two = vec![Vec::new(), Vec::new()];
    assert_eq!(
        encode_vertex_texel(
            VertexFormat::Packed64,
            [13, 14, 13],
            [0.0; 3],
            [0.0, 0.0, 1.0],
            NormalRounding::Nearest,
            &mut two
        ),
        Err(Error::WrongTextureCount { expected: 1, actual: 2 })
    );
    assert!(two.iter().all(Vec::is_empty));
    let mut one = vec![Vec::new()];
    assert!(matches!(
        encode_vertex_texel(
            VertexFormat::Packed64,
            [13, 14, 14],
            [0.0; 3],
            [0.0, 0.0, 1.0],
            NormalRounding::Nearest,
            &mut one
        ),
        Err(Error::OutOfRange { .. })
    ));
    assert!(one[0].is_empty());
    assert!(validate_position_bits([21, 19, 0]).is_err());
    assert!(validate_position_bits([20, 20, 0]).is_ok());
    let bytes = [0u8; 16];
    assert_eq!(
        decode_vertex_texel(VertexFormat::Split8, [0; 3], &[&bytes, &bytes], 0),
        Err(Error::WrongTextureCount { expected: 3, actual: 2 })
    );
    // Unorm16: 16 bytes hold 2 position texels but 4 normal texels.
    assert!(decode_vertex_texel(VertexFormat::Unorm16, [0; 3], &[&bytes, &bytes], 1).is_ok());
    assert_eq!(
        decode_vertex_texel(VertexFormat::Unorm16, [0; 3], &[&bytes, &bytes], 2),
        Err(Error::IndexOutOfRange { what: "texel index", index: 2, count: 2 })
    );
    assert!(decode_vertex_texel(VertexFormat::F32, [0; 3], &[&bytes[..15], &bytes], 0).is_err());
    assert!(decode_vertex_texel(VertexFormat::Packed64, [0; 3], &[&bytes], u64::MAX).is_err());
    // Garbage bits decode without panicking.
    assert!(decode_vertex_texel(VertexFormat::Packed64, [u32::MAX; 3], &[&bytes], 0).is_ok());
}

#[test]
fn degenerate_normals_encode_as_plus_z() {
    for n in [[0.0; 3], [f32::NAN, 0.0, 1.0], [f32::INFINITY, 0.0, 0.0], [-0.0, 0.0, -0.0]] {
        assert_eq!(oct_encode_f32(n), [0.0, 0.0]);
        assert_eq!(oct_decode_f32(oct_encode_f32(n)), [0.0, 0.0, 1.0]);
        for bits in [8, 12, 16] {
            let d = oct_decode(oct_encode(n, bits), bits);
            assert!(angle_deg(d, [0.0, 0.0, 1.0]) <= oct_bound_deg(bits));
        }
    }
    // Huge finite and tiny components keep their direction.
    assert!(angle_deg(oct_decode(oct_encode([3e38, 3e38, 3e38], 16), 16), [1.0, 1.0, 1.0]) < 0.004);
    assert!(angle_deg(oct_decode(oct_encode([1e-40, 0.0, -1e-40], 16), 16), [1.0, 0.0, -1.0]) < 0.004);
    assert_eq!(oct_decode_f32([f32::NAN, 0.0]), [0.0, 0.0, 1.0]);
}

#[test]
fn octahedral_decode_follows_the_fold() {
    assert_eq!(oct_decode_f32([0.0, 0.0]), [0.0, 0.0, 1.0]);
    assert_eq!(oct_decode_f32([1.0, 0.0]), [1.0, 0.0, 0.0]);
    assert_eq!(oct_decode_f32([0.0, -1.0]), [0.0, -1.0, 0.0]);
    for corner in [[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]] {
        assert_eq!(oct_decode_f32(corner), [0.0, 0.0, -1.0]);
    }
    // The fold uses sgn(-0.0) = +1: (0.5, -0.0, -0.5) has p = (0.5, -0.0), folded to (1, 0.5).
    assert_eq!(oct_encode_f32([0.5, -0.0, -0.5]), [1.0, 0.5]);
    // ... and (1, 0.5) unfolds to v = (0.5, 0, -0.5), normalised the documented way.
    let v = [0.5f32, 0.0, -0.5];
    let inv = 1.0 / (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    assert_eq!(oct_decode_f32([1.0, 0.5]), v.map(|c| c * inv));
    // Quantised: ox = f32(u) / max_q * 2 - 1, so u = max_q is +1 and u = 0 is -1 exactly.
    assert_eq!(oct_decode([4095, 0], 12), oct_decode_f32([1.0, -1.0]));
}

proptest! {
    #[test]
    fn position_round_trip_is_within_the_bound_in_every_format(points in box_and_points()) {
        let bounds = PositionBounds::from_points(points.iter().copied()).unwrap();
        let bits = allocate_position_bits(bounds.extent);
        for format in ALL_FORMATS {
            let bound = position_error_bound(format, bits, &bounds);
            for p in &points {
                let d = encode_decode(format, bits, bounds.normalize(*p), [0.0, 0.0, 1.0]);
                let q = bounds.denormalize(d.position);
                for a in 0..3 {
                    let err = (f64::from(q[a]) - f64::from(p[a])).abs();
                    prop_assert!(err <= f64::from(bound[a]),
                        "{:?} axis {} err {} > bound {} (p {:?}, bounds {:?}, bits {:?})",
                        format, a, err, bound[a], p, bounds, bits);
                }
            }
        }
    }

    #[test]
    fn normal_round_trip_is_within_the_bound_in_every_format(n in unit_normal(), scale in 1e-3f32..1e3) {
        for format in ALL_FORMATS {
            let d = encode_decode(format, [13, 14, 13], [0.5; 3], n.map(|c| c * scale));
            let err = angle_deg(d.normal, n);
            prop_assert!(err <= f64::from(normal_error_bound_degrees(format)),
                "{:?}: {} deg > {} for {:?}", format, err, normal_error_bound_degrees(format), n);
            let len = d.normal.iter().map(|c| c * c).sum::<f32>().sqrt();
            prop_assert!((len - 1.0).abs() <= 4.0 * f32::EPSILON);
        }
    }

    #[test]
    fn octahedral_8_12_16_bits_are_within_their_bounds_and_refinement_beats_nearest(n in unit_normal()) {
        for bits in [8, 12, 16] {
            let q = oct_encode_precise(n, bits);
            let err = angle_deg(oct_decode(q, bits), n);
            prop_assert!(err <= oct_bound_deg(bits), "{} bits: {} deg for {:?}", bits, err, n);
            let nearest = oct_encode(n, bits);
            let nearest_err = angle_deg(oct_decode(nearest, bits), n);
            prop_assert!(nearest_err <= oct_bound_deg(bits), "{} bits nearest: {} deg", bits, nearest_err);
            prop_assert!(err <= nearest_err);
        }
    }
}

/// Measures the worst angular error of octahedral normals over many seeded random unit normals and
/// prints it (`cargo test -p vat-core --lib octahedral_max_angular_error_report -- --nocapture`).
#[test]
fn octahedral_max_angular_error_report() {
    const SAMPLES: usize = 2_000_000;
    let mut rng = XorShift64Star(0x9E37_79B9_7F4A_7C15);
    let normals: Vec<[f32; 3]> = (0..SAMPLES).map(|_| unit_from(rng.next_f64(), rng.next_f64())).collect();
    for bits in [8u32, 12, 16] {
        let mut worst = 0.0f64;
        let mut worst_nearest = 0.0f64;
        for &n in &normals {
            worst = worst.max(angle_deg(oct_decode(oct_encode_precise(n, bits), bits), n));
            worst_nearest = worst_nearest.max(angle_deg(oct_decode(oct_encode(n, bits), bits), n));
        }
        let bound = oct_bound_deg(bits);
        println!(
            "octahedral {bits}+{bits}: max angular error over {SAMPLES} random unit normals: nearest \
             rounding {worst_nearest:.6} deg, precise {worst:.6} deg (analytic bound {bound:.6} deg)"
        );
        assert!(worst <= worst_nearest && worst_nearest <= bound);
        if bits == 12 {
            // The default format's target: <= 0.06 degrees with either rounding.
            assert!(worst_nearest <= 0.06);
        }
    }
}

#[test]
fn error_bounds_match_their_documented_figures() {
    let bounds = PositionBounds { min: [0.0; 3], extent: [1.65, 2.19, 1.35] };
    let bits = allocate_position_bits(bounds.extent);
    let mm = |format| position_error_bound(format, bits, &bounds)[1] * 1000.0;
    assert!((mm(VertexFormat::Packed64) - 0.0679).abs() < 5e-5);
    assert!((mm(VertexFormat::Unorm16) - 0.0178).abs() < 5e-5);
    assert!((mm(VertexFormat::Split8) - 0.0178).abs() < 5e-5);
    assert!((mm(VertexFormat::F16) - 0.536).abs() < 5e-4);
    assert!((mm(VertexFormat::Unorm8) - 4.30).abs() < 5e-3);
    // Per axis for the default format: 1.65 m / 8191 / 2 = 0.1007 mm (x, 13 bits), 0.0668 mm
    // (y, 14 bits), 0.0824 mm (z, 13 bits), each plus about 0.001 mm of f32 rounding.
    assert_eq!(bits, [13, 14, 13]);
    let packed = position_error_bound(VertexFormat::Packed64, bits, &bounds);
    for a in 0..3 {
        let half_step = f64::from(bounds.extent[a]) * 0.5 / f64::from((1u32 << bits[a]) - 1);
        let e = f64::from(packed[a]);
        // The rounding terms add 8u * L (min = 0, so M = L): at most 1.05e-6 m here.
        let rounding = 8.0 * F32_UNIT_ROUNDOFF * f64::from(bounds.extent[a]);
        assert!(e >= half_step && e <= (half_step + rounding) * (1.0 + 1e-7), "axis {a}: {e} vs {half_step}");
    }
    let deg = normal_error_bound_degrees;
    assert!((deg(VertexFormat::Unorm8) - 0.9535).abs() < 5e-5);
    assert!((deg(VertexFormat::Packed64) - 0.05956).abs() < 5e-6);
    assert!((deg(VertexFormat::Unorm16) - 0.003908).abs() < 5e-7);
    assert_eq!(deg(VertexFormat::Split8), deg(VertexFormat::Unorm16));
    assert!((deg(VertexFormat::F16) - 0.05955).abs() < 5e-6);
    assert!(deg(VertexFormat::F32) < 2e-4);
    // A zero-bit axis decodes to min: the bound is the whole extent.
    let b = position_error_bound(VertexFormat::Packed64, [20, 20, 0], &bounds);
    assert!(b[2] >= 1.35 && b[2] < 1.35 * (1.0 + 1e-6));
}

fn quat_from_axis_angle(axis: [f32; 3], angle: f32) -> [f32; 4] {
    let a = normalized3(axis.map(f64::from)).unwrap_or([0.0, 0.0, 1.0]);
    let (s, c) = (f64::from(angle) * 0.5).sin_cos();
    [(a[0] * s) as f32, (a[1] * s) as f32, (a[2] * s) as f32, c as f32]
}

fn axis() -> impl Strategy<Value = [f32; 3]> {
    prop::array::uniform3(-1.0f32..1.0).prop_filter("non-zero axis", |a| a.iter().any(|c| c.abs() > 1e-3))
}

proptest! {
    #[test]
    fn hemisphere_continuity_makes_neighbours_agree_and_keeps_rotations(
        steps in prop::collection::vec((axis(), -0.5f32..0.5, any::<bool>()), 1..40),
        start in (axis(), -3.2f32..3.2),
    ) {
        // A smooth track of rotations with random sign flips.
        let mut q = quat_from_axis_angle(start.0, start.1);
        let mut track = Vec::new();
        for (a, angle, flip) in &steps {
            let r = quat_from_axis_angle(*a, *angle);
            q = [
                r[3] * q[0] + r[0] * q[3] + r[1] * q[2] - r[2] * q[1],
                r[3] * q[1] - r[0] * q[2] + r[1] * q[3] + r[2] * q[0],
                r[3] * q[2] + r[0] * q[1] - r[1] * q[0] + r[2] * q[3],
                r[3] * q[3] - r[0] * q[0] - r[1] * q[1] - r[2] * q[2],
            ];
            track.push(if *flip { q.map(|c| -c) } else { q });
        }
        let original = track.clone();
        make_hemisphere_continuous(&mut track);
        prop_assert_eq!(track[0], original[0]);
        for i in 0..track.len() {
            let same = track[i] == original[i] || track[i] == original[i].map(|c| -c);
            prop_assert!(same);
            if i > 0 {
                let (a, b) = (track[i - 1], track[i]);
                prop_assert!(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] >= 0.0);
            }
        }
    }

    #[test]
    fn tangent_frame_round_trips_through_binary16_within_the_bound(
        n in unit_normal(),
        t in prop::array::uniform3(-1.0f32..1.0),
        negative in any::<bool>(),
    ) {
        let sign = if negative { -1.0 } else { 1.0 };
        let q = tangent_frame_to_quat(n, [t[0], t[1], t[2], sign]);
        prop_assert!(q[3].abs() >= TANGENT_QUAT_MIN_W && (q[3] < 0.0) == negative);
        let stored = q.map(|c| f16_bits_to_f32(f32_to_f16_bits(c)));
        let (normal, tangent) = quat_to_tangent_frame(stored);
        prop_assert_eq!(tangent[3], sign);
        // Bound (radians): binary16 moves each component by <= 2^-12 (|c| <= 1), so q by <= 2^-11
        // (plus 2u from the f32 rounding of the encode); the rotation moves by twice the angle
        // in quaternion space, 2 asin(2^-11 + 2u); raising |w| to 2^-14 adds 2 * 2^-14; the f32
        // decode (normalise, then entries of 2-4 products each) errs by under 20u per entry, so
        // under 35u per column in angle, budgeted as 64u.
        let u = F32_UNIT_ROUNDOFF;
        let bound = 2.0 * (2f64.powi(-11) + 2.0 * u).asin() + 2.0 * f64::from(TANGENT_QUAT_MIN_W) + 64.0 * u;
        let n_ref = normalized3(n.map(f64::from)).unwrap();
        prop_assert!(angle_between(normal, n_ref) <= bound, "normal {:?} vs {:?}", normal, n);
        let t64 = t.map(f64::from);
        let d = dot3(n_ref, t64);
        if let Some(t_ref) = normalized3([t64[0] - n_ref[0] * d, t64[1] - n_ref[1] * d, t64[2] - n_ref[2] * d])
            .filter(|_| (dot3(t64, t64).sqrt() * 1e-3) < (dot3(t64, t64) - d * d).max(0.0).sqrt())
        {
            let t_dec = [tangent[0], tangent[1], tangent[2]];
            prop_assert!(angle_between(t_dec, t_ref) <= bound, "tangent {:?} vs {:?}", t_dec, t_ref);
        }
    }
}

#[test]
fn tangent_sign_survives_binary16_when_w_is_near_zero() {
    // Half-turn frames have w = 0 exactly: normal -Z, tangent +X is a half turn about X.
    for (normal, tangent) in [([0.0, 0.0, -1.0], [1.0, 0.0, 0.0]), ([0.0, 1.0, 0.0], [-1.0, 0.0, 0.0])] {
        for sign in [1.0f32, -1.0] {
            let q = tangent_frame_to_quat(normal, [tangent[0], tangent[1], tangent[2], sign]);
            assert_eq!(q[3].abs(), TANGENT_QUAT_MIN_W);
            let stored = q.map(|c| f16_bits_to_f32(f32_to_f16_bits(c)));
            assert_eq!(stored[3], q[3]); // 2^-14 is binary16's smallest normal: exact
            let (n, t) = quat_to_tangent_frame(stored);
            assert_eq!(t[3], sign);
            assert!(angle_between(n, normal.map(f64::from)) < 3e-4);
            assert!(angle_between([t[0], t[1], t[2]], tangent.map(f64::from)) < 3e-4);
        }
    }
    // Degenerate inputs fall back to valid frames, never NaN.
    let q = tangent_frame_to_quat([0.0; 3], [0.0, 0.0, 1.0, f32::NAN]);
    assert!(q.iter().all(|c| c.is_finite()) && q[3] > 0.0);
    let (n, t) = quat_to_tangent_frame(q);
    assert!(angle_between(n, [0.0, 0.0, 1.0]) < 1e-6);
    assert!(t[2].abs() < 1e-6 && t[3] == 1.0);
    assert_eq!(quat_to_tangent_frame([0.0; 4]), ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]));
    assert_eq!(quat_to_tangent_frame([f32::NAN; 4]).0, [0.0, 0.0, 1.0]);
    // The identity frame is the identity quaternion.
    assert_eq!(tangent_frame_to_quat([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]), [0.0, 0.0, 0.0, 1.0]);
    assert_eq!(quat_to_tangent_frame([0.0, 0.0, 0.0, 1.0]), ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]));
}

#[test]
fn every_binary16_bit_pattern_round_trips() {
    for bits in 0..=u16::MAX {
        let x = f16_bits_to_f32(bits);
        let back = f32_to_f16_bits(x);
        if x.is_nan() {
            // NaN stays NaN with its sign (signalling NaNs come back quiet).
            assert_eq!(back & 0x7C00, 0x7C00, "{bits:#06x}");
            assert_ne!(back & 0x03FF, 0, "{bits:#06x}");
            assert_eq!(back & 0x8000, bits & 0x8000);
        } else {
            assert_eq!(back, bits, "{bits:#06x}");
        }
    }
}

#[test]
fn binary16_subnormals_overflow_and_ties_round_as_ieee() {
    assert_eq!(f32_to_f16_bits(2f32.powi(-24)), 0x0001); // smallest subnormal
    assert_eq!(f16_bits_to_f32(0x0001), 2f32.powi(-24));
    assert_eq!(f32_to_f16_bits(2f32.powi(-14)), 0x0400); // smallest normal
    assert_eq!(f16_bits_to_f32(0x0400), 2f32.powi(-14));
    assert_eq!(f16_bits_to_f32(0x03FF), 2f32.powi(-14) - 2f32.powi(-24)); // largest subnormal
    assert_eq!(f32_to_f16_bits(2f32.powi(-25)), 0x0000); // tie between 0 and 2^-24: even is 0
    assert_eq!(f32_to_f16_bits(2f32.powi(-25).next_up()), 0x0001);
    assert_eq!(f32_to_f16_bits(65504.0), 0x7BFF); // largest finite
    assert_eq!(f16_bits_to_f32(0x7BFF), 65504.0);
    assert_eq!(f32_to_f16_bits(65519.996), 0x7BFF);
    assert_eq!(f32_to_f16_bits(65520.0), 0x7C00); // the tie with 2^16 rounds to even: +inf
    assert_eq!(f32_to_f16_bits(1e9), 0x7C00);
    assert_eq!(f32_to_f16_bits(-65520.0), 0xFC00);
    assert_eq!(f32_to_f16_bits(1.0 + 2f32.powi(-11)), 0x3C00); // tie: to the even 1.0
    assert_eq!(f32_to_f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02); // tie: to the even 1 + 2^-9
    assert_eq!(f32_to_f16_bits(-0.0), 0x8000);
    assert!(f16_bits_to_f32(f32_to_f16_bits(f32::NAN)).is_nan());
}
