//! The humanoid's skeleton: joint indices, names, parents and rest positions.
//!
//! Every joint's rest rotation is the identity, so a joint's rest frame is the model frame moved to
//! its rest position; bone directions come from the rest offsets alone. That keeps the motion code
//! simple: a joint's local rotation is its parent's global rotation inverted times its own.

use super::joint::*;
use super::math::DVec3;

/// Parent of each joint (`None` for the root). Parents come before children.
pub(super) const PARENTS: [Option<usize>; COUNT] = [
    None,              // root
    Some(ROOT),        // hips
    Some(HIPS),        // spine
    Some(SPINE),       // chest
    Some(CHEST),       // upper_chest
    Some(UPPER_CHEST), // neck
    Some(NECK),        // head
    Some(UPPER_CHEST), // clavicle_l
    Some(CLAVICLE_L),  // upper_arm_l
    Some(UPPER_ARM_L), // forearm_l
    Some(FOREARM_L),   // hand_l
    Some(HAND_L),      // fingers_l
    Some(UPPER_CHEST), // clavicle_r
    Some(CLAVICLE_R),  // upper_arm_r
    Some(UPPER_ARM_R), // forearm_r
    Some(FOREARM_R),   // hand_r
    Some(HAND_R),      // fingers_r
    Some(HIPS),        // thigh_l
    Some(THIGH_L),     // shin_l
    Some(SHIN_L),      // foot_l
    Some(FOOT_L),      // toe_l
    Some(HIPS),        // thigh_r
    Some(THIGH_R),     // shin_r
    Some(SHIN_R),      // foot_r
    Some(FOOT_R),      // toe_r
];

/// Joint names, as exported to glTF.
pub(super) const NAMES: [&str; COUNT] = [
    "root",
    "hips",
    "spine",
    "chest",
    "upper_chest",
    "neck",
    "head",
    "clavicle_l",
    "upper_arm_l",
    "forearm_l",
    "hand_l",
    "fingers_l",
    "clavicle_r",
    "upper_arm_r",
    "forearm_r",
    "hand_r",
    "fingers_r",
    "thigh_l",
    "shin_l",
    "foot_l",
    "toe_l",
    "thigh_r",
    "shin_r",
    "foot_r",
    "toe_r",
];

/// The arms hang in an A-pose at rest: this many degrees below horizontal.
pub(super) const ARM_REST_DROP_DEG: f64 = 50.0;
/// Upper arm, forearm and hand (wrist to finger joint) lengths at the reference height, metres.
pub(super) const UPPER_ARM_LEN: f64 = 0.29;
pub(super) const FOREARM_LEN: f64 = 0.25;
pub(super) const HAND_LEN: f64 = 0.085;

/// Unit direction of the left (`side = 1`) or right (`side = -1`) arm at rest.
pub(super) fn arm_direction(side: f64) -> DVec3 {
    let a = ARM_REST_DROP_DEG.to_radians();
    DVec3::new(side * a.cos(), -a.sin(), 0.0)
}

/// Rest positions at the reference height (1.78 m), model space, metres: feet on y = 0, facing +Z,
/// the character's left on +X (glTF's convention).
fn design_positions() -> [DVec3; COUNT] {
    let mut p = [DVec3::ZERO; COUNT];
    p[HIPS] = DVec3::new(0.0, 0.97, 0.0);
    p[SPINE] = DVec3::new(0.0, 1.06, -0.01);
    p[CHEST] = DVec3::new(0.0, 1.19, -0.015);
    p[UPPER_CHEST] = DVec3::new(0.0, 1.32, -0.015);
    p[NECK] = DVec3::new(0.0, 1.47, -0.02);
    p[HEAD] = DVec3::new(0.0, 1.56, -0.005);
    for (side, [clav, upper, fore, hand, fingers]) in
        [(1.0, [CLAVICLE_L, UPPER_ARM_L, FOREARM_L, HAND_L, FINGERS_L]), (-1.0, ARM_R)]
    {
        let d = arm_direction(side);
        p[clav] = DVec3::new(side * 0.02, 1.43, 0.0);
        p[upper] = DVec3::new(side * 0.175, 1.42, -0.015);
        p[fore] = p[upper] + d * UPPER_ARM_LEN;
        p[hand] = p[fore] + d * FOREARM_LEN;
        p[fingers] = p[hand] + d * HAND_LEN;
    }
    for (side, [thigh, shin, foot, toe]) in [(1.0, LEG_L), (-1.0, LEG_R)] {
        p[thigh] = DVec3::new(side * 0.09, 0.95, 0.0);
        p[shin] = DVec3::new(side * 0.09, 0.51, 0.0);
        p[foot] = DVec3::new(side * 0.09, 0.08, 0.0);
        p[toe] = DVec3::new(side * 0.09, 0.025, 0.135);
    }
    p
}

/// The right arm's joints, shoulder to fingers.
const ARM_R: [usize; 5] = [CLAVICLE_R, UPPER_ARM_R, FOREARM_R, HAND_R, FINGERS_R];
/// The left and right legs' joints, hip to toe.
pub(super) const LEG_L: [usize; 4] = [THIGH_L, SHIN_L, FOOT_L, TOE_L];
pub(super) const LEG_R: [usize; 4] = [THIGH_R, SHIN_R, FOOT_R, TOE_R];

/// The skeleton at one height.
#[derive(Debug, Clone)]
pub(super) struct Skeleton {
    /// Uniform scale from the reference height (1.78 m).
    pub(super) scale: f64,
    /// Rest offset of each joint from its parent (the root's from the origin), metres. Each
    /// component is exactly an f32 (the value stored in the rig), held as f64, so the motion code
    /// solves against exactly the skeleton the rig describes.
    pub(super) offset: [DVec3; COUNT],
    /// Rest position of each joint, model space, metres: the f64 sum of `offset` along the chain.
    pub(super) pos: [DVec3; COUNT],
}

impl Skeleton {
    /// The skeleton scaled by `scale` from the reference height.
    pub(super) fn new(scale: f64) -> Self {
        let design = design_positions();
        let mut offset = [DVec3::ZERO; COUNT];
        let mut pos = [DVec3::ZERO; COUNT];
        for j in 0..COUNT {
            let parent_design = PARENTS[j].map_or(DVec3::ZERO, |p| design[p]);
            let o = ((design[j] - parent_design) * scale).round_to_f32();
            offset[j] = o;
            pos[j] = PARENTS[j].map_or(DVec3::ZERO, |p| pos[p]) + o;
        }
        Self { scale, offset, pos }
    }

    /// Thigh and shin lengths of the leg whose thigh is `thigh`, metres.
    pub(super) fn leg_lengths(&self, thigh: usize) -> (f64, f64) {
        (self.offset[thigh + 1].length(), self.offset[thigh + 2].length())
    }
}
