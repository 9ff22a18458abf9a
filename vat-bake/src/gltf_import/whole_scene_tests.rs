//! Whole-scene bakes from fixtures built here: several skins, more than 8 influences, one-key and
//! one-shot clips, static meshes. Each goes import -> bake -> verify, the path a user's file takes.

use glam::{Mat4, Quat, Vec3};
use serde_json::json;

use super::fixture::Fixture;
use super::{ImportOptions, import_slice, import_slice_with};
use crate::BakeError;
use crate::prepare::{BakeOptions, LoopDecision, STATIC_CLIP, prepare};
use crate::rig::{MAX_INFLUENCES, MeshBinding, Rig};
use crate::skin::VertexSet;
use crate::verify::{VerifyOptions, verify_prepared, verify_with};

fn import(f: &Fixture) -> Rig {
    import_slice(&f.gltf(), None, "fixture.gltf").unwrap()
}

/// A strip of 6 vertices (3 rows of 2) at height `y0`, with normals, as a primitive JSON with the
/// given extra attributes.
fn strip(f: &mut Fixture, y0: f32, extra: serde_json::Value) -> serde_json::Value {
    let rows: Vec<[f32; 3]> =
        (0..6).map(|i| [(i % 2) as f32 * 0.2, y0 + (i / 2) as f32 * 0.2, 0.0]).collect();
    let position = f.positions(&rows);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(6), "VEC3");
    let indices = f.u16s(&[0, 1, 2, 2, 1, 3, 2, 3, 4, 4, 3, 5], "SCALAR");
    let mut attributes = json!({ "POSITION": position, "NORMAL": normal });
    for (k, v) in extra.as_object().unwrap() {
        attributes[k] = v.clone();
    }
    json!({ "attributes": attributes, "indices": indices })
}

/// A chain of `count` joints J0..J(count-1), each 0.2 m above its parent, J0 a scene root; skin 0
/// over all of them with exact inverse binds; every joint rotates about Z by `angle` over 1 s and
/// back (a loop). Returns (fixture, joint nodes).
fn chain(count: usize, angle: f32) -> (Fixture, Vec<usize>) {
    let mut f = Fixture::new();
    let mut joints = Vec::new();
    for i in 0..count {
        let t = if i == 0 { [0.0, 0.0, 0.0] } else { [0.0, 0.2, 0.0] };
        let node = f.node(json!({ "name": format!("J{i}"), "translation": t }), i == 0);
        if let Some(&parent) = joints.last() {
            f.child(parent, node);
        }
        joints.push(node);
    }
    let ibm: Vec<f32> = (0..count)
        .flat_map(|i| Mat4::from_translation(Vec3::new(0.0, -0.2 * i as f32, 0.0)).to_cols_array())
        .collect();
    let ibm = f.f32s(&ibm, "MAT4");
    f.push("skins", json!({ "joints": joints, "inverseBindMatrices": ibm }));
    let times = f.f32s(&[0.0, 0.5, 1.0], "SCALAR");
    let q = Quat::from_rotation_z(angle);
    let rotations = f.f32s(&[0.0, 0.0, 0.0, 1.0, q.x, q.y, q.z, q.w, 0.0, 0.0, 0.0, 1.0], "VEC4");
    let channels: Vec<(usize, &str, usize, usize, &str)> =
        joints.iter().map(|&j| (j, "rotation", times, rotations, "LINEAR")).collect();
    f.animation("bend", &channels);
    (f, joints)
}

/// A skinned strip mesh named `name` on a new scene-root node with skin `skin`, weights `w` on
/// joints `j` (the same for every vertex).
fn skinned(f: &mut Fixture, name: &str, skin: usize, y0: f32, j: [u16; 4], w: [f32; 4]) {
    let joints = f.u16s(&j.repeat(6), "VEC4");
    let weights = f.f32s(&w.repeat(6), "VEC4");
    let prim = strip(f, y0, json!({ "JOINTS_0": joints, "WEIGHTS_0": weights }));
    let mesh = f.push("meshes", json!({ "name": name, "primitives": [prim] }));
    f.node(json!({ "name": name, "mesh": mesh, "skin": skin }), true);
}

#[test]
fn meshes_on_several_skins_bake_whole_on_one_skeleton() {
    let (mut f, joints) = chain(3, 0.6);
    // Skin 1 lists the same joints with the same binds (an exporter's per-mesh copy); skin 2 is the
    // last joint alone without inverse binds (identity: a different bind, so its own bone).
    let ibm = f.json["skins"][0]["inverseBindMatrices"].clone();
    f.push("skins", json!({ "joints": joints, "inverseBindMatrices": ibm }));
    f.push("skins", json!({ "joints": [joints[2]] }));
    skinned(&mut f, "Body", 0, 0.0, [0, 1, 0, 0], [0.5, 0.5, 0.0, 0.0]);
    skinned(&mut f, "Hand", 1, 0.2, [1, 2, 0, 0], [0.25, 0.75, 0.0, 0.0]);
    skinned(&mut f, "Hat", 2, 0.4, [0, 0, 0, 0], [1.0, 0.0, 0.0, 0.0]);
    let rig = import(&f);
    assert_eq!(rig.skins.len(), 3);
    assert_eq!(rig.meshes.len(), 3, "every mesh, whatever its skin");
    assert_eq!(rig.meshes[1].binding, MeshBinding::Skinned { skin: 1 });
    assert!(rig.notes.is_empty(), "{:?}", rig.notes);
    let set = VertexSet::from_rig(&rig).unwrap();
    assert_eq!(set.vertex_count(), 18);
    // Skins 0 and 1 share their three bones; skin 2's joint has another bind: a fourth bone.
    assert_eq!(set.bones.len(), 4);

    let bake = prepare(&rig, &BakeOptions { bones: true, ..Default::default() }).unwrap();
    assert_eq!(bake.stats.vertex_count, 18);
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed, "{report:#?}");
    let paths: Vec<&str> = report.paths.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["vat", "bone"]);
    // The hand really follows joints 1 and 2: it moves over the clip.
    assert!(report.clips[0].max_frame_step_mm > 1.0, "{report:#?}");

    // --skin 1 keeps only the hand's skin; the others' meshes are left out, each said.
    let options = ImportOptions { skin: Some(1), ..ImportOptions::default() };
    let one = import_slice_with(&f.gltf(), None, "fixture.gltf", &options).unwrap();
    assert_eq!(one.meshes.len(), 1);
    assert_eq!(one.notes.len(), 2, "{:?}", one.notes);
    assert!(one.notes.iter().all(|n| n.contains("left out") && n.contains("--skin")), "{:?}", one.notes);
    assert_eq!(one.left_out_vertices, 12);
}

#[test]
fn ten_influences_keep_the_8_largest_and_verify_against_full_skinning() {
    let (mut f, _) = chain(10, 0.9);
    // Ten influences per vertex over three sets; joint 9 appears only in the third set, with the
    // largest weight. Joints 7 (0.05) and 8 (0.02) are the smallest: they are dropped.
    let j0 = f.u16s(&[0, 1, 2, 3].repeat(6), "VEC4");
    let w0 = f.f32s(&[0.1, 0.1, 0.1, 0.1].repeat(6), "VEC4");
    let j1 = f.u16s(&[4, 5, 6, 7].repeat(6), "VEC4");
    let w1 = f.f32s(&[0.1, 0.1, 0.05, 0.05].repeat(6), "VEC4");
    let j2 = f.u16s(&[8, 9, 0, 0].repeat(6), "VEC4");
    let w2 = f.f32s(&[0.02, 0.28, 0.0, 0.0].repeat(6), "VEC4");
    let prim = strip(
        &mut f,
        0.5,
        json!({ "JOINTS_0": j0, "WEIGHTS_0": w0, "JOINTS_1": j1, "WEIGHTS_1": w1, "JOINTS_2": j2, "WEIGHTS_2": w2 }),
    );
    let mesh = f.push("meshes", json!({ "name": "Cloak", "primitives": [prim] }));
    f.node(json!({ "name": "Cloak", "mesh": mesh, "skin": 0 }), true);
    let rig = import(&f);
    let m = &rig.meshes[0];
    assert_eq!(m.influence_count, MAX_INFLUENCES);
    // Joint 9, only in JOINTS_2, is kept with the largest weight; 7 and 8 are gone.
    let kept: Vec<u16> = m.joints[0].to_vec();
    assert_eq!(kept, vec![0, 1, 2, 3, 4, 5, 6, 9]);
    let sum: f32 = m.weights[0].iter().sum();
    assert!((sum - 1.0).abs() <= 4.0 * f32::EPSILON, "renormalised: {sum}");
    assert!((m.weights[0][7] - 0.28 / 0.93).abs() < 1e-6, "{:?}", m.weights[0]);
    assert_eq!(m.full_influences.as_ref().unwrap()[0].len(), 10);
    assert_eq!(rig.notes.len(), 1, "{:?}", rig.notes);
    assert!(rig.notes[0].contains("6 of 6 vertices have more than 8 influences"), "{}", rig.notes[0]);

    let bake = prepare(&rig, &BakeOptions { bones: true, ..Default::default() }).unwrap();
    // Against full skinning the reduction shows and verification fails, saying how to accept it.
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(!report.passed, "{report:#?}");
    assert_eq!(report.reduced_influence_vertices, 6);
    let reduction = report.influence_reduction_max_error_mm.unwrap();
    assert!(reduction > report.quantum_mm, "{report:#?}");
    assert!(report.failures.iter().any(|f| f.contains("--accept-influence-loss")), "{:?}", report.failures);
    // Accepted: compared with the baked 8 influences, it passes and still reports the reduction.
    let bytes = bake.to_vat_bytes().unwrap();
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    let accepted =
        verify_with(&asset, &rig, &VerifyOptions { accept_influence_loss: true, ..VerifyOptions::default() })
            .unwrap();
    assert!(accepted.passed, "{accepted:#?}");
    assert!(accepted.influence_loss_accepted);
    assert_eq!(accepted.influence_reduction_max_error_mm, Some(reduction));
}

/// A rigid strip on its own node with three clips: "bob" (up and back: a loop), "fall" (moves 1 m
/// and stays: one-shot) and "tpose" (one key at 0 s).
fn clips_fixture() -> Fixture {
    let mut f = Fixture::new();
    let prim = strip(&mut f, 0.0, json!({}));
    let mesh = f.push("meshes", json!({ "name": "Crate", "primitives": [prim] }));
    let node = f.node(json!({ "name": "Crate", "mesh": mesh }), true);
    let t3 = f.f32s(&[0.0, 0.5, 1.0], "SCALAR");
    let bob = f.f32s(&[0., 0., 0., 0., 0.3, 0., 0., 0., 0.], "VEC3");
    f.animation("bob", &[(node, "translation", t3, bob, "LINEAR")]);
    let t2 = f.f32s(&[0.0, 1.0], "SCALAR");
    let fall = f.f32s(&[0., 0., 0., 1., 0., 0.], "VEC3");
    f.animation("fall", &[(node, "translation", t2, fall, "LINEAR")]);
    let t1 = f.f32s(&[0.0], "SCALAR");
    let pose = f.f32s(&[0., 0.1, 0.], "VEC3");
    f.animation("tpose", &[(node, "translation", t1, pose, "LINEAR")]);
    f
}

#[test]
fn looping_is_decided_per_clip_and_one_key_clips_are_poses() {
    let rig = import(&clips_fixture());
    assert!(rig.clips.iter().all(|c| c.looping.is_none()), "the file does not say");
    let bake = prepare(&rig, &BakeOptions::default()).unwrap();
    let modes: Vec<(&str, bool, u32)> = bake
        .manifest()
        .clips
        .iter()
        .map(|c| (c.name.as_str(), c.mode == vat_core::clip::ClipMode::Looping, c.frame_count))
        .collect();
    // 1 s at 30 fps: a loop stores 30 frames, a one-shot 31 (its end pose), a pose 1.
    assert_eq!(modes, [("bob", true, 30), ("fall", false, 31), ("tpose", true, 1)]);
    let decisions: Vec<LoopDecision> = bake.stats.clip_looping.iter().map(|c| c.decision).collect();
    assert!(matches!(decisions[0], LoopDecision::Seam { seam_mm, .. } if seam_mm == 0.0), "{decisions:?}");
    assert!(
        matches!(decisions[1], LoopDecision::Seam { seam_mm, quantum_mm } if seam_mm > 999.0 && quantum_mm < 1.0),
        "{decisions:?}"
    );
    assert_eq!(decisions[2], LoopDecision::Pose);
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed, "{report:#?}");
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.clips[0].seam_mm, Some(0.0));
    assert_eq!(report.clips[1].seam_mm, None, "one-shot clips have no seam");

    // Forced to loop, "fall" pops at every wrap: verify says so (a warning, not a failure).
    let forced = BakeOptions { looping: vec!["fall".into()], ..Default::default() };
    let bake = prepare(&rig, &forced).unwrap();
    assert_eq!(bake.stats.clip_looping[1].decision, LoopDecision::Option);
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed);
    assert!(report.clips[1].seam_warning, "{:#?}", report.clips[1]);
    assert!((report.clips[1].seam_mm.unwrap() - 1000.0).abs() < 1e-3);
    assert!(
        report.warnings.iter().any(|w| w.contains("\"fall\"") && w.contains("--once")),
        "{:?}",
        report.warnings
    );
    // And --once makes a loop play once.
    let once = BakeOptions { one_shot: vec!["bob".into()], ..Default::default() };
    assert_eq!(prepare(&rig, &once).unwrap().manifest().clips[0].frame_count, 31);
    // One clip named by both is refused; so is an unknown name.
    let both =
        BakeOptions { looping: vec!["bob".into()], one_shot: vec!["bob".into()], ..Default::default() };
    assert!(matches!(prepare(&rig, &both), Err(BakeError::InvalidOption { option: "--once", .. })));
    let unknown = BakeOptions { looping: vec!["jump".into()], ..Default::default() };
    assert!(matches!(prepare(&rig, &unknown), Err(BakeError::InvalidOption { option: "--loop", .. })));
}

#[test]
fn clips_selects_before_validating() {
    // A broken clip (NaN key) elsewhere in the file does not stop a bake that does not select it.
    let mut rig = import(&clips_fixture());
    rig.clips[1].channels[0].values[3] = f32::NAN;
    assert!(matches!(prepare(&rig, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    let only = BakeOptions { clips: Some(vec!["tpose".into(), "bob".into()]), ..Default::default() };
    let bake = prepare(&rig, &only).unwrap();
    assert_eq!(bake.manifest().clips.len(), 2);
    assert!(verify_prepared(&bake, &rig).unwrap().passed);
    // --frames with a pose: still one frame.
    let frames = BakeOptions { clips: Some(vec!["tpose".into()]), frames: Some(8), ..Default::default() };
    assert_eq!(prepare(&rig, &frames).unwrap().manifest().clips[0].frame_count, 1);
}

#[test]
fn a_static_mesh_bakes_as_one_frame() {
    let mut f = Fixture::new();
    let prim = strip(&mut f, 0.0, json!({}));
    let mesh = f.push("meshes", json!({ "name": "Statue", "primitives": [prim] }));
    f.node(json!({ "name": "Statue", "mesh": mesh, "translation": [0.0, 1.0, 0.0] }), true);
    let rig = import(&f);
    assert!(rig.clips.is_empty());
    let bake = prepare(&rig, &BakeOptions { bones: true, ..Default::default() }).unwrap();
    let clips = &bake.manifest().clips;
    assert_eq!((clips.len(), clips[0].name.as_str(), clips[0].frame_count), (1, STATIC_CLIP, 1));
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed, "{report:#?}");
    assert_eq!(report.vertex_frames, 6);
}

#[test]
fn points_and_lines_are_left_out_with_a_note() {
    let mut f = Fixture::new();
    let tri = strip(&mut f, 0.0, json!({}));
    let mut points = strip(&mut f, 1.0, json!({}));
    points["mode"] = json!(0);
    let mesh = f.push("meshes", json!({ "name": "Mixed", "primitives": [tri, points] }));
    f.node(json!({ "name": "Mixed", "mesh": mesh }), true);
    let rig = import(&f);
    assert_eq!(rig.meshes.len(), 1);
    assert_eq!(rig.left_out_vertices, 6);
    assert_eq!(rig.notes.len(), 1);
    assert!(rig.notes[0].contains("primitive 1") && rig.notes[0].contains("Points"), "{}", rig.notes[0]);
    // Nothing but points: an error that says why.
    let mut f = Fixture::new();
    let mut points = strip(&mut f, 1.0, json!({}));
    points["mode"] = json!(0);
    let mesh = f.push("meshes", json!({ "name": "Cloud", "primitives": [points] }));
    f.node(json!({ "name": "Cloud", "mesh": mesh }), true);
    let err = import_slice(&f.gltf(), None, "fixture.gltf").unwrap_err().to_string();
    assert!(err.contains("no triangle mesh") && err.contains("Points"), "{err}");
}

#[test]
fn frame_limits_name_the_option_and_the_limit() {
    let rig = import(&clips_fixture());
    let err = prepare(&rig, &BakeOptions { frames: Some(999_999_999), ..Default::default() }).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, BakeError::InvalidOption { option: "--frames", .. }), "{text}");
    assert!(text.contains("1048576") && !text.contains("u32"), "{text}");
    // A clip lasting 10^6 s at the default rate: the rate is what to change, and the clip is named.
    let mut long = rig.clone();
    for c in &mut long.clips[0].channels {
        if let Some(last) = c.times.last_mut() {
            *last = 1.0e6;
        }
    }
    long.clips[0].end = 1.0e6;
    let text = prepare(&long, &BakeOptions::default()).unwrap_err().to_string();
    assert!(text.contains("--fps") && text.contains("\"bob\" lasts 1000000 s"), "{text}");
}

#[test]
fn a_utf8_byte_order_mark_is_ignored() {
    let mut f = Fixture::new();
    let prim = strip(&mut f, 0.0, json!({}));
    let mesh = f.push("meshes", json!({ "name": "Crate", "primitives": [prim] }));
    f.node(json!({ "name": "Crate", "mesh": mesh }), true);
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(f.gltf());
    assert_eq!(import_slice(&bytes, None, "bom.gltf").unwrap().meshes.len(), 1);
}
