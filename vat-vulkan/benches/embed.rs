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
use vat_core::crowd::{Camera, CrowdAsset};
use vat_core::render::CrowdRenderer;
use vat_vulkan::{
    Context, CrowdDraw, Culling, GpuAsset, GpuCrowd, Offscreen, PassFormats, RenderOptions, RendererConfig,
    full_rect,
};

#[path = "../../vat-wgpu/benches/common/embed_scene.rs"]
mod scene;
use scene::{SIZE, VARIANTS, Variant, camera, crowd, interleaved, print_embed};

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

/// Medians of `variants` over interleaved frames of these crowds, microseconds.
fn medians(
    offscreen: &mut Offscreen,
    assets: &[&GpuAsset],
    gpu: &mut [GpuCrowd],
    crowds: &mut [vat_core::crowd::Crowd],
    camera: &Camera,
    variants: &[Variant],
) -> Vec<f64> {
    let m = interleaved(variants, |v| {
        let mut draws: Vec<CrowdDraw<'_>> = assets
            .iter()
            .zip(gpu.iter_mut())
            .zip(crowds.iter_mut())
            .map(|((&asset, gpu), crowd)| CrowdDraw { asset, gpu, crowd })
            .collect();
        frame(offscreen, v, &mut draws, camera)
    });
    offscreen.wait().expect("the last frame finishes");
    m
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` / test discovery
    }
    let [humanoid, cloth] = scene::assets();
    let (humanoid, cloth) = (Asset::parse(&humanoid).expect("parses"), Asset::parse(&cloth).expect("parses"));
    let ctx = std::rc::Rc::new(
        Context::headless_with_validation(false).expect("a Vulkan device (cargo xtask deps)"),
    );
    eprintln!("device: {}; {} frames per variant, interleaved", ctx.device_name(), scene::FRAMES);
    let config = RendererConfig { shadow_map_size: 512, ..RendererConfig::default() };
    let mut offscreen = Offscreen::with_context(&ctx, SIZE, config).expect("offscreen");
    let gpu_humanoid = offscreen.upload(&humanoid).expect("upload");
    let gpu_cloth = offscreen.upload(&cloth).expect("upload");
    let humanoid_asset = CrowdAsset::from_manifest(humanoid.manifest()).expect("crowd asset");
    let cloth_asset = CrowdAsset::from_manifest(cloth.manifest()).expect("crowd asset");

    for n in [1_000, 100_000, 1_000_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, u64::from(n))];
        let mut gpu = vec![offscreen.create_crowd(&crowds[0]).expect("crowd")];
        print_embed(
            n,
            &medians(&mut offscreen, &[&gpu_humanoid], &mut gpu, &mut crowds, &camera(n), &VARIANTS),
        );
    }
    let mut two = Vec::new();
    for n in [1_000, 500_000] {
        let mut crowds = vec![crowd(&humanoid_asset, n, 7), crowd(&cloth_asset, n, 8)];
        let mut gpu: Vec<GpuCrowd> =
            crowds.iter().map(|c| offscreen.create_crowd(c).expect("crowd")).collect();
        let m = medians(
            &mut offscreen,
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
