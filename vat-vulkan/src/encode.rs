//! Replaying a frame's recording (`vat_core::backend::frame::Command`) on Vulkan: [`Replay`] is this
//! backend's [`FrameBackend`], one `match` over the commands whose ids vat-core resolves
//! (`vat_core::backend::resolve`). Everything that can fail (buffer growth, pipelines, finding every
//! resource) happens while the commands are matched and in [`FrameBackend::finish`] before it
//! records what they queued with the barriers (`vkCmdUpdateBuffer` writes, draw-argument resets,
//! dispatches, the shadow pass). Nothing here decides what is drawn or finds a resource.

use ash::vk;
use vat_core::backend::frame::{Command, Draw, FrameBackend, FramePlan, Missing, PlanLimits, Step};
use vat_core::backend::gpu;
use vat_core::backend::pipeline::PipelineKey;
use vat_core::backend::{
    Compute, DrawStep, Found, RendererFrame, Stage, buffer, compute, draw_steps, find_draws,
};
use vat_core::render::Culling;

use crate::crowd::VkHandles;
use crate::owned::{HostBuffer, color_range};
use crate::pipelines::CULL;
use crate::renderer::{CrowdDraw, HostFrameSets, StageSet, flipped_viewport, full_rect, memory_barrier};
use crate::{Error, Renderer, RendererConfig};

/// Most bytes one `vkCmdUpdateBuffer` may write.
const UPDATE_CHUNK: usize = 65536;
// `vkCmdUpdateBuffer` writes whole words.
const _: () = assert!(size_of::<vat_core::backend::gpu::FrameUniforms>().is_multiple_of(4));

/// A draw with its resources and pipeline found: recording it cannot fail.
pub(crate) type FoundDraw<'a> = Found<'a, VkHandles, vk::Pipeline>;

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
    /// The shadow pass's pipelines; `None`: no shadow pass.
    shadow: Option<Vec<(PipelineKey, vk::Pipeline)>>,
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
            shadow: None,
            cull_pipeline: None,
        }
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
    type Handles = VkHandles;
    type Error = Error;

    fn plan_limits(&self) -> PlanLimits {
        PlanLimits { max_storage_buffer_bytes: crate::renderer::storage_limit(&self.renderer.ctx) }
    }

    fn own(&mut self) -> &mut RendererFrame<VkHandles> {
        &mut self.renderer.own
    }

    fn host_groups(&self, frame: &HostBuffer, map: &vk::ImageView) -> Result<HostFrameSets, Error> {
        self.renderer.host_frame_sets_for(frame.buffer, *map)
    }

    fn release_host_groups(&self, old: HostFrameSets) {
        self.renderer.release_host_frame_sets(old);
    }

    fn begin_frame(&mut self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), Error> {
        self.renderer.begin_counts(crowds, culling)
    }

    /// Finds or queues `command`.
    fn command(&mut self, Step { crowds, plan, command }: Step<'_, '_, Self>) -> Result<(), Error> {
        let r = &mut *self.renderer;
        match command {
            // Growth is not caught per crowd on Vulkan (each allocation reports itself); the host's
            // groups are the driver's.
            Command::BeginUploads { .. } | Command::EndUploads { .. } | Command::HostShadowGroups => {}
            Command::GrowCrowd { crowd, capacity } => r.grow_crowd(crowds[*crowd].gpu, *capacity)?,
            Command::GrowScatter { crowd, records } => {
                let buffers = crowds[*crowd].gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_scatter(buffers, *records)?;
            }
            Command::GrowViewLists { crowd, views } => {
                let gpu = &mut *crowds[*crowd].gpu;
                let capacity = gpu.sync.capacity();
                let buffers = gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                buffers.grow_view_lists(*views, |b| r.view_lists(b, capacity))?;
            }
            Command::GrowViewUniforms { crowd, views } => r.grow_views(crowds[*crowd].gpu, *views)?,
            Command::Write { target, offset, data } => {
                let bytes = plan.bytes(target.crowd().map(|k| (k, &*crowds[k].crowd)), data);
                let to = buffer(crowds, &r.own.frame_buffer, *target)?.buffer;
                if !bytes.is_empty() {
                    self.writes.push((to, *offset, bytes.to_vec()));
                }
            }
            Command::Copy { from, to, bytes } => {
                let own = &r.own.frame_buffer;
                let (from, to) = (buffer(crowds, own, *from)?.buffer, buffer(crowds, own, *to)?.buffer);
                self.copies.push((from, to, *bytes));
            }
            Command::Dispatch(dispatch) => match compute(crowds, *dispatch)? {
                Compute::Scatter { group, workgroups } => self.scatters.push((*group, workgroups)),
                Compute::Cull { groups: [g0, g1, g2], workgroups } => {
                    if self.cull_pipeline.is_none() {
                        self.cull_pipeline = Some(r.compute_pipeline(CULL)?);
                    }
                    self.culls.push(([*g0, *g1, *g2], workgroups));
                }
            },
            Command::CopyCounts { crowd } => {
                if let Some((args, slot)) = crowds[*crowd].gpu.counts_copy() {
                    self.counts.push((args.buffer, slot.buffer.buffer, slot.event));
                }
            }
            Command::ShadowPass => {
                self.shadow = Some(r.pipelines_for(&plan.depth, RendererConfig::SHADOW_PASS)?)
            }
        }
        Ok(())
    }

    fn finish(&mut self, crowds: &mut [CrowdDraw<'_>], plan: &FramePlan) -> Result<(), Error> {
        let r = &*self.renderer;
        let shadow = match &self.shadow {
            Some(pipelines) => {
                Some(find_draws(crowds, &r.own, (Stage::Depth, None), &plan.depth, pipelines)?)
            }
            None => None,
        };
        // From here on nothing fails: record.
        self.record_compute();
        if let Some(draws) = &shadow {
            r.record_shadow_pass(self.cb, draws);
        }
        Ok(())
    }
}

impl Renderer {
    /// Records the built-in shadow pass with `draws`: vat's own depth image, cleared, and its layout
    /// transitions.
    fn record_shadow_pass(&self, cb: vk::CommandBuffer, draws: &[FoundDraw<'_>]) {
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
    ) -> Result<Vec<(PipelineKey, vk::Pipeline)>, Error> {
        vat_core::backend::pipelines_for(draws, |key| self.render_pipeline(key, formats))
    }

    /// Records `draws` into `cb` inside dynamic rendering (pipelines of `set`'s layouts), binding
    /// only what changes from one draw to the next; sets the viewport (y flipped, wgpu-hal's
    /// convention) and scissor to `area` once. Leaves the last pipeline, sets and index buffer bound.
    pub(crate) fn record_draws(
        &self,
        cb: vk::CommandBuffer,
        set: Stage,
        area: vk::Rect2D,
        draws: &[FoundDraw<'_>],
    ) {
        let d = &self.ctx.device;
        let graphics = vk::PipelineBindPoint::GRAPHICS;
        // SAFETY: inside dynamic rendering begun by the caller; the sets match the layouts, the
        // pipelines are graphics pipelines of this device; the draw args buffers hold
        // DRAW_ARGS_COUNT draws and have INDIRECT usage.
        unsafe {
            d.cmd_set_viewport(cb, 0, &[flipped_viewport(area)]);
            d.cmd_set_scissor(cb, 0, &[area]);
            let layouts = (self.pipeline_layouts[set as usize], self.frame_only_layout);
            draw_steps(draws, |step| match step {
                DrawStep::BindCrowd { groups: [g0, g1, g2], index } => {
                    d.cmd_bind_descriptor_sets(cb, graphics, layouts.0, 0, &[*g0, *g1, *g2], &[]);
                    d.cmd_bind_index_buffer(cb, *index, 0, vk::IndexType::UINT32);
                }
                DrawStep::BindFrameOnly(frame) => {
                    d.cmd_bind_descriptor_sets(cb, graphics, layouts.1, 0, &[*frame], &[]);
                }
                DrawStep::Pipeline(pipeline) => d.cmd_bind_pipeline(cb, graphics, *pipeline),
                DrawStep::Indexed { indices, instances } => d.cmd_draw_indexed(
                    cb,
                    indices.len() as u32,
                    instances.len() as u32,
                    indices.start,
                    0,
                    instances.start,
                ),
                DrawStep::IndexedIndirect { args, offset } => {
                    d.cmd_draw_indexed_indirect(cb, args.buffer, offset, 1, 0);
                }
                DrawStep::Vertices { vertices, instances } => {
                    d.cmd_draw(
                        cb,
                        vertices.len() as u32,
                        instances.len() as u32,
                        vertices.start,
                        instances.start,
                    );
                }
            });
        }
    }
}
