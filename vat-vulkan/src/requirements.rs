//! What vat-vulkan needs of a device, as data a host merges into its own device creation
//! ([`DeviceRequirements`]); [`crate::Context::headless`] opens its own device from the same.

use std::ffi::CStr;

use ash::vk;
use vat_core::backend::gpu::max_stage_binding_counts;

use crate::{DeviceError, Error};

/// What a [`crate::Renderer`] needs of its device: the API version, the features, the device
/// extensions, the queue's capabilities and the descriptor limits of vat's binding table
/// (`vat_core::backend::gpu::BINDINGS`). A host that creates its own device (then
/// [`crate::Context::from_handles`]) enables [`features`](Self::features) and
/// [`vulkan13_features`](Self::vulkan13_features) with [`merge_into`](Self::merge_into), adds
/// [`extensions`](Self::extensions), picks a queue family with [`queue_flags`](Self::queue_flags)
/// and can check a physical device first with [`check`](Self::check).
#[derive(Debug, Clone, Copy)]
pub struct DeviceRequirements {
    /// The least Vulkan version of the physical device (1.3: dynamic rendering, synchronization).
    pub api_version: u32,
    /// Vulkan 1.0 features: `drawIndirectFirstInstance` (GPU-culled indirect draws start at
    /// `first_instance = lod * capacity`) and `independentBlend` (a prepass with the motion target
    /// alone writes no colour at its empty location 0: the slots' write masks differ).
    pub features: vk::PhysicalDeviceFeatures,
    /// Vulkan 1.3's `dynamicRendering` (every pass is dynamic rendering).
    pub dynamic_rendering: bool,
    /// Device extensions: none offscreen; `VK_KHR_swapchain` to present
    /// ([`DeviceRequirements::presenting`]).
    pub extensions: &'static [&'static CStr],
    /// What the queue family must support: graphics (render passes) and compute (culling, decode).
    pub queue_flags: vk::QueueFlags,
}

/// The device extensions of a presenting context.
const PRESENTING_EXTENSIONS: &[&CStr] = &[ash::khr::swapchain::NAME];

impl DeviceRequirements {
    /// What an offscreen renderer needs.
    pub fn offscreen() -> Self {
        Self {
            api_version: vk::API_VERSION_1_3,
            features: vk::PhysicalDeviceFeatures::default()
                .draw_indirect_first_instance(true)
                .independent_blend(true),
            dynamic_rendering: true,
            extensions: &[],
            queue_flags: vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE,
        }
    }

    /// What a renderer presenting through `Swapchain` needs: [`offscreen`](Self::offscreen)'s and
    /// `VK_KHR_swapchain` (the queue must also present to the surface).
    pub fn presenting() -> Self {
        Self { extensions: PRESENTING_EXTENSIONS, ..Self::offscreen() }
    }

    /// Enables vat's features in the host's feature structs (features the host enabled stay on).
    pub fn merge_into(
        &self,
        features: &mut vk::PhysicalDeviceFeatures,
        vulkan13: &mut vk::PhysicalDeviceVulkan13Features<'_>,
    ) {
        if self.features.draw_indirect_first_instance == vk::TRUE {
            features.draw_indirect_first_instance = vk::TRUE;
        }
        if self.features.independent_blend == vk::TRUE {
            features.independent_blend = vk::TRUE;
        }
        if self.dynamic_rendering {
            vulkan13.dynamic_rendering = vk::TRUE;
        }
    }

    /// The Vulkan 1.3 features to enable (`dynamicRendering`), for a host building its chain.
    pub fn vulkan13_features(&self) -> vk::PhysicalDeviceVulkan13Features<'static> {
        vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(self.dynamic_rendering)
    }

    /// The descriptor limits vat's pipeline layouts need, `(Vulkan limit name, required, available
    /// in `limits`)` each.
    fn descriptor_limits(limits: &vk::PhysicalDeviceLimits) -> [(&'static str, u32, u32); 5] {
        let need = max_stage_binding_counts();
        [
            (
                "maxBoundDescriptorSets",
                vat_core::backend::gpu::required_bind_groups(),
                limits.max_bound_descriptor_sets,
            ),
            (
                "maxPerStageDescriptorStorageBuffers",
                need.storage_buffers,
                limits.max_per_stage_descriptor_storage_buffers,
            ),
            (
                "maxPerStageDescriptorUniformBuffers",
                need.uniform_buffers,
                limits.max_per_stage_descriptor_uniform_buffers,
            ),
            (
                "maxPerStageDescriptorSampledImages",
                need.sampled_textures,
                limits.max_per_stage_descriptor_sampled_images,
            ),
            ("maxPerStageDescriptorSamplers", need.samplers, limits.max_per_stage_descriptor_samplers),
        ]
    }

    /// Checks the descriptor limits of a device's `limits` against vat's binding table.
    ///
    /// # Errors
    /// [`Error::LimitTooLow`] naming the first limit below what vat binds.
    pub fn check_limits(limits: &vk::PhysicalDeviceLimits) -> Result<(), Error> {
        match Self::descriptor_limits(limits).into_iter().find(|(_, required, has)| has < required) {
            Some((limit, required, has)) => {
                Err(Error::LimitTooLow { limit, required: u64::from(required), available: u64::from(has) })
            }
            None => Ok(()),
        }
    }

    /// Checks physical device `pd` of `instance`: API version, features, extensions, descriptor
    /// limits, and a queue family with [`queue_flags`](Self::queue_flags).
    ///
    /// # Errors
    /// [`DeviceError::Unsupported`](crate::DeviceError::Unsupported) naming what is missing; [`Error::LimitTooLow`].
    ///
    /// # Safety
    /// `pd` must be a physical device of the live `instance`.
    pub unsafe fn check(&self, instance: &ash::Instance, pd: vk::PhysicalDevice) -> Result<(), Error> {
        // SAFETY: the caller guarantees `pd` is of the live `instance`.
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let missing = |what: String| Err(DeviceError::Unsupported(what).into());
        if props.api_version < self.api_version {
            return missing(format!(
                "Vulkan {}.{} (the device has {}.{})",
                vk::api_version_major(self.api_version),
                vk::api_version_minor(self.api_version),
                vk::api_version_major(props.api_version),
                vk::api_version_minor(props.api_version)
            ));
        }
        // SAFETY: as above.
        let (f10, f13) = unsafe { crate::device::supported_features(instance, pd) };
        if self.features.draw_indirect_first_instance == vk::TRUE
            && f10.draw_indirect_first_instance == vk::FALSE
        {
            return missing("the drawIndirectFirstInstance feature".into());
        }
        if self.features.independent_blend == vk::TRUE && f10.independent_blend == vk::FALSE {
            return missing("the independentBlend feature".into());
        }
        if self.dynamic_rendering && f13.dynamic_rendering == vk::FALSE {
            return missing("the dynamicRendering feature".into());
        }
        for &name in self.extensions {
            // SAFETY: as above.
            if !unsafe { crate::device::has_device_extension(instance, pd, name) } {
                return missing(format!("the {} device extension", name.to_string_lossy()));
            }
        }
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        if !families.iter().any(|f| f.queue_flags.contains(self.queue_flags)) {
            return missing(format!("a queue family with {:?}", self.queue_flags));
        }
        Self::check_limits(&props.limits)
    }
}

#[cfg(test)]
mod tests {
    use vat_core::backend::gpu::{ShaderStages, stage_binding_counts};

    use super::*;

    #[test]
    fn the_limits_follow_the_binding_table() {
        let limits = vk::PhysicalDeviceLimits {
            max_bound_descriptor_sets: 8,
            max_per_stage_descriptor_storage_buffers: 64,
            max_per_stage_descriptor_uniform_buffers: 64,
            max_per_stage_descriptor_sampled_images: 64,
            max_per_stage_descriptor_samplers: 64,
            ..Default::default()
        };
        assert!(DeviceRequirements::check_limits(&limits).is_ok());
        let storage = stage_binding_counts(ShaderStages::VERTEX).storage_buffers;
        assert!(storage >= 4, "the vertex stage reads records, lists and streams from storage buffers");
        let short = vk::PhysicalDeviceLimits { max_per_stage_descriptor_storage_buffers: 2, ..limits };
        let err = DeviceRequirements::check_limits(&short).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LimitTooLow { limit: "maxPerStageDescriptorStorageBuffers", available: 2, .. }
            ),
            "{err}"
        );
        let mut f10 = vk::PhysicalDeviceFeatures::default().sampler_anisotropy(true);
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        DeviceRequirements::presenting().merge_into(&mut f10, &mut f13);
        assert_eq!((f10.sampler_anisotropy, f10.draw_indirect_first_instance), (vk::TRUE, vk::TRUE));
        assert_eq!(f10.independent_blend, vk::TRUE);
        assert_eq!(f13.dynamic_rendering, vk::TRUE);
        assert_eq!(DeviceRequirements::presenting().extensions, [ash::khr::swapchain::NAME]);
    }
}
