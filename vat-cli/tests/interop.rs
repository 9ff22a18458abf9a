//! `vat export-openvat`, `vat import-openvat` and `vat import-houdini` end to end: a bake goes out to
//! OpenVAT files and back in; real bakes of other tools import or are refused in one line.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-interop-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn a_bake_goes_out_to_openvat_and_back_in() {
    let dir = scratch("round-trip");
    let (vat_file, out, back) = (dir.join("cloth.vat"), dir.join("openvat"), dir.join("back.vat"));
    let s = |p: &PathBuf| p.to_str().unwrap().to_owned();
    assert!(vat(&["bake", "--procgen", "cloth", "--lods", "1", "--out", &s(&vat_file)]).status.success());
    for (format, normals) in [("exr16", "separate"), ("png16", "packed"), ("exr32", "none")] {
        let _ = std::fs::remove_dir_all(&out);
        let o = vat(&[
            "export-openvat",
            &s(&vat_file),
            "--out",
            &s(&out),
            "--format",
            format,
            "--normals",
            normals,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let ext = if format == "png16" { "png" } else { "exr" };
        for f in [format!("cloth_vat.{ext}"), "cloth-remap_info.json".into(), "cloth.glb".into()] {
            assert!(out.join(&f).is_file(), "{format}: {f} missing");
        }
        assert_eq!(out.join(format!("cloth_vnrm.{ext}")).is_file(), normals == "separate");
        let o = vat(&["import-openvat", &s(&out), "--out", &s(&back), "--lods", "1"]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(t.contains("60 source frames") && t.contains("PASSED"), "{t}");
        assert_eq!(t.contains("recomputed"), normals == "none", "{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sidecar whose clips run at different rates, and leave rows out: `vat import-openvat` stores each
/// clip at its own rate, one frame per source frame, and names the rows it leaves out.
#[test]
fn an_import_keeps_each_clips_rate_and_names_the_rows_in_no_clip() {
    let Some(root) = vat_procgen::testdata::shared_testdata() else { return };
    let can = root.join("vat-bakes").join("openvat-soda-can");
    let dir = scratch("rates");
    let bake = dir.join("bake");
    std::fs::create_dir_all(&bake).expect("a scratch bake folder");
    for f in ["Can.Morph.LOD0.001.glb", "Can.Morph.LOD0.001_vat.exr"] {
        std::fs::copy(can.join(f), bake.join(f)).expect("the soda can's files copied");
    }
    // Rows 0..=59 at 60 fps, 60..=109 at 12 fps; rows 110..=120 in no clip.
    let sidecar = r#"{"os-remap": {"Min": [-0.1, -0.1, -0.1], "Max": [0.1, 0.1, 0.1], "Frames": 121},
        "animations": {"fast": {"startFrame": 1, "endFrame": 60, "framerate": 60, "looping": true},
                       "slow": {"startFrame": 61, "endFrame": 110, "framerate": 12, "looping": false}}}"#;
    std::fs::write(bake.join("Can.Morph.LOD0.001-remap_info.json"), sidecar).expect("the sidecar written");
    let out = dir.join("rates.vat");
    let s = |p: &PathBuf| p.to_str().expect("a UTF-8 scratch path").to_owned();
    let o = vat(&["import-openvat", &s(&bake), "--out", &s(&out), "--lods", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("121 source frames, 2 clips; baked 110 frames") && t.contains("PASSED"), "{t}");
    assert!(t.contains("rows 110-120 (11 of the texture's 121 frames) are in no clip"), "{t}");
    let o = vat(&["inspect", &s(&out)]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("60 frames from 0 at 60.0 fps") && t.contains("50 frames from 60 at 12.0 fps"), "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_bakes_import_or_are_refused_in_one_line() {
    let Some(root) = vat_procgen::testdata::shared_testdata() else { return };
    let bakes = root.join("vat-bakes");
    let dir = scratch("real");
    let out = dir.join("x.vat");
    let s = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let o = vat(&["import-openvat", &s(&bakes.join("openvat-soda-can")), "--out", &s(&out), "--lods", "2"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("note:") && t.contains("trailing comma") && t.contains("clip \"Crush\""), "{t}");
    assert!(out.is_file());
    let o =
        vat(&["import-houdini", &s(&bakes.join("houdini-vat3-softbody")), "--out", &s(&out), "--lods", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("bounds-extender") && t.contains("PASSED"), "{t}");
    // The compressed tier of an import: its size is the residual's and the skin's (no texel per
    // vertex per frame), and the bake's notes (the fitted skin, the counts tried) are said.
    let o = vat(&[
        "import-openvat",
        &s(&bakes.join("openvat-jello")),
        "--out",
        &s(&out),
        "--lods",
        "1",
        "--format",
        "skin-residual",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("(residual and skin) bytes/vertex/frame") && !t.contains(", 0 bytes/vertex/frame"),
        "{t}"
    );
    assert!(
        t.contains("was fitted to the frames") && t.contains("bones tried") && t.contains("PASSED"),
        "{t}"
    );
    // Its verification prints the Euclidean max, p99 and mean the format's bound is stated in.
    let verified = t
        .lines()
        .find(|l| l.contains("verified against the decoded source frames"))
        .expect("the import says how it verified");
    assert!(
        ["position max", "p99", "mean", "(euclidean)", "normals max"].iter().all(|w| verified.contains(w)),
        "{verified}"
    );
    // Out of scope: a VAT 2 rigid bake (FBX mesh, parameters in a Unity material).
    let refused = dir.join("refused.vat");
    let o = vat(&["import-houdini", &s(&bakes.join("houdini-vat2-rigid")), "--out", &s(&refused)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("VAT 2") && err.contains(".fbx") && err.contains("glTF"), "{err}");
    assert!(!refused.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A SideFX Labs VAT 3 rigid-body bake (made here in VAT 3's layout, one piece turning 170 degrees a
/// frame) imports into the rigid mode with substeps, verifies, and `vat verify --source` checks the
/// file against the bake folder again; a refused bake writes nothing.
#[test]
fn a_houdini_rigid_body_bake_imports_into_the_rigid_mode_and_verifies_again() {
    let dir = scratch("houdini-rigid");
    let bake = dir.join("bake");
    std::fs::create_dir_all(&bake).expect("a scratch bake folder");
    vat_procgen::fuzzing::houdini_rigid_fixture(4, 4, 10, true).write(&bake, "cubes").unwrap();
    let out = dir.join("cubes.vat");
    let s = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&out), "--lods", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("(rigid): 4 pieces, 96 vertices") && t.contains("PASSED"), "{t}");
    assert!(t.contains("frames per source frame") && t.contains("bounds-extender"), "{t}");
    let o = vat(&["verify", &s(&out), "--source", &s(&bake)]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("PASSED"), "{t}");
    // At the source's rate, as asked.
    let one = dir.join("one.vat");
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&one), "--substeps", "1", "--lods", "1"]);
    let t = text(&o);
    assert!(o.status.success() && t.contains("; 10 frames;") && t.contains("source's rate"), "{t}");
    let o = vat(&["verify", &s(&one), "--source", &s(&bake)]);
    assert!(o.status.success(), "{}", text(&o));
    // A vertex format does not apply to pieces.
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&one), "--format", "f16"]);
    assert!(!o.status.success() && text(&o).contains("--format does not apply"), "{}", text(&o));
    // Refused: no file written, one line.
    std::fs::remove_file(bake.join("cubes_rot.exr")).unwrap();
    let refused = dir.join("refused.vat");
    let o = vat(&["import-houdini", &s(&bake), "--out", &s(&refused)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("rotation texture") && err.contains("missing"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!refused.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
