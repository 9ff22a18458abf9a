//! Clips and the clip row map.
//!
//! A baked asset stores every clip as a contiguous block of frames in one texture. A **looping** clip of
//! duration `d` seconds sampled at `fps` stores `round(d * fps)` frames taken at `k / fps` and wraps from
//! its last frame back to its first (the end frame would duplicate the first, so it is not stored). A
//! **one-shot** clip stores `round(d * fps) + 1` frames, the last one at `t = d`, and clamps.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Whether a clip wraps (looping) or holds its last frame (one-shot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClipMode {
    /// Frame `frame_count` is frame 0 again: `round(d * fps)` stored frames, wrap.
    Looping,
    /// Plays once and holds its last frame: `round(d * fps) + 1` stored frames, clamp.
    OneShot,
}

impl ClipMode {
    /// The number of frames a clip of `duration` seconds sampled at `fps` stores in this mode.
    ///
    /// Never less than 1. `duration` and `fps` must be finite and non-negative (`fps > 0`); the
    /// caller validates them (see [`ClipRowMap::push`]).
    pub fn stored_frames(self, duration: f32, fps: f32) -> u32 {
        let samples = (f64::from(duration) * f64::from(fps)).round();
        let samples = samples.clamp(0.0, f64::from(u32::MAX - 1)) as u32;
        match self {
            ClipMode::Looping => samples.max(1),
            ClipMode::OneShot => samples + 1,
        }
    }
}

/// One clip's place in the animation texture and how it plays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clip {
    /// Name, as authored (e.g. `"walk"`). Unique within an asset.
    pub name: String,
    /// Index of the clip's first frame among all frames of the texture.
    pub first_frame: u32,
    /// Number of stored frames (see [`ClipMode::stored_frames`]). At least 1.
    pub frame_count: u32,
    /// Sampling rate in frames per second. Finite and `> 0`.
    pub fps: f32,
    /// Wrap or clamp.
    pub mode: ClipMode,
    /// Duration of one cycle in seconds, as authored. Finite and `>= 0`.
    pub duration: f32,
    /// Distance the character travels in one cycle, in metres; `0` if the clip is not locomotion.
    /// Stride-matched playback uses `rate = speed / stride` cycles per second.
    pub stride: f32,
}

impl Clip {
    /// Whether this clip wraps.
    pub fn is_looping(&self) -> bool {
        self.mode == ClipMode::Looping
    }

    /// The natural playback rate, in cycles per second (`1 / duration`; `0` for a zero-length clip).
    pub fn natural_rate(&self) -> f32 {
        if self.duration > 0.0 { 1.0 / self.duration } else { 0.0 }
    }

    /// One past this clip's last frame.
    pub fn end_frame(&self) -> u32 {
        self.first_frame + self.frame_count
    }

    /// Whether the clip moves the character (has a stride).
    pub fn is_locomotion(&self) -> bool {
        self.stride > 0.0
    }
}

/// Clips packed one after another into the rows of the animation texture.
///
/// Built with [`ClipRowMap::push`], which assigns each clip the next free block of frames.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipRowMap {
    clips: Vec<Clip>,
    total_frames: u32,
}

impl ClipRowMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a clip of `duration` seconds sampled at `fps`, returning its index.
    ///
    /// # Errors
    /// [`Error::NotFinite`] / [`Error::OutOfRange`] for a non-finite or negative duration or stride, or
    /// an `fps` that is not `> 0`; [`Error::OutOfRange`] for a duplicate name or when the total frame
    /// count would overflow `u32`.
    pub fn push(
        &mut self,
        name: impl Into<String>,
        duration: f32,
        fps: f32,
        mode: ClipMode,
        stride: f32,
    ) -> Result<u32> {
        let name = name.into();
        for (what, v) in [("clip duration", duration), ("clip fps", fps), ("clip stride", stride)] {
            if !v.is_finite() {
                return Err(Error::NotFinite { what });
            }
        }
        if duration < 0.0 {
            return Err(Error::OutOfRange {
                what: "clip duration",
                value: duration.to_string(),
                expected: ">= 0 seconds",
            });
        }
        if fps <= 0.0 {
            return Err(Error::OutOfRange { what: "clip fps", value: fps.to_string(), expected: "> 0" });
        }
        if stride < 0.0 {
            return Err(Error::OutOfRange {
                what: "clip stride",
                value: stride.to_string(),
                expected: ">= 0 metres",
            });
        }
        if self.clips.iter().any(|c| c.name == name) {
            return Err(Error::OutOfRange { what: "clip name", value: name, expected: "unique" });
        }
        let frame_count = mode.stored_frames(duration, fps);
        let total = self.total_frames.checked_add(frame_count).ok_or(Error::OutOfRange {
            what: "total frame count",
            value: format!("{} + {}", self.total_frames, frame_count),
            expected: "<= u32::MAX",
        })?;
        let index = self.clips.len() as u32;
        self.clips.push(Clip {
            name,
            first_frame: self.total_frames,
            frame_count,
            fps,
            mode,
            duration,
            stride,
        });
        self.total_frames = total;
        Ok(index)
    }

    /// Rebuilds a map from clips read back from a file, checking that they tile `0..total` in order.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if a clip does not start where the previous one ended, has zero frames, or
    /// has an invalid fps/duration/stride.
    pub fn from_clips(clips: Vec<Clip>) -> Result<Self> {
        let mut total: u32 = 0;
        for c in &clips {
            if c.first_frame != total {
                return Err(Error::OutOfRange {
                    what: "clip first frame",
                    value: format!("{} (clip {:?})", c.first_frame, c.name),
                    expected: "the previous clip's end frame",
                });
            }
            if c.frame_count == 0 {
                return Err(Error::ZeroCount { what: "clip frame count" });
            }
            if !(c.fps.is_finite() && c.fps > 0.0) {
                return Err(Error::OutOfRange {
                    what: "clip fps",
                    value: c.fps.to_string(),
                    expected: "> 0",
                });
            }
            if !(c.duration.is_finite() && c.duration >= 0.0 && c.stride.is_finite() && c.stride >= 0.0) {
                return Err(Error::OutOfRange {
                    what: "clip duration/stride",
                    value: format!("{} / {}", c.duration, c.stride),
                    expected: "finite and >= 0",
                });
            }
            total = total.checked_add(c.frame_count).ok_or(Error::OutOfRange {
                what: "total frame count",
                value: format!("{total} + {}", c.frame_count),
                expected: "<= u32::MAX",
            })?;
        }
        Ok(Self { clips, total_frames: total })
    }

    /// The clips, in texture order.
    pub fn clips(&self) -> &[Clip] {
        &self.clips
    }

    /// Clip `index`, if it exists.
    pub fn get(&self, index: u32) -> Option<&Clip> {
        self.clips.get(index as usize)
    }

    /// The index of the clip called `name`.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.clips.iter().position(|c| c.name == name).map(|i| i as u32)
    }

    /// Frames of all clips together: the frame count of the texture.
    pub fn total_frames(&self) -> u32 {
        self.total_frames
    }

    /// Number of clips.
    pub fn len(&self) -> usize {
        self.clips.len()
    }

    /// Whether the map has no clips.
    pub fn is_empty(&self) -> bool {
        self.clips.is_empty()
    }

    /// The sample times (seconds from the clip's start) at which clip `index`'s frames are taken:
    /// `k / fps` for `k` in `0..frame_count`. One-shot clips end exactly at `duration`.
    pub fn sample_times(&self, index: u32) -> Option<Vec<f32>> {
        let c = self.get(index)?;
        Some(
            (0..c.frame_count)
                .map(|k| {
                    let t = (f64::from(k) / f64::from(c.fps)) as f32;
                    if c.mode == ClipMode::OneShot { t.min(c.duration) } else { t }
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looping_stores_round_d_fps_frames_and_one_shot_one_more() {
        assert_eq!(ClipMode::Looping.stored_frames(1.6, 30.0), 48);
        assert_eq!(ClipMode::OneShot.stored_frames(1.6, 30.0), 49);
        // round, not floor or ceil: 1.01 s * 30 = 30.3 -> 30; 1.02 s * 30 = 30.6 -> 31
        assert_eq!(ClipMode::Looping.stored_frames(1.01, 30.0), 30);
        assert_eq!(ClipMode::Looping.stored_frames(1.02, 30.0), 31);
        // a zero-length clip still has one frame
        assert_eq!(ClipMode::Looping.stored_frames(0.0, 30.0), 1);
        assert_eq!(ClipMode::OneShot.stored_frames(0.0, 30.0), 1);
    }

    #[test]
    fn row_map_packs_clips_contiguously() {
        let mut m = ClipRowMap::new();
        assert_eq!(m.push("idle", 2.0, 30.0, ClipMode::Looping, 0.0).unwrap(), 0);
        assert_eq!(m.push("walk", 1.0, 30.0, ClipMode::Looping, 1.48).unwrap(), 1);
        assert_eq!(m.push("wave", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap(), 2);
        let c = m.clips();
        assert_eq!((c[0].first_frame, c[0].frame_count), (0, 60));
        assert_eq!((c[1].first_frame, c[1].frame_count), (60, 30));
        assert_eq!((c[2].first_frame, c[2].frame_count), (90, 46));
        assert_eq!(m.total_frames(), 136);
        assert_eq!(m.find("walk"), Some(1));
        assert!(c[1].is_locomotion() && !c[0].is_locomotion());
        let times = m.sample_times(2).unwrap();
        assert_eq!(times.len(), 46);
        assert_eq!(*times.last().unwrap(), 1.5);
        let round_trip = ClipRowMap::from_clips(c.to_vec()).unwrap();
        assert_eq!(round_trip, m);
    }

    #[test]
    fn bad_clips_are_typed_errors() {
        let mut m = ClipRowMap::new();
        assert!(matches!(m.push("a", f32::NAN, 30.0, ClipMode::Looping, 0.0), Err(Error::NotFinite { .. })));
        assert!(matches!(m.push("a", 1.0, 0.0, ClipMode::Looping, 0.0), Err(Error::OutOfRange { .. })));
        assert!(matches!(m.push("a", -1.0, 30.0, ClipMode::Looping, 0.0), Err(Error::OutOfRange { .. })));
        m.push("a", 1.0, 30.0, ClipMode::Looping, 0.0).unwrap();
        assert!(matches!(m.push("a", 1.0, 30.0, ClipMode::Looping, 0.0), Err(Error::OutOfRange { .. })));
        let mut gap = m.clips().to_vec();
        gap[0].first_frame = 3;
        assert!(ClipRowMap::from_clips(gap).is_err());
    }
}
