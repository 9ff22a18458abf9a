//! A soft-body sequence is streamed: the bake and its verification read the frames from the source a
//! few at a time, so the heap never holds the sequence (issue 15: "stream frames from disk; the same
//! memory budget rules as glTF bakes"). The heap is measured with a counting allocator, so this file
//! holds one test: nothing else allocates while it measures.

// Test code: a failed unwrap is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use glam::{Vec2, Vec3};
use vat_bake::prepare::{BakeOptions, estimate_bake_bytes, prepare};
use vat_bake::rig::{BodyFrame, BodyFrames};
use vat_bake::sequence::{rig_from_frames, smooth_normals};
use vat_bake::verify::verify;
use vat_core::container::Asset;

mod common;
use common::{LIVE, PEAK};

/// A `side` x `side` grid of vertices rippling: each frame computed when it is read, so the
/// sequence exists nowhere as a whole. Counts the reads.
struct Ripple {
    side: usize,
    frames: usize,
    indices: Vec<u32>,
    reads: AtomicUsize,
}

impl Ripple {
    fn new(side: usize, frames: usize) -> Ripple {
        let mut indices = Vec::new();
        for y in 0..side - 1 {
            for x in 0..side - 1 {
                let v = (y * side + x) as u32;
                let s = side as u32;
                indices.extend_from_slice(&[v, v + s, v + 1, v + 1, v + s, v + s + 1]);
            }
        }
        Ripple { side, frames, indices, reads: AtomicUsize::new(0) }
    }

    fn positions(&self, k: usize) -> Vec<Vec3> {
        let t = k as f32 / 30.0;
        (0..self.side * self.side)
            .map(|i| {
                let (x, z) = ((i % self.side) as f32 * 0.05, (i / self.side) as f32 * 0.05);
                let r = (x * x + z * z).sqrt();
                Vec3::new(x, 0.1 * (6.0 * r - 4.0 * t).sin(), z)
            })
            .collect()
    }
}

impl BodyFrames for Ripple {
    fn frame_count(&self) -> usize {
        self.frames
    }

    fn vertex_count(&self) -> usize {
        self.side * self.side
    }

    fn frame_bytes(&self) -> u64 {
        self.vertex_count() as u64 * 24
    }

    fn read_frame(&self, k: usize) -> vat_bake::Result<BodyFrame> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let positions = self.positions(k);
        let normals = smooth_normals(&positions, &self.indices);
        Ok(BodyFrame { positions, normals })
    }
}

#[test]
fn a_long_sequence_bakes_and_verifies_holding_a_few_frames() {
    // 5,000 frames: more than the 4,096 the morph-target form allowed. 1,600 vertices: 192 MB of
    // positions and normals as a whole; the Packed64 texture is 64 MB.
    let (side, frames) = (40usize, 5_000usize);
    let ripple = Arc::new(Ripple::new(side, frames));
    let uvs: Vec<Vec2> = (0..side * side).map(|i| Vec2::new((i % side) as f32, (i / side) as f32)).collect();
    let rig =
        rig_from_frames("ripple".into(), 30.0, Some(uvs), ripple.indices.clone(), Vec::new(), ripple.clone())
            .unwrap();
    let options =
        BakeOptions { fps: 30.0, lods: vat_bake::lods::LodOptions::Count(2), ..BakeOptions::default() };
    let estimate = estimate_bake_bytes(&rig, &options, frames as u32).unwrap();
    let sequence_bytes = (frames * side * side * 24) as u64;

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let bake = prepare(&rig, &options).unwrap();
    let bake_peak = (PEAK.load(Ordering::Relaxed) - before) as u64;
    let reads_after_bake = ripple.reads.load(Ordering::Relaxed);
    let bytes = bake.to_vat_bytes().unwrap();
    drop(bake);
    let asset = Asset::parse(&bytes).unwrap();
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let report = verify(&asset, &rig).unwrap();
    let verify_peak = (PEAK.load(Ordering::Relaxed) - base) as u64;

    assert!(report.passed, "{:?}", report.failures);
    // Every frame of the one clip, checked at every vertex (the clip loops: its last source frame
    // is the seam, not a stored frame, or it plays once and stores all).
    let clip = &asset.manifest().clips[0];
    assert!(clip.frame_count as usize >= frames - 1, "{} frames baked", clip.frame_count);
    assert_eq!(report.vertex_frames, u64::from(clip.frame_count) * (side * side) as u64);
    // The box pass and the encode pass each read every frame; nothing is read twice per pass
    // beyond the LOD reference poses and the loop seam.
    assert!(reads_after_bake >= 2 * (frames - 1), "{reads_after_bake} reads");
    assert!(reads_after_bake <= 2 * frames + 16, "{reads_after_bake} reads");
    // The bake holds its texture (and the file it writes) but never the sequence.
    eprintln!(
        "sequence {:.1} MB, bake peak {:.1} MB (estimate {:.1} MB), verify peak {:.1} MB",
        sequence_bytes as f64 / 1e6,
        bake_peak as f64 / 1e6,
        estimate as f64 / 1e6,
        verify_peak as f64 / 1e6
    );
    assert!(bake_peak <= estimate, "bake peak {bake_peak} B over its estimate {estimate} B");
    assert!(bake_peak < sequence_bytes / 2, "bake peak {bake_peak} B against a {sequence_bytes} B sequence");
    // Verification holds a block of fresh frames and decodes into one frame per thread.
    let block = 48 * (side * side) as u64 * 24;
    assert!(verify_peak < 4 * block, "verify peak {verify_peak} B");
}
