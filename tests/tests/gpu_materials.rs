//! Materials on the GPU: the textured humanoid (`vat_procgen::testdata::textured_humanoid_glb`: a JPEG
//! base colour of 8 hue bands and a checker, a PNG normal map of bumps, a metallic-roughness
//! texture) baked with `--tangents` and drawn by both backends.
//!
//! - The two backends agree within the render-parity tolerance (at most 0.1 % of the pixels more
//!   than 2 levels apart), the Vulkan one under the validation layer with no message.
//! - The texture shows: the body's pixels spread over at least 5 of 8 hue bins, against 1 for the
//!   same asset baked with its base colour texture left out.
//! - The normal map shows: removing it changes the shading of many body pixels (the bumps), while
//!   the mean brightness stays within a few levels (a normal map redistributes light, it does not
//!   add any).

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::VARIANT_ACCESSORY;
use vat_core::render::{CrowdRenderer, RenderOptions};
use vat_tests::save_image;

const SIZE: [u32; 2] = [96, 128];

/// The textured humanoid baked with tangents, after `edit` changed its imported rig.
fn textured_vat(edit: impl FnOnce(&mut vat_bake::rig::Rig)) -> Vec<u8> {
    let glb = vat_procgen::testdata::textured_humanoid_glb();
    let mut rig = vat_bake::gltf_import::import_slice(&glb, None, "textured").unwrap();
    assert!(rig.notes.is_empty(), "{:?}", rig.notes);
    edit(&mut rig);
    let options = BakeOptions { tangents: true, ..BakeOptions::default() };
    prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
}

/// One humanoid facing the camera mid-walk, with its cap, no ground, no shadows.
fn render<R: CrowdRenderer>(renderer: &mut R, bytes: &[u8]) -> Vec<u8> {
    render_variant(renderer, bytes, 0)
}

/// [`render`] with the instance's material variant `variant`.
fn render_variant<R: CrowdRenderer>(renderer: &mut R, bytes: &[u8], variant: u32) -> Vec<u8> {
    let asset = Asset::parse(bytes).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let id = crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.0, walk, 0.3);
    crowd.set_variant(id, VARIANT_ACCESSORY | variant);
    let camera =
        Camera::look_at([0.6, 1.2, 2.6], [0.0, 0.95, 0.0], 0.8, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 50.0);
    let options = RenderOptions { ground: false, shadow_distance: 0.0, ..Default::default() };
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    renderer.read_rgba8().unwrap()
}

/// The pixels that are not the clear colour (the character), as RGB.
fn body_pixels(image: &[u8], background: [u8; 4]) -> Vec<[u8; 3]> {
    image.chunks_exact(4).filter(|p| **p != background).map(|p| [p[0], p[1], p[2]]).collect()
}

/// How many of 8 hue bins the saturated pixels fall in.
fn hue_bins(pixels: &[[u8; 3]]) -> usize {
    let mut bins = [0usize; 8];
    for p in pixels {
        let [r, g, b] = p.map(|c| f32::from(c) / 255.0);
        let (max, min) = (r.max(g).max(b), r.min(g).min(b));
        if max - min < 0.08 {
            continue;
        }
        let h = if max == r {
            ((g - b) / (max - min)).rem_euclid(6.0)
        } else if max == g {
            (b - r) / (max - min) + 2.0
        } else {
            (r - g) / (max - min) + 4.0
        } / 6.0;
        bins[((h * 8.0) as usize).min(7)] += 1;
    }
    // A bin counts when it holds at least 1 % of the pixels (JPEG and filtering spill a few).
    bins.iter().filter(|&&n| n * 100 >= pixels.len().max(1)).count()
}

fn mean_luma(pixels: &[[u8; 3]]) -> f64 {
    let sum: f64 = pixels
        .iter()
        .map(|p| 0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1]) + 0.0722 * f64::from(p[2]))
        .sum();
    sum / pixels.len().max(1) as f64
}

#[test]
fn a_textured_normal_mapped_character_renders_alike_on_both_backends_under_validation() {
    let textured = textured_vat(|_| {});
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    assert!(vk.parts().0.validation_enabled(), "the validation layer is not installed (cargo xtask deps)");
    let mut wg = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let vk_image = render(&mut vk, &textured);
    let wg_image = render(&mut wg, &textured);
    save_image("materials_textured_vulkan", SIZE, &vk_image);
    save_image("materials_textured_wgpu", SIZE, &wg_image);
    let differing = vk_image
        .chunks_exact(4)
        .zip(wg_image.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(a, b)| a.abs_diff(*b) > 2))
        .count();
    println!("wgpu vs Vulkan: {differing} of {} pixels differ by more than 2 levels", SIZE[0] * SIZE[1]);
    assert!(differing as f64 <= 0.001 * f64::from(SIZE[0] * SIZE[1]), "{differing} pixels differ");

    let background = [wg_image[0], wg_image[1], wg_image[2], wg_image[3]];
    let body = body_pixels(&wg_image, background);
    assert!(body.len() > 1500, "the character covers {} pixels", body.len());
    let textured_bins = hue_bins(&body);

    // The same asset without its base colour texture: one hue (the white factor times the light).
    let untextured = textured_vat(|rig| {
        for m in &mut rig.materials.as_mut().unwrap().materials {
            m.base_color_texture = None;
        }
    });
    let plain = render(&mut wg, &untextured);
    save_image("materials_untextured_wgpu", SIZE, &plain);
    let plain_bins = hue_bins(&body_pixels(&plain, background));
    println!("hue bins: textured {textured_bins}, untextured {plain_bins}");
    assert!(textured_bins >= 5, "the texture does not show: {textured_bins} hue bins");
    assert!(plain_bins <= 2, "{plain_bins} hue bins without a texture");

    // Without the normal map: the bumps' shading goes, the light stays.
    let flat = textured_vat(|rig| {
        for m in &mut rig.materials.as_mut().unwrap().materials {
            m.normal_texture = None;
        }
    });
    let flat_image = render(&mut wg, &flat);
    save_image("materials_no_normal_map_wgpu", SIZE, &flat_image);
    let changed = wg_image
        .chunks_exact(4)
        .zip(flat_image.chunks_exact(4))
        .filter(|(p, q)| **p != background && p.iter().zip(q.iter()).any(|(a, b)| a.abs_diff(*b) > 6))
        .count();
    let flat_body = body_pixels(&flat_image, background);
    let (with_map, without) = (mean_luma(&body), mean_luma(&flat_body));
    println!(
        "normal map: {changed} body pixels change by more than 6 levels; mean luma {with_map:.1} vs {without:.1}"
    );
    assert!(changed * 10 >= body.len(), "the normal map changes only {changed} of {} pixels", body.len());
    assert!((with_map - without).abs() < 12.0, "mean luma {with_map:.1} with the map, {without:.1} without");

    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

/// `KHR_materials_variants` on both backends: variant 2 ("blue") draws the body blue, variant 1
/// ("red") with the cap's red, 0 and any variant past the asset's as authored.
#[test]
fn material_variants_select_materials_per_instance_on_both_backends() {
    let glb = vat_procgen::testdata::textured_humanoid_with_variants_glb();
    let rig = vat_bake::gltf_import::import_slice(&glb, None, "variants").unwrap();
    let bytes = prepare(&rig, &BakeOptions::default()).unwrap().to_vat_bytes().unwrap();
    let mut vk = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    let mut wg = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let mean = |image: &[u8], background: [u8; 4]| {
        let body = body_pixels(image, background);
        let n = body.len().max(1) as f64;
        [0, 1, 2].map(|c| body.iter().map(|p| f64::from(p[c])).sum::<f64>() / n)
    };
    let mut images = Vec::new();
    for v in [0, 1, 2, 9] {
        let w = render_variant(&mut wg, &bytes, v);
        let k = render_variant(&mut vk, &bytes, v);
        let differing = w
            .chunks_exact(4)
            .zip(k.chunks_exact(4))
            .filter(|(p, q)| p.iter().zip(q.iter()).any(|(a, b)| a.abs_diff(*b) > 2))
            .count();
        assert!(
            differing as f64 <= 0.001 * f64::from(SIZE[0] * SIZE[1]),
            "variant {v}: {differing} pixels differ"
        );
        save_image(&format!("materials_variant_{v}_wgpu"), SIZE, &w);
        images.push(w);
    }
    let background = [images[0][0], images[0][1], images[0][2], images[0][3]];
    let [authored, red, blue, past] = [0, 1, 2, 3].map(|i| mean(&images[i], background));
    println!(
        "mean body RGB: authored {authored:.1?}, red {red:.1?}, blue {blue:.1?}, past the variants {past:.1?}"
    );
    assert!(red[0] > 1.5 * red[2] && red[0] > 1.5 * red[1], "variant 1 is not red: {red:?}");
    assert!(blue[2] > 1.5 * blue[0], "variant 2 is not blue: {blue:?}");
    assert_eq!(images[0], images[3], "a variant past the asset's draws as authored");
    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}

/// The textured rigid glTF (`vat_procgen::testdata::textured_rigid_glb`: piece "left" with a 4 x 4
/// base colour texture of red, green, blue and white quadrants, piece "right" with vertex
/// colours) baked in the rigid mode, with `edit` applied to its source first.
fn rigid_textured_vat(edit: impl FnOnce(&mut vat_bake::rigid::RigidSource)) -> Vec<u8> {
    let glb = vat_procgen::testdata::textured_rigid_glb();
    let rig = vat_bake::gltf_import::import_slice(&glb, None, "pieces").unwrap();
    let mut source = vat_bake::rigid::RigidSource::from_rig(&rig, 30.0).unwrap();
    edit(&mut source);
    vat_bake::rigid::bake_rigid(&source, &vat_bake::rigid::RigidBakeOptions::default()).unwrap().0
}

const RIGID_SIZE: [u32; 2] = [128, 96];

/// Both pieces a quarter into their tumble, seen from the front, no ground, no shadows.
fn render_pieces<R: CrowdRenderer>(renderer: &mut R, bytes: &[u8]) -> Vec<u8> {
    let asset = Asset::parse(bytes).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    crowd.spawn_at_phase([0.0, 0.0, 0.0], 0.0, 0, 0.25);
    let aspect = RIGID_SIZE[0] as f32 / RIGID_SIZE[1] as f32;
    let camera = Camera::look_at([0.4, 1.2, 2.4], [0.0, 0.35, 0.0], 0.8, aspect, 0.1, 50.0);
    let options = RenderOptions { ground: false, shadow_distance: 0.0, ..Default::default() };
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options).unwrap();
    renderer.read_rgba8().unwrap()
}

/// A rigid bake keeps its materials on the GPU: both backends draw the textured, vertex-coloured
/// pieces alike (the render-parity tolerance, Vulkan under the validation layer with no message),
/// the texture and vertex colours show (more hues than the same pieces without them), and the
/// image differs from the built-in palette's.
#[test]
fn a_rigid_textured_asset_renders_alike_on_both_backends_under_validation() {
    let textured = rigid_textured_vat(|_| {});
    let mut vk = vat_vulkan::Offscreen::new(RIGID_SIZE, Default::default()).unwrap();
    assert!(vk.parts().0.validation_enabled(), "the validation layer is not installed (cargo xtask deps)");
    let mut wg = vat_wgpu::Offscreen::new(RIGID_SIZE, Default::default()).unwrap();
    let vk_image = render_pieces(&mut vk, &textured);
    let wg_image = render_pieces(&mut wg, &textured);
    save_image("materials_rigid_vulkan", RIGID_SIZE, &vk_image);
    save_image("materials_rigid_wgpu", RIGID_SIZE, &wg_image);
    let pixels = RIGID_SIZE[0] * RIGID_SIZE[1];
    let differing = vk_image
        .chunks_exact(4)
        .zip(wg_image.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(a, b)| a.abs_diff(*b) > 2))
        .count();
    println!("rigid: wgpu vs Vulkan: {differing} of {pixels} pixels differ by more than 2 levels");
    assert!(differing as f64 <= 0.001 * f64::from(pixels), "{differing} pixels differ");

    let background = [wg_image[0], wg_image[1], wg_image[2], wg_image[3]];
    let body = body_pixels(&wg_image, background);
    assert!(body.len() > 300, "the pieces cover {} pixels", body.len());
    let plain = rigid_textured_vat(|source| {
        for m in &mut source.materials.as_mut().unwrap().materials {
            m.base_color_texture = None;
        }
        for p in &mut source.pieces {
            p.colors = None;
        }
    });
    let plain_image = render_pieces(&mut wg, &plain);
    save_image("materials_rigid_plain_wgpu", RIGID_SIZE, &plain_image);
    let palette = rigid_textured_vat(|source| source.materials = None);
    let palette_image = render_pieces(&mut wg, &palette);
    save_image("materials_rigid_palette_wgpu", RIGID_SIZE, &palette_image);
    let (textured_bins, plain_bins) = (hue_bins(&body), hue_bins(&body_pixels(&plain_image, background)));
    let changed = |other: &[u8]| {
        wg_image
            .chunks_exact(4)
            .zip(other.chunks_exact(4))
            .filter(|(p, q)| p.iter().zip(q.iter()).any(|(a, b)| a.abs_diff(*b) > 6))
            .count()
    };
    let (from_plain, from_palette) = (changed(&plain_image), changed(&palette_image));
    println!(
        "rigid: {} piece pixels; hue bins textured {textured_bins}, plain {plain_bins}; {from_plain} pixels \
         differ from the plain pieces, {from_palette} from the palette",
        body.len()
    );
    assert!(textured_bins >= 3 && textured_bins > plain_bins, "hue bins {textured_bins} vs {plain_bins}");
    assert!(from_plain * 3 >= body.len(), "texture and colours change only {from_plain} pixels");
    assert!(from_palette * 3 >= body.len(), "the materials change only {from_palette} pixels");

    let messages = vk.parts().0.messages();
    drop(vk);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}
