//! SideFX Labs "Vertex Animation Textures" 3 (Houdini) bakes: import ([`read_houdini`]).
//!
//! The files of a bake named `N`:
//!
//! | file | holds |
//! |---|---|
//! | `<N>_data.json` | an array of one object: `VAT Type` (`Softbody`, ...), `Bound Min X/Y/Z`, `Bound Max X/Y/Z`, `Frame Count`, `Houdini FPS`, `Use HDR Textures` (0: PNG), ... |
//! | `<N>_pos.exr` / `.png` | one row per frame (frame 0 = first scanline), one column per point; RGB = `(offset - Bound Min) / (Bound Max - Bound Min)`, the offset from the rest mesh |
//! | `<N>_rot`, `<N>_col` | rotation/normal and colour data (not read: normals are recomputed) |
//! | `<N>_mesh.glb` | the rest mesh, Y up (Houdini's axes are glTF's: no swizzle), each vertex's texel in `TEXCOORD_1` |
//!
//! The mesh's bounds-extender vertices (`TEXCOORD_1 = (0, 1)`, on the bounding-box corners so engines
//! do not cull the moving mesh) read no texel and are left out with their triangles (a `note:`). PNG
//! values are raw (`byte / 255`) whatever the `sRGB` chunk says.
//!
//! In scope: `Softbody`. Refused with a typed error naming what to do: other `VAT Type`s
//! (`Rigidbody`, `Particles`, `DynamicMesh`), VAT 2 bakes without `_data.json` (parameters in an
//! engine material), FBX-only meshes (convert them to glTF).

use std::path::{Path, PathBuf};

use glam::Vec3;
use serde_json::Value;

use super::{Budget, ImportedBake, ImportedClip, bad, existing, images, number};
use crate::sequence::{MAX_SEQUENCE_FRAMES, MeshSequence};
use crate::{BakeError, Result};

/// How a Houdini bake is read.
#[derive(Debug, Clone, PartialEq)]
pub struct HoudiniOptions {
    /// Memory budget of the read (files, decoded textures, frames).
    pub max_memory: u64,
}

impl Default for HoudiniOptions {
    fn default() -> Self {
        Self { max_memory: crate::prepare::DEFAULT_MAX_MEMORY }
    }
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
}

/// Parses `_data.json` bytes (an array of one object, or the object itself).
///
/// # Errors
/// [`BakeError::Interop`] naming the key that is missing or out of range.
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
    let vat_type = object
        .get("VAT Type")
        .and_then(Value::as_str)
        .ok_or_else(|| bad(path, "VAT Type", "is missing"))?
        .to_owned();
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
    if !(fps > 0.0 && fps <= 1e4) {
        return Err(bad(path, "Houdini FPS", format!("is {fps}: need a positive rate")));
    }
    Ok(HoudiniData { vat_type, min, max, frames: frames as usize, fps: fps as f32 })
}

fn locate(dir: &Path) -> Result<(String, PathBuf)> {
    if !dir.is_dir() {
        return Err(bad(dir, "the bake", "is not a folder (give the folder holding the VAT files)"));
    }
    let io = |e| BakeError::Io { path: dir.to_path_buf(), source: e };
    let mut found = Vec::new();
    let mut fbx = None;
    let mut mat = None;
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(stem) = name.strip_suffix("_data.json") {
            found.push((stem.to_owned(), path.clone()));
        }
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".fbx") {
            fbx = Some(name.clone());
        }
        if lower.ends_with(".mat") {
            mat = Some(name.clone());
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(bad(
            dir,
            "the bake",
            match (mat, fbx) {
                (Some(m), Some(f)) => format!(
                    "has no <N>_data.json: a SideFX Labs VAT 2 bake keeps its parameters in an engine material ({m}) and its mesh in {f}; only VAT 3 bakes are read (re-export with the VAT 3 ROP, or convert the mesh to glTF)"
                ),
                _ => "has no <N>_data.json: is it a SideFX Labs VAT 3 bake?".to_owned(),
            },
        )),
        n => Err(bad(dir, "the bake", format!("has {n} *_data.json files; give a folder with one bake"))),
    }
}

/// Refuses a `VAT Type` other than `Softbody`, naming what is imported.
pub(crate) fn check_in_scope(json_path: &Path, data: &HoudiniData) -> Result<()> {
    if data.vat_type != "Softbody" {
        return Err(bad(
            json_path,
            "VAT Type",
            format!(
                "is {:?}: only Softbody bakes are imported (rigid-body, particle and dynamic-mesh bakes are not)",
                data.vat_type
            ),
        ));
    }
    Ok(())
}

/// Reads and decodes a Houdini VAT 3 soft-body bake folder (see the module docs).
///
/// # Errors
/// [`BakeError::Interop`] for missing files, an out-of-scope `VAT Type`, a texture whose size
/// disagrees with `Frame Count` or the mesh's `TEXCOORD_1`, non-finite texels; [`BakeError::OverBudget`]
/// past the budget; glTF errors of the mesh.
pub fn read_houdini(dir: &Path, options: &HoudiniOptions) -> Result<ImportedBake> {
    let (name, json_path) = locate(dir)?;
    let mut budget = Budget::new(options.max_memory);
    let bytes = super::read_file(&json_path, "the VAT parameters", &mut budget)?;
    let data = parse_data_json(&json_path, &bytes)?;
    check_in_scope(&json_path, &data)?;
    let texture_path = existing(dir, &format!("{name}_pos.exr"))
        .or_else(|| existing(dir, &format!("{name}_pos.png")))
        .ok_or_else(|| bad(&dir.join(format!("{name}_pos.png")), "the position texture", "is missing"))?;
    let mesh_path = existing(dir, &format!("{name}_mesh.glb"))
        .or_else(|| existing(dir, &format!("{name}_mesh.gltf")))
        .ok_or_else(|| {
            let other = ["fbx", "obj"].into_iter().find(|e| existing(dir, &format!("{name}_mesh.{e}")).is_some());
            bad(
                &dir.join(format!("{name}_mesh.glb")),
                "the mesh",
                match other {
                    Some(e) => format!("is missing; {name}_mesh.{e} cannot carry the lookup UVs vat reads: export the mesh as glTF ({name}_mesh.glb, uv2 as TEXCOORD_1)"),
                    None => "is missing".to_owned(),
                },
            )
        })?;
    let texture = images::read_texture(&texture_path, "the position texture", &mut budget)?;
    let mesh = super::read_lookup_mesh(&mesh_path, &mut budget)?;
    decode(&name, &data, &texture_path, &texture, &mesh_path, &mesh, &mut budget)
}

pub(crate) fn decode(
    name: &str,
    data: &HoudiniData,
    texture_path: &Path,
    texture: &images::Texture,
    mesh_path: &Path,
    mesh: &super::LookupMesh,
    budget: &mut Budget,
) -> Result<ImportedBake> {
    let mut notes = Vec::new();
    let (w, h) = (texture.width, texture.height);
    // Bounds extenders: TEXCOORD_1 at (0, 1), outside every texel centre.
    let extender = |v: usize| mesh.lookup[v].y >= 1.0 && mesh.lookup[v].x <= 0.0;
    let lookup = super::openvat::lookup_texels(mesh, mesh_path, w, h, &extender)?;
    let r = lookup.rows_per_frame;
    let frames = data.frames;
    if h != frames * r {
        return Err(bad(
            texture_path,
            "the texture's height",
            format!(
                "is {h} rows, but Frame Count is {frames} and TEXCOORD_1 uses {r} row(s) per frame: expected {}",
                frames * r
            ),
        ));
    }
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
            "{left_out} bounds-extender vertices (TEXCOORD_1 = (0, 1), no texel) and {} triangles using them left out",
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
    for f in 0..frames {
        let mut pf = Vec::with_capacity(n);
        for &v in &kept {
            let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + f * r);
            let t = texture.at(c, row);
            let t3 = Vec3::new(t[0], t[1], t[2]);
            if !t3.is_finite() || t3.min_element() < -1e-3 || t3.max_element() > 1.0 + 1e-3 {
                return Err(bad(
                    texture_path,
                    format!("texel ({c}, {row})"),
                    format!("holds {t3}, outside [0, 1]: the bounds do not hold the offsets"),
                ));
            }
            channel_max = channel_max.max(t3);
            let m = mesh.mesh_of[v] as usize;
            pf.push(mesh.positions[v] + mesh.linear[m] * (min + t3 * range));
        }
        positions.push(pf);
    }
    for (a, axis) in ["R (x)", "G (y)", "B (z)"].iter().enumerate() {
        if channel_max[a] == 0.0 && range[a] > 0.0 {
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
    let step = (range.abs() * texture.kind.half_step() * scale).to_array();
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
