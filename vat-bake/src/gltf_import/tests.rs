//! Import tests: the six Khronos samples, fixtures built here, and bad input.

use std::path::PathBuf;

use glam::{Mat4, Quat, Vec3};
use serde_json::json;

use super::fixture::{FLOAT, Fixture, SHORT, UNSIGNED_BYTE, UNSIGNED_SHORT, temp_dir};
use super::{ImportOptions, import_file, import_slice, import_slice_with};
use crate::BakeError;
use crate::rig::{ChannelTarget, KeyInterpolation, MeshBinding, MeshRole, Rig};

/// A Khronos sample file of the shared real-file corpus (`../shared/testdata/gltf/`); `None` when
/// the corpus is missing (the test then returns early: skipped, and said; with `CI=true` it fails).
fn sample(relative: &str) -> Option<PathBuf> {
    crate::testdata::shared_file(&format!("gltf/{relative}"))
}

fn import_sample(relative: &str) -> Option<Rig> {
    let path = sample(relative)?;
    Some(import_file(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{relative}: {e}")))
}

fn import(f: &Fixture) -> crate::Result<Rig> {
    import_slice(&f.gltf(), None, "fixture.gltf")
}

/// The error of a failed import, checked to be a `Gltf` error naming the file; returns its message.
#[track_caller]
fn gltf_error(result: crate::Result<Rig>, file: &str) -> String {
    match result {
        Ok(_) => panic!("expected an error for {file}"),
        Err(e @ BakeError::Gltf { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with(file), "message does not name the file {file}: {message}");
            message
        }
        Err(e) => panic!("expected BakeError::Gltf, got {e:?}"),
    }
}

#[track_caller]
fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message:?} does not contain {part:?}");
    }
}

/// The f32 at byte `at` of `bytes`.
fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

/// Renormalised weights sum to 1 within 8 ulp: each of the 8 divisions rounds once (<= 0.5 ulp) and
/// the 7 additions once each (<= 0.5 ulp of a sum <= 1), so 8 ulp of 1.0 bounds the sum's error.
const WEIGHT_SUM_TOLERANCE: f32 = 8.0 * f32::EPSILON;

fn check_weights_sum_to_one(rig: &Rig) {
    for mesh in &rig.meshes {
        for (v, w) in mesh.weights.iter().enumerate() {
            let sum: f32 = w.iter().sum();
            assert!(
                (sum - 1.0).abs() <= WEIGHT_SUM_TOLERANCE,
                "{} vertex {v}: weights sum to {sum}",
                mesh.name
            );
        }
    }
}

/// Parents come before children.
fn check_node_order(rig: &Rig) {
    for (i, node) in rig.nodes.iter().enumerate() {
        if let Some(p) = node.parent {
            assert!(p < i, "node {i} has parent {p}");
        }
    }
}

fn node_index(rig: &Rig, name: &str) -> usize {
    rig.nodes.iter().position(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"))
}

// ---------------------------------------------------------------------------------------------------
// The six Khronos samples. Expected figures are read off each file's JSON (accessor counts, min/max).

#[test]
fn rigged_simple_glb() {
    let Some(rig) = import_sample("RiggedSimple/RiggedSimple.glb") else { return };
    assert_eq!(rig.name, "RiggedSimple");
    check_node_order(&rig);
    // Z_UP -> Armature -> {Bone -> Bone.001, Cylinder}: the non-joint ancestors stay nodes.
    assert_eq!(rig.nodes.len(), 5);
    assert_eq!(rig.skins.len(), 1);
    let skin = &rig.skins[0];
    assert_eq!(skin.joints, vec![node_index(&rig, "Bone"), node_index(&rig, "Bone.001")]);
    assert_eq!(rig.nodes[skin.joints[0]].parent, Some(node_index(&rig, "Armature")));
    assert_eq!(rig.nodes[node_index(&rig, "Armature")].parent, Some(node_index(&rig, "Z_UP")));
    // Inverse bind matrix 0 per the accessor's max: translation column (0, 1.3597e-7, 4.18033, 1).
    assert_eq!(skin.inverse_bind[0].w_axis.z, 4.180_329_799_652_1_f64 as f32);
    assert_eq!(rig.meshes.len(), 1);
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.name, "Cylinder");
    assert_eq!(mesh.binding, MeshBinding::Skinned { skin: 0 });
    assert_eq!(mesh.vertex_count(), 160);
    assert_eq!(mesh.indices.len(), 564);
    assert_eq!(mesh.influence_count, 4);
    check_weights_sum_to_one(&rig);
    assert_eq!(rig.clips.len(), 1);
    let clip = &rig.clips[0];
    assert_eq!(clip.name, "animation0");
    assert_eq!(clip.channels.len(), 3);
    // Times accessor 5: min 0.04166661947965622, max 2.0833330154418945 (f32 in the file).
    assert_eq!(clip.start, 0.041_666_62_f32);
    assert_eq!(clip.end, 2.083_333_f32);
    for channel in &clip.channels {
        assert_eq!(channel.times.len(), 50);
        assert_eq!(channel.interpolation, KeyInterpolation::Linear);
    }
    assert!(clip.looping.is_none() && !clip.locomotion && clip.known_stride.is_none());
}

#[test]
fn simple_skin_embedded() {
    let Some(rig) = import_sample("SimpleSkin/SimpleSkin.gltf") else { return };
    assert_eq!(rig.nodes.len(), 3);
    assert_eq!(rig.skins.len(), 1);
    assert_eq!(rig.skins[0].joints, vec![1, 2]);
    // Both inverse bind matrices are a translation by (-0.5, -1, 0) (accessor 4's min == max).
    for ibm in &rig.skins[0].inverse_bind {
        assert_eq!(*ibm, Mat4::from_translation(Vec3::new(-0.5, -1.0, 0.0)));
    }
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.binding, MeshBinding::Skinned { skin: 0 });
    // 10 vertices, 24 indices, no normals: unwelded to one vertex per index with flat normals. The
    // mesh lies in z = 0, so every face normal is exactly +Z or -Z.
    assert_eq!(mesh.vertex_count(), 24);
    assert_eq!(mesh.indices, (0..24).collect::<Vec<u32>>());
    assert!(mesh.normals.iter().all(|n| *n == Vec3::Z || *n == Vec3::NEG_Z), "{:?}", mesh.normals);
    check_weights_sum_to_one(&rig);
    let clip = &rig.clips[0];
    assert_eq!((clip.start, clip.end), (0.0, 5.5));
    assert_eq!(clip.channels.len(), 1);
    assert_eq!(clip.channels[0].target, ChannelTarget::Rotation(2));
    assert_eq!(clip.channels[0].times.len(), 12);
    assert_eq!(clip.channels[0].values.len(), 48);
}

#[test]
fn animated_morph_cube_external_bin() {
    let Some(rig) = import_sample("AnimatedMorphCube/AnimatedMorphCube.gltf") else { return };
    assert!(rig.skins.is_empty());
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.binding, MeshBinding::Rigid { node: 0 });
    assert_eq!(mesh.vertex_count(), 24);
    assert_eq!(mesh.indices.len(), 36);
    assert!(mesh.tangents.is_some());
    assert_eq!(mesh.material_ids, vec![0; 24]);
    assert_eq!(mesh.morph_targets.len(), 2);
    assert_eq!(mesh.default_morph_weights, vec![0.0, 0.0]);
    for target in &mesh.morph_targets {
        assert!(target.name.is_none() && target.normals.is_some() && target.tangents.is_some());
    }
    // Target 1 POSITION (accessor 7): max y 0.0198908355, min 0.
    let max_y = mesh.morph_targets[1].positions.iter().map(|d| d.y).fold(f32::MIN, f32::max);
    assert_eq!(max_y, 0.019_890_835_5_f64 as f32);
    assert_eq!(rig.nodes[0].rest.scale, Vec3::splat(100.0));
    let clip = &rig.clips[0];
    assert_eq!(clip.name, "Square");
    assert_eq!((clip.start, clip.end), (0.0, 4.199_997_4_f32));
    assert_eq!(clip.channels.len(), 1);
    assert_eq!(clip.channels[0].target, ChannelTarget::MorphWeights(0));
    assert_eq!(clip.channels[0].values.len(), 127 * 2);
}

#[test]
fn simple_morph_two_external_bins() {
    let Some(rig) = import_sample("SimpleMorph/SimpleMorph.gltf") else { return };
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.vertex_count(), 3);
    assert_eq!(mesh.positions, vec![Vec3::ZERO, Vec3::X, Vec3::new(0.5, 0.5, 0.0)]);
    assert_eq!(mesh.default_morph_weights, vec![0.5, 0.5]);
    // Target deltas from the .bin: accessors 2 and 3 at bytes 8 + 36 and 8 + 72 (view 1 starts at 8).
    let bin = std::fs::read(sample("SimpleMorph/simpleMorphGeometry.bin").unwrap()).unwrap();
    for t in 0..2 {
        let at = |v: usize, k: usize| f32_at(&bin, 8 + 36 * (t + 1) + 12 * v + 4 * k);
        let expected: Vec<Vec3> = (0..3).map(|v| Vec3::new(at(v, 0), at(v, 1), at(v, 2))).collect();
        assert_eq!(mesh.morph_targets[t].positions, expected);
    }
    assert_eq!(mesh.morph_targets[0].positions[2], Vec3::new(-1.0, 1.0, 0.0));
    let clip = &rig.clips[0];
    assert_eq!((clip.start, clip.end), (0.0, 4.0));
    assert_eq!(clip.channels[0].values.len(), 10);
}

#[test]
fn simple_sparse_accessor_values_applied() {
    let Some(rig) = import_sample("SimpleSparseAccessor/SimpleSparseAccessor.gltf") else { return };
    assert!(rig.clips.is_empty(), "no animation imports with no clips");
    // Expected positions straight from the .bin: base VEC3s at byte 72 (14 of them), sparse indices
    // (3 u16) at 240, sparse values (3 VEC3) at 248, triangle indices (36 u16) at 0. No normals, so the
    // mesh is unwelded: vertex i is position[index i].
    let bin = std::fs::read(sample("SimpleSparseAccessor/SimpleSparseAccessor.bin").unwrap()).unwrap();
    let mut base: Vec<Vec3> = (0..14)
        .map(|v| Vec3::new(f32_at(&bin, 72 + 12 * v), f32_at(&bin, 76 + 12 * v), f32_at(&bin, 80 + 12 * v)))
        .collect();
    let unpatched = base.clone();
    for k in 0..3 {
        let index = u16_at(&bin, 240 + 2 * k) as usize;
        base[index] =
            Vec3::new(f32_at(&bin, 248 + 12 * k), f32_at(&bin, 252 + 12 * k), f32_at(&bin, 256 + 12 * k));
    }
    assert_ne!(base, unpatched, "the sparse values must change something for this test to mean anything");
    let expected: Vec<Vec3> = (0..36).map(|i| base[u16_at(&bin, 2 * i) as usize]).collect();
    assert_eq!(rig.meshes[0].positions, expected);
}

#[test]
fn box_animated_rigid_nodes() {
    let Some(rig) = import_sample("BoxAnimated/BoxAnimated.glb") else { return };
    check_node_order(&rig);
    // Scene roots [3, 0]: glTF node 3 (outer box) becomes rig node 0, nodes 0, 1, 2 become 1, 2, 3.
    assert_eq!(rig.nodes.len(), 4);
    assert_eq!(rig.meshes.len(), 2);
    let outer = &rig.meshes[0];
    let inner = &rig.meshes[1];
    assert_eq!((outer.name.as_str(), outer.vertex_count(), outer.indices.len()), ("outer_box", 224, 576));
    assert_eq!((inner.name.as_str(), inner.vertex_count(), inner.indices.len()), ("inner_box", 96, 186));
    assert_eq!(outer.binding, MeshBinding::Rigid { node: 0 });
    assert_eq!(inner.binding, MeshBinding::Rigid { node: 3 });
    assert_eq!(outer.influence_count, 0);
    assert!(outer.joints.is_empty() && outer.weights.is_empty());
    // Material indices 1 (outer) and 0 (inner).
    assert_eq!((outer.material_ids[0], inner.material_ids[0]), (1, 0));
    let clip = &rig.clips[0];
    assert_eq!((clip.start, clip.end), (0.0, 3.708_33_f32));
    let targets: Vec<ChannelTarget> = clip.channels.iter().map(|c| c.target).collect();
    assert_eq!(targets, vec![ChannelTarget::Rotation(3), ChannelTarget::Translation(1)]);
}

// ---------------------------------------------------------------------------------------------------
// Fixtures.

/// 6 vertices in a 1 x 2 strip (rows at y = 0, 1, 2), 4 triangles.
const STRIP: [[f32; 3]; 6] =
    [[0., 0., 0.], [1., 0., 0.], [0., 1., 0.], [1., 1., 0.], [0., 2., 0.], [1., 2., 0.]];
const STRIP_INDICES: [u16; 12] = [0, 1, 2, 2, 1, 3, 2, 3, 4, 4, 3, 5];

/// A skeleton: "Armature" (non-joint scene root, at x = 1) -> "Root" joint -> "Tip" joint (y = 1),
/// and skin 0 over [Root, Tip]. Returns (fixture, armature, root, tip).
fn skeleton() -> (Fixture, usize, usize, usize) {
    let mut f = Fixture::new();
    let armature = f.node(json!({ "name": "Armature", "translation": [1.0, 0.0, 0.0] }), true);
    let root = f.node(json!({ "name": "Root" }), false);
    let tip = f.node(json!({ "name": "Tip", "translation": [0.0, 1.0, 0.0] }), false);
    f.child(armature, root);
    f.child(root, tip);
    let ibm: Vec<f32> = [Mat4::IDENTITY, Mat4::from_translation(Vec3::NEG_Y)]
        .iter()
        .flat_map(|m| m.to_cols_array())
        .collect();
    let ibm = f.f32s(&ibm, "MAT4");
    f.push("skins", json!({ "joints": [root, tip], "inverseBindMatrices": ibm }));
    (f, armature, root, tip)
}

/// A skinned strip mesh with per-vertex JOINTS_0 (u16) / WEIGHTS_0 (f32) on a scene-root node with skin
/// 0. Returns the mesh index.
fn skinned_strip(f: &mut Fixture, name: &str, joints: &[[u16; 4]; 6], weights: &[[f32; 4]; 6]) -> usize {
    let position = f.positions(&STRIP);
    let indices = f.u16s(&STRIP_INDICES, "SCALAR");
    let joints = f.u16s(joints.as_flattened(), "VEC4");
    let weights = f.f32s(weights.as_flattened(), "VEC4");
    let mesh = f.push(
        "meshes",
        json!({ "name": name, "primitives": [{
            "attributes": { "POSITION": position, "JOINTS_0": joints, "WEIGHTS_0": weights },
            "indices": indices,
        }]}),
    );
    f.node(json!({ "name": name, "mesh": mesh, "skin": 0 }), true);
    mesh
}

/// Rows 0, 1, 2 weighted to Root, half/half, Tip.
const STRIP_JOINTS: [[u16; 4]; 6] = [[0, 1, 0, 0]; 6];
const STRIP_WEIGHTS: [[f32; 4]; 6] = [
    [1., 0., 0., 0.],
    [1., 0., 0., 0.],
    [0.5, 0.5, 0., 0.],
    [0.5, 0.5, 0., 0.],
    [0., 1., 0., 0.],
    [0., 1., 0., 0.],
];

/// A rigid (unskinned) strip mesh on a new node; returns (mesh, node).
fn rigid_strip(f: &mut Fixture, name: &str, root: bool) -> (usize, usize) {
    let position = f.positions(&STRIP);
    let indices = f.u16s(&STRIP_INDICES, "SCALAR");
    let mesh = f.push(
        "meshes",
        json!({ "name": name, "primitives": [{ "attributes": { "POSITION": position }, "indices": indices }] }),
    );
    let node = f.node(json!({ "name": name, "mesh": mesh }), root);
    (mesh, node)
}

#[test]
fn skinned_strip_maps_joints_and_non_joint_ancestors() {
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let rig = import(&f).unwrap();
    check_node_order(&rig);
    let (armature, root, tip) =
        (node_index(&rig, "Armature"), node_index(&rig, "Root"), node_index(&rig, "Tip"));
    assert_eq!(rig.skins[0].joints, vec![root, tip]);
    assert_eq!(rig.nodes[root].parent, Some(armature));
    assert_eq!(rig.nodes[armature].rest.translation, Vec3::X);
    assert_eq!(rig.skins[0].inverse_bind[1], Mat4::from_translation(Vec3::NEG_Y));
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.binding, MeshBinding::Skinned { skin: 0 });
    assert_eq!(mesh.role, MeshRole::Body);
    assert_eq!(mesh.influence_count, 4);
    assert_eq!(mesh.weights[2][..2], [0.5, 0.5]);
    // No normals: unwelded, 12 vertices in triangle order, face normals of the z = 0 strip are +Z
    // (counter-clockwise).
    assert_eq!(mesh.vertex_count(), 12);
    assert_eq!(mesh.indices, (0..12).collect::<Vec<u32>>());
    assert_eq!(mesh.positions[3], Vec3::from(STRIP[STRIP_INDICES[3] as usize]));
    assert_eq!(
        mesh.weights[5],
        STRIP_WEIGHTS[STRIP_INDICES[5] as usize].iter().chain(&[0.0; 4]).copied().collect::<Vec<_>>()[..]
    );
    assert!(mesh.normals.iter().all(|n| *n == Vec3::Z));
    assert_eq!(mesh.joints.len(), 12);
    assert!(rig.clips.is_empty());
}

#[test]
fn eight_influences_renormalised() {
    let (mut f, ..) = skeleton();
    let position = f.positions(&STRIP);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(6), "VEC3");
    // Two sets of four; the eight weights of each vertex sum to 2 and must come out halved (exact in
    // binary floating point).
    let joints0 = f.u16s(&[0, 1, 0, 1].repeat(6), "VEC4");
    let joints1 = f.u8s(&[1, 0, 1, 0].repeat(6), "VEC4");
    let weights0 = f.f32s(&[0.5, 0.25, 0.25, 0.125].repeat(6), "VEC4");
    let weights1 = f.f32s(&[0.5, 0.25, 0.125, 0.0].repeat(6), "VEC4");
    f.push(
        "meshes",
        json!({ "primitives": [{ "attributes": {
            "POSITION": position, "NORMAL": normal,
            "JOINTS_0": joints0, "WEIGHTS_0": weights0, "JOINTS_1": joints1, "WEIGHTS_1": weights1,
        }}]}),
    );
    f.node(json!({ "mesh": 0, "skin": 0 }), true);
    let rig = import(&f).unwrap();
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.influence_count, 8);
    assert_eq!(mesh.vertex_count(), 6, "normals present: no unwelding");
    // No indices: 0..n.
    assert_eq!(mesh.indices, (0..6).collect::<Vec<u32>>());
    for v in 0..6 {
        assert_eq!(mesh.joints[v], [0, 1, 0, 1, 1, 0, 1, 0]);
        assert_eq!(mesh.weights[v], [0.25, 0.125, 0.125, 0.0625, 0.25, 0.125, 0.0625, 0.0]);
    }
    check_weights_sum_to_one(&rig);
}

#[test]
fn byte_strided_and_normalised_accessors() {
    let (mut f, ..) = skeleton();
    // POSITION and NORMAL interleaved in one view: stride 24, NORMAL at byte offset 12.
    let mut interleaved = Vec::new();
    for p in STRIP {
        for x in p.iter().chain(&[0.0, 0.0, 2.0]) {
            interleaved.extend_from_slice(&f32::to_le_bytes(*x));
        }
    }
    let view = f.view(&interleaved, Some(24));
    let position = f.accessor(view, 0, FLOAT, 6, "VEC3");
    f.json["accessors"][position]["min"] = json!([0.0, 0.0, 0.0]);
    f.json["accessors"][position]["max"] = json!([1.0, 2.0, 0.0]);
    let normal = f.accessor(view, 12, FLOAT, 6, "VEC3");
    // Weights as normalised unsigned shorts: 65535 -> 1, 21845 -> 1/3, 43690 -> 2/3.
    let weights = f.u16s(&[[65535, 0, 0, 0], [21845, 43690, 0, 0]].repeat(3).concat(), "VEC4");
    f.json["accessors"][weights]["normalized"] = json!(true);
    let joints = f.u8s(&[0, 1, 0, 0].repeat(6), "VEC4");
    let uv = f.u8s(&[0, 255].repeat(6), "VEC2");
    f.json["accessors"][uv]["normalized"] = json!(true);
    f.push(
        "meshes",
        json!({ "primitives": [{ "attributes": {
            "POSITION": position, "NORMAL": normal, "JOINTS_0": joints, "WEIGHTS_0": weights, "TEXCOORD_0": uv,
        }}]}),
    );
    f.node(json!({ "mesh": 0, "skin": 0 }), true);
    let rig = import(&f).unwrap();
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.positions, STRIP.map(Vec3::from).to_vec());
    // (0, 0, 2) is 2 long: normalised to +Z.
    assert_eq!(mesh.normals, vec![Vec3::Z; 6]);
    assert_eq!(mesh.uvs.as_ref().unwrap()[0], glam::Vec2::new(0.0, 1.0));
    assert_eq!(mesh.weights[0][..2], [1.0, 0.0]);
    // u16 -> f32 normalisation, the sum and the division each round once (<= 0.5 ulp relative), so the
    // result is within 2 ulp of 1/3 and 2/3.
    let w = mesh.weights[1];
    assert!((w[0] - 1.0 / 3.0).abs() <= 2.0 * f32::EPSILON / 3.0, "{w:?}");
    assert!((w[1] - 2.0 / 3.0).abs() <= 2.0 * f32::EPSILON * 2.0 / 3.0, "{w:?}");
    check_weights_sum_to_one(&rig);
}

#[test]
fn sparse_accessors_with_and_without_base_view() {
    let mut f = Fixture::new();
    // POSITION: base strip, vertices 1 and 4 replaced via sparse (u8 indices).
    let position = f.positions(&STRIP);
    let sparse_indices = f.view(&[1, 4], None);
    let values: Vec<u8> = [5.0f32, 6.0, 7.0, 8.0, 9.0, 10.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let sparse_values = f.view(&values, None);
    f.json["accessors"][position]["sparse"] = json!({
        "count": 2,
        "indices": { "bufferView": sparse_indices, "componentType": UNSIGNED_BYTE },
        "values": { "bufferView": sparse_values },
    });
    // A morph target's POSITION with no bufferView: zeros, then vertex 3 set by sparse (u16 index).
    let target_indices = f.view(&3u16.to_le_bytes(), None);
    let target_values: Vec<u8> = [0.0f32, 0.5, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let target_values = f.view(&target_values, None);
    let target = f.push(
        "accessors",
        json!({ "componentType": FLOAT, "count": 6, "type": "VEC3", "sparse": {
            "count": 1,
            "indices": { "bufferView": target_indices, "componentType": UNSIGNED_SHORT },
            "values": { "bufferView": target_values },
        }}),
    );
    let indices = f.u16s(&STRIP_INDICES, "SCALAR");
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(6), "VEC3");
    f.push(
        "meshes",
        json!({ "primitives": [{ "attributes": { "POSITION": position, "NORMAL": normal }, "indices": indices,
            "targets": [{ "POSITION": target }] }]}),
    );
    f.node(json!({ "mesh": 0 }), true);
    let rig = import(&f).unwrap();
    let mesh = &rig.meshes[0];
    let mut expected = STRIP.map(Vec3::from).to_vec();
    expected[1] = Vec3::new(5.0, 6.0, 7.0);
    expected[4] = Vec3::new(8.0, 9.0, 10.0);
    assert_eq!(mesh.positions, expected);
    let mut deltas = vec![Vec3::ZERO; 6];
    deltas[3] = Vec3::new(0.0, 0.5, 0.0);
    assert_eq!(mesh.morph_targets[0].positions, deltas);
    assert!(mesh.morph_targets[0].normals.is_none());
}

/// Two morph targets on a rigid or skinned strip, with `mesh.weights` and `extras`.
fn morph_fixture(skinned: bool, extras: serde_json::Value) -> Fixture {
    let (mut f, ..) = skeleton();
    let mesh = if skinned {
        skinned_strip(&mut f, "Face", &STRIP_JOINTS, &STRIP_WEIGHTS)
    } else {
        rigid_strip(&mut f, "Face", true).0
    };
    let up: Vec<f32> = [0.0, 0.1, 0.0].repeat(6);
    let out: Vec<f32> = [0.0, 0.0, 0.2].repeat(6);
    let t0 = f.f32s(&up, "VEC3");
    let t1 = f.f32s(&out, "VEC3");
    let t1n = f.f32s(&[0.0, 0.0, 0.0].repeat(6), "VEC3");
    f.json["meshes"][mesh]["primitives"][0]["targets"] =
        json!([{ "POSITION": t0 }, { "POSITION": t1, "NORMAL": t1n }]);
    f.json["meshes"][mesh]["weights"] = json!([0.25, 0.75]);
    f.json["meshes"][mesh]["extras"] = extras;
    f
}

#[test]
fn morph_targets_with_and_without_skin() {
    for skinned in [false, true] {
        let f = morph_fixture(skinned, json!({ "targetNames": ["smile", "puff"] }));
        let rig = import(&f).unwrap();
        let mesh = &rig.meshes[0];
        assert_eq!(matches!(mesh.binding, MeshBinding::Skinned { .. }), skinned);
        assert_eq!(mesh.default_morph_weights, vec![0.25, 0.75]);
        assert_eq!(mesh.morph_targets.len(), 2);
        // Unwelded with the mesh (no normals): 12 deltas, all (0, 0.1, 0) for target 0.
        assert_eq!(mesh.morph_targets[0].positions, vec![Vec3::new(0.0, 0.1, 0.0); 12]);
        assert!(mesh.morph_targets[0].normals.is_none());
        assert_eq!(mesh.morph_targets[1].normals.as_ref().map(Vec::len), Some(12));
        let names: Vec<Option<&str>> = mesh.morph_targets.iter().map(|t| t.name.as_deref()).collect();
        assert_eq!(names, vec![Some("smile"), Some("puff")]);
    }
}

#[test]
fn target_names_used_only_when_one_string_per_target() {
    for (extras, valid) in [
        (json!({ "targetNames": ["a", "b"] }), true),
        (json!({ "targetNames": ["a"] }), false),
        (json!({ "targetNames": ["a", "b", "c"] }), false),
        (json!({ "targetNames": ["a", 7] }), false),
        (json!({ "targetNames": "a,b" }), false),
        (json!(["a", "b"]), false),
    ] {
        let rig = import(&morph_fixture(false, extras.clone())).unwrap();
        let names: Vec<Option<String>> = rig.meshes[0].morph_targets.iter().map(|t| t.name.clone()).collect();
        let expected =
            if valid { vec![Some("a".to_owned()), Some("b".to_owned())] } else { vec![None, None] };
        assert_eq!(names, expected, "extras {extras}");
    }
}

#[test]
fn morph_weights_channel_targets_every_primitive() {
    let mut f = Fixture::new();
    let (mesh, node) = rigid_strip(&mut f, "Face", true);
    let t0 = f.f32s(&[0.0, 0.1, 0.0].repeat(6), "VEC3");
    let prim = f.json["meshes"][mesh]["primitives"][0].clone();
    f.json["meshes"][mesh]["primitives"] = json!([prim.clone(), prim]);
    // Its own positions: primitives with one attribute set would be one rig mesh.
    let own = f.positions(&STRIP);
    f.json["meshes"][mesh]["primitives"][1]["attributes"]["POSITION"] = json!(own);
    for p in 0..2 {
        f.json["meshes"][mesh]["primitives"][p]["targets"] = json!([{ "POSITION": t0 }]);
    }
    // Node weights override mesh weights.
    f.json["meshes"][mesh]["weights"] = json!([0.5]);
    f.json["nodes"][node]["weights"] = json!([0.125]);
    let times = f.f32s(&[0.0, 1.0], "SCALAR");
    let weights = f.f32s(&[0.0, 1.0], "SCALAR");
    f.animation("blink", &[(node, "weights", times, weights, "LINEAR")]);
    let rig = import(&f).unwrap();
    assert_eq!(rig.meshes.len(), 2);
    assert_eq!(rig.meshes[0].default_morph_weights, vec![0.125]);
    let targets: Vec<ChannelTarget> = rig.clips[0].channels.iter().map(|c| c.target).collect();
    assert_eq!(targets, vec![ChannelTarget::MorphWeights(0), ChannelTarget::MorphWeights(1)]);
}

#[test]
fn rigid_node_animation_without_skin() {
    let mut f = Fixture::new();
    let (_, node) = rigid_strip(&mut f, "Crate", true);
    let times = f.f32s(&[0.0, 0.5, 1.0], "SCALAR");
    let translations = f.f32s(&[0., 0., 0., 1., 0., 0., 2., 0., 0.], "VEC3");
    let cubic_times = f.f32s(&[0.0, 1.0], "SCALAR");
    // CUBICSPLINE: per key in-tangent, value, out-tangent.
    let rotations = f
        .f32s(&[[0.0; 4], [0., 0., 0., 1.], [0.0; 4], [0.0; 4], [0., 1., 0., 0.], [0.0; 4]].concat(), "VEC4");
    // Rotations as normalised shorts: 32767 -> 1.
    let short_bytes: Vec<u8> =
        [32767i16, 32767, 32767, 0, 0, 0, 0, 32767].iter().flat_map(|x| x.to_le_bytes()).collect();
    let short_view = f.view(&short_bytes, None);
    let step_times = f.f32s(&[0.25], "SCALAR");
    let scales = f.f32s(&[2.0, 2.0, 2.0], "VEC3");
    let short_rotations = f.accessor(short_view, 0, SHORT, 2, "VEC4");
    f.json["accessors"][short_rotations]["normalized"] = json!(true);
    let short_times = f.f32s(&[0.0, 0.75], "SCALAR");
    f.animation(
        "spin",
        &[
            (node, "translation", times, translations, "LINEAR"),
            (node, "rotation", cubic_times, rotations, "CUBICSPLINE"),
            (node, "scale", step_times, scales, "STEP"),
        ],
    );
    f.animation("tilt", &[(node, "rotation", short_times, short_rotations, "STEP")]);
    f.animation("Idle", &[(node, "translation", times, translations, "LINEAR")]);
    f.animation("Idle", &[(node, "translation", times, translations, "LINEAR")]);
    let rig = import(&f).unwrap();
    assert_eq!(rig.meshes[0].binding, MeshBinding::Rigid { node: 0 });
    let clip = &rig.clips[0];
    assert_eq!(clip.name, "spin");
    assert_eq!((clip.start, clip.end), (0.0, 1.0));
    assert_eq!(clip.channels[0].values, vec![0., 0., 0., 1., 0., 0., 2., 0., 0.]);
    assert_eq!(clip.channels[1].interpolation, KeyInterpolation::CubicSpline);
    assert_eq!(clip.channels[1].values.len(), 24);
    assert_eq!(clip.channels[1].values[4..8], [0., 0., 0., 1.]);
    assert_eq!(clip.channels[2].interpolation, KeyInterpolation::Step);
    assert_eq!(clip.channels[2].target, ChannelTarget::Scale(0));
    let tilt = &rig.clips[1];
    assert_eq!(tilt.channels[0].values, vec![1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    // Names made unique.
    let names: Vec<&str> = rig.clips.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["spin", "tilt", "Idle", "Idle_2"]);
}

#[test]
fn unskinned_mesh_parented_to_a_joint_is_rigid_on_its_node() {
    let (mut f, _, _, tip) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let (_, prop) = rigid_strip(&mut f, "Sword", false);
    f.json["nodes"][prop]["translation"] = json!([0.0, 0.5, 0.0]);
    f.child(tip, prop);
    let rig = import(&f).unwrap();
    let (tip, sword) = (node_index(&rig, "Tip"), node_index(&rig, "Sword"));
    assert_eq!(rig.nodes[sword].parent, Some(tip));
    let prop = rig.meshes.iter().find(|m| m.name == "Sword").unwrap();
    assert_eq!(prop.binding, MeshBinding::Rigid { node: sword });
    assert_eq!(prop.role, MeshRole::Body);
    assert_eq!(prop.influence_count, 0);
    // Vertices stay local to their node.
    assert_eq!(prop.positions[0], Vec3::ZERO);
}

#[test]
fn two_meshes_on_one_skin() {
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    skinned_strip(&mut f, "Shirt", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let rig = import(&f).unwrap();
    assert_eq!(rig.meshes.len(), 2);
    assert!(rig.meshes.iter().all(|m| m.binding == MeshBinding::Skinned { skin: 0 }));
    assert_eq!(rig.body_vertex_count(), 24);
}

#[test]
fn skin_option_selects_one_skin_and_skips_the_others() {
    let (mut f, _, _, tip) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    // Skin 1: the Tip joint alone, used by "Hat".
    f.push("skins", json!({ "joints": [tip] }));
    skinned_strip(&mut f, "Hat", &[[0; 4]; 6], &[[1.0, 0.0, 0.0, 0.0]; 6]);
    let hat_node = f.json["nodes"].as_array().unwrap().len() - 1;
    f.json["nodes"][hat_node]["skin"] = json!(1);
    rigid_strip(&mut f, "Rock", true);

    let rig = import(&f).unwrap();
    let names: Vec<&str> = rig.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, vec!["Body", "Hat", "Rock"], "default: every skin used by a mesh");
    assert_eq!(rig.skins.len(), 2);
    assert_eq!(rig.skins[0].joints.len(), 2);
    assert_eq!(rig.meshes[1].binding, MeshBinding::Skinned { skin: 1 });
    assert!(rig.notes.is_empty(), "{:?}", rig.notes);

    let options = ImportOptions { skin: Some(1), ..ImportOptions::default() };
    let rig = import_slice_with(&f.gltf(), None, "fixture.gltf", &options).unwrap();
    let names: Vec<&str> = rig.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, vec!["Hat", "Rock"]);
    // The body, skinned by skin 0, is left out and said.
    assert_eq!(rig.notes.len(), 1, "{:?}", rig.notes);
    assert_contains(&rig.notes[0], &["\"Body\"", "left out", "skin 0"]);
    assert_eq!(rig.skins[0].joints, vec![node_index(&rig, "Tip")]);
    // IBMs absent: identity.
    assert_eq!(rig.skins[0].inverse_bind, vec![Mat4::IDENTITY]);

    let options = ImportOptions { skin: Some(5), ..ImportOptions::default() };
    let err = import_slice_with(&f.gltf(), None, "fixture.gltf", &options).unwrap_err();
    assert!(matches!(err, BakeError::InvalidOption { option: "--skin", .. }), "{err:?}");
}

#[test]
fn unused_skin_option_and_meshless_scene() {
    let (mut f, _, _, tip) = skeleton();
    f.push("skins", json!({ "joints": [tip] }));
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    skinned_strip(&mut f, "Hat", &[[0; 4]; 6], &[[1.0, 0.0, 0.0, 0.0]; 6]);
    let hat_node = f.json["nodes"].as_array().unwrap().len() - 1;
    f.json["nodes"][hat_node]["skin"] = json!(1);
    // Skin 0 is used; asking for a skin no mesh uses is an option error.
    f.push("skins", json!({ "joints": [tip] }));
    let err = import_slice_with(
        &f.gltf(),
        None,
        "fixture.gltf",
        &ImportOptions { skin: Some(2), ..ImportOptions::default() },
    )
    .unwrap_err();
    assert!(matches!(err, BakeError::InvalidOption { .. }), "{err:?}");
    // A scene with no mesh at all.
    let mut empty = Fixture::new();
    empty.node(json!({ "name": "Lonely" }), true);
    let message = gltf_error(import(&empty), "fixture.gltf");
    assert_contains(&message, &["scene", "no triangle mesh"]);
}

#[test]
fn clip_starting_at_0_04_spans_first_to_last_key() {
    let mut f = Fixture::new();
    let (_, node) = rigid_strip(&mut f, "Crate", true);
    let t0 = f.f32s(&[0.04, 0.5, 1.04], "SCALAR");
    let v0 = f.f32s(&[0., 0., 0., 1., 0., 0., 2., 0., 0.], "VEC3");
    let t1 = f.f32s(&[0.1, 0.9], "SCALAR");
    let v1 = f.f32s(&[1., 1., 1., 2., 2., 2.], "VEC3");
    f.animation("slide", &[(node, "translation", t0, v0, "LINEAR"), (node, "scale", t1, v1, "LINEAR")]);
    let clip = &import(&f).unwrap().clips[0];
    assert_eq!((clip.start, clip.end), (0.04, 1.04));
    assert_eq!(clip.duration(), 1.04 - 0.04);
}

#[test]
fn clip_flags_from_extras_and_names() {
    let mut f = Fixture::new();
    let (_, node) = rigid_strip(&mut f, "Crate", true);
    let t = f.f32s(&[0.0, 1.0], "SCALAR");
    let v = f.f32s(&[0., 0., 0., 1., 0., 0.], "VEC3");
    for name in ["Walk_Forward", "idle", "wave", "Sprint"] {
        f.animation(name, &[(node, "translation", t, v, "LINEAR")]);
    }
    f.json["animations"][2]["extras"] = json!({ "vat_looping": false });
    f.json["animations"][3]["extras"] = json!({ "vat_locomotion": true, "vat_stride": 3.3 });
    f.json["animations"][1]["extras"] = json!({ "vat_locomotion": false });
    let rig = import(&f).unwrap();
    let flags: Vec<(Option<bool>, bool, Option<f32>)> =
        rig.clips.iter().map(|c| (c.looping, c.locomotion, c.known_stride)).collect();
    assert_eq!(
        flags,
        vec![(None, true, None), (None, false, None), (Some(false), false, None), (None, true, Some(3.3))]
    );
    f.json["animations"][0]["extras"] = json!({ "vat_looping": "yes" });
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["animation \"Walk_Forward\"", "vat_looping"]);
}

#[test]
fn sockets_attachments_and_feet_from_extras() {
    let (mut f, _, root, tip) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let socket = f.node(
        json!({ "name": "HeadSocket", "translation": [0.0, 0.25, 0.0], "extras": { "vat_socket": "head" } }),
        false,
    );
    f.child(tip, socket);
    // A cap on a child of the socket node, 0.5 higher: its vertices move into socket space (+0.5 y).
    let (_, cap) = rigid_strip(&mut f, "Cap", false);
    f.json["nodes"][cap]["translation"] = json!([0.0, 0.5, 0.0]);
    f.json["nodes"][cap]["extras"] = json!({ "vat_attachment": "head" });
    f.child(socket, cap);
    f.json["nodes"][root]["extras"] = json!({ "vat_foot": "left" });
    f.json["nodes"][tip]["extras"] = json!({ "vat_foot": "right" });
    let rig = import(&f).unwrap();
    let (root, tip) = (node_index(&rig, "Root"), node_index(&rig, "Tip"));
    assert_eq!(rig.sockets.len(), 1);
    assert_eq!(rig.sockets[0].name, "head");
    assert_eq!(rig.sockets[0].node, tip);
    assert_eq!(rig.sockets[0].local, Mat4::from_translation(Vec3::new(0.0, 0.25, 0.0)));
    let cap_mesh = rig.meshes.iter().find(|m| m.name == "Cap").unwrap();
    assert_eq!(cap_mesh.role, MeshRole::Attachment { socket: 0 });
    assert_eq!(cap_mesh.binding, MeshBinding::Rigid { node: tip });
    // Unwelded (no normals): vertex 0 is strip vertex 0, vertex 11 strip vertex 5, both 0.5 higher.
    // Exact: small integers and halves through an inverse of a pure translation are exact in f32.
    assert_eq!(cap_mesh.positions[0], Vec3::new(0.0, 0.5, 0.0));
    assert_eq!(cap_mesh.positions[11], Vec3::new(1.0, 2.5, 0.0));
    assert_eq!(rig.feet, Some(crate::rig::Feet { left: root, right: tip }));

    // An attachment naming a socket that does not exist.
    f.json["nodes"][cap]["extras"] = json!({ "vat_attachment": "hand" });
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["node \"Cap\"", "hand"]);
}

#[test]
fn attachment_on_the_socket_node_keeps_its_vertices() {
    let (mut f, _, _, tip) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let (_, cap) = rigid_strip(&mut f, "Cap", false);
    f.json["nodes"][cap]["rotation"] = json!([0.0, 0.6, 0.0, 0.8]);
    f.json["nodes"][cap]["extras"] = json!({ "vat_socket": "head", "vat_attachment": "head" });
    f.child(tip, cap);
    let rig = import(&f).unwrap();
    let mesh = rig.meshes.iter().find(|m| m.name == "Cap").unwrap();
    // Unwelded (no normals) but not moved: the mesh is on the socket node itself.
    let expected: Vec<Vec3> = STRIP_INDICES.iter().map(|&i| Vec3::from(STRIP[i as usize])).collect();
    assert_eq!(mesh.positions, expected);
    assert_eq!(mesh.binding, MeshBinding::Rigid { node: node_index(&rig, "Tip") });
    assert_eq!(rig.sockets[0].local, Mat4::from_quat(Quat::from_xyzw(0.0, 0.6, 0.0, 0.8)));
}

#[test]
fn feet_found_by_name() {
    for (left, right) in
        [("LeftFoot", "RightFoot"), ("foot_l", "foot_r"), ("Ankle.L", "Ankle.R"), ("l_ankle", "r_ankle")]
    {
        let mut f = Fixture::new();
        let hips = f.node(json!({ "name": "Hips" }), true);
        let l = f.node(json!({ "name": left }), false);
        let r = f.node(json!({ "name": right }), false);
        let toe = f.node(json!({ "name": format!("{left}Toe") }), false);
        f.child(hips, l);
        f.child(hips, r);
        f.child(l, toe);
        f.push("skins", json!({ "joints": [hips, l, r, toe] }));
        skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
        let rig = import(&f).unwrap();
        let feet = rig.feet.unwrap_or_else(|| panic!("{left}/{right} not found"));
        assert_eq!((rig.nodes[feet.left].name.as_str(), rig.nodes[feet.right].name.as_str()), (left, right));
    }
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    assert_eq!(import(&f).unwrap().feet, None);
}

#[test]
fn strips_fans_and_matrices() {
    let mut f = Fixture::new();
    let (mesh, node) = rigid_strip(&mut f, "Strip", true);
    // The strip's 6 vertices as a TRIANGLE_STRIP in order 0..6, and the same as a fan.
    let order = f.u16s(&[0, 1, 2, 3, 4, 5], "SCALAR");
    f.json["meshes"][mesh]["primitives"][0]["indices"] = json!(order);
    f.json["meshes"][mesh]["primitives"][0]["mode"] = json!(5);
    let mut fan = f.json["meshes"][mesh]["primitives"][0].clone();
    // Its own positions: primitives with one attribute set would be one rig mesh.
    fan["attributes"]["POSITION"] = json!(f.positions(&STRIP));
    f.json["meshes"][mesh]["primitives"] = json!([f.json["meshes"][mesh]["primitives"][0].clone(), fan]);
    f.json["meshes"][mesh]["primitives"][1]["mode"] = json!(6);
    // A matrix: rotate 90 degrees about +Y, scale 2, translate (1, 2, 3).
    let m = Mat4::from_scale_rotation_translation(
        Vec3::splat(2.0),
        Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        Vec3::new(1.0, 2.0, 3.0),
    );
    f.json["nodes"][node]["matrix"] = json!(m.to_cols_array());
    let rig = import(&f).unwrap();
    // Strip triangles per spec: (0 1 2) (1 3 2) (2 3 4) (3 5 4); unwelded (no normals), so compare the
    // positions in triangle order.
    let strip: Vec<Vec3> =
        [0, 1, 2, 1, 3, 2, 2, 3, 4, 3, 5, 4].iter().map(|&i| Vec3::from(STRIP[i])).collect();
    assert_eq!(rig.meshes[0].positions, strip);
    assert!(rig.meshes[0].normals.iter().all(|n| *n == Vec3::Z), "strip winding kept counter-clockwise");
    // Fan triangles per spec: (1 2 0) (2 3 0) (3 4 0) (4 5 0).
    let fan: Vec<Vec3> = [1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 5, 0].iter().map(|&i| Vec3::from(STRIP[i])).collect();
    assert_eq!(rig.meshes[1].positions, fan);
    assert_eq!(rig.meshes[1].name, "Strip.1");
    let rest = rig.nodes[0].rest;
    // Decomposition error bound: glam recovers scale as column lengths and rotation from the normalised
    // columns; each is a few f32 roundings of values <= 2, so 8 ulp of 2 (or of 1 for the rotation) is ample.
    assert!((rest.scale - Vec3::splat(2.0)).abs().max_element() <= 16.0 * f32::EPSILON, "{rest:?}");
    assert_eq!(rest.translation, Vec3::new(1.0, 2.0, 3.0));
    assert!(
        rest.rotation.angle_between(Quat::from_rotation_y(std::f32::consts::FRAC_PI_2)) <= 1e-3,
        "{rest:?}"
    );

    // LINES: left out, and said.
    f.json["meshes"][mesh]["primitives"][1]["mode"] = json!(1);
    let rig = import(&f).unwrap();
    assert_eq!(rig.notes.len(), 1, "{:?}", rig.notes);
    assert_contains(&rig.notes[0], &["mesh \"Strip\" primitive 1", "left out", "Lines"]);
    assert!(rig.left_out_vertices > 0);
}

#[test]
fn material_ids_from_attribute_or_material() {
    let mut f = Fixture::new();
    let (mesh, _) = rigid_strip(&mut f, "Shirt", true);
    f.push("materials", json!({ "name": "a" }));
    f.push("materials", json!({ "name": "b" }));
    f.json["meshes"][mesh]["primitives"][0]["material"] = json!(1);
    let prim = f.json["meshes"][mesh]["primitives"][0].clone();
    let ids = f.u8s(&[0, 1, 2, 2, 1, 0], "SCALAR");
    let float_ids = f.f32s(&[3.0; 6], "SCALAR");
    f.json["meshes"][mesh]["primitives"] = json!([prim.clone(), prim.clone(), prim]);
    f.json["meshes"][mesh]["primitives"][1]["attributes"]["_MATERIAL_ID"] = json!(ids);
    f.json["meshes"][mesh]["primitives"][2]["attributes"]["_MATERIAL_ID"] = json!(float_ids);
    let rig = import(&f).unwrap();
    assert_eq!(rig.meshes[0].material_ids, vec![1; 12]);
    // Unwelded along the indices 0 1 2 2 1 3 2 3 4 4 3 5.
    let expected: Vec<u8> = STRIP_INDICES.iter().map(|&i| [0, 1, 2, 2, 1, 0][i as usize]).collect();
    assert_eq!(rig.meshes[1].material_ids, expected);
    assert_eq!(rig.meshes[2].material_ids, vec![3; 12]);
}

#[test]
fn external_bin_in_a_temp_dir() {
    let dir = temp_dir("external");
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    // The uri is percent-encoded: "my mesh.bin" on disk.
    std::fs::write(dir.join("my mesh.bin"), &f.bin).unwrap();
    let gltf = dir.join("external.gltf");
    std::fs::write(&gltf, f.gltf_external("my%20mesh.bin")).unwrap();
    let rig = import_file(&gltf, &ImportOptions::default()).unwrap();
    assert_eq!(rig.name, "external");
    assert_eq!(rig.meshes[0].vertex_count(), 12);
    // Same content as the embedded form.
    assert_eq!(rig, Rig { name: "external".into(), ..import(&f).unwrap() });
    // Without a base directory the external buffer cannot be resolved.
    let message =
        gltf_error(import_slice(&f.gltf_external("my%20mesh.bin"), None, "loose.gltf"), "loose.gltf");
    assert_contains(&message, &["buffer 0", "my%20mesh.bin", "base directory"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn external_files_are_confined_to_the_gltf_folder() {
    let dir = temp_dir("confine");
    let model = dir.join("model");
    std::fs::create_dir_all(model.join("sub")).unwrap();
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    // A valid buffer outside the model's folder, ending in a marker no message may echo.
    let mut secret = f.bin.clone();
    secret.extend_from_slice(b"SECRETMARK");
    std::fs::write(dir.join("secret.bin"), &secret).unwrap();
    std::fs::write(model.join("data.bin"), &f.bin).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.bin"), model.join("link.bin")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", model.join("zero.bin")).unwrap();
    let fifo = model.join("fifo.bin");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let gltf = model.join("model.gltf");
    let import_uri = |uri: &str, options: &ImportOptions| {
        std::fs::write(&gltf, f.gltf_external(uri)).unwrap();
        import_file(&gltf, options)
    };
    let defaults = ImportOptions::default();
    // Inside the folder: read.
    assert_eq!(import_uri("data.bin", &defaults).unwrap().meshes[0].vertex_count(), 12);
    // Each escape class, refused without reading the file.
    for (uri, rule) in [
        ("/etc/passwd", "absolute path"),
        ("%2Fetc%2Fpasswd", "absolute path"),
        ("/proc/self/environ", "absolute path"),
        ("/dev/zero", "absolute path"),
        ("../secret.bin", "resolves outside"),
        ("..%2Fsecret.bin", "resolves outside"),
        ("sub/../../secret.bin", "resolves outside"),
        ("link.bin", "resolves outside"),
        ("zero.bin", "resolves outside"),
        ("fifo.bin", "not a regular file"),
        ("sub", "not a regular file"),
    ] {
        let err = import_uri(uri, &defaults).unwrap_err().to_string();
        assert!(err.contains(rule), "{uri}: {err}");
        assert!(err.contains("buffer 0") && !err.contains("SECRETMARK"), "{uri}: {err}");
    }
    // The root widened explicitly: the file beside the folder is read (up to its byteLength only).
    let wide = ImportOptions { resource_root: Some(dir.clone()), ..ImportOptions::default() };
    assert_eq!(import_uri("../secret.bin", &wide).unwrap().meshes[0].vertex_count(), 12);
    assert_eq!(import_uri("link.bin", &wide).unwrap().meshes[0].vertex_count(), 12);
    // Even with the whole file system as root, a device is not a regular file: /dev/zero is never read.
    let everything = ImportOptions { resource_root: Some("/".into()), ..ImportOptions::default() };
    let err = import_uri("zero.bin", &everything).unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn glb_from_bytes_and_file() {
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let glb = f.glb();
    let rig = import_slice(&glb, None, "fixture.glb").unwrap();
    assert_eq!(Rig { name: "fixture.gltf".into(), ..rig.clone() }, import(&f).unwrap());
    let dir = temp_dir("glb");
    let path = dir.join("char.glb");
    std::fs::write(&path, &glb).unwrap();
    assert_eq!(import_file(&path, &ImportOptions::default()).unwrap(), Rig { name: "char".into(), ..rig });
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------------
// Bad input: typed errors naming the file and the part, no panic.

#[test]
fn truncated_glb() {
    let (mut f, ..) = skeleton();
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
    let glb = f.glb();
    let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    for cut in [
        4,
        8,
        11,
        12,
        16,
        19,
        20,
        21,
        20 + json_len / 2,
        20 + json_len,
        24 + json_len,
        glb.len() - 40,
        glb.len() - 1,
    ] {
        let message = gltf_error(import_slice(&glb[..cut], None, "cut.glb"), "cut.glb");
        assert_contains(&message, &["truncated"]);
    }
    // A header claiming fewer bytes than a header (would underflow a naive parser).
    let mut forged = glb.clone();
    forged[8..12].copy_from_slice(&4u32.to_le_bytes());
    let message = gltf_error(import_slice(&forged, None, "forged.glb"), "forged.glb");
    assert_contains(&message, &["GLB header"]);
    // A BIN chunk cut short while the header length is fixed up to match.
    let mut short = glb[..glb.len() - 8].to_vec();
    let len = short.len() as u32;
    short[8..12].copy_from_slice(&len.to_le_bytes());
    let message = gltf_error(import_slice(&short, None, "short.glb"), "short.glb");
    assert_contains(&message, &["BIN chunk", "truncated"]);
}

#[test]
fn missing_buffer_file() {
    let dir = temp_dir("missing");
    let mut f = Fixture::new();
    rigid_strip(&mut f, "Crate", true);
    let gltf = dir.join("crate.gltf");
    std::fs::write(&gltf, f.gltf_external("absent.bin")).unwrap();
    let message = gltf_error(import_file(&gltf, &ImportOptions::default()), &gltf.display().to_string());
    assert_contains(&message, &["buffer 0 (\"absent.bin\")", "absent.bin", "does not exist"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn joint_index_out_of_range() {
    let (mut f, ..) = skeleton();
    let mut joints = STRIP_JOINTS;
    joints[4] = [0, 2, 0, 0];
    skinned_strip(&mut f, "Body", &joints, &STRIP_WEIGHTS);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["mesh \"Body\" primitive 0 JOINTS_0", "vertex 4", "joint 2", "2 joints"]);
}

#[test]
fn weights_summing_to_zero() {
    let (mut f, ..) = skeleton();
    let mut weights = STRIP_WEIGHTS;
    weights[3] = [0.0; 4];
    skinned_strip(&mut f, "Body", &STRIP_JOINTS, &weights);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["mesh \"Body\" primitive 0", "vertex 3", "sum to 0"]);
}

/// A rigid strip animated by one translation channel with these times and x values.
fn translation_clip(times: &[f32], xs: &[f32]) -> Fixture {
    let mut f = Fixture::new();
    let (_, node) = rigid_strip(&mut f, "Crate", true);
    let t = f.f32s(times, "SCALAR");
    let values: Vec<f32> = xs.iter().flat_map(|&x| [x, 0.0, 0.0]).collect();
    let v = f.f32s(&values, "VEC3");
    f.animation("slide", &[(node, "translation", t, v, "LINEAR")]);
    f
}

#[test]
fn nan_keyframes() {
    let message = gltf_error(import(&translation_clip(&[0.0, f32::NAN], &[0.0, 1.0])), "fixture.gltf");
    assert_contains(&message, &["animation \"slide\" channel 0", "keyframe time 1 is NaN"]);
    let message = gltf_error(import(&translation_clip(&[0.0, 1.0], &[0.0, f32::INFINITY])), "fixture.gltf");
    assert_contains(&message, &["animation \"slide\" channel 0", "keyframe 1 has value inf"]);
}

#[test]
fn keyframe_times_must_increase() {
    let message = gltf_error(import(&translation_clip(&[0.0, 1.0, 1.0], &[0.0, 1.0, 2.0])), "fixture.gltf");
    assert_contains(&message, &["animation \"slide\" channel 0", "strictly increase", "key 2"]);
}

#[test]
fn one_key_clip_is_a_pose() {
    let rig = import(&translation_clip(&[0.5], &[1.0])).unwrap();
    let clip = &rig.clips[0];
    assert_eq!((clip.name.as_str(), clip.start, clip.end), ("slide", 0.5, 0.5));
    assert_eq!(clip.duration(), 0.0);
}

#[test]
fn missing_position() {
    let mut f = Fixture::new();
    let (mesh, _) = rigid_strip(&mut f, "Body", true);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(6), "VEC3");
    f.json["meshes"][mesh]["primitives"][0]["attributes"] = json!({ "NORMAL": normal });
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_eq!(message, "fixture.gltf: mesh \"Body\" primitive 0: missing POSITION");
}

#[test]
fn compression_extensions_are_decoded_so_declaring_them_is_no_error() {
    // Draco (draco_tests.rs) and meshopt (extension_tests.rs) compression are decoded: declaring
    // them is no error, whether or not a primitive uses them.
    for (key, name) in [
        ("extensionsUsed", "EXT_meshopt_compression"),
        ("extensionsRequired", "KHR_meshopt_compression"),
        ("extensionsRequired", "KHR_draco_mesh_compression"),
    ] {
        let mut f = Fixture::new();
        rigid_strip(&mut f, "Body", true);
        f.json[key] = json!([name]);
        assert!(import(&f).is_ok());
    }
    // Material-only required extensions do not stop a geometry import.
    let mut f = Fixture::new();
    rigid_strip(&mut f, "Body", true);
    f.json["extensionsRequired"] = json!(["KHR_materials_unlit"]);
    assert!(import(&f).is_ok());
}

#[test]
fn only_gltf_2_is_accepted() {
    for (key, version, expected) in [
        ("version", "1.0", "only glTF 2.x"),
        ("version", "3.0", "only glTF 2.x"),
        ("version", "2", "only glTF 2.x"),
        ("minVersion", "2.1", "needs glTF \"2.1\""),
    ] {
        let mut f = Fixture::new();
        rigid_strip(&mut f, "Body", true);
        f.json["asset"][key] = json!(version);
        let message = gltf_error(import(&f), "fixture.gltf");
        assert_contains(&message, &[expected]);
    }
    // A later minor version without a higher minVersion is glTF 2 by the spec's rules.
    let mut f = Fixture::new();
    rigid_strip(&mut f, "Body", true);
    f.json["asset"]["version"] = json!("2.1");
    assert!(import(&f).is_ok());
}

#[test]
fn invalid_json_and_broken_references() {
    let message = gltf_error(import_slice(b"{ \"asset\": ", None, "broken.gltf"), "broken.gltf");
    assert_contains(&message, &["JSON", "not valid glTF JSON"]);
    let message = gltf_error(import_slice(b"", None, "empty.gltf"), "empty.gltf");
    assert_contains(&message, &["JSON"]);
    let mut f = Fixture::new();
    let (mesh, _) = rigid_strip(&mut f, "Body", true);
    f.json["meshes"][mesh]["primitives"][0]["indices"] = json!(99);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["meshes[0].primitives[0].indices", "Index out of bounds"]);
}

#[test]
fn accessor_past_the_end_of_its_buffer_view() {
    let mut f = Fixture::new();
    let (mesh, _) = rigid_strip(&mut f, "Body", true);
    let position =
        f.json["meshes"][mesh]["primitives"][0]["attributes"]["POSITION"].as_u64().unwrap() as usize;
    f.json["accessors"][position]["count"] = json!(7);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(
        &message,
        &["mesh \"Body\" primitive 0 POSITION (accessor 0)", "past the end of its buffer view"],
    );
    // A view running past its buffer.
    let mut f = Fixture::new();
    rigid_strip(&mut f, "Body", true);
    f.json["bufferViews"][0]["byteLength"] = json!(10_000);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["POSITION", "runs past the end of buffer 0"]);
    // A stride smaller than the element, a wrong component type, and a zero count.
    for (field, value, expected) in [
        ("byteStride", json!(8), "less than one element"),
        // Quantised positions (KHR_mesh_quantization) are bytes or shorts, never 32-bit integers.
        ("componentType", json!(5125), "is U32 Vec3; expected F32 Vec3 or I8 Vec3"),
        ("count", json!(0), "count 0"),
    ] {
        let mut f = Fixture::new();
        rigid_strip(&mut f, "Body", true);
        if field == "byteStride" {
            f.json["bufferViews"][0][field] = value;
        } else {
            f.json["accessors"][0][field] = value;
        }
        let message = gltf_error(import(&f), "fixture.gltf");
        assert_contains(&message, &["POSITION", expected]);
    }
    // A buffer holding fewer bytes than its byteLength.
    let mut f = Fixture::new();
    rigid_strip(&mut f, "Body", true);
    let mut json: serde_json::Value = serde_json::from_slice(&f.gltf()).unwrap();
    json["buffers"][0]["byteLength"] = json!(f.bin.len() + 4);
    let message =
        gltf_error(import_slice(&serde_json::to_vec(&json).unwrap(), None, "long.gltf"), "long.gltf");
    assert_contains(&message, &["buffer 0", "byteLength"]);
}

#[test]
fn sparse_indices_must_increase() {
    let mut f = Fixture::new();
    let position = f.positions(&STRIP);
    let sparse_indices = f.view(&[4, 1], None);
    let values: Vec<u8> = [0.0f32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
    let sparse_values = f.view(&values, None);
    f.json["accessors"][position]["sparse"] = json!({
        "count": 2,
        "indices": { "bufferView": sparse_indices, "componentType": UNSIGNED_BYTE },
        "values": { "bufferView": sparse_values },
    });
    f.push("meshes", json!({ "primitives": [{ "attributes": { "POSITION": position } }] }));
    f.node(json!({ "mesh": 0 }), true);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["POSITION (accessor 0)", "strictly increase"]);
}

#[test]
fn node_cycles_are_rejected() {
    let mut f = Fixture::new();
    let (_, node) = rigid_strip(&mut f, "Body", true);
    let a = f.node(json!({ "name": "A" }), false);
    f.child(node, a);
    f.child(a, node);
    let message = gltf_error(import(&f), "fixture.gltf");
    assert_contains(&message, &["node \"Body\"", "cycle"]);
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    /// A GLB touching most of the importer: skin with IBMs, 8 influences (normalised u8 weights in set
    /// 1), sparse POSITION, a view-less sparse morph target, `_MATERIAL_ID`, a socket with an
    /// attachment, and LINEAR rotation plus CUBICSPLINE weights channels.
    fn glb() -> Vec<u8> {
        let (mut f, _, _, tip) = skeleton();
        let mesh = skinned_strip(&mut f, "Body", &STRIP_JOINTS, &STRIP_WEIGHTS);
        let body = f.json["nodes"].as_array().unwrap().len() - 1;
        let joints1 = f.u8s(&[1, 0, 0, 0].repeat(6), "VEC4");
        let weights1 = f.u8s(&[128, 0, 0, 0].repeat(6), "VEC4");
        f.json["accessors"][weights1]["normalized"] = json!(true);
        let ids = f.u8s(&[0, 1, 2, 2, 1, 0], "SCALAR");
        let sparse_indices = f.view(&[1, 4], None);
        let values: Vec<u8> =
            [5.0f32, 6.0, 7.0, 8.0, 9.0, 10.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let sparse_values = f.view(&values, None);
        let target = f.push(
            "accessors",
            json!({ "componentType": FLOAT, "count": 6, "type": "VEC3", "sparse": {
                "count": 2,
                "indices": { "bufferView": sparse_indices, "componentType": UNSIGNED_BYTE },
                "values": { "bufferView": sparse_values },
            }}),
        );
        let position = f.json["meshes"][mesh]["primitives"][0]["attributes"]["POSITION"].clone();
        f.json["accessors"][position.as_u64().unwrap() as usize]["sparse"] =
            f.json["accessors"][target]["sparse"].clone();
        let attributes = &mut f.json["meshes"][mesh]["primitives"][0]["attributes"];
        attributes["JOINTS_1"] = json!(joints1);
        attributes["WEIGHTS_1"] = json!(weights1);
        attributes["_MATERIAL_ID"] = json!(ids);
        f.json["meshes"][mesh]["primitives"][0]["targets"] = json!([{ "POSITION": target }]);
        let socket = f.node(
            json!({ "name": "S", "translation": [0.0, 0.25, 0.0], "extras": { "vat_socket": "head" } }),
            false,
        );
        f.child(tip, socket);
        let (_, cap) = rigid_strip(&mut f, "Cap", false);
        f.json["nodes"][cap]["extras"] = json!({ "vat_attachment": "head" });
        f.child(socket, cap);
        let t = f.f32s(&[0.0, 1.0], "SCALAR");
        let v = f.f32s(&[0., 0., 0., 1., 0., 0., 0., 1.], "VEC4");
        let w = f.f32s(&[0.0, 0.0, 0.0, 0.0, 1.0, 0.0], "SCALAR");
        f.animation("bend", &[(tip, "rotation", t, v, "LINEAR"), (body, "weights", t, w, "CUBICSPLINE")]);
        import_slice(&f.glb(), None, "base.glb").expect("the unmutated fuzz base imports");
        f.glb()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Random byte edits of a valid GLB (header, JSON and binary alike) import or fail with a
        /// typed error; they never panic.
        #[test]
        fn mutated_glb_never_panics(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
            let mut bytes = glb();
            for (at, value) in edits {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
            let _ = import_slice(&bytes, None, "mutated.glb");
        }

        /// Random digit edits inside the JSON (indices, counts, offsets, strides) never panic.
        #[test]
        fn mutated_json_numbers_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..10), 1..6)) {
            let mut bytes = glb();
            let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
            let digits: Vec<usize> = (20..20 + json_len).filter(|&i| bytes[i].is_ascii_digit()).collect();
            for (at, digit) in edits {
                bytes[digits[at.index(digits.len())]] = b'0' + digit;
            }
            let _ = import_slice(&bytes, None, "mutated.glb");
        }
    }
}

#[test]
fn imports_over_the_memory_budget_are_refused_with_the_numbers() {
    // A 40-byte file cannot ask for 4 M zeros per accessor without counting them: an accessor with
    // only sparse values (no bufferView) of 4,194,304 VEC3 is 50 MiB once read.
    let mut f = Fixture::new();
    let indices = f.view(&0u16.to_le_bytes(), None);
    let values = f.view(&[0u8; 12], None);
    let big = f.push(
        "accessors",
        json!({ "componentType": FLOAT, "count": 1 << 22, "type": "VEC3", "sparse": {
            "count": 1,
            "indices": { "bufferView": indices, "componentType": UNSIGNED_SHORT },
            "values": { "bufferView": values },
        }}),
    );
    f.push("meshes", json!({ "primitives": [{ "attributes": { "POSITION": big } }]}));
    f.node(json!({ "mesh": 0 }), true);
    let small = ImportOptions { max_memory: 16 << 20, ..ImportOptions::default() };
    let message = gltf_error(import_slice_with(&f.gltf(), None, "big.gltf", &small), "big.gltf");
    // 50,331,648 bytes of the accessor plus the file itself.
    assert_contains(&message, &["(accessor 0)", "(48.0 MiB)", "16777216 bytes", "--max-memory"]);
    // The file itself counts: a budget smaller than the file refuses it at once.
    let tiny = ImportOptions { max_memory: 10, ..ImportOptions::default() };
    let message = gltf_error(import_slice_with(&f.gltf(), None, "big.gltf", &tiny), "big.gltf");
    assert_contains(&message, &["the file", "more than the memory budget of 10 bytes"]);
    // import_file checks the size on disk before reading.
    let dir = temp_dir("budget");
    let path = dir.join("big.gltf");
    std::fs::write(&path, f.gltf()).unwrap();
    let message = gltf_error(import_file(&path, &tiny), path.to_str().unwrap());
    assert_contains(&message, &["the file", "10 bytes"]);
}

/// Exporters write zero tangents where the UVs are degenerate (Houdini's glTF exporter does): the
/// TANGENT attribute is left out with a note (`--tangents` regenerates it), not the file refused; a
/// NaN tangent is still corrupt data and refused.
#[test]
fn zero_length_tangents_leave_the_attribute_out_with_a_note_and_nan_ones_are_refused() {
    for (bad, refused) in [([0.0f32, 0.0, 0.0, 1.0], false), ([f32::NAN, 0.0, 0.0, 1.0], true)] {
        let mut f = Fixture::new();
        let position = f.positions(&STRIP);
        let indices = f.u16s(&STRIP_INDICES, "SCALAR");
        let mut tangents = [[1.0f32, 0.0, 0.0, 1.0]; 6];
        tangents[4] = bad;
        let tangent = f.f32s(tangents.as_flattened(), "VEC4");
        let normal = f.f32s([[0.0f32, 0.0, 1.0]; 6].as_flattened(), "VEC3");
        let mesh = f.push(
            "meshes",
            json!({ "name": "strip", "primitives": [{
                "attributes": { "POSITION": position, "NORMAL": normal, "TANGENT": tangent },
                "indices": indices,
            }]}),
        );
        f.node(json!({ "name": "strip", "mesh": mesh }), true);
        if refused {
            let e = gltf_error(import(&f), "fixture.gltf");
            assert!(e.contains("TANGENT") && e.contains("vertex 4") && e.contains("not finite"), "{e}");
        } else {
            let rig = import(&f).unwrap();
            assert!(rig.meshes[0].tangents.is_none());
            assert!(
                rig.notes.iter().any(|n| n.contains("TANGENT left out")
                    && n.contains("1 of its 6")
                    && n.contains("vertex 4")),
                "{:?}",
                rig.notes
            );
        }
    }
}
