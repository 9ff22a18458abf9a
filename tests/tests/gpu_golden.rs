//! A small golden image: one humanoid (VAT mode, mid-walk, cap on, shadows on the ground) rendered
//! at 64 x 64 on the software Vulkan driver by each backend on its own (written once against the
//! backend seam, one test per backend: `golden_image::wgpu`, `golden_image::vulkan`), compared with `tests/golden/humanoid_64x64.rgba` (raw
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
use vat_core::render::{CrowdRenderer, RenderMode, RenderOptions};
use vat_tests::{humanoid_vat, per_backend, save_image};

const SIZE: [u32; 2] = [64, 64];
const SHADOW_MAP: u32 = 512;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden/humanoid_64x64.rgba")
}

/// The golden scene on any backend: one humanoid mid-walk with its cap, ground and shadows.
fn render<R: CrowdRenderer>(renderer: &mut R, mode: RenderMode) -> Vec<u8> {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let id = crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.6, walk, 0.3);
    crowd.set_variant(id, 3 | VARIANT_ACCESSORY);
    let camera = Camera::look_at([1.6, 1.6, 2.8], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 50.0);
    let options = RenderOptions { mode, ground: true, shadow_distance: 10.0, ..Default::default() };
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    renderer.read_rgba8().unwrap()
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

/// The golden tolerance, the same on every backend (wgpu and Vulkan rasterise the same WGSL on the
/// same driver): at most 2 % of the pixels beyond 8 levels, a mean difference of at most 8.
fn assert_within_golden(what: &str, image: &[u8], golden: &[u8]) {
    assert_eq!(golden.len(), image.len());
    let (far, mean) = compare(image, golden);
    println!("{what}: {far} pixels differ by more than 8 levels, mean difference {mean:.3} levels");
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    assert!(far * 50 <= pixels, "{what}: {far} of {pixels} pixels differ from the golden image");
    assert!(mean <= 8.0, "{what}: mean difference {mean}");
}

/// VAT mode against the golden image, each backend on its own (`VAT_BLESS=1` rewrites the image from
/// the wgpu render).
fn golden_image_of_one_humanoid<R: CrowdRenderer>(mut renderer: R) {
    let image = render(&mut renderer, RenderMode::Vat);
    let name = renderer.adapter_name();
    save_image(if name.starts_with("wgpu") { "golden-wgpu" } else { "golden-vulkan" }, SIZE, &image);
    let path = golden_path();
    if std::env::var_os("VAT_BLESS").is_some() && name.starts_with("wgpu") {
        std::fs::write(&path, &image).unwrap();
        println!("wrote {}", path.display());
    }
    let golden =
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (VAT_BLESS=1 writes it)", path.display()));
    assert_within_golden(&name, &image, &golden);
    // The golden image itself shows something: sky, ground and a character in between.
    let distinct: std::collections::BTreeSet<[u8; 4]> =
        golden.chunks_exact(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
    assert!(distinct.len() > 100, "{} colours", distinct.len());
}

/// Bone mode draws the same character: within the golden tolerance of the VAT-mode golden image.
fn bone_mode_matches_the_golden_image<R: CrowdRenderer>(mut renderer: R) {
    let image = render(&mut renderer, RenderMode::Bone);
    let golden = std::fs::read(golden_path()).unwrap();
    assert_within_golden(&format!("{} bone mode", renderer.adapter_name()), &image, &golden);
}

per_backend!(golden_image, SIZE, SHADOW_MAP, super::golden_image_of_one_humanoid);
per_backend!(bone_mode_golden, SIZE, SHADOW_MAP, super::bone_mode_matches_the_golden_image);
