//! Texture layouts: where each texel of the vertex, bone and morph textures lives.
//!
//! The vertex and bone textures are **linearised**: texel `t` of a long 1-D sequence sits at column
//! `t % width`, row `t / width`. Only the total texel count has to fit the device's texture limit, so
//! an asset may have more vertices than the texture is wide and more frames than it is tall.
//!
//! Width policy shared by both (see [`VertexTextureLayout::new`]): start from
//! [`DEFAULT_TEXTURE_WIDTH`] (capped at the device limit), shrink to the texel count for tiny assets,
//! and grow to the device limit only when the default width would need too many rows.
//!
//! The morph delta texture is **tiled** instead: one band of rows per (target, channel), so a shader
//! can address a target's deltas with one row offset ([`MorphTextureLayout`]).
//!
//! Layouts read back from a file are checked with the `validate` methods before anything uses them.

use serde::{Deserialize, Serialize};

use crate::encoding::TexelFormat;
use crate::{Error, Result};

/// The width, in texels, the vertex and bone textures start from before fitting them to the device
/// limit and the asset's size.
pub const DEFAULT_TEXTURE_WIDTH: u32 = 4096;

/// Texels per bone per frame in the bone texture: the three rows of a 3x4 affine matrix.
pub const TEXELS_PER_BONE: u32 = 3;

/// The format of every bone texel: four f32 channels (16 bytes), one row of a 3x4 affine.
pub const BONE_TEXEL_FORMAT: TexelFormat = TexelFormat::Rgba32Float;

/// The widest a morph delta texture gets; wider morph targets wrap onto more rows per band.
pub const MORPH_TEXTURE_MAX_WIDTH: u32 = 2048;

/// Picks `(width, height)` for `texels` linearised texels (both `>= 1`), or `None` if they cannot fit
/// in a `max_dimension` square. `texels > 0` and `max_dimension > 0` are checked by the callers.
pub(crate) fn fit_linear(texels: u64, max_dimension: u32) -> Option<(u32, u32)> {
    let max = u64::from(max_dimension);
    let mut width = u64::from(DEFAULT_TEXTURE_WIDTH).min(max);
    if texels < width {
        width = texels;
    }
    let mut height = texels.div_ceil(width);
    if height > max {
        // The default width needs too many rows: use the widest texture the device allows.
        width = max;
        height = texels.div_ceil(width);
    }
    if height > max {
        return None;
    }
    // Both are <= max_dimension, so they fit in u32.
    Some((width as u32, height as u32))
}

/// Checks a linearised texture rectangle read from a file: `1 <= width, height <= max_dimension` and
/// `height == ceil(texels / width)` (no missing and no wasted rows).
fn validate_linear(
    texels: u64,
    width: u32,
    height: u32,
    max_dimension: u32,
    what_width: &'static str,
    what_height: &'static str,
) -> Result<()> {
    if max_dimension == 0 {
        return Err(Error::ZeroCount { what: "max texture dimension" });
    }
    if width == 0 {
        return Err(Error::ZeroCount { what: what_width });
    }
    if width > max_dimension {
        return Err(Error::OutOfRange {
            what: what_width,
            value: format!("{width} (max texture dimension {max_dimension})"),
            expected: "<= the max texture dimension",
        });
    }
    let expected_height = texels.div_ceil(u64::from(width));
    if u64::from(height) != expected_height {
        return Err(Error::OutOfRange {
            what: what_height,
            value: format!("{height} (expected {expected_height})"),
            expected: "ceil(texel count / width)",
        });
    }
    if height > max_dimension {
        return Err(Error::OutOfRange {
            what: what_height,
            value: format!("{height} (max texture dimension {max_dimension})"),
            expected: "<= the max texture dimension",
        });
    }
    Ok(())
}

/// The linearised vertex animation texture: texel `t = frame * vertex_count + vertex` at
/// `(t % width, t / width)`.
///
/// Every texture of a [`crate::encoding::VertexFormat`] (positions, normals, ...) shares this layout:
/// one texel per vertex per frame.
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

impl VertexTextureLayout {
    /// Lays out `vertex_count * frame_count` texels in a texture no wider or taller than
    /// `max_dimension` (the device's `max_texture_dimension_2d`).
    ///
    /// Width is `min(DEFAULT_TEXTURE_WIDTH, max_dimension)`, shrunk to the texel count when that is
    /// smaller, or grown to `max_dimension` when the default width would need more than
    /// `max_dimension` rows. Height is `ceil(texels / width)`; the last row may be partly unused.
    /// Either count may exceed `max_dimension` on its own.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] if `vertex_count`, `frame_count` or `max_dimension` is 0;
    /// [`Error::TextureTooLarge`] if `vertex_count * frame_count > max_dimension²`.
    pub fn new(vertex_count: u32, frame_count: u32, max_dimension: u32) -> Result<Self> {
        if vertex_count == 0 {
            return Err(Error::ZeroCount { what: "vertex count" });
        }
        if frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        if max_dimension == 0 {
            return Err(Error::ZeroCount { what: "max texture dimension" });
        }
        let texels = u64::from(vertex_count) * u64::from(frame_count);
        let (width, height) = fit_linear(texels, max_dimension).ok_or(Error::TextureTooLarge {
            vertex_count,
            frame_count,
            texels,
            max_dimension,
        })?;
        Ok(Self { vertex_count, frame_count, width, height })
    }

    /// Checks a layout read from a file against `max_dimension`.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] for a zero count, width or `max_dimension`; [`Error::OutOfRange`] if the
    /// width or height exceeds `max_dimension` or the height is not `ceil(texels / width)`.
    pub fn validate(&self, max_dimension: u32) -> Result<()> {
        if self.vertex_count == 0 {
            return Err(Error::ZeroCount { what: "vertex count" });
        }
        if self.frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        validate_linear(
            self.texel_count(),
            self.width,
            self.height,
            max_dimension,
            "vertex texture width",
            "vertex texture height",
        )
    }

    /// Texels holding data: `vertex_count * frame_count` (at most `width * height`).
    pub fn texel_count(&self) -> u64 {
        u64::from(self.vertex_count) * u64::from(self.frame_count)
    }

    /// Linear index of the texel of `vertex` at `frame`: `frame * vertex_count + vertex`.
    ///
    /// `frame < frame_count` and `vertex < vertex_count` are the caller's to ensure; other arguments
    /// give the index of some other texel or one past the data.
    pub fn texel_index(&self, frame: u32, vertex: u32) -> u64 {
        debug_assert!(frame < self.frame_count && vertex < self.vertex_count);
        u64::from(frame) * u64::from(self.vertex_count) + u64::from(vertex)
    }

    /// Texel `(x, y)` of `vertex` at `frame`: `(t % width, t / width)` with `t` the
    /// [`texel_index`](Self::texel_index). Inside the texture for in-range arguments of a valid layout.
    pub fn texel_coord(&self, frame: u32, vertex: u32) -> [u32; 2] {
        linear_coord(self.texel_index(frame, vertex), self.width)
    }

    /// Bytes of one texture of this layout with `bytes_per_texel` bytes per texel: the full rectangle
    /// `width * height * bytes_per_texel`, including the unused texels of the last row. Saturates at
    /// `u64::MAX` (unreachable for a layout that passed [`validate`](Self::validate) with a real
    /// device limit).
    pub fn byte_len(&self, bytes_per_texel: u32) -> u64 {
        rectangle_bytes(self.width, self.height, bytes_per_texel)
    }
}

/// `(t % width, t / width)`; `width` is never 0 in a valid layout (0 would give `[0, 0]`).
fn linear_coord(t: u64, width: u32) -> [u32; 2] {
    let w = u64::from(width.max(1));
    // Both fit in u32 for in-range texels: x < width, y < height.
    [(t % w) as u32, (t / w) as u32]
}

fn rectangle_bytes(width: u32, height: u32, bytes_per_texel: u32) -> u64 {
    (u64::from(width) * u64::from(height)).saturating_mul(u64::from(bytes_per_texel))
}

/// The bone texture: 3 texels (rows of a 3x4 affine) per bone per frame,
/// `t = (frame * bone_count + bone) * 3 + row` at `(t % width, t / width)`.
///
/// Each texel is [`BONE_TEXEL_FORMAT`] (`Rgba32Float`, 16 bytes) and holds row `row` (0, 1 or 2) of
/// the 3x4 affine `joint_world * inverse_bind` of that bone at that frame, which maps a bind-pose
/// object-space point to its animated object-space position: `p' = M * [p, 1]`, where row `r` of `M`
/// gives `p'[r] = dot(row_r.xyz, p) + row_r.w`. Width follows the same policy as
/// [`VertexTextureLayout::new`].
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

impl BoneTextureLayout {
    /// Lays out `bone_count * frame_count * 3` texels in a texture no wider or taller than
    /// `max_dimension`, with the width policy of [`VertexTextureLayout::new`].
    ///
    /// # Errors
    /// [`Error::ZeroCount`] if `bone_count`, `frame_count` or `max_dimension` is 0;
    /// [`Error::BoneTextureTooLarge`] if `bone_count * frame_count * 3 > max_dimension²`.
    pub fn new(bone_count: u32, frame_count: u32, max_dimension: u32) -> Result<Self> {
        if bone_count == 0 {
            return Err(Error::ZeroCount { what: "bone count" });
        }
        if frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        if max_dimension == 0 {
            return Err(Error::ZeroCount { what: "max texture dimension" });
        }
        let texels = bone_texels(bone_count, frame_count);
        let (width, height) = fit_linear(texels, max_dimension).ok_or(Error::BoneTextureTooLarge {
            bone_count,
            frame_count,
            texels,
            max_dimension,
        })?;
        Ok(Self { bone_count, frame_count, width, height })
    }

    /// Checks a layout read from a file against `max_dimension`.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] for a zero count, width or `max_dimension`; [`Error::OutOfRange`] if the
    /// width or height exceeds `max_dimension` or the height is not `ceil(texels / width)`.
    pub fn validate(&self, max_dimension: u32) -> Result<()> {
        if self.bone_count == 0 {
            return Err(Error::ZeroCount { what: "bone count" });
        }
        if self.frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        validate_linear(
            self.texel_count(),
            self.width,
            self.height,
            max_dimension,
            "bone texture width",
            "bone texture height",
        )
    }

    /// Texels holding data: `bone_count * frame_count * 3`, saturated at `u64::MAX` (only reachable
    /// for a layout that fails [`validate`](Self::validate)).
    pub fn texel_count(&self) -> u64 {
        bone_texels(self.bone_count, self.frame_count)
    }

    /// Linear index of row `row` (0..3) of `bone` at `frame`: `(frame * bone_count + bone) * 3 + row`.
    ///
    /// `frame < frame_count`, `bone < bone_count` and `row < 3` are the caller's to ensure.
    pub fn texel_index(&self, frame: u32, bone: u32, row: u32) -> u64 {
        debug_assert!(frame < self.frame_count && bone < self.bone_count && row < TEXELS_PER_BONE);
        (u64::from(frame) * u64::from(self.bone_count) + u64::from(bone)) * u64::from(TEXELS_PER_BONE)
            + u64::from(row)
    }

    /// Texel `(x, y)` of row `row` of `bone` at `frame`: `(t % width, t / width)`.
    pub fn texel_coord(&self, frame: u32, bone: u32, row: u32) -> [u32; 2] {
        linear_coord(self.texel_index(frame, bone, row), self.width)
    }

    /// Bytes of the texture with `bytes_per_texel` bytes per texel (16 for [`BONE_TEXEL_FORMAT`]):
    /// `width * height * bytes_per_texel`, including the unused texels of the last row. Saturates at
    /// `u64::MAX`.
    pub fn byte_len(&self, bytes_per_texel: u32) -> u64 {
        rectangle_bytes(self.width, self.height, bytes_per_texel)
    }
}

fn bone_texels(bone_count: u32, frame_count: u32) -> u64 {
    // bones * 3 < 2^34, times frames can exceed u64 (up to ~2^66): saturate.
    (u64::from(bone_count) * u64::from(TEXELS_PER_BONE)).saturating_mul(u64::from(frame_count))
}

/// Which half of a morph target's pair of bands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MorphChannel {
    /// Position deltas (metres, object space): the first band of each target.
    Position = 0,
    /// Normal deltas: the second band of each target.
    Normal = 1,
}

/// The tiled morph delta texture: bands target0 position, target0 normal, target1 position, ...
///
/// Each band is `rows_per_band` rows of `width` texels; vertex `v` of band `b` is at
/// `(v % width, b * rows_per_band + v / width)`. Example: 5000 vertices and 2 targets give a
/// 2048 x 12 texture (3 rows per band), and vertex 4097 is at column 1, row 2 of its band.
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

impl MorphTextureLayout {
    /// Lays out `target_count` targets of `vertex_count` vertices: width
    /// `min(vertex_count, MORPH_TEXTURE_MAX_WIDTH)`, `ceil(vertex_count / width)` rows per band, two
    /// bands per target. The device limit is checked by [`validate`](Self::validate).
    ///
    /// # Errors
    /// [`Error::ZeroCount`] if either count is 0; [`Error::OutOfRange`] if the height
    /// `target_count * 2 * rows_per_band` overflows `u32`.
    pub fn new(vertex_count: u32, target_count: u32) -> Result<Self> {
        if vertex_count == 0 {
            return Err(Error::ZeroCount { what: "morph vertex count" });
        }
        if target_count == 0 {
            return Err(Error::ZeroCount { what: "morph target count" });
        }
        let width = vertex_count.min(MORPH_TEXTURE_MAX_WIDTH);
        let rows_per_band = vertex_count.div_ceil(width);
        let height = morph_height(target_count, rows_per_band);
        let height = u32::try_from(height).map_err(|_| Error::OutOfRange {
            what: "morph texture height",
            value: height.to_string(),
            expected: "<= u32::MAX",
        })?;
        Ok(Self { vertex_count, target_count, width, rows_per_band, height })
    }

    /// Checks a layout read from a file: nonzero counts, every derived field equal to what
    /// [`new`](Self::new) computes, and width and height at most `max_dimension`.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] for a zero count or `max_dimension`; [`Error::OutOfRange`] for a derived
    /// field that does not match or a dimension above `max_dimension`.
    pub fn validate(&self, max_dimension: u32) -> Result<()> {
        if max_dimension == 0 {
            return Err(Error::ZeroCount { what: "max texture dimension" });
        }
        let expected = Self::new(self.vertex_count, self.target_count)?;
        let fields = [
            ("morph texture width", self.width, expected.width),
            ("morph rows per band", self.rows_per_band, expected.rows_per_band),
            ("morph texture height", self.height, expected.height),
        ];
        for (what, got, want) in fields {
            if got != want {
                return Err(Error::OutOfRange {
                    what,
                    value: format!("{got} (expected {want})"),
                    expected: "the value derived from the vertex and target counts",
                });
            }
        }
        for (what, got) in [("morph texture width", self.width), ("morph texture height", self.height)] {
            if got > max_dimension {
                return Err(Error::OutOfRange {
                    what,
                    value: format!("{got} (max texture dimension {max_dimension})"),
                    expected: "<= the max texture dimension",
                });
            }
        }
        Ok(())
    }

    /// Band index of `channel` of `target`: `target * 2 + channel` (position 0, normal 1).
    pub fn band(&self, target: u32, channel: MorphChannel) -> u32 {
        debug_assert!(target < self.target_count);
        target * 2 + channel as u32
    }

    /// First row of the band of `channel` of `target`: `band * rows_per_band`.
    pub fn band_start_row(&self, target: u32, channel: MorphChannel) -> u32 {
        self.band(target, channel) * self.rows_per_band
    }

    /// Texel `(x, y)` of `vertex`'s `channel` delta for `target`:
    /// `(v % width, band * rows_per_band + v / width)`.
    ///
    /// `target < target_count` and `vertex < vertex_count` are the caller's to ensure.
    pub fn texel_coord(&self, target: u32, channel: MorphChannel, vertex: u32) -> [u32; 2] {
        debug_assert!(vertex < self.vertex_count);
        let width = self.width.max(1);
        [vertex % width, self.band_start_row(target, channel) + vertex / width]
    }

    /// Bytes of the texture with `bytes_per_texel` bytes per texel: `width * height * bytes_per_texel`.
    /// Saturates at `u64::MAX`.
    pub fn byte_len(&self, bytes_per_texel: u32) -> u64 {
        rectangle_bytes(self.width, self.height, bytes_per_texel)
    }
}

/// Morph weights per texel of the morph weights texture: the four channels of one
/// [`MORPH_WEIGHTS_TEXEL_FORMAT`] texel hold the weights of four consecutive targets.
pub const MORPH_WEIGHTS_PER_TEXEL: u32 = 4;

/// The format of every morph delta texel and every morph weights texel: four f32 channels (16 bytes).
/// Deltas are stored as f32 (not binary16): the live morph layer then adds exactly the bind-space
/// deltas CPU skinning adds, so bone mode matches CPU skinning to f32 rounding.
pub const MORPH_TEXEL_FORMAT: TexelFormat = TexelFormat::Rgba32Float;

/// The format of every morph weights texel (see [`MorphWeightsLayout`]).
pub const MORPH_WEIGHTS_TEXEL_FORMAT: TexelFormat = TexelFormat::Rgba32Float;

/// The per-frame morph weights track, linearised like the bone texture: frame `f` holds
/// `texels_per_frame = ceil(target_count / 4)` texels, and target `t`'s weight at frame `f` is channel
/// `t % 4` of texel `i = f * texels_per_frame + t / 4`, at `(i % width, i / width)`. `f` is the global
/// frame index of the clip row map (`clip.first_frame + k`), the same frame numbering as the vertex and
/// bone textures. Channels past the last target are 0.
///
/// Each texel is [`MORPH_WEIGHTS_TEXEL_FORMAT`] (16 bytes); as f32 values in file order, target `t`'s
/// weight at frame `f` is value `4 * (f * texels_per_frame) + t`. Width follows the policy of
/// [`VertexTextureLayout::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MorphWeightsLayout {
    /// Morph targets (weights per frame).
    pub target_count: u32,
    /// Frames of all clips together.
    pub frame_count: u32,
    /// Texture width in texels.
    pub width: u32,
    /// Texture height in texels.
    pub height: u32,
}

impl MorphWeightsLayout {
    /// Lays out `frame_count * ceil(target_count / 4)` texels in a texture no wider or taller than
    /// `max_dimension`, with the width policy of [`VertexTextureLayout::new`].
    ///
    /// # Errors
    /// [`Error::ZeroCount`] if `target_count`, `frame_count` or `max_dimension` is 0;
    /// [`Error::OutOfRange`] if the texels do not fit a `max_dimension` square.
    pub fn new(target_count: u32, frame_count: u32, max_dimension: u32) -> Result<Self> {
        if target_count == 0 {
            return Err(Error::ZeroCount { what: "morph target count" });
        }
        if frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        if max_dimension == 0 {
            return Err(Error::ZeroCount { what: "max texture dimension" });
        }
        let texels = morph_weight_texels(target_count, frame_count);
        let (width, height) = fit_linear(texels, max_dimension).ok_or_else(|| Error::OutOfRange {
            what: "morph weights texels",
            value: format!("{texels} (max texture dimension {max_dimension})"),
            expected: "<= the square of the max texture dimension",
        })?;
        Ok(Self { target_count, frame_count, width, height })
    }

    /// Checks a layout read from a file against `max_dimension`.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] for a zero count, width or `max_dimension`; [`Error::OutOfRange`] if the
    /// width or height exceeds `max_dimension` or the height is not `ceil(texels / width)`.
    pub fn validate(&self, max_dimension: u32) -> Result<()> {
        if self.target_count == 0 {
            return Err(Error::ZeroCount { what: "morph target count" });
        }
        if self.frame_count == 0 {
            return Err(Error::ZeroCount { what: "frame count" });
        }
        validate_linear(
            self.texel_count(),
            self.width,
            self.height,
            max_dimension,
            "morph weights width",
            "morph weights height",
        )
    }

    /// Texels per frame: `ceil(target_count / 4)`.
    pub fn texels_per_frame(&self) -> u32 {
        self.target_count.div_ceil(MORPH_WEIGHTS_PER_TEXEL)
    }

    /// Texels holding data: `frame_count * ceil(target_count / 4)`.
    pub fn texel_count(&self) -> u64 {
        morph_weight_texels(self.target_count, self.frame_count)
    }

    /// Index, counted in f32 values from the start of the texture, of `target`'s weight at `frame`:
    /// `4 * (frame * texels_per_frame + target / 4) + target % 4`.
    ///
    /// `frame < frame_count` and `target < target_count` are the caller's to ensure.
    pub fn value_index(&self, frame: u32, target: u32) -> u64 {
        debug_assert!(frame < self.frame_count && target < self.target_count);
        let per = u64::from(MORPH_WEIGHTS_PER_TEXEL);
        (u64::from(frame) * u64::from(self.texels_per_frame()) + u64::from(target / MORPH_WEIGHTS_PER_TEXEL))
            * per
            + u64::from(target % MORPH_WEIGHTS_PER_TEXEL)
    }

    /// Texel `(x, y)` holding `target`'s weight at `frame` (in channel `target % 4`).
    pub fn texel_coord(&self, frame: u32, target: u32) -> [u32; 2] {
        linear_coord(self.value_index(frame, target) / u64::from(MORPH_WEIGHTS_PER_TEXEL), self.width)
    }

    /// Bytes of the texture with `bytes_per_texel` bytes per texel (16 for
    /// [`MORPH_WEIGHTS_TEXEL_FORMAT`]): `width * height * bytes_per_texel`, including the unused texels
    /// of the last row. Saturates at `u64::MAX`.
    pub fn byte_len(&self, bytes_per_texel: u32) -> u64 {
        rectangle_bytes(self.width, self.height, bytes_per_texel)
    }
}

fn morph_weight_texels(target_count: u32, frame_count: u32) -> u64 {
    // < 2^30 * 2^32: fits u64.
    u64::from(target_count.div_ceil(MORPH_WEIGHTS_PER_TEXEL)) * u64::from(frame_count)
}

fn morph_height(target_count: u32, rows_per_band: u32) -> u64 {
    // < 2^33 * 2^32: fits u64.
    u64::from(target_count) * 2 * u64::from(rows_per_band)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reference_figure_2367_vertices_288_frames_is_4096_by_167() {
        // crowdbake's humanoid: 2,367 vertices x 6 clips x 48 frames = 681,696 texels -> 4096 x 167.
        let l = VertexTextureLayout::new(2367, 288, 8192).unwrap();
        assert_eq!((l.width, l.height), (4096, 167));
        assert_eq!(l.texel_count(), 681_696);
        // Its fp16 textures: 8 bytes (RGBA16F) + 4 bytes (RG16F) per texel over the full rectangle.
        assert_eq!(l.byte_len(8), 4096 * 167 * 8);
        assert_eq!(l.byte_len(4), 4096 * 167 * 4);
        l.validate(8192).unwrap();
        // Last texel: 681,695 = 166 * 4096 + 1759.
        assert_eq!(l.texel_coord(287, 2366), [1759, 166]);
    }

    #[test]
    fn small_assets_shrink_the_width_to_the_texel_count() {
        let l = VertexTextureLayout::new(100, 10, 8192).unwrap();
        assert_eq!((l.width, l.height), (1000, 1));
        let one = VertexTextureLayout::new(1, 1, 8192).unwrap();
        assert_eq!((one.width, one.height), (1, 1));
        // A device limit below the default width caps the width.
        let capped = VertexTextureLayout::new(3000, 1, 2048).unwrap();
        assert_eq!((capped.width, capped.height), (2048, 2));
    }

    #[test]
    fn vertex_count_above_max_dimension_still_fits() {
        // 100 vertices > 64 = max: 300 texels in a 64-wide texture, 5 rows.
        let l = VertexTextureLayout::new(100, 3, 64).unwrap();
        assert_eq!((l.width, l.height), (64, 5));
        assert_eq!(l.texel_coord(2, 99), [299 % 64, 299 / 64]);
        l.validate(64).unwrap();
    }

    #[test]
    fn frame_count_above_max_dimension_still_fits() {
        let l = VertexTextureLayout::new(2, 1000, 64).unwrap();
        assert_eq!((l.width, l.height), (64, 32));
        // Last texel 1999 = 31 * 64 + 15.
        assert_eq!(l.texel_coord(999, 1), [15, 31]);
    }

    #[test]
    fn width_grows_to_the_device_limit_when_4096_needs_too_many_rows() {
        // 1e8 texels: 4096 wide would need 24,415 rows > 16,384, so width becomes 16,384.
        let l = VertexTextureLayout::new(100_000, 1000, 16384).unwrap();
        assert_eq!((l.width, l.height), (16384, 100_000_000u32.div_ceil(16384)));
    }

    #[test]
    fn exact_fit_at_max_dimension_squared_and_one_more_is_texture_too_large() {
        // 128 x 32 = 4096 = 64², each count on its own differing from 64.
        let l = VertexTextureLayout::new(128, 32, 64).unwrap();
        assert_eq!((l.width, l.height), (64, 64));
        assert_eq!(l.texel_coord(31, 127), [63, 63]);
        assert_eq!(
            VertexTextureLayout::new(4097, 1, 64),
            Err(Error::TextureTooLarge {
                vertex_count: 4097,
                frame_count: 1,
                texels: 4097,
                max_dimension: 64
            })
        );
    }

    #[test]
    fn zero_counts_and_zero_max_dimension_are_errors() {
        assert!(matches!(VertexTextureLayout::new(0, 1, 64), Err(Error::ZeroCount { .. })));
        assert!(matches!(VertexTextureLayout::new(1, 0, 64), Err(Error::ZeroCount { .. })));
        assert!(matches!(VertexTextureLayout::new(1, 1, 0), Err(Error::ZeroCount { .. })));
        assert!(matches!(BoneTextureLayout::new(0, 1, 64), Err(Error::ZeroCount { .. })));
        assert!(matches!(BoneTextureLayout::new(1, 0, 64), Err(Error::ZeroCount { .. })));
        assert!(matches!(BoneTextureLayout::new(1, 1, 0), Err(Error::ZeroCount { .. })));
        assert!(matches!(MorphTextureLayout::new(0, 1), Err(Error::ZeroCount { .. })));
        assert!(matches!(MorphTextureLayout::new(1, 0), Err(Error::ZeroCount { .. })));
    }

    #[test]
    fn validate_rejects_inconsistent_file_layouts() {
        let good = VertexTextureLayout::new(2367, 288, 8192).unwrap();
        good.validate(8192).unwrap();
        // A smaller device limit than the texture's width.
        assert!(matches!(good.validate(2048), Err(Error::OutOfRange { what: "vertex texture width", .. })));
        assert!(matches!(good.validate(0), Err(Error::ZeroCount { .. })));
        for bad in [
            VertexTextureLayout { height: 166, ..good }, // too few rows: texels past the end
            VertexTextureLayout { height: 168, ..good }, // a wasted row
            VertexTextureLayout { width: 0, ..good },
            VertexTextureLayout { vertex_count: 0, ..good },
            VertexTextureLayout { frame_count: 0, ..good },
        ] {
            assert!(bad.validate(8192).is_err(), "{bad:?}");
        }
        // Height above the limit while consistent with the width.
        let tall = VertexTextureLayout { vertex_count: 10, frame_count: 100, width: 10, height: 100 };
        assert!(matches!(tall.validate(64), Err(Error::OutOfRange { what: "vertex texture height", .. })));
        tall.validate(100).unwrap();
        // Counts near u32::MAX do not overflow the check.
        let huge = VertexTextureLayout { vertex_count: u32::MAX, frame_count: u32::MAX, width: 1, height: 1 };
        assert!(huge.validate(u32::MAX).is_err());
    }

    #[test]
    fn bone_texture_reference_25_bones_288_frames() {
        // 25 bones x 288 frames x 3 texels = 21,600 texels -> 4096 x 6.
        let l = BoneTextureLayout::new(25, 288, 8192).unwrap();
        assert_eq!((l.width, l.height), (4096, 6));
        assert_eq!(l.texel_count(), 21_600);
        // crowdbake's 337.5 KiB counts data texels only: 21,600 x 16 B = 345,600 B.
        assert_eq!(l.texel_count() * u64::from(BONE_TEXEL_FORMAT.bytes_per_texel()), 345_600);
        // The full rectangle includes the last row's padding.
        assert_eq!(l.byte_len(BONE_TEXEL_FORMAT.bytes_per_texel()), 4096 * 6 * 16);
        assert_eq!(l.texel_index(0, 0, 0), 0);
        assert_eq!(l.texel_index(0, 1, 2), 5);
        assert_eq!(l.texel_index(1, 0, 0), 75);
        assert_eq!(l.texel_coord(287, 24, 2), [21_599 % 4096, 21_599 / 4096]);
        l.validate(8192).unwrap();
    }

    #[test]
    fn bone_texture_exact_fit_and_one_more() {
        // 48² = 2304 = 3 x 768: 2 bones x 384 frames fill it exactly; one more frame (2310) does not fit.
        let l = BoneTextureLayout::new(2, 384, 48).unwrap();
        assert_eq!((l.width, l.height), (48, 48));
        assert_eq!(l.texel_coord(383, 1, 2), [47, 47]);
        assert_eq!(
            BoneTextureLayout::new(2, 385, 48),
            Err(Error::BoneTextureTooLarge {
                bone_count: 2,
                frame_count: 385,
                texels: 2310,
                max_dimension: 48
            })
        );
        // Bone count above the limit on its own still fits.
        let wide = BoneTextureLayout::new(100, 2, 64).unwrap();
        assert_eq!((wide.width, wide.height), (64, 10));
        // Texel count that overflows u64 saturates and errors instead of wrapping.
        assert!(matches!(
            BoneTextureLayout::new(u32::MAX, u32::MAX, u32::MAX),
            Err(Error::BoneTextureTooLarge { texels: u64::MAX, .. })
        ));
    }

    #[test]
    fn morph_5000_vertices_2_targets_is_2048_by_12() {
        let l = MorphTextureLayout::new(5000, 2).unwrap();
        assert_eq!((l.width, l.rows_per_band, l.height), (2048, 3, 12));
        l.validate(8192).unwrap();
    }

    #[test]
    fn morph_vertex_4097_is_column_1_row_2_of_its_band() {
        let l = MorphTextureLayout::new(5000, 2).unwrap();
        assert_eq!(l.texel_coord(0, MorphChannel::Position, 4097), [1, 2]);
        assert_eq!(l.texel_coord(1, MorphChannel::Position, 4097), [1, 2 * 3 + 2]);
    }

    #[test]
    fn morph_band_of_target_1_normal_starts_at_row_3_rows_per_band() {
        let l = MorphTextureLayout::new(5000, 2).unwrap();
        assert_eq!(l.band(0, MorphChannel::Position), 0);
        assert_eq!(l.band(0, MorphChannel::Normal), 1);
        assert_eq!(l.band(1, MorphChannel::Position), 2);
        assert_eq!(l.band(1, MorphChannel::Normal), 3);
        assert_eq!(l.band_start_row(1, MorphChannel::Normal), 3 * l.rows_per_band);
        assert_eq!(l.texel_coord(1, MorphChannel::Normal, 0), [0, 9]);
        assert_eq!(l.texel_coord(1, MorphChannel::Normal, 4999), [4999 % 2048, 11]);
    }

    #[test]
    fn morph_small_mesh_uses_one_row_per_band_and_validate_checks_fields() {
        let l = MorphTextureLayout::new(500, 3).unwrap();
        assert_eq!((l.width, l.rows_per_band, l.height), (500, 1, 6));
        assert!(matches!(l.validate(4), Err(Error::OutOfRange { what: "morph texture width", .. })));
        assert!(MorphTextureLayout { height: 7, ..l }.validate(8192).is_err());
        assert!(MorphTextureLayout { rows_per_band: 2, ..l }.validate(8192).is_err());
        assert!(MorphTextureLayout { width: 250, ..l }.validate(8192).is_err());
        assert!(MorphTextureLayout { vertex_count: 0, ..l }.validate(8192).is_err());
        // Height overflowing u32 is an error, not a wrap.
        assert!(matches!(MorphTextureLayout::new(u32::MAX, u32::MAX), Err(Error::OutOfRange { .. })));
    }

    #[test]
    fn morph_weights_pack_four_targets_per_texel_frame_major() {
        // 5 targets -> 2 texels per frame; 10 frames -> 20 texels, one row of 20.
        let l = MorphWeightsLayout::new(5, 10, 8192).unwrap();
        assert_eq!((l.texels_per_frame(), l.width, l.height), (2, 20, 1));
        assert_eq!(l.value_index(0, 0), 0);
        assert_eq!(l.value_index(0, 4), 4);
        assert_eq!(l.value_index(3, 2), 3 * 8 + 2);
        assert_eq!(l.value_index(9, 4), 9 * 8 + 4);
        assert_eq!(l.texel_coord(9, 4), [19, 0]);
        assert_eq!(l.byte_len(16), 20 * 16);
        l.validate(8192).unwrap();
        // Wraps onto more rows once the texels pass the width: 4 targets, 100 frames, max width 16.
        let w = MorphWeightsLayout::new(4, 100, 16).unwrap();
        assert_eq!((w.width, w.height), (16, 7));
        assert_eq!(w.texel_coord(99, 3), [99 % 16, 99 / 16]);
        assert!(matches!(MorphWeightsLayout::new(4, 257, 16), Err(Error::OutOfRange { .. })));
        assert!(matches!(MorphWeightsLayout::new(0, 1, 16), Err(Error::ZeroCount { .. })));
        assert!(matches!(MorphWeightsLayout::new(1, 0, 16), Err(Error::ZeroCount { .. })));
        assert!(MorphWeightsLayout { height: 8, ..w }.validate(16).is_err());
        assert!(MorphWeightsLayout { width: 17, ..w }.validate(16).is_err());
        assert!(MorphWeightsLayout { target_count: 0, ..w }.validate(16).is_err());
    }

    /// Device limits: mostly tiny ones so that counts exceed them, some realistic ones.
    fn max_dimension() -> impl Strategy<Value = u32> {
        prop_oneof![1u32..=64, 1u32..=16384]
    }

    /// Counts up to `max`, half of them small, so that small assets (fewer texels than the default
    /// width) are sampled too: the product of two uniform counts almost never is.
    fn count(max: u32) -> impl Strategy<Value = u32> {
        prop_oneof![1u32..=64, 1u32..=max]
    }

    proptest! {
        #[test]
        fn vertex_layout_fits_exactly_when_the_product_fits(
            vertex_count in count(200_000),
            frame_count in count(20_000),
            max_dim in max_dimension(),
            picks in proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0), 8),
        ) {
            let texels = u64::from(vertex_count) * u64::from(frame_count);
            let fits = texels <= u64::from(max_dim) * u64::from(max_dim);
            let layout = VertexTextureLayout::new(vertex_count, frame_count, max_dim);
            prop_assert_eq!(layout.is_ok(), fits);
            let Ok(l) = layout else {
                prop_assert!(
                    matches!(layout, Err(Error::TextureTooLarge { texels: t, .. }) if t == texels),
                    "wrong error for {texels} texels"
                );
                return Ok(());
            };
            prop_assert!(l.width >= 1 && l.width <= max_dim && l.height >= 1 && l.height <= max_dim);
            // The width policy, stated directly: the default width capped by the device, the texel
            // count if smaller, the device limit if the default width needs too many rows.
            let default_width = u64::from(DEFAULT_TEXTURE_WIDTH.min(max_dim));
            let expected_width = if texels < default_width {
                texels
            } else if texels.div_ceil(default_width) <= u64::from(max_dim) {
                default_width
            } else {
                u64::from(max_dim)
            };
            prop_assert_eq!(u64::from(l.width), expected_width);
            // Every data texel is inside and no row is wasted.
            prop_assert!(u64::from(l.width) * u64::from(l.height) >= texels);
            prop_assert!(u64::from(l.width) * u64::from(l.height - 1) < texels);
            prop_assert!(l.validate(max_dim).is_ok());
            // The first and last texels plus random ones: inside, and the coordinate maps back to the
            // one (frame, vertex) it came from (so the mapping is injective).
            let mut samples = vec![(0, 0), (frame_count - 1, vertex_count - 1)];
            for (f, v) in picks {
                samples.push(((f * f64::from(frame_count)) as u32, (v * f64::from(vertex_count)) as u32));
            }
            for (frame, vertex) in samples {
                let [x, y] = l.texel_coord(frame, vertex);
                prop_assert!(x < l.width && y < l.height);
                let t = u64::from(y) * u64::from(l.width) + u64::from(x);
                prop_assert_eq!(t, l.texel_index(frame, vertex));
                let vc = u64::from(vertex_count);
                prop_assert_eq!((t / vc, t % vc), (u64::from(frame), u64::from(vertex)));
            }
        }

        #[test]
        fn bone_layout_fits_exactly_when_the_product_fits(
            bone_count in count(2_000),
            frame_count in count(20_000),
            max_dim in max_dimension(),
            picks in proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0, 0u32..3), 8),
        ) {
            let texels = u64::from(bone_count) * u64::from(frame_count) * 3;
            let fits = texels <= u64::from(max_dim) * u64::from(max_dim);
            let layout = BoneTextureLayout::new(bone_count, frame_count, max_dim);
            prop_assert_eq!(layout.is_ok(), fits);
            let Ok(l) = layout else {
                prop_assert!(
                    matches!(layout, Err(Error::BoneTextureTooLarge { texels: t, .. }) if t == texels),
                    "wrong error for {texels} texels"
                );
                return Ok(());
            };
            prop_assert!(l.width >= 1 && l.width <= max_dim && l.height >= 1 && l.height <= max_dim);
            prop_assert!(u64::from(l.width) * u64::from(l.height) >= texels);
            prop_assert!(u64::from(l.width) * u64::from(l.height - 1) < texels);
            prop_assert!(l.validate(max_dim).is_ok());
            let mut samples = vec![(0, 0, 0), (frame_count - 1, bone_count - 1, 2)];
            for (f, b, row) in picks {
                samples.push(((f * f64::from(frame_count)) as u32, (b * f64::from(bone_count)) as u32, row));
            }
            for (frame, bone, row) in samples {
                let [x, y] = l.texel_coord(frame, bone, row);
                prop_assert!(x < l.width && y < l.height);
                let t = u64::from(y) * u64::from(l.width) + u64::from(x);
                prop_assert_eq!(t, l.texel_index(frame, bone, row));
                let per_frame = u64::from(bone_count) * 3;
                prop_assert_eq!(
                    (t / per_frame, t % per_frame / 3, t % 3),
                    (u64::from(frame), u64::from(bone), u64::from(row))
                );
            }
        }

        #[test]
        fn morph_coords_are_inside_and_distinct_per_band(
            vertex_count in 1u32..=20_000,
            target_count in 1u32..=64,
            picks in proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0, any::<bool>()), 8),
        ) {
            let l = MorphTextureLayout::new(vertex_count, target_count).unwrap();
            prop_assert!(l.validate(l.width.max(l.height)).is_ok());
            for (t, v, normal) in picks {
                let target = (t * f64::from(target_count)) as u32;
                let vertex = (v * f64::from(vertex_count)) as u32;
                let channel = if normal { MorphChannel::Normal } else { MorphChannel::Position };
                let [x, y] = l.texel_coord(target, channel, vertex);
                prop_assert!(x < l.width && y < l.height);
                // Round trip: band and vertex come back from the coordinate.
                let band = y / l.rows_per_band;
                prop_assert_eq!(band, l.band(target, channel));
                prop_assert_eq!((y % l.rows_per_band) * l.width + x, vertex);
            }
        }
    }
}
