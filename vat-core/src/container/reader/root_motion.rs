//! The root-motion tracks' validation.

use super::*;

/// The root-motion tracks' checks: soft mode only, each clip in range and tracked at most once, one
/// pose per stored frame, the first the identity, every value finite and within
/// [`crate::root_motion::ROOT_MOTION_LIMIT`], a one-shot clip's cycle its last frame. Clip frame
/// counts were checked against [`Limits::max_frames`] before, so the poses are bounded too.
pub(crate) fn validate_root_motion(m: &Manifest) -> Result<()> {
    use crate::root_motion::{ROOT_MOTION_LIMIT, RootPose};
    if m.root_motion.is_empty() {
        return Ok(());
    }
    if m.rigid_animation.is_some() || m.vertex_animation.is_none() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks without a vertex animation", m.root_motion.len()),
            expected: "root motion only alongside a vertex animation (soft mode)",
        });
    }
    let mut seen = HashSet::new();
    for track in &m.root_motion {
        let clip = m.clips.get(track.clip as usize).ok_or(Error::IndexOutOfRange {
            what: "root motion clip",
            index: track.clip.into(),
            count: m.clips.len() as u64,
        })?;
        if !seen.insert(track.clip) {
            return Err(Error::DuplicateName { what: "root motion track for clip", name: clip.name.clone() });
        }
        expect_equal(
            "root motion poses (stored frames of its clip)",
            clip.frame_count.into(),
            track.frames.len() as u64,
        )?;
        for pose in track.frames.iter().chain(std::iter::once(&track.cycle)) {
            if !pose.is_finite() {
                return Err(Error::NotFinite { what: "root motion pose" });
            }
            if [pose.x, pose.z, pose.yaw].iter().any(|v| v.abs() > ROOT_MOTION_LIMIT) {
                return Err(Error::OutOfRange {
                    what: "root motion pose",
                    value: format!("{pose:?}"),
                    expected: "|x|, |z| (m) and |yaw| (rad) at most ROOT_MOTION_LIMIT",
                });
            }
        }
        if track.frames.first() != Some(&RootPose::IDENTITY) {
            return Err(Error::OutOfRange {
                what: "root motion first pose",
                value: format!("{:?}", track.frames.first()),
                expected: "exactly the identity (poses are relative to the clip's first frame)",
            });
        }
        if clip.mode == crate::clip::ClipMode::OneShot && track.frames.last() != Some(&track.cycle) {
            return Err(Error::OutOfRange {
                what: "root motion cycle of a one-shot clip",
                value: format!("{:?}", track.cycle),
                expected: "equal to the pose of its last frame",
            });
        }
    }
    Ok(())
}
