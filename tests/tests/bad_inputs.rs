//! The bad-input corpus in `tests/data/bad/`: files generated here (never downloaded) from a small
//! valid glTF, GLB and `.vat`, and folders of another tool's bake (OpenVAT, SideFX Labs VAT 3) from the
//! importers' fuzz seeds, each broken in one way, plus `CASES.tsv` saying how the `vat` command line is
//! run on each and what its one-line error must say.
//!
//! This test regenerates the corpus in memory and checks that the checked-in files are exactly that
//! (run with `VAT_BLESS=1` to rewrite them after a deliberate change), then runs every file through
//! the library: each must give a typed error containing the expected text, without a panic.
//! `vat-cli/tests/cli.rs` runs the same cases through the `vat` binary (non-zero exit, one line naming
//! the file and the problem, no panic, no backtrace, no output file left behind).

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use vat_bake::gltf_import::{ImportOptions, import_slice_with};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::container::{Asset, BlobId, Limits, Manifest, MaterialVariant, StreamKind, write_container};

/// How the command line is run on a case (the `command` column of `CASES.tsv`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Command {
    /// `vat inspect FILE` and `vat verify FILE`.
    Load,
    /// `vat bake FILE --out OUT ARGS`.
    Bake,
    /// `vat render FILE --out OUT.png ARGS` (option checks made before a GPU is opened).
    Render,
    /// `vat import-openvat DIR --out OUT ARGS` (the case is a folder).
    ImportOpenVat,
    /// `vat import-houdini DIR --out OUT ARGS` (the case is a folder).
    ImportHoudini,
}

/// One corpus case.
struct Case {
    /// The file name under `tests/data/bad/`.
    file: String,
    /// Its bytes (`None`: the case reuses a file of another case, e.g. a valid input with a bad option,
    /// or is a folder).
    bytes: Option<Vec<u8>>,
    /// A folder case's files (name, bytes); empty for a file case.
    folder: Vec<(String, Vec<u8>)>,
    command: Command,
    /// Extra command-line arguments.
    args: Vec<&'static str>,
    /// Text the one-line error must contain (besides the file name).
    expect: &'static str,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/bad")
}

/// A valid, small `.gltf` the project writes itself (two bones, one clip, buffers as data URIs:
/// [`vat_procgen::testdata::small_skinned_gltf`]); no third-party file is copied into the corpus.
fn base_gltf() -> Value {
    vat_procgen::testdata::small_skinned_gltf()
}

fn gltf_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

/// The valid `.vat` every load case starts from: the small skinned glTF baked with 4 frames, one LOD
/// and bones.
fn base_vat() -> Vec<u8> {
    let rig = vat_bake::gltf_import::import_slice(&gltf_bytes(&base_gltf()), None, "small").unwrap();
    let options =
        BakeOptions { frames: Some(4), lods: LodOptions::Count(1), bones: true, ..BakeOptions::default() };
    prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
}

fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes the manifest CRC-32 of a `.vat` whose manifest bytes were edited.
fn fix_manifest_crc(bytes: &mut [u8]) {
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let crc = crc32fast::hash(&bytes[16..16 + len]);
    put_u32(bytes, 12, crc);
}

/// The valid `.vat` with materials every material load case starts from: the textured rigid glTF
/// ([`vat_procgen::testdata::textured_rigid_glb`]: two pieces, two materials, one 4 x 4 texture).
fn material_vat() -> Vec<u8> {
    let rig =
        vat_bake::gltf_import::import_slice(&vat_procgen::testdata::textured_rigid_glb(), None, "rigid")
            .unwrap();
    let source = vat_bake::rigid::RigidSource::from_rig(&rig, 10.0).unwrap();
    vat_bake::rigid::bake_rigid(&source, &vat_bake::rigid::RigidBakeOptions::default()).unwrap().0
}

/// `vat` rewritten with its manifest and blobs edited by `edit` (the blob table and checksums
/// recomputed, nothing validated), so that only the edit is wrong.
fn rewritten(vat: &[u8], edit: impl FnOnce(&mut Manifest, &mut Vec<Vec<u8>>)) -> Vec<u8> {
    let asset = Asset::parse(vat).unwrap();
    let mut manifest = asset.manifest().clone();
    let mut blobs: Vec<Vec<u8>> =
        (0..manifest.blobs.len() as u32).map(|b| asset.blob(BlobId(b)).to_vec()).collect();
    edit(&mut manifest, &mut blobs);
    let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    write_container(&mut out, Path::new("bad.vat"), manifest, &blobs).unwrap();
    assert!(Asset::parse(&out).is_err(), "the edit left a valid file");
    out
}

/// `.vat` files whose material sections are hostile, each broken in one way.
fn material_vat_cases() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let vat = material_vat();
    let color = |m: &mut Manifest| m.material_textures.as_mut().unwrap().color.as_mut().unwrap().clone();
    let mut out = Vec::new();
    let v = rewritten(&vat, |m, _| m.materials[0].base_color_texture.as_mut().unwrap().layer = 1);
    out.push(("vat-material-layer-past-array.vat", v, "base colour texture layer 1 is out of range"));
    let v = rewritten(&vat, |m, blobs| {
        let texels = color(m).texels.0 as usize;
        let len = blobs[texels].len();
        blobs[texels].truncate(len - 4);
    });
    out.push(("vat-material-texels-wrong-size.vat", v, "colour texture array"));
    let v = rewritten(&vat, |m, blobs| {
        let array = color(m);
        // One level of the 4 x 4 layer (its chain has 3), its texels cut to that level.
        blobs[array.texels.0 as usize].truncate(4 * 4 * 4);
        m.material_textures.as_mut().unwrap().color.as_mut().unwrap().mip_levels = 1;
    });
    out.push(("vat-material-partial-mip-chain.vat", v, "mip levels"));
    let v = rewritten(&vat, |m, blobs| {
        let ids = m.streams.iter().find(|s| s.kind == StreamKind::MaterialId).unwrap().blob.0 as usize;
        blobs[ids][5] = 2;
    });
    out.push(("vat-material-id-past-materials.vat", v, "material id 2 is out of range (count 2)"));
    let v = rewritten(&vat, |m, _| {
        m.material_variants = vec![MaterialVariant { name: "bad".into(), materials: vec![0, 7] }];
    });
    out.push(("vat-material-variant-past-materials.vat", v, "material variant material 7"));
    let v = rewritten(&vat, |m, _| m.materials[1].roughness_factor = f32::NAN);
    out.push(("vat-material-nan-factor.vat", v, "material factors is not finite"));
    let v = rewritten(&vat, |m, _| m.materials[0].base_color_factor[3] = f32::INFINITY);
    out.push(("vat-material-infinite-colour.vat", v, "material base colour factor is not finite"));
    out
}

/// `.vat` files whose skin-residual section (format version 11) is hostile, each broken in one way,
/// from the small skinned glTF baked in that format.
fn skin_residual_vat_cases() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let rig = vat_bake::gltf_import::import_slice(&gltf_bytes(&base_gltf()), None, "small")
        .expect("the small skinned glTF imports");
    let options = BakeOptions {
        frames: Some(4),
        lods: LodOptions::Count(1),
        format: vat_core::format::encoding::VertexFormat::SkinResidual,
        ..BakeOptions::default()
    };
    let vat = prepare(&rig, &options).expect("it bakes in skin-residual").to_vat_bytes().expect("bytes");
    let texture = |m: &Manifest| m.skin_residual.as_ref().expect("the section").texture.0 as usize;
    let mut out = Vec::new();
    let v = rewritten(&vat, |m, blobs| blobs[texture(m)][4..8].copy_from_slice(&0x1000u32.to_le_bytes()));
    out.push(("vat-skin-residual-stray-width-bit.vat", v, "skin residual widths"));
    // Vertex 0 given 12 bits a frame in a stream of one (trailing) word.
    let v = rewritten(&vat, |m, blobs| blobs[texture(m)][4..8].copy_from_slice(&4u32.to_le_bytes()));
    out.push(("vat-skin-residual-frames-past-stream.vat", v, "skin residual bit"));
    let v = rewritten(&vat, |m, _| m.skin_residual = None);
    out.push(("vat-skin-residual-section-missing.vat", v, "residual texture of the skin-residual"));
    let v = rewritten(&vat, |m, _| m.bone_animation = None);
    out.push(("vat-skin-residual-without-bones.vat", v, "the skin of the skin-residual format"));
    let v =
        rewritten(&vat, |m, _| m.skin_residual.as_mut().expect("the section").position_bound_m = f32::NAN);
    out.push(("vat-skin-residual-nan-bound.vat", v, "residual bounds"));
    out
}

/// Every case, in a fixed order.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut file =
        |name: &str, bytes: Vec<u8>, command: Command, args: Vec<&'static str>, expect: &'static str| {
            out.push(Case {
                file: name.to_owned(),
                bytes: Some(bytes),
                folder: Vec::new(),
                command,
                args,
                expect,
            });
        };
    use Command::{Bake, Load};

    // ---- .vat loading: header, manifest, blob table, blobs, size limit.
    let vat = base_vat();
    let manifest_len = u32::from_le_bytes(vat[8..12].try_into().unwrap()) as usize;
    let asset = Asset::parse(&vat).unwrap();
    let blobs = asset.manifest().blobs.clone();
    let first_blob = blobs[0].offset as usize;
    let last = blobs.last().unwrap();
    let end = (last.offset + last.length) as usize;
    assert_eq!(end, vat.len());
    file("vat-empty.vat", Vec::new(), Load, vec![], "header");
    file("vat-three-bytes.vat", b"VAT".to_vec(), Load, vec![], "header");
    file("vat-png-magic.vat", b"\x89PNG\r\n\x1a\n\0\0\0\0\0\0\0\0".to_vec(), Load, vec![], "magic");
    file("vat-glb-given.vat", vat_procgen::testdata::small_skinned_glb(), Load, vec![], "magic");
    file("vat-text.vat", b"this is not a vat file\n".to_vec(), Load, vec![], "magic");
    let mut v = vat.clone();
    // Versions 2 (the morph layer), 3 (the rigid mode), 5 (root motion), 6 (the fluid mode), 7 (the
    // sprite mode), 8 (the impostor tier), 9 (its far cards' bound), 10 (its material variants'
    // colours) and 11 (the skin-residual format) are read; 12 is the first future version.
    assert_eq!(vat_core::container::FORMAT_VERSION + 1, 12);
    put_u32(&mut v, 4, 12);
    file("vat-version-12.vat", v, Load, vec![], "version 12");
    // A version 1 manifest labelled 3 ends before its rigid slot: refused, typed.
    let mut v = vat.clone();
    put_u32(&mut v, 4, 3);
    file("vat-version-3-without-rigid-slot.vat", v, Load, vec![], "manifest");
    let mut v = vat.clone();
    put_u32(&mut v, 4, 0);
    file("vat-version-0.vat", v, Load, vec![], "version 0");
    file("vat-header-only.vat", vat[..16].to_vec(), Load, vec![], "manifest");
    let mut v = vat.clone();
    put_u32(&mut v, 8, u32::MAX);
    file("vat-manifest-length-huge.vat", v, Load, vec![], "4294967295");
    file("vat-manifest-cut.vat", vat[..16 + manifest_len / 2].to_vec(), Load, vec![], "manifest");
    let mut v = vat.clone();
    v[12] ^= 1;
    file("vat-manifest-crc.vat", v, Load, vec![], "checksum");
    for (name, at) in
        [("start", 0), ("quarter", manifest_len / 4), ("middle", manifest_len / 2), ("end", manifest_len - 1)]
    {
        // An edited manifest byte with a matching checksum: a decode error or an inconsistent manifest
        // (the first byte from `at` on whose edit the reader refuses; some edits, e.g. in a name,
        // give another valid file).
        let edited = |i: usize| {
            let mut v = vat.clone();
            v[16 + i] = v[16 + i].wrapping_add(0x5a);
            fix_manifest_crc(&mut v);
            v
        };
        let v = (at..manifest_len).map(edited).find(|v| Asset::parse(v).is_err()).unwrap();
        let leaked: &'static str = Box::leak(format!("vat-manifest-edit-{name}.vat").into_boxed_str());
        file(leaked, v, Load, vec![], "not a valid .vat file");
    }
    let mut v = vat.clone();
    put_u32(&mut v, 8, 0);
    fix_manifest_crc(&mut v);
    file("vat-manifest-empty.vat", v, Load, vec![], "manifest");
    file("vat-cut-last-byte.vat", vat[..vat.len() - 1].to_vec(), Load, vec![], "not a valid .vat file");
    file("vat-cut-in-half.vat", vat[..vat.len() / 2].to_vec(), Load, vec![], "not a valid .vat file");
    file("vat-cut-at-first-blob.vat", vat[..first_blob].to_vec(), Load, vec![], "not a valid .vat file");
    let mut v = vat.clone();
    v.push(0);
    file("vat-trailing-byte.vat", v, Load, vec![], "trailing bytes");
    let mut v = vat.clone();
    v.extend_from_slice(&[0u8; 4096]);
    file("vat-trailing-page.vat", v, Load, vec![], "trailing bytes");
    let mut v = vat.clone();
    v[first_blob] ^= 0x80;
    file("vat-first-blob-flipped.vat", v, Load, vec![], "checksum");
    let mut v = vat.clone();
    v[end - 1] ^= 0x01;
    file("vat-last-blob-flipped.vat", v, Load, vec![], "checksum");
    if first_blob > 16 + manifest_len {
        let mut v = vat.clone();
        v[16 + manifest_len] = 0xff;
        file("vat-padding-not-zero.vat", v, Load, vec![], "padding");
    }
    file("vat-over-memory-budget.vat", vat.clone(), Load, vec!["--max-memory", "1000"], "1000");
    file("vat-zeros.vat", vec![0u8; 64], Load, vec![], "magic");
    for (name, bytes, expect) in material_vat_cases() {
        file(name, bytes, Load, vec![], expect);
    }
    for (name, bytes, expect) in skin_residual_vat_cases() {
        file(name, bytes, Load, vec![], expect);
    }

    // ---- glTF / GLB import.
    let g = base_gltf();
    let mut edit = |name: &str, f: &dyn Fn(&mut Value), expect: &'static str| {
        let mut v = g.clone();
        f(&mut v);
        file(name, gltf_bytes(&v), Bake, vec![], expect);
    };
    edit("gltf-version-1.gltf", &|v| v["asset"]["version"] = json!("1.0"), "only glTF 2.x");
    edit("gltf-min-version-3.gltf", &|v| v["asset"]["minVersion"] = json!("3.0"), "needs glTF");
    edit(
        "gltf-nan-keyframe.gltf",
        &|v| {
            // The third rotation key's x becomes NaN (buffer 3: 12 times, then the rotations).
            let uri = v["buffers"][3]["uri"].as_str().unwrap().to_owned();
            let (head, data) = uri.split_once("base64,").unwrap();
            let mut bytes = BASE64.decode(data).unwrap();
            bytes[48 + 2 * 16..48 + 2 * 16 + 4].copy_from_slice(&f32::NAN.to_le_bytes());
            v["buffers"][3]["uri"] = json!(format!("{head}base64,{}", BASE64.encode(&bytes)));
        },
        "keyframe 2 has value NaN",
    );
    edit(
        "gltf-no-meshes.gltf",
        &|v| {
            v.as_object_mut().unwrap().remove("meshes");
            v["nodes"][0].as_object_mut().unwrap().remove("mesh");
        },
        "mesh",
    );
    // A Draco primitive whose stream is no Draco stream (the buffer view of the indices).
    edit(
        "gltf-draco-not-a-stream.gltf",
        &|v| {
            v["extensionsRequired"] = json!(["KHR_draco_mesh_compression"]);
            v["meshes"][0]["primitives"][0]["extensions"] =
                json!({ "KHR_draco_mesh_compression": { "bufferView": 0, "attributes": { "POSITION": 0 } } });
        },
        "KHR_draco_mesh_compression, buffer view 0): the Draco stream does not decode",
    );
    edit("gltf-accessor-count-too-big.gltf", &|v| v["accessors"][1]["count"] = json!(1000), "accessor 1");
    edit("gltf-accessor-count-zero.gltf", &|v| v["accessors"][1]["count"] = json!(0), "accessor");
    edit("gltf-accessor-count-huge.gltf", &|v| v["accessors"][1]["count"] = json!(1u64 << 40), "accessor");
    edit(
        "gltf-accessor-bad-component.gltf",
        &|v| v["accessors"][1]["componentType"] = json!(5127),
        "accessor",
    );
    edit("gltf-position-vec2.gltf", &|v| v["accessors"][1]["type"] = json!("VEC2"), "POSITION");
    edit("gltf-accessor-view-missing.gltf", &|v| v["accessors"][1]["bufferView"] = json!(99), "bufferView");
    edit(
        "gltf-accessor-no-view.gltf",
        &|v| drop(v["accessors"][1].as_object_mut().unwrap().remove("bufferView")),
        "accessors[1].bufferView",
    );
    edit(
        "gltf-view-past-buffer.gltf",
        &|v| v["bufferViews"][1]["byteLength"] = json!(100000),
        "runs past the end of buffer 0",
    );
    edit(
        "gltf-view-offset-past-buffer.gltf",
        &|v| v["bufferViews"][1]["byteOffset"] = json!(1u64 << 33),
        "8589934592",
    );
    edit("gltf-stride-too-small.gltf", &|v| v["bufferViews"][2]["byteStride"] = json!(4), "stride");
    edit("gltf-buffer-length-lies.gltf", &|v| v["buffers"][0]["byteLength"] = json!(100000), "byteLength");
    edit(
        "gltf-data-uri-not-base64.gltf",
        &|v| v["buffers"][0]["uri"] = json!("data:application/octet-stream,hello"),
        "base64",
    );
    edit(
        "gltf-data-uri-bad-base64.gltf",
        &|v| v["buffers"][0]["uri"] = json!("data:application/octet-stream;base64,@@@@"),
        "base64",
    );
    edit(
        "gltf-external-missing.gltf",
        &|v| v["buffers"][0]["uri"] = json!("does-not-exist.bin"),
        "does-not-exist.bin",
    );
    // Confinement: external files must be regular files inside the glTF's folder.
    edit("gltf-uri-absolute.gltf", &|v| v["buffers"][0]["uri"] = json!("/etc/passwd"), "absolute path");
    edit(
        "gltf-uri-percent-absolute.gltf",
        &|v| v["buffers"][0]["uri"] = json!("%2Fetc%2Fpasswd"),
        "absolute path",
    );
    edit(
        "gltf-uri-parent-escape.gltf",
        &|v| v["buffers"][0]["uri"] = json!("../../Cargo.toml"),
        "resolves outside",
    );
    edit("gltf-uri-device.gltf", &|v| v["buffers"][0]["uri"] = json!("/dev/zero"), "absolute path");
    edit(
        "gltf-uri-parent-missing.gltf",
        &|v| v["buffers"][0]["uri"] = json!("../../../../../no/such/file.bin"),
        "resolves outside",
    );
    edit(
        "gltf-uri-file-scheme.gltf",
        &|v| v["buffers"][0]["uri"] = json!("file:///etc/passwd"),
        "data: URIs",
    );
    edit("gltf-remote-uri.gltf", &|v| v["buffers"][0]["uri"] = json!("https://example.invalid/a.bin"), "uri");
    edit("gltf-node-cycle.gltf", &|v| v["nodes"][2]["children"] = json!([1]), "node");
    edit(
        "gltf-child-out-of-range.gltf",
        &|v| v["nodes"][1]["children"] = json!([42]),
        "nodes[1].children[0]",
    );
    edit(
        "gltf-scene-node-out-of-range.gltf",
        &|v| v["scenes"][0]["nodes"] = json!([17]),
        "scenes[0].nodes[0]",
    );
    edit(
        "gltf-skin-joint-out-of-range.gltf",
        &|v| v["skins"][0]["joints"] = json!([1, 9]),
        "skins[0].joints[1]",
    );
    edit(
        "gltf-inverse-bind-wrong-count.gltf",
        &|v| v["accessors"][4]["count"] = json!(1),
        "1 matrices for 2 joints",
    );
    edit("gltf-joint-index-past-skin.gltf", &|v| v["skins"][0]["joints"] = json!([1]), "joint");
    edit(
        "gltf-sampler-input-out-of-range.gltf",
        &|v| v["animations"][0]["samplers"][0]["input"] = json!(50),
        "samplers[0].input",
    );
    edit(
        "gltf-channel-node-out-of-range.gltf",
        &|v| v["animations"][0]["channels"][0]["target"]["node"] = json!(33),
        "target.node",
    );
    edit(
        "gltf-bad-interpolation.gltf",
        &|v| v["animations"][0]["samplers"][0]["interpolation"] = json!("BOUNCY"),
        "interpolation",
    );
    edit("gltf-keys-not-float.gltf", &|v| v["accessors"][5]["componentType"] = json!(5123), "accessor 5");
    edit("gltf-points-primitive.gltf", &|v| v["meshes"][0]["primitives"][0]["mode"] = json!(0), "mode");
    // Materials: an image file outside the glTF's folder (one that exists: a missing image is a
    // note, not an error), and more materials than a .vat holds.
    edit(
        "gltf-image-uri-parent-escape.gltf",
        &|v| {
            v["images"] = json!([{ "uri": "../../Cargo.toml" }]);
            v["textures"] = json!([{ "source": 0 }]);
            v["materials"] = json!([{ "pbrMetallicRoughness": { "baseColorTexture": { "index": 0 } } }]);
            v["meshes"][0]["primitives"][0]["material"] = json!(0);
        },
        "resolves outside",
    );
    // Image URIs leaving the folder that name nothing: refused from the name alone, exactly as the
    // escape above that names a file (before the read gate, these were notes: an existence oracle).
    let material = |v: &mut Value, uri: &str| {
        v["images"] = json!([{ "uri": uri }]);
        v["textures"] = json!([{ "source": 0 }]);
        v["materials"] = json!([{ "pbrMetallicRoughness": { "baseColorTexture": { "index": 0 } } }]);
        v["meshes"][0]["primitives"][0]["material"] = json!(0);
    };
    edit(
        "gltf-image-uri-absolute-missing.gltf",
        &|v| material(v, "/nonexistent/x.png"),
        "outside the folder",
    );
    edit("gltf-image-uri-parent-missing.gltf", &|v| material(v, "../../x/no-such.png"), "outside the folder");
    edit(
        "gltf-too-many-materials.gltf",
        &|v| {
            // 257 primitives over one vertex buffer, each with its own metallic factor: nothing
            // to leave out or merge.
            let materials: Vec<Value> = (0..257)
                .map(|k| json!({ "pbrMetallicRoughness": { "metallicFactor": k as f64 / 256.0 } }))
                .collect();
            v["materials"] = json!(materials);
            let primitive = v["meshes"][0]["primitives"][0].clone();
            let primitives: Vec<Value> = (0..257)
                .map(|k| {
                    let mut p = primitive.clone();
                    p["material"] = json!(k);
                    p
                })
                .collect();
            v["meshes"][0]["primitives"] = json!(primitives);
        },
        "257 materials (257 used, 257 distinct, 257 after moving base colours to vertex colours); at most 256",
    );
    // A PNG bomb: 8192 x 8192 grey zeros in a few tens of KB, decoding to 64 MiB then 256 MiB of RGBA:
    // charged from its header, refused before decoding.
    let bomb = format!("data:image/png;base64,{}", BASE64.encode(vat_procgen::testdata::png_bomb(8192)));
    let mut v = g.clone();
    material(&mut v, &bomb);
    file("gltf-image-png-bomb.gltf", gltf_bytes(&v), Bake, vec!["--max-memory", "128M"], "--max-memory");
    let not_json: &[(&str, &[u8], &'static str)] = &[
        ("gltf-empty.gltf", b"", "JSON"),
        ("gltf-syntax-error.gltf", b"{\"asset\": {\"version\": \"2.0\"", "JSON"),
        ("gltf-array.gltf", b"[1, 2, 3]", "JSON"),
        ("gltf-binary-junk.gltf", b"\x00\x01\x02\x03\xff\xfe\xfd", "JSON"),
        ("gltf-no-asset.gltf", b"{}", "asset"),
    ];
    for (name, bytes, expect) in not_json {
        file(name, bytes.to_vec(), Bake, vec![], expect);
    }
    // Cost classes: a mesh of zero-area triangles only, and indices that unweld past the budget.
    let flat = vat_procgen::testdata::degenerate_only(10);
    file("gltf-zero-area-only.glb", flat, Bake, vec![], "repeat a vertex index");
    file(
        "gltf-unweld-over-budget.glb",
        vat_procgen::testdata::morph_fan_out(20_000, 100),
        Bake,
        vec!["--max-memory", "64M"],
        "flat shading",
    );
    // GLB containers.
    let json = gltf_bytes(&g);
    let good = vat_procgen::testdata::glb(&json, &[]);
    let mut v = good.clone();
    put_u32(&mut v, 4, 1);
    file("glb-version-1.glb", v, Bake, vec![], "GLB version 1");
    file("glb-header-only.glb", good[..12].to_vec(), Bake, vec![], "GLB");
    let mut v = good.clone();
    put_u32(&mut v, 8, good.len() as u32 + 100);
    file("glb-length-lies.glb", v, Bake, vec![], "truncated");
    let mut v = good.clone();
    put_u32(&mut v, 12, u32::MAX - 3);
    file("glb-json-chunk-huge.glb", v, Bake, vec![], "JSON chunk");
    let mut v = good.clone();
    v[16..20].copy_from_slice(b"BIN\0");
    file("glb-first-chunk-bin.glb", v, Bake, vec![], "not JSON");
    let mut buffer_from_bin = g.clone();
    buffer_from_bin["buffers"][0].as_object_mut().unwrap().remove("uri");
    file(
        "glb-bin-chunk-missing.glb",
        vat_procgen::testdata::glb(&gltf_bytes(&buffer_from_bin), &[]),
        Bake,
        vec![],
        "binary chunk",
    );
    let whole = vat_procgen::testdata::small_skinned_glb();
    file("glb-truncated.glb", whole[..whole.len() - 100].to_vec(), Bake, vec![], "truncated");

    // ---- Bake options on a valid input (reusing the first valid file written below).
    file("valid-small-skin.gltf", gltf_bytes(&g), Bake, vec!["--max-memory", "2000"], "memory budget");
    let mut option = |args: Vec<&'static str>, expect: &'static str| {
        out.push(Case {
            file: "valid-small-skin.gltf".into(),
            bytes: None,
            folder: Vec::new(),
            command: Bake,
            args,
            expect,
        });
    };
    option(vec!["--fps", "0"], "--fps");
    option(vec!["--fps", "NaN"], "--fps");
    option(vec!["--fps", "3000000"], "frames");
    option(vec!["--frames", "0"], "--frames");
    option(vec!["--clips", "no-such-clip"], "no-such-clip");
    option(vec!["--lods", "0"], "--lods: 0 levels");
    option(vec!["--lods", "9"], "--lods: 9 levels");
    option(vec!["--lod-ratios", "0.5,1"], "ratio");
    option(vec!["--max-texture-dim", "0"], "--max-texture-dim");
    option(vec!["--max-texture-dim", "20000"], "--max-texture-dim");
    option(vec!["--max-texture-dim", "4"], "4");
    option(vec!["--capture", "no-such-node"], "no-such-node");
    option(vec!["--skin", "3"], "skin");
    option(vec!["--bones", "--max-memory", "20000"], "baking rig");
    option(vec!["--format", "skin-residual", "--residual-mm", "0"], "--residual-mm");
    option(vec!["--format", "skin-residual", "--residual-deg", "NaN"], "--residual-mm / --residual-deg");
    option(vec!["--format", "skin-residual", "--tangents"], "--tangents");
    option(vec!["--format", "skin-residual", "--fit-bones", "0"], "--fit-bones: 0");
    option(vec!["--format", "skin-residual", "--fit-bones", "8"], "is not a mesh sequence");

    // ---- Render options on a valid asset: refused before any GPU work, naming the flag and range.
    out.push(Case {
        file: "valid-small.vat".into(),
        bytes: Some(base_vat()),
        folder: Vec::new(),
        command: Command::Render,
        args: vec!["--fov", "0"],
        expect: "--fov 0",
    });
    let mut render = |args: Vec<&'static str>, expect: &'static str| {
        out.push(Case {
            file: "valid-small.vat".into(),
            bytes: None,
            folder: Vec::new(),
            command: Command::Render,
            args,
            expect,
        });
    };
    render(vec!["--fov", "NaN"], "--fov NaN");
    render(vec!["--fov", "720"], "below 180");
    render(vec!["--time", "NaN"], "--time NaN");
    render(vec!["--time", "inf"], "--time inf");
    render(vec!["--time=-1"], ">= 0");
    render(vec!["--lod-bias", "NaN"], "--lod-bias NaN");
    render(vec!["--lod-bias", "100"], "-16 to 16");
    render(vec!["--camera", "1,2,3,1,2,3"], "the same point");
    render(vec!["--camera", "NaN,0,0,0,0,0"], "not finite");
    render(vec!["--instances", "0"], "at least 1");
    render(vec!["--instances", "100000000", "--max-memory", "1G"], "memory budget");
    out.extend(interop_folder_cases());
    out
}

/// Folders of another tool's bake (OpenVAT, SideFX Labs VAT 3), each broken in one way, built from the
/// importers' fuzz seeds (a quad over three frames).
fn interop_folder_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut folder = |name: &str, files: Vec<(&str, Vec<u8>)>, command: Command, expect: &'static str| {
        let folder = files.into_iter().map(|(f, b)| (f.to_owned(), b)).collect();
        out.push(Case { file: name.to_owned(), bytes: None, folder, command, args: Vec::new(), expect });
    };
    let seed = vat_procgen::fuzzing::openvat_seed();
    let (json, png, glb) = vat_procgen::fuzzing::split_openvat_parts(&seed)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    let (json, png, glb) = (json.to_vec(), png.to_vec(), glb.to_vec());
    let openvat = |json: &[u8], png: &[u8], glb: &[u8]| {
        vec![("q-remap_info.json", json.to_vec()), ("q_vat.png", png.to_vec()), ("q.glb", glb.to_vec())]
    };
    use Command::{ImportHoudini, ImportOpenVat};
    folder("openvat-empty", vec![("README.txt", b"not a bake".to_vec())], ImportOpenVat, "remap_info.json");
    folder("openvat-no-mesh", openvat(&json, &png, &glb)[..2].to_vec(), ImportOpenVat, "q.glb");
    folder(
        "openvat-sidecar-not-json",
        openvat(b"{\"os-remap\": [", &png, &glb),
        ImportOpenVat,
        "q-remap_info.json",
    );
    folder(
        "openvat-texture-truncated",
        openvat(&json, &png[..png.len() / 2], &glb),
        ImportOpenVat,
        "q_vat.png",
    );
    folder("openvat-mesh-not-glb", openvat(&json, &png, b"glTF but not really"), ImportOpenVat, "q.glb");
    let frames_lie = String::from_utf8(json.clone()).unwrap().replace("\"Frames\": 3", "\"Frames\": 99");
    folder("openvat-frames-lie", openvat(frames_lie.as_bytes(), &png, &glb), ImportOpenVat, "99");

    let seed = vat_procgen::fuzzing::houdini_seed();
    let (json, png, glb) = vat_procgen::fuzzing::split_openvat_parts(&seed)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    let (json, png, glb) = (json.to_vec(), png.to_vec(), glb.to_vec());
    let houdini = |json: &[u8], png: &[u8], glb: &[u8]| {
        vec![("q_data.json", json.to_vec()), ("q_pos.png", png.to_vec()), ("q_mesh.glb", glb.to_vec())]
    };
    folder("houdini-no-data-json", houdini(&json, &png, &glb)[1..].to_vec(), ImportHoudini, "_data.json");
    folder(
        "houdini-no-texture",
        vec![houdini(&json, &png, &glb)[0].clone(), houdini(&json, &png, &glb)[2].clone()],
        ImportHoudini,
        "q_pos",
    );
    folder(
        "houdini-texture-truncated",
        houdini(&json, &png[..png.len() / 2], &glb),
        ImportHoudini,
        "q_pos.png",
    );
    let wrong = vat_procgen::fuzzing::houdini_quad(5);
    let (_, wrong_png, _) = vat_procgen::fuzzing::split_openvat_parts(&wrong)
        .expect("a built-in OpenVAT seed splits into its json, png and glb");
    folder(
        "houdini-texture-wrong-size",
        houdini(&json, wrong_png, &glb),
        ImportHoudini,
        "not made for this texture",
    );
    let text = String::from_utf8(json.clone()).unwrap();
    let rigid = text.replacen("\"VAT Type\": \"Softbody\"", "\"VAT Type\": \"Rigidbody\"", 1);
    assert_ne!(rigid, text, "the seed names its VAT type");
    // An OBJ mesh (point i reads texel i) with more points than the texture has texels.
    let obj = format!("{}f 1 2 3\nf 1 3 4\n", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n".repeat(3));
    let obj_files =
        vec![("q_data.json", json.to_vec()), ("q_pos.png", png.to_vec()), ("q_mesh.obj", obj.into_bytes())];
    folder("houdini-obj-mesh-too-many-points", obj_files, ImportHoudini, "has 12 points");
    // A Rigidbody bake without its rotation texture.
    folder("houdini-rigid-body", houdini(rigid.as_bytes(), &png, &glb), ImportHoudini, "q_rot.exr");
    // Rigid-body bakes: a piece that scales, and LDR textures, which vat's rigid import refuses.
    let mut fx = vat_procgen::fuzzing::houdini_rigid_fixture(3, 3, 4, false);
    let rigid_files = |fx: &vat_procgen::fuzzing::HoudiniRigidFixture| {
        vec![
            ("q_data.json", fx.json.clone()),
            ("q_pos.exr", fx.pos_exr.clone()),
            ("q_rot.exr", fx.rot_exr.clone()),
            ("q_mesh.glb", fx.glb.clone()),
        ]
    };
    folder(
        "houdini-rigid-rot-truncated",
        {
            let mut files = rigid_files(&fx);
            files[2].1.truncate(fx.rot_exr.len() / 2);
            files
        },
        ImportHoudini,
        "q_rot.exr",
    );
    fx.json = String::from_utf8(fx.json.clone())
        .unwrap()
        .replace("\"Use HDR Textures\": 1", "\"Use HDR Textures\": 0")
        .into_bytes();
    folder("houdini-rigid-ldr", rigid_files(&fx), ImportHoudini, "Use HDR Textures");
    folder("houdini-mesh-missing", houdini(&json, &png, &glb)[..2].to_vec(), ImportHoudini, "q_mesh.glb");
    // A sidecar of 1 MiB (whitespace after a valid object) under an 8 MiB budget: parsed, it could
    // take 16 times its text; refused before it is read.
    let mut huge = json.clone();
    huge.extend(std::iter::repeat_n(b' ', 1 << 20));
    out.push(Case {
        file: "openvat-sidecar-huge".into(),
        bytes: None,
        folder: openvat(&huge, &png, &glb).into_iter().map(|(f, b)| (f.to_owned(), b)).collect(),
        command: ImportOpenVat,
        args: vec!["--max-memory", "8M"],
        expect: "--max-memory",
    });
    out
}

/// `CASES.tsv`: `file<TAB>command<TAB>args (space-separated)<TAB>expected text`, one case a line.
fn cases_tsv(cases: &[Case]) -> String {
    let mut s = String::from("# file\tcommand\targs\texpect (generated by tests/tests/bad_inputs.rs)\n");
    for c in cases {
        let command = match c.command {
            Command::Load => "load",
            Command::Bake => "bake",
            Command::Render => "render",
            Command::ImportOpenVat => "import-openvat",
            Command::ImportHoudini => "import-houdini",
        };
        s.push_str(&format!("{}\t{command}\t{}\t{}\n", c.file, c.args.join(" "), c.expect));
    }
    s
}

#[test]
fn the_checked_in_corpus_is_what_the_generator_makes() {
    let cases = cases();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for c in &cases {
        if let Some(b) = &c.bytes {
            assert!(files.insert(c.file.clone(), b.clone()).is_none(), "{} generated twice", c.file);
        }
    }
    files.insert("CASES.tsv".into(), cases_tsv(&cases).into_bytes());
    let dir = corpus_dir();
    let folders: Vec<&Case> = cases.iter().filter(|c| !c.folder.is_empty()).collect();
    if std::env::var_os("VAT_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        for c in &folders {
            std::fs::create_dir_all(dir.join(&c.file)).unwrap();
            for (name, bytes) in &c.folder {
                std::fs::write(dir.join(&c.file).join(name), bytes).unwrap();
            }
        }
    }
    for c in &folders {
        let mut names: Vec<String> = std::fs::read_dir(dir.join(&c.file))
            .unwrap_or_else(|e| panic!("{}: {e}; regenerate with VAT_BLESS=1", c.file))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want: Vec<String> = c.folder.iter().map(|(n, _)| n.clone()).collect();
        want.sort();
        assert_eq!(names, want, "{}: regenerate with VAT_BLESS=1", c.file);
        for (name, bytes) in &c.folder {
            let disk = std::fs::read(dir.join(&c.file).join(name)).unwrap();
            assert!(
                disk == *bytes,
                "{}/{name} differs from the generator's; regenerate with VAT_BLESS=1",
                c.file
            );
        }
    }
    let on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}; generate it with VAT_BLESS=1", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        on_disk.len(),
        files.len() + folders.len(),
        "files in {}: {on_disk:?}; regenerate with VAT_BLESS=1",
        dir.display()
    );
    for (name, bytes) in &files {
        let disk = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(disk == *bytes, "{name} differs from the generator's; regenerate with VAT_BLESS=1");
    }
    // The floor: at least 50 bad files.
    let bad_files = files.len() - 3; // CASES.tsv and the two valid inputs
    println!("{bad_files} bad files, {} cases", cases.len());
    assert!(bad_files >= 50, "{bad_files}");
}

/// Every file case through the library: a typed error containing the expected text, no panic.
#[test]
fn every_bad_file_is_a_typed_error_of_the_library() {
    let dir = corpus_dir();
    let mut kinds = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for c in cases().iter().filter(|c| c.bytes.is_some() && c.args.is_empty()) {
        let message = match c.command {
            Command::Load => {
                let bytes = c.bytes.as_deref().unwrap();
                let e = Asset::parse_with_limits(bytes, &Limits::default()).err();
                let Some(e) = e else {
                    failures.push(format!("{}: loads", c.file));
                    continue;
                };
                kinds.insert(format!("load: {}", variant(&format!("{e:?}"))));
                e.to_string()
            }
            Command::Bake => {
                let bytes = c.bytes.as_deref().unwrap();
                let options = ImportOptions::default();
                let result = import_slice_with(bytes, Some(&dir), &c.file, &options).and_then(|rig| {
                    prepare(&rig, &BakeOptions { lods: LodOptions::Count(1), ..BakeOptions::default() })
                });
                let Some(e) = result.err() else {
                    failures.push(format!("{}: bakes", c.file));
                    continue;
                };
                kinds.insert(format!("bake: {}", variant(&format!("{e:?}"))));
                e.to_string()
            }
            Command::Render | Command::ImportOpenVat | Command::ImportHoudini => continue,
        };
        if c.command == Command::Load && c.expect == "not a valid .vat file" {
            continue; // the CLI's wording; the library's message is the cause
        }
        if !message.contains(c.expect) {
            failures.push(format!("{}: {message:?} lacks {:?}", c.file, c.expect));
        }
    }
    println!("error variants reached: {}: {kinds:?}", kinds.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The `--max-memory` of a case's arguments (`8M`: binary suffixes), else the default budget.
fn max_memory_arg(args: &[&str]) -> u64 {
    let Some(at) = args.iter().position(|a| *a == "--max-memory") else {
        return vat_bake::prepare::DEFAULT_MAX_MEMORY;
    };
    let text = args[at + 1];
    let (digits, shift) = match text.as_bytes().last() {
        Some(b'K') => (&text[..text.len() - 1], 10),
        Some(b'M') => (&text[..text.len() - 1], 20),
        Some(b'G') => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    digits.parse::<u64>().unwrap() << shift
}

/// The variant name at the start of a `Debug` string.
fn variant(debug: &str) -> &str {
    debug.split(|ch: char| !ch.is_alphanumeric() && ch != '_').next().unwrap_or(debug)
}

/// Every folder case through the library's importers (then the bake, as `vat import-*` does): a
/// typed error containing the expected text, no panic.
#[test]
fn every_bad_folder_is_a_typed_error_of_the_library() {
    use vat_bake::interop::houdini::{HoudiniBake, HoudiniOptions, read_houdini};
    use vat_bake::interop::openvat::{OpenVatOptions, read_openvat};
    let dir = corpus_dir();
    let mut failures = Vec::new();
    let folders: Vec<Case> = cases().into_iter().filter(|c| !c.folder.is_empty()).collect();
    assert!(folders.len() >= 12, "{}", folders.len());
    for c in &folders {
        let path = dir.join(&c.file);
        let max_memory = max_memory_arg(&c.args);
        let imported = match c.command {
            Command::ImportOpenVat => {
                read_openvat(&path, &OpenVatOptions { max_memory, ..OpenVatOptions::default() })
            }
            Command::ImportHoudini => {
                match read_houdini(&path, &HoudiniOptions { max_memory, ..HoudiniOptions::default() }) {
                    Ok(HoudiniBake::Softbody(bake)) => Ok(bake),
                    Ok(HoudiniBake::Rigidbody(_)) => {
                        failures.push(format!("{}: imports", c.file));
                        continue;
                    }
                    Err(e) => Err(e),
                }
            }
            _ => unreachable!("folder cases are imports"),
        };
        let result = imported.and_then(|bake| {
            let rig = bake.to_rig()?;
            let options =
                bake.at_own_rates(BakeOptions { lods: LodOptions::Count(1), ..BakeOptions::default() });
            prepare(&rig, &options)
        });
        match result {
            Ok(_) => failures.push(format!("{}: imports and bakes", c.file)),
            Err(e) if !e.to_string().contains(c.expect) => {
                failures.push(format!("{}: {:?} lacks {:?}", c.file, e.to_string(), c.expect))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Material images that cannot be used (missing, not an image) are not errors: the import leaves
/// the texture out with a note naming the image and why, and the bake (soft and rigid) goes on,
/// the material kept without its texture.
#[test]
fn unusable_material_images_are_notes_and_the_bake_goes_on() {
    let dir = std::env::temp_dir().join(format!("vat-bad-inputs-images-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("junk.png"), b"not a png at all").unwrap();
    for (uri, why) in [("missing.png", "file not found"), ("junk.png", "cannot decode it")] {
        let glb = vat_procgen::testdata::textured_rigid_glb_with_image_uri(uri);
        let rig = import_slice_with(&glb, Some(&dir), uri, &ImportOptions::default()).unwrap();
        assert!(
            rig.notes.iter().any(|n| n.contains(uri) && n.contains(why) && n.contains("left out")),
            "{uri}: {:?}",
            rig.notes
        );
        let materials = rig.materials.as_ref().unwrap();
        assert_eq!(materials.materials.len(), 2);
        assert!(materials.materials[0].base_color_texture.is_none());
        assert!(materials.color_images.is_empty());
        prepare(&rig, &BakeOptions { lods: LodOptions::Count(1), ..BakeOptions::default() }).unwrap();
        let source = vat_bake::rigid::RigidSource::from_rig(&rig, 10.0).unwrap();
        let (bytes, stats) =
            vat_bake::rigid::bake_rigid(&source, &vat_bake::rigid::RigidBakeOptions::default()).unwrap();
        assert_eq!(stats.materials, 2);
        let asset = Asset::parse(&bytes).unwrap();
        assert!(asset.manifest().material_textures.is_none());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
