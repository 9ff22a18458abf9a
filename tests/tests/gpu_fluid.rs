//! The fluid mode on the GPU (issue 15): the decode path of a fluid asset (`cs_decode_fluid`, the
//! same `vat_fluid_vertex` as `vs_fluid` / `vs_fluid_depth`) against vat-core's CPU reference
//! (`reference::decode_fluid_vertex`) for every interpolation (a fluid ignores it: frames are never
//! blended) and both cross-fade variants, over the shared decode records, in two vertex formats
//! (Packed64, one texture; Split8, three); collapsed corners all zero; the same decode bit for bit
//! on vat-vulkan under the validation layer; and a rendered field of splashes on both backends, the
//! same image from CPU and GPU culling and from the two backends.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use std::rc::Rc;

use vat_core::container::{Asset, VatMode};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::format::reference::{FluidAnimationView, decode_fluid_vertex};
use vat_core::playback::Interpolation;
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::{
    DECODE_TEST_TIME as TIME, decode_test_records as records, fluid_vat, per_backend, save_image, test_gpu,
};

/// The stated tolerance: 10 micrometres per coordinate (positions), 1e-5 per normal component
/// (the GPU's `sin`/`cos` of the yaw may differ from the CPU's in the last bits).
const TOLERANCE: f64 = 1e-5;

const INTERPOLATIONS: [Interpolation; 3] =
    [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point];

#[test]
fn fluid_decode_matches_the_cpu_reference() {
    let gpu = test_gpu();
    for format in [VertexFormat::Packed64, VertexFormat::Split8] {
        let asset = Asset::parse(fluid_vat(format)).unwrap();
        assert_eq!(asset.manifest().mode(), VatMode::Fluid);
        let view = FluidAnimationView::from_asset(&asset).unwrap();
        let records = records(asset.manifest().clips.len() as u32);
        let n = asset.manifest().vertex_count as usize;
        let (mut worst, mut collapsed, mut live) = ((0.0f64, 0.0f64), 0usize, 0usize);
        for interpolation in INTERPOLATIONS {
            let config = vat_wgpu::RendererConfig { interpolation, ..Default::default() };
            let mut renderer = vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
            let gpu_asset = renderer.upload(&asset).unwrap();
            for cross_fade in [true, false] {
                let decoded = renderer
                    .decode(&gpu_asset, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade)
                    .unwrap();
                assert_eq!(decoded.len(), records.len() * n);
                for (i, r) in records.iter().enumerate() {
                    for v in 0..n {
                        let got = &decoded[i * n + v];
                        let Some(want) = decode_fluid_vertex(&view, r, TIME, v as u32).unwrap() else {
                            assert_eq!(
                                got.position, [0.0; 4],
                                "{format:?} record {i} corner {v}: not collapsed"
                            );
                            collapsed += 1;
                            continue;
                        };
                        live += 1;
                        assert_eq!(got.position[3], 1.0);
                        for a in 0..3 {
                            let dp = (f64::from(got.position[a]) - f64::from(want.world_position[a])).abs();
                            let dn = (f64::from(got.normal[a]) - f64::from(want.world_normal[a])).abs();
                            assert!(
                                dp <= TOLERANCE && dn <= TOLERANCE,
                                "{format:?} {interpolation:?} fade={cross_fade} record {i} corner {v}: {got:?} vs {want:?}"
                            );
                            worst = (worst.0.max(dp), worst.1.max(dn));
                        }
                    }
                }
            }
        }
        // The records show frames with different triangle counts: both kinds of corner occur.
        assert!(collapsed > 0 && live > 0, "{live} live, {collapsed} collapsed");
        println!(
            "fluid {format:?} decode on {}: {live} live and {collapsed} collapsed corner decodes; max {:.3e} m \
             position, {:.3e} normal component from the CPU reference",
            gpu.info.name, worst.0, worst.1
        );
    }
}

#[test]
fn fluid_decode_is_bit_identical_on_vulkan_under_validation() {
    let ctx = Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let gpu = test_gpu();
    let asset = Asset::parse(fluid_vat(VertexFormat::Packed64)).unwrap();
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
                .zip(y.position.iter().chain(&y.normal))
                .any(|(p, q)| p.to_bits() != q.to_bits())
        })
        .count();
    println!("fluid decode: {differ} of {} corners differ between vat-wgpu and vat-vulkan", a.len());
    drop((v, va));
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    assert_eq!(differ, 0, "fluid decode differs between vat-wgpu and vat-vulkan");
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

const SIZE: [u32; 2] = [256, 192];

/// Twelve splashes in a 4 x 3 grid, each at its own moment of the splash.
fn splashes(asset: &Asset<'_>) -> Crowd {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    for i in 0..12u32 {
        let p = [(i % 4) as f32 * 2.6 - 3.9, 0.0, (i / 4) as f32 * 2.6];
        crowd.spawn_at_phase(p, 0.4 * i as f32, 0, 0.15 + 0.07 * i as f32);
    }
    crowd.advance(0.1);
    crowd
}

fn camera() -> Camera {
    Camera::look_at([0.0, 4.5, -6.5], [0.0, 0.2, 2.4], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0)
}

fn fluid_crowd_renders_the_same_with_cpu_and_gpu_culling<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(fluid_vat(VertexFormat::Packed64)).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = splashes(&asset);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let backend = if renderer.adapter_name().starts_with("wgpu") { "wgpu" } else { "vulkan" };
    let mut images = Vec::new();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ground: true, ..Default::default() };
        let report =
            renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(), &options).unwrap();
        if culling == Culling::Cpu {
            assert!(
                report.draws_main > 0 && report.stats.drawn == 12 && report.stats.draws_shadow > 0,
                "{report:?}"
            );
        }
        let image = renderer.read_rgba8().unwrap();
        save_image(&format!("fluid_{culling:?}_{backend}"), SIZE, &image);
        images.push(image);
    }
    // The liquid's blue covers a good part of the picture (not just ground and sky).
    let blue = images[0].chunks_exact(4).filter(|p| p[2] > p[0].saturating_add(40) && p[2] > p[1]).count();
    assert!(blue > (SIZE[0] * SIZE[1] / 20) as usize, "only {blue} blue pixels: no liquid drawn?");
    let differ = images[0].chunks_exact(4).zip(images[1].chunks_exact(4)).filter(|(a, b)| a != b).count();
    println!(
        "{backend}: {blue} liquid pixels; {differ} of {} pixels differ between CPU and GPU culling",
        SIZE[0] * SIZE[1]
    );
    assert!(differ <= 20, "{differ} pixels differ");
}

per_backend!(fluid_crowd_culling, SIZE, 1024, super::fluid_crowd_renders_the_same_with_cpu_and_gpu_culling);

#[test]
fn fluid_crowd_images_match_between_backends() {
    let asset = Asset::parse(fluid_vat(VertexFormat::Packed64)).unwrap();
    fn image<R: CrowdRenderer>(mut r: R, asset: &Asset<'_>) -> Vec<u8> {
        let gpu_asset = r.upload(asset).unwrap();
        let mut crowd = splashes(asset);
        let mut gpu_crowd = r.create_crowd(&crowd).unwrap();
        let options = RenderOptions { ground: true, ..Default::default() };
        r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(), &options).unwrap();
        r.read_rgba8().unwrap()
    }
    let a = image(vat_tests::wgpu_offscreen(SIZE, 1024), &asset);
    let b = image(vat_tests::vulkan_offscreen(SIZE, 1024), &asset);
    let differ = a.chunks_exact(4).zip(b.chunks_exact(4)).filter(|(x, y)| x != y).count();
    println!("fluid crowd: {differ} of {} pixels differ between wgpu and Vulkan", SIZE[0] * SIZE[1]);
    assert!(differ <= 20, "{differ} pixels differ between the backends");
}
