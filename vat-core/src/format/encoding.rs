//! Encodings of positions, normals and rotations, each with its error bound.
//!
//! Everything here mirrors the "Positions" and "Normals" formulas of the design (the WGSL shader and
//! [`crate::format::reference`] decode with the same f32 operations in the same order; no fused multiply-add).
//!
//! - Positions are normalised into the bake's [`PositionBounds`] (`n = (p - min) / extent`, clamped to
//!   `[0, 1]`) and decoded `p = min + n * extent`. Worst-case errors: [`position_error_bound`].
//! - Normals are octahedral (z is the fold axis), quantised by nearest rounding ([`oct_encode`], the
//!   default), with "precise" refinement ([`oct_encode_precise`], a third smaller worst case), or
//!   stored as floats ([`oct_encode_f32`]). Worst-case angles: [`normal_error_bound_degrees`].
//! - [`encode_vertex_texel`] / [`decode_vertex_texel`] are the per-format texel codec of the baker and
//!   the CPU reference decoder.
//! - Tangent frames travel as quaternions with the bitangent sign in the sign of `w`
//!   ([`tangent_frame_to_quat`]); rotation tracks are made hemisphere-continuous with
//!   [`make_hemisphere_continuous`].
//! - IEEE binary16 conversions: [`f32_to_f16_bits`], [`f16_bits_to_f32`].
//!
//! Error bounds are written with `u = 2^-24`, the unit roundoff of f32 (round to nearest: one f32
//! operation on exact inputs errs by at most `u * |result|`).

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

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
    /// The compressed tier (format version 11): no texel per vertex per frame. Every frame of a vertex
    /// is the asset's own skin (the bone section, decoded as bone mode decodes it) plus a residual of
    /// the vertex's own width from a bit stream
    /// ([`crate::container::SkinResidualAnimation`], [`crate::format::skin_residual`]), within
    /// bounds chosen before the bake (default 0.5 mm and 1 degree). Only for skeletal bakes.
    SkinResidual,
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
    /// Four u32 channels, 16 bytes (the rigid mode's piece and vertex textures,
    /// [`crate::rigid`]).
    Rgba32Uint,
}

impl TexelFormat {
    /// Every texel format, in declaration order (backends test their format tables over it).
    pub const ALL: [TexelFormat; 10] = [
        TexelFormat::Rg32Uint,
        TexelFormat::Rgba16Uint,
        TexelFormat::Rg16Uint,
        TexelFormat::Rgba16Float,
        TexelFormat::Rg16Float,
        TexelFormat::Rgba32Float,
        TexelFormat::Rg32Float,
        TexelFormat::Rgba8Uint,
        TexelFormat::Rg8Uint,
        TexelFormat::Rgba32Uint,
    ];

    /// Bytes per texel.
    pub const fn bytes_per_texel(self) -> u32 {
        match self {
            TexelFormat::Rgba32Float | TexelFormat::Rgba32Uint => 16,
            TexelFormat::Rg32Uint
            | TexelFormat::Rgba16Uint
            | TexelFormat::Rgba16Float
            | TexelFormat::Rg32Float => 8,
            TexelFormat::Rg16Uint | TexelFormat::Rg16Float | TexelFormat::Rgba8Uint => 4,
            TexelFormat::Rg8Uint => 2,
        }
    }
}

impl VertexFormat {
    /// Every vertex format that stores a texel per vertex per frame (all but
    /// [`VertexFormat::SkinResidual`]), in declaration order (Packed64 first).
    pub const TEXTURED: [VertexFormat; 6] = [
        VertexFormat::Packed64,
        VertexFormat::Unorm16,
        VertexFormat::F16,
        VertexFormat::F32,
        VertexFormat::Unorm8,
        VertexFormat::Split8,
    ];

    /// The textures this format uses, in order (positions first, then normals). Every texture has the
    /// same [`crate::layout::VertexTextureLayout`]: one texel per vertex per frame. None for
    /// [`VertexFormat::SkinResidual`] (its residual texture is the skin-residual section's).
    pub const fn texel_formats(self) -> &'static [TexelFormat] {
        match self {
            VertexFormat::Packed64 => &[TexelFormat::Rg32Uint],
            VertexFormat::Unorm16 => &[TexelFormat::Rgba16Uint, TexelFormat::Rg16Uint],
            VertexFormat::F16 => &[TexelFormat::Rgba16Float, TexelFormat::Rg16Float],
            VertexFormat::F32 => &[TexelFormat::Rgba32Float, TexelFormat::Rg32Float],
            VertexFormat::Unorm8 => &[TexelFormat::Rgba8Uint, TexelFormat::Rg8Uint],
            VertexFormat::Split8 => &[TexelFormat::Rgba8Uint, TexelFormat::Rgba8Uint, TexelFormat::Rgba8Uint],
            VertexFormat::SkinResidual => &[],
        }
    }

    /// Bytes stored per vertex per frame, all textures together (0 for
    /// [`VertexFormat::SkinResidual`], whose size depends on the asset: see its section).
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

/// The unit roundoff of f32, `2^-24`, as f64 (used by the error bounds).
const F32_UNIT_ROUNDOFF: f64 = 1.0 / 16_777_216.0;

/// Position bits of a [`VertexFormat::Packed64`] texel, all axes together.
pub const PACKED64_POSITION_BITS: u32 = 40;
/// Most position bits one axis of a [`VertexFormat::Packed64`] texel may get.
pub const PACKED64_MAX_AXIS_BITS: u32 = 20;
/// Bits per octahedral component of a [`VertexFormat::Packed64`] normal (12 + 12).
pub const PACKED64_NORMAL_BITS: u32 = 12;

impl PositionBounds {
    /// The smallest box holding every point: `min` is the per-axis minimum and `extent` the per-axis
    /// `max - min`, rounded up (by whole f32 ulps, at most a few) until `min + extent >= max` in f32,
    /// so that `denormalize([1.0; 3])` is never below the largest point.
    ///
    /// # Errors
    /// [`Error::ZeroCount`] if `points` is empty; [`Error::NotFinite`] if a coordinate is NaN or
    /// infinite, or an extent overflows f32.
    pub fn from_points<I: IntoIterator<Item = [f32; 3]>>(points: I) -> Result<Self> {
        let mut min = [f32::INFINITY; 3];
        let mut max = [f32::NEG_INFINITY; 3];
        let mut count = 0u64;
        for p in points {
            for a in 0..3 {
                if !p[a].is_finite() {
                    return Err(Error::NotFinite { what: "point coordinate" });
                }
                min[a] = min[a].min(p[a]);
                max[a] = max[a].max(p[a]);
            }
            count += 1;
        }
        if count == 0 {
            return Err(Error::ZeroCount { what: "point count" });
        }
        let mut extent = [0.0f32; 3];
        for a in 0..3 {
            let mut e = max[a] - min[a];
            // `max - min` rounds to nearest and may land below the true difference; step up until the
            // decode of n = 1 reaches the largest point. Terminates within a few steps (or at +inf).
            while e.is_finite() && min[a] + e < max[a] {
                e = e.next_up();
            }
            if !e.is_finite() {
                return Err(Error::NotFinite { what: "position bounds extent" });
            }
            extent[a] = e;
        }
        Ok(Self { min, extent })
    }

    /// Normalises a position (metres) into the box: `n = (p - min) / extent` per axis (sub, then div),
    /// `0` where the extent is `0`, clamped to `[0, 1]`. NaN maps to `0`. Never panics.
    #[inline]
    pub fn normalize(&self, p: [f32; 3]) -> [f32; 3] {
        let mut n = [0.0f32; 3];
        for a in 0..3 {
            let d = p[a] - self.min[a];
            let v = if self.extent[a] == 0.0 { 0.0 } else { d / self.extent[a] };
            n[a] = clamp_unit(v);
        }
        n
    }

    /// Decodes a normalised position: `min + n * extent` per axis (mul, then add), in metres.
    pub fn denormalize(&self, n: [f32; 3]) -> [f32; 3] {
        [
            self.min[0] + n[0] * self.extent[0],
            self.min[1] + n[1] * self.extent[1],
            self.min[2] + n[2] * self.extent[2],
        ]
    }

    /// Largest `|coordinate|` of the box per axis, `max(|min|, |min + extent|)` (metres), used by the
    /// rounding terms of the error bounds.
    fn max_abs(&self) -> [f64; 3] {
        std::array::from_fn(|a| {
            let lo = f64::from(self.min[a]);
            let hi = lo + f64::from(self.extent[a]);
            lo.abs().max(hi.abs())
        })
    }
}

/// `v` clamped to `[0, 1]`; NaN and `-0.0` map to `+0.0`.
#[inline]
fn clamp_unit(v: f32) -> f32 {
    if v > 0.0 { v.min(1.0) } else { 0.0 }
}

/// Allocates the 40 position bits of a [`VertexFormat::Packed64`] texel over the axes by extent
/// (metres): start at `[0, 0, 0]`; 40 times, give one bit to the axis with the largest
/// `extent[i] / 2^bits[i]` among axes with fewer than 20 bits (ties: lowest axis index). The result
/// always sums to 40 with each axis `<= 20`; a 1.65 x 2.19 x 1.35 m character gets `[13, 14, 13]`.
///
/// Non-positive and NaN extents count as `0` (they get bits only once the other axes are full);
/// `+inf` counts as larger than any finite extent. The comparison runs in f64, where division by a
/// power of two is exact for every f32 extent (in f32 it would be too, except for subnormal results).
pub fn allocate_position_bits(extent: [f32; 3]) -> [u32; 3] {
    let key = |e: f32| if e > 0.0 { f64::from(e) } else { 0.0 };
    let mut bits = [0u32; 3];
    for _ in 0..PACKED64_POSITION_BITS {
        let mut best: Option<(usize, f64)> = None;
        for (i, &b) in bits.iter().enumerate() {
            if b >= PACKED64_MAX_AXIS_BITS {
                continue;
            }
            let step = key(extent[i]) / f64::from(1u32 << b);
            // Strictly greater: ties keep the lowest axis.
            if best.is_none_or(|(_, s)| step > s) {
                best = Some((i, step));
            }
        }
        if let Some((i, _)) = best {
            bits[i] += 1;
        }
    }
    bits
}

/// Checks a [`VertexFormat::Packed64`] bit allocation: each axis `<= 20`, summing to 40.
///
/// # Errors
/// [`Error::OutOfRange`] otherwise.
pub fn validate_position_bits(bits: [u32; 3]) -> Result<()> {
    let valid = bits.iter().all(|&b| b <= PACKED64_MAX_AXIS_BITS)
        && bits.iter().sum::<u32>() == PACKED64_POSITION_BITS;
    if valid {
        Ok(())
    } else {
        Err(Error::OutOfRange {
            what: "Packed64 position bits",
            value: format!("{bits:?}"),
            expected: "each axis <= 20, summing to 40",
        })
    }
}

/// Quantises `n` (clamped to `[0, 1]`, NaN as `0`) to `bits` bits: `max_q = 2^bits - 1`,
/// `q = round(n * max_q)` (f32 mul, round half away from zero) clamped to `[0, max_q]`; `0` for
/// `bits == 0`. `bits` above 24 are treated as 24 (the largest `max_q` exact in f32).
///
/// Error of `dequantize_unorm(quantize_unorm(n, b), b)` against `n`: at most `0.5 / max_q` from the
/// rounding, plus `u` from the f32 product `n * max_q` and `u` from the decode's division (`u = 2^-24`).
#[inline]
pub fn quantize_unorm(n: f32, bits: u32) -> u32 {
    let bits = bits.min(24);
    if bits == 0 {
        return 0;
    }
    let max_q = ((1u32 << bits) - 1) as f32;
    // x in [0, max_q] (n in [0, 1], f32 multiplication is monotone).
    let x = clamp_unit(n) * max_q;
    // Round half away from zero, as `f32::round`, without its libm call (the baseline x86-64 target has
    // no rounding instruction, and this runs once per channel per texel): the truncation is exact
    // and so is `x - i` (both in [i, i + 1) with i < 2^24).
    let i = x as u32;
    let r = if x - i as f32 >= 0.5 { i + 1 } else { i };
    r.min(max_q as u32)
}

/// Decodes a `bits`-bit unorm: `f32(q) / f32(2^bits - 1)` (a division, as the shader does); `0` for
/// `bits == 0`. `q` should be `<= 2^bits - 1` (larger values decode above 1); `bits` above 24 are
/// treated as 24. Error: one f32 rounding, `<= 2^-24` for `q <= max_q`.
pub fn dequantize_unorm(q: u32, bits: u32) -> f32 {
    let bits = bits.min(24);
    if bits == 0 {
        return 0.0;
    }
    q as f32 / ((1u32 << bits) - 1) as f32
}

/// Mask of the low `bits` bits (`bits <= 63`).
const fn low_mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// Packs a [`VertexFormat::Packed64`] texel (`[w0, w1]` = the `.x`, `.y` words of an `Rg32Uint`).
///
/// `n_pos` is the normalised position (`[0, 1]` per axis; quantised with [`quantize_unorm`] to
/// `bits[i]` bits), `bits` a valid allocation (see [`validate_position_bits`]), `oct` the 12-bit
/// octahedral normal components `[u, v]` (see [`oct_encode`]). Layout:
/// `P = qx | qy << bx | qz << (bx + by)` (40 bits), `w0 = P & 0xFFFF_FFFF`,
/// `w1 = (P >> 32) | u << 8 | v << 20`; a field may straddle bit 32.
///
/// Never panics: with an invalid allocation each axis is capped at 20 bits and `P` is cut to 40 bits,
/// so the normal field is never overwritten (but the position is then meaningless). `oct` is masked to
/// 12 bits.
#[inline]
pub fn pack_texel(n_pos: [f32; 3], bits: [u32; 3], oct: [u32; 2]) -> [u32; 2] {
    let b = bits.map(|b| b.min(PACKED64_MAX_AXIS_BITS));
    let q = [
        u64::from(quantize_unorm(n_pos[0], b[0])),
        u64::from(quantize_unorm(n_pos[1], b[1])),
        u64::from(quantize_unorm(n_pos[2], b[2])),
    ];
    let p = (q[0] | q[1] << b[0] | q[2] << (b[0] + b[1])) & low_mask(PACKED64_POSITION_BITS);
    let u = oct[0] & 0xFFF;
    let v = oct[1] & 0xFFF;
    [(p & 0xFFFF_FFFF) as u32, (p >> 32) as u32 | u << 8 | v << 20]
}

/// Unpacks a [`VertexFormat::Packed64`] texel into its quantised position `[qx, qy, qz]` (each
/// `< 2^bits[i]`) and 12-bit octahedral normal `[u, v]`; the inverse of [`pack_texel`]'s bit layout.
/// Never panics (axes capped at 20 bits as in [`pack_texel`]).
pub fn unpack_texel(texel: [u32; 2], bits: [u32; 3]) -> ([u32; 3], [u32; 2]) {
    let b = bits.map(|b| b.min(PACKED64_MAX_AXIS_BITS));
    let p = u64::from(texel[0]) | u64::from(texel[1] & 0xFF) << 32;
    let field = |shift: u32, width: u32| ((p >> shift) & low_mask(width)) as u32;
    let q = [field(0, b[0]), field(b[0], b[1]), field(b[0] + b[1], b[2])];
    let oct = [(texel[1] >> 8) & 0xFFF, (texel[1] >> 20) & 0xFFF];
    (q, oct)
}

/// Encodes a normalised position and a normal (any length; zero or non-finite gives +Z) as one
/// [`VertexFormat::Packed64`] texel: [`pack_texel`] of [`oct_encode`]`(normal, 12)`.
/// Errors: see [`position_error_bound`] and [`normal_error_bound_degrees`].
pub fn encode_packed64(n_pos: [f32; 3], normal: [f32; 3], bits: [u32; 3]) -> [u32; 2] {
    pack_texel(n_pos, bits, oct_encode(normal, PACKED64_NORMAL_BITS))
}

/// Decodes a [`VertexFormat::Packed64`] texel to its normalised position (`[0, 1]` per axis,
/// [`dequantize_unorm`] per axis) and unit normal ([`oct_decode`] with 12 bits).
pub fn decode_packed64(texel: [u32; 2], bits: [u32; 3]) -> ([f32; 3], [f32; 3]) {
    let (q, oct) = unpack_texel(texel, bits);
    let b = bits.map(|b| b.min(PACKED64_MAX_AXIS_BITS));
    let n = [dequantize_unorm(q[0], b[0]), dequantize_unorm(q[1], b[1]), dequantize_unorm(q[2], b[2])];
    (n, oct_decode(oct, PACKED64_NORMAL_BITS))
}

mod normals;
#[cfg(test)]
mod tests;
mod texels;

pub use normals::*;
pub use texels::*;
