//! The GPU section of `vat bench`: offscreen frames through the [`CrowdRenderer`] seam (VAT and bone
//! mode, each culling mode) and the conventional baseline's comparator pipeline, on one device.

use std::time::Instant;

use anyhow::{Result, anyhow};
use serde_json::{Value, json};
use vat_bake::rig::Rig;
use vat_core::container::Asset;
use vat_core::crowd::CrowdAsset;
use vat_core::render::{CrowdRenderer, RenderMode, RenderOptions};
use vat_wgpu::{DeviceError, Offscreen, RendererConfig};

use super::baseline::{Comparator, Skinner};
use super::{
    BackendArg, BenchArgs, DT, Scenario, baseline_frames, bench_camera, build_crowd, culling_name, median, ms,
};
use crate::render::CullingArg;

/// What the GPU section produced.
pub(crate) enum Outcome {
    /// It ran on `adapter`.
    Ran {
        /// The backend and adapter name.
        adapter: String,
        /// Whether GPU times come from timestamp queries.
        timestamps: bool,
        /// One object per configuration.
        rows: Vec<Value>,
    },
    /// No adapter: the reason.
    NoAdapter(String),
}

/// Opens a Vulkan device for the benchmark: a real GPU (discrete, then integrated, then virtual)
/// when there is one, else the CPU adapter (lavapipe); `INDIRECT_FIRST_INSTANCE` (required) and
/// `TIMESTAMP_QUERY` (when the adapter has it), the adapter's limits.
fn open_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), DeviceError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::DEBUG;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| match a.get_info().device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    });
    let adapter = adapters.into_iter().next().ok_or(DeviceError::NoAdapter)?;
    let info = adapter.get_info();
    if !adapter.features().contains(wgpu::Features::INDIRECT_FIRST_INSTANCE) {
        return Err(DeviceError::MissingFeature {
            feature: "INDIRECT_FIRST_INSTANCE",
            why: "GPU-culled indirect draws need it",
            adapter: format!("adapter {:?}", info.name),
        });
    }
    let features =
        wgpu::Features::INDIRECT_FIRST_INSTANCE | (adapter.features() & wgpu::Features::TIMESTAMP_QUERY);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("vat bench"),
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| DeviceError::Wgpu(format!("could not open a device on {}: {e}", info.name)))?;
    Ok((device, queue, info))
}

/// Runs the GPU section.
pub(crate) fn run(
    args: &BenchArgs,
    asset: &Asset<'_>,
    crowd_asset: &CrowdAsset,
    rig: Option<&Rig>,
) -> Result<Outcome> {
    if args.backend == BackendArg::Vulkan {
        // Context::headless prefers the CPU device (lavapipe) when there is one.
        let mut off = vat_vulkan::Offscreen::new(args.size, vat_vulkan::RendererConfig::default())
            .map_err(|e| anyhow!("--backend vulkan: {e}"))?;
        let adapter = off.adapter_name();
        let gpu_asset = off.upload(asset)?;
        let bones = gpu_asset.has_bones();
        // The comparator pipeline is wgpu: the baseline runs with --backend wgpu only.
        return crowd_rows(&mut off, &gpu_asset, bones, None, crowd_asset, args, adapter, false);
    }
    let (device, queue, info) = match open_device() {
        Ok(d) => d,
        Err(DeviceError::NoAdapter) => return Ok(Outcome::NoAdapter(DeviceError::NoAdapter.to_string())),
        Err(e) => return Err(e.into()),
    };
    let timestamps = device.features().contains(wgpu::Features::TIMESTAMP_QUERY);
    let mut off = Offscreen::with_device(device, queue, info, args.size, RendererConfig::default())?;
    let adapter = off.adapter_name();
    let gpu_asset = off.upload(asset)?;
    let bones = gpu_asset.has_bones();
    let skinner = rig.map(|r| Skinner::new(r, crowd_asset)).transpose()?;
    let (device, queue) = {
        let (d, q, _) = off.parts();
        (d.clone(), q.clone())
    };
    let baseline = skinner.map(|s| (s, device, queue));
    crowd_rows(&mut off, &gpu_asset, bones, baseline, crowd_asset, args, adapter, timestamps)
}

/// The rows of every instance count: each mode and culling mode through the seam, then the
/// baseline (when given: the skinner and the wgpu device and queue to draw it with).
#[allow(clippy::too_many_arguments)] // One call site per backend; a struct would only rename them.
fn crowd_rows<R: CrowdRenderer>(
    off: &mut R,
    gpu_asset: &R::Asset,
    bones: bool,
    mut baseline: Option<(Skinner<'_>, wgpu::Device, wgpu::Queue)>,
    crowd_asset: &CrowdAsset,
    args: &BenchArgs,
    adapter: String,
    timestamps: bool,
) -> Result<Outcome> {
    let say = |line: String| {
        if !args.json {
            println!("{line}");
        }
    };
    say(format!(
        "GPU section on {adapter}, {}x{} offscreen, static demo crowd, medians of {} frames \
         (gpu ms: timestamp queries, where the backend reports them)",
        args.size[0], args.size[1], args.gpu_frames,
    ));
    say(format!(
        "{:>9} {:>8} {:>5} {:>7} {:>10} {:>12} {:>10} {:>14}",
        "instances", "mode", "cull", "frames", "frame ms", "cpu ms", "gpu ms", "upload B"
    ));
    let mut rows = Vec::new();
    let print = |v: &Value| {
        say(format!(
            "{:>9} {:>8} {:>5} {:>7} {:>10.2} {:>12.4} {:>10} {:>14}",
            v["instances"].to_string(),
            v["mode"].as_str().unwrap_or(""),
            v["culling"].as_str().unwrap_or("-"),
            v["frames"].to_string(),
            v["frame_ms"].as_f64().unwrap_or(0.0),
            v["cpu_ms"].as_f64().unwrap_or(0.0),
            v["gpu_ms"].as_f64().map_or_else(|| "-".to_string(), |g| format!("{g:.2}")),
            v["upload_bytes"].as_f64().unwrap_or(0.0) as u64,
        ));
    };
    for &n in &args.gpu_instances {
        let mut modes = vec![RenderMode::Vat];
        if bones {
            modes.push(RenderMode::Bone);
        }
        for &mode in &modes {
            for &culling in &args.culling {
                let v = crowd_row(off, gpu_asset, crowd_asset, n, mode, culling, args)?;
                print(&v);
                rows.push(v);
            }
        }
        if let Some((skinner, device, queue)) = baseline.as_mut() {
            let v = if n > args.baseline_max {
                json!({"instances": n, "mode": "baseline", "measured": false,
                    "reason": format!("above --baseline-max {}", args.baseline_max)})
            } else {
                baseline_row(device, queue, skinner, crowd_asset, n, args)?
            };
            if v["measured"] == false {
                say(format!("{n:>9} baseline not measured (above --baseline-max {})", args.baseline_max));
            } else {
                print(&v);
            }
            rows.push(v);
        }
    }
    // The backend may time frames without the wgpu device feature (vat-vulkan does its own queries).
    let timestamps = timestamps || rows.iter().any(|r| r["gpu_ms"].is_number());
    Ok(Outcome::Ran { adapter, timestamps, rows })
}

/// One configuration through the seam: wall time per frame (from the `render` call until the GPU
/// finished), CPU time of `render`, GPU time where timestamps exist.
fn crowd_row<R: CrowdRenderer>(
    r: &mut R,
    gpu_asset: &R::Asset,
    crowd_asset: &CrowdAsset,
    n: u32,
    mode: RenderMode,
    culling: CullingArg,
    args: &BenchArgs,
) -> Result<Value> {
    let (mut crowd, _, half) = build_crowd(crowd_asset, n, Scenario::Static);
    let mut gpu_crowd = r.create_crowd(&crowd)?;
    let [w, h] = r.size();
    let aspect = w as f32 / h.max(1) as f32;
    let options = RenderOptions {
        mode,
        culling: match culling {
            CullingArg::Cpu => vat_core::render::Culling::Cpu,
            CullingArg::Gpu => vat_core::render::Culling::Gpu,
        },
        ..RenderOptions::default()
    };
    let frames = args.gpu_frames.max(1);
    let warmup = 3;
    let (mut wall, mut cpu, mut gpu, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut all_gpu = true;
    let mut draws_main = 0;
    for frame in 0..(warmup + frames) {
        crowd.advance(f64::from(DT));
        let camera = bench_camera(half, frame, aspect);
        let t0 = Instant::now();
        let report = r.render_crowd(gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?;
        let t_cpu = ms(t0);
        r.wait()?;
        let t_wall = ms(t0);
        let t_gpu = r.last_gpu_time_ms();
        if frame >= warmup {
            wall.push(t_wall);
            cpu.push(t_cpu);
            bytes.push(report.uploaded_bytes as f64);
            draws_main = report.draws_main;
            match t_gpu {
                Some(g) => gpu.push(g),
                None => all_gpu = false,
            }
        }
    }
    Ok(json!({
        "instances": n,
        "mode": match mode { RenderMode::Vat => "vat", RenderMode::Bone => "bone", RenderMode::Rest => "rest" },
        "culling": culling_name(culling),
        "measured": true,
        "frames": frames,
        "frame_ms": median(&wall),
        "cpu_ms": median(&cpu),
        "gpu_ms": if all_gpu { json!(median(&gpu)) } else { Value::Null },
        "upload_bytes": median(&bytes),
        "draws_main": draws_main,
    }))
}

/// The conventional baseline on the GPU: CPU skinning of every character + upload + draw, per
/// frame; wall time until the GPU finished, and the CPU part (skin + upload + record + submit).
fn baseline_row(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    skinner: &mut Skinner<'_>,
    crowd_asset: &CrowdAsset,
    n: u32,
    args: &BenchArgs,
) -> Result<Value> {
    let comparator = Comparator::new(device, args.size, skinner);
    let (mut crowd, _, half) = build_crowd(crowd_asset, n, Scenario::Static);
    let aspect = args.size[0] as f32 / args.size[1] as f32;
    let wait = |device: &wgpu::Device| {
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| vat_wgpu::Error::from(DeviceError::Wgpu(e.to_string())))
    };
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    let mut bytes = 0;
    let mut frames = 1;
    let mut frame = 0;
    // Frame 0 is a warm-up; it sets how many frames fit the budget.
    while frame <= frames {
        crowd.advance(f64::from(DT));
        let camera = bench_camera(half, frame, aspect);
        let t0 = Instant::now();
        bytes = comparator.frame(device, queue, skinner, &crowd, &camera)?;
        let t_cpu = ms(t0);
        wait(device)?;
        let t_wall = ms(t0);
        if frame == 0 {
            frames = baseline_frames(args, t_wall).min(args.gpu_frames.max(1));
        } else {
            wall.push(t_wall);
            cpu.push(t_cpu);
        }
        frame += 1;
    }
    Ok(json!({
        "instances": n,
        "mode": "baseline",
        "culling": Value::Null,
        "measured": true,
        "frames": frames,
        "frame_ms": median(&wall),
        "cpu_ms": median(&cpu),
        "gpu_ms": Value::Null,
        "upload_bytes": bytes,
        "draws_main": n.div_ceil(super::baseline::CHUNK as u32),
    }))
}
