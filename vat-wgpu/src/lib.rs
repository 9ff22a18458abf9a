//! # vat-wgpu
//!
//! The wgpu backend of vat: uploads a validated [`vat_core::container::Asset`] to GPU textures and
//! buffers ([`Renderer::upload`] -> [`GpuAsset`]) and renders any number of [`vat_core::crowd::Crowd`]s
//! (each with its [`GpuCrowd`], from [`Renderer::create_crowd`]) into a
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
//! let target = HeadlessTarget::new(&device, [256, 256], RendererConfig::default())?;
//! let camera = vat_core::crowd::Camera::look_at([0.0, 1.5, 5.0], [0.0, 1.0, 0.0], 0.8, 1.0, 0.1, 500.0);
//! let mut gpu_crowd = renderer.create_crowd(&crowd)?;
//! let mut encoder = device.create_command_encoder(&Default::default());
//! // Any number of crowds, of any uploaded assets, in one frame.
//! let mut crowds = [vat_wgpu::CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
//! let report = renderer.render(&mut encoder, &mut crowds, &camera, target.target(), &RenderOptions::default())?;
//! queue.submit([encoder.finish()]);
//! let rgba8: Vec<u8> = target.read_rgba8(&device, &queue)?;
//! # let _ = (report, rgba8); Ok(()) }
//! ```
//!
//! ## Embedding in a host's frame graph
//! [`Renderer::render`] is a convenience built from three calls a host can place in its own frame:
//! - [`Renderer::prepare`]`(encoder, crowds, camera, options, views)`: plans the frame and records
//!   the uploads, the scatter and culling compute passes and the built-in shadow pass into the host's
//!   encoder, outside any pass; `views` are extra depth views (world-to-clip matrices) for
//!   `draw_depth`.
//! - [`Renderer::draw`]`(pass, crowds, formats)`: the colour draws, into a render pass the host
//!   began (its attachments of [`PassFormats`], its load ops, its viewport and scissor). Nothing is
//!   cleared; vat's draws test the host's depth as [`PassFormats::conventions`] says (`Less` by
//!   default, [`PassConventions::REVERSE_Z`]'s `GreaterEqual` for a reverse-Z host such as Bevy) and
//!   write it.
//! - [`Renderer::draw_depth`]`(pass, crowds, view, formats)`: depth-only draws of extra view `view`
//!   (a shadow cascade, spot light or depth-only view) into a pass the host began.
//! - [`Renderer::draw_prepass`]`(pass, crowds, formats)`: the camera's prepass (Bevy's depth,
//!   normal and motion-vector prepasses, [`PrepassFormats`]): the colour draws' instances with the
//!   same depth, writing the world normal and the motion, so TAA, SSAO and motion blur see the
//!   crowd; [`RenderOptions::jitter`] moves the colour and prepass draws by TAA's sub-pixel offset.
//!
//! `draw` and `draw_depth` leave vat's last pipeline, bind groups 0-2 and index buffer bound and
//! touch nothing else; [`Offscreen::record_host_frame`] runs a host frame on the offscreen target.
//! To present to a window, make its `wgpu::Surface` on [`vat_instance`], open the device with
//! [`presenting_device`] and give it to [`Offscreen::with_device`]; a frame is then
//! `record_host_frame` of `prepare` + a pass over the surface texture with `draw` inside (formats:
//! the surface's), then `Queue::present` (`vat demo` does this).
//! Lighting (sun direction, colour, ambient) comes from [`RenderOptions`]. Shadows come from vat's
//! built-in sun map, or from the host's own map ([`Renderer::set_host_shadow_map`] with
//! `RenderOptions::shadow_map = ShadowMapSource::Host(lookup)`), into which the host draws the crowd
//! with [`Renderer::draw_depth`].
//!
//! A host that opens its own device adds [`required_features`] to its features and merges
//! [`required_limits`] into its limits (`Limits::or_better_values_from`); `examples/wgpu_host.rs`
//! is a complete host in about a hundred lines: its device, its reverse-Z pass and depth, its own
//! object and the crowd. LODs follow the view when the camera knows its viewport
//! (`Camera::with_viewport`).
//!
//! Texel fetches per vertex (vertex shader, linear interpolation): VAT mode 2 (one 64-bit texel per
//! frame, two frames), 4 while cross-fading; bone mode 3 rows x 2 frames per influence: 24 with 4
//! influences (48 cross-fading), 48 with 8 (96); influences of weight 0 are skipped.

mod asset;
pub mod conv;
mod crowd;
mod device;
mod encode;
mod error;
mod offscreen;
mod pipelines;
mod readback;
mod renderer;
mod target;

pub use asset::GpuAsset;
pub use crowd::GpuCrowd;
pub use device::{headless_device, presenting_device, required_features, required_limits, vat_instance};
pub use error::{DeviceError, Error};
pub use offscreen::Offscreen;
pub use pipelines::{PassFormats, PrepassFormats};
pub use renderer::{CrowdDraw, Renderer};
pub use target::{HeadlessTarget, MOTION_FORMAT};

pub use vat_core::backend::pipeline::PassConventions;
pub use vat_core::render::{Culling, FrameReport, RenderMode, RenderOptions};

/// vat-wgpu's texture formats ([`vat_core::backend::TargetFormats`]): `Rgba8UnormSrgb` colour and
/// `Depth32Float` depth by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats;

impl vat_core::backend::TargetFormats for Formats {
    type Format = wgpu::TextureFormat;
    const COLOR: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
    const DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
}

/// How a [`Renderer`] is set up: the formats of the targets it renders into ([`RenderTarget`]'s
/// views) and its fixed variants; vat-core's one definition over wgpu's formats.
pub type RendererConfig = vat_core::backend::RendererConfig<Formats>;

/// Where [`Renderer::render`] draws: views of the caller's colour and depth textures (formats as in
/// [`RendererConfig`]) and their size in pixels.
#[derive(Debug, Clone, Copy)]
pub struct RenderTarget<'a> {
    /// Colour attachment, cleared to [`RenderOptions::clear_color`].
    pub color: &'a wgpu::TextureView,
    /// Depth attachment, cleared to 1.
    pub depth: &'a wgpu::TextureView,
    /// Motion-vector attachment and its format (cleared to 0), drawn into only when
    /// [`RenderOptions::motion_vectors`] is on, which needs one.
    pub motion: Option<(&'a wgpu::TextureView, wgpu::TextureFormat)>,
    /// Width and height in pixels.
    pub size: [u32; 2],
}
