//! Opening a device for headless rendering.

use crate::RenderError;

/// Features every [`crate::Renderer`] needs, with the reason (for [`RenderError::MissingFeature`]).
pub(crate) const REQUIRED_FEATURES: [(wgpu::Features, &str, &str); 1] = [(
    wgpu::Features::INDIRECT_FIRST_INSTANCE,
    "INDIRECT_FIRST_INSTANCE",
    "GPU-culled indirect draws start at first_instance = lod * capacity; without it they draw nothing",
)];

/// Opens a device for offscreen rendering on a Vulkan adapter, preferring the CPU adapter (Mesa's
/// lavapipe) when there is one, so results are the same on every machine; otherwise the first
/// Vulkan adapter. The device gets the adapter's limits and `INDIRECT_FIRST_INSTANCE`.
///
/// Instance flags are `InstanceFlags::from_build_config()` without `DEBUG` (which would embed the WGSL
/// in the SPIR-V, which older validation layers misreport).
///
/// # Errors
/// [`RenderError::NoAdapter`] (the message has the install command),
/// [`RenderError::MissingFeature`] if the adapter lacks `INDIRECT_FIRST_INSTANCE`,
/// [`RenderError::Device`] if the device cannot be opened.
pub fn headless_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), RenderError> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::DEBUG;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter = adapters.into_iter().next().ok_or(RenderError::NoAdapter)?;
    let info = adapter.get_info();
    let mut features = wgpu::Features::empty();
    for (feature, name, why) in REQUIRED_FEATURES {
        if !adapter.features().contains(feature) {
            return Err(RenderError::MissingFeature {
                feature: name,
                why,
                adapter: format!("adapter {:?}", info.name),
            });
        }
        features |= feature;
    }
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("vat headless"),
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| RenderError::Device(format!("could not open a device on {}: {e}", info.name)))?;
    Ok((device, queue, info))
}
