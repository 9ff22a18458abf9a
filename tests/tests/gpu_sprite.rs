//! The sprite mode on the GPU (issue 15): the decode path of a sprite asset (`cs_decode_sprite`, the
//! same `vat_sprite_vertex` as `vs_sprite` / `vs_sprite_depth`) against vat-core's CPU reference
//! (`reference::decode_sprite_corner`) for every interpolation and both cross-fade variants (a
//! sprite ignores the fade), over the shared decode records; dead slots all zero; the same decode
//! bit for bit on vat-vulkan under the validation layer; and a rendered ring of fountains on both
//! backends, the same image from CPU and GPU culling and from the two backends.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use std::rc::Rc;

use vat_core::container::{Asset, VatMode};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::reference::{SpriteAnimationView, decode_sprite_corner};
use vat_core::playback::Interpolation;
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::{
    DECODE_TEST_TIME as TIME, decode_test_records as records, per_backend, save_image, sprite_vat, test_gpu,
};

/// The stated tolerance: 10 micrometres per coordinate (positions), 1e-5 per normal and tangent
/// component (the GPU's `sin`/`cos` of the yaw and of the particle's rotation, its division and
/// square root, may differ from the CPU's in the last bits).
const TOLERANCE: f64 = 1e-5;

const INTERPOLATIONS: [Interpolation; 3] =
    [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point];

/// `decode()` draws with a zeroed frame: the cards face the origin.
const DECODE_CAMERA: [f32; 3] = [0.0; 3];

#[test]
fn sprite_decode_matches_the_cpu_reference() {
    let gpu = test_gpu();
    let asset = Asset::parse(sprite_vat()).unwrap();
    assert_eq!(asset.manifest().mode(), VatMode::Sprite);
    let view = SpriteAnimationView::from_asset(&asset).unwrap();
    let records = records(asset.manifest().clips.len() as u32);
    let n = asset.manifest().vertex_count as usize;
    let (mut worst, mut dead, mut live) = ([0.0f64; 3], 0usize, 0usize);
    for interpolation in INTERPOLATIONS {
        let config = vat_wgpu::RendererConfig { interpolation, ..Default::default() };
        let mut renderer = vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
        let gpu_asset = renderer.upload(&asset).unwrap();
        for cross_fade in [true, false] {
            let decoded =
                renderer.decode(&gpu_asset, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade).unwrap();
            assert_eq!(decoded.len(), records.len() * n);
            for (i, r) in records.iter().enumerate() {
                for v in 0..n {
                    let got = &decoded[i * n + v];
                    let want =
                        decode_sprite_corner(&view, r, TIME, v as u32, interpolation, DECODE_CAMERA).unwrap();
                    let Some(want) = want else {
                        assert_eq!(got.position, [0.0; 4], "record {i} corner {v}: a dead slot drawn");
                        dead += 1;
                        continue;
                    };
                    live += 1;
                    assert_eq!((got.position[3], got.tangent[3]), (1.0, 1.0));
                    for a in 0..3 {
                        let d = [
                            (f64::from(got.position[a]) - f64::from(want.world_position[a])).abs(),
                            (f64::from(got.normal[a]) - f64::from(want.world_normal[a])).abs(),
                            (f64::from(got.tangent[a]) - f64::from(want.world_tangent[a])).abs(),
                        ];
                        assert!(
                            d.iter().all(|&d| d <= TOLERANCE),
                            "{interpolation:?} fade={cross_fade} record {i} corner {v}: {got:?} vs {want:?}"
                        );
                        for k in 0..3 {
                            worst[k] = worst[k].max(d[k]);
                        }
                    }
                }
            }
        }
    }
    // The records show moments with live and dead slots: both kinds of corner occur.
    assert!(dead > 0 && live > 0, "{live} live, {dead} dead");
    println!(
        "sprite decode on {}: {live} live and {dead} dead corner decodes; max {:.3e} m position, {:.3e} \
         normal and {:.3e} tangent component from the CPU reference",
        gpu.info.name, worst[0], worst[1], worst[2]
    );
}

#[test]
fn sprite_decode_is_bit_identical_on_vulkan_under_validation() {
    let ctx = Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let gpu = test_gpu();
    let asset = Asset::parse(sprite_vat()).unwrap();
    let records = records(asset.manifest().clips.len() as u32);
    let mut w =
        vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, vat_wgpu::RendererConfig::default()).unwrap();
    let wa = w.upload(&asset).unwrap();
    let mut v = vat_vulkan::Renderer::new(&ctx, vat_vulkan::RendererConfig::default()).unwrap();
    let va = v.upload(&asset).unwrap();
    let a = w.decode(&wa, &records, TIME, vat_wgpu::RenderMode::Vat, true).unwrap();
    let b = v.decode(&va, &records, TIME, vat_vulkan::RenderMode::Vat, true).unwrap();
    assert_eq!(a.len(), b.len());
    let differ = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| {
            x.position
                .iter()
                .chain(&x.normal)
                .chain(&x.tangent)
                .zip(y.position.iter().chain(&y.normal).chain(&y.tangent))
                .any(|(p, q)| p.to_bits() != q.to_bits())
        })
        .count();
    println!("sprite decode: {differ} of {} corners differ between vat-wgpu and vat-vulkan", a.len());
    drop((v, va));
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    assert_eq!(differ, 0, "sprite decode differs between vat-wgpu and vat-vulkan");
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

const SIZE: [u32; 2] = [256, 192];

/// Nine fountains in a 3 x 3 grid, each at its own moment of the loop.
fn fountains(asset: &Asset<'_>) -> Crowd {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    for i in 0..9u32 {
        let p = [(i % 3) as f32 * 2.2 - 2.2, 0.0, (i / 3) as f32 * 2.2];
        crowd.spawn_at_phase(p, 0.5 * i as f32, 0, 0.11 * i as f32);
    }
    crowd.advance(0.1);
    crowd
}

fn camera() -> Camera {
    Camera::look_at([0.0, 2.2, -5.5], [0.0, 1.0, 2.2], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0)
}

/// Pixels of the fountains' water: bluer than green (the ground is greener than blue, its shadows
/// too) and not the sky's colour (the sky is one flat colour: the top-left pixel's).
fn water_pixels(image: &[u8]) -> usize {
    let sky = &image[..4];
    image.chunks_exact(4).filter(|p| p[2] > p[1] && *p != sky).count()
}

fn sprite_crowd_renders_the_same_with_cpu_and_gpu_culling<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(sprite_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = fountains(&asset);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let backend = if renderer.adapter_name().starts_with("wgpu") { "wgpu" } else { "vulkan" };
    let mut images = Vec::new();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ground: true, ..Default::default() };
        let report =
            renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(), &options).unwrap();
        if culling == Culling::Cpu {
            assert!(
                report.draws_main > 0 && report.stats.drawn == 9 && report.stats.draws_shadow > 0,
                "{report:?}"
            );
        }
        let image = renderer.read_rgba8().unwrap();
        save_image(&format!("sprite_{culling:?}_{backend}"), SIZE, &image);
        images.push(image);
    }
    let water = water_pixels(&images[0]);
    assert!(water > (SIZE[0] * SIZE[1] / 100) as usize, "only {water} water pixels: no particles drawn?");
    let differ = images[0].chunks_exact(4).zip(images[1].chunks_exact(4)).filter(|(a, b)| a != b).count();
    println!(
        "{backend}: {water} particle pixels; {differ} of {} pixels differ between CPU and GPU culling",
        SIZE[0] * SIZE[1]
    );
    assert!(differ <= 20, "{differ} pixels differ");
}

per_backend!(sprite_crowd_culling, SIZE, 1024, super::sprite_crowd_renders_the_same_with_cpu_and_gpu_culling);

#[test]
fn sprite_crowd_images_match_between_backends() {
    let asset = Asset::parse(sprite_vat()).unwrap();
    fn image<R: CrowdRenderer>(mut r: R, asset: &Asset<'_>) -> Vec<u8> {
        let gpu_asset = r.upload(asset).unwrap();
        let mut crowd = fountains(asset);
        let mut gpu_crowd = r.create_crowd(&crowd).unwrap();
        let options = RenderOptions { ground: true, ..Default::default() };
        r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(), &options).unwrap();
        r.read_rgba8().unwrap()
    }
    let a = image(vat_tests::wgpu_offscreen(SIZE, 1024), &asset);
    let b = image(vat_tests::vulkan_offscreen(SIZE, 1024), &asset);
    let differ = a.chunks_exact(4).zip(b.chunks_exact(4)).filter(|(x, y)| x != y).count();
    println!("sprite crowd: {differ} of {} pixels differ between wgpu and Vulkan", SIZE[0] * SIZE[1]);
    assert!(differ <= 20, "{differ} pixels differ between the backends");
}
