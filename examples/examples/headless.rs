//! The smallest complete use of vat: bake (or load) an asset, upload it, spawn a few characters and
//! render one frame headless into a PNG.
//!
//! `cargo run --release -p vat-examples --example headless [-- asset.vat]`

use anyhow::Result;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_wgpu::{HeadlessTarget, RenderOptions, Renderer, RendererConfig, headless_device};

fn main() -> Result<()> {
    let path = std::env::args().nth(1);
    let bytes = vat_examples::support::asset_bytes(path.as_deref().map(std::path::Path::new))?;
    let asset = Asset::parse(&bytes)?;

    let (device, queue, info) = headless_device()?;
    let config = RendererConfig::default();
    let mut renderer = Renderer::new(&device, &queue, config)?;
    let gpu_asset = renderer.upload(&asset)?;

    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, CrowdConfig::default());
    for (k, clip) in (0..asset.manifest().clips.len() as u32).enumerate() {
        crowd.spawn([k as f32 * 1.2 - 3.0, 0.0, 0.0], 0.3, clip);
    }
    crowd.advance(0.5);

    let size = [640, 360];
    let camera =
        Camera::look_at([0.0, 1.6, 7.0], [0.0, 0.9, 0.0], 0.8, size[0] as f32 / size[1] as f32, 0.1, 100.0);
    let target = HeadlessTarget::new(&device, size, config)?;
    let mut encoder = device.create_command_encoder(&Default::default());
    let options = RenderOptions { ground: true, ground_half_extent: 12.0, ..RenderOptions::default() };
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let mut crowds = [vat_wgpu::CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
    let report = renderer.render(&mut encoder, &mut crowds, &camera, target.target(), &options)?;
    queue.submit([encoder.finish()]);
    let rgba = target.read_rgba8(&device, &queue)?;
    vat_examples::support::save_png(std::path::Path::new("headless.png"), size, &rgba)?;
    println!("{} characters on {} -> headless.png ({} draws)", crowd.count(), info.name, report.draws_main);
    Ok(())
}
