//! GPU frame times of `vat_vulkan::Offscreen` (`CrowdRenderer::last_gpu_time_ms`): a timestamp query
//! pool of 2 brackets every frame when the queue family writes timestamps (lavapipe does). The test
//! renders frames in both culling modes and checks the time is `Some`, finite and positive after
//! each, and `None` before the first frame; on a device without timestamps (`gpu_timing()` false) it
//! checks the value is always `None` instead.
//!
//! vat-vulkan runs under the Khronos validation layer with a debug messenger; any error or warning it
//! reports, through device destruction, fails the test.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::humanoid_vat;

#[test]
fn vulkan_offscreen_reports_gpu_frame_times_under_validation() {
    const SIZE: [u32; 2] = [96, 64];
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    });
    let messages = {
        let (ctx, _) = vk.parts();
        assert!(
            ctx.validation_enabled() && ctx.messenger_enabled(),
            "the Khronos validation layer is not installed (apt-get install vulkan-validationlayers, \
             or `cargo xtask deps`): vat-vulkan tests must run under it"
        );
        ctx.messages()
    };
    let timing = vk.gpu_timing();
    println!("{}: GPU timing {}", vk.adapter_name(), if timing { "supported" } else { "unsupported" });
    assert_eq!(vk.last_gpu_time_ms(), None, "no frame was rendered yet");

    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = vk.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let mut gpu_crowd = vk.create_crowd(&crowd).unwrap();
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..64u32 {
        let p = [(i % 8) as f32 * 2.0 - 7.0, 0.0, (i / 8) as f32 * 2.0 - 7.0];
        crowd.spawn_at_phase(p, i as f32 * 0.5, i % clips, (i as f32 * 0.13).fract());
    }
    let camera =
        Camera::look_at([0.0, 8.0, 16.0], [0.0, 1.0, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 200.0);
    for culling in [Culling::Cpu, Culling::Gpu, Culling::Gpu] {
        let options = RenderOptions { culling, shadows: true, ..Default::default() };
        vk.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
        let ms = vk.last_gpu_time_ms();
        println!("{culling:?}: GPU time {ms:?} ms");
        if timing {
            let ms = ms.expect("a timed device reports the frame's GPU time");
            assert!(ms.is_finite() && ms > 0.0, "GPU time {ms} ms is not finite and positive");
            assert!(ms < 60_000.0, "GPU time {ms} ms is implausible for a 96x64 frame");
            // Read again: the same frame's time, still available.
            assert_eq!(vk.last_gpu_time_ms(), Some(ms));
        } else {
            assert_eq!(ms, None, "a device without timestamps reports no GPU time");
        }
        crowd.advance(1.0 / 30.0);
    }
    // The image is still readable after the timing read-backs (nothing left pending or broken).
    assert_eq!(vk.read_rgba8().unwrap().len(), (SIZE[0] * SIZE[1] * 4) as usize);

    drop(gpu_asset);
    drop(vk);
    println!(
        "validation (through device destruction): {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(messages.errors(), 0, "the validation layer reported errors (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}
