//! Opening a device for headless rendering.

use crate::{DeviceError, Error};

/// Features every [`crate::Renderer`] needs, with the reason (for [`DeviceError::MissingFeature`](crate::DeviceError::MissingFeature)).
pub(crate) const REQUIRED_FEATURES: [(wgpu::Features, &str, &str); 1] = [(
    wgpu::Features::INDIRECT_FIRST_INSTANCE,
    "INDIRECT_FIRST_INSTANCE",
    "GPU-culled indirect draws start at first_instance = lod * capacity; without it they draw nothing",
)];

/// The wgpu features a [`crate::Renderer`] needs on its device: `INDIRECT_FIRST_INSTANCE` (GPU-culled
/// indirect draws start at `first_instance = lod * capacity`). A host that opens its own device
/// adds them to its own: `required_features: host_features | vat_wgpu::required_features()`.
pub fn required_features() -> wgpu::Features {
    REQUIRED_FEATURES.iter().fold(wgpu::Features::empty(), |all, (feature, _, _)| all | *feature)
}

/// The wgpu limits a [`crate::Renderer`] needs: WebGPU's defaults (`wgpu::Limits::default()`: 8,192
/// texels per texture side, 128 MiB storage bindings), raised to what vat's binding table
/// (`vat_core::backend::gpu::BINDINGS`) binds per shader stage and its bind-group count. A host that opens its
/// own device merges them into its own request:
/// `required_limits: host_limits.or_better_values_from(&vat_wgpu::required_limits())`.
///
/// These are the least vat runs with. Bigger assets (textures wider than 8,192) and crowds (a
/// record or list buffer over 128 MiB, about a million instances) need the adapter's larger
/// `max_texture_dimension_2d` and `max_storage_buffer_binding_size` (`adapter.limits()`): without
/// them upload and prepare return [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge) and
/// [`ResourceError::BufferTooLarge`](vat_core::backend::gpu::ResourceError::BufferTooLarge) naming the limit.
pub fn required_limits() -> wgpu::Limits {
    let base = wgpu::Limits::default();
    let need = vat_core::backend::gpu::max_stage_binding_counts();
    wgpu::Limits {
        max_bind_groups: base.max_bind_groups.max(vat_core::backend::gpu::required_bind_groups()),
        max_uniform_buffers_per_shader_stage: base
            .max_uniform_buffers_per_shader_stage
            .max(need.uniform_buffers),
        max_storage_buffers_per_shader_stage: base
            .max_storage_buffers_per_shader_stage
            .max(need.storage_buffers),
        max_sampled_textures_per_shader_stage: base
            .max_sampled_textures_per_shader_stage
            .max(need.sampled_textures),
        max_samplers_per_shader_stage: base.max_samplers_per_shader_stage.max(need.samplers),
        ..base
    }
}

/// The first limit of `available` below what vat's binding table binds
/// (`vat_core::backend::gpu::max_stage_binding_counts`, `required_bind_groups`), as
/// [`Error::LimitTooLow`]. Only the table's own needs are checked, not the WebGPU defaults
/// [`required_limits`] starts from.
pub(crate) fn check_binding_limits(available: &wgpu::Limits) -> Result<(), Error> {
    let need = vat_core::backend::gpu::max_stage_binding_counts();
    let pairs = [
        ("max_bind_groups", vat_core::backend::gpu::required_bind_groups(), available.max_bind_groups),
        (
            "max_storage_buffers_per_shader_stage",
            need.storage_buffers,
            available.max_storage_buffers_per_shader_stage,
        ),
        (
            "max_uniform_buffers_per_shader_stage",
            need.uniform_buffers,
            available.max_uniform_buffers_per_shader_stage,
        ),
        (
            "max_sampled_textures_per_shader_stage",
            need.sampled_textures,
            available.max_sampled_textures_per_shader_stage,
        ),
        ("max_samplers_per_shader_stage", need.samplers, available.max_samplers_per_shader_stage),
    ];
    match pairs.into_iter().find(|(_, required, has)| has < required) {
        Some((limit, required, has)) => {
            Err(Error::LimitTooLow { limit, required: u64::from(required), available: u64::from(has) })
        }
        None => Ok(()),
    }
}

/// Opens a device for offscreen rendering on a Vulkan adapter, preferring the CPU adapter (Mesa's
/// lavapipe) when there is one, so results are the same on every machine; otherwise the first
/// Vulkan adapter. The device gets the adapter's limits and `INDIRECT_FIRST_INSTANCE`.
///
/// Instance flags are `InstanceFlags::from_build_config()` without `DEBUG` (which would embed the WGSL
/// in the SPIR-V, which older validation layers misreport).
///
/// # Errors
/// [`DeviceError::NoAdapter`](crate::DeviceError::NoAdapter) (the message has the install command),
/// [`DeviceError::MissingFeature`](crate::DeviceError::MissingFeature) if the adapter lacks `INDIRECT_FIRST_INSTANCE`,
/// [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) if the device cannot be opened.
pub fn headless_device() -> Result<(wgpu::Device, wgpu::Queue, wgpu::AdapterInfo), Error> {
    // Declared first so that it is released last, after the instance and the other adapters drop.
    let _lifetime = vat_core::backend::device_lifetime_lock();
    let instance = new_instance();
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter = adapters.into_iter().next().ok_or(DeviceError::NoAdapter)?;
    let (device, queue) = open_device(&adapter, "vat headless")?;
    Ok((device, queue, adapter.get_info()))
}

/// The instance [`headless_device`] opens its device on (Vulkan only; `InstanceFlags::from_build_config()`
/// without `DEBUG`). Make a window's surface on it (`Instance::create_surface`), then open the device
/// with [`presenting_device`].
pub fn vat_instance() -> wgpu::Instance {
    let _lifetime = vat_core::backend::device_lifetime_lock();
    new_instance()
}

/// [`vat_instance`] without taking [`vat_core::backend::device_lifetime_lock`] (for callers that hold it).
fn new_instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::DEBUG;
    wgpu::Instance::new(desc)
}

/// Opens a device that can present to `surface` (made on `instance`, which should be
/// [`vat_instance`]): [`headless_device`]'s choice (the CPU adapter first) among the Vulkan adapters
/// that support the surface, with the same features and limits. Returns the adapter too, for
/// `Surface::get_capabilities`. The Vulkan twin is `vat_vulkan::Context::presenting`.
///
/// # Errors
/// [`DeviceError::NoAdapter`](crate::DeviceError::NoAdapter) when no adapter can present to the surface, and those of
/// [`headless_device`].
pub fn presenting_device(
    instance: &wgpu::Instance,
    surface: &wgpu::Surface<'_>,
) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue), Error> {
    let mut adapters: Vec<wgpu::Adapter> =
        pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN))
            .into_iter()
            .filter(|a| a.is_surface_supported(surface))
            .collect();
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter = adapters.into_iter().next().ok_or(DeviceError::NoAdapter)?;
    let _lifetime = vat_core::backend::device_lifetime_lock();
    let (device, queue) = open_device(&adapter, "vat presenting")?;
    Ok((adapter, device, queue))
}

/// A device on `adapter` with [`REQUIRED_FEATURES`] and the adapter's limits.
fn open_device(adapter: &wgpu::Adapter, label: &str) -> Result<(wgpu::Device, wgpu::Queue), Error> {
    let info = adapter.get_info();
    let mut features = wgpu::Features::empty();
    for (feature, name, why) in REQUIRED_FEATURES {
        if !adapter.features().contains(feature) {
            return Err(DeviceError::MissingFeature {
                feature: name,
                why,
                adapter: format!("adapter {:?}", info.name),
            }
            .into());
        }
        features |= feature;
    }
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some(label),
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .map_err(|e| DeviceError::Wgpu(format!("could not open a device on {}: {e}", info.name)).into())
}
