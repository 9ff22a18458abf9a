//! Texture layouts: where each texel of the vertex, bone and morph textures lives.
//!
//! (Declarations fixed by the lead; implementations and tests to be filled in.)

use serde::{Deserialize, Serialize};

/// The linearised vertex animation texture: texel `t = frame * vertex_count + vertex` at
/// `(t % width, t / width)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VertexTextureLayout {
    /// Vertices per frame.
    pub vertex_count: u32,
    /// Frames of all clips together.
    pub frame_count: u32,
    /// Texture width in texels.
    pub width: u32,
    /// Texture height in texels.
    pub height: u32,
}

/// The bone texture: 3 texels (rows of a 3x4 affine) per bone per frame,
/// `t = (frame * bone_count + bone) * 3 + row` at `(t % width, t / width)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BoneTextureLayout {
    /// Bones per frame.
    pub bone_count: u32,
    /// Frames of all clips together.
    pub frame_count: u32,
    /// Texture width in texels.
    pub width: u32,
    /// Texture height in texels.
    pub height: u32,
}

/// The tiled morph delta texture: bands target0 position, target0 normal, target1 position, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MorphTextureLayout {
    /// Vertices per target.
    pub vertex_count: u32,
    /// Morph targets.
    pub target_count: u32,
    /// `min(vertex_count, 2048)`.
    pub width: u32,
    /// `ceil(vertex_count / width)`.
    pub rows_per_band: u32,
    /// `target_count * 2 * rows_per_band`.
    pub height: u32,
}
