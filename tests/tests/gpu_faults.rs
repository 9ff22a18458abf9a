//! GPU faults on the wgpu backend: an upload that fails part-way (at every step, forced by the
//! `fault-injection` hook) or up front (a texture over the device limit) leaves no wgpu resource
//! alive, counted by wgpu's own registry report; a lost device is a typed error, and a renderer
//! rebuilt on a new device renders the same asset. Both backends open their devices under
//! `vat_core::backend::device_lifetime_lock` (the Vulkan loader races device creation against destruction).

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, RenderOptions};
use vat_tests::{LockedDrop, humanoid_vat, limited_gpu};
use vat_wgpu::{DeviceError, Error, Offscreen, Renderer, RendererConfig};

/// An instance with a device on its CPU adapter (the adapter's limits changed by `limits`).
fn instance_and_device(
    limits: impl Fn(&mut wgpu::Limits),
) -> (LockedDrop<wgpu::Instance>, LockedDrop<wgpu::Device>, LockedDrop<wgpu::Queue>) {
    limited_gpu(wgpu::Features::INDIRECT_FIRST_INSTANCE, limits)
}

/// Live wgpu objects the application holds, by kind: (buffers, textures, views, bind groups, samplers).
fn live(instance: &wgpu::Instance) -> [usize; 5] {
    let report = instance.generate_report().expect("a wgpu-core instance has a report");
    let h = &report.hub;
    [
        h.buffers.num_kept_from_user,
        h.textures.num_kept_from_user,
        h.texture_views.num_kept_from_user,
        h.bind_groups.num_kept_from_user,
        h.samplers.num_kept_from_user,
    ]
}

#[test]
fn an_upload_failing_at_any_step_leaves_nothing_alive() {
    let (instance, device, queue) = instance_and_device(|_| {});
    let mut renderer = Renderer::new(&device, &queue, RendererConfig::default()).unwrap();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let before = live(&instance);
    for step in 0..Renderer::UPLOAD_STEPS {
        renderer.inject_upload_fault(Some(step));
        let err = renderer.upload(&asset).unwrap_err();
        assert!(matches!(&err, Error::Device(DeviceError::Wgpu(m)) if m.contains("injected")), "{err:?}");
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        assert_eq!(live(&instance), before, "step {step}: a failed upload left objects alive");
    }
    // The hook off, the same renderer uploads, and the asset's objects are counted (the oracle
    // sees them), then released with the asset.
    renderer.inject_upload_fault(None);
    let gpu_asset = renderer.upload(&asset).unwrap();
    let during = live(&instance);
    // The asset keeps its index buffer and bind groups (which keep the textures, views and the
    // other buffers alive inside wgpu).
    assert!(during[0] > before[0] && during[3] > before[3], "{before:?} -> {during:?}");
    drop(gpu_asset);
    assert_eq!(live(&instance), before);
    println!(
        "live objects (buffers, textures, views, bind groups, samplers): {before:?} after every failed upload"
    );
}

#[test]
fn an_over_limit_texture_is_refused_before_anything_is_created() {
    let (instance, device, queue) = instance_and_device(|l| l.max_texture_dimension_2d = 2048);
    let mut renderer = Renderer::new(&device, &queue, RendererConfig::default()).unwrap();
    let before = live(&instance);
    let err = renderer.upload(&Asset::parse(humanoid_vat()).unwrap()).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("4096") && message.contains("2048"), "{message}");
    assert_eq!(live(&instance), before);
}

#[test]
fn a_lost_device_is_a_typed_error_and_a_new_device_renders_the_same_asset() {
    let bytes = humanoid_vat();
    let asset = Asset::parse(bytes).unwrap();
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest()).unwrap();
    let mut crowd = Crowd::new(crowd_asset, CrowdConfig::default());
    for k in 0..5 {
        crowd.spawn([k as f32 - 2.0, 0.0, 0.0], 0.0, k % 3);
    }
    let camera = Camera::look_at([0.0, 1.5, 6.0], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 100.0);
    let options = RenderOptions::default();

    let mut first = Offscreen::new([96, 96], RendererConfig::default()).unwrap();
    let gpu_asset = first.upload(&asset).unwrap();
    let mut gpu_crowd = first.create_crowd(&crowd).unwrap();
    first.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    let before = first.read_rgba8().unwrap();

    first.parts().0.destroy();
    let err = first.wait().unwrap_err();
    assert!(matches!(err, Error::DeviceLost(_)), "{err:?}");
    let err = first.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap_err();
    println!("{err}");
    assert!(matches!(err, Error::DeviceLost(_)), "{err:?}");
    assert!(err.to_string().contains("upload the asset again"));
    assert!(matches!(first.read_rgba8(), Err(Error::DeviceLost(_))));
    assert!(matches!(first.upload(&asset), Err(Error::DeviceLost(_))));
    drop(gpu_crowd);
    drop(gpu_asset);
    drop(first);

    // Rebuilt from the same bytes on a new device: the same image.
    let mut second = Offscreen::new([96, 96], RendererConfig::default()).unwrap();
    let gpu_asset = second.upload(&asset).unwrap();
    let mut gpu_crowd = second.create_crowd(&crowd).unwrap();
    second.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    let after = second.read_rgba8().unwrap();
    assert_eq!(before, after, "the rebuilt renderer draws the same frame");
    let background = &before[..4];
    assert!(before.chunks_exact(4).filter(|p| *p != background).count() > 200, "the frame is not blank");
}

/// Both backends' device constructors wait for `vat_core::backend::device_lifetime_lock`: while this
/// thread holds it, a device opened on another thread is not ready; once released, it is.
#[test]
fn devices_are_opened_under_the_device_lifetime_lock_on_both_backends() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for backend in ["wgpu", "vulkan"] {
        let opened = AtomicBool::new(false);
        std::thread::scope(|s| {
            let lock = vat_core::backend::device_lifetime_lock();
            let opener = s.spawn(|| {
                match backend {
                    "wgpu" => drop(vat_wgpu::headless_device().unwrap()),
                    _ => drop(vat_vulkan::Context::headless().unwrap()),
                }
                opened.store(true, Ordering::SeqCst);
            });
            // Opening a device on lavapipe takes milliseconds; a constructor that ignored the lock
            // would be done long before this.
            std::thread::sleep(std::time::Duration::from_millis(500));
            assert!(!opened.load(Ordering::SeqCst), "{backend}: a device was opened while the lock was held");
            drop(lock);
            opener.join().unwrap();
        });
        assert!(opened.load(Ordering::SeqCst), "{backend}");
    }
}

/// The address space this process has mapped, bytes (`VmSize` of `/proc/self/status`).
fn address_space_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Sets this process's soft address-space limit (`RLIMIT_AS`; `None`: unlimited) with util-linux's
/// `prlimit`, without `unsafe`. On lavapipe device memory is host memory, so the limit makes the
/// device's allocations fail, as `ulimit -v` did in the reported `vat render`.
fn limit_address_space(bytes: Option<u64>) {
    let soft = bytes.map_or_else(|| "unlimited".to_owned(), |b| b.to_string());
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &std::process::id().to_string(), &format!("--as={soft}:")])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit failed");
}

/// Headroom left above what the child has mapped when it limits itself: far less than each failing
/// request below (an 11 MB asset's textures, 128 MiB of decoded vertices, a 16384² target, a
/// crowd's 30 MB of buffers), far more than the small allocations around them.
const HEADROOM: u64 = 32 << 20;

/// Set in the child process of [`running_out_of_device_memory_is_a_typed_error_not_a_panic`].
const CHILD: &str = "VAT_TESTS_OUT_OF_MEMORY_CHILD";

/// Device allocations that fail for want of memory are [`DeviceError::OutOfDeviceMemory`] on a
/// host's device, whose uncaptured-error handler is wgpu's default (a panic): an asset upload (whose
/// buffers `create_buffer_init` used to make, which panics when the device cannot create them), a
/// decode's output and read-back buffers and a crowd's buffers. The test runs
/// itself again in a child process that limits its own address space once the device is open; the
/// parent checks that the child ran every step and that nothing panicked.
#[test]
fn running_out_of_device_memory_is_a_typed_error_not_a_panic() {
    if std::env::var_os(CHILD).is_some() {
        out_of_memory_child();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["running_out_of_device_memory_is_a_typed_error_not_a_panic", "--exact", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("child stdout:\n{stdout}\nchild stderr:\n{stderr}");
    assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "the child panicked");
    assert!(out.status.success(), "the child failed: {:?}", out.status);
    assert!(stdout.contains("every step failed with a typed error"), "the child did not run every step");
}

/// The child's steps, each allocation failing under the address-space limit.
fn out_of_memory_child() {
    let (_instance, device, queue) = instance_and_device(|_| {});
    let config = RendererConfig { shadow_map_size: 64, ..RendererConfig::default() };
    let mut renderer = Renderer::new(&device, &queue, config).unwrap();
    // An asset of 27 MB of animation textures: the humanoid sampled at 120 fps.
    let options = vat_bake::prepare::BakeOptions { fps: 120.0, bones: true, ..Default::default() };
    let big = vat_bake::prepare::prepare(&vat_procgen::humanoid(), &options).unwrap();
    let big = big.to_vat_bytes().unwrap();
    let big = Asset::parse(&big).unwrap();
    let small = Asset::parse(humanoid_vat()).unwrap();
    let gpu_small = renderer.upload(&small).unwrap();
    // As many records as make 128 MiB of decoded vertices (the storage-buffer limit allows it).
    let per_record = u64::from(gpu_small.vertex_count()) * 48;
    let records = vec![vat_core::instance::InstanceRecord::default(); ((128u64 << 20) / per_record) as usize];
    // The decode pipeline is compiled before the limit (the driver's compiler needs memory too).
    renderer.decode(&gpu_small, &records[..1], 0.0, vat_wgpu::RenderMode::Vat, false).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(small.manifest()).unwrap(), CrowdConfig::default());
    for k in 0..300_000u32 {
        crowd.spawn([(k % 600) as f32, 0.0, (k / 600) as f32], 0.0, k % 3);
    }
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let camera = Camera::look_at([300.0, 50.0, -50.0], [300.0, 0.0, 250.0], 0.8, 1.0, 0.1, 1000.0);
    // No shadows, CPU culling: the frame fails in its uploads, before it would compile a pipeline.
    let options = RenderOptions { shadows: false, ..RenderOptions::default() };
    let target = vat_wgpu::HeadlessTarget::new(&device, [64, 64], config).unwrap();

    limit_address_space(Some(address_space_bytes() + HEADROOM));
    let is_oom = |e: &Error| matches!(e, Error::Device(DeviceError::OutOfDeviceMemory { .. }));
    let err = renderer.decode(&gpu_small, &records, 0.0, vat_wgpu::RenderMode::Vat, false).unwrap_err();
    println!("decode: {err}");
    assert!(is_oom(&err), "{err:?}");
    let mut encoder = device.create_command_encoder(&Default::default());
    let mut draws = [vat_wgpu::CrowdDraw { asset: &gpu_small, gpu: &mut gpu_crowd, crowd: &mut crowd }];
    let err = renderer.render(&mut encoder, &mut draws, &camera, target.target(), &options).unwrap_err();
    println!("crowd: {err}");
    assert!(is_oom(&err), "{err:?}");
    drop(encoder);
    // Last: wgpu-core loses the device when a staging copy of the upload cannot be allocated.
    let err = renderer.upload(&big).unwrap_err();
    println!("upload: {err}");
    assert!(is_oom(&err), "{err:?}");
    limit_address_space(None);
    println!("every step failed with a typed error");
}
