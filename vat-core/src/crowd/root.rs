//! Root motion in the crowd ([`Crowd::set_root_motion_mode`]): instances whose clips carry a
//! [`RootMotionTrack`] move by it, or report the move to the game, computed on the CPU from the
//! phase the shader shows.
//!
//! At each [`Crowd::advance`], for every instance with root motion on, each playing slot's
//! unwrapped phase is taken at the previous and the current frame's shader time exactly as the
//! shader computes it (`offset + time * rate` in `f32`, the slot's [`Wrap`]), and the slot moves by
//! its track's [`RootMotionTrack::delta`] between the two. While a cross-fade runs the two slots'
//! moves are blended by the fade weight at the middle of the step (the blend of their root
//! velocities; exact for the linear fade over steps inside it). The move, in the instance's own
//! frame, is scaled by the instance scale and turned by its yaw. Then, by the instance's
//! [`RootMotionMode`]:
//! - [`Apply`](RootMotionMode::Apply): it is added to the record's position and yaw (in `f64`,
//!   rounded once), and the record is marked dirty, as [`Crowd::set_transform`] does;
//! - [`Report`](RootMotionMode::Report): it is kept as a [`RootMotionDelta`] for
//!   [`Crowd::drain_root_motion`] and the record is left alone, so the game moves the instance
//!   (through its character controller, collision, navigation mesh) and writes the result back;
//! - [`ApplyAndReport`](RootMotionMode::ApplyAndReport): both.
//!
//! Successive moves compose to the motion between the first and the last phase, so from phase 0
//! over one whole loop an instance moves by exactly its track's [`RootMotionTrack::cycle`] (turned
//! by its yaw), up to one `f32` rounding of the record per step.

use super::{Crowd, FLAG_ROOT_APPLY, FLAG_ROOT_REPORT, InstanceId, events};
use crate::instance::{InstanceRecord, PlayingSlot};
use crate::playback::{self, Wrap};
use crate::root_motion::{RootMotionTrack, RootPose};

/// What a crowd does with an instance's root motion ([`Crowd::set_root_motion_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RootMotionMode {
    /// Root motion is ignored: the game moves the instance itself (the default).
    #[default]
    Off,
    /// Every [`Crowd::advance`] moves the instance's record by its clips' root motion.
    Apply,
    /// Every [`Crowd::advance`] reports the move as a [`RootMotionDelta`]
    /// ([`Crowd::drain_root_motion`]) and leaves the record where it is: the game applies it
    /// (or not) and writes the result back with [`Crowd::set_transform`].
    Report,
    /// Both: the record is moved and the move is reported.
    ApplyAndReport,
}

impl RootMotionMode {
    /// Whether the crowd moves the record ([`Apply`](Self::Apply), [`ApplyAndReport`](Self::ApplyAndReport)).
    pub fn applies(self) -> bool {
        matches!(self, Self::Apply | Self::ApplyAndReport)
    }

    /// Whether the crowd reports the move ([`Report`](Self::Report), [`ApplyAndReport`](Self::ApplyAndReport)).
    pub fn reports(self) -> bool {
        matches!(self, Self::Report | Self::ApplyAndReport)
    }
}

/// How far one instance's clips moved it over one [`Crowd::advance`], reported for instances in
/// [`RootMotionMode::Report`] or [`RootMotionMode::ApplyAndReport`] ([`Crowd::drain_root_motion`]).
///
/// `translation` and `yaw` are the move in world space: what [`RootMotionMode::Apply`] adds to the
/// record (`position.x += translation[0]`, `position.z += translation[1]`, `yaw += yaw`), computed
/// from the record as it was at the start of the step (its scale and yaw). A game in
/// [`RootMotionMode::Report`] that adds them to its own transform and writes it back with
/// [`Crowd::set_transform`] before the next `advance` moves the instance as `Apply` would (up to
/// one more `f32` rounding per step).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RootMotionDelta {
    /// The instance.
    pub instance: InstanceId,
    /// World-space move on the ground plane, `[x, z]`, metres: `local`'s translation scaled by the
    /// instance scale and turned by the instance's yaw (`x' = cos * x + sin * z`,
    /// `z' = cos * z - sin * x`).
    pub translation: [f32; 2],
    /// Turn about +Y, radians (the record's yaw convention: positive turns +Z towards +X).
    pub yaw: f32,
    /// The same move in the instance's own frame, unscaled, as the clips' tracks give it (metres
    /// and radians, the frame the instance faced at the start of the step): what
    /// [`Crowd::root_motion_delta`] returns for the step.
    pub local: RootPose,
    /// The crowd clock's time ([`crate::playback::Clock::now`], seconds) of the previous
    /// `advance`: where the step starts.
    pub from_time: f64,
    /// The crowd clock's time of the `advance` that made the move: where the step ends.
    pub to_time: f64,
}

/// The default of [`super::CrowdConfig::root_motion_capacity`]: 262,144 deltas (12 MiB) wait to be
/// drained, one frame of a crowd of that many reporting instances.
pub const DEFAULT_ROOT_MOTION_CAPACITY: usize = 1 << 18;

impl Crowd {
    /// Turns root motion on or off for instance `i`: the same as
    /// [`set_root_motion_mode`](Self::set_root_motion_mode) with [`RootMotionMode::Apply`] (on) or
    /// [`RootMotionMode::Off`] (off). While on, every [`advance`](Self::advance)
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
        self.set_root_motion_mode(i, if on { RootMotionMode::Apply } else { RootMotionMode::Off });
    }

    /// Whether instance `i` moves by root motion: its [`root_motion_mode`](Self::root_motion_mode)
    /// [applies](RootMotionMode::applies) it.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn root_motion(&self, i: InstanceId) -> bool {
        self.root_motion_mode(i).applies()
    }

    /// Sets what every [`advance`](Self::advance) does with instance `i`'s root motion (the move
    /// [`set_root_motion`](Self::set_root_motion) describes): nothing, move the record, report the
    /// move as a [`RootMotionDelta`] for [`drain_root_motion`](Self::drain_root_motion), or both.
    /// Only the instances with a mode other than [`RootMotionMode::Off`] cost anything at `advance`.
    /// [`despawn`](Self::despawn) sets it back to `Off`.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_root_motion_mode(&mut self, i: InstanceId, mode: RootMotionMode) {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        let flag = &mut self.flags[i as usize];
        let was = *flag & (FLAG_ROOT_APPLY | FLAG_ROOT_REPORT) != 0;
        *flag &= !(FLAG_ROOT_APPLY | FLAG_ROOT_REPORT);
        if mode.applies() {
            *flag |= FLAG_ROOT_APPLY;
        }
        if mode.reports() {
            *flag |= FLAG_ROOT_REPORT;
        }
        // `root_movers` stays sorted, so that one advance reports in ascending instance order
        // (hosts look an instance's delta up by binary search).
        let at = self.root_movers.binary_search(&i);
        match (was, mode != RootMotionMode::Off, at) {
            (false, true, Err(at)) => self.root_movers.insert(at, i),
            (true, false, Ok(at)) => {
                self.root_movers.remove(at);
            }
            _ => {}
        }
    }

    /// What [`advance`](Self::advance) does with instance `i`'s root motion
    /// ([`set_root_motion_mode`](Self::set_root_motion_mode)).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn root_motion_mode(&self, i: InstanceId) -> RootMotionMode {
        let flag = self.flags[i as usize];
        match (flag & FLAG_ROOT_APPLY != 0, flag & FLAG_ROOT_REPORT != 0) {
            (false, false) => RootMotionMode::Off,
            (true, false) => RootMotionMode::Apply,
            (false, true) => RootMotionMode::Report,
            (true, true) => RootMotionMode::ApplyAndReport,
        }
    }

    /// The root-motion moves reported by the [`advance`](Self::advance) calls since the last drain
    /// (instances in [`RootMotionMode::Report`] or [`RootMotionMode::ApplyAndReport`]), in order:
    /// by `advance`, then by ascending instance id. An instance whose clips did not move it over a
    /// step (no track, a held end, rate 0) reports nothing for it.
    ///
    /// At most [`CrowdConfig::root_motion_capacity`](super::CrowdConfig::root_motion_capacity)
    /// wait to be drained; later ones are counted in
    /// [`dropped_root_motion`](Self::dropped_root_motion) instead, so a game that never drains
    /// does not accumulate them (a report-only instance whose delta is dropped does not move).
    pub fn drain_root_motion(&mut self) -> std::vec::Drain<'_, RootMotionDelta> {
        self.root_reports.drain(..)
    }

    /// Root-motion moves found while
    /// [`CrowdConfig::root_motion_capacity`](super::CrowdConfig::root_motion_capacity) were already
    /// waiting to be drained, since the crowd was made: they were not kept.
    pub fn dropped_root_motion(&self) -> u64 {
        self.dropped_root_motion
    }

    /// How instance `i`'s clips move it between shader times `t0` and `t1` (seconds of the current
    /// epoch, as [`shader_time`](Self::shader_time) gives them), in its own frame, unscaled (metres
    /// and radians, as the tracks give it; scale it by the instance scale and turn it by the
    /// instance's yaw for the world): the move [`advance`](Self::advance) computes for a step from
    /// `t0` to `t1`, whatever the instance's [`RootMotionMode`]. For a game that steps its own
    /// character controller, e.g. `root_motion_delta(i, shader_time(), shader_time() + dt)` for the
    /// coming frame. Each playing slot moves by its track's [`RootMotionTrack::delta`] between the
    /// phases the shader shows at `t0` and `t1`, with the record as it is now (a fade or a queued
    /// play starting later is not foreseen); during a cross-fade the two are blended by the fade
    /// weight at the middle of the interval, which is what `advance` does per step (over a long
    /// interval the fade's weight changes within it: sum shorter ones). The identity without
    /// tracks, or for `t0 == t1`. Changes nothing.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn root_motion_delta(&self, i: InstanceId, t0: f32, t1: f32) -> RootPose {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        self.record_delta(&self.records[i as usize], t0, t1)
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

    /// How the record `r` moves between shader times `t0` and `t1`, in its own frame, unscaled:
    /// slot A's move, blended with slot B's by the fade weight at the middle of the step while a
    /// cross-fade runs.
    fn record_delta(&self, r: &InstanceRecord, t0: f32, t1: f32) -> RootPose {
        if t0 == t1 {
            return RootPose::IDENTITY;
        }
        let d = self.slot_delta(r.slot_a(), t0, t1);
        let duration = r.fade_duration();
        if duration > 0.0 {
            let w = playback::fade_weight(0.5 * t0 + 0.5 * t1, r.fade_start, duration);
            let b = self.slot_delta(r.slot_b(), t0, t1);
            return RootPose::lerp(&d, &b, f64::from(w));
        }
        d
    }

    /// Moves (or reports the move of) every instance with root motion on by its clips' motion
    /// between shader times `t0` and `t1` (of one epoch), which are the crowd clock's times `from`
    /// and `to`.
    pub(super) fn apply_root_motion(&mut self, t0: f32, t1: f32, from: f64, to: f64) {
        if self.root_movers.is_empty() || t0 == t1 {
            return;
        }
        for k in 0..self.root_movers.len() {
            let i = self.root_movers[k];
            let r = self.records[i as usize];
            let d = self.record_delta(&r, t0, t1);
            if d == RootPose::IDENTITY {
                continue;
            }
            // The world move, in f64 from the record: the same numbers for Apply and Report.
            let scale = f64::from(r.scale);
            let (s, c) = f64::from(r.yaw).sin_cos();
            let (dx, dz) = (f64::from(d.x) * scale, f64::from(d.z) * scale);
            let (wx, wz) = (c * dx + s * dz, c * dz - s * dx);
            let flag = self.flags[i as usize];
            if flag & FLAG_ROOT_REPORT != 0 {
                if self.root_reports.len() < self.config.root_motion_capacity {
                    self.root_reports.push(RootMotionDelta {
                        instance: i,
                        translation: [wx as f32, wz as f32],
                        yaw: d.yaw,
                        local: d,
                        from_time: from,
                        to_time: to,
                    });
                } else {
                    self.dropped_root_motion += 1;
                }
            }
            if flag & FLAG_ROOT_APPLY != 0 {
                let position = [
                    (f64::from(r.position[0]) + wx) as f32,
                    r.position[1],
                    (f64::from(r.position[2]) + wz) as f32,
                ];
                let yaw = (f64::from(r.yaw) + f64::from(d.yaw)) as f32;
                self.set_transform(i, position, yaw);
            }
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
            impostor_switch: None,
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

    #[test]
    fn the_mode_is_set_and_read_back_and_set_root_motion_is_off_or_apply() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn([0.0; 3], 0.0, WALK);
        assert_eq!(crowd.root_motion_mode(i), RootMotionMode::Off);
        for mode in [
            RootMotionMode::Report,
            RootMotionMode::ApplyAndReport,
            RootMotionMode::Apply,
            RootMotionMode::Off,
            RootMotionMode::Report,
        ] {
            crowd.set_root_motion_mode(i, mode);
            assert_eq!(crowd.root_motion_mode(i), mode);
            assert_eq!(crowd.root_motion(i), mode.applies());
            assert_eq!(crowd.root_movers, if mode == RootMotionMode::Off { vec![] } else { vec![i] });
        }
        crowd.set_root_motion(i, true);
        assert_eq!(crowd.root_motion_mode(i), RootMotionMode::Apply);
        crowd.set_root_motion(i, false);
        assert_eq!(crowd.root_motion_mode(i), RootMotionMode::Off);
        assert!(crowd.root_movers.is_empty());
    }

    /// Three instances side by side, from the same place, through a turning walk, a cross-fade
    /// into a strafe and one into a one-shot step: `Apply` moves its record; `Report` leaves its
    /// record where it was and reports the world move, which the test (as the game) adds to it and
    /// writes back, so that it follows the `Apply` one up to rounding; `ApplyAndReport` moves
    /// exactly as `Apply` and reports its own record's move.
    #[test]
    fn report_mode_reports_the_move_apply_mode_makes_and_leaves_the_record_alone() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let (p0, yaw0, scale) = ([10.0, 0.5, -4.0], 0.7f32, 1.5f32);
        let apply = crowd.spawn(p0, yaw0, WALK);
        let report = crowd.spawn(p0, yaw0, WALK);
        let both = crowd.spawn(p0, yaw0, WALK);
        let modes = [
            (apply, RootMotionMode::Apply),
            (report, RootMotionMode::Report),
            (both, RootMotionMode::ApplyAndReport),
        ];
        for (i, mode) in modes {
            crowd.set_scale(i, scale);
            crowd.set_root_motion_mode(i, mode);
        }
        let dt = 1.0 / 30.0;
        let mut reported = 0;
        for step in 1..=120u32 {
            if step == 31 {
                for i in [apply, report, both] {
                    crowd.play(i, STRAFE, 0.5);
                }
            }
            if step == 61 {
                for i in [apply, report, both] {
                    crowd.play(i, STEP, 0.3);
                }
            }
            let before = crowd.records().to_vec();
            let from = crowd.clock().now();
            crowd.advance(dt);
            let after = crowd.records().to_vec();
            let deltas: Vec<RootMotionDelta> = crowd.drain_root_motion().collect();
            let (r, b) = (report as usize, both as usize);
            // The report-only record did not move.
            assert_eq!((after[r].position, after[r].yaw), (before[r].position, before[r].yaw), "step {step}");
            // ApplyAndReport moves exactly as Apply.
            let a = apply as usize;
            assert_eq!((after[b].position, after[b].yaw), (after[a].position, after[a].yaw), "step {step}");
            if after[a].position == before[a].position && after[a].yaw == before[a].yaw {
                // The one-shot step holds its end: nothing moves, nothing is reported.
                assert!(deltas.is_empty(), "step {step}: {deltas:?}");
                continue;
            }
            reported += 1;
            assert_eq!(deltas.iter().map(|d| d.instance).collect::<Vec<_>>(), [report, both], "step {step}");
            for d in &deltas {
                assert_eq!((d.from_time, d.to_time), (from, crowd.clock().now()));
                assert_eq!(d.yaw, d.local.yaw);
            }
            // Both's report is its record's move (one rounding of the record and one of the move).
            let moved =
                [0, 2].map(|k| (f64::from(after[b].position[k]) - f64::from(before[b].position[k])) as f32);
            let d = deltas[1];
            for (k, axis) in [(0, 0), (1, 2)] {
                assert!(
                    (d.translation[k] - moved[k]).abs() <= bound(1, 16.0),
                    "step {step} axis {axis}: reported {:?}, moved {moved:?}",
                    d.translation
                );
            }
            assert!((before[b].yaw + d.yaw - after[b].yaw).abs() <= bound(1, 4.0), "step {step}");
            // The game applies the report-only delta and writes it back.
            let d = deltas[0];
            let p = before[r].position;
            let position = [p[0] + d.translation[0], p[1], p[2] + d.translation[1]];
            crowd.set_transform(report, position, before[r].yaw + d.yaw);
            let (got, want) = (crowd.records()[r], after[a]);
            for k in 0..3 {
                assert!(
                    (got.position[k] - want.position[k]).abs() <= bound(step, 16.0),
                    "step {step} axis {k}: {:?} vs {:?}",
                    got.position,
                    want.position
                );
            }
            assert!(
                (got.yaw - want.yaw).abs() <= bound(step, 4.0),
                "step {step}: {} vs {}",
                got.yaw,
                want.yaw
            );
        }
        // The walk turned the instances, the strafe and the step moved them: reports all along
        // until the one-shot step held its end.
        assert!(reported > 90, "{reported}");
        let moved = crowd.records()[apply as usize];
        assert!((moved.yaw - yaw0).abs() > 0.4 && (moved.position[0] - p0[0]).abs() > 1.0, "{moved:?}");
    }

    #[test]
    fn a_report_only_instance_uploads_nothing() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn([1.0, 0.0, 2.0], 0.3, STRAFE);
        crowd.set_root_motion_mode(i, RootMotionMode::Report);
        let _ = crowd.take_record_uploads();
        let record = crowd.records()[i as usize];
        advance(&mut crowd, 40, 1.0 / 30.0);
        assert_eq!(crowd.records()[i as usize], record);
        assert!(crowd.take_record_uploads().is_empty());
        assert_eq!(crowd.drain_root_motion().count(), 40);
    }

    /// The pending moves are bounded by `CrowdConfig::root_motion_capacity`: the rest are counted,
    /// not kept; after a drain, moves are kept again. Within one `advance` they come in ascending
    /// instance order, whatever order the modes were set in.
    #[test]
    fn pending_moves_are_bounded_and_the_dropped_ones_counted() {
        let config = CrowdConfig { root_motion_capacity: 5, ..CrowdConfig::default() };
        let mut crowd = Crowd::new(asset(), config);
        let ids: Vec<u32> = (0..3).map(|k| crowd.spawn([k as f32, 0.0, 0.0], 0.0, STRAFE)).collect();
        for &i in ids.iter().rev() {
            crowd.set_root_motion_mode(i, RootMotionMode::Report);
        }
        advance(&mut crowd, 3, 1.0 / 30.0);
        assert_eq!(crowd.dropped_root_motion(), 4);
        let kept: Vec<(u32, f64)> = crowd.drain_root_motion().map(|d| (d.instance, d.to_time)).collect();
        let (t1, t2) = (1.0 / 30.0, 2.0 / 30.0);
        assert_eq!(kept, [(0, t1), (1, t1), (2, t1), (0, t2), (1, t2)]);
        crowd.advance(1.0 / 30.0);
        assert_eq!(crowd.drain_root_motion().count(), 3);
        assert_eq!(crowd.dropped_root_motion(), 4);
    }

    #[test]
    fn a_despawned_instance_neither_reports_nor_moves() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let gone = crowd.spawn([0.0; 3], 0.0, STRAFE);
        let kept = crowd.spawn([0.0; 3], 0.0, STRAFE);
        let applied = crowd.spawn([0.0; 3], 0.0, STRAFE);
        crowd.set_root_motion_mode(gone, RootMotionMode::ApplyAndReport);
        crowd.set_root_motion_mode(kept, RootMotionMode::Report);
        crowd.set_root_motion_mode(applied, RootMotionMode::Apply);
        crowd.advance(1.0 / 30.0);
        assert_eq!(crowd.drain_root_motion().map(|d| d.instance).collect::<Vec<_>>(), [gone, kept]);
        crowd.despawn(gone);
        crowd.despawn(applied);
        assert_eq!(crowd.root_motion_mode(gone), RootMotionMode::Off);
        let (p_gone, p_applied) =
            (crowd.records()[gone as usize].position, crowd.records()[applied as usize].position);
        advance(&mut crowd, 10, 1.0 / 30.0);
        assert!(crowd.drain_root_motion().all(|d| d.instance == kept));
        assert_eq!(crowd.records()[gone as usize].position, p_gone);
        assert_eq!(crowd.records()[applied as usize].position, p_applied);
        assert_eq!(crowd.root_movers, [kept]);
    }

    /// Over one whole loop from phase 0, the moves reported step by step compose to the track's
    /// cycle, and so does the pure query over the loop; the query changes nothing and works
    /// whatever the mode.
    #[test]
    fn the_query_over_a_loop_is_the_composed_reports_and_the_track_s_cycle() {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        for (clip, cycle) in [
            (WALK, RootPose { x: 0.0, z: 1.3, yaw: 0.5 }),
            (STRAFE, RootPose { x: 2.0, ..RootPose::IDENTITY }),
        ] {
            let i = crowd.spawn([3.0, 0.0, 1.0], 0.4, clip);
            let off = crowd.spawn([3.0, 0.0, 1.0], 0.4, clip);
            crowd.set_scale(i, 2.0);
            crowd.set_root_motion_mode(i, RootMotionMode::Report);
            let t0 = crowd.shader_time();
            let _ = crowd.drain_root_motion().count();
            let ahead = crowd.root_motion_delta(i, t0, t0 + 1.0);
            let records = crowd.records().to_vec();
            assert_eq!(crowd.root_motion_delta(off, t0, t0 + 1.0), ahead, "the mode does not matter");
            assert_eq!(crowd.records(), records, "the query changes nothing");
            advance(&mut crowd, 30, 1.0 / 30.0);
            let t1 = crowd.shader_time();
            let r = crowd.records()[i as usize];
            assert_eq!(t1 * r.rate_a + r.phase_offset_a - (t0 * r.rate_a + r.phase_offset_a), 1.0);
            let mut composed = RootPose::IDENTITY;
            let mut world = [0.0f64; 2];
            for d in crowd.drain_root_motion().filter(|d| d.instance == i) {
                composed = composed.then_local(&d.local);
                world[0] += f64::from(d.translation[0]);
                world[1] += f64::from(d.translation[1]);
            }
            let query = crowd.root_motion_delta(i, t0, t1);
            let b = bound(30, 4.0);
            for (what, got) in [("composed", composed), ("query", query), ("ahead", ahead)] {
                assert!(
                    (got.x - cycle.x).abs() <= b
                        && (got.z - cycle.z).abs() <= b
                        && (got.yaw - cycle.yaw).abs() <= b,
                    "clip {clip} {what}: {got:?} vs {cycle:?}"
                );
            }
            // The record never turned (report only): the strafe's world moves add up to its
            // cycle scaled by 2 and turned by the spawn yaw.
            if clip == STRAFE {
                let (s, c) = 0.4f64.sin_cos();
                let expected = [2.0 * 2.0 * c, -2.0 * 2.0 * s];
                for k in 0..2 {
                    assert!(
                        (world[k] - expected[k]).abs() <= f64::from(bound(30, 8.0)),
                        "{world:?} vs {expected:?}"
                    );
                }
            }
        }
    }
}
