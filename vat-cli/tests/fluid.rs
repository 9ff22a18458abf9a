//! The fluid mode end to end through the CLI: `vat bake --procgen splash` bakes (same bytes twice),
//! verifies without `--source` and inspects as a fluid file (`--json` too); a folder of OBJ frames
//! whose topology changes bakes with `--mode fluid --format unorm16` and verifies against the folder;
//! verifying against a different folder fails loudly; misuse (LOD flags, a file instead of a
//! folder, a soft mode for the splash) is refused with the reason and writes nothing; `vat render`
//! draws a fluid file.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-fluid-{}-{name}", std::process::id()));
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
fn the_built_in_splash_bakes_verifies_inspects_and_renders_as_fluid() {
    let dir = scratch("splash");
    let file = dir.join("splash.vat");
    let bake = vat(&["bake", "--procgen", "splash", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(out(&bake).contains("(fluid, Packed64)") && out(&bake).contains("PASSED"), "{}", out(&bake));
    let again = dir.join("again.vat");
    assert!(vat(&["bake", "--procgen", "splash", "--out", s(&again)]).status.success());
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());
    let verify = vat(&["verify", s(&file), "--json"]);
    assert!(verify.status.success(), "{}", out(&verify));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["passed"], true);
    for a in 0..3 {
        assert!(
            report["position_max_error_mm"][a].as_f64().unwrap()
                <= report["position_bound_mm"][a].as_f64().unwrap()
        );
    }
    let inspect = vat(&["inspect", s(&file), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(summary["mode"], "fluid");
    let tris = summary["fluid"]["frame_triangles"].as_array().unwrap();
    assert_eq!(tris.len(), 48);
    assert_eq!(tris.iter().filter_map(|t| t.as_u64()).max(), summary["fluid"]["pool_triangles"].as_u64());
    let png = dir.join("splash.png");
    let render = vat(&["render", s(&file), "--instances", "4", "--size", "160x90", "--out", s(&png)]);
    assert!(render.status.success(), "{}", out(&render));
    assert!(std::fs::metadata(&png).unwrap().len() > 100);
}

/// Writes `frames` as numbered OBJ files: frame `f` is a strip of `1 + f % 3` quads at height `lift * f`.
fn write_frames(dir: &Path, frames: usize, lift: f32) {
    for f in 0..frames {
        let k = 1 + f % 3;
        let mut text = String::new();
        for i in 0..=k {
            let y = lift * f as f32;
            text += &format!("v {} {y} 0\nv {} {} 0\n", i as f32 * 0.1, i as f32 * 0.1, y + 0.2);
        }
        for i in 0..k {
            let (a, b, c, d) = (2 * i + 1, 2 * i + 3, 2 * i + 2, 2 * i + 4);
            text += &format!("f {a} {b} {c}\nf {c} {b} {d}\n");
        }
        std::fs::write(dir.join(format!("f{}.obj", f + 1)), text).unwrap();
    }
}

#[test]
fn an_obj_folder_bakes_in_the_fluid_mode_and_verifies_against_its_source_only() {
    let dir = scratch("folder");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    write_frames(&frames, 11, 0.05);
    let file = dir.join("strip.vat");
    let bake = vat(&[
        "bake",
        s(&frames),
        "--mode",
        "fluid",
        "--fps",
        "12",
        "--format",
        "unorm16",
        "--out",
        s(&file),
    ]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(out(&bake).contains("pool of 6 triangles"), "{}", out(&bake));
    let verify = vat(&["verify", s(&file), "--source", s(&frames)]);
    assert!(verify.status.success(), "{}", out(&verify));
    // Another folder (moved frames) fails, loudly and with a non-zero status.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    write_frames(&other, 11, 0.06);
    let wrong = vat(&["verify", s(&file), "--source", s(&other)]);
    assert!(!wrong.status.success());
    assert!(out(&wrong).contains("FAILED") && out(&wrong).contains("frame 1:"), "{}", out(&wrong));
    // No source and not a built-in: refused with the way out.
    let none = vat(&["verify", s(&file)]);
    assert!(!none.status.success() && out(&none).contains("--source"), "{}", out(&none));
}

#[test]
fn misuse_is_refused_and_writes_nothing() {
    let dir = scratch("misuse");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    write_frames(&frames, 3, 0.05);
    let file = dir.join("x.vat");
    for (args, reason) in [
        (
            vec!["bake", s(&frames), "--mode", "fluid", "--lods", "3"],
            "--lods does not apply to the fluid mode",
        ),
        (vec!["bake", "--procgen", "splash", "--mode", "soft"], "fluid source"),
        (vec!["bake", "--mode", "fluid"], "--mode fluid needs"),
    ] {
        let mut a = args.clone();
        a.extend(["--out", s(&file)]);
        let o = vat(&a);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(out(&o).contains(reason), "{args:?}: {}", out(&o));
        assert!(!file.exists(), "{args:?} wrote a file");
    }
    let obj = frames.join("f1.obj");
    let o = vat(&["bake", s(&obj), "--mode", "fluid", "--out", s(&file)]);
    assert!(!o.status.success() && out(&o).contains("reads a folder"), "{}", out(&o));
    assert!(!file.exists());
}
