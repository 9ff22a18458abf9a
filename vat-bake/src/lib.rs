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
//! | [`source`] | the one [`Source`] trait every mode's source implements, and the one bake -> verify -> write path |
//! | [`rigid`] | the rigid-body mode: node-animated pieces -> `.vat`, verified against the source transforms |
//! | [`sprite`] | the sprite (particle) mode: CSV/PLY particle frames -> camera-facing cards, verified against the source |
//! | [`root_motion`] | `--root-motion`: root translation and yaw fitted to the baked vertices, frames baked in place |
//! | [`fit`] | a rigid skin (bones, weights, per-frame transforms) fitted to a mesh sequence, for the skin-residual format |
//!
//! The built-in procedural sources (the humanoid, cloth, shatter, splash and fountain), the test
//! fixtures and the fuzz targets' entry points live in the `vat-procgen` crate, which games need
//! not link.
//!
//! Errors at this crate's boundary are one enum, [`BakeError`].

mod error;
pub mod export;
pub mod feet;
pub mod fit;
pub mod fluid;
pub mod gltf_import;
pub mod impostor;
mod input;
pub mod interop;
pub mod lods;
pub mod morph;
pub mod notes;
pub mod prepare;
pub mod rig;
pub mod rigid;
pub mod root_motion;
pub mod sample;
pub mod sequence;
pub mod skin;
pub mod source;
pub mod sprite;
pub mod stride;
pub mod tangents;
pub mod textures;
pub mod verify;

#[cfg(test)]
mod determinism;

pub use source::{Baked, BakedFile, Figures, Report, Source, bake};

// This crate's unit tests bake vat-procgen's content (the humanoid, the fixtures, the fuzz entry
// points), but vat-procgen depends on this crate: as a dev-dependency it would link a second
// vat-bake whose types differ from the ones under test. So the test build compiles vat-procgen's
// source files into this crate, at the paths the tests use (`crate::procgen`, `crate::testdata`,
// `crate::fuzzing`, `crate::interop_fixtures`); the files name this crate `vat_bake::`, which `extern crate self` makes
// resolve here too. Test builds only: the library has none of it. (Items that only vat-procgen's
// own users need are unused here, hence the allows; procgen's own unit tests, a fraction of a
// second, run in both crates' test builds.) vat-bake's dev-dependency on vat-procgen is for its
// benches, examples and integration tests, which link this one vat-bake.
#[cfg(test)]
extern crate self as vat_bake;
#[cfg(test)]
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../../vat-procgen/src/fuzzing.rs"]
mod fuzzing;
#[cfg(test)]
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../../vat-procgen/src/interop_fixtures.rs"]
mod interop_fixtures;
#[cfg(test)]
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../../vat-procgen/src/procgen/mod.rs"]
mod procgen;
#[cfg(test)]
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../../vat-procgen/src/testdata.rs"]
mod testdata;

pub use error::{BakeError, Result};
