//! Replaying a frame's recording (`vat_core::backend::frame::Command`) on wgpu: [`Replay`] is this backend's
//! [`FrameBackend`], one `match` over the commands whose ids vat-core resolves
//! (`vat_core::backend::resolve`); `Renderer::encode_draws` maps found draws to a pass's calls (the
//! shadow pass, or a host's). Nothing here decides what is drawn or finds a resource.

use vat_core::backend::frame::{
    Command, Draw, FrameBackend, Missing, PlanLimits, Step, scatter_buffer_bytes,
};
use vat_core::backend::gpu;
use vat_core::backend::pipeline::PipelineKey;
use vat_core::backend::{Compute, DrawStep, RendererFrame, Stage, buffer, compute, draw_steps, find_draws};
use vat_core::render::Culling;

use crate::crowd::WgpuHandles;
use crate::pipelines::CULL;
use crate::renderer::{AllocScope, BELT_CHUNK, CrowdDraw, StageSet};
use crate::{DeviceError, Error, Renderer, RendererConfig};

/// Copies `bytes` (a multiple of 4) to byte `offset` of `target` through the staging belt, in
/// `encoder`.
///
/// Not `StagingBelt::write_buffer`, which panics when the belt cannot create a chunk (out of
/// memory); the chunk's own error is caught by the caller's [`AllocScope`].
///
/// # Errors
/// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) when the chunk could not be created (nothing is recorded).
fn belt_write(
    belt: &mut wgpu::util::StagingBelt,
    encoder: &mut wgpu::CommandEncoder,
    target: &wgpu::Buffer,
    offset: u64,
    bytes: &[u8],
) -> Result<(), Error> {
    let Some(size) = wgpu::BufferSize::new(bytes.len() as u64) else { return Ok(()) };
    let align = wgpu::BufferSize::new(wgpu::COPY_BUFFER_ALIGNMENT).unwrap_or(size);
    let slice = belt.allocate(size, align);
    let Ok(mut view) = slice.get_mapped_range_mut() else {
        return Err(
            DeviceError::OutOfDeviceMemory { what: "uniforms' staging belt", bytes: size.get() }.into()
        );
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
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) of the crowd's buffers.
    uploads: Option<(AllocScope, u64)>,
}

impl<'r, 'e> Replay<'r, 'e> {
    /// A replay into `encoder`.
    pub(crate) fn new(renderer: &'r mut Renderer, encoder: &'e mut wgpu::CommandEncoder) -> Self {
        Self { renderer, encoder, scope: None, uploads: None }
    }

    /// Carries out `command`, giving the bytes it asked of the device (counted in the open uploads'
    /// scope).
    fn run(&mut self, Step { crowds, plan, command }: Step<'_, '_, Self>) -> Result<u64, Error> {
        let r = &mut *self.renderer;
        match command {
            Command::BeginUploads { .. } => self.uploads = Some((AllocScope::push(&r.device), 0)),
            Command::EndUploads { .. } => {
                if let Some((scope, bytes)) = self.uploads.take() {
                    scope.finish("crowd buffers", bytes, Ok(()))?;
                }
            }
            Command::GrowCrowd { crowd, capacity: c } => {
                r.grow_crowd(crowds[*crowd].gpu, *c)?;
                return Ok(c.record_bytes()
                    + c.list_bytes()
                    + c.visible_bytes()
                    + c.user_data_bytes().max(16));
            }
            Command::GrowScatter { crowd, records } => {
                let buffers = crowds[*crowd].gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                r.grow_scatter(buffers, *records)?;
                let (indices, bytes) = scatter_buffer_bytes(*records);
                return Ok(indices + bytes);
            }
            Command::GrowViewLists { crowd, views } => {
                let gpu = &mut *crowds[*crowd].gpu;
                let capacity = gpu.sync.capacity();
                let buffers = gpu.buffers.as_mut().ok_or(Missing::CrowdBuffers(*crowd))?;
                buffers.grow_view_lists(*views, |b| r.view_lists(b, capacity))?;
                return Ok(u64::from(*views) * capacity.visible_bytes());
            }
            Command::GrowViewUniforms { crowd, views } => r.grow_views(crowds[*crowd].gpu, *views)?,
            Command::Write { target, offset, data } => {
                let bytes = plan.bytes(target.crowd().map(|k| (k, &*crowds[k].crowd)), data);
                let to = buffer(crowds, &r.own.frame_buffer, *target)?;
                if target.is_uniforms() {
                    // Through the belt: no staging buffer is created per frame.
                    belt_write(&mut r.belt, self.encoder, to, *offset, bytes)?;
                } else {
                    // Through the queue, not the belt: a write made only on change must not be lost
                    // with an encoder that is never submitted.
                    r.queue.write_buffer(to, *offset, bytes);
                    return Ok(bytes.len() as u64);
                }
            }
            Command::Copy { from, to, bytes } => {
                let own = &r.own.frame_buffer;
                let (from, to) = (buffer(crowds, own, *from)?, buffer(crowds, own, *to)?);
                self.encoder.copy_buffer_to_buffer(from, 0, to, 0, *bytes);
            }
            Command::Dispatch(dispatch) => {
                let cull = r.compute_pipeline(CULL);
                let mut pass = self.encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("vat compute"),
                    timestamp_writes: None,
                });
                let ([x, y], groups) = match compute(crowds, *dispatch)? {
                    Compute::Scatter { group, workgroups } => {
                        pass.set_pipeline(&r.scatter_pipeline);
                        (workgroups, vec![(gpu::GROUP_SCATTER, group)])
                    }
                    Compute::Cull { groups: [g0, g1, g2], workgroups } => {
                        pass.set_pipeline(&cull);
                        (workgroups, vec![(0, g0), (1, g1), (2, g2)])
                    }
                };
                for (index, group) in groups {
                    pass.set_bind_group(index, group, &[]);
                }
                pass.dispatch_workgroups(x, y, 1);
            }
            Command::CopyCounts { crowd } => {
                if let Some((args, slot)) = crowds[*crowd].gpu.counts_copy() {
                    self.encoder.copy_buffer_to_buffer(args, 0, &slot.buffer, 0, gpu::DRAW_ARGS_BYTES);
                }
            }
            Command::ShadowPass => r.encode_shadow_pass(self.encoder, &plan.depth, crowds)?,
            // The driver's.
            Command::HostShadowGroups => {}
        }
        Ok(0)
    }
}

impl FrameBackend for Replay<'_, '_> {
    type Handles = WgpuHandles;
    type Error = Error;

    fn plan_limits(&self) -> PlanLimits {
        self.renderer.plan_limits()
    }

    fn own(&mut self) -> &mut RendererFrame<WgpuHandles> {
        &mut self.renderer.own
    }

    fn host_groups(
        &self,
        frame: &wgpu::Buffer,
        map: &wgpu::TextureView,
    ) -> Result<Vec<wgpu::BindGroup>, Error> {
        self.renderer.frame_groups_for(frame, Some(map))
    }

    fn begin_frame(&mut self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), Error> {
        self.scope = Some(AllocScope::push(&self.renderer.device));
        self.renderer.begin_counts(crowds, culling)
    }

    fn command(&mut self, step: Step<'_, '_, Self>) -> Result<(), Error> {
        let result = self.run(step);
        match (self.uploads.take(), result) {
            (Some((scope, bytes)), Err(e)) => scope.finish("crowd buffers", bytes, Err(e)),
            (open, result) => {
                self.uploads = open.map(|(scope, bytes)| (scope, bytes + *result.as_ref().unwrap_or(&0)));
                result.map(drop)
            }
        }
    }

    fn end_frame(&mut self, crowds: &mut [CrowdDraw<'_>], result: Result<(), Error>) -> Result<(), Error> {
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
                crate::crowd::map_on_submit(&d.gpu.counts, self.encoder);
            }
        }
        result
    }
}

impl Renderer {
    /// The built-in shadow pass: vat's own depth image, cleared, with `draws`.
    fn encode_shadow_pass(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
    ) -> Result<(), Error> {
        let pipelines = self.pipelines_for(draws, RendererConfig::SHADOW_PASS);
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
        let made =
            vat_core::backend::pipelines_for(draws, |key| Ok::<_, ()>(self.render_pipeline(key, formats)));
        made.unwrap_or_default()
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
        set: Stage,
        view: Option<usize>,
        draws: &[Draw],
        crowds: &[CrowdDraw<'_>],
        pipelines: &[(PipelineKey, wgpu::RenderPipeline)],
    ) -> Result<(), Missing> {
        let found = find_draws(crowds, &self.own, (set, view), draws, pipelines)?;
        draw_steps(&found, |step| match step {
            DrawStep::BindCrowd { groups, index } => {
                for (i, group) in groups.iter().enumerate() {
                    pass.set_bind_group(i as u32, *group, &[]);
                }
                pass.set_index_buffer(index.slice(..), wgpu::IndexFormat::Uint32);
            }
            DrawStep::BindFrameOnly(group) => pass.set_bind_group(0, group, &[]),
            DrawStep::Pipeline(pipeline) => pass.set_pipeline(pipeline),
            DrawStep::Indexed { indices, instances } => pass.draw_indexed(indices, 0, instances),
            DrawStep::IndexedIndirect { args, offset } => pass.draw_indexed_indirect(args, offset),
            DrawStep::Vertices { vertices, instances } => pass.draw(vertices, instances),
        });
        Ok(())
    }
}
