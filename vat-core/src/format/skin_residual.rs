//! The skin-plus-residual vertex encoding of the compressed tier
//! ([`crate::encoding::VertexFormat::SkinResidual`]; measurements and the choice in
//! `docs/notes/compressed-format.md`): every stored frame of every vertex is the asset's own skin
//! (its bone section, decoded exactly as bone mode decodes it) plus a residual whose width is the
//! vertex's own, stored in a bit stream, so that the decoded position and normal are within bounds
//! chosen before encoding.
//!
//! This module holds the encoding's arithmetic, which the bake, the CPU reference
//! ([`crate::format::reference::SkinResidualView`]) and the shader share: the bounds and the steps
//! they give ([`ResidualBounds`]), the residual widths ([`ResidualWidths`]), the bit stream
//! ([`ResidualStreamWriter`], [`read_frame_fields`]), the residual's values and how they finish a
//! skinned vertex ([`residual_values`], [`finish_residual`], [`apply_residual`]);
//! [`encode_residuals`] picks every vertex's width and writes the stream; [`residual_texture`]
//! lays the widths and the stream out as the container stores them.
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

use super::encoding::{normalize3, oct_decode_f32, oct_encode_f32};
use super::impostor::dot;
use crate::{Error, Result};

/// The widest residual field, bits (the widths are stored in four bits each).
pub const MAX_FIELD_BITS: u32 = 15;

/// The most residual bits one vertex may spend on one frame: its five fields are read from one
/// 32-bit window of the stream, or from two (at its first bit and 32 bits on) past 32 bits.
pub const MAX_FRAME_BITS: u32 = 64;

/// What the `f32` decode may add to [`ResidualBounds::position_m`], metres: the rounding of
/// `step * q` and of `skin + r` (a few ulp of a coordinate; 1 um holds for coordinates up to 8 m
/// from the origin, and `vat verify` states the bound it checks as `B_p` plus this).
pub const POSITION_SLACK_M: f32 = 1e-6;

/// What the `f32` decode may add to [`ResidualBounds::normal_rad`], radians: the rounding of the
/// tangent basis, the sum and the normalisation (about 0.001 degree).
pub const NORMAL_SLACK_RAD: f32 = 2e-5;

/// The most words a residual stream may have: its bits are addressed by `u32` (2^27 words, 512 MiB).
pub const MAX_STREAM_WORDS: u32 = 1 << 27;

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

    /// As the residual texture's second word of the vertex stores them: position bits in bits 0..4, normal bits in 4..8, the
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
        let word = (self.bits / 32) as usize;
        if self.words.len() <= word + 1 {
            self.words.resize(word + 2, 0);
        }
        or_field(&mut self.words, &mut self.bits, value, bits);
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

/// Bits `offset .. offset + count` of the 64-bit value `hi:lo`, sign-extended (`count` at most 32,
/// `offset + count` at most 64; 0 for a count of 0): the shader's `vat_residual_field`.
pub fn extract_field(lo: u32, hi: u32, offset: u32, count: u32) -> i32 {
    let x = if offset >= 32 {
        hi >> (offset - 32)
    } else if offset == 0 {
        lo
    } else {
        (lo >> offset) | (hi << (32 - offset))
    };
    extract_signed(x, 0, count)
}

/// The fields of stored frame `frame` of a vertex whose frames start at bit `base` with `widths`:
/// one 32-bit window at the frame's first bit, and a second 32 bits on when the frame is wider.
pub fn read_frame_fields(stream: &[u32], base: u32, widths: ResidualWidths, frame: u32) -> ResidualFields {
    let bits = widths.frame_bits();
    let at = u64::from(base) + u64::from(frame) * u64::from(bits);
    let lo = read_window(stream, at);
    let hi = if bits > 32 { read_window(stream, at + 32) } else { 0 };
    let (bp, bn) = (widths.position_bits, widths.normal_bits);
    let field = |offset: u32, count: u32| extract_field(lo, hi, offset, count);
    ResidualFields {
        position: [field(0, bp), field(bp, bp), field(2 * bp, bp)],
        normal: [field(3 * bp, bn), field(3 * bp + bn, bn)],
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

/// One stored frame's residual as the decoder adds it: the position offset
/// `position_step * q` (metres, per component) and the normal's two values, `normal_step * (qa, qb)`
/// (tangent-plane offsets) or with [`ResidualWidths::absolute_normal`] `oct_step * (qa, qb)`
/// (octahedral coordinates). Between stored frames the decoder blends these values with the
/// frames' weights, as it blends the bone matrices.
pub fn residual_values(
    fields: &ResidualFields,
    widths: ResidualWidths,
    bounds: &ResidualBounds,
) -> ([f32; 3], [f32; 2]) {
    let s = bounds.position_step();
    let step = if widths.absolute_normal { bounds.oct_step() } else { bounds.normal_step() };
    (fields.position.map(|q| s * q as f32), fields.normal.map(|q| step * q as f32))
}

/// A skinned vertex (`position`, unit `normal` `m`) finished with residual values `(r, d)` (one
/// frame's [`residual_values`], or their blend): `position + r`, and the normal
/// `normalize(m + (d0 t1 + d1 t2))` in the tangent basis of `m` ([`tangent_basis`]), or with
/// `absolute_normal` `oct_decode_f32(d)`. The shader's `vat_finish_residual`, operation for operation.
pub fn finish_residual(
    (position, normal): ([f32; 3], [f32; 3]),
    (r, d): ([f32; 3], [f32; 2]),
    absolute_normal: bool,
) -> ([f32; 3], [f32; 3]) {
    let p: [f32; 3] = std::array::from_fn(|i| position[i] + r[i]);
    let n = if absolute_normal {
        oct_decode_f32(d)
    } else {
        let (t1, t2) = tangent_basis(normal);
        normalize3(std::array::from_fn(|i| normal[i] + (d[0] * t1[i] + d[1] * t2[i])))
    };
    (p, n)
}

/// The decoded position and normal of one stored frame: [`finish_residual`] of its
/// [`residual_values`].
pub fn apply_residual(
    skinned: ([f32; 3], [f32; 3]),
    fields: &ResidualFields,
    widths: ResidualWidths,
    bounds: &ResidualBounds,
) -> ([f32; 3], [f32; 3]) {
    finish_residual(skinned, residual_values(fields, widths, bounds), widths.absolute_normal)
}

/// A vertex animation encoded as skin plus residual: every vertex's record fields for the stream
/// (its first bit, its widths) and the stream itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedResiduals {
    /// Per vertex: the first bit of its frames (the residual texture's first word of the vertex).
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
/// before the residual: bone mode's skin of the stored bones), `source(f, v)` the position and unit
/// normal the decode must reproduce within `bounds`. Every vertex gets the narrowest widths that
/// hold all its frames ([`encode_vertex_residual`]); its frames are appended to the stream in frame
/// order ([`ResidualEncoder`], which a caller holding fewer frames at once uses directly).
///
/// # Errors
/// Those of [`encode_vertex_residual`] and [`ResidualEncoder::push`].
pub fn encode_residuals(
    vertex_count: u32,
    frame_count: u32,
    skinned: impl Fn(u32, u32) -> ([f32; 3], [f32; 3]),
    source: impl Fn(u32, u32) -> ([f32; 3], [f32; 3]),
    bounds: &ResidualBounds,
) -> Result<EncodedResiduals> {
    let mut encoder = ResidualEncoder::new(frame_count);
    for v in 0..vertex_count {
        let vertex = encode_vertex_residual(frame_count, |f| Ok((skinned(f, v), source(f, v))), bounds)?;
        encoder.push(&vertex)?;
    }
    Ok(encoder.finish())
}

/// One vertex's residual over every stored frame: its widths and each frame's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VertexResidual {
    /// The narrowest widths that hold every frame.
    pub widths: ResidualWidths,
    /// One entry per stored frame, in frame order.
    pub fields: Vec<ResidualFields>,
}

/// The residual of one vertex over `frame_count` stored frames: `frame(f)` gives the skin's position
/// and unit normal at frame `f` (what the decoder computes before the residual) and the source's,
/// which the decode must reproduce within `bounds`. The widths are the narrowest that hold every
/// frame: the tangent-plane normal residual where every frame's `n . m` is at least
/// [`MIN_TANGENT_COSINE`] and it is not wider than the absolute code, else the absolute code.
/// Vertices are independent, so a caller may encode them in parallel and push them in order.
///
/// # Errors
/// The bounds' [`ResidualBounds::validate`]; what `frame` returns; [`Error::NotFinite`] for a source
/// or skinned value that is not finite; [`Error::LimitExceeded`] for frames that need more than
/// [`MAX_FRAME_BITS`] bits or a field wider than [`MAX_FIELD_BITS`] (the skin is too far from the
/// source for these bounds: more bones, or looser bounds).
pub fn encode_vertex_residual(
    frame_count: u32,
    mut frame: impl FnMut(u32) -> Result<(([f32; 3], [f32; 3]), ([f32; 3], [f32; 3]))>,
    bounds: &ResidualBounds,
) -> Result<VertexResidual> {
    bounds.validate()?;
    let mut extent = ResidualExtent::default();
    let mut frames = Vec::with_capacity(frame_count as usize);
    for f in 0..frame_count {
        let (skin, source) = frame(f)?;
        let q = FrameResidual::of(skin, source, bounds)?;
        extent.add(&q);
        frames.push(q);
    }
    let widths = extent.widths()?;
    Ok(VertexResidual { widths, fields: frames.iter().map(|q| q.fields(widths)).collect() })
}

/// One stored frame of one vertex quantised against its skin, before the vertex's widths are
/// known: the position residual (steps of [`ResidualBounds::position_step`]), the normal's
/// tangent-plane values (steps of [`ResidualBounds::normal_step`]; `None` where the skin's normal
/// is too far from the source's, `n . m` under [`MIN_TANGENT_COSINE`]) and its octahedral code
/// (steps of [`ResidualBounds::oct_step`]). An encoder that reads the frames one at a time for
/// every vertex folds these into each vertex's [`ResidualExtent`], then writes
/// [`FrameResidual::fields`] under the widths it gives ([`ResidualStreamLayout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameResidual {
    /// Position residual.
    pub position: [i32; 3],
    /// Tangent-plane normal values, where the tangent plane holds the frame.
    pub tangent: Option<[i32; 2]>,
    /// Octahedral normal code.
    pub absolute: [i32; 2],
}

impl FrameResidual {
    /// `source` (position and unit normal) against `skin` (what the decoder computes before the
    /// residual), quantised in the steps of `bounds` (already validated).
    ///
    /// # Errors
    /// [`Error::NotFinite`] for a source or skinned value that is not finite.
    pub fn of(
        (sk_p, sk_n): ([f32; 3], [f32; 3]),
        (src_p, src_n): ([f32; 3], [f32; 3]),
        bounds: &ResidualBounds,
    ) -> Result<Self> {
        let finite = |a: &[f32; 3]| a.iter().all(|c| c.is_finite());
        if !(finite(&sk_p) && finite(&sk_n) && finite(&src_p) && finite(&src_n)) {
            return Err(Error::NotFinite { what: "a skinned or source vertex of the residual encoding" });
        }
        let (sp, sn, so) = (bounds.position_step(), bounds.normal_step(), bounds.oct_step());
        let cos = dot(src_n, sk_n);
        let tangent = (cos >= MIN_TANGENT_COSINE).then(|| {
            let (t1, t2) = tangent_basis(sk_n);
            [quantize(dot(src_n, t1) / cos, sn), quantize(dot(src_n, t2) / cos, sn)]
        });
        let [ox, oy] = oct_encode_f32(src_n);
        Ok(Self {
            position: std::array::from_fn(|i| quantize(src_p[i] - sk_p[i], sp)),
            tangent,
            absolute: [quantize(ox, so), quantize(oy, so)],
        })
    }

    /// The frame's fields under its vertex's `widths` (from [`ResidualExtent::widths`]).
    pub fn fields(&self, widths: ResidualWidths) -> ResidualFields {
        let normal = if widths.absolute_normal { self.absolute } else { self.tangent.unwrap_or_default() };
        ResidualFields { position: self.position, normal }
    }
}

/// The two's complement bits a set of values needs, folded a value at a time (`signed_bits`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SignedExtent {
    widest: u32,
    any: bool,
}

impl SignedExtent {
    fn add(&mut self, q: i32) {
        self.any |= q != 0;
        // A negative q needs as many bits as its complement !q = -q - 1 does positive.
        self.widest = self.widest.max(if q < 0 { !q } else { q } as u32);
    }

    fn merge(&mut self, other: Self) {
        self.any |= other.any;
        self.widest = self.widest.max(other.widest);
    }

    fn bits(self) -> u32 {
        if self.any { 33 - self.widest.leading_zeros() } else { 0 }
    }
}

/// What one vertex's frames need, folded a frame at a time in any order ([`Self::add`],
/// [`Self::merge`]): the widths [`encode_vertex_residual`] gives the same frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResidualExtent {
    position: SignedExtent,
    tangent: SignedExtent,
    /// Every frame so far holds in the tangent plane.
    tangent_holds: bool,
    absolute: SignedExtent,
}

impl Default for ResidualExtent {
    fn default() -> Self {
        Self {
            position: SignedExtent::default(),
            tangent: SignedExtent::default(),
            tangent_holds: true,
            absolute: SignedExtent::default(),
        }
    }
}

impl ResidualExtent {
    /// Adds one frame.
    pub fn add(&mut self, frame: &FrameResidual) {
        for q in frame.position {
            self.position.add(q);
        }
        match frame.tangent {
            Some(t) => t.into_iter().for_each(|q| self.tangent.add(q)),
            None => self.tangent_holds = false,
        }
        for q in frame.absolute {
            self.absolute.add(q);
        }
    }

    /// Adds the frames another extent of the same vertex holds.
    pub fn merge(&mut self, other: &Self) {
        self.position.merge(other.position);
        self.tangent.merge(other.tangent);
        self.tangent_holds &= other.tangent_holds;
        self.absolute.merge(other.absolute);
    }

    /// The narrowest widths that hold every frame added: the tangent-plane normal where every frame
    /// holds in it and it is not wider than the absolute code, else the absolute code.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] for frames that need more than [`MAX_FRAME_BITS`] bits or a field
    /// wider than [`MAX_FIELD_BITS`] (the skin is too far from the source for these bounds).
    pub fn widths(&self) -> Result<ResidualWidths> {
        let position_bits = self.position.bits();
        let absolute_bits = self.absolute.bits();
        let tangent_bits = if self.tangent_holds { self.tangent.bits() } else { u32::MAX };
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
        Ok(widths)
    }
}

/// The stream of vertices whose widths are known, written a frame at a time in any order: each
/// vertex's first bit is where [`ResidualEncoder`] would put it (its frames contiguous, in vertex
/// order), so the finished residuals are [`ResidualEncoder`]'s bit for bit. For an encoder that
/// reads every vertex of one frame at a time (a frame of the source, skinned on demand) instead of
/// every frame of one vertex.
#[derive(Debug, Clone)]
pub struct ResidualStreamLayout {
    frame_count: u32,
    bases: Vec<u32>,
    widths: Vec<ResidualWidths>,
    words: Vec<u32>,
}

impl ResidualStreamLayout {
    /// The stream of vertices of `frame_count` frames with `widths`, all fields 0.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] for a stream past `u32::MAX` bits.
    pub fn new(frame_count: u32, widths: Vec<ResidualWidths>) -> Result<Self> {
        let limit = |bits: u64| Error::LimitExceeded {
            what: "residual stream bits",
            value: bits,
            limit: u32::MAX.into(),
        };
        let mut bases = Vec::with_capacity(widths.len());
        let mut bits = 0u64;
        for w in &widths {
            bases.push(u32::try_from(bits).map_err(|_| limit(bits))?);
            bits += u64::from(w.frame_bits()) * u64::from(frame_count);
            if bits > u64::from(u32::MAX) {
                return Err(limit(bits));
            }
        }
        let words = vec![0u32; bits.div_ceil(32) as usize + 1];
        Ok(Self { frame_count, bases, widths, words })
    }

    /// Writes frame `frame` of vertex `vertex` (fields that fit its widths, as
    /// [`FrameResidual::fields`] gives them).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for a vertex or frame past the layout (nothing is written).
    pub fn write(&mut self, vertex: u32, frame: u32, fields: &ResidualFields) -> Result<()> {
        let (Some(&base), Some(&widths)) =
            (self.bases.get(vertex as usize), self.widths.get(vertex as usize))
        else {
            return Err(Error::OutOfRange {
                what: "vertex of a residual stream layout",
                value: vertex.to_string(),
                expected: "< the layout's vertices",
            });
        };
        if frame >= self.frame_count {
            return Err(Error::OutOfRange {
                what: "frame of a residual stream layout",
                value: frame.to_string(),
                expected: "< the layout's frame count",
            });
        }
        let mut bit = u64::from(base) + u64::from(frame) * u64::from(widths.frame_bits());
        for &q in &fields.position {
            or_field(&mut self.words, &mut bit, q, widths.position_bits);
        }
        for &q in &fields.normal {
            or_field(&mut self.words, &mut bit, q, widths.normal_bits);
        }
        Ok(())
    }

    /// The encoded vertices and the stream (its trailing zero word included).
    pub fn finish(self) -> EncodedResiduals {
        EncodedResiduals { bases: self.bases, widths: self.widths, stream: self.words }
    }
}

/// ORs the low `bits` bits of `value` into `words` at bit `*bit` (least significant first) and
/// moves `*bit` past them; `words` holds every word the field touches.
fn or_field(words: &mut [u32], bit: &mut u64, value: i32, bits: u32) {
    if bits == 0 {
        return;
    }
    let v = (value as u32) & (u32::MAX >> (32 - bits));
    let word = (*bit / 32) as usize;
    let shift = (*bit % 32) as u32;
    words[word] |= v << shift;
    if shift + bits > 32 {
        words[word + 1] |= v >> (32 - shift);
    }
    *bit += u64::from(bits);
}

/// Builds [`EncodedResiduals`] a vertex at a time, in vertex order: each vertex's first bit and
/// widths, its frames appended to the stream.
#[derive(Debug, Clone, Default)]
pub struct ResidualEncoder {
    frame_count: u32,
    writer: ResidualStreamWriter,
    bases: Vec<u32>,
    widths: Vec<ResidualWidths>,
}

impl ResidualEncoder {
    /// An encoder of vertices of `frame_count` stored frames each.
    pub fn new(frame_count: u32) -> Self {
        Self { frame_count, ..Self::default() }
    }

    /// Appends the next vertex.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for a vertex of another frame count; [`Error::LimitExceeded`] for a
    /// stream past `u32::MAX` bits.
    pub fn push(&mut self, vertex: &VertexResidual) -> Result<()> {
        if vertex.fields.len() != self.frame_count as usize {
            return Err(Error::OutOfRange {
                what: "frames of a vertex's residual",
                value: vertex.fields.len().to_string(),
                expected: "the encoder's frame count",
            });
        }
        let base = u32::try_from(self.writer.position()).map_err(|_| Error::LimitExceeded {
            what: "residual stream bits",
            value: self.writer.position(),
            limit: u32::MAX.into(),
        })?;
        for slot in &vertex.fields {
            self.writer.push(slot, vertex.widths);
        }
        if self.writer.position() > u64::from(u32::MAX) {
            return Err(Error::LimitExceeded {
                what: "residual stream bits",
                value: self.writer.position(),
                limit: u32::MAX.into(),
            });
        }
        self.bases.push(base);
        self.widths.push(vertex.widths);
        Ok(())
    }

    /// The encoded vertices and the finished stream.
    pub fn finish(self) -> EncodedResiduals {
        EncodedResiduals { bases: self.bases, widths: self.widths, stream: self.writer.finish() }
    }
}

/// The residual texture as the container stores it ([`crate::container::SkinResidualAnimation`]):
/// `Rg32Uint`, the vertices' `(first bit, widths)` then the stream's words two per texel, laid out
/// `t` at `(t % width, t / width)` no wider or taller than the device's limit, as narrow as its rows allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidualTexture {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Words of the stream (its trailing zero word included).
    pub stream_words: u32,
    /// `width * height * 8` bytes, little-endian, zero past the stream.
    pub bytes: Vec<u8>,
}

/// Lays `encoded` out as the residual texture, within `max_dimension` texels a side.
///
/// # Errors
/// [`Error::LimitExceeded`] for a stream of more than [`MAX_STREAM_WORDS`] words or bases and
/// widths of different lengths; [`Error::ZeroCount`] for no vertices and no stream, or a zero
/// `max_dimension`; [`Error::TextureTooLarge`] when the texels do not fit `max_dimension` squared.
pub fn residual_texture(encoded: &EncodedResiduals, max_dimension: u32) -> Result<ResidualTexture> {
    let vertices = encoded.bases.len();
    if encoded.widths.len() != vertices {
        return Err(Error::LimitExceeded {
            what: "residual widths (one per vertex, as the bases)",
            value: encoded.widths.len() as u64,
            limit: vertices as u64,
        });
    }
    let words = u32::try_from(encoded.stream.len()).ok().filter(|&w| w <= MAX_STREAM_WORDS).ok_or(
        Error::LimitExceeded {
            what: "residual stream words",
            value: encoded.stream.len() as u64,
            limit: MAX_STREAM_WORDS.into(),
        },
    )?;
    let texels = vertices as u64 + u64::from(words).div_ceil(2);
    if texels == 0 || max_dimension == 0 {
        return Err(Error::ZeroCount { what: "residual texture texels or max texture dimension" });
    }
    let too_large = Error::TextureTooLarge {
        vertex_count: u32::try_from(vertices).unwrap_or(u32::MAX),
        frame_count: 1,
        texels,
        max_dimension,
    };
    let (wide, height) = crate::layout::fit_linear(texels, max_dimension).ok_or(too_large)?;
    // The narrowest width of those rows, so the last row is nearly full (a 4096-texel row is 32 KB,
    // which a small asset's stream would otherwise pay in padding).
    let narrow = u32::try_from(texels.div_ceil(u64::from(height))).unwrap_or(wide);
    let width = if texels.div_ceil(u64::from(narrow)) == u64::from(height) { narrow } else { wide };
    let mut bytes = Vec::with_capacity((u64::from(width) * u64::from(height) * 8) as usize);
    for (base, widths) in encoded.bases.iter().zip(&encoded.widths) {
        bytes.extend_from_slice(&base.to_le_bytes());
        bytes.extend_from_slice(&widths.to_bits().to_le_bytes());
    }
    for word in &encoded.stream {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes.resize((u64::from(width) * u64::from(height) * 8) as usize, 0);
    Ok(ResidualTexture { width, height, stream_words: words, bytes })
}

/// The bytes a skin-residual asset's animation takes: its residual texture and the skin it
/// corrects (bone texture, joints, weights and the live morph layer when present), each blob's
/// length given by `len` (a parsed file's blob table: [`blob_table_length`]); `None` for an asset
/// in another format.
pub fn animation_bytes(
    manifest: &crate::container::Manifest,
    len: impl Fn(crate::container::BlobId) -> u64,
) -> Option<u64> {
    let section = manifest.skin_residual.as_ref()?;
    let mut ids = vec![section.texture];
    if let Some(b) = &manifest.bone_animation {
        ids.extend([b.texture, b.joints, b.weights]);
    }
    if let Some(m) = &manifest.morph_animation {
        ids.extend([m.texture, m.weights]);
    }
    Some(ids.into_iter().map(len).sum())
}

/// The length of blob `id` in `manifest`'s blob table (0 past it): [`animation_bytes`]'s `len`
/// for a parsed file.
pub fn blob_table_length(manifest: &crate::container::Manifest, id: crate::container::BlobId) -> u64 {
    manifest.blobs.get(id.0 as usize).map_or(0, |b| b.length)
}

/// [`animation_bytes`] per vertex per stored frame: what a skin-residual asset spends where the
/// other formats spend `VertexFormat::bytes_per_vertex_frame` (8 for packed64).
pub fn bytes_per_vertex_frame(
    manifest: &crate::container::Manifest,
    len: impl Fn(crate::container::BlobId) -> u64,
) -> Option<f64> {
    let frames: u64 = manifest.clips.iter().map(|c| u64::from(c.frame_count)).sum();
    let samples = u64::from(manifest.vertex_count) * frames;
    animation_bytes(manifest, len).map(|b| if samples > 0 { b as f64 / samples as f64 } else { 0.0 })
}

/// `round(x / step)` as an `i32` (saturating: a value that large fails the width check).
fn quantize(x: f32, step: f32) -> i32 {
    (x / step).round().clamp(i32::MIN as f32, i32::MAX as f32) as i32
}

pub(crate) mod reference;
mod section;

pub(crate) use section::check_skin_residual;

#[cfg(test)]
#[path = "skin_residual_tests.rs"]
mod tests;
