//! Houdini VAT 3 particle import: bakes made here in VAT 3's layout ([`houdini_particle_fixture`])
//! bake in vat's sprite mode, verify against the decoded source, and play through vat's CPU
//! reference as a transcription of VAT 3's published particle shader (SideFX Labs' Unity
//! `VAT_ParticleSprites` sub-graph, default material) places their cards, at every corner of every
//! card of every frame.

use std::path::{Path, PathBuf};

use glam::{Vec3, Vec4};
use vat_core::container::Asset;
use vat_core::format::reference::{SpriteAnimationView, sprite_card, sprite_particle};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;

use super::houdini::{HOUDINI_PARTICLE_SIZE, HoudiniOptions, ImportedSpriteBake, read_houdini_particles};
use crate::interop_fixtures::{HoudiniParticleFixture, houdini_particle_fixture};
use crate::sprite::{SpriteBakeOptions, SpriteFrames, bake_sprite, verify_sprite};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-houdini-sprite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn import(dir: &Path, particle_size: f32) -> crate::Result<ImportedSpriteBake> {
    read_houdini_particles(dir, &HoudiniOptions { particle_size, ..Default::default() })
}

/// A texture as the shader samples it (point sampling, Unity's bottom-up `v`).
fn sample(texels: &[[f32; 4]], (w, h): (usize, usize), u: f32, v_up: f32) -> Vec4 {
    let x = ((u * w as f32).floor() as usize).min(w - 1);
    let y = h - 1 - ((v_up * h as f32).floor() as usize).min(h - 1);
    Vec4::from(texels[y * w + x])
}

/// Vertex `v` of the fixture at frame `f` as VAT 3's particle shader places it with its default
/// material (f32, the sub-graph's nodes in order), seen by a view whose right and up are +X and +Y:
/// the texel of `TEXCOORD_1` moved `f / F` down, its centre (LDR: remapped by the bounds, the HDR
/// flag from `Bound Max Z`'s decimals), pscale `A / (1 - fract(10 Bound Max Y))`, zero within 0.02 of
/// the origin, the corner `TEXCOORD_0 - 1/2` along right and up times the base scale (`size`) and
/// pscale; the colour texel. `None` for a bounds extender.
fn shader_vertex(fx: &HoudiniParticleFixture, v: usize, f: usize, size: f32) -> Option<(Vec3, f32, Vec4)> {
    let (min, max) = (Vec3::from(fx.bounds.0), Vec3::from(fx.bounds.1));
    let (uv0, uv1) = (fx.uv0[v], fx.uv1[v]);
    let v_up = 1.0 - uv1[1];
    if v_up <= 0.1 {
        return None;
    }
    let fract = |x: f32| x - x.floor();
    let hdr = fract(max.z * 10.0) >= 0.5;
    let frames = fx.frames as f32;
    let progress = (f as f32).rem_euclid(frames) * (1.0 / frames);
    let sample_v = 1.0 - ((1.0 - v_up) * 1.0 + progress * 1.0);
    let p = sample(&fx.pos_texels, fx.size, uv1[0] * 1.0, sample_v);
    let centre = if hdr { p.truncate() } else { p.truncate() * (max - min) + min };
    let pscale = (1.0 / (1.0 - fract(max.y * 10.0))) * p.w * (1.0 * 1.0);
    let visible = (centre.distance(Vec3::ZERO) - 0.02).signum().clamp(0.0, 1.0);
    let scale = pscale * visible;
    let right = Vec3::X * size;
    let up = Vec3::Y * (0.0 + 1.0) * size;
    let corner = (uv0[0] - 0.5) * (right * scale) + (uv0[1] - 0.5) * (up * scale) + centre;
    Some((corner, scale, sample(&fx.col_texels, fx.size, uv1[0], sample_v)))
}

/// Imports, bakes (looping, as VAT 3 plays) and verifies a fixture, then compares every card of
/// every frame with the shader transcription: the frame's visible cards (non-zero scale), in texel
/// order, are vat's slots `0, 1, ...` (particles without ids take the lowest free slots, in the
/// frame's order); each of their four corners, vat's card facing a camera straight along +Z (so its
/// right and up are the shader's), within the sprite format's centre and size bounds plus f32
/// rounding, the colour within its bound (clamped to `[0, 1]`); every other slot dead.
fn check_against_the_shader(name: &str, fx: &HoudiniParticleFixture, size: f32) -> ImportedSpriteBake {
    let dir = scratch(name);
    fx.write(&dir, "particles").unwrap();
    let imported = import(&dir, size).unwrap_or_else(|e| panic!("{name}: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    let options = SpriteBakeOptions { looping: true, ..Default::default() };
    let (bytes, _) = bake_sprite(&imported, &options).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let report = verify_sprite(&asset, &imported, true).unwrap();
    assert!(report.passed, "{name}: {:?}", report.failures);
    let view = SpriteAnimationView::from_asset(&asset).unwrap();
    let bound = Vec3::from(report.position_bound_mm.map(|b| (b * 1e-3) as f32));
    let size_bound = (report.size_bound_mm * 1e-3) as f32;
    let extent = Vec3::from(fx.bounds.1).abs().max(Vec3::from(fx.bounds.0).abs()).max_element();
    let rounding = 16.0 * f32::EPSILON * (extent + size);
    let (mut worst, mut hidden) = (0.0f32, 0usize);
    for f in 0..fx.frames {
        let record = InstanceRecord {
            clip_a: 0,
            phase_offset_a: f as f32 / fx.frames as f32,
            rate_a: 0.0,
            ..Default::default()
        };
        let mut slot = 0u32;
        for card in 0..fx.cards {
            let corners: Vec<(Vec3, f32, Vec4)> =
                (0..4).map(|j| shader_vertex(fx, 4 * card + j, f, size).unwrap()).collect();
            if corners[0].1 == 0.0 {
                hidden += 1;
                continue;
            }
            let p = sprite_particle(&view, &record, 0.0, slot, Interpolation::Point)
                .unwrap()
                .unwrap_or_else(|| panic!("{name} frame {f}: slot {slot} (card {card}) is dead"));
            let centre = corners.iter().map(|c| c.0).sum::<Vec3>() / 4.0;
            let camera = (centre + Vec3::Z * 100.0).to_array();
            for (j, (want, _, colour)) in corners.iter().enumerate() {
                let got = Vec3::from(sprite_card(&p, &record, j as u32, camera).world_position);
                let e = (got - *want).abs();
                // A corner moves with the centre and half the size on each of two axes.
                let limit = bound + Vec3::splat(size_bound + rounding);
                assert!(e.cmple(limit).all(), "{name} frame {f} card {card} corner {j}: {got} vs {want}");
                worst = worst.max(e.max_element());
                let c = Vec4::from(p.color) - colour.clamp(Vec4::ZERO, Vec4::ONE);
                assert!(
                    c.abs().max_element() <= report.color_bound as f32 + 1e-6,
                    "{name} frame {f} card {card}"
                );
            }
            slot += 1;
        }
        for s in slot..view.slot_count() {
            let p = sprite_particle(&view, &record, 0.0, s, Interpolation::Point).unwrap();
            assert!(p.is_none(), "{name} frame {f}: slot {s} alive past the visible cards");
        }
    }
    assert!(worst > 0.0, "the comparison saw quantisation");
    assert_eq!(hidden, 2, "card 1 at frame 1 (scale 0) and card 2 at frame 2 (at the origin)");
    imported
}

#[test]
fn a_vat3_particle_bake_plays_as_its_shader_plays_it() {
    // 10 cards in 4 columns: 3 rows a frame.
    let ldr =
        check_against_the_shader("ldr", &houdini_particle_fixture(10, 4, 6, false), HOUDINI_PARTICLE_SIZE);
    let notes = ldr.notes().join("\n");
    assert!(notes.contains("10 cards over 6 frames") && notes.contains("times 2.0000"), "{notes}");
    assert!(notes.contains("2 card-frames hidden") && notes.contains("no identity"), "{notes}");
    assert!(notes.contains("6 bounds-extender vertices"), "{notes}");
    let hdr = check_against_the_shader("hdr", &houdini_particle_fixture(7, 7, 4, true), 0.35);
    let notes = hdr.notes().join("\n");
    assert!(notes.contains("1 colour values outside [0, 1]") && notes.contains("clamped"), "{notes}");
    assert!(notes.contains("0.35 m"), "{notes}");
    // The particles are the cards' centres, sizes and colours.
    let frame = hdr.frame(0).unwrap();
    assert_eq!(frame.particles.len(), 7);
    assert!(frame.particles.iter().all(|p| p.id.is_none() && p.particle.rotation == 0.0));
}

fn refused(name: &str, edit: impl FnOnce(&mut HoudiniParticleFixture)) -> String {
    let dir = scratch(name);
    let mut fx = houdini_particle_fixture(5, 5, 3, false);
    edit(&mut fx);
    fx.write(&dir, "particles").unwrap();
    let e = import(&dir, HOUDINI_PARTICLE_SIZE).unwrap_err();
    assert!(matches!(e, crate::BakeError::Interop { .. }), "{name}: {e:?}");
    let _ = std::fs::remove_dir_all(&dir);
    e.to_string()
}

#[test]
fn what_the_sprite_mode_cannot_draw_is_refused_naming_it() {
    // A hexagonal card (VAT 3's other shapes): TEXCOORD_0 not on the unit square's corners.
    let e = refused("shape", |fx| {
        fx.uv0[1] = [0.75, 0.0];
        let positions: Vec<Vec3> =
            (0..fx.uv0.len()).map(|i| Vec3::new(i as f32, 0.0, (i % 3) as f32)).collect();
        let normals = vec![Vec3::Y; positions.len()];
        let mut indices: Vec<u32> = Vec::new();
        for c in 0..fx.cards as u32 {
            indices.extend([4 * c, 4 * c + 2, 4 * c + 1, 4 * c + 2, 4 * c, 4 * c + 3]);
        }
        let b = 4 * fx.cards as u32;
        indices.extend((0..6).map(|k| b + k));
        fx.glb = super::openvat::lookup_glb_with_sets(
            "particles",
            &positions,
            &normals,
            &[Some(&fx.uv0), Some(&fx.uv1)],
            &indices,
        )
        .unwrap();
    });
    assert!(e.contains("square card") && e.contains("texel (0, 0)"), "{e}");
    let e = refused("frames", |fx| {
        fx.json = String::from_utf8(fx.json.clone())
            .unwrap()
            .replace("\"Frame Count\": 3", "\"Frame Count\": 4")
            .into_bytes();
    });
    assert!(e.contains("Frame Count"), "{e}");
    let e = refused("two-pos", |fx| {
        fx.json = String::from_utf8(fx.json.clone())
            .unwrap()
            .replace("\"Two Position Textures\": 0", "\"Two Position Textures\": 1")
            .into_bytes();
    });
    assert!(e.contains("Two Position Textures"), "{e}");
    let dir = scratch("size");
    houdini_particle_fixture(3, 3, 3, false).write(&dir, "particles").unwrap();
    let e = import(&dir, -1.0).unwrap_err().to_string();
    assert!(e.contains("--particle-size"), "{e}");
    let e = super::houdini::read_houdini(&dir, &HoudiniOptions::default()).unwrap_err().to_string();
    assert!(e.contains("Particles") && e.contains("sprite mode"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
