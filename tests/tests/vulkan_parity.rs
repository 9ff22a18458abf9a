//! Parity of the decode compute path between the two backends (issue 5, item 3a): the baked humanoid
//! and the morph rig (skinned and morph-only, bone mode with its live morph layer),
//! the same instance records (every clip at several phases and rates, cross-fades mid-way, one that
//! ended, moved/rotated/scaled copies) and the same time, decoded by vat-wgpu (`Renderer::decode`) and
//! by vat-vulkan (`Decoder::decode`, SPIR-V translated by naga from the same WGSL), in VAT mode with
//! every interpolation and both cross-fade variants, and in bone mode. The outputs must be
//! bit-identical; the test prints the share of bit-identical floats and the largest difference in
//! ULPs. vat-vulkan (`Renderer::decode`) runs under the Khronos validation layer with a debug messenger; any error or
//! warning it reports fails the test.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::rc::Rc;

use vat_core::container::Asset;
use vat_core::playback::Interpolation;
use vat_tests::{
    ALL_VERTEX_FORMATS, DECODE_TEST_TIME as TIME, decode_test_records as records, humanoid_vat,
    humanoid_vat_in, morph_vat, test_gpu,
};

#[test]
fn vulkan_decode_is_bit_identical_to_wgpu_under_validation() {
    let ctx = vat_tests::validated_vulkan_context();
    let gpu = test_gpu();
    println!("vat-vulkan on {:?}; vat-wgpu on {:?}", ctx.device_name(), gpu.info.name);
    let (mut total, mut same, mut worst) = (0usize, 0usize, 0i64);
    // The humanoid with its tangent frames too (VAT mode decodes them; bone mode leaves them 0).
    let rig = vat_procgen::humanoid();
    let options = vat_bake::prepare::BakeOptions { bones: true, tangents: true, ..Default::default() };
    let with_tangents = vat_bake::prepare::prepare(&rig, &options).unwrap().to_vat_bytes().unwrap();
    let assets = [
        ("humanoid", humanoid_vat()),
        ("humanoid --tangents", &with_tangents[..]),
        ("morph + skin", morph_vat(true)),
        ("morph only", morph_vat(false)),
    ];
    for (label, bytes) in assets {
        let asset = Asset::parse(bytes).unwrap();
        let has_tangents = asset.manifest().vertex_animation.as_ref().is_some_and(|v| v.tangents.is_some());
        let clips = asset.manifest().clips.len() as u32;
        let records = records(clips);
        for interpolation in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
            let mut wgpu_renderer = vat_wgpu::Renderer::new(
                &gpu.device,
                &gpu.queue,
                vat_wgpu::RendererConfig { interpolation, ..Default::default() },
            )
            .unwrap();
            let wgpu_asset = wgpu_renderer.upload(&asset).unwrap();
            let mut decoder = vat_vulkan::Renderer::new(
                &ctx,
                vat_vulkan::RendererConfig { interpolation, ..Default::default() },
            )
            .unwrap();
            let vk_asset = decoder.upload(&asset).unwrap();
            assert_eq!(vk_asset.vertex_count(), wgpu_asset.vertex_count());
            assert_eq!(vk_asset.influences(), wgpu_asset.influences());
            assert!(vk_asset.has_bones(), "{label} is baked with --bones");
            let modes = [
                (vat_wgpu::RenderMode::Vat, vat_vulkan::RenderMode::Vat),
                (vat_wgpu::RenderMode::Bone, vat_vulkan::RenderMode::Bone),
            ];
            for (wgpu_mode, vk_mode) in modes {
                for cross_fade in [true, false] {
                    let w = wgpu_renderer.decode(&wgpu_asset, &records, TIME, wgpu_mode, cross_fade).unwrap();
                    let v = decoder.decode(&vk_asset, &records, TIME, vk_mode, cross_fade).unwrap();
                    assert_eq!(v.len(), records.len() * vk_asset.vertex_count() as usize);
                    assert!(v.iter().all(|d| d.position[3] == 1.0), "decoded positions have w = 1");
                    // VAT mode decodes a unit tangent with a sign when the asset has tangent frames.
                    let decodes_tangents = has_tangents && vk_mode == vat_vulkan::RenderMode::Vat;
                    assert!(
                        v.iter().all(|d| (d.tangent[3].abs() == 1.0) == decodes_tangents),
                        "{label} {vk_mode:?}: tangents decoded exactly when baked (VAT mode)"
                    );
                    let (t, s, u) = vat_tests::decoded_parity(&w, &v);
                    println!(
                        "{label} {vk_mode:?} {interpolation:?} cross_fade={cross_fade}: {s}/{t} floats \
                     bit-identical ({:.4} %), max {u} ULP",
                        100.0 * s as f64 / t as f64
                    );
                    total += t;
                    same += s;
                    worst = worst.max(u);
                }
            }
        }
    }
    // Destroy the device too: the validation layer reports objects never destroyed as errors then.
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    println!(
        "overall: {same}/{total} floats bit-identical ({:.4} %), max {worst} ULP; validation (through \
         device destruction): {} errors, {} warnings",
        100.0 * same as f64 / total as f64,
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(same, total, "decode outputs differ between vat-wgpu and vat-vulkan (max {worst} ULP)");
    assert_eq!(messages.errors(), 0, "the validation layer reported errors (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}

/// Decode parity for every vertex format: the humanoid baked in each, VAT mode, every interpolation,
/// both cross-fade variants, bit-identical between the backends, under the validation layer.
#[test]
fn vulkan_decodes_every_vertex_format_bit_identically_to_wgpu() {
    let ctx = Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let gpu = test_gpu();
    let (mut total, mut same, mut worst) = (0usize, 0usize, 0i64);
    for format in ALL_VERTEX_FORMATS {
        let asset = Asset::parse(humanoid_vat_in(format)).unwrap();
        let records = records(asset.manifest().clips.len() as u32);
        let (mut format_total, mut format_same) = (0usize, 0usize);
        for interpolation in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
            let mut wgpu_renderer = vat_wgpu::Renderer::new(
                &gpu.device,
                &gpu.queue,
                vat_wgpu::RendererConfig { interpolation, ..Default::default() },
            )
            .unwrap();
            let wgpu_asset = wgpu_renderer.upload(&asset).unwrap();
            let mut decoder = vat_vulkan::Renderer::new(
                &ctx,
                vat_vulkan::RendererConfig { interpolation, ..Default::default() },
            )
            .unwrap();
            let vk_asset = decoder.upload(&asset).unwrap();
            assert_eq!((vk_asset.vertex_format(), wgpu_asset.vertex_format()), (format, format));
            for cross_fade in [true, false] {
                let mode = (vat_wgpu::RenderMode::Vat, vat_vulkan::RenderMode::Vat);
                let w = wgpu_renderer.decode(&wgpu_asset, &records, TIME, mode.0, cross_fade).unwrap();
                let v = decoder.decode(&vk_asset, &records, TIME, mode.1, cross_fade).unwrap();
                assert_eq!(v.len(), records.len() * vk_asset.vertex_count() as usize);
                let (t, s, u) = vat_tests::decoded_parity(&w, &v);
                format_total += t;
                format_same += s;
                worst = worst.max(u);
            }
        }
        println!(
            "{format:?}: {format_same}/{format_total} floats bit-identical ({:.4} %)",
            100.0 * format_same as f64 / format_total as f64
        );
        total += format_total;
        same += format_same;
    }
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    println!(
        "every format: {same}/{total} floats bit-identical, max {worst} ULP; validation: {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(same, total, "decode outputs differ between vat-wgpu and vat-vulkan (max {worst} ULP)");
    assert_eq!(messages.errors(), 0, "the validation layer reported errors (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}

/// An upload that fails half-way releases what it created: with allocations failed on purpose after
/// 0, 1, 2, ... successful ones (`Context::fail_allocations_after`), every step of the upload fails
/// once (staging buffers, images, buffers); afterwards a normal upload still works, and at device
/// destruction the validation layer must find no object left alive.
#[test]
fn a_vulkan_upload_that_fails_at_any_step_leaks_nothing() {
    let ctx = Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let messages = ctx.messages();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    {
        let mut renderer = vat_vulkan::Renderer::new(&ctx, vat_vulkan::RendererConfig::default()).unwrap();
        let mut failures = 0;
        for n in 0.. {
            ctx.fail_allocations_after(Some(n));
            match renderer.upload(&asset) {
                Err(vat_vulkan::Error::Device(vat_vulkan::DeviceError::Vk {
                    result: ash::vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
                    ..
                })) => {
                    failures += 1;
                }
                Err(e) => panic!("unexpected error: {e}"),
                Ok(_) => break,
            }
        }
        ctx.fail_allocations_after(None);
        println!("the upload failed on purpose at each of its {failures} allocations");
        assert!(failures >= 10, "only {failures} allocations: the fault injection does not reach the upload");
        let ok = renderer.upload(&asset).unwrap();
        assert!(ok.has_bones());
    }
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    println!(
        "validation (through device destruction): {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(messages.errors(), 0, "objects were left alive or misused (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}

/// A texture larger than the device allows is refused before anything is created, with the numbers
/// in the message (the context's limit is lowered to 1024 so that the humanoid's 4096-wide animation
/// texture exceeds it); no object is left alive.
#[test]
fn a_texture_larger_than_the_device_limit_is_refused_with_its_numbers_and_leaks_nothing() {
    let mut ctx = vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    });
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let messages = ctx.messages();
    ctx.properties.limits.max_image_dimension2_d = 1024;
    let ctx = Rc::new(ctx);
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let width = asset.manifest().vertex_animation.as_ref().unwrap().layout.width;
    {
        let config = vat_vulkan::RendererConfig { shadow_map_size: 512, ..Default::default() };
        let mut renderer = vat_vulkan::Renderer::new(&ctx, config).unwrap();
        let err = renderer.upload(&asset).unwrap_err();
        let message = err.to_string();
        println!("upload refused as intended: {message}");
        assert!(
            matches!(
                err,
                vat_vulkan::Error::Resource(vat_core::backend::gpu::ResourceError::TextureTooLarge {
                    limit: 1024,
                    ..
                })
            ),
            "{err:?}"
        );
        assert!(message.contains(&width.to_string()) && message.contains("1024"), "{message}");
    }
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    println!(
        "validation (through device destruction): {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(messages.errors(), 0, "objects were left alive or misused (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}
