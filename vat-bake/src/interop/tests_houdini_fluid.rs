//! Houdini VAT 3 dynamic-mesh import: bakes made here in VAT 3's layout
//! ([`houdini_dynamic_fixture`]) decode to the frames they encode, bake in vat's fluid mode, verify
//! against the decoded source, and play through vat's CPU reference as a transcription of VAT 3's
//! published dynamic-remeshing shader (SideFX Labs' Unity `VAT_DynamicRemeshing` sub-graph) places
//! them, at every corner of every frame.

use std::path::{Path, PathBuf};

use glam::{Vec3, Vec4};
use vat_core::container::Asset;
use vat_core::format::reference::{FluidAnimationView, decode_fluid_vertex};
use vat_core::instance::InstanceRecord;

use super::houdini::{HoudiniFiles, HoudiniOptions, ImportedFluidBake, read_houdini_dynamic_mesh};
use crate::fluid::{FluidBakeOptions, FluidFrames, bake_fluid, verify_fluid};
use crate::interop_fixtures::{HoudiniDynamicFixture, houdini_dynamic_fixture};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-houdini-fluid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn import(dir: &Path) -> crate::Result<ImportedFluidBake> {
    read_houdini_dynamic_mesh(dir, &HoudiniOptions::default())
}

/// A texture as the shader samples it (point sampling, Unity's bottom-up `v`): texel
/// `(floor(u W), H - 1 - floor(v H))` of rows stored top to bottom.
fn sample(texels: &[[f32; 4]], (w, h): (usize, usize), u: f32, v_up: f32) -> Vec4 {
    let x = ((u * w as f32).floor() as usize).min(w - 1);
    let y = h - 1 - ((v_up * h as f32).floor() as usize).min(h - 1);
    Vec4::from(texels[y * w + x])
}

/// Corner `v` of the fixture at frame `f` as VAT 3's dynamic-remeshing shader computes it, in f32
/// (the sub-graph's nodes in order): the HDR flags from the bounds' decimals; the lookup table
/// sampled at `TEXCOORD_0` moved `f / F` down (the filled share is 1 here); its texel decoded to a
/// UV, `R + G / k`, `1 - (B + A / k)`; the position texture there, remapped by the bounds (LDR); the
/// rotation texture's quaternion turning +Y. `None` for a bounds extender (`v_up <= 0.1`: sent to
/// the origin).
fn shader_corner(fx: &HoudiniDynamicFixture, v: usize, f: usize) -> Option<(Vec3, Vec3)> {
    let (min, max) = (Vec3::from(fx.bounds.0), Vec3::from(fx.bounds.1));
    let uv = fx.uv0[v];
    let v_up = 1.0 - uv[1];
    if v_up <= 0.1 {
        return None;
    }
    let fract = |x: f32| x - x.floor();
    let hdr = fract(max.z * 10.0) >= 0.5;
    let k = if fract(-(min.x * 10.0)) >= 0.5 { 2048.0 } else { 255.0 };
    let frames = fx.frames.len() as f32;
    let progress = (f as f32).rem_euclid(frames) * (1.0 / frames);
    let lookup_v = 1.0 - ((1.0 - v_up) * 1.0 + progress * 1.0);
    let l = sample(&fx.lookup_texels, fx.lookup_size, uv[0] * 1.0, lookup_v);
    let (u2, v2) = (l.x + l.y / k, 1.0 - (l.z + l.w / k));
    let p = sample(&fx.pos_texels, fx.pos_size, u2, v2).truncate();
    let p = if hdr { p } else { p * (max - min) + min };
    let r = sample(&fx.rot_texels, fx.pos_size, u2, v2);
    let q = if hdr { r } else { (r - Vec4::splat(0.5)) * 2.0 };
    let (xyz, w) = (q.truncate(), q.w);
    let n = (xyz.cross(w * Vec3::Y + xyz.cross(Vec3::Y)) * 2.0 + Vec3::Y).normalize();
    Some((p, n))
}

/// Imports, bakes (looping, as VAT 3 plays) and verifies a fixture, then decodes every pool corner
/// of every frame with vat's CPU reference and compares it with the shader transcription: the
/// frame's triangles of non-zero area (those the shader shows), in pool order, are vat's pool
/// triangles of that frame, each corner within the fluid format's bound plus the shader's f32
/// rounding; vat collapses every other corner.
fn check_against_the_shader(name: &str, fx: &HoudiniDynamicFixture) -> ImportedFluidBake {
    let dir = scratch(name);
    fx.write(&dir, "dynamic").unwrap();
    let imported = import(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    // The decoded frames are the encoded ones (the LDR step: half a code of the range).
    let (min, max) = (Vec3::from(fx.bounds.0), Vec3::from(fx.bounds.1));
    let step = if fx.ext == "png" { (max - min) * (0.5 / 255.0) } else { Vec3::splat(1e-6) };
    assert_eq!(imported.frame_count(), fx.frames.len());
    for (k, want) in fx.frames.iter().enumerate() {
        let got = imported.frame(k).unwrap();
        assert_eq!(got.triangles.len(), want.triangles.len(), "{name} frame {k}");
        assert_eq!(got.positions.len(), want.positions.len(), "{name} frame {k}: points welded as VAT 3's");
        for (t, (a, b)) in got.triangles.iter().zip(&want.triangles).enumerate() {
            for j in 0..3 {
                let (p, q) = (Vec3::from(got.positions[a[j] as usize]), want.positions[b[j] as usize]);
                let e = (p - q).abs();
                assert!(
                    e.cmple(step * 1.001 + Vec3::splat(1e-6)).all(),
                    "{name} frame {k} tri {t}: {p} vs {q}"
                );
                let n = Vec3::from(got.normals[a[j] as usize]);
                assert!(
                    n.angle_between(want.normals[b[j] as usize]) < 0.02,
                    "{name} frame {k} tri {t}: normal"
                );
            }
        }
    }
    let options = FluidBakeOptions { looping: true, ..Default::default() };
    let (bytes, _) = bake_fluid(&imported, &options).unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let report = verify_fluid(&asset, &imported).unwrap();
    assert!(report.passed, "{name}: {:?}", report.failures);
    let view = FluidAnimationView::from_asset(&asset).unwrap();
    let bound = Vec3::from(report.position_bound_mm.map(|b| (b * 1e-3) as f32));
    let extent = (max - min).max_element() + max.abs().max_element();
    let rounding = 32.0 * f32::EPSILON * extent;
    let frames = fx.frames.len();
    let (mut worst, mut worst_angle) = (0.0f32, 0.0f32);
    for f in 0..frames {
        let record = InstanceRecord {
            clip_a: 0,
            phase_offset_a: f as f32 / frames as f32,
            rate_a: 0.0,
            ..Default::default()
        };
        let mut live = 0u32;
        for tri in fx.indices.chunks_exact(3) {
            let Some(corners) =
                tri.iter().map(|&v| shader_corner(fx, v as usize, f)).collect::<Option<Vec<(Vec3, Vec3)>>>()
            else {
                continue;
            };
            let area = (corners[1].0 - corners[0].0).cross(corners[2].0 - corners[0].0).length();
            if area == 0.0 {
                continue;
            }
            for (j, (p, n)) in corners.iter().enumerate() {
                let d =
                    decode_fluid_vertex(&view, &record, 0.0, 3 * live + j as u32).unwrap().unwrap_or_else(
                        || panic!("{name} frame {f}: vat collapses live corner {}", 3 * live + j as u32),
                    );
                let e = (Vec3::from(d.object_position) - *p).abs();
                assert!(
                    e.cmple(bound + Vec3::splat(rounding)).all(),
                    "{name} frame {f} corner {}: {e} > {bound}",
                    3 * live + j as u32
                );
                worst = worst.max(e.max_element());
                let angle = Vec3::from(d.object_normal).angle_between(*n).to_degrees();
                assert!(
                    angle <= report.normal_bound_deg as f32 + 0.01,
                    "{name} frame {f}: normal {angle} deg"
                );
                worst_angle = worst_angle.max(angle);
            }
            live += 1;
        }
        assert_eq!(
            live as usize,
            fx.frames[f].triangles.len(),
            "{name} frame {f}: the shader's live triangles"
        );
        for c in 3 * live..view.corner_count {
            assert!(
                decode_fluid_vertex(&view, &record, 0.0, c).unwrap().is_none(),
                "{name} frame {f} corner {c}"
            );
        }
    }
    assert!(worst > 0.0 && worst_angle > 0.0, "the comparison saw quantisation");
    imported
}

#[test]
fn a_vat3_dynamic_mesh_plays_as_its_shader_plays_it() {
    let ldr = check_against_the_shader("ldr", &houdini_dynamic_fixture(7, false));
    let notes = ldr.notes().join("\n");
    assert!(notes.contains("6 bounds-extender vertices") && notes.contains("2 triangles"), "{notes}");
    assert!(notes.contains("6 pool triangles") && notes.contains("looping"), "{notes}");
    // Frames with 1 or 2 quads leave 4 or 2 of the 6 pool triangles on one texel.
    assert!(notes.contains("pool triangle-frames") && notes.contains("not drawn"), "{notes}");
    assert!(notes.contains("_col") && notes.contains("not read"), "{notes}");
    check_against_the_shader("hdr", &houdini_dynamic_fixture(5, true));
}

/// Writes the fixture with `edit` applied and returns the import's error.
fn refused(name: &str, edit: impl FnOnce(&mut HoudiniDynamicFixture, &Path)) -> String {
    let dir = scratch(name);
    let mut fx = houdini_dynamic_fixture(4, false);
    fx.write(&dir, "dynamic").unwrap();
    edit(&mut fx, &dir);
    let e = import(&dir).unwrap_err();
    assert!(matches!(e, crate::BakeError::Interop { .. }), "{name}: {e:?}");
    let _ = std::fs::remove_dir_all(&dir);
    e.to_string()
}

#[test]
fn what_the_fluid_import_cannot_read_is_refused_naming_it() {
    let e = refused("no-lookup", |_, dir| std::fs::remove_file(dir.join("tex/dynamic_lookup.png")).unwrap());
    assert!(e.contains("lookup table") && e.contains("dynamic_lookup.png") && e.contains("--lookup"), "{e}");
    let e = refused("two-pos", |fx, dir| {
        let text = String::from_utf8(fx.json.clone())
            .unwrap()
            .replace("\"Two Position Textures\": 0", "\"Two Position Textures\": 1");
        std::fs::write(dir.join("data/dynamic_data.json"), text).unwrap();
    });
    assert!(e.contains("Two Position Textures"), "{e}");
    let e = refused("frames", |fx, dir| {
        let text =
            String::from_utf8(fx.json.clone()).unwrap().replace("\"Frame Count\": 4", "\"Frame Count\": 5");
        std::fs::write(dir.join("data/dynamic_data.json"), text).unwrap();
    });
    assert!(e.contains("lookup table") && e.contains("Frame Count = 5"), "{e}");
    let e = refused("outside", |fx, dir| {
        let mut codes: Vec<[u8; 4]> =
            fx.lookup_texels.iter().map(|t| t.map(|c| (c * 255.0).round() as u8)).collect();
        codes[0] = [255, 255, 0, 0];
        let (w, h) = fx.lookup_size;
        std::fs::write(
            dir.join("tex/dynamic_lookup.png"),
            super::images::encode_rgba_png8(w, h, &codes).unwrap(),
        )
        .unwrap();
    });
    assert!(e.contains("outside the 7 x") && e.contains("position texture"), "{e}");
    // Not a dynamic mesh: the reader for its type is named.
    let e = refused("softbody", |fx, dir| {
        let text = String::from_utf8(fx.json.clone()).unwrap().replace("DynamicMesh", "Softbody");
        std::fs::write(dir.join("data/dynamic_data.json"), text).unwrap();
    });
    assert!(e.contains("read_houdini"), "{e}");
    // read_houdini names the fluid mode for a dynamic mesh.
    let dir = scratch("read-houdini");
    houdini_dynamic_fixture(3, false).write(&dir, "dynamic").unwrap();
    let e = super::houdini::read_houdini(&dir, &HoudiniOptions::default()).unwrap_err().to_string();
    assert!(e.contains("DynamicMesh") && e.contains("fluid mode"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn renamed_files_are_named_by_options() {
    let fx = houdini_dynamic_fixture(3, false);
    let dir = scratch("renamed");
    fx.write(&dir, "dynamic").unwrap();
    std::fs::rename(dir.join("tex/dynamic_lookup.png"), dir.join("tex/table.png")).unwrap();
    std::fs::rename(dir.join("tex/dynamic_pos.png"), dir.join("tex/points.png")).unwrap();
    let e = import(&dir).unwrap_err().to_string();
    assert!(e.contains("--lookup"), "{e}");
    let files = HoudiniFiles {
        lookup: Some(dir.join("tex/table.png")),
        pos: Some(dir.join("tex/points.png")),
        ..Default::default()
    };
    let b = read_houdini_dynamic_mesh(&dir, &HoudiniOptions { files, ..Default::default() }).unwrap();
    assert_eq!(b.frame(2).unwrap().triangles.len(), fx.frames[2].triangles.len());
    let _ = std::fs::remove_dir_all(&dir);
}
