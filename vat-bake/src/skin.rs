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

use vat_core::encoding::Packed64Encoder;

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

fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

fn finite3(v: Vec3) -> bool {
    v.is_finite()
}

/// Bind-space transform of a rigid carrier: `bind` takes mesh-local space to bind space.
#[derive(Clone, Copy)]
struct Carrier {
    bone: u16,
    bind: Mat4,
}

/// `sign(det) * cof(m3)`: the inverse transpose of `m`'s linear part up to a positive factor.
fn normal_matrix_columns(m: &Mat4) -> [Vec3A; 3] {
    let a = Vec3A::from_vec4(m.x_axis);
    let b = Vec3A::from_vec4(m.y_axis);
    let c = Vec3A::from_vec4(m.z_axis);
    let bc = b.cross(c);
    let ca = c.cross(a);
    let ab = a.cross(b);
    if a.dot(bc) < 0.0 { [-bc, -ca, -ab] } else { [bc, ca, ab] }
}

#[inline]
fn apply_columns(cols: &[Vec3A; 3], n: Vec3A) -> Vec3A {
    cols[0] * n.x + cols[1] * n.y + cols[2] * n.z
}

impl VertexSet {
    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Merges every [`MeshRole::Body`] mesh of `rig` (attachments are baked separately).
    ///
    /// Body meshes on different skins share one skeleton: [`VertexSet::bones`] holds one bone per
    /// distinct `(node, inverse bind)` pair over every skin used, so skins listing the same joints
    /// with the same bind matrices share their bones, and each mesh's joint indices are renumbered
    /// into that list.
    ///
    /// Errors ([`BakeError::InvalidInput`], naming the mesh and vertex): no body mesh or no vertices;
    /// a skinned body mesh on a skin that does not exist; a skin whose joint
    /// and inverse-bind counts differ or that references a missing node; a rigid carrier node that
    /// does not exist or has a singular rest transform; per-vertex arrays of the wrong length;
    /// non-finite positions, normals, tangents, uvs, morph deltas or inverse bind matrices; a
    /// non-zero weight on a joint index `>=` the skin's joint count; weights that are negative, not
    /// finite, or do not sum to more than 0; an index out of range or a triangle list whose length
    /// is not a multiple of 3; more than `u32::MAX` vertices or 65,536 bones.
    pub fn from_rig(rig: &Rig) -> Result<VertexSet> {
        let body: Vec<(usize, &Mesh)> =
            rig.meshes.iter().enumerate().filter(|(_, m)| m.role == MeshRole::Body).collect();
        let rig_part = || format!("rig \"{}\"", rig.name);
        if body.is_empty() {
            return Err(invalid(rig_part(), "has no body mesh to bake"));
        }

        // The skins of the skinned body meshes, merged into one list of bones: a joint is one bone
        // per distinct (node, inverse bind) pair, so skins listing the same joints with the same bind
        // share bones, and `joint_maps[skin][j]` is the bone of skin joint `j`.
        let mut bones: Vec<Bone> = Vec::new();
        // (node, inverse bind bits) -> bone, so merging stays linear in the joints of all skins.
        let mut bone_of: HashMap<(usize, [u32; 16]), usize> = HashMap::new();
        let mut joint_maps: Vec<Option<Vec<u16>>> = vec![None; rig.skins.len()];
        for &(mi, m) in &body {
            let MeshBinding::Skinned { skin: s } = m.binding else { continue };
            let Some(sk) = rig.skins.get(s) else {
                return Err(invalid(
                    format!("mesh {mi} \"{}\"", m.name),
                    format!("uses skin {s}; the rig has {} skins", rig.skins.len()),
                ));
            };
            if joint_maps[s].is_some() {
                continue;
            }
            if sk.joints.len() != sk.inverse_bind.len() {
                return Err(invalid(
                    format!("skin {s}"),
                    format!(
                        "has {} joints but {} inverse bind matrices",
                        sk.joints.len(),
                        sk.inverse_bind.len()
                    ),
                ));
            }
            let mut map = Vec::with_capacity(sk.joints.len());
            for (j, (&node, ibm)) in sk.joints.iter().zip(&sk.inverse_bind).enumerate() {
                if node >= rig.nodes.len() {
                    return Err(invalid(
                        format!("skin {s} joint {j}"),
                        format!("is node {node}; the rig has {} nodes", rig.nodes.len()),
                    ));
                }
                if !ibm.is_finite() {
                    return Err(invalid(format!("skin {s} joint {j}"), "inverse bind matrix is not finite"));
                }
                let bone =
                    *bone_of.entry((node, ibm.to_cols_array().map(f32::to_bits))).or_insert_with(|| {
                        bones.push(Bone { node, inverse_bind: *ibm });
                        bones.len() - 1
                    });
                let bone = u16::try_from(bone).map_err(|_| {
                    invalid(rig_part(), format!("needs {} bones; at most 65,536 fit", bone + 1))
                })?;
                map.push(bone);
            }
            joint_maps[s] = Some(map);
        }

        // One bone per rigid carrier node (reusing the joint's bone when the node is a joint).
        let rest_globals = rig.rest_globals();
        let mut carriers: Vec<Carrier> = Vec::new();
        let mut carrier_of: HashMap<usize, usize> = HashMap::new();
        // Each node's first joint bone (lowest bone index), for carriers that are joints.
        let mut first_joint_bone: HashMap<usize, usize> = HashMap::new();
        for (b, bone) in bones.iter().enumerate().rev() {
            first_joint_bone.insert(bone.node, b);
        }
        for &(mi, m) in &body {
            let MeshBinding::Rigid { node } = m.binding else { continue };
            if carrier_of.contains_key(&node) {
                continue;
            }
            let Some(rest) = rest_globals.get(node).copied() else {
                return Err(invalid(
                    format!("mesh {mi} \"{}\"", m.name),
                    format!("is carried by node {node}; the rig has {} nodes", rig.nodes.len()),
                ));
            };
            let joint = first_joint_bone.get(&node).copied();
            let reused = joint.and_then(|j| {
                let bind = bones[j].inverse_bind.inverse();
                (bind.is_finite() && bones[j].inverse_bind.determinant() != 0.0).then_some((j, bind))
            });
            let (bone, bind) = match reused {
                Some(found) => found,
                None => {
                    let inverse = rest.inverse();
                    if !rest.is_finite() || rest.determinant() == 0.0 || !inverse.is_finite() {
                        return Err(invalid(
                            format!("node {node} \"{}\"", rig.nodes[node].name),
                            format!(
                                "carries mesh \"{}\" but its rest transform is singular or not finite",
                                m.name
                            ),
                        ));
                    }
                    bones.push(Bone { node, inverse_bind: inverse });
                    (bones.len() - 1, rest)
                }
            };
            let bone = u16::try_from(bone)
                .map_err(|_| invalid(rig_part(), format!("needs {} bones; at most 65,536 fit", bone + 1)))?;
            carrier_of.insert(node, carriers.len());
            carriers.push(Carrier { bone, bind });
        }
        if bones.len() > usize::from(u16::MAX) + 1 {
            return Err(invalid(rig_part(), format!("needs {} bones; at most 65,536 fit", bones.len())));
        }

        let total: usize = body.iter().map(|(_, m)| m.vertex_count()).sum();
        if total == 0 {
            return Err(invalid(rig_part(), "its body meshes have no vertices"));
        }
        if u32::try_from(total).is_err() {
            return Err(invalid(rig_part(), format!("has {total} body vertices; at most {} fit", u32::MAX)));
        }
        let any_tangents = body.iter().any(|(_, m)| m.tangents.is_some());
        let any_uvs = body.iter().any(|(_, m)| m.uvs.is_some());
        let any_colors = body.iter().any(|(_, m)| m.colors.is_some());

        let mut set = VertexSet {
            positions: Vec::with_capacity(total),
            normals: Vec::with_capacity(total),
            tangents: any_tangents.then(|| Vec::with_capacity(total)),
            uvs: any_uvs.then(|| Vec::with_capacity(total)),
            colors: any_colors.then(|| Vec::with_capacity(total)),
            material_ids: Vec::with_capacity(total),
            indices: Vec::new(),
            influence_count: 4,
            joints: Vec::with_capacity(total),
            weights: Vec::with_capacity(total),
            bones,
            sources: Vec::with_capacity(total),
            morph_targets: Vec::new(),
            full_influences: Vec::new(),
        };

        for &(mi, m) in &body {
            let base = set.positions.len();
            let carrier = match m.binding {
                MeshBinding::Rigid { node } => carrier_of.get(&node).map(|&c| carriers[c]),
                MeshBinding::Skinned { .. } => None,
            };
            let joint_map = match m.binding {
                MeshBinding::Skinned { skin } => joint_maps.get(skin).and_then(Option::as_deref),
                MeshBinding::Rigid { .. } => None,
            };
            let kinds = set.push_mesh(mi, m, carrier, joint_map.unwrap_or(&[]))?;
            set.push_morphs(mi, m, carrier, &kinds)?;
            set.push_indices(mi, m, base)?;
        }
        set.influence_count =
            if set.weights.iter().any(|w| w[4..].iter().any(|&x| x != 0.0)) { MAX_INFLUENCES } else { 4 };
        Ok(set)
    }

    /// Appends mesh `mi`'s vertices; returns the per-vertex lengths `(|normal|, |tangent|)` that the
    /// bind transform scaled by (1 for skinned meshes), which its morph deltas must share.
    fn push_mesh(
        &mut self,
        mi: usize,
        m: &Mesh,
        carrier: Option<Carrier>,
        joint_map: &[u16],
    ) -> Result<Vec<(f32, f32)>> {
        let joint_count = joint_map.len();
        let part = || format!("mesh {mi} \"{}\"", m.name);
        let n = m.vertex_count();
        let check_len = |what: &str, len: usize| {
            if len == n {
                Ok(())
            } else {
                Err(invalid(part(), format!("has {n} positions but {len} {what}")))
            }
        };
        check_len("normals", m.normals.len())?;
        check_len("material ids", m.material_ids.len())?;
        if let Some(t) = &m.tangents {
            check_len("tangents", t.len())?;
        }
        if let Some(uv) = &m.uvs {
            check_len("uvs", uv.len())?;
        }
        if let Some(c) = &m.colors {
            check_len("colours", c.len())?;
        }
        let influences = match (m.binding, carrier) {
            (MeshBinding::Skinned { .. }, _) => {
                check_len("joint sets", m.joints.len())?;
                check_len("weight sets", m.weights.len())?;
                if m.influence_count == 0 {
                    return Err(invalid(part(), "is skinned but uses 0 influences per vertex"));
                }
                m.influence_count.min(MAX_INFLUENCES)
            }
            (MeshBinding::Rigid { .. }, _) => 0,
        };
        let mut scales = Vec::with_capacity(n);
        let normal_cols = carrier.map(|c| normal_matrix_columns(&c.bind));
        for v in 0..n {
            let vpart = || format!("{} vertex {v}", part());
            let p = m.positions[v];
            let nrm = m.normals[v];
            if !finite3(p) {
                return Err(invalid(vpart(), format!("position {p} is not finite")));
            }
            if !finite3(nrm) {
                return Err(invalid(vpart(), format!("normal {nrm} is not finite")));
            }
            let tangent = m.tangents.as_ref().map(|t| t[v]);
            if let Some(t) = tangent
                && !t.is_finite()
            {
                return Err(invalid(vpart(), format!("tangent {t} is not finite")));
            }
            let uv = m.uvs.as_ref().map_or(Vec2::ZERO, |uv| uv[v]);
            if !uv.is_finite() {
                return Err(invalid(vpart(), format!("uv {uv} is not finite")));
            }
            let mut joints = [0u16; MAX_INFLUENCES];
            let mut weights = [0.0f32; MAX_INFLUENCES];
            let (pb, nb, tb, scale) = match (carrier, normal_cols) {
                (Some(c), Some(cols)) => {
                    joints[0] = c.bone;
                    weights[0] = 1.0;
                    let pb = c.bind.transform_point3(p);
                    let nb = Vec3::from(apply_columns(&cols, Vec3A::from(nrm)));
                    let kn = nb.length();
                    let nb = if kn > 0.0 { nb / kn } else { nrm };
                    let (tb, kt) = match tangent {
                        Some(t) => {
                            let tb = c.bind.transform_vector3(t.truncate());
                            let kt = tb.length();
                            (if kt > 0.0 { (tb / kt).extend(t.w) } else { t }, kt)
                        }
                        None => (nb.any_orthonormal_vector().extend(1.0), 1.0),
                    };
                    if !finite3(pb) || !finite3(nb) || !tb.is_finite() {
                        return Err(invalid(vpart(), "is not finite once moved to bind space"));
                    }
                    (pb, nb, tb, (if kn > 0.0 { kn } else { 1.0 }, if kt > 0.0 { kt } else { 1.0 }))
                }
                _ => {
                    let mut sum = 0.0f32;
                    for s in 0..influences {
                        let w = m.weights[v][s];
                        if !w.is_finite() || w < 0.0 {
                            return Err(invalid(
                                vpart(),
                                format!("weight {s} is {w}; weights must be finite and >= 0"),
                            ));
                        }
                        if w > 0.0 {
                            let j = m.joints[v][s];
                            if usize::from(j) >= joint_count {
                                return Err(invalid(
                                    vpart(),
                                    format!(
                                        "joint index {j} (slot {s}) is out of range; the skin has {joint_count} joints"
                                    ),
                                ));
                            }
                            joints[s] = joint_map[usize::from(j)];
                            weights[s] = w;
                            sum += w;
                        }
                    }
                    if !(sum > 0.0 && sum.is_finite()) {
                        return Err(invalid(
                            vpart(),
                            format!("weights sum to {sum}; they must sum to more than 0"),
                        ));
                    }
                    for w in &mut weights[..influences] {
                        *w /= sum;
                    }
                    let tb = tangent.unwrap_or_else(|| nrm.any_orthonormal_vector().extend(1.0));
                    (p, nrm, tb, (1.0, 1.0))
                }
            };
            self.positions.push(pb);
            self.normals.push(nb);
            if let Some(t) = &mut self.tangents {
                t.push(tb);
            }
            if let Some(u) = &mut self.uvs {
                u.push(uv);
            }
            if let Some(c) = &mut self.colors {
                c.push(m.colors.as_ref().map_or(Vec4::ONE, |c| c[v]));
            }
            if let Some(list) = m.full_influences.as_ref().and_then(|f| f.get(v))
                && list.len() > MAX_INFLUENCES
                && carrier.is_none()
            {
                let mut mapped = Vec::with_capacity(list.len());
                for &(j, w) in list {
                    let bone = joint_map.get(usize::from(j)).copied().ok_or_else(|| {
                        invalid(
                            vpart(),
                            format!(
                                "influence on joint {j} is out of range; the skin has {joint_count} joints"
                            ),
                        )
                    })?;
                    if !(w.is_finite() && w >= 0.0) {
                        return Err(invalid(vpart(), format!("influence weight {w} is not finite and >= 0")));
                    }
                    mapped.push((bone, w));
                }
                // The vertex was pushed above.
                self.full_influences.push(((self.positions.len() - 1) as u32, mapped));
            }
            self.material_ids.push(m.material_ids[v]);
            self.joints.push(joints);
            self.weights.push(weights);
            // Both fit: the total vertex count was checked against u32 before.
            self.sources.push(VertexSource { mesh: mi as u32, vertex: v as u32 });
            scales.push(scale);
        }
        Ok(scales)
    }

    /// Appends mesh `mi`'s morph targets, moved to bind space like its vertices (position deltas by
    /// the linear part of the bind transform; normal and tangent deltas by the same transform as the
    /// normal or tangent they perturb, divided by the same length, so `base + Σ w d` stays exactly
    /// proportional to the transformed morphed attribute).
    fn push_morphs(
        &mut self,
        mi: usize,
        m: &Mesh,
        carrier: Option<Carrier>,
        scales: &[(f32, f32)],
    ) -> Result<()> {
        let n = m.vertex_count();
        let base = (self.positions.len() - n) as u32;
        let normal_cols = carrier.map(|c| normal_matrix_columns(&c.bind));
        for (ti, target) in m.morph_targets.iter().enumerate() {
            let part = || format!("mesh {mi} \"{}\" morph target {ti}", m.name);
            let lens = [
                Some(target.positions.len()),
                target.normals.as_ref().map(Vec::len),
                target.tangents.as_ref().map(Vec::len),
            ];
            if lens.iter().flatten().any(|&l| l != n) {
                return Err(invalid(part(), format!("delta arrays must have one entry per vertex ({n})")));
            }
            let mut out = SetMorphTarget {
                mesh: mi,
                target: ti,
                vertices: Vec::new(),
                positions: Vec::new(),
                normals: target.normals.as_ref().map(|_| Vec::new()),
                tangents: target.tangents.as_ref().map(|_| Vec::new()),
            };
            for v in 0..n {
                let dp = target.positions[v];
                let dn = target.normals.as_ref().map_or(Vec3::ZERO, |d| d[v]);
                let dt = target.tangents.as_ref().map_or(Vec3::ZERO, |d| d[v]);
                if !finite3(dp) || !finite3(dn) || !finite3(dt) {
                    return Err(invalid(format!("{} vertex {v}", part()), "delta is not finite"));
                }
                if dp == Vec3::ZERO && dn == Vec3::ZERO && dt == Vec3::ZERO {
                    continue;
                }
                let (dp, dn, dt) = match (carrier, normal_cols) {
                    (Some(c), Some(cols)) => {
                        let (kn, kt) = scales[v];
                        (
                            c.bind.transform_vector3(dp),
                            Vec3::from(apply_columns(&cols, Vec3A::from(dn))) / kn,
                            c.bind.transform_vector3(dt) / kt,
                        )
                    }
                    _ => (dp, dn, dt),
                };
                out.vertices.push(base + v as u32);
                out.positions.push(dp);
                if let Some(d) = &mut out.normals {
                    d.push(dn);
                }
                if let Some(d) = &mut out.tangents {
                    d.push(dt);
                }
            }
            self.morph_targets.push(out);
        }
        Ok(())
    }

    fn push_indices(&mut self, mi: usize, m: &Mesh, base: usize) -> Result<()> {
        let part = || format!("mesh {mi} \"{}\"", m.name);
        if !m.indices.len().is_multiple_of(3) {
            return Err(invalid(part(), format!("has {} indices, not a multiple of 3", m.indices.len())));
        }
        let n = m.vertex_count();
        let base = base as u32;
        for (k, &i) in m.indices.iter().enumerate() {
            if i as usize >= n {
                return Err(invalid(part(), format!("index {k} is {i}; the mesh has {n} vertices")));
            }
            self.indices.push(base + i);
        }
        Ok(())
    }

    /// Reorders the vertices: new vertex `i` is old vertex `new_order[i]`. Every per-vertex array,
    /// `sources`, the triangle list and the morph targets' vertex lists follow, so skinning the
    /// remapped set gives every vertex's old result bit for bit, at its new index.
    ///
    /// Errors: [`BakeError::InvalidInput`] when `new_order` is not a permutation of
    /// `0..vertex_count`.
    pub fn remap(&mut self, new_order: &[u32]) -> Result<()> {
        let n = self.vertex_count();
        let part = "vertex order";
        if new_order.len() != n {
            return Err(invalid(part, format!("has {} entries for {n} vertices", new_order.len())));
        }
        let mut inverse = vec![u32::MAX; n];
        for (new, &old) in new_order.iter().enumerate() {
            match inverse.get_mut(old as usize) {
                Some(slot) if *slot == u32::MAX => *slot = new as u32,
                Some(_) => return Err(invalid(part, format!("lists vertex {old} twice"))),
                None => return Err(invalid(part, format!("entry {new} is {old}; there are {n} vertices"))),
            }
        }
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[u32]) {
            *v = order.iter().map(|&o| v[o as usize]).collect();
        }
        permute(&mut self.positions, new_order);
        permute(&mut self.normals, new_order);
        if let Some(t) = &mut self.tangents {
            permute(t, new_order);
        }
        if let Some(uv) = &mut self.uvs {
            permute(uv, new_order);
        }
        if let Some(c) = &mut self.colors {
            permute(c, new_order);
        }
        permute(&mut self.material_ids, new_order);
        permute(&mut self.joints, new_order);
        permute(&mut self.weights, new_order);
        permute(&mut self.sources, new_order);
        // Every index was checked < n when the set was built, so `inverse` covers it.
        for i in &mut self.indices {
            *i = inverse[*i as usize];
        }
        for t in &mut self.morph_targets {
            for v in &mut t.vertices {
                *v = inverse[*v as usize];
            }
        }
        for (v, _) in &mut self.full_influences {
            *v = inverse[*v as usize];
        }
        self.full_influences.sort_by_key(|(v, _)| *v);
        Ok(())
    }

    /// Vertices of rig mesh `mesh`, in set order (after any [`VertexSet::remap`]).
    pub fn mesh_vertices(&self, mesh: usize) -> impl Iterator<Item = usize> + '_ {
        self.sources.iter().enumerate().filter(move |(_, s)| s.mesh as usize == mesh).map(|(i, _)| i)
    }
}

/// Skinning matrices, one per bone: `globals[bone.node] * bone.inverse_bind` (bind space -> model
/// space). `globals` are the pose's global node matrices ([`crate::sample::global_matrices`]); a
/// bone whose node is missing from `globals` gets the identity.
pub fn bone_matrices(_rig: &Rig, set: &VertexSet, globals: &[Mat4]) -> Vec<Mat4> {
    set.bones.iter().map(|b| globals.get(b.node).map_or(Mat4::IDENTITY, |g| *g * b.inverse_bind)).collect()
}

/// Skins every vertex of `set` in `pose`: morph deltas (weights `pose.morph_weights`), then linear
/// blend skinning (see the module docs). Tangents are produced when the set has them.
pub fn skin_pose(rig: &Rig, set: &VertexSet, pose: &Pose) -> SkinnedFrame {
    let bones = bone_matrices(rig, set, &global_matrices(rig, pose));
    skin_frame(set, &SkinPlan::new(set), &bones, &pose.morph_weights, set.tangents.is_some())
}

fn pose_at(rig: &Rig, clip: usize, time: f32) -> Pose {
    match rig.clips.get(clip) {
        Some(c) => sample_pose(rig, c, time),
        None => {
            debug_assert!(false, "clip {clip} out of range ({} clips)", rig.clips.len());
            rest_pose(rig)
        }
    }
}

/// What the kernel needs of one frame: the skinning matrix of every bone ([`bone_matrices`]) and
/// the morph weights of the pose.
#[derive(Debug, Clone)]
pub(crate) struct FramePose {
    /// Skinning matrix per bone of the set.
    pub(crate) bones: Vec<Mat4>,
    /// `morph_weights[mesh][target]`, as in [`Pose::morph_weights`].
    pub(crate) morph_weights: Vec<Vec<f32>>,
}

impl FramePose {
    /// The frame of `pose`, whose global node matrices are `globals`
    /// ([`crate::sample::global_matrices`] of it).
    pub(crate) fn new(rig: &Rig, set: &VertexSet, pose: Pose, globals: &[Mat4]) -> Self {
        Self { bones: bone_matrices(rig, set, globals), morph_weights: pose.morph_weights }
    }

    fn sample(rig: &Rig, set: &VertexSet, clip: usize, time: f32) -> Self {
        let pose = pose_at(rig, clip, time);
        let globals = global_matrices(rig, &pose);
        Self::new(rig, set, pose, &globals)
    }
}

fn skin_frame(
    set: &VertexSet,
    plan: &SkinPlan,
    bones: &[Mat4],
    morph_weights: &[Vec<f32>],
    with_tangents: bool,
) -> SkinnedFrame {
    let n = set.vertex_count();
    let mut positions = vec![Vec3::ZERO; n];
    let mut normals = vec![Vec3::ZERO; n];
    let mut tangents = (with_tangents && set.tangents.is_some()).then(|| vec![Vec4::ZERO; n]);
    let mut sink = ArraySink {
        positions: &mut positions[..],
        normals: Some(&mut normals[..]),
        tangents: tangents.as_deref_mut(),
    };
    let written = skin_into(set, plan, bones, morph_weights, &mut sink);
    // Only a malformed set (per-vertex arrays of different lengths) skins fewer vertices.
    positions.truncate(written);
    normals.truncate(written);
    if let Some(t) = &mut tangents {
        t.truncate(written);
    }
    SkinnedFrame { positions, normals, tangents }
}

/// Skins one frame per sample: `samples` are `(clip index, absolute time in seconds)` (the bake uses
/// `clip.start + k / fps`). Tangents are produced when `with_tangents` and the set has tangents.
/// Frames are computed in parallel (rayon), each by one thread in a fixed order, so the output is
/// bit-identical whatever the thread count. A clip index out of range is a caller bug: it panics in
/// debug builds and skins the rest pose in release builds.
///
/// A rig with a [`Rig::streamed_body`] reads its frames from the source instead
/// ([`streamed_frame`]).
///
/// # Errors
/// Only for a streamed body: [`streamed_frame`]'s.
pub fn skin_clip_frames(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    with_tangents: bool,
) -> Result<Vec<SkinnedFrame>> {
    if let Some(body) = &rig.streamed_body {
        return samples
            .par_iter()
            .map(|&(clip, time)| streamed_frame(rig, body, set, clip, time, with_tangents))
            .collect();
    }
    let plan = SkinPlan::new(set);
    Ok(samples
        .par_iter()
        .map(|&(clip, time)| {
            let frame = FramePose::sample(rig, set, clip, time);
            skin_frame(set, &plan, &frame.bones, &frame.morph_weights, with_tangents)
        })
        .collect())
}

/// The frame of a streamed body ([`Rig::streamed_body`]) at `(clip, absolute time)`, in the order
/// of `set` (a vertex set of `rig`, possibly reordered: each vertex is read from its
/// [`VertexSet::sources`] entry): the source frame the time lands on, or the linear blend of the two
/// it falls between ([`crate::rig::StreamedClip::frames_at`]; normals renormalised). Holds at most
/// two source frames at a time.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a clip index out of range, a set that is not the streamed body's
/// (other vertex count or meshes), tangents asked of a set that has them (a streamed body has no
/// tangent frames), or a frame whose size differs; the source's own read errors.
pub fn streamed_frame(
    rig: &Rig,
    body: &StreamedBody,
    set: &VertexSet,
    clip: usize,
    time: f32,
    with_tangents: bool,
) -> Result<SkinnedFrame> {
    if with_tangents && set.tangents.is_some() {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            "a streamed mesh sequence has no tangent frames (bake it without --tangents)",
        ));
    }
    let n = set.vertex_count();
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    streamed_frame_into(rig, body, set, clip, time, &mut p, &mut nrm)?;
    Ok(SkinnedFrame {
        positions: p.into_iter().map(Vec3::from_array).collect(),
        normals: nrm.into_iter().map(Vec3::from_array).collect(),
        tangents: None,
    })
}

/// [`streamed_frame`] written into `positions` and `normals` (each `set.vertex_count()` long,
/// vertex `v` at index `v`): what the bake encodes and verification compares, without a frame of
/// its own.
///
/// # Errors
/// As [`streamed_frame`]; [`BakeError::InvalidInput`] for arrays of another length.
pub(crate) fn streamed_frame_into(
    rig: &Rig,
    body: &StreamedBody,
    set: &VertexSet,
    clip: usize,
    time: f32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    if positions.len() != set.vertex_count() || normals.len() != set.vertex_count() {
        return Err(invalid("streamed frame arrays", format!("need {} entries each", set.vertex_count())));
    }
    let (Some(c), Some(map)) = (rig.clips.get(clip), body.clips.get(clip)) else {
        return Err(invalid(
            format!("sample of clip {clip}"),
            format!("the rig has {} clips ({} streamed)", rig.clips.len(), body.clips.len()),
        ));
    };
    let source_vertices = body.frames.vertex_count();
    if set.sources.len() != set.vertex_count()
        || set.sources.iter().any(|s| s.mesh != 0 || s.vertex as usize >= source_vertices)
    {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            format!(
                "its vertex set ({} vertices) is not the streamed body's one mesh of {source_vertices} vertices",
                set.vertex_count()
            ),
        ));
    }
    let (a, b, w) = map.frames_at(time - c.start);
    let read = |k: usize| -> Result<crate::rig::BodyFrame> {
        let frame = body.frames.read_frame(k)?;
        if frame.positions.len() != source_vertices || frame.normals.len() != source_vertices {
            return Err(invalid(
                format!("rig \"{}\" frame {k}", rig.name),
                format!(
                    "has {} positions and {} normals; the sequence has {source_vertices} vertices",
                    frame.positions.len(),
                    frame.normals.len()
                ),
            ));
        }
        Ok(frame)
    };
    let fa = read(a)?;
    let fb = if w == 0.0 || a == b { None } else { Some(read(b)?) };
    for ((s, out_p), out_n) in set.sources.iter().zip(positions.iter_mut()).zip(normals.iter_mut()) {
        let v = s.vertex as usize;
        let (p, n) = match &fb {
            None => (fa.positions[v], fa.normals[v]),
            Some(fb) => {
                let n = fa.normals[v] + (fb.normals[v] - fa.normals[v]) * w;
                (
                    fa.positions[v] + (fb.positions[v] - fa.positions[v]) * w,
                    n.try_normalize().unwrap_or(fa.normals[v]),
                )
            }
        };
        *out_p = p.to_array();
        *out_n = n.to_array();
    }
    Ok(())
}

/// [`skin_clip_frames`] into frame-major flat arrays, the layout vat-core's
/// `encoding::encode_vertex_texture` takes: vertex `v` of sample `f` at
/// `positions[f * vertex_count + v]`, likewise `normals` and `tangents` (xyz unit, w = bitangent
/// sign). Saves the baker a copy of every frame. Bit-identical to [`skin_clip_frames`].
///
/// Errors: [`BakeError::InvalidInput`] when an array's length is not `samples.len() * vertex_count`,
/// a clip index is out of range, or tangents are requested from a set without them.
pub fn skin_frames_into(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    check_frame_arrays(
        rig,
        set,
        samples,
        positions.len(),
        normals.len(),
        tangents.as_ref().map(|t| t.len()),
    )?;
    let n = set.vertex_count();
    if n == 0 {
        return Ok(());
    }
    if let Some(body) = &rig.streamed_body {
        return positions
            .par_chunks_mut(n)
            .zip(normals.par_chunks_mut(n))
            .zip(samples.par_iter())
            .try_for_each(|((p, nrm), &(clip, time))| {
                streamed_frame_into(rig, body, set, clip, time, p, nrm)
            });
    }
    let plan = SkinPlan::new(set);
    let frame =
        |(clip, time): (usize, f32), p: &mut [[f32; 3]], nrm: &mut [[f32; 3]], t: Option<&mut [[f32; 4]]>| {
            let pose = FramePose::sample(rig, set, clip, time);
            let mut sink = ArraySink { positions: p, normals: Some(nrm), tangents: t };
            skin_into(set, &plan, &pose.bones, &pose.morph_weights, &mut sink);
        };
    for_each_frame(samples, n, positions, normals, tangents, frame);
    Ok(())
}

/// The checks of [`skin_frames_into`] on its arrays' lengths (`samples.len() * vertex_count` each),
/// the tangents asked for and the samples' clips.
fn check_frame_arrays(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: usize,
    normals: usize,
    tangents: Option<usize>,
) -> Result<()> {
    let n = set.vertex_count();
    let expected = samples.len() * n;
    if [Some(positions), Some(normals), tangents].iter().flatten().any(|&l| l != expected) {
        return Err(invalid(
            "skinned frame arrays",
            format!("need {expected} entries each ({} samples x {n} vertices)", samples.len()),
        ));
    }
    if tangents.is_some() && set.tangents.is_none() {
        return Err(invalid("skinned frame arrays", "tangents requested from a vertex set without tangents"));
    }
    check_samples(rig, samples)?;
    if tangents.is_some() && rig.streamed_body.is_some() {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            "a streamed mesh sequence has no tangent frames (bake it without --tangents)",
        ));
    }
    Ok(())
}

/// Skins a few frames at a time, many times, with the vertex grouping ([`SkinPlan`]) built once:
/// [`skin_frames_into`] groups the vertices again on every call, which costs more than skinning a
/// frame of a large mesh. Verification skins its frames this way, a few per parallel task.
pub(crate) struct FrameSkinner<'a> {
    rig: &'a Rig,
    set: &'a VertexSet,
    /// Unused for a streamed mesh sequence (frames are read, not skinned).
    plan: SkinPlan,
}

impl<'a> FrameSkinner<'a> {
    /// The skinner of `set`, a vertex set of `rig`.
    pub(crate) fn new(rig: &'a Rig, set: &'a VertexSet) -> Self {
        Self { rig, set, plan: SkinPlan::new(set) }
    }

    /// [`skin_frames_into`], bit for bit and with the same errors, on the calling thread (the
    /// caller runs several of these in parallel).
    pub(crate) fn skin_frames(
        &self,
        samples: &[(usize, f32)],
        positions: &mut [[f32; 3]],
        normals: &mut [[f32; 3]],
        mut tangents: Option<&mut [[f32; 4]]>,
    ) -> Result<()> {
        let (rig, set) = (self.rig, self.set);
        check_frame_arrays(
            rig,
            set,
            samples,
            positions.len(),
            normals.len(),
            tangents.as_ref().map(|t| t.len()),
        )?;
        let n = set.vertex_count();
        if n == 0 {
            return Ok(());
        }
        for (f, &(clip, time)) in samples.iter().enumerate() {
            let r = f * n..(f + 1) * n;
            let (p, nrm) = (&mut positions[r.clone()], &mut normals[r.clone()]);
            if let Some(body) = &rig.streamed_body {
                streamed_frame_into(rig, body, set, clip, time, p, nrm)?;
            } else {
                let pose = FramePose::sample(rig, set, clip, time);
                let t = tangents.as_deref_mut().map(|t| &mut t[r]);
                let mut sink = ArraySink { positions: p, normals: Some(nrm), tangents: t };
                skin_into(set, &self.plan, &pose.bones, &pose.morph_weights, &mut sink);
            }
        }
        Ok(())
    }
}

/// Calls `f(sample, positions, normals, tangents)` for each sample and its frame's part of the
/// frame-major arrays (`n` entries each), in parallel over frames.
fn for_each_frame<F>(
    samples: &[(usize, f32)],
    n: usize,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
    f: F,
) where
    F: Fn((usize, f32), &mut [[f32; 3]], &mut [[f32; 3]], Option<&mut [[f32; 4]]>) + Sync,
{
    let pn = positions.par_chunks_mut(n).zip(normals.par_chunks_mut(n));
    match tangents {
        Some(t) => pn
            .zip(t.par_chunks_mut(n))
            .zip(samples.par_iter())
            .for_each(|(((p, nrm), t), &s)| f(s, p, nrm, Some(t))),
        None => pn.zip(samples.par_iter()).for_each(|((p, nrm), &s)| f(s, p, nrm, None)),
    }
}

/// [`skin_frames_into`], then the vertices of [`VertexSet::full_influences`] skinned again with
/// every influence their source has (morph deltas first, as for every vertex): the full source a
/// bake that kept 8 influences per vertex is verified against. Equal to [`skin_frames_into`] when
/// no vertex has more than 8.
///
/// Errors: as [`skin_frames_into`].
pub fn skin_frames_into_full(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    mut tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    skin_frames_into(rig, set, samples, positions, normals, tangents.as_deref_mut())?;
    apply_full_influences(rig, set, samples, positions, normals, tangents)
}

/// Overwrites, in frames skinned by [`skin_frames_into`] (same `samples`, same frame-major
/// layout), the vertices of [`VertexSet::full_influences`] with their skinning by every influence
/// their source has: what turns the baked skinning into [`skin_frames_into_full`]'s without
/// skinning every vertex again. Leaves the arrays as they are when no vertex has more than 8.
///
/// Errors: [`BakeError::InvalidInput`] when an array's length is not `samples.len() * vertex_count`
/// or a clip index is out of range.
pub fn apply_full_influences(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    let n = set.vertex_count();
    let expected = samples.len() * n;
    let lens = [Some(positions.len()), Some(normals.len()), tangents.as_ref().map(|t| t.len())];
    if lens.iter().flatten().any(|&l| l != expected) {
        return Err(invalid(
            "skinned frame arrays",
            format!("need {expected} entries each ({} samples x {n} vertices)", samples.len()),
        ));
    }
    check_samples(rig, samples)?;
    if set.full_influences.is_empty() || n == 0 {
        return Ok(());
    }
    // The morph deltas of each listed vertex: (target, position, normal, tangent).
    type Delta = (usize, Vec3, Vec3, Vec3);
    let listed: HashMap<u32, usize> =
        set.full_influences.iter().enumerate().map(|(i, (v, _))| (*v, i)).collect();
    let mut deltas: Vec<Vec<Delta>> = vec![Vec::new(); set.full_influences.len()];
    for (ti, t) in set.morph_targets.iter().enumerate() {
        for (k, v) in t.vertices.iter().enumerate() {
            if let Some(&i) = listed.get(v) {
                let dn = t.normals.as_ref().map_or(Vec3::ZERO, |d| d[k]);
                let dt = t.tangents.as_ref().map_or(Vec3::ZERO, |d| d[k]);
                deltas[i].push((ti, t.positions[k], dn, dt));
            }
        }
    }
    let fix =
        |(clip, time): (usize, f32), p: &mut [[f32; 3]], nrm: &mut [[f32; 3]], t: Option<&mut [[f32; 4]]>| {
            let pose = FramePose::sample(rig, set, clip, time);
            let weight = |ti: usize| {
                let target = &set.morph_targets[ti];
                pose.morph_weights.get(target.mesh).and_then(|w| w.get(target.target)).copied().unwrap_or(0.0)
            };
            let mut t = t;
            for ((v, list), deltas) in set.full_influences.iter().zip(&deltas) {
                let v = *v as usize;
                let (mut pm, mut nm) = (set.positions[v], set.normals[v]);
                let mut tm = set.tangents.as_ref().map(|t| t[v]);
                for &(ti, dp, dn, dt) in deltas {
                    let w = weight(ti);
                    if w != 0.0 {
                        pm += dp * w;
                        nm += dn * w;
                        if let Some(tm) = &mut tm {
                            *tm = (tm.truncate() + dt * w).extend(tm.w);
                        }
                    }
                }
                let mut m = Mat4::ZERO;
                for &(bone, w) in list {
                    m += pose.bones.get(usize::from(bone)).copied().unwrap_or(Mat4::IDENTITY) * w;
                }
                let (a, b, c) = (m.x_axis.truncate(), m.y_axis.truncate(), m.z_axis.truncate());
                let sign = if a.dot(b.cross(c)) < 0.0 { -1.0 } else { 1.0 };
                let normal = (b.cross(c) * nm.x + c.cross(a) * nm.y + a.cross(b) * nm.z) * sign;
                let normal = normal.try_normalize().unwrap_or(nm);
                p[v] = m.transform_point3(pm).to_array();
                nrm[v] = normal.to_array();
                if let (Some(out), Some(tm)) = (t.as_deref_mut(), tm) {
                    let skinned = m.transform_vector3(tm.truncate());
                    let ortho = (skinned - normal * normal.dot(skinned)).try_normalize().unwrap_or(skinned);
                    out[v] = ortho.extend(tm.w).to_array();
                }
            }
        };
    for_each_frame(samples, n, positions, normals, tangents, fix);
    Ok(())
}

/// Errors unless every sample's clip exists.
fn check_samples(rig: &Rig, samples: &[(usize, f32)]) -> Result<()> {
    match samples.iter().find(|(c, _)| *c >= rig.clips.len()) {
        Some(&(clip, _)) => {
            Err(invalid(format!("sample of clip {clip}"), format!("the rig has {} clips", rig.clips.len())))
        }
        None => Ok(()),
    }
}

/// Axis-aligned bounds `(min, max)` in metres of every skinned vertex position over `samples`
/// (`(clip index, absolute time in seconds)`), equal (`==`) to the min/max of the positions
/// [`skin_frames_into`] and [`skin_clip_frames`] produce, but computed without normals and without
/// storing frames: a baker can fix its quantisation box first and then skin and encode a few frames
/// at a time into reused buffers, instead of materialising every frame (touching 16 MB of fresh
/// memory costs about as much as skinning it). Parallel over samples, reduced in sample order.
///
/// Errors: [`BakeError::InvalidInput`] when `samples` is empty, the set has no vertices, or a clip
/// index is out of range.
pub fn skinned_bounds(rig: &Rig, set: &VertexSet, samples: &[(usize, f32)]) -> Result<(Vec3, Vec3)> {
    if samples.is_empty() || set.vertex_count() == 0 {
        return Err(invalid("skinned bounds", "need at least one sample and one vertex"));
    }
    check_samples(rig, samples)?;
    let plan = SkinPlan::new(set);
    let per_frame: Vec<FrameBounds> = samples
        .par_iter()
        .map(|&(clip, time)| match &rig.streamed_body {
            Some(body) => Ok(FrameBounds::of(&streamed_frame(rig, body, set, clip, time, false)?.positions)),
            None => Ok(frame_bounds(set, &plan, &FramePose::sample(rig, set, clip, time))),
        })
        .collect::<Result<_>>()?;
    let all = FrameBounds::merge(&per_frame);
    Ok((all.min, all.max))
}

/// Bounds of the skinned positions of one frame (or several, merged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrameBounds {
    /// Per-axis minimum of the positions (meaningful only when `finite`).
    pub(crate) min: Vec3,
    /// Per-axis maximum of the positions (meaningful only when `finite`).
    pub(crate) max: Vec3,
    /// Whether every coordinate was finite.
    pub(crate) finite: bool,
}

impl FrameBounds {
    /// The bounds of `positions`.
    pub(crate) fn of(positions: &[Vec3]) -> FrameBounds {
        positions
            .iter()
            .fold(FrameBounds { min: Vec3::INFINITY, max: Vec3::NEG_INFINITY, finite: true }, |a, p| {
                FrameBounds { min: a.min.min(*p), max: a.max.max(*p), finite: a.finite && p.is_finite() }
            })
    }

    /// The bounds of all of `frames`, merged in order.
    pub(crate) fn merge(frames: &[FrameBounds]) -> FrameBounds {
        frames
            .iter()
            .fold(FrameBounds { min: Vec3::INFINITY, max: Vec3::NEG_INFINITY, finite: true }, |a, b| {
                FrameBounds { min: a.min.min(b.min), max: a.max.max(b.max), finite: a.finite && b.finite }
            })
    }
}

/// [`FrameBounds`] of one frame: its positions only (no normals, nothing stored).
pub(crate) fn frame_bounds(set: &VertexSet, plan: &SkinPlan, pose: &FramePose) -> FrameBounds {
    let mut bounds =
        BoundsSink { lo: [Vec4::INFINITY; 3], hi: [Vec4::NEG_INFINITY; 3], finite: BVec4A::splat(true) };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut bounds);
    let lane_min = |v: Vec4| v.x.min(v.y).min(v.z).min(v.w);
    let lane_max = |v: Vec4| v.x.max(v.y).max(v.z).max(v.w);
    FrameBounds {
        min: Vec3::new(lane_min(bounds.lo[0]), lane_min(bounds.lo[1]), lane_min(bounds.lo[2])),
        max: Vec3::new(lane_max(bounds.hi[0]), lane_max(bounds.hi[1]), lane_max(bounds.hi[2])),
        finite: bounds.finite.all(),
    }
}

/// Skins one frame into `positions`, `normals` and optionally `tangents` (each at least
/// `set.vertex_count()` long; vertex `v` at index `v`), as [`skin_frames_into`] does for each of its
/// frames.
pub(crate) fn skin_frame_into(
    set: &VertexSet,
    plan: &SkinPlan,
    pose: &FramePose,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) {
    let mut sink = ArraySink { positions, normals: Some(normals), tangents };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut sink);
}

/// Skins one frame straight into its [`vat_core::encoding::VertexFormat::Packed64`] texels (`texels` holds 8 bytes per
/// vertex, vertex `v` at byte `8 v`): the bytes [`vat_core::encoding::encode_vertex_texels`] gives
/// for the positions and normals [`skin_frame_into`] computes, with nearest normal rounding,
/// without storing them.
pub(crate) fn skin_frame_packed64(
    set: &VertexSet,
    plan: &SkinPlan,
    pose: &FramePose,
    encoder: &Packed64Encoder,
    texels: &mut [u8],
) {
    let mut sink = Packed64Sink { encoder, texels };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut sink);
}

/// The vertices of a set grouped by how they are skinned, so that the kernel runs four vertices at
/// a time with one skinning matrix per group where it can, and without a branch per vertex:
///
/// - vertices wholly on one bone (weight exactly 1 in slot 0 and 0 in the other used slots), by
///   bone: skinned by that bone's matrix as it is;
/// - vertices with the same non-zero (bone, weight) pairs in the same slot order, when at least
///   [`LANES`] share them (rigs weight whole rings of vertices alike; the procedural humanoid has
///   63 such sets for 2,438 vertices): blended once per frame, `Σ w_i * bone(j_i)` in slot order;
/// - every other vertex, by its number `k` of non-zero weights, blended per vertex the same way.
///
/// A vertex's result does not depend on its group or lane: it is the same IEEE operations on its
/// own data either way. Built once per vertex set (with the rest positions and normals of every
/// group's lanes gathered in advance), used every frame.
pub(crate) struct SkinPlan {
    groups: Vec<SkinGroup>,
    /// Vertices covered: the shortest per-vertex array's length.
    vertex_count: usize,
}

/// A vertex's skinning key in [`SkinPlan::new`]: its bone if wholly on one, else its non-zero
/// (bone, weight bits) pairs in slot order.
type WeightKey = (Option<u16>, Vec<(u16, u32)>);

/// The vertices sharing one [`WeightKey`].
struct WeightSet {
    bone: Option<u16>,
    pairs: Vec<(u16, f32)>,
    vertices: Vec<u32>,
}

/// How the vertices of a [`SkinGroup`] get their skinning matrices.
#[derive(Clone)]
enum GroupMatrix {
    /// Every vertex is wholly on this bone.
    Rigid(u16),
    /// Every vertex blends these bones with these weights, in this order.
    Shared { joints: Vec<u16>, weights: Vec<f32> },
    /// Each vertex blends its own `k` bones: `joints` and `weights` of the group, `k` per vertex.
    PerVertex { k: usize, joints: Vec<u16>, weights: Vec<f32> },
}

/// One group of a [`SkinPlan`].
#[derive(Clone)]
struct SkinGroup {
    matrix: GroupMatrix,
    /// The vertices, increasing.
    vertices: Vec<u32>,
    /// Per chunk of [`LANES`] vertices, the rest positions then normals across the lanes (x, y, z
    /// each), lanes past the group's end repeating its last vertex.
    rest: Vec<[Vec4; 6]>,
}

impl SkinPlan {
    /// Groups the vertices of `set`.
    pub(crate) fn new(set: &VertexSet) -> Self {
        let influences = set.influence_count.clamp(1, MAX_INFLUENCES);
        let n = [set.positions.len(), set.normals.len(), set.joints.len(), set.weights.len()]
            .into_iter()
            .min()
            .unwrap_or(0);
        // Vertices by exact (bone, weight bits) list, in order of first appearance; rigid
        // vertices keyed by their bone alone (weight list empty).
        let mut keys: HashMap<WeightKey, usize> = HashMap::new();
        let mut sets: Vec<WeightSet> = Vec::new();
        for (v, (j, w)) in set.joints.iter().zip(&set.weights).take(n).enumerate() {
            let rigid = w[0] == 1.0 && w[1..influences].iter().all(|&x| x == 0.0);
            // NaN counts as non-zero, as in `w != 0.0`.
            let pairs: Vec<(u16, f32)> = if rigid {
                Vec::new()
            } else {
                (0..influences).filter(|&s| w[s] != 0.0).map(|s| (j[s], w[s])).collect()
            };
            let bone = rigid.then_some(j[0]);
            let key = (bone, pairs.iter().map(|&(j, w)| (j, w.to_bits())).collect());
            let index = *keys.entry(key).or_insert_with(|| {
                sets.push(WeightSet { bone, pairs, vertices: Vec::new() });
                sets.len() - 1
            });
            sets[index].vertices.push(v as u32);
        }
        let mut groups = Vec::new();
        // Vertices blended one by one: (k, vertex, its weight set), grouped by k in vertex order.
        let mut per_vertex: Vec<(usize, u32, usize)> = Vec::new();
        for (i, s) in sets.iter().enumerate() {
            match s.bone {
                Some(b) => groups.push((GroupMatrix::Rigid(b), s.vertices.clone())),
                None if s.vertices.len() >= LANES => {
                    let (joints, weights) = s.pairs.iter().copied().unzip();
                    groups.push((GroupMatrix::Shared { joints, weights }, s.vertices.clone()));
                }
                None => per_vertex.extend(s.vertices.iter().map(|&v| (s.pairs.len(), v, i))),
            }
        }
        per_vertex.sort_unstable_by_key(|e| (e.0, e.1));
        for run in per_vertex.chunk_by(|a, b| a.0 == b.0) {
            let vertices = run.iter().map(|e| e.1).collect();
            let (joints, weights) = run.iter().flat_map(|e| sets[e.2].pairs.iter().copied()).unzip();
            groups.push((GroupMatrix::PerVertex { k: run[0].0, joints, weights }, vertices));
        }
        let groups = groups
            .into_iter()
            .map(|(matrix, vertices)| {
                let rest = vertices
                    .chunks(LANES)
                    .map(|chunk| {
                        let ids = lane_ids(chunk);
                        let p = gathered(&set.positions, &ids);
                        let nr = gathered(&set.normals, &ids);
                        [p[0], p[1], p[2], nr[0], nr[1], nr[2]]
                    })
                    .collect();
                SkinGroup { matrix, vertices, rest }
            })
            .collect();
        Self { groups, vertex_count: n }
    }
}

/// The vertex ids of the lanes of a chunk of 1 to [`LANES`] vertices (lanes past its end repeat
/// its last vertex).
#[inline(always)]
fn lane_ids(chunk: &[u32]) -> [u32; LANES] {
    let last = chunk.last().copied().unwrap_or(0);
    [
        chunk.first().copied().unwrap_or(last),
        *chunk.get(1).unwrap_or(&last),
        *chunk.get(2).unwrap_or(&last),
        last,
    ]
}

/// `v[ids[l]]` across the lanes, x, y and z (a missing vertex reads as zero).
#[inline(always)]
fn gathered(v: &[Vec3], ids: &[u32; LANES]) -> [Vec4; 3] {
    let at = |l: usize| v.get(ids[l] as usize).copied().unwrap_or(Vec3::ZERO);
    let t = transposed([at(0), at(1), at(2), at(3)]);
    [t.x_axis, t.y_axis, t.z_axis]
}

/// A value type the kernel writes per vertex (glam vectors or plain arrays).
trait Slot<V> {
    fn set(&mut self, v: V);
}

impl Slot<Vec3> for Vec3 {
    #[inline]
    fn set(&mut self, v: Vec3) {
        *self = v;
    }
}

impl Slot<Vec3> for [f32; 3] {
    #[inline]
    fn set(&mut self, v: Vec3) {
        *self = v.to_array();
    }
}

impl Slot<Vec4> for Vec4 {
    #[inline]
    fn set(&mut self, v: Vec4) {
        *self = v;
    }
}

impl Slot<Vec4> for [f32; 4] {
    #[inline]
    fn set(&mut self, v: Vec4) {
        *self = v.to_array();
    }
}

/// Where skinned vertices go, four lanes at a time: `x`, `y`, `z` (and `w`) of each attribute
/// across the lanes, of which the first `len` are vertices `ids[..len]` (the other lanes repeat the
/// last vertex).
trait FrameSink {
    /// Whether normals are wanted (else only positions are computed).
    fn wants_normals(&self) -> bool;
    /// Whether tangents are wanted (with normals, when the set has tangents).
    fn wants_tangents(&self) -> bool;
    /// Takes the lanes' positions, unit normals (when wanted) and tangents (when wanted and present).
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        positions: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        tangents: Option<[Vec4; 4]>,
    );
}

/// Per-vertex arrays, written at each vertex's index.
struct ArraySink<'a, P, N, T> {
    positions: &'a mut [P],
    normals: Option<&'a mut [N]>,
    tangents: Option<&'a mut [T]>,
}

impl<P: Slot<Vec3>, N: Slot<Vec3>, T: Slot<Vec4>> FrameSink for ArraySink<'_, P, N, T> {
    fn wants_normals(&self) -> bool {
        self.normals.is_some()
    }

    fn wants_tangents(&self) -> bool {
        self.tangents.is_some()
    }

    #[inline(always)]
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        [x, y, z]: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        tangents: Option<[Vec4; 4]>,
    ) {
        let out = Mat4::from_cols(x, y, z, Vec4::ZERO).transpose();
        for (l, &id) in ids.iter().enumerate().take(len) {
            if let Some(o) = self.positions.get_mut(id as usize) {
                o.set(out.col(l).truncate());
            }
        }
        if let (Some(out), Some([x, y, z])) = (self.normals.as_deref_mut(), normals) {
            let n = Mat4::from_cols(x, y, z, Vec4::ZERO).transpose();
            for (l, &id) in ids.iter().enumerate().take(len) {
                if let Some(o) = out.get_mut(id as usize) {
                    o.set(n.col(l).truncate());
                }
            }
        }
        if let (Some(out), Some([x, y, z, w])) = (self.tangents.as_deref_mut(), tangents) {
            let t = Mat4::from_cols(x, y, z, w).transpose();
            for (l, &id) in ids.iter().enumerate().take(len) {
                if let Some(o) = out.get_mut(id as usize) {
                    o.set(t.col(l));
                }
            }
        }
    }
}

/// Keeps the running per-lane min/max of the positions put into it, and whether all were finite.
struct BoundsSink {
    lo: [Vec4; 3],
    hi: [Vec4; 3],
    finite: BVec4A,
}

impl FrameSink for BoundsSink {
    fn wants_normals(&self) -> bool {
        false
    }

    fn wants_tangents(&self) -> bool {
        false
    }

    #[inline(always)]
    fn put(
        &mut self,
        _: &[u32; LANES],
        _: usize,
        [x, y, z]: [Vec4; 3],
        _: Option<[Vec4; 3]>,
        _: Option<[Vec4; 4]>,
    ) {
        // Lanes past `len` repeat a real vertex: they change neither the min nor the max.
        self.finite &= x.is_finite_mask() & y.is_finite_mask() & z.is_finite_mask();
        self.lo = [self.lo[0].min(x), self.lo[1].min(y), self.lo[2].min(z)];
        self.hi = [self.hi[0].max(x), self.hi[1].max(y), self.hi[2].max(z)];
    }
}

/// One frame of [`vat_core::encoding::VertexFormat::Packed64`] texels (8 bytes per vertex, vertex `v` at byte `8 v`),
/// encoded from the lanes as they are skinned.
struct Packed64Sink<'a> {
    encoder: &'a Packed64Encoder,
    texels: &'a mut [u8],
}

impl FrameSink for Packed64Sink<'_> {
    fn wants_normals(&self) -> bool {
        true
    }

    fn wants_tangents(&self) -> bool {
        false
    }

    #[inline(always)]
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        positions: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        _: Option<[Vec4; 4]>,
    ) {
        let Some(normals) = normals else { return };
        let [x, y, z] = positions;
        let [nx, ny, nz] = normals;
        let texels = self.encoder.encode4(
            [x.to_array(), y.to_array(), z.to_array()],
            [nx.to_array(), ny.to_array(), nz.to_array()],
        );
        for l in 0..len {
            let at = ids[l] as usize * 8;
            if let Some(out) = self.texels.get_mut(at..at + 8) {
                out[..4].copy_from_slice(&texels[l][0].to_le_bytes());
                out[4..].copy_from_slice(&texels[l][1].to_le_bytes());
            }
        }
    }
}

/// Bind-space attributes with the pose's morph deltas added.
struct Morphed {
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    tangents: Option<Vec<Vec4>>,
}

/// Adds `Σ weight * delta` of every morph target with a non-zero weight (targets in set order) to
/// copies of the set's attributes; `None` when no target is active.
fn morph(set: &VertexSet, morph_weights: &[Vec<f32>]) -> Option<Morphed> {
    let weight =
        |t: &SetMorphTarget| morph_weights.get(t.mesh).and_then(|w| w.get(t.target)).copied().unwrap_or(0.0);
    if set.morph_targets.iter().all(|t| weight(t) == 0.0 || t.vertices.is_empty()) {
        return None;
    }
    let mut out = Morphed {
        positions: set.positions.clone(),
        normals: set.normals.clone(),
        tangents: set.tangents.clone(),
    };
    fn add(out: &mut [Vec3], vertices: &[u32], deltas: &[Vec3], w: f32) {
        for (&v, d) in vertices.iter().zip(deltas) {
            if let Some(o) = out.get_mut(v as usize) {
                *o += *d * w;
            }
        }
    }
    for target in &set.morph_targets {
        let w = weight(target);
        if w == 0.0 {
            continue;
        }
        add(&mut out.positions, &target.vertices, &target.positions, w);
        if let Some(d) = &target.normals {
            add(&mut out.normals, &target.vertices, d, w);
        }
        if let (Some(d), Some(t)) = (&target.tangents, &mut out.tangents) {
            for (&v, d) in target.vertices.iter().zip(d) {
                if let Some(o) = t.get_mut(v as usize) {
                    *o = (o.truncate() + *d * w).extend(o.w);
                }
            }
        }
    }
    Some(out)
}

/// Vertices skinned together, one per lane of a `Vec4`: the per-vertex math runs on four vertices
/// at once (transposed in registers), instead of on one vertex's xyz with horizontal sums.
const LANES: usize = 4;

/// The affine part of a skinning matrix as its three rows `(m_r0, m_r1, m_r2, translation_r)`:
/// blending rows costs three vector operations per influence instead of four, and transposing the
/// rows of four vertices gives each matrix entry across the four lanes.
type Rows = [Vec4; 3];

fn rows_of(m: &Mat4) -> Rows {
    [m.row(0), m.row(1), m.row(2)]
}

const IDENTITY_ROWS: Rows = [Vec4::X, Vec4::Y, Vec4::Z];

/// The skinning matrices of four vertices, entry by entry across the lanes: column `a` of the
/// linear part is `(a[0], a[1], a[2])`, likewise `b` and `c`; the translation is `w`.
struct LaneMatrices {
    a: [Vec4; 3],
    b: [Vec4; 3],
    c: [Vec4; 3],
    w: [Vec4; 3],
}

/// [`LaneMatrices`] with what normals need: `sign(det M3) * cof(M3)`, whose columns are
/// `b x c`, `c x a` and `a x b` (`det = a . (b x c)`), entry by entry across the lanes. Computed
/// once per group for vertices wholly on one bone.
struct LaneSkin {
    m: LaneMatrices,
    bc: [Vec4; 3],
    ca: [Vec4; 3],
    ab: [Vec4; 3],
    sign: Vec4,
}

impl LaneSkin {
    #[inline(always)]
    fn new(m: LaneMatrices) -> Self {
        let ([a0, a1, a2], [b0, b1, b2], [c0, c1, c2]) = (m.a, m.b, m.c);
        let bc = [b1 * c2 - b2 * c1, b2 * c0 - b0 * c2, b0 * c1 - b1 * c0];
        let ca = [c1 * a2 - c2 * a1, c2 * a0 - c0 * a2, c0 * a1 - c1 * a0];
        let ab = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0];
        let det = a0 * bc[0] + a1 * bc[1] + a2 * bc[2];
        let sign = Vec4::select(det.cmplt(Vec4::ZERO), Vec4::NEG_ONE, Vec4::ONE);
        Self { m, bc, ca, ab, sign }
    }
}

impl LaneMatrices {
    /// One matrix in every lane.
    #[inline(always)]
    fn splat(rows: &Rows) -> Self {
        let e = |f: fn(Vec4) -> f32| rows.map(|r| Vec4::splat(f(r)));
        Self { a: e(|r| r.x), b: e(|r| r.y), c: e(|r| r.z), w: e(|r| r.w) }
    }

    /// Four matrices, one per lane.
    #[inline(always)]
    fn transposed(m: &[Rows; LANES]) -> Self {
        // Row r of the four lanes, transposed: entries (r, 0), (r, 1), (r, 2) and translation r,
        // each across the lanes.
        let row = |r: usize| Mat4::from_cols(m[0][r], m[1][r], m[2][r], m[3][r]).transpose();
        let (r0, r1, r2) = (row(0), row(1), row(2));
        Self {
            a: [r0.x_axis, r1.x_axis, r2.x_axis],
            b: [r0.y_axis, r1.y_axis, r2.y_axis],
            c: [r0.z_axis, r1.z_axis, r2.z_axis],
            w: [r0.w_axis, r1.w_axis, r2.w_axis],
        }
    }
}

/// `Σ w_i * bone(j_i)` over one vertex's non-zero `(joint, weight)` pairs, in slot order, from zero.
/// A missing bone counts as the identity.
#[inline(always)]
fn blend(rows: &[Rows], joints: &[u16], weights: &[f32]) -> Rows {
    let mut m = [Vec4::ZERO; 3];
    for (&j, &w) in joints.iter().zip(weights) {
        let b = rows.get(usize::from(j)).copied().unwrap_or(IDENTITY_ROWS);
        m[0] += b[0] * w;
        m[1] += b[1] * w;
        m[2] += b[2] * w;
    }
    m
}

/// Bind-space sources of one frame (morphed or not).
struct Sources<'a> {
    positions: &'a [Vec3],
    normals: &'a [Vec3],
    tangents: Option<&'a [Vec4]>,
}

/// The skinning kernel: morphs (into scratch copies, only when a target has a non-zero weight),
/// then skins every vertex of `plan`, group by group, four at a time, putting the results into
/// `sink`. Returns the number of vertices covered.
fn skin_into<S: FrameSink + ?Sized>(
    set: &VertexSet,
    plan: &SkinPlan,
    bones: &[Mat4],
    morph_weights: &[Vec<f32>],
    sink: &mut S,
) -> usize {
    let morphed = morph(set, morph_weights);
    let src = match &morphed {
        Some(m) => Sources { positions: &m.positions, normals: &m.normals, tangents: m.tangents.as_deref() },
        None => {
            Sources { positions: &set.positions, normals: &set.normals, tangents: set.tangents.as_deref() }
        }
    };
    let rows: Vec<Rows> = bones.iter().map(rows_of).collect();
    let bone = |b: u16| rows.get(usize::from(b)).copied().unwrap_or(IDENTITY_ROWS);
    for g in &plan.groups {
        let shared = match &g.matrix {
            GroupMatrix::Rigid(b) => Some(bone(*b)),
            GroupMatrix::Shared { joints, weights } => Some(blend(&rows, joints, weights)),
            GroupMatrix::PerVertex { .. } => None,
        };
        let shared = shared.map(|m| LaneSkin::new(LaneMatrices::splat(&m)));
        for (c, (chunk, rest)) in g.vertices.chunks(LANES).zip(&g.rest).enumerate() {
            let len = chunk.len();
            let ids = lane_ids(chunk);
            let per_vertex;
            let skin = match (&shared, &g.matrix) {
                (Some(m), _) => m,
                (None, GroupMatrix::PerVertex { k, joints, weights }) => {
                    let k = *k;
                    let lane = |l: usize| {
                        let i = (c * LANES + l.min(len - 1)) * k;
                        blend(&rows, &joints[i..i + k], &weights[i..i + k])
                    };
                    per_vertex =
                        LaneSkin::new(LaneMatrices::transposed(&[lane(0), lane(1), lane(2), lane(3)]));
                    &per_vertex
                }
                (None, _) => continue,
            };
            // The rest attributes were gathered in advance unless morphs moved them.
            let (p, nrm_in) = if morphed.is_some() {
                (gathered(src.positions, &ids), gathered(src.normals, &ids))
            } else {
                ([rest[0], rest[1], rest[2]], [rest[3], rest[4], rest[5]])
            };
            skin_lanes(skin, &ids, len, p, nrm_in, &src, sink);
        }
    }
    plan.vertex_count
}

/// Skins the vertices `ids[..len]` (see the module docs for the math) with their matrices `skin`,
/// from their bind-space positions `p` and normals `n` across the lanes. Lanes past `len` repeat
/// the last vertex, so every lane holds real data, and are not written back. Every lane does the
/// same IEEE operations as every other, so a vertex's result does not depend on its lane.
#[inline(always)]
fn skin_lanes<S: FrameSink + ?Sized>(
    skin: &LaneSkin,
    ids: &[u32; LANES],
    len: usize,
    [px, py, pz]: [Vec4; 3],
    [nx, ny, nz]: [Vec4; 3],
    src: &Sources<'_>,
    sink: &mut S,
) {
    let m = &skin.m;
    let [a0, a1, a2] = m.a;
    let [b0, b1, b2] = m.b;
    let [c0, c1, c2] = m.c;
    let [w0, w1, w2] = m.w;
    let ox = a0 * px + b0 * py + c0 * pz + w0;
    let oy = a1 * px + b1 * py + c1 * pz + w1;
    let oz = a2 * px + b2 * py + c2 * pz + w2;
    if !sink.wants_normals() {
        sink.put(ids, len, [ox, oy, oz], None, None);
        return;
    }
    let ([bc0, bc1, bc2], [ca0, ca1, ca2], [ab0, ab1, ab2], sign) = (skin.bc, skin.ca, skin.ab, skin.sign);
    let tx = sign * (bc0 * nx + ca0 * ny + ab0 * nz);
    let ty = sign * (bc1 * nx + ca1 * ny + ab1 * nz);
    let tz = sign * (bc2 * nx + ca2 * ny + ab2 * nz);
    let recip = (tx * tx + ty * ty + tz * tz).sqrt().recip();
    let (ux, uy, uz) = (tx * recip, ty * recip, tz * recip);
    let normal_ok = recip.is_finite_mask() & recip.cmpgt(Vec4::ZERO);
    // A blend of rank <= 1 has no normal direction: keep the bind-space one.
    let fallback_normal = |l: usize| unit_or(Vec3A::new(nx[l], ny[l], nz[l]), || Vec3A::Y);
    let mut normal = [ux, uy, uz];
    if !normal_ok.all() {
        for l in (0..LANES).filter(|&l| !normal_ok.test(l)) {
            let f = fallback_normal(l);
            (normal[0][l], normal[1][l], normal[2][l]) = (f.x, f.y, f.z);
        }
    }
    let tangents = match src.tangents {
        Some(src_t) if sink.wants_tangents() && ids.iter().all(|&i| (i as usize) < src_t.len()) => {
            // Tangents: t' = M3 t, made orthogonal to the skinned normal and unit (Gram-Schmidt).
            let ts = |l: usize| src_t[ids[l] as usize];
            let t = Mat4::from_cols(ts(0), ts(1), ts(2), ts(3)).transpose();
            let (tx, ty, tz, tw) = (t.x_axis, t.y_axis, t.z_axis, t.w_axis);
            let mx = a0 * tx + b0 * ty + c0 * tz;
            let my = a1 * tx + b1 * ty + c1 * tz;
            let mz = a2 * tx + b2 * ty + c2 * tz;
            let d = ux * mx + uy * my + uz * mz;
            let (ox, oy, oz) = (mx - ux * d, my - uy * d, mz - uz * d);
            let recip_t = (ox * ox + oy * oy + oz * oz).sqrt().recip();
            let mut tangent = [ox * recip_t, oy * recip_t, oz * recip_t];
            let tangent_ok = normal_ok & recip_t.is_finite_mask() & recip_t.cmpgt(Vec4::ZERO);
            // Each lane's choice depends on its own vertex only, so results stay lane-independent.
            for l in (0..LANES).filter(|&l| !tangent_ok.test(l)) {
                let n = Vec3A::new(normal[0][l], normal[1][l], normal[2][l]);
                let tm = Vec3A::new(mx[l], my[l], mz[l]);
                let f = unit_or(tm - n * n.dot(tm), || n.any_orthonormal_vector());
                (tangent[0][l], tangent[1][l], tangent[2][l]) = (f.x, f.y, f.z);
            }
            Some([tangent[0], tangent[1], tangent[2], tw])
        }
        _ => None,
    };
    sink.put(ids, len, [ox, oy, oz], Some(normal), tangents);
}

/// Four vectors as the rows of a matrix whose columns are their x, y and z across the lanes.
#[inline(always)]
fn transposed(v: [Vec3; LANES]) -> Mat4 {
    Mat4::from_cols(v[0].extend(0.0), v[1].extend(0.0), v[2].extend(0.0), v[3].extend(0.0)).transpose()
}

/// `v` scaled to unit length, or `fallback()` when `v` has no direction (zero, subnormal or not
/// finite). The fallback is evaluated only when needed.
#[inline]
fn unit_or(v: Vec3A, fallback: impl FnOnce() -> Vec3A) -> Vec3A {
    let recip = v.length_recip();
    if recip.is_finite() && recip > 0.0 { v * recip } else { fallback() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::{
        AnimationClip, Channel, ChannelTarget, KeyInterpolation, MorphTarget, Node, Skin, Transform,
    };
    use glam::Quat;

    fn node(name: &str, parent: Option<usize>, rest: Transform) -> Node {
        Node { name: name.into(), parent, rest }
    }

    fn at(translation: Vec3) -> Transform {
        Transform { translation, ..Transform::IDENTITY }
    }

    fn mesh(name: &str, binding: MeshBinding, positions: Vec<Vec3>, normals: Vec<Vec3>) -> Mesh {
        let n = positions.len();
        Mesh {
            name: name.into(),
            binding,
            role: MeshRole::Body,
            positions,
            normals,
            tangents: None,
            uvs: None,
            colors: None,
            material_ids: vec![0; n],
            indices: vec![],
            influence_count: if matches!(binding, MeshBinding::Skinned { .. }) { 8 } else { 0 },
            joints: vec![[0; 8]; n],
            weights: vec![[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]; n],
            full_influences: None,
            morph_targets: vec![],
            default_morph_weights: vec![],
        }
    }

    /// Two root joints with identity inverse binds, so a pose's locals are the bone matrices.
    fn two_bone_rig(skinned: Mesh) -> Rig {
        Rig {
            name: "two bones".into(),
            nodes: vec![node("a", None, Transform::IDENTITY), node("b", None, Transform::IDENTITY)],
            skins: vec![Skin { joints: vec![0, 1], inverse_bind: vec![Mat4::IDENTITY; 2] }],
            meshes: vec![skinned],
            ..Rig::default()
        }
    }

    /// Bone 0 translates by +X, bone 1 turns 90 deg about +Z (x -> y).
    fn translate_and_turn_pose(rig: &Rig) -> Pose {
        let mut pose = rest_pose(rig);
        pose.locals[0] = at(Vec3::X);
        pose.locals[1] =
            Transform { rotation: Quat::from_rotation_z(std::f32::consts::FRAC_PI_2), ..Transform::IDENTITY };
        pose
    }

    /// Bound for a blend of two bones with entries <= 1 from renormalised f32 weights over up to 8
    /// slots: weight rounding and renormalisation (<= 9 roundings), matrix accumulation (<= 8 per
    /// entry) and the transform (3) stay under 24 roundings of 2^-24 relative to values <= 2:
    /// 24 * 2 * 2^-24 < 3e-6.
    const BLEND_BOUND: f32 = 24.0 * 2.0 * f32::EPSILON / 2.0;

    fn assert_vec_near(got: Vec3, want: Vec3, bound: f32, what: &str) {
        assert!((got - want).abs().max_element() <= bound, "{what}: {got} vs {want} (bound {bound})");
    }

    #[test]
    fn eight_influences_blend_two_bones_by_their_summed_weights() {
        let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
        m.tangents = Some(vec![Vec4::new(0.0, 0.0, 1.0, -1.0)]);
        m.joints = vec![[0, 1, 0, 1, 0, 1, 0, 1]];
        m.weights = vec![[0.1, 0.2, 0.05, 0.15, 0.1, 0.1, 0.2, 0.1]];
        let rig = two_bone_rig(m);
        let set = VertexSet::from_rig(&rig).unwrap();
        assert_eq!(set.influence_count, 8);
        let frame = skin_pose(&rig, &set, &translate_and_turn_pose(&rig));
        // Bone 0 gets 0.1 + 0.05 + 0.1 + 0.2 = 0.45, bone 1 0.55: M = 0.45 T + 0.55 R.
        // p = (1, 0, 0): 0.45 * (2, 0, 0) + 0.55 * (0, 1, 0).
        assert_vec_near(frame.positions[0], Vec3::new(0.9, 0.55, 0.0), BLEND_BOUND, "position");
        // M3 = [[0.45, -0.55], [0.55, 0.45]] (+ z = 1) is a scaled rotation: n = x turns to
        // (0.45, 0.55) / |.|, and a z tangent stays z, sign kept.
        let n = Vec3::new(0.45, 0.55, 0.0).normalize();
        assert_vec_near(frame.normals[0], n, BLEND_BOUND, "normal");
        assert_eq!(frame.tangents.unwrap()[0], Vec4::new(0.0, 0.0, 1.0, -1.0));
    }

    #[test]
    fn four_influences() {
        let mut m =
            mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X, Vec3::ZERO], vec![Vec3::Z; 2]);
        m.influence_count = 4;
        m.joints = vec![[0, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]];
        // Slots past influence_count are ignored, whatever they hold.
        m.weights =
            vec![[0.25, 0.75, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
        let rig = two_bone_rig(m);
        let set = VertexSet::from_rig(&rig).unwrap();
        assert_eq!(set.influence_count, 4);
        assert_eq!(set.weights[0], [0.25, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let frame = skin_pose(&rig, &set, &translate_and_turn_pose(&rig));
        // 0.25 * (2, 0, 0) + 0.75 * (0, 1, 0); the second vertex sits at the turn's centre.
        assert_vec_near(frame.positions[0], Vec3::new(0.5, 0.75, 0.0), BLEND_BOUND, "blend");
        assert_eq!(frame.positions[1], Vec3::ZERO);
        assert_vec_near(frame.normals[0], Vec3::Z, BLEND_BOUND, "normal");
    }

    /// Root, a joint one metre up, and a non-joint node carried by the joint.
    fn prop_rig() -> Rig {
        let body = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::Y], vec![Vec3::X]);
        let on_joint =
            mesh("hat", MeshBinding::Rigid { node: 1 }, vec![Vec3::new(0.0, 0.5, 0.0)], vec![Vec3::Y]);
        let on_node =
            mesh("sword", MeshBinding::Rigid { node: 2 }, vec![Vec3::new(0.0, 0.0, 0.5)], vec![Vec3::Z]);
        Rig {
            name: "prop".into(),
            nodes: vec![
                node("root", None, Transform::IDENTITY),
                node("joint", Some(0), at(Vec3::Y)),
                node("holder", Some(1), at(Vec3::X)),
            ],
            skins: vec![Skin { joints: vec![1], inverse_bind: vec![Mat4::from_translation(-Vec3::Y)] }],
            meshes: vec![body, on_joint, on_node],
            ..Rig::default()
        }
    }

    #[test]
    fn rigid_meshes_follow_their_carrier_node() {
        let rig = prop_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        // The hat reuses joint 1's bone; the sword's node gets an extra bone.
        assert_eq!(set.bones.len(), 2);
        assert_eq!(set.bones[1].node, 2);
        assert_eq!(set.joints[1][0], 0);
        assert_eq!(set.joints[2][0], 1);
        // Bind space: hat at joint (0, 1, 0) + (0, 0.5, 0); sword at (1, 1, 0) + (0, 0, 0.5).
        assert_eq!(set.positions[1], Vec3::new(0.0, 1.5, 0.0));
        assert_eq!(set.positions[2], Vec3::new(1.0, 1.0, 0.5));
        // Turn the joint 90 deg about Z and lift the root by 2: local x -> y, y -> -x.
        let mut pose = rest_pose(&rig);
        pose.locals[0] = at(Vec3::new(0.0, 2.0, 0.0));
        pose.locals[1].rotation = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
        let frame = skin_pose(&rig, &set, &pose);
        // Rotation of sin/cos(pi/2) in f32 and two matrix products: a few roundings of values <= 3.
        let bound = 8.0 * 3.0 * f32::EPSILON;
        assert_vec_near(frame.positions[1], Vec3::new(-0.5, 3.0, 0.0), bound, "hat");
        assert_vec_near(frame.normals[1], -Vec3::X, bound, "hat normal");
        // Sword: holder at joint + (0, 1, 0) after the turn, then its offset (0, 0, 0.5).
        assert_vec_near(frame.positions[2], Vec3::new(0.0, 4.0, 0.5), bound, "sword");
        assert_vec_near(frame.normals[2], Vec3::Z, bound, "sword normal");
        // The skinned body vertex at the joint stays there.
        assert_vec_near(frame.positions[0], Vec3::new(0.0, 3.0, 0.0), bound, "body");
    }

    #[test]
    fn weights_are_renormalised() {
        let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
        m.joints = vec![[0, 1, 0, 0, 0, 0, 0, 0]];
        m.weights = vec![[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
        let set = VertexSet::from_rig(&two_bone_rig(m)).unwrap();
        assert_eq!(set.weights[0], [0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    fn expect_invalid(rig: &Rig, needles: &[&str]) {
        match VertexSet::from_rig(rig) {
            Err(e @ BakeError::InvalidInput { .. }) => {
                let msg = e.to_string();
                for n in needles {
                    assert!(msg.contains(n), "{msg:?} lacks {n:?}");
                }
            }
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn bad_skinning_data_are_typed_errors_naming_mesh_and_vertex() {
        let base =
            || mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X, Vec3::Y], vec![Vec3::X; 2]);
        let mut m = base();
        m.weights[1] = [0.0; 8];
        expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "sum to 0"]);
        let mut m = base();
        m.joints[1][0] = 2;
        expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "joint index 2", "2 joints"]);
        let mut m = base();
        m.weights[0][3] = -0.5;
        expect_invalid(&two_bone_rig(m), &["vertex 0", "weight 3"]);
        let mut m = base();
        m.weights[0][0] = f32::INFINITY;
        expect_invalid(&two_bone_rig(m), &["vertex 0", "finite"]);
        let mut m = base();
        m.positions[1].y = f32::NAN;
        expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "position"]);
        let mut m = base();
        m.indices = vec![0, 1, 2];
        expect_invalid(&two_bone_rig(m), &["\"body\"", "index 2"]);
        let mut m = base();
        m.normals.pop();
        expect_invalid(&two_bone_rig(m), &["\"body\"", "1 normals"]);
        // A body mesh on a skin that does not exist.
        let mut rig = two_bone_rig(base());
        let mut other = base();
        other.name = "cape".into();
        other.binding = MeshBinding::Skinned { skin: 1 };
        rig.meshes.push(other);
        expect_invalid(&rig, &["\"cape\"", "skin 1"]);
        // No body mesh at all.
        let mut rig = two_bone_rig(base());
        rig.meshes[0].role = MeshRole::Attachment { socket: 0 };
        expect_invalid(&rig, &["no body mesh"]);
    }

    #[test]
    fn zero_weight_slots_with_out_of_range_joints_are_cleared() {
        let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
        m.joints = vec![[1, 900, 0, 0, 0, 0, 0, 0]];
        let set = VertexSet::from_rig(&two_bone_rig(m)).unwrap();
        assert_eq!(set.joints[0], [1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn morph_targets_on_a_skinned_mesh_apply_before_skinning() {
        let mut m =
            mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::ZERO, Vec3::X], vec![Vec3::Z; 2]);
        m.morph_targets = vec![MorphTarget {
            name: None,
            positions: vec![Vec3::new(0.0, 2.0, 0.0), Vec3::ZERO],
            normals: Some(vec![Vec3::new(1.0, 0.0, -1.0), Vec3::ZERO]),
            tangents: None,
        }];
        m.default_morph_weights = vec![0.5];
        let rig = two_bone_rig(m);
        let set = VertexSet::from_rig(&rig).unwrap();
        // Only the vertex with a delta is stored.
        assert_eq!(set.morph_targets[0].vertices, vec![0]);
        let mut pose = translate_and_turn_pose(&rig);
        let frame = skin_pose(&rig, &set, &pose);
        // (0, 0, 0) + 0.5 * (0, 2, 0) = (0, 1, 0), then bone 0 moves it +X. Exact binary fractions.
        assert_eq!(frame.positions[0], Vec3::new(1.0, 1.0, 0.0));
        assert_eq!(frame.positions[1], Vec3::new(2.0, 0.0, 0.0));
        // n = (0, 0, 1) + 0.5 * (1, 0, -1) = (0.5, 0, 0.5) -> (1, 0, 1) / sqrt 2.
        assert_vec_near(frame.normals[0], Vec3::new(1.0, 0.0, 1.0).normalize(), f32::EPSILON, "normal");
        pose.morph_weights[0][0] = 1.0;
        let frame = skin_pose(&rig, &set, &pose);
        assert_eq!(frame.positions[0], Vec3::new(1.0, 2.0, 0.0));
        assert_eq!(frame.normals[0], Vec3::X);
    }

    #[test]
    fn morph_targets_on_a_rigid_mesh_apply_in_mesh_space() {
        // The carrier scales x by 2 and sits at z = 2: positions and normal deltas must be moved to
        // bind space consistently with the base vertex.
        let rest = Transform {
            translation: Vec3::new(0.0, 0.0, 2.0),
            rotation: Quat::IDENTITY,
            scale: Vec3::new(2.0, 1.0, 1.0),
        };
        let mut m = mesh("face", MeshBinding::Rigid { node: 0 }, vec![Vec3::X], vec![Vec3::X]);
        m.tangents = Some(vec![Vec4::new(0.0, 1.0, 0.0, 1.0)]);
        m.morph_targets = vec![MorphTarget {
            name: None,
            positions: vec![Vec3::new(0.0, 2.0, 0.0)],
            normals: Some(vec![Vec3::new(-1.0, 1.0, 0.0)]),
            tangents: Some(vec![Vec3::new(1.0, 0.0, 0.0)]),
        }];
        let rig = Rig {
            name: "rigid morph".into(),
            nodes: vec![node("head", None, rest)],
            meshes: vec![m],
            ..Rig::default()
        };
        let set = VertexSet::from_rig(&rig).unwrap();
        assert_eq!(set.positions[0], Vec3::new(2.0, 0.0, 2.0));
        let mut pose = rest_pose(&rig);
        pose.morph_weights[0] = vec![0.5];
        pose.locals[0].translation.y = 1.0;
        let frame = skin_pose(&rig, &set, &pose);
        // Mesh space: p = (1, 0, 0) + 0.5 (0, 2, 0) = (1, 1, 0) -> scale (2, 1, 0) -> + (0, 1, 2).
        assert_eq!(frame.positions[0], Vec3::new(2.0, 2.0, 2.0));
        // n = (1, 0, 0) + 0.5 (-1, 1, 0) = (0.5, 0.5, 0); inverse transpose diag(0.5, 1, 1) ->
        // (0.25, 0.5, 0) -> (1, 2, 0) / sqrt 5. Exact binary inputs; normalisation rounds.
        assert_vec_near(frame.normals[0], Vec3::new(1.0, 2.0, 0.0).normalize(), 2.0 * f32::EPSILON, "normal");
        // t = (0, 1, 0) + 0.5 (1, 0, 0) = (0.5, 1, 0) -> scale -> (1, 1, 0), then made orthogonal to
        // n: (1, 1, 0) - n (n . (1, 1, 0)) = (1, 1, 0) - (1, 2, 0) 3/5 = (0.4, -0.2, 0) -> (2, -1, 0) / sqrt 5.
        let t = frame.tangents.unwrap()[0];
        assert_vec_near(t.truncate(), Vec3::new(2.0, -1.0, 0.0).normalize(), 4.0 * f32::EPSILON, "tangent");
        assert_eq!(t.w, 1.0);
    }

    /// A rig with two chained joints, non-uniform scale, a morph target, 8 influences and a
    /// two-clip animation, for the determinism, tangent and remap tests.
    fn animated_rig() -> Rig {
        let count = 64;
        let positions: Vec<Vec3> = (0..count)
            .map(|i| Vec3::new((i % 4) as f32 * 0.1, (i / 4) as f32 * 0.13, ((i * 7) % 5) as f32 * 0.05))
            .collect();
        let normals: Vec<Vec3> = (0..count)
            .map(|i| Vec3::new(1.0, (i % 3) as f32 - 1.0, 0.5 * (i % 2) as f32).normalize())
            .collect();
        let tangents: Vec<Vec4> = normals.iter().map(|n| n.any_orthonormal_vector().extend(1.0)).collect();
        let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, positions, normals);
        m.tangents = Some(tangents);
        m.indices = (0..count as u32 - 2).flat_map(|i| [i, i + 1, i + 2]).collect();
        m.joints = (0..count).map(|i| [0, 1, 2, 0, 1, 2, 0, (i % 3) as u16]).collect();
        m.weights =
            (0..count).map(|i| [0.3, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.01 * (i % 7) as f32]).collect();
        m.morph_targets = vec![MorphTarget {
            name: None,
            positions: (0..count).map(|i| Vec3::new(0.0, 0.01 * (i % 5) as f32, 0.0)).collect(),
            normals: Some(vec![Vec3::new(0.1, 0.0, 0.0); count]),
            tangents: Some(vec![Vec3::new(0.0, 0.0, 0.1); count]),
        }];
        m.default_morph_weights = vec![0.2];
        let prop =
            mesh("prop", MeshBinding::Rigid { node: 2 }, vec![Vec3::Z, Vec3::X], vec![Vec3::Y, Vec3::Z]);
        let lin = |target, times: &[f32], values: &[f32]| Channel {
            target,
            interpolation: KeyInterpolation::Linear,
            times: times.to_vec(),
            values: values.to_vec(),
        };
        let turn = |deg: f32| Quat::from_rotation_x(deg.to_radians()).to_array();
        let clip = |name: &str, scale: f32| AnimationClip {
            name: name.into(),
            channels: vec![
                lin(ChannelTarget::Rotation(1), &[0.0, 1.0], &[turn(0.0), turn(170.0 * scale)].concat()),
                lin(ChannelTarget::Scale(2), &[0.0, 1.0], &[1.0, 1.0, 1.0, 1.5, 0.5 * scale, 1.0]),
                lin(ChannelTarget::Translation(0), &[0.0, 1.0], &[0.0, 0.0, 0.0, 0.3, 0.1, scale]),
                lin(ChannelTarget::MorphWeights(0), &[0.0, 1.0], &[0.0, scale]),
            ],
            start: 0.0,
            end: 1.0,
            looping: Some(true),
            known_stride: None,
            locomotion: false,
        };
        Rig {
            name: "animated".into(),
            nodes: vec![
                node("hips", None, at(Vec3::new(0.0, 1.0, 0.0))),
                node("spine", Some(0), at(Vec3::new(0.0, 0.2, 0.0))),
                node(
                    "chest",
                    Some(1),
                    Transform { scale: Vec3::new(1.2, 0.9, 1.0), ..at(Vec3::new(0.0, 0.3, 0.0)) },
                ),
            ],
            skins: vec![Skin {
                joints: vec![0, 1, 2],
                inverse_bind: vec![
                    Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0)),
                    Mat4::from_translation(Vec3::new(0.0, -1.2, 0.0)),
                    Mat4::from_scale(Vec3::new(1.0 / 1.2, 1.0 / 0.9, 1.0))
                        * Mat4::from_translation(Vec3::new(0.0, -1.5, 0.0)),
                ],
            }],
            meshes: vec![m, prop],
            clips: vec![clip("bend", 1.0), clip("wave", -0.7)],
            ..Rig::default()
        }
    }

    fn samples() -> Vec<(usize, f32)> {
        (0..2).flat_map(|c| (0..24).map(move |k| (c, k as f32 / 23.0))).collect()
    }

    fn frame_bits(frames: &[SkinnedFrame]) -> Vec<u32> {
        let mut out = Vec::new();
        for f in frames {
            out.extend(f.positions.iter().chain(&f.normals).flat_map(|v| v.to_array().map(f32::to_bits)));
            out.extend(f.tangents.iter().flatten().flat_map(|v| v.to_array().map(f32::to_bits)));
        }
        out
    }

    #[test]
    fn frames_are_bit_identical_on_one_thread_and_four() {
        let rig = animated_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| skin_clip_frames(&rig, &set, &samples(), true).unwrap())
        };
        let one = run(1);
        let four = run(4);
        assert_eq!(one.len(), 48);
        assert!(one[5].tangents.is_some());
        assert_eq!(frame_bits(&one), frame_bits(&four));
        // And the frames differ from each other, so the comparison sees the animation.
        assert_ne!(one[0].positions, one[5].positions);
    }

    #[test]
    fn flat_output_matches_per_frame_output_bitwise() {
        let rig = animated_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        let samples = samples();
        let frames = skin_clip_frames(&rig, &set, &samples, true).unwrap();
        let len = samples.len() * set.vertex_count();
        let (mut p, mut n, mut t) = (vec![[0.0f32; 3]; len], vec![[0.0f32; 3]; len], vec![[0.0f32; 4]; len]);
        skin_frames_into(&rig, &set, &samples, &mut p, &mut n, Some(&mut t)).unwrap();
        let flat: Vec<SkinnedFrame> = (0..samples.len())
            .map(|f| {
                let r = f * set.vertex_count()..(f + 1) * set.vertex_count();
                SkinnedFrame {
                    positions: p[r.clone()].iter().map(|&v| Vec3::from(v)).collect(),
                    normals: n[r.clone()].iter().map(|&v| Vec3::from(v)).collect(),
                    tangents: Some(t[r].iter().map(|&v| Vec4::from(v)).collect()),
                }
            })
            .collect();
        assert_eq!(frame_bits(&frames), frame_bits(&flat));
        // Wrong lengths and bad clips are typed errors.
        assert!(skin_frames_into(&rig, &set, &samples, &mut p[1..], &mut n, None).is_err());
        assert!(
            skin_frames_into(&rig, &set, &[(9, 0.0)], &mut p[..len / 48], &mut n[..len / 48], None).is_err()
        );
    }

    #[test]
    fn skinned_bounds_equal_the_extremes_of_the_skinned_frames() {
        let rig = animated_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        let (lo, hi) = skinned_bounds(&rig, &set, &samples()).unwrap();
        let mut want = (Vec3::INFINITY, Vec3::NEG_INFINITY);
        for f in skin_clip_frames(&rig, &set, &samples(), false).unwrap() {
            for p in f.positions {
                want = (want.0.min(p), want.1.max(p));
            }
        }
        assert_eq!(
            (lo.to_array().map(f32::to_bits), hi.to_array().map(f32::to_bits)),
            (want.0.to_array().map(f32::to_bits), want.1.to_array().map(f32::to_bits))
        );
        assert!(skinned_bounds(&rig, &set, &[]).is_err());
        assert!(skinned_bounds(&rig, &set, &[(2, 0.0)]).is_err());
    }

    /// `plan` with every shared matrix blended per vertex instead (the same weights, in order).
    fn unshared(plan: &SkinPlan) -> SkinPlan {
        let groups = plan
            .groups
            .iter()
            .map(|g| match &g.matrix {
                GroupMatrix::Shared { joints, weights } => SkinGroup {
                    matrix: GroupMatrix::PerVertex {
                        k: joints.len(),
                        joints: joints.repeat(g.vertices.len()),
                        weights: weights.repeat(g.vertices.len()),
                    },
                    ..g.clone()
                },
                _ => g.clone(),
            })
            .collect();
        SkinPlan { groups, vertex_count: plan.vertex_count }
    }

    #[test]
    fn shared_matrices_skin_every_vertex_as_its_own_blend_does() {
        for rig in [animated_rig(), crate::procgen::humanoid()] {
            let set = VertexSet::from_rig(&rig).unwrap();
            let plan = SkinPlan::new(&set);
            let shared =
                plan.groups.iter().filter(|g| matches!(g.matrix, GroupMatrix::Shared { .. })).count();
            assert!(shared > 0, "the test needs vertices sharing a blend");
            // Every vertex is in exactly one group.
            let mut seen: Vec<u32> = plan.groups.iter().flat_map(|g| g.vertices.iter().copied()).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..set.vertex_count() as u32).collect::<Vec<_>>());
            let per_vertex = unshared(&plan);
            let clips = rig.clips.len();
            for (clip, time) in [(0, 0.1), (clips - 1, 0.3)] {
                let pose = FramePose::sample(&rig, &set, clip, rig.clips[clip].start + time);
                let with_tangents = set.tangents.is_some();
                let a = skin_frame(&set, &plan, &pose.bones, &pose.morph_weights, with_tangents);
                let b = skin_frame(&set, &per_vertex, &pose.bones, &pose.morph_weights, with_tangents);
                assert_eq!(frame_bits(&[a]), frame_bits(&[b]), "{} clip {clip}", rig.name);
            }
        }
    }

    #[test]
    fn tangents_are_unit_and_orthogonal_to_normals() {
        let rig = animated_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        // After Gram-Schmidt in f32 the residual dot product and the length error are a few
        // roundings (2^-24 each) of unit quantities: the subtraction, the dot and the normalisation.
        let bound = 8.0 * f32::EPSILON;
        for frame in skin_clip_frames(&rig, &set, &samples(), true).unwrap() {
            for (n, t) in frame.normals.iter().zip(frame.tangents.unwrap()) {
                assert!(n.dot(t.truncate()).abs() <= bound, "{n} . {t}");
                assert!((t.truncate().length() - 1.0).abs() <= bound && (n.length() - 1.0).abs() <= bound);
                assert_eq!(t.w, 1.0);
            }
        }
    }

    #[test]
    fn remap_permutes_every_result_bit_for_bit() {
        let rig = animated_rig();
        let set = VertexSet::from_rig(&rig).unwrap();
        let n = set.vertex_count();
        // A scramble: 37 is coprime with 66 vertices.
        assert_eq!(n, 66);
        let order: Vec<u32> = (0..n).map(|i| ((i * 37 + 5) % n) as u32).collect();
        let mut remapped = set.clone();
        remapped.remap(&order).unwrap();
        let before = skin_clip_frames(&rig, &set, &samples(), true).unwrap();
        let after = skin_clip_frames(&rig, &remapped, &samples(), true).unwrap();
        for (b, a) in before.iter().zip(&after) {
            let permuted = SkinnedFrame {
                positions: order.iter().map(|&o| b.positions[o as usize]).collect(),
                normals: order.iter().map(|&o| b.normals[o as usize]).collect(),
                tangents: b.tangents.as_ref().map(|t| order.iter().map(|&o| t[o as usize]).collect()),
            };
            assert_eq!(frame_bits(&[permuted]), frame_bits(std::slice::from_ref(a)));
        }
        // Triangles still join the same source vertices.
        for (old, new) in set.indices.iter().zip(&remapped.indices) {
            assert_eq!(set.sources[*old as usize], remapped.sources[*new as usize]);
        }
        assert_eq!(remapped.mesh_vertices(1).count(), 2);
        assert!(remapped.clone().remap(&order[1..]).is_err());
        let mut twice = order.clone();
        twice[1] = twice[0];
        assert!(remapped.remap(&twice).is_err());
    }
}
