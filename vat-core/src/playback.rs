//! Playback math shared by the CPU and the vertex shader: phase, frame selection, interpolation
//! weights, cross-fades, stride-matched rates and the time epoch.
//!
//! Every function here is a literal transcription of a formula the WGSL source evaluates, in `f32`, in
//! the same order (a product and a sum are two roundings: nothing here uses `mul_add`). The CPU
//! reference decoder calls these functions, so it computes bit for bit what the shader computes.
//! `f64` is used only where the CPU side prepares values for upload (rate changes, epoch re-bases).
//!
//! Units: time in seconds, phase and phase offsets in cycles (`[0, 1)`), rates in cycles per second,
//! speeds in metres per second, strides in metres per cycle.
//!
//! # Time and the epoch
//! The CPU keeps absolute time in `f64` ([`Clock`]); the shader receives `time = (now - epoch) as f32`.
//! An `f32` time loses precision as it grows (at one day its spacing is 7.8 ms, enough to move a
//! 3 cycles/s animation by 0.02 cycles), so once `now - epoch` reaches [`REBASE_AFTER_SECONDS`] the CPU
//! moves the epoch forward ([`Clock::rebase`]) and shifts every instance record with the returned
//! [`EpochShift`]: `offset' = fract(offset + delta * rate)` for looping clips (an unwrapped, settled
//! offset for one-shot clips, see [`settled_offset`]), `fade_start' = fade_start - delta`. This costs
//! one upload of all instance records every [`REBASE_AFTER_SECONDS`] seconds.

use serde::{Deserialize, Serialize};

use crate::clip::{Clip, ClipMode};
use crate::{Error, Result};

/// How a value is reconstructed between the stored frames of a clip.
///
/// The `u32` values are those of the WGSL override constant `INTERPOLATION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[repr(u32)]
pub enum Interpolation {
    /// Nearest frame (no blending): one frame fetch.
    Point = 0,
    /// Linear between the two frames around the phase: two frame fetches.
    #[default]
    Linear = 1,
    /// Uniform Catmull-Rom through the four frames around the phase: four frame fetches.
    Cubic = 2,
}

impl Interpolation {
    /// The value of the WGSL override constant `INTERPOLATION` for this mode (0, 1 or 2).
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// The mode whose [`as_u32`](Self::as_u32) is `value`; `None` for any value other than 0, 1 or 2.
    pub fn from_u32(value: u32) -> Option<Self> {
        match value {
            0 => Some(Self::Point),
            1 => Some(Self::Linear),
            2 => Some(Self::Cubic),
            _ => None,
        }
    }
}

/// How a playing clip's phase runs past its ends: the clip's own [`ClipMode`] (looping clips
/// [`Loop`](Wrap::Loop), one-shot clips [`Clamp`](Wrap::Clamp)) unless the instance plays it another
/// way ([`crate::instance::PlayMode`]). The frames sampled at a phase always follow the clip's
/// storage ([`sample_frames`] with the clip's mode): a looping clip's phase 1 is its frame 0, the
/// pose its last frame leads back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wrap {
    /// `fract(x)`: plays round and round.
    Loop,
    /// `clamp(x, 0, 1)`: plays once and holds its end (or, played backwards, its start).
    Clamp,
    /// A triangle wave over `x`: forwards over even cycles, backwards over odd ones.
    PingPong,
}

impl From<ClipMode> for Wrap {
    fn from(mode: ClipMode) -> Self {
        match mode {
            ClipMode::Looping => Wrap::Loop,
            ClipMode::OneShot => Wrap::Clamp,
        }
    }
}

impl Wrap {
    /// The 2-bit code of this wrap in an instance record (`vat.wgsl`'s `WRAP_*`): 1 loop, 2 clamp,
    /// 3 ping-pong (0 is "the clip's own", see [`from_code`](Self::from_code)).
    pub fn code(self) -> u32 {
        match self {
            Wrap::Loop => 1,
            Wrap::Clamp => 2,
            Wrap::PingPong => 3,
        }
    }

    /// The wrap of record code `code` (its low 2 bits) for a clip of `mode`: 0 is the clip's own
    /// mode's wrap, 1 loop, 2 clamp, 3 ping-pong (`vat_wrap` in the shader).
    pub fn from_code(code: u32, mode: ClipMode) -> Self {
        match code & 3 {
            0 => mode.into(),
            1 => Wrap::Loop,
            2 => Wrap::Clamp,
            _ => Wrap::PingPong,
        }
    }

    /// The wrap applied to the unwrapped phase `x` (cycles), in `f32` as the shader does it.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Wrap::Loop => x - x.floor(),
            Wrap::Clamp => x.clamp(0.0, 1.0),
            Wrap::PingPong => {
                let m = x - 2.0 * (x * 0.5).floor();
                1.0 - (1.0 - m).abs()
            }
        }
    }
}

/// The phase of a clip, in cycles, at epoch-relative `time` (seconds) for a record with phase `offset`
/// (cycles) and `rate` (cycles per second; negative plays backwards), wrapped by `wrap` (a
/// [`ClipMode`] stands for its own wrap).
///
/// `x = offset + time * rate`; [`Wrap::Loop`] returns `x - floor(x)`, in `[0, 1]` (the value `1.0`
/// occurs when `x` is a tiny negative number and `x + 1` rounds up; [`sample_frames`] maps it to frame
/// 0 of a looping clip); [`Wrap::Clamp`] returns `clamp(x, 0, 1)`; [`Wrap::PingPong`] returns
/// `1 - |1 - (x - 2 floor(x / 2))|`, in `[0, 1]`. Any finite inputs work, negative ones included. A
/// NaN input gives a NaN phase (as in the shader); nothing panics.
pub fn phase(offset: f32, time: f32, rate: f32, wrap: impl Into<Wrap>) -> f32 {
    wrap.into().apply(offset + time * rate)
}

/// The four frames a value is interpolated from and their weights.
///
/// `frames` are clip-local frame indices `[prev, f0, f1, next]`, each `< frame_count` (add the clip's
/// first frame with [`absolute_frames`]); the value sits between `f0` and `f1`. `weights` are the
/// weights of those frames in the same order; they sum to 1 up to `f32` rounding (at most `2^-19`
/// away, see the tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameSample {
    /// Clip-local frame indices `[prev, f0, f1, next]`.
    pub frames: [u32; 4],
    /// Weights of the four frames, same order.
    pub weights: [f32; 4],
}

impl FrameSample {
    /// Interpolates one scalar given its value at the four frames (same order as `frames`), as the
    /// shader does: `((w0 * a + w1 * b) + w2 * c) + w3 * d`.
    ///
    /// Zero-weight terms contribute exactly 0 for finite values, which is why the shader may skip
    /// fetching them (e.g. Linear computes `w1 * b + w2 * c`, the identical result).
    pub fn blend(&self, values: [f32; 4]) -> f32 {
        let [w0, w1, w2, w3] = self.weights;
        let [a, b, c, d] = values;
        ((w0 * a + w1 * b) + w2 * c) + w3 * d
    }

    /// [`blend`](Self::blend) applied to each component of a 3-vector (a position or an unnormalised
    /// normal) given at the four frames.
    pub fn blend3(&self, values: [[f32; 3]; 4]) -> [f32; 3] {
        std::array::from_fn(|i| self.blend([values[0][i], values[1][i], values[2][i], values[3][i]]))
    }
}

/// Uniform Catmull-Rom weights of the frames `[prev, f0, f1, next]` at fraction `t` in `[0, 1]` between
/// `f0` and `f1`.
///
/// `t2 = t * t; t3 = t2 * t`; `w0 = 0.5 * (2 t2 - t3 - t)`, `w1 = 0.5 * (3 t3 - 5 t2 + 2)`,
/// `w2 = 0.5 * (4 t2 - 3 t3 + t)`, `w3 = 0.5 * (t3 - t2)`, each parenthesis evaluated left to right.
/// At `t = 0` the result is exactly `[0, 1, 0, 0]`, at `t = 1` exactly `[0, 0, 1, 0]`.
pub fn catmull_rom_weights(t: f32) -> [f32; 4] {
    let t2 = t * t;
    let t3 = t2 * t;
    [
        0.5 * (2.0 * t2 - t3 - t),
        0.5 * (3.0 * t3 - 5.0 * t2 + 2.0),
        0.5 * (4.0 * t2 - 3.0 * t3 + t),
        0.5 * (t3 - t2),
    ]
}

/// The frames and weights at `phase` (cycles, `[0, 1]`, as returned by [`phase`]) of a clip of
/// `frame_count` stored frames.
///
/// Looping: `pos = phase * frame_count`, frame `f0 = floor(pos) mod frame_count`, fraction
/// `t = pos - floor(pos)`; neighbours wrap, so after the last frame comes frame 0 (the end frame is not
/// stored) and a phase of exactly 1 is frame 0 with `t = 0`. One-shot: `pos = phase * (frame_count - 1)`,
/// neighbours clamp into `[0, frame_count - 1]`, so phase 1 is the last frame.
///
/// A `frame_count` of 0 (not a valid clip) is treated as 1: every index is 0. A phase outside `[0, 1]`
/// does not panic (the float to integer conversion saturates, as WGSL's `u32()` does; looping indices
/// still wrap), and a NaN phase selects frame 0 with NaN weights.
pub fn sample_frames(phase: f32, frame_count: u32, mode: ClipMode, interp: Interpolation) -> FrameSample {
    let n = frame_count.max(1);
    let (frames, t) = match mode {
        ClipMode::Looping => {
            let pos = phase * n as f32;
            let fl = pos.floor();
            let t = pos - fl;
            let f0 = (fl as u32) % n;
            // u64 so that `f0 + n - 1` cannot overflow; the results equal WGSL's u32 ones for every
            // n < 2^31.
            let wrap = |k: u64| ((u64::from(f0) + k) % u64::from(n)) as u32;
            ([wrap(u64::from(n) - 1), f0, wrap(1), wrap(2)], t)
        }
        ClipMode::OneShot => {
            let last = n - 1;
            let pos = phase * last as f32;
            let fl = pos.floor();
            let t = pos - fl;
            let f0 = (fl as u32).min(last);
            // f0 <= last <= u32::MAX - 1, so only `f0 + 2` can overflow; saturating keeps `min` exact.
            ([f0.max(1) - 1, f0, (f0 + 1).min(last), f0.saturating_add(2).min(last)], t)
        }
    };
    let weights = match interp {
        Interpolation::Point => {
            if t < 0.5 {
                [0.0, 1.0, 0.0, 0.0]
            } else {
                [0.0, 0.0, 1.0, 0.0]
            }
        }
        Interpolation::Linear => [0.0, 1.0 - t, t, 0.0],
        Interpolation::Cubic => catmull_rom_weights(t),
    };
    FrameSample { frames, weights }
}

/// [`phase`] then [`sample_frames`] for `clip` played with phase `offset` (cycles) and `rate`
/// (cycles per second) at epoch-relative `time` (seconds). Frames are clip-local; see
/// [`absolute_frames`].
pub fn clip_sample(clip: &Clip, offset: f32, time: f32, rate: f32, interp: Interpolation) -> FrameSample {
    wrapped_clip_sample(clip, clip.mode.into(), offset, time, rate, interp)
}

/// [`clip_sample`] with the phase wrapped by `wrap` instead of the clip's own mode (an instance's
/// [`crate::instance::PlayMode`]); the frames still follow the clip's storage.
pub fn wrapped_clip_sample(
    clip: &Clip,
    wrap: Wrap,
    offset: f32,
    time: f32,
    rate: f32,
    interp: Interpolation,
) -> FrameSample {
    sample_frames(phase(offset, time, rate, wrap), clip.frame_count, clip.mode, interp)
}

/// The frames of `sample` as indices among all frames of the animation texture (`clip.first_frame`
/// added). For a clip of a valid clip map these never overflow; otherwise the addition wraps, as the
/// shader's `u32` addition does.
pub fn absolute_frames(clip: &Clip, sample: &FrameSample) -> [u32; 4] {
    sample.frames.map(|f| clip.first_frame.wrapping_add(f))
}

/// Cross-fade weight of slot B (the clip being faded in), in `[0, 1]`, at epoch-relative `time`
/// (seconds) for a fade that started at `fade_start` (epoch-relative seconds) and lasts
/// `fade_duration` seconds.
///
/// `0` when `fade_duration <= 0` (no fade running), else `clamp((time - fade_start) / fade_duration, 0, 1)`:
/// 0 before the start, 1 from `fade_start + fade_duration` on, non-decreasing in `time`. A blended value
/// is `a * (1 - w) + b * w`. NaN inputs give a NaN weight, as in the shader.
pub fn fade_weight(time: f32, fade_start: f32, fade_duration: f32) -> f32 {
    if fade_duration <= 0.0 { 0.0 } else { ((time - fade_start) / fade_duration).clamp(0.0, 1.0) }
}

/// The playback rate, in cycles per second, at which a locomotion clip of `stride` metres per cycle keeps
/// the feet planted when the character moves at `speed` metres per second: `speed / stride`.
///
/// A negative speed gives a negative rate (the clip plays backwards). `None` when `stride` is not finite
/// or `<= 0` (the clip is not locomotion), when `speed` is not finite, or when the quotient overflows.
pub fn stride_matched_rate(speed: f32, stride: f32) -> Option<f32> {
    if !(stride.is_finite() && stride > 0.0 && speed.is_finite()) {
        return None;
    }
    let rate = speed / stride;
    rate.is_finite().then_some(rate)
}

/// `x - floor(x)` rounded to `f32` and kept in `[0, 1)`: a value within half an `f32` ulp below 1
/// rounds to `1.0`, which is the same phase as `0.0`.
fn fract_to_unit_f32(x: f64) -> f32 {
    let f = (x - x.floor()) as f32;
    if f >= 1.0 { 0.0 } else { f }
}

/// The stored phase offset (cycles) for the unrounded offset `x` of a clip of `mode` playing at `rate`
/// (cycles per second): what [`retimed_offset`] and [`EpochShift::offset`] return.
///
/// - Looping: `fract(x)`, rounded once to `f32` and kept in `[0, 1)` (the phase wraps, so only the
///   fraction matters).
/// - One-shot: the phase clamps instead of wrapping, so `x` is kept unwrapped (`fract` would restart a
///   finished clip, or jump a running one by a whole cycle). Once the clip has ended it stays ended, so
///   the offset settles: `1` when `x >= 1` and `rate >= 0` (played forwards to its end), `0` when
///   `x <= 0` and `rate <= 0` (played backwards to its start); otherwise `x` rounded to `f32`. A clip
///   waiting to start (`x < 0` playing forwards) keeps its negative offset. A settled offset keeps the
///   phase clamped at the end for any shader time `t >= 0`: `1 + t * rate >= 1`.
///
/// Non-finite `x` gives a non-finite (looping) or unchanged (one-shot) result; nothing panics.
///
/// Ping-pong (a wrap an instance chooses, see [`Wrap`]): `x` modulo 2 (the wave's period), rounded
/// once to `f32` and kept in `[0, 2)`.
pub fn settled_offset(x: f64, rate: f32, wrap: impl Into<Wrap>) -> f32 {
    match wrap.into() {
        Wrap::Loop => fract_to_unit_f32(x),
        Wrap::PingPong => {
            let m = x.rem_euclid(2.0) as f32;
            // Rounding may give 2 itself: the same phase as 0.
            if m >= 2.0 { 0.0 } else { m }
        }
        Wrap::Clamp => {
            if rate >= 0.0 && x >= 1.0 {
                1.0
            } else if rate <= 0.0 && x <= 0.0 {
                0.0
            } else {
                x as f32
            }
        }
    }
}

/// The phase offset (cycles) that keeps the phase of a clip of `mode` continuous when its rate changes
/// from `old_rate` to `new_rate` (cycles per second) at epoch-relative `time` (seconds).
///
/// `x = offset + time * (old_rate - new_rate)`, computed in `f64`, so that
/// `x + time * new_rate == offset + time * old_rate`: the animation does not jump when the character
/// changes speed. The result is [`settled_offset`]`(x, new_rate, mode)`: `fract(x)` in `[0, 1)` for a
/// looping clip (equal modulo 1), `x` unwrapped for a one-shot clip (its phase clamps; a finished
/// one settles at its end). Pass the shader time of the frame where the new rate takes effect
/// ([`Clock::shader_time`] widened to `f64`): then the only difference the shader sees is `f32`
/// rounding (bounded in the tests). Passing the unrounded `now - epoch` instead adds at most
/// `|old_rate - new_rate| * time * 2^-24` cycles. Non-finite inputs give a non-finite result.
pub fn retimed_offset(offset: f32, time: f64, old_rate: f32, new_rate: f32, wrap: impl Into<Wrap>) -> f32 {
    let x = f64::from(offset) + time * (f64::from(old_rate) - f64::from(new_rate));
    settled_offset(x, new_rate, wrap)
}

/// Epoch-relative seconds after which [`Clock::needs_rebase`] asks for a re-base: 64 s.
///
/// Why 64. With the shader time `s < T` and rates `|r| <= R`, the shader's phase `x = offset + s * r`
/// carries (u = 2^-24, the `f32` unit roundoff):
/// - the rounding of `s` to `f32`: `<= u * T` seconds, so `<= u * R * T` cycles;
/// - the rounding of `s * r`: `<= u * R * T`;
/// - the rounding of the sum: `<= u * (1 + R * T)`;
/// - the rounding of the offset to `f32` at the last re-base: `<= u / 2`;
///
/// in all `<= u * (3 R T + 1.5)` cycles, and `x - floor(x)` is exact for `x >= 0`. For `R = 4`
/// cycles/s that is 4.6e-5 cycles at `T = 64` but 9.2e-5 at 128 and 1.8e-4 at 256, so 64 keeps the error
/// well under 1e-4 cycles. Each re-base also rounds every offset to `f32` once (`<= 2^-25` cycles, a
/// fixed phase shift nobody can see, which over a day of re-bases every 64 s adds up to at most 4e-5
/// cycles). The price is one upload of all instance records per 64 s (6.4 MB for 100k instances).
pub const REBASE_AFTER_SECONDS: f64 = 64.0;

/// The application clock: absolute time in `f64` seconds and the epoch the shader's `f32` time is
/// measured from.
///
/// Per frame: [`advance`](Self::advance), then if [`needs_rebase`](Self::needs_rebase), call
/// [`rebase`](Self::rebase) and apply the returned [`EpochShift`] to **every** instance record (both phase
/// offsets and the fade start), then upload [`shader_time`](Self::shader_time). Phase offsets and fade
/// starts in instance records are relative to the current epoch.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Clock {
    now: f64,
    epoch: f64,
}

impl Clock {
    /// A clock at absolute time 0 with its epoch at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `dt` seconds.
    ///
    /// # Errors
    /// [`Error::NotFinite`] if `dt` is NaN or infinite, [`Error::OutOfRange`] if `dt < 0` (time runs
    /// forward only: fades and re-bases assume it). The clock is unchanged on error.
    pub fn advance(&mut self, dt: f64) -> Result<()> {
        if !dt.is_finite() {
            return Err(Error::NotFinite { what: "clock step dt" });
        }
        if dt < 0.0 {
            return Err(Error::OutOfRange {
                what: "clock step dt",
                value: dt.to_string(),
                expected: ">= 0 seconds",
            });
        }
        self.now += dt;
        Ok(())
    }

    /// Absolute time in seconds since the clock was created.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// The epoch in absolute seconds: a whole number of seconds, moved only by [`rebase`](Self::rebase).
    pub fn epoch(&self) -> f64 {
        self.epoch
    }

    /// The time the shader receives, in seconds since the epoch: `(now - epoch) as f32`.
    /// Below [`REBASE_AFTER_SECONDS`] plus one frame when re-based as documented on [`Clock`].
    pub fn shader_time(&self) -> f32 {
        (self.now - self.epoch) as f32
    }

    /// Whether `now - epoch` has reached [`REBASE_AFTER_SECONDS`].
    pub fn needs_rebase(&self) -> bool {
        self.now - self.epoch >= REBASE_AFTER_SECONDS
    }

    /// Moves the epoch forward by the whole seconds of `now - epoch` (so the shader time drops below 1 s)
    /// and returns the shift every instance record must now receive (see [`EpochShift`]).
    ///
    /// The shift is a whole number of seconds so the epoch stays exactly representable and
    /// `fade_start - delta` loses nothing. Calling it before [`needs_rebase`](Self::needs_rebase) is
    /// allowed (it shifts less); a shift of 0 changes nothing.
    #[must_use = "every instance record's phase offsets and fade start must be shifted with the EpochShift"]
    pub fn rebase(&mut self) -> EpochShift {
        let delta = (self.now - self.epoch).floor().max(0.0);
        self.epoch += delta;
        EpochShift { delta }
    }
}

/// How far the epoch moved at a [`Clock::rebase`], and how to shift instance records to match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpochShift {
    /// Seconds the epoch moved forward: a whole number, `>= 0`.
    pub delta: f64,
}

impl EpochShift {
    /// The phase offset (cycles) that gives the same phase under the new epoch for a clip of `mode`
    /// playing at `rate` cycles per second: [`settled_offset`]`(offset + delta * rate)`, in `f64`,
    /// rounded once to `f32` (at most `2^-25` cycles off for a looping clip, whose result is in
    /// `[0, 1)`). A one-shot clip's offset is not wrapped (its phase clamps): a running clip keeps its
    /// phase, a finished one stays finished however long the clock runs.
    pub fn offset(&self, offset: f32, rate: f32, wrap: impl Into<Wrap>) -> f32 {
        settled_offset(f64::from(offset) + self.delta * f64::from(rate), rate, wrap)
    }

    /// A fade start (epoch-relative seconds) under the new epoch: `fade_start - delta`.
    pub fn fade_start(&self, fade_start: f32) -> f32 {
        (f64::from(fade_start) - self.delta) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clip::ClipRowMap;
    use proptest::prelude::*;

    /// Unit roundoff of `f32` (round to nearest): `|fl(x op y) - x op y| <= U * |x op y|`.
    const U: f64 = 1.0 / (1u64 << 24) as f64;

    /// Distance between two phases on the unit circle (0.9999 and 0.0001 are 0.0002 apart).
    fn circular_distance(a: f64, b: f64) -> f64 {
        let d = (a - b).rem_euclid(1.0);
        d.min(1.0 - d)
    }

    // Bound on |sum of weights - 1| and on Catmull-Rom's error on linear data, derived for t in [0, 1]
    // as a sum of |result| * U per rounding (first order; the slack up to 32 covers the rest):
    //   t2 = t*t: <= 1U;  t3 = t2*t: <= 2U (1U carried + 1U).
    //   w0: 2*t2 exact, - t3: 4U carried + 1U, - t: +1U -> 6U, *0.5 -> 3U.
    //   w1: 3*t3 9U, 5*t2 10U, difference (|.| <= 2) +2U, + 2 (|.| <= 2) +2U -> 23U, *0.5 -> 11.5U.
    //   w2: 4*t2 4U, 3*t3 9U, difference (|.| <= 1.06) +1.06U, + t (|.| <= 2) +2U -> 16.06U, *0.5 -> 8.03U.
    //   w3: 3U carried, + 0.15U -> *0.5 -> 1.58U.               Sum over the weights: 24.1U.
    // blend(v) with |v| <= V: weight errors 24.1 V U; four products sum(|w|) V U <= 1.3 V U
    // (sum |w| <= 1 + 8/27); three partial sums each <= 1.3 V -> 3.9 V U.  Total 29.3 V U <= 32 V U.
    // Linear (1 - t, t) and Point are far inside that.
    const WEIGHT_SUM_BOUND: f64 = 32.0 * U;

    #[test]
    fn interpolation_u32_values_round_trip() {
        for m in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
            assert_eq!(Interpolation::from_u32(m.as_u32()), Some(m));
        }
        assert_eq!(
            [Interpolation::Point.as_u32(), Interpolation::Linear.as_u32(), Interpolation::Cubic.as_u32()],
            [0, 1, 2]
        );
        assert_eq!(Interpolation::from_u32(3), None);
        assert_eq!(Interpolation::default(), Interpolation::Linear);
        let bytes = postcard::to_allocvec(&Interpolation::Cubic).unwrap();
        assert_eq!(postcard::from_bytes::<Interpolation>(&bytes).unwrap(), Interpolation::Cubic);
    }

    #[test]
    fn looping_wraps_from_the_last_frame_to_frame_0() {
        // 32 frames so that the phases below are exact in f32.
        let n = 32;
        // Halfway through the last frame: the pair is (31, 0), not (31, 32).
        let s = sample_frames(31.5 / 32.0, n, ClipMode::Looping, Interpolation::Linear);
        assert_eq!((s.frames, s.weights), ([30, 31, 0, 1], [0.0, 0.5, 0.5, 0.0]));
        // Inside the first frame prev wraps back to the last frame.
        let s = sample_frames(0.25 / 32.0, n, ClipMode::Looping, Interpolation::Cubic);
        assert_eq!(s.frames, [31, 0, 1, 2]);
        // A single-frame loop stays on its frame.
        let s = sample_frames(0.7, 1, ClipMode::Looping, Interpolation::Cubic);
        assert_eq!(s.frames, [0; 4]);
    }

    #[test]
    fn phase_rounding_up_to_one_lands_on_frame_0_with_t_0() {
        // x = -1e-9: x - floor(x) = 1 - 1e-9, which rounds to 1.0 in f32.
        let p = phase(-1e-9, 0.0, 0.0, ClipMode::Looping);
        assert_eq!(p, 1.0);
        let s = sample_frames(p, 30, ClipMode::Looping, Interpolation::Linear);
        assert_eq!(s.frames, [29, 0, 1, 2]);
        assert_eq!(s.weights, [0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn one_shot_clamps_at_both_ends() {
        let n = 46;
        for x in [1.0, 1.5, 1e9] {
            let p = phase(x, 0.0, 0.0, ClipMode::OneShot);
            assert_eq!(p, 1.0);
            let s = sample_frames(p, n, ClipMode::OneShot, Interpolation::Cubic);
            assert_eq!(s.frames, [44, 45, 45, 45]);
            assert_eq!(s.weights, [0.0, 1.0, 0.0, 0.0]);
        }
        for x in [0.0, -0.5, -1e9] {
            let p = phase(x, 0.0, 0.0, ClipMode::OneShot);
            assert_eq!(p, 0.0);
            let s = sample_frames(p, n, ClipMode::OneShot, Interpolation::Cubic);
            assert_eq!(s.frames, [0, 0, 1, 2]);
            assert_eq!(s.weights, [0.0, 1.0, 0.0, 0.0]);
        }
        // Just before the end: the pair is (44, 45) and next clamps to 45.
        let s = sample_frames(44.5 / 45.0, n, ClipMode::OneShot, Interpolation::Linear);
        assert_eq!(s.frames, [43, 44, 45, 45]);
        // A one-frame one-shot clip.
        let s = sample_frames(0.5, 1, ClipMode::OneShot, Interpolation::Linear);
        assert_eq!((s.frames, s.weights), ([0; 4], [0.0, 1.0, 0.0, 0.0]));
    }

    #[test]
    fn zero_frame_count_is_treated_as_one() {
        for mode in [ClipMode::Looping, ClipMode::OneShot] {
            for p in [0.0, 0.5, 1.0, -3.0, 7.0, f32::NAN] {
                let s = sample_frames(p, 0, mode, Interpolation::Cubic);
                assert_eq!(s.frames, [0; 4]);
            }
            assert_eq!(
                sample_frames(0.3, 0, mode, Interpolation::Linear),
                sample_frames(0.3, 1, mode, Interpolation::Linear)
            );
        }
    }

    #[test]
    fn negative_times_and_offsets_wrap() {
        // All are x = -0.25 cycles, i.e. phase 0.75 (exact in f32).
        assert_eq!(phase(-0.25, 0.0, 1.0, ClipMode::Looping), 0.75);
        assert_eq!(phase(0.0, -1.25, 1.0, ClipMode::Looping), 0.75);
        assert_eq!(phase(0.5, 0.75, -1.0, ClipMode::Looping), 0.75);
        assert_eq!(phase(-3.25, 0.0, 0.0, ClipMode::Looping), 0.75);
        let s = sample_frames(0.75, 8, ClipMode::Looping, Interpolation::Linear);
        assert_eq!((s.frames, s.weights), ([5, 6, 7, 0], [0.0, 1.0, 0.0, 0.0]));
    }

    #[test]
    fn point_picks_the_nearest_frame() {
        let n = 10u32;
        for k in 0..n {
            let below =
                sample_frames((k as f32 + 0.3) / n as f32, n, ClipMode::Looping, Interpolation::Point);
            assert_eq!((below.frames[1], below.weights), (k, [0.0, 1.0, 0.0, 0.0]));
            let above =
                sample_frames((k as f32 + 0.7) / n as f32, n, ClipMode::Looping, Interpolation::Point);
            assert_eq!((above.frames[2], above.weights), ((k + 1) % n, [0.0, 0.0, 1.0, 0.0]));
        }
    }

    #[test]
    fn catmull_rom_passes_through_the_samples() {
        assert_eq!(catmull_rom_weights(0.0), [0.0, 1.0, 0.0, 0.0]);
        assert_eq!(catmull_rom_weights(1.0), [0.0, 0.0, 1.0, 0.0]);
        let s = FrameSample { frames: [0, 1, 2, 3], weights: catmull_rom_weights(0.0) };
        assert_eq!(s.blend([-7.0, 1.234, 99.0, -3.5]), 1.234);
        assert_eq!(s.blend3([[9.0; 3], [0.1, -0.2, 0.3], [5.0; 3], [-5.0; 3]]), [0.1, -0.2, 0.3]);
    }

    #[test]
    fn blend_evaluates_left_to_right() {
        // Chosen so that another summation order gives a different f32: 1e8 + 1 - 1e8 + 1.
        let s = FrameSample { frames: [0; 4], weights: [1.0; 4] };
        let v = [1e8, 1.0, -1e8, 1.0];
        assert_eq!(s.blend(v), ((1e8f32 + 1.0) + -1e8) + 1.0);
        assert_eq!(s.blend(v), 1.0);
    }

    proptest! {
        #[test]
        fn weights_sum_to_one(t in 0.0f32..=1.0, n in 1u32..200, looping in any::<bool>()) {
            let w = catmull_rom_weights(t);
            let ones = FrameSample { frames: [0; 4], weights: w };
            prop_assert!((f64::from(ones.blend([1.0; 4])) - 1.0).abs() <= WEIGHT_SUM_BOUND, "{w:?}");
            // Through sample_frames, every mode, at phase t.
            let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
            for interp in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
                let s = sample_frames(t, n, mode, interp);
                let sum = f64::from(s.blend([1.0; 4]));
                prop_assert!((sum - 1.0).abs() <= WEIGHT_SUM_BOUND, "{interp:?} {:?}", s.weights);
                prop_assert!(s.frames.iter().all(|&f| f < n));
            }
        }

        #[test]
        fn catmull_rom_reproduces_linear_data(t in 0.0f32..=1.0, k in -1000i32..1000, m in -50i32..50) {
            // Integer data is exact in f32, so any error is the formula's own rounding (bound above).
            let v: [f32; 4] = std::array::from_fn(|i| (k + m * (i as i32 - 1)) as f32);
            let big_v = v.iter().fold(0.0f64, |a, &x| a.max(f64::from(x.abs())));
            let s = FrameSample { frames: [0; 4], weights: catmull_rom_weights(t) };
            let exact = f64::from(k) + f64::from(m) * f64::from(t);
            let got = f64::from(s.blend(v));
            prop_assert!((got - exact).abs() <= 32.0 * big_v * U, "{got} vs {exact}");
        }

        #[test]
        fn fade_weight_is_monotone(start in -100.0f32..100.0, dur in 0.001f32..10.0,
                                   a in -200.0f32..200.0, b in -200.0f32..200.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (wl, wh) = (fade_weight(lo, start, dur), fade_weight(hi, start, dur));
            prop_assert!((0.0..=1.0).contains(&wl) && (0.0..=1.0).contains(&wh));
            prop_assert!(wl <= wh, "w({lo}) = {wl} > w({hi}) = {wh}");
        }
    }

    #[test]
    fn fade_weight_ends() {
        assert_eq!(fade_weight(9.99, 10.0, 0.5), 0.0);
        assert_eq!(fade_weight(10.0, 10.0, 0.5), 0.0);
        assert_eq!(fade_weight(10.25, 10.0, 0.5), 0.5);
        assert_eq!(fade_weight(10.5, 10.0, 0.5), 1.0);
        assert_eq!(fade_weight(1e6, 10.0, 0.5), 1.0);
        for d in [0.0, -1.0, -0.0] {
            assert_eq!(fade_weight(10.25, 10.0, d), 0.0);
            assert_eq!(fade_weight(1e6, 10.0, d), 0.0);
        }
    }

    #[test]
    fn stride_matched_rate_keeps_the_feet_planted() {
        assert_eq!(stride_matched_rate(1.48, 1.48), Some(1.0));
        assert_eq!(stride_matched_rate(0.0, 1.48), Some(0.0));
        assert_eq!(stride_matched_rate(1.0, 0.0), None);
        assert_eq!(stride_matched_rate(1.0, -1.0), None);
        assert_eq!(stride_matched_rate(1.0, f32::NAN), None);
        assert_eq!(stride_matched_rate(1.0, f32::INFINITY), None);
        assert_eq!(stride_matched_rate(f32::NAN, 1.0), None);
        assert_eq!(stride_matched_rate(1e30, 1e-30), None);
        // Distance per cycle = speed / rate. Two roundings (rate, then the check's division), each
        // relative <= U: |d / stride - 1| <= (1 + U) / (1 - U) - 1 = 2U / (1 - U).
        for stride in [1.48f32, 2.28, 3.30] {
            for speed in [0.1f32, 0.9, 1.48, 2.0, 3.7, 6.5] {
                let rate = stride_matched_rate(speed, stride).unwrap();
                let per_cycle = f64::from(speed / rate);
                let rel = (per_cycle / f64::from(stride) - 1.0).abs();
                assert!(rel <= 2.0 * U / (1.0 - U), "stride {stride} speed {speed}: {per_cycle}");
            }
        }
    }

    proptest! {
        #[test]
        fn changing_speed_never_jumps_the_phase(offset in 0.0f32..1.0, time in 0.0f32..=3600.0,
                                               r1 in -8.0f32..8.0, r2 in -8.0f32..8.0) {
            // Same shader time before and after the change.
            let before = phase(offset, time, r1, ClipMode::Looping);
            let new_offset = retimed_offset(offset, f64::from(time), r1, r2, ClipMode::Looping);
            prop_assert!((0.0..1.0).contains(&new_offset));
            let after = phase(new_offset, time, r2, ClipMode::Looping);
            // Both sides equal X = offset + time * r1 (mod 1) up to (a = |time r1|, b = |time r2|):
            //   before: fl(time r1) <= U a; fl(offset + .) <= U (|offset| + a); frac of a negative x <= U.
            //   offset': f64 ops <= 3 * 2^-53 (1 + a + b); rounding to f32 (< 1) <= U / 2.
            //   after:  fl(time r2) <= U b; fl(offset' + .) <= U (1 + b); frac <= U.
            // Sum: U (2a + 2b + |offset| + 3.5) + 2^-50 (1 + a + b); the extra 0.5 U below covers
            // second-order terms (U^2 (a + b)) while a + b < 2^23 (here <= 57600).
            let (a, b) = (f64::from((time * r1).abs()), f64::from((time * r2).abs()));
            let bound = U * (2.0 * a + 2.0 * b + f64::from(offset) + 4.0) + (1.0 + a + b) / (1u64 << 50) as f64;
            let d = circular_distance(f64::from(before), f64::from(after));
            prop_assert!(d <= bound, "jump {d} > {bound}: {before} -> {after}");
        }
    }

    #[test]
    fn retimed_offset_stays_below_one() {
        // fract in f64 just below 1 rounds to 1.0f32; it must come back as 0 (the same phase).
        assert_eq!(retimed_offset(0.0, 1.0, -1e-12, 0.0, ClipMode::Looping), 0.0);
        assert_eq!(retimed_offset(0.25, 2.0, 1.5, 1.0, ClipMode::Looping), 0.25);
    }

    #[test]
    fn one_shot_offsets_are_not_wrapped() {
        let one = ClipMode::OneShot;
        // A finished clip (offset 0.5, 1 cycle/s: ended at t = 0.5 s) re-based by 64 s stays finished;
        // fract would give 0.5 and restart it half-way.
        let shift = EpochShift { delta: 64.0 };
        assert_eq!(shift.offset(0.5, 1.0, one), 1.0);
        assert_eq!(phase(shift.offset(0.5, 1.0, one), 0.0, 1.0, one), 1.0);
        // A clip waiting to start (it starts at t = 2.25 s) is still waiting after a 1 s shift; fract
        // would give 0.75 and show it three quarters through.
        let shift = EpochShift { delta: 1.0 };
        assert_eq!(shift.offset(-2.25, 1.0, one), -1.25);
        assert_eq!(phase(shift.offset(-2.25, 1.0, one), 0.0, 1.0, one), 0.0);
        // Played backwards past its start: settles at 0.
        assert_eq!(shift.offset(0.25, -0.5, one), 0.0);
        // A running clip changing speed keeps its phase: at t = 5 s, 0.1 -> 0.2 cycles/s, phase 0.5.
        // x = 0 + 5 (0.1 - 0.2) = -0.5, and -0.5 + 5 * 0.2 = 0.5; fract(-0.5) = 0.5 would jump to 1.
        let o = retimed_offset(0.0, 5.0, 0.1, 0.2, one);
        assert!((o + 0.5).abs() <= 1e-7, "{o}");
        assert!((phase(o, 5.0, 0.2, one) - 0.5).abs() <= 1e-6);
        // Looping clips still wrap into [0, 1).
        assert_eq!(retimed_offset(0.0, 5.0, 0.1, 0.2, ClipMode::Looping), 0.5);
        assert_eq!(EpochShift { delta: 64.0 }.offset(0.5, 1.0, ClipMode::Looping), 0.5);
        // Non-finite input does not panic.
        assert!(settled_offset(f64::NAN, 1.0, one).is_nan());
        assert!(settled_offset(f64::NAN, 1.0, ClipMode::Looping).is_nan());
    }

    proptest! {
        #[test]
        fn one_shot_phase_survives_rebases_and_rate_changes(offset in -2.0f32..2.0, r1 in -4.0f32..4.0,
                                                             r2 in -4.0f32..4.0, delta in 0u32..100,
                                                             t in 0.0f32..1.0) {
            let one = ClipMode::OneShot;
            // Re-base by `delta` whole seconds, then evaluate at shader time t: the exact phase is
            // clamp(offset + (delta + t) r1). Errors (first order, x = offset + delta r1): the new
            // offset's rounding <= U |x| (settled offsets are exact and change nothing after the
            // clamp), t * r1 <= U |t r1|, the sum <= U (|x| + |t r1|); clamp is 1-Lipschitz.
            let shifted = EpochShift { delta: f64::from(delta) }.offset(offset, r1, one);
            let x = f64::from(offset) + f64::from(delta) * f64::from(r1);
            let exact = (x + f64::from(t) * f64::from(r1)).clamp(0.0, 1.0);
            let got = f64::from(phase(shifted, t, r1, one));
            let tr = f64::from(t) * f64::from(r1).abs();
            let bound = U * (2.0 * x.abs() + 2.0 * tr + 1.0);
            prop_assert!((got - exact).abs() <= bound, "re-base: {got} vs {exact} (bound {bound})");
            // Change the rate at shader time t: the phase before and after agree.
            let before = phase(offset, t, r1, one);
            let retimed = retimed_offset(offset, f64::from(t), r1, r2, one);
            let after = phase(retimed, t, r2, one);
            let (a, b) = (tr, f64::from(t) * f64::from(r2).abs());
            let bound = U * (2.0 * a + 2.0 * b + f64::from(offset.abs()) + 4.0);
            prop_assert!(f64::from((after - before).abs()) <= bound, "retime: {before} -> {after}");
        }
    }

    #[test]
    fn clip_sample_uses_the_clip_and_absolute_frames_add_its_start() {
        let mut m = ClipRowMap::new();
        m.push("idle", 2.0, 30.0, ClipMode::Looping, 0.0).unwrap();
        m.push("walk", 1.0, 30.0, ClipMode::Looping, 1.48).unwrap();
        m.push("wave", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
        let walk = m.get(1).unwrap();
        // offset 0.5 + 0.25 s * 2 cycles/s = 1.0 -> phase 0 -> frame 0.
        let s = clip_sample(walk, 0.5, 0.25, 2.0, Interpolation::Linear);
        assert_eq!(s.frames, [29, 0, 1, 2]);
        assert_eq!(absolute_frames(walk, &s), [89, 60, 61, 62]);
        let wave = m.get(2).unwrap();
        let s = clip_sample(wave, 0.0, 10.0, 1.0, Interpolation::Linear);
        assert_eq!(absolute_frames(wave, &s), [134, 135, 135, 135]);
        assert_eq!(m.total_frames(), 136);
    }

    #[test]
    fn clock_rejects_bad_steps_and_rebases_by_whole_seconds() {
        let mut c = Clock::new();
        assert!(matches!(c.advance(f64::NAN), Err(Error::NotFinite { .. })));
        assert!(matches!(c.advance(-0.1), Err(Error::OutOfRange { .. })));
        assert_eq!(c.now(), 0.0);
        c.advance(63.75).unwrap();
        assert!(!c.needs_rebase());
        c.advance(0.5).unwrap();
        assert!(c.needs_rebase());
        let shift = c.rebase();
        assert_eq!(shift.delta, 64.0);
        assert_eq!((c.epoch(), c.shader_time()), (64.0, 0.25));
        assert!(!c.needs_rebase());
        // A fade that started 0.5 s before the re-base, lasting 1 s: the same weight either side.
        let (start, dur) = (63.75f32, 1.0f32);
        let before = fade_weight(64.25, start, dur);
        let after = fade_weight(c.shader_time(), shift.fade_start(start), dur);
        assert_eq!((before, after), (0.5, 0.5));
        assert_eq!(shift.fade_start(start), -0.25);
        // Offsets: fract(0.1 + 64 * 0.3) in f64 of the f32 inputs, then one rounding to f32 (<= 2^-25).
        let exact = (f64::from(0.1f32) + 64.0 * f64::from(0.3f32)).fract();
        assert!((f64::from(shift.offset(0.1, 0.3, ClipMode::Looping)) - exact).abs() <= U / 2.0);
        // A second re-base right away shifts nothing.
        let again = c.rebase();
        assert_eq!(again.delta, 0.0);
        assert_eq!(again.offset(0.4, 3.0, ClipMode::Looping), 0.4);
    }

    /// Phase of every (offset, rate) instance under the shader's f32 math vs the exact f64 phase.
    fn worst_phase_error(
        offsets: &[f32],
        offsets0: &[f32],
        rates: &[f32],
        shader_time: f32,
        now: f64,
    ) -> f64 {
        let mut worst = 0.0f64;
        for (i, (&o, &o0)) in offsets.iter().zip(offsets0).enumerate() {
            let r = rates[i % rates.len()];
            let gpu = phase(o, shader_time, r, ClipMode::Looping);
            let exact = (f64::from(o0) + now * f64::from(r)).rem_euclid(1.0);
            worst = worst.max(circular_distance(f64::from(gpu), exact));
        }
        worst
    }

    #[test]
    fn a_day_of_playback_stays_within_1e4_cycles() {
        const DAY: f64 = 86_400.0;
        const DT: f64 = 1.0 / 60.0;
        let rates = [0.3f32, 0.7, 1.0, 1.9, 3.3];
        let offsets0: Vec<f32> = (0..20).map(|i| (i as f32 * 0.618034).fract()).collect();
        let mut offsets = offsets0.clone();
        let r_max = 3.3;
        let mut clock = Clock::new();
        let mut rebases = 0u32;
        let mut worst = 0.0f64;
        // 5,184,000 f64 additions of 1/60, as a game loop would do.
        for _ in 0..(DAY * 60.0) as u64 {
            clock.advance(DT).unwrap();
            if clock.needs_rebase() {
                // The worst moment is just before a re-base (largest shader time); check both sides.
                let t_before = clock.shader_time();
                let e_before = worst_phase_error(&offsets, &offsets0, &rates, t_before, clock.now());
                let shift = clock.rebase();
                rebases += 1;
                for (i, o) in offsets.iter_mut().enumerate() {
                    *o = shift.offset(*o, rates[i % rates.len()], ClipMode::Looping);
                }
                assert!(clock.shader_time() < 1.0 && offsets.iter().all(|o| (0.0..1.0).contains(o)));
                let e_after =
                    worst_phase_error(&offsets, &offsets0, &rates, clock.shader_time(), clock.now());
                // Derived bound (see REBASE_AFTER_SECONDS): u (3 R T + 1.5) for the shader math at shader
                // time T, plus 2^-25 per re-base for rounding each new offset to f32, plus the f64
                // reference's own rounding (a few 2^-53 * R * now, < 1e-10).
                let t = f64::from(t_before);
                let bound = U * (3.0 * r_max * t + 1.5) + f64::from(rebases) * U / 2.0 + 1e-10;
                assert!(e_before <= bound && e_after <= bound, "{e_before} {e_after} > {bound}");
                worst = worst.max(e_before).max(e_after);
            }
        }
        assert!((clock.now() - DAY).abs() < 1e-3, "{}", clock.now());
        let end = worst_phase_error(&offsets, &offsets0, &rates, clock.shader_time(), clock.now());
        worst = worst.max(end);
        println!("24 h, {rebases} re-bases: worst phase error {worst:.3e} cycles");
        assert!(worst <= 1e-4, "worst phase error {worst} cycles");

        // Without re-basing the shader would get time = now as f32 (spacing 2^-7 s at a day) and the
        // same check fails by orders of magnitude: this is what the test guards against.
        let no_rebase = worst_phase_error(&offsets0, &offsets0, &rates, clock.now() as f32, clock.now());
        println!("24 h without re-basing: worst phase error {no_rebase:.3e} cycles");
        assert!(no_rebase > 1e-4, "{no_rebase}");
    }
}
