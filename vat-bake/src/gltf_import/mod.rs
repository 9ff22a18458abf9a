//! glTF 2.0 import: `.gltf` (JSON with `data:` URI or external buffers) and `.glb` -> [`Rig`].
//!
//! What is read, and how it maps to the rig:
//!
//! - **Nodes**: every node of the default scene (else scene 0; else every node that is nobody's child),
//!   reordered depth-first so parents come before children. Rest transforms from TRS or from a matrix
//!   decomposed into TRS. Non-joint ancestors of the skeleton stay ordinary nodes, so joint globals
//!   include them. A node reached twice (two parents, or a cycle) is an error.
//! - **Skins**: every skin that skins a mesh of the scene is imported (in the order the scene first
//!   uses them), so a model whose meshes are bound to several skins (one per hand, say) bakes whole
//!   on one union skeleton. [`ImportOptions::skin`] restricts the import to one skin; primitives
//!   skinned by the others are then left out, each with a line in [`Rig::notes`]. Inverse bind
//!   matrices are identity when absent.
//! - **Meshes**: one rig mesh per triangle primitive, or per set of primitives of one mesh that share
//!   their vertex data (the same accessors for every attribute and morph target, as exporters write
//!   a model with many materials over one vertex buffer): their vertices are read once and shared,
//!   each primitive keeping its own triangles and material (a vertex used by primitives of different
//!   materials is one vertex per material), and a note says so. Vertices no triangle uses are
//!   dropped. A primitive with `JOINTS_0` on a node with the
//!   chosen skin is [`MeshBinding::Skinned`] (its node transform ignored, per spec); any other primitive
//!   is [`MeshBinding::Rigid`] on its node (props on joints, rigid node animation, morph-only meshes).
//!   Rigid meshes have `influence_count == 0` and empty `joints`/`weights`.
//!   - Triangle strips and fans are converted to lists; `POINTS` and `LINES*` primitives are left
//!     out, each with a line in [`Rig::notes`] (a scene with nothing else is an error).
//!   - Missing normals: flat normals, per spec. The vertices are unwelded (one vertex per index, every
//!     attribute with it: colours, texture coordinates, tangents, influences, material ids, morph
//!     deltas; [`crate::rig::Mesh::select_vertices`]) so each triangle gets its own face normal; a
//!     zero-area triangle gets +Y.
//!   - Unit vectors (normals, tangents, rotations) already unit within [`UNIT_TOLERANCE`] are kept
//!     bit-exact; others are normalised; zero-length ones are an error.
//!   - `JOINTS_n/WEIGHTS_n` for every `n` from 0 up; weights renormalised to sum 1. One set gives 4
//!     baked influences, two give 8; with more, a vertex with more than 8 non-zero influences keeps
//!     its 8 largest, renormalised, [`crate::rig::Mesh::full_influences`] keeps them all (what
//!     verification skins against) and [`Rig::notes`] says how many vertices lost weight.
//!     A joint index at or past the skin's joint count (any slot, whatever its weight), a negative or
//!     non-finite weight, or weights summing to 0 is an error.
//!   - Material id per vertex: the custom attribute `_MATERIAL_ID` (u8/u16/u32/float scalar, raw values
//!     in 0..=255), else the primitive's material index (the glTF default material after the
//!     document's own); a document with more than 256 is compacted (`material_plan.rs`: unused ones
//!     left out, identical ones merged, base colours moved into the vertex colours).
//!   - Morph targets: POSITION/NORMAL/TANGENT deltas (absent POSITION deltas are zeros); default weights
//!     from `node.weights`, else `mesh.weights`, else zeros; names from `mesh.extras.targetNames` only
//!     when it is an array of exactly one string per target.
//! - **Animations**: one clip per glTF animation, `start`/`end` = first/last key over its channels.
//!   A `weights` channel targets every rig mesh made from the node's mesh (the channel is duplicated per
//!   primitive). Channels on nodes outside the imported scene, and weights channels whose primitives
//!   were skipped, are dropped; an animation left with no channel is an error. NaN/infinite times or
//!   values and times not strictly increasing are errors. A clip whose keys all sit at one instant
//!   (a "TPose" clip) is a pose: `start == end`, baked as a one-frame clip. A file with no
//!   animation imports with no clips (and bakes as a static one-frame asset).
//!
//! vat conventions read from `extras` (the vat exporter writes them):
//!
//! | on | extras | effect |
//! |---|---|---|
//! | node | `{"vat_socket": "head"}` | a [`Socket`] named `head` on the node's parent, offset = the node's local matrix (a root node: on itself, identity) |
//! | node with a mesh | `{"vat_attachment": "head"}` | its primitives become [`MeshRole::Attachment`] on socket `head`: vertices are moved into the socket's space (unchanged when the mesh sits on the socket node itself), binding `Rigid { node: socket.node }` |
//! | socket node with a mesh | `{"vat_socket": "head", "vat_attachment": "cap"}` | as above on its own socket `head`; `cap` is the mesh's name (what [`crate::export`] writes) |
//! | node | `{"vat_foot": "left"}` / `"right"` | [`Rig::feet`]; without it feet are found by name among skin joints when there is a skin (Mixamo, Blender, Unreal, Unity and `FootL` conventions, [`crate::feet::by_name`]); a rig with no feet by name gets them from its skeleton's shape when a stride is measured ([`crate::feet::by_geometry`]) |
//! | animation | `{"vat_looping": false}` (also `looping` or `loop`) | one-shot (`false`) or looping (`true`) clip; absent: the bake decides from the clip's seam ([`crate::prepare::BakeOptions::looping`]) |
//! | animation | `{"vat_locomotion": true, "vat_stride": 1.48}` | locomotion flag and exact stride in metres per cycle (default: locomotion when the name contains walk, jog, run or sprint; stride unknown) |
//!
//! Extensions read:
//!
//! - `KHR_mesh_quantization`: POSITION and TEXCOORD_n as (un)signed bytes or shorts, normalised or
//!   not; NORMAL, TANGENT and morph NORMAL/TANGENT deltas as normalised signed bytes or shorts; morph
//!   POSITION deltas as signed bytes or shorts, normalised or not. Each component is dequantised
//!   exactly by the spec's equations (normalised signed `max(c / 127, -1)` or `max(c / 32767, -1)`,
//!   unsigned `c / 255` or `c / 65535`, not normalised: `c`), and the transform such files keep
//!   their scale and offset in (the node's TRS, a skin's inverse bind matrices) is applied as for
//!   any file. Other layouts are a [`BakeError::Gltf`] naming the accessor.
//! - `EXT_meshopt_compression` and `KHR_meshopt_compression`: compressed buffer views (modes
//!   ATTRIBUTES, TRIANGLES, INDICES; filters NONE, OCTAHEDRAL, QUATERNION, EXPONENTIAL, COLOR) are
//!   decoded by meshoptimizer's own decoder (the `meshopt` crate) before any accessor is read; the
//!   uncompressed fallback buffer is never read, so it need not exist. A view breaking the spec's
//!   rules, or a stream that does not decode, is a [`BakeError::Gltf`] naming the view
//!   (`meshopt_compression.rs`).
//! - `KHR_texture_transform` (offset, rotation, scale, `texCoord` override) on the base colour,
//!   metallic-roughness and normal textures: baked into the texture coordinates of the vertices
//!   drawn with each material. A material whose textures carry different transforms gets its base
//!   colour's, and one note names the textures sampled with it (`materials.rs`). The interop
//!   importers' lookup UVs (another set) are read untransformed.
//! - `KHR_texture_basisu` is recognised, not decoded: a texture whose image is KTX2 is left out with
//!   a note naming it and saying how to re-export (the material keeps its factors); a PNG or JPEG
//!   `source` beside it is used (`materials.rs` says why no decoder).
//! - `KHR_draco_mesh_compression`: each Draco primitive's stream is decoded by the pure-Rust
//!   `draco-core` decoder before any accessor is read (sequential and EdgeBreaker connectivity,
//!   quantised and octahedral attributes), its mapped attributes and triangles written in the
//!   accessors' own types into a new buffer; the decoded size is charged to the memory budget first
//!   and the decoder held to the counts the accessors declare. A corrupt stream, or one that
//!   disagrees with its accessors, is a [`BakeError::Gltf`] naming the mesh, primitive and buffer
//!   view (`draco.rs`).
//!
//! Not supported, each a [`BakeError::Gltf`] naming the file and the part: remote URIs.
//!
//! Every accessor is checked (layout, count, byte ranges, sparse indices) before the `gltf` crate's
//! readers touch it, so malformed or truncated files are typed errors, never panics.
//!
//! [`Rig::notes`] says each thing once: a note that repeats per mesh or primitive is one line with
//! the count ([`crate::notes::collapse`]).

mod accessors;
mod anim;
mod container;
mod draco;
mod material_plan;
mod materials;
mod mesh;
mod meshopt_compression;
mod scene_meshes;

#[cfg(test)]
mod draco_tests;
#[cfg(test)]
mod extension_tests;
#[cfg(test)]
mod fixture;
#[cfg(test)]
mod materials_tests;
#[cfg(test)]
mod stride_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod whole_file_tests;
#[cfg(test)]
mod whole_scene_tests;

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::{Mat4, Quat, Vec3};
use serde_json::{Map, Value};

use crate::rig::{Feet, MeshBinding, MeshRole, Node, Rig, Skin, Socket, Transform};
use crate::{BakeError, Result};

/// A vector whose length is within this of 1 is kept bit-exact rather than renormalised: 8 ulp of 1.0
/// (2^-23 each), where any vector normalised in f32 or f64 and rounded to f32 lands. Keeping such values
/// exact keeps rig -> .glb -> rig round trips exact.
pub const UNIT_TOLERANCE: f32 = 8.0 * f32::EPSILON;

/// Import options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// Which glTF skin to import (`--skin N`, an index into the file's `skins`). `None`: the first skin,
    /// in node order, used by a mesh. Choosing a skin that does not exist or that no mesh of the scene
    /// uses is a [`BakeError::InvalidOption`].
    pub skin: Option<usize>,
    /// The most bytes the import may hold (`--max-memory`, default
    /// [`crate::prepare::DEFAULT_MAX_MEMORY`]): the file, its decoded or external buffers and every
    /// accessor expanded to 32-bit components are counted as they are about to be read, and the
    /// import is refused ([`BakeError::Gltf`] with the numbers) before the allocation that would
    /// exceed it. A file larger than the budget is refused before it is read.
    pub max_memory: u64,
    /// The folder external resources (buffer files) must lie in (`--resource-root`): `None` means the
    /// glTF file's own folder. A `uri` is read only when it resolves, after symbolic links, to a
    /// regular file inside this folder; absolute paths, `..` escapes (plain or percent-encoded),
    /// links out of it, devices, FIFOs, sockets and folders are refused ([`BakeError::Gltf`]
    /// naming the buffer and the rule, never the foreign file's contents).
    pub resource_root: Option<PathBuf>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self { skin: None, max_memory: crate::prepare::DEFAULT_MAX_MEMORY, resource_root: None }
    }
}

/// Imports a `.gltf` or `.glb` file. External buffers are resolved relative to the file's directory.
/// The rig is named after the file stem.
///
/// # Errors
/// [`BakeError::Io`] if the file cannot be read; [`BakeError::Gltf`] (naming the file and the part) for
/// malformed or unsupported content (see the module docs); [`BakeError::InvalidOption`] for a bad
/// [`ImportOptions::skin`].
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Rig> {
    // Through the read gate: a regular file (a FIFO or device is refused, never waited on), at most
    // the budget, the bound being the bytes read.
    let limit = vat_core::files::ReadLimit::new(options.max_memory, "--max-memory");
    let bytes = vat_core::files::read_named_file(path, limit).map_err(|e| match e {
        vat_core::Error::FileRefused {
            problem: vat_core::files::FileProblem::TooLarge { size, limit, .. },
            ..
        } => over_budget(path, "the file", size.max(limit.saturating_add(1)), limit),
        other => other.into(),
    })?;
    let name = path.file_stem().map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
    let base_dir = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    import_bytes(&bytes, base_dir, path, &name, options, 0)
}

/// Imports glTF bytes read from `file` (external buffers resolved beside it), reading texture
/// coordinate set `uv_set` (`TEXCOORD_<uv_set>`) into [`crate::rig::Mesh::uvs`] instead of
/// `TEXCOORD_0`: the interop importers read the per-vertex lookup UVs of OpenVAT and Houdini bakes
/// (`TEXCOORD_1`) this way. Vertex order and count are those of the plain import, so two imports of
/// one file line up vertex for vertex.
pub(crate) fn import_slice_uv_set(
    bytes: &[u8],
    file: &Path,
    options: &ImportOptions,
    uv_set: u32,
) -> Result<Rig> {
    let name = file.file_stem().map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
    let base_dir = file.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    import_bytes(bytes, base_dir, file, &name, options, uv_set)
}

/// Imports glTF or GLB bytes with default options (for tests and fuzzing). External buffers are
/// resolved against `base_dir`; needing one with `base_dir == None` is an error. `name` names the rig
/// and stands for the file in error messages.
///
/// # Errors
/// As [`import_file`], except that nothing is read from disk but external buffers.
pub fn import_slice(bytes: &[u8], base_dir: Option<&Path>, name: &str) -> Result<Rig> {
    import_slice_with(bytes, base_dir, name, &ImportOptions::default())
}

/// [`import_slice`] with options.
///
/// # Errors
/// As [`import_slice`].
pub fn import_slice_with(
    bytes: &[u8],
    base_dir: Option<&Path>,
    name: &str,
    options: &ImportOptions,
) -> Result<Rig> {
    import_bytes(bytes, base_dir, Path::new(name), name, options, 0)
}

fn import_bytes(
    bytes: &[u8],
    base_dir: Option<&Path>,
    file: &Path,
    name: &str,
    options: &ImportOptions,
    uv_set: u32,
) -> Result<Rig> {
    let ctx = Ctx {
        file,
        used: Cell::new(0),
        budget: options.max_memory,
        uv_set,
        materials: material_plan::MaterialPlan::default(),
        quantization: false,
    };
    ctx.charge("the file", bytes.len() as u64)?;
    let (json_bytes, bin) = container::split_glb(&ctx, bytes)?;
    let root = container::parse_json(&ctx, json_bytes)?;
    container::check_version(&ctx, &root)?;
    let quantization = [&root.extensions_used, &root.extensions_required]
        .iter()
        .any(|list| list.iter().any(|e| e == "KHR_mesh_quantization"));
    let ctx = Ctx { quantization, ..ctx };
    container::check_positions(&ctx, &root)?;
    // Extension objects the gltf crate is built without (Draco primitives, meshopt views, texture
    // transforms and KTX2 sources, material variants) are read from the raw JSON, parsed only when
    // the file names one of them.
    let raw = raw_json(json_bytes);
    // Draco primitives' accessors have no buffer view (their data is in the stream).
    let draco = draco::draco_primitives(&ctx, raw.as_ref(), &root)?;
    container::validate(&ctx, &root, &draco::draco_accessors(&draco))?;
    let doc = gltf::Document::from_json_without_validation(root);
    let compressed = meshopt_compression::compressed_views(&ctx, raw.as_ref(), &doc)?;
    let needed = meshopt_compression::needed_buffers(&doc, &compressed);
    let resources = container::Resources::new(base_dir, options.resource_root.as_deref());
    let mut buffers = container::load_buffers(&ctx, &doc, bin, &resources, &needed)?;
    let doc = meshopt_compression::decode(&ctx, doc, &mut buffers, &compressed)?;
    let doc = draco::decode(&ctx, doc, &mut buffers, &draco)?;
    let variants = contains(json_bytes, b"KHR_materials_variants");
    let materials = material_plan::plan(&ctx, &doc, json_bytes, variants)?;
    let plan_notes = materials.notes.clone();
    let ctx = Ctx { materials, ..ctx };
    let mut importer = Importer::new(ctx, &doc, &buffers, name);
    importer.rig.notes.extend(plan_notes);
    importer.nodes()?;
    importer.skin(options)?;
    importer.sockets()?;
    importer.meshes()?;
    let imported = materials::import(&importer, &resources, raw.as_ref(), variants)?;
    importer.rig.materials = imported.materials;
    importer.rig.notes.extend(imported.notes);
    // Texture transforms go into the texture coordinates; the interop importers' lookup UVs
    // (another set) are read as they are.
    if importer.ctx.uv_set == 0 {
        materials::apply_uv_transforms(&mut importer.rig.meshes, &imported.uv_transforms);
    }
    importer.feet()?;
    importer.rig.clips = anim::clips(&importer)?;
    // A note repeated per mesh or primitive is said once, with a count.
    let notes = std::mem::take(&mut importer.rig.notes);
    importer.rig.notes = crate::notes::collapse(notes);
    Ok(importer.rig)
}

/// The glTF JSON as a [`Value`] when it names an extension read from there (see
/// [`import_bytes`]), else `None`. It parsed as glTF already, so this parse does not fail.
fn raw_json(json_bytes: &[u8]) -> Option<Value> {
    const NAMES: [&[u8]; 5] = [
        b"KHR_draco_mesh_compression",
        b"meshopt_compression",
        b"KHR_texture_transform",
        b"KHR_texture_basisu",
        b"KHR_materials_variants",
    ];
    let named = NAMES.iter().any(|name| contains(json_bytes, name));
    let json_bytes = json_bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(json_bytes);
    named.then(|| serde_json::from_slice::<Value>(json_bytes).ok()).flatten()
}

/// Whether `name` occurs in `bytes`.
fn contains(bytes: &[u8], name: &[u8]) -> bool {
    bytes.windows(name.len()).any(|w| w == name)
}

/// The file being imported, for error messages, and the memory budget it draws from.
pub(super) struct Ctx<'p> {
    file: &'p Path,
    /// Bytes counted against the budget so far.
    used: Cell<u64>,
    /// [`ImportOptions::max_memory`].
    budget: u64,
    /// The texture coordinate set read into [`crate::rig::Mesh::uvs`] (0 but for the interop
    /// importers, see [`import_slice_uv_set`]).
    uv_set: u32,
    /// Which vat material (and vertex colour factor) each glTF material's vertices get.
    materials: material_plan::MaterialPlan,
    /// The file declares `KHR_mesh_quantization`: unsigned texture coordinates may be plain
    /// integers (without it, the core spec has them normalised, flag or not).
    quantization: bool,
}

/// The [`BakeError::Gltf`] of an import over its memory budget, with the numbers.
fn over_budget(file: &Path, part: &str, needed: u64, budget: u64) -> BakeError {
    BakeError::Gltf {
        path: PathBuf::from(file),
        part: part.to_owned(),
        problem: format!(
            "the import would hold {needed} bytes ({:.1} MiB), more than the memory budget of {budget} bytes \
             ({:.1} MiB); raise --max-memory if the file is trusted",
            needed as f64 / 1_048_576.0,
            budget as f64 / 1_048_576.0
        ),
    }
}

impl Ctx<'_> {
    /// Counts `bytes` about to be allocated for `part` against the budget; an error with the numbers
    /// (and nothing counted) when the total would exceed it.
    /// Bytes left of the budget.
    pub(super) fn remaining(&self) -> u64 {
        self.budget.saturating_sub(self.used.get())
    }

    /// Gives back bytes charged for a buffer that has been freed (a decoder's own image once it was
    /// converted).
    pub(super) fn release(&self, bytes: u64) {
        self.used.set(self.used.get().saturating_sub(bytes));
    }

    pub(super) fn charge(&self, part: &str, bytes: u64) -> Result<()> {
        let total = self.used.get().saturating_add(bytes);
        if total > self.budget {
            return Err(over_budget(self.file, part, total, self.budget));
        }
        self.used.set(total);
        Ok(())
    }

    /// A [`BakeError::Gltf`] naming this file.
    pub(super) fn err(&self, part: impl Into<String>, problem: impl Into<String>) -> BakeError {
        BakeError::Gltf { path: PathBuf::from(self.file), part: part.into(), problem: problem.into() }
    }
}

/// The `extras` of a glTF object as a JSON object (`None` when absent or not an object).
pub(super) fn extras_object(extras: &gltf::json::Extras) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(extras.as_ref()?.get()).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// `v` unchanged when its length is within [`UNIT_TOLERANCE`] of 1, else normalised; `None` when its
/// length is zero or not finite.
pub(super) fn unit_or_keep(v: Vec3) -> Option<Vec3> {
    let len = v.length();
    if !(len.is_finite() && len > 0.0) {
        None
    } else if (len - 1.0).abs() <= UNIT_TOLERANCE {
        Some(v)
    } else {
        Some(v / len)
    }
}

/// `"node \"Hips\""` or `"node 3"`.
pub(super) fn node_part(node: &gltf::Node<'_>) -> String {
    match node.name() {
        Some(n) if !n.is_empty() => format!("node {n:?}"),
        _ => format!("node {}", node.index()),
    }
}

/// Import state, filled stage by stage.
pub(super) struct Importer<'a, 'b> {
    pub(super) ctx: Ctx<'a>,
    pub(super) doc: &'a gltf::Document,
    pub(super) buffers: &'a [Cow<'b, [u8]>],
    /// glTF node index -> rig node index (`None`: not in the imported scene).
    pub(super) node_map: Vec<Option<usize>>,
    /// Rig node index -> glTF node index.
    gltf_node: Vec<usize>,
    /// `extras` objects by glTF node index.
    node_extras: Vec<Option<Map<String, Value>>>,
    /// By glTF skin index: its rig skin index and joint count, when imported.
    skins: Vec<Option<(usize, usize)>>,
    /// glTF node index -> indices of the rig meshes made from its mesh.
    pub(super) node_meshes: Vec<Vec<usize>>,
    /// Socket name -> index into `rig.sockets` (lookups stay O(1) however many sockets a file has).
    socket_index: HashMap<String, usize>,
    pub(super) rig: Rig,
}

impl<'a, 'b> Importer<'a, 'b> {
    fn new(ctx: Ctx<'a>, doc: &'a gltf::Document, buffers: &'a [Cow<'b, [u8]>], name: &str) -> Self {
        let n = doc.nodes().len();
        Self {
            ctx,
            doc,
            buffers,
            node_map: vec![None; n],
            gltf_node: Vec::new(),
            node_extras: doc.nodes().map(|node| extras_object(node.extras())).collect(),
            skins: Vec::new(),
            node_meshes: vec![Vec::new(); n],
            socket_index: HashMap::new(),
            rig: Rig { name: name.to_owned(), ..Rig::default() },
        }
    }

    fn gltf_nodes(&self) -> Vec<gltf::Node<'a>> {
        self.doc.nodes().collect()
    }

    /// The scene's nodes, parents first.
    fn nodes(&mut self) -> Result<()> {
        let nodes = self.gltf_nodes();
        let roots: Vec<usize> = match self.doc.default_scene().or_else(|| self.doc.scenes().next()) {
            Some(scene) => scene.nodes().map(|n| n.index()).collect(),
            None => {
                let mut is_child = vec![false; nodes.len()];
                for node in &nodes {
                    for child in node.children() {
                        is_child[child.index()] = true;
                    }
                }
                (0..nodes.len()).filter(|&i| !is_child[i]).collect()
            }
        };
        let mut stack: Vec<(usize, Option<usize>)> = roots.iter().rev().map(|&r| (r, None)).collect();
        while let Some((g, parent)) = stack.pop() {
            let node = &nodes[g];
            if self.node_map[g].is_some() {
                return Err(self.ctx.err(
                    node_part(node),
                    "is reached twice from the scene: it has two parents or the hierarchy has a cycle",
                ));
            }
            let rest = self.rest_transform(node)?;
            let r = self.rig.nodes.len();
            self.node_map[g] = Some(r);
            self.gltf_node.push(g);
            self.rig.nodes.push(Node { name: node.name().unwrap_or_default().to_owned(), parent, rest });
            let children: Vec<usize> = node.children().map(|c| c.index()).collect();
            stack.extend(children.iter().rev().map(|&c| (c, Some(r))));
        }
        Ok(())
    }

    fn rest_transform(&self, node: &gltf::Node<'_>) -> Result<Transform> {
        let part = node_part(node);
        match node.transform() {
            gltf::scene::Transform::Decomposed { translation, rotation, scale } => {
                let translation = Vec3::from(translation);
                let scale = Vec3::from(scale);
                if !(translation.is_finite() && scale.is_finite()) {
                    return Err(self.ctx.err(part, "translation or scale is not finite"));
                }
                let rotation = unit_quat(Quat::from_array(rotation))
                    .ok_or_else(|| self.ctx.err(&part, "rotation is zero-length or not finite"))?;
                Ok(Transform { translation, rotation, scale })
            }
            gltf::scene::Transform::Matrix { matrix } => {
                let m = Mat4::from_cols_array_2d(&matrix);
                if !m.is_finite() {
                    return Err(self.ctx.err(part, "matrix is not finite"));
                }
                if m.row(3) != glam::Vec4::W {
                    return Err(self.ctx.err(part, "matrix is not affine (last row must be 0, 0, 0, 1)"));
                }
                if m.determinant() == 0.0 {
                    return Err(self.ctx.err(part, "matrix is singular (a zero scale cannot be decomposed)"));
                }
                let (scale, rotation, translation) = m.to_scale_rotation_translation();
                let rotation = unit_quat(rotation)
                    .filter(|_| scale.is_finite())
                    .ok_or_else(|| self.ctx.err(&part, "matrix cannot be decomposed into TRS"))?;
                Ok(Transform { translation, rotation, scale })
            }
        }
    }

    /// Imports the skins: every skin that skins a mesh of the scene (one union skeleton: the
    /// vertex set merges their joints, see [`crate::skin::VertexSet::from_rig`]), or only the one
    /// chosen with [`ImportOptions::skin`].
    fn skin(&mut self, options: &ImportOptions) -> Result<()> {
        let nodes = self.gltf_nodes();
        let skin_count = self.doc.skins().len();
        // One pass over the scene (not one per skin or per node): which skins skin a mesh with
        // joints, in the order the scene first uses them.
        let mut used = vec![false; skin_count];
        let mut order = Vec::new();
        for &g in &self.gltf_node {
            let node = &nodes[g];
            if let Some(skin) = node.skin().map(|s| s.index())
                && skin < skin_count
                && !used[skin]
                && node
                    .mesh()
                    .is_some_and(|m| m.primitives().any(|p| p.get(&gltf::Semantic::Joints(0)).is_some()))
            {
                used[skin] = true;
                order.push(skin);
            }
        }
        let skinned_mesh_uses = |skin: usize| used[skin];
        let chosen: Vec<usize> = match options.skin {
            Some(i) if i >= skin_count => {
                return Err(BakeError::InvalidOption {
                    option: "--skin",
                    problem: format!(
                        "skin {i} does not exist in {} ({skin_count} skins)",
                        self.ctx.file.display()
                    ),
                });
            }
            Some(i) if !skinned_mesh_uses(i) => {
                return Err(BakeError::InvalidOption {
                    option: "--skin",
                    problem: format!(
                        "no mesh of the scene in {} is skinned by skin {i}",
                        self.ctx.file.display()
                    ),
                });
            }
            Some(i) => vec![i],
            // In the order the scene first uses them, so the first skin met stays rig skin 0.
            None => order,
        };
        self.skins = vec![None; skin_count];
        let skins: Vec<gltf::Skin<'_>> = self.doc.skins().collect();
        for index in chosen {
            let Some(skin) = skins.get(index) else { continue };
            let imported = self.read_skin(skin, index)?;
            self.skins[index] = Some((self.rig.skins.len(), imported.joints.len()));
            self.rig.skins.push(imported);
        }
        Ok(())
    }

    /// One glTF skin: its joints (in the imported scene) and inverse bind matrices.
    fn read_skin(&self, skin: &gltf::Skin<'_>, index: usize) -> Result<Skin> {
        let part = match skin.name() {
            Some(n) if !n.is_empty() => format!("skin {n:?}"),
            _ => format!("skin {index}"),
        };
        let mut joints = Vec::new();
        for joint in skin.joints() {
            let r = self.node_map[joint.index()].ok_or_else(|| {
                self.ctx.err(&part, format!("joint {} is not in the imported scene", node_part(&joint)))
            })?;
            joints.push(r);
        }
        if joints.is_empty() {
            return Err(self.ctx.err(part, "has no joints"));
        }
        let inverse_bind = match skin.inverse_bind_matrices() {
            None => vec![Mat4::IDENTITY; joints.len()],
            Some(accessor) => {
                let reader = skin.reader(accessors::source(self.buffers));
                let ibm_part = format!("{part} inverseBindMatrices");
                let matrices = accessors::read(
                    &self.ctx,
                    &accessor,
                    accessors::F32_MAT4,
                    self.buffers,
                    &ibm_part,
                    || reader.read_inverse_bind_matrices(),
                )?;
                if matrices.len() < joints.len() {
                    return Err(self.ctx.err(
                        ibm_part,
                        format!("has {} matrices for {} joints", matrices.len(), joints.len()),
                    ));
                }
                let matrices: Vec<Mat4> =
                    matrices.iter().take(joints.len()).map(Mat4::from_cols_array_2d).collect();
                if let Some(j) = matrices.iter().position(|m| !m.is_finite()) {
                    return Err(self.ctx.err(ibm_part, format!("matrix {j} is not finite")));
                }
                matrices
            }
        };
        Ok(Skin { joints, inverse_bind })
    }

    /// A string-valued vat extras key of glTF node `g`.
    fn node_extra_str(&self, g: usize, key: &str) -> Result<Option<String>> {
        match self.node_extras[g].as_ref().and_then(|m| m.get(key)) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.ctx.err(
                node_part(&self.gltf_nodes()[g]),
                format!("extras.{key} must be a string, found {other}"),
            )),
        }
    }

    fn sockets(&mut self) -> Result<()> {
        for r in 0..self.rig.nodes.len() {
            let g = self.gltf_node[r];
            let Some(name) = self.node_extra_str(g, "vat_socket")? else { continue };
            if self.socket_index.contains_key(&name) {
                return Err(self
                    .ctx
                    .err(node_part(&self.gltf_nodes()[g]), format!("a second socket is named {name:?}")));
            }
            let node = &self.rig.nodes[r];
            let (node, local) = match node.parent {
                Some(parent) => (parent, node.rest.to_mat4()),
                None => (r, Mat4::IDENTITY),
            };
            self.socket_index.insert(name.clone(), self.rig.sockets.len());
            self.rig.sockets.push(Socket { name, node, local });
        }
        Ok(())
    }

    /// Records a part of the source the rig leaves out, with its vertex count.
    fn left_out(&mut self, vertices: usize, note: String) {
        self.rig.left_out_vertices = self.rig.left_out_vertices.saturating_add(vertices as u64);
        self.rig.notes.push(note);
    }

    fn feet(&mut self) -> Result<()> {
        let mut tagged = [None, None];
        for r in 0..self.rig.nodes.len() {
            let g = self.gltf_node[r];
            let side = match self.node_extra_str(g, "vat_foot")?.as_deref() {
                None => continue,
                Some("left") => 0,
                Some("right") => 1,
                Some(other) => {
                    return Err(self.ctx.err(
                        node_part(&self.gltf_nodes()[g]),
                        format!("extras.vat_foot must be \"left\" or \"right\", found {other:?}"),
                    ));
                }
            };
            if tagged[side].is_some() {
                return Err(self
                    .ctx
                    .err(node_part(&self.gltf_nodes()[g]), "a second foot is tagged on the same side"));
            }
            tagged[side] = Some(r);
        }
        let [by_name_left, by_name_right] =
            crate::feet::by_name(&self.rig, &crate::feet::candidates(&self.rig));
        let left = tagged[0].or(by_name_left);
        let right = tagged[1].or(by_name_right);
        self.rig.feet = match (left, right) {
            (Some(left), Some(right)) if left != right => Some(Feet { left, right }),
            _ => None,
        };
        Ok(())
    }
}

/// `q` kept when unit within [`UNIT_TOLERANCE`], else normalised; `None` when zero or not finite.
pub(super) fn unit_quat(q: Quat) -> Option<Quat> {
    let len = q.length();
    if !(len.is_finite() && len > 0.0) {
        None
    } else if (len - 1.0).abs() <= UNIT_TOLERANCE {
        Some(q)
    } else {
        Some(q / len)
    }
}
