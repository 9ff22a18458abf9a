//! The impostor section of the container: a valid tier round-trips as version 8 (older files keep
//! their version), its far cards' bound as version 9, and each hostile field is its own typed
//! error.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use super::tests::{Fixture, minimal};
use super::*;
use crate::Error;
use crate::format::impostor::{ImpostorBound, ImpostorTier, ViewCoverage, ViewGrid};

/// `minimal()` (two clips) with a tier of 3 x 3 hemi views, 8-pixel tiles, 2 and 1 frames, 2 mips:
/// layers of 24 and 12 pixels, 3 layers, (576 + 144) * 4 * 3 = 8,640 bytes per blob.
fn with_tier() -> Fixture {
    let mut fx = minimal();
    let len = (24 * 24 + 12 * 12) * 4 * 3;
    let color = fx.add((0..len).map(|i| (i * 7 % 251) as u8).collect());
    let normal_depth = fx.add((0..len).map(|i| (i * 13 % 241) as u8).collect());
    fx.manifest.impostors = Some(ImpostorTier {
        grid: ViewGrid::new(3, ViewCoverage::Hemi).unwrap(),
        tile_size: 8,
        frames_per_clip: vec![2, 1],
        centre: [0.0, 1.0, 0.0],
        radius: 1.2,
        mip_levels: 2,
        color,
        normal_depth,
        bound: ImpostorBound { min_coverage_iou: 0.93, max_mean_color_error: 0.012 },
    });
    fx
}

#[test]
fn a_tier_round_trips_as_version_8_and_files_without_one_keep_their_version() {
    let fx = with_tier();
    let tier = fx.manifest.impostors.clone().unwrap();
    assert_eq!(tier.layer_count(), 3);
    assert_eq!(tier.blob_bytes(), Some(8640));
    assert_eq!((tier.first_layer(0), tier.first_layer(1), tier.first_layer(2)), (Some(0), Some(2), None));
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_IMPOSTORS);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest().impostors.as_ref(), Some(&tier));
    assert_eq!(asset.blob(tier.color), fx.blobs[tier.color.0 as usize].as_slice());
    // The same body without the tier is the version it always was.
    let plain = minimal().write().unwrap();
    assert_eq!(u32::from_le_bytes(plain[4..8].try_into().unwrap()), MIN_FORMAT_VERSION);
}

#[test]
fn each_hostile_tier_is_a_typed_error() {
    type Edit = fn(&mut ImpostorTier);
    let cases: [(&str, Edit); 12] = [
        ("one view per side", |t| t.grid.views_per_side = 1),
        ("tile not a power of two", |t| t.tile_size = 12),
        ("tile too small", |t| t.tile_size = 4),
        ("a clip without frames", |t| t.frames_per_clip[1] = 0),
        ("a frame count per clip missing", |t| t.frames_per_clip.truncate(1)),
        ("too many layers", |t| t.frames_per_clip = vec![200, 100]),
        ("no mips", |t| t.mip_levels = 0),
        ("more mips than the tile has", |t| t.mip_levels = 5),
        ("a NaN centre", |t| t.centre[1] = f32::NAN),
        ("a zero radius", |t| t.radius = 0.0),
        ("an IoU above 1", |t| t.bound.min_coverage_iou = 1.5),
        ("a colour blob of another size", |t| t.color = BlobId(0)),
    ];
    for (name, edit) in cases {
        let mut fx = with_tier();
        edit(fx.manifest.impostors.as_mut().unwrap());
        let error = Asset::parse(&fx.bytes()).map(|_| ()).unwrap_err();
        assert!(
            matches!(
                error,
                Error::OutOfRange { .. }
                    | Error::ManifestMismatch { .. }
                    | Error::LimitExceeded { .. }
                    | Error::NotFinite { .. }
                    | Error::BlobSizeMismatch { .. }
            ),
            "{name}: {error:?}"
        );
        // The writer refuses what the reader refuses.
        assert!(fx.write().is_err(), "{name}");
    }
    // A blob one byte short names the blob.
    let mut fx = with_tier();
    let id = fx.manifest.impostors.as_ref().unwrap().normal_depth;
    fx.blobs[id.0 as usize].pop();
    assert!(matches!(
        Asset::parse(&fx.bytes()),
        Err(Error::BlobSizeMismatch { what: "impostor normal and depth", .. })
    ));
    // A tier needs a soft body to stand for.
    let mut fx = with_tier();
    fx.manifest.vertex_animation = None;
    assert!(Asset::parse(&fx.bytes()).is_err());
}

#[test]
fn the_far_cards_bound_round_trips_as_version_9_beside_a_tier_only() {
    let mut fx = with_tier();
    let bound = ImpostorBound { min_coverage_iou: 0.34, max_mean_color_error: 0.29 };
    fx.manifest.impostor_one_view_bound = Some(bound);
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_IMPOSTOR_ONE_VIEW);
    assert_eq!(Asset::parse(&bytes).unwrap().manifest().impostor_one_view_bound, Some(bound));
    // Out of range, NaN, or without the tier it bounds: typed errors, from the reader and the writer.
    for (name, b, tier) in [
        ("IoU above 1", ImpostorBound { min_coverage_iou: 1.5, ..bound }, true),
        ("NaN colour error", ImpostorBound { max_mean_color_error: f32::NAN, ..bound }, true),
        ("no tier", bound, false),
    ] {
        let mut fx = with_tier();
        fx.manifest.impostor_one_view_bound = Some(b);
        if !tier {
            fx.manifest.impostors = None;
        }
        let error = Asset::parse(&fx.bytes()).map(|_| ()).unwrap_err();
        assert!(
            matches!(error, Error::OutOfRange { .. } | Error::MissingSection { .. }),
            "{name}: {error:?}"
        );
        assert!(fx.write().is_err(), "{name}");
    }
}

/// [`with_tier`] on an asset with two materials and three material variants, its colour blob
/// holding `1 + variants` colour sets.
fn with_variant_colors(variants: u32) -> Fixture {
    let mut fx = with_tier();
    fx.manifest.materials = vec![
        Material { name: "skin".into(), ..Material::default() },
        Material { name: "cloth".into(), ..Material::default() },
    ];
    fx.manifest.material_variants = (0..3)
        .map(|v| MaterialVariant { name: format!("variant {v}"), materials: vec![1, (v % 2) as u16] })
        .collect();
    let tier = fx.manifest.impostors.clone().unwrap();
    let len = tier.color_blob_bytes(1 + variants).unwrap() as usize;
    let color = fx.add((0..len).map(|i| (i * 3 % 253) as u8).collect());
    let tier = fx.manifest.impostors.as_mut().unwrap();
    tier.color = color;
    fx.manifest.impostor_material_variants = variants;
    fx
}

#[test]
fn material_variant_colours_round_trip_as_version_10_and_lie_set_after_set_per_level() {
    let fx = with_variant_colors(2);
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_IMPOSTOR_VARIANTS);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest().impostor_material_variants, 2);
    let tier = asset.manifest().impostors.as_ref().unwrap();
    assert_eq!(asset.blob(tier.color).len() as u64, 3 * tier.blob_bytes().unwrap());
    // Level 0 (3 layers of 24 x 24 texels) of sets 0, 1 and 2, then level 1 (12 x 12) of each.
    let (l0, l1) = (24 * 24 * 4 * 3, 12 * 12 * 4 * 3);
    assert_eq!(tier.color_level_range(3, 0, 0), 0..l0);
    assert_eq!(tier.color_level_range(3, 2, 0), 2 * l0..3 * l0);
    assert_eq!(tier.color_level_range(3, 1, 1), 3 * l0 + l1..3 * l0 + 2 * l1);
    assert_eq!(tier.color_level_range(1, 0, 1), l0..l0 + l1);
    // No variants: the version the tier alone needs, every byte as before.
    let plain = with_tier().write().unwrap();
    assert_eq!(u32::from_le_bytes(plain[4..8].try_into().unwrap()), FORMAT_VERSION_IMPOSTORS);
}

#[test]
fn each_hostile_material_variant_count_is_a_typed_error() {
    // More sets than the asset has variants; a colour blob of one set too few; no materials; no
    // tier; more layers than a texture array holds.
    let mut cases: Vec<(&str, Fixture)> = Vec::new();
    let mut fx = with_variant_colors(3);
    fx.manifest.impostor_material_variants = 4;
    cases.push(("more variants than the asset's", fx));
    let mut fx = with_variant_colors(3);
    fx.manifest.impostor_material_variants = 2;
    cases.push(("a colour blob of another size", fx));
    let mut fx = with_variant_colors(1);
    fx.manifest.materials.clear();
    fx.manifest.material_variants.clear();
    cases.push(("no materials", fx));
    let mut fx = with_variant_colors(1);
    fx.manifest.impostors = None;
    cases.push(("no tier", fx));
    let mut fx = with_variant_colors(3);
    fx.manifest.impostor_material_variants = u32::MAX;
    cases.push(("an absurd count", fx));
    for (name, fx) in cases {
        let error = Asset::parse(&fx.bytes()).map(|_| ()).unwrap_err();
        assert!(
            matches!(
                error,
                Error::LimitExceeded { .. } | Error::MissingSection { .. } | Error::BlobSizeMismatch { .. }
            ),
            "{name}: {error:?}"
        );
        assert!(fx.write().is_err(), "{name}");
    }
    // 3 layers x 86 sets is over the 256 layers of a texture array, whatever the variants.
    let mut fx = with_variant_colors(3);
    fx.manifest.material_variants =
        (0..85).map(|v| MaterialVariant { name: v.to_string(), materials: vec![0, 1] }).collect();
    fx.manifest.impostor_material_variants = 85;
    let error = Asset::parse(&fx.bytes()).map(|_| ()).unwrap_err();
    assert!(
        matches!(
            error,
            Error::LimitExceeded { what: "impostor colour layers (images times colour sets)", .. }
        ),
        "{error:?}"
    );
}
