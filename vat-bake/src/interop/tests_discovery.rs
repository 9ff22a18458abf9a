//! OpenVAT discovery and layouts: a bake laid out as OpenVAT's tutorial folder
//! ([`openvat_tutorial_fixture`]: `packed/<N>_packed_vat.png`, `mesh/M_<N>_glTF_yUp.glb`, a
//! power-of-two texture wrapped in blocks of frames) imports to the motion it encodes; what
//! discovery cannot settle is refused naming what it looked for and the option that names the file.

use std::path::{Path, PathBuf};

use super::openvat::{OpenVatOptions, read_openvat};
use crate::interop_fixtures::{OpenVatFixture, openvat_tutorial_fixture};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-discovery-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Imports `dir` and checks every vertex of every frame against the fixture's motion (positions
/// within the 16-bit step, normals within 0.01 rad), returning the notes.
fn check(dir: &Path, fx: &OpenVatFixture, options: &OpenVatOptions) -> Vec<String> {
    let b = read_openvat(dir, options).unwrap_or_else(|e| panic!("{e}"));
    let s = &b.sequence;
    assert_eq!(s.frame_count(), fx.frames);
    assert_eq!(s.vertex_count(), fx.rest.len());
    let normals = s.normals.as_ref().expect("packed normals are read");
    let mut worst = 0.0f32;
    for (f, (got, want)) in s.positions.iter().zip(&fx.positions).enumerate() {
        for (v, (p, q)) in got.iter().zip(want).enumerate() {
            let e = (*p - *q).abs();
            for a in 0..3 {
                assert!(e[a] <= fx.step[a] * 1.01 + 1e-6, "frame {f} vertex {v} axis {a}: {e}");
            }
            worst = worst.max(e.max_element());
            let angle = normals[f][v].angle_between(fx.normals[f][v]);
            assert!(angle < 0.01, "frame {f} vertex {v}: normal off by {angle}");
        }
    }
    assert!(worst > 0.0, "the comparison saw quantisation");
    b.notes
}

#[test]
fn the_tutorial_layout_imports_packed_normals_from_the_lower_half_and_wrapped_blocks() {
    // 10 vertices in 4 columns: 3 blocks of 5 frames, 15 rows of positions, height 32 (normals from
    // row 16, rows 15 and 31 spare).
    let fx = openvat_tutorial_fixture("normalsStrip", 10, 4, 5);
    assert_eq!(fx.size, (4, 32));
    let dir = scratch("tutorial");
    fx.write_tutorial_layout(&dir).unwrap();
    let notes = check(&dir, &fx, &OpenVatOptions::default());
    let all = notes.join("\n");
    assert!(
        all.contains("mesh/M_normalsStrip_glTF_yUp.glb") && all.contains("OpenVAT's export name"),
        "{all}"
    );
    assert!(all.contains("15 of positions and 15 of packed normals from row 16"), "{all}");
    // A single-row bake in a texture exactly twice its frames (what OpenVAT 1.1 writes) too.
    let fx = openvat_tutorial_fixture("single", 8, 8, 6);
    assert_eq!(fx.size, (8, 16));
    let dir2 = scratch("tutorial-single");
    fx.write_tutorial_layout(&dir2).unwrap();
    let notes = check(&dir2, &fx, &OpenVatOptions::default());
    assert!(notes.iter().any(|n| n.contains("4 unused")), "{notes:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn files_discovery_cannot_find_are_named_by_options_and_the_error_says_which() {
    let fx = openvat_tutorial_fixture("cube", 8, 8, 4);
    let dir = scratch("renamed");
    fx.write_tutorial_layout(&dir).unwrap();
    // The texture under a name OpenVAT never writes, beside a second one: discovery cannot choose.
    let packed = dir.join("packed");
    std::fs::rename(packed.join("cube_packed_vat.png"), packed.join("cube positions.png")).unwrap();
    let e = read_openvat(&dir, &OpenVatOptions::default()).unwrap_err().to_string();
    assert!(
        e.contains("the position texture")
            && e.contains("cube_vat.exr")
            && e.contains("cube_packed_vat.png")
            && e.contains("--texture"),
        "{e}"
    );
    let texture = packed.join("cube positions.png");
    let options = OpenVatOptions { texture: Some(texture.clone()), ..Default::default() };
    // Not named packed, but its lower half holds unit normals where the vertices read them.
    check(&dir, &fx, &options);
    // Two meshes: ambiguous, named by --mesh.
    std::fs::copy(dir.join("mesh/M_cube_glTF_yUp.glb"), dir.join("mesh/other.glb")).unwrap();
    std::fs::rename(dir.join("mesh/M_cube_glTF_yUp.glb"), dir.join("mesh/proxy.glb")).unwrap();
    let e = read_openvat(&dir, &options).unwrap_err().to_string();
    assert!(e.contains("the mesh") && e.contains("M_cube_glTF_yUp.glb") && e.contains("--mesh"), "{e}");
    assert!(e.contains("mesh/other.glb") && e.contains("mesh/proxy.glb"), "{e}");
    let options = OpenVatOptions { mesh: Some(dir.join("mesh/proxy.glb")), ..options };
    check(&dir, &fx, &options);
    // No sidecar: the error says what it looked for and names --json.
    std::fs::remove_file(packed.join("cube-remap_info.json")).unwrap();
    let e = read_openvat(&dir, &options).unwrap_err().to_string();
    assert!(e.contains("-remap_info.json") && e.contains("--json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mesh_that_reads_inside_a_block_is_refused_naming_openvats_layout() {
    // Rows interleaved by frame (another tool's wrap) do not start blocks of frames.
    let fx = openvat_tutorial_fixture("strip", 8, 4, 5);
    let dir = scratch("interleaved");
    fx.write_tutorial_layout(&dir).unwrap();
    let mut budget = super::Budget::new(1 << 26);
    let glb = dir.join("mesh/M_strip_glTF_yUp.glb");
    let mesh = super::read_lookup_mesh(&glb, &mut budget).unwrap();
    let h = fx.size.1 as f32;
    let lookup: Vec<[f32; 2]> =
        mesh.lookup.iter().map(|l| [l.x, if l.y > 0.1 { 1.5 / h } else { l.y }]).collect();
    let rewritten =
        super::openvat::lookup_glb("strip", &mesh.positions, &mesh.normals, None, &lookup, &mesh.indices)
            .unwrap();
    std::fs::write(&glb, rewritten).unwrap();
    let e = read_openvat(&dir, &OpenVatOptions::default()).unwrap_err().to_string();
    assert!(e.contains("reads row 1") && e.contains("blocks"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
