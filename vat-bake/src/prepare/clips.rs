//! Clip planning: the static clip, loop decisions, seams and the baked vertex set.

use super::*;

/// The name of the one clip a rig without animation bakes as: its rest pose, one frame.
pub const STATIC_CLIP: &str = "static";

/// `rig` itself when it has clips; else a copy with one clip [`STATIC_CLIP`] (no channels, zero
/// length: the rest pose), so a prop or a statue bakes as a one-frame asset and verifies against
/// the same clip.
pub fn with_static_clip(rig: &Rig) -> std::borrow::Cow<'_, Rig> {
    if !rig.clips.is_empty() {
        return std::borrow::Cow::Borrowed(rig);
    }
    let mut owned = rig.clone();
    owned.clips.push(AnimationClip {
        name: STATIC_CLIP.to_owned(),
        channels: Vec::new(),
        start: 0.0,
        end: 0.0,
        looping: Some(true),
        known_stride: None,
        locomotion: false,
    });
    std::borrow::Cow::Owned(owned)
}

/// Why a baked clip loops or plays once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum LoopDecision {
    /// `--loop` / `--once` named it.
    Option,
    /// The source said (glTF `extras.vat_looping`, the procedural rig).
    Source,
    /// Decided from the clip: its last pose returns to its first within the format's quantum
    /// (looping) or does not (one-shot). `seam_mm` is the largest per-axis distance between the two
    /// poses, `quantum_mm` the bound it was compared with.
    Seam {
        /// Largest per-axis distance between the first and last pose, mm.
        seam_mm: f64,
        /// The format's position bound in the box of the two poses, mm.
        quantum_mm: f64,
    },
    /// A one-key clip: one frame, a pose.
    Pose,
}

/// Looping or one-shot, and why, for each baked clip ([`BakeStats::clip_looping`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClipLooping {
    /// Clip name.
    pub clip: String,
    /// Whether it loops.
    pub looping: bool,
    /// Why.
    pub decision: LoopDecision,
}

/// Largest per-axis distance (metres) between the skinned first and last pose of `clip`, and the
/// position bound of `format` in the box of those two poses (metres, largest axis). With
/// `root_motion`, the last pose is first moved back by the rigid ground-plane motion between the
/// two ([`crate::root_motion::fit_root_pose`]): the seam of the clip baked in place.
pub(super) fn clip_seam(
    rig: &Rig,
    set: &VertexSet,
    clip: usize,
    format: VertexFormat,
    root_motion: bool,
) -> Result<(f64, f64)> {
    let c = &rig.clips[clip];
    let mut frames = skin::skin_clip_frames(rig, set, &[(clip, c.start), (clip, c.end)], false)?;
    if root_motion {
        let arrays = |ps: &[Vec3]| ps.iter().map(|p| p.to_array()).collect::<Vec<_>>();
        if let Some(t) =
            crate::root_motion::fit_root_pose(&arrays(&frames[0].positions), &arrays(&frames[1].positions))
        {
            let back = t.inverse();
            for p in &mut frames[1].positions {
                *p = Vec3::from_array(back.apply_point(p.to_array()));
            }
        }
    }
    let (first, last) = (&frames[0].positions, &frames[1].positions);
    let seam = first.iter().zip(last).map(|(a, b)| (*a - *b).abs().max_element()).fold(0.0f32, f32::max);
    let bounds = PositionBounds::from_points(first.iter().chain(last).map(|p| p.to_array()))?;
    let bits = if format == VertexFormat::Packed64 {
        encoding::allocate_position_bits(bounds.extent)
    } else {
        [0; 3]
    };
    let quantum = encoding::position_error_bound(format, bits, &bounds).into_iter().fold(0.0f32, f32::max);
    Ok((f64::from(seam), f64::from(quantum)))
}

/// Chooses, validates and lays out the clips to bake, with their strides. Clips not selected by
/// `--clips` are never looked at, so a broken clip elsewhere in the file does not stop the bake.
pub(super) fn plan_clips(rig: &Rig, options: &BakeOptions) -> Result<ClipPlan> {
    if rig.clips.is_empty() {
        return Err(invalid_input(format!("rig \"{}\"", rig.name), "no animation to bake: it has no clips"));
    }
    let known = |option: &'static str, names: &[String]| -> Result<()> {
        match names.iter().find(|n| !rig.clips.iter().any(|c| &c.name == *n)) {
            None => Ok(()),
            Some(unknown) => {
                let available: Vec<&str> = rig.clips.iter().map(|c| c.name.as_str()).collect();
                Err(invalid_option(
                    option,
                    format!(
                        "rig \"{}\" has no clip named \"{unknown}\"; it has: {}",
                        rig.name,
                        available.join(", ")
                    ),
                ))
            }
        }
    };
    known("--loop", &options.looping)?;
    known("--once", &options.one_shot)?;
    let rated: Vec<String> = options.clip_fps.iter().map(|(n, _)| n.clone()).collect();
    known("clip fps", &rated)?;
    if let Some(both) = options.looping.iter().find(|n| options.one_shot.contains(n)) {
        return Err(invalid_option("--once", format!("clip \"{both}\" is also named by --loop; choose one")));
    }
    let sources: Vec<usize> = match &options.clips {
        None => (0..rig.clips.len()).collect(),
        Some(names) => {
            known("--clips", names)?;
            (0..rig.clips.len()).filter(|&i| names.iter().any(|n| *n == rig.clips[i].name)).collect()
        }
    };
    let mut row_map = ClipRowMap::new();
    let mut warnings = Vec::new();
    let mut looping_report = Vec::new();
    // Built only if a clip's looping has to be decided from its poses.
    let mut seam_set: Option<VertexSet> = None;
    for &ci in &sources {
        validate_clip(rig, ci)?;
        let clip = &rig.clips[ci];
        let part = || format!("rig \"{}\" clip \"{}\"", rig.name, clip.name);
        let duration = clip.duration();
        if !duration.is_finite() {
            return Err(invalid_input(part(), format!("duration {duration} s is not finite")));
        }
        let named = |list: &[String]| list.contains(&clip.name);
        let (looping, decision) = if duration == 0.0 {
            (!named(&options.one_shot), LoopDecision::Pose)
        } else if named(&options.looping) {
            (true, LoopDecision::Option)
        } else if named(&options.one_shot) {
            (false, LoopDecision::Option)
        } else if let Some(l) = clip.looping {
            (l, LoopDecision::Source)
        } else {
            if seam_set.is_none() {
                seam_set = Some(VertexSet::from_rig(rig)?);
            }
            let set = seam_set.as_ref().ok_or_else(|| invalid_input(part(), "no vertex set"))?;
            let (seam, quantum) = clip_seam(rig, set, ci, options.format, options.root_motion)?;
            (seam <= quantum, LoopDecision::Seam { seam_mm: seam * 1e3, quantum_mm: quantum * 1e3 })
        };
        looping_report.push(ClipLooping { clip: clip.name.clone(), looping, decision });
        let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
        let own = options.clip_fps.iter().find(|(n, _)| *n == clip.name).map_or(options.fps, |r| r.1);
        let fps = match options.frames {
            None => own,
            // A pose is one frame whatever the rate.
            Some(_) if duration == 0.0 => own,
            Some(n) => {
                let intervals = match mode {
                    ClipMode::Looping => n,
                    ClipMode::OneShot if n >= 2 => n - 1,
                    ClipMode::OneShot => {
                        return Err(invalid_option(
                            "--frames",
                            format!(
                                "1 cannot sample one-shot clip \"{}\": it needs its first and last pose",
                                clip.name
                            ),
                        ));
                    }
                };
                (f64::from(intervals) / f64::from(duration)) as f32
            }
        };
        if !(fps.is_finite() && fps > 0.0) {
            return Err(invalid_option(
                "--frames",
                format!("gives {fps} samples per second for clip \"{}\"", clip.name),
            ));
        }
        let stride = if clip.locomotion && duration > 0.0 {
            match clip.known_stride {
                Some(s) if s.is_finite() && s >= 0.0 => s,
                Some(s) => {
                    return Err(invalid_input(part(), format!("known stride {s} is not finite and >= 0")));
                }
                None => {
                    let resolved = AnimationClip { looping: Some(looping), ..clip.clone() };
                    match measure_stride(rig, &resolved)? {
                        Ok(s) => s.stride,
                        Err(why) => {
                            warnings.push(format!(
                                "clip \"{}\": no stride: {why}; baked with stride 0",
                                clip.name
                            ));
                            0.0
                        }
                    }
                }
            }
        } else {
            0.0
        };
        // Frame limits, named by the option that sets the rate (never a u32 overflow).
        let max_frames = vat_core::container::Limits::default().max_frames;
        let stored = (f64::from(duration) * f64::from(fps)).round() + if looping { 0.0 } else { 1.0 };
        let total = f64::from(row_map.total_frames()) + stored.max(1.0);
        if total > f64::from(max_frames) {
            let (option, rate) = match options.frames {
                Some(n) => ("--frames", format!("{n} frames per clip")),
                None => ("--fps", format!("{fps} fps")),
            };
            return Err(invalid_option(
                option,
                format!(
                    "clip \"{}\" lasts {duration} s: at {rate} the clips would store {total} frames, and a .vat \
                     file holds at most {max_frames}; bake at a lower --fps or --frames, or fewer clips with --clips",
                    clip.name
                ),
            ));
        }
        row_map.push(clip.name.clone(), duration, fps, mode, stride)?;
    }
    Ok(ClipPlan { sources, row_map, warnings, looping: looping_report })
}

/// The baked vertex set of `rig` in its baked order, and that order (`order[new] = old`): what
/// [`prepare`] encodes and [`crate::verify`] compares against. `optimize` selects the locality order
/// (else the identity).
///
/// # Errors
/// As [`VertexSet::from_rig`].
pub(crate) fn baked_vertex_set(rig: &Rig, optimize: bool) -> Result<(VertexSet, Vec<u32>)> {
    let mut set = VertexSet::from_rig(rig)?;
    let n = set.vertex_count();
    let order = if optimize { lods::locality_order(&set.indices, n) } else { (0..n as u32).collect() };
    set.remap(&order)?;
    Ok((set, order))
}
