//! The error type of the backend: vat-core's backend error over wgpu's own device errors.

/// Everything that can go wrong in vat-wgpu that a caller cannot rule out in advance: the same
/// enum as `vat_vulkan::Error` ([`vat_core::backend::Error`]) over this backend's
/// [`DeviceError`]s.
pub type Error = vat_core::backend::Error<DeviceError>;

/// What only wgpu reports ([`Error::Device`](vat_core::backend::Error::Device)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// No Vulkan adapter at all (not even the software one).
    #[error(
        "no GPU adapter found: install Mesa's software Vulkan driver \
         (`apt-get install -y mesa-vulkan-drivers libvulkan1` as root on Debian/Ubuntu) or a GPU driver"
    )]
    NoAdapter,
    /// The adapter lacks a feature the renderer needs.
    #[error("{adapter} lacks the {feature} feature, which vat-wgpu needs ({why})")]
    MissingFeature {
        /// The wgpu feature, e.g. `INDIRECT_FIRST_INSTANCE`.
        feature: &'static str,
        /// Why it is needed.
        why: &'static str,
        /// Which adapter or device: `adapter "llvmpipe ..."`, or `the device` when it was opened
        /// without the feature (request it in `DeviceDescriptor::required_features`).
        adapter: String,
    },
    /// The device could not allocate memory for a buffer or texture (wgpu's `OutOfMemory` error,
    /// caught in an error scope). On a software driver such as Mesa's lavapipe, device memory is host
    /// memory, so an address-space limit (`ulimit -v`) or a full host causes it. Whatever the failed
    /// call created is released. A failed buffer or texture leaves the device usable, but wgpu-core
    /// loses the device when a staging copy (an upload's writes) cannot be allocated: later calls
    /// then fail (`Offscreen` reports [`Error::DeviceLost`](vat_core::backend::Error::DeviceLost)).
    #[error("out of device memory: the GPU could not allocate the {what} ({bytes} bytes requested)")]
    OutOfDeviceMemory {
        /// What was being created: `"asset upload"`, `"crowd buffers"`, a buffer's label, ...
        what: &'static str,
        /// The bytes the failed call asked for (all of its buffers and textures together).
        bytes: u64,
    },
    /// wgpu reported an error (validation, or another failure than out of memory) while creating
    /// resources or recording.
    #[error("wgpu error: {0}")]
    Wgpu(String),
    /// Reading a buffer or texture back failed.
    #[error("readback failed: {0}")]
    Readback(String),
}

impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::Device(e)
    }
}
