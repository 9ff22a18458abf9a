//! One glTF primitive -> one rig [`Mesh`].

use std::borrow::Cow;

use glam::{Mat3, Mat4, Vec2, Vec3, Vec4};
use gltf::Semantic;
use gltf::mesh::Mode;
use serde_json::Value;

use super::accessors::{
    self, COLORS, DELTAS, INDICES, Integers, JOINTS, MATERIAL_IDS, POSITIONS, TEXCOORDS, UNIT_VEC3,
    UNIT_VEC4, WEIGHTS,
};
use super::{Ctx, extras_object, unit_or_keep};
use crate::Result;
use crate::rig::{MAX_INFLUENCES, Mesh, MeshBinding, MeshRole, MorphTarget};

/// Where a primitive sits.
pub(super) struct Primitive<'p, 'a> {
    /// The node instancing the mesh.
    pub(super) node: &'p gltf::Node<'a>,
    /// The mesh.
    pub(super) mesh: &'p gltf::Mesh<'a>,
    /// The primitive whose attributes are read.
    pub(super) primitive: &'p gltf::Primitive<'a>,
    /// The other primitives of the mesh with exactly the same attribute and morph target accessors:
    /// their vertices are `primitive`'s, read once, and each keeps its own triangles and material.
    pub(super) others: &'p [gltf::Primitive<'a>],
    /// `mesh "Body"`, for messages.
    pub(super) label: &'p str,
    /// `mesh "Body" primitive 0`, for messages.
    pub(super) part: &'p str,
    /// The skin's joint count when the primitive is skinned.
    pub(super) joint_count: Option<usize>,
}

/// Reads a triangle primitive into a rig mesh (see the module docs for the rules).
pub(super) fn read(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    src: &Primitive<'_, '_>,
    name: String,
    binding: MeshBinding,
    role: MeshRole,
    notes: &mut Vec<String>,
) -> Result<Mesh> {
    let prim = src.primitive;
    let part = src.part;
    check_mode(ctx, prim, part)?;
    let get = accessors::source(buffers);
    let reader = prim.reader(get.clone());
    let attributes = Attributes::positions(ctx, buffers, prim, part)?;
    let n = attributes.n;
    let normals = attributes.normals()?;
    let tangents = attributes.tangents(notes)?;
    let uvs = attributes.uvs()?;
    let colors = attributes.colors(&reader, notes)?;
    let positions = attributes.positions;

    // Every member's triangles, with the material its vertices are drawn with.
    let authored_ids = authored_material_ids(ctx, buffers, src, n)?;
    let members = member_triangles(ctx, buffers, src, n, authored_ids.is_some(), notes)?;
    let Influences { count: influence_count, joints, weights, full: full_influences } = match src.joint_count
    {
        None => Influences { count: 0, joints: Vec::new(), weights: Vec::new(), full: None },
        Some(joint_count) => influences(ctx, buffers, src, &reader, n, joint_count)?,
    };
    let morph_targets = morph_targets(ctx, buffers, src, n)?;
    let default_morph_weights = default_morph_weights(ctx, src, morph_targets.len())?;

    let mut mesh = Mesh {
        name,
        binding,
        role,
        positions,
        normals: Vec::new(),
        tangents,
        uvs,
        colors,
        material_ids: Vec::new(),
        indices: Vec::new(),
        influence_count,
        joints,
        weights,
        full_influences,
        morph_targets,
        default_morph_weights,
    };
    let flat = normals.is_none();
    if let Some(normals) = normals {
        mesh.normals = normals;
    }
    share_vertices(ctx, part, &mut mesh, members, authored_ids)?;
    if flat {
        // One vertex per index: charged before it is allocated (a few bytes of indices can
        // name millions of corners, each with every morph target).
        ctx.charge(
            &format!("{part} (flat shading: one vertex per triangle corner)"),
            vertex_bytes(&mesh, mesh.indices.len()),
        )?;
        flat_shade(&mut mesh)?;
    }
    Ok(mesh)
}

/// Refuses a primitive whose mode draws no triangles.
fn check_mode(ctx: &Ctx<'_>, prim: &gltf::Primitive<'_>, part: &str) -> Result<()> {
    let mode = prim.mode();
    if !matches!(mode, Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan) {
        return Err(ctx.err(
            part,
            format!(
                "mode {mode:?} is not supported; only TRIANGLES, TRIANGLE_STRIP and TRIANGLE_FAN can be baked"
            ),
        ));
    }
    Ok(())
}

/// A primitive's per-vertex attributes, read one by one against its `POSITION` count.
struct Attributes<'x, 'a> {
    ctx: &'x Ctx<'x>,
    buffers: &'x [Cow<'x, [u8]>],
    prim: &'x gltf::Primitive<'a>,
    part: &'x str,
    positions: Vec<Vec3>,
    /// The vertex count (`POSITION`'s).
    n: usize,
}

impl<'x, 'a> Attributes<'x, 'a> {
    /// Reads `POSITION` (required, finite).
    fn positions(
        ctx: &'x Ctx<'x>,
        buffers: &'x [Cow<'x, [u8]>],
        prim: &'x gltf::Primitive<'a>,
        part: &'x str,
    ) -> Result<Self> {
        let label = |attribute: &str| format!("{part} {attribute}");
        let accessor = prim.get(&Semantic::Positions).ok_or_else(|| ctx.err(part, "missing POSITION"))?;
        let positions: Vec<Vec3> = accessors::read_dequantised(
            ctx,
            &accessor,
            POSITIONS,
            Integers::Any,
            buffers,
            &label("POSITION"),
        )?
        .into_iter()
        .map(Vec3::from)
        .collect();
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(ctx.err(label("POSITION"), format!("vertex {v} is not finite")));
        }
        let n = positions.len();
        Ok(Attributes { ctx, buffers, prim, part, positions, n })
    }

    /// `mesh "Body" primitive 0 NORMAL`, for messages.
    fn label(&self, attribute: &str) -> String {
        format!("{} {attribute}", self.part)
    }

    /// An error unless an attribute has one element per vertex.
    fn same_count(&self, attribute: &str, len: usize) -> Result<()> {
        if len == self.n {
            Ok(())
        } else {
            Err(self.ctx.err(self.label(attribute), format!("has {len} elements, POSITION has {}", self.n)))
        }
    }

    /// `NORMAL` when present: unit length (renormalised where slightly off), an error when zero.
    fn normals(&self) -> Result<Option<Vec<Vec3>>> {
        let (ctx, n) = (self.ctx, self.n);
        let Some(accessor) = self.prim.get(&Semantic::Normals) else { return Ok(None) };
        let raw = accessors::read_dequantised(
            ctx,
            &accessor,
            UNIT_VEC3,
            Integers::Normalized,
            self.buffers,
            &self.label("NORMAL"),
        )?;
        self.same_count("NORMAL", raw.len())?;
        let mut normals = Vec::with_capacity(n);
        for (v, normal) in raw.into_iter().enumerate() {
            let normal = unit_or_keep(Vec3::from(normal)).ok_or_else(|| {
                ctx.err(self.label("NORMAL"), format!("normal of vertex {v} is zero-length or not finite"))
            })?;
            normals.push(normal);
        }
        Ok(Some(normals))
    }

    /// `TANGENT` when present and every tangent has a direction (left out with a note otherwise).
    fn tangents(&self, notes: &mut Vec<String>) -> Result<Option<Vec<Vec4>>> {
        let (ctx, n, part) = (self.ctx, self.n, self.part);
        let Some(accessor) = self.prim.get(&Semantic::Tangents) else { return Ok(None) };
        let raw = accessors::read_dequantised(
            ctx,
            &accessor,
            UNIT_VEC4,
            Integers::Normalized,
            self.buffers,
            &self.label("TANGENT"),
        )?;
        self.same_count("TANGENT", raw.len())?;
        let mut tangents = Vec::with_capacity(n);
        let mut zero = Vec::new();
        for (v, [x, y, z, w]) in raw.into_iter().enumerate() {
            let t = Vec3::new(x, y, z);
            if !(t.is_finite() && w.is_finite()) {
                return Err(ctx.err(self.label("TANGENT"), format!("tangent of vertex {v} is not finite")));
            }
            // Exporters write zero tangents where the UVs are degenerate: no basis to keep.
            match unit_or_keep(t) {
                Some(xyz) => tangents.push(xyz.extend(if w < 0.0 { -1.0 } else { 1.0 })),
                None => zero.push(v),
            }
        }
        if zero.is_empty() {
            Ok(Some(tangents))
        } else {
            notes.push(format!(
                "{part}: TANGENT left out: {} of its {n} tangents are zero-length (first: vertex {}); `--tangents` \
                 regenerates them",
                zero.len(),
                zero[0]
            ));
            Ok(None)
        }
    }

    /// The texture coordinates of the set the bake reads (`TEXCOORD_<uv_set>`), when present.
    fn uvs(&self) -> Result<Option<Vec<Vec2>>> {
        let ctx = self.ctx;
        let uv_set = ctx.uv_set;
        let uv_name = format!("TEXCOORD_{uv_set}");
        let Some(accessor) = self.prim.get(&Semantic::TexCoords(uv_set)) else { return Ok(None) };
        // Quantised coordinates (KHR_mesh_quantization) are often plain integers, scaled by a
        // KHR_texture_transform; without the extension, unsigned ones are normalised (the
        // core spec allows nothing else), as the `gltf` reader's `into_f32` reads them.
        let integers = if ctx.quantization { Integers::Any } else { Integers::AssumeNormalized };
        let raw = accessors::read_dequantised(
            ctx,
            &accessor,
            TEXCOORDS,
            integers,
            self.buffers,
            &self.label(&uv_name),
        )?;
        self.same_count(&uv_name, raw.len())?;
        let uvs: Vec<Vec2> = raw.into_iter().map(Vec2::from).collect();
        if let Some(v) = uvs.iter().position(|uv| !uv.is_finite()) {
            return Err(ctx.err(self.label(&uv_name), format!("vertex {v} is not finite")));
        }
        Ok(Some(uvs))
    }

    /// `COLOR_0` when present, as RGBA (values outside 0..=1 noted: they are clamped when stored).
    fn colors<'s, F>(
        &self,
        reader: &gltf::mesh::Reader<'a, 's, F>,
        notes: &mut Vec<String>,
    ) -> Result<Option<Vec<Vec4>>>
    where
        F: Clone + Fn(gltf::Buffer<'a>) -> Option<&'s [u8]>,
    {
        let (ctx, part) = (self.ctx, self.part);
        let Some(accessor) = self.prim.get(&Semantic::Colors(0)) else { return Ok(None) };
        let raw = accessors::read(ctx, &accessor, COLORS, self.buffers, &self.label("COLOR_0"), || {
            reader.read_colors(0).map(|c| c.into_rgba_f32())
        })?;
        self.same_count("COLOR_0", raw.len())?;
        let colors: Vec<Vec4> = raw.into_iter().map(Vec4::from).collect();
        if let Some(v) = colors.iter().position(|c| !c.is_finite()) {
            return Err(ctx.err(self.label("COLOR_0"), format!("vertex {v} is not finite")));
        }
        if colors.iter().any(|c| c.min_element() < 0.0 || c.max_element() > 1.0) {
            notes.push(format!(
                "{part}: COLOR_0 values outside 0..=1 are clamped (vertex colours are stored as 8-bit unorm)"
            ));
        }
        Ok(Some(colors))
    }
}

/// Every member's triangles (the primitive's, then the others sharing its vertices), zero-area
/// ones left out, each with the key of the material slot its vertices are drawn with
/// ([`super::material_plan::Slot::key`]; `None` when the file authors material ids per vertex).
fn member_triangles(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    src: &Primitive<'_, '_>,
    n: usize,
    authored_ids: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<(Vec<u32>, Option<u32>)>> {
    let get = accessors::source(buffers);
    let mut members: Vec<(Vec<u32>, Option<u32>)> = Vec::with_capacity(1 + src.others.len());
    for member in std::iter::once(src.primitive).chain(src.others) {
        let member_part = format!("{} primitive {}", src.label, member.index());
        let member_reader = member.reader(get.clone());
        let mut indices = triangle_list(ctx, buffers, member, &member_part, &member_reader, n)?;
        let triangles = indices.len() / 3;
        drop_zero_area_triangles(&mut indices);
        if indices.is_empty() {
            return Err(ctx.err(
                format!("{member_part} indices"),
                format!("all {triangles} triangles repeat a vertex index (no area): nothing to draw"),
            ));
        }
        if indices.len() / 3 < triangles {
            notes.push(format!(
                "{member_part}: {} of {triangles} triangles left out: they repeat a vertex index, so they cover no area",
                triangles - indices.len() / 3
            ));
        }
        // Without a material, the glTF default material (`materials::import` appends it).
        let material = (!authored_ids).then(|| ctx.materials.slot(member.material().index()).key);
        members.push((indices, material));
    }
    Ok(members)
}

/// Builds the mesh's vertices and triangle list from its members' triangles: one vertex per
/// source vertex a triangle uses, drawn with one material (a source vertex used by members of
/// different materials is one vertex per material; members of one material share it). Vertices
/// no triangle uses are dropped. Keeps source order (the vertices unchanged when a single member
/// uses them all). Every attribute follows the one map ([`Mesh::select_vertices`]). A material
/// whose base colour factor the plan moves into the vertex colours multiplies its vertices'
/// colours by it (white where the mesh has none).
fn share_vertices(
    ctx: &Ctx<'_>,
    part: &str,
    mesh: &mut Mesh,
    members: Vec<(Vec<u32>, Option<u32>)>,
    authored_ids: Option<Vec<u8>>,
) -> Result<()> {
    let n = mesh.vertex_count();
    let plan = &ctx.materials;
    if members.len() == 1 {
        // One primitive (the usual case): its vertices as they are when its triangles use them all.
        let mut used = vec![false; n];
        members.iter().flat_map(|(indices, _)| indices).for_each(|&v| used[v as usize] = true);
        if used.iter().all(|&u| u) {
            let (indices, key) = members.into_iter().next().unwrap_or_default();
            match (authored_ids, key) {
                (Some(ids), _) => mesh.material_ids = ids,
                (None, key) => {
                    let slot = plan.slot_of_key(key.unwrap_or(0));
                    mesh.material_ids = vec![slot.id; n];
                    if slot.color.is_some() {
                        fold_colors(ctx, part, mesh, &vec![slot.key; n])?;
                    }
                }
            }
            mesh.indices = indices;
            return Ok(());
        }
    }
    let corners: usize = members.iter().map(|(indices, _)| indices.len()).sum();
    let authored = authored_ids.is_some();
    let id_of = |v: u32, key: Option<u32>| match (&authored_ids, key) {
        (Some(ids), _) => u32::from(ids[v as usize]),
        (None, Some(key)) => key,
        (None, None) => 0,
    };
    // (source vertex, material key) of every corner, sorted: the new vertices in source order.
    let key_bytes = (corners as u64).saturating_mul(size_of::<(u32, u32)>() as u64 + 4);
    ctx.charge(&format!("{part} (vertices shared by its primitives)"), key_bytes)?;
    let mut keys: Vec<(u32, u32)> = Vec::with_capacity(corners);
    for (indices, key) in &members {
        keys.extend(indices.iter().map(|&v| (v, id_of(v, *key))));
    }
    keys.sort_unstable();
    keys.dedup();
    let new_index = |v: u32, id: u32| keys.binary_search(&(v, id)).unwrap_or_default() as u32;
    let mut indices = Vec::with_capacity(corners);
    for (member, key) in &members {
        indices.extend(member.iter().map(|&v| new_index(v, id_of(v, *key))));
    }
    let identity = keys.len() == n && keys.iter().enumerate().all(|(i, &(v, _))| v as usize == i);
    if !identity {
        ctx.charge(&format!("{part} (vertices shared by its primitives)"), vertex_bytes(mesh, keys.len()))?;
        let map: Vec<u32> = keys.iter().map(|&(v, _)| v).collect();
        mesh.select_vertices(&map)?;
    }
    if authored {
        // Authored ids are 0..=255 (checked when read).
        mesh.material_ids = keys.iter().map(|&(_, id)| id.min(255) as u8).collect();
    } else {
        mesh.material_ids = keys.iter().map(|&(_, key)| plan.slot_of_key(key).id).collect();
        if plan.folds_colors() {
            let vertex_keys: Vec<u32> = keys.iter().map(|&(_, key)| key).collect();
            fold_colors(ctx, part, mesh, &vertex_keys)?;
        }
    }
    mesh.indices = indices;
    // The keys and the members' lists are freed here; the new index list stays.
    ctx.release(key_bytes.saturating_sub((corners as u64).saturating_mul(4)));
    Ok(())
}

/// Multiplies the colour of each vertex (of material key `keys[v]`) by the base colour factor the
/// material plan moved into the vertex colours, if any; a mesh without `COLOR_0` gets white ones
/// first. Nothing changes when no key's material folds its colour.
fn fold_colors(ctx: &Ctx<'_>, part: &str, mesh: &mut Mesh, keys: &[u32]) -> Result<()> {
    let plan = &ctx.materials;
    if !plan.folds_colors() || keys.iter().all(|&k| plan.slot_of_key(k).color.is_none()) {
        return Ok(());
    }
    if mesh.colors.is_none() {
        ctx.charge(&format!("{part} (base colours moved into vertex colours)"), 16 * keys.len() as u64)?;
        mesh.colors = Some(vec![Vec4::ONE; keys.len()]);
    }
    if let Some(colors) = mesh.colors.as_mut() {
        for (c, &k) in colors.iter_mut().zip(keys) {
            if let Some(factor) = plan.slot_of_key(k).color {
                *c *= Vec4::from(factor);
            }
        }
    }
    Ok(())
}

/// Removes the triangles with a repeated index (zero area, invisible) from a triangle list, keeping
/// the order of the others.
fn drop_zero_area_triangles(indices: &mut Vec<u32>) {
    let mut kept = 0;
    for t in 0..indices.len() / 3 {
        let [a, b, c] = [indices[3 * t], indices[3 * t + 1], indices[3 * t + 2]];
        if a != b && b != c && a != c {
            indices.copy_within(3 * t..3 * t + 3, 3 * kept);
            kept += 1;
        }
    }
    indices.truncate(3 * kept);
}

/// The bytes a copy of `mesh` with `vertices` vertices allocates: every per-vertex array (morph
/// targets included) and an index per vertex (what [`flat_shade`] adds).
fn vertex_bytes(mesh: &Mesh, vertices: usize) -> u64 {
    let corners = vertices as u64;
    let mut per_corner: u64 = 12 + 12 + 4 + 4; // position, normal, material id, index
    per_corner += mesh.tangents.as_ref().map_or(0, |_| 16);
    per_corner += mesh.uvs.as_ref().map_or(0, |_| 8);
    per_corner += mesh.colors.as_ref().map_or(0, |_| 16);
    if !mesh.joints.is_empty() {
        per_corner += (size_of_val(&mesh.joints[0]) + size_of_val(&mesh.weights[0])) as u64;
    }
    if let Some(full) = &mesh.full_influences {
        let most = full.iter().map(Vec::len).max().unwrap_or(0) as u64;
        per_corner += 24 + most * 8;
    }
    for t in &mesh.morph_targets {
        per_corner += 12 + t.normals.as_ref().map_or(0, |_| 12) + t.tangents.as_ref().map_or(0, |_| 12);
    }
    corners.saturating_mul(per_corner)
}

/// The primitive's triangles as a list: indices read (or `0..n` when absent), strips and fans
/// converted per the glTF spec's vertex order, every index below `n`.
fn triangle_list<'a, 's, F>(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    primitive: &gltf::Primitive<'a>,
    part: &str,
    reader: &gltf::mesh::Reader<'a, 's, F>,
    n: usize,
) -> Result<Vec<u32>>
where
    F: Clone + Fn(gltf::Buffer<'a>) -> Option<&'s [u8]>,
{
    let part = format!("{part} indices");
    let raw: Vec<u32> = match primitive.indices() {
        Some(accessor) => accessors::read(ctx, &accessor, INDICES, buffers, &part, || {
            reader.read_indices().map(|i| i.into_u32())
        })?,
        None => {
            ctx.charge(&part, (n as u64).saturating_mul(4))?;
            (0..n as u32).collect()
        }
    };
    if matches!(primitive.mode(), Mode::TriangleStrip | Mode::TriangleFan) {
        // The list has three indices per triangle: about three times the strip or fan.
        ctx.charge(&format!("{part} (as a triangle list)"), (raw.len() as u64).saturating_mul(12))?;
    }
    if let Some(k) = raw.iter().position(|&i| i as usize >= n) {
        return Err(ctx.err(part, format!("index {k} is {}, past the {n} vertices", raw[k])));
    }
    let list = match primitive.mode() {
        Mode::TriangleStrip => (0..raw.len().saturating_sub(2))
            // The spec's order: p_i, p_(i + 1 + i % 2), p_(i + 2 - i % 2) (odd triangles keep the winding).
            .flat_map(|i| [raw[i], raw[i + 1 + i % 2], raw[i + 2 - i % 2]])
            .collect(),
        Mode::TriangleFan => {
            (1..raw.len().saturating_sub(1)).flat_map(|i| [raw[i], raw[i + 1], raw[0]]).collect()
        }
        _ => {
            if !raw.len().is_multiple_of(3) {
                return Err(
                    ctx.err(part, format!("{} indices is not a whole number of triangles", raw.len()))
                );
            }
            raw
        }
    };
    if list.is_empty() {
        return Err(ctx.err(part, "the primitive has no triangles"));
    }
    Ok(list)
}

/// Every `JOINTS_n`/`WEIGHTS_n` pair from set 0 up (until the first absent pair), weights
/// renormalised to sum 1.
///
/// Up to two sets fill the 8 baked slots in place, as authored. With more sets, each vertex's
/// non-zero influences are packed in authored order; a vertex with more than [`MAX_INFLUENCES`]
/// keeps its largest 8 (influences on the same joint summed first, ties to the earlier slot),
/// renormalised, and [`Influences::full`] keeps every influence for verification.
fn influences<'a, 's, F>(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    src: &Primitive<'_, 'a>,
    reader: &gltf::mesh::Reader<'a, 's, F>,
    n: usize,
    joint_count: usize,
) -> Result<Influences>
where
    F: Clone + Fn(gltf::Buffer<'a>) -> Option<&'s [u8]>,
{
    let prim = src.primitive;
    let part = src.part;
    let mut sets: Vec<InfluenceSet> = Vec::new();
    for set in 0u32.. {
        let (j_name, w_name) = (format!("JOINTS_{set}"), format!("WEIGHTS_{set}"));
        let (j_acc, w_acc) = match (prim.get(&Semantic::Joints(set)), prim.get(&Semantic::Weights(set))) {
            (None, None) => break,
            (Some(j), Some(w)) => (j, w),
            (Some(_), None) => return Err(ctx.err(part, format!("has {j_name} but no {w_name}"))),
            (None, Some(_)) => return Err(ctx.err(part, format!("has {w_name} but no {j_name}"))),
        };
        let j_part = format!("{part} {j_name}");
        let w_part = format!("{part} {w_name}");
        let set_joints = accessors::read(ctx, &j_acc, JOINTS, buffers, &j_part, || {
            reader.read_joints(set).map(|j| j.into_u16())
        })?;
        let set_weights = accessors::read(ctx, &w_acc, WEIGHTS, buffers, &w_part, || {
            reader.read_weights(set).map(|w| w.into_f32())
        })?;
        if set_joints.len() != n || set_weights.len() != n {
            return Err(ctx.err(
                part,
                format!(
                    "{j_name}/{w_name} have {}/{} elements, POSITION has {n}",
                    set_joints.len(),
                    set_weights.len()
                ),
            ));
        }
        for v in 0..n {
            for k in 0..4 {
                let (joint, weight) = (set_joints[v][k], set_weights[v][k]);
                if usize::from(joint) >= joint_count {
                    return Err(ctx.err(
                        &j_part,
                        format!("vertex {v} uses joint {joint}, but the skin has {joint_count} joints"),
                    ));
                }
                if !(weight.is_finite() && weight >= 0.0) {
                    return Err(ctx.err(&w_part, format!("vertex {v} has weight {weight}")));
                }
            }
        }
        sets.push((set_joints, set_weights));
    }
    let mut joints = vec![[0u16; MAX_INFLUENCES]; n];
    let mut weights = vec![[0f32; MAX_INFLUENCES]; n];
    let weightless = |v: usize, sum: f32| {
        ctx.err(part, format!("the weights of vertex {v} sum to {sum}; a skinned vertex needs weight"))
    };
    if sets.len() <= 2 {
        // As authored, slot for slot (what round trips and earlier bakes rely on).
        for (set, (sj, sw)) in sets.iter().enumerate() {
            for v in 0..n {
                joints[v][set * 4..set * 4 + 4].copy_from_slice(&sj[v]);
                weights[v][set * 4..set * 4 + 4].copy_from_slice(&sw[v]);
            }
        }
        for (v, w) in weights.iter_mut().enumerate() {
            let sum: f32 = w.iter().sum();
            if !(sum > 0.0 && sum.is_finite()) {
                return Err(weightless(v, sum));
            }
            for x in w.iter_mut() {
                *x /= sum;
            }
        }
        return Ok(Influences { count: sets.len() * 4, joints, weights, full: None });
    }
    let mut full = Vec::with_capacity(n);
    let mut reduced = false;
    for v in 0..n {
        let mut list: Vec<(u16, f32)> = sets
            .iter()
            .flat_map(|(sj, sw)| sj[v].iter().copied().zip(sw[v].iter().copied()))
            .filter(|&(_, w)| w > 0.0)
            .collect();
        let sum: f32 = list.iter().map(|&(_, w)| w).sum();
        if !(sum > 0.0 && sum.is_finite()) {
            return Err(weightless(v, sum));
        }
        for (_, w) in &mut list {
            *w /= sum;
        }
        let kept = if list.len() <= MAX_INFLUENCES {
            list.clone()
        } else {
            reduced = true;
            largest_influences(&list)
        };
        let kept_sum: f32 = kept.iter().map(|&(_, w)| w).sum();
        for (s, &(j, w)) in kept.iter().enumerate() {
            joints[v][s] = j;
            weights[v][s] = w / kept_sum;
        }
        full.push(list);
    }
    Ok(Influences { count: MAX_INFLUENCES, joints, weights, full: reduced.then_some(full) })
}

/// One `JOINTS_n` / `WEIGHTS_n` pair, per vertex.
type InfluenceSet = (Vec<[u16; 4]>, Vec<[f32; 4]>);

/// The influences of one skinned primitive (see [`influences`]).
struct Influences {
    /// Slots used: 4 or 8.
    count: usize,
    joints: Vec<[u16; MAX_INFLUENCES]>,
    /// Renormalised to sum 1.
    weights: Vec<[f32; MAX_INFLUENCES]>,
    /// Every influence, when some vertex had more than [`MAX_INFLUENCES`].
    full: Option<Vec<Vec<(u16, f32)>>>,
}

/// The [`MAX_INFLUENCES`] largest of `list` (influences on one joint summed first), in their order
/// in `list`; ties go to the earlier entry.
pub(crate) fn largest_influences(list: &[(u16, f32)]) -> Vec<(u16, f32)> {
    let mut merged: Vec<(u16, f32)> = Vec::with_capacity(list.len());
    for &(j, w) in list {
        match merged.iter_mut().find(|(mj, _)| *mj == j) {
            Some((_, mw)) => *mw += w,
            None => merged.push((j, w)),
        }
    }
    if merged.len() <= MAX_INFLUENCES {
        return merged;
    }
    let mut order: Vec<usize> = (0..merged.len()).collect();
    // Largest first; equal weights keep their authored order (a stable sort).
    order.sort_by(|&a, &b| merged[b].1.total_cmp(&merged[a].1));
    let mut keep: Vec<usize> = order[..MAX_INFLUENCES].to_vec();
    keep.sort_unstable();
    keep.into_iter().map(|i| merged[i]).collect()
}

/// The authored `_MATERIAL_ID` per vertex, `None` when the primitive has none (its vertices then
/// take each primitive's material index, clamped to 255).
fn authored_material_ids(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    src: &Primitive<'_, '_>,
    n: usize,
) -> Result<Option<Vec<u8>>> {
    let Some(accessor) = src.primitive.get(&Semantic::Extras("MATERIAL_ID".to_owned())) else {
        return Ok(None);
    };
    let part = format!("{} _MATERIAL_ID", src.part);
    let get = accessors::source(buffers);
    let values: Vec<f64> = match accessor.data_type() {
        gltf::accessor::DataType::U8 => {
            accessors::read(ctx, &accessor, MATERIAL_IDS, buffers, &part, || {
                gltf::accessor::Iter::<u8>::new(accessor.clone(), get.clone())
            })?
            .into_iter()
            .map(f64::from)
            .collect()
        }
        gltf::accessor::DataType::U16 => {
            accessors::read(ctx, &accessor, MATERIAL_IDS, buffers, &part, || {
                gltf::accessor::Iter::<u16>::new(accessor.clone(), get.clone())
            })?
            .into_iter()
            .map(f64::from)
            .collect()
        }
        gltf::accessor::DataType::U32 => {
            accessors::read(ctx, &accessor, MATERIAL_IDS, buffers, &part, || {
                gltf::accessor::Iter::<u32>::new(accessor.clone(), get.clone())
            })?
            .into_iter()
            .map(f64::from)
            .collect()
        }
        _ => accessors::read(ctx, &accessor, MATERIAL_IDS, buffers, &part, || {
            gltf::accessor::Iter::<f32>::new(accessor.clone(), get.clone())
        })?
        .into_iter()
        .map(f64::from)
        .collect(),
    };
    if values.len() != n {
        return Err(ctx.err(part, format!("has {} elements, POSITION has {n}", values.len())));
    }
    let mut ids = Vec::with_capacity(n);
    for (v, value) in values.into_iter().enumerate() {
        let id = value.round();
        if !(0.0..=255.0).contains(&id) {
            return Err(ctx.err(&part, format!("vertex {v} has material id {value}, outside 0..=255")));
        }
        ids.push(id as u8);
    }
    Ok(Some(ids))
}

/// Morph targets with their deltas (float or quantised, [`accessors::read_dequantised`]) and (valid)
/// names.
fn morph_targets(
    ctx: &Ctx<'_>,
    buffers: &[Cow<'_, [u8]>],
    src: &Primitive<'_, '_>,
    n: usize,
) -> Result<Vec<MorphTarget>> {
    let targets: Vec<gltf::mesh::MorphTarget<'_>> = src.primitive.morph_targets().collect();
    let target_part = |t: usize, attribute: &str| format!("{} target {t} {attribute}", src.part);
    let names = target_names(src.mesh, targets.len());
    let mut out = Vec::with_capacity(targets.len());
    for (t, target) in targets.iter().enumerate() {
        let deltas = |accessor: Option<gltf::Accessor<'_>>,
                      attribute: &str,
                      allowed: &[(gltf::accessor::DataType, gltf::accessor::Dimensions)],
                      integers: Integers|
         -> Result<Option<Vec<Vec3>>> {
            let Some(accessor) = accessor else { return Ok(None) };
            let part = target_part(t, attribute);
            let deltas: Vec<Vec3> =
                accessors::read_dequantised::<3>(ctx, &accessor, allowed, integers, buffers, &part)?
                    .into_iter()
                    .map(Vec3::from)
                    .collect();
            if deltas.len() != n {
                return Err(ctx.err(part, format!("has {} elements, POSITION has {n}", deltas.len())));
            }
            if let Some(v) = deltas.iter().position(|d| !d.is_finite()) {
                return Err(ctx.err(part, format!("vertex {v} is not finite")));
            }
            Ok(Some(deltas))
        };
        let positions = deltas(target.positions(), "POSITION", DELTAS, Integers::Any)?;
        let normals = deltas(target.normals(), "NORMAL", UNIT_VEC3, Integers::Normalized)?;
        let tangents = deltas(target.tangents(), "TANGENT", UNIT_VEC3, Integers::Normalized)?;
        out.push(MorphTarget {
            name: names.as_ref().map(|names| names[t].clone()),
            positions: positions.unwrap_or_else(|| vec![Vec3::ZERO; n]),
            normals,
            tangents,
        });
    }
    Ok(out)
}

/// `mesh.extras.targetNames` when it is an array of exactly `count` strings, else `None`.
fn target_names(mesh: &gltf::Mesh<'_>, count: usize) -> Option<Vec<String>> {
    let extras = extras_object(mesh.extras())?;
    let Value::Array(names) = extras.get("targetNames")? else { return None };
    if names.len() != count {
        return None;
    }
    names.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

/// `node.weights`, else `mesh.weights`, else zeros; one per target.
fn default_morph_weights(ctx: &Ctx<'_>, src: &Primitive<'_, '_>, targets: usize) -> Result<Vec<f32>> {
    let (weights, whose) = match (src.node.weights(), src.mesh.weights()) {
        (Some(w), _) => (w, "node weights"),
        (None, Some(w)) => (w, "mesh weights"),
        (None, None) => return Ok(vec![0.0; targets]),
    };
    if weights.len() != targets {
        return Err(
            ctx.err(src.part, format!("{whose} has {} values for {targets} morph targets", weights.len()))
        );
    }
    if weights.iter().any(|w| !w.is_finite()) {
        return Err(ctx.err(src.part, format!("{whose} are not finite")));
    }
    Ok(weights.to_vec())
}

/// Unwelds the mesh (one vertex per index, every attribute with it: [`Mesh::select_vertices`]) and
/// gives each triangle its face normal; a zero-area triangle gets +Y.
fn flat_shade(mesh: &mut Mesh) -> Result<()> {
    let indices = std::mem::take(&mut mesh.indices);
    // The normals are computed below: none to carry.
    mesh.normals.clear();
    mesh.select_vertices(&indices)?;
    mesh.normals = mesh
        .positions
        .chunks_exact(3)
        .flat_map(|tri| {
            let normal = (tri[1] - tri[0]).cross(tri[2] - tri[0]).try_normalize().unwrap_or(Vec3::Y);
            [normal; 3]
        })
        .collect();
    mesh.indices = (0..mesh.positions.len() as u32).collect();
    Ok(())
}

/// Applies the affine `m` to a rigid mesh: points by `m`, directions and normals by its linear part and
/// inverse transpose (renormalised), morph deltas likewise.
pub(super) fn transform(mesh: &mut Mesh, m: Mat4) {
    let linear = Mat3::from_mat4(m);
    let normal_matrix = linear.inverse().transpose();
    let unit = |v: Vec3| v.try_normalize().unwrap_or(v);
    for p in &mut mesh.positions {
        *p = m.transform_point3(*p);
    }
    for n in &mut mesh.normals {
        *n = unit(normal_matrix * *n);
    }
    if let Some(tangents) = mesh.tangents.as_mut() {
        for t in tangents {
            *t = unit(linear * t.truncate()).extend(t.w);
        }
    }
    for target in &mut mesh.morph_targets {
        for d in &mut target.positions {
            *d = linear * *d;
        }
        for d in target.normals.iter_mut().flatten() {
            *d = normal_matrix * *d;
        }
        for d in target.tangents.iter_mut().flatten() {
            *d = linear * *d;
        }
    }
}
