//! Options and the remap-info sidecar; Blender and glTF axes.

use super::*;

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

pub(super) fn integer(v: &Value) -> Option<i64> {
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
    let (root, fixed) = crate::interop::lenient_json(path, bytes)?;
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
                        Some(f) if crate::interop::is_source_fps(f) => Some(f as f32),
                        _ => {
                            return Err(bad(
                                path,
                                format!("{part}.framerate"),
                                crate::interop::source_fps_problem(v),
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
