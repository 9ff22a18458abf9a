//! The real bakes of `shared/testdata/vat-bakes/` (see its README, whose decoded values are the
//! expectations here): every OpenVAT bake imports, decodes to the README's spot values, bakes in
//! vat's formats and verifies against its decoded frames.

use std::path::PathBuf;

use glam::Vec3;
use vat_core::container::Asset;
use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
use vat_core::playback::Interpolation;

use super::ImportedBake;
use super::openvat::{OpenVatOptions, read_openvat};
use crate::prepare::{BakeOptions, prepare};
use crate::testdata::shared_testdata;
use crate::verify::{exact_frame_offset, verify_prepared};

/// The folder of one real bake; `None` (skip) when the corpus is missing.
fn bake_dir(name: &str) -> Option<PathBuf> {
    let dir = shared_testdata()?.join("vat-bakes").join(name);
    assert!(dir.is_dir(), "the real-file corpus has no vat-bakes/{name}");
    Some(dir)
}

fn read(name: &str, options: OpenVatOptions) -> Option<ImportedBake> {
    let dir = bake_dir(name)?;
    Some(read_openvat(&dir, &options).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn assert_close(got: Vec3, want: [f32; 3], tolerance: f32, what: &str) {
    let d = (got - Vec3::from(want)).abs().max_element();
    assert!(d <= tolerance, "{what}: {got} vs {want:?} ({d} > {tolerance})");
}

/// Bakes the import in `format` with one LOD and checks it: verification against the decoded
/// frames passes, and every frame of every clip decodes (vat's CPU reference) to the source frame the
/// clip's row map names, within the format's bound. Returns the largest error (metres).
fn bake_and_check(name: &str, bake: &ImportedBake, format: vat_core::format::encoding::VertexFormat) -> f32 {
    let rig = bake.to_rig().unwrap();
    let options = bake.at_own_rates(BakeOptions {
        format,
        lods: crate::lods::LodOptions::Count(1),
        ..Default::default()
    });
    let prepared = prepare(&rig, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let report = verify_prepared(&prepared, &rig).unwrap();
    assert!(report.passed, "{name}: {:?}", report.failures);
    let bytes = prepared.to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let bound =
        vat_core::format::encoding::position_error_bound(view.format, view.position_bits, &view.bounds);
    let manifest = asset.manifest();
    assert_eq!(manifest.clips.len(), bake.clips.len(), "{name}");
    let n = bake.sequence.vertex_count();
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    let mut worst = 0.0f32;
    for (c, source) in bake.clips.iter().enumerate() {
        let clip = manifest.clips.iter().find(|k| k.name == source.name).unwrap();
        if source.frame_count() > 1 {
            assert_eq!(clip.is_looping(), source.looping, "{name} {}", source.name);
        }
        // Every source frame is stored once, at the clip's own rate (a looping clip wraps from its
        // last frame to its first).
        assert_eq!(clip.frame_count as usize, source.frame_count(), "{name} clip {}", source.name);
        assert_eq!(clip.fps, source.fps, "{name} clip {}", source.name);
        let clip_index = manifest.clips.iter().position(|k| k.name == source.name).unwrap() as u32;
        let _ = c;
        for k in 0..clip.frame_count {
            let offset = exact_frame_offset(clip, k).unwrap();
            decode_object_frame(&view, clip_index, offset, Interpolation::Point, &mut p, &mut nrm).unwrap();
            let want = &bake.sequence.positions[source.first + k as usize];
            for (baked, &v) in p.iter().zip(prepared.vertex_order()) {
                let w = want[v as usize];
                for a in 0..3 {
                    let e = (baked[a] - w[a]).abs();
                    let limit = bound[a] * 1.0001 + 2.0 * f32::EPSILON * w[a].abs();
                    assert!(
                        e <= limit,
                        "{name} clip {} frame {k} vertex {v} axis {a}: {e} > {limit}",
                        source.name
                    );
                    worst = worst.max(e);
                }
            }
        }
    }
    eprintln!(
        "{name} {format:?}: max decode error {:.4} mm (bound {:?} mm)",
        worst * 1e3,
        bound.map(|b| b * 1e3)
    );
    worst
}

#[test]
fn openvat_cube_decodes_to_the_readme_values_and_bakes() {
    let Some(b) = read("openvat-cube", OpenVatOptions::default()) else { return };
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (20, 108));
    assert_close(b.sequence.positions[0][0], [1.0, 1.0, -1.0], 1e-6, "rest");
    assert_close(b.sequence.positions[9][0], [3.0, 1.365039, 0.366034], 2e-6, "frame 9");
    // No clip table: one looping clip over every frame, said in a note.
    assert_eq!(b.clips.len(), 1);
    assert!((b.clips[0].first, b.clips[0].last, b.clips[0].looping) == (0, 19, true));
    assert!(b.notes.iter().any(|n| n.contains("no clip table")), "{:?}", b.notes);
    // Separate normals decoded: unit.
    assert!(b.sequence.normals.as_ref().unwrap()[9].iter().all(|n| (n.length() - 1.0).abs() < 1e-5));
    // The glb's one material is not carried, and said.
    assert!(
        b.notes.iter().any(|n| n.contains("1 material(s)") && n.contains("not carried")),
        "{:?}",
        b.notes
    );
    bake_and_check("openvat-cube", &b, vat_core::format::encoding::VertexFormat::Packed64);
    bake_and_check("openvat-cube", &b, vat_core::format::encoding::VertexFormat::F16);
}

#[test]
fn openvat_cloth_decodes_to_the_readme_values_and_bakes() {
    let Some(b) = read("openvat-cloth", OpenVatOptions::default()) else { return };
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (150, 1089));
    assert_close(b.sequence.positions[75][0], [-3.450297, -7.431567, 3.450297], 2e-5, "frame 75");
    // The hand-added os-remap.Position key is ignored, and said.
    assert!(b.notes.iter().any(|n| n.contains("Position") && n.contains("ignored")), "{:?}", b.notes);
    bake_and_check("openvat-cloth", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

/// Clips at different rates (as an OpenVAT sidecar's `framerate`s may be: a Godot demo's character
/// has clips at 1, 12, 24 and 48 fps) each store their own frames once: none of a faster clip's
/// dropped, no blends of a slower one's added, every source frame decoding to itself.
#[test]
fn clips_at_their_own_rates_store_every_source_frame_once() {
    let Some(mut b) = read("openvat-cloth", OpenVatOptions::default()) else { return };
    let clip = |name: &str, first: usize, last: usize, fps: f32, looping: bool| super::ImportedClip {
        name: name.to_owned(),
        first,
        last,
        fps,
        looping,
    };
    b.clips = vec![
        clip("walk", 0, 39, 24.0, true),
        clip("twerk", 40, 99, 48.0, true),
        clip("death", 100, 104, 1.0, false),
        clip("attack", 105, 149, 12.0, true),
        clip("idle", 40, 69, 24.0, true),
    ];
    assert_eq!(b.bake_fps(), 24.0, "the rate most clips have");
    // bake_and_check asserts each clip's rate and frame count, and decodes every stored frame
    // against the source frame it names.
    bake_and_check("openvat-cloth at four rates", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

#[test]
fn openvat_cube_fractured_decodes_to_the_readme_values_and_bakes() {
    let Some(b) = read("openvat-cube-fractured", OpenVatOptions::default()) else { return };
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (180, 7240));
    assert_close(b.sequence.positions[0][0], [0.005410, 0.166180, 0.561577], 0.004, "frame 0 near rest");
    assert_close(b.sequence.positions[150][0], [0.049307, 0.136395, 0.557915], 2e-6, "frame 150");
    // Half-float steps of the 0.1-rounded bounds: at most 0.0014 here (README: <= 0.0033).
    assert!(b.source_step.iter().all(|&s| s > 0.0 && s < 0.0033), "{:?}", b.source_step);
    bake_and_check("openvat-cube-fractured", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

#[test]
fn openvat_jello_packed_normals_decode_to_the_readme_values_and_bake() {
    let Some(b) = read("openvat-jello", OpenVatOptions::default()) else { return };
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (23, 1750));
    assert_close(b.sequence.positions[10][0], [0.110226, -4.731929, 0.088417], 2e-6, "frame 10");
    // The packed normal of frame 10 (row 33).
    let n = b.sequence.normals.as_ref().unwrap()[10][0];
    assert_close(n, [-0.1064, 0.9863, -0.1240], 2e-3, "normal of frame 10");
    // `"animations": {}`: one looping clip.
    assert_eq!(b.clips.len(), 1);
    bake_and_check("openvat-jello", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

#[test]
fn openvat_soda_can_with_its_trailing_comma_imports_its_clip() {
    let Some(b) = read("openvat-soda-can", OpenVatOptions::default()) else { return };
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (121, 2368));
    assert!(b.notes.iter().any(|n| n.contains("trailing comma")), "{:?}", b.notes);
    // `Crush` 1-121 (1-based scene frames) at 30 fps, looping: rows 0..=120.
    assert_eq!(b.clips.len(), 1);
    let c = &b.clips[0];
    assert_eq!((c.name.as_str(), c.first, c.last, c.fps, c.looping), ("Crush", 0, 120, 30.0, true));
    // Decoded normals agree with the glb's at rest (README: mean dot 1.000).
    let normals = &b.sequence.normals.as_ref().unwrap()[0];
    let dir = bake_dir("openvat-soda-can").unwrap();
    let mesh = super::read_lookup_mesh(&dir.join("Can.Morph.LOD0.001.glb"), &mut super::Budget::new(1 << 30))
        .unwrap();
    let mean: f32 =
        normals.iter().zip(&mesh.normals).map(|(a, b)| a.dot(*b)).sum::<f32>() / normals.len() as f32;
    assert!(mean > 0.99, "{mean}");
    bake_and_check("openvat-soda-can", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

/// A clip rate outside 0.001 to 10,000 frames per second is refused by name, whether the sidecar
/// gives it or `--fps` does (a rate near 0 made the clip last longer than f32 seconds hold).
#[test]
fn clip_rates_outside_the_range_are_refused_by_name() {
    let Some(mut b) = read("openvat-soda-can", OpenVatOptions::default()) else { return };
    for fps in [1e-45, 0.0, -24.0, f32::NAN, 2e4, f32::INFINITY] {
        b.clips[0].fps = fps;
        let e = b.to_rig().map(|_| ()).expect_err("a rate out of range").to_string();
        assert!(e.contains("\"Crush\" rate") && e.contains("need a rate of 0.001 to 10000"), "{fps}: {e}");
    }
    for fps in [0.001, 24.0, 10_000.0] {
        b.clips[0].fps = fps;
        assert!(b.to_rig().is_ok(), "{fps}");
    }
    let json = br#"{"os-remap": {"Min": [0, 0, 0], "Max": [1, 1, 1], "Frames": 4},
        "animations": {"a": {"startFrame": 1, "endFrame": 4, "framerate": 1e30, "looping": true}}}"#;
    let e = super::openvat::parse_remap_info(std::path::Path::new("x-remap_info.json"), json)
        .map(|_| ())
        .expect_err("1e30 fps")
        .to_string();
    assert!(e.contains("framerate") && e.contains("need a rate of 0.001 to 10000"), "{e}");
}

/// Rows of the texture that no clip of the sidecar plays are not baked, and the import says which.
#[test]
fn rows_in_no_clip_are_named_in_a_note() {
    let Some(dir) = bake_dir("openvat-soda-can") else { return };
    // The soda can's sidecar with its one clip cut to scene frames 3..=100 (rows 2..=99 of 121).
    let sidecar = std::env::temp_dir().join(format!("vat-rows-in-no-clip-{}.json", std::process::id()));
    let json = r#"{"os-remap": {"Min": [-0.1, -0.1, -0.1], "Max": [0.1, 0.1, 0.1], "Frames": 121},
        "animations": {"Crush": {"startFrame": 3, "endFrame": 100, "framerate": 30, "looping": false}}}"#;
    std::fs::write(&sidecar, json).expect("a temporary sidecar");
    let options =
        OpenVatOptions { sidecar: Some(sidecar.clone()), first_frame: Some(1), ..Default::default() };
    let b = read_openvat(&dir, &options).expect("the bake with a shorter clip");
    let _ = std::fs::remove_file(&sidecar);
    let note = b.notes.iter().find(|n| n.contains("in no clip")).expect("a note on the rows left out");
    assert!(note.contains("rows 0-1, 100-120 (23 of the texture's 121 frames)"), "{note}");
    // With the whole texture in clips there is no such note.
    let whole = read("openvat-soda-can", OpenVatOptions::default()).expect("the corpus is there");
    assert!(!whole.notes.iter().any(|n| n.contains("in no clip")), "{:?}", whole.notes);
}

#[test]
fn openvat_glass_overlapping_clips_bake_over_the_same_frames() {
    let Some(dir) = bake_dir("openvat-glass") else { return };
    let options = OpenVatOptions { mesh: Some(dir.join("glass.glb")), ..Default::default() };
    let b = read("openvat-glass", options.clone()).unwrap();
    assert_eq!((b.sequence.frame_count(), b.sequence.vertex_count()), (120, 5953));
    assert_close(b.sequence.positions[60][0], [-0.814013, 0.556411, -2.366706], 2e-6, "frame 60");
    // `Break` (26-120) is listed before `Fall` (1-120); both loop at 24 fps. Sorted by first frame.
    let clips: Vec<(&str, usize, usize)> =
        b.clips.iter().map(|c| (c.name.as_str(), c.first, c.last)).collect();
    assert_eq!(clips, [("Fall", 0, 119), ("Break", 25, 119)]);
    // The proxy matches the last frame, not the first (README): offsets about 0 at row 119.
    let rest = super::read_lookup_mesh(&dir.join("glass.glb"), &mut super::Budget::new(1 << 30)).unwrap();
    let mean = |f: usize| {
        b.sequence.positions[f].iter().zip(&rest.positions).map(|(p, r)| p.distance(*r)).sum::<f32>() / 5953.0
    };
    assert!(mean(0) > 3.0 && mean(119) < 0.2, "{} {}", mean(0), mean(119));
    bake_and_check("openvat-glass", &b, vat_core::format::encoding::VertexFormat::Packed64);

    // The hand-made non-looping sidecar: three one-shot clips, `Static` a single frame.
    let options = OpenVatOptions { sidecar: Some(dir.join("VAT_Glass_non_looping.json")), ..options };
    let b = read("openvat-glass", options).unwrap();
    let clips: Vec<(&str, usize, usize, bool)> =
        b.clips.iter().map(|c| (c.name.as_str(), c.first, c.last, c.looping)).collect();
    assert_eq!(clips, [("Fall", 0, 119, false), ("Break", 25, 119, false), ("Static", 119, 119, false)]);
    bake_and_check("openvat-glass non-looping", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

#[test]
fn openvat_glass_with_the_other_mesh_decodes_elsewhere() {
    // VAT_Glass_Fall.glb (the default `<N>.glb`) has glass.glb's topology and TEXCOORD_1 but another
    // rest pose: the decoded spot value is off by millimetres, which no file check can see.
    let Some(b) = read("openvat-glass", OpenVatOptions::default()) else { return };
    let d = (b.sequence.positions[60][0] - Vec3::new(-0.814013, 0.556411, -2.366706)).length();
    assert!(d > 1e-3, "{d}");
}

#[test]
fn houdini_vat3_softbody_imports_without_its_bounds_extenders() {
    let Some(dir) = bake_dir("houdini-vat3-softbody") else { return };
    let super::houdini::HoudiniBake::Softbody(b) =
        super::houdini::read_houdini(&dir, &Default::default()).unwrap()
    else {
        panic!("a Softbody bake imports as frames")
    };
    assert_eq!(b.sequence.frame_count(), 120);
    assert!(b.notes.iter().any(|n| n.contains("_col") && n.contains("not read")), "{:?}", b.notes);
    // 6 bounds-extender vertices (2 triangles) left out, said in a note.
    assert!(
        b.notes.iter().any(|n| n.contains("6 bounds-extender vertices") && n.contains("2 triangles")),
        "{:?}",
        b.notes
    );
    // The G channel is 0 everywhere (README caveat): said, not hidden.
    assert!(b.notes.iter().any(|n| n.contains("G (y)") && n.contains("every texel")), "{:?}", b.notes);
    assert_eq!(b.clips[0].fps, 30.0);
    // X and Z decode to about the rest pose at frame 0 (README: within one 8-bit step).
    let mesh = super::read_lookup_mesh(&dir.join("vat3_softBody_mesh.glb"), &mut super::Budget::new(1 << 30))
        .unwrap();
    let kept: Vec<Vec3> = mesh
        .positions
        .iter()
        .zip(&mesh.lookup)
        .filter(|(_, l)| !(l.y >= 1.0 && l.x <= 0.0))
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(kept.len(), b.sequence.vertex_count());
    let step = b.source_step;
    for (p, r) in b.sequence.positions[0].iter().zip(&kept) {
        assert!(
            (p.x - r.x).abs() <= 2.0 * step[0] + 0.003 && (p.z - r.z).abs() <= 2.0 * step[2] + 0.003,
            "{p} vs {r}"
        );
    }
    bake_and_check("houdini-vat3-softbody", &b, vat_core::format::encoding::VertexFormat::Packed64);
}

/// The real particle bake imports into the sprite mode (read_houdini_particles), and read_houdini
/// names that mode for it: 1082 square cards over 240 frames, those VAT 3 hides at the end (scale
/// 0, parked at the origin) not alive.
#[test]
fn houdini_vat3_particles_import_into_the_sprite_mode() {
    use crate::sprite::SpriteFrames;
    let Some(dir) = bake_dir("houdini-vat3-particles") else { return };
    let e = super::houdini::read_houdini(&dir, &Default::default()).unwrap_err();
    assert!(matches!(e, crate::BakeError::Interop { .. }), "{e:?}");
    assert!(e.to_string().contains("\"Particles\"") && e.to_string().contains("sprite mode"), "{e}");
    let b = super::houdini::read_houdini_particles(&dir, &Default::default()).unwrap();
    assert_eq!(b.frame_count(), 240);
    assert_eq!(b.frame(0).unwrap().particles.len(), 1082);
    let last = b.frame(239).unwrap();
    assert_eq!(last.particles.len(), 18, "1064 cards have scale 0 at the last frame");
    let p = &b.frame(0).unwrap().particles[0].particle;
    assert!((p.size - 0.2).abs() < 1e-6 && p.rotation == 0.0, "{p:?}");
    let notes = b.notes().join("\n");
    assert!(notes.contains("1082 cards") && notes.contains("6 bounds-extender vertices"), "{notes}");
}

#[test]
fn houdini_bakes_out_of_scope_are_refused_with_what_to_do() {
    let Some(dir) = bake_dir("houdini-vat2-rigid") else { return };
    let e = super::houdini::read_houdini(&dir, &Default::default()).unwrap_err().to_string();
    assert!(
        e.contains("VAT 2") && e.contains("Rigid.mat") && e.contains(".fbx") && e.contains("glTF"),
        "{e}"
    );
}

/// A bake whose mesh was renamed (engines' demo folders ship `Plane_vat.exr` beside `Denim.glb`)
/// imports with the folder's one glTF, says so in a note, and decodes as with its own name; with
/// two candidate meshes it is refused, naming `--mesh`.
#[test]
fn a_renamed_mesh_is_the_folders_only_gltf_and_two_are_ambiguous() {
    let Some(src) = bake_dir("openvat-jello") else { return };
    let dir = std::env::temp_dir().join(format!("vat-renamed-mesh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["Cylinder-remap_info.json", "Cylinder_vat.exr"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::fs::copy(src.join("Cylinder.glb"), dir.join("jelly.glb")).unwrap();
    let renamed = read_openvat(&dir, &OpenVatOptions::default()).unwrap();
    let original = read("openvat-jello", OpenVatOptions::default()).unwrap();
    assert!(
        renamed.notes.iter().any(|n| n.contains("jelly.glb") && n.contains("only glTF")),
        "{:?}",
        renamed.notes
    );
    assert_eq!(renamed.sequence.positions, original.sequence.positions);
    std::fs::copy(src.join("Cylinder.glb"), dir.join("other.glb")).unwrap();
    let e = read_openvat(&dir, &OpenVatOptions::default()).unwrap_err().to_string();
    assert!(e.contains("2 other glTF files") && e.contains("--mesh"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A soft body whose mesh is OBJ (no lookup UVs: point `i` reads texel `i`) decodes exactly as with
/// its glTF mesh: the real flag bake's glb rewritten as an OBJ whose points are its texel columns,
/// the bounds extenders as 6 points past them.
#[test]
fn a_houdini_soft_body_with_an_obj_mesh_decodes_as_with_its_gltf_mesh() {
    use std::fmt::Write as _;
    let Some(src) = bake_dir("houdini-vat3-softbody") else { return };
    let mut budget = super::Budget::new(1 << 30);
    let mesh = super::read_lookup_mesh(&src.join("vat3_softBody_mesh.glb"), &mut budget).unwrap();
    let w = 3761usize;
    let mut point_of = Vec::new();
    let mut points: Vec<Vec3> = vec![Vec3::NAN; w];
    for (v, l) in mesh.lookup.iter().enumerate() {
        if super::houdini::is_padding_vertex(*l, 120) {
            point_of.push(points.len());
            points.push(mesh.positions[v]);
        } else {
            let c = (f64::from(l.x) * w as f64).floor() as usize;
            points[c] = mesh.positions[v];
            point_of.push(c);
        }
    }
    assert_eq!(points.len(), w + 6);
    assert!(points.iter().all(|p| p.is_finite()), "every column has a point");
    let mut obj = String::new();
    for p in &points {
        writeln!(obj, "v {} {} {}", p.x, p.y, p.z).unwrap();
    }
    let uvs = mesh.uvs.as_ref().unwrap();
    for uv in uvs {
        writeln!(obj, "vt {} {}", uv.x, 1.0 - uv.y).unwrap();
    }
    for t in mesh.indices.chunks_exact(3) {
        let corner = |v: u32| format!("{}/{}", point_of[v as usize] + 1, v + 1);
        writeln!(obj, "f {} {} {}", corner(t[0]), corner(t[1]), corner(t[2])).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("vat-houdini-obj-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["vat3_softBody_data.json", "vat3_softBody_pos.png"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("vat3_softBody_mesh.obj"), &obj).unwrap();
    let soft = |dir: &std::path::Path| match super::houdini::read_houdini(dir, &Default::default()).unwrap() {
        super::houdini::HoudiniBake::Softbody(b) => b,
        super::houdini::HoudiniBake::Rigidbody(_) => panic!("a soft body"),
    };
    let (from_obj, from_glb) = (soft(&dir), soft(&src));
    assert!(from_obj.notes.iter().any(|n| n.contains("no lookup UVs")), "{:?}", from_obj.notes);
    assert!(from_obj.notes.iter().any(|n| n.contains("6 bounds-extender vertices")), "{:?}", from_obj.notes);
    let (a, b) = (&from_obj.sequence, &from_glb.sequence);
    assert_eq!(a.indices.len(), b.indices.len());
    assert_eq!(a.frame_count(), b.frame_count());
    for f in 0..a.frame_count() {
        for (i, j) in a.indices.iter().zip(&b.indices) {
            assert_eq!(a.positions[f][*i as usize], b.positions[f][*j as usize], "frame {f}");
        }
    }
    // A mesh of another point count is refused, naming the counts.
    let more = format!("{obj}{}", "v 0 0 0\n".repeat(10));
    std::fs::write(dir.join("vat3_softBody_mesh.obj"), more).unwrap();
    let e = super::houdini::read_houdini(&dir, &Default::default()).unwrap_err().to_string();
    assert!(e.contains("has 3777 points") && e.contains("3761 a frame"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
