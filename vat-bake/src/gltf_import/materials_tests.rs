//! Materials and textures from glTF: the textured humanoid fixture, and everything the import
//! leaves out or refuses, each said in a note or a typed error.

use glam::Vec4;
use serde_json::{Value, json};
use vat_core::container::{AlphaMode, Asset, StreamKind, TextureColorSpace, TextureWrap};

use super::import_slice;
use crate::BakeError;
use crate::prepare::{BakeOptions, prepare};
use crate::testdata::{glb, split_glb, textured_humanoid_glb};

/// The fixture with its JSON edited by `edit`.
fn edited(edit: impl FnOnce(&mut Value, &mut Vec<u8>)) -> Vec<u8> {
    let (mut json, mut bin) = split_glb(&textured_humanoid_glb());
    edit(&mut json, &mut bin);
    json["buffers"] = json!([{ "byteLength": bin.len() }]);
    glb(&serde_json::to_vec(&json).unwrap(), &bin)
}

#[test]
fn a_textured_character_bakes_its_materials_and_textures() {
    let rig = import_slice(&textured_humanoid_glb(), None, "textured").unwrap();
    assert!(rig.notes.is_empty(), "{:?}", rig.notes);
    let materials = rig.materials.as_ref().unwrap();
    assert_eq!(materials.materials.len(), 2);
    assert_eq!((materials.color_images.len(), materials.data_images.len()), (1, 2));
    let body = &materials.materials[0];
    assert_eq!(body.name, "body");
    assert_eq!(body.base_color_texture.as_ref().unwrap().layer, 0);
    let binding = body.normal_texture.as_ref().unwrap();
    assert_eq!((binding.wrap_u, binding.wrap_v), (TextureWrap::Repeat, TextureWrap::ClampToEdge));
    // Data layers in the order the import meets them: metallic-roughness, then the normal map.
    assert_eq!(body.metallic_roughness_texture.as_ref().unwrap().layer, 0);
    assert_eq!(binding.layer, 1);
    assert!(materials.materials[1].double_sided);
    // The decoded base colour is the JPEG of the generated image: within JPEG's error of it.
    let (base, _, _) = crate::testdata::textured_humanoid_images();
    let decoded = &materials.color_images[0];
    assert_eq!((decoded.width, decoded.height), base.dimensions());
    let mean_error =
        decoded.rgba.iter().zip(base.as_raw()).map(|(&a, &b)| f64::from(a.abs_diff(b))).sum::<f64>()
            / decoded.rgba.len() as f64;
    assert!(mean_error < 8.0, "mean JPEG error {mean_error}");

    let bake = prepare(&rig, &BakeOptions::default()).unwrap();
    let bytes = bake.to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    assert_eq!(m.materials.len(), 2);
    let textures = m.material_textures.as_ref().unwrap();
    let color = textures.color.as_ref().unwrap();
    assert_eq!((color.width, color.height, color.mip_levels, color.layers.len()), (128, 128, 8, 1));
    assert_eq!(color.color_space, TextureColorSpace::Srgb);
    assert_eq!(textures.data.as_ref().unwrap().layers.len(), 2);
    // Level 0 of the colour array is the decoded image itself (no resampling at 128 x 128).
    assert_eq!(&asset.blob(color.texels)[..128 * 128 * 4], decoded.rgba.as_slice());
    // Every body vertex has material 0; the cap (an attachment) material 1.
    let (_, ids) = asset.stream(StreamKind::MaterialId).unwrap();
    assert!(ids.iter().all(|&id| id == 0));
    assert!(m.attachments.iter().all(|a| asset.blob(a.material_ids).iter().all(|&id| id == 1)));
    assert!(crate::verify::verify_prepared(&bake, &rig).unwrap().passed);
}

#[test]
fn what_the_import_leaves_out_is_said_in_one_note_each() {
    let bytes = edited(|json, _| {
        let body = &mut json["materials"][0];
        body["occlusionTexture"] = json!({ "index": 1 });
        body["emissiveTexture"] = json!({ "index": 0 });
        body["pbrMetallicRoughness"]["metallicRoughnessTexture"] = json!({ "index": 2, "texCoord": 1 });
        body["alphaMode"] = json!("BLEND");
        json["images"][1] = json!({ "uri": "missing_normal.png" });
        json["extensionsUsed"] = json!(["KHR_texture_transform", "KHR_materials_clearcoat"]);
        json["samplers"][0]["magFilter"] = json!(9728);
    });
    let dir = std::env::temp_dir().join(format!("vat-materials-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("textured.glb");
    std::fs::write(&file, &bytes).unwrap();
    let rig = super::import_file(&file, &super::ImportOptions::default()).unwrap();
    let notes = rig.notes.join("\n");
    for expected in [
        "KHR_materials_clearcoat left out",
        "alpha blending is drawn as a mask",
        "metallic-roughness texture left out: it uses TEXCOORD_1",
        "normal texture left out: \"missing_normal.png\": file not found",
        "occlusion texture left out",
        "emissive texture left out",
        "nearest filtering",
    ] {
        assert!(notes.contains(expected), "no note {expected:?} in:\n{notes}");
    }
    let body = &rig.materials.as_ref().unwrap().materials[0];
    assert!(body.normal_texture.is_none() && body.metallic_roughness_texture.is_none());
    assert_eq!(body.alpha_mode, AlphaMode::Blend);
    // The base colour texture still bakes.
    assert!(body.base_color_texture.is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_images_are_notes_and_hostile_references_are_errors() {
    // An image whose bytes are not PNG or JPEG: a note, the material keeps its factors.
    let bytes = edited(|json, bin| {
        let view = json["images"][0]["bufferView"].as_u64().unwrap() as usize;
        let offset = json["bufferViews"][view]["byteOffset"].as_u64().unwrap() as usize;
        bin[offset..offset + 16].copy_from_slice(b"not an image at ");
    });
    let rig = import_slice(&bytes, None, "corrupt").unwrap();
    assert!(
        rig.notes.iter().any(|n| n.contains("base colour texture left out") && n.contains("cannot decode")),
        "{:?}",
        rig.notes
    );
    assert!(rig.materials.as_ref().unwrap().materials[0].base_color_texture.is_none());
    // A truncated PNG (its first 40 bytes): a note, never a panic.
    let bytes = edited(|json, _| {
        let view = json["images"][1]["bufferView"].as_u64().unwrap() as usize;
        json["bufferViews"][view]["byteLength"] = json!(40);
    });
    let rig = import_slice(&bytes, None, "truncated").unwrap();
    assert!(rig.notes.iter().any(|n| n.contains("normal texture left out")), "{:?}", rig.notes);
    // A uri escaping the folder is refused outright.
    let bytes = edited(|json, _| json["images"][1] = json!({ "uri": "../../etc/passwd" }));
    let dir = std::env::temp_dir().join(format!("vat-materials-escape-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inner")).unwrap();
    std::fs::write(dir.join("secret.png"), b"x").unwrap();
    let bytes_escape = edited(|json, _| json["images"][1] = json!({ "uri": "../secret.png" }));
    std::fs::write(dir.join("inner/textured.glb"), &bytes_escape).unwrap();
    let err =
        super::import_file(&dir.join("inner/textured.glb"), &super::ImportOptions::default()).unwrap_err();
    assert!(matches!(err, BakeError::Gltf { .. }), "{err}");
    assert!(err.to_string().contains("image 1"), "{err}");
    drop(bytes);
    std::fs::remove_dir_all(&dir).unwrap();
    // More than 256 materials, of which the primitives use two: the others are left out.
    let bytes = edited(|json, _| {
        let mut many: Vec<Value> =
            (0..300).map(|k| json!({ "name": format!("m{k}"), "metallicFactor": 0.5 })).collect();
        many[0] = json["materials"][0].clone();
        many[1] = json["materials"][1].clone();
        json["materials"] = json!(many);
    });
    let rig = import_slice(&bytes, None, "many").expect("it imports");
    assert_eq!(rig.materials.as_ref().expect("it has materials").materials.len(), 2);
    assert!(rig.notes.iter().any(|n| n.contains("materials: 298 of 300 left out")), "{:?}", rig.notes);
}

/// A document of `count` one-triangle primitives over one vertex buffer (three vertices each,
/// white `COLOR_0` of green 0.5, normals +Z), primitive `k` drawn with material `material(k)`
/// (`None`: no material), and the materials `materials`.
fn many_primitives(
    count: usize,
    material: impl Fn(usize) -> Option<usize>,
    materials: Vec<Value>,
) -> Vec<u8> {
    let mut f = super::fixture::Fixture::new();
    let positions: Vec<[f32; 3]> =
        (0..3 * count).map(|v| [(v / 3) as f32, [0.0, 1.0, 0.0][v % 3], [0.0, 0.0, 1.0][v % 3]]).collect();
    let position = f.positions(&positions);
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(3 * count), "VEC3");
    let color = f.f32s(&[1.0, 0.5, 1.0, 1.0].repeat(3 * count), "VEC4");
    let primitives: Vec<Value> = (0..count)
        .map(|k| {
            // Primitive 1 shares vertex 0 with primitive 0.
            let first = if k == 1 { 0 } else { 3 * k as u16 };
            let indices = f.u16s(&[first, 3 * k as u16 + 1, 3 * k as u16 + 2], "SCALAR");
            let mut p = json!({
                "attributes": { "POSITION": position, "NORMAL": normal, "COLOR_0": color },
                "indices": indices,
            });
            if let Some(m) = material(k) {
                p["material"] = json!(m);
            }
            p
        })
        .collect();
    let mesh = f.push("meshes", json!({ "name": "Palette", "primitives": primitives }));
    f.node(json!({ "name": "Palette", "mesh": mesh }), true);
    f.json["materials"] = json!(materials);
    f.gltf()
}

/// Material `k` of the palette: one of 300 distinct base colours, half of them multiples of 1/255.
fn palette_color(k: usize) -> [f32; 4] {
    let blue = if k.is_multiple_of(2) { 0.5 } else { 0.25 };
    [(k % 256) as f32 / 255.0, (k / 256) as f32 / 255.0, blue, 1.0]
}

#[test]
fn a_document_over_256_materials_keeps_every_colour_exactly() {
    // 300 materials differing only in base colour (a voxel export's palette), one more identical to
    // material 5 but for its name, 20 no primitive uses, one metallic with its own colour, and a
    // primitive without a material: 323 slots, 3 vat materials.
    let mut materials: Vec<Value> = (0..300)
        .map(|k| json!({ "name": format!("c{k}"), "pbrMetallicRoughness": { "baseColorFactor": palette_color(k), "metallicFactor": 0.0 } }))
        .collect();
    let mut twin = materials[5].clone();
    twin["name"] = json!("c5.001");
    materials.push(twin);
    materials.extend(
        (0..20)
            .map(|k| json!({ "name": format!("unused{k}"), "emissiveFactor": [0.0, 0.0, k as f32 / 20.0] })),
    );
    materials.push(
        json!({ "name": "metal", "pbrMetallicRoughness": { "baseColorFactor": [0.2, 0.3, 0.4, 1.0] } }),
    );
    let material = |k: usize| match k {
        0..=299 => Some(k),
        300 => Some(300),
        301 => Some(321),
        _ => None,
    };
    let bytes = many_primitives(303, material, materials);
    let rig = import_slice(&bytes, None, "palette").expect("it imports");
    let notes = rig.notes.join("\n");
    for expected in [
        "materials: 20 of 322 left out: no primitive draws with them",
        "materials: 1 identical to another but for their names merged into it (301 distinct)",
        "300 that differ only in base colour became 1 white material",
        "largest rounding of a factor 0.0020",
    ] {
        assert!(notes.contains(expected), "no note {expected:?} in:\n{notes}");
    }
    let list = &rig.materials.as_ref().expect("it has materials").materials;
    let names: Vec<&str> = list.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["c0 and 299 more (base colours in the vertex colours)", "metal", "glTF default"]);
    assert_eq!(list[0].base_color_factor, [1.0; 4]);
    assert_eq!(list[1].base_color_factor, [0.2, 0.3, 0.4, 1.0]);
    // One mesh (the primitives share their vertices); triangle k is primitive k's. Each vertex
    // carries its material's colour times COLOR_0, and vertex 0 (shared by primitives 0 and 1 of
    // different colours) became two (vertex 3, which no triangle uses, is dropped).
    assert_eq!(rig.meshes.len(), 1);
    let mesh = &rig.meshes[0];
    assert_eq!(mesh.vertex_count(), 3 * 303);
    assert_eq!(mesh.positions[mesh.indices[0] as usize], mesh.positions[mesh.indices[3] as usize]);
    assert_ne!(mesh.indices[0], mesh.indices[3]);
    let colors = mesh.colors.as_ref().expect("its colours hold the folded factors");
    for k in 0..303 {
        let (id, factor) = match k {
            0..=299 => (0, palette_color(k)),
            300 => (0, palette_color(5)),
            301 => (1, [1.0; 4]),
            _ => (2, [1.0; 4]),
        };
        let expected = Vec4::from(factor) * Vec4::new(1.0, 0.5, 1.0, 1.0);
        for &v in &mesh.indices[3 * k..3 * k + 3] {
            assert_eq!((mesh.material_ids[v as usize], colors[v as usize]), (id, expected), "primitive {k}");
        }
    }
    let bake = prepare(&rig, &BakeOptions::default()).expect("it bakes");
    let bytes = bake.to_vat_bytes().expect("its bytes");
    let asset = Asset::parse(&bytes).expect("the written file reads back");
    assert_eq!(asset.manifest().materials.len(), 3);
    assert!(asset.stream(StreamKind::Color0).is_some());
    assert!(crate::verify::verify_prepared(&bake, &rig).expect("verification runs").passed);
}

#[test]
fn a_document_over_256_materials_that_cannot_be_merged_is_refused_with_its_counts() {
    // Distinct metallic factors: nothing merges.
    let materials: Vec<Value> =
        (0..300).map(|k| json!({ "pbrMetallicRoughness": { "metallicFactor": k as f32 / 300.0 } })).collect();
    let err = import_slice(&many_primitives(300, Some, materials.clone()), None, "metals").unwrap_err();
    assert!(matches!(err, BakeError::Gltf { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("300 materials (300 used, 300 distinct, 300 after moving base colours to vertex colours); at most 256 fit"),
        "{message}"
    );
    // Material variants name materials by index: a document over the limit with them is not merged.
    let colors: Vec<Value> = (0..300)
        .map(|k| json!({ "pbrMetallicRoughness": { "baseColorFactor": palette_color(k) } }))
        .collect();
    let mut json: Value =
        serde_json::from_slice(&many_primitives(300, Some, colors)).expect("the fixture is JSON");
    json["extensionsUsed"] = json!(["KHR_materials_variants"]);
    let err = import_slice(&serde_json::to_vec(&json).expect("the edited JSON serialises"), None, "variants")
        .expect_err("variants past 256 materials are refused");
    assert!(err.to_string().contains("not merged: KHR_materials_variants"), "{err}");
}

#[test]
fn authored_material_ids_and_material_less_files_keep_the_palette() {
    // The plain export carries `_MATERIAL_ID`: no materials section, ids as authored.
    let plain = crate::export::export_glb(&crate::procgen::humanoid()).unwrap();
    let rig = import_slice(&plain, None, "plain").unwrap();
    assert!(rig.materials.is_none());
    // A primitive without a material gets the glTF default material after the document's own.
    let bytes = edited(|json, _| {
        let p = &mut json["meshes"][0]["primitives"][0];
        p.as_object_mut().unwrap().remove("material");
    });
    let rig = import_slice(&bytes, None, "default").unwrap();
    let materials = &rig.materials.as_ref().unwrap().materials;
    assert_eq!(materials.len(), 3);
    assert_eq!(materials[2].name, "glTF default");
    assert!(rig.meshes.iter().any(|m| m.material_ids.iter().all(|&id| id == 2)));
}

#[test]
fn material_variants_map_each_material_under_each_variant() {
    let rig =
        import_slice(&crate::testdata::textured_humanoid_with_variants_glb(), None, "variants").unwrap();
    let materials = rig.materials.as_ref().unwrap();
    let variants: Vec<(&str, &[u16])> =
        materials.variants.iter().map(|v| (v.name.as_str(), v.materials.as_slice())).collect();
    assert_eq!(variants, [("red", &[1u16, 1, 2][..]), ("blue", &[2, 1, 2][..])]);
    // The mapping to a material the file does not have is said.
    assert!(rig.notes.iter().any(|n| n.contains("names no material of the file")), "{:?}", rig.notes);
    let bytes = prepare(&rig, &BakeOptions::default()).unwrap().to_vat_bytes().unwrap();
    assert_eq!(Asset::parse(&bytes).unwrap().manifest().material_variants, materials.variants);
}

#[test]
fn an_image_without_its_mime_type_or_source_never_panics() {
    // A bufferView image without `mimeType` (invalid glTF; the gltf crate unwraps it): the format is
    // read from the bytes. The fuzzer found this one.
    let bytes = edited(|json, _| {
        json["images"][0].as_object_mut().unwrap().remove("mimeType");
    });
    let rig = import_slice(&bytes, None, "no-mime").unwrap();
    assert!(rig.materials.as_ref().unwrap().materials[0].base_color_texture.is_some(), "{:?}", rig.notes);
    // Neither a bufferView nor a uri: a note.
    let bytes = edited(|json, _| json["images"][0] = json!({ "name": "nowhere" }));
    let rig = import_slice(&bytes, None, "no-source").unwrap();
    assert!(rig.notes.iter().any(|n| n.contains("neither a bufferView nor a uri")), "{:?}", rig.notes);
}

#[test]
fn an_unknown_attribute_name_with_materials_never_panics() {
    // An attribute name that is neither a glTF semantic nor `_`-prefixed: validation lets it
    // through (it is ignored), and the gltf crate's `attributes()` would unwrap it.
    let bytes = edited(|json, _| {
        let p = &mut json["meshes"][0]["primitives"][0];
        let position = p["attributes"]["POSITION"].clone();
        p["attributes"]["NOT_A_SEMANTIC"] = position;
    });
    let rig = import_slice(&bytes, None, "unknown-attribute").unwrap();
    assert!(rig.materials.is_some());
}

#[test]
fn more_than_256_images_of_one_kind_are_refused_naming_them() {
    // 129 materials, each with its own normal and metallic-roughness images: 258 data layers, two
    // more than a texture array holds (the base colours, 129, fit).
    let png = |k: usize, c: u8| {
        let image = image::RgbaImage::from_pixel(1, 1, image::Rgba([k as u8, (k >> 8) as u8, c, 255]));
        let mut bytes = std::io::Cursor::new(Vec::new());
        image.write_to(&mut bytes, image::ImageFormat::Png).expect("a PNG encodes");
        use base64::Engine as _;
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes.into_inner())
        )
    };
    let mut json: Value =
        serde_json::from_slice(&many_primitives(129, Some, Vec::new())).expect("the fixture is JSON");
    let (mut images, mut textures, mut materials) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..129 {
        for c in [0u8, 1, 2] {
            images.push(json!({ "uri": png(k, c) }));
            textures.push(json!({ "source": images.len() - 1 }));
        }
        let t = 3 * k;
        materials.push(json!({
            "pbrMetallicRoughness": { "baseColorTexture": { "index": t }, "metallicRoughnessTexture": { "index": t + 2 } },
            "normalTexture": { "index": t + 1 },
        }));
    }
    json["images"] = json!(images);
    json["textures"] = json!(textures);
    json["materials"] = json!(materials);
    let err = import_slice(&serde_json::to_vec(&json).expect("the edited JSON serialises"), None, "layers")
        .expect_err("258 data images are refused");
    assert!(matches!(err, BakeError::Gltf { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("258 distinct normal and metallic-roughness images; a .vat holds at most 256"),
        "{err}"
    );
}
