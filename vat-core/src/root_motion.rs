//! Root motion: the horizontal translation and yaw of a clip's character, extracted at bake time
//! from the baked vertices ([`RootMotionTrack`], stored in [`crate::container::Manifest::root_motion`]),
//! and the math that plays it back on the CPU ([`crate::crowd::Crowd::set_root_motion`]).
//!
//! # Conventions
//! vat is right-handed, +Y up, metres, radians. A [`RootPose`] is a rigid motion of the ground
//! plane: a yaw about +Y (the instance record's convention: `R_y(yaw)` maps `(x, y, z)` to
//! `(c x + s z, y, c z - s x)` with `(s, c) = yaw.sin_cos()`, so a yaw of 0 faces +Z) followed by a
//! translation `(x, 0, z)` in metres. It maps a point `p` of the baked (in-place) frame to
//! `R_y(yaw) p + (x, 0, z)`, the point where the source had it.
//!
//! A clip baked with root motion is stored **in place**: frame `k` of the texture is the source's
//! frame `k` with the inverse of the track's pose `k` applied to every vertex (positions, normals,
//! tangents, bone and capture matrices alike), so the clip's own motion is left to the instance
//! transform, which the crowd moves by the track.
//!
//! # Playback
//! The root pose at an unwrapped phase `x` (cycles, `offset + time * rate` as the shader computes
//! it) is [`RootMotionTrack::pose_at`]: between stored frames the track is interpolated linearly in
//! `(x, z, yaw)` (whatever interpolation the vertices use: the root is a smooth path sampled at the
//! bake's frame rate); a looping play accumulates whole cycles ([`RootMotionTrack::cycle`] composed
//! `floor(x)` times), a clamped play holds its end, a ping-pong play walks the path back and forth.
//! An instance moves by `pose_at(x0)^-1 ∘ pose_at(x1)` between two frames' phases `x0` and `x1`, so
//! the moves of successive frames compose to the motion between the first and the last phase:
//! from phase 0 over one whole loop, exactly [`RootMotionTrack::cycle`].

use serde::{Deserialize, Serialize};

use crate::clip::{Clip, ClipMode};
use crate::playback::Wrap;

/// The largest `|x|`, `|z|` (metres) and `|yaw|` (radians) a stored [`RootPose`] may have: far
/// beyond any clip (100 km, 16 000 turns), small enough that `f32` keeps millimetres of a step.
pub const ROOT_MOTION_LIMIT: f32 = 1.0e5;

/// A rigid motion of the ground plane: yaw `yaw` radians about +Y, then `(x, 0, z)` metres (see the
/// [module documentation](self) for the convention).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RootPose {
    /// Translation along +X, metres.
    pub x: f32,
    /// Translation along +Z, metres.
    pub z: f32,
    /// Rotation about +Y, radians (the instance record's yaw convention).
    pub yaw: f32,
}

impl RootPose {
    /// No motion.
    pub const IDENTITY: RootPose = RootPose { x: 0.0, z: 0.0, yaw: 0.0 };

    /// Whether all three values are finite.
    pub fn is_finite(&self) -> bool {
        self.x.is_finite() && self.z.is_finite() && self.yaw.is_finite()
    }

    /// The horizontal distance of the translation, metres.
    pub fn distance(&self) -> f32 {
        (f64::from(self.x).hypot(f64::from(self.z))) as f32
    }

    /// `self ∘ other`: `other` applied first, then `self` (`p -> self(other(p))`), in `f64`.
    pub fn then_local(&self, other: &RootPose) -> RootPose {
        let (s, c) = f64::from(self.yaw).sin_cos();
        let (ox, oz) = (f64::from(other.x), f64::from(other.z));
        RootPose {
            x: (f64::from(self.x) + c * ox + s * oz) as f32,
            z: (f64::from(self.z) + c * oz - s * ox) as f32,
            yaw: (f64::from(self.yaw) + f64::from(other.yaw)) as f32,
        }
    }

    /// The inverse motion: `self.inverse().then_local(&self)` is the identity (up to rounding).
    pub fn inverse(&self) -> RootPose {
        let (s, c) = f64::from(-self.yaw).sin_cos();
        let (x, z) = (-f64::from(self.x), -f64::from(self.z));
        RootPose { x: (c * x + s * z) as f32, z: (c * z - s * x) as f32, yaw: -self.yaw }
    }

    /// The point `p` (metres) moved: `R_y(yaw) p + (x, 0, z)`.
    pub fn apply_point(&self, p: [f32; 3]) -> [f32; 3] {
        let r = self.apply_vector(p);
        [r[0] + self.x, r[1], r[2] + self.z]
    }

    /// The direction `v` turned by the yaw alone: `R_y(yaw) v`.
    pub fn apply_vector(&self, v: [f32; 3]) -> [f32; 3] {
        let (s, c) = self.yaw.sin_cos();
        [c * v[0] + s * v[2], v[1], c * v[2] - s * v[0]]
    }

    /// Component-wise `a + (b - a) * t` of `(x, z, yaw)`, in `f64`.
    pub fn lerp(a: &RootPose, b: &RootPose, t: f64) -> RootPose {
        let l = |a: f32, b: f32| (f64::from(a) + (f64::from(b) - f64::from(a)) * t) as f32;
        RootPose { x: l(a.x, b.x), z: l(a.z, b.z), yaw: l(a.yaw, b.yaw) }
    }
}

/// The root motion of one clip ([`crate::container::Manifest::root_motion`]): where the character's
/// root was at each stored frame, relative to the clip's first frame.
///
/// Validated on read: `clip` is a clip of the asset, at most one track per clip, one pose per stored
/// frame (`frames.len() == clip.frame_count`), `frames[0]` exactly [`RootPose::IDENTITY`], every
/// value finite and within [`ROOT_MOTION_LIMIT`], and for a one-shot clip `cycle == frames[last]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootMotionTrack {
    /// Index into [`crate::container::Manifest::clips`].
    pub clip: u32,
    /// Per stored frame of the clip, the pose that maps the baked (in-place) frame to the source's
    /// frame; `frames[0]` is the identity.
    pub frames: Vec<RootPose>,
    /// The pose at the clip's end relative to its first frame: for a looping clip one whole cycle
    /// (where the next cycle's first frame is), for a one-shot clip its last frame's. Its
    /// [`RootPose::distance`] is the clip's distance per cycle.
    pub cycle: RootPose,
}

impl RootMotionTrack {
    /// The pose at phase `p` in `[0, 1]` of `clip` (its storage: looping clips' frame `k` at
    /// `k / n` and phase 1 at [`cycle`](Self::cycle), one-shot clips' at `k / (n - 1)`), linear
    /// between frames. A phase outside `[0, 1]` is clamped; NaN gives the identity.
    pub fn pose_in_cycle(&self, clip: &Clip, p: f64) -> RootPose {
        let n = self.frames.len();
        if n == 0 || p.is_nan() {
            return RootPose::IDENTITY;
        }
        let p = p.clamp(0.0, 1.0);
        let intervals = match clip.mode {
            ClipMode::Looping => n,
            ClipMode::OneShot => n - 1,
        };
        if intervals == 0 {
            return self.frames[0];
        }
        let pos = p * intervals as f64;
        let k = (pos.floor() as usize).min(intervals - 1);
        let t = pos - k as f64;
        let at = |i: usize| if i < n { self.frames[i] } else { self.cycle };
        RootPose::lerp(&at(k), &at(k + 1), t)
    }

    /// The pose at unwrapped phase `x` (cycles) of `clip` played with `wrap`: [`Wrap::Loop`]
    /// composes `floor(x)` whole cycles (negative ones inverted) with the pose at `fract(x)`;
    /// [`Wrap::Clamp`] holds the ends; [`Wrap::PingPong`] follows the triangle wave. Computed in
    /// `f64`; a non-finite `x` gives the identity.
    pub fn pose_at(&self, clip: &Clip, x: f64, wrap: Wrap) -> RootPose {
        if !x.is_finite() {
            return RootPose::IDENTITY;
        }
        match wrap {
            Wrap::Clamp => self.pose_in_cycle(clip, x),
            Wrap::PingPong => {
                let m = x.rem_euclid(2.0);
                self.pose_in_cycle(clip, 1.0 - (1.0 - m).abs())
            }
            Wrap::Loop => {
                let whole = x.floor();
                let within = self.pose_in_cycle(clip, x - whole);
                cycles(&self.cycle, whole).then_local(&within)
            }
        }
    }

    /// The motion between unwrapped phases `x0` and `x1` in the frame of the pose at `x0`:
    /// `pose_at(x0)^-1 ∘ pose_at(x1)`.
    ///
    /// Looping, only the whole cycles between the two phases are composed (`floor(x1) -
    /// floor(x0)`), so a large phase costs no precision.
    pub fn delta(&self, clip: &Clip, x0: f64, x1: f64, wrap: Wrap) -> RootPose {
        if wrap == Wrap::Loop && x0.is_finite() && x1.is_finite() {
            let (k0, k1) = (x0.floor(), x1.floor());
            let w0 = self.pose_in_cycle(clip, x0 - k0);
            let w1 = self.pose_in_cycle(clip, x1 - k1);
            return w0.inverse().then_local(&cycles(&self.cycle, k1 - k0)).then_local(&w1);
        }
        self.pose_at(clip, x0, wrap).inverse().then_local(&self.pose_at(clip, x1, wrap))
    }
}

/// `cycle` composed with itself `k` times (`k` a whole number; negative: its inverse), by
/// repeated squaring in `f64` (`log2 |k|` compositions, no cancellation for small yaws).
fn cycles(cycle: &RootPose, k: f64) -> RootPose {
    let base = if k < 0.0 { cycle.inverse() } else { *cycle };
    let mut n = k.abs().min(f64::from(u32::MAX)) as u64;
    let (mut result, mut square) = (Pose64::IDENTITY, Pose64::from(base));
    while n > 0 {
        if n & 1 == 1 {
            result = result.then(&square);
        }
        square = square.then(&square);
        n >>= 1;
    }
    result.into()
}

/// A [`RootPose`] in `f64`, for composing many.
#[derive(Debug, Clone, Copy)]
struct Pose64 {
    x: f64,
    z: f64,
    yaw: f64,
}

impl Pose64 {
    const IDENTITY: Pose64 = Pose64 { x: 0.0, z: 0.0, yaw: 0.0 };

    fn then(&self, other: &Pose64) -> Pose64 {
        let (s, c) = self.yaw.sin_cos();
        Pose64 {
            x: self.x + c * other.x + s * other.z,
            z: self.z + c * other.z - s * other.x,
            yaw: self.yaw + other.yaw,
        }
    }
}

impl From<RootPose> for Pose64 {
    fn from(p: RootPose) -> Self {
        Pose64 { x: p.x.into(), z: p.z.into(), yaw: p.yaw.into() }
    }
}

impl From<Pose64> for RootPose {
    fn from(p: Pose64) -> Self {
        RootPose { x: p.x as f32, z: p.z as f32, yaw: p.yaw as f32 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clip(mode: ClipMode, frames: u32) -> Clip {
        Clip {
            name: "walk".into(),
            first_frame: 0,
            frame_count: frames,
            fps: 30.0,
            mode,
            duration: 1.0,
            stride: 0.0,
        }
    }

    fn close(a: RootPose, b: RootPose, tol: f32) -> bool {
        (a.x - b.x).abs() <= tol && (a.z - b.z).abs() <= tol && (a.yaw - b.yaw).abs() <= tol
    }

    /// The tolerance of these checks: a few `f32` roundings (2^-24 relative) of values of about 10.
    const TOL: f32 = 8.0 * 10.0 * f32::EPSILON;

    #[test]
    fn composition_inverse_and_application_agree() {
        let a = RootPose { x: 1.5, z: -0.25, yaw: 0.7 };
        let b = RootPose { x: -0.3, z: 2.0, yaw: -1.9 };
        let p = [0.4, 1.2, -0.8];
        let ab = a.then_local(&b);
        let direct = a.apply_point(b.apply_point(p));
        let composed = ab.apply_point(p);
        for i in 0..3 {
            assert!((direct[i] - composed[i]).abs() <= TOL, "{direct:?} {composed:?}");
        }
        assert!(close(a.inverse().then_local(&a), RootPose::IDENTITY, TOL));
        assert!(close(a.then_local(&a.inverse()), RootPose::IDENTITY, TOL));
    }

    #[test]
    fn whole_cycles_equal_repeated_composition() {
        for cycle in [RootPose { x: 0.2, z: 1.4, yaw: 0.3 }, RootPose { x: 0.0, z: 1.4, yaw: 0.0 }] {
            let mut repeated = RootPose::IDENTITY;
            for k in 1..=7 {
                repeated = repeated.then_local(&cycle);
                assert!(close(cycles(&cycle, f64::from(k)), repeated, TOL), "{k}");
            }
            assert!(close(cycles(&cycle, -1.0), cycle.inverse(), TOL));
        }
    }

    #[test]
    fn poses_follow_the_wraps() {
        let c = clip(ClipMode::Looping, 4);
        let step = RootPose { x: 0.0, z: 0.25, yaw: 0.0 };
        let frames: Vec<RootPose> =
            (0..4).map(|k| RootPose { z: 0.25 * k as f32, ..RootPose::IDENTITY }).collect();
        let track = RootMotionTrack { clip: 0, frames, cycle: RootPose { z: 1.0, ..step } };
        assert_eq!(track.pose_at(&c, 0.0, Wrap::Loop), RootPose::IDENTITY);
        assert!(close(track.pose_at(&c, 0.875, Wrap::Loop), RootPose { z: 0.875, ..step }, TOL));
        assert!(close(track.pose_at(&c, 2.5, Wrap::Loop), RootPose { z: 2.5, ..step }, TOL));
        assert!(close(track.pose_at(&c, -0.5, Wrap::Loop), RootPose { z: -0.5, ..step }, TOL));
        assert!(close(track.pose_at(&c, 3.0, Wrap::Clamp), RootPose { z: 1.0, ..step }, TOL));
        assert!(close(track.pose_at(&c, 1.5, Wrap::PingPong), RootPose { z: 0.5, ..step }, TOL));
        assert!(close(track.delta(&c, 0.25, 1.25, Wrap::Loop), RootPose { z: 1.0, ..step }, TOL));
        assert_eq!(track.pose_at(&c, f64::NAN, Wrap::Loop), RootPose::IDENTITY);
    }
}
