//! The rigid mode's CPU reference: pieces' pivots and rotations, and their vertices.

use crate::format::reference::helpers::*;

/// Everything the decoder needs of a rigid asset ([`crate::container::RigidAnimation`]), borrowed
/// (the rest positions and normals read once from the streams).
#[derive(Debug, Clone)]
pub struct RigidAnimationView<'a> {
    /// The piece texture's layout (`vertex_count` is the number of pieces).
    pub layout: VertexTextureLayout,
    /// The pivot box.
    pub pivot_bounds: PositionBounds,
    /// The piece texture, `layout.byte_len(16)` bytes.
    pub pieces: &'a [u8],
    /// The rigid vertex texture, one 16-byte texel per vertex (row padding at the end).
    pub vertices: &'a [u8],
    /// Rest positions and normals per vertex, as the shader's `rest_vertices` holds them.
    pub rest: Vec<crate::gpu::RestVertex>,
    /// The clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> RigidAnimationView<'a> {
    /// The rigid animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a rigid bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let ra = manifest.rigid_animation.as_ref().ok_or(Error::OutOfRange {
            what: "rigid animation",
            value: "none".into(),
            expected: "an asset baked in the rigid mode",
        })?;
        Ok(Self {
            layout: ra.layout,
            pivot_bounds: ra.pivot_bounds,
            pieces: asset.blob(ra.pieces),
            vertices: asset.blob(ra.vertices),
            rest: crate::gpu::rest_vertices(asset),
            clips: &manifest.clips,
        })
    }

    /// Pieces per frame.
    pub fn piece_count(&self) -> u32 {
        self.layout.vertex_count
    }

    /// The piece texel of `piece` at absolute frame `frame`, decoded (`vat_rigid_piece_texel`).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for a frame or piece outside the texture.
    pub fn piece_sample(&self, frame: u32, piece: u32) -> Result<crate::rigid::PieceSample> {
        if frame >= self.layout.frame_count || piece >= self.layout.vertex_count {
            return Err(Error::IndexOutOfRange {
                what: "rigid piece texel",
                index: u64::from(frame) * u64::from(self.layout.vertex_count) + u64::from(piece),
                count: self.layout.texel_count(),
            });
        }
        let texel = crate::rigid::texel_at(self.pieces, self.layout.texel_index(frame, piece))?;
        Ok(crate::rigid::decode_piece_texel(texel))
    }

    /// The piece index and rest pivot of `vertex`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for a vertex outside the texture.
    pub fn vertex_piece(&self, vertex: u32) -> Result<(u32, [f32; 3])> {
        Ok(crate::rigid::decode_vertex_texel(crate::rigid::texel_at(self.vertices, vertex.into())?))
    }
}

/// One clip of a piece at given frames and weights (`vat_rigid_clip`).
pub(crate) fn rigid_clip(
    view: &RigidAnimationView<'_>,
    (frames, w): ([u32; 4], [f32; 4]),
    piece: u32,
    interp: Interpolation,
) -> Result<crate::rigid::PieceSample> {
    use crate::rigid::{PieceSample, quat_align};
    let load = |k: usize| view.piece_sample(frames[k], piece);
    match interp {
        Interpolation::Point => load(if w[1] == 1.0 { 1 } else { 2 }),
        Interpolation::Linear => {
            let (b, c) = (load(1)?, load(2)?);
            let qc = quat_align(c.rotation, b.rotation);
            Ok(PieceSample {
                pivot: std::array::from_fn(|i| w[1] * b.pivot[i] + w[2] * c.pivot[i]),
                rotation: std::array::from_fn(|i| w[1] * b.rotation[i] + w[2] * qc[i]),
            })
        }
        Interpolation::Cubic => {
            let (b, c) = (load(1)?, load(2)?);
            let qc = quat_align(c.rotation, b.rotation);
            let (a, d) = (load(0)?, load(3)?);
            let (qa, qd) = (quat_align(a.rotation, b.rotation), quat_align(d.rotation, b.rotation));
            Ok(PieceSample {
                pivot: std::array::from_fn(|i| {
                    ((w[0] * a.pivot[i] + w[1] * b.pivot[i]) + w[2] * c.pivot[i]) + w[3] * d.pivot[i]
                }),
                rotation: std::array::from_fn(|i| {
                    ((w[0] * qa[i] + w[1] * b.rotation[i]) + w[2] * qc[i]) + w[3] * qd[i]
                }),
            })
        }
    }
}

/// The pivot (object space, metres) and unit rotation of `piece` for `instance` at epoch-relative
/// `time`, as `vat_rigid_vertex` computes them before placing a vertex: clip A, cross-faded to clip
/// B while a fade runs (B's quaternion aligned with A's), the quaternion normalised once, the pivot
/// denormalised from the pivot box.
///
/// # Errors
/// [`Error::ZeroCount`] without clips; [`Error::IndexOutOfRange`] for a piece outside the asset.
pub fn decode_rigid_piece(
    view: &RigidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    piece: u32,
    interp: Interpolation,
) -> Result<([f32; 3], [f32; 4])> {
    let frames_a = clip_frames(view.clips, instance.slot_a(), time, interp)?;
    let mut mixed = rigid_clip(view, frames_a, piece, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    if w > 0.0 {
        let frames_b = clip_frames(view.clips, instance.slot_b(), time, interp)?;
        let b = rigid_clip(view, frames_b, piece, interp)?;
        let qb = crate::rigid::quat_align(b.rotation, mixed.rotation);
        let k = 1.0 - w;
        mixed.pivot = mix3(mixed.pivot, b.pivot, w);
        mixed.rotation = std::array::from_fn(|i| mixed.rotation[i] * k + qb[i] * w);
    }
    let q = crate::rigid::quat_normalize(mixed.rotation);
    Ok((view.pivot_bounds.denormalize(mixed.pivot), q))
}

/// Decodes vertex `vertex` of a rigid asset for `instance` at epoch-relative `time` (seconds), as
/// `vat_rigid_vertex` does: `pivot + rotate(q, rest_position - rest_pivot)`, the normal
/// `rotate(q, rest_normal)` normalised, then the instance transform (see
/// [`decode_rigid_piece`] for the pivot and rotation).
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex outside the asset; those of [`decode_rigid_piece`].
pub fn decode_rigid_vertex(
    view: &RigidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<DecodedVertex> {
    let rest = view.rest.get(vertex as usize).ok_or(Error::OutOfRange {
        what: "vertex index",
        value: vertex.to_string(),
        expected: "< the asset's vertex count",
    })?;
    let (piece, rest_pivot) = view.vertex_piece(vertex)?;
    let (pivot, q) = decode_rigid_piece(view, instance, time, piece, interp)?;
    let local = [
        rest.position[0] - rest_pivot[0],
        rest.position[1] - rest_pivot[1],
        rest.position[2] - rest_pivot[2],
    ];
    let r = crate::rigid::quat_rotate(q, local);
    let p = [pivot[0] + r[0], pivot[1] + r[1], pivot[2] + r[2]];
    let n = normalize3(crate::rigid::quat_rotate(q, rest.normal));
    Ok(to_world(instance, p, n))
}
