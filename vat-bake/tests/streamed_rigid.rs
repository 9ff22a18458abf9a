//! Rigid pieces are detected in a mesh sequence read a few frames at a time, so the heap never
//! holds the sequence (issue 15: "stream frames from disk"). The heap is measured with a counting
//! allocator, so this file holds one test: nothing else allocates while it measures.

// Test code: a failed unwrap is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use glam::{Quat, Vec3};
use vat_bake::rig::{BodyFrame, BodyFrames};
use vat_bake::rigid::{RIGID_DETECTION_TOLERANCE, RigidSource};

mod common;
use common::{LIVE, PEAK};

/// `cubes` flat-shaded unit cubes (24 vertices each: every corner split three ways, so the
/// detection must follow split vertices through every frame) on a grid, each tumbling about its
/// own axis and bouncing: each frame computed when it is read. Counts the reads.
struct Tumble {
    cubes: usize,
    frames: usize,
    indices: Vec<u32>,
    reads: AtomicUsize,
}

/// Corner `c` of a unit cube centred on the origin (bits of `c`: x, y, z).
fn corner(c: usize) -> Vec3 {
    Vec3::new((c & 1) as f32 - 0.5, ((c >> 1) & 1) as f32 - 0.5, ((c >> 2) & 1) as f32 - 0.5) * 0.2
}

/// The cube's six faces, four corners each, counter-clockwise seen from outside.
const FACES: [[usize; 4]; 6] =
    [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];

impl Tumble {
    fn new(cubes: usize, frames: usize) -> Tumble {
        let mut indices = Vec::new();
        for k in 0..cubes {
            for f in 0..6 {
                let v = (k * 24 + f * 4) as u32;
                indices.extend_from_slice(&[v, v + 1, v + 2, v, v + 2, v + 3]);
            }
        }
        Tumble { cubes, frames, indices, reads: AtomicUsize::new(0) }
    }

    /// Cube `k`'s motion at frame `f`: a rotation about its own axis and its centre.
    fn motion(&self, k: usize, f: usize) -> (Quat, Vec3) {
        let t = f as f32 / 30.0;
        let axis = Vec3::new(1.0, (k % 7) as f32 * 0.3, (k % 5) as f32 * 0.2 - 0.4).normalize();
        let home = Vec3::new((k % 25) as f32 * 0.5, 2.0, (k / 25) as f32 * 0.5);
        (
            Quat::from_axis_angle(axis, t * (1.0 + (k % 3) as f32)),
            home + Vec3::new(0.0, -0.5 * t.sin().abs(), 0.1 * (0.5 * t).sin()),
        )
    }
}

impl BodyFrames for Tumble {
    fn frame_count(&self) -> usize {
        self.frames
    }

    fn vertex_count(&self) -> usize {
        self.cubes * 24
    }

    fn frame_bytes(&self) -> u64 {
        self.vertex_count() as u64 * 24
    }

    fn read_frame(&self, f: usize) -> vat_bake::Result<BodyFrame> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let mut positions = Vec::with_capacity(self.vertex_count());
        let mut normals = Vec::with_capacity(self.vertex_count());
        for k in 0..self.cubes {
            let (rotation, centre) = self.motion(k, f);
            for face in FACES {
                let [a, b, c, _] = face.map(corner);
                let normal = rotation * (b - a).cross(c - a).normalize();
                for &i in &face {
                    positions.push(centre + rotation * corner(i));
                    normals.push(normal);
                }
            }
        }
        Ok(BodyFrame { positions, normals })
    }
}

#[test]
fn rigid_detection_holds_a_few_frames_not_the_sequence() {
    // 400 cubes (9,600 vertices) x 1,000 frames: 230 MB of positions and normals as a whole.
    let (cubes, frames) = (400usize, 1_000usize);
    let tumble = Tumble::new(cubes, frames);
    let sequence_bytes = (frames * tumble.vertex_count() * 24) as u64;

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let (source, residual) =
        RigidSource::from_frames("tumble", 30.0, &tumble.indices, None, &tumble, RIGID_DETECTION_TOLERANCE)
            .unwrap();
    let peak = (PEAK.load(Ordering::Relaxed) - before) as u64;
    let reads = tumble.reads.load(Ordering::Relaxed);

    // Every cube is one piece (its 24 split vertices joined by their shared paths), fitted to
    // its motion.
    assert_eq!(source.pieces.len(), cubes);
    assert!(source.pieces.iter().all(|p| p.positions.len() == 24 && p.indices.len() == 36));
    assert!(residual < 1e-5, "residual {residual} m");
    let clip = &source.clips[0];
    assert_eq!(clip.frames.len(), frames);
    for f in [0, 499, 999] {
        for k in [0, 137, 399] {
            let (rotation, _) = tumble.motion(k, f);
            let (rest, _) = tumble.motion(k, 0);
            let want = rotation * rest.inverse();
            let got = Quat::from_array(clip.frames[f][k].rotation);
            assert!(got.dot(want).abs() > 1.0 - 1e-6, "frame {f}, cube {k}: {got} against {want}");
        }
    }
    // Frame 0 once, then every other frame twice: once following the split vertices, once fitted.
    assert_eq!(reads, 2 * frames - 1, "{reads} reads");
    // The result (a pivot and a rotation per piece per frame) and a few frames in flight; never the
    // sequence.
    let transforms = (frames * cubes * std::mem::size_of::<vat_bake::rigid::PieceTransform>()) as u64;
    let in_flight = 4 * rayon::current_num_threads().max(1) as u64 * tumble.frame_bytes();
    eprintln!(
        "sequence {:.1} MB, detection peak {:.1} MB (transforms {:.1} MB, frames in flight up to {:.1} MB)",
        sequence_bytes as f64 / 1e6,
        peak as f64 / 1e6,
        transforms as f64 / 1e6,
        in_flight as f64 / 1e6
    );
    assert!(peak < 2 * transforms + in_flight, "peak {peak} B");
    assert!(peak < sequence_bytes / 8, "peak {peak} B against a {sequence_bytes} B sequence");
}
