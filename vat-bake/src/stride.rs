//! Stride extraction: how far a locomotion cycle carries the character, from its planted feet.
//!
//! A baked locomotion clip plays in place; the crowd moves each instance at `speed` and plays the
//! clip at `rate = speed / stride` cycles per second so the feet stay planted. The stride (distance
//! per cycle, in the bake's output space: metres for a rig whose armature scales centimetres by
//! 0.01) is measured here from the animation itself:
//!
//! 1. The feet are [`Rig::feet`], else found by name or by the skeleton's shape
//!    ([`crate::feet::find_feet`]).
//! 2. Sample the clip at its keys when it is densely keyed, else [`SAMPLES_PER_CYCLE`] times evenly
//!    over its duration (see `sample_times`), and take each foot's global (output-space) position.
//! 3. The clip's **travel** `D` is how far the feet move over a looping clip (end minus start, both
//!    feet averaged, horizontally; a one-shot clip's is how far the feet's common ancestor, the
//!    hips, moves): the root motion of a walk that moves its root or hips forward, zero for an
//!    in-place walk. Positions are taken in the frame that travels at `D / duration`, where
//!    a planted foot slides backwards whichever kind the walk is (an in-place walk's planted foot
//!    slides back by itself; a root-motion walk's stands still while the frame moves on).
//! 4. Each foot's velocity at each sample is the central difference of its positions (wrapping for
//!    looping clips; one-shot clips skip their first and last sample).
//! 5. A sample is **low** when the foot is within [`contact_height_tolerance`] of its lowest height
//!    over the clip (`+Y` is up). The **facing** is taken from the clip: opposite to the mean
//!    horizontal velocity of the low samples (a planted foot slides back, a low swinging foot is
//!    rare; when those velocities do not agree on a direction, [`MIN_COHERENCE`], the clip is no
//!    gait), refined as opposite to the per-axis median velocity of the **contacts** (low samples
//!    moving backwards along the facing) until it settles. A swinging foot moves forwards, and is
//!    high except around lift-off and touch-down. (Comparing the two feet's speeds would not do:
//!    in the in-place frame a running foot swings forward more slowly on average than the planted
//!    one slides back, as its swing lasts longer than its stance.)
//! 6. The stride is the median of the backward speed over the contacts of both feet, times the
//!    clip's duration.
//!
//! The median ignores the few samples where a central difference straddles touch-down or
//! lift-off. The measure assumes the foot joint slides at constant speed while planted (relative
//! to the travelling frame), which holds for the procedural humanoid (its stance is an explicit
//! constant-speed trajectory), exactly for a root-motion walk whose planted foot stands still, and
//! closely for most captured or hand-keyed cycles.

use glam::Vec3;

use crate::feet::{FeetSource, NoFeet, find_feet};
use crate::rig::{AnimationClip, Feet, Rig};
use crate::sample::{global_matrices, sample_pose};
use crate::{BakeError, Result};

/// Even samples per clip cycle used to find contacts and velocities when the clip is not densely
/// keyed.
pub const SAMPLES_PER_CYCLE: usize = 240;

/// Fewest distinct key times per cycle for which [`extract_stride`] samples at the keys instead.
pub const MIN_KEYED_SAMPLES: usize = 24;

/// Most distinct key times per cycle sampled (beyond this, even samples are as good and cheaper).
pub const MAX_KEYED_SAMPLES: usize = 4096;

/// Least coherence of the low samples' horizontal velocities (the length of their sum over the
/// sum of their lengths) for a clip to be a gait: a planted foot slides one way (0.9 to 1 on the
/// fixtures and the procedural gaits); feet that only sway with the hips go back and forth (near
/// 0), and yield no stride.
pub const MIN_COHERENCE: f64 = 0.25;

/// The height above its lowest point within which a foot counts as low, metres: 2 mm plus 5 % of the
/// foot's vertical range over the clip (a foot that rolls heel to toe rises a little while planted;
/// a lifted foot is well above this).
pub fn contact_height_tolerance(min_height: f64, max_height: f64) -> f64 {
    0.002 + 0.05 * (max_height - min_height).max(0.0)
}

/// A measured stride, with what it was measured from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stride {
    /// Distance per cycle in the bake's output space (metres for a metre-scale scene).
    pub stride: f32,
    /// The horizontal unit direction the clip walks in, taken from the clip.
    pub facing: Vec3,
    /// How far the clip's root motion carries the feet per cycle (0 for an in-place clip).
    pub travel: f32,
    /// The foot joints measured (found by geometry: left is on the left of the facing).
    pub feet: Feet,
    /// How they were found.
    pub feet_source: FeetSource,
}

/// Why a clip yields no stride. [`std::fmt::Display`] says it in one line, without the clip's
/// name (the caller names the clip).
#[derive(Debug, Clone, PartialEq)]
pub enum NoStride {
    /// The clip is not marked locomotion.
    NotLocomotion,
    /// The clip lasts no time.
    NoDuration,
    /// No foot joints were found.
    NoFeet(NoFeet),
    /// The feet were found but never slide back while planted and the clip does not travel.
    NoGait {
        /// The left and right foot's names.
        feet: [String; 2],
        /// How they were found.
        source: FeetSource,
    },
}

impl std::fmt::Display for NoStride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotLocomotion => f.write_str("the clip is not locomotion"),
            Self::NoDuration => f.write_str("the clip lasts no time"),
            Self::NoFeet(why) => write!(f, "{why}"),
            Self::NoGait { feet: [l, r], source } => write!(
                f,
                "feet \"{l}\" and \"{r}\" ({source}) never slide back along the ground while planted, and the \
                 clip does not travel (no root motion): not a forward gait"
            ),
        }
    }
}

/// The stride of `clip` (see the module docs), `None` when [`measure_stride`] finds none.
///
/// # Errors
/// As [`measure_stride`].
pub fn extract_stride(rig: &Rig, clip: &AnimationClip) -> Result<Option<f32>> {
    Ok(measure_stride(rig, clip)?.ok().map(|s| s.stride))
}

/// The stride of `clip` per cycle, measured from its feet (see the module docs), or why there is
/// none: the clip is not marked locomotion, lasts no time, the rig has no feet to be found, or no
/// foot is ever planted and moving backwards relative to the clip's travel (not a forward gait).
///
/// # Errors
/// [`BakeError::InvalidInput`] when [`Rig::feet`] names a node that does not exist, or a sampled
/// foot position is not finite.
pub fn measure_stride(rig: &Rig, clip: &AnimationClip) -> Result<std::result::Result<Stride, NoStride>> {
    if !clip.locomotion {
        return Ok(Err(NoStride::NotLocomotion));
    }
    check_feet_nodes(rig)?;
    let duration = f64::from(clip.duration());
    if !(duration > 0.0 && duration.is_finite()) {
        return Ok(Err(NoStride::NoDuration));
    }
    let (feet, feet_source) = match find_feet(rig) {
        Ok(found) => found,
        Err(why) => return Ok(Err(NoStride::NoFeet(why))),
    };
    let no_gait = || {
        Ok(Err(NoStride::NoGait {
            feet: [feet.left, feet.right].map(|node| rig.nodes[node].name.clone()),
            source: feet_source,
        }))
    };
    let tracks = FeetTracks::sample(rig, clip, feet, duration)?;
    let low = tracks.low_velocities();
    let Some(facing) = facing_of(&low) else { return no_gait() };
    let mut backwards: Vec<f64> =
        contacts(&low, facing).iter().map(|v| -(v[0] * facing[0] + v[1] * facing[1])).collect();
    if backwards.is_empty() {
        return no_gait();
    }
    let stride = median(&mut backwards) * duration;
    // Feet found by geometry are named left and right by the facing: left is up x forward.
    let left_axis = [facing[1], -facing[0]];
    let apart: f64 = tracks.tracks[0]
        .iter()
        .zip(&tracks.tracks[1])
        .map(|(l, r)| (l[0] - r[0]) * left_axis[0] + (l[2] - r[2]) * left_axis[1])
        .sum();
    let feet = if feet_source == FeetSource::Geometry && apart < 0.0 {
        Feet { left: feet.right, right: feet.left }
    } else {
        feet
    };
    if !(stride > 0.0 && stride.is_finite()) {
        return no_gait();
    }
    let travel = tracks.travel;
    Ok(Ok(Stride {
        stride: stride as f32,
        facing: Vec3::new(facing[0] as f32, 0.0, facing[1] as f32),
        travel: travel[0].hypot(travel[2]) as f32,
        feet,
        feet_source,
    }))
}

/// An error when [`Rig::feet`] names a node the rig does not have.
fn check_feet_nodes(rig: &Rig) -> Result<()> {
    if let Some(feet) = rig.feet {
        for (side, node) in [("left", feet.left), ("right", feet.right)] {
            if node >= rig.nodes.len() {
                return Err(BakeError::InvalidInput {
                    part: format!("rig \"{}\" {side} foot", rig.name),
                    problem: format!("is node {node}; the rig has {} nodes", rig.nodes.len()),
                });
            }
        }
    }
    Ok(())
}

/// The feet's deepest common ancestor (the hips), if they have one.
fn body_of(rig: &Rig, feet: Feet) -> Option<usize> {
    let chain = |mut node: usize| {
        let mut chain = vec![node];
        while let Some(p) = rig.nodes[node].parent.filter(|&p| p < node) {
            chain.push(p);
            node = p;
        }
        chain
    };
    let left_chain = chain(feet.left);
    chain(feet.right).into_iter().find(|n| left_chain.contains(n))
}

/// Both feet's positions at the sample times, in the frame that travels with the clip (steps 2
/// and 3 of the module docs).
struct FeetTracks {
    /// The sample times (absolute seconds).
    times: Vec<f32>,
    /// The left and right foot's positions at each sample.
    tracks: [Vec<[f64; 3]>; 2],
    /// The clip's travel per cycle (horizontal; `y` 0).
    travel: [f64; 3],
    looping: bool,
    duration: f64,
}

impl FeetTracks {
    fn sample(rig: &Rig, clip: &AnimationClip, feet: Feet, duration: f64) -> Result<FeetTracks> {
        // The feet's deepest common ancestor (the hips): a one-shot clip's travel is the body's.
        let body = body_of(rig, feet);
        let looping = clip.looping.unwrap_or(true);
        // Positions of the two feet and the body at `time`, in the output space.
        let positions = |time: f32| -> Result<[[f64; 3]; 3]> {
            let globals = global_matrices(rig, &sample_pose(rig, clip, time));
            let mut out = [[0.0; 3]; 3];
            for (f, node) in [feet.left, feet.right, body.unwrap_or(feet.left)].into_iter().enumerate() {
                let p: Vec3 = globals[node].w_axis.truncate();
                if !p.is_finite() {
                    return Err(BakeError::InvalidInput {
                        part: format!("clip \"{}\"", clip.name),
                        problem: format!("foot position at {time} s is not finite"),
                    });
                }
                out[f] = [f64::from(p.x), f64::from(p.y), f64::from(p.z)];
            }
            Ok(out)
        };
        // The clip's horizontal travel: a loop's is exactly how far each foot moves over one cycle
        // (both averaged); a one-shot clip's is how far the body moves.
        let (first, last) = (positions(clip.start)?, positions(clip.end)?);
        let moved = |i: usize, a: usize| last[i][a] - first[i][a];
        let travel = [0, 1, 2].map(|a| match (a, looping, body) {
            (1, ..) => 0.0,
            (_, false, Some(_)) => moved(2, a),
            _ => 0.5 * (moved(0, a) + moved(1, a)),
        });

        let times = sample_times(clip);
        let n = times.len();
        let mut tracks = [Vec::with_capacity(n), Vec::with_capacity(n)];
        for &time in &times {
            let elapsed = (f64::from(time) - f64::from(clip.start)) / duration;
            let feet_now = positions(time)?;
            for f in 0..2 {
                // In the frame that travels with the clip.
                tracks[f].push(std::array::from_fn::<f64, 3, _>(|a| feet_now[f][a] - travel[a] * elapsed));
            }
        }
        Ok(FeetTracks { times, tracks, travel, looping, duration })
    }

    /// The central-difference velocity of `track` at sample `k` over its neighbouring samples;
    /// `None` where a one-shot clip has no neighbour. Looping clips wrap, the sample before the
    /// first lying one period earlier.
    fn velocity(&self, track: &[[f64; 3]], k: usize) -> Option<[f64; 3]> {
        let (times, n) = (&self.times, self.times.len());
        let (prev, next, span) = if self.looping {
            let prev = (k + n - 1) % n;
            let next = (k + 1) % n;
            let t = |i: usize| f64::from(times[i]);
            let mut span = t(next) - t(prev);
            if span <= 0.0 {
                span += self.duration;
            }
            (prev, next, span)
        } else if k == 0 || k + 1 == n {
            return None;
        } else {
            (k - 1, k + 1, f64::from(times[k + 1]) - f64::from(times[k - 1]))
        };
        (n >= 3 && span > 0.0).then(|| std::array::from_fn(|a| (track[next][a] - track[prev][a]) / span))
    }

    /// The horizontal velocities (`x`, `z`) of the low samples of both feet (step 5).
    fn low_velocities(&self) -> Vec<[f64; 2]> {
        let mut low = Vec::new();
        for track in &self.tracks {
            let min_y = track.iter().map(|p| p[1]).fold(f64::INFINITY, f64::min);
            let max_y = track.iter().map(|p| p[1]).fold(f64::NEG_INFINITY, f64::max);
            let tolerance = contact_height_tolerance(min_y, max_y);
            for k in 0..self.times.len() {
                let Some(v) = self.velocity(track, k) else { continue };
                if track[k][1] <= min_y + tolerance {
                    low.push([v[0], v[2]]);
                }
            }
        }
        low
    }
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let m = values.len();
    if m % 2 == 1 { values[m / 2] } else { 0.5 * (values[m / 2 - 1] + values[m / 2]) }
}

/// The contacts: the low samples moving backwards along `facing`.
fn contacts(low: &[[f64; 2]], facing: [f64; 2]) -> Vec<[f64; 2]> {
    low.iter().copied().filter(|v| v[0] * facing[0] + v[1] * facing[1] < 0.0).collect()
}

/// The facing (horizontal unit `x`, `z`) of the low samples' velocities `low` (step 5): opposite
/// to their mean, refined as opposite to the contacts' per-axis median until it settles; `None`
/// when they do not agree on a direction ([`MIN_COHERENCE`]).
fn facing_of(low: &[[f64; 2]]) -> Option<[f64; 2]> {
    let sum = low.iter().fold([0.0f64; 2], |s, v| [s[0] - v[0], s[1] - v[1]]);
    let scale: f64 = low.iter().map(|v| v[0].hypot(v[1])).sum();
    let length = sum[0].hypot(sum[1]);
    if !(scale > 0.0 && length >= MIN_COHERENCE * scale && length.is_finite()) {
        return None;
    }
    let mut facing = [sum[0] / length, sum[1] / length];
    for _ in 0..4 {
        let planted = contacts(low, facing);
        if planted.is_empty() {
            break;
        }
        let mx = -median(&mut planted.iter().map(|v| v[0]).collect::<Vec<_>>());
        let mz = -median(&mut planted.iter().map(|v| v[1]).collect::<Vec<_>>());
        let len = mx.hypot(mz);
        if !(len > 0.0 && len.is_finite()) {
            break;
        }
        let next = [mx / len, mz / len];
        let settled = (next[0] - facing[0]).abs() + (next[1] - facing[1]).abs() < 1e-12;
        facing = next;
        if settled {
            break;
        }
    }
    Some(facing)
}

/// Where [`extract_stride`] samples `clip` (absolute seconds, increasing, within
/// `[start, end)`): at its key times when it has at least [`MIN_KEYED_SAMPLES`] distinct ones in
/// that span (a key's pose is exactly what was authored or solved, while between keys rotations are
/// interpolated and a planted ankle drifts slightly off its line), else [`SAMPLES_PER_CYCLE`] even
/// samples.
fn sample_times(clip: &AnimationClip) -> Vec<f32> {
    let mut keys: Vec<f32> = clip
        .channels
        .iter()
        .flat_map(|c| c.times.iter().copied())
        .filter(|&t| t >= clip.start && t < clip.end)
        .collect();
    keys.sort_by(f32::total_cmp);
    keys.dedup();
    if keys.len() >= MIN_KEYED_SAMPLES && keys.len() <= MAX_KEYED_SAMPLES {
        return keys;
    }
    let duration = f64::from(clip.duration());
    (0..SAMPLES_PER_CYCLE)
        .map(|k| (f64::from(clip.start) + k as f64 * duration / SAMPLES_PER_CYCLE as f64) as f32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::{Channel, ChannelTarget, Feet, KeyInterpolation, Node, Transform};

    /// A root, hips and two feet, walking towards `facing` (a horizontal unit vector). Each foot's
    /// translation is keyed (LINEAR): planted for half the cycle, sliding from `+a` to `-a` along
    /// the facing at height 0 (speed `4a / d`, so the true stride is `4a`), then swinging forward
    /// through a 15 cm arc. The right foot is half a cycle behind. With `root_motion`, the root
    /// also travels forward at the same speed, so a planted foot stands still in model space.
    fn two_leg_rig(a: f32, d: f32, root_motion: bool, facing: Vec3) -> Rig {
        let node = |name: &str, parent: Option<usize>, t: Vec3| Node {
            name: name.into(),
            parent,
            rest: Transform { translation: t, ..Transform::IDENTITY },
        };
        let speed = 4.0 * a / d;
        // (time fraction, along, y) keys of the left foot; the right foot is shifted by half a cycle.
        let left = [(0.0, a, 0.0), (0.5, -a, 0.0), (0.75, 0.0, 0.15), (1.0, a, 0.0)];
        let right = [(0.0, -a, 0.0), (0.25, 0.0, 0.15), (0.5, a, 0.0), (1.0, -a, 0.0)];
        let mut channels = vec![foot_track(2, &left, 0.1, d, facing), foot_track(3, &right, -0.1, d, facing)];
        if root_motion {
            let end = facing * speed * d;
            channels.push(Channel {
                target: ChannelTarget::Translation(0),
                interpolation: KeyInterpolation::Linear,
                times: vec![0.0, d],
                values: vec![0.0, 0.0, 0.0, end.x, end.y, end.z],
            });
        }
        Rig {
            name: "two-leg".into(),
            nodes: vec![
                node("root", None, Vec3::ZERO),
                node("hips", Some(0), Vec3::new(0.0, 0.9, 0.0)),
                node("foot_l", Some(1), Vec3::ZERO),
                node("foot_r", Some(1), Vec3::ZERO),
            ],
            clips: vec![AnimationClip {
                name: "walk".into(),
                channels,
                start: 0.0,
                end: d,
                looping: Some(true),
                known_stride: None,
                locomotion: true,
            }],
            feet: Some(Feet { left: 2, right: 3 }),
            ..Rig::default()
        }
    }

    /// Translation keys of a foot node (a child of the hips, 0.9 m up) from `(time fraction, along,
    /// y)` keys in model space of an in-place cycle, `side` metres to the character's left.
    fn foot_track(node: usize, keys: &[(f32, f32, f32)], side: f32, d: f32, facing: Vec3) -> Channel {
        let left = Vec3::Y.cross(facing);
        let mut times = Vec::new();
        let mut values = Vec::new();
        for &(f, along, y) in keys {
            times.push(f * d);
            let p = left * side + facing * along + Vec3::new(0.0, y - 0.9, 0.0);
            values.extend(p.to_array());
        }
        Channel {
            target: ChannelTarget::Translation(node),
            interpolation: KeyInterpolation::Linear,
            times,
            values,
        }
    }

    fn measured(rig: &Rig) -> Stride {
        match measure_stride(rig, &rig.clips[0]).unwrap() {
            Ok(s) => s,
            Err(why) => panic!("no stride: {why}"),
        }
    }

    #[test]
    fn recovers_the_stride_of_a_keyed_slide() {
        for (a, d) in [(0.37f32, 1.0f32), (0.57, 0.8), (0.825, 0.7)] {
            let rig = two_leg_rig(a, d, false, Vec3::Z);
            let got = extract_stride(&rig, &rig.clips[0]).unwrap().unwrap();
            let want = 4.0 * a;
            // Positions are f32 (relative error 2^-24 of ~1 m); a central difference spans
            // 2 / 240 of the stride, so the velocity's relative error is about
            // 2 * 2^-24 * 1 m / (2 * 4a / 240) < 1e-5 for a >= 0.3: 1e-4 is a safe margin, and far
            // inside the 0.1 % the issue asks for.
            assert!(((got - want) / want).abs() < 1e-4, "a = {a}, d = {d}: got {got}, want {want}");
        }
    }

    #[test]
    fn root_motion_counts_like_in_place_motion() {
        let rig = two_leg_rig(0.4, 1.0, true, Vec3::Z);
        let got = measured(&rig);
        assert!((got.stride - 1.6).abs() / 1.6 < 1e-4, "got {got:?}");
        assert!((got.travel - 1.6).abs() < 1e-5, "{got:?}");
    }

    /// The facing comes from the clip: walks towards -Z, +X and an oblique direction measure the
    /// same stride as towards +Z, in place and with root motion (the old measure assumed +Z and
    /// found no stride for -Z).
    #[test]
    fn the_facing_is_taken_from_the_clip() {
        for facing in [Vec3::Z, Vec3::NEG_Z, Vec3::X, Vec3::new(-0.6, 0.0, 0.8)] {
            for root_motion in [false, true] {
                let rig = two_leg_rig(0.4, 1.0, root_motion, facing);
                let got = measured(&rig);
                let what = format!("facing {facing}, root motion {root_motion}: {got:?}");
                assert!((got.stride - 1.6).abs() / 1.6 < 1e-4, "{what}");
                assert!(got.facing.distance(facing) < 1e-4, "{what}");
                assert_eq!(got.feet_source, FeetSource::Rig, "{what}");
            }
        }
    }

    #[test]
    fn every_reason_for_no_stride_is_said() {
        let mut rig = two_leg_rig(0.4, 1.0, false, Vec3::Z);
        let mut clip = rig.clips[0].clone();
        clip.locomotion = false;
        assert_eq!(measure_stride(&rig, &clip).unwrap(), Err(NoStride::NotLocomotion));
        assert_eq!(extract_stride(&rig, &clip).unwrap(), None);
        clip.locomotion = true;
        clip.end = 0.0;
        assert_eq!(measure_stride(&rig, &clip).unwrap(), Err(NoStride::NoDuration));
        clip.end = 1.0;
        clip.channels.clear();
        let why = measure_stride(&rig, &clip).unwrap().unwrap_err();
        assert_eq!(
            why.to_string(),
            "feet \"foot_l\" and \"foot_r\" (given by the rig) never slide back along the ground while planted, \
             and the clip does not travel (no root motion): not a forward gait"
        );
        // Without Rig::feet the names find them.
        rig.feet = None;
        let got = measured(&rig);
        assert_eq!((got.feet, got.feet_source), (Feet { left: 2, right: 3 }, FeetSource::Name));
        // Names that say nothing, and a skeleton whose joints all rest at the hips: no feet.
        rig.nodes[2].name = "a".into();
        rig.nodes[3].name = "b".into();
        let why = measure_stride(&rig, &rig.clips[0]).unwrap().unwrap_err().to_string();
        assert!(why.starts_with("no foot joints found by name (tried Mixamo mixamorig:LeftFoot"), "{why}");
        assert!(
            why.ends_with(
                "or by geometry (no end joint in the lowest quarter of the skeleton's height; two legs need two)"
            ),
            "{why}"
        );
        rig.feet = Some(Feet { left: 2, right: 99 });
        assert!(matches!(measure_stride(&rig, &rig.clips[0]), Err(BakeError::InvalidInput { .. })));
    }

    #[test]
    fn recovers_every_gait_of_the_procedural_humanoid() {
        let rig = crate::procgen::humanoid();
        let mut gaits = 0;
        for clip in &rig.clips {
            let got = extract_stride(&rig, clip).unwrap();
            let Some(want) = clip.known_stride.filter(|_| clip.locomotion) else {
                assert_eq!(got, None, "{} is not locomotion", clip.name);
                continue;
            };
            let got = got.unwrap();
            // Sampled at its keys (60 per second), where the ankle is the exact IK solution rounded
            // to f32: a central difference over two key spans (1/30 s, >= 4.6 cm of slide) of
            // positions good to ~1e-7 m errs by ~5e-6 relative at most. The issue asks for 0.1 %.
            assert!(((got - want) / want).abs() < 1e-5, "{}: got {got}, want {want}", clip.name);
            gaits += 1;
        }
        assert_eq!(gaits, 3, "walk, jog and run");
    }
}
