//! The fixtures of `vat_procgen::testdata` import, bake and verify.

use vat_procgen::testdata::{small_skinned_glb, small_skinned_gltf};

#[test]
fn the_small_fixtures_import_bake_and_verify() {
    for (name, bytes) in [
        ("small.gltf", serde_json::to_vec(&small_skinned_gltf()).expect("the glTF JSON serialises")),
        ("small.glb", small_skinned_glb()),
    ] {
        let rig = vat_bake::gltf_import::import_slice(&bytes, None, name).expect("the fixture imports");
        // No normals: flat-shaded, one vertex per index.
        assert_eq!(rig.body_vertex_count(), 24, "{name}");
        assert_eq!(rig.clips[0].looping, None);
        let bake = vat_bake::prepare::prepare(&rig, &vat_bake::prepare::BakeOptions::default())
            .expect("the fixture bakes");
        assert!(bake.stats.clip_looping[0].looping, "{name}: its last key returns to its first");
        let report = vat_bake::verify::verify_prepared(&bake, &rig).expect("the bake verifies");
        assert!(report.passed, "{name}");
    }
}
