//! The host example's scene (`vat_examples::embed`, `cargo run -p vat-examples --example embed`) on
//! both backends: the host's wall hides part of the crowd through the shared depth buffer, the
//! host's buildings shadow the crowd (vat samples the host's shadow map), the crowd shadows the
//! host's ground (vat's `draw_depth` into the host's map), and wgpu and Vulkan agree.
//!
//! Each is checked with CPU and GPU culling, and in a 4x multisampled host pass (vat's pipelines
//! made for the pass's sample count). Each effect is isolated by rendering the same frame with one part turned off
//! ([`HostFrame`]) and comparing pixels.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use vat_core::container::Asset;
use vat_core::render::{CrowdRenderer, Culling, RenderOptions, ShadowMapSource};
use vat_examples::embed::vulkan_host::VulkanHost;
use vat_examples::embed::wgpu_host::WgpuHost;
use vat_examples::embed::{HostFrame, MSAA_SAMPLES, SIZE, Scene, assets};
use vat_tests::{per_backend, save_image};

/// The two assets, baked once per test binary.
fn baked() -> &'static [Vec<u8>; 2] {
    static ASSETS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    ASSETS.get_or_init(|| assets().unwrap())
}

const PIXELS: usize = (SIZE[0] * SIZE[1]) as usize;

fn px(img: &[u8], p: usize) -> [u8; 4] {
    [img[p * 4], img[p * 4 + 1], img[p * 4 + 2], img[p * 4 + 3]]
}

/// Sum of the RGB bytes of pixel `p` (a brightness good enough to say "darker").
fn brightness(img: &[u8], p: usize) -> i32 {
    img[p * 4..p * 4 + 3].iter().map(|&c| i32::from(c)).sum()
}

/// Pixels where `a` and `b` differ.
fn differing(a: &[u8], b: &[u8]) -> Vec<usize> {
    (0..PIXELS).filter(|&p| px(a, p) != px(b, p)).collect()
}

/// Darker by more than rounding: the shadow strength (0.75) of the direct light takes far more.
const DARKER: i32 = 24;

/// The image checks of one backend, given its renderer of a [`HostFrame`].
/// The pixels of `set` (sorted) whose four neighbours are in it too: its interior, away from
/// silhouette edges (which multisampling blends with what is behind).
fn interior(set: &[usize]) -> Vec<usize> {
    let w = SIZE[0] as usize;
    let has = |p: usize| set.binary_search(&p).is_ok();
    set.iter()
        .copied()
        .filter(|&p| p >= w && p % w > 0 && has(p - 1) && has(p + 1) && has(p - w) && has(p + w))
        .collect()
}

fn check_scene(name: &str, culling: Culling, samples: u32, mut render: impl FnMut(&HostFrame) -> Vec<u8>) {
    let name = &format!("{name}-{culling:?}-{samples}x");
    let all = HostFrame { culling, samples, ..HostFrame::default() };
    let full = render(&all);
    save_image(&format!("embed-scene-{name}"), SIZE, &full);

    // 1. Occlusion. No host shadows here, so the wall changes only the pixels it covers.
    let off = HostFrame { host_casts: false, crowd_casts: false, ..all };
    let wall_only = render(&HostFrame { crowd: false, ..off });
    let empty = render(&HostFrame { crowd: false, wall: false, ..off });
    let crowd_no_wall = render(&HostFrame { wall: false, ..off });
    let crowd_and_wall = render(&off);
    let wall = interior(&differing(&wall_only, &empty));
    let crowd_pixels = differing(&crowd_no_wall, &empty);
    let behind_wall: Vec<usize> =
        wall.iter().copied().filter(|p| crowd_pixels.binary_search(p).is_ok()).collect();
    assert!(
        wall.len() > 2000 && behind_wall.len() > 200,
        "{name}: the wall ({} pixels) stands in front of part of the crowd ({} pixels)",
        wall.len(),
        behind_wall.len()
    );
    let drawn_over_wall =
        behind_wall.iter().filter(|&&p| px(&crowd_and_wall, p) != px(&wall_only, p)).count();
    assert_eq!(drawn_over_wall, 0, "{name}: crowd pixels drawn over the host's wall (depth not shared)");
    let visible = differing(&crowd_and_wall, &wall_only).len();
    assert!(visible > 3000, "{name}: the rest of the crowd is drawn ({visible} pixels)");

    // 2. The host's buildings shadow the crowd: crowd pixels darker with the host casting.
    let no_host_casts = render(&HostFrame { host_casts: false, ..all });
    let no_host_casts_no_crowd = render(&HostFrame { host_casts: false, crowd: false, ..all });
    let crowd_pixels = differing(&no_host_casts, &no_host_casts_no_crowd);
    let shaded = crowd_pixels
        .iter()
        .filter(|&&p| brightness(&full, p) < brightness(&no_host_casts, p) - DARKER)
        .count();
    assert!(
        shaded > 150,
        "{name}: the host's building shadows the crowd: {shaded} of {} crowd pixels darker",
        crowd_pixels.len()
    );

    // 3. The crowd shadows the host's ground: the crowd cast but not drawn darkens host pixels only.
    let casts_only = render(&HostFrame { crowd: false, ..all });
    let nothing = render(&HostFrame { crowd: false, crowd_casts: false, ..all });
    let shadow = differing(&casts_only, &nothing);
    let darker =
        shadow.iter().filter(|&&p| brightness(&casts_only, p) < brightness(&nothing, p) - DARKER).count();
    let brighter = shadow.iter().filter(|&&p| brightness(&casts_only, p) > brightness(&nothing, p)).count();
    assert!(darker > 300, "{name}: the crowd's shadows on the host's ground: {darker} pixels darker");
    assert_eq!(brighter, 0, "{name}: a caster can only darken");
}

/// A multisampled frame differs from the single-sampled one at silhouette edges only.
fn check_msaa_smooths_edges_only(name: &str, mut render: impl FnMut(&HostFrame) -> Vec<u8>) {
    let one = render(&HostFrame::default());
    let four = render(&HostFrame { samples: MSAA_SAMPLES, ..HostFrame::default() });
    let edges = differing(&one, &four).len();
    assert!(
        edges > 200 && edges < PIXELS / 10,
        "{name}: {edges} of {PIXELS} pixels differ between 1 and {MSAA_SAMPLES} samples"
    );
}

#[test]
fn the_host_scene_on_wgpu_occludes_and_shadows_both_ways() {
    let mut host = WgpuHost::example(Scene::new(), baked()).unwrap();
    for (culling, samples) in [(Culling::Cpu, 1), (Culling::Gpu, 1), (Culling::Cpu, MSAA_SAMPLES)] {
        check_scene("wgpu", culling, samples, |f| host.render(f).unwrap().0);
    }
    check_msaa_smooths_edges_only("wgpu", |f| host.render(f).unwrap().0);
}

#[test]
fn the_host_scene_on_vulkan_occludes_and_shadows_both_ways_under_validation() {
    let mut host = VulkanHost::example(Scene::new(), baked()).unwrap();
    assert!(host.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    for (culling, samples) in [(Culling::Cpu, 1), (Culling::Gpu, 1), (Culling::Cpu, MSAA_SAMPLES)] {
        check_scene("vulkan", culling, samples, |f| host.render(f).unwrap().0);
    }
    check_msaa_smooths_edges_only("vulkan", |f| host.render(f).unwrap().0);
    assert_eq!(host.validation_messages(), (0, 0), "validation errors and warnings (printed above)");
}

#[test]
fn the_host_scene_is_the_same_on_both_backends() {
    for (culling, samples) in [(Culling::Cpu, 1), (Culling::Gpu, 1), (Culling::Cpu, MSAA_SAMPLES)] {
        let frame = HostFrame { culling, samples, ..HostFrame::default() };
        let (w, draws_w) = WgpuHost::example(Scene::new(), baked()).unwrap().render(&frame).unwrap();
        let (v, draws_v) = VulkanHost::example(Scene::new(), baked()).unwrap().render(&frame).unwrap();
        assert_eq!(draws_w.draws_main, draws_v.draws_main, "{culling:?} {samples}x: the same draws");
        // The parity tolerance of the backends' other image tests: no channel off by more than 2.
        let off = w.iter().zip(&v).filter(|(a, b)| a.abs_diff(**b) > 2).count();
        assert_eq!(
            off, 0,
            "{culling:?} {samples}x: bytes of the wgpu and Vulkan host frames differing by more than 2"
        );
    }
}

/// Sampling the host's shadow map before giving one is a typed error naming the call to make, and
/// the next frame (with vat's own map) renders.
fn the_hosts_map_must_be_given_before_it_is_sampled<R: CrowdRenderer>(mut renderer: R) {
    let asset = Asset::parse(&baked()[0]).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowds = vat_examples::embed::crowds(baked()).unwrap();
    let crowd = &mut crowds[0];
    let mut gpu_crowd = renderer.create_crowd(crowd).unwrap();
    let scene = Scene::new();
    let host = scene.options(Culling::Cpu);
    assert!(matches!(host.shadow_map, ShadowMapSource::Host(_)));
    let error = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, crowd, &scene.camera, &host).unwrap_err();
    assert!(error.to_string().contains("set_host_shadow_map"), "{error}");
    let own = RenderOptions { shadow_map: ShadowMapSource::BuiltIn, ..host };
    let report = renderer.render_crowd(&gpu_asset, &mut gpu_crowd, crowd, &scene.camera, &own).unwrap();
    assert!(report.draws_main > 0 && report.draws_shadow > 0);
    let image = renderer.read_rgba8().unwrap();
    let background = px(&image, 0);
    assert!((0..PIXELS).filter(|&p| px(&image, p) != background).count() > 1000, "the crowd is drawn");
}

per_backend!(host_shadow_map_missing, SIZE, 1024, the_hosts_map_must_be_given_before_it_is_sampled);
