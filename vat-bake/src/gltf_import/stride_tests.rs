//! Strides on rigs shaped like real exports, each built here: a two-legged skeleton (hips, then per
//! leg thigh -> shin -> ankle, optionally a toe) skinned to a small mesh, walking and running with a
//! known stride. Each leg is posed by two-bone IK so that the ankle follows an exact path: planted
//! on the ground and sliding back at constant speed for the stance, swinging forward through an arc
//! for the rest of the cycle, the right leg half a cycle behind, the hips bobbing and swaying. The
//! fixtures vary what real files vary: the naming convention (Mixamo, Blender, Unreal, Unity,
//! `FootL`, none), in place or root motion (the hips travel forward and the planted foot stands
//! still), facing `+Z` or `-Z`, and metres or centimetres (joints 100x apart under an armature
//! node that scales by 0.01 and turns Z-up into Y-up, as FBX conversions write them).

use std::f32::consts::PI;

use glam::{Mat4, Quat, Vec3};
use serde_json::json;

use super::fixture::Fixture;
use super::import_slice;
use crate::feet::FeetSource;
use crate::prepare::{BakeOptions, prepare};
use crate::rig::Rig;
use crate::stride::measure_stride;

/// A gait: its clip name, cycle length, stance fraction and how far the planted ankle slides
/// (from `+half_slide` to `-half_slide` along the facing), so its stride is
/// `2 half_slide / stance`.
#[derive(Clone, Copy)]
struct Gait {
    name: &'static str,
    duration: f32,
    stance: f32,
    half_slide: f32,
}

impl Gait {
    fn stride(self) -> f32 {
        2.0 * self.half_slide / self.stance
    }
}

/// Keyed at 30 per second: the walk's 30 keys are sampled at the keys, the run's 21 evenly between
/// them (fewer than [`crate::stride::MIN_KEYED_SAMPLES`]), where interpolation bends the ankle's
/// path a little as it does in a real file.
const WALK: Gait = Gait { name: "Walk", duration: 1.0, stance: 0.6, half_slide: 0.36 };
const RUN: Gait = Gait { name: "Run", duration: 0.7, stance: 0.35, half_slide: 0.35 };

/// Joint names: hips, then per side (left, right) thigh, shin, ankle, toe; `decoys` are extra
/// joints (Unreal's IK bones) parented to the armature before the hips, left static at the feet.
struct Names {
    label: &'static str,
    hips: &'static str,
    legs: [[&'static str; 4]; 2],
    decoys: &'static [&'static str],
}

const CONVENTIONS: &[Names] = &[
    Names {
        label: "Mixamo",
        hips: "mixamorig:Hips",
        legs: [
            ["mixamorig:LeftUpLeg", "mixamorig:LeftLeg", "mixamorig:LeftFoot", "mixamorig:LeftToeBase"],
            ["mixamorig:RightUpLeg", "mixamorig:RightLeg", "mixamorig:RightFoot", "mixamorig:RightToeBase"],
        ],
        decoys: &[],
    },
    Names {
        label: "Mixamo mixamorig1:",
        hips: "mixamorig1:Hips",
        legs: [
            ["mixamorig1:LeftUpLeg", "mixamorig1:LeftLeg", "mixamorig1:LeftFoot", "mixamorig1:LeftToeBase"],
            [
                "mixamorig1:RightUpLeg",
                "mixamorig1:RightLeg",
                "mixamorig1:RightFoot",
                "mixamorig1:RightToeBase",
            ],
        ],
        decoys: &[],
    },
    Names {
        label: "Blender",
        hips: "hips",
        legs: [["thigh.L", "shin.L", "foot.L", "toe.L"], ["thigh.R", "shin.R", "Foot.R", "toe.R"]],
        decoys: &[],
    },
    Names {
        label: "Blender Armature|",
        hips: "Armature|DEF-hips",
        legs: [
            ["Armature|DEF-thigh.L", "Armature|DEF-shin.L", "Armature|DEF-foot.L", "Armature|DEF-toe.L"],
            ["Armature|DEF-thigh.R", "Armature|DEF-shin.R", "Armature|DEF-foot.R", "Armature|DEF-toe.R"],
        ],
        decoys: &[],
    },
    Names {
        label: "Unreal",
        hips: "pelvis",
        legs: [["thigh_l", "calf_l", "foot_l", "ball_l"], ["thigh_r", "calf_r", "foot_r", "ball_r"]],
        decoys: &["ik_foot_l", "ik_foot_r"],
    },
    Names {
        label: "Unity",
        hips: "Hips",
        legs: [
            ["LeftUpperLeg", "LeftLowerLeg", "LeftFoot", "LeftToes"],
            ["RightUpperLeg", "RightLowerLeg", "RightFoot", "RightToes"],
        ],
        decoys: &[],
    },
    Names {
        label: "FootL/FootR",
        hips: "rig:Hips",
        legs: [
            ["rig:UpperLegL", "rig:LowerLegL", "rig:FootL", "rig:ToeL"],
            ["rig:UpperLegR", "rig:LowerLegR", "rig:FootR", "rig:ToeR"],
        ],
        decoys: &[],
    },
    Names {
        label: "no names (geometry)",
        hips: "Bone",
        legs: [
            ["Bone.001", "Bone.002", "Bone.003", "Bone.004"],
            ["Bone.005", "Bone.006", "Bone.007", "Bone.008"],
        ],
        decoys: &[],
    },
];

/// One fixture's shape.
#[derive(Clone, Copy)]
struct Shape {
    /// `+1.0`: faces `+Z`; `-1.0`: faces `-Z`.
    facing: f32,
    root_motion: bool,
    centimetres: bool,
    toes: bool,
}

/// Leg geometry, metres: hip joints 0.1 m to each side and 0.05 m below the hips node, thigh
/// 0.44 m, shin 0.42 m, toe 0.12 m ahead of and 0.04 m below the ankle.
const HIP_SIDE: f32 = 0.1;
const HIP_DROP: f32 = 0.05;
const THIGH: f32 = 0.44;
const SHIN: f32 = 0.42;
/// The hips node's height while walking (its rest height is 0.95 m, legs straight), the planted
/// ankle's height, and the swing's lift.
const HIPS_HEIGHT: f32 = 0.85;
const ANKLE_HEIGHT: f32 = 0.08;
const LIFT: f32 = 0.12;

/// The armature's rotation in the centimetre fixtures: -90 degrees about X (Z-up to Y-up).
fn armature_rotation() -> Quat {
    Quat::from_rotation_x(-PI / 2.0)
}

/// World (metres, Y up) targets at time `t` of `gait`: the hips node's position and each ankle's.
fn targets(gait: Gait, shape: Shape, t: f32) -> (Vec3, [Vec3; 2]) {
    let forward = Vec3::Z * shape.facing;
    let left = Vec3::Y.cross(forward);
    let phase = t / gait.duration;
    let speed = gait.stride() / gait.duration;
    let travel = if shape.root_motion { forward * speed * t } else { Vec3::ZERO };
    let hips = Vec3::new(0.0, HIPS_HEIGHT + 0.015 * (4.0 * PI * phase).cos(), 0.0)
        + left * 0.02 * (2.0 * PI * phase).sin()
        + travel;
    let ankle = |side: f32, offset: f32| {
        let phi = (phase + offset).rem_euclid(1.0);
        let a = gait.half_slide;
        let (along, height) = if phi < gait.stance {
            (a - 2.0 * a * phi / gait.stance, ANKLE_HEIGHT)
        } else {
            let s = (phi - gait.stance) / (1.0 - gait.stance);
            (-a + 2.0 * a * s * s * (3.0 - 2.0 * s), ANKLE_HEIGHT + LIFT * (PI * s).sin())
        };
        left * side * HIP_SIDE + forward * along + Vec3::Y * height + travel
    };
    (hips, [ankle(1.0, 0.0), ankle(-1.0, 0.5)])
}

/// Global rotations of a leg's thigh and shin (bones along their local -Y) that put the ankle at
/// `ankle` from the hip joint at `hip`, the knee bending towards `forward`.
fn leg_ik(hip: Vec3, ankle: Vec3, forward: Vec3) -> (Quat, Quat) {
    let reach = ankle - hip;
    let d = reach.length();
    assert!(d < THIGH + SHIN && d > (THIGH - SHIN).abs(), "the target is out of the leg's reach: {d}");
    let u = reach / d;
    let w = (forward - u * forward.dot(u)).normalize();
    let cos = (THIGH * THIGH + d * d - SHIN * SHIN) / (2.0 * THIGH * d);
    let knee = hip + THIGH * (u * cos + w * (1.0 - cos * cos).sqrt());
    let thigh = Quat::from_rotation_arc(Vec3::NEG_Y, (knee - hip).normalize());
    let shin = Quat::from_rotation_arc(Vec3::NEG_Y, (ankle - knee).normalize());
    (thigh, shin)
}

/// The fixture: an armature node (identity, or rotated and scaled by 0.01 with joints in
/// centimetres), the skeleton, a skinned mesh of one small triangle per joint, and the walk and
/// the run.
fn walker(names: &Names, shape: Shape) -> Fixture {
    let unit = if shape.centimetres { 100.0 } else { 1.0 };
    let armature_rot = if shape.centimetres { armature_rotation() } else { Quat::IDENTITY };
    let forward = Vec3::Z * shape.facing;
    let left = Vec3::Y.cross(forward);
    let mut f = Fixture::new();
    let mut armature = json!({ "name": "Armature" });
    if shape.centimetres {
        armature["rotation"] = json!(armature_rot.to_array());
        armature["scale"] = json!([0.01, 0.01, 0.01]);
    }
    let armature = f.node(armature, true);
    // Rest locals (file units): (name, parent joint slot, translation, rotation).
    let mut joints: Vec<(String, Option<usize>, Vec3, Quat)> = Vec::new();
    for decoy in names.decoys {
        joints.push((decoy.to_string(), None, Vec3::ZERO, Quat::IDENTITY));
    }
    let hips_rest = Vec3::new(0.0, HIP_DROP + THIGH + SHIN, 0.0);
    let hips = joints.len();
    joints.push((names.hips.into(), None, armature_rot.inverse() * hips_rest * unit, armature_rot.inverse()));
    let mut slots = [[0usize; 4]; 2];
    for (s, side) in [1.0f32, -1.0].into_iter().enumerate() {
        let [thigh, shin, ankle, toe] = names.legs[s];
        slots[s][0] = joints.len();
        joints.push((
            thigh.into(),
            Some(hips),
            (left * side * HIP_SIDE - Vec3::Y * HIP_DROP) * unit,
            Quat::IDENTITY,
        ));
        slots[s][1] = joints.len();
        joints.push((shin.into(), Some(slots[s][0]), Vec3::NEG_Y * THIGH * unit, Quat::IDENTITY));
        slots[s][2] = joints.len();
        joints.push((ankle.into(), Some(slots[s][1]), Vec3::NEG_Y * SHIN * unit, Quat::IDENTITY));
        if shape.toes {
            slots[s][3] = joints.len();
            joints.push((
                toe.into(),
                Some(slots[s][2]),
                (forward * 0.12 - Vec3::Y * 0.04) * unit,
                Quat::IDENTITY,
            ));
        }
    }
    // Unreal's IK bones rest where the feet rest, in armature space.
    let rest_ankle = |s: usize| {
        let side = if s == 0 { 1.0 } else { -1.0 };
        armature_rot.inverse() * (left * side * HIP_SIDE) * unit
    };
    for (k, joint) in joints.iter_mut().enumerate().take(names.decoys.len()) {
        joint.2 = rest_ankle(k % 2);
    }
    let nodes: Vec<usize> = joints
        .iter()
        .map(|(name, _, t, r)| {
            f.node(json!({ "name": name, "translation": t.to_array(), "rotation": r.to_array() }), false)
        })
        .collect();
    for (k, (_, parent, ..)) in joints.iter().enumerate() {
        f.child(parent.map_or(armature, |p| nodes[p]), nodes[k]);
    }
    skin_body(&mut f, armature, &nodes, &joints, unit);

    for gait in [WALK, RUN] {
        let intervals = (gait.duration * 30.0).round() as usize;
        let times: Vec<f32> = (0..=intervals).map(|k| k as f32 * gait.duration / intervals as f32).collect();
        let mut hips_keys = Vec::new();
        let mut rotations = vec![Vec::new(); 6]; // thigh, shin, ankle per side
        for &t in &times {
            let (hips_at, ankles) = targets(gait, shape, t);
            hips_keys.extend((armature_rot.inverse() * hips_at * unit).to_array());
            for s in 0..2 {
                let side = if s == 0 { 1.0 } else { -1.0 };
                let hip = hips_at + left * side * HIP_SIDE - Vec3::Y * HIP_DROP;
                let (thigh, shin) = leg_ik(hip, ankles[s], forward);
                for (k, q) in [thigh, thigh.inverse() * shin, shin.inverse()].into_iter().enumerate() {
                    let track: &mut Vec<Quat> = &mut rotations[3 * s + k];
                    let q = match track.last() {
                        Some(prev) if prev.dot(q) < 0.0 => -q,
                        _ => q,
                    };
                    track.push(q);
                }
            }
        }
        let input = f.f32s(&times, "SCALAR");
        f.json["accessors"][input]["min"] = json!([0.0]);
        f.json["accessors"][input]["max"] = json!([gait.duration]);
        let mut channels = vec![(nodes[hips], "translation", input, f.f32s(&hips_keys, "VEC3"), "LINEAR")];
        for s in 0..2 {
            for k in 0..3 {
                let values: Vec<f32> = rotations[3 * s + k].iter().flat_map(|q| q.to_array()).collect();
                channels.push((nodes[slots[s][k]], "rotation", input, f.f32s(&values, "VEC4"), "LINEAR"));
            }
        }
        f.animation(gait.name, &channels);
    }
    f
}

/// Skins a mesh of one small triangle per joint to `joints` (`(name, parent slot, translation,
/// rotation)` rest locals in armature space, file units; `nodes` their glTF nodes), under
/// `armature`.
fn skin_body(
    f: &mut Fixture,
    armature: usize,
    nodes: &[usize],
    joints: &[(String, Option<usize>, Vec3, Quat)],
    unit: f32,
) {
    let mut globals: Vec<Mat4> = Vec::new();
    for (_, parent, t, r) in joints {
        let local = Mat4::from_rotation_translation(*r, *t);
        globals.push(parent.map_or(local, |p| globals[p] * local));
    }
    let ibms: Vec<f32> = globals.iter().flat_map(|g| g.inverse().to_cols_array()).collect();
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let mut joint_ids = Vec::new();
    for (j, g) in globals.iter().enumerate() {
        let corners = [Vec3::new(-0.03, 0.0, 0.0), Vec3::new(0.03, 0.0, 0.0), Vec3::new(0.0, 0.05, 0.0)];
        let p: Vec<Vec3> = corners.iter().map(|c| g.transform_point3(*c * unit)).collect();
        let n = (p[1] - p[0]).cross(p[2] - p[0]).normalize();
        for q in p {
            positions.push(q.to_array());
            normals.extend(n.to_array());
            joint_ids.extend([j as u8, 0, 0, 0]);
        }
    }
    let weights: Vec<f32> = (0..positions.len()).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect();
    let position = f.positions(&positions);
    let normal = f.f32s(&normals, "VEC3");
    let joints_acc = f.u8s(&joint_ids, "VEC4");
    let weights_acc = f.f32s(&weights, "VEC4");
    let mesh = f.push(
        "meshes",
        json!({ "name": "Body", "primitives": [{ "attributes": {
            "POSITION": position, "NORMAL": normal, "JOINTS_0": joints_acc, "WEIGHTS_0": weights_acc } }] }),
    );
    let ibm = f.f32s(&ibms, "MAT4");
    f.push("skins", json!({ "joints": nodes, "inverseBindMatrices": ibm }));
    let body = f.node(json!({ "name": "Body", "mesh": mesh, "skin": 0 }), false);
    f.child(armature, body);
}

fn import(f: &Fixture) -> Rig {
    import_slice(&f.gltf(), None, "walker.gltf").unwrap()
}

/// Every naming convention, in place and root motion, facing +Z and -Z, metres and centimetres,
/// with and without toes: the baked walk and run strides are within 2 % of the known ones (in
/// metres in the bake's output space), and the feet are the ankles (the toes' ends when found by
/// geometry) on the right sides.
#[test]
fn strides_of_every_kind_of_walk_are_within_two_percent() {
    let mut worst: f32 = 0.0;
    for names in CONVENTIONS {
        for facing in [1.0, -1.0] {
            for root_motion in [false, true] {
                for centimetres in [false, true] {
                    for toes in [true, false] {
                        let shape = Shape { facing, root_motion, centimetres, toes };
                        let what = format!(
                            "{} facing {}Z, {}, {}, {}",
                            names.label,
                            if facing > 0.0 { "+" } else { "-" },
                            if root_motion { "root motion" } else { "in place" },
                            if centimetres { "centimetres" } else { "metres" },
                            if toes { "toes" } else { "no toes" },
                        );
                        let rig = import(&walker(names, shape));
                        let walk = rig.clips.iter().find(|c| c.name == WALK.name).unwrap();
                        let measured =
                            measure_stride(&rig, walk).unwrap().unwrap_or_else(|e| panic!("{what}: {e}"));
                        let geometry = names.hips == "Bone";
                        let source = if geometry { FeetSource::Geometry } else { FeetSource::Rig };
                        assert_eq!(measured.feet_source, source, "{what}");
                        let foot = if geometry && toes { 3 } else { 2 };
                        let name = |n: usize| rig.nodes[n].name.as_str();
                        assert_eq!(
                            [name(measured.feet.left), name(measured.feet.right)],
                            [names.legs[0][foot], names.legs[1][foot]],
                            "{what}"
                        );
                        assert!(measured.facing.distance(Vec3::Z * facing) < 0.01, "{what}: {measured:?}");

                        let bake = prepare(&rig, &BakeOptions::default()).unwrap();
                        assert!(
                            bake.stats.warnings.iter().all(|w| !w.contains("stride")),
                            "{what}: {:?}",
                            bake.stats.warnings
                        );
                        for gait in [WALK, RUN] {
                            let clip = bake.manifest().clips.iter().find(|c| c.name == gait.name).unwrap();
                            let error = (clip.stride - gait.stride()) / gait.stride();
                            println!(
                                "{what}, {}: stride {:.4} m of {:.4} m ({:+.3} %)",
                                gait.name,
                                clip.stride,
                                gait.stride(),
                                error * 100.0
                            );
                            assert!(
                                error.abs() < 0.02,
                                "{what}, {}: stride {} of {}",
                                gait.name,
                                clip.stride,
                                gait.stride()
                            );
                            worst = worst.max(error.abs());
                        }
                    }
                }
            }
        }
    }
    println!("worst stride error {:.3} %", worst * 100.0);
}

/// The bake's warnings that mention a stride.
fn stride_warnings(rig: &Rig) -> Vec<String> {
    let bake = prepare(rig, &BakeOptions::default()).unwrap();
    bake.stats.warnings.iter().filter(|w| w.contains("stride")).cloned().collect()
}

/// A locomotion clip that yields no stride says why in one line naming the clip: here a skeleton
/// with no foot names and no legs (a chain standing up), then a walk whose legs never move.
#[test]
fn a_walk_without_a_stride_says_why() {
    let mut f = Fixture::new();
    let armature = f.node(json!({ "name": "Armature" }), true);
    let joints: Vec<(String, Option<usize>, Vec3, Quat)> = vec![
        ("Bone".into(), None, Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY),
        ("Bone.001".into(), Some(0), Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY),
        ("Bone.002".into(), Some(1), Vec3::new(0.0, 0.5, 0.0), Quat::IDENTITY),
    ];
    let nodes: Vec<usize> = joints
        .iter()
        .map(|(name, _, t, _)| f.node(json!({ "name": name, "translation": t.to_array() }), false))
        .collect();
    for (k, (_, parent, ..)) in joints.iter().enumerate() {
        f.child(parent.map_or(armature, |p| nodes[p]), nodes[k]);
    }
    skin_body(&mut f, armature, &nodes, &joints, 1.0);
    let input = f.f32s(&[0.0, 0.5, 1.0], "SCALAR");
    f.json["accessors"][input]["min"] = json!([0.0]);
    f.json["accessors"][input]["max"] = json!([1.0]);
    let sway: Vec<f32> =
        [0.0f32, 0.2, 0.0].iter().flat_map(|&a| Quat::from_rotation_z(a).to_array()).collect();
    let output = f.f32s(&sway, "VEC4");
    f.animation("Walk", &[(nodes[1], "rotation", input, output, "LINEAR")]);
    assert_eq!(
        stride_warnings(&import(&f)),
        [format!(
            "clip \"Walk\": no stride: no foot joints found by name (tried {}, any case or prefix) or by geometry \
             (no end joint in the lowest quarter of the skeleton's height; two legs need two); baked with stride 0",
            crate::feet::TRIED_NAMES
        )]
    );

    // The Unity-named walker with only its hips' bob and sway left: feet, but no gait.
    let mut f =
        walker(&CONVENTIONS[5], Shape { facing: 1.0, root_motion: false, centimetres: false, toes: true });
    for animation in f.json["animations"].as_array_mut().unwrap() {
        animation["channels"].as_array_mut().unwrap().truncate(1);
    }
    assert_eq!(
        stride_warnings(&import(&f)),
        ["Walk", "Run"].map(|clip| format!(
            "clip \"{clip}\": no stride: feet \"LeftFoot\" and \"RightFoot\" (given by the rig) never slide back \
             along the ground while planted, and the clip does not travel (no root motion): not a forward gait; \
             baked with stride 0"
        ))
    );
}
