//! Tests of the crowd: culling against a brute-force per-instance test (with a simulated GPU that
//! applies every upload), batches, LOD, passes, playback (fades, speeds, the epoch), uploads, picking.

use proptest::prelude::*;

use super::*;
use crate::clip::ClipRowMap;
use crate::container::{Attachment, BlobEntry, BlobId, Lod, VertexAnimation};
use crate::encoding::VertexFormat;
use crate::instance::PlayMode;
use crate::instance::VARIANT_ACCESSORY;
use crate::layout::VertexTextureLayout;
use crate::playback::{Wrap, fade_weight, phase};

const IDLE: u32 = 0;
const WALK: u32 = 1;
const RUN: u32 = 2;
const WAVE: u32 = 3;
const LOD_TRIANGLES: [u32; 5] = [4592, 1750, 484, 140, 44];

/// Unit roundoff of f32.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// idle (2 s loop), walk (1 s loop, 1.48 m stride), run (0.7 s loop, 3.3 m), wave (1.5 s one-shot);
/// a 0.6 x 1.8 x 0.4 m character; LODs start at 10, 25, 50, 100 m; a 96-triangle attachment.
fn asset() -> CrowdAsset {
    let mut m = ClipRowMap::new();
    m.push("idle", 2.0, 30.0, ClipMode::Looping, 0.0).unwrap();
    m.push("walk", 1.0, 30.0, ClipMode::Looping, 1.48).unwrap();
    m.push("run", 0.7, 30.0, ClipMode::Looping, 3.3).unwrap();
    m.push("wave", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
    CrowdAsset {
        clips: m.clips().to_vec(),
        bounds: PositionBounds { min: [-0.3, 0.0, -0.2], extent: [0.6, 1.8, 0.4] },
        lod_triangles: LOD_TRIANGLES.to_vec(),
        lod_distances: LodThresholds::new(&[10.0, 25.0, 50.0, 100.0]).unwrap(),
        attachment_triangles: 96,
        root_motion: Vec::new(),
        impostor_switch: None,
    }
}

fn circular_distance(a: f64, b: f64) -> f64 {
    let d = (a - b).rem_euclid(1.0);
    d.min(1.0 - d)
}

/// Deterministic pseudo-random numbers for building scenes.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next()
    }
}

/// What a backend holds after applying every frame's uploads.
#[derive(Default)]
struct Gpu {
    records: Vec<InstanceRecord>,
    list: Vec<u32>,
}

/// An owned copy of a frame's output.
#[derive(Debug, Clone)]
struct Frame {
    record_ranges: Vec<(u32, u32)>,
    list_upload: Option<(u32, u32)>,
    instance_list_len: u32,
    main_fade: Vec<DrawBatch>,
    main_plain: Vec<DrawBatch>,
    shadow: Vec<DrawBatch>,
    attachments: Vec<DrawBatch>,
    stats: CrowdStats,
}

impl Frame {
    fn main(&self) -> impl Iterator<Item = &DrawBatch> {
        self.main_fade.iter().chain(&self.main_plain)
    }
}

/// The invariants of the grid bookkeeping (see `spatial`'s module docs). `settled`: right after a
/// frame, when every instance is listed.
fn check_spatial(crowd: &Crowd, settled: bool) {
    let sp = &crowd.spatial;
    let Some(grid) = sp.grid else {
        assert!(!settled || crowd.count() == 0);
        return;
    };
    let n_cells = grid.cell_count() as usize;
    assert_eq!((sp.cells.len(), sp.cell_start.len()), (n_cells, n_cells + 1));
    let mut seen = vec![false; crowd.count() as usize];
    let mut counts = vec![(0u32, 0u32, 0u32); n_cells];
    for (c, k) in counts.iter_mut().enumerate() {
        for &i in sp.members(c) {
            assert!(!seen[i as usize], "instance {i} listed twice");
            seen[i as usize] = true;
            assert_eq!(sp.cell_of[i as usize], c as u32, "instance {i} listed in the wrong cell");
            let r = &crowd.records()[i as usize];
            let (shown, accessory) = spatial::variant_counts(r.variant_bits);
            *k = (k.0 + 1, k.1 + shown, k.2 + accessory);
            let cell = &sp.cells[c];
            assert!(r.scale <= cell.max_scale, "instance {i}: scale above its cell's");
            let mover = crowd.flags[i as usize] & FLAG_MOVER != 0;
            if !mover {
                for a in 0..3 {
                    let v = r.position[a];
                    assert!(cell.min[a] <= v && v <= cell.max[a], "instance {i} outside its cell's box");
                }
                assert_eq!(grid.cell_of(r.position), c as u32, "instance {i} left its cell unnoticed");
            }
        }
    }
    for (c, k) in counts.iter().enumerate() {
        let cell = &sp.cells[c];
        assert_eq!(*k, (cell.count, cell.shown, cell.accessory), "counts of cell {c}");
    }
    for (i, &s) in seen.iter().enumerate() {
        assert!(s || !settled, "instance {i} not listed after a frame");
        assert!(s || crowd.flags[i] & FLAG_MOVER != 0, "unlisted instance {i} not queued");
    }
    assert_eq!(sp.listed_len, seen.iter().filter(|&&s| s).count());
}

/// Prepares a frame, applies its uploads to `gpu` and checks the GPU copy of the records.
fn frame(crowd: &mut Crowd, gpu: &mut Gpu, camera: &Camera) -> Frame {
    check_spatial(crowd, false);
    let n = crowd.count() as usize;
    let d = crowd.prepare_frame(camera);
    // A sentinel that no real record has, so a record that was never uploaded shows.
    let missing = InstanceRecord { scale: -1.0, ..InstanceRecord::default() };
    gpu.records.resize(n, missing);
    let mut previous_end = 0;
    for (k, (first, recs)) in d.record_uploads.iter().enumerate() {
        let first = *first as usize;
        assert!(k == 0 || first > previous_end, "ranges must be ascending and disjoint");
        assert!(!recs.is_empty());
        gpu.records[first..first + recs.len()].copy_from_slice(recs);
        previous_end = first + recs.len();
    }
    gpu.list.resize(d.instance_list_len as usize, u32::MAX);
    if let Some((first, l)) = d.list_upload {
        gpu.list[first as usize..first as usize + l.len()].copy_from_slice(l);
    }
    let f = Frame {
        record_ranges: d.record_uploads.iter().map(|(a, r)| (*a, *a + r.len() as u32)).collect(),
        list_upload: d.list_upload.map(|(a, l)| (a, l.len() as u32)),
        instance_list_len: d.instance_list_len,
        main_fade: d.main_fade.clone(),
        main_plain: d.main_plain.clone(),
        shadow: d.shadow.clone(),
        attachments: d.attachments.clone(),
        stats: d.stats,
    };
    drop(d);
    check_spatial(crowd, true);
    assert_eq!(gpu.records, crowd.records(), "the GPU copy of the records is stale");
    assert_eq!(&gpu.list[..], crowd.instance_list(), "the GPU copy of the instance list is stale");
    f
}

/// Per record: the LOD of the main batch drawing it (None: not drawn). Asserts nobody is drawn twice.
fn drawn_lods(crowd: &Crowd, gpu: &Gpu, f: &Frame) -> Vec<Option<u32>> {
    let mut lods = vec![None; crowd.count() as usize];
    for b in f.main() {
        assert!(b.instance_count >= 1);
        let end = b.first_instance + b.instance_count;
        assert!(end <= f.instance_list_len, "{b:?} beyond the list ({})", f.instance_list_len);
        for &i in &gpu.list[b.first_instance as usize..end as usize] {
            assert!((i as usize) < lods.len(), "list entry {i} is not a record");
            assert!(lods[i as usize].is_none(), "instance {i} drawn twice");
            lods[i as usize] = Some(b.lod);
        }
    }
    lods
}

/// Instances of `batches`, asserting no duplicates.
fn batch_members(gpu: &Gpu, batches: &[DrawBatch], n: usize) -> Vec<bool> {
    let mut seen = vec![false; n];
    for b in batches {
        for &i in &gpu.list[b.first_instance as usize..(b.first_instance + b.instance_count) as usize] {
            assert!(!seen[i as usize], "instance {i} twice in one pass");
            seen[i as usize] = true;
        }
    }
    seen
}

/// The LOD of each instance's entry in `batches` (`None` if in none).
fn member_lods(gpu: &Gpu, batches: &[DrawBatch], n: usize) -> Vec<Option<u32>> {
    let mut lods = vec![None; n];
    for b in batches {
        for &i in &gpu.list[b.first_instance as usize..(b.first_instance + b.instance_count) as usize] {
            lods[i as usize] = Some(b.lod);
        }
    }
    lods
}

/// Everything a frame must satisfy, against brute force over every record.
fn check_frame(crowd: &Crowd, gpu: &Gpu, f: &Frame, camera: &Camera) {
    let lods = drawn_lods(crowd, gpu, f);
    let a = crowd.asset();
    let c = crowd.config();
    let recs = crowd.records();
    let n = recs.len();
    let frustum = Frustum::from_view_proj(&camera.view_proj);
    let shown = |i: usize| recs[i].variant_bits & VARIANT_HIDDEN == 0;
    // Visibility: every shown instance whose sphere meets the frustum is drawn.
    for (i, r) in recs.iter().enumerate() {
        let (centre, radius) = a.instance_sphere(r);
        if shown(i) && frustum.intersects_sphere(centre, radius) {
            assert!(lods[i].is_some(), "instance {i} at {:?} is in view but not drawn", r.position);
        }
    }
    // And nothing far out of view outside the far pool (which copies whole cells): the members of
    // a cell the frustum cuts are tested one by one (by their box, which holds the sphere and
    // reaches at most sqrt(3) times its radius from the centre).
    let listed =
        batch_members(gpu, &f.main().filter(|b| b.first_instance < n as u32).copied().collect::<Vec<_>>(), n);
    for (i, r) in recs.iter().enumerate() {
        let (centre, radius) = a.instance_sphere(r);
        if listed[i] && shown(i) {
            assert!(
                frustum.intersects_sphere(centre, radius * 1.75 + 1e-3),
                "instance {i} at {:?} drawn out of view",
                r.position
            );
        }
    }
    // LOD: below lod_count; with NearEdge never coarser than the instance's own distance calls for.
    for (i, lod) in lods.iter().enumerate() {
        let Some(lod) = *lod else { continue };
        assert!(lod < a.lod_count());
        if c.lod_distance == LodDistance::NearEdge {
            let p = recs[i].position;
            let e = camera.position;
            let d = ((p[0] - e[0]).powi(2) + (p[1] - e[1]).powi(2) + (p[2] - e[2]).powi(2)).sqrt();
            let own = a.lod_distances.select(d * (1.0 + 1e-5), c.lod_bias + camera.lod_bias());
            assert!(lod <= own, "instance {i}: LOD {lod} > {own} at {d} m");
        }
    }
    // Pipelines.
    let fade = crowd.cross_fade_in_use();
    for b in &f.main_fade {
        assert!(fade && b.lod <= c.cross_fade_max_lod, "{b:?} in main_fade");
    }
    for b in &f.main_plain {
        assert!(!fade || b.lod > c.cross_fade_max_lod, "{b:?} in main_plain");
    }
    // Shadows: every drawn instance with LOD <= shadow_max_lod, at the same LOD, and the other
    // members of its cell (whole cells cast: members beside the view cast into it).
    let in_shadow = batch_members(gpu, &f.shadow, n);
    let shadow_lods = member_lods(gpu, &f.shadow, n);
    for b in &f.shadow {
        assert!(c.shadows && b.lod <= c.shadow_max_lod, "{b:?} in the shadow pass");
    }
    for i in 0..n {
        if c.shadows && lods[i].is_some_and(|l| l <= c.shadow_max_lod) {
            assert_eq!(shadow_lods[i], lods[i], "instance {i} casts at the LOD it is drawn at");
        }
        if !c.shadows {
            assert!(!in_shadow[i], "instance {i} casts with shadows off");
        }
    }
    // Attachments: the drawn cells with LOD <= attachment_max_lod holding a shown accessory.
    let in_attach = batch_members(gpu, &f.attachments, n);
    let attach_on = c.attachments && a.attachment_triangles > 0;
    let accessory = |i: usize| shown(i) && recs[i].variant_bits & VARIANT_ACCESSORY != 0;
    for i in 0..n {
        if in_attach[i] {
            assert!(attach_on && lods[i].is_some_and(|l| l <= c.attachment_max_lod), "instance {i}");
        }
        if attach_on && accessory(i) && lods[i].is_some_and(|l| l <= c.attachment_max_lod) {
            assert!(in_attach[i], "accessory of instance {i} not drawn");
        }
    }
    // Stats add up.
    let s = &f.stats;
    let drawn_shown = (0..n).filter(|&i| lods[i].is_some() && shown(i)).count() as u32;
    let drawn_hidden = (0..n).filter(|&i| lods[i].is_some() && !shown(i)).count() as u32;
    let attach_drawn = (0..n).filter(|&i| in_attach[i] && accessory(i)).count() as u32;
    let triangles: u64 = (0..n)
        .filter(|&i| shown(i))
        .filter_map(|i| lods[i].map(|l| u64::from(a.lod_triangles[l as usize])))
        .sum::<u64>()
        + u64::from(attach_drawn) * u64::from(a.attachment_triangles);
    assert_eq!(s.simulated, n as u32);
    assert_eq!((s.submitted, s.drawn, s.hidden_in_view), (drawn_shown, drawn_shown, drawn_hidden));
    assert_eq!(f.main().map(|b| b.instance_count).sum::<u32>(), s.submitted + s.hidden_in_view);
    assert_eq!(s.triangles, triangles);
    assert_eq!(s.draws_main as usize, f.main_fade.len() + f.main_plain.len());
    assert_eq!(s.draws_shadow as usize, f.shadow.len());
    assert_eq!(s.draws_attachments as usize, f.attachments.len());
    assert_eq!(s.shadow_casters, (0..n).filter(|&i| in_shadow[i] && shown(i)).count() as u32);
    assert_eq!(s.attachments_drawn, attach_drawn);
    let record_bytes: u32 = f.record_ranges.iter().map(|(a, b)| (b - a) * 64).sum();
    assert_eq!(s.uploaded_record_bytes, u64::from(record_bytes));
    assert_eq!(s.uploaded_list_bytes, f.list_upload.map_or(0, |(_, l)| u64::from(l) * 4));
    // Far pool (only with more than one LOD): at most one last-LOD batch, at the end of the list.
    let last = a.lod_count() - 1;
    if c.far_pool && a.lod_count() > 1 {
        let far: Vec<_> = f.main().filter(|b| b.lod == last).collect();
        assert!(far.len() <= 1, "{far:?}");
        if let Some(b) = far.first() {
            assert_eq!(b.first_instance, n as u32, "the far pool follows the listed instances");
            assert_eq!(b.first_instance + b.instance_count, f.instance_list_len);
        }
    } else {
        assert!(f.main().all(|b| b.first_instance + b.instance_count <= n as u32));
    }
}

/// The brute-force pick: the nearest shown cylinder over every record.
fn brute_pick(crowd: &Crowd, o: [f32; 3], d: [f32; 3]) -> Option<(u32, f32)> {
    let len = d.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>().sqrt();
    let dn = d.map(|v| f64::from(v) / len);
    let shape = &crowd.shape;
    let mut best: Option<(u32, f64)> = None;
    for (i, r) in crowd.records().iter().enumerate() {
        if r.variant_bits & VARIANT_HIDDEN != 0 {
            continue;
        }
        let s = f64::from(r.scale);
        let p = r.position.map(f64::from);
        let hit = pick::ray_cylinder(
            o.map(f64::from),
            dn,
            [p[0], p[2]],
            f64::from(shape.pick_radius) * s,
            p[1] + f64::from(shape.pick_y[0]) * s,
            p[1] + f64::from(shape.pick_y[1]) * s,
        );
        if let Some(t) = hit
            && best.is_none_or(|(_, bt)| t < bt)
        {
            best = Some((i as u32, t));
        }
    }
    best.map(|(i, t)| (i, t as f32))
}

fn assert_pick_matches(crowd: &Crowd, o: [f32; 3], d: [f32; 3]) {
    let got = crowd.pick(o, d);
    let want = brute_pick(crowd, o, d);
    match (got, want) {
        (None, None) => {}
        (Some((_, tg)), Some((_, tw))) => assert_eq!(tg, tw, "pick distance: {got:?} vs {want:?}"),
        _ => panic!("pick from {o:?} along {d:?}: {got:?}, brute force {want:?}"),
    }
}

/// A 40 x 40 block of instances 5 m apart over x, z in [0, 195].
fn block_crowd(config: CrowdConfig) -> Crowd {
    let mut crowd = Crowd::new(asset(), config);
    for z in 0..40 {
        for x in 0..40 {
            crowd.spawn([x as f32 * 5.0, 0.0, z as f32 * 5.0], 0.0, WALK);
        }
    }
    crowd
}

/// At the block's west edge, 3 m up, looking east across it.
fn edge_camera() -> Camera {
    Camera::look_at([-5.0, 3.0, 97.5], [100.0, 0.0, 97.5], 1.5, 1.6, 0.5, 500.0)
}

// ---------------------------------------------------------------------------------------------------
// Frustum
// ---------------------------------------------------------------------------------------------------

#[test]
fn frustum_of_an_identity_matrix_is_the_clip_box() {
    let id = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let f = Frustum::from_view_proj(&id);
    assert_eq!(
        f.planes,
        [
            [1.0, 0.0, 0.0, 1.0],
            [-1.0, 0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0, 1.0],
            [0.0, -1.0, 0.0, 1.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, -1.0, 1.0],
        ]
    );
    assert!(f.contains_point([0.0, 0.0, 0.5]));
    assert!(f.contains_point([1.0, -1.0, 0.0]));
    assert!(!f.contains_point([0.0, 0.0, -0.01]));
    assert!(!f.contains_point([1.01, 0.0, 0.5]));
    assert!(f.intersects_sphere([1.5, 0.0, 0.5], 0.6));
    assert!(!f.intersects_sphere([1.5, 0.0, 0.5], 0.4));
    assert!(f.intersects_box([0.9, 0.9, 0.9], [2.0, 2.0, 2.0]));
    assert!(!f.intersects_box([1.1, 0.0, 0.0], [2.0, 1.0, 1.0]));
}

#[test]
fn frustum_of_a_perspective_camera() {
    // At y = 1 looking down -z; 90 degrees vertical, square: the half width at depth z is |z|.
    let cam =
        Camera::look_at([0.0, 1.0, 0.0], [0.0, 1.0, -10.0], std::f32::consts::FRAC_PI_2, 1.0, 0.5, 100.0);
    let f = Frustum::from_view_proj(&cam.view_proj);
    for p in &f.planes {
        let len = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        assert!((len - 1.0).abs() < 1e-6, "{p:?}");
    }
    let inside =
        [[0.0, 1.0, -5.0], [9.0, 1.0, -10.0], [-9.0, 1.0, -10.0], [0.0, 10.0, -10.0], [0.0, 1.0, -99.0]];
    let outside = [
        [0.0, 1.0, 5.0],    // behind
        [0.0, 1.0, -0.25],  // before the near plane
        [0.0, 1.0, -101.0], // beyond the far plane
        [11.0, 1.0, -10.0], // right
        [-11.0, 1.0, -10.0],
        [0.0, 12.0, -10.0], // above
        [0.0, -10.5, -10.0],
    ];
    for p in inside {
        assert!(f.contains_point(p), "{p:?} should be inside");
    }
    for p in outside {
        assert!(!f.contains_point(p), "{p:?} should be outside");
    }
    // Distances are metres: the near plane is 0.5 m in front of the eye.
    assert!((f.distance(4, [0.0, 1.0, -3.0]) - 2.5).abs() < 1e-4);
    assert!((f.distance(5, [0.0, 1.0, -30.0]) - 70.0).abs() < 0.05);
    // Agreement with the clip-space test on a lattice of points away from the boundary.
    for x in -12..=12 {
        for z in -12..=1 {
            let p = [x as f32 * 1.5, 1.0 + x as f32 * 0.3, z as f32 * 9.0 - 0.1];
            let c = cam.project(p);
            let in_clip = c[0].abs() <= c[3] && c[1].abs() <= c[3] && c[2] >= 0.0 && c[2] <= c[3];
            let margin = (0..6).map(|i| f.distance(i, p).abs()).fold(f32::MAX, f32::min);
            if margin > 1e-3 {
                assert_eq!(f.contains_point(p), in_clip, "{p:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Culling, against brute force
// ---------------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_instance_in_the_frustum_is_drawn_exactly_once(
        seed in any::<u64>(),
        n in 1usize..120,
        spread in 3.0f32..150.0,
        cell_size in 2.0f32..40.0,
        far_pool in any::<bool>(),
        near_edge in any::<bool>(),
        bias in -2.0f32..2.0,
        shadow_max_lod in 0u32..5,
        cross_fade_max_lod in 0u32..5,
        cams in proptest::collection::vec(
            (proptest::array::uniform3(-1.5f32..1.5), 0.5f32..40.0, proptest::array::uniform2(-1.0f32..1.0),
             0.3f32..2.0, 0.5f32..2.5, 0.05f32..2.0, 5.0f32..400.0),
            4),
    ) {
        let config = CrowdConfig {
            cell_size,
            far_pool,
            lod_distance: if near_edge { LodDistance::NearEdge } else { LodDistance::CellCentre },
            lod_bias: bias,
            shadow_max_lod,
            cross_fade_max_lod,
            ..CrowdConfig::default()
        };
        let cameras: Vec<Camera> = cams
            .iter()
            .map(|&(e, ey, t, fov, aspect, near, depth)| {
                Camera::look_at([e[0] * spread, ey, e[2] * spread], [t[0] * spread, 0.0, t[1] * spread],
                                fov, aspect, near, near + depth)
            })
            .collect();
        let mut rng = Lcg(seed);
        let mut crowd = Crowd::new(asset(), config);
        let mut gpu = Gpu::default();
        let place = |rng: &mut Lcg, s: f32| [rng.range(-s, s), rng.range(-2.0, 2.0), rng.range(-s, s)];
        for _ in 0..n {
            let p = place(&mut rng, spread);
            let i = crowd.spawn(p, rng.range(-3.2, 3.2), (rng.next() * 4.0) as u32 % 4);
            if rng.next() < 0.3 {
                crowd.set_scale(i, rng.range(0.5, 2.0));
            }
            let mut bits = 0;
            if rng.next() < 0.2 { bits |= VARIANT_HIDDEN; }
            if rng.next() < 0.5 { bits |= VARIANT_ACCESSORY; }
            crowd.set_variant(i, bits);
        }
        let ray = |rng: &mut Lcg| {
            let o = [rng.range(-1.5, 1.5) * spread, rng.range(0.0, 10.0), rng.range(-1.5, 1.5) * spread];
            let t = [rng.range(-1.0, 1.0) * spread, rng.range(-0.5, 2.0), rng.range(-1.0, 1.0) * spread];
            (o, [t[0] - o[0], t[1] - o[1], t[2] - o[2]])
        };
        // Before any frame every instance is unlisted: pick tests them one by one.
        let (o, d) = ray(&mut rng);
        assert_pick_matches(&crowd, o, d);

        let f = frame(&mut crowd, &mut gpu, &cameras[0]);
        check_frame(&crowd, &gpu, &f, &cameras[0]);
        for _ in 0..8 {
            let (o, d) = ray(&mut rng);
            assert_pick_matches(&crowd, o, d);
        }

        // Change things: small moves, jumps (some beyond the grid), scales, variants, new instances.
        for i in 0..crowd.count() {
            let u = rng.next();
            let r = crowd.records()[i as usize];
            if u < 0.3 {
                let p = r.position;
                crowd.set_transform(i, [p[0] + rng.range(-3.0, 3.0), p[1], p[2] + rng.range(-3.0, 3.0)], r.yaw);
            } else if u < 0.4 {
                let s = if rng.next() < 0.3 { 2.5 * spread } else { spread };
                crowd.set_transform(i, place(&mut rng, s), r.yaw);
            } else if u < 0.45 {
                crowd.set_scale(i, rng.range(0.5, 2.5));
            } else if u < 0.55 {
                crowd.set_variant(i, r.variant_bits ^ VARIANT_HIDDEN);
            } else if u < 0.6 {
                crowd.set_variant(i, r.variant_bits ^ VARIANT_ACCESSORY);
            }
        }
        for _ in 0..(n / 10) {
            let p = place(&mut rng, spread);
            crowd.spawn(p, 0.0, IDLE);
        }
        // Between frames, movers and new instances are picked one by one, the rest through the grid.
        for _ in 0..8 {
            let (o, d) = ray(&mut rng);
            assert_pick_matches(&crowd, o, d);
        }
        let f = frame(&mut crowd, &mut gpu, &cameras[1]);
        check_frame(&crowd, &gpu, &f, &cameras[1]);
        for _ in 0..8 {
            let (o, d) = ray(&mut rng);
            assert_pick_matches(&crowd, o, d);
        }

        // A few moves: the incremental re-listing.
        for _ in 0..3 {
            let i = (rng.next() * crowd.count() as f32) as u32 % crowd.count();
            let r = crowd.records()[i as usize];
            let p = r.position;
            let step = if rng.next() < 0.5 { 1.0 } else { cell_size };
            crowd.set_transform(i, [p[0] + rng.range(-step, step), p[1], p[2] + rng.range(-step, step)], r.yaw);
        }
        let p = place(&mut rng, spread);
        crowd.spawn(p, 0.0, RUN);
        let (o, d) = ray(&mut rng);
        assert_pick_matches(&crowd, o, d);
        let f = frame(&mut crowd, &mut gpu, &cameras[2]);
        check_frame(&crowd, &gpu, &f, &cameras[2]);
        prop_assert!(f.record_ranges.len() <= 4);

        // Nothing changed: nothing to upload, whatever the camera does.
        let f = frame(&mut crowd, &mut gpu, &cameras[3]);
        check_frame(&crowd, &gpu, &f, &cameras[3]);
        prop_assert!(f.record_ranges.is_empty());
        prop_assert_eq!(f.stats.uploaded_record_bytes, 0);
    }
}

#[test]
fn a_frame_of_the_block_passes_every_check() {
    for far_pool in [false, true] {
        let mut crowd = block_crowd(CrowdConfig { far_pool, ..CrowdConfig::default() });
        for i in (0..crowd.count()).step_by(3) {
            crowd.set_variant(i, VARIANT_ACCESSORY);
        }
        crowd.despawn(7);
        let mut gpu = Gpu::default();
        let cam = edge_camera();
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        // A realistic view: part of the block is culled, several LODs are used.
        assert!(f.stats.submitted > 300 && f.stats.submitted < 1599, "{:?}", f.stats);
        let lods: std::collections::BTreeSet<u32> = f.main().map(|b| b.lod).collect();
        assert_eq!(lods.len(), 5, "{lods:?}");
    }
}

// ---------------------------------------------------------------------------------------------------
// LOD, far pool, passes
// ---------------------------------------------------------------------------------------------------

#[test]
fn lod_bias_shifts_lods() {
    // One instance per cell along -z, 6 to 140 m from the eye (none near a threshold at any bias), the
    // eye level with the cell centres.
    let config = CrowdConfig { cell_size: 4.0, far_pool: false, ..CrowdConfig::default() };
    let mut crowd = Crowd::new(asset(), config);
    let distances = [6.0f32, 15.0, 33.0, 70.0, 140.0];
    for d in distances {
        crowd.spawn([0.0, 0.0, -d], 0.0, IDLE);
    }
    let eye_y = 0.9; // the bounds' centre height: the cell centre is level with the eye
    let cam = Camera::look_at([0.0, eye_y, 0.0], [0.0, eye_y, -10.0], 1.0, 1.0, 0.1, 500.0);
    let mut gpu = Gpu::default();
    let thresholds = asset().lod_distances;
    for bias in [-1.0f32, 0.0, 1.0, 2.0] {
        crowd.config_mut().lod_bias = bias;
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        let lods = drawn_lods(&crowd, &gpu, &f);
        let expected: Vec<_> = distances.iter().map(|&d| Some(thresholds.select(d, bias))).collect();
        assert_eq!(lods, expected, "bias {bias}");
    }
    // Concretely: 15 m is LOD 1; bias +1 reads it as 30 m (LOD 2), -1 as 7.5 m (LOD 0).
    assert_eq!(
        [thresholds.select(15.0, -1.0), thresholds.select(15.0, 0.0), thresholds.select(15.0, 1.0)],
        [0, 1, 2]
    );
}

#[test]
fn lods_follow_the_views_resolution_and_field_of_view() {
    let config = CrowdConfig { cell_size: 4.0, far_pool: false, ..CrowdConfig::default() };
    let mut crowd = Crowd::new(asset(), config);
    let distances = [6.0f32, 15.0, 33.0, 70.0, 140.0];
    for d in distances {
        crowd.spawn([0.0, 0.0, -d], 0.0, IDLE);
    }
    let fov = std::f32::consts::FRAC_PI_3;
    let base = Camera::look_at([0.0, 0.9, 0.0], [0.0, 0.9, -10.0], fov, 1.0, 0.1, 500.0);
    let thresholds = asset().lod_distances;
    let mut gpu = Gpu::default();
    // 60 degrees over 1,080 rows is the view the thresholds were made for: no bias.
    assert!(base.with_viewport(1080, fov).lod_bias().abs() < 1e-6);
    assert_eq!(base.lod_bias(), 0.0);
    // Twice the rows: each level's error spans twice the pixels, so each switch is twice as far;
    // a quarter of the rows, or a field of view that sees more per pixel, switches sooner.
    for (rows, view_fov, doublings) in
        [(2160, fov, -1.0f32), (270, fov, 2.0), (1080, 2.0 * (1.25 * (fov * 0.5).tan()).atan(), 0.321_93)]
    {
        let cam = base.with_viewport(rows, view_fov);
        assert!((cam.lod_bias() - doublings).abs() < 2e-3, "{rows} rows: bias {}", cam.lod_bias());
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        let expected: Vec<_> =
            distances.iter().map(|&d| Some(thresholds.select(d, cam.lod_bias()))).collect();
        assert_eq!(drawn_lods(&crowd, &gpu, &f), expected, "{rows} rows");
    }
    // Concretely: 15 m is LOD 1 at 1,080 rows, LOD 0 at 2,160.
    let fine = base.with_viewport(2160, fov);
    let f = frame(&mut crowd, &mut gpu, &fine);
    assert_eq!(drawn_lods(&crowd, &gpu, &f)[1], Some(0));
    // Nonsense fields of view leave the camera as it is.
    assert_eq!(base.with_viewport(2160, f32::NAN), base);
    assert_eq!(base.with_viewport(2160, 4.0), base);
}

#[test]
fn a_reverse_z_camera_with_an_infinite_far_plane_culls_like_the_standard_one() {
    let eye = [0.0, 1.0, 0.0];
    let target = [0.0, 1.0, -10.0];
    let reverse = Camera::look_at_reverse_z(eye, target, 1.0, 1.5, 0.1);
    let frustum = Frustum::from_view_proj(&reverse.view_proj);
    // Depth 1 at the near plane, falling towards 0 far away, never below.
    let depth = |p: [f32; 3]| {
        let c = reverse.project(p);
        c[2] / c[3]
    };
    assert!((depth([0.0, 1.0, -0.1]) - 1.0).abs() < 1e-5);
    assert!(depth([0.0, 1.0, -1.0]) > depth([0.0, 1.0, -100.0]));
    assert!(depth([0.0, 1.0, -1e6]) > 0.0);
    // Inside: in front at any distance; outside: behind the near plane, off to the side.
    assert!(frustum.contains_point([0.0, 1.0, -1e6]));
    assert!(frustum.contains_point([0.0, 1.0, -5.0]));
    assert!(!frustum.contains_point([0.0, 1.0, -0.05]));
    assert!(!frustum.contains_point([50.0, 1.0, -5.0]));
    // The side planes are the standard camera's.
    let standard = Frustum::from_view_proj(&Camera::look_at(eye, target, 1.0, 1.5, 0.1, 500.0).view_proj);
    for plane in 0..4 {
        for (a, b) in frustum.planes[plane].iter().zip(standard.planes[plane]) {
            assert!((a - b).abs() < 1e-5, "plane {plane}");
        }
    }
}

#[test]
fn far_pool_makes_exactly_one_far_batch() {
    let cam = edge_camera();
    let mut with = block_crowd(CrowdConfig::default());
    let mut without = block_crowd(CrowdConfig { far_pool: false, ..CrowdConfig::default() });
    let (mut g1, mut g2) = (Gpu::default(), Gpu::default());
    let f1 = frame(&mut with, &mut g1, &cam);
    let f2 = frame(&mut without, &mut g2, &cam);
    check_frame(&with, &g1, &f1, &cam);
    check_frame(&without, &g2, &f2, &cam);
    let far1: Vec<_> = f1.main().filter(|b| b.lod == 4).collect();
    let far2: Vec<_> = f2.main().filter(|b| b.lod == 4).collect();
    assert_eq!(far1.len(), 1, "{far1:?}");
    assert!(far2.len() > 1, "without the pool the far cells are several batches: {far2:?}");
    assert_eq!(far1[0].first_instance, 1600);
    // The pool copies whole cells; without it the cells the frustum cuts draw their members in view.
    assert!(far1[0].instance_count >= far2.iter().map(|b| b.instance_count).sum::<u32>());
    assert_eq!(f1.stats.far_pool_instances, far1[0].instance_count);
    assert_eq!(f1.instance_list_len, 1600 + far1[0].instance_count);
    assert_eq!(f2.instance_list_len, 1600);
    // The same instances at the same LODs either way (the pool's whole cells besides), in fewer
    // draws with the pool.
    let (l1, l2) = (drawn_lods(&with, &g1, &f1), drawn_lods(&without, &g2, &f2));
    for (i, (a, b)) in l1.iter().zip(&l2).enumerate() {
        if b.is_some() || a.is_some_and(|l| l < 4) {
            assert_eq!(a, b, "instance {i}");
        }
    }
    assert!(f1.stats.draws_main < f2.stats.draws_main);
    assert!(f1.stats.triangles >= f2.stats.triangles);
    // Turning the pool off at runtime drops it from the list.
    with.config_mut().far_pool = false;
    let f3 = frame(&mut with, &mut g1, &cam);
    check_frame(&with, &g1, &f3, &cam);
    assert_eq!(f3.instance_list_len, 1600);
}

#[test]
fn shadow_batches_follow_shadow_max_lod_and_vanish_without_shadows() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    let mut casters = Vec::new();
    for smax in 0..5 {
        crowd.config_mut().shadow_max_lod = smax;
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        assert!(f.shadow.iter().all(|b| b.lod <= smax));
        casters.push(f.stats.shadow_casters);
    }
    assert!(casters.windows(2).all(|w| w[0] < w[1]), "more LODs cast more: {casters:?}");
    let f = frame(&mut crowd, &mut gpu, &cam);
    // Every drawn instance casts (check_frame), and the members of the cut cells beside the view.
    assert!(f.stats.shadow_casters >= f.stats.submitted, "shadow_max_lod 4 casts every drawn instance");
    crowd.config_mut().shadows = false;
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(f.shadow.is_empty());
    assert_eq!((f.stats.shadow_casters, f.stats.draws_shadow), (0, 0));
}

/// `asset()` with only its first `lods` LODs (1 or 2): what a bake whose chain dropped levels gives.
fn asset_with_lods(lods: usize) -> CrowdAsset {
    let mut a = asset();
    a.lod_triangles.truncate(lods);
    a.lod_distances = LodThresholds::new(&a.lod_distances.as_slice()[..lods - 1]).unwrap();
    a
}

#[test]
fn an_asset_with_fewer_lods_still_casts_shadows_and_cross_fades() {
    // The block reaches 200 m from the camera: with 5 LODs most of it is past shadow_max_lod 1.
    let cam = edge_camera();
    for lods in [1usize, 2] {
        for (smax, fmax) in [(1, 1), (0, 0), (7, 7)] {
            let config =
                CrowdConfig { shadow_max_lod: smax, cross_fade_max_lod: fmax, ..CrowdConfig::default() };
            let mut crowd = Crowd::new(asset_with_lods(lods), config);
            for z in 0..40 {
                for x in 0..40 {
                    crowd.spawn([x as f32 * 5.0, 0.0, z as f32 * 5.0], 0.0, WALK);
                }
            }
            // A fade running: the cross-fade pipeline is in use.
            crowd.play(0, RUN, 0.5);
            let mut gpu = Gpu::default();
            let f = frame(&mut crowd, &mut gpu, &cam);
            check_frame(&crowd, &gpu, &f, &cam);
            assert_eq!(crowd.asset().lod_count(), lods as u32);
            let last = lods as u32 - 1;
            assert!(f.stats.submitted > 0);
            assert!(f.main().all(|b| b.lod <= last));
            // Every drawn instance at a LOD within the clamped limit casts and cross-fades.
            let expected_casters: u32 =
                drawn_lods(&crowd, &gpu, &f).iter().flatten().filter(|&&l| l <= smax.min(last)).count()
                    as u32;
            // And the members of the cells the frustum cuts, beside the view.
            assert!(f.stats.shadow_casters >= expected_casters, "{lods} LODs, shadow_max_lod {smax}");
            if lods == 1 || smax >= 1 {
                assert!(f.stats.shadow_casters >= f.stats.submitted, "a {lods}-LOD crowd casts everywhere");
                assert!(f.stats.draws_shadow > 0);
            }
            if lods == 1 || fmax >= 1 {
                assert!(f.main_plain.is_empty(), "every batch cross-fades: {:?}", f.main_plain);
            }
        }
    }
    // The 5-LOD asset with the default limits leaves the far crowd without shadows (by design).
    let mut crowd = block_crowd(CrowdConfig::default());
    let f = frame(&mut crowd, &mut Gpu::default(), &cam);
    assert!(f.stats.shadow_casters < f.stats.submitted);
}

#[test]
fn cross_fade_split_follows_cross_fade_max_lod() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    // A fade running: the cross-fade pipeline is in use.
    crowd.play(0, RUN, 10.0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(!f.main_fade.is_empty() && !f.main_plain.is_empty());
    assert!(f.main_fade.iter().all(|b| b.lod <= 1) && f.main_plain.iter().all(|b| b.lod > 1));
    let all = drawn_lods(&crowd, &gpu, &f);
    crowd.config_mut().cross_fade = false;
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(f.main_fade.is_empty());
    assert_eq!(drawn_lods(&crowd, &gpu, &f), all);
    crowd.config_mut().cross_fade = true;
    crowd.config_mut().cross_fade_max_lod = 4;
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(f.main_plain.is_empty());
}

#[test]
fn the_cross_fade_pipeline_is_used_only_while_a_fade_runs() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(!crowd.cross_fade_in_use());
    assert!(f.main_fade.is_empty() && !f.main_plain.is_empty(), "no fade: every batch plain");
    let plain = drawn_lods(&crowd, &gpu, &f);
    // A 0.5 s fade: the finest LODs cross-fade until advance folds the finished fade.
    crowd.play(0, RUN, 0.5);
    assert!(crowd.cross_fade_in_use());
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(!f.main_fade.is_empty() && f.main_fade.iter().all(|b| b.lod <= 1));
    assert_eq!(drawn_lods(&crowd, &gpu, &f), plain, "the same instances at the same LODs");
    crowd.advance(0.25);
    assert!(crowd.cross_fade_in_use(), "half way");
    crowd.advance(0.3);
    assert!(!crowd.cross_fade_in_use(), "the fade is over");
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.main_fade.is_empty());
    // Off in the config: never, fade or not.
    crowd.config_mut().cross_fade = false;
    crowd.play(1, RUN, 0.5);
    assert!(!crowd.cross_fade_in_use());
}

#[test]
fn attachments_follow_the_accessory_bit_and_lod() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.attachments.is_empty(), "no instance shows its accessory yet");
    for i in (0..crowd.count()).step_by(2) {
        crowd.set_variant(i, VARIANT_ACCESSORY | 3);
    }
    for amax in [0, 2, 4] {
        crowd.config_mut().attachment_max_lod = amax;
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        assert!(!f.attachments.is_empty());
        assert!(f.stats.attachments_drawn > 0);
    }
    crowd.config_mut().attachments = false;
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(f.attachments.is_empty() && f.stats.attachments_drawn == 0);
    // An asset without attachments never produces attachment batches.
    let mut plain = Crowd::new(CrowdAsset { attachment_triangles: 0, ..asset() }, CrowdConfig::default());
    let i = plain.spawn([0.0, 0.0, 20.0], 0.0, IDLE);
    plain.set_variant(i, VARIANT_ACCESSORY);
    let cam = Camera::look_at([0.0, 1.0, 0.0], [0.0, 1.0, 20.0], 1.0, 1.0, 0.1, 100.0);
    let f = frame(&mut plain, &mut Gpu::default(), &cam);
    assert!(f.attachments.is_empty() && f.stats.submitted == 1);
}

#[test]
fn hidden_instances_stay_listed_but_are_not_counted() {
    let mut crowd = Crowd::new(asset(), CrowdConfig { far_pool: false, ..CrowdConfig::default() });
    let cam = Camera::look_at([0.0, 1.0, 0.0], [0.0, 1.0, 20.0], 1.0, 1.0, 0.1, 100.0);
    let a = crowd.spawn([0.0, 0.0, 20.0], 0.0, IDLE);
    let b = crowd.spawn([0.5, 0.0, 20.5], 0.0, IDLE);
    let mut gpu = Gpu::default();
    crowd.despawn(b);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!((f.stats.submitted, f.stats.hidden_in_view), (1, 1));
    assert_eq!(f.main().map(|b| b.instance_count).sum::<u32>(), 2);
    // A cell whose every member is hidden is not drawn at all.
    crowd.despawn(a);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.main().count(), 0);
    assert_eq!((f.stats.submitted, f.stats.visible_cells, f.stats.triangles), (0, 0, 0));
    crowd.set_variant(b, 0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.stats.submitted, 1);
}

// ---------------------------------------------------------------------------------------------------
// Uploads and membership
// ---------------------------------------------------------------------------------------------------

#[test]
fn a_static_crowd_uploads_nothing_and_one_move_uploads_only_its_record() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert_eq!(f.record_ranges, [(0, 1600)]);
    assert_eq!(f.list_upload, Some((0, f.instance_list_len)));

    // Same camera, time passing: nothing at all.
    for _ in 0..3 {
        crowd.advance(1.0 / 60.0);
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        assert!(f.record_ranges.is_empty() && f.list_upload.is_none());
        assert_eq!((f.stats.uploaded_record_bytes, f.stats.uploaded_list_bytes), (0, 0));
    }
    // A moving camera changes the far pool at most, never the records.
    for k in 0..10 {
        let cam = Camera::look_at(
            [-10.0 + k as f32 * 3.0, 20.0, 97.5],
            [100.0, 0.0, 60.0 + k as f32 * 4.0],
            1.5,
            1.6,
            0.5,
            500.0,
        );
        let f = frame(&mut crowd, &mut gpu, &cam);
        check_frame(&crowd, &gpu, &f, &cam);
        assert!(f.record_ranges.is_empty());
        if let Some((first, _)) = f.list_upload {
            assert_eq!(first, 1600, "only the far pool changes");
        }
    }
    let _ = frame(&mut crowd, &mut gpu, &cam);

    // One instance moves inside its cell: its 64 bytes, no list change.
    let grid = *crowd.grid().unwrap();
    let i = 41; // (5, 0, 5)
    let p = crowd.records()[i as usize].position;
    let q = [p[0] + 0.5, 0.0, p[2] + 0.25];
    assert_eq!(grid.cell_of(p), grid.cell_of(q));
    crowd.set_transform(i, q, 1.0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.record_ranges, [(i, i + 1)]);
    assert_eq!(f.stats.uploaded_record_bytes, 64);
    assert_eq!(f.list_upload, None);

    // Into another cell: its record, and the list from the first changed cell on.
    let q2 = [p[0] + 20.0, 0.0, p[2]];
    assert_ne!(grid.cell_of(p), grid.cell_of(q2));
    crowd.set_transform(i, q2, 1.0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.record_ranges, [(i, i + 1)]);
    let (first, len) = f.list_upload.unwrap();
    assert!(first < 1600 && first + len == f.instance_list_len, "{first} {len}");

    // Two far-apart records: two ranges; two close ones: one merged range.
    crowd.set_tint(10, [1.0, 0.0, 0.0]);
    crowd.set_tint(900, [1.0, 0.0, 0.0]);
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert_eq!(f.record_ranges, [(10, 11), (900, 901)]);
    crowd.set_tint(10, [0.0, 1.0, 0.0]);
    crowd.set_tint(20, [0.0, 1.0, 0.0]);
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert_eq!(f.record_ranges, [(10, 21)], "a gap of 9 <= upload_merge_gap 16 merges");
    crowd.config_mut().upload_merge_gap = 0;
    crowd.set_tint(10, [0.0, 0.0, 1.0]);
    crowd.set_tint(11, [0.0, 0.0, 1.0]);
    crowd.set_tint(20, [0.0, 0.0, 1.0]);
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.record_ranges, [(10, 12), (20, 21)]);
}

#[test]
fn a_move_inside_a_cell_grows_the_cell_bounds() {
    // One instance: its cell spans x in [1, 17) (the grid is padded by one 16 m cell around it).
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    crowd.spawn([1.0, 0.0, 1.0], 0.0, IDLE);
    let narrow = Camera::look_at([12.0, 1.0, -20.0], [12.0, 1.0, 0.0], 0.1, 1.0, 0.1, 100.0);
    let mut gpu = Gpu::default();
    let f = frame(&mut crowd, &mut gpu, &narrow);
    assert_eq!(f.stats.submitted, 0, "x = 1 is 11 m beside the narrow view");
    let grid = *crowd.grid().unwrap();
    assert_eq!(grid.cell_of([1.0, 0.0, 1.0]), grid.cell_of([12.0, 0.0, 1.0]));
    crowd.set_transform(0, [12.0, 0.0, 1.0], 0.0);
    let f = frame(&mut crowd, &mut gpu, &narrow);
    check_frame(&crowd, &gpu, &f, &narrow);
    assert_eq!(f.stats.submitted, 1);
    assert_eq!(f.list_upload, None, "no membership change");
}

#[test]
fn the_gpu_path_takes_only_record_uploads() {
    let cam = edge_camera();
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    frame(&mut crowd, &mut gpu, &cam);
    assert!(crowd.take_record_uploads().is_empty(), "a static crowd costs nothing");
    crowd.set_transform(100, [60.0, 0.0, 60.0], 0.0); // into another cell
    crowd.spawn([1.0, 0.0, 1.0], 0.0, WALK);
    let uploads: Vec<(u32, usize)> = crowd.take_record_uploads().iter().map(|(a, r)| (*a, r.len())).collect();
    assert_eq!(uploads, [(100, 1), (1600, 1)]);
    for (a, n) in uploads {
        let (a, n) = (a as usize, n);
        gpu.records.resize(crowd.count() as usize, InstanceRecord::default());
        gpu.records[a..a + n].copy_from_slice(&crowd.records()[a..a + n]);
    }
    // Back on the CPU path: the records are uploaded already, the moves are listed now.
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert!(f.record_ranges.is_empty());
    assert!(f.list_upload.is_some());
}

#[test]
fn the_grid_grows_to_cover_instances_that_leave_it() {
    let mut crowd = block_crowd(CrowdConfig::default());
    let mut gpu = Gpu::default();
    let cam = edge_camera();
    frame(&mut crowd, &mut gpu, &cam);
    let before = *crowd.grid().unwrap();
    crowd.set_transform(5, [2000.0, 0.0, -1500.0], 0.0);
    let cam2 = Camera::look_at([1995.0, 2.0, -1500.0], [2000.0, 1.0, -1500.0], 1.0, 1.0, 0.1, 50.0);
    let f = frame(&mut crowd, &mut gpu, &cam2);
    check_frame(&crowd, &gpu, &f, &cam2);
    let after = *crowd.grid().unwrap();
    assert_ne!(before, after);
    let (lo, hi) = after.cell_min_max(after.cell_count() - 1, 0.0, 0.0);
    assert!(hi[0] >= 2000.0 && after.origin()[1] <= -1500.0, "{after:?} {lo:?}");
    assert_eq!(drawn_lods(&crowd, &gpu, &f)[5], Some(0));
    assert_eq!(f.stats.submitted, 1);
    // A new cell size rebuilds the grid.
    crowd.config_mut().cell_size = 40.0;
    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(crowd.grid().unwrap().cell_size(), 40.0);
}

// ---------------------------------------------------------------------------------------------------
// Playback
// ---------------------------------------------------------------------------------------------------

fn clip_mode(clip: u32) -> ClipMode {
    asset().clips[clip as usize].mode
}

/// Phase of slot A and, while fading, slot B of record `r` at shader time `t`.
fn phases(r: &InstanceRecord, t: f32) -> (f32, f32) {
    (
        phase(r.phase_offset_a, t, r.rate_a, clip_mode(r.clip_a)),
        phase(r.phase_offset_b, t, r.rate_b, clip_mode(r.clip_b_index())),
    )
}

#[test]
fn spawn_starts_at_the_given_phase_at_the_current_time() {
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    crowd.advance(12.345);
    let t = crowd.shader_time();
    let i = crowd.spawn_at_phase([0.0; 3], 0.0, WALK, 0.25);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.rate_a, r.fade_duration()), (WALK, 1.0, 0.0));
    assert!(circular_distance(f64::from(phases(&r, t).0), 0.25) < 1e-5);
    let w = crowd.spawn([0.0; 3], 0.0, WAVE);
    let r = crowd.records()[w as usize];
    assert!(phases(&r, t).0.abs() < 1e-5, "a one-shot starts at its beginning");
    assert!((phases(&r, t + 0.75).0 - 0.5).abs() < 1e-5);
    assert_eq!(phases(&r, t + 10.0).0, 1.0);
}

#[test]
fn fades_fold_into_slot_a_after_they_complete() {
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    let cam = edge_camera();
    let mut gpu = Gpu::default();
    let i = crowd.spawn([0.0; 3], 0.0, WALK);
    crowd.spawn([3.0, 0.0, 0.0], 0.0, IDLE);
    crowd.set_speed(i, 2.0);
    crowd.advance(0.25);
    frame(&mut crowd, &mut gpu, &cam);
    crowd.play(i, RUN, 0.5);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.clip_b_index(), r.fade_duration(), r.fade_start), (WALK, RUN, 0.5, 0.25));
    assert_eq!(r.rate_b, 2.0 / 3.3, "slot B is stride-matched to the instance's speed");
    // Walk to run: both locomotion loops, the run continues at the walk's phase.
    let (pa, pb) = phases(&r, 0.25);
    assert!(circular_distance(f64::from(pa), f64::from(pb)) < 1e-5, "{pa} {pb}");
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert_eq!(f.record_ranges, [(i, i + 1)]);

    crowd.advance(0.3); // weight 0.6: still fading
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.record_ranges.is_empty());
    assert_eq!(crowd.records()[i as usize].clip_b_index(), RUN);
    assert_eq!(crowd.records()[i as usize].fade_duration(), 0.5);

    let before = crowd.records()[i as usize];
    crowd.advance(0.25); // t = 0.8 >= 0.25 + 0.5: complete
    let t = crowd.shader_time();
    assert_eq!(fade_weight(t, before.fade_start, before.fade_duration()), 1.0);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.rate_a, r.phase_offset_a), (RUN, before.rate_b, before.phase_offset_b));
    assert_eq!((r.clip_b_index(), r.fade_duration()), (RUN, 0.0));
    assert_eq!(phases(&r, t).0, phases(&before, t).1, "the fold does not change what is shown");
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert_eq!(f.record_ranges, [(i, i + 1)], "the folded record is uploaded once");
    crowd.advance(1.0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.record_ranges.is_empty());
}

#[test]
fn play_during_a_fade_keeps_the_dominant_slot() {
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    let i = crowd.spawn([0.0; 3], 0.0, IDLE);
    crowd.advance(1.0);
    crowd.play(i, WALK, 1.0);
    let fading = crowd.records()[i as usize];
    // Playing the fade's target again changes nothing.
    crowd.advance(0.25);
    crowd.play(i, WALK, 1.0);
    assert_eq!(crowd.records()[i as usize], fading);
    // At weight 0.25 slot A (idle) dominates: it stays the outgoing clip of the fade to run.
    crowd.play(i, RUN, 0.5);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.clip_b_index(), r.fade_start), (IDLE, RUN, 1.25));
    assert_eq!((r.phase_offset_a, r.rate_a), (fading.phase_offset_a, fading.rate_a));
    // At weight 0.6 slot B (run) dominates: it becomes the outgoing clip of the fade to wave.
    crowd.advance(0.3);
    crowd.play(i, WAVE, 0.25);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.clip_b_index()), (RUN, WAVE));
    // A cut: slot A plays the new clip alone, from phase 0.
    crowd.play(i, IDLE, 0.0);
    let r = crowd.records()[i as usize];
    assert_eq!((r.clip_a, r.clip_b_index(), r.fade_duration()), (IDLE, IDLE, 0.0));
    assert!(circular_distance(f64::from(phases(&r, crowd.shader_time()).0), 0.0) < 1e-5);
    // Playing the looping clip that already plays alone changes nothing.
    crowd.advance(0.4);
    let before = crowd.records()[i as usize];
    crowd.play(i, IDLE, 0.3);
    assert_eq!(crowd.records()[i as usize], before);
    // The fading list does not keep a record that was cut.
    crowd.advance(5.0);
    assert_eq!(crowd.records()[i as usize], before);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn set_speed_never_jumps_the_phase(
        t in 0.0f64..63.0,
        clip in 0u32..4,
        s1 in -8.0f32..8.0,
        s2 in -8.0f32..8.0,
        fade_to in proptest::option::of(0u32..4),
    ) {
        let mut crowd = Crowd::new(asset(), CrowdConfig::default());
        let i = crowd.spawn_at_phase([0.0; 3], 0.3, clip, 0.37);
        crowd.set_speed(i, s1);
        crowd.advance(t);
        if let Some(c) = fade_to {
            crowd.play(i, c, 2.0);
        }
        crowd.advance(0.5);
        let time = crowd.shader_time();
        let before = crowd.records()[i as usize];
        crowd.set_speed(i, s2);
        let after = crowd.records()[i as usize];
        // Rates: stride-matched for locomotion clips, natural otherwise.
        let a = asset();
        let expect_rate = |c: u32| {
            let clip = &a.clips[c as usize];
            if clip.is_locomotion() { s2 / clip.stride } else { clip.natural_rate() }
        };
        prop_assert_eq!(after.rate_a, expect_rate(after.clip_a));
        if after.fade_duration() > 0.0 {
            prop_assert_eq!(after.rate_b, expect_rate(after.clip_b_index()));
        }
        let (b_a, b_b) = phases(&before, time);
        let (a_a, a_b) = phases(&after, time);
        // The bound of playback::retimed_offset's test (U (2a + 2b + |offset| + 4) + ...), per slot.
        let bound = |r1: f32, r2: f32| {
            let (x, y) = (f64::from((time * r1).abs()), f64::from((time * r2).abs()));
            U * (2.0 * x + 2.0 * y + 5.0) + (1.0 + x + y) / (1u64 << 50) as f64
        };
        let da = circular_distance(f64::from(b_a), f64::from(a_a));
        prop_assert!(da <= bound(before.rate_a, after.rate_a), "slot A jumps {} ({} -> {})", da, b_a, a_a);
        if after.fade_duration() > 0.0 {
            let db = circular_distance(f64::from(b_b), f64::from(a_b));
            prop_assert!(db <= bound(before.rate_b, after.rate_b), "slot B jumps {}", db);
        }
    }
}

#[test]
fn an_epoch_rebase_keeps_every_phase_and_uploads_everything_once() {
    let cam = edge_camera();
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    let mut gpu = Gpu::default();
    let mut rng = Lcg(7);
    for k in 0..200u32 {
        let i =
            crowd.spawn_at_phase([rng.range(0.0, 50.0), 0.0, rng.range(0.0, 50.0)], 0.0, k % 3, rng.next());
        crowd.set_speed(i, rng.range(0.5, 6.0));
    }
    let wave = crowd.spawn([1.0, 0.0, 1.0], 0.0, WAVE);
    let late_wave = crowd.spawn([2.0, 0.0, 1.0], 0.0, IDLE);
    crowd.advance(63.0);
    crowd.play(late_wave, WAVE, 0.0); // from 63 s: 1.25 s of 1.5 s played at the re-base
    crowd.play(3, RUN, 2.0); // fading across the re-base
    crowd.advance(0.75);
    frame(&mut crowd, &mut gpu, &cam);
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.record_ranges.is_empty());

    let old = crowd.records().to_vec();
    let old_epoch = crowd.clock().epoch();
    crowd.advance(0.5); // now 64.25 s: re-base
    let new_epoch = crowd.clock().epoch();
    assert_eq!((old_epoch, new_epoch), (0.0, 64.0));
    let now = crowd.clock().now();
    let (t_old, t_new) = ((now - old_epoch) as f32, crowd.shader_time());
    assert!(t_new < 1.0);
    // playback::REBASE_AFTER_SECONDS's bound at T = 64.25 s, R = 6 / 1.48 < 4.1 cycles/s, for the old
    // record, plus the new record's own rounding (its shader time is < 1 s) and the offset's rounding.
    let bound = U * (3.0 * 4.1 * 64.25 + 4.0);
    for (i, (o, n)) in old.iter().zip(crowd.records()).enumerate() {
        let (oa, ob) = phases(o, t_old);
        let (na, nb) = phases(n, t_new);
        assert!(circular_distance(f64::from(oa), f64::from(na)) <= bound, "{i}: {oa} -> {na}");
        if n.fade_duration() > 0.0 {
            assert!(circular_distance(f64::from(ob), f64::from(nb)) <= bound, "{i}: {ob} -> {nb}");
            let (wo, wn) = (
                fade_weight(t_old, o.fade_start, o.fade_duration()),
                fade_weight(t_new, n.fade_start, n.fade_duration()),
            );
            assert!((wo - wn).abs() < 1e-6, "{i}: fade weight {wo} -> {wn}");
        }
    }
    // One-shot clips do not wrap: the finished one stays finished, the running one keeps running.
    assert_eq!(phases(&crowd.records()[wave as usize], t_new).0, 1.0);
    let p = phases(&crowd.records()[late_wave as usize], t_new).0;
    assert!((p - 1.25 / 1.5).abs() < 1e-5, "{p}");
    assert_eq!(crowd.records()[3].fade_duration(), 2.0);

    let f = frame(&mut crowd, &mut gpu, &cam);
    check_frame(&crowd, &gpu, &f, &cam);
    assert_eq!(f.record_ranges, [(0, crowd.count())], "one full upload");
    crowd.advance(1.0 / 60.0);
    let f = frame(&mut crowd, &mut gpu, &cam);
    assert!(f.record_ranges.is_empty(), "and only once");
}

// ---------------------------------------------------------------------------------------------------
// Picking
// ---------------------------------------------------------------------------------------------------

#[test]
fn pick_hits_the_nearest_instance_and_misses_empty_space() {
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    for k in 0..4 {
        crowd.spawn([k as f32 * 5.0, 0.0, 0.0], 0.0, IDLE);
    }
    // The cylinder radius is the bounds' farthest horizontal corner: hypot(0.3, 0.2).
    let r = (0.3f32 * 0.3 + 0.2 * 0.2).sqrt();
    let check = |crowd: &Crowd| {
        let (i, d) = crowd.pick([-20.0, 1.0, 0.0], [1.0, 0.0, 0.0]).unwrap();
        assert_eq!(i, 0);
        assert!((d - (20.0 - r)).abs() < 1e-4, "{d}");
        let (i, d) = crowd.pick([40.0, 1.0, 0.0], [-2.0, 0.0, 0.0]).unwrap();
        assert_eq!(i, 3);
        assert!((d - (25.0 - r)).abs() < 1e-4, "{d}");
        // From above onto instance 1's head (1.8 m tall).
        let (i, d) = crowd.pick([5.0, 10.0, 0.0], [0.0, -1.0, 0.0]).unwrap();
        assert_eq!(i, 1);
        assert!((d - 8.2).abs() < 1e-4, "{d}");
        // Empty space: beside the row, between two instances, above the heads.
        assert_eq!(crowd.pick([-20.0, 1.0, 3.0], [1.0, 0.0, 0.0]), None);
        assert_eq!(crowd.pick([2.5, 10.0, 0.0], [0.0, -1.0, 0.0]), None);
        assert_eq!(crowd.pick([-20.0, 2.5, 0.0], [1.0, 0.0, 0.0]), None);
        assert_eq!(crowd.pick([-20.0, 1.0, 0.0], [-1.0, 0.0, 0.0]), None, "behind the origin");
        assert_eq!(crowd.pick([-20.0, 1.0, 0.0], [0.0, 0.0, 0.0]), None);
    };
    check(&crowd); // before any frame: every instance is tested directly
    let mut gpu = Gpu::default();
    frame(&mut crowd, &mut gpu, &edge_camera());
    check(&crowd); // through the grid
    // Hidden instances are not picked; scale widens the cylinder.
    crowd.despawn(0);
    let (i, _) = crowd.pick([-20.0, 1.0, 0.0], [1.0, 0.0, 0.0]).unwrap();
    assert_eq!(i, 1);
    crowd.set_scale(2, 10.0);
    let (i, d) = crowd.pick([-20.0, 1.0, 2.0], [1.0, 0.0, 0.0]).unwrap();
    assert_eq!(i, 2, "instance 1 is 2 m beside this ray, instance 2 is 10x wider");
    let expected = 30.0 - ((10.0 * r).powi(2) - 4.0).sqrt();
    assert!((d - expected).abs() < 1e-3, "{d} vs {expected}");
    // A moved instance is found at its new place before the next frame.
    crowd.set_transform(3, [-10.0, 0.0, 0.0], 0.0);
    assert_eq!(crowd.pick([-20.0, 1.0, 0.0], [1.0, 0.0, 0.0]).unwrap().0, 3);
    // Many instances on a long diagonal ray: the grid walk agrees with brute force.
    let mut big = block_crowd(CrowdConfig::default());
    frame(&mut big, &mut Gpu::default(), &edge_camera());
    let mut rng = Lcg(3);
    for _ in 0..200 {
        let o = [rng.range(-50.0, 250.0), rng.range(0.0, 30.0), rng.range(-50.0, 250.0)];
        let t = [rng.range(0.0, 200.0), rng.range(0.0, 2.0), rng.range(0.0, 200.0)];
        assert_pick_matches(&big, o, [t[0] - o[0], t[1] - o[1], t[2] - o[2]]);
    }
}

#[test]
fn pick_agrees_with_brute_force_when_cylinders_span_many_cells() {
    // Wide characters (cylinder radius 3.5 m at scale 1, up to 7 m) in 2 m cells: a hit is often in a
    // cell the ray never enters, and the nearest hit often lies in a later column than a farther one.
    let wide =
        CrowdAsset { bounds: PositionBounds { min: [-2.5, 0.0, -2.5], extent: [5.0, 2.0, 5.0] }, ..asset() };
    let mut crowd = Crowd::new(wide, CrowdConfig { cell_size: 2.0, ..CrowdConfig::default() });
    let mut rng = Lcg(11);
    for _ in 0..300 {
        let i = crowd.spawn([rng.range(0.0, 60.0), rng.range(-1.0, 1.0), rng.range(0.0, 60.0)], 0.0, IDLE);
        crowd.set_scale(i, rng.range(0.3, 2.0));
        if rng.next() < 0.1 {
            crowd.despawn(i);
        }
    }
    let rays = |crowd: &Crowd, rng: &mut Lcg| {
        for _ in 0..1500 {
            let o = [rng.range(-20.0, 80.0), rng.range(-3.0, 6.0), rng.range(-20.0, 80.0)];
            let flat = rng.next() < 0.5;
            let t =
                [rng.range(0.0, 60.0), if flat { o[1] } else { rng.range(-1.0, 3.0) }, rng.range(0.0, 60.0)];
            assert_pick_matches(crowd, o, [t[0] - o[0], t[1] - o[1], t[2] - o[2]]);
        }
        for _ in 0..100 {
            let o = [rng.range(0.0, 60.0), 20.0, rng.range(0.0, 60.0)];
            assert_pick_matches(crowd, o, [rng.range(-0.01, 0.01), -1.0, rng.range(-0.01, 0.01)]);
        }
    };
    rays(&crowd, &mut rng);
    let cam = Camera::look_at([30.0, 50.0, -30.0], [30.0, 0.0, 30.0], 1.0, 1.0, 0.5, 200.0);
    let mut gpu = Gpu::default();
    frame(&mut crowd, &mut gpu, &cam);
    rays(&crowd, &mut rng);
    for i in (0..crowd.count()).step_by(7) {
        let p = crowd.records()[i as usize].position;
        crowd.set_transform(i, [p[0] + rng.range(-4.0, 4.0), p[1], p[2] + rng.range(-4.0, 4.0)], 0.0);
    }
    rays(&crowd, &mut rng);
    frame(&mut crowd, &mut gpu, &cam);
    rays(&crowd, &mut rng);
}

// ---------------------------------------------------------------------------------------------------
// The asset
// ---------------------------------------------------------------------------------------------------

#[test]
fn crowd_asset_from_a_manifest() {
    let mut m = Manifest::new("a", 8);
    assert!(matches!(CrowdAsset::from_manifest(&m), Err(Error::MissingSection { .. })));
    m.vertex_animation = Some(VertexAnimation {
        layout: VertexTextureLayout { vertex_count: 8, frame_count: 40, width: 64, height: 5 },
        format: VertexFormat::Packed64,
        bounds: asset().bounds,
        position_bits: [13, 14, 13],
        textures: vec![BlobId(0)],
        tangents: None,
    });
    assert!(matches!(CrowdAsset::from_manifest(&m), Err(Error::MissingSection { .. })));
    m.clips = asset().clips;
    assert!(matches!(CrowdAsset::from_manifest(&m), Err(Error::MissingSection { .. })));
    let lod = |triangle_count: u32, max_distance: f32| Lod {
        first_index: 0,
        index_count: triangle_count * 3,
        triangle_count,
        screen_error: 0.0,
        max_distance,
    };
    m.lods = vec![lod(100, 10.0), lod(50, 10.0), lod(20, 30.0), lod(10, f32::INFINITY)];
    m.blobs = vec![
        BlobEntry { offset: 0, length: 64 * 5 * 8, crc32: 0 },
        BlobEntry { offset: 0, length: 36, crc32: 0 },
    ];
    m.attachments = vec![Attachment {
        name: "cap".into(),
        socket: 0,
        vertex_count: 3,
        positions: BlobId(0),
        normals: BlobId(0),
        material_ids: BlobId(0),
        indices: BlobId(1),
    }];
    let a = CrowdAsset::from_manifest(&m).unwrap();
    assert_eq!(a.lod_triangles, [100, 50, 20, 10]);
    assert_eq!(a.lod_distances.as_slice(), &[10.0, 10.0f32.next_up(), 30.0]);
    assert_eq!(a.lod_count(), 4);
    assert_eq!(a.attachment_triangles, 3);
    assert_eq!(a.bounds, asset().bounds);
    // An infinite distance before the last LOD ends the thresholds.
    m.lods = vec![lod(100, 10.0), lod(50, f32::INFINITY), lod(20, f32::INFINITY)];
    assert_eq!(CrowdAsset::from_manifest(&m).unwrap().lod_count(), 2);
    m.attachments[0].indices = BlobId(9);
    assert!(matches!(CrowdAsset::from_manifest(&m), Err(Error::BlobIdOutOfRange { .. })));
}

#[test]
fn the_instance_sphere_follows_position_yaw_and_scale() {
    let a = asset();
    let mut r = InstanceRecord { position: [10.0, 1.0, -4.0], ..InstanceRecord::default() };
    let (c, rad) = a.instance_sphere(&r);
    assert!((c[0] - 10.0).abs() < 1e-6 && (c[1] - 1.9).abs() < 1e-6 && (c[2] + 4.0).abs() < 1e-6, "{c:?}");
    assert!((rad - 0.5 * (0.36f32 + 3.24 + 0.16).sqrt()).abs() < 1e-6);
    // Off-centre bounds rotate with the yaw: +x in object space is -z after a quarter turn.
    let off =
        CrowdAsset { bounds: PositionBounds { min: [0.5, 0.0, -0.1], extent: [1.0, 1.0, 0.2] }, ..asset() };
    r.yaw = std::f32::consts::FRAC_PI_2;
    r.scale = 2.0;
    let (c, rad) = off.instance_sphere(&r);
    assert!(
        (c[0] - 10.0).abs() < 1e-5 && (c[1] - 2.0).abs() < 1e-6 && (c[2] - (-4.0 - 2.0)).abs() < 1e-5,
        "{c:?}"
    );
    assert!((rad - (1.0f32 + 1.0 + 0.04).sqrt()).abs() < 1e-5);
}

/// The phase the shader shows for the current (incoming) slot of `r` at shader time `t`.
fn shown_phase(crowd: &Crowd, i: InstanceId, t: f32) -> f32 {
    let r = crowd.records()[i as usize];
    let slot = if r.fade_duration() > 0.0 { r.slot_b() } else { r.slot_a() };
    let clip = &crowd.asset().clips[slot.clip as usize];
    phase(slot.phase_offset, t, slot.rate, Wrap::from_code(slot.wrap_code, clip.mode))
}

#[test]
fn a_clip_played_once_ends_in_the_first_frame_the_shader_holds_its_end_and_starts_the_queued_one() {
    let mut crowd = Crowd::new(asset(), CrowdConfig { record_events: true, ..CrowdConfig::default() });
    let id = crowd.spawn([0.0; 3], 0.0, IDLE);
    // The looping walk (1 s) played once, then the wave queued behind it with a 0.25 s fade.
    crowd.play_as(id, WALK, 0.0, PlayMode::Once);
    crowd.play_after(id, WAVE, 0.25, PlayMode::AsBaked);
    assert_eq!(crowd.play_mode(id), PlayMode::Once);
    assert_eq!(crowd.records()[id as usize].wrap_code_a(), Wrap::Clamp.code());
    let mut ended = Vec::new();
    let mut started = None;
    for frame in 1..=45 {
        let before = crowd.shader_time();
        let held_before = shown_phase(&crowd, id, before) >= 1.0;
        crowd.advance(1.0 / 30.0);
        let now = crowd.shader_time();
        let clock_now = crowd.clock().now();
        for e in crowd.drain_events() {
            assert_eq!((e.instance, e.clip), (id, WALK), "{e:?}");
            assert_eq!(e.time, clock_now);
            ended.push((frame, e.kind, held_before));
        }
        if started.is_none() && crowd.records()[id as usize].clip_b_index() == WAVE {
            started = Some(frame);
            // The walk, as the GPU shows it at this frame's time, is at its end.
            let r = crowd.records()[id as usize];
            assert_eq!(r.clip_a, WALK);
            assert_eq!(phase(r.phase_offset_a, now, r.rate_a, Wrap::Clamp), 1.0);
            assert_eq!(r.fade_duration(), 0.25);
            assert_eq!(crowd.play_mode(id), PlayMode::AsBaked);
        }
    }
    assert_eq!(ended.len(), 1, "{ended:?}");
    let (frame, kind, held_before) = ended[0];
    assert_eq!(kind, AnimationEventKind::Ended);
    assert!(!held_before, "the end was not already shown the frame before");
    assert_eq!(started, Some(frame), "the queued play starts in the frame the end is found");
    // The wave (one-shot, as baked) ends too, 1.5 s later, and nothing else happens.
    for _ in 0..60 {
        crowd.advance(1.0 / 30.0);
    }
    let later: Vec<_> = crowd.drain_events().collect();
    assert_eq!(later.len(), 1, "{later:?}");
    assert_eq!((later[0].clip, later[0].kind), (WAVE, AnimationEventKind::Ended));
}

#[test]
fn marked_frames_are_reported_once_per_pass_in_every_wrap_across_epoch_rebases() {
    let mut crowd = Crowd::new(asset(), CrowdConfig { record_events: true, ..CrowdConfig::default() });
    // walk: 30 frames, 1 s loop; frame 15 is at phase 0.5.
    crowd.mark_frame(WALK, 15);
    let looping = crowd.spawn([0.0; 3], 0.0, WALK);
    let ping = crowd.spawn([2.0, 0.0, 0.0], 0.0, IDLE);
    crowd.play_as(ping, WALK, 0.0, PlayMode::PingPong);
    let idle = crowd.spawn([4.0, 0.0, 0.0], 0.0, IDLE);
    let (mut loops, mut pings) = (0, 0);
    // 150 s at 30 frames a second: two epoch re-bases (every 64 s).
    let mut prev = [looping, ping].map(|i| shown_phase(&crowd, i, crowd.shader_time()));
    for _ in 0..150 * 30 {
        crowd.advance(1.0 / 30.0);
        let now = [looping, ping].map(|i| shown_phase(&crowd, i, crowd.shader_time()));
        let events: Vec<_> = crowd.drain_events().collect();
        for (k, &i) in [looping, ping].iter().enumerate() {
            let reported = events.iter().filter(|e| e.instance == i).count();
            let (a, b) = (prev[k], now[k]);
            // The shown phase passed 0.5 within this frame (no wrap between the two frames near it).
            let across = (a < 0.5 && b >= 0.5 && b - a < 0.1) || (a > 0.5 && b <= 0.5 && a - b < 0.1);
            assert_eq!(reported, usize::from(across), "instance {i}: phases {a} -> {b}: {events:?}");
            if k == 0 { loops += reported } else { pings += reported }
        }
        assert!(
            events.iter().all(|e| e.instance != idle && e.kind == AnimationEventKind::Marker { frame: 15 })
        );
        prev = now;
    }
    // Once per cycle looping; twice per two cycles (up and down) ping-ponging.
    assert!((149..=150).contains(&loops), "{loops}");
    assert!((149..=150).contains(&pings), "{pings}");
}

#[test]
fn ping_pong_and_clamp_wrap_the_phase_and_set_variant_keeps_the_wrap_bits() {
    let mut crowd = Crowd::new(asset(), CrowdConfig { record_events: true, ..CrowdConfig::default() });
    let id = crowd.spawn([0.0; 3], 0.0, IDLE);
    crowd.play_as(id, WAVE, 0.0, PlayMode::PingPong);
    crowd.set_variant(id, 7 | VARIANT_ACCESSORY);
    let r = crowd.records()[id as usize];
    assert_eq!((r.material_variant(), r.wrap_code_a()), (7, Wrap::PingPong.code()));
    // wave: 1.5 s; ping-pong goes up for 1.5 s, then down.
    for (t, want) in [(0.75, 0.5), (1.5, 1.0), (2.25, 0.5), (3.0, 0.0), (3.75, 0.5)] {
        while f64::from(crowd.shader_time()) < t - 1e-9 {
            crowd.advance(0.125 / 4.0);
        }
        let p = shown_phase(&crowd, id, crowd.shader_time());
        assert!((p - want).abs() < 1e-4, "t {t}: phase {p}, want {want}");
    }
    // A clamped loop stops at its end; set_speed keeps the wrap.
    crowd.play_as(id, WALK, 0.0, PlayMode::Clamp);
    crowd.set_speed(id, 1.48);
    for _ in 0..60 {
        crowd.advance(1.0 / 30.0);
    }
    assert_eq!(shown_phase(&crowd, id, crowd.shader_time()), 1.0);
    assert_eq!(crowd.records()[id as usize].wrap_code_a(), Wrap::Clamp.code());
    assert_eq!(crowd.drain_events().count(), 0, "a clamped play raises no end event");
}

#[test]
fn events_are_kept_only_when_asked_and_bounded() {
    // Off (the default): nothing is kept, but queued plays still start.
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    let id = crowd.spawn([0.0; 3], 0.0, WAVE);
    crowd.play_after(id, IDLE, 0.0, PlayMode::AsBaked);
    for _ in 0..60 {
        crowd.advance(1.0 / 30.0);
    }
    assert_eq!(crowd.drain_events().count(), 0);
    assert_eq!(crowd.records()[id as usize].clip_a, IDLE, "the queued play started");
    // On, never drained: at most MAX_PENDING_EVENTS wait; the rest are counted.
    let mut crowd = Crowd::new(asset(), CrowdConfig { record_events: true, ..CrowdConfig::default() });
    crowd.mark_frame(WALK, 0);
    crowd.mark_frame(WALK, 15);
    let n = 2000u32;
    for i in 0..n {
        crowd.spawn([i as f32, 0.0, 0.0], 0.0, WALK);
    }
    // 2 marks a second for 2000 walkers: 4000 events a second; 20 s passes the cap.
    for _ in 0..20 * 30 {
        crowd.advance(1.0 / 30.0);
    }
    let dropped = crowd.dropped_events();
    assert!(dropped > 0, "{dropped}");
    assert_eq!(crowd.drain_events().count(), MAX_PENDING_EVENTS);
    assert_eq!(MAX_PENDING_EVENTS as u64 + dropped, 2 * u64::from(n) * 20, "every pass found once");
}

#[test]
fn a_cell_whose_box_is_outside_an_oblique_plane_is_not_drawn_though_its_sphere_would_be() {
    // One upright character at the origin; an orthographic view (a shadow cascade's kind) whose
    // left plane runs at 45 degrees in XZ. The members' box corner (+x, +z) reaches sqrt(2) * mh
    // along the plane's normal, while the sphere around the box (tall: the character's height)
    // reaches farther: a plane between the two keeps the sphere and rejects the box.
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    crowd.spawn([0.0, 0.0, 0.0], 0.0, IDLE);
    let camera = Camera::look_at([0.0, 2.0, 10.0], [0.0, 1.0, 0.0], 0.9, 1.0, 0.1, 100.0);
    let _ = crowd.prepare_frame(&camera);
    let (c, r) = crowd.asset().instance_sphere(&crowd.records()[0]);
    // At least the box's horizontal half-width (the Shape margin rounds up by far less than 1 %).
    let mh = ((c[0] * c[0] + c[2] * c[2]).sqrt() + r) * 1.01 + 1e-3;
    let view = |d: f32| {
        // Rows r0 = (k, 0, k, t), r1 = (0, 0.1, 0, 0), r2 = (0, 0, 0, 0.5), r3 = (0, 0, 0, 1): the left
        // plane (r3 + r0) normalised is n = (1, 0, 1) / sqrt(2) with offset (1 + t) / (k sqrt(2)) = d.
        let k = 0.01f32;
        let t = d * k * 2f32.sqrt() - 1.0;
        [[k, 0.0, 0.0, 0.0], [0.0, 0.1, 0.0, 0.0], [k, 0.0, 0.0, 0.0], [t, 0.0, 0.5, 1.0]]
    };
    let drawn = |d: f32| crowd.cull_view(&view(d), &camera).instances;
    // The box clear of the plane by 2 cm: culled, though the sphere around the box meets it.
    let d = -(2f32.sqrt() * mh + 0.02);
    let box_half = [mh, r, mh];
    let sphere_radius = (box_half[0].powi(2) + box_half[1].powi(2) + box_half[2].powi(2)).sqrt();
    assert!(sphere_radius + d > 0.0, "the case needs a sphere that reaches past the plane");
    assert_eq!(drawn(d), 0);
    // The instance itself is outside: its sphere's centre is farther than r behind the plane.
    assert!((c[0] + c[2]) / 2f32.sqrt() + d < -r);
    // The plane moved past the box's corner: drawn.
    assert_eq!(drawn(-(2f32.sqrt() * mh) * 0.5), 1);
}
