//! Test inputs for this workspace's tests (not part of the API): where the shared real-file corpus
//! lives, and small glTF files the project writes itself.
//!
//! Third-party files (the Khronos glTF samples and others' bakes) are never copied into the
//! repository: tests read them from `../shared/testdata/` beside the checkout (every developer
//! machine and CI have it), or from `$VAT_TESTDATA`. On a clone without it, [`shared_file`] prints
//! that the real-file corpus is missing and returns `None` so the test can skip; with `CI=true` a
//! missing corpus panics, so CI can never pass without the real files.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use glam::{Mat4, Quat, Vec3};
use serde_json::{Value, json};

/// The shared corpus folder: `$VAT_TESTDATA` when set, else `../shared/testdata` beside the
/// workspace root. `None` (after printing why) when it does not exist, unless `CI=true`, where
/// that panics.
pub fn shared_testdata() -> Option<PathBuf> {
    let dir = match std::env::var_os("VAT_TESTDATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    let message = format!(
        "the real-file corpus is missing: {} does not exist (set VAT_TESTDATA to its folder); tests that \
         need it are skipped",
        dir.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}, and CI=true requires it");
    }
    eprintln!("{message}");
    None
}

/// A file of the shared corpus (`relative` to it, e.g. `gltf/SimpleSkin/SimpleSkin.gltf`); `None`
/// when the corpus is missing (see [`shared_testdata`]). A corpus that exists but lacks the file
/// panics: that is a broken corpus, not a missing one.
pub fn shared_file(relative: &str) -> Option<PathBuf> {
    let path = shared_testdata()?.join(relative);
    assert!(path.is_file(), "the real-file corpus has no {} ({})", relative, path.display());
    Some(path)
}

/// A small skinned glTF the project writes itself (JSON with base64 data-URI buffers), laid out
/// like the smallest real exports: one mesh node carrying skin 0, two joints (`Root` at y = 1 and
/// `Tip` 0.5 above it), 10 vertices in five rows weighted from Root to Tip, 24 indices (u16), joints
/// (u16) and weights (f32) interleaved in one strided view, inverse bind matrices, and one
/// 12-key LINEAR rotation clip on Tip that returns to its first key. Accessors: 0 indices,
/// 1 positions, 2 joints, 3 weights, 4 inverse binds, 5 key times, 6 rotations; views 0-4 over
/// buffers 0-3. The bad-input corpus and the fuzz seeds are made from it.
pub fn small_skinned_gltf() -> Value {
    let positions: Vec<[f32; 3]> =
        (0..10).map(|i| [(i % 2) as f32, 1.0 + (i / 2) as f32 * 0.25, 0.0]).collect();
    let indices: Vec<u16> =
        (0..4u16).flat_map(|r| [2 * r, 2 * r + 1, 2 * r + 2, 2 * r + 2, 2 * r + 1, 2 * r + 3]).collect();
    let weights: Vec<[f32; 4]> = (0..10)
        .map(|i| {
            let t = (i / 2) as f32 / 4.0;
            [1.0 - t, t, 0.0, 0.0]
        })
        .collect();
    let ibm = [
        Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0)),
        Mat4::from_translation(Vec3::new(0.0, -1.5, 0.0)),
    ];
    let times: Vec<f32> = (0..12).map(|k| k as f32 * 0.25).collect();
    let rotations: Vec<[f32; 4]> = (0..12)
        .map(|k| {
            let angle = if k == 11 { 0.0 } else { 0.6 * (k as f32 * std::f32::consts::TAU / 11.0).sin() };
            Quat::from_rotation_z(angle).to_array()
        })
        .collect();

    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut b0: Vec<u8> = indices.iter().flat_map(|i| i.to_le_bytes()).collect();
    let positions_offset = b0.len();
    b0.extend(f32s(positions.as_flattened()));
    let mut b1 = Vec::new();
    for _ in 0..10 {
        b1.extend([0u16, 1, 0, 0].iter().flat_map(|j| j.to_le_bytes()));
        b1.extend([0u8; 8]);
    }
    b1.extend(f32s(weights.as_flattened()));
    let b2: Vec<u8> = f32s(&ibm.iter().flat_map(Mat4::to_cols_array).collect::<Vec<f32>>());
    let mut b3 = f32s(&times);
    let rotations_offset = b3.len();
    b3.extend(f32s(rotations.as_flattened()));
    let uri = |b: &[u8]| {
        format!("data:application/gltf-buffer;base64,{}", base64::engine::general_purpose::STANDARD.encode(b))
    };
    let min_max = |v: &[[f32; 3]]| {
        let min: Vec<f32> = (0..3).map(|a| v.iter().map(|p| p[a]).fold(f32::INFINITY, f32::min)).collect();
        let max: Vec<f32> =
            (0..3).map(|a| v.iter().map(|p| p[a]).fold(f32::NEG_INFINITY, f32::max)).collect();
        (min, max)
    };
    let (pmin, pmax) = min_max(&positions);
    json!({
        "asset": { "version": "2.0", "generator": "vat tests (small_skinned_gltf)" },
        "scene": 0,
        "scenes": [{ "nodes": [0] }],
        "nodes": [
            { "name": "Skinned", "skin": 0, "mesh": 0, "children": [1] },
            { "name": "Root", "children": [2], "translation": [0.0, 1.0, 0.0] },
            { "name": "Tip", "translation": [0.0, 0.5, 0.0], "rotation": [0.0, 0.0, 0.0, 1.0] }
        ],
        "meshes": [{ "name": "Strip", "primitives": [{
            "attributes": { "POSITION": 1, "JOINTS_0": 2, "WEIGHTS_0": 3 }, "indices": 0
        }]}],
        "skins": [{ "inverseBindMatrices": 4, "joints": [1, 2] }],
        "animations": [{
            "name": "sway",
            "channels": [{ "sampler": 0, "target": { "node": 2, "path": "rotation" } }],
            "samplers": [{ "input": 5, "interpolation": "LINEAR", "output": 6 }]
        }],
        "buffers": [
            { "uri": uri(&b0), "byteLength": b0.len() },
            { "uri": uri(&b1), "byteLength": b1.len() },
            { "uri": uri(&b2), "byteLength": b2.len() },
            { "uri": uri(&b3), "byteLength": b3.len() }
        ],
        "bufferViews": [
            { "buffer": 0, "byteOffset": 0, "byteLength": positions_offset, "target": 34963 },
            { "buffer": 0, "byteOffset": positions_offset, "byteLength": b0.len() - positions_offset, "target": 34962 },
            { "buffer": 1, "byteOffset": 0, "byteLength": b1.len(), "byteStride": 16 },
            { "buffer": 2, "byteOffset": 0, "byteLength": b2.len() },
            { "buffer": 3, "byteOffset": 0, "byteLength": b3.len() }
        ],
        "accessors": [
            { "bufferView": 0, "componentType": 5123, "count": 24, "type": "SCALAR", "min": [0], "max": [9] },
            { "bufferView": 1, "componentType": 5126, "count": 10, "type": "VEC3", "min": pmin, "max": pmax },
            { "bufferView": 2, "byteOffset": 0, "componentType": 5123, "count": 10, "type": "VEC4" },
            { "bufferView": 2, "byteOffset": 160, "componentType": 5126, "count": 10, "type": "VEC4" },
            { "bufferView": 3, "componentType": 5126, "count": 2, "type": "MAT4" },
            { "bufferView": 4, "componentType": 5126, "count": 12, "type": "SCALAR", "min": [0.0], "max": [2.75] },
            { "bufferView": 4, "byteOffset": rotations_offset, "componentType": 5126, "count": 12, "type": "VEC4" }
        ]
    })
}

/// [`small_skinned_gltf`] as a `.glb`: its buffers concatenated (each 4-byte aligned) into the
/// binary chunk, buffer 0 without a URI.
pub fn small_skinned_glb() -> Vec<u8> {
    let mut json = small_skinned_gltf();
    let mut bin = Vec::new();
    let mut starts = Vec::new();
    for buffer in json["buffers"].as_array().into_iter().flatten() {
        let uri = buffer["uri"].as_str().unwrap_or_default();
        let data = uri.split_once("base64,").map(|(_, d)| d).unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap_or_default();
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        starts.push(bin.len());
        bin.extend(bytes);
    }
    for view in json["bufferViews"].as_array_mut().into_iter().flatten() {
        let buffer = view["buffer"].as_u64().unwrap_or(0) as usize;
        let offset =
            view["byteOffset"].as_u64().unwrap_or(0) as usize + starts.get(buffer).copied().unwrap_or(0);
        view["buffer"] = json!(0);
        view["byteOffset"] = json!(offset);
    }
    json["buffers"] = json!([{ "byteLength": bin.len() }]);
    glb(&serde_json::to_vec(&json).unwrap_or_default(), &bin)
}

/// A `.glb` container of `json` and `bin`: the 12-byte header, the JSON chunk padded with spaces
/// and the BIN chunk padded with zeros to 4 bytes (left out when `bin` is empty). No validation:
/// tests use it to build broken files too.
pub fn glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let pad = |n: usize| n.div_ceil(4) * 4;
    let (jl, bl) = (pad(json.len()), pad(bin.len()));
    let total = 12 + 8 + jl + if bin.is_empty() { 0 } else { 8 + bl };
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(jl as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(json);
    out.resize(20 + jl, b' ');
    if !bin.is_empty() {
        out.extend_from_slice(&(bl as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(bin);
        out.resize(total, 0);
    }
    out
}

/// The shape of [`large_rig`]: the benchmark asset of a large real export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargeRigShape {
    /// Primitives (meshes), each a grid of `grid x grid` vertices.
    pub primitives: usize,
    /// Vertices per grid side.
    pub grid: usize,
    /// Joints of the one skin.
    pub joints: usize,
    /// Frames of the one looping clip at 30 fps.
    pub frames: usize,
}

impl LargeRigShape {
    /// 60 primitives of 24 x 24 vertices (34,560 vertices), 18 joints, one clip of 1,050 frames
    /// (35 s at 30 fps): the issue's large asset.
    pub const ISSUE: Self = Self { primitives: 60, grid: 24, joints: 18, frames: 1050 };
}

/// A generated skinned rig of `shape`: joints in a binary tree (joint `i`'s parent is `(i - 1) / 2`,
/// 0.12 m up and 0.08 m aside), each primitive a grid of quads around one joint, every vertex
/// weighted to up to 4 joints (its own, the parent, and two neighbours) with smooth weights,
/// and one clip "sway" whose keys (one per frame, LINEAR) rock every joint about Z and X and
/// return to the first key, so it loops. Deterministic.
pub fn large_rig(shape: LargeRigShape) -> vat_bake::rig::Rig {
    use vat_bake::rig::{
        AnimationClip, Channel, ChannelTarget, KeyInterpolation, Mesh, MeshBinding, MeshRole, Node, Rig,
        Skin, Transform,
    };
    let joints = shape.joints.max(1);
    let mut nodes = Vec::with_capacity(joints);
    for i in 0..joints {
        let (parent, translation) = if i == 0 {
            (None, Vec3::new(0.0, 0.9, 0.0))
        } else {
            let side = if i % 2 == 0 { 0.08 } else { -0.08 };
            (Some((i - 1) / 2), Vec3::new(side, 0.12, 0.0))
        };
        nodes.push(Node {
            name: format!("joint{i}"),
            parent,
            rest: Transform { translation, ..Transform::IDENTITY },
        });
    }
    let mut rig = Rig { name: "large".into(), nodes, ..Rig::default() };
    let rest = rig.rest_globals();
    let inverse_bind: Vec<Mat4> = rest.iter().map(|m| m.inverse()).collect();
    rig.skins.push(Skin { joints: (0..joints).collect(), inverse_bind });
    let g = shape.grid.max(2);
    for p in 0..shape.primitives {
        let home = p % joints;
        let center =
            rest[home].transform_point3(Vec3::ZERO) + Vec3::new(0.0, 0.0, 0.02 * (p / joints) as f32);
        let neighbours = [home, home.saturating_sub(1) / 2, (home + 1) % joints, (home + 5) % joints];
        let mut mesh = Mesh {
            name: format!("part{p}"),
            binding: MeshBinding::Skinned { skin: 0 },
            role: MeshRole::Body,
            positions: Vec::with_capacity(g * g),
            normals: Vec::with_capacity(g * g),
            tangents: None,
            uvs: None,
            colors: None,
            material_ids: vec![(p % 4) as u8; g * g],
            indices: Vec::with_capacity((g - 1) * (g - 1) * 6),
            influence_count: 4,
            joints: Vec::with_capacity(g * g),
            weights: Vec::with_capacity(g * g),
            full_influences: None,
            morph_targets: Vec::new(),
            default_morph_weights: Vec::new(),
        };
        for r in 0..g {
            for c in 0..g {
                let (u, v) = (c as f32 / (g - 1) as f32, r as f32 / (g - 1) as f32);
                // A gently curved patch 0.1 m across.
                let z = 0.01 * ((u - 0.5) * (u - 0.5) + (v - 0.5) * (v - 0.5));
                mesh.positions.push(center + Vec3::new((u - 0.5) * 0.1, (v - 0.5) * 0.1, z));
                mesh.normals.push(Vec3::new(-(u - 0.5) * 0.2, -(v - 0.5) * 0.2, 1.0).normalize());
                let w = [1.0 + u + v, 1.0 - 0.5 * v, 0.5 + 0.5 * u, 0.25 * (1.0 - u)];
                let sum: f32 = w.iter().sum();
                let mut jw = [0u16; vat_bake::rig::MAX_INFLUENCES];
                let mut ww = [0f32; vat_bake::rig::MAX_INFLUENCES];
                for k in 0..4 {
                    jw[k] = neighbours[k] as u16;
                    ww[k] = w[k] / sum;
                }
                mesh.joints.push(jw);
                mesh.weights.push(ww);
            }
        }
        for r in 0..g - 1 {
            for c in 0..g - 1 {
                let i = (r * g + c) as u32;
                let g32 = g as u32;
                mesh.indices.extend_from_slice(&[i, i + 1, i + g32, i + g32, i + 1, i + g32 + 1]);
            }
        }
        rig.meshes.push(mesh);
    }
    let frames = shape.frames.max(1);
    let times: Vec<f32> = (0..=frames).map(|k| (f64::from(k as u32) / 30.0) as f32).collect();
    let mut channels = Vec::with_capacity(joints);
    for j in 0..joints {
        let mut values = Vec::with_capacity(times.len() * 4);
        for k in 0..=frames {
            let phase = std::f32::consts::TAU * (k % frames) as f32 / frames as f32;
            let q = Quat::from_rotation_z(0.3 * (phase * (1 + j % 3) as f32).sin())
                * Quat::from_rotation_x(0.2 * (phase * 2.0 + j as f32).sin() - 0.2 * (j as f32).sin());
            values.extend_from_slice(&q.to_array());
        }
        channels.push(Channel {
            target: ChannelTarget::Rotation(j),
            interpolation: KeyInterpolation::Linear,
            times: times.clone(),
            values,
        });
    }
    let end = times.last().copied().unwrap_or(0.0);
    rig.clips.push(AnimationClip {
        name: "sway".into(),
        channels,
        start: 0.0,
        end,
        looping: None,
        known_stride: None,
        locomotion: false,
    });
    rig
}

// ---- Hostile shapes: valid files that stress one cost class each (near-linear import, budgets).

/// A flat, lit triangle fan of `triangles` triangles around one hub vertex (mode TRIANGLE_FAN, no
/// index buffer, normals given so the vertices stay welded), as a .glb.
pub fn fan(triangles: usize) -> Vec<u8> {
    let n = triangles + 2;
    let mut bin = Vec::with_capacity(n * 24);
    let mut min = [f32::MAX; 3];
    let mut max = [f32::MIN; 3];
    for i in 0..n {
        let p = if i == 0 {
            [0.0f32, 0.0, 0.0]
        } else {
            let a = (i - 1) as f32 / (n - 2) as f32 * std::f32::consts::PI * 1.5;
            [a.cos(), a.sin(), 0.0]
        };
        for k in 0..3 {
            min[k] = min[k].min(p[k]);
            max[k] = max[k].max(p[k]);
        }
        bin.extend(p.iter().flat_map(|c| c.to_le_bytes()));
    }
    for _ in 0..n {
        bin.extend([0.0f32, 0.0, 1.0].iter().flat_map(|c| c.to_le_bytes()));
    }
    let json = json!({
        "asset": {"version": "2.0"},
        "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "fan"}],
        "meshes": [{"name": "fan", "primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1}, "mode": 6}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": n * 12},
            {"buffer": 0, "byteOffset": n * 12, "byteLength": n * 12}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": n, "type": "VEC3", "min": min, "max": max},
            {"bufferView": 1, "componentType": 5126, "count": n, "type": "VEC3"}
        ]
    });
    glb(json.to_string().as_bytes(), &bin)
}

/// A mesh whose index buffer is a sparse accessor: `triangles` triangles of zeros (no area) except
/// the first, `0 1 2`. A few hundred bytes of file for any count.
pub fn degenerate(triangles: usize) -> Vec<u8> {
    sparse_zero_triangles(triangles, [1, 2])
}

/// [`degenerate`] with its one triangle with area zeroed too: only triangles without area.
pub fn degenerate_only(triangles: usize) -> Vec<u8> {
    sparse_zero_triangles(triangles, [0, 0])
}

/// Three vertices and `triangles` triangles of index 0, indices 1 and 2 set by sparse `values`.
fn sparse_zero_triangles(triangles: usize, values: [u32; 2]) -> Vec<u8> {
    let mut bin = Vec::new();
    for p in [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
        bin.extend(p.iter().flat_map(|c| c.to_le_bytes()));
    }
    let sparse_at = bin.len();
    bin.extend([1u32, 2].iter().flat_map(|i| i.to_le_bytes())); // sparse indices
    bin.extend(values.iter().flat_map(|i| i.to_le_bytes())); // sparse values
    let json = json!({
        "asset": {"version": "2.0"},
        "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"name": "flat", "primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 36},
            {"buffer": 0, "byteOffset": sparse_at, "byteLength": 16}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0]},
            {"componentType": 5125, "count": triangles * 3, "type": "SCALAR",
             "sparse": {"count": 2,
                        "indices": {"bufferView": 1, "byteOffset": 0, "componentType": 5125},
                        "values": {"bufferView": 1, "byteOffset": 8}}}
        ]
    });
    glb(json.to_string().as_bytes(), &bin)
}

/// `nodes` empty nodes, each a socket and naming skin 0, then one skinned triangle under them.
pub fn many_nodes(nodes: usize) -> Vec<u8> {
    let mut bin = Vec::new();
    for p in [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
        bin.extend(p.iter().flat_map(|c| c.to_le_bytes()));
    }
    bin.extend([0u8; 12]); // JOINTS_0: joint 0 for every vertex (u8 x 4)
    for _ in 0..3 {
        bin.extend([1.0f32, 0.0, 0.0, 0.0].iter().flat_map(|c| c.to_le_bytes()));
    }
    let mut list: Vec<serde_json::Value> = (0..nodes)
        .map(|i| json!({"name": format!("n{i}"), "skin": 0, "extras": {"vat_socket": format!("s{i}")}}))
        .collect();
    list.push(json!({"name": "body", "mesh": 0, "skin": 0}));
    list.push(json!({"name": "root", "children": (0..=nodes).collect::<Vec<_>>()}));
    let json = json!({
        "asset": {"version": "2.0"},
        "scene": 0, "scenes": [{"nodes": [nodes + 1]}],
        "nodes": list,
        "skins": [{"joints": [nodes + 1]}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2}}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 36},
            {"buffer": 0, "byteOffset": 36, "byteLength": 12},
            {"buffer": 0, "byteOffset": 48, "byteLength": 48}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0]},
            {"bufferView": 1, "componentType": 5121, "count": 3, "type": "VEC4"},
            {"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC4"}
        ]
    });
    glb(json.to_string().as_bytes(), &bin)
}

/// Three vertices without normals (so the import flat-shades: one vertex per triangle corner),
/// `targets` morph targets, and `triangles` copies of the triangle `0 1 2` as u8 indices: 3 bytes
/// of file per triangle, about 12 bytes per target per corner once unwelded.
pub fn morph_fan_out(triangles: usize, targets: usize) -> Vec<u8> {
    let mut bin = Vec::new();
    for p in [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
        bin.extend(p.iter().flat_map(|c| c.to_le_bytes()));
    }
    let deltas_at = bin.len();
    for _ in 0..3 {
        bin.extend([0.0f32, 0.0, 0.1].iter().flat_map(|c| c.to_le_bytes()));
    }
    let indices_at = bin.len();
    bin.extend((0..triangles).flat_map(|_| [0u8, 1, 2]));
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let target_list: Vec<_> = (0..targets).map(|_| json!({"POSITION": 1})).collect();
    let json = json!({
        "asset": {"version": "2.0"},
        "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 2, "targets": target_list}],
                    "weights": vec![0.0; targets]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 36},
            {"buffer": 0, "byteOffset": deltas_at, "byteLength": 36},
            {"buffer": 0, "byteOffset": indices_at, "byteLength": triangles * 3}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0]},
            {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC3",
             "min": [0.0, 0.0, 0.1], "max": [0.0, 0.0, 0.1]},
            {"bufferView": 2, "componentType": 5121, "count": triangles * 3, "type": "SCALAR"}
        ]
    });
    glb(json.to_string().as_bytes(), &bin)
}

/// Writes `seq` as one OBJ file per frame (`frame_<k>.obj`, unpadded so name order is not
/// number order), positions printed in the shortest form that reads back to the same f32.
pub fn write_obj_frames(seq: &vat_bake::sequence::MeshSequence, dir: &Path, normals: bool) {
    for (k, frame) in seq.positions.iter().enumerate() {
        let mut text = String::from("# vat test frame\no sheet\n");
        for p in frame {
            text.push_str(&format!("v {} {} {}\n", p.x, p.y, p.z));
        }
        let ns = seq.normals.as_ref().map(|n| &n[k]);
        if normals && let Some(ns) = ns {
            for n in ns {
                text.push_str(&format!("vn {} {} {}\n", n.x, n.y, n.z));
            }
        }
        for t in seq.indices.chunks_exact(3) {
            let [a, b, c] = [t[0] + 1, t[1] + 1, t[2] + 1];
            if normals {
                text.push_str(&format!("f {a}//{a} {b}//{b} {c}//{c}\n"));
            } else {
                text.push_str(&format!("f {a} {b} {c}\n"));
            }
        }
        if let Err(e) = std::fs::write(dir.join(format!("frame_{k}.obj")), text) {
            panic!("{}: {e}", dir.display());
        }
    }
}

/// The procedural humanoid exported to `.glb` and dressed like a textured character (a stand-in
/// for CesiumMan): its `_MATERIAL_ID` attributes removed, the body given material 0 ("body": a
/// JPEG base colour texture of coloured bands and a checker, a PNG tangent-space normal map of
/// bumps, a PNG metallic-roughness texture) and the cap material 1 ("cap": red, double-sided),
/// every image embedded in the binary chunk. Deterministic.
pub fn textured_humanoid_glb() -> Vec<u8> {
    let rig = crate::procgen::humanoid();
    let glb_bytes = vat_bake::export::export_glb(&rig).unwrap_or_default();
    let (mut json, mut bin) = split_glb(&glb_bytes);
    let (base, normal, mr) = textured_humanoid_images();
    let encode = |img: &image::RgbaImage, format: image::ImageFormat| {
        let mut out = std::io::Cursor::new(Vec::new());
        let written = if format == image::ImageFormat::Jpeg {
            image::DynamicImage::ImageRgba8(img.clone()).to_rgb8().write_to(&mut out, format)
        } else {
            img.write_to(&mut out, format)
        };
        written.map(|()| out.into_inner()).unwrap_or_default()
    };
    let images = [
        (encode(&base, image::ImageFormat::Jpeg), "image/jpeg", "body_base.jpg"),
        (encode(&normal, image::ImageFormat::Png), "image/png", "body_normal.png"),
        (encode(&mr, image::ImageFormat::Png), "image/png", "body_mr.png"),
    ];
    let mut image_json = Vec::new();
    for (bytes, mime, name) in images {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let view = json["bufferViews"].as_array().map_or(0, Vec::len);
        if let Some(views) = json["bufferViews"].as_array_mut() {
            views.push(json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": bytes.len() }));
        }
        bin.extend_from_slice(&bytes);
        image_json.push(json!({ "bufferView": view, "mimeType": mime, "name": name }));
    }
    json["images"] = json!(image_json);
    json["samplers"] = json!([{ "magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 33071 }]);
    json["textures"] =
        json!([{ "source": 0, "sampler": 0 }, { "source": 1, "sampler": 0 }, { "source": 2, "sampler": 0 }]);
    json["materials"] = json!([
        {
            "name": "body",
            "pbrMetallicRoughness": {
                "baseColorTexture": { "index": 0 },
                "metallicFactor": 0.0,
                "roughnessFactor": 1.0,
                "metallicRoughnessTexture": { "index": 2 }
            },
            "normalTexture": { "index": 1, "scale": 1.0 }
        },
        {
            "name": "cap",
            "pbrMetallicRoughness": { "baseColorFactor": [0.8, 0.1, 0.08, 1.0], "metallicFactor": 0.0, "roughnessFactor": 0.6 },
            "doubleSided": true
        }
    ]);
    let meshes = json["meshes"].as_array().map_or(0, Vec::len);
    for m in 0..meshes {
        let cap = json["meshes"][m]["name"].as_str().is_some_and(|n| n.contains("cap"));
        for p in json["meshes"][m]["primitives"].as_array_mut().into_iter().flatten() {
            if let Some(a) = p["attributes"].as_object_mut() {
                a.remove(vat_bake::export::MATERIAL_ID_ATTRIBUTE);
            }
            p["material"] = json!(if cap { 1 } else { 0 });
        }
    }
    json["buffers"] = json!([{ "byteLength": bin.len() }]);
    glb(&serde_json::to_vec(&json).unwrap_or_default(), &bin)
}

/// The three images of [`textured_humanoid_glb`], 128 x 128: base colour (8 hue bands along v, a
/// 16 x 16 checker of light and dark along u), normal map (a grid of round bumps, +Y up as glTF
/// wants) and metallic-roughness (roughness 0.3..1 along u, metalness 0).
pub fn textured_humanoid_images() -> (image::RgbaImage, image::RgbaImage, image::RgbaImage) {
    const SIZE: u32 = 128;
    let hues: [[f32; 3]; 8] = [
        [0.9, 0.2, 0.2],
        [0.9, 0.6, 0.1],
        [0.8, 0.8, 0.2],
        [0.2, 0.7, 0.3],
        [0.1, 0.6, 0.8],
        [0.2, 0.3, 0.9],
        [0.6, 0.3, 0.8],
        [0.9, 0.4, 0.6],
    ];
    let base = image::RgbaImage::from_fn(SIZE, SIZE, |x, y| {
        let hue = hues[(y * 8 / SIZE) as usize];
        let light = if ((x / 8) + (y / 8)) % 2 == 0 { 1.0 } else { 0.55 };
        let c = |v: f32| (v * light * 255.0).round() as u8;
        image::Rgba([c(hue[0]), c(hue[1]), c(hue[2]), 255])
    });
    let normal = image::RgbaImage::from_fn(SIZE, SIZE, |x, y| {
        // Bumps of radius 6 texels every 16: the normal of a spherical cap.
        let (cx, cy) = ((x % 16) as f32 - 7.5, (y % 16) as f32 - 7.5);
        let r2 = cx * cx + cy * cy;
        let (nx, ny) = if r2 < 36.0 { (cx / 8.0, -cy / 8.0) } else { (0.0, 0.0) };
        let nz = (1.0 - nx * nx - ny * ny).max(0.0).sqrt();
        let e = |v: f32| ((v * 0.5 + 0.5) * 255.0).round() as u8;
        image::Rgba([e(nx), e(ny), e(nz), 255])
    });
    let mr = image::RgbaImage::from_fn(SIZE, SIZE, |x, _| {
        let roughness = 0.3 + 0.7 * x as f32 / (SIZE - 1) as f32;
        image::Rgba([255, (roughness * 255.0).round() as u8, 0, 255])
    });
    (base, normal, mr)
}

/// The JSON and BIN chunks of a `.glb` this crate wrote (empty on a malformed one); [`glb`] puts
/// them back together.
pub fn split_glb(bytes: &[u8]) -> (Value, Vec<u8>) {
    let word = |at: usize| {
        bytes.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let json_len = word(12);
    let json: Value =
        bytes.get(20..20 + json_len).and_then(|j| serde_json::from_slice(j).ok()).unwrap_or_default();
    let bin_at = 20 + json_len;
    let bin_len = word(bin_at);
    let bin = bytes.get(bin_at + 8..bin_at + 8 + bin_len).map(<[u8]>::to_vec).unwrap_or_default();
    (json, bin)
}

/// The textured fixture with a third material ("blue") and two `KHR_materials_variants`: "red"
/// draws the body with the cap's material, "blue" with the blue one.
pub fn textured_humanoid_with_variants_glb() -> Vec<u8> {
    let (mut json, bin) = split_glb(&textured_humanoid_glb());
    {
        let json = &mut json;
        json["extensionsUsed"] = json!(["KHR_materials_variants"]);
        json["extensions"] =
            json!({ "KHR_materials_variants": { "variants": [{ "name": "red" }, { "name": "blue" }] } });
        if let Some(list) = json["materials"].as_array_mut() {
            list.push(json!({
                "name": "blue",
                "pbrMetallicRoughness": { "baseColorFactor": [0.1, 0.2, 0.9, 1.0], "metallicFactor": 0.0 }
            }));
        }
        for mesh in json["meshes"].as_array_mut().into_iter().flatten() {
            for p in mesh["primitives"].as_array_mut().into_iter().flatten() {
                if p["material"] == json!(0) {
                    p["extensions"] = json!({ "KHR_materials_variants": { "mappings": [
                        { "material": 1, "variants": [0] },
                        { "material": 2, "variants": [1] },
                        { "material": 7, "variants": [1] }
                    ] } });
                }
            }
        }
    }
    glb(&serde_json::to_vec(&json).unwrap_or_default(), &bin)
}

/// The base colour texture of [`textured_rigid_glb`]: 4 x 4, a red / green / blue / white
/// quadrant per 2 x 2 block, opaque.
pub fn textured_rigid_image() -> image::RgbaImage {
    const QUADRANTS: [[u8; 4]; 4] =
        [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255], [255, 255, 255, 255]];
    image::RgbaImage::from_fn(4, 4, |x, y| image::Rgba(QUADRANTS[(y / 2 * 2 + x / 2) as usize]))
}

/// A rigid-body glTF (`.glb`, about 2 KB): two tetrahedra on two animated nodes, one clip
/// ("tumble", 1 s: piece "left" rises 1 m, piece "right" turns 90 degrees about y). Piece "left"
/// has `TEXCOORD_0` and material 0 ("painted": a 4 x 4 PNG base colour texture,
/// [`textured_rigid_image`], embedded in the binary chunk); piece "right" has `COLOR_0` (one
/// colour per vertex) and material 1 ("plain": a base colour factor, double-sided).
/// Deterministic.
pub fn textured_rigid_glb() -> Vec<u8> {
    /// Appends `bytes` (4-byte aligned) as a buffer view; returns its index.
    fn push_view(bin: &mut Vec<u8>, views: &mut Vec<Value>, bytes: &[u8]) -> usize {
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        views.push(json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": bytes.len() }));
        bin.extend_from_slice(bytes);
        views.len() - 1
    }
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut floats = |bin: &mut Vec<u8>, accessors: &mut Vec<Value>, data: &[f32], ty: &str, n: usize| {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        let view = push_view(bin, &mut views, &bytes);
        accessors
            .push(json!({ "bufferView": view, "componentType": 5126, "count": data.len() / n, "type": ty }));
        accessors.len() - 1
    };
    let tetra = [[0.0f32, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 0.5]];
    let corners: Vec<f32> = tetra.iter().flatten().copied().collect();
    let normals: Vec<f32> = [[-1.0f32, -1.0, -1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        .iter()
        .flat_map(|n| {
            let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            n.map(|c| c / l)
        })
        .collect();
    let position = floats(&mut bin, &mut accessors, &corners, "VEC3", 3);
    accessors[position]["min"] = json!([0.0, 0.0, 0.0]);
    accessors[position]["max"] = json!([0.5, 0.5, 0.5]);
    let normal = floats(&mut bin, &mut accessors, &normals, "VEC3", 3);
    let uv = floats(&mut bin, &mut accessors, &[0.25, 0.25, 0.75, 0.25, 0.25, 0.75, 0.75, 0.75], "VEC2", 2);
    let colors = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0];
    let color = floats(&mut bin, &mut accessors, &colors, "VEC4", 4);
    let times = floats(&mut bin, &mut accessors, &[0.0, 1.0], "SCALAR", 1);
    accessors[times]["min"] = json!([0.0]);
    accessors[times]["max"] = json!([1.0]);
    let rise = floats(&mut bin, &mut accessors, &[-1.0, 0.0, 0.0, -1.0, 1.0, 0.0], "VEC3", 3);
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let turn = floats(&mut bin, &mut accessors, &[0.0, 0.0, 0.0, 1.0, 0.0, h, 0.0, h], "VEC4", 4);
    let index_bytes: Vec<u8> =
        [0u16, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3].iter().flat_map(|i| i.to_le_bytes()).collect();
    let index_view = push_view(&mut bin, &mut views, &index_bytes);
    accessors.push(json!({ "bufferView": index_view, "componentType": 5123, "count": 12, "type": "SCALAR" }));
    let indices = accessors.len() - 1;
    let mut png = std::io::Cursor::new(Vec::new());
    let encoded = textured_rigid_image().write_to(&mut png, image::ImageFormat::Png);
    let png = encoded.map(|()| png.into_inner()).unwrap_or_default();
    let image_view = push_view(&mut bin, &mut views, &png);
    let json = json!({
        "asset": { "version": "2.0", "generator": "vat-bake testdata" },
        "scene": 0,
        "scenes": [{ "nodes": [0, 1] }],
        "nodes": [
            { "name": "left", "mesh": 0, "translation": [-1.0, 0.0, 0.0] },
            { "name": "right", "mesh": 1, "translation": [1.0, 0.0, 0.0] }
        ],
        "meshes": [
            { "name": "left", "primitives": [{
                "attributes": { "POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv },
                "indices": indices, "material": 0
            }] },
            { "name": "right", "primitives": [{
                "attributes": { "POSITION": position, "NORMAL": normal, "COLOR_0": color },
                "indices": indices, "material": 1
            }] }
        ],
        "materials": [
            { "name": "painted", "pbrMetallicRoughness": {
                "baseColorTexture": { "index": 0 }, "metallicFactor": 0.0, "roughnessFactor": 0.8
            } },
            { "name": "plain", "pbrMetallicRoughness": {
                "baseColorFactor": [0.2, 0.4, 0.9, 1.0], "metallicFactor": 0.5, "roughnessFactor": 0.4
            }, "doubleSided": true }
        ],
        "images": [{ "bufferView": image_view, "mimeType": "image/png", "name": "quadrants.png" }],
        "samplers": [{ "magFilter": 9729, "minFilter": 9987, "wrapS": 33071, "wrapT": 33071 }],
        "textures": [{ "source": 0, "sampler": 0 }],
        "animations": [{
            "name": "tumble",
            "samplers": [
                { "input": times, "output": rise, "interpolation": "LINEAR" },
                { "input": times, "output": turn, "interpolation": "LINEAR" }
            ],
            "channels": [
                { "sampler": 0, "target": { "node": 0, "path": "translation" } },
                { "sampler": 1, "target": { "node": 1, "path": "rotation" } }
            ]
        }],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{ "byteLength": bin.len() }]
    });
    glb(&serde_json::to_vec(&json).unwrap_or_default(), &bin)
}

/// [`textured_rigid_glb`] with its one image read from the external file `uri` (relative to the
/// `.glb`'s folder) instead of the binary chunk: with no such file, or one that is not an image,
/// the import leaves the texture out with a note and the bake goes on.
pub fn textured_rigid_glb_with_image_uri(uri: &str) -> Vec<u8> {
    let (mut json, bin) = split_glb(&textured_rigid_glb());
    json["images"] = json!([{ "uri": uri }]);
    glb(&serde_json::to_vec(&json).unwrap_or_default(), &bin)
}

/// A PNG of `side` x `side` grey pixels, all zero: a few tens of KB that decode to `side`² bytes,
/// then `side`² x 4 bytes of RGBA (an image "bomb" for the budget tests). Empty if encoding fails.
pub fn png_bomb(side: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_compression(png::Compression::Balanced);
    let Ok(mut writer) = encoder.write_header() else { return Vec::new() };
    let Ok(mut stream) = writer.stream_writer() else { return Vec::new() };
    let row = vec![0u8; side as usize];
    for _ in 0..side {
        if std::io::Write::write_all(&mut stream, &row).is_err() {
            return Vec::new();
        }
    }
    if stream.finish().is_err() {
        return Vec::new();
    }
    drop(writer);
    out
}

// ---- Game characters for the LOD chain: the procedural humanoid's skeleton and clips, another body.

/// The parts of a character built on the procedural humanoid's skeleton: one segment per bone
/// (parent joint to joint, the root's child left out) and one for the head (0.22 m up from the
/// head joint), each `(from, to, bone)` in rest metres with the joint it is bound to.
fn humanoid_segments(rig: &vat_bake::rig::Rig) -> Vec<(Vec3, Vec3, u16)> {
    let rest: Vec<Vec3> = rig.rest_globals().iter().map(|g| g.w_axis.truncate()).collect();
    let mut segments = Vec::new();
    for (j, node) in rig.nodes.iter().enumerate() {
        match node.parent {
            Some(p) if rig.nodes[p].parent.is_some() => segments.push((rest[p], rest[j], p as u16)),
            _ => {}
        }
        if node.name == "head" {
            segments.push((rest[j], rest[j] + Vec3::new(0.0, 0.22, 0.0), j as u16));
        }
    }
    segments
}

/// The procedural humanoid with its body replaced by `body` (rigidly bound parts) and no cap.
fn humanoid_with_body(name: &str, body: vat_bake::rig::Mesh) -> vat_bake::rig::Rig {
    let mut rig = crate::procgen::humanoid();
    rig.name = name.into();
    rig.meshes = vec![body];
    rig.sockets.clear();
    rig
}

/// A body mesh of `positions`/`normals`/`uvs`/`indices`, every vertex bound to `bones[v]` alone.
fn rigid_bound_body(
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
    uvs: Vec<glam::Vec2>,
    indices: Vec<u32>,
    bones: &[u16],
) -> vat_bake::rig::Mesh {
    use vat_bake::rig::{MAX_INFLUENCES, Mesh, MeshBinding, MeshRole};
    let n = positions.len();
    Mesh {
        name: "body".into(),
        binding: MeshBinding::Skinned { skin: 0 },
        role: MeshRole::Body,
        positions,
        normals,
        tangents: None,
        uvs: Some(uvs),
        colors: None,
        material_ids: vec![0; n],
        indices,
        influence_count: 1,
        joints: bones
            .iter()
            .map(|&b| std::array::from_fn::<u16, MAX_INFLUENCES, _>(|k| if k == 0 { b } else { 0 }))
            .collect(),
        weights: (0..n).map(|_| std::array::from_fn(|k| if k == 0 { 1.0 } else { 0.0 })).collect(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    }
}

/// A low-poly, hard-edged robot of 3,072 triangles on the procedural humanoid's skeleton and clips:
/// one faceted 8-sided cylinder of 7 segments per part (24 parts: every bone and the head), flat
/// shaded with every triangle its own three vertices (9,216 vertices: face normals, texture
/// coordinates unwrapped around each cylinder and on its caps, so split at every position), each
/// part bound rigidly to its bone. The shape of stylised game characters whose hard edges and UV
/// seams split every vertex. Deterministic.
pub fn lowpoly_robot() -> vat_bake::rig::Rig {
    const SIDES: usize = 8;
    const RINGS: usize = 7;
    let rig = crate::procgen::humanoid();
    let (mut positions, mut normals, mut uvs, mut bones) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (part, &(from, to, bone)) in humanoid_segments(&rig).iter().enumerate() {
        let axis = to - from;
        let (a, b) = (from + 0.03 * axis, to - 0.03 * axis);
        let d = axis.normalize_or(Vec3::Y);
        let e1 = d.any_orthonormal_vector();
        let e2 = d.cross(e1);
        let radius = (0.035 + 0.12 * axis.length()).min(0.11) * (1.0 + 0.03 * (part % 3) as f32);
        let ring = |r: usize, s: usize| {
            let phi = std::f32::consts::TAU * s as f32 / SIDES as f32;
            a + (b - a) * (r as f32 / RINGS as f32) + radius * (phi.cos() * e1 + phi.sin() * e2)
        };
        let mut tri = |p: [Vec3; 3], uv: [glam::Vec2; 3]| {
            let nrm = (p[1] - p[0]).cross(p[2] - p[0]).normalize_or(d);
            for k in 0..3 {
                positions.push(p[k]);
                normals.push(nrm);
                uvs.push(uv[k]);
                bones.push(bone);
            }
        };
        let side_uv =
            |r: usize, s: usize| glam::Vec2::new(s as f32 / SIDES as f32, r as f32 / RINGS as f32 * 0.5);
        for r in 0..RINGS {
            for s in 0..SIDES {
                let (p00, p01, p10, p11) = (ring(r, s), ring(r, s + 1), ring(r + 1, s), ring(r + 1, s + 1));
                let (u00, u01, u10, u11) =
                    (side_uv(r, s), side_uv(r, s + 1), side_uv(r + 1, s), side_uv(r + 1, s + 1));
                tri([p00, p10, p01], [u00, u10, u01]);
                tri([p01, p10, p11], [u01, u10, u11]);
            }
        }
        let cap_uv = |s: usize, top: bool| {
            let phi = std::f32::consts::TAU * s as f32 / SIDES as f32;
            glam::Vec2::new(0.25 + 0.2 * phi.cos() + if top { 0.5 } else { 0.0 }, 0.75 + 0.2 * phi.sin())
        };
        for s in 0..SIDES {
            let centre = |top: bool| glam::Vec2::new(if top { 0.75 } else { 0.25 }, 0.75);
            tri([a, ring(0, s), ring(0, s + 1)], [centre(false), cap_uv(s, false), cap_uv(s + 1, false)]);
            tri(
                [b, ring(RINGS, s + 1), ring(RINGS, s)],
                [centre(true), cap_uv(s + 1, true), cap_uv(s, true)],
            );
        }
    }
    let indices = (0..positions.len() as u32).collect();
    humanoid_with_body("lowpoly_robot", rigid_bound_body(positions, normals, uvs, indices, &bones))
}

/// A smooth, textured character of 16,680 vertices (32,256 triangles) on the procedural humanoid's
/// skeleton and clips: one ellipsoid per part (24 parts: every bone and the head), 22 rings of 32
/// segments with analytic smooth normals and texture coordinates wrapped around it, so each part has
/// a UV seam (a column of vertices split, same position and normal, u = 0 and u = 1), each part
/// bound rigidly to its bone. Deterministic.
pub fn seamed_character() -> vat_bake::rig::Rig {
    const SEGMENTS: usize = 32;
    const RINGS: usize = 22;
    let rig = crate::procgen::humanoid();
    let (mut positions, mut normals, mut uvs, mut bones, mut indices) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (part, &(from, to, bone)) in humanoid_segments(&rig).iter().enumerate() {
        let axis = to - from;
        let centre = (from + to) * 0.5;
        let half = axis.length() * 0.55;
        let d = axis.normalize_or(Vec3::Y);
        let e1 = d.any_orthonormal_vector();
        let e2 = d.cross(e1);
        let radius = (0.035 + 0.12 * axis.length()).min(0.11) * (1.0 + 0.03 * (part % 3) as f32);
        let base = positions.len() as u32;
        let mut vertex = |theta: f32, phi: f32, uv: glam::Vec2| {
            let local = Vec3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin());
            positions.push(centre + radius * local.x * e1 + half * local.y * d + radius * local.z * e2);
            let n = Vec3::new(local.x / radius, local.y / half, local.z / radius);
            normals.push((n.x * e1 + n.y * d + n.z * e2).normalize_or(d));
            uvs.push(uv);
            bones.push(bone);
        };
        vertex(0.0, 0.0, glam::Vec2::new(0.5, 0.0));
        for r in 1..RINGS {
            let theta = std::f32::consts::PI * r as f32 / RINGS as f32;
            for s in 0..=SEGMENTS {
                let u = s as f32 / SEGMENTS as f32;
                vertex(theta, std::f32::consts::TAU * u, glam::Vec2::new(u, r as f32 / RINGS as f32));
            }
        }
        vertex(std::f32::consts::PI, 0.0, glam::Vec2::new(0.5, 1.0));
        let south = positions.len() as u32 - 1;
        let ring = |r: usize, s: usize| base + 1 + ((r - 1) * (SEGMENTS + 1) + s) as u32;
        for s in 0..SEGMENTS {
            indices.extend([base, ring(1, s + 1), ring(1, s)]);
            indices.extend([south, ring(RINGS - 1, s), ring(RINGS - 1, s + 1)]);
        }
        for r in 1..RINGS - 1 {
            for s in 0..SEGMENTS {
                let (p00, p01, p10, p11) = (ring(r, s), ring(r, s + 1), ring(r + 1, s), ring(r + 1, s + 1));
                indices.extend([p00, p01, p10, p01, p11, p10]);
            }
        }
    }
    humanoid_with_body("seamed_character", rigid_bound_body(positions, normals, uvs, indices, &bones))
}
