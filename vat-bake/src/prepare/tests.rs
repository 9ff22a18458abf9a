use super::*;

#[test]
fn options_out_of_range_are_typed_errors() {
    let bad = [
        BakeOptions { fps: 0.0, ..Default::default() },
        BakeOptions { fps: f32::NAN, ..Default::default() },
        BakeOptions { frames: Some(0), ..Default::default() },
        BakeOptions { max_texture_dim: 0, ..Default::default() },
        BakeOptions { max_texture_dim: MAX_TEXTURE_DIM + 1, ..Default::default() },
        BakeOptions { clips: Some(vec![]), ..Default::default() },
        BakeOptions { lods: LodOptions::Count(0), ..Default::default() },
    ];
    for o in bad {
        assert!(matches!(validate_options(&o), Err(BakeError::InvalidOption { .. })), "{o:?}");
    }
    assert!(validate_options(&BakeOptions::default()).is_ok());
}

#[test]
fn blob_table_stores_identical_bytes_once() {
    let mut t = BlobTable::default();
    let a = t.add(vec![1, 2, 3]);
    let b = t.add(vec![1, 2, 4]);
    let c = t.add(vec![1, 2, 3]);
    assert_eq!((a, b, c), (BlobId(0), BlobId(1), BlobId(0)));
    assert_eq!((t.blobs.len(), t.deduplicated), (2, 1));
}

use super::fixtures::{RINGS, SEGMENTS, tube_rig};
use vat_core::container::Asset;

fn bones_options() -> BakeOptions {
    BakeOptions { bones: true, tangents: true, captures: vec!["spine".into()], ..Default::default() }
}

#[test]
fn tube_bake_has_every_section() {
    let rig = tube_rig(0.15);
    let bake = prepare(&rig, &bones_options()).unwrap();
    let bytes = bake.to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    let n = (RINGS * SEGMENTS) as u32;
    assert_eq!(m.vertex_count, n);
    // sway: looping 1 s at 30 fps -> 30 frames; nod: one-shot 0.5 s -> 16 frames.
    let frames: Vec<(&str, u32, u32)> =
        m.clips.iter().map(|c| (c.name.as_str(), c.first_frame, c.frame_count)).collect();
    assert_eq!(frames, vec![("sway", 0, 30), ("nod", 30, 16)]);
    assert_eq!((m.clips[0].stride, m.clips[1].stride), (1.25, 0.0));
    assert_eq!(bake.stats.frames, 46);
    assert_eq!(bake.stats.bytes_per_vertex_frame, 8);
    let va = m.vertex_animation.as_ref().unwrap();
    assert_eq!((va.layout.vertex_count, va.layout.frame_count), (n, 46));
    assert!(va.tangents.is_some());
    // LODs: 5 levels requested over the one vertex set, each kept one with fewer triangles and a
    // later switch than the previous; the dropped ones are reported.
    assert_eq!(m.lods.len() + bake.stats.stalled_lods.len(), 5);
    assert_eq!(m.lods[0].triangle_count as usize, (RINGS - 1) * SEGMENTS * 2);
    for w in m.lods.windows(2) {
        assert!(w[1].triangle_count < w[0].triangle_count && w[1].max_distance > w[0].max_distance);
    }
    assert_eq!(
        bake.stats.warnings.iter().filter(|w| w.contains("dropped")).count(),
        bake.stats.stalled_lods.len()
    );
    assert_eq!(m.lods.last().unwrap().max_distance, f32::INFINITY);
    // Skeleton: root is not a joint; hips, spine, head are (sorted by node, parents first).
    let names: Vec<(&str, Option<u32>)> = m.bones.iter().map(|b| (b.name.as_str(), b.parent)).collect();
    assert_eq!(names, vec![("hips", None), ("spine", Some(0)), ("head", Some(1))]);
    assert_eq!(m.sockets.len(), 1);
    assert_eq!(m.sockets[0].bone, 2);
    assert_eq!(m.sockets[0].local[10], 0.5, "socket offset, column-major translation y");
    let captured: Vec<u32> = m.captures.iter().map(|c| c.bone).collect();
    assert_eq!(captured, vec![1, 2], "the spine (asked) and the head (socket)");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        (m.attachments[0].name.as_str(), m.attachments[0].socket, m.attachments[0].vertex_count),
        ("cap", 0, 4)
    );
    let kinds: Vec<StreamKind> = m.streams.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        vec![
            StreamKind::RestPosition,
            StreamKind::RestNormal,
            StreamKind::RestTangent,
            StreamKind::Uv0,
            StreamKind::MaterialId
        ]
    );
    let ba = m.bone_animation.as_ref().unwrap();
    assert_eq!((ba.layout.bone_count, ba.influences), (3, 4));
}

#[test]
fn bone_texture_and_captures_hold_fresh_matrices() {
    let rig = tube_rig(0.15);
    let bake = prepare(&rig, &bones_options()).unwrap();
    let bytes = bake.to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    let bone_texture = asset.bone_texture().unwrap();
    let layout = m.bone_animation.as_ref().unwrap().layout;
    let float = |b: &[u8], i: usize| f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    let nod = &m.clips[1];
    for k in [0, 7, nod.frame_count - 1] {
        let frame = nod.first_frame + k;
        let globals =
            global_matrices(&rig, &sample_pose(&rig, &rig.clips[1], frame_time(&rig.clips[1], nod, k)));
        // Bone 2 is the head joint: node 3, inverse bind of its rest at y = 1.2.
        let expected = globals[3] * Mat4::from_translation(Vec3::new(0.0, 1.2, 0.0)).inverse();
        for r in 0..3u32 {
            let t = layout.texel_index(frame, 2, r) as usize * 4;
            for c in 0..4 {
                assert_eq!(
                    float(bone_texture, t + c),
                    expected.col(c)[r as usize],
                    "frame {frame} row {r} col {c}"
                );
            }
        }
        let capture = asset.capture_bytes(2).unwrap();
        let want = affine_3x4(&globals[3]);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(float(capture, frame as usize * 12 + i), *w);
        }
    }
    let joints = asset.joint_bytes().unwrap();
    let weights = asset.weight_bytes().unwrap();
    for v in 0..m.vertex_count as usize {
        let sum: f32 = (0..4).map(|s| float(weights, v * 4 + s)).sum();
        assert!((sum - 1.0).abs() <= 4.0 * f32::EPSILON, "vertex {v} weights sum to {sum}");
        assert!(
            (0..4).all(|s| u16::from_le_bytes([joints[(v * 4 + s) * 2], joints[(v * 4 + s) * 2 + 1]]) < 3)
        );
    }
}

#[test]
fn one_shot_frames_end_exactly_at_the_clip_end() {
    let rig = tube_rig(0.15);
    let plan = plan_clips(&rig, &BakeOptions::default()).unwrap();
    let nod = &plan.row_map.clips()[1];
    assert_eq!(frame_time(&rig.clips[1], nod, 0), 0.04);
    assert_eq!(frame_time(&rig.clips[1], nod, nod.frame_count - 1), 0.54);
    // k / fps in f64, added to the start once: frame 3 of sway is exactly 0.1 s.
    assert_eq!(frame_time(&rig.clips[0], &plan.row_map.clips()[0], 3), 0.1);
    let frames = plan_clips(&rig, &BakeOptions { frames: Some(8), ..Default::default() }).unwrap();
    let counts: Vec<u32> = frames.row_map.clips().iter().map(|c| c.frame_count).collect();
    assert_eq!(counts, vec![8, 8]);
    assert!((frames.row_map.clips()[1].fps - 14.0).abs() < 1e-4, "(8 - 1) / 0.5 s");
}

#[test]
fn clips_named_in_clip_fps_are_sampled_at_their_own_rate() {
    let rig = tube_rig(0.15);
    let (sway, nod) = (rig.clips[0].name.clone(), rig.clips[1].name.clone());
    let options = BakeOptions { clip_fps: vec![(nod.clone(), 10.0)], ..Default::default() };
    let plan = plan_clips(&rig, &options).expect("nod at 10 fps plans");
    let (a, b) = (&plan.row_map.clips()[0], &plan.row_map.clips()[1]);
    // sway keeps --fps (30); nod (one-shot, 0.5 s) at 10 fps stores 0.5 * 10 + 1 frames.
    assert_eq!((a.fps, b.fps, b.frame_count), (30.0, 10.0, 6));
    assert_eq!(frame_time(&rig.clips[1], b, 5), 0.54);
    // --frames still decides every clip's samples.
    let frames =
        plan_clips(&rig, &BakeOptions { frames: Some(8), ..options.clone() }).expect("--frames 8 plans");
    assert!(frames.row_map.clips().iter().all(|c| c.frame_count == 8));
    // A rate that is no rate, and a clip the rig does not have, are refused by name.
    for (name, fps, says) in [(nod.clone(), 0.0, "expected a finite number > 0"), (sway, f32::NAN, "NaN")] {
        let bad = BakeOptions { clip_fps: vec![(name.clone(), fps)], ..Default::default() };
        let e = validate_options(&bad).expect_err("a rate that is no rate").to_string();
        assert!(e.contains(&name) && e.contains(says), "{e}");
    }
    let unknown = BakeOptions { clip_fps: vec![("wave".to_owned(), 24.0)], ..Default::default() };
    let e = plan_clips(&rig, &unknown).map(|_| ()).expect_err("an unknown clip is refused").to_string();
    assert!(e.contains("no clip named \"wave\"") && e.contains(&nod), "{e}");
}

#[test]
fn a_bake_the_reader_would_refuse_is_refused_before_writing() {
    use crate::testdata::{LargeRigShape, large_rig};
    // 4,100 joints: the vertex set takes them (joints are u16), a .vat holds 4,096 bones, with or
    // without the bone texture (the skeleton is always stored).
    let rig = large_rig(LargeRigShape { primitives: 1, grid: 3, joints: 4100, frames: 2 });
    for bones in [true, false] {
        let options = BakeOptions { bones, lods: LodOptions::Count(1), ..BakeOptions::default() };
        let m = prepare(&rig, &options).unwrap_err().to_string();
        for part in ["needs 4100 bones", "4096", "max_bones"] {
            assert!(m.contains(part), "{m:?} lacks {part:?}");
        }
    }
    // 4,097 one-frame clips: more than the reader's 4,096, refused before writing, named.
    let mut rig = large_rig(LargeRigShape { primitives: 1, grid: 3, joints: 2, frames: 2 });
    let pose = rig.clips[0].clone();
    rig.clips = (0..4097)
        .map(|i| crate::rig::AnimationClip {
            name: format!("pose{i}"),
            channels: Vec::new(),
            end: pose.start,
            ..pose.clone()
        })
        .collect();
    let options = BakeOptions { lods: LodOptions::Count(1), ..BakeOptions::default() };
    let m = prepare(&rig, &options).unwrap_err().to_string();
    for part in ["clip count = 4097", "4096", "would not read back", "--clips"] {
        assert!(m.contains(part), "{m:?} lacks {part:?}");
    }
    // Within the limits the same rig reads back.
    rig.clips.truncate(4096);
    let vat = prepare(&rig, &options).unwrap();
    vat_core::container::Asset::parse(&vat.to_vat_bytes().unwrap()).unwrap();
}

/// Material textures are charged: the images the rig holds and the arrays built from them (with
/// their mip chains), so a many-texture bake is refused before it builds them.
#[test]
fn the_estimate_charges_material_images_and_texture_arrays() {
    let bytes = crate::testdata::textured_humanoid_glb();
    let rig = crate::gltf_import::import_slice(&bytes, None, "textured").unwrap();
    let materials = rig.materials.clone().unwrap();
    let images: u64 =
        materials.color_images.iter().chain(&materials.data_images).map(|i| i.rgba.len() as u64).sum();
    assert!(images > 0);
    let bare = Rig { materials: None, ..rig.clone() };
    let options = BakeOptions::default();
    let frames = plan_clips(&rig, &options).unwrap().row_map.total_frames();
    let with = estimate_bake_bytes(&rig, &options, frames).unwrap();
    let without = estimate_bake_bytes(&bare, &options, frames).unwrap();
    let arrays = crate::textures::material_texture_bytes(&materials, options.material_texture_size);
    assert_eq!(with - without, images + arrays);
    // The arrays' real size: every layer's mip chain, as texture_array builds it.
    let mut notes = Vec::new();
    let built: u64 = [
        (&materials.color_images, vat_core::container::TextureColorSpace::Srgb),
        (&materials.data_images, vat_core::container::TextureColorSpace::Linear),
    ]
    .into_iter()
    .filter_map(|(i, space)| {
        crate::textures::texture_array(i, space, options.material_texture_size, &mut notes)
    })
    .map(|(_, blob)| blob.len() as u64)
    .sum();
    assert!(arrays >= 2 * built, "{arrays} < 2 x {built}");
    // Refused under a budget that holds the rest but not the textures.
    let tight = BakeOptions { max_memory: without + images, ..BakeOptions::default() };
    assert!(matches!(prepare(&rig, &tight), Err(BakeError::OverBudget { .. })));
}

#[test]
fn bakes_over_the_memory_budget_are_refused_before_allocating() {
    let rig = tube_rig(0.15);
    let options = BakeOptions::default();
    let frames = plan_clips(&rig, &options).unwrap().row_map.total_frames();
    let needed = estimate_bake_bytes(&rig, &options, frames).unwrap();
    // The estimate covers at least the vertex texture written twice (texture and .vat bytes).
    let layout = VertexTextureLayout::new(rig.body_vertex_count() as u32, frames, MAX_TEXTURE_DIM).unwrap();
    assert!(needed >= 2 * layout.byte_len(8), "{needed}");
    let tight = BakeOptions { max_memory: needed - 1, ..BakeOptions::default() };
    match prepare(&rig, &tight) {
        Err(e @ BakeError::OverBudget { .. }) => {
            let m = e.to_string();
            for part in [needed.to_string(), (needed - 1).to_string(), "--max-memory".into(), "tube".into()] {
                assert!(m.contains(&part), "{m:?} lacks {part:?}");
            }
        }
        other => panic!("{other:?}"),
    }
    // Exactly the estimate is enough.
    prepare(&rig, &BakeOptions { max_memory: needed, ..BakeOptions::default() }).unwrap();
    // A frame count that cannot fit the texture limit is refused with the numbers, up front.
    let many = BakeOptions { fps: 2000.0, max_texture_dim: 256, ..BakeOptions::default() };
    match prepare(&rig, &many) {
        Err(e @ BakeError::Core(vat_core::Error::TextureTooLarge { .. })) => {
            assert!(e.to_string().contains("256"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_rigs_and_options_are_typed_errors() {
    let rig = tube_rig(0.15);
    let unknown = BakeOptions { clips: Some(vec!["dance".into()]), ..Default::default() };
    assert!(matches!(prepare(&rig, &unknown), Err(BakeError::InvalidOption { option: "--clips", .. })));
    let capture = BakeOptions { captures: vec!["tail".into()], ..Default::default() };
    assert!(matches!(prepare(&rig, &capture), Err(BakeError::InvalidOption { option: "--capture", .. })));
    let one = BakeOptions { frames: Some(1), ..Default::default() };
    assert!(matches!(prepare(&rig, &one), Err(BakeError::InvalidOption { option: "--frames", .. })));
    // --tangents on a mesh without them generates them (MikkTSpace from its UVs) and says so.
    let mut no_tangents = rig.clone();
    no_tangents.meshes[0].tangents = None;
    let tangents = BakeOptions { tangents: true, ..Default::default() };
    let generated = prepare(&no_tangents, &tangents).unwrap();
    assert!(generated.manifest.vertex_animation.as_ref().unwrap().tangents.is_some());
    assert_eq!(generated.stats.notes.len(), 1, "{:?}", generated.stats.notes);
    assert!(generated.stats.notes[0].contains("MikkTSpace"), "{:?}", generated.stats.notes);
    // Verified against the source, whose tangents are generated the same way.
    let report = crate::verify::verify_prepared(&generated, &no_tangents).unwrap();
    assert!(report.passed && report.tangent_max_error_deg.is_some(), "{:?}", report.failures);
    let mut nan = rig.clone();
    nan.clips[0].channels[0].values[5] = f32::NAN;
    assert!(matches!(prepare(&nan, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    let mut sockets = rig.clone();
    sockets.sockets.push(sockets.sockets[0].clone());
    assert!(matches!(prepare(&sockets, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    sockets.sockets[1].name = "tail".into();
    sockets.sockets[1].node = 99;
    assert!(matches!(prepare(&sockets, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    let mut cap = rig.clone();
    cap.meshes[1].role = MeshRole::Attachment { socket: 5 };
    assert!(matches!(prepare(&cap, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    cap.meshes[1].role = MeshRole::Attachment { socket: 0 };
    cap.meshes[1].indices.push(7);
    assert!(matches!(prepare(&cap, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
    let absurd = BakeOptions { fps: 4e8, ..Default::default() };
    assert!(matches!(prepare(&rig, &absurd), Err(BakeError::InvalidOption { option: "--fps", .. })));
    let tiny = BakeOptions { max_texture_dim: 16, ..Default::default() };
    assert!(matches!(prepare(&rig, &tiny), Err(BakeError::Core(_))), "160 x 46 texels do not fit 16 x 16");
    // A subset bakes only the named clips.
    let subset =
        prepare(&rig, &BakeOptions { clips: Some(vec!["nod".into()]), ..Default::default() }).unwrap();
    assert_eq!(subset.manifest().clips.len(), 1);
}

#[test]
fn batch_shares_the_sampled_skeleton_and_refuses_mismatches() {
    let (a, b) = (tube_rig(0.15), tube_rig(0.2));
    let options = bones_options();
    let bakes = prepare_batch(&[a.clone(), b.clone()], &options).unwrap();
    let texture = |bake: &PreparedBake| {
        let id = bake.manifest.bone_animation.as_ref().unwrap().texture;
        Arc::clone(&bake.blobs[id.0 as usize])
    };
    assert!(Arc::ptr_eq(&texture(&bakes[0]), &texture(&bakes[1])), "one bone texture for both");
    // The batch gives the same bytes as baking each rig alone.
    assert_eq!(bakes[1].to_vat_bytes().unwrap(), prepare(&b, &options).unwrap().to_vat_bytes().unwrap());
    let mut other = b.clone();
    other.nodes[2].rest.translation.y = 0.7;
    assert!(matches!(prepare_batch(&[a.clone(), other], &options), Err(BakeError::InvalidInput { .. })));
    let mut morph = b.clone();
    morph.clips[1].channels[1].values[1] = f32::NAN;
    assert!(matches!(prepare_batch(&[a.clone(), morph], &options), Err(BakeError::InvalidInput { .. })));
    let mut clips = b;
    clips.clips[0].end = 1.1;
    assert!(matches!(prepare_batch(&[a, clips], &options), Err(BakeError::InvalidInput { .. })));
    assert!(prepare_batch(&[], &options).is_err());
}

#[test]
fn write_is_atomic_and_readable() {
    let rig = tube_rig(0.15);
    let bake = prepare(&rig, &BakeOptions::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("vat-bake-prepare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tube.vat");
    bake.write(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, bake.to_vat_bytes().unwrap());
    assert!(Asset::parse(&bytes).is_ok());
    let missing = dir.join("no-such-dir").join("tube.vat");
    assert!(bake.write(&missing).is_err());
    assert!(!missing.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn textures_equal_vat_cores_encoder_of_the_skinned_frames() {
    // The default path (each frame encoded from the skinning lanes), the block path (tangents,
    // other formats, precise rounding) and a rig with an animated morph: texel for texel what
    // vat-core encodes from `skin_frames_into`'s ground truth, in the box of every position.
    let rig = tube_rig(0.15);
    let cases = [
        BakeOptions::default(),
        BakeOptions { tangents: true, ..Default::default() },
        BakeOptions { format: VertexFormat::Unorm16, frames: Some(5), ..Default::default() },
        BakeOptions { normal_rounding: NormalRounding::Precise, frames: Some(3), ..Default::default() },
        BakeOptions { optimize_vertex_order: false, frames: Some(4), ..Default::default() },
    ];
    for options in cases {
        let bake = prepare(&rig, &options).unwrap();
        let (set, order) = baked_vertex_set(&rig, options.optimize_vertex_order).unwrap();
        assert_eq!(bake.vertex_order(), order.as_slice());
        let samples = plan_clips(&rig, &options).unwrap().samples(&rig);
        let len = samples.len() * set.vertex_count();
        let (mut p, mut n, mut t) = (vec![[0.0f32; 3]; len], vec![[0.0f32; 3]; len], vec![[0.0f32; 4]; len]);
        skin::skin_frames_into(&rig, &set, &samples, &mut p, &mut n, Some(&mut t)).unwrap();
        let va = bake.manifest().vertex_animation.as_ref().unwrap();
        let bounds = PositionBounds::from_points(p.iter().copied()).unwrap();
        assert_eq!(va.bounds, bounds, "{options:?}");
        let want = encoding::encode_vertex_texture(
            &va.layout,
            options.format,
            &bounds,
            va.position_bits,
            &p,
            &n,
            options.normal_rounding,
        )
        .unwrap();
        let got = bake.vertex_textures();
        assert!(got.iter().copied().eq(want.iter().map(Vec::as_slice)), "{options:?}");
        if options.tangents {
            let tangents = bake.blob(va.tangents.unwrap()).unwrap();
            assert_eq!(tangents.len() as u64, va.layout.byte_len(8));
            for (i, (t, n)) in t.iter().zip(&n).enumerate() {
                let q = encoding::tangent_frame_to_quat(*n, *t).map(encoding::f32_to_f16_bits);
                let texel: Vec<u16> =
                    tangents[i * 8..i * 8 + 8].chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
                assert_eq!(texel, q, "tangent texel {i}");
            }
        }
    }
}

#[test]
fn parallel_encode_equals_vat_cores_encoder() {
    // 3 chunks and a partial one, every format.
    let n = 3 * ENCODE_CHUNK_TEXELS + 123;
    let layout = VertexTextureLayout::new(n as u32, 1, MAX_TEXTURE_DIM).unwrap();
    let positions: Vec<[f32; 3]> =
        (0..n).map(|i| [(i % 97) as f32 * 0.01, (i % 89) as f32 * 0.02, 0.5]).collect();
    let normals: Vec<[f32; 3]> = (0..n).map(|i| [(i % 7) as f32 - 3.0, (i % 5) as f32 - 2.0, 1.0]).collect();
    let bounds = PositionBounds::from_points(positions.iter().copied()).unwrap();
    let formats = VertexFormat::TEXTURED;
    for format in formats {
        let bits = if format == VertexFormat::Packed64 {
            encoding::allocate_position_bits(bounds.extent)
        } else {
            [0; 3]
        };
        for rounding in [NormalRounding::Nearest, NormalRounding::Precise] {
            let ours = encode_vertex_textures(&layout, format, &bounds, bits, &positions, &normals, rounding)
                .unwrap();
            let core = encoding::encode_vertex_texture(
                &layout, format, &bounds, bits, &positions, &normals, rounding,
            )
            .unwrap();
            assert!(ours == core, "{format:?} {rounding:?}");
        }
    }
}

#[test]
fn humanoid_lods_strictly_decrease_over_the_one_vertex_set() {
    let rig = crate::procgen::humanoid();
    // Two frames per clip: the LOD chain depends on the mesh (and four reference poses) only.
    let bake = prepare(&rig, &BakeOptions { frames: Some(2), ..Default::default() }).unwrap();
    let counts = &bake.stats.triangle_counts;
    assert_eq!(counts.len(), 5);
    assert_eq!(counts[0] as usize, VertexSet::from_rig(&rig).unwrap().indices.len() / 3);
    for w in counts.windows(2) {
        assert!(w[1] < w[0], "not strictly decreasing: {counts:?}");
    }
    assert!(bake.stats.stalled_lods.is_empty(), "{:?}", bake.stats.stalled_lods);
    // Within meshopt's tolerance of the default ratios 1, 0.316, 0.1, 0.0316, 0.01 (its last
    // collapses may overshoot a little; closed tubes never stop it early).
    let ratios = LodOptions::default().ratios().unwrap();
    for (c, r) in counts.iter().zip(&ratios) {
        let target = f64::from(*r) * f64::from(counts[0]);
        assert!((f64::from(*c) - target).abs() <= 0.1 * target + 2.0, "{c} triangles for target {target}");
    }
    let m = bake.manifest();
    let indices = bake.blob(m.indices.unwrap()).unwrap();
    assert!(indices.chunks_exact(4).all(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) < m.vertex_count));
    assert_eq!(m.attachments.len(), 1, "the cap");
    assert_eq!(m.sockets[0].name, "head");
    // Strides of the gaits come through to the clip table.
    for clip in &m.clips {
        let source = rig.clips.iter().find(|c| c.name == clip.name).unwrap();
        let want = if source.locomotion { source.known_stride.unwrap() } else { 0.0 };
        assert_eq!(clip.stride, want, "{}", clip.name);
    }
}
