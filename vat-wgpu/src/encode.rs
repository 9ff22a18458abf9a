//! Replaying a frame's recording (`vat_core::frame::Command`) on wgpu: [`Replay`] is this backend's
//! [`FrameBackend`], one `match` over the commands (the Vulkan twin is vat-vulkan's `encode.rs`);
//! `Renderer::encode_draws` records a list of draws into a pass (the shadow pass, or a host's). A
//! resource a command or draw names that is not here is an error. Nothing here decides what is drawn.

use vat_core::frame::gpu_counts::CountsRing;
use vat_core::frame::{
    AssetDrawInfo, BufferId, Command, CrowdSync, Dispatch, Draw, DrawGeometry, DrawResources, FrameBackend,
    FramePlan, HostMapCache, Missing, Pass, PlanLimits, scatter_buffer_bytes,
};
use vat_core::gpu;
use vat_core::pipeline::PipelineKey;
use vat_core::render::Culling;

use crate::crowd::GpuCrowd;
use crate::pipelines::{CULL, SHADOW_PASS};
use crate::renderer::{AllocScope, BELT_CHUNK, CrowdDraw, StageSet};
use crate::{GpuAsset, RenderError, Renderer};

/// Copies `bytes` (a multiple of 4) to byte `offset` of `target` through the staging belt, in
/// `encoder`.
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
    offset: u64,
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
    encoder.copy_buffer_to_buffer(slice.buffer(), slice.offset(), target, offset, size.get());
    Ok(())
}

/// One `prepare`'s replay of the frame's commands into the host's `encoder`. Everything the frame
/// creates (crowd buffers, read-back slots, staging chunks, pipelines) and the belt's closing unmaps
/// happen in one [`AllocScope`]: their errors are this call's, not the device's uncaptured-error
/// handler's (wgpu's default one panics).
pub(crate) struct Replay<'r, 'e> {
    renderer: &'r mut Renderer,
    encoder: &'e mut wgpu::CommandEncoder,
    /// The frame's scope, pushed by `begin_frame` (after the prechecks and planning, which create
    /// nothing); `None` before and once finished.
    scope: Option<AllocScope>,
    /// The open scope of one crowd's uploads and the bytes they asked for: a buffer the device
    /// cannot create (the crowd outgrew its memory), or the staging memory of a write, is
    /// [`RenderError::OutOfDeviceMemory`] of the crowd's buffers.
    uploads: Option<(AllocScope, u64)>,
    /// The draws (indices into the plan's depth draws) of the open shadow pass.
    shadow_draws: Option<Vec<usize>>,
}

impl<'r, 'e> Replay<'r, 'e> {
    /// A replay into `encoder`.
    pub(crate) fn new(renderer: &'r mut Renderer, encoder: &'e mut wgpu::CommandEncoder) -> Self {
        Self { renderer, encoder, scope: None, uploads: None, shadow_draws: None }
    }

    /// Carries out `command`; see [`FrameBackend::command`].
    fn run(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
        command: &Command,
    ) -> Result<(), RenderError> {
        let r = &mut *self.renderer;
        // Bytes this command asks of the device, counted in the open uploads' scope.
        let mut requested = 0;
        match command {
            Command::HostShadowGroups => r.host_shadow_groups(crowds, plan)?,
            Command::BeginUploads { .. } => self.uploads = Some((AllocScope::push(&r.device), 0)),
            Command::EndUploads { .. } => {
                if let Some((scope, bytes)) = self.uploads.take() {
                    scope.finish("crowd buffers", bytes, Ok(()))?;
                }
            }
            Command::GrowCrowd { crowd, capacity: c } => {
                let bytes =
                    c.record_bytes() + c.list_bytes() + c.visible_bytes() + c.user_data_bytes().max(16);
                requested += bytes;
                r.grow_crowd(crowds[*crowd].gpu, *c)?;
            }
            Command::GrowScatter { crowd, records } => {
                let (indices, bytes) = scatter_buffer_bytes(*records);
                requested += indices + bytes;
                let buffers = crowds[*crowd].gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_scatter(buffers, *records)?;
            }
            Command::GrowViewLists { crowd, views } => {
                let gpu = &mut *crowds[*crowd].gpu;
                let capacity = gpu.sync.capacity();
                requested += u64::from(*views) * capacity.visible_bytes();
                let buffers = gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_view_lists(buffers, capacity, *views)?;
            }
            Command::GrowViewUniforms { crowd, views } => r.grow_views(crowds[*crowd].gpu, *views)?,
            Command::Write { target, offset, data } => {
                let crowd = target.crowd().map(|k| (k, &*crowds[k].crowd));
                let bytes = plan.bytes(crowd, data);
                let buffer = r.buffer(crowds, *target)?.clone();
                if target.is_uniforms() {
                    // Through the belt: no staging buffer is created per frame.
                    belt_write(&mut r.belt, self.encoder, &buffer, *offset, bytes)?;
                } else {
                    // Through the queue, not the belt: a write made only on change must not be lost
                    // with an encoder that is never submitted.
                    requested += bytes.len() as u64;
                    r.queue.write_buffer(&buffer, *offset, bytes);
                }
            }
            Command::Copy { from, to, bytes } => {
                let (from, to) = (r.buffer(crowds, *from)?, r.buffer(crowds, *to)?);
                self.encoder.copy_buffer_to_buffer(from, 0, to, 0, *bytes);
            }
            Command::Dispatch(dispatch) => r.encode_dispatch(self.encoder, crowds, *dispatch)?,
            Command::CopyCounts { crowd } => {
                let gpu = &crowds[*crowd].gpu;
                if let Some(slot) = gpu.counts.ring.current_slot()
                    && let (Some(b), Some(s)) = (&gpu.buffers, gpu.counts.slots.get(slot))
                {
                    self.encoder.copy_buffer_to_buffer(&b.draw_args, 0, &s.buffer, 0, gpu::DRAW_ARGS_BYTES);
                }
            }
            Command::BeginPass(Pass::Shadow) => self.shadow_draws = Some(Vec::new()),
            Command::Draw { index } => self.shadow_draws.get_or_insert_default().push(*index),
            Command::EndPass => {
                let draws: Vec<Draw> = self
                    .shadow_draws
                    .take()
                    .unwrap_or_default()
                    .iter()
                    .map(|&i| plan.depth[i].clone())
                    .collect();
                r.encode_shadow_pass(self.encoder, &draws, crowds)?;
            }
        }
        if let Some((_, bytes)) = &mut self.uploads {
            *bytes += requested;
        }
        Ok(())
    }
}

impl FrameBackend for Replay<'_, '_> {
    type Asset = GpuAsset;
    type Crowd = GpuCrowd;
    type Error = RenderError;

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
        self.renderer.plan_limits()
    }

    fn begin_frame(&mut self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), RenderError> {
        self.scope = Some(AllocScope::push(&self.renderer.device));
        self.renderer.begin_counts(crowds, culling)
    }

    fn command(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
        command: &Command,
    ) -> Result<(), RenderError> {
        let result = self.run(crowds, plan, command);
        match self.uploads.take() {
            Some((scope, bytes)) if result.is_err() => scope.finish("crowd buffers", bytes, result),
            open => {
                self.uploads = open;
                result
            }
        }
    }

    fn finish(&mut self, crowds: &mut [CrowdDraw<'_>], plan: &FramePlan) -> Result<(), RenderError> {
        let r = &*self.renderer;
        for draw in &plan.colour {
            r.bindings(StageSet::Colour, None, draw, crowds)?;
        }
        for (view, draws) in plan.view_depth.iter().enumerate() {
            for draw in draws {
                r.bindings(StageSet::Depth, Some(view), draw, crowds)?;
            }
        }
        Ok(())
    }

    fn end_frame(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        result: Result<(), RenderError>,
    ) -> Result<(), RenderError> {
        let r = &mut *self.renderer;
        r.belt.finish_and_recall_on_submit(self.encoder);
        let result = match self.scope.take() {
            Some(scope) => scope.finish("frame's staging memory", BELT_CHUNK, result),
            None => result,
        };
        if result.is_err() {
            // A chunk the belt failed to create would come back to it and fail every later frame.
            r.belt = wgpu::util::StagingBelt::new(r.device.clone(), BELT_CHUNK);
        } else {
            for d in crowds.iter_mut() {
                d.gpu.counts.map_on_submit(self.encoder);
            }
        }
        result
    }
}

/// What one draw binds, found.
enum Bindings<'a> {
    /// Groups 0-2 and the index buffer of a crowd's draw, and its indirect arguments.
    Crowd { groups: [&'a wgpu::BindGroup; 3], index: &'a wgpu::Buffer, args: Option<&'a wgpu::Buffer> },
    /// Group 0 alone.
    FrameOnly(&'a wgpu::BindGroup),
}

impl Renderer {
    /// The buffer `id` names.
    fn buffer<'a>(&'a self, crowds: &'a [CrowdDraw<'_>], id: BufferId) -> Result<&'a wgpu::Buffer, Missing> {
        let buffers = |k: usize| crowds[k].gpu.buffers.as_ref();
        let found = match id {
            BufferId::Records { crowd } => buffers(crowd).map(|b| &b.records),
            BufferId::List { crowd } => buffers(crowd).map(|b| &b.list),
            BufferId::UserData { crowd } => buffers(crowd).map(|b| &b.user_data),
            BufferId::ScatterIndices { crowd } => {
                buffers(crowd).and_then(|b| Some(&b.scatter.as_ref()?.indices))
            }
            BufferId::ScatterRecords { crowd } => {
                buffers(crowd).and_then(|b| Some(&b.scatter.as_ref()?.records))
            }
            BufferId::ArgsTemplate { crowd } => buffers(crowd).map(|b| &b.args_template),
            BufferId::CullParams { crowd } => buffers(crowd).map(|b| &b.cull_params),
            BufferId::DrawArgs { crowd } => buffers(crowd).map(|b| &b.draw_args),
            BufferId::ViewDrawArgs { crowd, view } => {
                buffers(crowd).and_then(|b| Some(&b.views.get(view)?.draw_args))
            }
            BufferId::Uniforms { crowd } => Some(&crowds[crowd].gpu.frame_buffer),
            BufferId::ViewUniforms { crowd, view } => crowds[crowd].gpu.views.get(view).map(|v| &v.buffer),
            BufferId::FrameUniforms => Some(&self.frame_buffer),
        };
        found.ok_or(Missing::Buffer(id))
    }

    /// Group 0 over the host's shadow map for every crowd, and for the renderer's own uniforms
    /// when the frame has them: the colour draws sample it.
    fn host_shadow_groups(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        plan: &FramePlan,
    ) -> Result<(), RenderError> {
        self.frame_host_shadow = None;
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
        Ok(())
    }

    /// Records `dispatch` in a compute pass of its own.
    fn encode_dispatch(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        crowds: &[CrowdDraw<'_>],
        dispatch: Dispatch,
    ) -> Result<(), RenderError> {
        let compute = StageSet::Compute as usize;
        let cull = match dispatch {
            Dispatch::Scatter { .. } => None,
            Dispatch::Cull { .. } | Dispatch::CullView { .. } => Some(self.compute_pipeline(CULL)),
        };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("vat compute"),
            timestamp_writes: None,
        });
        let ([x, y], groups): ([u32; 2], Vec<(u32, &wgpu::BindGroup)>) = match dispatch {
            Dispatch::Scatter { crowd, workgroups, .. } => {
                let scatter = crowds[crowd].gpu.buffers.as_ref().and_then(|b| b.scatter.as_ref());
                let scatter = scatter.ok_or(Missing::Buffer(BufferId::ScatterRecords { crowd }))?;
                pass.set_pipeline(&self.scatter_pipeline);
                (workgroups, vec![(gpu::GROUP_SCATTER, &scatter.group)])
            }
            Dispatch::Cull { crowd, workgroups, .. } => {
                let c = &crowds[crowd];
                let lists = &c.gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?.compute;
                (
                    workgroups,
                    vec![(0, &c.gpu.frame_groups[compute]), (1, &c.asset.groups[compute]), (2, lists)],
                )
            }
            Dispatch::CullView { crowd, view, workgroups, .. } => {
                let c = &crowds[crowd];
                let (Some(uniforms), Some(lists)) =
                    (c.gpu.views.get(view), c.gpu.buffers.as_ref().and_then(|b| b.views.get(view)))
                else {
                    return Err(Missing::ViewLists { crowd, view }.into());
                };
                (workgroups, vec![(0, &uniforms.compute), (1, &c.asset.groups[compute]), (2, &lists.compute)])
            }
        };
        if let Some(cull) = &cull {
            pass.set_pipeline(cull);
        }
        for (index, group) in groups {
            pass.set_bind_group(index, group, &[]);
        }
        pass.dispatch_workgroups(x, y, 1);
        Ok(())
    }

    /// The built-in shadow pass: vat's own depth image, cleared, with `draws`.
    fn encode_shadow_pass(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
    ) -> Result<(), RenderError> {
        let pipelines = self.pipelines_for(draws, SHADOW_PASS);
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
        self.encode_draws(&mut pass, StageSet::Depth, None, draws, crowds, &pipelines)?;
        Ok(())
    }

    /// The render pipelines of `draws` for a pass of `formats`, each once.
    pub(crate) fn pipelines_for(
        &mut self,
        draws: &[Draw],
        formats: crate::PassFormats,
    ) -> Vec<(PipelineKey, wgpu::RenderPipeline)> {
        let mut pipelines: Vec<(PipelineKey, wgpu::RenderPipeline)> = Vec::new();
        for draw in draws {
            if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
                pipelines.push((draw.pipeline, self.render_pipeline(draw.pipeline, formats)));
            }
        }
        pipelines
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

    /// What `draw` binds in a pass of `set` (each crowd's group 0 that of extra view `view` when
    /// given).
    fn bindings<'a>(
        &'a self,
        set: StageSet,
        view: Option<usize>,
        draw: &Draw,
        crowds: &'a [CrowdDraw<'_>],
    ) -> Result<Bindings<'a>, Missing> {
        match draw.resources {
            DrawResources::Crowd { crowd, instances } => {
                let c = &crowds[crowd];
                let buffers = c.gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?;
                let frame = match view {
                    Some(v) => c.gpu.views.get(v).map(|u| &u.depth),
                    None => self.frame_groups(set, &c.gpu.frame_groups, &c.gpu.host_frame_groups),
                };
                let frame = frame.ok_or(Missing::FrameGroup { crowd: Some(crowd), view })?;
                let lists = buffers.group(set, instances).ok_or(Missing::CrowdBuffers(crowd))?;
                let args = match draw.geometry {
                    DrawGeometry::IndexedIndirect { .. } => {
                        Some(buffers.draw_args_of(instances).ok_or(Missing::CrowdBuffers(crowd))?)
                    }
                    _ => None,
                };
                let groups = [frame, &c.asset.groups[set as usize], lists];
                Ok(Bindings::Crowd { groups, index: &c.asset.index_buffer, args })
            }
            DrawResources::FrameOnly { crowd } => {
                let group = match crowd {
                    Some(k) => {
                        self.frame_groups(set, &crowds[k].gpu.frame_groups, &crowds[k].gpu.host_frame_groups)
                    }
                    None => self.frame_groups(set, &self.frame_groups, &self.host_frame_groups),
                };
                Ok(Bindings::FrameOnly(group.ok_or(Missing::FrameGroup { crowd, view: None })?))
            }
        }
    }

    /// Records `draws` into `pass` (pipelines of `set`'s layouts), binding only what changes from
    /// one draw to the next; each crowd's group 0 is that of extra view `view` when given. Every
    /// draw's resources are found before anything is recorded. Leaves the last pipeline, bind groups
    /// and index buffer bound.
    ///
    /// # Errors
    /// [`Missing`] for a resource or pipeline not found (nothing is recorded then).
    pub(crate) fn encode_draws(
        &self,
        pass: &mut wgpu::RenderPass<'_>,
        set: StageSet,
        view: Option<usize>,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        pipelines: &[(PipelineKey, wgpu::RenderPipeline)],
    ) -> Result<(), Missing> {
        let mut found = Vec::with_capacity(draws.len());
        for draw in draws {
            let bindings = self.bindings(set, view, draw, crowds)?;
            let pipeline = pipelines.iter().find(|(k, _)| *k == draw.pipeline);
            found.push((bindings, &pipeline.ok_or(Missing::Pipeline(draw.pipeline))?.1));
        }
        let mut bound: Option<DrawResources> = None;
        let mut current: Option<PipelineKey> = None;
        for (draw, (bindings, pipeline)) in draws.iter().zip(&found) {
            if bound != Some(draw.resources) {
                match bindings {
                    Bindings::Crowd { groups, index, .. } => {
                        for (i, group) in groups.iter().enumerate() {
                            pass.set_bind_group(i as u32, *group, &[]);
                        }
                        pass.set_index_buffer(index.slice(..), wgpu::IndexFormat::Uint32);
                    }
                    Bindings::FrameOnly(group) => pass.set_bind_group(0, *group, &[]),
                }
                bound = Some(draw.resources);
            }
            if current != Some(draw.pipeline) {
                pass.set_pipeline(pipeline);
                current = Some(draw.pipeline);
            }
            match (&draw.geometry, bindings) {
                (DrawGeometry::Indexed { indices, instances }, _) => {
                    pass.draw_indexed(indices.clone(), 0, instances.clone());
                }
                (DrawGeometry::IndexedIndirect { offset }, Bindings::Crowd { args: Some(args), .. }) => {
                    pass.draw_indexed_indirect(args, *offset);
                }
                (DrawGeometry::IndexedIndirect { .. }, _) => {}
                (DrawGeometry::Vertices { vertices, instances }, _) => {
                    pass.draw(vertices.clone(), instances.clone())
                }
            }
        }
        Ok(())
    }
}
