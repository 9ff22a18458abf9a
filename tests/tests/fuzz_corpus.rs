//! Stable-toolchain replay of the fuzz corpora: every file of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` (crashes found by fuzzing, kept as regression inputs) goes through
//! the function its fuzz target calls (`vat_procgen::fuzzing`), and so do the bad-input files of
//! `tests/data/bad/`. None may panic; the files of `regressions/` must also keep failing cleanly or
//! succeeding as they did when fixed. The seed files are generated here: `VAT_BLESS=1` rewrites them.
//!
//! Running the fuzzers themselves needs a nightly toolchain and cargo-fuzz: `cargo xtask fuzz [SECONDS]`.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use vat_bake::gltf_import::import_slice;
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{BakeOptions, prepare};
use vat_procgen::fuzzing::{
    bake_from_args, import_and_bake, import_houdini_dynamic_parts, import_houdini_particle_parts,
    import_houdini_parts, import_openvat_parts, load_vat, obj_sequence_bake, sprite_frame_bake,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fuzz target's function: `Ok` when the input was accepted, the typed error's message otherwise.
type Target = fn(&[u8]) -> Result<(), String>;

/// The fuzz targets and the function each calls; `Err` is a typed error (fine), a panic is a bug.
const TARGETS: [(&str, Target); 9] = [
    ("vat_reader", |d| load_vat(d).map_err(|e| e.to_string())),
    ("gltf_bake", |d| import_and_bake(d).map_err(|e| e.to_string())),
    ("bake_args", |d| bake_from_args(d).map_err(|e| e.to_string())),
    ("obj_sequence", |d| obj_sequence_bake(d).map_err(|e| e.to_string())),
    ("openvat_import", |d| import_openvat_parts(d).map_err(|e| e.to_string())),
    ("houdini_import", |d| import_houdini_parts(d).map_err(|e| e.to_string())),
    ("houdini_dynamic_import", |d| import_houdini_dynamic_parts(d).map_err(|e| e.to_string())),
    ("houdini_particle_import", |d| import_houdini_particle_parts(d).map_err(|e| e.to_string())),
    ("sprite_frames", |d| sprite_frame_bake(d).map_err(|e| e.to_string())),
];

/// What a regression input must keep doing: be accepted, or fail with a message containing the text.
#[derive(Clone, Copy)]
enum Expect {
    Accepted,
    Refused(&'static str),
}

/// Generated regression inputs: `(target, file name, bytes, expected outcome)`, one per class of
/// hostile input the project has fixed (each also has its own test beside the fix). Small, so the
/// fuzzers can start from them.
fn regressions() -> Vec<(&'static str, String, Vec<u8>, Expect)> {
    use vat_procgen::testdata::{
        degenerate, degenerate_only, fan, many_nodes, morph_fan_out, small_skinned_gltf,
    };
    let mut out = Vec::new();
    let gltf = |v: &serde_json::Value| serde_json::to_vec(v).unwrap();
    // External files: fuzzed imports have no folder, so every external URI is refused; the
    // confinement rules themselves are tested in vat-cli/tests/bake_assets.rs.
    for (name, uri, expect) in [
        ("uri-absolute", "/etc/passwd", "absolute path"),
        ("uri-percent-absolute", "%2Fetc%2Fpasswd", "absolute path"),
        ("uri-parent", "../../../../etc/passwd", "no base directory"),
        ("uri-proc", "/proc/self/environ", "absolute path"),
        ("uri-dev-zero", "/dev/zero", "absolute path"),
        ("uri-file-scheme", "file:///etc/passwd", "only data: URIs"),
    ] {
        let mut v = small_skinned_gltf();
        v["buffers"][0]["uri"] = serde_json::json!(uri);
        out.push(("gltf_bake", format!("{name}.gltf"), gltf(&v), Expect::Refused(expect)));
    }
    // Image URIs: out of the folder (from the name alone, whether it exists or not), and a PNG
    // bomb charged from its header before it is decoded (the read and write gates' issue).
    let mut v = small_skinned_gltf();
    v["images"] = serde_json::json!([{ "uri": "/nonexistent/x.png" }]);
    v["textures"] = serde_json::json!([{ "source": 0 }]);
    v["materials"] = serde_json::json!([{ "pbrMetallicRoughness": { "baseColorTexture": { "index": 0 } } }]);
    v["meshes"][0]["primitives"][0]["material"] = serde_json::json!(0);
    out.push((
        "gltf_bake",
        "image-uri-absolute-missing.gltf".into(),
        gltf(&v),
        Expect::Refused("outside the folder"),
    ));
    let bomb = vat_procgen::testdata::png_bomb(8192);
    v["images"] = serde_json::json!([{ "uri": format!("data:image/png;base64,{}", { use base64::Engine as _; base64::engine::general_purpose::STANDARD.encode(bomb) }) }]);
    out.push(("gltf_bake", "image-png-bomb.gltf".into(), gltf(&v), Expect::Refused("--max-memory")));
    // A bufferView image without `mimeType` (the gltf crate unwraps it; found by fuzzing).
    let (mut json, bin) = vat_procgen::testdata::split_glb(&vat_procgen::testdata::textured_rigid_glb());
    for image in json["images"].as_array_mut().into_iter().flatten() {
        if let Some(o) = image.as_object_mut() {
            o.remove("mimeType");
        }
    }
    let glb = vat_procgen::testdata::glb(&serde_json::to_vec(&json).expect("a JSON value serialises"), &bin);
    out.push(("gltf_bake", "image-without-mime-type.glb".into(), glb, Expect::Accepted));
    let mut bom = "\u{feff}".as_bytes().to_vec();
    bom.extend(gltf(&small_skinned_gltf()));
    out.push(("gltf_bake", "utf8-bom.gltf".into(), bom, Expect::Accepted));
    // Names that would drive a terminal are data: baked as they are (the CLI escapes them).
    let mut v = small_skinned_gltf();
    v["animations"][0]["name"] = serde_json::json!("\u{1b}[2J\u{1b}]0;owned\u{7}\r\nvat: error: forged");
    out.push(("gltf_bake", "terminal-escapes-in-names.gltf".into(), gltf(&v), Expect::Accepted));
    // Cost classes (vat-bake/tests/scaling.rs and budgets.rs).
    let flat = degenerate_only(10);
    out.push(("gltf_bake", "zero-area-only.glb".into(), flat, Expect::Refused("repeat a vertex index")));
    out.push(("gltf_bake", "zero-area-mostly.glb".into(), degenerate(100_000), Expect::Accepted));
    out.push(("gltf_bake", "fan-over-work-budget.glb".into(), fan(5_000), Expect::Accepted));
    out.push(("gltf_bake", "many-sockets.glb".into(), many_nodes(500), Expect::Accepted));
    out.push((
        "gltf_bake",
        "unweld-over-budget.glb".into(),
        morph_fan_out(20_000, 100),
        Expect::Refused("flat shading"),
    ));
    for (name, text, expect) in [
        ("index-past-end", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", Expect::Refused("fuzz.obj")),
        ("index-zero", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", Expect::Refused("fuzz.obj")),
        ("nan-position", "v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", Expect::Refused("fuzz.obj")),
        ("no-faces", "v 0 0 0\nv 1 0 0\nl 1 2\n", Expect::Refused("no triangles")),
        ("huge-index", "v 0 0 0\nf 1 2 4294967295\n", Expect::Refused("fuzz.obj")),
        // Found by the fuzzer: a relative texture index with no texture coordinates overflowed
        // inside tobj (`vt * 2 + 1`); now refused before tobj sees it.
        (
            "relative-texcoord-before-any",
            "v 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nf 1/-2 -1 1\nvt 0 0\n",
            Expect::Refused("names no texture coordinate"),
        ),
    ] {
        out.push(("obj_sequence", format!("{name}.obj"), text.as_bytes().to_vec(), expect));
    }
    for (name, args, expect) in [
        // The fuzz target caps frames (FUZZ_MAX_FRAMES): a huge count is sampled at the cap.
        ("frames-huge", "--frames 999999999", Expect::Accepted),
        ("fps-nan", "--fps NaN", Expect::Refused("--fps")),
        ("capture-unknown", "--capture \u{1b}[2J", Expect::Refused("no node named")),
        ("memory-one-byte", "--max-memory 1", Expect::Refused("memory budget")),
    ] {
        out.push(("bake_args", format!("{name}.txt"), args.as_bytes().to_vec(), expect));
    }
    // OpenVAT imports: the seed's sidecar, texture and glb, each made hostile in turn.
    importer_cases(
        &mut out,
        "openvat_import",
        &vat_procgen::fuzzing::openvat_seed(),
        "fuzz.glb",
        &[
            ("frames-lie", "\"Frames\": 3", "\"Frames\": 5", "texture's height"),
            ("bounds-nan", "[0, -0.5, 0]", "[\"NaN\", 0, 0]", "finite numbers"),
            ("bounds-inverted", "[1, 0.5, \"0.3\"]", "[1, -0.6, 0.3]", "below Min"),
            ("clip-past-frames", "\"endFrame\": 3", "\"endFrame\": 9", "outside its"),
        ],
    );
    // Houdini VAT 3 imports: the seed's `_data.json`, texture and mesh, each made hostile in turn.
    importer_cases(
        &mut out,
        "houdini_import",
        &vat_procgen::fuzzing::houdini_seed(),
        "fuzz_mesh.glb",
        &[
            ("frames-lie", "\"Frame Count\": 3", "\"Frame Count\": 5", "Frame Count"),
            ("frames-zero", "\"Frame Count\": 3", "\"Frame Count\": 0", "whole number"),
            ("bounds-nan", "\"Bound Min Y\": -0.5", "\"Bound Min Y\": \"NaN\"", "finite number"),
            ("bounds-inverted", "\"Bound Max Y\": 0.5", "\"Bound Max Y\": -0.6", "below Bound Min"),
            // A rigid-body bake is four parts (its rotation texture too).
            ("rigid-body", "Softbody", "Rigidbody", "four"),
            // Each imports through its own function, which the refusal names.
            (
                "particles",
                "Softbody",
                "Particles",
                "a particle bake imports into vat's sprite mode (read_houdini_particles",
            ),
            (
                "dynamic-mesh",
                "Softbody",
                "DynamicMesh",
                "a dynamic mesh imports into vat's fluid mode (read_houdini_dynamic_mesh",
            ),
        ],
    );
    // Houdini VAT 3 rigid-body imports: `_data.json`, position and rotation EXRs, mesh.
    let rigid = vat_procgen::fuzzing::houdini_rigid_fixture(3, 3, 4, true);
    let four = |json: &[u8], pos: &[u8], rot: &[u8], glb: &[u8]| {
        vat_procgen::fuzzing::join_parts(&[json, pos, rot, glb])
    };
    let (pos, rot, glb) = (&rigid.pos_exr[..], &rigid.rot_exr[..], &rigid.glb[..]);
    out.push(("houdini_import", "rigid-seed-accepted.bin".to_owned(), rigid.parts(), Expect::Accepted));
    let json = String::from_utf8(rigid.json.clone()).unwrap();
    for (name, from, to, expect) in [
        ("rigid-ldr", "\"Use HDR Textures\": 1", "\"Use HDR Textures\": 0", "LDR"),
        ("rigid-frames-lie", "\"Frame Count\": 4", "\"Frame Count\": 3", "Frame Count"),
        (
            "rigid-two-position-textures",
            "\"Two Position Textures\": 0",
            "\"Two Position Textures\": 1",
            "Two Position",
        ),
    ] {
        assert!(json.contains(from), "rigid {name}: the fixture has no {from:?}");
        let bytes = four(json.replace(from, to).as_bytes(), pos, rot, glb);
        out.push(("houdini_import", format!("{name}.bin"), bytes, Expect::Refused(expect)));
    }
    for (name, bytes, expect) in [
        ("rigid-rot-truncated", four(&rigid.json, pos, &rot[..rot.len() / 2], glb), "EXR"),
        ("rigid-rot-empty", four(&rigid.json, pos, &[], glb), "PNG"),
        ("rigid-mesh-missing", four(&rigid.json, pos, rot, &[]), "fuzz_mesh.glb"),
        ("rigid-three-parts", vat_procgen::fuzzing::openvat_parts(&rigid.json, pos, glb), "four"),
    ] {
        out.push(("houdini_import", format!("{name}.bin"), bytes, Expect::Refused(expect)));
    }
    let input = vat_procgen::fuzzing::openvat_parts;
    let seed = vat_procgen::fuzzing::houdini_seed();
    let (_, png, glb) = vat_procgen::fuzzing::split_openvat_parts(&seed)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    out.push((
        "houdini_import",
        "not-json.bin".to_owned(),
        input(b"[{\"VAT Type\": ", png, glb),
        Expect::Refused("JSON"),
    ));
    // Two rows (and a mesh looking them up) for a Frame Count of 3.
    let short = vat_procgen::fuzzing::houdini_quad(2);
    let (_, short_png, short_glb) = vat_procgen::fuzzing::split_openvat_parts(&short)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    let (json, _, _) = vat_procgen::fuzzing::split_openvat_parts(&seed)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    out.push((
        "houdini_import",
        "image-too-short.bin".to_owned(),
        input(json, short_png, short_glb),
        Expect::Refused("Frame Count"),
    ));
    houdini_dynamic_and_particle_cases(&mut out);
    out
}

/// The dynamic-mesh and particle importers' regression inputs: each seed (accepted, with and
/// without its optional texture), and its `_data.json`, textures and mesh made hostile in turn.
fn houdini_dynamic_and_particle_cases(out: &mut Vec<(&'static str, String, Vec<u8>, Expect)>) {
    use vat_procgen::fuzzing::{houdini_dynamic_seed, houdini_particle_seed, join_parts, split_parts};
    let target = "houdini_dynamic_import";
    let seed = houdini_dynamic_seed(false);
    let p = split_parts(&seed, 5).expect("the dynamic-mesh seed has five parts");
    let json = std::str::from_utf8(p[0]).expect("the seed's data JSON is UTF-8");
    let (lookup, pos, rot, glb) = (p[1], p[2], p[3], p[4]);
    let five = |json: &[u8], lookup: &[u8], pos: &[u8], rot: &[u8], glb: &[u8]| {
        join_parts(&[json, lookup, pos, rot, glb])
    };
    let mut push =
        |target, name: &str, bytes, expect| out.push((target, format!("{name}.bin"), bytes, expect));
    push(target, "seed-accepted", seed.clone(), Expect::Accepted);
    push(target, "no-rotation-accepted", five(p[0], lookup, pos, &[], glb), Expect::Accepted);
    for (name, from, to, expect) in [
        ("frames-lie", "\"Frame Count\": 3", "\"Frame Count\": 5", "not one bake"),
        ("not-dynamic", "\"DynamicMesh\"", "\"Particles\"", "this target reads \"DynamicMesh\""),
        (
            "two-position-textures",
            "\"Two Position Textures\": 0",
            "\"Two Position Textures\": 1",
            "Two Position",
        ),
    ] {
        assert!(json.contains(from), "{target} {name}: the seed has no {from:?}");
        let bytes = five(json.replace(from, to).as_bytes(), lookup, pos, rot, glb);
        push(target, name, bytes, Expect::Refused(expect));
    }
    for (name, bytes, expect) in [
        ("lookup-truncated", five(p[0], &lookup[..lookup.len() / 2], pos, rot, glb), "fuzz_lookup.png"),
        ("pos-empty", five(p[0], lookup, &[], rot, glb), "fuzz_pos.png"),
        ("mesh-missing", five(p[0], lookup, pos, rot, &[]), "fuzz_mesh.glb"),
        // The lookup table where the position texture should be: not the rotation texture's size.
        ("lookup-as-positions", five(p[0], lookup, lookup, rot, glb), "they must match"),
        ("four-parts", join_parts(&[p[0], lookup, pos, glb]), "five length-prefixed"),
    ] {
        push(target, name, bytes, Expect::Refused(expect));
    }
    let target = "houdini_particle_import";
    let seed = houdini_particle_seed(false);
    let p = split_parts(&seed, 4).expect("the particle seed has four parts");
    let json = std::str::from_utf8(p[0]).expect("the seed's data JSON is UTF-8");
    let (pos, col, glb) = (p[1], p[2], p[3]);
    let four = |json: &[u8], pos: &[u8], col: &[u8], glb: &[u8]| join_parts(&[json, pos, col, glb]);
    push(target, "seed-accepted", seed.clone(), Expect::Accepted);
    push(target, "no-colour-accepted", four(p[0], pos, &[], glb), Expect::Accepted);
    for (name, from, to, expect) in [
        ("frames-lie", "\"Frame Count\": 3", "\"Frame Count\": 4", "Frame Count"),
        ("not-particles", "\"Particles\"", "\"Softbody\"", "this target reads \"Particles\""),
        ("bounds-nan", "\"Bound Min Y\": -1.2", "\"Bound Min Y\": \"NaN\"", "finite number"),
    ] {
        assert!(json.contains(from), "{target} {name}: the seed has no {from:?}");
        push(target, name, four(json.replace(from, to).as_bytes(), pos, col, glb), Expect::Refused(expect));
    }
    for (name, bytes, expect) in [
        ("pos-truncated", four(p[0], &pos[..pos.len() / 2], col, glb), "fuzz_pos.png"),
        ("col-truncated", four(p[0], pos, &col[..col.len() / 2], glb), "fuzz_col.png"),
        ("mesh-missing", four(p[0], pos, col, &[]), "fuzz_mesh.glb"),
        ("three-parts", join_parts(&[p[0], pos, glb]), "four length-prefixed"),
    ] {
        push(target, name, bytes, Expect::Refused(expect));
    }
}

/// An importer's regression inputs from its valid three-part `seed` (sidecar, texture, mesh): the
/// seed itself (accepted), each `(name, from, to, expected message)` edit of its sidecar text, a
/// truncated PNG, a truncated EXR and a missing mesh (named `mesh` in the message).
fn importer_cases(
    out: &mut Vec<(&'static str, String, Vec<u8>, Expect)>,
    target: &'static str,
    seed: &[u8],
    mesh: &'static str,
    edits: &[(&str, &str, &str, &'static str)],
) {
    let (json, png, glb) = vat_procgen::fuzzing::split_openvat_parts(seed).unwrap();
    let json_text = std::str::from_utf8(json).unwrap();
    let input = vat_procgen::fuzzing::openvat_parts;
    let mut push =
        |name: &str, bytes: Vec<u8>, expect| out.push((target, format!("{name}.bin"), bytes, expect));
    push("seed-accepted", input(json, png, glb), Expect::Accepted);
    for &(name, from, to, expect) in edits {
        assert!(json_text.contains(from), "{target} {name}: the seed has no {from:?}");
        push(name, input(json_text.replace(from, to).as_bytes(), png, glb), Expect::Refused(expect));
    }
    push("png-truncated", input(json, &png[..png.len() / 2], glb), Expect::Refused("PNG"));
    push("exr-truncated", input(json, &[0x76, 0x2f, 0x31, 0x01, 2, 0, 0], glb), Expect::Refused("EXR"));
    push("mesh-missing", input(json, png, &[]), Expect::Refused(mesh));
}

#[test]
fn the_regression_inputs_are_what_the_generator_makes_and_keep_their_outcome() {
    let blessing = std::env::var_os("VAT_BLESS").is_some();
    let mut failures = Vec::new();
    for (target, name, bytes, expect) in regressions() {
        let path = root().join("fuzz/regressions").join(target).join(&name);
        if blessing {
            let folder = path.parent().expect("a regression file lies in its target's folder");
            std::fs::create_dir_all(folder).expect("cannot create the regression folder");
            std::fs::write(&path, &bytes).unwrap();
        }
        let disk =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; VAT_BLESS=1 writes it", path.display()));
        assert!(disk == bytes, "{} is stale; VAT_BLESS=1 rewrites it", path.display());
        assert!(bytes.len() <= 1 << 20, "{}: regression inputs stay under 1 MiB", path.display());
        let f = TARGETS.iter().find(|t| t.0 == target).unwrap().1;
        match (run(target, f, &path, &bytes), expect) {
            (Err(panicked), _) => failures.push(panicked),
            (Ok(Ok(())), Expect::Accepted) => {}
            (Ok(Err(e)), Expect::Refused(text)) if e.contains(text) => {}
            (Ok(outcome), _) => failures.push(format!("{}: {outcome:?}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Generated seeds: `(target, file name, bytes)`. Small valid inputs of each kind, so the fuzzer
/// starts from deep inside the formats.
/// The `many-materials.gltf` seed (see [`seeds`]): kept under the seeds' 32 KiB, so one
/// position-only triangle and short colours (quarters in each channel).
fn many_materials_gltf() -> Vec<u8> {
    use base64::Engine as _;
    use serde_json::json;
    let positions: Vec<u8> =
        [0.0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let uri = format!(
        "data:application/octet-stream;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&positions)
    );
    let quarter = |k: usize, d: usize| (k / d % 5) as f32 / 4.0;
    let mut materials: Vec<serde_json::Value> = (0..257)
        .map(|k| json!({ "pbrMetallicRoughness": { "baseColorFactor": [quarter(k, 1), quarter(k, 5), quarter(k, 25), quarter(k, 125)] } }))
        .collect();
    materials.push(materials[3].clone());
    materials.push(json!({}));
    let primitives: Vec<serde_json::Value> =
        (0..258).map(|k| json!({ "attributes": { "POSITION": 0 }, "material": k })).collect();
    let doc = json!({
        "asset": { "version": "2.0" },
        "scene": 0,
        "scenes": [{ "nodes": [0] }],
        "nodes": [{ "mesh": 0 }],
        "meshes": [{ "primitives": primitives }],
        "materials": materials,
        "buffers": [{ "byteLength": 36, "uri": uri }],
        "bufferViews": [{ "buffer": 0, "byteLength": 36 }],
        "accessors": [{ "bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0] }],
    });
    serde_json::to_vec(&doc).expect("the seed serialises")
}

fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    // Seeds the project writes itself (no third-party file is copied into the repository): the
    // small skinned glTF as .gltf and .glb, and the procedural humanoid's .glb export.
    let small_gltf = serde_json::to_vec(&vat_procgen::testdata::small_skinned_gltf()).unwrap();
    let small_glb = vat_procgen::testdata::small_skinned_glb();
    let mut out = Vec::new();
    out.push(("gltf_bake", "small-skinned.gltf".to_owned(), small_gltf.clone()));
    out.push(("gltf_bake", "small-skinned.glb".to_owned(), small_glb));
    // More than 256 materials: one triangle drawn by 258 primitives, 257 of them with their own
    // base colour and one with a copy of material 3, plus a material nothing draws with, so that
    // the import leaves out, merges and moves base colours into vertex colours (`material_plan`).
    out.push(("gltf_bake", "many-materials.gltf".to_owned(), many_materials_gltf()));
    let skin = import_slice(&small_gltf, None, "small").unwrap();
    let mut boxes = skin.clone();
    boxes.clips.clear(); // a static asset
    let small = |bones: bool, format| BakeOptions {
        frames: Some(3),
        lods: LodOptions::Count(1),
        bones,
        format,
        ..BakeOptions::default()
    };
    use vat_core::format::encoding::VertexFormat::{F16, Packed64, Split8};
    for (name, rig, options) in [
        ("small-skinned-packed64.vat", &skin, small(false, Packed64)),
        ("small-skinned-f16-bones.vat", &skin, small(true, F16)),
        ("small-static-split8.vat", &boxes, small(false, Split8)),
    ] {
        out.push(("vat_reader", name.to_owned(), prepare(rig, &options).unwrap().to_vat_bytes().unwrap()));
    }
    // The skin-residual format (format 11): the small skin baked in it, its residual re-encoded
    // against the skin moved by up to 2 mm so that vertices have residual bits (its own skin alone
    // needs none).
    let plain = prepare(&skin, &small(false, vat_core::format::encoding::VertexFormat::SkinResidual))
        .expect("the small skin bakes in skin-residual")
        .to_vat_bytes()
        .expect("its bytes");
    out.push(("vat_reader", "small-skin-residual.vat".to_owned(), with_residual_bits(&plain)));
    // A rigid-mode file (format 3): six pieces of the shatter.
    let rigid = vat_bake::rigid::bake_rigid(
        &vat_procgen::shatter_with(6, 1),
        &vat_bake::rigid::RigidBakeOptions::default(),
    )
    .unwrap()
    .0;
    out.push(("vat_reader", "small-rigid-shatter.vat".to_owned(), rigid));
    // A fluid-mode file (format 6): three frames of one, two and one triangles.
    let tri = |y: f32, n: u32| vat_bake::fluid::FluidMesh {
        positions: (0..=n).flat_map(|i| [[i as f32, y, 0.0], [i as f32, y + 1.0, 0.0]]).collect(),
        normals: Vec::new(),
        triangles: (0..n).map(|i| [2 * i, 2 * i + 2, 2 * i + 1]).collect(),
    };
    let fluid = vat_bake::fluid::FluidSequence {
        name: "fluid".into(),
        fps: 10.0,
        frames: vec![tri(0.0, 1), tri(0.5, 2), tri(1.0, 1)],
    };
    let fluid = vat_bake::fluid::bake_fluid(&fluid, &vat_bake::fluid::FluidBakeOptions::default()).unwrap().0;
    out.push(("vat_reader", "small-fluid.vat".to_owned(), fluid));
    // Sprite frames (format 7): a CSV frame, an ASCII PLY frame (pscale, uchar colour, a face list
    // to skip) and a binary one, and a small looping sprite file baked from three CSV frames.
    let csv = "id,x,y,z,size,r,g,b,a,rotation\n1,0,0.5,0,0.1,1,0.5,0.2,1,0.3\n2,0.2,0.1,-0.1,0.05,0.2,0.4,1,0.6,-2\n";
    out.push(("sprite_frames", "two-particles.csv".to_owned(), csv.as_bytes().to_vec()));
    let ply = "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n\
               property int id\nproperty float pscale\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n\
               element face 1\nproperty list uchar int vertex_indices\nend_header\n0 1 0 7 0.05 255 128 0\n\
               1 0 0 8 0.02 0 128 255\n3 0 1 1\n";
    out.push(("sprite_frames", "two-particles-ascii.ply".to_owned(), ply.as_bytes().to_vec()));
    let mut binary =
        b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\n\
                       property float z\nproperty uint id\nproperty float size\nend_header\n"
            .to_vec();
    for (id, x) in [(3u32, 0.5f32), (4, -0.5)] {
        for v in [x, 1.0, 0.0] {
            binary.extend(v.to_le_bytes());
        }
        binary.extend(id.to_le_bytes());
        binary.extend(0.1f32.to_le_bytes());
    }
    out.push(("sprite_frames", "two-particles-binary.ply".to_owned(), binary));
    let frames = (0..3)
        .map(|k| {
            let text = format!(
                "id,x,y,z,size,r,g,b,a\n1,0,{},0,0.1,1,1,1,1\n{},1,0,0,0.2,0,0,1,1\n",
                0.1 * k as f32,
                2 + k
            );
            vat_bake::sprite::read_sprite_csv(&text, "seed.csv").unwrap().0
        })
        .collect();
    let sprite = vat_bake::sprite::SpriteSequence { name: "sprite".into(), fps: 10.0, frames };
    let options = vat_bake::sprite::SpriteBakeOptions { looping: true, ..Default::default() };
    out.push((
        "vat_reader",
        "small-sprite.vat".to_owned(),
        vat_bake::sprite::bake_sprite(&sprite, &options).unwrap().0,
    ));
    // Materials (format 4): the textured rigid glTF (two pieces, two materials, a 4 x 4 PNG base
    // colour texture, TEXCOORD_0 and COLOR_0) as a glTF seed, and its rigid and soft bakes (the
    // materials, material texture array, Uv0 and Color0 sections) as .vat seeds.
    let textured = vat_procgen::testdata::textured_rigid_glb();
    out.push(("gltf_bake", "textured-rigid.glb".to_owned(), textured.clone()));
    let pieces = import_slice(&textured, None, "textured").unwrap();
    let source = vat_bake::rigid::RigidSource::from_rig(&pieces, 4.0).unwrap();
    let rigid =
        vat_bake::rigid::bake_rigid(&source, &vat_bake::rigid::RigidBakeOptions::default()).unwrap().0;
    out.push(("vat_reader", "small-rigid-textured.vat".to_owned(), rigid.clone()));
    let soft = prepare(&pieces, &small(false, Packed64)).unwrap().to_vat_bytes().unwrap();
    for bytes in [&rigid, &soft] {
        let asset = vat_core::container::Asset::parse(bytes).unwrap();
        let m = asset.manifest();
        assert!(m.materials.len() == 2 && m.material_textures.is_some(), "a textured seed without materials");
    }
    out.push(("vat_reader", "small-soft-textured.vat".to_owned(), soft.clone()));
    // An impostor tier with a colour set per material variant (formats 8 to 10: the tier, its far
    // cards' bound, the variants' colours): that soft bake given a material variant (each piece in
    // the other's material), 2 x 2 views of 8 px, one image per clip.
    let asset = vat_core::container::Asset::parse(&soft).expect("the textured soft seed parses");
    let mut manifest = asset.manifest().clone();
    manifest.material_variants =
        vec![vat_core::container::MaterialVariant { name: "swapped".into(), materials: vec![1, 0] }];
    let blobs: Vec<&[u8]> = (0..manifest.blobs.len() as u32)
        .map(|i| asset.get_blob(vat_core::container::BlobId(i)).expect("every listed blob is in the file"))
        .collect();
    let with_variant = vat_core::container::container_bytes(manifest, &blobs)
        .expect("a valid variant (each piece in the other's material)");
    let asset = vat_core::container::Asset::parse(&with_variant).expect("the file with the variant parses");
    let options = vat_bake::impostor::ImpostorOptions {
        grid: vat_core::format::impostor::ViewGrid::new(2, vat_core::format::impostor::ViewCoverage::Hemi)
            .expect("2 views per side is a valid grid"),
        tile_size: 8,
        frames_per_clip: 1,
        samples_per_side: 1,
    };
    let images = vat_bake::impostor::bake_measured_tier(&asset, &options).expect("the small tier bakes").0;
    let tiered = vat_bake::impostor::with_tier_bytes(&asset, &images).expect("the file with its tier writes");
    let parsed = vat_core::container::Asset::parse(&tiered).expect("the seed with its tier parses");
    assert_eq!(parsed.manifest().impostor_material_variants, 1, "the seed holds the variant's colours");
    out.push(("vat_reader", "small-impostor-variants.vat".to_owned(), tiered));
    for (i, args) in [
        "--clips walk --frames 3",
        "--clips wave --fps 4 --format f16 --bones",
        "--clips idle,run --frames 2 --lod-ratios 1,0.5 --format split8",
        "--clips walk --frames 2 --format unorm8 --precise-normals",
        "--clips run --frames 2 --format f32 --tangents --max-texture-dim 512",
        "--clips wave --frames 2 --format unorm16 --capture hand_l",
        "--clips walk --fps 0",
        "--clips walk --frames 3 --max-memory 4096",
        "--clips walk --frames 2 --format skin-residual --residual-mm 0.1 --residual-deg 0.5",
    ]
    .iter()
    .enumerate()
    {
        out.push(("bake_args", format!("args-{i}.txt"), args.as_bytes().to_vec()));
    }
    // OBJ frames: a cube with positions, texture coordinates and normals per corner (quads,
    // triangulated), and two objects with negative (relative) indices and no normals.
    let cube = "# a cube\no cube\nv -1 -1 -1\nv 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nv -1 -1 1\nv 1 -1 1\nv 1 1 1\nv -1 1 1\n\
                vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvn 0 0 -1\nvn 0 0 1\nvn 0 -1 0\nvn 0 1 0\nvn -1 0 0\nvn 1 0 0\n\
                f 1/1/1 4/4/1 3/3/1 2/2/1\nf 5/1/2 6/2/2 7/3/2 8/4/2\nf 1/1/3 2/2/3 6/3/3 5/4/3\n\
                f 4/1/4 8/2/4 7/3/4 3/4/4\nf 1/1/5 5/2/5 8/3/5 4/4/5\nf 2/1/6 3/2/6 7/3/6 6/4/6\n";
    out.push(("obj_sequence", "cube.obj".to_owned(), cube.as_bytes().to_vec()));
    let two = "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\no b\nv 2 0 0\nv 3 0 0\nv 2 1 0\nv 3 1 0\nf -4 -3 -1 -2\n";
    out.push(("obj_sequence", "two-objects.obj".to_owned(), two.as_bytes().to_vec()));
    out.push(("openvat_import", "quad-png16-two-clips.bin".to_owned(), vat_procgen::fuzzing::openvat_seed()));
    out.push(("houdini_import", "quad-png16-softbody.bin".to_owned(), vat_procgen::fuzzing::houdini_seed()));
    out.push((
        "houdini_import",
        "cubes-exr32-rigidbody.bin".to_owned(),
        vat_procgen::fuzzing::houdini_rigid_seed(),
    ));
    for (hdr, kind) in [(false, "png8"), (true, "exr32")] {
        let dynamic = vat_procgen::fuzzing::houdini_dynamic_seed(hdr);
        out.push(("houdini_dynamic_import", format!("ribbon-{kind}-dynamicmesh.bin"), dynamic));
        let particles = vat_procgen::fuzzing::houdini_particle_seed(hdr);
        out.push(("houdini_particle_import", format!("cards-{kind}-particles.bin"), particles));
    }
    out
}

/// Runs `f` on `data`, turning a panic into a message naming `file`.
fn run(target: &str, f: Target, file: &Path, data: &[u8]) -> Result<Result<(), String>, String> {
    catch_unwind(AssertUnwindSafe(|| f(data))).map_err(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("{target}: {} panicked: {what}", file.display())
    })
}

#[test]
fn the_seed_corpora_are_what_the_generator_makes() {
    let seeds = seeds();
    if std::env::var_os("VAT_BLESS").is_some() {
        for (target, name, bytes) in &seeds {
            let dir = root().join("fuzz/corpus").join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    for (target, name, bytes) in &seeds {
        let path = root().join("fuzz/corpus").join(target).join(name);
        let disk =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; VAT_BLESS=1 writes it", path.display()));
        assert!(disk == *bytes, "{} is stale; VAT_BLESS=1 rewrites it", path.display());
        assert!(bytes.len() <= 32 << 10, "{}: seeds stay small", path.display());
    }
}

#[test]
fn every_corpus_and_regression_file_replays_without_panicking() {
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for (target, f) in TARGETS {
        let (mut files, mut ok) = (0, 0);
        for sub in ["fuzz/corpus", "fuzz/regressions"] {
            let dir = root().join(sub).join(target);
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                match run(target, f, &path, &data) {
                    Ok(Ok(())) => ok += 1,
                    Ok(Err(_)) => {}
                    Err(message) => failures.push(message),
                }
                files += 1;
            }
        }
        assert!(files > 0, "{target}: no corpus files");
        counts.push(format!("{target}: {files} files, {ok} accepted"));
    }
    // The bad-input corpus through the same functions.
    let bad = root().join("tests/data/bad");
    let mut bad_files = 0;
    for entry in std::fs::read_dir(&bad).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let f = match ext {
            "vat" => TARGETS[0].1,
            "gltf" | "glb" => TARGETS[1].1,
            _ => continue,
        };
        let data = std::fs::read(&path).unwrap();
        if let Err(message) = run("bad input", f, &path, &data) {
            failures.push(message);
        }
        bad_files += 1;
    }
    println!("{}; {bad_files} bad-input files", counts.join("; "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Parses one libFuzzer dictionary entry (`"text"`, optionally `name="text"`, escapes `\\`, `\"`
/// and `\xNN`), or says why libFuzzer would refuse the line.
fn dictionary_entry(line: &str) -> Result<Vec<u8>, String> {
    let body = line.split_once('"').map(|(_, rest)| rest).ok_or("no opening quote")?;
    let body = body.strip_suffix('"').ok_or("no closing quote")?;
    let (mut out, mut chars) = (Vec::new(), body.bytes());
    while let Some(b) = chars.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match chars.next() {
            Some(b'\\') => out.push(b'\\'),
            Some(b'"') => out.push(b'"'),
            Some(b'x') => {
                let hex: Vec<u8> = chars.by_ref().take(2).collect();
                let text = std::str::from_utf8(&hex).map_err(|_| "bad \\x escape")?;
                out.push(u8::from_str_radix(text, 16).map_err(|_| format!("bad \\x escape {text:?}"))?);
            }
            other => return Err(format!("unknown escape {other:?}")),
        }
    }
    Ok(out)
}

#[test]
fn every_fuzz_target_has_a_dictionary_libfuzzer_can_read() {
    for (target, dict) in [
        ("gltf_bake", "gltf.dict"),
        ("vat_reader", "vat.dict"),
        ("bake_args", "bake_args.dict"),
        ("obj_sequence", "obj.dict"),
        ("openvat_import", "openvat.dict"),
        ("houdini_import", "houdini.dict"),
        ("houdini_dynamic_import", "houdini.dict"),
        ("houdini_particle_import", "houdini.dict"),
        ("sprite_frames", "sprite.dict"),
    ] {
        let path = root().join("fuzz").join(dict);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{target}: {}: {e}", path.display()));
        let mut entries = 0;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let entry = dictionary_entry(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}: {line}", path.display(), n + 1));
            assert!(!entry.is_empty(), "{}:{}: empty entry", path.display(), n + 1);
            entries += 1;
        }
        assert!(entries >= 10, "{}: {entries} entries", path.display());
    }
    // The magic of the .vat reader's dictionary is the format's.
    let vat = std::fs::read_to_string(root().join("fuzz/vat.dict")).unwrap();
    assert!(vat.lines().any(|l| dictionary_entry(l).is_ok_and(|e| e == vat_core::container::MAGIC)));
}

/// `vat` (a skin-residual file) with its residual re-encoded against its own skin moved by a
/// smooth wobble of up to 2 mm: a file whose vertices carry residual bits.
fn with_residual_bits(vat: &[u8]) -> Vec<u8> {
    use vat_core::format::reference::{SkinResidualView, decode_bone_frame};
    use vat_core::format::skin_residual::{ResidualBounds, encode_residuals, residual_texture};
    let asset = vat_core::container::Asset::parse(vat).expect("the skin-residual seed parses");
    let view = SkinResidualView::from_asset(&asset).expect("it is in skin-residual");
    let n = asset.manifest().vertex_count as usize;
    let frames = asset.frame_count();
    type Frame = (Vec<[f32; 3]>, Vec<[f32; 3]>);
    let skins: Vec<Frame> = (0..frames)
        .map(|f| {
            let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
            decode_bone_frame(&view.bones, f, &mut p, &mut nrm).expect("every stored frame decodes");
            (p, nrm)
        })
        .collect();
    let skinned = |f: u32, v: u32| (skins[f as usize].0[v as usize], skins[f as usize].1[v as usize]);
    let source = |f: u32, v: u32| {
        let (p, nrm) = skinned(f, v);
        let w = 0.002 * (0.7 * v as f32 + 0.3 * f as f32).sin();
        ([p[0] + w, p[1] - w, p[2]], nrm)
    };
    let bounds = ResidualBounds::default();
    let encoded =
        encode_residuals(n as u32, frames, skinned, source, &bounds).expect("a 2 mm residual encodes");
    assert!(encoded.mean_frame_bits() > 0.0, "the seed's vertices carry residual bits");
    let texture = residual_texture(&encoded, 16384).expect("the residual texture fits");
    let mut manifest = asset.manifest().clone();
    let mut blobs: Vec<&[u8]> = (0..manifest.blobs.len() as u32)
        .map(|i| asset.get_blob(vat_core::container::BlobId(i)).expect("every listed blob is in the file"))
        .collect();
    let section = manifest.skin_residual.as_mut().expect("the section");
    blobs[section.texture.0 as usize] = &texture.bytes;
    (section.width, section.height, section.stream_words) =
        (texture.width, texture.height, texture.stream_words);
    vat_core::container::container_bytes(manifest, &blobs).expect("the re-encoded file is valid")
}
