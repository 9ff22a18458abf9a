//! # vat-core
//!
//! The renderer-agnostic core of **vat**, a toolkit that bakes skeletal and morph-target animation into
//! Vertex Animation Textures (VATs) and renders large animated crowds from them on the GPU.
//!
//! This crate has no GPU dependency. It fixes everything the baker and the GPU backends must agree on:
//!
//! Two surfaces. The crate root is what game code uses: load an asset ([`Asset`]), run a crowd
//! ([`Crowd`]: spawn, play, cross-fade, cull, pick, events, root motion) and draw it through a
//! backend ([`CrowdRenderer`], [`RenderOptions`], [`FrameReport`]). Named modules hold the rest:
//! [`format`](mod@format) (what bakers and tools need: layouts, encodings and their bounds, LOD math, the CPU
//! reference decoder), [`modes`] (one module per mode) and [`backend`] (what vat-wgpu and vat-vulkan need: the GPU
//! interface, pipeline keys, the frame plan and its recording, the GPU state as data).
//!
//! | module | what it holds |
//! |---|---|
//! | [`crowd`] | the crowd: instance store, CPU culling, LOD, cross-fades, dirty tracking, picking |
//! | [`clip`] | clips and the clip row map (which frames belong to which clip, wrap or clamp) |
//! | [`playback`] | phase, frame pair, interpolation weights, cross-fade, stride-matched rates, the time epoch |
//! | [`instance`] | the 64-byte per-instance record uploaded to the GPU |
//! | [`root_motion`] | root-motion tracks |
//! | [`container`] | the `.vat` file: writer and validating, zero-copy reader |
//! | [`files`] | the one gate for every file read or written |
//! | [`render`] | the backend seam: render options, frame report and the [`render::CrowdRenderer`] trait |
//! | [`format`](mod@format) | layouts, encodings and bounds, LOD math, the CPU reference decoder |
//! | [`modes`] | one module per mode (rigid, fluid, sprite): data, validation, CPU decode, textures; the mode table |
//! | [`backend`] | the GPU interface, pipeline keys, the frame plan, the GPU state of crowds as data |
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
mod error;
pub mod files;
pub mod format;
pub mod instance;
pub mod modes;
pub mod playback;
pub mod render;
pub mod root_motion;

// The modules of the two named surfaces, visible at the root inside this crate only, so the crate's
// own paths (`crate::gpu::...`) stay short.
use backend::{frame, gpu, pipeline};
use format::{encoding, layout, lod};
use modes::{fluid, rigid, sprite};

pub use container::{Asset, Limits};
pub use crowd::{
    AnimationEvent, Camera, Crowd, CrowdAsset, CrowdConfig, CrowdStats, InstanceId, RootMotionDelta,
};
pub use error::{Error, Result};
pub use instance::PlayMode;
pub use render::{CrowdRenderer, Culling, FrameReport, RenderMode, RenderOptions};
