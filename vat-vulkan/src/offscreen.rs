//! [`Offscreen`]: the Vulkan implementation of vat-core's backend seam, the twin of
//! `vat_wgpu::Offscreen`.

use std::rc::Rc;

use ash::vk;
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::{check_target_size, sorted_lists};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd};
use vat_core::render::{CrowdRenderer, FrameReport, RenderOptions};

use crate::owned::{Object, Owned, color_range};
use crate::{
    Context, CrowdDraw, DeviceError, Error, GpuAsset, GpuCrowd, RenderTarget, Renderer, RendererConfig,
};

/// Format of the offscreen colour target (wgpu's `Rgba8UnormSrgb`).
const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_SRGB;
/// Format of the offscreen depth target (wgpu's `Depth32Float`).
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;
/// Format of the offscreen motion-vector target (vat-wgpu's `MOTION_FORMAT`, `Rgba32Float`): a
/// motion is read back exactly as the shader wrote it.
pub const MOTION_FORMAT: vk::Format = vk::Format::R32G32B32A32_SFLOAT;

/// The colour and depth images of an [`Offscreen`].
struct Target {
    color_image: vk::Image,
    color: vk::ImageView,
    depth_image: vk::Image,
    depth: vk::ImageView,
    motion_image: vk::Image,
    motion: vk::ImageView,
    size: [u32; 2],
    _owned: Owned,
}

impl Target {
    /// Creates the images and leaves the colour and motion ones cleared to zero in
    /// `COLOR_ATTACHMENT_OPTIMAL` (what [`Offscreen::read_rgba8`] and `read_motion` expect between
    /// frames).
    fn new(ctx: &Rc<Context>, size: [u32; 2]) -> Result<Self, Error> {
        check_target_size(size, ctx.properties.limits.max_image_dimension2_d)?;
        let mut owned = Owned::new(ctx);
        let (color_image, color) = owned.image_with(
            size[0],
            size[1],
            COLOR_FORMAT,
            vk::ImageUsageFlags::COLOR_ATTACHMENT
                | vk::ImageUsageFlags::TRANSFER_SRC
                | vk::ImageUsageFlags::TRANSFER_DST,
            vk::ImageAspectFlags::COLOR,
            "colour target",
        )?;
        let (depth_image, depth) = owned.image_with(
            size[0],
            size[1],
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
            "depth target",
        )?;
        let (motion_image, motion) = owned.image_with(
            size[0],
            size[1],
            MOTION_FORMAT,
            vk::ImageUsageFlags::COLOR_ATTACHMENT
                | vk::ImageUsageFlags::TRANSFER_SRC
                | vk::ImageUsageFlags::TRANSFER_DST,
            vk::ImageAspectFlags::COLOR,
            "motion target",
        )?;
        let mut scope = Owned::new(ctx);
        scope.submit_and_wait(|device, cb| {
            let to_dst = [color_image, motion_image].map(|image| {
                image_barrier(
                    image,
                    vk::ImageAspectFlags::COLOR,
                    (vk::ImageLayout::UNDEFINED, vk::AccessFlags::empty()),
                    (vk::ImageLayout::TRANSFER_DST_OPTIMAL, vk::AccessFlags::TRANSFER_WRITE),
                )
            });
            let to_attachment = [color_image, motion_image].map(|image| {
                image_barrier(
                    image,
                    vk::ImageAspectFlags::COLOR,
                    (vk::ImageLayout::TRANSFER_DST_OPTIMAL, vk::AccessFlags::TRANSFER_WRITE),
                    (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                )
            });
            // SAFETY: recording into `cb`; the image is live with TRANSFER_DST usage.
            unsafe {
                device.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &to_dst,
                );
                for image in [color_image, motion_image] {
                    device.cmd_clear_color_image(
                        cb,
                        image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        &vk::ClearColorValue { float32: [0.0; 4] },
                        &[color_range()],
                    );
                }
                device.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &to_attachment,
                );
            }
        })?;
        Ok(Self { color_image, color, depth_image, depth, motion_image, motion, size, _owned: owned })
    }
}

/// A layout transition of a whole one-level image.
pub(crate) fn image_barrier(
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
    from: (vk::ImageLayout, vk::AccessFlags),
    to: (vk::ImageLayout, vk::AccessFlags),
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .src_access_mask(from.1)
        .dst_access_mask(to.1)
        .old_layout(from.0)
        .new_layout(to.0)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(vk::ImageSubresourceRange { aspect_mask: aspect, ..color_range() })
}

/// A [`Renderer`] with its own context (or one given), command buffer, fence and offscreen target:
/// vat-vulkan's [`CrowdRenderer`]. Game code written against the trait runs unchanged on
/// `vat_wgpu::Offscreen`.
///
/// The target is `R8G8B8A8_SRGB` colour + `D32_SFLOAT` depth (the shadow-map size and interpolation
/// are taken from the config given). One frame is in flight at a time: [`render`](CrowdRenderer::render)
/// waits for the previous frame's fence before recording the next.
///
/// When the queue family writes timestamps (`timestampValidBits > 0`, as lavapipe's) and the device
/// reports a `timestampPeriod`, every frame is bracketed by two timestamps (a query pool of 2: one
/// written at the top of the pipe before the frame's commands, one at the bottom after them) and
/// [`last_gpu_time_ms`](CrowdRenderer::last_gpu_time_ms) reports the time between them, converted
/// with `timestampPeriod`. It returns `None` when the device cannot time frames
/// ([`gpu_timing`](Self::gpu_timing) is then false), before the first frame, after a frame whose
/// recording failed (nothing was submitted), and if reading the query results fails.
pub struct Offscreen {
    // Field order is drop order: the renderer and target go before the frame objects and the context.
    renderer: Renderer,
    target: Target,
    cb: vk::CommandBuffer,
    fence: vk::Fence,
    /// Whether a submitted frame has not been waited for.
    pending: bool,
    /// The frame's timestamp query pool (2 queries) and the valid bits of its timestamps; None when
    /// the queue family or device cannot time frames.
    timer: Option<(vk::QueryPool, u32)>,
    /// Whether the last recorded frame was submitted with its timestamps.
    timed: bool,
    _frame_objects: Owned,
    ctx: Rc<Context>,
}

impl std::fmt::Debug for Offscreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offscreen")
            .field("context", &self.ctx)
            .field("size", &self.target.size)
            .field("renderer", &self.renderer)
            .finish_non_exhaustive()
    }
}

impl Drop for Offscreen {
    fn drop(&mut self) {
        // SAFETY: plain wait on a live device before the frame's objects are destroyed.
        let _ = unsafe { self.ctx.device.device_wait_idle() };
        if let Some((pool, _)) = self.timer.take() {
            // SAFETY: the pool is this offscreen's, destroyed once, and no submitted work uses it
            // (the device is idle).
            unsafe { self.ctx.device.destroy_query_pool(pool, None) };
        }
    }
}

impl Offscreen {
    /// Opens a headless context ([`Context::headless`]: the CPU device when there is one, with the
    /// validation layer when installed) and creates a renderer and a target of `size` pixels.
    ///
    /// # Errors
    /// Those of [`Context::headless`] and [`Renderer::new`]; [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge) for a
    /// zero or over-limit target size.
    pub fn new(size: [u32; 2], config: RendererConfig) -> Result<Self, Error> {
        Self::with_context(&Rc::new(Context::headless()?), size, config)
    }

    /// Like [`new`](Self::new) on a context the caller made (e.g. [`Context::from_handles`] on an
    /// engine's device).
    ///
    /// # Errors
    /// Those of [`Renderer::new`]; [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge) for a zero or over-limit size.
    pub fn with_context(ctx: &Rc<Context>, size: [u32; 2], config: RendererConfig) -> Result<Self, Error> {
        let config = RendererConfig { color_format: COLOR_FORMAT, depth_format: DEPTH_FORMAT, ..config };
        let target = Target::new(ctx, size)?;
        let renderer = Renderer::new(ctx, config)?;
        let mut frame_objects = Owned::new(ctx);
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(ctx.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is the context's; the context is not `Sync`, so no other thread uses it.
        let cb = unsafe { ctx.device.allocate_command_buffers(&info) }
            .map_err(DeviceError::vk("allocate command buffer"))?[0];
        frame_objects.push(Object::CommandBuffer(cb));
        // SAFETY: valid create info on a live device.
        let fence = unsafe { ctx.device.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(DeviceError::vk("create fence"))?;
        frame_objects.push(Object::Fence(fence));
        let timer = Self::create_timer(ctx)?;
        Ok(Self {
            renderer,
            target,
            cb,
            fence,
            pending: false,
            timer,
            timed: false,
            _frame_objects: frame_objects,
            ctx: Rc::clone(ctx),
        })
    }

    /// The context and the renderer, for what the trait does not cover (e.g. [`Renderer::decode`]).
    pub fn parts(&mut self) -> (&Rc<Context>, &mut Renderer) {
        (&self.ctx, &mut self.renderer)
    }

    /// Whether frames are timed on the GPU (see [`last_gpu_time_ms`](CrowdRenderer::last_gpu_time_ms)):
    /// the queue family writes timestamps and the device reports their period.
    pub fn gpu_timing(&self) -> bool {
        self.timer.is_some()
    }

    /// Records a frame of the caller's own into the offscreen's command buffer and target, then
    /// submits it (without waiting; [`read_rgba8`](CrowdRenderer::read_rgba8) reads the result):
    /// `record` gets the context, the renderer, the command buffer (recording, outside any
    /// rendering) and the target, whose colour image is in `COLOR_ATTACHMENT_OPTIMAL` and depth image
    /// in `DEPTH_ATTACHMENT_OPTIMAL`, both with undefined contents (clear them), and must leave no
    /// rendering open. This is how a host embeds vat in its own frame ([`Renderer::prepare`], its own
    /// rendering with [`Renderer::draw`] inside) on the offscreen's device; the trait's `render` is
    /// `record_host_frame` of [`Renderer::render`].
    ///
    /// # Errors
    /// `record`'s error (the command buffer is then ended and not submitted), or a failure to
    /// begin, end or submit the command buffer.
    pub fn record_host_frame<R>(
        &mut self,
        record: impl FnOnce(&Context, &mut Renderer, vk::CommandBuffer, RenderTarget) -> Result<R, Error>,
    ) -> Result<R, Error> {
        // SAFETY: no semaphores.
        unsafe { self.record_host_frame_synced(&[], &[], record) }
    }

    /// [`record_host_frame`](Self::record_host_frame) whose submission waits for the semaphores of
    /// `waits` (each at its stage) and signals those of `signals`: how a frame rendered into a
    /// swapchain image waits for the image's acquisition and tells the presentation it is done
    /// ([`crate::Swapchain::render`] uses it).
    ///
    /// # Errors
    /// As [`record_host_frame`](Self::record_host_frame) (nothing is submitted, so nothing is
    /// waited for or signalled, when `record` fails).
    ///
    /// # Safety
    /// Every semaphore must be a live binary semaphore of this context's device that outlives the
    /// frame's execution; each of `waits` must have a signal operation submitted (or an image
    /// acquisition) that no other wait consumes, and each of `signals` must be unsignalled with no
    /// pending operation.
    pub unsafe fn record_host_frame_synced<R>(
        &mut self,
        waits: &[(vk::Semaphore, vk::PipelineStageFlags)],
        signals: &[vk::Semaphore],
        record: impl FnOnce(&Context, &mut Renderer, vk::CommandBuffer, RenderTarget) -> Result<R, Error>,
    ) -> Result<R, Error> {
        self.wait_frame()?;
        self.timed = false;
        let (d, cb) = (&self.ctx.device, self.cb);
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer is not pending (its fence was waited for); its pool allows
        // resetting single buffers, which `begin` does implicitly.
        unsafe { d.begin_command_buffer(cb, &begin) }.map_err(DeviceError::vk("begin command buffer"))?;
        if let Some((pool, _)) = self.timer {
            // SAFETY: recording, outside any rendering; both queries are of this pool, and no
            // submitted work uses them (the previous frame was waited for). The reset precedes the
            // write in submission order.
            unsafe {
                d.cmd_reset_query_pool(cb, pool, 0, 2);
                d.cmd_write_timestamp(cb, vk::PipelineStageFlags::TOP_OF_PIPE, pool, 0);
            }
        }
        let t = &self.target;
        let output = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
            | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
            | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        // Both attachments are cleared: their previous contents may be discarded.
        let to_attachment = [
            image_barrier(
                t.color_image,
                vk::ImageAspectFlags::COLOR,
                (vk::ImageLayout::UNDEFINED, vk::AccessFlags::empty()),
                (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
            ),
            image_barrier(
                t.depth_image,
                vk::ImageAspectFlags::DEPTH,
                (vk::ImageLayout::UNDEFINED, vk::AccessFlags::empty()),
                (
                    vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                    vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                        | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
            ),
            // The motion image keeps its contents (the last frame with motion vectors) between
            // frames that do not draw into it; `Renderer::render` orders its writes after the
            // previous frame's (a memory barrier over every attachment), so none is needed here.
            image_barrier(
                t.motion_image,
                vk::ImageAspectFlags::COLOR,
                (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::empty()),
                (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
            ),
        ];
        // SAFETY: recording; both images are the target's.
        unsafe {
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                output,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &to_attachment,
            );
        }
        let target = RenderTarget {
            color: t.color,
            depth: t.depth,
            motion: Some((t.motion, MOTION_FORMAT)),
            size: t.size,
        };
        let report = record(&self.ctx, &mut self.renderer, cb, target);
        if let Some((pool, _)) = self.timer {
            // SAFETY: recording, outside any rendering (`record` leaves none open); query 1 was reset
            // above. BOTTOM_OF_PIPE: written once every earlier command has completed.
            unsafe { d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, 1) };
        }
        // SAFETY: recording, begun above; `record` leaves no rendering open.
        unsafe { d.end_command_buffer(cb) }.map_err(DeviceError::vk("end command buffer"))?;
        let report = report?;
        let cbs = [cb];
        let (wait_semaphores, wait_stages): (Vec<vk::Semaphore>, Vec<vk::PipelineStageFlags>) =
            waits.iter().copied().unzip();
        let submit = [vk::SubmitInfo::default()
            .command_buffers(&cbs)
            .wait_semaphores(&wait_semaphores)
            .wait_dst_stage_mask(&wait_stages)
            .signal_semaphores(signals)];
        // SAFETY: the command buffer is executable; every object it uses outlives the frame (dropping
        // any of them waits for the device); the queue is used by this thread only; the caller
        // guarantees the semaphores' states.
        unsafe { d.queue_submit(self.ctx.queue, &submit, self.fence) }
            .map_err(DeviceError::vk("queue submit"))?;
        self.pending = true;
        self.timed = self.timer.is_some();
        Ok(report)
    }

    /// A timestamp query pool of 2 and the queue family's `timestampValidBits`, when the family
    /// writes timestamps and the device has a positive `timestampPeriod`.
    fn create_timer(ctx: &Context) -> Result<Option<(vk::QueryPool, u32)>, Error> {
        // SAFETY: the context's physical device is of its instance.
        let families =
            unsafe { ctx.instance.get_physical_device_queue_family_properties(ctx.physical_device) };
        let bits = families.get(ctx.queue_family as usize).map_or(0, |f| f.timestamp_valid_bits);
        let period = ctx.properties.limits.timestamp_period;
        if bits == 0 || !(period.is_finite() && period > 0.0) {
            return Ok(None);
        }
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
        // SAFETY: valid create info on a live device.
        let pool = unsafe { ctx.device.create_query_pool(&info, None) }
            .map_err(DeviceError::vk("create timestamp query pool"))?;
        Ok(Some((pool, bits)))
    }

    /// Waits for the submitted frame, if any, and resets its fence.
    fn wait_frame(&mut self) -> Result<(), Error> {
        if !self.pending {
            return Ok(());
        }
        let d = &self.ctx.device;
        // SAFETY: waits on and resets a fence of this device that a submission signals.
        unsafe {
            d.wait_for_fences(&[self.fence], true, u64::MAX).map_err(DeviceError::vk("wait for fence"))?;
            d.reset_fences(&[self.fence]).map_err(DeviceError::vk("reset fence"))?;
        }
        self.pending = false;
        Ok(())
    }
}

impl CrowdRenderer for Offscreen {
    type Asset = GpuAsset;
    type Crowd = GpuCrowd;
    type Error = Error;

    fn adapter_name(&self) -> String {
        format!("vulkan: {} (buffers in {})", self.ctx.device_name(), self.ctx.buffer_placement())
    }

    fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, Error> {
        self.renderer.upload(asset)
    }

    fn size(&self) -> [u32; 2] {
        self.target.size
    }

    fn resize(&mut self, size: [u32; 2]) -> Result<(), Error> {
        self.wait_frame()?;
        self.target = Target::new(&self.ctx, size)?;
        Ok(())
    }

    fn create_crowd(&mut self, crowd: &Crowd) -> Result<GpuCrowd, Error> {
        self.renderer.create_crowd(crowd)
    }

    fn render(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<FrameReport, Error> {
        self.record_host_frame(|_, renderer, cb, target| renderer.render(cb, crowds, camera, target, options))
    }

    fn last_gpu_time_ms(&mut self) -> Option<f64> {
        let (pool, bits) = self.timer?;
        if !self.timed {
            return None;
        }
        self.wait_frame().ok()?;
        let mut stamps = [0u64; 2];
        // SAFETY: both queries were reset and written by the last submitted frame, which has
        // completed (its fence was waited for); 64-bit results into an array of two u64s.
        unsafe {
            self.ctx.device.get_query_pool_results(
                pool,
                0,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .ok()?;
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        // A counter that wrapped between the two stamps is undone modulo its valid bits.
        let ticks = (stamps[1] & mask).wrapping_sub(stamps[0] & mask) & mask;
        Some(ticks as f64 * f64::from(self.ctx.properties.limits.timestamp_period) * 1e-6)
    }

    fn wait(&mut self) -> Result<(), Error> {
        self.wait_frame()
    }

    fn read_rgba8(&mut self) -> Result<Vec<u8>, Error> {
        let image = self.target.color_image;
        self.read_attachment(image, 4)
    }

    fn read_motion(&mut self) -> Result<Vec<[f32; 4]>, Error> {
        let image = self.target.motion_image;
        Ok(self.read_attachment(image, 16)?.chunks_exact(16).map(bytemuck::pod_read_unaligned).collect())
    }

    fn gpu_counts(&mut self, crowd: &mut GpuCrowd) -> Result<Option<GpuCountsResult>, Error> {
        self.renderer.gpu_counts(crowd)
    }

    fn read_gpu_visible(&mut self, crowd: &GpuCrowd) -> Result<Vec<Vec<u32>>, Error> {
        self.wait_frame()?;
        Ok(sorted_lists(self.renderer.read_gpu_visible(crowd)?))
    }
}

impl Offscreen {
    /// Copies colour attachment `image` of the target (`texel` bytes a pixel, in
    /// `COLOR_ATTACHMENT_OPTIMAL` between frames, left so) back as tightly packed rows, top first.
    /// Waits for the frame first.
    fn read_attachment(&mut self, image: vk::Image, texel: u64) -> Result<Vec<u8>, Error> {
        self.wait_frame()?;
        let [width, height] = self.target.size;
        let bytes = u64::from(width) * u64::from(height) * texel;
        let mut scope = Owned::new(&self.ctx);
        let readback = scope.buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, "attachment readback")?;

        scope.submit_and_wait(|device, cb| {
            let to_src = [image_barrier(
                image,
                vk::ImageAspectFlags::COLOR,
                (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::AccessFlags::TRANSFER_READ),
            )];
            let back = [image_barrier(
                image,
                vk::ImageAspectFlags::COLOR,
                (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::AccessFlags::empty()),
                (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
            )];
            let region = [crate::asset::whole_colour_image_copy(width, height)];
            let to_host = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)];
            // SAFETY: recording; the image is in COLOR_ATTACHMENT_OPTIMAL between frames, has
            // TRANSFER_SRC usage, and the buffer holds all its texels.
            unsafe {
                device.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::DependencyFlags::empty(),
                    &[],
                    &[],
                    &to_src,
                );
                device.cmd_copy_image_to_buffer(
                    cb,
                    image,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    readback.buffer,
                    &region,
                );
                device.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST | vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                    vk::DependencyFlags::empty(),
                    &to_host,
                    &[],
                    &back,
                );
            }
        })?;
        scope.read(&readback, bytes as usize)
    }
}
