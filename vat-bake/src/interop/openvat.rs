//! OpenVAT (the Blender add-on) bakes: import ([`read_openvat`]) and export ([`export_openvat`]).
//!
//! The layout, as OpenVAT writes it and its engine decoders (Unity, Unreal, Godot templates,
//! bevy_open_vat) read it:
//!
//! | file | holds |
//! |---|---|
//! | `<N>-remap_info.json` | `{"os-remap": {"Min": [x,y,z], "Max": [x,y,z], "Frames": F}, "animations": {name: {"startFrame", "endFrame", "framerate", "looping"}}}` |
//! | `<N>_vat.exr` / `.png` (`<N>_packed_vat` when it packs normals) | one row per frame (frame 0 = the file's first scanline), one column per encoded (Blender) vertex; RGB = `(offset - Min) / (Max - Min)`; with packed normals the lower half holds normals (rows `[F, 2F)` of a `2F`-row texture; `H / 2` rows down in one rounded up to a power of two) |
//! | `<N>_vnrm.exr` / `.png` | separate normals: same size and rows as `_vat`, RGB = `(n + 1) / 2` |
//! | `<N>.glb` (`mesh/M_<N>_glTF_yUp.glb` in OpenVAT's tutorial folders) | the rest (proxy) mesh, glTF Y-up, each vertex's texel in `TEXCOORD_1` = `((col + 0.5) / W, (row + 0.5) / H)` |
//!
//! [`locate`] finds the files by these names in the folder and its direct subfolders; options name
//! any of them instead.
//!
//! Offsets are in Blender object space (right-handed, Z up): a vertex's glTF position at frame `f`
//! is `rest + (off.x, off.z, -off.y)` (normals likewise). Clip frames are Blender scene frames,
//! inclusive; the bake's first frame is not recorded, and real files count from 1.
//!
//! What the reader accepts beyond the strict layout (each a `note:` where it changes anything):
//! `Min`/`Max`/`Frames` and clip fields as numbers or numeric strings; a trailing comma before a
//! closing brace (hand-edited sidecars); unknown keys (ignored); `animations` missing or empty (one
//! looping clip over every frame); overlapping clips in any order; more vertices than columns
//! (OpenVAT's wrapped layout: blocks of `F` rows, one row a frame); textures rounded up to a
//! power of two (the spare rows and columns unused).

use std::path::{Path, PathBuf};

use glam::{Mat3, Vec3};
use serde_json::Value;

use super::images::{self, Texture};
use super::{Budget, ImportedBake, ImportedClip, LookupMesh, bad, boolean, number};
use crate::sequence::{MAX_SEQUENCE_FRAMES, MeshSequence};
use crate::{BakeError, Result};

/// The sidecar's file-name suffix.
pub const SIDECAR_SUFFIX: &str = "-remap_info.json";

/// How an OpenVAT bake is read.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatOptions {
    /// The sidecar JSON (`--json`); default: the folder's one `*-remap_info.json`.
    pub sidecar: Option<PathBuf>,
    /// The mesh (`--mesh`); default: found by OpenVAT's naming ([`locate`]).
    pub mesh: Option<PathBuf>,
    /// The position texture (`--texture`); default: found by OpenVAT's naming ([`locate`]).
    pub texture: Option<PathBuf>,
    /// The separate normal texture (`--normal-texture`); default: `<N>_vnrm.<ext>` when there is one.
    pub normal_texture: Option<PathBuf>,
    /// The scene frame stored in the texture's first row (`--first-frame`); default 0 when a clip
    /// starts at frame 0, else 1 (Blender's default scene start, and every real sidecar seen).
    pub first_frame: Option<i64>,
    /// Frames per second when the sidecar has no clip table (`--fps`; OpenVAT's templates default
    /// to 24).
    pub fps: f32,
    /// Ignore the bake's normals and recompute them per frame from the decoded positions, per
    /// vertex index, so hard edges stay hard (OpenVAT stores one smooth normal per Blender vertex,
    /// which rounds hard edges).
    pub recompute_normals: bool,
    /// Memory budget of the read (files, decoded textures, frames).
    pub max_memory: u64,
}

impl Default for OpenVatOptions {
    fn default() -> Self {
        Self {
            sidecar: None,
            mesh: None,
            texture: None,
            normal_texture: None,
            first_frame: None,
            fps: 24.0,
            recompute_normals: false,
            max_memory: crate::prepare::DEFAULT_MAX_MEMORY,
        }
    }
}

/// The sidecar, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RemapInfo {
    /// `os-remap.Min`, Blender axes.
    pub min: [f32; 3],
    /// `os-remap.Max`, Blender axes.
    pub max: [f32; 3],
    /// `os-remap.Frames`.
    pub frames: usize,
    /// `animations`, in file order: (name, startFrame, endFrame, framerate, looping).
    pub clips: Vec<RemapClip>,
    /// Lines about what was repaired or ignored.
    pub notes: Vec<String>,
}

/// One entry of the sidecar's `animations` table.
#[derive(Debug, Clone, PartialEq)]
pub struct RemapClip {
    /// Its key.
    pub name: String,
    /// `startFrame` (scene frame).
    pub start: i64,
    /// `endFrame` (scene frame, inclusive).
    pub end: i64,
    /// `framerate`, or `None` when absent.
    pub fps: Option<f32>,
    /// `looping`, or `None` when absent.
    pub looping: Option<bool>,
}

fn integer(v: &Value) -> Option<i64> {
    let x = number(v)?;
    (x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15).then_some(x as i64)
}

/// Parses a sidecar's bytes (see the module docs for what is accepted).
///
/// # Errors
/// [`BakeError::Interop`] naming the key: not JSON, `os-remap` missing, `Min`/`Max` not three finite
/// numbers or `Max < Min`, `Frames` not a whole number in `1..=`[`MAX_SEQUENCE_FRAMES`], a clip
/// without whole `startFrame`/`endFrame`, with `endFrame < startFrame`, or a bad `framerate`.
pub fn parse_remap_info(path: &Path, bytes: &[u8]) -> Result<RemapInfo> {
    let (root, fixed) = super::lenient_json(path, bytes)?;
    let mut notes = Vec::new();
    if fixed {
        notes.push(format!("{}: a trailing comma was dropped (the file is not strict JSON)", path.display()));
    }
    let root = root.as_object().ok_or_else(|| bad(path, "the JSON", "is not an object"))?;
    let remap = root
        .get("os-remap")
        .and_then(Value::as_object)
        .ok_or_else(|| bad(path, "os-remap", "is missing (not an OpenVAT remap_info sidecar)"))?;
    let vec3 = |key: &str| -> Result<[f32; 3]> {
        let part = format!("os-remap.{key}");
        let a = remap.get(key).and_then(Value::as_array).ok_or_else(|| bad(path, &part, "is missing"))?;
        let v: Vec<f64> = a.iter().filter_map(number).collect();
        if a.len() != 3 || v.len() != 3 || v.iter().any(|x| !x.is_finite() || x.abs() > 1e30) {
            let shown = serde_json::to_string(a).unwrap_or_default();
            return Err(bad(path, part, format!("is {shown}: need three finite numbers within 1e30")));
        }
        Ok([v[0] as f32, v[1] as f32, v[2] as f32])
    };
    let (min, max) = (vec3("Min")?, vec3("Max")?);
    if let Some(a) = (0..3).find(|&a| max[a] < min[a]) {
        return Err(bad(path, "os-remap", format!("Max {max:?} is below Min {min:?} on axis {a}")));
    }
    let frames = remap
        .get("Frames")
        .and_then(integer)
        .ok_or_else(|| bad(path, "os-remap.Frames", "is missing or not a whole number"))?;
    if frames < 1 || frames as usize > MAX_SEQUENCE_FRAMES {
        return Err(bad(path, "os-remap.Frames", format!("is {frames}: need 1..={MAX_SEQUENCE_FRAMES}")));
    }
    let unknown: Vec<&String> =
        remap.keys().filter(|k| !["Min", "Max", "Frames"].contains(&k.as_str())).collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "{}: os-remap keys {unknown:?} are not OpenVAT's and were ignored",
            path.display()
        ));
    }
    let mut clips = Vec::new();
    match root.get("animations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(table)) => {
            for (name, c) in table {
                let part = format!("animations.{name:?}");
                let c = c.as_object().ok_or_else(|| bad(path, &part, "is not an object"))?;
                let field = |k: &str| {
                    c.get(k)
                        .and_then(integer)
                        .ok_or_else(|| bad(path, format!("{part}.{k}"), "is missing or not a whole number"))
                };
                let (start, end) = (field("startFrame")?, field("endFrame")?);
                if end < start {
                    return Err(bad(path, &part, format!("endFrame {end} is before startFrame {start}")));
                }
                let fps = match c.get("framerate") {
                    None => None,
                    Some(v) => match number(v) {
                        Some(f) if f.is_finite() && f > 0.0 && f <= 1e4 => Some(f as f32),
                        _ => {
                            return Err(bad(
                                path,
                                format!("{part}.framerate"),
                                format!("is {v}: need a positive rate"),
                            ));
                        }
                    },
                };
                let looping = match c.get("looping") {
                    None => None,
                    Some(v) => Some(boolean(v).ok_or_else(|| {
                        bad(path, format!("{part}.looping"), format!("is {v}: need true or false"))
                    })?),
                };
                clips.push(RemapClip { name: name.clone(), start, end, fps, looping });
            }
        }
        Some(other) => return Err(bad(path, "animations", format!("is {other}: need an object of clips"))),
    }
    Ok(RemapInfo { min, max, frames: frames as usize, clips, notes })
}

/// Blender object space (Z up) -> glTF (Y up): `(x, z, -y)`.
pub fn blender_to_gltf(v: Vec3) -> Vec3 {
    Vec3::new(v.x, v.z, -v.y)
}

/// glTF (Y up) -> Blender object space (Z up): `(x, -z, y)`, the inverse of [`blender_to_gltf`].
pub fn gltf_to_blender(v: Vec3) -> Vec3 {
    Vec3::new(v.x, -v.z, v.y)
}

/// Where the files of an OpenVAT bake are.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatFiles {
    /// The base name `N`.
    pub name: String,
    /// The sidecar.
    pub sidecar: PathBuf,
    /// `<N>_vat.exr|png` (or `<N>_packed_vat`, or the texture `--texture` names).
    pub texture: PathBuf,
    /// `<N>_vnrm.exr|png`, when present.
    pub normals: Option<PathBuf>,
    /// The mesh.
    pub mesh: PathBuf,
    /// How the files were found where it is not by their plain names (one line for the notes).
    pub mesh_note: Option<String>,
}

/// The entries of `dir` whose lower-cased name satisfies `pred`, sorted.
fn files_with(dir: &Path, pred: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let io = |e| BakeError::Io { path: dir.to_path_buf(), source: e };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().to_lowercase();
        // Whatever the entry is: the read gate then says what is wrong with one that is not a
        // regular file inside the folder.
        if pred(&name) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The folders discovery searches: `dir`, then its direct subfolders in name order (OpenVAT's own
/// tutorial bake keeps its mesh in `mesh/` and its packed texture and sidecar in `packed/`). Links
/// to folders are not followed.
pub(crate) fn search_folders(dir: &Path) -> Result<Vec<PathBuf>> {
    let io = |e| BakeError::Io { path: dir.to_path_buf(), source: e };
    let mut subs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_type().map_err(io)?.is_dir() {
            subs.push(entry.path());
        }
    }
    subs.sort();
    let mut out = vec![dir.to_path_buf()];
    out.extend(subs);
    Ok(out)
}

/// Every file of `folders` whose lower-cased name satisfies `pred`, folder by folder.
pub(crate) fn find_all(folders: &[PathBuf], pred: &dyn Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for f in folders {
        out.extend(files_with(f, pred)?);
    }
    Ok(out)
}

/// The first of `names` (in their order, each looked for in every folder in turn) that exists,
/// compared without case.
pub(crate) fn find_named(folders: &[PathBuf], names: &[String]) -> Result<Option<PathBuf>> {
    for name in names {
        let lower = name.to_lowercase();
        if let Some(p) = find_all(folders, &|n| n == lower)?.into_iter().next() {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// `path` relative to `dir` when it lies in it, for messages.
pub(crate) fn shown(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

/// `paths` relative to `dir`, comma-separated.
pub(crate) fn listed(dir: &Path, paths: &[PathBuf]) -> String {
    paths.iter().map(|p| shown(dir, p)).collect::<Vec<_>>().join(", ")
}

/// The texture suffixes of OpenVAT's position textures, lower case, most specific first.
const POSITION_SUFFIXES: [&str; 4] = ["_packed_vat.exr", "_packed_vat.png", "_vat.exr", "_vat.png"];

/// `N` of a texture named `<N>_vat.<ext>` or `<N>_packed_vat.<ext>`.
fn base_of_texture(name: &str) -> Option<String> {
    let lower = name.to_lowercase();
    POSITION_SUFFIXES.iter().find(|s| lower.ends_with(*s)).map(|s| name[..name.len() - s.len()].to_owned())
}

/// Whether a position texture is named as OpenVAT names a texture that packs its normals.
pub(crate) fn named_packed(texture: &Path) -> bool {
    file_name(texture).to_lowercase().contains("_packed_vat.")
}

/// Finds a bake's files in `dir` and its direct subfolders, by OpenVAT's naming: the sidecar
/// `<N>-remap_info.json`; the position texture `<N>_vat.exr|png`, else `<N>_packed_vat.exr|png`
/// (normals packed in its lower half), else the only `*_vat.exr|png`; separate normals
/// `<N>_vnrm.<ext>`, else the only `*_vnrm.<ext>`; the mesh `<N>.glb|gltf`, else
/// `M_<N>_glTF_yUp.glb` or another `M_<N>*` / `<N>_mesh*` glTF (OpenVAT's export names), else the
/// only glTF. Each option of [`OpenVatOptions`] names its file instead.
///
/// # Errors
/// [`BakeError::Interop`] naming what is missing or ambiguous, what was looked for and the option
/// that names the file.
pub fn locate(dir: &Path, options: &OpenVatOptions) -> Result<OpenVatFiles> {
    if !dir.is_dir() {
        return Err(bad(dir, "the bake", "is not a folder (give the folder holding the OpenVAT files)"));
    }
    let folders = search_folders(dir)?;
    let mut notes: Vec<String> = Vec::new();
    let sidecar = match &options.sidecar {
        Some(s) => s.clone(),
        None => {
            let found = find_all(&folders, &|n| n.ends_with(SIDECAR_SUFFIX))?;
            match found.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(bad(
                        dir,
                        "the sidecar",
                        format!(
                            "is missing: looked for *{SIDECAR_SUFFIX} in the folder and its subfolders and found none \
                             (is it an OpenVAT bake? name the sidecar with --json)"
                        ),
                    ));
                }
                many => {
                    return Err(bad(
                        dir,
                        "the sidecar",
                        format!(
                            "is ambiguous: {} *{SIDECAR_SUFFIX} files ({}); choose one with --json",
                            many.len(),
                            listed(dir, many)
                        ),
                    ));
                }
            }
        }
    };
    // The sidecar's folder is searched first for the other files.
    let first: Vec<PathBuf> =
        sidecar.parent().filter(|p| p.is_dir()).map(Path::to_path_buf).into_iter().collect();
    let folders: Vec<PathBuf> =
        first.iter().cloned().chain(folders.into_iter().filter(|f| !first.contains(f))).collect();
    let side_name = file_name(&sidecar);
    let given_base = options.texture.as_deref().and_then(|t| base_of_texture(&file_name(t)));
    let name = match (side_name.strip_suffix(SIDECAR_SUFFIX), given_base) {
        (Some(n), _) => n.to_owned(),
        (None, Some(n)) => n,
        (None, None) => {
            // A renamed sidecar: the base name is the one position texture's.
            let found = find_all(&folders, &|n| {
                POSITION_SUFFIXES.iter().any(|s| n.ends_with(s)) && !n.contains("_vnrm")
            })?;
            match found.as_slice() {
                [one] => base_of_texture(&file_name(one)).unwrap_or_default(),
                _ => {
                    return Err(bad(
                        &sidecar,
                        "the sidecar",
                        format!(
                            "is not named <N>{SIDECAR_SUFFIX} and the folder has {} *_vat textures ({}), so its bake \
                             is unknown: name the position texture with --texture",
                            found.len(),
                            listed(dir, &found)
                        ),
                    ));
                }
            }
        }
    };
    let texture = match &options.texture {
        Some(t) => t.clone(),
        None => {
            let plain = [
                format!("{name}_vat.exr"),
                format!("{name}_vat.png"),
                format!("{name}_packed_vat.exr"),
                format!("{name}_packed_vat.png"),
            ];
            match find_named(&folders, &plain)? {
                Some(t) => t,
                None => {
                    let any = find_all(&folders, &|n| POSITION_SUFFIXES.iter().any(|s| n.ends_with(s)))?;
                    match any.as_slice() {
                        [one] => {
                            notes.push(format!(
                                "the position texture is {} (the only *_vat texture; {name}_vat.exr is not there)",
                                shown(dir, one)
                            ));
                            one.clone()
                        }
                        _ => {
                            return Err(bad(
                                &dir.join(format!("{name}_vat.exr")),
                                "the position texture",
                                format!(
                                    "is missing: looked for {}, then the only *_vat.exr|png, in the folder and its \
                                     subfolders, and found {}; name it with --texture",
                                    plain.join(", "),
                                    if any.is_empty() {
                                        "no texture".to_owned()
                                    } else {
                                        format!("{} ({})", any.len(), listed(dir, &any))
                                    }
                                ),
                            ));
                        }
                    }
                }
            }
        }
    };
    let ext = texture.extension().and_then(|e| e.to_str()).unwrap_or("exr").to_lowercase();
    let normals = match &options.normal_texture {
        Some(n) => Some(n.clone()),
        None => match find_named(&folders, &[format!("{name}_vnrm.{ext}")])? {
            Some(n) => Some(n),
            None => {
                let suffix = format!("_vnrm.{ext}");
                let any = find_all(&folders, &|n| n.ends_with(&suffix))?;
                match any.as_slice() {
                    [] => None,
                    [one] => {
                        notes.push(format!(
                            "the normal texture is {} (the only *_vnrm texture; {name}_vnrm.{ext} is not there)",
                            shown(dir, one)
                        ));
                        Some(one.clone())
                    }
                    many => {
                        return Err(bad(
                            &dir.join(format!("{name}_vnrm.{ext}")),
                            "the normal texture",
                            format!(
                                "is ambiguous: {name}_vnrm.{ext} is not there and {} *_vnrm textures are ({}); name one \
                                 with --normal-texture",
                                many.len(),
                                listed(dir, many)
                            ),
                        ));
                    }
                }
            }
        },
    };
    let mesh = match &options.mesh {
        Some(m) => m.clone(),
        None => locate_mesh(dir, &folders, &name, &mut notes)?,
    };
    let mesh_note = (!notes.is_empty()).then(|| notes.join("; "));
    Ok(OpenVatFiles { name, sidecar, texture, normals, mesh, mesh_note })
}

/// The mesh of bake `name` (see [`locate`]); a line in `notes` when it is not `<N>.glb|gltf`.
fn locate_mesh(dir: &Path, folders: &[PathBuf], name: &str, notes: &mut Vec<String>) -> Result<PathBuf> {
    let is_gltf = |n: &str| n.ends_with(".glb") || n.ends_with(".gltf");
    if let Some(m) = find_named(folders, &[format!("{name}.glb"), format!("{name}.gltf")])? {
        return Ok(m);
    }
    let lower = name.to_lowercase();
    let (m_prefix, mesh_prefix) = (format!("m_{lower}"), format!("{lower}_mesh"));
    let named =
        find_all(folders, &|n| is_gltf(n) && (n.starts_with(&m_prefix) || n.starts_with(&mesh_prefix)))?;
    // OpenVAT's export names: M_<N>_glTF_yUp.glb first.
    let yup = format!("m_{lower}_gltf_yup.");
    let pick =
        named.iter().find(|p| file_name(p).to_lowercase().starts_with(&yup)).or(match named.as_slice() {
            [one] => Some(one),
            _ => None,
        });
    if let Some(m) = pick {
        notes.push(format!("the mesh is {} (OpenVAT's export name for {name})", shown(dir, m)));
        return Ok(m.clone());
    }
    let gltfs = find_all(folders, &|n| is_gltf(n))?;
    let looked =
        format!("{name}.glb, {name}.gltf, M_{name}_glTF_yUp.glb, M_{name}*.glb|gltf, {name}_mesh*.glb|gltf");
    if let [one] = gltfs.as_slice() {
        notes.push(format!(
            "the mesh is {} (the folder's only glTF; {name}.glb is not there)",
            shown(dir, one)
        ));
        return Ok(one.clone());
    }
    let fbx = find_all(folders, &|n| n.ends_with(".fbx"))?;
    let problem = if !gltfs.is_empty() {
        format!(
            "is ambiguous: looked for {looked} in the folder and its subfolders, found none of them and {} other glTF files \
             ({}); choose one with --mesh",
            gltfs.len(),
            listed(dir, &gltfs)
        )
    } else if !fbx.is_empty() {
        format!(
            "is missing: looked for {looked} and found only FBX ({}), which vat does not read: convert it to {name}.glb \
             (Blender: File > Export > glTF 2.0, +Y up, keeping UVMap 2 as TEXCOORD_1) or name a glTF with --mesh",
            listed(dir, &fbx)
        )
    } else {
        format!(
            "is missing: looked for {looked} in the folder and its subfolders and found no glTF; name it with --mesh"
        )
    };
    Err(bad(&dir.join(format!("{name}.glb")), "the mesh", problem))
}

/// Where each mesh vertex reads the texture: its column and the row of frame 0.
pub(crate) struct Lookup {
    pub(crate) col: Vec<u32>,
    pub(crate) row: Vec<u32>,
    /// Texture rows per frame.
    pub(crate) rows_per_frame: usize,
}

/// Maps every vertex's `TEXCOORD_1` to a texel of a `w x h` texture, checking it is a texel centre;
/// vertices with `skip(v)` get column and row `u32::MAX`.
pub(crate) fn lookup_texels(
    mesh: &LookupMesh,
    mesh_path: &Path,
    w: usize,
    h: usize,
    skip: &dyn Fn(usize) -> bool,
) -> Result<Lookup> {
    let n = mesh.lookup.len();
    let (mut col, mut row) = (vec![u32::MAX; n], vec![u32::MAX; n]);
    let mut rows = 0usize;
    for (v, uv) in mesh.lookup.iter().enumerate() {
        if skip(v) {
            continue;
        }
        let (x, y) = (f64::from(uv.x) * w as f64, f64::from(uv.y) * h as f64);
        if !(x >= 0.0 && x < w as f64 && y >= 0.0 && y < h as f64) {
            return Err(bad(
                mesh_path,
                format!("TEXCOORD_1 of vertex {v}"),
                format!("is ({}, {}), outside the {w} x {h} texture", uv.x, uv.y),
            ));
        }
        let (c, r) = (x.floor(), y.floor());
        if (x - c - 0.5).abs() > 0.05 || (y - r - 0.5).abs() > 0.05 {
            return Err(bad(
                mesh_path,
                format!("TEXCOORD_1 of vertex {v}"),
                format!(
                    "is ({}, {}), not a texel centre of the {w} x {h} texture: the mesh was not made for this texture",
                    uv.x, uv.y
                ),
            ));
        }
        col[v] = c as u32;
        row[v] = r as u32;
        rows = rows.max(r as usize + 1);
    }
    if rows == 0 {
        return Err(bad(mesh_path, "TEXCOORD_1", "no vertex reads the texture"));
    }
    Ok(Lookup { col, row, rows_per_frame: rows })
}

/// Checks that vertices reading one texel share their rest position (they are one vertex of the
/// source, split at a seam): a mesh whose vertices disagree was not baked with this texture.
pub(crate) fn check_shared_texels(mesh: &LookupMesh, lookup: &Lookup, mesh_path: &Path) -> Result<()> {
    let extent = bbox_extent(&mesh.positions);
    let tolerance = 1e-4 * extent.max(1e-6);
    let mut first: std::collections::HashMap<(u32, u32), usize> = std::collections::HashMap::new();
    for v in 0..mesh.positions.len() {
        if lookup.col[v] == u32::MAX {
            continue;
        }
        let u = *first.entry((lookup.col[v], lookup.row[v])).or_insert(v);
        let d = mesh.positions[u].distance(mesh.positions[v]);
        if d > tolerance {
            return Err(bad(
                mesh_path,
                format!("vertices {u} and {v}"),
                format!(
                    "read the same texel ({}, {}) but lie {d:.6} apart at rest: the mesh does not match the texture",
                    lookup.col[v], lookup.row[v]
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) fn bbox_extent(p: &[Vec3]) -> f32 {
    let (lo, hi) =
        p.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    (hi - lo).max_element().max(0.0)
}

/// Where an OpenVAT texture keeps a vertex's frames: OpenVAT wraps a bake that has more vertices
/// than columns in blocks of `F` rows (vertex `i` in column `i % W` of block `i / W`, its
/// `TEXCOORD_1` on the block's first row, frame `f` at that row plus `f`, one row a frame, as
/// OpenVAT's encoder lays the texels and its decoders step); a texture that packs its normals holds
/// them in its lower half (`H / 2` rows down, as the decoders sample at `v + 0.5`), past positions
/// that may not fill the upper half when OpenVAT rounded the height up to a power of two.
pub(crate) struct BlockLayout {
    /// The first row of the normals (packed), `None` without packed normals.
    pub(crate) normal_row: Option<usize>,
    /// A line for the notes when the texture has rows no frame uses.
    pub(crate) note: Option<String>,
}

/// Checks the rows `TEXCOORD_1` reads against OpenVAT's block layout ([`BlockLayout`]) and finds the
/// packed normals.
pub(crate) fn block_layout(
    files: &OpenVatFiles,
    lookup: &Lookup,
    mesh: &LookupMesh,
    texture: &Texture,
    frames: usize,
) -> Result<BlockLayout> {
    let h = texture.height;
    let mut blocks = 0usize;
    for v in 0..mesh.positions.len() {
        let row = lookup.row[v] as usize;
        if !row.is_multiple_of(frames) {
            return Err(bad(
                &files.mesh,
                format!("TEXCOORD_1 of vertex {v}"),
                format!(
                    "reads row {row}, which does not start a block of Frames = {frames} rows: OpenVAT wraps a bake in \
                     blocks of one row a frame, so a vertex's first frame is on row 0, {frames}, {}, ... (is Frames \
                     right, or the mesh made for another texture?)",
                    2 * frames
                ),
            ));
        }
        blocks = blocks.max(row / frames + 1);
    }
    let used = blocks * frames;
    let packed_name = named_packed(&files.texture);
    if h < used || (packed_name && h < 2 * used) {
        return Err(bad(
            &files.texture,
            "the texture's height",
            format!(
                "is {h} rows, but the sidecar says Frames = {frames} and TEXCOORD_1 uses {blocks} block(s) of rows: \
                 expected at least {used}{}",
                if packed_name {
                    format!(" twice over ({}), as the name says it packs normals", 2 * used)
                } else {
                    format!(" ({} with packed normals)", 2 * used)
                }
            ),
        ));
    }
    // Packed normals start halfway down; without them, rows past the frames are padding. A texture
    // not named packed that is tall enough for normals holds them when its lower half reads as unit
    // vectors where the vertices' normals would be (older OpenVAT versions padded plain textures).
    let unit = |v: usize, f: usize| {
        let t = texture.at(lookup.col[v] as usize, lookup.row[v] as usize + h / 2 + f);
        let n = Vec3::new(t[0], t[1], t[2]) * 2.0 - Vec3::ONE;
        n.is_finite() && (0.5..=1.5).contains(&n.length())
    };
    let packed =
        h >= 2 * used && (packed_name || (0..mesh.positions.len()).all(|v| (0..frames).all(|f| unit(v, f))));
    let spare = if packed { h - 2 * used } else { h - used };
    let note = (spare > 0).then(|| {
        format!(
            "the texture has {h} rows: {used} of positions{}, the other {spare} unused (OpenVAT rounds heights up to \
             a power of two)",
            if packed { format!(" and {used} of packed normals from row {}", h / 2) } else { String::new() }
        )
    });
    Ok(BlockLayout { normal_row: packed.then_some(h / 2), note })
}

/// How far outside `[0, 1]` a texel value may be before the bounds are called a lie (a half float's
/// step at 1, with margin).
const RANGE_SLACK: f32 = 1e-3;

/// Reads and decodes an OpenVAT bake folder into glTF-space frames (see the module docs).
///
/// # Errors
/// [`BakeError::Interop`] for missing files, a texture whose size disagrees with the sidecar
/// (`Frames`, `2 Frames` with packed normals) or with the mesh's `TEXCOORD_1`, a separate normal
/// texture of another size, texel values that are not finite or fall outside the sidecar's bounds,
/// clips outside the baked frames, a mesh that does not match the texture; [`BakeError::OverBudget`]
/// past `options.max_memory`; glTF errors of the mesh.
pub fn read_openvat(dir: &Path, options: &OpenVatOptions) -> Result<ImportedBake> {
    let files = locate(dir, options)?;
    let mut budget = Budget::new(options.max_memory);
    let side_bytes =
        super::read_file_scaled(&files.sidecar, "the sidecar", &mut budget, super::JSON_BYTES_PER_TEXT_BYTE)?;
    let info = parse_remap_info(&files.sidecar, &side_bytes)?;
    let texture = images::read_texture(&files.texture, "the position texture", &mut budget)?;
    let normal_texture = match (&files.normals, options.recompute_normals) {
        (Some(p), false) => Some(images::read_texture(p, "the normal texture", &mut budget)?),
        _ => None,
    };
    let mesh = super::read_lookup_mesh(&files.mesh, &mut budget)?;
    decode(&files, &info, &texture, normal_texture.as_ref(), &mesh, options, &mut budget)
}

/// Decodes parsed parts (split from [`read_openvat`] for the fuzz targets).
pub fn decode(
    files: &OpenVatFiles,
    info: &RemapInfo,
    texture: &Texture,
    normal_texture: Option<&Texture>,
    mesh: &LookupMesh,
    options: &OpenVatOptions,
    budget: &mut Budget,
) -> Result<ImportedBake> {
    let mut notes = info.notes.clone();
    notes.extend(files.mesh_note.clone());
    notes.extend(mesh.notes.iter().cloned());
    let (w, h, frames) = (texture.width, texture.height, info.frames);
    let lookup = lookup_texels(mesh, &files.mesh, w, h, &|_| false)?;
    let layout = block_layout(files, &lookup, mesh, texture, frames)?;
    notes.extend(layout.note.clone());
    let packed = layout.normal_row.is_some();
    check_shared_texels(mesh, &lookup, &files.mesh)?;
    if let Some(nt) = normal_texture
        && (nt.width != w || nt.height != h)
    {
        return Err(bad(
            files.normals.as_deref().unwrap_or(&files.texture),
            "the normal texture",
            format!("is {} x {}, the position texture {w} x {h}: they must match", nt.width, nt.height),
        ));
    }
    let n = mesh.positions.len();
    // Positions and normals per frame, the morph deltas made from them, the weights channels.
    let clip_keys = info.clips.len().max(1) as u64 * (frames as u64 + 1);
    budget.charge(
        "the decoded frames",
        (frames as u64)
            .saturating_mul(n as u64)
            .saturating_mul(48)
            .saturating_add(clip_keys.saturating_mul(frames as u64).saturating_mul(4)),
    )?;
    let min = Vec3::from(info.min);
    let range = Vec3::from(info.max) - min;
    let normal_matrices: Vec<Mat3> = mesh.linear.iter().map(|l| l.inverse().transpose()).collect();
    let normal_source = match (normal_texture, packed, options.recompute_normals) {
        (_, _, true) => None,
        (Some(nt), _, _) => Some((nt, 0usize)),
        (None, true, _) => Some((texture, layout.normal_row.unwrap_or(0))),
        (None, false, _) => None,
    };
    if packed && normal_texture.is_some() {
        notes.push(
            "the position texture also packs normals; those of the separate _vnrm texture were used".into(),
        );
    }
    let mut positions = Vec::with_capacity(frames);
    let mut normals = normal_source.map(|_| Vec::with_capacity(frames));
    for f in 0..frames {
        let mut pf = Vec::with_capacity(n);
        for v in 0..n {
            let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + f);
            let t = texture.at(c, row);
            let t3 = Vec3::new(t[0], t[1], t[2]);
            if !t3.is_finite() || t3.min_element() < -RANGE_SLACK || t3.max_element() > 1.0 + RANGE_SLACK {
                return Err(bad(
                    &files.texture,
                    format!("texel ({c}, {row})"),
                    format!(
                        "holds {t3}, outside [0, 1]: the sidecar's Min/Max do not bound the offsets (or the file is not an OpenVAT texture)"
                    ),
                ));
            }
            let offset = blender_to_gltf(min + t3 * range);
            let m = mesh.mesh_of[v] as usize;
            pf.push(mesh.positions[v] + mesh.linear[m] * offset);
        }
        positions.push(pf);
        if let (Some(all), Some((nt, base))) = (normals.as_mut(), normal_source) {
            let mut nf = Vec::with_capacity(n);
            for v in 0..n {
                let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + base + f);
                let t = nt.at(c, row);
                let raw = Vec3::new(t[0], t[1], t[2]) * 2.0 - Vec3::ONE;
                if !(raw.is_finite() && (0.5..=1.5).contains(&raw.length())) {
                    return Err(bad(
                        files.normals.as_deref().unwrap_or(&files.texture),
                        format!("texel ({c}, {row})"),
                        format!(
                            "holds {raw} as a normal, not a unit vector: {}",
                            if base > 0 {
                                "the rows there do not hold packed normals"
                            } else {
                                "not an OpenVAT normal texture"
                            }
                        ),
                    ));
                }
                let m = mesh.mesh_of[v] as usize;
                let normal =
                    (normal_matrices[m] * blender_to_gltf(raw)).try_normalize().ok_or_else(|| {
                        bad(
                            files.normals.as_deref().unwrap_or(&files.texture),
                            format!("texel ({c}, {row})"),
                            format!("holds {raw} as a normal: not a direction"),
                        )
                    })?;
                nf.push(normal);
            }
            all.push(nf);
        }
    }
    if normals.is_none() {
        notes.push(if options.recompute_normals {
            "normals recomputed per frame from the decoded positions (--recompute-normals)".to_owned()
        } else {
            "the bake has no normals (no _vnrm texture, no packed rows): recomputed per frame from the decoded positions".to_owned()
        });
    }
    // Clips: scene frames -> rows.
    let base = options.first_frame.unwrap_or(if info.clips.iter().any(|c| c.start == 0) { 0 } else { 1 });
    let mut clips = Vec::new();
    for c in &info.clips {
        let (first, last) = (c.start - base, c.end - base);
        if first < 0 || last >= frames as i64 {
            return Err(bad(
                &files.sidecar,
                format!("animations.{:?}", c.name),
                format!(
                    "frames {}..={} are rows {first}..={last} with the texture's first row as frame {base}, outside its {frames} frames (set the first row's frame with --first-frame)",
                    c.start, c.end
                ),
            ));
        }
        let fps = c.fps.unwrap_or(options.fps);
        if c.fps.is_none() {
            notes.push(format!("clip {:?} has no framerate: {fps} fps assumed (--fps)", c.name));
        }
        let looping = c.looping.unwrap_or(true);
        if c.looping.is_none() {
            notes.push(format!("clip {:?} does not say whether it loops: looping assumed", c.name));
        }
        clips.push(ImportedClip {
            name: c.name.clone(),
            first: first as usize,
            last: last as usize,
            fps,
            looping,
        });
    }
    if clips.is_empty() {
        notes.push(format!(
            "the sidecar has no clip table: one looping clip {:?} over all {frames} frames at {} fps (--fps)",
            files.name, options.fps
        ));
        clips.push(ImportedClip {
            name: files.name.clone(),
            first: 0,
            last: frames - 1,
            fps: options.fps,
            looping: true,
        });
    } else {
        notes.push(format!(
            "clip frames read with the texture's first row as scene frame {base} (row = frame - {base})"
        ));
    }
    clips.sort_by(|a, b| (a.first, a.last, &a.name).cmp(&(b.first, b.last, &b.name)));
    let step = texture.kind.half_step();
    let scale = mesh
        .linear
        .iter()
        .map(|l| l.x_axis.length().max(l.y_axis.length()).max(l.z_axis.length()))
        .fold(0.0f32, f32::max);
    let g = blender_to_gltf(range).abs() * step * scale;
    let fps = clips.first().map_or(options.fps, |c| c.fps);
    let sequence = MeshSequence {
        name: files.name.clone(),
        positions,
        normals,
        uvs: mesh.uvs.clone(),
        indices: mesh.indices.clone(),
        fps,
        notes: Vec::new(),
    };
    sequence.validate()?;
    Ok(ImportedBake { sequence, clips, source_step: g.to_array(), notes })
}

/// How normals are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormalsExport {
    /// In the position texture's rows `[F, 2F)` (height `2F`).
    Packed,
    /// In `<N>_vnrm.<ext>`, the same size and rows as `_vat`.
    Separate,
    /// Not exported (decoders keep the rest normals or recompute them).
    None,
}

#[path = "export_targets.rs"]
pub mod export_targets;
#[cfg(test)]
#[path = "tests_export_targets.rs"]
mod tests_export_targets;

pub use export_targets::ExportTarget;

/// What [`export_openvat`] writes: the engine it is for, and the texture format and normals layout
/// (by default the target's own, [`OpenVatExport::for_target`]; another choice is written as asked,
/// with a note saying what the target's decoder makes of it).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatExport {
    /// `--target`: whose decoder the files are laid out for (clip rows, offset space, lookup row).
    pub target: ExportTarget,
    /// `--format`.
    pub format: super::TextureFormat,
    /// `--normals`.
    pub normals: NormalsExport,
}

impl OpenVatExport {
    /// The texture format and normals layout `target`'s decoder reads
    /// ([`ExportTarget::format`], [`ExportTarget::normals`]).
    pub fn for_target(target: ExportTarget) -> Self {
        Self { target, format: target.format(), normals: target.normals() }
    }
}

impl Default for OpenVatExport {
    fn default() -> Self {
        Self::for_target(ExportTarget::Default)
    }
}

/// What an export wrote, and its error bound.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatWritten {
    /// The engine the files are laid out for.
    pub target: ExportTarget,
    /// The base name `N` of the files.
    pub name: String,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// Texture size (columns = vertices: the body's, then each exported attachment's).
    pub width: usize,
    /// Texture height (rows = `frames`, doubled with packed normals).
    pub height: usize,
    /// Rows of frames (`os-remap.Frames`): every stored frame of every clip, plus the rows the
    /// target's clip convention repeats ([`OpenVatWritten::row_frames`]).
    pub frames: usize,
    /// For each row of frames, the asset's frame it holds (frames counted clip after clip, as
    /// stored).
    pub row_frames: Vec<u32>,
    /// Vertices of the body (the first columns); the attachments' follow.
    pub body_vertices: usize,
    /// `os-remap.Min` (the target's offset axes and units: [`ExportTarget::offset_space`]).
    pub min: [f32; 3],
    /// `os-remap.Max`.
    pub max: [f32; 3],
    /// The largest error the target's decoder can see against vat's own decode, per glTF axis
    /// (metres): half the texture's step (as the engine holds it) times the range, plus f32 rounding.
    pub position_bound: [f32; 3],
    /// The step of the texture's values as the target's decoder reads them (a fraction of the
    /// range): the normals' quantum.
    pub texel_step: f32,
    /// One line for each thing the export left out or the target's decoder cannot take, with the
    /// reason.
    pub notes: Vec<String>,
}

/// The most columns (vertices) or rows an exported texture may have: the texture size every engine
/// template accepts, and vat's own [`crate::prepare::MAX_TEXTURE_DIM`].
pub const MAX_EXPORT_DIM: usize = crate::prepare::MAX_TEXTURE_DIM as usize;

/// Writes a `.vat` asset as an OpenVAT bake in `dir` (created if missing), every file atomically:
/// `<N>_vat.<ext>`, `<N>_vnrm.<ext>` (separate normals), `<N>-remap_info.json` and `<N>.glb`, `N`
/// the asset's name, laid out for `options.target` (see [`ExportTarget`] for what each engine's
/// decoder reads). Every stored frame of every clip, decoded by vat's CPU reference, becomes a row
/// (clips in texture order, listed in that order in the sidecar); each vertex a column, the rest
/// mesh's (LOD 0) and then each attachment's, placed per frame by its socket's captured transform.
/// Offsets are from the asset's rest positions (its rest stream, else frame 0; an attachment's
/// frame 0); `Min`/`Max` are their exact per-axis extremes. The glb holds that mesh with
/// `TEXCOORD_1` on each vertex's column in the first row and `TEXCOORD_0` when the asset has UVs.
/// What is left out is named in [`OpenVatWritten::notes`].
///
/// # Errors
/// [`BakeError::Interop`] when the asset has no vertex animation texture (a rigid, sprite or fluid
/// asset is named as such), or more vertices or rows than [`MAX_EXPORT_DIM`]; [`BakeError::Core`]
/// for decode failures and for the write gate's refusals ([`vat_core::files::PendingFolder`]: `dir`
/// is a link, a file or a device) and write failures, after which nothing is left.
pub fn export_openvat(
    asset: &vat_core::container::Asset<'_>,
    dir: &Path,
    options: &OpenVatExport,
) -> Result<OpenVatWritten> {
    export_targets::export(asset, dir, options)
}

/// A `.glb` with one mesh: POSITION (with min/max), NORMAL, TEXCOORD_0 when given, TEXCOORD_1 and
/// u32 indices, on one node with no transform.
pub fn lookup_glb(
    name: &str,
    positions: &[Vec3],
    normals: &[Vec3],
    uv0: Option<&[[f32; 2]]>,
    uv1: &[[f32; 2]],
    indices: &[u32],
) -> Result<Vec<u8>> {
    lookup_glb_with_sets(name, positions, normals, &[uv0, Some(uv1)], indices)
}

/// [`lookup_glb`] with any texture-coordinate sets: `sets[k]`, when given, is `TEXCOORD_k`.
pub fn lookup_glb_with_sets(
    name: &str,
    positions: &[Vec3],
    normals: &[Vec3],
    sets: &[Option<&[[f32; 2]]>],
    indices: &[u32],
) -> Result<Vec<u8>> {
    use serde_json::json;
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut push = |bytes: Vec<u8>,
                    count: usize,
                    ty: &str,
                    component: u32,
                    target: u32,
                    bounds: Option<(Vec3, Vec3)>|
     -> usize {
        let offset = bin.len();
        bin.extend_from_slice(&bytes);
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        views.push(json!({"buffer": 0, "byteOffset": offset, "byteLength": bytes.len(), "target": target}));
        let mut a =
            json!({"bufferView": views.len() - 1, "componentType": component, "count": count, "type": ty});
        if let Some((lo, hi)) = bounds {
            a["min"] = json!(lo.to_array());
            a["max"] = json!(hi.to_array());
        }
        accessors.push(a);
        accessors.len() - 1
    };
    let floats =
        |vals: &mut dyn Iterator<Item = f32>| -> Vec<u8> { vals.flat_map(f32::to_le_bytes).collect() };
    let (lo, hi) = positions
        .iter()
        .fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    const FLOAT: u32 = 5126;
    const UINT: u32 = 5125;
    const ARRAY: u32 = 34962;
    const ELEMENTS: u32 = 34963;
    let n = positions.len();
    let pos = push(
        floats(&mut positions.iter().flat_map(|p| p.to_array())),
        n,
        "VEC3",
        FLOAT,
        ARRAY,
        Some((lo, hi)),
    );
    let nrm = push(floats(&mut normals.iter().flat_map(|p| p.to_array())), n, "VEC3", FLOAT, ARRAY, None);
    let mut attributes = json!({"POSITION": pos, "NORMAL": nrm});
    for (k, uv) in sets.iter().enumerate() {
        if let Some(uv) = uv {
            attributes[format!("TEXCOORD_{k}")] =
                json!(push(floats(&mut uv.iter().flatten().copied()), n, "VEC2", FLOAT, ARRAY, None));
        }
    }
    let idx = push(
        indices.iter().flat_map(|i| i.to_le_bytes()).collect(),
        indices.len(),
        "SCALAR",
        UINT,
        ELEMENTS,
        None,
    );
    let doc = json!({
        "asset": {"version": "2.0", "generator": "vat export-openvat"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": name}],
        "meshes": [{"name": name, "primitives": [{"attributes": attributes, "indices": idx, "mode": 4}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": views,
        "accessors": accessors,
    });
    let mut json_bytes =
        serde_json::to_vec(&doc).map_err(|e| bad(Path::new(name), "the glb", e.to_string()))?;
    while !json_bytes.len().is_multiple_of(4) {
        json_bytes.push(b' ');
    }
    let total = 12 + 8 + json_bytes.len() + 8 + bin.len();
    let total = u32::try_from(total).map_err(|_| bad(Path::new(name), "the glb", "would be over 4 GiB"))?;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&(json_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&json_bytes);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    Ok(out)
}
