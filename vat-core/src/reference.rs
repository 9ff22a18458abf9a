//! The CPU reference decoder: what the vertex shader computes, computed on the CPU.
//!
//! Given an asset's vertex animation texture bytes, its layout and encoding, an instance record and the
//! epoch-relative clock, [`decode_vertex`] returns the vertex's object- and world-space position and
//! normal with the same f32 operations, in the same order, as `vat_decode_vertex` in
//! [`crate::gpu::SHADER_SOURCE`]. Verification (`vat verify`) compares bakes against fresh skinning
//! through it, and the GPU backends are tested against it.
//!
//! Floating-point note: WGSL allows an implementation to fuse `a * b + c` into one rounding, which this
//! decoder never does; a GPU result may therefore differ in the last bit or two of an f32. Backend
//! tests state their tolerance in ULPs for that reason.

use crate::clip::Clip;
use crate::container::Asset;
use crate::encoding::{self, PositionBounds, VertexFormat};
use crate::instance::InstanceRecord;
use crate::layout::VertexTextureLayout;
use crate::playback::{self, Interpolation};
use crate::{Error, Result};

/// Everything the decoder needs of an asset's vertex animation, borrowed.
#[derive(Debug, Clone)]
pub struct VertexAnimationView<'a> {
    /// Where each texel lives.
    pub layout: VertexTextureLayout,
    /// How each texel is encoded.
    pub format: VertexFormat,
    /// The box positions are normalised into (metres, object space).
    pub bounds: PositionBounds,
    /// Position bits per axis of [`VertexFormat::Packed64`] (ignored by other formats).
    pub position_bits: [u32; 3],
    /// One byte slice per texture of `format` (see [`VertexFormat::texel_formats`]), each
    /// `layout.byte_len(bytes_per_texel)` long.
    pub textures: Vec<&'a [u8]>,
    /// The clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> VertexAnimationView<'a> {
    /// The vertex animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset has no vertex animation texture (e.g. a bone-only bake).
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let va = manifest.vertex_animation.as_ref().ok_or(Error::OutOfRange {
            what: "vertex animation",
            value: "none".into(),
            expected: "an asset baked with a vertex animation texture",
        })?;
        Ok(Self {
            layout: va.layout,
            format: va.format,
            bounds: va.bounds,
            position_bits: va.position_bits,
            textures: va.textures.iter().map(|&id| asset.blob(id)).collect(),
            clips: &manifest.clips,
        })
    }
}

/// A decoded vertex. Positions in metres, normals unit length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodedVertex {
    /// Object-space position (after interpolation and cross-fade, before the instance transform).
    pub object_position: [f32; 3],
    /// Object-space unit normal.
    pub object_normal: [f32; 3],
    /// World-space position: `instance.position + R_y(yaw) * (scale * object_position)`.
    pub world_position: [f32; 3],
    /// World-space unit normal.
    pub world_normal: [f32; 3],
}

/// Normalised position and unnormalised normal sum of one clip at one time.
struct ClipValue {
    position: [f32; 3],
    normal: [f32; 3],
}

fn decode_clip(
    view: &VertexAnimationView<'_>,
    clip_index: u32,
    offset: f32,
    rate: f32,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<ClipValue> {
    let (frames, w) = clip_frames(view, clip_index, offset, rate, time, interp)?;
    decode_clip_at(view, frames, w, vertex, interp)
}

/// The absolute frames and weights clip `clip_index` plays at `time`, as the shader picks them.
fn clip_frames(
    view: &VertexAnimationView<'_>,
    clip_index: u32,
    offset: f32,
    rate: f32,
    time: f32,
    interp: Interpolation,
) -> Result<([u32; 4], [f32; 4])> {
    // Like the shader, an index past the clip table reads the last clip.
    let last = view.clips.len().checked_sub(1).ok_or(Error::ZeroCount { what: "clip count" })?;
    let clip = &view.clips[(clip_index as usize).min(last)];
    let sample = playback::clip_sample(clip, offset, time, rate, interp);
    Ok((playback::absolute_frames(clip, &sample), sample.weights))
}

/// One vertex of a clip at given frames and weights.
fn decode_clip_at(
    view: &VertexAnimationView<'_>,
    frames: [u32; 4],
    w: [f32; 4],
    vertex: u32,
    interp: Interpolation,
) -> Result<ClipValue> {
    let load = |k: usize| {
        let texel = view.layout.texel_index(frames[k], vertex);
        encoding::decode_vertex_texel(view.format, view.position_bits, &view.textures, texel)
    };
    let texels = match interp {
        Interpolation::Point => {
            let t = load(if w[1] == 1.0 { 1 } else { 2 })?;
            [t, t, t, t]
        }
        Interpolation::Linear => {
            let (b, c) = (load(1)?, load(2)?);
            [b, b, c, c]
        }
        Interpolation::Cubic => [load(0)?, load(1)?, load(2)?, load(3)?],
    };
    Ok(combine(interp, w, &texels))
}

/// The clip value of texels `t` (those of frames 0..4 of the sample; Point uses the one of weight
/// 1, at `t[1]` when `w[1] == 1`, else `t[2]`) with weights `w`: the same fetches and sums as
/// `vat_decode_clip`: Point reads the one frame of weight 1, Linear sums the two middle frames,
/// Cubic all four, left to right.
#[inline(always)]
fn combine(interp: Interpolation, w: [f32; 4], t: &[encoding::DecodedTexel; 4]) -> ClipValue {
    match interp {
        Interpolation::Point => {
            let p = if w[1] == 1.0 { &t[1] } else { &t[2] };
            ClipValue { position: p.position, normal: p.normal }
        }
        Interpolation::Linear => {
            let (b, c) = (&t[1], &t[2]);
            ClipValue {
                position: std::array::from_fn(|i| w[1] * b.position[i] + w[2] * c.position[i]),
                normal: std::array::from_fn(|i| w[1] * b.normal[i] + w[2] * c.normal[i]),
            }
        }
        Interpolation::Cubic => {
            let sum = |f: fn(&encoding::DecodedTexel) -> [f32; 3]| -> [f32; 3] {
                let (fa, fb, fc, fd) = (f(&t[0]), f(&t[1]), f(&t[2]), f(&t[3]));
                std::array::from_fn(|i| ((w[0] * fa[i] + w[1] * fb[i]) + w[2] * fc[i]) + w[3] * fd[i])
            };
            ClipValue { position: sum(|t| t.position), normal: sum(|t| t.normal) }
        }
    }
}

/// Decodes every vertex of clip `clip_index` played at phase `offset` (cycles) with rate 0, for an
/// instance at the origin with no yaw, scale 1 and no cross-fade: `positions[v]` and `normals[v]`
/// are bit for bit the `object_position` and `object_normal` [`decode_vertex`] gives vertex `v`
/// (tested), with the playback sample computed once for the frame instead of once per vertex.
/// Verification decodes whole frames with it.
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per vertex; otherwise as
/// [`decode_vertex`].
pub fn decode_object_frame(
    view: &VertexAnimationView<'_>,
    clip_index: u32,
    offset: f32,
    interp: Interpolation,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    let n = view.layout.vertex_count as usize;
    if positions.len() != n || normals.len() != n {
        return Err(Error::OutOfRange {
            what: "decoded frame length",
            value: format!("{} / {}", positions.len(), normals.len()),
            expected: "one position and one normal per vertex",
        });
    }
    let (frames, w) = clip_frames(view, clip_index, offset, 0.0, 0.0, interp)?;
    // Which of the sample's four frames are read (as in `decode_clip_at`), each decoded for the
    // whole frame at once: a frame's texels are contiguous.
    let used: &[usize] = match interp {
        Interpolation::Point => &[if w[1] == 1.0 { 1 } else { 2 }],
        Interpolation::Linear => &[1, 2],
        Interpolation::Cubic => &[0, 1, 2, 3],
    };
    let blank = encoding::DecodedTexel { position: [0.0; 3], normal: [0.0; 3] };
    let mut decoded: [Vec<encoding::DecodedTexel>; 4] = Default::default();
    for &k in used {
        let start = view.layout.texel_index(frames[k], 0);
        let out = &mut decoded[k];
        out.reserve_exact(n);
        encoding::decode_vertex_texels(
            view.format,
            view.position_bits,
            &view.textures,
            start..start + n as u64,
            |_, t| out.push(t),
        )?;
    }
    for (v, (p, nrm)) in positions.iter_mut().zip(normals.iter_mut()).enumerate() {
        let at = |k: usize| decoded[k].get(v).copied().unwrap_or(blank);
        let value = combine(interp, w, &[at(0), at(1), at(2), at(3)]);
        *p = view.bounds.denormalize(value.position);
        *nrm = normalize3(value.normal);
    }
    Ok(())
}

/// Decodes vertex `vertex` of `instance` at epoch-relative time `time` (seconds), as the shader does.
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex or clip index outside the asset; texture-size errors from
/// [`encoding::decode_vertex_texel`] if the view's textures are shorter than its layout says.
pub fn decode_vertex(
    view: &VertexAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<DecodedVertex> {
    if vertex >= view.layout.vertex_count {
        return Err(Error::OutOfRange {
            what: "vertex index",
            value: vertex.to_string(),
            expected: "< the asset's vertex count",
        });
    }
    let a =
        decode_clip(view, instance.clip_a, instance.phase_offset_a, instance.rate_a, time, vertex, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    let (n_pos, n_sum) = if w > 0.0 {
        let b = decode_clip(
            view,
            instance.clip_b_index(),
            instance.phase_offset_b,
            instance.rate_b,
            time,
            vertex,
            interp,
        )?;
        (mix3(a.position, b.position, w), mix3(a.normal, b.normal, w))
    } else {
        (a.position, a.normal)
    };
    let object_position = view.bounds.denormalize(n_pos);
    let object_normal = normalize3(n_sum);
    let (s, c) = instance.yaw.sin_cos();
    let scaled = [
        instance.scale * object_position[0],
        instance.scale * object_position[1],
        instance.scale * object_position[2],
    ];
    let rotated = rotate_y(c, s, scaled);
    let world_position = [
        instance.position[0] + rotated[0],
        instance.position[1] + rotated[1],
        instance.position[2] + rotated[2],
    ];
    let world_normal = normalize3(rotate_y(c, s, object_normal));
    Ok(DecodedVertex { object_position, object_normal, world_position, world_normal })
}

/// `a * (1 - w) + b * w` per component (WGSL `mix`).
fn mix3(a: [f32; 3], b: [f32; 3], w: f32) -> [f32; 3] {
    let k = 1.0 - w;
    [a[0] * k + b[0] * w, a[1] * k + b[1] * w, a[2] * k + b[2] * w]
}

/// `x' = c x + s z`, `z' = c z - s x`.
fn rotate_y(c: f32, s: f32, v: [f32; 3]) -> [f32; 3] {
    [c * v[0] + s * v[2], v[1], c * v[2] - s * v[0]]
}

/// `vat_normalize` of the shader: WGSL `normalize`, with the zero vector mapped to +Z instead of NaN.
fn normalize3(v: [f32; 3]) -> [f32; 3] {
    let d = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    if d > 0.0 {
        let inv = 1.0 / d.sqrt();
        [v[0] * inv, v[1] * inv, v[2] * inv]
    } else {
        [0.0, 0.0, 1.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clip::{ClipMode, ClipRowMap};
    use crate::container::{ContainerWriter, Manifest, VertexAnimation};
    use crate::encoding::{
        NormalRounding, allocate_position_bits, encode_vertex_texture, position_error_bound,
    };

    const VERTICES: u32 = 5;

    /// The analytic animation baked by these tests: smooth in vertex and frame, ~1 m across.
    fn truth(vertex: u32, frame: u32) -> ([f32; 3], [f32; 3]) {
        let (v, f) = (vertex as f32, frame as f32);
        let p = [(v + f * 0.7).sin() * 0.5, v * 0.3 + f * 0.05, (v * 1.3 + f).cos() * 0.4];
        let n = [(v + f).cos(), 0.5, (v * 2.0 + f).sin()];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        (p, [n[0] / len, n[1] / len, n[2] / len])
    }

    /// A `.vat` with a looping clip "loop" (4 frames at 4 fps) and a one-shot clip "once" (3 frames
    /// at 2 fps), 5 vertices, in `format`.
    fn bake(format: VertexFormat) -> Vec<u8> {
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
        let bits =
            if format == VertexFormat::Packed64 { allocate_position_bits(bounds.extent) } else { [0; 3] };
        let textures = encode_vertex_texture(
            &layout,
            format,
            &bounds,
            bits,
            &positions,
            &normals,
            NormalRounding::Nearest,
        )
        .unwrap();
        let mut writer = ContainerWriter::new();
        let textures = textures.into_iter().map(|t| writer.add_blob(t)).collect();
        let mut manifest = Manifest::new("reference-test", VERTICES);
        manifest.clips = clips.clips().to_vec();
        manifest.vertex_animation =
            Some(VertexAnimation { layout, format, bounds, position_bits: bits, textures, tangents: None });
        writer.finish(manifest).unwrap()
    }

    const FORMATS: [VertexFormat; 6] = [
        VertexFormat::Packed64,
        VertexFormat::Unorm16,
        VertexFormat::F16,
        VertexFormat::F32,
        VertexFormat::Unorm8,
        VertexFormat::Split8,
    ];

    fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
        let dot: f64 = (0..3).map(|i| f64::from(a[i]) * f64::from(b[i])).sum();
        let la: f64 = (0..3).map(|i| f64::from(a[i]).powi(2)).sum::<f64>().sqrt();
        let lb: f64 = (0..3).map(|i| f64::from(b[i]).powi(2)).sum::<f64>().sqrt();
        (dot / (la * lb)).clamp(-1.0, 1.0).acos().to_degrees()
    }

    fn playing(clip: u32, rate: f32) -> InstanceRecord {
        InstanceRecord { clip_a: clip, rate_a: rate, ..Default::default() }
    }

    #[test]
    fn on_frame_times_decode_every_format_within_its_bound() {
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
    fn linear_midpoints_blend_the_frame_pair_and_wrap_to_frame_zero() {
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
    fn one_shot_clips_clamp_to_their_last_frame() {
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
    fn cross_fade_blends_clip_b_in_over_the_fade() {
        let bytes = bake(VertexFormat::Packed64);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let mut inst = playing(0, 0.75);
        inst.rate_b = 0.5;
        inst.fade_start = 2.0;
        inst.set_clip_b(1, 0.5);
        let only_b = InstanceRecord { clip_a: 1, rate_a: 0.5, ..Default::default() };
        let only_a = playing(0, 0.75);
        let scale =
            view.bounds.min.iter().zip(view.bounds.extent).map(|(m, e)| m.abs() + e).fold(0.0, f32::max);
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
    fn instance_transform_is_translate_rotate_y_scale() {
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

    #[test]
    fn whole_frames_decode_bit_for_bit_like_single_vertices() {
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
    fn bad_indices_are_errors_and_clip_indices_clamp_like_the_shader() {
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
}
