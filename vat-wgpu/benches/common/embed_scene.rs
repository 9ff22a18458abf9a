//! The scene of both backends' `embed` benches (vat-wgpu's `benches/embed.rs` and vat-vulkan's,
//! which includes this file): instances, camera, medians. One copy, so the two measure the same.

use std::time::Duration;

use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};

/// Target size, pixels.
pub(crate) const SIZE: [u32; 2] = [64, 64];
/// Measured frames per variant.
pub(crate) const FRAMES: usize = 30;
/// Warm-up frames per variant (uploads and pipeline creation), not measured.
pub(crate) const WARM_UP: usize = 2;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

/// `rig` baked with default options, as `.vat` bytes.
pub(crate) fn bake(rig: &vat_bake::rig::Rig) -> Vec<u8> {
    let bake = vat_bake::prepare::prepare(rig, &Default::default()).expect("the asset bakes");
    bake.to_vat_bytes().expect("the bake serialises")
}

/// The procedural humanoid and soft-body banner, baked.
pub(crate) fn assets() -> [Vec<u8>; 2] {
    [bake(&vat_procgen::humanoid()), bake(&vat_procgen::cloth().expect("the banner bakes"))]
}

/// `n` static instances over a square of side `sqrt(n) * 2` m.
pub(crate) fn crowd(asset: &CrowdAsset, n: u32, seed: u64) -> Crowd {
    let side = (n as f32).sqrt() * 2.0;
    let mut rng = Rng(seed);
    let mut crowd = Crowd::new(asset.clone(), CrowdConfig::default());
    let clips = asset.clips.len() as u32;
    for i in 0..n {
        let p = [rng.next() * side, 0.0, rng.next() * side];
        crowd.spawn_at_phase(p, rng.next() * std::f32::consts::TAU, i % clips, rng.next());
    }
    crowd
}

/// The camera at the west edge of [`crowd`]'s square, 10 m up, looking across it (far plane 80 m).
pub(crate) fn camera(n: u32) -> Camera {
    let side = (n as f32).sqrt() * 2.0;
    let eye = [-5.0, 10.0, side * 0.5];
    let target = [side * 0.5, 0.0, side * 0.5];
    Camera::look_at(eye, target, std::f32::consts::FRAC_PI_2, SIZE[0] as f32 / SIZE[1] as f32, 0.5, 80.0)
}

/// The median of `times` in microseconds.
pub(crate) fn median_us(times: &mut [Duration]) -> f64 {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default().as_secs_f64() * 1e6
}

/// The variants, in the order they are interleaved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Variant {
    /// `Renderer::render`.
    Render,
    /// `prepare`, a host colour pass, `draw`.
    PrepareDraw,
    /// As `PrepareDraw` with one extra view drawn by `draw_depth` into a host depth pass first.
    PrepareDrawDepth,
}

/// Every variant.
pub(crate) const VARIANTS: [Variant; 3] = [Variant::Render, Variant::PrepareDraw, Variant::PrepareDrawDepth];

/// Runs `frame(variant, round)` for `FRAMES + WARM_UP` rounds of `variants` (interleaved) and
/// returns each variant's median of the measured rounds, microseconds.
pub(crate) fn interleaved(variants: &[Variant], mut frame: impl FnMut(Variant) -> Duration) -> Vec<f64> {
    let mut times = vec![Vec::new(); variants.len()];
    for round in 0..FRAMES + WARM_UP {
        for (k, &v) in variants.iter().enumerate() {
            let t = frame(v);
            if round >= WARM_UP {
                times[k].push(t);
            }
        }
    }
    times.iter_mut().map(|t| median_us(t)).collect()
}

/// Prints the embedding figures of `n` instances: `m` = medians of [`VARIANTS`].
pub(crate) fn print_embed(n: u32, m: &[f64]) {
    eprintln!(
        "embed/gpu/{n}: render {:.1} us, prepare+draw {:.1} us ({:.3}x), prepare+draw+draw_depth {:.1} us ({:.3}x)",
        m[0],
        m[1],
        m[1] / m[0],
        m[2],
        m[2] / m[0]
    );
}
