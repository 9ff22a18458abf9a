//! # vat-bake
//!
//! Bakes animated characters into `.vat` assets:
//!
//! ```text
//! glTF .gltf/.glb ─┐
//! procedural rig ──┴─> Rig ─ sample clips ─> CPU skinning (ground truth) ─> encode ─> PreparedBake ─> .vat
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | [`rig`] | the in-memory rig every source produces |
//! | [`gltf_import`] | glTF 2.0 (.gltf, .glb) -> [`rig::Rig`] |
//! | [`procgen`] | the built-in procedural humanoid (no assets needed), with exact strides; a small morph rig |
//! | [`export`] | [`rig::Rig`] -> animated .glb |
//! | [`interop`] | OpenVAT (Blender) bakes in and out, SideFX Labs VAT 3 (Houdini) bakes in |
//! | [`sample`] | evaluating clips: keyframe interpolation, poses, joint matrices |
//! | [`skin`] | the merged vertex set and CPU linear-blend skinning (the ground truth) |
//! | [`prepare`] | bake options and the in-memory [`prepare::PreparedBake`]; writing `.vat` |
//! | [`lods`] | the LOD chain (index buffers over the one vertex set) and vertex reordering |
//! | [`morph`] | bone mode's live morph layer (morph delta texture + per-frame weights track) |
//! | [`feet`] | finding a rig's feet: naming conventions, else the skeleton's shape |
//! | [`stride`] | stride extraction from planted feet |
//! | [`verify`] | decoded bake vs fresh skinning, with error figures |
//! | [`rigid`] | the rigid-body mode: node-animated pieces or [`procgen::shatter`] -> `.vat`, verified against the source transforms |
//! | [`sprite`] | the sprite (particle) mode: CSV/PLY particle frames or [`procgen::fountain`] -> camera-facing cards, verified against the source |
//! | [`root_motion`] | `--root-motion`: root translation and yaw fitted to the baked vertices, frames baked in place |
//!
//! Errors at this crate's boundary are one enum, [`BakeError`].

mod error;
pub mod export;
pub mod feet;
pub mod fluid;
#[doc(hidden)]
pub mod fuzzing;
pub mod gltf_import;
mod input;
pub mod interop;
pub mod lods;
pub mod morph;
pub mod notes;
pub mod prepare;
pub mod procgen;
pub mod rig;
pub mod rigid;
pub mod root_motion;
pub mod sample;
pub mod sequence;
pub mod skin;
pub mod sprite;
pub mod stride;
pub mod tangents;
#[doc(hidden)]
pub mod testdata;
pub mod textures;
pub mod verify;

#[cfg(test)]
mod determinism;

pub use error::{BakeError, Result};
