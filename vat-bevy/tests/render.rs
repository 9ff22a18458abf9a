//! The example's scene rendered headless by Bevy (on the software Vulkan driver in CI), measured,
//! in an HDR, 4x MSAA camera, with the clock paused (every render shows the same pose):
//! - the crowd appears, lit;
//! - the building occludes the characters behind it (vat draws into Bevy's reverse-Z depth);
//! - shadows both ways through Bevy's cascades: the building shadows the crowd (the crowd darkens
//!   where the building casts, against the building made `NotShadowCaster`), and the crowd shadows
//!   the ground (the ground darkens where the crowd casts, against `cast_bevy_shadows` off);
//! - the crowd's silhouettes equal vat-wgpu's own render of the same crowd from the same camera;
//! - a second camera draws the crowd too.

#![allow(clippy::unwrap_used)] // Tests.

mod common;
#[path = "../examples/common/scene.rs"]
mod scene;

use bevy::prelude::*;

const SIZE: UVec2 = UVec2::new(320, 200);

/// A headless app of the scene (characters behind the building only) rendering into an image.
fn app() -> App {
    let mut app = common::headless_app();
    let target = common::image_target(&mut app, SIZE);
    app.insert_resource(scene::SceneConfig {
        instances: 600,
        target: Some(target.clone()),
        vat: scene::humanoid_vat(),
        second: None,
        // Behind the building (its back face is at z = 4.5, and a body reaches 0.3 m): every
        // character is occluded where the building covers it. The sun, low from the left, casts
        // the building's shadow across the characters right of it (x from 3 to 8 m, z from 2 m).
        z_range: (-scene::AREA, 4.1),
    })
    .insert_resource(Target(target))
    .add_systems(Startup, scene::setup)
    .add_systems(Update, scene::walk);
    app.update(); // Startup: the scene.
    // A still frame: no walking, no animation (the crowd's clock is Bevy's virtual time).
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    app
}

#[derive(Resource)]
struct Target(Handle<Image>);

/// Renders a few frames with the crowd and the building shown or hidden, then one screenshot,
/// as RGBA8.
fn render(app: &mut App, crowd: bool, building: bool) -> Vec<u8> {
    let target = app.world().resource::<Target>().0.clone();
    render_to(app, target, crowd, building)
}

/// [`render`] of the camera rendering into `target`.
fn render_to(app: &mut App, target: Handle<Image>, crowd: bool, building: bool) -> Vec<u8> {
    let entities = *app.world().resource::<scene::SceneEntities>();
    let visibility = |on: bool| if on { Visibility::Inherited } else { Visibility::Hidden };
    app.world_mut().entity_mut(entities.crowd).insert(visibility(crowd));
    app.world_mut().entity_mut(entities.building).insert(visibility(building));
    for _ in 0..3 {
        app.update();
    }
    let name = format!("crowd{}_building{}", u8::from(crowd), u8::from(building));
    let image = common::screenshot(app, target, &name);
    assert_eq!(image.texture_descriptor.size.width, SIZE.x);
    let data = image.data.expect("the screenshot has pixels");
    assert_eq!(data.len(), (SIZE.x * SIZE.y * 4) as usize);
    data
}

/// Whether pixel `i` differs by more than 8/255 in a colour channel.
fn differs(a: &[u8], b: &[u8], i: usize) -> bool {
    (0..3).any(|c| a[4 * i + c].abs_diff(b[4 * i + c]) > 8)
}

/// `mask` shrunk by `r` pixels (away from edges that MSAA blends).
fn erode(mask: &[bool], r: i32) -> Vec<bool> {
    let (w, h) = (SIZE.x as i32, SIZE.y as i32);
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            (-r..=r).all(|dy| {
                (-r..=r).all(|dx| {
                    let (u, v) = (x + dx, y + dy);
                    u >= 0 && v >= 0 && u < w && v < h && mask[(v * w + u) as usize]
                })
            })
        })
        .collect()
}

#[test]
fn crowd_is_drawn_and_occluded_by_the_building() {
    let mut app = app();
    // Bevy compiles its pipelines in the background: its meshes appear a few frames in.
    let _warm_up = render(&mut app, true, true);
    let all = render(&mut app, true, true);
    let no_crowd = render(&mut app, false, true);
    let no_building = render(&mut app, true, false);
    let empty = render(&mut app, false, false);
    let n = (SIZE.x * SIZE.y) as usize;

    // The crowd appears: pixels differ from the render without it.
    let crowd_pixels = (0..n).filter(|&i| differs(&all, &no_crowd, i)).count();
    eprintln!("pixels changed by the crowd: {crowd_pixels} of {n}");
    assert!(crowd_pixels > 500, "the crowd changed only {crowd_pixels} pixels");
    // Lit, not black: the mean of the crowd's pixels.
    let mean: f64 = (0..n)
        .filter(|&i| differs(&all, &no_crowd, i))
        .map(|i| f64::from(all[4 * i]) + f64::from(all[4 * i + 1]) + f64::from(all[4 * i + 2]))
        .sum::<f64>()
        / (3.0 * crowd_pixels as f64);
    eprintln!("mean channel of the crowd's pixels: {mean:.1}");
    assert!(mean > 20.0, "the crowd is black (mean channel {mean:.1})");

    // GPU culling (indirect draws with a first instance) draws the crowd too.
    app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>().culling = vat_bevy::Culling::Gpu;
    let gpu_culled = render(&mut app, true, true);
    let gpu_pixels = (0..n).filter(|&i| differs(&gpu_culled, &no_crowd, i)).count();
    eprintln!("pixels changed by the GPU-culled crowd: {gpu_pixels}");
    assert!(
        gpu_pixels * 2 > crowd_pixels,
        "GPU culling drew {gpu_pixels} pixels, CPU culling {crowd_pixels}"
    );

    // The building's pixels (it changes the empty render there), away from its edges.
    let building: Vec<bool> = (0..n).map(|i| differs(&no_crowd, &empty, i)).collect();
    let building = erode(&building, 2);
    let building_pixels = building.iter().filter(|&&b| b).count();
    assert!(building_pixels > 1000, "the building covers only {building_pixels} pixels");
    // Where the crowd is drawn without the building, inside the building's silhouette...
    let behind: Vec<usize> = (0..n).filter(|&i| building[i] && differs(&no_building, &empty, i)).collect();
    eprintln!("building pixels with characters behind them: {}", behind.len());
    assert!(behind.len() > 100, "only {} characters' pixels behind the building", behind.len());
    // ...the building hides it: the render with the crowd equals the one without there.
    let leaked = behind.iter().filter(|&&i| differs(&all, &no_crowd, i)).count();
    eprintln!("of which drawn over the building: {leaked}");
    assert!(
        leaked * 50 <= behind.len(),
        "{leaked} of {} pixels of characters behind the building were drawn over it",
        behind.len()
    );

    // Shadows both ways. The crowd's own pixels: the crowd against none, with the crowd casting
    // nothing (so its shadows on the ground are not in the mask), away from its edges.
    let mut s = *app.world().resource::<vat_bevy::VatRenderSettings>();
    s.culling = vat_bevy::Culling::Cpu;
    s.cast_bevy_shadows = false;
    *app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>() = s;
    let not_casting = render(&mut app, true, true);
    s.cast_bevy_shadows = true;
    *app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>() = s;
    let casting = render(&mut app, true, true);
    let crowd_only: Vec<bool> = (0..n).map(|i| differs(&not_casting, &no_crowd, i)).collect();
    let crowd_core = erode(&crowd_only, 1);
    // The crowd shadows the ground: outside the crowd, pixels darken when the crowd casts.
    let ground_shadow = (0..n).filter(|&i| !crowd_only[i] && darker(&casting, &not_casting, i)).count();
    let ground_lighter = (0..n).filter(|&i| !crowd_only[i] && darker(&not_casting, &casting, i)).count();
    eprintln!("ground pixels shadowed by the crowd: {ground_shadow} (lightened: {ground_lighter})");
    assert!(ground_shadow > 200, "the crowd casts onto only {ground_shadow} ground pixels");
    assert!(ground_lighter * 50 <= ground_shadow, "casting lightened {ground_lighter} ground pixels");
    // The building shadows the crowd: crowd pixels darken when the building casts, against the
    // same frame with the building made `NotShadowCaster` (it still occludes).
    let building_entity = app.world().resource::<scene::SceneEntities>().building;
    app.world_mut().entity_mut(building_entity).insert(bevy::light::NotShadowCaster);
    let unshadowed = render(&mut app, true, true);
    app.world_mut().entity_mut(building_entity).remove::<bevy::light::NotShadowCaster>();
    let core_pixels = crowd_core.iter().filter(|&&c| c).count();
    let in_shadow = (0..n).filter(|&i| crowd_core[i] && darker(&casting, &unshadowed, i)).count();
    let brighter = (0..n).filter(|&i| crowd_core[i] && darker(&unshadowed, &casting, i)).count();
    eprintln!("crowd pixels shadowed by the building: {in_shadow} of {core_pixels} (lightened: {brighter})");
    assert!(in_shadow > 100, "the building shadows only {in_shadow} crowd pixels");
    assert!(brighter * 50 <= in_shadow, "the building's shadow lightened {brighter} crowd pixels");

    // Silhouettes: the crowd alone (no building) as Bevy draws it, against vat-wgpu's own render
    // of the same crowd from the same camera (reverse-Z, the view's rows and field of view), both
    // one sample per pixel (vat's offscreen target has no MSAA).
    s.cast_bevy_shadows = false;
    *app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>() = s;
    let camera_entity = app.world().resource::<scene::SceneEntities>().camera;
    app.world_mut().entity_mut(camera_entity).insert(Msaa::Off);
    let bevy_crowd = render(&mut app, true, false);
    let bevy_ground = render(&mut app, false, false);
    app.world_mut().entity_mut(camera_entity).insert(Msaa::Sample4);
    let bevy_mask: Vec<bool> = (0..n).map(|i| differs(&bevy_crowd, &bevy_ground, i)).collect();
    let crowd_entity = app.world().resource::<scene::SceneEntities>().crowd;
    let mut crowd = (*app.world().get::<vat_bevy::VatCrowd>(crowd_entity).unwrap().crowd().unwrap()).clone();
    let vat_mask = vat_wgpu_silhouette(&mut crowd);
    let (bevy_count, vat_count) =
        (bevy_mask.iter().filter(|&&b| b).count(), vat_mask.iter().filter(|&&b| b).count());
    // Tolerance: a body pixel whose colour matches the ground within 8/255 is missing from Bevy's
    // mask (vat's is against its clear colour, no ground), and a tie of the two renders' depth or
    // coverage rules may move an edge; so a pixel in one mask only must lie within 1 pixel of the
    // other, for all but 1 % of the union.
    let near = |mask: &[bool], i: usize| dilate_hit(mask, i, 1);
    let stray = (0..n)
        .filter(|&i| (bevy_mask[i] && !near(&vat_mask, i)) || (vat_mask[i] && !near(&bevy_mask, i)))
        .count();
    let union = (0..n).filter(|&i| bevy_mask[i] || vat_mask[i]).count();
    if let Ok(dir) = std::env::var("VAT_BEVY_TEST_OUT") {
        // For a look: red = Bevy's silhouette only, green = vat-wgpu's only, white = both.
        let pixels: Vec<u8> = (0..n)
            .flat_map(|i| match (bevy_mask[i], vat_mask[i]) {
                (true, true) => [255, 255, 255],
                (true, false) => [255, 0, 0],
                (false, true) => [0, 255, 0],
                (false, false) => [0, 0, 0],
            })
            .collect();
        let mut ppm = format!("P6\n{} {}\n255\n", SIZE.x, SIZE.y).into_bytes();
        ppm.extend(pixels);
        std::fs::write(format!("{dir}/silhouettes.ppm"), ppm).unwrap();
    }
    eprintln!(
        "silhouettes: Bevy {bevy_count}, vat-wgpu {vat_count} pixels; {stray} of {union} more than 1 px off"
    );
    assert!(bevy_count > 1000 && vat_count > 1000, "both draw the crowd: {bevy_count}, {vat_count}");
    assert!(stray * 100 <= union, "{stray} of {union} silhouette pixels differ by more than 1 px");
    s.cast_bevy_shadows = true;
    *app.world_mut().resource_mut::<vat_bevy::VatRenderSettings>() = s;

    // A second 3D camera (another view, another image) draws the crowd too, and the first one
    // still does: each view is planned and submitted in turn.
    let second = common::image_target(&mut app, SIZE);
    app.world_mut().spawn((
        Camera3d::default(),
        Camera { order: 1, ..default() },
        Msaa::Sample4,
        bevy::camera::Hdr,
        bevy::core_pipeline::tonemapping::Tonemapping::AcesFitted,
        Transform::from_xyz(20.0, 8.0, -4.0).looking_at(Vec3::new(0.0, 1.0, -4.0), Vec3::Y),
        bevy::camera::RenderTarget::Image(second.clone().into()),
    ));
    let side = render_to(&mut app, second.clone(), true, true);
    let side_empty = render_to(&mut app, second, false, true);
    let side_pixels = (0..n).filter(|&i| differs(&side, &side_empty, i)).count();
    let first = render(&mut app, true, true);
    let first_pixels = (0..n).filter(|&i| differs(&first, &no_crowd, i)).count();
    eprintln!("two cameras: the crowd changes {first_pixels} and {side_pixels} pixels");
    assert!(side_pixels > 500, "the second camera drew {side_pixels} crowd pixels");
    assert!(first_pixels * 2 > crowd_pixels, "the first camera drew {first_pixels} crowd pixels with two");
}

/// Whether pixel `i` is darker in `a` than in `b` by more than 8/255 in the sum of its channels.
fn darker(a: &[u8], b: &[u8], i: usize) -> bool {
    let sum = |img: &[u8]| (0..3).map(|c| i32::from(img[4 * i + c])).sum::<i32>();
    sum(a) + 8 < sum(b)
}

/// Whether `mask` holds a pixel within `r` pixels of pixel `i`.
fn dilate_hit(mask: &[bool], i: usize, r: i32) -> bool {
    let (w, h) = (SIZE.x as i32, SIZE.y as i32);
    let (x, y) = (i as i32 % w, i as i32 / w);
    (-r..=r).any(|dy| {
        (-r..=r).any(|dx| {
            let (u, v) = (x + dx, y + dy);
            u >= 0 && v >= 0 && u < w && v < h && mask[(v * w + u) as usize]
        })
    })
}

/// The pixels vat-wgpu's own offscreen renderer covers with `crowd`, seen from the scene's camera
/// as Bevy sets it up (its default perspective: 45 degrees, near 0.1 m, reverse-Z, infinite far).
fn vat_wgpu_silhouette(crowd: &mut vat_core::crowd::Crowd) -> Vec<bool> {
    use vat_core::render::CrowdRenderer;
    let config = vat_wgpu::RendererConfig {
        conventions: vat_core::backend::pipeline::PassConventions::REVERSE_Z,
        ..Default::default()
    };
    let mut r = vat_wgpu::Offscreen::new([SIZE.x, SIZE.y], config).unwrap();
    let bytes = scene::humanoid_vat();
    let asset = r.upload(&vat_core::container::Asset::parse(&bytes).unwrap()).unwrap();
    let mut gpu = r.create_crowd(crowd).unwrap();
    let fov = std::f32::consts::FRAC_PI_4;
    let aspect = SIZE.x as f32 / SIZE.y as f32;
    let camera = vat_core::crowd::Camera::look_at_reverse_z(
        scene::EYE.to_array(),
        scene::TARGET.to_array(),
        fov,
        aspect,
        0.1,
    )
    .with_viewport(SIZE.y, fov);
    let options = vat_wgpu::RenderOptions { shadows: false, ..Default::default() };
    r.render_crowd(&asset, &mut gpu, crowd, &camera, &options).unwrap();
    let rgba = r.read_rgba8().unwrap();
    let background = rgba[..4].to_vec();
    rgba.chunks(4).map(|p| p != background.as_slice()).collect()
}
