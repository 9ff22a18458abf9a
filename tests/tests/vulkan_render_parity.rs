//! Render and culling parity between the two backends (issue 5, items 3b and 3c), written once
//! against vat-core's `CrowdRenderer` seam and run on `vat_wgpu::Offscreen` and
//! `vat_vulkan::Offscreen` with the same crowd, camera, time and options:
//!
//! - images: every runtime toggle (VAT and bone mode, CPU and GPU culling, shadows, ground,
//!   cross-fades mid-way, socket attachments, cross-fade off); the test prints, per case and overall,
//!   the share of pixels whose largest channel difference exceeds 2/255 and the largest difference,
//!   and fails above 0.1 %;
//! - culling: a scattered crowd seen by several cameras; the sorted per-LOD visible lists of the
//!   GPU-culled frame are identical, and so is every field of the frame report (draw counts,
//!   dispatches, uploaded bytes, the crowd's statistics) in both culling modes.
//!
//! vat-vulkan runs under the Khronos validation layer with a debug messenger; any error or warning it
//! reports, through device destruction (objects left alive), fails the test.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::{VARIANT_ACCESSORY, VARIANT_HIDDEN};
use vat_core::render::{CrowdRenderer, Culling, FrameReport, RenderMode, RenderOptions};
use vat_tests::{humanoid_vat, save_image};

/// Largest share of pixels that may differ by more than [`TOLERANCE`] (0.1 %).
const MAX_SHARE: f64 = 0.001;
/// Per-channel difference (of 255) a pixel may have without counting as different.
const TOLERANCE: u8 = 2;

fn vulkan(size: [u32; 2]) -> vat_vulkan::Offscreen {
    let mut r = vat_vulkan::Offscreen::new(size, Default::default()).unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    });
    let (ctx, _) = r.parts();
    assert!(
        ctx.validation_enabled() && ctx.messenger_enabled(),
        "the Khronos validation layer is not installed (apt-get install vulkan-validationlayers, or \
         `cargo xtask deps`): vat-vulkan tests must run under it"
    );
    r
}

fn wgpu(size: [u32; 2]) -> vat_wgpu::Offscreen {
    vat_wgpu::Offscreen::new(size, Default::default())
        .unwrap_or_else(|e| panic!("{e} (or run `cargo xtask deps` as root)"))
}

/// Drops the Vulkan renderer (and with it the device, which makes the validation layer report
/// objects left alive) and fails on any error or warning the messenger counted.
fn finish_validation(mut renderer: vat_vulkan::Offscreen) {
    let messages = renderer.parts().0.messages();
    drop(renderer);
    println!(
        "validation (through device destruction): {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(messages.errors(), 0, "the validation layer reported errors (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}

/// (pixels differing by more than [`TOLERANCE`] in some channel, largest channel difference).
fn image_difference(a: &[u8], b: &[u8]) -> (usize, u8) {
    assert_eq!(a.len(), b.len());
    let (mut differing, mut max) = (0, 0u8);
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let d = p.iter().zip(q).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
        max = max.max(d);
        if d > TOLERANCE {
            differing += 1;
        }
    }
    (differing, max)
}

/// A `side` x `side` grid of humanoids 2.2 m apart (distinct depths from the camera), varied clips,
/// tints and scales, half with the head-socket accessory; every third instance is cross-fading to
/// another clip over 2 s.
fn grid_crowd(asset: &Asset<'_>, side: u32) -> Crowd {
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for z in 0..side {
        for x in 0..side {
            let i = z * side + x;
            let p =
                [(x as f32 - (side - 1) as f32 * 0.5) * 2.2, 0.0, (z as f32 - (side - 1) as f32 * 0.5) * 2.2];
            let id = crowd.spawn_at_phase(p, i as f32 * 0.7, i % clips, (i as f32 * 0.137).fract());
            crowd
                .set_variant(id, ((i * 37) & 0xFF) | if i.is_multiple_of(2) { VARIANT_ACCESSORY } else { 0 });
            crowd.set_scale(id, 0.9 + 0.02 * (i % 7) as f32);
            if i.is_multiple_of(3) {
                crowd.play(id, (i + 2) % clips, 2.0);
            }
        }
    }
    crowd
}

/// Renders one frame of the same crowd state on both backends and returns both reports and images.
#[allow(clippy::too_many_arguments)]
fn render_both(
    vk: &mut vat_vulkan::Offscreen,
    vk_asset: &vat_vulkan::GpuAsset,
    vk_gpu: &mut vat_vulkan::GpuCrowd,
    vk_crowd: &mut Crowd,
    wg: &mut vat_wgpu::Offscreen,
    wg_asset: &vat_wgpu::GpuAsset,
    wg_gpu: &mut vat_wgpu::GpuCrowd,
    wg_crowd: &mut Crowd,
    camera: &Camera,
    options: &RenderOptions,
) -> ((FrameReport, Vec<u8>), (FrameReport, Vec<u8>)) {
    let v = vk.render_crowd(vk_asset, vk_gpu, vk_crowd, camera, options).unwrap();
    let v_image = vk.read_rgba8().unwrap();
    let w = wg.render_crowd(wg_asset, wg_gpu, wg_crowd, camera, options).unwrap();
    let w_image = wg.read_rgba8().unwrap();
    ((w, w_image), (v, v_image))
}

#[test]
fn vulkan_renders_the_same_image_as_wgpu_with_every_toggle() {
    const SIZE: [u32; 2] = [320, 240];
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let mut vk = vulkan(SIZE);
    let mut wg = wgpu(SIZE);
    println!("{} vs {}", vk.adapter_name(), wg.adapter_name());
    let vk_asset = vk.upload(&asset).unwrap();
    let wg_asset = wg.upload(&asset).unwrap();
    assert!(vk_asset.has_bones() && vk_asset.has_attachments());
    let mut vk_crowd = grid_crowd(&asset, 6);
    let mut wg_crowd = vk_crowd.clone();
    let mut vk_gpu = vk.create_crowd(&vk_crowd).unwrap();
    let mut wg_gpu = wg.create_crowd(&wg_crowd).unwrap();
    let camera =
        Camera::look_at([1.0, 5.0, 13.0], [0.0, 0.8, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 300.0);
    let base = RenderOptions { shadows: true, ground: true, ground_half_extent: 30.0, ..Default::default() };
    // (name, options, crowd cross-fade, crowd attachments)
    let cases = [
        ("vat-cpu", RenderOptions { ..base }, true, true),
        ("vat-gpu", RenderOptions { culling: Culling::Gpu, ..base }, true, true),
        ("bone-cpu", RenderOptions { mode: RenderMode::Bone, ..base }, true, true),
        ("bone-gpu", RenderOptions { mode: RenderMode::Bone, culling: Culling::Gpu, ..base }, true, true),
        ("vat-cpu-plain", RenderOptions { shadows: false, ground: false, ..base }, false, false),
        ("vat-gpu-plain", RenderOptions { culling: Culling::Gpu, shadows: false, ..base }, false, false),
        ("bone-cpu-no-ground", RenderOptions { mode: RenderMode::Bone, ground: false, ..base }, true, true),
    ];
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let (mut total_differing, mut total_pixels, mut worst) = (0usize, 0usize, 0u8);
    let mut worst_share = 0f64;
    for (name, options, cross_fade, attachments) in cases {
        for crowd in [&mut vk_crowd, &mut wg_crowd] {
            crowd.advance(0.23);
            crowd.config_mut().cross_fade = cross_fade;
            crowd.config_mut().attachments = attachments;
        }
        let ((w, w_image), (v, v_image)) = render_both(
            &mut vk,
            &vk_asset,
            &mut vk_gpu,
            &mut vk_crowd,
            &mut wg,
            &wg_asset,
            &mut wg_gpu,
            &mut wg_crowd,
            &camera,
            &options,
        );
        save_image(&format!("parity-{name}-wgpu"), SIZE, &w_image);
        save_image(&format!("parity-{name}-vulkan"), SIZE, &v_image);
        assert_eq!(v, w, "{name}: the frame reports differ");
        if options.culling == Culling::Gpu {
            assert_eq!(
                vk.read_gpu_visible(&vk_gpu).unwrap(),
                wg.read_gpu_visible(&wg_gpu).unwrap(),
                "{name}"
            );
        }
        let background = [w_image[0], w_image[1], w_image[2], w_image[3]];
        let covered = w_image.chunks_exact(4).filter(|p| *p != background).count();
        assert!(covered > pixels / 20, "{name}: the wgpu image is nearly empty ({covered} pixels)");
        assert!(
            w.draws_main > 0 && (w.draws_attachments > 0) == attachments,
            "{name}: the case does not draw what it should: {w:?}"
        );
        assert_eq!(w.draws_shadow > 0, options.shadows, "{name}: {w:?}");
        let (differing, max) = image_difference(&w_image, &v_image);
        let share = differing as f64 / pixels as f64;
        println!(
            "{name}: {differing} of {pixels} pixels differ by more than {TOLERANCE}/255 ({:.4} %), max \
             difference {max}/255; draws main {} shadow {} attachments {} ground {}",
            share * 100.0,
            w.draws_main,
            w.draws_shadow,
            w.draws_attachments,
            w.draws_ground
        );
        total_differing += differing;
        total_pixels += pixels;
        worst = worst.max(max);
        worst_share = worst_share.max(share);
    }
    println!(
        "render parity overall: {total_differing} of {total_pixels} pixels differ by more than \
         {TOLERANCE}/255 ({:.4} %; worst case {:.4} %), max difference {worst}/255",
        100.0 * total_differing as f64 / total_pixels as f64,
        worst_share * 100.0
    );
    drop(vk_asset);
    finish_validation(vk);
    assert!(
        worst_share <= MAX_SHARE,
        "{:.4} % of pixels differ in one case (limit 0.1 %)",
        worst_share * 100.0
    );
}

/// A deterministic scatter of `n` instances over a 160 m square with random yaw, scale, clips and
/// 1 in 13 hidden (the culling test's crowd).
fn scattered_crowd(asset: &Asset<'_>, n: u32) -> Crowd {
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
        let p = [rand() * 160.0 - 80.0, rand() * 0.5, rand() * 160.0 - 80.0];
        let id = crowd.spawn_at_phase(p, rand() * std::f32::consts::TAU, i % clips, rand());
        crowd.set_scale(id, 0.7 + rand() * 0.8);
        let mut bits = ((i * 29) & 0xFF) | if i.is_multiple_of(3) { VARIANT_ACCESSORY } else { 0 };
        if i % 13 == 5 {
            bits |= VARIANT_HIDDEN;
        }
        crowd.set_variant(id, bits);
    }
    crowd
}

#[test]
fn vulkan_culls_exactly_like_wgpu_in_both_culling_modes() {
    const SIZE: [u32; 2] = [128, 96];
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let mut vk = vulkan(SIZE);
    let mut wg = wgpu(SIZE);
    let vk_asset = vk.upload(&asset).unwrap();
    let wg_asset = wg.upload(&asset).unwrap();
    let mut vk_crowd = scattered_crowd(&asset, 1500);
    let mut wg_crowd = vk_crowd.clone();
    let mut vk_gpu = vk.create_crowd(&vk_crowd).unwrap();
    let mut wg_gpu = wg.create_crowd(&wg_crowd).unwrap();
    let aspect = SIZE[0] as f32 / SIZE[1] as f32;
    let cameras = [
        Camera::look_at([0.0, 12.0, 0.0], [40.0, 0.0, 25.0], 0.9, aspect, 0.5, 150.0),
        Camera::look_at([-70.0, 3.0, -60.0], [0.0, 1.0, 0.0], 0.6, aspect, 0.1, 400.0),
        Camera::look_at([20.0, 60.0, 20.0], [20.0, 0.0, 19.0], 1.2, aspect, 1.0, 1000.0),
    ];
    let options = RenderOptions { shadows: false, ..Default::default() };
    let mut visible_total = 0usize;
    for (c, camera) in cameras.iter().enumerate() {
        for culling in [Culling::Cpu, Culling::Gpu] {
            let options = RenderOptions { culling, ..options };
            let ((w, _), (v, v_image)) = render_both(
                &mut vk,
                &vk_asset,
                &mut vk_gpu,
                &mut vk_crowd,
                &mut wg,
                &wg_asset,
                &mut wg_gpu,
                &mut wg_crowd,
                camera,
                &options,
            );
            save_image(&format!("cull-{c}-{culling:?}-vulkan"), SIZE, &v_image);
            assert_eq!(v, w, "camera {c}, {culling:?}: the frame reports differ");
            println!(
                "camera {c} {culling:?}: draws main {} attachments {}, dispatches {}, drawn {} (CPU stats), \
                 uploaded {} bytes: identical",
                v.draws_main, v.draws_attachments, v.dispatches, v.stats.drawn, v.uploaded_bytes
            );
            if culling == Culling::Gpu {
                let v_lists = vk.read_gpu_visible(&vk_gpu).unwrap();
                let w_lists = wg.read_gpu_visible(&wg_gpu).unwrap();
                let counts: Vec<usize> = v_lists.iter().map(Vec::len).collect();
                println!(
                    "camera {c}: GPU visible per LOD {counts:?} (vulkan), identical lists: {}",
                    v_lists == w_lists
                );
                assert_eq!(v_lists, w_lists, "camera {c}: the GPU-culled visible lists differ");
                assert!(v_lists.iter().all(|l| l.windows(2).all(|p| p[0] < p[1])), "lists are sorted");
                visible_total += counts.iter().sum::<usize>();
            }
            for crowd in [&mut vk_crowd, &mut wg_crowd] {
                crowd.advance(1.0 / 30.0);
            }
        }
    }
    assert!(visible_total > 100, "the cameras see almost nothing ({visible_total})");

    // Many short runs of moved records: both backends pack them for the record scatter (`cs_scatter`)
    // and must agree on the dispatch, the culling and the image.
    let camera = &cameras[1];
    for (step, culling) in [Culling::Cpu, Culling::Gpu].into_iter().enumerate() {
        for crowd in [&mut vk_crowd, &mut wg_crowd] {
            for i in (step as u32..1500).step_by(37) {
                let k = i as f32;
                crowd.set_transform(i, [-60.0 + (k * 0.37) % 40.0, 0.0, -50.0 + (k * 0.61) % 40.0], k);
            }
        }
        let options = RenderOptions { culling, ..options };
        let ((w, w_image), (v, v_image)) = render_both(
            &mut vk,
            &vk_asset,
            &mut vk_gpu,
            &mut vk_crowd,
            &mut wg,
            &wg_asset,
            &mut wg_gpu,
            &mut wg_crowd,
            camera,
            &options,
        );
        assert_eq!(v, w, "scatter, {culling:?}: the frame reports differ");
        let culled = u32::from(culling == Culling::Gpu);
        assert_eq!(v.dispatches, 1 + culled, "scatter, {culling:?}: no scatter pass: {v:?}");
        if culling == Culling::Gpu {
            assert_eq!(
                vk.read_gpu_visible(&vk_gpu).unwrap(),
                wg.read_gpu_visible(&wg_gpu).unwrap(),
                "scatter"
            );
        }
        let (differing, max) = image_difference(&w_image, &v_image);
        println!(
            "scatter {culling:?}: {} dispatches, {differing} pixels differ by more than {TOLERANCE}/255, max {max}/255",
            v.dispatches
        );
        assert!(differing as f64 <= MAX_SHARE * (SIZE[0] * SIZE[1]) as f64, "scatter, {culling:?}");
    }
    drop(vk_asset);
    finish_validation(vk);
}

/// Pixels of `a` with no pixel of `b` within `radius` pixels (Chebyshev) whose channels all lie within
/// `tolerance` of it (an image comparison that allows geometry to move by up to `radius` pixels), as
/// (on a silhouette: background within `radius` in either image, elsewhere).
fn unmatched_pixels(a: &[u8], b: &[u8], size: [u32; 2], radius: i64, tolerance: u8) -> (usize, usize) {
    let (w, h) = (i64::from(size[0]), i64::from(size[1]));
    let px = |img: &[u8], x: i64, y: i64| -> [u8; 4] {
        let i = ((y * w + x) * 4) as usize;
        [img[i], img[i + 1], img[i + 2], img[i + 3]]
    };
    let background = px(a, 0, 0);
    // Whether `f` holds for some pixel within `radius` of (x, y) inside the image.
    let any_near = |x: i64, y: i64, f: &dyn Fn(i64, i64) -> bool| {
        (y - radius..=y + radius)
            .filter(|yy| (0..h).contains(yy))
            .any(|yy| (x - radius..=x + radius).filter(|xx| (0..w).contains(xx)).any(|xx| f(xx, yy)))
    };
    let (mut silhouette, mut elsewhere) = (0, 0);
    for y in 0..h {
        for x in 0..w {
            let p = px(a, x, y);
            let close = |q: [u8; 4]| p.iter().zip(q).all(|(c, d)| c.abs_diff(d) <= tolerance);
            if any_near(x, y, &|xx, yy| close(px(b, xx, yy))) {
                continue;
            }
            if any_near(x, y, &|xx, yy| px(a, xx, yy) == background || px(b, xx, yy) == background) {
                silhouette += 1;
            } else {
                elsewhere += 1;
                println!("unmatched pixel ({x}, {y}) away from the silhouette: {p:?} vs {:?}", px(b, x, y));
            }
        }
    }
    (silhouette, elsewhere)
}

/// Every vertex format renders (issue 13, item 4): the humanoid baked in each format, a small crowd
/// drawn by both backends (CPU and GPU culling), each pair within the parity tolerance above, and each
/// format's wgpu image matching the Packed64 image within a tolerance derived from the two formats'
/// error bounds:
/// - geometry: a vertex of either bake is within `position_error_bound` (per axis) of the skinned
///   truth, so the two differ by at most `E = |bound_a| + |bound_b|` (Euclidean over the axes) times
///   the largest instance scale; at the nearest instance's distance `d` a pixel spans
///   `p = 2 d tan(fov_y / 2) / height` metres, so edges move by at most `ceil(E / p) + 1` pixels
///   (the `+ 1` for rasterisation rounding): the search radius;
/// - shading (no shadows, no ground): the lit colour is Lipschitz 1 in the normal's angle (Lambert
///   plus the sky term, albedo <= 1), the sRGB encode multiplies by at most 12.92, so a channel moves
///   by at most `255 * 12.92 * (angle_a + angle_b)` (normal bounds, radians) plus 2 for rounding.
///
/// Every pixel of the format's image must find a match in the Packed64 image, except on silhouettes,
/// where triangles seen edge-on cover pixel centres or not under any movement (so no position bound
/// limits their colour); those may be at most 0.1 % of the image.
#[test]
fn every_vertex_format_renders_on_both_backends_like_packed64() {
    use vat_core::format::encoding::{VertexFormat, normal_error_bound_degrees, position_error_bound};
    const SIZE: [u32; 2] = [160, 120];
    const FOV_Y: f32 = 0.9;
    let eye = [0.5f32, 2.2, 6.5];
    let camera = Camera::look_at(eye, [0.0, 0.9, 0.0], FOV_Y, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0);
    let mut vk = vulkan(SIZE);
    let mut wg = wgpu(SIZE);
    let options = RenderOptions { shadows: false, ground: false, ..Default::default() };
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let mut reference: Option<(Vec<u8>, [f32; 3], f32)> = None;
    let mut worst_share = 0f64;
    for format in vat_tests::ALL_VERTEX_FORMATS {
        let asset = Asset::parse(vat_tests::humanoid_vat_in(format)).unwrap();
        let va = asset.manifest().vertex_animation.clone().unwrap();
        let vk_asset = vk.upload(&asset).unwrap();
        let wg_asset = wg.upload(&asset).unwrap();
        let mut vk_crowd = grid_crowd(&asset, 3);
        vk_crowd.advance(0.23);
        let mut wg_crowd = vk_crowd.clone();
        let mut vk_gpu = vk.create_crowd(&vk_crowd).unwrap();
        let mut wg_gpu = wg.create_crowd(&wg_crowd).unwrap();
        let mut wgpu_image = Vec::new();
        for culling in [Culling::Cpu, Culling::Gpu] {
            let options = RenderOptions { culling, ..options };
            let ((w, w_image), (v, v_image)) = render_both(
                &mut vk,
                &vk_asset,
                &mut vk_gpu,
                &mut vk_crowd,
                &mut wg,
                &wg_asset,
                &mut wg_gpu,
                &mut wg_crowd,
                &camera,
                &options,
            );
            save_image(&format!("format-{format:?}-{culling:?}-wgpu"), SIZE, &w_image);
            save_image(&format!("format-{format:?}-{culling:?}-vulkan"), SIZE, &v_image);
            assert_eq!(v, w, "{format:?} {culling:?}: the frame reports differ");
            let background = [w_image[0], w_image[1], w_image[2], w_image[3]];
            let covered = w_image.chunks_exact(4).filter(|p| *p != background).count();
            assert!(covered > pixels / 20, "{format:?}: the wgpu image is nearly empty ({covered} pixels)");
            let (differing, max) = image_difference(&w_image, &v_image);
            let share = differing as f64 / pixels as f64;
            worst_share = worst_share.max(share);
            println!(
                "{format:?} {culling:?}: wgpu vs Vulkan {differing} of {pixels} pixels differ by more than \
                 {TOLERANCE}/255 ({:.4} %), max {max}/255",
                share * 100.0
            );
            assert!(share <= MAX_SHARE, "{format:?} {culling:?}: {:.4} % of pixels differ", share * 100.0);
            wgpu_image = w_image;
        }
        let bound = position_error_bound(format, va.position_bits, &va.bounds);
        let angle = normal_error_bound_degrees(format).to_radians();
        match &reference {
            None => {
                assert_eq!(format, VertexFormat::Packed64, "Packed64 comes first");
                reference = Some((wgpu_image, bound, angle));
            }
            Some((packed, packed_bound, packed_angle)) => {
                let e: f32 = (0..3).map(|a| (bound[a] + packed_bound[a]).powi(2)).sum::<f32>().sqrt() * 1.02;
                // The nearest instance (the grid's front row), less the character's bounding radius.
                let radius = 0.5 * va.bounds.extent.iter().map(|x| x * x).sum::<f32>().sqrt() * 1.02;
                let nearest = (0..wg_crowd.count())
                    .map(|i| {
                        let p = wg_crowd.records()[i as usize].position;
                        ((0..3).map(|a| (p[a] - eye[a]).powi(2)).sum::<f32>().sqrt() - radius).max(0.1)
                    })
                    .fold(f32::INFINITY, f32::min);
                let pixel = 2.0 * nearest * (FOV_Y / 2.0).tan() / SIZE[1] as f32;
                let search = (e / pixel).ceil() as i64 + 1;
                let colour = (255.0 * 12.92 * (angle + packed_angle)).ceil() as u8 + 2;
                let (silhouette, unmatched) = unmatched_pixels(&wgpu_image, packed, SIZE, search, colour);
                let (differing, max) = image_difference(&wgpu_image, packed);
                println!(
                    "{format:?} vs Packed64 (wgpu): {differing} pixels differ by more than {TOLERANCE}/255, max \
                     {max}/255; geometry bound {e:.2e} m = {:.3} px -> search radius {search} px, colour \
                     tolerance {colour}/255: {unmatched} pixels unmatched, {silhouette} on silhouettes",
                    e / pixel
                );
                assert_eq!(
                    unmatched, 0,
                    "{format:?}: {unmatched} pixels have no match in the Packed64 image"
                );
                let share = silhouette as f64 / pixels as f64;
                assert!(share <= MAX_SHARE, "{format:?}: {silhouette} silhouette pixels unmatched");
            }
        }
    }
    println!("every format: worst wgpu vs Vulkan share {:.4} %", worst_share * 100.0);
    finish_validation(vk);
}
