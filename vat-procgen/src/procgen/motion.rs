//! The humanoid's clips: gaits from explicit foot trajectories solved with analytic two-bone IK, and
//! standing clips (idle, wave, look around) with planted feet solved the same way.
//!
//! Motion is computed in f64 and rounded once to f32 per key. Every clip is keyed at
//! [`KEYS_PER_SECOND`], every key at `k / 60` s.

use std::f64::consts::{PI, TAU};

use super::joint::*;
use super::math::{DMat3, DQuat, DVec3};
use super::skeleton::{LEG_L, LEG_R, Skeleton, arm_direction};
use vat_bake::rig::{AnimationClip, Channel, ChannelTarget, KeyInterpolation};

/// Keys per second of every procedural clip. Bakes at any fps dividing 60 sample exactly on keys.
pub const KEYS_PER_SECOND: u32 = 60;

/// Fraction of the full leg length (thigh + shin) the IK targets may ask for: the hips are lowered
/// until no key needs more, so the knee never locks straight (at 0.995 it bends at least ~11 deg) and
/// the law of cosines stays well conditioned.
const LEG_REACH: f64 = 0.995;

/// A locomotion gait at the reference height (1.78 m); [`super::humanoid_with`] scales its lengths
/// with the character. All lengths in metres, times in seconds, angles in radians.
///
/// Each foot follows an explicit ankle trajectory in character space (the character walks in place,
/// facing +Z): during stance the ankle stays at its rest height and slides backwards (-Z) at exactly
/// [`Gait::speed`]; during swing it travels forward on a smooth lifted arc. The right foot runs half a
/// cycle behind the left. The stride (metres the character travels per cycle) is therefore exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gait {
    /// Clip name.
    pub name: &'static str,
    /// Seconds per cycle (two steps); a multiple of 1/60 s (and of 1/30 s, the default bake rate).
    pub duration: f64,
    /// Metres travelled per cycle.
    pub stride: f64,
    /// Fraction of the cycle each foot is planted, in `(0, 1)` (> 0.5: walking with double support;
    /// < 0.5: running with a flight phase).
    pub stance: f64,
    /// Peak height the ankle rises above its rest height during swing, metres.
    pub lift: f64,
    /// Hip bob amplitude (up at mid-stance), metres.
    pub bob: f64,
    /// Lateral hip sway amplitude (towards the planted foot), metres.
    pub sway: f64,
    /// Pelvis yaw amplitude (the swinging leg's hip comes forward), radians.
    pub pelvis_yaw: f64,
    /// Pelvis roll amplitude (the swinging leg's hip drops), radians.
    pub pelvis_roll: f64,
    /// Forward lean of the spine, radians.
    pub lean: f64,
    /// Arm swing amplitude (opposite to the legs), radians.
    pub arm_swing: f64,
    /// Mean elbow bend, radians.
    pub elbow: f64,
    /// Foot pitch amplitude during swing (toe down after lift-off, toe up before touch-down), radians.
    pub foot_pitch: f64,
}

const fn deg(d: f64) -> f64 {
    d * (PI / 180.0)
}

/// Walking: 1.0 s per cycle, 1.4 m stride (1.4 m/s), 56 % stance.
pub const WALK: Gait = Gait {
    name: "walk",
    duration: 1.0,
    stride: 1.4,
    stance: 0.56,
    lift: 0.08,
    bob: 0.015,
    sway: 0.025,
    pelvis_yaw: deg(6.0),
    pelvis_roll: deg(3.0),
    lean: deg(3.0),
    arm_swing: deg(20.0),
    elbow: deg(15.0),
    foot_pitch: deg(20.0),
};

/// Jogging: 0.8 s per cycle, 2.4 m stride (3.0 m/s), 33 % stance (a flight phase).
pub const JOG: Gait = Gait {
    name: "jog",
    duration: 0.8,
    stride: 2.4,
    stance: 0.33,
    lift: 0.2,
    bob: 0.02,
    sway: 0.015,
    pelvis_yaw: deg(8.0),
    pelvis_roll: deg(3.0),
    lean: deg(8.0),
    arm_swing: deg(30.0),
    elbow: deg(75.0),
    foot_pitch: deg(30.0),
};

/// Running: 0.7 s per cycle, 3.2 m stride (about 4.57 m/s), 25 % stance.
pub const RUN: Gait = Gait {
    name: "run",
    duration: 0.7,
    stride: 3.2,
    stance: 0.25,
    lift: 0.3,
    bob: 0.025,
    sway: 0.01,
    pelvis_yaw: deg(10.0),
    pelvis_roll: deg(3.0),
    lean: deg(14.0),
    arm_swing: deg(40.0),
    elbow: deg(90.0),
    foot_pitch: deg(40.0),
};

/// The three gaits, in clip order.
pub const GAITS: [Gait; 3] = [WALK, JOG, RUN];

/// Seconds of the idle loop.
pub const IDLE_DURATION: f64 = 3.0;
/// Seconds of the wave (one-shot: raise, three waves, lower; starts and ends at rest).
pub const WAVE_DURATION: f64 = 2.0;
/// Seconds of the look-around loop.
pub const LOOK_AROUND_DURATION: f64 = 4.0;

/// A foot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The left foot (+X side); phase 0 is its touch-down.
    Left,
    /// The right foot (-X side), half a cycle behind.
    Right,
}

impl Gait {
    /// Speed of the character, metres per second: `stride / duration`. A planted foot slides
    /// backwards at exactly this speed.
    pub fn speed(&self) -> f64 {
        self.stride / self.duration
    }

    /// This gait with its lengths (stride, lift, bob, sway) multiplied by `scale`.
    pub fn scaled(&self, scale: f64) -> Gait {
        Gait {
            stride: self.stride * scale,
            lift: self.lift * scale,
            bob: self.bob * scale,
            sway: self.sway * scale,
            ..*self
        }
    }

    /// Keys of one cycle: `duration * 60`, rounded.
    pub fn key_intervals(&self) -> usize {
        (self.duration * f64::from(KEYS_PER_SECOND)).round() as usize
    }

    /// A foot's own phase in `[0, 1)` at cycle phase `phase`: `0` at its touch-down, planted until
    /// `stance`.
    pub fn foot_phase(&self, side: Side, phase: f64) -> f64 {
        let offset = match side {
            Side::Left => 0.0,
            Side::Right => 0.5,
        };
        (phase + offset).rem_euclid(1.0)
    }

    /// Whether `side`'s foot is planted at cycle phase `phase` (cycles).
    pub fn in_stance(&self, side: Side, phase: f64) -> bool {
        self.foot_phase(side, phase) < self.stance
    }

    /// Planned ankle position of `side` at cycle phase `phase` (cycles), character space, metres,
    /// for a foot whose rest ankle is at `rest_ankle`.
    ///
    /// Stance (foot phase `p < stance`): `(x, y, z) = rest + (0, 0, stride * (stance / 2 - p))`,
    /// so the ankle moves at `-stride` metres per cycle, `-speed` metres per second. Swing
    /// (`s = (p - stance) / (1 - stance)`): `z` a cubic Hermite from the stance's end back to its
    /// start whose end slopes equal the stance's velocity (C1 at both joins), `y` raised by
    /// `lift * sin(pi s)`: the foot leaves and strikes the ground with a vertical velocity, as
    /// feet do, and rising at once keeps the backward-moving ankle within the leg's reach.
    pub fn ankle_target(&self, side: Side, phase: f64, rest_ankle: [f64; 3]) -> [f64; 3] {
        let [x, y, z] = rest_ankle;
        let t = self.ankle(side, phase, DVec3::new(x, y, z));
        [t.x, t.y, t.z]
    }

    fn ankle(&self, side: Side, phase: f64, rest_ankle: DVec3) -> DVec3 {
        let p = self.foot_phase(side, phase);
        let half = self.stride * self.stance / 2.0;
        if p < self.stance {
            return rest_ankle + DVec3::new(0.0, 0.0, self.stride * (self.stance / 2.0 - p));
        }
        let s = (p - self.stance) / (1.0 - self.stance);
        let (z0, z1) = (-half, half);
        // dz/ds at both ends: the stance velocity -stride per cycle, times the swing's length.
        let m = -self.stride * (1.0 - self.stance);
        let (s2, s3) = (s * s, s * s * s);
        let z = (2.0 * s3 - 3.0 * s2 + 1.0) * z0
            + (s3 - 2.0 * s2 + s) * m
            + (-2.0 * s3 + 3.0 * s2) * z1
            + (s3 - s2) * m;
        let y = self.lift * (PI * s).sin();
        rest_ankle + DVec3::new(0.0, y, z)
    }

    /// Foot pitch during swing (`Rx`, positive = toe down), radians; 0 during stance (flat).
    fn foot_pitch_at(&self, side: Side, phase: f64) -> f64 {
        let p = self.foot_phase(side, phase);
        if p < self.stance {
            return 0.0;
        }
        let s = (p - self.stance) / (1.0 - self.stance);
        self.foot_pitch * (TAU * s).sin()
    }
}

/// Local rotations of every joint and the hips' offset from rest.
#[derive(Debug, Clone)]
pub(super) struct Pose {
    /// Local rotation of each joint (rest rotations are the identity).
    pub rot: [DQuat; COUNT],
    /// Hips translation minus its rest translation, metres.
    pub hips_offset: DVec3,
}

impl Pose {
    fn rest() -> Self {
        Self { rot: [DQuat::IDENTITY; COUNT], hips_offset: DVec3::ZERO }
    }
}

/// What the legs must do at one key: hips motion (before the height fit) and planted/swinging feet.
#[derive(Debug, Clone, Copy)]
struct LowerBody {
    /// Lateral hips offset, metres.
    sway_x: f64,
    /// Hips height offset relative to the fitted base height, metres.
    bob: f64,
    /// Hips rotation (global = local: the root never moves).
    hips_rot: DQuat,
    /// Ankle targets, left then right, model space.
    ankles: [DVec3; 2],
    /// Global foot rotations, left then right.
    feet: [DQuat; 2],
}

/// One key under construction: the lower body to solve and the upper body already posed.
struct Frame {
    lower: LowerBody,
    pose: Pose,
}

/// Lowest hips offset (<= 0) below rest such that, with each key's bob added, every ankle target is
/// within [`LEG_REACH`] of its leg's length. The horizontal hip-to-ankle distance does not depend on
/// the hips height, so each key and leg bounds the height in closed form.
fn fit_hips_height(sk: &Skeleton, frames: &[Frame]) -> f64 {
    let mut base = 0.0f64;
    for f in frames {
        let lb = &f.lower;
        for (leg, ankle) in [LEG_L, LEG_R].iter().zip(lb.ankles) {
            let hip = lb.hips_rot * (sk.pos[leg[0]] - sk.pos[HIPS]);
            let (a, b) = sk.leg_lengths(leg[0]);
            let reach = LEG_REACH * (a + b);
            let dx = sk.pos[HIPS].x + lb.sway_x + hip.x - ankle.x;
            let dz = sk.pos[HIPS].z + hip.z - ankle.z;
            let vertical = (reach * reach - dx * dx - dz * dz).max(0.0).sqrt();
            let highest = ankle.y + vertical - sk.pos[HIPS].y - hip.y;
            base = base.min(highest - lb.bob);
        }
    }
    base
}

/// Orthonormal frame with `dir` as its first column and `reference` (made perpendicular) second.
fn frame(dir: DVec3, reference: DVec3) -> DMat3 {
    let d = dir.normalize();
    let r = (reference - d * d.dot(reference)).normalize();
    DMat3::from_cols(d, r, d.cross(r))
}

/// The rotation taking direction `from` to `to` whose twist takes `from_ref` as close as possible to
/// `to_ref`.
fn aim(from: DVec3, from_ref: DVec3, to: DVec3, to_ref: DVec3) -> DQuat {
    let m = frame(to, to_ref) * frame(from, from_ref).transpose();
    DQuat::from_mat3(&m).normalize()
}

/// Analytic two-bone IK: the knee position for a hip at `hip`, thigh length `a`, shin length `b`,
/// ankle target `target`, the knee bending towards `pole`. By the law of cosines the angle at the
/// hip between the thigh and the hip-to-target line is `acos((a^2 + d^2 - b^2) / (2 a d))`; the knee
/// lies in the plane of that line and the pole. Targets out of reach are clamped (the fit keeps them
/// in reach, which the tests check).
fn knee_position(hip: DVec3, a: f64, b: f64, target: DVec3, pole: DVec3) -> DVec3 {
    let v = target - hip;
    let d = v.length().clamp((a - b).abs() + 1e-9, a + b);
    let u = v.normalize_or(DVec3::NEG_Y);
    let w = (pole - u * u.dot(pole)).normalize_or(DVec3::Z);
    let cos_hip = ((a * a + d * d - b * b) / (2.0 * a * d)).clamp(-1.0, 1.0);
    let sin_hip = (1.0 - cos_hip * cos_hip).max(0.0).sqrt();
    hip + (u * cos_hip + w * sin_hip) * a
}

/// Solves the legs of `frame` into its pose, with the hips lowered by `base` (from the fit).
fn solve_legs(sk: &Skeleton, frame: &mut Frame, base: f64) {
    let lb = frame.lower;
    let pose = &mut frame.pose;
    pose.rot[HIPS] = lb.hips_rot;
    pose.hips_offset = DVec3::new(lb.sway_x, base + lb.bob, 0.0);
    let hips = sk.pos[HIPS] + pose.hips_offset;
    for (leg, (ankle, foot_rot)) in [LEG_L, LEG_R].iter().zip(lb.ankles.into_iter().zip(lb.feet)) {
        let [thigh, shin, foot, _toe] = *leg;
        let hip = hips + lb.hips_rot * (sk.pos[thigh] - sk.pos[HIPS]);
        let (a, b) = sk.leg_lengths(thigh);
        let knee = knee_position(hip, a, b, ankle, DVec3::Z);
        let thigh_g = aim(sk.offset[shin], DVec3::Z, knee - hip, DVec3::Z);
        let shin_g = aim(sk.offset[foot], DVec3::Z, ankle - knee, DVec3::Z);
        pose.rot[thigh] = lb.hips_rot.inverse() * thigh_g;
        pose.rot[shin] = thigh_g.inverse() * shin_g;
        pose.rot[foot] = shin_g.inverse() * foot_rot;
    }
}

/// Poses the arm on `left` (or right) side: lowered from the rest A-pose by `lower`, swung by
/// `swing` about the chest's X axis (positive = backwards), elbow bent forward by `elbow`, wrist
/// flexed by `wrist`, fingers curled towards the palm by `curl`.
fn pose_arm(pose: &mut Pose, left: bool, lower: f64, swing: f64, elbow: f64, wrist: f64, curl: f64) {
    let side = if left { 1.0 } else { -1.0 };
    let [_, upper, fore, hand, fingers] = arm_joints(left);
    let d = arm_direction(side);
    // Rotating about d x Z by a positive angle turns d towards +Z (forward).
    let hinge = d.cross(DVec3::Z).normalize();
    pose.rot[upper] = DQuat::from_rotation_x(swing) * DQuat::from_rotation_z(-side * lower);
    pose.rot[fore] = DQuat::from_axis_angle(hinge, elbow);
    pose.rot[hand] = DQuat::from_axis_angle(hinge, wrist);
    // The palm faces the body: curling turns the fingers inwards, about -Z (left) or +Z (right).
    pose.rot[fingers] = DQuat::from_rotation_z(-side * curl);
}

fn arm_joints(left: bool) -> [usize; 5] {
    if left {
        [CLAVICLE_L, UPPER_ARM_L, FOREARM_L, HAND_L, FINGERS_L]
    } else {
        [CLAVICLE_R, UPPER_ARM_R, FOREARM_R, HAND_R, FINGERS_R]
    }
}

/// Spine, neck and head: the shoulders counter-rotate against the pelvis yaw `pelvis_yaw` and roll,
/// the spine leans forward by `lean`, and the neck and head undo both so the gaze stays level and
/// forward.
fn pose_spine(pose: &mut Pose, pelvis_yaw: f64, pelvis_roll: f64, lean: f64) {
    let twist = |k: f64, l: f64| DQuat::from_rotation_y(-k * pelvis_yaw) * DQuat::from_rotation_x(l * lean);
    pose.rot[SPINE] = twist(0.6, 0.4) * DQuat::from_rotation_z(-pelvis_roll);
    pose.rot[CHEST] = twist(0.6, 0.3);
    pose.rot[UPPER_CHEST] = twist(0.3, 0.3);
    // Net yaw so far: pelvis_yaw * (1 - 1.5) = -0.5 * pelvis_yaw; the neck and head add it back.
    pose.rot[NECK] = DQuat::from_rotation_y(0.25 * pelvis_yaw) * DQuat::from_rotation_x(-0.5 * lean);
    pose.rot[HEAD] = DQuat::from_rotation_y(0.25 * pelvis_yaw) * DQuat::from_rotation_x(-0.5 * lean);
}

/// The frames of one gait cycle: `key_intervals()` keys at phases `k / n`.
fn gait_frames(sk: &Skeleton, g: &Gait) -> Vec<Frame> {
    let n = g.key_intervals();
    let rest_ankles = [sk.pos[FOOT_L], sk.pos[FOOT_R]];
    (0..n)
        .map(|k| {
            let phase = k as f64 / n as f64;
            // Left mid-stance at stance / 2: hips up, shifted left, right hip dropped.
            let mid = TAU * (phase - g.stance / 2.0);
            let yaw = -g.pelvis_yaw * (TAU * phase).cos();
            let roll = g.pelvis_roll * mid.cos();
            let lower = LowerBody {
                sway_x: g.sway * mid.cos(),
                bob: g.bob * (2.0 * mid).cos(),
                hips_rot: DQuat::from_rotation_y(yaw) * DQuat::from_rotation_z(roll),
                ankles: [
                    g.ankle(Side::Left, phase, rest_ankles[0]),
                    g.ankle(Side::Right, phase, rest_ankles[1]),
                ],
                feet: [
                    DQuat::from_rotation_x(g.foot_pitch_at(Side::Left, phase)),
                    DQuat::from_rotation_x(g.foot_pitch_at(Side::Right, phase)),
                ],
            };
            let mut pose = Pose::rest();
            pose_spine(&mut pose, yaw, roll, g.lean);
            // The left arm swings forward with the right leg (forward = negative swing).
            let c = (TAU * phase).cos();
            let elbow = |forward: f64| g.elbow + 0.3 * g.arm_swing * forward;
            pose_arm(&mut pose, true, deg(25.0), g.arm_swing * c, elbow(-c), deg(8.0), deg(25.0));
            pose_arm(&mut pose, false, deg(25.0), -g.arm_swing * c, elbow(c), deg(8.0), deg(25.0));
            Frame { lower, pose }
        })
        .collect()
}

/// Standing lower body at loop phase `phase`: feet planted slightly apart and turned out, the hips
/// swaying by `sway` metres and yawing by `yaw` radians (both sinusoidal in `phase`).
fn standing(sk: &Skeleton, phase: f64, sway: f64, yaw: f64) -> LowerBody {
    let s = sk.scale;
    let wave = (TAU * phase).sin();
    LowerBody {
        sway_x: sway * wave,
        bob: 0.003 * s * (2.0 * TAU * phase).cos(),
        hips_rot: DQuat::from_rotation_y(yaw * wave) * DQuat::from_rotation_z(deg(1.5) * wave),
        ankles: [
            sk.pos[FOOT_L] + DVec3::new(0.015, 0.0, 0.02) * s,
            sk.pos[FOOT_R] + DVec3::new(-0.015, 0.0, -0.02) * s,
        ],
        feet: [DQuat::from_rotation_y(deg(8.0)), DQuat::from_rotation_y(deg(-8.0))],
    }
}

/// The relaxed upper body of the standing clips at loop phase `phase`: breathing, a slight shrug and
/// nod, arms hanging.
fn relaxed(pose: &mut Pose, phase: f64, hips_yaw: f64) {
    let breath = (2.0 * TAU * phase).sin();
    pose_spine(pose, hips_yaw, 0.0, 0.0);
    pose.rot[CHEST] *= DQuat::from_rotation_x(deg(-1.0) * breath);
    pose.rot[UPPER_CHEST] *= DQuat::from_rotation_x(deg(-1.0) * breath);
    let shrug = deg(1.5) * 0.5 * (1.0 - (2.0 * TAU * phase).cos());
    pose.rot[CLAVICLE_L] = DQuat::from_rotation_z(shrug);
    pose.rot[CLAVICLE_R] = DQuat::from_rotation_z(-shrug);
    pose.rot[HEAD] *= DQuat::from_rotation_x(deg(2.0) * (TAU * phase + 1.0).sin());
    let sway = deg(2.0) * (TAU * phase).sin();
    pose_arm(pose, true, deg(27.0), sway, deg(12.0), deg(5.0), deg(20.0));
    pose_arm(pose, false, deg(27.0), -sway, deg(12.0), deg(5.0), deg(20.0));
}

fn idle_frames(sk: &Skeleton) -> Vec<Frame> {
    let n = key_intervals(IDLE_DURATION);
    (0..n)
        .map(|k| {
            let phase = k as f64 / n as f64;
            let yaw = deg(2.0);
            let lower = standing(sk, phase, 0.012 * sk.scale, yaw);
            let mut pose = Pose::rest();
            relaxed(&mut pose, phase, yaw * (TAU * phase).sin());
            Frame { lower, pose }
        })
        .collect()
}

/// One-shot: raise the right arm (0-0.45 s), wave the forearm three times at 2.5 Hz, lower it
/// (1.55-2 s). The first and last keys are the same relaxed standing pose, bit for bit.
fn wave_frames(sk: &Skeleton) -> Vec<Frame> {
    let n = key_intervals(WAVE_DURATION);
    (0..=n)
        .map(|k| {
            let t = k as f64 / f64::from(KEYS_PER_SECOND);
            // The breathing and sway cycle once: phase 1 at the end is phase 0, so the last key is
            // the first one exactly.
            let phase = (t / WAVE_DURATION).fract();
            let yaw = deg(1.0);
            let lower = standing(sk, phase, 0.006 * sk.scale, yaw);
            let mut pose = Pose::rest();
            relaxed(&mut pose, phase, yaw * (TAU * phase).sin());
            let raise = smooth(0.0, 0.45, t) * smooth(WAVE_DURATION, 1.55, t);
            let waving = smooth(0.35, 0.6, t) * smooth(1.65, 1.4, t);
            // The relaxed right arm is Rx(swing) * Rz(27 deg); raised, Rz(-110 deg) puts it 60 deg
            // above horizontal, a little forward, and the forearm turns a further 30 deg to upright.
            let relaxed_upper = pose.rot[UPPER_ARM_R];
            let raised_upper = DQuat::from_rotation_x(deg(-15.0)) * DQuat::from_rotation_z(deg(-110.0));
            pose.rot[UPPER_ARM_R] = relaxed_upper.slerp(raised_upper, raise);
            let wag = deg(25.0) * (TAU * 2.5 * (t - 0.45)).sin() * waving;
            let relaxed_fore = pose.rot[FOREARM_R];
            pose.rot[FOREARM_R] =
                relaxed_fore.slerp(DQuat::from_rotation_z(deg(-30.0)), raise) * DQuat::from_rotation_z(wag);
            pose.rot[HAND_R] = pose.rot[HAND_R].slerp(DQuat::IDENTITY, raise);
            pose.rot[FINGERS_R] = pose.rot[FINGERS_R].slerp(DQuat::IDENTITY, raise);
            pose.rot[HEAD] *= DQuat::from_rotation_y(deg(-12.0) * raise);
            Frame { lower, pose }
        })
        .collect()
}

fn look_around_frames(sk: &Skeleton) -> Vec<Frame> {
    let n = key_intervals(LOOK_AROUND_DURATION);
    (0..n)
        .map(|k| {
            let phase = k as f64 / n as f64;
            let yaw = deg(1.5);
            let lower = standing(sk, phase, 0.008 * sk.scale, yaw);
            let mut pose = Pose::rest();
            relaxed(&mut pose, phase, yaw * (TAU * phase).sin());
            let look = deg(55.0) * (TAU * phase).sin();
            pose.rot[UPPER_CHEST] *= DQuat::from_rotation_y(deg(8.0) * (TAU * phase - 0.4).sin());
            pose.rot[NECK] *= DQuat::from_rotation_y(0.35 * look);
            pose.rot[HEAD] *= DQuat::from_rotation_y(0.65 * look)
                * DQuat::from_rotation_x(deg(8.0) * (2.0 * TAU * phase).sin());
            Frame { lower, pose }
        })
        .collect()
}

fn smooth(e0: f64, e1: f64, x: f64) -> f64 {
    super::mesh::smoothstep(e0, e1, x)
}

fn key_intervals(duration: f64) -> usize {
    (duration * f64::from(KEYS_PER_SECOND)).round() as usize
}

/// Fits the hips height over all frames and solves every frame's legs.
fn solve(sk: &Skeleton, mut frames: Vec<Frame>) -> Vec<Pose> {
    let base = fit_hips_height(sk, &frames);
    for f in &mut frames {
        solve_legs(sk, f, base);
    }
    frames.into_iter().map(|f| f.pose).collect()
}

/// Clip metadata besides the keys.
struct ClipInfo {
    name: &'static str,
    looping: bool,
    locomotion: bool,
    known_stride: Option<f32>,
}

/// Turns poses (one per key) into a clip: a translation channel for the hips and a rotation channel
/// for every joint but the root, LINEAR, keys at `k / 60` s. A looping clip gets one more key at its
/// end, a copy of the first, so the cycle closes.
fn to_clip(sk: &Skeleton, info: ClipInfo, poses: &[Pose]) -> AnimationClip {
    let mut keys: Vec<&Pose> = poses.iter().collect();
    if info.looping
        && let Some(first) = poses.first()
    {
        keys.push(first);
    }
    let intervals = keys.len().saturating_sub(1);
    let times: Vec<f32> = (0..keys.len()).map(|k| (k as f64 / f64::from(KEYS_PER_SECOND)) as f32).collect();
    let mut channels = Vec::with_capacity(COUNT);
    channels.push(Channel {
        target: ChannelTarget::Translation(HIPS),
        interpolation: KeyInterpolation::Linear,
        times: times.clone(),
        values: keys.iter().flat_map(|p| (sk.offset[HIPS] + p.hips_offset).as_vec3().to_array()).collect(),
    });
    for j in HIPS..COUNT {
        let mut track: Vec<[f32; 4]> = keys.iter().map(|p| p.rot[j].as_quat().to_array()).collect();
        vat_core::format::encoding::make_hemisphere_continuous(&mut track);
        channels.push(Channel {
            target: ChannelTarget::Rotation(j),
            interpolation: KeyInterpolation::Linear,
            times: times.clone(),
            values: track.concat(),
        });
    }
    AnimationClip {
        name: info.name.to_owned(),
        channels,
        start: 0.0,
        end: (intervals as f64 / f64::from(KEYS_PER_SECOND)) as f32,
        looping: Some(info.looping),
        known_stride: info.known_stride,
        locomotion: info.locomotion,
    }
}

/// The six clips, in order: idle, walk, jog, run, wave, look_around.
pub(super) fn clips(sk: &Skeleton) -> Vec<AnimationClip> {
    let standing_clip = |name, looping, frames| {
        let info = ClipInfo { name, looping, locomotion: false, known_stride: None };
        to_clip(sk, info, &solve(sk, frames))
    };
    let mut clips = vec![standing_clip("idle", true, idle_frames(sk))];
    for g in GAITS {
        let g = g.scaled(sk.scale);
        let info =
            ClipInfo { name: g.name, looping: true, locomotion: true, known_stride: Some(g.stride as f32) };
        clips.push(to_clip(sk, info, &solve(sk, gait_frames(sk, &g))));
    }
    clips.push(standing_clip("wave", false, wave_frames(sk)));
    clips.push(standing_clip("look_around", true, look_around_frames(sk)));
    clips
}
