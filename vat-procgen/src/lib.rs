//! # vat-procgen
//!
//! Demo and test content for vat, kept out of the libraries a game links: games need not depend
//! on this crate. The CLI (`vat bake --procgen NAME`, `vat demo`, `vat bench`), the examples, the
//! benchmarks, the tests and the fuzz targets do.
//!
//! | part | what it holds |
//! |---|---|
//! | the crate root | the built-in procedural sources: the humanoid ([`humanoid`], [`by_name`]), the cloth banner ([`cloth`]), the shattering wall ([`shatter`], [`rigid_by_name`]), the splash ([`fluid_by_name`]) and the fountain ([`fountain`], [`sprite_by_name`]); a small morph rig ([`morph_rig`]) |
//! | [`testdata`] | test inputs: the shared real-file corpus's location, small generated glTF files, large and textured rigs |
//! | [`interop_fixtures`] | bakes made in other tools' layouts (OpenVAT, Houdini VAT 3) from known motion, for the import tests |
//! | [`fuzzing`] | the functions the fuzz targets in `fuzz/` call, shared with the corpus replay in `tests/` |
//!
//! Everything here is built in code and deterministic: the same parameters give the same output,
//! bit for bit (the workspace's pinned bake hashes depend on it).
//!
//! ## The humanoid
//!
//! A rigged, animated character built in code, so a bake needs no
//! assets.
//!
//! - About 2,440 vertices and 4,500 triangles of smooth-shaded closed tubes (torso, neck, head,
//!   arms, hands, legs, feet), one skin of 25 joints ([`joint`]), 1-2 influences per vertex blended
//!   across every joint so limbs bend smoothly. Per-vertex material ids: [`MATERIAL_SKIN`],
//!   [`MATERIAL_SHIRT`], [`MATERIAL_PANTS`], [`MATERIAL_SHOES`]. UVs (u along each tube, v around)
//!   and tangents along the sweep (w = +1).
//! - About 1.78 m tall (see [`HumanoidParams`]), feet on y = 0, facing +Z, its left on +X; the arms
//!   in an A-pose at rest.
//! - A `"head"` socket on the crown and a cap ([`MATERIAL_CAP`]) attached to it.
//! - Six clips, keyed at 60 keys per second with LINEAR interpolation, every key at `k / 60` s:
//!   `idle` (3 s loop), `walk`, `jog`, `run` (looping cycles, [`WALK`], [`JOG`], [`RUN`]), `wave`
//!   (2 s, one-shot, its first and last keys the same relaxed standing pose) and `look_around` (4 s loop). Looping clips end
//!   with a copy of their first key.
//!
//! Gaits follow explicit ankle trajectories ([`Gait::ankle_target`]) solved with analytic two-bone
//! IK, so each gait's stride is exact: a planted foot slides backwards at exactly
//! `stride / duration` m/s, and the clip's `known_stride` is `stride`.
//!
//! Deterministic: no randomness; the same parameters give the same rig, bit for bit.
mod procgen;

pub mod fuzzing;
pub mod interop_fixtures;
pub mod testdata;

pub use procgen::*;
