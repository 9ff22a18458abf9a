//! The skin-plus-residual vertex encoding chosen for the compressed tier (issue 34;
//! `docs/notes/compressed-format.md`): every frame of every vertex is a skin (four weighted bones,
//! each one `Rgba32Uint` texel per frame) plus a residual whose width is the vertex's own, stored in
//! a bit stream, so that the decoded position and normal are within bounds chosen before encoding.
//!
//! This module holds the encoding's arithmetic, which the bake, the CPU reference and (later) the
//! shader share: the bounds and the steps they give ([`ResidualBounds`]), the bone texel
//! ([`pack_bone_texel`], [`unpack_bone_texel`]), the per-vertex skin record ([`SkinRecord`],
//! [`skin_vertex`]), the residual widths ([`ResidualWidths`]), the bit stream
//! ([`ResidualStreamWriter`], [`read_frame_fields`]) and the decode of one stored frame
//! ([`apply_residual`]); [`encode_residuals`] picks every vertex's width and writes the stream. It
//! is not yet a container format: no file holds it and no backend draws it.
//!
//! # The bound
//!
//! Position: each residual component `r` is stored as `q = round(r / s_p)` with
//! `s_p = 2 B_p / sqrt(3)`, so `|r - s_p q| <= s_p / 2` per component and the decoded point is within
//! `sqrt(3) s_p / 2 = B_p` of the source (plus the `f32` rounding of `skin + s_p q`). Normal: the
//! residual is the source normal's offset `(a, b)` in the tangent plane of the skinned normal `m`
//! (`n ~ m + a t1 + b t2`, `a = n.t1 / n.m`), stored with step `s_n = sqrt(2) B_n`; the central
//! projection from that plane to the sphere is 1-Lipschitz, so the angle is within
//! `|(a, b) - s_n (qa, qb)| <= s_n / sqrt(2) = B_n`. Where `n.m` is small or negative the vertex takes
//! the fallback: the normal as an absolute octahedral code with step `s_o = sqrt(2) B_n / 3` (the
//! octahedral decode is 3-Lipschitz), again within `B_n`.

use super::encoding::{PositionBounds, oct_decode, oct_decode_f32, oct_encode, oct_encode_f32};
use super::impostor::{cross, dot, normalize};
use crate::{Error, Result};

/// A vertex's bones and their weights, at most four.
pub const MAX_INFLUENCES: usize = 4;

/// The widest residual field, bits (the widths are stored in four bits each).
pub const MAX_FIELD_BITS: u32 = 15;

/// The most residual bits one vertex may spend on one frame: its five fields are read from one
/// 32-bit window of the stream.
pub const MAX_FRAME_BITS: u32 = 32;

/// The smallest `n . m` (cosine between the source normal and the skinned one) the tangent-plane
/// residual is used for; below it the vertex stores its normals as absolute octahedral codes
/// (the plane's offsets grow without bound as `n . m` goes to 0).
pub const MIN_TANGENT_COSINE: f32 = 0.25;

/// The error bounds an encoding is made to: every decoded position within `position_m` metres of
/// the source's and every decoded normal within `normal_rad` radians, at every stored frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResidualBounds {
    /// Metres, in `(0, 1]`.
    pub position_m: f32,
    /// Radians, in `(0, 0.5]`.
    pub normal_rad: f32,
}

impl Default for ResidualBounds {
    /// 0.5 mm and 1 degree: the goals (p99 <= 0.5 mm, max <= 1 mm, normals <= 2 degrees)
    /// met by construction.
    fn default() -> Self {
        ResidualBounds { position_m: 0.0005, normal_rad: 1f32.to_radians() }
    }
}

impl ResidualBounds {
    /// Checks both bounds are finite and in range.
    ///
    /// # Errors
    /// [`Error::NotFinite`] or [`Error::OutOfRange`] naming the bound.
    pub fn validate(&self) -> Result<()> {
        if !(self.position_m.is_finite() && self.normal_rad.is_finite()) {
            return Err(Error::NotFinite { what: "residual bounds" });
        }
        if !(self.position_m > 0.0 && self.position_m <= 1.0) {
            return Err(Error::OutOfRange {
                what: "residual position bound",
                value: format!("{} m", self.position_m),
                expected: "greater than 0 and at most 1 m",
            });
        }
        if !(self.normal_rad > 0.0 && self.normal_rad <= 0.5) {
            return Err(Error::OutOfRange {
                what: "residual normal bound",
                value: format!("{} rad", self.normal_rad),
                expected: "greater than 0 and at most 0.5 rad",
            });
        }
        Ok(())
    }

    /// `s_p = 2 B_p / sqrt(3)`, metres: rounding each component to a multiple of it moves a point
    /// by at most `B_p`.
    pub fn position_step(&self) -> f32 {
        2.0 * self.position_m / 3f32.sqrt()
    }

    /// `s_n = sqrt(2) B_n`: the step of the tangent-plane offsets.
    pub fn normal_step(&self) -> f32 {
        2f32.sqrt() * self.normal_rad
    }

    /// `s_o = sqrt(2) B_n / 3`: the step of the fallback's octahedral coordinates.
    pub fn oct_step(&self) -> f32 {
        2f32.sqrt() * self.normal_rad / 3.0
    }
}

/// One bone at one frame as its texel stores it: the rotation quaternion `(x, y, z, w)` as four
/// snorm16 (`pack2x16snorm` of `(x, y)` in the first word, `(z, w)` in the second) and the
/// translation as three unorm16 over `bounds` (`(x, y)` in the third word, `z` in the low half of the
/// fourth). `rotation` need not be unit length (it is normalised first; a zero one is the identity).
pub fn pack_bone_texel(rotation: [f32; 4], translation: [f32; 3], bounds: &PositionBounds) -> [u32; 4] {
    let len = rotation.iter().map(|c| c * c).sum::<f32>().sqrt();
    let q = if len > 0.0 && len.is_finite() { rotation.map(|c| c / len) } else { [0.0, 0.0, 0.0, 1.0] };
    let snorm = |x: f32| u32::from((x.clamp(-1.0, 1.0) * 32767.0).round() as i16 as u16);
    let unorm = |i: usize| {
        let t =
            if bounds.extent[i] > 0.0 { (translation[i] - bounds.min[i]) / bounds.extent[i] } else { 0.0 };
        (t.clamp(0.0, 1.0) * 65535.0).round() as u32
    };
    [snorm(q[0]) | snorm(q[1]) << 16, snorm(q[2]) | snorm(q[3]) << 16, unorm(0) | unorm(1) << 16, unorm(2)]
}

/// A bone's transform as three rows `[r0, r1, r2, t]` (`p' = R p + t`), as bone mode stores it.
pub type AffineRows = [[f32; 4]; 3];

/// The transform a bone texel holds, as the shader decodes it: `unpack2x16snorm` twice, the
/// quaternion normalised (a zero one gives the identity), its rotation matrix, and the translation
/// `min + extent * unpack2x16unorm`.
pub fn unpack_bone_texel(texel: [u32; 4], bounds: &PositionBounds) -> AffineRows {
    let snorm = |w: u32, hi: bool| {
        let bits = if hi { w >> 16 } else { w & 0xFFFF } as u16 as i16;
        (f32::from(bits) / 32767.0).max(-1.0)
    };
    let unorm = |w: u32, hi: bool| f32::from(if hi { w >> 16 } else { w & 0xFFFF } as u16) / 65535.0;
    let raw = [snorm(texel[0], false), snorm(texel[0], true), snorm(texel[1], false), snorm(texel[1], true)];
    let len = raw.iter().map(|c| c * c).sum::<f32>().sqrt();
    let [x, y, z, w] = if len > 0.0 { raw.map(|c| c / len) } else { [0.0, 0.0, 0.0, 1.0] };
    let t = [unorm(texel[2], false), unorm(texel[2], true), unorm(texel[3], false)];
    let t: [f32; 3] = std::array::from_fn(|i| bounds.min[i] + bounds.extent[i] * t[i]);
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w), t[0]],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w), t[1]],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y), t[2]],
    ]
}

/// What the skin of one vertex needs, 32 bytes as the GPU will read it: the rest position
/// (metres, object space), the rest normal as octahedral 2 x unorm16, four bone indices (u8), four
/// weights (u8, summing to 255), and the vertex's place in the residual stream (its first bit and
/// its [`ResidualWidths`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SkinRecord {
    /// Rest position, `f32` bits.
    pub rest: [u32; 3],
    /// Rest normal: `oct_encode(n, 16)`, u in the low half.
    pub normal: u32,
    /// Bone indices, one byte each (influence 0 in the lowest).
    pub joints: u32,
    /// Weights, one byte each, summing to 255.
    pub weights: u32,
    /// The first bit of the vertex's frames in the residual stream.
    pub base: u32,
    /// [`ResidualWidths::to_bits`].
    pub widths: u32,
}

const _: () = assert!(std::mem::size_of::<SkinRecord>() == 32);

impl SkinRecord {
    /// A record of rest position `rest` (metres), rest normal `normal` (unit) and up to four
    /// `(bone, weight)` influences: weights normalised to sum 255 (rounded, the remainder on the
    /// largest), bones past 255 or influences past four refused. Its stream fields are zero.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for more than four influences, a bone index over 255, or weights that are
    /// not finite, negative, or all zero; [`Error::NotFinite`] for a position that is not finite.
    pub fn new(rest: [f32; 3], normal: [f32; 3], influences: &[(u32, f32)]) -> Result<SkinRecord> {
        if !rest.iter().all(|c| c.is_finite()) {
            return Err(Error::NotFinite { what: "skin record rest position" });
        }
        let bad = |value: String, expected: &'static str| Error::OutOfRange {
            what: "skin influences",
            value,
            expected,
        };
        if influences.len() > MAX_INFLUENCES {
            return Err(bad(influences.len().to_string(), "at most 4 influences"));
        }
        if let Some((bone, _)) = influences.iter().find(|(b, _)| *b > 255) {
            return Err(bad(bone.to_string(), "bone indices up to 255"));
        }
        let total: f32 = influences.iter().map(|(_, w)| *w).sum();
        if !(total > 0.0 && total.is_finite()) || influences.iter().any(|(_, w)| w.is_nan() || *w < 0.0) {
            return Err(bad(format!("{influences:?}"), "finite, non-negative weights with a positive sum"));
        }
        let mut bytes = [0u32; MAX_INFLUENCES];
        for (b, (_, w)) in bytes.iter_mut().zip(influences) {
            *b = (w / total * 255.0).round() as u32;
        }
        // The remainder on the largest, so the bytes sum to 255 exactly.
        let largest =
            (0..influences.len()).max_by(|&a, &b| bytes[a].cmp(&bytes[b]).then(b.cmp(&a))).unwrap_or(0);
        let rest_sum: u32 = bytes.iter().enumerate().filter(|(i, _)| *i != largest).map(|(_, b)| b).sum();
        bytes[largest] = 255u32.saturating_sub(rest_sum);
        let [u, v] = oct_encode(normal, 16);
        let mut joints = 0u32;
        let mut weights = 0u32;
        for (k, (bone, _)) in influences.iter().enumerate() {
            joints |= bone << (8 * k);
            weights |= bytes[k] << (8 * k);
        }
        Ok(SkinRecord {
            rest: rest.map(f32::to_bits),
            normal: u | v << 16,
            joints,
            weights,
            base: 0,
            widths: 0,
        })
    }

    /// The rest position, metres.
    pub fn rest_position(&self) -> [f32; 3] {
        self.rest.map(f32::from_bits)
    }

    /// The rest normal as decoded (`oct_decode(.., 16)`).
    pub fn rest_normal(&self) -> [f32; 3] {
        oct_decode([self.normal & 0xFFFF, self.normal >> 16], 16)
    }

    /// Influence `k` (0..4): its bone and its weight in `[0, 1]` (byte / 255).
    pub fn influence(&self, k: usize) -> (u32, f32) {
        let byte = |w: u32| (w >> (8 * (k % MAX_INFLUENCES))) & 0xFF;
        (byte(self.joints), byte(self.weights) as f32 / 255.0)
    }
}

/// The skinned position and normal of `record` with one frame's bone transforms `bones` (a bone
/// index past them counts as the identity): `M = sum_k w_k bones[j_k]` (influences in order,
/// left to right), `M p_rest` and the cofactor normal `normalize(sign(det) cof(M) n_rest)`, as bone
/// mode decodes a vertex.
pub fn skin_vertex(record: &SkinRecord, bones: &[AffineRows]) -> ([f32; 3], [f32; 3]) {
    const IDENTITY: AffineRows = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];
    let mut m = [[0.0f32; 4]; 3];
    for k in 0..MAX_INFLUENCES {
        let (bone, w) = record.influence(k);
        let b = bones.get(bone as usize).unwrap_or(&IDENTITY);
        for r in 0..3 {
            for c in 0..4 {
                m[r][c] += w * b[r][c];
            }
        }
    }
    let p = record.rest_position();
    let point: [f32; 3] = std::array::from_fn(|r| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3]);
    let col = |j: usize| [m[0][j], m[1][j], m[2][j]];
    let (c0, c1, c2) = (col(0), col(1), col(2));
    let (k0, k1, k2) = (cross(c1, c2), cross(c2, c0), cross(c0, c1));
    let det = dot(c0, k0);
    let n = record.rest_normal();
    let v: [f32; 3] = std::array::from_fn(|i| k0[i] * n[0] + k1[i] * n[1] + k2[i] * n[2]);
    (point, normalize(if det < 0.0 { v.map(|x| -x) } else { v }))
}

/// How many bits each residual field of a vertex takes per frame, the same at every frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResidualWidths {
    /// Bits of each position component (0: the skin alone is within the bound), up to
    /// [`MAX_FIELD_BITS`].
    pub position_bits: u32,
    /// Bits of each of the two normal fields, up to [`MAX_FIELD_BITS`].
    pub normal_bits: u32,
    /// The normal fields are an absolute octahedral code (step [`ResidualBounds::oct_step`]), not
    /// the tangent-plane offset from the skinned normal.
    pub absolute_normal: bool,
}

impl ResidualWidths {
    /// Bits per frame: `3 position_bits + 2 normal_bits`.
    pub fn frame_bits(&self) -> u32 {
        3 * self.position_bits + 2 * self.normal_bits
    }

    /// As [`SkinRecord::widths`] stores them: position bits in bits 0..4, normal bits in 4..8, the
    /// absolute flag in bit 8.
    pub fn to_bits(&self) -> u32 {
        (self.position_bits & 15) | (self.normal_bits & 15) << 4 | u32::from(self.absolute_normal) << 8
    }

    /// The inverse of [`Self::to_bits`].
    pub fn from_bits(bits: u32) -> ResidualWidths {
        ResidualWidths {
            position_bits: bits & 15,
            normal_bits: (bits >> 4) & 15,
            absolute_normal: (bits >> 8) & 1 == 1,
        }
    }
}

/// One frame's residual fields of a vertex: the position's three quantised components and the
/// normal's two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResidualFields {
    /// Position components, multiples of [`ResidualBounds::position_step`].
    pub position: [i32; 3],
    /// Normal fields: tangent-plane offsets (multiples of [`ResidualBounds::normal_step`]) or, with
    /// [`ResidualWidths::absolute_normal`], octahedral coordinates (multiples of
    /// [`ResidualBounds::oct_step`]).
    pub normal: [i32; 2],
}

/// Appends vertices' frames to a residual stream of `u32` words, least significant bit first.
#[derive(Debug, Clone, Default)]
pub struct ResidualStreamWriter {
    words: Vec<u32>,
    bits: u64,
}

impl ResidualStreamWriter {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bit the next field starts at.
    pub fn position(&self) -> u64 {
        self.bits
    }

    /// Appends `fields` with `widths` (two's complement, each field's low `bits` bits: the encoder
    /// makes every value fit).
    pub fn push(&mut self, fields: &ResidualFields, widths: ResidualWidths) {
        for &q in &fields.position {
            self.push_field(q, widths.position_bits);
        }
        for &q in &fields.normal {
            self.push_field(q, widths.normal_bits);
        }
    }

    fn push_field(&mut self, value: i32, bits: u32) {
        if bits == 0 {
            return;
        }
        let v = (value as u32) & ((1u32 << bits) - 1);
        let word = (self.bits / 32) as usize;
        let shift = (self.bits % 32) as u32;
        while self.words.len() <= word + 1 {
            self.words.push(0);
        }
        self.words[word] |= v << shift;
        if shift + bits > 32 {
            self.words[word + 1] |= v >> (32 - shift);
        }
        self.bits += u64::from(bits);
    }

    /// The stream's words, padded with one zero word past the last field (the decoder reads a
    /// 32-bit window that may reach into it).
    pub fn finish(mut self) -> Vec<u32> {
        let used = self.bits.div_ceil(32) as usize;
        self.words.resize(used + 1, 0);
        self.words
    }
}

/// The 32 bits of `stream` from bit `offset` (zero past its end), as the shader's window read.
pub fn read_window(stream: &[u32], offset: u64) -> u32 {
    let word = |i: u64| usize::try_from(i).ok().and_then(|i| stream.get(i)).copied().unwrap_or(0);
    let (i, shift) = (offset / 32, (offset % 32) as u32);
    if shift == 0 { word(i) } else { (word(i) >> shift) | (word(i + 1) << (32 - shift)) }
}

/// WGSL's `extractBits` of an `i32`: `count` bits from bit `offset`, sign-extended (0 for a count
/// of 0). `offset + count` must be at most 32.
pub fn extract_signed(x: u32, offset: u32, count: u32) -> i32 {
    if count == 0 {
        return 0;
    }
    ((x << (32 - offset - count)) as i32) >> (32 - count)
}

/// The fields of stored frame `frame` of a vertex whose frames start at bit `base` with `widths`.
pub fn read_frame_fields(stream: &[u32], base: u32, widths: ResidualWidths, frame: u32) -> ResidualFields {
    let x = read_window(stream, u64::from(base) + u64::from(frame) * u64::from(widths.frame_bits()));
    let (bp, bn) = (widths.position_bits, widths.normal_bits);
    ResidualFields {
        position: [extract_signed(x, 0, bp), extract_signed(x, bp, bp), extract_signed(x, 2 * bp, bp)],
        normal: [extract_signed(x, 3 * bp, bn), extract_signed(x, 3 * bp + bn, bn)],
    }
}

/// A branch-free orthonormal basis `(t1, t2)` of the plane perpendicular to unit `m` (Duff et al.
/// 2017), as the shader builds it.
pub fn tangent_basis(m: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let sign = if m[2] >= 0.0 { 1.0 } else { -1.0 };
    let a = -1.0 / (sign + m[2]);
    let b = m[0] * m[1] * a;
    ([1.0 + sign * m[0] * m[0] * a, sign * b, -sign * m[0]], [b, sign + m[1] * m[1] * a, -m[1]])
}

/// The decoded position and normal of one stored frame: the skin's `position` plus
/// `position_step * fields.position` (per component, `f32`), and the normal: with the tangent-plane
/// residual `normalize(m + normal_step (qa t1 + qb t2))` around the skinned `normal` `m`, or with
/// [`ResidualWidths::absolute_normal`] `oct_decode_f32(oct_step * (qa, qb))`.
pub fn apply_residual(
    (position, normal): ([f32; 3], [f32; 3]),
    fields: &ResidualFields,
    widths: ResidualWidths,
    bounds: &ResidualBounds,
) -> ([f32; 3], [f32; 3]) {
    let s = bounds.position_step();
    let p: [f32; 3] = std::array::from_fn(|i| position[i] + s * fields.position[i] as f32);
    let [qa, qb] = fields.normal.map(|q| q as f32);
    let n = if widths.absolute_normal {
        let o = bounds.oct_step();
        oct_decode_f32([o * qa, o * qb])
    } else {
        let (t1, t2) = tangent_basis(normal);
        let sn = bounds.normal_step();
        normalize(std::array::from_fn(|i| normal[i] + sn * (qa * t1[i] + qb * t2[i])))
    };
    (p, n)
}

/// A vertex animation encoded as skin plus residual: every vertex's record fields for the stream
/// (its first bit, its widths) and the stream itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedResiduals {
    /// Per vertex: the first bit of its frames ([`SkinRecord::base`]).
    pub bases: Vec<u32>,
    /// Per vertex: its widths.
    pub widths: Vec<ResidualWidths>,
    /// The stream ([`ResidualStreamWriter::finish`]).
    pub stream: Vec<u32>,
}

impl EncodedResiduals {
    /// Mean residual bits per vertex per frame.
    pub fn mean_frame_bits(&self) -> f64 {
        let n = self.widths.len().max(1) as f64;
        self.widths.iter().map(|w| f64::from(w.frame_bits())).sum::<f64>() / n
    }
}

/// Encodes the residuals of `vertex_count` vertices over `frame_count` stored frames: `skinned(f, v)`
/// gives the skin's position and unit normal of vertex `v` at frame `f` (what the decoder computes
/// before the residual, [`skin_vertex`] of the stored bones), `source(f, v)` the position and unit
/// normal the decode must reproduce within `bounds`. Every vertex gets the narrowest widths that
/// hold all its frames (the tangent-plane normal residual where every frame's `n . m` is at least
/// [`MIN_TANGENT_COSINE`] and it is not wider than the absolute code, else the absolute code);
/// its frames are appended to the stream in frame order.
///
/// # Errors
/// The bounds' [`ResidualBounds::validate`]; [`Error::NotFinite`] for a source or skinned value
/// that is not finite; [`Error::LimitExceeded`] for a vertex whose frames need more than
/// [`MAX_FRAME_BITS`] bits or a field wider than [`MAX_FIELD_BITS`] (the skin is too far from the
/// source for these bounds: more bones, or looser bounds), or a stream past `u32::MAX` bits.
pub fn encode_residuals(
    vertex_count: u32,
    frame_count: u32,
    skinned: impl Fn(u32, u32) -> ([f32; 3], [f32; 3]),
    source: impl Fn(u32, u32) -> ([f32; 3], [f32; 3]),
    bounds: &ResidualBounds,
) -> Result<EncodedResiduals> {
    bounds.validate()?;
    let (sp, sn, so) = (bounds.position_step(), bounds.normal_step(), bounds.oct_step());
    let mut writer = ResidualStreamWriter::new();
    let (mut bases, mut all_widths) = (Vec::new(), Vec::new());
    let mut fields = vec![ResidualFields::default(); frame_count as usize];
    for v in 0..vertex_count {
        let mut tangent_ok = true;
        let mut tangent = vec![[0i32; 2]; frame_count as usize];
        let mut absolute = vec![[0i32; 2]; frame_count as usize];
        for f in 0..frame_count {
            let ((sk_p, sk_n), (src_p, src_n)) = (skinned(f, v), source(f, v));
            let finite = |a: &[f32; 3]| a.iter().all(|c| c.is_finite());
            if !(finite(&sk_p) && finite(&sk_n) && finite(&src_p) && finite(&src_n)) {
                return Err(Error::NotFinite { what: "a skinned or source vertex of the residual encoding" });
            }
            let slot = &mut fields[f as usize];
            slot.position = std::array::from_fn(|i| quantize(src_p[i] - sk_p[i], sp));
            let cos = dot(src_n, sk_n);
            if cos >= MIN_TANGENT_COSINE {
                let (t1, t2) = tangent_basis(sk_n);
                tangent[f as usize] =
                    [quantize(dot(src_n, t1) / cos, sn), quantize(dot(src_n, t2) / cos, sn)];
            } else {
                tangent_ok = false;
            }
            let [ox, oy] = oct_encode_f32(src_n);
            absolute[f as usize] = [quantize(ox, so), quantize(oy, so)];
        }
        let position_bits = signed_bits(fields.iter().flat_map(|q| q.position));
        let absolute_bits = signed_bits(absolute.iter().flatten().copied());
        let tangent_bits = if tangent_ok { signed_bits(tangent.iter().flatten().copied()) } else { u32::MAX };
        let use_absolute = absolute_bits < tangent_bits;
        let widths = ResidualWidths {
            position_bits,
            normal_bits: if use_absolute { absolute_bits } else { tangent_bits },
            absolute_normal: use_absolute,
        };
        if widths.position_bits > MAX_FIELD_BITS
            || widths.normal_bits > MAX_FIELD_BITS
            || widths.frame_bits() > MAX_FRAME_BITS
        {
            return Err(Error::LimitExceeded {
                what: "residual bits of one vertex per frame (its skin is too far from the source for these bounds)",
                value: u64::from(widths.position_bits) * 3 + u64::from(widths.normal_bits.min(64)) * 2,
                limit: MAX_FRAME_BITS.into(),
            });
        }
        let base = u32::try_from(writer.position()).map_err(|_| Error::LimitExceeded {
            what: "residual stream bits",
            value: writer.position(),
            limit: u32::MAX.into(),
        })?;
        for (f, slot) in fields.iter_mut().enumerate() {
            slot.normal = if use_absolute { absolute[f] } else { tangent[f] };
            writer.push(slot, widths);
        }
        bases.push(base);
        all_widths.push(widths);
    }
    if writer.position() > u64::from(u32::MAX) {
        return Err(Error::LimitExceeded {
            what: "residual stream bits",
            value: writer.position(),
            limit: u32::MAX.into(),
        });
    }
    Ok(EncodedResiduals { bases, widths: all_widths, stream: writer.finish() })
}

/// `round(x / step)` as an `i32` (saturating: a value that large fails the width check).
fn quantize(x: f32, step: f32) -> i32 {
    (x / step).round().clamp(i32::MIN as f32, i32::MAX as f32) as i32
}

/// The fewest bits of two's complement holding every value of `values` (0 when all are 0).
fn signed_bits(values: impl Iterator<Item = i32>) -> u32 {
    let (mut widest, mut any) = (0u32, false);
    for q in values {
        any |= q != 0;
        // A negative q needs as many bits as its complement !q = -q - 1 does positive.
        widest = widest.max(if q < 0 { !q } else { q } as u32);
    }
    if any { 33 - widest.leading_zeros() } else { 0 }
}

#[cfg(test)]
#[path = "skin_residual_tests.rs"]
mod tests;
