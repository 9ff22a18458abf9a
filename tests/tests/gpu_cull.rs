//! GPU-driven culling (`cs_cull`) against the CPU: for the same camera, every instance whose bounding
//! sphere meets the frustum is drawn by both culling paths, and the GPU path draws no instance outside
//! it (sorted visible lists read back from the GPU); the GPU's per-instance LOD follows
//! `LodThresholds::select`; with every instance at LOD 0 both paths render the same image; the
//! GPU's counts arrive in the frame reports through the non-blocking read-back ring, as late as
//! they say, equal to the read-back lists of the frame they are from. Each test runs on wgpu and on
//! Vulkan (`per_backend!`).

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use vat_core::backend::frame::gpu_counts::RING_DEPTH;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig, Frustum};
use vat_core::instance::{VARIANT_ACCESSORY, VARIANT_HIDDEN};
use vat_core::render::{CrowdDraw, CrowdRenderer, Culling, RenderOptions};
use vat_tests::{humanoid_vat, per_backend, save_image};

const SIZE: [u32; 2] = [256, 192];

/// A deterministic scatter of `n` instances over a 240 m square, with random yaw, scale, clips and
/// 1 in 13 hidden.
fn crowd(asset: &Asset<'_>, n: u32) -> Crowd {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let mut seed = 0x2545_f491_u32;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed as f32 / u32::MAX as f32
    };
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..n {
        let p = [rand() * 240.0 - 120.0, rand() * 0.5, rand() * 240.0 - 120.0];
        let id = crowd.spawn_at_phase(p, rand() * std::f32::consts::TAU, i % clips, rand());
        crowd.set_scale(id, 0.7 + rand() * 0.8);
        let mut bits = ((i * 29) & 0xFF) | if i % 3 == 0 { VARIANT_ACCESSORY } else { 0 };
        if i % 13 == 5 {
            bits |= VARIANT_HIDDEN;
        }
        crowd.set_variant(id, bits);
    }
    crowd
}

/// Shown instances whose sphere meets the frustum, by the CPU's per-instance test; also those within
/// `margin` metres of the boundary (where f32 differences between CPU and GPU sin/cos may flip the
/// result).
fn cpu_visible(crowd: &Crowd, camera: &Camera, margin: f32) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let frustum = Frustum::from_view_proj(&camera.view_proj);
    let (mut inside, mut borderline) = (BTreeSet::new(), BTreeSet::new());
    for (i, r) in crowd.records().iter().enumerate() {
        if r.variant_bits & VARIANT_HIDDEN != 0 {
            continue;
        }
        let (c, radius) = crowd.asset().instance_sphere(r);
        let worst = (0..6).map(|p| frustum.distance(p, c) + radius).fold(f32::INFINITY, f32::min);
        if frustum.intersects_sphere(c, radius) {
            inside.insert(i as u32);
        }
        if worst.abs() <= margin {
            borderline.insert(i as u32);
        }
    }
    (inside, borderline)
}

fn gpu_and_cpu_culling_agree_with_the_per_instance_frustum_test<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = crowd(&asset, 6000);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let aspect = SIZE[0] as f32 / SIZE[1] as f32;
    let cameras = [
        Camera::look_at([0.0, 12.0, 0.0], [40.0, 0.0, 25.0], 0.9, aspect, 0.5, 150.0),
        Camera::look_at([-100.0, 3.0, -90.0], [0.0, 1.0, 0.0], 0.6, aspect, 0.1, 400.0),
        Camera::look_at([30.0, 80.0, 30.0], [30.0, 0.0, 29.0], 1.2, aspect, 1.0, 1000.0),
    ];
    for (k, camera) in cameras.iter().enumerate() {
        for bias in [0.0f32, 1.5] {
            crowd.config_mut().lod_bias = bias;
            // The CPU path's drawn set: every entry of its main batches (a clone, so that the renderer
            // still sees this frame's uploads).
            let mut probe = crowd.clone();
            let draws = probe.prepare_frame(camera);
            let batches: Vec<_> = draws.main_fade.iter().chain(&draws.main_plain).copied().collect();
            let cpu_stats = draws.stats;
            let list = probe.instance_list();
            let mut cpu_drawn = BTreeSet::new();
            for b in &batches {
                cpu_drawn
                    .extend(list[b.first_instance as usize..][..b.instance_count as usize].iter().copied());
            }
            let options = RenderOptions { culling: Culling::Gpu, ..Default::default() };
            let report = renderer
                .render(
                    &mut [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }],
                    camera,
                    &options,
                )
                .unwrap();
            // GPU culling reports only what the CPU knows: no CPU culling ran.
            assert_eq!(report.stats.simulated, crowd.count());
            assert_eq!((report.stats.visible_cells, report.stats.draws_main), (0, 0));
            let lists = renderer.read_gpu_visible(&gpu_crowd).unwrap();
            let mut gpu_drawn = BTreeSet::new();
            let thresholds = crowd.asset().lod_distances;
            let mut lod_mismatches = 0;
            for (lod, list) in lists.iter().enumerate() {
                for &i in list {
                    assert!(gpu_drawn.insert(i), "record {i} listed twice");
                    let (c, _) = crowd.asset().instance_sphere(&crowd.records()[i as usize]);
                    let d = ((c[0] - camera.position[0]).powi(2)
                        + (c[1] - camera.position[1]).powi(2)
                        + (c[2] - camera.position[2]).powi(2))
                    .sqrt();
                    let expected = thresholds.select(d, bias);
                    if expected != lod as u32 {
                        // Only an instance within a millimetre of a threshold may round the other way.
                        let near = thresholds
                            .as_slice()
                            .iter()
                            .any(|&t| (t - d * bias.exp2()).abs() <= 1e-3 * bias.exp2().max(1.0));
                        assert!(near, "record {i} at {d} m: GPU LOD {lod}, CPU LOD {expected}");
                        lod_mismatches += 1;
                    }
                }
            }
            let (inside, borderline) = cpu_visible(&crowd, camera, 1e-3);
            let missing: Vec<u32> =
                inside.difference(&gpu_drawn).filter(|i| !borderline.contains(i)).copied().collect();
            let extra: Vec<u32> =
                gpu_drawn.difference(&inside).filter(|i| !borderline.contains(i)).copied().collect();
            let cpu_missing: Vec<u32> = inside.difference(&cpu_drawn).copied().collect();
            println!(
                "camera {k} bias {bias}: {} in the frustum ({} borderline), GPU drew {} in {} LOD lists {:?}, CPU drew {} \
                 in {} cells ({} draws); {lod_mismatches} LODs at a threshold",
                inside.len(),
                borderline.len(),
                gpu_drawn.len(),
                lists.len(),
                lists.iter().map(Vec::len).collect::<Vec<_>>(),
                cpu_drawn.len(),
                cpu_stats.visible_cells,
                cpu_stats.draws_main,
            );
            assert!(missing.is_empty(), "camera {k}: the GPU path misses {missing:?}");
            assert!(
                extra.is_empty(),
                "camera {k}: the GPU path draws instances outside the frustum: {extra:?}"
            );
            assert!(cpu_missing.is_empty(), "camera {k}: the CPU path misses {cpu_missing:?}");
            assert!(inside.len() > 50, "camera {k} sees too little to be a test");
            assert!(
                gpu_drawn.iter().all(|&i| crowd.records()[i as usize].variant_bits & VARIANT_HIDDEN == 0)
            );
            // Attachment draws count the same instances up to attachment_max_lod.
            assert_eq!(report.draws_main, lists.len() as u32);
        }
    }
}

/// With every instance at LOD 0 (a large negative bias) the two paths draw the same triangles of the
/// same instances, so the images agree (up to the order of equal-depth fragments).
fn gpu_and_cpu_culling_render_the_same_image_at_lod_0<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = crowd(&asset, 3000);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    crowd.config_mut().lod_bias = -30.0;
    crowd.config_mut().attachment_max_lod = 8;
    crowd.config_mut().shadow_max_lod = 8;
    crowd.advance(0.75);
    let camera = Camera::look_at(
        [0.0, 6.0, -10.0],
        [10.0, 0.0, 30.0],
        0.9,
        SIZE[0] as f32 / SIZE[1] as f32,
        0.1,
        200.0,
    );
    let mut images = Vec::new();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ground: true, ..Default::default() };
        renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
        let image = renderer.read_rgba8().unwrap();
        let backend = if renderer.adapter_name().starts_with("wgpu") { "wgpu" } else { "vulkan" };
        save_image(&format!("culling_{culling:?}_{backend}"), SIZE, &image);
        images.push(image);
    }
    let differ = images[0].chunks_exact(4).zip(images[1].chunks_exact(4)).filter(|(a, b)| a != b).count();
    println!(
        "{}: {differ} of {} pixels differ between CPU and GPU culling",
        renderer.adapter_name(),
        SIZE[0] * SIZE[1]
    );
    assert!(differ <= 20, "{differ} pixels differ");
}

/// The GPU's counts reach the frame reports without a wait: frames rendered back to back (no
/// `wait`, no read-back) report counts of an earlier frame, 1 to `RING_DEPTH` frames late, matching
/// the per-instance frustum test of the frame they are from; after a wait the counts of the last
/// frame are exactly those of its read-back visible lists, 0 frames late, and the next frame
/// reports them 1 frame late.
fn gpu_counts_arrive_late_without_a_wait<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let lod_triangles: Vec<u64> =
        asset.manifest().lods.iter().map(|l| u64::from(l.index_count / 3)).collect();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = crowd(&asset, 3000);
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    let aspect = SIZE[0] as f32 / SIZE[1] as f32;
    let options = RenderOptions { culling: Culling::Gpu, shadows: false, ..Default::default() };
    // Each frame looks somewhere else, so that a count says which frame it is from.
    let camera = |f: usize| {
        let a = f as f32 * 0.7;
        Camera::look_at(
            [0.0, 10.0, 0.0],
            [60.0 * a.cos(), 0.0, 60.0 * a.sin()],
            0.5 + 0.05 * f as f32,
            aspect,
            0.5,
            150.0,
        )
    };
    // (inside, borderline) per frame: the CPU's per-instance frustum test.
    let mut expected = Vec::new();
    let mut arrived = 0;
    const FRAMES: usize = 16;
    for f in 0..FRAMES {
        let cam = camera(f);
        let (inside, borderline) = cpu_visible(&crowd, &cam, 1e-3);
        expected.push((inside.len(), borderline.len()));
        let report = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &cam, &options).unwrap();
        assert_eq!(report.stats.simulated, crowd.count());
        match (report.gpu_counts, report.gpu_counts_frames_late) {
            (Some(counts), Some(late)) => {
                let late = late as usize;
                assert!((1..=RING_DEPTH).contains(&late), "frame {f}: {late} frames late");
                let (inside, borderline) = expected[f - late];
                println!(
                    "frame {f}: counts of frame {} ({late} late): drawn {} (frustum test {inside}, {borderline} \
                     borderline), {} triangles, per LOD {:?}",
                    f - late,
                    counts.drawn,
                    counts.triangles,
                    counts.per_lod
                );
                assert!(
                    counts.drawn as usize + borderline >= inside
                        && counts.drawn as usize <= inside + borderline,
                    "frame {f}: the GPU drew {} of frame {}, the frustum test {inside} ({borderline} borderline)",
                    counts.drawn,
                    f - late
                );
                let triangles: u64 =
                    counts.per_lod.iter().zip(&lod_triangles).map(|(&n, &t)| u64::from(n) * t).sum();
                assert_eq!(counts.triangles, triangles);
                assert_eq!((report.stats.drawn, report.stats.submitted), (counts.drawn, counts.drawn));
                assert_eq!(report.stats.triangles, counts.triangles);
                arrived += 1;
            }
            (None, None) => {
                assert_eq!((report.stats.drawn, report.stats.triangles), (0, 0));
                println!("frame {f}: no counts yet (skipped copy: {})", report.gpu_counts_skipped);
            }
            other => panic!("frame {f}: counts and lag disagree: {other:?}"),
        }
        if f == 0 {
            assert_eq!(report.gpu_counts_frames_late, None, "the first frame has no earlier counts");
        }
    }
    assert!(arrived > 0, "no counts arrived in {FRAMES} frames without a wait");

    // After a wait: exactly the read-back lists of the last frame, 0 frames late.
    let lists = renderer.read_gpu_visible(&gpu_crowd).unwrap();
    let last = renderer.gpu_counts(&mut gpu_crowd).unwrap().expect("the waited-for frame's counts");
    assert_eq!(last.frames_late, 0);
    let per_lod: Vec<u32> = lists.iter().map(|l| l.len() as u32).collect();
    assert_eq!(last.counts.per_lod[..per_lod.len()], per_lod[..]);
    assert!(last.counts.per_lod[per_lod.len()..].iter().all(|&n| n == 0));
    assert_eq!(last.counts.drawn, per_lod.iter().sum::<u32>());
    let triangles: u64 = per_lod.iter().zip(&lod_triangles).map(|(&n, &t)| u64::from(n) * t).sum();
    assert_eq!(last.counts.triangles, triangles);
    // The next frame reports them, 1 frame late.
    let report = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(0), &options).unwrap();
    assert_eq!(report.gpu_counts_frames_late, Some(1));
    assert_eq!(report.gpu_counts, Some(last.counts));
    assert!(!report.gpu_counts_skipped);
    println!(
        "{}: {arrived} of {FRAMES} frames reported counts without a wait; after a wait {:?} per LOD, 0 frames late",
        renderer.adapter_name(),
        per_lod
    );
    // CPU culling reports its own counts and no GPU counts.
    let cpu = RenderOptions { culling: Culling::Cpu, ..options };
    let report = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(0), &cpu).unwrap();
    assert_eq!(
        (report.gpu_counts, report.gpu_counts_frames_late, report.gpu_counts_skipped),
        (None, None, false)
    );
    assert!(report.stats.drawn > 0);
}

// Written once against the backend seam; each backend is checked on its own (the default 2048² shadow
// map of both backends' `RendererConfig`).
per_backend!(
    culling_agrees_with_the_frustum,
    SIZE,
    2048,
    super::gpu_and_cpu_culling_agree_with_the_per_instance_frustum_test
);
per_backend!(
    culling_paths_render_the_same_image,
    SIZE,
    2048,
    super::gpu_and_cpu_culling_render_the_same_image_at_lod_0
);
per_backend!(gpu_counts_arrive_without_a_wait, SIZE, 2048, super::gpu_counts_arrive_late_without_a_wait);
