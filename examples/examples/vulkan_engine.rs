//! vat-vulkan inside an existing Vulkan engine: "the engine" here creates its own instance, device,
//! queue, command pool, colour and depth images and command buffer with ash, then hands them to
//! vat-vulkan ([`vat_vulkan::Context::from_handles`]) and records a crowd frame into its own command
//! buffer ([`vat_vulkan::Renderer::render`]) between its own layout transitions. It reads the image
//! back and saves `vulkan_engine.png`.
//!
//! `cargo run --release -p vat-examples --example vulkan_engine`
//!
//! What the engine must provide: Vulkan 1.3 with `dynamicRendering`, `drawIndirectFirstInstance` and
//! `independentBlend` enabled, a queue family with graphics and compute, colour/depth views in
//! `COLOR_ATTACHMENT_OPTIMAL` / `DEPTH_ATTACHMENT_OPTIMAL` when the recorded commands start. See the
//! guide chapter "Using the Vulkan backend in an existing engine" (`docs/guide/src/embedding-vulkan.md`).

#![allow(unsafe_code)] // the engine side is raw Vulkan, as an engine's would be

use std::rc::Rc;

use anyhow::{Context as _, Result, anyhow};
use ash::vk;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::RenderOptions;

const SIZE: [u32; 2] = [640, 360];
const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_SRGB;
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

/// The engine's own objects (what a real engine already has).
struct Engine {
    entry: ash::Entry,
    instance: ash::Instance,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    queue: vk::Queue,
    family: u32,
    pool: vk::CommandPool,
    memory: vk::PhysicalDeviceMemoryProperties,
}

impl Engine {
    fn new() -> Result<Self> {
        // SAFETY: loads the system's Vulkan loader once; nothing unloads it while the engine lives.
        let entry = unsafe { ash::Entry::load() }?;
        let app = vk::ApplicationInfo::default().application_name(c"engine").api_version(vk::API_VERSION_1_3);
        // SAFETY: valid create info that lives for the call.
        let instance = unsafe {
            entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)
        }?;
        // SAFETY: plain queries on a live instance.
        let devices = unsafe { instance.enumerate_physical_devices() }?;
        let flags = vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE;
        let (physical_device, family) = devices
            .iter()
            .find_map(|&pd| {
                // SAFETY: `pd` is of this instance.
                let props = unsafe { instance.get_physical_device_properties(pd) };
                // SAFETY: as above.
                let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
                let family = families.iter().position(|f| f.queue_flags.contains(flags))?;
                (props.api_version >= vk::API_VERSION_1_3).then_some((pd, family as u32))
            })
            .ok_or_else(|| anyhow!("no Vulkan 1.3 device (install mesa-vulkan-drivers)"))?;
        let priorities = [1.0];
        let queues =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        // The features vat-vulkan needs, enabled by the engine.
        let mut features13 = vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(true);
        let mut features = vk::PhysicalDeviceFeatures2::default().features(
            vk::PhysicalDeviceFeatures::default().draw_indirect_first_instance(true).independent_blend(true),
        );
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .push_next(&mut features)
            .push_next(&mut features13);
        // SAFETY: valid create info; the physical device is of this instance.
        let device = unsafe { instance.create_device(physical_device, &info, None) }?;
        // SAFETY: one queue of `family` was requested.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        // SAFETY: valid create info on a live device.
        let pool = unsafe { device.create_command_pool(&pool_info, None) }?;
        // SAFETY: plain query.
        let memory = unsafe { instance.get_physical_device_memory_properties(physical_device) };
        Ok(Self { entry, instance, physical_device, device, queue, family, pool, memory })
    }

    fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> Result<u32> {
        (0..self.memory.memory_type_count)
            .find(|&i| {
                bits & (1 << i) != 0 && self.memory.memory_types[i as usize].property_flags.contains(flags)
            })
            .ok_or_else(|| anyhow!("no memory type"))
    }

    /// An image + memory + view, as the engine's render targets.
    fn image(
        &self,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> Result<(vk::Image, vk::DeviceMemory, vk::ImageView)> {
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width: SIZE[0], height: SIZE[1], depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .usage(usage);
        // SAFETY: valid create infos on a live device; memory bound once before the view is made.
        unsafe {
            let image = self.device.create_image(&info, None)?;
            let req = self.device.get_image_memory_requirements(image);
            let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(
                self.memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)?,
            );
            let memory = self.device.allocate_memory(&alloc, None)?;
            self.device.bind_image_memory(image, memory, 0)?;
            let range =
                vk::ImageSubresourceRange::default().aspect_mask(aspect).level_count(1).layer_count(1);
            let view_info = vk::ImageViewCreateInfo::default()
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(format)
                .subresource_range(range);
            let view = self.device.create_image_view(&view_info, None)?;
            Ok((image, memory, view))
        }
    }
}

fn barrier(
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
    src: vk::AccessFlags,
    dst: vk::AccessFlags,
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .image(image)
        .old_layout(old)
        .new_layout(new)
        .src_access_mask(src)
        .dst_access_mask(dst)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .subresource_range(
            vk::ImageSubresourceRange::default().aspect_mask(aspect).level_count(1).layer_count(1),
        )
}

/// The engine's render targets: an image, its memory and its view, for colour and depth.
struct Targets {
    color: (vk::Image, vk::DeviceMemory, vk::ImageView),
    depth: (vk::Image, vk::DeviceMemory, vk::ImageView),
}

impl Targets {
    fn new(engine: &Engine) -> Result<Self> {
        let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
        let color = engine.image(COLOR_FORMAT, usage, vk::ImageAspectFlags::COLOR)?;
        let depth = engine.image(
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        )?;
        Ok(Self { color, depth })
    }
}

/// The demo crowd (49 instances on a grid), its camera and options.
fn demo_crowd(asset: &Asset<'_>) -> Result<(Crowd, Camera, RenderOptions)> {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..49u32 {
        let p = [(i % 7) as f32 * 2.0 - 6.0, 0.0, (i / 7) as f32 * 2.0 - 6.0];
        crowd.spawn_at_phase(p, i as f32, i % clips, (i as f32 * 0.3).fract());
    }
    crowd.advance(0.5);
    let aspect = SIZE[0] as f32 / SIZE[1] as f32;
    let camera = Camera::look_at([0.0, 7.0, 15.0], [0.0, 0.8, 0.0], 0.9, aspect, 0.1, 300.0);
    let options = RenderOptions { ground: true, ground_half_extent: 40.0, ..Default::default() };
    Ok((crowd, camera, options))
}

/// The engine's frame begins: a command buffer of its pool, recording, with its targets moved into
/// the attachment layouts vat expects.
fn begin_engine_frame(engine: &Engine, targets: &Targets) -> Result<vk::CommandBuffer> {
    let d = &engine.device;
    let alloc = vk::CommandBufferAllocateInfo::default().command_pool(engine.pool).command_buffer_count(1);
    // SAFETY: allocation from the engine's pool; recording and submission on this thread only.
    let cb = unsafe { d.allocate_command_buffers(&alloc) }?[0];
    // SAFETY: `cb` is fresh.
    unsafe { d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()) }?;
    let to_attachments = [
        barrier(
            targets.color.0,
            vk::ImageAspectFlags::COLOR,
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            vk::AccessFlags::empty(),
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        ),
        barrier(
            targets.depth.0,
            vk::ImageAspectFlags::DEPTH,
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            vk::AccessFlags::empty(),
            vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
        ),
    ];
    // SAFETY: recording outside a render pass; the images are the engine's.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TOP_OF_PIPE,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_attachments,
        );
    }
    Ok(cb)
}

/// The engine ends its frame: it copies the colour image out (a real one would composite or present
/// it), submits `cb`, waits for it and frees it, and returns the pixels.
fn finish_engine_frame(engine: &Engine, cb: vk::CommandBuffer, color: vk::Image) -> Result<Vec<u8>> {
    let d = &engine.device;
    let readback_size = u64::from(SIZE[0] * SIZE[1] * 4);
    // SAFETY: valid create/allocate infos on the engine's device; host-visible coherent memory.
    let (buffer, buffer_memory) = unsafe {
        let b = d.create_buffer(
            &vk::BufferCreateInfo::default().size(readback_size).usage(vk::BufferUsageFlags::TRANSFER_DST),
            None,
        )?;
        let req = d.get_buffer_memory_requirements(b);
        let flags = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(engine.memory_type(req.memory_type_bits, flags)?);
        let m = d.allocate_memory(&alloc, None)?;
        d.bind_buffer_memory(b, m, 0)?;
        (b, m)
    };
    let to_src = [barrier(
        color,
        vk::ImageAspectFlags::COLOR,
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        vk::AccessFlags::TRANSFER_READ,
    )];
    let region = [vk::BufferImageCopy::default()
        .image_subresource(
            vk::ImageSubresourceLayers::default().aspect_mask(vk::ImageAspectFlags::COLOR).layer_count(1),
        )
        .image_extent(vk::Extent3D { width: SIZE[0], height: SIZE[1], depth: 1 })];
    let to_host = [vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::HOST_READ)];
    // SAFETY: recording outside a render pass (vat's `render` leaves none open); then one submission
    // waited for with a fence before anything it uses is destroyed.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_src,
        );
        d.cmd_copy_image_to_buffer(cb, color, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, buffer, &region);
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &to_host,
            &[],
            &[],
        );
        d.end_command_buffer(cb)?;
        let fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
        let cbs = [cb];
        d.queue_submit(engine.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], fence)?;
        d.wait_for_fences(&[fence], true, u64::MAX)?;
        d.destroy_fence(fence, None);
        let ptr = d.map_memory(buffer_memory, 0, readback_size, vk::MemoryMapFlags::empty())?;
        let rgba = std::slice::from_raw_parts(ptr.cast::<u8>(), readback_size as usize).to_vec();
        d.unmap_memory(buffer_memory);
        d.destroy_buffer(buffer, None);
        d.free_memory(buffer_memory, None);
        d.free_command_buffers(engine.pool, &cbs);
        Ok(rgba)
    }
}

/// vat's part: a renderer on the engine's device draws the demo crowd into the engine's targets,
/// between the engine's own transitions. Every vat object is dropped on return (each waits for the
/// device first).
fn render_with_vat(engine: &Engine, ctx: &Rc<vat_vulkan::Context>, targets: &Targets) -> Result<Vec<u8>> {
    let config = vat_vulkan::RendererConfig {
        color_format: COLOR_FORMAT,
        depth_format: DEPTH_FORMAT,
        ..Default::default()
    };
    let mut renderer = vat_vulkan::Renderer::new(ctx, config)?;
    let bytes = vat_examples::support::asset_bytes(None)?;
    let asset = Asset::parse(&bytes)?;
    let gpu_asset = renderer.upload(&asset)?;
    let (mut crowd, camera, options) = demo_crowd(&asset)?;

    // The engine's frame: its command buffer, its transitions, vat's passes in between.
    let cb = begin_engine_frame(engine, targets)?;
    let target =
        vat_vulkan::RenderTarget { color: targets.color.2, depth: targets.depth.2, motion: None, size: SIZE };
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let mut crowds = [vat_vulkan::CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
    let report = renderer.render(cb, &mut crowds, &camera, target, &options)?;
    let rgba = finish_engine_frame(engine, cb, targets.color.0)?;
    println!(
        "rendered {} instances ({} draws) on {} into the engine's image",
        report.stats.drawn,
        report.draws_main + report.draws_shadow + report.draws_attachments + report.draws_ground,
        ctx.device_name()
    );
    Ok(rgba)
}

fn main() -> Result<()> {
    let engine = Engine::new()?;
    let targets = Targets::new(&engine)?;

    // Hand the engine's device to vat-vulkan.
    // SAFETY: the handles are valid and related, and outlive `ctx` and everything made from it (all
    // dropped before the engine destroys its device below); this thread is the only user of the queue.
    let ctx = Rc::new(unsafe {
        vat_vulkan::Context::from_handles(
            engine.entry.clone(),
            engine.instance.clone(),
            engine.physical_device,
            engine.device.clone(),
            engine.queue,
            engine.family,
        )
    }?);
    // The renderer and the asset are dropped inside (each waits for the device first).
    let rgba = render_with_vat(&engine, &ctx, &targets)?;
    drop(Rc::into_inner(ctx).context("vat objects still hold the context")?);
    vat_examples::support::save_png(std::path::Path::new("vulkan_engine.png"), SIZE, &rgba)?;
    println!("wrote vulkan_engine.png");
    // The engine tears down its own objects.
    // SAFETY: the device is idle (vat's objects waited for it), nothing uses these objects any more.
    unsafe {
        for (image, memory, view) in [targets.color, targets.depth] {
            engine.device.destroy_image_view(view, None);
            engine.device.destroy_image(image, None);
            engine.device.free_memory(memory, None);
        }
        engine.device.destroy_command_pool(engine.pool, None);
        engine.device.destroy_device(None);
        engine.instance.destroy_instance(None);
    }
    Ok(())
}
