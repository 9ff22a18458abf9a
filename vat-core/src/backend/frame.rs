//! The frame plan: everything a frame of one or more crowds asks of the GPU, computed once here and
//! only *interpreted* by a backend.
//!
//! [`FramePlan::plan`] takes the frame's crowds (each with its uploaded asset's [`AssetDrawInfo`] and
//! the [`CrowdSync`] state of its GPU copy), the camera, the [`RenderOptions`] and the device's
//! [`PlanLimits`], runs the CPU side of the frame (CPU culling with `Crowd::prepare_frame`, or only
//! the dirty record ranges with `Crowd::take_record_uploads` for GPU culling) and writes plain data:
//!
//! 1. per crowd ([`CrowdPlan`]): buffers to grow, the frame uniforms, the record ranges and list
//!    entries to write, the packed scatter records, the draw-argument template and culling
//!    parameters to write (only when they changed);
//! 2. the compute dispatches ([`Dispatch`]: scatter, then culling: the camera's, then each extra
//!    view's of a GPU-culled crowd) with their workgroup counts;
//! 3. per pass kind ([`FramePlan::depth`] for the shadow map, [`FramePlan::colour`]) the draws
//!    ([`Draw`]): pipeline key, bound resources, index range and instance range or indirect-argument
//!    offset.
//!
//! [`FramePlan::record`] gives the order as a list of [`Command`]s: grow buffers, write the uploads,
//! the template copies of GPU-culled crowds (`args_template` → `draw_args`, and → each extra view's
//! draw args, [`gpu::DRAW_ARGS_BYTES`]), the dispatches, the depth pass (when
//! [`FramePlan::shadow_view_proj`] is set); the host's passes follow. [`FrameState::prepare`] is the
//! one driver both backends run over it ([`FrameBackend`]). The plan decides what is drawn; a
//! backend decides nothing.
//!
//! **Sync contract.** The plan marks each crowd's GPU copy as synced as of this frame (the crowd's
//! dirty set is taken while planning). If planning fails part-way, every crowd of the frame is
//! marked unsynced here; if the backend fails to carry a plan out, it must call
//! [`CrowdSync::mark_unsynced`] on every crowd of the frame. Either way, the next frame uploads
//! those crowds whole: no change is ever lost.

use std::ops::Range;

use crate::container::{Lod, Manifest, VatMode};
use crate::crowd::{Camera, Crowd, CrowdConfig, CrowdId, CrowdStats, DrawBatch, Frustum};
use crate::encoding::VertexFormat;
use crate::gpu::{self, CullParams, FrameInputs, FrameUniforms, ScatterPlan, ShadowLookup};
use crate::instance::InstanceRecord;
use crate::lod::{LodThresholds, MAX_LODS};
use crate::pipeline::{PassKind, PipelineKey, PrepassTargets, Program, ShaderVariantKey};
use crate::render::{Culling, FrameReport, RenderMode, RenderOptions, ShadowMapSource};

pub mod gpu_counts;
#[cfg(test)]
mod tests;

/// Smallest record capacity of a crowd's buffers (records).
pub const MIN_RECORD_CAPACITY: u32 = 64;
/// Smallest capacity of a crowd's scatter buffers (records): both backends allocate exactly this.
pub const MIN_SCATTER_CAPACITY: u32 = 1024;
/// Bytes of one indexed-indirect draw in `draw_args`.
pub const DRAW_ARGS_STRIDE: u64 = gpu::DRAW_ARGS_WORDS as u64 * 4;
/// Largest x workgroup count of one dispatch (WebGPU's and Vulkan's guaranteed minimum).
pub const MAX_WORKGROUPS_X: u32 = 65535;

/// Workgroup counts `[x, y]` for `threads` threads of `size` per workgroup, `x` at most
/// [`MAX_WORKGROUPS_X`] (the shaders linearise `global_id.y * num_workgroups.x * size + global_id.x`);
/// at least one workgroup.
pub fn workgroups(threads: u64, size: u32) -> [u32; 2] {
    let groups = threads.div_ceil(u64::from(size)).max(1);
    let x = groups.min(u64::from(MAX_WORKGROUPS_X));
    let y = groups.div_ceil(x);
    [x as u32, y.min(u64::from(u32::MAX)) as u32]
}

/// The device limits a plan respects, as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// The largest storage buffer the backend may create and bind whole, bytes.
    pub max_storage_buffer_bytes: u64,
}

/// Why a frame cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Bone mode was asked for a crowd whose asset was baked without bones.
    #[error("bone mode needs an asset baked with bones; the asset of crowd {crowd} of the frame has none")]
    AssetHasNoBones {
        /// Position of the crowd in the frame's list.
        crowd: usize,
    },
    /// A crowd's buffer would exceed the device's storage buffer limit.
    #[error("the {what} buffer would take {size} bytes, more than the device's {limit}")]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Bytes it would take.
        size: u64,
        /// The device's limit, bytes.
        limit: u64,
    },
}

mod asset_info;
mod driver;
mod plan_types;
mod planner;
mod recording;
mod sync;

pub use asset_info::*;
pub use driver::*;
pub use plan_types::*;
pub use planner::*;
pub use recording::*;
pub use sync::*;
