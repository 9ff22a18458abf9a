//! Houdini VAT 3 rigid-body import: bakes made here in VAT 3's layout
//! ([`crate::fuzzing::houdini_rigid_fixture`]) decode, through vat's rigid bake and its CPU
//! reference, to what VAT 3's published shaders compute from the same files, at every vertex and
//! frame and between frames; what vat's rigid mode cannot hold is refused with a typed error.

use std::path::{Path, PathBuf};

use glam::{Quat, Vec3};
use vat_core::container::Asset;
use vat_core::format::reference::{RigidAnimationView, decode_rigid_vertex};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;

use super::houdini::{HoudiniBake, HoudiniOptions, ImportedRigidBake, read_houdini};
use crate::fuzzing::{HoudiniRigidFixture, houdini_rigid_fixture};
use crate::rigid::{RigidBakeOptions, bake_rigid, verify_rigid};

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-houdini-rigid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn import(dir: &Path, substeps: Option<u32>) -> crate::Result<ImportedRigidBake> {
    match read_houdini(dir, &HoudiniOptions { substeps, ..Default::default() })? {
        HoudiniBake::Rigidbody(b) => Ok(b),
        HoudiniBake::Softbody(_) => panic!("a Rigidbody bake imported as a soft body"),
    }
}

/// The published shaders' quaternion from a rotation texel and the position alpha (f32).
fn shader_quaternion(rot: [f32; 4], pos_alpha: f32) -> Quat {
    let xyz = Vec3::new(rot[0], rot[1], rot[2]);
    let w = (1.0 - xyz.dot(xyz)).sqrt();
    match (pos_alpha * 4.0).floor() as i32 {
        1 => Quat::from_xyzw(w, xyz.y, xyz.z, xyz.x),
        2 => Quat::from_xyzw(xyz.x, w, xyz.z, xyz.y),
        3 => Quat::from_xyzw(xyz.x, xyz.y, w, xyz.z),
        _ => Quat::from_xyzw(xyz.x, xyz.y, xyz.z, w),
    }
}

/// The shaders' in-between rotation: the multi-rotation-per-frame slerp, f32 as they compute it.
fn shader_turn(q0: Quat, q1: Quat, rate: f32, alpha: f32) -> Quat {
    let tau = std::f32::consts::TAU;
    let fr = |x: f32| x - x.floor();
    if rate.abs() <= 1e-4 {
        return q0;
    }
    let cycle = fr(rate) * 0.5;
    let at = fr(rate * alpha) * 0.5;
    let q1 = if q0.dot(q1) < 0.0 { -q1 } else { q1 };
    let v0 = glam::Vec4::from(q0) * ((cycle - at) * tau).sin();
    let v1 = glam::Vec4::from(q1) * (at * tau).sin() * rate.signum();
    Quat::from_vec4(((v0 + v1) / (cycle * tau).sin()).normalize())
}

/// Vertex `v` of the fixture at `alpha` of the way from source frame `frame` to the next (looping),
/// as VAT 3's rigid-body vertex shader places it: texel from `TEXCOORD_1` (frame `f` `f / F` of the
/// texture lower, frame 0 the first scanline), pivot from the position texel, rotation from the
/// rotation texel, the vertex's offset from its piece's rest pivot (`TEXCOORD_2.x`, `TEXCOORD_3`)
/// turned and added.
fn shader_vertex(fx: &HoudiniRigidFixture, v: usize, frame: usize, alpha: f32) -> Vec3 {
    let (w, h) = fx.size;
    let texel = |f: usize| {
        let u = fx.uv1[v][0];
        let t = fx.uv1[v][1] + (f % fx.frames) as f32 / fx.frames as f32;
        ((t * h as f32).floor() as usize) * w + (u * w as f32).floor() as usize
    };
    let (a, b) = (texel(frame), texel(frame + 1));
    let (pa, pb) = (fx.pos_texels[a], fx.pos_texels[b]);
    let q0 = shader_quaternion(fx.rot_texels[a], pa[3]);
    let q1 = shader_quaternion(fx.rot_texels[b], pb[3]);
    let q = if alpha == 0.0 { q0 } else { shader_turn(q0, q1, fx.rot_texels[a][3], alpha) };
    let pivot = Vec3::from_slice(&pa[..3]).lerp(Vec3::from_slice(&pb[..3]), alpha);
    let rest_pivot = Vec3::new(fx.uv2[v][0], fx.uv3[v][0], fx.uv3[v][1]);
    q * (Vec3::from(fx.positions[v]) - rest_pivot) + pivot
}

/// Imports, bakes and verifies a fixture, then compares vat's CPU reference with the shader
/// transcription at every vertex of every source frame (within the rigid format's vertex bound
/// and the f32 rounding of the shaders' few operations) and at two points between every pair of
/// frames (within that plus the import's measured in-between turn times the piece's radius).
/// Returns the import.
fn check_against_the_shaders(name: &str, fx: &HoudiniRigidFixture) -> ImportedRigidBake {
    let dir = scratch(name);
    fx.write(&dir, "cubes").unwrap();
    let imported = import(&dir, None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let source = &imported.source;
    let (bytes, _) = bake_rigid(source, &RigidBakeOptions::default()).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let report = verify_rigid(&asset, source).unwrap();
    assert!(report.passed, "{:?}", report.failures);
    let view = RigidAnimationView::from_asset(&asset).unwrap();
    let kept = fx.positions.len() - 6;
    assert_eq!(source.vertex_count(), kept, "every vertex but the 6 bounds extenders");
    let bound = report.vertex_bound_mm / 1e3;
    let radius = fx.positions[..kept]
        .iter()
        .zip(&fx.uv2)
        .zip(&fx.uv3)
        .map(|((p, a), b)| (Vec3::from(*p) - Vec3::new(a[0], b[0], b[1])).length())
        .fold(0.0f32, f32::max);
    let frames = fx.frames;
    let mut worst_key = 0.0f64;
    let mut worst_between = 0.0f64;
    for f in 0..frames {
        for (alpha, interp) in
            [(0.0, Interpolation::Point), (0.3, Interpolation::Linear), (0.71, Interpolation::Linear)]
        {
            let record = InstanceRecord {
                clip_a: 0,
                phase_offset_a: (f as f32 + alpha) / frames as f32,
                rate_a: 0.0,
                ..Default::default()
            };
            for v in 0..kept {
                let want = shader_vertex(fx, v, f, alpha);
                let got = decode_rigid_vertex(&view, &record, 0.0, v as u32, interp).unwrap();
                let e = f64::from((Vec3::from(got.object_position) - want).length());
                // f32 rounding of the shaders' decode: a few ulps of the largest magnitude involved.
                let rounding = 16.0 * f64::from(f32::EPSILON) * f64::from(want.length() + radius);
                if alpha == 0.0 {
                    assert!(e <= bound + rounding, "{name}: vertex {v} frame {f}: {e} > {bound}");
                    worst_key = worst_key.max(e);
                } else {
                    let turn = f64::from(radius) * imported.turn_max_deg.to_radians();
                    // The wrap (last frame to first) is not VAT 3 motion: vat blends it its own way.
                    if f + 1 < frames {
                        assert!(
                            e <= bound + rounding + turn,
                            "{name}: vertex {v} at {alpha} past frame {f}: {e} > {bound} + {turn}"
                        );
                        worst_between = worst_between.max(e);
                    }
                }
            }
        }
    }
    assert!(
        worst_key > 0.0 && worst_between > 0.0,
        "the comparison saw quantisation: {worst_key} {worst_between}"
    );
    imported
}

#[test]
fn a_vat3_rigid_bake_plays_as_its_shaders_play_it() {
    // Five cubes in one row, piece 0 turning 170 degrees a frame: baked with substeps.
    let fast = check_against_the_shaders("fast", &houdini_rigid_fixture(5, 5, 12, true));
    assert!(fast.substeps > 1, "{}", fast.substeps);
    assert!((fast.fastest_turn_deg - 170.0).abs() < 1e-3, "{}", fast.fastest_turn_deg);
    assert!(fast.turn_max_deg <= crate::interop::houdini::HOUDINI_RIGID_TURN_TOLERANCE_DEG);
    assert_eq!(fast.source.clips[0].frames.len(), 12 * fast.substeps as usize);
    assert_eq!(fast.source.clips[0].fps, 24.0 * fast.substeps as f32);
    assert!(fast.source.clips[0].looping);
    assert!(fast.notes.iter().any(|n| n.contains("6 bounds-extender vertices") && n.contains("2 triangles")));
    assert!(!fast.notes.iter().any(|n| n.contains("frame 0 is not")), "{:?}", fast.notes);
    // Seven slow cubes wrapped over three rows a frame: the source's rate is enough.
    let slow = check_against_the_shaders("wrapped", &houdini_rigid_fixture(7, 3, 9, false));
    assert_eq!(slow.substeps, 1);
    assert_eq!(slow.source.pieces.len(), 7);
}

#[test]
fn substeps_can_be_chosen_and_one_follows_the_source_rate() {
    let dir = scratch("substeps");
    houdini_rigid_fixture(3, 3, 6, true).write(&dir, "cubes").unwrap();
    let one = import(&dir, Some(1)).unwrap();
    assert_eq!((one.substeps, one.source.clips[0].frames.len()), (1, 6));
    // Nlerp at the source rate strays from the shaders' slerp of a 170-degree turn by degrees.
    assert!(one.turn_max_deg > 5.0, "{}", one.turn_max_deg);
    let four = import(&dir, Some(4)).unwrap();
    assert!(four.turn_max_deg < one.turn_max_deg / 10.0);
    // Every fourth frame is a source frame, to the bit.
    for f in 0..6 {
        assert_eq!(four.source.clips[0].frames[f * 4], one.source.clips[0].frames[f]);
    }
    let e = import(&dir, Some(0)).unwrap_err().to_string();
    assert!(e.contains("substeps"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the fixture with `edit` applied and returns the import's error.
fn refused(name: &str, edit: impl FnOnce(&mut HoudiniRigidFixture, &Path)) -> String {
    let dir = scratch(name);
    let mut fx = houdini_rigid_fixture(3, 3, 4, false);
    edit(&mut fx, &dir);
    fx.write(&dir, "cubes").unwrap();
    let e = import(&dir, None).unwrap_err();
    assert!(matches!(e, crate::BakeError::Interop { .. } | crate::BakeError::Gltf { .. }), "{name}: {e:?}");
    let _ = std::fs::remove_dir_all(&dir);
    e.to_string()
}

fn json_edit(fx: &mut HoudiniRigidFixture, from: &str, to: &str) {
    let text = String::from_utf8(fx.json.clone()).unwrap();
    assert!(text.contains(from), "{text}");
    fx.json = text.replace(from, to).into_bytes();
}

fn reencode(fx: &mut HoudiniRigidFixture) {
    let (w, h) = fx.size;
    fx.pos_exr = super::images::encode_rgba_exr32(w, h, &fx.pos_texels).unwrap();
    fx.rot_exr = super::images::encode_rgba_exr32(w, h, &fx.rot_texels).unwrap();
}

#[test]
fn what_the_rigid_mode_cannot_hold_is_refused_naming_it() {
    let e = refused("ldr", |fx, _| json_edit(fx, "\"Use HDR Textures\": 1", "\"Use HDR Textures\": 0"));
    assert!(e.contains("Use HDR Textures") && e.contains("LDR"), "{e}");
    let e = refused("pos2", |fx, _| {
        json_edit(fx, "\"Two Position Textures\": 0", "\"Two Position Textures\": 1")
    });
    assert!(e.contains("Two Position Textures"), "{e}");
    let e = refused("scale", |fx, _| {
        fx.pos_texels[1][3] += 0.1;
        reencode(fx);
    });
    assert!(e.contains("piece scale") && e.contains("piece 1 at frame 0"), "{e}");
    let e = refused("not-unit", |fx, _| {
        fx.rot_texels[5] = [0.9, 0.9, 0.0, 0.0];
        reencode(fx);
    });
    assert!(e.contains("unit quaternion") && e.contains("frame 1"), "{e}");
    let e = refused("nan", |fx, _| {
        fx.pos_texels[4][0] = f32::NAN;
        reencode(fx);
    });
    assert!(e.contains("not finite"), "{e}");
    let e = refused("rot-size", |fx, _| {
        let (w, h) = fx.size;
        fx.rot_exr = super::images::encode_rgba_exr32(w, h - 1, &fx.rot_texels).unwrap();
    });
    assert!(e.contains("rotation texture") && e.contains("must match"), "{e}");
    let e = refused("pivots-differ", |fx, _| {
        fx.uv2[3][0] += 0.5;
        rewrite_glb(fx);
    });
    assert!(e.contains("rest pivots") && e.contains("does not match"), "{e}");
    let e = refused("frames-lie", |fx, _| json_edit(fx, "\"Frame Count\": 4", "\"Frame Count\": 5"));
    assert!(e.contains("Frame Count"), "{e}");
    // A mesh without the pivot sets.
    let e = refused("no-pivots", |fx, _| {
        let positions: Vec<Vec3> = fx.positions.iter().map(|p| Vec3::from(*p)).collect();
        let normals: Vec<Vec3> = fx.normals.iter().map(|p| Vec3::from(*p)).collect();
        fx.glb =
            super::openvat::lookup_glb("cubes", &positions, &normals, None, &fx.uv1, &fx.indices).unwrap();
    });
    assert!(e.contains("TEXCOORD_2"), "{e}");
    // The rotation texture is missing.
    let dir = scratch("no-rot");
    houdini_rigid_fixture(3, 3, 4, false).write(&dir, "cubes").unwrap();
    std::fs::remove_file(dir.join("cubes_rot.exr")).unwrap();
    let e = import(&dir, None).unwrap_err().to_string();
    assert!(e.contains("rotation texture") && e.contains("missing"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fixture's glb rebuilt from its (edited) arrays, with its own triangles.
fn rewrite_glb(fx: &mut HoudiniRigidFixture) {
    let positions: Vec<Vec3> = fx.positions.iter().map(|p| Vec3::from(*p)).collect();
    let normals: Vec<Vec3> = fx.normals.iter().map(|p| Vec3::from(*p)).collect();
    fx.glb = super::openvat::lookup_glb_with_sets(
        "cubes",
        &positions,
        &normals,
        &[None, Some(&fx.uv1), Some(&fx.uv2), Some(&fx.uv3)],
        &fx.indices,
    )
    .unwrap();
}

#[test]
fn a_triangle_across_pieces_is_refused() {
    let e = refused("joined", |fx, _| {
        // Vertex 0 (piece 0) reads piece 1's texel: its triangles now join two pieces.
        fx.uv1[0] = fx.uv1[24];
        fx.uv2[0] = fx.uv2[24];
        fx.uv3[0] = fx.uv3[24];
        rewrite_glb(fx);
    });
    assert!(e.contains("joins pieces"), "{e}");
}

/// A bake padded to powers of two (VAT 3's option): the filled share encoded in the bounds'
/// decimals, as its shaders read it, names the top-left texels the mesh's `TEXCOORD_1` covers.
#[test]
fn a_padded_texture_reads_its_filled_texels() {
    let fx = houdini_rigid_fixture(5, 5, 12, false);
    let dir = scratch("unpadded");
    fx.write(&dir, "cubes").unwrap();
    let plain = import(&dir, None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // 5 x 12 texels in an 8 x 16 texture: shares 0.625 and 0.75.
    let mut padded = fx.clone();
    let (w, h) = fx.size;
    let pad = |texels: &[[f32; 4]]| {
        let mut out = vec![[0.25f32, 0.5, 0.75, 0.0]; 8 * 16];
        for r in 0..h {
            out[r * 8..r * 8 + w].copy_from_slice(&texels[r * w..(r + 1) * w]);
        }
        out
    };
    padded.pos_exr = super::images::encode_rgba_exr32(8, 16, &pad(&fx.pos_texels)).unwrap();
    padded.rot_exr = super::images::encode_rgba_exr32(8, 16, &pad(&fx.rot_texels)).unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&fx.json).unwrap();
    let min_z = json[0]["Bound Min Z"].as_f64().unwrap();
    let max_x = json[0]["Bound Max X"].as_f64().unwrap();
    json[0]["Bound Min Z"] = serde_json::json!(((min_z * 10.0).round() - 0.375) / 10.0);
    json[0]["Bound Max X"] = serde_json::json!(((max_x * 10.0).round() + 1.0 - 0.25) / 10.0);
    padded.json = serde_json::to_vec(&json).unwrap();
    let dir = scratch("padded");
    padded.write(&dir, "cubes").unwrap();
    let b = import(&dir, None).unwrap();
    assert!(
        b.notes.iter().any(|n| n.contains("padded") && n.contains("5 x 12 texels of 8 x 16")),
        "{:?}",
        b.notes
    );
    assert_eq!(b.source.clips, plain.source.clips);
    assert_eq!(b.source.pieces, plain.source.pieces);
    // Decimals that name a share of no whole texel are refused.
    json[0]["Bound Min Z"] = serde_json::json!(((min_z * 10.0).round() - 0.33) / 10.0);
    padded.json = serde_json::to_vec(&json).unwrap();
    padded.write(&dir, "cubes").unwrap();
    let e = import(&dir, None).unwrap_err().to_string();
    assert!(e.contains("Bound Min Z") && e.contains("not a whole number"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A mesh whose pivots are not frame 0's (another frame's mesh, or pivots VAT 3 encoded) decodes as
/// stored, as the shaders do, and says so.
#[test]
fn a_rest_pose_other_than_frame_0_is_said() {
    let mut fx = houdini_rigid_fixture(3, 3, 4, false);
    for v in 24..48 {
        fx.uv2[v][0] += 0.5;
    }
    rewrite_glb(&mut fx);
    let dir = scratch("rest");
    fx.write(&dir, "cubes").unwrap();
    let b = import(&dir, None).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        b.notes
            .iter()
            .any(|n| n.contains("frame 0 is not the mesh's rest pose for 1 of 3 pieces")
                && n.contains("0.5000 m")),
        "{:?}",
        b.notes
    );
}
