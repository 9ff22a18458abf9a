//! Tests of the procedural humanoid: structure, geometry, weights, the IK against the planned foot
//! trajectories, exact strides, key layout.

use std::collections::HashMap;

use glam::{Mat4, Quat, Vec3};

use super::joint::*;
use super::*;
use vat_bake::rig::{AnimationClip, ChannelTarget, KeyInterpolation, MAX_INFLUENCES};

/// f32 unit roundoff (half an ulp of 1).
const U: f32 = f32::EPSILON / 2.0;

fn body(rig: &Rig) -> &Mesh {
    &rig.meshes[0]
}

fn cap(rig: &Rig) -> &Mesh {
    &rig.meshes[1]
}

/// Global joint matrices at key `k` of `clip`, from the keys themselves (locals: the rest
/// translation, or the hips key translation, times the key rotation).
fn key_globals(rig: &Rig, clip: &AnimationClip, k: usize) -> Vec<Mat4> {
    let mut locals: Vec<Transform> = rig.nodes.iter().map(|n| n.rest).collect();
    for ch in &clip.channels {
        match ch.target {
            ChannelTarget::Translation(n) => {
                locals[n].translation = Vec3::from_slice(&ch.values[3 * k..3 * k + 3]);
            }
            ChannelTarget::Rotation(n) => {
                locals[n].rotation = Quat::from_slice(&ch.values[4 * k..4 * k + 4]);
            }
            other => panic!("unexpected channel {other:?}"),
        }
    }
    let locals: Vec<Mat4> = locals.iter().map(Transform::to_mat4).collect();
    rig.globals_from_locals(&locals)
}

fn translation(m: &Mat4) -> Vec3 {
    m.w_axis.truncate()
}

fn bounds(points: &[Vec3]) -> (Vec3, Vec3) {
    points.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), p| (lo.min(*p), hi.max(*p)))
}

#[test]
fn counts_names_and_flags() {
    let rig = humanoid();
    assert_eq!(rig.name, "humanoid");
    assert_eq!(rig.nodes.len(), COUNT);
    assert!((20..=30).contains(&COUNT));
    assert_eq!(rig.skins.len(), 1);
    assert_eq!(rig.skins[0].joints, (0..COUNT).collect::<Vec<_>>());
    for (i, n) in rig.nodes.iter().enumerate() {
        assert!(n.parent.is_none_or(|p| p < i), "node {i} parent after it");
        assert_eq!(n.rest.rotation, Quat::IDENTITY);
    }
    let b = body(&rig);
    assert!((2000..3000).contains(&b.vertex_count()), "{} vertices", b.vertex_count());
    let triangles = b.indices.len() / 3;
    assert!((4000..5000).contains(&triangles), "{triangles} triangles");
    assert_eq!(b.binding, MeshBinding::Skinned { skin: 0 });
    assert_eq!(b.role, MeshRole::Body);
    assert_eq!(rig.body_vertex_count(), b.vertex_count());
    let c = cap(&rig);
    assert!((200..600).contains(&c.vertex_count()), "{} cap vertices", c.vertex_count());
    assert_eq!(c.binding, MeshBinding::Rigid { node: HEAD });
    assert_eq!(c.role, MeshRole::Attachment { socket: 0 });
    assert_eq!(c.influence_count, 0);
    assert!(c.joints.is_empty() && c.weights.is_empty());
    assert_eq!(rig.sockets.len(), 1);
    assert_eq!((rig.sockets[0].name.as_str(), rig.sockets[0].node), ("head", HEAD));
    assert_eq!(rig.feet, Some(Feet { left: FOOT_L, right: FOOT_R }));

    let names: Vec<&str> = rig.clips.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["idle", "walk", "jog", "run", "wave", "look_around"]);
    for c in &rig.clips {
        let gait = GAITS.iter().find(|g| g.name == c.name);
        assert_eq!(c.locomotion, gait.is_some(), "{}", c.name);
        assert_eq!(c.known_stride, gait.map(|g| g.stride as f32), "{}", c.name);
        assert_eq!(c.looping, Some(c.name != "wave"), "{}", c.name);
    }
}

#[test]
fn bounds_are_those_of_a_person_standing_on_the_ground() {
    let rig = humanoid();
    let (lo, hi) = bounds(&body(&rig).positions);
    // Soles on y = 0: the foot sections' lowest points are centre - half-height, computed in f64
    // from equal values and rounded, so within one f32 rounding of 0.
    assert!(lo.y.abs() <= 1e-6, "lowest point {}", lo.y);
    // The crown: the head ellipsoid's top, 1.665 + 0.115 = 1.78 m (the head's rings stop one
    // 14th of a half-turn short of the pole only at the sides; the pole is a vertex).
    assert!((hi.y - 1.78).abs() <= 1e-5, "top {}", hi.y);
    // Left-right symmetric (the sides are built mirrored), arms in an A-pose: 1.0-1.4 m span.
    assert!((lo.x + hi.x).abs() <= 1e-5, "{lo} {hi}");
    assert!((1.0..1.4).contains(&(hi.x - lo.x)), "span {}", hi.x - lo.x);
    assert!((0.25..0.45).contains(&(hi.z - lo.z)), "depth {}", hi.z - lo.z);
    // Facing +Z: the toes reach further forward than the heels reach back.
    assert!(hi.z > -lo.z);
}

#[test]
fn weights_are_normalised_sorted_and_blend_at_joints() {
    let rig = humanoid();
    let b = body(&rig);
    assert_eq!(b.influence_count, 4);
    assert_eq!((b.joints.len(), b.weights.len()), (b.vertex_count(), b.vertex_count()));
    let mut blended = 0;
    for (v, (j, w)) in b.joints.iter().zip(&b.weights).enumerate() {
        // Each weight is an f64 fraction rounded once (<= U relative), and summing <= 4 of them in
        // f32 adds <= 3 roundings of <= U: |sum - 1| <= 7 U.
        let sum: f32 = w.iter().sum();
        assert!((sum - 1.0).abs() <= 7.0 * U, "vertex {v}: weights sum to {sum}");
        assert!(w.windows(2).all(|p| p[0] >= p[1]), "vertex {v}: weights not sorted {w:?}");
        for s in 0..MAX_INFLUENCES {
            assert!((j[s] as usize) < COUNT, "vertex {v}: joint {}", j[s]);
            if s >= 4 || w[s] == 0.0 {
                assert_eq!((j[s], w[s]), (0, 0.0), "vertex {v}: unused slot {s} not zero");
            }
        }
        if w[1] > 0.0 {
            blended += 1;
        }
    }
    // Every joint region blends (shoulders, elbows, wrists, knuckles, hips, knees, ankles, toes,
    // the spine): a good share of the vertices has two influences.
    assert!(blended > b.vertex_count() / 4, "{blended} blended vertices");
    // Every joint but the root and the two knuckle-less ends drives some vertex.
    let mut used = [false; COUNT];
    for (j, w) in b.joints.iter().zip(&b.weights) {
        for s in 0..4 {
            if w[s] > 0.0 {
                used[j[s] as usize] = true;
            }
        }
    }
    let unused: Vec<usize> = (0..COUNT).filter(|&j| !used[j]).collect();
    assert_eq!(unused, [ROOT], "joints without vertices");
}

#[test]
fn material_ids_cover_every_body_class() {
    let rig = humanoid();
    let mut counts = [0usize; 5];
    for &m in &body(&rig).material_ids {
        counts[m as usize] += 1;
    }
    for (id, what) in [
        (MATERIAL_SKIN, "skin"),
        (MATERIAL_SHIRT, "shirt"),
        (MATERIAL_PANTS, "pants"),
        (MATERIAL_SHOES, "shoes"),
    ] {
        assert!(counts[id as usize] >= 100, "{what}: {} vertices", counts[id as usize]);
    }
    assert_eq!(counts[MATERIAL_CAP as usize], 0);
    assert!(cap(&rig).material_ids.iter().all(|&m| m == MATERIAL_CAP));
}

/// Every mesh is a set of closed, consistently wound surfaces with outward unit normals and unit
/// tangents along the sweep (w = +1).
#[test]
fn meshes_are_closed_outward_and_have_unit_frames() {
    let rig = humanoid();
    for m in &rig.meshes {
        let n = m.vertex_count();
        assert!(m.indices.len() % 3 == 0 && m.indices.iter().all(|&i| (i as usize) < n), "{}", m.name);
        let tangents = m.tangents.as_ref().unwrap();
        let uvs = m.uvs.as_ref().unwrap();
        assert_eq!((m.normals.len(), tangents.len(), uvs.len(), m.material_ids.len()), (n, n, n, n));
        for v in 0..n {
            let (nrm, t) = (m.normals[v], tangents[v]);
            // Normalised in f64 and rounded: length within 2 U of 1 (3 components, each <= U
            // relative). Tangents were made perpendicular in f64: |t . n| <= a few U.
            assert!((nrm.length() - 1.0).abs() <= 4.0 * U, "{} normal {v}", m.name);
            assert!((t.truncate().length() - 1.0).abs() <= 4.0 * U, "{} tangent {v}", m.name);
            assert!(t.truncate().dot(nrm).abs() <= 8.0 * U, "{} tangent {v} not perpendicular", m.name);
            assert_eq!(t.w, 1.0, "{} tangent {v}", m.name);
            assert!((0.0..=1.0).contains(&uvs[v].x) && (0.0..=1.0).contains(&uvs[v].y));
        }
        // Closed and consistently wound: welding vertices by position (the UV seam duplicates
        // positions bit for bit), every directed edge appears once and its reverse once.
        let key = |i: u32| m.positions[i as usize].to_array().map(f32::to_bits);
        let mut edges: HashMap<([u32; 3], [u32; 3]), i32> = HashMap::new();
        for t in m.indices.chunks(3) {
            for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                *edges.entry((key(a), key(b))).or_default() += 1;
            }
        }
        for (&(a, b), &count) in &edges {
            assert_eq!(count, 1, "{}: directed edge used {count} times", m.name);
            assert_eq!(edges.get(&(b, a)), Some(&1), "{}: edge without its twin (open or flipped)", m.name);
        }
        // Outward: each face's normal agrees with its vertices' smooth normals.
        for t in m.indices.chunks(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| m.positions[i as usize]);
            let face = (b - a).cross(c - a);
            let smooth: Vec3 = t.iter().map(|&i| m.normals[i as usize]).sum();
            assert!(face.dot(smooth) > 0.0, "{}: triangle {t:?} faces inwards", m.name);
        }
    }
}

#[test]
fn the_cap_sits_on_the_head_socket() {
    let rig = humanoid();
    let socket = &rig.sockets[0];
    let crown = rig.rest_globals()[HEAD] * socket.local;
    // The socket is on the crown, the body's highest point (1.78 m).
    assert!((translation(&crown) - Vec3::new(0.0, 1.78, 0.01)).length() <= 1e-5, "{crown}");
    // In the socket's space the cap covers the top of the head: a little above the crown, down
    // to about 8 cm below it, the brim reaching forward.
    let (lo, hi) = bounds(&cap(&rig).positions);
    assert!((0.005..0.03).contains(&hi.y), "cap top {}", hi.y);
    assert!((-0.15..-0.05).contains(&lo.y), "cap bottom {}", lo.y);
    assert!(hi.z > 0.12 && lo.z > -0.12, "brim {lo} {hi}");
}

#[test]
fn the_rig_is_deterministic() {
    assert_eq!(humanoid(), humanoid());
    assert_eq!(humanoid_with(&HumanoidParams::default()).unwrap(), humanoid());
}

#[test]
fn keys_are_linear_at_sixty_per_second_and_loops_close() {
    let rig = humanoid();
    for c in &rig.clips {
        assert_eq!(c.start, 0.0);
        assert_eq!(c.channels.len(), COUNT, "{}: hips translation + 24 rotations", c.name);
        assert_eq!(c.channels[0].target, ChannelTarget::Translation(HIPS));
        let keys = c.channels[0].times.len();
        let expected_times: Vec<f32> = (0..keys).map(|k| (k as f64 / 60.0) as f32).collect();
        assert_eq!(c.end, expected_times[keys - 1], "{}", c.name);
        for (i, ch) in c.channels.iter().enumerate() {
            if i > 0 {
                assert_eq!(ch.target, ChannelTarget::Rotation(i), "{}", c.name);
            }
            assert_eq!(ch.interpolation, KeyInterpolation::Linear);
            assert_eq!(ch.times, expected_times, "{} channel {i}", c.name);
            let width = ch.target.components(0);
            assert_eq!(ch.values.len(), keys * width);
            assert!(ch.values.iter().all(|v| v.is_finite()), "{} channel {i}", c.name);
            // Loops close; the one-shot wave starts and ends in the same pose.
            if c.looping == Some(true) || c.name == "wave" {
                assert_eq!(
                    ch.values[..width],
                    ch.values[(keys - 1) * width..],
                    "{} channel {i}: loop",
                    c.name
                );
            }
            if width == 4 {
                for (k, q) in ch.values.chunks(4).enumerate() {
                    // Unit in f64, each component rounded: |q|^2 within 4 (2 U) + 3 U of 1.
                    let len2: f32 = q.iter().map(|x| x * x).sum();
                    assert!((len2 - 1.0).abs() <= 12.0 * U, "{} channel {i} key {k}: |q|^2 = {len2}", c.name);
                }
                for (k, pair) in ch.values.chunks(4).collect::<Vec<_>>().windows(2).enumerate() {
                    let dot: f32 = pair[0].iter().zip(pair[1]).map(|(a, b)| a * b).sum();
                    assert!(
                        dot >= 0.0,
                        "{} channel {i} keys {k}-{}: not hemisphere-continuous",
                        c.name,
                        k + 1
                    );
                }
            }
        }
    }
    for g in GAITS {
        // Each gait's cycle is a whole number of keys, and of frames at 30 fps.
        let keys = g.duration * 60.0;
        assert_eq!(keys, keys.round(), "{}", g.name);
        assert_eq!((g.duration * 30.0).fract(), 0.0, "{}", g.name);
        let clip = rig.clips.iter().find(|c| c.name == g.name).unwrap();
        assert_eq!(clip.end, g.duration as f32);
    }
}

/// Bound on an ankle's f32 global position against the f64 plan, derived from the chain
/// root -> hips -> thigh -> shin -> foot evaluated in f32 (rest offsets are f32 exactly, so the
/// plan and the rig share the skeleton):
/// - three stored rotations (hips, thigh, shin), each rounded per component (<= U relative):
///   <= 2 U of rotation angle and <= 2 U of scale from the non-unit norm, and building each matrix
///   in f32 adds <= 4 U per entry: <= 8 U per rotation, times the lever it moves (at most the
///   whole leg plus the hip offset, < 1 m, summed over the three: < 2.3 m): < 19 U m;
/// - the hips key translation rounded: <= U m (coordinates < 1 m);
/// - four f32 matrix products, each entry a 4-term dot product (<= 4 U relative of terms < 1 m
///   in the translation column, and <= 4 U in the rotation entries that later levers < 2.3 m
///   multiply): <= 4 (4 U m + 4 U * 2.3 m) < 53 U m.
///
/// Total < 73 U m; 80 U is about 4.8 micrometres.
const ANKLE_BOUND: f32 = 80.0 * U;

fn rest_ankles() -> [[f64; 3]; 2] {
    let sk = skeleton::Skeleton::new(1.0);
    [FOOT_L, FOOT_R].map(|j| [sk.pos[j].x, sk.pos[j].y, sk.pos[j].z])
}

#[test]
fn gait_ankles_follow_the_planned_trajectory_at_every_key() {
    let rig = humanoid();
    let rest = rest_ankles();
    let mut worst = 0.0f32;
    for g in GAITS {
        let clip = rig.clips.iter().find(|c| c.name == g.name).unwrap();
        let n = g.key_intervals();
        for k in 0..=n {
            let globals = key_globals(&rig, clip, k);
            let phase = k as f64 / n as f64;
            for (side, foot, r) in [(Side::Left, FOOT_L, rest[0]), (Side::Right, FOOT_R, rest[1])] {
                let plan = Vec3::from_array(g.ankle_target(side, phase % 1.0, r).map(|c| c as f32));
                let err = (translation(&globals[foot]) - plan).abs().max_element();
                worst = worst.max(err);
                assert!(err <= ANKLE_BOUND, "{} key {k} {side:?}: ankle {err} m off the plan", g.name);
            }
        }
    }
    eprintln!("largest ankle deviation from the plan over all gait keys: {worst:e} m");
}

/// The stance half of the trajectory is what fixes the stride: the planted ankle stays on the ground
/// at its rest height and slides backwards at exactly stride / duration.
#[test]
fn planted_feet_slide_back_at_exactly_the_stride_speed() {
    let rig = humanoid();
    let rest = rest_ankles();
    for g in GAITS {
        let clip = rig.clips.iter().find(|c| c.name == g.name).unwrap();
        let n = g.key_intervals();
        let dt = 1.0 / 60.0;
        let mut pairs = 0;
        for (side, foot, r) in [(Side::Left, FOOT_L, rest[0]), (Side::Right, FOOT_R, rest[1])] {
            for k in 0..n {
                let (p0, p1) = (k as f64 / n as f64, (k + 1) as f64 / n as f64);
                // A pair of keys both within the same stance (the stance starts at foot phase 0).
                if !(g.in_stance(side, p0) && g.foot_phase(side, p1 % 1.0) > g.foot_phase(side, p0)) {
                    continue;
                }
                if !g.in_stance(side, p1 % 1.0) {
                    continue;
                }
                let a = translation(&key_globals(&rig, clip, k)[foot]);
                let b = translation(&key_globals(&rig, clip, k + 1)[foot]);
                // Both ends within ANKLE_BOUND of the plan, which moves exactly -speed * dt.
                let speed = f64::from(b.z - a.z) / dt;
                let tol = 2.0 * f64::from(ANKLE_BOUND) / dt;
                assert!((speed + g.speed()).abs() <= tol, "{} {side:?} key {k}: {speed} m/s", g.name);
                assert!((f64::from(a.y) - r[1]).abs() <= f64::from(ANKLE_BOUND), "{} lifted", g.name);
                assert!(
                    (f64::from(b.x - a.x)).abs() <= 2.0 * f64::from(ANKLE_BOUND),
                    "{} slid sideways",
                    g.name
                );
                pairs += 1;
            }
        }
        // Every stance key pair of both feet: stance * keys - 1 pairs per foot, give or take one.
        let per_foot = g.stance * n as f64;
        assert!(pairs as f64 >= 2.0 * (per_foot - 2.0), "{}: only {pairs} planted pairs", g.name);
        // The stride the clip claims is the distance covered at that speed in one cycle.
        let clip_stride = f64::from(clip.known_stride.unwrap());
        assert!((g.speed() * f64::from(clip.end) - clip_stride).abs() <= 1e-6, "{}", g.name);
    }
}

#[test]
fn standing_clips_keep_the_feet_planted() {
    let rig = humanoid();
    for name in ["idle", "wave", "look_around"] {
        let clip = rig.clips.iter().find(|c| c.name == name).unwrap();
        let first = key_globals(&rig, clip, 0);
        for k in 1..clip.channels[0].times.len() {
            let g = key_globals(&rig, clip, k);
            for foot in [FOOT_L, FOOT_R] {
                let drift = (translation(&g[foot]) - translation(&first[foot])).abs().max_element();
                // Both keys within ANKLE_BOUND of the same planted target.
                assert!(drift <= 2.0 * ANKLE_BOUND, "{name} key {k}: foot {foot} drifted {drift} m");
            }
        }
    }
}

/// Knees bend forward (towards the pole, +Z) and never lock straight.
#[test]
fn knees_bend_forward() {
    let rig = humanoid();
    for clip in &rig.clips {
        for k in 0..clip.channels[0].times.len() {
            let g = key_globals(&rig, clip, k);
            for (thigh, shin, foot) in [(THIGH_L, SHIN_L, FOOT_L), (THIGH_R, SHIN_R, FOOT_R)] {
                let (h, kn, a) = (translation(&g[thigh]), translation(&g[shin]), translation(&g[foot]));
                let line = (a - h).normalize();
                let off = (kn - h) - line * (kn - h).dot(line);
                // At LEG_REACH = 0.995 the knee stands >= ~1.5 cm off the hip-ankle line.
                assert!(off.z > 0.01, "{} key {k}: knee {thigh} off the line by {off}", clip.name);
            }
        }
    }
}

#[test]
fn height_scales_the_whole_rig_and_the_strides() {
    let rig = humanoid_with(&HumanoidParams { height: 1.5 }).unwrap();
    let (lo, hi) = bounds(&body(&rig).positions);
    assert!((hi.y - 1.5).abs() <= 1e-5 && lo.y.abs() <= 1e-6, "{lo} {hi}");
    let scale = 1.5 / f64::from(REFERENCE_HEIGHT);
    for g in GAITS {
        let clip = rig.clips.iter().find(|c| c.name == g.name).unwrap();
        assert_eq!(clip.known_stride, Some((g.stride * scale) as f32));
    }
    for bad in [0.0, -1.0, 0.49, 3.01, f32::NAN, f32::INFINITY] {
        let err = humanoid_with(&HumanoidParams { height: bad }).unwrap_err();
        assert!(matches!(err, BakeError::InvalidInput { .. }) && err.to_string().contains("height"), "{err}");
    }
}
