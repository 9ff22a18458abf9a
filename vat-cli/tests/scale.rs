//! `vat render` and `vat bake` with assets of any scale and with meshes that cannot simplify, end to
//! end through the binary on the software Vulkan driver:
//!
//! - every `--camera` form that `vat render --help` prints renders; bad values fail with one line;
//! - a centimetre-scale humanoid (the procedural one scaled by 100), one 83 units tall (the size of
//!   a centimetre-scale fox), a 0.2 m one and a box at both
//!   scales cover the same share of the image as their metre-scale twin, within a factor of 1.25,
//!   with no framing flags (the old fixed camera put the camera inside a centimetre mesh and showed
//!   a 0.2 m crowd as dots);
//! - `vat bake` of a 12-triangle box and of an unwelded mesh prints one warning line per dropped LOD
//!   and writes a chain that never repeats a level.
//!
//! Fixtures are generated here: the humanoid rig from `vat_procgen`, scaled with
//! `Rig::scaled`, and boxes that replace its body mesh (skinned rigidly to its first joint, so they
//! keep the humanoid's clips).

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glam::Vec3;
use vat_bake::prepare::{BakeOptions, prepare};
use vat_bake::rig::{MAX_INFLUENCES, Mesh, MeshBinding, MeshRole, Rig};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

/// A fresh empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-scale-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The humanoid with its body replaced by a box of `size` (x, y, z; standing on y = 0), skinned
/// rigidly to the first joint; `welded`: 8 shared corners (12 triangles), else every triangle with
/// its own 3 vertices (36 vertices).
fn box_rig(size: Vec3, welded: bool) -> Rig {
    let mut rig = vat_procgen::humanoid();
    let corners: Vec<Vec3> = (0..8u32)
        .map(|i| {
            let c = Vec3::new((i & 1) as f32 - 0.5, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32 - 0.5);
            c * size
        })
        .collect();
    #[rustfmt::skip]
    let tris: Vec<u32> = vec![
        0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
        2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5,
    ];
    let (positions, indices): (Vec<Vec3>, Vec<u32>) = if welded {
        (corners, tris)
    } else {
        (tris.iter().map(|&i| corners[i as usize]).collect(), (0..36).collect())
    };
    let n = positions.len();
    let centre = Vec3::new(0.0, size.y * 0.5, 0.0);
    let mut weights = [0.0f32; MAX_INFLUENCES];
    weights[0] = 1.0;
    let body = Mesh {
        name: "box".into(),
        binding: MeshBinding::Skinned { skin: 0 },
        role: MeshRole::Body,
        normals: positions.iter().map(|p| (*p - centre).normalize()).collect(),
        positions,
        tangents: None,
        uvs: None,
        colors: None,
        material_ids: vec![1; n],
        indices,
        influence_count: 4,
        joints: vec![[0; MAX_INFLUENCES]; n],
        weights: vec![weights; n],
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    };
    rig.meshes.retain(|m| m.role != MeshRole::Body);
    rig.meshes.insert(0, body);
    rig
}

/// Bakes `rig` into `dir/name.vat`.
fn bake_file(dir: &Path, name: &str, rig: &Rig) -> PathBuf {
    let path = dir.join(format!("{name}.vat"));
    let bake = prepare(rig, &BakeOptions::default()).unwrap();
    std::fs::write(&path, bake.to_vat_bytes().unwrap()).unwrap();
    path
}

/// Decoded RGBA8 pixels of a PNG.
fn read_png(path: &Path) -> (Vec<u8>, [u32; 2]) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    assert_eq!(info.color_type, png::ColorType::Rgba);
    (buf, [info.width, info.height])
}

/// Share of the pixels that are not the background (the top-left pixel's colour: the sky, with
/// `--no-ground`), and the number of distinct colours.
fn coverage(image: &[u8]) -> (f64, usize) {
    let bg = &image[..4];
    let pixels = image.len() / 4;
    let covered = image.chunks_exact(4).filter(|p| *p != bg).count();
    let distinct: std::collections::BTreeSet<&[u8]> = image.chunks_exact(4).collect();
    (covered as f64 / pixels as f64, distinct.len())
}

/// `vat render ASSET` with no framing flags and no ground; the crowd's share of the image.
fn render_coverage(dir: &Path, asset: &Path, extra: &[&str]) -> f64 {
    let out = asset.with_extension("png");
    let mut args = vec!["render", s(asset), "--instances", "25", "--size", "192x108", "--out", s(&out)];
    args.extend_from_slice(extra);
    ok(&vat(&args));
    let (image, size) = read_png(&out);
    assert_eq!(size, [192, 108]);
    let (share, colours) = coverage(&image);
    println!(
        "{}: {:.2} % covered, {colours} colours",
        asset.strip_prefix(dir).unwrap().display(),
        share * 100.0
    );
    assert!(colours > 20, "{}: a blank image ({colours} colours)", asset.display());
    share
}

#[test]
fn every_camera_form_the_help_prints_renders() {
    let help = ok(&vat(&["render", "--help"]));
    // The examples are the backticked `--camera ...` forms of the help text.
    let forms: Vec<&str> = help.split('`').skip(1).step_by(2).filter(|f| f.starts_with("--camera")).collect();
    assert!(forms.len() >= 2, "the help shows no --camera example: {help}");
    assert!(forms.iter().any(|f| f.contains(',')), "the comma form is shown: {forms:?}");
    let dir = scratch("camera");
    for (i, form) in forms.iter().enumerate() {
        let out = dir.join(format!("camera-{i}.png"));
        let mut args = vec!["render", "--instances", "4", "--size", "48x32"];
        args.extend(form.split_whitespace());
        args.extend(["--out", s(&out)]);
        let stdout = ok(&vat(&args));
        assert!(out.is_file() && stdout.contains("rendered 4 characters"), "{form}: {stdout}");
    }
    // The `=` form and a comma list followed by other flags work as well.
    let out = dir.join("equals.png");
    ok(&vat(&[
        "render",
        "--camera=-30,12,-30,0,0.8,0",
        "--size",
        "48x32",
        "--instances",
        "4",
        "--out",
        s(&out),
    ]));
    assert!(out.is_file());
}

#[test]
fn a_bad_camera_fails_with_one_line_before_rendering() {
    let dir = scratch("bad-camera");
    let out = dir.join("x.png");
    for (camera, names) in [
        ("1,2,3", "3 numbers given"),
        ("1,2,3,4,5,6,7", "7 numbers given"),
        ("1,2,3,x,5,6", "\"x\" is not a number"),
        ("1,2,3,4,5,inf", "not finite"),
        ("1,2,3,1,2,3", "same point"),
        ("-1,2,3,-1,2,3", "same point"),
    ] {
        let result = vat(&["render", "--camera", camera, "--size", "16x16", "--out", s(&out)]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(!result.status.success(), "{camera}: accepted");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{camera}: {stderr}");
        assert!(stderr.contains("--camera") && stderr.contains(names), "{camera}: {stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn assets_of_any_scale_frame_like_the_humanoid() {
    let dir = scratch("frame");
    let humanoid = vat_procgen::humanoid();
    let height = {
        let bake = prepare(&humanoid, &BakeOptions { frames: Some(2), ..Default::default() }).unwrap();
        bake.manifest().vertex_animation.as_ref().unwrap().bounds.extent[1]
    };
    let metres = render_coverage(&dir, &bake_file(&dir, "humanoid", &humanoid), &["--no-ground"]);
    assert!(metres > 0.02, "the humanoid crowd covers {metres}");
    let boxes = render_coverage(
        &dir,
        &bake_file(&dir, "box", &box_rig(Vec3::new(0.5, 1.8, 0.3), true)),
        &["--no-ground"],
    );
    for (name, factor, reference) in [
        ("humanoid-cm", 100.0, metres),
        ("humanoid-83-units", 83.0 / height, metres),
        ("humanoid-0.2m", 0.2 / height, metres),
        ("box-cm", 100.0, boxes),
        ("box-0.2m", 0.2 / 1.8, boxes),
    ] {
        let rig =
            if name.starts_with("box") { box_rig(Vec3::new(0.5, 1.8, 0.3), true) } else { humanoid.clone() };
        let share = render_coverage(&dir, &bake_file(&dir, name, &rig.scaled(factor)), &["--no-ground"]);
        let ratio = share / reference;
        assert!(
            (1.0 / 1.25..=1.25).contains(&ratio),
            "{name}: {share} of the image vs {reference} (x{ratio:.3})"
        );
    }
    // A differently shaped centimetre asset, a fox-sized solid box (40 x 83 x 140 units): its longest
    // side sets the scale, so it is neither a dot nor around the camera. A solid box fills more of
    // its bounds than a humanoid (the metre box above covers 2.4 times the humanoid's share), so
    // shapes are compared within a factor of 4 only.
    let fox = render_coverage(
        &dir,
        &bake_file(&dir, "fox-box", &box_rig(Vec3::new(40.0, 83.0, 140.0), true)),
        &["--no-ground"],
    );
    assert!((metres / 4.0..=metres * 4.0).contains(&fox), "fox-sized box: {fox} vs the humanoid's {metres}");
    // With the ground (the default) the centimetre crowd renders too: the ground is under every
    // character, so the lower image rows have no sky.
    let cm = bake_file(&dir, "ground-cm", &humanoid.scaled(100.0));
    let out = dir.join("ground-cm.png");
    ok(&vat(&["render", s(&cm), "--instances", "25", "--size", "96x54", "--out", s(&out)]));
    let (image, [w, h]) = read_png(&out);
    let sky = &image[..4];
    let lower = &image[(w * h * 4 * 2 / 3) as usize..];
    assert!(lower.chunks_exact(4).all(|p| p != sky), "sky below the crowd: the ground does not cover it");
}

#[test]
fn bake_prints_one_line_per_dropped_lod_and_never_repeats_a_level() {
    let dir = scratch("dropped");
    let mut welded_levels = 0;
    for (name, welded) in [("box", true), ("unwelded-box", false)] {
        let glb = dir.join(format!("{name}.glb"));
        vat_bake::export::write_glb(&box_rig(Vec3::new(0.5, 1.8, 0.3), welded), &glb).unwrap();
        let out = dir.join(format!("{name}.vat"));
        let stdout = ok(&vat(&["bake", s(&glb), "--out", s(&out), "--clips", "walk"]));
        let dropped: Vec<&str> = stdout.lines().filter(|l| l.contains("warning: LOD")).collect();
        println!("{name}:\n{stdout}");
        let inspect = ok(&vat(&["inspect", s(&out), "--json"]));
        let json: serde_json::Value = serde_json::from_str(&inspect).unwrap();
        let lods = json["lods"].as_array().unwrap();
        assert_eq!(lods.len() + dropped.len(), 5, "{name}: 5 levels requested\n{stdout}");
        assert!(!dropped.is_empty(), "{name}: a 12-triangle box cannot keep 5 levels");
        for line in &dropped {
            assert!(line.trim_start().starts_with("warning: LOD "), "{line}");
            assert!(line.contains("dropped: simplification"), "{line}");
        }
        if welded {
            welded_levels = lods.len();
        } else {
            // Welded by position, the unwelded box simplifies as the welded one does (it kept LOD 0
            // only before the chain welded).
            assert_eq!(lods.len(), welded_levels, "{name}: as many levels as the welded box\n{inspect}");
            let out = dir.join(format!("{name}-1.vat"));
            ok(&vat(&["bake", s(&glb), "--out", s(&out), "--clips", "walk", "--lods", "1"]));
            // A one-LOD crowd casts shadows at every distance (shadow_max_lod clamps to LOD 0); the
            // old chain of five copies drew everything at LOD 4, past shadow_max_lod, shadowless.
            let shadowed = dir.join(format!("{name}.png"));
            let plain = dir.join(format!("{name}-plain.png"));
            let render = |png: &Path, extra: &[&str]| {
                let mut args =
                    vec!["render", s(&out), "--instances", "400", "--size", "96x54", "--out", s(png)];
                args.extend_from_slice(extra);
                ok(&vat(&args))
            };
            let report = render(&shadowed, &[]);
            render(&plain, &["--no-shadows"]);
            let drawn: u64 =
                report.split("drawn ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            let shadow_draws: u64 =
                report.split(" main, ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            assert!(drawn > 300 && shadow_draws > 0, "{report}");
            let (a, b) = (read_png(&shadowed).0, read_png(&plain).0);
            let differing = a.chunks_exact(4).zip(b.chunks_exact(4)).filter(|(p, q)| p != q).count();
            assert!(differing * 100 > a.len() / 4, "shadows change only {differing} pixels\n{report}");
        }
        // Strictly fewer triangles and strictly later switches, none at the old 0.01 m floor.
        let tris: Vec<u64> = lods.iter().map(|l| l["triangles"].as_u64().unwrap()).collect();
        assert!(tris.windows(2).all(|w| w[1] * 10 < w[0] * 9), "{name}: {tris:?}");
        let distances: Vec<f64> = lods.iter().filter_map(|l| l["max_distance_m"].as_f64()).collect();
        assert_eq!(distances.len(), lods.len() - 1, "only the last LOD is unbounded");
        assert!(
            distances.iter().all(|&d| d > 1.0),
            "{name}: a switch closer than the box's size: {distances:?}"
        );
        assert!(distances.windows(2).all(|w| w[1] > w[0]), "{name}: {distances:?}");
    }
}
