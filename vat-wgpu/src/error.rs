//! The one error type of the backend.

/// Everything that can go wrong in vat-wgpu that a caller cannot rule out in advance.
///
/// Misuse that is a programming error (a target of the wrong size, an asset uploaded by another
/// renderer) is a panic with a clear message instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
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
    /// The device was opened with a limit lower than the renderer needs.
    #[error(
        "device limit {limit} is {available}, vat-wgpu needs {required} \
         (request the adapter's limits: `required_limits: adapter.limits()`)"
    )]
    LimitTooLow {
        /// The wgpu limit's field name.
        limit: &'static str,
        /// What the renderer needs.
        required: u64,
        /// What the device has.
        available: u64,
    },
    /// A texture of the asset is larger than the device allows.
    #[error("{what} texture of {width} x {height} exceeds the device limit of {limit} texels per side")]
    TextureTooLarge {
        /// Which texture.
        what: &'static str,
        /// Its width in texels.
        width: u32,
        /// Its height in texels.
        height: u32,
        /// `max_texture_dimension_2d` of the device.
        limit: u32,
    },
    /// A buffer of the asset or crowd is larger than the device allows.
    #[error("{what} buffer of {size} bytes exceeds the device limit of {limit} bytes")]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Its size in bytes.
        size: u64,
        /// The device limit that applies (storage binding or buffer size).
        limit: u64,
    },
    /// Bone mode was asked for an asset baked without `--bones`.
    #[error("the asset was baked without bones (bake with --bones for bone mode)")]
    AssetHasNoBones,
    /// The asset has no vertex animation texture.
    #[error("the asset has no vertex animation texture")]
    AssetHasNoVertexAnimation,
    /// The asset has no LODs (no index buffer), so there is nothing to draw.
    #[error("the asset has no LOD index ranges")]
    AssetHasNoLods,
    /// The asset data is inconsistent (should not happen for a validated asset).
    #[error(transparent)]
    Core(#[from] vat_core::Error),
    /// The device could not allocate memory for a buffer or texture (wgpu's `OutOfMemory` error,
    /// caught in an error scope). On a software driver such as Mesa's lavapipe, device memory is host
    /// memory, so an address-space limit (`ulimit -v`) or a full host causes it. Whatever the failed
    /// call created is released. A failed buffer or texture leaves the device usable, but wgpu-core
    /// loses the device when a staging copy (an upload's writes) cannot be allocated: later calls
    /// then fail (`Offscreen` reports [`RenderError::DeviceLost`]).
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
    Device(String),
    /// The GPU device was lost (driver reset, `Device::destroy`, a removed GPU). Nothing made on it
    /// can be used again: open a new device, create a new renderer and upload the asset again (the
    /// `.vat` bytes and the `Crowd` are unaffected; call nothing else on the old renderer).
    #[error(
        "the GPU device was lost ({0}); create a new renderer on a new device and upload the asset again"
    )]
    DeviceLost(String),
    /// The frame samples the host's shadow map (`RenderOptions::shadow_map` is
    /// `ShadowMapSource::Host`) but none was given to `Renderer::set_host_shadow_map`.
    #[error(
        "the frame samples the host's shadow map, but none was given: call Renderer::set_host_shadow_map \
         with the map's view, or use ShadowMapSource::BuiltIn"
    )]
    NoHostShadowMap,
    /// The frame draws vat's own sun shadows (`ShadowMapSource::BuiltIn`, shadows on) but the renderer
    /// was made without a built-in shadow map (`RendererConfig::shadow_map_size` 0).
    #[error(
        "the frame draws vat's built-in shadows, but the renderer has no built-in shadow map \
         (RendererConfig::shadow_map_size is 0): give a size, use ShadowMapSource::Host, or turn shadows off"
    )]
    NoBuiltInShadowMap,
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
        "{0:?} mode decodes nothing: its vertices are the asset's rest vertices (vat_core::gpu::rest_vertices)"
    )]
    NoDecode(vat_core::render::RenderMode),
    /// Reading a buffer or texture back failed.
    #[error("readback failed: {0}")]
    Readback(String),
    /// A host shader (`Renderer::set_host_shader`) does not compile with vat's shader or lacks its
    /// `@fragment` entry points, or a frame with motion vectors has a host shader without a motion
    /// entry point.
    #[error("the host shader was refused: {0}")]
    HostShader(String),
}

impl From<vat_core::gpu::ResourceError> for RenderError {
    fn from(e: vat_core::gpu::ResourceError) -> Self {
        use vat_core::gpu::ResourceError as R;
        match e {
            R::NoAnimation => RenderError::AssetHasNoVertexAnimation,
            R::NoLods => RenderError::AssetHasNoLods,
            R::TextureTooLarge { what, width, height, limit } => {
                RenderError::TextureTooLarge { what, width, height, limit }
            }
            R::BufferTooLarge { what, size, limit } => RenderError::BufferTooLarge { what, size, limit },
            // Future variants: the message says what the core found.
            other => RenderError::Device(other.to_string()),
        }
    }
}
