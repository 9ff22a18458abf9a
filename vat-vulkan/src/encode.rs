//! Replaying a frame's recording (`vat_core::frame::Command`) on Vulkan: [`Replay`] is this
//! backend's [`FrameBackend`], one `match` over the commands (the twin of vat-wgpu's `encode.rs`).
//! Everything that can fail (buffer growth, pipelines, finding every resource) happens while the
//! commands are matched; [`FrameBackend::finish`] then records what they queued with the barriers
//! (`vkCmdUpdateBuffer` writes, draw-argument resets, dispatches, the shadow pass). A resource a
//! command or draw names that is not here is an error. Nothing here decides what is drawn.

use ash::vk;
use vat_core::frame::gpu_counts::CountsRing;
use vat_core::frame::{
    AssetDrawInfo, BufferId, Command, CrowdSync, Dispatch, Draw, DrawGeometry, DrawResources, FrameBackend,
    FramePlan, HostMapCache, Missing, Pass, PlanLimits,
};
use vat_core::gpu;
use vat_core::pipeline::PipelineKey;
use vat_core::render::Culling;

use crate::crowd::GpuCrowd;
use crate::owned::color_range;
use crate::pipelines::{CULL, SHADOW_PASS};
use crate::renderer::{CrowdDraw, HostFrameSets, StageSet, flipped_viewport, full_rect, memory_barrier};
use crate::{GpuAsset, Renderer, VulkanError};

/// Most bytes one `vkCmdUpdateBuffer` may write.
const UPDATE_CHUNK: usize = 65536;
// `vkCmdUpdateBuffer` writes whole words.
const _: () = assert!(size_of::<vat_core::gpu::FrameUniforms>().is_multiple_of(4));

/// What one draw binds, found.
#[derive(Clone, Copy)]
enum Bindings {
    /// Sets 0-2 and the index buffer of a crowd's draw, and its indirect arguments.
    Crowd { sets: [vk::DescriptorSet; 3], index: vk::Buffer, args: Option<vk::Buffer> },
    /// Set 0 alone.
    FrameOnly(vk::DescriptorSet),
}

/// A draw with its resources and pipeline found: recording it cannot fail.
pub(crate) struct FoundDraw {
    draw: Draw,
    bindings: Bindings,
    pipeline: vk::Pipeline,
}

/// One `prepare`'s replay: the commands queued, found and checked, then recorded into `cb` by
/// [`FrameBackend::finish`].
pub(crate) struct Replay<'r> {
    renderer: &'r mut Renderer,
    cb: vk::CommandBuffer,
    /// Buffer writes: (buffer, byte offset, bytes).
    writes: Vec<(vk::Buffer, u64, Vec<u8>)>,
    /// Copies from the start of one buffer to the start of another: (from, to, bytes).
    copies: Vec<(vk::Buffer, vk::Buffer, u64)>,
    /// Scatter dispatches: (set 3, workgroups).
    scatters: Vec<(vk::DescriptorSet, [u32; 2])>,
    /// Culling dispatches: (sets 0-2, workgroups).
    culls: Vec<([vk::DescriptorSet; 3], [u32; 2])>,
    /// Culling counts to copy into their read-back slot, and the slot's event.
    counts: Vec<(vk::Buffer, vk::Buffer, vk::Event)>,
    /// The open shadow pass's draws (indices into the plan's depth draws).
    shadow_open: Option<Vec<usize>>,
    /// The shadow pass's draws, found; `None`: no shadow pass.
    shadow: Option<Vec<FoundDraw>>,
    cull_pipeline: Option<vk::Pipeline>,
}

impl<'r> Replay<'r> {
    /// A replay into `cb` (recording, outside any render pass).
    pub(crate) fn new(renderer: &'r mut Renderer, cb: vk::CommandBuffer) -> Self {
        Self {
            renderer,
            cb,
            writes: Vec::new(),
            copies: Vec::new(),
            scatters: Vec::new(),
            culls: Vec::new(),
            counts: Vec::new(),
            shadow_open: None,
            shadow: None,
            cull_pipeline: None,
        }
    }

    /// The culling dispatch's sets and workgroups.
    fn cull_sets(
        &mut self,
        crowds: &[CrowdDraw<'_>],
        dispatch: Dispatch,
    ) -> Result<([vk::DescriptorSet; 3], [u32; 2]), VulkanError> {
        let compute = StageSet::Compute as usize;
        let (crowd, workgroups, frame, lists) = match dispatch {
            Dispatch::Cull { crowd, workgroups, .. } => {
                let b = crowds[crowd].gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?;
                (crowd, workgroups, crowds[crowd].gpu.frame_sets[compute], b.compute)
            }
            Dispatch::CullView { crowd, view, workgroups, .. } => {
                let gpu = &crowds[crowd].gpu;
                let (Some(u), Some(l)) =
                    (gpu.views.get(view), gpu.buffers.as_ref().and_then(|b| b.views.get(view)))
                else {
                    return Err(Missing::ViewLists { crowd, view }.into());
                };
                (crowd, workgroups, u.compute, l.compute)
            }
            Dispatch::Scatter { crowd, .. } => return Err(Missing::CrowdBuffers(crowd).into()),
        };
        if self.cull_pipeline.is_none() {
            self.cull_pipeline = Some(self.renderer.compute_pipeline(CULL)?);
        }
        Ok(([frame, crowds[crowd].asset.sets[compute], lists], workgroups))
    }

    /// Finds or queues `command`; see [`FrameBackend::command`].
    fn run(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
        command: &Command,
    ) -> Result<(), VulkanError> {
        let r = &mut *self.renderer;
        match command {
            Command::HostShadowGroups => r.host_shadow_sets(crowds, plan)?,
            Command::BeginUploads { .. } | Command::EndUploads { .. } => {}
            Command::GrowCrowd { crowd, capacity } => r.grow_crowd(crowds[*crowd].gpu, *capacity)?,
            Command::GrowScatter { crowd, records } => {
                let buffers = crowds[*crowd].gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_scatter(buffers, *records)?;
            }
            Command::GrowViewLists { crowd, views } => {
                let gpu = &mut *crowds[*crowd].gpu;
                let capacity = gpu.sync.capacity();
                let buffers = gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_view_lists(buffers, capacity, *views)?;
            }
            Command::GrowViewUniforms { crowd, views } => r.grow_views(crowds[*crowd].gpu, *views)?,
            Command::Write { target, offset, data } => {
                let bytes = plan.bytes(target.crowd().map(|k| (k, &*crowds[k].crowd)), data);
                let buffer = r.buffer(crowds, *target)?;
                if !bytes.is_empty() {
                    self.writes.push((buffer, *offset, bytes.to_vec()));
                }
            }
            Command::Copy { from, to, bytes } => {
                self.copies.push((r.buffer(crowds, *from)?, r.buffer(crowds, *to)?, *bytes));
            }
            Command::Dispatch(Dispatch::Scatter { crowd, workgroups, .. }) => {
                let scatter = crowds[*crowd].gpu.buffers.as_ref().and_then(|b| b.scatter.as_ref());
                let scatter = scatter.ok_or(Missing::Buffer(BufferId::ScatterRecords { crowd: *crowd }))?;
                self.scatters.push((scatter.set, *workgroups));
            }
            Command::Dispatch(dispatch) => {
                let cull = self.cull_sets(crowds, *dispatch)?;
                self.culls.push(cull);
            }
            Command::CopyCounts { crowd } => {
                let gpu = &crowds[*crowd].gpu;
                if let Some(slot) = gpu.counts.ring.current_slot()
                    && let (Some(b), Some(s)) = (&gpu.buffers, gpu.counts.slots.get(slot))
                {
                    self.counts.push((b.draw_args.buffer, s.buffer.buffer, s.event));
                }
            }
            Command::BeginPass(Pass::Shadow) => self.shadow_open = Some(Vec::new()),
            Command::Draw { index } => self.shadow_open.get_or_insert_default().push(*index),
            Command::EndPass => {
                let draws: Vec<Draw> = self
                    .shadow_open
                    .take()
                    .unwrap_or_default()
                    .iter()
                    .map(|&i| plan.depth[i].clone())
                    .collect();
                let pipelines = r.pipelines_for(&draws, SHADOW_PASS)?;
                self.shadow = Some(r.find_draws(StageSet::Depth, None, &draws, crowds, &pipelines)?);
            }
        }
        Ok(())
    }

    /// Records the queued writes, resets and dispatches with their barriers.
    fn record_compute(&self) {
        let d = &self.renderer.ctx.device;
        let cb = self.cb;
        let shader_reads = vk::PipelineStageFlags::VERTEX_SHADER
            | vk::PipelineStageFlags::FRAGMENT_SHADER
            | vk::PipelineStageFlags::COMPUTE_SHADER
            | vk::PipelineStageFlags::DRAW_INDIRECT;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let compute_write = (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE);
        // SAFETY: `cb` is recording outside a render pass (prepare's contract); every object
        // recorded is live and owned by the renderer, an asset or a crowd of the frame; the pipelines
        // were made with the layouts the sets are bound with.
        unsafe {
            // Writes, after the previous frame's reads and writes of the same buffers.
            memory_barrier(
                d,
                cb,
                (shader_reads | transfer, vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE),
                (transfer, vk::AccessFlags::TRANSFER_WRITE),
            );
            for (buffer, offset, bytes) in &self.writes {
                for (k, chunk) in bytes.chunks(UPDATE_CHUNK).enumerate() {
                    d.cmd_update_buffer(cb, *buffer, offset + (k * UPDATE_CHUNK) as u64, chunk);
                }
            }
            // Draw arguments reset from the template (GPU culling).
            if !self.copies.is_empty() {
                let write_read = (transfer, vk::AccessFlags::TRANSFER_READ);
                memory_barrier(d, cb, (transfer, vk::AccessFlags::TRANSFER_WRITE), write_read);
                for &(from, to, size) in &self.copies {
                    d.cmd_copy_buffer(cb, from, to, &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size }]);
                }
            }
            let reads = vk::AccessFlags::UNIFORM_READ
                | vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::INDIRECT_COMMAND_READ;
            memory_barrier(d, cb, (transfer, vk::AccessFlags::TRANSFER_WRITE), (shader_reads, reads));
            // Every scatter, a barrier, every culling pass, a barrier.
            let r = &*self.renderer;
            for &(set, [x, y]) in &self.scatters {
                let compute = vk::PipelineBindPoint::COMPUTE;
                d.cmd_bind_pipeline(cb, compute, r.scatter_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    compute,
                    r.scatter_pipeline_layout,
                    gpu::GROUP_SCATTER,
                    &[set],
                    &[],
                );
                d.cmd_dispatch(cb, x, y, 1);
            }
            if !self.scatters.is_empty() {
                let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::VERTEX_SHADER;
                memory_barrier(d, cb, compute_write, (stages, vk::AccessFlags::SHADER_READ));
            }
            let layout = r.pipeline_layouts[StageSet::Compute as usize];
            for (sets, [x, y]) in &self.culls {
                if let Some(pipeline) = self.cull_pipeline {
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
                }
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, sets, &[]);
                d.cmd_dispatch(cb, *x, *y, 1);
            }
            if !self.culls.is_empty() {
                let stages =
                    vk::PipelineStageFlags::VERTEX_SHADER | vk::PipelineStageFlags::DRAW_INDIRECT | transfer;
                let access = vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::INDIRECT_COMMAND_READ
                    | vk::AccessFlags::TRANSFER_READ;
                memory_barrier(d, cb, compute_write, (stages, access));
                self.record_counts();
            }
        }
    }

    /// This frame's culling counts, copied for read-back without waiting: the copies, a barrier
    /// making them visible to host reads, then the slots' events.
    fn record_counts(&self) {
        if self.counts.is_empty() {
            return;
        }
        let d = &self.renderer.ctx.device;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        let region = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: gpu::DRAW_ARGS_BYTES }];
        // SAFETY: outside a render pass, after the culling barrier; the buffers and events are the
        // crowds'.
        unsafe {
            for &(from, to, _) in &self.counts {
                d.cmd_copy_buffer(self.cb, from, to, &region);
            }
            let host = (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ);
            memory_barrier(d, self.cb, (transfer, vk::AccessFlags::TRANSFER_WRITE), host);
            for &(_, _, event) in &self.counts {
                d.cmd_set_event(self.cb, event, transfer);
            }
        }
    }
}

impl FrameBackend for Replay<'_> {
    type Asset = GpuAsset;
    type Crowd = GpuCrowd;
    type Error = VulkanError;

    fn info(asset: &GpuAsset) -> &AssetDrawInfo {
        &asset.info
    }

    fn sync(crowd: &mut GpuCrowd) -> &mut CrowdSync {
        &mut crowd.sync
    }

    fn ring(crowd: &GpuCrowd) -> &CountsRing {
        &crowd.counts.ring
    }

    fn ring_mut(crowd: &mut GpuCrowd) -> &mut CountsRing {
        &mut crowd.counts.ring
    }

    fn plan_limits(&self) -> PlanLimits {
        PlanLimits { max_storage_buffer_bytes: crate::renderer::storage_limit(&self.renderer.ctx) }
    }

    fn begin_frame(&mut self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), VulkanError> {
        self.renderer.begin_counts(crowds, culling)
    }

    fn command(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
        command: &Command,
    ) -> Result<(), VulkanError> {
        self.run(crowds, plan, command)
    }

    fn finish(&mut self, crowds: &mut [CrowdDraw<'_>], plan: &FramePlan) -> Result<(), VulkanError> {
        let r = &*self.renderer;
        for draw in &plan.colour {
            r.bindings(StageSet::Colour, None, draw, crowds)?;
        }
        for (view, draws) in plan.view_depth.iter().enumerate() {
            for draw in draws {
                r.bindings(StageSet::Depth, Some(view), draw, crowds)?;
            }
        }
        // From here on nothing fails: record.
        self.record_compute();
        if let Some(draws) = &self.shadow {
            self.renderer.record_shadow_pass(self.cb, draws);
        }
        Ok(())
    }

    fn end_frame(
        &mut self,
        _: &mut [CrowdDraw<'_>],
        result: Result<(), VulkanError>,
    ) -> Result<(), VulkanError> {
        result
    }
}

impl Renderer {
    /// The buffer `id` names.
    fn buffer(&self, crowds: &[CrowdDraw<'_>], id: BufferId) -> Result<vk::Buffer, Missing> {
        let buffers = |k: usize| crowds[k].gpu.buffers.as_ref();
        let found = match id {
            BufferId::Records { crowd } => buffers(crowd).map(|b| b.records.buffer),
            BufferId::List { crowd } => buffers(crowd).map(|b| b.list.buffer),
            BufferId::UserData { crowd } => buffers(crowd).map(|b| b.user_data.buffer),
            BufferId::ScatterIndices { crowd } => {
                buffers(crowd).and_then(|b| Some(b.scatter.as_ref()?.indices.buffer))
            }
            BufferId::ScatterRecords { crowd } => {
                buffers(crowd).and_then(|b| Some(b.scatter.as_ref()?.records.buffer))
            }
            BufferId::ArgsTemplate { crowd } => buffers(crowd).map(|b| b.args_template.buffer),
            BufferId::CullParams { crowd } => buffers(crowd).map(|b| b.cull_params.buffer),
            BufferId::DrawArgs { crowd } => buffers(crowd).map(|b| b.draw_args.buffer),
            BufferId::ViewDrawArgs { crowd, view } => {
                buffers(crowd).and_then(|b| Some(b.views.get(view)?.draw_args.buffer))
            }
            BufferId::Uniforms { crowd } => Some(crowds[crowd].gpu.frame_buffer.buffer),
            BufferId::ViewUniforms { crowd, view } => {
                crowds[crowd].gpu.views.get(view).map(|v| v.buffer.buffer)
            }
            BufferId::FrameUniforms => Some(self.frame_buffer.buffer),
        };
        found.ok_or(Missing::Buffer(id))
    }

    /// Set 0 over the host's shadow map for every crowd, and for the renderer's own uniforms when
    /// the frame has them: the colour draws sample it.
    fn host_shadow_sets(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
    ) -> Result<(), VulkanError> {
        let view = self.host_shadow.ok_or(VulkanError::NoHostShadowMap)?;
        for draw in crowds.iter_mut() {
            let (gpu, renderer) = (&mut *draw.gpu, &*self);
            gpu.host_frame_sets.get_or_insert(
                view,
                || renderer.host_frame_sets_for(gpu.frame_buffer.buffer, view),
                |old| renderer.release_host_frame_sets(old),
            )?;
        }
        if plan.frame_uniforms.is_some() {
            let sets = self.host_frame_sets_for(self.frame_buffer.buffer, view)?;
            let mut cache = std::mem::take(&mut self.host_frame_sets);
            cache.get_or_insert::<VulkanError>(view, || Ok(sets), |old| self.release_host_frame_sets(old))?;
            self.host_frame_sets = cache;
        }
        self.frame_host_shadow = Some(view);
        Ok(())
    }

    /// Records the built-in shadow pass with `draws`: vat's own depth image, cleared, and its layout
    /// transitions.
    fn record_shadow_pass(&self, cb: vk::CommandBuffer, draws: &[FoundDraw]) {
        let d = &self.ctx.device;
        let range = vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::DEPTH, ..color_range() };
        let shadow_barrier = |old,
                              new,
                              src: (vk::PipelineStageFlags, vk::AccessFlags),
                              dst: (vk::PipelineStageFlags, vk::AccessFlags)| {
            let b = [vk::ImageMemoryBarrier::default()
                .src_access_mask(src.1)
                .dst_access_mask(dst.1)
                .old_layout(old)
                .new_layout(new)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(self.shadow_image)
                .subresource_range(range)];
            // SAFETY: outside dynamic rendering; the shadow map is the renderer's.
            unsafe { d.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b) };
        };
        let tests =
            vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let depth_rw =
            vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
        // Previous contents are cleared: the old layout may be discarded.
        shadow_barrier(
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::empty()),
            (tests, depth_rw),
        );
        let size = [self.shadow_size, self.shadow_size];
        let depth_attachment = vk::RenderingAttachmentInfo::default()
            .image_view(self.shadow_view)
            .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            });
        let info = vk::RenderingInfo::default()
            .render_area(full_rect(size))
            .layer_count(1)
            .depth_attachment(&depth_attachment);
        // SAFETY: outside any render pass; the attachment is in the layout given.
        unsafe { d.cmd_begin_rendering(cb, &info) };
        self.record_draws(cb, StageSet::Depth, full_rect(size), draws);
        // SAFETY: ends the rendering begun above.
        unsafe { d.cmd_end_rendering(cb) };
        shadow_barrier(
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            (vk::PipelineStageFlags::LATE_FRAGMENT_TESTS, vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE),
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
        );
    }

    /// The graphics pipelines of `draws` for a pass of `formats`, each once.
    ///
    /// # Errors
    /// Those of creating a pipeline.
    pub(crate) fn pipelines_for(
        &mut self,
        draws: &[Draw],
        formats: crate::PassFormats,
    ) -> Result<Vec<(PipelineKey, vk::Pipeline)>, VulkanError> {
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = Vec::new();
        for draw in draws {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)?));
            }
        }
        Ok(pipelines)
    }

    /// The set 0 of `set` a draw binds: over the host's shadow map when the prepared frame's
    /// colour draws sample it, else `own` (over vat's).
    fn frame_set(
        &self,
        set: StageSet,
        own: &[vk::DescriptorSet],
        host: &HostMapCache<vk::ImageView, HostFrameSets>,
    ) -> Option<vk::DescriptorSet> {
        match self.frame_host_shadow {
            Some(view) if set == StageSet::Colour => host.get(&view)?.sets.get(set as usize).copied(),
            _ => own.get(set as usize).copied(),
        }
    }

    /// What `draw` binds in a pass of `set` (each crowd's set 0 that of extra view `view` when
    /// given).
    fn bindings(
        &self,
        set: StageSet,
        view: Option<usize>,
        draw: &Draw,
        crowds: &[CrowdDraw<'_>],
    ) -> Result<Bindings, Missing> {
        match draw.resources {
            DrawResources::Crowd { crowd, instances } => {
                let c = &crowds[crowd];
                let b = c.gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?;
                let frame = match view {
                    Some(v) => c.gpu.views.get(v).map(|u| u.depth),
                    None => self.frame_set(set, &c.gpu.frame_sets, &c.gpu.host_frame_sets),
                };
                let frame = frame.ok_or(Missing::FrameGroup { crowd: Some(crowd), view })?;
                let lists = b.group(set, instances).ok_or(Missing::CrowdBuffers(crowd))?;
                let args = match draw.geometry {
                    DrawGeometry::IndexedIndirect { .. } => {
                        Some(b.draw_args_of(instances).ok_or(Missing::CrowdBuffers(crowd))?)
                    }
                    _ => None,
                };
                let sets = [frame, c.asset.sets[set as usize], lists];
                Ok(Bindings::Crowd { sets, index: c.asset.index_buffer, args })
            }
            DrawResources::FrameOnly { crowd } => {
                let frame_set = match crowd {
                    Some(k) => self.frame_set(set, &crowds[k].gpu.frame_sets, &crowds[k].gpu.host_frame_sets),
                    None => self.frame_set(set, &self.frame_sets, &self.host_frame_sets),
                };
                Ok(Bindings::FrameOnly(frame_set.ok_or(Missing::FrameGroup { crowd, view: None })?))
            }
        }
    }

    /// `draws` of a pass of `set` with their resources and pipelines found.
    ///
    /// # Errors
    /// [`Missing`] for a resource or pipeline not found.
    pub(crate) fn find_draws(
        &self,
        set: StageSet,
        view: Option<usize>,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        pipelines: &[(PipelineKey, vk::Pipeline)],
    ) -> Result<Vec<FoundDraw>, Missing> {
        draws
            .iter()
            .map(|draw| {
                let bindings = self.bindings(set, view, draw, crowds)?;
                let found = pipelines.iter().find(|(k, _)| *k == draw.pipeline);
                let pipeline = found.ok_or(Missing::Pipeline(draw.pipeline))?.1;
                Ok(FoundDraw { draw: draw.clone(), bindings, pipeline })
            })
            .collect()
    }

    /// Records `draws` into `cb` inside dynamic rendering (pipelines of `set`'s layouts), binding
    /// only what changes from one draw to the next; sets the viewport (y flipped, wgpu-hal's
    /// convention) and scissor to `area` once. Leaves the last pipeline, sets and index buffer bound.
    pub(crate) fn record_draws(
        &self,
        cb: vk::CommandBuffer,
        set: StageSet,
        area: vk::Rect2D,
        draws: &[FoundDraw],
    ) {
        let d = &self.ctx.device;
        let graphics = vk::PipelineBindPoint::GRAPHICS;
        // SAFETY: inside dynamic rendering begun by the caller; the sets match the layouts, the
        // pipelines are graphics pipelines of this device; the draw args buffers hold
        // DRAW_ARGS_COUNT draws and have INDIRECT usage.
        unsafe {
            d.cmd_set_viewport(cb, 0, &[flipped_viewport(area)]);
            d.cmd_set_scissor(cb, 0, &[area]);
            let mut bound: Option<DrawResources> = None;
            let mut current: Option<PipelineKey> = None;
            for FoundDraw { draw, bindings, pipeline } in draws {
                if bound != Some(draw.resources) {
                    match *bindings {
                        Bindings::Crowd { sets, index, .. } => {
                            let layout = self.pipeline_layouts[set as usize];
                            d.cmd_bind_descriptor_sets(cb, graphics, layout, 0, &sets, &[]);
                            d.cmd_bind_index_buffer(cb, index, 0, vk::IndexType::UINT32);
                        }
                        Bindings::FrameOnly(frame) => {
                            d.cmd_bind_descriptor_sets(
                                cb,
                                graphics,
                                self.frame_only_layout,
                                0,
                                &[frame],
                                &[],
                            );
                        }
                    }
                    bound = Some(draw.resources);
                }
                if current != Some(draw.pipeline) {
                    d.cmd_bind_pipeline(cb, graphics, *pipeline);
                    current = Some(draw.pipeline);
                }
                match (&draw.geometry, *bindings) {
                    (DrawGeometry::Indexed { indices, instances }, _) => d.cmd_draw_indexed(
                        cb,
                        indices.end - indices.start,
                        instances.end - instances.start,
                        indices.start,
                        0,
                        instances.start,
                    ),
                    (DrawGeometry::IndexedIndirect { offset }, Bindings::Crowd { args: Some(args), .. }) => {
                        d.cmd_draw_indexed_indirect(cb, args, *offset, 1, 0);
                    }
                    (DrawGeometry::IndexedIndirect { .. }, _) => {}
                    (DrawGeometry::Vertices { vertices, instances }, _) => d.cmd_draw(
                        cb,
                        vertices.end - vertices.start,
                        instances.end - instances.start,
                        vertices.start,
                        instances.start,
                    ),
                }
            }
        }
    }
}
