//! The scene's meshes: each mesh node's triangle primitives read into rig meshes (primitives
//! sharing their vertices read once), named, noted and placed on their sockets.

use super::*;

impl<'a> Importer<'a, '_> {
    pub(super) fn meshes(&mut self) -> Result<()> {
        let nodes = self.gltf_nodes();
        let mut skipped = 0usize;
        let rest_globals = self.rig.rest_globals();
        for r in 0..self.rig.nodes.len() {
            let g = self.gltf_node[r];
            let node = &nodes[g];
            let Some(gmesh) = node.mesh() else { continue };
            let placed = self.mesh_node(r, g, node)?;
            let baked = self.baked_primitives(&placed, &gmesh, &mut skipped)?;
            // Primitives with the same attribute and morph target accessors share their vertices:
            // one rig mesh each set, read once.
            for group in shared_attribute_groups(self.doc, &gmesh, baked.iter().map(|(p, ..)| p)) {
                self.read_group(&placed, &gmesh, &baked, &group, &rest_globals)?;
            }
        }
        if self.rig.meshes.is_empty() {
            let why = if !self.rig.notes.is_empty() && skipped == 0 {
                format!("has no triangle mesh to bake ({})", self.rig.notes.join("; "))
            } else if skipped > 0 {
                format!(
                    "has no mesh to bake: {skipped} primitives are skinned by other skins (choose one with --skin)"
                )
            } else {
                "has no triangle mesh to bake".to_owned()
            };
            return Err(self.ctx.err("scene", why));
        }
        Ok(())
    }

    /// Where rig node `r` (glTF node `g`, which has a mesh) puts its mesh: the body, or an
    /// attachment on a socket.
    fn mesh_node<'n>(&self, r: usize, g: usize, node: &'n gltf::Node<'a>) -> Result<MeshNode<'n, 'a>> {
        let attachment = self.node_extra_str(g, "vat_attachment")?;
        let own_socket = self.node_extra_str(g, "vat_socket")?;
        // An attachment node that is itself a socket (`{"vat_socket": s, "vat_attachment": mesh}`, as
        // the exporter writes it) sits on its own socket, and vat_attachment names the mesh; otherwise
        // vat_attachment names the socket.
        let socket_name = match (&attachment, &own_socket) {
            (Some(_), Some(socket)) => Some(socket),
            (Some(socket), None) => Some(socket),
            (None, _) => None,
        };
        let role = match socket_name {
            None => MeshRole::Body,
            Some(name) => {
                let socket = self.socket_index.get(name).copied().ok_or_else(|| {
                    self.ctx.err(
                        node_part(node),
                        format!("extras.vat_attachment names socket {name:?}, which does not exist"),
                    )
                })?;
                MeshRole::Attachment { socket }
            }
        };
        Ok(MeshNode { r, g, node, role, attachment, own_socket })
    }

    /// The triangle primitives of `gmesh` to bake, with their bindings and the skin's joint count;
    /// the others are left out with a note (`skipped` counts those skinned by a skin not chosen).
    fn baked_primitives(
        &mut self,
        placed: &MeshNode<'_, 'a>,
        gmesh: &gltf::Mesh<'a>,
        skipped: &mut usize,
    ) -> Result<Vec<BakedPrimitive<'a>>> {
        let label = container::mesh_label(gmesh.name(), gmesh.index());
        let mut baked: Vec<BakedPrimitive<'a>> = Vec::new();
        for prim in gmesh.primitives() {
            let part = format!("mesh {label} primitive {}", prim.index());
            let has_joints = prim.get(&gltf::Semantic::Joints(0)).is_some();
            let vertices = prim.get(&gltf::Semantic::Positions).map_or(0, |a| a.count());
            use gltf::mesh::Mode;
            if !matches!(prim.mode(), Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan) {
                self.left_out(
                    vertices,
                    format!(
                        "{part}: left out, mode {:?} is not a triangle mesh ({vertices} vertices)",
                        prim.mode()
                    ),
                );
                continue;
            }
            let binding = match placed.node.skin() {
                Some(skin) if has_joints => match self.skins.get(skin.index()).copied().flatten() {
                    None => {
                        *skipped += 1;
                        self.left_out(
                            vertices,
                            format!(
                                "{part}: left out, skinned by skin {} but --skin chose another ({vertices} vertices)",
                                skin.index()
                            ),
                        );
                        continue;
                    }
                    Some((rig_skin, joint_count)) => {
                        if placed.attachment.is_some() {
                            return Err(self
                                .ctx
                                .err(part, "an attachment (extras.vat_attachment) cannot be skinned"));
                        }
                        (MeshBinding::Skinned { skin: rig_skin }, Some(joint_count))
                    }
                },
                _ => (MeshBinding::Rigid { node: placed.r }, None),
            };
            baked.push((prim, binding.0, binding.1));
        }
        Ok(baked)
    }

    /// Reads one set of primitives sharing their vertices (`group`, indices into `baked`) into a
    /// rig mesh: named, noted, placed on its socket when an attachment, and added to the rig.
    fn read_group(
        &mut self,
        placed: &MeshNode<'_, 'a>,
        gmesh: &gltf::Mesh<'a>,
        baked: &[BakedPrimitive<'a>],
        group: &[usize],
        rest_globals: &[Mat4],
    ) -> Result<()> {
        let label = container::mesh_label(gmesh.name(), gmesh.index());
        let (prim, binding, joint_count) = &baked[group[0]];
        let others: Vec<gltf::Primitive<'_>> = group[1..].iter().map(|&k| baked[k].0.clone()).collect();
        let part = format!("mesh {label} primitive {}", prim.index());
        let mesh_label = format!("mesh {label}");
        let source = mesh::Primitive {
            node: placed.node,
            mesh: gmesh,
            primitive: prim,
            others: &others,
            label: &mesh_label,
            part: &part,
            joint_count: *joint_count,
        };
        let name = group_mesh_name(gmesh, baked, group);
        let mut rig_mesh = mesh::read(
            &self.ctx,
            self.buffers,
            &source,
            name,
            *binding,
            placed.role.clone(),
            &mut self.rig.notes,
        )?;
        if group.len() > 1 {
            let list: Vec<usize> = group.iter().map(|&k| baked[k].0.index()).collect();
            let materials = {
                let mut ids = rig_mesh.material_ids.clone();
                ids.sort_unstable();
                ids.dedup();
                ids.len()
            };
            self.rig.notes.push(format!(
                "{mesh_label}: primitives {} share one set of vertex attributes: baked as one mesh of {} \
                 vertices (those their triangles use) with {materials} material(s), each primitive \
                 keeping its own triangles and material",
                crate::notes::index_ranges(&list),
                rig_mesh.vertex_count()
            ));
        }
        self.note_reduced_influences(&part, &rig_mesh);
        if let MeshRole::Attachment { socket } = placed.role {
            self.place_on_socket(placed, socket, &part, &mut rig_mesh, rest_globals)?;
        }
        if let Some(&first) = self.node_meshes[placed.g].first() {
            let expected = self.rig.meshes[first].morph_targets.len();
            if rig_mesh.morph_targets.len() != expected {
                return Err(self.ctx.err(
                    part,
                    format!(
                        "has {} morph targets, an earlier primitive of the mesh has {expected}",
                        rig_mesh.morph_targets.len()
                    ),
                ));
            }
        }
        self.node_meshes[placed.g].push(self.rig.meshes.len());
        self.rig.meshes.push(rig_mesh);
        Ok(())
    }

    /// The note on a mesh's vertices with more influences than the bake keeps, if any.
    fn note_reduced_influences(&mut self, part: &str, rig_mesh: &crate::rig::Mesh) {
        let Some(full) = &rig_mesh.full_influences else { return };
        let reduced: Vec<&Vec<(u16, f32)>> =
            full.iter().filter(|l| l.len() > crate::rig::MAX_INFLUENCES).collect();
        let dropped = reduced
            .iter()
            .map(|l| {
                let kept: f32 = mesh::largest_influences(l).iter().map(|&(_, w)| w).sum();
                1.0 - kept
            })
            .fold(0.0f32, f32::max);
        let most = reduced.iter().map(|l| l.len()).max().unwrap_or(0);
        self.rig.notes.push(format!(
            "{part}: {} of {} vertices have more than {} influences (up to {most}); their {} largest \
             are kept and renormalised (largest weight dropped {dropped:.4}); verify measures the \
             error against full skinning",
            reduced.len(),
            full.len(),
            crate::rig::MAX_INFLUENCES,
            crate::rig::MAX_INFLUENCES
        ));
    }

    /// Puts an attachment's vertices into its socket's space and binds it to the socket's node.
    fn place_on_socket(
        &self,
        placed: &MeshNode<'_, 'a>,
        socket: usize,
        part: &str,
        rig_mesh: &mut crate::rig::Mesh,
        rest_globals: &[Mat4],
    ) -> Result<()> {
        let socket = &self.rig.sockets[socket];
        // The attachment's vertices go into the socket's space; unchanged (bit-exact) when the
        // mesh sits on the socket node itself.
        if placed.own_socket.as_ref() != Some(&socket.name) {
            let socket_global = rest_globals[socket.node] * socket.local;
            let to_socket = socket_global.inverse() * rest_globals[placed.r];
            if socket_global.determinant() == 0.0 || !to_socket.is_finite() {
                return Err(self.ctx.err(
                    part,
                    format!(
                        "socket {:?} has a singular rest transform; the attachment cannot be placed in it",
                        socket.name
                    ),
                ));
            }
            mesh::transform(rig_mesh, to_socket);
        }
        rig_mesh.binding = MeshBinding::Rigid { node: socket.node };
        Ok(())
    }
}

/// A triangle primitive to bake, with its binding and its skin's joint count.
type BakedPrimitive<'a> = (gltf::Primitive<'a>, MeshBinding, Option<usize>);

/// A glTF node with a mesh, as the rig holds it.
struct MeshNode<'n, 'a> {
    /// Its rig node and glTF node.
    r: usize,
    g: usize,
    node: &'n gltf::Node<'a>,
    /// The body, or an attachment on a socket.
    role: MeshRole,
    /// Its `extras.vat_attachment` and `extras.vat_socket`.
    attachment: Option<String>,
    own_socket: Option<String>,
}

/// The rig mesh's name for a set of primitives sharing their vertices: the mesh's name when it
/// has one primitive, otherwise the name and the primitives' indices.
fn group_mesh_name(gmesh: &gltf::Mesh<'_>, baked: &[BakedPrimitive<'_>], group: &[usize]) -> String {
    let prim = &baked[group[0]].0;
    let base = gmesh.name().unwrap_or("mesh");
    match group.len() {
        _ if gmesh.primitives().len() == 1 => {
            gmesh.name().map_or_else(|| format!("mesh{}", gmesh.index()), str::to_owned)
        }
        1 => format!("{base}.{}", prim.index()),
        2..=4 => {
            let list: Vec<String> = group.iter().map(|&k| baked[k].0.index().to_string()).collect();
            format!("{base}.{}", list.join("+"))
        }
        k => format!("{base}.{}+{} more", prim.index(), k - 1),
    }
}

/// The primitives of one mesh grouped by their vertex data: primitives whose attributes and morph
/// targets name exactly the same accessors are one group (their vertices are one set in the
/// source; each primitive keeps its own indices and material). Groups are lists of positions in
/// `primitives`, in the order of their first primitive.
fn shared_attribute_groups<'p, 'a: 'p>(
    doc: &gltf::Document,
    mesh: &gltf::Mesh<'_>,
    primitives: impl Iterator<Item = &'p gltf::Primitive<'a>>,
) -> Vec<Vec<usize>> {
    type Key = (Vec<(String, usize)>, Vec<[Option<usize>; 3]>);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<Key, usize> = HashMap::new();
    for (k, prim) in primitives.enumerate() {
        // From the JSON: `Primitive::attributes` unwraps every attribute name, and an invalid one
        // is let through validation (an attribute vat does not read).
        let Some(json) = doc.as_json().meshes.get(mesh.index()).and_then(|m| m.primitives.get(prim.index()))
        else {
            groups.push(vec![k]);
            continue;
        };
        let attributes: Vec<(String, usize)> = json
            .attributes
            .iter()
            .map(|(semantic, accessor)| (semantic.to_string(), accessor.value()))
            .collect();
        let targets: Vec<[Option<usize>; 3]> = json
            .targets
            .iter()
            .flatten()
            .map(|t| {
                [t.positions.map(|a| a.value()), t.normals.map(|a| a.value()), t.tangents.map(|a| a.value())]
            })
            .collect();
        match group_of.entry((attributes, targets)) {
            std::collections::hash_map::Entry::Occupied(g) => groups[*g.get()].push(k),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(groups.len());
                groups.push(vec![k]);
            }
        }
    }
    groups
}
