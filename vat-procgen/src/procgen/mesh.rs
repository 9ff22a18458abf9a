//! The humanoid's meshes: lofted tubes (limbs, torso, neck), ellipsoids (head) and the cap, with
//! smooth normals, sweep-aligned tangents, UVs, per-vertex materials and skin weights.

use std::f64::consts::{FRAC_PI_2, PI, TAU};

use glam::{Vec2, Vec3, Vec4};

use super::joint::*;
use super::math::DVec3;
use super::skeleton::{Skeleton, arm_direction};
use super::{MATERIAL_CAP, MATERIAL_PANTS, MATERIAL_SHIRT, MATERIAL_SHOES, MATERIAL_SKIN};
use vat_bake::rig::MAX_INFLUENCES;

/// One cross-section of a tube: an ellipse around `center` in the plane normal to `axis`.
#[derive(Debug, Clone)]
pub(super) struct Section {
    /// Centre, model space, metres.
    pub(super) center: DVec3,
    /// Sweep direction (unit).
    pub(super) axis: DVec3,
    /// First ellipse axis (made perpendicular to `axis` by the builder). The second is
    /// `axis x e1`, so `(e1, e2, axis)` is right-handed and triangles wind counter-clockwise seen
    /// from outside.
    pub e1: DVec3,
    /// Semi-axes along `e1` and `e2`, metres.
    pub(super) radii: [f64; 2],
    /// Skin weights `(joint, weight)` of every vertex of this ring (summing to 1).
    pub(super) weights: Vec<(usize, f64)>,
    /// Material id of every vertex of this ring.
    pub(super) material: u8,
}

/// A closed tube: sections swept in order, closed at each end by an ellipsoidal cap.
#[derive(Debug, Clone)]
pub(super) struct Tube {
    /// Cross-sections, in sweep order (at least one).
    pub(super) sections: Vec<Section>,
    /// Vertices around each ring (a multiple of 4, so the ellipse's extreme points are vertices).
    pub(super) sides: usize,
    /// Rings of the start and end caps, pole included (1 = the pole alone: a cone or a flat disc).
    pub(super) cap_rings: [usize; 2],
    /// How far the start and end poles lie beyond the end sections along the axis, metres
    /// (0 = a flat end).
    pub(super) cap_len: [f64; 2],
}

/// One mesh's vertex streams while it is being built.
#[derive(Debug, Default, Clone)]
pub(super) struct MeshData {
    pub(super) positions: Vec<Vec3>,
    pub(super) normals: Vec<Vec3>,
    pub(super) tangents: Vec<Vec4>,
    pub(super) uvs: Vec<Vec2>,
    pub(super) material_ids: Vec<u8>,
    pub(super) joints: Vec<[u16; MAX_INFLUENCES]>,
    pub(super) weights: Vec<[f32; MAX_INFLUENCES]>,
    pub(super) indices: Vec<u32>,
}

/// A ring of a tube while building: the section's frame with the cap's scaling applied.
struct Ring<'a> {
    center: DVec3,
    e1: DVec3,
    e2: DVec3,
    radii: [f64; 2],
    section: &'a Section,
}

/// `(frame axis, first ellipse axis, second ellipse axis)` of a section, orthonormalised.
fn frame(s: &Section) -> (DVec3, DVec3, DVec3) {
    let axis = s.axis.normalize();
    let e1 = (s.e1 - axis * axis.dot(s.e1)).normalize();
    (axis, e1, axis.cross(e1))
}

/// Packs `(joint, weight)` pairs into the rig's slots: heaviest first, zero weights dropped, at most
/// 4 kept, renormalised in f64 and rounded once to f32.
fn pack_weights(weights: &[(usize, f64)]) -> ([u16; MAX_INFLUENCES], [f32; MAX_INFLUENCES]) {
    let mut w: Vec<(usize, f64)> = weights.iter().copied().filter(|&(_, x)| x > 0.0).collect();
    w.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    w.truncate(4);
    let sum: f64 = w.iter().map(|x| x.1).sum();
    let mut joints = [0u16; MAX_INFLUENCES];
    let mut out = [0.0f32; MAX_INFLUENCES];
    for (i, &(j, x)) in w.iter().enumerate() {
        // Joint indices are < COUNT (25), far below u16::MAX.
        joints[i] = j as u16;
        out[i] = (x / sum) as f32;
    }
    (joints, out)
}

impl MeshData {
    /// Appends a closed tube.
    pub(super) fn add_tube(&mut self, tube: &Tube) {
        let sides = tube.sides;
        let (Some(first), Some(last)) = (tube.sections.first(), tube.sections.last()) else {
            return;
        };
        let mut rings: Vec<Ring<'_>> = Vec::new();
        fn cap_ring(s: &Section, k: usize, c: usize, sign: f64, len: f64) -> Ring<'_> {
            let (axis, e1, e2) = frame(s);
            let alpha = FRAC_PI_2 * k as f64 / c as f64;
            Ring {
                center: s.center + axis * (sign * len * alpha.cos()),
                e1,
                e2,
                radii: [s.radii[0] * alpha.sin(), s.radii[1] * alpha.sin()],
                section: s,
            }
        }
        let [c0, c1] = tube.cap_rings.map(|c| c.max(1));
        for k in 1..c0 {
            rings.push(cap_ring(first, k, c0, -1.0, tube.cap_len[0]));
        }
        for s in &tube.sections {
            let (_, e1, e2) = frame(s);
            rings.push(Ring { center: s.center, e1, e2, radii: s.radii, section: s });
        }
        for k in (1..c1).rev() {
            rings.push(cap_ring(last, k, c1, 1.0, tube.cap_len[1]));
        }
        let pole_start = first.center - frame(first).0 * tube.cap_len[0];
        let pole_end = last.center + frame(last).0 * tube.cap_len[1];
        let n = rings.len();

        // Logical vertices: 0 = start pole, 1 + i * sides + j = ring i point j, last = end pole.
        let end = 1 + n * sides;
        let mut points = Vec::with_capacity(end + 1);
        points.push(pole_start);
        for r in &rings {
            for j in 0..sides {
                let theta = TAU * j as f64 / sides as f64;
                points.push(r.center + r.e1 * (r.radii[0] * theta.cos()) + r.e2 * (r.radii[1] * theta.sin()));
            }
        }
        points.push(pole_end);
        let logical = |i: usize, j: usize| 1 + i * sides + j % sides;
        let mut triangles: Vec<[usize; 3]> = Vec::with_capacity(2 * n * sides);
        for j in 0..sides {
            triangles.push([0, logical(0, j + 1), logical(0, j)]);
        }
        for i in 0..n - 1 {
            for j in 0..sides {
                let (a, b) = (logical(i, j), logical(i, j + 1));
                let (c, d) = (logical(i + 1, j + 1), logical(i + 1, j));
                triangles.push([a, b, c]);
                triangles.push([a, c, d]);
            }
        }
        for j in 0..sides {
            triangles.push([logical(n - 1, j), logical(n - 1, j + 1), end]);
        }
        // Smooth normals: area-weighted face normals summed per logical vertex (so the UV seam's
        // duplicated column shares its normal).
        let mut normals = vec![DVec3::ZERO; points.len()];
        for t in &triangles {
            let face = (points[t[1]] - points[t[0]]).cross(points[t[2]] - points[t[0]]);
            for &v in t {
                normals[v] += face;
            }
        }
        for nrm in &mut normals {
            *nrm = nrm.normalize_or(DVec3::Y);
        }

        // Output vertices: the poles, and ring columns 0..=sides (column `sides` repeats column 0
        // with v = 0, the UV seam).
        let base = self.positions.len();
        let out = |i: usize, j: usize| (base + 1 + i * (sides + 1) + j) as u32;
        let out_end = (base + 1 + n * (sides + 1)) as u32;
        let push_pole = |data: &mut MeshData, p: usize, s: &Section, u: f32| {
            let nrm = normals[p];
            let (_, e1, _) = frame(s);
            let t = (e1 - nrm * nrm.dot(e1)).normalize_or(e1);
            data.push(points[p], nrm, t.as_vec3().extend(1.0), Vec2::new(u, 0.5), s);
        };
        push_pole(self, 0, first, 0.0);
        for (i, r) in rings.iter().enumerate() {
            let prev_ring = |j: usize| if i == 0 { points[0] } else { points[logical(i - 1, j)] };
            let next_ring = |j: usize| if i + 1 == n { points[end] } else { points[logical(i + 1, j)] };
            let u = (i + 1) as f64 / (n + 1) as f64;
            for j in 0..=sides {
                let p = logical(i, j);
                let nrm = normals[p];
                // Tangent: along the sweep (increasing u), in the tangent plane.
                let du = next_ring(j) - prev_ring(j);
                let t = (du - nrm * nrm.dot(du)).normalize_or(r.e1);
                // v runs against theta (v = 1 - j / sides), so dP/dv points towards decreasing j.
                let dv = points[logical(i, j + sides - 1)] - points[logical(i, j + 1)];
                let w = if nrm.cross(t).dot(dv) >= 0.0 { 1.0 } else { -1.0 };
                let v = 1.0 - j as f64 / sides as f64;
                self.push(points[p], nrm, t.as_vec3().extend(w), Vec2::new(u as f32, v as f32), r.section);
            }
        }
        push_pole(self, end, last, 1.0);

        for j in 0..sides as u32 {
            self.indices.extend([base as u32, out(0, j as usize + 1), out(0, j as usize)]);
        }
        for i in 0..n - 1 {
            for j in 0..sides {
                let (a, b, c, d) = (out(i, j), out(i, j + 1), out(i + 1, j + 1), out(i + 1, j));
                self.indices.extend([a, b, c, a, c, d]);
            }
        }
        for j in 0..sides {
            self.indices.extend([out(n - 1, j), out(n - 1, j + 1), out_end]);
        }
    }

    fn push(&mut self, p: DVec3, n: DVec3, t: Vec4, uv: Vec2, s: &Section) {
        self.positions.push(p.as_vec3());
        self.normals.push(n.as_vec3());
        self.tangents.push(t);
        self.uvs.push(uv);
        self.material_ids.push(s.material);
        let (j, w) = pack_weights(&s.weights);
        self.joints.push(j);
        self.weights.push(w);
    }
}

/// `0` at `e0`, `1` at `e1`, smooth (C1) in between; `e0 > e1` gives a falling step.
pub(super) fn smoothstep(e0: f64, e1: f64, x: f64) -> f64 {
    let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Weights blending linearly between consecutive joints of a chain by a coordinate along it:
/// `chain` holds `(joint, coordinate)` in increasing coordinate order.
fn chain_weights(x: f64, chain: &[(usize, f64)]) -> Vec<(usize, f64)> {
    let Some(&(first, x0)) = chain.first() else { return Vec::new() };
    if x <= x0 {
        return vec![(first, 1.0)];
    }
    for w in chain.windows(2) {
        let ((ja, xa), (jb, xb)) = (w[0], w[1]);
        if x <= xb {
            let f = (x - xa) / (xb - xa);
            return vec![(ja, 1.0 - f), (jb, f)];
        }
    }
    chain.last().map_or(Vec::new(), |&(j, _)| vec![(j, 1.0)])
}

/// Two-joint blend: `(a, 1 - f), (b, f)`.
fn blend(a: usize, b: usize, f: f64) -> Vec<(usize, f64)> {
    vec![(a, 1.0 - f), (b, f)]
}

/// The body: torso, neck, head, arms, hands, legs and feet, each a closed tube, in bind space (the
/// rest pose), at the skeleton's scale. About 2,440 vertices and 4,500 triangles.
pub(super) fn body(sk: &Skeleton) -> MeshData {
    let s = sk.scale;
    let mut m = MeshData::default();
    torso(&mut m, s);
    neck(&mut m, s);
    head(&mut m, s);
    for side in [1.0, -1.0] {
        let limbs = Limbs::new(sk, side);
        limbs.arm(&mut m, s);
        limbs.hand(&mut m, s);
        limbs.leg(&mut m, s);
        limbs.foot(&mut m, s);
    }
    m
}

/// The torso, a closed tube from the crotch to the base of the neck.
fn torso(m: &mut MeshData, s: f64) {
    // Torso, crotch to the base of the neck: (height, half-width, half-depth, z of the centre) at the
    // reference height. Weights follow the spine by height; below the waist it wears the pants.
    const TORSO: [[f64; 4]; 12] = [
        [0.86, 0.125, 0.095, -0.005],
        [0.90, 0.155, 0.110, -0.010],
        [0.95, 0.170, 0.115, -0.010],
        [1.00, 0.165, 0.110, -0.010],
        [1.05, 0.152, 0.102, -0.008],
        [1.10, 0.145, 0.098, -0.005],
        [1.16, 0.150, 0.103, 0.000],
        [1.22, 0.160, 0.112, 0.005],
        [1.28, 0.168, 0.118, 0.005],
        [1.34, 0.172, 0.118, 0.000],
        [1.40, 0.168, 0.108, -0.010],
        [1.45, 0.130, 0.085, -0.015],
    ];
    let spine_chain = [(HIPS, 0.97), (SPINE, 1.06), (CHEST, 1.19), (UPPER_CHEST, 1.32), (NECK, 1.47)];
    m.add_tube(&Tube {
        sections: TORSO
            .iter()
            .map(|&[y, hw, hd, z]| Section {
                center: DVec3::new(0.0, y, z) * s,
                axis: DVec3::Y,
                e1: DVec3::X,
                radii: [hw * s, hd * s],
                weights: chain_weights(y, &spine_chain),
                material: if y < 1.03 { MATERIAL_PANTS } else { MATERIAL_SHIRT },
            })
            .collect(),
        sides: 20,
        cap_rings: [3, 3],
        cap_len: [0.04 * s, 0.035 * s],
    });
}

/// The neck.
fn neck(m: &mut MeshData, s: f64) {
    // Neck.
    let neck_chain = [(UPPER_CHEST, 1.32), (NECK, 1.47), (HEAD, 1.56)];
    m.add_tube(&Tube {
        sections: [1.43, 1.47, 1.51, 1.55, 1.59]
            .iter()
            .map(|&y| Section {
                center: DVec3::new(0.0, y, -0.015) * s,
                axis: DVec3::Y,
                e1: DVec3::X,
                radii: [0.052 * s, 0.056 * s],
                weights: chain_weights(y, &neck_chain),
                material: MATERIAL_SKIN,
            })
            .collect(),
        sides: 12,
        cap_rings: [2, 2],
        cap_len: [0.02 * s, 0.02 * s],
    });
}

/// The head.
fn head(m: &mut MeshData, s: f64) {
    // Head: an ellipsoid swept bottom to top (13 rings between the poles), the jaw narrower and
    // further forward than the crown.
    let head = head_ellipsoid();
    let rings = 14;
    let first_alpha = PI / rings as f64;
    m.add_tube(&Tube {
        sections: (1..rings)
            .map(|k| {
                let alpha = PI * k as f64 / rings as f64;
                let lower = alpha.cos().max(0.0);
                Section {
                    center: (head.center + DVec3::new(0.0, -head.radii.y * alpha.cos(), 0.012 * lower)) * s,
                    axis: DVec3::Y,
                    e1: DVec3::X,
                    radii: [
                        head.radii.x * alpha.sin() * (1.0 - 0.12 * lower) * s,
                        head.radii.z * alpha.sin() * s,
                    ],
                    weights: vec![(HEAD, 1.0)],
                    material: MATERIAL_SKIN,
                }
            })
            .collect(),
        sides: 20,
        cap_rings: [1, 1],
        cap_len: [head.radii.y * (1.0 - first_alpha.cos()) * s; 2],
    });
}

/// One side's limbs: the bones of its arm and leg, the arm's direction and shoulder, and the
/// leg's offset across.
#[derive(Clone, Copy)]
struct Limbs {
    clav: usize,
    upper: usize,
    fore: usize,
    hand: usize,
    fingers: usize,
    thigh: usize,
    shin: usize,
    foot: usize,
    toe: usize,
    d: DVec3,
    shoulder: DVec3,
    x: f64,
}

impl Limbs {
    /// The limbs of the left side (`side` 1) or the right (`side` -1).
    fn new(sk: &Skeleton, side: f64) -> Limbs {
        let left = side > 0.0;
        let pick = |l: usize, r: usize| if left { l } else { r };
        let (clav, upper, fore, hand, fingers) = (
            pick(CLAVICLE_L, CLAVICLE_R),
            pick(UPPER_ARM_L, UPPER_ARM_R),
            pick(FOREARM_L, FOREARM_R),
            pick(HAND_L, HAND_R),
            pick(FINGERS_L, FINGERS_R),
        );
        let d = arm_direction(side);
        let shoulder = sk.pos[upper];
        let (thigh, shin, foot, toe) =
            (pick(THIGH_L, THIGH_R), pick(SHIN_L, SHIN_R), pick(FOOT_L, FOOT_R), pick(TOE_L, TOE_R));
        Limbs { clav, upper, fore, hand, fingers, thigh, shin, foot, toe, d, shoulder, x: side * 0.09 }
    }

    /// The arm, a tube from the shoulder to the wrist.
    fn arm(&self, m: &mut MeshData, s: f64) {
        let Limbs { clav, upper, fore, hand, d, shoulder, .. } = *self;
        // Arm, shoulder to wrist: (distance from the shoulder, semi-axis forward, semi-axis across)
        // at the reference height. Short sleeves.
        const ARM: [[f64; 3]; 15] = [
            [-0.01, 0.052, 0.055],
            [0.03, 0.050, 0.053],
            [0.08, 0.047, 0.048],
            [0.13, 0.045, 0.044],
            [0.18, 0.042, 0.041],
            [0.23, 0.039, 0.038],
            [0.27, 0.037, 0.036],
            [0.29, 0.036, 0.036],
            [0.31, 0.038, 0.036],
            [0.35, 0.040, 0.037],
            [0.39, 0.038, 0.035],
            [0.43, 0.035, 0.031],
            [0.47, 0.031, 0.027],
            [0.51, 0.028, 0.022],
            [0.54, 0.027, 0.020],
        ];
        m.add_tube(&Tube {
            sections: ARM
                .iter()
                .map(|&[t, rf, ra]| Section {
                    center: shoulder + d * (t * s),
                    axis: d,
                    e1: DVec3::Z,
                    radii: [rf * s, ra * s],
                    weights: if t < 0.2 {
                        blend(upper, clav, 0.35 * smoothstep(0.07, -0.01, t))
                    } else if t < 0.45 {
                        blend(upper, fore, smoothstep(0.25, 0.33, t))
                    } else {
                        blend(fore, hand, 0.5 * smoothstep(0.48, 0.545, t))
                    },
                    material: if t < 0.16 { MATERIAL_SHIRT } else { MATERIAL_SKIN },
                })
                .collect(),
            sides: 12,
            cap_rings: [3, 3],
            cap_len: [0.04 * s, 0.015 * s],
        });
    }

    /// The hand.
    fn hand(&self, m: &mut MeshData, s: f64) {
        let Limbs { hand, fingers, d, shoulder, .. } = *self;
        // Hand, a flattened tube (palm facing the thigh): (distance from the shoulder, half-width,
        // half-thickness).
        const HAND: [[f64; 3]; 6] = [
            [0.535, 0.028, 0.018],
            [0.56, 0.038, 0.020],
            [0.59, 0.045, 0.021],
            [0.62, 0.045, 0.018],
            [0.65, 0.040, 0.014],
            [0.68, 0.035, 0.011],
        ];
        m.add_tube(&Tube {
            sections: HAND
                .iter()
                .map(|&[t, hw, ht]| Section {
                    center: shoulder + d * (t * s),
                    axis: d,
                    e1: DVec3::Z,
                    radii: [hw * s, ht * s],
                    weights: blend(hand, fingers, smoothstep(0.60, 0.65, t)),
                    material: MATERIAL_SKIN,
                })
                .collect(),
            sides: 10,
            cap_rings: [3, 3],
            cap_len: [0.01 * s, 0.02 * s],
        });
    }

    /// The leg, from inside the pelvis down to the ankle.
    fn leg(&self, m: &mut MeshData, s: f64) {
        let Limbs { thigh, shin, foot, x, .. } = *self;
        // Leg, from inside the pelvis down to the ankle: (height, half-width, half-depth, z of the
        // centre). The top follows the hips a little, the knee and ankle blend their two bones.
        const LEG: [[f64; 4]; 19] = [
            [1.00, 0.082, 0.085, 0.000],
            [0.95, 0.085, 0.088, 0.000],
            [0.89, 0.080, 0.083, 0.005],
            [0.83, 0.075, 0.078, 0.005],
            [0.77, 0.070, 0.072, 0.005],
            [0.71, 0.064, 0.066, 0.005],
            [0.65, 0.058, 0.060, 0.003],
            [0.59, 0.052, 0.053, 0.000],
            [0.55, 0.049, 0.050, 0.000],
            [0.51, 0.047, 0.049, 0.000],
            [0.47, 0.047, 0.050, -0.003],
            [0.43, 0.050, 0.056, -0.008],
            [0.38, 0.052, 0.058, -0.010],
            [0.33, 0.049, 0.055, -0.010],
            [0.28, 0.044, 0.048, -0.008],
            [0.23, 0.039, 0.042, -0.005],
            [0.18, 0.035, 0.037, -0.003],
            [0.13, 0.032, 0.034, 0.000],
            [0.09, 0.031, 0.033, 0.000],
        ];
        m.add_tube(&Tube {
            sections: LEG
                .iter()
                .map(|&[y, hw, hd, z]| Section {
                    center: DVec3::new(x, y, z) * s,
                    axis: DVec3::NEG_Y,
                    e1: DVec3::X,
                    radii: [hw * s, hd * s],
                    weights: if y > 0.7 {
                        blend(thigh, HIPS, 0.5 * smoothstep(0.90, 1.0, y))
                    } else if y > 0.3 {
                        blend(thigh, shin, smoothstep(0.57, 0.45, y))
                    } else {
                        blend(shin, foot, 0.5 * smoothstep(0.14, 0.085, y))
                    },
                    material: MATERIAL_PANTS,
                })
                .collect(),
            sides: 14,
            cap_rings: [3, 3],
            cap_len: [0.04 * s, 0.02 * s],
        });
    }

    /// The foot, heel to toe.
    fn foot(&self, m: &mut MeshData, s: f64) {
        let Limbs { foot, toe, x, .. } = *self;
        // Foot, heel to toe, sole on y = 0: (z, half-width, half-height); each section's centre is
        // one half-height above the ground.
        const FOOT: [[f64; 3]; 8] = [
            [-0.045, 0.033, 0.040],
            [-0.02, 0.038, 0.048],
            [0.01, 0.041, 0.050],
            [0.05, 0.045, 0.043],
            [0.09, 0.048, 0.035],
            [0.13, 0.048, 0.028],
            [0.16, 0.044, 0.024],
            [0.18, 0.038, 0.021],
        ];
        m.add_tube(&Tube {
            sections: FOOT
                .iter()
                .map(|&[z, hw, hh]| Section {
                    center: DVec3::new(x, hh, z) * s,
                    axis: DVec3::Z,
                    e1: DVec3::X,
                    radii: [hw * s, hh * s],
                    weights: blend(foot, toe, smoothstep(0.10, 0.155, z)),
                    material: MATERIAL_SHOES,
                })
                .collect(),
            sides: 12,
            cap_rings: [3, 3],
            cap_len: [0.025 * s, 0.025 * s],
        });
    }
}

/// The head's ellipsoid at the reference height: centre (model space) and semi-axes, metres.
pub(super) struct Ellipsoid {
    pub(super) center: DVec3,
    pub(super) radii: DVec3,
}

pub(super) fn head_ellipsoid() -> Ellipsoid {
    Ellipsoid { center: DVec3::new(0.0, 1.665, 0.01), radii: DVec3::new(0.08, 0.115, 0.098) }
}

/// The cap accessory in the head socket's space (origin on the crown, +Y up, +Z forward), metres at
/// the skeleton's scale: a dome over the top of the head, closed underneath, and a brim in front.
/// Rigid (no weights), material [`MATERIAL_CAP`].
pub(super) fn cap(scale: f64) -> MeshData {
    let s = scale;
    let mut m = MeshData::default();
    let no_weights = Vec::new();
    // Dome: a slightly larger ellipsoid than the head, centred 11 cm below the crown, from its top
    // down to 75 degrees off the vertical; the flat bottom disc sits inside the head.
    let radii = DVec3::new(0.09, 0.122, 0.107);
    let center_y = -0.11;
    let rings = 8;
    let rim = 75f64.to_radians();
    m.add_tube(&Tube {
        sections: (1..=rings)
            .map(|k| {
                let alpha = rim * k as f64 / rings as f64;
                Section {
                    center: DVec3::new(0.0, center_y + radii.y * alpha.cos(), 0.0) * s,
                    axis: DVec3::NEG_Y,
                    e1: DVec3::X,
                    radii: [radii.x * alpha.sin() * s, radii.z * alpha.sin() * s],
                    weights: no_weights.clone(),
                    material: MATERIAL_CAP,
                }
            })
            .collect(),
        sides: 24,
        cap_rings: [1, 1],
        cap_len: [radii.y * (1.0 - (rim / rings as f64).cos()) * s, 0.0],
    });
    // Brim: a thin half-ellipse in front of the rim, swept across x.
    let rim_y = center_y + radii.y * rim.cos();
    let rim_z = radii.z * rim.sin();
    let half_span = 0.085;
    let sections = 9;
    m.add_tube(&Tube {
        sections: (0..sections)
            .map(|k| {
                let x = -0.075 + 0.15 * k as f64 / (sections - 1) as f64;
                let reach = 0.035 * (1.0 - (x / half_span).powi(2)).max(0.0).sqrt();
                Section {
                    center: DVec3::new(x, rim_y - 0.2 * reach, rim_z - 0.01 + reach) * s,
                    axis: DVec3::X,
                    e1: DVec3::Z,
                    radii: [(reach + 0.012) * s, 0.005 * s],
                    weights: no_weights.clone(),
                    material: MATERIAL_CAP,
                }
            })
            .collect(),
        sides: 10,
        cap_rings: [2, 2],
        cap_len: [0.008 * s; 2],
    });
    m
}
