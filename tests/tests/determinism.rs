//! Cross-crate determinism: a glTF file imported and baked gives byte-identical `.vat` bytes across
//! runs and rayon thread counts, and the procedural humanoid's `.glb` export is byte-identical too.
//! (The pinned hashes that also tie debug to release builds are in `vat-bake/src/determinism.rs`;
//! `cargo xtask ci` checks them in a release build.)

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use vat_bake::export;
use vat_bake::gltf_import::{ImportOptions, import_file};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::format::encoding::VertexFormat;

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

#[test]
fn gltf_bakes_are_identical_across_runs_and_thread_counts() {
    let Some(data) = vat_procgen::testdata::shared_testdata().map(|d| d.join("gltf")) else { return };
    for file in ["RiggedSimple/RiggedSimple.glb", "AnimatedMorphCube/AnimatedMorphCube.gltf"] {
        for options in [
            BakeOptions::default(),
            BakeOptions {
                format: VertexFormat::F16,
                bones: true,
                lods: LodOptions::Count(2),
                ..BakeOptions::default()
            },
        ] {
            let bake = |threads| {
                in_pool(threads, || {
                    let rig = import_file(&data.join(file), &ImportOptions::default()).unwrap();
                    prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
                })
            };
            let one = bake(1);
            for threads in [1, 2, 4, 7] {
                assert!(bake(threads) == one, "{file} {:?}: {threads} threads differ from 1", options.format);
            }
        }
    }
}

#[test]
fn the_humanoid_export_is_identical_across_runs_and_thread_counts() {
    let glb = |threads| {
        in_pool(threads, || {
            export::export_glb(&vat_procgen::humanoid()).expect("the built-in humanoid exports as glb")
        })
    };
    let one = glb(1);
    assert!(glb(3) == one && glb(1) == one);
}
