//! Reverse-Z hosts on both backends. A host whose pass uses reverse-Z depth (Bevy's convention: an
//! infinite far plane, depth cleared to 0, test `GreaterEqual`) gives vat `PassConventions::REVERSE_Z`
//! and a reverse-Z camera; vat's draws must then test and write depth the host's way:
//!
//! - `render()` of a reverse-Z renderer draws what a standard one draws (same crowd, same view);
//! - in a host pass, host depth nearer than the crowd hides it and host depth farther does not:
//!   the left half of the screen holds the near plane (the crowd is hidden there), the right half a
//!   plane at 7.6 m across the crowd's two rows (the front of the crowd draws, the back does not),
//!   and the reverse-Z frame matches the same host frame in standard depth;
//!
//! with CPU and GPU culling, wgpu and Vulkan (under the validation layer) agreeing.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // raw Vulkan calls of the host's own pass, each with a SAFETY comment

use ash::vk;
use vat_core::backend::pipeline::PassConventions;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdDraw, CrowdRenderer, Culling, RenderOptions};
use vat_tests::{begin_host_pass, humanoid_vat_in, save_image, wgpu_depth_fill};

const SIZE: [u32; 2] = [256, 160];
const EYE: [f32; 3] = [0.0, 2.0, 7.0];
const TARGET: [f32; 3] = [0.0, 0.9, 0.0];
const FOV: f32 = 0.9;
const NEAR: f32 = 0.1;
const FAR: f32 = 100.0;
/// Distance along the view axis of the host's plane in the right half, metres: between the
/// crowd's front row (about 7.1 m) and its back row (about 8.8 m).
const PLANE: f32 = 7.6;

/// A 4 x 2 block of humanoids across the middle of the screen (both halves covered).
fn crowd(bytes: &[u8]) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..8u32 {
        let p = [(i % 4) as f32 * 1.2 - 1.8, 0.0, -((i / 4) as f32) * 1.7];
        crowd.spawn_at_phase(p, 0.4 * i as f32, i % clips, 0.1 * i as f32);
    }
    crowd.advance(0.4);
    crowd
}

fn aspect() -> f32 {
    SIZE[0] as f32 / SIZE[1] as f32
}

/// The camera of `conventions`: the standard one with its far plane, or reverse-Z without one.
fn camera(conventions: PassConventions) -> Camera {
    if conventions.depth_compare.is_reverse_z() {
        Camera::look_at_reverse_z(EYE, TARGET, FOV, aspect(), NEAR)
    } else {
        Camera::look_at(EYE, TARGET, FOV, aspect(), NEAR, FAR)
    }
}

/// The host's depth values: the near plane (nearest of all) and the plane [`PLANE`] metres along
/// the view axis, in `conventions`' depth.
fn host_depths(conventions: PassConventions) -> (f32, f32) {
    if conventions.depth_compare.is_reverse_z() {
        (1.0, NEAR / PLANE)
    } else {
        (0.0, FAR * (PLANE - NEAR) / ((FAR - NEAR) * PLANE))
    }
}

fn options(culling: Culling) -> RenderOptions {
    RenderOptions { culling, ..RenderOptions::default() }
}

/// Pixels (of `a` and `b`, RGBA8) differing by more than 2 in a channel.
fn differing(a: &[u8], b: &[u8]) -> usize {
    a.chunks(4).zip(b.chunks(4)).filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 2)).count()
}

/// `render()` and a host frame of the crowd on wgpu, in `conventions`: `(render, host frame)`.
fn wgpu_frames(bytes: &[u8], culling: Culling, conventions: PassConventions) -> (Vec<u8>, Vec<u8>) {
    let config = vat_wgpu::RendererConfig { conventions, ..Default::default() };
    let mut r = vat_wgpu::Offscreen::new(SIZE, config).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let cam = camera(conventions);
    r.render_crowd(&asset, &mut gpu, &mut crowd, &cam, &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    let (near, plane) = host_depths(conventions);
    let fills = [wgpu_depth_fill(r.parts().0, near), wgpu_depth_fill(r.parts().0, plane)];
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        let report = renderer.prepare(encoder, &mut crowds, &cam, &options(culling), &[])?;
        let [r, g, b, a] = options(culling).clear_color;
        let clear = wgpu::Color { r, g, b, a };
        let mut pass = begin_host_pass(encoder, target, clear, conventions.clear_depth());
        let half = SIZE[0] / 2;
        pass.set_pipeline(&fills[0]);
        pass.set_scissor_rect(0, 0, half, SIZE[1]);
        pass.draw(0..3, 0..1);
        pass.set_pipeline(&fills[1]);
        pass.set_scissor_rect(half, 0, SIZE[0] - half, SIZE[1]);
        pass.draw(0..3, 0..1);
        pass.set_scissor_rect(0, 0, SIZE[0], SIZE[1]);
        let formats = renderer.pass_formats();
        assert_eq!(formats.conventions, conventions);
        renderer.draw(&mut pass, &crowds, formats);
        assert!(report.draws_main > 0, "the frame draws bodies");
        Ok(())
    })
    .unwrap();
    (reference, r.read_rgba8().unwrap())
}

/// The same two frames on Vulkan, under the validation layer (which must stay silent).
fn vulkan_frames(bytes: &[u8], culling: Culling, conventions: PassConventions) -> (Vec<u8>, Vec<u8>) {
    let config = vat_vulkan::RendererConfig { conventions, ..Default::default() };
    let mut r = vat_vulkan::Offscreen::new(SIZE, config).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let cam = camera(conventions);
    r.render_crowd(&asset, &mut gpu, &mut crowd, &cam, &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    let (near, plane) = host_depths(conventions);
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        let report = renderer.prepare(cb, &mut crowds, &cam, &options(culling), &[])?;
        let [r, g, b, a] = options(culling).clear_color.map(|c| c as f32);
        let colour = [vk::RenderingAttachmentInfo::default()
            .image_view(target.color)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [r, g, b, a] } })];
        let depth = vk::RenderingAttachmentInfo::default()
            .image_view(target.depth)
            .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: conventions.clear_depth(), stencil: 0 },
            });
        let area = vat_vulkan::full_rect(SIZE);
        let info = vk::RenderingInfo::default()
            .render_area(area)
            .layer_count(1)
            .color_attachments(&colour)
            .depth_attachment(&depth);
        let half = SIZE[0] / 2;
        let rect = |x: u32, width: u32| vk::ClearRect {
            rect: vk::Rect2D {
                offset: vk::Offset2D { x: x as i32, y: 0 },
                extent: vk::Extent2D { width, height: SIZE[1] },
            },
            base_array_layer: 0,
            layer_count: 1,
        };
        let fill = |value: f32| {
            [vk::ClearAttachment {
                aspect_mask: vk::ImageAspectFlags::DEPTH,
                color_attachment: 0,
                clear_value: vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: value, stencil: 0 },
                },
            }]
        };
        // SAFETY: `cb` is recording outside any rendering (record_host_frame's contract, and
        // `prepare` leaves none open); the views are the target's, in the layouts given.
        unsafe {
            ctx.device.cmd_begin_rendering(cb, &info);
            ctx.device.cmd_clear_attachments(cb, &fill(near), &[rect(0, half)]);
            ctx.device.cmd_clear_attachments(cb, &fill(plane), &[rect(half, SIZE[0] - half)]);
        }
        let formats = renderer.pass_formats();
        let drawn = renderer.draw(cb, &crowds, formats, area);
        // SAFETY: ends the rendering begun above.
        unsafe { ctx.device.cmd_end_rendering(cb) };
        drawn?;
        assert!(report.draws_main > 0, "the frame draws bodies");
        Ok(())
    })
    .unwrap();
    let embedded = r.read_rgba8().unwrap();
    let messages = r.parts().0.messages();
    drop(r);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "validation messages (printed above)");
    (reference, embedded)
}

/// Checks one backend's frames: reverse-Z against standard depth.
fn check(name: &str, standard: &(Vec<u8>, Vec<u8>), reverse: &(Vec<u8>, Vec<u8>)) {
    save_image(&format!("reverse-z-{name}-render"), SIZE, &reverse.0);
    save_image(&format!("reverse-z-{name}-host"), SIZE, &reverse.1);
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let background = standard.0[..4].to_vec();
    let px = |img: &[u8], p: usize| img[p * 4..p * 4 + 4].to_vec();
    let left = |p: usize| (p % SIZE[0] as usize) < SIZE[0] as usize / 2;
    let crowd_pixels =
        |img: &[u8], half: bool| (0..pixels).filter(|&p| left(p) == half && px(img, p) != background).count();
    // render(): the crowd as the standard renderer draws it. Tolerance: reverse-Z resolves a few
    // depth ties inside the bodies differently (0.5 % of the crowd's pixels).
    let covered = crowd_pixels(&standard.0, true) + crowd_pixels(&standard.0, false);
    assert!(covered > 1000, "{name}: the standard render draws the crowd ({covered} pixels)");
    let off = differing(&standard.0, &reverse.0);
    assert!(off * 200 <= covered, "{name}: render() in reverse-Z differs at {off} of {covered} crowd pixels");
    // The host frame: nothing in the left half (behind the host's near plane); in the right half
    // the front of the crowd and not its back.
    assert_eq!(crowd_pixels(&reverse.1, true), 0, "{name}: drawn in front of the host's near plane");
    let right_render = crowd_pixels(&reverse.0, false);
    let right_host = crowd_pixels(&reverse.1, false);
    assert!(
        right_host > 300 && right_host + 100 < right_render,
        "{name}: the host's plane at {PLANE} m hides the back of the crowd only: {right_host} of {right_render} pixels"
    );
    let off = differing(&standard.1, &reverse.1);
    assert!(
        off * 200 <= covered,
        "{name}: the reverse-Z host frame differs from the standard one at {off} pixels"
    );
}

#[test]
fn a_reverse_z_host_shares_its_depth_with_vat_on_both_backends() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    for culling in [Culling::Cpu, Culling::Gpu] {
        let w_standard = wgpu_frames(bytes, culling, PassConventions::STANDARD);
        let w_reverse = wgpu_frames(bytes, culling, PassConventions::REVERSE_Z);
        check(&format!("wgpu-{culling:?}"), &w_standard, &w_reverse);
        let v_standard = vulkan_frames(bytes, culling, PassConventions::STANDARD);
        let v_reverse = vulkan_frames(bytes, culling, PassConventions::REVERSE_Z);
        check(&format!("vulkan-{culling:?}"), &v_standard, &v_reverse);
        assert_eq!(
            differing(&w_reverse.1, &v_reverse.1),
            0,
            "{culling:?}: wgpu and Vulkan host frames differ"
        );
        assert_eq!(differing(&w_reverse.0, &v_reverse.0), 0, "{culling:?}: wgpu and Vulkan renders differ");
    }
}
