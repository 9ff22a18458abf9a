//! Typed errors of the wgpu backend: an asset too large for the device, a device without the
//! indirect-first-instance feature, bone mode without bones, an unsupported vertex format.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::backend::frame::{FrameError, PlanError};
use vat_core::backend::gpu::ResourceError;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::CrowdRenderer;
use vat_tests::{LockedDrop, humanoid_vat, limited_gpu, test_gpu};
use vat_wgpu::{
    CrowdDraw, DeviceError, Error, HeadlessTarget, RenderMode, RenderOptions, Renderer, RendererConfig,
};

/// A device on the CPU adapter with `features` and the adapter's limits changed by `limits`.
fn device_with(
    features: wgpu::Features,
    limits: impl Fn(&mut wgpu::Limits),
) -> (LockedDrop<wgpu::Device>, LockedDrop<wgpu::Queue>) {
    let (_instance, device, queue) = limited_gpu(features, limits);
    (device, queue)
}

#[test]
fn an_asset_larger_than_the_device_allows_is_refused_before_anything_is_created() {
    let (device, queue) =
        device_with(wgpu::Features::INDIRECT_FIRST_INSTANCE, |l| l.max_texture_dimension_2d = 2048);
    let mut renderer = Renderer::new(&device, &queue, RendererConfig::default()).unwrap();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let err = renderer.upload(&asset).unwrap_err();
    println!("{err}");
    assert!(
        matches!(err, Error::Resource(ResourceError::TextureTooLarge { width: 4096, limit: 2048, .. })),
        "{err:?}"
    );
    // Storage-buffer limits are checked the same way.
    let (device, queue) =
        device_with(wgpu::Features::INDIRECT_FIRST_INSTANCE, |l| l.max_storage_buffer_binding_size = 1 << 16);
    let mut renderer = Renderer::new(&device, &queue, RendererConfig::default()).unwrap();
    let err = renderer.upload(&asset).unwrap_err();
    assert!(matches!(err, Error::Resource(ResourceError::BufferTooLarge { .. })), "{err:?}");
}

#[test]
fn a_device_without_indirect_first_instance_is_refused() {
    let (device, queue) = device_with(wgpu::Features::empty(), |_| {});
    let err = Renderer::new(&device, &queue, RendererConfig::default()).unwrap_err();
    println!("{err}");
    assert!(
        matches!(err, Error::Device(DeviceError::MissingFeature { feature: "INDIRECT_FIRST_INSTANCE", .. })),
        "{err:?}"
    );
}

#[test]
fn bone_mode_needs_bones_and_every_vertex_format_uploads() {
    let gpu = test_gpu();
    let rig = vat_procgen::humanoid();
    let mut renderer = Renderer::new(&gpu.device, &gpu.queue, RendererConfig::default()).unwrap();

    let bytes = prepare(&rig, &BakeOptions::default()).unwrap().to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    assert!(!gpu_asset.has_bones());
    let err = renderer.decode(&gpu_asset, &[Default::default()], 0.0, RenderMode::Bone, true).unwrap_err();
    assert!(matches!(err, Error::AssetHasNoBones), "{err:?}");
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    crowd.spawn([0.0; 3], 0.0, 0);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let target = HeadlessTarget::new(&gpu.device, [32, 32], RendererConfig::default()).unwrap();
    let camera = Camera::look_at([0.0, 1.0, 4.0], [0.0, 1.0, 0.0], 0.8, 1.0, 0.1, 50.0);
    let mut encoder = gpu.device.create_command_encoder(&Default::default());
    let options = RenderOptions { mode: RenderMode::Bone, ..Default::default() };
    let err = renderer
        .render(
            &mut encoder,
            &mut [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }],
            &camera,
            target.target(),
            &options,
        )
        .unwrap_err();
    // The plan error keeps its detail (which crowd), as on Vulkan (`plan_errors_keep_their_detail`).
    assert_eq!(err.plan(), Some(&PlanError::AssetHasNoBones { crowd: 0 }), "{err:?}");
    assert!(matches!(err, Error::Frame(FrameError::Plan(PlanError::AssetHasNoBones { crowd: 0 }))));
    assert!(err.to_string().contains("crowd 0"), "{err}");
    // VAT mode of the same asset renders.
    renderer
        .render(
            &mut encoder,
            &mut [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }],
            &camera,
            target.target(),
            &RenderOptions::default(),
        )
        .unwrap();
    gpu.queue.submit([encoder.finish()]);

    // Every other vertex format uploads too (they used to fail with UnsupportedFormat), and records
    // its format, which selects the decode variant.
    let options = BakeOptions { format: VertexFormat::F16, ..BakeOptions::default() };
    let bytes = prepare(&rig, &options).unwrap().to_vat_bytes().unwrap();
    let f16_asset = renderer.upload(&Asset::parse(&bytes).unwrap()).unwrap();
    assert_eq!(f16_asset.vertex_format(), VertexFormat::F16);
    assert_eq!(gpu_asset.vertex_format(), VertexFormat::Packed64);
}

vat_tests::per_backend!(a_plan_error_keeps_its_detail, [32, 32], 256, plan_error_keeps_its_detail);

/// A frame in bone mode of an asset baked without bones is the core's plan error, with the crowd it
/// names, on either backend (one error enum, `vat_core::backend::Error`, never flattened to text).
fn plan_error_keeps_its_detail<R, D>(mut r: R)
where
    R: CrowdRenderer<Error = vat_core::backend::Error<D>>,
    D: std::fmt::Debug + std::fmt::Display,
{
    let rig = vat_procgen::humanoid();
    let bytes = prepare(&rig, &BakeOptions::default()).unwrap().to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let gpu_asset = r.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    crowd.spawn([0.0; 3], 0.0, 0);
    let mut gpu_crowd = r.create_crowd(&crowd).unwrap();
    let camera = Camera::look_at([0.0, 1.0, 4.0], [0.0, 1.0, 0.0], 0.8, 1.0, 0.1, 50.0);
    let options = RenderOptions { mode: RenderMode::Bone, ..Default::default() };
    let err = r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap_err();
    assert!(
        matches!(
            err,
            vat_core::backend::Error::Frame(FrameError::Plan(PlanError::AssetHasNoBones { crowd: 0 }))
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("crowd 0"), "{err}");
}
