//! Container load, borrowing (no copy of the payload): `cargo bench -p vat-bake --bench container`.
//!
//! The procedural humanoid baked with default options (Packed64, 5 LODs, the cap attachment) and
//! with bones, as `.vat` bytes in memory:
//!
//! - `container/parse/{default,bones}`: `Asset::parse` (header, checksums, manifest decode and
//!   validation; every blob is a borrowed slice of the input).
//! - `container/parse_view/{default,bones}`: the same plus the crowd's view of the manifest
//!   (`CrowdAsset::from_manifest`) and the borrowed vertex animation view
//!   (`VertexAnimationView::from_asset`): what a renderer does before uploading.
//!
//! Throughput is reported in bytes of the file per second.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::container::Asset;
use vat_core::crowd::CrowdAsset;
use vat_core::format::reference::VertexAnimationView;

fn container(c: &mut Criterion) {
    let rig = vat_procgen::humanoid();
    let mut group = c.benchmark_group("container");
    group.sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for (name, bones) in [("default", false), ("bones", true)] {
        let options = BakeOptions { bones, ..BakeOptions::default() };
        let bytes = prepare(&rig, &options).expect("bake").to_vat_bytes().expect("serialise");
        eprintln!("container/{name}: {} bytes", bytes.len());
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(BenchmarkId::new("parse", name), |b| {
            b.iter(|| black_box(Asset::parse(black_box(&bytes)).expect("parse").manifest().vertex_count))
        });
        group.bench_function(BenchmarkId::new("parse_view", name), |b| {
            b.iter(|| {
                let asset = Asset::parse(black_box(&bytes)).expect("parse");
                let crowd = CrowdAsset::from_manifest(asset.manifest()).expect("crowd view");
                let view = VertexAnimationView::from_asset(&asset).expect("vertex view");
                black_box((crowd.lod_triangles.len(), view.textures.len()))
            })
        });
    }
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::container);
}
criterion_main!(harness::benches);
