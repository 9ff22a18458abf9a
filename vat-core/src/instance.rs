//! The 64-byte per-instance record.
//!
//! One record per character, uploaded once and re-uploaded only when something about the character
//! changes (moved, new clip, new speed). Phase is never uploaded per frame: the shader computes it from
//! the clock uniform and the record, so a crowd that stands still uploads nothing and keeps animating.
//!
//! Kept in sync with `struct InstanceRecord` in the WGSL source ([`crate::gpu::SHADER_SOURCE`]).

use bytemuck::{Pod, Zeroable};

/// Bits of [`InstanceRecord::clip_b`] holding the clip index; the upper 16 bits hold the cross-fade
/// duration in seconds as an IEEE binary16 (`half`).
pub const CLIP_INDEX_MASK: u32 = 0xFFFF;

/// Largest clip index a record can hold.
pub const MAX_CLIP_INDEX: u32 = CLIP_INDEX_MASK;

/// Bits of [`InstanceRecord::variant_bits`]: material variant (0..=255) in bits 0..8.
pub const VARIANT_MATERIAL_MASK: u32 = 0xFF;
/// Bit of [`InstanceRecord::variant_bits`]: the socket attachment (accessory) is shown.
pub const VARIANT_ACCESSORY: u32 = 1 << 8;
/// Bit of [`InstanceRecord::variant_bits`]: the instance is hidden (culled before any test).
pub const VARIANT_HIDDEN: u32 = 1 << 9;
/// Shift of slot A's wrap code in [`InstanceRecord::variant_bits`] (bits 10..12): how clip A's
/// phase runs past its ends, [`crate::playback::Wrap::code`], 0 = the clip's own mode.
pub const VARIANT_WRAP_A_SHIFT: u32 = 10;
/// Shift of slot B's wrap code in [`InstanceRecord::variant_bits`] (bits 12..14).
pub const VARIANT_WRAP_B_SHIFT: u32 = 12;
/// Bits of [`InstanceRecord::variant_bits`] that are playback state (both wrap codes): the crowd
/// owns them (`Crowd::set_variant` keeps them).
pub const VARIANT_PLAYBACK_MASK: u32 = (3 << VARIANT_WRAP_A_SHIFT) | (3 << VARIANT_WRAP_B_SHIFT);

/// How an instance plays a clip ([`crate::crowd::Crowd::play_as`]): on the GPU, the
/// [`Wrap`](crate::playback::Wrap) of its phase; on the CPU, which events it raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlayMode {
    /// As the clip was baked: a looping clip loops, a one-shot clip plays once and holds its end.
    #[default]
    AsBaked,
    /// Round and round, whatever the clip's mode.
    Loop,
    /// Once, then the last frame is held (the first, played backwards); raises
    /// [`crate::crowd::AnimationEventKind::Ended`] when it gets there, and starts a queued play.
    Once,
    /// Forwards, backwards, forwards...: a triangle wave over the clip.
    PingPong,
    /// The phase clamped to the clip's ends, no end event: for a pose driven by the phase offset
    /// (scrubbing) or a clip held at an end.
    Clamp,
}

impl PlayMode {
    /// The wrap of this mode's phase for a clip of `mode`.
    pub fn wrap(self, mode: crate::clip::ClipMode) -> crate::playback::Wrap {
        use crate::playback::Wrap;
        match self {
            PlayMode::AsBaked => mode.into(),
            PlayMode::Loop => Wrap::Loop,
            PlayMode::Once | PlayMode::Clamp => Wrap::Clamp,
            PlayMode::PingPong => Wrap::PingPong,
        }
    }

    /// The record's wrap code of this mode (0 for [`AsBaked`](Self::AsBaked): the clip's own).
    pub fn code(self) -> u32 {
        match self {
            PlayMode::AsBaked => 0,
            other => other.wrap(crate::clip::ClipMode::Looping).code(),
        }
    }
}

/// One character of a crowd, exactly as the GPU reads it (`#[repr(C)]`, 64 bytes, no padding).
///
/// | bytes | fields |
/// |---|---|
/// | 0..16 | `position` x, y, z (m, world space), `yaw` (rad about +Y) |
/// | 16..32 | `clip_a`, `phase_offset_a` (cycles), `rate_a` (cycles/s), `scale` |
/// | 32..48 | `clip_b` (index + fade duration), `phase_offset_b`, `rate_b`, `fade_start` (s) |
/// | 48..64 | `tint` r, g, b (linear, 0..=1 typical), `variant_bits` |
///
/// World position of an object-space point `p`: `position + R_y(yaw) * (scale * p)`.
/// Clip phase: `fract(phase_offset + time * rate)` with `time` the epoch-relative clock of the frame
/// (see [`crate::playback`]).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct InstanceRecord {
    /// World-space position of the character's origin (between the feet), metres.
    pub position: [f32; 3],
    /// Heading: rotation about +Y in radians; 0 faces +Z.
    pub yaw: f32,
    /// Index of the clip playing in slot A (the clip being faded out while a fade runs).
    pub clip_a: u32,
    /// Phase offset of clip A in cycles, `[0, 1)`.
    pub phase_offset_a: f32,
    /// Playback rate of clip A in cycles per second (may be 0 to freeze).
    pub rate_a: f32,
    /// Uniform scale of the character, `> 0` (1 = as baked).
    pub scale: f32,
    /// Bits 0..16: index of the clip faded in (slot B); bits 16..32: fade duration in seconds as IEEE
    /// binary16. A fade duration of 0 means no fade is running: slot B is ignored.
    pub clip_b: u32,
    /// Phase offset of clip B in cycles, `[0, 1)`.
    pub phase_offset_b: f32,
    /// Playback rate of clip B in cycles per second.
    pub rate_b: f32,
    /// Epoch-relative time at which the fade to clip B started, seconds.
    pub fade_start: f32,
    /// Per-instance colour multiplier, linear RGB.
    pub tint: [f32; 3],
    /// Material variant, accessory and flag bits (see the `VARIANT_*` constants).
    pub variant_bits: u32,
}

const _: () = assert!(std::mem::size_of::<InstanceRecord>() == 64);
const _: () = assert!(std::mem::align_of::<InstanceRecord>() == 4);

impl Default for InstanceRecord {
    fn default() -> Self {
        Self {
            position: [0.0; 3],
            yaw: 0.0,
            clip_a: 0,
            phase_offset_a: 0.0,
            rate_a: 0.0,
            scale: 1.0,
            clip_b: 0,
            phase_offset_b: 0.0,
            rate_b: 0.0,
            fade_start: 0.0,
            tint: [1.0; 3],
            variant_bits: 0,
        }
    }
}

/// One playing slot of a record (A: the outgoing or only clip, B: the clip faded in).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayingSlot {
    /// Clip index.
    pub clip: u32,
    /// Wrap code (0..=3, [`crate::playback::Wrap::from_code`]).
    pub wrap_code: u32,
    /// Phase offset, cycles.
    pub phase_offset: f32,
    /// Rate, cycles per second.
    pub rate: f32,
}

impl InstanceRecord {
    /// Slot A: `clip_a`, its wrap code, `phase_offset_a`, `rate_a`.
    pub fn slot_a(&self) -> PlayingSlot {
        PlayingSlot {
            clip: self.clip_a,
            wrap_code: self.wrap_code_a(),
            phase_offset: self.phase_offset_a,
            rate: self.rate_a,
        }
    }

    /// Slot B: the clip index of `clip_b`, its wrap code, `phase_offset_b`, `rate_b`.
    pub fn slot_b(&self) -> PlayingSlot {
        PlayingSlot {
            clip: self.clip_b_index(),
            wrap_code: self.wrap_code_b(),
            phase_offset: self.phase_offset_b,
            rate: self.rate_b,
        }
    }

    /// Clip index of slot B.
    pub fn clip_b_index(&self) -> u32 {
        self.clip_b & CLIP_INDEX_MASK
    }

    /// Cross-fade duration in seconds (0 when no fade runs), decoded from the upper half of `clip_b`.
    pub fn fade_duration(&self) -> f32 {
        half::f16::from_bits((self.clip_b >> 16) as u16).to_f32()
    }

    /// Packs `clip` (`<= MAX_CLIP_INDEX`) and `fade_duration` (seconds, `>= 0`) into `clip_b`.
    ///
    /// The duration is stored as binary16: it is rounded to the nearest representable value
    /// (about 3 significant digits; 0.25 s, 0.5 s and 1 s are exact), and saturates at 65504 s.
    /// Negative or NaN durations are stored as 0 (no fade).
    pub fn set_clip_b(&mut self, clip: u32, fade_duration: f32) {
        let d = if fade_duration.is_nan() || fade_duration <= 0.0 { 0.0 } else { fade_duration.min(65504.0) };
        let bits = u32::from(half::f16::from_f32(d).to_bits());
        self.clip_b = (clip & CLIP_INDEX_MASK) | (bits << 16);
    }

    /// Material variant index (0..=255).
    pub fn material_variant(&self) -> u32 {
        self.variant_bits & VARIANT_MATERIAL_MASK
    }

    /// Slot A's wrap code (0..=3, see [`VARIANT_WRAP_A_SHIFT`]).
    pub fn wrap_code_a(&self) -> u32 {
        (self.variant_bits >> VARIANT_WRAP_A_SHIFT) & 3
    }

    /// Slot B's wrap code (0..=3, see [`VARIANT_WRAP_B_SHIFT`]).
    pub fn wrap_code_b(&self) -> u32 {
        (self.variant_bits >> VARIANT_WRAP_B_SHIFT) & 3
    }

    /// Sets slot A's wrap code (its low 2 bits).
    pub fn set_wrap_code_a(&mut self, code: u32) {
        self.variant_bits =
            (self.variant_bits & !(3 << VARIANT_WRAP_A_SHIFT)) | ((code & 3) << VARIANT_WRAP_A_SHIFT);
    }

    /// Sets slot B's wrap code (its low 2 bits).
    pub fn set_wrap_code_b(&mut self, code: u32) {
        self.variant_bits =
            (self.variant_bits & !(3 << VARIANT_WRAP_B_SHIFT)) | ((code & 3) << VARIANT_WRAP_B_SHIFT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn every_field_offset_is_pinned() {
        assert_eq!(offset_of!(InstanceRecord, position), 0);
        assert_eq!(offset_of!(InstanceRecord, yaw), 12);
        assert_eq!(offset_of!(InstanceRecord, clip_a), 16);
        assert_eq!(offset_of!(InstanceRecord, phase_offset_a), 20);
        assert_eq!(offset_of!(InstanceRecord, rate_a), 24);
        assert_eq!(offset_of!(InstanceRecord, scale), 28);
        assert_eq!(offset_of!(InstanceRecord, clip_b), 32);
        assert_eq!(offset_of!(InstanceRecord, phase_offset_b), 36);
        assert_eq!(offset_of!(InstanceRecord, rate_b), 40);
        assert_eq!(offset_of!(InstanceRecord, fade_start), 44);
        assert_eq!(offset_of!(InstanceRecord, tint), 48);
        assert_eq!(offset_of!(InstanceRecord, variant_bits), 60);
        assert_eq!(std::mem::size_of::<InstanceRecord>(), 64);
    }

    #[test]
    fn bytes_are_little_endian_fields_in_order() {
        let mut r = InstanceRecord { position: [1.0, 2.0, 3.0], yaw: 0.5, clip_a: 7, ..Default::default() };
        r.set_clip_b(3, 0.25);
        let b = bytemuck::bytes_of(&r);
        assert_eq!(&b[4..8], &2.0f32.to_le_bytes());
        assert_eq!(&b[16..20], &7u32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()) & 0xFFFF, 3);
    }

    #[test]
    fn clip_b_packs_index_and_fade_duration() {
        let mut r = InstanceRecord::default();
        r.set_clip_b(65535, 0.25);
        assert_eq!((r.clip_b_index(), r.fade_duration()), (65535, 0.25));
        r.set_clip_b(2, -1.0);
        assert_eq!((r.clip_b_index(), r.fade_duration()), (2, 0.0));
        r.set_clip_b(2, f32::NAN);
        assert_eq!(r.fade_duration(), 0.0);
        r.set_clip_b(2, 1e9);
        assert_eq!(r.fade_duration(), 65504.0);
        // binary16 rounding: relative error <= 2^-11
        r.set_clip_b(0, 0.3);
        assert!((r.fade_duration() - 0.3).abs() <= 0.3 * 2f32.powi(-11));
    }
}
