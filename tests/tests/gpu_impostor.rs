//! The impostor tier at run time (issue 33): far instances drawn as cards on both backends.
//!
//! - parity: a crowd reaching from meshes through the switch's cross-fade to cards only, with the
//!   cards in the sun's shadow pass, renders the same frame report, visible lists and image on
//!   vat-wgpu and vat-vulkan (the render parity test's tolerance: at most 0.1 % of pixels differing
//!   by more than 2/255), under the Vulkan validation layer;
//! - the switch: one character at the tier's switch distance (where the bounding sphere spans a
//!   tile's pixels in this view) drawn as its mesh and as its card; the test prints the coverage
//!   IoU and the mean absolute difference over the character's pixels and holds them to the bound
//!   stated below;
//! - material variants: a textured asset's cards show each instance's material variant (each card
//!   nearest its own variant's mesh in colour) on both backends;
//! - the lists: GPU culling puts the near cards and the far cards (drawn from one view) in the two
//!   draws after the mesh LODs, split at the one-view distance; `CrowdConfig::impostors` off, or an
//!   asset without a tier, draws no card.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::impostor::{SINGLE_VIEW_LEVEL, switch_distance};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::{
    humanoid_impostor_vat, save_image, textured_variants_impostor_vat, vulkan_offscreen, wgpu_offscreen,
};

/// Share of pixels that may differ by more than 2/255 between the backends (the render parity
/// test's).
const MAX_SHARE: f64 = 0.001;

/// A line of characters from 4 m to 160 m along -Z, spread sideways, varied clips and phases.
fn line_crowd(asset: &Asset<'_>, count: u32) -> Crowd {
    let config = CrowdConfig { shadow_max_lod: 8, ..CrowdConfig::default() };
    let mut crowd =
        Crowd::new(CrowdAsset::from_manifest(asset.manifest()).expect("the asset's crowd data"), config);
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..count {
        let t = i as f32 / (count - 1) as f32;
        let z = -(4.0 + 156.0 * t * t);
        let x = ((i * 7919) % 13) as f32 * 0.35 * (1.0 + -z * 0.05) - 2.0;
        let id = crowd.spawn_at_phase([x, 0.0, z], i as f32 * 0.9, i % clips, (i as f32 * 0.31).fract());
        crowd.set_variant(id, (i * 37) & 0xFF);
    }
    crowd
}

fn difference(a: &[u8], b: &[u8]) -> (usize, u8) {
    let (mut differing, mut max) = (0, 0u8);
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let d = p.iter().zip(q).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
        max = max.max(d);
        if d > 2 {
            differing += 1;
        }
    }
    (differing, max)
}

#[test]
fn cards_render_the_same_on_both_backends_in_both_culling_modes() {
    const SIZE: [u32; 2] = [320, 240];
    let asset = Asset::parse(humanoid_impostor_vat()).expect("the test asset parses");
    let mut wg = wgpu_offscreen(SIZE, 1024);
    let mut vk = vulkan_offscreen(SIZE, 1024);
    let (wg_asset, vk_asset) =
        (wg.upload(&asset).expect("the asset uploads"), vk.upload(&asset).expect("the asset uploads"));
    let fov = 0.7f32;
    let camera =
        Camera::look_at([0.0, 1.6, 2.0], [0.0, 1.0, -40.0], fov, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 400.0)
            .with_viewport(SIZE[1], fov);
    let lods = asset.manifest().lods.len();
    for culling in [Culling::Gpu, Culling::Cpu] {
        let mut wg_crowd = line_crowd(&asset, 120);
        let mut vk_crowd = wg_crowd.clone();
        let mut wg_gpu = wg.create_crowd(&wg_crowd).expect("the crowd's GPU state is created");
        let mut vk_gpu = vk.create_crowd(&vk_crowd).expect("the crowd's GPU state is created");
        let options = RenderOptions {
            culling,
            shadows: true,
            ground: true,
            ground_half_extent: 200.0,
            ..Default::default()
        };
        for crowd in [&mut wg_crowd, &mut vk_crowd] {
            crowd.advance(0.4);
        }
        let w = wg
            .render_crowd(&wg_asset, &mut wg_gpu, &mut wg_crowd, &camera, &options)
            .expect("the frame renders");
        let w_image = wg.read_rgba8().expect("the image reads back");
        let v = vk
            .render_crowd(&vk_asset, &mut vk_gpu, &mut vk_crowd, &camera, &options)
            .expect("the frame renders");
        let v_image = vk.read_rgba8().expect("the image reads back");
        save_image(&format!("impostor-parity-{culling:?}-wgpu"), SIZE, &w_image);
        save_image(&format!("impostor-parity-{culling:?}-vulkan"), SIZE, &v_image);
        assert_eq!(w, v, "{culling:?}: the frame reports differ");
        if culling == Culling::Gpu {
            let (w_lists, v_lists) = (
                wg.read_gpu_visible(&wg_gpu).expect("the GPU's draw lists read back"),
                vk.read_gpu_visible(&vk_gpu).expect("the GPU's draw lists read back"),
            );
            assert_eq!(w_lists, v_lists, "the visible lists differ");
            // The cards' lists are the two after the mesh LODs (near cards, far cards): they hold
            // the far instances.
            println!("visible per draw: {:?}", w_lists.iter().map(Vec::len).collect::<Vec<_>>());
            let cards = w_lists.iter().skip(lods).map(Vec::len).sum::<usize>();
            assert!(w_lists.len() == lods + 2 && cards > 20, "too few cards: {w_lists:?}");
        }
        let (differing, max) = difference(&w_image, &v_image);
        let share = differing as f64 / (SIZE[0] * SIZE[1]) as f64;
        println!(
            "{culling:?}: {differing} pixels differ by more than 2/255 ({:.4} %), max {max}/255; {w:?}",
            share * 100.0
        );
        assert!(share <= MAX_SHARE, "{culling:?}: the images differ in {:.3} % of pixels", share * 100.0);
    }
    let messages = vk.parts().0.messages();
    assert_eq!(messages.errors() + messages.warnings(), 0, "Vulkan validation messages");
}

#[test]
fn cards_follow_the_config_and_the_asset() {
    // The same far crowd: with the tier, GPU culling puts the far instances in the cards' list; with
    // `impostors` off, or an asset without a tier, nothing is in it and the meshes draw them.
    const SIZE: [u32; 2] = [160, 120];
    let with_tier = Asset::parse(humanoid_impostor_vat()).expect("the test asset parses");
    let without = Asset::parse(vat_tests::humanoid_vat()).expect("the test asset parses");
    let mut wg = wgpu_offscreen(SIZE, 512);
    let lods = with_tier.manifest().lods.len();
    let camera = Camera::look_at([0.0, 1.6, 2.0], [0.0, 1.0, -40.0], 0.7, 4.0 / 3.0, 0.1, 400.0);
    let options = RenderOptions { culling: Culling::Gpu, ..Default::default() };
    for (asset, impostors, cards) in
        [(&with_tier, true, true), (&with_tier, false, false), (&without, true, false)]
    {
        let gpu_asset = wg.upload(asset).expect("the asset uploads");
        let mut crowd = line_crowd(asset, 60);
        crowd.config_mut().impostors = impostors;
        // Everything twice as far: the one-view cards start inside the line.
        crowd.config_mut().lod_bias = 1.0;
        let mut gpu = wg.create_crowd(&crowd).expect("the crowd's GPU state is created");
        wg.render_crowd(&gpu_asset, &mut gpu, &mut crowd, &camera, &options).expect("the frame renders");
        let lists = wg.read_gpu_visible(&gpu).expect("the GPU's draw lists read back");
        let in_cards = lists.iter().skip(lods).map(Vec::len).sum::<usize>();
        // The near cards' list and the far cards' (those drawn from one view) after the meshes'.
        assert_eq!(lists.len(), lods + 2 * usize::from(asset.manifest().impostors.is_some()));
        assert_eq!(in_cards > 0, cards, "impostors {impostors}: {lists:?}");
        if cards {
            // The split is at SINGLE_VIEW_LEVEL mip levels past the switch (scale 1, lod_bias 1:
            // twice the distance), measured from the bounds' centre: within a metre of the
            // instance's foot point raised 0.9 m.
            let tier = asset.manifest().impostors.as_ref().expect("the asset has a tier");
            let far_from = switch_distance(tier.radius, tier.tile_size) * SINGLE_VIEW_LEVEL.exp2();
            let records = crowd.records();
            let distance = |r: u32| {
                let p = records[r as usize].position;
                let d = [p[0] - 0.0, p[1] + 0.9 - 1.6, p[2] - 2.0];
                2.0 * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
            };
            let (near, far) = (&lists[lods], &lists[lods + 1]);
            assert!(
                !near.is_empty() && !far.is_empty(),
                "both card lists hold cards (far from {far_from} m): {lists:?}"
            );
            assert!(
                near.iter().all(|&r| distance(r) < far_from + 2.0),
                "near cards past {far_from}: {lists:?}"
            );
            assert!(
                far.iter().all(|&r| distance(r) > far_from - 2.0),
                "far cards before {far_from}: {lists:?}"
            );
        }
        // Every shown instance in view is drawn once at least (meshes and cards overlap only in the fade).
        let drawn: std::collections::BTreeSet<u32> = lists.iter().flatten().copied().collect();
        assert!(drawn.len() >= 50, "{} of 60 drawn", drawn.len());
    }
}

/// The share of full scale the mean absolute difference over the card's square (the bounding
/// sphere's tile_size x tile_size pixels at the switch) may reach (issue 33's goal: 2 %). Over the
/// character's own pixels alone (the union of mesh and card coverage) the figure is far larger
/// (thin limbs a pixel or two wide, resampled): the test holds it to the difference between the
/// mesh and itself seen half a pixel aside, and prints both.
const MAX_SWITCH_DIFFERENCE: f64 = 0.02;

/// One character seen by [`one_character`].
#[derive(Clone, Copy)]
struct Shot {
    /// Metres from the camera.
    distance: f32,
    /// Its yaw, radians.
    yaw: f32,
    /// Drawn as its card (the LOD bias puts it past the fade) or as its mesh.
    impostors: bool,
    /// The camera moved this many pixels sideways.
    shift: f32,
    /// Its material variant.
    variant: u32,
}

impl Shot {
    fn at(distance: f32, yaw: f32) -> Shot {
        Shot { distance, yaw, impostors: false, shift: 0.0, variant: 0 }
    }
}

/// Renders `shot` (256 x 256, no shadows or ground) and returns the image.
fn one_character<R: CrowdRenderer>(
    r: &mut R,
    gpu_asset: &R::Asset,
    asset: &Asset<'_>,
    shot: Shot,
) -> Vec<u8> {
    const SIZE: [u32; 2] = [256, 256];
    let Shot { distance, yaw, impostors, shift, variant } = shot;
    let config = CrowdConfig {
        impostors,
        // Past the fade's end (cards only) when drawing cards; the mesh keeps its own LOD choice.
        lod_bias: if impostors { (vat_core::format::impostor::SWITCH_FADE_BAND * 1.01).log2() } else { 0.0 },
        ..CrowdConfig::default()
    };
    let mut crowd =
        Crowd::new(CrowdAsset::from_manifest(asset.manifest()).expect("the asset's crowd data"), config);
    let id = crowd.spawn_at_phase([0.0, 0.0, -distance], yaw, 0, 0.25);
    crowd.set_variant(id, variant);
    let mut gpu = r.create_crowd(&crowd).expect("the crowd's GPU state is created");
    let fov = 0.6f32;
    let tier = asset.manifest().impostors.as_ref().expect("the test asset has a tier");
    let side = shift * distance * 2.0 * (fov * 0.5).tan() / SIZE[1] as f32;
    let centre = [tier.centre[0] + side, tier.centre[1], tier.centre[2] - distance];
    let camera = Camera::look_at([side, centre[1] + distance * 0.15, 0.0], centre, fov, 1.0, 0.1, 1000.0)
        .with_viewport(SIZE[1], fov);
    let options =
        RenderOptions { culling: Culling::Gpu, shadows: false, ground: false, ..Default::default() };
    r.render_crowd(gpu_asset, &mut gpu, &mut crowd, &camera, &options).expect("the frame renders");
    r.read_rgba8().expect("the image reads back")
}

#[test]
fn the_switch_from_mesh_to_card_changes_little() {
    let asset = Asset::parse(humanoid_impostor_vat()).expect("the test asset parses");
    let tier = asset.manifest().impostors.clone().expect("the test asset has a tier");
    let mut wg = wgpu_offscreen([256, 256], 1024);
    let gpu_asset = wg.upload(&asset).expect("the asset uploads");
    // Where the sphere's diameter spans tile_size pixels of this 256-row, 0.6 rad view.
    let pixel_angle = 2.0 * (0.3f32).tan() / 256.0;
    let distance = 2.0 * tier.radius / (tier.tile_size as f32 * pixel_angle);
    let (mut worst_mean, mut worst_square, mut worst_iou) = (0f64, 0f64, 1f64);
    let mut worst_shifted = 0f64;
    // (union of the character's pixels, intersection, sum of the mean absolute RGB difference).
    let compare = |mesh: &[u8], card: &[u8]| {
        let background = [mesh[0], mesh[1], mesh[2], mesh[3]];
        let (mut inter, mut union, mut sum) = (0usize, 0usize, 0f64);
        for (p, q) in mesh.chunks_exact(4).zip(card.chunks_exact(4)) {
            let (a, b) = (p != background, q != background);
            if a || b {
                union += 1;
                inter += usize::from(a && b);
                sum += (0..3).map(|c| f64::from(p[c].abs_diff(q[c]))).sum::<f64>() / (3.0 * 255.0);
            }
        }
        (union, inter, sum)
    };
    for (k, yaw) in [0.0f32, 0.7, 1.9, 3.0, 4.4].into_iter().enumerate() {
        let shot = Shot::at(distance, yaw);
        let mesh = one_character(&mut wg, &gpu_asset, &asset, shot);
        let card = one_character(&mut wg, &gpu_asset, &asset, Shot { impostors: true, ..shot });
        // The floor of this measure: the mesh against itself seen half a pixel to the side.
        let shifted = one_character(&mut wg, &gpu_asset, &asset, Shot { shift: 0.5, ..shot });
        save_image(&format!("impostor-switch-{k}-mesh"), [256, 256], &mesh);
        save_image(&format!("impostor-switch-{k}-card"), [256, 256], &card);
        let (union, inter, sum) = compare(&mesh, &card);
        assert!(union > 100, "yaw {yaw}: the character covers {union} pixels");
        let square = (tier.tile_size * tier.tile_size) as f64;
        let (mean, iou, over_square) = (sum / union as f64, inter as f64 / union as f64, sum / square);
        let (shifted_union, _, shifted_sum) = compare(&mesh, &shifted);
        let shifted_mean = shifted_sum / shifted_union as f64;
        println!(
            "yaw {yaw}: {union} character pixels, coverage IoU {iou:.3}, mean absolute difference {:.2} % \
             over them ({:.2} % between the mesh and itself half a pixel aside), {:.2} % over the card's \
             square",
            mean * 100.0,
            shifted_mean * 100.0,
            over_square * 100.0
        );
        worst_shifted = worst_shifted.max(shifted_mean);
        worst_mean = worst_mean.max(mean);
        worst_square = worst_square.max(over_square);
        worst_iou = worst_iou.min(iou);
    }
    println!(
        "at the switch ({distance:.1} m, {} px tiles): worst IoU {worst_iou:.3} (the tier states {:.3} at \
         its own resolution), worst mean difference {:.2} % over the character's pixels ({:.2} % for \
         the mesh half a pixel aside), {:.2} % over the card's square",
        tier.tile_size,
        tier.bound.min_coverage_iou,
        worst_mean * 100.0,
        worst_shifted * 100.0,
        worst_square * 100.0
    );
    // The card on screen agrees with the mesh at least as well as the tier states it does.
    assert!(worst_iou >= f64::from(tier.bound.min_coverage_iou), "IoU {worst_iou} at the switch");
    assert!(
        worst_square <= MAX_SWITCH_DIFFERENCE,
        "mean difference {:.2} % at the switch",
        worst_square * 100.0
    );
    // Over the character's own pixels, the switch changes it no more than moving the camera half a
    // pixel changes the mesh (the measure's floor at this size: every silhouette pixel counts).
    assert!(
        worst_mean <= worst_shifted,
        "mean difference {:.2} % over the character's pixels, over the half-pixel floor {:.2} %",
        worst_mean * 100.0,
        worst_shifted * 100.0
    );
}

/// Mean sRGB colour (0 to 255) of the pixels of `image` that differ from its first (the clear colour).
fn mean_character_color(image: &[u8]) -> [f64; 3] {
    let background = &image[..4];
    let (mut sum, mut n) = ([0f64; 3], 0f64);
    for p in image.chunks_exact(4).filter(|p| *p != background) {
        for (s, &c) in sum.iter_mut().zip(&p[..3]) {
            *s += f64::from(c);
        }
        n += 1.0;
    }
    sum.map(|s| s / n.max(1.0))
}

/// How far (a fraction of the mesh's sRGB value, per channel) a card's mean colour inside both
/// silhouettes may be from its mesh's at the switch: the card has no texture coordinates (its
/// albedo is baked per vertex, no normal or metallic-roughness map reaches it) and its normal is
/// the 8-bit mean over a texel.
const MAX_INTERIOR_SHADING: f64 = 0.10;

/// Mean sRGB colours of `mesh` and `card` (256 x 256 images) over the pixels that both images cover
/// together with their four neighbours, and the number of such pixels.
fn interior_means(mesh: &[u8], card: &[u8]) -> ([f64; 3], [f64; 3], usize) {
    let background = &mesh[..4];
    let covered = |image: &[u8], i: usize| image[i * 4..i * 4 + 4] != *background;
    let (mut a, mut b, mut n) = ([0f64; 3], [0f64; 3], 0usize);
    for y in 1..255 {
        for x in 1..255 {
            let i = y * 256 + x;
            let around = [i, i - 1, i + 1, i - 256, i + 256];
            if around.iter().all(|&j| covered(mesh, j) && covered(card, j)) {
                for c in 0..3 {
                    a[c] += f64::from(mesh[i * 4 + c]);
                    b[c] += f64::from(card[i * 4 + c]);
                }
                n += 1;
            }
        }
    }
    let mean = |s: [f64; 3]| s.map(|v| v / n.max(1) as f64);
    (mean(a), mean(b), n)
}

#[test]
fn cards_show_each_instances_material_variant_on_both_backends() {
    // The textured humanoid with two material variants ("red", "blue"): one character at the switch
    // drawn as its mesh and as its card in the authored materials and in each variant. Each card's
    // mean colour is nearest its own variant's mesh (of the three), and the backends agree.
    let asset = Asset::parse(textured_variants_impostor_vat()).expect("the test asset parses");
    assert_eq!(asset.manifest().impostor_material_variants, 2);
    let tier = asset.manifest().impostors.clone().expect("the test asset has a tier");
    let mut wg = wgpu_offscreen([256, 256], 1024);
    let mut vk = vulkan_offscreen([256, 256], 1024);
    let (wg_asset, vk_asset) =
        (wg.upload(&asset).expect("the asset uploads"), vk.upload(&asset).expect("the asset uploads"));
    let pixel_angle = 2.0 * (0.3f32).tan() / 256.0;
    let distance = 2.0 * tier.radius / (tier.tile_size as f32 * pixel_angle);
    let shots = [0, 1, 2].map(|variant| Shot { variant, ..Shot::at(distance, 0.4) });
    let mesh_images = shots.map(|shot| one_character(&mut wg, &wg_asset, &asset, shot));
    let meshes = mesh_images.each_ref().map(|image| mean_character_color(image));
    for (shot, mesh) in shots.into_iter().zip(&mesh_images) {
        let card = Shot { impostors: true, ..shot };
        let w = one_character(&mut wg, &wg_asset, &asset, card);
        let v = one_character(&mut vk, &vk_asset, &asset, card);
        save_image(&format!("impostor-variant-{}-card", shot.variant), [256, 256], &w);
        let (differing, max) = difference(&w, &v);
        assert!(
            differing as f64 <= MAX_SHARE * 256.0 * 256.0,
            "variant {}: {differing} pixels differ between the backends (max {max})",
            shot.variant
        );
        let color = mean_character_color(&w);
        let distance_to = |m: &[f64; 3]| (0..3).map(|i| (m[i] - color[i]).powi(2)).sum::<f64>().sqrt();
        let nearest = (0..3).min_by(|&a, &b| distance_to(&meshes[a]).total_cmp(&distance_to(&meshes[b])));
        println!(
            "variant {}: card mean colour {color:.1?}, meshes {meshes:.1?} (nearest: variant {nearest:?})",
            shot.variant
        );
        assert_eq!(
            nearest,
            Some(shot.variant as usize),
            "variant {}: the card shows another variant",
            shot.variant
        );
        // Shading where both are solid (the pixels whose 4 neighbours both images cover too: the
        // mesh's edge pixels blend with the sky, the card's alpha-tested edges do not): the card
        // lit in the material's light model stays within MAX_INTERIOR_SHADING of the mesh.
        let (mesh_inside, card_inside, pixels) = interior_means(mesh, &w);
        let worst = (0..3).map(|i| (card_inside[i] / mesh_inside[i] - 1.0).abs()).fold(0.0, f64::max);
        println!(
            "variant {}: inside both silhouettes ({pixels} pixels) card {card_inside:.1?}, mesh {mesh_inside:.1?} \
             ({:.1} % apart at most)",
            shot.variant,
            worst * 100.0
        );
        assert!(
            pixels >= 8 && worst <= MAX_INTERIOR_SHADING,
            "variant {}: {:.1} % apart",
            shot.variant,
            worst * 100.0
        );
    }
    let messages = vk.parts().0.messages();
    assert_eq!(messages.errors() + messages.warnings(), 0, "Vulkan validation messages");
}
