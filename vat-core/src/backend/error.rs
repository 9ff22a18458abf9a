//! The error type both backends return: what the core found, carried in full, plus the errors of
//! the backend's API calls that both have, plus one variant for the backend's own device errors.

use crate::frame::{FrameError, Missing, PlanError};
use crate::gpu::ResourceError;
use crate::render::RenderMode;

/// Everything that can go wrong in a backend that a caller cannot rule out in advance: the one
/// error enum of vat-wgpu and vat-vulkan (`vat_wgpu::Error` is `Error<vat_wgpu::DeviceError>`,
/// `vat_vulkan::Error` is `Error<vat_vulkan::DeviceError>`), so code that matches one matches the
/// other.
///
/// What the core found stays the core's error with its detail ([`Error::Asset`],
/// [`Error::Resource`], [`Error::Frame`]); what only one API can report (a Vulkan result, wgpu's
/// adapter search) is [`Error::Device`]. Misuse that is a programming error (a target of the wrong
/// size, an asset uploaded by another renderer) is a panic with a clear message instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<D> {
    /// The asset data is inconsistent (should not happen for a validated asset).
    #[error(transparent)]
    Asset(#[from] crate::Error),
    /// An asset's GPU resources cannot be made on this device: no animation, no LODs, a texture or
    /// buffer over the device's limits.
    #[error(transparent)]
    Resource(#[from] ResourceError),
    /// The frame was refused or could not be planned (no host or built-in shadow map, a host shader
    /// that refuses it, bone mode without bones, a crowd buffer over the limit) or names a resource
    /// the backend does not hold.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A backend's `Renderer::decode` in bone mode of an asset baked without
    /// bones.
    #[error("the asset was baked without bones (bake with --bones for bone mode)")]
    AssetHasNoBones,
    /// A device limit is lower than the renderer needs.
    #[error(
        "device limit {limit} is {available}, vat needs {required} \
         (open the device with the adapter's limits, or with the backend's required limits)"
    )]
    LimitTooLow {
        /// The API's name of the limit.
        limit: &'static str,
        /// What the renderer needs.
        required: u64,
        /// What the device has.
        available: u64,
    },
    /// A render target of size zero.
    #[error("the render target has a zero size")]
    EmptyTarget,
    /// `RenderOptions::motion_vectors` is on but the render target has no motion attachment
    /// (`RenderTarget::motion`).
    #[error(
        "motion vectors are on but the render target has no motion attachment: set RenderTarget::motion \
         (a float colour view) or turn RenderOptions::motion_vectors off"
    )]
    NoMotionTarget,
    /// `Renderer::decode` of a mode that decodes nothing (`RenderMode::Rest`: its vertices are the
    /// asset's rest vertices).
    #[error(
        "{0:?} mode decodes nothing: its vertices are the asset's rest vertices (vat_core::backend::gpu::rest_vertices)"
    )]
    NoDecode(RenderMode),
    /// A host shader (`Renderer::set_host_shader`) does not compile with vat's shader or lacks its
    /// entry points. (A frame the host shader refuses is [`FrameError::HostShader`].)
    #[error("the host shader was refused: {0}")]
    HostShader(String),
    /// The GPU device was lost (driver reset, a hang, `Device::destroy`, a removed GPU) during the
    /// call named. Nothing made on it can be used again: open a new device, create a new renderer and
    /// upload the asset again (the `.vat` bytes and the `Crowd` are unaffected; call nothing else on
    /// the old renderer).
    #[error(
        "the GPU device was lost ({0}); create a new renderer on a new device and upload the asset again"
    )]
    DeviceLost(String),
    /// An error only this backend's API reports (`vat_wgpu::DeviceError`,
    /// `vat_vulkan::DeviceError`).
    #[error(transparent)]
    Device(D),
}

impl<D> From<PlanError> for Error<D> {
    fn from(e: PlanError) -> Self {
        Error::Frame(FrameError::Plan(e))
    }
}

impl<D> From<Missing> for Error<D> {
    fn from(m: Missing) -> Self {
        Error::Frame(FrameError::Missing(m))
    }
}

impl<D> Error<D> {
    /// The core's planning error, if this is one (e.g. [`PlanError::AssetHasNoBones`] naming the
    /// crowd).
    pub fn plan(&self) -> Option<&PlanError> {
        match self {
            Error::Frame(FrameError::Plan(p)) => Some(p),
            _ => None,
        }
    }

    /// The backend's own error, if this is one.
    pub fn device(&self) -> Option<&D> {
        match self {
            Error::Device(d) => Some(d),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("device")]
    struct Dev;

    #[test]
    fn plan_errors_keep_their_detail() {
        let e: Error<Dev> = PlanError::AssetHasNoBones { crowd: 3 }.into();
        assert_eq!(e.plan(), Some(&PlanError::AssetHasNoBones { crowd: 3 }));
        assert!(e.to_string().contains("crowd 3"), "{e}");
        let e: Error<Dev> =
            FrameError::Plan(PlanError::BufferTooLarge { what: "record", size: 9, limit: 8 }).into();
        assert!(e.to_string().contains("record") && e.to_string().contains('9'), "{e}");
        let e: Error<Dev> = Error::Device(Dev);
        assert_eq!(e.to_string(), "device");
    }
}
