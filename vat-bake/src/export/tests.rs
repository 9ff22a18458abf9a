use glam::{Quat, Vec2, Vec4};
use gltf::animation::util::{MorphTargetWeights, ReadOutputs, Rotations};
use gltf::mesh::Semantic;

use super::*;
use crate::procgen;
use crate::rig::{AnimationClip, Channel, Feet, MorphTarget, Node, Skin, Socket, Transform};

fn bits(v: impl IntoIterator<Item = f32>) -> Vec<u32> {
    v.into_iter().map(f32::to_bits).collect()
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn extras(raw: &gltf::json::Extras) -> Value {
    raw.as_ref().map_or(Value::Null, |r| serde_json::from_str(r.get()).unwrap())
}

/// Parses with validation and checks the container: header, chunk lengths and types, 4-byte
/// alignment of the chunks and of every buffer view.
fn parse(glb: &[u8]) -> (gltf::Gltf, Vec<u8>) {
    assert_eq!(&glb[0..4], b"glTF");
    assert_eq!(u32_at(glb, 4), 2);
    assert_eq!(u32_at(glb, 8) as usize, glb.len());
    let json_len = u32_at(glb, 12) as usize;
    assert_eq!(&glb[16..20], b"JSON");
    assert_eq!(json_len % 4, 0);
    let bin_at = 20 + json_len;
    let bin_len = u32_at(glb, bin_at) as usize;
    assert_eq!(&glb[bin_at + 4..bin_at + 8], b"BIN\0");
    assert_eq!(bin_len % 4, 0);
    assert_eq!(bin_at + 8 + bin_len, glb.len());
    let gltf = gltf::Gltf::from_slice(glb).expect("valid glTF");
    let blob = gltf.blob.clone().expect("a BIN chunk");
    assert_eq!(gltf.buffers().next().unwrap().length(), blob.len());
    for view in gltf.views() {
        assert_eq!(view.offset() % 4, 0, "buffer view {} misaligned", view.index());
        assert!(view.offset() + view.length() <= blob.len());
        assert_eq!(view.stride(), None);
    }
    (gltf, blob)
}

#[test]
fn the_humanoid_exports_as_valid_gltf_with_every_value_bit_exact() {
    let rig = procgen::humanoid();
    let (gltf, blob) = parse(&export_glb(&rig).unwrap());
    let buffers = |_: gltf::Buffer<'_>| Some(blob.as_slice());

    // Nodes: rig nodes first, then one carrier per mesh (the socket has its attachment).
    let nodes: Vec<gltf::Node<'_>> = gltf.nodes().collect();
    assert_eq!(nodes.len(), rig.nodes.len() + rig.meshes.len());
    for (i, n) in rig.nodes.iter().enumerate() {
        let (t, r, s) = nodes[i].transform().decomposed();
        assert_eq!(bits(t), bits(n.rest.translation.to_array()), "node {i}");
        assert_eq!(bits(r), bits(n.rest.rotation.to_array()), "node {i}");
        assert_eq!(bits(s), bits(n.rest.scale.to_array()), "node {i}");
        assert_eq!(nodes[i].name(), Some(n.name.as_str()));
        for child in nodes[i].children() {
            if child.index() < rig.nodes.len() {
                assert_eq!(rig.nodes[child.index()].parent, Some(i));
            }
        }
    }
    let roots: Vec<usize> = gltf.scenes().next().unwrap().nodes().map(|n| n.index()).collect();
    assert_eq!(roots, [0, rig.nodes.len()], "the root joint and the skinned body");
    let feet = rig.feet.unwrap();
    assert_eq!(extras(nodes[feet.left].extras()), json!({ "vat_foot": "left" }));
    assert_eq!(extras(nodes[feet.right].extras()), json!({ "vat_foot": "right" }));

    // The skin.
    let skin = gltf.skins().next().unwrap();
    assert_eq!(skin.joints().map(|j| j.index()).collect::<Vec<_>>(), rig.skins[0].joints);
    let ibm: Vec<[[f32; 4]; 4]> = skin.reader(buffers).read_inverse_bind_matrices().unwrap().collect();
    assert_eq!(
        bits(ibm.iter().flatten().flatten().copied()),
        bits(rig.skins[0].inverse_bind.iter().flat_map(Mat4::to_cols_array))
    );

    // Meshes: every stream bit for bit.
    for (m, mesh) in rig.meshes.iter().enumerate() {
        let g = gltf.meshes().nth(m).unwrap();
        assert_eq!(g.name(), Some(mesh.name.as_str()));
        let prim = g.primitives().next().unwrap();
        assert_eq!(prim.mode(), gltf::mesh::Mode::Triangles);
        let reader = prim.reader(buffers);
        let positions: Vec<[f32; 3]> = reader.read_positions().unwrap().collect();
        assert_eq!(bits(positions.concat()), bits(mesh.positions.iter().flat_map(|p| p.to_array())));
        let bb = prim.bounding_box();
        let (lo, hi) = mesh.positions.iter().fold((Vec3::MAX, Vec3::MIN), |(a, b), p| (a.min(*p), b.max(*p)));
        assert_eq!((bits(bb.min), bits(bb.max)), (bits(lo.to_array()), bits(hi.to_array())));
        let normals: Vec<[f32; 3]> = reader.read_normals().unwrap().collect();
        assert_eq!(bits(normals.concat()), bits(mesh.normals.iter().flat_map(|p| p.to_array())));
        let tangents: Vec<[f32; 4]> = reader.read_tangents().unwrap().collect();
        let rig_tangents = mesh.tangents.as_ref().unwrap();
        assert_eq!(bits(tangents.concat()), bits(rig_tangents.iter().flat_map(|t| t.to_array())));
        let uvs: Vec<[f32; 2]> = reader.read_tex_coords(0).unwrap().into_f32().collect();
        assert_eq!(bits(uvs.concat()), bits(mesh.uvs.as_ref().unwrap().iter().flat_map(|t| t.to_array())));
        let indices: Vec<u32> = reader.read_indices().unwrap().into_u32().collect();
        assert_eq!(indices, mesh.indices);
        let ids = prim.get(&Semantic::Extras("MATERIAL_ID".into())).unwrap();
        assert_eq!(
            (ids.data_type(), ids.dimensions()),
            (gltf::accessor::DataType::F32, gltf::accessor::Dimensions::Scalar)
        );
        let ids: Vec<f32> = gltf::accessor::Iter::<f32>::new(ids, buffers).unwrap().collect();
        assert_eq!(ids, mesh.material_ids.iter().map(|&i| f32::from(i)).collect::<Vec<_>>());
        let carrier = &nodes[rig.nodes.len() + m];
        assert_eq!(carrier.mesh().map(|x| x.index()), Some(m));
        match mesh.role {
            MeshRole::Body => {
                assert_eq!(carrier.skin().map(|s| s.index()), Some(0));
                let joints: Vec<[u16; 4]> = reader.read_joints(0).unwrap().into_u16().collect();
                let rig_joints: Vec<[u16; 4]> =
                    mesh.joints.iter().map(|j| [j[0], j[1], j[2], j[3]]).collect();
                assert_eq!(joints, rig_joints);
                let weights: Vec<[f32; 4]> = reader.read_weights(0).unwrap().into_f32().collect();
                assert_eq!(bits(weights.concat()), bits(mesh.weights.iter().flat_map(|w| w[..4].to_vec())));
                assert!(reader.read_joints(1).is_none());
            }
            MeshRole::Attachment { socket } => {
                let s = &rig.sockets[socket];
                assert!(reader.read_joints(0).is_none() && carrier.skin().is_none());
                assert!(nodes[s.node].children().any(|c| c.index() == carrier.index()));
                assert_eq!(bits(carrier.transform().matrix().concat()), bits(s.local.to_cols_array()));
                assert_eq!(
                    extras(carrier.extras()),
                    json!({ "vat_socket": "head", "vat_attachment": "cap" })
                );
            }
        }
    }

    // Animations: names, extras, targets, interpolation, and every key bit for bit.
    assert_eq!(gltf.animations().count(), rig.clips.len());
    for (anim, clip) in gltf.animations().zip(&rig.clips) {
        assert_eq!(anim.name(), Some(clip.name.as_str()));
        let mut expect = json!({ "vat_locomotion": clip.locomotion });
        if let Some(looping) = clip.looping {
            expect["vat_looping"] = json!(looping);
        }
        if let Some(s) = clip.known_stride {
            expect["vat_stride"] = json!(f64::from(s));
        }
        assert_eq!(extras(anim.extras()), expect, "{}", clip.name);
        let channels: Vec<_> = anim.channels().collect();
        assert_eq!(channels.len(), clip.channels.len());
        // One shared input accessor: every channel has the same key times.
        let inputs: std::collections::BTreeSet<usize> =
            channels.iter().map(|c| c.sampler().input().index()).collect();
        assert_eq!(inputs.len(), 1, "{}", clip.name);
        let input = channels[0].sampler().input();
        assert_eq!(input.min(), Some(json!([f64::from(clip.start)])));
        assert_eq!(input.max(), Some(json!([f64::from(clip.end)])));
        for (c, ch) in channels.iter().zip(&clip.channels) {
            assert_eq!(c.sampler().interpolation(), gltf::animation::Interpolation::Linear);
            let reader = c.reader(buffers);
            let times: Vec<f32> = reader.read_inputs().unwrap().collect();
            assert_eq!(bits(times), bits(ch.times.iter().copied()));
            let values: Vec<f32> = match (reader.read_outputs().unwrap(), ch.target) {
                (ReadOutputs::Translations(t), ChannelTarget::Translation(n)) => {
                    assert_eq!(c.target().node().index(), n);
                    t.flatten().collect()
                }
                (ReadOutputs::Rotations(Rotations::F32(r)), ChannelTarget::Rotation(n)) => {
                    assert_eq!(c.target().node().index(), n);
                    r.flatten().collect()
                }
                (other, target) => panic!("{target:?} read back as {:?}", std::mem::discriminant(&other)),
            };
            assert_eq!(bits(values), bits(ch.values.iter().copied()), "{} {:?}", clip.name, ch.target);
        }
    }
}

/// A small rig using what the humanoid does not: 8 influences, morph targets with names and
/// default weights, a morph-weights channel, STEP and CUBICSPLINE samplers, a scale channel, a
/// rigid body mesh on a joint, a socket without attachment and with a rotation.
fn feature_rig() -> Rig {
    let tri = |i: u32| [i, i + 1, i + 2];
    let n = 4;
    let positions = vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(0.1, 0.2, 1.0 / 3.0)];
    let body = Mesh {
        name: "body".into(),
        binding: MeshBinding::Skinned { skin: 0 },
        role: MeshRole::Body,
        positions: positions.clone(),
        normals: vec![Vec3::Z; n],
        tangents: None,
        uvs: Some(vec![Vec2::new(0.25, 0.5); n]),
        colors: None,
        material_ids: vec![0, 1, 2, 255],
        indices: [tri(0), tri(1)].concat(),
        influence_count: 8,
        // Eight distinct joints per vertex, dyadic weights summing to exactly 1.
        joints: (0..n as u16).map(|v| std::array::from_fn(|i| (v + i as u16) % 8)).collect(),
        weights: vec![[0.25, 0.25, 0.125, 0.125, 0.125, 0.0625, 0.03125, 0.03125]; n],
        full_influences: None,
        morph_targets: vec![
            MorphTarget {
                name: Some("smile".into()),
                positions: vec![Vec3::Y * 0.1; n],
                normals: Some(vec![Vec3::X * 0.01; n]),
                tangents: None,
            },
            MorphTarget {
                name: Some("blink".into()),
                positions: vec![Vec3::NEG_X * 0.2; n],
                normals: None,
                tangents: None,
            },
        ],
        default_morph_weights: vec![0.5],
    };
    let prop = Mesh {
        name: "prop".into(),
        binding: MeshBinding::Rigid { node: 1 },
        role: MeshRole::Body,
        positions,
        normals: vec![Vec3::Y; n],
        tangents: Some(vec![Vec4::new(1.0, 0.0, 0.0, -1.0); n]),
        uvs: None,
        colors: None,
        material_ids: vec![3; n],
        indices: tri(1).to_vec(),
        influence_count: 0,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    };
    let rest = Transform {
        translation: Vec3::new(0.0, 1.1, 0.0),
        rotation: Quat::from_rotation_z(0.3),
        scale: Vec3::splat(1.5),
    };
    let channel = |target, interpolation, times: &[f32], values: &[f32]| Channel {
        target,
        interpolation,
        times: times.to_vec(),
        values: values.to_vec(),
    };
    Rig {
        name: "features".into(),
        nodes: [
            Node { name: "root".into(), parent: None, rest: Transform::IDENTITY },
            Node { name: "bone".into(), parent: Some(0), rest },
            Node { name: String::new(), parent: Some(1), rest: Transform::IDENTITY },
        ]
        .into_iter()
        .chain((3..8).map(|i| Node { name: format!("leaf{i}"), parent: Some(0), rest: Transform::IDENTITY }))
        .collect(),
        skins: vec![Skin {
            joints: (0..8).collect(),
            inverse_bind: (0..8)
                .map(|j| if j == 1 { rest.to_mat4().inverse() } else { Mat4::IDENTITY })
                .collect(),
        }],
        meshes: vec![body, prop],
        clips: vec![AnimationClip {
            name: "mixed".into(),
            channels: vec![
                channel(
                    ChannelTarget::Scale(1),
                    KeyInterpolation::Step,
                    &[0.04, 0.5],
                    &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
                ),
                channel(
                    ChannelTarget::Rotation(1),
                    KeyInterpolation::CubicSpline,
                    &[0.04, 1.0],
                    &[[0.0; 4], [0.0, 0.0, 0.0, 1.0], [0.1; 4], [0.0; 4], [0.0, 0.6, 0.0, 0.8], [0.0; 4]]
                        .concat(),
                ),
                channel(
                    ChannelTarget::MorphWeights(0),
                    KeyInterpolation::Linear,
                    &[0.04, 1.0],
                    &[0.0, 1.0, 1.0, 0.0],
                ),
            ],
            start: 0.04,
            end: 1.0,
            looping: Some(false),
            known_stride: None,
            locomotion: false,
        }],
        sockets: vec![Socket { name: "hand".into(), node: 2, local: Mat4::from_rotation_y(0.5) }],
        feet: Some(Feet { left: 1, right: 2 }),
        ..Rig::default()
    }
}

#[test]
fn morphs_eight_influences_every_interpolation_and_a_bare_socket_export() {
    let rig = feature_rig();
    let (gltf, blob) = parse(&export_glb(&rig).unwrap());
    let buffers = |_: gltf::Buffer<'_>| Some(blob.as_slice());
    let nodes: Vec<gltf::Node<'_>> = gltf.nodes().collect();
    // 8 rig nodes, 2 mesh carriers, 1 socket.
    assert_eq!(nodes.len(), 11);
    let body = gltf.meshes().next().unwrap();
    assert_eq!(body.weights(), Some(&[0.5, 0.0][..]));
    assert_eq!(extras(body.extras()), json!({ "targetNames": ["smile", "blink"] }));
    let prim = body.primitives().next().unwrap();
    let reader = prim.reader(buffers);
    for set in 0..2 {
        let joints: Vec<[u16; 4]> = reader.read_joints(set).unwrap().into_u16().collect();
        let want: Vec<[u16; 4]> =
            rig.meshes[0].joints.iter().map(|j| std::array::from_fn(|i| j[4 * set as usize + i])).collect();
        assert_eq!(joints, want, "JOINTS_{set}");
        let weights: Vec<[f32; 4]> = reader.read_weights(set).unwrap().into_f32().collect();
        let want: Vec<f32> = rig.meshes[0]
            .weights
            .iter()
            .flat_map(|w| w[4 * set as usize..4 * set as usize + 4].to_vec())
            .collect();
        assert_eq!(bits(weights.concat()), bits(want), "WEIGHTS_{set}");
    }
    let targets: Vec<_> = reader.read_morph_targets().collect();
    assert_eq!(targets.len(), 2);
    let (p, nrm, t) = &targets[0];
    assert_eq!(p.clone().unwrap().next(), Some([0.0, 0.1, 0.0]));
    assert_eq!(nrm.clone().unwrap().next(), Some([0.01, 0.0, 0.0]));
    assert!(t.is_none() && targets[1].1.is_none());
    // Bounds on the morph POSITION accessors too.
    assert!(
        prim.morph_targets().all(|m| m.positions().is_some_and(|a| a.min().is_some() && a.max().is_some()))
    );
    // The rigid prop hangs under its joint; the bare socket is a child of its node with its
    // (rotated) transform as a matrix.
    assert!(nodes[1].children().any(|c| c.mesh().map(|m| m.index()) == Some(1)));
    let socket = nodes[2].children().next().unwrap();
    assert_eq!(extras(socket.extras()), json!({ "vat_socket": "hand" }));
    assert_eq!(bits(socket.transform().matrix().concat()), bits(rig.sockets[0].local.to_cols_array()));
    assert_eq!(nodes[2].name(), None);

    let anim = gltf.animations().next().unwrap();
    assert_eq!(extras(anim.extras()), json!({ "vat_looping": false, "vat_locomotion": false }));
    let kinds: Vec<_> =
        anim.channels().map(|c| (c.sampler().interpolation(), c.target().property())).collect();
    use gltf::animation::{Interpolation as I, Property as P};
    assert_eq!(
        kinds,
        [(I::Step, P::Scale), (I::CubicSpline, P::Rotation), (I::Linear, P::MorphTargetWeights)]
    );
    let channels: Vec<_> = anim.channels().collect();
    // Cubic outputs hold in-tangent, value, out-tangent per key; weights target the body's node.
    let cubic = channels[1].sampler().output();
    assert_eq!(cubic.count(), 6);
    assert_eq!(channels[2].target().node().index(), 8);
    match channels[2].reader(buffers).read_outputs().unwrap() {
        ReadOutputs::MorphTargetWeights(MorphTargetWeights::F32(w)) => {
            assert_eq!(w.collect::<Vec<_>>(), rig.clips[0].channels[2].values);
        }
        _ => panic!("weights read back as another kind"),
    }
    // Key times 0.04..1.0 and 0.04..0.5 differ: two input accessors, bounds per input.
    let input = channels[0].sampler().input();
    assert_eq!((input.min(), input.max()), (Some(json!([f64::from(0.04f32)])), Some(json!([0.5]))));
}

#[test]
fn unexportable_rigs_are_typed_errors_naming_the_part() {
    type Break = fn(&mut Rig);
    let cases: [(&str, Break); 11] = [
        ("node 1 \"bone\"", |r| r.nodes[1].rest.translation.x = f32::NAN),
        ("mesh 0 \"body\"", |r| {
            let n = r.meshes[0].vertex_count();
            r.meshes[0].full_influences = Some(vec![vec![(0, 0.1); 9]; n]);
        }),
        ("mesh 0 \"body\"", |r| r.meshes[0].indices[2] = 4),
        ("mesh 0 \"body\"", |r| r.meshes[0].joints[1][6] = 8),
        ("mesh 0 \"body\"", |r| r.meshes[0].influence_count = 5),
        ("mesh 0 \"body\"", |r| {
            r.meshes[0].normals.pop();
        }),
        ("mesh 1 \"prop\"", |r| r.meshes[1].binding = MeshBinding::Rigid { node: 9 }),
        ("morph target 1", |r| {
            r.meshes[0].morph_targets[1].positions.pop();
        }),
        ("skin 0", |r| r.skins[0].joints[1] = 0),
        ("socket 0", |r| r.sockets[0].node = 11),
        ("\"mixed\" channel 2", |r| r.clips[0].channels[2].values[0] = f32::INFINITY),
    ];
    for (part, break_it) in cases {
        let mut rig = feature_rig();
        break_it(&mut rig);
        let err = export_glb(&rig).unwrap_err();
        assert!(matches!(err, BakeError::InvalidInput { .. }), "{part}: {err:?}");
        assert!(err.to_string().contains(part), "{part}: {err}");
    }
    // An attachment must ride on its socket's node.
    let mut rig = procgen::humanoid();
    rig.meshes[1].binding = MeshBinding::Rigid { node: 0 };
    assert!(export_glb(&rig).unwrap_err().to_string().contains("socket's node"));
}

#[test]
fn write_glb_is_atomic_and_writes_the_exported_bytes() {
    let dir = std::env::temp_dir().join(format!("vat-export-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rig = feature_rig();
    let path = dir.join("features.glb");
    write_glb(&rig, &path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), export_glb(&rig).unwrap());
    // A bad rig writes nothing; an unwritable path is an error naming it.
    let mut bad = rig.clone();
    bad.nodes[0].rest.scale.y = f32::NAN;
    let bad_path = dir.join("bad.glb");
    assert!(write_glb(&bad, &bad_path).is_err());
    assert!(!bad_path.exists());
    let missing = dir.join("no-such-dir").join("x.glb");
    let err = write_glb(&rig, &missing).unwrap_err();
    assert!(err.to_string().contains("no-such-dir"), "{err}");
    assert!(std::fs::read_dir(&dir).unwrap().count() == 1, "temporary files left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn export_is_deterministic() {
    let rig = procgen::humanoid();
    assert_eq!(export_glb(&rig).unwrap(), export_glb(&rig).unwrap());
}
