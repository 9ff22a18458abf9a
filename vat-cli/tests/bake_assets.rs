//! `vat bake` on assets a user brings: the memory budget holds the real peak of the process, the
//! looping choices and what was left out are printed, `--help` says it, misuse is refused.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use vat_procgen::testdata::{LargeRigShape, large_rig};

fn vat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vat")).args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-cli-assets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `peak memory X MiB` from bake's summary, in bytes.
fn printed_peak(stdout: &str) -> f64 {
    let at = stdout.find("peak memory ").expect("bake prints its peak memory") + "peak memory ".len();
    let mib: f64 = stdout[at..].split_whitespace().next().unwrap().parse().unwrap();
    mib * 1_048_576.0
}

#[test]
fn max_memory_bounds_the_peak_of_the_process() {
    let dir = scratch("memory");
    // 60 primitives of 12 x 12 (8,640 vertices), 18 joints, 240 frames: 16.6 MB of Packed64 texture.
    let shape = LargeRigShape { primitives: 60, grid: 12, joints: 18, frames: 240 };
    let glb = dir.join("large.glb");
    vat_bake::export::write_glb(&large_rig(shape), &glb).unwrap();
    // The tightest budget (in 8 MiB steps) the bake accepts: the process's real peak stays under it,
    // in the default format and in the compressed tier (whose encoder skins its source frames again
    // a frame at a time instead of holding them).
    for format in ["packed64", "skin-residual"] {
        let out = dir.join(format!("large-{format}.vat"));
        let mut accepted = None;
        for mib in (16..=256u64).step_by(8) {
            let budget = format!("{mib}M");
            let args = [
                "bake",
                s(&glb),
                "--out",
                s(&out),
                "--max-memory",
                &budget,
                "--lods",
                "2",
                "--format",
                format,
            ];
            let bake = vat(&args);
            let (stdout, stderr) = text(&bake);
            if !bake.status.success() {
                assert!(stderr.contains("memory budget"), "{format} {budget}: {stderr}");
                assert!(!out.exists(), "a refused bake writes nothing");
                continue;
            }
            let peak = printed_peak(&stdout);
            println!("{format}: tightest accepted budget {mib} MiB: peak {:.1} MiB", peak / 1_048_576.0);
            assert!(peak <= (mib << 20) as f64, "{stdout}");
            assert!(!stdout.contains("exceeded"), "{stdout}");
            accepted = Some(mib);
            break;
        }
        assert!(accepted.is_some(), "no budget up to 256 MiB accepted the {format} bake");
    }
    // The texture alone is more than this budget: refused before allocating, nothing written.
    let small = dir.join("small.vat");
    let refused = vat(&["bake", s(&glb), "--out", s(&small), "--max-memory", "12M"]);
    let (_, stderr) = text(&refused);
    assert!(!refused.status.success());
    assert!(stderr.contains("memory budget") || stderr.contains("--max-memory"), "{stderr}");
    assert!(!small.exists());
}

#[test]
fn bake_prints_what_it_baked_and_how_each_clip_plays() {
    let dir = scratch("clips");
    let glb = dir.join("small.glb");
    std::fs::write(&glb, vat_procgen::testdata::small_skinned_glb()).unwrap();
    let out = dir.join("small.vat");
    let bake = vat(&["bake", s(&glb), "--out", s(&out)]);
    let (stdout, stderr) = text(&bake);
    assert!(bake.status.success(), "{stderr}");
    assert!(stdout.contains("1 skinned + 0 rigid meshes"), "{stdout}");
    assert!(stdout.contains("24 of 24 scene vertices"), "{stdout}");
    assert!(stdout.contains("clip \"sway\" loops (its last pose is 0.000 mm from its first"), "{stdout}");
    assert!(stdout.contains("verified vat:") && stdout.contains("PASSED"), "{stdout}");
    // --once overrides the seam; the clip then stores its end pose too.
    let once = vat(&["bake", s(&glb), "--out", s(&out), "--once", "sway"]);
    let (stdout, stderr) = text(&once);
    assert!(once.status.success(), "{stderr}");
    assert!(stdout.contains("clip \"sway\" plays once (chosen with --loop/--once)"), "{stdout}");
    let unknown = vat(&["bake", s(&glb), "--out", s(&out), "--loop", "dance"]);
    assert!(!unknown.status.success());
    assert!(text(&unknown).1.contains("--loop"), "{}", text(&unknown).1);
}

#[test]
fn bake_refuses_to_overwrite_its_input() {
    let dir = scratch("overwrite");
    let glb = dir.join("small.glb");
    let bytes = vat_procgen::testdata::small_skinned_glb();
    std::fs::write(&glb, &bytes).unwrap();
    let bake = vat(&["bake", s(&glb), "--out", s(&glb)]);
    assert!(!bake.status.success());
    assert!(text(&bake).1.contains("--out names the input file"), "{}", text(&bake).1);
    assert_eq!(std::fs::read(&glb).unwrap(), bytes, "the input is untouched");
}

#[test]
fn bake_help_describes_the_choices() {
    let help = vat(&["bake", "--help"]);
    let (stdout, _) = text(&help);
    for flag in ["--loop", "--once", "--accept-influence-loss", "--clips", "--skin", "--max-memory", "--lods"]
    {
        assert!(stdout.contains(flag), "bake --help lacks {flag}:\n{stdout}");
    }
    assert!(stdout.contains("its last pose returns to its first"), "{stdout}");
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_pipe_status() {
    let dir = scratch("pipe");
    let out = dir.join("h.vat");
    assert!(vat(&["bake", "--out", s(&out), "--clips", "wave", "--frames", "4"]).status.success());
    for args in [vec!["inspect", s(&out)], vec!["verify", s(&out)], vec!["inspect", s(&out), "--json"]] {
        // A pipe whose read end is closed before the process starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let done = Command::new(env!("CARGO_BIN_EXE_vat"))
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: quiet, but printed {stderr}");
    }
}

#[test]
fn names_from_files_cannot_drive_the_terminal() {
    let dir = scratch("terminal");
    let mut gltf = vat_procgen::testdata::small_skinned_gltf();
    let evil = "sway\u{1b}]0;pwned\u{7}\u{1b}[31m\r\nvat: error: forged";
    gltf["animations"][0]["name"] = serde_json::json!(evil);
    let input = dir.join("evil.gltf");
    std::fs::write(&input, serde_json::to_vec(&gltf).unwrap()).unwrap();
    let out = dir.join("evil.vat");
    let bake = vat(&["bake", s(&input), "--out", s(&out)]);
    let (stdout, stderr) = text(&bake);
    assert!(bake.status.success(), "{stderr}");
    let inspect = vat(&["inspect", s(&out)]);
    let (inspect_out, _) = text(&inspect);
    // A mismatching source makes an error that names the clip.
    let verify = vat(&["verify", s(&out)]);
    let (_, verify_err) = text(&verify);
    assert!(!verify.status.success());
    assert_eq!(verify_err.trim_end().lines().count(), 1, "{verify_err}");
    for (what, printed) in [("bake", &stdout), ("inspect", &inspect_out), ("verify error", &verify_err)] {
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{7}') && !printed.contains('\r'),
            "{what}: {printed:?}"
        );
        assert!(!printed.lines().any(|l| l.starts_with("vat: error: forged")), "{what}: {printed:?}");
    }
    assert!(inspect_out.contains("sway\\u{1b}"), "{inspect_out}");
}

#[test]
fn render_refuses_unusable_view_values_and_its_own_input_as_output() {
    let dir = scratch("render-args");
    let asset = dir.join("h.vat");
    assert!(vat(&["bake", "--out", s(&asset), "--clips", "wave", "--frames", "4"]).status.success());
    let before = std::fs::read(&asset).unwrap();
    let png = dir.join("x.png");
    for (flag, value) in [
        ("--fov", "0"),
        ("--fov", "NaN"),
        ("--fov", "720"),
        ("--time", "NaN"),
        ("--time", "inf"),
        ("--time", "-1"),
        ("--lod-bias", "NaN"),
        ("--lod-bias", "1e9"),
    ] {
        let arg = format!("{flag}={value}");
        let run = vat(&["render", s(&asset), "--instances", "4", "--out", s(&png), &arg]);
        let (_, stderr) = text(&run);
        assert!(!run.status.success(), "{flag} {value} accepted");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
        assert!(!png.exists());
    }
    let same = vat(&["render", s(&asset), "--instances", "4", "--out", s(&asset)]);
    assert!(!same.status.success());
    assert!(text(&same).1.contains("--out names the input asset"), "{}", text(&same).1);
    // A hard link to the input is the same file too.
    let link = dir.join("link.vat");
    std::fs::hard_link(&asset, &link).unwrap();
    let linked = vat(&["render", s(&asset), "--instances", "4", "--out", s(&link)]);
    assert!(!linked.status.success(), "{}", text(&linked).1);
    assert_eq!(std::fs::read(&asset).unwrap(), before, "the asset is untouched");
}

#[test]
fn reads_of_vat_files_are_bounded_and_regular_files_only() {
    let dir = scratch("bounded-reads");
    let asset = dir.join("h.vat");
    assert!(vat(&["bake", "--out", s(&asset), "--clips", "wave", "--frames", "4"]).status.success());
    let fifo = dir.join("fifo.vat");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let png = dir.join("x.png");
    // /dev/zero reports a size of 0 and never ends; a FIFO would block: both refused before reading.
    for path in ["/dev/zero", s(&fifo)] {
        for command in [vec!["inspect", path], vec!["verify", path], vec!["render", path, "--out", s(&png)]] {
            let run = vat(&command);
            let (_, stderr) = text(&run);
            assert!(!run.status.success(), "{command:?}");
            assert!(stderr.contains("not a regular file"), "{command:?}: {stderr}");
        }
    }
    // render now has the same file budget as inspect and verify.
    let small = vat(&["render", s(&asset), "--out", s(&png), "--instances", "1", "--max-memory", "20K"]);
    assert!(text(&small).1.contains("memory budget"), "{}", text(&small).1);
    // And --instances is bounded by it, with the numbers.
    let many = vat(&["render", s(&asset), "--out", s(&png), "--instances", "100000000"]);
    let (_, stderr) = text(&many);
    assert!(!many.status.success());
    assert!(stderr.contains("--instances 100000000") && stderr.contains("16777216"), "{stderr}");
    assert!(!png.exists());
}

/// Every `--format` renders (they used to fail at upload): a small bake in each, rendered by both
/// backends into a PNG.
#[test]
fn render_draws_assets_of_every_format_on_both_backends() {
    let dir = scratch("every-format");
    for format in ["packed64", "unorm16", "f16", "f32", "unorm8", "split8"] {
        let asset = dir.join(format!("{format}.vat"));
        let bake = vat(&["bake", "--out", s(&asset), "--clips", "wave", "--frames", "4", "--format", format]);
        assert!(bake.status.success(), "{format}: {}", text(&bake).1);
        for backend in ["wgpu", "vulkan"] {
            let png = dir.join(format!("{format}-{backend}.png"));
            let args = [
                "render",
                s(&asset),
                "--instances",
                "4",
                "--size",
                "64x48",
                "--backend",
                backend,
                "--out",
                s(&png),
            ];
            let run = vat(&args);
            assert!(run.status.success(), "{format} on {backend}: {}", text(&run).1);
            let written = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
            assert!(written > 0, "{format} on {backend}: no PNG written");
        }
    }
}
