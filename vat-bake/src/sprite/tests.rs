//! Tests of the sprite mode: readers, hostile input, slots, bake and verify, the fountain.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use super::*;

fn p(id: Option<u64>, x: f32, size: f32) -> SourceParticle {
    SourceParticle {
        id,
        particle: Particle {
            position: [x, 2.0 * x, -x],
            size,
            color: [0.21, 0.4, 0.6, 0.8],
            rotation: 0.5 * x,
        },
    }
}

fn small() -> SpriteSequence {
    let frames = vec![
        SpriteFrame { particles: vec![p(Some(1), 0.0, 0.1), p(Some(2), 0.5, 0.2)] },
        SpriteFrame { particles: vec![p(Some(2), 0.6, 0.2), p(Some(3), 1.0, 0.05), p(None, -1.0, 0.3)] },
        SpriteFrame::default(),
        SpriteFrame { particles: vec![p(Some(3), 1.2, 0.05)] },
    ];
    SpriteSequence { name: "small".into(), fps: 24.0, frames }
}

fn is_invalid(r: &Result<impl std::fmt::Debug>, needle: &str) -> bool {
    match r {
        Err(BakeError::InvalidInput { part, problem }) => format!("{part}: {problem}").contains(needle),
        _ => false,
    }
}

const CSV: &str = "\n  a, rotation, id ,x,y,z,size,r,g,b, extra\n\
                   1,0.25,7,1.5,2,3,0.1,0.5,0.25,1.0,x\n\
                   \n\
                   0.5,-1,8,-1,0,0.5,0.2,1.0015,-0.0015,0,y\n";

#[test]
fn csv_reads_any_column_order_clamps_and_notes() {
    let (frame, notes) = read_sprite_csv(CSV, "f.csv").unwrap();
    assert_eq!(frame.particles.len(), 2);
    let a = frame.particles[0];
    assert_eq!(a.id, Some(7));
    assert_eq!(a.particle.position, [1.5, 2.0, 3.0]);
    assert_eq!(a.particle.size, 0.1);
    assert_eq!(a.particle.color, [0.5, 0.25, 1.0, 1.0]);
    assert_eq!(a.particle.rotation, 0.25);
    let b = frame.particles[1];
    assert_eq!(b.particle.color, [1.0, 0.0, 0.0, 0.5]);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("extra") && n.contains("ignored")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("2 colour value(s)")), "{notes:?}");
    // Header only, or nothing: an empty frame.
    assert!(read_sprite_csv("id,x,y,z,size,r,g,b,a\n", "e.csv").unwrap().0.particles.is_empty());
    assert!(read_sprite_csv("  \n", "e.csv").unwrap().0.particles.is_empty());
    // Farther than half a unorm8 step outside [0, 1] (HDR or negative): refused, naming the line
    // and the channel, not clamped.
    for bad in ["1.5", "-0.5", "1.002"] {
        let text = format!("id,x,y,z,size,r,g,b,a\n3,0,0,0,1,0.5,{bad},1,1\n");
        let e = read_sprite_csv(&text, "hdr.csv").unwrap_err().to_string();
        assert!(e.contains("hdr.csv") && e.contains("line 2") && e.contains(bad) && e.contains("HDR"), "{e}");
    }
    // No rotation column: 0, no note.
    let (f, n) = read_sprite_csv("id,x,y,z,size,r,g,b,a\n3,0,0,0,1,1,1,1,1", "r.csv").unwrap();
    assert_eq!(f.particles[0].particle.rotation, 0.0);
    assert!(n.is_empty());
}

#[test]
fn hostile_csv_gives_typed_errors_naming_the_line() {
    let h = "id,x,y,z,size,r,g,b,a\n";
    let cases = [
        (format!("{h}1,NaN,0,0,1,1,1,1,1\n"), "line 2"),
        (format!("{h}1,0,0,0,1,1,1,1\n"), "line 2: 8 fields"),
        (format!("{h}1,0,0,abc,1,1,1,1,1\n"), "\"abc\" is not a number"),
        (format!("{h}-1,0,0,0,1,1,1,1,1\n"), "not an unsigned integer id"),
        (format!("{h}1,0,0,0,-0.5,1,1,1,1\n"), "line 2: size -0.5 is negative"),
        (
            format!("{h}1,0,0,0,1,1,1,1,1\n\n4,0,0,0,1,1,1,1,1\n1,0,0,0,1,1,1,1,1\n"),
            "line 2 and line 5 both have id 1",
        ),
        ("id,x,y,size,r,g,b,a\n".to_string(), "lacks column(s) z"),
        ("id,x,x,y,z,size,r,g,b,a\n".to_string(), "appears twice"),
        (format!("{h}1,inf,0,0,1,1,1,1,1\n"), "not finite"),
    ];
    for (text, needle) in cases {
        let r = read_sprite_csv(&text, "bad.csv");
        assert!(is_invalid(&r, needle), "{text:?}: {r:?}");
        assert!(is_invalid(&r, "bad.csv"), "{r:?}");
    }
}

/// A PLY of `particles` with a `face` element of list properties after the vertices.
fn ply(format: PlyFormat, particles: &[SourceParticle]) -> Vec<u8> {
    let name = match format {
        PlyFormat::Ascii => "ascii",
        PlyFormat::Little => "binary_little_endian",
        PlyFormat::Big => "binary_big_endian",
    };
    let mut out = format!(
        "ply\nformat {name} 1.0\ncomment made by a test\nelement vertex {}\nproperty double x\nproperty float y\n\
         property float z\nproperty int id\nproperty float size\nproperty uchar red\nproperty uchar green\n\
         property uchar blue\nproperty ushort alpha\nproperty float rotation\nproperty short extra\n\
         element face 2\nproperty list uchar int vertex_indices\nproperty float quality\nend_header\n",
        particles.len()
    )
    .into_bytes();
    let colour = |c: f32| (c * 255.0).round() as u8;
    let alpha = |c: f32| (c * 65535.0).round() as u16;
    for sp in particles {
        let q = &sp.particle;
        let id = sp.id.unwrap() as i32;
        match format {
            PlyFormat::Ascii => out.extend(
                format!(
                    "{} {} {} {id} {} {} {} {} {} {} -3\n",
                    f64::from(q.position[0]),
                    q.position[1],
                    q.position[2],
                    q.size,
                    colour(q.color[0]),
                    colour(q.color[1]),
                    colour(q.color[2]),
                    alpha(q.color[3]),
                    q.rotation
                )
                .bytes(),
            ),
            _ => {
                let big = format == PlyFormat::Big;
                let mut put = |b: &[u8]| {
                    let mut b = b.to_vec();
                    if big {
                        b.reverse();
                    }
                    out.extend(b);
                };
                put(&f64::from(q.position[0]).to_le_bytes());
                put(&q.position[1].to_le_bytes());
                put(&q.position[2].to_le_bytes());
                put(&id.to_le_bytes());
                put(&q.size.to_le_bytes());
                put(&[colour(q.color[0])]);
                put(&[colour(q.color[1])]);
                put(&[colour(q.color[2])]);
                put(&alpha(q.color[3]).to_le_bytes());
                put(&q.rotation.to_le_bytes());
                put(&(-3i16).to_le_bytes());
            }
        }
    }
    // Two faces: a triangle and a quad, each with a quality.
    for face in [&[0i32, 1, 2][..], &[3, 2, 1, 0]] {
        match format {
            PlyFormat::Ascii => {
                let idx: Vec<String> = face.iter().map(i32::to_string).collect();
                out.extend(format!("{} {} 0.5\n", face.len(), idx.join(" ")).bytes());
            }
            _ => {
                let big = format == PlyFormat::Big;
                out.push(face.len() as u8);
                for i in face {
                    out.extend(if big { i.to_be_bytes() } else { i.to_le_bytes() });
                }
                out.extend(if big { 0.5f32.to_be_bytes() } else { 0.5f32.to_le_bytes() });
            }
        }
    }
    out
}

fn ply_particles() -> Vec<SourceParticle> {
    (0..5)
        .map(|i| SourceParticle {
            id: Some(10 + i as u64),
            particle: Particle {
                position: [i as f32 * 0.3 - 0.2, 1.0 + i as f32, 0.125],
                size: 0.05 * (i + 1) as f32,
                color: [i as f32 / 4.0, 1.0, 0.0, 0.5],
                rotation: -1.0 + 0.5 * i as f32,
            },
        })
        .collect()
}

#[test]
fn ply_round_trips_in_ascii_and_both_binaries_skipping_faces() {
    let src = ply_particles();
    for format in [PlyFormat::Ascii, PlyFormat::Little, PlyFormat::Big] {
        let bytes = ply(format, &src);
        let (frame, notes) = read_sprite_ply(&bytes, "f.ply").unwrap();
        assert_eq!(frame.particles.len(), src.len(), "{format:?}");
        for (a, b) in frame.particles.iter().zip(&src) {
            assert_eq!(a.id, b.id);
            assert_eq!(a.particle.position, b.particle.position, "{format:?}");
            assert_eq!(a.particle.size, b.particle.size);
            assert_eq!(a.particle.rotation, b.particle.rotation);
            for k in 0..3 {
                // uchar / 255 of round(c * 255): within half a step of 255.
                assert!((a.particle.color[k] - b.particle.color[k]).abs() <= 0.5 / 255.0 + 1e-6);
            }
            assert!((a.particle.color[3] - 0.5).abs() <= 0.5 / 65535.0 + 1e-7);
        }
        assert!(notes.iter().any(|n| n.contains("face (2) skipped")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("extra ignored")), "{notes:?}");
        assert_eq!(notes.len(), 2, "{notes:?}");
    }
}

#[test]
fn ply_radius_defaults_and_missing_ids_are_noted() {
    let text =
        b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n\
                 property float pscale\nend_header\n0 0 0 0.1\n1 1 1 0.2\n";
    let (frame, notes) = read_sprite_ply(text, "h.ply").unwrap();
    assert_eq!(frame.particles[1].particle.size, 0.4);
    assert_eq!(frame.particles[0].particle.color, [1.0; 4]);
    assert!(frame.particles.iter().all(|p| p.id.is_none()));
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("pscale as a radius")));
    assert!(notes.iter().any(|n| n.contains("opaque white")));
    assert!(notes.iter().any(|n| n.contains("never persist")));
    // Float colours outside [0, 1]: clamped and counted.
    let text = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n\
                 property float size\nproperty float r\nproperty float g\nproperty float b\nend_header\n0 0 0 1 1.0019 -0.0019 0.5\n";
    let (frame, notes) = read_sprite_ply(text, "c.ply").unwrap();
    assert_eq!(frame.particles[0].particle.color, [1.0, 0.0, 0.5, 1.0]);
    assert!(notes.iter().any(|n| n.contains("2 colour value(s)")), "{notes:?}");
    // HDR: refused, naming the vertex.
    let text = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n\
                 property float size\nproperty float r\nproperty float g\nproperty float b\nend_header\n0 0 0 1 4 0 0.5\n";
    let e = read_sprite_ply(text, "hdr.ply").unwrap_err().to_string();
    assert!(e.contains("hdr.ply") && e.contains("vertex 0") && e.contains("HDR"), "{e}");
}

#[test]
fn hostile_ply_gives_typed_errors() {
    let good = ply(PlyFormat::Little, &ply_particles());
    let head = |count: &str| {
        format!(
            "ply\nformat binary_little_endian 1.0\nelement vertex {count}\nproperty float x\nproperty float y\n\
             property float z\nproperty float size\nend_header\n"
        )
        .into_bytes()
    };
    let mut dup = ply_particles();
    dup[3].id = Some(10);
    let mut neg_size = head("1");
    neg_size.extend([0.0f32, 0.0, 0.0, -1.0].iter().flat_map(|v| v.to_le_bytes()));
    let mut nan = head("1");
    nan.extend([0.0f32, f32::NAN, 0.0, 1.0].iter().flat_map(|v| v.to_le_bytes()));
    let mut neg_id = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty int id\nproperty float x\n\
                       property float y\nproperty float z\nproperty float size\nend_header\n"
        .to_vec();
    neg_id.extend(b"-4 0 0 0 1\n");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() - 3].to_vec(), "truncated"),
        ("truncated in the vertices", good[..good.len() - 40].to_vec(), "truncated"),
        ("2^40 vertices", head("1099511627776"), "need at least"),
        ("overflowing count", head("18446744073709551615"), "overflows"),
        ("no end_header", b"ply\nformat ascii 1.0\nelement vertex 0\n".to_vec(), "end_header"),
        ("not ply", b"plx\nend_header\n".to_vec(), "not a PLY file"),
        ("bad type", b"ply\nformat ascii 1.0\nelement vertex 1\nproperty half x\nend_header\n".to_vec(), "unknown type"),
        ("bad format", b"ply\nformat binary 1.0\nend_header\n".to_vec(), "unknown format"),
        ("duplicate id", ply(PlyFormat::Ascii, &dup), "vertex 0 and vertex 3 both have id 10"),
        ("negative size", neg_size, "negative"),
        ("NaN", nan, "not finite"),
        ("negative id", neg_id, "negative"),
        (
            "no size",
            b"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
                .to_vec(),
            "pscale or radius",
        ),
        ("no vertex", b"ply\nformat ascii 1.0\nelement face 0\nproperty float q\nend_header\n".to_vec(), "no element \"vertex\""),
        (
            "two vertex elements",
            b"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nelement vertex 0\nproperty float x\nend_header\n"
                .to_vec(),
            "more than one element",
        ),
        ("bad header line", b"ply\nformat ascii 1.0\nelemnt vertex 1\nend_header\n".to_vec(), "header line 3"),
        ("id out of its type", {
            let mut t = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty uchar id\nproperty float x\n\
                          property float y\nproperty float z\nproperty float size\nend_header\n"
                .to_vec();
            t.extend(b"300 0 0 0 1\n");
            t
        }, "outside the range"),
        ("no format", b"ply\nelement vertex 0\nproperty float x\nend_header\n".to_vec(), "no format line"),
    ];
    for (what, bytes, needle) in cases {
        let r = read_sprite_ply(&bytes, "bad.ply");
        assert!(is_invalid(&r, needle), "{what}: {r:?}");
        assert!(crate::fuzzing::sprite_frame_bake(&bytes).is_err(), "{what}: the fuzz entry accepted it");
    }
    // A face list claiming 2^31 items in a tiny file: refused, not looped over.
    let mut list = b"ply\nformat binary_little_endian 1.0\nelement vertex 0\nproperty float x\nproperty float y\n\
                     property float z\nproperty float size\nelement face 1\nproperty list int int idx\nend_header\n"
        .to_vec();
    list.extend(i32::MAX.to_le_bytes());
    assert!(is_invalid(&read_sprite_ply(&list, "l.ply"), "past the end"));
}

#[test]
fn the_fuzz_entry_takes_garbage_and_bakes_a_good_frame() {
    for data in [&b"ply"[..], b"ply\n", b"\xff\xfe", b"id,x\n1"] {
        assert!(crate::fuzzing::sprite_frame_bake(data).is_err(), "{data:?}");
    }
    // An empty file is an empty frame: no particle in any frame.
    assert!(crate::fuzzing::sprite_frame_bake(b"").is_err());
    crate::fuzzing::sprite_frame_bake(CSV.as_bytes()).unwrap();
}

fn table(frames: &[&[Option<u64>]], looping: bool) -> Result<SlotTable> {
    assign_slots(frames.iter().map(|f| Ok(f.to_vec())), looping)
}

#[test]
fn slots_are_kept_freed_and_reused_lowest_first() {
    let (a, b, c, d, e) = (Some(1), Some(2), Some(3), Some(4), Some(5));
    let t = table(&[&[a, b, c], &[c, d], &[e, c, d, a], &[]], false).unwrap();
    // Frame 1: c keeps 2; a and b die (0, 1 free); d takes 0.
    // Frame 2: c 2, d 0 kept; e takes 1, a (new again) takes 3.
    assert_eq!(t.frames[0], vec![(0, false), (1, false), (2, true)]);
    assert_eq!(t.frames[1], vec![(2, true), (0, true)]);
    assert_eq!(t.frames[2], vec![(1, false), (2, false), (0, false), (3, false)]);
    assert!(t.frames[3].is_empty());
    assert_eq!(t.slot_count, 4);
    // Particles without ids never continue, even in the same slot; their slots are reused.
    let t = table(&[&[None, a], &[None, a]], false).unwrap();
    assert_eq!(t.frames[0], vec![(0, false), (1, true)]);
    assert_eq!(t.frames[1], vec![(0, false), (1, false)]);
    assert_eq!(t.slot_count, 2);
}

#[test]
fn loop_wrap_continues_only_into_the_same_slot_at_frame_0() {
    let (a, b, c) = (Some(1), Some(2), Some(3));
    // Looping: a and b cross the wrap (at frames 2 and 0): slots 0 and 1 at frame 0; b's slot is
    // reserved for its rebirth at frame 2, so c (alive through frame 2) takes a new slot, and both
    // a and b continue through the wrap; c is not at frame 0.
    let t = table(&[&[a, b], &[a, c], &[a, c, b]], true).unwrap();
    assert_eq!(t.frames[0], vec![(0, true), (1, false)]);
    assert_eq!(t.frames[1], vec![(0, true), (2, true)]);
    assert_eq!(t.frames[2], vec![(0, true), (2, false), (1, true)]);
    assert_eq!(t.slot_count, 3);
    // A reserved slot is lent to a particle that dies before the rebirth: d (frame 1 only) takes
    // b's slot 1, so two slots suffice.
    let d = Some(4);
    let t = table(&[&[a, b], &[a, d], &[a], &[a, b]], true).unwrap();
    assert_eq!(t.frames[1], vec![(0, true), (1, false)]);
    assert_eq!(t.frames[3], vec![(0, true), (1, true)]);
    assert_eq!(t.slot_count, 2);
    // Not looping: frame 0 starts afresh (b takes slot 1) and nothing continues past the end.
    let t = table(&[&[a, b], &[a, c], &[a, c, b]], false).unwrap();
    assert_eq!(t.frames[2], vec![(0, false), (1, false), (2, false)]);
    // One frame, looping: every identified particle continues into itself.
    let t = table(&[&[a, None]], true).unwrap();
    assert_eq!(t.frames[0], vec![(0, true), (1, false)]);
    // Errors: no particle at all, an id twice, a source error.
    assert!(is_invalid(&table(&[&[], &[]], false), "no particle"));
    assert!(is_invalid(&table(&[&[a, a]], false), "appears twice"));
    assert!(is_invalid(&table(&[&[a], &[a, a]], false), "appears twice"));
    let failing = assign_slots([Ok(vec![a]), Err(invalid("src", "boom"))].into_iter(), false);
    assert!(is_invalid(&failing, "boom"));
}

fn bake_and_verify(
    source: &dyn SpriteFrames,
    looping: bool,
) -> (Vec<u8>, SpriteBakeStats, SpriteVerifyReport) {
    let options = SpriteBakeOptions { looping, ..Default::default() };
    let (bytes, stats) = bake_sprite(source, &options).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let report = verify_sprite(&asset, source, looping).unwrap();
    (bytes, stats, report)
}

#[test]
fn a_small_sequence_bakes_with_the_documented_manifest_and_verifies() {
    let source = small();
    let (bytes, stats, report) = bake_and_verify(&source, false);
    assert!(report.passed, "{report:?}");
    assert_eq!((stats.frames, stats.slots, stats.particle_frames, stats.max_alive), (4, 3, 6, 3));
    assert_eq!((report.texels, report.particle_frames), (12, 6));
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    assert_eq!(m.mode(), vat_core::container::VatMode::Sprite);
    assert_eq!(m.vertex_count, 12);
    assert!(m.vertex_animation.is_none() && m.streams.is_empty() && m.bones.is_empty());
    let idx = asset.get_blob(m.indices.unwrap()).unwrap();
    let idx: Vec<u32> = idx.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(idx, vec![0, 1, 2, 0, 2, 3, 4, 5, 6, 4, 6, 7, 8, 9, 10, 8, 10, 11]);
    assert_eq!((m.lods[0].index_count, m.lods[0].triangle_count), (18, 6));
    let mat = &m.materials[0];
    assert_eq!(
        (mat.name.as_str(), mat.alpha_mode, mat.double_sided),
        ("sprite", AlphaMode::Mask { cutoff: 0.5 }, true)
    );
    let color = m.material_textures.as_ref().unwrap().color.as_ref().unwrap();
    assert_eq!((color.width, color.height, color.color_space), (64, 64, TextureColorSpace::Srgb));
    let clip = &m.clips[0];
    assert_eq!((clip.name.as_str(), clip.frame_count, clip.mode), ("small", 4, ClipMode::OneShot));
    let sa = m.sprite_animation.as_ref().unwrap();
    assert_eq!(sa.max_size, 0.3);
    assert_eq!(asset.get_blob(sa.particles).unwrap().len() as u64, sa.layout.byte_len(16));
    // Frame 2 is empty: every slot dead.
    for s in 0..3 {
        assert_eq!(texel_at(asset.get_blob(sa.particles).unwrap(), 2 * 3 + s).unwrap(), DEAD_TEXEL);
    }
    // Errors at most the bounds, and the bounds are the format's.
    let e = error_bounds(&sa.sprite_bounds());
    for a in 0..3 {
        assert!(report.position_max_error_mm[a] <= report.position_bound_mm[a]);
        assert!(report.position_bound_mm[a] >= e.position[a] * 1e3);
        // The documented f32 slack: 4 eps (M + extent).
        let pb = sa.position_bounds;
        let mag = f64::from(pb.min[a].abs().max((pb.min[a] + pb.extent[a]).abs()));
        let slack = 4.0 * f64::from(f32::EPSILON) * (mag + f64::from(pb.extent[a]));
        assert!((report.position_bound_mm[a] - (e.position[a] + slack) * 1e3).abs() <= 1e-12);
    }
    assert!(report.color_max_error <= report.color_bound && report.color_max_error > 0.0);
}

#[test]
fn verify_fails_against_a_different_source_and_a_looping_mismatch() {
    let source = small();
    let (bytes, _) = bake_sprite(&source, &SpriteBakeOptions::default()).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let mut moved = source.clone();
    moved.frames[1].particles[0].particle.position[1] += 0.01;
    let r = verify_sprite(&asset, &moved, false).unwrap();
    assert!(!r.passed);
    assert!(r.failures[0].starts_with("frame 1 slot 1"), "{:?}", r.failures);
    let mut recoloured = source.clone();
    recoloured.frames[3].particles[0].particle.color[2] = 0.7;
    assert!(!verify_sprite(&asset, &recoloured, false).unwrap().passed);
    let mut spun = source.clone();
    spun.frames[0].particles[1].particle.rotation += 0.01;
    assert!(!verify_sprite(&asset, &spun, false).unwrap().passed);
    // The same rotation plus a full turn is the same angle.
    let mut turned = source.clone();
    turned.frames[0].particles[1].particle.rotation += std::f32::consts::TAU;
    assert!(verify_sprite(&asset, &turned, false).unwrap().passed);
    let mut fewer = source.clone();
    fewer.frames[1].particles.pop();
    assert!(!verify_sprite(&asset, &fewer, false).unwrap().passed);
    // Verified as looping: the clip's mode and the wrap's flags differ.
    assert!(!verify_sprite(&asset, &source, true).unwrap().passed);
}

#[test]
fn bad_sources_are_typed_errors() {
    let mut s = small();
    s.frames[1].particles[0].particle.size = f32::NAN;
    assert!(is_invalid(&bake_sprite(&s, &SpriteBakeOptions::default()), "small frame 1"));
    let mut s = small();
    s.frames[0].particles[1].particle.size = -0.1;
    assert!(is_invalid(&bake_sprite(&s, &SpriteBakeOptions::default()), "negative"));
    let mut s = small();
    s.frames[0].particles[1].id = Some(1);
    assert!(is_invalid(
        &bake_sprite(&s, &SpriteBakeOptions::default()),
        "particle 0 and particle 1 both have id 1"
    ));
    let mut s = small();
    s.frames[0].particles[0].particle.color[0] = 1.5;
    assert!(is_invalid(&bake_sprite(&s, &SpriteBakeOptions::default()), "outside [0, 1]"));
    let empty = SpriteSequence { name: "e".into(), fps: 24.0, frames: vec![SpriteFrame::default(); 2] };
    assert!(is_invalid(&bake_sprite(&empty, &SpriteBakeOptions::default()), "no particle"));
    let none = SpriteSequence { name: "n".into(), fps: 24.0, frames: vec![] };
    assert!(is_invalid(&bake_sprite(&none, &SpriteBakeOptions::default()), "no frames"));
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-sprite-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_csv_folder_with_an_empty_frame_bakes_and_verifies_and_notes_once_per_file() {
    let dir = temp_dir("csv");
    let source = small();
    for (k, f) in source.frames.iter().enumerate() {
        let mut text = String::from("id,x,y,z,size,r,g,b,a,rotation,age\n");
        for sp in f.particles.iter().filter(|sp| sp.id.is_some()) {
            let q = &sp.particle;
            text += &format!(
                "{},{},{},{},{},{},{},{},{},{},1\n",
                sp.id.unwrap(),
                q.position[0],
                q.position[1],
                q.position[2],
                q.size,
                q.color[0],
                q.color[1],
                q.color[2],
                q.color[3],
                q.rotation
            );
        }
        // frame1 .. frame4, listed in number order (frame10 would sort last).
        std::fs::write(dir.join(format!("frame{}.csv", k + 1)), text).unwrap();
    }
    std::fs::write(dir.join("frame10.csv"), "id,x,y,z,size,r,g,b,a\n").unwrap();
    let folder = SpriteFolder::open(&dir, 24.0, 1 << 30).unwrap();
    assert_eq!(folder.frame_count(), 5);
    let (bytes, stats, report) = bake_and_verify(&folder, false);
    assert!(report.passed, "{report:?}");
    assert_eq!(stats.particle_frames, 5);
    // Said once, with the count of frames that had it (not one line per file).
    let ignored: Vec<&String> =
        stats.notes.iter().filter(|n| n.contains("age") && n.contains("ignored")).collect();
    assert_eq!(ignored.len(), 1, "{:?}", stats.notes);
    assert!(ignored[0].contains("(in 4 frames: "), "{ignored:?}");
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest().clips[0].frame_count, 5);
    // Over budget: a frame file charged 8x its size.
    let tight = SpriteFolder::open(&dir, 24.0, 16).unwrap();
    assert!(matches!(bake_sprite(&tight, &SpriteBakeOptions::default()), Err(BakeError::OverBudget { .. })));
    // Mixed, foreign and empty folders, and a bad rate.
    std::fs::write(dir.join("frame11.ply"), ply(PlyFormat::Ascii, &ply_particles())).unwrap();
    assert!(is_invalid(&SpriteFolder::open(&dir, 24.0, 1 << 30), "mixes 5 CSV files with 1 PLY files"));
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    assert!(is_invalid(&SpriteFolder::open(&dir, 24.0, 1 << 30), "notes.txt"));
    let empty = temp_dir("empty");
    assert!(is_invalid(&SpriteFolder::open(&empty, 24.0, 1 << 30), "no frame files"));
    assert!(matches!(SpriteFolder::open(&empty, 0.0, 1 << 30), Err(BakeError::InvalidOption { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
}

#[test]
fn a_ply_folder_bakes_and_verifies() {
    let dir = temp_dir("ply");
    let src = ply_particles();
    std::fs::write(dir.join("p_000.ply"), ply(PlyFormat::Little, &src[..3])).unwrap();
    std::fs::write(dir.join("p_001.ply"), ply(PlyFormat::Big, &src[1..])).unwrap();
    std::fs::write(dir.join("p_002.ply"), ply(PlyFormat::Ascii, &[])).unwrap();
    let folder = SpriteFolder::open(&dir, 30.0, 1 << 30).unwrap();
    let (_, stats, report) = bake_and_verify(&folder, true);
    assert!(report.passed, "{report:?}");
    assert_eq!((stats.slots, stats.particle_frames), (4, 7));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_fountain_is_deterministic_seamless_and_verifies_within_its_bounds() {
    let a = crate::procgen::sprite_by_name("fountain").unwrap();
    assert_eq!(a, crate::procgen::sprite_by_name("fountain").unwrap());
    assert!(crate::procgen::sprite_by_name("nope").is_none());
    assert_eq!(a.frames.len(), crate::procgen::FOUNTAIN_FRAMES as usize);
    let alive: Vec<usize> = a.frames.iter().map(|f| f.particles.len()).collect();
    assert!(alive.iter().all(|&n| n > 50), "{alive:?}");
    for f in &a.frames {
        for sp in &f.particles {
            let q = &sp.particle;
            assert!(q.position[1] >= 0.0 && (0.04..=0.08).contains(&q.size), "{q:?}");
        }
    }
    let (bytes, stats, report) = bake_and_verify(&a, true);
    assert!(report.passed, "{:?}", report.failures);
    // A few more slots than particles alive at once keep the wrap's particles in their slots.
    let most = *alive.iter().max().unwrap();
    assert_eq!(stats.max_alive as usize, most);
    assert!((most..=most + most / 8).contains(&(stats.slots as usize)), "{} slots for {most}", stats.slots);
    for k in 0..3 {
        assert!(report.position_max_error_mm[k] <= report.position_bound_mm[k]);
    }
    assert!(report.size_max_error_mm <= report.size_bound_mm);
    assert!(report.rotation_max_error_deg <= report.rotation_bound_deg);
    // Two bakes, the same bytes.
    let (again, _) = bake_sprite(&a, &SpriteBakeOptions { looping: true, ..Default::default() }).unwrap();
    assert_eq!(bytes, again);
    // Most particles continue into the next frame, wrap included.
    let asset = Asset::parse(&bytes).unwrap();
    let sa = asset.manifest().sprite_animation.as_ref().unwrap();
    let blob = asset.get_blob(sa.particles).unwrap();
    let last = sa.layout.frame_count as u64 - 1;
    let cont = (0..u64::from(sa.layout.vertex_count))
        .filter(|&s| {
            texel_at(blob, last * u64::from(sa.layout.vertex_count) + s).unwrap()[3]
                & vat_core::modes::sprite::FLAG_CONTINUES
                != 0
        })
        .count();
    // The loop is seamless: every particle of the last frame whose id is at frame 0 continues
    // through the wrap (frame 0 takes the last frame's slots).
    let first: std::collections::HashSet<u64> = a.frames[0].particles.iter().filter_map(|p| p.id).collect();
    let wrapping = a
        .frames
        .last()
        .unwrap()
        .particles
        .iter()
        .filter(|p| p.id.is_some_and(|id| first.contains(&id)))
        .count();
    assert!(wrapping > 100, "{wrapping} particles cross the wrap");
    assert_eq!(cont, wrapping, "{cont} of {wrapping} particles continue through the wrap");
    // Verified against the one-shot assignment, or another source: fails.
    let mut other = a.clone();
    other.frames[10].particles[5].particle.position[0] += 0.005;
    assert!(!verify_sprite(&asset, &other, true).unwrap().passed);
}

#[test]
fn the_disc_shows_about_nine_tenths_of_the_half_edge_when_opaque() {
    let img = sprite_disc_image();
    let n = img.width as usize;
    let row = n / 2;
    // Along the middle row: alpha >= 128 out to r ~ 0.9.
    let shown = (n / 2..n).take_while(|&x| img.rgba[4 * (row * n + x) + 3] >= 128).count();
    let r = shown as f32 / (n as f32 / 2.0);
    assert!((r - 0.9).abs() <= 1.5 / (n as f32 / 2.0), "{r}");
    assert_eq!(img.rgba[4 * (row * n + row) + 3], 255);
    assert_eq!(img.rgba[3], 0);
    // Shaded towards the rim.
    assert!(img.rgba[4 * (row * n + row)] > img.rgba[4 * (row * n + n - 8)]);
}

/// More particle slots x frames than the texture limit: the error names the option that raises it.
#[test]
fn a_particle_texture_over_the_limit_names_max_texture_dim() {
    let options = SpriteBakeOptions { max_texture_dim: 4, ..SpriteBakeOptions::default() };
    let err = bake_sprite(&crate::procgen::fountain(), &options).unwrap_err();
    assert!(matches!(err, BakeError::InvalidOption { option: "--max-texture-dim", .. }), "{err}");
    assert!(err.to_string().contains("particle slots"), "{err}");
}
