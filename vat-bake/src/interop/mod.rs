//! Interop with other tools' vertex animation textures: OpenVAT (Blender) bakes in and out
//! ([`openvat`]), SideFX Labs VAT 3 (Houdini) bakes in ([`houdini`]).
//!
//! An import reads the other tool's files, validates every part of them (sizes, frame counts, bounds,
//! the mesh against the texture), decodes every frame of every mesh vertex into vat's conventions
//! (glTF space: right-handed, +Y up, metres) and hands back an [`ImportedBake`]: a
//! [`MeshSequence`] (the decoded frames) plus its clip table. [`ImportedBake::to_rig`] turns it into
//! an ordinary [`Rig`] (one morph target per frame, one LINEAR weights channel per clip, see
//! [`crate::sequence`]) that bakes and verifies through the usual path, in vat's own formats.
//!
//! The images are read by maintained decoders: EXR with the `exr` crate (half and float channels),
//! PNG with the `png` crate (8 and 16 bits, raw values: an `sRGB` chunk is ignored, as these tools
//! store linear data in them). Every read is bounded: files are charged to a memory budget before
//! they are read, images by their header's size before they are decoded.

pub mod houdini;
pub(crate) mod houdini_fluid;
pub(crate) mod houdini_rigid;
pub(crate) mod houdini_sprite;
pub(crate) mod images;
pub mod openvat;

pub use images::TextureFormat;

/// The importers' stages below their file readers (bytes in memory in, a decoded bake out) and the
/// writers of the small files that test inputs are made of. For vat-procgen's fuzz entry points and
/// fixtures, which feed the decoders bytes without files. Not a supported API: it may change
/// with any release.
#[doc(hidden)]
pub mod stages {
    pub use super::houdini::{check_in_scope, decode as decode_houdini_softbody};
    pub use super::houdini_fluid::{FluidParts, decode as decode_houdini_dynamic};
    pub use super::houdini_rigid::{RigidParts, decode as decode_houdini_rigid, pivot_uvs};
    pub use super::houdini_sprite::{SpriteParts, decode as decode_houdini_particles};
    pub use super::images::{
        Texture, decode_exr, decode_png, encode_rgba_exr32, encode_rgba_png8, encode_texture,
    };
    pub use super::openvat::{decode as decode_openvat, lookup_glb, lookup_glb_with_sets};
    pub use super::{Budget, LookupMesh, bad, lookup_mesh_from_bytes};
}

use std::path::Path;

use glam::Vec3;
use serde_json::Value;

use crate::rig::{AnimationClip, Rig, StreamedClip};
use crate::sequence::MeshSequence;
use crate::{BakeError, Result};

/// The slowest source rate an import takes, frames per second (a frame every 1,000 s: slower
/// rates make clip durations past what `f32` seconds hold).
pub const MIN_SOURCE_FPS: f32 = 1e-3;

/// The fastest source rate an import takes, frames per second.
pub const MAX_SOURCE_FPS: f32 = 1e4;

/// Whether `fps` is a source rate an import takes ([`MIN_SOURCE_FPS`] to [`MAX_SOURCE_FPS`]).
pub fn is_source_fps(fps: f64) -> bool {
    (f64::from(MIN_SOURCE_FPS)..=f64::from(MAX_SOURCE_FPS)).contains(&fps)
}

/// What an import says of a rate outside [`is_source_fps`].
pub(crate) fn source_fps_problem(fps: impl std::fmt::Display) -> String {
    format!("is {fps}: need a rate of {MIN_SOURCE_FPS} to {MAX_SOURCE_FPS} frames per second")
}

/// One clip of an imported bake: a range of the decoded frames.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedClip {
    /// Name (unique within the bake).
    pub name: String,
    /// First frame (0-based index into [`MeshSequence::positions`]).
    pub first: usize,
    /// Last frame, inclusive.
    pub last: usize,
    /// Frames per second.
    pub fps: f32,
    /// Whether it loops (wrapping from its last frame back to its first, as the source tools' shaders
    /// play it) or plays once and holds its last frame.
    pub looping: bool,
}

impl ImportedClip {
    /// Frames in the clip.
    pub fn frame_count(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// A decoded bake from another tool, ready to bake in vat's formats.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedBake {
    /// The decoded frames (glTF space), one position and normal per mesh vertex per frame.
    pub sequence: MeshSequence,
    /// The clips, each a range of frames (ranges may overlap).
    pub clips: Vec<ImportedClip>,
    /// The largest quantisation step of the source's texture per axis, metres in glTF space (half
    /// float or 8/16-bit steps times the bounds' range): how far the source itself may be from the
    /// motion it was baked from. The vat bake is compared with the decoded source, not with that.
    pub source_step: [f32; 3],
    /// What the import left out, guessed or repaired, one line each (the CLI prints them as
    /// `note:` lines).
    pub notes: Vec<String>,
}

impl ImportedBake {
    /// The rig that bakes this import: the sequence's streamed rig ([`MeshSequence::into_rig`]) with
    /// one clip per [`ImportedClip`], each playing its own frames ([`StreamedClip`]): source frame
    /// `first + i` at `i / fps` seconds; a looping clip lasts one frame more, its first frame again at
    /// `frames / fps`, so vat's looping clip (which stores `round(duration * fps)` frames and wraps)
    /// holds every source frame and wraps from the last back to the first, as the source plays it.
    /// Its looping flag is the source's.
    ///
    /// # Errors
    /// As [`MeshSequence::into_rig`]; [`BakeError::InvalidInput`] for a clip outside the frames or
    /// with a rate outside [`is_source_fps`].
    pub fn to_rig(&self) -> Result<Rig> {
        let frames = self.sequence.frame_count();
        for c in &self.clips {
            if c.first > c.last || c.last >= frames {
                return Err(BakeError::InvalidInput {
                    part: format!("clip \"{}\"", c.name),
                    problem: format!("frames {}..={} do not fit the bake's {frames} frames", c.first, c.last),
                });
            }
            if !is_source_fps(f64::from(c.fps)) {
                return Err(BakeError::InvalidInput {
                    part: format!("clip \"{}\" rate", c.name),
                    problem: source_fps_problem(c.fps),
                });
            }
        }
        let mut rig = self.sequence.clone().into_rig()?;
        rig.notes.extend(self.notes.iter().cloned());
        let time = |i: usize, fps: f32| (i as f64 / f64::from(fps)) as f32;
        rig.clips = self
            .clips
            .iter()
            .map(|c| {
                let wraps = c.looping && c.frame_count() > 1;
                let keys = if wraps { c.frame_count() } else { c.frame_count() - 1 };
                AnimationClip {
                    name: c.name.clone(),
                    channels: Vec::new(),
                    start: 0.0,
                    end: time(keys, c.fps),
                    looping: Some(c.looping),
                    known_stride: None,
                    locomotion: false,
                }
            })
            .collect();
        if let Some(body) = &mut rig.streamed_body {
            body.clips = self
                .clips
                .iter()
                .map(|c| StreamedClip {
                    first: c.first,
                    last: c.last,
                    fps: c.fps,
                    wraps: c.looping && c.frame_count() > 1,
                })
                .collect();
        }
        Ok(rig)
    }

    /// `options` sampling every clip at its own rate, so that each source frame is stored once:
    /// [`BakeOptions::fps`](crate::prepare::BakeOptions::fps) the rate most clips have
    /// ([`ImportedBake::bake_fps`]) and [`BakeOptions::clip_fps`](crate::prepare::BakeOptions::clip_fps)
    /// each clip's. (One rate for all would drop every other frame of a 48 fps clip baked beside
    /// 24 fps ones, and store 24 blends a second of a 1 fps clip.)
    pub fn at_own_rates(&self, options: crate::prepare::BakeOptions) -> crate::prepare::BakeOptions {
        crate::prepare::BakeOptions {
            fps: self.bake_fps(),
            clip_fps: self.clips.iter().map(|c| (c.name.clone(), c.fps)).collect(),
            ..options
        }
    }

    /// The rate most clips have (the first such in clip order), the sequence's when there are
    /// none: the bake's [`BakeOptions::fps`](crate::prepare::BakeOptions::fps) in
    /// [`ImportedBake::at_own_rates`], which gives every clip its own.
    pub fn bake_fps(&self) -> f32 {
        let mut best = (0usize, self.sequence.fps);
        for c in &self.clips {
            let n = self.clips.iter().filter(|d| d.fps == c.fps).count();
            if n > best.0 {
                best = (n, c.fps);
            }
        }
        best.1
    }
}

/// What kind of other tool's bake a folder holds ([`detect_source`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// An OpenVAT bake (a `*-remap_info.json` sidecar, or files named as OpenVAT's).
    OpenVat,
    /// A Houdini VAT 3 bake (a `*_data.json`), with its parameters.
    Houdini(houdini::HoudiniData),
}

/// Whether `dir` is another tool's bake, found as the importers find it: a Houdini VAT 3 bake when
/// `houdini.data` is given or the folder (or a direct subfolder) has a `*_data.json`; an OpenVAT
/// bake when the options name its sidecar or texture or the folder (or a direct subfolder) has a
/// `*-remap_info.json`; `None` otherwise (a mesh sequence, or not a folder).
///
/// # Errors
/// The Houdini import's errors when its `_data.json` cannot be read or parsed.
pub fn detect_source(
    dir: &Path,
    openvat: &openvat::OpenVatOptions,
    houdini: &houdini::HoudiniFiles,
) -> Result<Option<SourceKind>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let folders = openvat::search_folders(dir)?;
    if houdini.data.is_some() || !openvat::find_all(&folders, &|n| n.ends_with("_data.json"))?.is_empty() {
        return Ok(Some(SourceKind::Houdini(houdini::read_data_in(dir, houdini)?)));
    }
    if openvat.sidecar.is_some()
        || openvat.texture.is_some()
        || !openvat::find_all(&folders, &|n| n.ends_with(openvat::SIDECAR_SUFFIX))?.is_empty()
    {
        return Ok(Some(SourceKind::OpenVat));
    }
    Ok(None)
}

/// The [`BakeError::Interop`] for `path`.
pub fn bad(path: &Path, part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::Interop { path: path.to_path_buf(), part: part.into(), problem: problem.into() }
}

/// Charges bytes to an import's memory budget.
#[derive(Debug)]
pub struct Budget {
    pub(crate) used: u64,
    pub(crate) limit: u64,
    /// What raises `limit`, for the errors.
    pub(crate) option: &'static str,
}

impl Budget {
    /// A budget of `limit` bytes raised with `--max-memory`.
    pub fn new(limit: u64) -> Self {
        Self { used: 0, limit, option: "--max-memory" }
    }

    /// A budget no option raises (`why` says why it is enough).
    pub(crate) fn fixed(limit: u64, why: &'static str) -> Self {
        Self { used: 0, limit, option: why }
    }

    pub(crate) fn charge(&mut self, what: &str, bytes: u64) -> Result<()> {
        let used = self.used.saturating_add(bytes);
        if used > self.limit {
            return Err(BakeError::OverBudget {
                what: format!("the import ({what})"),
                needed: used,
                limit: self.limit,
                hint: if self.option == "--max-memory" {
                    "raise --max-memory if the files are trusted"
                } else {
                    self.option
                },
            });
        }
        self.used = used;
        Ok(())
    }

    pub(crate) fn left(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// Bytes a parsed JSON document may take per byte of its text (a `serde_json::Value` of 32 bytes for
/// a two-byte `0,`), charged before it is parsed.
pub(crate) const JSON_BYTES_PER_TEXT_BYTE: u64 = 16;

/// Reads `path` (a file of a bake folder, or one the user named) through vat-core's read gate
/// ([`vat_core::files`]): a regular file confined to its own folder (links out of it, FIFOs,
/// devices refused without waiting), at most what is left of `budget`, then charged to it.
pub(crate) fn read_file(path: &Path, what: &str, budget: &mut Budget) -> Result<Vec<u8>> {
    read_file_scaled(path, what, budget, 1)
}

/// [`read_file`] of a file that takes `factor` times its size once decoded: refused before it is
/// read when that would pass the budget, and charged `factor` times its bytes.
pub(crate) fn read_file_scaled(path: &Path, what: &str, budget: &mut Budget, factor: u64) -> Result<Vec<u8>> {
    use vat_core::files::{InputFolder, ReadLimit};
    let name = path.file_name().ok_or_else(|| bad(path, what, "names no file"))?;
    let limit = ReadLimit::new(budget.left() / factor.max(1), budget.option);
    let bytes = InputFolder::containing(path)
        .and_then(|folder| folder.read(Path::new(name), limit))
        .map_err(|e| gate_error(path, what, e))?;
    budget
        .charge(&format!("{what} {}", path.display()), (bytes.len() as u64).saturating_mul(factor.max(1)))?;
    Ok(bytes)
}

/// A refusal of the read gate as the importers report it: the file, what it is for, and the rule.
pub(crate) fn gate_error(path: &Path, what: &str, e: vat_core::Error) -> BakeError {
    use vat_core::files::FileProblem;
    match e {
        vat_core::Error::FileRefused { problem: FileProblem::Missing, .. } => bad(path, what, "is missing"),
        vat_core::Error::FileRefused { problem, .. } => bad(path, what, problem.to_string()),
        other => other.into(),
    }
}

/// Parses JSON as hand-edited sidecars are written: a comma before a closing `}` or `]` (outside
/// strings) is dropped, and the second value says whether one was.
pub(crate) fn lenient_json(path: &Path, bytes: &[u8]) -> Result<(Value, bool)> {
    let text = std::str::from_utf8(bytes).map_err(|e| bad(path, "the JSON", format!("is not UTF-8: {e}")))?;
    match serde_json::from_str(text) {
        Ok(v) => Ok((v, false)),
        Err(first) => {
            let fixed = drop_trailing_commas(text);
            if fixed.len() != text.len()
                && let Ok(v) = serde_json::from_str(&fixed)
            {
                return Ok((v, true));
            }
            Err(bad(path, "the JSON", format!("does not parse: {first}")))
        }
    }
}

/// `text` without the commas that stand (with only whitespace after them) before `}` or `]`, outside
/// strings.
fn drop_trailing_commas(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let (mut in_string, mut escaped) = (false, false);
    for (i, &c) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == b'"' {
            in_string = true;
        } else if c == b',' {
            let next = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
            if matches!(next, Some(b'}' | b']')) {
                continue;
            }
        }
        out.push(c);
    }
    // Only ASCII commas were removed, so the bytes are still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// A JSON number, or a string holding one (some writers format floats as strings).
pub(crate) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// A JSON bool, a number 0/1 or a string `"true"`/`"false"`/`"0"`/`"1"`.
pub(crate) fn boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The mesh of a bake as the importers use it: every vertex of every triangle primitive of the glb
/// (nodes' rest transforms applied), with its lookup UV (`TEXCOORD_1`), texture UV (`TEXCOORD_0`)
/// when every primitive has one, and the local-to-scene linear part per vertex so texture offsets
/// (object space) can be carried into the scene.
pub struct LookupMesh {
    /// Rest positions, scene space.
    pub(crate) positions: Vec<Vec3>,
    /// Rest unit normals, scene space.
    pub(crate) normals: Vec<Vec3>,
    /// `TEXCOORD_0`, when every primitive has it.
    pub(crate) uvs: Option<Vec<glam::Vec2>>,
    /// `TEXCOORD_1` (the texel each vertex reads).
    pub(crate) lookup: Vec<glam::Vec2>,
    /// Triangle list.
    pub(crate) indices: Vec<u32>,
    /// Per vertex, the index into `linear` of its mesh's node transform.
    pub(crate) mesh_of: Vec<u32>,
    /// The linear part of each mesh's node transform (object offsets -> scene offsets).
    pub(crate) linear: Vec<glam::Mat3>,
    /// Each mesh's node transform (object points -> scene points).
    pub(crate) matrix: Vec<glam::Mat4>,
    /// Linear RGBA `COLOR_0`, when every primitive has it.
    pub(crate) colors: Option<Vec<glam::Vec4>>,
    /// What the glTF import left out or repaired (its notes), one line each.
    pub(crate) notes: Vec<String>,
}

/// Reads a bake's mesh (`.glb`/`.gltf`) with its lookup UVs.
pub(crate) fn read_lookup_mesh(path: &Path, budget: &mut Budget) -> Result<LookupMesh> {
    let bytes = read_file(path, "the mesh", budget)?;
    lookup_mesh_from_bytes(&bytes, path, budget)
}

/// `read_lookup_mesh` of bytes already read (`path` names them; external buffers beside it).
pub fn lookup_mesh_from_bytes(bytes: &[u8], path: &Path, budget: &mut Budget) -> Result<LookupMesh> {
    let options = crate::gltf_import::ImportOptions {
        max_memory: budget.left().saturating_add(bytes.len() as u64),
        ..Default::default()
    };
    // Two imports of one file: the texture UVs, then the lookup UVs, vertex for vertex.
    let plain = crate::gltf_import::import_slice_uv_set(bytes, path, &options, 0)?;
    let lookup = crate::gltf_import::import_slice_uv_set(bytes, path, &options, 1)?;
    let globals = plain.rest_globals();
    let mut mesh = LookupMesh {
        positions: Vec::new(),
        normals: Vec::new(),
        uvs: Some(Vec::new()),
        lookup: Vec::new(),
        indices: Vec::new(),
        mesh_of: Vec::new(),
        linear: Vec::new(),
        matrix: Vec::new(),
        colors: Some(Vec::new()),
        notes: plain.notes.iter().map(|n| format!("{}: {n}", path.display())).collect(),
    };
    if let Some(m) = plain.materials.as_ref().filter(|m| !m.materials.is_empty()) {
        mesh.notes.push(format!(
            "{}: its {} material(s) and their textures are not carried: the import draws with vat's palette",
            path.display(),
            m.materials.len()
        ));
    }
    for (m, (a, b)) in plain.meshes.iter().zip(&lookup.meshes).enumerate() {
        let Some(l) = &b.uvs else {
            return Err(bad(
                path,
                format!("mesh \"{}\"", a.name),
                "has no TEXCOORD_1: a VAT mesh carries each vertex's texel in its second UV set",
            ));
        };
        let matrix = match a.binding {
            crate::rig::MeshBinding::Rigid { node } => globals.get(node).copied().unwrap_or_default(),
            crate::rig::MeshBinding::Skinned { .. } => glam::Mat4::IDENTITY,
        };
        let linear = glam::Mat3::from_mat4(matrix);
        let normal_matrix = linear.inverse().transpose();
        let base = mesh.positions.len() as u32;
        mesh.positions.extend(a.positions.iter().map(|p| matrix.transform_point3(*p)));
        mesh.normals
            .extend(a.normals.iter().map(|n| (normal_matrix * *n).try_normalize().unwrap_or(Vec3::Y)));
        match (&mut mesh.uvs, &a.uvs) {
            (Some(all), Some(uv)) => all.extend_from_slice(uv),
            (uvs, _) => *uvs = None,
        }
        match (&mut mesh.colors, &a.colors) {
            (Some(all), Some(c)) => all.extend_from_slice(c),
            (colors, _) => *colors = None,
        }
        mesh.lookup.extend_from_slice(l);
        mesh.indices.extend(a.indices.iter().map(|i| i + base));
        mesh.mesh_of.extend(std::iter::repeat_n(m as u32, a.positions.len()));
        mesh.linear.push(linear);
        mesh.matrix.push(matrix);
    }
    if mesh.positions.is_empty() {
        return Err(bad(path, "the mesh", "has no triangles"));
    }
    Ok(mesh)
}

/// `TEXCOORD_<set>` of every vertex of a bake's mesh, in [`lookup_mesh_from_bytes`]'s vertex order;
/// `what` says what the set carries, for the error when a primitive lacks it.
pub(crate) fn uv_set_from_bytes(
    bytes: &[u8],
    path: &Path,
    budget: &Budget,
    set: u32,
    what: &str,
) -> Result<Vec<glam::Vec2>> {
    let options = crate::gltf_import::ImportOptions {
        max_memory: budget.left().saturating_add(bytes.len() as u64),
        ..Default::default()
    };
    let rig = crate::gltf_import::import_slice_uv_set(bytes, path, &options, set)?;
    let mut all = Vec::new();
    for m in &rig.meshes {
        let Some(uv) = &m.uvs else {
            return Err(bad(path, format!("mesh \"{}\"", m.name), format!("has no TEXCOORD_{set} ({what})")));
        };
        all.extend_from_slice(uv);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_commas_are_dropped_outside_strings_only() {
        assert_eq!(drop_trailing_commas(r#"{"a": [1, 2,], "b": ",}",	}"#), r#"{"a": [1, 2], "b": ",}"	}"#);
        let (v, fixed) = lenient_json(Path::new("x.json"), b"{\"a\": {\"b\": 1},\t\t\n    }").unwrap();
        assert!(fixed);
        assert_eq!(v["a"]["b"], 1);
        let (_, fixed) = lenient_json(Path::new("x.json"), b"{\"a\": 1}").unwrap();
        assert!(!fixed);
        let e = lenient_json(Path::new("x.json"), b"{\"a\": }").unwrap_err().to_string();
        assert!(e.contains("x.json") && e.contains("does not parse"), "{e}");
    }

    #[test]
    fn numbers_and_bools_in_both_forms() {
        assert_eq!(number(&serde_json::json!("-4.30000000")), Some(-4.3));
        assert_eq!(number(&serde_json::json!(2)), Some(2.0));
        assert_eq!(number(&serde_json::json!("x")), None);
        assert_eq!(boolean(&serde_json::json!("True")), Some(true));
        assert_eq!(boolean(&serde_json::json!(0)), Some(false));
        assert_eq!(boolean(&serde_json::json!(2)), None);
    }
}

#[cfg(test)]
mod tests_discovery;
#[cfg(test)]
mod tests_export;
#[cfg(test)]
mod tests_houdini_fluid;
#[cfg(test)]
mod tests_houdini_rigid;
#[cfg(test)]
mod tests_houdini_sprite;
#[cfg(test)]
mod tests_real;
