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

#[path = "export_targets.rs"]
pub mod export_targets;
#[cfg(test)]
#[path = "tests_export_targets.rs"]
mod tests_export_targets;

pub use export_targets::ExportTarget;

mod decode;
mod export;
mod locate;
mod lookup;
mod remap;

pub use decode::*;
pub use export::*;
pub use locate::*;
pub(crate) use lookup::*;
pub use remap::*;
