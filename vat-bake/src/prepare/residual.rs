//! The skin-residual format (`--format skin-residual`, [`VertexFormat::SkinResidual`]): the bake's
//! own skin (its bone section, decoded as bone mode decodes it) plus the residual that brings every
//! stored frame of every vertex within the stated bounds of the source frame
//! ([`vat_core::format::skin_residual`]).

use std::borrow::Cow;

use vat_core::container::SkinResidualAnimation;
use vat_core::format::reference::{
    BoneAnimationView, decode_bone_frame, decode_bone_stored_vertex, stored_frame_morph_weights,
};
use vat_core::format::skin_residual::{
    self, FrameResidual, ResidualExtent, ResidualFields, ResidualStreamLayout,
};

use super::*;

/// Vertices [`encode_held`] encodes at once (their fields, 20 bytes a frame, are held until
/// appended to the stream).
pub(super) const HELD_RESIDUAL_BLOCK: u32 = 1024;

/// Frames whose fields [`encode_frame_by_frame`] holds at once per thread before writing them to the
/// stream (20 bytes a vertex a frame).
pub(super) const RESIDUAL_FRAMES_PER_THREAD: usize = 2;

/// Every stored frame of the source held: its positions and normals (what a fitted skin reads,
/// many times over).
pub(super) type HeldFrames = Vec<(Vec<[f32; 3]>, Vec<[f32; 3]>)>;

/// The source's stored frames as the residual reads them: skinned again from the bake's poses (or
/// read again from a streamed sequence) a frame at a time, so that no frame is held beside the
/// bake (24 bytes a vertex a frame: a long clip of a large character's source frames were most of
/// the bake's memory).
pub(super) struct SourceFrames<'a> {
    rig: &'a Rig,
    set: &'a VertexSet,
    plan: &'a skin::SkinPlan,
    poses: Vec<skin::FramePose>,
    samples: &'a [(usize, f32)],
    /// The vertices of more than 8 influences skinned again by all of them.
    full: bool,
}

impl SourceFrames<'_> {
    /// Stored frames.
    pub(super) fn len(&self) -> usize {
        self.samples.len()
    }

    /// Stored frame `f` into `positions` and `normals` (one entry per vertex of the set).
    ///
    /// # Errors
    /// A frame past the samples or its pose; the streamed sequence's read errors; those of
    /// [`skin::apply_full_influences`].
    pub(super) fn frame_into(
        &self,
        f: usize,
        positions: &mut [[f32; 3]],
        normals: &mut [[f32; 3]],
    ) -> Result<()> {
        let sample =
            self.samples.get(f).ok_or_else(|| invalid_input("skin-residual", "a frame past the samples"))?;
        if let Some(body) = &self.rig.streamed_body {
            return skin::streamed_frame_into(
                self.rig, body, self.set, sample.0, sample.1, positions, normals,
            );
        }
        let pose =
            self.poses.get(f).ok_or_else(|| invalid_input("skin-residual", "a sample without its pose"))?;
        skin::skin_frame_into(self.set, self.plan, pose, positions, normals, None);
        if self.full {
            skin::apply_full_influences(
                self.rig,
                self.set,
                std::slice::from_ref(sample),
                positions,
                normals,
                None,
            )?;
        }
        Ok(())
    }

    /// Every frame, held (for a fitted skin).
    ///
    /// # Errors
    /// Those of [`Self::frame_into`].
    pub(super) fn held(&self) -> Result<HeldFrames> {
        let n = self.set.vertex_count();
        (0..self.len())
            .into_par_iter()
            .map(|f| {
                let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
                self.frame_into(f, &mut p, &mut nrm)?;
                Ok((p, nrm))
            })
            .collect()
    }
}

/// `options` as the skin-residual format bakes them (its skin is the bone section, so `bones` is
/// on for a skinned rig; a mesh sequence's skin is fitted instead, [`fitted_bone_section`]), or
/// refused with what the format cannot hold; other formats as they are.
///
/// # Errors
/// [`BakeError::InvalidOption`] for `--tangents` and bounds out of range.
pub(super) fn skin_residual_options<'a>(rig: &Rig, options: &'a BakeOptions) -> Result<Cow<'a, BakeOptions>> {
    if options.format != VertexFormat::SkinResidual {
        return Ok(Cow::Borrowed(options));
    }
    if options.tangents {
        return Err(invalid_option(
            "--tangents",
            "the skin-residual format stores no per-frame tangents; bake normal-mapped tangents in another --format",
        ));
    }
    options
        .residual_bounds
        .validate()
        .map_err(|e| invalid_option("--residual-mm / --residual-deg", e.to_string()))?;
    if let Some(bones) = options.fit_bones
        && !(1..=crate::fit::MAX_BONES).contains(&bones)
    {
        return Err(invalid_option(
            "--fit-bones",
            format!("{bones}; expected 1 to {} bones", crate::fit::MAX_BONES),
        ));
    }
    if rig.streamed_body.is_some() {
        // A mesh sequence has no skeleton: its skin is fitted to its frames (fitted_skin_residual).
        return Ok(Cow::Borrowed(options));
    }
    if options.fit_bones.is_some() {
        return Err(invalid_option(
            "--fit-bones",
            format!(
                "rig \"{}\" is not a mesh sequence: the skin-residual format uses its own skin, and only a \
                 source without a skeleton has one fitted",
                rig.name
            ),
        ));
    }
    Ok(Cow::Owned(BakeOptions { bones: true, ..options.clone() }))
}

/// The source's stored frames, skinned from `poses` when read (the frames the other formats
/// encode), with the vertices of more than 8 influences skinned again by all of them (what the bone
/// section's 8 cannot reproduce, and the residual then carries), except with root motion (those
/// frames are moved in place from the poses); and a note saying which.
pub(super) fn source_frames<'a>(
    rig: &'a Rig,
    set: &'a VertexSet,
    plan: &'a skin::SkinPlan,
    poses: Vec<skin::FramePose>,
    samples: &'a [(usize, f32)],
    root_motion: bool,
) -> (SourceFrames<'a>, Option<String>) {
    let full = !set.full_influences.is_empty() && !root_motion;
    let reduced = set.full_influences.len();
    let note = (reduced > 0).then(|| {
        if full {
            format!(
                "skin-residual: the residual carries every influence of the {reduced} vertices with more than 8 \
                 (the bone section keeps their 8 largest)"
            )
        } else {
            format!(
                "skin-residual: {reduced} vertices with more than 8 influences are baked with their 8 largest \
                 (with --root-motion the residual does not restore the others)"
            )
        }
    });
    (SourceFrames { rig, set, plan, poses, samples, full }, note)
}

/// Where [`residual_section`] reads stored frame `f` of the source: into the two buffers given.
pub(super) type FrameSource<'s> = dyn Fn(usize, &mut [[f32; 3]], &mut [[f32; 3]]) -> Result<()> + Sync + 's;

/// The skin-residual section of `manifest` (its bone section and rest streams in `blobs`) against
/// `sources`, its texture added to `blobs`; and one note with the residual's figures.
///
/// # Errors
/// [`BakeError::InvalidInput`] when a vertex's skin is so far from the source that its residual
/// needs more than 64 bits a frame (loosen the bounds), or the residual texture does not fit
/// `max_texture_dim`; [`BakeError::Core`] for a non-finite frame.
pub(super) fn residual_section(
    rig: &Rig,
    manifest: &Manifest,
    blobs: &mut BlobTable,
    source: ResidualSource<'_>,
    options: &BakeOptions,
) -> Result<(SkinResidualAnimation, String)> {
    let n = manifest.vertex_count as usize;
    let bounds = options.residual_bounds;
    bounds.validate().map_err(|e| residual_error(rig, e))?;
    let table = &*blobs;
    let bones = BoneAnimationView::from_manifest(manifest, &|id| {
        table.blobs.get(id.0 as usize).map(|b| b.as_slice())
    })?;
    let encoded = match source {
        ResidualSource::Held(frames) => encode_held(rig, &bones, n, frames, &bounds)?,
        ResidualSource::FrameByFrame(frames, source) => {
            encode_frame_by_frame(rig, &bones, n, frames, source, &bounds)?
        }
    };
    let texture = skin_residual::residual_texture(&encoded, options.max_texture_dim)?;
    let zero = encoded.widths.iter().filter(|w| w.frame_bits() == 0).count();
    let absolute = encoded.widths.iter().filter(|w| w.absolute_normal).count();
    let widest = encoded.widths.iter().map(|w| w.frame_bits()).max().unwrap_or(0);
    let note = format!(
        "skin-residual: {:.2} residual bits a vertex a frame on average (widest {widest}), {zero} of {n} vertices \
         need none, {absolute} store absolute normals; residual texture {} bytes (bounds {} mm, {} deg)",
        encoded.mean_frame_bits(),
        texture.bytes.len(),
        bounds.position_m * 1000.0,
        bounds.normal_rad.to_degrees(),
    );
    let section = SkinResidualAnimation {
        position_bound_m: bounds.position_m,
        normal_bound_rad: bounds.normal_rad,
        width: texture.width,
        height: texture.height,
        stream_words: texture.stream_words,
        texture: blobs.add(texture.bytes),
    };
    Ok((section, note))
}

/// Where [`residual_section`] reads the source's stored frames.
pub(super) enum ResidualSource<'s> {
    /// Every frame held (a fitted skin's): encoded a vertex at a time over its frames, in one pass.
    Held(&'s HeldFrames),
    /// The frame count and a reader of one frame at a time: two passes over the frames (the
    /// widths, then the fields), no frame held.
    FrameByFrame(usize, &'s FrameSource<'s>),
}

/// The residual of held source frames, a vertex at a time over its frames (its skin a vertex at
/// a time, the frames' morph weights once a frame), vertices in parallel blocks appended in order.
fn encode_held(
    rig: &Rig,
    bones: &BoneAnimationView<'_>,
    n: usize,
    sources: &HeldFrames,
    bounds: &skin_residual::ResidualBounds,
) -> Result<skin_residual::EncodedResiduals> {
    if sources.iter().any(|(p, nrm)| p.len() != n || nrm.len() != n) {
        return Err(invalid_input("skin-residual", "a source frame without one entry per vertex"));
    }
    let frames =
        u32::try_from(sources.len()).map_err(|_| invalid_input("skin-residual", "more than 2^32 frames"))?;
    let morph_weights = (0..frames)
        .into_par_iter()
        .map(|f| stored_frame_morph_weights(bones, f))
        .collect::<Result<Vec<_>, _>>()?;
    let mut encoder = skin_residual::ResidualEncoder::new(frames);
    for first in (0..n as u32).step_by(HELD_RESIDUAL_BLOCK as usize) {
        let block = (first..(n as u32).min(first + HELD_RESIDUAL_BLOCK))
            .into_par_iter()
            .map(|v| {
                skin_residual::encode_vertex_residual(
                    frames,
                    |f| {
                        let skin = decode_bone_stored_vertex(bones, f, v, &morph_weights[f as usize])?;
                        let (p, nrm) = &sources[f as usize];
                        Ok((skin, (p[v as usize], nrm[v as usize])))
                    },
                    bounds,
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| residual_error(rig, e))?;
        for vertex in &block {
            encoder.push(vertex)?;
        }
    }
    Ok(encoder.finish())
}

/// The residual of source frames read one at a time, none held: a first pass folds every frame
/// into each vertex's widths (frames in parallel runs), a second lays the stream out from them and
/// writes each frame's fields (only vertices with residual bits: a character whose skin is its
/// source skips it). The same residual as [`encode_held`] of the same frames, bit for bit.
fn encode_frame_by_frame(
    rig: &Rig,
    bones: &BoneAnimationView<'_>,
    n: usize,
    frames: usize,
    source: &FrameSource<'_>,
    bounds: &skin_residual::ResidualBounds,
) -> Result<skin_residual::EncodedResiduals> {
    let frame_count =
        u32::try_from(frames).map_err(|_| invalid_input("skin-residual", "more than 2^32 frames"))?;
    // Source and skin side by side (bone mode's decode of the stored frame, what the decoder adds
    // the residual to).
    let frame_pair = |f: usize, buffers: &mut FramePair| -> Result<()> {
        let FramePair { source_p, source_n, skin_p, skin_n } = buffers;
        source(f, source_p, source_n)?;
        decode_bone_frame(bones, f as u32, skin_p, skin_n)?;
        Ok(())
    };
    let residual = |b: &FramePair, v: usize| {
        FrameResidual::of((b.skin_p[v], b.skin_n[v]), (b.source_p[v], b.source_n[v]), bounds)
            .map_err(|e| residual_error(rig, e))
    };
    let threads = rayon::current_num_threads().max(1);
    let run = frames.div_ceil(threads).max(1);
    let runs: Vec<Vec<ResidualExtent>> = (0..frames)
        .step_by(run)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|first| {
            let mut extents = vec![ResidualExtent::default(); n];
            let mut buffers = FramePair::new(n);
            for f in first..(first + run).min(frames) {
                frame_pair(f, &mut buffers)?;
                for (v, extent) in extents.iter_mut().enumerate() {
                    extent.add(&residual(&buffers, v)?);
                }
            }
            Ok(extents)
        })
        .collect::<Result<_>>()?;
    let mut extents = vec![ResidualExtent::default(); n];
    for run in &runs {
        for (total, e) in extents.iter_mut().zip(run) {
            total.merge(e);
        }
    }
    drop(runs);
    let widths =
        extents.iter().map(|e| e.widths().map_err(|e| residual_error(rig, e))).collect::<Result<Vec<_>>>()?;
    let mut layout = ResidualStreamLayout::new(frame_count, widths.clone())?;
    // Only vertices with residual bits have fields to write (a character whose skin is its source
    // has none, and skips the second pass).
    let busy: Vec<usize> = (0..n).filter(|&v| widths[v].frame_bits() > 0).collect();
    let block = threads * RESIDUAL_FRAMES_PER_THREAD;
    for first in (0..frames).step_by(block).filter(|_| !busy.is_empty()) {
        let fields: Vec<Vec<ResidualFields>> = (first..(first + block).min(frames))
            .into_par_iter()
            .map_init(
                || FramePair::new(n),
                |buffers, f| {
                    frame_pair(f, buffers)?;
                    busy.iter()
                        .map(|&v| Ok(residual(buffers, v)?.fields(widths[v])))
                        .collect::<Result<Vec<_>>>()
                },
            )
            .collect::<Result<_>>()?;
        for (f, frame) in (first..).zip(&fields) {
            for (&v, fields) in busy.iter().zip(frame) {
                layout.write(v as u32, f as u32, fields)?;
            }
        }
    }
    Ok(layout.finish())
}

/// One stored frame of the source and of the skin, per vertex.
struct FramePair {
    source_p: Vec<[f32; 3]>,
    source_n: Vec<[f32; 3]>,
    skin_p: Vec<[f32; 3]>,
    skin_n: Vec<[f32; 3]>,
}

impl FramePair {
    fn new(n: usize) -> Self {
        let zero = || vec![[0.0f32; 3]; n];
        Self { source_p: zero(), source_n: zero(), skin_p: zero(), skin_n: zero() }
    }
}

/// The bone count [`fitted_skin_residual`] tries first (the fit's default).
const FIRST_FIT_BONES: u32 = 32;

/// One fitted skin and its residual, as [`fitted_skin_residual`] weighs them: the blobs it added
/// (in order, from the same first id), its sections and notes, and its bytes.
struct FittedCandidate {
    bones: u32,
    added: Vec<std::sync::Arc<Vec<u8>>>,
    deduplicated: u32,
    bone_section: BoneAnimation,
    names: Vec<ManifestBone>,
    residual: SkinResidualAnimation,
    notes: [String; 2],
    bytes: u64,
}

/// The skin and residual of a source without a skeleton (a mesh sequence): a rigid skin fitted to
/// its frames ([`fitted_bone_section`]) and the residual over it ([`residual_section`]), with the
/// bone count that makes the file smallest. Every bone costs 48 bytes a frame and every fitted bone
/// takes residual bits away; which wins depends on the asset (a 792-vertex cloth is smallest with
/// 8, a large mesh with many more), so the counts are tried, measured by their bytes: 32 first,
/// then halved while the file shrinks, or, when 16 does not shrink it, doubled while it does (up
/// to the vertex count and [`crate::fit::MAX_BONES`]); a count that cannot hold the bounds ends
/// its direction (or, when 32 fails, the search goes on until one holds). `BakeOptions::fit_bones`
/// fixes the count instead. Sets the manifest's bone section and bones; returns the residual
/// section and the notes (the fit's, the residual's, and the counts tried with their bytes).
///
/// # Errors
/// Those of [`fitted_bone_section`] and [`residual_section`]: a fixed count's, or the first
/// count's when no count tried succeeds.
pub(super) fn fitted_skin_residual(
    rig: &Rig,
    set: &VertexSet,
    manifest: &mut Manifest,
    blobs: &mut BlobTable,
    sources: &HeldFrames,
    options: &BakeOptions,
) -> Result<(SkinResidualAnimation, Vec<String>)> {
    let most = crate::fit::MAX_BONES.min(u32::try_from(set.vertex_count()).unwrap_or(u32::MAX)).max(1);
    let base = blobs.blobs.len();
    let base_deduplicated = blobs.deduplicated;
    let candidate = |bones: u32, manifest: &mut Manifest, blobs: &mut BlobTable| -> Result<FittedCandidate> {
        blobs.blobs.truncate(base);
        blobs.deduplicated = base_deduplicated;
        let (bone_section, names, fit_note) =
            fitted_bone_section(set, sources, bones, options.max_texture_dim, blobs)?;
        manifest.bone_animation = Some(bone_section.clone());
        let (residual, residual_note) =
            residual_section(rig, manifest, blobs, ResidualSource::Held(sources), options)?;
        let added = blobs.blobs[base..].to_vec();
        let bytes = added.iter().map(|b| b.len() as u64).sum();
        Ok(FittedCandidate {
            bones,
            added,
            deduplicated: blobs.deduplicated - base_deduplicated,
            bone_section,
            names,
            residual,
            notes: [fit_note, residual_note],
            bytes,
        })
    };
    let mut tried: Vec<(u32, std::result::Result<u64, String>)> = Vec::new();
    let mut best = match options.fit_bones {
        Some(bones) => candidate(bones.min(most), manifest, blobs)?,
        None => {
            // A count that fails (a vertex too far from a smaller skin for the bounds, a bone
            // texture too large for the device) ends its direction; the bake fails only when no
            // count tried succeeds, with the first count's error.
            let mut first_error = None;
            let mut attempt = |bones: u32, manifest: &mut Manifest, blobs: &mut BlobTable| match candidate(
                bones, manifest, blobs,
            ) {
                Ok(c) => {
                    tried.push((bones, Ok(c.bytes)));
                    Some(c)
                }
                Err(e) => {
                    tried.push((bones, Err(e.to_string())));
                    first_error.get_or_insert(e);
                    None
                }
            };
            let first_bones = FIRST_FIT_BONES.min(most);
            let mut best = attempt(first_bones, manifest, blobs);
            // Halve while the file shrinks; when the first halving does not, double while it does.
            for step in [Step::Halve, Step::Double] {
                let mut from = best.as_ref().map_or(first_bones, |b| b.bones);
                while let Some(bones) = step.next(from, most) {
                    from = bones;
                    match attempt(bones, manifest, blobs) {
                        Some(next) if best.as_ref().is_none_or(|b| next.bytes < b.bytes) => best = Some(next),
                        // Larger, or refused once a count holds: this direction ends.
                        _ if best.is_some() => break,
                        _ => {}
                    }
                }
                if best.as_ref().is_some_and(|b| b.bones != first_bones) {
                    break;
                }
            }
            let Some(best) = best else {
                return Err(first_error.unwrap_or_else(|| invalid_input("skin-residual", "no fitted skin")));
            };
            best
        }
    };
    // The kept candidate's blobs go back in at the ids it was given.
    blobs.blobs.truncate(base);
    blobs.blobs.append(&mut best.added);
    blobs.deduplicated = base_deduplicated + best.deduplicated;
    manifest.bone_animation = Some(best.bone_section);
    manifest.bones = best.names;
    let [fit_note, residual_note] = best.notes;
    let mut notes = vec![fit_note, residual_note];
    if tried.len() > 1 {
        let frames = sources.len().max(1) as f64 * set.vertex_count().max(1) as f64;
        let list: Vec<String> = tried
            .iter()
            .map(|(b, outcome)| match outcome {
                Ok(bytes) => format!("{b} ({:.3} B/v/f)", *bytes as f64 / frames),
                Err(e) => format!("{b} (refused: {e})"),
            })
            .collect();
        notes.push(format!(
            "skin-residual: fitted skins of {} bones tried (skin and residual bytes a vertex a frame); {} kept, \
             the smallest (--fit-bones fixes the count)",
            list.join(", "),
            best.bones
        ));
    }
    Ok((best.residual, notes))
}

/// A direction of [`fitted_skin_residual`]'s search over bone counts.
#[derive(Clone, Copy)]
enum Step {
    Halve,
    Double,
}

impl Step {
    /// The count after `bones`, if within `1..=most` and not `bones` itself.
    fn next(self, bones: u32, most: u32) -> Option<u32> {
        let next = match self {
            Step::Halve => bones / 2,
            Step::Double => bones.saturating_mul(2).min(most),
        };
        (next >= 1 && next != bones).then_some(next)
    }
}

/// The bone section of a source without a skeleton (a mesh sequence), fitted to its frames
/// ([`crate::fit::fit_rigid_skin`] with `bones` rigid bones, 4 influences): the rest pose is
/// the asset's `RestPosition` / `RestNormal` streams (`set`), the bones' transforms per stored frame
/// map it onto `sources`; its blobs are added to `blobs`. With the manifest's bones (`fit0`,
/// `fit1`, ...: no parents) and one note with the fit's figures.
///
/// # Errors
/// The fit's ([`BakeError::InvalidInput`] for a non-finite frame) and a bone texture that does not
/// fit `max_texture_dim`.
fn fitted_bone_section(
    set: &VertexSet,
    sources: &HeldFrames,
    bones: u32,
    max_texture_dim: u32,
    blobs: &mut BlobTable,
) -> Result<(BoneAnimation, Vec<ManifestBone>, String)> {
    let n = set.vertex_count();
    let rest: Vec<[f32; 3]> = set.positions.iter().map(|p| p.to_array()).collect();
    let rest_normals: Vec<[f32; 3]> = set.normals.iter().map(|v| v.to_array()).collect();
    // Frame 0 of the fit is the rest pose the decoder skins from; frames 1.. are the stored ones.
    let position = |f: usize, v: usize| if f == 0 { rest[v] } else { sources[f - 1].0[v] };
    let options = crate::fit::FitOptions { bones, ..crate::fit::FitOptions::default() };
    let fit = crate::fit::fit_rigid_skin(sources.len() + 1, n, position, &rest_normals, &options)?;
    let bones = fit.bone_count;
    let frames = sources.len() as u32;
    let layout = BoneTextureLayout::new(bones, frames, max_texture_dim)?;
    let mut texture = Vec::with_capacity(layout.byte_len(16) as usize);
    for rows in &fit.transforms[bones as usize..] {
        for row in rows {
            texture.extend(row.iter().flat_map(|c| c.to_le_bytes()));
        }
    }
    texture.resize(layout.byte_len(16) as usize, 0);
    let joints = fit.joints.iter().flatten().flat_map(|j| j.to_le_bytes()).collect();
    let weights = fit.weights.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    let section = BoneAnimation {
        layout,
        texture: blobs.add(texture),
        influences: 4,
        joints: blobs.add(joints),
        weights: blobs.add(weights),
    };
    let names = (0..bones).map(|b| ManifestBone { name: format!("fit{b}"), parent: None }).collect();
    let note = format!(
        "skin-residual: no skeleton, so a skin of {bones} rigid bones was fitted to the frames (rms {:.2} mm, \
         max {:.2} mm before the residual)",
        fit.rms_error_m * 1000.0,
        fit.max_error_m * 1000.0
    );
    Ok((section, names, note))
}

/// A residual encoding error as the bake says it: a vertex too far from its skin names the flags.
fn residual_error(rig: &Rig, e: vat_core::Error) -> BakeError {
    match e {
        vat_core::Error::LimitExceeded { .. } => invalid_input(
            format!("rig \"{}\"", rig.name),
            format!(
                "{e}: its own skin (bones, 8 largest influences, morph layer) is too far from the baked frames \
                 for the skin-residual bounds; loosen --residual-mm / --residual-deg or bake another --format"
            ),
        ),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vat_core::format::reference::{SkinResidualView, decode_skin_residual_frame};

    #[test]
    fn frames_read_one_at_a_time_give_the_residual_of_frames_held() {
        // The cloth's fitted skin, against source frames that need residual bits of both normal
        // kinds: its own decoded frames, moved by a few millimetres and with every 13th normal
        // turned around.
        let rig = crate::procgen::cloth().expect("the built-in cloth");
        let options =
            BakeOptions { format: VertexFormat::SkinResidual, fit_bones: Some(8), ..Default::default() };
        let bake = prepare(&rig, &options).expect("the cloth bakes in skin-residual");
        let bytes = bake.to_vat_bytes().expect("bytes");
        let asset = vat_core::container::Asset::parse(&bytes).expect("it reads back");
        let view = SkinResidualView::from_asset(&asset).expect("skin-residual");
        let n = view.vertices.len();
        let frames: u32 = asset.manifest().clips.iter().map(|c| c.frame_count).sum();
        let held: HeldFrames = (0..frames)
            .map(|f| {
                let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
                decode_skin_residual_frame(&view, f, &mut p, &mut nrm).expect("each frame decodes");
                for (v, (p, nrm)) in p.iter_mut().zip(nrm.iter_mut()).enumerate() {
                    p[1] += 0.003 * ((v as f32 * 0.37 + f as f32 * 0.21).sin());
                    if v % 13 == 0 {
                        *nrm = nrm.map(|c| -c);
                    }
                }
                (p, nrm)
            })
            .collect();
        let bones = &view.bones;
        let bounds = options.residual_bounds;
        let whole = encode_held(&rig, bones, n, &held, &bounds).expect("held frames encode");
        let read = |f: usize, p: &mut [[f32; 3]], nrm: &mut [[f32; 3]]| -> Result<()> {
            p.copy_from_slice(&held[f].0);
            nrm.copy_from_slice(&held[f].1);
            Ok(())
        };
        let by_frame =
            encode_frame_by_frame(&rig, bones, n, held.len(), &read, &bounds).expect("frames encode");
        assert!(
            whole.widths.iter().any(|w| w.absolute_normal) && whole.widths.iter().any(|w| !w.absolute_normal)
        );
        assert!(whole.widths.iter().all(|w| w.frame_bits() > 0), "every vertex has residual bits");
        assert_eq!(by_frame, whole);
        // A reader's error is the encoding's.
        let failing = |f: usize, p: &mut [[f32; 3]], nrm: &mut [[f32; 3]]| -> Result<()> {
            if f == 7 { Err(invalid_input("test", "frame 7 unreadable")) } else { read(f, p, nrm) }
        };
        let err =
            encode_frame_by_frame(&rig, bones, n, held.len(), &failing, &bounds).expect_err("frame 7 fails");
        assert!(err.to_string().contains("frame 7 unreadable"), "{err}");
    }
}
