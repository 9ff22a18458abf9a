//! CPU cost of one frame of `Renderer::render`, CPU and GPU culling, on the headless device (the
//! software Vulkan driver, lavapipe, where there is one): `cargo bench -p vat-wgpu --bench render`.
//!
//! The target for the GPU-driven path: <= 0.05 ms of CPU per frame at any instance count.
//!
//! Scene: the baked procedural humanoid (default bake options: Packed64, 5 LODs, the cap attachment);
//! N instances spread uniformly over a square of side `sqrt(N) * 2` m (4 m² each), static (nothing
//! moves, the clock does not advance: a re-base of the epoch, every 64 s of shader time, would upload
//! every record once); the camera at the square's west edge, 10 m up, looking across it (90 degrees,
//! far plane at 80 m: it sees part of the crowd), default crowd config and render options (shadows
//! on), a 64x64 target, a 512² shadow map (the GPU's work is not measured; a small map keeps the
//! run short).
//!
//! - `render/{cpu,gpu}/N`: timed: the `render` call alone (CPU culling: `Crowd::prepare_frame`, the
//!   queued uploads and the recording of the passes; GPU culling: `Crowd::take_record_uploads`, the
//!   queued uploads and the recording, culling pass included; the first command also pays wgpu's
//!   opening of the encoder's command buffer). Untimed, per frame: creating the encoder, `finish`,
//!   `submit` and waiting for the GPU (so no frame overlaps the next). The median times of `finish`
//!   (where wgpu encodes the recorded passes for the driver), `submit` and their sum with `render`
//!   (the CPU cost of the whole frame) are printed, with the frame's upload and draw figures.
//! - `render/gpu_move1pct/N`: as `render/gpu/N`, with a random 1 % of the instances moved before
//!   each frame (untimed): the cost of uploading changed records on the GPU-driven path.
//! - printed first: `finish` + `submit` of a frame that only clears the target, for reference (what
//!   wgpu and the driver cost per submitted frame whatever it holds).
//! - printed once, after the 1k GPU-driven frames: wgpu's floor for a frame of the same shape as
//!   vat's GPU-driven frame (two buffer copies, a compute pass with one dispatch, a depth-only pass
//!   and a colour pass with as many draws, indirect where vat's are) but trivial shaders, one small
//!   storage buffer for the dispatch and no bind group for the draws: recording, `finish` and
//!   `submit`. No renderer built on wgpu can spend less CPU on that frame than this on this
//!   machine, whatever it draws.
//! - `take_record_uploads/{static,move1pct}/N`: the GPU path's crowd work alone; `move1pct` moves a
//!   different random 1 % of the instances before each call (untimed).
//!
//! Sampling is flat and short (the GPU frame behind every timed `render`, unmeasured, is what takes
//! the time on a software driver).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_main};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_wgpu::{CrowdDraw, GpuCrowd};
use vat_wgpu::{
    Culling, FrameReport, GpuAsset, HeadlessTarget, RenderOptions, Renderer, RendererConfig, headless_device,
};

const SIZE: [u32; 2] = [64, 64];
const COUNTS: [u32; 4] = [1_000, 10_000, 100_000, 1_000_000];
const SAMPLES: usize = 20;

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

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    renderer: Renderer,
    asset: GpuAsset,
    target: HeadlessTarget,
}

/// Times of one frame.
struct Frame {
    render: Duration,
    finish: Duration,
    submit: Duration,
    /// The whole frame: encoder, render, finish, submit and the wait for the GPU.
    wall: Duration,
    report: FrameReport,
}

impl Gpu {
    /// One frame: `render` (timed), then `finish` (timed apart), submit and wait.
    fn frame(
        &mut self,
        gpu_crowd: &mut GpuCrowd,
        crowd: &mut Crowd,
        camera: &Camera,
        options: &RenderOptions,
    ) -> Frame {
        let begin = Instant::now();
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let start = Instant::now();
        let report = self
            .renderer
            .render(
                &mut encoder,
                &mut [CrowdDraw { asset: &self.asset, gpu: gpu_crowd, crowd }],
                camera,
                self.target.target(),
                options,
            )
            .expect("render");
        let render = start.elapsed();
        let (finish, submit) = finish_and_submit(self, encoder);
        Frame { render, finish, submit, wall: begin.elapsed(), report }
    }
}

fn render(c: &mut Criterion) {
    let bytes = humanoid();
    let asset = Asset::parse(&bytes).expect("the bake parses");
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest()).expect("crowd asset");
    let (device, queue, info) = headless_device().expect("a headless device (cargo xtask deps)");
    eprintln!("adapter: {} ({:?})", info.name, info.device_type);
    // A small shadow map: the GPU's time per frame (not measured) is what makes the bench slow.
    let config = RendererConfig { shadow_map_size: 512, ..RendererConfig::default() };
    let mut renderer = Renderer::new(&device, &queue, config).expect("renderer");
    let gpu_asset = renderer.upload(&asset).expect("upload");
    let target = HeadlessTarget::new(&device, SIZE, config).expect("target");
    let mut gpu = Gpu { device, queue, renderer, asset: gpu_asset, target };

    clear_only_reference(&gpu);

    let mut group = c.benchmark_group("render");
    group.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES).warm_up_time(Duration::from_millis(1));
    for n in COUNTS {
        let (mut crowd, side) = crowd(&crowd_asset, n);
        let mut gpu_crowd = gpu.renderer.create_crowd(&crowd).expect("crowd GPU state");
        let camera = camera(side);
        let mut rng = Rng(11);
        for (culling, moving) in [(Culling::Cpu, false), (Culling::Gpu, false), (Culling::Gpu, true)] {
            let options = RenderOptions { culling, ..Default::default() };
            // The first frame uploads everything and creates the pipelines: not what is measured.
            gpu_crowd.mark_unsynced();
            let first = gpu.frame(&mut gpu_crowd, &mut crowd, &camera, &options);
            let second = gpu.frame(&mut gpu_crowd, &mut crowd, &camera, &options);
            // Criterion plans iterations from the wall time of the routine (GPU wait included): 2
            // frames per sample.
            group.measurement_time(second.wall * 2 * SAMPLES as u32);
            // Per measured frame: finish, submit, whole frame with the wait, CPU of the frame.
            let mut untimed: Vec<[Duration; 4]> = Vec::new();
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
                        untimed.push([
                            frame.finish,
                            frame.submit,
                            frame.wall,
                            frame.render + frame.finish + frame.submit,
                        ]);
                        black_box(frame.report);
                    }
                    total
                })
            });
            if untimed.is_empty() {
                continue; // filtered out on the command line
            }
            let median = |k: usize| median_us(untimed.iter().map(|t| t[k]));
            let r = second.report;
            if culling == Culling::Gpu && !moving && n == COUNTS[0] {
                wgpu_floor_reference(&gpu, r.draws_shadow, r.draws_main + r.draws_attachments);
            }
            eprintln!(
                "render/{name}/{n}: {} frames; medians: finish() {:.1} us, submit() {:.1} us, CPU of the \
                 frame (render + finish + submit) {:.1} us, whole frame with the GPU wait {:.1} ms; first \
                 frame uploaded {} B, a frame {} B; draws main {} shadow {} attachments {}, dispatches {}; \
                 stats: drawn {} submitted {} of {}",
                untimed.len(),
                median(0),
                median(1),
                median(3),
                median(2) / 1e3,
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

/// The median of `times` in microseconds (0 for none).
fn median_us(times: impl Iterator<Item = Duration>) -> f64 {
    let mut v: Vec<Duration> = times.collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default().as_secs_f64() * 1e6
}

/// A colour attachment cleared to black and stored.
fn cleared(view: &wgpu::TextureView) -> Option<wgpu::RenderPassColorAttachment<'_>> {
    Some(wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations { load: wgpu::LoadOp::Clear(wgpu::Color::BLACK), store: wgpu::StoreOp::Store },
    })
}

/// Times `finish` and `submit` of `encoder`, then waits for the GPU (so no frame overlaps the next).
fn finish_and_submit(gpu: &Gpu, encoder: wgpu::CommandEncoder) -> (Duration, Duration) {
    let start = Instant::now();
    let commands = encoder.finish();
    let finish = start.elapsed();
    let start = Instant::now();
    gpu.queue.submit([commands]);
    let submit = start.elapsed();
    gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("the GPU finishes the frame");
    (finish, submit)
}

/// What any frame costs in wgpu and the driver whatever it draws: `finish` + `submit` of an encoder
/// holding one render pass that only clears the target (medians of 50 frames, printed).
fn clear_only_reference(gpu: &Gpu) {
    let mut times = Vec::new();
    for _ in 0..50 {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        let target = gpu.target.target();
        drop(encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("clear only"),
            color_attachments: &[cleared(target.color)],
            ..Default::default()
        }));
        times.push(finish_and_submit(gpu, encoder));
    }
    eprintln!(
        "reference: a clear-only frame: finish() {:.1} us, submit() {:.1} us (medians of 50)",
        median_us(times.iter().map(|t| t.0)),
        median_us(times.iter().map(|t| t.1))
    );
}

/// Moves a random 1 % of the crowd by 2 cm along x (wrapping in the square of side `side`).
/// The floor described in the header: `shadow_draws` and `main_draws` indexed indirect draws (plus
/// one direct draw in the colour pass, vat's ground), medians of 200 frames, printed.
fn wgpu_floor_reference(gpu: &Gpu, shadow_draws: u32, main_draws: u32) {
    let device = &gpu.device;
    let config = RendererConfig::default();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("floor"),
        source: wgpu::ShaderSource::Wgsl(
            "@group(0) @binding(0) var<storage, read_write> data: array<u32>;
             @compute @workgroup_size(64) fn cs(@builtin(global_invocation_id) id: vec3<u32>) {
                 if id.x < arrayLength(&data) { data[id.x] = id.x; }
             }
             @vertex fn vs(@builtin(vertex_index) v: u32) -> @builtin(position) vec4<f32> {
                 return vec4<f32>(f32(v & 1u), f32(v >> 1u), 0.5, 1.0);
             }
             @fragment fn fs() -> @location(0) vec4<f32> { return vec4<f32>(1.0); }"
                .into(),
        ),
    });
    let depth_state = |format| {
        Some(wgpu::DepthStencilState {
            format,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState::default(),
        })
    };
    let render_pipeline = |depth_format, colour: Option<wgpu::TextureFormat>| {
        let targets = [colour.map(|format| wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("floor"),
            layout: None,
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: depth_state(depth_format),
            multisample: wgpu::MultisampleState::default(),
            fragment: colour.map(|_| wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs"),
                compilation_options: Default::default(),
                targets: &targets,
            }),
            multiview_mask: None,
            cache: None,
        })
    };
    let depth_pipeline = render_pipeline(wgpu::TextureFormat::Depth32Float, None);
    let colour_pipeline = render_pipeline(config.depth_format, Some(config.color_format));
    let compute_pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("floor"),
        layout: None,
        module: &module,
        entry_point: Some("cs"),
        compilation_options: Default::default(),
        cache: None,
    });
    let buffer = |size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("floor"),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    use wgpu::BufferUsages as U;
    let data = buffer(256, U::STORAGE | U::COPY_DST);
    let staging = buffer(256, U::COPY_SRC);
    let template = buffer(20 * 64, U::COPY_SRC);
    let args = buffer(20 * 64, U::INDIRECT | U::COPY_DST);
    let index = buffer(16, U::INDEX);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("floor"),
        layout: &compute_pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry { binding: 0, resource: data.as_entire_binding() }],
    });
    let shadow = device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("floor shadow"),
            size: wgpu::Extent3d { width: 512, height: 512, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Depth32Float,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        })
        .create_view(&Default::default());
    let depth_attachment = |view| {
        Some(wgpu::RenderPassDepthStencilAttachment {
            view,
            depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Store }),
            stencil_ops: None,
        })
    };
    let mut times = Vec::new();
    for _ in 0..200 {
        let target = gpu.target.target();
        let start = Instant::now();
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&staging, 0, &data, 0, 256);
        encoder.copy_buffer_to_buffer(&template, 0, &args, 0, 20 * 64);
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&compute_pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("floor shadow"),
                depth_stencil_attachment: depth_attachment(&shadow),
                ..Default::default()
            });
            pass.set_pipeline(&depth_pipeline);
            pass.set_index_buffer(index.slice(..), wgpu::IndexFormat::Uint32);
            for k in 0..u64::from(shadow_draws) {
                pass.draw_indexed_indirect(&args, k * 20);
            }
        }
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("floor colour"),
                color_attachments: &[cleared(target.color)],
                depth_stencil_attachment: depth_attachment(target.depth),
                ..Default::default()
            });
            pass.set_pipeline(&colour_pipeline);
            pass.set_index_buffer(index.slice(..), wgpu::IndexFormat::Uint32);
            pass.draw(0..3, 0..1);
            for k in 0..u64::from(main_draws) {
                pass.draw_indexed_indirect(&args, k * 20);
            }
        }
        let record = start.elapsed();
        let (finish, submit) = finish_and_submit(gpu, encoder);
        times.push([record, finish, submit, record + finish + submit]);
    }
    let median = |k: usize| median_us(times.iter().map(|t| t[k]));
    eprintln!(
        "reference: wgpu's floor for a frame shaped like vat's GPU-driven frame ({shadow_draws} + \
         {main_draws} indirect draws, trivial shaders): record {:.1} us, finish() {:.1} us, submit() \
         {:.1} us, whole {:.1} us (medians of 200)",
        median(0),
        median(1),
        median(2),
        median(3)
    );
}

fn move_one_percent(crowd: &mut Crowd, rng: &mut Rng, side: f32) {
    let n = crowd.count();
    for _ in 0..(n / 100).max(1) {
        let i = (rng.next() * n as f32) as u32 % n;
        let r = crowd.records()[i as usize];
        let x = (r.position[0] + 0.02).rem_euclid(side);
        crowd.set_transform(i, [x, 0.0, r.position[2]], r.yaw);
    }
}

fn take_record_uploads(c: &mut Criterion) {
    let bytes = humanoid();
    let asset = Asset::parse(&bytes).expect("the bake parses");
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest()).expect("crowd asset");
    let mut group = c.benchmark_group("take_record_uploads");
    group.sample_size(SAMPLES).warm_up_time(Duration::from_millis(200));
    group.measurement_time(Duration::from_millis(500));
    for n in COUNTS {
        let (mut crowd, side) = crowd(&crowd_asset, n);
        // The spawns' full range: not what is measured.
        black_box(crowd.take_record_uploads().len());
        group.bench_function(BenchmarkId::new("static", n), |b| {
            b.iter(|| black_box(crowd.take_record_uploads().len()))
        });
        let mut rng = Rng(7);
        group.bench_function(BenchmarkId::new("move1pct", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    move_one_percent(&mut crowd, &mut rng, side);
                    let start = Instant::now();
                    black_box(crowd.take_record_uploads().len());
                    total += start.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::render, super::take_record_uploads);
}
criterion_main!(harness::benches);
