//! Verification: a bake decoded by vat-core's CPU reference decoder (exactly what the vertex shader
//! computes) against fresh CPU skinning of its source rig, at every baked frame and every vertex.
//!
//! - **Baked frames.** For frame `k` of a clip the decoder is driven with rate 0, point
//!   interpolation and a phase offset for which vat-core's playback selects frame `k` alone
//!   ([`exact_frame_offset`]), so the decoded value is the stored texel, not an interpolation. The
//!   fresh skin is taken at the same time the bake sampled. Each axis of each position must be within
//!   [`vat_core::format::encoding::position_error_bound`] of the format and the bake's box, each normal within
//!   [`vat_core::format::encoding::normal_error_bound_degrees`], each baked tangent (if any) within
//!   [`tangent_error_bound_degrees`]: otherwise the report says `passed: false`.
//! - **Mid-frames** (reported, never failed). Halfway between frames `k` and `k + 1` the decoder
//!   interpolates linearly; the fresh skin is taken at the time that interpolation weight stands for.
//!   The difference is the interpolation error of the frame rate, not a defect of the encoding.
//! - **Root motion** (a `--root-motion` bake, whose frames are in place): each fresh frame is first
//!   moved by the inverse of its clip's [`vat_core::root_motion::RootMotionTrack`] pose (in f64),
//!   so the decoded in-place frame plus the track must reproduce the source; the bounds grow by the
//!   rounding of the bake's own in-place transform (`root_motion_margin_m`, micrometres). The
//!   track itself, its per-cycle total included, is compared with a fresh extraction from the
//!   source (the `"root"` path, within the format's position bound). A tampered track fails.
//!
//! The baked vertex order is recovered from the source: the bake renumbers [`VertexSet::from_rig`]'s
//! vertices with [`crate::lods::locality_order`] (or keeps them), and the asset's rest-position stream
//! tells which.

use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use vat_core::clip::{Clip, ClipMode};
use vat_core::container::{Asset, StreamKind};
use vat_core::format::encoding;
use vat_core::format::reference::{
    BoneAnimationView, SkinResidualView, VertexAnimationView, decode_bone_frame_at,
};
use vat_core::format::skin_residual;
use vat_core::instance::InstanceRecord;
use vat_core::playback::{self, Interpolation};
use vat_core::root_motion::RootPose;

use crate::prepare::{PreparedBake, baked_vertex_set, frame_time};
use crate::rig::Rig;
use crate::skin::{self, VertexSet};
use crate::{BakeError, Result};

mod frames;

pub(crate) use frames::block_bytes_per_vertex;
use frames::*;

/// Where the largest position error of a verification was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstSample {
    /// Clip name.
    pub clip: String,
    /// Frame within the clip.
    pub frame: u32,
    /// Baked vertex index.
    pub vertex: u32,
}

/// The outcome of [`verify`]. Positions in millimetres, angles in degrees. Position errors are
/// per axis: the error of a vertex at a frame is `max over x, y, z of |decoded - fresh|`, the measure
/// the format's bound is stated in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifyReport {
    /// The vertex format verified (e.g. `"Packed64"`).
    pub format: String,
    /// Largest per-axis position error over every vertex at every baked frame, mm.
    pub position_max_error_mm: f64,
    /// Mean over vertex-frames of the per-axis position error, mm.
    pub position_mean_error_mm: f64,
    /// Largest Euclidean position error, mm.
    pub position_max_euclidean_error_mm: f64,
    /// The 99th percentile of the Euclidean position error over every vertex of every baked frame,
    /// mm: an upper bound, the edge of a histogram bin of 1/128 of the bound (the largest error when
    /// it falls past twice the bound).
    pub position_p99_euclidean_error_mm: f64,
    /// Mean Euclidean position error, mm.
    pub position_mean_euclidean_error_mm: f64,
    /// Largest angle between a decoded and a fresh normal, degrees.
    pub normal_max_error_deg: f64,
    /// Mean normal angle error, degrees.
    pub normal_mean_error_deg: f64,
    /// The 99th percentile of the normal angle error, degrees (an upper bound, as the position's).
    pub normal_p99_error_deg: f64,
    /// Whether the position bound is on the Euclidean distance (the skin-residual format's,
    /// `position_bound_mm` then holds it on every axis) rather than per axis.
    pub euclidean_bound: bool,
    /// The format's position bound in this bake's box, largest over the axes, mm.
    pub quantum_mm: f64,
    /// The position bound per axis (x, y, z), mm.
    pub position_bound_mm: [f64; 3],
    /// The format's normal bound, degrees.
    pub normal_bound_deg: f64,
    /// Largest tangent direction error (or 180 for a flipped bitangent sign), degrees, when the
    /// bake has tangent frames.
    pub tangent_max_error_deg: Option<f64>,
    /// The tangent bound, degrees, when the bake has tangent frames.
    pub tangent_bound_deg: Option<f64>,
    /// Largest per-axis error, mm, of bone mode against fresh skinning at every baked frame, when
    /// the bake has bones ([`bone_path_errors`]): positions decoded by vat-core's CPU reference of
    /// the bone path from the baked bone texture, joints, weights, rest pose and live morph layer.
    /// Informational; only f32 rounding separates the two (micrometres), morph assets included.
    pub bone_max_error_mm: Option<f64>,
    /// Vertex-frames compared (vertices x baked frames).
    pub vertex_frames: u64,
    /// Vertex-frames outside a bound.
    pub failed_vertex_frames: u64,
    /// Where the largest position error is.
    pub worst: Option<WorstSample>,
    /// Largest per-axis position error halfway between frames (interpolation error; informational).
    pub mid_frame_position_max_error_mm: f64,
    /// Mean per-axis position error halfway between frames, mm.
    pub mid_frame_position_mean_error_mm: f64,
    /// Largest normal error halfway between frames, degrees.
    pub mid_frame_normal_max_error_deg: f64,
    /// Vertex-samples compared between frames (0 when not measured: [`VerifyOptions::mid_frames`]).
    pub mid_frame_vertex_samples: u64,
    /// The bound of the bone path, mm ([`bone_error_bound_m`]), when the bake has bones.
    pub bone_bound_mm: Option<f64>,
    /// Largest translation error of a socket or capture track against fresh node transforms, mm,
    /// when the bake has capture tracks.
    pub capture_max_error_mm: Option<f64>,
    /// The bound of the capture tracks, mm (f32 rounding of the same node transforms).
    pub capture_bound_mm: Option<f64>,
    /// Vertices whose source has more than 8 influences (baked with their 8 largest).
    pub reduced_influence_vertices: u64,
    /// Largest per-axis distance, mm, between full skinning and the baked 8 influences of those
    /// vertices over every baked frame (`None` when there are none): what the reduction costs.
    pub influence_reduction_max_error_mm: Option<f64>,
    /// Whether the reduction was accepted ([`VerifyOptions::accept_influence_loss`]): the paths
    /// are then compared with skinning by the baked 8 influences, and the reduction is reported
    /// only. Otherwise they are compared with full skinning and fail where it shows.
    pub influence_loss_accepted: bool,
    /// Per clip: looping, frames, seam and motion figures.
    pub clips: Vec<ClipReport>,
    /// Every playback path checked, with its figure, bound and outcome.
    pub paths: Vec<PathReport>,
    /// Why verification failed, one line per failed check (empty when it passed).
    pub failures: Vec<String>,
    /// Warnings that do not fail verification (e.g. a looping clip whose seam is far above its
    /// frame-to-frame motion).
    pub warnings: Vec<String>,
    /// Whether every vertex-frame is within the bounds and every path passed.
    pub passed: bool,
}

impl VerifyReport {
    /// The vertex animation path's figures as one line's text: vertex-frames, the position error's
    /// max, p99 and mean (Euclidean where the format's bound is, else the largest axis's max and
    /// mean with the Euclidean p99) against the bound, and the normals' max, p99 and mean against
    /// theirs, e.g. `"47520 vertex-frames, position max 0.4931 mm, p99 0.4384 mm, mean 0.2720 mm
    /// (euclidean) (bound 0.5010 mm); normals max 0.9920 deg, p99 0.8838 deg, mean 0.4241 deg (bound
    /// 1.0011 deg)"`.
    pub fn figures_text(&self) -> String {
        let (max, mean, kind) = if self.euclidean_bound {
            (self.position_max_euclidean_error_mm, self.position_mean_euclidean_error_mm, " (euclidean)")
        } else {
            (self.position_max_error_mm, self.position_mean_error_mm, " (largest axis; p99 euclidean)")
        };
        format!(
            "{} vertex-frames, position max {max:.4} mm, p99 {:.4} mm, mean {mean:.4} mm{kind} (bound {:.4} mm); \
             normals max {:.4} deg, p99 {:.4} deg, mean {:.4} deg (bound {:.4} deg)",
            self.vertex_frames,
            self.position_p99_euclidean_error_mm,
            self.paths.iter().find(|p| p.path == "vat").map_or(0.0, |p| p.bound_mm),
            self.normal_max_error_deg,
            self.normal_p99_error_deg,
            self.normal_mean_error_deg,
            self.normal_bound_deg,
        )
    }
}

/// One playback path of a bake and how it verified.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathReport {
    /// `"vat"` (the vertex animation texture), `"bone"` (bone mode: the bone texture, joints and
    /// weights), `"capture"` (socket and capture tracks) or `"root"` (root-motion tracks against a
    /// fresh extraction from the source).
    pub path: String,
    /// Largest per-axis position (or translation) error, mm.
    pub max_error_mm: f64,
    /// Its bound, mm (largest axis).
    pub bound_mm: f64,
    /// Whether every sample is within the bound (normals and tangents too, for `"vat"`).
    pub passed: bool,
}

/// How one baked clip verified.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClipReport {
    /// Clip name.
    pub name: String,
    /// Whether it loops.
    pub looping: bool,
    /// Frames stored.
    pub frames: u32,
    /// Looping clips: the largest per-axis distance, mm, between the source's pose at the clip's
    /// end and at its start, which playback joins when it wraps (0 for a perfect loop).
    pub seam_mm: Option<f64>,
    /// The largest per-axis distance, mm, any vertex moves between two consecutive baked frames
    /// (the clip's frame-to-frame motion the seam is compared with).
    pub max_frame_step_mm: f64,
    /// Whether the seam is far above the frame-to-frame motion ([`SEAM_WARNING_RATIO`] times it,
    /// and above the format's quantum): a visible pop at every wrap, likely a one-shot clip.
    pub seam_warning: bool,
}

/// A looping clip's seam is warned about above this many times its largest frame-to-frame step.
pub const SEAM_WARNING_RATIO: f64 = 2.0;

/// What [`verify_with`] may accept, and what it measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Accept the reduction of vertices with more than 8 influences to their 8 largest
    /// (`--accept-influence-loss`): compare with skinning by the baked influences and report the
    /// reduction's error without failing on it.
    pub accept_influence_loss: bool,
    /// Also measure the interpolation error halfway between frames (informational, never failed;
    /// it costs more than the checks themselves). Default `true`; `vat bake`'s own verification
    /// turns it off and leaves it to `vat verify`.
    pub mid_frames: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self { accept_influence_loss: false, mid_frames: true }
    }
}

/// The bound, metres per axis, between bone-mode skinning from the baked bone texture
/// (`Σ w_i (M_i p)`, as the shader and [`vat_core::format::reference::decode_bone_vertex`] compute it) and fresh CPU skinning
/// (`(Σ w_i M_i) p`, matrices blended first), both in f32.
///
/// `influences` counts the morph targets of the live morph layer too (each adds a rounded product
/// and sum to the bind-space position, whose reach `max_p` includes `Σ |w| |d|`).
///
/// Derivation: each output coordinate of either is a sum of at most `4 k + 4` rounded products and
/// additions of terms bounded by `s = max_row_abs * max_p + max_t` (`k` influences, `max_row_abs`
/// the largest `|m_r0| + |m_r1| + |m_r2|` of any baked bone matrix row, `max_p` the largest
/// coordinate of a (morphed) bind-space position, `max_t` the largest translation); each rounding
/// errs by at most `u = 2^-24` relative (Higham's `γ_n ≈ n u`), so each result is within
/// `(4 k + 4) u s` of the exact value and the two within twice that.
pub fn bone_error_bound_m(influences: usize, max_row_abs: f64, max_p: f64, max_t: f64) -> f64 {
    let u = 2f64.powi(-24);
    let s = max_row_abs * max_p + max_t;
    2.0 * (4.0 * influences as f64 + 4.0) * u * s
}

/// Worst-case angle, degrees, between a skinned tangent and the tangent decoded from its
/// `Rgba16Float` tangent-frame quaternion ([`encoding::tangent_frame_to_quat`] /
/// [`encoding::quat_to_tangent_frame`]).
///
/// Derivation: binary16 rounds each quaternion component in `[-1, 1]` by at most `2^-12`, moving the
/// unit quaternion by at most `2 * 2^-12 = 2^-11` (4 components, Euclidean `sqrt(4) * 2^-12`), i.e.
/// the rotation by at most `2 asin(2^-11)` (rotation angle is twice the quaternion angle); the
/// encode's `|w| >= 2^-14` clamp adds `2 * 2^-14` rad; the f32 arithmetic of encode, decode and the
/// skin's own orthonormalisation stays below `1e-6` rad. The tangent direction moves by at most
/// the rotation angle. Total about 0.0630 degrees.
pub fn tangent_error_bound_degrees() -> f64 {
    let quaternion = 2.0 * (2.0f64.powi(-11)).asin();
    (quaternion + 2.0 * 2.0f64.powi(-14) + 1e-6).to_degrees()
}

/// A phase offset (cycles) at which vat-core's playback of `clip` with rate 0 and time 0, with
/// [`Interpolation::Point`], reads clip-local frame `k` alone (weight exactly 1): the texel itself,
/// uninterpolated. A quarter frame past `k` (`(k + 1/4) / intervals`), so f32 rounding of the phase
/// cannot reach a neighbour; the last frame of a one-shot clip is phase 1. Checked against
/// [`playback::clip_sample`]; `None` if that does not select `k` (not expected for any real clip).
///
/// (Linear interpolation at the frame itself would not do: for most frame counts no f32 phase `p`
/// gives `p * frame_count == k` exactly, so a weight of about `1e-7` would leak to the next frame.)
pub fn exact_frame_offset(clip: &Clip, k: u32) -> Option<f32> {
    let intervals = match clip.mode {
        ClipMode::Looping => clip.frame_count,
        ClipMode::OneShot => clip.frame_count.saturating_sub(1),
    };
    let offset = if intervals == 0 || k >= intervals {
        if k == intervals { 1.0 } else { 0.0 }
    } else {
        ((f64::from(k) + 0.25) / f64::from(intervals)) as f32
    };
    let s = playback::clip_sample(clip, offset, 0.0, 0.0, Interpolation::Point);
    let selected = if s.weights == [0.0, 1.0, 0.0, 0.0] {
        s.frames[1]
    } else if s.weights == [0.0, 0.0, 1.0, 0.0] {
        s.frames[2]
    } else {
        return None;
    };
    (selected == k && k < clip.frame_count.max(1)).then_some(offset)
}

/// `(max_row_abs, max_t)` of [`bone_error_bound_m`] over every baked bone matrix (rows of
/// `Rgba32Float` texels); NaN when one is not finite (so every comparison with the bound fails).
fn bone_magnitudes(texture: &[u8]) -> (f64, f64) {
    let mut row_abs = 0.0f64;
    let mut t = 0.0f64;
    for row in texture.chunks_exact(16) {
        let v: [f32; 4] = std::array::from_fn(|c| {
            f32::from_le_bytes([row[4 * c], row[4 * c + 1], row[4 * c + 2], row[4 * c + 3]])
        });
        if !v.iter().all(|x| x.is_finite()) {
            return (f64::NAN, f64::NAN);
        }
        row_abs = row_abs.max(f64::from(v[0].abs() + v[1].abs() + v[2].abs()));
        t = t.max(f64::from(v[3].abs()));
    }
    (row_abs, t)
}

/// The largest `|component|` of an `f32` blob; NaN when one is not finite.
fn max_abs_f32(bytes: &[u8]) -> f64 {
    let mut m = 0.0f64;
    for c in bytes.chunks_exact(4) {
        let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if !v.is_finite() {
            return f64::NAN;
        }
        m = m.max(f64::from(v.abs()));
    }
    m
}

/// The largest per-axis position error, **mm**, of bone mode at clip-local frame `k` of clip
/// `clip` of the asset `bones` comes from: every vertex decoded by vat-core's CPU reference of the
/// bone path (the baked bone texture, joints, weights, rest pose and, when baked, the live morph
/// layer: deltas blended by the weights track), read exactly at that frame
/// ([`exact_frame_offset`], point interpolation), against `fresh`, the freshly skinned positions of
/// the same frame (object space, metres, baked vertex order, one per vertex).
///
/// What separates the two is f32 rounding only (the reference performs the skinning's operations
/// on the baked matrices and deltas), so a bound of a few f32 ulp of the positions' magnitudes
/// applies.
///
/// # Errors
/// [`BakeError::Verification`] when `clip` is past the clip table, no phase selects frame `k` or
/// `fresh` has the wrong length; decoding errors from [`vat_core::format::reference::decode_bone_frame_at`]; the error is NaN
/// when any vertex's is.
pub fn bone_path_errors(bones: &BoneAnimationView<'_>, clip: u32, k: u32, fresh: &[[f32; 3]]) -> Result<f64> {
    let c = bones.clips.get(clip as usize).ok_or_else(|| {
        BakeError::Verification(format!("clip {clip} is past the asset's {} clips", bones.clips.len()))
    })?;
    let offset = exact_frame_offset(c, k).ok_or_else(|| {
        BakeError::Verification(format!("no phase selects frame {k} of clip \"{}\"", c.name))
    })?;
    if fresh.len() != bones.vertex_count() as usize {
        return Err(BakeError::Verification(format!(
            "{} fresh positions for {} vertices",
            fresh.len(),
            bones.vertex_count()
        )));
    }
    let instance = InstanceRecord { clip_a: clip, phase_offset_a: offset, rate_a: 0.0, ..Default::default() };
    let (mut p, mut n) = (vec![[0.0f32; 3]; fresh.len()], vec![[0.0f32; 3]; fresh.len()]);
    decode_bone_frame_at(bones, &instance, 0.0, Interpolation::Point, &mut p, &mut n)?;
    Ok(frames::max_axis_error_m(&p, fresh) * 1000.0)
}

/// Finds the vertex order the asset was baked in, by its rest-position stream.
fn baked_set_for(asset: &Asset<'_>, rig: &Rig) -> Result<VertexSet> {
    let manifest = asset.manifest();
    let rest = asset.stream(StreamKind::RestPosition).map(|(_, bytes)| bytes);
    for optimize in [true, false] {
        let (set, _) = baked_vertex_set(rig, optimize)?;
        if set.vertex_count() != manifest.vertex_count as usize {
            break;
        }
        let matches = match rest {
            None => true,
            Some(bytes) => bytes
                .chunks_exact(4)
                .zip(set.positions.iter().flat_map(|p| p.to_array()))
                .all(|(b, c)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]).to_bits() == c.to_bits()),
        };
        if matches {
            return Ok(set);
        }
    }
    Err(BakeError::InvalidInput {
        part: format!("asset \"{}\"", manifest.name),
        problem: format!(
            "its {} vertices do not match rig \"{}\" (vertex count or rest positions differ): it was not baked \
             from this source",
            manifest.vertex_count, rig.name
        ),
    })
}

/// Verifies `asset` against fresh skinning of `rig`, its source (see the module docs), with
/// default [`VerifyOptions`]. Sample times and formats come from the asset itself, so no bake
/// options are needed.
///
/// A bake outside its bounds is `Ok` with `passed == false`.
///
/// # Errors
/// As [`verify_with`].
pub fn verify(asset: &Asset<'_>, rig: &Rig) -> Result<VerifyReport> {
    verify_with(asset, rig, &VerifyOptions::default())
}

/// Verifies every playback path `asset` offers against fresh skinning of `rig`, its full source
/// (tangents the source lacks are generated as the bake generated them, see [`crate::tangents`]):
///
/// - **VAT**: every vertex of every baked frame, decoded by the CPU reference decoder, against its
///   format's position, normal (and tangent) bounds; mid-frames reported;
/// - **bone** (when baked): every vertex of every baked frame skinned from the bone texture, joints
///   and weights against [`bone_error_bound_m`];
/// - **capture** (sockets and `--capture` tracks): every frame's node transform against fresh
///   node transforms, within f32 rounding.
///
/// The source is always the full one: vertices with more than 8 influences are skinned with all
/// of them (unless [`VerifyOptions::accept_influence_loss`]). Looping clips report their seam
/// ([`ClipReport`]). `passed` is true only when every check passed; `failures` says why not.
///
/// # Errors
/// [`BakeError::Core`] if the asset has no vertex animation texture; [`BakeError::InvalidInput`]
/// if its vertices or clips do not match the rig (a clip name the rig lacks), or the rig is unusable
/// (from [`VertexSet::from_rig`]).
pub fn verify_with(asset: &Asset<'_>, rig: &Rig, options: &VerifyOptions) -> Result<VerifyReport> {
    let rig = crate::prepare::with_static_clip(rig);
    // A bake with tangent frames of a source without TANGENT generated them (`--tangents`): the
    // same deterministic generation on the source gives the tangents they are checked against.
    let (rig, _) = crate::prepare::with_generated_tangents(rig.as_ref(), asset.tangent_texture().is_some());
    let rig = rig.as_ref();
    let view = VertexAnimationView::from_asset(asset)?;
    let manifest = asset.manifest();
    let set = baked_set_for(asset, rig)?;
    let n = set.vertex_count();
    let format = view.format;
    let residual = match format {
        encoding::VertexFormat::SkinResidual => Some(SkinResidualView::from_asset(asset)?),
        _ => None,
    };
    // The skin-residual format states a Euclidean bound (plus the f32 decode's slack), which holds
    // on every axis too; the others a per-axis bound of their quantisation.
    let residual_bounds = residual.as_ref().map(|r| {
        (
            f64::from(r.bounds.position_m) + f64::from(skin_residual::POSITION_SLACK_M),
            f64::from(r.bounds.normal_rad) + f64::from(skin_residual::NORMAL_SLACK_RAD),
        )
    });
    let bound = match residual_bounds {
        Some((p, _)) => [p as f32; 3],
        None => encoding::position_error_bound(format, view.position_bits, &view.bounds),
    };
    let normal_bound_deg = match residual_bounds {
        Some((_, n)) => n.to_degrees(),
        None => f64::from(encoding::normal_error_bound_degrees(format)),
    };
    // Root motion: the fresh frames are moved into the bake's in-place space by the inverse of the
    // track's pose (in f64), where the format's per-axis bound applies; the bake moved them by the
    // same inverse, multiplied in f32 into every skinning matrix, which adds its own rounding.
    let root_margin = root_motion_margin_m(manifest, &view.bounds);
    let bound_m = bound.map(|b| f64::from(b) + root_margin);
    let tangent_texture = asset.tangent_texture().filter(|_| set.tangents.is_some());
    let bones = match (&manifest.bone_animation, asset.stream(StreamKind::RestPosition)) {
        (Some(_), Some(_)) => Some(BoneAnimationView::from_asset(asset)?),
        _ => None,
    };
    let bone_bound_m = bones.as_ref().map(|b| bone_bound_of(b, &view.bounds, &set));
    let has_bones = bones.is_some();
    let weight_problem = bones.as_ref().and_then(skin_weight_problem);
    let ctx = Context {
        view: &view,
        bones,
        tangent_texture,
        bound_m,
        normal_bound_rad: normal_bound_deg.to_radians() + root_margin_rad(root_margin),
        tangent_bound_rad: tangent_error_bound_degrees().to_radians() + root_margin_rad(root_margin),
        vertex_count: n,
        residual: residual.as_ref(),
        euclid_bound_m: residual_bounds.map(|(p, _)| p + root_margin),
    };
    let reduced = !set.full_influences.is_empty();
    // The reference the paths are compared with: full skinning, unless the reduction is accepted.
    // The skin-residual format's residual restores every influence, so its VAT path is held to
    // full skinning even when the loss is accepted (bone mode's path, which keeps 8, is then
    // reported without failing).
    let full_reference = reduced && (!options.accept_influence_loss || residual.is_some());
    // Bone mode's path is reported, not failed, where the skin is not the source's own: influences
    // past 8 accepted as lost, or a skin fitted to a mesh sequence (the residual carries the rest).
    let bone_informational =
        residual.is_some() && ((reduced && options.accept_influence_loss) || rig.streamed_body.is_some());
    let checks = ClipChecks {
        rig,
        set: &set,
        ctx: &ctx,
        full_reference,
        mid_frames: options.mid_frames,
        skinner: skin::FrameSkinner::new(rig, &set),
    };
    let mut totals = Totals::default();
    let source_clips = first_by_name(rig.clips.iter().map(|c| c.name.as_str()));
    for (ci, clip) in manifest.clips.iter().enumerate() {
        let source_index =
            source_clips.get(clip.name.as_str()).copied().ok_or_else(|| BakeError::InvalidInput {
                part: format!("asset \"{}\" clip \"{}\"", manifest.name, clip.name),
                problem: format!("rig \"{}\" has no clip of that name", rig.name),
            })?;
        let track = manifest.root_motion.iter().find(|t| t.clip == ci as u32);
        if let Some(track) = track {
            let error = track_error_m(rig, &set, ci as u32, clip, source_index, track, &view.bounds)?;
            totals.root_max = totals.root_max.max(error);
        }
        checks.check(ci, clip, source_index, track, &mut totals)?;
    }
    let Totals {
        frames: frames_total,
        mid: mid_total,
        vertex_frames,
        mid_samples,
        worst,
        reduction_max,
        root_max,
        clips: clip_reports,
        warnings,
    } = totals;

    let captures = verify_captures(asset, rig)?;

    let mm = 1000.0;
    let mean = |sum: f64, count: u64| if count > 0 { sum / count as f64 } else { 0.0 };
    let has_tangents = tangent_texture.is_some();
    let quantum_mm = bound_m[0].max(bound_m[1]).max(bound_m[2]) * mm;
    let mut failures = Vec::new();
    let mut paths = Vec::new();
    let vat_passed = frames_total.failed == 0 && vertex_frames > 0;
    paths.push(PathReport {
        path: "vat".into(),
        max_error_mm: frames_total.max_axis * mm,
        bound_mm: quantum_mm,
        passed: vat_passed,
    });
    if !vat_passed {
        let mut line = format!(
            "vat: {} of {vertex_frames} vertex-frames outside the {format:?} bounds (position max {:.4} mm, \
             bound {quantum_mm:.4} mm; normals max {:.4} deg, bound {:.4} deg)",
            frames_total.failed,
            frames_total.max_axis * mm,
            frames_total.max_normal.to_degrees(),
            normal_bound_deg
        );
        if full_reference && residual.is_none() {
            line.push_str(&format!(
                "; {} vertices were baked with 8 of their influences, which costs up to {:.4} mm against full \
                 skinning (accept it with --accept-influence-loss)",
                set.full_influences.len(),
                reduction_max * mm
            ));
        }
        failures.push(line);
    }
    let morphs = rig.meshes.iter().any(|m| !m.morph_targets.is_empty());
    let others = [
        bone_bound_m.map(|bound| {
            bone_path(frames_total.max_bone, bound, weight_problem.as_deref(), morphs, bone_informational)
        }),
        (!manifest.root_motion.is_empty()).then(|| root_path(root_max, quantum_mm)),
        captures.map(|(error, bound)| capture_path(error, bound)),
    ];
    for (path, path_failures) in others.into_iter().flatten() {
        paths.push(path);
        failures.extend(path_failures);
    }
    let mut warnings = warnings;
    if let Some(bound) = bone_bound_m.filter(|&b| bone_informational && frames_total.max_bone > b) {
        warnings.push(format!(
            "bone: bone mode of this file draws its skin alone, up to {:.3} mm from the source (bound {:.4} mm), \
             reported, not failed: the skin is {} and the VAT path adds the residual",
            frames_total.max_bone * mm,
            bound * mm,
            if rig.streamed_body.is_some() { "fitted to a mesh sequence" } else { "missing the influences past 8" }
        ));
    }
    Ok(VerifyReport {
        format: format!("{format:?}"),
        position_max_error_mm: frames_total.max_axis * mm,
        position_mean_error_mm: mean(frames_total.sum_axis, vertex_frames) * mm,
        position_max_euclidean_error_mm: frames_total.max_euclid_sq.sqrt() * mm,
        normal_max_error_deg: frames_total.max_normal.to_degrees(),
        normal_mean_error_deg: mean(frames_total.sum_normal, vertex_frames).to_degrees(),
        quantum_mm,
        position_bound_mm: bound_m.map(|b| b * mm),
        normal_bound_deg,
        position_p99_euclidean_error_mm: frames_total.position_hist.quantile(
            0.99,
            2.0 * ctx.position_range_m(),
            frames_total.max_euclid_sq.sqrt(),
        ) * mm,
        position_mean_euclidean_error_mm: mean(frames_total.sum_euclid, vertex_frames) * mm,
        normal_p99_error_deg: frames_total
            .normal_hist
            .quantile(0.99, 2.0 * ctx.normal_bound_rad, frames_total.max_normal)
            .to_degrees(),
        euclidean_bound: residual.is_some(),
        tangent_max_error_deg: has_tangents.then(|| frames_total.max_tangent.to_degrees()),
        tangent_bound_deg: has_tangents.then(tangent_error_bound_degrees),
        bone_max_error_mm: has_bones.then_some(frames_total.max_bone * mm),
        vertex_frames,
        failed_vertex_frames: frames_total.failed,
        worst: worst.map(|(_, w)| w),
        mid_frame_position_max_error_mm: mid_total.max_axis * mm,
        mid_frame_position_mean_error_mm: mean(mid_total.sum_axis, mid_samples) * mm,
        mid_frame_normal_max_error_deg: mid_total.max_normal.to_degrees(),
        mid_frame_vertex_samples: mid_samples,
        bone_bound_mm: bone_bound_m.map(|b| b * mm),
        capture_max_error_mm: captures.map(|c| c.0 * mm),
        capture_bound_mm: captures.map(|c| c.1 * mm),
        reduced_influence_vertices: set.full_influences.len() as u64,
        influence_reduction_max_error_mm: reduced.then_some(reduction_max * mm),
        influence_loss_accepted: reduced && options.accept_influence_loss,
        clips: clip_reports,
        paths,
        passed: failures.is_empty(),
        failures,
        warnings,
    })
}

/// The socket and capture tracks of `asset` against fresh global node transforms of `rig` at
/// every baked frame: `(largest translation error per axis, bound)` in metres, `None` when the
/// asset has no tracks. A track's bone is matched to the rig node of the same name (the first).
///
/// Bound: the bake stored exactly these f32 matrices, so only a different evaluation order could
/// differ; 16 roundings (`u = 2^-24`) of the largest translation magnitude (plus the same of 1 m)
/// covers that; a corrupt or NaN track exceeds it.
/// The bone path's bound ([`bone_error_bound_m`]), metres, for the bake's bone texture, box and
/// rest positions: the live morph layer moves the bind-space positions by at most Σ |w| |d| per
/// axis.
fn bone_bound_of(b: &BoneAnimationView<'_>, bx: &encoding::PositionBounds, set: &VertexSet) -> f64 {
    let (row_abs, t) = bone_magnitudes(b.texture);
    let (targets, morph_reach) = match &b.morph {
        Some(m) => {
            let targets = m.layout.target_count as usize;
            (targets, targets as f64 * max_abs_f32(m.texture) * max_abs_f32(m.weights))
        }
        None => (0, 0.0),
    };
    let box_abs = (0..3)
        .map(|a| f64::from(bx.min[a]).abs().max((f64::from(bx.min[a]) + f64::from(bx.extent[a])).abs()))
        .fold(0.0, f64::max);
    let max_p = box_abs
        .max(set.positions.iter().map(|p| f64::from(p.abs().max_element())).fold(0.0, f64::max))
        + morph_reach;
    bone_error_bound_m(b.influences as usize + targets, row_abs, max_p, t)
}

/// The bone path's report: its largest error against `bound` (metres; false for a NaN error or
/// bound too, from a non-finite bone texture), and its failures (the skin weights' problem too).
fn bone_path(
    max_bone: f64,
    bound: f64,
    weight_problem: Option<&str>,
    morphs: bool,
    informational: bool,
) -> (PathReport, Vec<String>) {
    let mm = 1000.0;
    let mut failures = Vec::new();
    if let Some(problem) = weight_problem {
        failures.push(format!("bone: {problem}"));
    }
    // Skin-residual files whose skin is not the source's (see `bone_informational`): the figure is
    // reported, not failed.
    let within_bound = max_bone <= bound || informational;
    if !within_bound {
        failures.push(format!(
            "bone: bone-mode skinning errs up to {:.4} mm against fresh skinning, bound {:.6} mm{}",
            max_bone * mm,
            bound * mm,
            if morphs { " (the source has morph targets)" } else { "" }
        ));
    }
    let passed = within_bound && weight_problem.is_none();
    (PathReport { path: "bone".into(), max_error_mm: max_bone * mm, bound_mm: bound * mm, passed }, failures)
}

/// The root-motion path's report: the tracks' largest error (metres) against the format's quantum
/// `bound_mm` (false for a NaN error too).
fn root_path(error: f64, bound_mm: f64) -> (PathReport, Vec<String>) {
    let mm = 1000.0;
    let passed = error <= bound_mm / mm;
    let failure = (!passed).then(|| {
        format!(
            "root: the root-motion tracks differ from a fresh extraction from the source by up to {:.4} mm \
             (yaw counted at the body's horizontal reach), bound {bound_mm:.4} mm",
            error * mm
        )
    });
    let path = PathReport { path: "root".into(), max_error_mm: error * mm, bound_mm, passed };
    (path, failure.into_iter().collect())
}

/// The capture path's report: the socket and capture tracks' largest error against `bound`
/// (metres).
fn capture_path(error: f64, bound: f64) -> (PathReport, Vec<String>) {
    let mm = 1000.0;
    let passed = error <= bound;
    let failure = (!passed).then(|| {
        format!(
            "capture: socket/capture tracks err up to {:.6} mm against fresh node transforms, bound {:.6} mm",
            error * mm,
            bound * mm
        )
    });
    (
        PathReport { path: "capture".into(), max_error_mm: error * mm, bound_mm: bound * mm, passed },
        failure.into_iter().collect(),
    )
}

fn verify_captures(asset: &Asset<'_>, rig: &Rig) -> Result<Option<(f64, f64)>> {
    let manifest = asset.manifest();
    if manifest.captures.is_empty() {
        return Ok(None);
    }
    let mut nodes = Vec::with_capacity(manifest.captures.len());
    let rig_nodes = first_by_name(rig.nodes.iter().map(|nd| nd.name.as_str()));
    for track in &manifest.captures {
        let name = manifest.bones.get(track.bone as usize).map(|b| b.name.as_str()).unwrap_or_default();
        let node = rig_nodes.get(name).copied().ok_or_else(|| BakeError::InvalidInput {
            part: format!("asset \"{}\" capture track of bone {}", manifest.name, track.bone),
            problem: format!("rig \"{}\" has no node named {name:?}", rig.name),
        })?;
        nodes.push(node);
    }
    let mut samples = Vec::new();
    let source_clips = first_by_name(rig.clips.iter().map(|c| c.name.as_str()));
    let mut in_place = Vec::new();
    for (ci, clip) in manifest.clips.iter().enumerate() {
        let Some(&source) = source_clips.get(clip.name.as_str()) else { continue };
        let track = manifest.root_motion.iter().find(|t| t.clip == ci as u32);
        for k in 0..clip.frame_count {
            samples.push((source, frame_time(&rig.clips[source], clip, k)));
            let pose = track.and_then(|t| t.frames.get(k as usize)).copied().unwrap_or(RootPose::IDENTITY);
            in_place.push(pose);
        }
    }
    let per_frame: Vec<(f64, f64)> = samples
        .par_iter()
        .enumerate()
        .map(|(f, &(c, t))| {
            let globals =
                crate::sample::global_matrices(rig, &crate::sample::sample_pose(rig, &rig.clips[c], t));
            let mut err = 0.0f64;
            let mut scale = 1.0f64;
            for (track, &node) in manifest.captures.iter().zip(&nodes) {
                let bytes = asset.blob(track.blob);
                let at = |i: usize| {
                    let o = (f * 12 + i) * 4;
                    bytes.get(o..o + 4).map_or(f32::NAN, |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                };
                let fresh = globals.get(node).copied().unwrap_or(glam::Mat4::IDENTITY).to_cols_array();
                let fresh = in_place.get(f).map_or(fresh, |pose| affine_in_place(pose, fresh));
                // Column-major 3x4: the axes (linear part) and the translation.
                for col in 0..4 {
                    for r in 0..3 {
                        let stored = f64::from(at(col * 3 + r));
                        let expected = f64::from(fresh[col * 4 + r]);
                        let d = (stored - expected).abs();
                        err = if d.is_nan() { f64::INFINITY } else { err.max(d) };
                        scale = scale.max(expected.abs());
                    }
                }
            }
            (err, scale)
        })
        .collect();
    let error = per_frame.iter().map(|e| e.0).fold(0.0, f64::max);
    let scale = per_frame.iter().map(|e| e.1).fold(1.0, f64::max);
    Ok(Some((error, 16.0 * 2f64.powi(-24) * scale)))
}

/// The extra per-axis bound, metres, of a bake with root motion (0 without): the bake multiplied
/// each frame's in-place transform `T_k^-1` into its skinning matrices in f32, each product element
/// a sum of 3 rounded products of terms bounded by the matrix entries (4 roundings, `u = 2^-24`
/// relative), and the skinned result of such a matrix rounds like the source's; verification
/// applies `T_k^-1` in f64. With `M` the largest coordinate of the in-place box and `D` the largest
/// translation of any track, a skinned position moves by at most `8 u (M + D)` between the two.
fn root_motion_margin_m(manifest: &vat_core::container::Manifest, bounds: &encoding::PositionBounds) -> f64 {
    if manifest.root_motion.is_empty() {
        return 0.0;
    }
    let u = 2f64.powi(-24);
    let m = (0..3)
        .map(|a| {
            f64::from(bounds.min[a]).abs().max((f64::from(bounds.min[a]) + f64::from(bounds.extent[a])).abs())
        })
        .fold(0.0f64, f64::max);
    let d = manifest
        .root_motion
        .iter()
        .flat_map(|t| t.frames.iter().chain(std::iter::once(&t.cycle)))
        .fold(0.0f64, |a, p| a.max(f64::from(p.x.abs())).max(f64::from(p.z.abs())));
    8.0 * u * (m + d)
}

/// The normal (and tangent) share of [`root_motion_margin_m`], radians: the same relative
/// rounding turns a unit vector by at most `8 u` (0 without root motion).
fn root_margin_rad(margin_m: f64) -> f64 {
    if margin_m > 0.0 { 8.0 * 2f64.powi(-24) } else { 0.0 }
}

/// A column-major affine (16 `f32`, as [`glam::Mat4::to_cols_array`]) with `T^-1` of `pose`
/// applied in f64 (rounded once): the axes turned by `R_y(-yaw)`, the translation moved then turned.
fn affine_in_place(pose: &RootPose, cols: [f32; 16]) -> [f32; 16] {
    let mut out = cols;
    let mut axes = [[0.0f32; 3]; 3];
    for (col, axis) in axes.iter_mut().enumerate() {
        *axis = [cols[col * 4], cols[col * 4 + 1], cols[col * 4 + 2]];
    }
    let mut origin = [[cols[12], cols[13], cols[14]]];
    to_in_place(pose, &mut origin, &mut axes, None);
    for (col, axis) in axes.iter().enumerate() {
        out[col * 4..col * 4 + 3].copy_from_slice(axis);
    }
    out[12..15].copy_from_slice(&origin[0]);
    out
}

/// How far the stored root-motion `track` of baked clip `clip` (index `ci`, from rig clip
/// `source`) is from the track a fresh extraction from the source gives (the bake's own fit,
/// [`crate::root_motion`], of freshly skinned frames), metres: the largest `|Δx|`, `|Δz|` and
/// `|Δyaw| * reach` over every frame and the cycle, `reach` the largest horizontal coordinate of
/// the in-place box (how far a yaw error moves a vertex). Every stored frame's pose is also checked
/// through the frames themselves; this catches a wrong cycle (which only the crowd uses) too.
fn track_error_m(
    rig: &Rig,
    set: &VertexSet,
    ci: u32,
    clip: &Clip,
    source: usize,
    track: &vat_core::root_motion::RootMotionTrack,
    bounds: &encoding::PositionBounds,
) -> Result<f64> {
    let src = &rig.clips[source];
    let poses: Vec<skin::FramePose> = (0..clip.frame_count)
        .into_par_iter()
        .map(|k| {
            let pose = crate::sample::sample_pose(rig, src, frame_time(src, clip, k));
            let globals = crate::sample::global_matrices(rig, &pose);
            skin::FramePose::new(rig, set, pose, &globals)
        })
        .collect();
    let plan = skin::SkinPlan::new(set);
    let fresh = crate::root_motion::fit_track(rig, set, &plan, ci, clip, source, &poses)?;
    if fresh.frames.len() != track.frames.len() {
        return Ok(f64::INFINITY);
    }
    let reach = [0, 2]
        .iter()
        .map(|&a| {
            f64::from(bounds.min[a]).abs().max((f64::from(bounds.min[a]) + f64::from(bounds.extent[a])).abs())
        })
        .fold(0.0f64, f64::max);
    let mut err = 0.0f64;
    for (a, b) in fresh
        .frames
        .iter()
        .chain(std::iter::once(&fresh.cycle))
        .zip(track.frames.iter().chain(std::iter::once(&track.cycle)))
    {
        let d = (f64::from(a.x) - f64::from(b.x))
            .abs()
            .max((f64::from(a.z) - f64::from(b.z)).abs())
            .max((f64::from(a.yaw) - f64::from(b.yaw)).abs() * reach);
        err = if d.is_nan() { f64::INFINITY } else { err.max(d) };
    }
    Ok(err)
}

/// [`verify`] of a bake still in memory (through its `.vat` bytes, exactly as a file would be read).
///
/// # Errors
/// As [`PreparedBake::to_vat_bytes`], [`vat_core::container::Asset::parse`] and [`verify`].
pub fn verify_prepared(bake: &PreparedBake, rig: &Rig) -> Result<VerifyReport> {
    let bytes = bake.to_vat_bytes()?;
    let asset = Asset::parse(&bytes)?;
    verify(&asset, rig)
}

/// The first problem of the baked skin weights, if any: every weight must be finite and `>= 0`, and
/// each vertex's weights must sum to 1 within `2k` units of f32 roundoff for `k` influences (the
/// bake renormalises in f32: the sum it divides by and each quotient round once; summed here in
/// f64).
fn skin_weight_problem(b: &BoneAnimationView<'_>) -> Option<String> {
    let k = b.influences.max(1) as usize;
    let bound = 2.0 * k as f64 * f64::from(f32::EPSILON) / 2.0;
    for (v, vertex) in b.weights.chunks_exact(4 * k).enumerate() {
        let mut sum = 0.0f64;
        for (i, w) in vertex.chunks_exact(4).enumerate() {
            let w = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            if !(w.is_finite() && w >= 0.0) {
                return Some(format!(
                    "vertex {v} influence {i} has skin weight {w}; weights must be finite and >= 0"
                ));
            }
            sum += f64::from(w);
        }
        if (sum - 1.0).abs() > bound {
            return Some(format!(
                "vertex {v}'s skin weights sum to {sum}, not to 1 within {bound:.2e} (f32 renormalisation of {k} \
                 weights)"
            ));
        }
    }
    None
}

/// Name -> index of the first item with that name (what a linear search finds), built in one pass
/// so that matching every clip or node of a file stays linear.
fn first_by_name<'a>(
    names: impl DoubleEndedIterator<Item = &'a str> + ExactSizeIterator,
) -> HashMap<&'a str, usize> {
    let n = names.len();
    names.rev().enumerate().map(|(k, name)| (name, n - 1 - k)).collect()
}

#[cfg(test)]
mod tests;
