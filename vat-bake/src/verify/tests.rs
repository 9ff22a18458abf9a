use super::*;
use crate::prepare::fixtures::{RINGS, SEGMENTS, tube_rig};
use crate::prepare::{BakeOptions, prepare};
use vat_core::container::ContainerWriter;
use vat_core::format::encoding::VertexFormat;

const FORMATS: [VertexFormat; 6] = VertexFormat::TEXTURED;

#[test]
fn max_axis_distance_is_the_largest_axis_difference_and_keeps_nan() {
    // Differences of every sign and size, the largest on one axis of one point in the middle.
    let a: Vec<[f32; 3]> = (0..37).map(|i| [i as f32 * 0.1, -(i as f32), 1e-3 * i as f32]).collect();
    let mut b = a.clone();
    for (i, p) in b.iter_mut().enumerate() {
        p[i % 3] += if i % 2 == 0 { 1e-4 } else { -2e-4 };
    }
    b[20][1] -= 0.75;
    let scalar =
        a.iter().zip(&b).flat_map(|(x, y)| (0..3).map(move |k| (x[k] - y[k]).abs())).fold(0.0f32, f32::max);
    assert_eq!(max_axis_distance(&a, &b), f64::from(scalar));
    assert!(max_axis_distance(&a, &b) > 0.74);
    assert_eq!(max_axis_distance(&a, &a), 0.0);
    b[5][2] = f32::NAN;
    assert!(max_axis_distance(&a, &b).is_nan(), "a NaN position must not vanish from the figure");
}

#[test]
fn the_bone_path_error_is_the_largest_axis_error_and_keeps_nan_through_the_frames() {
    let fresh: Vec<[f32; 3]> = (0..9).map(|i| [i as f32, 0.5, -(i as f32)]).collect();
    let mut decoded = fresh.clone();
    decoded[4][2] += 0.25;
    decoded[7][0] -= 0.125;
    assert_eq!(max_axis_error_m(&decoded, &fresh), 0.25);
    assert_eq!(max_axis_error_m(&fresh, &fresh), 0.0);
    decoded[8][1] = f32::NAN;
    assert!(max_axis_error_m(&decoded, &fresh).is_nan(), "one NaN vertex makes the frame's error NaN");
    // Summed over frames, a NaN frame is not dropped by the maximum, before or after a finite one.
    let frame = |max_bone: f64| FrameErrors { max_bone, ..Default::default() };
    for order in [[0.25, f64::NAN, 0.5], [f64::NAN, 0.5, 0.25], [0.25, 0.5, f64::NAN]] {
        let mut total = FrameErrors::default();
        for e in order {
            accumulate(&mut total, &frame(e));
        }
        assert!(total.max_bone.is_nan(), "{order:?}");
    }
    let mut total = FrameErrors::default();
    accumulate(&mut total, &frame(0.25));
    accumulate(&mut total, &frame(0.5));
    assert_eq!(total.max_bone, 0.5);
}

#[test]
fn exact_frame_offsets_select_each_frame_alone() {
    for (mode, count) in [
        (ClipMode::Looping, 30),
        (ClipMode::Looping, 90),
        (ClipMode::Looping, 7),
        (ClipMode::OneShot, 61),
        (ClipMode::OneShot, 16),
        (ClipMode::OneShot, 1),
    ] {
        let clip = Clip {
            name: "c".into(),
            first_frame: 0,
            frame_count: count,
            fps: 30.0,
            mode,
            duration: 1.0,
            stride: 0.0,
        };
        for k in 0..count {
            let offset = exact_frame_offset(&clip, k).unwrap();
            let s = playback::clip_sample(&clip, offset, 0.0, 0.0, Interpolation::Point);
            let alone = (s.frames[1], s.weights) == (k, [0.0, 1.0, 0.0, 0.0])
                || (s.frames[2], s.weights) == (k, [0.0, 0.0, 1.0, 0.0]);
            assert!(alone, "{mode:?} {count} frame {k}: {s:?}");
        }
    }
}

#[test]
fn tube_bakes_and_verifies_in_every_format() {
    let rig = tube_rig(0.15);
    for format in FORMATS {
        let options = BakeOptions { format, tangents: true, ..Default::default() };
        let report = verify_prepared(&prepare(&rig, &options).unwrap(), &rig).unwrap();
        assert!(report.passed, "{format:?}: {report:#?}");
        assert_eq!(report.vertex_frames, (RINGS * SEGMENTS * 46) as u64);
        assert_eq!(report.failed_vertex_frames, 0);
        assert!(report.position_max_error_mm <= report.quantum_mm, "{format:?}");
        assert!(report.normal_max_error_deg <= report.normal_bound_deg, "{format:?}");
        assert!(report.tangent_max_error_deg.unwrap() <= report.tangent_bound_deg.unwrap(), "{format:?}");
        assert!(report.position_mean_error_mm <= report.position_max_error_mm);
        // Something was actually compared: the quantised formats cannot be exact everywhere.
        if format != VertexFormat::F32 {
            assert!(report.position_max_error_mm > 0.0 && report.normal_max_error_deg > 0.0, "{format:?}");
        }
        // Interpolating a rotating chain between frames errs more than the quantum of the fine
        // formats; reported, not failed.
        assert!(report.mid_frame_vertex_samples > 0);
        assert!(report.mid_frame_position_max_error_mm > 0.0);
    }
}

#[test]
fn unoptimised_vertex_order_verifies_too() {
    let rig = tube_rig(0.15);
    let options = BakeOptions { optimize_vertex_order: false, frames: Some(4), ..Default::default() };
    let bake = prepare(&rig, &options).unwrap();
    assert!(bake.vertex_order().iter().enumerate().all(|(i, &v)| v as usize == i));
    assert!(verify_prepared(&bake, &rig).unwrap().passed);
}

/// Rebuilds `bake`'s container with `edit` applied to a copy of blob `id`.
fn with_blob_edited(bake: &PreparedBake, id: u32, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut writer = ContainerWriter::new();
    let mut edit = Some(edit);
    for i in 0..bake.blob_count() as u32 {
        let mut bytes = bake.blob(vat_core::container::BlobId(i)).unwrap().to_vec();
        if i == id
            && let Some(f) = edit.take()
        {
            f(&mut bytes);
        }
        writer.add_blob(bytes);
    }
    writer.finish(bake.manifest().clone()).unwrap()
}

#[test]
fn a_corrupted_texture_fails_verification() {
    let rig = tube_rig(0.15);
    let bake = prepare(&rig, &BakeOptions { frames: Some(6), ..Default::default() }).unwrap();
    let id = bake.manifest().vertex_animation.as_ref().unwrap().textures[0].0;
    let clean = with_blob_edited(&bake, id, |_| {});
    assert!(verify(&Asset::parse(&clean).unwrap(), &rig).unwrap().passed);
    // Flip the top bit of vertex 37's y quantum at frame 2 (texel bits 13 + 12 of w0 for a
    // 13/14/13 split, or thereabouts: any high position bit moves it by far more than the bound).
    let texel = 2 * (RINGS * SEGMENTS) + 37;
    let corrupt = with_blob_edited(&bake, id, |b| b[texel * 8 + 3] ^= 0x08);
    let report = verify(&Asset::parse(&corrupt).unwrap(), &rig).unwrap();
    assert!(!report.passed);
    assert_eq!(report.failed_vertex_frames, 1);
    let worst = report.worst.unwrap();
    assert_eq!((worst.frame, worst.vertex), (2, 37));
    // A flipped normal bit alone also fails (w1 bits 8.. hold the octahedral normal).
    let normal = with_blob_edited(&bake, id, |b| b[texel * 8 + 7] ^= 0x80);
    let report = verify(&Asset::parse(&normal).unwrap(), &rig).unwrap();
    assert!(!report.passed && report.normal_max_error_deg > report.normal_bound_deg);
}

#[test]
fn a_wrong_morph_delta_fails_the_bone_path() {
    let rig = crate::procgen::morph_rig(true);
    let bake = prepare(&rig, &BakeOptions { frames: Some(4), bones: true, ..Default::default() }).unwrap();
    let clean = verify(&Asset::parse(&bake.to_vat_bytes().unwrap()).unwrap(), &rig).unwrap();
    assert!(clean.passed, "{clean:#?}");
    let morph = bake.manifest().morph_animation.as_ref().expect("the morph rig bakes a morph layer");
    // Non-finite deltas are refused by the writer and the reader; a finite wrong one (1 km on
    // every delta texel) must fail the bone path against fresh skinning.
    let bytes = with_blob_edited(&bake, morph.texture.0, |b| {
        for c in b.chunks_exact_mut(4) {
            c.copy_from_slice(&1000.0f32.to_le_bytes());
        }
    });
    let report = verify(&Asset::parse(&bytes).unwrap(), &rig).unwrap();
    let bone = report.paths.iter().find(|p| p.path == "bone").unwrap();
    assert!(!bone.passed && report.paths[0].passed, "{report:#?}");
    assert!(report.failures.iter().any(|f| f.starts_with("bone:")), "{:?}", report.failures);
}

#[test]
fn broken_bone_and_capture_streams_fail_their_paths() {
    let rig = tube_rig(0.15);
    let bake = prepare(&rig, &BakeOptions { frames: Some(6), bones: true, ..Default::default() }).unwrap();
    let clean = verify(&Asset::parse(&bake.to_vat_bytes().unwrap()).unwrap(), &rig).unwrap();
    assert!(clean.passed, "{clean:#?}");
    let m = bake.manifest();
    let ba = m.bone_animation.as_ref().unwrap();
    let capture = m.captures.first().expect("the tube's head socket is captured").blob.0;
    let nan_f32 = |b: &mut Vec<u8>| {
        for c in b.chunks_exact_mut(4) {
            c.copy_from_slice(&f32::NAN.to_le_bytes());
        }
    };
    let zero = |b: &mut Vec<u8>| b.iter_mut().for_each(|x| *x = 0);
    // Finite weights in [0, 1] that no longer sum to 1 (by 1 %).
    let scaled = |b: &mut Vec<u8>| {
        for c in b.chunks_exact_mut(4) {
            let w = f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * 0.99;
            c.copy_from_slice(&w.to_le_bytes());
        }
    };
    type Edit<'a> = &'a dyn Fn(&mut Vec<u8>);
    let cases: [(&str, u32, Edit<'_>); 4] = [
        ("bone", ba.texture.0, &nan_f32),
        ("bone", ba.weights.0, &zero),
        ("bone", ba.weights.0, &scaled),
        ("capture", capture, &nan_f32),
    ];
    let mut verified = 0;
    for (path, blob, edit) in cases {
        let bytes = with_blob_edited(&bake, blob, |b| edit(b));
        // The reader may refuse the file outright; if it loads, verification must fail the path.
        let Ok(asset) = Asset::parse(&bytes) else { continue };
        verified += 1;
        let report = verify(&asset, &rig).unwrap();
        assert!(!report.passed, "{path} blob {blob}: {report:#?}");
        let failed = report.paths.iter().find(|p| p.path == path).unwrap();
        assert!(!failed.passed, "{path} blob {blob}: {report:#?}");
        assert!(report.failures.iter().any(|f| f.starts_with(path)), "{:?}", report.failures);
        // The vertex texture is untouched: the VAT path still passes.
        assert!(report.paths[0].passed, "{report:#?}");
        if blob == ba.weights.0 {
            assert!(report.failures.iter().any(|f| f.contains("sum to")), "{:?}", report.failures);
        }
    }
    // The reader does not check these streams' values: each case reached verification.
    assert_eq!(verified, 4);
}

#[test]
fn the_wrong_source_is_a_typed_error() {
    let rig = tube_rig(0.15);
    let bytes = prepare(&rig, &BakeOptions { frames: Some(3), ..Default::default() })
        .unwrap()
        .to_vat_bytes()
        .unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    assert!(matches!(verify(&asset, &tube_rig(0.2)), Err(BakeError::InvalidInput { .. })));
    let mut renamed = rig.clone();
    renamed.clips[1].name = "shake".into();
    assert!(matches!(verify(&asset, &renamed), Err(BakeError::InvalidInput { .. })));
}

#[test]
fn bakes_are_byte_identical_across_runs_and_thread_counts() {
    let rig = tube_rig(0.15);
    let options = BakeOptions { bones: true, tangents: true, ..Default::default() };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| prepare(&rig, &options).unwrap().to_vat_bytes().unwrap())
    };
    let one = run(1);
    assert_eq!(one, run(1), "two runs");
    assert_eq!(one, run(4), "1 thread vs 4");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let bytes = prepare(&rig, &options).unwrap().to_vat_bytes().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let serial = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| verify(&asset, &rig).unwrap());
    assert_eq!(
        serial,
        pool.install(|| verify(&asset, &rig).unwrap()),
        "verify figures do not depend on threads"
    );
}

#[test]
fn humanoid_bakes_and_verifies_in_every_format() {
    let rig = crate::procgen::humanoid();
    for format in FORMATS {
        // Four frames per clip keeps the test fast; every vertex of every frame is checked.
        let options =
            BakeOptions { format, frames: Some(4), tangents: true, bones: true, ..Default::default() };
        let report = verify_prepared(&prepare(&rig, &options).unwrap(), &rig).unwrap();
        assert!(report.passed, "{format:?}: {report:#?}");
        assert_eq!(report.vertex_frames, 2438 * 24);
        // No morphs on the humanoid: bone mode reproduces the skin up to f32 rounding, a few
        // units of 2^-24 of coordinates under 2 m summed over two influences (~1e-4 mm).
        assert!(report.bone_max_error_mm.unwrap() < 1e-3, "{report:#?}");
        if format == VertexFormat::Packed64 {
            // The targets for the default format: <= 0.1 mm per axis, <= 0.06 deg.
            assert!(
                report.position_max_error_mm <= 0.1 && report.normal_max_error_deg <= 0.06,
                "{report:#?}"
            );
        }
    }
}

#[test]
fn humanoid_bake_is_byte_identical_for_any_thread_count() {
    let rig = crate::procgen::humanoid();
    let options = BakeOptions { frames: Some(3), bones: true, tangents: true, ..Default::default() };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| prepare(&rig, &options).unwrap().to_vat_bytes().unwrap())
    };
    let one = run(1);
    assert!(one == run(4), "1 thread vs 4");
    assert!(one == run(1), "two runs");
}

/// The tube with every vertex given 9 or 10 influences: its own (weights scaled by 0.9) and 8 small
/// ones over the three joints summing to 0.1. `joints` / `weights` hold the 8 largest, renormalised,
/// as the glTF importer stores them; `full_influences` every one.
fn tube_with_many_influences() -> crate::rig::Rig {
    let mut rig = tube_rig(0.15);
    let mesh = &mut rig.meshes[0];
    let extra =
        [(2u16, 0.03f32), (1, 0.02), (0, 0.015), (2, 0.01), (1, 0.01), (0, 0.005), (2, 0.005), (1, 0.005)];
    let mut full = Vec::new();
    for (j, w) in mesh.joints.iter_mut().zip(mesh.weights.iter_mut()) {
        let mut all: Vec<(u16, f32)> =
            j.iter().zip(w.iter()).filter(|(_, w)| **w > 0.0).map(|(&j, &w)| (j, 0.9 * w)).collect();
        all.extend(extra);
        let mut largest = all.clone();
        largest.sort_by(|a, b| b.1.total_cmp(&a.1));
        largest.truncate(crate::rig::MAX_INFLUENCES);
        let sum: f32 = largest.iter().map(|i| i.1).sum();
        for (k, (joint, weight)) in largest.iter().enumerate() {
            (j[k], w[k]) = (*joint, weight / sum);
        }
        full.push(all);
    }
    mesh.influence_count = crate::rig::MAX_INFLUENCES;
    mesh.full_influences = Some(full);
    rig
}

#[test]
fn humanoid_bakes_small_in_skin_residual_and_verifies_within_its_stated_bound() {
    let rig = crate::procgen::humanoid();
    let options = BakeOptions { format: VertexFormat::SkinResidual, frames: Some(4), ..Default::default() };
    let bake = prepare(&rig, &options).expect("the humanoid bakes in skin-residual");
    let m = bake.manifest();
    assert!(m.bone_animation.is_some() && m.skin_residual.is_some(), "its skin and its residual");
    assert!(
        m.vertex_animation.as_ref().is_some_and(|va| va.textures.is_empty()),
        "no texel per vertex per frame"
    );
    let report = verify_prepared(&bake, &rig).expect("verification runs");
    assert!(report.passed && report.euclidean_bound, "{report:#?}");
    // The stated bound (0.5 mm, 1 degree, plus the f32 decode's slack) holds for every vertex-frame.
    assert!((report.position_bound_mm[0] - 0.501).abs() < 1e-6, "{report:#?}");
    assert!(report.position_max_euclidean_error_mm <= report.position_bound_mm[0]);
    assert!(report.position_p99_euclidean_error_mm <= report.position_max_euclidean_error_mm);
    assert!(report.normal_max_error_deg <= report.normal_bound_deg);
    assert_eq!(report.vertex_frames, 2438 * 24);
    // Four frames a clip: the per-vertex skin dominates; still under packed64's 8 bytes.
    let size = bake.stats.animation_bytes_per_vertex_frame;
    println!("skin-residual humanoid, 4 frames a clip: {size:.3} bytes per vertex per frame");
    assert!(size > 0.0 && size < 8.0, "{size}");
    // Deterministic.
    let again = prepare(&rig, &options).expect("the same bake again");
    assert_eq!(bake.to_vat_bytes().expect("bytes"), again.to_vat_bytes().expect("bytes"));
    // Its skin drives the decode: a bone matrix edited moves the vertices it weighs past the bound.
    let bones = m.bone_animation.as_ref().expect("bones").texture.0;
    let bone_count = m.bones.len();
    let moved = with_blob_edited(&bake, bones, |b| {
        // Every bone's translation x at frame 0 (row 0, column 3: float 3 of its first texel) by 1 cm.
        for bone in 0..bone_count {
            let at = (bone * 3 * 4 + 3) * 4;
            let x = f32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) + 0.01;
            b[at..at + 4].copy_from_slice(&x.to_le_bytes());
        }
    });
    let report = verify(&Asset::parse(&moved).expect("still a valid file"), &rig).expect("verification runs");
    assert!(!report.passed && report.position_max_euclidean_error_mm > 5.0, "{report:#?}");
}

#[test]
fn skin_residual_restores_the_influences_past_8_within_its_bound() {
    let rig = tube_with_many_influences();
    let options = BakeOptions { format: VertexFormat::SkinResidual, frames: Some(6), ..Default::default() };
    let bake = prepare(&rig, &options).expect("the tube bakes in skin-residual");
    let section = bake.manifest().skin_residual.clone().expect("a skin-residual section");
    assert!(section.stream_words > 1, "the residual carries what the 8 largest influences miss");
    assert!(bake.stats.notes.iter().any(|n| n.contains("carries every influence")), "{:?}", bake.stats.notes);
    let bytes = bake.to_vat_bytes().expect("bytes");
    let asset = Asset::parse(&bytes).expect("a valid file");
    // The VAT path against full skinning passes; bone mode of the same file keeps 8 influences.
    let report = verify(&asset, &rig).expect("verification runs");
    let path = |r: &VerifyReport, name: &str| r.paths.iter().find(|p| p.path == name).map(|p| p.passed);
    assert_eq!((path(&report, "vat"), path(&report, "bone")), (Some(true), Some(false)), "{report:#?}");
    assert!(report.position_max_euclidean_error_mm <= report.position_bound_mm[0], "{report:#?}");
    // Accepting the loss waives bone mode's, while the VAT path stays held to full skinning.
    let accepted =
        verify_with(&asset, &rig, &VerifyOptions { accept_influence_loss: true, ..Default::default() })
            .expect("verification runs");
    assert!(accepted.passed, "{accepted:#?}");
    assert_eq!(accepted.position_max_euclidean_error_mm, report.position_max_euclidean_error_mm);
    // packed64 bakes the 8 largest: its VAT path fails against full skinning.
    let packed =
        prepare(&rig, &BakeOptions { frames: Some(6), ..Default::default() }).expect("packed64 bakes");
    assert!(!verify_prepared(&packed, &rig).expect("verification runs").passed);
    // A residual word inverted moves the vertices it holds past the bound.
    let words_at = bake.manifest().vertex_count as usize * 8;
    let tampered = with_blob_edited(&bake, section.texture.0, |b| {
        let at = words_at + 4 * (section.stream_words as usize / 2);
        for byte in &mut b[at..at + 4] {
            *byte = !*byte;
        }
    });
    let report =
        verify(&Asset::parse(&tampered).expect("still a valid file"), &rig).expect("verification runs");
    assert!(!report.passed && report.failed_vertex_frames > 0, "{report:#?}");
}

#[test]
fn skin_residual_refuses_what_it_cannot_hold_with_typed_errors() {
    let skinned = tube_rig(0.15);
    let format = VertexFormat::SkinResidual;
    let refused = |rig: &crate::rig::Rig, options: BakeOptions, flag: &str| match prepare(rig, &options) {
        Err(err) => {
            assert!(
                matches!(&err, BakeError::InvalidOption { option, .. } if option.contains(flag)),
                "{err:?}"
            )
        }
        Ok(_) => panic!("{flag}: baked, not refused"),
    };
    refused(&skinned, BakeOptions { format, tangents: true, ..Default::default() }, "--tangents");
    let loose = vat_core::format::skin_residual::ResidualBounds { position_m: 2.0, normal_rad: 0.01 };
    refused(&skinned, BakeOptions { format, residual_bounds: loose, ..Default::default() }, "--residual-mm");
    let nan = vat_core::format::skin_residual::ResidualBounds { position_m: f32::NAN, normal_rad: 0.01 };
    refused(&skinned, BakeOptions { format, residual_bounds: nan, ..Default::default() }, "--residual-mm");
    // A rig with its own skin is not fitted one; a fitted skin has 1 to 1024 bones.
    refused(&skinned, BakeOptions { format, fit_bones: Some(8), ..Default::default() }, "--fit-bones");
    let cloth = crate::procgen::cloth().expect("the built-in cloth");
    for bones in [0, crate::fit::MAX_BONES + 1] {
        refused(&cloth, BakeOptions { format, fit_bones: Some(bones), ..Default::default() }, "--fit-bones");
    }
}

#[test]
fn a_fitted_skin_keeps_the_bone_count_whose_file_is_smallest() {
    let rig = crate::procgen::cloth().expect("the built-in cloth");
    let format = VertexFormat::SkinResidual;
    let bake = |fit_bones| {
        let bake =
            prepare(&rig, &BakeOptions { format, fit_bones, ..Default::default() }).expect("the cloth bakes");
        let bones = bake.manifest().bone_animation.as_ref().expect("a fitted bone section").layout.bone_count;
        (bones, bake.stats.animation_bytes_per_vertex_frame, bake)
    };
    let (kept, searched, auto) = bake(None);
    let tried =
        auto.stats.notes.iter().find(|n| n.contains("bones tried")).expect("the counts tried are said");
    assert!(tried.contains(&format!("{kept} kept")), "{tried}");
    // What the search kept is no larger than the first count, nor than either neighbour of it.
    for bones in [32, kept / 2, kept * 2] {
        let (fixed, bytes, fixed_bake) = bake(Some(bones));
        assert_eq!(fixed, bones, "--fit-bones {bones} fits that many bones");
        assert!(
            !fixed_bake.stats.notes.iter().any(|n| n.contains("bones tried")),
            "a fixed count tries no other"
        );
        assert!(searched <= bytes, "{kept} bones: {searched} B/v/f, {bones} bones: {bytes} B/v/f");
    }
    // The kept candidate's blobs are the file's: it verifies within its bound.
    let report = verify_prepared(&auto, &rig).expect("verification runs");
    assert!(
        report.passed && report.position_max_euclidean_error_mm <= report.position_bound_mm[0],
        "{report:#?}"
    );

    // At 0.01 mm a skin of few bones leaves some vertex more than 64 bits a frame: that count is
    // refused and said (it ends the halving), and the bake keeps a count that holds the bound.
    let tight = vat_core::format::skin_residual::ResidualBounds { position_m: 1e-5, ..Default::default() };
    let options = BakeOptions { format, residual_bounds: tight, ..Default::default() };
    let bake = prepare(&rig, &options).expect("the cloth bakes at 0.01 mm with some bone count");
    let tried =
        bake.stats.notes.iter().find(|n| n.contains("bones tried")).expect("the counts tried are said");
    let kept = bake.manifest().bone_animation.as_ref().expect("a fitted bone section").layout.bone_count;
    let refused = format!("{} (refused: ", kept / 2);
    assert!(tried.contains(&refused) && tried.contains("exceeds the limit of 64"), "{tried}");
    assert!(tried.contains(&format!("{kept} kept")), "{tried}");
    let report = verify_prepared(&bake, &rig).expect("verification runs");
    assert!(
        report.passed && report.position_max_euclidean_error_mm <= report.position_bound_mm[0],
        "{report:#?}"
    );
}

#[test]
fn a_skin_residual_file_larger_than_packed64_says_so() {
    let rig = crate::procgen::cloth().expect("the built-in cloth");
    let format = VertexFormat::SkinResidual;
    let larger = |bake: &crate::prepare::PreparedBake| {
        bake.stats.notes.iter().find(|n| n.contains("more than packed64")).cloned()
    };
    // The searched count stays under packed64's 8 bytes: nothing to say.
    let small = prepare(&rig, &BakeOptions { format, ..Default::default() }).expect("the cloth bakes");
    assert!(
        small.stats.animation_bytes_per_vertex_frame < 8.0,
        "{}",
        small.stats.animation_bytes_per_vertex_frame
    );
    assert_eq!(larger(&small), None);
    // 200 bones on 792 vertices: 48 bytes a bone a frame alone are 12 bytes a vertex a frame.
    let options = BakeOptions { format, fit_bones: Some(200), ..Default::default() };
    let big = prepare(&rig, &options).expect("the cloth bakes with 200 bones");
    let bytes = big.stats.animation_bytes_per_vertex_frame;
    assert!(bytes > 12.0, "{bytes}");
    let note = larger(&big).expect("a file larger than packed64 is said");
    assert!(note.contains(&format!("{bytes:.3} bytes")) && note.contains("--format packed64"), "{note}");
}

#[test]
fn a_mesh_sequence_bakes_in_skin_residual_through_a_fitted_skin_within_its_bound() {
    // The built-in cloth: 792 vertices of a mass-spring simulation, no skeleton.
    let rig = crate::procgen::cloth().expect("the built-in cloth");
    let options = BakeOptions { format: VertexFormat::SkinResidual, ..Default::default() };
    let bake = prepare(&rig, &options).expect("the cloth bakes in skin-residual");
    let m = bake.manifest();
    let bones = m.bone_animation.as_ref().expect("a fitted bone section");
    assert!(bones.layout.bone_count > 1 && m.bones.len() == bones.layout.bone_count as usize);
    assert!(
        bake.stats.notes.iter().any(|n| n.contains("was fitted to the frames")),
        "{:?}",
        bake.stats.notes
    );
    let section = m.skin_residual.as_ref().expect("the residual");
    assert!(section.stream_words > 1, "a fitted skin leaves a residual");
    let report = verify_prepared(&bake, &rig).expect("verification runs");
    // The VAT path within the stated bound; bone mode of the fitted skin is reported only.
    assert!(report.passed && report.euclidean_bound, "{report:#?}");
    assert!(report.position_max_euclidean_error_mm <= report.position_bound_mm[0], "{report:#?}");
    assert!(report.normal_max_error_deg <= report.normal_bound_deg, "{report:#?}");
    let bone = report.paths.iter().find(|p| p.path == "bone").expect("the bone path is reported");
    assert!(bone.passed && bone.max_error_mm > report.position_bound_mm[0], "{bone:?}");
    assert!(report.warnings.iter().any(|w| w.contains("fitted to a mesh sequence")), "{:?}", report.warnings);
    println!(
        "cloth in skin-residual: {:.3} bytes per vertex per frame; position max {:.4} / p99 {:.4} / mean {:.4} mm, \
         normals max {:.4} deg; fitted skin alone {:.2} mm",
        bake.stats.animation_bytes_per_vertex_frame,
        report.position_max_euclidean_error_mm,
        report.position_p99_euclidean_error_mm,
        report.position_mean_euclidean_error_mm,
        report.normal_max_error_deg,
        bone.max_error_mm
    );
}
