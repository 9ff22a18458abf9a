//! The crowd: an instance store of 64-byte [`InstanceRecord`]s, playback control (clips,
//! cross-fades, stride-matched speeds, the clock and its epoch), per-record dirty tracking, CPU
//! culling with LOD selection into draw batches, and ray picking. Plain data in and out: no GPU
//! types; a backend uploads [`FrameDraws::record_uploads`] and [`FrameDraws::list_upload`] and issues
//! the batches.
//!
//! # A frame
//! ```text
//! crowd.advance(dt);                         // clock, epoch re-base, completed fades folded
//! crowd.set_transform(i, p, yaw); ...        // game logic: only touched records become dirty
//! let draws = crowd.prepare_frame(&camera);  // membership, dirty ranges, culling, batches
//! backend.render(&draws, crowd.shader_time());
//! ```
//!
//! A crowd needs no GPU and no file: a [`CrowdAsset`] comes from a `.vat` manifest
//! ([`CrowdAsset::from_manifest`]) or is built by hand, as here.
//! ```
//! use vat_core::clip::{ClipMode, ClipRowMap};
//! use vat_core::crowd::{AnimationEventKind, Camera, Crowd, CrowdAsset, CrowdConfig};
//! use vat_core::format::encoding::PositionBounds;
//! use vat_core::instance::PlayMode;
//!
//! let mut clips = ClipRowMap::new();
//! clips.push("idle", 2.0, 30.0, ClipMode::Looping, 0.0)?; // clip 0: a 2 s loop at 30 fps
//! clips.push("wave", 1.0, 30.0, ClipMode::OneShot, 0.0)?; // clip 1: a 1 s one-shot
//! let asset = CrowdAsset {
//!     clips: clips.clips().to_vec(),
//!     bounds: PositionBounds { min: [-0.5, 0.0, -0.5], extent: [1.0, 1.8, 1.0] },
//!     lod_triangles: vec![1000],
//!     lod_distances: Default::default(),
//!     attachment_triangles: 0,
//!     root_motion: Vec::new(),
//!     impostor_switch: None, // no impostor tier: every instance is drawn as a mesh
//! };
//! let mut crowd = Crowd::new(asset, CrowdConfig { record_events: true, ..CrowdConfig::default() });
//! let waver = crowd.spawn([0.0, 0.0, 0.0], 0.0, 0);
//! crowd.spawn([1.5, 0.0, 0.0], 0.0, 0);
//! crowd.play_as(waver, 1, 0.2, PlayMode::Once); // wave once, then hold the last frame
//! for _ in 0..45 {
//!     crowd.advance(1.0 / 30.0); // 1.5 s
//! }
//! let events: Vec<_> = crowd.drain_events().collect();
//! assert!(events.iter().any(|e| e.instance == waver && e.kind == AnimationEventKind::Ended));
//! let camera = Camera::look_at([0.0, 1.6, 6.0], [0.0, 1.0, 0.0], 0.8, 16.0 / 9.0, 0.1, 100.0);
//! let draws = crowd.prepare_frame(&camera);
//! assert_eq!(draws.stats.drawn, 2); // both in view; the batches say what to draw
//! # Ok::<(), vat_core::Error>(())
//! ```
//!
//! # Playback
//! Slot A of a record plays the current clip; slot B is the clip being faded in. [`Crowd::play`] with
//! a fade starts slot B at the current shader time with the fade duration (stored as binary16, see
//! [`InstanceRecord::set_clip_b`]); once the fade weight reaches 1, [`Crowd::advance`] folds slot B
//! into slot A (clip, offset, rate; fade duration 0) and marks the record dirty. Clip rates follow
//! the instance's speed ([`Crowd::set_speed`]): `speed / stride` for locomotion clips
//! ([`playback::stride_matched_rate`]), the clip's natural rate `1 / duration` otherwise. Every rate
//! or epoch change rewrites the phase offsets so that the phase the shader computes does not jump.
//!
//! # Animation control and events
//! [`Crowd::play_as`] plays a clip the way a [`PlayMode`] says: as baked, looped, once and held,
//! ping-ponged or clamped (each slot's [`Wrap`] lives in the record's variant bits, so the shader
//! wraps the phase itself: nothing is uploaded per frame). [`Crowd::play_after`] queues the next
//! play behind the current one; [`Crowd::mark_frame`] marks frames of a clip (footsteps, hits).
//! [`Crowd::advance`] finds, from the same `f32` phase the shader computes at the previous and the
//! current frame's shader time (no read-back), which instances ended a play or passed a mark, starts
//! the queued plays that are due, and keeps the [`AnimationEvent`]s for [`Crowd::drain_events`].
//! An instance is checked only when its next event may be due (a min-heap of each one's next marked
//! frame or completion, computed from its record), so the cost follows the events, not the crowd.
//!
//! # Root motion
//! [`Crowd::set_root_motion`] lets an instance move by its clips' own motion: the
//! [`crate::root_motion::RootMotionTrack`]s a `--root-motion` bake extracted (the frames are in
//! place, so the instance transform carries the motion). [`Crowd::advance`] computes each move
//! from the same analytic phase the shader shows, wraps and play modes included, blending the two
//! clips' moves by the fade weight during a cross-fade, and marks the moved records dirty.
//! [`Crowd::set_root_motion_mode`] can instead (or also) report each move to the game as a
//! [`RootMotionDelta`] ([`Crowd::drain_root_motion`]), and [`Crowd::root_motion_delta`] computes
//! the move over any interval without changing anything.
//!
//! # Grid, list and culling
//! Instances are bucketed into the square cells of a [`ChunkGrid`] on the XZ plane. The world extent
//! is not known up front: at [`Crowd::prepare_frame`] the grid is (re)built to cover every instance
//! with slack (12.5 % of the extent, at least one cell, per side) when there is none yet, when an
//! instance has been placed outside it, or when [`CrowdConfig::cell_size`] changed; a rebuild reads
//! every record once. Otherwise only the instances queued as movers (spawned, or moved into another
//! cell) are re-listed, incrementally. The grid never shrinks by itself; changing the cell size
//! forces a rebuild.
//!
//! The instance list (record indices, `u32`) holds every instance once, grouped by cell in cell
//! order, followed by the **far pool**: a copy of the members of every visible cell at the last LOD,
//! drawn as one batch. A cell's bounds are the box of its members' positions grown by the instance
//! volume at the cell's largest scale (see [`CrowdAsset::instance_sphere`]: the box encloses every
//! member's bounding sphere, which is what the GPU culling shader tests per instance), so every
//! instance whose sphere meets the frustum is in a drawn batch. A cell is tested as that box against
//! each plane (a box outside none is drawn); a cell the frustum cuts (its box not inside every plane)
//! has its members tested one by one (each one's box, the instance volume at its position and scale),
//! and the main pass draws the runs of its list section that are in view. Shadow and attachment
//! batches, and the far pool, take whole cells (members beside the view still cast into it). Its LOD
//! comes from the camera's distance to the box centre or to the box
//! ([`CrowdConfig::lod_distance`]), through [`LodThresholds::select`] with [`CrowdConfig::lod_bias`].
//! Consecutive visible cells of the same LOD are contiguous in the list and merge into one batch.
//!
//! Hidden instances ([`VARIANT_HIDDEN`]) stay in the list and in the batches (the shader collapses
//! them); they are not counted as submitted, drawn, shadow casters or triangles, and a cell whose
//! members are all hidden is not drawn at all. Attachment batches cover the visible cells with
//! `LOD <= attachment_max_lod` that hold at least one shown instance with [`VARIANT_ACCESSORY`]; the
//! shader collapses the members without it.
//!
//! # Uploads
//! Records are tracked dirty one bit each; [`Crowd::prepare_frame`] coalesces them into ascending
//! ranges, merging runs separated by at most [`CrowdConfig::upload_merge_gap`] clean records. A crowd
//! that did not change uploads nothing. An epoch re-base (every
//! [`playback::REBASE_AFTER_SECONDS`]) rewrites every record: one full upload.

mod events;
mod frame;
mod frustum;
mod pick;
mod root;
mod schedule;
mod spatial;
#[cfg(test)]
mod tests;
mod types;

pub use events::{AnimationEvent, AnimationEventKind, MAX_PENDING_EVENTS};
pub use frustum::{Camera, Frustum};
pub use root::{DEFAULT_ROOT_MOTION_CAPACITY, RootMotionDelta, RootMotionMode};
pub use types::*;

use crate::clip::{Clip, ClipMode};
use crate::container::Manifest;
use crate::encoding::PositionBounds;
#[cfg(doc)]
use crate::instance::VARIANT_ACCESSORY;
use crate::instance::{InstanceRecord, PlayMode, VARIANT_HIDDEN, VARIANT_PLAYBACK_MASK};
use crate::lod::{ChunkGrid, LodDistance, LodThresholds, MAX_LODS};
use crate::playback::{self, Clock, Wrap};
use crate::{Error, Result};

use events::QueuedPlay;
use frame::{BatchCapacity, CullParams, DirtySet, FarPool};
use spatial::Spatial;

/// Per-instance flag: queued in `movers`.
const FLAG_MOVER: u8 = 1;
/// Per-instance flag: queued in `fading`.
const FLAG_FADING: u8 = 2;
/// Per-instance flag: has a play in `queued`.
const FLAG_QUEUED: u8 = 8;
/// Per-instance flag: moves by root motion ([`RootMotionMode::applies`]; listed in `root_movers`).
const FLAG_ROOT_APPLY: u8 = 16;
/// Per-instance flag: reports its root motion ([`RootMotionMode::reports`]; listed in
/// `root_movers`).
const FLAG_ROOT_REPORT: u8 = 32;

/// A crowd of instances of one asset. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Crowd {
    id: CrowdId,
    asset: CrowdAsset,
    config: CrowdConfig,
    shape: Shape,
    clock: Clock,
    records: Vec<InstanceRecord>,
    /// Speed per instance, m/s; NaN = never set (clips play at their natural rate).
    speeds: Vec<f32>,
    flags: Vec<u8>,
    dirty: DirtySet,
    movers: Vec<u32>,
    fading: Vec<u32>,
    /// How each instance plays its current (incoming) clip.
    modes: Vec<PlayMode>,
    /// Plays waiting for the current one to end, by instance.
    queued: std::collections::HashMap<u32, QueuedPlay>,
    /// Marked clip-local frames and their phases (`events::frame_phase`), by clip (sorted by frame,
    /// unique).
    markers: Vec<Vec<(u32, f64)>>,
    /// When each instance that can raise an event (or start a queued play) next might: a min-heap
    /// of (clock time, instance, generation); an entry whose generation is not the instance's
    /// current one is stale (its play changed since) and skipped.
    schedule: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32, u32)>>,
    /// Per instance, bumped whenever its play changes (stales its scheduled entry).
    generations: Vec<u32>,
    events: Vec<AnimationEvent>,
    /// Events found while [`MAX_PENDING_EVENTS`] were waiting to be drained (not kept).
    dropped_events: u64,
    /// The shader time of the previous `advance` (the events' previous frame).
    event_time: f32,
    spatial: Spatial,
    far: FarPool,
    capacity: BatchCapacity,
    ranges: Vec<(u32, u32)>,
    /// Instances with a root-motion mode other than `Off` ([`Crowd::set_root_motion_mode`]), each
    /// once, ascending.
    root_movers: Vec<u32>,
    /// Root-motion moves waiting for [`Crowd::drain_root_motion`].
    root_reports: Vec<RootMotionDelta>,
    /// Moves found while [`CrowdConfig::root_motion_capacity`] were waiting (not kept).
    dropped_root_motion: u64,
    /// Index into `asset.root_motion` of each clip's track.
    root_by_clip: Vec<Option<u32>>,
    /// Per-instance user data ([`Crowd::set_user_data`]), 16 bytes each.
    user_data: Vec<[u32; 4]>,
    /// Which user data changed since the last upload.
    user_dirty: DirtySet,
    user_ranges: Vec<(u32, u32)>,
    /// Instances whose motion history the host reset since the last frame plan.
    motion_resets: Vec<u32>,
}

impl Crowd {
    /// An empty crowd of `asset` with `config`; its clock starts at 0.
    pub fn new(asset: CrowdAsset, config: CrowdConfig) -> Self {
        let mut root_by_clip = vec![None; asset.clips.len()];
        for (k, track) in asset.root_motion.iter().enumerate() {
            if let Some(slot) = root_by_clip.get_mut(track.clip as usize) {
                slot.get_or_insert(k as u32);
            }
        }
        Self {
            id: CrowdId::next(),
            shape: Shape::new(&asset.bounds),
            asset,
            config,
            clock: Clock::new(),
            records: Vec::new(),
            speeds: Vec::new(),
            flags: Vec::new(),
            dirty: DirtySet::default(),
            movers: Vec::new(),
            fading: Vec::new(),
            modes: Vec::new(),
            queued: std::collections::HashMap::new(),
            markers: Vec::new(),
            schedule: std::collections::BinaryHeap::new(),
            generations: Vec::new(),
            events: Vec::new(),
            dropped_events: 0,
            event_time: 0.0,
            spatial: Spatial::new(),
            far: FarPool::default(),
            capacity: BatchCapacity::default(),
            ranges: Vec::new(),
            root_movers: Vec::new(),
            root_reports: Vec::new(),
            dropped_root_motion: 0,
            root_by_clip,
            user_data: Vec::new(),
            user_dirty: DirtySet::default(),
            user_ranges: Vec::new(),
            motion_resets: Vec::new(),
        }
    }

    /// Adds an instance at `position` (metres, world space) facing `yaw` (radians about +Y, 0 faces
    /// +Z), scale 1, white tint, variant bits 0, playing `clip` from phase 0 at the current time at its
    /// natural rate. Same as [`spawn_at_phase`](Self::spawn_at_phase) with phase 0.
    ///
    /// # Panics
    /// If `clip` is not a clip of the asset, or the crowd already holds `u32::MAX - 1` instances.
    pub fn spawn(&mut self, position: [f32; 3], yaw: f32, clip: u32) -> InstanceId {
        self.spawn_at_phase(position, yaw, clip, 0.0)
    }

    /// [`spawn`](Self::spawn), with the clip at `phase` (cycles, `[0, 1)`) at the current time (to
    /// desynchronise a crowd, give each instance another phase).
    ///
    /// # Panics
    /// As [`spawn`](Self::spawn).
    pub fn spawn_at_phase(&mut self, position: [f32; 3], yaw: f32, clip: u32, phase: f32) -> InstanceId {
        let c = self.clip(clip);
        let (mode, rate) = (c.mode, c.natural_rate());
        let id = u32::try_from(self.records.len()).ok().filter(|&id| id < u32::MAX);
        let Some(id) = id else { panic!("a crowd holds at most u32::MAX - 1 instances") };
        let offset = start_offset(mode.into(), phase, self.time(), rate);
        let mut r = InstanceRecord {
            position,
            yaw,
            clip_a: clip,
            phase_offset_a: offset,
            rate_a: rate,
            phase_offset_b: offset,
            rate_b: rate,
            ..InstanceRecord::default()
        };
        r.set_clip_b(clip, 0.0);
        self.records.push(r);
        self.speeds.push(f32::NAN);
        self.flags.push(FLAG_MOVER);
        self.modes.push(PlayMode::AsBaked);
        self.generations.push(0);
        self.movers.push(id);
        self.watch(id);
        self.spatial.push_instance(position, r.scale);
        self.dirty.resize(self.records.len());
        self.dirty.mark(id as usize);
        // New user data is zero, which a fresh GPU buffer already holds, but an instance spawned
        // into a buffer slot once used may not: upload it.
        self.user_data.push([0; 4]);
        self.user_dirty.resize(self.user_data.len());
        self.user_dirty.mark(id as usize);
        id
    }

    /// Moves instance `i` to `position` (metres, world space) with heading `yaw` (radians).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_transform(&mut self, i: InstanceId, position: [f32; 3], yaw: f32) {
        let r = self.record_mut(i);
        r.position = position;
        r.yaw = yaw;
        if self.spatial.note_position(i as usize, position) {
            self.queue_mover(i);
        }
    }

    /// Sets the uniform scale of instance `i` (1 = as baked).
    ///
    /// # Panics
    /// If `i >= count()` or `scale` is not finite and `> 0`.
    pub fn set_scale(&mut self, i: InstanceId, scale: f32) {
        assert!(scale.is_finite() && scale > 0.0, "instance scale must be finite and > 0, got {scale}");
        self.record_mut(i).scale = scale;
        self.spatial.note_scale(i as usize, scale);
    }

    /// Sets the variant bits of instance `i` (material variant, [`VARIANT_ACCESSORY`],
    /// [`VARIANT_HIDDEN`], ...; see [`crate::instance`]). The playback bits
    /// ([`VARIANT_PLAYBACK_MASK`]: how each slot wraps, set by [`play_as`](Self::play_as)) are the
    /// crowd's and are kept.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_variant(&mut self, i: InstanceId, bits: u32) {
        let r = self.record_mut(i);
        let bits = (bits & !VARIANT_PLAYBACK_MASK) | (r.variant_bits & VARIANT_PLAYBACK_MASK);
        let old = std::mem::replace(&mut r.variant_bits, bits);
        self.spatial.note_variant(i as usize, old, bits);
    }

    /// Hides instance `i` (sets [`VARIANT_HIDDEN`]) and turns its root motion off
    /// ([`RootMotionMode::Off`]: a despawned instance neither moves nor reports moves); ids stay
    /// stable. Undo with [`set_variant`](Self::set_variant) (and
    /// [`set_root_motion_mode`](Self::set_root_motion_mode)).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn despawn(&mut self, i: InstanceId) {
        let bits = self.records[i as usize].variant_bits | VARIANT_HIDDEN;
        self.set_variant(i, bits);
        self.set_root_motion_mode(i, RootMotionMode::Off);
    }

    /// Sets the colour multiplier of instance `i` (linear RGB).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_tint(&mut self, i: InstanceId, rgb: [f32; 3]) {
        self.record_mut(i).tint = rgb;
    }

    /// Starts playing `clip` on instance `i`, cross-fading from the current clip over `fade_seconds`
    /// (0, negative or NaN: a cut), as baked ([`PlayMode::AsBaked`]): [`play_as`](Self::play_as).
    ///
    /// # Panics
    /// If `i >= count()` or `clip` is not a clip of the asset.
    pub fn play(&mut self, i: InstanceId, clip: u32, fade_seconds: f32) {
        self.play_as(i, clip, fade_seconds, PlayMode::AsBaked);
    }

    /// Starts playing `clip` on instance `i` the way `mode` says (loop, once and hold, ping-pong,
    /// clamp; see [`PlayMode`]), cross-fading from the current clip over `fade_seconds` (0,
    /// negative or NaN: a cut). Slot A keeps the outgoing clip, slot B gets `clip` with
    /// `fade_start` = the current shader time; the fade duration is stored as binary16 (rounded to
    /// about 3 digits, see [`InstanceRecord::set_clip_b`]). A play queued with
    /// [`play_after`](Self::play_after) is dropped.
    ///
    /// The new clip plays at the rate for the instance's speed (see [`set_speed`](Self::set_speed)).
    /// It starts at phase 0 now, except that a looping locomotion clip following a looping locomotion
    /// clip continues at the outgoing clip's phase (the feet stay in step).
    ///
    /// While a fade is still running, playing its target clip again the same way changes nothing.
    /// Otherwise the slot with the larger weight at the current time (B from half-way on, and always
    /// once the fade is complete) becomes the outgoing slot A and the other one is dropped (a jump of
    /// at most half the blend). If that slot already loops `clip`, and `clip` is to loop, it simply
    /// keeps playing alone (no restart); otherwise the new fade (or cut) starts from it.
    ///
    /// # Panics
    /// If `i >= count()` or `clip` is not a clip of the asset.
    pub fn play_as(&mut self, i: InstanceId, clip: u32, fade_seconds: f32, mode: PlayMode) {
        let (clip_mode, natural) = {
            let c = self.clip(clip);
            (c.mode, c.natural_rate())
        };
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        if self.flags[i as usize] & FLAG_QUEUED != 0 {
            self.queued.remove(&i);
            self.flags[i as usize] &= !FLAG_QUEUED;
        }
        let wrap = mode.wrap(clip_mode);
        let code = mode.code();
        let t = self.time();
        let speed = self.speeds[i as usize];
        let rate = self.rate_for(clip, speed).unwrap_or(natural);
        let mut r = self.records[i as usize];
        let duration = r.fade_duration();
        let running = duration > 0.0 && playback::fade_weight(t, r.fade_start, duration) < 1.0;
        if running && r.clip_b_index() == clip && r.wrap_code_b() == code {
            return;
        }
        self.modes[i as usize] = mode;
        // The outgoing slot: A, or B if it dominates (always once the fade is complete).
        if duration > 0.0 && playback::fade_weight(t, r.fade_start, duration) >= 0.5 {
            r.clip_a = r.clip_b_index();
            r.phase_offset_a = r.phase_offset_b;
            r.rate_a = r.rate_b;
            r.set_wrap_code_a(r.wrap_code_b());
        }
        let outgoing = self.clip(r.clip_a);
        let outgoing_wrap = Wrap::from_code(r.wrap_code_a(), outgoing.mode);
        if r.clip_a == clip && wrap == Wrap::Loop && outgoing_wrap == Wrap::Loop {
            // The clip already looping: keep it, alone.
            r.set_clip_b(clip, 0.0);
            r.set_wrap_code_a(code);
            r.set_wrap_code_b(code);
            r.phase_offset_b = r.phase_offset_a;
            r.rate_b = r.rate_a;
            if r != self.records[i as usize] {
                self.records[i as usize] = r;
                self.dirty.mark(i as usize);
            }
            self.watch(i);
            return;
        }
        let in_step = wrap == Wrap::Loop
            && self.clip(clip).is_locomotion()
            && outgoing.is_locomotion()
            && outgoing_wrap == Wrap::Loop;
        let offset = if in_step {
            playback::retimed_offset(r.phase_offset_a, f64::from(t), r.rate_a, rate, Wrap::Loop)
        } else {
            start_offset(wrap, 0.0, t, rate)
        };
        let fade = if fade_seconds.is_nan() { 0.0 } else { fade_seconds };
        r.phase_offset_b = offset;
        r.rate_b = rate;
        r.fade_start = t;
        r.set_clip_b(clip, fade);
        r.set_wrap_code_b(code);
        if r.fade_duration() > 0.0 {
            if self.flags[i as usize] & FLAG_FADING == 0 {
                self.flags[i as usize] |= FLAG_FADING;
                self.fading.push(i);
            }
        } else {
            r.clip_a = clip;
            r.phase_offset_a = offset;
            r.rate_a = rate;
            r.set_wrap_code_a(code);
        }
        self.records[i as usize] = r;
        self.dirty.mark(i as usize);
        self.watch(i);
    }

    /// Queues `clip` on instance `i`, to start (as [`play_as`](Self::play_as)`(i, clip,
    /// fade_seconds, mode)`) when the current play completes: a clip played once or clamped when
    /// it reaches its end (its start, played backwards), a looping one at the end of its current
    /// cycle, a ping-pong one when it is back at its start. It starts in the first
    /// [`advance`](Self::advance) whose shader phase has got there (at most one frame late). One
    /// play is queued per instance: this replaces any earlier one; a direct `play` or `play_as`
    /// drops it. A clip playing at rate 0 never completes.
    ///
    /// # Panics
    /// If `i >= count()` or `clip` is not a clip of the asset.
    pub fn play_after(&mut self, i: InstanceId, clip: u32, fade_seconds: f32, mode: PlayMode) {
        let _ = self.clip(clip);
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        self.queued.insert(i, QueuedPlay { clip, fade_seconds, mode });
        self.flags[i as usize] |= FLAG_QUEUED;
        self.watch(i);
    }

    /// How instance `i` plays its current clip (the incoming one during a fade).
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn play_mode(&self, i: InstanceId) -> PlayMode {
        self.modes[i as usize]
    }

    /// Marks clip-local frame `frame` of `clip`: every instance whose playback of `clip` reaches it
    /// raises [`AnimationEventKind::Marker`] (a footstep, a hit, a sound cue). Marking a frame twice
    /// changes nothing.
    ///
    /// # Panics
    /// If `clip` is not a clip of the asset or `frame` is not one of its frames.
    pub fn mark_frame(&mut self, clip: u32, frame: u32) {
        let c = self.clip(clip);
        let Some(phase) = events::frame_phase(c, frame) else {
            panic!("frame {frame} is not a frame of clip {clip} ({} frames)", c.frame_count)
        };
        if self.markers.len() <= clip as usize {
            self.markers.resize(clip as usize + 1, Vec::new());
        }
        let marks = &mut self.markers[clip as usize];
        if let Err(at) = marks.binary_search_by_key(&frame, |&(f, _)| f) {
            marks.insert(at, (frame, phase));
            // Once per marked clip: instances already playing it are scheduled from now on.
            for id in 0..self.records.len() as u32 {
                if self.current_slot(id).clip == clip {
                    self.watch(id);
                }
            }
        }
    }

    /// The events found by the [`advance`](Self::advance) calls since the last drain, in order:
    /// computed on the CPU from the phase the shader shows at each frame (no GPU read-back), only
    /// for the instances that can raise one (played once, with a queued play, or playing a clip with
    /// marked frames), each only when its next event may be due, so a crowd of endless loops pays
    /// nothing for them.
    ///
    /// Recorded only with [`CrowdConfig::record_events`]. At most [`MAX_PENDING_EVENTS`] wait to be
    /// drained; later ones are counted in [`dropped_events`](Self::dropped_events) instead.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, AnimationEvent> {
        self.events.drain(..)
    }

    /// Events found while [`MAX_PENDING_EVENTS`] were already waiting to be drained, since the
    /// crowd was made: they were not kept.
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// Sets the speed of instance `i` in metres per second (negative plays backwards). Locomotion
    /// clips (stride > 0) play at `speed / stride` cycles per second (feet planted); other clips keep
    /// their natural rate. Both slots are re-timed with [`playback::retimed_offset`] at the current
    /// shader time, so the phase does not jump. A non-finite speed is ignored.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_speed(&mut self, i: InstanceId, metres_per_second: f32) {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        if !metres_per_second.is_finite() {
            return;
        }
        self.speeds[i as usize] = metres_per_second;
        let t = self.time();
        let mut r = self.records[i as usize];
        let (rate_a, offset_a) = self.retime(r.slot_a(), metres_per_second, t);
        r.rate_a = rate_a;
        r.phase_offset_a = offset_a;
        if r.fade_duration() > 0.0 {
            let (rate_b, offset_b) = self.retime(r.slot_b(), metres_per_second, t);
            r.rate_b = rate_b;
            r.phase_offset_b = offset_b;
        } else {
            r.rate_b = rate_a;
            r.phase_offset_b = offset_a;
        }
        if r != self.records[i as usize] {
            self.records[i as usize] = r;
            self.dirty.mark(i as usize);
        }
        self.watch(i);
    }

    /// Number of instances (hidden ones included).
    pub fn count(&self) -> u32 {
        self.records.len() as u32
    }

    /// Advances the clock by `dt_seconds` (NaN, infinite or negative steps count as 0). When the
    /// shader time reaches [`playback::REBASE_AFTER_SECONDS`], re-bases the epoch: every record's
    /// phase offsets and fade start are shifted (the phase the shader computes is unchanged up to
    /// f32 rounding) and every record is marked dirty (one full upload). Then folds every fade whose
    /// weight has reached 1 into slot A and marks those records dirty. Instances with root motion
    /// on ([`set_root_motion_mode`](Self::set_root_motion_mode)) are moved by their clips' motion
    /// over the step, or have it reported, first.
    pub fn advance(&mut self, dt_seconds: f64) {
        let dt = if dt_seconds.is_finite() && dt_seconds > 0.0 { dt_seconds } else { 0.0 };
        let from = self.clock.now();
        // dt is finite and >= 0: advance cannot fail.
        let _ = self.clock.advance(dt);
        // Events between the previous frame's shader time and this one's, in the old epoch.
        let due = self.find_events(self.event_time, self.time());
        // Root motion over the same step, in the same epoch.
        self.apply_root_motion(self.event_time, self.time(), from, self.clock.now());
        if self.clock.needs_rebase() {
            let shift = self.clock.rebase();
            let clips = &self.asset.clips;
            let wrap = |clip: u32, code: u32| {
                Wrap::from_code(code, clips.get(clip as usize).map_or(ClipMode::Looping, |c| c.mode))
            };
            for r in &mut self.records {
                let (wa, wb) = (wrap(r.clip_a, r.wrap_code_a()), wrap(r.clip_b_index(), r.wrap_code_b()));
                r.phase_offset_a = shift.offset(r.phase_offset_a, r.rate_a, wa);
                r.phase_offset_b = shift.offset(r.phase_offset_b, r.rate_b, wb);
                r.fade_start = shift.fade_start(r.fade_start);
            }
            self.dirty.mark_all();
        }
        self.event_time = self.time();
        for (i, next) in due {
            self.play_as(i, next.clip, next.fade_seconds, next.mode);
        }
        let t = self.time();
        let (records, flags, dirty) = (&mut self.records, &mut self.flags, &mut self.dirty);
        self.fading.retain(|&i| {
            let r = &mut records[i as usize];
            let duration = r.fade_duration();
            if duration > 0.0 && playback::fade_weight(t, r.fade_start, duration) < 1.0 {
                return true;
            }
            if duration > 0.0 {
                r.clip_a = r.clip_b_index();
                r.phase_offset_a = r.phase_offset_b;
                r.rate_a = r.rate_b;
                r.set_wrap_code_a(r.wrap_code_b());
                r.set_clip_b(r.clip_a, 0.0);
                dirty.mark(i as usize);
            }
            flags[i as usize] &= !FLAG_FADING;
            false
        });
    }

    /// Whether this frame's draws use the cross-fade pipeline for the finest LODs
    /// ([`CrowdConfig::cross_fade`] and `cross_fade_max_lod`): only while the config asks for it
    /// and some instance's fade is running (from [`Crowd::play`] until [`Crowd::advance`] folds
    /// the finished fade into slot A). With no fade running, both pipelines draw the same
    /// positions, and the plain one samples one clip per vertex instead of two.
    pub fn cross_fade_in_use(&self) -> bool {
        self.config.cross_fade && !self.fading.is_empty()
    }

    /// The crowd's identity (a clone gets a new one).
    pub fn id(&self) -> &CrowdId {
        &self.id
    }

    /// The clock value to upload for this frame: seconds since the epoch, `(now - epoch) as f32`.
    pub fn shader_time(&self) -> f32 {
        self.clock.shader_time()
    }

    /// The application clock (absolute time and epoch).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The records, indexed by [`InstanceId`], exactly as the GPU reads them.
    pub fn records(&self) -> &[InstanceRecord] {
        &self.records
    }

    /// The asset description.
    pub fn asset(&self) -> &CrowdAsset {
        &self.asset
    }

    /// The settings.
    pub fn config(&self) -> &CrowdConfig {
        &self.config
    }

    /// The settings, to change between frames (they apply at the next [`prepare_frame`](Self::prepare_frame)).
    pub fn config_mut(&mut self) -> &mut CrowdConfig {
        &mut self.config
    }

    /// The grid of the last [`prepare_frame`](Self::prepare_frame) (None before the first one with
    /// instances).
    pub fn grid(&self) -> Option<&ChunkGrid> {
        self.spatial.grid.as_ref()
    }

    /// The instance list as of the last [`prepare_frame`](Self::prepare_frame): every instance once,
    /// grouped by cell, then the far pool. What the batches index.
    pub fn instance_list(&self) -> &[u32] {
        &self.spatial.list
    }

    /// CPU culling for one camera: brings the grid and instance list up to date, collects the dirty
    /// record ranges, culls the cells against the camera's frustum, selects their LODs and builds the
    /// batches of every pass. See the [module documentation](self) for the rules. Allocates only the
    /// small output vectors (sized from the previous frame); every per-instance and per-cell buffer is
    /// reused, and per-instance work happens only for instances that moved.
    pub fn prepare_frame(&mut self, camera: &Camera) -> FrameDraws<'_> {
        // 1. Membership.
        let mut movers = std::mem::take(&mut self.movers);
        for &i in &movers {
            self.flags[i as usize] &= !FLAG_MOVER;
        }
        let had_dirty_list = self.spatial.list_dirty_from.is_some();
        if self.spatial.needs_rebuild(self.config.cell_size, self.records.len()) {
            self.spatial.rebuild(&self.records, self.config.cell_size);
        } else if !movers.is_empty() {
            self.spatial.apply_moves(&movers, &self.records);
        }
        movers.clear();
        self.movers = movers;
        let membership_changed = had_dirty_list || self.spatial.list_dirty_from.is_some();

        // 2. Dirty records.
        let n = self.count();
        self.dirty.take_ranges(n, self.config.upload_merge_gap, &mut self.ranges);

        // 3. Culling and batches.
        let frustum = Frustum::from_view_proj(&camera.view_proj);
        let mut params = cull_params(
            &self.config,
            &self.shape,
            &self.asset,
            &frustum,
            camera,
            membership_changed,
            &self.records,
        );
        params.cross_fade = self.cross_fade_in_use();
        let out = frame::cull(&mut self.spatial, &mut self.far, &mut self.capacity, &params);

        // 4. Uploads.
        let spatial = &mut self.spatial;
        let list_from = spatial.list_dirty_from.take();
        let list = &spatial.list;
        let list_upload = match list_from {
            Some(p) => Some((p as u32, &list[p.min(list.len())..])),
            None if out.far_rewritten && list.len() > spatial.listed_len => {
                Some((spatial.listed_len as u32, &list[spatial.listed_len..]))
            }
            None => None,
        };
        let records = &self.records;
        let record_uploads: Vec<(u32, &[InstanceRecord])> =
            self.ranges.iter().map(|&(a, b)| (a, &records[a as usize..b as usize])).collect();
        let mut stats = out.stats;
        stats.simulated = n;
        stats.uploaded_record_bytes =
            record_uploads.iter().map(|(_, r)| std::mem::size_of_val(*r) as u64).sum();
        stats.uploaded_list_bytes = list_upload.map_or(0, |(_, l)| std::mem::size_of_val(l) as u64);
        FrameDraws {
            record_uploads,
            list_upload,
            instance_list_len: list.len() as u32,
            main_fade: out.main_fade,
            main_plain: out.main_plain,
            shadow: out.shadow,
            attachments: out.attachments,
            impostors: out.impostors,
            impostor_shadow: out.impostor_shadow,
            stats,
        }
    }

    /// CPU culling of an extra view of the frame the last [`prepare_frame`](Self::prepare_frame)
    /// prepared (call it after that, before the crowd changes): the cells meeting `view_proj`'s
    /// frustum (world to clip, column-major, depth 0..1), each at the LOD `camera` gives it (so a
    /// shadow cascade draws the LODs the colour pass draws), as batches of the same instance list,
    /// so nothing more is uploaded; of a cell the view cuts, the runs of members in the view. A view reaching beyond the camera's frustum (a shadow cascade's
    /// casters beside the view) gets those casters; the far pool is not used (each cell's own list
    /// section is drawn). Costs O(non-empty cells).
    pub fn cull_view(&self, view_proj: &[[f32; 4]; 4], camera: &Camera) -> ViewDraws {
        let frustum = Frustum::from_view_proj(view_proj);
        let mut params =
            cull_params(&self.config, &self.shape, &self.asset, &frustum, camera, false, &self.records);
        params.cross_fade = self.cross_fade_in_use();
        frame::cull_view(&self.spatial, &params)
    }

    /// For GPU-driven culling, where the records stay resident and a compute pass culls them: the dirty
    /// record ranges since the last call of this or [`prepare_frame`](Self::prepare_frame), as in
    /// [`FrameDraws::record_uploads`], and nothing else (no grid or list work, no culling). Costs
    /// O(changed records): nothing when nothing changed. Moved and spawned instances stay queued and
    /// are listed by the next [`prepare_frame`](Self::prepare_frame), so both paths can alternate on
    /// the same record buffer. (Added to the contract.)
    pub fn take_record_uploads(&mut self) -> Vec<(u32, &[InstanceRecord])> {
        let n = self.count();
        self.dirty.take_ranges(n, self.config.upload_merge_gap, &mut self.ranges);
        let records = &self.records;
        self.ranges.iter().map(|&(a, b)| (a, &records[a as usize..b as usize])).collect()
    }

    /// Sets the 16 bytes of user data of instance `i`: four `u32`s a host's shaders read as
    /// `instance_user_data[in.instance]` (group 2, the fragment stage; see
    /// `vat_core::backend::pipeline::HostShader`), e.g. a team colour, a selection flag or an index into
    /// the host's own tables. Kept beside the 64-byte record (which it does not change), uploaded
    /// only when changed ([`Crowd::take_user_data_uploads`]). Zero for a new instance.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn set_user_data(&mut self, i: InstanceId, data: [u32; 4]) {
        let count = self.user_data.len();
        match self.user_data.get_mut(i as usize) {
            Some(slot) if *slot == data => {}
            Some(slot) => {
                *slot = data;
                self.user_dirty.mark(i as usize);
            }
            None => panic!("instance {i} out of range (the crowd has {count})"),
        }
    }

    /// Every instance's user data, by instance id ([`Crowd::set_user_data`]).
    pub fn user_data(&self) -> &[[u32; 4]] {
        &self.user_data
    }

    /// The user data changed since the last call, as `(first instance, data)` ranges (coalesced like
    /// the records' with [`CrowdConfig::upload_merge_gap`]); clears the changes. The frame plan takes
    /// them for the backends.
    pub fn take_user_data_uploads(&mut self) -> Vec<(u32, &[[u32; 4]])> {
        let n = self.user_data.len() as u32;
        self.user_dirty.take_ranges(n, self.config.upload_merge_gap, &mut self.user_ranges);
        let data = &self.user_data;
        self.user_ranges.iter().map(|&(a, b)| (a, &data[a as usize..b as usize])).collect()
    }

    /// Forgets instance `i`'s previous frame for motion vectors (`RenderOptions::motion_vectors`):
    /// at the next frame its previous record is its current one, so a teleport or a respawn draws
    /// no streak (the motion left is the camera's and the animation's own over the frame). Call it
    /// with the change, before the next frame.
    ///
    /// # Panics
    /// If `i >= count()`.
    pub fn reset_motion_history(&mut self, i: InstanceId) {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        self.motion_resets.push(i);
    }

    /// The instances reset with [`reset_motion_history`](Self::reset_motion_history) since the last
    /// call (the frame plan takes them), in call order, possibly repeated.
    pub fn take_motion_resets(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.motion_resets)
    }

    /// The nearest shown instance hit by the ray from `origin` along `direction` (world space, metres;
    /// `direction` need not be unit length), with the distance from `origin` to the hit in metres.
    ///
    /// Each instance is a vertical cylinder around its position: radius = the asset bounds' farthest
    /// horizontal corner from the origin times the scale (so it holds every yaw), height = the bounds'
    /// y range times the scale. A ray starting inside a cylinder hits it at distance 0. The grid is
    /// the broadphase: the cells along the ray (widened by the largest cylinder radius) are walked in
    /// ray order and the walk stops once a hit is nearer than the next column of cells; instances
    /// moved or spawned since the last frame are tested one by one. `None` for a zero or non-finite
    /// direction, or when nothing is hit.
    pub fn pick(&self, origin: [f32; 3], direction: [f32; 3]) -> Option<(InstanceId, f32)> {
        pick::pick(self, origin, direction)
    }

    fn clip(&self, clip: u32) -> &Clip {
        let count = self.asset.clips.len();
        match self.asset.clips.get(clip as usize) {
            Some(c) => c,
            None => panic!("clip {clip} is not a clip of the asset ({count} clips)"),
        }
    }

    fn time(&self) -> f32 {
        self.clock.shader_time()
    }

    /// The record of `i`, marked dirty.
    fn record_mut(&mut self, i: InstanceId) -> &mut InstanceRecord {
        let count = self.records.len();
        assert!((i as usize) < count, "instance {i} out of range (count {count})");
        self.dirty.mark(i as usize);
        &mut self.records[i as usize]
    }

    fn queue_mover(&mut self, i: InstanceId) {
        let f = &mut self.flags[i as usize];
        if *f & FLAG_MOVER == 0 {
            *f |= FLAG_MOVER;
            self.movers.push(i);
        }
    }

    /// The stride-matched rate of `clip` at `speed` (None: not locomotion or no speed set).
    fn rate_for(&self, clip: u32, speed: f32) -> Option<f32> {
        let c = self.asset.clips.get(clip as usize)?;
        if c.is_locomotion() { playback::stride_matched_rate(speed, c.stride) } else { None }
    }

    /// New `(rate, offset)` of a slot playing `clip` at `offset`/`rate` when the speed becomes `speed`
    /// at shader time `t`.
    fn retime(&self, slot: crate::instance::PlayingSlot, speed: f32, t: f32) -> (f32, f32) {
        let (offset, rate) = (slot.phase_offset, slot.rate);
        let Some(c) = self.asset.clips.get(slot.clip as usize) else { return (rate, offset) };
        let new_rate = self.rate_for(slot.clip, speed).unwrap_or_else(|| c.natural_rate());
        if new_rate == rate {
            return (rate, offset);
        }
        let wrap = Wrap::from_code(slot.wrap_code, c.mode);
        (new_rate, playback::retimed_offset(offset, f64::from(t), rate, new_rate, wrap))
    }

    /// The slot of `i` playing its current clip: B while a fade runs (the incoming clip), else A.
    fn current_slot(&self, i: InstanceId) -> crate::instance::PlayingSlot {
        let r = &self.records[i as usize];
        if r.fade_duration() > 0.0 { r.slot_b() } else { r.slot_a() }
    }
}

/// The offset that puts a clip wrapped by `wrap` at `phase` at shader time `t` when played at
/// `rate` (clamped offsets stay unwrapped: see [`playback::settled_offset`]).
fn start_offset(wrap: Wrap, phase: f32, t: f32, rate: f32) -> f32 {
    playback::retimed_offset(phase, f64::from(t), 0.0, rate, wrap)
}
