//! Import and bake stay near-linear in what a file controls (issue: hostile files cannot hang).
//!
//! Each case builds two inputs 10x apart and compares the time of the same work on both. A linear
//! path takes about 10x longer on the larger input, a quadratic one about 100x; the bound is a
//! generous 30x, so that a noisy shared machine does not fail it while a quadratic path still does.
//! Each time is the fastest of five runs, small and large interleaved. Where the code measures its own work
//! ([`AdjacencyWork`]) the test also checks the count it chose to spend.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use vat_bake::lods::{ADJACENCY_WORK_PER_TRIANGLE, AdjacencyWork};
use vat_bake::prepare::{BakeOptions, prepare};
use vat_procgen::testdata::{degenerate, degenerate_only, fan, many_nodes};

/// The most a 10x larger input may cost, in multiples of the smaller one's time.
const MAX_RATIO: f64 = 30.0;

/// Times `f` on the small and the large input, interleaved (so that a disturbance on the shared
/// machine hits both), the fastest of five runs each. One measurement at a time in this binary:
/// the tests would otherwise share the cores with each other.
fn measure<T>(small: &T, large: &T, f: impl Fn(&T)) -> (Duration, Duration) {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let time = |input: &T| {
        let start = Instant::now();
        f(input);
        start.elapsed()
    };
    let (mut s, mut l) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        s = s.min(time(small));
        l = l.min(time(large));
    }
    (s, l)
}

fn assert_near_linear(what: &str, (small, large): (Duration, Duration)) {
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("{what}: {small:?} -> {large:?} for 10x the input ({ratio:.1}x)");
    assert!(ratio < MAX_RATIO, "{what}: 10x the input took {ratio:.1}x the time ({small:?} -> {large:?})");
}

fn import(bytes: &[u8]) -> vat_bake::rig::Rig {
    vat_bake::gltf_import::import_slice(bytes, None, "scaling").unwrap()
}

#[test]
fn a_triangle_fan_imports_and_bakes_in_near_linear_time() {
    // Over the budget: the hub has 3 * 20,000 corners, 3.6e9 work against 2e7 (1,024 per triangle).
    let work = AdjacencyWork::of(&(1..=20_000u32).flat_map(|i| [i, i + 1, 0]).collect::<Vec<_>>(), 20_002);
    assert!(!work.within_budget(), "{work:?}");
    assert_eq!(work.busiest_vertex, 20_000);
    assert_eq!(work.budget, 20_000 * ADJACENCY_WORK_PER_TRIANGLE);

    let bake = |bytes: &[u8]| {
        let rig = import(bytes);
        let baked = prepare(&rig, &BakeOptions::default()).unwrap();
        assert_eq!(baked.stats.triangle_counts.len(), 1, "only LOD 0 is built");
        let dropped: Vec<&String> = baked.stats.warnings.iter().filter(|w| w.contains("dropped")).collect();
        assert_eq!(dropped.len(), 4, "{:?}", baked.stats.warnings);
        assert!(
            dropped[0].contains("over the budget") && dropped[0].contains("split the mesh"),
            "{}",
            dropped[0]
        );
    };
    assert_near_linear("triangle fan bake", measure(&fan(20_000), &fan(200_000), |b| bake(b)));
}

#[test]
fn a_fan_small_enough_for_the_budget_keeps_its_lods() {
    // 1,000 triangles: 3e6 work, under the 2^24 floor, so the simplifier runs.
    let rig = import(&fan(1_000));
    let baked = prepare(&rig, &BakeOptions::default()).unwrap();
    assert!(baked.stats.triangle_counts.len() > 1, "{:?}", baked.stats.warnings);
}

#[test]
fn zero_area_triangles_are_left_out_reported_and_cost_linear_time() {
    let rig = import(&degenerate(1_000));
    assert_eq!(rig.meshes[0].indices.len(), 3, "one triangle with area is left");
    assert!(
        rig.notes.iter().any(|n| n.contains("999 of 1000 triangles left out") && n.contains("no area")),
        "{:?}",
        rig.notes
    );
    // Only triangles without area: a typed error, not an empty mesh.
    let all_flat = degenerate_only(10);
    let e = vat_bake::gltf_import::import_slice(&all_flat, None, "flat").unwrap_err().to_string();
    assert!(e.contains("all 10 triangles repeat a vertex index"), "{e}");

    let bake = |bytes: &[u8]| {
        let baked = prepare(&import(bytes), &BakeOptions::default()).unwrap();
        assert_eq!(baked.stats.triangle_counts[0], 1);
    };
    assert_near_linear(
        "zero-area triangles",
        measure(&degenerate(100_000), &degenerate(1_000_000), |b| bake(b)),
    );
}

#[test]
fn many_nodes_sockets_and_skin_references_import_in_near_linear_time() {
    let rig = import(&many_nodes(100));
    assert_eq!(rig.sockets.len(), 100);
    assert_eq!(rig.skins.len(), 1);
    let count = |b: &Vec<u8>| assert!(import(b).sockets.len() >= 10_000);
    assert_near_linear(
        "nodes, sockets and skin references",
        measure(&many_nodes(10_000), &many_nodes(100_000), count),
    );
}
