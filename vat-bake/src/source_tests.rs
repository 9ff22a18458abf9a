//! Every mode through the one path: [`bake`] gives the bytes the mode's own bake gives, and
//! [`Source::verify`] passes on them.

use std::path::Path;

use super::*;
use crate::fluid::{FluidBakeOptions, FluidFrames, bake_fluid};
use crate::prepare::fixtures::tube_rig;
use crate::prepare::prepare;
use crate::rigid::{RigidBakeOptions, bake_rigid};
use crate::sprite::{SpriteBakeOptions, SpriteFrames, bake_sprite};

fn bytes_of(file: &BakedFile) -> Vec<u8> {
    match file {
        BakedFile::Prepared(prepared) => prepared.to_vat_bytes().expect("the prepared bake lays out"),
        BakedFile::Bytes(bytes) => bytes.clone(),
    }
}

/// Bakes `source` through [`bake`], checks the bytes against `own` (the mode's own bake), verifies
/// them and returns the summary's and the report's text.
fn through_the_one_path(source: &dyn Source, options: &BakeOptions, own: &[u8]) -> String {
    let baked = bake(source, options, &mut |_| {}).expect("the source bakes");
    let bytes = bytes_of(&baked.file);
    assert_eq!(bytes, own, "the one path bakes what the mode's own bake does");
    let asset = Asset::parse(&bytes).expect("the bake reads back");
    assert_eq!(asset.manifest().mode(), source.mode());
    let report = source.verify(&asset, &VerifyOptions::default()).expect("the bake verifies");
    assert!(report.passed(), "{:?}", report.failures());
    assert!(report.to_json().expect("the report is JSON").contains("\"passed\": true"));
    let mut text = Vec::new();
    baked.figures.write_summary(&mut text, "the source", Path::new("out.vat")).expect("into memory");
    report.write_lines(&mut text).expect("into memory");
    let buffer = baked.file.into_reusable_buffer();
    assert!(buffer.is_empty());
    String::from_utf8(text).expect("the lines are text")
}

#[test]
fn every_mode_bakes_through_the_one_path_as_through_its_own() {
    let options = BakeOptions::default();

    let rig = tube_rig(0.15);
    let own = prepare(&rig, &options).and_then(|p| p.to_vat_bytes()).expect("the tube bakes");
    let text = through_the_one_path(&rig, &options, &own);
    assert!(text.starts_with("baked the source -> out.vat: "), "{text}");
    assert!(text.contains("  verified vat: "), "{text}");

    let shatter = crate::procgen::rigid_by_name("shatter").expect("a built-in rigid source");
    let rigid_options = RigidBakeOptions {
        max_texture_dim: options.max_texture_dim,
        material_texture_size: options.material_texture_size,
        lods: options.lods.clone(),
    };
    let (own, _) = bake_rigid(&shatter, &rigid_options).expect("the shatter bakes");
    let text = through_the_one_path(&shatter, &options, &own);
    assert!(text.starts_with("baked the source -> out.vat (rigid): "), "{text}");
    assert!(text.contains("  verified rigid: "), "{text}");

    let splash: Box<dyn FluidFrames> =
        Box::new(crate::procgen::fluid_by_name("splash").expect("a built-in fluid"));
    let looping = BakeOptions { looping: vec![splash.name().to_owned()], ..BakeOptions::default() };
    let fluid_options = FluidBakeOptions { looping: true, ..FluidBakeOptions::default() };
    let (own, _) = bake_fluid(splash.as_ref(), &fluid_options).expect("the splash bakes");
    let text = through_the_one_path(&splash, &looping, &own);
    assert!(text.starts_with("baked the source -> out.vat (fluid, Packed64): "), "{text}");
    assert!(text.contains("  verified fluid: "), "{text}");

    let fountain: Box<dyn SpriteFrames> =
        Box::new(crate::procgen::sprite_by_name("fountain").expect("a built-in sprite source"));
    let looping = BakeOptions { looping: vec![fountain.name().to_owned()], ..BakeOptions::default() };
    let (own, _) =
        bake_sprite(fountain.as_ref(), &SpriteBakeOptions { looping: true, ..SpriteBakeOptions::default() })
            .expect("the fountain bakes");
    let text = through_the_one_path(&fountain, &looping, &own);
    assert!(text.starts_with("baked the source -> out.vat (sprite): "), "{text}");
    assert!(text.contains("  verified sprite: "), "{text}");
}
