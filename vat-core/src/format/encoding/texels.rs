//! Texels of every vertex format: encoding and decoding a vertex, whole frames and textures
//! ([`Packed64Encoder`]), and tangent frames as quaternions.

use super::*;

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

/// Checks that `format` stores texels and that `actual` textures were given for it.
pub(crate) fn check_texture_count(format: VertexFormat, actual: usize) -> Result<()> {
    if format == VertexFormat::SkinResidual {
        return Err(Error::OutOfRange {
            what: "vertex format",
            value: "skin-residual".into(),
            expected: "a format with a texel per vertex per frame (skin-residual frames decode through \
                       format::reference::SkinResidualView)",
        });
    }
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
        // Refused by check_texture_count above.
        VertexFormat::SkinResidual => {}
    }
    Ok(())
}

/// Reads a little-endian u16 at byte `i`.
pub(crate) fn le_u16(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// Reads a little-endian u32 at byte `i`.
pub(crate) fn le_u32(b: &[u8], i: usize) -> u32 {
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
pub(crate) fn decode_texel_at(
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
        // Refused by check_texture_count before any texel is read.
        VertexFormat::SkinResidual => DecodedTexel { position: [0.0; 3], normal: [0.0, 0.0, 1.0] },
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
pub(crate) fn dot3(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(crate) fn cross3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
pub(crate) fn normalized3(a: [f64; 3]) -> Option<[f64; 3]> {
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
