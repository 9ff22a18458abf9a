//! Allocations whose size a file controls are charged to the memory budget before they are made
//! (issue: hostile files cannot exhaust memory).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use vat_bake::gltf_import::{ImportOptions, import_slice_with};
use vat_procgen::testdata::morph_fan_out;

#[test]
fn unwelding_is_charged_before_it_is_allocated() {
    // 100,000 triangles x 1,000 targets: 300 KB of file, about 3.6 GB once unwelded.
    let file = morph_fan_out(100_000, 1_000);
    assert!(file.len() < 400_000, "{}", file.len());
    let budget = 512 << 20;
    let options = ImportOptions { max_memory: budget, ..ImportOptions::default() };
    let e = import_slice_with(&file, None, "fan-out", &options).unwrap_err().to_string();
    for part in ["flat shading", "memory budget", "--max-memory"] {
        assert!(e.contains(part), "{e:?} lacks {part:?}");
    }
    // The same shape, small: imported, one vertex per corner, every target kept.
    let rig = import_slice_with(&morph_fan_out(10, 4), None, "small", &options).unwrap();
    assert_eq!(rig.meshes[0].positions.len(), 30);
    assert_eq!(rig.meshes[0].morph_targets.len(), 4);
    assert!(rig.meshes[0].morph_targets.iter().all(|t| t.positions.len() == 30));
}
