//! SideFX Labs "Vertex Animation Textures" 3 (Houdini) bakes: import ([`read_houdini`],
//! [`read_houdini_dynamic_mesh`], [`read_houdini_particles`]).
//!
//! The files of a bake named `N`:
//!
//! | file | holds |
//! |---|---|
//! | `<N>_data.json` | an array of one object: `VAT Type` (`Softbody`, `Rigidbody`, ...), `Bound Min X/Y/Z`, `Bound Max X/Y/Z`, `Frame Count`, `Houdini FPS`, `Use HDR Textures` (0: LDR PNG, 1: HDR EXR), `Two Position Textures`, ... |
//! | `<N>_pos.exr` / `.png` | one block of rows per frame (frame 0 = first scanline), one texel per point (soft body) or per piece (rigid body). Soft body: the offset from the rest mesh, as it is (HDR) or as RGB = `(offset - Bound Min) / (Bound Max - Bound Min)` (LDR). Rigid body: see [`ImportedRigidBake`]'s module |
//! | `<N>_rot` | soft body: normals (not read: normals are recomputed); rigid body: the pieces' rotations |
//! | `<N>_col` | per-frame colours (not read, said in a `note:`) |
//! | `<N>_mesh.glb` | the rest mesh, Y up (Houdini's axes are glTF's: no swizzle), each vertex's texel in `TEXCOORD_1`; rigid bodies: each piece's rest pivot in `TEXCOORD_2.x`, `TEXCOORD_3.xy` |
//! | `<N>_mesh.obj` | soft bodies, when there is no glTF: an OBJ has no lookup UVs, so point `i` (its `v` statement) reads texel `i` of a frame's rows, VAT 3's point order (said in a `note:`); up to 6 points past the texels, in triangles of their own, are the bounds extenders |
//!
//! Files are found by these names in the folder and its direct subfolders (VAT 3 groups them into
//! `geo/`, `tex/` and `data/` by default); [`HoudiniFiles`] names any of them instead.
//!
//! The mesh's bounds-extender vertices (`TEXCOORD_1.y` past the frames' rows, as VAT 3's shaders
//! test; on the bounding-box corners so engines do not cull the moving mesh) read no texel and are
//! left out with their triangles (a `note:`). PNG values are raw (`byte / 255`) whatever the `sRGB`
//! chunk says.
//!
//! In scope: `Softbody` (decoded to every vertex's frames, [`HoudiniBake::Softbody`]) and HDR
//! `Rigidbody` (decoded to pieces and transforms for vat's rigid mode, [`HoudiniBake::Rigidbody`]:
//! VAT 3's rigid layout, its shaders' decode and the in-between frames are described in
//! `houdini_rigid.rs`, summarised on [`ImportedRigidBake`]) and `DynamicMesh` (decoded to frames
//! of changing topology for vat's fluid mode, [`read_houdini_dynamic_mesh`]: its lookup-table
//! layout is described on [`ImportedFluidBake`]'s module, `houdini_fluid.rs`) and `Particles`
//! (decoded to frames of square camera-facing cards for vat's sprite mode,
//! [`read_houdini_particles`], described in `houdini_sprite.rs`). Refused with a typed
//! error naming what to do: LDR rigid bodies, `Two Position Textures`, pieces
//! that scale, VAT 2 bakes without `_data.json` (parameters in an engine material), FBX-only meshes
//! (convert them to glTF, or OBJ for a soft body), OBJ meshes of rigid bodies (no pivots).

use std::path::{Path, PathBuf};

use glam::Vec3;
use serde_json::Value;

pub use super::houdini_fluid::{HOUDINI_FLUID_EXTENDER_V, ImportedFluidBake};
pub use super::houdini_rigid::{
    HOUDINI_RIGID_MAX_SUBSTEPS, HOUDINI_RIGID_TURN_TOLERANCE_DEG, ImportedRigidBake,
};
pub use super::houdini_sprite::{HOUDINI_ORIGIN_RADIUS, HOUDINI_PARTICLE_SIZE, ImportedSpriteBake};
use super::openvat::{file_name, find_all, find_named, listed, search_folders, shown};
use super::{Budget, ImportedBake, ImportedClip, bad, images, number};
use crate::Result;
use crate::sequence::{MAX_SEQUENCE_FRAMES, MeshSequence};

/// How a Houdini bake is read.
#[derive(Debug, Clone, PartialEq)]
pub struct HoudiniOptions {
    /// Memory budget of the read (files, decoded textures, frames).
    pub max_memory: u64,
    /// Files named instead of found by VAT 3's naming.
    pub files: HoudiniFiles,
    /// Particle bakes: the card edge at scale 1, metres (VAT 3's material's *Particle Width Base
    /// Scale*, not in the files; default [`HOUDINI_PARTICLE_SIZE`]).
    pub particle_size: f32,
    /// Rigid-body bakes: frames baked per source frame (`None`: the fewest, at most
    /// [`HOUDINI_RIGID_MAX_SUBSTEPS`], that keep vat's in-between turns within
    /// [`HOUDINI_RIGID_TURN_TOLERANCE_DEG`] of VAT 3's; see [`ImportedRigidBake::substeps`]).
    pub substeps: Option<u32>,
}

impl Default for HoudiniOptions {
    fn default() -> Self {
        Self {
            max_memory: crate::prepare::DEFAULT_MAX_MEMORY,
            files: HoudiniFiles::default(),
            particle_size: HOUDINI_PARTICLE_SIZE,
            substeps: None,
        }
    }
}

/// A Houdini bake as it imports.
#[derive(Debug, Clone, PartialEq)]
pub enum HoudiniBake {
    /// `Softbody`: every vertex's decoded frames.
    Softbody(ImportedBake),
    /// `Rigidbody`: the pieces and their transforms, for vat's rigid mode.
    Rigidbody(ImportedRigidBake),
}

/// The `_data.json` parameters that the import uses.
#[derive(Debug, Clone, PartialEq)]
pub struct HoudiniData {
    /// `VAT Type`.
    pub vat_type: String,
    /// `Bound Min X/Y/Z`.
    pub min: [f32; 3],
    /// `Bound Max X/Y/Z`.
    pub max: [f32; 3],
    /// `Frame Count`.
    pub frames: usize,
    /// `Houdini FPS`.
    pub fps: f32,
    /// `Use HDR Textures` when present: HDR textures hold values as they are (positions, rotations),
    /// LDR ones `[0, 1]` codes remapped by the bounds. Absent: an EXR is HDR, a PNG LDR.
    pub hdr: Option<bool>,
    /// `Two Position Textures` (absent: no).
    pub two_position_textures: bool,
}

/// Parses `_data.json` bytes (an array of one object, or the object itself).
///
/// # Errors
/// [`BakeError::Interop`](crate::BakeError::Interop) naming the key that is missing or out of range.
pub fn parse_data_json(path: &Path, bytes: &[u8]) -> Result<HoudiniData> {
    let (root, _) = super::lenient_json(path, bytes)?;
    let object = match &root {
        Value::Array(items) => items.first().and_then(Value::as_object),
        Value::Object(o) => Some(o),
        _ => None,
    }
    .ok_or_else(|| bad(path, "the JSON", "is not an array holding one object of VAT parameters"))?;
    let num = |key: &str| -> Result<f64> {
        object
            .get(key)
            .and_then(number)
            .filter(|x| x.is_finite() && x.abs() < 1e30)
            .ok_or_else(|| bad(path, key, "is missing or not a finite number"))
    };
    let vat_type = match object.get("VAT Type").and_then(Value::as_str) {
        Some(t) => t.to_owned(),
        // The older ROPs' file: one bound for all axes (`posMin`, `posMax`) and `numOfFrames`.
        None if ["numOfFrames", "posMax", "posMin"].iter().any(|k| object.contains_key(*k)) => {
            return Err(bad(
                path,
                "VAT Type",
                "is missing: this is the data file of a VAT 1 or 2 bake (numOfFrames, posMin, posMax), whose \
                 layout vat does not read; only SideFX Labs VAT 3 bakes are imported (re-export with the Labs \
                 Vertex Animation Textures 3 ROP)",
            ));
        }
        None => return Err(bad(path, "VAT Type", "is missing")),
    };
    let min = [num("Bound Min X")? as f32, num("Bound Min Y")? as f32, num("Bound Min Z")? as f32];
    let max = [num("Bound Max X")? as f32, num("Bound Max Y")? as f32, num("Bound Max Z")? as f32];
    if let Some(a) = (0..3).find(|&a| max[a] < min[a]) {
        return Err(bad(path, "Bound Max", format!("{max:?} is below Bound Min {min:?} on axis {a}")));
    }
    let frames = num("Frame Count")?;
    if frames.fract() != 0.0 || frames < 1.0 || frames > MAX_SEQUENCE_FRAMES as f64 {
        return Err(bad(
            path,
            "Frame Count",
            format!("is {frames}: need a whole number in 1..={MAX_SEQUENCE_FRAMES}"),
        ));
    }
    let fps = num("Houdini FPS")?;
    if !super::is_source_fps(fps) {
        return Err(bad(path, "Houdini FPS", super::source_fps_problem(fps)));
    }
    let flag = |key: &str| -> Result<Option<bool>> {
        object
            .get(key)
            .map(|v| super::boolean(v).ok_or_else(|| bad(path, key, format!("is {v}: need 0 or 1"))))
            .transpose()
    };
    let hdr = flag("Use HDR Textures")?;
    let two_position_textures = flag("Two Position Textures")?.unwrap_or(false);
    Ok(HoudiniData {
        vat_type,
        min,
        max,
        frames: frames as usize,
        fps: fps as f32,
        hdr,
        two_position_textures,
    })
}

/// Files of a bake named on the command line (`vat import-houdini`'s `--data`, `--pos`, `--rot`,
/// `--col`, `--lookup`, `--mesh`), for folders whose names discovery cannot read; each `None` is
/// found by VAT 3's naming ([`read_houdini`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HoudiniFiles {
    /// `<N>_data.json`.
    pub data: Option<PathBuf>,
    /// `<N>_pos.exr|png`.
    pub pos: Option<PathBuf>,
    /// `<N>_rot.exr|png`.
    pub rot: Option<PathBuf>,
    /// `<N>_col.exr|png`.
    pub col: Option<PathBuf>,
    /// `<N>_lookup.exr|png` (dynamic-mesh bakes).
    pub lookup: Option<PathBuf>,
    /// `<N>_mesh.glb|gltf` (or `.obj` for a soft body).
    pub mesh: Option<PathBuf>,
}

/// A bake folder as discovery found it: its name, its `_data.json`, where to look for the rest.
pub(crate) struct Located {
    dir: PathBuf,
    pub(crate) name: String,
    pub(crate) json: PathBuf,
    folders: Vec<PathBuf>,
    /// How files were found where it is not by their plain names.
    pub(crate) notes: Vec<String>,
}

/// `N` of `<N><suffix>` (suffix compared without case).
fn strip_suffix_nocase(name: &str, suffix: &str) -> Option<String> {
    let cut = name.len().checked_sub(suffix.len())?;
    (name.is_char_boundary(cut) && name[cut..].eq_ignore_ascii_case(suffix)).then(|| name[..cut].to_owned())
}

/// Finds a bake's `_data.json` in `dir` and its direct subfolders (VAT 3 groups its files into
/// `geo/`, `tex/` and `data/` by default), or takes the one `files.data` names.
pub(crate) fn locate(dir: &Path, files: &HoudiniFiles) -> Result<Located> {
    if !dir.is_dir() {
        return Err(bad(dir, "the bake", "is not a folder (give the folder holding the VAT files)"));
    }
    let folders = search_folders(dir)?;
    let json = match &files.data {
        Some(p) => p.clone(),
        None => {
            let found = find_all(&folders, &|n| n.ends_with("_data.json"))?;
            match found.as_slice() {
                [one] => one.clone(),
                [] => {
                    let mat = find_all(&folders, &|n| n.ends_with(".mat"))?;
                    let fbx = find_all(&folders, &|n| n.ends_with(".fbx"))?;
                    return Err(bad(
                        dir,
                        "the bake",
                        match (mat.first(), fbx.first()) {
                            (Some(m), Some(f)) if find_all(&folders, &|n| n.ends_with("_mat.mat"))?.is_empty() => {
                                format!(
                                    "has no <N>_data.json: a SideFX Labs VAT 2 bake keeps its parameters in an engine \
                                     material ({}) and its mesh in {}; only VAT 3 bakes are read (re-export with the VAT 3 \
                                     ROP, or convert the mesh to glTF)",
                                    shown(dir, m),
                                    shown(dir, f)
                                )
                            }
                            _ => "has no <N>_data.json (looked in the folder and its subfolders): VAT 3 writes it only \
                                  with \"Allow Exporting Real-Time Data JSON File\" on (its parameters are otherwise in the \
                                  mesh's bounds, which vat does not read); re-export with it, or name the file with --data"
                                .to_owned(),
                        },
                    ));
                }
                many => {
                    return Err(bad(
                        dir,
                        "the bake",
                        format!(
                            "has {} *_data.json files ({}); give a folder with one bake, or name one with --data",
                            many.len(),
                            listed(dir, many)
                        ),
                    ));
                }
            }
        }
    };
    let json_name = file_name(&json);
    let name = strip_suffix_nocase(&json_name, "_data.json")
        .or_else(|| {
            let pos = file_name(files.pos.as_deref()?);
            strip_suffix_nocase(&pos, "_pos.exr").or_else(|| strip_suffix_nocase(&pos, "_pos.png"))
        })
        .unwrap_or_else(|| json.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
    // The JSON's own folder first, then the others.
    let first: Vec<PathBuf> =
        json.parent().filter(|p| p.is_dir()).map(Path::to_path_buf).into_iter().collect();
    let folders = first.iter().cloned().chain(folders.into_iter().filter(|f| !first.contains(f))).collect();
    Ok(Located { dir: dir.to_path_buf(), name, json, folders, notes: Vec::new() })
}

impl Located {
    /// The texture of `kind` (`pos`, `rot`, `col`, `lookup`): `given`, else `<N>_<kind>.exr|png`, else
    /// the only `*_<kind>.exr|png` (a note); `None` when there is none.
    pub(crate) fn texture(
        &mut self,
        kind: &str,
        given: Option<&PathBuf>,
        flag: &str,
    ) -> Result<Option<PathBuf>> {
        if let Some(g) = given {
            return Ok(Some(g.clone()));
        }
        let n = &self.name;
        if let Some(p) = find_named(&self.folders, &[format!("{n}_{kind}.exr"), format!("{n}_{kind}.png")])? {
            return Ok(Some(p));
        }
        let (exr, png) = (format!("_{kind}.exr"), format!("_{kind}.png"));
        let any = find_all(&self.folders, &|f| f.ends_with(&exr) || f.ends_with(&png))?;
        match any.as_slice() {
            [] => Ok(None),
            [one] => {
                self.notes.push(format!(
                    "the _{kind} texture is {} (the only *_{kind} texture; {n}_{kind}.exr|png is not there)",
                    shown(&self.dir, one)
                ));
                Ok(Some(one.clone()))
            }
            many => Err(bad(
                &self.dir.join(format!("{n}_{kind}.exr")),
                format!("the _{kind} texture"),
                format!(
                    "is ambiguous: {n}_{kind}.exr|png is not there and {} *_{kind} textures are ({}); name one with {flag}",
                    many.len(),
                    listed(&self.dir, many)
                ),
            )),
        }
    }

    /// [`Located::texture`], required: its absence is an error saying what was looked for, `why`
    /// the bake needs it and the option that names it.
    pub(crate) fn required(
        &mut self,
        kind: &str,
        given: Option<&PathBuf>,
        what: &str,
        flag: &str,
        why: &str,
    ) -> Result<PathBuf> {
        self.texture(kind, given, flag)?.ok_or_else(|| {
            let n = &self.name;
            bad(
                &self.dir.join(format!("{n}_{kind}.exr")),
                what,
                format!(
                    "is missing{why}: looked for {n}_{kind}.exr, {n}_{kind}.png, then the only *_{kind}.exr|png, in the \
                     folder and its subfolders; name it with {flag}"
                ),
            )
        })
    }

    /// The mesh: `given`, else `<N>_mesh.glb|gltf` (and `.obj` when `obj` allows it), else the only
    /// glTF (a note). `rigid` says the refusal of an OBJ-only rigid body.
    pub(crate) fn mesh(&mut self, given: Option<&PathBuf>, obj: bool, rigid: bool) -> Result<PathBuf> {
        if let Some(g) = given {
            return Ok(g.clone());
        }
        let n = self.name.clone();
        let mut names = vec![format!("{n}_mesh.glb"), format!("{n}_mesh.gltf")];
        if obj {
            names.push(format!("{n}_mesh.obj"));
        }
        if let Some(p) = find_named(&self.folders, &names)? {
            return Ok(p);
        }
        let gltfs = find_all(&self.folders, &|f| f.ends_with(".glb") || f.ends_with(".gltf"))?;
        if let [one] = gltfs.as_slice() {
            self.notes.push(format!(
                "the mesh is {} (the only glTF; {n}_mesh.glb is not there)",
                shown(&self.dir, one)
            ));
            return Ok(one.clone());
        }
        let glb = self.dir.join(format!("{n}_mesh.glb"));
        let looked = format!("looked for {} in the folder and its subfolders", names.join(", "));
        if rigid && find_named(&self.folders, &[format!("{n}_mesh.obj")])?.is_some() {
            return Err(bad(
                &glb,
                "the mesh",
                format!(
                    "is missing; {n}_mesh.obj cannot carry each piece's rest pivot (TEXCOORD_2, TEXCOORD_3): export the \
                     mesh as glTF ({n}_mesh.glb), or name a glTF with --mesh"
                ),
            ));
        }
        let fbx = find_all(&self.folders, &|f| f.ends_with(".fbx"))?;
        let problem = if !gltfs.is_empty() {
            format!(
                "is ambiguous: {looked}, found none and {} other glTF files ({}); name one with --mesh",
                gltfs.len(),
                listed(&self.dir, &gltfs)
            )
        } else if let Some(f) = fbx.first() {
            format!(
                "is missing; vat does not read FBX ({}): export the mesh as glTF ({n}_mesh.glb, uv2 as TEXCOORD_1){} or \
                 name it with --mesh",
                shown(&self.dir, f),
                if obj { " or OBJ" } else { "" }
            )
        } else {
            format!("is missing: {looked} and found no glTF; name it with --mesh")
        };
        Err(bad(&glb, "the mesh", problem))
    }
}

/// Refuses a `VAT Type` other than `Softbody` and `Rigidbody`, naming what is imported.
pub fn check_in_scope(json_path: &Path, data: &HoudiniData) -> Result<()> {
    let problem = match data.vat_type.as_str() {
        "Softbody" | "Rigidbody" => return Ok(()),
        "DynamicMesh" => "is \"DynamicMesh\": read_houdini imports only Softbody and Rigidbody bakes; a dynamic \
                          mesh imports into vat's fluid mode (read_houdini_dynamic_mesh; vat import-houdini does so)"
            .to_owned(),
        "Particles" => "is \"Particles\": read_houdini imports only Softbody and Rigidbody bakes; a particle bake \
                        imports into vat's sprite mode (read_houdini_particles; vat import-houdini does so)"
            .to_owned(),
        other => format!(
            "is {other:?}: VAT 3 writes Softbody, Rigidbody, DynamicMesh and Particles bakes, and vat imports those four"
        ),
    };
    Err(bad(json_path, "VAT Type", problem))
}

/// Reads the `_data.json` of `dir` and refuses a bake whose `VAT Type` is not `want`, naming the
/// reader for the type it is.
fn read_typed(dir: &Path, options: &HoudiniOptions, want: &str) -> Result<(Located, HoudiniData, Budget)> {
    let located = locate(dir, &options.files)?;
    let mut budget = Budget::new(options.max_memory);
    let data = read_data_json(&located.json, &mut budget)?;
    if data.vat_type != want {
        if data.vat_type == "Softbody" || data.vat_type == "Rigidbody" {
            return Err(bad(
                &located.json,
                "VAT Type",
                format!("is {:?}, not {want:?}: read it with read_houdini", data.vat_type),
            ));
        }
        check_in_scope(&located.json, &data)?;
    }
    Ok((located, data, budget))
}

/// Reads and decodes a `DynamicMesh` bake folder (VAT 3's "Dynamic Remeshing (Fluid)" mode) into
/// frames for vat's fluid mode: the layout and its decode are described on
/// [`ImportedFluidBake`]'s module (`houdini_fluid.rs`): a lookup table maps each corner of a pool of
/// triangles to a point of each frame, whose position and normal the `_pos` and `_rot` textures
/// hold. Files as [`read_houdini`] finds them, and `<N>_lookup.exr|png` (`--lookup`).
///
/// # Errors
/// [`BakeError::Interop`](crate::BakeError::Interop) for missing files, another `VAT Type`, `Two
/// Position Textures`, a lookup table the mesh's `TEXCOORD_0` and `Frame Count` do not describe, a
/// lookup texel pointing outside the position texture, non-finite texels, LDR positions outside
/// `[0, 1]`, rotations that turn +Y onto no direction; [`BakeError::OverBudget`](crate::BakeError::OverBudget)
/// past the budget; glTF errors of the mesh.
pub fn read_houdini_dynamic_mesh(dir: &Path, options: &HoudiniOptions) -> Result<ImportedFluidBake> {
    let (mut located, data, mut budget) = read_typed(dir, options, "DynamicMesh")?;
    let files = &options.files;
    let lookup_path = located.required(
        "lookup",
        files.lookup.as_ref(),
        "the lookup table",
        "--lookup",
        ": a DynamicMesh bake maps each corner to its point of each frame there",
    )?;
    let pos_path = located.required("pos", files.pos.as_ref(), "the position texture", "--pos", "")?;
    let rot_path = located.texture("rot", files.rot.as_ref(), "--rot")?;
    let col_path = located.texture("col", files.col.as_ref(), "--col")?;
    let mesh_path = located.mesh(files.mesh.as_ref(), false, false)?;
    let lookup = images::read_texture(&lookup_path, "the lookup table", &mut budget)?;
    let pos = images::read_texture(&pos_path, "the position texture", &mut budget)?;
    let rot = match rot_path {
        Some(p) => Some((images::read_texture(&p, "the rotation texture", &mut budget)?, p)),
        None => None,
    };
    let mesh_bytes = super::read_file(&mesh_path, "the mesh", &mut budget)?;
    let parts = super::houdini_fluid::FluidParts {
        name: &located.name,
        data: &data,
        json_path: &located.json,
        mesh_path: &mesh_path,
        mesh_bytes: &mesh_bytes,
        lookup_path: &lookup_path,
        lookup,
        pos_path: &pos_path,
        pos,
        rot,
        has_colour: col_path.is_some(),
    };
    let mut bake = super::houdini_fluid::decode(parts, &mut budget)?;
    bake.notes.splice(0..0, std::mem::take(&mut located.notes));
    Ok(bake)
}

/// The `_data.json` of a bake folder, parsed (what [`read_houdini`] reads first).
///
/// # Errors
/// As [`read_houdini`] for the folder and the JSON.
pub fn read_data(dir: &Path) -> Result<HoudiniData> {
    read_data_in(dir, &HoudiniFiles::default())
}

/// [`read_data`] with the files named in `files` (`--data`).
///
/// # Errors
/// As [`read_houdini`] for the folder and the JSON.
pub fn read_data_in(dir: &Path, files: &HoudiniFiles) -> Result<HoudiniData> {
    let json_path = locate(dir, files)?.json;
    let mut budget = Budget::fixed(4 << 20, "a VAT 3 _data.json holds a few KB; this one is not one");
    read_data_json(&json_path, &mut budget)
}

/// Reads and parses the `_data.json` at `json_path`, its text charged to `budget` as parsed JSON.
fn read_data_json(json_path: &Path, budget: &mut Budget) -> Result<HoudiniData> {
    let bytes =
        super::read_file_scaled(json_path, "the VAT parameters", budget, super::JSON_BYTES_PER_TEXT_BYTE)?;
    parse_data_json(json_path, &bytes)
}

/// Whether a texture holds values as they are (HDR) or `[0, 1]` codes: `Use HDR Textures` when the
/// JSON has it, else the file's kind; an 8/16-bit PNG cannot be HDR.
pub(crate) fn texture_is_hdr(data: &HoudiniData, path: &Path, texture: &images::Texture) -> Result<bool> {
    let float = !matches!(texture.kind, images::SampleKind::Unorm(_));
    match data.hdr {
        Some(true) if !float => Err(bad(
            path,
            "the texture",
            "is an 8/16-bit PNG, but Use HDR Textures is 1 (HDR bakes write float EXRs)",
        )),
        Some(hdr) => Ok(hdr),
        None => Ok(float),
    }
}

/// Whether a vertex is one of the bounds extenders VAT 3 adds (`TEXCOORD_1.y` past the first frame's
/// rows and within half a frame of the texture's end, as its shaders test): it reads no texel.
pub(crate) fn is_padding_vertex(lookup: glam::Vec2, frames: usize) -> bool {
    let f = frames.max(1) as f32;
    lookup.y >= 1.0 / f && lookup.y > 1.0 - 0.5 / f
}

/// The part of a texture a bake fills, `(columns, rows)` from the top-left texel, and a note when it
/// is less than the texture. VAT 3's ROP can pad its textures to powers of two; it then rounds the
/// bounds to 0.1 and encodes the filled share past that in their decimals, as its shaders decode
/// it: columns `1 - (ceil(10 Bound Min Z) - 10 Bound Min Z)` of the width, rows likewise from
/// `Bound Max X`. Bounds on whole tenths (to 1e-4, so that f32 rounding reads as whole) fill it.
///
/// # Errors
/// [`BakeError::Interop`](crate::BakeError::Interop) when the encoded share is not a whole number of texels.
pub(crate) fn active_area(
    data: &HoudiniData,
    path: &Path,
    w: usize,
    h: usize,
) -> Result<(usize, usize, Option<String>)> {
    let share = |bound: f32| {
        let s = f64::from(bound) * 10.0;
        let gap = s.ceil() - s;
        if !(1e-4..=1.0 - 1e-4).contains(&gap) { 1.0 } else { 1.0 - gap }
    };
    let area = |share: f64, size: usize, what: &str, key: &str| -> Result<usize> {
        let n = share * size as f64;
        if (n - n.round()).abs() > 0.05 || n.round() < 1.0 {
            return Err(bad(
                path,
                "the texture",
                format!(
                    "is {size} {what}, but {key}'s decimals say the bake fills {share:.5} of it ({n:.2} {what}), \
                     not a whole number: the bounds do not describe this texture"
                ),
            ));
        }
        Ok(n.round() as usize)
    };
    let columns = area(share(data.min[2]), w, "columns", "Bound Min Z")?;
    let rows = area(share(data.max[0]), h, "rows", "Bound Max X")?;
    let note = ((columns, rows) != (w, h)).then(|| {
        format!(
            "the texture is padded: the bake fills its top-left {columns} x {rows} texels of {w} x {h} (the share VAT 3 \
             encodes in the bounds' decimals)"
        )
    });
    Ok((columns, rows, note))
}

/// The texture height a bake of `frames` frames at `rows` rows per frame needs.
pub(crate) fn check_height(path: &Path, h: usize, frames: usize, rows: usize) -> Result<()> {
    if h != frames * rows {
        return Err(bad(
            path,
            "the texture's height",
            format!(
                "is {h} rows, but Frame Count is {frames} and TEXCOORD_1 uses {rows} row(s) per frame: expected {}",
                frames * rows
            ),
        ));
    }
    Ok(())
}

/// The most points past a frame's texels an OBJ mesh may have: VAT 3's bounds extenders, two
/// triangles.
const OBJ_EXTENDER_POINTS: usize = 6;

/// A soft body's OBJ mesh as a [`super::LookupMesh`]: an OBJ carries no lookup UVs, so point `i`
/// (its `v` statement, 0-based) reads texel `i` of a frame's block of rows, row by row, as VAT 3
/// numbers its points; up to [`OBJ_EXTENDER_POINTS`] points past the texels, in triangles of their
/// own, are bounds extenders (left out like the glTF ones).
fn obj_lookup_mesh(
    bytes: &[u8],
    path: &Path,
    w: usize,
    h: usize,
    frames: usize,
) -> Result<super::LookupMesh> {
    let obj = crate::sequence::read_obj_points(path, bytes)?;
    let rows = h / frames.max(1);
    if rows == 0 || rows * frames != h {
        return Err(bad(
            path,
            "the mesh",
            format!("cannot be laid on a {w} x {h} texture of {frames} frames"),
        ));
    }
    let texels = w * rows;
    let n = obj.point_count;
    let extenders = n.saturating_sub(texels);
    // One row: as many points as columns; wrapped rows: the last row partly used.
    let fewest = if rows == 1 { w } else { texels - w + 1 };
    if n < fewest || extenders > OBJ_EXTENDER_POINTS {
        return Err(bad(
            path,
            "the mesh",
            format!(
                "has {n} points, but the texture holds {texels} a frame ({w} x {rows}): point i reads texel i in an \
                 OBJ, so this is not the texture's mesh"
            ),
        ));
    }
    let extender = |p: u32| p as usize >= texels;
    if let Some(t) = obj.indices.chunks_exact(3).position(|t| {
        let e = t.iter().filter(|&&v| extender(obj.point_of[v as usize])).count();
        e != 0 && e != 3
    }) {
        return Err(bad(
            path,
            format!("triangle {t}"),
            format!(
                "joins points past the texture's {texels} texels with points on it: not bounds extenders"
            ),
        ));
    }
    let lookup = obj
        .point_of
        .iter()
        .map(|&p| {
            if extender(p) {
                glam::Vec2::new(0.0, 1.0)
            } else {
                let (c, r) = (p as usize % w, p as usize / w);
                glam::Vec2::new((c as f32 + 0.5) / w as f32, (r as f32 + 0.5) / h as f32)
            }
        })
        .collect();
    let count = obj.positions.len();
    let mut notes: Vec<String> = obj.notes.iter().map(|n| format!("{}: {n}", path.display())).collect();
    notes.push(format!(
        "{}: an OBJ has no lookup UVs: point i reads texel i of a frame's rows, in VAT 3's point order (nothing in \
         the files can confirm that order; a glTF mesh's TEXCOORD_1 can)",
        path.display()
    ));
    Ok(super::LookupMesh {
        positions: obj.positions,
        // Soft-body normals are recomputed from the decoded frames; the rest normals go unused.
        normals: obj.normals.unwrap_or_else(|| vec![Vec3::Y; count]),
        uvs: obj.uvs,
        lookup,
        indices: obj.indices,
        mesh_of: vec![0; count],
        linear: vec![glam::Mat3::IDENTITY],
        matrix: vec![glam::Mat4::IDENTITY],
        colors: None,
        notes,
    })
}

/// Reads and decodes a `Particles` bake folder (VAT 3's "Particle Sprites (Sprite)" mode) into
/// frames for vat's sprite mode: one square card per particle, its centre, scale and colour from the
/// `_pos` and `_col` textures at the card's `TEXCOORD_1` texel, as described on
/// [`ImportedSpriteBake`]'s module (`houdini_sprite.rs`). Files as [`read_houdini`] finds them
/// (`_rot` is not read: VAT 3's particles have no rotation texture).
///
/// # Errors
/// [`BakeError::Interop`](crate::BakeError::Interop) for missing files, another `VAT Type`, `Two
/// Position Textures`, a texture whose size disagrees with `Frame Count` or the mesh's `TEXCOORD_1`,
/// cards that are not VAT 3's square (four corners of the unit square in `TEXCOORD_0`), triangles
/// across cards, non-finite texels, LDR centres outside `[0, 1]`, negative scales;
/// [`BakeError::InvalidOption`](crate::BakeError::InvalidOption) for a bad
/// [`HoudiniOptions::particle_size`]; [`BakeError::OverBudget`](crate::BakeError::OverBudget) past
/// the budget; glTF errors of the mesh.
pub fn read_houdini_particles(dir: &Path, options: &HoudiniOptions) -> Result<ImportedSpriteBake> {
    let (mut located, data, mut budget) = read_typed(dir, options, "Particles")?;
    let files = &options.files;
    let pos_path = located.required("pos", files.pos.as_ref(), "the position texture", "--pos", "")?;
    let col_path = located.texture("col", files.col.as_ref(), "--col")?;
    let mesh_path = located.mesh(files.mesh.as_ref(), false, false)?;
    let pos = images::read_texture(&pos_path, "the position texture", &mut budget)?;
    let col = match col_path {
        Some(p) => Some((images::read_texture(&p, "the colour texture", &mut budget)?, p)),
        None => None,
    };
    let mesh = super::read_lookup_mesh(&mesh_path, &mut budget)?;
    let parts = super::houdini_sprite::SpriteParts {
        name: &located.name,
        data: &data,
        json_path: &located.json,
        mesh_path: &mesh_path,
        mesh: &mesh,
        pos_path: &pos_path,
        pos,
        col,
        card_size: options.particle_size,
    };
    let mut bake = super::houdini_sprite::decode(parts)?;
    bake.notes.splice(0..0, std::mem::take(&mut located.notes));
    Ok(bake)
}

/// Reads and decodes a Houdini VAT 3 bake folder (see the module docs): a `Softbody` bake into
/// its frames, a `Rigidbody` bake into its pieces and their transforms.
///
/// # Errors
/// [`BakeError::Interop`](crate::BakeError::Interop) for missing files, an out-of-scope `VAT Type`, a texture whose size
/// disagrees with `Frame Count` or the mesh's `TEXCOORD_1`, non-finite texels, and for rigid
/// bakes the checks of [`ImportedRigidBake`]; [`BakeError::OverBudget`](crate::BakeError::OverBudget) past the budget; glTF
/// errors of the mesh.
pub fn read_houdini(dir: &Path, options: &HoudiniOptions) -> Result<HoudiniBake> {
    let mut located = locate(dir, &options.files)?;
    let (name, json_path) = (located.name.clone(), located.json.clone());
    let mut budget = Budget::new(options.max_memory);
    let data = read_data_json(&json_path, &mut budget)?;
    check_in_scope(&json_path, &data)?;
    let rigid = data.vat_type == "Rigidbody";
    let files = &options.files;
    let texture_path = located.required("pos", files.pos.as_ref(), "the position texture", "--pos", "")?;
    let rot_path = if rigid {
        Some(located.required(
            "rot",
            files.rot.as_ref(),
            "the rotation texture",
            "--rot",
            ": a Rigidbody bake keeps its pieces' rotations there",
        )?)
    } else {
        None
    };
    let mesh_path = located.mesh(files.mesh.as_ref(), !rigid, rigid)?;
    let col_path = located.texture("col", files.col.as_ref(), "--col")?;
    let texture = images::read_texture(&texture_path, "the position texture", &mut budget)?;
    let mesh_bytes = super::read_file(&mesh_path, "the mesh", &mut budget)?;
    let is_obj = mesh_path.extension().is_some_and(|e| e.eq_ignore_ascii_case("obj"));
    let mesh = if is_obj {
        let (w, h, _) = active_area(&data, &texture_path, texture.width, texture.height)?;
        obj_lookup_mesh(&mesh_bytes, &mesh_path, w, h, data.frames)?
    } else {
        super::lookup_mesh_from_bytes(&mesh_bytes, &mesh_path, &mut budget)?
    };
    let has_colour = col_path.is_some();
    if let Some(rot_path) = rot_path {
        let rot = images::read_texture(&rot_path, "the rotation texture", &mut budget)?;
        let pivots = super::houdini_rigid::pivot_uvs(&mesh_bytes, &mesh_path, &budget)?;
        drop(mesh_bytes);
        let parts = super::houdini_rigid::RigidParts {
            name: &name,
            data: &data,
            json_path: &json_path,
            pos_path: &texture_path,
            pos: &texture,
            rot_path: &rot_path,
            rot: &rot,
            mesh_path: &mesh_path,
            mesh: &mesh,
            pivots: &pivots,
            has_colour,
        };
        let mut bake = super::houdini_rigid::decode(&parts, options.substeps, &mut budget)?;
        bake.notes.splice(0..0, located.notes);
        return Ok(HoudiniBake::Rigidbody(bake));
    }
    drop(mesh_bytes);
    let mut bake = decode(&name, &data, &texture_path, &texture, &mesh_path, &mesh, &mut budget)?;
    bake.notes.splice(0..0, located.notes);
    if has_colour {
        bake.notes
            .push(format!("{name}_col (per-frame colours) is not read: the mesh keeps its own colours"));
    }
    Ok(HoudiniBake::Softbody(bake))
}

/// Decodes a soft-body bake's parsed parts: the position texture read through the mesh's lookup
/// coordinates into frames (split from the file reader for the fuzz targets).
pub fn decode(
    name: &str,
    data: &HoudiniData,
    texture_path: &Path,
    texture: &images::Texture,
    mesh_path: &Path,
    mesh: &super::LookupMesh,
    budget: &mut Budget,
) -> Result<ImportedBake> {
    let mut notes = mesh.notes.clone();
    let (w, h) = (texture.width, texture.height);
    let hdr = texture_is_hdr(data, texture_path, texture)?;
    let frames = data.frames;
    let padding = |v: usize| is_padding_vertex(mesh.lookup[v], frames);
    let (w, h, padded) = active_area(data, texture_path, w, h)?;
    notes.extend(padded);
    let lookup = super::openvat::lookup_texels(mesh, mesh_path, w, h, &padding)?;
    let r = lookup.rows_per_frame;
    check_height(texture_path, h, frames, r)?;
    // Keep the vertices that read the texture, and the triangles made of them only.
    let kept: Vec<usize> = (0..mesh.positions.len()).filter(|&v| lookup.col[v] != u32::MAX).collect();
    let mut new_index = vec![u32::MAX; mesh.positions.len()];
    for (i, &v) in kept.iter().enumerate() {
        new_index[v] = i as u32;
    }
    let mut indices = Vec::with_capacity(mesh.indices.len());
    for t in mesh.indices.chunks_exact(3) {
        let m = [new_index[t[0] as usize], new_index[t[1] as usize], new_index[t[2] as usize]];
        if m.iter().all(|&i| i != u32::MAX) {
            indices.extend_from_slice(&m);
        }
    }
    let left_out = mesh.positions.len() - kept.len();
    if left_out > 0 {
        notes.push(format!(
            "{left_out} bounds-extender vertices (TEXCOORD_1 past the frames' rows, no texel) and {} triangles using them left out",
            (mesh.indices.len() - indices.len()) / 3
        ));
    }
    let n = kept.len();
    budget.charge(
        "the decoded frames",
        (frames as u64)
            .saturating_mul(n as u64)
            .saturating_mul(48)
            .saturating_add((frames as u64 + 1).saturating_mul(frames as u64).saturating_mul(4)),
    )?;
    let min = Vec3::from(data.min);
    let range = Vec3::from(data.max) - min;
    let mut positions = Vec::with_capacity(frames);
    let mut channel_max = Vec3::ZERO;
    let mut abs_max = Vec3::ZERO;
    for f in 0..frames {
        let mut pf = Vec::with_capacity(n);
        for &v in &kept {
            let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + f * r);
            let t = texture.at(c, row);
            let t3 = Vec3::new(t[0], t[1], t[2]);
            if !t3.is_finite() {
                return Err(bad(
                    texture_path,
                    format!("texel ({c}, {row})"),
                    format!("holds {t3}: not finite"),
                ));
            }
            // HDR texels are the offsets themselves; LDR ones codes in [0, 1] over the bounds.
            let offset = if hdr {
                abs_max = abs_max.max(t3.abs());
                t3
            } else {
                if t3.min_element() < -1e-3 || t3.max_element() > 1.0 + 1e-3 {
                    return Err(bad(
                        texture_path,
                        format!("texel ({c}, {row})"),
                        format!("holds {t3}, outside [0, 1]: the bounds do not hold the offsets"),
                    ));
                }
                channel_max = channel_max.max(t3);
                min + t3 * range
            };
            let m = mesh.mesh_of[v] as usize;
            pf.push(mesh.positions[v] + mesh.linear[m] * offset);
        }
        positions.push(pf);
    }
    for (a, axis) in ["R (x)", "G (y)", "B (z)"].iter().enumerate() {
        if !hdr && channel_max[a] == 0.0 && range[a] > 0.0 {
            notes.push(format!(
                "channel {axis} of {} is 0 in every texel: that offset is Bound Min {} everywhere (Houdini's LDR soft-body bounds bug); imported as stored",
                texture_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                data.min[a]
            ));
        }
    }
    notes.push(
        "normals recomputed per frame from the decoded positions (the _rot texture is not read)".into(),
    );
    notes.push(format!(
        "one looping clip {name:?} over all {frames} frames at {} fps (Houdini FPS)",
        data.fps
    ));
    let uvs = mesh.uvs.as_ref().map(|uv| kept.iter().map(|&v| uv[v]).collect());
    let scale = mesh
        .linear
        .iter()
        .map(|l| l.x_axis.length().max(l.y_axis.length()).max(l.z_axis.length()))
        .fold(0.0f32, f32::max);
    // A code's half step over the range (LDR); half a float's spacing at the largest offset (HDR).
    let step =
        if hdr { abs_max * 2.0 * texture.kind.half_step() } else { range.abs() * texture.kind.half_step() };
    let step = (step * scale).to_array();
    let sequence = MeshSequence {
        name: name.to_owned(),
        positions,
        normals: None,
        uvs,
        indices,
        fps: data.fps,
        notes: Vec::new(),
    };
    sequence.validate()?;
    let clips = vec![ImportedClip {
        name: name.to_owned(),
        first: 0,
        last: frames - 1,
        fps: data.fps,
        looping: true,
    }];
    Ok(ImportedBake { sequence, clips, source_step: step, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzz seed's quad with its texture replaced: `texels` (4 x 3, RGB) as a float EXR, and
    /// its `Use HDR Textures` flag set to `hdr`.
    fn quad_with(texels: &[[f32; 3]], hdr: &str, exr: bool) -> Result<ImportedBake> {
        let seed = crate::fuzzing::houdini_seed();
        let (json, png, glb) = crate::fuzzing::split_openvat_parts(&seed).unwrap();
        let json = String::from_utf8(json.to_vec()).unwrap().replace("\"Use HDR Textures\": 0", hdr);
        let data = parse_data_json(Path::new("q_data.json"), json.as_bytes())?;
        let mut budget = Budget::new(1 << 26);
        let (path, texture) = if exr {
            let bytes = images::encode_texture(images::TextureFormat::Exr32, 4, 3, texels)?;
            (Path::new("q_pos.exr"), images::decode_exr(&bytes, Path::new("q_pos.exr"), &mut budget)?)
        } else {
            (Path::new("q_pos.png"), images::decode_png(png, Path::new("q_pos.png"), &mut budget)?)
        };
        let mesh = super::super::lookup_mesh_from_bytes(glb, Path::new("q_mesh.glb"), &mut budget)?;
        decode("q", &data, path, &texture, Path::new("q_mesh.glb"), &mesh, &mut budget)
    }

    #[test]
    fn hdr_soft_bodies_hold_their_offsets_as_they_are_and_ldr_ones_codes() {
        // Offsets outside [0, 1], as an HDR bake stores them.
        let texels: Vec<[f32; 3]> = (0..12).map(|i| [-2.5 + i as f32, 0.25 * i as f32, 3.0]).collect();
        for flag in ["\"Use HDR Textures\": 1", "\"Other\": 0"] {
            // The flag, or (absent) the file's kind: an EXR is HDR.
            let b = quad_with(&texels, flag, true).unwrap();
            let rest = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
            for f in 0..3 {
                for (v, r) in rest.iter().enumerate() {
                    assert_eq!(
                        b.sequence.positions[f][v],
                        *r + Vec3::from(texels[f * 4 + v]),
                        "{flag}: frame {f} vertex {v}"
                    );
                }
            }
            // The source's step: half a float's spacing at the largest offset.
            assert!(b.source_step[0] > 0.0 && b.source_step[0] < 1e-6, "{:?}", b.source_step);
        }
        // The same texels read as LDR codes lie outside [0, 1]: the bounds do not hold them.
        let e = quad_with(&texels, "\"Use HDR Textures\": 0", true).unwrap_err().to_string();
        assert!(e.contains("outside [0, 1]"), "{e}");
        // An 8/16-bit PNG cannot be HDR.
        let e = quad_with(&texels, "\"Use HDR Textures\": 1", false).unwrap_err().to_string();
        assert!(e.contains("PNG") && e.contains("Use HDR Textures is 1"), "{e}");
        let e = quad_with(&texels, "\"Use HDR Textures\": 7", true).unwrap_err().to_string();
        assert!(e.contains("need 0 or 1"), "{e}");
    }

    #[test]
    fn a_vat_2_data_file_is_refused_as_one() {
        // The older ROPs' keys (as a public three.js demo's Houdini export has them).
        let old =
            br#"[{"Name": "Soft", "numOfFrames": 239, "packNorm": 0, "posMax": 928.5, "posMin": -453.0}]"#;
        let e = parse_data_json(Path::new("v_data.json"), old).expect_err("a VAT 2 file").to_string();
        assert!(e.contains("VAT 1 or 2") && e.contains("Vertex Animation Textures 3 ROP"), "{e}");
        // Neither kind's keys: only the missing key.
        let e = parse_data_json(Path::new("v_data.json"), br#"[{"Name": "Soft"}]"#)
            .expect_err("no VAT Type")
            .to_string();
        assert!(e.contains("VAT Type") && !e.contains("VAT 1 or 2"), "{e}");
    }
}
