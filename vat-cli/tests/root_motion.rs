//! `vat bake --root-motion` end to end: a humanoid whose walk travels and turns by a known motion
//! (exported as glTF) bakes with its track, `vat inspect` prints the track (text and JSON),
//! `vat verify` passes against the source; the rigid mode refuses the option.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vat_core::root_motion::RootPose;

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

/// A fresh empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-root-motion-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 1.2 m/s along +Z while turning 0.25 rad/s, over the walk's 1 s cycle.
fn added(t: f32) -> RootPose {
    RootPose { x: 0.0, z: 1.2 * t, yaw: 0.25 * t }
}

#[test]
fn bake_with_root_motion_then_inspect_and_verify() {
    let dir = scratch("walk");
    let glb = dir.join("travelling.glb");
    let mut rig = vat_procgen::humanoid();
    let walk = rig.clips.iter().position(|c| c.name == "walk").unwrap();
    vat_bake::root_motion::add_root_motion(&mut rig, walk, 60.0, added).unwrap();
    vat_bake::export::write_glb(&rig, &glb).unwrap();

    let out = dir.join("travelling.vat");
    let bake =
        vat(&["bake", s(&glb), "--out", s(&out), "--clips", "walk,idle", "--lods", "1", "--root-motion"]);
    let stdout = String::from_utf8_lossy(&bake.stdout);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    assert!(stdout.contains("note: root motion of clip \"walk\""), "{stdout}");
    assert!(stdout.contains("note: root motion of clip \"idle\""), "{stdout}");

    let inspect = vat(&["inspect", s(&out), "--json"]);
    assert!(inspect.status.success());
    let json: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let clips = json["clips"].as_array().unwrap();
    let walk = clips.iter().find(|c| c["name"] == "walk").unwrap();
    let rm = &walk["root_motion"];
    assert_eq!(rm["frames"].as_array().unwrap().len() as u64, walk["frames"].as_u64().unwrap());
    assert_eq!(rm["frames"][0], serde_json::json!([0.0, 0.0, 0.0]));
    // The in-place walk's own motion per cycle is under a centimetre (its centroid returns to
    // where it started), so the cycle is the added motion within that.
    let cycle = &rm["cycle"];
    let end = added(1.0);
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    assert!((f(&cycle["yaw_rad"]) - f64::from(end.yaw)).abs() < 0.01, "{cycle}");
    let expected_distance = f64::from(end.distance());
    assert!((f(&cycle["distance_m"]) - expected_distance).abs() < 0.01, "{cycle}");
    assert_eq!(f(&walk["stride_m"]), f(&cycle["distance_m"]) as f32 as f64);
    let idle = clips.iter().find(|c| c["name"] == "idle").unwrap();
    assert!(idle["root_motion"].is_object());

    let human = vat(&["inspect", s(&out)]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("root motion:") && text.contains("per cycle"), "{text}");

    let verify = vat(&["verify", s(&out), "--source", s(&glb)]);
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );

    // Without --root-motion nothing is extracted.
    let plain = dir.join("plain.vat");
    let bake = vat(&["bake", s(&glb), "--out", s(&plain), "--clips", "walk", "--lods", "1"]);
    assert!(bake.status.success());
    let json: serde_json::Value =
        serde_json::from_slice(&vat(&["inspect", s(&plain), "--json"]).stdout).unwrap();
    assert!(json["clips"][0]["root_motion"].is_null());
}

#[test]
fn the_rigid_mode_refuses_root_motion() {
    let dir = scratch("rigid");
    let out = dir.join("shatter.vat");
    let bake = vat(&["bake", "--procgen", "shatter", "--out", s(&out), "--root-motion"]);
    let stderr = String::from_utf8_lossy(&bake.stderr);
    assert!(!bake.status.success());
    assert!(stderr.contains("--root-motion") && stderr.trim_end().lines().count() == 1, "{stderr}");
    assert!(!out.exists());
}
