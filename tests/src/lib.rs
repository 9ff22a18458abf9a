//! # vat-tests
//!
//! Cross-crate and cross-backend tests of the workspace live in `tests/tests/`. This library holds what
//! more than one of them needs: opening a wgpu device on the software Vulkan driver, and reading a
//! buffer back.

use std::sync::mpsc;

/// A wgpu device for tests, on a Vulkan adapter (the CPU adapter, lavapipe, when there is one).
pub struct TestGpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter is (printed by tests, so figures name the driver).
    pub info: wgpu::AdapterInfo,
}

/// Opens a device on a Vulkan adapter, preferring a CPU adapter (Mesa's lavapipe, which CI always
/// installs). Panics with the install command when there is none: GPU tests never pass quietly without
/// an adapter.
pub fn test_gpu() -> TestGpu {
    // wgpu's DEBUG flag embeds the WGSL in the SPIR-V, which bookworm's validation layer misreports.
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::DEBUG;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter = adapters.into_iter().next().unwrap_or_else(|| {
        panic!(
            "no Vulkan adapter found: install Mesa's software Vulkan driver \
             (`apt-get install -y mesa-vulkan-drivers libvulkan1`, or `cargo xtask deps` as root)"
        )
    });
    let info = adapter.get_info();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("vat-tests"),
        required_features: wgpu::Features::empty(),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .unwrap_or_else(|e| panic!("could not open a device on {}: {e}", info.name));
    TestGpu { device, queue, info }
}

impl TestGpu {
    /// Copies `buffer` (which needs `COPY_SRC`) into a new mappable buffer and reads it back.
    pub fn read_buffer(&self, buffer: &wgpu::Buffer) -> Vec<u8> {
        let size = buffer.size();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).expect("device poll");
        rx.recv().expect("map callback ran").expect("buffer maps");
        let bytes = staging.get_mapped_range(..).expect("mapped range").to_vec();
        staging.unmap();
        bytes
    }
}
