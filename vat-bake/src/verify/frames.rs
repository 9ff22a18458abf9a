//! The comparison of a bake's decoded frames with fresh frames of its source ([`super`] says
//! what is checked): the per-vertex error figures, the per-clip checks run in parallel chunks of
//! frames, and the root-motion transform of fresh frames.

use rayon::prelude::*;
use vat_core::clip::{Clip, ClipMode};
use vat_core::format::encoding;
use vat_core::format::reference::{
    BoneAnimationView, SkinResidualView, VertexAnimationView, decode_bone_frame_at, decode_object_frame,
    decode_skin_residual_frame_at, finish_skin_residual_frame,
};
use vat_core::instance::InstanceRecord;
use vat_core::playback::{self, Interpolation};
use vat_core::root_motion::{RootMotionTrack, RootPose};

use super::{ClipReport, SEAM_WARNING_RATIO, WorstSample, exact_frame_offset};
use crate::prepare::frame_time;
use crate::rig::Rig;
use crate::skin::{self, VertexSet};
use crate::{BakeError, Result};

/// Per-axis difference and squared Euclidean distance, metres (m²): the square root is taken once,
/// of the largest, not per vertex.
pub(super) fn position_errors(decoded: [f32; 3], fresh: [f32; 3]) -> ([f64; 3], f64) {
    let d: [f64; 3] = std::array::from_fn(|a| (f64::from(decoded[a]) - f64::from(fresh[a])).abs());
    (d, d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
}

/// Angle between two non-zero vectors, radians: `atan2(|a x b|, a . b)` in f64 (accurate for tiny
/// angles, unlike `acos`).
pub(super) fn angle(a: [f32; 3], b: [f32; 3]) -> f64 {
    let a = a.map(f64::from);
    let b = b.map(f64::from);
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let sin = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    let cos = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    // Small angles (every vertex of a good bake): atan(x) by its series, x = tan(angle) < 1/20, whose
    // first omitted term is below x^9 / 9 < 2e-13 rad: exact for reporting, and ten times cheaper
    // than atan2.
    if cos > 0.0 && sin < 0.05 * cos {
        let x = sin / cos;
        let x2 = x * x;
        x * (1.0 - x2 * (1.0 / 3.0 - x2 * (1.0 / 5.0 - x2 / 7.0)))
    } else {
        sin.atan2(cos)
    }
}

/// Bins of an [`ErrorHistogram`] below its range (one more counts what is past it).
pub(super) const HISTOGRAM_BINS: usize = 256;

/// How many samples' errors fell in each of [`HISTOGRAM_BINS`] equal bins of `[0, range)` (the
/// range is twice the bound, so a bake within its bound fills the lower half), the last entry
/// counting those at or past `range` (NaN included): for percentiles.
#[derive(Debug, Clone, Copy)]
pub(super) struct ErrorHistogram {
    pub(super) counts: [u64; HISTOGRAM_BINS + 1],
}

impl Default for ErrorHistogram {
    fn default() -> Self {
        Self { counts: [0; HISTOGRAM_BINS + 1] }
    }
}

impl ErrorHistogram {
    /// Counts `error` in a histogram over `[0, range)`.
    pub(super) fn add(&mut self, error: f64, range: f64) {
        let bin = if error >= 0.0 && error < range && range > 0.0 {
            ((error / range * HISTOGRAM_BINS as f64) as usize).min(HISTOGRAM_BINS - 1)
        } else {
            HISTOGRAM_BINS
        };
        self.counts[bin] += 1;
    }

    /// Adds `other`'s counts.
    pub(super) fn merge(&mut self, other: &ErrorHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// An upper bound on the `q` quantile (`0 < q <= 1`) of the counted errors over `[0, range)`:
    /// the upper edge of the bin it falls in (at most `range / HISTOGRAM_BINS` above it), or
    /// `max` when it falls past the range (or nothing was counted).
    pub(super) fn quantile(&self, q: f64, range: f64, max: f64) -> f64 {
        let total: u64 = self.counts.iter().sum();
        let needed = (q * total as f64).ceil() as u64;
        let mut seen = 0;
        for (k, &c) in self.counts[..HISTOGRAM_BINS].iter().enumerate() {
            seen += c;
            if seen >= needed && total > 0 {
                return ((k + 1) as f64 * range / HISTOGRAM_BINS as f64).min(max);
            }
        }
        max
    }
}

/// Error figures of one frame (summed sequentially afterwards, so means do not depend on threads).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FrameErrors {
    pub(super) max_axis: f64,
    pub(super) sum_axis: f64,
    /// Largest squared Euclidean distance, m².
    pub(super) max_euclid_sq: f64,
    pub(super) max_normal: f64,
    pub(super) sum_normal: f64,
    pub(super) max_tangent: f64,
    pub(super) max_bone: f64,
    pub(super) failed: u64,
    pub(super) worst_vertex: u32,
    /// Sum of the Euclidean position errors, metres.
    pub(super) sum_euclid: f64,
    /// Euclidean position errors over `[0, 2 * Context::position_range_m)`.
    pub(super) position_hist: ErrorHistogram,
    /// Normal errors over `[0, 2 * Context::normal_bound_rad)`.
    pub(super) normal_hist: ErrorHistogram,
}

/// Everything [`compare_frame`] needs that is the same for every frame.
pub(super) struct Context<'a> {
    pub(super) view: &'a VertexAnimationView<'a>,
    pub(super) bones: Option<BoneAnimationView<'a>>,
    pub(super) tangent_texture: Option<&'a [u8]>,
    pub(super) bound_m: [f64; 3],
    pub(super) normal_bound_rad: f64,
    pub(super) tangent_bound_rad: f64,
    pub(super) vertex_count: usize,
    /// The skin-residual format's decoder, for an asset in it (the VAT path then decodes through it).
    pub(super) residual: Option<&'a SkinResidualView<'a>>,
    /// A bound on the Euclidean position error too (the skin-residual format's), metres.
    pub(super) euclid_bound_m: Option<f64>,
}

impl Context<'_> {
    /// Half the range of the position histogram: the Euclidean bound, or the largest axis bound.
    pub(super) fn position_range_m(&self) -> f64 {
        self.euclid_bound_m.unwrap_or(self.bound_m[0].max(self.bound_m[1]).max(self.bound_m[2]))
    }
}

/// Largest per-axis position error, metres, between `decoded` and `fresh` (matching vertices), NaN
/// when any is: bone mode's path of one frame, which no failure count catches otherwise.
pub(super) fn max_axis_error_m(decoded: &[[f32; 3]], fresh: &[[f32; 3]]) -> f64 {
    let mut max = 0.0f64;
    for (&d, &f) in decoded.iter().zip(fresh) {
        let (axes, _) = position_errors(d, f);
        if axes.iter().any(|a| a.is_nan()) {
            return f64::NAN;
        }
        max = max.max(axes[0]).max(axes[1]).max(axes[2]);
    }
    max
}

/// The larger of two errors, NaN when either is.
fn max_keeping_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// Where the decoder reads: a clip at a phase, and the baked frame that is when it is one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Probe {
    pub(super) clip: u32,
    pub(super) offset: f32,
    pub(super) interpolation: Interpolation,
    /// The absolute frame read alone (baked frames), for the tangent texture.
    pub(super) frame: Option<u32>,
}

/// One freshly skinned frame.
pub(super) struct Fresh<'a> {
    pub(super) positions: &'a [[f32; 3]],
    pub(super) normals: &'a [[f32; 3]],
    pub(super) tangents: Option<&'a [[f32; 4]]>,
}

/// The instance record that plays `probe` at time 0.
fn probe_instance(probe: Probe) -> InstanceRecord {
    InstanceRecord { clip_a: probe.clip, phase_offset_a: probe.offset, rate_a: 0.0, ..Default::default() }
}

/// Decodes every vertex at `probe` and compares it with a fresh frame; at a baked frame, bone
/// mode's path too (the skin alone, for a skin-residual file).
pub(super) fn compare_frame(ctx: &Context<'_>, probe: Probe, fresh: Fresh<'_>) -> Result<FrameErrors> {
    // The whole frame decoded at once, bit for bit what decode_vertex gives each vertex.
    let n = ctx.vertex_count;
    let instance = probe_instance(probe);
    let interp = probe.interpolation;
    DECODED.with_borrow_mut(|buffers| {
        // Each worker thread keeps its frame buffers: a frame is decoded into them in full.
        let FrameBuffers { positions: p, normals: nrm, bone_positions: bone_p, bone_normals: bone_n } =
            buffers;
        p.resize(n, [0.0; 3]);
        nrm.resize(n, [0.0; 3]);
        let mut max_bone = 0.0;
        match (ctx.residual, probe.frame) {
            (None, frame) => {
                decode_object_frame(ctx.view, probe.clip, probe.offset, interp, p, nrm)?;
                if let (Some(bones), Some(_)) = (&ctx.bones, frame) {
                    bone_p.resize(n, [0.0; 3]);
                    bone_n.resize(n, [0.0; 3]);
                    decode_bone_frame_at(bones, &instance, 0.0, interp, bone_p, bone_n)?;
                    max_bone = max_axis_error_m(bone_p, fresh.positions);
                }
            }
            // The skin at the probe (bone mode's path), then the stored frame's residual on it.
            (Some(view), Some(frame)) => {
                decode_bone_frame_at(&view.bones, &instance, 0.0, interp, p, nrm)?;
                if ctx.bones.is_some() {
                    max_bone = max_axis_error_m(p, fresh.positions);
                }
                finish_skin_residual_frame(view, frame, p, nrm)?;
            }
            (Some(view), None) => decode_skin_residual_frame_at(view, &instance, 0.0, interp, p, nrm)?,
        }
        let mut e = compare_decoded(ctx, probe, fresh, p, nrm)?;
        e.max_bone = max_bone;
        Ok(e)
    })
}

/// One verification thread's frame buffers: the decoded frame, and bone mode's path of a file
/// that has both (the skin-residual format decodes its skin in place).
#[derive(Default)]
pub(super) struct FrameBuffers {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    bone_positions: Vec<[f32; 3]>,
    bone_normals: Vec<[f32; 3]>,
}

thread_local! {
    /// One decoded frame per verification thread, reused frame after frame.
    static DECODED: std::cell::RefCell<FrameBuffers> = std::cell::RefCell::new(FrameBuffers::default());
}

/// [`compare_frame`] once the frame at `probe` is decoded into `decoded_p` and `decoded_n`.
pub(super) fn compare_decoded(
    ctx: &Context<'_>,
    probe: Probe,
    fresh: Fresh<'_>,
    decoded_p: &[[f32; 3]],
    decoded_n: &[[f32; 3]],
) -> Result<FrameErrors> {
    let Fresh { positions, normals, tangents } = fresh;
    let n = ctx.vertex_count;
    let mut e = FrameErrors::default();
    for v in 0..n {
        let (axes, euclid_sq) = position_errors(decoded_p[v], positions[v]);
        let axis = axes[0].max(axes[1]).max(axes[2]);
        let normal = angle(decoded_n[v], normals[v]);
        // NaN errors fail too.
        let outside = |error: f64, bound: f64| error > bound || error.is_nan();
        let euclid = euclid_sq.sqrt();
        let mut bad = (0..3).any(|a| outside(axes[a], ctx.bound_m[a]))
            || outside(normal, ctx.normal_bound_rad)
            || ctx.euclid_bound_m.is_some_and(|b| outside(euclid, b));
        e.sum_euclid += euclid;
        e.position_hist.add(euclid, 2.0 * ctx.position_range_m());
        e.normal_hist.add(normal, 2.0 * ctx.normal_bound_rad);
        if let (Some(texture), Some(t), Some(frame)) = (ctx.tangent_texture, tangents, probe.frame) {
            let texel = ctx.view.layout.texel_index(frame, v as u32) as usize * 8;
            let q: [f32; 4] = std::array::from_fn(|c| {
                let i = texel + 2 * c;
                encoding::f16_bits_to_f32(u16::from_le_bytes([texture[i], texture[i + 1]]))
            });
            let (_, decoded) = encoding::quat_to_tangent_frame(q);
            let fresh = t[v];
            let error = if (decoded[3] < 0.0) != (fresh[3] < 0.0) {
                std::f64::consts::PI
            } else {
                angle([decoded[0], decoded[1], decoded[2]], [fresh[0], fresh[1], fresh[2]])
            };
            e.max_tangent = e.max_tangent.max(error);
            bad |= outside(error, ctx.tangent_bound_rad);
        }
        if axis > e.max_axis {
            e.worst_vertex = v as u32;
        }
        e.max_axis = e.max_axis.max(axis);
        e.sum_axis += axis;
        e.max_euclid_sq = e.max_euclid_sq.max(euclid_sq);
        e.max_normal = e.max_normal.max(normal);
        e.sum_normal += normal;
        e.failed += u64::from(bad);
    }
    Ok(e)
}

/// Largest per-axis distance between matching points of `a` and `b`, metres (frame-to-frame
/// motion and seams: reported figures, f32 differences are exact enough). The maximum is taken
/// over the bit patterns of the non-negative differences, which order as the values do, so the
/// loop vectorises; a NaN difference (its bits above infinity's) makes the result NaN.
pub(super) fn max_axis_distance(a: &[[f32; 3]], b: &[[f32; 3]]) -> f64 {
    let a = a.as_flattened();
    let b = b.as_flattened();
    let mut m = 0u32;
    for (x, y) in a.iter().zip(b) {
        m = m.max((x - y).abs().to_bits());
    }
    f64::from(f32::from_bits(m))
}

/// Frames skinned and compared at a time: bounds verification's memory by a few frames of fresh
/// skinning whatever the clip length.
pub(super) const FRAME_BLOCK: usize = 48;

/// Frames one verification task skins, decodes and compares: a few frames of a large mesh stay in
/// cache between the skinning and the comparison.
pub(super) const FRAME_CHUNK: usize = 4;

/// What one task of [`FRAME_CHUNK`] baked frames found.
pub(super) struct ChunkResult {
    /// Per frame, in order.
    errors: Vec<FrameErrors>,
    /// Largest position change of the reduction to 8 influences, metres.
    reduction: f64,
    /// Largest frame-to-frame step within the chunk, metres.
    max_step: f64,
    /// The chunk's first and last fresh frames (positions), for the steps between chunks.
    first: Vec<[f32; 3]>,
    last: Vec<[f32; 3]>,
}

/// Bytes per vertex that verification holds for one block of frames on `threads` threads: each
/// busy thread's chunk of fresh positions and normals (24 bytes a vertex-frame, 40 with tangents; twice
/// when influences were reduced) and decoded frame (24 bytes, 48 with bone mode's path beside a
/// vertex texture: `bone_frame`), and the first and last fresh positions of every chunk of the
/// block (24 bytes a chunk); counted by [`crate::prepare::estimate_bake_bytes`].
pub(crate) fn block_bytes_per_vertex(tangents: bool, reduced: bool, bone_frame: bool, threads: usize) -> u64 {
    let fresh = if tangents { 40 } else { 24 };
    let chunk = FRAME_CHUNK as u64 * fresh * if reduced { 2 } else { 1 };
    let decoded = if bone_frame { 48 } else { 24 };
    let chunks = FRAME_BLOCK.div_ceil(FRAME_CHUNK);
    threads.clamp(1, chunks) as u64 * (chunk + decoded) + chunks as u64 * 24
}

/// Moves one fresh frame into the bake's in-place space: `T^-1` applied (in f64, rounded once)
/// to every position, and its rotation to every normal and tangent direction (`normals` may be
/// empty: only positions are moved then).
pub(super) fn to_in_place(
    pose: &RootPose,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
    tangents: Option<&mut [[f32; 4]]>,
) {
    if *pose == RootPose::IDENTITY {
        return;
    }
    let (s, c) = (-f64::from(pose.yaw)).sin_cos();
    let turn = |v: [f64; 3]| [c * v[0] + s * v[2], v[1], c * v[2] - s * v[0]];
    let (x, z) = (f64::from(pose.x), f64::from(pose.z));
    for p in positions.iter_mut() {
        let r = turn([f64::from(p[0]) - x, f64::from(p[1]), f64::from(p[2]) - z]);
        *p = r.map(|v| v as f32);
    }
    for nrm in normals.iter_mut() {
        *nrm = turn(nrm.map(f64::from)).map(|v| v as f32);
    }
    for t in tangents.into_iter().flatten() {
        let r = turn([f64::from(t[0]), f64::from(t[1]), f64::from(t[2])]);
        *t = [r[0] as f32, r[1] as f32, r[2] as f32, t[3]];
    }
}

/// Sums per-frame figures in frame order (deterministic whatever the thread count).
pub(super) fn accumulate(total: &mut FrameErrors, e: &FrameErrors) {
    total.max_axis = total.max_axis.max(e.max_axis);
    total.sum_axis += e.sum_axis;
    total.max_euclid_sq = total.max_euclid_sq.max(e.max_euclid_sq);
    total.max_normal = total.max_normal.max(e.max_normal);
    total.sum_normal += e.sum_normal;
    total.max_tangent = total.max_tangent.max(e.max_tangent);
    total.max_bone = max_keeping_nan(total.max_bone, e.max_bone);
    total.failed += e.failed;
    total.sum_euclid += e.sum_euclid;
    total.position_hist.merge(&e.position_hist);
    total.normal_hist.merge(&e.normal_hist);
}

pub(super) type Skinned = (Vec<[f32; 3]>, Vec<[f32; 3]>, Option<Vec<[f32; 4]>>);

/// What the checks of every clip add up to.
#[derive(Default)]
pub(super) struct Totals {
    /// Baked frames, summed in frame order.
    pub(super) frames: FrameErrors,
    /// Mid-frames, summed in frame order.
    pub(super) mid: FrameErrors,
    pub(super) vertex_frames: u64,
    pub(super) mid_samples: u64,
    /// The worst baked sample: its per-axis error, metres, and where.
    pub(super) worst: Option<(f64, WorstSample)>,
    /// Largest position change of the reduction to 8 influences, metres.
    pub(super) reduction_max: f64,
    /// Largest root-motion track error, metres.
    pub(super) root_max: f64,
    pub(super) clips: Vec<ClipReport>,
    pub(super) warnings: Vec<String>,
}

/// The checks of each clip of a bake against fresh frames of its source: every baked frame, the
/// seam of a looping clip and, when asked, the mid-frames.
pub(super) struct ClipChecks<'a> {
    pub(super) rig: &'a Rig,
    /// The source's vertices in the baked order.
    pub(super) set: &'a VertexSet,
    pub(super) ctx: &'a Context<'a>,
    /// Compare with full skinning (influences were reduced to 8 and the loss is not accepted).
    pub(super) full_reference: bool,
    /// Check the mid-frames ([`VerifyOptions::mid_frames`]).
    pub(super) mid_frames: bool,
    pub(super) skinner: skin::FrameSkinner<'a>,
}

impl ClipChecks<'_> {
    /// Checks baked clip `ci`, `clip`, made from rig clip `source_index` (its root-motion `track`
    /// when it has one), into `totals`.
    ///
    /// Errors: no phase selects one of its frames exactly, or the source cannot be skinned.
    pub(super) fn check(
        &self,
        ci: usize,
        clip: &Clip,
        source_index: usize,
        track: Option<&RootMotionTrack>,
        totals: &mut Totals,
    ) -> Result<()> {
        let source = &self.rig.clips[source_index];
        let (first_frame, max_step) = self.baked_frames(ci, clip, source_index, track, totals)?;
        totals.vertex_frames += u64::from(clip.frame_count) * self.set.vertex_count() as u64;

        // The seam of a looping clip: the source's end pose against its start pose (what playback
        // joins when it wraps from the last frame back to the first).
        let looping = clip.mode == ClipMode::Looping;
        let seam = if looping && source.duration() > 0.0 {
            let (mut end, mut end_normals, _) =
                self.skin_block(&[(source_index, source.end)], false, self.full_reference)?;
            if let Some(track) = track {
                to_in_place(&track.cycle, &mut end, &mut end_normals, None);
            }
            Some(max_axis_distance(first_frame.as_deref().unwrap_or(&[]), &end))
        } else if looping {
            Some(0.0)
        } else {
            None
        };
        let bound_m = self.ctx.bound_m;
        let quantum = bound_m[0].max(bound_m[1]).max(bound_m[2]);
        let seam_warning = seam.is_some_and(|s| s > SEAM_WARNING_RATIO * max_step && s > quantum);
        if let (true, Some(s)) = (seam_warning, seam) {
            totals.warnings.push(format!(
                "looping clip \"{}\": its seam (end pose to start pose) is {:.3} mm, {:.1} times its largest \
                 frame-to-frame step ({:.3} mm): it pops at every wrap; bake it with --once if it plays once",
                clip.name,
                s * 1e3,
                if max_step > 0.0 { s / max_step } else { f64::INFINITY },
                max_step * 1e3
            ));
        }
        totals.clips.push(ClipReport {
            name: clip.name.clone(),
            looping,
            frames: clip.frame_count,
            seam_mm: seam.map(|s| s * 1e3),
            max_frame_step_mm: max_step * 1e3,
            seam_warning,
        });
        // A pose has nothing between frames.
        if source.duration() == 0.0 || !self.mid_frames {
            return Ok(());
        }
        self.mid_frames(ci, clip, source_index, track, totals)
    }

    /// Every baked frame of the clip, a block at a time, each block in chunks of a few frames that
    /// one task skins, decodes and compares while they are still in cache. Returns the clip's first
    /// fresh frame (for the seam) and its largest frame-to-frame step, metres.
    fn baked_frames(
        &self,
        ci: usize,
        clip: &Clip,
        source_index: usize,
        track: Option<&RootMotionTrack>,
        totals: &mut Totals,
    ) -> Result<(Option<Vec<[f32; 3]>>, f64)> {
        let offsets: Vec<f32> = (0..clip.frame_count)
            .map(|k| {
                exact_frame_offset(clip, k).ok_or_else(|| {
                    BakeError::Verification(format!(
                        "no phase selects frame {k} of clip \"{}\" exactly",
                        clip.name
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let frames = clip.frame_count as usize;
        let mut first_frame: Option<Vec<[f32; 3]>> = None;
        let mut previous: Option<Vec<[f32; 3]>> = None;
        let mut max_step = 0.0f64;
        for block in (0..frames).step_by(FRAME_BLOCK) {
            let ks = block..(block + FRAME_BLOCK).min(frames);
            let chunks: Vec<ChunkResult> = ks
                .clone()
                .step_by(FRAME_CHUNK)
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|start| {
                    let frames = start..(start + FRAME_CHUNK).min(ks.end);
                    self.baked_chunk(ci, clip, source_index, track, &offsets, frames)
                })
                .collect::<Result<_>>()?;
            // In frame order: the figures do not depend on how the chunks were scheduled.
            let mut k = ks.start;
            for chunk in chunks {
                for e in &chunk.errors {
                    if totals.worst.as_ref().is_none_or(|(w, _)| e.max_axis > *w) {
                        let sample =
                            WorstSample { clip: clip.name.clone(), frame: k as u32, vertex: e.worst_vertex };
                        totals.worst = Some((e.max_axis, sample));
                    }
                    accumulate(&mut totals.frames, e);
                    k += 1;
                }
                totals.reduction_max = totals.reduction_max.max(chunk.reduction);
                // Frame-to-frame motion: within the chunk, and from the chunk before.
                max_step = max_step.max(chunk.max_step);
                if let Some(prev) = &previous {
                    max_step = max_step.max(max_axis_distance(prev, &chunk.first));
                }
                if first_frame.is_none() {
                    first_frame = Some(chunk.first);
                }
                previous = Some(chunk.last);
            }
        }
        Ok((first_frame, max_step))
    }

    /// One task of [`Self::baked_frames`]: the clip-local `frames`, skinned (on this thread),
    /// moved in place by the root `track`, decoded and compared.
    fn baked_chunk(
        &self,
        ci: usize,
        clip: &Clip,
        source_index: usize,
        track: Option<&RootMotionTrack>,
        offsets: &[f32],
        frames: std::ops::Range<usize>,
    ) -> Result<ChunkResult> {
        let (n, set) = (self.set.vertex_count(), self.set);
        let source = &self.rig.clips[source_index];
        let samples: Vec<(usize, f32)> =
            frames.clone().map(|k| (source_index, frame_time(source, clip, k as u32))).collect();
        let (mut fresh, mut other) = self.skin_baked_chunk(&samples, self.ctx.tangent_texture.is_some())?;
        let (positions, normals, tangents) = (&mut fresh.0, &mut fresh.1, &mut fresh.2);
        if let Some(track) = track {
            for (f, k) in frames.clone().enumerate() {
                let pose = track.frames.get(k).copied().unwrap_or(RootPose::IDENTITY);
                let r = f * n..(f + 1) * n;
                let t = tangents.as_mut().map(|t| &mut t[r.clone()]);
                to_in_place(&pose, &mut positions[r.clone()], &mut normals[r.clone()], t);
                if let Some(o) = other.as_mut() {
                    to_in_place(&pose, &mut o[r], &mut [], None);
                }
            }
        }
        // What the reduction to 8 influences costs, on the vertices it touched.
        let mut reduction = 0.0f64;
        if let Some(other) = &other {
            for f in 0..samples.len() {
                for (v, _) in &set.full_influences {
                    let i = f * n + *v as usize;
                    let (d, _) = position_errors(positions[i], other[i]);
                    reduction = reduction.max(d[0].max(d[1]).max(d[2]));
                }
            }
        }
        let errors = frames
            .clone()
            .enumerate()
            .map(|(f, k)| {
                let r = f * n..(f + 1) * n;
                let probe = Probe {
                    clip: ci as u32,
                    offset: offsets[k],
                    interpolation: Interpolation::Point,
                    frame: Some(clip.first_frame + k as u32),
                };
                let fresh = Fresh {
                    positions: &positions[r.clone()],
                    normals: &normals[r.clone()],
                    tangents: tangents.as_ref().map(|t| &t[r]),
                };
                compare_frame(self.ctx, probe, fresh)
            })
            .collect::<Result<Vec<_>>>()?;
        let frame = |f: usize| &positions[f * n..(f + 1) * n];
        let max_step =
            (1..samples.len()).map(|f| max_axis_distance(frame(f - 1), frame(f))).fold(0.0, f64::max);
        Ok(ChunkResult {
            errors,
            reduction,
            max_step,
            first: frame(0).to_vec(),
            last: frame(samples.len() - 1).to_vec(),
        })
    }

    /// The mid-frames of the clip: halfway to the next frame (looping clips wrap to the clip's end
    /// time), decoded with linear interpolation and compared with the source at that time.
    fn mid_frames(
        &self,
        ci: usize,
        clip: &Clip,
        source_index: usize,
        track: Option<&RootMotionTrack>,
        totals: &mut Totals,
    ) -> Result<()> {
        let n = self.set.vertex_count();
        let source = &self.rig.clips[source_index];
        let intervals = match clip.mode {
            ClipMode::Looping => clip.frame_count,
            ClipMode::OneShot => clip.frame_count - 1,
        };
        let mut mid_offsets = Vec::with_capacity(intervals as usize);
        let mut mid_samples_t = Vec::with_capacity(intervals as usize);
        for k in 0..intervals {
            let offset = ((f64::from(k) + 0.5) / f64::from(intervals)) as f32;
            let s = playback::clip_sample(clip, offset, 0.0, 0.0, Interpolation::Linear);
            let (f0, f1, w) = (s.frames[1], s.frames[2], f64::from(s.weights[2]));
            let t0 = f64::from(frame_time(source, clip, f0));
            let t1 = if f1 > f0 { f64::from(frame_time(source, clip, f1)) } else { f64::from(source.end) };
            mid_offsets.push(offset);
            mid_samples_t.push((source_index, (t0 + w * (t1 - t0)) as f32));
        }
        for block in (0..mid_offsets.len()).step_by(FRAME_BLOCK) {
            let ks = block..(block + FRAME_BLOCK).min(mid_offsets.len());
            let (mut positions, mut normals, _) =
                self.skin_block(&mid_samples_t[ks.clone()], false, self.full_reference)?;
            if let Some(track) = track {
                for f in 0..ks.len() {
                    let pose = track.pose_in_cycle(clip, f64::from(mid_offsets[ks.start + f]));
                    let r = f * n..(f + 1) * n;
                    to_in_place(&pose, &mut positions[r.clone()], &mut normals[r], None);
                }
            }
            let per_mid: Vec<FrameErrors> = (0..ks.len())
                .into_par_iter()
                .map(|f| {
                    let r = f * n..(f + 1) * n;
                    let probe = Probe {
                        clip: ci as u32,
                        offset: mid_offsets[ks.start + f],
                        interpolation: Interpolation::Linear,
                        frame: None,
                    };
                    compare_frame(
                        self.ctx,
                        probe,
                        Fresh { positions: &positions[r.clone()], normals: &normals[r], tangents: None },
                    )
                })
                .collect::<Result<_>>()?;
            for e in &per_mid {
                accumulate(&mut totals.mid, e);
            }
        }
        totals.mid_samples += (mid_offsets.len() * n) as u64;
        Ok(())
    }

    /// Fresh frames of `samples` (tangents when asked; every influence when `full`).
    fn skin_block(&self, samples: &[(usize, f32)], tangents: bool, full: bool) -> Result<Skinned> {
        let len = samples.len() * self.set.vertex_count();
        let (rig, set) = (self.rig, self.set);
        let mut p = vec![[0.0f32; 3]; len];
        let mut nrm = vec![[0.0f32; 3]; len];
        let mut t = tangents.then(|| vec![[0.0f32; 4]; len]);
        if full {
            skin::skin_frames_into_full(rig, set, samples, &mut p, &mut nrm, t.as_deref_mut())?;
        } else {
            skin::skin_frames_into(rig, set, samples, &mut p, &mut nrm, t.as_deref_mut())?;
        }
        Ok((p, nrm, t))
    }

    /// Baked frames of `samples` on this thread: the baked 8 influences skinned once, and, when
    /// some vertex has more, a copy with those vertices skinned by all of theirs:
    /// `(reference, the other)` for the comparison.
    fn skin_baked_chunk(
        &self,
        samples: &[(usize, f32)],
        tangents: bool,
    ) -> Result<(Skinned, Option<Vec<[f32; 3]>>)> {
        let len = samples.len() * self.set.vertex_count();
        let mut baked: Skinned =
            (vec![[0.0; 3]; len], vec![[0.0; 3]; len], tangents.then(|| vec![[0.0; 4]; len]));
        self.skinner.skin_frames(samples, &mut baked.0, &mut baked.1, baked.2.as_deref_mut())?;
        if self.set.full_influences.is_empty() {
            return Ok((baked, None));
        }
        let mut full = baked.clone();
        skin::apply_full_influences(
            self.rig,
            self.set,
            samples,
            &mut full.0,
            &mut full.1,
            full.2.as_deref_mut(),
        )?;
        Ok(if self.full_reference { (full, Some(baked.0)) } else { (baked, Some(full.0)) })
    }
}
