//! The built-in sprite source: a looping water fountain. Particles leave a small nozzle at the
//! origin in an upward cone, fly under gravity (9.81 m/s²) and die when they fall below `y = 0`
//! or reach their lifetime. Cards grow from about 0.04 m to 0.08 m with age, the colour goes from
//! white towards water blue, alpha fades over the last 30 % of a life, and each card spins.
//!
//! **Seamless loop** (bake it with `looping: true`): particle `n` is emitted at `n /
//! FOUNTAIN_EMISSION_RATE` seconds; its id is `n mod FOUNTAIN_LOOP_PARTICLES` (the particles
//! emitted per loop), and everything random about it depends on the id only. At the wrap the same
//! id is the same trajectory shifted by one loop, and a lifetime shorter than the loop means an
//! id never coexists with itself. Ages are computed in exact integers (units of
//! `1 / (FOUNTAIN_FPS * FOUNTAIN_EMISSION_RATE)` s), so frame `FOUNTAIN_FRAMES` would equal frame 0
//! bit for bit. Deterministic: an integer hash per particle, no `rand`.

use vat_core::modes::sprite::Particle;

use vat_bake::sprite::{SourceParticle, SpriteFrame, SpriteSequence};

/// Frames per second of the fountain.
pub const FOUNTAIN_FPS: u32 = 24;
/// Frames of the fountain's loop (2 s).
pub const FOUNTAIN_FRAMES: u32 = 48;
/// Particles emitted per second.
pub const FOUNTAIN_EMISSION_RATE: u32 = 160;
/// Particles emitted per loop: ids run `0 .. FOUNTAIN_LOOP_PARTICLES`.
pub const FOUNTAIN_LOOP_PARTICLES: u32 = FOUNTAIN_EMISSION_RATE * FOUNTAIN_FRAMES / FOUNTAIN_FPS;
/// Longest lifetime of a particle, seconds (shorter than the 2 s loop).
pub const FOUNTAIN_MAX_LIFE: f32 = 1.5;

const GRAVITY: f32 = 9.81;
/// Half-angle of the emission cone, radians (about 12 degrees).
const CONE: f32 = 0.21;
/// Nozzle: a disc of this radius at this height, metres.
const NOZZLE_RADIUS: f32 = 0.03;
const NOZZLE_HEIGHT: f32 = 0.05;

/// A value in `[0, 1)` from particle `id` and stream `k` (splitmix64's finaliser).
fn hash01(id: u32, k: u32) -> f32 {
    let mut z = (u64::from(id) << 8 | u64::from(k)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 24) as f32
}

/// Particle `id` at `age` seconds, or `None` once dead.
fn particle(id: u32, age: f32) -> Option<Particle> {
    let life = 0.9 + 0.6 * hash01(id, 0);
    if age > life.min(FOUNTAIN_MAX_LIFE) {
        return None;
    }
    let azimuth = std::f32::consts::TAU * hash01(id, 1);
    let tilt = CONE * hash01(id, 2).sqrt();
    let speed = 4.2 + 0.8 * hash01(id, 3);
    let (nozzle_angle, nozzle_r) =
        (std::f32::consts::TAU * hash01(id, 4), NOZZLE_RADIUS * hash01(id, 5).sqrt());
    let v = [speed * tilt.sin() * azimuth.cos(), speed * tilt.cos(), speed * tilt.sin() * azimuth.sin()];
    let p0 = [nozzle_r * nozzle_angle.cos(), NOZZLE_HEIGHT, nozzle_r * nozzle_angle.sin()];
    let y = p0[1] + v[1] * age - 0.5 * GRAVITY * age * age;
    if y < 0.0 {
        return None;
    }
    let f = age / life;
    let alpha = if f < 0.7 { 1.0 } else { (1.0 - (f - 0.7) / 0.3).clamp(0.0, 1.0) };
    let mix = |white: f32, blue: f32| white + (blue - white) * f;
    Some(Particle {
        position: [p0[0] + v[0] * age, y, p0[2] + v[2] * age],
        size: 0.04 + 0.04 * f,
        color: [mix(0.85, 0.25), mix(0.93, 0.55), mix(1.0, 0.95), alpha],
        rotation: std::f32::consts::TAU * hash01(id, 6) + (hash01(id, 7) * 6.0 - 3.0) * age,
    })
}

/// The fountain: [`FOUNTAIN_FRAMES`] frames at [`FOUNTAIN_FPS`], named `"fountain"`, meant to be
/// baked with `looping: true` (see the module docs). Every call builds the same frames, bit for
/// bit.
pub fn fountain() -> SpriteSequence {
    let rate = i64::from(FOUNTAIN_EMISSION_RATE);
    let fps = i64::from(FOUNTAIN_FPS);
    let per_loop = i64::from(FOUNTAIN_LOOP_PARTICLES);
    let unit = (fps * rate) as f32;
    let frames = (0..i64::from(FOUNTAIN_FRAMES))
        .map(|f| {
            // Particle n is emitted at n / rate s; frame f is at f / fps s. Age in units of
            // 1 / (fps * rate) s: f * rate - n * fps. One loop back covers every live particle.
            let newest = f * rate / fps;
            let particles = (newest - per_loop + 1..=newest)
                .filter_map(|n| {
                    let age_units = f * rate - n * fps;
                    let id = n.rem_euclid(per_loop) as u32;
                    particle(id, age_units as f32 / unit)
                        .map(|p| SourceParticle { id: Some(u64::from(id)), particle: p })
                })
                .collect();
            SpriteFrame { particles }
        })
        .collect();
    SpriteSequence { name: "fountain".into(), fps: FOUNTAIN_FPS as f32, frames }
}
