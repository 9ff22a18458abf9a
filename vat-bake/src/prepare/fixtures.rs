//! Small hand-built rigs for the tests of this crate's bake stages.

use glam::{Mat4, Quat, Vec2, Vec3, Vec4};

use crate::rig::{
    AnimationClip, Channel, ChannelTarget, KeyInterpolation, MAX_INFLUENCES, Mesh, MeshBinding, MeshRole,
    MorphTarget, Node, Rig, Skin, Socket, Transform,
};

/// Rings and segments of the tube.
pub(crate) const RINGS: usize = 10;
pub(crate) const SEGMENTS: usize = 16;

fn rotation_track(node: usize, times: &[f32], axis: Vec3, angles: &[f32]) -> Channel {
    Channel {
        target: ChannelTarget::Rotation(node),
        interpolation: KeyInterpolation::Linear,
        times: times.to_vec(),
        values: angles.iter().flat_map(|&a| Quat::from_axis_angle(axis, a).to_array()).collect(),
    }
}

/// A 1.8 m tube of radius `radius` (RINGS x SEGMENTS vertices, open ends) skinned to a chain
/// hips -> spine -> head under a root, with tangents, uvs, two materials and a bulge morph
/// target; a head socket carrying a small tetrahedron "cap"; clips "sway" (looping 1 s,
/// locomotion with a known 1.25 m stride) and "nod" (one-shot 0.5 s, animates the morph).
pub(crate) fn tube_rig(radius: f32) -> Rig {
    let node = |name: &str, parent: Option<usize>, y: f32| Node {
        name: name.into(),
        parent,
        rest: Transform { translation: Vec3::new(0.0, y, 0.0), ..Transform::IDENTITY },
    };
    let nodes = vec![
        node("root", None, 0.0),
        node("hips", Some(0), 0.0),
        node("spine", Some(1), 0.6),
        node("head", Some(2), 0.6),
    ];
    let joint_heights = [0.0f32, 0.6, 1.2];
    let mut mesh = Mesh {
        name: "tube".into(),
        binding: MeshBinding::Skinned { skin: 0 },
        role: MeshRole::Body,
        positions: Vec::new(),
        normals: Vec::new(),
        tangents: Some(Vec::new()),
        uvs: Some(Vec::new()),
        colors: None,
        material_ids: Vec::new(),
        indices: Vec::new(),
        influence_count: 4,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: vec![0.0],
    };
    let mut bulge = Vec::new();
    for r in 0..RINGS {
        let y = 1.8 * r as f32 / (RINGS - 1) as f32;
        for s in 0..SEGMENTS {
            let phi = std::f32::consts::TAU * s as f32 / SEGMENTS as f32;
            let radial = Vec3::new(phi.cos(), 0.0, phi.sin());
            mesh.positions.push(radial * radius + Vec3::Y * y);
            mesh.normals.push(radial);
            if let Some(t) = &mut mesh.tangents {
                t.push(Vec4::new(-phi.sin(), 0.0, phi.cos(), if s % 2 == 0 { 1.0 } else { -1.0 }));
            }
            if let Some(uv) = &mut mesh.uvs {
                uv.push(Vec2::new(s as f32 / SEGMENTS as f32, r as f32 / RINGS as f32));
            }
            mesh.material_ids.push(if y < 0.9 { 1 } else { 2 });
            // Piecewise-linear weights between the joints around height y.
            let mut w = [0.0f32; MAX_INFLUENCES];
            let mut j = [0u16; MAX_INFLUENCES];
            if y >= joint_heights[2] {
                (j[0], w[0]) = (2, 1.0);
            } else {
                let k = if y < joint_heights[1] { 0 } else { 1 };
                let t = (y - joint_heights[k]) / 0.6;
                (j[0], w[0], j[1], w[1]) = (k as u16, 1.0 - t, k as u16 + 1, t);
            }
            mesh.joints.push(j);
            mesh.weights.push(w);
            bulge.push(if (3..7).contains(&r) { radial * 0.03 } else { Vec3::ZERO });
        }
    }
    let id = |r: usize, s: usize| (r * SEGMENTS + s % SEGMENTS) as u32;
    for r in 0..RINGS - 1 {
        for s in 0..SEGMENTS {
            mesh.indices.extend([
                id(r, s),
                id(r + 1, s),
                id(r, s + 1),
                id(r, s + 1),
                id(r + 1, s),
                id(r + 1, s + 1),
            ]);
        }
    }
    mesh.morph_targets.push(MorphTarget {
        name: Some("bulge".into()),
        positions: bulge,
        normals: None,
        tangents: None,
    });
    let cap = Mesh {
        name: "cap".into(),
        binding: MeshBinding::Rigid { node: 3 },
        role: MeshRole::Attachment { socket: 0 },
        positions: vec![Vec3::ZERO, Vec3::X * 0.1, Vec3::Z * 0.1, Vec3::Y * 0.1],
        normals: vec![-Vec3::ONE.normalize(), Vec3::X, Vec3::Z, Vec3::Y],
        tangents: None,
        uvs: None,
        colors: None,
        material_ids: vec![3; 4],
        indices: vec![0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3],
        influence_count: 0,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    };
    let rest = |y: f32| Mat4::from_translation(Vec3::new(0.0, y, 0.0)).inverse();
    let sway_times = [0.0, 0.25, 0.5, 0.75, 1.0];
    let sway = AnimationClip {
        name: "sway".into(),
        channels: vec![
            rotation_track(2, &sway_times, Vec3::Z, &[0.0, 0.3, 0.0, -0.3, 0.0]),
            rotation_track(3, &sway_times, Vec3::X, &[0.0, 0.2, 0.0, -0.2, 0.0]),
            Channel {
                target: ChannelTarget::Translation(1),
                interpolation: KeyInterpolation::Linear,
                times: vec![0.0, 0.5, 1.0],
                values: vec![0.0, 0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0],
            },
        ],
        start: 0.0,
        end: 1.0,
        looping: Some(true),
        known_stride: Some(1.25),
        locomotion: true,
    };
    let nod = AnimationClip {
        name: "nod".into(),
        channels: vec![
            rotation_track(3, &[0.04, 0.3, 0.54], Vec3::X, &[0.0, 0.5, 0.2]),
            Channel {
                target: ChannelTarget::MorphWeights(0),
                interpolation: KeyInterpolation::Linear,
                times: vec![0.04, 0.54],
                values: vec![0.0, 1.0],
            },
        ],
        start: 0.04,
        end: 0.54,
        looping: Some(false),
        known_stride: None,
        locomotion: false,
    };
    Rig {
        name: "tube".into(),
        nodes,
        skins: vec![Skin { joints: vec![1, 2, 3], inverse_bind: vec![rest(0.0), rest(0.6), rest(1.2)] }],
        meshes: vec![mesh, cap],
        clips: vec![sway, nod],
        sockets: vec![Socket { name: "head".into(), node: 3, local: Mat4::from_translation(Vec3::Y * 0.5) }],
        feet: None,
        ..Rig::default()
    }
}
