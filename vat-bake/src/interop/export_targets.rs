//! `vat export-openvat --target`: the layout each engine's published OpenVAT decoder reads, and the
//! export that writes it (behind [`super::export_openvat`]).
//!
//! What each decoder does, as read in its source (the tests transcribe each one's arithmetic,
//! `tests_export_targets.rs`):
//!
//! | target | decoder read | texture as the engine holds it | normals | clip rows | mesh and offsets |
//! |---|---|---|---|---|---|
//! | `unity` | sharpen3d's OpenVAT Unity package 1.1.0 (`OpenVAT_Unity1.1.0.unitypackage`: `OpenVATEditor.cs`, `VATAnimStateMachine.cs`, sub-graphs `ov_packed_pos-nrml`, `ov_separate_pos-nrml`, `ov_simple`) | imported uncompressed, point-filtered, no mipmaps; an EXR as half floats | the default shader (`advanced_packed`) reads them at `uv.y - 0.5` (the lower half) | 1-based, inclusive, `row = frame - 1`; a loop wraps `end -> start`; clips picked by index (the sidecar's order) or name | object position `+ (-x, y, z) * 0.01` of the stored offset: the object space of a Blender FBX import. For a glb (glTFast or UnityGLTF: X negated, V flipped) the offsets are written in glTF axes, centimetres |
//! | `godot` | antzGames' OpenVAT-for-Godot addon (`openvat_singleton.gdshader`, `openvat_instanced.gdshader`, `open_vat_multi_mesh_instance_3d.gd`) | a 16-bit PNG is read at 8 bits (Godot's PNG driver); EXR as half floats | packed: the lower half (`v + 0.5`), frames = height / 2 | 1-based (`startFrame - 1`); a loop plays `start .. end - 1` and blends into `end`, a one-shot jumps to `end` once the next frame reaches it, so each clip gets one closing row (a loop's first frame, a one-shot's last); clips picked by index (sidecar order) or name; `framerate` read as a whole number | `UV2` (glTF `TEXCOORD_1`), `VERTEX += (x, z, -y)` of the Blender offset |
//! | `bevy` | HK416's bevy_open_vat 0.20 (`openvat_common.wesl`, `asset.rs`, `texture.rs`) | EXR loaded as `Rgba32Float`, then converted to `Rgba16Unorm` (`round(v * 65535)`) | packed: `height / 2` rows down | 0-based; row `start` is a boundary never shown: a loop shows `end`, `start + 1`, ..., `end - 1`; a one-shot `start + 1 ..= end`; clips picked by name (a map) | `TEXCOORD_1` texel by `textureLoad`, offset `(x, z, -y)` |
//! | `three` | meverett's openvat-threejs-viewer (`MeshStandardMaterialOpenVAT.js`, three.js `EXRLoader`) | EXR only, as half floats, scanlines bottom-up (`height - 1 - y`), linear filtering | not decoded (the shader's normal code is commented out) | none: every row in turn at its Speed | `uv1 + (0, 1 - f / H)`: one row above the texel centre of `TEXCOORD_1`, so the export puts `TEXCOORD_1.v` half a row above the texture |
//! | `unreal` | sharpen3d's `OpenVAT_Unreal.zip` (`OpenVAT_Basic.uasset`, a UE 5.4 material) | not read: a binary asset vat cannot parse here | - | - | - |
//!
//! The default target is the layout most of them play: half-float EXR, packed normals, a 1-based
//! sidecar in texture order, offsets in Blender axes for the glb.

use std::path::Path;

use glam::{Mat3, Vec3};
use vat_core::container::{Asset, ElementFormat, StreamKind};

use super::super::{TextureFormat, bad, images};
use super::{
    MAX_EXPORT_DIM, NormalsExport, OpenVatExport, OpenVatWritten, SIDECAR_SUFFIX, blender_to_gltf,
    gltf_to_blender, lookup_glb,
};
use crate::Result;

/// Whose OpenVAT decoder an export is laid out for (`vat export-openvat --target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ExportTarget {
    /// What most decoders play: half-float EXR, packed normals, 1-based clips in texture order,
    /// offsets in Blender axes (OpenVAT's own output from Blender).
    #[default]
    Default,
    /// sharpen3d's Unity package (URP shader graphs): the glb's offsets in the glTF importer's
    /// object space, centimetres.
    Unity,
    /// sharpen3d's Unreal material: its asset could not be read, so the default layout with a note.
    Unreal,
    /// antzGames' Godot addon: looping clips end on their first frame again.
    Godot,
    /// bevy_open_vat: 0-based clips with a boundary row, 32-bit EXR (the plugin keeps 16 bits).
    Bevy,
    /// The three.js OpenVAT viewer: positions only, `TEXCOORD_1` half a row above the texture.
    Three,
}

/// How a target's decoder counts clip frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClipRows {
    /// 1-based, inclusive: `row = frame - 1`; a loop wraps from `endFrame` to `startFrame`.
    OneBased,
    /// 1-based, each clip one row longer: a loop's first frame again after its last, a one-shot's
    /// last frame again (`endFrame` one row past the clip's last frame).
    OneBasedClosed,
    /// 0-based, each clip one row longer: a boundary row first (a one-shot), or its first frame again
    /// last (a loop).
    ZeroBasedBoundary,
}

/// The axes and unit of the stored offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpace {
    /// Blender object space, metres: glTF `(x, y, z)` is stored `(x, -z, y)`.
    Blender,
    /// glTF axes, centimetres: what Unity's OpenVAT shader (`(-x, y, z) * 0.01` in object space)
    /// needs under a glTF importer that negates X.
    GltfCentimetres,
}

impl ExportTarget {
    /// Every target, in `--target` order.
    pub const ALL: [ExportTarget; 6] = [
        ExportTarget::Default,
        ExportTarget::Unity,
        ExportTarget::Unreal,
        ExportTarget::Godot,
        ExportTarget::Bevy,
        ExportTarget::Three,
    ];

    /// The `--target` name.
    pub fn name(self) -> &'static str {
        match self {
            ExportTarget::Default => "default",
            ExportTarget::Unity => "unity",
            ExportTarget::Unreal => "unreal",
            ExportTarget::Godot => "godot",
            ExportTarget::Bevy => "bevy",
            ExportTarget::Three => "three",
        }
    }

    /// The texture format the target's decoder reads best: 32-bit EXR for bevy_open_vat (which keeps
    /// 16 bits of it), half-float EXR for the others (Godot reads a 16-bit PNG at 8 bits, the three.js
    /// viewer reads only EXR, Unity's package imports EXR as half floats).
    pub fn format(self) -> TextureFormat {
        match self {
            ExportTarget::Bevy => TextureFormat::Exr32,
            _ => TextureFormat::Exr16,
        }
    }

    /// The normals layout the target's decoder reads: packed in the lower half (Unity's default
    /// shader, Godot, Bevy), none for the three.js viewer (it does not decode them).
    pub fn normals(self) -> NormalsExport {
        match self {
            ExportTarget::Three => NormalsExport::None,
            _ => NormalsExport::Packed,
        }
    }

    /// How the sidecar counts clip frames for this target.
    pub(crate) fn clip_rows(self) -> ClipRows {
        match self {
            ExportTarget::Godot => ClipRows::OneBasedClosed,
            ExportTarget::Bevy => ClipRows::ZeroBasedBoundary,
            _ => ClipRows::OneBased,
        }
    }

    /// The axes and unit of the stored offsets.
    pub fn offset_space(self) -> OffsetSpace {
        match self {
            ExportTarget::Unity => OffsetSpace::GltfCentimetres,
            _ => OffsetSpace::Blender,
        }
    }

    /// `TEXCOORD_1.v` of the first row, in rows: the texel centre (0.5), except for the three.js
    /// viewer, which samples `1 - f / H` above it with the texture loaded bottom-up (-0.5 lands frame
    /// `f` on the centre of row `f`).
    pub(crate) fn lookup_row(self) -> f32 {
        match self {
            ExportTarget::Three => -0.5,
            _ => 0.5,
        }
    }

    /// The extra step (a fraction of the range, half a quantum) the engine adds when it loads a
    /// texture of `format`, and `None` when its decoder cannot read that format meaningfully.
    pub(crate) fn load_step(self, format: TextureFormat) -> Option<f32> {
        match (self, format) {
            // Godot's PNG driver converts 16-bit components to 8 bits; three.js' viewer loads every
            // texture with EXRLoader.
            (ExportTarget::Godot | ExportTarget::Three, TextureFormat::Png16) => None,
            // EXRLoader's default type and Godot's EXR loader keep half floats; Unity's uncompressed
            // HDR import is RGBA half.
            (ExportTarget::Godot | ExportTarget::Three | ExportTarget::Unity, TextureFormat::Exr32) => {
                Some(images::SampleKind::Half.half_step())
            }
            // bevy_open_vat converts Rgba32Float to Rgba16Unorm (a 16-bit PNG loads as Rgba16Unorm).
            (ExportTarget::Bevy, TextureFormat::Exr16 | TextureFormat::Exr32) => {
                Some(images::SampleKind::Unorm(16).half_step())
            }
            _ => Some(0.0),
        }
    }

    /// One line each for what this target's decoder does not take from an export of `format` and
    /// `normals` (empty when it takes all of it).
    pub(crate) fn notes(self, format: TextureFormat, normals: NormalsExport) -> Vec<String> {
        let mut notes = Vec::new();
        let engine = self.engine();
        if self.load_step(format).is_none() {
            notes.push(match self {
                ExportTarget::Godot => format!(
                    "--format {}: Godot's PNG driver reads 16-bit components as 8 bits (8-bit steps of the range): use \
                     exr16, which it keeps as half floats",
                    format_name(format)
                ),
                _ => format!(
                    "--format {}: the three.js viewer loads every texture with EXRLoader, so it cannot read a PNG: use \
                     exr16",
                    format_name(format)
                ),
            });
        }
        match (self, normals) {
            (ExportTarget::Three, NormalsExport::Packed | NormalsExport::Separate) => notes.push(
                "normals: the three.js viewer does not decode them (its normal code is commented out; it lights the \
                 rest normals), and it counts the texture's height as rows of frames, so packed normals play as frames"
                    .to_owned(),
            ),
            (ExportTarget::Three, NormalsExport::None) => notes.push(
                "normals not exported: the three.js viewer does not decode them (it lights the glb's rest normals)"
                    .to_owned(),
            ),
            (ExportTarget::Godot, NormalsExport::Separate | NormalsExport::None) => notes.push(format!(
                "--normals {}: {engine} reads normals from the texture's lower half and plays height / 2 frames, so \
                 it plays half the frames and lights positions as normals: use packed",
                normals_name(normals)
            )),
            (ExportTarget::Bevy, NormalsExport::Separate | NormalsExport::None) => notes.push(format!(
                "--normals {}: {engine} reads normals height / 2 rows down and no _vnrm texture, so it lights \
                 positions as normals: use packed",
                normals_name(normals)
            )),
            (ExportTarget::Unity, NormalsExport::Separate) => notes.push(
                "--normals separate: choose the package's openvat-advanced_separate shader (its default, \
                 advanced_packed, reads normals from the lower half)"
                    .to_owned(),
            ),
            (ExportTarget::Unity, NormalsExport::None) => notes.push(
                "--normals none: every shader of Unity's package reads normals (packed: the lower half), so it \
                 lights positions as normals: use packed"
                    .to_owned(),
            ),
            _ => {}
        }
        match self {
            ExportTarget::Default => notes.push(
                "default layout: Godot's addon and bevy_open_vat play its positions and normals; bevy_open_vat reads \
                 clip ranges 0-based (--target bevy), the three.js viewer one row late (--target three), and \
                 Unity's package adds offsets in a Blender FBX import's object space (--target unity)"
                    .to_owned(),
            ),
            ExportTarget::Unity => notes.push(
                "Unity: the glb is for a glTF importer (glTFast, UnityGLTF: X negated): offsets are in its object \
                 space (glTF axes, centimetres; the package's shader turns them by (-x, y, z) * 0.01), so this folder \
                 is not for an FBX import, Blender or import-openvat"
                    .to_owned(),
            ),
            ExportTarget::Unreal => notes.push(
                "Unreal: OpenVAT's material (OpenVAT_Unreal.zip, OpenVAT_Basic.uasset, UE 5.4) is a binary asset vat \
                 could not read, so these files are the default layout, not checked against it (OpenVAT's README \
                 asks for a 16-bit texture and forward rendering)"
                    .to_owned(),
            ),
            ExportTarget::Godot => notes.push(
                "Godot: each clip has one row more than frames, a loop's first frame again, a one-shot's last (the \
                 addon's loop plays startFrame .. endFrame - 1 and blends into endFrame; a one-shot holds endFrame \
                 once the next frame reaches it); the singleton shader, which plays every row, shows those rows too"
                    .to_owned(),
            ),
            ExportTarget::Bevy => notes.push(
                "bevy_open_vat: clip frames are 0-based rows and each clip has one more row than frames (a loop's \
                 first frame again at endFrame, a one-shot's boundary row at startFrame, which the plugin never \
                 shows)"
                    .to_owned(),
            ),
            ExportTarget::Three => notes.push(
                "three.js viewer: it reads no clips (it loops every row at its Speed), and TEXCOORD_1.v is -0.5 / H \
                 (half a row above the texture) because it samples uv1 + (0, 1 - f / H) of the texture loaded \
                 bottom-up"
                    .to_owned(),
            ),
        }
        notes
    }

    /// The decoder's name, for notes.
    fn engine(self) -> &'static str {
        match self {
            ExportTarget::Default => "the default layout",
            ExportTarget::Unity => "Unity's OpenVAT package",
            ExportTarget::Unreal => "Unreal's OpenVAT material",
            ExportTarget::Godot => "Godot's OpenVAT addon",
            ExportTarget::Bevy => "bevy_open_vat",
            ExportTarget::Three => "the three.js OpenVAT viewer",
        }
    }
}

fn format_name(format: TextureFormat) -> &'static str {
    match format {
        TextureFormat::Png16 => "png16",
        TextureFormat::Exr16 => "exr16",
        TextureFormat::Exr32 => "exr32",
    }
}

fn normals_name(normals: NormalsExport) -> &'static str {
    match normals {
        NormalsExport::Packed => "packed",
        NormalsExport::Separate => "separate",
        NormalsExport::None => "none",
    }
}

/// A file-name-safe version of `name`.
fn file_stem_of(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let s = s.trim_matches('.').to_owned();
    if s.is_empty() { "vat".to_owned() } else { s }
}

/// One clip's rows and its sidecar entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClipPlan {
    pub(crate) name: String,
    /// The asset's frames of its rows, in order.
    pub(crate) rows: Vec<u32>,
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) fps: f32,
    pub(crate) looping: bool,
}

/// The rows of every clip in texture order, as `rows` lays them for the target: `(name, frames,
/// fps, looping)` per clip, frames counted clip after clip from 0.
pub(crate) fn plan_clips(rows: ClipRows, clips: &[(String, u32, f32, bool)]) -> Vec<ClipPlan> {
    let mut out = Vec::new();
    let (mut first_frame, mut first_row) = (0u32, 0i64);
    for (name, n, fps, looping) in clips {
        let frames: Vec<u32> = (first_frame..first_frame + n).collect();
        let (rows, start, end) = match (rows, *looping) {
            (ClipRows::OneBased, _) => (frames.clone(), first_row + 1, first_row + i64::from(*n)),
            (ClipRows::OneBasedClosed, looping) => {
                let mut r = frames.clone();
                r.push(if looping { first_frame } else { first_frame + n - 1 });
                (r, first_row + 1, first_row + i64::from(*n) + 1)
            }
            (ClipRows::ZeroBasedBoundary, true) => {
                let mut r = frames.clone();
                r.push(first_frame);
                (r, first_row, first_row + i64::from(*n))
            }
            (ClipRows::ZeroBasedBoundary, false) => {
                let mut r = vec![first_frame];
                r.extend(&frames);
                (r, first_row, first_row + i64::from(*n))
            }
        };
        first_row += rows.len() as i64;
        first_frame += n;
        out.push(ClipPlan { name: name.clone(), rows, start, end, fps: *fps, looping: *looping });
    }
    out
}

/// The sidecar's text: `os-remap`, then `animations` in `clips`' order (serde_json's map would sort
/// the names, and Unity's and Godot's decoders pick clips by their index in the file).
pub(crate) fn sidecar_text(
    min: [f32; 3],
    max: [f32; 3],
    frames: usize,
    clips: &[ClipPlan],
) -> Result<String> {
    let json = |v: serde_json::Value| {
        serde_json::to_string(&v).map_err(|e| bad(Path::new("remap_info.json"), "the sidecar", e.to_string()))
    };
    let mut s = String::from("{\n  \"os-remap\": {\n");
    s.push_str(&format!("    \"Min\": {},\n", json(serde_json::json!(min))?));
    s.push_str(&format!("    \"Max\": {},\n", json(serde_json::json!(max))?));
    s.push_str(&format!("    \"Frames\": {frames}\n  }},\n  \"animations\": {{"));
    for (i, c) in clips.iter().enumerate() {
        let fps = if c.fps.fract() == 0.0 && c.fps.abs() < 1e9 {
            serde_json::json!(c.fps as i64)
        } else {
            serde_json::json!(c.fps)
        };
        s.push_str(&format!(
            "{}\n    {}: {{\"startFrame\": {}, \"endFrame\": {}, \"framerate\": {}, \"looping\": {}}}",
            if i == 0 { "" } else { "," },
            json(serde_json::json!(c.name))?,
            c.start,
            c.end,
            json(fps)?,
            c.looping
        ));
    }
    s.push_str(if clips.is_empty() { "}\n}\n" } else { "\n  }\n}\n" });
    Ok(s)
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn vec3s(bytes: &[u8]) -> Vec<Vec3> {
    f32s(bytes).chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect()
}

/// A 3x4 column-major affine (`[f32; 12]`) as its linear part and translation.
fn affine(m: &[f32]) -> (Mat3, Vec3) {
    (
        Mat3::from_cols(
            Vec3::new(m[0], m[1], m[2]),
            Vec3::new(m[3], m[4], m[5]),
            Vec3::new(m[6], m[7], m[8]),
        ),
        Vec3::new(m[9], m[10], m[11]),
    )
}

/// An attachment decoded at every frame: object-space positions and normals, frame-major.
struct AttachmentFrames {
    positions: Vec<Vec<Vec3>>,
    normals: Vec<Vec<Vec3>>,
    indices: Vec<u32>,
}

/// Places attachment `a` at each of `frames` frames by its socket's capture track; `Err(reason)`
/// when it cannot be placed.
fn attachment_frames(
    asset: &Asset<'_>,
    a: &vat_core::container::Attachment,
    frames: usize,
) -> std::result::Result<AttachmentFrames, String> {
    let manifest = asset.manifest();
    let socket = manifest.sockets.get(a.socket as usize).ok_or("its socket is not in the file")?;
    let track = asset.capture_bytes(socket.bone).ok_or(
        "its socket's bone has no capture track (export-openvat places attachments by captured transforms)",
    )?;
    if track.len() < frames * 48 {
        return Err(format!("its socket's capture track holds {} frames, not {frames}", track.len() / 48));
    }
    let track = f32s(track);
    let (local_lin, local_t) = affine(&socket.local);
    let rest = vec3s(asset.blob(a.positions));
    let rest_n = vec3s(asset.blob(a.normals));
    let indices: Vec<u32> =
        asset.blob(a.indices).chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    if rest.len() != a.vertex_count as usize || rest_n.len() != rest.len() {
        return Err("its vertex data does not match its vertex count".to_owned());
    }
    let (mut positions, mut normals) = (Vec::with_capacity(frames), Vec::with_capacity(frames));
    for f in 0..frames {
        let (lin, t) = affine(&track[f * 12..f * 12 + 12]);
        let (m, mt) = (lin * local_lin, lin * local_t + t);
        let nm = m.inverse().transpose();
        positions.push(rest.iter().map(|p| m * *p + mt).collect());
        normals.push(rest_n.iter().map(|n| (nm * *n).normalize_or_zero()).collect());
    }
    Ok(AttachmentFrames { positions, normals, indices })
}

/// The modes OpenVAT's layout (one texel per vertex per frame, fixed topology) cannot hold: an
/// error naming the asset's mode when it is one of them.
fn check_exportable_mode(manifest: &vat_core::container::Manifest, dir: &Path) -> Result<()> {
    let other_mode = if manifest.rigid_animation.is_some() {
        Some("a rigid-body asset (one transform per piece per frame)")
    } else if manifest.sprite_animation.is_some() {
        Some("a sprite asset (particles, not mesh vertices)")
    } else if manifest.fluid_animation.is_some() {
        Some("a fluid asset (its topology changes every frame)")
    } else {
        None
    };
    if let (Some(what), None) = (other_mode, &manifest.vertex_animation) {
        return Err(bad(
            dir,
            "the asset",
            format!(
                "is {what}: OpenVAT holds one texel per vertex per frame of one fixed mesh, so only skeletal and \
                 soft-body assets export"
            ),
        ));
    }
    Ok(())
}

/// Godot's note on clips whose frame rate is not a whole number, if any.
fn godot_fps_note(clips: &[vat_core::clip::Clip]) -> Option<String> {
    let odd: Vec<String> = clips
        .iter()
        .filter(|c| c.fps.fract() != 0.0)
        .map(|c| format!("{:?} {} fps", c.name, c.fps))
        .collect();
    (!odd.is_empty()).then(|| {
        format!(
            "Godot's addon reads framerate as a whole number (int()), so these clips play at the rate rounded \
             down: {}",
            odd.join(", ")
        )
    })
}

/// The attachments placed at each of `stored` frames, appended as columns after the `body`
/// vertices; one note each, with its columns or the reason it is not exported.
fn export_attachments(
    asset: &Asset<'_>,
    body: usize,
    stored: usize,
    notes: &mut Vec<String>,
) -> Vec<AttachmentFrames> {
    let manifest = asset.manifest();
    let mut attachments = Vec::new();
    for a in &manifest.attachments {
        let socket = manifest.sockets.get(a.socket as usize).map_or("?", |s| s.name.as_str());
        match attachment_frames(asset, a, stored) {
            Ok(at) => {
                notes.push(format!(
                    "attachment {:?} (socket {socket:?}): exported as columns {}..{} of the mesh, placed per frame by \
                     the socket's captured transform; it has no texture coordinates (TEXCOORD_0 0, 0)",
                    a.name,
                    body + attachments.iter().map(|x: &AttachmentFrames| x.positions[0].len()).sum::<usize>(),
                    body + attachments.iter().map(|x: &AttachmentFrames| x.positions[0].len()).sum::<usize>()
                        + a.vertex_count as usize
                ));
                attachments.push(at);
            }
            Err(reason) => {
                notes.push(format!("attachment {:?} (socket {socket:?}) not exported: {reason}", a.name))
            }
        }
    }
    attachments
}

/// The notes on what the asset has and OpenVAT's layout does not carry (LODs, root motion,
/// material ids).
fn unexported_notes(asset: &Asset<'_>, notes: &mut Vec<String>) {
    let manifest = asset.manifest();
    if manifest.lods.len() > 1 {
        notes.push(format!(
            "LODs 1..{} not exported: OpenVAT's layout has one mesh (LOD 0)",
            manifest.lods.len() - 1
        ));
    }
    if !manifest.root_motion.is_empty() {
        notes.push(
            "root motion not exported: the frames are in place (OpenVAT's sidecar has no root track)"
                .to_owned(),
        );
    }
    if asset.stream(StreamKind::MaterialId).is_some() {
        notes.push("material ids not exported: OpenVAT's mesh carries no vat palette".to_owned());
    }
}

/// One vector per vertex per frame, frame-major.
type FrameVectors = Vec<Vec<Vec3>>;

/// Every stored frame decoded, clip after clip: the body's positions and normals, then the
/// attachments'.
fn decode_frames(
    asset: &Asset<'_>,
    frames: &vat_core::format::reference::ObjectFrames<'_>,
    body: usize,
    stored: usize,
    attachments: &[AttachmentFrames],
) -> Result<(FrameVectors, FrameVectors)> {
    use vat_core::playback::Interpolation;
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; body], vec![[0.0f32; 3]; body]);
    let mut positions: Vec<Vec<Vec3>> = Vec::with_capacity(stored);
    let mut normals: Vec<Vec<Vec3>> = Vec::with_capacity(stored);
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        for k in 0..clip.frame_count {
            let offset = crate::verify::exact_frame_offset(clip, k).unwrap_or(0.0);
            frames.decode_at(c as u32, offset, Interpolation::Point, &mut p, &mut nrm)?;
            let f = positions.len();
            let mut pf: Vec<Vec3> = p.iter().map(|v| Vec3::from(*v)).collect();
            let mut nf: Vec<Vec3> = nrm.iter().map(|v| Vec3::from(*v)).collect();
            for a in attachments {
                pf.extend(&a.positions[f]);
                nf.extend(&a.normals[f]);
            }
            positions.push(pf);
            normals.push(nf);
        }
    }
    Ok((positions, normals))
}

/// The lookup mesh's rest pose: positions, normals, texture coordinates (`n` columns) and
/// triangles, the attachments' after the body's.
struct RestMesh {
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    uvs: Option<Vec<[f32; 2]>>,
    indices: Vec<u32>,
}

impl RestMesh {
    /// The rest pose from the asset's streams where it has them (the first frame otherwise).
    fn new(
        asset: &Asset<'_>,
        dir: &Path,
        body: usize,
        n: usize,
        frames: (&[Vec<Vec3>], &[Vec<Vec3>]),
        attachments: &[AttachmentFrames],
    ) -> Result<RestMesh> {
        let (positions, normals) = frames;
        let mut rest: Vec<Vec3> = match asset.stream(StreamKind::RestPosition) {
            Some((ElementFormat::F32x3, bytes)) if bytes.len() == body * 12 => vec3s(bytes),
            _ => positions[0][..body].to_vec(),
        };
        let mut rest_normals: Vec<Vec3> = match asset.stream(StreamKind::RestNormal) {
            Some((ElementFormat::F32x3, bytes)) if bytes.len() == body * 12 => vec3s(bytes),
            _ => normals[0][..body].to_vec(),
        };
        rest.extend(&positions[0][body..]);
        rest_normals.extend(&normals[0][body..]);
        let uvs = Self::uvs(asset, body).map(|mut uv| {
            uv.resize(n, [0.0, 0.0]);
            uv
        });
        let mut indices: Vec<u32> = match asset.lod_index_bytes(0) {
            Some(bytes) => {
                bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            None => return Err(bad(dir, "the asset", "has no LOD 0 triangles to export")),
        };
        let mut first = body as u32;
        for a in attachments {
            indices.extend(a.indices.iter().map(|i| i + first));
            first += a.positions[0].len() as u32;
        }
        Ok(RestMesh { positions: rest, normals: rest_normals, uvs, indices })
    }

    /// The body's texture coordinates, when the asset stores them as floats or 16-bit unorms.
    fn uvs(asset: &Asset<'_>, body: usize) -> Option<Vec<[f32; 2]>> {
        match asset.stream(StreamKind::Uv0) {
            Some((ElementFormat::F32x2, bytes)) if bytes.len() == body * 8 => {
                Some(f32s(bytes).chunks_exact(2).map(|c| [c[0], c[1]]).collect::<Vec<_>>())
            }
            Some((ElementFormat::Unorm16x2, bytes)) if bytes.len() == body * 4 => Some(
                bytes
                    .chunks_exact(4)
                    .map(|b| {
                        [
                            f32::from(u16::from_le_bytes([b[0], b[1]])) / 65535.0,
                            f32::from(u16::from_le_bytes([b[2], b[3]])) / 65535.0,
                        ]
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// The offsets from the rest pose in the target's space, per frame, and their box.
struct Offsets {
    space: OffsetSpace,
    offsets: Vec<Vec<Vec3>>,
    lo: Vec3,
    hi: Vec3,
}

impl Offsets {
    fn new(space: OffsetSpace, positions: &[Vec<Vec3>], rest: &[Vec3]) -> Offsets {
        let store = |v: Vec3| match space {
            OffsetSpace::Blender => gltf_to_blender(v),
            OffsetSpace::GltfCentimetres => v * 100.0,
        };
        let offsets: Vec<Vec<Vec3>> =
            positions.iter().map(|pf| pf.iter().zip(rest).map(|(p, r)| store(*p - *r)).collect()).collect();
        let (lo, hi) = offsets
            .iter()
            .flatten()
            .fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), o| (lo.min(*o), hi.max(*o)));
        Offsets { space, offsets, lo, hi }
    }

    fn range(&self) -> Vec3 {
        self.hi - self.lo
    }

    /// The texels of the rows `row_frames`: each offset as its place in the box, 0..=1 per axis.
    fn rows(&self, row_frames: &[u32], capacity: usize) -> Vec<[f32; 3]> {
        let (lo, range) = (self.lo, self.range());
        let t_of = |o: Vec3| -> [f32; 3] {
            let mut t = [0.0f32; 3];
            for a in 0..3 {
                if range[a] > 0.0 {
                    t[a] = ((o[a] - lo[a]) / range[a]).clamp(0.0, 1.0);
                }
            }
            t
        };
        let mut rgb: Vec<[f32; 3]> = Vec::with_capacity(capacity);
        for &f in row_frames {
            rgb.extend(self.offsets[f as usize].iter().map(|o| t_of(*o)));
        }
        rgb
    }

    /// The normals of the rows `row_frames` in the target's space as colours.
    fn normal_rows(&self, row_frames: &[u32], normals: &[Vec<Vec3>]) -> Vec<[f32; 3]> {
        let space = self.space;
        let store_normal = |v: Vec3| match space {
            OffsetSpace::Blender => gltf_to_blender(v),
            OffsetSpace::GltfCentimetres => v,
        };
        let normal_rgb = |v: &Vec3| {
            let b = store_normal(*v);
            [(b.x + 1.0) * 0.5, (b.y + 1.0) * 0.5, (b.z + 1.0) * 0.5]
        };
        row_frames.iter().flat_map(|&f| normals[f as usize].iter().map(normal_rgb)).collect()
    }

    /// The bound on a decoded position's error in glTF space: the texture's step as the engine
    /// holds it (`texel_step`), times the range, plus f32 rounding of the decode (`min + t (max -
    /// min)`, the unit change, the rest position added).
    fn position_bound(&self, texel_step: f32, rest: &[Vec3]) -> [f32; 3] {
        let (lo, hi, range) = (self.lo, self.hi, self.range());
        let magnitude = |a: usize| lo[a].abs().max(hi[a].abs());
        let rest_max = rest.iter().fold(Vec3::ZERO, |m, r| m.max(r.abs()));
        let stored_bound = Vec3::new(
            range.x * texel_step + 4.0 * f32::EPSILON * (magnitude(0) + range.x),
            range.y * texel_step + 4.0 * f32::EPSILON * (magnitude(1) + range.y),
            range.z * texel_step + 4.0 * f32::EPSILON * (magnitude(2) + range.z),
        );
        let gltf_bound = match self.space {
            OffsetSpace::Blender => blender_to_gltf(stored_bound).abs(),
            OffsetSpace::GltfCentimetres => stored_bound * 0.01 * (1.0 + 4.0 * f32::EPSILON),
        };
        (gltf_bound + rest_max * 2.0 * f32::EPSILON).to_array()
    }
}

/// The export itself (see [`super::export_openvat`]).
pub(crate) fn export(asset: &Asset<'_>, dir: &Path, options: &OpenVatExport) -> Result<OpenVatWritten> {
    let manifest = asset.manifest();
    let target = options.target;
    check_exportable_mode(manifest, dir)?;
    let frames_of = vat_core::format::reference::ObjectFrames::from_asset(asset)
        .map_err(|e| bad(dir, "the asset", format!("cannot be exported: {e}")))?;
    let body = frames_of.vertex_count();
    let name = file_stem_of(&manifest.name);
    let clips = &manifest.clips;
    let stored: usize = clips.iter().map(|c| c.frame_count as usize).sum();
    let plans = plan_clips(
        target.clip_rows(),
        &clips.iter().map(|c| (c.name.clone(), c.frame_count, c.fps, c.is_looping())).collect::<Vec<_>>(),
    );
    let row_frames: Vec<u32> = plans.iter().flat_map(|p| p.rows.iter().copied()).collect();
    let frames = row_frames.len();
    let mut notes = target.notes(options.format, options.normals);
    if target == ExportTarget::Godot {
        notes.extend(godot_fps_note(clips));
    }
    // Attachments: placed per frame, appended as columns, or named with the reason.
    let attachments = export_attachments(asset, body, stored, &mut notes);
    let n = body + attachments.iter().map(|a| a.positions[0].len()).sum::<usize>();
    let height = if options.normals == NormalsExport::Packed { 2 * frames } else { frames };
    if n > MAX_EXPORT_DIM || height > MAX_EXPORT_DIM || body == 0 || stored == 0 {
        return Err(bad(
            dir,
            "the export",
            format!(
                "would be {n} x {height} texels: OpenVAT's single-row layout needs 1..={MAX_EXPORT_DIM} vertices and rows"
            ),
        ));
    }
    unexported_notes(asset, &mut notes);
    let (positions, normals) = decode_frames(asset, &frames_of, body, stored, &attachments)?;
    let rest = RestMesh::new(asset, dir, body, n, (&positions, &normals), &attachments)?;
    // Offsets in the target's space, and their box.
    let offsets = Offsets::new(target.offset_space(), &positions, &rest.positions);
    let mut rgb = offsets.rows(&row_frames, height * n);
    let ext = options.format.extension();
    // Every file goes to a temporary folder first and appears with the others on commit: a failure
    // (a full disk, a file-size limit) leaves nothing, not even the folder.
    let mut pending = vat_core::files::PendingFolder::create(dir)?;
    let mut files = Vec::new();
    let mut write = |file: String, bytes: &[u8]| -> Result<()> {
        pending.write(&file, bytes)?;
        files.push(dir.join(file));
        Ok(())
    };
    match options.normals {
        NormalsExport::Packed => rgb.extend(offsets.normal_rows(&row_frames, &normals)),
        NormalsExport::Separate => {
            write(
                format!("{name}_vnrm.{ext}"),
                &images::encode_texture(
                    options.format,
                    n,
                    frames,
                    &offsets.normal_rows(&row_frames, &normals),
                )?,
            )?;
        }
        NormalsExport::None => {}
    }
    write(format!("{name}_vat.{ext}"), &images::encode_texture(options.format, n, height, &rgb)?)?;
    let (lo, hi) = (offsets.lo.to_array(), offsets.hi.to_array());
    let text = sidecar_text(lo, hi, frames, &plans)?;
    write(format!("{name}{SIDECAR_SUFFIX}"), text.as_bytes())?;
    let v = target.lookup_row() / height as f32;
    let lookup: Vec<[f32; 2]> = (0..n).map(|c| [(c as f32 + 0.5) / n as f32, v]).collect();
    let glb = lookup_glb(&name, &rest.positions, &rest.normals, rest.uvs.as_deref(), &lookup, &rest.indices)?;
    write(format!("{name}.glb"), &glb)?;
    pending.commit()?;
    let texel_step = options.format.kind().half_step() + target.load_step(options.format).unwrap_or(0.0);
    let position_bound = offsets.position_bound(texel_step, &rest.positions);
    Ok(OpenVatWritten {
        target,
        name,
        files,
        width: n,
        height,
        frames,
        row_frames,
        body_vertices: body,
        min: lo,
        max: hi,
        position_bound,
        texel_step,
        notes,
    })
}
