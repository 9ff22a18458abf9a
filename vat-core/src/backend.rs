//! What a backend (vat-wgpu, vat-vulkan) needs of the core, and game code does not: the GPU state
//! of crowds and of the renderer's own frame as data generic over the backend's handles
//! ([`Handles`], [`GpuCrowd`], [`RendererFrame`]), and the resolution of a recording's ids to those
//! handles ([`resolve`]). The core decides what is bound and drawn and finds every resource; a
//! backend only creates the handles and maps a resolved command or draw to its API calls.
//!
//! The frame driver itself ([`FrameState`], [`FrameBackend`]) and the recording ([`Command`]) live
//! in [`crate::frame`] and are re-exported here.

use crate::crowd::CrowdId;
use crate::frame::gpu_counts::CountsRing;
use crate::frame::{CrowdSync, HostMapCache, InstanceSource};
use crate::gpu::ShaderStages;
use crate::pipeline::HostShader;

mod asset;
mod buffers;
mod config;
mod decode;
mod error;
pub mod frame;
pub mod gpu;
mod offscreen;
pub mod pipeline;
pub mod resolve;

pub use crate::frame::{
    AssetDrawInfo, BufferId, Command, Dispatch, Draw, DrawGeometry, DrawResources, FrameBackend, FrameCrowd,
    FrameError, FramePlan, FrameState, HostPass, Missing, PlanLimits, Prechecks, WriteData,
};
pub use asset::GpuAsset;
pub use buffers::CrowdBuffer;
pub use config::{CULL, ComputeKey, RendererConfig, TargetFormats, texel_size_mismatches};
pub use decode::{DecodeJob, decode_buffer, plan_decode};
pub use error::Error;
pub use offscreen::{check_target_size, sorted_lists};
pub use resolve::*;

/// Serialises the creation and destruction of Vulkan instances and devices in this process. Hold the
/// guard across `vkCreateInstance` .. `vkCreateDevice` and across `vkDestroyDevice` ..
/// `vkDestroyInstance`.
///
/// Why: the Khronos Vulkan loader walks its process-global list of logical devices under a lock in
/// `vkCreateDevice` but unlinks and frees a device's entry in `vkDestroyDevice` without one, so one
/// thread destroying a device while another creates one (even on separate instances) can read freed
/// memory and crash (Vulkan-Loader issue 2018, present in the loaders Debian ships). Both backends
/// take this guard wherever vat creates or destroys a device (`vat_vulkan::Context`,
/// `vat_wgpu::headless_device`). A wgpu device is destroyed when its last handle drops, which vat
/// cannot see, so a host that drops devices on one thread while another thread creates one (parallel
/// tests do) should hold this guard around the drop too.
///
/// The guard carries no data; a panic while it was held does not poison it for later callers.
pub fn device_lifetime_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The handle types of one backend. The core holds them in its generic structs and hands them back
/// resolved; it never looks inside one.
pub trait Handles {
    /// A buffer a command writes, copies or binds (`wgpu::Buffer`; vat-vulkan's host buffer). Cloned
    /// only to name it while the renderer is borrowed (a reference count, or plain handles).
    type Buffer: Clone;
    /// A bind group as a draw or dispatch binds it (`wgpu::BindGroup`; `vk::DescriptorSet`).
    type Group;
    /// An asset's index buffer as a draw binds it.
    type Index;
    /// A host shadow map's view: the key of the groups 0 over it.
    type HostMap: Clone + PartialEq;
    /// The groups 0, per [`Stage`], over one host shadow map (with whatever keeps them alive).
    type HostGroups: AsRef<[Self::Group]>;
    /// One slot of a crowd's read-back ring of culling counts.
    type Slot;
    /// What a set of handles keeps alive besides them (vat-vulkan: their memory and pools; wgpu:
    /// nothing, its handles own themselves).
    type Keep;

    /// Called when a crowd's GPU copy is dropped, before any of its handles: vat-vulkan waits for
    /// the device to be idle here (submitted frames may still read them).
    fn release(_keep: &mut Self::Keep) {}
}

/// The pipeline kinds, each with its own layouts (the index of a group in a per-stage list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Colour pipelines: vertex + fragment.
    Colour = 0,
    /// Depth-only pipelines: vertex.
    Depth = 1,
    /// Compute pipelines.
    Compute = 2,
}

impl Stage {
    /// Every stage, in index order.
    pub const ALL: [Stage; 3] = [Stage::Colour, Stage::Depth, Stage::Compute];

    /// The shader stages whose bindings of `group` this kind's layouts hold. Depth pipelines see
    /// group 0 from the vertex stage only (the shadow map they may be drawing into is never bound
    /// to them) and the other groups from both stages (the impostor cards' fragment stage tests
    /// coverage in depth passes).
    pub fn shader_stages(self, group: u32) -> ShaderStages {
        match self {
            Stage::Colour => ShaderStages::VERTEX_FRAGMENT,
            Stage::Depth if group == crate::backend::gpu::GROUP_FRAME => ShaderStages::VERTEX,
            Stage::Depth => ShaderStages::VERTEX_FRAGMENT,
            Stage::Compute => ShaderStages::COMPUTE,
        }
    }
}

/// Groups 0 (per [`Stage`]) over one uniform buffer: over vat's shadow map, and over each host
/// shadow map drawn with.
pub struct FrameGroups<H: Handles> {
    /// Per stage, over vat's shadow map.
    pub own: Vec<H::Group>,
    /// Per host shadow map drawn with (the newest few).
    pub host: HostMapCache<H::HostMap, H::HostGroups>,
}

impl<H: Handles> FrameGroups<H> {
    /// `own` and no host map's groups yet.
    pub fn new(own: Vec<H::Group>) -> Self {
        Self { own, host: HostMapCache::default() }
    }

    /// The group 0 of `stage` a draw binds: over `host_map` for the colour stage when the frame's
    /// colour draws sample a host map, else over vat's shadow map.
    pub fn get(&self, stage: Stage, host_map: Option<&H::HostMap>) -> Option<&H::Group> {
        match host_map {
            Some(map) if stage == Stage::Colour => self.host.get(map)?.as_ref().get(stage as usize),
            _ => self.own.get(stage as usize),
        }
    }
}

/// The renderer's own group-0 state: the uniforms of draws that belong to no crowd (the ground),
/// their groups, and the host shadow map given and the one the prepared frame samples.
pub struct RendererFrame<H: Handles> {
    /// The renderer's own group-0 uniforms ([`crate::frame::FramePlan::frame_uniforms`]).
    pub frame_buffer: H::Buffer,
    /// The groups 0 over them.
    pub groups: FrameGroups<H>,
    /// The host's shadow map (`set_host_shadow_map`).
    pub host_shadow: Option<H::HostMap>,
    /// The host shadow map the prepared frame's colour draws sample (`None`: vat's own).
    pub frame_host_shadow: Option<H::HostMap>,
}

impl<H: Handles> std::fmt::Debug for RendererFrame<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RendererFrame").field("host_groups", &self.groups.host.len()).finish_non_exhaustive()
    }
}

impl<H: Handles> RendererFrame<H> {
    /// `frame_buffer` with `groups` over it, no host shadow map.
    pub fn new(frame_buffer: H::Buffer, groups: Vec<H::Group>) -> Self {
        Self { frame_buffer, groups: FrameGroups::new(groups), host_shadow: None, frame_host_shadow: None }
    }

    /// What a renderer's `prepare` checks before planning: whether the host gave a shadow map
    /// (this state's), whether `config` has a built-in one, and the renderer's `host_shader`.
    pub fn prechecks<'a, F: TargetFormats>(
        &self,
        config: &RendererConfig<F>,
        host_shader: Option<&'a HostShader>,
    ) -> Prechecks<'a> {
        Prechecks {
            host_shadow_map: self.host_shadow.is_some(),
            built_in_shadow_map: config.shadow_map_size > 0,
            host_shader,
        }
    }
}

/// One crowd's GPU copy: its group-0 uniforms, records (resident), CPU-culled instance list,
/// GPU-culled visible lists and indirect draws, the record scatter's buffers, their groups, and what
/// they hold ([`CrowdSync`]). A backend's `create_crowd` makes it for one crowd; using it with
/// another crowd panics. Buffers are created (and grown) by the frames that need them. The fields
/// are the backend's.
pub struct GpuCrowd<H: Handles> {
    /// What the copy holds.
    pub sync: CrowdSync,
    /// The crowd's group-0 uniforms (camera, its clock and LOD settings, light).
    pub frame_buffer: H::Buffer,
    /// Groups 0 over `frame_buffer`.
    pub frame: FrameGroups<H>,
    /// Per extra depth view (`prepare`'s `views`, grown on demand): its group-0 uniforms and the
    /// depth and compute groups 0 over them.
    pub views: Vec<ViewUniforms<H>>,
    /// The buffers of the crowd's capacity; `None` before its first frame.
    pub buffers: Option<CrowdBuffers<H>>,
    /// The read-back ring of the GPU culling's counts.
    pub counts: CountsReadback<H>,
    /// What keeps the uniforms and groups 0 alive; dropped last.
    pub keep: H::Keep,
}

impl<H: Handles> GpuCrowd<H> {
    /// The copy of crowd `id`: its uniforms and groups 0, no other buffer yet.
    pub fn new(id: &CrowdId, frame_buffer: H::Buffer, groups: Vec<H::Group>, keep: H::Keep) -> Self {
        Self {
            sync: CrowdSync::new(id),
            frame_buffer,
            frame: FrameGroups::new(groups),
            views: Vec::new(),
            buffers: None,
            counts: CountsReadback::default(),
            keep,
        }
    }

    /// What the GPU copy holds (capacities, sync state).
    pub fn sync(&self) -> &CrowdSync {
        &self.sync
    }

    /// Forgets what the GPU copy holds: the next frame uploads the whole crowd. Call it after
    /// dropping an encoder (command buffer) that recorded a frame of this crowd without submitting
    /// it.
    pub fn mark_unsynced(&mut self) {
        self.sync.mark_unsynced();
        self.counts.ring.drop_current();
    }

    /// The buffer of this crowd `id` names (`None`: not created yet, or the renderer's own).
    pub fn buffer(&self, id: BufferId) -> Option<&H::Buffer> {
        let b = self.buffers.as_ref();
        match id {
            BufferId::Records { .. } => b.map(|b| &b.records),
            BufferId::List { .. } => b.map(|b| &b.list),
            BufferId::UserData { .. } => b.map(|b| &b.user_data),
            BufferId::ScatterIndices { .. } => Some(&b?.scatter.as_ref()?.indices),
            BufferId::ScatterRecords { .. } => Some(&b?.scatter.as_ref()?.records),
            BufferId::ArgsTemplate { .. } => b.map(|b| &b.args_template),
            BufferId::CullParams { .. } => b.map(|b| &b.cull_params),
            BufferId::DrawArgs { .. } => b.map(|b| &b.draw_args),
            BufferId::ViewDrawArgs { view, .. } => Some(&b?.views.get(view)?.draw_args),
            BufferId::Uniforms { .. } => Some(&self.frame_buffer),
            BufferId::ViewUniforms { view, .. } => self.views.get(view).map(|v| &v.buffer),
            BufferId::FrameUniforms => None,
        }
    }

    /// This frame's copy of the culling counts: the draw arguments and the ring slot they go to
    /// (`None`: no slot this frame, or no buffers).
    pub fn counts_copy(&self) -> Option<(&H::Buffer, &H::Slot)> {
        let slot = self.counts.ring.current_slot()?;
        Some((&self.buffers.as_ref()?.draw_args, self.counts.slots.get(slot)?))
    }
}

impl<H: Handles> Drop for GpuCrowd<H> {
    fn drop(&mut self) {
        H::release(&mut self.keep);
    }
}

impl<H: Handles> std::fmt::Debug for GpuCrowd<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCrowd").field("sync", &self.sync).finish_non_exhaustive()
    }
}

/// One extra view's group-0 uniforms of a crowd, and the groups 0 over them.
pub struct ViewUniforms<H: Handles> {
    /// The uniforms.
    pub buffer: H::Buffer,
    /// Depth group 0 (the view's depth draws).
    pub depth: H::Group,
    /// Compute group 0 (the view's culling dispatch).
    pub compute: H::Group,
}

/// The GPU culling's counts read back without waiting ([`crate::frame::gpu_counts`]): the ring's
/// bookkeeping and its slots (made by the backend with the crowd's first GPU-culled frame).
pub struct CountsReadback<H: Handles> {
    /// The ring's bookkeeping.
    pub ring: CountsRing,
    /// The slots, one per ring entry.
    pub slots: Vec<H::Slot>,
    /// What keeps the slots alive; `None` until they are made.
    pub keep: Option<H::Keep>,
}

impl<H: Handles> Default for CountsReadback<H> {
    fn default() -> Self {
        Self { ring: CountsRing::default(), slots: Vec::new(), keep: None }
    }
}

/// The groups 2 of a crowd's buffers: colour and depth over the CPU list, colour and depth over
/// the GPU lists, compute.
pub struct CrowdGroups<G> {
    /// Colour, over the CPU-culled instance list.
    pub colour_cpu: G,
    /// Depth, over the CPU-culled instance list.
    pub depth_cpu: G,
    /// Colour, over the GPU-culled visible lists.
    pub colour_gpu: G,
    /// Depth, over the GPU-culled visible lists.
    pub depth_gpu: G,
    /// Compute (the culling dispatch).
    pub compute: G,
}

impl<G> CrowdGroups<G> {
    /// The five groups in the order above, each made by `make(stage, instances)` over the CPU-culled
    /// instance list ([`InstanceSource::InstanceList`]) or the GPU-culled visible lists
    /// ([`InstanceSource::VisibleLists`]); compute is over the instance list (the culling writes the
    /// visible lists).
    ///
    /// # Errors
    /// The first of `make`'s.
    pub fn try_new<E>(mut make: impl FnMut(Stage, InstanceSource) -> Result<G, E>) -> Result<Self, E> {
        let (cpu, gpu) = (InstanceSource::InstanceList, InstanceSource::VisibleLists);
        Ok(Self {
            colour_cpu: make(Stage::Colour, cpu)?,
            depth_cpu: make(Stage::Depth, cpu)?,
            colour_gpu: make(Stage::Colour, gpu)?,
            depth_gpu: make(Stage::Depth, gpu)?,
            compute: make(Stage::Compute, cpu)?,
        })
    }
}

/// The buffers of a [`GpuCrowd`] at one capacity, and the groups 2 over them.
pub struct CrowdBuffers<H: Handles> {
    /// The instance records.
    pub records: H::Buffer,
    /// The CPU-culled instance list.
    pub list: H::Buffer,
    /// The GPU-culled visible lists.
    pub visible: H::Buffer,
    /// The indirect draw arguments the culling writes.
    pub draw_args: H::Buffer,
    /// The draw arguments' reset template.
    pub args_template: H::Buffer,
    /// The culling parameters.
    pub cull_params: H::Buffer,
    /// 16 bytes of user data per record (`instance_user_data`).
    pub user_data: H::Buffer,
    /// The groups 2 over them.
    pub groups: CrowdGroups<H::Group>,
    /// The record scatter's buffers; `None` until a frame scatters.
    pub scatter: Option<ScatterBuffers<H>>,
    /// Per GPU-culled extra view (`CrowdPlan::grow_view_lists`): its own lists.
    pub views: Vec<ViewLists<H>>,
    /// What keeps them alive; dropped last.
    pub keep: H::Keep,
}

impl<H: Handles> CrowdBuffers<H> {
    /// Group 2 of `stage` over `instances` (`None`: a view's lists outside a depth pass).
    pub fn group(&self, stage: Stage, instances: InstanceSource) -> Option<&H::Group> {
        let g = &self.groups;
        Some(match (stage, instances) {
            (Stage::Depth, InstanceSource::InstanceList) => &g.depth_cpu,
            (Stage::Depth, InstanceSource::VisibleLists) => &g.depth_gpu,
            (Stage::Depth, InstanceSource::ViewLists { view }) => &self.views.get(view)?.depth,
            (_, InstanceSource::InstanceList) => &g.colour_cpu,
            (_, InstanceSource::VisibleLists) => &g.colour_gpu,
            (_, InstanceSource::ViewLists { .. }) => return None,
        })
    }

    /// Gives the buffers visible lists and draw arguments of their own for extra views `0..views`
    /// (`CrowdPlan::grow_view_lists`), `make` creating the next view's from the buffers.
    ///
    /// # Errors
    /// The first of `make`'s (the views made before it stay).
    pub fn grow_view_lists<E>(
        &mut self,
        views: u32,
        mut make: impl FnMut(&mut Self) -> Result<ViewLists<H>, E>,
    ) -> Result<(), E> {
        while self.views.len() < views as usize {
            let lists = make(self)?;
            self.views.push(lists);
        }
        Ok(())
    }

    /// The draw arguments the indirect draws over `instances` read (`None`: the CPU list).
    pub fn draw_args_of(&self, instances: InstanceSource) -> Option<&H::Buffer> {
        match instances {
            InstanceSource::InstanceList => None,
            InstanceSource::VisibleLists => Some(&self.draw_args),
            InstanceSource::ViewLists { view } => Some(&self.views.get(view)?.draw_args),
        }
    }
}

/// One GPU-culled extra view's own visible lists and draw arguments (sized like the crowd's), with
/// the groups 2 over them.
pub struct ViewLists<H: Handles> {
    /// The visible lists (bound by both groups).
    pub visible: H::Buffer,
    /// The draw arguments.
    pub draw_args: H::Buffer,
    /// Compute group 2: the crowd's records and culling parameters, writing this view's lists.
    pub compute: H::Group,
    /// Depth group 2 over this view's visible lists.
    pub depth: H::Group,
}

/// Packed changed records and their destinations (`crate::gpu::ScatterPlan`), and the scatter
/// group over them and the record buffer.
pub struct ScatterBuffers<H: Handles> {
    /// The destinations.
    pub indices: H::Buffer,
    /// The packed records.
    pub records: H::Buffer,
    /// Group 3 of `cs_scatter`.
    pub group: H::Group,
    /// What keeps them alive.
    pub keep: H::Keep,
}
