//! GPU culling statistics without a stall: the decoding of a copied `draw_args` block into counts
//! ([`GpuCullCounts`]) and the bookkeeping of the small ring of host-readable copies each backend's
//! `GpuCrowd` keeps ([`CountsRing`]): which slot this frame's copy goes to, which slots are still in
//! flight, and how many frames late a result is. Plain data; both backends drive it the same way
//! and only supply "copy the draw arguments into slot `s`" and "has slot `s` arrived?" (wgpu:
//! `map_buffer_on_submit` + `device.poll(PollType::Poll)`; Vulkan: a `VkEvent` set after the copy,
//! checked with `vkGetEventStatus`). Nothing here ever waits.
//!
//! # A frame (GPU culling)
//! ```text
//! for (slot, _) in ring.in_flight() {          // without waiting:
//!     if arrived(slot) { ring.complete(slot, &words_of(slot)); }
//! }
//! ring.start_frame(gpu_culled);                // frame serial n, and a slot (begin_frame + claim)
//! if let Some(slot) = ring.current_slot() { record_copy(draw_args -> slot) } // else: skipped
//! report.set_gpu_rings([&ring]);               // the newest arrived frame, `frames_late` behind n
//! ```
//!
//! # What is counted
//! The `draw_args` block ([`gpu::DRAW_ARGS_COUNT`] draws of [`gpu::DRAW_ARGS_WORDS`] words) holds,
//! for each LOD `l`, the body draw `l` and the attachment draw `MAX_LODS + l`, each with the
//! `instance_count` `cs_cull` counted up. The colour pass draws body draw `l` once, with the
//! cross-fade or the plain pipeline (the fade/plain choice is per LOD, not a split of the instances),
//! and the shadow pass draws the same arguments again for LODs up to the shadow limit, so:
//! - [`GpuCullCounts::drawn`]: shown (not hidden) instances whose bounding sphere meets the frustum,
//!   summed over LODs: the colour pass's body instances;
//! - [`GpuCullCounts::triangles`]: `index_count / 3 * instance_count` summed over the body draws
//!   (the colour pass's body triangles);
//! - [`GpuCullCounts::attachment_instances`]: the instances of the attachment draws. These include
//!   instances without the accessory bit (the shader collapses their attachment triangles), so they
//!   are **not** the CPU path's `attachments_drawn`, and attachment triangles are **not** in
//!   `triangles` (the CPU path's `triangles` includes those of the instances with the accessory bit).
//!
//! Shadow casters, visible cells and far-pool instances are not counted on the GPU path.

use crate::gpu;
use crate::lod::MAX_LODS;

/// Slots of a crowd's read-back ring: how many GPU-culled frames' draw arguments can be in flight
/// at once. With a host that keeps at most `RING_DEPTH - 1` frames in flight, a copy is never
/// skipped; a result arrives 1 frame late at the earliest (the frame that produced it has to finish
/// on the GPU first) and at most `RING_DEPTH` frames late while the GPU keeps up.
pub const RING_DEPTH: usize = 3;

/// The GPU culling's counts of one frame of one crowd (or the sum over several crowds), decoded
/// from a copy of its `draw_args` buffer. See the module docs for what is and is not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuCullCounts {
    /// Body instances drawn by the colour pass: shown instances in the frustum, all LODs.
    pub drawn: u32,
    /// `drawn` per LOD (LODs the crowd does not draw are 0).
    pub per_lod: [u32; MAX_LODS],
    /// Body triangles of the colour pass: `index_count / 3 * instance_count` over the LODs.
    pub triangles: u64,
    /// Instances of the attachment draws (up to the crowd's attachment LOD limit), with or without
    /// the accessory bit.
    pub attachment_instances: u32,
}

impl GpuCullCounts {
    /// Decodes `words`, a copy of a `draw_args` buffer ([`gpu::DRAW_ARGS_COUNT`] draws of
    /// [`gpu::DRAW_ARGS_WORDS`] `u32`s: `index_count, instance_count, first_index, base_vertex,
    /// first_instance`). Missing words count as 0.
    pub fn decode(words: &[u32]) -> Self {
        let w = gpu::DRAW_ARGS_WORDS as usize;
        let word = |draw: usize, k: usize| words.get(draw * w + k).copied().unwrap_or(0);
        let mut out = Self::default();
        for lod in 0..MAX_LODS {
            let instances = word(lod, 1);
            out.per_lod[lod] = instances;
            out.drawn = out.drawn.saturating_add(instances);
            out.triangles += u64::from(word(lod, 0) / 3) * u64::from(instances);
            out.attachment_instances = out.attachment_instances.saturating_add(word(MAX_LODS + lod, 1));
        }
        out
    }
}

impl std::ops::AddAssign for GpuCullCounts {
    /// Adds every counter of `other` (several crowds of one frame).
    fn add_assign(&mut self, other: Self) {
        self.drawn = self.drawn.saturating_add(other.drawn);
        for (a, b) in self.per_lod.iter_mut().zip(other.per_lod) {
            *a = a.saturating_add(b);
        }
        self.triangles += other.triangles;
        self.attachment_instances = self.attachment_instances.saturating_add(other.attachment_instances);
    }
}

/// The newest counts that arrived, and how old they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuCountsResult {
    /// The counts.
    pub counts: GpuCullCounts,
    /// The serial of the GPU-culled frame they are from ([`CountsRing::begin_frame`]; the first
    /// frame is 1).
    pub frame: u64,
    /// How many GPU-culled frames of the crowd came after it: 0 when they are from the frame the
    /// ring's last [`begin_frame`](CountsRing::begin_frame) started (possible only after the host
    /// waited for that frame), 1 for the frame before, and so on.
    pub frames_late: u32,
}

/// The bookkeeping of one crowd's ring of [`RING_DEPTH`] read-back slots, as plain data. Each
/// backend's `GpuCrowd` holds one next to the slots' buffers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountsRing {
    /// Serial of the current frame (0 before the first).
    frame: u64,
    /// Per slot: the frame whose copy it holds or will hold, while in flight; `None`: free.
    slots: [Option<u64>; RING_DEPTH],
    /// The newest arrived result: (frame, counts).
    latest: Option<(u64, GpuCullCounts)>,
    /// Whether the current frame found every slot in flight (no copy recorded).
    skipped: bool,
    /// Frames whose copy was skipped, since the ring was made.
    skipped_total: u64,
    /// The slot the current frame copies into ([`start_frame`](Self::start_frame)).
    current: Option<usize>,
}

impl CountsRing {
    /// Starts a GPU-culled frame and returns its serial (1, 2, ...).
    pub fn begin_frame(&mut self) -> u64 {
        self.frame += 1;
        self.skipped = false;
        self.current = None;
        self.frame
    }

    /// Starts a frame ([`begin_frame`](Self::begin_frame)) and, when `copy` (a GPU-culled frame),
    /// [`claim`](Self::claim)s its slot, kept as [`current_slot`](Self::current_slot).
    pub fn start_frame(&mut self, copy: bool) -> Option<usize> {
        self.begin_frame();
        self.current = if copy { self.claim() } else { None };
        self.current
    }

    /// The slot the current frame copies into: `None` for a frame without a copy (CPU-culled, or
    /// skipped because every slot was in flight).
    pub fn current_slot(&self) -> Option<usize> {
        self.current
    }

    /// Frees the current frame's slot (its copy was not recorded, or its commands will never be
    /// submitted): [`release`](Self::release) of [`current_slot`](Self::current_slot).
    pub fn drop_current(&mut self) {
        if let Some(slot) = self.current.take() {
            self.release(slot);
        }
    }

    /// The serial of the current (last begun) frame; 0 before any.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The slots in flight, `(slot, frame)`, oldest frame first: check each without waiting and
    /// [`complete`](Self::complete) those that arrived.
    pub fn in_flight(&self) -> Vec<(usize, u64)> {
        let mut out: Vec<(usize, u64)> =
            self.slots.iter().enumerate().filter_map(|(s, f)| f.map(|f| (s, f))).collect();
        out.sort_by_key(|&(_, f)| f);
        out
    }

    /// Whether `slot` is in flight.
    pub fn is_in_flight(&self, slot: usize) -> bool {
        self.slots.get(slot).is_some_and(Option::is_some)
    }

    /// Takes a free slot for the current frame's copy, or `None` when every slot is in flight (then
    /// no copy is recorded this frame: [`skipped`](Self::skipped)). Slot `frame % RING_DEPTH` first,
    /// then the next free one.
    pub fn claim(&mut self) -> Option<usize> {
        let start = (self.frame % RING_DEPTH as u64) as usize;
        let slot = (0..RING_DEPTH).map(|k| (start + k) % RING_DEPTH).find(|&s| self.slots[s].is_none());
        match slot {
            Some(s) => self.slots[s] = Some(self.frame),
            None => {
                self.skipped = true;
                self.skipped_total += 1;
            }
        }
        slot
    }

    /// Frees `slot` without a result: its copy was not recorded or will never be submitted.
    pub fn release(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            *s = None;
        }
    }

    /// Frees every slot without results (a backend whose copies were lost, e.g. after waiting for
    /// the device and finding a slot's copy never submitted).
    pub fn release_all(&mut self) {
        self.slots = [None; RING_DEPTH];
    }

    /// Slot `slot` arrived with `words` (its copy of `draw_args`): decodes them, frees the slot and
    /// keeps them as the newest result unless a newer frame already arrived. Returns the counts
    /// (`None` if the slot was not in flight: nothing changes).
    pub fn complete(&mut self, slot: usize, words: &[u32]) -> Option<GpuCullCounts> {
        let frame = self.slots.get_mut(slot)?.take()?;
        let counts = GpuCullCounts::decode(words);
        if self.latest.is_none_or(|(f, _)| f < frame) {
            self.latest = Some((frame, counts));
        }
        Some(counts)
    }

    /// The newest counts that arrived and how many frames late they are; `None` before any.
    pub fn latest(&self) -> Option<GpuCountsResult> {
        self.latest.map(|(frame, counts)| GpuCountsResult {
            counts,
            frame,
            frames_late: u32::try_from(self.frame.saturating_sub(frame)).unwrap_or(u32::MAX),
        })
    }

    /// Whether the current frame's copy was skipped because every slot was in flight.
    pub fn skipped(&self) -> bool {
        self.skipped
    }

    /// Frames whose copy was skipped since the ring was made.
    pub fn skipped_total(&self) -> u64 {
        self.skipped_total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `draw_args` block with `(index_count, instance_count)` per body LOD and attachment
    /// instances per LOD.
    fn block(bodies: &[(u32, u32)], attachments: &[u32]) -> Vec<u32> {
        let w = gpu::DRAW_ARGS_WORDS as usize;
        let mut out = vec![0u32; gpu::DRAW_ARGS_COUNT as usize * w];
        for (l, &(indices, instances)) in bodies.iter().enumerate() {
            out[l * w] = indices;
            out[l * w + 1] = instances;
            out[l * w + 2] = 1000 * l as u32;
        }
        for (l, &instances) in attachments.iter().enumerate() {
            out[(MAX_LODS + l) * w] = 300;
            out[(MAX_LODS + l) * w + 1] = instances;
        }
        out
    }

    #[test]
    fn decoding_sums_instances_and_triangles_over_lods() {
        let c = GpuCullCounts::decode(&block(&[(4592 * 3, 10), (1750 * 3, 7), (484 * 3, 0)], &[10, 5]));
        assert_eq!(c.drawn, 17);
        assert_eq!(c.per_lod[..3], [10, 7, 0]);
        assert_eq!(c.triangles, 4592 * 10 + 1750 * 7);
        assert_eq!(c.attachment_instances, 15);
        // Attachment triangles are not in `triangles`.
        let bare = GpuCullCounts::decode(&block(&[(4592 * 3, 10), (1750 * 3, 7)], &[]));
        assert_eq!(bare.triangles, c.triangles);
    }

    #[test]
    fn decoding_a_short_or_empty_block_counts_zero() {
        assert_eq!(GpuCullCounts::decode(&[]), GpuCullCounts::default());
        let c = GpuCullCounts::decode(&[30, 4]);
        assert_eq!((c.drawn, c.triangles), (4, 40));
    }

    #[test]
    fn counts_add_up() {
        let a = GpuCullCounts::decode(&block(&[(30, 2), (15, 1)], &[2]));
        let b = GpuCullCounts::decode(&block(&[(30, 5)], &[]));
        let mut s = a;
        s += b;
        assert_eq!((s.drawn, s.triangles, s.attachment_instances), (8, 20 + 5 + 50, 2));
        assert_eq!(s.per_lod[..2], [7, 1]);
    }

    #[test]
    fn a_result_is_as_late_as_the_frames_begun_after_it() {
        let mut ring = CountsRing::default();
        assert_eq!(ring.latest(), None);
        assert_eq!(ring.begin_frame(), 1);
        let s1 = ring.claim().unwrap();
        assert_eq!(ring.in_flight(), vec![(s1, 1)]);
        assert_eq!(ring.begin_frame(), 2);
        // Frame 1 arrives while frame 2 is prepared: 1 frame late.
        assert!(ring.complete(s1, &block(&[(3, 4)], &[])).is_some());
        let r = ring.latest().unwrap();
        assert_eq!((r.frame, r.frames_late, r.counts.drawn), (1, 1, 4));
        let s2 = ring.claim().unwrap();
        assert_eq!(s2, 2 % RING_DEPTH, "frame n starts looking at slot n % RING_DEPTH");
        // The host waits for frame 2: its result is 0 frames late.
        ring.complete(s2, &block(&[(3, 9)], &[]));
        let r = ring.latest().unwrap();
        assert_eq!((r.frame, r.frames_late, r.counts.drawn), (2, 0, 9));
        ring.begin_frame();
        assert_eq!(ring.latest().unwrap().frames_late, 1);
    }

    #[test]
    fn a_full_ring_skips_the_copy_and_never_waits() {
        let mut ring = CountsRing::default();
        let mut slots = Vec::new();
        for f in 1..=RING_DEPTH as u64 {
            assert_eq!(ring.begin_frame(), f);
            slots.push(ring.claim().unwrap());
            assert!(!ring.skipped());
        }
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), RING_DEPTH, "each in-flight frame has its own slot");
        ring.begin_frame();
        assert_eq!(ring.claim(), None);
        assert!(ring.skipped());
        assert_eq!(ring.skipped_total(), 1);
        // Oldest first; an older result arriving after a newer one does not replace it.
        let flying = ring.in_flight();
        assert_eq!(flying.iter().map(|&(_, f)| f).collect::<Vec<_>>(), vec![1, 2, 3]);
        ring.complete(flying[1].0, &block(&[(3, 2)], &[]));
        ring.complete(flying[0].0, &block(&[(3, 1)], &[]));
        let r = ring.latest().unwrap();
        assert_eq!((r.frame, r.frames_late, r.counts.drawn), (2, 2, 2));
        assert_eq!(ring.complete(flying[0].0, &[]), None, "a free slot completes nothing");
        ring.begin_frame();
        assert!(ring.claim().is_some());
        assert!(!ring.skipped());
        ring.release_all();
        assert!(ring.in_flight().is_empty());
    }

    #[test]
    fn a_started_frame_claims_a_slot_only_when_it_copies() {
        let mut ring = CountsRing::default();
        assert_eq!(ring.start_frame(false), None);
        assert_eq!((ring.frame(), ring.current_slot()), (1, None));
        let s = ring.start_frame(true).unwrap();
        assert_eq!(ring.current_slot(), Some(s));
        assert_eq!(ring.in_flight(), vec![(s, 2)]);
        ring.drop_current();
        assert_eq!(ring.current_slot(), None);
        assert!(ring.in_flight().is_empty());
        ring.start_frame(true);
        ring.begin_frame();
        assert_eq!(ring.current_slot(), None, "a new frame has no slot until it claims one");
    }

    #[test]
    fn a_released_slot_gives_no_result() {
        let mut ring = CountsRing::default();
        ring.begin_frame();
        let s = ring.claim().unwrap();
        assert!(ring.is_in_flight(s));
        ring.release(s);
        assert!(!ring.is_in_flight(s));
        assert_eq!(ring.complete(s, &block(&[(3, 1)], &[])), None);
        assert_eq!(ring.latest(), None);
    }

    #[test]
    fn a_report_takes_the_counts_only_when_every_crowd_has_some() {
        use crate::render::Culling;
        let result = |drawn: u32, late: u32| {
            Some(GpuCountsResult {
                counts: GpuCullCounts::decode(&block(&[(30, drawn)], &[])),
                frame: 1,
                frames_late: late,
            })
        };
        let mut cpu = crate::frame::FramePlan::default().report();
        cpu.stats.drawn = 5;
        let before = cpu;
        cpu.set_gpu_counts([result(3, 1)]);
        assert_eq!(cpu, before, "a CPU-culled report is left as it is");

        let mut gpu = crate::frame::FramePlan::default().report();
        gpu.culling = Culling::Gpu;
        assert_eq!(gpu.gpu_counts_frames_late, None);
        gpu.set_gpu_counts([result(3, 1), result(4, 2)]);
        assert_eq!(gpu.gpu_counts_frames_late, Some(2), "the largest lag");
        assert_eq!((gpu.stats.drawn, gpu.stats.submitted, gpu.stats.triangles), (7, 7, 70));
        assert_eq!(gpu.gpu_counts.unwrap().per_lod[0], 7);
        gpu.set_gpu_counts([result(3, 1), None]);
        assert_eq!((gpu.gpu_counts, gpu.gpu_counts_frames_late, gpu.stats.drawn), (None, None, 0));

        let mut ring = CountsRing::default();
        for _ in 0..=RING_DEPTH {
            ring.begin_frame();
            ring.claim();
        }
        gpu.set_gpu_rings([&ring]);
        assert!(gpu.gpu_counts_skipped);
        assert_eq!(gpu.gpu_counts_frames_late, None);
    }
}
