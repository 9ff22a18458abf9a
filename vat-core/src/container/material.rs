//! Materials and their textures (format version 4): what a glTF material says about how a surface
//! looks, kept so that a baked character looks like its source.
//!
//! An asset's [`Manifest::materials`](super::Manifest::materials) are indexed by the `MaterialId`
//! vertex stream. Their textures live in at most two texture arrays per asset
//! ([`MaterialTextures`]): one of sRGB-encoded colour layers (base colour) and one of linear data
//! layers (normal maps, metallic-roughness), every layer of an array the same size with a full mip
//! chain, so that one draw still covers a whole LOD whatever material a triangle has.

use serde::{Deserialize, Serialize};

use super::BlobId;

/// Most materials an asset may have: the shaders' material table has 256 entries.
pub const MAX_MATERIALS: usize = 256;

/// Most layers of one material texture array (WebGPU's default `max_texture_array_layers`).
pub const MAX_TEXTURE_LAYERS: usize = 256;

/// How a material's alpha is used (glTF `alphaMode`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AlphaMode {
    /// Alpha is ignored; the surface is fully opaque.
    Opaque,
    /// Fragments whose alpha (base colour factor x texture x vertex colour) is below `cutoff` are
    /// discarded; the rest are opaque. `cutoff` is finite and in `0..=1` (glTF's default 0.5).
    Mask {
        /// The alpha threshold.
        cutoff: f32,
    },
    /// Alpha blending as authored. A crowd cannot be sorted back to front per triangle, so vat
    /// draws it as [`AlphaMode::Mask`] with cutoff 0.5 (the bake says so in a note).
    Blend,
}

impl AlphaMode {
    /// The cutoff the shaders discard below: `cutoff` for a mask, 0.5 for blend, 0 (nothing is
    /// discarded) for opaque.
    pub fn shader_cutoff(self) -> f32 {
        match self {
            AlphaMode::Opaque => 0.0,
            AlphaMode::Mask { cutoff } => cutoff,
            AlphaMode::Blend => 0.5,
        }
    }
}

/// How texture coordinates outside `0..1` are mapped back into it (glTF sampler `wrapS`/`wrapT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TextureWrap {
    /// The texture repeats (glTF's default).
    Repeat,
    /// Coordinates are clamped to the edge texels.
    ClampToEdge,
    /// The texture repeats, every other copy mirrored.
    MirroredRepeat,
}

impl TextureWrap {
    /// The code the shader's `vat_wrap_uv` takes (0 repeat, 1 clamp to edge, 2 mirrored repeat).
    pub const fn code(self) -> u32 {
        match self {
            TextureWrap::Repeat => 0,
            TextureWrap::ClampToEdge => 1,
            TextureWrap::MirroredRepeat => 2,
        }
    }
}

/// Texture filtering (glTF sampler `magFilter`/`minFilter`), recorded as authored. The shaders
/// sample every material texture trilinearly; an asset that asked for nearest filtering says so in
/// a bake note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TextureFilter {
    /// Nearest texel (and nearest mip for minification).
    Nearest,
    /// Bilinear (and linear between mips for minification).
    Linear,
}

/// One texture a material uses: a layer of one of the asset's texture arrays and how to sample it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextureBinding {
    /// Layer of the array ([`MaterialTextures::color`] for a base colour texture,
    /// [`MaterialTextures::data`] for the others); `< layers` of that array.
    pub layer: u32,
    /// Wrap along u (glTF `wrapS`).
    pub wrap_u: TextureWrap,
    /// Wrap along v (glTF `wrapT`).
    pub wrap_v: TextureWrap,
    /// Magnification filter, as authored.
    pub mag_filter: TextureFilter,
    /// Minification filter, as authored.
    pub min_filter: TextureFilter,
}

/// A material: glTF's metallic-roughness model, what vat's lit shading and a host's shaders read.
///
/// Colours are linear RGB(A); the base colour factor multiplies the base colour texture (decoded
/// from sRGB) and the vertex colour (`Color0` stream), and the instance's tint multiplies the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Material {
    /// Name as authored (may be empty; not necessarily unique).
    pub name: String,
    /// Linear RGBA base colour factor, each finite and in `0..=1`.
    pub base_color_factor: [f32; 4],
    /// The base colour texture (sRGB), a layer of [`MaterialTextures::color`].
    pub base_color_texture: Option<TextureBinding>,
    /// Metalness, finite, `0..=1` (multiplies the texture's blue channel).
    pub metallic_factor: f32,
    /// Perceptual roughness, finite, `0..=1` (multiplies the texture's green channel).
    pub roughness_factor: f32,
    /// The metallic-roughness texture (linear; green roughness, blue metalness), a layer of
    /// [`MaterialTextures::data`].
    pub metallic_roughness_texture: Option<TextureBinding>,
    /// The tangent-space normal map (linear, glTF's +Y-up convention), a layer of
    /// [`MaterialTextures::data`]. Applied along the decoded tangent frame; without tangents the
    /// geometric normal is used.
    pub normal_texture: Option<TextureBinding>,
    /// Scale of the normal map's x and y, finite.
    pub normal_scale: f32,
    /// Linear RGB emitted light, each finite and `>= 0`.
    pub emissive_factor: [f32; 3],
    /// How alpha is used.
    pub alpha_mode: AlphaMode,
    /// Whether back faces are drawn (lit with the flipped normal). Single-sided materials are
    /// drawn with back faces culled.
    pub double_sided: bool,
}

impl Default for Material {
    /// glTF's default material: white, fully metallic and rough, opaque, single-sided.
    fn default() -> Self {
        Self {
            name: String::new(),
            base_color_factor: [1.0; 4],
            base_color_texture: None,
            metallic_factor: 1.0,
            roughness_factor: 1.0,
            metallic_roughness_texture: None,
            normal_texture: None,
            normal_scale: 1.0,
            emissive_factor: [0.0; 3],
            alpha_mode: AlphaMode::Opaque,
            double_sided: false,
        }
    }
}

/// How a texture array's texels encode colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TextureColorSpace {
    /// sRGB-encoded RGB, linear alpha (a GPU's `Rgba8UnormSrgb`).
    Srgb,
    /// Linear values (a GPU's `Rgba8Unorm`).
    Linear,
}

/// Where a layer of a texture array came from, for reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextureSource {
    /// The image's name or URI as authored (e.g. `"CesiumMan_img0.jpg"`), or `"image <k>"`.
    pub name: String,
    /// The image's size before it was resampled to the array's layer size, in texels.
    pub width: u32,
    /// See [`TextureSource::width`].
    pub height: u32,
}

/// A texture array of RGBA8 layers of one size, each with a full mip chain.
///
/// The blob holds mip level 0 of every layer (layer 0 first), then mip level 1 of every layer, and
/// so on down to 1x1: level `m` is `max(width >> m, 1) x max(height >> m, 1)` texels, rows tightly
/// packed, 4 bytes per texel, so the blob is `4 * layers * sum_m(w_m * h_m)` bytes. Each level is
/// the box-filtered (in linear light, for sRGB arrays) reduction of the one above.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextureArray {
    /// Layer width in texels, `1..=max_texture_dimension`.
    pub width: u32,
    /// Layer height in texels, `1..=max_texture_dimension`.
    pub height: u32,
    /// Mip levels, always the full chain: `floor(log2(max(width, height))) + 1`.
    pub mip_levels: u32,
    /// How the texels encode colour.
    pub color_space: TextureColorSpace,
    /// One entry per layer (`>= 1` layers).
    pub layers: Vec<TextureSource>,
    /// The texels (see the type's docs for the order).
    pub texels: BlobId,
}

impl TextureArray {
    /// The full mip chain's level count for a `width x height` layer.
    pub fn full_mip_levels(width: u32, height: u32) -> u32 {
        32 - width.max(height).max(1).leading_zeros()
    }

    /// Size of mip level `level` of a layer, `(max(width >> level, 1), max(height >> level, 1))`.
    pub fn mip_size(&self, level: u32) -> (u32, u32) {
        ((self.width >> level).max(1), (self.height >> level).max(1))
    }

    /// Byte offset of mip level `level` (all layers) in the blob, and its length, or `None` past the
    /// chain or on overflow.
    pub fn mip_range(&self, level: u32) -> Option<(u64, u64)> {
        if level >= self.mip_levels {
            return None;
        }
        let layers = self.layers.len() as u64;
        let mut offset = 0u64;
        for m in 0..=level {
            let (w, h) = self.mip_size(m);
            let len = u64::from(w).checked_mul(u64::from(h))?.checked_mul(4)?.checked_mul(layers)?;
            if m == level {
                return Some((offset, len));
            }
            offset = offset.checked_add(len)?;
        }
        None
    }

    /// The blob's length in bytes, or `None` on overflow.
    pub fn byte_len(&self) -> Option<u64> {
        let last = self.mip_levels.checked_sub(1)?;
        let (offset, len) = self.mip_range(last)?;
        offset.checked_add(len)
    }
}

/// The asset's material textures: at most one array per colour space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaterialTextures {
    /// Base colour textures ([`TextureColorSpace::Srgb`]).
    pub color: Option<TextureArray>,
    /// Normal and metallic-roughness textures ([`TextureColorSpace::Linear`]).
    pub data: Option<TextureArray>,
}

/// A material variant (glTF `KHR_materials_variants`): which material each material id is drawn
/// with while an instance shows this variant. An instance's material variant `v` (bits 0..8 of its
/// variant bits, [`crate::instance::InstanceRecord::material_variant`]) selects variant `v - 1`
/// for `1 <= v <= variants`; 0, and any `v` past the asset's variants, draws the materials as
/// authored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaterialVariant {
    /// Name as authored (e.g. `"midnight"`).
    pub name: String,
    /// One material index per material (`materials.len() == Manifest::materials.len()`), each
    /// `< Manifest::materials.len()`.
    pub materials: Vec<u16>,
}
