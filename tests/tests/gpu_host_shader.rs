//! The host's own fragment stage (`vat_core::backend::pipeline::HostShader`, `Renderer::set_host_shader` on
//! both backends): WGSL appended to vat's shader, drawn by vat's vertex stages.
//!
//! - A shader that writes the unit world normal as colour draws unit normals at every character
//!   pixel (within 8-bit rounding), identically on wgpu and Vulkan (Vulkan under validation).
//! - The examples' toon shader draws alike on both backends.
//! - Bad host WGSL (a syntax error, a missing entry point, a vertex entry point given as fragment)
//!   is a typed error on both, and the renderer keeps drawing with its previous shader.
//! - `set_host_shader(None)` draws exactly what vat draws without one.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::backend::pipeline::HostShader;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::VARIANT_ACCESSORY;
use vat_core::render::{CrowdRenderer, RenderOptions};
use vat_tests::{humanoid_vat, save_image};

const SIZE: [u32; 2] = [96, 96];

const NORMALS: &str = "
@fragment
fn fs_normals(in: VertexOutput) -> @location(0) vec4<f32> {
    return vec4<f32>(vat_normalize(in.world_normal) * 0.5 + 0.5, 1.0);
}
";

fn render<R: CrowdRenderer>(renderer: &mut R) -> Vec<u8> {
    render_in(renderer, vat_core::render::RenderMode::Vat)
}

fn render_in<R: CrowdRenderer>(renderer: &mut R, mode: vat_core::render::RenderMode) -> Vec<u8> {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let id = crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.5, walk, 0.2);
    crowd.set_variant(id, 2 | VARIANT_ACCESSORY);
    let camera = Camera::look_at([1.5, 1.4, 2.6], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 50.0);
    let options = RenderOptions { ground: false, shadow_distance: 6.0, mode, ..Default::default() };
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    renderer.read_rgba8().unwrap()
}

fn differing(a: &[u8], b: &[u8]) -> usize {
    a.chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > 2))
        .count()
}

#[test]
fn host_fragment_stages_draw_alike_on_both_backends_and_bad_ones_are_typed_errors() {
    let mut wg = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    assert!(vk.parts().0.validation_enabled(), "the validation layer is not installed (cargo xtask deps)");
    let vat_wgpu_image = render(&mut wg);
    let vat_vulkan_image = render(&mut vk);

    // Unit normals as colour.
    let normals = HostShader::new(NORMALS, "fs_normals");
    wg.parts().2.set_host_shader(Some(normals.clone())).unwrap();
    vk.parts().1.set_host_shader(Some(normals)).unwrap();
    let (w, k) = (render(&mut wg), render(&mut vk));
    save_image("host_shader_normals_wgpu", SIZE, &w);
    assert!(
        differing(&w, &k) as f64 <= 0.001 * f64::from(SIZE[0] * SIZE[1]),
        "{} pixels differ",
        differing(&w, &k)
    );
    let background = [w[0], w[1], w[2], w[3]];
    let body: Vec<&[u8]> = w.chunks_exact(4).filter(|p| *p != background).collect();
    assert!(body.len() > 400, "the character covers {} pixels", body.len());
    for p in &body {
        // The target is sRGB: decode to linear before reading the normal back.
        let linear = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        let v = [0, 1, 2].map(|c| linear(p[c]) * 2.0 - 1.0);
        let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        // 8-bit sRGB steps near 0 linear are ~1/3000, near 1 ~1/120: a unit vector within 3 %.
        assert!((len - 1.0).abs() < 0.03, "pixel {p:?} is not a unit normal ({len})");
    }
    assert!(differing(&w, &vat_wgpu_image) > body.len() / 2, "the host shader changed nothing");

    // The examples' toon shader.
    wg.parts().2.set_host_shader(Some(vat_examples::toon_shader())).unwrap();
    vk.parts().1.set_host_shader(Some(vat_examples::toon_shader())).unwrap();
    let (w, k) = (render(&mut wg), render(&mut vk));
    save_image("host_shader_toon_wgpu", SIZE, &w);
    assert!(differing(&w, &k) as f64 <= 0.001 * f64::from(SIZE[0] * SIZE[1]));

    // Bad shaders: typed errors, and the toon shader stays in place.
    let bad = [
        HostShader::new("@fragment fn broken( -> ", "broken"),
        HostShader::new(NORMALS, "fs_missing"),
        HostShader::new(NORMALS, "vs_vat"),
    ];
    for shader in bad {
        let e = wg.parts().2.set_host_shader(Some(shader.clone())).unwrap_err();
        assert!(matches!(e, vat_wgpu::Error::HostShader(_)), "{e}");
        println!("wgpu: {e}");
        let e = vk.parts().1.set_host_shader(Some(shader)).unwrap_err();
        assert!(matches!(e, vat_vulkan::Error::HostShader(_)), "{e}");
    }
    assert_eq!(render(&mut wg), w, "a refused shader replaced the previous one");

    // Back to vat's own fragment stage: the same image as never having set one.
    wg.parts().2.set_host_shader(None).unwrap();
    vk.parts().1.set_host_shader(None).unwrap();
    assert_eq!(render(&mut wg), vat_wgpu_image);
    assert_eq!(render(&mut vk), vat_vulkan_image);

    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

const USER_DATA: &str = "
@fragment
fn fs_user(in: VertexOutput) -> @location(0) vec4<f32> {
    return unpack4x8unorm(instance_user_data[in.instance].x);
}
";

/// Two instances side by side with their user data as colour (`Crowd::set_user_data`, read in the
/// host's fragment stage), on both backends in both culling modes; changing one instance's data
/// uploads 16 bytes and changes only its pixels.
#[test]
fn per_instance_user_data_reaches_host_shaders_on_both_backends() {
    use vat_core::render::Culling;
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let shader = HostShader::new(USER_DATA, "fs_user");
    let mut wg = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    wg.parts().2.set_host_shader(Some(shader.clone())).unwrap();
    vk.parts().1.set_host_shader(Some(shader)).unwrap();
    fn frame<R: CrowdRenderer>(
        r: &mut R,
        asset: &Asset<'_>,
        culling: Culling,
        green_right: bool,
    ) -> (Vec<u8>, u64) {
        let gpu_asset = r.upload(asset).unwrap();
        let mut crowd =
            Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
        let left = crowd.spawn([-0.5, 0.0, 0.0], 0.0, 0);
        let right = crowd.spawn([0.5, 0.0, 0.0], 0.0, 0);
        crowd.set_user_data(left, [0xff00_00ff, 0, 0, 0]); // red (r in the low byte)
        crowd.set_user_data(right, [0xffff_0000, 0, 0, 0]); // blue
        let camera = Camera::look_at([0.0, 1.0, 3.2], [0.0, 0.9, 0.0], 0.9, 1.0, 0.1, 50.0);
        let options = RenderOptions { ground: false, shadow_distance: 0.0, culling, ..Default::default() };
        let mut gpu_crowd = r.create_crowd(&crowd).unwrap();
        r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
        if green_right {
            crowd.set_user_data(right, [0xff00_ff00, 0, 0, 0]);
        }
        let report = r.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
        (r.read_rgba8().unwrap(), report.uploaded_bytes)
    }
    for culling in [Culling::Cpu, Culling::Gpu] {
        let (w, _) = frame(&mut wg, &asset, culling, false);
        let (k, _) = frame(&mut vk, &asset, culling, false);
        assert_eq!(w, k, "{culling:?}: the backends differ");
        save_image(&format!("host_shader_user_data_{culling:?}"), SIZE, &w);
        let half = |left: bool| {
            let mut colours = std::collections::HashSet::new();
            for (i, p) in w.chunks_exact(4).enumerate() {
                let x = i as u32 % SIZE[0];
                if (x < SIZE[0] / 2) == left && p != &w[..4] {
                    colours.insert([p[0], p[1], p[2]]);
                }
            }
            colours
        };
        assert_eq!(
            half(true).into_iter().collect::<Vec<_>>(),
            [[255, 0, 0]],
            "{culling:?}: the left one is red"
        );
        assert_eq!(
            half(false).into_iter().collect::<Vec<_>>(),
            [[0, 0, 255]],
            "{culling:?}: the right one is blue"
        );
        let (still, unchanged_upload) = frame(&mut wg, &asset, culling, false);
        let (green, changed_upload) = frame(&mut wg, &asset, culling, true);
        assert_eq!(changed_upload, unchanged_upload + 16, "{culling:?}: one instance's 16 bytes");
        let changed: Vec<u32> = still
            .chunks_exact(4)
            .zip(green.chunks_exact(4))
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, _)| i as u32 % SIZE[0])
            .collect();
        assert!(
            !changed.is_empty() && changed.iter().all(|&x| x >= SIZE[0] / 2),
            "{culling:?}: only the right one"
        );
        let (k_green, _) = frame(&mut vk, &asset, culling, true);
        assert_eq!(green, k_green, "{culling:?}: the backends differ after the change");
    }
    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

const HOST_VERTEX: &str = "
struct HostOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) @interpolate(flat) instance: u32,
    @location(2) height: f32,
}

@vertex
fn vs_host(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> HostOut {
    let v = vat_vertex(vertex, instance_index);
    let object = vat_object_position(instances[v.instance], v.world_position);
    return HostOut(v.clip_position, v.world_normal, v.instance, object.y);
}

@fragment
fn fs_host_normals(in: HostOut) -> @location(0) vec4<f32> {
    return vec4<f32>(vat_normalize(in.normal) * 0.5 + 0.5, 1.0);
}

@fragment
fn fs_host_height(in: HostOut) -> @location(0) vec4<f32> {
    return vec4<f32>(vec3<f32>(clamp(in.height / 1.8, 0.0, 1.0)), 1.0);
}
";

/// A host vertex stage (`HostShader::with_vertex_entry_point`) built on `vat_vertex`, with outputs
/// of its own: passing vat's decoded normal through gives exactly the image of the fragment-only
/// normals shader, in VAT and bone mode (the `PROGRAM` override picks the decode, the cap
/// attachment included); an output of its own (the object-space height, from
/// `vat_object_position`) shades the character bottom to top; wgpu and Vulkan agree.
#[test]
fn host_vertex_stages_decode_with_vat_vertex_and_add_outputs_of_their_own() {
    use vat_core::render::RenderMode;
    let mut wg = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    let fragment_only = HostShader::new(NORMALS, "fs_normals");
    let host_vertex = HostShader::new(HOST_VERTEX, "fs_host_normals").with_vertex_entry_point("vs_host");
    for mode in [RenderMode::Vat, RenderMode::Bone] {
        wg.parts().2.set_host_shader(Some(fragment_only.clone())).unwrap();
        vk.parts().1.set_host_shader(Some(fragment_only.clone())).unwrap();
        let (w_fragment, k_fragment) = (render_in(&mut wg, mode), render_in(&mut vk, mode));
        wg.parts().2.set_host_shader(Some(host_vertex.clone())).unwrap();
        vk.parts().1.set_host_shader(Some(host_vertex.clone())).unwrap();
        let (w_vertex, k_vertex) = (render_in(&mut wg, mode), render_in(&mut vk, mode));
        assert_eq!(differing(&w_vertex, &w_fragment), 0, "{mode:?}: wgpu, host vertex stage vs vat's");
        assert_eq!(differing(&k_vertex, &k_fragment), 0, "{mode:?}: Vulkan, host vertex stage vs vat's");
    }

    let height = HostShader::new(HOST_VERTEX, "fs_host_height").with_vertex_entry_point("vs_host");
    wg.parts().2.set_host_shader(Some(height.clone())).unwrap();
    vk.parts().1.set_host_shader(Some(height)).unwrap();
    let (w, k) = (render(&mut wg), render(&mut vk));
    save_image("host_shader_vertex_height_wgpu", SIZE, &w);
    assert!(differing(&w, &k) as f64 <= 0.001 * f64::from(SIZE[0] * SIZE[1]), "the backends differ");
    // Mean grey of the character's top and bottom rows: the height grows upwards.
    let background = [w[0], w[1], w[2], w[3]];
    let rows: Vec<(usize, f64)> = w
        .chunks_exact(4)
        .enumerate()
        .filter(|(_, p)| *p != background)
        .map(|(i, p)| (i / SIZE[0] as usize, f64::from(p[0])))
        .collect();
    assert!(rows.len() > 400, "the character covers {} pixels", rows.len());
    let (top, bottom) = (rows.iter().map(|r| r.0).min().unwrap(), rows.iter().map(|r| r.0).max().unwrap());
    let mean = |lo: usize, hi: usize| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 >= lo && r.0 <= hi).map(|r| r.1).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let span = (bottom - top) / 5;
    let (upper, lower) = (mean(top, top + span), mean(bottom - span, bottom));
    assert!(upper > lower + 60.0, "object height shades {upper:.0} at the top, {lower:.0} at the bottom");

    // A missing vertex entry point is refused on both.
    let bad = HostShader::new(HOST_VERTEX, "fs_host_normals").with_vertex_entry_point("vs_missing");
    assert!(matches!(wg.parts().2.set_host_shader(Some(bad.clone())), Err(vat_wgpu::Error::HostShader(_))));
    assert!(matches!(vk.parts().1.set_host_shader(Some(bad)), Err(vat_vulkan::Error::HostShader(_))));
    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}
