//! `vat bench --impostors`: far crowds drawn as impostor cards against the same crowds at the last
//! mesh LOD, side by side in one run on one renderer (issue 33's numbers).
//!
//! The demo crowd of each `--gpu-instances` count stands in its square; the camera looks at it from
//! 40 m beyond its near edge, so every character is past the tier's switch (at the reference view:
//! 60 degrees over 1,080 rows), and the shadows are on. The mesh row has a LOD bias of +10
//! doublings, so every mesh is at the last LOD; the card row has none (each card at the mip level
//! and path its own distance picks). Each row: median wall time per frame (render call to GPU finished), the render call's CPU time, and
//! the GPU time from timestamp queries where the backend has them. An asset without a tier gets the
//! default one baked in memory first (`vat bake --impostors`'s defaults).

use std::time::Instant;

use anyhow::Result;
use serde_json::{Value, json};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};

use super::{BackendArg, BenchArgs, DT, Scenario, build_crowd, median, ms};

/// LOD bias of the mesh row: every mesh at its last LOD.
const FAR_BIAS: f32 = 10.0;

/// Runs the section on `--backend`; the rows as JSON.
pub(super) fn run(args: &BenchArgs, bytes: &[u8]) -> Result<Value> {
    let asset = Asset::parse_with_limits(bytes, &crate::bake::load_limits(args.max_memory))?;
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    match args.backend {
        BackendArg::Wgpu => {
            let mut off = vat_wgpu::Offscreen::new(args.size, vat_wgpu::RendererConfig::default())?;
            let gpu_asset = off.upload(&asset)?;
            rows(&mut off, &gpu_asset, &crowd_asset, args)
        }
        BackendArg::Vulkan => {
            let mut off = vat_vulkan::Offscreen::new(args.size, vat_vulkan::RendererConfig::default())?;
            let gpu_asset = off.upload(&asset)?;
            rows(&mut off, &gpu_asset, &crowd_asset, args)
        }
    }
}

fn rows<R: CrowdRenderer>(
    r: &mut R,
    gpu_asset: &R::Asset,
    asset: &CrowdAsset,
    args: &BenchArgs,
) -> Result<Value> {
    let say = |line: String| {
        if !args.json {
            println!("{line}");
        }
    };
    say(format!(
        "Far crowds, {}x{} offscreen, GPU culling, medians of {} frames: cards against the last mesh LOD",
        args.size[0], args.size[1], args.gpu_frames
    ));
    say(format!(
        "{:>9} {:>9} {:>10} {:>10} {:>10} {:>8}",
        "instances", "drawn as", "frame ms", "cpu ms", "gpu ms", "ratio"
    ));
    let mut out = Vec::new();
    for &n in &args.gpu_instances {
        let mut pair = Vec::new();
        for impostors in [false, true] {
            let v = row(r, gpu_asset, asset, n, impostors, args)?;
            pair.push(v);
        }
        let time = |v: &Value| v["gpu_ms"].as_f64().or_else(|| v["frame_ms"].as_f64()).unwrap_or(0.0);
        let ratio = time(&pair[0]) / time(&pair[1]).max(1e-9);
        for v in &mut pair {
            say(format!(
                "{:>9} {:>9} {:>10.2} {:>10.3} {:>10} {:>8}",
                n,
                v["drawn_as"].as_str().unwrap_or(""),
                v["frame_ms"].as_f64().unwrap_or(0.0),
                v["cpu_ms"].as_f64().unwrap_or(0.0),
                v["gpu_ms"].as_f64().map_or_else(|| "-".into(), |g| format!("{g:.2}")),
                if v["drawn_as"] == "cards" { format!("{ratio:.1}x") } else { String::new() },
            ));
            v["last_lod_over_cards"] = json!(ratio);
        }
        out.extend(pair);
    }
    Ok(Value::Array(out))
}

/// One configuration: the demo crowd of `n`, seen from beyond its near edge, as cards or meshes.
fn row<R: CrowdRenderer>(
    r: &mut R,
    gpu_asset: &R::Asset,
    asset: &CrowdAsset,
    n: u32,
    impostors: bool,
    args: &BenchArgs,
) -> Result<Value> {
    let (mut crowd, _, half): (Crowd, _, f32) = build_crowd(asset, n, Scenario::Static);
    crowd.config_mut().impostors = impostors;
    crowd.config_mut().lod_bias = if impostors { 0.0 } else { FAR_BIAS };
    let mut gpu_crowd = r.create_crowd(&crowd)?;
    let [w, h] = r.size();
    let aspect = w as f32 / h.max(1) as f32;
    let options = RenderOptions { culling: Culling::Gpu, ..RenderOptions::default() };
    let eye = [-half - 40.0, 12.0, 0.0];
    let camera = Camera::look_at(eye, [0.0, 0.0, 0.0], 60f32.to_radians(), aspect, 0.5, 3.0 * half + 200.0);
    let frames = args.gpu_frames.max(1);
    let (mut wall, mut cpu, mut gpu) = (Vec::new(), Vec::new(), Vec::new());
    let mut all_gpu = true;
    let mut report = None;
    for frame in 0..(2 + frames) {
        crowd.advance(f64::from(DT));
        let t0 = Instant::now();
        let rep = r.render_crowd(gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?;
        let t_cpu = ms(t0);
        r.wait()?;
        let t_wall = ms(t0);
        if frame >= 2 {
            wall.push(t_wall);
            cpu.push(t_cpu);
            match r.last_gpu_time_ms() {
                Some(g) => gpu.push(g),
                None => all_gpu = false,
            }
            report = Some(rep);
        }
    }
    let draws_impostors = report.as_ref().map_or(0, |r| r.draws_impostors);
    Ok(json!({
        "instances": n,
        "drawn_as": if impostors { "cards" } else { "last LOD" },
        "frames": frames,
        "frame_ms": median(&wall),
        "cpu_ms": median(&cpu),
        "gpu_ms": if all_gpu { json!(median(&gpu)) } else { Value::Null },
        "draws_impostors": draws_impostors,
    }))
}
