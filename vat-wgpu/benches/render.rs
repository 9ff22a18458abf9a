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
//!   queued uploads and the recording, culling pass included). Untimed, per frame: creating the
//!   encoder, `finish`, `submit` and waiting for the GPU (so no frame overlaps the next). The median
//!   times of `finish` (where wgpu encodes the recorded passes for the driver) and `submit` are
//!   printed for the record, with the frame's upload and draw figures.
//! - `render/gpu_move1pct/N`: as `render/gpu/N`, with a random 1 % of the instances moved before
//!   each frame (untimed): the cost of uploading changed records on the GPU-driven path.
//! - printed first: `finish` + `submit` of a frame that only clears the target, for reference (what
//!   wgpu and the driver cost per submitted frame whatever it holds).
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
    let rig = vat_bake::procgen::humanoid();
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
    fn frame(&mut self, crowd: &mut Crowd, camera: &Camera, options: &RenderOptions) -> Frame {
        let begin = Instant::now();
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let start = Instant::now();
        let report = self
            .renderer
            .render(&mut encoder, &self.asset, crowd, camera, self.target.target(), options)
            .expect("render");
        let render = start.elapsed();
        let start = Instant::now();
        let commands = encoder.finish();
        let finish = start.elapsed();
        let start = Instant::now();
        self.queue.submit([commands]);
        let submit = start.elapsed();
        self.device.poll(wgpu::PollType::wait_indefinitely()).expect("the GPU finishes the frame");
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
    let target = HeadlessTarget::new(&device, SIZE, config);
    let mut gpu = Gpu { device, queue, renderer, asset: gpu_asset, target };

    clear_only_reference(&gpu);

    let mut group = c.benchmark_group("render");
    group.sampling_mode(SamplingMode::Flat).sample_size(SAMPLES).warm_up_time(Duration::from_millis(1));
    for n in COUNTS {
        let (mut crowd, side) = crowd(&crowd_asset, n);
        let camera = camera(side);
        let mut rng = Rng(11);
        for (culling, moving) in [(Culling::Cpu, false), (Culling::Gpu, false), (Culling::Gpu, true)] {
            let options = RenderOptions { culling, ..Default::default() };
            // The first frame uploads everything and creates the pipelines: not what is measured.
            gpu.renderer.forget_crowd();
            let first = gpu.frame(&mut crowd, &camera, &options);
            let second = gpu.frame(&mut crowd, &camera, &options);
            // Criterion plans iterations from the wall time of the routine (GPU wait included): 2
            // frames per sample.
            group.measurement_time(second.wall * 2 * SAMPLES as u32);
            // Per measured frame: finish, submit, whole frame.
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
                        let frame = gpu.frame(&mut crowd, &camera, &options);
                        total += frame.render;
                        untimed.push([frame.finish, frame.submit, frame.wall]);
                        black_box(frame.report);
                    }
                    total
                })
            });
            let median = |k: usize| {
                let mut v: Vec<Duration> = untimed.iter().map(|t| t[k]).collect();
                v.sort_unstable();
                v.get(v.len() / 2).copied().unwrap_or_default().as_secs_f64()
            };
            let r = second.report;
            eprintln!(
                "render/{name}/{n}: {} frames; untimed medians: finish() {:.1} us, submit() {:.1} us, whole \
                 frame with the GPU wait {:.1} ms; first frame uploaded {} B, a frame {} B; draws main {} \
                 shadow {} attachments {}, dispatches {}; stats: drawn {} submitted {} of {}",
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

/// What any frame costs in wgpu and the driver whatever it draws: `finish` + `submit` of an encoder
/// holding one render pass that only clears the target (medians of 50 frames, printed).
fn clear_only_reference(gpu: &Gpu) {
    let mut times = Vec::new();
    for _ in 0..50 {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        let target = gpu.target.target();
        drop(encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("clear only"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        }));
        let start = Instant::now();
        let commands = encoder.finish();
        let finish = start.elapsed();
        let start = Instant::now();
        gpu.queue.submit([commands]);
        let submit = start.elapsed();
        gpu.device.poll(wgpu::PollType::wait_indefinitely()).expect("the GPU finishes the frame");
        times.push((finish, submit));
    }
    let median = |mut v: Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    eprintln!(
        "reference: a clear-only frame: finish() {:.1} us, submit() {:.1} us (medians of 50)",
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
