#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use super::*;
use crate::rig::{AnimationClip, Channel, ChannelTarget, KeyInterpolation, Mesh, Node, Transform};

/// Two cubes on two nodes: one spins about Y and rises, the other slides along X.
fn two_cubes() -> Rig {
    let cube = |name: &str, node: usize| {
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        for &(n, u, v) in
            &[(Vec3::X, Vec3::Y, Vec3::Z), (Vec3::Y, Vec3::Z, Vec3::X), (Vec3::Z, Vec3::X, Vec3::Y)]
        {
            for s in [1.0f32, -1.0] {
                for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                    positions.push(0.2 * (s * n + a * u + b * v));
                    normals.push(s * n);
                }
            }
        }
        let indices = (0..6u32).flat_map(|f| [0, 1, 2, 0, 2, 3].map(|i| f * 4 + i)).collect();
        Mesh {
            name: name.into(),
            binding: MeshBinding::Rigid { node },
            role: MeshRole::Body,
            material_ids: vec![0; positions.len()],
            joints: Vec::new(),
            weights: Vec::new(),
            positions,
            normals,
            tangents: None,
            uvs: None,
            colors: None,
            indices,
            influence_count: 0,
            full_influences: None,
            morph_targets: Vec::new(),
            default_morph_weights: Vec::new(),
        }
    };
    let node = |name: &str, x: f32| Node {
        name: name.into(),
        parent: None,
        rest: Transform { translation: Vec3::new(x, 0.5, 0.0), ..Transform::IDENTITY },
    };
    let half = std::f32::consts::FRAC_1_SQRT_2;
    Rig {
        name: "cubes".into(),
        nodes: vec![node("spinner", -1.0), node("slider", 1.0)],
        meshes: vec![cube("a", 0), cube("b", 1)],
        clips: vec![AnimationClip {
            name: "move".into(),
            channels: vec![
                Channel {
                    target: ChannelTarget::Rotation(0),
                    interpolation: KeyInterpolation::Linear,
                    times: vec![0.0, 1.0, 2.0],
                    values: vec![0.0, 0.0, 0.0, 1.0, 0.0, half, 0.0, half, 0.0, 1.0, 0.0, 0.0],
                },
                Channel {
                    target: ChannelTarget::Translation(0),
                    interpolation: KeyInterpolation::Linear,
                    times: vec![0.0, 2.0],
                    values: vec![-1.0, 0.5, 0.0, -1.0, 1.5, 0.0],
                },
                Channel {
                    target: ChannelTarget::Translation(1),
                    interpolation: KeyInterpolation::Linear,
                    times: vec![0.0, 2.0],
                    values: vec![1.0, 0.5, 0.0, 2.5, 0.5, -0.5],
                },
            ],
            start: 0.0,
            end: 2.0,
            looping: Some(false),
            known_stride: None,
            locomotion: false,
        }],
        ..Rig::default()
    }
}

#[test]
fn node_animated_meshes_bake_and_verify_within_the_bounds() {
    let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
    assert_eq!(source.pieces.len(), 2);
    assert_eq!(source.clips[0].frames.len(), 61);
    // At 1 s the spinner has turned 90 degrees about Y.
    let t = source.clips[0].frames[30][0];
    assert!(rigid::rotation_angle_between(t.rotation, [0.0, 0.0, 0.0, 1.0]).to_degrees() > 89.9);
    let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    assert_eq!(stats.bytes_per_piece_frame, 16);
    assert_eq!(stats.piece_texture_bytes, u64::from(stats.piece_texture[0] * stats.piece_texture[1]) * 16);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest().mode(), vat_core::container::VatMode::Rigid);
    let report = verify_rigid(&asset, &source).unwrap();
    assert!(report.passed, "{report:?}");
    assert_eq!(report.piece_frames, 2 * 61);
    assert!(report.rotation_max_error_deg <= ROTATION_BOUND_DEG + 1e-4, "{report:?}");
    assert!(report.rotation_max_error_deg > 0.0);
    // Deterministic.
    assert_eq!(bake_rigid(&source, &RigidBakeOptions::default()).unwrap().0, bytes);
}

/// A smooth UV sphere piece of `rings` x `2 * rings` quads around `centre`, radius 0.5 m.
fn sphere_piece(name: &str, centre: [f32; 3], rings: u32) -> RigidPiece {
    let segments = 2 * rings;
    let mut positions = Vec::new();
    for r in 0..=rings {
        let theta = std::f32::consts::PI * r as f32 / rings as f32;
        for k in 0..=segments {
            let phi = std::f32::consts::TAU * k as f32 / segments as f32;
            let n = [theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()];
            positions.push([centre[0] + 0.5 * n[0], centre[1] + 0.5 * n[1], centre[2] + 0.5 * n[2]]);
        }
    }
    let normals =
        positions.iter().map(|p| (Vec3::from(*p) - Vec3::from(centre)).normalize().to_array()).collect();
    let mut indices = Vec::new();
    for r in 0..rings {
        for k in 0..segments {
            let (a, b) = (r * (segments + 1) + k, (r + 1) * (segments + 1) + k);
            indices.extend([a, b, a + 1, a + 1, b, b + 1]);
        }
    }
    let n = positions.len();
    RigidPiece {
        name: name.into(),
        positions,
        normals,
        material_ids: vec![0; n],
        uvs: None,
        colors: None,
        indices,
        rest_pivot: centre,
    }
}

#[test]
fn rigid_bakes_have_lods_from_the_rest_pose_that_never_join_two_pieces() {
    let pieces = vec![sphere_piece("a", [0.0, 1.0, 0.0], 16), sphere_piece("b", [1.5, 1.0, 0.0], 16)];
    let frames = (0..10)
        .map(|f| {
            let t = f as f32 / 10.0;
            vec![
                PieceTransform { pivot: [0.0, 1.0 + t, 0.0], rotation: quat_array(Quat::from_rotation_y(t)) },
                PieceTransform { pivot: [1.5, 1.0, t], rotation: quat_array(Quat::from_rotation_x(2.0 * t)) },
            ]
        })
        .collect();
    let source = RigidSource {
        name: "spheres".into(),
        pieces,
        clips: vec![RigidClip { name: "fly".into(), fps: 10.0, looping: false, frames }],
        materials: None,
    };
    let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let lods = &asset.manifest().lods;
    println!("LOD triangles: {:?}", stats.lod_triangles);
    assert!(lods.len() >= 3, "{:?} ({:?})", stats.lod_triangles, stats.notes);
    assert_eq!(stats.lod_triangles[0], stats.triangles);
    assert!(stats.lod_triangles.windows(2).all(|w| w[1] < w[0]), "{:?}", stats.lod_triangles);
    assert!(lods.windows(2).all(|w| w[0].max_distance < w[1].max_distance));
    let first_b = source.pieces[0].positions.len() as u32;
    for lod in 0..lods.len() {
        let indices: Vec<u32> = asset
            .lod_index_bytes(lod)
            .unwrap()
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        for t in indices.chunks_exact(3) {
            let piece = |i: u32| i >= first_b;
            assert!(t.iter().all(|&i| piece(i) == piece(t[0])), "LOD {lod}: triangle {t:?} joins the pieces");
        }
    }
    assert!(verify_rigid(&asset, &source).unwrap().passed);
    // --lods 1 keeps every triangle in one level.
    let one = RigidBakeOptions { lods: LodOptions::Count(1), ..RigidBakeOptions::default() };
    let (bytes, stats) = bake_rigid(&source, &one).unwrap();
    assert_eq!(Asset::parse(&bytes).unwrap().manifest().lods.len(), 1);
    assert_eq!(stats.lod_triangles, vec![stats.triangles]);
}

#[test]
fn verification_fails_loudly_against_another_source() {
    let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
    let (bytes, _) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let mut moved = source.clone();
    moved.clips[0].frames[10][1].pivot[0] += 0.01;
    let report = verify_rigid(&asset, &moved).unwrap();
    assert!(!report.passed);
    assert!(report.failures.iter().any(|f| f.contains("pivot axis 0")), "{:?}", report.failures);
    let mut turned = source.clone();
    turned.clips[0].frames[5][0].rotation = quat_array(Quat::from_rotation_x(0.01));
    assert!(!verify_rigid(&asset, &turned).unwrap().passed);
    let mut fewer = source;
    fewer.pieces.pop();
    assert!(verify_rigid(&asset, &fewer).is_err());
}

#[test]
fn bad_sources_are_refused() {
    let mut rig = two_cubes();
    rig.clips[0].channels.push(Channel {
        target: ChannelTarget::Scale(1),
        interpolation: KeyInterpolation::Linear,
        times: vec![0.0, 2.0],
        values: vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
    });
    let e = RigidSource::from_rig(&rig, 30.0).unwrap_err();
    assert!(e.to_string().contains("scales"), "{e}");
    assert!(
        RigidSource::from_rig(&crate::procgen::morph_rig(false), 30.0)
            .unwrap_err()
            .to_string()
            .contains("morph targets")
    );
    let mut rig = two_cubes();
    rig.meshes[0].binding = MeshBinding::Skinned { skin: 0 };
    assert!(RigidSource::from_rig(&rig, 30.0).unwrap_err().to_string().contains("skinned"));
    assert!(RigidSource::from_rig(&two_cubes(), 0.0).is_err());
    let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
    let mut s = source.clone();
    s.pieces[0].indices.push(999);
    s.pieces[0].indices.extend([0, 0]);
    assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
    let mut s = source.clone();
    s.clips[0].frames[7].pop();
    assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
    let mut s = source.clone();
    s.clips[0].frames[3][0].pivot[1] = f32::NAN;
    assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
    let mut s = source;
    s.pieces.clear();
    assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
}

/// A mesh sequence made from a source: every piece's vertices placed at every frame, the
/// pieces' vertices interleaved (so detection must regroup them).
fn sequence_of(source: &RigidSource) -> crate::sequence::MeshSequence {
    let mut order = Vec::new();
    let longest = source.pieces.iter().map(|p| p.positions.len()).max().unwrap();
    for i in 0..longest {
        for (k, p) in source.pieces.iter().enumerate() {
            if i < p.positions.len() {
                order.push((k, i));
            }
        }
    }
    let index_of = |k: usize, i: usize| order.iter().position(|&o| o == (k, i)).unwrap() as u32;
    let indices = source
        .pieces
        .iter()
        .enumerate()
        .flat_map(|(k, p)| p.indices.iter().map(move |&i| (k, i)))
        .collect::<Vec<_>>();
    let indices = indices.into_iter().map(|(k, i)| index_of(k, i as usize)).collect();
    let positions = source.clips[0]
        .frames
        .iter()
        .map(|f| {
            order
                .iter()
                .map(|&(k, i)| {
                    let p = &source.pieces[k];
                    let w = place_f64(&f[k], p.rest_pivot, p.positions[i]);
                    Vec3::new(w[0] as f32, w[1] as f32, w[2] as f32)
                })
                .collect()
        })
        .collect();
    crate::sequence::MeshSequence {
        name: "pieces".into(),
        positions,
        normals: None,
        uvs: None,
        indices,
        fps: 30.0,
        notes: Vec::new(),
    }
}

#[test]
fn rigid_pieces_are_detected_in_a_mesh_sequence() {
    // Touching pieces (Voronoi neighbours share corners at rest) stay apart: they part later.
    let shatter = crate::procgen::shatter_with(12, 9);
    let seq = sequence_of(&shatter);
    let (source, residual) = RigidSource::from_sequence(&seq, RIGID_DETECTION_TOLERANCE).unwrap();
    assert_eq!(source.pieces.len(), shatter.pieces.len());
    assert!(residual < 1e-5, "{residual}");
    assert_eq!(source.vertex_count(), seq.vertex_count());
    // The fitted rotations are the source's (up to sign).
    for (f, frame) in source.clips[0].frames.iter().enumerate() {
        for t in frame {
            assert!(t.rotation.iter().all(|c| c.is_finite()), "frame {f}");
        }
    }
    let (bytes, _) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
    let report = verify_rigid(&Asset::parse(&bytes).unwrap(), &source).unwrap();
    assert!(report.passed, "{report:?}");
    // A vertex that leaves its piece by 1 mm at one frame makes the sequence not rigid.
    let mut bent = seq.clone();
    bent.positions[40][3].y += 1e-3;
    let e = RigidSource::from_sequence(&bent, RIGID_DETECTION_TOLERANCE).unwrap_err().to_string();
    assert!(e.contains("frame 40") && e.contains("does not move rigidly"), "{e}");
    assert!(RigidSource::from_sequence(&seq, f32::NAN).is_err());
}

/// A sequence folder is detected frame by frame from its files: the same pieces and the same
/// transforms, to the bit, as the same frames held in memory; a file bent after the check fails.
#[test]
fn rigid_pieces_are_detected_streaming_a_sequence_folder() {
    use crate::sequence::{SequenceFolder, SequenceOptions, read_sequence};
    let shatter = crate::procgen::shatter_with(6, 4);
    let mut seq = sequence_of(&shatter);
    seq.positions.truncate(24);
    let dir = std::env::temp_dir().join(format!("vat-rigid-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    crate::testdata::write_obj_frames(&seq, &dir, false);
    let options = SequenceOptions { fps: 30.0, ..Default::default() };
    let in_memory = read_sequence(&dir, &options).unwrap();
    let (expected, expected_residual) =
        RigidSource::from_sequence(&in_memory, RIGID_DETECTION_TOLERANCE).unwrap();
    let folder = SequenceFolder::open(&dir, &options).unwrap();
    let (streamed, residual) = RigidSource::from_folder(&folder, RIGID_DETECTION_TOLERANCE).unwrap();
    assert_eq!(streamed.pieces.len(), shatter.pieces.len());
    assert_eq!(residual.to_bits(), expected_residual.to_bits());
    assert_eq!(streamed.clips[0].frames.len(), 24);
    for (a, b) in streamed.pieces.iter().zip(&expected.pieces) {
        assert_eq!((&a.positions, &a.indices, a.rest_pivot), (&b.positions, &b.indices, b.rest_pivot));
    }
    for (fa, fb) in streamed.clips[0].frames.iter().zip(&expected.clips[0].frames) {
        for (a, b) in fa.iter().zip(fb) {
            assert_eq!((a.pivot, a.rotation), (b.pivot, b.rotation));
        }
    }
    // Frame 17's file rewritten after the check, a vertex 1 mm off its piece: the fit pass,
    // which reads it again, names the frame.
    let mut bent = seq.clone();
    bent.positions[17][5].x += 1e-3;
    let scratch = dir.join("bent");
    std::fs::create_dir_all(&scratch).unwrap();
    crate::testdata::write_obj_frames(&bent, &scratch, false);
    std::fs::copy(scratch.join("frame_17.obj"), dir.join("frame_17.obj")).unwrap();
    let e = RigidSource::from_folder(&folder, RIGID_DETECTION_TOLERANCE).unwrap_err().to_string();
    assert!(e.contains("frame 17") && e.contains("does not move rigidly"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Vertices that share a position at rest but part later are different pieces, even when
/// they share it for most frames; vertices that share every position are one.
#[test]
fn shared_rest_positions_part_only_when_their_paths_do() {
    // Two triangles touching at one corner (vertices 2 and 3), a third sharing every position
    // of the first (vertices 6..9 copy 0..3: one piece with it).
    let rest = [
        Vec3::ZERO,
        Vec3::X,
        Vec3::Y,
        Vec3::Y,
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(0.0, 2.0, 0.0),
        Vec3::ZERO,
        Vec3::X,
        Vec3::Y,
    ];
    let frames: Vec<Vec<Vec3>> = (0..10)
        .map(|f| {
            // The second triangle moves off only at the last frame.
            let shift = if f == 9 { Vec3::new(0.0, 0.0, 0.5) } else { Vec3::ZERO };
            rest.iter().enumerate().map(|(v, &p)| if (3..6).contains(&v) { p + shift } else { p }).collect()
        })
        .collect();
    let seq = crate::sequence::MeshSequence {
        name: "corners".into(),
        positions: frames,
        normals: None,
        uvs: None,
        indices: vec![0, 1, 2, 3, 4, 5, 6, 7, 8],
        fps: 10.0,
        notes: Vec::new(),
    };
    let (source, _) = RigidSource::from_sequence(&seq, RIGID_DETECTION_TOLERANCE).unwrap();
    let sizes: Vec<usize> = source.pieces.iter().map(|p| p.positions.len()).collect();
    assert_eq!(sizes, [6, 3]);
    // Had they never parted, the touching corner would join them.
    let mut still = seq.clone();
    still.positions[9] = still.positions[0].clone();
    let (source, _) = RigidSource::from_sequence(&still, RIGID_DETECTION_TOLERANCE).unwrap();
    assert_eq!(source.pieces.len(), 1);
}

#[test]
fn horn_fit_recovers_a_known_rotation() {
    let q = Quat::from_axis_angle(Vec3::new(0.3, 1.0, -0.2).normalize(), 2.1);
    let points = [Vec3::X, Vec3::Y, Vec3::Z, Vec3::new(0.3, -0.7, 0.2), Vec3::new(-1.0, 0.5, 0.5)];
    let shift = Vec3::new(1.0, 2.0, -3.0);
    let pairs: Vec<(Vec3, Vec3)> = points.iter().map(|&p| (p, q * p + shift)).collect();
    let c = centroid(points.iter().copied()).map(|v| v as f32);
    let (t, residual) = fit_rigid(pairs.iter().copied(), c);
    assert!(residual < 1e-5, "{residual}");
    assert!(rigid::rotation_angle_between(t.rotation, q.to_array()) < 1e-5);
}
