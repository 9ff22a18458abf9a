//! [`Swapchain`]: presenting an [`Offscreen`]'s frames to a window through `VkSwapchainKHR`.
//!
//! The swapchain is made on a [`Context::presenting`] context (its window surface, `VK_KHR_swapchain`
//! and a queue that presents). Each [`render`](Swapchain::render) is one frame the way a host embeds
//! vat in its own: acquire the next image (signalling a semaphore), record
//! [`Renderer::prepare`](crate::Renderer::prepare), dynamic rendering over the swapchain image and
//! the swapchain's own depth image with [`Renderer::draw`](crate::Renderer::draw) inside, a transition
//! to `PRESENT_SRC_KHR`, submit (waiting for the acquisition, signalling the image's "rendered"
//! semaphore) and present (waiting for it). A host that draws more than the crowd (its own scene,
//! its own shadow passes) records its whole frame with [`render_with`](Swapchain::render_with)
//! instead, and the swapchain does the acquisition, transitions, submission and presentation. `ERROR_OUT_OF_DATE_KHR` and `SUBOPTIMAL_KHR` recreate the
//! swapchain at the size last asked for.

use std::rc::Rc;

use ash::vk;
use vat_core::crowd::Camera;
use vat_core::render::{CrowdRenderer, FrameReport, RenderOptions};

use crate::offscreen::image_barrier;
use crate::owned::{Owned, color_range};
use crate::{Context, CrowdDraw, DeviceError, Error, Offscreen, PassConventions, PassFormats, full_rect};

/// The depth format of the swapchain's depth image (the offscreen target's).
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

/// What [`Swapchain::render`] (or [`Swapchain::render_with`]) did.
#[derive(Debug)]
pub enum Presented<T = FrameReport> {
    /// The frame was rendered into the next image and queued for presentation, with what its
    /// recording returned (vat's report for [`Swapchain::render`]).
    Shown(T),
    /// Nothing was rendered: the swapchain was out of date (it is recreated) or the window has no
    /// area (minimised). Render again at the next frame.
    Skipped,
}

/// A `VkSwapchainKHR` on a presenting context's window surface, with a depth image of its size and
/// the semaphores of one frame in flight (the [`Offscreen`] it renders with waits for its previous
/// frame before recording the next). Images are sRGB (`B8G8R8A8_SRGB` or `R8G8B8A8_SRGB`, so the
/// renderer's pipelines write the same encoded colours as into the offscreen target), presented
/// `FIFO` (vsync; the one mode every implementation has), used as colour attachments only.
pub struct Swapchain {
    loader: ash::khr::swapchain::Device,
    swapchain: vk::SwapchainKHR,
    images: Vec<vk::Image>,
    views: Vec<vk::ImageView>,
    /// One per image: signalled by the frame rendered into it, waited for by its presentation.
    rendered: Vec<vk::Semaphore>,
    /// Signalled by the acquisition of the next image, waited for by the frame rendered into it.
    acquired: vk::Semaphore,
    depth: Option<(vk::Image, vk::ImageView, Owned)>,
    format: vk::SurfaceFormatKHR,
    present_mode: vk::PresentModeKHR,
    /// The images' size (zero while the window has no area).
    extent: [u32; 2],
    /// The size asked for (the window's).
    wanted: [u32; 2],
    ctx: Rc<Context>,
}

impl std::fmt::Debug for Swapchain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Swapchain {
    /// A swapchain of `size` pixels (the window's; the surface's current extent wins when it has
    /// one) on `ctx`'s window surface.
    ///
    /// # Errors
    /// [`DeviceError::Window`](crate::DeviceError::Window) when `ctx` is not [`Context::presenting`] or the surface offers no
    /// sRGB 8-bit format; [`DeviceError::Vk`](crate::DeviceError::Vk) when a Vulkan call fails.
    pub fn new(ctx: &Rc<Context>, size: [u32; 2]) -> Result<Self, Error> {
        let surface =
            ctx.surface().ok_or_else(|| DeviceError::Window("the context has no surface".into()))?;
        let surface_loader = ctx.surface_loader().ok_or(DeviceError::Internal("surface without loader"))?;
        // SAFETY: the surface and the physical device are of this context's instance.
        let formats =
            unsafe { surface_loader.get_physical_device_surface_formats(ctx.physical_device, surface) }
                .map_err(DeviceError::vk("surface formats"))?;
        let format = [vk::Format::B8G8R8A8_SRGB, vk::Format::R8G8B8A8_SRGB]
            .iter()
            .find_map(|&want| {
                formats
                    .iter()
                    .find(|f| f.format == want && f.color_space == vk::ColorSpaceKHR::SRGB_NONLINEAR)
                    .copied()
            })
            .ok_or_else(|| {
                DeviceError::Window(format!("the surface offers no 8-bit sRGB format: {formats:?}"))
            })?;
        // SAFETY: plain semaphore creation on a live device.
        let acquired = unsafe { ctx.device.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }
            .map_err(DeviceError::vk("create semaphore"))?;
        let mut swapchain = Self {
            loader: ash::khr::swapchain::Device::new(&ctx.instance, &ctx.device),
            swapchain: vk::SwapchainKHR::null(),
            images: Vec::new(),
            views: Vec::new(),
            rendered: Vec::new(),
            acquired,
            depth: None,
            format,
            present_mode: vk::PresentModeKHR::FIFO,
            extent: [0, 0],
            wanted: size,
            ctx: Rc::clone(ctx),
        };
        swapchain.recreate()?;
        Ok(swapchain)
    }

    /// One line naming the presentation path, e.g.
    /// `VkSwapchainKHR (FIFO, B8G8R8A8_SRGB, 3 images, 1280x720)`.
    pub fn describe(&self) -> String {
        format!(
            "VkSwapchainKHR ({:?}, {:?}, {} images, {}x{})",
            self.present_mode,
            self.format.format,
            self.images.len(),
            self.extent[0],
            self.extent[1]
        )
    }

    /// The images' format.
    pub fn format(&self) -> vk::Format {
        self.format.format
    }

    /// The images' size in pixels (`[0, 0]` while the window has no area).
    pub fn size(&self) -> [u32; 2] {
        self.extent
    }

    /// Recreates the swapchain for a window of `size` pixels (waits for the device first).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn resize(&mut self, size: [u32; 2]) -> Result<(), Error> {
        self.wanted = size;
        self.recreate()
    }

    /// Renders one frame of `crowds` seen by `camera` with `offscreen`'s renderer (which must be on
    /// this swapchain's context) into the next image and presents it: see the module docs. Waits
    /// for `offscreen`'s previous frame first. The camera's aspect should be the swapchain's
    /// ([`size`](Self::size)).
    ///
    /// # Errors
    /// Those of [`Renderer::prepare`](crate::Renderer::prepare) and
    /// [`Renderer::draw`](crate::Renderer::draw), and Vulkan failures of the acquisition, submission
    /// or presentation. After an error the swapchain must be recreated ([`resize`](Self::resize))
    /// before the next frame (an acquired image may be left unpresented).
    pub fn render(
        &mut self,
        offscreen: &mut Offscreen,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<Presented, Error> {
        self.render_with(offscreen, |ctx, renderer, cb, target| {
            let report = renderer.prepare(cb, crowds, camera, options, &[])?;
            record_rendering(ctx, cb, &target, options.clear_color, |cb| {
                renderer.draw(cb, crowds, target.formats, target.area)
            })?;
            Ok(report)
        })
    }

    /// Records a frame of the caller's own into the next image with `offscreen`'s renderer (on
    /// this swapchain's context) and presents it: how a host that draws more than vat's crowds (its
    /// own ground, its own shadow passes) presents. `record` gets the context, the renderer, the
    /// command buffer (recording, outside any rendering) and the [`SwapchainTarget`], whose colour
    /// image is in `COLOR_ATTACHMENT_OPTIMAL` and depth image in `DEPTH_ATTACHMENT_OPTIMAL`, both
    /// with undefined contents (clear them); it must leave no rendering open and the images in
    /// those layouts (the swapchain then transitions the colour image to `PRESENT_SRC_KHR`). Waits
    /// for `offscreen`'s previous frame first.
    ///
    /// # Errors
    /// `record`'s error (nothing is submitted or presented then), and Vulkan failures of the
    /// acquisition, submission or presentation. After an error the swapchain must be recreated
    /// ([`resize`](Self::resize)) before the next frame (an acquired image may be left
    /// unpresented).
    pub fn render_with<T, E: From<Error>>(
        &mut self,
        offscreen: &mut Offscreen,
        record: impl FnOnce(&Context, &mut crate::Renderer, vk::CommandBuffer, SwapchainTarget) -> Result<T, E>,
    ) -> Result<Presented<T>, E> {
        if self.extent.contains(&0) {
            self.recreate()?;
            if self.extent.contains(&0) {
                return Ok(Presented::Skipped);
            }
        }
        // The acquisition semaphore is reused: the frame that waited for it must have completed.
        offscreen.wait()?;
        // SAFETY: the swapchain and semaphore are live and this swapchain's; the semaphore has no
        // pending operation (the frame that waited for it has completed, above).
        let acquired = unsafe {
            self.loader.acquire_next_image(self.swapchain, u64::MAX, self.acquired, vk::Fence::null())
        };
        let (index, acquire_suboptimal) = match acquired {
            Ok(r) => r,
            Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {
                self.recreate()?;
                return Ok(Presented::Skipped);
            }
            Err(e) => return Err(DeviceError::from_vk("acquire next image", e).into()),
        };
        let i = index as usize;
        let (Some(&image), Some(&view), Some(&rendered), Some((depth_image, depth_view, _))) =
            (self.images.get(i), self.views.get(i), self.rendered.get(i), self.depth.as_ref())
        else {
            return Err(
                Error::from(DeviceError::Internal("acquired an image the swapchain does not have")).into()
            );
        };
        let target = SwapchainTarget {
            color: view,
            depth: *depth_view,
            area: full_rect(self.extent),
            formats: PassFormats {
                conventions: PassConventions::STANDARD,
                color: Some(self.format.format),
                motion: None,
                depth: DEPTH_FORMAT,
                samples: 1,
            },
        };
        let depth_image = *depth_image;
        let waits = [(self.acquired, vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)];
        let signals = [rendered];
        let mut failure = None;
        // SAFETY: `acquired` is signalled by the acquisition above and waited for by this frame only;
        // `rendered` is this image's, unsignalled (its previous signal was waited for by the image's
        // previous presentation, which completed before the image could be acquired again); both live
        // as long as the swapchain, which waits for the device before destroying them.
        let recorded = unsafe {
            offscreen.record_host_frame_synced(&waits, &signals, |ctx, renderer, cb, _offscreen_target| {
                record_to_attachment(ctx, cb, image, depth_image);
                match record(ctx, renderer, cb, target) {
                    Ok(out) => {
                        record_to_present(ctx, cb, image);
                        Ok(out)
                    }
                    Err(e) => {
                        // Not submitted: the caller's error is returned below.
                        failure = Some(e);
                        Err(DeviceError::Internal("the host's frame recording failed").into())
                    }
                }
            })
        };
        if let Some(e) = failure {
            return Err(e);
        }
        let out = recorded?;
        let swapchains = [self.swapchain];
        let indices = [index];
        let present = vk::PresentInfoKHR::default()
            .wait_semaphores(&signals)
            .swapchains(&swapchains)
            .image_indices(&indices);
        // SAFETY: the image was acquired and its frame submitted (signalling `rendered`); the queue
        // presents to this surface (the context chose its family so) and is used by this thread only.
        let presented = unsafe { self.loader.queue_present(self.ctx.queue, &present) };
        match presented {
            Ok(false) if !acquire_suboptimal => {}
            Ok(_) | Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => self.recreate()?,
            Err(e) => return Err(DeviceError::from_vk("queue present", e).into()),
        }
        Ok(Presented::Shown(out))
    }

    /// (Re)creates the swapchain, its views, semaphores and depth image at the wanted size (or the
    /// surface's current extent), replacing the old ones once the device is idle.
    fn recreate(&mut self) -> Result<(), Error> {
        let ctx = Rc::clone(&self.ctx);
        let surface = ctx.surface().ok_or(DeviceError::Internal("swapchain without surface"))?;
        let surface_loader = ctx.surface_loader().ok_or(DeviceError::Internal("surface without loader"))?;
        // SAFETY: plain wait on a live device: nothing may use the objects replaced below.
        unsafe { ctx.device.device_wait_idle() }.map_err(DeviceError::vk("wait for the device"))?;
        self.destroy_images();
        // No images until they are all made: a failure below leaves a swapchain that `render`
        // recreates before using.
        self.extent = [0, 0];
        // SAFETY: the surface and the physical device are of this context's instance.
        let caps =
            unsafe { surface_loader.get_physical_device_surface_capabilities(ctx.physical_device, surface) }
                .map_err(DeviceError::vk("surface capabilities"))?;
        let extent = if caps.current_extent.width == u32::MAX {
            vk::Extent2D {
                width: self.wanted[0].clamp(caps.min_image_extent.width, caps.max_image_extent.width),
                height: self.wanted[1].clamp(caps.min_image_extent.height, caps.max_image_extent.height),
            }
        } else {
            caps.current_extent
        };
        if extent.width == 0 || extent.height == 0 {
            return Ok(());
        }
        let mut count = caps.min_image_count + 1;
        if caps.max_image_count > 0 {
            count = count.min(caps.max_image_count);
        }
        let alpha = [
            vk::CompositeAlphaFlagsKHR::OPAQUE,
            vk::CompositeAlphaFlagsKHR::INHERIT,
            vk::CompositeAlphaFlagsKHR::PRE_MULTIPLIED,
            vk::CompositeAlphaFlagsKHR::POST_MULTIPLIED,
        ]
        .into_iter()
        .find(|&a| caps.supported_composite_alpha.contains(a))
        .unwrap_or(vk::CompositeAlphaFlagsKHR::OPAQUE);
        let old = self.swapchain;
        let info = vk::SwapchainCreateInfoKHR::default()
            .surface(surface)
            .min_image_count(count)
            .image_format(self.format.format)
            .image_color_space(self.format.color_space)
            .image_extent(extent)
            .image_array_layers(1)
            .image_usage(vk::ImageUsageFlags::COLOR_ATTACHMENT)
            .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
            .pre_transform(caps.current_transform)
            .composite_alpha(alpha)
            .present_mode(self.present_mode)
            .clipped(true)
            .old_swapchain(old);
        // SAFETY: valid create info on the surface this device can present to; `old` (possibly null)
        // is this loader's swapchain, retired by this call.
        let created = unsafe { self.loader.create_swapchain(&info, None) };
        if old != vk::SwapchainKHR::null() {
            // SAFETY: the device is idle (above) and nothing acquired from `old` is in use.
            unsafe { self.loader.destroy_swapchain(old, None) };
            self.swapchain = vk::SwapchainKHR::null();
        }
        self.swapchain = created.map_err(DeviceError::vk("create swapchain"))?;
        // SAFETY: a live swapchain of this loader.
        let images = unsafe { self.loader.get_swapchain_images(self.swapchain) }
            .map_err(DeviceError::vk("swapchain images"))?;
        self.images = images;
        let d = &ctx.device;
        for &image in &self.images {
            let view_info = vk::ImageViewCreateInfo::default()
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(self.format.format)
                .subresource_range(color_range());
            // SAFETY: a view of a live swapchain image of this device.
            let view = unsafe { d.create_image_view(&view_info, None) }
                .map_err(DeviceError::vk("create image view"))?;
            self.views.push(view);
            // SAFETY: plain semaphore creation on a live device.
            let semaphore = unsafe { d.create_semaphore(&vk::SemaphoreCreateInfo::default(), None) }
                .map_err(DeviceError::vk("create semaphore"))?;
            self.rendered.push(semaphore);
        }
        let mut owned = Owned::new(&ctx);
        let (image, view) = owned.image_with(
            extent.width,
            extent.height,
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
            "swapchain depth",
        )?;
        self.depth = Some((image, view, owned));
        self.extent = [extent.width, extent.height];
        Ok(())
    }

    /// Destroys the views, the per-image semaphores and the depth image (not the swapchain).
    /// The device must be idle.
    fn destroy_images(&mut self) {
        let d = &self.ctx.device;
        for view in self.views.drain(..) {
            // SAFETY: this swapchain's view; the device is idle (the callers wait).
            unsafe { d.destroy_image_view(view, None) };
        }
        for semaphore in self.rendered.drain(..) {
            // SAFETY: this swapchain's semaphore, no longer used by the idle device.
            unsafe { d.destroy_semaphore(semaphore, None) };
        }
        self.images.clear();
        self.depth = None;
    }
}

impl Drop for Swapchain {
    fn drop(&mut self) {
        // SAFETY: plain wait on a live device before its objects are destroyed.
        let _ = unsafe { self.ctx.device.device_wait_idle() };
        self.destroy_images();
        // SAFETY: this swapchain's objects, unused by the idle device, destroyed once; the surface
        // (the context's) outlives the swapchain.
        unsafe {
            self.ctx.device.destroy_semaphore(self.acquired, None);
            if self.swapchain != vk::SwapchainKHR::null() {
                self.loader.destroy_swapchain(self.swapchain, None);
            }
        }
    }
}

/// The attachments of a [`Swapchain::render_with`] frame: the acquired image's view and the
/// swapchain's depth image's, in `COLOR_ATTACHMENT_OPTIMAL` and `DEPTH_ATTACHMENT_OPTIMAL`.
#[derive(Debug, Clone, Copy)]
pub struct SwapchainTarget {
    /// The acquired swapchain image's view (sRGB, see [`Swapchain::format`]).
    pub color: vk::ImageView,
    /// The swapchain's depth image's view ([`PassFormats::depth`]).
    pub depth: vk::ImageView,
    /// The whole image.
    pub area: vk::Rect2D,
    /// The attachments' formats, one sample.
    pub formats: PassFormats,
}

/// Records, into `cb` (recording, outside any rendering), the transitions of a swapchain image
/// `color` and the depth image `depth` to attachment layouts, contents discarded.
fn record_to_attachment(ctx: &Context, cb: vk::CommandBuffer, color: vk::Image, depth: vk::Image) {
    let fragment_tests =
        vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
    let depth_rw =
        vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
    let to_attachment = [
        image_barrier(
            color,
            vk::ImageAspectFlags::COLOR,
            (vk::ImageLayout::UNDEFINED, vk::AccessFlags::empty()),
            (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
        ),
        image_barrier(
            depth,
            vk::ImageAspectFlags::DEPTH,
            (vk::ImageLayout::UNDEFINED, vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE),
            (vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL, depth_rw),
        ),
    ];
    // SAFETY: recording, outside any rendering; both images are live. The colour transition waits at
    // COLOR_ATTACHMENT_OUTPUT, the stage the acquisition semaphore is waited at; the depth one after
    // the previous frame's depth writes.
    unsafe {
        ctx.device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | fragment_tests,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | fragment_tests,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_attachment,
        );
    }
}

/// Records, into `cb` (recording, outside any rendering), the transition of the swapchain image
/// `color` from `COLOR_ATTACHMENT_OPTIMAL` to `PRESENT_SRC_KHR`.
fn record_to_present(ctx: &Context, cb: vk::CommandBuffer, color: vk::Image) {
    let to_present = [image_barrier(
        color,
        vk::ImageAspectFlags::COLOR,
        (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
        (vk::ImageLayout::PRESENT_SRC_KHR, vk::AccessFlags::empty()),
    )];
    // SAFETY: recording, outside any rendering; the presentation waits on the frame's semaphore,
    // which makes the writes available to it.
    unsafe {
        ctx.device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::PipelineStageFlags::BOTTOM_OF_PIPE,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_present,
        );
    }
}

/// Records, into `cb` (recording, outside any rendering), dynamic rendering over `target` cleared
/// to `clear` and depth 1, with `draw` inside.
fn record_rendering(
    ctx: &Context,
    cb: vk::CommandBuffer,
    target: &SwapchainTarget,
    clear: [f64; 4],
    draw: impl FnOnce(vk::CommandBuffer) -> Result<(), Error>,
) -> Result<(), Error> {
    let d = &ctx.device;
    let [r, g, b, a] = clear;
    let color_attachment = [vk::RenderingAttachmentInfo::default()
        .image_view(target.color)
        .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .clear_value(vk::ClearValue {
            color: vk::ClearColorValue { float32: [r as f32, g as f32, b as f32, a as f32] },
        })];
    let depth_attachment = vk::RenderingAttachmentInfo::default()
        .image_view(target.depth)
        .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::DONT_CARE)
        .clear_value(vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } });
    let info = vk::RenderingInfo::default()
        .render_area(target.area)
        .layer_count(1)
        .color_attachments(&color_attachment)
        .depth_attachment(&depth_attachment);
    // SAFETY: outside any rendering; the attachments are in the layouts given (`render_with`).
    unsafe { d.cmd_begin_rendering(cb, &info) };
    let drawn = draw(cb);
    // SAFETY: ends the rendering begun above (also when `draw` recorded nothing).
    unsafe { d.cmd_end_rendering(cb) };
    drawn
}
