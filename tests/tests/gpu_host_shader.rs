//! The host's own fragment stage (`vat_core::pipeline::HostShader`, `Renderer::set_host_shader` on
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

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::VARIANT_ACCESSORY;
use vat_core::pipeline::HostShader;
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
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let id = crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.5, walk, 0.2);
    crowd.set_variant(id, 2 | VARIANT_ACCESSORY);
    let camera = Camera::look_at([1.5, 1.4, 2.6], [0.0, 0.9, 0.0], 0.8, 1.0, 0.1, 50.0);
    let options = RenderOptions { ground: false, shadow_distance: 6.0, ..Default::default() };
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
        assert!(matches!(e, vat_wgpu::RenderError::HostShader(_)), "{e}");
        println!("wgpu: {e}");
        let e = vk.parts().1.set_host_shader(Some(shader)).unwrap_err();
        assert!(matches!(e, vat_vulkan::VulkanError::HostShader(_)), "{e}");
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
