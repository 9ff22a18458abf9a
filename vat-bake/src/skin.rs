//! The merged vertex set and CPU linear-blend skinning: the ground truth every bake is encoded from
//! and verified against.
//!
//! All body meshes of a rig merge into one [`VertexSet`] in the skin's bind space (metres). Rigid
//! meshes (unskinned, carried by a node) are moved to bind space and bound to one bone with weight 1,
//! so skinning, the bone texture and bone-mode shaders treat every vertex alike.
//!
//! Skinning a vertex: morph deltas first (in bind space, before skinning), then
//! `M = Σ w_i * bone_matrix(j_i)` summed over slots `0..influence_count` in order (zero weights
//! skipped), `p' = M p`, `n' = normalize(sign(det M3) * cof(M3) n)` and tangent `t' = M3 t`
//! orthonormalised against `n'` (w kept). The cofactor matrix `cof(M3) = det(M3) * M3^-T` gives the
//! inverse-transpose direction without a division, so it stays defined for singular blends; the
//! sign restores the orientation when `M3` mirrors (a vertex wholly on one bone, weight exactly 1
//! in slot 0, takes that bone's matrix as it is). Every frame is computed by one thread in a fixed
//! operation order, so results are bit-identical whatever the thread count.
//!
//! The kernel runs four vertices at a time, one per SIMD lane, grouped so that vertices sharing a
//! skinning matrix (same bones and weights) get it blended once per frame; a vertex's result is
//! the same IEEE operations on its own data whatever its group or lane.

use std::collections::HashMap;

use glam::{BVec4A, Mat4, Vec2, Vec3, Vec3A, Vec4};
use rayon::prelude::*;

use vat_core::format::encoding::Packed64Encoder;

use crate::rig::{MAX_INFLUENCES, Mesh, MeshBinding, MeshRole, Rig, StreamedBody};
use crate::sample::{Pose, global_matrices, rest_pose, sample_pose};
use crate::{BakeError, Result};

/// One bone of the vertex set: a node and the matrix taking bind space to that node's space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bone {
    /// Index into [`Rig::nodes`].
    pub node: usize,
    /// Bind space -> node space (the skin's inverse bind matrix, or the inverse rest global transform
    /// of a node carrying a rigid mesh).
    pub inverse_bind: Mat4,
}

/// Where a vertex of the set came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VertexSource {
    /// Index into [`Rig::meshes`].
    pub mesh: u32,
    /// Vertex index within that mesh.
    pub vertex: u32,
}

/// One morph target of one body mesh, with its deltas moved to bind space and stored sparsely (only
/// vertices with a non-zero delta).
#[derive(Debug, Clone, PartialEq)]
pub struct SetMorphTarget {
    /// Index into [`Rig::meshes`]: the pose's weights for this target are
    /// `pose.morph_weights[mesh][target]`.
    pub mesh: usize,
    /// Index into that mesh's morph targets.
    pub target: usize,
    /// Vertex indices into the set (kept up to date by [`VertexSet::remap`]).
    pub vertices: Vec<u32>,
    /// Bind-space position deltas, metres, parallel to `vertices`.
    pub positions: Vec<Vec3>,
    /// Bind-space normal deltas, parallel to `vertices`, if authored.
    pub normals: Option<Vec<Vec3>>,
    /// Bind-space tangent deltas (xyz), parallel to `vertices`, if authored.
    pub tangents: Option<Vec<Vec3>>,
}

/// Every body mesh of a rig merged into one vertex set, in the skin's bind space.
///
/// Per-vertex arrays all have [`VertexSet::vertex_count`] entries. The vertex order is that of
/// [`VertexSet::from_rig`] (meshes in rig order, each mesh's vertices in order) until
/// [`VertexSet::remap`] reorders it; `sources` records each vertex's origin in either case, so it
/// replaces per-mesh vertex ranges (which stop being contiguous once the baker reorders vertices
/// for texture locality).
#[derive(Debug, Clone, PartialEq)]
pub struct VertexSet {
    /// Bind-space positions, metres.
    pub positions: Vec<Vec3>,
    /// Bind-space unit normals.
    pub normals: Vec<Vec3>,
    /// Bind-space unit tangents (w = bitangent sign) when any body mesh has tangents; vertices of
    /// meshes without get an arbitrary unit vector perpendicular to the normal, w = 1.
    pub tangents: Option<Vec<Vec4>>,
    /// Texture coordinates when any body mesh has them; (0, 0) for meshes without.
    pub uvs: Option<Vec<Vec2>>,
    /// Linear RGBA vertex colours when any body mesh has them; white for meshes without.
    pub colors: Option<Vec<Vec4>>,
    /// Material id per vertex.
    pub material_ids: Vec<u8>,
    /// Merged triangle list, three indices per triangle into this set.
    pub indices: Vec<u32>,
    /// Influences used per vertex: 4, or 8 when any vertex has a non-zero weight in slots 4..8.
    pub influence_count: usize,
    /// Bone indices (into `bones`) per vertex; slots with weight 0 hold 0.
    pub joints: Vec<[u16; MAX_INFLUENCES]>,
    /// Weights per vertex, non-negative, summing to 1 (renormalised); slots past `influence_count`
    /// are 0.
    pub weights: Vec<[f32; MAX_INFLUENCES]>,
    /// Bones: the joints of every skin used, one per distinct `(node, inverse bind)` in skin order
    /// (see [`VertexSet::from_rig`]), then one per node carrying a rigid body mesh that is not
    /// already a joint.
    pub bones: Vec<Bone>,
    /// Origin (rig mesh, vertex within it) of each vertex.
    pub sources: Vec<VertexSource>,
    /// Morph targets of the body meshes, in (mesh, target) order.
    pub morph_targets: Vec<SetMorphTarget>,
    /// The vertices whose source has more than [`MAX_INFLUENCES`] influences
    /// ([`Mesh::full_influences`]), sorted by vertex, each with every `(bone, weight)` it has
    /// (weights summing to 1): the full source that [`skin_frames_into_full`] skins. `joints` /
    /// `weights` hold the baked 8.
    pub full_influences: Vec<(u32, Vec<(u16, f32)>)>,
}

/// One skinned frame: every vertex of a [`VertexSet`], posed, in model space.
#[derive(Debug, Clone, PartialEq)]
pub struct SkinnedFrame {
    /// Positions, metres.
    pub positions: Vec<Vec3>,
    /// Unit normals.
    pub normals: Vec<Vec3>,
    /// Unit tangents (w = bitangent sign), when requested and the set has tangents.
    pub tangents: Option<Vec<Vec4>>,
}

mod frames;
mod lanes;
mod plan;
mod sinks;
#[cfg(test)]
mod tests;
mod vertex_set;

pub use frames::*;
use lanes::*;
pub use plan::*;
use sinks::*;
use vertex_set::*;
