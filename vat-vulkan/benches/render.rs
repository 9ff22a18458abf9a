//! CPU cost of recording one frame with `vat_vulkan::Renderer::render`, CPU and GPU culling, on the
//! headless context (the software Vulkan driver, lavapipe, where there is one), **without** the
//! validation layer (it multiplies the CPU cost of every Vulkan call):
//! `cargo bench -p vat-vulkan --bench render`. The twin of vat-wgpu's `benches/render.rs`: same
//! scene, counts, random numbers, camera, target and shadow-map sizes, so the figures compare.
//!
//! The target for the GPU-driven path: <= 0.05 ms of CPU per frame at any instance count.
//!
//! Scene: the baked procedural humanoid (default bake options: Packed64, 5 LODs, the cap attachment);
//! N instances spread uniformly over a square of side `sqrt(N) * 2` m (4 m² each), static (nothing
//! moves, the clock does not advance); the camera at the square's west edge, 10 m up, looking across
//! it (90 degrees, far plane at 80 m: it sees part of the crowd), default crowd config and render
//! options (shadows on), a 64x64 target (`R8G8B8A8_SRGB` + `D32_SFLOAT`), a 512² shadow map (the
//! GPU's work is not measured; a small map keeps the run short).
//!
//! - `vulkan_render/{cpu,gpu,gpu_move1pct}/N` (its own criterion group, so its baselines never mix with
//!   vat-wgpu's `render/...`): timed: the `Renderer::render` call alone, recording into a primary command
//!   buffer (CPU culling: `Crowd::prepare_frame`, the queued uploads and the recording of the passes;
//!   GPU culling: `Crowd::take_record_uploads`, the queued uploads and the recording, culling pass
//!   included). Untimed, per frame: `vkBeginCommandBuffer` and the target's layout transition (as
//!   `Offscreen` records them), `vkEndCommandBuffer`, `vkQueueSubmit` and the fence wait (so no
//!   frame overlaps the next). The medians of `vkEndCommandBuffer`, `vkQueueSubmit` and of the whole
//!   frame (GPU wait included) are printed, with the frame's upload and draw figures.
//! - `render/gpu_move1pct/N`: as `render/gpu/N`, with a random 1 % of the instances moved before
//!   each frame (untimed): the cost of uploading changed records on the GPU-driven path.
//! - printed first: `vkEndCommandBuffer` + `vkQueueSubmit` of a frame that only clears the target,
//!   for reference (what the driver costs per submitted frame whatever it holds).
//!
//! The crowd-only work (`take_record_uploads`) does not depend on the backend: vat-wgpu's bench
//! measures it. Sampling is flat and short (the GPU frame behind every timed `render`, unmeasured, is
//! what takes the time on a software driver).

// Raw Vulkan for the bench's own target, command buffer and fence; every block has a SAFETY comment.
#![allow(unsafe_code)]

use std::hint::black_box;
use std::rc::Rc;
use std::time::{Duration, Instant};

use ash::vk;
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_main};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_vulkan::{
    Context, Culling, FrameReport, GpuAsset, RenderOptions, RenderTarget, Renderer, RendererConfig,
};
use vat_vulkan::{CrowdDraw, GpuCrowd};

const SIZE: [u32; 2] = [64, 64];
const COUNTS: [u32; 4] = [1_000, 10_000, 100_000, 1_000_000];
const SAMPLES: usize = 20;
const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_SRGB;
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

/// The procedural humanoid, baked with default options, as `.vat` bytes.
fn humanoid() -> Vec<u8> {
    let rig = vat_procgen::humanoid();
    let bake = vat_bake::prepare::prepare(&rig, &Default::default()).expect("the humanoid bakes");
    bake.to_vat_bytes().expect("the bake serialises")
}

/// `n` static instances over a square of side `sqrt(n) * 2` m, and that side.
fn crowd(asset: &CrowdAsset, n: u32) -> (Crowd, f32) {
    let side = (n as f32).sqrt() * 2.0;
    let mut rng = Rng(u64::from(n));
    let mut crowd = Crowd::new(asset.clone(), CrowdConfig::default());
    let clips = asset.clips.len() as u32;
    for i in 0..n {
        let p = [rng.next() * side, 0.0, rng.next() * side];
        let id = crowd.spawn_at_phase(p, rng.next() * std::f32::consts::TAU, i % clips, rng.next());
        crowd.set_variant(id, ((i * 37) & 0xFF) | (vat_core::instance::VARIANT_ACCESSORY * (i % 2)));
    }
    (crowd, side)
}

fn camera(side: f32) -> Camera {
    let eye = [-5.0, 10.0, side * 0.5];
    let target = [side * 0.5, 0.0, side * 0.5];
    Camera::look_at(eye, target, std::f32::consts::FRAC_PI_2, SIZE[0] as f32 / SIZE[1] as f32, 0.5, 80.0)
}

/// A memory type allowed by `bits` with `flags`.
fn memory_type(ctx: &Context, bits: u32, flags: vk::MemoryPropertyFlags) -> u32 {
    let m = &ctx.memory_properties;
    (0..m.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(flags))
        .expect("a memory type for the target")
}

/// A one-level 2D image of `SIZE`, its memory and a view.
fn image(
    ctx: &Context,
    format: vk::Format,
    usage: vk::ImageUsageFlags,
    aspect: vk::ImageAspectFlags,
) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
    let d = &ctx.device;
    let info = vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(format)
        .extent(vk::Extent3D { width: SIZE[0], height: SIZE[1], depth: 1 })
        .mip_levels(1)
        .array_layers(1)
        .samples(vk::SampleCountFlags::TYPE_1)
        .usage(usage);
    // SAFETY: valid create infos on the context's live device; the memory is bound once, before the
    // view is created.
    unsafe {
        let image = d.create_image(&info, None).expect("create image");
        let req = d.get_image_memory_requirements(image);
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(memory_type(ctx, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL));
        let memory = d.allocate_memory(&alloc, None).expect("allocate image memory");
        d.bind_image_memory(image, memory, 0).expect("bind image memory");
        let range = vk::ImageSubresourceRange::default().aspect_mask(aspect).level_count(1).layer_count(1);
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(range);
        let view = d.create_image_view(&view_info, None).expect("create image view");
        (image, memory, view)
    }
}

/// A whole-image layout transition from UNDEFINED (the previous contents are cleared anyway).
fn to_attachment(
    image: vk::Image,
    aspect: vk::ImageAspectFlags,
    layout: vk::ImageLayout,
    access: vk::AccessFlags,
) -> vk::ImageMemoryBarrier<'static> {
    vk::ImageMemoryBarrier::default()
        .image(image)
        .old_layout(vk::ImageLayout::UNDEFINED)
        .new_layout(layout)
        .src_access_mask(vk::AccessFlags::empty())
        .dst_access_mask(access)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .subresource_range(
            vk::ImageSubresourceRange::default().aspect_mask(aspect).level_count(1).layer_count(1),
        )
}

/// The bench's device objects: the renderer and asset, a target, a command pool and buffer, a fence.
struct Gpu {
    renderer: Renderer,
    asset: GpuAsset,
    color: (vk::Image, vk::DeviceMemory, vk::ImageView),
    depth: (vk::Image, vk::DeviceMemory, vk::ImageView),
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    fence: vk::Fence,
    ctx: Rc<Context>,
}

/// Times of one frame.
struct Frame {
    render: Duration,
    end: Duration,
    submit: Duration,
    /// The whole frame: begin, transition, render, end, submit and the wait for the GPU.
    wall: Duration,
    report: FrameReport,
}

impl Gpu {
    fn new(ctx: &Rc<Context>, asset: &Asset<'_>) -> Self {
        let config = RendererConfig {
            color_format: COLOR_FORMAT,
            depth_format: DEPTH_FORMAT,
            // A small shadow map: the GPU's time per frame (not measured) is what makes the bench slow.
            shadow_map_size: 512,
            ..RendererConfig::default()
        };
        let mut renderer = Renderer::new(ctx, config).expect("renderer");
        let gpu_asset = renderer.upload(asset).expect("upload");
        let color =
            image(ctx, COLOR_FORMAT, vk::ImageUsageFlags::COLOR_ATTACHMENT, vk::ImageAspectFlags::COLOR);
        let depth = image(
            ctx,
            DEPTH_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT,
            vk::ImageAspectFlags::DEPTH,
        );
        let d = &ctx.device;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(ctx.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create infos on the context's live device; the buffer is of the new pool.
        let (pool, cb, fence) = unsafe {
            let pool = d.create_command_pool(&pool_info, None).expect("create command pool");
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            let cb = d.allocate_command_buffers(&info).expect("allocate command buffer")[0];
            let fence = d.create_fence(&vk::FenceCreateInfo::default(), None).expect("create fence");
            (pool, cb, fence)
        };
        Self { renderer, asset: gpu_asset, color, depth, pool, cb, fence, ctx: Rc::clone(ctx) }
    }

    /// Begins the command buffer and records the target's transition into its attachment layouts.
    fn begin(&self) {
        let (d, cb) = (&self.ctx.device, self.cb);
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let barriers = [
            to_attachment(
                self.color.0,
                vk::ImageAspectFlags::COLOR,
                vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
            ),
            to_attachment(
                self.depth.0,
                vk::ImageAspectFlags::DEPTH,
                vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                    | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
            ),
        ];
        // SAFETY: the command buffer is not pending (every submission is waited for); its pool allows
        // resetting single buffers, which `begin` does implicitly; both images are the bench's.
        unsafe {
            d.begin_command_buffer(cb, &begin).expect("begin command buffer");
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
                    | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
                    | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &barriers,
            );
        }
    }

    /// Ends the command buffer, submits it and waits: (end, submit) durations.
    fn end_submit_wait(&self) -> (Duration, Duration) {
        let (d, cb) = (&self.ctx.device, self.cb);
        let start = Instant::now();
        // SAFETY: recording, begun by `begin`; nothing left open.
        unsafe { d.end_command_buffer(cb) }.expect("end command buffer");
        let end = start.elapsed();
        let cbs = [cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        let start = Instant::now();
        // SAFETY: the command buffer is executable and every object it uses outlives the wait below;
        // the queue is used by this thread only; the fence is unsignalled (reset after each wait).
        unsafe { d.queue_submit(self.ctx.queue, &submit, self.fence) }.expect("queue submit");
        let submit = start.elapsed();
        // SAFETY: waits on and resets the fence the submission signals.
        unsafe {
            d.wait_for_fences(&[self.fence], true, u64::MAX).expect("the GPU finishes the frame");
            d.reset_fences(&[self.fence]).expect("reset fence");
        }
        (end, submit)
    }

    /// One frame: `render` (timed), then end (timed apart), submit (timed apart) and wait.
    fn frame(
        &mut self,
        gpu_crowd: &mut GpuCrowd,
        crowd: &mut Crowd,
        camera: &Camera,
        options: &RenderOptions,
    ) -> Frame {
        let begin = Instant::now();
        self.begin();
        let target = RenderTarget { color: self.color.2, depth: self.depth.2, motion: None, size: SIZE };
        let start = Instant::now();
        let report = self
            .renderer
            .render(
                self.cb,
                &mut [CrowdDraw { asset: &self.asset, gpu: gpu_crowd, crowd }],
                camera,
                target,
                options,
            )
            .expect("render");
        let render = start.elapsed();
        let (end, submit) = self.end_submit_wait();
        Frame { render, end, submit, wall: begin.elapsed(), report }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: the device is idle before the bench's objects are destroyed, each once; the
        // renderer and asset (fields) are dropped after this and destroy their own.
        unsafe {
            let _ = d.device_wait_idle();
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
            for (image, memory, view) in [self.color, self.depth] {
                d.destroy_image_view(view, None);
                d.destroy_image(image, None);
                d.free_memory(memory, None);
            }
        }
    }
}

fn render(c: &mut Criterion) {
    let bytes = humanoid();
    let asset = Asset::parse(&bytes).expect("the bake parses");
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest()).expect("crowd asset");
    let ctx = Rc::new(
        Context::headless_with_validation(false).expect("a headless Vulkan device (cargo xtask deps)"),
    );
    assert!(!ctx.validation_enabled(), "the bench measures CPU cost without the validation layer");
    eprintln!("device: {} (validation layer off)", ctx.device_name());
    let mut gpu = Gpu::new(&ctx, &asset);

    clear_only_reference(&gpu);

    let mut group = c.benchmark_group("vulkan_render");
    group.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES).warm_up_time(Duration::from_millis(1));
    for n in COUNTS {
        let (mut crowd, side) = crowd(&crowd_asset, n);
        let mut gpu_crowd = gpu.renderer.create_crowd(&crowd).expect("crowd GPU state");
        let camera = camera(side);
        let mut rng = Rng(11);
        for (culling, moving) in [(Culling::Cpu, false), (Culling::Gpu, false), (Culling::Gpu, true)] {
            let options = RenderOptions { culling, ..Default::default() };
            // The first frame uploads everything: not what is measured.
            gpu_crowd.mark_unsynced();
            let first = gpu.frame(&mut gpu_crowd, &mut crowd, &camera, &options);
            let second = gpu.frame(&mut gpu_crowd, &mut crowd, &camera, &options);
            // Criterion plans iterations from the wall time of the routine (GPU wait included): 2
            // frames per sample.
            group.measurement_time(second.wall * 2 * SAMPLES as u32);
            // Per measured frame: end, submit, whole frame.
            let mut untimed: Vec<[Duration; 3]> = Vec::new();
            let name = match (culling, moving) {
                (Culling::Cpu, _) => "cpu",
                (_, false) => "gpu",
                (_, true) => "gpu_move1pct",
            };
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        if moving {
                            move_one_percent(&mut crowd, &mut rng, side);
                        }
                        let frame = gpu.frame(&mut gpu_crowd, &mut crowd, &camera, &options);
                        total += frame.render;
                        untimed.push([frame.end, frame.submit, frame.wall]);
                        black_box(frame.report);
                    }
                    total
                })
            });
            if untimed.is_empty() {
                // Filtered out on the command line.
                continue;
            }
            let median = |k: usize| {
                let mut v: Vec<Duration> = untimed.iter().map(|t| t[k]).collect();
                v.sort_unstable();
                v.get(v.len() / 2).copied().unwrap_or_default().as_secs_f64()
            };
            let r = second.report;
            eprintln!(
                "vulkan_render/{name}/{n}: {} frames; untimed medians: vkEndCommandBuffer {:.1} us, vkQueueSubmit \
                 {:.1} us, whole frame with the GPU wait {:.1} ms; first frame uploaded {} B, a frame {} \
                 B; draws main {} shadow {} attachments {}, dispatches {}; stats: drawn {} submitted {} \
                 of {}",
                untimed.len(),
                median(0) * 1e6,
                median(1) * 1e6,
                median(2) * 1e3,
                first.report.uploaded_bytes,
                r.uploaded_bytes,
                r.draws_main,
                r.draws_shadow,
                r.draws_attachments,
                r.dispatches,
                r.stats.drawn,
                r.stats.submitted,
                r.stats.simulated,
            );
        }
    }
    group.finish();
}

/// What any frame costs in the driver whatever it draws: `vkEndCommandBuffer` + `vkQueueSubmit` of a
/// command buffer holding the target's transition and one dynamic rendering that only clears the
/// colour target (medians of 50 frames, printed).
fn clear_only_reference(gpu: &Gpu) {
    let mut times = Vec::new();
    for _ in 0..50 {
        gpu.begin();
        let attachments = [vk::RenderingAttachmentInfo::default()
            .image_view(gpu.color.2)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [0.0; 4] } })];
        let info = vk::RenderingInfo::default()
            .render_area(vk::Rect2D {
                offset: vk::Offset2D::default(),
                extent: vk::Extent2D { width: SIZE[0], height: SIZE[1] },
            })
            .layer_count(1)
            .color_attachments(&attachments);
        // SAFETY: recording (begun above), outside any rendering; the view is the bench's colour
        // target, in COLOR_ATTACHMENT_OPTIMAL after the recorded transition.
        unsafe {
            gpu.ctx.device.cmd_begin_rendering(gpu.cb, &info);
            gpu.ctx.device.cmd_end_rendering(gpu.cb);
        }
        times.push(gpu.end_submit_wait());
    }
    let median = |mut v: Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    eprintln!(
        "reference: a clear-only frame: vkEndCommandBuffer {:.1} us, vkQueueSubmit {:.1} us (medians of 50)",
        median(times.iter().map(|t| t.0).collect()),
        median(times.iter().map(|t| t.1).collect())
    );
}

/// Moves a random 1 % of the crowd by 2 cm along x (wrapping in the square of side `side`).
fn move_one_percent(crowd: &mut Crowd, rng: &mut Rng, side: f32) {
    let n = crowd.count();
    for _ in 0..(n / 100).max(1) {
        let i = (rng.next() * n as f32) as u32 % n;
        let r = crowd.records()[i as usize];
        let x = (r.position[0] + 0.02).rem_euclid(side);
        crowd.set_transform(i, [x, 0.0, r.position[2]], r.yaw);
    }
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::render);
}
criterion_main!(harness::benches);
