use super::*;

#[test]
fn obj_points_are_followed_through_polygons_groups_and_relative_indices() {
    // A quad and a pentagon in two objects, the second with negative (relative) indices and
    // per-corner texture coordinates that split one point into two vertices.
    let obj = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\no a\nf 1/1 2/2 3/3 4/4\n\
o b\nv 2 0 0\nv 3 0 0\nv 3 1 0\nv 2.5 2 0\nv 2 1 0\nf -5/1 -4/2 -3/3 -2/4 -1/1\nf 3/1 2/2 5/3\n";
    let p = read_obj_points(Path::new("t.obj"), obj).unwrap();
    assert_eq!(p.point_count, 9);
    for (v, &pt) in p.point_of.iter().enumerate() {
        let want = [
            [0., 0., 0.],
            [1., 0., 0.],
            [1., 1., 0.],
            [0., 1., 0.],
            [2., 0., 0.],
            [3., 0., 0.],
            [3., 1., 0.],
            [2.5, 2., 0.],
            [2., 1., 0.],
        ];
        assert_eq!(p.positions[v].to_array(), want[pt as usize], "vertex {v}");
    }
    // Point 2 (1, 1, 0) is used with two texture coordinates: two vertices, one point.
    assert_eq!(p.point_of.iter().filter(|&&q| q == 2).count(), 2);
    assert_eq!(p.indices.len(), 3 * (2 + 3 + 1));
}
use crate::prepare::{BakeOptions, prepare};
use crate::verify::verify_prepared;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-sequence-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A "mesh cache" glTF (frames as morph targets, a STEP weights animation, as other tools export
/// them) bakes to its frames: every baked frame decodes, independently of the rig's sampling, to
/// the source frame within the format's bound.
#[test]
fn a_step_morph_mesh_cache_bakes_each_frame_onto_its_key() {
    use vat_core::container::Asset;
    use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
    use vat_core::playback::Interpolation;
    let mut seq = crate::procgen::cloth_sequence();
    seq.positions.truncate(20);
    seq.normals.as_mut().unwrap().truncate(20);
    let mut rig = seq.clone().into_morph_rig().unwrap();
    rig.clips[0].channels[0].interpolation = KeyInterpolation::Step;
    let glb = crate::export::export_glb(&rig).unwrap();
    let imported = crate::gltf_import::import_slice(&glb, None, "cache").unwrap();
    let bake =
        prepare(&imported, &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() })
            .unwrap();
    let bytes = bake.to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let bound =
        vat_core::format::encoding::position_error_bound(view.format, view.position_bits, &view.bounds);
    let clip = &asset.manifest().clips[0];
    assert_eq!(clip.frame_count, 20);
    let n = seq.vertex_count();
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    for k in 0..20u32 {
        let offset = crate::verify::exact_frame_offset(clip, k).unwrap();
        decode_object_frame(&view, 0, offset, Interpolation::Point, &mut p, &mut nrm).unwrap();
        for (baked, &source) in p.iter().zip(bake.vertex_order()) {
            let want = seq.positions[k as usize][source as usize];
            for a in 0..3 {
                // The format's bound, plus the one f32 rounding of `p0 + (pk - p0)`.
                let limit = bound[a] + f32::EPSILON * want[a].abs();
                let e = (baked[a] - want[a]).abs();
                assert!(e <= limit, "frame {k} vertex {source} axis {a}: {e} > {limit}");
            }
        }
    }
}

#[test]
fn names_sort_with_numbers_by_value() {
    let mut names = vec!["f10.obj", "f2.obj", "f1.obj", "f02.obj", "a.obj", "f1a.obj"];
    names.sort_by(|a, b| natural_order(a, b));
    assert_eq!(names, ["a.obj", "f1.obj", "f1a.obj", "f2.obj", "f02.obj", "f10.obj"]);
}

#[test]
fn recomputed_normals_keep_split_vertices_apart() {
    // Two triangles folded at 90 degrees along the edge x = 0: welded, the shared edge's normals
    // average both faces; split (the second triangle with its own copies), each keeps its face's.
    let p = [Vec3::ZERO, Vec3::Y, Vec3::X, Vec3::Z];
    let welded = smooth_normals(&p, &[0, 1, 2, 0, 3, 1]);
    // Faces: (0, Y, X) has normal Y x X = -Z, (0, Z, Y) has Z x Y = -X.
    assert!((welded[0] - Vec3::new(-1.0, 0.0, -1.0).normalize()).length() < 1e-6, "{welded:?}");
    let split_p = [p[0], p[1], p[2], p[0], p[3], p[1]];
    let split = smooth_normals(&split_p, &[0, 1, 2, 3, 4, 5]);
    assert_eq!(split[0], Vec3::NEG_Z);
    assert_eq!(split[3], Vec3::NEG_X);
}

#[test]
fn the_cloth_bakes_loops_and_verifies_against_its_frames() {
    let seq = crate::procgen::cloth_sequence();
    assert_eq!(seq.frame_count(), 61);
    assert!(seq == crate::procgen::cloth_sequence(), "deterministic");
    // The banner moves, the pole does not.
    let moved =
        seq.positions[0].iter().zip(&seq.positions[15]).map(|(a, b)| a.distance(*b)).fold(0.0, f32::max);
    assert!(moved > 0.05, "{moved}");
    assert!(seq.positions.iter().all(|f| f[..24] == seq.positions[0][..24]));
    let rig = crate::procgen::cloth().unwrap();
    let bake = prepare(&rig, &BakeOptions::default()).unwrap();
    // 2 s at 30 fps; the last source frame, a copy of the first, is the loop's wrap.
    assert_eq!(bake.stats.frames, 60);
    assert!(bake.stats.clip_looping[0].looping, "{:?}", bake.stats.clip_looping);
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed, "{:?}", report.failures);
}

#[test]
fn an_obj_folder_reads_back_the_frames_it_was_written_from() {
    let seq = crate::procgen::cloth_sequence();
    for normals in [true, false] {
        let dir = scratch(if normals { "obj-normals" } else { "obj-plain" });
        crate::testdata::write_obj_frames(&seq, &dir, normals);
        std::fs::write(dir.join("notes.txt"), "not a frame").unwrap();
        let read = read_sequence(&dir, &SequenceOptions::default()).unwrap();
        assert_eq!(read.frame_count(), 61);
        // Frame order is number order (frame_10 after frame_9), and every triangle corner has its
        // source position, bit for bit (the reader numbers vertices in its own order).
        assert_eq!(read.indices.len(), seq.indices.len());
        for (k, frame) in read.positions.iter().enumerate() {
            let same = read
                .indices
                .iter()
                .zip(&seq.indices)
                .all(|(&r, &s)| frame[r as usize] == seq.positions[k][s as usize]);
            assert!(same, "frame {k} differs");
        }
        assert_eq!(read.normals.is_some(), normals);
        let rig = read.into_rig().unwrap();
        let bake =
            prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(2), ..Default::default() })
                .unwrap();
        let report = verify_prepared(&bake, &rig).unwrap();
        assert!(report.passed, "{report:#?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The folder's streamed rig bakes to exactly the bytes of the same frames held in memory, and
/// reads every frame file again per pass instead of keeping them.
#[test]
fn a_streamed_folder_bakes_the_bytes_of_its_frames_in_memory() {
    let mut seq = crate::procgen::cloth_sequence();
    seq.positions.truncate(16);
    seq.normals.as_mut().unwrap().truncate(16);
    let dir = scratch("streamed");
    crate::testdata::write_obj_frames(&seq, &dir, true);
    let options = SequenceOptions::default();
    let streamed = sequence_rig(&dir, &options).unwrap();
    let in_memory = read_sequence(&dir, &options).unwrap().into_rig().unwrap();
    assert!(streamed.meshes[0].morph_targets.is_empty() && streamed.clips[0].channels.is_empty());
    let bake_options = BakeOptions { lods: crate::lods::LodOptions::Count(2), ..Default::default() };
    let a = prepare(&streamed, &bake_options).unwrap();
    let b = prepare(&in_memory, &bake_options).unwrap();
    assert!(a.to_vat_bytes().unwrap() == b.to_vat_bytes().unwrap(), "the two bakes differ");
    let report = verify_prepared(&a, &streamed).unwrap();
    assert!(report.passed, "{:?}", report.failures);
    // Options that need a skeleton or tangent frames are refused by name.
    for (flag, options) in [
        ("--bones", BakeOptions { bones: true, ..bake_options.clone() }),
        ("--tangents", BakeOptions { tangents: true, ..bake_options.clone() }),
        ("--root-motion", BakeOptions { root_motion: true, ..bake_options.clone() }),
    ] {
        let e = prepare(&streamed, &options).unwrap_err().to_string();
        assert!(e.contains(flag) && e.contains("mesh sequence"), "{flag}: {e}");
    }
    // glTF cannot carry the streamed frames; the morph-target form exports.
    let e = crate::export::export_glb(&streamed).unwrap_err().to_string();
    assert!(e.contains("into_morph_rig"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A frame file that changes between the check and the bake is an error naming it, not a
/// silently different bake.
#[test]
fn a_frame_file_that_changes_after_it_was_checked_fails_the_bake_naming_it() {
    let mut seq = crate::procgen::cloth_sequence();
    seq.positions.truncate(6);
    seq.normals.as_mut().unwrap().truncate(6);
    let dir = scratch("changed");
    crate::testdata::write_obj_frames(&seq, &dir, false);
    let rig = sequence_rig(&dir, &SequenceOptions::default()).unwrap();
    let frame = dir.join("frame_3.obj");
    std::fs::write(&frame, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let e = prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() })
        .unwrap_err()
        .to_string();
    assert!(e.contains("frame_3.obj") && e.contains("same topology"), "{e}");
    std::fs::remove_file(&frame).unwrap();
    let e = prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() })
        .unwrap_err()
        .to_string();
    assert!(e.contains("frame_3.obj"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// More frames than the morph-target form allows bake through the streamed form; the morph form
/// refuses them by name.
#[test]
fn a_sequence_past_the_morph_limit_bakes_streamed() {
    let frames = MAX_MORPH_SEQUENCE_FRAMES + 4;
    let base = [Vec3::ZERO, Vec3::X, Vec3::Y];
    let seq = MeshSequence {
        name: "long".into(),
        positions: (0..frames)
            .map(|k| base.iter().map(|p| *p + Vec3::Z * (k as f32 * 1e-3)).collect())
            .collect(),
        normals: None,
        uvs: None,
        indices: vec![0, 1, 2],
        fps: 60.0,
        notes: Vec::new(),
    };
    let e = seq.clone().into_morph_rig().unwrap_err().to_string();
    assert!(e.contains(&MAX_MORPH_SEQUENCE_FRAMES.to_string()), "{e}");
    let rig = seq.into_rig().unwrap();
    let bake = prepare(
        &rig,
        &BakeOptions { fps: 60.0, lods: crate::lods::LodOptions::Count(1), ..Default::default() },
    )
    .unwrap();
    assert_eq!(bake.stats.frames as usize, frames);
    let report = verify_prepared(&bake, &rig).unwrap();
    assert!(report.passed, "{:?}", report.failures);
}

#[test]
fn what_a_folder_has_besides_frames_is_said_in_one_line_each() {
    let mut seq = crate::procgen::cloth_sequence();
    seq.positions.truncate(4);
    seq.normals.as_mut().unwrap().truncate(4);
    let dir = scratch("extras");
    crate::testdata::write_obj_frames(&seq, &dir, true);
    // Frames 1 and 2 gain a line, a point and a material; frame 3 loses its normals; a readme
    // sits beside them.
    for k in [1, 2] {
        let path = dir.join(format!("frame_{k}.obj"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("mtllib flag.mtl\nusemtl cloth\n{text}l 1 2\np 3\n")).unwrap();
    }
    let path = dir.join("frame_3.obj");
    let text: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("vn "))
        .map(|l| if l.starts_with("f ") { strip_normal_refs(l) } else { l.to_owned() })
        .collect();
    let text = text.join("\n");
    std::fs::write(&path, text).unwrap();
    std::fs::write(dir.join("readme.txt"), "frames of a flag").unwrap();
    let read = read_sequence(&dir, &SequenceOptions::default()).unwrap();
    let notes = read.notes.join("\n");
    for part in [
        "1 entries that are not frame files left out (readme.txt)",
        "frame_1.obj (and 1 more frames): 2 point and line statements left out (not triangles)",
        "frame_1.obj (and 1 more frames): 2 material statements not read",
        "3 of 4 frames have normals; the normals of every frame are recomputed",
    ] {
        assert!(notes.contains(part), "{notes:?} lacks {part:?}");
    }
    assert!(read.normals.is_none());
    // They reach the rig, which the bake prints.
    assert_eq!(read.into_rig().unwrap().notes.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `f a//a b//b c//c` as `f a b c`.
fn strip_normal_refs(line: &str) -> String {
    line.split_whitespace().map(|w| w.split('/').next().unwrap_or(w)).collect::<Vec<_>>().join(" ")
}

#[test]
fn a_frame_with_other_topology_is_refused_naming_its_file() {
    let seq = crate::procgen::cloth_sequence();
    let dir = scratch("topology");
    crate::testdata::write_obj_frames(&seq, &dir, false);
    // Frame 7 loses its last triangle.
    let path = dir.join("frame_7.obj");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap();
    std::fs::write(&path, &text[..cut]).unwrap();
    let e = read_sequence(&dir, &SequenceOptions::default()).unwrap_err().to_string();
    for part in ["frame_7.obj", "same topology"] {
        assert!(e.contains(part), "{e:?} lacks {part:?}");
    }
    // A budget too small for the frames is refused with the numbers.
    let e = read_sequence(&dir, &SequenceOptions { max_memory: 100_000, ..Default::default() })
        .unwrap_err()
        .to_string();
    assert!(e.contains("memory budget") && e.contains("--max-memory"), "{e}");
    // Not an OBJ at all.
    std::fs::write(dir.join("frame_3.obj"), [0xffu8, 0xfe, 0x00, 0x41]).unwrap();
    let e = read_sequence(&dir, &SequenceOptions::default()).unwrap_err().to_string();
    assert!(e.contains("frame_3.obj"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    // An empty folder, and a bad rate.
    let empty = scratch("empty");
    assert!(
        read_sequence(&empty, &SequenceOptions::default())
            .unwrap_err()
            .to_string()
            .contains("no frame files")
    );
    let e = MeshSequence { fps: 0.0, ..seq }.into_rig().unwrap_err().to_string();
    assert!(e.contains("--fps"), "{e}");
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn a_gltf_folder_reads_each_file_as_a_frame() {
    let seq = crate::procgen::cloth_sequence();
    let dir = scratch("gltf");
    for k in [0usize, 20, 40] {
        let mut rig = MeshSequence {
            positions: vec![seq.positions[k].clone()],
            normals: seq.normals.as_ref().map(|n| vec![n[k].clone()]),
            ..seq.clone()
        }
        .into_morph_rig()
        .unwrap();
        rig.clips.clear();
        crate::export::write_glb(&rig, &dir.join(format!("f{k}.glb"))).unwrap();
    }
    let read = read_sequence(&dir, &SequenceOptions { fps: 1.5, ..Default::default() }).unwrap();
    assert_eq!(read.frame_count(), 3);
    assert!(read.positions[1] == seq.positions[20], "frame f20 is the second");
    assert_eq!(read.fps, 1.5);
    let rig = read.into_rig().unwrap();
    assert!((rig.clips[0].end - 2.0 / 1.5).abs() < 1e-6);
    let _ = std::fs::remove_dir_all(&dir);
}
