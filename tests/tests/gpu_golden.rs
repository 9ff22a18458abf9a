//! A small golden image: one humanoid (VAT mode, mid-walk, cap on, shadows on the ground) rendered
//! at 64 x 64 on the software Vulkan driver, compared with `tests/golden/humanoid_64x64.rgba` (raw
//! RGBA8, rows top to bottom).
//!
//! Tolerance: at most 2 % of the pixels may differ by more than 8 levels (of 255) in some channel,
//! and none by more than 8 levels on average over the image; rasterisation rules and LLVM versions
//! move a few edge pixels, never the picture. Regenerate with `VAT_BLESS=1 cargo test --test
//! gpu_golden` after an intended change, and look at the result (`VAT_TEST_IMAGES=dir`).

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::VARIANT_ACCESSORY;
use vat_tests::{humanoid_vat, save_image, test_gpu};
use vat_wgpu::{CrowdDraw, HeadlessTarget, RenderMode, RenderOptions, Renderer, RendererConfig};

const SIZE: [u32; 2] = [64, 64];

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/humanoid_64x64.rgba")
}

fn render(mode: RenderMode) -> Vec<u8> {
    let gpu = test_gpu();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let config = RendererConfig { shadow_map_size: 512, ..Default::default() };
    let mut renderer = Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let id = crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.6, walk, 0.3);
    crowd.set_variant(id, 3 | VARIANT_ACCESSORY);
    let target = HeadlessTarget::new(&gpu.device, SIZE, config);
    let camera = Camera::look_at([1.6, 1.6, 2.8], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 50.0);
    let options = RenderOptions { mode, ground: true, shadow_distance: 10.0, ..Default::default() };
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let mut crowds = [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
    renderer.render(&mut encoder, &mut crowds, &camera, target.target(), &options).unwrap();
    gpu.queue.submit([encoder.finish()]);
    target.read_rgba8(&gpu.device, &gpu.queue).unwrap()
}

/// (pixels differing by more than 8 levels in some channel, mean absolute difference per channel).
fn compare(a: &[u8], b: &[u8]) -> (usize, f64) {
    let far = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > 8))
        .count();
    let sum: u64 = a.iter().zip(b).map(|(x, y)| u64::from(x.abs_diff(*y))).sum();
    (far, sum as f64 / a.len() as f64)
}

#[test]
fn golden_image_of_one_humanoid() {
    let image = render(RenderMode::Vat);
    save_image("golden", SIZE, &image);
    let path = golden_path();
    if std::env::var_os("VAT_BLESS").is_some() {
        std::fs::write(&path, &image).unwrap();
        println!("wrote {}", path.display());
    }
    let golden =
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (VAT_BLESS=1 writes it)", path.display()));
    assert_eq!(golden.len(), image.len());
    let (far, mean) = compare(&image, &golden);
    println!("{far} pixels differ by more than 8 levels, mean difference {mean:.3} levels");
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    assert!(far * 50 <= pixels, "{far} of {pixels} pixels differ from the golden image");
    assert!(mean <= 8.0, "mean difference {mean}");
    // The golden image itself shows something: sky, ground and a character in between.
    let distinct: std::collections::BTreeSet<[u8; 4]> =
        golden.chunks_exact(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
    assert!(distinct.len() > 100, "{} colours", distinct.len());
}

/// Bone mode draws the same character: within the golden tolerance of the VAT-mode golden image.
#[test]
fn bone_mode_matches_the_golden_image() {
    let image = render(RenderMode::Bone);
    let golden = std::fs::read(golden_path()).unwrap();
    let (far, mean) = compare(&image, &golden);
    println!("bone mode: {far} pixels differ by more than 8 levels, mean difference {mean:.3} levels");
    assert!(far * 50 <= (SIZE[0] * SIZE[1]) as usize, "{far} pixels differ");
}
