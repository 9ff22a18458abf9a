//! The sprite (particle) mode: camera-facing cards, one per particle slot.
//!
//! A sprite asset stores **one texel per slot per frame** in the *particle texture* (`Rgba32Uint`,
//! 16 bytes, four little-endian `u32` words), linearised like the piece texture of
//! [`crate::rigid`]: texel `t = frame * slot_count + slot`. A slot holds at most one particle per
//! frame; a slot without one is the all-zero [`DEAD_TEXEL`].
//!
//! ## Particle texel (`Rgba32Uint`, little-endian words)
//!
//! | word | bits 0..16 | bits 16..32 |
//! |---|---|---|
//! | 0 | centre x, unorm16 in the particle box | centre y, unorm16 |
//! | 1 | centre z, unorm16 | size, unorm16 of `size / max_size` |
//! | 2 | colour r (bits 0..8), g (8..16) | colour b (16..24), a (24..32), unorm8, linear |
//! | 3 | rotation, snorm16 of `angle / pi` | bit 16 [`FLAG_ALIVE`], bit 17 [`FLAG_CONTINUES`], bits 18..32 zero |
//!
//! - Centre: object space, metres, normalised into the particle box
//!   ([`PositionBounds::normalize`], clamped to it) and stored as `round(n * 65535)`; decoded
//!   `q / 65535`, then [`PositionBounds::denormalize`].
//! - Size: the card's edge length in metres, clamped to `[0, max_size]`, stored as
//!   `round(size / max_size * 65535)` (0 when `max_size` is 0); decoded `q / 65535 * max_size`.
//! - Colour: linear RGBA, each `round(clamp(c, 0, 1) * 255)`; decoded `q / 255`.
//! - Rotation: radians about the view axis, wrapped into `[-pi, pi]`, stored as
//!   `round(angle / pi * 32767)` (two's complement); decoded `max(i / 32767, -1) * pi`.
//! - [`FLAG_CONTINUES`]: the slot holds the same particle at the clip's next frame (for the last
//!   frame of a looping clip: at its first frame), so the two may be interpolated.
//!
//! ## Bounds (derived from the format, tested)
//!
//! Half a quantum of each field ([`error_bounds`]): centre `extent / 65535 / 2` per axis, size
//! `max_size / 65535 / 2`, colour `0.5 / 255`, rotation `pi / 32767 / 2` radians (an angle equal
//! modulo `2 pi`), each plus f32 rounding of the decode (a few ulps).
//!
//! ## Sampling (CPU reference and shader, the same f32 operations)
//!
//! [`sample_particle`] takes the texel of frame `b` and of the clip's next frame and a weight
//! `w` in `[0, 1]`. When the first is alive with [`FLAG_CONTINUES`] and the second is alive, every
//! field is interpolated as `a + (c - a) * w` (sub, mul, add) on the decoded values, the centre in
//! box coordinates before denormalising; the rotation as `ra + wrap(rc - ra) * w`, the shortest arc
//! (the result may leave `[-pi, pi]` by less than `pi`, the same angle). Otherwise the nearest
//! frame wins: `w < 0.5` reads the first texel, else the second; a dead one gives no particle.

pub mod reference;
mod section;

pub(crate) use section::*;

use crate::encoding::PositionBounds;
use crate::{Error, Result};
use std::f32::consts::PI;

/// Texel format of the particle texture.
pub const SPRITE_TEXEL_FORMAT: crate::encoding::TexelFormat = crate::encoding::TexelFormat::Rgba32Uint;

/// Bytes per texel of [`SPRITE_TEXEL_FORMAT`]: 16, i.e. 16 bytes per slot per frame.
pub const SPRITE_TEXEL_BYTES: u32 = 16;

/// Word 3, bit 16: the slot holds a particle at this frame.
pub const FLAG_ALIVE: u32 = 1 << 16;

/// Word 3, bit 17: the slot holds the same particle at the clip's next frame.
pub const FLAG_CONTINUES: u32 = 1 << 17;

/// The texel of a slot without a particle: all zero (in particular without [`FLAG_ALIVE`]).
pub const DEAD_TEXEL: [u32; 4] = [0; 4];

/// Largest value of a unorm16 field (`2^16 - 1`).
pub const UNORM16_STEPS: u32 = 65_535;

/// Largest value of the snorm16 rotation (`2^15 - 1`).
pub const ROTATION_SNORM_MAX: i32 = 32_767;

/// One particle at one frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Particle {
    /// Centre, object space, metres.
    pub position: [f32; 3],
    /// Edge length of the card, metres, `>= 0`.
    pub size: f32,
    /// Linear RGBA colour, each in `[0, 1]`.
    pub color: [f32; 4],
    /// Rotation of the card about the view axis, radians (counter-clockwise on screen).
    pub rotation: f32,
}

/// What the particle texel is quantised against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpriteBounds {
    /// The box holding every particle centre (metres).
    pub position: PositionBounds,
    /// The largest card size (metres, finite, `>= 0`); size `max_size` is stored as 65535.
    pub max_size: f32,
}

/// Half quanta of the particle texel: every field of an encoded particle decodes within these of
/// the source (plus f32 rounding), see the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpriteErrorBounds {
    /// Centre, per axis, metres: `extent / 65535 / 2`.
    pub position: [f64; 3],
    /// Size, metres: `max_size / 65535 / 2`.
    pub size: f64,
    /// Each colour channel: `0.5 / 255`.
    pub color: f64,
    /// Rotation, radians: `pi / 32767 / 2`.
    pub rotation_rad: f64,
}

/// The error bounds of particles encoded against `b`.
pub fn error_bounds(b: &SpriteBounds) -> SpriteErrorBounds {
    let steps = f64::from(UNORM16_STEPS);
    SpriteErrorBounds {
        position: b.position.extent.map(|e| f64::from(e) / steps / 2.0),
        size: f64::from(b.max_size) / steps / 2.0,
        color: 0.5 / 255.0,
        rotation_rad: std::f64::consts::PI / f64::from(ROTATION_SNORM_MAX) / 2.0,
    }
}

/// `angle` wrapped into `[-pi, pi]` (f32): `angle - 2 pi * round(angle / (2 pi))`, clamped.
pub fn wrap_angle(angle: f32) -> f32 {
    let tau = 2.0 * PI;
    (angle - tau * (angle / tau).round()).clamp(-PI, PI)
}

/// The shortest-arc form of an angle difference `d` in `[-2 pi, 2 pi]` (the difference of two
/// decoded rotations): `d - 2 pi` above `pi`, `d + 2 pi` below `-pi`, else `d`
/// (`vat_sprite_wrap_delta`).
pub fn wrap_delta(d: f32) -> f32 {
    if d > PI {
        d - 2.0 * PI
    } else if d < -PI {
        d + 2.0 * PI
    } else {
        d
    }
}

fn unorm16(v: f32) -> u32 {
    // `v` is clamped to [0, 1] (NaN was refused), so the product is in [0, 65535].
    (v.clamp(0.0, 1.0) * UNORM16_STEPS as f32).round() as u32
}

fn unorm8(v: f32) -> u32 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u32
}

fn snorm16_decode(bits: u32) -> f32 {
    let i = i32::from(bits as u16 as i16);
    (i as f32 / ROTATION_SNORM_MAX as f32).max(-1.0)
}

/// Encodes particle `p` against `b`; `continues` sets [`FLAG_CONTINUES`]. The size is clamped to
/// `[0, max_size]`, colours to `[0, 1]`, the centre to the box; the rotation is wrapped.
///
/// # Errors
/// [`Error::NotFinite`] if a field of `p` or of `b` is NaN or infinite; [`Error::OutOfRange`] if
/// `b.max_size` is negative.
pub fn encode_particle_texel(b: &SpriteBounds, p: &Particle, continues: bool) -> Result<[u32; 4]> {
    let fields = p.position.iter().chain(&p.color).chain([&p.size, &p.rotation]);
    if fields.into_iter().any(|v| !v.is_finite()) {
        return Err(Error::NotFinite { what: "particle" });
    }
    let box_fields = b.position.min.iter().chain(&b.position.extent).chain([&b.max_size]);
    if box_fields.into_iter().any(|v| !v.is_finite()) {
        return Err(Error::NotFinite { what: "sprite bounds" });
    }
    if b.max_size < 0.0 {
        return Err(Error::OutOfRange {
            what: "sprite max_size",
            value: b.max_size.to_string(),
            expected: ">= 0 metres",
        });
    }
    let [x, y, z] = b.position.normalize(p.position).map(unorm16);
    let size = if b.max_size > 0.0 { unorm16(p.size / b.max_size) } else { 0 };
    let [r, g, bl, a] = p.color.map(unorm8);
    let rot = (wrap_angle(p.rotation) / PI * ROTATION_SNORM_MAX as f32).round() as i32;
    let flags = FLAG_ALIVE | if continues { FLAG_CONTINUES } else { 0 };
    Ok([x | y << 16, z | size << 16, r | g << 8 | bl << 16 | a << 24, (rot as u32 & 0xffff) | flags])
}

/// The decoded fields of a texel with the centre still in box coordinates.
struct Raw {
    n: [f32; 3],
    size: f32,
    color: [f32; 4],
    rotation: f32,
}

fn decode_raw(b: &SpriteBounds, t: [u32; 4]) -> Raw {
    let steps = UNORM16_STEPS as f32;
    Raw {
        n: [(t[0] & 0xffff) as f32 / steps, (t[0] >> 16) as f32 / steps, (t[1] & 0xffff) as f32 / steps],
        size: (t[1] >> 16) as f32 / steps * b.max_size,
        color: std::array::from_fn(|k| ((t[2] >> (8 * k)) & 0xff) as f32 / 255.0),
        rotation: snorm16_decode(t[3]) * PI,
    }
}

fn is_alive(t: [u32; 4]) -> bool {
    t[3] & FLAG_ALIVE != 0
}

fn lerp(a: f32, c: f32, w: f32) -> f32 {
    a + (c - a) * w
}

/// Decodes a particle texel: `None` without [`FLAG_ALIVE`], else the particle and whether
/// [`FLAG_CONTINUES`] is set. Bits 18..32 of word 3 are ignored.
pub fn decode_particle_texel(b: &SpriteBounds, texel: [u32; 4]) -> Option<(Particle, bool)> {
    if !is_alive(texel) {
        return None;
    }
    let r = decode_raw(b, texel);
    let p = Particle {
        position: b.position.denormalize(r.n),
        size: r.size,
        color: r.color,
        rotation: r.rotation,
    };
    Some((p, texel[3] & FLAG_CONTINUES != 0))
}

/// The particle of a slot between two frames, what the shader computes (`vat_sprite_sample`):
/// `first` is the slot's texel at frame `b`, `second` at the clip's next frame, `weight` in
/// `[0, 1]`. See the module docs for the rule and the operation order.
pub fn sample_particle(b: &SpriteBounds, first: [u32; 4], second: [u32; 4], weight: f32) -> Option<Particle> {
    let blend = is_alive(first) && first[3] & FLAG_CONTINUES != 0 && is_alive(second);
    if !blend {
        let nearest = if weight < 0.5 { first } else { second };
        return decode_particle_texel(b, nearest).map(|(p, _)| p);
    }
    let (a, c) = (decode_raw(b, first), decode_raw(b, second));
    let n = std::array::from_fn(|k| lerp(a.n[k], c.n[k], weight));
    Some(Particle {
        position: b.position.denormalize(n),
        size: lerp(a.size, c.size, weight),
        color: std::array::from_fn(|k| lerp(a.color[k], c.color[k], weight)),
        rotation: a.rotation + wrap_delta(c.rotation - a.rotation) * weight,
    })
}

/// Reads texel `index` (16 bytes, four little-endian `u32`) of the particle texture.
///
/// # Errors
/// [`Error::IndexOutOfRange`] if the texture is too short.
pub fn texel_at(bytes: &[u8], index: u64) -> Result<[u32; 4]> {
    crate::rigid::texel_at(bytes, index)
}

/// The sprite mode's entry in the mode table ([`crate::modes::MODES`]).
pub(crate) const ENTRY: crate::modes::ModeEntry = crate::modes::ModeEntry {
    mode: crate::container::VatMode::Sprite,
    present: |m| m.sprite_animation.is_some(),
    validate: validate_sprite_section,
    textures: |asset| vec![("sprite_particles", "vat sprite particles", sprite_particle_texture(asset))],
    program: Some(crate::pipeline::Program::Sprite),
    decode_entry_point: Some(crate::gpu::ENTRY_POINT_DECODE_SPRITE),
};

/// The sprite mode's particle texture (group 1, binding 23), borrowed from a validated asset: that
/// of its [`crate::container::SpriteAnimation`] ([`crate::sprite::SPRITE_TEXEL_FORMAT`]), or a 1x1
/// zero `Rgba32Uint` stand-in for other assets (their pipelines never read it).
pub fn sprite_particle_texture<'a>(asset: &crate::container::Asset<'a>) -> crate::gpu::TextureData<'a> {
    let dummy = crate::gpu::TextureData {
        width: 1,
        height: 1,
        format: crate::encoding::TexelFormat::Rgba32Uint,
        bytes: &crate::gpu::ZERO_RGBA32U_TEXEL,
    };
    let Some(sa) = asset.manifest().sprite_animation.as_ref() else { return dummy };
    match asset.get_blob(sa.particles) {
        Some(bytes) => crate::gpu::TextureData {
            width: sa.layout.width,
            height: sa.layout.height,
            format: crate::sprite::SPRITE_TEXEL_FORMAT,
            bytes,
        },
        // A parsed asset has the blob; only a hand-made Asset could lack it.
        None => dummy,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;

    fn bounds() -> SpriteBounds {
        SpriteBounds {
            position: PositionBounds { min: [-2.0, 0.0, -1.0], extent: [4.0, 6.5, 2.0] },
            max_size: 0.35,
        }
    }

    /// A deterministic stream in `[0, 1)` (xorshift).
    fn stream() -> impl FnMut() -> f32 {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    #[test]
    fn round_trip_within_half_quanta_and_close_to_them() {
        let b = bounds();
        let e = error_bounds(&b);
        let mut next = stream();
        let mut worst = [0.0f64; 6]; // x y z size colour rotation
        for _ in 0..50_000 {
            let p = Particle {
                position: [-2.0 + 4.0 * next(), 6.5 * next(), -1.0 + 2.0 * next()],
                size: 0.35 * next(),
                color: [next(), next(), next(), next()],
                rotation: (next() * 2.0 - 1.0) * PI,
            };
            let continues = next() < 0.5;
            let t = encode_particle_texel(&b, &p, continues).unwrap();
            assert_eq!(t[3] >> 18, 0, "bits 18..32 are zero");
            let (d, c) = decode_particle_texel(&b, t).unwrap();
            assert_eq!(c, continues);
            for (a, w) in worst.iter_mut().take(3).enumerate() {
                let err = (f64::from(d.position[a]) - f64::from(p.position[a])).abs();
                assert!(err <= e.position[a] + 2e-6, "axis {a}: {err}");
                *w = w.max(err / e.position[a]);
            }
            let err = (f64::from(d.size) - f64::from(p.size)).abs();
            assert!(err <= e.size + 1e-7, "size {err}");
            worst[3] = worst[3].max(err / e.size);
            for k in 0..4 {
                let err = (f64::from(d.color[k]) - f64::from(p.color[k])).abs();
                assert!(err <= e.color + 1e-7, "colour {k}: {err}");
                worst[4] = worst[4].max(err / e.color);
            }
            let err = f64::from(wrap_delta(d.rotation - p.rotation)).abs();
            assert!(err <= e.rotation_rad + 1e-6, "rotation {err}");
            worst[5] = worst[5].max(err / e.rotation_rad);
        }
        for (k, w) in worst.iter().enumerate() {
            assert!(*w > 0.3, "field {k}: worst {w} of its bound");
        }
    }

    #[test]
    fn flags_dead_texel_clamps_and_refusals() {
        let b = bounds();
        assert_eq!(decode_particle_texel(&b, DEAD_TEXEL), None);
        assert_eq!(sample_particle(&b, DEAD_TEXEL, DEAD_TEXEL, 0.3), None);
        let p =
            Particle { position: [9.0, -1.0, 0.0], size: 5.0, color: [2.0, -1.0, 0.5, 1.0], rotation: 0.0 };
        let t = encode_particle_texel(&b, &p, false).unwrap();
        assert_eq!(t[3] & (FLAG_ALIVE | FLAG_CONTINUES), FLAG_ALIVE);
        let (d, c) = decode_particle_texel(&b, t).unwrap();
        assert!(!c);
        assert_eq!(d.position[0], 2.0);
        assert_eq!(d.position[1], 0.0);
        assert_eq!(d.size, 0.35);
        assert_eq!(d.color[..2], [1.0, 0.0]);
        let negative = Particle { size: -1.0, ..p };
        assert_eq!(
            decode_particle_texel(&b, encode_particle_texel(&b, &negative, true).unwrap()).unwrap().0.size,
            0.0
        );
        for bad in [
            Particle { position: [f32::NAN, 0.0, 0.0], ..p },
            Particle { size: f32::INFINITY, ..p },
            Particle { color: [0.0, f32::NAN, 0.0, 0.0], ..p },
            Particle { rotation: f32::NEG_INFINITY, ..p },
        ] {
            assert!(
                matches!(encode_particle_texel(&b, &bad, false), Err(Error::NotFinite { .. })),
                "{bad:?}"
            );
        }
        let neg = SpriteBounds { max_size: -1.0, ..b };
        assert!(matches!(encode_particle_texel(&neg, &p, false), Err(Error::OutOfRange { .. })));
        // Zero max size: every size reads 0.
        let zero = SpriteBounds { max_size: 0.0, ..b };
        assert_eq!(
            decode_particle_texel(&zero, encode_particle_texel(&zero, &p, false).unwrap()).unwrap().0.size,
            0.0
        );
        // The snorm's -32768 reads as -pi, never below.
        assert_eq!(decode_particle_texel(&b, [0, 0, 0, 0x8000 | FLAG_ALIVE]).unwrap().0.rotation, -PI);
    }

    #[test]
    fn rotation_wraps_and_interpolates_along_the_shortest_arc() {
        let b = bounds();
        let p = Particle { position: [0.0; 3], size: 0.1, color: [1.0; 4], rotation: 3.1 + 4.0 * PI };
        let (d, _) = decode_particle_texel(&b, encode_particle_texel(&b, &p, false).unwrap()).unwrap();
        assert!((d.rotation - 3.1).abs() < 1e-4, "{}", d.rotation);
        let first = encode_particle_texel(&b, &Particle { rotation: 3.1, ..p }, true).unwrap();
        let second = encode_particle_texel(&b, &Particle { rotation: -3.1, ..p }, false).unwrap();
        let mid = sample_particle(&b, first, second, 0.5).unwrap().rotation;
        // Through pi (3.1 + 0.0416), never through 0.
        assert!((wrap_angle(mid).abs() - PI).abs() < 1e-3, "{mid}");
        let quarter = sample_particle(&b, first, second, 0.25).unwrap().rotation;
        assert!((quarter - (3.1 + 0.25 * (2.0 * PI - 6.2))).abs() < 1e-3, "{quarter}");
        assert_eq!(wrap_delta(-6.0), -6.0 + 2.0 * PI);
        assert_eq!(wrap_delta(1.0), 1.0);
    }

    #[test]
    fn interpolation_is_in_box_space_and_the_nearest_frame_rule_holds() {
        let b = bounds();
        let a =
            Particle { position: [-1.0, 1.0, 0.0], size: 0.1, color: [0.0, 0.2, 1.0, 1.0], rotation: 0.0 };
        let c = Particle { position: [1.0, 3.0, 0.5], size: 0.3, color: [1.0, 0.2, 0.0, 0.0], rotation: 1.0 };
        let ta = encode_particle_texel(&b, &a, true).unwrap();
        let tc = encode_particle_texel(&b, &c, false).unwrap();
        let m = sample_particle(&b, ta, tc, 0.5).unwrap();
        for k in 0..3 {
            assert!((m.position[k] - (a.position[k] + c.position[k]) / 2.0).abs() < 1e-4, "{m:?}");
        }
        assert!(
            (m.size - 0.2).abs() < 1e-4 && (m.color[0] - 0.5).abs() < 3e-3 && (m.rotation - 0.5).abs() < 1e-3
        );
        assert_eq!(sample_particle(&b, ta, tc, 0.0), decode_particle_texel(&b, ta).map(|x| x.0));
        // Not continuing (a new particle took the slot): nearest frame, no blend.
        let ta_end = encode_particle_texel(&b, &a, false).unwrap();
        assert_eq!(sample_particle(&b, ta_end, tc, 0.49), decode_particle_texel(&b, ta_end).map(|x| x.0));
        assert_eq!(sample_particle(&b, ta_end, tc, 0.5), decode_particle_texel(&b, tc).map(|x| x.0));
        // Dying: alive then dead.
        assert_eq!(
            sample_particle(&b, ta_end, DEAD_TEXEL, 0.3),
            decode_particle_texel(&b, ta_end).map(|x| x.0)
        );
        assert_eq!(sample_particle(&b, ta_end, DEAD_TEXEL, 0.7), None);
        // A continues flag pointing at a dead texel (malformed) is the nearest rule too.
        assert_eq!(sample_particle(&b, ta, DEAD_TEXEL, 0.7), None);
        // Born: dead then alive.
        assert_eq!(sample_particle(&b, DEAD_TEXEL, tc, 0.2), None);
        assert_eq!(sample_particle(&b, DEAD_TEXEL, tc, 0.8), decode_particle_texel(&b, tc).map(|x| x.0));
    }

    #[test]
    fn texel_at_reads_little_endian_and_checks_the_length() {
        let t = [1, 0x0203_0405, FLAG_ALIVE, u32::MAX];
        let bytes: Vec<u8> = DEAD_TEXEL.iter().chain(&t).flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(texel_at(&bytes, 1).unwrap(), t);
        assert!(matches!(texel_at(&bytes, 2), Err(Error::IndexOutOfRange { .. })));
        assert_eq!(SPRITE_TEXEL_FORMAT.bytes_per_texel(), SPRITE_TEXEL_BYTES);
    }
}
