//! The rigid-body mode end to end through the CLI: `vat bake --procgen shatter` bakes, verifies
//! without `--source` (the built-in source regenerated) and inspects as a rigid file (`--json`
//! too); a node-animated glTF bakes with `--mode rigid` and verifies against `--source`; verifying
//! against the wrong source fails loudly; a folder of OBJ frames whose pieces move rigidly bakes
//! with `--mode rigid` (pieces detected) and verifies against the folder, and one that deforms (the
//! cloth) is refused; misuse (a skinned glTF, a soft mode for the shatter) is refused with the
//! reason and writes nothing.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-rigid-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn out(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_built_in_shatter_bakes_verifies_and_inspects_as_rigid() {
    let dir = scratch("shatter");
    let file = dir.join("shatter.vat");
    let bake = vat(&["bake", "--procgen", "shatter", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    let text = out(&bake);
    assert!(
        text.contains("(rigid)") && text.contains("16 bytes/piece/frame") && text.contains("PASSED"),
        "{text}"
    );
    // Same seed, same bytes.
    let again = dir.join("again.vat");
    assert!(vat(&["bake", "--procgen", "shatter", "--out", s(&again)]).status.success());
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());
    let verify = vat(&["verify", s(&file)]);
    assert!(verify.status.success(), "{}", out(&verify));
    assert!(out(&verify).contains("rotation max") && out(&verify).contains("PASSED"));
    let json = vat(&["verify", s(&file), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["passed"], true);
    assert!(
        report["rotation_max_error_deg"].as_f64().unwrap() <= report["rotation_bound_deg"].as_f64().unwrap()
    );
    assert!(report["rotation_bound_deg"].as_f64().unwrap() < 0.05);
    let inspect = vat(&["inspect", s(&file), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(summary["mode"], "rigid");
    assert_eq!(summary["rigid"]["pieces"], 300);
    assert_eq!(summary["rigid"]["bytes_per_piece_frame"], 16);
    let human = vat(&["inspect", s(&file)]);
    assert!(out(&human).contains("rigid mode") && out(&human).contains("300 pieces"), "{}", out(&human));
    // A soft file says so.
    let cloth = dir.join("cloth.vat");
    assert!(vat(&["bake", "--procgen", "cloth", "--out", s(&cloth)]).status.success());
    let summary: serde_json::Value =
        serde_json::from_slice(&vat(&["inspect", s(&cloth), "--json"]).stdout).unwrap();
    assert_eq!(summary["mode"], "soft");
    assert!(summary["rigid"].is_null());
}

#[test]
fn a_node_animated_gltf_bakes_rigid_and_verifies_against_its_source() {
    let Some(data) = vat_procgen::testdata::shared_testdata() else { return };
    let gltf = data.join("gltf/BoxAnimated/BoxAnimated.glb");
    let dir = scratch("gltf");
    let file = dir.join("box.vat");
    let bake = vat(&["bake", s(&gltf), "--mode", "rigid", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(out(&bake).contains("2 pieces"), "{}", out(&bake));
    let verify = vat(&["verify", s(&file), "--source", s(&gltf)]);
    assert!(verify.status.success(), "{}", out(&verify));
    // Without --source a glTF bake cannot be checked, and says why.
    let bare = vat(&["verify", s(&file)]);
    assert!(!bare.status.success() && out(&bare).contains("--source"), "{}", out(&bare));
    // Against another asset's source it fails loudly.
    let shatter = dir.join("shatter.vat");
    assert!(vat(&["bake", "--procgen", "shatter", "--out", s(&shatter)]).status.success());
    let wrong = vat(&["verify", s(&shatter), "--source", s(&gltf)]);
    assert!(!wrong.status.success(), "{}", out(&wrong));
    assert!(out(&wrong).contains("pieces"), "{}", out(&wrong));
}

#[test]
fn misuse_of_the_rigid_mode_is_refused() {
    let dir = scratch("misuse");
    let file = dir.join("x.vat");
    let empty = vat(&["bake", s(&dir), "--mode", "rigid", "--out", s(&file)]);
    assert!(!empty.status.success(), "{}", out(&empty));
    let soft = vat(&["bake", "--procgen", "shatter", "--mode", "soft", "--out", s(&file)]);
    assert!(!soft.status.success() && out(&soft).contains("--mode rigid"), "{}", out(&soft));
    let flag = vat(&["bake", "--procgen", "shatter", "--bones", "--out", s(&file)]);
    assert!(!flag.status.success() && out(&flag).contains("--bones does not apply"), "{}", out(&flag));
    let format = vat(&["bake", "--procgen", "shatter", "--format", "f16", "--out", s(&file)]);
    assert!(!format.status.success() && out(&format).contains("--format does not apply"), "{}", out(&format));
    let nothing = vat(&["bake", "--mode", "rigid", "--out", s(&file)]);
    assert!(!nothing.status.success(), "{}", out(&nothing));
    let skinned = dir.join("skinned.glb");
    std::fs::write(&skinned, vat_procgen::testdata::small_skinned_glb()).unwrap();
    let refused = vat(&["bake", s(&skinned), "--mode", "rigid", "--out", s(&file)]);
    assert!(!refused.status.success() && out(&refused).contains("skinned"), "{}", out(&refused));
    assert!(!file.exists(), "nothing is written");
}

/// The first `frames` frames of a small shatter as a mesh sequence (pieces placed per frame).
fn shatter_sequence(frames: usize) -> vat_bake::sequence::MeshSequence {
    let source = vat_procgen::shatter_with(8, 4);
    let mut indices = Vec::new();
    let mut base = 0u32;
    for p in &source.pieces {
        indices.extend(p.indices.iter().map(|i| i + base));
        base += p.positions.len() as u32;
    }
    let positions = source.clips[0].frames[..frames]
        .iter()
        .map(|f| {
            source
                .pieces
                .iter()
                .zip(f)
                .flat_map(|(p, t)| {
                    p.positions.iter().map(move |v| {
                        let local = [v[0] - p.rest_pivot[0], v[1] - p.rest_pivot[1], v[2] - p.rest_pivot[2]];
                        let r = vat_core::modes::rigid::quat_rotate(t.rotation, local);
                        glam::Vec3::new(t.pivot[0] + r[0], t.pivot[1] + r[1], t.pivot[2] + r[2])
                    })
                })
                .collect()
        })
        .collect();
    vat_bake::sequence::MeshSequence {
        name: "pieces".into(),
        positions,
        normals: None,
        uvs: None,
        indices,
        fps: 30.0,
        notes: Vec::new(),
    }
}

#[test]
fn a_rigid_mesh_sequence_bakes_with_detected_pieces_and_a_soft_one_is_refused() {
    let dir = scratch("sequence");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    vat_procgen::testdata::write_obj_frames(&shatter_sequence(40), &frames, false);
    let file = dir.join("pieces.vat");
    let bake = vat(&["bake", s(&frames), "--mode", "rigid", "--fps", "30", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(
        out(&bake).contains("8 rigid pieces detected") && out(&bake).contains("(rigid)"),
        "{}",
        out(&bake)
    );
    let verify = vat(&["verify", s(&file), "--source", s(&frames)]);
    assert!(verify.status.success(), "{}", out(&verify));
    // The cloth deforms: not rigid, refused with the residual, nothing written.
    let cloth = dir.join("cloth");
    std::fs::create_dir_all(&cloth).unwrap();
    vat_procgen::testdata::write_obj_frames(&vat_procgen::cloth_sequence(), &cloth, false);
    let refused_file = dir.join("cloth.vat");
    let refused = vat(&["bake", s(&cloth), "--mode", "rigid", "--fps", "30", "--out", s(&refused_file)]);
    assert!(
        !refused.status.success() && out(&refused).contains("does not move rigidly"),
        "{}",
        out(&refused)
    );
    assert!(!refused_file.exists());
}

#[test]
fn the_built_in_shatter_gets_lods_and_inspect_lists_each_levels_triangles_and_error() {
    // Every shard is flat shaded (no shared vertices): the chain welds by position within a piece,
    // so the shatter simplifies (it kept LOD 0 only before) and `vat inspect` prints one line per
    // level with its triangles, its measured error and where it is used.
    let dir = scratch("lods");
    let file = dir.join("shatter.vat");
    let bake = vat(&["bake", "--procgen", "shatter", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    let summary: serde_json::Value =
        serde_json::from_slice(&vat(&["inspect", s(&file), "--json"]).stdout).unwrap();
    let lods = summary["lods"].as_array().unwrap();
    assert!(lods.len() >= 3, "{lods:?}");
    let human = out(&vat(&["inspect", s(&file)]));
    let mut from = 0.0;
    for (i, l) in lods.iter().enumerate() {
        let error = l["screen_error_m"].as_f64().unwrap();
        let until = l["max_distance_m"].as_f64().map_or("any distance".to_string(), |d| format!("{d:.2} m"));
        let line = format!(
            "LOD {i}: {} triangles, error {error:.4} m, used from {from:.2} m to {until}",
            l["triangles"]
        );
        assert!(human.contains(&line), "missing {line:?} in\n{human}");
        if i > 0 {
            assert!(error > 0.0, "LOD {i} has a measured error");
        }
        from = l["max_distance_m"].as_f64().unwrap_or(from);
    }
}
