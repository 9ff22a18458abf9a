//! The entry points: one rig, with progress, or a batch sharing its sampling.

use super::*;

/// Bakes `rig` with `options` in memory (no I/O). See the module docs for the steps.
///
/// # Errors
/// - [`BakeError::InvalidOption`] for an option out of range (fps, frames, LODs, texture size), an
///   unknown clip or capture name, or `--tangents` on a mesh without tangents;
/// - [`BakeError::InvalidInput`] for a rig with no clips ("no animation to bake"), a zero-length or
///   malformed clip, bad mesh data (from [`VertexSet::from_rig`]), a socket on a missing node or with
///   a non-finite transform, duplicate socket names, a malformed attachment;
/// - [`BakeError::Core`] when the frames do not fit a texture of `max_texture_dim` or a skinned
///   position is not finite.
pub fn prepare(rig: &Rig, options: &BakeOptions) -> Result<PreparedBake> {
    prepare_with_progress(rig, options, &mut |_| {})
}

/// [`prepare`], reporting progress (once per stage, and once per clip while skinning).
///
/// # Errors
/// As [`prepare`].
pub fn prepare_with_progress(
    rig: &Rig,
    options: &BakeOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<PreparedBake> {
    let start = Instant::now();
    validate_options(options)?;
    let rig = with_static_clip(rig);
    let rig = rig.as_ref();
    let plan = plan_clips(rig, options)?;
    let plan_time = start.elapsed().as_secs_f64();
    let mut bake = prepare_planned(rig, options, &plan, None, progress)?;
    bake.stats.timings.insert(0, StageTiming { stage: "plan", seconds: plan_time });
    Ok(bake)
}

/// Bakes several meshes that share one skeleton and clip set (e.g. body variants), sampling the
/// skeleton once: the clip plan, strides and per-frame node transforms are computed from the first
/// rig and reused, and a bone texture identical to an earlier rig's is shared, not rebuilt.
///
/// # Errors
/// [`BakeError::InvalidInput`] when `rigs` is empty or a rig's skeleton (node names, parents, rest
/// transforms, feet) or clips (names, spans, looping, locomotion, strides and node channels)
/// differ from the first rig's; otherwise as [`prepare`].
pub fn prepare_batch(rigs: &[Rig], options: &BakeOptions) -> Result<Vec<PreparedBake>> {
    let Some(first) = rigs.first() else {
        return Err(invalid_input("batch bake", "no rigs to bake"));
    };
    validate_options(options)?;
    if options.root_motion {
        return Err(invalid_option(
            "--root-motion",
            "a batch bake shares one set of node matrices between rigs; bake each rig with root motion on its own",
        ));
    }
    for rig in &rigs[1..] {
        check_same_skeleton_and_clips(first, rig)?;
    }
    let plan = plan_clips(first, options)?;
    // Node channels are equal across the batch, but morph channels may differ: check every rig's.
    for rig in &rigs[1..] {
        for &ci in &plan.sources {
            validate_clip(rig, ci)?;
        }
    }
    let samples = plan.samples(first);
    let globals = Arc::new(sample_globals(first, &samples));
    let mut shared = SharedSampling { globals, bone_textures: Vec::new() };
    rigs.iter().map(|rig| prepare_planned(rig, options, &plan, Some(&mut shared), &mut |_| {})).collect()
}

/// `(node, inverse bind)` of each bone of a skeleton.
pub(super) type BoneList = Vec<(usize, Mat4)>;

/// What a batch computes once for all its rigs.
pub(super) struct SharedSampling {
    /// Global node matrices per frame.
    pub(super) globals: Arc<Vec<Vec<Mat4>>>,
    /// Bone textures built so far, keyed by their bone list.
    pub(super) bone_textures: Vec<(BoneList, Arc<Vec<u8>>)>,
}

pub(super) fn check_same_skeleton_and_clips(a: &Rig, b: &Rig) -> Result<()> {
    let part = || format!("batch: rig \"{}\" against rig \"{}\"", b.name, a.name);
    if a.nodes.len() != b.nodes.len() {
        return Err(invalid_input(part(), format!("{} nodes against {}", b.nodes.len(), a.nodes.len())));
    }
    for (i, (x, y)) in a.nodes.iter().zip(&b.nodes).enumerate() {
        if x != y {
            return Err(invalid_input(
                part(),
                format!("node {i} (\"{}\") differs in name, parent or rest", y.name),
            ));
        }
    }
    if a.feet != b.feet {
        return Err(invalid_input(part(), "the feet differ"));
    }
    if a.clips.len() != b.clips.len() {
        return Err(invalid_input(part(), format!("{} clips against {}", b.clips.len(), a.clips.len())));
    }
    let node_channels = |c: &AnimationClip| -> Vec<crate::rig::Channel> {
        c.channels.iter().filter(|ch| !matches!(ch.target, ChannelTarget::MorphWeights(_))).cloned().collect()
    };
    for (x, y) in a.clips.iter().zip(&b.clips) {
        let same = x.name == y.name
            && x.start == y.start
            && x.end == y.end
            && x.looping == y.looping
            && x.locomotion == y.locomotion
            && x.known_stride == y.known_stride
            && node_channels(x) == node_channels(y);
        if !same {
            return Err(invalid_input(part(), format!("clip \"{}\" differs", y.name)));
        }
    }
    Ok(())
}

/// Global node matrices at every sample (sequential: a few hundred poses of a few dozen nodes).
pub(super) fn sample_globals(rig: &Rig, samples: &[(usize, f32)]) -> Vec<Vec<Mat4>> {
    samples.iter().map(|&(c, t)| global_matrices(rig, &sample_pose(rig, &rig.clips[c], t))).collect()
}

pub(super) fn timed<T>(
    timings: &mut Vec<StageTiming>,
    stage: &'static str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let start = Instant::now();
    let out = f()?;
    timings.push(StageTiming { stage, seconds: start.elapsed().as_secs_f64() });
    Ok(out)
}
