//! Root motion in the crowd ([`Crowd::set_root_motion`]): instances whose clips carry a
//! [`RootMotionTrack`] move by it, computed on the CPU from the phase the shader shows.
//!
//! At each [`Crowd::advance`], for every instance with root motion on, each playing slot's
//! unwrapped phase is taken at the previous and the current frame's shader time exactly as the
//! shader computes it (`offset + time * rate` in `f32`, the slot's [`Wrap`]), and the slot moves by
//! its track's [`RootMotionTrack::delta`] between the two. While a cross-fade runs the two slots'
//! moves are blended by the fade weight at the middle of the step (the blend of their root
//! velocities; exact for the linear fade over steps inside it). The move, in the instance's own
//! frame, is scaled by the instance scale, turned by its yaw and added to its position and yaw (in
//! `f64`, rounded once), and the record is marked dirty, as [`Crowd::set_transform`] does.
//!
//! Successive moves compose to the motion between the first and the last phase, so from phase 0
//! over one whole loop an instance moves by exactly its track's [`RootMotionTrack::cycle`] (turned
//! by its yaw), up to one `f32` rounding of the record per step.

use super::{Crowd, FLAG_ROOT_MOTION, InstanceId, events};
use crate::instance::PlayingSlot;
use crate::playback::{self, Wrap};
use crate::root_motion::{RootMotionTrack, RootPose};

impl Crowd {
    /// Turns root motion on or off for instance `i`: while on, every [`advance`](Self::advance)
    /// moves it by the root motion of the clips it plays (their [`RootMotionTrack`]s in
    /// [`super::CrowdAsset::root_motion`]; clips without one do not move it). Each slot's move is
    /// its track's [`RootMotionTrack::delta`] between the unwrapped phases the shader shows at the
    /// previous and the current frame (`offset + time * rate` in `f32`, the slot's wrap); during a
    /// cross-fade the two slots' moves are blended by the fade weight at the middle of the step.
    /// The move, scaled by the instance scale and turned by its yaw, is added to its position and
    /// yaw, and the record is marked dirty as [`set_transform`](Self::set_transform) does. From
    /// phase 0, one whole loop moves the instance by exactly the track's
    /// [`RootMotionTrack::cycle`] (up to one `f32` rounding of the record per step). Off by
    /// default; the game moves instances itself otherwise.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_root_motion(&mut self, i: InstanceId, on: bool) {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        let flag = &mut self.flags[i as usize];
        let was = *flag & FLAG_ROOT_MOTION != 0;
        if on && !was {
            *flag |= FLAG_ROOT_MOTION;
            self.root_movers.push(i);
        } else if !on && was {
            *flag &= !FLAG_ROOT_MOTION;
            self.root_movers.retain(|&m| m != i);
        }
    }

    /// Whether instance `i` moves by root motion ([`set_root_motion`](Self::set_root_motion)).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn root_motion(&self, i: InstanceId) -> bool {
        self.flags[i as usize] & FLAG_ROOT_MOTION != 0
    }

    /// The track of `clip`, if it has one.
    fn track(&self, clip: u32) -> Option<&RootMotionTrack> {
        let index = (*self.root_by_clip.get(clip as usize)?)?;
        self.asset.root_motion.get(index as usize)
    }

    /// How `slot` moves between shader times `t0` and `t1` (identity without a track).
    fn slot_delta(&self, slot: PlayingSlot, t0: f32, t1: f32) -> RootPose {
        let (Some(track), Some(clip)) = (self.track(slot.clip), self.asset.clips.get(slot.clip as usize))
        else {
            return RootPose::IDENTITY;
        };
        let wrap = Wrap::from_code(slot.wrap_code, clip.mode);
        let x0 = f64::from(events::unwrapped(slot.phase_offset, t0, slot.rate));
        let x1 = f64::from(events::unwrapped(slot.phase_offset, t1, slot.rate));
        if x0 == x1 {
            return RootPose::IDENTITY;
        }
        track.delta(clip, x0, x1, wrap)
    }

    /// Moves every instance with root motion on by its clips' motion between shader times `t0`
    /// and `t1` (of one epoch).
    pub(super) fn apply_root_motion(&mut self, t0: f32, t1: f32) {
        if self.root_movers.is_empty() || t0 == t1 {
            return;
        }
        for k in 0..self.root_movers.len() {
            let i = self.root_movers[k];
            let r = self.records[i as usize];
            let mut d = self.slot_delta(r.slot_a(), t0, t1);
            let duration = r.fade_duration();
            if duration > 0.0 {
                let w = playback::fade_weight(0.5 * t0 + 0.5 * t1, r.fade_start, duration);
                let b = self.slot_delta(r.slot_b(), t0, t1);
                d = RootPose::lerp(&d, &b, f64::from(w));
            }
            if d == RootPose::IDENTITY {
                continue;
            }
            let scale = f64::from(r.scale);
            let (s, c) = f64::from(r.yaw).sin_cos();
            let (dx, dz) = (f64::from(d.x) * scale, f64::from(d.z) * scale);
            let position = [
                (f64::from(r.position[0]) + c * dx + s * dz) as f32,
                r.position[1],
                (f64::from(r.position[2]) + c * dz - s * dx) as f32,
            ];
            let yaw = (f64::from(r.yaw) + f64::from(d.yaw)) as f32;
            self.set_transform(i, position, yaw);
        }
    }
}

#[cfg(test)]
mod tests {
    // Tests unwrap: a failure is the test failing.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::clip::{ClipMode, ClipRowMap};
    use crate::crowd::{CrowdAsset, CrowdConfig};
    use crate::encoding::PositionBounds;
    use crate::instance::PlayMode;
    use crate::lod::LodThresholds;

    const WALK: u32 = 0;
    const STRAFE: u32 = 1;
    const STEP: u32 = 2;

    /// walk (1 s loop, 30 frames: 1.3 m forward while swaying and turning 0.5 rad), strafe (1 s
    /// loop, 30 frames: 2 m along +X), step (1.5 s one-shot, 46 frames: 0.5 m forward).
    fn asset() -> CrowdAsset {
        let mut m = ClipRowMap::new();
        m.push("walk", 1.0, 30.0, ClipMode::Looping, 1.3).unwrap();
        m.push("strafe", 1.0, 30.0, ClipMode::Looping, 2.0).unwrap();
        m.push("step", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
        let walk = (0..30)
            .map(|k| {
                let p = k as f32 / 30.0;
                RootPose { x: 0.02 * (std::f32::consts::TAU * p).sin(), z: 1.3 * p, yaw: 0.5 * p }
            })
            .collect();
        let strafe = (0..30).map(|k| RootPose { x: 2.0 * k as f32 / 30.0, ..RootPose::IDENTITY }).collect();
        let step: Vec<RootPose> =
            (0..46).map(|k| RootPose { z: 0.5 * k as f32 / 45.0, ..RootPose::IDENTITY }).collect();
        let step_end = step[45];
        CrowdAsset {
            clips: m.clips().to_vec(),
            bounds: PositionBounds { min: [-0.3, 0.0, -0.2], extent: [0.6, 1.8, 0.4] },
            lod_triangles: vec![100],
            lod_distances: LodThresholds::new(&[]).unwrap(),
            attachment_triangles: 0,
            root_motion: vec![
                RootMotionTrack { clip: WALK, frames: walk, cycle: RootPose { x: 0.0, z: 1.3, yaw: 0.5 } },
                RootMotionTrack {
                    clip: STRAFE,
                    frames: strafe,
                    cycle: RootPose { x: 2.0, ..RootPose::IDENTITY },
                },
                RootMotionTrack { clip: STEP, frames: step, cycle: step_end },
            ],
        }
    }

    /// The bound of `steps` moves of a record whose values stay below `magnitude` (metres or
    /// radians): each move rounds the position and yaw once to f32, and the move itself (computed
    /// in f64 from f32 track poses, rounded to f32) once more; the poses at the ends of the moves
    /// are shared by neighbouring moves, so their rounding telescopes. Four f32 roundings
    /// (`2^-24` relative each) per step, with room to spare.
    fn bound(steps: u32, magnitude: f32) -> f32 {
        steps as f32 * 4.0 * magnitude * f32::EPSILON
    }

    fn advance(crowd: &mut Crowd, steps: u32, dt: f64) {
        for _ in 0..steps {
            crowd.advance(dt);
        }
    }

    #[test]
    fn one_loop_moves_the_instance_by_exactly_the_track_s_cycle() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let (p0, yaw0) = ([10.0, 0.5, -4.0], 0.3f32);
        let i = crowd.spawn(p0, yaw0, WALK);
        let still = crowd.spawn(p0, yaw0, WALK);
        crowd.set_root_motion(i, true);
        assert!(crowd.root_motion(i) && !crowd.root_motion(still));
        let _ = crowd.take_record_uploads();
        crowd.advance(1.0 / 30.0);
        // The moved record is dirty (uploaded), the other is not.
        let uploads: Vec<u32> =
            crowd.take_record_uploads().iter().map(|(first, rs)| first + rs.len() as u32).collect();
        assert_eq!(uploads, vec![1], "only record 0 moved");
        advance(&mut crowd, 29, 1.0 / 30.0);
        // The phase the shader shows is exactly one loop on.
        let r = crowd.records()[i as usize];
        assert_eq!(crowd.shader_time() * r.rate_a + r.phase_offset_a, 1.0);
        let (s, c) = yaw0.sin_cos();
        let expected = [p0[0] + s * 1.3, p0[1], p0[2] + c * 1.3];
        let b = bound(30, 16.0);
        for a in 0..3 {
            assert!(
                (r.position[a] - expected[a]).abs() <= b,
                "axis {a}: {:?} vs {expected:?} (bound {b})",
                r.position
            );
        }
        assert!((r.yaw - (yaw0 + 0.5)).abs() <= bound(30, 1.0), "{}", r.yaw);
        assert_eq!(crowd.records()[still as usize].position, p0);
        // Turned off, it stays put.
        crowd.set_root_motion(i, false);
        advance(&mut crowd, 10, 1.0 / 30.0);
        assert_eq!(crowd.records()[i as usize].position, r.position);
    }

    /// A cross-fade blends the two clips' root velocities by the fade weight: with constant
    /// velocities (linear tracks) and a linear fade, the move over the fade is the mean of the two.
    #[test]
    fn a_cross_fade_blends_the_two_clips_motion_by_the_fade_weight() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.set_root_motion(i, true);
        advance(&mut crowd, 30, 1.0 / 30.0);
        let p = crowd.records()[i as usize].position;
        assert!((p[0] - 2.0).abs() <= bound(30, 4.0) && p[2] == 0.0, "{p:?}");
        // Strafe (2 m/s along +X) fades into step (1/3 m/s along +Z) over 0.5 s: the fade moves it
        // by 0.5 s x the mean of the two velocities.
        crowd.play(i, STEP, 0.5);
        advance(&mut crowd, 15, 1.0 / 30.0);
        let r = crowd.records()[i as usize];
        assert_eq!(r.fade_duration(), 0.0, "the fade has completed");
        let expected = [2.0 + 0.5 * 2.0 / 2.0, 0.0, 0.5 * (0.5 / 1.5) / 2.0];
        let b = bound(45, 4.0);
        for a in 0..3 {
            assert!(
                (r.position[a] - expected[a]).abs() <= b,
                "axis {a}: {:?} vs {expected:?} (bound {b})",
                r.position
            );
        }
        // The one-shot step then plays on to its end (its last 2/3, 1 s) and holds it.
        advance(&mut crowd, 60, 1.0 / 30.0);
        let end = crowd.records()[i as usize].position;
        assert!((end[2] - (expected[2] + 0.5 * 2.0 / 3.0)).abs() <= bound(105, 4.0), "{end:?}");
        let _ = crowd.take_record_uploads();
        advance(&mut crowd, 5, 1.0 / 30.0);
        assert_eq!(crowd.records()[i as usize].position, end);
        assert!(crowd.take_record_uploads().is_empty(), "a held end moves nothing and uploads nothing");
    }

    #[test]
    fn play_modes_wrap_the_motion_like_the_phase() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        // Ping-pong: forwards over one cycle, back over the next.
        let i = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.play_as(i, STRAFE, 0.0, PlayMode::PingPong);
        crowd.set_root_motion(i, true);
        advance(&mut crowd, 30, 1.0 / 30.0);
        assert!((crowd.records()[i as usize].position[0] - 2.0).abs() <= bound(30, 4.0));
        advance(&mut crowd, 30, 1.0 / 30.0);
        assert!(crowd.records()[i as usize].position[0].abs() <= bound(60, 4.0));
        // Scale scales the move.
        let j = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.set_scale(j, 2.0);
        crowd.set_root_motion(j, true);
        advance(&mut crowd, 30, 1.0 / 30.0);
        assert!((crowd.records()[j as usize].position[0] - 4.0).abs() <= bound(30, 8.0));
    }

    /// Stride matching and root motion agree: a travelling loop whose stride is its track's
    /// distance per cycle, played at a speed, moves at that speed.
    #[test]
    fn a_stride_matched_speed_moves_the_instance_at_that_speed() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.set_root_motion(i, true);
        crowd.set_speed(i, 1.0);
        assert_eq!(crowd.records()[i as usize].rate_a, 0.5);
        advance(&mut crowd, 60, 1.0 / 30.0);
        let p = crowd.records()[i as usize].position;
        assert!((p[0] - 2.0).abs() <= bound(60, 4.0), "{p:?}");
    }

    /// Across an epoch re-base (every 64 s of shader time) the move is still that of the phase the
    /// shader shows: 70 s of strafing moves 140 m, with no jump at the re-base.
    #[test]
    fn root_motion_runs_on_across_an_epoch_rebase() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.set_root_motion(i, true);
        advance(&mut crowd, 70 * 30, 1.0 / 30.0);
        assert!(crowd.clock().epoch() > 0.0, "the epoch was re-based");
        let p = crowd.records()[i as usize].position;
        assert!((p[0] - 140.0).abs() <= bound(70 * 30, 256.0), "{p:?}");
    }
}
