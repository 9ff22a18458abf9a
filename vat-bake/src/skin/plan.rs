//! Frame bounds and the skin plan: vertices grouped by their weight sets.

use super::*;

/// Errors unless every sample's clip exists.
pub(super) fn check_samples(rig: &Rig, samples: &[(usize, f32)]) -> Result<()> {
    match samples.iter().find(|(c, _)| *c >= rig.clips.len()) {
        Some(&(clip, _)) => {
            Err(invalid(format!("sample of clip {clip}"), format!("the rig has {} clips", rig.clips.len())))
        }
        None => Ok(()),
    }
}

/// Axis-aligned bounds `(min, max)` in metres of every skinned vertex position over `samples`
/// (`(clip index, absolute time in seconds)`), equal (`==`) to the min/max of the positions
/// [`skin_frames_into`] and [`skin_clip_frames`] produce, but computed without normals and without
/// storing frames: a baker can fix its quantisation box first and then skin and encode a few frames
/// at a time into reused buffers, instead of materialising every frame (touching 16 MB of fresh
/// memory costs about as much as skinning it). Parallel over samples, reduced in sample order.
///
/// Errors: [`BakeError::InvalidInput`] when `samples` is empty, the set has no vertices, or a clip
/// index is out of range.
pub fn skinned_bounds(rig: &Rig, set: &VertexSet, samples: &[(usize, f32)]) -> Result<(Vec3, Vec3)> {
    if samples.is_empty() || set.vertex_count() == 0 {
        return Err(invalid("skinned bounds", "need at least one sample and one vertex"));
    }
    check_samples(rig, samples)?;
    let plan = SkinPlan::new(set);
    let per_frame: Vec<FrameBounds> = samples
        .par_iter()
        .map(|&(clip, time)| match &rig.streamed_body {
            Some(body) => Ok(FrameBounds::of(&streamed_frame(rig, body, set, clip, time, false)?.positions)),
            None => Ok(frame_bounds(set, &plan, &FramePose::sample(rig, set, clip, time))),
        })
        .collect::<Result<_>>()?;
    let all = FrameBounds::merge(&per_frame);
    Ok((all.min, all.max))
}

/// Bounds of the skinned positions of one frame (or several, merged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrameBounds {
    /// Per-axis minimum of the positions (meaningful only when `finite`).
    pub(crate) min: Vec3,
    /// Per-axis maximum of the positions (meaningful only when `finite`).
    pub(crate) max: Vec3,
    /// Whether every coordinate was finite.
    pub(crate) finite: bool,
}

impl FrameBounds {
    /// The bounds of `positions`.
    pub(crate) fn of(positions: &[Vec3]) -> FrameBounds {
        positions
            .iter()
            .fold(FrameBounds { min: Vec3::INFINITY, max: Vec3::NEG_INFINITY, finite: true }, |a, p| {
                FrameBounds { min: a.min.min(*p), max: a.max.max(*p), finite: a.finite && p.is_finite() }
            })
    }

    /// The bounds of all of `frames`, merged in order.
    pub(crate) fn merge(frames: &[FrameBounds]) -> FrameBounds {
        frames
            .iter()
            .fold(FrameBounds { min: Vec3::INFINITY, max: Vec3::NEG_INFINITY, finite: true }, |a, b| {
                FrameBounds { min: a.min.min(b.min), max: a.max.max(b.max), finite: a.finite && b.finite }
            })
    }
}

/// [`FrameBounds`] of one frame: its positions only (no normals, nothing stored).
pub(crate) fn frame_bounds(set: &VertexSet, plan: &SkinPlan, pose: &FramePose) -> FrameBounds {
    let mut bounds =
        BoundsSink { lo: [Vec4::INFINITY; 3], hi: [Vec4::NEG_INFINITY; 3], finite: BVec4A::splat(true) };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut bounds);
    let lane_min = |v: Vec4| v.x.min(v.y).min(v.z).min(v.w);
    let lane_max = |v: Vec4| v.x.max(v.y).max(v.z).max(v.w);
    FrameBounds {
        min: Vec3::new(lane_min(bounds.lo[0]), lane_min(bounds.lo[1]), lane_min(bounds.lo[2])),
        max: Vec3::new(lane_max(bounds.hi[0]), lane_max(bounds.hi[1]), lane_max(bounds.hi[2])),
        finite: bounds.finite.all(),
    }
}

/// Skins one frame into `positions`, `normals` and optionally `tangents` (each at least
/// `set.vertex_count()` long; vertex `v` at index `v`), as [`skin_frames_into`] does for each of its
/// frames.
pub(crate) fn skin_frame_into(
    set: &VertexSet,
    plan: &SkinPlan,
    pose: &FramePose,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) {
    let mut sink = ArraySink { positions, normals: Some(normals), tangents };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut sink);
}

/// Skins one frame straight into its [`vat_core::format::encoding::VertexFormat::Packed64`] texels (`texels` holds 8 bytes per
/// vertex, vertex `v` at byte `8 v`): the bytes [`vat_core::format::encoding::encode_vertex_texels`] gives
/// for the positions and normals [`skin_frame_into`] computes, with nearest normal rounding,
/// without storing them.
pub(crate) fn skin_frame_packed64(
    set: &VertexSet,
    plan: &SkinPlan,
    pose: &FramePose,
    encoder: &Packed64Encoder,
    texels: &mut [u8],
) {
    let mut sink = Packed64Sink { encoder, texels };
    skin_into(set, plan, &pose.bones, &pose.morph_weights, &mut sink);
}

/// The vertices of a set grouped by how they are skinned, so that the kernel runs four vertices at
/// a time with one skinning matrix per group where it can, and without a branch per vertex:
///
/// - vertices wholly on one bone (weight exactly 1 in slot 0 and 0 in the other used slots), by
///   bone: skinned by that bone's matrix as it is;
/// - vertices with the same non-zero (bone, weight) pairs in the same slot order, when at least
///   [`LANES`] share them (rigs weight whole rings of vertices alike; the procedural humanoid has
///   63 such sets for 2,438 vertices): blended once per frame, `Σ w_i * bone(j_i)` in slot order;
/// - every other vertex, by its number `k` of non-zero weights, blended per vertex the same way.
///
/// A vertex's result does not depend on its group or lane: it is the same IEEE operations on its
/// own data either way. Built once per vertex set (with the rest positions and normals of every
/// group's lanes gathered in advance), used every frame.
pub(crate) struct SkinPlan {
    pub(super) groups: Vec<SkinGroup>,
    /// Vertices covered: the shortest per-vertex array's length.
    pub(super) vertex_count: usize,
}

/// A vertex's skinning key in [`SkinPlan::new`]: its bone if wholly on one, else its non-zero
/// (bone, weight bits) pairs in slot order.
pub(super) type WeightKey = (Option<u16>, Vec<(u16, u32)>);

/// The vertices sharing one [`WeightKey`].
pub(super) struct WeightSet {
    pub(super) bone: Option<u16>,
    pub(super) pairs: Vec<(u16, f32)>,
    pub(super) vertices: Vec<u32>,
}

/// How the vertices of a [`SkinGroup`] get their skinning matrices.
#[derive(Clone)]
pub(super) enum GroupMatrix {
    /// Every vertex is wholly on this bone.
    Rigid(u16),
    /// Every vertex blends these bones with these weights, in this order.
    Shared { joints: Vec<u16>, weights: Vec<f32> },
    /// Each vertex blends its own `k` bones: `joints` and `weights` of the group, `k` per vertex.
    PerVertex { k: usize, joints: Vec<u16>, weights: Vec<f32> },
}

/// One group of a [`SkinPlan`].
#[derive(Clone)]
pub(super) struct SkinGroup {
    pub(super) matrix: GroupMatrix,
    /// The vertices, increasing.
    pub(super) vertices: Vec<u32>,
    /// Per chunk of [`LANES`] vertices, the rest positions then normals across the lanes (x, y, z
    /// each), lanes past the group's end repeating its last vertex.
    pub(super) rest: Vec<[Vec4; 6]>,
}

impl SkinPlan {
    /// Groups the vertices of `set`.
    pub(crate) fn new(set: &VertexSet) -> Self {
        let influences = set.influence_count.clamp(1, MAX_INFLUENCES);
        let n = [set.positions.len(), set.normals.len(), set.joints.len(), set.weights.len()]
            .into_iter()
            .min()
            .unwrap_or(0);
        // Vertices by exact (bone, weight bits) list, in order of first appearance; rigid
        // vertices keyed by their bone alone (weight list empty).
        let mut keys: HashMap<WeightKey, usize> = HashMap::new();
        let mut sets: Vec<WeightSet> = Vec::new();
        for (v, (j, w)) in set.joints.iter().zip(&set.weights).take(n).enumerate() {
            let rigid = w[0] == 1.0 && w[1..influences].iter().all(|&x| x == 0.0);
            // NaN counts as non-zero, as in `w != 0.0`.
            let pairs: Vec<(u16, f32)> = if rigid {
                Vec::new()
            } else {
                (0..influences).filter(|&s| w[s] != 0.0).map(|s| (j[s], w[s])).collect()
            };
            let bone = rigid.then_some(j[0]);
            let key = (bone, pairs.iter().map(|&(j, w)| (j, w.to_bits())).collect());
            let index = *keys.entry(key).or_insert_with(|| {
                sets.push(WeightSet { bone, pairs, vertices: Vec::new() });
                sets.len() - 1
            });
            sets[index].vertices.push(v as u32);
        }
        let mut groups = Vec::new();
        // Vertices blended one by one: (k, vertex, its weight set), grouped by k in vertex order.
        let mut per_vertex: Vec<(usize, u32, usize)> = Vec::new();
        for (i, s) in sets.iter().enumerate() {
            match s.bone {
                Some(b) => groups.push((GroupMatrix::Rigid(b), s.vertices.clone())),
                None if s.vertices.len() >= LANES => {
                    let (joints, weights) = s.pairs.iter().copied().unzip();
                    groups.push((GroupMatrix::Shared { joints, weights }, s.vertices.clone()));
                }
                None => per_vertex.extend(s.vertices.iter().map(|&v| (s.pairs.len(), v, i))),
            }
        }
        per_vertex.sort_unstable_by_key(|e| (e.0, e.1));
        for run in per_vertex.chunk_by(|a, b| a.0 == b.0) {
            let vertices = run.iter().map(|e| e.1).collect();
            let (joints, weights) = run.iter().flat_map(|e| sets[e.2].pairs.iter().copied()).unzip();
            groups.push((GroupMatrix::PerVertex { k: run[0].0, joints, weights }, vertices));
        }
        let groups = groups
            .into_iter()
            .map(|(matrix, vertices)| {
                let rest = vertices
                    .chunks(LANES)
                    .map(|chunk| {
                        let ids = lane_ids(chunk);
                        let p = gathered(&set.positions, &ids);
                        let nr = gathered(&set.normals, &ids);
                        [p[0], p[1], p[2], nr[0], nr[1], nr[2]]
                    })
                    .collect();
                SkinGroup { matrix, vertices, rest }
            })
            .collect();
        Self { groups, vertex_count: n }
    }
}

/// The vertex ids of the lanes of a chunk of 1 to [`LANES`] vertices (lanes past its end repeat
/// its last vertex).
#[inline(always)]
pub(super) fn lane_ids(chunk: &[u32]) -> [u32; LANES] {
    let last = chunk.last().copied().unwrap_or(0);
    [
        chunk.first().copied().unwrap_or(last),
        *chunk.get(1).unwrap_or(&last),
        *chunk.get(2).unwrap_or(&last),
        last,
    ]
}

/// `v[ids[l]]` across the lanes, x, y and z (a missing vertex reads as zero).
#[inline(always)]
pub(super) fn gathered(v: &[Vec3], ids: &[u32; LANES]) -> [Vec4; 3] {
    let at = |l: usize| v.get(ids[l] as usize).copied().unwrap_or(Vec3::ZERO);
    let t = transposed([at(0), at(1), at(2), at(3)]);
    [t.x_axis, t.y_axis, t.z_axis]
}
