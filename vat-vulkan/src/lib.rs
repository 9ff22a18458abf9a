#![allow(unsafe_code)] // raw Vulkan: every unsafe block is small and has a SAFETY comment
//! # vat-vulkan
//!
//! The raw Vulkan backend of vat on `ash`, built from the same GPU interface as vat-wgpu: vat-core's
//! one WGSL source ([`vat_core::backend::gpu::SHADER_SOURCE`]) translated to SPIR-V by naga (never a copy of
//! the shader), and descriptor-set layouts built from vat-core's binding table
//! ([`vat_core::backend::gpu::BINDINGS`]).
//!
//! ## What it does
//! - [`Renderer`]: the Vulkan twin of vat-wgpu's `Renderer`, same passes in the same order and the
//!   same vocabulary ([`GpuAsset`], [`RenderTarget`], [`RendererConfig`], vat-core's
//!   [`RenderOptions`] and [`FrameReport`]). [`Renderer::upload`] puts an asset on the device (textures
//!   through a staging buffer, every size checked against the device's limits first, everything
//!   released on failure); [`Renderer::render`] records one frame into a command buffer **the caller
//!   owns**, drawing into **the caller's** colour and depth image views with dynamic rendering: VAT or
//!   bone mode, cross-fades, shadow pass, ground, socket attachments, CPU culling (the crowd's batches)
//!   or GPU-driven culling (`cs_cull` + `vkCmdDrawIndexedIndirect`, one draw per LOD); only changed
//!   records are uploaded (many short runs of them packed for the `cs_scatter` pass, as vat-wgpu). [`Renderer::decode`] and [`Renderer::read_gpu_visible`] read back the
//!   compute paths for tests.
//! - [`Context`]: the device it works on: [`Context::headless`] opens its own (CPU device preferred,
//!   Khronos validation layer and a counting debug messenger when installed);
//!   [`Context::from_handles`] wraps an engine's instance, physical device, device and queue and
//!   destroys nothing of them; [`Context::presenting`] opens its own for a window (surface
//!   extensions, `VK_KHR_swapchain`, a queue that presents).
//! - [`Swapchain`]: a `VkSwapchainKHR` on a presenting context; [`Swapchain::render`] draws an
//!   [`Offscreen`]'s frame into the next image (prepare, dynamic rendering with draw inside) and
//!   presents it, recreating the swapchain when it is out of date (`vat demo --backend vulkan`).
//! - [`Offscreen`]: a renderer with its own target and command buffer, vat-core's
//!   [`CrowdRenderer`](vat_core::render::CrowdRenderer): code written once against the trait runs on
//!   `vat_wgpu::Offscreen` or here (`vat render --backend vulkan`, the `crowd` example).
//! - [`shader`]: WGSL -> validated naga module -> override constants of a variant -> SPIR-V 1.6 per
//!   entry point; [`conv`]: pure `map_*` functions from the binding table to Vulkan types.
//!
//! ## Using it in an existing engine
//! What [`Renderer::render`] expects and changes (the guide chapter "Using the Vulkan backend in an
//! existing engine", `docs/guide/src/embedding-vulkan.md`, has the whole picture and `examples/examples/vulkan_engine.rs` a compiling engine):
//! - **Device**: what [`DeviceRequirements`] lists (Vulkan 1.3 with `dynamicRendering`,
//!   `drawIndirectFirstInstance` and `independentBlend` enabled, a queue family with graphics and
//!   compute, the descriptor limits of vat's binding table): merge it into your device creation with
//!   [`DeviceRequirements::merge_into`] and check a physical device with [`DeviceRequirements::check`].
//! - **Command buffer**: primary, recording, outside any render pass; afterwards no rendering is
//!   open. Bound pipelines, descriptor sets (sets 0-2), the index buffer, viewport and scissor are
//!   left changed: rebind yours.
//! - **Images**: colour view (format [`RendererConfig::color_format`](vat_core::backend::RendererConfig::color_format)) in
//!   `COLOR_ATTACHMENT_OPTIMAL`, depth view ([`RendererConfig::depth_format`](vat_core::backend::RendererConfig::depth_format)) in
//!   `DEPTH_ATTACHMENT_OPTIMAL`; both are cleared and stay in those layouts. Make your earlier
//!   accesses to them available before (e.g. the transition into those layouts); after the frame, the
//!   colour writes are in `COLOR_ATTACHMENT_OUTPUT` / `COLOR_ATTACHMENT_WRITE`: barrier from there
//!   before sampling, copying or presenting.
//! - **Synchronisation it records**: a barrier before its buffer writes (`vkCmdUpdateBuffer`; after
//!   earlier frames' shader, indirect and transfer accesses), after them, after the culling
//!   dispatch, around its own shadow map, and one ordering its attachment writes after earlier ones.
//!   Frames of one renderer must be submitted to one queue in recording order.
//! - **Lifetime**: everything holds the context (`Rc<Context>`); dropping a renderer or asset waits
//!   for the device to be idle. Uploads, decodes and read-backs submit to the context's queue and
//!   wait on a fence.
//!
//! ## Embedding in a host's frame graph
//! [`Renderer::render`] is built from three calls with vat-wgpu's names, which a host places in its
//! own command buffer:
//! - [`Renderer::prepare`]`(cb, crowds, camera, options, views)`: **outside** any rendering: the
//!   frame's writes, scatter and culling dispatches and the built-in shadow pass, with their barriers
//!   (the last makes the culling outputs and shadow map visible to later vertex, fragment and
//!   indirect stages); `views` are extra depth views for `draw_depth`.
//! - [`Renderer::draw`]`(cb, crowds, formats, area)`: **inside** the host's `vkCmdBeginRendering`
//!   scope over a colour and a depth attachment of [`PassFormats`]: the colour draws. Nothing is
//!   cleared (the host's load ops stand), depth is tested `LESS` and written.
//! - [`Renderer::draw_depth`]`(cb, crowds, view, formats, area)`: inside the host's depth-only
//!   rendering: the depth draws of extra view `view`.
//! - [`Renderer::draw_prepass`]`(cb, crowds, formats, area)`: inside the host's prepass rendering
//!   ([`PrepassFormats`]: depth, normal at location 0, motion at location 1): the camera's draws
//!   with the colour pass's depth, writing the world normal and the motion.
//!
//! `draw`, `draw_depth` and `draw_prepass` set the viewport to [`flipped_viewport`]`(area)` (vat's clip space is
//! wgpu's, y up) and the scissor to `area`, and leave vat's last graphics pipeline, sets 0-2 and
//! index buffer bound: rebind yours after them. Barriers on the host's attachments (before, between
//! and after its passes) are the host's. [`Offscreen::record_host_frame`] runs a host frame on the
//! offscreen target.
//!
//! Every buffer is host-visible (the CPU writes it in place). Buffers the GPU reads go in video
//! memory when the device exposes all of it to the host (resizable BAR; integrated GPUs and lavapipe
//! have only such memory), else in host memory: a discrete GPU without resizable BAR reads them
//! across the bus (not tuned for; the small host-visible window into its video memory is left to
//! the host application). Read-back buffers use cached host memory. The textures are device-local
//! and filled through a staging buffer. Parity with
//! vat-wgpu is tested in the workspace's `tests/tests/vulkan_parity.rs` (decode, bit-identical) and
//! `tests/tests/vulkan_render_parity.rs` (images and culling), all under the validation layer.

mod asset;
pub mod conv;
mod crowd;
mod device;
mod encode;
mod offscreen;
mod owned;
mod pipelines;
mod readback;
mod renderer;
mod requirements;
pub mod shader;
mod swapchain;

pub use asset::GpuAsset;
pub use crowd::GpuCrowd;
pub use device::{Context, MessageCounts};
pub use offscreen::{MOTION_FORMAT, Offscreen};
pub use pipelines::{PassFormats, PrepassFormats};
pub use renderer::{CrowdDraw, Formats, RenderTarget, Renderer, RendererConfig, flipped_viewport, full_rect};
pub use requirements::DeviceRequirements;
pub use swapchain::{Presented, Swapchain, SwapchainTarget};
pub use vat_core::backend::pipeline::PassConventions;
pub use vat_core::render::{Culling, FrameReport, RenderMode, RenderOptions};

use ash::vk;

/// Everything that can go wrong in vat-vulkan that a caller cannot rule out in advance: the same
/// enum as `vat_wgpu::Error` ([`vat_core::backend::Error`]) over this backend's [`DeviceError`]s.
pub type Error = vat_core::backend::Error<DeviceError>;

/// What only Vulkan reports ([`Error::Device`](vat_core::backend::Error::Device)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The Vulkan loader could not be loaded.
    #[error("could not load Vulkan: {0} (install mesa-vulkan-drivers and libvulkan1)")]
    Load(String),
    /// No physical device supports Vulkan 1.3 with a compute queue.
    #[error("no Vulkan 1.3 device with a compute queue (install mesa-vulkan-drivers for lavapipe)")]
    NoDevice,
    /// The physical device lacks something vat-vulkan needs ([`DeviceRequirements::check`]).
    #[error("the device lacks {0}, which vat-vulkan needs (see DeviceRequirements)")]
    Unsupported(String),
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
    Shader(shader::ShaderError),
    /// The binding table names a binding this crate has no resource for (vat-core gained a binding
    /// this version of vat-vulkan does not know).
    #[error("no resource for binding {name} of set {group}")]
    UnboundBinding {
        /// The WGSL name of the binding.
        name: &'static str,
        /// Its group (descriptor set).
        group: u32,
    },
    /// An entry point the renderer uses is missing from vat-core's entry-point table.
    #[error("vat-core has no entry point {0}")]
    UnknownEntryPoint(&'static str),
    /// A window cannot be presented to: a window system other than Xlib, XCB or Wayland, a window
    /// without handles, or a loader without the surface extensions.
    #[error("cannot present to the window: {0}")]
    Window(String),
    /// A broken internal invariant (a bug in this crate).
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// The device cannot sample a texel format the asset's vertex format needs (every format used
    /// is one Vulkan requires for sampled images, so a conformant device never reports this).
    #[error(
        "the device cannot sample {texel:?} textures, which vertex format {format:?} needs \
         (bake with another --format, e.g. packed64: one Rg32Uint texture)"
    )]
    UnsupportedFormat {
        /// The asset's vertex format.
        format: vat_core::format::encoding::VertexFormat,
        /// The texel format the device lacks.
        texel: vat_core::format::encoding::TexelFormat,
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
}

impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::Device(e)
    }
}

impl From<shader::ShaderError> for Error {
    fn from(e: shader::ShaderError) -> Self {
        Error::Device(DeviceError::Shader(e))
    }
}

impl DeviceError {
    /// The error of a failed call `what`: [`Error::DeviceLost`](vat_core::backend::Error::DeviceLost)
    /// for `VK_ERROR_DEVICE_LOST`, [`DeviceError::Vk`](crate::DeviceError::Vk) otherwise.
    pub(crate) fn from_vk(what: &'static str, result: vk::Result) -> Error {
        if result == vk::Result::ERROR_DEVICE_LOST {
            Error::DeviceLost(what.to_string())
        } else {
            Error::Device(Self::Vk { what, result })
        }
    }

    /// A `map_err` adapter naming the failed call.
    pub(crate) fn vk(what: &'static str) -> impl Fn(vk::Result) -> Error {
        move |result| Self::from_vk(what, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_loss_is_its_own_error() {
        let lost = DeviceError::vk("queue submit")(vk::Result::ERROR_DEVICE_LOST);
        assert!(matches!(&lost, Error::DeviceLost(what) if what == "queue submit"), "{lost:?}");
        assert!(lost.to_string().contains("upload the asset again"));
        let oom = DeviceError::vk("allocate memory")(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        assert!(matches!(
            oom,
            Error::Device(DeviceError::Vk { result: vk::Result::ERROR_OUT_OF_DEVICE_MEMORY, .. })
        ));
    }
}
