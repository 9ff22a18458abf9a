//! The scene with bevy_open_vat 0.20.0: one entity per character (`Mesh3d` of the exported mesh, a
//! `StandardMaterial` the plugin turns into its `VatStandardMaterial`, a `VatAnimator` playing the
//! `walk` clip from a per-character point of it), as its README documents.
//!
//! The files are those `vat export-openvat --format exr16 --normals packed` writes from the
//! `humanoid.vat` the `vat_bevy` binary draws: `<N>-remap_info.json` (loaded by the plugin's own
//! loader through the asset server, with its clips as labelled sub-assets), `<N>_vat.exr` (packed
//! normals in the lower half, as the plugin's shader reads them) and `<N>.glb` (LOD 0 of the .vat,
//! `TEXCOORD_1` = each vertex's texel). The EXR and the glb are decoded here (the `exr` and `gltf`
//! crates) into the `Image` (`Rgba32Float`, both worlds' usage, as Bevy's EXR loader makes it; the
//! plugin then compacts it to `Rgba16Unorm`) and the `Mesh` (positions, normals, UV 0 when
//! present, UV 1, u32 indices: what Bevy's glTF loader makes of it), so that Bevy is built without
//! its `exr` and `bevy_gltf` features, exactly as for vat-bevy.

use std::path::Path;
use std::time::Duration;

use bevy::asset::RenderAssetUsages;
use bevy::camera::visibility::VisibleEntities;
use bevy::light::{NotShadowCaster, NotShadowReceiver};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use bevy_open_vat::data::VatMaterialReady;
use bevy_open_vat::prelude::*;
use open_vat_compare as bench;

fn main() {
    let args = bench::parse_args("open_vat", false);
    let files = Files::find(&args.assets);
    let (mesh, triangles) = load_glb(&files.glb);
    let image = load_exr(&files.exr);
    eprintln!(
        "open_vat: {} ({} x {} texels), {} ({} vertices, {triangles} triangles)",
        files.exr.display(),
        image.width(),
        image.height(),
        files.glb.display(),
        mesh.count_vertices()
    );

    let mut app = bench::base_app(&args.assets);
    app.add_plugins(OpenVatPlugin);
    bench::finish(&mut app);
    let adapter = bench::adapter_name(&app);
    let target = bench::spawn_scene(&mut app, &args);

    let world = app.world_mut();
    let server = world.resource::<AssetServer>().clone();
    let remap: Handle<RemapInfo> = server.load(files.json.clone());
    let clip: Handle<VatAnimationClip> = server.load(format!("{}#{}", files.json, bench::CLIP));
    let texture = world.resource_mut::<Assets<Image>>().add(image);
    let mesh = world.resource_mut::<Assets<Mesh>>().add(mesh);
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial { base_color: Color::srgb(0.8, 0.7, 0.6), ..default() });
    // The clip's duration is needed for the phases: wait for the sidecar to load.
    let n = args.instances;
    let (no_cast, no_receive, reverse) = (args.no_cast, args.no_receive, args.reverse_order);
    let mut spawned = false;
    let frames = bench::measure(&mut app, &args, Duration::from_secs(600), |app| {
        if !spawned {
            let clips = app.world().resource::<Assets<VatAnimationClip>>();
            let Some(duration) = clips.get(&clip).and_then(VatAnimationClip::duration) else {
                return false;
            };
            let world = app.world_mut();
            let order: Vec<u32> = if reverse { (0..n).rev().collect() } else { (0..n).collect() };
            let batch: Vec<_> = order
                .into_iter()
                .map(|i| {
                    let (position, heading, phase) = bench::character(i, n);
                    (
                        Mesh3d(mesh.clone()),
                        MeshMaterial3d(material.clone()),
                        Transform::from_translation(position).with_rotation(Quat::from_rotation_y(heading)),
                        VatAnimator::new(remap.clone(), texture.clone(), clip.clone())
                            .with_elapsed(phase * duration),
                    )
                })
                .collect();
            let ids: Vec<Entity> = world.spawn_batch(batch).collect();
            for id in ids {
                let mut e = world.entity_mut(id);
                if no_cast {
                    e.insert(NotShadowCaster);
                }
                if no_receive {
                    e.insert(NotShadowReceiver);
                }
            }
            spawned = true;
            return false;
        }
        // Ready when every character has the VAT material (and so its instance slot).
        let world = app.world_mut();
        let ready = world.query_filtered::<(), With<VatMaterialReady>>().iter(world).count();
        ready == n as usize
    });

    // How many characters the camera's frustum culling kept in the last frame.
    let world = app.world_mut();
    let characters: std::collections::HashSet<Entity> =
        world.query_filtered::<Entity, With<VatAnimator>>().iter(world).collect();
    let visible =
        world.query_filtered::<&VisibleEntities, With<Camera3d>>().iter(world).next().map_or(0, |v| {
            v.get(std::any::TypeId::of::<Mesh3d>()).iter().filter(|e| characters.contains(e)).count()
        });
    // Characters in each cascade after Bevy's per-entity culling of the cascade's frustum.
    let per_cascade: Vec<usize> = world
        .query::<&bevy::camera::visibility::CascadesVisibleEntities>()
        .iter(world)
        .flat_map(|c| {
            c.entities
                .values()
                .flatten()
                .map(|v| v.entities.iter().filter(|e| characters.contains(e)).count())
        })
        .collect();
    let format = app
        .world()
        .resource::<Assets<Image>>()
        .get(&texture)
        .map(|i| format!("{:?}", i.texture_descriptor.format))
        .unwrap_or_default();
    eprintln!(
        "open_vat: adapter {adapter}; VAT texture {format}; {visible} of {n} characters in view; \
         characters per shadow cascade {per_cascade:?}"
    );
    let casters = per_cascade.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    bench::report(
        "open_vat",
        &args,
        &frames,
        &format!(
            "visible={visible} triangles_per_character={triangles} main_triangles={} cascade_casters={casters}",
            visible * triangles
        ),
    );
    bench::save_screenshot(&mut app, &args, &target);
}

/// The exported files in the assets folder.
struct Files {
    /// The sidecar's asset path (relative to the asset root, `--assets`).
    json: String,
    exr: std::path::PathBuf,
    glb: std::path::PathBuf,
}

impl Files {
    /// `<assets>/openvat/<N>-remap_info.json` and its neighbours.
    fn find(assets: &Path) -> Self {
        let dir = assets.join("openvat");
        let dir = dir.as_path();
        let sidecar = std::fs::read_dir(dir)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|name| name.ends_with("-remap_info.json"))
            .unwrap_or_else(|| {
                fail(&format!("{}: no *-remap_info.json (run vat export-openvat)", dir.display()))
            });
        let stem = sidecar.trim_end_matches("-remap_info.json");
        Self {
            exr: dir.join(format!("{stem}_vat.exr")),
            glb: dir.join(format!("{stem}.glb")),
            json: format!("openvat/{sidecar}"),
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("open_vat: {message}");
    std::process::exit(1)
}

/// The glb's one primitive as a Bevy mesh, and its triangle count.
fn load_glb(path: &Path) -> (Mesh, usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    let gltf = gltf::Gltf::from_slice(&bytes).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    let blob = gltf.blob.as_deref();
    let primitive = gltf
        .meshes()
        .flat_map(|m| m.primitives().collect::<Vec<_>>())
        .next()
        .unwrap_or_else(|| fail(&format!("{}: no mesh", path.display())));
    let reader = primitive.reader(|buffer| match buffer.source() {
        gltf::buffer::Source::Bin => blob,
        gltf::buffer::Source::Uri(_) => None,
    });
    let positions: Vec<[f32; 3]> =
        reader.read_positions().unwrap_or_else(|| fail("the glb has no POSITION")).collect();
    let normals: Vec<[f32; 3]> =
        reader.read_normals().unwrap_or_else(|| fail("the glb has no NORMAL")).collect();
    let lookup: Vec<[f32; 2]> =
        reader.read_tex_coords(1).unwrap_or_else(|| fail("the glb has no TEXCOORD_1")).into_f32().collect();
    let indices: Vec<u32> =
        reader.read_indices().unwrap_or_else(|| fail("the glb has no indices")).into_u32().collect();
    let triangles = indices.len() / 3;
    let mut mesh = Mesh::new(PrimitiveTopology::TriangleList, RenderAssetUsages::default());
    mesh.insert_attribute(Mesh::ATTRIBUTE_POSITION, positions);
    mesh.insert_attribute(Mesh::ATTRIBUTE_NORMAL, normals);
    if let Some(uv) = reader.read_tex_coords(0) {
        mesh.insert_attribute(Mesh::ATTRIBUTE_UV_0, uv.into_f32().collect::<Vec<_>>());
    }
    mesh.insert_attribute(Mesh::ATTRIBUTE_UV_1, lookup);
    mesh.insert_indices(Indices::U32(indices));
    (mesh, triangles)
}

/// The EXR's RGBA (A = 1 where absent) as an `Rgba32Float` image.
fn load_exr(path: &Path) -> Image {
    use exr::prelude::{ReadChannels, ReadLayers, ReadSpecificChannel, read};
    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .specific_channels()
        .required("R")
        .required("G")
        .required("B")
        .optional("A", 1.0f32)
        .collect_pixels(
            |size, _| (size.width(), vec![[0.0f32; 4]; size.area()]),
            |(width, texels): &mut (usize, Vec<[f32; 4]>), pos, (r, g, b, a): (f32, f32, f32, f32)| {
                texels[pos.y() * *width + pos.x()] = [r, g, b, a];
            },
        )
        .first_valid_layer()
        .all_attributes()
        .non_parallel()
        .from_file(path)
        .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    let (width, texels) = image.layer_data.channel_data.pixels;
    let height = texels.len() / width;
    let data: Vec<u8> = texels.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    Image::new(
        Extent3d { width: width as u32, height: height as u32, depth_or_array_layers: 1 },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba32Float,
        RenderAssetUsages::default(),
    )
}
