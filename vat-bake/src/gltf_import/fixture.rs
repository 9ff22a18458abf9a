//! A small glTF writer for tests: JSON by hand (`serde_json::json!`) plus one little-endian buffer,
//! written as a `.gltf` with a data URI, a `.gltf` with an external `.bin`, or a `.glb`.

use base64::Engine as _;
use serde_json::{Value, json};

/// glTF component types.
pub(super) const UNSIGNED_BYTE: u32 = 5121;
pub(super) const SHORT: u32 = 5122;
pub(super) const UNSIGNED_SHORT: u32 = 5123;
pub(super) const FLOAT: u32 = 5126;

/// Components of an accessor type.
fn components(ty: &str) -> usize {
    match ty {
        "SCALAR" => 1,
        "VEC2" => 2,
        "VEC3" => 3,
        "VEC4" => 4,
        "MAT4" => 16,
        other => panic!("unknown accessor type {other}"),
    }
}

/// A glTF document under construction: one scene (scene 0), one buffer.
pub(super) struct Fixture {
    /// The JSON root; tests may edit it directly.
    pub(super) json: Value,
    /// The buffer's bytes.
    pub(super) bin: Vec<u8>,
}

impl Fixture {
    pub(super) fn new() -> Self {
        Self {
            json: json!({
                "asset": { "version": "2.0", "generator": "vat-bake tests" },
                "scene": 0,
                "scenes": [{ "nodes": [] }],
                "nodes": [], "meshes": [], "accessors": [], "bufferViews": [],
            }),
            bin: Vec::new(),
        }
    }

    /// Appends `value` to the top-level array `key` (created if absent); returns its index.
    pub(super) fn push(&mut self, key: &str, value: Value) -> usize {
        let root = self.json.as_object_mut().unwrap();
        let array = root.entry(key).or_insert_with(|| json!([])).as_array_mut().unwrap();
        array.push(value);
        array.len() - 1
    }

    /// Adds a node; `root` puts it in scene 0's root list.
    pub(super) fn node(&mut self, node: Value, root: bool) -> usize {
        let index = self.push("nodes", node);
        if root {
            self.json["scenes"][0]["nodes"].as_array_mut().unwrap().push(json!(index));
        }
        index
    }

    /// Makes `child` a child of `parent`.
    pub(super) fn child(&mut self, parent: usize, child: usize) {
        let node = self.json["nodes"][parent].as_object_mut().unwrap();
        node.entry("children").or_insert_with(|| json!([])).as_array_mut().unwrap().push(json!(child));
    }

    /// Appends raw bytes (4-byte aligned) as a buffer view; returns its index.
    pub(super) fn view(&mut self, bytes: &[u8], stride: Option<usize>) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        let mut view = json!({ "buffer": 0, "byteOffset": offset, "byteLength": bytes.len() });
        if let Some(stride) = stride {
            view["byteStride"] = json!(stride);
        }
        self.push("bufferViews", view)
    }

    /// An accessor over `view`.
    pub(super) fn accessor(
        &mut self,
        view: usize,
        offset: usize,
        component_type: u32,
        count: usize,
        ty: &str,
    ) -> usize {
        self.push(
            "accessors",
            json!({ "bufferView": view, "byteOffset": offset, "componentType": component_type, "count": count, "type": ty }),
        )
    }

    /// Floats as a tightly packed accessor of type `ty`.
    pub(super) fn f32s(&mut self, data: &[f32], ty: &str) -> usize {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let view = self.view(&bytes, None);
        self.accessor(view, 0, FLOAT, data.len() / components(ty), ty)
    }

    /// Positions with the `min`/`max` the spec requires.
    pub(super) fn positions(&mut self, data: &[[f32; 3]]) -> usize {
        let flat: Vec<f32> = data.iter().flatten().copied().collect();
        let a = self.f32s(&flat, "VEC3");
        let min: Vec<f32> = (0..3).map(|k| data.iter().map(|p| p[k]).fold(f32::INFINITY, f32::min)).collect();
        let max: Vec<f32> =
            (0..3).map(|k| data.iter().map(|p| p[k]).fold(f32::NEG_INFINITY, f32::max)).collect();
        self.json["accessors"][a]["min"] = json!(min);
        self.json["accessors"][a]["max"] = json!(max);
        a
    }

    /// Unsigned shorts as a tightly packed accessor.
    pub(super) fn u16s(&mut self, data: &[u16], ty: &str) -> usize {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let view = self.view(&bytes, None);
        self.accessor(view, 0, UNSIGNED_SHORT, data.len() / components(ty), ty)
    }

    /// Unsigned bytes as a tightly packed accessor.
    pub(super) fn u8s(&mut self, data: &[u8], ty: &str) -> usize {
        let view = self.view(data, None);
        self.accessor(view, 0, UNSIGNED_BYTE, data.len() / components(ty), ty)
    }

    /// A sampler + channel animation; returns its index. `channels` are `(node, path, input, output,
    /// interpolation)`.
    pub(super) fn animation(&mut self, name: &str, channels: &[(usize, &str, usize, usize, &str)]) -> usize {
        let samplers: Vec<Value> = channels
            .iter()
            .map(|&(_, _, input, output, interpolation)| {
                json!({ "input": input, "output": output, "interpolation": interpolation })
            })
            .collect();
        let chans: Vec<Value> = channels
            .iter()
            .enumerate()
            .map(|(i, &(node, path, ..))| json!({ "sampler": i, "target": { "node": node, "path": path } }))
            .collect();
        self.push("animations", json!({ "name": name, "samplers": samplers, "channels": chans }))
    }

    fn json_with_uri(&self, uri: Option<String>) -> Vec<u8> {
        let mut json = self.json.clone();
        if !self.bin.is_empty() {
            let mut buffer = json!({ "byteLength": self.bin.len() });
            if let Some(uri) = uri {
                buffer["uri"] = json!(uri);
            }
            json["buffers"] = json!([buffer]);
        }
        serde_json::to_vec_pretty(&json).unwrap()
    }

    /// `.gltf` bytes with the buffer embedded as a base64 data URI.
    pub(super) fn gltf(&self) -> Vec<u8> {
        let data = base64::engine::general_purpose::STANDARD.encode(&self.bin);
        self.json_with_uri(Some(format!("data:application/octet-stream;base64,{data}")))
    }

    /// `.gltf` bytes whose buffer is the external file `uri` (write [`Fixture::bin`] there).
    pub(super) fn gltf_external(&self, uri: &str) -> Vec<u8> {
        self.json_with_uri(Some(uri.to_owned()))
    }

    /// `.glb` bytes: header, JSON chunk (space-padded), BIN chunk (zero-padded).
    pub(super) fn glb(&self) -> Vec<u8> {
        crate::testdata::glb(&self.json_with_uri(None), &self.bin)
    }
}

/// A fresh, empty temporary directory for one test.
pub(super) fn temp_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-bake-gltf-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
