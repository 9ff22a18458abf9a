//! The host's own shader: a crowd of textured characters drawn by vat's vertex stages with the host's
//! toon fragment stage (`examples/src/shaders/toon.wgsl`, `vat_examples::TOON_SHADER`), on either
//! backend (the same WGSL; vat-vulkan translates it with naga), written to `custom_shader_<backend>.png`.
//!
//! `cargo run --release -p vat-examples --example custom_shader [-- wgpu|vulkan|both]`
//!
//! With `both`, the two images are compared and the largest channel difference is printed.

use anyhow::{Result, bail};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::VARIANT_ACCESSORY;
use vat_core::render::{CrowdRenderer, RenderOptions};

const SIZE: [u32; 2] = [640, 360];

fn main() -> Result<()> {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "wgpu".into());
    // The textured stand-in character (vat_procgen::testdata::textured_humanoid_glb), baked in memory.
    let rig = vat_bake::gltf_import::import_slice(
        &vat_procgen::testdata::textured_humanoid_glb(),
        None,
        "textured",
    )?;
    let bytes =
        vat_bake::prepare::prepare(&rig, &vat_bake::prepare::BakeOptions::default())?.to_vat_bytes()?;
    let asset = Asset::parse(&bytes)?;
    let mut images = Vec::new();
    for name in match backend.as_str() {
        "both" => vec!["wgpu", "vulkan"],
        "wgpu" | "vulkan" => vec![backend.as_str()],
        other => bail!("backend {other:?}: expected wgpu, vulkan or both"),
    } {
        let rgba = if name == "wgpu" {
            let mut offscreen = vat_wgpu::Offscreen::new(SIZE, vat_wgpu::RendererConfig::default())?;
            offscreen.parts().2.set_host_shader(Some(vat_examples::toon_shader()))?;
            render(offscreen, &asset)?
        } else {
            let mut offscreen = vat_vulkan::Offscreen::new(SIZE, vat_vulkan::RendererConfig::default())?;
            offscreen.parts().1.set_host_shader(Some(vat_examples::toon_shader()))?;
            render(offscreen, &asset)?
        };
        let path = format!("custom_shader_{name}.png");
        vat_examples::support::save_png(std::path::Path::new(&path), SIZE, &rgba)?;
        println!("-> {path}");
        images.push(rgba);
    }
    if let [a, b] = images.as_slice() {
        let max = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
        println!("wgpu vs Vulkan: largest channel difference {max}/255");
    }
    Ok(())
}

/// A 3 x 3 crowd mid-walk with caps, on the ground, through the backend seam.
fn render<R: CrowdRenderer>(mut renderer: R, asset: &Asset<'_>) -> Result<Vec<u8>>
where
    R::Error: std::error::Error + Send + Sync + 'static,
{
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap_or(0) as u32;
    for k in 0..9u32 {
        let (x, z) = ((k % 3) as f32 * 1.4 - 1.4, (k / 3) as f32 * -1.6);
        let id = crowd.spawn_at_phase([x, 0.0, z], 0.4 * k as f32, walk, 0.11 * k as f32);
        crowd.set_variant(id, VARIANT_ACCESSORY);
    }
    let gpu_asset = renderer.upload(asset)?;
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let camera =
        Camera::look_at([2.2, 1.8, 4.2], [0.0, 0.9, -1.4], 0.8, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0);
    let options = RenderOptions { ground: true, ground_half_extent: 12.0, ..RenderOptions::default() };
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?;
    Ok(renderer.read_rgba8()?)
}
