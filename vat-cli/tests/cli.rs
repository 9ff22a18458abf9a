//! The `vat` binary end to end: bake, inspect, verify and export-glb, render's `drawn N of M` line in both
//! culling modes, and bad input giving one line on stderr, a non-zero exit and no output file.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

/// A fresh empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A failure: non-zero exit, exactly one line on stderr naming `names`, no panic or backtrace.
fn assert_clean_failure(out: &Output, names: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected failure, got success; stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr is not one line:\n{stderr}");
    assert!(stderr.contains(names), "stderr does not name {names:?}: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
}

#[test]
fn bake_inspect_verify_the_procedural_humanoid() {
    let dir = scratch("procgen");
    let out = dir.join("humanoid.vat");
    let bake = vat(&["bake", "--out", s(&out), "--clips", "walk,wave", "--bones"]);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    assert!(out.is_file());

    let inspect = vat(&["inspect", s(&out), "--json"]);
    assert!(inspect.status.success());
    let json: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    let clips = json["clips"].as_array().unwrap();
    assert_eq!(clips.len(), 2);
    assert_eq!(clips[0]["name"], "walk");
    assert!(clips[0]["stride_m"].as_f64().unwrap() > 1.0);
    assert_eq!(json["lods"].as_array().unwrap().len(), 5);
    assert_eq!(json["bytes_per_vertex_frame"], 8);

    let verify = vat(&["verify", s(&out), "--json"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    for key in ["position_max_error_mm", "position_mean_error_mm", "normal_max_error_deg", "quantum_mm"] {
        assert!(report[key].is_number(), "verify --json lacks {key}");
    }
    assert!(report["position_max_error_mm"].as_f64().unwrap() <= report["quantum_mm"].as_f64().unwrap());
    let human = vat(&["inspect", s(&out)]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("walk"));
}

#[test]
fn export_glb_then_bake_it() {
    let dir = scratch("glb");
    let glb = dir.join("humanoid.glb");
    let export = vat(&["export-glb", s(&glb)]);
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let out = dir.join("from-glb.vat");
    let bake = vat(&["bake", s(&glb), "--out", s(&out), "--clips", "run", "--format", "f16", "--lods", "2"]);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    let verify = vat(&["verify", s(&out), "--source", s(&glb)]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
}

#[test]
fn bad_input_fails_with_one_line_and_leaves_no_file() {
    let dir = scratch("bad");
    let out = dir.join("out.vat");
    // A truncated .glb.
    let glb = dir.join("humanoid.glb");
    assert!(vat(&["export-glb", s(&glb)]).status.success());
    let bytes = std::fs::read(&glb).unwrap();
    let truncated = dir.join("truncated.glb");
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    assert_clean_failure(&vat(&["bake", s(&truncated), "--out", s(&out)]), "truncated.glb");
    // A .gltf whose buffer file is missing.
    let gltf = dir.join("missing-buffer.gltf");
    std::fs::write(
        &gltf,
        r#"{"asset":{"version":"2.0"},"buffers":[{"uri":"nowhere.bin","byteLength":12}],
            "bufferViews":[{"buffer":0,"byteLength":12}],
            "accessors":[{"bufferView":0,"componentType":5126,"count":1,"type":"VEC3","min":[0,0,0],"max":[0,0,0]}],
            "meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}],"nodes":[{"mesh":0}],"scenes":[{"nodes":[0]}]}"#,
    )
    .unwrap();
    assert_clean_failure(&vat(&["bake", s(&gltf), "--out", s(&out)]), "nowhere.bin");
    // Not a file at all.
    assert_clean_failure(&vat(&["bake", s(&dir.join("absent.glb")), "--out", s(&out)]), "absent.glb");
    // Unknown clip, bad option values.
    assert_clean_failure(&vat(&["bake", "--out", s(&out), "--clips", "moonwalk"]), "moonwalk");
    assert_clean_failure(&vat(&["bake", "--out", s(&out), "--fps", "0"]), "--fps");
    assert_clean_failure(&vat(&["bake", "--out", s(&out), "--max-texture-dim", "64"]), "64");
    // A corrupt .vat for inspect and verify.
    let corrupt = dir.join("corrupt.vat");
    std::fs::write(&corrupt, b"VAT\0garbage").unwrap();
    assert_clean_failure(&vat(&["inspect", s(&corrupt)]), "corrupt.vat");
    assert_clean_failure(&vat(&["verify", s(&corrupt)]), "corrupt.vat");
    assert!(!out.exists(), "a failed bake left {}", out.display());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') || n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

/// Every case of the bad-input corpus (`tests/data/bad/CASES.tsv`, generated by
/// `tests/tests/bad_inputs.rs`) through the binary: non-zero exit, one line on stderr naming the file
/// (or, for a bad `render` flag, the flag) and the problem, no panic or backtrace (even with `RUST_BACKTRACE=1`), no output file left behind.
#[test]
fn the_bad_input_corpus_fails_cleanly() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/bad");
    let cases = std::fs::read_to_string(corpus.join("CASES.tsv")).unwrap();
    let dir = scratch("corpus");
    let out_path = dir.join("out.vat");
    let png_path = dir.join("out.png");
    let (mut runs, mut files, mut problems) = (0, std::collections::BTreeSet::new(), Vec::new());
    for line in cases.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 4, "bad CASES.tsv line {line:?}");
        let (file, command, args, expect) = (cols[0], cols[1], cols[2], cols[3]);
        let input = corpus.join(file);
        let extra: Vec<&str> = args.split_whitespace().collect();
        files.insert(file);
        let commands: Vec<Vec<&str>> = match command {
            "load" => vec![vec!["inspect", s(&input)], vec!["verify", s(&input)]],
            "bake" => vec![vec!["bake", s(&input), "--out", s(&out_path)]],
            "render" => vec![vec!["render", s(&input), "--out", s(&png_path)]],
            "import-openvat" | "import-houdini" => vec![vec![command, s(&input), "--out", s(&out_path)]],
            other => panic!("unknown command {other:?} in {line:?}"),
        };
        for mut argv in commands {
            argv.extend(&extra);
            let out = Command::new(env!("CARGO_BIN_EXE_vat"))
                .args(&argv)
                .env("RUST_BACKTRACE", "1")
                .current_dir(&dir)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
            if out.status.success()
                || stderr.trim_end().lines().count() != 1
                // A bad flag of render is about the flag, not the file: it names the flag.
                || (command != "render" && !stderr.contains(file))
                || !stderr.contains(expect)
                || stderr.contains("panicked")
                || stderr.contains("backtrace")
                || !left.is_empty()
            {
                problems.push(format!(
                    "{argv:?}: status {}, stderr {stderr:?} (expected one line naming {file:?} and \
                     saying {expect:?}), left behind {left:?}",
                    out.status
                ));
            }
            runs += 1;
        }
    }
    println!("{runs} runs over {} files", files.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(files.len() >= 50, "{}", files.len());
}

/// A rigid glTF with materials bakes them (`vat bake --mode rigid`); one whose image is missing or
/// not an image still bakes, the texture left out with a note naming why.
#[test]
fn a_rigid_gltf_bakes_its_materials_and_image_problems_are_notes() {
    let dir = scratch("rigid-materials");
    let glb = dir.join("pieces.glb");
    std::fs::write(&glb, vat_procgen::testdata::textured_rigid_glb()).unwrap();
    let out = dir.join("pieces.vat");
    let bake = vat(&["bake", s(&glb), "--mode", "rigid", "--out", s(&out)]);
    let stdout = String::from_utf8_lossy(&bake.stdout);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    assert!(stdout.contains("2 materials"), "{stdout}");
    let inspect = vat(&["inspect", s(&out), "--json"]);
    assert!(inspect.status.success(), "{}", String::from_utf8_lossy(&inspect.stderr));
    let json: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(json["materials"].as_array().map(Vec::len), Some(2), "{json}");

    std::fs::write(dir.join("junk.png"), b"not a png at all").unwrap();
    for (uri, why) in [("missing.png", "file not found"), ("junk.png", "cannot decode it")] {
        let glb = dir.join(format!("with-{uri}.glb"));
        std::fs::write(&glb, vat_procgen::testdata::textured_rigid_glb_with_image_uri(uri))
            .expect("the test folder is writable");
        let out = dir.join(format!("with-{uri}.vat"));
        for mode in [&["--mode", "rigid"][..], &[]] {
            let mut args = vec!["bake", s(&glb), "--out", s(&out)];
            args.extend_from_slice(mode);
            let bake = vat(&args);
            let printed =
                format!("{}{}", String::from_utf8_lossy(&bake.stdout), String::from_utf8_lossy(&bake.stderr));
            assert!(bake.status.success(), "{uri} {mode:?}: {printed}");
            let note = printed.lines().find(|l| l.contains("note:") && l.contains(uri) && l.contains(why));
            assert!(note.is_some(), "{uri} {mode:?}: no note saying {why:?}: {printed}");
            assert!(out.is_file());
            std::fs::remove_file(&out).unwrap();
        }
    }
}

#[test]
fn max_memory_accepts_binary_suffixes_and_refuses_nonsense() {
    let dir = scratch("max-memory");
    let out = dir.join("out.vat");
    let bake = vat(&["bake", "--out", s(&out), "--clips", "wave", "--lods", "1", "--max-memory", "1M"]);
    assert_clean_failure(&bake, "1048576");
    assert!(!out.exists());
    let bad = vat(&["bake", "--out", s(&out), "--max-memory", "lots"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("lots"));
}

/// Soft-body: a folder of per-frame OBJ files bakes (`--mode soft` implied), verifies against the
/// folder, and the built-in cloth verifies without `--source`; misuse fails cleanly.
#[test]
fn a_mesh_sequence_folder_bakes_and_verifies_against_its_frames() {
    let dir = scratch("soft");
    let frames = dir.join("banner");
    std::fs::create_dir_all(&frames).unwrap();
    let mut seq = vat_procgen::cloth_sequence();
    seq.positions.truncate(12); // keep the test quick
    seq.normals.as_mut().unwrap().truncate(12);
    vat_procgen::testdata::write_obj_frames(&seq, &frames, false);
    let out = dir.join("banner.vat");
    let bake = vat(&["bake", s(&frames), "--out", s(&out), "--fps", "24", "--lods", "2"]);
    let stderr = String::from_utf8_lossy(&bake.stderr);
    assert!(bake.status.success(), "{stderr}");
    assert!(stderr.contains("12 frames at 24 fps (soft-body, streamed from the files)"), "{stderr}");
    // The summary says what the source is, not "0 skinned + 1 rigid meshes".
    let stdout = String::from_utf8_lossy(&bake.stdout);
    assert!(stdout.contains(": a mesh sequence of 12 frames (one soft-body mesh), "), "{stdout}");
    assert!(!stdout.contains("rigid meshes"), "{stdout}");
    let verify = vat(&["verify", s(&out), "--source", s(&frames)]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    let inspect = String::from_utf8_lossy(&vat(&["inspect", s(&out)]).stdout).into_owned();
    assert!(inspect.contains("12 frames") && inspect.contains("24.0 fps"), "{inspect}");
    // Verified against other frames, it fails loudly: the same folder read at another rate.
    let wrong = vat(&["verify", s(&out), "--source", s(&frames), "--fps", "12"]);
    assert!(!wrong.status.success());
    // Misuse: the folder as a skeletal input, an unknown built-in source, verify without --source.
    assert_clean_failure(&vat(&["bake", s(&frames), "--mode", "skeletal", "--out", s(&out)]), "--mode soft");
    let unknown = vat(&["bake", "--procgen", "dragon", "--out", s(&out)]);
    assert!(!unknown.status.success() && String::from_utf8_lossy(&unknown.stderr).contains("cloth"));
    assert_clean_failure(&vat(&["verify", s(&out)]), "--source");

    let cloth = dir.join("cloth.vat");
    let bake = vat(&["bake", "--procgen", "cloth", "--out", s(&cloth)]);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    let verify = vat(&["verify", s(&cloth)]);
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success() && report.contains("PASSED"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads N and M of the report line `drawn N of M (submitted K), T triangles...`.
fn drawn_of(stdout: &str) -> (u32, u32) {
    let rest = stdout.split("  drawn ").nth(1).unwrap_or_else(|| panic!("no drawn line:\n{stdout}"));
    let mut words = rest.split(' ');
    let n = words.next().unwrap().parse().unwrap();
    assert_eq!(words.next(), Some("of"), "{stdout}");
    (n, words.next().unwrap().parse().unwrap())
}

/// `vat render --culling gpu` prints the CPU path's `drawn N of M` line, with the GPU's counts of
/// its frame (0 frames late). With the whole crowd in view both paths draw every instance; with a
/// camera inside the crowd the CPU path draws whole grid cells (instances beside the frustum
/// included) and the GPU path only the instances whose sphere meets the frustum, so the GPU's N is
/// at most the CPU's.
#[test]
fn render_with_gpu_culling_prints_the_drawn_line_of_the_cpu_path() {
    let dir = scratch("render-gpu-counts");
    let png = dir.join("crowd.png");
    let run = |culling: &str, extra: &[&str]| {
        let mut args =
            vec!["render", "--instances", "200", "--size", "96x54", "--out", s(&png), "--culling", culling];
        args.extend_from_slice(extra);
        let out = vat(&args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{culling}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
        stdout
    };
    for backend in ["wgpu", "vulkan"] {
        let cpu = run("cpu", &["--backend", backend]);
        let gpu = run("gpu", &["--backend", backend]);
        println!("{backend}:\n{cpu}{gpu}");
        assert_eq!(drawn_of(&gpu), drawn_of(&cpu), "{backend}: the whole crowd is in view\n{cpu}{gpu}");
        assert_eq!(drawn_of(&gpu), (200, 200), "{gpu}");
        assert!(gpu.contains("(counted on the GPU, 0 frames late)"), "{gpu}");
        assert!(gpu.contains("(submitted 200)"), "{gpu}");
        let inside = ["--camera", "10,3,10,0,0.8,0"];
        let (cpu_n, _) = drawn_of(&run("cpu", &[&["--backend", backend][..], &inside].concat()));
        let (gpu_n, m) = drawn_of(&run("gpu", &[&["--backend", backend][..], &inside].concat()));
        assert_eq!(m, 200);
        assert!(gpu_n > 0 && gpu_n <= cpu_n, "{backend}: GPU drew {gpu_n}, CPU {cpu_n}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Tightly packed RGBA8 pixels of an 8-bit RGBA PNG.
fn read_rgba(path: &Path) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgba, png::BitDepth::Eight));
    buf.truncate(info.buffer_size());
    buf
}

/// Reads S of the report line `...; draws: N main, S shadow, ...`.
fn shadow_draws_of(stdout: &str) -> u32 {
    let rest = stdout.split(" main, ").nth(1).unwrap_or_else(|| panic!("no draws line:\n{stdout}"));
    rest.split(' ').next().unwrap().parse().unwrap()
}

/// `vat render` is a host: it draws its own ground (`--no-ground` leaves the sky), and the crowd
/// casts into the CLI's own shadow map, which the CLI's ground samples: turning shadows off only
/// ever brightens pixels, and many of them.
#[test]
fn render_draws_its_own_ground_and_the_crowd_shadows_it() {
    let dir = scratch("render-host-ground");
    for backend in ["wgpu", "vulkan"] {
        let run = |name: &str, extra: &[&str]| {
            let png = dir.join(format!("{backend}-{name}.png"));
            let mut args = vec!["render", "--instances", "60", "--size", "192x108", "--backend", backend];
            args.extend_from_slice(&["--out", s(&png)]);
            args.extend_from_slice(extra);
            let out = vat(&args);
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "{name}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
            (read_rgba(&png), stdout)
        };
        let (lit, lit_out) = run("shadows", &[]);
        let (flat, flat_out) = run("no-shadows", &["--no-shadows"]);
        let (bare, _) = run("no-ground", &["--no-ground"]);
        assert!(shadow_draws_of(&lit_out) > 0, "{backend}: the crowd casts into the CLI's map\n{lit_out}");
        assert_eq!(shadow_draws_of(&flat_out), 0, "{backend}\n{flat_out}");
        let pixels = |a: &[u8], b: &[u8]| -> Vec<(i32, i32)> {
            a.chunks(4)
                .zip(b.chunks(4))
                .filter(|(p, q)| p != q)
                .map(|(p, q)| {
                    let sum = |c: &[u8]| c[..3].iter().map(|&v| i32::from(v)).sum::<i32>();
                    (sum(p), sum(q))
                })
                .collect()
        };
        let total = 192 * 108;
        let ground = pixels(&lit, &bare).len();
        assert!(ground > total / 3, "{backend}: only {ground} of {total} pixels show the ground");
        let shadowed = pixels(&lit, &flat);
        let darker = shadowed.iter().filter(|(a, b)| a < b).count();
        assert_eq!(darker, shadowed.len(), "{backend}: shadows only darken");
        // The unshadowed ground's colour: the commonest of the pixels the ground changes (the
        // crowd covers far fewer). The crowd's shadows must fall on it, not only on the crowd.
        let mut counts = std::collections::HashMap::new();
        for (p, q) in flat.chunks(4).zip(bare.chunks(4)) {
            if p != q {
                *counts.entry(p).or_insert(0u32) += 1;
            }
        }
        let ground_colour = counts.into_iter().max_by_key(|&(c, n)| (n, c)).unwrap().0;
        let on_ground = (0..total)
            .filter(|&i| flat[i * 4..i * 4 + 4] == *ground_colour && lit[i * 4..i * 4 + 4] != *ground_colour)
            .count();
        println!(
            "{backend}: {ground} ground pixels, {} darker with shadows, {on_ground} of them on the ground",
            shadowed.len()
        );
        assert!(on_ground > 50, "{backend}: only {on_ground} ground pixels darkened by the crowd's shadows");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--format skin-residual` end to end: the bake says its size and residual, inspect shows the
/// residual texture and the stated bounds, verify prints max, p99 and mean within the bound, a mesh
/// sequence bakes through a fitted skin, and a residual flag without the format is refused.
#[test]
fn bake_inspect_verify_in_skin_residual() {
    let dir = scratch("skin-residual");
    let out = dir.join("humanoid.vat");
    let bake = vat(&[
        "bake",
        "--out",
        s(&out),
        "--clips",
        "walk,wave",
        "--format",
        "skin-residual",
        "--residual-mm",
        "0.25",
    ]);
    let stdout = String::from_utf8_lossy(&bake.stdout);
    assert!(bake.status.success(), "{}", String::from_utf8_lossy(&bake.stderr));
    assert!(stdout.contains("(residual and skin) bytes/vertex/frame"), "{stdout}");
    assert!(stdout.contains("note: skin-residual:") && stdout.contains("bounds 0.25 mm, 1 deg"), "{stdout}");

    let inspect = vat(&["inspect", s(&out), "--json"]);
    assert!(inspect.status.success());
    let json: serde_json::Value = serde_json::from_slice(&inspect.stdout).expect("inspect --json is JSON");
    assert_eq!(json["format"], "SkinResidual");
    let residual = json["textures"]
        .as_array()
        .expect("textures")
        .iter()
        .find(|t| t["role"] == "skin residual")
        .expect("the residual texture is listed");
    assert!((residual["position_bound_mm"].as_f64().expect("bound") - 0.25).abs() < 1e-6);
    let size = residual["bytes_per_vertex_frame_with_skin"].as_f64().expect("size");
    assert!(size > 0.0 && size < 2.0, "{size}");
    let human = String::from_utf8_lossy(&vat(&["inspect", s(&out)]).stdout).into_owned();
    assert!(human.contains("format SkinResidual:") && human.contains("within 0.2500 mm"), "{human}");

    let verify = vat(&["verify", s(&out), "--json"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).expect("verify --json is JSON");
    assert_eq!(report["euclidean_bound"], true);
    let max = report["position_max_euclidean_error_mm"].as_f64().expect("max");
    let p99 = report["position_p99_euclidean_error_mm"].as_f64().expect("p99");
    let mean = report["position_mean_euclidean_error_mm"].as_f64().expect("mean");
    let bound = report["position_bound_mm"][0].as_f64().expect("bound");
    assert!(mean <= p99 + 1e-9 && p99 <= max && max <= bound && bound < 0.252, "{report}");
    let lines = String::from_utf8_lossy(&vat(&["verify", s(&out)]).stdout).into_owned();
    assert!(
        lines.contains("verified vat:") && lines.contains("p99") && lines.contains("(euclidean)"),
        "{lines}"
    );

    // A mesh sequence (no skeleton): its skin is fitted, the residual carries the rest.
    let cloth = dir.join("cloth.vat");
    let fitted = vat(&["bake", "--procgen", "cloth", "--out", s(&cloth), "--format", "skin-residual"]);
    let stdout = String::from_utf8_lossy(&fitted.stdout);
    assert!(fitted.status.success(), "{}", String::from_utf8_lossy(&fitted.stderr));
    assert!(stdout.contains("was fitted to the frames") && stdout.contains("verified vat:"), "{stdout}");
    assert!(
        stdout.contains("bones tried") && stdout.contains("the smallest (--fit-bones fixes the count)"),
        "{stdout}"
    );
    assert!(vat(&["verify", s(&cloth)]).status.success());
    let stray = vat(&["bake", "--out", s(&dir.join("p.vat")), "--residual-deg", "0.5"]);
    assert_clean_failure(&stray, "--residual-deg applies to --format skin-residual only");
    let stray = vat(&["bake", "--procgen", "cloth", "--out", s(&dir.join("p.vat")), "--fit-bones", "8"]);
    assert_clean_failure(&stray, "--fit-bones applies to --format skin-residual only");
}
