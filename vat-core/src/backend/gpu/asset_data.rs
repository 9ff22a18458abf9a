//! What an uploaded asset's group-1 resources hold: [`AssetConstants`], the textures of every mode
//! (with 1x1 stand-ins), clip, material, rest-vertex and attachment records.

use super::*;

/// Constants of one baked asset (group 1, binding 2; uniform, 144 bytes).
///
/// For a rigid asset (`piece_count > 0`) `bounds_min` / `bounds_extent` are the box of every vertex
/// at every frame (culling's box), `frame_count` the piece texture's frames, `texture_width` and
/// `position_bits` 0 and `vertex_format` that of Packed64 (unused).
///
/// Kept in sync with `struct AssetConstants` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct AssetConstants {
    /// Lowest corner of the bake's bounding box, metres, object space.
    pub bounds_min: [f32; 3],
    /// Vertices per frame.
    pub vertex_count: u32,
    /// Size of the bounding box along each axis, metres, `>= 0`.
    pub bounds_extent: [f32; 3],
    /// Frames of all clips together (rows of the clip row map).
    pub frame_count: u32,
    /// Packed64 position bits per axis `[x, y, z, 0]`: each `<= 20`, `x + y + z == 40`; the fourth is
    /// reserved and must be 0.
    pub position_bits: [u32; 4],
    /// Width of the animation texture in texels; texel `t` sits at `(t % width, t / width)`.
    pub texture_width: u32,
    /// Entries of the clip table (`clips`, group 1 binding 1).
    pub clip_count: u32,
    /// Bones per frame of the bone texture, 0 without one.
    pub bone_count: u32,
    /// [`vertex_format_code`] of the asset's vertex format.
    pub vertex_format: u32,
    /// Width of the bone texture in texels, 0 without one.
    pub bone_texture_width: u32,
    /// Bone influences per vertex of the joints/weights streams (4 or 8), 0 without bones.
    pub influences: u32,
    /// Vertices of all socket attachments together ([`AttachmentMesh`]), 0 without attachments.
    pub attachment_vertex_count: u32,
    /// Morph targets of the live morph layer ([`crate::container::MorphAnimation`]), 0 without one
    /// (bone mode then adds no deltas).
    pub morph_target_count: u32,
    /// Width of the morph delta texture (`min(vertex_count, 2048)`), 0 without a morph layer.
    pub morph_texture_width: u32,
    /// Rows per band of the morph delta texture, 0 without a morph layer.
    pub morph_rows_per_band: u32,
    /// Width of the morph weights texture in texels, 0 without a morph layer.
    pub morph_weights_width: u32,
    /// Pieces of the rigid animation ([`crate::container::RigidAnimation`]), 0 for a soft asset.
    pub piece_count: u32,
    /// Lowest corner of the rigid pivot box, metres, object space (0 for a soft asset).
    pub pivot_min: [f32; 3],
    /// Width of the piece texture in texels (texel `frame * piece_count + piece` at
    /// `(t % width, t / width)`), 0 for a soft asset.
    pub piece_texture_width: u32,
    /// Size of the rigid pivot box along each axis, metres, `>= 0` (0 for a soft asset).
    pub pivot_extent: [f32; 3],
    /// Width of the rigid vertex texture in texels (texel `v` at `(v % width, v / width)`), 0 for a
    /// soft asset.
    pub rigid_vertex_width: u32,
    /// 1 when the asset has per-frame tangent frames (`vat_tangent_texture`), else 0: the VAT
    /// path then decodes each vertex's tangent (one more texel fetch).
    pub tangents: u32,
    /// Materials of the asset ([`crate::container::Manifest::materials`]): the fragment stage shades
    /// with the material table and textures when not 0, with the built-in palette when 0.
    pub material_count: u32,
    /// Material variants of the asset ([`crate::container::Manifest::material_variants`]): an
    /// instance's material variant `v` in `1..=material_variant_count` draws variant `v - 1`.
    pub material_variant_count: u32,
    /// Width of the fluid lookup texture in texels ([`crate::fluid`]; frame `f`'s entry of corner
    /// `c` is lane `e % 4` of texel `e / 4`, `e = f * 4 * ceil(vertex_count / 4) + c`), 0 for other
    /// assets. A fluid asset's `vertex_count` is its pool's corners and `frame_count` its frames.
    pub fluid_lookup_width: u32,
    /// Lowest corner of the box particle centres are quantised into ([`crate::sprite`]), metres,
    /// object space; 0 for other assets. (`bounds_min`/`bounds_extent` of a sprite asset are its
    /// card box, [`crate::container::SpriteAnimation::card_bounds`], which culling uses.)
    pub particle_min: [f32; 3],
    /// Width of the particle texture in texels (texel `frame * slots + slot` at
    /// `(t % width, t / width)`, `slots = vertex_count / 4`), 0 for other assets.
    pub particle_texture_width: u32,
    /// Size of the particle centre box along each axis, metres, `>= 0` (0 for other assets).
    pub particle_extent: [f32; 3],
    /// The largest card edge length, metres (a size field of 65535), 0 for other assets.
    pub particle_max_size: f32,
    /// Centre of the impostor tier's bounding sphere, metres, object space (0 without a tier).
    pub impostor_centre: [f32; 3],
    /// Its radius, metres (0 without a tier).
    pub impostor_radius: f32,
    /// Views per side of the tier's grid; 0 without a tier (then no card is drawn).
    pub impostor_views_per_side: u32,
    /// The grid's coverage: [`IMPOSTOR_COVERAGE_HEMI`] or [`IMPOSTOR_COVERAGE_FULL`] (0 without a tier).
    pub impostor_coverage: u32,
    /// Pixels per side of one view's image (0 without a tier).
    pub impostor_tile_size: u32,
    /// Mip levels of the tier's texture arrays (0 without a tier).
    pub impostor_mip_levels: u32,
    /// Layers of the tier's normal-depth array, and of each colour set of its colour array
    /// ([`crate::format::impostor::ImpostorTier::layer_count`]; 0 without a tier).
    pub impostor_layers: u32,
    /// Material variants the colour array has a set of its own for
    /// ([`crate::container::Manifest::impostor_material_variants`]): an instance showing material
    /// variant `v` in `1..=impostor_material_variants` reads colour layer `v * impostor_layers + l`
    /// for image `l`; any other, layer `l` (the authored materials). 0 without.
    pub impostor_material_variants: u32,
    /// The skin-residual format's position step `2 B_p / sqrt(3)`, metres
    /// ([`crate::format::skin_residual::ResidualBounds::position_step`]); 0 for other formats.
    pub residual_position_step: f32,
    /// The skin-residual format's tangent-plane normal step `sqrt(2) B_n`; 0 for other formats.
    pub residual_normal_step: f32,
    /// The skin-residual format's octahedral step `sqrt(2) B_n / 3`; 0 for other formats. (The
    /// residual texture's width is [`Self::texture_width`].)
    pub residual_oct_step: f32,
    /// Padding to a 16-byte multiple (zero).
    pub _residual_pad0: u32,
    /// Padding (zero).
    pub _residual_pad1: u32,
    /// Padding (zero).
    pub _residual_pad2: u32,
}

const _: () = assert!(std::mem::size_of::<AssetConstants>() == 240);

/// [`AssetConstants::impostor_coverage`] of a hemi-octahedral grid (the WGSL `IMPOSTOR_HEMI`).
pub const IMPOSTOR_COVERAGE_HEMI: u32 = 1;
/// [`AssetConstants::impostor_coverage`] of a full octahedral grid (the WGSL `IMPOSTOR_FULL`).
pub const IMPOSTOR_COVERAGE_FULL: u32 = 2;

impl AssetConstants {
    /// The constants of a validated asset's vertex animation (or rigid animation); `None` if it was
    /// baked with neither. Backends upload this as is: they never re-derive it.
    pub fn from_manifest(manifest: &crate::container::Manifest) -> Option<Self> {
        if let (None, Some(ra)) = (&manifest.vertex_animation, &manifest.rigid_animation) {
            return Some(Self {
                bounds_min: ra.bounds.min,
                vertex_count: manifest.vertex_count,
                bounds_extent: ra.bounds.extent,
                frame_count: ra.layout.frame_count,
                position_bits: [0; 4],
                texture_width: 0,
                clip_count: manifest.clips.len() as u32,
                bone_count: 0,
                vertex_format: vertex_format_code(VertexFormat::Packed64),
                bone_texture_width: 0,
                influences: 0,
                attachment_vertex_count: manifest.attachments.iter().map(|a| a.vertex_count).sum(),
                morph_target_count: 0,
                morph_texture_width: 0,
                morph_rows_per_band: 0,
                morph_weights_width: 0,
                piece_count: ra.layout.vertex_count,
                pivot_min: ra.pivot_bounds.min,
                piece_texture_width: ra.layout.width,
                pivot_extent: ra.pivot_bounds.extent,
                rigid_vertex_width: ra.vertex_layout.width,
                tangents: 0,
                material_count: manifest.materials.len() as u32,
                material_variant_count: manifest.material_variants.len() as u32,
                fluid_lookup_width: 0,
                particle_min: [0.0; 3],
                particle_texture_width: 0,
                particle_extent: [0.0; 3],
                particle_max_size: 0.0,
                ..Zeroable::zeroed()
            });
        }
        if let (None, Some(sa)) = (&manifest.vertex_animation, &manifest.sprite_animation) {
            let cards = sa.card_bounds();
            return Some(Self {
                bounds_min: cards.min,
                vertex_count: manifest.vertex_count,
                bounds_extent: cards.extent,
                frame_count: sa.layout.frame_count,
                position_bits: [0; 4],
                texture_width: 0,
                clip_count: manifest.clips.len() as u32,
                bone_count: 0,
                vertex_format: vertex_format_code(VertexFormat::Packed64),
                bone_texture_width: 0,
                influences: 0,
                attachment_vertex_count: 0,
                morph_target_count: 0,
                morph_texture_width: 0,
                morph_rows_per_band: 0,
                morph_weights_width: 0,
                piece_count: 0,
                pivot_min: [0.0; 3],
                piece_texture_width: 0,
                pivot_extent: [0.0; 3],
                rigid_vertex_width: 0,
                tangents: 0,
                material_count: manifest.materials.len() as u32,
                material_variant_count: manifest.material_variants.len() as u32,
                fluid_lookup_width: 0,
                particle_min: sa.position_bounds.min,
                particle_texture_width: sa.layout.width,
                particle_extent: sa.position_bounds.extent,
                particle_max_size: sa.max_size,
                ..Zeroable::zeroed()
            });
        }
        let va = manifest.vertex_animation.as_ref()?;
        let fluid = manifest.fluid_animation.as_ref();
        let morph = manifest.morph_animation.as_ref();
        let [bx, by, bz] = va.position_bits;
        let residual = manifest.skin_residual.as_ref();
        let steps = residual.map(|r| crate::format::skin_residual::ResidualBounds {
            position_m: r.position_bound_m,
            normal_rad: r.normal_bound_rad,
        });
        Some(Self {
            bounds_min: va.bounds.min,
            vertex_count: if fluid.is_some() { manifest.vertex_count } else { va.layout.vertex_count },
            bounds_extent: va.bounds.extent,
            frame_count: fluid.map_or(va.layout.frame_count, |f| f.lookup_layout.frame_count),
            position_bits: [bx, by, bz, 0],
            texture_width: residual.map_or(va.layout.width, |r| r.width),
            clip_count: manifest.clips.len() as u32,
            bone_count: manifest.bone_animation.as_ref().map_or(0, |b| b.layout.bone_count),
            vertex_format: vertex_format_code(va.format),
            bone_texture_width: manifest.bone_animation.as_ref().map_or(0, |b| b.layout.width),
            influences: manifest.bone_animation.as_ref().map_or(0, |b| b.influences),
            attachment_vertex_count: manifest.attachments.iter().map(|a| a.vertex_count).sum(),
            morph_target_count: morph.map_or(0, |m| m.layout.target_count),
            morph_texture_width: morph.map_or(0, |m| m.layout.width),
            morph_rows_per_band: morph.map_or(0, |m| m.layout.rows_per_band),
            morph_weights_width: morph.map_or(0, |m| m.weights_layout.width),
            tangents: u32::from(va.tangents.is_some()),
            piece_count: 0,
            pivot_min: [0.0; 3],
            piece_texture_width: 0,
            pivot_extent: [0.0; 3],
            rigid_vertex_width: 0,
            material_count: manifest.materials.len() as u32,
            material_variant_count: manifest.material_variants.len() as u32,
            fluid_lookup_width: fluid.map_or(0, |f| f.lookup_layout.width),
            particle_min: [0.0; 3],
            particle_texture_width: 0,
            particle_extent: [0.0; 3],
            particle_max_size: 0.0,
            residual_position_step: steps.map_or(0.0, |b| b.position_step()),
            residual_normal_step: steps.map_or(0.0, |b| b.normal_step()),
            residual_oct_step: steps.map_or(0.0, |b| b.oct_step()),
            ..Self::impostor(manifest)
        })
    }

    /// The impostor fields of `manifest`'s tier (all zero without one), the others zero.
    fn impostor(manifest: &crate::container::Manifest) -> Self {
        use crate::format::impostor::ViewCoverage;
        let Some(t) = manifest.impostors.as_ref() else { return Zeroable::zeroed() };
        Self {
            impostor_centre: t.centre,
            impostor_radius: t.radius,
            impostor_views_per_side: t.grid.views_per_side,
            impostor_coverage: match t.grid.coverage {
                ViewCoverage::Hemi => IMPOSTOR_COVERAGE_HEMI,
                ViewCoverage::Full => IMPOSTOR_COVERAGE_FULL,
            },
            impostor_tile_size: t.tile_size,
            impostor_mip_levels: t.mip_levels,
            impostor_layers: u32::try_from(t.layer_count()).unwrap_or(u32::MAX),
            impostor_material_variants: manifest.impostor_material_variants,
            ..Zeroable::zeroed()
        }
    }
}

/// A texture a backend uploads as it is: its size, texel format and texel bytes (rows of `width`
/// texels, tightly packed, `width * height * format.bytes_per_texel()` bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextureData<'a> {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Texel format.
    pub format: TexelFormat,
    /// The texels.
    pub bytes: &'a [u8],
}

/// One zero `Rgba32Float` texel: the 1x1 stand-in of an absent float texture.
pub(crate) static ZERO_RGBA32F_TEXEL: [u8; 16] = [0; 16];
/// One zero `Rgba8Uint` texel: the 1x1 stand-in of an absent unsigned texture.
static ZERO_RGBA8U_TEXEL: [u8; 4] = [0; 4];

/// The group 1 bindings of the vertex animation textures, every one present in every asset's bind
/// group: `vat_texture`, `vat_texture_1`, `vat_texture_2` (`texture_2d<u32>`), `vat_float_texture`,
/// `vat_float_texture_1` (`texture_2d<f32>`, not filterable), and `vat_tangent_texture` (the
/// `Rgba16Float` tangent-frame quaternions of `--tangents`, `texture_2d<f32>`). See
/// [`vertex_texture_bindings`].
pub const VERTEX_TEXTURE_BINDINGS: [&str; 6] = [
    "vat_texture",
    "vat_texture_1",
    "vat_texture_2",
    "vat_float_texture",
    "vat_float_texture_1",
    "vat_tangent_texture",
];

/// The bindings (names in [`VERTEX_TEXTURE_BINDINGS`]) that hold the textures of `format`, one per
/// texture in [`VertexFormat::texel_formats`] order:
///
/// | format | textures | bindings |
/// |---|---|---|
/// | Packed64 | `Rg32Uint` | `vat_texture` |
/// | Unorm16 | `Rgba16Uint`, `Rg16Uint` | `vat_texture`, `vat_texture_1` |
/// | F16 | `Rgba16Float`, `Rg16Float` | `vat_float_texture`, `vat_float_texture_1` |
/// | F32 | `Rgba32Float`, `Rg32Float` | `vat_float_texture`, `vat_float_texture_1` |
/// | Unorm8 | `Rgba8Uint`, `Rg8Uint` | `vat_texture`, `vat_texture_1` |
/// | Split8 | `Rgba8Uint` x 3 | `vat_texture`, `vat_texture_1`, `vat_texture_2` |
/// | SkinResidual | none (its residual texture, `Rg32Uint`, goes to `vat_texture`: [`vertex_textures`]) | |
pub const fn vertex_texture_bindings(format: VertexFormat) -> &'static [&'static str] {
    match format {
        VertexFormat::Packed64 => &["vat_texture"],
        VertexFormat::Unorm16 | VertexFormat::Unorm8 => &["vat_texture", "vat_texture_1"],
        VertexFormat::Split8 => &["vat_texture", "vat_texture_1", "vat_texture_2"],
        VertexFormat::F16 | VertexFormat::F32 => &["vat_float_texture", "vat_float_texture_1"],
        // Its one texture is the skin-residual section's, not a per-vertex-frame texture.
        VertexFormat::SkinResidual => &[],
    }
}

/// What one vertex-texture binding holds for an asset ([`vertex_textures`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VertexTexture<'a> {
    /// The binding's WGSL name (one of [`VERTEX_TEXTURE_BINDINGS`]).
    pub name: &'static str,
    /// What to upload: one of the asset's textures, or a 1x1 zero stand-in.
    pub data: TextureData<'a>,
    /// Whether `data` is a stand-in (the format does not use this binding; the shader never reads it).
    pub stand_in: bool,
}

/// The vertex animation textures of a validated asset, one per binding of
/// [`VERTEX_TEXTURE_BINDINGS`] (in that order): the format's textures where
/// [`vertex_texture_bindings`] puts them, each `layout.width x layout.height` in its
/// [`TexelFormat`], and 1x1 zero stand-ins (`Rgba8Uint` for the unsigned bindings, `Rgba32Float` for
/// the float ones) elsewhere; all six stand-ins for a rigid asset (its pieces live in
/// [`crate::modes::rigid::rigid_textures`]) and a sprite asset (its particles live in [`crate::modes::sprite::sprite_particle_texture`]).
/// `None` if the asset has no vertex animation texture, rigid animation or sprite animation. Backends upload these as they are; they never re-derive them.
pub fn vertex_textures<'a>(asset: &crate::container::Asset<'a>) -> Option<[VertexTexture<'a>; 6]> {
    let m = asset.manifest();
    if m.vertex_animation.is_none() && m.rigid_animation.is_none() && m.sprite_animation.is_none() {
        return None;
    }
    let mut out = VERTEX_TEXTURE_BINDINGS.map(|name| {
        let float = name.starts_with("vat_float") || name == "vat_tangent_texture";
        let data = if float {
            TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Float, bytes: &ZERO_RGBA32F_TEXEL }
        } else {
            TextureData { width: 1, height: 1, format: TexelFormat::Rgba8Uint, bytes: &ZERO_RGBA8U_TEXEL }
        };
        VertexTexture { name, data, stand_in: true }
    });
    let Some(va) = m.vertex_animation.as_ref() else { return Some(out) };
    let textures = va.format.texel_formats().iter().zip(&va.textures);
    for ((&format, &blob), &name) in textures.zip(vertex_texture_bindings(va.format)) {
        let bytes = asset.get_blob(blob)?;
        let slot = out.iter_mut().find(|t| t.name == name)?;
        slot.data = TextureData { width: va.layout.width, height: va.layout.height, format, bytes };
        slot.stand_in = false;
    }
    if let Some(sr) = m.skin_residual.as_ref() {
        let bytes = asset.get_blob(sr.texture)?;
        let slot = out.iter_mut().find(|t| t.name == "vat_texture")?;
        let format = TexelFormat::Rg32Uint;
        slot.data = TextureData { width: sr.width, height: sr.height, format, bytes };
        slot.stand_in = false;
    }
    if let Some(blob) = va.tangents {
        let bytes = asset.get_blob(blob)?;
        let slot = out.iter_mut().find(|t| t.name == "vat_tangent_texture")?;
        let format = TexelFormat::Rgba16Float;
        slot.data = TextureData { width: va.layout.width, height: va.layout.height, format, bytes };
        slot.stand_in = false;
    }
    Some(out)
}

/// The textures of bone mode's live morph layer, `[morph_texture, morph_weights]` (group 1, bindings
/// 9 and 10), borrowed from a validated asset: the delta texture and the weights track of its
/// [`crate::container::MorphAnimation`], or two 1x1 zero `Rgba32Float` textures when it has none, so
/// that every asset binds the same layout (with [`AssetConstants::morph_target_count`] 0 the shader
/// never reads them). Backends upload these as they are; they never re-derive them.
pub fn morph_textures<'a>(asset: &crate::container::Asset<'a>) -> [TextureData<'a>; 2] {
    let dummy =
        TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Float, bytes: &ZERO_RGBA32F_TEXEL };
    let Some(ma) = asset.manifest().morph_animation.as_ref() else { return [dummy, dummy] };
    match (asset.get_blob(ma.texture), asset.get_blob(ma.weights)) {
        (Some(deltas), Some(weights)) => [
            TextureData {
                width: ma.layout.width,
                height: ma.layout.height,
                format: ma.format,
                bytes: deltas,
            },
            TextureData {
                width: ma.weights_layout.width,
                height: ma.weights_layout.height,
                format: crate::layout::MORPH_WEIGHTS_TEXEL_FORMAT,
                bytes: weights,
            },
        ],
        // A parsed asset has both blobs; only a hand-made Asset could lack them.
        _ => [dummy, dummy],
    }
}

/// One zero `Rgba32Uint` texel: the 1x1 stand-in of an absent rigid texture.
pub(crate) static ZERO_RGBA32U_TEXEL: [u8; 16] = [0; 16];

/// The clip table of an asset, in texture order, as the shader reads it.
pub fn clip_records(clips: &[Clip]) -> Vec<ClipRecord> {
    clips.iter().map(ClipRecord::from).collect()
}

/// One clip of an asset as the shader reads it (group 1, binding 1: an array of these; 32 bytes).
///
/// Kept in sync with `struct ClipRecord` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ClipRecord {
    /// Index of the clip's first frame among all frames of the texture.
    pub first_frame: u32,
    /// Stored frames, `>= 1`.
    pub frame_count: u32,
    /// Bit 0: [`CLIP_FLAG_LOOPING`]; other bits 0.
    pub flags: u32,
    /// Frames per second of the bake.
    pub fps: f32,
    /// Duration of one cycle, seconds.
    pub duration: f32,
    /// Metres travelled per cycle, 0 if the clip is not locomotion.
    pub stride: f32,
    /// The clip's first layer of the impostor tier's texture arrays
    /// ([`crate::format::impostor::ImpostorTier::first_layer`]); 0 without a tier.
    pub impostor_first_layer: u32,
    /// The clip's images in the impostor tier (`frames_per_clip`); 0 without a tier.
    pub impostor_frames: u32,
}

const _: () = assert!(std::mem::size_of::<ClipRecord>() == 32);

impl From<&Clip> for ClipRecord {
    fn from(clip: &Clip) -> Self {
        Self {
            first_frame: clip.first_frame,
            frame_count: clip.frame_count,
            flags: match clip.mode {
                ClipMode::Looping => CLIP_FLAG_LOOPING,
                ClipMode::OneShot => 0,
            },
            fps: clip.fps,
            duration: clip.duration,
            stride: clip.stride,
            impostor_first_layer: 0,
            impostor_frames: 0,
        }
    }
}

/// Which instances `cs_decode` decodes (group 2, binding 1; uniform, 16 bytes).
///
/// Kept in sync with `struct DecodeParams` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct DecodeParams {
    /// Index of the first instance record decoded.
    pub first_instance: u32,
    /// Instance records decoded from `first_instance` on; the output holds
    /// `instance_count * vertex_count` [`DecodedVertex`]es.
    pub instance_count: u32,
    /// Keeps the size at 16 bytes; zero.
    pub _pad: [u32; 2],
}

const _: () = assert!(std::mem::size_of::<DecodeParams>() == 16);

/// One vertex decoded by `cs_decode` (group 2, binding 2: an array of these; 48 bytes). Vertex `v` of
/// instance `i` is at index `(i - first_instance) * vertex_count + v`.
///
/// Kept in sync with `struct DecodedVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DecodedVertex {
    /// World position in metres (xyz), `w = 1`.
    pub position: [f32; 4],
    /// Unit world normal (xyz), `w = 0`.
    pub normal: [f32; 4],
    /// Unit world tangent (xyz, perpendicular to the normal) and the bitangent sign (`w`, ±1;
    /// `bitangent = cross(normal, tangent) * w`); all zero when the asset has no tangent frames or
    /// the vertex path decodes none (VAT mode decodes them).
    pub tangent: [f32; 4],
}

const _: () = assert!(std::mem::size_of::<DecodedVertex>() == 48);

/// Rest pose, material and surface attributes of one vertex (group 1, binding 6: an array of
/// these, one per vertex; 48 bytes). Built by [`rest_vertices`].
///
/// Kept in sync with `struct RestVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RestVertex {
    /// Bind-pose position, metres, object space.
    pub position: [f32; 3],
    /// Material id (0 without a material stream).
    pub material: u32,
    /// Bind-pose unit normal.
    pub normal: [f32; 3],
    /// Linear RGBA vertex colour (the `Color0` stream), packed as `unorm8x4` (r in the low byte),
    /// WGSL `unpack4x8unorm`; `0xffff_ffff` (white) without one.
    pub color: u32,
    /// First texture coordinates (the `Uv0` stream; glTF convention, origin top-left), 0 without.
    pub uv: [f32; 2],
    /// Keeps the size at 48 bytes; zero.
    pub _pad: [u32; 2],
}

const _: () = assert!(std::mem::size_of::<RestVertex>() == 48);

/// `rgba` (each clamped to `0..=1`) packed as WGSL's `pack4x8unorm` does: round to nearest, r in
/// the low byte.
pub fn pack_unorm8x4(rgba: [f32; 4]) -> u32 {
    let byte = |c: f32| (c.clamp(0.0, 1.0) * 255.0).round() as u32;
    byte(rgba[0]) | (byte(rgba[1]) << 8) | (byte(rgba[2]) << 16) | (byte(rgba[3]) << 24)
}

/// No texture (a [`MaterialRecord`] layer index).
pub const NO_TEXTURE_LAYER: u32 = u32::MAX;

/// [`MaterialRecord::flags`] bit: the material is double-sided.
pub const MATERIAL_DOUBLE_SIDED: u32 = 1;

/// One material as the fragment stage reads it (group 1, binding 18: an array of these, indexed by
/// the vertex's material id; 64 bytes). Built by [`material_records`] from
/// [`crate::container::Material`].
///
/// Kept in sync with `struct MaterialRecord` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct MaterialRecord {
    /// Linear RGBA base colour factor.
    pub base_color_factor: [f32; 4],
    /// Linear RGB emitted light.
    pub emissive_factor: [f32; 3],
    /// Metalness, `0..=1`.
    pub metallic: f32,
    /// Perceptual roughness, `0..=1`.
    pub roughness: f32,
    /// Normal map x/y scale.
    pub normal_scale: f32,
    /// Alpha below which fragments are discarded ([`crate::container::AlphaMode::shader_cutoff`]).
    pub alpha_cutoff: f32,
    /// [`MATERIAL_DOUBLE_SIDED`].
    pub flags: u32,
    /// Layer of `material_color_texture` holding the base colour, or [`NO_TEXTURE_LAYER`].
    pub base_color_layer: u32,
    /// Layer of `material_data_texture` holding metallic-roughness, or [`NO_TEXTURE_LAYER`].
    pub metallic_roughness_layer: u32,
    /// Layer of `material_data_texture` holding the normal map, or [`NO_TEXTURE_LAYER`].
    pub normal_layer: u32,
    /// Wrap codes ([`crate::container::TextureWrap::code`]), 4 bits per texture (u in the low 2
    /// bits, v in the next 2): base colour in bits 0..4, metallic-roughness 4..8, normal 8..12.
    pub wrap: u32,
}

const _: () = assert!(std::mem::size_of::<MaterialRecord>() == 64);

/// The material table of a manifest, ready to upload: one [`MaterialRecord`] per material, then
/// for each material variant ([`crate::container::MaterialVariant`]) one more record per material
/// id (the record of the material it maps to), so that variant slot `s` (0 = as authored) of
/// material id `k` is record `s * material_count + k`; or one neutral record (white,
/// non-metallic, rough, untextured) without materials, since a storage binding cannot be empty.
/// Shaders use the table only when [`AssetConstants::material_count`] is not 0.
pub fn material_records(manifest: &crate::container::Manifest) -> Vec<MaterialRecord> {
    use crate::container::TextureBinding;
    let layer = |b: &Option<TextureBinding>| b.as_ref().map_or(NO_TEXTURE_LAYER, |b| b.layer);
    let wrap =
        |b: &Option<TextureBinding>| b.as_ref().map_or(0, |b| b.wrap_u.code() | (b.wrap_v.code() << 2));
    let records: Vec<MaterialRecord> = manifest
        .materials
        .iter()
        .map(|m| MaterialRecord {
            base_color_factor: m.base_color_factor,
            emissive_factor: m.emissive_factor,
            metallic: m.metallic_factor,
            roughness: m.roughness_factor,
            normal_scale: m.normal_scale,
            alpha_cutoff: m.alpha_mode.shader_cutoff(),
            flags: if m.double_sided { MATERIAL_DOUBLE_SIDED } else { 0 },
            base_color_layer: layer(&m.base_color_texture),
            metallic_roughness_layer: layer(&m.metallic_roughness_texture),
            normal_layer: layer(&m.normal_texture),
            wrap: wrap(&m.base_color_texture)
                | (wrap(&m.metallic_roughness_texture) << 4)
                | (wrap(&m.normal_texture) << 8),
        })
        .collect();
    let mut records = records;
    for variant in &manifest.material_variants {
        for &k in &variant.materials {
            let record = records.get(usize::from(k)).copied();
            records.extend(record);
        }
    }
    if records.is_empty() {
        return vec![MaterialRecord {
            base_color_factor: [1.0; 4],
            emissive_factor: [0.0; 3],
            metallic: 0.0,
            roughness: 1.0,
            normal_scale: 1.0,
            alpha_cutoff: 0.0,
            flags: 0,
            base_color_layer: NO_TEXTURE_LAYER,
            metallic_roughness_layer: NO_TEXTURE_LAYER,
            normal_layer: NO_TEXTURE_LAYER,
            wrap: 0,
        }];
    }
    records
}

/// One mip level of a [`MaterialTexture`]: every layer's texels at that level, layer 0 first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialTextureLevel<'a> {
    /// Width of the level in texels.
    pub width: u32,
    /// Height of the level in texels.
    pub height: u32,
    /// `4 * width * height * layers` bytes of RGBA8.
    pub bytes: &'a [u8],
}

/// A material texture array as a backend uploads it (group 1, bindings 19 and 20), borrowed from a
/// validated asset: RGBA8 layers with their full mip chain, sRGB (`Rgba8UnormSrgb`) or linear
/// (`Rgba8Unorm`). An asset without the array gets a 1x1, one-layer stand-in (white for colour,
/// a flat normal `(0.5, 0.5, 1)` for data) that no material reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialTexture<'a> {
    /// The binding name (`material_color_texture` or `material_data_texture`).
    pub name: &'static str,
    /// Whether the texels are sRGB-encoded.
    pub srgb: bool,
    /// Layers of the array (`>= 1`).
    pub layers: u32,
    /// Mip levels, largest first.
    pub levels: Vec<MaterialTextureLevel<'a>>,
    /// Whether this is the 1x1 stand-in.
    pub stand_in: bool,
}

static WHITE_RGBA8_TEXEL: [u8; 4] = [255; 4];
static FLAT_NORMAL_RGBA8_TEXEL: [u8; 4] = [128, 128, 255, 255];

/// The two material texture arrays of a validated asset, `[material_color_texture,
/// material_data_texture]`, or their stand-ins. `None` only if a blob is missing, which a parsed
/// asset never has.
pub fn material_textures<'a>(asset: &crate::container::Asset<'a>) -> Option<[MaterialTexture<'a>; 2]> {
    let textures = asset.manifest().material_textures.as_ref();
    let arrays = [
        ("material_color_texture", textures.and_then(|t| t.color.as_ref()), true, &WHITE_RGBA8_TEXEL),
        ("material_data_texture", textures.and_then(|t| t.data.as_ref()), false, &FLAT_NORMAL_RGBA8_TEXEL),
    ];
    let mut out = Vec::with_capacity(2);
    for (name, array, srgb, stand_in) in arrays {
        let texture = match array {
            None => MaterialTexture {
                name,
                srgb,
                layers: 1,
                levels: vec![MaterialTextureLevel { width: 1, height: 1, bytes: stand_in }],
                stand_in: true,
            },
            Some(a) => {
                let blob = asset.get_blob(a.texels)?;
                let mut levels = Vec::with_capacity(a.mip_levels as usize);
                for level in 0..a.mip_levels {
                    let (offset, len) = a.mip_range(level)?;
                    let bytes =
                        blob.get(usize::try_from(offset).ok()?..usize::try_from(offset + len).ok()?)?;
                    let (width, height) = a.mip_size(level);
                    levels.push(MaterialTextureLevel { width, height, bytes });
                }
                MaterialTexture { name, srgb, layers: a.layers.len() as u32, levels, stand_in: false }
            }
        };
        out.push(texture);
    }
    out.try_into().ok()
}

/// One vertex of the socket attachments (group 1, binding 7; 32 bytes). Built by
/// [`AttachmentMesh::from_asset`].
///
/// Kept in sync with `struct AttachmentVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct AttachmentVertex {
    /// Position in the socket bone's space (socket transform applied), metres.
    pub position: [f32; 3],
    /// Material id.
    pub material: u32,
    /// Unit normal in the bone's space.
    pub normal: [f32; 3],
    /// Index in the capture rows of row 0 of frame 0 of the bone's capture track.
    pub capture_row: u32,
}

const _: () = assert!(std::mem::size_of::<AttachmentVertex>() == 32);

/// What `cs_cull` culls (group 2, binding 4; uniform, 16 bytes).
///
/// Kept in sync with `struct CullParams` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct CullParams {
    /// Records culled: `[0, record_count)`; dispatch `ceil(record_count / CULL_WORKGROUP_SIZE)`.
    pub record_count: u32,
    /// Entries per LOD region of the visible lists (at least `record_count`): LOD `l`'s list starts at
    /// `l * capacity`, which is also its draw's `first_instance`.
    pub capacity: u32,
    /// Coarsest LOD whose instances draw their attachments.
    pub attachment_max_lod: u32,
    /// 1 to count attachment draws, 0 to leave them empty.
    pub attachments: u32,
}

const _: () = assert!(std::mem::size_of::<CullParams>() == 16);

/// The `draw_args` buffer before culling: every indexed-indirect draw filled in except
/// `instance_count` (0, counted up by `cs_cull`). Body draw `l < lods.len()` draws LOD `l`'s index
/// range from `first_instance = l * capacity`; attachment draw `MAX_LODS + l` (for every LOD when
/// `attachment_index_count > 0`) draws the attachment indices that follow the LOD indices in the same
/// list region. Unused draws are all zero. `attachment_first_index` is where the attachment indices
/// start in the index buffer the draws use.
pub fn draw_args_template(
    lods: &[crate::container::Lod],
    capacity: u32,
    attachment_first_index: u32,
    attachment_index_count: u32,
) -> Vec<u32> {
    let words = DRAW_ARGS_WORDS as usize;
    let mut out = vec![0u32; DRAW_ARGS_COUNT as usize * words];
    for (l, lod) in lods.iter().enumerate().take(crate::lod::MAX_LODS) {
        let first_instance = (l as u32).saturating_mul(capacity);
        out[l * words..(l + 1) * words].copy_from_slice(&[
            lod.index_count,
            0,
            lod.first_index,
            0,
            first_instance,
        ]);
        if attachment_index_count > 0 {
            let a = (crate::lod::MAX_LODS + l) * words;
            out[a..a + words].copy_from_slice(&[
                attachment_index_count,
                0,
                attachment_first_index,
                0,
                first_instance,
            ]);
        }
    }
    out
}

/// The two texture arrays of a validated asset's impostor tier, `[impostor_color,
/// impostor_normal_depth]` (the layout of [`crate::format::impostor::ImpostorTier`]: every layer
/// of mip level 0, then of level 1, ...; the colour array holds `1 +
/// Manifest::impostor_material_variants` sets of those layers, set after set within each level), or 1x1 transparent stand-ins without a tier. `None` only
/// if a blob is missing or short, which a parsed asset never has.
pub fn impostor_textures<'a>(asset: &crate::container::Asset<'a>) -> Option<[MaterialTexture<'a>; 2]> {
    static CLEAR_RGBA8_TEXEL: [u8; 4] = [0; 4];
    let names = [("impostor_color", true), ("impostor_normal_depth", false)];
    let Some(tier) = asset.manifest().impostors.as_ref() else {
        return Some(names.map(|(name, srgb)| MaterialTexture {
            name,
            srgb,
            layers: 1,
            levels: vec![MaterialTextureLevel { width: 1, height: 1, bytes: &CLEAR_RGBA8_TEXEL }],
            stand_in: true,
        }));
    };
    let layer_count = u32::try_from(tier.layer_count()).ok()?;
    let sets = asset.manifest().impostor_material_variants.checked_add(1)?;
    let mut out = Vec::with_capacity(2);
    for ((name, srgb), (blob, sets)) in names.into_iter().zip([(tier.color, sets), (tier.normal_depth, 1)]) {
        let bytes = asset.get_blob(blob)?;
        let layers = layer_count.checked_mul(sets)?;
        let mut levels = Vec::with_capacity(tier.mip_levels as usize);
        let mut offset = 0usize;
        for level in 0..tier.mip_levels {
            let side = u32::try_from(tier.layer_side(level)).ok()?;
            let len = (side as usize).checked_mul(side as usize)?.checked_mul(4 * layers as usize)?;
            levels.push(MaterialTextureLevel {
                width: side,
                height: side,
                bytes: bytes.get(offset..offset + len)?,
            });
            offset += len;
        }
        out.push(MaterialTexture { name, srgb, layers, levels, stand_in: false });
    }
    out.try_into().ok()
}

/// The indices of the impostor card (two triangles over corners 0..4: `0, 1, 2, 2, 1, 3`), which
/// follow the attachment indices in an asset's index buffer when it has a tier.
pub const IMPOSTOR_CARD_INDICES: [u32; 6] = [0, 1, 2, 2, 1, 3];

/// The indices a card drawn from one view uses: the first triangle of [`IMPOSTOR_CARD_INDICES`]
/// alone (its vertex stage makes that triangle twice the rectangle's size, covering it).
pub const IMPOSTOR_ONE_VIEW_INDEX_COUNT: u32 = 3;

/// The rest pose and material id of every vertex of a validated asset, from its `RestPosition`,
/// `RestNormal` and `MaterialId` streams (zeros, +Y normals and material 0 where a stream is absent).
pub fn rest_vertices(asset: &crate::container::Asset<'_>) -> Vec<RestVertex> {
    rest_vertices_of(asset.manifest(), &|id| asset.get_blob(id))
}

/// [`rest_vertices`] of a manifest whose blobs `blob` gives (a bake before its file exists).
pub fn rest_vertices_of<'b>(
    manifest: &crate::container::Manifest,
    blob: &dyn Fn(crate::container::BlobId) -> Option<&'b [u8]>,
) -> Vec<RestVertex> {
    use crate::container::{ElementFormat, StreamKind};
    let n = manifest.vertex_count as usize;
    let stream = |kind: StreamKind| {
        let s = manifest.streams.iter().find(|s| s.kind == kind)?;
        Some((s.element, blob(s.blob)?))
    };
    let blank = RestVertex {
        position: [0.0; 3],
        material: 0,
        normal: [0.0, 1.0, 0.0],
        color: u32::MAX,
        uv: [0.0; 2],
        _pad: [0; 2],
    };
    let mut out = vec![blank; n];
    let vec3s = |bytes: &[u8]| -> Vec<[f32; 3]> {
        bytes.chunks_exact(12).map(bytemuck::pod_read_unaligned::<[f32; 3]>).collect()
    };
    if let Some((ElementFormat::F32x3, bytes)) = stream(StreamKind::RestPosition) {
        for (v, p) in out.iter_mut().zip(vec3s(bytes)) {
            v.position = p;
        }
    }
    if let Some((ElementFormat::F32x3, bytes)) = stream(StreamKind::RestNormal) {
        for (v, p) in out.iter_mut().zip(vec3s(bytes)) {
            v.normal = p;
        }
    }
    if let Some((format, bytes)) = stream(StreamKind::MaterialId) {
        let ids: Vec<u32> = match format {
            ElementFormat::U8 => bytes.iter().map(|&b| u32::from(b)).collect(),
            ElementFormat::U16 => {
                bytes.chunks_exact(2).map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))).collect()
            }
            ElementFormat::U32 => {
                bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            _ => Vec::new(),
        };
        for (v, id) in out.iter_mut().zip(ids) {
            v.material = id;
        }
    }
    match stream(StreamKind::Uv0) {
        Some((ElementFormat::F32x2, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                v.uv = bytemuck::pod_read_unaligned(c);
            }
        }
        Some((ElementFormat::Unorm16x2, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                let unorm = |lo: u8, hi: u8| f32::from(u16::from_le_bytes([lo, hi])) / 65535.0;
                v.uv = [unorm(c[0], c[1]), unorm(c[2], c[3])];
            }
        }
        _ => {}
    }
    match stream(StreamKind::Color0) {
        Some((ElementFormat::Unorm8x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                v.color = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        Some((ElementFormat::Unorm16x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                let unorm = |k: usize| f32::from(u16::from_le_bytes([c[2 * k], c[2 * k + 1]])) / 65535.0;
                v.color = pack_unorm8x4([unorm(0), unorm(1), unorm(2), unorm(3)]);
            }
        }
        Some((ElementFormat::F32x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(16)) {
                v.color = pack_unorm8x4(bytemuck::pod_read_unaligned(c));
            }
        }
        _ => {}
    }
    out
}

/// Every socket attachment of an asset merged into one mesh, ready to upload: vertices in their
/// socket bone's space, indices offset into the merged vertex array, and the capture rows
/// (`vec4` rows of the bone-to-object 3x4 affines, 3 per frame) of the bones carrying them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttachmentMesh {
    /// Vertices of all attachments, in manifest order.
    pub vertices: Vec<AttachmentVertex>,
    /// Triangle list indexing `vertices`.
    pub indices: Vec<u32>,
    /// Capture rows: for each carrying bone, `frame_count * 3` rows `[m0r, m1r, m2r, m3r]`.
    pub capture_rows: Vec<[f32; 4]>,
}

impl AttachmentMesh {
    /// The attachments of a validated asset. An attachment whose socket bone has no capture track is
    /// skipped (the container requires one for every socket, so only hand-made files lack it).
    pub fn from_asset(asset: &crate::container::Asset<'_>) -> Self {
        let m = asset.manifest();
        let frames = asset.frame_count() as usize;
        let mut out = Self::default();
        let mut tracks: Vec<(u32, u32)> = Vec::new(); // (bone, first row)
        for a in &m.attachments {
            let Some(socket) = m.sockets.get(a.socket as usize) else { continue };
            let row = match tracks.iter().find(|(b, _)| *b == socket.bone) {
                Some(&(_, row)) => row,
                None => {
                    let Some(bytes) = asset.capture_bytes(socket.bone) else { continue };
                    let row = out.capture_rows.len() as u32;
                    for f in bytes.chunks_exact(48).take(frames) {
                        let c: [f32; 12] = bytemuck::pod_read_unaligned(f);
                        // Column-major 3x4 (4 columns of 3) -> 3 rows of 4.
                        for r in 0..3 {
                            out.capture_rows.push([c[r], c[3 + r], c[6 + r], c[9 + r]]);
                        }
                    }
                    tracks.push((socket.bone, row));
                    row
                }
            };
            let l = socket.local;
            let local = glam::Mat4::from_cols(
                glam::Vec4::new(l[0], l[1], l[2], 0.0),
                glam::Vec4::new(l[3], l[4], l[5], 0.0),
                glam::Vec4::new(l[6], l[7], l[8], 0.0),
                glam::Vec4::new(l[9], l[10], l[11], 1.0),
            );
            let normal_matrix = glam::Mat3::from_mat4(local).inverse().transpose();
            let base = out.vertices.len() as u32;
            let positions = asset.blob(a.positions).chunks_exact(12);
            let normals = asset.blob(a.normals).chunks_exact(12);
            let materials = asset.blob(a.material_ids).iter();
            for ((p, n), &mat) in positions.zip(normals).zip(materials) {
                let p = local.transform_point3(glam::Vec3::from(bytemuck::pod_read_unaligned::<[f32; 3]>(p)));
                let n = normal_matrix * glam::Vec3::from(bytemuck::pod_read_unaligned::<[f32; 3]>(n));
                out.vertices.push(AttachmentVertex {
                    position: p.to_array(),
                    material: u32::from(mat),
                    normal: n.normalize_or(glam::Vec3::Y).to_array(),
                    capture_row: row,
                });
            }
            out.indices.extend(
                asset
                    .blob(a.indices)
                    .chunks_exact(4)
                    .map(|c| base + u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        out
    }
}
const _: () = assert!(std::mem::size_of::<InstanceRecord>() == 64);
