//! Bakes are byte-identical across runs, thread counts and build profiles.
//!
//! The hashes below were blessed from a release build (`cargo test --release -p vat-bake --lib
//! determinism`); the debug test run checks the same constants, and `cargo xtask ci` runs the release
//! check too, so a debug/release difference (e.g. float code that the optimiser changes) fails CI.
//! After a deliberate format or bake change, print the new hashes with
//! `VAT_PRINT_HASHES=1 cargo test --release -p vat-bake --lib determinism -- --nocapture`.

use vat_core::format::encoding::VertexFormat;

use crate::lods::LodOptions;
use crate::prepare::{BakeOptions, prepare};
use crate::procgen;

/// FNV-1a, 64-bit: a fixed, dependency-free fingerprint of the bytes (not a security hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The bakes whose bytes are pinned: (name, options).
fn pinned() -> Vec<(&'static str, BakeOptions)> {
    vec![
        ("humanoid default", BakeOptions::default()),
        (
            "humanoid f16 bones tangents, 2 lods",
            BakeOptions {
                format: VertexFormat::F16,
                bones: true,
                tangents: true,
                lods: LodOptions::Count(2),
                clips: Some(vec!["walk".into(), "wave".into()]),
                ..BakeOptions::default()
            },
        ),
        (
            "humanoid root motion, bones, 1 lod",
            BakeOptions {
                bones: true,
                lods: LodOptions::Count(1),
                clips: Some(vec!["walk".into(), "wave".into()]),
                root_motion: true,
                ..BakeOptions::default()
            },
        ),
    ]
}

/// `(length, FNV-1a)` of each pinned bake's `.vat` bytes, blessed from a release build.
const BLESSED: [(&str, usize, u64); 3] = [
    ("humanoid default", 6_981_216, 0x2a04_6156_7c70_aff1),
    ("humanoid f16 bones tangents, 2 lods", 4_889_696, 0x2f13_6965_e078_f4f1),
    ("humanoid root motion, bones, 1 lod", 2_186_880, 0x0264_288d_fbdb_02e8),
];

fn bake_in_pool(threads: usize, options: &BakeOptions) -> Vec<u8> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let rig = procgen::humanoid();
    pool.install(|| prepare(&rig, options).unwrap().to_vat_bytes().unwrap())
}

#[test]
fn determinism_across_threads_runs_and_profiles() {
    let print = std::env::var_os("VAT_PRINT_HASHES").is_some();
    let mut got = Vec::new();
    for (name, options) in pinned() {
        let one = bake_in_pool(1, &options);
        for threads in [2, 5] {
            assert!(bake_in_pool(threads, &options) == one, "{name}: {threads} threads differ from 1");
        }
        assert!(bake_in_pool(1, &options) == one, "{name}: a second run differs");
        if print {
            println!("(\"{name}\", {}, {:#018x}),", one.len(), fnv1a(&one));
        }
        got.push((name, one.len(), fnv1a(&one)));
    }
    assert_eq!(
        got,
        BLESSED,
        "the .vat bytes differ from the blessed release build's (this is a {} build); if the change is \
         deliberate, re-bless (see the module docs)",
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
}

/// `(length, FNV-1a)` of the built-in shatter's rigid-mode `.vat` bytes (`vat bake --procgen
/// shatter`), blessed from a release build like [`BLESSED`].
const SHATTER_BLESSED: (usize, u64) = (1_019_000, 0xdd71_dded_19c5_e010);

#[test]
fn the_shatter_bake_is_pinned_across_runs_and_profiles() {
    let bake = || {
        let source = procgen::shatter();
        crate::rigid::bake_rigid(&source, &crate::rigid::RigidBakeOptions::default()).unwrap().0
    };
    let one = bake();
    assert!(bake() == one, "a second run differs");
    if std::env::var_os("VAT_PRINT_HASHES").is_some() {
        println!("shatter: ({}, {:#018x})", one.len(), fnv1a(&one));
    }
    assert_eq!(
        (one.len(), fnv1a(&one)),
        SHATTER_BLESSED,
        "the shatter's .vat bytes differ from the blessed release build's (this is a {} build); if the change \
         is deliberate, re-bless (see the module docs)",
        if cfg!(debug_assertions) { "debug" } else { "release" }
    );
}
