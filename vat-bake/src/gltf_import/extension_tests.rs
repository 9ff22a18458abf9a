//! The glTF extensions web exports use, on fixtures built here: `KHR_mesh_quantization` (each
//! quantised file against the float file of the values the spec's equations give),
//! `EXT_meshopt_compression` / `KHR_meshopt_compression` (each compressed file against the
//! uncompressed one), `KHR_texture_transform` (transformed lookups against the texels expected),
//! and what is left out (`KHR_texture_basisu`); Draco is tested in `draco_tests.rs`.

use serde_json::{Value, json};

use super::fixture::Fixture;
use super::import_slice;
use crate::BakeError;
use crate::prepare::{BakeOptions, prepare};
use crate::rig::Rig;

const BYTE: u32 = 5120;
const UNSIGNED_BYTE: u32 = 5121;
const SHORT: u32 = 5122;
const UNSIGNED_SHORT: u32 = 5123;

/// How a quantised attribute is stored.
#[derive(Debug, Clone, Copy)]
struct Storage {
    component: u32,
    normalized: bool,
}

const fn storage(component: u32, normalized: bool) -> Storage {
    Storage { component, normalized }
}

impl Storage {
    /// Bytes per component.
    fn size(self) -> usize {
        if matches!(self.component, BYTE | UNSIGNED_BYTE) { 1 } else { 2 }
    }

    /// The value the glTF spec (KHR_mesh_quantization's table) gives integer `c`.
    fn reference(self, c: i32) -> f32 {
        match (self.component, self.normalized) {
            (_, false) => c as f32,
            (BYTE, true) => (c as f32 / 127.0).max(-1.0),
            (UNSIGNED_BYTE, true) => c as f32 / 255.0,
            (SHORT, true) => (c as f32 / 32767.0).max(-1.0),
            (UNSIGNED_SHORT, true) => c as f32 / 65535.0,
            _ => unreachable!(),
        }
    }

    /// Four values of the type: its extremes and two between.
    fn values(self) -> [i32; 4] {
        match self.component {
            BYTE => [-128, 127, 0, 5],
            UNSIGNED_BYTE => [0, 255, 17, 128],
            SHORT => [-32768, 32767, -1, 1234],
            _ => [0, 65535, 1, 40000],
        }
    }

    /// The largest positive value (a unit component).
    fn max(self) -> i32 {
        if self.component == BYTE { 127 } else { 32767 }
    }
}

/// Adds `elements` (each `ty`'s components) as an accessor: stored as `storage` (every element
/// padded to 4 bytes, as the spec asks) when `quantised`, else as the floats the spec's equations
/// give them.
fn attribute(f: &mut Fixture, elements: &[Vec<i32>], ty: &str, storage: Storage, quantised: bool) -> usize {
    if !quantised {
        let floats: Vec<f32> = elements.iter().flatten().map(|&c| storage.reference(c)).collect();
        return f.f32s(&floats, ty);
    }
    let element = elements[0].len() * storage.size();
    let stride = element.div_ceil(4) * 4;
    let mut bytes = Vec::new();
    for e in elements {
        for &c in e {
            match storage.size() {
                1 => bytes.push(c as u8),
                _ => bytes.extend_from_slice(&(c as u16).to_le_bytes()),
            }
        }
        bytes.resize(bytes.len() + stride - element, 0);
    }
    let view = f.view(&bytes, Some(stride));
    let accessor = f.accessor(view, 0, storage.component, elements.len(), ty);
    f.json["accessors"][accessor]["normalized"] = json!(storage.normalized);
    accessor
}

/// Storage of every attribute of one quantised quad.
struct Layout {
    position: Storage,
    uv: Storage,
    normal: Storage,
    tangent: Storage,
    position_delta: Storage,
    normal_delta: Storage,
}

/// A quad on a node whose scale and translation undo the position quantisation (as gltfpack
/// writes it), with normals, tangents, texture coordinates and one morph target; quantised as
/// `layout` says, or floats of the same values.
fn quad(layout: &Layout, quantised: bool) -> Fixture {
    let mut f = Fixture::new();
    let [lo, hi, a, b] = layout.position.values();
    let positions = [vec![lo, lo, a], vec![hi, lo, b], vec![lo, hi, a], vec![hi, hi, b]];
    let position = attribute(&mut f, &positions, "VEC3", layout.position, quantised);
    let [lo, hi, a, b] = layout.uv.values();
    let uvs = [vec![lo, a], vec![hi, lo], vec![b, hi], vec![hi, a]];
    let uv = attribute(&mut f, &uvs, "VEC2", layout.uv, quantised);
    // Unit vectors: one exactly -1 (the lowest value clamps), one not unit length (renormalised).
    let m = layout.normal.max();
    let low = -m - 1;
    let normals = [vec![0, 0, m], vec![low, 0, 0], vec![m / 2, m / 2, 0], vec![1, 2, 3]];
    let normal = attribute(&mut f, &normals, "VEC3", layout.normal, quantised);
    let m = layout.tangent.max();
    let tangents = [vec![m, 0, 0, m], vec![0, -m - 1, 0, -m], vec![3, 0, 4, m], vec![0, 0, m, -m - 1]];
    let tangent = attribute(&mut f, &tangents, "VEC4", layout.tangent, quantised);
    let [lo, hi, a, b] = layout.position_delta.values();
    let deltas = [vec![lo, a, b], vec![hi, b, a], vec![a, lo, hi], vec![b, hi, lo]];
    let position_delta = attribute(&mut f, &deltas, "VEC3", layout.position_delta, quantised);
    let m = layout.normal_delta.max();
    let normal_deltas = [vec![m, 0, -m - 1], vec![0, 1, 0], vec![-5, 7, 0], vec![0, 0, 0]];
    let normal_delta = attribute(&mut f, &normal_deltas, "VEC3", layout.normal_delta, quantised);
    let indices = f.u16s(&[0, 1, 2, 2, 1, 3], "SCALAR");
    let mesh = f.push(
        "meshes",
        json!({ "name": "Quad", "weights": [0.25], "primitives": [{
            "attributes": { "POSITION": position, "NORMAL": normal, "TANGENT": tangent, "TEXCOORD_0": uv },
            "targets": [{ "POSITION": position_delta, "NORMAL": normal_delta }],
            "indices": indices,
        }]}),
    );
    f.node(
        json!({ "name": "Quad", "mesh": mesh, "translation": [0.5, -1.0, 2.0], "scale": [0.001, 0.001, 0.001] }),
        true,
    );
    if quantised {
        f.json["extensionsUsed"] = json!(["KHR_mesh_quantization"]);
        f.json["extensionsRequired"] = json!(["KHR_mesh_quantization"]);
    }
    f
}

fn import_named(bytes: &[u8]) -> crate::Result<Rig> {
    import_slice(bytes, None, "fixture.gltf")
}

/// The baked `.vat` of a rig.
fn baked(rig: &Rig) -> Vec<u8> {
    prepare(rig, &BakeOptions::default()).unwrap().to_vat_bytes().unwrap()
}

#[test]
fn quantised_attributes_import_and_bake_as_the_floats_the_spec_gives() {
    let layouts = [
        // gltfpack's usual choice: plain unsigned short positions, normalised byte unit vectors.
        Layout {
            position: storage(UNSIGNED_SHORT, false),
            uv: storage(UNSIGNED_SHORT, false),
            normal: storage(BYTE, true),
            tangent: storage(BYTE, true),
            position_delta: storage(SHORT, false),
            normal_delta: storage(BYTE, true),
        },
        Layout {
            position: storage(SHORT, true),
            uv: storage(UNSIGNED_BYTE, true),
            normal: storage(SHORT, true),
            tangent: storage(SHORT, true),
            position_delta: storage(BYTE, true),
            normal_delta: storage(SHORT, true),
        },
        Layout {
            position: storage(BYTE, false),
            uv: storage(BYTE, true),
            normal: storage(BYTE, true),
            tangent: storage(SHORT, true),
            position_delta: storage(BYTE, false),
            normal_delta: storage(BYTE, true),
        },
        Layout {
            position: storage(UNSIGNED_BYTE, true),
            uv: storage(SHORT, false),
            normal: storage(SHORT, true),
            tangent: storage(BYTE, true),
            position_delta: storage(SHORT, true),
            normal_delta: storage(SHORT, true),
        },
        Layout {
            position: storage(BYTE, true),
            uv: storage(UNSIGNED_SHORT, true),
            normal: storage(BYTE, true),
            tangent: storage(BYTE, true),
            position_delta: storage(SHORT, false),
            normal_delta: storage(BYTE, true),
        },
        Layout {
            position: storage(UNSIGNED_BYTE, false),
            uv: storage(SHORT, true),
            normal: storage(SHORT, true),
            tangent: storage(SHORT, true),
            position_delta: storage(BYTE, true),
            normal_delta: storage(SHORT, true),
        },
        Layout {
            position: storage(UNSIGNED_SHORT, true),
            uv: storage(UNSIGNED_BYTE, false),
            normal: storage(BYTE, true),
            tangent: storage(BYTE, true),
            position_delta: storage(SHORT, true),
            normal_delta: storage(BYTE, true),
        },
    ];
    for (k, layout) in layouts.iter().enumerate() {
        let quantised =
            import_named(&quad(layout, true).gltf()).unwrap_or_else(|e| panic!("layout {k}: {e}"));
        let floats = import_named(&quad(layout, false).gltf()).unwrap();
        assert_eq!(quantised, floats, "layout {k}");
        // The lowest signed value clamps to exactly -1, and the node scale is kept for the bake.
        assert_eq!(quantised.meshes[0].normals[1], glam::Vec3::NEG_X, "layout {k}");
        assert_eq!(quantised.nodes[0].rest.scale, glam::Vec3::splat(0.001));
        assert_eq!(baked(&quantised), baked(&floats), "layout {k}");
    }
}

#[test]
fn quantised_layouts_outside_the_extension_are_refused() {
    let layout = Layout {
        position: storage(UNSIGNED_SHORT, false),
        uv: storage(UNSIGNED_SHORT, false),
        normal: storage(BYTE, true),
        tangent: storage(BYTE, true),
        position_delta: storage(SHORT, false),
        normal_delta: storage(BYTE, true),
    };
    let find = |f: &Fixture, attribute: &str| -> usize {
        f.json["meshes"][0]["primitives"][0]["attributes"][attribute].as_u64().unwrap() as usize
    };
    // A normal that is not normalised, an unsigned normal, and a 32-bit integer position.
    let cases: [(&str, &str, Value, &str); 3] = [
        ("NORMAL", "normalized", json!(false), "is I8 but not normalized"),
        (
            "NORMAL",
            "componentType",
            json!(UNSIGNED_BYTE),
            "is U8 Vec3; expected F32 Vec3 or I8 Vec3 or I16 Vec3",
        ),
        ("POSITION", "componentType", json!(5125), "is U32 Vec3"),
    ];
    for (attribute, field, value, expected) in cases {
        let mut f = quad(&layout, true);
        let accessor = find(&f, attribute);
        f.json["accessors"][accessor][field] = value;
        let message = match import_named(&f.gltf()) {
            Err(e @ BakeError::Gltf { .. }) => e.to_string(),
            other => panic!("{attribute} {field}: expected a glTF error, got {other:?}"),
        };
        assert!(message.contains(&format!("{attribute} (accessor {accessor})")), "{message}");
        assert!(message.contains(expected), "{message}");
    }
}

#[test]
fn unsigned_texture_coordinates_are_plain_integers_only_under_the_extension() {
    let layout = Layout {
        position: storage(UNSIGNED_SHORT, false),
        uv: storage(UNSIGNED_SHORT, false),
        normal: storage(BYTE, true),
        tangent: storage(BYTE, true),
        position_delta: storage(SHORT, false),
        normal_delta: storage(BYTE, true),
    };
    let quantised = import_named(&quad(&layout, true).gltf()).unwrap();
    assert_eq!(quantised.meshes[0].uvs.as_ref().unwrap()[1], glam::Vec2::new(65535.0, 0.0));
    // Without KHR_mesh_quantization the core spec allows only normalised unsigned coordinates: a
    // missing flag is read as set, as before.
    let mut f = quad(&layout, true);
    f.json.as_object_mut().unwrap().remove("extensionsUsed");
    f.json.as_object_mut().unwrap().remove("extensionsRequired");
    let core = import_named(&f.gltf()).unwrap();
    assert_eq!(core.meshes[0].uvs.as_ref().unwrap()[1], glam::Vec2::new(1.0, 0.0));
}

// ---- EXT_meshopt_compression / KHR_meshopt_compression ----

/// One buffer view of the meshopt fixture: its plain bytes (what the decoder must give back),
/// its compressed stream, and the extension's parameters.
struct Stream {
    plain: Vec<u8>,
    encoded: Vec<u8>,
    stride: usize,
    count: usize,
    mode: &'static str,
    filter: &'static str,
    /// The parent view's `byteStride` (vertex attributes), if any.
    view_stride: Option<usize>,
}

/// Which meshopt extension (and attribute stream version) a fixture uses.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Meshopt {
    /// `EXT_meshopt_compression`, version 0 attribute streams.
    Ext,
    /// `KHR_meshopt_compression`, version 1 attribute streams, and a COLOR filtered stream.
    Khr,
}

impl Meshopt {
    fn name(self) -> &'static str {
        match self {
            Meshopt::Ext => "EXT_meshopt_compression",
            Meshopt::Khr => "KHR_meshopt_compression",
        }
    }
}

/// `bytes` as elements of `N` bytes, compressed as an ATTRIBUTES stream.
fn encode_attributes<const N: usize>(bytes: &[u8], version: Meshopt) -> Vec<u8> {
    let elements: Vec<[u8; N]> = bytes.chunks_exact(N).map(|c| c.try_into().unwrap()).collect();
    let version = if version == Meshopt::Ext { 0 } else { 1 };
    meshopt::encode_vertex_buffer_level(&elements, 2, Some(version)).unwrap()
}

fn attribute_stream<const N: usize>(
    plain: Vec<u8>,
    filter: &'static str,
    view_stride: Option<usize>,
    version: Meshopt,
) -> Stream {
    Stream {
        encoded: encode_attributes::<N>(&plain, version),
        count: plain.len() / N,
        plain,
        stride: N,
        mode: "ATTRIBUTES",
        filter,
        view_stride,
    }
}

fn le_bytes<T: Copy, const K: usize>(values: &[T], to: impl Fn(T) -> [u8; K]) -> Vec<u8> {
    values.iter().flat_map(|&v| to(v)).collect()
}

/// A 4 x 4 vertex grid (two primitives: a TRIANGLES-compressed u16 list and an INDICES-compressed
/// u32 list of the other half) with oct-encoded normals and tangents, UVs, colours, an
/// exponentially encoded morph target and a rotation (quaternion filter) and translation
/// (exponential filter) animation: every mode and filter. The document comes without buffers
/// and views ([`plain_glb`] and [`compressed_parts`] lay those out).
fn meshopt_scene(version: Meshopt) -> MeshoptScene {
    let n = 16;
    let positions: Vec<f32> = (0..n)
        .flat_map(|v| [(v % 4) as f32 * 0.25, (v / 4) as f32 * 0.25, ((v * 7) % 5) as f32 * 0.01])
        .collect();
    let normals: Vec<[f32; 4]> = (0..n)
        .map(|v| {
            let t = v as f32 * 0.37;
            let d = glam::Vec3::new(t.sin() * 0.3, t.cos() * 0.2, 1.0).normalize();
            [d.x, d.y, d.z, 0.0]
        })
        .collect();
    let tangents: Vec<[f32; 4]> = (0..n)
        .map(|v| {
            let t = v as f32 * 0.21;
            let d = glam::Vec3::new(1.0, t.sin() * 0.4, t.cos() * 0.1).normalize();
            [d.x, d.y, d.z, if v % 3 == 0 { -1.0 } else { 1.0 }]
        })
        .collect();
    let uvs: Vec<u16> = (0..n).flat_map(|v| [(v % 4) as u16 * 21845, (v / 4) as u16 * 21845]).collect();
    let colors: Vec<[f32; 4]> = (0..n).map(|v| [v as f32 / 15.0, 1.0 - v as f32 / 15.0, 0.5, 1.0]).collect();
    let deltas: Vec<[f32; 3]> = (0..n).map(|v| [0.0, 0.0, v as f32 * 0.013 - 0.1]).collect();
    let mut triangles = Vec::new();
    for row in 0..3u32 {
        for col in 0..3u32 {
            let a = row * 4 + col;
            triangles.push([a, a + 1, a + 4]);
            triangles.push([a + 4, a + 1, a + 5]);
        }
    }
    let first: Vec<u32> = triangles.iter().step_by(2).flatten().copied().collect();
    let second: Vec<u32> = triangles.iter().skip(1).step_by(2).flatten().copied().collect();
    let times = [0.0f32, 0.5, 1.0, 1.5];
    let rotations: Vec<[f32; 4]> = times
        .iter()
        .map(|&t| {
            let q = glam::Quat::from_rotation_y(t * 0.8);
            [q.x, q.y, q.z, q.w]
        })
        .collect();
    let translations: Vec<[f32; 3]> = times.iter().map(|&t| [t * 0.1, 0.0, -t * 0.03]).collect();

    let mut streams = Vec::new();
    streams.push(attribute_stream::<12>(le_bytes(&positions, f32::to_le_bytes), "NONE", Some(12), version));
    // Octahedral normals (8-bit) and tangents (16-bit): the plain file holds what the filter
    // decodes, as an exporter writes the fallback.
    let mut oct8 = meshopt::encode_filter_oct::<i8>(&normals, 8);
    let encoded8 = encode_attributes::<4>(&le_bytes(&oct8, |e: [i8; 4]| e.map(|x| x as u8)), version);
    meshopt::decode_filter_oct(&mut oct8);
    streams.push(Stream {
        plain: le_bytes(&oct8, |e: [i8; 4]| e.map(|x| x as u8)),
        encoded: encoded8,
        stride: 4,
        count: n,
        mode: "ATTRIBUTES",
        filter: "OCTAHEDRAL",
        view_stride: Some(4),
    });
    let mut oct16 = meshopt::encode_filter_oct::<i16>(&tangents, 12);
    let shorts = |e: [i16; 4]| -> [u8; 8] {
        let mut out = [0; 8];
        for (k, x) in e.iter().enumerate() {
            out[2 * k..2 * k + 2].copy_from_slice(&x.to_le_bytes());
        }
        out
    };
    let encoded16 = encode_attributes::<8>(&le_bytes(&oct16, shorts), version);
    meshopt::decode_filter_oct(&mut oct16);
    streams.push(Stream {
        plain: le_bytes(&oct16, shorts),
        encoded: encoded16,
        stride: 8,
        count: n,
        mode: "ATTRIBUTES",
        filter: "OCTAHEDRAL",
        view_stride: Some(8),
    });
    streams.push(attribute_stream::<4>(le_bytes(&uvs, u16::to_le_bytes), "NONE", Some(4), version));
    if version == Meshopt::Khr {
        let mut color = meshopt::encode_filter_color::<u8>(&colors, 8);
        let encoded = encode_attributes::<4>(&le_bytes(&color, |e: [u8; 4]| e), version);
        meshopt::decode_filter_color(&mut color);
        streams.push(Stream {
            plain: le_bytes(&color, |e: [u8; 4]| e),
            encoded,
            stride: 4,
            count: n,
            mode: "ATTRIBUTES",
            filter: "COLOR",
            view_stride: Some(4),
        });
    } else {
        let color: Vec<u8> = colors.iter().flat_map(|c| c.map(|x| (x * 255.0).round() as u8)).collect();
        streams.push(attribute_stream::<4>(color, "NONE", Some(4), version));
    }
    let mut exp = meshopt::encode_filter_exp(&deltas, 15, meshopt::EncodeExpMode::SharedVector);
    let words = |e: [u32; 3]| -> [u8; 12] {
        let mut out = [0; 12];
        for (k, x) in e.iter().enumerate() {
            out[4 * k..4 * k + 4].copy_from_slice(&x.to_le_bytes());
        }
        out
    };
    let encoded = encode_attributes::<12>(&le_bytes(&exp, words), version);
    meshopt::decode_filter_exp(&mut exp);
    streams.push(Stream {
        plain: le_bytes(&exp, words),
        encoded,
        stride: 12,
        count: n,
        mode: "ATTRIBUTES",
        filter: "EXPONENTIAL",
        view_stride: Some(12),
    });
    // The triangle codec may rotate a triangle's corners (keeping its winding): the plain file
    // holds the order it decodes to, as an exporter writes the fallback.
    let encoded = meshopt::encode_index_buffer(&first, n).unwrap();
    let short: Vec<u16> = meshopt::decode_index_buffer(&encoded, first.len()).unwrap();
    let rotated = |t: &[u16]| [[t[0], t[1], t[2]], [t[1], t[2], t[0]], [t[2], t[0], t[1]]];
    for (t, original) in short.chunks_exact(3).zip(first.chunks_exact(3)) {
        let original = [original[0] as u16, original[1] as u16, original[2] as u16];
        assert!(rotated(t).contains(&original), "{t:?} is not {original:?} rotated");
    }
    streams.push(Stream {
        plain: le_bytes(&short, u16::to_le_bytes),
        encoded,
        stride: 2,
        count: first.len(),
        mode: "TRIANGLES",
        filter: "NONE",
        view_stride: None,
    });
    streams.push(Stream {
        plain: le_bytes(&second, u32::to_le_bytes),
        encoded: meshopt::encode_index_sequence(&second, n).unwrap(),
        stride: 4,
        count: second.len(),
        mode: "INDICES",
        filter: "NONE",
        view_stride: None,
    });
    streams.push(attribute_stream::<4>(le_bytes(&times, f32::to_le_bytes), "NONE", None, version));
    let mut quat = meshopt::encode_filter_quat(&rotations, 12);
    let encoded = encode_attributes::<8>(&le_bytes(&quat, shorts), version);
    meshopt::decode_filter_quat(&mut quat);
    streams.push(Stream {
        plain: le_bytes(&quat, shorts),
        encoded,
        stride: 8,
        count: times.len(),
        mode: "ATTRIBUTES",
        filter: "QUATERNION",
        view_stride: None,
    });
    let mut exp = meshopt::encode_filter_exp(&translations, 20, meshopt::EncodeExpMode::Separate);
    let encoded = encode_attributes::<12>(&le_bytes(&exp, words), version);
    meshopt::decode_filter_exp(&mut exp);
    streams.push(Stream {
        plain: le_bytes(&exp, words),
        encoded,
        stride: 12,
        count: times.len(),
        mode: "ATTRIBUTES",
        filter: "EXPONENTIAL",
        view_stride: None,
    });

    let accessor = |view: usize, component: u32, count: usize, ty: &str, normalized: bool| json!({ "bufferView": view, "componentType": component, "count": count, "type": ty, "normalized": normalized });
    let json = json!({
        "asset": { "version": "2.0" },
        "scene": 0,
        "scenes": [{ "nodes": [0] }],
        "nodes": [{ "name": "Grid", "mesh": 0 }],
        "meshes": [{ "name": "Grid", "weights": [0.5], "primitives": [
            {
                "attributes": { "POSITION": 0, "NORMAL": 1, "TANGENT": 2, "TEXCOORD_0": 3, "COLOR_0": 4 },
                "targets": [{ "POSITION": 5 }],
                "indices": 6,
            },
            {
                "attributes": { "POSITION": 0, "NORMAL": 1, "TANGENT": 2, "TEXCOORD_0": 3, "COLOR_0": 4 },
                "targets": [{ "POSITION": 5 }],
                "indices": 7,
            },
        ]}],
        "accessors": [
            accessor(0, 5126, n, "VEC3", false),
            accessor(1, BYTE, n, "VEC3", true),
            accessor(2, SHORT, n, "VEC4", true),
            accessor(3, UNSIGNED_SHORT, n, "VEC2", true),
            accessor(4, UNSIGNED_BYTE, n, "VEC4", true),
            accessor(5, 5126, n, "VEC3", false),
            accessor(6, UNSIGNED_SHORT, first.len(), "SCALAR", false),
            accessor(7, 5125, second.len(), "SCALAR", false),
            accessor(8, 5126, times.len(), "SCALAR", false),
            accessor(9, SHORT, times.len(), "VEC4", true),
            accessor(10, 5126, times.len(), "VEC3", false),
        ],
        "animations": [{ "name": "spin", "samplers": [
            { "input": 8, "output": 9, "interpolation": "LINEAR" },
            { "input": 8, "output": 10, "interpolation": "LINEAR" },
        ], "channels": [
            { "sampler": 0, "target": { "node": 0, "path": "rotation" } },
            { "sampler": 1, "target": { "node": 0, "path": "translation" } },
        ]}],
    });
    MeshoptScene { streams, json, normals, rotations }
}

/// What [`meshopt_scene`] builds.
struct MeshoptScene {
    /// The buffer views, in order.
    streams: Vec<Stream>,
    /// The document without its buffers and views.
    json: Value,
    /// The unit normals and rotations before their filters' encoding.
    normals: Vec<[f32; 4]>,
    rotations: Vec<[f32; 4]>,
}

/// The plain `.glb`: every view holds its decoded bytes.
fn plain_glb(streams: &[Stream], json: &Value) -> Vec<u8> {
    let mut json = json.clone();
    let mut bin = Vec::new();
    let mut views = Vec::new();
    for s in streams {
        bin.resize(bin.len().next_multiple_of(4), 0);
        let mut view = json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": s.plain.len() });
        if let Some(stride) = s.view_stride {
            view["byteStride"] = json!(stride);
        }
        views.push(view);
        bin.extend_from_slice(&s.plain);
    }
    json["bufferViews"] = json!(views);
    json["buffers"] = json!([{ "byteLength": bin.len() }]);
    crate::testdata::glb(&serde_json::to_vec(&json).unwrap(), &bin)
}

/// The compressed file's JSON and BIN chunk: the streams in buffer 0 (the BIN chunk), every view
/// on the fallback buffer 1, which has no data (no `uri`, no chunk) and says `fallback: true`.
fn compressed_parts(streams: &[Stream], json: &Value, version: Meshopt) -> (Value, Vec<u8>) {
    let mut json = json.clone();
    let mut bin = Vec::new();
    let mut fallback = 0usize;
    let mut views = Vec::new();
    for s in streams {
        bin.resize(bin.len().next_multiple_of(4), 0);
        let mut view = json!({ "buffer": 1, "byteOffset": fallback, "byteLength": s.plain.len(), "extensions": {
            version.name(): {
                "buffer": 0, "byteOffset": bin.len(), "byteLength": s.encoded.len(), "byteStride": s.stride,
                "count": s.count, "mode": s.mode, "filter": s.filter,
            }
        }});
        if let Some(stride) = s.view_stride {
            view["byteStride"] = json!(stride);
        }
        views.push(view);
        bin.extend_from_slice(&s.encoded);
        fallback = (fallback + s.plain.len()).next_multiple_of(4);
    }
    json["bufferViews"] = json!(views);
    json["buffers"] = json!([
        { "byteLength": bin.len() },
        { "byteLength": fallback, "extensions": { version.name(): { "fallback": true } } },
    ]);
    json["extensionsUsed"] = json!([version.name(), "KHR_mesh_quantization"]);
    json["extensionsRequired"] = json!([version.name(), "KHR_mesh_quantization"]);
    (json, bin)
}

fn compressed_glb(streams: &[Stream], json: &Value, version: Meshopt) -> Vec<u8> {
    let (json, bin) = compressed_parts(streams, json, version);
    crate::testdata::glb(&serde_json::to_vec(&json).unwrap(), &bin)
}

#[test]
fn meshopt_compressed_files_import_and_bake_as_their_uncompressed_twins() {
    for version in [Meshopt::Ext, Meshopt::Khr] {
        let MeshoptScene { streams, json, normals, rotations } = meshopt_scene(version);
        // Every stream really is compressed (the decoder has work to do).
        assert!(streams.iter().all(|s| s.encoded != s.plain));
        let plain = import_slice(&plain_glb(&streams, &json), None, "grid.glb").unwrap();
        let compressed = import_slice(&compressed_glb(&streams, &json, version), None, "grid.glb")
            .unwrap_or_else(|e| panic!("{version:?}: {e}"));
        assert_eq!(compressed, plain, "{version:?}");
        assert_eq!(baked(&compressed), baked(&plain), "{version:?}");
        // The filters give back the encoded values within their precision: 8-bit octahedral
        // normals, 12-bit quaternions.
        let mesh = &compressed.meshes[0];
        assert_eq!(mesh.indices.len(), 54);
        for (v, n) in mesh.normals.iter().enumerate() {
            let expected = glam::Vec3::from_slice(&normals[v][..3]);
            assert!(n.angle_between(expected) < 0.02, "{version:?} normal {v}: {n} vs {expected}");
        }
        let clip = &compressed.clips[0];
        let rotation = clip
            .channels
            .iter()
            .find(|c| matches!(c.target, crate::rig::ChannelTarget::Rotation(_)))
            .unwrap();
        for (k, q) in rotation.values.chunks_exact(4).enumerate() {
            let q = glam::Quat::from_slice(q).normalize();
            let expected = glam::Quat::from_array(rotations[k]);
            assert!(q.angle_between(expected) < 0.002, "{version:?} rotation key {k}: {q} vs {expected}");
        }
    }
}

/// The import of the meshopt fixture after `edit` changed its JSON or compressed bytes.
fn edited_meshopt(edit: impl FnOnce(&mut Value, &mut Vec<u8>)) -> crate::Result<Rig> {
    let MeshoptScene { streams, json, .. } = meshopt_scene(Meshopt::Ext);
    let (mut json, mut bin) = compressed_parts(&streams, &json, Meshopt::Ext);
    edit(&mut json, &mut bin);
    import_slice(&crate::testdata::glb(&serde_json::to_vec(&json).unwrap(), &bin), None, "grid.glb")
}

#[track_caller]
fn expect_gltf_error(result: crate::Result<Rig>, parts: &[&str]) {
    match result {
        Err(e @ BakeError::Gltf { .. }) => {
            let message = e.to_string();
            for part in parts {
                assert!(message.contains(part), "{message:?} does not contain {part:?}");
            }
        }
        Err(e) => panic!("expected a glTF error with {parts:?}, got {e:?}"),
        Ok(_) => panic!("expected a glTF error with {parts:?}, the import succeeded"),
    }
}

#[test]
fn the_fallback_buffer_is_never_read() {
    // A fallback with a uri that cannot be read (no folder to read it from) is not needed.
    let rig = edited_meshopt(|json, _| json["buffers"][1]["uri"] = json!("fallback.bin")).unwrap();
    assert_eq!(rig.meshes[0].indices.len(), 54);
    // Nor is one without the `fallback` flag that only compressed views use.
    let rig =
        edited_meshopt(|json, _| drop(json["buffers"][1].as_object_mut().unwrap().remove("extensions")));
    assert_eq!(rig.unwrap().meshes[0].positions.len(), 16);
}

#[test]
fn corrupt_meshopt_streams_are_typed_errors() {
    let ext = |json: &mut Value, view: usize| -> Value {
        json["bufferViews"][view]["extensions"]["EXT_meshopt_compression"].take()
    };
    let set = |json: &mut Value, view: usize, value: Value| {
        json["bufferViews"][view]["extensions"]["EXT_meshopt_compression"] = value;
    };
    // A truncated stream, and one whose header byte is not a meshopt version.
    for (view, what) in [(0, "ATTRIBUTES"), (6, "TRIANGLES"), (7, "INDICES")] {
        expect_gltf_error(
            edited_meshopt(|json, _| {
                let mut e = ext(json, view);
                e["byteLength"] = json!(e["byteLength"].as_u64().unwrap() - 7);
                set(json, view, e);
            }),
            &[&format!("buffer view {view} (EXT_meshopt_compression)"), what, "does not decode", "corrupt"],
        );
        expect_gltf_error(
            edited_meshopt(|json, bin| {
                let e = ext(json, view);
                bin[e["byteOffset"].as_u64().unwrap() as usize] = 0x17;
                set(json, view, e);
            }),
            &[&format!("buffer view {view}"), "does not decode"],
        );
    }
    // Any byte of any stream changed: a typed error or garbage that imports, never a panic.
    let MeshoptScene { streams, json, .. } = meshopt_scene(Meshopt::Ext);
    let (json, bin) = compressed_parts(&streams, &json, Meshopt::Ext);
    let json_bytes = serde_json::to_vec(&json).unwrap();
    for at in (0..bin.len()).step_by(3) {
        for value in [0x00, 0xff, bin[at] ^ 0x55] {
            let mut bad = bin.clone();
            bad[at] = value;
            let _ = import_slice(&crate::testdata::glb(&json_bytes, &bad), None, "grid.glb");
        }
    }
}

#[test]
fn meshopt_views_breaking_the_spec_rules_are_refused() {
    let cases: [(usize, &str, Value, &str); 8] = [
        (0, "byteStride", json!(6), "ATTRIBUTES needs a byteStride that is a multiple of 4 in 4..=256"),
        (0, "byteStride", json!(260), "multiple of 4 in 4..=256"),
        (6, "filter", json!("OCTAHEDRAL"), "TRIANGLES and INDICES take no filter"),
        (7, "byteStride", json!(8), "TRIANGLES and INDICES need a byteStride of 2 or 4"),
        (0, "filter", json!("OCTAHEDRAL"), "OCTAHEDRAL and COLOR need a byteStride of 4 or 8"),
        (3, "mode", json!("STRIPS"), "mode \"STRIPS\" is none of"),
        (3, "filter", json!("SPLINE"), "filter \"SPLINE\" is none of"),
        (3, "byteOffset", json!(1u64 << 40), "run past the end of buffer 0"),
    ];
    for (view, field, value, expected) in cases {
        expect_gltf_error(
            edited_meshopt(|json, _| {
                json["bufferViews"][view]["extensions"]["EXT_meshopt_compression"][field] = value;
            }),
            &[&format!("buffer view {view} (EXT_meshopt_compression)"), expected],
        );
    }
    // QUATERNION over 4-byte elements (the view's count adjusted to keep byteLength).
    expect_gltf_error(
        edited_meshopt(|json, _| {
            let e = &mut json["bufferViews"][3]["extensions"]["EXT_meshopt_compression"];
            e["filter"] = json!("QUATERNION");
        }),
        &["buffer view 3", "QUATERNION needs a byteStride of 8"],
    );
    // A view decoding to 12 GiB: refused by the memory budget before anything is allocated.
    expect_gltf_error(
        edited_meshopt(|json, _| {
            json["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]["count"] = json!(1u64 << 30);
            json["bufferViews"][0]["byteLength"] = json!(12u64 << 30);
        }),
        &["the decoded meshopt buffer views", "more than the memory budget", "--max-memory"],
    );
    // A count whose decoded size is not the view's byteLength; a TRIANGLES count not of triangles;
    // a missing field.
    expect_gltf_error(
        edited_meshopt(|json, _| {
            json["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]["count"] = json!(15)
        }),
        &["buffer view 0", "byteStride 12 x count 15 is not the bufferView's byteLength 192"],
    );
    expect_gltf_error(
        edited_meshopt(|json, _| {
            json["bufferViews"][6]["extensions"]["EXT_meshopt_compression"]["count"] = json!(26);
            json["bufferViews"][6]["byteLength"] = json!(52);
        }),
        &["buffer view 6", "TRIANGLES needs a count that is a multiple of 3"],
    );
    expect_gltf_error(
        edited_meshopt(|json, _| {
            json["bufferViews"][0]["extensions"]["EXT_meshopt_compression"]
                .as_object_mut()
                .unwrap()
                .remove("count");
        }),
        &["buffer view 0", "has no `count`"],
    );
}

// ---- KHR_texture_transform ----

/// Texels per side of the test texture, and of each of its 4 x 4 cells of one colour.
const TEXELS: u32 = 16;
const CELL: u32 = 4;

/// The colour of cell `(x, y)` (column, row from the top) of the test texture: all distinct.
fn cell_color(x: u32, y: u32) -> [u8; 4] {
    [40 + 50 * x as u8, 30 + 60 * y as u8, 200 - 10 * (x + 4 * y) as u8, 255]
}

/// A 16 x 16 PNG of 4 x 4 cells, each of one [`cell_color`].
fn cells_png() -> Vec<u8> {
    let image = image::RgbaImage::from_fn(TEXELS, TEXELS, |x, y| image::Rgba(cell_color(x / CELL, y / CELL)));
    let mut png = Vec::new();
    image.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
    png
}

/// The spec example's transform: the lower left quadrant of the image, turned clockwise.
fn spec_example() -> Value {
    json!({ "offset": [0.0, 1.0], "rotation": std::f64::consts::FRAC_PI_2, "scale": [0.5, 0.5] })
}

/// A quad whose four vertices sit at UVs `uvs` (floats, or `quantised` as plain unsigned shorts),
/// one material per entry of `materials` (its JSON), primitive `k` drawn with material `k` over the
/// same vertices, and the cells texture as texture 0.
fn textured_quad(uvs: &[[f32; 2]; 4], quantised: bool, materials: &[Value]) -> Fixture {
    let mut f = Fixture::new();
    let position = f.positions(&[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]);
    let uv = if quantised {
        let raw: Vec<u16> = uvs.iter().flatten().map(|&c| c as u16).collect();
        f.u16s(&raw, "VEC2")
    } else {
        f.f32s(&uvs.concat(), "VEC2")
    };
    let normal = f.f32s(&[0.0, 0.0, 1.0].repeat(4), "VEC3");
    let indices = f.u16s(&[0, 1, 2, 2, 1, 3], "SCALAR");
    let attributes = json!({ "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv });
    let primitives: Vec<Value> = (0..materials.len())
        .map(|k| json!({ "attributes": attributes, "indices": indices, "material": k }))
        .collect();
    let mesh = f.push("meshes", json!({ "name": "Quad", "primitives": primitives }));
    f.node(json!({ "name": "Quad", "mesh": mesh }), true);
    let png = cells_png();
    let view = f.view(&png, None);
    f.json["images"] = json!([{ "bufferView": view, "mimeType": "image/png" }]);
    f.json["samplers"] = json!([{}]);
    f.json["textures"] = json!([{ "source": 0, "sampler": 0 }]);
    f.json["materials"] = json!(materials);
    f.json["extensionsUsed"] = json!(["KHR_texture_transform", "KHR_mesh_quantization"]);
    f
}

/// A material whose base colour, metallic-roughness and normal textures (all texture 0) carry the
/// transforms given (`None`: no extension).
fn material(base: Option<Value>, metallic: Option<Value>, normal: Option<Value>) -> Value {
    let info = |t: Option<Value>| match t {
        Some(t) => json!({ "index": 0, "extensions": { "KHR_texture_transform": t } }),
        None => json!({ "index": 0 }),
    };
    json!({
        "pbrMetallicRoughness": { "baseColorTexture": info(base), "metallicRoughnessTexture": info(metallic) },
        "normalTexture": info(normal),
    })
}

/// The cell of the test texture that `uv` samples.
fn cell_at(uv: glam::Vec2) -> (u32, u32) {
    let cells = (TEXELS / CELL) as f32;
    ((uv.x * cells).floor() as u32, (uv.y * cells).floor() as u32)
}

/// UVs at the centres of the quad's four quarters, and the cells the spec example's transform
/// shows there. Worked from the extension's own description rather than its equations: the
/// quad's UV origin shows the image's bottom-left corner, moving along the quad's u moves up the
/// image (half its height over the whole quad), moving along v moves right (half its width).
const QUARTERS: [[f32; 2]; 4] = [[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]];
const EXPECTED_CELLS: [(u32, u32); 4] = [(0, 3), (0, 2), (1, 3), (1, 2)];

#[test]
fn texture_transforms_move_the_lookup_to_the_texels_the_spec_describes() {
    let example = || Some(spec_example());
    // The float quad, and the gltfpack way: plain unsigned short UVs (the quarters times 4), their
    // dequantisation (a quarter) merged into the transform's scale.
    let quantised_example =
        json!({ "offset": [0.0, 1.0], "rotation": std::f64::consts::FRAC_PI_2, "scale": [0.125, 0.125] });
    let fours = QUARTERS.map(|[u, v]| [u * 4.0, v * 4.0]);
    for (name, f) in [
        ("float", textured_quad(&QUARTERS, false, &[material(example(), example(), example())])),
        (
            "quantised",
            textured_quad(
                &fours,
                true,
                &[material(
                    Some(quantised_example.clone()),
                    Some(quantised_example.clone()),
                    Some(quantised_example),
                )],
            ),
        ),
    ] {
        let rig = import_slice(&f.gltf(), None, "quad.gltf").unwrap();
        assert!(rig.notes.iter().all(|n| !n.contains("KHR_texture_transform")), "{name}: {:?}", rig.notes);
        let uvs = rig.meshes[0].uvs.clone().unwrap();
        let cells: Vec<(u32, u32)> = uvs.iter().map(|&uv| cell_at(uv)).collect();
        assert_eq!(cells, EXPECTED_CELLS, "{name}: {uvs:?}");
        // The bake samples the same texels: its UV stream into its base colour array's level 0.
        let bytes = baked(&rig);
        let asset = vat_core::container::Asset::parse(&bytes).unwrap();
        let (format, uv_bytes) = asset.stream(vat_core::container::StreamKind::Uv0).unwrap();
        let baked_uvs: Vec<glam::Vec2> = match format {
            vat_core::container::ElementFormat::F32x2 => uv_bytes
                .chunks_exact(8)
                .map(|c| {
                    glam::Vec2::new(
                        f32::from_le_bytes(c[..4].try_into().unwrap()),
                        f32::from_le_bytes(c[4..].try_into().unwrap()),
                    )
                })
                .collect(),
            _ => uv_bytes
                .chunks_exact(4)
                .map(|c| {
                    let unorm = |b: &[u8]| f32::from(u16::from_le_bytes([b[0], b[1]])) / 65535.0;
                    glam::Vec2::new(unorm(&c[..2]), unorm(&c[2..]))
                })
                .collect(),
        };
        let textures = asset.manifest().material_textures.as_ref().unwrap();
        let color = textures.color.as_ref().unwrap();
        let level0 = &asset.blob(color.texels)[..(color.width * color.height * 4) as usize];
        for (v, uv) in baked_uvs.iter().enumerate() {
            let x = ((uv.x * color.width as f32).floor() as u32).min(color.width - 1);
            let y = ((uv.y * color.height as f32).floor() as u32).min(color.height - 1);
            let at = ((y * color.width + x) * 4) as usize;
            let (cx, cy) = EXPECTED_CELLS[v];
            assert_eq!(level0[at..at + 4], cell_color(cx, cy), "{name}: baked vertex {v} at {uv}");
        }
    }
}

#[test]
fn each_material_transforms_its_own_vertices_and_a_texcoord_override_is_honoured() {
    // Two primitives over the same vertices: material 0 untransformed, material 1 offset by half
    // the image to the right; its base colour texture says TEXCOORD_1 but the transform overrides
    // it back to TEXCOORD_0.
    let mut shifted = material(Some(json!({ "offset": [0.5, 0.0], "texCoord": 0 })), None, None);
    shifted["pbrMetallicRoughness"]["baseColorTexture"]["texCoord"] = json!(1);
    shifted["pbrMetallicRoughness"].as_object_mut().unwrap().remove("metallicRoughnessTexture");
    shifted.as_object_mut().unwrap().remove("normalTexture");
    let f = textured_quad(&QUARTERS, false, &[material(None, None, None), shifted]);
    let rig = import_slice(&f.gltf(), None, "quad.gltf").unwrap();
    assert!(rig.notes.iter().all(|n| !n.contains("TEXCOORD_1")), "{:?}", rig.notes);
    let mesh = &rig.meshes[0];
    let uvs = mesh.uvs.as_ref().unwrap();
    assert_eq!(mesh.material_ids.len(), 8, "one vertex per material");
    for ((uv, &id), p) in uvs.iter().zip(&mesh.material_ids).zip(&mesh.positions) {
        // The source vertex, from its position (the quad's corners in order 0..4).
        let source = (p.x + 2.0 * p.y) as usize;
        let original = glam::Vec2::from(QUARTERS[source]);
        let expected = if id == 1 { original + glam::Vec2::new(0.5, 0.0) } else { original };
        assert_eq!(*uv, expected, "material {id}, vertex {source}");
    }
    // The override pointing away from the baked set leaves the texture out, and says so.
    let mut away = material(Some(json!({ "texCoord": 1 })), None, None);
    away.as_object_mut().unwrap().remove("normalTexture");
    let rig = import_slice(&textured_quad(&QUARTERS, false, &[away]).gltf(), None, "quad.gltf").unwrap();
    assert!(
        rig.notes.iter().any(|n| n.contains("base colour texture left out: it uses TEXCOORD_1")),
        "{:?}",
        rig.notes
    );
    assert!(rig.materials.as_ref().unwrap().materials[0].base_color_texture.is_none());
}

#[test]
fn different_transforms_in_one_material_bake_the_base_colours_and_say_so() {
    let f = textured_quad(
        &QUARTERS,
        false,
        &[material(Some(spec_example()), Some(spec_example()), Some(json!({ "scale": [2.0, 2.0] })))],
    );
    let rig = import_slice(&f.gltf(), None, "quad.gltf").unwrap();
    let cells: Vec<(u32, u32)> = rig.meshes[0].uvs.as_ref().unwrap().iter().map(|&uv| cell_at(uv)).collect();
    assert_eq!(cells, EXPECTED_CELLS);
    let notes: Vec<&String> = rig.notes.iter().filter(|n| n.contains("KHR_texture_transform")).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    for part in [
        "different KHR_texture_transforms",
        "normal: offset [0, 0], rotation 0, scale [2, 2]",
        "the base colour texture's is baked into the UVs",
        "the normal texture is sampled with it",
    ] {
        assert!(notes[0].contains(part), "{:?} lacks {part:?}", notes[0]);
    }
    // A malformed transform is left out, said, and the texture sampled untransformed.
    let f = textured_quad(&QUARTERS, false, &[material(Some(json!({ "scale": "big" })), None, None)]);
    let rig = import_slice(&f.gltf(), None, "quad.gltf").unwrap();
    assert!(
        rig.notes.iter().any(|n| n.contains("base colour texture's KHR_texture_transform left out")
            && n.contains("`scale` is \"big\"")),
        "{:?}",
        rig.notes
    );
    assert_eq!(rig.meshes[0].uvs.as_ref().unwrap(), &QUARTERS.map(glam::Vec2::from).to_vec());
}

// ---- KHR_texture_basisu ----

#[test]
fn ktx2_textures_are_left_out_with_a_note_naming_them() {
    // A texture whose only image is KTX2 (through the extension, no `source`), and an image whose
    // bytes are KTX2 behind a plain `source`.
    let mut f = textured_quad(&QUARTERS, false, &[material(None, None, None)]);
    let mut ktx2 = b"\xABKTX 20\xBB\r\n\x1A\n".to_vec();
    ktx2.resize(80, 0);
    let view = f.view(&ktx2, None);
    f.json["images"].as_array_mut().unwrap().push(json!({ "bufferView": view, "mimeType": "image/ktx2" }));
    f.json["textures"] = json!([
        { "extensions": { "KHR_texture_basisu": { "source": 1 } } },
        { "source": 1 },
        // A PNG source beside the KTX2 one: the PNG is used.
        { "source": 0, "extensions": { "KHR_texture_basisu": { "source": 1 } } },
    ]);
    f.json["materials"][0]["pbrMetallicRoughness"]["metallicRoughnessTexture"]["index"] = json!(1);
    f.json["materials"][0]["normalTexture"]["index"] = json!(2);
    f.json["extensionsUsed"] = json!(["KHR_texture_basisu"]);
    let rig = import_slice(&f.gltf(), None, "quad.gltf").unwrap();
    let notes = rig.notes.join("\n");
    for part in [
        "base colour texture left out: texture 0, image 1 is KTX2 / Basis Universal (KHR_texture_basisu), which vat does not decode",
        "metallic-roughness texture left out: image 1: a KTX2 / Basis Universal image, which vat does not decode",
        "convert them to PNG (`gltf-transform ktxdecompress in.glb out.glb`",
    ] {
        assert!(notes.contains(part), "no {part:?} in:\n{notes}");
    }
    let material = &rig.materials.as_ref().unwrap().materials[0];
    assert!(material.base_color_texture.is_none() && material.metallic_roughness_texture.is_none());
    assert!(material.normal_texture.is_some());
}
