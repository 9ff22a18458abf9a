//! The CPU reference decoder: what the vertex shader computes, computed on the CPU.
//!
//! Given an asset's vertex animation texture bytes, its layout and encoding, an instance record and the
//! epoch-relative clock, [`decode_vertex`] returns the vertex's object- and world-space position and
//! normal with the same f32 operations, in the same order, as `vat_decode_vertex` in
//! [`crate::gpu::SHADER_SOURCE`]. Verification (`vat verify`) compares bakes against fresh skinning
//! through it, and the GPU backends are tested against it.
//!
//! [`decode_bone_vertex`] does the same for bone mode (`vat_skin_vertex`): the skinning matrix blended
//! from the bone texture over the sampled frames and influences, the live morph layer (deltas of
//! every target whose blended weight is not 0, added to the rest pose before skinning) and the
//! cofactor normal rule.
//!
//! [`decode_rigid_vertex`] does the same for the rigid mode (`vat_rigid_vertex`, see
//! [`crate::rigid`]): the piece's pivot and quaternion blended over the sampled frames (normalised
//! lerp, hemisphere-aligned), cross-faded, then the vertex's rest offset from its piece's pivot
//! rotated and moved.
//!
//! Floating-point note: WGSL allows an implementation to fuse `a * b + c` into one rounding, which this
//! decoder never does; a GPU result may therefore differ in the last bit or two of an f32. Backend
//! tests state their tolerance in ULPs for that reason.

pub(crate) use crate::clip::Clip;
pub(crate) use crate::container::Asset;
pub(crate) use crate::encoding::{self, PositionBounds, VertexFormat};
pub(crate) use crate::instance::{InstanceRecord, PlayingSlot};
pub(crate) use crate::layout::{
    BoneTextureLayout, MORPH_WEIGHTS_PER_TEXEL, MorphChannel, MorphTextureLayout, MorphWeightsLayout,
    VertexTextureLayout,
};
pub(crate) use crate::playback::{self, Interpolation};
pub(crate) use crate::{Error, Result};

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
    /// The `Rgba16Float` tangent-frame texture (`--tangents`), laid out like `textures`, if baked.
    pub tangents: Option<&'a [u8]>,
}

impl<'a> VertexAnimationView<'a> {
    /// The vertex animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset has no vertex animation texture (e.g. a bone-only bake)
    /// or is a fluid bake (whose texture is not laid out per frame).
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        if asset.manifest().fluid_animation.is_some() {
            // Its texture holds every frame's vertices back to back, not frame-major per vertex:
            // decode it through FluidAnimationView.
            return Err(Error::OutOfRange {
                what: "vertex animation",
                value: "that of a fluid asset".into(),
                expected: "a soft asset (decode a fluid asset with FluidAnimationView)",
            });
        }
        Self::from_asset_unchecked(asset)
    }

    /// [`Self::from_asset`] without the fluid check (the fluid view's vertex texture).
    pub(crate) fn from_asset_unchecked(asset: &'a Asset<'_>) -> Result<Self> {
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
            tangents: va.tangents.map(|id| asset.blob(id)),
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
    /// World-space unit tangent (perpendicular to `world_normal`) and the bitangent sign in `w`;
    /// all zero without a tangent-frame texture. [`decode_vertex`] decodes it as the shader does:
    /// the tangent frame of the sampled frame of larger weight (of clip B once its fade weight is
    /// over one half), made perpendicular to the object normal, turned by the yaw.
    pub world_tangent: [f32; 4],
}

/// Normalised position and unnormalised normal sum of one clip at one time.
pub(crate) struct ClipValue {
    position: [f32; 3],
    normal: [f32; 3],
}

pub(crate) fn decode_clip(
    view: &VertexAnimationView<'_>,
    slot: PlayingSlot,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<ClipValue> {
    let (frames, w) = clip_frames(view.clips, slot, time, interp)?;
    decode_clip_at(view, frames, w, vertex, interp)
}

/// One vertex of a clip at given frames and weights.
pub(crate) fn decode_clip_at(
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
pub(crate) fn combine(interp: Interpolation, w: [f32; 4], t: &[encoding::DecodedTexel; 4]) -> ClipValue {
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
    check_frame_len(n, positions, normals)?;
    let slot = PlayingSlot { clip: clip_index, wrap_code: 0, phase_offset: offset, rate: 0.0 };
    let (frames, w) = clip_frames(view.clips, slot, 0.0, interp)?;
    if view.format == VertexFormat::Packed64 && interp == Interpolation::Point {
        // Verification's path (every baked frame): four vertices at a time, the same IEEE
        // operations per lane as the scalar decode below.
        let frame = frames[if w[1] == 1.0 { 1 } else { 2 }];
        return packed64_frame_x4(view, frame, positions, normals);
    }
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
    let a = decode_clip(view, instance.slot_a(), time, vertex, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    let (n_pos, n_sum) = if w > 0.0 {
        let b = decode_clip(view, instance.slot_b(), time, vertex, interp)?;
        (mix3(a.position, b.position, w), mix3(a.normal, b.normal, w))
    } else {
        (a.position, a.normal)
    };
    let object_position = view.bounds.denormalize(n_pos);
    let object_normal = normalize3(n_sum);
    let mut decoded = to_world(instance, object_position, object_normal);
    decoded.world_tangent = decode_tangent(view, instance, time, w, object_normal, vertex, interp)?;
    Ok(decoded)
}

/// `vat_to_world`: the instance transform of an object-space point and unit normal.
pub(crate) fn to_world(
    instance: &InstanceRecord,
    object_position: [f32; 3],
    object_normal: [f32; 3],
) -> DecodedVertex {
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
    DecodedVertex { object_position, object_normal, world_position, world_normal, world_tangent: [0.0; 4] }
}

/// `vat_decode_tangent`: the world tangent of `instance` at `time` for the unit object normal `n`
/// and fade weight `w` (zero without tangents).
pub(crate) fn decode_tangent(
    view: &VertexAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    w: f32,
    n: [f32; 3],
    vertex: u32,
    interp: Interpolation,
) -> Result<[f32; 4]> {
    let Some(tangents) = view.tangents else { return Ok([0.0; 4]) };
    let slot = if w > 0.5 { instance.slot_b() } else { instance.slot_a() };
    let (frames, weights) = clip_frames(view.clips, slot, time, interp)?;
    let frame = if weights[1] >= weights[2] { frames[1] } else { frames[2] };
    let texel = view.layout.texel_index(frame, vertex) as usize;
    let b = tangents.get(texel * 8..texel * 8 + 8).ok_or(Error::Truncated {
        section: "tangent texture",
        needed: (texel as u64 + 1) * 8,
        available: tangents.len() as u64,
    })?;
    let q = [0, 1, 2, 3].map(|k| encoding::f16_bits_to_f32(u16::from_le_bytes([b[2 * k], b[2 * k + 1]])));
    let (_, t) = encoding::quat_to_tangent_frame(q);
    let d = n[0] * t[0] + n[1] * t[1] + n[2] * t[2];
    let mut p = [t[0] - n[0] * d, t[1] - n[1] * d, t[2] - n[2] * d];
    if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 1e-12 {
        p = [1.0 - n[0] * n[0], -n[1] * n[0], -n[2] * n[0]];
    }
    let u = normalize3(p);
    let (s, c) = instance.yaw.sin_cos();
    let r = rotate_y(c, s, u);
    Ok([r[0], r[1], r[2], t[3]])
}

/// A vertex-animation asset's frames whatever its vertex format: a texel per vertex per frame
/// ([`VertexAnimationView`]) or the skin-residual format's skin and residual
/// ([`SkinResidualView`]). For tools that read an asset's animation as whole frames (exports,
/// impostor images) without caring how it is stored.
#[derive(Debug, Clone)]
pub enum ObjectFrames<'a> {
    /// A format with one texel per vertex per frame.
    Texels(VertexAnimationView<'a>),
    /// The skin-residual format (format version 11).
    SkinResidual(SkinResidualView<'a>),
}

impl<'a> ObjectFrames<'a> {
    /// The vertex animation of a validated asset, by its vertex format.
    ///
    /// # Errors
    /// Those of [`VertexAnimationView::from_asset`] (no vertex animation texture, a fluid bake)
    /// and [`SkinResidualView::from_asset`].
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let format = asset.manifest().vertex_animation.as_ref().map(|va| va.format);
        Ok(if format == Some(VertexFormat::SkinResidual) {
            Self::SkinResidual(SkinResidualView::from_asset(asset)?)
        } else {
            Self::Texels(VertexAnimationView::from_asset(asset)?)
        })
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> usize {
        match self {
            Self::Texels(view) => view.layout.vertex_count as usize,
            Self::SkinResidual(view) => view.vertices.len(),
        }
    }

    /// Every vertex of clip `clip_index` played at phase `offset` (cycles) with rate 0, in object
    /// space, for an instance at the origin with no yaw, scale 1 and no cross-fade:
    /// [`decode_object_frame`] for texels, [`decode_skin_residual_frame_at`] for skin-residual
    /// (each what the shader computes for that instance).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per vertex; otherwise
    /// the decoder's.
    pub fn decode_at(
        &self,
        clip_index: u32,
        offset: f32,
        interp: Interpolation,
        positions: &mut [[f32; 3]],
        normals: &mut [[f32; 3]],
    ) -> Result<()> {
        match self {
            Self::Texels(view) => decode_object_frame(view, clip_index, offset, interp, positions, normals),
            Self::SkinResidual(view) => {
                let instance = InstanceRecord {
                    clip_a: clip_index,
                    phase_offset_a: offset,
                    rate_a: 0.0,
                    ..Default::default()
                };
                decode_skin_residual_frame_at(view, &instance, 0.0, interp, positions, normals)
            }
        }
    }
}

pub(crate) mod helpers;
mod palette;
#[cfg(test)]
mod tests;

// Each mode's decode lives with its mode (`crate::modes`); the reference is one place to call them.
pub use crate::format::skin_residual::reference::*;
pub use crate::modes::bone::reference::*;
pub use crate::modes::fluid::reference::*;
pub use crate::modes::rigid::reference::*;
pub use crate::modes::sprite::reference::*;
pub(crate) use helpers::*;
pub use palette::*;
