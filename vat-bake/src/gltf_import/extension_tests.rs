//! The glTF extensions web exports use, on fixtures built here: `KHR_mesh_quantization` (each
//! quantised file against the float file of the values the spec's equations give),
//! `EXT_meshopt_compression` / `KHR_meshopt_compression` (each compressed file against the
//! uncompressed one), `KHR_texture_transform` (transformed lookups against the texels expected),
//! and what is refused or left out (`KHR_texture_basisu`, `KHR_draco_mesh_compression`).

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
