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
    // Like the shader, an index past the clip table reads the last clip.
    let last = view.clips.len().checked_sub(1).ok_or(Error::ZeroCount { what: "clip count" })?;
    let clip = &view.clips[(clip_index as usize).min(last)];
    let sample = playback::clip_sample(clip, offset, time, rate, interp);
    let frames = playback::absolute_frames(clip, &sample);
    let w = sample.weights;
    let load = |k: usize| {
        let texel = view.layout.texel_index(frames[k], vertex);
        encoding::decode_vertex_texel(view.format, view.position_bits, &view.textures, texel)
    };
    // The same fetches and sums as `vat_decode_clip`: Point reads the one frame of weight 1, Linear
    // sums the two middle frames, Cubic all four, left to right.
    let value = match interp {
        Interpolation::Point => {
            let t = load(if w[1] == 1.0 { 1 } else { 2 })?;
            ClipValue { position: t.position, normal: t.normal }
        }
        Interpolation::Linear => {
            let (b, c) = (load(1)?, load(2)?);
            ClipValue {
                position: std::array::from_fn(|i| w[1] * b.position[i] + w[2] * c.position[i]),
                normal: std::array::from_fn(|i| w[1] * b.normal[i] + w[2] * c.normal[i]),
            }
        }
        Interpolation::Cubic => {
            let (a, b, c, d) = (load(0)?, load(1)?, load(2)?, load(3)?);
            let sum = |f: fn(&encoding::DecodedTexel) -> [f32; 3]| -> [f32; 3] {
                let (fa, fb, fc, fd) = (f(&a), f(&b), f(&c), f(&d));
                std::array::from_fn(|i| ((w[0] * fa[i] + w[1] * fb[i]) + w[2] * fc[i]) + w[3] * fd[i])
            };
            ClipValue { position: sum(|t| t.position), normal: sum(|t| t.normal) }
        }
    };
    Ok(value)
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
