//! A crowd member looks like the same glTF drawn by Bevy: two static glTF spheres (a dielectric and
//! a metal, factor-only `pbrMetallicRoughness` materials) are baked by vat-bake and drawn by
//! vat-bevy, and the same geometry and material are drawn by Bevy as a mesh with a
//! `StandardMaterial`, at the same place, under one directional light and Bevy's ambient light, in
//! an HDR camera with Bevy's tone mapping (headless, on the software Vulkan driver). The two
//! renders are compared pixel by pixel where either draws a sphere.
//!
//! Tolerance, stated: a mean absolute difference of at most 2 % of full scale (8-bit sRGB after
//! tone mapping) and 95 % of pixels within 5 %. What may differ: Bevy reads its split-sum terms
//! from a lookup table where vat uses their polynomial fit (a few percent of the ambient specular
//! term), vat's baked normals are quantized (Packed64: about 0.02 degrees), and the silhouettes'
//! pixels can differ at ties.

#![allow(clippy::unwrap_used)] // Tests.

mod common;

use bevy::asset::RenderAssetUsages;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use vat_bevy::{VatAsset, VatCrowd};
use vat_core::crowd::CrowdConfig;

const SIZE: UVec2 = UVec2::new(320, 200);

/// A glTF material's factors.
#[derive(Clone, Copy)]
struct Factors {
    base_color: [f32; 4],
    metallic: f32,
    roughness: f32,
}

const DIELECTRIC: Factors = Factors { base_color: [0.8, 0.25, 0.15, 1.0], metallic: 0.0, roughness: 0.5 };
const METAL: Factors = Factors { base_color: [0.9, 0.75, 0.45, 1.0], metallic: 1.0, roughness: 0.35 };

/// A UV sphere of radius 0.8 m centred 0.8 m above the origin: positions, unit normals, indices.
fn sphere() -> (Vec<[f32; 3]>, Vec<[f32; 3]>, Vec<u32>) {
    let (rings, segments) = (24u32, 48u32);
    let (mut positions, mut normals, mut indices) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..=rings {
        let theta = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..=segments {
            let phi = std::f32::consts::TAU * s as f32 / segments as f32;
            let n = [theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()];
            normals.push(n);
            positions.push([0.8 * n[0], 0.8 + 0.8 * n[1], 0.8 * n[2]]);
        }
    }
    let row = segments + 1;
    for r in 0..rings {
        for s in 0..segments {
            let (a, b) = (r * row + s, (r + 1) * row + s);
            indices.extend([a, a + 1, b, a + 1, b + 1, b]);
        }
    }
    (positions, normals, indices)
}

/// The sphere as a static `.glb` with one material of `factors`.
fn sphere_glb(factors: Factors) -> Vec<u8> {
    let (positions, normals, indices) = sphere();
    let mut bin: Vec<u8> = bytemuck::cast_slice(&positions).to_vec();
    let normals_at = bin.len();
    bin.extend(bytemuck::cast_slice(&normals));
    let indices_at = bin.len();
    bin.extend(bytemuck::cast_slice(&indices));
    let [r, g, b, a] = factors.base_color;
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],"nodes":[{{"mesh":0}}],
"meshes":[{{"primitives":[{{"attributes":{{"POSITION":0,"NORMAL":1}},"indices":2,"material":0}}]}}],
"materials":[{{"pbrMetallicRoughness":{{"baseColorFactor":[{r},{g},{b},{a}],"metallicFactor":{m},"roughnessFactor":{ro}}}}}],
"buffers":[{{"byteLength":{len}}}],
"bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":{nl}}},{{"buffer":0,"byteOffset":{nl},"byteLength":{nl}}},{{"buffer":0,"byteOffset":{il},"byteLength":{ib}}}],
"accessors":[{{"bufferView":0,"componentType":5126,"count":{count},"type":"VEC3","min":[-0.8,0.0,-0.8],"max":[0.8,1.6,0.8]}},
{{"bufferView":1,"componentType":5126,"count":{count},"type":"VEC3"}},
{{"bufferView":2,"componentType":5125,"count":{icount},"type":"SCALAR"}}]}}"#,
        m = factors.metallic,
        ro = factors.roughness,
        len = bin.len(),
        nl = normals_at,
        il = indices_at,
        ib = indices.len() * 4,
        count = positions.len(),
        icount = indices.len(),
    );
    vat_procgen::testdata::glb(json.as_bytes(), &bin)
}

/// The same sphere and material as Bevy's mesh and `StandardMaterial`.
fn bevy_sphere(factors: Factors) -> (Mesh, StandardMaterial) {
    let (positions, normals, indices) = sphere();
    let mesh = Mesh::new(PrimitiveTopology::TriangleList, RenderAssetUsages::default())
        .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
        .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
        .with_inserted_indices(Indices::U32(indices));
    let [r, g, b, a] = factors.base_color;
    let material = StandardMaterial {
        base_color: Color::linear_rgba(r, g, b, a),
        metallic: factors.metallic,
        perceptual_roughness: factors.roughness,
        ..default()
    };
    (mesh, material)
}

#[derive(Resource)]
struct Scene {
    target: Handle<Image>,
    vat: Vec<Entity>,
    bevy: Vec<Entity>,
}

fn app() -> App {
    let mut app = common::headless_app();
    let target = common::image_target(&mut app, SIZE);
    let world = app.world_mut();
    world.spawn((
        Camera3d::default(),
        Msaa::Off,
        bevy::camera::Hdr,
        // The default (TonyMcMapface) needs Bevy's `tonemapping_luts`, not in vat-bevy's features.
        bevy::core_pipeline::tonemapping::Tonemapping::AcesFitted,
        Transform::from_xyz(0.0, 1.4, 4.6).looking_at(Vec3::new(0.0, 0.8, 0.0), Vec3::Y),
        bevy::camera::RenderTarget::Image(target.clone().into()),
    ));
    world.spawn((
        DirectionalLight { illuminance: 9_000.0, shadow_maps_enabled: false, ..default() },
        Transform::from_xyz(2.0, 3.0, 2.5).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    world.insert_resource(GlobalAmbientLight { brightness: 600.0, ..default() });
    world.insert_resource(ClearColor(Color::BLACK));
    let (mut vat, mut bevy_entities) = (Vec::new(), Vec::new());
    for (x, factors) in [(-1.0f32, DIELECTRIC), (1.0, METAL)] {
        let rig = vat_bake::gltf_import::import_slice(&sphere_glb(factors), None, "sphere.glb").unwrap();
        let bake = vat_bake::prepare::prepare(&rig, &Default::default()).unwrap();
        let asset = VatAsset::from_bytes(bake.to_vat_bytes().unwrap()).unwrap();
        let handle = world.resource_mut::<Assets<VatAsset>>().add(asset.clone());
        let crowd = VatCrowd::with_asset(handle, &asset, CrowdConfig::default());
        crowd.crowd().unwrap().spawn([x, 0.0, 0.0], 0.0, 0);
        vat.push(world.spawn(crowd).id());
        let (mesh, material) = bevy_sphere(factors);
        let mesh = world.resource_mut::<Assets<Mesh>>().add(mesh);
        let material = world.resource_mut::<Assets<StandardMaterial>>().add(material);
        let entity =
            world.spawn((Mesh3d(mesh), MeshMaterial3d(material), Transform::from_xyz(x, 0.0, 0.0))).id();
        bevy_entities.push(entity);
    }
    world.insert_resource(Scene { target, vat, bevy: bevy_entities });
    app.update();
    app
}

/// A screenshot with vat's spheres and/or Bevy's shown, RGBA8 (sRGB, tone mapped).
fn render(app: &mut App, vat: bool, bevy: bool) -> Vec<u8> {
    let (target, vat_entities, bevy_entities) = {
        let s = app.world().resource::<Scene>();
        (s.target.clone(), s.vat.clone(), s.bevy.clone())
    };
    let visibility = |on: bool| if on { Visibility::Inherited } else { Visibility::Hidden };
    for e in vat_entities {
        app.world_mut().entity_mut(e).insert(visibility(vat));
    }
    for e in bevy_entities {
        app.world_mut().entity_mut(e).insert(visibility(bevy));
    }
    for _ in 0..3 {
        app.update();
    }
    let name = format!("shading_vat{}_bevy{}", u8::from(vat), u8::from(bevy));
    common::screenshot(app, target, &name).data.expect("the screenshot has pixels")
}

#[test]
fn a_baked_static_gltf_is_shaded_as_bevy_shades_the_same_gltf() {
    let mut app = app();
    let _warm_up = render(&mut app, false, true); // Bevy compiles its pipelines in the background.
    let empty = render(&mut app, false, false);
    let by_bevy = render(&mut app, false, true);
    let by_vat = render(&mut app, true, false);
    let n = (SIZE.x * SIZE.y) as usize;
    let covered = |img: &[u8], i: usize| (0..3).any(|c| img[4 * i + c].abs_diff(empty[4 * i + c]) > 2);
    for (half, name) in [(0usize, "dielectric"), (1, "metal")] {
        let in_half = |i: usize| (i % SIZE.x as usize >= SIZE.x as usize / 2) == (half == 1);
        let (mut both, mut only, mut diffs) = (0usize, 0usize, Vec::new());
        for i in (0..n).filter(|&i| in_half(i)) {
            match (covered(&by_bevy, i), covered(&by_vat, i)) {
                (true, true) => {
                    both += 1;
                    let d = (0..3).map(|c| by_bevy[4 * i + c].abs_diff(by_vat[4 * i + c])).max().unwrap_or(0);
                    diffs.push(d);
                }
                (true, false) | (false, true) => only += 1,
                (false, false) => {}
            }
        }
        diffs.sort_unstable();
        let mean = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / diffs.len().max(1) as f64 / 255.0;
        let p95 = f64::from(diffs.get(diffs.len() * 95 / 100).copied().unwrap_or(255)) / 255.0;
        let max = f64::from(diffs.last().copied().unwrap_or(255)) / 255.0;
        eprintln!(
            "{name}: {both} pixels in both ({only} in one only); difference mean {:.2} %, p95 {:.2} %, max {:.2} %",
            100.0 * mean,
            100.0 * p95,
            100.0 * max
        );
        assert!(both > 2000, "{name}: both draw the sphere ({both} pixels)");
        assert!(only * 50 <= both, "{name}: silhouettes differ at {only} pixels");
        assert!(mean <= 0.02, "{name}: mean difference {:.2} % of full scale", 100.0 * mean);
        assert!(p95 <= 0.05, "{name}: 95th percentile difference {:.2} % of full scale", 100.0 * p95);
    }
}
