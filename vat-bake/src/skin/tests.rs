use super::*;
use crate::rig::{
    AnimationClip, Channel, ChannelTarget, KeyInterpolation, MorphTarget, Node, Skin, Transform,
};
use glam::Quat;

fn node(name: &str, parent: Option<usize>, rest: Transform) -> Node {
    Node { name: name.into(), parent, rest }
}

fn at(translation: Vec3) -> Transform {
    Transform { translation, ..Transform::IDENTITY }
}

fn mesh(name: &str, binding: MeshBinding, positions: Vec<Vec3>, normals: Vec<Vec3>) -> Mesh {
    let n = positions.len();
    Mesh {
        name: name.into(),
        binding,
        role: MeshRole::Body,
        positions,
        normals,
        tangents: None,
        uvs: None,
        colors: None,
        material_ids: vec![0; n],
        indices: vec![],
        influence_count: if matches!(binding, MeshBinding::Skinned { .. }) { 8 } else { 0 },
        joints: vec![[0; 8]; n],
        weights: vec![[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]; n],
        full_influences: None,
        morph_targets: vec![],
        default_morph_weights: vec![],
    }
}

/// Two root joints with identity inverse binds, so a pose's locals are the bone matrices.
fn two_bone_rig(skinned: Mesh) -> Rig {
    Rig {
        name: "two bones".into(),
        nodes: vec![node("a", None, Transform::IDENTITY), node("b", None, Transform::IDENTITY)],
        skins: vec![Skin { joints: vec![0, 1], inverse_bind: vec![Mat4::IDENTITY; 2] }],
        meshes: vec![skinned],
        ..Rig::default()
    }
}

/// Bone 0 translates by +X, bone 1 turns 90 deg about +Z (x -> y).
fn translate_and_turn_pose(rig: &Rig) -> Pose {
    let mut pose = rest_pose(rig);
    pose.locals[0] = at(Vec3::X);
    pose.locals[1] =
        Transform { rotation: Quat::from_rotation_z(std::f32::consts::FRAC_PI_2), ..Transform::IDENTITY };
    pose
}

/// Bound for a blend of two bones with entries <= 1 from renormalised f32 weights over up to 8
/// slots: weight rounding and renormalisation (<= 9 roundings), matrix accumulation (<= 8 per
/// entry) and the transform (3) stay under 24 roundings of 2^-24 relative to values <= 2:
/// 24 * 2 * 2^-24 < 3e-6.
const BLEND_BOUND: f32 = 24.0 * 2.0 * f32::EPSILON / 2.0;

fn assert_vec_near(got: Vec3, want: Vec3, bound: f32, what: &str) {
    assert!((got - want).abs().max_element() <= bound, "{what}: {got} vs {want} (bound {bound})");
}

#[test]
fn eight_influences_blend_two_bones_by_their_summed_weights() {
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
    m.tangents = Some(vec![Vec4::new(0.0, 0.0, 1.0, -1.0)]);
    m.joints = vec![[0, 1, 0, 1, 0, 1, 0, 1]];
    m.weights = vec![[0.1, 0.2, 0.05, 0.15, 0.1, 0.1, 0.2, 0.1]];
    let rig = two_bone_rig(m);
    let set = VertexSet::from_rig(&rig).unwrap();
    assert_eq!(set.influence_count, 8);
    let frame = skin_pose(&rig, &set, &translate_and_turn_pose(&rig));
    // Bone 0 gets 0.1 + 0.05 + 0.1 + 0.2 = 0.45, bone 1 0.55: M = 0.45 T + 0.55 R.
    // p = (1, 0, 0): 0.45 * (2, 0, 0) + 0.55 * (0, 1, 0).
    assert_vec_near(frame.positions[0], Vec3::new(0.9, 0.55, 0.0), BLEND_BOUND, "position");
    // M3 = [[0.45, -0.55], [0.55, 0.45]] (+ z = 1) is a scaled rotation: n = x turns to
    // (0.45, 0.55) / |.|, and a z tangent stays z, sign kept.
    let n = Vec3::new(0.45, 0.55, 0.0).normalize();
    assert_vec_near(frame.normals[0], n, BLEND_BOUND, "normal");
    assert_eq!(frame.tangents.unwrap()[0], Vec4::new(0.0, 0.0, 1.0, -1.0));
}

#[test]
fn four_influences() {
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X, Vec3::ZERO], vec![Vec3::Z; 2]);
    m.influence_count = 4;
    m.joints = vec![[0, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0]];
    // Slots past influence_count are ignored, whatever they hold.
    m.weights = vec![[0.25, 0.75, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
    let rig = two_bone_rig(m);
    let set = VertexSet::from_rig(&rig).unwrap();
    assert_eq!(set.influence_count, 4);
    assert_eq!(set.weights[0], [0.25, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let frame = skin_pose(&rig, &set, &translate_and_turn_pose(&rig));
    // 0.25 * (2, 0, 0) + 0.75 * (0, 1, 0); the second vertex sits at the turn's centre.
    assert_vec_near(frame.positions[0], Vec3::new(0.5, 0.75, 0.0), BLEND_BOUND, "blend");
    assert_eq!(frame.positions[1], Vec3::ZERO);
    assert_vec_near(frame.normals[0], Vec3::Z, BLEND_BOUND, "normal");
}

/// Root, a joint one metre up, and a non-joint node carried by the joint.
fn prop_rig() -> Rig {
    let body = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::Y], vec![Vec3::X]);
    let on_joint = mesh("hat", MeshBinding::Rigid { node: 1 }, vec![Vec3::new(0.0, 0.5, 0.0)], vec![Vec3::Y]);
    let on_node =
        mesh("sword", MeshBinding::Rigid { node: 2 }, vec![Vec3::new(0.0, 0.0, 0.5)], vec![Vec3::Z]);
    Rig {
        name: "prop".into(),
        nodes: vec![
            node("root", None, Transform::IDENTITY),
            node("joint", Some(0), at(Vec3::Y)),
            node("holder", Some(1), at(Vec3::X)),
        ],
        skins: vec![Skin { joints: vec![1], inverse_bind: vec![Mat4::from_translation(-Vec3::Y)] }],
        meshes: vec![body, on_joint, on_node],
        ..Rig::default()
    }
}

#[test]
fn rigid_meshes_follow_their_carrier_node() {
    let rig = prop_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    // The hat reuses joint 1's bone; the sword's node gets an extra bone.
    assert_eq!(set.bones.len(), 2);
    assert_eq!(set.bones[1].node, 2);
    assert_eq!(set.joints[1][0], 0);
    assert_eq!(set.joints[2][0], 1);
    // Bind space: hat at joint (0, 1, 0) + (0, 0.5, 0); sword at (1, 1, 0) + (0, 0, 0.5).
    assert_eq!(set.positions[1], Vec3::new(0.0, 1.5, 0.0));
    assert_eq!(set.positions[2], Vec3::new(1.0, 1.0, 0.5));
    // Turn the joint 90 deg about Z and lift the root by 2: local x -> y, y -> -x.
    let mut pose = rest_pose(&rig);
    pose.locals[0] = at(Vec3::new(0.0, 2.0, 0.0));
    pose.locals[1].rotation = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let frame = skin_pose(&rig, &set, &pose);
    // Rotation of sin/cos(pi/2) in f32 and two matrix products: a few roundings of values <= 3.
    let bound = 8.0 * 3.0 * f32::EPSILON;
    assert_vec_near(frame.positions[1], Vec3::new(-0.5, 3.0, 0.0), bound, "hat");
    assert_vec_near(frame.normals[1], -Vec3::X, bound, "hat normal");
    // Sword: holder at joint + (0, 1, 0) after the turn, then its offset (0, 0, 0.5).
    assert_vec_near(frame.positions[2], Vec3::new(0.0, 4.0, 0.5), bound, "sword");
    assert_vec_near(frame.normals[2], Vec3::Z, bound, "sword normal");
    // The skinned body vertex at the joint stays there.
    assert_vec_near(frame.positions[0], Vec3::new(0.0, 3.0, 0.0), bound, "body");
}

#[test]
fn weights_are_renormalised() {
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
    m.joints = vec![[0, 1, 0, 0, 0, 0, 0, 0]];
    m.weights = vec![[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]];
    let set = VertexSet::from_rig(&two_bone_rig(m)).unwrap();
    assert_eq!(set.weights[0], [0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

fn expect_invalid(rig: &Rig, needles: &[&str]) {
    match VertexSet::from_rig(rig) {
        Err(e @ BakeError::InvalidInput { .. }) => {
            let msg = e.to_string();
            for n in needles {
                assert!(msg.contains(n), "{msg:?} lacks {n:?}");
            }
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn bad_skinning_data_are_typed_errors_naming_mesh_and_vertex() {
    let base = || mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X, Vec3::Y], vec![Vec3::X; 2]);
    let mut m = base();
    m.weights[1] = [0.0; 8];
    expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "sum to 0"]);
    let mut m = base();
    m.joints[1][0] = 2;
    expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "joint index 2", "2 joints"]);
    let mut m = base();
    m.weights[0][3] = -0.5;
    expect_invalid(&two_bone_rig(m), &["vertex 0", "weight 3"]);
    let mut m = base();
    m.weights[0][0] = f32::INFINITY;
    expect_invalid(&two_bone_rig(m), &["vertex 0", "finite"]);
    let mut m = base();
    m.positions[1].y = f32::NAN;
    expect_invalid(&two_bone_rig(m), &["\"body\" vertex 1", "position"]);
    let mut m = base();
    m.indices = vec![0, 1, 2];
    expect_invalid(&two_bone_rig(m), &["\"body\"", "index 2"]);
    let mut m = base();
    m.normals.pop();
    expect_invalid(&two_bone_rig(m), &["\"body\"", "1 normals"]);
    // A body mesh on a skin that does not exist.
    let mut rig = two_bone_rig(base());
    let mut other = base();
    other.name = "cape".into();
    other.binding = MeshBinding::Skinned { skin: 1 };
    rig.meshes.push(other);
    expect_invalid(&rig, &["\"cape\"", "skin 1"]);
    // No body mesh at all.
    let mut rig = two_bone_rig(base());
    rig.meshes[0].role = MeshRole::Attachment { socket: 0 };
    expect_invalid(&rig, &["no body mesh"]);
}

#[test]
fn zero_weight_slots_with_out_of_range_joints_are_cleared() {
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::X], vec![Vec3::X]);
    m.joints = vec![[1, 900, 0, 0, 0, 0, 0, 0]];
    let set = VertexSet::from_rig(&two_bone_rig(m)).unwrap();
    assert_eq!(set.joints[0], [1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn morph_targets_on_a_skinned_mesh_apply_before_skinning() {
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, vec![Vec3::ZERO, Vec3::X], vec![Vec3::Z; 2]);
    m.morph_targets = vec![MorphTarget {
        name: None,
        positions: vec![Vec3::new(0.0, 2.0, 0.0), Vec3::ZERO],
        normals: Some(vec![Vec3::new(1.0, 0.0, -1.0), Vec3::ZERO]),
        tangents: None,
    }];
    m.default_morph_weights = vec![0.5];
    let rig = two_bone_rig(m);
    let set = VertexSet::from_rig(&rig).unwrap();
    // Only the vertex with a delta is stored.
    assert_eq!(set.morph_targets[0].vertices, vec![0]);
    let mut pose = translate_and_turn_pose(&rig);
    let frame = skin_pose(&rig, &set, &pose);
    // (0, 0, 0) + 0.5 * (0, 2, 0) = (0, 1, 0), then bone 0 moves it +X. Exact binary fractions.
    assert_eq!(frame.positions[0], Vec3::new(1.0, 1.0, 0.0));
    assert_eq!(frame.positions[1], Vec3::new(2.0, 0.0, 0.0));
    // n = (0, 0, 1) + 0.5 * (1, 0, -1) = (0.5, 0, 0.5) -> (1, 0, 1) / sqrt 2.
    assert_vec_near(frame.normals[0], Vec3::new(1.0, 0.0, 1.0).normalize(), f32::EPSILON, "normal");
    pose.morph_weights[0][0] = 1.0;
    let frame = skin_pose(&rig, &set, &pose);
    assert_eq!(frame.positions[0], Vec3::new(1.0, 2.0, 0.0));
    assert_eq!(frame.normals[0], Vec3::X);
}

#[test]
fn morph_targets_on_a_rigid_mesh_apply_in_mesh_space() {
    // The carrier scales x by 2 and sits at z = 2: positions and normal deltas must be moved to
    // bind space consistently with the base vertex.
    let rest = Transform {
        translation: Vec3::new(0.0, 0.0, 2.0),
        rotation: Quat::IDENTITY,
        scale: Vec3::new(2.0, 1.0, 1.0),
    };
    let mut m = mesh("face", MeshBinding::Rigid { node: 0 }, vec![Vec3::X], vec![Vec3::X]);
    m.tangents = Some(vec![Vec4::new(0.0, 1.0, 0.0, 1.0)]);
    m.morph_targets = vec![MorphTarget {
        name: None,
        positions: vec![Vec3::new(0.0, 2.0, 0.0)],
        normals: Some(vec![Vec3::new(-1.0, 1.0, 0.0)]),
        tangents: Some(vec![Vec3::new(1.0, 0.0, 0.0)]),
    }];
    let rig = Rig {
        name: "rigid morph".into(),
        nodes: vec![node("head", None, rest)],
        meshes: vec![m],
        ..Rig::default()
    };
    let set = VertexSet::from_rig(&rig).unwrap();
    assert_eq!(set.positions[0], Vec3::new(2.0, 0.0, 2.0));
    let mut pose = rest_pose(&rig);
    pose.morph_weights[0] = vec![0.5];
    pose.locals[0].translation.y = 1.0;
    let frame = skin_pose(&rig, &set, &pose);
    // Mesh space: p = (1, 0, 0) + 0.5 (0, 2, 0) = (1, 1, 0) -> scale (2, 1, 0) -> + (0, 1, 2).
    assert_eq!(frame.positions[0], Vec3::new(2.0, 2.0, 2.0));
    // n = (1, 0, 0) + 0.5 (-1, 1, 0) = (0.5, 0.5, 0); inverse transpose diag(0.5, 1, 1) ->
    // (0.25, 0.5, 0) -> (1, 2, 0) / sqrt 5. Exact binary inputs; normalisation rounds.
    assert_vec_near(frame.normals[0], Vec3::new(1.0, 2.0, 0.0).normalize(), 2.0 * f32::EPSILON, "normal");
    // t = (0, 1, 0) + 0.5 (1, 0, 0) = (0.5, 1, 0) -> scale -> (1, 1, 0), then made orthogonal to
    // n: (1, 1, 0) - n (n . (1, 1, 0)) = (1, 1, 0) - (1, 2, 0) 3/5 = (0.4, -0.2, 0) -> (2, -1, 0) / sqrt 5.
    let t = frame.tangents.unwrap()[0];
    assert_vec_near(t.truncate(), Vec3::new(2.0, -1.0, 0.0).normalize(), 4.0 * f32::EPSILON, "tangent");
    assert_eq!(t.w, 1.0);
}

/// A rig with two chained joints, non-uniform scale, a morph target, 8 influences and a
/// two-clip animation, for the determinism, tangent and remap tests.
fn animated_rig() -> Rig {
    let count = 64;
    let positions: Vec<Vec3> = (0..count)
        .map(|i| Vec3::new((i % 4) as f32 * 0.1, (i / 4) as f32 * 0.13, ((i * 7) % 5) as f32 * 0.05))
        .collect();
    let normals: Vec<Vec3> =
        (0..count).map(|i| Vec3::new(1.0, (i % 3) as f32 - 1.0, 0.5 * (i % 2) as f32).normalize()).collect();
    let tangents: Vec<Vec4> = normals.iter().map(|n| n.any_orthonormal_vector().extend(1.0)).collect();
    let mut m = mesh("body", MeshBinding::Skinned { skin: 0 }, positions, normals);
    m.tangents = Some(tangents);
    m.indices = (0..count as u32 - 2).flat_map(|i| [i, i + 1, i + 2]).collect();
    m.joints = (0..count).map(|i| [0, 1, 2, 0, 1, 2, 0, (i % 3) as u16]).collect();
    m.weights = (0..count).map(|i| [0.3, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.01 * (i % 7) as f32]).collect();
    m.morph_targets = vec![MorphTarget {
        name: None,
        positions: (0..count).map(|i| Vec3::new(0.0, 0.01 * (i % 5) as f32, 0.0)).collect(),
        normals: Some(vec![Vec3::new(0.1, 0.0, 0.0); count]),
        tangents: Some(vec![Vec3::new(0.0, 0.0, 0.1); count]),
    }];
    m.default_morph_weights = vec![0.2];
    let prop = mesh("prop", MeshBinding::Rigid { node: 2 }, vec![Vec3::Z, Vec3::X], vec![Vec3::Y, Vec3::Z]);
    let lin = |target, times: &[f32], values: &[f32]| Channel {
        target,
        interpolation: KeyInterpolation::Linear,
        times: times.to_vec(),
        values: values.to_vec(),
    };
    let turn = |deg: f32| Quat::from_rotation_x(deg.to_radians()).to_array();
    let clip = |name: &str, scale: f32| AnimationClip {
        name: name.into(),
        channels: vec![
            lin(ChannelTarget::Rotation(1), &[0.0, 1.0], &[turn(0.0), turn(170.0 * scale)].concat()),
            lin(ChannelTarget::Scale(2), &[0.0, 1.0], &[1.0, 1.0, 1.0, 1.5, 0.5 * scale, 1.0]),
            lin(ChannelTarget::Translation(0), &[0.0, 1.0], &[0.0, 0.0, 0.0, 0.3, 0.1, scale]),
            lin(ChannelTarget::MorphWeights(0), &[0.0, 1.0], &[0.0, scale]),
        ],
        start: 0.0,
        end: 1.0,
        looping: Some(true),
        known_stride: None,
        locomotion: false,
    };
    Rig {
        name: "animated".into(),
        nodes: vec![
            node("hips", None, at(Vec3::new(0.0, 1.0, 0.0))),
            node("spine", Some(0), at(Vec3::new(0.0, 0.2, 0.0))),
            node(
                "chest",
                Some(1),
                Transform { scale: Vec3::new(1.2, 0.9, 1.0), ..at(Vec3::new(0.0, 0.3, 0.0)) },
            ),
        ],
        skins: vec![Skin {
            joints: vec![0, 1, 2],
            inverse_bind: vec![
                Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0)),
                Mat4::from_translation(Vec3::new(0.0, -1.2, 0.0)),
                Mat4::from_scale(Vec3::new(1.0 / 1.2, 1.0 / 0.9, 1.0))
                    * Mat4::from_translation(Vec3::new(0.0, -1.5, 0.0)),
            ],
        }],
        meshes: vec![m, prop],
        clips: vec![clip("bend", 1.0), clip("wave", -0.7)],
        ..Rig::default()
    }
}

fn samples() -> Vec<(usize, f32)> {
    (0..2).flat_map(|c| (0..24).map(move |k| (c, k as f32 / 23.0))).collect()
}

fn frame_bits(frames: &[SkinnedFrame]) -> Vec<u32> {
    let mut out = Vec::new();
    for f in frames {
        out.extend(f.positions.iter().chain(&f.normals).flat_map(|v| v.to_array().map(f32::to_bits)));
        out.extend(f.tangents.iter().flatten().flat_map(|v| v.to_array().map(f32::to_bits)));
    }
    out
}

#[test]
fn frames_are_bit_identical_on_one_thread_and_four() {
    let rig = animated_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| skin_clip_frames(&rig, &set, &samples(), true).unwrap())
    };
    let one = run(1);
    let four = run(4);
    assert_eq!(one.len(), 48);
    assert!(one[5].tangents.is_some());
    assert_eq!(frame_bits(&one), frame_bits(&four));
    // And the frames differ from each other, so the comparison sees the animation.
    assert_ne!(one[0].positions, one[5].positions);
}

#[test]
fn flat_output_matches_per_frame_output_bitwise() {
    let rig = animated_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    let samples = samples();
    let frames = skin_clip_frames(&rig, &set, &samples, true).unwrap();
    let len = samples.len() * set.vertex_count();
    let (mut p, mut n, mut t) = (vec![[0.0f32; 3]; len], vec![[0.0f32; 3]; len], vec![[0.0f32; 4]; len]);
    skin_frames_into(&rig, &set, &samples, &mut p, &mut n, Some(&mut t)).unwrap();
    let flat: Vec<SkinnedFrame> = (0..samples.len())
        .map(|f| {
            let r = f * set.vertex_count()..(f + 1) * set.vertex_count();
            SkinnedFrame {
                positions: p[r.clone()].iter().map(|&v| Vec3::from(v)).collect(),
                normals: n[r.clone()].iter().map(|&v| Vec3::from(v)).collect(),
                tangents: Some(t[r].iter().map(|&v| Vec4::from(v)).collect()),
            }
        })
        .collect();
    assert_eq!(frame_bits(&frames), frame_bits(&flat));
    // Wrong lengths and bad clips are typed errors.
    assert!(skin_frames_into(&rig, &set, &samples, &mut p[1..], &mut n, None).is_err());
    assert!(skin_frames_into(&rig, &set, &[(9, 0.0)], &mut p[..len / 48], &mut n[..len / 48], None).is_err());
}

#[test]
fn skinned_bounds_equal_the_extremes_of_the_skinned_frames() {
    let rig = animated_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    let (lo, hi) = skinned_bounds(&rig, &set, &samples()).unwrap();
    let mut want = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for f in skin_clip_frames(&rig, &set, &samples(), false).unwrap() {
        for p in f.positions {
            want = (want.0.min(p), want.1.max(p));
        }
    }
    assert_eq!(
        (lo.to_array().map(f32::to_bits), hi.to_array().map(f32::to_bits)),
        (want.0.to_array().map(f32::to_bits), want.1.to_array().map(f32::to_bits))
    );
    assert!(skinned_bounds(&rig, &set, &[]).is_err());
    assert!(skinned_bounds(&rig, &set, &[(2, 0.0)]).is_err());
}

/// `plan` with every shared matrix blended per vertex instead (the same weights, in order).
fn unshared(plan: &SkinPlan) -> SkinPlan {
    let groups = plan
        .groups
        .iter()
        .map(|g| match &g.matrix {
            GroupMatrix::Shared { joints, weights } => SkinGroup {
                matrix: GroupMatrix::PerVertex {
                    k: joints.len(),
                    joints: joints.repeat(g.vertices.len()),
                    weights: weights.repeat(g.vertices.len()),
                },
                ..g.clone()
            },
            _ => g.clone(),
        })
        .collect();
    SkinPlan { groups, vertex_count: plan.vertex_count }
}

#[test]
fn shared_matrices_skin_every_vertex_as_its_own_blend_does() {
    for rig in [animated_rig(), crate::procgen::humanoid()] {
        let set = VertexSet::from_rig(&rig).unwrap();
        let plan = SkinPlan::new(&set);
        let shared = plan.groups.iter().filter(|g| matches!(g.matrix, GroupMatrix::Shared { .. })).count();
        assert!(shared > 0, "the test needs vertices sharing a blend");
        // Every vertex is in exactly one group.
        let mut seen: Vec<u32> = plan.groups.iter().flat_map(|g| g.vertices.iter().copied()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..set.vertex_count() as u32).collect::<Vec<_>>());
        let per_vertex = unshared(&plan);
        let clips = rig.clips.len();
        for (clip, time) in [(0, 0.1), (clips - 1, 0.3)] {
            let pose = FramePose::sample(&rig, &set, clip, rig.clips[clip].start + time);
            let with_tangents = set.tangents.is_some();
            let a = skin_frame(&set, &plan, &pose.bones, &pose.morph_weights, with_tangents);
            let b = skin_frame(&set, &per_vertex, &pose.bones, &pose.morph_weights, with_tangents);
            assert_eq!(frame_bits(&[a]), frame_bits(&[b]), "{} clip {clip}", rig.name);
        }
    }
}

#[test]
fn tangents_are_unit_and_orthogonal_to_normals() {
    let rig = animated_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    // After Gram-Schmidt in f32 the residual dot product and the length error are a few
    // roundings (2^-24 each) of unit quantities: the subtraction, the dot and the normalisation.
    let bound = 8.0 * f32::EPSILON;
    for frame in skin_clip_frames(&rig, &set, &samples(), true).unwrap() {
        for (n, t) in frame.normals.iter().zip(frame.tangents.unwrap()) {
            assert!(n.dot(t.truncate()).abs() <= bound, "{n} . {t}");
            assert!((t.truncate().length() - 1.0).abs() <= bound && (n.length() - 1.0).abs() <= bound);
            assert_eq!(t.w, 1.0);
        }
    }
}

#[test]
fn remap_permutes_every_result_bit_for_bit() {
    let rig = animated_rig();
    let set = VertexSet::from_rig(&rig).unwrap();
    let n = set.vertex_count();
    // A scramble: 37 is coprime with 66 vertices.
    assert_eq!(n, 66);
    let order: Vec<u32> = (0..n).map(|i| ((i * 37 + 5) % n) as u32).collect();
    let mut remapped = set.clone();
    remapped.remap(&order).unwrap();
    let before = skin_clip_frames(&rig, &set, &samples(), true).unwrap();
    let after = skin_clip_frames(&rig, &remapped, &samples(), true).unwrap();
    for (b, a) in before.iter().zip(&after) {
        let permuted = SkinnedFrame {
            positions: order.iter().map(|&o| b.positions[o as usize]).collect(),
            normals: order.iter().map(|&o| b.normals[o as usize]).collect(),
            tangents: b.tangents.as_ref().map(|t| order.iter().map(|&o| t[o as usize]).collect()),
        };
        assert_eq!(frame_bits(&[permuted]), frame_bits(std::slice::from_ref(a)));
    }
    // Triangles still join the same source vertices.
    for (old, new) in set.indices.iter().zip(&remapped.indices) {
        assert_eq!(set.sources[*old as usize], remapped.sources[*new as usize]);
    }
    assert_eq!(remapped.mesh_vertices(1).count(), 2);
    assert!(remapped.clone().remap(&order[1..]).is_err());
    let mut twice = order.clone();
    twice[1] = twice[0];
    assert!(remapped.remap(&twice).is_err());
}
