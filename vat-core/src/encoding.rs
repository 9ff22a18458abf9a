//! Encodings of positions, normals and rotations, each with its error bound.
//!
//! (Declarations fixed by the lead; implementations and tests to be filled in.)

use serde::{Deserialize, Serialize};

/// How the vertex animation texture stores a vertex's position and normal for one frame.
/// Positions are always stored normalised into the bake's [`PositionBounds`] (`[0, 1]` per axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VertexFormat {
    /// Default. One `Rg32Uint` texel: 40 bits of position (bits per axis allocated by extent) and
    /// 24 bits of octahedral normal (12 + 12). 8 bytes per vertex per frame.
    Packed64,
    /// `Rgba16Uint` positions (unorm16 in the box) + `Rg16Uint` octahedral 16 + 16 normals.
    Unorm16,
    /// `Rgba16Float` positions (binary16 in the box) + `Rg16Float` octahedral normals.
    F16,
    /// `Rgba32Float` positions + `Rg32Float` octahedral normals.
    F32,
    /// `Rgba8Uint` positions (unorm8 in the box) + `Rg8Uint` octahedral 8 + 8 normals.
    Unorm8,
    /// Unorm16 positions split into high and low bytes in two `Rgba8Uint` textures, for targets without
    /// 16-bit textures, + an `Rgba8Uint` octahedral 16 + 16 normal texture (u hi, u lo, v hi, v lo).
    Split8,
}

/// The axis-aligned box positions are normalised into: `p = min + n * extent`, `n` in `[0, 1]`.
/// Metres, object space. Taken over every vertex of every frame of every clip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PositionBounds {
    /// Lowest corner.
    pub min: [f32; 3],
    /// Size along each axis, `>= 0`.
    pub extent: [f32; 3],
}

/// The GPU format of one texture of a vertex format. Names follow WebGPU's (`Rg32Uint` is
/// `rg32uint`); every channel is little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TexelFormat {
    /// Two u32 channels, 8 bytes.
    Rg32Uint,
    /// Four u16 channels, 8 bytes.
    Rgba16Uint,
    /// Two u16 channels, 4 bytes.
    Rg16Uint,
    /// Four binary16 channels, 8 bytes.
    Rgba16Float,
    /// Two binary16 channels, 4 bytes.
    Rg16Float,
    /// Four f32 channels, 16 bytes.
    Rgba32Float,
    /// Two f32 channels, 8 bytes.
    Rg32Float,
    /// Four u8 channels, 4 bytes.
    Rgba8Uint,
    /// Two u8 channels, 2 bytes.
    Rg8Uint,
}

impl TexelFormat {
    /// Bytes per texel.
    pub const fn bytes_per_texel(self) -> u32 {
        match self {
            TexelFormat::Rgba32Float => 16,
            TexelFormat::Rg32Uint | TexelFormat::Rgba16Uint | TexelFormat::Rgba16Float | TexelFormat::Rg32Float => 8,
            TexelFormat::Rg16Uint | TexelFormat::Rg16Float | TexelFormat::Rgba8Uint => 4,
            TexelFormat::Rg8Uint => 2,
        }
    }
}

impl VertexFormat {
    /// The textures this format uses, in order (positions first, then normals). Every texture has the
    /// same [`crate::layout::VertexTextureLayout`]: one texel per vertex per frame.
    pub const fn texel_formats(self) -> &'static [TexelFormat] {
        match self {
            VertexFormat::Packed64 => &[TexelFormat::Rg32Uint],
            VertexFormat::Unorm16 => &[TexelFormat::Rgba16Uint, TexelFormat::Rg16Uint],
            VertexFormat::F16 => &[TexelFormat::Rgba16Float, TexelFormat::Rg16Float],
            VertexFormat::F32 => &[TexelFormat::Rgba32Float, TexelFormat::Rg32Float],
            VertexFormat::Unorm8 => &[TexelFormat::Rgba8Uint, TexelFormat::Rg8Uint],
            VertexFormat::Split8 => &[TexelFormat::Rgba8Uint, TexelFormat::Rgba8Uint, TexelFormat::Rgba8Uint],
        }
    }

    /// Bytes stored per vertex per frame, all textures together.
    pub const fn bytes_per_vertex_frame(self) -> u32 {
        let formats = self.texel_formats();
        let mut sum = 0;
        let mut i = 0;
        while i < formats.len() {
            sum += formats[i].bytes_per_texel();
            i += 1;
        }
        sum
    }
}
