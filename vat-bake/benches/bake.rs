//! Bake benchmarks: `cargo bench -p vat-bake`.
//!
//! The target of the baker issue: preparing the procedural humanoid (6 clips x 48 frames, ~2.4k
//! vertices, 5 LODs, bones on) in <= 20 ms median, release, on one thread. Criterion runs on the
//! calling thread; rayon is pinned to one thread here so the figure is single-threaded.

use criterion::{Criterion, criterion_main};
use vat_bake::prepare::{BakeOptions, prepare};
use vat_bake::verify;
use vat_procgen::testdata;

fn bake(c: &mut Criterion) {
    let rig = vat_procgen::humanoid();
    let options = BakeOptions { frames: Some(48), bones: true, ..BakeOptions::default() };
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("rayon pool");
    let mut group = c.benchmark_group("bake");
    group.sample_size(30);
    group.bench_function("humanoid_6x48_bones_1_thread", |b| {
        b.iter(|| one_thread.install(|| prepare(&rig, &options).expect("bake")))
    });
    group.bench_function("humanoid_6x48_bones_all_threads", |b| {
        b.iter(|| prepare(&rig, &options).expect("bake"))
    });
    group.bench_function("procgen_humanoid", |b| b.iter(vat_procgen::humanoid));
    group.finish();

    // The large asset of a real export (34,560 vertices, 60 primitives, 18 joints, one 35 s clip of
    // 1,050 frames at 30 fps), all threads: the bake itself, and its verification against fresh
    // skinning at every baked frame (what `vat bake` runs before it names the file).
    let large = testdata::large_rig(testdata::LargeRigShape::ISSUE);
    let options = BakeOptions::default();
    let mut group = c.benchmark_group("bake_large");
    group.sample_size(10);
    group.bench_function("large_35k_60prims_1050f", |b| b.iter(|| prepare(&large, &options).expect("bake")));
    let bytes = prepare(&large, &options).expect("bake").to_vat_bytes().expect("bytes");
    let asset = vat_core::container::Asset::parse(&bytes).expect("parse");
    let checks = verify::VerifyOptions { mid_frames: false, ..verify::VerifyOptions::default() };
    group.bench_function("large_35k_60prims_1050f_verify", |b| {
        b.iter(|| verify::verify_with(&asset, &large, &checks).expect("verify"))
    });
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::bake);
}
criterion_main!(harness::benches);
