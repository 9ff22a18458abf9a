//! `vat bake --impostors` end to end: the built-in humanoid bakes with a small impostor tier, which
//! `vat inspect` shows and `vat verify` checks against the bound it states; a file whose tier states
//! a better bound than its images give fails `vat verify` loudly; the rigid, fluid and sprite
//! sources refuse `--impostors` with the reason, options out of range are refused before any input
//! is read, and without `--impostors` the file has no tier (format version below 8); what the cards
//! leave out (attachments, material variants) is said.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vat_core::container::{Asset, BlobId, ContainerWriter};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-impostors-{}-{name}", std::process::id()));
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

/// A failure: non-zero exit, one line on stderr naming `names`, no panic.
fn assert_clean_failure(o: &Output, names: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "expected failure: {}", out(o));
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr is not one line:\n{stderr}");
    assert!(stderr.contains(names), "stderr does not name {names:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The small tier the tests bake: 4 x 4 views of 16 px, 2 frames per clip, two clips.
const SMALL: [&str; 9] = [
    "--clips",
    "walk,wave",
    "--impostors",
    "--impostor-views",
    "4",
    "--impostor-tile",
    "16",
    "--impostor-frames",
    "2",
];

/// `file`'s bytes with its tier's bound replaced by `edit` (every blob kept).
fn edit_bound(file: &[u8], edit: impl Fn(&mut vat_core::format::impostor::ImpostorBound)) -> Vec<u8> {
    let asset = Asset::parse(file).unwrap();
    let mut manifest = asset.manifest().clone();
    let mut writer = ContainerWriter::new();
    for i in 0..manifest.blobs.len() {
        writer.add_blob(asset.blob(BlobId(i as u32)));
    }
    edit(&mut manifest.impostors.as_mut().unwrap().bound);
    writer.finish(manifest).unwrap()
}

#[test]
fn the_humanoid_bakes_with_a_tier_that_inspects_and_verifies_and_a_boast_fails() {
    let dir = scratch("humanoid");
    let file = dir.join("humanoid.vat");
    let mut args = vec!["bake", "--out", s(&file)];
    args.extend(SMALL);
    let bake = vat(&args);
    assert!(bake.status.success(), "{}", out(&bake));
    let text = out(&bake);
    let line =
        text.lines().find(|l| l.trim_start().starts_with("impostors:")).unwrap_or_else(|| panic!("{text}"));
    for part in
        ["4 x 4 hemi views of 16 px", "4 layers", "atlas", "min coverage IoU", "max mean colour error"]
    {
        assert!(line.contains(part), "{line}");
    }
    // The far cards (one view) have a line and a bound of their own.
    assert!(text.contains("impostor far cards (one view, mip level 2): min coverage IoU"), "{text}");
    // The humanoid's cap is not on its cards: the bake says so.
    assert!(text.contains("impostors leave out: 1 socket attachment(s)"), "{text}");

    let inspect = vat(&["inspect", s(&file), "--json"]);
    assert!(inspect.status.success(), "{}", out(&inspect));
    let summary: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let tier = &summary["impostors"];
    assert_eq!(tier["views_per_side"], 4);
    assert_eq!(tier["tile_size"], 16);
    assert_eq!(tier["layers"], 4);
    let iou = tier["min_coverage_iou"].as_f64().unwrap();
    let error = tier["max_mean_color_error"].as_f64().unwrap();
    assert!(iou > 0.1 && iou < 1.0 && error > 0.0 && error < 0.5, "{tier}");
    let far_iou = tier["one_view_min_coverage_iou"].as_f64().unwrap();
    assert!(far_iou > 0.0 && far_iou < 1.0, "{tier}");
    let text = String::from_utf8_lossy(&vat(&["inspect", s(&file)]).stdout).into_owned();
    assert!(
        text.contains("impostors:") && text.contains("impostor far cards (one view): verified"),
        "{text}"
    );

    let verify = vat(&["verify", s(&file)]);
    assert!(verify.status.success(), "{}", out(&verify));
    assert!(out(&verify).contains("impostors: PASSED"), "{}", out(&verify));
    let json = vat(&["verify", s(&file), "--json"]);
    assert!(json.status.success(), "{}", out(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["impostors"]["passed"], true);
    assert_eq!(report["impostors"]["measured"], report["impostors"]["stated"]);
    assert_eq!(report["impostors"]["one_view_measured"], report["impostors"]["one_view_stated"]);
    assert!(out(&verify).contains("impostor far cards (one view, mip level 2)"), "{}", out(&verify));

    // The same tier on one thread, byte for byte.
    let again = dir.join("again.vat");
    let mut args = vec!["bake", "--out", s(&again)];
    args.extend(SMALL);
    let one_thread =
        Command::new(env!("CARGO_BIN_EXE_vat")).args(&args).env("RAYON_NUM_THREADS", "1").output().unwrap();
    assert!(one_thread.status.success(), "{}", out(&one_thread));
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());

    // A tier that states a better bound than its images give fails, loudly.
    let bytes = std::fs::read(&file).unwrap();
    for (name, edited, says) in [
        ("iou.vat", edit_bound(&bytes, |b| b.min_coverage_iou = 1.0), "coverage IoU"),
        ("colour.vat", edit_bound(&bytes, |b| b.max_mean_color_error = 0.0), "colour error"),
    ] {
        let tampered = dir.join(name);
        std::fs::write(&tampered, edited).unwrap();
        let verify = vat(&["verify", s(&tampered)]);
        assert_clean_failure(&verify, says);
        assert!(String::from_utf8_lossy(&verify.stdout).contains("impostors: FAILED"), "{}", out(&verify));
    }
}

#[test]
fn rigid_fluid_and_sprite_sources_refuse_impostors_with_the_reason() {
    let dir = scratch("refusals");
    for (source, mode) in [("shatter", "rigid"), ("splash", "fluid"), ("fountain", "sprite")] {
        let file = dir.join(format!("{source}.vat"));
        let bake = vat(&["bake", "--procgen", source, "--impostors", "--out", s(&file)]);
        assert_clean_failure(&bake, &format!("--impostors does not apply to the {mode} mode"));
        assert!(String::from_utf8_lossy(&bake.stderr).contains("skeletal and soft"), "{}", out(&bake));
        assert!(!file.exists());
    }
}

#[test]
fn impostor_options_are_checked_before_any_input_is_read() {
    let dir = scratch("options");
    let file = dir.join("x.vat");
    for (flag, value) in [
        ("--impostor-tile", "48"),
        ("--impostor-tile", "1024"),
        ("--impostor-views", "1"),
        ("--impostor-frames", "0"),
    ] {
        let bake = vat(&["bake", "--impostors", flag, value, "--out", s(&file)]);
        assert_clean_failure(&bake, flag);
        assert!(!file.exists());
    }
    // The tier's options need --impostors.
    let bake = vat(&["bake", "--impostor-tile", "16", "--out", s(&file)]);
    assert!(!bake.status.success() && String::from_utf8_lossy(&bake.stderr).contains("--impostors"));
    assert!(!file.exists());
    // Too many images for one tier (2 clips x 200 frames), refused with the flag to lower.
    let bake =
        vat(&["bake", "--clips", "walk,wave", "--impostors", "--impostor-frames", "200", "--out", s(&file)]);
    assert_clean_failure(&bake, "--impostor-frames");
    assert!(!file.exists());
}

#[test]
fn without_impostors_a_file_has_no_tier() {
    let dir = scratch("plain");
    let file = dir.join("plain.vat");
    let bake = vat(&["bake", "--clips", "walk", "--out", s(&file)]);
    assert!(bake.status.success(), "{}", out(&bake));
    assert!(!out(&bake).contains("impostors:"));
    let bytes = std::fs::read(&file).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    assert!(asset.manifest().impostors.is_none());
    assert!(asset.manifest().format_version() < vat_core::container::FORMAT_VERSION_IMPOSTORS);
}

/// `vat render` draws a file's own tier unless `--impostors off`, and says how many of its draws
/// were cards; `--impostors` keeps a tier the file has (nothing baked in memory).
#[test]
fn render_draws_the_files_tier_and_impostors_off_draws_none() {
    let dir = scratch("render");
    let file = dir.join("humanoid.vat");
    let mut args = vec!["bake", "--out", s(&file)];
    args.extend(SMALL);
    let bake = vat(&args);
    assert!(bake.status.success(), "{}", out(&bake));
    let png = dir.join("crowd.png");
    let render = |extra: &[&str]| {
        let mut args = vec!["render", s(&file), "--out", s(&png), "--instances", "400"];
        args.extend(["--culling", "gpu", "--size", "160x90"]);
        args.extend(extra);
        let o = vat(&args);
        assert!(o.status.success(), "{}", out(&o));
        out(&o)
    };
    // GPU culling draws the cards in two draws: the near cards (three views), the far (one view).
    for (extra, cards) in [(&[][..], 2), (&["--impostors"][..], 2), (&["--impostors", "off"][..], 0)] {
        let text = render(extra);
        assert!(text.contains(&format!("({cards} of the main draws impostor cards)")), "{extra:?}: {text}");
        assert_eq!(text.contains("the asset's own tier"), !extra.is_empty() && cards > 0, "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bake_with_material_variants_gives_each_a_colour_set_and_says_which_it_leaves_out() {
    let dir = scratch("variants");
    let glb = dir.join("variants.glb");
    std::fs::write(&glb, vat_procgen::testdata::textured_humanoid_with_variants_glb()).unwrap();
    let file = dir.join("variants.vat");
    let bake_with = |frames: u32| {
        let frames = frames.to_string();
        let args = ["bake", s(&glb), "--out", s(&file), "--impostors", "--impostor-views", "2"];
        let bake = vat(&[&args[..], &["--impostor-tile", "8", "--impostor-frames", &frames]].concat());
        assert!(bake.status.success(), "{}", out(&bake));
        out(&bake)
    };
    let text = bake_with(1);
    assert!(text.contains("colour for the authored materials and 2 material variant(s)"), "{text}");
    assert!(!text.contains("material variant(s) after"), "{text}");
    let inspect = String::from_utf8_lossy(&vat(&["inspect", s(&file)]).stdout).into_owned();
    assert!(
        inspect.contains("impostor colour: the authored materials and 2 material variant(s)"),
        "{inspect}"
    );
    let verify = vat(&["verify", s(&file), "--source", s(&glb)]);
    assert!(verify.status.success() && out(&verify).contains("impostors: PASSED"), "{}", out(&verify));
    // So many frames that 256 layers hold two colour sets: the second variant is left out, said so.
    let layers: u32 = text
        .split(" layers (1 frames per clip)")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the layer count in {text}"));
    let text = bake_with(128 / layers);
    assert!(text.contains("colour for the authored materials and 1 material variant(s)"), "{text}");
    assert!(text.contains("impostors leave out: 1 material variant(s) after the first 1"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
