//! Several crowds per renderer and per frame, on both backends: two crowds of two different assets
//! (the humanoid in Packed64 and in F16) drawn in one frame, each as it is drawn alone, the same on
//! wgpu and Vulkan; two crowds alternating on one renderer each draw their own records; a GPU copy
//! paired with another crowd is a clear panic.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdDraw, CrowdRenderer, Culling, RenderOptions};
use vat_tests::{humanoid_vat_in, save_image};

const SIZE: [u32; 2] = [256, 160];

fn vulkan() -> vat_vulkan::Offscreen {
    let mut r = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    r
}

fn wgpu() -> vat_wgpu::Offscreen {
    vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap()
}

/// Fails on any validation error or warning of the Vulkan renderer (through device destruction).
fn finish_validation(mut renderer: vat_vulkan::Offscreen) {
    let messages = renderer.parts().0.messages();
    drop(renderer);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "validation messages (printed above)");
}

/// A 3 x 2 block of humanoids of `bytes` centred at `x`, at depths distinct from the other block's.
fn block(bytes: &[u8], x: f32, z: f32) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..6u32 {
        let p = [x + (i % 3) as f32 * 1.1 - 1.1, 0.0, z - (i / 3) as f32 * 1.7];
        crowd.spawn_at_phase(p, 0.4 * i as f32, i % clips, 0.1 * i as f32);
    }
    crowd.advance(0.4);
    crowd
}

fn camera() -> Camera {
    Camera::look_at([0.0, 2.5, 9.0], [0.0, 0.9, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0)
}

fn background(image: &[u8]) -> &[u8] {
    &image[..4]
}

/// Pixels not of the background colour.
fn covered(image: &[u8]) -> usize {
    image.chunks_exact(4).filter(|p| *p != background(image)).count()
}

/// Renders `a` and `b` (of two assets) alone and together on `r`; checks the joint frame draws both,
/// each as alone, and returns the joint image.
fn two_assets_one_frame<R: CrowdRenderer>(r: &mut R, culling: Culling) -> Vec<u8> {
    let bytes_a = humanoid_vat_in(VertexFormat::Packed64);
    let bytes_b = humanoid_vat_in(VertexFormat::F16);
    let asset_a = r.upload(&Asset::parse(bytes_a).unwrap()).unwrap();
    let asset_b = r.upload(&Asset::parse(bytes_b).unwrap()).unwrap();
    let options = RenderOptions { culling, ..RenderOptions::default() };
    let mut alone = Vec::new();
    let mut reports = Vec::new();
    for (bytes, asset, x, z) in [(bytes_a, &asset_a, -3.2, 0.0), (bytes_b, &asset_b, 3.2, -1.0)] {
        let mut crowd = block(bytes, x, z);
        let mut gpu = r.create_crowd(&crowd).unwrap();
        reports.push(r.render_crowd(asset, &mut gpu, &mut crowd, &camera(), &options).unwrap());
        alone.push(r.read_rgba8().unwrap());
    }
    let (mut a, mut b) = (block(bytes_a, -3.2, 0.0), block(bytes_b, 3.2, -1.0));
    let (mut gpu_a, mut gpu_b) = (r.create_crowd(&a).unwrap(), r.create_crowd(&b).unwrap());
    let report = r
        .render(
            &mut [
                CrowdDraw { asset: &asset_a, gpu: &mut gpu_a, crowd: &mut a },
                CrowdDraw { asset: &asset_b, gpu: &mut gpu_b, crowd: &mut b },
            ],
            &camera(),
            &options,
        )
        .unwrap();
    let both = r.read_rgba8().unwrap();
    save_image(&format!("multi-crowd-{culling:?}"), SIZE, &both);
    assert_eq!(report.stats.simulated, 12);
    assert_eq!(report.draws_main, reports[0].draws_main + reports[1].draws_main, "{culling:?}");
    assert_eq!(report.draws_shadow, reports[0].draws_shadow + reports[1].draws_shadow, "{culling:?}");
    assert_eq!(report.dispatches, reports[0].dispatches + reports[1].dispatches, "{culling:?}");
    let [ca, cb] = [covered(&alone[0]), covered(&alone[1])];
    assert!(ca > 500 && cb > 500, "each crowd alone is drawn: {ca}, {cb}");
    // The blocks do not overlap on screen: every pixel of the joint frame is the one crowd's there.
    let bg = background(&both).to_vec();
    let mismatched = (0..both.len() / 4)
        .filter(|&p| {
            let px = |img: &[u8]| img[p * 4..p * 4 + 4].to_vec();
            let expected = if px(&alone[1]) != bg { px(&alone[1]) } else { px(&alone[0]) };
            px(&both) != expected
        })
        .count();
    assert!(mismatched <= 20, "{culling:?}: {mismatched} pixels differ from the crowds drawn alone");
    assert!(covered(&both) >= (ca + cb) * 99 / 100, "{culling:?}: both crowds are drawn");
    both
}

#[test]
fn two_crowds_of_two_assets_share_one_frame_on_both_backends() {
    let mut vk = vulkan();
    let mut wg = wgpu();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let v = two_assets_one_frame(&mut vk, culling);
        let w = two_assets_one_frame(&mut wg, culling);
        let differing = v.iter().zip(&w).filter(|(a, b)| a.abs_diff(**b) > 2).count();
        assert_eq!(differing, 0, "{culling:?}: wgpu and Vulkan differ");
    }
    finish_validation(vk);
}

/// Alternates two crowds of one asset on `r`, moving one instance of each between frames; each
/// frame must equal the same crowd state drawn from scratch by `fresh`.
fn alternating<R: CrowdRenderer>(r: &mut R, fresh: &mut R) {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let asset = Asset::parse(bytes).unwrap();
    let (gpu_asset, fresh_asset) = (r.upload(&asset).unwrap(), fresh.upload(&asset).unwrap());
    let mut crowds = [block(bytes, -1.5, 0.0), block(bytes, 1.5, -2.0)];
    let mut gpus: Vec<R::Crowd> = crowds.iter().map(|c| r.create_crowd(c).unwrap()).collect();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ..RenderOptions::default() };
        for frame in 0..4usize {
            let k = frame % 2;
            crowds[k].set_transform(frame as u32 % 6, [frame as f32 * 0.3 - 0.5, 0.0, 1.0], 0.2);
            crowds[k].advance(0.05);
            r.render_crowd(&gpu_asset, &mut gpus[k], &mut crowds[k], &camera(), &options).unwrap();
            let image = r.read_rgba8().unwrap();
            let mut copy = crowds[k].clone();
            let mut fresh_gpu = fresh.create_crowd(&copy).unwrap();
            fresh.render_crowd(&fresh_asset, &mut fresh_gpu, &mut copy, &camera(), &options).unwrap();
            let expected = fresh.read_rgba8().unwrap();
            assert!(covered(&image) > 500, "{culling:?} frame {frame}: blank");
            assert!(image == expected, "{culling:?} frame {frame}: crowd {k} drew another crowd's records");
        }
    }
}

#[test]
fn two_crowds_alternating_on_one_renderer_each_draw_their_own_records() {
    let (mut vk, mut vk_fresh) = (vulkan(), vulkan());
    alternating(&mut vk, &mut vk_fresh);
    alternating(&mut wgpu(), &mut wgpu());
    finish_validation(vk);
    finish_validation(vk_fresh);
}

#[test]
#[should_panic(expected = "create one GpuCrowd per Crowd")]
fn a_gpu_crowd_used_with_another_crowd_panics() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let mut r = wgpu();
    let gpu_asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let (mut a, mut b) = (block(bytes, 0.0, 0.0), block(bytes, 0.0, 0.0));
    let mut gpu_a = r.create_crowd(&a).unwrap();
    r.render_crowd(&gpu_asset, &mut gpu_a, &mut a, &camera(), &RenderOptions::default()).unwrap();
    let _ = r.render_crowd(&gpu_asset, &mut gpu_a, &mut b, &camera(), &RenderOptions::default());
}

#[test]
#[should_panic(expected = "create one GpuCrowd per Crowd")]
fn a_vulkan_gpu_crowd_used_with_another_crowd_panics() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let mut r = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    let gpu_asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let (a, mut b) = (block(bytes, 0.0, 0.0), block(bytes, 0.0, 0.0));
    let mut gpu_a = r.create_crowd(&a).unwrap();
    let _ = r.render_crowd(&gpu_asset, &mut gpu_a, &mut b, &camera(), &RenderOptions::default());
}
