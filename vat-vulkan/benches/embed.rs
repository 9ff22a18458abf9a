//! The cost of embedding on Vulkan: CPU time of the host-driven calls against the all-in-one
//! `render`, and of two crowds of two assets, GPU culling, on lavapipe (or the first Vulkan 1.3
//! device): `cargo bench -p vat-vulkan --bench embed`. The twin of vat-wgpu's `benches/embed.rs`
//! (same scene, variants, targets and output); see there.
//!
//! Frames are recorded through `Offscreen::record_host_frame` (its command buffer, target and
//! submission; it waits for the previous frame before recording, untimed). The validation layer is
//! off. Timed: the calls from the first to the last, including the host's own `vkCmdBeginRendering` /
//! `vkCmdEndRendering` (which `render` records too).

// Raw Vulkan for the host's renderings; every block has a SAFETY comment.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use ash::vk;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::CrowdRenderer;
use vat_vulkan::{
    Context, CrowdDraw, Culling, GpuAsset, GpuCrowd, Offscreen, PassFormats, RenderOptions, RendererConfig,
    full_rect,
};

const SIZE: [u32; 2] = [64, 64];
const FRAMES: usize = 30;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

fn bake(rig: &vat_bake::rig::Rig) -> Vec<u8> {
    let bake = vat_bake::prepare::prepare(rig, &Default::default()).expect("the asset bakes");
    bake.to_vat_bytes().expect("the bake serialises")
}

/// `n` static instances over a square of side `sqrt(n) * 2` m.
fn crowd(asset: &CrowdAsset, n: u32, seed: u64) -> Crowd {
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

fn camera(n: u32) -> Camera {
    let side = (n as f32).sqrt() * 2.0;
    let eye = [-5.0, 10.0, side * 0.5];
    let target = [side * 0.5, 0.0, side * 0.5];
    Camera::look_at(eye, target, std::f32::consts::FRAC_PI_2, SIZE[0] as f32 / SIZE[1] as f32, 0.5, 80.0)
}

/// The median of `times` in microseconds.
fn median_us(times: &mut [Duration]) -> f64 {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default().as_secs_f64() * 1e6
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Render,
    PrepareDraw,
    PrepareDrawDepth,
}

/// A rendering over `depth` (cleared) and, when given, `color` (cleared), begun in `cb`.
///
/// # Safety
/// `cb` is recording outside any rendering; the views are in the attachment layouts.
unsafe fn begin(ctx: &Context, cb: vk::CommandBuffer, color: Option<vk::ImageView>, depth: vk::ImageView) {
    let colour: Vec<vk::RenderingAttachmentInfo<'_>> = color
        .into_iter()
        .map(|view| {
            vk::RenderingAttachmentInfo::default()
                .image_view(view)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
        })
        .collect();
    let depth = vk::RenderingAttachmentInfo::default()
        .image_view(depth)
        .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .clear_value(vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } });
    let info = vk::RenderingInfo::default()
        .render_area(full_rect(SIZE))
        .layer_count(1)
        .color_attachments(&colour)
        .depth_attachment(&depth);
    // SAFETY: the caller's contract.
    unsafe { ctx.device.cmd_begin_rendering(cb, &info) };
}

/// Records one frame of `variant` (timed) and submits it.
fn frame(
    offscreen: &mut Offscreen,
    variant: Variant,
    crowds: &mut [CrowdDraw<'_>],
    camera: &Camera,
) -> Duration {
    let options = RenderOptions { culling: Culling::Gpu, ..RenderOptions::default() };
    offscreen.wait().expect("the previous frame finishes");
    offscreen
        .record_host_frame(|ctx, renderer, cb, target| {
            let start = Instant::now();
            let area = full_rect(SIZE);
            match variant {
                Variant::Render => {
                    renderer.render(cb, crowds, camera, target, &options)?;
                }
                Variant::PrepareDraw | Variant::PrepareDrawDepth => {
                    let with_view = variant == Variant::PrepareDrawDepth;
                    let views = if with_view { vec![camera.view_proj] } else { Vec::new() };
                    renderer.prepare(cb, crowds, camera, &options, &views)?;
                    if with_view {
                        // The view's depth into the target's depth image, cleared again by the
                        // colour rendering after a barrier (write after write).
                        // SAFETY: recording outside rendering (`prepare` leaves none open); the
                        // target's depth view is in DEPTH_ATTACHMENT_OPTIMAL.
                        unsafe { begin(ctx, cb, None, target.depth) };
                        let formats = PassFormats { color: None, ..renderer.pass_formats() };
                        let drawn = renderer.draw_depth(cb, crowds, 0, formats, area);
                        let tests = vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
                            | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
                        let barrier = [vk::MemoryBarrier::default()
                            .src_access_mask(vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE)
                            .dst_access_mask(
                                vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                                    | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                            )];
                        // SAFETY: ends the rendering begun above; the barrier is outside rendering.
                        unsafe {
                            ctx.device.cmd_end_rendering(cb);
                            ctx.device.cmd_pipeline_barrier(
                                cb,
                                tests,
                                tests,
                                vk::DependencyFlags::empty(),
                                &barrier,
                                &[],
                                &[],
                            );
                        }
                        drawn?;
                    }
                    // SAFETY: as above; the colour view is in COLOR_ATTACHMENT_OPTIMAL.
                    unsafe { begin(ctx, cb, Some(target.color), target.depth) };
                    let drawn = renderer.draw(cb, crowds, renderer.pass_formats(), area);
                    // SAFETY: ends the rendering begun above.
                    unsafe { ctx.device.cmd_end_rendering(cb) };
                    drawn?;
                }
            }
            Ok(start.elapsed())
        })
        .expect("a frame")
}

/// Medians of `variants` over interleaved frames of `crowds`, microseconds.
fn interleaved(
    offscreen: &mut Offscreen,
    assets: &[&GpuAsset],
    gpu: &mut [GpuCrowd],
    crowds: &mut [Crowd],
    camera: &Camera,
    variants: &[Variant],
) -> Vec<f64> {
    let mut times = vec![Vec::new(); variants.len()];
    // Two frames each first: uploads and pipeline creation are not what is measured.
    for round in 0..FRAMES + 2 {
        for (k, &v) in variants.iter().enumerate() {
            let mut draws: Vec<CrowdDraw<'_>> = assets
                .iter()
                .zip(gpu.iter_mut())
                .zip(crowds.iter_mut())
                .map(|((&asset, gpu), crowd)| CrowdDraw { asset, gpu, crowd })
                .collect();
            let t = frame(offscreen, v, &mut draws, camera);
            if round >= 2 {
                times[k].push(t);
            }
        }
    }
    offscreen.wait().expect("the last frame finishes");
    times.iter_mut().map(|t| median_us(t)).collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` / test discovery
    }
    let humanoid = bake(&vat_bake::procgen::humanoid());
    let cloth = bake(&vat_bake::procgen::cloth().expect("the banner bakes"));
    let (humanoid, cloth) = (Asset::parse(&humanoid).expect("parses"), Asset::parse(&cloth).expect("parses"));
    let ctx = std::rc::Rc::new(
        Context::headless_with_validation(false).expect("a Vulkan device (cargo xtask deps)"),
    );
    eprintln!("device: {}; {FRAMES} frames per variant, interleaved", ctx.device_name());
    let config = RendererConfig { shadow_map_size: 512, ..RendererConfig::default() };
    let mut offscreen = Offscreen::with_context(&ctx, SIZE, config).expect("offscreen");
    let gpu_humanoid = offscreen.upload(&humanoid).expect("upload");
    let gpu_cloth = offscreen.upload(&cloth).expect("upload");
    let humanoid_asset = CrowdAsset::from_manifest(humanoid.manifest()).expect("crowd asset");
    let cloth_asset = CrowdAsset::from_manifest(cloth.manifest()).expect("crowd asset");

    let all = [Variant::Render, Variant::PrepareDraw, Variant::PrepareDrawDepth];
    for n in [1_000, 100_000, 1_000_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, u64::from(n))];
        let mut gpu = vec![offscreen.create_crowd(&crowds[0]).expect("crowd")];
        let m = interleaved(&mut offscreen, &[&gpu_humanoid], &mut gpu, &mut crowds, &camera(n), &all);
        eprintln!(
            "embed/gpu/{n}: render {:.1} us, prepare+draw {:.1} us ({:.3}x), prepare+draw+draw_depth {:.1} us \
             ({:.3}x)",
            m[0],
            m[1],
            m[1] / m[0],
            m[2],
            m[2] / m[0]
        );
    }
    let mut two = Vec::new();
    for n in [1_000, 500_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, 7), crowd(&cloth_asset, n, 8)];
        let mut gpu: Vec<GpuCrowd> =
            crowds.iter().map(|c| offscreen.create_crowd(c).expect("crowd")).collect();
        let m = interleaved(
            &mut offscreen,
            &[&gpu_humanoid, &gpu_cloth],
            &mut gpu,
            &mut crowds,
            &camera(n),
            &all[..1],
        );
        eprintln!("two_assets/gpu/{n}+{n}: render {:.1} us", m[0]);
        two.push(m[0]);
    }
    eprintln!("two_assets/gpu: 500k+500k / 1k+1k = {:.3}x", two[1] / two[0]);
}
