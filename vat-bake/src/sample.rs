//! Evaluating clips: keyframe interpolation (glTF 2.0 STEP, LINEAR, CUBICSPLINE), poses, and the
//! global joint matrices they give.
//!
//! Times are absolute clip times in seconds, on the same time base as the channels' key times (a clip
//! spans `clip.start..=clip.end`; exporters often start at 0.04 s, not 0). Interpolation is computed
//! in f64 and rounded once to f32, so a sample is as close to the exact interpolant of the f32 keys as
//! f32 allows; at a time exactly equal to a key time the key's value is returned bit for bit (glTF
//! export / re-import round trips stay exact).

use glam::{Mat4, Quat, Vec3};

use crate::rig::{AnimationClip, Channel, ChannelTarget, KeyInterpolation, Rig, Transform};
use crate::{BakeError, Result};

/// The value of `channel` at `time` (seconds, absolute), written to `out`.
///
/// `out.len()` is the component count per key: 3 (translation, scale), 4 (rotation, xyzw) or the
/// driven mesh's morph target count. Before the first key the first key's value is returned, after
/// the last key the last key's value; at a key time the key's value exactly (bitwise).
/// - `Step` holds each key until the next.
/// - `Linear` interpolates linearly; rotations use shortest-path slerp (the far key is negated when
///   the quaternions' dot product is negative), normalised.
/// - `CubicSpline` is the glTF 2.0 Hermite spline (values laid out `[in_tangent, value, out_tangent]`
///   per key, tangents scaled by the key interval); rotations are normalised after.
///
/// A channel with no keys, or whose `values` are shorter than its keys need, leaves `out` unchanged
/// ([`validate_clip`] rejects such channels with a typed error). A NaN `time` gives the first key.
pub fn evaluate_channel(channel: &Channel, time: f32, out: &mut [f32]) {
    let components = out.len();
    let keys = channel.times.len();
    let per_key = match channel.interpolation {
        KeyInterpolation::CubicSpline => 3 * components,
        KeyInterpolation::Step | KeyInterpolation::Linear => components,
    };
    // Offset of key `k`'s value within `values`.
    let value_at = |k: usize| match channel.interpolation {
        KeyInterpolation::CubicSpline => k * per_key + components,
        KeyInterpolation::Step | KeyInterpolation::Linear => k * per_key,
    };
    if keys == 0 || components == 0 || channel.values.len() < keys * per_key {
        return;
    }
    let values = &channel.values;
    // First key strictly after `time`: key `next - 1` is at or before it.
    let next = channel.times.partition_point(|&t| t <= time);
    let copy_key = |k: usize, out: &mut [f32]| {
        let at = value_at(k);
        out.copy_from_slice(&values[at..at + components]);
    };
    if next == 0 {
        copy_key(0, out);
        return;
    }
    let k = next - 1;
    // At or past the last key, exactly on a key (bitwise key value), or Step: hold key `k`.
    if next == keys || channel.times[k] == time || channel.interpolation == KeyInterpolation::Step {
        copy_key(k, out);
        return;
    }
    let t0 = f64::from(channel.times[k]);
    let t1 = f64::from(channel.times[next]);
    let td = t1 - t0;
    let s = ((f64::from(time) - t0) / td).clamp(0.0, 1.0);
    let a = value_at(k);
    let b = value_at(next);
    let is_rotation = matches!(channel.target, ChannelTarget::Rotation(_)) && components == 4;
    match channel.interpolation {
        KeyInterpolation::Step => copy_key(k, out),
        KeyInterpolation::Linear if is_rotation => {
            let qa = quat_f64(&values[a..a + 4]);
            let qb = quat_f64(&values[b..b + 4]);
            write_f64(&slerp_f64(qa, qb, s), out);
        }
        KeyInterpolation::Linear => {
            for (c, o) in out.iter_mut().enumerate() {
                let va = f64::from(values[a + c]);
                let vb = f64::from(values[b + c]);
                *o = (va + (vb - va) * s) as f32;
            }
        }
        KeyInterpolation::CubicSpline => {
            // glTF 2.0 spec, appendix C: p(s) = h00 v_k + h10 td b_k + h01 v_k+1 + h11 td a_k+1, where
            // b_k is key k's out-tangent and a_k+1 key k+1's in-tangent.
            let s2 = s * s;
            let s3 = s2 * s;
            let h00 = 2.0 * s3 - 3.0 * s2 + 1.0;
            let h10 = s3 - 2.0 * s2 + s;
            let h01 = -2.0 * s3 + 3.0 * s2;
            let h11 = s3 - s2;
            let out_tangent = a + components;
            let in_tangent = b - components;
            let mut spline = [0.0f64; 4];
            let eval = |c: usize| {
                h00 * f64::from(values[a + c])
                    + h10 * td * f64::from(values[out_tangent + c])
                    + h01 * f64::from(values[b + c])
                    + h11 * td * f64::from(values[in_tangent + c])
            };
            if is_rotation {
                for (c, v) in spline.iter_mut().enumerate() {
                    *v = eval(c);
                }
                let len = spline.iter().map(|v| v * v).sum::<f64>().sqrt();
                if len > 0.0 && len.is_finite() {
                    for (o, v) in out.iter_mut().zip(spline) {
                        *o = (v / len) as f32;
                    }
                } else {
                    // A spline through zero has no rotation: hold the earlier key.
                    copy_key(k, out);
                }
            } else {
                for (c, o) in out.iter_mut().enumerate() {
                    *o = eval(c) as f32;
                }
            }
        }
    }
}

fn quat_f64(v: &[f32]) -> [f64; 4] {
    [f64::from(v[0]), f64::from(v[1]), f64::from(v[2]), f64::from(v[3])]
}

fn write_f64(v: &[f64; 4], out: &mut [f32]) {
    for (o, x) in out.iter_mut().zip(v) {
        *o = *x as f32;
    }
}

/// Shortest-path slerp in f64, normalised. The angle comes from `atan2(|a - b|, |a + b|)`, which is
/// well conditioned at small angles (unlike `acos(dot)`), so near-equal keys interpolate accurately.
fn slerp_f64(a: [f64; 4], mut b: [f64; 4], s: f64) -> [f64; 4] {
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    if dot < 0.0 {
        for x in &mut b {
            *x = -*x;
        }
    }
    let norm = |v: [f64; 4]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let na = norm(a);
    let nb = norm(b);
    if na == 0.0 || nb == 0.0 || !na.is_finite() || !nb.is_finite() {
        return if s < 0.5 { a } else { b };
    }
    let ua = a.map(|x| x / na);
    let ub = b.map(|x| x / nb);
    let diff = norm(std::array::from_fn(|i| ua[i] - ub[i]));
    let sum = norm(std::array::from_fn(|i| ua[i] + ub[i]));
    // Half the angle between the two unit 4-vectors is atan2(|a - b|, |a + b|).
    let theta = 2.0 * diff.atan2(sum);
    let sin_theta = theta.sin();
    let (wa, wb) = if sin_theta < 1e-9 {
        // Nearly equal: slerp and lerp agree to within theta^2, far below f64 rounding of the result.
        (1.0 - s, s)
    } else {
        (((1.0 - s) * theta).sin() / sin_theta, (s * theta).sin() / sin_theta)
    };
    let r: [f64; 4] = std::array::from_fn(|i| wa * ua[i] + wb * ub[i]);
    let nr = norm(r);
    if nr > 0.0 { r.map(|x| x / nr) } else { ua }
}

/// A pose of the whole rig: every node's local transform and every mesh's morph weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Pose {
    /// Local transform of each node (same indices as [`Rig::nodes`]).
    pub locals: Vec<Transform>,
    /// Morph weights per rig mesh (same indices as [`Rig::meshes`]), one per morph target.
    pub morph_weights: Vec<Vec<f32>>,
}

/// The rest pose: every node's rest transform and every mesh's default morph weights (targets
/// without a default weight get 0).
pub fn rest_pose(rig: &Rig) -> Pose {
    Pose {
        locals: rig.nodes.iter().map(|n| n.rest).collect(),
        morph_weights: rig
            .meshes
            .iter()
            .map(|m| {
                (0..m.morph_targets.len())
                    .map(|t| m.default_morph_weights.get(t).copied().unwrap_or(0.0))
                    .collect()
            })
            .collect(),
    }
}

/// Rotations further than this from unit length (in squared length) are renormalised; a correctly
/// normalised f32 quaternion's squared length is within a few f32 epsilons of 1, and those are kept
/// bit for bit.
const QUAT_RENORMALISE_TOLERANCE: f32 = 8.0 * f32::EPSILON;

/// The pose of `clip` at `time`: absolute clip time in seconds (the bake samples
/// `clip.start + k / fps`). Nodes and meshes no channel drives keep their rest transform and default
/// morph weights. Sampled rotations are renormalised when not unit (e.g. from normalised integer
/// accessors); a zero or non-finite rotation keeps the rest rotation. Channels whose target is out of
/// range are skipped ([`validate_clip`] reports them).
pub fn sample_pose(rig: &Rig, clip: &AnimationClip, time: f32) -> Pose {
    let mut pose = rest_pose(rig);
    for channel in &clip.channels {
        let mut buf = [0.0f32; 4];
        match channel.target {
            ChannelTarget::Translation(n) => {
                if let Some(local) = pose.locals.get_mut(n) {
                    buf[..3].copy_from_slice(&local.translation.to_array());
                    evaluate_channel(channel, time, &mut buf[..3]);
                    local.translation = Vec3::new(buf[0], buf[1], buf[2]);
                }
            }
            ChannelTarget::Scale(n) => {
                if let Some(local) = pose.locals.get_mut(n) {
                    buf[..3].copy_from_slice(&local.scale.to_array());
                    evaluate_channel(channel, time, &mut buf[..3]);
                    local.scale = Vec3::new(buf[0], buf[1], buf[2]);
                }
            }
            ChannelTarget::Rotation(n) => {
                if let Some(local) = pose.locals.get_mut(n) {
                    buf = local.rotation.to_array();
                    evaluate_channel(channel, time, &mut buf);
                    let q = Quat::from_array(buf);
                    let len2 = q.length_squared();
                    if (len2 - 1.0).abs() <= QUAT_RENORMALISE_TOLERANCE {
                        local.rotation = q;
                    } else if len2 > 0.0 && len2.is_finite() {
                        local.rotation = q.normalize();
                    }
                }
            }
            ChannelTarget::MorphWeights(m) => {
                if let Some(weights) = pose.morph_weights.get_mut(m) {
                    evaluate_channel(channel, time, weights);
                }
            }
        }
    }
    pose
}

/// Global (model-space) matrices of every node in `pose` (`parent_global * local`).
pub fn global_matrices(rig: &Rig, pose: &Pose) -> Vec<Mat4> {
    let locals: Vec<Mat4> = pose.locals.iter().map(Transform::to_mat4).collect();
    rig.globals_from_locals(&locals)
}

/// Checks that clip `clip` of `rig` can be sampled: it exists, has at least one channel (unless it
/// is zero-length: a pose), every
/// channel targets an existing node or morphed mesh, has at least one key, finite strictly increasing
/// key times within `clip.start..=clip.end`, exactly as many values as its keys need, and finite
/// values.
///
/// Errors: [`BakeError::InvalidInput`] naming the clip and channel.
pub fn validate_clip(rig: &Rig, clip: usize) -> Result<()> {
    let Some(c) = rig.clips.get(clip) else {
        return Err(BakeError::InvalidInput {
            part: format!("clip {clip}"),
            problem: format!("the rig has {} clips", rig.clips.len()),
        });
    };
    let bad = |part: String, problem: String| BakeError::InvalidInput { part, problem };
    if !c.start.is_finite() || !c.end.is_finite() || c.end < c.start {
        return Err(bad(
            format!("clip \"{}\"", c.name),
            format!("start {} s and end {} s are not a finite, ordered span", c.start, c.end),
        ));
    }
    // A zero-length clip without channels is the rest pose (a static asset's one clip); a streamed
    // body's clips have no channels (their frames come from the source).
    if let Some(body) = &rig.streamed_body {
        let Some(map) = body.clips.get(clip) else {
            return Err(bad(
                format!("clip \"{}\"", c.name),
                format!("the streamed body maps {} of the rig's {} clips", body.clips.len(), rig.clips.len()),
            ));
        };
        let frames = body.frames.frame_count();
        if !c.channels.is_empty()
            || map.first > map.last
            || map.last >= frames
            || !(map.fps.is_finite() && map.fps > 0.0)
        {
            return Err(bad(
                format!("clip \"{}\"", c.name),
                format!(
                    "plays streamed frames {}..={} at {} fps of {frames} (and has {} channels): need frames in \
                     range, a positive rate and no channels",
                    map.first,
                    map.last,
                    map.fps,
                    c.channels.len()
                ),
            ));
        }
        return Ok(());
    }
    if c.channels.is_empty() && c.end > c.start {
        return Err(bad(format!("clip \"{}\"", c.name), "has no channels".into()));
    }
    for (i, ch) in c.channels.iter().enumerate() {
        let part = || format!("clip \"{}\" channel {i}", c.name);
        let components = match ch.target {
            ChannelTarget::Translation(n) | ChannelTarget::Rotation(n) | ChannelTarget::Scale(n) => {
                if n >= rig.nodes.len() {
                    return Err(bad(
                        part(),
                        format!("targets node {n}; the rig has {} nodes", rig.nodes.len()),
                    ));
                }
                ch.target.components(0)
            }
            ChannelTarget::MorphWeights(m) => match rig.meshes.get(m) {
                Some(mesh) if !mesh.morph_targets.is_empty() => {
                    ch.target.components(mesh.morph_targets.len())
                }
                Some(_) => {
                    return Err(bad(
                        part(),
                        format!("animates morph weights of mesh {m}, which has no morph targets"),
                    ));
                }
                None => {
                    return Err(bad(
                        part(),
                        format!("targets mesh {m}; the rig has {} meshes", rig.meshes.len()),
                    ));
                }
            },
        };
        if ch.times.is_empty() {
            return Err(bad(part(), "has no keyframes".into()));
        }
        if let Some(k) = ch.times.iter().position(|t| !t.is_finite() || *t < c.start || *t > c.end) {
            return Err(bad(
                part(),
                format!(
                    "key time {k} ({} s) is not finite or lies outside the clip's {} s..{} s",
                    ch.times[k], c.start, c.end
                ),
            ));
        }
        for (k, w) in ch.times.windows(2).enumerate() {
            if w[1] <= w[0] {
                return Err(bad(
                    part(),
                    format!(
                        "key times {k} ({} s) and {} ({} s) are not strictly increasing",
                        w[0],
                        k + 1,
                        w[1]
                    ),
                ));
            }
        }
        let per_key = match ch.interpolation {
            KeyInterpolation::CubicSpline => 3 * components,
            KeyInterpolation::Step | KeyInterpolation::Linear => components,
        };
        let expected = ch.times.len() * per_key;
        if ch.values.len() != expected {
            return Err(bad(
                part(),
                format!("has {} values; {} keys need {expected}", ch.values.len(), ch.times.len()),
            ));
        }
        if let Some(v) = ch.values.iter().position(|v| !v.is_finite()) {
            return Err(bad(part(), format!("value {v} (key {}) is not finite", v / per_key)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::{Mesh, MeshBinding, MeshRole, MorphTarget, Node};

    fn channel(
        target: ChannelTarget,
        interpolation: KeyInterpolation,
        times: &[f32],
        values: &[f32],
    ) -> Channel {
        Channel { target, interpolation, times: times.to_vec(), values: values.to_vec() }
    }

    fn eval<const N: usize>(ch: &Channel, time: f32) -> [f32; N] {
        let mut out = [f32::NAN; N];
        evaluate_channel(ch, time, &mut out);
        out
    }

    /// Every target path, with its component count.
    const TARGETS: [(ChannelTarget, usize); 4] = [
        (ChannelTarget::Translation(0), 3),
        (ChannelTarget::Rotation(0), 4),
        (ChannelTarget::Scale(0), 3),
        (ChannelTarget::MorphWeights(0), 2),
    ];
    const INTERPOLATIONS: [KeyInterpolation; 3] =
        [KeyInterpolation::Step, KeyInterpolation::Linear, KeyInterpolation::CubicSpline];

    /// Three keys whose values are not representable round numbers (so any arithmetic on them
    /// would show in the bits), cubic tangents non-zero.
    fn three_keys(target: ChannelTarget, components: usize, interpolation: KeyInterpolation) -> Channel {
        let times = [0.04, 0.5 + 1.0 / 3.0, 1.3];
        let per_key =
            if interpolation == KeyInterpolation::CubicSpline { 3 * components } else { components };
        let values: Vec<f32> =
            (0..3 * per_key).map(|i| 0.1 + (i as f32) * 0.7 / 3.0 - 0.05 * (i % 5) as f32).collect();
        channel(target, interpolation, &times, &values)
    }

    fn key_value(ch: &Channel, components: usize, k: usize) -> Vec<f32> {
        let (per_key, offset) = if ch.interpolation == KeyInterpolation::CubicSpline {
            (3 * components, components)
        } else {
            (components, 0)
        };
        ch.values[k * per_key + offset..k * per_key + offset + components].to_vec()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn key_times_give_key_values_bitwise_and_ends_clamp_for_every_path() {
        for (target, components) in TARGETS {
            for interpolation in INTERPOLATIONS {
                let ch = three_keys(target, components, interpolation);
                let mut out = vec![f32::NAN; components];
                for (k, &t) in ch.times.iter().enumerate() {
                    evaluate_channel(&ch, t, &mut out);
                    assert_eq!(
                        bits(&out),
                        bits(&key_value(&ch, components, k)),
                        "{target:?} {interpolation:?} key {k}"
                    );
                }
                for (t, k) in [(0.0, 0), (-5.0, 0), (f32::NAN, 0), (1.31, 2), (100.0, 2)] {
                    evaluate_channel(&ch, t, &mut out);
                    assert_eq!(
                        bits(&out),
                        bits(&key_value(&ch, components, k)),
                        "{target:?} {interpolation:?} at {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn step_holds_each_key_until_the_next_for_every_path() {
        for (target, components) in TARGETS {
            let ch = three_keys(target, components, KeyInterpolation::Step);
            let mut out = vec![0.0; components];
            for (t, k) in [(0.3, 0), (0.84, 1), (1.29999, 1)] {
                evaluate_channel(&ch, t, &mut out);
                assert_eq!(bits(&out), bits(&key_value(&ch, components, k)), "{target:?} at {t}");
            }
        }
    }

    // Linear paths: the keys and the 25 % / 50 % points below are exact binary fractions, so f64
    // interpolation rounded once to f32 is exact and the expected values are compared exactly.
    #[test]
    fn linear_translation_at_a_quarter() {
        let ch = channel(
            ChannelTarget::Translation(0),
            KeyInterpolation::Linear,
            &[1.0, 3.0],
            &[0.0, 0.0, 0.0, 4.0, 8.0, -4.0],
        );
        assert_eq!(eval::<3>(&ch, 1.5), [1.0, 2.0, -1.0]);
    }

    #[test]
    fn linear_scale_and_morph_weights() {
        let scale = channel(
            ChannelTarget::Scale(0),
            KeyInterpolation::Linear,
            &[0.0, 2.0],
            &[1.0, 1.0, 1.0, 3.0, 5.0, 1.0],
        );
        assert_eq!(eval::<3>(&scale, 0.5), [1.5, 2.0, 1.0]);
        let weights = channel(
            ChannelTarget::MorphWeights(0),
            KeyInterpolation::Linear,
            &[0.0, 1.0],
            &[0.0, 1.0, 1.0, 0.0],
        );
        assert_eq!(eval::<2>(&weights, 0.25), [0.25, 0.75]);
    }

    fn y_turn(degrees: f64) -> [f32; 4] {
        let half = degrees.to_radians() / 2.0;
        [0.0, half.sin() as f32, 0.0, half.cos() as f32]
    }

    /// Bound for rotations interpolated from f32 keys: each key component carries <= 0.5 ulp
    /// (<= 2^-25 absolute, components <= 1) of input rounding, which the interpolation weights (sum
    /// 1/cos(theta/4) < 1.09 at theta = 90 deg) carry through, plus 0.5 ulp (2^-25) of output
    /// rounding: < 2.1 * 2^-25 < 2^-23 = f32::EPSILON.
    const ROTATION_BOUND: f32 = f32::EPSILON;

    fn assert_quat_near(got: [f32; 4], want: [f32; 4], what: &str) {
        for c in 0..4 {
            assert!((got[c] - want[c]).abs() <= ROTATION_BOUND, "{what}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn linear_rotation_slerps_to_45_degrees_at_the_middle_of_a_90_degree_turn() {
        let keys = [Quat::IDENTITY.to_array(), y_turn(90.0)].concat();
        let ch = channel(ChannelTarget::Rotation(0), KeyInterpolation::Linear, &[0.0, 1.0], &keys);
        assert_quat_near(eval::<4>(&ch, 0.5), y_turn(45.0), "midpoint");
        // A quarter of the way is 22.5 deg: slerp, not normalised lerp (which would give 19.5 deg).
        assert_quat_near(eval::<4>(&ch, 0.25), y_turn(22.5), "quarter");
    }

    #[test]
    fn linear_rotation_takes_the_shortest_path_when_signs_differ() {
        let far = y_turn(90.0).map(|c| -c);
        let keys = [Quat::IDENTITY.to_array(), far].concat();
        let ch = channel(ChannelTarget::Rotation(0), KeyInterpolation::Linear, &[0.0, 1.0], &keys);
        // The long way round would pass through a 135 deg turn about -Y at the middle.
        assert_quat_near(eval::<4>(&ch, 0.5), y_turn(45.0), "shortest path");
    }

    #[test]
    fn cubic_with_zero_tangents_is_the_smoothstep_hermite() {
        // s = 0.25: h01 = -2 s^3 + 3 s^2 = -2/64 + 12/64 = 10/64 = 0.15625, h00 = 1 - h01; all exact.
        let zero = [0.0f32; 3];
        let values = [zero, [0.0, 0.0, 0.0], zero, zero, [2.0, 4.0, -8.0], zero].concat();
        for target in [ChannelTarget::Translation(0), ChannelTarget::Scale(0)] {
            let ch = channel(target, KeyInterpolation::CubicSpline, &[0.0, 2.0], &values);
            assert_eq!(eval::<3>(&ch, 0.5), [0.3125, 0.625, -1.25], "{target:?}");
            assert_eq!(eval::<3>(&ch, 1.0), [1.0, 2.0, -4.0], "{target:?} midpoint");
        }
        let weights = [0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.0, 0.0];
        let ch =
            channel(ChannelTarget::MorphWeights(0), KeyInterpolation::CubicSpline, &[0.0, 2.0], &weights);
        // 1 + 0.15625 * (0 - 1) and 0.5 + 0.15625 * (1.5 - 0.5).
        assert_eq!(eval::<2>(&ch, 0.5), [0.84375, 0.65625]);
    }

    #[test]
    fn cubic_with_tangents_matches_the_hand_computed_hermite() {
        // td = 2, s = 0.5: h00 = 0.5, h10 = 0.125, h01 = 0.5, h11 = -0.125.
        // x: 0.5*1 + 0.125*2*2 + 0.5*3 + (-0.125)*2*(-1) = 0.5 + 0.5 + 1.5 + 0.25 = 2.75
        // y: 0.5*0 + 0.125*2*(-4) + 0.5*0 + (-0.125)*2*4 = -1 - 1 = -2
        // z: 0.5*2 + 0.125*2*0 + 0.5*2 + (-0.125)*2*8 = 1 + 1 - 2 = 0
        // The in-tangent of key 0 and out-tangent of key 1 (99) must not contribute.
        let values = [
            [99.0, 99.0, 99.0],
            [1.0, 0.0, 2.0],
            [2.0, -4.0, 0.0],
            [-1.0, 4.0, 8.0],
            [3.0, 0.0, 2.0],
            [99.0, 99.0, 99.0],
        ]
        .concat();
        for target in [ChannelTarget::Translation(0), ChannelTarget::Scale(0)] {
            let ch = channel(target, KeyInterpolation::CubicSpline, &[1.0, 3.0], &values);
            assert_eq!(eval::<3>(&ch, 2.0), [2.75, -2.0, 0.0], "{target:?}");
        }
        let weights = [99.0, 1.0, 2.0, -1.0, 3.0, 99.0];
        let ch =
            channel(ChannelTarget::MorphWeights(0), KeyInterpolation::CubicSpline, &[1.0, 3.0], &weights);
        assert_eq!(eval::<1>(&ch, 2.0), [2.75]);
    }

    #[test]
    fn cubic_rotation_is_normalised() {
        // Zero tangents at s = 0.5 give (q0 + q1) / 2, which normalised is the 45 deg midpoint.
        let zero = [0.0f32; 4];
        let values = [zero, Quat::IDENTITY.to_array(), zero, zero, y_turn(90.0), zero].concat();
        let ch = channel(ChannelTarget::Rotation(0), KeyInterpolation::CubicSpline, &[0.0, 1.0], &values);
        let q = eval::<4>(&ch, 0.5);
        assert_quat_near(q, y_turn(45.0), "cubic midpoint");
        // With tangents the spline leaves the unit sphere; the output must be back on it. Squared
        // length of an f32-normalised quaternion: within 4 roundings (2^-24 each) of 1.
        let tangents = [0.3, -0.2, 0.1, 0.5];
        let values = [zero, Quat::IDENTITY.to_array(), tangents, tangents, y_turn(90.0), zero].concat();
        let ch = channel(ChannelTarget::Rotation(0), KeyInterpolation::CubicSpline, &[0.0, 1.0], &values);
        let q = Quat::from_array(eval::<4>(&ch, 0.3));
        assert!((q.length_squared() - 1.0).abs() <= 4.0 * f32::EPSILON, "{q:?}");
    }

    #[test]
    fn malformed_channels_leave_the_output_unchanged() {
        let short =
            channel(ChannelTarget::Translation(0), KeyInterpolation::Linear, &[0.0, 1.0], &[1.0, 2.0, 3.0]);
        assert_eq!(eval::<3>(&short, 0.5).map(f32::is_nan), [true; 3]);
        let empty = channel(ChannelTarget::Translation(0), KeyInterpolation::Linear, &[], &[]);
        assert_eq!(eval::<3>(&empty, 0.5).map(f32::is_nan), [true; 3]);
    }

    fn two_node_rig() -> Rig {
        let morphed = Mesh {
            name: "face".into(),
            binding: MeshBinding::Rigid { node: 1 },
            role: MeshRole::Body,
            positions: vec![Vec3::ZERO],
            normals: vec![Vec3::Y],
            tangents: None,
            uvs: None,
            colors: None,
            material_ids: vec![0],
            indices: vec![],
            influence_count: 0,
            joints: vec![[0; 8]],
            weights: vec![[0.0; 8]],
            full_influences: None,
            morph_targets: vec![
                MorphTarget { name: None, positions: vec![Vec3::X], normals: None, tangents: None },
                MorphTarget { name: None, positions: vec![Vec3::Y], normals: None, tangents: None },
            ],
            default_morph_weights: vec![0.25],
        };
        let rest =
            Transform { translation: Vec3::new(0.0, 1.0, 0.0), rotation: Quat::IDENTITY, scale: Vec3::ONE };
        Rig {
            name: "two".into(),
            nodes: vec![
                Node { name: "root".into(), parent: None, rest: Transform::IDENTITY },
                Node { name: "child".into(), parent: Some(0), rest },
            ],
            meshes: vec![morphed],
            clips: vec![AnimationClip {
                name: "move".into(),
                channels: vec![
                    channel(
                        ChannelTarget::Translation(0),
                        KeyInterpolation::Linear,
                        &[0.5, 1.5],
                        &[0.0, 0.0, 0.0, 2.0, 0.0, 0.0],
                    ),
                    channel(
                        ChannelTarget::MorphWeights(0),
                        KeyInterpolation::Linear,
                        &[0.5, 1.5],
                        &[0.0, 0.0, 1.0, 0.5],
                    ),
                ],
                start: 0.5,
                end: 1.5,
                looping: Some(true),
                known_stride: None,
                locomotion: false,
            }],
            ..Rig::default()
        }
    }

    #[test]
    fn rest_pose_pads_missing_default_weights_with_zero() {
        let pose = rest_pose(&two_node_rig());
        assert_eq!(pose.morph_weights, vec![vec![0.25, 0.0]]);
        assert_eq!(pose.locals[1].translation, Vec3::Y);
    }

    #[test]
    fn sample_pose_uses_absolute_time_and_keeps_undriven_nodes_at_rest() {
        let rig = two_node_rig();
        let pose = sample_pose(&rig, &rig.clips[0], 1.0);
        assert_eq!(pose.locals[0].translation, Vec3::new(1.0, 0.0, 0.0));
        assert_eq!(pose.locals[1], rig.nodes[1].rest);
        assert_eq!(pose.morph_weights[0], vec![0.5, 0.25]);
        let globals = global_matrices(&rig, &pose);
        assert_eq!(globals[1].transform_point3(Vec3::ZERO), Vec3::new(1.0, 1.0, 0.0));
    }

    #[test]
    fn sample_pose_renormalises_only_non_unit_rotations() {
        let mut rig = two_node_rig();
        // (0.6, 0, 0, 0.8) is unit to within f32 rounding: kept bit for bit. (0, 0, 0, 2) is not.
        rig.clips[0].channels = vec![channel(
            ChannelTarget::Rotation(0),
            KeyInterpolation::Step,
            &[0.5, 1.0],
            &[0.6, 0.0, 0.0, 0.8, 0.0, 0.0, 0.0, 2.0],
        )];
        let pose = sample_pose(&rig, &rig.clips[0], 0.5);
        assert_eq!(pose.locals[0].rotation.to_array(), [0.6, 0.0, 0.0, 0.8]);
        let pose = sample_pose(&rig, &rig.clips[0], 1.0);
        assert_eq!(pose.locals[0].rotation, Quat::IDENTITY);
    }

    #[test]
    fn validate_clip_rejects_bad_channels_with_typed_errors() {
        let rig = two_node_rig();
        assert!(validate_clip(&rig, 0).is_ok());
        type BreakChannel = fn(&mut Channel);
        let cases: [(&str, BreakChannel); 5] = [
            ("not finite", |c| c.values[1] = f32::NAN),
            ("strictly increasing", |c| c.times = vec![1.0, 1.0]),
            ("values", |c| {
                c.values.pop();
            }),
            ("no keyframes", |c| {
                c.times.clear();
                c.values.clear();
            }),
            ("outside", |c| c.times[1] = 2.0),
        ];
        for (needle, break_it) in cases {
            let mut bad = rig.clone();
            break_it(&mut bad.clips[0].channels[0]);
            let err = validate_clip(&bad, 0).unwrap_err();
            assert!(matches!(err, BakeError::InvalidInput { .. }), "{err}");
            assert!(
                err.to_string().contains(needle) && err.to_string().contains("\"move\" channel 0"),
                "{err}"
            );
        }
        let mut bad = rig.clone();
        bad.clips[0].channels[0].target = ChannelTarget::Scale(7);
        assert!(validate_clip(&bad, 0).unwrap_err().to_string().contains("node 7"));
        assert!(validate_clip(&rig, 3).is_err());
    }
}
