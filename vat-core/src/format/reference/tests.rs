use super::*;
use crate::clip::{ClipMode, ClipRowMap};
use crate::container::{ContainerWriter, Manifest, VertexAnimation};
use crate::encoding::{NormalRounding, allocate_position_bits, encode_vertex_texture, position_error_bound};
use crate::layout::{BoneTextureLayout, MorphChannel, MorphTextureLayout, MorphWeightsLayout};

pub(crate) const VERTICES: u32 = 5;

/// The analytic animation baked by these tests: smooth in vertex and frame, ~1 m across.
pub(crate) fn truth(vertex: u32, frame: u32) -> ([f32; 3], [f32; 3]) {
    let (v, f) = (vertex as f32, frame as f32);
    let p = [(v + f * 0.7).sin() * 0.5, v * 0.3 + f * 0.05, (v * 1.3 + f).cos() * 0.4];
    let n = [(v + f).cos(), 0.5, (v * 2.0 + f).sin()];
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    (p, [n[0] / len, n[1] / len, n[2] / len])
}

/// A `.vat` with a looping clip "loop" (4 frames at 4 fps) and a one-shot clip "once" (3 frames
/// at 2 fps), 5 vertices, in `format`.
pub(crate) fn bake(format: VertexFormat) -> Vec<u8> {
    let mut clips = ClipRowMap::new();
    clips.push("loop", 1.0, 4.0, ClipMode::Looping, 0.0).unwrap();
    clips.push("once", 1.0, 2.0, ClipMode::OneShot, 0.0).unwrap();
    let frames = clips.total_frames();
    let layout = VertexTextureLayout::new(VERTICES, frames, 16384).unwrap();
    let (mut positions, mut normals) = (Vec::new(), Vec::new());
    for f in 0..frames {
        for v in 0..VERTICES {
            let (p, n) = truth(v, f);
            positions.push(p);
            normals.push(n);
        }
    }
    let bounds = PositionBounds::from_points(positions.iter().copied()).unwrap();
    let bits = if format == VertexFormat::Packed64 { allocate_position_bits(bounds.extent) } else { [0; 3] };
    let textures =
        encode_vertex_texture(&layout, format, &bounds, bits, &positions, &normals, NormalRounding::Nearest)
            .unwrap();
    let mut writer = ContainerWriter::new();
    let textures = textures.into_iter().map(|t| writer.add_blob(t)).collect();
    let mut manifest = Manifest::new("reference-test", VERTICES);
    manifest.clips = clips.clips().to_vec();
    manifest.vertex_animation =
        Some(VertexAnimation { layout, format, bounds, position_bits: bits, textures, tangents: None });
    writer.finish(manifest).unwrap()
}

pub(crate) const FORMATS: [VertexFormat; 6] = VertexFormat::TEXTURED;

pub(crate) fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
    let dot: f64 = (0..3).map(|i| f64::from(a[i]) * f64::from(b[i])).sum();
    let la: f64 = (0..3).map(|i| f64::from(a[i]).powi(2)).sum::<f64>().sqrt();
    let lb: f64 = (0..3).map(|i| f64::from(b[i]).powi(2)).sum::<f64>().sqrt();
    (dot / (la * lb)).clamp(-1.0, 1.0).acos().to_degrees()
}

pub(crate) fn playing(clip: u32, rate: f32) -> InstanceRecord {
    InstanceRecord { clip_a: clip, rate_a: rate, ..Default::default() }
}

#[test]
pub(crate) fn on_frame_times_decode_every_format_within_its_bound() {
    for format in FORMATS {
        let bytes = bake(format);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let bound = position_error_bound(format, view.position_bits, &view.bounds);
        // The normal passes the texel's unit vector through one more normalisation (a sum with
        // weight 1): at most a few f32 roundings, far below 1e-4 degrees.
        let normal_bound = f64::from(encoding::normal_error_bound_degrees(format)) + 1e-4;
        for interp in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
            // rate 1 cycle/s over 4 frames: time k/4 is exactly frame k (t = 0).
            for k in 0..4u32 {
                for v in 0..VERTICES {
                    let d = decode_vertex(&view, &playing(0, 1.0), k as f32 / 4.0, v, interp).unwrap();
                    let (p, n) = truth(v, k);
                    for a in 0..3 {
                        let err = (d.object_position[a] - p[a]).abs();
                        assert!(
                            err <= bound[a],
                            "{format:?} {interp:?} frame {k} vertex {v}: {err} > {}",
                            bound[a]
                        );
                    }
                    let ang = angle_deg(d.object_normal, n);
                    assert!(ang <= normal_bound, "{format:?} frame {k} vertex {v}: normal {ang} deg");
                    // Identity instance: world == object.
                    assert_eq!(d.world_position, d.object_position);
                }
            }
        }
    }
}

#[test]
pub(crate) fn linear_midpoints_blend_the_frame_pair_and_wrap_to_frame_zero() {
    let bytes = bake(VertexFormat::Packed64);
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    for k in 0..4u32 {
        let next = (k + 1) % 4; // the looping clip wraps: no duplicated end frame
        for v in 0..VERTICES {
            let time = (k as f32 + 0.5) / 4.0;
            let d = decode_vertex(&view, &playing(0, 1.0), time, v, Interpolation::Linear).unwrap();
            let a = encoding::decode_vertex_texel(
                view.format,
                view.position_bits,
                &view.textures,
                view.layout.texel_index(k, v),
            )
            .unwrap();
            let b = encoding::decode_vertex_texel(
                view.format,
                view.position_bits,
                &view.textures,
                view.layout.texel_index(next, v),
            )
            .unwrap();
            let mid: [f32; 3] = std::array::from_fn(|i| 0.5 * a.position[i] + 0.5 * b.position[i]);
            assert_eq!(d.object_position, view.bounds.denormalize(mid), "frame {k} vertex {v}");
        }
    }
}

#[test]
pub(crate) fn one_shot_clips_clamp_to_their_last_frame() {
    let bytes = bake(VertexFormat::F32);
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let once = &view.clips[1];
    let last = once.first_frame + once.frame_count - 1;
    for time in [1.0f32, 5.0, 1000.0] {
        let d = decode_vertex(&view, &playing(1, 1.0), time, 2, Interpolation::Cubic).unwrap();
        let t = encoding::decode_vertex_texel(
            view.format,
            view.position_bits,
            &view.textures,
            view.layout.texel_index(last, 2),
        )
        .unwrap();
        assert_eq!(d.object_position, view.bounds.denormalize(t.position));
    }
    // Before the start it holds the first frame.
    let d = decode_vertex(&view, &playing(1, 1.0), -3.0, 2, Interpolation::Linear).unwrap();
    let t = encoding::decode_vertex_texel(
        view.format,
        view.position_bits,
        &view.textures,
        view.layout.texel_index(once.first_frame, 2),
    )
    .unwrap();
    assert_eq!(d.object_position, view.bounds.denormalize(t.position));
}

#[test]
pub(crate) fn cross_fade_blends_clip_b_in_over_the_fade() {
    let bytes = bake(VertexFormat::Packed64);
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let mut inst = playing(0, 0.75);
    inst.rate_b = 0.5;
    inst.fade_start = 2.0;
    inst.set_clip_b(1, 0.5);
    let only_b = InstanceRecord { clip_a: 1, rate_a: 0.5, ..Default::default() };
    let only_a = playing(0, 0.75);
    let scale = view.bounds.min.iter().zip(view.bounds.extent).map(|(m, e)| m.abs() + e).fold(0.0, f32::max);
    for (time, w) in [(1.9f32, 0.0f32), (2.0, 0.0), (2.125, 0.25), (2.25, 0.5), (2.5, 1.0), (9.0, 1.0)] {
        for v in 0..VERTICES {
            let d = decode_vertex(&view, &inst, time, v, Interpolation::Linear).unwrap();
            let a = decode_vertex(&view, &only_a, time, v, Interpolation::Linear).unwrap();
            let b = decode_vertex(&view, &only_b, time, v, Interpolation::Linear).unwrap();
            // The shader mixes normalised positions, then decodes (affine): mixing decoded positions
            // instead differs by the rounding of the mix and the decode, a few ulps of the box.
            let tol = 8.0 * f32::EPSILON * scale;
            for i in 0..3 {
                let expected = a.object_position[i] * (1.0 - w) + b.object_position[i] * w;
                assert!(
                    (d.object_position[i] - expected).abs() <= tol,
                    "t {time} v {v}: {d:?} vs {expected}"
                );
            }
        }
    }
}

#[test]
pub(crate) fn instance_transform_is_translate_rotate_y_scale() {
    let bytes = bake(VertexFormat::F32);
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let base = decode_vertex(&view, &playing(0, 1.0), 0.3, 3, Interpolation::Linear).unwrap();
    let inst = InstanceRecord {
        position: [10.0, 1.0, -4.0],
        yaw: std::f32::consts::FRAC_PI_2,
        scale: 2.0,
        ..playing(0, 1.0)
    };
    let d = decode_vertex(&view, &inst, 0.3, 3, Interpolation::Linear).unwrap();
    let [x, y, z] = base.object_position;
    // Yaw +90 degrees about +Y turns +Z into +X and +X into -Z.
    let expected = [10.0 + 2.0 * z, 1.0 + 2.0 * y, -4.0 - 2.0 * x];
    // f32 cos(pi/2) is -4.4e-8, not 0: that term and the roundings stay below 1e-6 m here.
    for i in 0..3 {
        assert!((d.world_position[i] - expected[i]).abs() < 1e-6, "{d:?} vs {expected:?}");
    }
    let n = base.object_normal;
    assert!(angle_deg(d.world_normal, [n[2], n[1], -n[0]]) < 1e-4);
    assert_eq!(d.object_position, base.object_position);
}

/// A bone-mode asset by hand: 3 vertices on one bone whose matrix at frame `f` translates by
/// `(f, 0, 0)` and scales z by 2; 5 morph targets (two weight texels per frame) whose position
/// delta of vertex `v` for target `t` is `(0, t + 1, v) / 8` and normal delta `(t, 0, 0) / 4`;
/// target `t`'s weight at frame `f` is `(f + 1) * (t + 1) / 16`, except target 2, always 0. Clips
/// "loop" (4 frames) and "once" (3 frames).
pub(crate) fn bone_bake() -> Vec<u8> {
    use crate::container::{BoneAnimation, ElementFormat, MorphAnimation, StreamKind, VertexStream};
    use crate::encoding::TexelFormat;
    let mut clips = ClipRowMap::new();
    clips.push("loop", 1.0, 4.0, ClipMode::Looping, 0.0).unwrap();
    clips.push("once", 1.0, 2.0, ClipMode::OneShot, 0.0).unwrap();
    let frames = clips.total_frames();
    let n = 3u32;
    let f32s = |v: Vec<f32>| -> Vec<u8> { v.into_iter().flat_map(f32::to_le_bytes).collect() };
    let mut w = ContainerWriter::new();
    let bones = BoneTextureLayout::new(1, frames, 16384).unwrap();
    let mut bone_texels = Vec::new();
    for f in 0..frames {
        bone_texels.extend([1.0, 0.0, 0.0, f as f32, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
    }
    bone_texels.resize(bones.byte_len(4) as usize, 0.0);
    let texture = w.add_blob(f32s(bone_texels));
    let joints = w.add_blob(vec![0u8; (n * 4 * 2) as usize]);
    let weights = w.add_blob(f32s((0..n).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect()));
    let rest_p = w.add_blob(f32s((0..n).flat_map(|v| [v as f32, 1.0, 0.5]).collect()));
    let rest_n = w.add_blob(f32s((0..n).flat_map(|_| [0.0, 0.0, 1.0]).collect()));
    let targets = 5;
    let layout = MorphTextureLayout::new(n, targets).unwrap();
    let mut deltas = vec![0.0f32; layout.byte_len(4) as usize];
    for t in 0..targets {
        for v in 0..n {
            let [x, y] = layout.texel_coord(t, MorphChannel::Position, v);
            let i = ((y * layout.width + x) * 4) as usize;
            deltas[i..i + 3].copy_from_slice(&[0.0, (t + 1) as f32 / 8.0, v as f32 / 8.0]);
            let [x, y] = layout.texel_coord(t, MorphChannel::Normal, v);
            let i = ((y * layout.width + x) * 4) as usize;
            deltas[i] = t as f32 / 4.0;
        }
    }
    let texture_m = w.add_blob(f32s(deltas));
    let weights_layout = MorphWeightsLayout::new(targets, frames, 16384).unwrap();
    let mut track = vec![0.0f32; weights_layout.byte_len(4) as usize];
    for f in 0..frames {
        for t in (0..targets).filter(|&t| t != 2) {
            track[weights_layout.value_index(f, t) as usize] = ((f + 1) * (t + 1)) as f32 / 16.0;
        }
    }
    let weights_m = w.add_blob(f32s(track));
    let mut m = Manifest::new("bone-reference-test", n);
    m.clips = clips.clips().to_vec();
    m.bones = vec![crate::container::Bone { name: "root".into(), parent: None }];
    m.bone_animation = Some(BoneAnimation { layout: bones, texture, influences: 4, joints, weights });
    m.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest_p },
        VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: rest_n },
    ];
    m.morph_animation = Some(MorphAnimation {
        layout,
        format: TexelFormat::Rgba32Float,
        texture: texture_m,
        weights_layout,
        weights: weights_m,
        target_names: (0..targets).map(|t| format!("t{t}")).collect(),
    });
    w.finish(m).unwrap()
}

/// What the bone bake above should give for vertex `v` with target weights `w` and matrix
/// translation `tx` (exact in f64).
pub(crate) fn bone_expected(v: u32, w: &[f64], tx: f64) -> ([f64; 3], [f64; 3]) {
    let (mut p, mut n) = ([f64::from(v), 1.0, 0.5], [0.0, 0.0, 1.0]);
    for (t, &wt) in w.iter().enumerate() {
        p[1] += wt * (t + 1) as f64 / 8.0;
        p[2] += wt * f64::from(v) / 8.0;
        n[0] += wt * t as f64 / 4.0;
    }
    // M = translate(tx, 0, 0) * scale(1, 1, 2); normal by the cofactor: z scaled by 1/2 (x, y by 1
    // after dividing by det 2).
    let p = [p[0] + tx, p[1], 2.0 * p[2]];
    let c = [2.0 * n[0], 2.0 * n[1], n[2]];
    let len = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    (p, c.map(|x| x / len))
}

#[test]
pub(crate) fn bone_mode_blends_morph_weights_like_bone_matrices_and_adds_deltas_before_skinning() {
    let bytes = bone_bake();
    let asset = Asset::parse(&bytes).unwrap();
    let view = BoneAnimationView::from_asset(&asset).unwrap();
    assert_eq!(view.vertex_count(), 3);
    let track = |f: u32| -> Vec<f64> {
        (0..5).map(|t| if t == 2 { 0.0 } else { f64::from((f + 1) * (t + 1)) / 16.0 }).collect()
    };
    // Every value here is a small dyadic rational: f32 computes them exactly, so the bound is
    // 1 ulp of the magnitudes (<= 8) for the one rounding the normalisation adds.
    let tol = 8.0 * f64::from(f32::EPSILON);
    let check = |d: DecodedVertex, (p, n): ([f64; 3], [f64; 3]), what: &str| {
        for i in 0..3 {
            assert!((f64::from(d.object_position[i]) - p[i]).abs() <= tol, "{what}: {d:?} vs {p:?}");
            assert!((f64::from(d.object_normal[i]) - n[i]).abs() <= tol, "{what}: {d:?} vs {n:?}");
        }
    };
    // Frame k of "loop" exactly (rate 1 cycle/s over 4 frames: time k/4), and halfway to k + 1
    // (weights and matrices both the lerp; the clip wraps from frame 3 to 0).
    for k in 0..4u32 {
        for v in 0..3 {
            let d = decode_bone_vertex(&view, &playing(0, 1.0), k as f32 / 4.0, v, Interpolation::Linear)
                .unwrap();
            check(d, bone_expected(v, &track(k), f64::from(k)), "on frame");
            let next = (k + 1) % 4;
            let mid: Vec<f64> = track(k).iter().zip(track(next)).map(|(a, b)| 0.5 * a + 0.5 * b).collect();
            let time = (k as f32 + 0.5) / 4.0;
            let d = decode_bone_vertex(&view, &playing(0, 1.0), time, v, Interpolation::Linear).unwrap();
            check(d, bone_expected(v, &mid, 0.5 * f64::from(k) + 0.5 * f64::from(next)), "mid-frame");
        }
    }
    // A cross-fade from "loop" frame 1 to "once" (frames 4..7, held at its last) at weight 1/4.
    let mut inst = InstanceRecord { clip_a: 0, phase_offset_a: 0.25, rate_a: 0.0, ..Default::default() };
    inst.set_clip_b(1, 4.0);
    inst.phase_offset_b = 1.0;
    inst.fade_start = -1.0;
    let weights = morph_weights_at(&view, &inst, 0.0, Interpolation::Linear).unwrap();
    let blended: Vec<f64> = track(1).iter().zip(track(6)).map(|(a, b)| 0.75 * a + 0.25 * b).collect();
    assert_eq!(weights.iter().map(|&w| f64::from(w)).collect::<Vec<_>>(), blended);
    assert_eq!(weights[2], 0.0, "a target of weight 0 stays 0 (and is skipped)");
    for v in 0..3 {
        let d = decode_bone_vertex(&view, &inst, 0.0, v, Interpolation::Linear).unwrap();
        check(d, bone_expected(v, &blended, 0.75 * 1.0 + 0.25 * 6.0), "cross-fade");
    }
    // Without a morph layer the rest pose is skinned as it is.
    let mut plain = view.clone();
    plain.morph = None;
    let d = decode_bone_vertex(&plain, &playing(0, 1.0), 0.5, 1, Interpolation::Linear).unwrap();
    check(d, bone_expected(1, &[], 2.0), "no morph layer");
    assert!(morph_weights_at(&plain, &playing(0, 1.0), 0.5, Interpolation::Linear).unwrap().is_empty());
    assert!(matches!(
        decode_bone_vertex(&view, &playing(0, 1.0), 0.0, 3, Interpolation::Linear),
        Err(Error::OutOfRange { what: "vertex index", .. })
    ));
    // A VAT-only asset has no bone mode.
    let vat_only = bake(VertexFormat::Packed64);
    let asset = Asset::parse(&vat_only).unwrap();
    assert!(matches!(BoneAnimationView::from_asset(&asset), Err(Error::MissingSection { .. })));
}

#[test]
pub(crate) fn whole_frames_decode_bit_for_bit_like_single_vertices() {
    for format in [VertexFormat::Packed64, VertexFormat::F16, VertexFormat::Unorm8] {
        let bytes = bake(format);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let n = view.layout.vertex_count as usize;
        for clip in 0..view.clips.len() as u32 {
            for (offset, interp) in
                [(0.1, Interpolation::Point), (0.37, Interpolation::Linear), (0.9, Interpolation::Cubic)]
            {
                let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
                decode_object_frame(&view, clip, offset, interp, &mut p, &mut nrm).unwrap();
                let instance = InstanceRecord {
                    clip_a: clip,
                    phase_offset_a: offset,
                    rate_a: 0.0,
                    ..Default::default()
                };
                for v in 0..n {
                    let d = decode_vertex(&view, &instance, 0.0, v as u32, interp).unwrap();
                    let bits = |a: [f32; 3]| a.map(f32::to_bits);
                    assert_eq!(bits(p[v]), bits(d.object_position), "{format:?} clip {clip} vertex {v}");
                    assert_eq!(bits(nrm[v]), bits(d.object_normal), "{format:?} clip {clip} vertex {v}");
                }
            }
        }
        let mut short = vec![[0.0; 3]; n - 1];
        let mut nrm = vec![[0.0; 3]; n];
        assert!(decode_object_frame(&view, 0, 0.0, Interpolation::Point, &mut short, &mut nrm).is_err());
    }
}

#[test]
pub(crate) fn bad_indices_are_errors_and_clip_indices_clamp_like_the_shader() {
    let bytes = bake(VertexFormat::Unorm16);
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    assert!(matches!(
        decode_vertex(&view, &playing(0, 1.0), 0.0, VERTICES, Interpolation::Linear),
        Err(Error::OutOfRange { what: "vertex index", .. })
    ));
    let past = decode_vertex(&view, &playing(7, 1.0), 0.2, 1, Interpolation::Linear).unwrap();
    let last = decode_vertex(&view, &playing(1, 1.0), 0.2, 1, Interpolation::Linear).unwrap();
    assert_eq!(past, last);
    let mut no_clips = view.clone();
    no_clips.clips = &[];
    assert!(decode_vertex(&no_clips, &playing(0, 1.0), 0.0, 0, Interpolation::Linear).is_err());
}

/// A rigid asset of one piece (two vertices) and one looping clip of two frames: at rest, then
/// turned 90 degrees about +Y and moved 1 m along +X, its second quaternion stored negated (the
/// other hemisphere), so the decoder must align it before the blend.
pub(crate) fn rigid_bytes() -> Vec<u8> {
    use crate::container::{ElementFormat, Lod, RigidAnimation, StreamKind, VertexStream};
    use crate::rigid::{encode_piece_texel, encode_vertex_texel};
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let pivot_bounds = PositionBounds { min: [0.0; 3], extent: [1.0, 0.0, 0.0] };
    let mut w = ContainerWriter::new();
    let texel_bytes = |t: [u32; 4]| t.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut pieces = texel_bytes(encode_piece_texel(&pivot_bounds, [0.0; 3], [0.0, 0.0, 0.0, 1.0]).unwrap());
    pieces
        .extend(texel_bytes(encode_piece_texel(&pivot_bounds, [1.0, 0.0, 0.0], [0.0, -h, 0.0, -h]).unwrap()));
    let pieces = w.add_blob(pieces);
    let vertices = w.add_blob(
        [encode_vertex_texel(0, [0.0; 3]), encode_vertex_texel(0, [0.0; 3])]
            .into_iter()
            .flat_map(texel_bytes)
            .collect::<Vec<u8>>(),
    );
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let rest = w.add_blob(f32s(&[0.0, 0.0, 1.0, 0.0, 1.0, 0.0]));
    let normals = w.add_blob(f32s(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]));
    let indices = w.add_blob([0u32, 1, 0].iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>());
    let mut m = Manifest::new("rigid", 2);
    let mut clips = ClipRowMap::new();
    clips.push("turn", 2.0 / 30.0, 30.0, ClipMode::Looping, 0.0).unwrap();
    m.clips = clips.clips().to_vec();
    m.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest },
        VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: normals },
    ];
    m.indices = Some(indices);
    m.lods = vec![Lod {
        first_index: 0,
        index_count: 3,
        triangle_count: 1,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    m.rigid_animation = Some(RigidAnimation {
        layout: VertexTextureLayout { vertex_count: 1, frame_count: 2, width: 1, height: 2 },
        pivot_bounds,
        bounds: PositionBounds { min: [-1.0, -1.0, -1.0], extent: [3.0, 3.0, 3.0] },
        pieces,
        vertex_layout: VertexTextureLayout { vertex_count: 2, frame_count: 1, width: 2, height: 1 },
        vertices,
        piece_names: vec!["piece".into()],
    });
    w.finish(m).unwrap()
}

#[test]
pub(crate) fn rigid_decode_nlerps_the_short_way_and_cross_fades() {
    let bytes = rigid_bytes();
    let asset = Asset::parse(&bytes).unwrap();
    let view = RigidAnimationView::from_asset(&asset).unwrap();
    let close = |a: [f32; 3], b: [f32; 3], tol: f32| (0..3).all(|i| (a[i] - b[i]).abs() <= tol);
    // Half-way between the frames (phase 0.25 of a 2-frame loop): turned 45 degrees (not 135:
    // the negated quaternion is aligned first), the pivot half-way.
    let at = |phase: f32| InstanceRecord { phase_offset_a: phase, ..Default::default() };
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let v = decode_rigid_vertex(&view, &at(0.25), 0.0, 0, Interpolation::Linear).unwrap();
    // Rotating +Z by 45 degrees about +Y gives (sin 45, 0, cos 45); plus the pivot (0.5, 0, 0).
    // Tolerance: the snorm16 quantum and the unorm16 pivot quantum, a few 1e-5.
    assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
    assert!(close(v.object_normal, [h, 0.0, h], 1e-4), "{:?}", v.object_normal);
    // At the frames themselves the stored transforms come back.
    let v = decode_rigid_vertex(&view, &at(0.5), 0.0, 0, Interpolation::Point).unwrap();
    assert!(close(v.object_position, [2.0, 0.0, 0.0], 1e-4), "{:?}", v.object_position);
    let v = decode_rigid_vertex(&view, &at(0.0), 0.0, 1, Interpolation::Point).unwrap();
    assert!(close(v.object_position, [0.0, 1.0, 0.0], 1e-6), "{:?}", v.object_position);
    // The loop wraps from frame 1 back to frame 0 the short way too (phase 0.75).
    let v = decode_rigid_vertex(&view, &at(0.75), 0.0, 0, Interpolation::Linear).unwrap();
    assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
    // A cross-fade half-way from frame 0 (clip A at phase 0) to frame 1 (clip B at 0.5) blends
    // like the lerp between the frames.
    let mut r = at(0.0);
    r.phase_offset_b = 0.5;
    r.fade_start = -0.5;
    r.set_clip_b(0, 1.0);
    let v = decode_rigid_vertex(&view, &r, 0.0, 0, Interpolation::Point).unwrap();
    assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
    // The piece's own decode: the pivot and a unit quaternion.
    let (pivot, q) = decode_rigid_piece(&view, &at(0.25), 0.0, 0, Interpolation::Linear).unwrap();
    assert!(close(pivot, [0.5, 0.0, 0.0], 1e-4));
    assert!((crate::rigid::quat_dot(q, q) - 1.0).abs() < 1e-6);
    // Out of range: typed errors.
    assert!(decode_rigid_vertex(&view, &at(0.0), 0.0, 2, Interpolation::Point).is_err());
    assert!(view.piece_sample(2, 0).is_err());
}
