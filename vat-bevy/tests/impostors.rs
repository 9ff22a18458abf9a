//! The impostor tier through the Bevy plugin: a crowd whose asset carries a tier draws its far
//! characters as cards in Bevy's camera, with nothing new for the host (the same `VatCrowd`, only
//! `CrowdConfig::impostors`), on both culling paths:
//! - the cards appear where the meshes do (their pixels cover most of the meshes' pixels);
//! - they are cards, not meshes (the image differs from the meshes' one);
//! - `impostors` off draws the meshes again.

#![allow(clippy::unwrap_used)] // Tests.

mod common;
#[path = "../examples/common/scene.rs"]
mod scene;

use bevy::prelude::*;

const SIZE: UVec2 = UVec2::new(320, 200);

/// Every character past the switch's fade at this crowd LOD bias (doublings of distance): the
/// characters stand 10 to 34 m from the camera, the small tier below switches at about 64 m at
/// the reference view and this 200-row view doubles distances twice over, so they are 110 to
/// 370 m away in effective distance, near cards and far (one-view) cards both.
const LOD_BIAS: f32 = 1.5;

/// The scene's humanoid with a small impostor tier (4 x 4 hemi views of 32 px, 2 frames per clip).
fn humanoid_with_tier() -> Vec<u8> {
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    let bytes = scene::humanoid_vat();
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    let options = vat_bake::impostor::ImpostorOptions {
        grid: ViewGrid::new(4, ViewCoverage::Hemi).unwrap(),
        tile_size: 32,
        frames_per_clip: 2,
        samples_per_side: 2,
    };
    let (images, _) = vat_bake::impostor::bake_measured_tier(&asset, &options).unwrap();
    vat_bake::impostor::with_tier_bytes(&asset, &images).unwrap()
}

#[derive(Resource)]
struct Target(Handle<Image>);

/// A headless app of the scene with the tier's humanoid, the clock paused.
fn app() -> App {
    let mut app = common::headless_app();
    let target = common::image_target(&mut app, SIZE);
    app.insert_resource(scene::SceneConfig {
        instances: 300,
        target: Some(target.clone()),
        vat: humanoid_with_tier(),
        second: None,
        z_range: (-scene::AREA, scene::AREA),
    })
    .insert_resource(Target(target))
    .add_systems(Startup, scene::setup)
    .add_systems(Update, scene::walk);
    app.update();
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    app
}

/// A screenshot after a few frames with the crowd shown (`Some(impostors)`) or hidden (`None`).
fn render(app: &mut App, impostors: Option<bool>, name: &str) -> Vec<u8> {
    let entities = *app.world().resource::<scene::SceneEntities>();
    let visibility = if impostors.is_some() { Visibility::Inherited } else { Visibility::Hidden };
    app.world_mut().entity_mut(entities.crowd).insert(visibility);
    {
        let crowd = app.world().get::<vat_bevy::VatCrowd>(entities.crowd).unwrap();
        let mut crowd = crowd.crowd().expect("the crowd is built");
        crowd.config_mut().impostors = impostors.unwrap_or(false);
        crowd.config_mut().lod_bias = LOD_BIAS;
    }
    for _ in 0..3 {
        app.update();
    }
    let target = app.world().resource::<Target>().0.clone();
    common::screenshot(app, target, name).data.expect("the screenshot has pixels")
}

fn differs(a: &[u8], b: &[u8], i: usize) -> bool {
    (0..3).any(|c| a[4 * i + c].abs_diff(b[4 * i + c]) > 8)
}

#[test]
fn far_characters_are_drawn_as_cards_in_bevys_camera() {
    let mut app = app();
    // Bevy compiles its pipelines in the background: its meshes appear a few frames in.
    let _warm_up = render(&mut app, Some(false), "warm_up");
    let n = (SIZE.x * SIZE.y) as usize;
    for culling in [vat_bevy::Culling::Cpu, vat_bevy::Culling::Gpu] {
        app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>().culling = culling;
        let empty = render(&mut app, None, &format!("{culling:?}_empty"));
        let meshes = render(&mut app, Some(false), &format!("{culling:?}_meshes"));
        let cards = render(&mut app, Some(true), &format!("{culling:?}_cards"));
        let mesh_mask: Vec<bool> = (0..n).map(|i| differs(&meshes, &empty, i)).collect();
        let card_mask: Vec<bool> = (0..n).map(|i| differs(&cards, &empty, i)).collect();
        let (mesh_pixels, card_pixels) =
            (mesh_mask.iter().filter(|&&m| m).count(), card_mask.iter().filter(|&&c| c).count());
        let both = mesh_mask.iter().zip(&card_mask).filter(|&(&m, &c)| m && c).count();
        let changed = (0..n).filter(|&i| differs(&cards, &meshes, i)).count();
        eprintln!(
            "{culling:?}: meshes cover {mesh_pixels} pixels, cards {card_pixels}, both {both}; \
             {changed} pixels differ between them"
        );
        assert!(mesh_pixels > 300, "{culling:?}: the meshes cover only {mesh_pixels} pixels");
        // The cards stand where the meshes do.
        assert!(
            both * 2 > mesh_pixels,
            "{culling:?}: cards cover {both} of the meshes' {mesh_pixels} pixels"
        );
        // And they are cards: the images differ (a card is a resampled image of the body).
        assert!(changed > 20, "{culling:?}: the cards' image equals the meshes' ({changed} pixels differ)");
        // Off again: the meshes' image back.
        let again = render(&mut app, Some(false), &format!("{culling:?}_meshes_again"));
        let back = (0..n).filter(|&i| differs(&again, &meshes, i)).count();
        assert!(back < changed / 4 + 5, "{culling:?}: impostors off left {back} pixels changed");
    }
}
