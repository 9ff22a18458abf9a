//! The sprite section of the container: a valid sprite file, its CPU reference, and one typed error
//! per hostile manifest or particle texture.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use super::*;
use crate::clip::{ClipMode, ClipRowMap};
use crate::encoding::PositionBounds;
use crate::format::reference::{SpriteAnimationView, decode_sprite_corner, sprite_card, sprite_particle};
use crate::instance::InstanceRecord;
use crate::layout::VertexTextureLayout;
use crate::playback::Interpolation;
use crate::sprite::{
    DEAD_TEXEL, FLAG_CONTINUES, Particle, SpriteBounds, decode_particle_texel, encode_particle_texel,
    sample_particle,
};
use crate::{Error, Result};

const SLOTS: u32 = 3;
/// Clip "a": 4 looping frames (0..4); clip "b": 2 one-shot frames (4..6).
const FRAMES: u32 = 6;

fn bounds() -> SpriteBounds {
    SpriteBounds {
        position: PositionBounds { min: [-1.0, 0.0, -0.5], extent: [2.0, 3.0, 1.0] },
        max_size: 0.2,
    }
}

fn particle(k: f32) -> Particle {
    Particle {
        position: [-0.8 + 0.3 * k, 0.2 + 0.4 * k, 0.1 * k],
        size: 0.05 + 0.02 * k,
        color: [0.9, 0.5 - 0.05 * k, 0.1 * k, 1.0 - 0.1 * k],
        rotation: 3.0 - 0.9 * k,
    }
}

/// Which slots live at which frame, and whether they continue (see the module docs of the layout).
fn texels() -> Vec<[u32; 4]> {
    let b = bounds();
    let mut t = vec![DEAD_TEXEL; (SLOTS * FRAMES) as usize];
    let mut set = |f: u32, s: u32, k: f32, continues: bool| {
        t[(f * SLOTS + s) as usize] = encode_particle_texel(&b, &particle(k), continues).unwrap();
    };
    // Clip a: slot 0 lives throughout and loops; slot 1 lives at frames 0 and 1 only.
    for f in 0..4 {
        set(f, 0, f as f32, true);
    }
    set(0, 1, 5.0, true);
    set(1, 1, 6.0, false);
    // Clip b (one-shot): slot 0 at both frames, continuing only from the first.
    set(4, 0, 1.5, true);
    set(5, 0, 2.5, false);
    // Slot 2 in clip b's second frame only.
    set(5, 2, 4.0, false);
    t
}

struct Parts {
    manifest: Manifest,
    particles: Vec<u8>,
    indices: Vec<u8>,
}

fn parts(max_dimension: u32) -> Parts {
    let mut map = ClipRowMap::new();
    map.push("a", 4.0 / 10.0, 10.0, ClipMode::Looping, 0.0).unwrap();
    map.push("b", 1.0 / 10.0, 10.0, ClipMode::OneShot, 0.0).unwrap();
    assert_eq!(map.total_frames(), FRAMES);
    let layout = VertexTextureLayout::new(SLOTS, FRAMES, max_dimension).unwrap();
    let mut particles: Vec<u8> = texels().iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    particles.resize(layout.byte_len(16) as usize, 0);
    let indices =
        (0..SLOTS).flat_map(|s| [0, 1, 2, 0, 2, 3].map(|c| 4 * s + c)).flat_map(u32::to_le_bytes).collect();
    let mut manifest = Manifest::new("sparks", 4 * SLOTS);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(BlobId(1));
    manifest.lods = vec![Lod {
        first_index: 0,
        index_count: 6 * SLOTS,
        triangle_count: 2 * SLOTS,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    manifest.sprite_animation = Some(SpriteAnimation {
        layout,
        position_bounds: bounds().position,
        max_size: bounds().max_size,
        particles: BlobId(0),
    });
    Parts { manifest, particles, indices }
}

fn write(p: Parts) -> Result<Vec<u8>> {
    let mut w = ContainerWriter::new();
    w.add_blob(p.particles);
    w.add_blob(p.indices);
    w.finish(p.manifest)
}

fn sprite(p: &mut Parts) -> &mut SpriteAnimation {
    p.manifest.sprite_animation.as_mut().unwrap()
}

/// Texel `(frame, slot)` of the particle blob, as mutable words.
fn set_texel(p: &mut Parts, frame: u32, slot: u32, texel: [u32; 4]) {
    let at = ((frame * SLOTS + slot) * 16) as usize;
    let bytes: Vec<u8> = texel.iter().flat_map(|w| w.to_le_bytes()).collect();
    p.particles[at..at + 16].copy_from_slice(&bytes);
}

#[test]
fn a_sprite_file_parses_as_format_7_with_its_card_box() {
    let bytes = write(parts(8192)).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_SPRITE);
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    assert_eq!(m.mode(), VatMode::Sprite);
    let sa = m.sprite_animation.as_ref().unwrap();
    // The card box holds a card of the largest size around any centre of the particle box.
    let r = 0.2 * std::f32::consts::FRAC_1_SQRT_2;
    let cards = m.animation_bounds().unwrap();
    assert_eq!(cards, sa.card_bounds());
    for a in 0..3 {
        assert!((cards.min[a] - (sa.position_bounds.min[a] - r)).abs() < 1e-6);
        assert!((cards.extent[a] - (sa.position_bounds.extent[a] + 2.0 * r)).abs() < 1e-6);
    }
    // The GPU constants carry the particle box apart from the culling box.
    let c = crate::gpu::AssetConstants::from_manifest(m).unwrap();
    assert_eq!((c.vertex_count, c.frame_count, c.particle_max_size), (4 * SLOTS, FRAMES, 0.2));
    assert_eq!((c.particle_min, c.particle_extent), (sa.position_bounds.min, sa.position_bounds.extent));
    assert_eq!((c.bounds_min, c.bounds_extent), (cards.min, cards.extent));
    // Other views refuse it.
    assert!(crate::format::reference::VertexAnimationView::from_asset(&asset).is_err());
}

#[test]
fn the_cpu_reference_interpolates_continuing_particles_and_picks_the_nearer_frame_otherwise() {
    let bytes = write(parts(8192)).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let view = SpriteAnimationView::from_asset(&asset).unwrap();
    let b = bounds();
    let t = texels();
    let at = |f: u32, s: u32| t[(f * SLOTS + s) as usize];
    // Clip a, phase 0.1: frames 0 and 1, weight 0.4 (4 frames per cycle).
    let inst = InstanceRecord { phase_offset_a: 0.1, rate_a: 0.0, ..Default::default() };
    let p0 = sprite_particle(&view, &inst, 0.0, 0, Interpolation::Linear).unwrap().unwrap();
    let (a, _) = decode_particle_texel(&b, at(0, 0)).unwrap();
    let (c, _) = decode_particle_texel(&b, at(1, 0)).unwrap();
    let w = 0.1f32 * 4.0;
    for k in 0..3 {
        let want = a.position[k] + (c.position[k] - a.position[k]) * w;
        assert!((p0.position[k] - want).abs() <= 1e-6, "{p0:?}");
    }
    assert_eq!(Some(p0), sample_particle(&b, at(0, 0), at(1, 0), w));
    // Slot 1 continues from frame 0 into frame 1: blended too.
    let p1 = sprite_particle(&view, &inst, 0.0, 1, Interpolation::Linear).unwrap().unwrap();
    assert!(p1.position != decode_particle_texel(&b, at(0, 1)).unwrap().0.position);
    // Point interpolation: the nearer frame (frame 0), exactly.
    let pp = sprite_particle(&view, &inst, 0.0, 0, Interpolation::Point).unwrap().unwrap();
    assert_eq!(pp, a);
    // Frames 1 and 2 (phase 0.35 -> 1.4): slot 1 does not continue, so the nearer frame (1) shows
    // it; at weight 0.6 the nearer frame (2) has none.
    let at_phase = |phase: f32| InstanceRecord { phase_offset_a: phase, rate_a: 0.0, ..Default::default() };
    let q = sprite_particle(&view, &at_phase(0.35), 0.0, 1, Interpolation::Linear).unwrap().unwrap();
    assert_eq!(q, decode_particle_texel(&b, at(1, 1)).unwrap().0);
    assert_eq!(sprite_particle(&view, &at_phase(0.4), 0.0, 1, Interpolation::Linear).unwrap(), None);
    // Slot 2 is dead in clip a; past the slots is an error.
    assert_eq!(sprite_particle(&view, &inst, 0.0, 2, Interpolation::Cubic).unwrap(), None);
    assert!(matches!(
        sprite_particle(&view, &inst, 0.0, SLOTS, Interpolation::Linear),
        Err(Error::OutOfRange { .. })
    ));
    // The loop wrap: frame 3 continues into frame 0 (phase 0.9 -> 3.6).
    let wrap = sprite_particle(&view, &at_phase(0.9), 0.0, 0, Interpolation::Linear).unwrap().unwrap();
    assert_eq!(Some(wrap), sample_particle(&b, at(3, 0), at(0, 0), wrap_weight(0.9, 4)));
    // Clip b: one-shot; its last frame has no successor (the last frame again).
    let last = InstanceRecord { clip_a: 1, phase_offset_a: 1.0, rate_a: 0.0, ..Default::default() };
    let pl = sprite_particle(&view, &last, 0.0, 2, Interpolation::Linear).unwrap().unwrap();
    assert_eq!(pl, decode_particle_texel(&b, at(5, 2)).unwrap().0);
}

/// The blend weight of a looping clip of `frames` frames at `phase`.
fn wrap_weight(phase: f32, frames: u32) -> f32 {
    let pos = phase * frames as f32;
    pos - pos.floor()
}

#[test]
fn a_card_is_a_square_of_its_size_facing_the_camera() {
    let p = particle(2.0);
    let inst = InstanceRecord { position: [3.0, 0.0, -2.0], yaw: 0.7, scale: 1.5, ..Default::default() };
    for camera in [[10.0, 4.0, 6.0], [3.0, 20.0, -2.0], [-4.0, 0.5, -9.0]] {
        let c: Vec<_> = (0..4).map(|k| sprite_card(&p, &inst, k, camera)).collect();
        let v = |i: usize| glam::Vec3::from(c[i].world_position);
        let edge = p.size * inst.scale;
        let centre = (v(0) + v(1) + v(2) + v(3)) / 4.0;
        let n = glam::Vec3::from(c[0].world_normal);
        let to_camera = (glam::Vec3::from(camera) - centre).normalize();
        assert!(n.dot(to_camera) > 0.999_99, "faces the camera: {n} vs {to_camera}");
        for i in 0..4 {
            let side = v((i + 1) % 4) - v(i);
            assert!((side.length() - edge).abs() < 1e-5, "edge {i}: {} vs {edge}", side.length());
            assert!(side.dot(n).abs() < 1e-5, "in the card's plane");
        }
        // Counter-clockwise seen from the camera: the front face.
        assert!((v(1) - v(0)).cross(v(2) - v(1)).dot(n) > 0.0);
        // The tangent is the rotated right axis: corner 0 to corner 1.
        let t = glam::Vec3::from_slice(&c[0].world_tangent[..3]);
        assert!(((v(1) - v(0)).normalize() - t).length() < 1e-5);
    }
}

#[test]
fn decode_sprite_corner_is_the_particle_then_the_card_and_dead_slots_are_none() {
    let bytes = write(parts(8192)).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let view = SpriteAnimationView::from_asset(&asset).unwrap();
    let inst = InstanceRecord { phase_offset_a: 0.1, rate_a: 0.0, ..Default::default() };
    let cam = [0.0, 1.0, 5.0];
    for corner in 0..4 * SLOTS {
        let got = decode_sprite_corner(&view, &inst, 0.0, corner, Interpolation::Linear, cam).unwrap();
        let p = sprite_particle(&view, &inst, 0.0, corner / 4, Interpolation::Linear).unwrap();
        assert_eq!(got, p.map(|p| sprite_card(&p, &inst, corner % 4, cam)));
        assert_eq!(got.is_none(), corner / 4 == 2);
    }
}

#[test]
fn hostile_sprite_sections_are_typed_errors() {
    type Tamper = Box<dyn Fn(&mut Parts)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "continues at a one-shot clip's last frame",
            Box::new(|p| {
                let mut t = texels()[(5 * SLOTS) as usize];
                t[3] |= FLAG_CONTINUES;
                set_texel(p, 5, 0, t);
            }),
            "particle continuation flag",
        ),
        (
            "continues into a dead slot",
            Box::new(|p| {
                let mut t = texels()[(SLOTS + 1) as usize];
                t[3] |= FLAG_CONTINUES;
                set_texel(p, 1, 1, t);
            }),
            "particle continuation flag",
        ),
        ("a dead texel with data", Box::new(|p| set_texel(p, 2, 2, [7, 0, 0, 0])), "dead particle texel"),
        (
            "reserved bits",
            Box::new(|p| {
                let mut t = texels()[0];
                t[3] |= 1 << 20;
                set_texel(p, 0, 0, t);
            }),
            "reserved bits",
        ),
        (
            "unused texel",
            Box::new(|p| {
                let n = p.particles.len();
                p.particles[n - 1] = 1;
            }),
            "unused particle texel",
        ),
        ("corner count", Box::new(|p| p.manifest.vertex_count = 4 * SLOTS + 1), "4 corners per sprite slot"),
        ("no slots", Box::new(|p| sprite(p).layout.vertex_count = 0), "sprite slot count"),
        (
            "frame count",
            Box::new(|p| sprite(p).layout.frame_count = FRAMES - 1),
            "particle texture frame count",
        ),
        ("NaN size", Box::new(|p| sprite(p).max_size = f32::NAN), "sprite max size"),
        (
            "negative extent",
            Box::new(|p| sprite(p).position_bounds.extent[1] = -1.0),
            "particle position bounds",
        ),
        (
            "short texture",
            Box::new(|p| {
                p.particles.truncate(p.particles.len() - 16);
            }),
            "particle texture",
        ),
        (
            "root motion on sprites",
            Box::new(|p| {
                use crate::root_motion::RootPose;
                p.manifest.root_motion = vec![RootMotionTrack {
                    clip: 0,
                    frames: vec![RootPose::IDENTITY; 4],
                    cycle: RootPose::IDENTITY,
                }];
            }),
            "root motion",
        ),
    ];
    // Padded layout (3 x 6 = 18 texels in rows of 5: two unused texels) for the "unused" case.
    for (name, tamper, what) in &cases {
        let mut p = parts(5);
        tamper(&mut p);
        match write(p) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains(what), "{name}: {text}");
            }
        }
    }
    // The untampered padded file is fine.
    write(parts(5)).unwrap();
}
