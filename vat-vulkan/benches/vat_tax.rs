//! The VAT tax: GPU time of a VAT crowd against the same meshes drawn as plain static instances
//! (`RenderMode::Rest`: the same triangles, LODs, culling, shading and shadow pass, no animation
//! read), per vertex format, measured in one run with GPU timestamps (`Offscreen::last_gpu_time_ms`,
//! top to bottom of the frame's command buffer) on the first Vulkan 1.3 device (lavapipe here; a
//! real GPU when one is present): `cargo bench -p vat-vulkan --bench vat_tax`.
//!
//! Goal (issue 13): VAT / static <= 1.3x for `packed64`.
//!
//! Scene: the procedural humanoid baked in each format (default options otherwise: 5 LODs, the cap
//! attachment), 20,000 instances on a 100 m square, the camera 25 m above one corner looking across
//! it (far plane 150 m), 320x240 target, 1024² shadow map, GPU culling. The VAT and rest frames are
//! interleaved (V R V R ...) so that the machine's noise falls on both alike; `FRAMES` of each after
//! two warm-up frames; medians printed with their ratio.

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdRenderer, Culling, RenderMode, RenderOptions};
use vat_vulkan::{Context, Offscreen, RendererConfig};

const SIZE: [u32; 2] = [320, 240];
const FRAMES: usize = 15;
const INSTANCES: u32 = 20_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` / test discovery
    }
    let ctx = std::rc::Rc::new(
        Context::headless_with_validation(false).expect("a Vulkan device (cargo xtask deps)"),
    );
    let config = RendererConfig { shadow_map_size: 1024, ..RendererConfig::default() };
    let mut offscreen = Offscreen::with_context(&ctx, SIZE, config).expect("offscreen");
    if !offscreen.gpu_timing() {
        eprintln!("{}: no timestamp queries on this device; nothing to measure", ctx.device_name());
        return;
    }
    eprintln!("device: {}; {INSTANCES} instances, {FRAMES} frames per mode, interleaved", ctx.device_name());
    let camera = Camera::look_at(
        [-5.0, 25.0, -5.0],
        [50.0, 0.0, 50.0],
        1.0,
        SIZE[0] as f32 / SIZE[1] as f32,
        0.5,
        150.0,
    );
    for format in [
        VertexFormat::Packed64,
        VertexFormat::Unorm16,
        VertexFormat::F16,
        VertexFormat::F32,
        VertexFormat::Unorm8,
        VertexFormat::Split8,
    ] {
        let options = vat_bake::prepare::BakeOptions { format, ..Default::default() };
        let bytes = vat_bake::prepare::prepare(&vat_procgen::humanoid(), &options)
            .expect("the humanoid bakes")
            .to_vat_bytes()
            .expect("the bake serialises");
        let asset = Asset::parse(&bytes).expect("parses");
        let gpu_asset = offscreen.upload(&asset).expect("upload");
        let mut crowd = Crowd::new(
            CrowdAsset::from_manifest(asset.manifest()).expect("crowd asset"),
            CrowdConfig::default(),
        );
        let mut rng = Rng(5);
        let clips = asset.manifest().clips.len() as u32;
        for i in 0..INSTANCES {
            crowd.spawn_at_phase(
                [rng.next() * 100.0, 0.0, rng.next() * 100.0],
                rng.next() * 6.3,
                i % clips,
                rng.next(),
            );
        }
        let mut gpu_crowd = offscreen.create_crowd(&crowd).expect("crowd");
        let mut times = [Vec::new(), Vec::new()];
        let mut drawn = 0;
        for round in 0..FRAMES + 2 {
            for (k, mode) in [RenderMode::Vat, RenderMode::Rest].into_iter().enumerate() {
                let options = RenderOptions { mode, culling: Culling::Gpu, ..RenderOptions::default() };
                let report = offscreen
                    .render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)
                    .expect("a frame");
                drawn = report.draws_main;
                let ms = offscreen.last_gpu_time_ms().expect("a timed frame");
                if round >= 2 {
                    times[k].push(ms);
                }
            }
        }
        let (vat, rest) = (median(&mut times[0]), median(&mut times[1]));
        eprintln!(
            "vat_tax/{format:?}: VAT {vat:.2} ms, static (rest pose) {rest:.2} ms, VAT / static = {:.3}x ({drawn} draws)",
            vat / rest
        );
    }
}
