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
