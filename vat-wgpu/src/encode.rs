//! Carrying out a [`FramePlan`]: buffer growth and uploads, dispatches, the depth and colour passes
//! (the Vulkan twin is vat-vulkan's `encode.rs`): `Renderer::encode_prepare` records what comes
//! before the host's passes, `Renderer::encode_colour` the draws inside one. Nothing here decides
//! what is drawn.

use vat_core::frame::{
    CrowdPlan, Dispatch, Draw, DrawGeometry, DrawResources, FramePlan, HostMapCache, scatter_buffer_bytes,
};
use vat_core::gpu;
use vat_core::instance::InstanceRecord;
use vat_core::pipeline::PipelineKey;

use crate::crowd::{CrowdBuffers, GpuCrowd};
use crate::pipelines::{CULL, PassFormats, PrepassFormats, SHADOW_PASS};
use crate::renderer::{AllocScope, CrowdDraw, StageSet};
use crate::{RenderError, Renderer};

/// Copies `bytes` (a multiple of 4) to the start of `target` through the staging belt, in `encoder`.
///
/// Not `StagingBelt::write_buffer`, which panics when the belt cannot create a chunk (out of
/// memory); the chunk's own error is caught by the caller's [`AllocScope`].
///
/// # Errors
/// [`RenderError::OutOfDeviceMemory`] when the chunk could not be created (nothing is recorded).
fn belt_write(
    belt: &mut wgpu::util::StagingBelt,
    encoder: &mut wgpu::CommandEncoder,
    target: &wgpu::Buffer,
    bytes: &[u8],
) -> Result<(), RenderError> {
    let Some(size) = wgpu::BufferSize::new(bytes.len() as u64) else { return Ok(()) };
    let align = wgpu::BufferSize::new(wgpu::COPY_BUFFER_ALIGNMENT).unwrap_or(size);
    let slice = belt.allocate(size, align);
    let Ok(mut view) = slice.get_mapped_range_mut() else {
        return Err(RenderError::OutOfDeviceMemory { what: "uniforms' staging belt", bytes: size.get() });
    };
    view.slice(..).copy_from_slice(bytes);
    drop(view);
    encoder.copy_buffer_to_buffer(slice.buffer(), slice.offset(), target, 0, size.get());
    Ok(())
}

fn buffers_of(gpu: &GpuCrowd) -> Result<&CrowdBuffers, RenderError> {
    gpu.buffers.as_ref().ok_or_else(|| RenderError::Device("internal: crowd buffers missing".into()))
}

impl Renderer {
    /// [`queue_crowd_uploads`](Self::queue_crowd_uploads) inside an [`AllocScope`]: a buffer the
    /// device cannot create (the crowd outgrew its memory), or the staging memory of a write, is
    /// [`RenderError::OutOfDeviceMemory`] rather than an error left to the device's handler (wgpu's
    /// default one panics).
    fn upload_crowd(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        draw: &mut CrowdDraw<'_>,
        plan: &CrowdPlan,
    ) -> Result<(), RenderError> {
        let scope = AllocScope::push(&self.device);
        let mut requested = 0;
        let result = self.queue_crowd_uploads(encoder, draw, plan, &mut requested);
        scope.finish("crowd buffers", requested, result)
    }

    /// Grows `gpu`'s buffers as `plan` says and queues its uploads: changed records and list entries
    /// (`queue.write_buffer`, written at the next submit), the scatter's packed records, the culling
    /// inputs, and its uniforms (through the belt, in `encoder`). Adds the bytes of the buffers it
    /// creates and of the writes it queues to `requested`.
    fn queue_crowd_uploads(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        draw: &mut CrowdDraw<'_>,
        plan: &CrowdPlan,
        requested: &mut u64,
    ) -> Result<(), RenderError> {
        *requested += plan.grow.map_or(0, |c| {
            c.record_bytes() + c.list_bytes() + c.visible_bytes() + c.user_data_bytes().max(16)
        });
        *requested += plan.grow_scatter.map_or(0, |c| {
            let (indices, records) = scatter_buffer_bytes(c);
            indices + records
        });
        *requested += plan
            .grow_view_lists
            .map_or(0, |views| u64::from(views) * draw.gpu.sync.capacity().visible_bytes());
        if let Some(capacity) = plan.grow {
            self.grow_crowd(draw.gpu, capacity)?;
        }
        if let Some(capacity) = plan.grow_scatter {
            let Some(buffers) = draw.gpu.buffers.as_mut() else {
                return Err(RenderError::Device("internal: crowd buffers missing".into()));
            };
            self.grow_scatter(buffers, capacity)?;
        }
        if let Some(views) = plan.grow_view_lists {
            let capacity = draw.gpu.sync.capacity();
            let Some(buffers) = draw.gpu.buffers.as_mut() else {
                return Err(RenderError::Device("internal: crowd buffers missing".into()));
            };
            self.grow_view_lists(buffers, capacity, views)?;
        }
        let buffers = buffers_of(draw.gpu)?;
        let q = &self.queue;
        let mut write = |buffer: &wgpu::Buffer, offset: u64, bytes: &[u8]| {
            *requested += bytes.len() as u64;
            q.write_buffer(buffer, offset, bytes);
        };
        let records = draw.crowd.records();
        for r in &plan.record_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&records[r.start as usize..r.end as usize]);
            write(&buffers.records, u64::from(r.start) * size_of::<InstanceRecord>() as u64, bytes);
        }
        for (first, r) in &plan.previous_record_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&plan.previous_records[r.start as usize..r.end as usize]);
            write(&buffers.records, u64::from(*first) * size_of::<InstanceRecord>() as u64, bytes);
        }
        if let Some(r) = &plan.list_writes {
            let list = &draw.crowd.instance_list()[r.start as usize..r.end as usize];
            write(&buffers.list, u64::from(r.start) * 4, bytemuck::cast_slice(list));
        }
        let user_data = draw.crowd.user_data();
        for r in &plan.user_data_writes {
            let bytes: &[u8] = bytemuck::cast_slice(&user_data[r.start as usize..r.end as usize]);
            write(&buffers.user_data, u64::from(r.start) * 16, bytes);
        }
        if plan.scatter.scattered() > 0 {
            let Some(scatter) = &buffers.scatter else {
                return Err(RenderError::Device("internal: scatter buffers missing".into()));
            };
            write(&scatter.indices, 0, bytemuck::cast_slice(&plan.scatter.indices));
            write(&scatter.records, 0, bytemuck::cast_slice(&plan.scatter.records));
        }
        if let Some(template) = &plan.args_template {
            write(&buffers.args_template, 0, bytemuck::cast_slice(template));
        }
        if let Some(params) = &plan.cull_params {
            // Through the queue, not the belt: the write is not repeated, so it must not be lost with
            // an encoder that is never submitted.
            write(&buffers.cull_params, 0, bytemuck::bytes_of(params));
        }
        belt_write(&mut self.belt, encoder, &draw.gpu.frame_buffer, bytemuck::bytes_of(&plan.uniforms))?;
        self.grow_views(draw.gpu, plan.view_uniforms.len())?;
        for (uniforms, view) in plan.view_uniforms.iter().zip(&draw.gpu.views) {
            belt_write(&mut self.belt, encoder, &view.buffer, bytemuck::bytes_of(uniforms))?;
        }
        Ok(())
    }

    /// Records the part of `plan` outside any render pass into `encoder`: uploads, draw-argument
    /// resets, dispatches and the built-in shadow pass (its own depth image, cleared). On error the
    /// caller marks every crowd unsynced.
    pub(crate) fn encode_prepare(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &FramePlan,
        crowds: &mut [CrowdDraw<'_>],
    ) -> Result<(), RenderError> {
        let mut shadow_pipelines: Vec<(PipelineKey, wgpu::RenderPipeline)> = Vec::new();
        for draw in &plan.depth {
            if !shadow_pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                shadow_pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, SHADOW_PASS)));
            }
        }
        let cull_pipeline = self.compute_pipeline(CULL);
        // 0. Group 0 over the host's shadow map, when the colour draws sample it.
        self.frame_host_shadow = None;
        if plan.host_shadow_map {
            let view = self.host_shadow.clone().ok_or(RenderError::NoHostShadowMap)?;
            for draw in crowds.iter_mut() {
                let (gpu, renderer) = (&mut *draw.gpu, &*self);
                gpu.host_frame_groups.get_or_insert(
                    view.clone(),
                    || renderer.frame_groups_for(&gpu.frame_buffer, Some(&view)),
                    drop,
                )?;
            }
            if plan.frame_uniforms.is_some() {
                let groups = self.frame_groups_for(&self.frame_buffer, Some(&view))?;
                self.host_frame_groups.get_or_insert::<RenderError>(view.clone(), || Ok(groups), drop)?;
            }
            self.frame_host_shadow = Some(view);
        }

        // 1. Uploads.
        for (draw, crowd_plan) in crowds.iter_mut().zip(&plan.crowds) {
            self.upload_crowd(encoder, draw, crowd_plan)?;
        }
        if let Some(uniforms) = &plan.frame_uniforms {
            belt_write(&mut self.belt, encoder, &self.frame_buffer, bytemuck::bytes_of(uniforms))?;
        }
        // 2. Draw arguments reset from the template (GPU culling).
        for (draw, crowd_plan) in crowds.iter().zip(&plan.crowds) {
            if crowd_plan.reset_draw_args {
                let b = buffers_of(draw.gpu)?;
                encoder.copy_buffer_to_buffer(&b.args_template, 0, &b.draw_args, 0, gpu::DRAW_ARGS_BYTES);
            }
            for view in 0..crowd_plan.reset_view_draw_args as usize {
                let b = buffers_of(draw.gpu)?;
                let Some(v) = b.views.get(view) else {
                    return Err(RenderError::Device("internal: view lists missing".into()));
                };
                encoder.copy_buffer_to_buffer(&b.args_template, 0, &v.draw_args, 0, gpu::DRAW_ARGS_BYTES);
            }
        }
        // 3. Dispatches.
        for dispatch in &plan.dispatches {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("vat compute"),
                timestamp_writes: None,
            });
            match *dispatch {
                Dispatch::Scatter { crowd, workgroups: [x, y], .. } => {
                    let b = buffers_of(crowds[crowd].gpu)?;
                    let Some(scatter) = &b.scatter else {
                        return Err(RenderError::Device("internal: scatter buffers missing".into()));
                    };
                    pass.set_pipeline(&self.scatter_pipeline);
                    pass.set_bind_group(gpu::GROUP_SCATTER, &scatter.group, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
                Dispatch::Cull { crowd, workgroups: [x, y], .. } => {
                    let c = &crowds[crowd];
                    let compute = StageSet::Compute as usize;
                    pass.set_pipeline(&cull_pipeline);
                    pass.set_bind_group(0, &c.gpu.frame_groups[compute], &[]);
                    pass.set_bind_group(1, &c.asset.groups[compute], &[]);
                    pass.set_bind_group(2, &buffers_of(c.gpu)?.compute, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
                Dispatch::CullView { crowd, view, workgroups: [x, y], .. } => {
                    let c = &crowds[crowd];
                    let (Some(uniforms), Some(lists)) =
                        (c.gpu.views.get(view), buffers_of(c.gpu)?.views.get(view))
                    else {
                        return Err(RenderError::Device("internal: view lists missing".into()));
                    };
                    pass.set_pipeline(&cull_pipeline);
                    pass.set_bind_group(0, &uniforms.compute, &[]);
                    pass.set_bind_group(1, &c.asset.groups[StageSet::Compute as usize], &[]);
                    pass.set_bind_group(2, &lists.compute, &[]);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
        }
        // 3b. This frame's culling counts, copied for read-back without waiting (GPU culling).
        for draw in crowds.iter() {
            if let Some(slot) = draw.gpu.counts.ring.current_slot()
                && let (Some(b), Some(s)) = (&draw.gpu.buffers, draw.gpu.counts.slots.get(slot))
            {
                encoder.copy_buffer_to_buffer(&b.draw_args, 0, &s.buffer, 0, gpu::DRAW_ARGS_BYTES);
            }
        }
        // Every buffer a draw binds exists now.
        for draw in crowds.iter() {
            buffers_of(draw.gpu)?;
        }
        // 4. Shadow pass.
        if plan.shadow_view_proj.is_some() {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("vat shadow"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.shadow_view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            self.encode_draws(&mut pass, StageSet::Depth, None, &plan.depth, crowds, &shadow_pipelines);
        }
        Ok(())
    }

    /// Records `plan`'s colour draws into the host's `pass`, whose attachments have `formats`.
    pub(crate) fn encode_colour(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        formats: PassFormats,
    ) {
        let draws = plan.colour_draws(formats.motion.is_some());
        self.encode_camera_draws(pass, &draws, crowds, formats);
    }

    /// Records `plan`'s prepass draws into the host's prepass `pass` of `formats`.
    pub(crate) fn encode_prepass(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        formats: PrepassFormats,
    ) {
        let draws = plan.prepass_draws(formats.targets());
        self.encode_camera_draws(pass, &draws, crowds, formats.pass_formats());
    }

    /// Records `draws` of the camera (colour or prepass pipelines, the colour bind groups) into the
    /// host's `pass` of `formats`.
    fn encode_camera_draws(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        formats: PassFormats,
    ) {
        let mut pipelines: Vec<(PipelineKey, wgpu::RenderPipeline)> = Vec::new();
        for draw in draws {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)));
            }
        }
        self.encode_draws(pass, StageSet::Colour, None, draws, crowds, &pipelines);
    }

    /// Records `plan`'s depth draws of extra view `view` into the host's depth `pass` of `formats`.
    pub(crate) fn encode_view_depth(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        plan: &FramePlan,
        crowds: &[CrowdDraw<'_>],
        view: usize,
        formats: PassFormats,
    ) {
        let mut pipelines: Vec<(PipelineKey, wgpu::RenderPipeline)> = Vec::new();
        for draw in plan.view_depth.get(view).into_iter().flatten() {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)));
            }
        }
        self.encode_draws(
            pass,
            StageSet::Depth,
            Some(view),
            plan.view_depth.get(view).map_or(&[], Vec::as_slice),
            crowds,
            &pipelines,
        );
    }

    /// The group 0 of `set` a draw binds: over the host's shadow map when the prepared frame's
    /// colour draws sample it, else `own` (over vat's).
    fn frame_groups<'a>(
        &self,
        set: StageSet,
        own: &'a [wgpu::BindGroup],
        host: &'a HostMapCache<wgpu::TextureView, Vec<wgpu::BindGroup>>,
    ) -> Option<&'a wgpu::BindGroup> {
        match &self.frame_host_shadow {
            Some(view) if set == StageSet::Colour => host.get(view)?.get(set as usize),
            _ => own.get(set as usize),
        }
    }

    /// Records `draws` into `pass` (pipelines of `set`'s layouts), binding only what changes from
    /// one draw to the next; each crowd's group 0 is that of extra view `view` when given. Leaves the
    /// last pipeline, bind groups and index buffer bound.
    fn encode_draws(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        set: StageSet,
        view: Option<usize>,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        pipelines: &[(PipelineKey, wgpu::RenderPipeline)],
    ) {
        let mut bound: Option<DrawResources> = None;
        let mut current: Option<PipelineKey> = None;
        for draw in draws {
            if bound != Some(draw.resources) {
                match draw.resources {
                    DrawResources::Crowd { crowd, instances } => {
                        let c = &crowds[crowd];
                        let Some(buffers) = &c.gpu.buffers else { continue };
                        let frame = match view {
                            Some(v) => match c.gpu.views.get(v) {
                                Some(uniforms) => &uniforms.depth,
                                None => continue,
                            },
                            None => {
                                match self.frame_groups(set, &c.gpu.frame_groups, &c.gpu.host_frame_groups) {
                                    Some(group) => group,
                                    None => continue,
                                }
                            }
                        };
                        pass.set_bind_group(0, frame, &[]);
                        pass.set_bind_group(1, &c.asset.groups[set as usize], &[]);
                        let Some(group) = buffers.group(set, instances) else { continue };
                        pass.set_bind_group(2, group, &[]);
                        pass.set_index_buffer(c.asset.index_buffer.slice(..), wgpu::IndexFormat::Uint32);
                    }
                    DrawResources::FrameOnly { crowd } => {
                        let group = match crowd {
                            Some(k) => {
                                let gpu = &crowds[k].gpu;
                                self.frame_groups(set, &gpu.frame_groups, &gpu.host_frame_groups)
                            }
                            None => self.frame_groups(set, &self.frame_groups, &self.host_frame_groups),
                        };
                        let Some(group) = group else { continue };
                        pass.set_bind_group(0, group, &[]);
                    }
                }
                bound = Some(draw.resources);
            }
            if current != Some(draw.pipeline) {
                let Some((_, pipeline)) = pipelines.iter().find(|(k, _)| *k == draw.pipeline) else {
                    continue;
                };
                pass.set_pipeline(pipeline);
                current = Some(draw.pipeline);
            }
            match &draw.geometry {
                DrawGeometry::Indexed { indices, instances } => {
                    pass.draw_indexed(indices.clone(), 0, instances.clone());
                }
                DrawGeometry::IndexedIndirect { offset } => {
                    if let DrawResources::Crowd { crowd, instances } = draw.resources
                        && let Some(args) =
                            crowds[crowd].gpu.buffers.as_ref().and_then(|b| b.draw_args_of(instances))
                    {
                        pass.draw_indexed_indirect(args, *offset);
                    }
                }
                DrawGeometry::Vertices { vertices, instances } => {
                    pass.draw(vertices.clone(), instances.clone())
                }
            }
        }
    }
}
