//! The fuzz entry points of `vat_procgen::fuzzing`: their seeds pass, broken inputs are refused
//! with typed errors.
#![allow(clippy::unwrap_used)]

use vat_bake::BakeError;
use vat_procgen::fuzzing::*;

#[test]
fn args_parse_like_the_command_line() {
    bake_from_args(b"--clips walk --frames 3 --lods 1").unwrap();
    bake_from_args(b"--clips wave --fps 4 --format f16 --bones").unwrap();
    for (bad, option) in [
        (&b"--fps"[..], "--fps"),
        (b"--fps x", "--fps"),
        (b"--format nope", "--format"),
        (b"--what", "arguments"),
        (b"\xff", "arguments"),
        (b"--fps 0", "--fps"),
        (b"--clips nope", "--clips"),
        (b"--lods 0", "--lods"),
    ] {
        match bake_from_args(bad) {
            Err(BakeError::InvalidOption { option: o, .. }) => assert_eq!(o, option, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    // The budget cap: 1 KiB is far too little.
    assert!(matches!(bake_from_args(b"--max-memory 1024"), Err(BakeError::OverBudget { .. })));
}

#[test]
fn the_houdini_seed_imports_and_broken_parts_are_refused() {
    import_houdini_parts(&houdini_seed()).unwrap();
    let seed = houdini_seed();
    let (json, png, glb) =
        split_openvat_parts(&seed).expect("a built-in OpenVAT seed splits into its json, png and glb");
    assert!(import_houdini_parts(&openvat_parts(json, &png[..png.len() / 2], glb)).is_err());
    assert!(import_houdini_parts(&openvat_parts(json, png, &[])).is_err());
    assert!(import_houdini_parts(b"\x01").is_err());
}

#[test]
fn the_dynamic_mesh_and_particle_seeds_import_and_broken_parts_are_refused() {
    for hdr in [false, true] {
        import_houdini_dynamic_parts(&houdini_dynamic_seed(hdr)).expect("the dynamic-mesh seed imports");
        import_houdini_particle_parts(&houdini_particle_seed(hdr)).expect("the particle seed imports");
    }
    let seed = houdini_dynamic_seed(false);
    let parts = split_parts(&seed, 5).expect("the dynamic-mesh seed has five parts");
    // Without its rotation texture (normals from the frames' triangles), and broken ways.
    import_houdini_dynamic_parts(&join_parts(&[parts[0], parts[1], parts[2], &[], parts[4]])).unwrap();
    let truncated = &parts[1][..parts[1].len() / 2];
    let type_is = |t: &str| String::from_utf8_lossy(parts[0]).replace("DynamicMesh", t).into_bytes();
    for (bad, expect) in [
        (join_parts(&[parts[0], truncated, parts[2], parts[3], parts[4]]), "fuzz_lookup.png"),
        (join_parts(&[parts[0], parts[1], parts[2], parts[3], &[]]), "fuzz_mesh.glb"),
        (join_parts(&[&type_is("Softbody"), parts[1], parts[2], parts[3], parts[4]]), "\"Softbody\""),
        (parts[0].to_vec(), "five"),
    ] {
        let e = import_houdini_dynamic_parts(&bad).unwrap_err().to_string();
        assert!(e.contains(expect), "{e}");
    }
    let seed = houdini_particle_seed(false);
    let parts = split_parts(&seed, 4).expect("the particle seed has four parts");
    import_houdini_particle_parts(&join_parts(&[parts[0], parts[1], &[], parts[3]])).unwrap();
    let truncated = &parts[1][..parts[1].len() / 2];
    for (bad, expect) in [
        (join_parts(&[parts[0], truncated, parts[2], parts[3]]), "fuzz_pos.png"),
        (join_parts(&[parts[0], parts[1], parts[2], &[]]), "fuzz_mesh.glb"),
        (join_parts(&[b"[{}]", parts[1], parts[2], parts[3]]), "VAT Type"),
        (b"\x01".to_vec(), "four"),
    ] {
        let e = import_houdini_particle_parts(&bad).unwrap_err().to_string();
        assert!(e.contains(expect), "{e}");
    }
}

#[test]
fn the_humanoid_glb_imports_bakes_and_reloads() {
    let glb =
        vat_bake::export::export_glb(&vat_procgen::humanoid()).expect("the built-in humanoid exports as glb");
    import_and_bake(&glb).unwrap();
    assert!(import_and_bake(&glb[..glb.len() / 2]).is_err());
    assert!(load_vat(b"VAT\0").is_err());
}
