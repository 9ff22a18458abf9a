//! `KHR_draco_mesh_compression` on fixtures built here: a skinned, coloured, textured grid encoded
//! with `draco-core`'s encoder (sequential and EdgeBreaker connectivity, standard and valence
//! traversal, raw and quantised attributes, Draco ids that are not the attribute order) imports
//! exactly as its uncompressed twin (the same points written as plain accessors, as the extension
//! asks generators to write the fallback) and as the source within the quantisation step; every
//! rule of the extension broken, and every truncated or corrupted stream, is a typed error naming
//! the buffer view, never a panic.

use draco_core::{
    DataType, DecoderBuffer, EncoderBuffer, EncoderOptions, GeometryAttributeType, Mesh, MeshDecoder,
    MeshEncoder, PointAttribute,
};
use glam::{Vec2, Vec3};
use serde_json::{Value, json};

use super::fixture::{FLOAT, Fixture, UNSIGNED_BYTE, UNSIGNED_SHORT};
use super::{ImportOptions, import_slice, import_slice_with};
use crate::BakeError;
use crate::rig::{MeshBinding, Rig};

/// The grid's vertex data, glTF semantics' order: what the Draco mesh carries.
struct Grid {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    uvs: Vec<[f32; 2]>,
    joints: Vec<[u8; 4]>,
    weights: Vec<[f32; 4]>,
    colors: Vec<[u8; 4]>,
    indices: Vec<u32>,
}

/// A `side x side` grid on a gentle wave, weighted from joint 0 at the bottom to joint 1 at the top,
/// coloured by position.
fn grid(side: usize) -> Grid {
    let mut g = Grid {
        positions: Vec::new(),
        normals: Vec::new(),
        uvs: Vec::new(),
        joints: Vec::new(),
        weights: Vec::new(),
        colors: Vec::new(),
        indices: Vec::new(),
    };
    let last = (side - 1) as f32;
    for y in 0..side {
        for x in 0..side {
            let (u, v) = (x as f32 / last, y as f32 / last);
            g.positions.push([u, 2.0 * v, 0.1 * (u * 6.0).sin()]);
            let n = Vec3::new(-0.6 * (u * 6.0).cos(), 0.0, 1.0).normalize();
            g.normals.push(n.to_array());
            g.uvs.push([u, 1.0 - v]);
            g.joints.push([0, 1, 0, 0]);
            g.weights.push([1.0 - v, v, 0.0, 0.0]);
            g.colors.push([(x * 255 / (side - 1)) as u8, (y * 255 / (side - 1)) as u8, 90, 255]);
        }
    }
    for y in 0..side - 1 {
        for x in 0..side - 1 {
            let a = (y * side + x) as u32;
            let (b, c, d) = (a + 1, a + side as u32, a + side as u32 + 1);
            g.indices.extend([a, b, c, c, b, d]);
        }
    }
    g
}

/// How a grid is encoded.
#[derive(Debug, Clone, Copy)]
struct Coding {
    /// `encoding_speed` and `decoding_speed` (0 with 1,000 triangles or more: valence EdgeBreaker).
    speed: i32,
    /// Sequential connectivity (Draco's method 0) instead of EdgeBreaker.
    sequential: bool,
    /// Positions 14 bits, normals 10 (octahedral), texture coordinates 12, weights 10.
    quantised: bool,
}

/// The Draco id of each attribute: not their order (the extension maps semantics to ids).
const IDS: [(&str, u32); 6] =
    [("POSITION", 5), ("NORMAL", 3), ("TEXCOORD_0", 11), ("JOINTS_0", 0), ("WEIGHTS_0", 7), ("COLOR_0", 2)];

fn draco_attribute(
    mesh: &mut Mesh,
    kind: GeometryAttributeType,
    components: u8,
    data_type: DataType,
    normalized: bool,
    bytes: &[u8],
    id: u32,
) {
    let count = bytes.len() / (usize::from(components) * data_type.byte_length());
    let mut a = PointAttribute::new();
    a.init(kind, components, data_type, normalized, count);
    a.buffer_mut().write(0, bytes);
    a.set_unique_id(id);
    mesh.add_attribute_preserve_unique_id(a);
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The grid as a Draco stream.
fn encode(g: &Grid, coding: Coding) -> Vec<u8> {
    let mut mesh = Mesh::new();
    use GeometryAttributeType as G;
    draco_attribute(
        &mut mesh,
        G::Position,
        3,
        DataType::Float32,
        false,
        &f32_bytes(g.positions.as_flattened()),
        IDS[0].1,
    );
    draco_attribute(
        &mut mesh,
        G::Normal,
        3,
        DataType::Float32,
        false,
        &f32_bytes(g.normals.as_flattened()),
        IDS[1].1,
    );
    draco_attribute(
        &mut mesh,
        G::TexCoord,
        2,
        DataType::Float32,
        false,
        &f32_bytes(g.uvs.as_flattened()),
        IDS[2].1,
    );
    draco_attribute(&mut mesh, G::Generic, 4, DataType::Uint8, false, g.joints.as_flattened(), IDS[3].1);
    draco_attribute(
        &mut mesh,
        G::Generic,
        4,
        DataType::Float32,
        false,
        &f32_bytes(g.weights.as_flattened()),
        IDS[4].1,
    );
    draco_attribute(&mut mesh, G::Color, 4, DataType::Uint8, true, g.colors.as_flattened(), IDS[5].1);
    mesh.set_num_faces(g.indices.len() / 3);
    mesh.set_faces_from_flat_indices(&g.indices);
    let mut options = EncoderOptions::new();
    options.set_global_int("encoding_speed", coding.speed);
    options.set_global_int("decoding_speed", coding.speed);
    if coding.sequential {
        options.set_encoding_method(0);
    }
    if coding.quantised {
        // Keyed by attribute order.
        for (attribute, bits) in [(0, 14), (1, 10), (2, 12), (4, 10)] {
            options.set_attribute_quantization(attribute, bits);
        }
    }
    let mut encoder = MeshEncoder::new();
    encoder.set_mesh(mesh);
    let mut out = EncoderBuffer::new();
    encoder.encode(&options, &mut out).unwrap();
    out.data().to_vec()
}

/// `stream` decoded here, as the decoder gives it: the twin's data.
fn decode_here(stream: &[u8]) -> Grid {
    let mut mesh = Mesh::new();
    MeshDecoder::new().decode(&mut DecoderBuffer::new(stream), &mut mesh).unwrap();
    let n = mesh.num_points();
    let read = |id: u32, components: usize| mesh.attribute_by_unique_id(id).unwrap().read_f32s(n, components);
    let chunk = |values: Vec<f32>, k: usize| values.chunks_exact(k).map(<[f32]>::to_vec).collect::<Vec<_>>();
    let bytes = |values: Vec<f32>| {
        chunk(values, 4)
            .iter()
            .map(|c| c.iter().map(|&v| v as u8).collect::<Vec<u8>>())
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect()
    };
    Grid {
        positions: chunk(read(IDS[0].1, 3), 3).iter().map(|c| [c[0], c[1], c[2]]).collect(),
        normals: chunk(read(IDS[1].1, 3), 3).iter().map(|c| [c[0], c[1], c[2]]).collect(),
        uvs: chunk(read(IDS[2].1, 2), 2).iter().map(|c| [c[0], c[1]]).collect(),
        joints: bytes(read(IDS[3].1, 4)),
        weights: chunk(read(IDS[4].1, 4), 4).iter().map(|c| [c[0], c[1], c[2], c[3]]).collect(),
        colors: bytes(read(IDS[5].1, 4)),
        indices: mesh.faces().iter().flatten().map(|p| p.0).collect(),
    }
}

/// A skeleton (Root at the origin, Tip one metre up) with skin 0 over both.
fn skeleton(f: &mut Fixture) {
    let root = f.node(json!({ "name": "Root" }), true);
    let tip = f.node(json!({ "name": "Tip", "translation": [0.0, 1.0, 0.0] }), false);
    f.child(root, tip);
    let ibm: Vec<f32> = [glam::Mat4::IDENTITY, glam::Mat4::from_translation(Vec3::NEG_Y)]
        .iter()
        .flat_map(|m| m.to_cols_array())
        .collect();
    let ibm = f.f32s(&ibm, "MAT4");
    f.push("skins", json!({ "joints": [root, tip], "inverseBindMatrices": ibm }));
}

/// An accessor without data (a Draco primitive's): count, component type, type, normalised.
fn bare(f: &mut Fixture, count: usize, component: u32, ty: &str, normalized: bool) -> usize {
    let a = f.push("accessors", json!({ "componentType": component, "count": count, "type": ty }));
    if normalized {
        f.json["accessors"][a]["normalized"] = json!(true);
    }
    a
}

/// The grid as plain accessors (the twin), or as a Draco primitive over `stream` whose accessors
/// describe `g` (the decoded points) without data. Returns the fixture and the stream's view.
fn gltf_of(g: &Grid, stream: Option<&[u8]>) -> (Fixture, Option<usize>) {
    let mut f = Fixture::new();
    skeleton(&mut f);
    let n = g.positions.len();
    let (attributes, indices, view) = match stream {
        None => {
            let position = f.positions(&g.positions);
            let normal = f.f32s(g.normals.as_flattened(), "VEC3");
            let uv = f.f32s(g.uvs.as_flattened(), "VEC2");
            let joints = f.u8s(g.joints.as_flattened(), "VEC4");
            let weights = f.f32s(g.weights.as_flattened(), "VEC4");
            let colors = f.u8s(g.colors.as_flattened(), "VEC4");
            f.json["accessors"][colors]["normalized"] = json!(true);
            let indices: Vec<u16> = g.indices.iter().map(|&i| i as u16).collect();
            let indices = f.u16s(&indices, "SCALAR");
            ([position, normal, uv, joints, weights, colors], indices, None)
        }
        Some(stream) => {
            let view = f.view(stream, None);
            let position = bare(&mut f, n, FLOAT, "VEC3", false);
            let (lo, hi) = bounds(&g.positions);
            f.json["accessors"][position]["min"] = json!(lo);
            f.json["accessors"][position]["max"] = json!(hi);
            let attributes = [
                position,
                bare(&mut f, n, FLOAT, "VEC3", false),
                bare(&mut f, n, FLOAT, "VEC2", false),
                bare(&mut f, n, UNSIGNED_BYTE, "VEC4", false),
                bare(&mut f, n, FLOAT, "VEC4", false),
                bare(&mut f, n, UNSIGNED_BYTE, "VEC4", true),
            ];
            (attributes, bare(&mut f, g.indices.len(), UNSIGNED_SHORT, "SCALAR", false), Some(view))
        }
    };
    let mut primitive = json!({ "attributes": {}, "indices": indices });
    for ((semantic, id), accessor) in IDS.iter().zip(attributes) {
        primitive["attributes"][semantic] = json!(accessor);
        if let Some(view) = view {
            primitive["extensions"]["KHR_draco_mesh_compression"]["bufferView"] = json!(view);
            primitive["extensions"]["KHR_draco_mesh_compression"]["attributes"][semantic] = json!(id);
        }
    }
    let mesh = f.push("meshes", json!({ "name": "Grid", "primitives": [primitive] }));
    f.node(json!({ "name": "Grid", "mesh": mesh, "skin": 0 }), true);
    if view.is_some() {
        f.json["extensionsUsed"] = json!(["KHR_draco_mesh_compression"]);
        f.json["extensionsRequired"] = json!(["KHR_draco_mesh_compression"]);
    }
    (f, view)
}

fn bounds(points: &[[f32; 3]]) -> (Vec<f32>, Vec<f32>) {
    let lo = (0..3).map(|k| points.iter().map(|p| p[k]).fold(f32::INFINITY, f32::min)).collect();
    let hi = (0..3).map(|k| points.iter().map(|p| p[k]).fold(f32::NEG_INFINITY, f32::max)).collect();
    (lo, hi)
}

fn import(f: &Fixture) -> crate::Result<Rig> {
    import_slice(&f.glb(), None, "draco.glb")
}

/// The error of a failed import: a `Gltf` error naming the file; its message.
#[track_caller]
fn gltf_error(result: crate::Result<Rig>) -> String {
    match result {
        Err(e @ BakeError::Gltf { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with("draco.glb: "), "{message}");
            message
        }
        other => panic!("expected a glTF error, got {other:?}"),
    }
}

#[track_caller]
fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message:?} does not contain {part:?}");
    }
}

/// A triangle of `g` as its three corners' values (positions, normals, uvs, weights, colours),
/// rotated to start at its smallest corner, to compare meshes whose points and triangles Draco
/// reordered.
fn corners(rig: &Rig) -> Vec<[[f32; 16]; 3]> {
    let m = &rig.meshes[0];
    let corner = |v: usize| -> [f32; 16] {
        let mut c = [0.0; 16];
        c[..3].copy_from_slice(&m.positions[v].to_array());
        c[3..6].copy_from_slice(&m.normals[v].to_array());
        c[6..8].copy_from_slice(&m.uvs.as_ref().unwrap()[v].to_array());
        c[8..12].copy_from_slice(&m.weights[v][..4]);
        c[12..16].copy_from_slice(&m.colors.as_ref().unwrap()[v].to_array());
        c
    };
    let mut out: Vec<[[f32; 16]; 3]> = m
        .indices
        .chunks_exact(3)
        .map(|t| {
            let t = [corner(t[0] as usize), corner(t[1] as usize), corner(t[2] as usize)];
            let first = (0..3).min_by(|&a, &b| t[a].partial_cmp(&t[b]).unwrap()).unwrap();
            [t[first], t[(first + 1) % 3], t[(first + 2) % 3]]
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

/// The largest difference of the sorted corner lists, per value kind (position, normal, uv,
/// weights, colour), or `None` when the triangle counts differ.
fn corner_error(a: &Rig, b: &Rig) -> Option<[f32; 5]> {
    let (a, b) = (corners(a), corners(b));
    if a.len() != b.len() {
        return None;
    }
    let mut worst = [0.0f32; 5];
    for (ta, tb) in a.iter().zip(&b) {
        for (ca, cb) in ta.iter().zip(tb) {
            for (k, range) in [0..3, 3..6, 6..8, 8..12, 12..16].into_iter().enumerate() {
                for i in range {
                    worst[k] = worst[k].max((ca[i] - cb[i]).abs());
                }
            }
        }
    }
    Some(worst)
}

const CODINGS: [(&str, usize, Coding); 5] = [
    ("sequential", 6, Coding { speed: 5, sequential: true, quantised: false }),
    ("sequential quantised", 6, Coding { speed: 5, sequential: true, quantised: true }),
    ("edgebreaker", 6, Coding { speed: 5, sequential: false, quantised: false }),
    ("edgebreaker quantised", 9, Coding { speed: 7, sequential: false, quantised: true }),
    // 32 x 32 quads: 2,048 triangles, over the valence traversal's threshold of 1,000.
    ("valence edgebreaker quantised", 33, Coding { speed: 0, sequential: false, quantised: true }),
];

#[test]
fn draco_primitives_import_as_their_uncompressed_twin_and_their_source() {
    for (name, side, coding) in CODINGS {
        let source = grid(side);
        let stream = encode(&source, coding);
        let decoded = decode_here(&stream);
        let (draco, _) = gltf_of(&decoded, Some(&stream));
        let rig = import(&draco).unwrap_or_else(|e| panic!("{name}: {e}"));
        let twin = import(&gltf_of(&decoded, None).0).unwrap();
        // Attribute by attribute, as the twin's plain accessors give them.
        let (m, t) = (&rig.meshes[0], &twin.meshes[0]);
        assert_eq!(m.binding, MeshBinding::Skinned { skin: 0 }, "{name}");
        assert_eq!(m.indices, t.indices, "{name}: indices");
        assert_eq!(m.positions, t.positions, "{name}: positions");
        assert_eq!(m.normals, t.normals, "{name}: normals");
        assert_eq!(m.uvs, t.uvs, "{name}: uvs");
        assert_eq!(m.joints, t.joints, "{name}: joints");
        assert_eq!(m.weights, t.weights, "{name}: weights");
        assert_eq!(m.colors, t.colors, "{name}: colours");
        assert_eq!(m.influence_count, t.influence_count, "{name}");
        assert_eq!(rig.meshes.len(), 1);
        // And the source, triangle by triangle (Draco reorders points and triangles): exact
        // without quantisation, within the step with it.
        let source_rig = import(&gltf_of(&source, None).0).unwrap();
        let error =
            corner_error(&rig, &source_rig).unwrap_or_else(|| panic!("{name}: triangle counts differ"));
        let bound = if coding.quantised {
            // Half a step of 14 bits over 2 m, of 12 over 1; normals at 10 bits octahedral; weights
            // at 10 bits, renormalised.
            [2.0 / 16383.0, 4.0 / 511.0, 1.0 / 4095.0, 2.0 / 1023.0, 0.0]
        } else {
            [0.0; 5]
        };
        for (k, (e, b)) in error.iter().zip(bound).enumerate() {
            assert!(*e <= b + 1e-6, "{name}: value kind {k} off by {e} (bound {b})");
        }
        assert_eq!(rig.meshes[0].indices.len(), source.indices.len(), "{name}");
    }
}

#[test]
fn a_strip_primitive_and_unmapped_attributes_read_as_the_extension_says() {
    let source = grid(5);
    let stream = encode(&source, CODINGS[2].2);
    let decoded = decode_here(&stream);
    let plain = import(&gltf_of(&decoded, None).0).unwrap();
    // TRIANGLE_STRIP: the stream's triangles are the primitive's (its indices count faces + 2).
    let (mut f, _) = gltf_of(&decoded, Some(&stream));
    let faces = decoded.indices.len() / 3;
    let indices = f.json["meshes"][0]["primitives"][0]["indices"].as_u64().unwrap() as usize;
    f.json["accessors"][indices]["count"] = json!(faces + 2);
    f.json["meshes"][0]["primitives"][0]["mode"] = json!(5);
    assert_eq!(import(&f).unwrap().meshes[0].indices, plain.meshes[0].indices);
    // An attribute the extension does not map is read from its own accessor (in the decoded
    // points' order, as the extension asks generators to write it).
    let (mut f, _) = gltf_of(&decoded, Some(&stream));
    let uv1: Vec<f32> = decoded.uvs.iter().flat_map(|uv| [uv[1], uv[0]]).collect();
    let uv1 = f.f32s(&uv1, "VEC2");
    f.json["meshes"][0]["primitives"][0]["attributes"]["TEXCOORD_1"] = json!(uv1);
    let rig = import_slice_with(&f.glb(), None, "draco.glb", &ImportOptions::default()).unwrap();
    let rig_uv1 =
        super::import_slice_uv_set(&f.glb(), std::path::Path::new("draco.glb"), &ImportOptions::default(), 1)
            .unwrap();
    assert_eq!(rig.meshes[0].positions, plain.meshes[0].positions);
    let flipped: Vec<Vec2> =
        plain.meshes[0].uvs.as_ref().unwrap().iter().map(|uv| Vec2::new(uv.y, uv.x)).collect();
    assert_eq!(rig_uv1.meshes[0].uvs.as_ref().unwrap(), &flipped);
}

#[test]
fn draco_values_convert_to_the_accessors_types_and_refuse_what_does_not_fit() {
    let source = grid(4);
    let stream = encode(&source, CODINGS[0].2);
    let decoded = decode_here(&stream);
    // JOINTS_0 declared as unsigned shorts: the decoder's bytes widen.
    let (mut f, _) = gltf_of(&decoded, Some(&stream));
    let joints = f.json["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"].as_u64().unwrap() as usize;
    f.json["accessors"][joints]["componentType"] = json!(UNSIGNED_SHORT);
    let plain = import(&gltf_of(&decoded, None).0).unwrap();
    assert_eq!(import(&f).unwrap().meshes[0].joints, plain.meshes[0].joints);
    // WEIGHTS_0 declared as unsigned bytes: 0.25 is no byte.
    let (mut f, view) = gltf_of(&decoded, Some(&stream));
    let weights = f.json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"].as_u64().unwrap() as usize;
    f.json["accessors"][weights]["componentType"] = json!(UNSIGNED_BYTE);
    f.json["accessors"][weights]["normalized"] = json!(true);
    let message = gltf_error(import(&f));
    assert_contains(
        &message,
        &[
            &format!("buffer view {}", view.unwrap()),
            "WEIGHTS_0 (Draco attribute 7, Float32)",
            "does not fit",
            "U8",
        ],
    );
    // COLOR_0 declared VEC3: the stream holds four components.
    let (mut f, _) = gltf_of(&decoded, Some(&stream));
    let colors = f.json["meshes"][0]["primitives"][0]["attributes"]["COLOR_0"].as_u64().unwrap() as usize;
    f.json["accessors"][colors]["type"] = json!("VEC3");
    assert_contains(
        &gltf_error(import(&f)),
        &["COLOR_0 (Draco attribute 2) has 4 components, its accessor", "3"],
    );
}

/// `f` with its Draco extension object edited.
fn edited(g: &Grid, stream: &[u8], edit: impl Fn(&mut Value, &mut Value)) -> Fixture {
    let (mut f, _) = gltf_of(g, Some(stream));
    let mut ext = f.json["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"].take();
    edit(&mut ext, &mut f.json);
    f.json["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"] = ext;
    f
}

#[test]
fn broken_extension_objects_and_lying_accessors_are_errors_naming_the_primitive() {
    let source = grid(4);
    let stream = encode(&source, CODINGS[2].2);
    let g = decode_here(&stream);
    let view = gltf_of(&g, Some(&stream)).1.unwrap();
    let part = format!("mesh \"Grid\" primitive 0 (KHR_draco_mesh_compression, buffer view {view})");
    let cases: Vec<(&str, Fixture, Vec<String>)> = vec![
        (
            "bufferView out of range",
            edited(&g, &stream, |e, _| e["bufferView"] = json!(99)),
            vec!["bufferView is 99".into()],
        ),
        (
            "no attributes",
            edited(&g, &stream, |e, _| drop(e.as_object_mut().unwrap().remove("attributes"))),
            vec![part.clone(), "has no `attributes`".into()],
        ),
        (
            "a semantic the primitive lacks",
            edited(&g, &stream, |e, _| e["attributes"]["TEXCOORD_3"] = json!(1)),
            vec![part.clone(), "maps TEXCOORD_3".into()],
        ),
        (
            "an id the stream lacks",
            edited(&g, &stream, |e, _| e["attributes"]["NORMAL"] = json!(40)),
            vec![part.clone(), "no attribute with id 40, which NORMAL maps".into()],
        ),
        (
            "an id that is no u32",
            edited(&g, &stream, |e, _| e["attributes"]["NORMAL"] = json!(-1)),
            vec!["Draco id -1 is not a u32".into()],
        ),
        (
            "no POSITION",
            edited(&g, &stream, |e, _| drop(e["attributes"].as_object_mut().unwrap().remove("POSITION"))),
            vec!["does not map POSITION".into()],
        ),
        (
            "points mode",
            edited(&g, &stream, |_, j| j["meshes"][0]["primitives"][0]["mode"] = json!(0)),
            vec!["TRIANGLES or TRIANGLE_STRIP".into()],
        ),
        (
            "no indices",
            edited(&g, &stream, |_, j| {
                drop(j["meshes"][0]["primitives"][0].as_object_mut().unwrap().remove("indices"))
            }),
            vec!["has no (valid) indices accessor".into()],
        ),
        (
            "accessors disagreeing on the point count",
            edited(&g, &stream, |_, j| {
                let a = j["meshes"][0]["primitives"][0]["attributes"]["NORMAL"].as_u64().unwrap() as usize;
                j["accessors"][a]["count"] = json!(3);
            }),
            vec![part.clone(), "disagree on the point count".into()],
        ),
        (
            "more points declared than decoded",
            edited(&g, &stream, |_, j| {
                for (_, a) in j["meshes"][0]["primitives"][0]["attributes"].clone().as_object().unwrap() {
                    j["accessors"][a.as_u64().unwrap() as usize]["count"] = json!(g.positions.len() + 1);
                }
            }),
            vec![part.clone(), format!("decodes {} points", g.positions.len())],
        ),
        (
            "fewer triangles declared than the stream holds",
            edited(&g, &stream, |_, j| {
                let a = j["meshes"][0]["primitives"][0]["indices"].as_u64().unwrap() as usize;
                j["accessors"][a]["count"] = json!(3);
            }),
            vec![part.clone(), "does not decode".into(), "ceiling".into()],
        ),
        (
            "an indices count that is no multiple of 3",
            edited(&g, &stream, |_, j| {
                let a = j["meshes"][0]["primitives"][0]["indices"].as_u64().unwrap() as usize;
                j["accessors"][a]["count"] = json!(10);
            }),
            vec!["not a multiple of 3".into()],
        ),
        (
            "a stream past its buffer",
            edited(&g, &stream, |_, j| j["bufferViews"][view]["byteLength"] = json!(1 << 20)),
            vec![],
        ),
    ];
    for (name, f, parts) in cases {
        let message = gltf_error(import(&f));
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        assert!(
            message.contains("KHR_draco_mesh_compression") || message.contains("bufferViews"),
            "{name}: {message}"
        );
        assert_contains(&message, &parts);
    }
}

#[test]
fn the_decoded_size_is_charged_before_the_stream_is_decoded() {
    let source = grid(33);
    let stream = encode(&source, CODINGS[4].2);
    let g = decode_here(&stream);
    let (f, _) = gltf_of(&g, Some(&stream));
    let glb = f.glb();
    // The file and the decoded copy fit, the decoder's working memory does not: refused with the
    // budget's numbers before the decoder runs.
    let budget = glb.len() as u64 + (200 << 10);
    let options = ImportOptions { max_memory: budget, ..ImportOptions::default() };
    let message = match import_slice_with(&glb, None, "draco.glb", &options) {
        Err(e @ BakeError::Gltf { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    };
    assert_contains(&message, &["(the decoder's working memory)", "memory budget", "--max-memory"]);
    assert!(import_slice_with(&glb, None, "draco.glb", &ImportOptions::default()).is_ok());
}

#[test]
fn truncated_and_corrupted_streams_are_errors_never_panics() {
    for (name, side, coding) in [CODINGS[0], CODINGS[3]] {
        let source = grid(side.min(5));
        let stream = encode(&source, coding);
        let g = decode_here(&stream);
        let (f, view) = gltf_of(&g, Some(&stream));
        let view = view.unwrap();
        let offset = f.json["bufferViews"][view]["byteOffset"].as_u64().unwrap() as usize;
        let expect = format!("buffer view {view})");
        let mut errors = 0;
        let mut check = |label: &str, bytes: &[u8]| {
            let mut f = Fixture { json: f.json.clone(), bin: f.bin.clone() };
            f.bin[offset..offset + stream.len()].copy_from_slice(bytes);
            match import(&f) {
                Ok(_) => {}
                Err(e @ BakeError::Gltf { .. }) => {
                    let message = e.to_string();
                    // A stream that decodes to other values may fail a later check of the rig;
                    // a refusal of the stream names its view.
                    if message.contains("KHR_draco_mesh_compression") {
                        assert!(message.contains(&expect), "{name} {label}: {message}");
                    }
                    errors += 1;
                }
                Err(e) => panic!("{name} {label}: {e:?}"),
            }
        };
        // Truncated (the tail zeroed: the view keeps its length), then each byte flipped.
        for len in 0..stream.len() {
            let mut bytes = stream[..len].to_vec();
            bytes.resize(stream.len(), 0);
            check(&format!("truncated to {len}"), &bytes);
        }
        for i in 0..stream.len() {
            let mut bytes = stream.clone();
            bytes[i] ^= 0xA5;
            check(&format!("byte {i} flipped"), &bytes);
        }
        assert!(
            errors >= stream.len(),
            "{name}: only {errors} of {} corrupt streams refused",
            2 * stream.len()
        );
    }
    // A view too short for the stream (the stream cut, its view with it).
    let source = grid(4);
    let stream = encode(&source, CODINGS[0].2);
    let g = decode_here(&stream);
    let (f, view) = gltf_of(&g, Some(&stream[..stream.len() / 2]));
    assert_contains(
        &gltf_error(import(&f)),
        &[&format!("buffer view {})", view.unwrap()), "the Draco stream does not decode", "re-export it"],
    );
}

#[test]
fn declaring_the_extension_without_using_it_is_no_error() {
    let source = grid(3);
    let (mut f, _) = gltf_of(&source, None);
    f.json["extensionsUsed"] = json!(["KHR_draco_mesh_compression"]);
    f.json["extensionsRequired"] = json!(["KHR_draco_mesh_compression"]);
    let rig = import(&f).unwrap();
    assert_eq!(rig.meshes[0].positions[0], Vec3::from(source.positions[0]));
    // The colours' bytes are normalised: 255 is 1.
    assert_eq!(rig.meshes[0].colors.as_ref().unwrap()[0].w, 1.0);
}

/// The `gltf_bake` fuzz target's Draco seeds, `fuzz/corpus/gltf_bake/draco-*.glb`, made here where
/// the encoder is (a dev-dependency of vat-bake only): small grids, skinned, one per connectivity
/// coding. They must import and bake; `VAT_BLESS=1` rewrites them after a deliberate change.
#[test]
fn the_draco_fuzz_seeds_are_what_this_generator_makes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/gltf_bake");
    for (file, side, coding) in
        [("draco-sequential.glb", 3, CODINGS[0].2), ("draco-edgebreaker-quantised.glb", 4, CODINGS[3].2)]
    {
        let stream = encode(&grid(side), coding);
        let glb = gltf_of(&decode_here(&stream), Some(&stream)).0.glb();
        crate::fuzzing::import_and_bake(&glb).unwrap_or_else(|e| panic!("{file}: {e}"));
        let path = dir.join(file);
        if std::env::var_os("VAT_BLESS").is_some() {
            std::fs::write(&path, &glb).unwrap();
        }
        let disk =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; VAT_BLESS=1 writes it", path.display()));
        assert!(disk == glb, "{} is stale; VAT_BLESS=1 rewrites it", path.display());
        assert!(glb.len() <= 32 << 10, "{file}: seeds stay small");
    }
}
