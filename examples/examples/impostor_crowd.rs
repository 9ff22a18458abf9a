//! A million characters with the impostor tier: the humanoid is baked, its default impostor tier is
//! baked on the CPU (`vat bake --impostors`'s defaults: 8 x 8 hemi-octahedral views of 64 px, 8
//! frames per clip), and a crowd of a million stands on a square seen from its edge, so the near
//! characters are meshes, the far ones cards and the ones between cross-fade. One frame is rendered
//! headless with GPU culling and saved; the report says how many draws were cards.
//!
//! `cargo run --release -p vat-examples --example impostor_crowd [-- COUNT [wgpu|vulkan]]`
//!
//! The tier is part of the asset: a game bakes it once (`vat bake --impostors`) and loads the file;
//! nothing in the frame code below knows cards exist ([`vat_core::crowd::CrowdConfig::impostors`]
//! is on by default).

use anyhow::{Result, bail};
use vat_bake::impostor::{ImpostorOptions, bake_measured_tier, with_tier_bytes};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_examples::scene::{self, DemoLayout, SceneScale};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let count: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000_000);
    let size = [1280, 720];
    match args.next().as_deref().unwrap_or("wgpu") {
        "wgpu" => run(vat_wgpu::Offscreen::new(size, Default::default())?, count),
        "vulkan" => run(vat_vulkan::Offscreen::new(size, Default::default())?, count),
        other => bail!("unknown backend {other:?} (wgpu or vulkan)"),
    }
}

/// The whole example, on any backend.
fn run<R: CrowdRenderer>(mut renderer: R, count: u32) -> Result<()> {
    let mesh_only = vat_examples::support::asset_bytes(None)?;
    let (images, measured) = bake_measured_tier(&Asset::parse(&mesh_only)?, &ImpostorOptions::default())?;
    let bytes = with_tier_bytes(&Asset::parse(&mesh_only)?, &images)?;
    let asset = Asset::parse(&bytes)?;
    let tier = asset.manifest().impostors.as_ref().map(|t| t.tile_size).unwrap_or_default();
    println!(
        "impostor tier: {} images of {tier} px tiles, {} bytes of atlas, {measured} images measured \
         against the mesh",
        images.tier.layer_count(),
        images.color.len() + images.normal_depth.len()
    );

    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    let scale = SceneScale::from_bounds(&crowd_asset.bounds);
    let config = CrowdConfig { cell_size: scale.cell_size(), ..CrowdConfig::default() };
    let mut crowd = Crowd::new(crowd_asset, config);
    let layout = DemoLayout { seed: 7, ..scale.layout() };
    scene::populate(&mut crowd, count, &layout);
    crowd.advance(1.0);

    // From just outside one edge, low, looking across the square: meshes in front, cards behind.
    let half = scene::half_extent(count, &layout);
    let u = scale.unit;
    let eye = [-half - 4.0 * u, 3.0 * u, -half - 4.0 * u];
    let target = [0.0, scale.floor, 0.0];
    let size = renderer.size();
    let far = 4.0 * half + 100.0 * u;
    let camera = Camera::look_at(eye, target, 0.9, size[0] as f32 / size[1] as f32, 0.1 * u, far);
    let options = RenderOptions {
        culling: Culling::Gpu,
        ground: true,
        ground_half_extent: half + 10.0 * u,
        shadow_distance: scale.shadow_distance(),
        ..Default::default()
    };
    let gpu_asset = renderer.upload(&asset)?;
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let report = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?;
    let rgba = renderer.read_rgba8()?;
    vat_examples::support::save_png(std::path::Path::new("impostor_crowd.png"), size, &rgba)?;
    // The GPU culled: what it drew per draw (mesh LODs, then the near cards, then the far cards
    // drawn from one view) is known only there.
    let lists = renderer.read_gpu_visible(&gpu_crowd)?;
    let lods = crowd.asset().lod_count() as usize;
    let near = lists.get(lods).map_or(0, Vec::len);
    let far = lists.get(lods + 1).map_or(0, Vec::len);
    let meshes: usize = lists.iter().take(lods).map(Vec::len).sum();
    println!(
        "{count} characters on {}: {meshes} drawn as meshes, {} as cards ({far} of them far, from one \
         view; those in the switch's band are both), {} draws of cards; wrote impostor_crowd.png",
        renderer.adapter_name(),
        near + far,
        report.draws_impostors
    );
    Ok(())
}
