//! Animation events ([`AnimationEvent`], [`super::Crowd::drain_events`]) and the crossing math
//! they come from: the same analytic phase the shader computes, `x = offset + time * rate` in
//! `f32` at each frame's shader time, compared between the previous frame and this one. Nothing is
//! read back from the GPU.

use super::InstanceId;
use crate::clip::{Clip, ClipMode};
use crate::instance::PlayMode;
use crate::playback::Wrap;

/// What happened to an instance's playing clip between two [`super::Crowd::advance`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnimationEventKind {
    /// A clip played [`PlayMode::Once`] (or a one-shot clip played [`PlayMode::AsBaked`]) reached
    /// its end (its start, played backwards) and now holds it.
    Ended,
    /// The clip's playback reached clip-local frame `frame`, marked with
    /// [`super::Crowd::mark_frame`]. A step that passes the mark several times (a long step or a
    /// fast rate) reports it once.
    Marker {
        /// The marked clip-local frame.
        frame: u32,
    },
}

/// One event of one instance, in the order [`super::Crowd::advance`] found them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnimationEvent {
    /// The instance.
    pub instance: InstanceId,
    /// The clip it was playing (the incoming one during a cross-fade).
    pub clip: u32,
    /// What happened.
    pub kind: AnimationEventKind,
    /// The crowd clock's time ([`crate::playback::Clock::now`], seconds) of the `advance` that found
    /// it: the first frame whose shader phase is past the event.
    pub time: f64,
}

/// A play waiting for the current one to end ([`super::Crowd::play_after`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QueuedPlay {
    pub clip: u32,
    pub fade_seconds: f32,
    pub mode: PlayMode,
}

/// The most events that wait to be drained ([`super::Crowd::drain_events`]); later ones are counted
/// in [`super::Crowd::dropped_events`] instead of kept.
pub const MAX_PENDING_EVENTS: usize = 1 << 16;

/// How much earlier than its computed time an instance's next possible event is scheduled,
/// seconds: the computation is in `f64` from the `f32` record, the check in the shader's `f32`;
/// popping early only costs one more check.
pub(crate) const SCHEDULE_EARLY_SECONDS: f64 = 1e-3;

/// The first point `p + period * k` (or `p` alone, `period` `None`) strictly ahead of the unwrapped
/// phase `x` in the direction of `rate`; `None` if there is none (rate 0, not finite, or a single
/// point behind).
pub(crate) fn next_point(x: f64, rate: f64, p: f64, period: Option<f64>) -> Option<f64> {
    if !(rate.is_finite() && x.is_finite()) || rate == 0.0 {
        return None;
    }
    match period {
        None => ((p - x) * rate > 0.0).then_some(p),
        Some(period) => {
            let k = (x - p) / period;
            let k = if rate > 0.0 { k.floor() + 1.0 } else { k.ceil() - 1.0 };
            Some(p + period * k)
        }
    }
}

/// The unwrapped phase the shader computes, `offset + time * rate`, in `f32`.
pub(crate) fn unwrapped(offset: f32, time: f32, rate: f32) -> f32 {
    offset + time * rate
}

/// How many points `q + period * k` (integer `k`) lie between the unwrapped phases `a` (the previous
/// frame's) and `b` (this frame's): in `(a, b]` playing forwards, `[b, a)` playing backwards.
fn crossings(a: f32, b: f32, q: f64, period: f64) -> u64 {
    let (a, b) = (f64::from(a), f64::from(b));
    if !(a.is_finite() && b.is_finite()) {
        return 0;
    }
    let k = |x: f64| (x - q) / period;
    // Integers in (k(a), k(b)] forwards, in [k(b), k(a)) backwards.
    let n = if b >= a { k(b).floor() - k(a).floor() } else { k(a).ceil() - k(b).ceil() };
    n.max(0.0) as u64
}

/// Whether a clip played with `wrap` between unwrapped phases `a` and `b` reached the phase `q`
/// (in `[0, 1]`) of a marked frame.
pub(crate) fn reaches(wrap: Wrap, a: f32, b: f32, q: f64) -> bool {
    match wrap {
        Wrap::Loop => crossings(a, b, q, 1.0) > 0,
        // Clamped: q is in [0, 1], where the phase is x itself; past the ends it stops.
        Wrap::Clamp => {
            let (a, b) = (f64::from(a), f64::from(b));
            (a < q && q <= b) || (b <= q && q < a)
        }
        // The triangle wave meets q going up at 2k + q and going down at 2k + 2 - q.
        Wrap::PingPong => crossings(a, b, q, 2.0) + crossings(a, b, 2.0 - q, 2.0) > 0,
    }
}

/// Whether a clip played with `wrap` at `rate` completed (the point a queued play starts at, and
/// [`AnimationEventKind::Ended`] for a clamped play) between unwrapped phases `a` and `b`: clamp
/// reaches its end (1 forwards, 0 backwards), a loop completes a cycle (an integer), a ping-pong
/// completes its back-and-forth (an even integer).
pub(crate) fn completes(wrap: Wrap, a: f32, b: f32, rate: f32) -> bool {
    match wrap {
        Wrap::Clamp => {
            if rate > 0.0 {
                a < 1.0 && b >= 1.0
            } else if rate < 0.0 {
                a > 0.0 && b <= 0.0
            } else {
                false
            }
        }
        Wrap::Loop => crossings(a, b, 0.0, 1.0) > 0,
        Wrap::PingPong => crossings(a, b, 0.0, 2.0) > 0,
    }
}

/// The phase (cycles, `[0, 1]`) at which clip-local frame `frame` of `clip` is shown alone: `frame /
/// frame_count` for a looping clip, `frame / (frame_count - 1)` for a one-shot clip (its last frame
/// at phase 1). `None` for a frame the clip does not have.
pub(crate) fn frame_phase(clip: &Clip, frame: u32) -> Option<f64> {
    let n = clip.frame_count.max(1);
    if frame >= n {
        return None;
    }
    Some(match clip.mode {
        ClipMode::Looping => f64::from(frame) / f64::from(n),
        ClipMode::OneShot if n == 1 => 0.0,
        ClipMode::OneShot => f64::from(frame) / f64::from(n - 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossings_count_points_in_the_half_open_step() {
        assert_eq!(crossings(0.2, 1.2, 0.0, 1.0), 1);
        assert_eq!(crossings(0.2, 0.9, 0.0, 1.0), 0);
        assert_eq!(crossings(0.2, 3.2, 0.5, 1.0), 3);
        // Landing exactly on a point counts; leaving from one does not.
        assert_eq!(crossings(0.5, 1.0, 0.0, 1.0), 1);
        assert_eq!(crossings(1.0, 1.5, 0.0, 1.0), 0);
        // Backwards: [b, a).
        assert_eq!(crossings(1.2, 0.2, 0.0, 1.0), 1);
        assert_eq!(crossings(1.0, 0.5, 0.0, 1.0), 0);
        assert_eq!(crossings(1.5, 1.0, 0.0, 1.0), 1);
        assert_eq!(crossings(0.3, 0.3, 0.0, 1.0), 0);
        assert_eq!(crossings(f32::NAN, 0.3, 0.0, 1.0), 0);
    }

    /// The events agree with the wrapped phase the shader shows, sampled frame by frame: a mark is
    /// reported in the first frame whose phase has passed it.
    #[test]
    fn marks_are_reported_in_the_frame_the_shown_phase_passes_them() {
        for wrap in [Wrap::Loop, Wrap::PingPong] {
            for rate in [0.37f32, -0.61, 1.3] {
                let q = 0.25;
                let mut previous = unwrapped(0.1, 0.0, rate);
                for frame in 1..400 {
                    let t = frame as f32 / 30.0;
                    let x = unwrapped(0.1, t, rate);
                    let (p0, p1) = (wrap.apply(previous), wrap.apply(x));
                    // The shown phase went across q (within one frame's movement, no wrap past it).
                    let step = (f64::from(rate) / 30.0).abs();
                    let across = (f64::from(p0) - q) * (f64::from(p1) - q) <= 0.0
                        && (f64::from(p1) - f64::from(p0)).abs() <= step + 1e-6
                        && f64::from(p0) != q;
                    assert_eq!(reaches(wrap, previous, x, q), across, "{wrap:?} rate {rate} frame {frame}");
                    previous = x;
                }
            }
        }
    }

    #[test]
    fn the_next_point_is_strictly_ahead_in_the_direction_of_play() {
        assert_eq!(next_point(0.2, 1.0, 0.5, Some(1.0)), Some(0.5));
        assert_eq!(next_point(0.5, 1.0, 0.5, Some(1.0)), Some(1.5));
        assert_eq!(next_point(0.2, -1.0, 0.5, Some(1.0)), Some(-0.5));
        assert_eq!(next_point(3.1, 2.0, 0.0, Some(2.0)), Some(4.0));
        assert_eq!(next_point(0.2, 1.0, 1.0, None), Some(1.0));
        assert_eq!(next_point(1.2, 1.0, 1.0, None), None);
        assert_eq!(next_point(0.2, 0.0, 1.0, Some(1.0)), None);
    }

    #[test]
    fn a_clamped_play_completes_once_in_its_direction() {
        assert!(completes(Wrap::Clamp, 0.9, 1.1, 1.0));
        assert!(completes(Wrap::Clamp, 0.9, 1.0, 1.0));
        assert!(!completes(Wrap::Clamp, 1.0, 1.1, 1.0));
        assert!(completes(Wrap::Clamp, 0.1, -0.1, -1.0));
        assert!(!completes(Wrap::Clamp, 0.5, 0.5, 0.0));
        assert!(completes(Wrap::Loop, 2.9, 3.1, 1.0));
        assert!(!completes(Wrap::PingPong, 2.9, 3.1, 1.0));
        assert!(completes(Wrap::PingPong, 3.9, 4.1, 1.0));
    }
}
