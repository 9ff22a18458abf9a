//! The rigid-body mode: pieces that move as units.
//!
//! A rigid asset ([`crate::container::RigidAnimation`]) stores, instead of one texel per vertex per
//! frame, **one texel per piece per frame** in the *piece texture* (`Rgba32Uint`, 16 bytes, linearised
//! like the vertex animation texture with pieces in place of vertices: texel
//! `t = frame * piece_count + piece` at `(t % width, t / width)`; the baker makes it one column per
//! piece and one row per frame, `width == piece_count`, whenever that fits the device), and **one texel per vertex** in the
//! *rigid vertex texture* (`Rgba32Uint`, texel `v` at `(v % width, v / width)`): the vertex's piece
//! index and the rest-pose position of that piece's pivot.
//!
//! A vertex at frame `f` is `pivot(f) + rotate(q(f), rest_position - rest_pivot)` and its normal
//! `rotate(q(f), rest_normal)`, where `pivot(f)` is the piece's pivot at frame `f` (object space,
//! metres) and `q(f)` the piece's rotation from its rest orientation, a unit quaternion
//! `[x, y, z, w]`. Rest positions and normals are the asset's `RestPosition` / `RestNormal` streams.
//!
//! ## Piece texel (`Rgba32Uint`, little-endian words)
//!
//! | word | bits 0..16 | bits 16..32 |
//! |---|---|---|
//! | 0 | pivot x, unorm16 in the pivot box | pivot y, unorm16 |
//! | 1 | pivot z, unorm16 | quaternion x, snorm16 |
//! | 2 | quaternion y, snorm16 | quaternion z, snorm16 |
//! | 3 | quaternion w, snorm16 | reserved, 0 |
//!
//! `unorm16`: `q / 65535`, the box coordinate `min + (q / 65535) * extent`; `snorm16`: the two's
//! complement value `i` read as `max(i / 32767, -1)`. The baker keeps each piece's quaternion
//! track in one hemisphere (consecutive frames have a dot product `>= 0`,
//! [`crate::encoding::make_hemisphere_continuous`]; the reader does not require it), and the
//! decoder also aligns each sampled quaternion with the first fetched one before blending, so that interpolation (normalised lerp) never
//! passes through zero, even across a loop's wrap or a cross-fade.
//!
//! ## Bounds (derived from the format, tested)
//!
//! - Translation: per axis `<= extent / 65535 / 2` (half the quantum of the pivot box,
//!   [`translation_bound`]), plus f32 rounding of the decode (a few ulps of the box's magnitude).
//! - Rotation: each component is rounded by at most `0.5 / 32767`, so the quaternion moves by at most
//!   `e = sqrt(4) * 0.5 / 32767 = 1 / 32767` (Euclidean), its direction by at most `asin(e)` and the
//!   rotation it stands for by twice that: [`ROTATION_BOUND_RAD`] `= 2 asin(1 / 32767)`, about
//!   0.0035 degrees.
//!
//! ## Decode (CPU reference and shader, the same f32 operations)
//!
//! Per clip: the frames and weights of [`crate::playback::clip_sample`]; the normalised pivots summed
//! with the weights; each quaternion negated when its dot with the quaternion of the sample's first
//! fetched frame is negative, then summed with the weights. A cross-fade mixes clip A and clip B the
//! same way (`a * (1 - w) + b * w`, B aligned with A). The quaternion is normalised once at the end
//! (the zero quaternion, which no valid track produces, reads as the identity), the pivot
//! denormalised from the box, and the vertex placed as above.

pub mod reference;
mod section;

pub(crate) use section::*;

use crate::encoding::PositionBounds;
use crate::{Error, Result};

/// Texel format of the piece texture and of the rigid vertex texture.
pub const RIGID_TEXEL_FORMAT: crate::encoding::TexelFormat = crate::encoding::TexelFormat::Rgba32Uint;

/// Bytes per texel of [`RIGID_TEXEL_FORMAT`]: 16, i.e. 16 bytes per piece per frame.
pub const RIGID_TEXEL_BYTES: u32 = 16;

/// Largest value of a unorm16 pivot coordinate (`2^16 - 1`).
pub const PIVOT_QUANTUM_STEPS: u32 = 65_535;

/// Largest value of an snorm16 quaternion component (`2^15 - 1`).
pub const QUAT_SNORM_MAX: i32 = 32_767;

/// The rotation error bound of the piece texel, radians: `2 asin(1 / 32767)` (about `6.1e-5` rad,
/// 0.0035 degrees). See the module docs for the derivation.
pub const ROTATION_BOUND_RAD: f64 = 6.103_701_896_146_916e-5;

/// [`ROTATION_BOUND_RAD`] in degrees.
pub const ROTATION_BOUND_DEG: f64 = ROTATION_BOUND_RAD * 180.0 / std::f64::consts::PI;

/// Half the quantum of the pivot box per axis, metres: `extent / 65535 / 2`. The pivot translation
/// of every encoded texel is within this of the source pivot on each axis (plus f32 rounding).
pub fn translation_bound(bounds: &PositionBounds) -> [f64; 3] {
    bounds.extent.map(|e| f64::from(e) / f64::from(PIVOT_QUANTUM_STEPS) / 2.0)
}

/// One decoded piece texel: the pivot, normalised into the pivot box (`[0, 1]` per axis), and the
/// quaternion `[x, y, z, w]` as stored (each component in `[-1, 1]`, not normalised).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceSample {
    /// Pivot in box coordinates, `[0, 1]` per axis.
    pub pivot: [f32; 3],
    /// Quaternion `[x, y, z, w]`, components in `[-1, 1]`.
    pub rotation: [f32; 4],
}

fn unorm16(v: f32) -> u32 {
    // `v` is in [0, 1] (PositionBounds::normalize clamps), so the product is in [0, 65535].
    (v * PIVOT_QUANTUM_STEPS as f32).round() as u32
}

fn snorm16(v: f32) -> u32 {
    let i = (v.clamp(-1.0, 1.0) * QUAT_SNORM_MAX as f32).round() as i32;
    (i as u32) & 0xffff
}

fn snorm16_decode(bits: u32) -> f32 {
    // Sign-extend the low 16 bits (as WGSL's `extractBits` of an i32 does).
    let i = i32::from(bits as u16 as i16);
    (i as f32 / QUAT_SNORM_MAX as f32).max(-1.0)
}

/// Encodes one piece at one frame: `pivot` (object space, metres) normalised into `bounds` and
/// quantised, `rotation` (`[x, y, z, w]`, unit length expected; any finite value is stored clamped
/// to `[-1, 1]` per component) as snorm16. The caller keeps the track in one hemisphere
/// ([`crate::encoding::make_hemisphere_continuous`]).
///
/// # Errors
/// [`Error::NotFinite`] if a component of `pivot` or `rotation` is NaN or infinite.
pub fn encode_piece_texel(bounds: &PositionBounds, pivot: [f32; 3], rotation: [f32; 4]) -> Result<[u32; 4]> {
    if pivot.iter().chain(&rotation).any(|v| !v.is_finite()) {
        return Err(Error::NotFinite { what: "rigid piece transform" });
    }
    let n = bounds.normalize(pivot);
    let [tx, ty, tz] = n.map(unorm16);
    let [qx, qy, qz, qw] = rotation.map(snorm16);
    Ok([tx | ty << 16, tz | qx << 16, qy | qz << 16, qw])
}

/// Decodes a piece texel (any bit pattern; the reserved bits are ignored): what the shader's
/// `vat_rigid_piece_texel` returns.
pub fn decode_piece_texel(texel: [u32; 4]) -> PieceSample {
    let steps = PIVOT_QUANTUM_STEPS as f32;
    let pivot = [
        (texel[0] & 0xffff) as f32 / steps,
        (texel[0] >> 16) as f32 / steps,
        (texel[1] & 0xffff) as f32 / steps,
    ];
    let rotation = [
        snorm16_decode(texel[1] >> 16),
        snorm16_decode(texel[2]),
        snorm16_decode(texel[2] >> 16),
        snorm16_decode(texel[3]),
    ];
    PieceSample { pivot, rotation }
}

/// Encodes the rigid vertex texel of a vertex of piece `piece` whose piece pivot rests at
/// `rest_pivot` (object space, metres): `[x bits, y bits, z bits, piece]` (f32 bit patterns).
pub fn encode_vertex_texel(piece: u32, rest_pivot: [f32; 3]) -> [u32; 4] {
    [rest_pivot[0].to_bits(), rest_pivot[1].to_bits(), rest_pivot[2].to_bits(), piece]
}

/// Decodes a rigid vertex texel: `(piece, rest_pivot)`.
pub fn decode_vertex_texel(texel: [u32; 4]) -> (u32, [f32; 3]) {
    (texel[3], [f32::from_bits(texel[0]), f32::from_bits(texel[1]), f32::from_bits(texel[2])])
}

/// Reads texel `index` (16 bytes, four little-endian `u32`) of a `Rgba32Uint` texture.
///
/// # Errors
/// [`Error::IndexOutOfRange`] if the texture is too short.
pub fn texel_at(bytes: &[u8], index: u64) -> Result<[u32; 4]> {
    let count = bytes.len() as u64 / u64::from(RIGID_TEXEL_BYTES);
    let start = usize::try_from(index)
        .ok()
        .and_then(|i| i.checked_mul(RIGID_TEXEL_BYTES as usize))
        .filter(|_| index < count)
        .ok_or(Error::IndexOutOfRange { what: "rigid texel index", index, count })?;
    let t = &bytes[start..start + RIGID_TEXEL_BYTES as usize];
    Ok(std::array::from_fn(|k| u32::from_le_bytes([t[4 * k], t[4 * k + 1], t[4 * k + 2], t[4 * k + 3]])))
}

/// `dot(a, b)` of two quaternions, summed left to right (`vat_rigid_dot`).
pub fn quat_dot(a: [f32; 4], b: [f32; 4]) -> f32 {
    ((a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]) + a[3] * b[3]
}

/// `q`, negated when its dot with `reference` is negative (`vat_rigid_align`).
pub fn quat_align(q: [f32; 4], reference: [f32; 4]) -> [f32; 4] {
    if quat_dot(q, reference) < 0.0 { q.map(|c| -c) } else { q }
}

/// `q / |q|`; the zero quaternion (and any whose squared length is not positive) gives the identity
/// `[0, 0, 0, 1]` (`vat_rigid_normalize`).
pub fn quat_normalize(q: [f32; 4]) -> [f32; 4] {
    let d = quat_dot(q, q);
    if d > 0.0 {
        let inv = 1.0 / d.sqrt();
        q.map(|c| c * inv)
    } else {
        [0.0, 0.0, 0.0, 1.0]
    }
}

/// Rotates `v` by the unit quaternion `q` (`vat_rigid_rotate`):
/// `v + 2 * cross(u, cross(u, v) + w * v)` with `u = q.xyz`, component by component in the order the
/// shader computes it.
pub fn quat_rotate(q: [f32; 4], v: [f32; 3]) -> [f32; 3] {
    let (u, w) = ([q[0], q[1], q[2]], q[3]);
    let c1 = cross(u, v);
    let t = [c1[0] + w * v[0], c1[1] + w * v[1], c1[2] + w * v[2]];
    let c2 = cross(u, t);
    [v[0] + 2.0 * c2[0], v[1] + 2.0 * c2[1], v[2] + 2.0 * c2[2]]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// The rotation angle (radians, in `[0, pi]`) between two quaternions of any non-zero length, in
/// f64: the angle of `a^-1 * b`, `2 atan2(|vector part|, |scalar part|)`. `q` and `-q` are the same
/// rotation (angle 0). Verification measures rotation errors with it.
pub fn rotation_angle_between(a: [f32; 4], b: [f32; 4]) -> f64 {
    let a = a.map(f64::from);
    let b = b.map(f64::from);
    let na = (a.iter().map(|c| c * c).sum::<f64>()).sqrt();
    let nb = (b.iter().map(|c| c * c).sum::<f64>()).sqrt();
    if na == 0.0 || nb == 0.0 {
        return std::f64::consts::PI;
    }
    // conj(a) * b: scalar = a.w b.w + a.xyz . b.xyz, vector = a.w b.xyz - b.w a.xyz - a.xyz x b.xyz.
    let s = a[3] * b[3] + a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let cx = a[1] * b[2] - a[2] * b[1];
    let cy = a[2] * b[0] - a[0] * b[2];
    let cz = a[0] * b[1] - a[1] * b[0];
    let vx = a[3] * b[0] - b[3] * a[0] - cx;
    let vy = a[3] * b[1] - b[3] * a[1] - cy;
    let vz = a[3] * b[2] - b[3] * a[2] - cz;
    let v = (vx * vx + vy * vy + vz * vz).sqrt();
    // atan2 is scale-invariant: no need to normalise the product.
    2.0 * v.atan2(s.abs())
}

/// The rigid mode's entry in the mode table ([`crate::modes::MODES`]).
pub(crate) const ENTRY: crate::modes::ModeEntry = crate::modes::ModeEntry {
    mode: crate::container::VatMode::Rigid,
    present: |m| m.rigid_animation.is_some(),
    validate: validate_rigid_section,
    textures: |asset| {
        let [pieces, vertices] = rigid_textures(asset);
        vec![("rigid_pieces", "vat rigid pieces", pieces), ("rigid_vertices", "vat rigid vertices", vertices)]
    },
    program: Some(crate::pipeline::Program::Rigid),
    decode_entry_point: Some(crate::gpu::ENTRY_POINT_DECODE_RIGID),
};

/// The textures of the rigid mode, `[rigid_pieces, rigid_vertices]` (group 1, bindings 15 and 16),
/// borrowed from a validated asset: the piece texture and the rigid vertex texture of its
/// [`crate::container::RigidAnimation`] (both [`crate::rigid::RIGID_TEXEL_FORMAT`]), or two 1x1 zero
/// `Rgba32Uint` stand-ins for a soft asset (its pipelines never read them), so that every asset
/// binds the same layout. Backends upload these as they are; they never re-derive them.
pub fn rigid_textures<'a>(asset: &crate::container::Asset<'a>) -> [crate::gpu::TextureData<'a>; 2] {
    let dummy = crate::gpu::TextureData {
        width: 1,
        height: 1,
        format: crate::encoding::TexelFormat::Rgba32Uint,
        bytes: &crate::gpu::ZERO_RGBA32U_TEXEL,
    };
    let Some(ra) = asset.manifest().rigid_animation.as_ref() else { return [dummy, dummy] };
    match (asset.get_blob(ra.pieces), asset.get_blob(ra.vertices)) {
        (Some(pieces), Some(vertices)) => [
            crate::gpu::TextureData {
                width: ra.layout.width,
                height: ra.layout.height,
                format: crate::rigid::RIGID_TEXEL_FORMAT,
                bytes: pieces,
            },
            crate::gpu::TextureData {
                width: ra.vertex_layout.width,
                height: ra.vertex_layout.height,
                format: crate::rigid::RIGID_TEXEL_FORMAT,
                bytes: vertices,
            },
        ],
        // A parsed asset has both blobs; only a hand-made Asset could lack them.
        _ => [dummy, dummy],
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;

    /// A deterministic unit quaternion stream (xorshift), covering every hemisphere.
    fn quats(n: usize) -> Vec<[f32; 4]> {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        (0..n)
            .map(|_| {
                loop {
                    let q = [next(), next(), next(), next()];
                    let d = quat_dot(q, q);
                    if d > 1e-3 && d <= 1.0 {
                        break quat_normalize(q);
                    }
                }
            })
            .collect()
    }

    #[test]
    fn rotation_bound_is_the_derived_value() {
        let derived = 2.0 * (1.0f64 / f64::from(QUAT_SNORM_MAX)).asin();
        assert!((derived - ROTATION_BOUND_RAD).abs() < 1e-15, "{derived}");
        const { assert!(ROTATION_BOUND_DEG < 0.05, "the issue's 0.05 degree target") };
    }

    #[test]
    fn rotation_error_stays_within_the_bound_and_comes_close_to_it() {
        let mut worst = 0.0f64;
        for q in quats(200_000) {
            let texel =
                encode_piece_texel(&PositionBounds { min: [0.0; 3], extent: [1.0; 3] }, [0.5; 3], q).unwrap();
            let decoded = quat_normalize(decode_piece_texel(texel).rotation);
            let e = rotation_angle_between(q, decoded);
            // f32 normalisation adds a few 1e-7 rad at most.
            assert!(e <= ROTATION_BOUND_RAD + 1e-6, "{q:?}: {e} rad");
            worst = worst.max(e);
        }
        // The bound is tight enough to mean something: random rotations reach a good part of it.
        assert!(worst > 0.3 * ROTATION_BOUND_RAD, "worst {worst}");
    }

    #[test]
    fn translation_error_stays_within_half_a_quantum() {
        let bounds = PositionBounds { min: [-3.0, 0.0, -1.5], extent: [6.0, 4.25, 3.0] };
        let bound = translation_bound(&bounds);
        let mut worst = [0.0f64; 3];
        for k in 0..20_000 {
            let f = k as f32 / 20_000.0;
            let p = [-3.0 + 6.0 * f, 4.25 * (1.0 - f) * f * 4.0, -1.5 + 3.0 * (f * 7.0).fract()];
            let texel = encode_piece_texel(&bounds, p, [0.0, 0.0, 0.0, 1.0]).unwrap();
            let back = bounds.denormalize(decode_piece_texel(texel).pivot);
            for a in 0..3 {
                let e = (f64::from(back[a]) - f64::from(p[a])).abs();
                // f32: the box coordinates are below 8 m, so 2 ulps are below 2e-6 m.
                assert!(e <= bound[a] + 2e-6, "axis {a}: {e} > {}", bound[a]);
                worst[a] = worst[a].max(e);
            }
        }
        for a in 0..3 {
            assert!(worst[a] > 0.5 * bound[a], "axis {a}: worst {} of {}", worst[a], bound[a]);
        }
    }

    #[test]
    fn snorm_extremes_and_reserved_bits() {
        let b = PositionBounds { min: [0.0; 3], extent: [0.0; 3] };
        let t = encode_piece_texel(&b, [0.0; 3], [-1.0, 1.0, 0.0, -1.0]).unwrap();
        assert_eq!(t[3] >> 16, 0, "reserved bits are zero");
        let d = decode_piece_texel(t);
        assert_eq!(d.rotation, [-1.0, 1.0, 0.0, -1.0]);
        // 0x8000 (-32768) reads as -1, never below.
        let d = decode_piece_texel([0, 0x8000 << 16, 0, 0x8000 | 0xffff_0000]);
        assert_eq!(d.rotation[0], -1.0);
        assert_eq!(d.rotation[3], -1.0);
        // Zero extent: every pivot decodes to the box corner.
        assert_eq!(d.pivot, [0.0; 3]);
        assert!(encode_piece_texel(&b, [f32::NAN, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]).is_err());
        assert!(encode_piece_texel(&b, [0.0; 3], [0.0, f32::INFINITY, 0.0, 1.0]).is_err());
    }

    #[test]
    fn vertex_texel_round_trips_and_texel_at_checks_the_length() {
        let t = encode_vertex_texel(7, [1.5, -0.25, 3.0]);
        assert_eq!(decode_vertex_texel(t), (7, [1.5, -0.25, 3.0]));
        let bytes: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(texel_at(&bytes, 0).unwrap(), t);
        assert!(matches!(texel_at(&bytes, 1), Err(Error::IndexOutOfRange { .. })));
        assert!(texel_at(&bytes[..15], 0).is_err());
        assert!(texel_at(&bytes, u64::MAX).is_err());
    }

    #[test]
    fn rotate_matches_the_matrix_and_align_picks_the_near_sign() {
        // 90 degrees about +Y maps +Z to +X.
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let r = quat_rotate([0.0, h, 0.0, h], [0.0, 0.0, 1.0]);
        assert!((r[0] - 1.0).abs() < 1e-6 && r[1].abs() < 1e-6 && r[2].abs() < 1e-6, "{r:?}");
        let q = [0.0, h, 0.0, h];
        assert_eq!(quat_align(q.map(|c| -c), q), q);
        assert_eq!(quat_align(q, q), q);
        assert_eq!(quat_normalize([0.0; 4]), [0.0, 0.0, 0.0, 1.0]);
        assert!(rotation_angle_between(q, q.map(|c| -c)) < 1e-12);
        let e = rotation_angle_between([0.0, 0.0, 0.0, 1.0], q);
        assert!((e - std::f64::consts::FRAC_PI_2).abs() < 1e-6, "{e}");
    }
}
