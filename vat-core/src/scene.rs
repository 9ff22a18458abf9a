//! A deterministic demo crowd: `count` characters on a jittered grid with a mix of clips, stride-matched
//! walking speeds, headings, tints and material variants. Used by `vat render`, the examples and the
//! benchmarks, so they all show the same crowd for the same arguments.

use crate::crowd::{Crowd, InstanceId};
use crate::instance::{VARIANT_ACCESSORY, VARIANT_MATERIAL_MASK};

/// Layout of [`populate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemoLayout {
    /// Distance between neighbouring characters, metres (default 1.6).
    pub spacing: f32,
    /// Random offset of each character within its grid cell, as a fraction of `spacing` (0..=0.5).
    pub jitter: f32,
    /// Seed of the layout (same seed, same crowd).
    pub seed: u64,
    /// Share of characters wearing the socket attachment (0..=1).
    pub accessory_share: f32,
}

impl Default for DemoLayout {
    fn default() -> Self {
        Self { spacing: 1.6, jitter: 0.3, seed: 0x5EED, accessory_share: 0.5 }
    }
}

/// SplitMix64: a tiny, good, dependency-free generator for reproducible layouts.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Spawns `count` characters centred on the origin (a square grid on the XZ plane, +Y up), each playing
/// a random clip at a random phase and heading: locomotion clips (those with a stride) at a
/// stride-matched speed within 15 % of the clip's natural speed (stride / duration), so the feet stay
/// planted; other clips at their natural rate. Random tint and material variant; the accessory bit on
/// `accessory_share` of them. Returns the ids in spawn order.
///
/// # Panics
/// If the crowd's asset has no clips.
pub fn populate(crowd: &mut Crowd, count: u32, layout: &DemoLayout) -> Vec<InstanceId> {
    let clips = crowd.asset().clips.clone();
    assert!(!clips.is_empty(), "the asset has no clips");
    let side = (f64::from(count).sqrt().ceil() as u32).max(1);
    let half = (side as f32 - 1.0) * 0.5 * layout.spacing;
    let mut rng = SplitMix64(layout.seed);
    let mut ids = Vec::with_capacity(count as usize);
    for k in 0..count {
        let (gx, gz) = (k % side, k / side);
        let jx = (rng.next_f32() - 0.5) * 2.0 * layout.jitter * layout.spacing;
        let jz = (rng.next_f32() - 0.5) * 2.0 * layout.jitter * layout.spacing;
        let position = [gx as f32 * layout.spacing - half + jx, 0.0, gz as f32 * layout.spacing - half + jz];
        let yaw = rng.next_f32() * std::f32::consts::TAU;
        let clip = (rng.next_u64() % clips.len() as u64) as u32;
        let phase = rng.next_f32();
        let id = crowd.spawn_at_phase(position, yaw, clip, phase);
        let stride = clips[clip as usize].stride;
        if stride > 0.0 {
            // Speed = stride per natural cycle, varied by +-15 %: the feet stay planted.
            let natural = stride * clips[clip as usize].natural_rate();
            crowd.set_speed(id, natural * (0.85 + 0.3 * rng.next_f32()));
        }
        let material = (rng.next_u64() % 8) as u32 & VARIANT_MATERIAL_MASK;
        let accessory = if rng.next_f32() < layout.accessory_share { VARIANT_ACCESSORY } else { 0 };
        crowd.set_variant(id, material | accessory);
        let shade = 0.75 + 0.25 * rng.next_f32();
        crowd.set_tint(id, [shade, 0.8 + 0.2 * rng.next_f32(), shade]);
        ids.push(id);
    }
    ids
}

/// Half the side of the square [`populate`] fills, metres (for placing a camera).
pub fn half_extent(count: u32, layout: &DemoLayout) -> f32 {
    let side = (f64::from(count).sqrt().ceil() as f32).max(1.0);
    (side - 1.0) * 0.5 * layout.spacing + layout.jitter * layout.spacing
}
