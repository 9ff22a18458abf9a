//! The `vat` binary at vat-core's two file gates: every writer refuses an output that is not a regular
//! file (a device, a FIFO, a folder, a symbolic link) before it reads any input, and leaves nothing
//! behind when a write fails midway (a file-size limit); inputs that are devices or FIFOs are refused
//! at once; options are checked before the input is read; budgets are charged before allocating.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn vat_bin() -> &'static str {
    env!("CARGO_BIN_EXE_vat")
}

/// Runs `vat args` with no standard input and fails the test if it runs longer than 60 s (a blocked
/// read of a FIFO would otherwise hang the test).
fn vat(args: &[&str]) -> Output {
    run(Command::new(vat_bin()).args(args))
}

fn run(cmd: &mut Command) -> Output {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{cmd:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-gates-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A failure with one line on stderr holding every word of `words`, no panic.
fn assert_refused(out: &Output, words: &[&str]) {
    let err = stderr(out);
    assert!(!out.status.success(), "expected a refusal: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line:\n{err}");
    assert!(words.iter().all(|w| err.contains(w)), "{err} lacks {words:?}");
    assert!(!err.contains("panicked"), "{err}");
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every command that writes, with its output at `out` and an input that does not exist: the
/// output is refused before the input is looked at (an input read first would say it is missing).
fn writers(out: &str, missing: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        v(&["bake", missing, "--out", out]),
        v(&["bake", missing, "--mode", "sprite", "--out", out]),
        v(&["bake", missing, "--mode", "fluid", "--out", out]),
        v(&["bake", missing, "--mode", "rigid", "--out", out]),
        v(&["export-glb", out]),
        v(&["render", missing, "--out", out]),
        v(&["import-openvat", missing, "--out", out]),
        v(&["import-houdini", missing, "--out", out]),
        v(&["export-openvat", missing, "--out", out]),
        v(&["bench", missing, "--out", out, "--no-gpu"]),
    ]
}

#[test]
fn no_writer_replaces_what_is_not_a_regular_file() {
    let dir = scratch("targets");
    let missing = dir.join("no-such-input");
    mkfifo(&dir.join("fifo"));
    std::fs::create_dir(dir.join("folder")).unwrap();
    std::fs::write(dir.join("real"), b"old").unwrap();
    std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
    let cases: [(&str, &[&str]); 4] = [
        ("fifo", &["FIFO", "refuses to replace it"]),
        ("link", &["symbolic link", "name the file it points to"]),
        ("/dev/null", &["character device", "refuses to replace it"]),
        ("no-such-folder/x.vat", &["folder does not exist"]),
    ];
    for (target, words) in cases {
        let out = if target.starts_with('/') { PathBuf::from(target) } else { dir.join(target) };
        for args in writers(s(&out), s(&missing)) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let result = vat(&args);
            // export-openvat writes a folder: a symlinked or device target is refused the same way.
            assert_refused(&result, words);
            assert!(stderr(&result).contains("--out"), "{args:?}: {}", stderr(&result));
        }
    }
    // A folder is refused by the single-file writers (export-openvat writes into one).
    for args in writers(s(&dir.join("folder")), s(&missing)) {
        if args[0] == "export-openvat" {
            continue;
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_refused(&vat(&args), &["a folder", "refuses to replace it"]);
    }
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    assert!(std::fs::symlink_metadata(dir.join("fifo")).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(dir.join("link")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(dir.join("real")).unwrap(), b"old");
    // A regular file where export-openvat's folder would go is not replaced either.
    let real = dir.join("real");
    let args = ["export-openvat", s(&missing), "--out", s(&real)];
    assert_refused(&vat(&args), &["a regular file, not a folder", "refuses to replace it"]);
    assert_eq!(std::fs::read(dir.join("real")).unwrap(), b"old");
    assert_eq!(names(&dir), ["fifo", "folder", "link", "real"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_write_past_the_file_size_limit_leaves_nothing() {
    let dir = scratch("fsize");
    let vat_file = dir.join("small.vat");
    let ok = vat(&["bake", "--out", s(&vat_file), "--clips", "walk", "--lods", "1"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let size = std::fs::metadata(&vat_file).unwrap().len();
    // `ulimit -f` counts 512-byte blocks (bash, dash): a limit well under the file.
    let blocks = (size / 512 / 4).max(1).to_string();
    let limited = |args: &[&str]| {
        let script = format!("ulimit -f {blocks} && exec \"$0\" \"$@\"");
        run(Command::new("sh").arg("-c").arg(script).arg(vat_bin()).args(args))
    };
    let out = dir.join("big.vat");
    let result = limited(&["bake", "--out", s(&out), "--clips", "walk", "--lods", "1"]);
    assert_refused(&result, &["big.vat"]);
    let folder = dir.join("openvat");
    let result = limited(&["export-openvat", s(&vat_file), "--out", s(&folder), "--format", "exr32"]);
    assert_refused(&result, &["openvat"]);
    // Neither the output, nor a temporary file, nor the output folder is left.
    assert_eq!(names(&dir), ["small.vat"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn devices_and_fifos_given_as_inputs_are_refused_at_once() {
    let dir = scratch("inputs");
    let fifo = dir.join("in.glb");
    mkfifo(&fifo);
    let out = dir.join("x.vat");
    for input in [s(&fifo), "/dev/zero"] {
        let started = Instant::now();
        assert_refused(&vat(&["bake", input, "--out", s(&out)]), &["not a regular file"]);
        assert_refused(&vat(&["inspect", input]), &["not a regular file"]);
        assert_refused(&vat(&["verify", input]), &["not a regular file"]);
        // Nothing was read: the refusal comes from the file's type, not from reading until the budget.
        assert!(started.elapsed() < Duration::from_secs(30), "{input}: {:?}", started.elapsed());
    }
    assert_eq!(names(&dir), ["in.glb"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn options_are_checked_before_any_input_is_read() {
    let dir = scratch("options");
    // A FIFO as the input: reading it first would block (the harness fails after 60 s).
    let fifo = dir.join("in.glb");
    mkfifo(&fifo);
    let out = dir.join("x.vat");
    for (args, words) in [
        (vec!["--lods", "0"], vec!["--lods"]),
        (vec!["--material-texture-size", "0"], vec!["--material-texture-size"]),
        (vec!["--fps", "0"], vec!["--fps"]),
        (vec!["--max-texture-dim", "0"], vec!["--max-texture-dim"]),
    ] {
        let mut all = vec!["bake", s(&fifo), "--out", s(&out)];
        all.extend(args);
        assert_refused(&vat(&all), &words);
    }
    // A sequence folder with a flag that does not apply to it: said before a frame is read.
    let seq = dir.join("seq");
    std::fs::create_dir(&seq).unwrap();
    mkfifo(&seq.join("f0.obj"));
    for flag in ["--root-motion", "--bones", "--tangents"] {
        assert_refused(&vat(&["bake", s(&seq), "--out", s(&out), flag]), &[flag, "does not apply"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn images_are_charged_before_they_are_decoded() {
    let dir = scratch("images");
    let bomb = vat_procgen::testdata::png_bomb(8192);
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    std::fs::write(dir.join("bomb.png"), &bomb).unwrap();
    let glb = dir.join("model.glb");
    std::fs::write(&glb, vat_procgen::testdata::textured_rigid_glb_with_image_uri("bomb.png")).unwrap();
    let out = dir.join("x.vat");
    // 8192² decodes to 64 MiB grey, then 256 MiB RGBA: refused under a 128 MiB budget, before decoding.
    let started = Instant::now();
    let result = vat(&["bake", s(&glb), "--out", s(&out), "--max-memory", "128M"]);
    assert_refused(&result, &["8192x8192", "--max-memory"]);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert!(!out.exists());
    // Between what the image needs decoded and what it is charged: either refused, or baked with a
    // real peak within the budget (before the charge came first, this bake decoded 320 MiB and then
    // reported a peak over its 300 MiB budget).
    let result = vat(&["bake", s(&glb), "--out", s(&out), "--max-memory", "300M"]);
    if result.status.success() {
        let text = String::from_utf8_lossy(&result.stdout);
        assert!(!text.contains("exceeded --max-memory"), "{text}");
    } else {
        assert_refused(&result, &["--max-memory"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Names from a file are printed with control characters escaped once (`\u{1b}`), not escaped and
/// then quoted with their backslashes escaped again.
#[test]
fn inspect_escapes_names_once() {
    let dir = scratch("escapes");
    let (mut json, bin) =
        vat_procgen::testdata::split_glb(&vat_procgen::testdata::textured_humanoid_with_variants_glb());
    json["extensions"]["KHR_materials_variants"]["variants"][0]["name"] = "r\u{1b}[2Jed".into();
    let glb = dir.join("v.glb");
    std::fs::write(
        &glb,
        vat_procgen::testdata::glb(&serde_json::to_vec(&json).expect("a JSON value serialises"), &bin),
    )
    .unwrap();
    let out = dir.join("v.vat");
    let bake = vat(&["bake", s(&glb), "--out", s(&out), "--frames", "2", "--lods", "1"]);
    assert!(bake.status.success(), "{}", stderr(&bake));
    let inspect = vat(&["inspect", s(&out)]);
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("\"r\\u{1b}[2Jed\""), "{text}");
    assert!(!text.contains("\\\\u") && !text.contains('\u{1b}'), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
