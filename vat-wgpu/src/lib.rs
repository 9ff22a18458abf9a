//! # vat-wgpu
//!
//! The wgpu backend of vat: uploads a validated [`vat_core::container::Asset`] to GPU textures and
//! buffers ([`Renderer::upload`] -> [`GpuAsset`]) and renders a [`vat_core::crowd::Crowd`] into a
//! caller-provided colour + depth target ([`Renderer::render`]), with a shadow pass, CPU or GPU-driven
//! culling, VAT or bone mode and socket attachments.
//!
//! The backend is thin on purpose: the shader text, the GPU-visible structs, the binding table and all
//! crowd logic (culling, LOD, fades, dirty tracking) live in `vat_core`; this crate creates resources,
//! maps the binding table to wgpu layouts ([`conv`]) and records passes. The Vulkan backend mirrors the
//! same vocabulary (`Renderer`, `GpuAsset`, `RenderOptions`, `FrameReport`).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use vat_wgpu::{HeadlessTarget, RenderOptions, Renderer, RendererConfig, headless_device};
//! let bytes = std::fs::read("crowd.vat")?;
//! let asset = vat_core::container::Asset::parse(&bytes)?;
//! let (device, queue, _info) = headless_device()?;
//! let mut renderer = Renderer::new(&device, &queue, RendererConfig::default())?;
//! let gpu_asset = renderer.upload(&asset)?;
//! let crowd_asset = vat_core::crowd::CrowdAsset::from_manifest(asset.manifest())?;
//! let mut crowd = vat_core::crowd::Crowd::new(crowd_asset, Default::default());
//! crowd.spawn([0.0, 0.0, 0.0], 0.0, 0);
//! let target = HeadlessTarget::new(&device, [256, 256], RendererConfig::default());
//! let camera = vat_core::crowd::Camera::look_at([0.0, 1.5, 5.0], [0.0, 1.0, 0.0], 0.8, 1.0, 0.1, 500.0);
//! let mut encoder = device.create_command_encoder(&Default::default());
//! let report =
//!     renderer.render(&mut encoder, &gpu_asset, &mut crowd, &camera, target.target(), &RenderOptions::default())?;
//! queue.submit([encoder.finish()]);
//! let rgba8: Vec<u8> = target.read_rgba8(&device, &queue)?;
//! # let _ = (report, rgba8); Ok(()) }
//! ```
//!
//! Texel fetches per vertex (vertex shader, linear interpolation): VAT mode 2 (one 64-bit texel per
//! frame, two frames), 4 while cross-fading; bone mode 3 rows x 2 frames per influence: 24 with 4
//! influences (48 cross-fading), 48 with 8 (96); influences of weight 0 are skipped.

pub mod conv;
mod device;
mod error;
mod renderer;
mod target;

pub use device::headless_device;
pub use error::RenderError;
pub use renderer::{GpuAsset, Renderer};
pub use target::HeadlessTarget;

use vat_core::crowd::CrowdStats;
use vat_core::playback::Interpolation;

/// How a [`Renderer`] is set up: the formats of the targets it renders into and its fixed variants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RendererConfig {
    /// Format of [`RenderTarget::color`] (e.g. `Rgba8UnormSrgb`, or the surface format).
    pub color_format: wgpu::TextureFormat,
    /// Format of [`RenderTarget::depth`] (e.g. `Depth32Float`).
    pub depth_format: wgpu::TextureFormat,
    /// Side of the square shadow map in texels (e.g. 2048); at least 1.
    pub shadow_map_size: u32,
    /// Frame interpolation of every pipeline (the `INTERPOLATION` override): linear by default.
    pub interpolation: Interpolation,
}

impl Default for RendererConfig {
    /// `Rgba8UnormSrgb` colour, `Depth32Float` depth, a 2048² shadow map, linear interpolation.
    fn default() -> Self {
        Self {
            color_format: wgpu::TextureFormat::Rgba8UnormSrgb,
            depth_format: wgpu::TextureFormat::Depth32Float,
            shadow_map_size: 2048,
            interpolation: Interpolation::Linear,
        }
    }
}

/// Which vertex path displaces the mesh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RenderMode {
    /// Vertex animation texture: one 64-bit texel per vertex per frame (the default).
    #[default]
    Vat,
    /// Skinning from the bone texture (assets baked with `--bones`).
    Bone,
}

/// Where instances are culled and sorted into LOD batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Culling {
    /// `Crowd::prepare_frame` culls grid cells on the CPU; one draw per batch of cells (the default).
    #[default]
    Cpu,
    /// A compute pass culls every instance and writes indexed-indirect draws, one per LOD: the draw
    /// count does not depend on the number of cells, and the CPU only uploads changed records.
    Gpu,
}

/// Per-frame choices of [`Renderer::render`]. Cross-fade, LOD bias, far pool, attachments and the
/// shadow/cross-fade LOD limits are the crowd's (`vat_core::crowd::CrowdConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderOptions {
    /// VAT or bone mode.
    pub mode: RenderMode,
    /// CPU or GPU culling.
    pub culling: Culling,
    /// Render the shadow pass and sample it. Casters are drawn only when the crowd's
    /// `CrowdConfig::shadows` is on as well (the crowd decides which batches cast).
    pub shadows: bool,
    /// Unit vector from the scene towards the sun, world space (normalised by the renderer).
    pub sun_direction: [f32; 3],
    /// Ambient light, linear, 0..=1.
    pub ambient: f32,
    /// Linear RGBA the colour target is cleared to.
    pub clear_color: [f64; 4],
    /// How far from the camera the shadow map reaches, metres.
    pub shadow_distance: f32,
    /// Draw a ground square at `y = 0` around the camera (half side `ground_half_extent`), lit and
    /// shadowed like the crowd. Off by default (the background is then the clear colour).
    pub ground: bool,
    /// Half the side of the ground square, metres.
    pub ground_half_extent: f32,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            mode: RenderMode::Vat,
            culling: Culling::Cpu,
            shadows: true,
            sun_direction: [0.4, 0.8, 0.3],
            ambient: 0.3,
            clear_color: [0.55, 0.65, 0.8, 1.0],
            shadow_distance: 60.0,
            ground: false,
            ground_half_extent: 250.0,
        }
    }
}

/// Where [`Renderer::render`] draws: views of the caller's colour and depth textures (formats as in
/// [`RendererConfig`]) and their size in pixels.
#[derive(Debug, Clone, Copy)]
pub struct RenderTarget<'a> {
    /// Colour attachment, cleared to [`RenderOptions::clear_color`].
    pub color: &'a wgpu::TextureView,
    /// Depth attachment, cleared to 1.
    pub depth: &'a wgpu::TextureView,
    /// Width and height in pixels.
    pub size: [u32; 2],
}

/// What one [`Renderer::render`] call did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameReport {
    /// The crowd's statistics of this frame.
    ///
    /// CPU culling: those of `Crowd::prepare_frame`. GPU culling runs no CPU culling, so only what the
    /// CPU knows is filled in: `simulated` (the crowd's instance count) and `uploaded_record_bytes`
    /// (the bytes of the crowd's dirty record ranges, as on the CPU path); every other field is 0.
    /// Which instances the GPU drew, at which LOD, is known only on the GPU: read it back with
    /// [`Renderer::read_gpu_visible`] after submitting. The bytes actually written this frame
    /// (including a full upload) are in [`uploaded_bytes`](Self::uploaded_bytes).
    pub stats: CrowdStats,
    /// Draw calls recorded in the colour pass (bodies).
    pub draws_main: u32,
    /// Draw calls recorded in the shadow pass (0 when shadows are off).
    pub draws_shadow: u32,
    /// Draw calls of socket attachments in the colour pass.
    pub draws_attachments: u32,
    /// Draw calls of the ground (0 or 1).
    pub draws_ground: u32,
    /// Compute dispatches recorded (GPU culling: 1).
    pub dispatches: u32,
    /// Bytes written to GPU buffers this frame (records, instance list, uniforms).
    pub uploaded_bytes: u64,
    /// The mode drawn.
    pub mode: RenderMode,
    /// The culling path used.
    pub culling: Culling,
}
