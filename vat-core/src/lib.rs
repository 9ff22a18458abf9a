//! # vat-core
//!
//! The renderer-agnostic core of **vat**, a toolkit that bakes skeletal and morph-target animation into
//! Vertex Animation Textures (VATs) and renders large animated crowds from them on the GPU.
//!
//! This crate has no GPU dependency. It fixes everything the baker and the GPU backends must agree on:
//!
//! | module | what it holds |
//! |---|---|
//! | [`layout`] | where texel `(frame, vertex)` lives in the vertex, bone and morph textures |
//! | [`clip`] | clips and the clip row map (which frames belong to which clip, wrap or clamp) |
//! | [`encoding`] | position, normal and rotation encodings, each with its documented error bound |
//! | [`playback`] | phase, frame pair, interpolation weights, cross-fade, stride-matched rates, the time epoch |
//! | [`instance`] | the 64-byte per-instance record uploaded to the GPU |
//! | [`lod`] | LOD selection and the chunk-grid math of the crowd |
//! | [`crowd`] | the crowd: instance store, CPU culling, LOD, cross-fades, dirty tracking, picking |
//! | [`container`] | the `.vat` file: writer and validating, zero-copy reader |
//! | [`gpu`] | the one WGSL source, GPU-visible structs and the binding table both backends build from |
//! | [`frame`] | the frame plan: uploads, dispatches and draws of a frame of crowds, for backends to interpret |
//! | [`pipeline`] | render pipeline keys and fixed state (culling, depth, bias, the shadow sampler) |
//! | [`render`] | the backend seam: render options, frame report and the [`render::CrowdRenderer`] trait |
//! | [`rigid`] | the rigid-body mode: piece and rigid vertex texels, their bounds, quaternion helpers |
//! | [`reference`](mod@reference) | a CPU reference decoder that computes exactly what the vertex shader computes |
//!
//! ## Conventions
//!
//! - Right-handed coordinates, **+Y up**; a character at yaw 0 faces **+Z** (the glTF convention).
//!   Yaw is a rotation about +Y in radians, counter-clockwise seen from above.
//! - Lengths in **metres** (an asset authored in another unit keeps it: its bounds, strides and LOD
//!   distances are in that unit; the examples' `vat_examples::scene::SceneScale` scales demo scenes
//!   to it), time in **seconds**, phase in **cycles** (`[0, 1)`), rates in cycles per second, speeds
//!   in metres per second.
//! - Matrices are column-major (glam's convention, and WGSL's).
//! - Texels are addressed `(x, y)` with `x` the column and `y` the row, both from zero.
//!
//! Errors at this crate's boundary are one enum, [`Error`].

pub mod backend;
pub mod clip;
pub mod container;
pub mod crowd;
pub mod encoding;
mod error;
pub mod files;
pub mod fluid;
pub mod frame;
pub mod gpu;
pub mod instance;
pub mod layout;
pub mod lod;
pub mod modes;
pub mod pipeline;
pub mod playback;
pub mod reference;
pub mod render;
pub mod rigid;
pub mod root_motion;
pub mod sprite;

pub use error::{Error, Result};
