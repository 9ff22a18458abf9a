//! A wandering crowd: agents steer towards random goals, their speed picks idle/walk/jog/run with
//! stride-matched rates and cross-fades, and the crowd is rendered with culling, LODs and shadows.
//! Runs a fixed number of frames headless and saves the last one.
//!
//! `cargo run --release -p vat-examples --example crowd [-- COUNT [FRAMES [cpu|gpu [wgpu|vulkan]]]]`
//!
//! The scene code ([`run`]) is written once against vat-core's [`CrowdRenderer`] seam; `main` only
//! picks the backend.

use anyhow::{Result, bail};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_examples::scene::{self, SceneScale};
use vat_examples::sim::{Simulation, wander_half_extent};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let count: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let frames: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(120);
    let culling = if args.next().as_deref() == Some("gpu") { Culling::Gpu } else { Culling::Cpu };
    let size = [960, 540];
    match args.next().as_deref().unwrap_or("wgpu") {
        "wgpu" => run(vat_wgpu::Offscreen::new(size, Default::default())?, count, frames, culling),
        "vulkan" => run(vat_vulkan::Offscreen::new(size, Default::default())?, count, frames, culling),
        other => bail!("unknown backend {other:?} (wgpu or vulkan)"),
    }
}

/// The whole example, on any backend.
fn run<R: CrowdRenderer>(mut renderer: R, count: u32, frames: u32, culling: Culling) -> Result<()> {
    let bytes = vat_examples::support::asset_bytes(None)?;
    let asset = Asset::parse(&bytes)?;
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    // Every length below is in reference metres (tuned for the humanoid) scaled to the asset's unit.
    let scale = SceneScale::from_bounds(&crowd_asset.bounds);
    let u = scale.unit;
    let config = CrowdConfig { cell_size: scale.cell_size(), ..CrowdConfig::default() };
    let mut crowd = Crowd::new(crowd_asset, config);
    let half = wander_half_extent(count, &scale);
    let mut sim = Simulation::new(&mut crowd, count, half, 7);
    let gpu_asset = renderer.upload(&asset)?;
    let size = renderer.size();
    // The camera circles at 1.2 half extents: the ground (centred below it) covers the crowd.
    let ground_half_extent = scene::ground_half_extent_covering(
        [half * 1.2, 0.0, half * 1.2],
        half + scale.footprint,
        scale.length(scene::GROUND_MARGIN),
    );
    let options = RenderOptions {
        culling,
        ground: true,
        ground_half_extent,
        shadow_distance: scale.shadow_distance(),
        ..Default::default()
    };

    let dt = 1.0 / 30.0;
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let mut last = None;
    for frame in 0..frames {
        sim.step(&mut crowd, dt);
        // The camera circles the crowd.
        let angle = frame as f32 * dt * 0.2;
        let eye = [angle.sin() * half * 1.2, half * 0.5 + 4.0 * u, angle.cos() * half * 1.2];
        let target = [0.0, scale.floor + 0.5 * u, 0.0];
        let far = (1000.0 * u).max(4.0 * ground_half_extent);
        let camera = Camera::look_at(eye, target, 0.9, size[0] as f32 / size[1] as f32, 0.1 * u, far);
        last = Some(renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?);
    }
    let rgba = renderer.read_rgba8()?;
    vat_examples::support::save_png(std::path::Path::new("crowd.png"), size, &rgba)?;
    if let Some(mut r) = last {
        if culling == Culling::Gpu {
            // The GPU culled: what it drew is known only on the GPU.
            r.stats.drawn = renderer.read_gpu_visible(&gpu_crowd)?.iter().map(|l| l.len() as u32).sum();
        }
        println!(
            "{} agents, {frames} frames on {} ({culling:?} culling): last frame drew {} instances, {} \
             triangles (CPU culling only), {} draws; wrote crowd.png",
            sim.len(),
            renderer.adapter_name(),
            r.stats.drawn,
            r.stats.triangles,
            r.draws_main + r.draws_shadow + r.draws_attachments
        );
    }
    Ok(())
}
