//! The skin-residual format's CPU reference: bone mode's skin of the asset's bone section plus the
//! residual, with the same `f32` operations in the same order as the shader's
//! `vat_skin_residual_vertex` (re-exported by [`crate::format::reference`]).

use super::{ResidualBounds, ResidualWidths, finish_residual, read_frame_fields, residual_values};
use crate::format::reference::{DecodedVertex, check_frame_len, to_world};
use crate::modes::bone::reference::{
    BoneAnimationView, BonePlayback, VERTEX_INDEX, decode_bone_frame, rest_vertex,
};
use crate::{Error, Result};
use crate::{container::Asset, encoding::VertexFormat, instance::InstanceRecord, playback};

/// Everything the skin-residual decoder needs of an asset: its skin (bone mode's view) and its
/// residual (every vertex's first bit and widths, the stream), as the shader reads them.
#[derive(Debug, Clone)]
pub struct SkinResidualView<'a> {
    /// The skin: bone texture, joints, weights, rest pose, morph layer, clips.
    pub bones: BoneAnimationView<'a>,
    /// The stated bounds, which give the steps.
    pub bounds: ResidualBounds,
    /// Per vertex: the first bit of its frames in `stream` and its widths.
    pub vertices: Vec<(u32, ResidualWidths)>,
    /// The residual stream, its trailing zero word included.
    pub stream: Vec<u32>,
}

impl<'a> SkinResidualView<'a> {
    /// The skin and residual of a validated skin-residual asset.
    ///
    /// # Errors
    /// [`Error::MissingSection`] if the asset is not in the skin-residual format (or lacks its bone
    /// section).
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let missing = Error::MissingSection { what: "skin residual (bake with --format skin-residual)" };
        let is_format =
            manifest.vertex_animation.as_ref().is_some_and(|va| va.format == VertexFormat::SkinResidual);
        let section = manifest.skin_residual.as_ref().filter(|_| is_format).ok_or(missing)?;
        let texture = asset.blob(section.texture);
        let word = |i: usize| -> u32 {
            texture.get(4 * i..4 * i + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let n = manifest.vertex_count as usize;
        let vertices = (0..n).map(|v| (word(2 * v), ResidualWidths::from_bits(word(2 * v + 1)))).collect();
        let stream = (0..section.stream_words as usize).map(|i| word(2 * n + i)).collect();
        Ok(Self {
            bones: BoneAnimationView::from_asset(asset)?,
            bounds: ResidualBounds {
                position_m: section.position_bound_m,
                normal_rad: section.normal_bound_rad,
            },
            vertices,
            stream,
        })
    }

    /// Vertex `vertex`'s first bit and widths.
    fn vertex(&self, vertex: u32) -> Result<(u32, ResidualWidths)> {
        self.vertices.get(vertex as usize).copied().ok_or_else(|| Error::OutOfRange {
            what: "vertex index",
            value: vertex.to_string(),
            expected: "< the asset's vertex count",
        })
    }

    /// `vat_skin_residual_vertex` before the instance transform: the skin of `playback`, the
    /// residual of its samples blended by the same frame and fade weights, finished.
    fn object_vertex(&self, playback: &BonePlayback, vertex: u32) -> Result<([f32; 3], [f32; 3])> {
        let entry = self.vertex(vertex)?;
        let rest = rest_vertex(&self.bones, vertex, VERTEX_INDEX)?;
        let skinned = playback.skin_vertex(&self.bones, vertex, rest)?;
        let (sa, sb) = playback.samples();
        let (mut r, mut d) = self.residual_clip(sa, entry);
        if let Some(sb) = sb {
            let w = playback.fade;
            let (rb, db) = self.residual_clip(sb, entry);
            r = std::array::from_fn(|i| (1.0 - w) * r[i] + w * rb[i]);
            d = std::array::from_fn(|i| (1.0 - w) * d[i] + w * db[i]);
        }
        Ok(finish_residual(skinned, (r, d), entry.1.absolute_normal))
    }

    /// `vat_residual_clip`: `sum_f w_f values(f)` over the sampled frames of weight other than 0,
    /// left to right.
    fn residual_clip(
        &self,
        (frames, fw): ([u32; 4], [f32; 4]),
        (base, widths): (u32, ResidualWidths),
    ) -> ([f32; 3], [f32; 2]) {
        let (mut r, mut d) = ([0.0f32; 3], [0.0f32; 2]);
        // As the shader: a vertex without residual bits adds nothing (the sum below would be +0).
        if widths.frame_bits() == 0 {
            return (r, d);
        }
        for f in 0..4 {
            let wf = fw[f];
            if wf == 0.0 {
                continue;
            }
            let fields = read_frame_fields(&self.stream, base, widths, frames[f]);
            let (rf, df) = residual_values(&fields, widths, &self.bounds);
            for i in 0..3 {
                r[i] += wf * rf[i];
            }
            for i in 0..2 {
                d[i] += wf * df[i];
            }
        }
        (r, d)
    }
}

/// Decodes vertex `vertex` of `instance` at epoch-relative `time` (seconds), as the shader's
/// `vat_skin_residual_vertex` does: bone mode's skinning matrix and morphed rest pose
/// ([`crate::format::reference::decode_bone_vertex`]) and the residual values blended with the
/// same frame and fade weights, then [`super::finish_residual`] and the instance transform. At a
/// stored frame (one frame weight 1, no fade) this is the encoder's decode, within the stated
/// bounds of the source.
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex outside the asset; [`Error::ZeroCount`] without clips;
/// [`Error::Truncated`] if a blob of the view is shorter than its layout says.
pub fn decode_skin_residual_vertex(
    view: &SkinResidualView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: playback::Interpolation,
) -> Result<DecodedVertex> {
    // A vertex outside the asset is its error whatever the clips (checked again by object_vertex).
    view.vertex(vertex)?;
    rest_vertex(&view.bones, vertex, VERTEX_INDEX)?;
    let playback = BonePlayback::at(&view.bones, instance, time, interp, false)?;
    let (position, normal) = view.object_vertex(&playback, vertex)?;
    Ok(to_world(instance, position, normal))
}

/// [`decode_skin_residual_vertex`] of every vertex at once, in object space (before the instance
/// transform): `positions[v]` and `normals[v]` are bit for bit vertex `v`'s `object_position` and
/// `object_normal`. The sample, the fade and the morph weights are computed once, and each sampled
/// frame's bone rows read once, for the whole frame.
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per residual entry, or a
/// vertex has no rest vertex; otherwise as [`decode_skin_residual_vertex`].
pub fn decode_skin_residual_frame_at(
    view: &SkinResidualView<'_>,
    instance: &InstanceRecord,
    time: f32,
    interp: playback::Interpolation,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    check_frame_len(view.vertices.len(), positions, normals)?;
    let playback = BonePlayback::at(&view.bones, instance, time, interp, true)?;
    for (v, out) in positions.iter_mut().zip(normals.iter_mut()).enumerate() {
        (*out.0, *out.1) = view.object_vertex(&playback, v as u32)?;
    }
    Ok(())
}

/// Decodes every vertex of stored frame `frame` (counted over all clips) in object space, as
/// [`decode_skin_residual_vertex`] decodes it when the playback lands on that frame (weight 1, no
/// fade): what `vat verify` measures against the source.
///
/// # Errors
/// As [`crate::format::reference::decode_bone_frame`]; [`Error::OutOfRange`] for a view with
/// fewer residual entries than rest vertices.
pub fn decode_skin_residual_frame(
    view: &SkinResidualView<'_>,
    frame: u32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    decode_bone_frame(&view.bones, frame, positions, normals)?;
    finish_skin_residual_frame(view, frame, positions, normals)
}

/// Adds stored frame `frame`'s residual to its skin: `positions` and `normals` hold the frame as
/// [`crate::format::reference::decode_bone_frame`] skins it, and leave as
/// [`decode_skin_residual_frame`] decodes it (for a caller that measures the skin alone too).
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per residual entry.
pub fn finish_skin_residual_frame(
    view: &SkinResidualView<'_>,
    frame: u32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    check_frame_len(view.vertices.len(), positions, normals)?;
    for ((p, nrm), &entry) in positions.iter_mut().zip(normals.iter_mut()).zip(&view.vertices) {
        let (r, d) = view.residual_clip(([frame; 4], [0.0, 1.0, 0.0, 0.0]), entry);
        (*p, *nrm) = finish_residual((*p, *nrm), (r, d), entry.1.absolute_normal);
    }
    Ok(())
}
