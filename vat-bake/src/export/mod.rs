//! [`Rig`] -> animated glTF 2.0 binary (`.glb`), readable by any viewer and re-importable by
//! [`crate::gltf_import`] without loss.
//!
//! Layout of the file:
//! - glTF node `i` is rig node `i` (translation, rotation and scale from its rest transform;
//!   parents become `children` lists; roots form the scene). Extra nodes follow the rig's nodes:
//!   one per mesh (skinned meshes at the scene root with their `skin`, rigid body meshes as
//!   children of their carrier node, attachments as children of their socket's node with the
//!   socket's transform), then one per socket without an attachment.
//! - Vertex data: `POSITION` (with min/max), `NORMAL`, `TANGENT` and `TEXCOORD_0` when present,
//!   `JOINTS_0`/`WEIGHTS_0` (unsigned short / float; plus `JOINTS_1`/`WEIGHTS_1` for 8 influences)
//!   for skinned meshes, and the application attribute [`MATERIAL_ID_ATTRIBUTE`]; indices as
//!   unsigned int; morph targets with `mesh.weights` and, when every target is named,
//!   `mesh.extras.targetNames`.
//! - One animation per clip, one sampler per channel (identical key times share one input
//!   accessor); morph weight channels target the mesh's node.
//! - vat's own metadata as `extras` (the keys are the `EXTRAS_*` constants of this module):
//!   sockets, attachments and feet on nodes; looping, locomotion and stride on animations.
//!
//! Every float goes into the BIN chunk (or the JSON, for node transforms and accessor bounds) bit
//! for bit, so importing the file gives back the same numbers. Every accessor's data starts on a
//! 4-byte boundary and needs no byte stride (all element sizes are multiples of 4).

use std::path::Path;

use glam::{Mat4, Vec3};
use serde_json::{Map, Value, json};

use crate::rig::{ChannelTarget, KeyInterpolation, Mesh, MeshBinding, MeshRole, Rig};
use crate::{BakeError, Result};

/// The per-vertex material id attribute: SCALAR float accessor holding whole numbers 0-255 (a
/// float keeps every element 4-byte aligned with no byte stride, which validators require of vertex
/// attributes; ids are exact in f32).
pub const MATERIAL_ID_ATTRIBUTE: &str = "_MATERIAL_ID";
/// Node extras key naming the socket the node stands for (its transform is the socket's).
pub const EXTRAS_SOCKET: &str = "vat_socket";
/// Node extras key naming the attachment mesh the (socket) node carries.
pub const EXTRAS_ATTACHMENT: &str = "vat_attachment";
/// Node extras key marking a foot joint: `"left"` or `"right"`.
pub const EXTRAS_FOOT: &str = "vat_foot";
/// Animation extras key: whether the clip loops (bool).
pub const EXTRAS_LOOPING: &str = "vat_looping";
/// Animation extras key: whether the clip is locomotion (bool).
pub const EXTRAS_LOCOMOTION: &str = "vat_locomotion";
/// Animation extras key: the clip's known stride, metres per cycle (number; absent when unknown).
pub const EXTRAS_STRIDE: &str = "vat_stride";

/// glTF component types.
const FLOAT: u32 = 5126;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;
/// glTF buffer view targets.
const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;

/// The rig as a `.glb` file's bytes.
///
/// Errors: [`BakeError::InvalidInput`] naming the part when the rig cannot be written as valid
/// glTF: a non-finite node transform, socket or vertex value, stream lengths that disagree, an
/// index, joint, node, skin or socket reference out of range, a skinned mesh without 4 or 8
/// influences, an attachment not rigidly carried by its socket's node, a clip that
/// [`crate::sample::validate_clip`] rejects, a rig with a streamed body (its frames are not channels;
/// export [`crate::sequence::MeshSequence::into_morph_rig`] instead), or a file over 4 GiB.
pub fn export_glb(rig: &Rig) -> Result<Vec<u8>> {
    validate(rig)?;
    let mut doc = Document::default();
    doc.write(rig);
    doc.into_glb(rig)
}

/// Writes the rig as a `.glb` file at `path`, atomically (a temporary file renamed into place; on
/// failure no file is left at `path`).
///
/// Errors: those of [`export_glb`], and [`BakeError::Core`] (vat-core's I/O error, naming the
/// file) when it cannot be written.
pub fn write_glb(rig: &Rig, path: &Path) -> Result<()> {
    let bytes = export_glb(rig)?;
    vat_core::files::write_file_atomically(path, &bytes)?;
    Ok(())
}

fn invalid(rig: &Rig, part: impl std::fmt::Display, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: format!("rig \"{}\" {part}", rig.name), problem: problem.into() }
}

fn all_finite(values: impl IntoIterator<Item = f32>) -> bool {
    values.into_iter().all(f32::is_finite)
}

/// Checks everything the document needs, so that writing it cannot fail or produce invalid glTF.
fn validate(rig: &Rig) -> Result<()> {
    if rig.streamed_body.is_some() {
        return Err(invalid(
            rig,
            "its body",
            "is a streamed mesh sequence, whose frames glTF cannot carry as channels; export the sequence's \
             morph-target rig (MeshSequence::into_morph_rig)",
        ));
    }
    let nodes = rig.nodes.len();
    for (i, n) in rig.nodes.iter().enumerate() {
        if n.parent.is_some_and(|p| p >= i) {
            return Err(invalid(
                rig,
                format!("node {i} \"{}\"", n.name),
                "its parent does not come before it",
            ));
        }
        let r = n.rest;
        if !all_finite(
            r.translation.to_array().into_iter().chain(r.rotation.to_array()).chain(r.scale.to_array()),
        ) {
            return Err(invalid(rig, format!("node {i} \"{}\"", n.name), "rest transform is not finite"));
        }
    }
    for (s, skin) in rig.skins.iter().enumerate() {
        if skin.joints.is_empty() || skin.joints.len() != skin.inverse_bind.len() {
            return Err(invalid(
                rig,
                format!("skin {s}"),
                format!("{} joints and {} inverse bind matrices", skin.joints.len(), skin.inverse_bind.len()),
            ));
        }
        let mut seen = vec![false; nodes];
        for &j in &skin.joints {
            match seen.get_mut(j) {
                Some(flag) if !*flag => *flag = true,
                Some(_) => {
                    return Err(invalid(rig, format!("skin {s}"), format!("node {j} is a joint twice")));
                }
                None => {
                    return Err(invalid(
                        rig,
                        format!("skin {s}"),
                        format!("joint node {j} of {nodes} nodes"),
                    ));
                }
            }
        }
        if !all_finite(skin.inverse_bind.iter().flat_map(Mat4::to_cols_array)) {
            return Err(invalid(rig, format!("skin {s}"), "an inverse bind matrix is not finite"));
        }
    }
    for (i, socket) in rig.sockets.iter().enumerate() {
        if socket.node >= nodes || !all_finite(socket.local.to_cols_array()) {
            return Err(invalid(
                rig,
                format!("socket {i} \"{}\"", socket.name),
                "node out of range or transform not finite",
            ));
        }
    }
    if let Some(feet) = rig.feet
        && (feet.left >= nodes || feet.right >= nodes)
    {
        return Err(invalid(rig, "feet", format!("nodes {} and {} of {nodes}", feet.left, feet.right)));
    }
    for (m, mesh) in rig.meshes.iter().enumerate() {
        validate_mesh(rig, m, mesh)?;
    }
    for c in 0..rig.clips.len() {
        crate::sample::validate_clip(rig, c)?;
    }
    Ok(())
}

fn validate_mesh(rig: &Rig, m: usize, mesh: &Mesh) -> Result<()> {
    let part = || format!("mesh {m} \"{}\"", mesh.name);
    let n = mesh.vertex_count();
    let bad_len = |what: &str, len: usize| invalid(rig, part(), format!("{len} {what} for {n} vertices"));
    if n == 0 {
        return Err(invalid(rig, part(), "has no vertices"));
    }
    if mesh.normals.len() != n {
        return Err(bad_len("normals", mesh.normals.len()));
    }
    if mesh.material_ids.len() != n {
        return Err(bad_len("material ids", mesh.material_ids.len()));
    }
    if let Some(t) = &mesh.tangents
        && t.len() != n
    {
        return Err(bad_len("tangents", t.len()));
    }
    if let Some(uv) = &mesh.uvs
        && uv.len() != n
    {
        return Err(bad_len("uvs", uv.len()));
    }
    let floats = mesh
        .positions
        .iter()
        .chain(&mesh.normals)
        .flat_map(|v| v.to_array())
        .chain(mesh.tangents.iter().flatten().flat_map(|t| t.to_array()))
        .chain(mesh.uvs.iter().flatten().flat_map(|t| t.to_array()));
    if !all_finite(floats) {
        return Err(invalid(rig, part(), "a vertex attribute is not finite"));
    }
    if !mesh.indices.len().is_multiple_of(3) {
        return Err(invalid(
            rig,
            part(),
            format!("{} indices is not a whole number of triangles", mesh.indices.len()),
        ));
    }
    if let Some(i) = mesh.indices.iter().find(|&&i| i as usize >= n) {
        return Err(invalid(rig, part(), format!("index {i} out of range for {n} vertices")));
    }
    match mesh.binding {
        MeshBinding::Skinned { skin } => {
            let Some(s) = rig.skins.get(skin) else {
                return Err(invalid(rig, part(), format!("skin {skin} of {}", rig.skins.len())));
            };
            if mesh.influence_count != 4 && mesh.influence_count != 8 {
                return Err(invalid(
                    rig,
                    part(),
                    format!("{} influences; glTF skins take 4 or 8", mesh.influence_count),
                ));
            }
            if mesh.full_influences.is_some() {
                // Writing only the 8 baked influences would drop the rest without a word.
                return Err(invalid(
                    rig,
                    part(),
                    "has vertices with more than 8 influences (Mesh::full_influences); the exporter writes \
                     JOINTS_0/1 only"
                        .to_owned(),
                ));
            }
            if mesh.joints.len() != n {
                return Err(bad_len("joint rows", mesh.joints.len()));
            }
            if mesh.weights.len() != n {
                return Err(bad_len("weight rows", mesh.weights.len()));
            }
            let used = mesh.influence_count;
            if let Some(v) =
                mesh.joints.iter().position(|j| j[..used].iter().any(|&j| j as usize >= s.joints.len()))
            {
                return Err(invalid(
                    rig,
                    part(),
                    format!("vertex {v} uses a joint beyond the skin's {}", s.joints.len()),
                ));
            }
            if !all_finite(mesh.weights.iter().flat_map(|w| w[..used].to_vec())) {
                return Err(invalid(rig, part(), "a weight is not finite"));
            }
        }
        MeshBinding::Rigid { node } => {
            if node >= rig.nodes.len() {
                return Err(invalid(rig, part(), format!("carried by node {node} of {}", rig.nodes.len())));
            }
        }
    }
    if let MeshRole::Attachment { socket } = mesh.role {
        let Some(s) = rig.sockets.get(socket) else {
            return Err(invalid(
                rig,
                part(),
                format!("attached to socket {socket} of {}", rig.sockets.len()),
            ));
        };
        if mesh.binding != (MeshBinding::Rigid { node: s.node }) {
            return Err(invalid(
                rig,
                part(),
                format!("an attachment must be rigidly carried by its socket's node {}", s.node),
            ));
        }
    }
    for (t, target) in mesh.morph_targets.iter().enumerate() {
        let lens = [
            Some(target.positions.len()),
            target.normals.as_ref().map(Vec::len),
            target.tangents.as_ref().map(Vec::len),
        ];
        if lens.iter().flatten().any(|&l| l != n) {
            return Err(invalid(
                rig,
                format!("{} morph target {t}", part()),
                format!("deltas are not one per vertex ({n})"),
            ));
        }
        let deltas = target
            .positions
            .iter()
            .chain(target.normals.iter().flatten())
            .chain(target.tangents.iter().flatten())
            .flat_map(|v| v.to_array());
        if !all_finite(deltas) {
            return Err(invalid(rig, format!("{} morph target {t}", part()), "a delta is not finite"));
        }
    }
    if mesh.default_morph_weights.len() > mesh.morph_targets.len()
        || !all_finite(mesh.default_morph_weights.iter().copied())
    {
        return Err(invalid(rig, part(), "default morph weights: more than targets, or not finite"));
    }
    Ok(())
}

/// The glTF document under construction: JSON arrays and the BIN chunk.
#[derive(Default)]
struct Document {
    bin: Vec<u8>,
    buffer_views: Vec<Value>,
    accessors: Vec<Value>,
    nodes: Vec<Map<String, Value>>,
    meshes: Vec<Value>,
    skins: Vec<Value>,
    animations: Vec<Value>,
    scene_roots: Vec<usize>,
}

/// A JSON number holding exactly the f32 (printed as the shortest f64 that reads back as it).
fn num(x: f32) -> Value {
    Value::from(f64::from(x))
}

fn nums(xs: &[f32]) -> Value {
    Value::Array(xs.iter().copied().map(num).collect())
}

impl Document {
    /// Appends `bytes` as a buffer view starting on a 4-byte boundary; returns its index.
    fn view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let mut view = json!({ "buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len() });
        if let Some(t) = target {
            view["target"] = json!(t);
        }
        self.bin.extend_from_slice(bytes);
        self.buffer_views.push(view);
        self.buffer_views.len() - 1
    }

    /// A float accessor of `kind` ("SCALAR", "VEC2", ...) with `width` components per element;
    /// `bounds` adds per-component min and max.
    fn floats(
        &mut self,
        values: &[f32],
        kind: &str,
        width: usize,
        target: Option<u32>,
        bounds: bool,
    ) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let view = self.view(&bytes, target);
        let mut acc = json!({
            "bufferView": view, "componentType": FLOAT, "count": values.len() / width, "type": kind,
        });
        if bounds {
            let mut lo = vec![f32::INFINITY; width];
            let mut hi = vec![f32::NEG_INFINITY; width];
            for element in values.chunks(width) {
                for (c, &v) in element.iter().enumerate() {
                    lo[c] = lo[c].min(v);
                    hi[c] = hi[c].max(v);
                }
            }
            acc["min"] = nums(&lo);
            acc["max"] = nums(&hi);
        }
        self.accessors.push(acc);
        self.accessors.len() - 1
    }

    fn vec3s(&mut self, values: &[Vec3], target: Option<u32>, bounds: bool) -> usize {
        let flat: Vec<f32> = values.iter().flat_map(|v| v.to_array()).collect();
        self.floats(&flat, "VEC3", 3, target, bounds)
    }

    fn joints(&mut self, rows: &[[u16; 4]]) -> usize {
        let bytes: Vec<u8> = rows.iter().flatten().flat_map(|j| j.to_le_bytes()).collect();
        let view = self.view(&bytes, Some(ARRAY_BUFFER));
        self.accessors.push(json!({
            "bufferView": view, "componentType": UNSIGNED_SHORT, "count": rows.len(), "type": "VEC4",
        }));
        self.accessors.len() - 1
    }

    fn indices(&mut self, indices: &[u32]) -> usize {
        let bytes: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
        let view = self.view(&bytes, Some(ELEMENT_ARRAY_BUFFER));
        self.accessors.push(json!({
            "bufferView": view, "componentType": UNSIGNED_INT, "count": indices.len(), "type": "SCALAR",
        }));
        self.accessors.len() - 1
    }

    fn push_node(&mut self, node: Map<String, Value>, parent: Option<usize>) -> usize {
        let index = self.nodes.len();
        self.nodes.push(node);
        match parent {
            Some(p) => self.add_child(p, index),
            None => self.scene_roots.push(index),
        }
        index
    }

    fn add_child(&mut self, parent: usize, child: usize) {
        if let Some(p) = self.nodes.get_mut(parent) {
            match p.get_mut("children") {
                Some(Value::Array(children)) => children.push(json!(child)),
                _ => {
                    p.insert("children".into(), json!([child]));
                }
            }
        }
    }

    fn write(&mut self, rig: &Rig) {
        for (i, n) in rig.nodes.iter().enumerate() {
            let mut node = Map::new();
            if !n.name.is_empty() {
                node.insert("name".into(), json!(n.name));
            }
            node.insert("translation".into(), nums(&n.rest.translation.to_array()));
            node.insert("rotation".into(), nums(&n.rest.rotation.to_array()));
            node.insert("scale".into(), nums(&n.rest.scale.to_array()));
            let foot = rig.feet.and_then(|f| {
                if f.left == i {
                    Some("left")
                } else if f.right == i {
                    Some("right")
                } else {
                    None
                }
            });
            if let Some(side) = foot {
                node.insert("extras".into(), json!({ EXTRAS_FOOT: side }));
            }
            self.push_node(node, n.parent);
        }
        for skin in &rig.skins {
            let flat: Vec<f32> = skin.inverse_bind.iter().flat_map(Mat4::to_cols_array).collect();
            let ibm = self.floats(&flat, "MAT4", 16, None, false);
            self.skins.push(json!({ "joints": skin.joints, "inverseBindMatrices": ibm }));
        }
        let mut carrier = Vec::with_capacity(rig.meshes.len());
        for (m, mesh) in rig.meshes.iter().enumerate() {
            let value = self.mesh(mesh);
            self.meshes.push(value);
            let mut node = Map::new();
            node.insert("name".into(), json!(mesh.name));
            node.insert("mesh".into(), json!(m));
            let parent = match (mesh.role.clone(), mesh.binding) {
                (MeshRole::Attachment { socket }, _) => {
                    let s = &rig.sockets[socket];
                    insert_transform(&mut node, &s.local);
                    node.insert(
                        "extras".into(),
                        json!({ EXTRAS_SOCKET: s.name, EXTRAS_ATTACHMENT: mesh.name }),
                    );
                    Some(s.node)
                }
                (MeshRole::Body, MeshBinding::Skinned { skin }) => {
                    node.insert("skin".into(), json!(skin));
                    None
                }
                (MeshRole::Body, MeshBinding::Rigid { node }) => Some(node),
            };
            carrier.push(self.push_node(node, parent));
        }
        let mut attached = vec![false; rig.sockets.len()];
        for m in &rig.meshes {
            if let MeshRole::Attachment { socket } = m.role
                && let Some(a) = attached.get_mut(socket)
            {
                *a = true;
            }
        }
        for (i, socket) in rig.sockets.iter().enumerate() {
            if !attached[i] {
                let mut node = Map::new();
                node.insert("name".into(), json!(socket.name));
                insert_transform(&mut node, &socket.local);
                node.insert("extras".into(), json!({ EXTRAS_SOCKET: socket.name }));
                self.push_node(node, Some(socket.node));
            }
        }
        for clip in &rig.clips {
            // Keyframe times (as bits) -> their accessor: channels sharing times share one input.
            let mut inputs: std::collections::HashMap<Vec<u32>, usize> = std::collections::HashMap::new();
            let mut samplers = Vec::new();
            let mut channels = Vec::new();
            for ch in &clip.channels {
                let bits: Vec<u32> = ch.times.iter().map(|t| t.to_bits()).collect();
                let input = match inputs.get(&bits) {
                    Some(&accessor) => accessor,
                    None => {
                        let accessor = self.floats(&ch.times, "SCALAR", 1, None, true);
                        inputs.insert(bits, accessor);
                        accessor
                    }
                };
                let (node, path, kind, width) = match ch.target {
                    ChannelTarget::Translation(n) => (n, "translation", "VEC3", 3),
                    ChannelTarget::Rotation(n) => (n, "rotation", "VEC4", 4),
                    ChannelTarget::Scale(n) => (n, "scale", "VEC3", 3),
                    ChannelTarget::MorphWeights(m) => (carrier[m], "weights", "SCALAR", 1),
                };
                let output = self.floats(&ch.values, kind, width, None, false);
                let interpolation = match ch.interpolation {
                    KeyInterpolation::Step => "STEP",
                    KeyInterpolation::Linear => "LINEAR",
                    KeyInterpolation::CubicSpline => "CUBICSPLINE",
                };
                channels.push(json!({ "sampler": samplers.len(), "target": { "node": node, "path": path } }));
                samplers.push(json!({ "input": input, "output": output, "interpolation": interpolation }));
            }
            let mut extras = json!({ EXTRAS_LOCOMOTION: clip.locomotion });
            // Undecided looping stays undecided: the importer then detects it as the bake would.
            if let Some(looping) = clip.looping {
                extras[EXTRAS_LOOPING] = json!(looping);
            }
            if let Some(stride) = clip.known_stride {
                extras[EXTRAS_STRIDE] = num(stride);
            }
            self.animations.push(json!({
                "name": clip.name, "channels": channels, "samplers": samplers, "extras": extras,
            }));
        }
    }

    /// One glTF mesh with one triangle primitive.
    fn mesh(&mut self, mesh: &Mesh) -> Value {
        let mut attributes = Map::new();
        let position = self.vec3s(&mesh.positions, Some(ARRAY_BUFFER), true);
        attributes.insert("POSITION".into(), json!(position));
        attributes.insert("NORMAL".into(), json!(self.vec3s(&mesh.normals, Some(ARRAY_BUFFER), false)));
        if let Some(t) = &mesh.tangents {
            let flat: Vec<f32> = t.iter().flat_map(|v| v.to_array()).collect();
            attributes
                .insert("TANGENT".into(), json!(self.floats(&flat, "VEC4", 4, Some(ARRAY_BUFFER), false)));
        }
        if let Some(uv) = &mesh.uvs {
            let flat: Vec<f32> = uv.iter().flat_map(|v| v.to_array()).collect();
            attributes
                .insert("TEXCOORD_0".into(), json!(self.floats(&flat, "VEC2", 2, Some(ARRAY_BUFFER), false)));
        }
        if let MeshBinding::Skinned { .. } = mesh.binding {
            for set in 0..mesh.influence_count / 4 {
                let slots = set * 4..set * 4 + 4;
                let joints: Vec<[u16; 4]> = mesh
                    .joints
                    .iter()
                    .map(|j| [j[slots.start], j[slots.start + 1], j[slots.start + 2], j[slots.start + 3]])
                    .collect();
                let weights: Vec<f32> = mesh.weights.iter().flat_map(|w| w[slots.clone()].to_vec()).collect();
                attributes.insert(format!("JOINTS_{set}"), json!(self.joints(&joints)));
                let w = self.floats(&weights, "VEC4", 4, Some(ARRAY_BUFFER), false);
                attributes.insert(format!("WEIGHTS_{set}"), json!(w));
            }
        }
        let ids: Vec<f32> = mesh.material_ids.iter().map(|&m| f32::from(m)).collect();
        let ids = self.floats(&ids, "SCALAR", 1, Some(ARRAY_BUFFER), false);
        attributes.insert(MATERIAL_ID_ATTRIBUTE.into(), json!(ids));
        let indices = self.indices(&mesh.indices);
        let mut primitive = json!({ "attributes": attributes, "indices": indices, "mode": 4 });
        let mut out = json!({ "name": mesh.name });
        if !mesh.morph_targets.is_empty() {
            let mut targets = Vec::new();
            for t in &mesh.morph_targets {
                let mut target = Map::new();
                // Morph POSITION accessors need bounds like the base attribute.
                target.insert("POSITION".into(), json!(self.vec3s(&t.positions, Some(ARRAY_BUFFER), true)));
                if let Some(n) = &t.normals {
                    target.insert("NORMAL".into(), json!(self.vec3s(n, Some(ARRAY_BUFFER), false)));
                }
                if let Some(tn) = &t.tangents {
                    target.insert("TANGENT".into(), json!(self.vec3s(tn, Some(ARRAY_BUFFER), false)));
                }
                targets.push(Value::Object(target));
            }
            primitive["targets"] = Value::Array(targets);
            let weights: Vec<f32> = (0..mesh.morph_targets.len())
                .map(|t| mesh.default_morph_weights.get(t).copied().unwrap_or(0.0))
                .collect();
            out["weights"] = nums(&weights);
            let names: Option<Vec<&str>> = mesh.morph_targets.iter().map(|t| t.name.as_deref()).collect();
            if let Some(names) = names {
                out["extras"] = json!({ "targetNames": names });
            }
        }
        out["primitives"] = json!([primitive]);
        out
    }

    fn into_glb(self, rig: &Rig) -> Result<Vec<u8>> {
        let mut root = json!({
            "asset": { "version": "2.0", "generator": concat!("vat-bake ", env!("CARGO_PKG_VERSION")) },
            "scene": 0,
            "scenes": [{ "name": rig.name, "nodes": self.scene_roots }],
            "nodes": self.nodes,
        });
        let arrays = [
            ("meshes", self.meshes),
            ("skins", self.skins),
            ("animations", self.animations),
            ("accessors", self.accessors),
            ("bufferViews", self.buffer_views),
        ];
        for (key, array) in arrays {
            if !array.is_empty() {
                root[key] = Value::Array(array);
            }
        }
        if !self.bin.is_empty() {
            root["buffers"] = json!([{ "byteLength": self.bin.len() }]);
        }
        let mut json_chunk = serde_json::to_vec(&root)
            .map_err(|e| invalid(rig, "glTF JSON", format!("could not serialise: {e}")))?;
        while !json_chunk.len().is_multiple_of(4) {
            json_chunk.push(b' ');
        }
        let mut bin = self.bin;
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let bin_chunk_len = if bin.is_empty() { 0 } else { 8 + bin.len() };
        let total = 12 + 8 + json_chunk.len() + bin_chunk_len;
        let too_big = || invalid(rig, "glTF binary", format!("{total} bytes exceed the format's 4 GiB"));
        let total32 = u32::try_from(total).map_err(|_| too_big())?;
        let json_len = u32::try_from(json_chunk.len()).map_err(|_| too_big())?;
        let bin_len = u32::try_from(bin.len()).map_err(|_| too_big())?;
        let mut glb = Vec::with_capacity(total);
        glb.extend_from_slice(b"glTF");
        glb.extend_from_slice(&2u32.to_le_bytes());
        glb.extend_from_slice(&total32.to_le_bytes());
        glb.extend_from_slice(&json_len.to_le_bytes());
        glb.extend_from_slice(b"JSON");
        glb.extend_from_slice(&json_chunk);
        if !bin.is_empty() {
            glb.extend_from_slice(&bin_len.to_le_bytes());
            glb.extend_from_slice(b"BIN\0");
            glb.extend_from_slice(&bin);
        }
        Ok(glb)
    }
}

/// Sets a non-animated node's transform: `translation` when the matrix is a pure translation (exact
/// and what most tools expect), the full column-major `matrix` otherwise (also exact).
fn insert_transform(node: &mut Map<String, Value>, m: &Mat4) {
    let translation_only = Mat4::from_translation(m.w_axis.truncate());
    if translation_only.to_cols_array().map(f32::to_bits) == m.to_cols_array().map(f32::to_bits) {
        node.insert("translation".into(), nums(&m.w_axis.truncate().to_array()));
    } else {
        node.insert("matrix".into(), nums(&m.to_cols_array()));
    }
}

#[cfg(test)]
mod tests;
