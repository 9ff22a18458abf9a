//! A small morph-animated rig built in code, for tests of morph targets in every mode (the live
//! morph layer of bone mode in particular).
//!
//! - `"sheet"`: a 48 x 45 vertex grid (2,160 vertices, more than the morph texture's 2,048-texel
//!   width, so each band wraps onto 2 rows) in the x-y plane, x in [-0.4, 0.4] m, y in [0, 1] m,
//!   facing +Z, with 3 morph targets: `"bulge"` (a local bump along z with normal deltas, zero on
//!   most vertices), `"stretch"` (x scaled, no normal deltas) and `"wave"` (positions and normals).
//!   Skinned to two joints `"lower"` (y = 0) and `"upper"` (y = 0.5), blended by height, or (without
//!   a skin) rigid on `"lower"`.
//! - `"flag"`: a 4 x 3 grid rigid on the node `"pole"`, with 2 targets of its own (`"flap"`,
//!   `"droop"`): the vertex set's union has 5 targets, 3 of them zero on the flag's vertices and 2
//!   zero on the sheet's.
//! - Clips: `"flex"` (looping, 1 s: every weight keyed linearly, one negative, `"stretch"` 0 for
//!   the first quarter; `"upper"` bends about z and `"pole"` turns about y) and `"pulse"` (one-shot,
//!   0.6 s, other weights, the flag's weights stepped).

use glam::{Mat4, Quat, Vec3};

use vat_bake::rig::{
    AnimationClip, Channel, ChannelTarget, KeyInterpolation, MAX_INFLUENCES, Mesh, MeshBinding, MeshRole,
    MorphTarget, Node, Rig, Skin, Transform,
};

/// Columns of the sheet's grid.
pub const SHEET_COLUMNS: usize = 48;
/// Rows of the sheet's grid.
pub const SHEET_ROWS: usize = 45;

fn grid_indices(columns: usize, rows: usize) -> Vec<u32> {
    let id = |r: usize, c: usize| (r * columns + c) as u32;
    let mut out = Vec::new();
    for r in 0..rows - 1 {
        for c in 0..columns - 1 {
            out.extend([id(r, c), id(r, c + 1), id(r + 1, c), id(r + 1, c), id(r, c + 1), id(r + 1, c + 1)]);
        }
    }
    out
}

fn empty_mesh(name: &str, binding: MeshBinding) -> Mesh {
    Mesh {
        name: name.into(),
        binding,
        role: MeshRole::Body,
        positions: Vec::new(),
        normals: Vec::new(),
        tangents: None,
        uvs: None,
        colors: None,
        material_ids: Vec::new(),
        indices: Vec::new(),
        influence_count: 0,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    }
}

fn target(name: &str, positions: Vec<Vec3>, normals: Option<Vec<Vec3>>) -> MorphTarget {
    MorphTarget { name: Some(name.into()), positions, normals, tangents: None }
}

fn linear(target: ChannelTarget, times: &[f32], values: &[f32]) -> Channel {
    Channel {
        target,
        interpolation: KeyInterpolation::Linear,
        times: times.to_vec(),
        values: values.to_vec(),
    }
}

fn rotation(node: usize, times: &[f32], axis: Vec3, angles: &[f32]) -> Channel {
    Channel {
        target: ChannelTarget::Rotation(node),
        interpolation: KeyInterpolation::Linear,
        times: times.to_vec(),
        values: angles.iter().flat_map(|&a| Quat::from_axis_angle(axis, a).to_array()).collect(),
    }
}

/// The sheet: grid, morph targets and (when `skinned`) weights on joints 0 (`"lower"`) and 1
/// (`"upper"`) of skin 0.
fn sheet(skinned: bool) -> Mesh {
    let binding = if skinned { MeshBinding::Skinned { skin: 0 } } else { MeshBinding::Rigid { node: 1 } };
    let mut m = empty_mesh("sheet", binding);
    let (mut bulge_p, mut bulge_n) = (Vec::new(), Vec::new());
    let (mut stretch, mut wave_p, mut wave_n) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..SHEET_ROWS {
        let y = r as f32 / (SHEET_ROWS - 1) as f32;
        for c in 0..SHEET_COLUMNS {
            let x = 0.8 * c as f32 / (SHEET_COLUMNS - 1) as f32 - 0.4;
            m.positions.push(Vec3::new(x, y, 0.0));
            m.normals.push(Vec3::Z);
            m.material_ids.push(u8::from(y > 0.5));
            if skinned {
                // Smoothstep from "lower" to "upper" across y in [0.3, 0.7].
                let s = ((y - 0.3) / 0.4).clamp(0.0, 1.0);
                let t = s * s * (3.0 - 2.0 * s);
                let mut j = [0u16; MAX_INFLUENCES];
                let mut w = [0.0f32; MAX_INFLUENCES];
                (j[0], w[0], j[1], w[1]) = (0, 1.0 - t, 1, t);
                m.joints.push(j);
                m.weights.push(w);
            }
            // A bump of radius 0.2 m around (0.1, 0.6): zero outside it.
            let (dx, dy) = (x - 0.1, y - 0.6);
            let d2 = (dx * dx + dy * dy) / 0.04;
            let bump = if d2 < 1.0 { (1.0 - d2) * (1.0 - d2) } else { 0.0 };
            let slope = if d2 < 1.0 { -4.0 * (1.0 - d2) / 0.04 } else { 0.0 };
            bulge_p.push(Vec3::new(0.0, 0.0, 0.12 * bump));
            bulge_n.push(Vec3::new(-0.12 * slope * dx, -0.12 * slope * dy, 0.0));
            stretch.push(Vec3::new(0.25 * x, 0.0, 0.0));
            wave_p.push(Vec3::new(0.0, 0.04 * (6.0 * x).sin(), 0.06 * (4.0 * y).cos()));
            wave_n.push(Vec3::new(0.0, 0.24 * (4.0 * y).sin(), 0.0));
        }
    }
    m.indices = grid_indices(SHEET_COLUMNS, SHEET_ROWS);
    if skinned {
        m.influence_count = 2;
    }
    m.morph_targets = vec![
        target("bulge", bulge_p, Some(bulge_n)),
        target("stretch", stretch, None),
        target("wave", wave_p, Some(wave_n)),
    ];
    m.default_morph_weights = vec![0.0, 0.0, 0.0];
    m
}

/// The flag: a 4 x 3 grid in its pole's space with two morph targets.
fn flag() -> Mesh {
    let mut m = empty_mesh("flag", MeshBinding::Rigid { node: 3 });
    let (mut flap_p, mut flap_n, mut droop) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..3 {
        for c in 0..4 {
            let (x, y) = (0.1 * c as f32, 0.1 * r as f32);
            m.positions.push(Vec3::new(x, y, 0.0));
            m.normals.push(Vec3::Z);
            m.material_ids.push(2);
            flap_p.push(Vec3::new(0.0, 0.0, 0.5 * x * x));
            flap_n.push(Vec3::new(-x, 0.0, 0.0));
            droop.push(Vec3::new(0.0, -0.1 * x, 0.0));
        }
    }
    m.indices = grid_indices(4, 3);
    m.morph_targets = vec![target("flap", flap_p, Some(flap_n)), target("droop", droop, None)];
    m.default_morph_weights = vec![0.2, 0.0];
    m
}

/// The morph rig (see the module docs): skinned sheet when `skinned`, else every mesh rigid on its
/// node (a morph-only asset whose bone mode runs on node bones).
pub fn morph_rig(skinned: bool) -> Rig {
    let node = |name: &str, parent: Option<usize>, t: Vec3| Node {
        name: name.into(),
        parent,
        rest: Transform { translation: t, ..Transform::IDENTITY },
    };
    let nodes = vec![
        node("root", None, Vec3::ZERO),
        node("lower", Some(0), Vec3::ZERO),
        node("upper", Some(1), Vec3::new(0.0, 0.5, 0.0)),
        node("pole", Some(0), Vec3::new(0.6, 0.2, 0.1)),
    ];
    let keys = [0.0, 0.25, 0.5, 0.75, 1.0];
    let flex = AnimationClip {
        name: "flex".into(),
        channels: vec![
            // bulge, stretch, wave per key.
            linear(
                ChannelTarget::MorphWeights(0),
                &keys,
                &[0.0, 0.0, 0.3, 0.8, 0.0, -0.4, 1.0, 0.5, 0.2, 0.3, 1.0, 0.9, 0.0, 0.0, 0.3],
            ),
            // flap, droop per key.
            linear(
                ChannelTarget::MorphWeights(1),
                &keys,
                &[0.2, 0.0, 1.0, 0.5, 0.0, 1.0, 0.6, 0.0, 0.2, 0.0],
            ),
            rotation(2, &keys, Vec3::Z, &[0.0, 0.4, 0.0, -0.3, 0.0]),
            rotation(3, &keys, Vec3::Y, &[0.0, 0.5, 1.0, 0.5, 0.0]),
            linear(
                ChannelTarget::Translation(1),
                &[0.0, 0.5, 1.0],
                &[0.0, 0.0, 0.0, 0.05, 0.02, 0.0, 0.0, 0.0, 0.0],
            ),
        ],
        start: 0.0,
        end: 1.0,
        looping: Some(true),
        known_stride: None,
        locomotion: false,
    };
    let pulse = AnimationClip {
        name: "pulse".into(),
        channels: vec![
            linear(ChannelTarget::MorphWeights(0), &[0.0, 0.6], &[1.0, 0.0, 0.0, 0.2, 0.7, -0.2]),
            Channel {
                target: ChannelTarget::MorphWeights(1),
                interpolation: KeyInterpolation::Step,
                times: vec![0.0, 0.3],
                values: vec![0.0, 0.0, 1.0, 0.8],
            },
            rotation(2, &[0.0, 0.6], Vec3::X, &[0.0, 0.5]),
        ],
        start: 0.0,
        end: 0.6,
        looping: Some(false),
        known_stride: None,
        locomotion: false,
    };
    let skins = if skinned {
        let rest = |y: f32| Mat4::from_translation(Vec3::new(0.0, y, 0.0)).inverse();
        vec![Skin { joints: vec![1, 2], inverse_bind: vec![rest(0.0), rest(0.5)] }]
    } else {
        Vec::new()
    };
    Rig {
        name: if skinned { "morph-sheet-skinned".into() } else { "morph-sheet-rigid".into() },
        nodes,
        skins,
        meshes: vec![sheet(skinned), flag()],
        clips: vec![flex, pulse],
        sockets: Vec::new(),
        feet: None,
        ..Rig::default()
    }
}
