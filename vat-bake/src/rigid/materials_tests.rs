//! Rigid bakes keep the source's materials, texture coordinates and vertex colours.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use vat_core::container::{Asset, ElementFormat, StreamKind, TextureColorSpace};

use super::{RigidBakeOptions, RigidSource, bake_rigid, verify_rigid};
use crate::BakeError;
use crate::gltf_import::import_slice;
use crate::testdata::{textured_rigid_glb, textured_rigid_image};

fn source() -> RigidSource {
    let rig = import_slice(&textured_rigid_glb(), None, "rigid").unwrap();
    assert!(rig.notes.is_empty(), "{:?}", rig.notes);
    RigidSource::from_rig(&rig, 30.0).unwrap()
}

#[test]
fn a_rigid_gltf_bakes_its_materials_uvs_and_colours() {
    let source = source();
    assert_eq!(source.pieces.len(), 2);
    assert_eq!(source.pieces[0].material_ids, vec![0; 4]);
    assert_eq!(source.pieces[1].material_ids, vec![1; 4]);
    let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    assert_eq!(stats.materials, 2);
    let asset = Asset::parse(&bytes).unwrap();
    assert!(verify_rigid(&asset, &source).unwrap().passed);
    let m = asset.manifest();

    let names: Vec<&str> = m.materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["painted", "plain"]);
    assert_eq!(m.materials[0].base_color_texture.as_ref().unwrap().layer, 0);
    assert!(m.materials[1].base_color_texture.is_none());
    assert!(m.materials[1].double_sided);
    let textures = m.material_textures.as_ref().unwrap();
    assert!(textures.data.is_none());
    let color = textures.color.as_ref().unwrap();
    assert_eq!((color.width, color.height, color.layers.len()), (4, 4, 1));
    assert_eq!(color.color_space, TextureColorSpace::Srgb);
    assert_eq!(&asset.blob(color.texels)[..4 * 4 * 4], textured_rigid_image().as_raw().as_slice());
    assert!(m.material_variants.is_empty());

    let (format, ids) = asset.stream(StreamKind::MaterialId).unwrap();
    assert_eq!(format, ElementFormat::U8);
    assert_eq!(ids, [0, 0, 0, 0, 1, 1, 1, 1]);
    // Piece "left" has uvs, piece "right" none: (0, 0) as in the soft bake.
    let (format, uvs) = asset.stream(StreamKind::Uv0).unwrap();
    assert_eq!(format, ElementFormat::F32x2);
    let uvs: Vec<f32> = uvs.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    assert_eq!(uvs[..8], [0.25, 0.25, 0.75, 0.25, 0.25, 0.75, 0.75, 0.75]);
    assert_eq!(uvs[8..], [0.0; 8]);
    // Piece "right" has colours, piece "left" none: opaque white.
    let (format, colors) = asset.stream(StreamKind::Color0).unwrap();
    assert_eq!(format, ElementFormat::Unorm8x4);
    let white = [255u8; 4];
    assert_eq!(colors[..16], [white, white, white, white].concat());
    assert_eq!(
        colors[16..],
        [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255], [255, 255, 0, 255]].concat()
    );
}

#[test]
fn a_rigid_source_without_materials_keeps_the_palette() {
    let mut source = source();
    source.materials = None;
    for p in &mut source.pieces {
        p.uvs = None;
        p.colors = None;
    }
    let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    assert_eq!(stats.materials, 0);
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    assert!(m.materials.is_empty() && m.material_textures.is_none());
    assert!(asset.stream(StreamKind::Uv0).is_none() && asset.stream(StreamKind::Color0).is_none());
}

#[test]
fn bad_material_streams_are_refused() {
    let refused = |edit: &dyn Fn(&mut RigidSource)| {
        let mut source = source();
        edit(&mut source);
        match bake_rigid(&source, &RigidBakeOptions::default()) {
            Err(BakeError::InvalidInput { problem, .. }) => problem,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    };
    assert!(refused(&|s| s.pieces[1].material_ids[2] = 2).contains("material id 2"));
    assert!(refused(&|s| s.pieces[0].uvs.as_mut().unwrap().pop().map_or((), drop)).contains("lengths"));
    assert!(refused(&|s| s.pieces[1].colors.as_mut().unwrap().truncate(1)).contains("lengths"));
    assert!(refused(&|s| s.pieces[0].uvs.as_mut().unwrap()[1][0] = f32::NAN).contains("finite"));
}
