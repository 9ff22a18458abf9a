//! `vat bench`: what a frame of a crowd costs.
//!
//! - **CPU section** (no renderer): per instance count, scenario and culling mode, the CPU work of
//!   one frame, timed per frame and reported as medians: the simulation step, CPU culling + LOD +
//!   batch building (`Crowd::prepare_frame`, which also collects the dirty record ranges), and the
//!   gather of the bytes a renderer would upload (dirty records and the changed part of the instance
//!   list copied into one staging buffer; on the GPU-driven path `Crowd::take_record_uploads` and
//!   the copy of its ranges). With the LOD split of the last CPU-culled frame.
//! - **Conventional baseline, CPU side** (the thing VAT replaces): every character skinned on the
//!   CPU each frame (vat-bake's linear blend skinning, full mesh, clip A of its record at the
//!   frame's time), moved to world space, and the skinned vertices gathered for upload.
//! - **GPU section** (when an adapter exists): offscreen frames through the [`CrowdRenderer`] seam in
//!   VAT and bone mode, and the conventional baseline drawn by a small comparator pipeline
//!   ([`baseline`]): wall time per frame (submit to finished), the CPU time of the render call, and
//!   GPU time from timestamp queries where the adapter has them.
//! - **Impostor section** (`--impostors`, run alone): far crowds drawn as impostor cards against
//!   the same crowds at the last mesh LOD ([`impostor`]).
//!
//! [`CrowdRenderer`]: vat_core::render::CrowdRenderer

mod baseline;
mod gpu;
mod impostor;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use vat_bake::prepare::{BakeOptions, prepare};
use vat_bake::rig::Rig;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig, FrameDraws};
use vat_examples::scene::{self, DemoLayout};
use vat_examples::sim::Simulation;

use crate::render::CullingArg;

/// Seconds per simulated frame.
const DT: f32 = 1.0 / 60.0;

/// What moves in the crowd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Scenario {
    /// The demo crowd (`vat render`'s) animating in place: clips play on the GPU clock, no record
    /// changes after the first frame (a stadium, a square of idlers).
    Static,
    /// `vat_examples::sim`: every agent steers, walks and switches gaits each frame, so every record
    /// is rewritten every frame.
    Wander,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Static => "static",
            Scenario::Wander => "wander",
        }
    }
}

/// GPU backend of the GPU section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// vat-wgpu (Vulkan adapters; the CPU adapter, lavapipe, preferred when present).
    Wgpu,
    /// vat-vulkan (raw Vulkan via ash; the CPU-skinning baseline is a wgpu pipeline and is not run).
    Vulkan,
}

/// `vat bench` arguments.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// A .vat asset; without it the procedural humanoid is baked in memory (with bones). The
    /// conventional baseline needs the rig, so it runs only on the procedural humanoid.
    asset: Option<PathBuf>,
    /// Instance counts of the CPU section.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000,1000000")]
    instances: Vec<u32>,
    /// Memory budget in bytes (suffixes K, M, G: binary): a larger .vat file is refused before it is
    /// read, and each instance count may be at most this over 256 bytes.
    #[arg(long, value_parser = crate::bake::parse_bytes, default_value = "4G")]
    max_memory: u64,
    /// Measured frames per CPU configuration (the medians are over these).
    #[arg(long, default_value_t = 120)]
    frames: u32,
    /// Unmeasured frames before the measured ones (the first frame, a full upload, is always extra).
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Scenarios of the CPU section.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "static,wander")]
    scenario: Vec<Scenario>,
    /// Culling modes of the CPU and GPU sections.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "cpu,gpu")]
    culling: Vec<CullingArg>,
    /// Largest instance count the conventional CPU-skinning baseline runs at (CPU and GPU
    /// sections); larger counts are reported as not measured.
    #[arg(long, default_value_t = 100_000)]
    baseline_max: u32,
    /// Frames of the conventional baseline per count, at most (see --baseline-budget).
    #[arg(long, default_value_t = 10)]
    baseline_frames: u32,
    /// Seconds the baseline may spend per count: fewer frames (at least 3, or 1 when one frame
    /// exceeds the budget) are measured when its frames are slower; the frame count is reported.
    #[arg(long, default_value_t = 6.0)]
    baseline_budget: f64,
    /// Skip the GPU section.
    #[arg(long)]
    no_gpu: bool,
    /// Run only the impostor section: each --gpu-instances count of far characters drawn as the
    /// asset's impostor cards against the same at the last mesh LOD (an asset without a tier gets
    /// the default one, baked in memory first).
    #[arg(long)]
    impostors: bool,
    /// GPU backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Wgpu)]
    backend: BackendArg,
    /// Instance counts of the GPU section.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    gpu_instances: Vec<u32>,
    /// Measured frames per GPU configuration.
    #[arg(long, default_value_t = 10)]
    gpu_frames: u32,
    /// Offscreen target size of the GPU section, WIDTHxHEIGHT.
    #[arg(long, default_value = "960x540", value_parser = parse_size)]
    size: [u32; 2],
    /// Print JSON instead of tables (keys: cpu, baseline_cpu, gpu, ...).
    #[arg(long)]
    json: bool,
    /// Also write the JSON to this file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<[u32; 2], String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("bad width in {s:?}"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("bad height in {s:?}"))?;
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!("{s:?}: width and height must be 1..=16384"));
    }
    Ok([w, h])
}

/// The median of `v` (mean of the middle two for an even count); 0 for an empty slice.
pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 { s[m] } else { 0.5 * (s[m - 1] + s[m]) }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The benchmark camera for a crowd of half side `half`: a game camera 2 m outside the crowd's west
/// edge, 3 m up, looking across it towards its centre (60 degrees vertical, far plane beyond the far
/// corner), panning a little every frame.
pub(crate) fn bench_camera(half: f32, frame: u32, aspect: f32) -> Camera {
    let k = frame as f32;
    let eye = [-half - 2.0, 3.0, 0.1 * half * (k * 0.01).sin()];
    let target = [0.0, 0.0, 0.2 * half * (k * 0.013).sin()];
    Camera::look_at(eye, target, 60f32.to_radians(), aspect, 0.5, 2.5 * half + 100.0)
}

/// A crowd of `n` for `scenario`, its simulation (wander) and its half side in metres.
pub(crate) fn build_crowd(
    asset: &CrowdAsset,
    n: u32,
    scenario: Scenario,
) -> (Crowd, Option<Simulation>, f32) {
    let layout = DemoLayout::default();
    let half = scene::half_extent(n, &layout);
    let mut crowd = Crowd::new(asset.clone(), CrowdConfig::default());
    let sim = match scenario {
        Scenario::Static => {
            scene::populate(&mut crowd, n, &layout);
            None
        }
        Scenario::Wander => Some(Simulation::new(&mut crowd, n, half, layout.seed)),
    };
    (crowd, sim, half)
}

/// One simulation step: the agents (wander) and the crowd's clock.
pub(crate) fn step(crowd: &mut Crowd, sim: Option<&mut Simulation>) {
    match sim {
        Some(s) => s.step(crowd, DT),
        None => crowd.advance(f64::from(DT)),
    }
}

/// Instances and triangles per LOD of one CPU-culled frame's main pass (attachments excluded).
fn lod_split(draws: &FrameDraws<'_>, lod_triangles: &[u32]) -> Vec<Value> {
    let mut instances = vec![0u64; lod_triangles.len().max(1)];
    for b in draws.main_fade.iter().chain(&draws.main_plain) {
        let lod = (b.lod as usize).min(instances.len() - 1);
        instances[lod] += u64::from(b.instance_count);
    }
    instances
        .iter()
        .enumerate()
        .map(|(lod, &count)| {
            let tris = u64::from(lod_triangles.get(lod).copied().unwrap_or(0));
            json!({"lod": lod, "instances": count, "triangles": count * tris})
        })
        .collect()
}

/// Copies `ranges` (and the list part) into `staging`, as a renderer would into mapped memory.
fn gather<'a>(
    staging: &mut Vec<u8>,
    ranges: impl IntoIterator<Item = &'a [vat_core::instance::InstanceRecord]>,
    list: Option<&[u32]>,
) -> u64 {
    staging.clear();
    for r in ranges {
        staging.extend_from_slice(bytemuck::cast_slice(r));
    }
    if let Some(l) = list {
        staging.extend_from_slice(bytemuck::cast_slice(l));
    }
    black_box(staging.as_slice());
    staging.len() as u64
}

/// Measures one CPU configuration.
fn cpu_run(asset: &CrowdAsset, n: u32, scenario: Scenario, culling: CullingArg, args: &BenchArgs) -> Value {
    let (mut crowd, mut sim, half) = build_crowd(asset, n, scenario);
    let mut staging = Vec::new();
    let (mut sim_ms, mut cull_ms, mut gather_ms, mut total_ms, mut bytes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut split = Vec::new();
    let mut drawn = 0u32;
    let mut draws_main = 0u32;
    let frames = args.frames.max(1);
    for frame in 0..(1 + args.warmup + frames) {
        let camera = bench_camera(half, frame, 16.0 / 9.0);
        let t0 = Instant::now();
        step(&mut crowd, sim.as_mut());
        let t_sim = ms(t0);
        let (t_cull, t_gather, b) = match culling {
            CullingArg::Cpu => {
                let t1 = Instant::now();
                let draws = crowd.prepare_frame(&camera);
                let t_cull = ms(t1);
                let t2 = Instant::now();
                let b = gather(
                    &mut staging,
                    draws.record_uploads.iter().map(|(_, r)| *r),
                    draws.list_upload.map(|(_, l)| l),
                );
                let t_gather = ms(t2);
                if frame + 1 == 1 + args.warmup + frames {
                    split = lod_split(&draws, &asset.lod_triangles);
                    drawn = draws.stats.drawn;
                    draws_main = draws.stats.draws_main;
                }
                black_box(&draws.main_plain);
                (t_cull, t_gather, b)
            }
            CullingArg::Gpu => {
                let t1 = Instant::now();
                let ups = crowd.take_record_uploads();
                let b = gather(&mut staging, ups.iter().map(|(_, r)| *r), None);
                (0.0, ms(t1), b)
            }
        };
        let total = ms(t0);
        if frame > args.warmup {
            sim_ms.push(t_sim);
            cull_ms.push(t_cull);
            gather_ms.push(t_gather);
            total_ms.push(total);
            bytes.push(b as f64);
        }
    }
    let mut v = json!({
        "instances": n,
        "scenario": scenario.name(),
        "culling": culling_name(culling),
        "frames": frames,
        "simulation_ms": median(&sim_ms),
        "cull_lod_ms": median(&cull_ms),
        "gather_ms": median(&gather_ms),
        "render_cpu_ms": median(&cull_ms.iter().zip(&gather_ms).map(|(a, b)| a + b).collect::<Vec<_>>()),
        "total_ms": median(&total_ms),
        "upload_bytes": median(&bytes),
    });
    if matches!(culling, CullingArg::Cpu) {
        v["drawn"] = json!(drawn);
        v["draws_main"] = json!(draws_main);
        v["lod_split"] = Value::Array(split);
    }
    v
}

pub(crate) fn culling_name(c: CullingArg) -> &'static str {
    match c {
        CullingArg::Cpu => "cpu",
        CullingArg::Gpu => "gpu",
    }
}

/// The asset bytes and, for the procedural humanoid, its rig.
fn load(args: &BenchArgs) -> Result<(Vec<u8>, Option<Rig>, String)> {
    match &args.asset {
        Some(p) => {
            let bytes = crate::bake::read_vat(p, args.max_memory)?;
            Ok((bytes, None, p.display().to_string()))
        }
        None => {
            let rig = vat_procgen::humanoid();
            let options = BakeOptions { bones: true, ..BakeOptions::default() };
            let bake = prepare(&rig, &options).context("procedural humanoid: bake failed")?;
            Ok((bake.to_vat_bytes()?, Some(rig), "procedural humanoid".to_string()))
        }
    }
}

/// How many baseline frames fit the budget after a first frame of `first_ms`.
pub(crate) fn baseline_frames(args: &BenchArgs, first_ms: f64) -> u32 {
    let budget_ms = args.baseline_budget * 1e3;
    let fit = (budget_ms / first_ms.max(1e-3)).floor() as u32;
    let floor = if first_ms > budget_ms { 1 } else { 3 };
    fit.clamp(floor, args.baseline_frames.max(floor))
}

/// `vat bench`.
pub(crate) fn bench(args: &BenchArgs) -> Result<()> {
    if let Some(out) = &args.out {
        crate::bake::check_out(out)?;
    }
    for &n in &args.instances {
        crate::render::check_instances("--instances", n, args.max_memory)?;
    }
    for &n in &args.gpu_instances {
        crate::render::check_instances("--gpu-instances", n, args.max_memory)?;
    }
    let (bytes, rig, source) = load(args)?;
    if args.impostors {
        return impostor_section(args, bytes, &source);
    }
    let asset = Asset::parse_with_limits(&bytes, &crate::bake::load_limits(args.max_memory))
        .with_context(|| format!("{source}: not a valid .vat file"))?;
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut report = json!({
        "asset": {
            "source": source,
            "vertices": asset.manifest().vertex_count,
            "lod_triangles": crowd_asset.lod_triangles,
            "lod_distances_m": crowd_asset.lod_distances.as_slice(),
        },
        "threads_available": threads,
        "frames": args.frames,
        "dt_s": DT,
    });
    let say = |line: String| {
        if !args.json {
            println!("{line}");
        }
    };

    // CPU section.
    say(format!(
        "CPU cost per frame, one core, medians of {} frames ({source}, {} vertices)",
        args.frames,
        asset.manifest().vertex_count
    ));
    say(format!(
        "{:>9} {:>8} {:>5} {:>10} {:>10} {:>10} {:>10} {:>12}",
        "instances", "scenario", "cull", "sim ms", "cull+lod", "gather ms", "total ms", "upload B"
    ));
    let mut cpu = Vec::new();
    for &n in &args.instances {
        for &scenario in &args.scenario {
            for &culling in &args.culling {
                let v = cpu_run(&crowd_asset, n, scenario, culling, args);
                say(format!(
                    "{:>9} {:>8} {:>5} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>12}",
                    n,
                    scenario.name(),
                    culling_name(culling),
                    v["simulation_ms"].as_f64().unwrap_or(0.0),
                    v["cull_lod_ms"].as_f64().unwrap_or(0.0),
                    v["gather_ms"].as_f64().unwrap_or(0.0),
                    v["total_ms"].as_f64().unwrap_or(0.0),
                    v["upload_bytes"].as_f64().unwrap_or(0.0) as u64,
                ));
                cpu.push(v);
            }
        }
    }
    if !args.json {
        println!("LOD split of the last CPU-culled frame (main pass: instances / triangles per LOD)");
        for v in &cpu {
            if let Some(rows) = v["lod_split"].as_array() {
                let cells: Vec<String> =
                    rows.iter().map(|r| format!("{} / {}", r["instances"], r["triangles"])).collect();
                println!(
                    "  {:>9} {:>8}: {}",
                    v["instances"].to_string(),
                    v["scenario"].as_str().unwrap_or(""),
                    cells.join(" | ")
                );
            }
        }
    }
    report["cpu"] = Value::Array(cpu);

    // Conventional baseline, CPU side.
    let mut baseline_cpu = Vec::new();
    match &rig {
        Some(rig) => {
            let mut skinner = baseline::Skinner::new(rig, &crowd_asset)?;
            say(format!(
                "Conventional baseline (CPU skinning of every character, {} vertices each, one core), medians",
                skinner.vertex_count()
            ));
            say(format!(
                "{:>9} {:>7} {:>10} {:>10} {:>10} {:>14}",
                "instances", "frames", "sim ms", "skin ms", "total ms", "upload B"
            ));
            for &n in &args.instances {
                if n > args.baseline_max {
                    say(format!("{n:>9}   not measured (above --baseline-max {})", args.baseline_max));
                    baseline_cpu.push(json!({"instances": n, "measured": false,
                        "reason": format!("above --baseline-max {}", args.baseline_max)}));
                    continue;
                }
                let v = skinner.cpu_run(n, args)?;
                say(format!(
                    "{:>9} {:>7} {:>10.4} {:>10.2} {:>10.2} {:>14}",
                    n,
                    v["frames"].to_string(),
                    v["simulation_ms"].as_f64().unwrap_or(0.0),
                    v["skin_ms"].as_f64().unwrap_or(0.0),
                    v["total_ms"].as_f64().unwrap_or(0.0),
                    v["upload_bytes"].as_u64().unwrap_or(0),
                ));
                baseline_cpu.push(v);
            }
        }
        None => say("Conventional baseline: skipped (needs the procedural humanoid's rig)".to_string()),
    }
    report["baseline_cpu"] = Value::Array(baseline_cpu);
    if !args.json {
        print_curves(&report);
    }

    // GPU section.
    if args.no_gpu {
        report["gpu_skipped"] = json!("--no-gpu");
    } else {
        match gpu::run(args, &asset, &crowd_asset, rig.as_ref())? {
            gpu::Outcome::Ran { adapter, timestamps, rows } => {
                report["adapter"] = json!(adapter);
                report["gpu_timestamps"] = json!(timestamps);
                report["gpu"] = Value::Array(rows);
            }
            gpu::Outcome::NoAdapter(why) => {
                say(format!("GPU section: skipped ({why})"));
                report["gpu_skipped"] = json!(why);
            }
        }
    }

    emit(args, &report)
}

/// The report as JSON: printed with `--json`, written (atomically) to `--out`.
fn emit(args: &BenchArgs, report: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    if args.json {
        println!("{text}");
    }
    if let Some(path) = &args.out {
        vat_core::files::write_file_atomically(path, text.as_bytes())
            .with_context(|| format!("{}: cannot write", path.display()))?;
    }
    Ok(())
}

/// `vat bench --impostors`: the impostor section alone, printed and (`--json`, `--out`) written.
fn impostor_section(args: &BenchArgs, bytes: Vec<u8>, source: &str) -> Result<()> {
    let (bytes, line) =
        crate::bake::with_default_tier(bytes).with_context(|| format!("{source}: no impostor tier"))?;
    if !args.json {
        println!("{source}: {line}");
    }
    let rows = impostor::run(args, &bytes)?;
    let report = json!({"asset": {"source": source, "tier": line}, "impostors": rows});
    emit(args, &report)
}

/// The two curves side by side: renderer CPU cost of the GPU-driven path (static crowd) against the
/// conventional baseline's total.
fn print_curves(report: &Value) {
    let empty = Vec::new();
    let cpu = report["cpu"].as_array().unwrap_or(&empty);
    let base = report["baseline_cpu"].as_array().unwrap_or(&empty);
    println!("CPU ms per frame: GPU-driven path (static crowd, total) vs conventional CPU skinning (total)");
    for v in cpu.iter().filter(|v| v["culling"] == "gpu" && v["scenario"] == "static") {
        let n = &v["instances"];
        let b = base
            .iter()
            .find(|b| &b["instances"] == n)
            .and_then(|b| b["total_ms"].as_f64())
            .map_or_else(|| "not measured".to_string(), |t| format!("{t:.2}"));
        println!("  {:>9}: {:>10.4} vs {b}", n.to_string(), v["total_ms"].as_f64().unwrap_or(0.0));
    }
}
