//! Stable-toolchain replay of the fuzz corpora: every file of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` (crashes found by fuzzing, kept as regression inputs) goes through
//! the function its fuzz target calls (`vat_bake::fuzzing`), and so do the bad-input files of
//! `tests/data/bad/`. None may panic; the files of `regressions/` must also keep failing cleanly or
//! succeeding as they did when fixed. The seed files are generated here: `VAT_BLESS=1` rewrites them.
//!
//! Running the fuzzers themselves needs a nightly toolchain and cargo-fuzz: `cargo xtask fuzz [SECONDS]`.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use vat_bake::fuzzing::{bake_from_args, import_and_bake, load_vat};
use vat_bake::gltf_import::import_slice;
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{BakeOptions, prepare};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fuzz target's function: `true` when the input was accepted, `false` for a typed error.
type Target = fn(&[u8]) -> bool;

/// The fuzz targets and the function each calls; `Err` is a typed error (fine), a panic is a bug.
const TARGETS: [(&str, Target); 3] = [
    ("vat_reader", |d| load_vat(d).is_ok()),
    ("gltf_bake", |d| import_and_bake(d).is_ok()),
    ("bake_args", |d| bake_from_args(d).is_ok()),
];

/// Generated seeds: `(target, file name, bytes)`. Small valid inputs of each kind, so the fuzzer
/// starts from deep inside the formats.
fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    // Seeds the project writes itself (no third-party file is copied into the repository): the
    // small skinned glTF as .gltf and .glb, and the procedural humanoid's .glb export.
    let small_gltf = serde_json::to_vec(&vat_bake::testdata::small_skinned_gltf()).unwrap();
    let small_glb = vat_bake::testdata::small_skinned_glb();
    let mut out = Vec::new();
    out.push(("gltf_bake", "small-skinned.gltf".to_owned(), small_gltf.clone()));
    out.push(("gltf_bake", "small-skinned.glb".to_owned(), small_glb));
    let skin = import_slice(&small_gltf, None, "small").unwrap();
    let mut boxes = skin.clone();
    boxes.clips.clear(); // a static asset
    let small = |bones: bool, format| BakeOptions {
        frames: Some(3),
        lods: LodOptions::Count(1),
        bones,
        format,
        ..BakeOptions::default()
    };
    use vat_core::encoding::VertexFormat::{F16, Packed64, Split8};
    for (name, rig, options) in [
        ("small-skinned-packed64.vat", &skin, small(false, Packed64)),
        ("small-skinned-f16-bones.vat", &skin, small(true, F16)),
        ("small-static-split8.vat", &boxes, small(false, Split8)),
    ] {
        out.push(("vat_reader", name.to_owned(), prepare(rig, &options).unwrap().to_vat_bytes().unwrap()));
    }
    for (i, args) in [
        "--clips walk --frames 3",
        "--clips wave --fps 4 --format f16 --bones",
        "--clips idle,run --frames 2 --lod-ratios 1,0.5 --format split8",
        "--clips walk --frames 2 --format unorm8 --precise-normals",
        "--clips run --frames 2 --format f32 --tangents --max-texture-dim 512",
        "--clips wave --frames 2 --format unorm16 --capture hand_l",
        "--clips walk --fps 0",
        "--clips walk --frames 3 --max-memory 4096",
    ]
    .iter()
    .enumerate()
    {
        out.push(("bake_args", format!("args-{i}.txt"), args.as_bytes().to_vec()));
    }
    out
}

/// Runs `f` on `data`, turning a panic into a message naming `file`.
fn run(target: &str, f: Target, file: &Path, data: &[u8]) -> Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| f(data))).map_err(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("{target}: {} panicked: {what}", file.display())
    })
}

#[test]
fn the_seed_corpora_are_what_the_generator_makes() {
    let seeds = seeds();
    if std::env::var_os("VAT_BLESS").is_some() {
        for (target, name, bytes) in &seeds {
            let dir = root().join("fuzz/corpus").join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    for (target, name, bytes) in &seeds {
        let path = root().join("fuzz/corpus").join(target).join(name);
        let disk =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; VAT_BLESS=1 writes it", path.display()));
        assert!(disk == *bytes, "{} is stale; VAT_BLESS=1 rewrites it", path.display());
        assert!(bytes.len() <= 32 << 10, "{}: seeds stay small", path.display());
    }
}

#[test]
fn every_corpus_and_regression_file_replays_without_panicking() {
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for (target, f) in TARGETS {
        let (mut files, mut ok) = (0, 0);
        for sub in ["fuzz/corpus", "fuzz/regressions"] {
            let dir = root().join(sub).join(target);
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                match run(target, f, &path, &data) {
                    Ok(true) => ok += 1,
                    Ok(false) => {}
                    Err(message) => failures.push(message),
                }
                files += 1;
            }
        }
        assert!(files > 0, "{target}: no corpus files");
        counts.push(format!("{target}: {files} files, {ok} accepted"));
    }
    // The bad-input corpus through the same functions.
    let bad = root().join("tests/data/bad");
    let mut bad_files = 0;
    for entry in std::fs::read_dir(&bad).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let f = match ext {
            "vat" => TARGETS[0].1,
            "gltf" | "glb" => TARGETS[1].1,
            _ => continue,
        };
        let data = std::fs::read(&path).unwrap();
        if let Err(message) = run("bad input", f, &path, &data) {
            failures.push(message);
        }
        bad_files += 1;
    }
    println!("{}; {bad_files} bad-input files", counts.join("; "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
