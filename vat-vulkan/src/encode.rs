//! Carrying out a [`FramePlan`]: buffer growth, the writes (`vkCmdUpdateBuffer`), dispatches, the
//! depth and colour passes, with their barriers; the Vulkan twin of vat-wgpu's `encode.rs`:
//! `Renderer::encode_prepare` records what comes before the host's rendering, `Renderer::encode_colour`
//! the draws inside it. Nothing here decides what is drawn.

use ash::vk;
use vat_core::frame::{CrowdPlan, Dispatch, Draw, DrawGeometry, DrawResources, FramePlan, HostMapCache};
use vat_core::gpu;
use vat_core::instance::InstanceRecord;
use vat_core::pipeline::PipelineKey;

use crate::crowd::CrowdBuffers;
use crate::owned::color_range;
use crate::pipelines::{CULL, PassFormats, PrepassFormats, SHADOW_PASS};
use crate::renderer::{CrowdDraw, HostFrameSets, StageSet, flipped_viewport, full_rect, memory_barrier};
use crate::{Renderer, VulkanError};

/// Most bytes one `vkCmdUpdateBuffer` may write.
const UPDATE_CHUNK: usize = 65536;
// `vkCmdUpdateBuffer` writes whole words.
const _: () = assert!(size_of::<vat_core::gpu::FrameUniforms>().is_multiple_of(4));

/// Buffer writes of one frame, recorded with `vkCmdUpdateBuffer` before the passes: (buffer, byte
/// offset, bytes).
type Writes = Vec<(vk::Buffer, u64, Vec<u8>)>;

/// Queues `bytes` for `buffer` at byte `offset` (both multiples of 4).
fn queue_write(writes: &mut Writes, buffer: vk::Buffer, offset: u64, bytes: &[u8]) {
    if !bytes.is_empty() {
        writes.push((buffer, offset, bytes.to_vec()));
    }
}

fn buffers_of<'a>(draw: &'a CrowdDraw<'_>) -> Result<&'a CrowdBuffers, VulkanError> {
    draw.gpu.buffers.as_ref().ok_or(VulkanError::Internal("crowd buffers missing"))
}

impl Renderer {
    /// Grows `draw`'s buffers as `plan` says and queues its writes: changed records and list entries,
    /// the scatter's packed records, the culling inputs and its uniforms.
    fn upload_crowd(
        &self,
        draw: &mut CrowdDraw<'_>,
        plan: &CrowdPlan,
        writes: &mut Writes,
    ) -> Result<(), VulkanError> {
        if let Some(capacity) = plan.grow {
            self.grow_crowd(draw.gpu, capacity)?;
        }
        if let Some(capacity) = plan.grow_scatter {
            let buffers = draw.gpu.buffers.as_mut().ok_or(VulkanError::Internal("crowd buffers missing"))?;
            self.grow_scatter(buffers, capacity)?;
        }
        if let Some(views) = plan.grow_view_lists {
            let capacity = draw.gpu.sync.capacity();
            let buffers = draw.gpu.buffers.as_mut().ok_or(VulkanError::Internal("crowd buffers missing"))?;
            self.grow_view_lists(buffers, capacity, views)?;
        }
        let buffers = buffers_of(draw)?;
        let records = draw.crowd.records();
        for r in &plan.record_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&records[r.start as usize..r.end as usize]);
            queue_write(
                writes,
                buffers.records.buffer,
                u64::from(r.start) * size_of::<InstanceRecord>() as u64,
                bytes,
            );
        }
        for (first, r) in &plan.previous_record_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&plan.previous_records[r.start as usize..r.end as usize]);
            let offset = u64::from(*first) * size_of::<InstanceRecord>() as u64;
            queue_write(writes, buffers.records.buffer, offset, bytes);
        }
        if let Some(r) = &plan.list_writes {
            let list = &draw.crowd.instance_list()[r.start as usize..r.end as usize];
            queue_write(writes, buffers.list.buffer, u64::from(r.start) * 4, bytemuck::cast_slice(list));
        }
        let user_data = draw.crowd.user_data();
        for r in &plan.user_data_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&user_data[r.start as usize..r.end as usize]);
            queue_write(writes, buffers.user_data.buffer, u64::from(r.start) * 16, bytes);
        }
        if plan.scatter.scattered() > 0 {
            let scatter = buffers.scatter.as_ref().ok_or(VulkanError::Internal("scatter buffers missing"))?;
            queue_write(writes, scatter.indices.buffer, 0, bytemuck::cast_slice(&plan.scatter.indices));
            queue_write(writes, scatter.records.buffer, 0, bytemuck::cast_slice(&plan.scatter.records));
        }
        if let Some(template) = &plan.args_template {
            queue_write(writes, buffers.args_template.buffer, 0, bytemuck::cast_slice(template));
        }
        if let Some(params) = &plan.cull_params {
            queue_write(writes, buffers.cull_params.buffer, 0, bytemuck::bytes_of(params));
        }
        queue_write(writes, draw.gpu.frame_buffer.buffer, 0, bytemuck::bytes_of(&plan.uniforms));
        self.grow_views(draw.gpu, plan.view_uniforms.len())?;
        for (uniforms, view) in plan.view_uniforms.iter().zip(&draw.gpu.views) {
            queue_write(writes, view.buffer.buffer, 0, bytemuck::bytes_of(uniforms));
        }
        Ok(())
    }

    /// Records the part of `plan` outside any rendering into `cb` (recording, outside any render
    /// pass): writes, draw-argument resets, dispatches and the built-in shadow pass, with their
    /// barriers. Everything that can fail (pipelines, buffer growth) happens before anything is
    /// recorded. On error the caller marks every crowd unsynced.
    pub(crate) fn encode_prepare(
        &mut self,
        cb: vk::CommandBuffer,
        plan: &FramePlan,
        crowds: &mut [CrowdDraw<'_>],
    ) -> Result<(), VulkanError> {
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = Vec::new();
        for draw in &plan.depth {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, SHADOW_PASS)?));
            }
        }
        let cull_pipeline = self.compute_pipeline(CULL)?;
        // Set 0 over the host's shadow map, when the colour draws sample it.
        self.frame_host_shadow = None;
        if plan.host_shadow_map {
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
                cache.get_or_insert::<VulkanError>(
                    view,
                    || Ok(sets),
                    |old| self.release_host_frame_sets(old),
                )?;
                self.host_frame_sets = cache;
            }
            self.frame_host_shadow = Some(view);
        }
        let mut writes = Writes::new();
        for (draw, crowd_plan) in crowds.iter_mut().zip(&plan.crowds) {
            self.upload_crowd(draw, crowd_plan, &mut writes)?;
        }
        if let Some(uniforms) = &plan.frame_uniforms {
            queue_write(&mut writes, self.frame_buffer.buffer, 0, bytemuck::bytes_of(uniforms));
        }
        for (draw, crowd_plan) in crowds.iter().zip(&plan.crowds) {
            let b = buffers_of(draw)?;
            if b.views.len() < crowd_plan.reset_view_draw_args as usize {
                return Err(VulkanError::Internal("view lists missing"));
            }
        }
        for dispatch in &plan.dispatches {
            if let Dispatch::CullView { crowd, view, .. } = *dispatch
                && (crowds[crowd].gpu.views.len() <= view || buffers_of(&crowds[crowd])?.views.len() <= view)
            {
                return Err(VulkanError::Internal("view lists missing"));
            }
        }
        let crowds = &*crowds;

        // From here on nothing fails: record.
        let d = &self.ctx.device;
        let shader_reads = vk::PipelineStageFlags::VERTEX_SHADER
            | vk::PipelineStageFlags::FRAGMENT_SHADER
            | vk::PipelineStageFlags::COMPUTE_SHADER
            | vk::PipelineStageFlags::DRAW_INDIRECT;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        // SAFETY: `cb` is recording outside a render pass (the caller's contract); every object
        // recorded is live and owned by the renderer, an asset or a crowd of the frame; the pipelines
        // were made with the layouts the sets are bound with.
        unsafe {
            // 1. Writes, after the previous frame's reads and writes of the same buffers.
            memory_barrier(
                d,
                cb,
                (shader_reads | transfer, vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE),
                (transfer, vk::AccessFlags::TRANSFER_WRITE),
            );
            for (buffer, offset, bytes) in &writes {
                for (k, chunk) in bytes.chunks(UPDATE_CHUNK).enumerate() {
                    d.cmd_update_buffer(cb, *buffer, offset + (k * UPDATE_CHUNK) as u64, chunk);
                }
            }
            // 2. Draw arguments reset from the template (GPU culling).
            if plan.crowds.iter().any(|c| c.reset_draw_args || c.reset_view_draw_args > 0) {
                memory_barrier(
                    d,
                    cb,
                    (transfer, vk::AccessFlags::TRANSFER_WRITE),
                    (transfer, vk::AccessFlags::TRANSFER_READ),
                );
                let region = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: gpu::DRAW_ARGS_BYTES }];
                for (draw, crowd_plan) in crowds.iter().zip(&plan.crowds) {
                    let Some(b) = &draw.gpu.buffers else { continue };
                    if crowd_plan.reset_draw_args {
                        d.cmd_copy_buffer(cb, b.args_template.buffer, b.draw_args.buffer, &region);
                    }
                    for v in b.views.iter().take(crowd_plan.reset_view_draw_args as usize) {
                        d.cmd_copy_buffer(cb, b.args_template.buffer, v.draw_args.buffer, &region);
                    }
                }
            }
            memory_barrier(
                d,
                cb,
                (transfer, vk::AccessFlags::TRANSFER_WRITE),
                (
                    shader_reads,
                    vk::AccessFlags::UNIFORM_READ
                        | vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::INDIRECT_COMMAND_READ,
                ),
            );
            // 3. Dispatches: every scatter, a barrier, every culling pass, a barrier.
            let mut scattered = false;
            for dispatch in &plan.dispatches {
                let Dispatch::Scatter { crowd, workgroups: [x, y], .. } = *dispatch else { continue };
                let Some(scatter) = crowds[crowd].gpu.buffers.as_ref().and_then(|b| b.scatter.as_ref())
                else {
                    continue;
                };
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.scatter_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    self.scatter_pipeline_layout,
                    gpu::GROUP_SCATTER,
                    &[scatter.set],
                    &[],
                );
                d.cmd_dispatch(cb, x, y, 1);
                scattered = true;
            }
            if scattered {
                memory_barrier(
                    d,
                    cb,
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (
                        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::VERTEX_SHADER,
                        vk::AccessFlags::SHADER_READ,
                    ),
                );
            }
            let mut culled = false;
            for dispatch in &plan.dispatches {
                let compute = StageSet::Compute as usize;
                let (crowd, [x, y], frame, lists) = match *dispatch {
                    Dispatch::Cull { crowd, workgroups, .. } => {
                        let Some(b) = &crowds[crowd].gpu.buffers else { continue };
                        (crowd, workgroups, crowds[crowd].gpu.frame_sets[compute], b.compute)
                    }
                    Dispatch::CullView { crowd, view, workgroups, .. } => {
                        let gpu = &crowds[crowd].gpu;
                        let (Some(u), Some(l)) =
                            (gpu.views.get(view), gpu.buffers.as_ref().and_then(|b| b.views.get(view)))
                        else {
                            continue;
                        };
                        (crowd, workgroups, u.compute, l.compute)
                    }
                    Dispatch::Scatter { .. } => continue,
                };
                let c = &crowds[crowd];
                let sets = [frame, c.asset.sets[compute], lists];
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, cull_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    self.pipeline_layouts[compute],
                    0,
                    &sets,
                    &[],
                );
                d.cmd_dispatch(cb, x, y, 1);
                culled = true;
            }
            if culled {
                memory_barrier(
                    d,
                    cb,
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (
                        vk::PipelineStageFlags::VERTEX_SHADER
                            | vk::PipelineStageFlags::DRAW_INDIRECT
                            | transfer,
                        vk::AccessFlags::SHADER_READ
                            | vk::AccessFlags::INDIRECT_COMMAND_READ
                            | vk::AccessFlags::TRANSFER_READ,
                    ),
                );
                // 3b. This frame's culling counts, copied for read-back without waiting: the copy,
                // a barrier making it visible to host reads, then the slot's event.
                let mut copied = Vec::new();
                for draw in crowds {
                    if let Some(slot) = draw.gpu.counts.ring.current_slot()
                        && let (Some(b), Some(s)) = (&draw.gpu.buffers, draw.gpu.counts.slots.get(slot))
                    {
                        let region =
                            [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: gpu::DRAW_ARGS_BYTES }];
                        d.cmd_copy_buffer(cb, b.draw_args.buffer, s.buffer.buffer, &region);
                        copied.push(s.event);
                    }
                }
                if !copied.is_empty() {
                    memory_barrier(
                        d,
                        cb,
                        (transfer, vk::AccessFlags::TRANSFER_WRITE),
                        (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                    );
                    for event in copied {
                        d.cmd_set_event(cb, event, transfer);
                    }
                }
            }
        }

        // 4. Shadow pass.
        if plan.shadow_view_proj.is_some() {
            let range =
                vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::DEPTH, ..color_range() };
            let shadow_barrier =
                |old,
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
                    unsafe {
                        d.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b)
                    };
                };
            let tests =
                vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
            let depth_rw = vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
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
            self.encode_draws(cb, StageSet::Depth, None, full_rect(size), &plan.depth, crowds, &pipelines);
            // SAFETY: ends the rendering begun above.
            unsafe { d.cmd_end_rendering(cb) };
            shadow_barrier(
                vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                (
                    vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
            );
        }

        Ok(())
    }

    /// Records `plan`'s colour draws into `cb`, inside the host's dynamic rendering over
    /// attachments of `formats`, drawing into `area`. Pipelines are created before anything is
    /// recorded.
    pub(crate) fn encode_colour(
        &mut self,
        cb: vk::CommandBuffer,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), VulkanError> {
        let draws = plan.colour_draws(formats.motion.is_some());
        self.encode_camera_draws(cb, &draws, crowds, formats, area)
    }

    /// Records `plan`'s prepass draws into `cb`, inside the host's prepass rendering of `formats`,
    /// drawing into `area`. Pipelines are created before anything is recorded.
    pub(crate) fn encode_prepass(
        &mut self,
        cb: vk::CommandBuffer,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        formats: PrepassFormats,
        area: vk::Rect2D,
    ) -> Result<(), VulkanError> {
        let draws = plan.prepass_draws(formats.targets());
        self.encode_camera_draws(cb, &draws, crowds, formats.pass_formats(), area)
    }

    /// Records `draws` of the camera (colour or prepass pipelines, the colour descriptor sets) into
    /// `cb` inside the host's rendering of `formats`; pipelines first.
    fn encode_camera_draws(
        &mut self,
        cb: vk::CommandBuffer,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), VulkanError> {
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = Vec::new();
        for draw in draws {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)?));
            }
        }
        self.encode_draws(cb, StageSet::Colour, None, area, draws, crowds, &pipelines);
        Ok(())
    }

    /// Records `plan`'s depth draws of extra view `view` into `cb`, inside the host's dynamic
    /// rendering of `formats`, drawing into `area`. Pipelines are created before anything is recorded.
    pub(crate) fn encode_view_depth(
        &mut self,
        cb: vk::CommandBuffer,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        view: usize,
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), VulkanError> {
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = Vec::new();
        for draw in plan.view_depth.get(view).into_iter().flatten() {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)?));
            }
        }
        self.encode_draws(
            cb,
            StageSet::Depth,
            Some(view),
            area,
            plan.view_depth.get(view).map_or(&[], Vec::as_slice),
            crowds,
            &pipelines,
        );
        Ok(())
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

    /// Records `draws` into `cb` inside dynamic rendering (pipelines of `set`'s layouts), binding
    /// only what changes from one draw to the next; sets the viewport (y flipped, wgpu-hal's
    /// convention) and scissor to `area` once; each crowd's set 0 is that of extra view `view` when
    /// given. Leaves the last pipeline, sets and index buffer bound.
    #[allow(clippy::too_many_arguments)] // the draws, where, and with which resources
    fn encode_draws(
        &self,
        cb: vk::CommandBuffer,
        set: StageSet,
        view: Option<usize>,
        area: vk::Rect2D,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        pipelines: &[(PipelineKey, vk::Pipeline)],
    ) {
        let d = &self.ctx.device;
        // SAFETY: inside dynamic rendering begun by the caller.
        unsafe {
            d.cmd_set_viewport(cb, 0, &[flipped_viewport(area)]);
            d.cmd_set_scissor(cb, 0, &[area]);
        }
        let mut bound: Option<DrawResources> = None;
        let mut current: Option<PipelineKey> = None;
        for draw in draws {
            if bound != Some(draw.resources) {
                match draw.resources {
                    DrawResources::Crowd { crowd, instances } => {
                        let c = &crowds[crowd];
                        let Some(b) = &c.gpu.buffers else { continue };
                        let frame = match view {
                            Some(v) => match c.gpu.views.get(v) {
                                Some(uniforms) => uniforms.depth,
                                None => continue,
                            },
                            None => match self.frame_set(set, &c.gpu.frame_sets, &c.gpu.host_frame_sets) {
                                Some(frame) => frame,
                                None => continue,
                            },
                        };
                        let Some(lists) = b.group(set, instances) else { continue };
                        let sets = [frame, c.asset.sets[set as usize], lists];
                        // SAFETY: inside dynamic rendering; the sets match the layout.
                        unsafe {
                            d.cmd_bind_descriptor_sets(
                                cb,
                                vk::PipelineBindPoint::GRAPHICS,
                                self.pipeline_layouts[set as usize],
                                0,
                                &sets,
                                &[],
                            );
                            d.cmd_bind_index_buffer(cb, c.asset.index_buffer, 0, vk::IndexType::UINT32);
                        }
                    }
                    DrawResources::FrameOnly { crowd } => {
                        let frame_set = match crowd {
                            Some(k) => {
                                let gpu = &crowds[k].gpu;
                                self.frame_set(set, &gpu.frame_sets, &gpu.host_frame_sets)
                            }
                            None => self.frame_set(set, &self.frame_sets, &self.host_frame_sets),
                        };
                        let Some(frame_set) = frame_set else { continue };
                        // SAFETY: inside dynamic rendering; set 0 matches the frame-only layout.
                        unsafe {
                            d.cmd_bind_descriptor_sets(
                                cb,
                                vk::PipelineBindPoint::GRAPHICS,
                                self.frame_only_layout,
                                0,
                                &[frame_set],
                                &[],
                            );
                        }
                    }
                }
                bound = Some(draw.resources);
            }
            if current != Some(draw.pipeline) {
                let Some(&(_, pipeline)) = pipelines.iter().find(|(k, _)| *k == draw.pipeline) else {
                    continue;
                };
                // SAFETY: a graphics pipeline of this device, inside dynamic rendering.
                unsafe { d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline) };
                current = Some(draw.pipeline);
            }
            // SAFETY: inside dynamic rendering with a bound pipeline, sets and index buffer; the draw
            // args buffer holds DRAW_ARGS_COUNT draws and has INDIRECT usage.
            unsafe {
                match &draw.geometry {
                    DrawGeometry::Indexed { indices, instances } => d.cmd_draw_indexed(
                        cb,
                        indices.end - indices.start,
                        instances.end - instances.start,
                        indices.start,
                        0,
                        instances.start,
                    ),
                    DrawGeometry::IndexedIndirect { offset } => {
                        if let DrawResources::Crowd { crowd, instances } = draw.resources
                            && let Some(args) =
                                crowds[crowd].gpu.buffers.as_ref().and_then(|b| b.draw_args_of(instances))
                        {
                            d.cmd_draw_indexed_indirect(cb, args, *offset, 1, 0);
                        }
                    }
                    DrawGeometry::Vertices { vertices, instances } => d.cmd_draw(
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
