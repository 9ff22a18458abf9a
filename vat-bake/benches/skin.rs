//! CPU linear blend skinning throughput, one core: `cargo bench -p vat-bake --bench skin`.
//!
//! The procedural humanoid's merged vertex set (every body mesh, ~2.4k vertices, 4 influences),
//! skinned with [`skin_frames_into`] into reused frame-major arrays (positions + normals, no
//! tangents):
//!
//! - `skin/humanoid_48_frames_1_thread`: 48 frames of the walk clip (pose sampling, global matrices,
//!   skinning matrices and the kernel), rayon pinned to one thread.
//! - `skin/humanoid_256_poses_1_thread`: 256 different poses spread over every clip: one chunk of
//!   `vat bench`'s conventional baseline (which also moves the result to world space).
//!
//! Throughput is reported in skinned vertices per second.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_main};
use vat_bake::skin::{VertexSet, skin_frames_into};

fn skin(c: &mut Criterion) {
    let rig = vat_procgen::humanoid();
    let set = VertexSet::from_rig(&rig).expect("the humanoid's vertex set");
    let n = set.vertex_count();
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("rayon pool");
    let walk = rig.clips.iter().position(|c| c.name == "walk").unwrap_or(0);
    let clip = &rig.clips[walk];
    let frames: Vec<(usize, f32)> =
        (0..48).map(|k| (walk, clip.start + clip.duration() * k as f32 / 48.0)).collect();
    let poses: Vec<(usize, f32)> = (0..256)
        .map(|k| {
            let ci = k % rig.clips.len();
            let c = &rig.clips[ci];
            (ci, c.start + c.duration() * ((k * 37) % 256) as f32 / 256.0)
        })
        .collect();
    let mut group = c.benchmark_group("skin");
    group.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    for (name, samples) in [("humanoid_48_frames_1_thread", &frames), ("humanoid_256_poses_1_thread", &poses)]
    {
        let mut positions = vec![[0.0f32; 3]; samples.len() * n];
        let mut normals = vec![[0.0f32; 3]; samples.len() * n];
        group.throughput(Throughput::Elements((samples.len() * n) as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                one_thread
                    .install(|| skin_frames_into(&rig, &set, samples, &mut positions, &mut normals, None))
                    .expect("skinning")
            })
        });
    }
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::skin);
}
criterion_main!(harness::benches);
