//! How a renderer is set up: one definition for both backends, over each backend's format type.

use crate::encoding::TexelFormat;
use crate::gpu;
use crate::pipeline::{PassConventions, PassFormats, ShaderVariantKey};
use crate::playback::Interpolation;

/// A backend's texture format type and the formats of its default target (implemented by a marker
/// type of each backend: `vat_wgpu::Formats`, `vat_vulkan::Formats`).
pub trait TargetFormats: Copy + std::fmt::Debug + PartialEq {
    /// The backend's texture format (`wgpu::TextureFormat`, `vk::Format`).
    type Format: Copy + std::fmt::Debug + PartialEq;
    /// The default colour format: 8-bit sRGB RGBA.
    const COLOR: Self::Format;
    /// The default depth format: 32-bit float depth.
    const DEPTH: Self::Format;
    /// The format of vat's own shadow map: 32-bit float depth, the default depth format.
    const SHADOW: Self::Format = Self::DEPTH;
}

/// The texel formats whose size a backend's format table changes: `bytes(f)` is the bytes per texel
/// of the backend's format for `f` (`None`: not a plain texel format). A backend's table test
/// expects none (a texture is uploaded with vat's row pitch).
pub fn texel_size_mismatches(bytes: impl Fn(TexelFormat) -> Option<u32>) -> Vec<TexelFormat> {
    TexelFormat::ALL.into_iter().filter(|&f| bytes(f) != Some(f.bytes_per_texel())).collect()
}

/// How a renderer is set up: the formats of the targets it renders into and its fixed variants
/// (`vat_wgpu::RendererConfig` and `vat_vulkan::RendererConfig` are this over the backend's
/// formats).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RendererConfig<F: TargetFormats> {
    /// Format of the render target's colour view (e.g. sRGB RGBA8, or the surface's format).
    pub color_format: F::Format,
    /// Format of the render target's depth view (e.g. 32-bit float depth).
    pub depth_format: F::Format,
    /// Side of vat's built-in square sun shadow map in texels (e.g. 2048; clamped to the device's
    /// texture limit). 0: no built-in map (a 1 x 1 placeholder is bound), for a host that gives its
    /// own (`ShadowMapSource::Host`); a frame asking for built-in shadows is then refused
    /// ([`crate::frame::FrameError::NoBuiltInShadowMap`]).
    pub shadow_map_size: u32,
    /// Frame interpolation of every pipeline (the `INTERPOLATION` override): linear by default.
    pub interpolation: Interpolation,
    /// Depth and winding conventions of the pass the renderer's `render` begins (its depth is
    /// cleared to [`PassConventions::clear_depth`]) and of its `pass_formats`: standard by default,
    /// [`PassConventions::REVERSE_Z`] with a reverse-Z camera
    /// ([`crate::crowd::Camera::look_at_reverse_z`]). vat's own shadow map is standard either way.
    pub conventions: PassConventions,
}

impl<F: TargetFormats> Default for RendererConfig<F> {
    /// sRGB RGBA8 colour, 32-bit float depth, a 2048² shadow map, linear interpolation, standard
    /// depth.
    fn default() -> Self {
        Self {
            color_format: F::COLOR,
            depth_format: F::DEPTH,
            shadow_map_size: 2048,
            interpolation: Interpolation::Linear,
            conventions: PassConventions::STANDARD,
        }
    }
}

impl<F: TargetFormats> RendererConfig<F> {
    /// vat's own shadow pass: depth only, in [`TargetFormats::SHADOW`], one sample.
    pub const SHADOW_PASS: PassFormats<F::Format> = PassFormats::shadow(F::SHADOW);

    /// The formats of the passes a renderer's `render` begins: the colour and depth formats, the
    /// conventions, one sample, no motion attachment.
    pub fn pass_formats(&self) -> PassFormats<F::Format> {
        PassFormats {
            color: Some(self.color_format),
            motion: None,
            depth: self.depth_format,
            conventions: self.conventions,
            samples: 1,
        }
    }
}

/// A compute pipeline of a backend's cache: entry point and variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ComputeKey {
    /// The entry point.
    pub entry: &'static str,
    /// The variant.
    pub variant: ShaderVariantKey,
}

/// The culling pipeline (`cs_cull`, which decodes nothing: one variant).
pub const CULL: ComputeKey = ComputeKey {
    entry: gpu::ENTRY_POINT_CULL,
    variant: ShaderVariantKey { cross_fade: true, ..ShaderVariantKey::NEUTRAL },
};
