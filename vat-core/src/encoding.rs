//! Encodings of positions, normals and rotations, each with its error bound.
//!
//! Everything here mirrors the "Positions" and "Normals" formulas of the design (the WGSL shader and
//! [`crate::reference`] decode with the same f32 operations in the same order; no fused multiply-add).
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
    /// Every vertex format, in declaration order (Packed64 first).
    pub const ALL: [VertexFormat; 6] = [
        VertexFormat::Packed64,
        VertexFormat::Unorm16,
        VertexFormat::F16,
        VertexFormat::F32,
        VertexFormat::Unorm8,
        VertexFormat::Split8,
    ];

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

/// `1` if `v >= 0` (including `+0.0` and `-0.0`), else `-1`: the fold's `sgn`.
fn sgn(v: f32) -> f32 {
    if v >= 0.0 { 1.0 } else { -1.0 }
}

/// `v * (1 / sqrt(dot(v, v)))` with the dot summed left to right, as [`crate::reference`] and WGSL's
/// `normalize`; `+Z` when the squared length is not positive (zero or NaN).
fn normalize3(v: [f32; 3]) -> [f32; 3] {
    let d = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    if d > 0.0 {
        let inv = 1.0 / d.sqrt();
        [v[0] * inv, v[1] * inv, v[2] * inv]
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// Octahedral coordinates of `n` in f32, or `None` for a zero or non-finite `n`.
#[inline]
fn oct_fold(n: [f32; 3]) -> Option<[f32; 2]> {
    if !n.iter().all(|c| c.is_finite()) {
        return None;
    }
    let mut n = n;
    let mut s = n[0].abs() + n[1].abs() + n[2].abs();
    if s.is_infinite() {
        // Huge finite components: scale by an exact power of two; the direction is unchanged.
        n = n.map(|c| c * 0.25);
        s = n[0].abs() + n[1].abs() + n[2].abs();
    }
    if s.is_nan() || s <= 0.0 {
        return None;
    }
    let p = [n[0] / s, n[1] / s];
    if n[2] < 0.0 { Some([(1.0 - p[1].abs()) * sgn(p[0]), (1.0 - p[0].abs()) * sgn(p[1])]) } else { Some(p) }
}

/// Unquantised octahedral coordinates of a normal, each in `[-1, 1]` (the F16 and F32 formats store
/// these): `s = |x| + |y| + |z|`, `p = (x / s, y / s)`, folded when `z < 0` to
/// `((1 - |p.y|) sgn(p.x), (1 - |p.x|) sgn(p.y))` with `sgn(0) = 1`. `n` need not be unit length.
/// A zero or non-finite `n` gives `[0, 0]`, which decodes to exactly +Z.
///
/// Error: within `4u = 2^-22` per component of the exact coordinates (two roundings in `s`, one in
/// the division, one in the fold's subtraction); the decoded angle is bounded in
/// [`normal_error_bound_degrees`].
#[inline]
pub fn oct_encode_f32(n: [f32; 3]) -> [f32; 2] {
    oct_fold(n).unwrap_or([0.0, 0.0])
}

/// Decodes octahedral coordinates `[ox, oy]` (in `[-1, 1]`): `v = (ox, oy, 1 - |ox| - |oy|)`, and if
/// `v.z < 0`, `v.xy = ((1 - |oy|) sgn(ox), (1 - |ox|) sgn(oy))`; returns `normalize(v)` (unit
/// length within a few `2^-24`). Any finite input gives a unit vector (`v` is never zero);
/// a non-finite input gives +Z.
pub fn oct_decode_f32(o: [f32; 2]) -> [f32; 3] {
    let (ox, oy) = (o[0], o[1]);
    let mut v = [ox, oy, 1.0 - ox.abs() - oy.abs()];
    if v[2] < 0.0 {
        v[0] = (1.0 - oy.abs()) * sgn(ox);
        v[1] = (1.0 - ox.abs()) * sgn(oy);
    }
    normalize3(v)
}

/// Decodes quantised octahedral components `[u, v]` of `bits` bits each: `ox = f32(u) / f32(2^bits -
/// 1) * 2.0 - 1.0` (div, mul, sub), the same for `oy`, then [`oct_decode_f32`]. `bits` is clamped to
/// `1..=24`. Error: see [`normal_error_bound_degrees`].
pub fn oct_decode(q: [u32; 2], bits: u32) -> [f32; 3] {
    let max_q = ((1u32 << bits.clamp(1, 24)) - 1) as f32;
    let ox = q[0] as f32 / max_q * 2.0 - 1.0;
    let oy = q[1] as f32 / max_q * 2.0 - 1.0;
    oct_decode_f32([ox, oy])
}

/// Angle in radians between two vectors (any non-zero length), `atan2(|a x b|, a . b)` in f64 (exact to
/// about 1e-16 rad even for tiny angles, unlike `acos`).
fn angle_between(a: [f32; 3], b: [f64; 3]) -> f64 {
    let a = a.map(f64::from);
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let cross = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    cross.atan2(dot)
}

/// Encodes a normal as two `bits`-bit octahedral components `[u, v]` (8, 12 and 16 are used; `bits`
/// is clamped to `1..=24`) by nearest rounding: [`oct_encode_f32`], mapped to `e = o * 0.5 + 0.5`,
/// then [`quantize_unorm`] of each. `n` need not be unit length; a zero or non-finite `n` encodes
/// (almost exactly) +Z, never NaN, never a panic. This is what the baker uses by default: a few
/// nanoseconds per normal.
///
/// Worst-case angle (see [`normal_error_bound_degrees`]: `3 sqrt(2) / max_q` rad plus f32 rounding):
/// 0.9535 deg for 8 + 8, 0.05956 deg for 12 + 12, 0.003908 deg for 16 + 16. Measured maxima over
/// 2,000,000 seeded random unit normals each (test `octahedral_max_angular_error_report`): 8 + 8:
/// 0.9458 deg, 12 + 12: 0.05892 deg, 16 + 16: 0.003688 deg. [`oct_encode_precise`] cuts these by a
/// third at about 20 times the cost.
#[inline]
pub fn oct_encode(n: [f32; 3], bits: u32) -> [u32; 2] {
    let bits = bits.clamp(1, 24);
    oct_encode_f32(n).map(|c| quantize_unorm(c * 0.5 + 0.5, bits))
}

/// Encodes a normal as two `bits`-bit octahedral components `[u, v]` (8, 12 and 16 are used; `bits`
/// is clamped to `1..=24`). `n` need not be unit length; a zero or non-finite `n` is encoded as +Z
/// (never NaN, never a panic).
///
/// [`oct_encode_f32`], mapped to `e = o * 0.5 + 0.5` and scaled by `max_q = 2^bits - 1`; the nearest
/// rounding lies among the four floor/ceil combinations, and of those ("precise" refinement) the one
/// whose [`oct_decode`] has the smallest angle to `n` is kept (angles measured in f64; ties: the first of
/// (floor, floor), (ceil, floor), (floor, ceil), (ceil, ceil)).
///
/// Worst-case angle (see [`normal_error_bound_degrees`]; `3 sqrt(2) / max_q` rad plus f32 rounding):
/// 0.9535 deg for 8 + 8, 0.05956 deg for 12 + 12, 0.003908 deg for 16 + 16. Measured maxima over
/// 2,000,000 seeded random unit normals each (test `octahedral_max_angular_error_report`):
/// 8 + 8: 0.6303 deg, 12 + 12: 0.03934 deg, 16 + 16: 0.002464 deg. Plain nearest rounding measures
/// 0.9458, 0.05892 and 0.003688 deg on the same normals ([`oct_encode`]): the refinement cuts the worst
/// case by a third, at about 20 times the cost of nearest rounding.
pub fn oct_encode_precise(n: [f32; 3], bits: u32) -> [u32; 2] {
    let bits = bits.clamp(1, 24);
    let max_q_u = (1u32 << bits) - 1;
    let max_q = max_q_u as f32;
    let (o, target) = match oct_fold(n) {
        Some(o) => (o, n.map(f64::from)),
        None => ([0.0, 0.0], [0.0, 0.0, 1.0]),
    };
    let scaled = o.map(|c| (c * 0.5 + 0.5) * max_q);
    let lo = scaled.map(|x| x.floor().clamp(0.0, max_q) as u32);
    let hi = scaled.map(|x| x.ceil().clamp(0.0, max_q) as u32);
    let candidates = [[lo[0], lo[1]], [hi[0], lo[1]], [lo[0], hi[1]], [hi[0], hi[1]]];
    let mut best = candidates[0];
    let mut best_angle = angle_between(oct_decode(best, bits), target);
    for c in &candidates[1..] {
        let angle = angle_between(oct_decode(*c, bits), target);
        if angle < best_angle {
            best = *c;
            best_angle = angle;
        }
    }
    debug_assert!(best[0] <= max_q_u && best[1] <= max_q_u);
    best
}

/// Worst-case angle (radians) between a normal and its decode when each octahedral coordinate is
/// stored within `h` (octahedral units, the square `[-1, 1]^2`) of the f32 encode's value.
///
/// Derivation. The decode `D(o) = v(o) / |v(o)|` maps the square onto the unit sphere through the
/// octahedron `|x| + |y| + |z| = 1`; `D` is continuous (the fold meets the inner diamond on `z = 0`)
/// and piecewise smooth. On each face `v` is affine with `dv = (a, b, -(a + b))` up to signs and a
/// swap, so `|dv| <= sqrt(3) |(a, b)|`, and `|v| >= 1/sqrt(3)` (the face's centroid). Normalising
/// divides tangential motion by `|v|`, so `D` is Lipschitz with constant `sqrt(3) * sqrt(3) = 3`
/// (rad per unit of `o`; attained at a face centroid along the diagonal). A stored point within `h`
/// per component is within `sqrt(2) h` (the half-diagonal of a cell when `h` is the half-step), so
/// the angle is at most `3 sqrt(2) h`.
///
/// f32 rounding: the encode's coordinates are within `eta = 9u` of the exact ones (`4u` for
/// `oct_encode_f32`, then `e = o * 0.5 + 0.5` adds `u` in `e` = `2u` in `o`, and `e * max_q` another
/// `2u` in `o`; one more `u` covers second-order terms); the decode's `ox` errs by `<= 3u` (div, sub),
/// its `v` by `<= 2u` per component (two subtractions; angle `<= sqrt(3) sqrt(6) u`), and the final
/// scaling by `<= u` per component (angle `<= u`): `3 sqrt(2) 3u + 4.25u + u < 18u`, budgeted as `20u`.
fn oct_angle_bound_rad(h: f64) -> f64 {
    let u = F32_UNIT_ROUNDOFF;
    3.0 * std::f64::consts::SQRT_2 * (h + 9.0 * u) + 20.0 * u
}

/// Half-step (octahedral units) of `bits`-bit octahedral quantisation: the cell is `2 / max_q` wide.
fn oct_half_step(bits: u32) -> f64 {
    1.0 / f64::from((1u32 << bits) - 1)
}

/// Bits per octahedral component of a quantised normal format, `None` for the float formats.
const fn normal_oct_bits(format: VertexFormat) -> Option<u32> {
    match format {
        VertexFormat::Packed64 => Some(PACKED64_NORMAL_BITS),
        VertexFormat::Unorm16 | VertexFormat::Split8 => Some(16),
        VertexFormat::Unorm8 => Some(8),
        VertexFormat::F16 | VertexFormat::F32 => None,
    }
}

/// Bits per position axis of a format (`bits` for [`VertexFormat::Packed64`], capped at 20), `None`
/// for the float formats.
fn position_axis_bits(format: VertexFormat, bits: [u32; 3]) -> Option<[u32; 3]> {
    match format {
        VertexFormat::Packed64 => Some(bits.map(|b| b.min(PACKED64_MAX_AXIS_BITS))),
        VertexFormat::Unorm16 | VertexFormat::Split8 => Some([16; 3]),
        VertexFormat::Unorm8 => Some([8; 3]),
        VertexFormat::F16 | VertexFormat::F32 => None,
    }
}

/// Worst-case angle in degrees between a normal (any non-zero finite vector) and its decode through
/// `format`: `3 sqrt(2) (h + 9u) + 20u` rad (derived at `oct_angle_bound_rad` in the source: the
/// decode's Lipschitz constant 3 times the half-diagonal `sqrt(2) h`, plus f32 rounding), where `h` is
/// the per-component storage error in octahedral units:
///
/// - quantised (`Packed64` 12 + 12, `Unorm16`/`Split8` 16 + 16, `Unorm8` 8 + 8): `h = 1 / max_q`,
///   half the `2 / max_q` cell (the refinement keeps a corner no worse than the nearest one, which is
///   within half a cell per component);
/// - `F16`: `h = 2^-12`, binary16's half-spacing on `[0.5, 1]` (finer below);
/// - `F32`: `h = 0` (the encode's own f32 rounding is in the `9u` term).
///
/// Values: 0.9535 (8 + 8), 0.05956 (12 + 12), 0.003908 (16 + 16), 0.05955 (`F16`), 0.0002 (`F32`).
pub fn normal_error_bound_degrees(format: VertexFormat) -> f32 {
    let h = match normal_oct_bits(format) {
        Some(b) => oct_half_step(b),
        None if format == VertexFormat::F16 => 1.0 / 4096.0,
        None => 0.0,
    };
    round_up_f32(oct_angle_bound_rad(h).to_degrees())
}

/// `x` as the smallest f32 `>= x` (a bound must not shrink when it is stored as f32).
fn round_up_f32(x: f64) -> f32 {
    let y = x as f32;
    if f64::from(y) < x { y.next_up() } else { y }
}

/// Per-axis worst-case position error in metres of a round trip `p -> normalize -> encode -> decode ->
/// denormalize` through `format`, for any `p` inside `bounds` (as built by
/// [`PositionBounds::from_points`]); `bits` is used by [`VertexFormat::Packed64`] only.
///
/// Derivation, per axis with `L = extent`, `M = max(|min|, |min + L|)`, `u = 2^-24`:
/// - storage: `h * L` with `h = 0.5 / max_q` for quantised formats (`max_q = 2^b - 1`; `b = 0` decodes
///   to `min`, so `h = 1`), `2^-12` for `F16` (binary16's half-spacing on `[0.5, 1]`), `0` for `F32`;
/// - normalising: `p - min` and `/ L` round once each: `2u * L`; clamping a point that lies up to
///   `u * M` past `min + L` (the f32 sum `min + L` may round up past the exact one): `u * M`;
/// - quantising: the f32 product `n * max_q`: `u * L`; the decode's division `q / max_q`: `u * L`;
/// - denormalising: the product `n * L`: `u * L`; the sum `min + n L`: `u * M`;
/// - second-order terms (products of two `u`s): covered by one more `u * L`.
///
/// Total: `L * (h + 6u) + 2u * M`. For a 2.19 m axis at `min = 0` with 14 bits that is 0.0679 mm;
/// Unorm16 over the same axis 0.0178 mm; F16 0.536 mm; Unorm8 4.30 mm.
pub fn position_error_bound(format: VertexFormat, bits: [u32; 3], bounds: &PositionBounds) -> [f32; 3] {
    let u = F32_UNIT_ROUNDOFF;
    let m = bounds.max_abs();
    let axis_bits = position_axis_bits(format, bits);
    let mut out = [0.0f32; 3];
    for a in 0..3 {
        let h = match axis_bits {
            Some(b) if b[a] == 0 => 1.0,
            Some(b) => 0.5 / f64::from((1u32 << b[a]) - 1),
            None if format == VertexFormat::F16 => 1.0 / 4096.0,
            None => 0.0,
        };
        let l = f64::from(bounds.extent[a]);
        out[a] = round_up_f32(l * (h + 6.0 * u) + 2.0 * u * m[a]);
    }
    out
}

/// How octahedral normals are quantised by the texel encoders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum NormalRounding {
    /// Nearest rounding ([`oct_encode`]): fast; 12 + 12 bits err by at most 0.0596 deg.
    #[default]
    Nearest,
    /// Best of the four neighbouring codes ([`oct_encode_precise`]): a third smaller worst case, about
    /// 20 times slower.
    Precise,
}

impl NormalRounding {
    /// Quantises `n` to two `bits`-bit octahedral components this way.
    pub fn oct_encode(self, n: [f32; 3], bits: u32) -> [u32; 2] {
        match self {
            NormalRounding::Nearest => oct_encode(n, bits),
            NormalRounding::Precise => oct_encode_precise(n, bits),
        }
    }
}

/// One decoded texel of a vertex animation texture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodedTexel {
    /// Normalised position in the bake's box, `[0, 1]` per axis (decode with
    /// [`PositionBounds::denormalize`] after interpolating).
    pub position: [f32; 3],
    /// Unit normal (within f32 rounding).
    pub normal: [f32; 3],
}

/// Checks that `actual` textures were given for `format`.
fn check_texture_count(format: VertexFormat, actual: usize) -> Result<()> {
    let expected = format.texel_formats().len();
    if actual == expected {
        Ok(())
    } else {
        Err(Error::WrongTextureCount {
            expected: expected as u32,
            actual: u32::try_from(actual).unwrap_or(u32::MAX),
        })
    }
}

/// Appends one texel per texture (little-endian) for a vertex at one frame, in the layouts of
/// [`VertexFormat`]:
///
/// - `Packed64`: `Rg32Uint` `[w0, w1]` of [`pack_texel`] (needs a valid `bits` allocation);
/// - `Unorm16`: `Rgba16Uint` `(qx, qy, qz, 0)` with 16 bits per axis; `Rg16Uint` octahedral 16 + 16;
/// - `F16`: `Rgba16Float` `(nx, ny, nz, 0)`; `Rg16Float` [`oct_encode_f32`] coordinates;
/// - `F32`: `Rgba32Float` `(nx, ny, nz, 0)`; `Rg32Float` [`oct_encode_f32`] coordinates;
/// - `Unorm8`: `Rgba8Uint` `(qx, qy, qz, 0)` with 8 bits per axis; `Rg8Uint` octahedral 8 + 8;
/// - `Split8`: the 16-bit `q` per axis as `Rgba8Uint` high bytes `(qx >> 8, qy >> 8, qz >> 8, 0)`, then
///   `Rgba8Uint` low bytes, then `Rgba8Uint` octahedral 16 + 16 as `(u >> 8, u & 255, v >> 8, v & 255)`.
///
/// `n_pos` is the normalised position (clamped to `[0, 1]`, NaN as `0`, in every format); `normal` any
/// non-zero finite vector (zero or non-finite encodes +Z), quantised with `rounding` in the formats
/// with integer octahedral normals. Errors of the round trip:
/// [`position_error_bound`], [`normal_error_bound_degrees`].
///
/// # Errors
/// [`Error::WrongTextureCount`] unless `textures.len() == format.texel_formats().len()`;
/// [`Error::OutOfRange`] for `Packed64` with an invalid `bits` (see [`validate_position_bits`]).
/// Nothing is appended on error.
pub fn encode_vertex_texel(
    format: VertexFormat,
    bits: [u32; 3],
    n_pos: [f32; 3],
    normal: [f32; 3],
    rounding: NormalRounding,
    textures: &mut [Vec<u8>],
) -> Result<()> {
    check_texture_count(format, textures.len())?;
    let n = n_pos.map(clamp_unit);
    match format {
        VertexFormat::Packed64 => {
            validate_position_bits(bits)?;
            let t = pack_texel(n, bits, rounding.oct_encode(normal, PACKED64_NORMAL_BITS));
            textures[0].extend_from_slice(&t[0].to_le_bytes());
            textures[0].extend_from_slice(&t[1].to_le_bytes());
        }
        VertexFormat::Unorm16 => {
            let q = n.map(|c| quantize_unorm(c, 16) as u16);
            for c in [q[0], q[1], q[2], 0] {
                textures[0].extend_from_slice(&c.to_le_bytes());
            }
            let o = rounding.oct_encode(normal, 16);
            for c in o {
                textures[1].extend_from_slice(&(c as u16).to_le_bytes());
            }
        }
        VertexFormat::F16 => {
            for c in [n[0], n[1], n[2], 0.0] {
                textures[0].extend_from_slice(&f32_to_f16_bits(c).to_le_bytes());
            }
            for c in oct_encode_f32(normal) {
                textures[1].extend_from_slice(&f32_to_f16_bits(c).to_le_bytes());
            }
        }
        VertexFormat::F32 => {
            for c in [n[0], n[1], n[2], 0.0] {
                textures[0].extend_from_slice(&c.to_le_bytes());
            }
            for c in oct_encode_f32(normal) {
                textures[1].extend_from_slice(&c.to_le_bytes());
            }
        }
        VertexFormat::Unorm8 => {
            let q = n.map(|c| quantize_unorm(c, 8) as u8);
            textures[0].extend_from_slice(&[q[0], q[1], q[2], 0]);
            let o = rounding.oct_encode(normal, 8);
            textures[1].extend_from_slice(&[o[0] as u8, o[1] as u8]);
        }
        VertexFormat::Split8 => {
            let q = n.map(|c| quantize_unorm(c, 16));
            textures[0].extend_from_slice(&[(q[0] >> 8) as u8, (q[1] >> 8) as u8, (q[2] >> 8) as u8, 0]);
            textures[1].extend_from_slice(&[q[0] as u8, q[1] as u8, q[2] as u8, 0]);
            let o = rounding.oct_encode(normal, 16);
            textures[2].extend_from_slice(&[(o[0] >> 8) as u8, o[0] as u8, (o[1] >> 8) as u8, o[1] as u8]);
        }
    }
    Ok(())
}

/// Reads a little-endian u16 at byte `i`.
fn le_u16(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// Reads a little-endian u32 at byte `i`.
fn le_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Decodes texel `texel_index` (`frame * vertex_count + vertex`, see [`crate::layout`]) of a vertex
/// animation texture: one byte slice per texture of `format` (layouts as in [`encode_vertex_texel`]),
/// with the f32 formulas of the shader (unorm: `f32(q) / f32(max_q)`; Split8: `q = hi * 256 + lo`, then
/// `/ 65535`; F16: the binary16 value as f32; normals: [`oct_decode`] or [`oct_decode_f32`]).
/// `bits` is used by [`VertexFormat::Packed64`] only (capped at 20 per axis, never a panic).
///
/// # Errors
/// [`Error::WrongTextureCount`] unless `textures.len() == format.texel_formats().len()`;
/// [`Error::IndexOutOfRange`] (what = "texel index", count = texels in the shortest texture) if a
/// texture is too short to hold the texel.
pub fn decode_vertex_texel(
    format: VertexFormat,
    bits: [u32; 3],
    textures: &[&[u8]],
    texel_index: u64,
) -> Result<DecodedTexel> {
    let mut out = None;
    decode_vertex_texels(format, bits, textures, texel_index..texel_index.saturating_add(1), |_, t| {
        out = Some(t)
    })?;
    out.ok_or(Error::IndexOutOfRange { what: "texel index", index: texel_index, count: 0 })
}

/// [`decode_vertex_texel`] of every texel of `range`, in order: `each(texel_index, decoded)`. The
/// same decode, bit for bit, with the textures checked once for the whole range instead of once
/// per texel (a frame of a vertex animation is a contiguous range: `frame * vertex_count ..`).
///
/// # Errors
/// As [`decode_vertex_texel`], for the last texel of the range (nothing is decoded then).
pub fn decode_vertex_texels(
    format: VertexFormat,
    bits: [u32; 3],
    textures: &[&[u8]],
    range: std::ops::Range<u64>,
    mut each: impl FnMut(u64, DecodedTexel),
) -> Result<()> {
    check_texture_count(format, textures.len())?;
    let mut sizes = [0usize; 3];
    for (k, (tex, texel_format)) in textures.iter().zip(format.texel_formats()).enumerate() {
        let size = u64::from(texel_format.bytes_per_texel());
        let count = tex.len() as u64 / size;
        if range.end > count && !range.is_empty() {
            let shortest = textures
                .iter()
                .zip(format.texel_formats())
                .map(|(t, f)| t.len() as u64 / u64::from(f.bytes_per_texel()))
                .min()
                .unwrap_or(0);
            return Err(Error::IndexOutOfRange {
                what: "texel index",
                index: range.end - 1,
                count: shortest,
            });
        }
        sizes[k] = size as usize;
    }
    for texel_index in range {
        // In bounds of every slice (checked above), so the byte offsets fit in usize.
        let offsets = sizes.map(|size| texel_index as usize * size);
        each(texel_index, decode_texel_at(format, bits, textures, offsets));
    }
    Ok(())
}

/// One texel at byte `offsets` of each texture (in bounds).
#[inline(always)]
fn decode_texel_at(
    format: VertexFormat,
    bits: [u32; 3],
    textures: &[&[u8]],
    offsets: [usize; 3],
) -> DecodedTexel {
    match format {
        VertexFormat::Packed64 => {
            let (t, i) = (textures[0], offsets[0]);
            let (position, normal) = decode_packed64([le_u32(t, i), le_u32(t, i + 4)], bits);
            DecodedTexel { position, normal }
        }
        VertexFormat::Unorm16 => {
            let (t, i) = (textures[0], offsets[0]);
            let position = [0, 1, 2].map(|a| dequantize_unorm(u32::from(le_u16(t, i + 2 * a)), 16));
            let (t, i) = (textures[1], offsets[1]);
            let normal = oct_decode([u32::from(le_u16(t, i)), u32::from(le_u16(t, i + 2))], 16);
            DecodedTexel { position, normal }
        }
        VertexFormat::F16 => {
            let (t, i) = (textures[0], offsets[0]);
            let position = [0, 1, 2].map(|a| f16_bits_to_f32(le_u16(t, i + 2 * a)));
            let (t, i) = (textures[1], offsets[1]);
            let normal = oct_decode_f32([f16_bits_to_f32(le_u16(t, i)), f16_bits_to_f32(le_u16(t, i + 2))]);
            DecodedTexel { position, normal }
        }
        VertexFormat::F32 => {
            let (t, i) = (textures[0], offsets[0]);
            let position = [0, 1, 2].map(|a| f32::from_bits(le_u32(t, i + 4 * a)));
            let (t, i) = (textures[1], offsets[1]);
            let normal = oct_decode_f32([f32::from_bits(le_u32(t, i)), f32::from_bits(le_u32(t, i + 4))]);
            DecodedTexel { position, normal }
        }
        VertexFormat::Unorm8 => {
            let (t, i) = (textures[0], offsets[0]);
            let position = [0, 1, 2].map(|a| dequantize_unorm(u32::from(t[i + a]), 8));
            let (t, i) = (textures[1], offsets[1]);
            let normal = oct_decode([u32::from(t[i]), u32::from(t[i + 1])], 8);
            DecodedTexel { position, normal }
        }
        VertexFormat::Split8 => {
            let (hi, lo) = (&textures[0][offsets[0]..], &textures[1][offsets[1]..]);
            let position = [0, 1, 2].map(|a| dequantize_unorm(u32::from(hi[a]) * 256 + u32::from(lo[a]), 16));
            let t = &textures[2][offsets[2]..];
            let u = u32::from(t[0]) * 256 + u32::from(t[1]);
            let v = u32::from(t[2]) * 256 + u32::from(t[3]);
            DecodedTexel { position, normal: oct_decode([u, v], 16) }
        }
    }
}

/// Flips the sign of quaternions (`[x, y, z, w]`) along a track so that every consecutive pair has a
/// dot product `>= 0` (f32, summed left to right): `q` and `-q` are the same rotation, and linear or
/// cubic interpolation between neighbours then takes the short way round. The first quaternion is kept;
/// each later one is negated when its dot with the (possibly already flipped) previous one is negative.
/// Negation is exact, so the dot changes sign exactly. A NaN dot leaves the quaternion as is.
///
/// Not for tangent-frame quaternions from [`tangent_frame_to_quat`]: their sign carries the bitangent
/// sign and must not be flipped.
pub fn make_hemisphere_continuous(track: &mut [[f32; 4]]) {
    for i in 1..track.len() {
        let (a, b) = (track[i - 1], track[i]);
        let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
        if dot < 0.0 {
            track[i] = b.map(|c| -c);
        }
    }
}

/// Smallest `|w|` of a tangent-frame quaternion: `2^-14`, binary16's smallest normal number. Every f32
/// `>= 2^-14` in magnitude rounds to a binary16 of at least `2^-14` with the same sign, and a normal
/// binary16 survives GPUs that flush subnormals to zero, so the sign of `w` (the bitangent sign)
/// survives binary16 storage. Forcing `|w| >= 2^-14` rotates the frame by at most `2 * 2^-14` rad
/// (0.007 deg).
pub const TANGENT_QUAT_MIN_W: f32 = 1.0 / 16384.0;

/// f64 3-vector helpers for the tangent frame encode.
fn dot3(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
fn normalized3(a: [f64; 3]) -> Option<[f64; 3]> {
    let l = dot3(a, a).sqrt();
    (l > 0.0 && l.is_finite()).then(|| a.map(|c| c / l))
}

/// Encodes a tangent frame (glTF convention: `bitangent = cross(normal, tangent.xyz) * tangent.w`) as a
/// unit quaternion `[x, y, z, w]` whose rotation maps +Z to the normal and +X to the tangent, with the
/// bitangent sign in the sign of `w`: `w >= 2^-14` ([`TANGENT_QUAT_MIN_W`]) for `tangent.w >= 0`,
/// `w <= -2^-14` for `tangent.w < 0` (NaN counts as `+1`).
///
/// The frame is orthonormalised first (normal normalised; tangent made perpendicular by Gram-Schmidt).
/// Fallbacks, never NaN: a zero or non-finite normal becomes +Z; a tangent that is zero, non-finite or
/// parallel to the normal becomes a perpendicular built from the coordinate axis least aligned with the
/// normal. Computed in f64 (Shepperd's method) and rounded to f32 once (`<= 2^-24` per component);
/// raising `|w|` to `2^-14` moves the rotation by at most `2 * 2^-14` rad.
pub fn tangent_frame_to_quat(normal: [f32; 3], tangent: [f32; 4]) -> [f32; 4] {
    let n = normalized3(normal.map(f64::from)).unwrap_or([0.0, 0.0, 1.0]);
    let t_in = [tangent[0], tangent[1], tangent[2]].map(f64::from);
    let gram_schmidt = |t: [f64; 3]| {
        let d = dot3(n, t);
        [t[0] - n[0] * d, t[1] - n[1] * d, t[2] - n[2] * d]
    };
    let t_len = dot3(t_in, t_in).sqrt();
    let t_perp = gram_schmidt(t_in);
    // A tangent within ~1e-6 rad of the normal has no usable perpendicular part.
    let t = if t_len.is_finite() && dot3(t_perp, t_perp).sqrt() > 1e-6 * t_len {
        normalized3(t_perp)
    } else {
        None
    };
    let t = t.unwrap_or_else(|| {
        let abs = n.map(f64::abs);
        let axis = if abs[0] <= abs[1] && abs[0] <= abs[2] {
            [1.0, 0.0, 0.0]
        } else if abs[1] <= abs[2] {
            [0.0, 1.0, 0.0]
        } else {
            [0.0, 0.0, 1.0]
        };
        // `axis` is at least ~55 deg from `n`, so this is well conditioned and non-zero.
        normalized3(gram_schmidt(axis)).unwrap_or([1.0, 0.0, 0.0])
    });
    let b = cross3(n, t);
    // Rotation matrix with columns (t, b, n), m[row][col].
    let m = [[t[0], b[0], n[0]], [t[1], b[1], n[1]], [t[2], b[2], n[2]]];
    let trace = m[0][0] + m[1][1] + m[2][2];
    let mut q = if trace > 0.0 {
        let s = (trace + 1.0).sqrt() * 2.0;
        [(m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s]
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        let s = (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt() * 2.0;
        [0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s]
    } else if m[1][1] > m[2][2] {
        let s = (1.0 + m[1][1] - m[0][0] - m[2][2]).sqrt() * 2.0;
        [(m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s]
    } else {
        let s = (1.0 + m[2][2] - m[0][0] - m[1][1]).sqrt() * 2.0;
        [(m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s]
    };
    let len = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    q = q.map(|c| c / len);
    if q[3] < 0.0 {
        q = q.map(|c| -c);
    }
    let min_w = f64::from(TANGENT_QUAT_MIN_W);
    if q[3] < min_w {
        // Keep the axis, raise w to the minimum and renormalise the vector part (|xyz| ~ 1 here).
        let xyz_len = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt();
        let k = (1.0 - min_w * min_w).sqrt() / xyz_len;
        q = [q[0] * k, q[1] * k, q[2] * k, min_w];
    }
    if tangent[3] < 0.0 {
        q = q.map(|c| -c);
    }
    q.map(|c| c as f32)
}

/// Decodes a tangent-frame quaternion `[x, y, z, w]` (any non-zero length, e.g. interpolated or read
/// from binary16) into a unit normal and a tangent `[tx, ty, tz, sign]`, `sign = -1` if `w < 0` else
/// `+1`. In f32, in this order (for the shader to mirror): `q = q * (1 / sqrt(((x x + y y) + z z) +
/// w w))`; `normal = (2 (x z + w y), 2 (y z - w x), 1 - 2 (x x + y y))` (the rotation's third column);
/// `tangent = (1 - 2 (y y + z z), 2 (x y + w z), 2 (x z - w y))` (its first column). Unit length within
/// about `2^-20`. A zero or non-finite `q` gives the identity frame (+Z, +X, sign `+1`).
///
/// Error through binary16 storage of `q`: each component moves by `<= 2^-12`, so `q` by
/// `<= 2 * 2^-12 = 2^-11` and the rotation by `<= 2 asin(2^-11)` (twice the angle in quaternion space),
/// plus [`TANGENT_QUAT_MIN_W`]'s `2 * 2^-14` and f32 rounding: about 0.063 deg in all.
pub fn quat_to_tangent_frame(q: [f32; 4]) -> ([f32; 3], [f32; 4]) {
    let sign = if q[3] < 0.0 { -1.0 } else { 1.0 };
    let d = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    if !(d > 0.0 && d.is_finite()) {
        return ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]);
    }
    let inv = 1.0 / d.sqrt();
    let [x, y, z, w] = q.map(|c| c * inv);
    let normal = [2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)];
    let tangent = [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y), sign];
    (normal, tangent)
}

/// IEEE 754 binary16 bits of `x`, rounded to nearest, ties to even (via the `half` crate): values of
/// magnitude `>= 65520` become infinity, below `2^-25` zero; NaN stays NaN (sign kept, quiet bit set).
pub fn f32_to_f16_bits(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// The f32 value of binary16 bits (exact: every binary16 value, subnormals included, is an f32).
pub fn f16_bits_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

/// The default format's encoder, four vertices at a time: [`VertexFormat::Packed64`] texels with
/// nearest octahedral rounding, bit for bit [`pack_texel`] of [`PositionBounds::normalize`] and
/// [`oct_encode`] per vertex (what [`encode_vertex_texel`] gives with [`NormalRounding::Nearest`]).
/// It runs the same f32 operations in the same order, one vertex per lane of a SIMD vector;
/// normals that `oct_encode` treats specially (a non-finite component, or a sum of magnitudes that
/// is zero or not finite) are encoded one by one with it. [`encode_vertex_texels`] uses it; a baker
/// whose data already sits lane by lane (structure of arrays) can call it directly.
#[derive(Debug, Clone)]
pub struct Packed64Encoder {
    min: [glam::Vec4; 3],
    extent: [glam::Vec4; 3],
    zero_extent: [bool; 3],
    max_q: [glam::Vec4; 3],
    bits: [u32; 3],
}

impl Packed64Encoder {
    /// An encoder into `bounds` with the position bit allocation `bits`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for an invalid `bits` (see [`validate_position_bits`]).
    pub fn new(bounds: &PositionBounds, bits: [u32; 3]) -> Result<Self> {
        validate_position_bits(bits)?;
        Ok(Self {
            min: bounds.min.map(glam::Vec4::splat),
            extent: bounds.extent.map(glam::Vec4::splat),
            zero_extent: bounds.extent.map(|e| e == 0.0),
            max_q: bits.map(|b| glam::Vec4::splat(((1u32 << b) - 1) as f32)),
            bits,
        })
    }

    /// [`quantize_unorm`] of each lane with `max_q = 2^bits - 1`, `bits <= 20`.
    #[inline(always)]
    fn quantize(n: glam::Vec4, max_q: glam::Vec4) -> [u32; 4] {
        use glam::Vec4;
        const TWO_POW_23: f32 = 8_388_608.0;
        let magic = Vec4::splat(TWO_POW_23);
        // `clamp_unit` (NaN, zeros and negatives -> +0), then x in [0, max_q] as in `quantize_unorm`.
        let x = Vec4::select(n.cmpgt(Vec4::ZERO), n.min(Vec4::ONE), Vec4::ZERO) * max_q;
        // x + 2^23 (in [2^23, 2^24), where the spacing is 1) is x rounded to the nearest integer t,
        // ties to even, plus 2^23; t and x - t are exact. A tie rounded down (x - t = 0.5) moves up:
        // round half away from zero, `quantize_unorm`'s `i + (x - i >= 0.5)`. The result is
        // <= max_q (an integer >= x), and sits in the low 23 bits of the significand.
        let biased = x + magic;
        let t = biased - magic;
        let biased = biased + Vec4::select((x - t).cmpeq(Vec4::splat(0.5)), Vec4::ONE, Vec4::ZERO);
        let r = biased.to_array();
        let m = TWO_POW_23.to_bits();
        [r[0].to_bits() - m, r[1].to_bits() - m, r[2].to_bits() - m, r[3].to_bits() - m]
    }

    /// Normalised, quantised axis `a` of four positions.
    #[inline(always)]
    fn position_axis(&self, p: glam::Vec4, a: usize) -> [u32; 4] {
        let n = if self.zero_extent[a] { glam::Vec4::ZERO } else { (p - self.min[a]) / self.extent[a] };
        Self::quantize(n, self.max_q[a])
    }

    /// The texels (`[w0, w1]`, as [`pack_texel`]) of four vertices given lane by lane:
    /// `positions[axis][lane]` (object space, metres) and `normals[axis][lane]` (any length).
    #[inline]
    pub fn encode4(&self, positions: [[f32; 4]; 3], normals: [[f32; 4]; 3]) -> [[u32; 2]; 4] {
        use glam::Vec4;
        let qx = self.position_axis(Vec4::from_array(positions[0]), 0);
        let qy = self.position_axis(Vec4::from_array(positions[1]), 1);
        let qz = self.position_axis(Vec4::from_array(positions[2]), 2);
        // Normals: oct_fold, then e = o * 0.5 + 0.5 quantised to 12 bits.
        let (nx, ny, nz) =
            (Vec4::from_array(normals[0]), Vec4::from_array(normals[1]), Vec4::from_array(normals[2]));
        let s = nx.abs() + ny.abs() + nz.abs();
        // s is finite exactly when every component is and their sum does not overflow (NaN fails
        // both comparisons): the lanes `oct_fold` encodes directly.
        let special = !(s.cmplt(Vec4::INFINITY) & s.cmpgt(Vec4::ZERO));
        let (px, py) = (nx / s, ny / s);
        let sgn_x = Vec4::select(px.cmpge(Vec4::ZERO), Vec4::ONE, Vec4::NEG_ONE);
        let sgn_y = Vec4::select(py.cmpge(Vec4::ZERO), Vec4::ONE, Vec4::NEG_ONE);
        let fold = nz.cmplt(Vec4::ZERO);
        let ox = Vec4::select(fold, (Vec4::ONE - py.abs()) * sgn_x, px);
        let oy = Vec4::select(fold, (Vec4::ONE - px.abs()) * sgn_y, py);
        let max_q = Vec4::splat(((1u32 << PACKED64_NORMAL_BITS) - 1) as f32);
        let half = Vec4::splat(0.5);
        let u = Self::quantize(ox * half + half, max_q);
        let v = Self::quantize(oy * half + half, max_q);
        let special = special.bitmask();
        let (shift_y, shift_z) = (self.bits[0], self.bits[0] + self.bits[1]);
        let mut out = [[0u32; 2]; 4];
        for (l, texel) in out.iter_mut().enumerate() {
            let oct = if special & (1 << l) != 0 {
                oct_encode([normals[0][l], normals[1][l], normals[2][l]], PACKED64_NORMAL_BITS)
            } else {
                [u[l], v[l]]
            };
            let pos = (u64::from(qx[l]) | u64::from(qy[l]) << shift_y | u64::from(qz[l]) << shift_z)
                & low_mask(PACKED64_POSITION_BITS);
            *texel = [
                (pos & 0xFFFF_FFFF) as u32,
                (pos >> 32) as u32 | (oct[0] & 0xFFF) << 8 | (oct[1] & 0xFFF) << 20,
            ];
        }
        out
    }
}

/// Encodes a whole vertex animation texture: `positions[t]` and `normals[t]` of texel
/// `t = frame * vertex_count + vertex` (frame-major, object space, metres) for every texel of `layout`.
/// Returns one byte vector per texture of `format`, each `layout.byte_len(bytes_per_texel)` long (the
/// unused texels of the last row are zero).
///
/// `bits` is the Packed64 allocation (see [`allocate_position_bits`]); other formats ignore it. Normals
/// are quantised with `rounding`.
///
/// # Errors
/// [`Error::OutOfRange`] if `positions` or `normals` does not hold exactly `layout.texel_count()`
/// entries, or for an invalid Packed64 `bits`.
pub fn encode_vertex_texture(
    layout: &crate::layout::VertexTextureLayout,
    format: VertexFormat,
    bounds: &PositionBounds,
    bits: [u32; 3],
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    rounding: NormalRounding,
) -> Result<Vec<Vec<u8>>> {
    let texels = layout.texel_count();
    for (what, len) in [("position count", positions.len()), ("normal count", normals.len())] {
        if len as u64 != texels {
            return Err(Error::OutOfRange {
                what,
                value: len.to_string(),
                expected: "vertex_count * frame_count of the layout",
            });
        }
    }
    let mut textures: Vec<Vec<u8>> = format
        .texel_formats()
        .iter()
        .map(|f| Vec::with_capacity(usize::try_from(layout.byte_len(f.bytes_per_texel())).unwrap_or(0)))
        .collect();
    encode_vertex_texels(format, bits, bounds, positions, normals, rounding, &mut textures)?;
    for (tex, f) in textures.iter_mut().zip(format.texel_formats()) {
        let full = usize::try_from(layout.byte_len(f.bytes_per_texel())).unwrap_or(tex.len());
        tex.resize(full.max(tex.len()), 0);
    }
    Ok(textures)
}

/// Encodes a run of texels (`positions[i]`, `normals[i]`, object space, metres), appending one texel
/// per texture of `format` for each: the bytes of [`encode_vertex_texel`] of
/// [`PositionBounds::normalize`] for every pair, in order. Encoding a texture in runs (e.g. in
/// parallel, then concatenating) gives the same bytes as [`encode_vertex_texture`].
///
/// # Errors
/// [`Error::WrongTextureCount`] unless `textures.len() == format.texel_formats().len()`;
/// [`Error::OutOfRange`] if the slices differ in length or for an invalid Packed64 `bits`. Nothing is
/// appended on error.
pub fn encode_vertex_texels(
    format: VertexFormat,
    bits: [u32; 3],
    bounds: &PositionBounds,
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    rounding: NormalRounding,
    textures: &mut [Vec<u8>],
) -> Result<()> {
    check_texture_count(format, textures.len())?;
    if positions.len() != normals.len() {
        return Err(Error::OutOfRange {
            what: "normal count",
            value: normals.len().to_string(),
            expected: "the position count",
        });
    }
    if format == VertexFormat::Packed64 {
        // The default format's hot loop: one validation, one reservation, then four texels at a time
        // for nearest rounding ([`Packed64Encoder`]), one at a time otherwise and for the tail.
        validate_position_bits(bits)?;
        let out = &mut textures[0];
        out.reserve(positions.len() * 8);
        let scalar = |p: &[f32; 3], n: &[f32; 3]| {
            pack_texel(bounds.normalize(*p), bits, rounding.oct_encode(*n, PACKED64_NORMAL_BITS))
        };
        let mut done = 0;
        if rounding == NormalRounding::Nearest {
            let x4 = Packed64Encoder::new(bounds, bits)?;
            let lanes = |v: &[[f32; 3]]| {
                [
                    [v[0][0], v[1][0], v[2][0], v[3][0]],
                    [v[0][1], v[1][1], v[2][1], v[3][1]],
                    [v[0][2], v[1][2], v[2][2], v[3][2]],
                ]
            };
            for (p, n) in positions.chunks_exact(4).zip(normals.chunks_exact(4)) {
                let mut bytes = [0u8; 32];
                for (chunk, t) in bytes.chunks_exact_mut(8).zip(x4.encode4(lanes(p), lanes(n))) {
                    chunk[..4].copy_from_slice(&t[0].to_le_bytes());
                    chunk[4..].copy_from_slice(&t[1].to_le_bytes());
                }
                out.extend_from_slice(&bytes);
            }
            done = positions.len() / 4 * 4;
        }
        for (p, n) in positions[done..].iter().zip(&normals[done..]) {
            let t = scalar(p, n);
            out.extend_from_slice(&t[0].to_le_bytes());
            out.extend_from_slice(&t[1].to_le_bytes());
        }
        return Ok(());
    }
    for (p, n) in positions.iter().zip(normals) {
        encode_vertex_texel(format, bits, bounds.normalize(*p), *n, rounding, textures)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn all_lists_every_vertex_format_once() {
        // A new variant fails to compile here until it has a position in `ALL`.
        let position = |f: VertexFormat| match f {
            VertexFormat::Packed64 => 0,
            VertexFormat::Unorm16 => 1,
            VertexFormat::F16 => 2,
            VertexFormat::F32 => 3,
            VertexFormat::Unorm8 => 4,
            VertexFormat::Split8 => 5,
        };
        for (i, f) in VertexFormat::ALL.iter().enumerate() {
            assert_eq!(position(*f), i, "{f:?}");
        }
    }

    use super::*;
    use proptest::prelude::*;

    const ALL_FORMATS: [VertexFormat; 6] = VertexFormat::ALL;

    /// xorshift64* (Vigna): a small deterministic generator for the measurement test.
    struct XorShift64Star(u64);

    impl XorShift64Star {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Uniform in [0, 1) with 53 random bits.
        fn next_f64(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A uniformly distributed unit vector from two uniforms in [0, 1) (Archimedes: z uniform).
    fn unit_from(a: f64, b: f64) -> [f32; 3] {
        let z = 2.0 * a - 1.0;
        let r = (1.0 - z * z).max(0.0).sqrt();
        let phi = std::f64::consts::TAU * b;
        [(r * phi.cos()) as f32, (r * phi.sin()) as f32, z as f32]
    }

    fn angle_deg(decoded: [f32; 3], n: [f32; 3]) -> f64 {
        angle_between(decoded, n.map(f64::from)).to_degrees()
    }

    /// The analytic bound of `bits`-bit octahedral normals, degrees.
    fn oct_bound_deg(bits: u32) -> f64 {
        oct_angle_bound_rad(oct_half_step(bits)).to_degrees()
    }

    fn unit_normal() -> impl Strategy<Value = [f32; 3]> {
        prop_oneof![
            9 => (0.0f64..1.0, 0.0f64..1.0).prop_map(|(a, b)| unit_from(a, b)),
            // Axes, fold edges and signed zeros, where the octahedral map has its seams.
            1 => prop::sample::select(vec![
                [0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0],
                [-0.0, -0.0, -1.0], [0.6, -0.8, 0.0], [-0.0, 0.6, -0.8], [0.577, 0.577, -0.577],
                [0.577, 0.577, 0.577],
            ]),
        ]
    }

    /// A box (min in [-100, 100] m, extents in [0, 50] m with exact zeros sometimes) and points in it.
    fn box_and_points() -> impl Strategy<Value = Vec<[f32; 3]>> {
        let extent = prop_oneof![1 => Just(0.0f32), 9 => 1e-3f32..50.0];
        (prop::array::uniform3(-100.0f32..100.0), prop::array::uniform3(extent)).prop_flat_map(
            |(min, extent)| {
                prop::collection::vec(prop::array::uniform3(0.0f32..=1.0), 1..16).prop_map(move |ts| {
                    // p = min + t * extent (f32) stays in [min, fl(min + extent)]: rounding is monotone.
                    ts.iter().map(|t| [0, 1, 2].map(|a| min[a] + t[a] * extent[a])).collect()
                })
            },
        )
    }

    /// Round trip through one texel; both roundings are exercised (they share every bound).
    fn encode_decode(format: VertexFormat, bits: [u32; 3], n: [f32; 3], normal: [f32; 3]) -> DecodedTexel {
        let precise = encode_decode_with(format, bits, n, normal, NormalRounding::Precise);
        let nearest = encode_decode_with(format, bits, n, normal, NormalRounding::Nearest);
        // Positions do not depend on the normal rounding.
        assert_eq!(precise.position, nearest.position);
        nearest
    }

    fn encode_decode_with(
        format: VertexFormat,
        bits: [u32; 3],
        n: [f32; 3],
        normal: [f32; 3],
        rounding: NormalRounding,
    ) -> DecodedTexel {
        let mut textures = vec![Vec::new(); format.texel_formats().len()];
        encode_vertex_texel(format, bits, n, normal, rounding, &mut textures).unwrap();
        for (t, f) in textures.iter().zip(format.texel_formats()) {
            assert_eq!(t.len(), f.bytes_per_texel() as usize);
        }
        let slices: Vec<&[u8]> = textures.iter().map(|t| t.as_slice()).collect();
        decode_vertex_texel(format, bits, &slices, 0).unwrap()
    }

    #[test]
    fn bounds_from_points_cover_every_point_and_reject_bad_input() {
        let b = PositionBounds::from_points([[0.1, -1.0, 2.0], [0.3, 1.19, 2.0], [-0.2, 0.0, 2.0]]).unwrap();
        assert_eq!(b.min, [-0.2, -1.0, 2.0]);
        assert_eq!(b.extent[2], 0.0);
        // The decode of n = 1 reaches the largest point even where max - min rounded down.
        for a in 0..3 {
            assert!(b.denormalize([1.0; 3])[a] >= [0.3, 1.19, 2.0][a]);
        }
        assert!((b.extent[0] - 0.5).abs() <= 2.0 * f32::EPSILON);
        assert_eq!(
            PositionBounds::from_points(std::iter::empty()),
            Err(Error::ZeroCount { what: "point count" })
        );
        assert!(matches!(PositionBounds::from_points([[0.0, f32::NAN, 0.0]]), Err(Error::NotFinite { .. })));
        assert!(matches!(
            PositionBounds::from_points([[f32::INFINITY, 0.0, 0.0]]),
            Err(Error::NotFinite { .. })
        ));
        // A finite box too wide for f32.
        assert!(matches!(
            PositionBounds::from_points([[-3e38, 0.0, 0.0], [3e38, 0.0, 0.0]]),
            Err(Error::NotFinite { what: "position bounds extent" })
        ));
    }

    /// Texel by texel through [`encode_vertex_texel`], the definition [`encode_vertex_texels`] follows.
    fn encode_one_by_one(
        format: VertexFormat,
        bits: [u32; 3],
        bounds: &PositionBounds,
        positions: &[[f32; 3]],
        normals: &[[f32; 3]],
        rounding: NormalRounding,
    ) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new(); format.texel_formats().len()];
        for (p, n) in positions.iter().zip(normals) {
            encode_vertex_texel(format, bits, bounds.normalize(*p), *n, rounding, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn packed64_four_at_a_time_equals_texel_by_texel() {
        // Seeded points around and outside a box (NaN, infinities, zeros of both signs) and normals
        // of every kind the fold treats specially, in runs whose length is not a multiple of 4.
        let mut rng = XorShift64Star(0x0123_4567_89AB_CDEF);
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3e38,
            -3e38,
            1e-40,
            -1e-40,
            1.0,
            -1.0,
            0.5,
        ];
        let mut value = |scale: f32| {
            let r = rng.next_u64();
            if r.is_multiple_of(7) {
                specials[(r >> 8) as usize % specials.len()]
            } else {
                ((rng.next_f64() * 2.0 - 1.0) as f32) * scale
            }
        };
        let count = 4099;
        let positions: Vec<[f32; 3]> = (0..count).map(|_| [value(2.0), value(2.0), value(2.0)]).collect();
        let normals: Vec<[f32; 3]> = (0..count).map(|_| [value(1.0), value(1.0), value(1.0)]).collect();
        let boxes = [
            PositionBounds { min: [-1.5, -0.25, -2.0], extent: [3.0, 2.19, 1.35] },
            PositionBounds { min: [0.0, -1.0, 5.0], extent: [0.0, 2.0, 0.0] },
        ];
        for bounds in &boxes {
            for bits in [allocate_position_bits(bounds.extent), [20, 20, 0], [0, 20, 20], [13, 14, 13]] {
                for rounding in [NormalRounding::Nearest, NormalRounding::Precise] {
                    for len in [0, 3, 4, 5, 64, count] {
                        let (p, n) = (&positions[..len], &normals[..len]);
                        let mut fast = vec![Vec::new()];
                        encode_vertex_texels(VertexFormat::Packed64, bits, bounds, p, n, rounding, &mut fast)
                            .unwrap();
                        let slow = encode_one_by_one(VertexFormat::Packed64, bits, bounds, p, n, rounding);
                        assert!(fast == slow, "{bounds:?} {bits:?} {rounding:?} {len}");
                    }
                }
            }
        }
        assert!(Packed64Encoder::new(&boxes[0], [21, 19, 0]).is_err());
        assert!(Packed64Encoder::new(&boxes[0], [13, 13, 13]).is_err());
    }

    #[test]
    fn normalize_clamps_maps_nan_to_zero_and_handles_zero_extent() {
        let b = PositionBounds { min: [1.0, -2.0, 0.0], extent: [2.0, 4.0, 0.0] };
        assert_eq!(b.normalize([2.0, 0.0, 5.0]), [0.5, 0.5, 0.0]);
        assert_eq!(b.normalize([-9.0, 9.0, f32::NAN]), [0.0, 1.0, 0.0]);
        assert_eq!(b.normalize([f32::NAN, f32::INFINITY, 0.0]), [0.0, 1.0, 0.0]);
        assert_eq!(b.normalize([1.0, -2.0, 0.0]).map(f32::to_bits), [0, 0, 0]); // +0.0, not -0.0
        assert_eq!(b.denormalize([0.5, 0.25, 1.0]), [2.0, -1.0, 0.0]);
    }

    #[test]
    fn character_extent_gets_13_14_13_bits() {
        assert_eq!(allocate_position_bits([1.65, 2.19, 1.35]), [13, 14, 13]);
        assert_eq!(allocate_position_bits([1.0, 1.0, 1.0]), [14, 13, 13]); // ties: lowest axis first
        assert_eq!(allocate_position_bits([0.0, 0.0, 0.0]), [20, 20, 0]); // all steps tie at 0
        assert_eq!(allocate_position_bits([0.0, 5.0, 0.0]), [20, 20, 0]);
        assert_eq!(allocate_position_bits([f32::NAN, 1.0, -1.0]), [20, 20, 0]);
        assert_eq!(allocate_position_bits([1.0, f32::INFINITY, 1.0]), [10, 20, 10]);
        assert_eq!(allocate_position_bits([1e-30, 1.0, 1e30]), [0, 20, 20]);
    }

    proptest! {
        #[test]
        fn allocation_sums_to_40_with_at_most_20_per_axis(e in prop::array::uniform3(
            prop_oneof![Just(0.0f32), 0.0f32..1e6, prop::num::f32::ANY])
        ) {
            let bits = allocate_position_bits(e);
            prop_assert_eq!(bits.iter().sum::<u32>(), 40);
            prop_assert!(bits.iter().all(|&b| b <= 20));
            prop_assert!(validate_position_bits(bits).is_ok());
            // Greedy invariant for finite positive extents: when an axis got its last bit its step was
            // the largest among open axes, so taking that bit back leaves a step no smaller than the
            // final step of any axis that could still take bits (no reallocation lowers the maximum).
            if e.iter().all(|&x| x.is_finite() && x > 0.0) {
                let step = |i: usize, b: u32| f64::from(e[i]) / 2f64.powi(b as i32);
                let worst_open = (0..3).filter(|&i| bits[i] < 20).map(|i| step(i, bits[i])).fold(0.0, f64::max);
                for (j, &b) in bits.iter().enumerate() {
                    if b > 0 {
                        prop_assert!(step(j, b - 1) >= worst_open, "{:?} {:?}", e, bits);
                    }
                }
            }
        }
    }

    #[test]
    fn quantize_maps_ends_rounds_to_nearest_and_never_panics() {
        assert_eq!(quantize_unorm(0.0, 8), 0);
        assert_eq!(quantize_unorm(1.0, 8), 255);
        assert_eq!(quantize_unorm(0.5, 8), 128); // 127.5 rounds half away from zero
        assert_eq!(quantize_unorm(0.499, 8), 127);
        assert_eq!(quantize_unorm(2.0, 20), (1 << 20) - 1);
        assert_eq!(quantize_unorm(-1.0, 20), 0);
        assert_eq!(quantize_unorm(f32::NAN, 16), 0);
        assert_eq!(quantize_unorm(0.7, 0), 0);
        assert_eq!(quantize_unorm(1.0, 40), (1 << 24) - 1);
        assert_eq!(dequantize_unorm(5, 0), 0.0);
        assert_eq!(dequantize_unorm(255, 8), 1.0);
        assert_eq!(dequantize_unorm(65535, 16), 1.0);
        assert_eq!(dequantize_unorm(1, 16), 1.0 / 65535.0);
        // Every 12-bit code survives decode and re-encode.
        for q in 0..4096 {
            assert_eq!(quantize_unorm(dequantize_unorm(q, 12), 12), q);
        }
    }

    #[test]
    fn packed64_fields_straddle_the_word_boundary_as_specified() {
        let bits = [13, 14, 13];
        let q = [0x1234u32, 0x2345, 0x1ABC];
        let n = [0, 1, 2].map(|a| dequantize_unorm(q[a], bits[a]));
        let t = pack_texel(n, bits, [0xABC, 0x123]);
        // P = 0x1234 | 0x2345 << 13 | 0x1ABC << 27 (worked out by hand; qz straddles bit 32).
        assert_eq!(t, [0xE468_B234, 0x123A_BCD5]);
        assert_eq!(unpack_texel(t, bits), (q, [0xABC, 0x123]));
        // 20 + 20 + 0: the third axis is empty and the second lies in bits 20..40.
        let t = pack_texel([1.0, 1.0, 1.0], [20, 20, 0], [0xFFF, 0]);
        assert_eq!(t, [0xFFFF_FFFF, 0x000F_FFFF]);
        assert_eq!(decode_packed64(t, [20, 20, 0]).0, [1.0, 1.0, 0.0]);
        // An invalid allocation never touches the normal field.
        let t = pack_texel([1.0; 3], [20, 20, 20], [0, 0]);
        assert_eq!(t[1] >> 8, 0);
        assert_eq!(unpack_texel([u32::MAX; 2], [99, 99, 99]).1, [0xFFF, 0xFFF]);
    }

    #[test]
    fn texel_layouts_are_little_endian_as_documented() {
        let n = [0.0, 0.5, 1.0];
        let up = [0.0, 0.0, 1.0];
        let enc = |format: VertexFormat| {
            let mut textures = vec![Vec::new(); format.texel_formats().len()];
            encode_vertex_texel(format, [13, 14, 13], n, up, NormalRounding::Nearest, &mut textures).unwrap();
            textures
        };
        let q16_half = quantize_unorm(0.5, 16) as u16; // 32768
        let oct16 = oct_encode(up, 16);
        let t = enc(VertexFormat::Unorm16);
        assert_eq!(t[0], [0, 0, q16_half.to_le_bytes()[0], q16_half.to_le_bytes()[1], 0xFF, 0xFF, 0, 0]);
        assert_eq!(
            t[1],
            [oct16[0] as u16, oct16[1] as u16].iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>()
        );
        let t = enc(VertexFormat::Split8);
        assert_eq!(t[0], [0, (q16_half >> 8) as u8, 0xFF, 0]);
        assert_eq!(t[1], [0, q16_half as u8, 0xFF, 0]);
        assert_eq!(t[2], [(oct16[0] >> 8) as u8, oct16[0] as u8, (oct16[1] >> 8) as u8, oct16[1] as u8]);
        let t = enc(VertexFormat::Unorm8);
        let oct8 = oct_encode(up, 8);
        assert_eq!(t[0], [0, 128, 255, 0]);
        assert_eq!(t[1], [oct8[0] as u8, oct8[1] as u8]);
        let t = enc(VertexFormat::F16);
        assert_eq!(t[0], [0x00, 0x00, 0x00, 0x38, 0x00, 0x3C, 0x00, 0x00]); // 0, 0.5, 1, 0 as binary16
        assert_eq!(t[1], [0, 0, 0, 0]); // +Z folds to (0, 0)
        let t = enc(VertexFormat::F32);
        assert_eq!(t[0], [0.0f32, 0.5, 1.0, 0.0].iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>());
        assert_eq!(t[1], [0u8; 8]);
        let t = enc(VertexFormat::Packed64);
        let w = encode_packed64(n, up, [13, 14, 13]);
        assert_eq!(t[0], w.iter().flat_map(|c| c.to_le_bytes()).collect::<Vec<_>>());
        // A second texel is appended after the first and decodes by index.
        for format in ALL_FORMATS {
            let mut textures = vec![Vec::new(); format.texel_formats().len()];
            encode_vertex_texel(format, [13, 14, 13], [0.0; 3], up, NormalRounding::Nearest, &mut textures)
                .unwrap();
            encode_vertex_texel(
                format,
                [13, 14, 13],
                [1.0; 3],
                [1.0, 0.0, 0.0],
                NormalRounding::Nearest,
                &mut textures,
            )
            .unwrap();
            let slices: Vec<&[u8]> = textures.iter().map(|t| t.as_slice()).collect();
            let d = decode_vertex_texel(format, [13, 14, 13], &slices, 1).unwrap();
            assert_eq!(d.position, [1.0; 3], "{format:?}");
            assert!(angle_deg(d.normal, [1.0, 0.0, 0.0]) <= f64::from(normal_error_bound_degrees(format)));
        }
    }

    #[test]
    fn codec_rejects_wrong_texture_counts_short_textures_and_bad_bits() {
        let mut two = vec![Vec::new(), Vec::new()];
        assert_eq!(
            encode_vertex_texel(
                VertexFormat::Packed64,
                [13, 14, 13],
                [0.0; 3],
                [0.0, 0.0, 1.0],
                NormalRounding::Nearest,
                &mut two
            ),
            Err(Error::WrongTextureCount { expected: 1, actual: 2 })
        );
        assert!(two.iter().all(Vec::is_empty));
        let mut one = vec![Vec::new()];
        assert!(matches!(
            encode_vertex_texel(
                VertexFormat::Packed64,
                [13, 14, 14],
                [0.0; 3],
                [0.0, 0.0, 1.0],
                NormalRounding::Nearest,
                &mut one
            ),
            Err(Error::OutOfRange { .. })
        ));
        assert!(one[0].is_empty());
        assert!(validate_position_bits([21, 19, 0]).is_err());
        assert!(validate_position_bits([20, 20, 0]).is_ok());
        let bytes = [0u8; 16];
        assert_eq!(
            decode_vertex_texel(VertexFormat::Split8, [0; 3], &[&bytes, &bytes], 0),
            Err(Error::WrongTextureCount { expected: 3, actual: 2 })
        );
        // Unorm16: 16 bytes hold 2 position texels but 4 normal texels.
        assert!(decode_vertex_texel(VertexFormat::Unorm16, [0; 3], &[&bytes, &bytes], 1).is_ok());
        assert_eq!(
            decode_vertex_texel(VertexFormat::Unorm16, [0; 3], &[&bytes, &bytes], 2),
            Err(Error::IndexOutOfRange { what: "texel index", index: 2, count: 2 })
        );
        assert!(decode_vertex_texel(VertexFormat::F32, [0; 3], &[&bytes[..15], &bytes], 0).is_err());
        assert!(decode_vertex_texel(VertexFormat::Packed64, [0; 3], &[&bytes], u64::MAX).is_err());
        // Garbage bits decode without panicking.
        assert!(decode_vertex_texel(VertexFormat::Packed64, [u32::MAX; 3], &[&bytes], 0).is_ok());
    }

    #[test]
    fn degenerate_normals_encode_as_plus_z() {
        for n in [[0.0; 3], [f32::NAN, 0.0, 1.0], [f32::INFINITY, 0.0, 0.0], [-0.0, 0.0, -0.0]] {
            assert_eq!(oct_encode_f32(n), [0.0, 0.0]);
            assert_eq!(oct_decode_f32(oct_encode_f32(n)), [0.0, 0.0, 1.0]);
            for bits in [8, 12, 16] {
                let d = oct_decode(oct_encode(n, bits), bits);
                assert!(angle_deg(d, [0.0, 0.0, 1.0]) <= oct_bound_deg(bits));
            }
        }
        // Huge finite and tiny components keep their direction.
        assert!(angle_deg(oct_decode(oct_encode([3e38, 3e38, 3e38], 16), 16), [1.0, 1.0, 1.0]) < 0.004);
        assert!(angle_deg(oct_decode(oct_encode([1e-40, 0.0, -1e-40], 16), 16), [1.0, 0.0, -1.0]) < 0.004);
        assert_eq!(oct_decode_f32([f32::NAN, 0.0]), [0.0, 0.0, 1.0]);
    }

    #[test]
    fn octahedral_decode_follows_the_fold() {
        assert_eq!(oct_decode_f32([0.0, 0.0]), [0.0, 0.0, 1.0]);
        assert_eq!(oct_decode_f32([1.0, 0.0]), [1.0, 0.0, 0.0]);
        assert_eq!(oct_decode_f32([0.0, -1.0]), [0.0, -1.0, 0.0]);
        for corner in [[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]] {
            assert_eq!(oct_decode_f32(corner), [0.0, 0.0, -1.0]);
        }
        // The fold uses sgn(-0.0) = +1: (0.5, -0.0, -0.5) has p = (0.5, -0.0), folded to (1, 0.5).
        assert_eq!(oct_encode_f32([0.5, -0.0, -0.5]), [1.0, 0.5]);
        // ... and (1, 0.5) unfolds to v = (0.5, 0, -0.5), normalised the documented way.
        let v = [0.5f32, 0.0, -0.5];
        let inv = 1.0 / (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        assert_eq!(oct_decode_f32([1.0, 0.5]), v.map(|c| c * inv));
        // Quantised: ox = f32(u) / max_q * 2 - 1, so u = max_q is +1 and u = 0 is -1 exactly.
        assert_eq!(oct_decode([4095, 0], 12), oct_decode_f32([1.0, -1.0]));
    }

    proptest! {
        #[test]
        fn position_round_trip_is_within_the_bound_in_every_format(points in box_and_points()) {
            let bounds = PositionBounds::from_points(points.iter().copied()).unwrap();
            let bits = allocate_position_bits(bounds.extent);
            for format in ALL_FORMATS {
                let bound = position_error_bound(format, bits, &bounds);
                for p in &points {
                    let d = encode_decode(format, bits, bounds.normalize(*p), [0.0, 0.0, 1.0]);
                    let q = bounds.denormalize(d.position);
                    for a in 0..3 {
                        let err = (f64::from(q[a]) - f64::from(p[a])).abs();
                        prop_assert!(err <= f64::from(bound[a]),
                            "{:?} axis {} err {} > bound {} (p {:?}, bounds {:?}, bits {:?})",
                            format, a, err, bound[a], p, bounds, bits);
                    }
                }
            }
        }

        #[test]
        fn normal_round_trip_is_within_the_bound_in_every_format(n in unit_normal(), scale in 1e-3f32..1e3) {
            for format in ALL_FORMATS {
                let d = encode_decode(format, [13, 14, 13], [0.5; 3], n.map(|c| c * scale));
                let err = angle_deg(d.normal, n);
                prop_assert!(err <= f64::from(normal_error_bound_degrees(format)),
                    "{:?}: {} deg > {} for {:?}", format, err, normal_error_bound_degrees(format), n);
                let len = d.normal.iter().map(|c| c * c).sum::<f32>().sqrt();
                prop_assert!((len - 1.0).abs() <= 4.0 * f32::EPSILON);
            }
        }

        #[test]
        fn octahedral_8_12_16_bits_are_within_their_bounds_and_refinement_beats_nearest(n in unit_normal()) {
            for bits in [8, 12, 16] {
                let q = oct_encode_precise(n, bits);
                let err = angle_deg(oct_decode(q, bits), n);
                prop_assert!(err <= oct_bound_deg(bits), "{} bits: {} deg for {:?}", bits, err, n);
                let nearest = oct_encode(n, bits);
                let nearest_err = angle_deg(oct_decode(nearest, bits), n);
                prop_assert!(nearest_err <= oct_bound_deg(bits), "{} bits nearest: {} deg", bits, nearest_err);
                prop_assert!(err <= nearest_err);
            }
        }
    }

    /// Measures the worst angular error of octahedral normals over many seeded random unit normals and
    /// prints it (`cargo test -p vat-core --lib octahedral_max_angular_error_report -- --nocapture`).
    #[test]
    fn octahedral_max_angular_error_report() {
        const SAMPLES: usize = 2_000_000;
        let mut rng = XorShift64Star(0x9E37_79B9_7F4A_7C15);
        let normals: Vec<[f32; 3]> =
            (0..SAMPLES).map(|_| unit_from(rng.next_f64(), rng.next_f64())).collect();
        for bits in [8u32, 12, 16] {
            let mut worst = 0.0f64;
            let mut worst_nearest = 0.0f64;
            for &n in &normals {
                worst = worst.max(angle_deg(oct_decode(oct_encode_precise(n, bits), bits), n));
                worst_nearest = worst_nearest.max(angle_deg(oct_decode(oct_encode(n, bits), bits), n));
            }
            let bound = oct_bound_deg(bits);
            println!(
                "octahedral {bits}+{bits}: max angular error over {SAMPLES} random unit normals: nearest \
                 rounding {worst_nearest:.6} deg, precise {worst:.6} deg (analytic bound {bound:.6} deg)"
            );
            assert!(worst <= worst_nearest && worst_nearest <= bound);
            if bits == 12 {
                // The default format's target: <= 0.06 degrees with either rounding.
                assert!(worst_nearest <= 0.06);
            }
        }
    }

    #[test]
    fn error_bounds_match_their_documented_figures() {
        let bounds = PositionBounds { min: [0.0; 3], extent: [1.65, 2.19, 1.35] };
        let bits = allocate_position_bits(bounds.extent);
        let mm = |format| position_error_bound(format, bits, &bounds)[1] * 1000.0;
        assert!((mm(VertexFormat::Packed64) - 0.0679).abs() < 5e-5);
        assert!((mm(VertexFormat::Unorm16) - 0.0178).abs() < 5e-5);
        assert!((mm(VertexFormat::Split8) - 0.0178).abs() < 5e-5);
        assert!((mm(VertexFormat::F16) - 0.536).abs() < 5e-4);
        assert!((mm(VertexFormat::Unorm8) - 4.30).abs() < 5e-3);
        // Per axis for the default format: 1.65 m / 8191 / 2 = 0.1007 mm (x, 13 bits), 0.0668 mm
        // (y, 14 bits), 0.0824 mm (z, 13 bits), each plus about 0.001 mm of f32 rounding.
        assert_eq!(bits, [13, 14, 13]);
        let packed = position_error_bound(VertexFormat::Packed64, bits, &bounds);
        for a in 0..3 {
            let half_step = f64::from(bounds.extent[a]) * 0.5 / f64::from((1u32 << bits[a]) - 1);
            let e = f64::from(packed[a]);
            // The rounding terms add 8u * L (min = 0, so M = L): at most 1.05e-6 m here.
            let rounding = 8.0 * F32_UNIT_ROUNDOFF * f64::from(bounds.extent[a]);
            assert!(
                e >= half_step && e <= (half_step + rounding) * (1.0 + 1e-7),
                "axis {a}: {e} vs {half_step}"
            );
        }
        let deg = normal_error_bound_degrees;
        assert!((deg(VertexFormat::Unorm8) - 0.9535).abs() < 5e-5);
        assert!((deg(VertexFormat::Packed64) - 0.05956).abs() < 5e-6);
        assert!((deg(VertexFormat::Unorm16) - 0.003908).abs() < 5e-7);
        assert_eq!(deg(VertexFormat::Split8), deg(VertexFormat::Unorm16));
        assert!((deg(VertexFormat::F16) - 0.05955).abs() < 5e-6);
        assert!(deg(VertexFormat::F32) < 2e-4);
        // A zero-bit axis decodes to min: the bound is the whole extent.
        let b = position_error_bound(VertexFormat::Packed64, [20, 20, 0], &bounds);
        assert!(b[2] >= 1.35 && b[2] < 1.35 * (1.0 + 1e-6));
    }

    fn quat_from_axis_angle(axis: [f32; 3], angle: f32) -> [f32; 4] {
        let a = normalized3(axis.map(f64::from)).unwrap_or([0.0, 0.0, 1.0]);
        let (s, c) = (f64::from(angle) * 0.5).sin_cos();
        [(a[0] * s) as f32, (a[1] * s) as f32, (a[2] * s) as f32, c as f32]
    }

    fn axis() -> impl Strategy<Value = [f32; 3]> {
        prop::array::uniform3(-1.0f32..1.0).prop_filter("non-zero axis", |a| a.iter().any(|c| c.abs() > 1e-3))
    }

    proptest! {
        #[test]
        fn hemisphere_continuity_makes_neighbours_agree_and_keeps_rotations(
            steps in prop::collection::vec((axis(), -0.5f32..0.5, any::<bool>()), 1..40),
            start in (axis(), -3.2f32..3.2),
        ) {
            // A smooth track of rotations with random sign flips.
            let mut q = quat_from_axis_angle(start.0, start.1);
            let mut track = Vec::new();
            for (a, angle, flip) in &steps {
                let r = quat_from_axis_angle(*a, *angle);
                q = [
                    r[3] * q[0] + r[0] * q[3] + r[1] * q[2] - r[2] * q[1],
                    r[3] * q[1] - r[0] * q[2] + r[1] * q[3] + r[2] * q[0],
                    r[3] * q[2] + r[0] * q[1] - r[1] * q[0] + r[2] * q[3],
                    r[3] * q[3] - r[0] * q[0] - r[1] * q[1] - r[2] * q[2],
                ];
                track.push(if *flip { q.map(|c| -c) } else { q });
            }
            let original = track.clone();
            make_hemisphere_continuous(&mut track);
            prop_assert_eq!(track[0], original[0]);
            for i in 0..track.len() {
                let same = track[i] == original[i] || track[i] == original[i].map(|c| -c);
                prop_assert!(same);
                if i > 0 {
                    let (a, b) = (track[i - 1], track[i]);
                    prop_assert!(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] >= 0.0);
                }
            }
        }

        #[test]
        fn tangent_frame_round_trips_through_binary16_within_the_bound(
            n in unit_normal(),
            t in prop::array::uniform3(-1.0f32..1.0),
            negative in any::<bool>(),
        ) {
            let sign = if negative { -1.0 } else { 1.0 };
            let q = tangent_frame_to_quat(n, [t[0], t[1], t[2], sign]);
            prop_assert!(q[3].abs() >= TANGENT_QUAT_MIN_W && (q[3] < 0.0) == negative);
            let stored = q.map(|c| f16_bits_to_f32(f32_to_f16_bits(c)));
            let (normal, tangent) = quat_to_tangent_frame(stored);
            prop_assert_eq!(tangent[3], sign);
            // Bound (radians): binary16 moves each component by <= 2^-12 (|c| <= 1), so q by <= 2^-11
            // (plus 2u from the f32 rounding of the encode); the rotation moves by twice the angle
            // in quaternion space, 2 asin(2^-11 + 2u); raising |w| to 2^-14 adds 2 * 2^-14; the f32
            // decode (normalise, then entries of 2-4 products each) errs by under 20u per entry, so
            // under 35u per column in angle, budgeted as 64u.
            let u = F32_UNIT_ROUNDOFF;
            let bound = 2.0 * (2f64.powi(-11) + 2.0 * u).asin() + 2.0 * f64::from(TANGENT_QUAT_MIN_W) + 64.0 * u;
            let n_ref = normalized3(n.map(f64::from)).unwrap();
            prop_assert!(angle_between(normal, n_ref) <= bound, "normal {:?} vs {:?}", normal, n);
            let t64 = t.map(f64::from);
            let d = dot3(n_ref, t64);
            if let Some(t_ref) = normalized3([t64[0] - n_ref[0] * d, t64[1] - n_ref[1] * d, t64[2] - n_ref[2] * d])
                .filter(|_| (dot3(t64, t64).sqrt() * 1e-3) < (dot3(t64, t64) - d * d).max(0.0).sqrt())
            {
                let t_dec = [tangent[0], tangent[1], tangent[2]];
                prop_assert!(angle_between(t_dec, t_ref) <= bound, "tangent {:?} vs {:?}", t_dec, t_ref);
            }
        }
    }

    #[test]
    fn tangent_sign_survives_binary16_when_w_is_near_zero() {
        // Half-turn frames have w = 0 exactly: normal -Z, tangent +X is a half turn about X.
        for (normal, tangent) in [([0.0, 0.0, -1.0], [1.0, 0.0, 0.0]), ([0.0, 1.0, 0.0], [-1.0, 0.0, 0.0])] {
            for sign in [1.0f32, -1.0] {
                let q = tangent_frame_to_quat(normal, [tangent[0], tangent[1], tangent[2], sign]);
                assert_eq!(q[3].abs(), TANGENT_QUAT_MIN_W);
                let stored = q.map(|c| f16_bits_to_f32(f32_to_f16_bits(c)));
                assert_eq!(stored[3], q[3]); // 2^-14 is binary16's smallest normal: exact
                let (n, t) = quat_to_tangent_frame(stored);
                assert_eq!(t[3], sign);
                assert!(angle_between(n, normal.map(f64::from)) < 3e-4);
                assert!(angle_between([t[0], t[1], t[2]], tangent.map(f64::from)) < 3e-4);
            }
        }
        // Degenerate inputs fall back to valid frames, never NaN.
        let q = tangent_frame_to_quat([0.0; 3], [0.0, 0.0, 1.0, f32::NAN]);
        assert!(q.iter().all(|c| c.is_finite()) && q[3] > 0.0);
        let (n, t) = quat_to_tangent_frame(q);
        assert!(angle_between(n, [0.0, 0.0, 1.0]) < 1e-6);
        assert!(t[2].abs() < 1e-6 && t[3] == 1.0);
        assert_eq!(quat_to_tangent_frame([0.0; 4]), ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]));
        assert_eq!(quat_to_tangent_frame([f32::NAN; 4]).0, [0.0, 0.0, 1.0]);
        // The identity frame is the identity quaternion.
        assert_eq!(tangent_frame_to_quat([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]), [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(quat_to_tangent_frame([0.0, 0.0, 0.0, 1.0]), ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]));
    }

    #[test]
    fn every_binary16_bit_pattern_round_trips() {
        for bits in 0..=u16::MAX {
            let x = f16_bits_to_f32(bits);
            let back = f32_to_f16_bits(x);
            if x.is_nan() {
                // NaN stays NaN with its sign (signalling NaNs come back quiet).
                assert_eq!(back & 0x7C00, 0x7C00, "{bits:#06x}");
                assert_ne!(back & 0x03FF, 0, "{bits:#06x}");
                assert_eq!(back & 0x8000, bits & 0x8000);
            } else {
                assert_eq!(back, bits, "{bits:#06x}");
            }
        }
    }

    #[test]
    fn binary16_subnormals_overflow_and_ties_round_as_ieee() {
        assert_eq!(f32_to_f16_bits(2f32.powi(-24)), 0x0001); // smallest subnormal
        assert_eq!(f16_bits_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f32_to_f16_bits(2f32.powi(-14)), 0x0400); // smallest normal
        assert_eq!(f16_bits_to_f32(0x0400), 2f32.powi(-14));
        assert_eq!(f16_bits_to_f32(0x03FF), 2f32.powi(-14) - 2f32.powi(-24)); // largest subnormal
        assert_eq!(f32_to_f16_bits(2f32.powi(-25)), 0x0000); // tie between 0 and 2^-24: even is 0
        assert_eq!(f32_to_f16_bits(2f32.powi(-25).next_up()), 0x0001);
        assert_eq!(f32_to_f16_bits(65504.0), 0x7BFF); // largest finite
        assert_eq!(f16_bits_to_f32(0x7BFF), 65504.0);
        assert_eq!(f32_to_f16_bits(65519.996), 0x7BFF);
        assert_eq!(f32_to_f16_bits(65520.0), 0x7C00); // the tie with 2^16 rounds to even: +inf
        assert_eq!(f32_to_f16_bits(1e9), 0x7C00);
        assert_eq!(f32_to_f16_bits(-65520.0), 0xFC00);
        assert_eq!(f32_to_f16_bits(1.0 + 2f32.powi(-11)), 0x3C00); // tie: to the even 1.0
        assert_eq!(f32_to_f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02); // tie: to the even 1 + 2^-9
        assert_eq!(f32_to_f16_bits(-0.0), 0x8000);
        assert!(f16_bits_to_f32(f32_to_f16_bits(f32::NAN)).is_nan());
    }
}
