//! Root-motion extraction (`--root-motion`, [`crate::prepare::BakeOptions::root_motion`]): each
//! clip's horizontal translation and yaw, measured from the baked vertices themselves (no bone is
//! named or trusted), stored as a [`RootMotionTrack`] and removed from the frames so that they are
//! baked in place.
//!
//! # Extraction
//! For frame `k` of a clip, with `q_i` the skinned positions of frame `k` and `p_i` those of the
//! clip's first frame, both projected on the ground plane (x, z), the pose `T_k` (yaw `θ`, then
//! translation `t`, see [`vat_core::root_motion`]) is the weighted least-squares rigid fit of the
//! `p_i` onto the `q_i` (a 2-D Procrustes / Kabsch fit, in `f64`):
//! `θ = atan2(Σ w_i (p_z q_x - p_x q_z), Σ w_i (p_x q_x + p_z q_z))` over the positions centred on
//! their weighted centroids `c`, and `t = c_q - R_y(θ) c_p`. The weights `w_i` are a robust
//! choice of the vertices that move with the body rather than within it (see
//! `rigidity_weights`: limbs swinging about the body count little), the same for every frame. Yaws are unwrapped from frame to frame, so a
//! clip may turn more than half a turn. A looping clip's [`RootMotionTrack::cycle`] is the fit of
//! the source's pose at the clip's end (the next cycle's first frame); a one-shot clip's is its last
//! frame's.
//!
//! # In place
//! Frame `k` is then baked as `T_k^-1` applied to every vertex: the inverse is multiplied into
//! every skinning matrix of the frame (and every node matrix, so the bone texture and capture
//! tracks are in place too). Linear blend skinning is linear in the matrices, so this is the
//! source's frame moved by `T_k^-1` up to `f32` rounding; [`crate::verify`] checks it.

use glam::{Mat4, Quat, Vec3};
use rayon::prelude::*;
use vat_core::clip::{Clip, ClipMode};
use vat_core::root_motion::{RootMotionTrack, RootPose};

use crate::rig::{Channel, ChannelTarget, KeyInterpolation, Rig};
use crate::sample::{global_matrices, sample_pose};
use crate::skin::{self, FramePose, SkinPlan, VertexSet};
use crate::{BakeError, Result};

/// The least-squares rigid motion of the ground plane (yaw about +Y, then a translation in x, z)
/// that carries `reference` onto `frame` (same vertices, same order; only x and z are used), in
/// `f64`, every vertex weighted alike: [`fit_root_pose_weighted`] with no weights.
pub fn fit_root_pose(reference: &[[f32; 3]], frame: &[[f32; 3]]) -> Option<RootPose> {
    fit_root_pose_weighted(reference, frame, None)
}

/// [`fit_root_pose`] with a weight `>= 0` per vertex (`None`: all 1): the weighted 2-D Procrustes
/// fit of the [module documentation](self) (weighted centroids, weighted sums). `None` when the
/// slices are empty or of different lengths, the weights sum to 0, or a value is not finite.
pub fn fit_root_pose_weighted(
    reference: &[[f32; 3]],
    frame: &[[f32; 3]],
    weights: Option<&[f64]>,
) -> Option<RootPose> {
    if reference.is_empty()
        || reference.len() != frame.len()
        || weights.is_some_and(|w| w.len() != frame.len())
    {
        return None;
    }
    let w = |i: usize| weights.map_or(1.0, |w| w[i]);
    let total: f64 = (0..reference.len()).map(w).sum();
    if !(total > 0.0 && total.is_finite()) {
        return None;
    }
    let centroid = |ps: &[[f32; 3]]| {
        let (x, z) = ps.iter().enumerate().fold((0.0f64, 0.0f64), |(x, z), (i, p)| {
            (x + w(i) * f64::from(p[0]), z + w(i) * f64::from(p[2]))
        });
        (x / total, z / total)
    };
    let (cpx, cpz) = centroid(reference);
    let (cqx, cqz) = centroid(frame);
    let (mut a, mut b) = (0.0f64, 0.0f64);
    for (i, (p, q)) in reference.iter().zip(frame).enumerate() {
        let (px, pz) = (f64::from(p[0]) - cpx, f64::from(p[2]) - cpz);
        let (qx, qz) = (f64::from(q[0]) - cqx, f64::from(q[2]) - cqz);
        a += w(i) * (px * qx + pz * qz);
        b += w(i) * (pz * qx - px * qz);
    }
    let yaw = if a == 0.0 && b == 0.0 { 0.0 } else { b.atan2(a) };
    let (s, c) = yaw.sin_cos();
    let x = cqx - (c * cpx + s * cpz);
    let z = cqz - (c * cpz - s * cpx);
    let pose = RootPose { x: x as f32, z: z as f32, yaw: yaw as f32 };
    pose.is_finite().then_some(pose)
}

/// Per-vertex weights of a clip's fit from `sums`, per vertex `(Σ d, Σ d²)` over the clip's
/// `frames` of a distance `d` that a rigid motion of the frame leaves unchanged: first the vertex's
/// horizontal distance to its frame's centroid, then (reweighting, [`REWEIGHTINGS`] times) its
/// distance to where the frame's fitted rigid motion puts it. Its standard deviation (first) or root
/// mean square (then) `σ_i` measures how much the vertex moves *within* the body (a swinging foot:
/// tens of centimetres; the torso: millimetres). Weight `1 / (1 + (σ_i / s)^2)^2` with `s` the
/// 10th percentile of the `σ_i` (the body's most rigid tenth sets the scale), all 1 when `s` is 0.
/// Without them a walk's legs and arms, swapping front and back every half cycle, look like a
/// turn of the body (a plain fit of the procedural walk turns by half a turn mid-cycle; weighted,
/// it follows the hips' few degrees of sway). The weights are unchanged by a rigid motion of any
/// frame, so the fit stays equivariant: a clip moved by a known motion extracts that motion
/// composed with its own.
fn rigidity_weights(sums: &[(f64, f64)], frames: usize) -> Vec<f64> {
    let n = frames.max(1) as f64;
    let sigma: Vec<f64> = sums
        .iter()
        .map(|&(s, s2)| {
            let mean = s / n;
            (s2 / n - mean * mean).max(0.0).sqrt()
        })
        .collect();
    let mut sorted = sigma.clone();
    sorted.sort_by(f64::total_cmp);
    let scale = sorted.get(sorted.len() / 10).copied().unwrap_or(0.0);
    if !(scale > 0.0 && scale.is_finite()) {
        return vec![1.0; sigma.len()];
    }
    sigma
        .iter()
        .map(|&s| {
            let r = s / scale;
            1.0 / ((1.0 + r * r) * (1.0 + r * r))
        })
        .collect()
}

/// Horizontal distance of every vertex to the (unweighted) centroid of its frame, metres.
fn centroid_distances(positions: &[[f32; 3]]) -> Vec<f64> {
    let n = positions.len().max(1) as f64;
    let (cx, cz) =
        positions.iter().fold((0.0f64, 0.0f64), |(x, z), p| (x + f64::from(p[0]), z + f64::from(p[2])));
    let (cx, cz) = (cx / n, cz / n);
    positions.iter().map(|p| (f64::from(p[0]) - cx).hypot(f64::from(p[2]) - cz)).collect()
}

/// Times the weights are recomputed from the fit's residuals ([`rigidity_weights`]).
const REWEIGHTINGS: usize = 4;

/// Frames whose centroid distances are computed together (in parallel) before they are summed in
/// frame order: the sums, hence the bake, do not depend on the thread count.
const DISTANCE_BLOCK: usize = 16;

/// `yaw` moved by whole turns to lie within half a turn of `previous`.
fn unwrap_yaw(previous: f32, yaw: f32) -> f32 {
    let tau = std::f64::consts::TAU;
    let d = f64::from(yaw) - f64::from(previous);
    (f64::from(yaw) - tau * (d / tau).round()) as f32
}

/// The 4x4 matrix of `pose` (`R_y(yaw)`, then the translation).
pub fn pose_matrix(pose: &RootPose) -> Mat4 {
    Mat4::from_rotation_translation(Quat::from_rotation_y(pose.yaw), Vec3::new(pose.x, 0.0, pose.z))
}

/// The positions of one frame, skinned.
fn skin_positions(set: &VertexSet, plan: &SkinPlan, pose: &FramePose) -> Vec<[f32; 3]> {
    let n = set.vertex_count();
    let mut p = vec![[0.0f32; 3]; n];
    let mut nrm = vec![[0.0f32; 3]; n];
    skin::skin_frame_into(set, plan, pose, &mut p, &mut nrm, None);
    p
}

/// Extracts the track of baked clip `clip_index` (`clip` in the row map, from rig clip `source`),
/// whose frames are `poses` (the clip's own, in order), then makes those frames in place (and the
/// matching node matrices in `globals`, when given: one per frame). Returns the track.
#[allow(clippy::too_many_arguments)]
pub(crate) fn extract_clip(
    rig: &Rig,
    set: &VertexSet,
    plan: &SkinPlan,
    clip_index: u32,
    clip: &Clip,
    source: usize,
    poses: &mut [FramePose],
    globals: Option<&mut [Vec<Mat4>]>,
) -> Result<RootMotionTrack> {
    let bad = |what: &str| BakeError::InvalidInput {
        part: format!("clip \"{}\"", clip.name),
        problem: format!(
            "no root motion can be fitted to its {what} (no vertices, or a non-finite position)"
        ),
    };
    let Some(first) = poses.first() else {
        return Err(bad("frames"));
    };
    let reference = skin_positions(set, plan, first);
    let src = rig.clips.get(source).ok_or_else(|| bad("source clip"))?;
    // A looping clip's end pose (the next cycle's first frame), fitted like a frame.
    let end = (clip.mode == ClipMode::Looping && src.duration() > 0.0).then(|| {
        let pose = sample_pose(rig, src, src.end);
        let g = global_matrices(rig, &pose);
        FramePose::new(rig, set, pose, &g)
    });
    // Rigidity weights from every frame's centroid distances, summed in frame order.
    let all: Vec<&FramePose> = poses.iter().chain(end.as_ref()).collect();
    let mut sums = vec![(0.0f64, 0.0f64); reference.len()];
    for block in all.chunks(DISTANCE_BLOCK) {
        let distances: Vec<Vec<f64>> =
            block.par_iter().map(|p| centroid_distances(&skin_positions(set, plan, p))).collect();
        for d in &distances {
            for (acc, &v) in sums.iter_mut().zip(d) {
                acc.0 += v;
                acc.1 += v * v;
            }
        }
    }
    let mut weights = rigidity_weights(&sums, all.len());
    // Reweighted: each vertex by how far it strays from the frames' fitted rigid motion (its
    // residual's root mean square over the clip), a few times over.
    for _ in 0..REWEIGHTINGS {
        let mut sums = vec![(0.0f64, 0.0f64); reference.len()];
        for block in all.chunks(DISTANCE_BLOCK) {
            let residuals: Vec<Option<Vec<f64>>> = block
                .par_iter()
                .map(|p| {
                    let q = skin_positions(set, plan, p);
                    let t = fit_root_pose_weighted(&reference, &q, Some(&weights))?;
                    Some(
                        reference
                            .iter()
                            .zip(&q)
                            .map(|(r, q)| {
                                let m = t.apply_point(*r);
                                (f64::from(q[0]) - f64::from(m[0])).hypot(f64::from(q[2]) - f64::from(m[2]))
                            })
                            .collect(),
                    )
                })
                .collect();
            for r in residuals {
                let r = r.ok_or_else(|| bad("frames"))?;
                for (acc, &v) in sums.iter_mut().zip(&r) {
                    acc.1 += v * v;
                }
            }
        }
        weights = rigidity_weights(&sums, all.len());
    }
    let fit =
        |p: &FramePose| fit_root_pose_weighted(&reference, &skin_positions(set, plan, p), Some(&weights));
    let raw: Vec<Option<RootPose>> = poses.par_iter().skip(1).map(fit).collect();
    let mut frames = Vec::with_capacity(poses.len());
    frames.push(RootPose::IDENTITY);
    for pose in raw {
        let mut pose = pose.ok_or_else(|| bad("frames"))?;
        pose.yaw = unwrap_yaw(frames.last().map_or(0.0, |p: &RootPose| p.yaw), pose.yaw);
        frames.push(pose);
    }
    let last = frames.last().copied().unwrap_or(RootPose::IDENTITY);
    let src = rig.clips.get(source).ok_or_else(|| bad("source clip"))?;
    let cycle = if clip.mode == ClipMode::OneShot || src.duration() <= 0.0 {
        if clip.mode == ClipMode::OneShot { last } else { RootPose::IDENTITY }
    } else {
        let pose = sample_pose(rig, src, src.end);
        let g = global_matrices(rig, &pose);
        let end = FramePose::new(rig, set, pose, &g);
        let mut c =
            fit_root_pose(&reference, &skin_positions(set, plan, &end)).ok_or_else(|| bad("end pose"))?;
        c.yaw = unwrap_yaw(last.yaw, c.yaw);
        c
    };
    let track = RootMotionTrack { clip: clip_index, frames, cycle };
    make_in_place(&track, poses, globals);
    Ok(track)
}

/// The track of baked clip `clip_index` (`clip`, from rig clip `source`) fitted to its frames
/// `poses`, as the bake fits it, without changing them: what [`crate::verify`] recomputes from
/// the source to check a stored track.
pub(crate) fn fit_track(
    rig: &Rig,
    set: &VertexSet,
    plan: &SkinPlan,
    clip_index: u32,
    clip: &Clip,
    source: usize,
    poses: &[FramePose],
) -> Result<RootMotionTrack> {
    let mut copy = poses.to_vec();
    extract_clip(rig, set, plan, clip_index, clip, source, &mut copy, None)
}

/// Frame `k` of `poses` (and of `globals`, when given) premultiplied by `T_k^-1`, `T_k` the
/// track's pose of that frame.
fn make_in_place(track: &RootMotionTrack, poses: &mut [FramePose], globals: Option<&mut [Vec<Mat4>]>) {
    let frames = &track.frames;
    let inverses: Vec<Mat4> = frames.iter().map(|p| pose_matrix(p).inverse()).collect();
    poses.par_iter_mut().zip(&inverses).skip(1).for_each(|(pose, inv)| {
        for m in &mut pose.bones {
            *m = *inv * *m;
        }
    });
    if let Some(globals) = globals {
        globals.par_iter_mut().zip(&inverses).skip(1).for_each(|(frame, inv)| {
            for m in frame.iter_mut() {
                *m = *inv * *m;
            }
        });
    }
}

/// The note of a clip's extraction (one line of [`crate::prepare::BakeStats::notes`]).
pub(crate) fn note(clip: &Clip, track: &RootMotionTrack, stride_from_track: bool) -> String {
    let per = if clip.mode == ClipMode::Looping { "per cycle" } else { "start to end" };
    format!(
        "root motion of clip \"{}\": {:.3} m and {:.2} deg of yaw {per} (x {:.3} m, z {:.3} m), baked in place{}",
        clip.name,
        track.cycle.distance(),
        track.cycle.yaw.to_degrees(),
        track.cycle.x,
        track.cycle.z,
        if stride_from_track {
            format!("; stride {:.3} m from the track", clip.stride)
        } else if clip.stride > 0.0 {
            format!("; it travels less than 1 % of its width per cycle: stride {:.3} m kept", clip.stride)
        } else {
            String::new()
        }
    )
}

/// Gives clip `clip` of `rig` a known root motion: the rig's root node (the first node without a
/// parent) gets translation and rotation channels, keyed at `keys_per_second` over the clip, that
/// move the whole character by `motion(t)` (`t` seconds from the clip's start) on top of its own
/// animation. A fixture for tests and demos of root-motion extraction: an in-place clip becomes
/// one that travels and turns by a known amount.
///
/// # Errors
/// [`BakeError::InvalidInput`] when `clip` is not a clip of the rig, the rig has no root node, the
/// clip already animates the root's translation or rotation, or `keys_per_second` is not finite and
/// `> 0`.
pub fn add_root_motion(
    rig: &mut Rig,
    clip: usize,
    keys_per_second: f32,
    motion: impl Fn(f32) -> RootPose,
) -> Result<()> {
    let invalid =
        |problem: &str| BakeError::InvalidInput { part: format!("clip {clip}"), problem: problem.into() };
    if !(keys_per_second.is_finite() && keys_per_second > 0.0) {
        return Err(invalid("keys per second must be finite and > 0"));
    }
    let root = rig
        .nodes
        .iter()
        .position(|n| n.parent.is_none())
        .ok_or_else(|| invalid("the rig has no root node"))?;
    let rest = rig.nodes[root].rest;
    let c = rig.clips.get_mut(clip).ok_or_else(|| invalid("no such clip"))?;
    if c.channels.iter().any(
        |ch| matches!(ch.target, ChannelTarget::Translation(n) | ChannelTarget::Rotation(n) if n == root),
    ) {
        return Err(invalid("the clip already animates its root node"));
    }
    let keys = ((c.duration() * keys_per_second).ceil() as usize).max(1);
    let times: Vec<f32> =
        (0..=keys).map(|k| c.start + (f64::from(c.duration()) * k as f64 / keys as f64) as f32).collect();
    let (mut translations, mut rotations) = (Vec::new(), Vec::new());
    for &t in &times {
        let m = motion(t - c.start);
        let q = Quat::from_rotation_y(m.yaw);
        // root' = M * root: T(d) R_y T(t_rest) R_rest = T(d + R_y t_rest) (R_y R_rest).
        translations.extend((Vec3::new(m.x, 0.0, m.z) + q * rest.translation).to_array());
        rotations.extend((q * rest.rotation).normalize().to_array());
    }
    c.channels.push(Channel {
        target: ChannelTarget::Translation(root),
        interpolation: KeyInterpolation::Linear,
        times: times.clone(),
        values: translations,
    });
    c.channels.push(Channel {
        target: ChannelTarget::Rotation(root),
        interpolation: KeyInterpolation::Linear,
        times,
        values: rotations,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    // Tests unwrap: a failure is the test failing.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::lods::LodOptions;
    use crate::prepare::{BakeOptions, prepare, prepare_batch};
    use crate::verify::verify;
    use vat_core::container::{Asset, container_bytes};
    use vat_core::format::encoding::position_error_bound;

    /// The motion added to the walk: 1.2 m/s forward-right while turning 0.4 rad/s.
    fn added(t: f32) -> RootPose {
        RootPose { x: 0.3 * t, z: 1.2 * t, yaw: 0.4 * t }
    }

    fn walk_options(root_motion: bool) -> BakeOptions {
        BakeOptions {
            clips: Some(vec!["walk".into(), "wave".into()]),
            lods: LodOptions::Count(1),
            root_motion,
            ..BakeOptions::default()
        }
    }

    /// The humanoid with [`added`] on its walk (clip 1).
    fn travelling() -> Rig {
        let mut rig = crate::procgen::humanoid();
        let walk = rig.clips.iter().position(|c| c.name == "walk").unwrap();
        add_root_motion(&mut rig, walk, 60.0, added).unwrap();
        rig
    }

    /// The largest per-axis position bound of a bake's format in its box, metres.
    fn quantum(m: &vat_core::container::Manifest) -> f32 {
        let va = m.vertex_animation.as_ref().unwrap();
        position_error_bound(va.format, va.position_bits, &va.bounds).into_iter().fold(0.0, f32::max)
    }

    #[test]
    fn the_fit_recovers_a_rigid_motion_of_the_ground_plane() {
        let reference: Vec<[f32; 3]> = (0..50)
            .map(|i| [(i as f32 * 0.37).sin(), i as f32 * 0.02, (i as f32 * 0.91).cos() * 0.5])
            .collect();
        for motion in [RootPose { x: 0.7, z: -2.0, yaw: 2.9 }, RootPose { x: -0.1, z: 0.05, yaw: -0.3 }] {
            let moved: Vec<[f32; 3]> = reference.iter().map(|&p| motion.apply_point(p)).collect();
            let fit = fit_root_pose(&reference, &moved).unwrap();
            // f32 rounding of the moved points (a few units of 2^-24 of coordinates below 3 m).
            let tol = 16.0 * 3.0 * f32::EPSILON;
            assert!((fit.x - motion.x).abs() <= tol && (fit.z - motion.z).abs() <= tol, "{fit:?} {motion:?}");
            assert!((fit.yaw - motion.yaw).abs() <= tol, "{fit:?} {motion:?}");
        }
        assert_eq!(fit_root_pose(&[], &[]), None);
        assert_eq!(fit_root_pose(&reference, &reference[1..]), None);
        assert_eq!(unwrap_yaw(3.0, -3.1), (-3.1f64 + std::f64::consts::TAU) as f32);
    }

    /// The walk with a known motion added: the extracted track is that motion composed with the
    /// in-place walk's own (its centroid sways), within the format's position bound (and the yaw
    /// within that bound over the body's horizontal reach); the frames are in place (the box is the
    /// in-place walk's, not the travelled path's); the stride is the distance per cycle; verify
    /// passes, and fails once the track is tampered with.
    #[test]
    fn the_walk_s_added_motion_is_recovered_and_baked_in_place() {
        let original = prepare(&crate::procgen::humanoid(), &walk_options(true)).unwrap();
        let moving_rig = travelling();
        let moving = prepare(&moving_rig, &walk_options(true)).unwrap();
        let (m0, m1) = (original.manifest(), moving.manifest());
        assert_eq!(m1.root_motion.len(), 2);
        let bound = quantum(m1);
        let va = m1.vertex_animation.as_ref().unwrap();
        let reach = (0..3)
            .filter(|&a| a != 1)
            .map(|a| va.bounds.min[a].abs().max((va.bounds.min[a] + va.bounds.extent[a]).abs()))
            .fold(0.0f32, f32::max);
        let yaw_bound = bound / reach;
        let walk = m1.clips.iter().position(|c| c.name == "walk").unwrap();
        let clip = &m1.clips[walk];
        let (t0, t1) = (&m0.root_motion[walk], &m1.root_motion[walk]);
        let check = |expected: RootPose, got: RootPose, what: &str| {
            assert!(
                (expected.x - got.x).abs() <= bound
                    && (expected.z - got.z).abs() <= bound
                    && (expected.yaw - got.yaw).abs() <= yaw_bound,
                "{what}: expected {expected:?}, extracted {got:?} (bounds {bound} m, {yaw_bound} rad)"
            );
        };
        for k in 0..clip.frame_count as usize {
            let t = k as f32 / clip.fps;
            check(added(t).then_local(&t0.frames[k]), t1.frames[k], &format!("frame {k}"));
        }
        check(added(clip.duration).then_local(&t0.cycle), t1.cycle, "cycle");
        // The in-place walk hardly moves per cycle: its stride stays the one its feet measure.
        assert!(t0.cycle.distance() < 0.01, "{:?}", t0.cycle);
        // Nor does it turn: its hips sway by 6 degrees; a plain (unweighted) fit would see the legs
        // swap front and back as a half turn.
        let max_yaw = t0.frames.iter().map(|p| p.yaw.abs()).fold(0.0f32, f32::max);
        assert!(max_yaw.to_degrees() < 10.0, "{max_yaw}");
        assert_eq!(m0.clips[walk].stride, 1.4);
        assert_eq!(clip.stride, t1.cycle.distance());
        assert!((clip.stride - 1.2369).abs() < 0.05, "{}", clip.stride);
        // In place: the travelling bake's box is the in-place walk's (within both quantisations),
        // while without root motion it spans the path walked.
        let b0 = m0.vertex_animation.as_ref().unwrap().bounds;
        for a in 0..3 {
            assert!(
                (va.bounds.extent[a] - b0.extent[a]).abs() <= 2.0 * bound,
                "axis {a}: {:?} {:?}",
                va.bounds,
                b0
            );
        }
        let plain = prepare(&moving_rig, &walk_options(false)).unwrap();
        assert!(plain.manifest().root_motion.is_empty());
        let travelled = plain.manifest().vertex_animation.as_ref().unwrap().bounds.extent[2];
        assert!(travelled > b0.extent[2] + 0.5 * t1.cycle.distance(), "{travelled} vs {:?}", b0);
        // One note per clip.
        assert_eq!(moving.stats.notes.iter().filter(|n| n.starts_with("root motion of clip")).count(), 2);

        let bytes = moving.to_vat_bytes().unwrap();
        let report = verify(&Asset::parse(&bytes).unwrap(), &moving_rig).unwrap();
        assert!(report.passed, "{:?}", report.failures);
        let root = report.paths.iter().find(|p| p.path == "root").unwrap();
        assert!(root.passed && root.max_error_mm <= root.bound_mm, "{root:?}");
        // The same frames without their track do not reproduce the source.
        let asset = Asset::parse(&bytes).unwrap();
        let blobs: Vec<&[u8]> = (0..asset.manifest().blobs.len() as u32)
            .map(|i| asset.blob(vat_core::container::BlobId(i)))
            .collect();
        let mut tampered = asset.manifest().clone();
        tampered.root_motion[walk].frames[5].z += 10.0 * bound;
        let bad = container_bytes(tampered, &blobs).unwrap();
        let report = verify(&Asset::parse(&bad).unwrap(), &moving_rig).unwrap();
        assert!(!report.passed);
        assert!(report.failures.iter().any(|f| f.starts_with("vat:")), "{:?}", report.failures);
        let mut yawed = asset.manifest().clone();
        yawed.root_motion[walk].frames[7].yaw += 10.0 * yaw_bound;
        let bad = container_bytes(yawed, &blobs).unwrap();
        assert!(!verify(&Asset::parse(&bad).unwrap(), &moving_rig).unwrap().passed);
        // A wrong cycle (which only the crowd uses) fails the root path.
        let mut cycled = asset.manifest().clone();
        cycled.root_motion[walk].cycle.z += 10.0 * bound;
        let bad = container_bytes(cycled, &blobs).unwrap();
        let report = verify(&Asset::parse(&bad).unwrap(), &moving_rig).unwrap();
        assert!(!report.passed);
        assert!(report.failures.iter().any(|f| f.starts_with("root:")), "{:?}", report.failures);
    }

    /// A source that does not say whether its travelling walk loops: by its seam it does once the
    /// root motion is taken out, and does not otherwise (its last pose is 1.2 m from its first).
    #[test]
    fn a_travelling_loop_is_found_looping_by_its_in_place_seam() {
        let mut rig = travelling();
        for c in &mut rig.clips {
            c.looping = None;
        }
        let options = |root_motion| BakeOptions {
            clips: Some(vec!["walk".into()]),
            lods: LodOptions::Count(1),
            root_motion,
            ..BakeOptions::default()
        };
        let with = prepare(&rig, &options(true)).unwrap();
        assert_eq!(with.manifest().clips[0].mode, ClipMode::Looping, "{:?}", with.stats.clip_looping);
        let without = prepare(&rig, &options(false)).unwrap();
        assert_eq!(without.manifest().clips[0].mode, ClipMode::OneShot, "{:?}", without.stats.clip_looping);
    }

    #[test]
    fn root_motion_is_refused_in_a_batch_and_on_an_animated_root() {
        let rig = crate::procgen::humanoid();
        let err = prepare_batch(std::slice::from_ref(&rig), &walk_options(true)).unwrap_err();
        assert!(matches!(err, BakeError::InvalidOption { option: "--root-motion", .. }), "{err}");
        let mut twice = travelling();
        let walk = twice.clips.iter().position(|c| c.name == "walk").unwrap();
        assert!(matches!(
            add_root_motion(&mut twice, walk, 60.0, added),
            Err(BakeError::InvalidInput { .. })
        ));
        assert!(add_root_motion(&mut twice, 99, 60.0, added).is_err());
        assert!(add_root_motion(&mut twice, 0, f32::NAN, added).is_err());
    }
}
