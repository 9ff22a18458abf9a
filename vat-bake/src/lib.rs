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
//!
//! Errors at this crate's boundary are one enum, [`BakeError`].

mod error;
pub mod rig;

pub use error::{BakeError, Result};
