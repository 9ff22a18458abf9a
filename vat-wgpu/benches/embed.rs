//! The cost of embedding: CPU time of the host-driven calls against the all-in-one `render`, and of
//! two crowds of two assets, GPU culling, on the headless device (lavapipe where there is one):
//! `cargo bench -p vat-wgpu --bench embed`. The Vulkan twin is vat-vulkan's `benches/embed.rs`.
//!
//! Targets (issue 13): `prepare` + `draw` (+ `draw_depth`) within 5 % of `render` at 1k, 100k and 1M
//! instances; two assets x 500k instances cost no more per frame than two assets x 1k (flat, <= 0.1
//! ms plus the dirty uploads; nothing moves here, so there are none).
//!
//! Scene: as `benches/render.rs` (the baked humanoid, N static instances over a square of side
//! `sqrt(N) * 2` m, the camera at its west edge looking across it, 64x64 target, 512² shadow map,
//! default options, shadows on). The second asset is the procedural soft-body banner, N instances
//! over the same square.
//!
//! Timed (CPU, per frame): the calls a frame records, from the first to the last; untimed: the
//! encoder's creation, `finish`, `submit` and the wait for the GPU (so no frame overlaps the next).
//! The variants are interleaved frame by frame (A B C A B C ...) so that the machine's noise falls
//! on all alike; each prints its median of `FRAMES` frames and its ratio to `render`'s.
//!
//! - `render`: `Renderer::render` (prepare, its own colour pass, draw);
//! - `prepare+draw`: `prepare`, a colour pass the host begins over the same target, `draw`;
//! - `prepare+draw+draw_depth`: as above with one extra view (`prepare`'s `views`), plus a depth pass
//!   the host begins over a depth target of its own, with `draw_depth` of that view, before the
//!   colour pass (more work than `render`: the view's draws; reported for what it costs).

use std::time::{Duration, Instant};

use vat_core::container::Asset;
use vat_core::crowd::{Camera, CrowdAsset};
use vat_wgpu::{
    CrowdDraw, Culling, GpuAsset, GpuCrowd, HeadlessTarget, PassFormats, RenderOptions, Renderer,
    RendererConfig, headless_device,
};

#[path = "common/embed_scene.rs"]
mod scene;
use scene::{SIZE, VARIANTS, Variant, camera, crowd, interleaved, print_embed};

struct Bench {
    device: wgpu::Device,
    queue: wgpu::Queue,
    renderer: Renderer,
    target: HeadlessTarget,
    /// The host's own depth target of the extra view.
    view_depth: wgpu::TextureView,
}

impl Bench {
    /// Records one frame of `variant` (timed), submits it and waits (untimed).
    fn frame(&mut self, variant: Variant, crowds: &mut [CrowdDraw<'_>], camera: &Camera) -> Duration {
        let options = RenderOptions { culling: Culling::Gpu, ..RenderOptions::default() };
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let target = self.target.target();
        let start = Instant::now();
        match variant {
            Variant::Render => {
                self.renderer.render(&mut encoder, crowds, camera, target, &options).expect("render");
            }
            Variant::PrepareDraw | Variant::PrepareDrawDepth => {
                let with_view = variant == Variant::PrepareDrawDepth;
                let views = if with_view { vec![camera.view_proj] } else { Vec::new() };
                self.renderer.prepare(&mut encoder, crowds, camera, &options, &views).expect("prepare");
                if with_view {
                    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                        label: Some("host depth"),
                        color_attachments: &[],
                        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                            view: &self.view_depth,
                            depth_ops: Some(wgpu::Operations {
                                load: wgpu::LoadOp::Clear(1.0),
                                store: wgpu::StoreOp::Store,
                            }),
                            stencil_ops: None,
                        }),
                        timestamp_writes: None,
                        occlusion_query_set: None,
                        multiview_mask: None,
                    });
                    let formats = PassFormats { color: None, ..self.renderer.pass_formats() };
                    self.renderer.draw_depth(&mut pass, crowds, 0, formats);
                }
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("host colour"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: target.color,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: target.depth,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(1.0),
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                });
                let formats = self.renderer.pass_formats();
                self.renderer.draw(&mut pass, crowds, formats);
            }
        }
        let recorded = start.elapsed();
        self.queue.submit([encoder.finish()]);
        self.device.poll(wgpu::PollType::wait_indefinitely()).expect("the GPU finishes the frame");
        recorded
    }
}

/// Medians of `variants` over interleaved frames of these crowds, microseconds.
fn medians(
    bench: &mut Bench,
    assets: &[&GpuAsset],
    gpu: &mut [GpuCrowd],
    crowds: &mut [vat_core::crowd::Crowd],
    camera: &Camera,
    variants: &[Variant],
) -> Vec<f64> {
    interleaved(variants, |v| {
        let mut draws: Vec<CrowdDraw<'_>> = assets
            .iter()
            .zip(gpu.iter_mut())
            .zip(crowds.iter_mut())
            .map(|((&asset, gpu), crowd)| CrowdDraw { asset, gpu, crowd })
            .collect();
        bench.frame(v, &mut draws, camera)
    })
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` / test discovery
    }
    let [humanoid, cloth] = scene::assets();
    let (humanoid, cloth) = (Asset::parse(&humanoid).expect("parses"), Asset::parse(&cloth).expect("parses"));
    let (device, queue, info) = headless_device().expect("a headless device (cargo xtask deps)");
    eprintln!(
        "adapter: {} ({:?}); {} frames per variant, interleaved",
        info.name,
        info.device_type,
        scene::FRAMES
    );
    let config = RendererConfig { shadow_map_size: 512, ..RendererConfig::default() };
    let mut renderer = Renderer::new(&device, &queue, config).expect("renderer");
    let gpu_humanoid = renderer.upload(&humanoid).expect("upload");
    let gpu_cloth = renderer.upload(&cloth).expect("upload");
    let target = HeadlessTarget::new(&device, SIZE, config).expect("target");
    let view_depth = device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("host view depth"),
            size: wgpu::Extent3d { width: SIZE[0], height: SIZE[1], depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: config.depth_format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        })
        .create_view(&Default::default());
    let mut bench = Bench { device, queue, renderer, target, view_depth };
    let humanoid_asset = CrowdAsset::from_manifest(humanoid.manifest()).expect("crowd asset");
    let cloth_asset = CrowdAsset::from_manifest(cloth.manifest()).expect("crowd asset");

    for n in [1_000, 100_000, 1_000_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, u64::from(n))];
        let mut gpu = vec![bench.renderer.create_crowd(&crowds[0]).expect("crowd")];
        print_embed(n, &medians(&mut bench, &[&gpu_humanoid], &mut gpu, &mut crowds, &camera(n), &VARIANTS));
    }
    let mut two = Vec::new();
    for n in [1_000, 500_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, 7), crowd(&cloth_asset, n, 8)];
        let mut gpu: Vec<GpuCrowd> =
            crowds.iter().map(|c| bench.renderer.create_crowd(c).expect("crowd")).collect();
        let m = medians(
            &mut bench,
            &[&gpu_humanoid, &gpu_cloth],
            &mut gpu,
            &mut crowds,
            &camera(n),
            &VARIANTS[..1],
        );
        eprintln!("two_assets/gpu/{n}+{n}: render {:.1} us", m[0]);
        two.push(m[0]);
    }
    eprintln!("two_assets/gpu: 500k+500k / 1k+1k = {:.3}x", two[1] / two[0]);
}
