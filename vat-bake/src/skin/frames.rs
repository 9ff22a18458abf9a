//! Skinning poses and clips into frames: full arrays, streamed frames, full influences.

use super::*;

/// Skinning matrices, one per bone: `globals[bone.node] * bone.inverse_bind` (bind space -> model
/// space). `globals` are the pose's global node matrices ([`crate::sample::global_matrices`]); a
/// bone whose node is missing from `globals` gets the identity.
pub fn bone_matrices(_rig: &Rig, set: &VertexSet, globals: &[Mat4]) -> Vec<Mat4> {
    set.bones.iter().map(|b| globals.get(b.node).map_or(Mat4::IDENTITY, |g| *g * b.inverse_bind)).collect()
}

/// Skins every vertex of `set` in `pose`: morph deltas (weights `pose.morph_weights`), then linear
/// blend skinning (see the module docs). Tangents are produced when the set has them.
pub fn skin_pose(rig: &Rig, set: &VertexSet, pose: &Pose) -> SkinnedFrame {
    let bones = bone_matrices(rig, set, &global_matrices(rig, pose));
    skin_frame(set, &SkinPlan::new(set), &bones, &pose.morph_weights, set.tangents.is_some())
}

pub(super) fn pose_at(rig: &Rig, clip: usize, time: f32) -> Pose {
    match rig.clips.get(clip) {
        Some(c) => sample_pose(rig, c, time),
        None => {
            debug_assert!(false, "clip {clip} out of range ({} clips)", rig.clips.len());
            rest_pose(rig)
        }
    }
}

/// What the kernel needs of one frame: the skinning matrix of every bone ([`bone_matrices`]) and
/// the morph weights of the pose.
#[derive(Debug, Clone)]
pub(crate) struct FramePose {
    /// Skinning matrix per bone of the set.
    pub(crate) bones: Vec<Mat4>,
    /// `morph_weights[mesh][target]`, as in [`Pose::morph_weights`].
    pub(crate) morph_weights: Vec<Vec<f32>>,
}

impl FramePose {
    /// The frame of `pose`, whose global node matrices are `globals`
    /// ([`crate::sample::global_matrices`] of it).
    pub(crate) fn new(rig: &Rig, set: &VertexSet, pose: Pose, globals: &[Mat4]) -> Self {
        Self { bones: bone_matrices(rig, set, globals), morph_weights: pose.morph_weights }
    }

    pub(super) fn sample(rig: &Rig, set: &VertexSet, clip: usize, time: f32) -> Self {
        let pose = pose_at(rig, clip, time);
        let globals = global_matrices(rig, &pose);
        Self::new(rig, set, pose, &globals)
    }
}

pub(super) fn skin_frame(
    set: &VertexSet,
    plan: &SkinPlan,
    bones: &[Mat4],
    morph_weights: &[Vec<f32>],
    with_tangents: bool,
) -> SkinnedFrame {
    let n = set.vertex_count();
    let mut positions = vec![Vec3::ZERO; n];
    let mut normals = vec![Vec3::ZERO; n];
    let mut tangents = (with_tangents && set.tangents.is_some()).then(|| vec![Vec4::ZERO; n]);
    let mut sink = ArraySink {
        positions: &mut positions[..],
        normals: Some(&mut normals[..]),
        tangents: tangents.as_deref_mut(),
    };
    let written = skin_into(set, plan, bones, morph_weights, &mut sink);
    // Only a malformed set (per-vertex arrays of different lengths) skins fewer vertices.
    positions.truncate(written);
    normals.truncate(written);
    if let Some(t) = &mut tangents {
        t.truncate(written);
    }
    SkinnedFrame { positions, normals, tangents }
}

/// Skins one frame per sample: `samples` are `(clip index, absolute time in seconds)` (the bake uses
/// `clip.start + k / fps`). Tangents are produced when `with_tangents` and the set has tangents.
/// Frames are computed in parallel (rayon), each by one thread in a fixed order, so the output is
/// bit-identical whatever the thread count. A clip index out of range is a caller bug: it panics in
/// debug builds and skins the rest pose in release builds.
///
/// A rig with a [`Rig::streamed_body`] reads its frames from the source instead
/// ([`streamed_frame`]).
///
/// # Errors
/// Only for a streamed body: [`streamed_frame`]'s.
pub fn skin_clip_frames(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    with_tangents: bool,
) -> Result<Vec<SkinnedFrame>> {
    if let Some(body) = &rig.streamed_body {
        return samples
            .par_iter()
            .map(|&(clip, time)| streamed_frame(rig, body, set, clip, time, with_tangents))
            .collect();
    }
    let plan = SkinPlan::new(set);
    Ok(samples
        .par_iter()
        .map(|&(clip, time)| {
            let frame = FramePose::sample(rig, set, clip, time);
            skin_frame(set, &plan, &frame.bones, &frame.morph_weights, with_tangents)
        })
        .collect())
}

/// The frame of a streamed body ([`Rig::streamed_body`]) at `(clip, absolute time)`, in the order
/// of `set` (a vertex set of `rig`, possibly reordered: each vertex is read from its
/// [`VertexSet::sources`] entry): the source frame the time lands on, or the linear blend of the two
/// it falls between ([`crate::rig::StreamedClip::frames_at`]; normals renormalised). Holds at most
/// two source frames at a time.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a clip index out of range, a set that is not the streamed body's
/// (other vertex count or meshes), tangents asked of a set that has them (a streamed body has no
/// tangent frames), or a frame whose size differs; the source's own read errors.
pub fn streamed_frame(
    rig: &Rig,
    body: &StreamedBody,
    set: &VertexSet,
    clip: usize,
    time: f32,
    with_tangents: bool,
) -> Result<SkinnedFrame> {
    if with_tangents && set.tangents.is_some() {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            "a streamed mesh sequence has no tangent frames (bake it without --tangents)",
        ));
    }
    let n = set.vertex_count();
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    streamed_frame_into(rig, body, set, clip, time, &mut p, &mut nrm)?;
    Ok(SkinnedFrame {
        positions: p.into_iter().map(Vec3::from_array).collect(),
        normals: nrm.into_iter().map(Vec3::from_array).collect(),
        tangents: None,
    })
}

/// [`streamed_frame`] written into `positions` and `normals` (each `set.vertex_count()` long,
/// vertex `v` at index `v`): what the bake encodes and verification compares, without a frame of
/// its own.
///
/// # Errors
/// As [`streamed_frame`]; [`BakeError::InvalidInput`] for arrays of another length.
pub(crate) fn streamed_frame_into(
    rig: &Rig,
    body: &StreamedBody,
    set: &VertexSet,
    clip: usize,
    time: f32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    if positions.len() != set.vertex_count() || normals.len() != set.vertex_count() {
        return Err(invalid("streamed frame arrays", format!("need {} entries each", set.vertex_count())));
    }
    let (Some(c), Some(map)) = (rig.clips.get(clip), body.clips.get(clip)) else {
        return Err(invalid(
            format!("sample of clip {clip}"),
            format!("the rig has {} clips ({} streamed)", rig.clips.len(), body.clips.len()),
        ));
    };
    let source_vertices = body.frames.vertex_count();
    if set.sources.len() != set.vertex_count()
        || set.sources.iter().any(|s| s.mesh != 0 || s.vertex as usize >= source_vertices)
    {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            format!(
                "its vertex set ({} vertices) is not the streamed body's one mesh of {source_vertices} vertices",
                set.vertex_count()
            ),
        ));
    }
    let (a, b, w) = map.frames_at(time - c.start);
    let read = |k: usize| -> Result<crate::rig::BodyFrame> {
        let frame = body.frames.read_frame(k)?;
        if frame.positions.len() != source_vertices || frame.normals.len() != source_vertices {
            return Err(invalid(
                format!("rig \"{}\" frame {k}", rig.name),
                format!(
                    "has {} positions and {} normals; the sequence has {source_vertices} vertices",
                    frame.positions.len(),
                    frame.normals.len()
                ),
            ));
        }
        Ok(frame)
    };
    let fa = read(a)?;
    let fb = if w == 0.0 || a == b { None } else { Some(read(b)?) };
    for ((s, out_p), out_n) in set.sources.iter().zip(positions.iter_mut()).zip(normals.iter_mut()) {
        let v = s.vertex as usize;
        let (p, n) = match &fb {
            None => (fa.positions[v], fa.normals[v]),
            Some(fb) => {
                let n = fa.normals[v] + (fb.normals[v] - fa.normals[v]) * w;
                (
                    fa.positions[v] + (fb.positions[v] - fa.positions[v]) * w,
                    n.try_normalize().unwrap_or(fa.normals[v]),
                )
            }
        };
        *out_p = p.to_array();
        *out_n = n.to_array();
    }
    Ok(())
}

/// [`skin_clip_frames`] into frame-major flat arrays, the layout vat-core's
/// `encoding::encode_vertex_texture` takes: vertex `v` of sample `f` at
/// `positions[f * vertex_count + v]`, likewise `normals` and `tangents` (xyz unit, w = bitangent
/// sign). Saves the baker a copy of every frame. Bit-identical to [`skin_clip_frames`].
///
/// Errors: [`BakeError::InvalidInput`] when an array's length is not `samples.len() * vertex_count`,
/// a clip index is out of range, or tangents are requested from a set without them.
pub fn skin_frames_into(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    let skinner = FrameSkinner::new(rig, set);
    let Some(n) = skinner.check(samples, positions, normals, tangents.as_deref())? else {
        return Ok(());
    };
    try_for_each_frame(samples, n, positions, normals, tangents, |s, p, nrm, t| skinner.frame(s, p, nrm, t))
}

/// The checks of [`skin_frames_into`] on its arrays' lengths (`samples.len() * vertex_count` each),
/// the tangents asked for and the samples' clips.
pub(super) fn check_frame_arrays(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: usize,
    normals: usize,
    tangents: Option<usize>,
) -> Result<()> {
    let n = set.vertex_count();
    let expected = samples.len() * n;
    if [Some(positions), Some(normals), tangents].iter().flatten().any(|&l| l != expected) {
        return Err(invalid(
            "skinned frame arrays",
            format!("need {expected} entries each ({} samples x {n} vertices)", samples.len()),
        ));
    }
    if tangents.is_some() && set.tangents.is_none() {
        return Err(invalid("skinned frame arrays", "tangents requested from a vertex set without tangents"));
    }
    check_samples(rig, samples)?;
    if tangents.is_some() && rig.streamed_body.is_some() {
        return Err(invalid(
            format!("rig \"{}\"", rig.name),
            "a streamed mesh sequence has no tangent frames (bake it without --tangents)",
        ));
    }
    Ok(())
}

/// Skins a few frames at a time, many times, with the vertex grouping ([`SkinPlan`]) built once:
/// [`skin_frames_into`] groups the vertices again on every call, which costs more than skinning a
/// frame of a large mesh. Verification skins its frames this way, a few per parallel task.
pub(crate) struct FrameSkinner<'a> {
    pub(super) rig: &'a Rig,
    pub(super) set: &'a VertexSet,
    /// Unused for a streamed mesh sequence (frames are read, not skinned).
    pub(super) plan: SkinPlan,
}

impl<'a> FrameSkinner<'a> {
    /// The skinner of `set`, a vertex set of `rig`.
    pub(crate) fn new(rig: &'a Rig, set: &'a VertexSet) -> Self {
        Self { rig, set, plan: SkinPlan::new(set) }
    }

    /// [`skin_frames_into`], bit for bit and with the same errors, on the calling thread (the
    /// caller runs several of these in parallel).
    pub(crate) fn skin_frames(
        &self,
        samples: &[(usize, f32)],
        positions: &mut [[f32; 3]],
        normals: &mut [[f32; 3]],
        mut tangents: Option<&mut [[f32; 4]]>,
    ) -> Result<()> {
        let Some(n) = self.check(samples, positions, normals, tangents.as_deref())? else {
            return Ok(());
        };
        for (f, &sample) in samples.iter().enumerate() {
            let r = f * n..(f + 1) * n;
            let t = tangents.as_deref_mut().map(|t| &mut t[r.clone()]);
            self.frame(sample, &mut positions[r.clone()], &mut normals[r], t)?;
        }
        Ok(())
    }

    /// The checks of [`skin_frames_into`] ([`check_frame_arrays`]); the vertex count, or `None`
    /// when there are no vertices (nothing to skin).
    fn check(
        &self,
        samples: &[(usize, f32)],
        positions: &[[f32; 3]],
        normals: &[[f32; 3]],
        tangents: Option<&[[f32; 4]]>,
    ) -> Result<Option<usize>> {
        let lens = (positions.len(), normals.len(), tangents.map(<[_]>::len));
        check_frame_arrays(self.rig, self.set, samples, lens.0, lens.1, lens.2)?;
        let n = self.set.vertex_count();
        Ok((n > 0).then_some(n))
    }

    /// One frame at `(clip, time)` into its `n` entries of each array: read from a streamed
    /// sequence, or skinned.
    fn frame(
        &self,
        (clip, time): (usize, f32),
        positions: &mut [[f32; 3]],
        normals: &mut [[f32; 3]],
        tangents: Option<&mut [[f32; 4]]>,
    ) -> Result<()> {
        let (rig, set) = (self.rig, self.set);
        if let Some(body) = &rig.streamed_body {
            return streamed_frame_into(rig, body, set, clip, time, positions, normals);
        }
        let pose = FramePose::sample(rig, set, clip, time);
        let mut sink = ArraySink { positions, normals: Some(normals), tangents };
        skin_into(set, &self.plan, &pose.bones, &pose.morph_weights, &mut sink);
        Ok(())
    }
}

/// Calls `f(sample, positions, normals, tangents)` for each sample and its frame's part of the
/// frame-major arrays (`n` entries each), in parallel over frames; the first error (of some frame)
/// is returned.
pub(super) fn try_for_each_frame<F>(
    samples: &[(usize, f32)],
    n: usize,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
    f: F,
) -> Result<()>
where
    F: Fn((usize, f32), &mut [[f32; 3]], &mut [[f32; 3]], Option<&mut [[f32; 4]]>) -> Result<()> + Sync,
{
    let pn = positions.par_chunks_mut(n).zip(normals.par_chunks_mut(n));
    match tangents {
        Some(t) => pn
            .zip(t.par_chunks_mut(n))
            .zip(samples.par_iter())
            .try_for_each(|(((p, nrm), t), &s)| f(s, p, nrm, Some(t))),
        None => pn.zip(samples.par_iter()).try_for_each(|((p, nrm), &s)| f(s, p, nrm, None)),
    }
}

/// [`skin_frames_into`], then the vertices of [`VertexSet::full_influences`] skinned again with
/// every influence their source has (morph deltas first, as for every vertex): the full source a
/// bake that kept 8 influences per vertex is verified against. Equal to [`skin_frames_into`] when
/// no vertex has more than 8.
///
/// Errors: as [`skin_frames_into`].
pub fn skin_frames_into_full(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    mut tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    skin_frames_into(rig, set, samples, positions, normals, tangents.as_deref_mut())?;
    apply_full_influences(rig, set, samples, positions, normals, tangents)
}

/// Overwrites, in frames skinned by [`skin_frames_into`] (same `samples`, same frame-major
/// layout), the vertices of [`VertexSet::full_influences`] with their skinning by every influence
/// their source has: what turns the baked skinning into [`skin_frames_into_full`]'s without
/// skinning every vertex again. Leaves the arrays as they are when no vertex has more than 8.
///
/// Errors: [`BakeError::InvalidInput`] when an array's length is not `samples.len() * vertex_count`
/// or a clip index is out of range.
pub fn apply_full_influences(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) -> Result<()> {
    let n = set.vertex_count();
    let expected = samples.len() * n;
    let lens = [Some(positions.len()), Some(normals.len()), tangents.as_ref().map(|t| t.len())];
    if lens.iter().flatten().any(|&l| l != expected) {
        return Err(invalid(
            "skinned frame arrays",
            format!("need {expected} entries each ({} samples x {n} vertices)", samples.len()),
        ));
    }
    check_samples(rig, samples)?;
    if set.full_influences.is_empty() || n == 0 {
        return Ok(());
    }
    // The morph deltas of each listed vertex: (target, position, normal, tangent).
    type Delta = (usize, Vec3, Vec3, Vec3);
    let listed: HashMap<u32, usize> =
        set.full_influences.iter().enumerate().map(|(i, (v, _))| (*v, i)).collect();
    let mut deltas: Vec<Vec<Delta>> = vec![Vec::new(); set.full_influences.len()];
    for (ti, t) in set.morph_targets.iter().enumerate() {
        for (k, v) in t.vertices.iter().enumerate() {
            if let Some(&i) = listed.get(v) {
                let dn = t.normals.as_ref().map_or(Vec3::ZERO, |d| d[k]);
                let dt = t.tangents.as_ref().map_or(Vec3::ZERO, |d| d[k]);
                deltas[i].push((ti, t.positions[k], dn, dt));
            }
        }
    }
    let fix =
        |(clip, time): (usize, f32), p: &mut [[f32; 3]], nrm: &mut [[f32; 3]], t: Option<&mut [[f32; 4]]>| {
            let pose = FramePose::sample(rig, set, clip, time);
            let weight = |ti: usize| {
                let target = &set.morph_targets[ti];
                pose.morph_weights.get(target.mesh).and_then(|w| w.get(target.target)).copied().unwrap_or(0.0)
            };
            let mut t = t;
            for ((v, list), deltas) in set.full_influences.iter().zip(&deltas) {
                let v = *v as usize;
                let (mut pm, mut nm) = (set.positions[v], set.normals[v]);
                let mut tm = set.tangents.as_ref().map(|t| t[v]);
                for &(ti, dp, dn, dt) in deltas {
                    let w = weight(ti);
                    if w != 0.0 {
                        pm += dp * w;
                        nm += dn * w;
                        if let Some(tm) = &mut tm {
                            *tm = (tm.truncate() + dt * w).extend(tm.w);
                        }
                    }
                }
                let mut m = Mat4::ZERO;
                for &(bone, w) in list {
                    m += pose.bones.get(usize::from(bone)).copied().unwrap_or(Mat4::IDENTITY) * w;
                }
                let (a, b, c) = (m.x_axis.truncate(), m.y_axis.truncate(), m.z_axis.truncate());
                let sign = if a.dot(b.cross(c)) < 0.0 { -1.0 } else { 1.0 };
                let normal = (b.cross(c) * nm.x + c.cross(a) * nm.y + a.cross(b) * nm.z) * sign;
                let normal = normal.try_normalize().unwrap_or(nm);
                p[v] = m.transform_point3(pm).to_array();
                nrm[v] = normal.to_array();
                if let (Some(out), Some(tm)) = (t.as_deref_mut(), tm) {
                    let skinned = m.transform_vector3(tm.truncate());
                    let ortho = (skinned - normal * normal.dot(skinned)).try_normalize().unwrap_or(skinned);
                    out[v] = ortho.extend(tm.w).to_array();
                }
            }
        };
    try_for_each_frame(samples, n, positions, normals, tangents, |s, p, nrm, t| {
        fix(s, p, nrm, t);
        Ok(())
    })
}
