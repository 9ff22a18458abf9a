//! The rigid-body mode on the GPU (issue 15): the decode path of a rigid asset (`cs_decode_rigid`,
//! the same `vat_rigid_vertex` as `vs_rigid` / `vs_rigid_depth`) against vat-core's CPU reference
//! (`reference::decode_rigid_vertex`) within 1e-5 m per coordinate, for every interpolation and both
//! cross-fade variants, over the shared decode records (clips at several phases and rates, negative
//! too, cross-fades mid-way, moved/rotated/scaled copies); the same decode bit for bit on vat-vulkan
//! (naga's SPIR-V of the same WGSL) under the validation layer; and a rendered crowd of shattering
//! walls on both backends, with shadows, the same image from CPU and GPU culling.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use std::rc::Rc;

use vat_core::backend::gpu::DecodedVertex;
use vat_core::container::{Asset, VatMode};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::reference::{RigidAnimationView, decode_rigid_vertex};
use vat_core::playback::Interpolation;
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::{
    DECODE_TEST_TIME as TIME, decode_test_records as records, per_backend, rigid_vat, save_image, test_gpu,
};

/// The stated tolerance: 10 micrometres per coordinate (positions), 1e-5 per normal component.
const TOLERANCE: f64 = 1e-5;

const INTERPOLATIONS: [Interpolation; 3] =
    [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point];

#[test]
fn rigid_decode_matches_the_cpu_reference() {
    let asset = Asset::parse(rigid_vat()).unwrap();
    assert_eq!(asset.manifest().mode(), VatMode::Rigid);
    let view = RigidAnimationView::from_asset(&asset).unwrap();
    let records = records(asset.manifest().clips.len() as u32);
    let n = asset.manifest().vertex_count as usize;
    let gpu = test_gpu();
    let mut worst = (0.0f64, 0.0f64);
    for interpolation in INTERPOLATIONS {
        let config = vat_wgpu::RendererConfig { interpolation, ..Default::default() };
        let mut renderer = vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
        let gpu_asset = renderer.upload(&asset).unwrap();
        for cross_fade in [true, false] {
            let decoded =
                renderer.decode(&gpu_asset, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade).unwrap();
            assert_eq!(decoded.len(), records.len() * n);
            for (i, r) in records.iter().enumerate() {
                let mut r = *r;
                if !cross_fade {
                    r.fade_start = f32::INFINITY;
                }
                for v in 0..n {
                    let want = decode_rigid_vertex(&view, &r, TIME, v as u32, interpolation).unwrap();
                    let got = &decoded[i * n + v];
                    for a in 0..3 {
                        let dp = (f64::from(got.position[a]) - f64::from(want.world_position[a])).abs();
                        let dn = (f64::from(got.normal[a]) - f64::from(want.world_normal[a])).abs();
                        assert!(
                            dp <= TOLERANCE && dn <= TOLERANCE,
                            "{interpolation:?} fade={cross_fade} record {i} vertex {v}: {got:?} vs {want:?}"
                        );
                        worst = (worst.0.max(dp), worst.1.max(dn));
                    }
                }
            }
        }
    }
    println!(
        "rigid decode on {}: max {:.3e} m position, {:.3e} normal component from the CPU reference",
        gpu.info.name, worst.0, worst.1
    );
}

/// (floats compared, floats bit-identical).
fn compare(a: &[DecodedVertex], b: &[DecodedVertex]) -> (usize, usize) {
    assert_eq!(a.len(), b.len());
    let mut same = 0;
    let mut total = 0;
    for (x, y) in a.iter().zip(b) {
        for (p, q) in x.position.iter().chain(&x.normal).zip(y.position.iter().chain(&y.normal)) {
            assert!(p.is_finite() && q.is_finite());
            total += 1;
            same += usize::from(p.to_bits() == q.to_bits());
        }
    }
    (total, same)
}

#[test]
fn rigid_decode_is_bit_identical_on_vulkan_under_validation() {
    let ctx = Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let gpu = test_gpu();
    let asset = Asset::parse(rigid_vat()).unwrap();
    let records = records(asset.manifest().clips.len() as u32);
    let (mut total, mut same) = (0, 0);
    for interpolation in INTERPOLATIONS {
        let mut w = vat_wgpu::Renderer::new(
            &gpu.device,
            &gpu.queue,
            vat_wgpu::RendererConfig { interpolation, ..Default::default() },
        )
        .unwrap();
        let wa = w.upload(&asset).unwrap();
        let mut v = vat_vulkan::Renderer::new(
            &ctx,
            vat_vulkan::RendererConfig { interpolation, ..Default::default() },
        )
        .unwrap();
        let va = v.upload(&asset).unwrap();
        assert_eq!(va.vertex_count(), wa.vertex_count());
        for cross_fade in [true, false] {
            let a = w.decode(&wa, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade).unwrap();
            let b = v.decode(&va, &records, TIME, vat_vulkan::RenderMode::Vat, cross_fade).unwrap();
            let (t, s) = compare(&a, &b);
            println!("rigid {interpolation:?} cross_fade={cross_fade}: {s}/{t} floats bit-identical");
            total += t;
            same += s;
        }
    }
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    assert_eq!(same, total, "rigid decode differs between vat-wgpu and vat-vulkan");
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

const SIZE: [u32; 2] = [256, 192];

/// A crowd of 40 walls in a row at different phases of the shatter, some cross-fading to the
/// rewind clip.
fn walls(asset: &Asset<'_>) -> Crowd {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    for i in 0..40u32 {
        let p = [(i % 8) as f32 * 12.0 - 42.0, 0.0, (i / 8) as f32 * 14.0];
        let id = crowd.spawn_at_phase(p, 0.1 * i as f32, 0, (i as f32 * 0.13).fract());
        if i % 5 == 2 {
            crowd.play(id, 1, 0.8);
        }
    }
    crowd.advance(0.5);
    crowd
}

fn rigid_crowd_renders_the_same_with_cpu_and_gpu_culling<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(rigid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = walls(&asset);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let camera = Camera::look_at(
        [0.0, 14.0, -30.0],
        [0.0, 1.0, 30.0],
        0.9,
        SIZE[0] as f32 / SIZE[1] as f32,
        0.1,
        300.0,
    );
    let backend = if renderer.adapter_name().starts_with("wgpu") { "wgpu" } else { "vulkan" };
    let mut images = Vec::new();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ground: true, ..Default::default() };
        let report =
            renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
        if culling == Culling::Cpu {
            assert!(
                report.draws_main > 0 && report.stats.drawn > 10 && report.stats.draws_shadow > 0,
                "{report:?}"
            );
        }
        let image = renderer.read_rgba8().unwrap();
        save_image(&format!("rigid_{culling:?}_{backend}"), SIZE, &image);
        images.push(image);
    }
    // The walls cover a good part of the picture (not just ground and sky).
    let ground_and_sky: std::collections::HashMap<[u8; 4], usize> =
        images[0].chunks_exact(4).fold(Default::default(), |mut m, px| {
            *m.entry([px[0], px[1], px[2], px[3]]).or_default() += 1;
            m
        });
    assert!(ground_and_sky.len() > 200, "only {} distinct colours: nothing drawn?", ground_and_sky.len());
    let differ = images[0].chunks_exact(4).zip(images[1].chunks_exact(4)).filter(|(a, b)| a != b).count();
    println!("{backend}: {differ} of {} pixels differ between CPU and GPU culling", SIZE[0] * SIZE[1]);
    assert!(differ <= 20, "{differ} pixels differ");
}

per_backend!(rigid_crowd_culling, SIZE, 1024, super::rigid_crowd_renders_the_same_with_cpu_and_gpu_culling);

#[test]
fn rigid_crowd_images_match_between_backends() {
    let asset = Asset::parse(rigid_vat()).unwrap();
    let camera = Camera::look_at(
        [0.0, 14.0, -30.0],
        [0.0, 1.0, 30.0],
        0.9,
        SIZE[0] as f32 / SIZE[1] as f32,
        0.1,
        300.0,
    );
    fn image<R: CrowdRenderer>(mut r: R, asset: &Asset<'_>, camera: &Camera) -> Vec<u8> {
        let gpu_asset = r.upload(asset).unwrap();
        let mut crowd = walls(asset);
        let mut gpu_crowd = r.create_crowd(&crowd).unwrap();
        let options = RenderOptions { ground: true, ..Default::default() };
        r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, camera, &options).unwrap();
        r.read_rgba8().unwrap()
    }
    let a = image(vat_tests::wgpu_offscreen(SIZE, 1024), &asset, &camera);
    let b = image(vat_tests::vulkan_offscreen(SIZE, 1024), &asset, &camera);
    let differ = a.chunks_exact(4).zip(b.chunks_exact(4)).filter(|(x, y)| x != y).count();
    println!("rigid crowd: {differ} of {} pixels differ between wgpu and Vulkan", SIZE[0] * SIZE[1]);
    assert!(differ <= 20, "{differ} pixels differ between the backends");
}
