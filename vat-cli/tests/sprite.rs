//! The sprite mode end to end through the CLI: `vat bake --procgen fountain` bakes (same bytes
//! twice), verifies without `--source` and inspects as a sprite file (`--json` too); a folder of
//! CSV particle frames (ids born, persisting and dying) bakes with `--mode sprite` and verifies
//! against the folder; verifying against a different folder fails loudly; a PLY folder bakes too;
//! misuse (vertex formats, LOD flags, a file instead of a folder, a soft mode for the fountain) is
//! refused with the reason and writes nothing; `vat render` draws a sprite file.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-sprite-{}-{name}", std::process::id()));
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
fn the_built_in_fountain_bakes_verifies_inspects_and_renders_as_sprites() {
    let dir = scratch("fountain");
    let file = dir.join("fountain.vat");
    let bake = vat(&["bake", "--procgen", "fountain", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(out(&bake).contains("(sprite)") && out(&bake).contains("PASSED"), "{}", out(&bake));
    let again = dir.join("again.vat");
    assert!(vat(&["bake", "--procgen", "fountain", "--out", s(&again)]).status.success());
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
    assert_eq!(summary["mode"], "sprite");
    let alive = summary["sprite"]["alive_per_frame"].as_array().unwrap();
    assert_eq!(alive.len() as u64, summary["frame_count"].as_u64().unwrap());
    // The slots hold the most particles alive at once, with a few more for the loop's wrap.
    let most = alive.iter().filter_map(|t| t.as_u64()).max().unwrap();
    let slots = summary["sprite"]["slots"].as_u64().unwrap();
    assert!((most..=most + most / 8).contains(&slots), "{slots} slots for {most} alive");
    let human = vat(&["inspect", s(&file)]);
    assert!(out(&human).contains("sprite:") && out(&human).contains("never cross-faded"), "{}", out(&human));
    let png = dir.join("fountain.png");
    let render = vat(&["render", s(&file), "--instances", "4", "--size", "160x90", "--out", s(&png)]);
    assert!(render.status.success(), "{}", out(&render));
    assert!(std::fs::metadata(&png).unwrap().len() > 100);
}

/// Writes `frames` CSV frames: particle `i` is born at frame `i`, lives 4 frames rising by `lift`
/// per frame, then dies (so slots are freed and reused).
fn write_csv_frames(dir: &Path, frames: usize, lift: f32) {
    for f in 0..frames {
        let mut text = String::from("id,x,y,z,size,r,g,b,a,rotation\n");
        for i in f.saturating_sub(3)..=f {
            let age = (f - i) as f32;
            text += &format!(
                "{},{},{},{},{},0.2,0.5,0.9,{},{}\n",
                100 + i,
                0.1 * i as f32,
                lift * age,
                -0.05 * i as f32,
                0.05 + 0.01 * age,
                1.0 - 0.2 * age,
                0.3 * age
            );
        }
        std::fs::write(dir.join(format!("frame{}.csv", f + 1)), text).unwrap();
    }
}

#[test]
fn a_csv_folder_bakes_in_the_sprite_mode_and_verifies_against_its_source_only() {
    let dir = scratch("csv");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    write_csv_frames(&frames, 12, 0.1);
    let file = dir.join("rise.vat");
    let bake = vat(&["bake", s(&frames), "--mode", "sprite", "--fps", "12", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    // At most four particles live at once: four slots, reused as particles die.
    assert!(out(&bake).contains("4 particle slots"), "{}", out(&bake));
    let verify = vat(&["verify", s(&file), "--source", s(&frames)]);
    assert!(verify.status.success(), "{}", out(&verify));
    // Another folder (higher particles) fails, loudly and with a non-zero status.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    write_csv_frames(&other, 12, 0.2);
    let wrong = vat(&["verify", s(&file), "--source", s(&other)]);
    assert!(!wrong.status.success());
    assert!(out(&wrong).contains("FAILED"), "{}", out(&wrong));
    // No source and not a built-in: refused with the way out.
    let none = vat(&["verify", s(&file)]);
    assert!(!none.status.success() && out(&none).contains("--source"), "{}", out(&none));
}

#[test]
fn a_ply_folder_bakes_in_the_sprite_mode() {
    let dir = scratch("ply");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    for f in 0..5 {
        let mut text = String::from(
            "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n\
             property int id\nproperty float pscale\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n\
             end_header\n",
        );
        for id in 0..2 {
            text += &format!("{} {} 0 {id} 0.03 250 120 {}\n", id as f32, 0.1 * f as f32, 40 * id);
        }
        std::fs::write(dir.join(format!("p{f:02}.ply")).as_path(), text).unwrap();
        std::fs::rename(dir.join(format!("p{f:02}.ply")), frames.join(format!("p{f:02}.ply"))).unwrap();
    }
    let file = dir.join("dots.vat");
    let bake =
        vat(&["bake", s(&frames), "--mode", "sprite", "--fps", "10", "--loop", "frames", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    // pscale is a radius: said, not silently doubled.
    assert!(out(&bake).contains("note:") && out(&bake).contains("pscale"), "{}", out(&bake));
    let verify = vat(&["verify", s(&file), "--source", s(&frames)]);
    assert!(verify.status.success(), "{}", out(&verify));
}

#[test]
fn misuse_is_refused_and_writes_nothing() {
    let dir = scratch("misuse");
    let frames = dir.join("frames");
    std::fs::create_dir_all(&frames).unwrap();
    write_csv_frames(&frames, 3, 0.1);
    let file = dir.join("x.vat");
    for (args, reason) in [
        (
            vec!["bake", s(&frames), "--mode", "sprite", "--lods", "3"],
            "--lods does not apply to the sprite mode",
        ),
        (
            vec!["bake", s(&frames), "--mode", "sprite", "--format", "unorm16"],
            "--format does not apply to the sprite mode",
        ),
        (vec!["bake", "--procgen", "fountain", "--mode", "soft"], "sprite source"),
        (vec!["bake", "--mode", "sprite"], "--mode sprite needs"),
    ] {
        let mut a = args.clone();
        a.extend(["--out", s(&file)]);
        let o = vat(&a);
        assert!(!o.status.success(), "{args:?} accepted");
        assert!(out(&o).contains(reason), "{args:?}: {}", out(&o));
        assert!(!file.exists(), "{args:?} wrote a file");
    }
    let csv = frames.join("frame1.csv");
    let o = vat(&["bake", s(&csv), "--mode", "sprite", "--out", s(&file)]);
    assert!(!o.status.success() && out(&o).contains("reads a folder"), "{}", out(&o));
    // A broken frame names its file and line; nothing written.
    std::fs::write(frames.join("frame2.csv"), "id,x,y,z,size,r,g,b,a\n7,0,NaN,0,0.1,1,1,1,1\n").unwrap();
    let o = vat(&["bake", s(&frames), "--mode", "sprite", "--out", s(&file)]);
    assert!(!o.status.success() && out(&o).contains("frame2.csv"), "{}", out(&o));
    assert!(!file.exists());
}
