//! Device requirements as API: a host that opens its own device with exactly what vat asks for
//! (`vat_wgpu::required_features` / `required_limits`, `vat_vulkan::DeviceRequirements`) can render
//! a crowd, and one that asks for less is told which limit is too low.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // the physical-device check takes raw handles; SAFETY comments below

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_tests::humanoid_vat_in;

/// A device on the software adapter with `limits` and `features` exactly.
fn wgpu_device(limits: wgpu::Limits, features: wgpu::Features) -> (wgpu::Device, wgpu::Queue) {
    let instance = vat_wgpu::vat_instance();
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let adapter = adapters.into_iter().find(|a| a.get_info().device_type == wgpu::DeviceType::Cpu).unwrap();
    assert!(limits.check_limits(&adapter.limits()), "the software adapter offers vat's limits");
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("host device"),
        required_features: features,
        required_limits: limits,
        ..Default::default()
    }))
    .unwrap()
}

#[test]
fn a_host_device_with_exactly_vats_requirements_renders_on_wgpu() {
    let (device, queue) = wgpu_device(vat_wgpu::required_limits(), vat_wgpu::required_features());
    let config = vat_wgpu::RendererConfig::default();
    let mut renderer = vat_wgpu::Renderer::new(&device, &queue, config).unwrap();
    let asset = Asset::parse(humanoid_vat_in(VertexFormat::Packed64)).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    crowd.spawn([0.0, 0.0, 0.0], 0.0, 0);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let target = vat_wgpu::HeadlessTarget::new(&device, [96, 96], config).unwrap();
    let camera = Camera::look_at([0.0, 1.2, 3.5], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 50.0);
    for culling in [vat_wgpu::Culling::Cpu, vat_wgpu::Culling::Gpu] {
        let mut encoder = device.create_command_encoder(&Default::default());
        let mut crowds = [vat_wgpu::CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
        let options = vat_wgpu::RenderOptions { culling, ..Default::default() };
        let report = renderer.render(&mut encoder, &mut crowds, &camera, target.target(), &options).unwrap();
        queue.submit([encoder.finish()]);
        let rgba = target.read_rgba8(&device, &queue).unwrap();
        let background = rgba[..4].to_vec();
        let drawn = rgba.chunks(4).filter(|p| *p != background.as_slice()).count();
        assert!(drawn > 200, "{culling:?}: the character is drawn ({drawn} pixels, {report:?})");
    }
}

#[test]
fn a_host_device_below_vats_limits_is_refused_by_name_on_wgpu() {
    let mut limits = vat_wgpu::required_limits();
    limits.max_storage_buffers_per_shader_stage -= 1;
    let (device, queue) = wgpu_device(limits.clone(), vat_wgpu::required_features());
    let err = vat_wgpu::Renderer::new(&device, &queue, Default::default()).unwrap_err();
    let wanted = limits.max_storage_buffers_per_shader_stage as u64;
    assert!(
        matches!(err, vat_wgpu::Error::LimitTooLow { limit: "max_storage_buffers_per_shader_stage", available, .. } if available == wanted),
        "{err}"
    );
    let (device, queue) = wgpu_device(vat_wgpu::required_limits(), wgpu::Features::empty());
    let err = vat_wgpu::Renderer::new(&device, &queue, Default::default()).unwrap_err();
    assert!(err.to_string().contains("INDIRECT_FIRST_INSTANCE"), "{err}");
}

#[test]
fn the_software_device_meets_vats_vulkan_requirements() {
    let ctx = vat_vulkan::Context::headless().unwrap();
    let requirements = vat_vulkan::DeviceRequirements::offscreen();
    // SAFETY: the context's physical device is of its live instance.
    unsafe { requirements.check(&ctx.instance, ctx.physical_device) }.unwrap();
    // A requirement the device cannot meet is named.
    let future =
        vat_vulkan::DeviceRequirements { api_version: ash::vk::make_api_version(0, 9, 0, 0), ..requirements };
    // SAFETY: as above.
    let err = unsafe { future.check(&ctx.instance, ctx.physical_device) }.unwrap_err();
    assert!(err.to_string().contains("Vulkan 9.0"), "{err}");
}
