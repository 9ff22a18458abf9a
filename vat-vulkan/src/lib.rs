#![allow(unsafe_code)] // raw Vulkan: every unsafe block is small and has a SAFETY comment
//! # vat-vulkan
//!
//! The raw Vulkan backend of vat on `ash`, built from the same GPU interface as vat-wgpu: vat-core's
//! one WGSL source ([`vat_core::gpu::SHADER_SOURCE`]) translated to SPIR-V by naga (never a copy of
//! the shader), and descriptor-set layouts built from vat-core's binding table
//! ([`vat_core::gpu::BINDINGS`]).
//!
//! ## What exists
//! - [`shader`]: WGSL -> validated naga module -> override constants of a variant -> SPIR-V 1.6 per
//!   entry point. Tested: every entry point in every variant translates, and the validation layer
//!   accepts each as a `VkShaderModule` (`tests/validation.rs`); every resource an entry point uses
//!   (naga's analysis) is in the layout built for its stage, with the right descriptor type.
//! - [`conv`]: pure `map_*` functions from the binding table and texel formats to Vulkan types,
//!   mirroring vat-wgpu's `conv.rs`.
//! - [`Context`]: a headless instance/device/queue/command pool (Vulkan 1.3, CPU device preferred,
//!   Khronos validation layer + a debug messenger counting errors and warnings when installed),
//!   destroyed in order on drop. `tests/validation.rs` proves the messenger is a working oracle: it
//!   counts a deliberately invalid call and an object left alive at device destruction. The fields
//!   are the handles a caller-owned device would provide, but only the convenience constructor
//!   [`Context::headless`] exists so far.
//! - [`Decoder`]: uploads an asset ([`Decoder::upload`]: animation and bone textures through a staging
//!   buffer, clip table, asset constants, joints, weights, rest vertices) and runs the `cs_decode` /
//!   `cs_decode_bone` compute shaders ([`Decoder::decode`]), reading back [`vat_core::gpu::DecodedVertex`]es
//!   exactly as vat-wgpu's `Renderer::decode` does. Every Vulkan object is destroyed after use or
//!   with its owner, including when a step fails. The workspace's `tests/tests/vulkan_parity.rs`
//!   compares its output with vat-wgpu's under the validation layer (bit-identical on lavapipe, both
//!   modes, every interpolation, with and without cross-fade) and checks that an upload failing
//!   half-way leaves no object alive.
//!
//! ## What does not exist yet (issue 5)
//! No rendering (render pipelines, shadows, attachments, ground, dynamic rendering into a caller's
//! image views), no culling (`cs_cull`, indirect draws), no constructor from a caller's instance/device/queue, no recording into a caller's command
//! buffer, no backend-neutral seam shared with vat-wgpu, no README section. Host-visible memory is used
//! for every buffer (fine on lavapipe and integrated GPUs, not tuned for discrete ones); the textures
//! are device-local and filled through a staging buffer.

pub mod conv;
mod decode;
mod device;
mod owned;
pub mod shader;

pub use decode::{Decoder, DecoderConfig, GpuAsset, RenderMode};
pub use device::{Context, MessageCounts};

use ash::vk;

/// What can go wrong in vat-vulkan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VulkanError {
    /// The Vulkan loader could not be loaded.
    #[error("could not load Vulkan: {0} (install mesa-vulkan-drivers and libvulkan1)")]
    Load(String),
    /// No physical device supports Vulkan 1.3 with a compute queue.
    #[error("no Vulkan 1.3 device with a compute queue (install mesa-vulkan-drivers for lavapipe)")]
    NoDevice,
    /// A Vulkan call failed.
    #[error("{what}: {result}")]
    Vk {
        /// The call.
        what: &'static str,
        /// Its result.
        result: vk::Result,
    },
    /// No memory type with the needed properties.
    #[error("no memory type for the {0}")]
    NoMemoryType(&'static str),
    /// The shader could not be translated.
    #[error(transparent)]
    Shader(#[from] shader::ShaderError),
    /// The asset was baked without a vertex animation texture.
    #[error("the asset has no vertex animation")]
    AssetHasNoVertexAnimation,
    /// The shader decodes Packed64 only.
    #[error("vertex format {0:?} is not supported by the shader (Packed64 only)")]
    UnsupportedFormat(vat_core::encoding::VertexFormat),
    /// Bone mode was asked of an asset without bones.
    #[error("the asset has no bone animation")]
    AssetHasNoBones,
    /// A texture exceeds the device's `maxImageDimension2D`.
    #[error("the {what} texture is {width}x{height}, more than the device's limit of {limit}")]
    TextureTooLarge {
        /// Which texture.
        what: &'static str,
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// `maxImageDimension2D`.
        limit: u32,
    },
    /// A texture's data is shorter than its size says.
    #[error("the {what} texture needs {expected} bytes, the asset holds {actual}")]
    TextureData {
        /// Which texture.
        what: &'static str,
        /// Bytes needed.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
    /// A storage buffer exceeds the device's `maxStorageBufferRange`.
    #[error("the {what} buffer would be {size} bytes, more than the device's limit of {limit}")]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

impl VulkanError {
    /// A `map_err` adapter naming the failed call.
    pub(crate) fn vk(what: &'static str) -> impl Fn(vk::Result) -> Self {
        move |result| Self::Vk { what, result }
    }
}
