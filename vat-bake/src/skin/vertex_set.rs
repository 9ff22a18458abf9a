//! Building the baked vertex set from a rig's meshes, and its helpers.

use super::*;

pub(super) fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

pub(super) fn finite3(v: Vec3) -> bool {
    v.is_finite()
}

/// Bind-space transform of a rigid carrier: `bind` takes mesh-local space to bind space.
#[derive(Clone, Copy)]
pub(super) struct Carrier {
    pub(super) bone: u16,
    pub(super) bind: Mat4,
}

/// `sign(det) * cof(m3)`: the inverse transpose of `m`'s linear part up to a positive factor.
pub(super) fn normal_matrix_columns(m: &Mat4) -> [Vec3A; 3] {
    let a = Vec3A::from_vec4(m.x_axis);
    let b = Vec3A::from_vec4(m.y_axis);
    let c = Vec3A::from_vec4(m.z_axis);
    let bc = b.cross(c);
    let ca = c.cross(a);
    let ab = a.cross(b);
    if a.dot(bc) < 0.0 { [-bc, -ca, -ab] } else { [bc, ca, ab] }
}

#[inline]
pub(super) fn apply_columns(cols: &[Vec3A; 3], n: Vec3A) -> Vec3A {
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
        let (mut bones, joint_maps) = merge_skins(rig, &body)?;
        let (carriers, carrier_of) = rigid_carriers(rig, &body, &mut bones)?;
        if bones.len() > usize::from(u16::MAX) + 1 {
            return Err(invalid(rig_part(), format!("needs {} bones; at most 65,536 fit", bones.len())));
        }
        let mut set = VertexSet::for_body(rig, &body, bones)?;
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

    /// An empty set with room for the `body` meshes' vertices, with the attributes any of them has
    /// and the `bones`; an error when they have no vertices or more than `u32::MAX`.
    fn for_body(rig: &Rig, body: &[(usize, &Mesh)], bones: Vec<Bone>) -> Result<VertexSet> {
        let rig_part = || format!("rig \"{}\"", rig.name);
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
        Ok(VertexSet {
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
        })
    }

    /// Appends mesh `mi`'s vertices; returns the per-vertex lengths `(|normal|, |tangent|)` that the
    /// bind transform scaled by (1 for skinned meshes), which its morph deltas must share.
    pub(super) fn push_mesh(
        &mut self,
        mi: usize,
        m: &Mesh,
        carrier: Option<Carrier>,
        joint_map: &[u16],
    ) -> Result<Vec<(f32, f32)>> {
        let part = || format!("mesh {mi} \"{}\"", m.name);
        let n = m.vertex_count();
        let influences = check_mesh_lengths(mi, m)?;
        let mut scales = Vec::with_capacity(n);
        let normal_cols = carrier.map(|c| normal_matrix_columns(&c.bind));
        for v in 0..n {
            let vpart = || format!("{} vertex {v}", part());
            let (p, nrm, tangent, uv) = checked_vertex(m, v, vpart)?;
            let mut joints = [0u16; MAX_INFLUENCES];
            let mut weights = [0.0f32; MAX_INFLUENCES];
            let (pb, nb, tb, scale) = match (carrier, normal_cols) {
                (Some(c), Some(cols)) => {
                    joints[0] = c.bone;
                    weights[0] = 1.0;
                    to_bind_space(c, &cols, p, nrm, tangent)
                        .ok_or_else(|| invalid(vpart(), "is not finite once moved to bind space"))?
                }
                _ => {
                    skin_weights(m, v, influences, joint_map, vpart, &mut joints, &mut weights)?;
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
                let mapped = full_influences(list, joint_map, vpart)?;
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
    pub(super) fn push_morphs(
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

    pub(super) fn push_indices(&mut self, mi: usize, m: &Mesh, base: usize) -> Result<()> {
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

/// By skin: each joint's bone, for the skins the body uses.
type JointMaps = Vec<Option<Vec<u16>>>;

/// The skins of the skinned `body` meshes, merged into one list of bones: a joint is one bone per
/// distinct (node, inverse bind) pair, so skins listing the same joints with the same bind share
/// bones, and `joint_maps[skin][j]` is the bone of skin joint `j`.
fn merge_skins(rig: &Rig, body: &[(usize, &Mesh)]) -> Result<(Vec<Bone>, JointMaps)> {
    let rig_part = || format!("rig \"{}\"", rig.name);
    let mut bones: Vec<Bone> = Vec::new();
    // (node, inverse bind bits) -> bone, so merging stays linear in the joints of all skins.
    let mut bone_of: HashMap<(usize, [u32; 16]), usize> = HashMap::new();
    let mut joint_maps: Vec<Option<Vec<u16>>> = vec![None; rig.skins.len()];
    for &(mi, m) in body {
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
                format!("has {} joints but {} inverse bind matrices", sk.joints.len(), sk.inverse_bind.len()),
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
            let bone = *bone_of.entry((node, ibm.to_cols_array().map(f32::to_bits))).or_insert_with(|| {
                bones.push(Bone { node, inverse_bind: *ibm });
                bones.len() - 1
            });
            let bone = u16::try_from(bone)
                .map_err(|_| invalid(rig_part(), format!("needs {} bones; at most 65,536 fit", bone + 1)))?;
            map.push(bone);
        }
        joint_maps[s] = Some(map);
    }
    Ok((bones, joint_maps))
}

/// One bone per rigid carrier node of the `body` meshes (reusing the joint's bone when the node is
/// a joint, else appended to `bones`): the carriers and each carrier node's index among them.
fn rigid_carriers(
    rig: &Rig,
    body: &[(usize, &Mesh)],
    bones: &mut Vec<Bone>,
) -> Result<(Vec<Carrier>, HashMap<usize, usize>)> {
    let rig_part = || format!("rig \"{}\"", rig.name);
    let rest_globals = rig.rest_globals();
    let mut carriers: Vec<Carrier> = Vec::new();
    let mut carrier_of: HashMap<usize, usize> = HashMap::new();
    // Each node's first joint bone (lowest bone index), for carriers that are joints.
    let mut first_joint_bone: HashMap<usize, usize> = HashMap::new();
    for (b, bone) in bones.iter().enumerate().rev() {
        first_joint_bone.insert(bone.node, b);
    }
    for &(mi, m) in body {
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
    Ok((carriers, carrier_of))
}

/// Checks that mesh `mi`'s per-vertex arrays have one entry per position; returns the influences
/// per vertex its skinning reads (0 for a rigid mesh).
fn check_mesh_lengths(mi: usize, m: &Mesh) -> Result<usize> {
    let part = || format!("mesh {mi} \"{}\"", m.name);
    let n = m.vertex_count();
    let check_len = |what: &str, len: usize| {
        if len == n { Ok(()) } else { Err(invalid(part(), format!("has {n} positions but {len} {what}"))) }
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
    Ok(match m.binding {
        MeshBinding::Skinned { .. } => {
            check_len("joint sets", m.joints.len())?;
            check_len("weight sets", m.weights.len())?;
            if m.influence_count == 0 {
                return Err(invalid(part(), "is skinned but uses 0 influences per vertex"));
            }
            m.influence_count.min(MAX_INFLUENCES)
        }
        MeshBinding::Rigid { .. } => 0,
    })
}

/// Vertex `v` of `m`: its position, normal, tangent and uv (0, 0 without uvs), each checked finite.
fn checked_vertex(
    m: &Mesh,
    v: usize,
    vpart: impl Fn() -> String,
) -> Result<(Vec3, Vec3, Option<Vec4>, Vec2)> {
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
    Ok((p, nrm, tangent, uv))
}

/// A rigid mesh's vertex moved to bind space by its carrier `c` (`cols`: its normal matrix): the
/// position, unit normal and tangent, and the lengths `(|normal|, |tangent|)` the transform scaled
/// them by; `None` when a result is not finite.
fn to_bind_space(
    c: Carrier,
    cols: &[Vec3A; 3],
    p: Vec3,
    nrm: Vec3,
    tangent: Option<Vec4>,
) -> Option<(Vec3, Vec3, Vec4, (f32, f32))> {
    let pb = c.bind.transform_point3(p);
    let nb = Vec3::from(apply_columns(cols, Vec3A::from(nrm)));
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
        return None;
    }
    Some((pb, nb, tb, (if kn > 0.0 { kn } else { 1.0 }, if kt > 0.0 { kt } else { 1.0 })))
}

/// A skinned vertex's first `influences` weights, checked and normalised, into `joints` (bones,
/// through `joint_map`) and `weights`.
fn skin_weights(
    m: &Mesh,
    v: usize,
    influences: usize,
    joint_map: &[u16],
    vpart: impl Fn() -> String,
    joints: &mut [u16; MAX_INFLUENCES],
    weights: &mut [f32; MAX_INFLUENCES],
) -> Result<()> {
    let joint_count = joint_map.len();
    let mut sum = 0.0f32;
    for s in 0..influences {
        let w = m.weights[v][s];
        if !w.is_finite() || w < 0.0 {
            return Err(invalid(vpart(), format!("weight {s} is {w}; weights must be finite and >= 0")));
        }
        if w > 0.0 {
            let j = m.joints[v][s];
            if usize::from(j) >= joint_count {
                return Err(invalid(
                    vpart(),
                    format!("joint index {j} (slot {s}) is out of range; the skin has {joint_count} joints"),
                ));
            }
            joints[s] = joint_map[usize::from(j)];
            weights[s] = w;
            sum += w;
        }
    }
    if !(sum > 0.0 && sum.is_finite()) {
        return Err(invalid(vpart(), format!("weights sum to {sum}; they must sum to more than 0")));
    }
    for w in &mut weights[..influences] {
        *w /= sum;
    }
    Ok(())
}

/// A vertex's full influence list `list` (joint, weight) as bones, checked.
fn full_influences(
    list: &[(u16, f32)],
    joint_map: &[u16],
    vpart: impl Fn() -> String,
) -> Result<Vec<(u16, f32)>> {
    let joint_count = joint_map.len();
    let mut mapped = Vec::with_capacity(list.len());
    for &(j, w) in list {
        let bone = joint_map.get(usize::from(j)).copied().ok_or_else(|| {
            invalid(
                vpart(),
                format!("influence on joint {j} is out of range; the skin has {joint_count} joints"),
            )
        })?;
        if !(w.is_finite() && w >= 0.0) {
            return Err(invalid(vpart(), format!("influence weight {w} is not finite and >= 0")));
        }
        mapped.push((bone, w));
    }
    Ok(mapped)
}
