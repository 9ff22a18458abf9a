//! CPU cost of one frame of the crowd's CPU culling path (`Crowd::prepare_frame`: membership, dirty
//! ranges, cell culling, LOD, batches, far pool), one core.
//!
//! Scene: N instances spread uniformly over a square of side `sqrt(N) * 2` m (4 m² each), the camera
//! at the square's west edge, 10 m up, looking across it (90 degrees vertical, 16:9, far plane at
//! 1.5 sides), sliding along the edge and panning a little every frame; 5 LODs starting at 10, 25,
//! 50 and 100 m; default config (16 m cells, far pool, shadows up to LOD 1).
//!
//! - `static/N`: the crowd does not move; timed: `advance(1/60 s)` + `prepare_frame`.
//! - `move1pct/N`: each frame 1 % of the instances (a different random 1 % each frame) walk 2.3 cm
//!   (1.4 m/s for 1/60 s) through `set_transform` (untimed: that is the game's update), then
//!   `advance` + `prepare_frame` are timed (re-listing the movers, their dirty ranges, culling).
//! - `move1pct_frame/N`: the same, with the 1 % `set_transform` calls (and the game's own reads of
//!   the records they move) inside the timed frame.
//!
//! The GPU-driven culling path (`crowd_gpu_culling`): the CPU keeps only the records current; a
//! compute pass culls. Timed per frame: `advance(1/60 s)` + `Crowd::take_record_uploads` + the copy
//! of the dirty ranges into a staging vector (what a renderer writes to mapped memory).
//!
//! - `static/N`: nothing moves (no record changes).
//! - `move1pct/N`: 1 % moved per frame (untimed `set_transform`, as above).
//!
//! Animation events (`crowd_events`): timed per frame, `advance(1/60 s)` + `drain_events` of a crowd
//! of N looping instances, as they are (`loops/N`: nothing can raise an event), with 1 % of them
//! playing a one-shot clip once and queuing the loop back behind it, replayed when it ends
//! (`once1pct/N`; the replays, the game's work, are inside the timed frame), and with a marked frame on the walk every instance plays (`marked/N`: every
//! instance checked every frame).
//!
//! Run: `cargo bench -p vat-core --bench crowd` (`-- crowd_gpu_culling` for the GPU-driven path only).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_main};
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::PositionBounds;
use vat_core::format::lod::LodThresholds;

fn asset() -> CrowdAsset {
    let mut m = ClipRowMap::new();
    let clips = [("idle", 2.0, 0.0), ("walk", 1.0, 1.48), ("run", 0.7, 3.3)];
    for (name, duration, stride) in clips {
        if m.push(name, duration, 30.0, ClipMode::Looping, stride).is_err() {
            panic!("bad clip {name}");
        }
    }
    let Ok(lod_distances) = LodThresholds::new(&[10.0, 25.0, 50.0, 100.0]) else { panic!("thresholds") };
    CrowdAsset {
        clips: m.clips().to_vec(),
        bounds: PositionBounds { min: [-0.8, 0.0, -0.7], extent: [1.65, 2.19, 1.35] },
        lod_triangles: vec![4592, 1750, 484, 140, 44],
        lod_distances,
        attachment_triangles: 96,
        root_motion: Vec::new(),
        impostor_switch: None,
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

struct Scene {
    crowd: Crowd,
    side: f32,
    frame: u64,
    rng: Rng,
}

impl Scene {
    fn new(n: u32) -> Self {
        let side = (n as f32).sqrt() * 2.0;
        let mut rng = Rng(n as u64);
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        for i in 0..n {
            let p = [rng.next() * side, 0.0, rng.next() * side];
            let id = crowd.spawn_at_phase(p, rng.next() * std::f32::consts::TAU, i % 3, rng.next());
            crowd.set_speed(id, 1.4);
        }
        let mut scene = Self { crowd, side, frame: 0, rng };
        // The first frame builds the grid and uploads everything: not what is measured.
        let camera = scene.camera();
        black_box(scene.crowd.prepare_frame(&camera).stats);
        scene
    }

    fn camera(&self) -> Camera {
        let s = self.side;
        let k = self.frame as f32;
        let eye = [-5.0, 10.0, s * (0.5 + 0.1 * (k * 0.01).sin())];
        let target = [s * 0.5, 0.0, s * (0.5 + 0.2 * (k * 0.013).sin())];
        Camera::look_at(eye, target, std::f32::consts::FRAC_PI_2, 16.0 / 9.0, 0.5, 1.5 * s + 100.0)
    }

    /// Moves 1 % of the crowd.
    fn walk(&mut self) {
        let n = self.crowd.count();
        for _ in 0..(n / 100).max(1) {
            let i = (self.rng.next() * n as f32) as u32 % n;
            let r = self.crowd.records()[i as usize];
            let step = 1.4 / 60.0;
            let (s, c) = r.yaw.sin_cos();
            let wrap = |v: f32| v.rem_euclid(self.side);
            let p = [wrap(r.position[0] + s * step), 0.0, wrap(r.position[2] + c * step)];
            self.crowd.set_transform(i, p, r.yaw);
        }
    }

    /// One frame of the GPU-driven path: clock, dirty record ranges, their bytes gathered.
    fn gpu_frame(&mut self, staging: &mut Vec<u8>) -> u64 {
        self.frame += 1;
        self.crowd.advance(1.0 / 60.0);
        staging.clear();
        for (_, r) in self.crowd.take_record_uploads() {
            staging.extend_from_slice(bytemuck::cast_slice(r));
        }
        staging.len() as u64
    }

    /// One frame: clock, culling, batches.
    fn frame(&mut self) -> u64 {
        self.frame += 1;
        self.crowd.advance(1.0 / 60.0);
        let camera = self.camera();
        let draws = self.crowd.prepare_frame(&camera);
        draws.stats.triangles + u64::from(draws.stats.draws_main) + draws.record_uploads.len() as u64
    }
}

fn crowd_prepare_frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("crowd_prepare_frame");
    for &n in &[1_000u32, 10_000, 100_000, 1_000_000] {
        if n >= 1_000_000 {
            group.sample_size(20);
        } else {
            group.sample_size(50);
        }
        for name in ["static", "move1pct", "move1pct_frame"] {
            let mut scene = Scene::new(n);
            group.bench_function(BenchmarkId::new(name, n), |b| match name {
                "static" => b.iter(|| black_box(scene.frame())),
                "move1pct" => b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        scene.walk();
                        let start = Instant::now();
                        black_box(scene.frame());
                        total += start.elapsed();
                    }
                    total
                }),
                _ => b.iter(|| {
                    scene.walk();
                    black_box(scene.frame())
                }),
            });
            // One frame's stats, for the record.
            let camera = scene.camera();
            let s = scene.crowd.prepare_frame(&camera).stats;
            eprintln!(
                "{name}/{n}: submitted {} of {}, visible cells {}, far pool {}, draws main {} shadow {}, \
                 triangles {}",
                s.submitted,
                s.simulated,
                s.visible_cells,
                s.far_pool_instances,
                s.draws_main,
                s.draws_shadow,
                s.triangles
            );
        }
    }
    group.finish();
}

fn crowd_gpu_culling(c: &mut Criterion) {
    let mut group = c.benchmark_group("crowd_gpu_culling");
    group.sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for &n in &[1_000u32, 10_000, 100_000, 1_000_000] {
        for name in ["static", "move1pct"] {
            let mut scene = Scene::new(n);
            let mut staging = Vec::new();
            group.bench_function(BenchmarkId::new(name, n), |b| match name {
                "static" => b.iter(|| black_box(scene.gpu_frame(&mut staging))),
                _ => b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        scene.walk();
                        let start = Instant::now();
                        black_box(scene.gpu_frame(&mut staging));
                        total += start.elapsed();
                    }
                    total
                }),
            });
        }
    }
    group.finish();
}

fn crowd_events(c: &mut Criterion) {
    use vat_core::instance::PlayMode;
    let mut group = c.benchmark_group("crowd_events");
    group.sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for &n in &[10_000u32, 100_000, 1_000_000] {
        for name in ["loops", "once1pct", "marked"] {
            let mut scene = Scene::new(n);
            let crowd = &mut scene.crowd;
            crowd.config_mut().record_events = true;
            match name {
                // The run clip (2) played once every 100th instance, then back to the walk.
                "once1pct" => {
                    for i in (0..n).step_by(100) {
                        crowd.play_as(i, 2, 0.0, PlayMode::Once);
                        crowd.play_after(i, 1, 0.2, PlayMode::AsBaked);
                    }
                }
                "marked" => {
                    for i in 0..n {
                        crowd.play(i, 1, 0.0);
                    }
                    crowd.mark_frame(1, 12);
                }
                _ => {}
            }
            let mut events = 0usize;
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    let crowd = &mut scene.crowd;
                    crowd.advance(1.0 / 60.0);
                    let drained = crowd.drain_events().count();
                    if name == "once1pct" && drained > 0 {
                        // Keep 1 % playing once: replay those that just went back to the loop.
                        for i in (0..n).step_by(100) {
                            if crowd.play_mode(i) == PlayMode::AsBaked {
                                crowd.play_as(i, 2, 0.0, PlayMode::Once);
                                crowd.play_after(i, 1, 0.2, PlayMode::AsBaked);
                            }
                        }
                    }
                    events += drained;
                    black_box(drained)
                })
            });
            black_box(events);
        }
    }
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(
        benches,
        super::crowd_prepare_frame,
        super::crowd_gpu_culling,
        super::crowd_events
    );
}
criterion_main!(harness::benches);
