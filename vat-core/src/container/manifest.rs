//! The manifest: everything about a baked asset except the bulk data, which lives in blobs.

use serde::{Deserialize, Serialize};

use super::material::{Material, MaterialTextures, MaterialVariant};
use crate::clip::Clip;
use crate::encoding::{PositionBounds, TexelFormat, VertexFormat};
use crate::layout::{BoneTextureLayout, MorphTextureLayout, MorphWeightsLayout, VertexTextureLayout};
pub use crate::root_motion::RootMotionTrack;

/// Index of a blob in [`Manifest::blobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BlobId(pub u32);

/// Where a blob lies in the file and its checksum. Filled in by [`super::ContainerWriter::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BlobEntry {
    /// File offset of the first byte, a multiple of [`super::BLOB_ALIGNMENT`].
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// CRC-32 (IEEE) of the blob's bytes.
    pub crc32: u32,
}

/// The description of a baked asset stored at the start of a `.vat` file.
///
/// Every blob it refers to is listed in [`Manifest::blobs`]; [`super::Asset::parse`] checks that all of
/// it is consistent (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Asset name, as authored (e.g. the source file's stem).
    pub name: String,
    /// Vertices of the mesh, `>= 1`. Every texture, stream and index refers to these vertex ids.
    pub vertex_count: u32,
    /// Clips in texture order; they tile frames `0..frame_count` of every animation texture
    /// (see [`crate::clip::ClipRowMap::from_clips`]). Names are unique.
    pub clips: Vec<Clip>,
    /// Baked per-vertex animation (the VAT proper), if baked.
    pub vertex_animation: Option<VertexAnimation>,
    /// Baked bone matrices and per-vertex skinning data (bone mode and sockets), if baked.
    pub bone_animation: Option<BoneAnimation>,
    /// The live morph layer of bone mode (morph delta texture and per-frame weights track), if
    /// baked. A format version 2 section: a version 1 file never has it (see
    /// [`Manifest::format_version`]).
    pub morph_animation: Option<MorphAnimation>,
    /// One blob of `u32` little-endian vertex indices (triangle lists) shared by all LODs; each LOD is
    /// a range of it. Present exactly when [`Manifest::lods`] is non-empty.
    pub indices: Option<BlobId>,
    /// Levels of detail, most detailed first. Every LOD indexes the original vertex ids, so one
    /// animation texture serves all of them.
    pub lods: Vec<Lod>,
    /// Static per-vertex data (rest pose, UVs, material ids...), at most one stream per kind.
    pub streams: Vec<VertexStream>,
    /// The skeleton, parents before children. May be non-empty without bone animation (sockets and
    /// captures only need bone ids).
    pub bones: Vec<Bone>,
    /// Attachment points on bones (e.g. `"hand_r"` for a held item). Names are unique.
    pub sockets: Vec<Socket>,
    /// Per-frame world transforms of selected bones, for attaching things on the CPU.
    pub captures: Vec<CaptureTrack>,
    /// Rigid meshes drawn at sockets (e.g. a cap on the head socket), instanced with the body.
    pub attachments: Vec<Attachment>,
    /// Every blob of the file, in file order. Written by [`super::ContainerWriter::finish`]; any
    /// value a caller puts here before `finish` is replaced.
    pub blobs: Vec<BlobEntry>,
    /// The rigid-body animation ([`VatMode::Rigid`]), if the asset is a rigid bake. A format version
    /// 3 section, the manifest's last field: a version 1 or 2 file never has it (its encoding is that
    /// of version 3 without this trailing `None`; see [`Manifest::format_version`]). A rigid asset has
    /// no vertex, bone or morph animation.
    pub rigid_animation: Option<RigidAnimation>,
    /// The materials the `MaterialId` stream indexes (a format version 4 section; empty before it,
    /// and for assets baked without materials, which the shaders draw with the built-in palette).
    /// At most 256 (ids are stored as `U8`, `U16` or `U32` but the shaders index a 256-entry table).
    pub materials: Vec<Material>,
    /// The texture arrays [`Manifest::materials`] sample (a format version 4 section).
    pub material_textures: Option<MaterialTextures>,
    /// Material variants (a format version 4 section; at most 255): per-instance alternative
    /// materials, see [`MaterialVariant`].
    pub material_variants: Vec<MaterialVariant>,
    /// Root motion per clip ([`RootMotionTrack`]), extracted at bake from the vertices: the clips
    /// listed are stored in place. A format version 5 section, the manifest's last field (after the version 4 materials): older
    /// files never have it (their encoding is that of version 5 without this trailing empty list,
    /// one zero byte; see [`Manifest::format_version`]). Soft mode only.
    pub root_motion: Vec<RootMotionTrack>,
    /// The fluid animation ([`VatMode::Fluid`], dynamic remeshing), if the asset is a fluid bake. A
    /// format version 6 section, the manifest's last field (older files end before it; their
    /// encoding is that of version 6 without this trailing `None`). A fluid asset's
    /// [`Manifest::vertex_animation`] holds the frames' vertices back to back (see
    /// [`FluidAnimation`]); it has no bone, morph or rigid animation.
    pub fluid_animation: Option<FluidAnimation>,
    /// The sprite (particle) animation ([`VatMode::Sprite`]), if the asset is a sprite bake. A
    /// format version 7 section, the manifest's last field (older files end before it; their
    /// encoding is that of version 7 without this trailing `None`). A sprite asset draws four
    /// corners per particle slot ([`Manifest::vertex_count`] `== 4 * slots`, see
    /// [`SpriteAnimation`]); it has no vertex, bone, morph, rigid or fluid animation.
    pub sprite_animation: Option<SpriteAnimation>,
    /// The impostor tier ([`crate::format::impostor::ImpostorTier`]): images of the body from many
    /// views at frames of every clip, for far instances drawn as cards. A format version 8 section,
    /// after the version 7 sprite animation (older files end before it; their encoding is that of
    /// version 8 without this trailing `None`). Only beside a vertex animation of a soft (or
    /// skeletal) body.
    pub impostors: Option<crate::format::impostor::ImpostorTier>,
    /// What the bake measured for the impostor tier's far cards, drawn from one view
    /// ([`crate::format::impostor::one_view_sample`]) at mip level
    /// [`crate::format::impostor::SINGLE_VIEW_LEVEL`], against the mesh at that level's size; the
    /// tier's own `bound` is its three-view cards' at level 0. `vat verify` checks both. A format
    /// version 9 section, the manifest's last field (older files end before it: tiers baked before
    /// it existed state none, and `vat verify` measures their far cards without a bound to hold
    /// them to). Only beside [`impostors`](Self::impostors).
    pub impostor_one_view_bound: Option<crate::format::impostor::ImpostorBound>,
    /// How many of the asset's material variants ([`Manifest::material_variants`], the first ones,
    /// in order) the impostor tier has colour images of: its colour blob holds `1 +
    /// impostor_material_variants` sets of images per mip level, the authored materials' first,
    /// then variant 1's, ... ([`crate::format::impostor::ImpostorTier::color_blob_bytes`]), so a
    /// far instance shows its material variant as its mesh does. 0 without (every instance's cards
    /// in the authored materials). A format version 10 field, the manifest's last (older files end
    /// before it and read as 0). Only beside [`impostors`](Self::impostors) and materials; at most
    /// the asset's variant count, and the sets' layers at most
    /// [`crate::format::impostor::MAX_IMPOSTOR_LAYERS`].
    pub impostor_material_variants: u32,
    /// The compressed tier's residual ([`crate::encoding::VertexFormat::SkinResidual`]): present
    /// exactly when the vertex animation's format is skin-residual, which also needs the bone
    /// section (the skin the residual corrects). A format version 11 section, the manifest's last
    /// field (older files end before it and read as `None`).
    pub skin_residual: Option<SkinResidualAnimation>,
}

/// The residual of [`Manifest::skin_residual`]: what a skin-residual asset adds to its own skin so
/// that every stored frame of every vertex decodes within the stated bounds
/// ([`crate::format::skin_residual`] holds the arithmetic and the proof).
///
/// One `Rg32Uint` texture of `width x height` texels (`t` at `(t % width, t / width)`): texel `v` of
/// the first [`Manifest::vertex_count`] is vertex `v`'s `(first bit, widths)`
/// ([`crate::format::skin_residual::ResidualWidths::to_bits`]); word `i` of the residual stream is
/// channel `i % 2` of texel `vertex_count + i / 2`. Vertex `v`'s stored frame `f` is the
/// `frame_bits` bits from bit `first + f * frame_bits` of the stream: its three position fields
/// (multiples of the position step `2 B_p / sqrt(3)`, metres), then its two normal fields
/// (tangent-plane offsets, step `sqrt(2) B_n`, or with the absolute flag octahedral coordinates,
/// step `sqrt(2) B_n / 3`), each two's complement, least significant bit first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkinResidualAnimation {
    /// `B_p`: every stored frame's decoded position is within this many metres of the baked source
    /// (plus the `f32` rounding of the decode, [`crate::format::skin_residual::POSITION_SLACK_M`]).
    /// In `(0, 1]`.
    pub position_bound_m: f32,
    /// `B_n`: every stored frame's decoded normal is within this angle of the source's, radians, in
    /// `(0, 0.5]`.
    pub normal_bound_rad: f32,
    /// Residual texture width in texels, at least 1.
    pub width: u32,
    /// Residual texture height in texels: `ceil((vertex_count + ceil(stream_words / 2)) / width)`.
    pub height: u32,
    /// Words of the residual stream, the trailing zero word included (the decoder's 32-bit window
    /// may read one word past a vertex's last field), at least 1; its bits are addressed by `u32`.
    pub stream_words: u32,
    /// The texture, `width * height * 8` bytes (zero past the stream).
    pub texture: BlobId,
}

/// Which VAT mode an asset was baked in: which layout, bound, CPU reference and shader path it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VatMode {
    /// One texel (or one per texture) per vertex per frame ([`Manifest::vertex_animation`]):
    /// skeletal bakes, morph bakes and mesh sequences of fixed topology. Every file before format
    /// version 3.
    Soft,
    /// One texel per piece per frame, pieces moving as units ([`Manifest::rigid_animation`]).
    Rigid,
    /// Topology that changes every frame ([`Manifest::fluid_animation`]): a triangle pool sized for
    /// the busiest frame, a per-frame lookup from pool corner to that frame's vertex data, unused
    /// triangles collapsed. Frames are never interpolated (their topologies differ).
    Fluid,
    /// Particles drawn as camera-facing cards ([`Manifest::sprite_animation`]): one texel per
    /// particle slot per frame, interpolated where a particle persists, dead slots collapsed.
    Sprite,
}

impl VatMode {
    /// The mode's name as the CLI prints and takes it: `"soft"`, `"rigid"`, `"fluid"` or `"sprite"`.
    pub const fn name(self) -> &'static str {
        match self {
            VatMode::Soft => "soft",
            VatMode::Rigid => "rigid",
            VatMode::Fluid => "fluid",
            VatMode::Sprite => "sprite",
        }
    }
}

impl Manifest {
    /// An empty manifest for an asset of `vertex_count` vertices: no clips, no animation, no blobs.
    pub fn new(name: impl Into<String>, vertex_count: u32) -> Self {
        Self {
            name: name.into(),
            vertex_count,
            clips: Vec::new(),
            vertex_animation: None,
            bone_animation: None,
            morph_animation: None,
            indices: None,
            lods: Vec::new(),
            streams: Vec::new(),
            bones: Vec::new(),
            sockets: Vec::new(),
            captures: Vec::new(),
            attachments: Vec::new(),
            blobs: Vec::new(),
            rigid_animation: None,
            materials: Vec::new(),
            material_textures: None,
            material_variants: Vec::new(),
            root_motion: Vec::new(),
            fluid_animation: None,
            sprite_animation: None,
            impostors: None,
            impostor_one_view_bound: None,
            impostor_material_variants: 0,
            skin_residual: None,
        }
    }

    /// The mode the asset was baked in: [`VatMode::Rigid`] with a rigid animation,
    /// [`VatMode::Fluid`] with a fluid animation, [`VatMode::Sprite`] with a sprite animation, else
    /// [`VatMode::Soft`].
    pub fn mode(&self) -> VatMode {
        if self.rigid_animation.is_some() {
            VatMode::Rigid
        } else if self.fluid_animation.is_some() {
            VatMode::Fluid
        } else if self.sprite_animation.is_some() {
            VatMode::Sprite
        } else {
            VatMode::Soft
        }
    }

    /// The box holding every vertex of every frame, metres, object space (what culling bounds
    /// instances with): the vertex animation's position bounds, or the rigid animation's vertex
    /// bounds; `None` with neither.
    pub fn animation_bounds(&self) -> Option<PositionBounds> {
        match (&self.vertex_animation, &self.rigid_animation) {
            (Some(va), _) => Some(va.bounds),
            (None, Some(ra)) => Some(ra.bounds),
            (None, None) => self.sprite_animation.as_ref().map(SpriteAnimation::card_bounds),
        }
    }

    /// The format version a file holding this manifest is written with: the oldest that can
    /// describe it, [`super::FORMAT_VERSION_MORPH`] (2) with a morph animation, else 1. Files
    /// without the version 2 section stay readable by version 1 readers, byte for byte what they
    /// were before version 2 existed.
    /// [`super::FORMAT_VERSION_RIGID`] (3) with a rigid animation.
    /// [`super::FORMAT_VERSION_MATERIALS`] (4) with materials, material textures or variants;
    /// [`super::FORMAT_VERSION_ROOT_MOTION`] (5) with root motion;
    /// [`super::FORMAT_VERSION_FLUID`] (6) with a fluid animation;
    /// [`super::FORMAT_VERSION_SPRITE`] (7) with a sprite animation;
    /// [`super::FORMAT_VERSION_IMPOSTORS`] (8) with an impostor tier;
    /// [`super::FORMAT_VERSION_IMPOSTOR_ONE_VIEW`] (9) with its one-view bound;
    /// [`super::FORMAT_VERSION_IMPOSTOR_VARIANTS`] (10) with its material variants' colour images;
    /// [`super::FORMAT_VERSION_SKIN_RESIDUAL`] (11) with the skin-residual format.
    pub fn format_version(&self) -> u32 {
        let skin_residual = self.skin_residual.is_some()
            || self.vertex_animation.as_ref().is_some_and(|va| va.format == VertexFormat::SkinResidual);
        if skin_residual {
            super::FORMAT_VERSION_SKIN_RESIDUAL
        } else if self.impostor_material_variants > 0 {
            super::FORMAT_VERSION_IMPOSTOR_VARIANTS
        } else if self.impostor_one_view_bound.is_some() {
            super::FORMAT_VERSION_IMPOSTOR_ONE_VIEW
        } else if self.impostors.is_some() {
            super::FORMAT_VERSION_IMPOSTORS
        } else if self.sprite_animation.is_some() {
            super::FORMAT_VERSION_SPRITE
        } else if self.fluid_animation.is_some() {
            super::FORMAT_VERSION_FLUID
        } else if !self.root_motion.is_empty() {
            super::FORMAT_VERSION_ROOT_MOTION
        } else if !self.materials.is_empty()
            || self.material_textures.is_some()
            || !self.material_variants.is_empty()
        {
            super::FORMAT_VERSION_MATERIALS
        } else if self.rigid_animation.is_some() {
            super::FORMAT_VERSION_RIGID
        } else if self.morph_animation.is_some() {
            super::FORMAT_VERSION_MORPH
        } else {
            super::MIN_FORMAT_VERSION
        }
    }
}

/// The vertex animation textures of [`Manifest::vertex_animation`].
///
/// Every texture has the same [`VertexTextureLayout`]: one texel per vertex per frame, texel
/// `t = frame * vertex_count + vertex` at `(t % width, t / width)`, rows tightly packed, so texture `i`
/// is exactly `width * height * format.texel_formats()[i].bytes_per_texel()` bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VertexAnimation {
    /// Texture size and the vertex and frame counts it holds. `vertex_count` equals
    /// [`Manifest::vertex_count`], `frame_count` the frames of all clips together, and
    /// `height == ceil(vertex_count * frame_count / width)`.
    pub layout: VertexTextureLayout,
    /// How positions and normals are encoded.
    pub format: VertexFormat,
    /// The box positions are normalised into, in metres, object space. Finite, extent `>= 0`.
    pub bounds: PositionBounds,
    /// Bits of position per axis (x, y, z) of [`VertexFormat::Packed64`]: the allocation by extent,
    /// each in `0..=20`, summing to 40 (e.g. `[13, 14, 13]`; see
    /// [`crate::encoding::allocate_position_bits`]). `[0, 0, 0]` for the other formats, whose
    /// precision is fixed by their channels.
    pub position_bits: [u32; 3],
    /// One blob per entry of `format.texel_formats()`, in that order (positions first).
    pub textures: Vec<BlobId>,
    /// Optional per-frame tangent frames: one `Rgba16Float` unit quaternion per vertex per frame, same
    /// layout, so `width * height * 8` bytes.
    pub tangents: Option<BlobId>,
}

/// Baked bone matrices and skinning data of [`Manifest::bone_animation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoneAnimation {
    /// Bone texture size; `bone_count == bones.len()`, `frame_count` the frames of all clips together,
    /// `height == ceil(frame_count * bone_count * 3 / width)`.
    pub layout: BoneTextureLayout,
    /// `Rgba32Float`, 3 texels (rows of the 3x4 affine `joint_world * inverse_bind`, metres) per bone
    /// per frame: `width * height * 16` bytes.
    pub texture: BlobId,
    /// Bone influences per vertex: 4, or 8 (glTF `JOINTS_1`/`WEIGHTS_1`).
    pub influences: u32,
    /// `u16` little-endian bone index per influence per vertex (`vertex_count * influences * 2`
    /// bytes), each `< bone_count`.
    pub joints: BlobId,
    /// `f32` little-endian weight per influence per vertex (`vertex_count * influences * 4` bytes).
    pub weights: BlobId,
}

/// The live morph layer of [`Manifest::morph_animation`]: the morph targets of the body as a tiled
/// delta texture plus a per-frame weights track, which bone mode blends before skinning.
///
/// Target `t` of vertex `v` moves the rest position by `w_t * dp` and the rest normal by `w_t * dn`
/// before skinning, where `dp` and `dn` are the xyz of the texels at
/// `layout.texel_coord(t, Position | Normal, v)` and `w_t` the playback blend of the weights track
/// (exactly as bone matrices are blended). Deltas are bind-space (the space of the `RestPosition`
/// and `RestNormal` streams), position deltas in metres, normal deltas unitless; the normal is
/// renormalised after skinning, as CPU skinning does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MorphAnimation {
    /// The tiled delta texture layout: `vertex_count ==` [`Manifest::vertex_count`],
    /// `width == min(vertex_count, 2048)`, `rows_per_band == ceil(vertex_count / width)`,
    /// `height == target_count * 2 * rows_per_band`.
    pub layout: MorphTextureLayout,
    /// Texel format of the delta texture: [`TexelFormat::Rgba32Float`] (xyz = delta, w = 0) is the
    /// only one accepted, so the texture is `width * height * 16` bytes and every value is finite.
    pub format: TexelFormat,
    /// The delta texture.
    pub texture: BlobId,
    /// The weights track's layout: `target_count == layout.target_count`, `frame_count` the frames of
    /// all clips together.
    pub weights_layout: MorphWeightsLayout,
    /// The weights track: `Rgba32Float`, `weights_layout.byte_len(16)` bytes, finite.
    pub weights: BlobId,
    /// A name per target (`target_names.len() == target_count`), informational and not necessarily
    /// unique (glTF does not require it): `"<mesh>/<target>"` from the baker.
    pub target_names: Vec<String>,
}

/// The rigid-body animation of [`Manifest::rigid_animation`] (see [`crate::rigid`] for the texel
/// encodings, the decode and the error bounds).
///
/// Vertex `v` at frame `f` is `pivot(f) + rotate(q(f), rest_position(v) - rest_pivot(v))`, its
/// normal `rotate(q(f), rest_normal(v))`, with `pivot(f)` and `q(f)` those of the vertex's piece
/// read from the piece texture, and rest positions and normals the `RestPosition` and `RestNormal`
/// streams (both required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RigidAnimation {
    /// The piece texture's layout, one texel per piece per frame: `vertex_count` is the number of
    /// pieces (`>= 1`), `frame_count` the frames of all clips together.
    pub layout: VertexTextureLayout,
    /// The box pivots are quantised into (metres, object space; finite, extent `>= 0`): every
    /// piece's pivot at every frame lies in it.
    pub pivot_bounds: PositionBounds,
    /// The box holding every vertex at every frame (metres, object space; finite, extent `>= 0`),
    /// which culling bounds instances with.
    pub bounds: PositionBounds,
    /// The piece texture, [`crate::rigid::RIGID_TEXEL_FORMAT`]: `layout.byte_len(16)` bytes.
    pub pieces: BlobId,
    /// The rigid vertex texture's layout: `vertex_count ==` [`Manifest::vertex_count`],
    /// `frame_count == 1`.
    pub vertex_layout: VertexTextureLayout,
    /// The rigid vertex texture, one texel per vertex (piece index `< layout.vertex_count`, finite
    /// rest pivot), [`crate::rigid::RIGID_TEXEL_FORMAT`]: `vertex_layout.byte_len(16)` bytes; the
    /// unused texels of its last row are zero.
    pub vertices: BlobId,
    /// A name per piece (`piece_names.len() == layout.vertex_count`), informational and not
    /// necessarily unique (the glTF node's name, or `"piece <k>"`).
    pub piece_names: Vec<String>,
}

/// The fluid animation of [`Manifest::fluid_animation`] (see [`crate::fluid`] for the decode).
///
/// The mesh is a *pool* of `pool_triangles` triangles drawn without sharing:
/// [`Manifest::vertex_count`] `== 3 * pool_triangles` *corners*, corner `c` the corner `c % 3` of
/// pool triangle `c / 3`. At frame `f` the first `frames[f].triangle_count` pool triangles are that
/// frame's triangles, in the source's order, and the rest are collapsed (drawn outside the clip
/// volume). The *lookup texture* (`Rgba32Uint`, four little-endian `u32` entries per texel) maps
/// each corner at each frame to a vertex of the frame: entry
/// `e = f * 4 * lookup_layout.vertex_count + c` lies in lane `e % 4` of texel `e / 4` (texel `t`
/// at `(t % width, t / width)`); it is a
/// texel index into [`Manifest::vertex_animation`], whose texture holds every frame's vertices back
/// to back (frame `f`'s from `frames[f].first_vertex` on), or [`crate::fluid::COLLAPSED`] for a
/// corner of a collapsed triangle and for the unused lanes after the last corner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FluidAnimation {
    /// Triangles of the pool (those of the busiest frame), `>= 1`.
    pub pool_triangles: u32,
    /// One entry per frame of all clips together, in texture order.
    pub frames: Vec<FluidFrame>,
    /// The lookup texture's layout: `vertex_count == ceil(3 * pool_triangles / 4)` (texels per
    /// frame), `frame_count == frames.len()`.
    pub lookup_layout: crate::layout::VertexTextureLayout,
    /// The lookup texture, `lookup_layout.byte_len(16)` bytes; the unused texels of its last row
    /// are zero.
    pub lookup: BlobId,
}

/// The sprite animation of [`Manifest::sprite_animation`] (see [`crate::sprite`] for the texel and
/// the sampling).
///
/// Particles live in *slots*: a slot holds at most one particle per frame, and a particle keeps its
/// slot for as long as it lives. Slot `s` draws the four *corners* `4 s .. 4 s + 4` of the mesh
/// ([`Manifest::vertex_count`] `== 4 * slots`; the index blob draws each slot's card as the two
/// triangles `(4s, 4s+1, 4s+2)` and `(4s, 4s+2, 4s+3)`), built in the vertex shader as a card facing
/// the camera. The *particle texture* (`Rgba32Uint`) holds one texel per slot per frame, texel
/// `frame * slots + slot` at `(t % width, t / width)`; a slot without a particle is
/// [`crate::sprite::DEAD_TEXEL`] and draws nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpriteAnimation {
    /// The particle texture's layout: `vertex_count` is the number of slots (`>= 1`),
    /// `frame_count` the frames of all clips together.
    pub layout: VertexTextureLayout,
    /// The box particle centres are quantised into (metres, object space; finite, extent `>= 0`).
    pub position_bounds: PositionBounds,
    /// The largest card edge length (metres, finite, `>= 0`): a size field of 65535.
    pub max_size: f32,
    /// The particle texture, [`crate::sprite::SPRITE_TEXEL_FORMAT`]: `layout.byte_len(16)` bytes;
    /// the unused texels of its last row are zero.
    pub particles: BlobId,
}

impl SpriteAnimation {
    /// What the particle texels are quantised against.
    pub fn sprite_bounds(&self) -> crate::sprite::SpriteBounds {
        crate::sprite::SpriteBounds { position: self.position_bounds, max_size: self.max_size }
    }

    /// The box holding every card corner at every frame (what culling bounds instances with): the
    /// centre box grown on every side by half a card's diagonal, `max_size * sqrt(1/2)` (a card of
    /// any rotation facing any direction stays within that distance of its centre).
    pub fn card_bounds(&self) -> PositionBounds {
        let r = self.max_size * std::f32::consts::FRAC_1_SQRT_2;
        let b = &self.position_bounds;
        PositionBounds { min: b.min.map(|m| m - r), extent: b.extent.map(|e| e + 2.0 * r) }
    }
}

/// One frame of a [`FluidAnimation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FluidFrame {
    /// Texel of the vertex animation holding this frame's vertex 0: the sum of the vertex counts
    /// of the frames before it.
    pub first_vertex: u32,
    /// Vertices of this frame (may be 0: an empty frame draws nothing).
    pub vertex_count: u32,
    /// Triangles of this frame, `<= pool_triangles`.
    pub triangle_count: u32,
}

/// One level of detail: a range of the shared index blob.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Lod {
    /// First index (counted in indices, not bytes) of this LOD in the index blob.
    pub first_index: u32,
    /// Indices in this LOD: `triangle_count * 3`, `>= 3`.
    pub index_count: u32,
    /// Triangles in this LOD.
    pub triangle_count: u32,
    /// Largest deviation of this LOD's surface from LOD 0, in metres (object space). Finite, `>= 0`.
    pub screen_error: f32,
    /// Camera distance in metres up to which this LOD is used; `> 0`, non-decreasing from one LOD to
    /// the next, `f32::INFINITY` allowed (for the last).
    pub max_distance: f32,
}

/// What a [`VertexStream`] holds. Each kind accepts only some [`ElementFormat`]s (see
/// [`StreamKind::accepts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StreamKind {
    /// Bind-pose position in metres: `F32x3`.
    RestPosition,
    /// Bind-pose unit normal: `F32x3`.
    RestNormal,
    /// Bind-pose tangent, xyz unit vector and w the bitangent sign (glTF): `F32x4`.
    RestTangent,
    /// First texture coordinate set: `F32x2` or `Unorm16x2`.
    Uv0,
    /// Second texture coordinate set: `F32x2` or `Unorm16x2`.
    Uv1,
    /// Vertex colour, linear RGBA: `Unorm8x4`, `Unorm16x4` or `F32x4`.
    Color0,
    /// Material (or material slot) index: `U8`, `U16` or `U32`.
    MaterialId,
}

impl StreamKind {
    /// Whether a stream of this kind may be stored as `element`.
    pub fn accepts(self, element: ElementFormat) -> bool {
        use ElementFormat as E;
        match self {
            StreamKind::RestPosition | StreamKind::RestNormal => element == E::F32x3,
            StreamKind::RestTangent => element == E::F32x4,
            StreamKind::Uv0 | StreamKind::Uv1 => matches!(element, E::F32x2 | E::Unorm16x2),
            StreamKind::Color0 => matches!(element, E::Unorm8x4 | E::Unorm16x4 | E::F32x4),
            StreamKind::MaterialId => matches!(element, E::U8 | E::U16 | E::U32),
        }
    }

    /// The accepted element formats, in words (for error messages).
    pub fn accepted_formats(self) -> &'static str {
        match self {
            StreamKind::RestPosition | StreamKind::RestNormal => "F32x3",
            StreamKind::RestTangent => "F32x4",
            StreamKind::Uv0 | StreamKind::Uv1 => "F32x2 or Unorm16x2",
            StreamKind::Color0 => "Unorm8x4, Unorm16x4 or F32x4",
            StreamKind::MaterialId => "U8, U16 or U32",
        }
    }
}

/// The element type of a [`VertexStream`]: one element per vertex, little-endian, tightly packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementFormat {
    /// Two f32, 8 bytes.
    F32x2,
    /// Three f32, 12 bytes.
    F32x3,
    /// Four f32, 16 bytes.
    F32x4,
    /// Four u8 read as `[0, 1]`, 4 bytes.
    Unorm8x4,
    /// Two u16 read as `[0, 1]`, 4 bytes.
    Unorm16x2,
    /// Four u16 read as `[0, 1]`, 8 bytes.
    Unorm16x4,
    /// One u8, 1 byte.
    U8,
    /// One u16, 2 bytes.
    U16,
    /// One u32, 4 bytes.
    U32,
}

impl ElementFormat {
    /// Bytes per element.
    pub const fn byte_size(self) -> u32 {
        match self {
            ElementFormat::F32x2 => 8,
            ElementFormat::F32x3 => 12,
            ElementFormat::F32x4 => 16,
            ElementFormat::Unorm8x4 | ElementFormat::Unorm16x2 | ElementFormat::U32 => 4,
            ElementFormat::Unorm16x4 => 8,
            ElementFormat::U8 => 1,
            ElementFormat::U16 => 2,
        }
    }
}

/// Static per-vertex data: `vertex_count` elements of `element`, i.e.
/// `vertex_count * element.byte_size()` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VertexStream {
    /// What the stream holds.
    pub kind: StreamKind,
    /// How each element is stored; must be one `kind` accepts.
    pub element: ElementFormat,
    /// The data.
    pub blob: BlobId,
}

/// A bone of the skeleton.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bone {
    /// Name, as authored (not necessarily unique: glTF does not require it).
    pub name: String,
    /// Index of the parent bone, which is always smaller than this bone's own index; `None` for a root.
    pub parent: Option<u32>,
}

/// An attachment point fixed to a bone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Socket {
    /// Unique name (e.g. `"hand_r"`).
    pub name: String,
    /// Index of the bone it is attached to.
    pub bone: u32,
    /// Transform from socket space to bone space: a 3x4 affine, column-major (four columns of
    /// three: x axis, y axis, z axis, translation in metres). Finite.
    pub local: [f32; 12],
}

/// Per-frame world transforms of one bone, for attaching things on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CaptureTrack {
    /// Index of the captured bone; each bone is captured at most once.
    pub bone: u32,
    /// One 3x4 column-major affine of 12 `f32` (bone to object space, metres) per frame of all clips:
    /// `frame_count * 48` bytes.
    pub blob: BlobId,
}

/// A rigid mesh drawn at a socket, instanced over the same instance records as the body (culled and
/// LOD-limited with it, shown per instance by `VARIANT_ACCESSORY`). Its own small vertex buffer: it is
/// not in the animation texture; the socket's capture track (or the bone texture) places it per frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// Unique name (e.g. `"cap"`).
    pub name: String,
    /// Index into [`Manifest::sockets`].
    pub socket: u32,
    /// Vertices of the mesh.
    pub vertex_count: u32,
    /// Positions in socket space, metres: `vertex_count` x 3 `f32`.
    pub positions: BlobId,
    /// Unit normals in socket space: `vertex_count` x 3 `f32`.
    pub normals: BlobId,
    /// Material id per vertex: `vertex_count` `u8`.
    pub material_ids: BlobId,
    /// Triangle list: `u32` indices `< vertex_count`, a multiple of 3.
    pub indices: BlobId,
}
