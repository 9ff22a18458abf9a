//! Valid files of the shapes real exporters write, each built here, that must bake whole: a mesh
//! without normals that has vertex colours (flat shading unwelds every attribute together), many
//! primitives sharing one set of vertex attributes (their vertices are shared, not copied per
//! primitive) and a texture without an image source (a note; its material keeps its factors).

use glam::{Vec2, Vec3, Vec4};
use serde_json::json;
use vat_core::container::{Asset, StreamKind};

use super::fixture::{Fixture, UNSIGNED_BYTE};
use super::import_slice;
use crate::prepare::{BakeOptions, prepare};
use crate::rig::Rig;
use crate::verify::verify_prepared;

fn import(f: &Fixture) -> Rig {
    import_slice(&f.gltf(), None, "fixture.gltf").unwrap()
}

/// Bakes `rig` with default options, checks that it verifies, and parses the `.vat` bytes.
fn bake_and_verify(rig: &Rig) -> (crate::prepare::PreparedBake, Vec<u8>) {
    let bake = prepare(rig, &BakeOptions::default()).unwrap();
    let report = verify_prepared(&bake, rig).unwrap();
    assert!(report.passed, "{:?}", report.failures);
    let bytes = bake.to_vat_bytes().unwrap();
    (bake, bytes)
}

/// A welded 3 x 3 grid (9 vertices, 8 triangles) in the XY plane, 0.1 m apart.
fn grid_positions() -> Vec<[f32; 3]> {
    (0..9).map(|v| [(v % 3) as f32 * 0.1, (v / 3) as f32 * 0.1, 0.0]).collect()
}

/// The grid's triangles, counter-clockwise seen from +Z.
fn grid_indices() -> Vec<u16> {
    let mut indices = Vec::new();
    for row in 0..2u16 {
        for col in 0..2u16 {
            let a = row * 3 + col;
            indices.extend([a, a + 1, a + 3, a + 3, a + 1, a + 4]);
        }
    }
    indices
}

/// Three-exporter shape: positions, texture coordinates and float RGBA colours, welded, no
/// normals; a second primitive (same mesh, its own accessors) with unorm8 RGB colours.
#[test]
fn a_mesh_without_normals_keeps_its_colours_and_uvs_per_corner_and_bakes() {
    let mut f = Fixture::new();
    let positions = grid_positions();
    let indices = grid_indices();
    let colors: Vec<[f32; 4]> = (0..9)
        .map(|v| [v as f32 / 8.0, 1.0 - v as f32 / 8.0, 0.25, if v % 2 == 0 { 1.0 } else { 0.5 }])
        .collect();
    let uvs: Vec<[f32; 2]> = positions.iter().map(|p| [p[0] * 5.0, 1.0 - p[1] * 5.0]).collect();
    let position = f.positions(&positions);
    let index = f.u16s(&indices, "SCALAR");
    let color = f.f32s(colors.as_flattened(), "VEC4");
    let uv = f.f32s(uvs.as_flattened(), "VEC2");
    // unorm8 RGB colours on a second primitive: k * 30 per channel.
    let bytes: Vec<u8> = (0..9u8).flat_map(|v| [v * 30, 255 - v * 30, v * 10]).collect();
    let byte_color = f.u8s(&bytes, "VEC3");
    f.json["accessors"][byte_color]["normalized"] = json!(true);
    let lifted: Vec<[f32; 3]> = positions.iter().map(|p| [p[0], p[1], 0.5]).collect();
    let lifted = f.positions(&lifted);
    let mesh = f.push(
        "meshes",
        json!({ "name": "Painted", "primitives": [
            { "attributes": { "POSITION": position, "COLOR_0": color, "TEXCOORD_0": uv }, "indices": index },
            { "attributes": { "POSITION": lifted, "COLOR_0": byte_color }, "indices": index },
        ]}),
    );
    f.node(json!({ "name": "Painted", "mesh": mesh }), true);
    assert_eq!(f.json["accessors"][byte_color]["componentType"], json!(UNSIGNED_BYTE));

    let rig = import(&f);
    assert_eq!(rig.meshes.len(), 2, "two attribute sets: two meshes");
    for (m, mesh) in rig.meshes.iter().enumerate() {
        // Unwelded: one vertex per triangle corner, every attribute with it.
        let n = mesh.vertex_count();
        assert_eq!(n, indices.len(), "mesh {m}");
        assert_eq!(mesh.normals.len(), n, "mesh {m}");
        assert_eq!(mesh.material_ids.len(), n, "mesh {m}");
        let colors_out = mesh.colors.as_ref().unwrap();
        assert_eq!(colors_out.len(), n, "mesh {m}: one colour per vertex");
        assert_eq!(mesh.indices, (0..n as u32).collect::<Vec<_>>());
        for (corner, &source) in indices.iter().enumerate() {
            let v = usize::from(source);
            let z = if m == 0 { 0.0 } else { 0.5 };
            assert_eq!(mesh.positions[corner], Vec3::new(positions[v][0], positions[v][1], z));
            assert_eq!(mesh.normals[corner], Vec3::Z, "flat normal of corner {corner}");
            let expected = if m == 0 {
                Vec4::from(colors[v])
            } else {
                let [r, g, b] = [bytes[3 * v], bytes[3 * v + 1], bytes[3 * v + 2]];
                Vec4::new(f32::from(r) / 255.0, f32::from(g) / 255.0, f32::from(b) / 255.0, 1.0)
            };
            assert!(
                (colors_out[corner] - expected).abs().max_element() <= 1e-6,
                "mesh {m} corner {corner}: colour {} is not source vertex {v}'s {expected}",
                colors_out[corner]
            );
        }
    }
    let uvs_out = rig.meshes[0].uvs.as_ref().unwrap();
    for (corner, &source) in indices.iter().enumerate() {
        assert_eq!(uvs_out[corner], Vec2::from(uvs[usize::from(source)]), "corner {corner}");
    }

    // The bake carries each vertex's colour (baked vertex i is rig vertex vertex_order()[i]).
    let (bake, bytes) = bake_and_verify(&rig);
    let asset = Asset::parse(&bytes).unwrap();
    let (_, baked) = asset.stream(StreamKind::Color0).unwrap();
    let all: Vec<Vec4> = rig.meshes.iter().flat_map(|m| m.colors.clone().unwrap()).collect();
    assert_eq!(bake.vertex_order().len(), 2 * indices.len());
    for (i, &v) in bake.vertex_order().iter().enumerate() {
        let packed = vat_core::backend::gpu::pack_unorm8x4(all[v as usize].to_array()).to_le_bytes();
        assert_eq!(&baked[4 * i..4 * i + 4], &packed, "baked vertex {i} (rig vertex {v})");
    }
}

/// Primitives `0..PRIMITIVES` of one mesh over one attribute set: a strip of `PRIMITIVES` quads,
/// primitive `k` holding quad `k` and drawn with material `k / 10` (runs of ten share a material),
/// plus `UNUSED` vertices no triangle uses.
const PRIMITIVES: usize = 73;
const UNUSED: usize = 10;

fn shared_attribute_fixture() -> Fixture {
    let mut f = Fixture::new();
    let columns = PRIMITIVES + 1;
    let mut positions: Vec<[f32; 3]> =
        (0..2 * columns).map(|v| [(v / 2) as f32 * 0.05, (v % 2) as f32 * 0.1, 0.0]).collect();
    positions.extend((0..UNUSED).map(|k| [k as f32, 5.0, 5.0]));
    let count = positions.len();
    let position = f.positions(&positions);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(count), "VEC3");
    let uv = f.f32s(&positions.iter().flat_map(|p| [p[0], p[1]]).collect::<Vec<f32>>(), "VEC2");
    for m in 0..PRIMITIVES.div_ceil(10) {
        f.push(
            "materials",
            json!({ "name": format!("m{m}"), "pbrMetallicRoughness": { "metallicFactor": 0.0 } }),
        );
    }
    let mut primitives = Vec::new();
    for k in 0..PRIMITIVES as u16 {
        // Quad k: vertices 2k, 2k + 1 (left column) and 2k + 2, 2k + 3 (right column).
        let (a, b, c, d) = (2 * k, 2 * k + 2, 2 * k + 1, 2 * k + 3);
        let index = f.u16s(&[a, b, c, c, b, d], "SCALAR");
        primitives.push(json!({
            "attributes": { "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv },
            "indices": index,
            "material": usize::from(k) / 10,
        }));
    }
    let mesh = f.push("meshes", json!({ "name": "Kit", "primitives": primitives }));
    f.node(json!({ "name": "Kit", "mesh": mesh }), true);
    f
}

#[test]
fn primitives_sharing_one_attribute_set_share_their_vertices() {
    let f = shared_attribute_fixture();
    let rig = import(&f);
    assert_eq!(rig.meshes.len(), 1, "one attribute set: one mesh, not {PRIMITIVES}");
    let mesh = &rig.meshes[0];
    // Each run of ten quads with one material is a strip of 11 columns of 2 vertices (the last run,
    // 3 quads, 4 columns); runs of different materials split the column between them; the unused
    // vertices are dropped. Expanded per primitive it would be 73 x 158 vertices.
    let runs: Vec<usize> = (0..PRIMITIVES.div_ceil(10)).map(|r| (PRIMITIVES - 10 * r).min(10)).collect();
    let expected: usize = runs.iter().map(|quads| 2 * (quads + 1)).sum();
    assert_eq!(expected, 162);
    assert_eq!(mesh.vertex_count(), expected);
    assert_eq!(mesh.indices.len(), 6 * PRIMITIVES, "every primitive keeps its triangles");
    for attribute in [mesh.normals.len(), mesh.material_ids.len(), mesh.uvs.as_ref().unwrap().len()] {
        assert_eq!(attribute, expected);
    }
    // Primitive k's triangles, in order, on its own vertices, with its own material.
    for k in 0..PRIMITIVES {
        let source = [2 * k, 2 * k + 2, 2 * k + 1, 2 * k + 1, 2 * k + 2, 2 * k + 3];
        for (c, &s) in source.iter().enumerate() {
            let v = mesh.indices[6 * k + c] as usize;
            let want = Vec3::new((s / 2) as f32 * 0.05, (s % 2) as f32 * 0.1, 0.0);
            assert_eq!(mesh.positions[v], want, "primitive {k} corner {c}");
            assert_eq!(mesh.uvs.as_ref().unwrap()[v], want.truncate(), "primitive {k} corner {c}");
            assert_eq!(usize::from(mesh.material_ids[v]), k / 10, "primitive {k} corner {c}");
        }
    }
    assert!(
        rig.notes.iter().any(|n| n.contains("mesh \"Kit\": primitives 0-72 share")
            && n.contains("share one set of vertex attributes")
            && n.contains("162 vertices")),
        "{:?}",
        rig.notes
    );
    let (bake, _) = bake_and_verify(&rig);
    assert_eq!(bake.stats.vertex_count as usize, expected);
}

#[test]
fn a_texture_without_an_image_source_is_a_note_and_its_material_keeps_its_factors() {
    let mut f = Fixture::new();
    let positions = grid_positions();
    let position = f.positions(&positions);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(9), "VEC3");
    let uv = f.f32s(&positions.iter().flat_map(|p| [p[0], p[1]]).collect::<Vec<f32>>(), "VEC2");
    let index = f.u16s(&grid_indices(), "SCALAR");
    // Blockbench's shape: a texture with a sampler and no `source`, and no images at all.
    f.push("samplers", json!({ "magFilter": 9729, "minFilter": 9729 }));
    f.push("textures", json!({ "sampler": 0 }));
    f.push(
        "materials",
        json!({ "name": "blocky", "pbrMetallicRoughness": {
            "baseColorFactor": [0.25, 0.5, 0.75, 1.0],
            "metallicFactor": 0.125,
            "roughnessFactor": 0.625,
            "baseColorTexture": { "index": 0 },
        }}),
    );
    let mesh = f.push(
        "meshes",
        json!({ "name": "Block", "primitives": [{
            "attributes": { "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv },
            "indices": index, "material": 0,
        }]}),
    );
    f.node(json!({ "name": "Block", "mesh": mesh }), true);

    let rig = import(&f);
    let notes = rig.notes.join("\n");
    assert!(
        notes.contains("material \"blocky\": base colour texture left out: texture 0 has no image source"),
        "{notes}"
    );
    assert_eq!(rig.notes.len(), 1, "one line: {notes}");
    let materials = rig.materials.as_ref().unwrap();
    let blocky = &materials.materials[0];
    assert_eq!(blocky.base_color_factor, [0.25, 0.5, 0.75, 1.0]);
    assert_eq!((blocky.metallic_factor, blocky.roughness_factor), (0.125, 0.625));
    assert!(blocky.base_color_texture.is_none());
    assert!(materials.color_images.is_empty());
    let (bake, _) = bake_and_verify(&rig);
    assert_eq!(bake.stats.vertex_count, 9);

    // The same texture with a `source` past the images is still refused (a broken reference).
    f.json["textures"][0]["source"] = json!(3);
    let error = import_slice(&f.gltf(), None, "fixture.gltf").unwrap_err().to_string();
    assert!(error.contains("textures[0].source"), "{error}");
}

/// The same note about many primitives is one line with the count, not one line each.
#[test]
fn a_note_repeated_per_primitive_is_said_once_with_the_count() {
    let mut f = Fixture::new();
    let mut primitives = Vec::new();
    for k in 0..5 {
        // Each primitive its own positions (five attribute sets), each with colours above 1.
        let positions: Vec<[f32; 3]> = grid_positions().iter().map(|p| [p[0], p[1], k as f32]).collect();
        let position = f.positions(&positions);
        let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(9), "VEC3");
        let color = f.f32s(&[2.0, 0.5, 0.5, 1.0].repeat(9), "VEC4");
        let index = f.u16s(&grid_indices(), "SCALAR");
        primitives.push(json!({
            "attributes": { "POSITION": position, "NORMAL": normal, "COLOR_0": color },
            "indices": index,
        }));
    }
    let mesh = f.push("meshes", json!({ "name": "Tiles", "primitives": primitives }));
    f.node(json!({ "name": "Tiles", "mesh": mesh }), true);
    let rig = import(&f);
    assert_eq!(rig.meshes.len(), 5);
    assert_eq!(
        rig.notes,
        vec![
            "COLOR_0 values outside 0..=1 are clamped (vertex colours are stored as 8-bit unorm) (for 5 \
             primitives: mesh \"Tiles\" primitive 0 ... mesh \"Tiles\" primitive 4)"
                .to_owned()
        ]
    );
}
