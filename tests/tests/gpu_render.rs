//! Headless rendering of a crowd of the baked humanoid on the software Vulkan driver: the image is
//! not blank and the crowd covers the region its bounds project to; every runtime toggle renders
//! without validation errors; shadows add exactly the caster draws. The tests written against the
//! backend seam run on wgpu and on Vulkan (`per_backend!`); those that read wgpu's own state (error
//! scopes, the GPU record buffer) run on wgpu.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, RenderMode};
use vat_tests::{TestGpu, humanoid_vat, per_backend, save_image, test_gpu};
use vat_wgpu::{
    CrowdDraw, FrameReport, GpuAsset, GpuCrowd, HeadlessTarget, RenderOptions, Renderer, RendererConfig,
};

const SIZE: [u32; 2] = [320, 240];

struct Scene {
    gpu: TestGpu,
    renderer: Renderer,
    asset: GpuAsset,
    gpu_crowd: GpuCrowd,
    crowd: Crowd,
    target: HeadlessTarget,
    camera: Camera,
}

/// A `side` x `side` grid of humanoids 2 m apart around the origin, varied clips, variants and tints.
fn scene(side: u32) -> Scene {
    let gpu = test_gpu();
    let bytes = humanoid_vat();
    let asset = Asset::parse(bytes).unwrap();
    let config = RendererConfig::default();
    let mut renderer = Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for z in 0..side {
        for x in 0..side {
            let i = z * side + x;
            let p =
                [(x as f32 - (side - 1) as f32 * 0.5) * 2.0, 0.0, (z as f32 - (side - 1) as f32 * 0.5) * 2.0];
            let id = crowd.spawn_at_phase(p, i as f32 * 0.7, i % clips, (i as f32 * 0.137).fract());
            crowd.set_variant(id, ((i * 37) & 0xFF) | (vat_core::instance::VARIANT_ACCESSORY * (i % 2)));
        }
    }
    let target = HeadlessTarget::new(&gpu.device, SIZE, config).unwrap();
    let camera =
        Camera::look_at([0.0, 6.0, 14.0], [0.0, 0.8, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 300.0);
    let gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    Scene { gpu, renderer, asset: gpu_asset, gpu_crowd, crowd, target, camera }
}

/// The scene of [`scene`] on any backend, behind the seam.
struct SeamScene<R: CrowdRenderer> {
    renderer: R,
    asset: R::Asset,
    gpu_crowd: R::Crowd,
    crowd: Crowd,
    camera: Camera,
}

/// [`scene`]'s crowd and camera on `renderer` (of [`SIZE`]).
fn seam_scene<R: CrowdRenderer>(mut renderer: R, side: u32) -> SeamScene<R> {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for z in 0..side {
        for x in 0..side {
            let i = z * side + x;
            let p =
                [(x as f32 - (side - 1) as f32 * 0.5) * 2.0, 0.0, (z as f32 - (side - 1) as f32 * 0.5) * 2.0];
            let id = crowd.spawn_at_phase(p, i as f32 * 0.7, i % clips, (i as f32 * 0.137).fract());
            crowd.set_variant(id, ((i * 37) & 0xFF) | (vat_core::instance::VARIANT_ACCESSORY * (i % 2)));
        }
    }
    let camera =
        Camera::look_at([0.0, 6.0, 14.0], [0.0, 0.8, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 300.0);
    let gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    SeamScene { renderer, asset: gpu_asset, gpu_crowd, crowd, camera }
}

fn seam_render<R: CrowdRenderer>(s: &mut SeamScene<R>, options: &RenderOptions) -> (FrameReport, Vec<u8>) {
    let report =
        s.renderer.render_crowd(&s.asset, &mut s.gpu_crowd, &mut s.crowd, &s.camera, options).unwrap();
    (report, s.renderer.read_rgba8().unwrap())
}

fn backend<R: CrowdRenderer>(renderer: &R) -> &'static str {
    if renderer.adapter_name().starts_with("wgpu") { "wgpu" } else { "vulkan" }
}

fn render(s: &mut Scene, options: &RenderOptions) -> (FrameReport, Vec<u8>) {
    let mut encoder = s.gpu.device.create_command_encoder(&Default::default());
    let report = s
        .renderer
        .render(
            &mut encoder,
            &mut [CrowdDraw { asset: &s.asset, gpu: &mut s.gpu_crowd, crowd: &mut s.crowd }],
            &s.camera,
            s.target.target(),
            options,
        )
        .unwrap();
    s.gpu.queue.submit([encoder.finish()]);
    (report, s.target.read_rgba8(&s.gpu.device, &s.gpu.queue).unwrap())
}

/// The colour of the top-left pixel (the scene leaves the corners empty).
fn background(image: &[u8]) -> [u8; 4] {
    [image[0], image[1], image[2], image[3]]
}

fn covered(image: &[u8]) -> usize {
    let bg = background(image);
    image.chunks_exact(4).filter(|p| **p != bg).count()
}

/// Screen rectangles (pixels, inclusive) of every shown instance's bounding box (the 8 corners of the
/// asset bounds placed by the record and projected by the camera); None for an instance behind the
/// camera.
fn projected_rects(crowd: &Crowd, camera: &Camera) -> Vec<Option<[i64; 4]>> {
    let bounds = crowd.asset().bounds;
    crowd
        .records()
        .iter()
        .map(|r| {
            let (sin, cos) = r.yaw.sin_cos();
            let mut rect = [i64::MAX, i64::MAX, i64::MIN, i64::MIN];
            for k in 0..8 {
                let p: [f32; 3] = std::array::from_fn(|a| {
                    bounds.min[a] + if k & (1 << a) != 0 { bounds.extent[a] } else { 0.0 }
                });
                let q = p.map(|v| v * r.scale);
                let w = [
                    r.position[0] + cos * q[0] + sin * q[2],
                    r.position[1] + q[1],
                    r.position[2] + cos * q[2] - sin * q[0],
                ];
                let c = camera.project(w);
                if c[3] <= 0.0 {
                    return None;
                }
                let x = ((c[0] / c[3]) * 0.5 + 0.5) * SIZE[0] as f32;
                let y = (0.5 - (c[1] / c[3]) * 0.5) * SIZE[1] as f32;
                rect = [
                    rect[0].min(x.floor() as i64),
                    rect[1].min(y.floor() as i64),
                    rect[2].max(x.ceil() as i64),
                    rect[3].max(y.ceil() as i64),
                ];
            }
            Some(rect)
        })
        .collect()
}

fn crowd_renders_headless_inside_its_projected_bounds<R: CrowdRenderer>(renderer: R) {
    let mut s = seam_scene(renderer, 5);
    s.crowd.advance(0.4);
    let (report, image) = seam_render(&mut s, &RenderOptions::default());
    println!("{report:?}");
    save_image(&format!("crowd-{}", backend(&s.renderer)), SIZE, &image);
    let bg = background(&image);
    // Pixels of the union of the projected boxes (1 px of slack for rasterisation rules).
    let mut inside = vec![false; (SIZE[0] * SIZE[1]) as usize];
    for rect in projected_rects(&s.crowd, &s.camera) {
        let [x0, y0, x1, y1] = rect.unwrap();
        for y in (y0 - 1).max(0)..=(y1 + 1).min(SIZE[1] as i64 - 1) {
            for x in (x0 - 1).max(0)..=(x1 + 1).min(SIZE[0] as i64 - 1) {
                inside[(y * SIZE[0] as i64 + x) as usize] = true;
            }
        }
    }
    let (mut drawn_inside, mut drawn_outside) = (0usize, 0usize);
    for (px, &ins) in image.chunks_exact(4).zip(&inside) {
        if *px != bg {
            if ins { drawn_inside += 1 } else { drawn_outside += 1 }
        }
    }
    let area = inside.iter().filter(|&&b| b).count();
    let share = drawn_inside as f64 / area as f64;
    println!(
        "{drawn_inside} pixels drawn inside the projected boxes ({area} px, {:.1} %), {drawn_outside} outside",
        share * 100.0
    );
    assert_eq!(drawn_outside, 0, "pixels drawn outside every instance's projected bounds");
    // A character covers a fair part of its box (which holds every frame of every clip, arms out):
    // measured 14 %.
    assert!(share > 0.08, "the crowd covers only {:.1} % of its projected bounds", share * 100.0);
    assert_eq!(report.stats.drawn, 25);
}

fn a_crowd_that_did_not_move_uploads_no_instance_bytes<R: CrowdRenderer>(renderer: R) {
    let mut s = seam_scene(renderer, 4);
    let (first, _) = seam_render(&mut s, &RenderOptions::default());
    assert!(first.stats.uploaded_record_bytes >= 16 * 64, "{first:?}");
    for culling in [vat_wgpu::Culling::Cpu, vat_wgpu::Culling::Gpu] {
        s.crowd.advance(1.0 / 30.0);
        let options = RenderOptions { culling, ..Default::default() };
        let (still, image) = seam_render(&mut s, &options);
        assert_eq!(still.stats.uploaded_record_bytes, 0, "{culling:?}: {still:?}");
        assert_eq!(still.stats.uploaded_list_bytes, 0, "{culling:?}: {still:?}");
        // Only the per-frame uniforms (and the culling parameters) are written.
        let uniforms = std::mem::size_of::<vat_core::backend::gpu::FrameUniforms>() as u64;
        let cull = std::mem::size_of::<vat_core::backend::gpu::CullParams>() as u64;
        let expected = if culling == vat_wgpu::Culling::Gpu { uniforms + cull } else { uniforms };
        assert_eq!(still.uploaded_bytes, expected, "{culling:?}");
        assert!(covered(&image) > 500);
    }
    // Moving one instance uploads one record.
    s.crowd.set_transform(3, [0.5, 0.0, 0.5], 1.0);
    let (moved, _) = seam_render(&mut s, &RenderOptions::default());
    assert_eq!(moved.stats.uploaded_record_bytes, 64, "{moved:?}");
}

/// Many scattered changes (more short runs than `ScatterPlan` writes in place) reach the GPU through
/// the scatter pass, on both culling paths: the GPU's record buffer equals the crowd's afterwards,
/// bit for bit, and the frame recorded the extra dispatch.
#[test]
fn scattered_changes_reach_the_gpu_records_exactly() {
    use vat_core::backend::gpu::{SCATTER_MIN_DIRECT_RECORDS, SCATTER_MIN_RANGES};
    let mut s = scene(40); // 1600 instances
    render(&mut s, &RenderOptions::default());
    let n = s.crowd.count();
    for (round, culling) in [vat_wgpu::Culling::Cpu, vat_wgpu::Culling::Gpu].into_iter().enumerate() {
        // Every 23rd instance moves (70 isolated runs, more than the in-place limit), plus one long
        // run that is written in place.
        let mut moved = 0;
        for i in (0..n).step_by(23) {
            let r = s.crowd.records()[i as usize];
            s.crowd.set_transform(i, [r.position[0] + 0.25, 0.0, r.position[2] - 0.125], r.yaw + 0.5);
            moved += 1;
        }
        for i in 800..800 + SCATTER_MIN_DIRECT_RECORDS as u32 * 2 {
            s.crowd.set_variant(i, (i + round as u32) & 0xFF);
        }
        assert!(moved > SCATTER_MIN_RANGES);
        let options = RenderOptions { culling, ..Default::default() };
        let (report, _) = render(&mut s, &options);
        let cull = u32::from(culling == vat_wgpu::Culling::Gpu);
        assert_eq!(report.dispatches, 1 + cull, "{culling:?}: the scatter pass ran");
        let gpu = s.renderer.read_gpu_records(&s.gpu_crowd).unwrap();
        assert_eq!(gpu.len(), n as usize);
        let differing = gpu.iter().zip(s.crowd.records()).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 0, "{culling:?}: GPU records differ from the crowd's");
        // A still frame afterwards needs no scatter.
        let (still, _) = render(&mut s, &options);
        assert_eq!(still.dispatches, cull, "{culling:?}");
    }
}

fn shadows_add_exactly_the_caster_draws<R: CrowdRenderer>(renderer: R) {
    let mut s = seam_scene(renderer, 6);
    s.crowd.advance(0.3);
    // With the ground, so the shadows have something to fall on.
    let on = RenderOptions { shadows: true, ground: true, ..Default::default() };
    let off = RenderOptions { shadows: false, ..on };
    for culling in [vat_wgpu::Culling::Cpu, vat_wgpu::Culling::Gpu] {
        let (with, image_with) = seam_render(&mut s, &RenderOptions { culling, ..on });
        let (without, image_without) = seam_render(&mut s, &RenderOptions { culling, ..off });
        println!("{culling:?}: shadows on {with:?}\n  off {without:?}");
        assert_eq!(without.draws_shadow, 0);
        assert_eq!(with.draws_main, without.draws_main);
        assert_eq!(with.draws_attachments, without.draws_attachments);
        let config = *s.crowd.config();
        let expected = match culling {
            // The crowd's shadow batches, plus the attachment batches of caster LODs.
            vat_wgpu::Culling::Cpu => {
                let mut probe = s.crowd.clone();
                let draws = probe.prepare_frame(&s.camera);
                let attachment_casters =
                    draws.attachments.iter().filter(|b| b.lod <= config.shadow_max_lod).count() as u32;
                assert_eq!(draws.shadow.len() as u32, with.stats.draws_shadow);
                with.stats.draws_shadow + attachment_casters
            }
            // One indirect draw per caster LOD, bodies and attachments.
            vat_wgpu::Culling::Gpu => {
                (config.shadow_max_lod + 1) + (config.shadow_max_lod.min(config.attachment_max_lod) + 1)
            }
        };
        assert_eq!(with.draws_shadow, expected, "{culling:?}");
        assert!(with.draws_shadow > 0);
        // The shadow map darkens part of the crowd.
        let darker = image_with
            .chunks_exact(4)
            .zip(image_without.chunks_exact(4))
            .filter(|(a, b)| {
                u32::from(a[0]) + u32::from(a[1]) + u32::from(a[2]) + 6
                    < u32::from(b[0]) + u32::from(b[1]) + u32::from(b[2])
            })
            .count();
        println!("{darker} pixels darker with shadows");
        assert!(darker > 1000, "{culling:?}: shadows darken only {darker} pixels");
        assert_eq!((with.draws_ground, without.draws_ground), (1, 1));
        save_image(&format!("shadows_{culling:?}_{}", backend(&s.renderer)), SIZE, &image_with);
    }
}

/// Every runtime toggle, alone and in a few combinations, renders without a wgpu validation error and
/// gives a non-blank image; toggles that change what is drawn change the draw counts accordingly.
#[test]
fn every_runtime_toggle_renders() {
    use vat_wgpu::{Culling, RenderMode};
    let mut s = scene(6);
    s.crowd.advance(0.2);
    // Half the crowd cross-fades to another clip, mid-way when rendered.
    for i in (0..s.crowd.count()).step_by(2) {
        s.crowd.play(i, (i / 2) % 4, 1.0);
    }
    s.crowd.advance(0.5);
    let base = *s.crowd.config();
    let mut results = Vec::new();
    for mode in [RenderMode::Vat, RenderMode::Bone] {
        for culling in [Culling::Cpu, Culling::Gpu] {
            for (name, change) in [
                ("defaults", &(|_: &mut CrowdConfig| {}) as &dyn Fn(&mut CrowdConfig)),
                ("cross-fade off", &|c: &mut CrowdConfig| c.cross_fade = false),
                ("cross-fade everywhere", &|c: &mut CrowdConfig| c.cross_fade_max_lod = 8),
                ("lod bias +3", &|c: &mut CrowdConfig| c.lod_bias = 3.0),
                ("lod bias -3", &|c: &mut CrowdConfig| c.lod_bias = -3.0),
                ("attachments off", &|c: &mut CrowdConfig| c.attachments = false),
                ("far pool off", &|c: &mut CrowdConfig| c.far_pool = false),
                ("far pool + bias 4", &|c: &mut CrowdConfig| {
                    c.far_pool = true;
                    c.lod_bias = 4.0;
                }),
                ("crowd shadows off", &|c: &mut CrowdConfig| c.shadows = false),
            ] {
                *s.crowd.config_mut() = base;
                change(s.crowd.config_mut());
                let scope = s.gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
                let (report, image) = render(&mut s, &RenderOptions { mode, culling, ..Default::default() });
                let error = pollster::block_on(scope.pop());
                assert!(error.is_none(), "{mode:?} {culling:?} {name}: {error:?}");
                let px = covered(&image);
                println!(
                    "{mode:?} {culling:?} {name}: {px} px, draws main {} shadow {} attachments {}",
                    report.draws_main, report.draws_shadow, report.draws_attachments
                );
                assert!(px > 1500, "{mode:?} {culling:?} {name}: only {px} pixels drawn");
                let config = *s.crowd.config();
                if !config.attachments {
                    assert_eq!(report.draws_attachments, 0);
                }
                if !config.shadows {
                    assert_eq!(report.draws_shadow, 0);
                }
                if culling == Culling::Gpu {
                    // One draw per LOD, whatever the cells.
                    assert_eq!(report.draws_main, s.asset.lod_count().min(s.crowd.asset().lod_count()));
                    assert_eq!(report.dispatches, 1);
                } else {
                    assert_eq!(report.draws_main, report.stats.draws_main);
                }
                results.push(((mode, culling, name), image));
            }
        }
    }
    save_image(
        "toggles_bone_gpu",
        SIZE,
        &results
            .iter()
            .find(|((m, c, n), _)| *m == RenderMode::Bone && *c == Culling::Gpu && *n == "defaults")
            .unwrap()
            .1,
    );
    // Bone mode and VAT mode show the same crowd: the images nearly agree (different interpolation of
    // normals and quantisation of positions move a few edge pixels).
    for culling in [Culling::Cpu, Culling::Gpu] {
        let find = |mode| {
            &results.iter().find(|((m, c, n), _)| *m == mode && *c == culling && *n == "defaults").unwrap().1
        };
        let (vat, bone) = (find(RenderMode::Vat), find(RenderMode::Bone));
        let differ = vat
            .chunks_exact(4)
            .zip(bone.chunks_exact(4))
            .filter(|(a, b)| a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > 24))
            .count();
        println!("{culling:?}: VAT vs bone mode, {differ} pixels differ by more than 24 levels");
        assert!(differ < covered(vat) / 10, "{culling:?}: {differ} pixels differ between VAT and bone mode");
    }
}

/// The cap (the head socket's attachment) is drawn where the head is, per instance by
/// `VARIANT_ACCESSORY`, in both culling modes and both animation modes: switching the bit changes
/// pixels only in the top part of the character's projected bounds, and enough of them to be a cap.
#[test]
fn attachments_follow_the_head_and_the_accessory_bit() {
    use vat_core::instance::VARIANT_ACCESSORY;
    use vat_wgpu::{Culling, RenderMode};
    let mut s = scene(1);
    s.camera =
        Camera::look_at([0.0, 1.4, 3.2], [0.0, 0.95, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 50.0);
    let walk = 1;
    s.crowd.play(0, walk, 0.0);
    s.crowd.advance(0.37);
    let rect = projected_rects(&s.crowd, &s.camera)[0].unwrap();
    for mode in [RenderMode::Vat, RenderMode::Bone] {
        for culling in [Culling::Cpu, Culling::Gpu] {
            // Without shadows: the cap's shadow falls on the shoulders.
            let options = RenderOptions { mode, culling, shadows: false, ..Default::default() };
            s.crowd.set_variant(0, VARIANT_ACCESSORY);
            let (with, on) = render(&mut s, &options);
            s.crowd.set_variant(0, 0);
            let (without, off) = render(&mut s, &options);
            assert!(with.draws_attachments >= 1 && without.draws_attachments <= with.draws_attachments);
            let mut changed = 0;
            let head_limit = rect[1] + (rect[3] - rect[1]) * 3 / 10;
            for (i, (a, b)) in on.chunks_exact(4).zip(off.chunks_exact(4)).enumerate() {
                if a != b {
                    changed += 1;
                    let y = (i as u32 / SIZE[0]) as i64;
                    assert!(
                        y <= head_limit,
                        "{mode:?} {culling:?}: cap pixel at row {y}, head ends at {head_limit}"
                    );
                }
            }
            println!(
                "{mode:?} {culling:?}: the cap changes {changed} pixels (box rows {}..{})",
                rect[1], rect[3]
            );
            assert!(changed > 60, "{mode:?} {culling:?}: the cap changes only {changed} pixels");
            if mode == RenderMode::Vat && culling == Culling::Cpu {
                save_image("cap", SIZE, &on);
            }
        }
    }
}

/// GPU culling runs no CPU culling (the crowd's grid is never built; the report carries only the
/// instance count and the dirty record bytes), uploads every record the first time and only the
/// changed ones after; the two paths alternate on one renderer (the instance list, untouched by GPU
/// frames, is uploaded whole at the next CPU frame), also across a grown record buffer: every frame
/// equals the same frame rendered by a second renderer from a fresh upload of a copy of the crowd.
#[test]
fn gpu_culling_skips_the_cpu_frame_and_the_paths_alternate() {
    use vat_core::crowd::CrowdStats;
    use vat_wgpu::Culling;
    let uniforms = std::mem::size_of::<vat_core::backend::gpu::FrameUniforms>() as u64;
    let cull = std::mem::size_of::<vat_core::backend::gpu::CullParams>() as u64;
    let gpu = RenderOptions { culling: Culling::Gpu, ..Default::default() };
    let cpu = RenderOptions { culling: Culling::Cpu, ..Default::default() };
    // 64 instances: exactly the smallest record buffer.
    let mut s = scene(8);
    s.crowd.advance(0.3);
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let mut reference = Renderer::new(&s.gpu.device, &s.gpu.queue, RendererConfig::default()).unwrap();
    let reference_asset = reference.upload(&asset).unwrap();
    // Renders with `options`, then the same frame with the reference renderer from scratch.
    let mut check = |s: &mut Scene, options: &RenderOptions, what: &str| {
        let (report, image) = render(s, options);
        let mut copy = s.crowd.clone();
        let mut fresh_gpu = reference.create_crowd(&copy).unwrap();
        let mut encoder = s.gpu.device.create_command_encoder(&Default::default());
        reference
            .render(
                &mut encoder,
                &mut [CrowdDraw { asset: &reference_asset, gpu: &mut fresh_gpu, crowd: &mut copy }],
                &s.camera,
                s.target.target(),
                options,
            )
            .unwrap();
        s.gpu.queue.submit([encoder.finish()]);
        let fresh = s.target.read_rgba8(&s.gpu.device, &s.gpu.queue).unwrap();
        assert!(covered(&image) > 1000, "{what}: blank");
        assert!(image == fresh, "{what}: differs from a fresh upload");
        report
    };

    let first = check(&mut s, &gpu, "first GPU frame");
    let n = s.crowd.count();
    let all = u64::from(n) * 64;
    assert!(s.crowd.grid().is_none(), "GPU culling built the crowd's grid");
    let expected = CrowdStats { simulated: n, uploaded_record_bytes: all, ..CrowdStats::default() };
    assert_eq!(first.stats, expected);
    // The first frame also uploads every instance's 16 bytes of user data (zero here).
    assert_eq!(first.uploaded_bytes, all + u64::from(n) * 16 + uniforms + cull);
    assert_eq!(first.dispatches, 1);

    // One instance moves to another cell: one record (the culling parameters did not change: not
    // rewritten), still no CPU culling.
    s.crowd.set_transform(5, [9.0, 0.0, -3.0], 0.5);
    let moved = check(&mut s, &gpu, "GPU frame after a move");
    assert_eq!((moved.stats.uploaded_record_bytes, moved.uploaded_bytes), (64, 64 + uniforms));
    assert!(s.crowd.grid().is_none());

    // CPU culling after GPU frames: the whole list goes up, no record (already resident).
    let to_cpu = check(&mut s, &cpu, "CPU frame after GPU frames");
    assert_eq!(to_cpu.stats.uploaded_record_bytes, 0);
    assert!(to_cpu.uploaded_bytes >= uniforms + u64::from(n) * 4, "{to_cpu:?}");

    // Back to the GPU with a move whose listing waits for the next CPU frame (an incremental list
    // update on a list the GPU frames left alone).
    s.crowd.set_transform(7, [-8.0, 0.0, 4.0], 1.5);
    check(&mut s, &gpu, "GPU frame after a CPU frame");
    let late = check(&mut s, &cpu, "CPU frame with a move listed late");
    assert_eq!(late.stats.uploaded_record_bytes, 0);
    assert!(late.stats.uploaded_list_bytes > 0, "{late:?}");

    // A far pool holding every instance grows the list buffer (to 128 entries).
    s.crowd.config_mut().lod_bias = 10.0;
    check(&mut s, &cpu, "CPU frame, everything in the far pool");
    s.crowd.config_mut().lod_bias = 0.0;
    // The crowd outgrows the record buffer during a GPU frame (new, empty buffers of 128 records and
    // 128 list entries); two spawns next to instance 5 (moved away from the others) change only the
    // tail of the list, so the next CPU frame must upload the whole list itself.
    for (k, z) in [-1.5f32, -4.5].into_iter().enumerate() {
        let id = s.crowd.spawn([9.5, 0.0, z], 0.3, k as u32);
        s.crowd.set_variant(id, 77);
    }
    let grown = check(&mut s, &gpu, "GPU frame after growth");
    assert_eq!(grown.stats.simulated, n + 2);
    assert!(grown.uploaded_bytes >= u64::from(n + 2) * 64, "{grown:?}");
    check(&mut s, &cpu, "CPU frame after growth");
}

// Written once against the backend seam, run on each backend on its own (same tolerances: both
// rasterise the same WGSL on the same driver). The default 2048² shadow map of both backends.
per_backend!(
    renders_inside_its_projected_bounds,
    SIZE,
    2048,
    super::crowd_renders_headless_inside_its_projected_bounds
);
per_backend!(
    still_crowd_uploads_nothing,
    SIZE,
    2048,
    super::a_crowd_that_did_not_move_uploads_no_instance_bytes
);
/// Rest mode draws the bind pose: the same image at any time (nothing animates), unlike VAT mode's,
/// with the same draws and instances as VAT mode (only the vertex stage differs), on CPU and GPU
/// culling.
fn rest_mode_draws_the_still_bind_pose<R: CrowdRenderer>(renderer: R) {
    let mut s = seam_scene(renderer, 4);
    // Attachments follow their capture tracks in every mode: off, so that nothing may move.
    s.crowd.config_mut().attachments = false;
    let differ =
        |a: &[u8], b: &[u8]| a.chunks_exact(4).zip(b.chunks_exact(4)).filter(|(p, q)| p != q).count();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let rest = RenderOptions { mode: RenderMode::Rest, culling, ..RenderOptions::default() };
        let vat = RenderOptions { mode: RenderMode::Vat, ..rest };
        let (report, first) = seam_render(&mut s, &rest);
        let (vat_report, animated) = seam_render(&mut s, &vat);
        s.crowd.advance(0.37);
        let (_, later) = seam_render(&mut s, &rest);
        let (_, animated_later) = seam_render(&mut s, &vat);
        let name = backend(&s.renderer);
        save_image(&format!("rest-{name}-{culling:?}"), SIZE, &first);
        let (rest_px, vat_px) = (covered(&first), covered(&animated));
        assert!(
            rest_px > 800 && vat_px > 800,
            "{name} {culling:?}: drawn: rest {rest_px} pixels, VAT {vat_px}"
        );
        assert_eq!(differ(&first, &later), 0, "{name} {culling:?}: pixels of the rest pose moved with time");
        assert!(differ(&animated, &animated_later) > 100, "{name} {culling:?}: VAT mode moves");
        assert!(differ(&first, &animated) > 100, "{name} {culling:?}: and is not the bind pose");
        assert_eq!(
            (report.draws_main, report.draws_shadow),
            (vat_report.draws_main, vat_report.draws_shadow)
        );
        if culling == Culling::Cpu {
            // (GPU culling reports an earlier frame's counts: not comparable frame to frame.)
            assert_eq!(report.stats.drawn, vat_report.stats.drawn);
        }
    }
}

per_backend!(rest_mode, SIZE, 2048, super::rest_mode_draws_the_still_bind_pose);

per_backend!(shadows_add_the_caster_draws, SIZE, 2048, super::shadows_add_exactly_the_caster_draws);
