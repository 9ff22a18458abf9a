//! Embeddable drawing on both backends: the host records `Renderer::prepare` into its encoder /
//! command buffer, begins its own colour pass (its clear colour, its depth: the left half of the
//! screen pre-filled nearer than anything vat draws), draws its own content, then `Renderer::draw`.
//! The crowd must be hidden where the host's depth is nearer, drawn exactly as `render` draws it
//! elsewhere, the host's clear colour kept (vat clears nothing), and wgpu and Vulkan must agree.
//! `Renderer::draw_depth` of an extra view (the crowd shifted on screen, at depth 0) into a host
//! depth pass hides the colour draws where they overlap it; a view reaching past the camera's
//! frustum draws the instances only it sees, GPU-culled (each view culled for itself) as
//! CPU-culled. A rigid-mode asset (shattering walls) passes the host-pass checks too.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // raw Vulkan calls of the host's own pass, each with a SAFETY comment

use ash::vk;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdDraw, CrowdRenderer, Culling, RenderOptions};
use vat_tests::{begin_host_pass, humanoid_vat_in, save_image, wgpu_depth_fill};

const SIZE: [u32; 2] = [256, 160];
/// The host's clear colour (linear), unlike vat's default.
const HOST_CLEAR: [f64; 4] = [0.8, 0.1, 0.5, 1.0];

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

fn camera() -> Camera {
    Camera::look_at([0.0, 2.0, 7.0], [0.0, 0.9, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0)
}

fn options(culling: Culling) -> RenderOptions {
    RenderOptions { culling, clear_color: HOST_CLEAR, ..RenderOptions::default() }
}

/// Whether pixel `p` (index) lies in the left half, where the host's depth is nearer.
fn in_left_half(p: usize) -> bool {
    (p % SIZE[0] as usize) < SIZE[0] as usize / 2
}

/// Checks the embedded frame against `render`'s.
fn check(name: &str, reference: &[u8], embedded: &[u8]) {
    save_image(&format!("embed-{name}-render"), SIZE, reference);
    save_image(&format!("embed-{name}-host"), SIZE, embedded);
    let background = reference[..4].to_vec();
    let px = |img: &[u8], p: usize| img[p * 4..p * 4 + 4].to_vec();
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let covered = |half: bool| {
        (0..pixels).filter(|&p| in_left_half(p) == half && px(reference, p) != background).count()
    };
    let (left, right) = (covered(true), covered(false));
    assert!(left > 300 && right > 300, "{name}: render() draws the crowd in both halves: {left}, {right}");
    let host_colour_lost = (0..pixels).filter(|&p| in_left_half(p) && px(embedded, p) != background).count();
    assert_eq!(host_colour_lost, 0, "{name}: pixels of the host's nearer half drawn over or cleared by vat");
    let differing = (0..pixels).filter(|&p| !in_left_half(p) && px(embedded, p) != px(reference, p)).count();
    assert_eq!(differing, 0, "{name}: pixels of the right half unlike render()'s");
}

/// `render()` and a host frame of the same crowd on wgpu: `(reference, embedded)`.
fn wgpu_frames(bytes: &[u8], culling: Culling) -> (Vec<u8>, Vec<u8>) {
    let mut r = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &camera(), &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    let fill = wgpu_depth_fill(r.parts().0, 0.0);
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        let report = renderer.prepare(encoder, &mut crowds, &camera(), &options(culling), &[])?;
        let [r, g, b, a] = HOST_CLEAR;
        let mut pass = begin_host_pass(encoder, target, wgpu::Color { r, g, b, a }, 1.0);
        // The host's own content first: depth 0 over the left half.
        pass.set_pipeline(&fill);
        pass.set_scissor_rect(0, 0, SIZE[0] / 2, SIZE[1]);
        pass.draw(0..3, 0..1);
        pass.set_scissor_rect(0, 0, SIZE[0], SIZE[1]);
        let formats = renderer.pass_formats();
        renderer.draw(&mut pass, &crowds, formats);
        assert!(report.draws_main > 0, "the frame draws bodies");
        Ok(())
    })
    .unwrap();
    let embedded = r.read_rgba8().unwrap();
    (reference, embedded)
}

/// `render()` and a host frame of the same crowd on Vulkan, under the validation layer (which must
/// stay silent): `(reference, embedded)`.
fn vulkan_frames(bytes: &[u8], culling: Culling) -> (Vec<u8>, Vec<u8>) {
    let mut r = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &camera(), &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        let report = renderer.prepare(cb, &mut crowds, &camera(), &options(culling), &[])?;
        let [r, g, b, a] = HOST_CLEAR.map(|c| c as f32);
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
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            });
        let area = vat_vulkan::full_rect(SIZE);
        let info = vk::RenderingInfo::default()
            .render_area(area)
            .layer_count(1)
            .color_attachments(&colour)
            .depth_attachment(&depth);
        let half = vk::ClearRect {
            rect: vk::Rect2D {
                offset: vk::Offset2D { x: 0, y: 0 },
                extent: vk::Extent2D { width: SIZE[0] / 2, height: SIZE[1] },
            },
            base_array_layer: 0,
            layer_count: 1,
        };
        let near = [vk::ClearAttachment {
            aspect_mask: vk::ImageAspectFlags::DEPTH,
            color_attachment: 0,
            clear_value: vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 0.0, stencil: 0 },
            },
        }];
        // SAFETY: `cb` is recording outside any rendering (record_host_frame's contract, and
        // `prepare` leaves none open); the views are the target's, in the layouts given.
        unsafe {
            ctx.device.cmd_begin_rendering(cb, &info);
            // The host's own content first: depth 0 over the left half.
            ctx.device.cmd_clear_attachments(cb, &near, &[half]);
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

/// The host-pass checks for one asset, both culling paths, both backends.
fn host_pass_checks(label: &str, bytes: &[u8]) {
    for culling in [Culling::Cpu, Culling::Gpu] {
        let (w_ref, w_host) = wgpu_frames(bytes, culling);
        check(&format!("{label}wgpu-{culling:?}"), &w_ref, &w_host);
        let (v_ref, v_host) = vulkan_frames(bytes, culling);
        check(&format!("{label}vulkan-{culling:?}"), &v_ref, &v_host);
        let differing = v_host.iter().zip(&w_host).filter(|(a, b)| a.abs_diff(**b) > 2).count();
        assert_eq!(differing, 0, "{label}{culling:?}: the host frames of wgpu and Vulkan differ");
    }
}

#[test]
fn a_host_pass_keeps_its_clear_colour_and_depth_on_both_backends() {
    host_pass_checks("", humanoid_vat_in(VertexFormat::Packed64));
}

/// The same for a rigid-mode asset (shattering walls): the embeddable API draws it like the crowd.
#[test]
fn a_rigid_asset_draws_into_a_host_pass_like_render_on_both_backends() {
    host_pass_checks("rigid-", vat_tests::rigid_vat());
}

#[test]
#[should_panic(expected = "pass the same crowds")]
fn drawing_other_crowds_than_prepared_panics() {
    let mut r = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let (mut a, mut b) = (crowd(bytes), crowd(bytes));
    let (mut gpu_a, mut gpu_b) = (r.create_crowd(&a).unwrap(), r.create_crowd(&b).unwrap());
    let _ = r.record_host_frame(|_, renderer, encoder, target| {
        let mut prepared = [CrowdDraw { asset: &asset, gpu: &mut gpu_a, crowd: &mut a }];
        renderer.prepare(encoder, &mut prepared, &camera(), &RenderOptions::default(), &[])?;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("host pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: target.depth,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let other = [CrowdDraw { asset: &asset, gpu: &mut gpu_b, crowd: &mut b }];
        let formats = renderer.pass_formats();
        renderer.draw(&mut pass, &other, formats);
        Ok(())
    });
}

/// Pixels the extra view's occluder shifts the crowd's silhouette right by.
const SHIFT: usize = 32;

/// The camera's view-projection moved [`SHIFT`] pixels right on screen and flattened to depth 0:
/// drawn by `draw_depth` into the host's depth, it hides the crowd wherever the crowd overlaps its
/// own shifted silhouette.
fn occluder_view() -> [[f32; 4]; 4] {
    let mut m = camera().view_proj;
    let ndc_shift = 2.0 * SHIFT as f32 / SIZE[0] as f32;
    for column in &mut m {
        column[0] += ndc_shift * column[3];
        column[2] = 0.0;
    }
    m
}

/// Checks a frame whose host depth came from `draw_depth` of [`occluder_view`] against `render`'s.
fn check_occluded(name: &str, reference: &[u8], embedded: &[u8]) {
    save_image(&format!("embed-depth-{name}-host"), SIZE, embedded);
    let background = reference[..4].to_vec();
    let px = |img: &[u8], p: usize| img[p * 4..p * 4 + 4].to_vec();
    let covered = |p: usize| px(reference, p) != background;
    let width = SIZE[0] as usize;
    let occluded = |p: usize| p % width >= SHIFT && covered(p - SHIFT);
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let hidden = (0..pixels).filter(|&p| covered(p) && occluded(p)).count();
    let shown = (0..pixels).filter(|&p| covered(p) && !occluded(p)).count();
    assert!(
        hidden > 300 && shown > 300,
        "{name}: the scene hides part of the crowd: {hidden} hidden, {shown} shown"
    );
    let wrong = (0..pixels)
        .filter(|&p| {
            let expected = if occluded(p) { background.clone() } else { px(reference, p) };
            px(embedded, p) != expected
        })
        .count();
    // Silhouette edges may differ by a pixel after the shift (rounding of the shifted positions).
    assert!(
        wrong <= hidden / 20,
        "{name}: {wrong} pixels unlike the crowd behind its shifted silhouette ({hidden} hidden)"
    );
}

/// A wgpu host frame of the crowd `make` builds: a depth-only pass with `draw_depth` of the extra
/// `view`, then a colour pass loading that depth with `draw`. `(reference, embedded)`.
fn wgpu_depth_view_frames(
    culling: Culling,
    make: fn(&[u8]) -> Crowd,
    view: [[f32; 4]; 4],
) -> (Vec<u8>, Vec<u8>) {
    let mut r = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = make(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &camera(), &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(encoder, &mut crowds, &camera(), &options(culling), &[view])?;
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("host depth pass"),
                color_attachments: &[],
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
            let depth_only = vat_wgpu::PassFormats { color: None, ..renderer.pass_formats() };
            renderer.draw_depth(&mut pass, &crowds, 0, depth_only);
        }
        let [r, g, b, a] = HOST_CLEAR;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("host colour pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: target.depth,
                depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Load, store: wgpu::StoreOp::Store }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let formats = renderer.pass_formats();
        renderer.draw(&mut pass, &crowds, formats);
        Ok(())
    })
    .unwrap();
    let embedded = r.read_rgba8().unwrap();
    (reference, embedded)
}

/// The Vulkan twin of [`wgpu_depth_view_frames`], under the validation layer.
fn vulkan_depth_view_frames(
    culling: Culling,
    make: fn(&[u8]) -> Crowd,
    view: [[f32; 4]; 4],
) -> (Vec<u8>, Vec<u8>) {
    let mut r = vat_vulkan::Offscreen::new(SIZE, Default::default()).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = make(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &camera(), &options(culling)).unwrap();
    let reference = r.read_rgba8().unwrap();
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(cb, &mut crowds, &camera(), &options(culling), &[view])?;
        let area = vat_vulkan::full_rect(SIZE);
        let depth = |load| {
            vk::RenderingAttachmentInfo::default()
                .image_view(target.depth)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(load)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                })
        };
        let depth_clear = depth(vk::AttachmentLoadOp::CLEAR);
        let depth_pass =
            vk::RenderingInfo::default().render_area(area).layer_count(1).depth_attachment(&depth_clear);
        // SAFETY: recording outside any rendering; the view is the target's, in the layout given.
        unsafe { ctx.device.cmd_begin_rendering(cb, &depth_pass) };
        let depth_only = vat_vulkan::PassFormats { color: None, ..renderer.pass_formats() };
        let drawn = renderer.draw_depth(cb, &crowds, 0, depth_only, area);
        let tests =
            vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE)
            .dst_access_mask(
                vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                    | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
            )];
        // SAFETY: ends the rendering begun above, then orders its depth writes before the next
        // rendering's depth tests (outside any rendering).
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
        let [r, g, b, a] = HOST_CLEAR.map(|c| c as f32);
        let colour = [vk::RenderingAttachmentInfo::default()
            .image_view(target.color)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [r, g, b, a] } })];
        let depth_load = depth(vk::AttachmentLoadOp::LOAD);
        let colour_pass = vk::RenderingInfo::default()
            .render_area(area)
            .layer_count(1)
            .color_attachments(&colour)
            .depth_attachment(&depth_load);
        // SAFETY: recording outside any rendering; the views are the target's, in the layouts given.
        unsafe { ctx.device.cmd_begin_rendering(cb, &colour_pass) };
        let formats = renderer.pass_formats();
        let drawn = renderer.draw(cb, &crowds, formats, area);
        // SAFETY: ends the rendering begun above.
        unsafe { ctx.device.cmd_end_rendering(cb) };
        drawn
    })
    .unwrap();
    let embedded = r.read_rgba8().unwrap();
    let messages = r.parts().0.messages();
    drop(r);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "validation messages (printed above)");
    (reference, embedded)
}

#[test]
fn draw_depth_of_an_extra_view_occludes_the_colour_draws_on_both_backends() {
    for culling in [Culling::Cpu, Culling::Gpu] {
        let (w_ref, w_host) = wgpu_depth_view_frames(culling, crowd, occluder_view());
        check_occluded(&format!("wgpu-{culling:?}"), &w_ref, &w_host);
        let (v_ref, v_host) = vulkan_depth_view_frames(culling, crowd, occluder_view());
        check_occluded(&format!("vulkan-{culling:?}"), &v_ref, &v_host);
        let differing = v_host.iter().zip(&w_host).filter(|(a, b)| a.abs_diff(**b) > 2).count();
        assert_eq!(differing, 0, "{culling:?}: the host frames of wgpu and Vulkan differ");
    }
}

/// NDC units [`far_view`] shifts the camera's image right by: farther than the screen is wide, so
/// what it brings on screen lies wholly outside the camera's frustum.
const FAR_SHIFT: f32 = 1.8;

/// The camera's view-projection moved [`FAR_SHIFT`] right in NDC and flattened to depth 0.
fn far_view() -> [[f32; 4]; 4] {
    let mut m = camera().view_proj;
    for column in &mut m {
        column[0] += FAR_SHIFT * column[3];
        column[2] = 0.0;
    }
    m
}

/// [`crowd`] plus a twin of each instance moved left until [`far_view`] puts the twin where the
/// camera sees the original (at the original's depth: the same NDC shift): the twins lie outside
/// the camera's frustum (by more than their bounding spheres), only the view sees them.
fn crowd_with_twins(bytes: &[u8]) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    let m = camera().view_proj;
    let clip = |p: [f32; 3]| {
        let row = |r: usize| m[0][r] * p[0] + m[1][r] * p[1] + m[2][r] * p[2] + m[3][r];
        (row(0), row(3))
    };
    for i in 0..8u32 {
        // As `crowd` places them.
        let p = [(i % 4) as f32 * 1.2 - 1.8, 0.0, -((i / 4) as f32) * 1.7];
        let (yaw, phase) = (0.4 * i as f32, 0.1 * i as f32);
        crowd.spawn_at_phase(p, yaw, i % clips, phase);
        let (_, w) = clip(p);
        let twin = [p[0] - FAR_SHIFT * w / m[0][0], p[1], p[2]];
        let (x, w) = clip([twin[0], twin[1] + 0.9, twin[2]]);
        assert!(x / w < -1.4, "the twin lies well left of the camera's frustum: NDC x {}", x / w);
        crowd.spawn_at_phase(twin, yaw, i % clips, phase);
    }
    crowd.advance(0.4);
    crowd
}

#[test]
fn a_view_draws_instances_outside_the_cameras_frustum_with_either_culling_on_both_backends() {
    let mut frames = Vec::new();
    for culling in [Culling::Cpu, Culling::Gpu] {
        let (w_ref, w_host) = wgpu_depth_view_frames(culling, crowd_with_twins, far_view());
        let (v_ref, v_host) = vulkan_depth_view_frames(culling, crowd_with_twins, far_view());
        for (name, reference, host) in [("wgpu", &w_ref, &w_host), ("vulkan", &v_ref, &v_host)] {
            save_image(&format!("embed-far-view-{name}-{culling:?}-host"), SIZE, host);
            let background = reference[..4].to_vec();
            let px = |img: &[u8], p: usize| img[p * 4..p * 4 + 4].to_vec();
            let pixels = (SIZE[0] * SIZE[1]) as usize;
            let covered = (0..pixels).filter(|&p| px(reference, p) != background).count();
            let hidden =
                (0..pixels).filter(|&p| px(reference, p) != background && px(host, p) == background).count();
            // The twins' depth, drawn by the view alone, hides most of the crowd they shadow.
            assert!(
                covered > 600 && hidden > covered / 2,
                "{name} {culling:?}: the view's twins hide {hidden} of the crowd's {covered} pixels"
            );
        }
        let differing = v_host.iter().zip(&w_host).filter(|(a, b)| a.abs_diff(**b) > 2).count();
        assert_eq!(differing, 0, "{culling:?}: the host frames of wgpu and Vulkan differ");
        frames.push(w_host);
    }
    // GPU culling of the view draws what CPU culling of it draws (the same instances and LODs).
    let differing = frames[0].chunks(4).zip(frames[1].chunks(4)).filter(|(a, b)| a != b).count();
    assert!(differing <= 40, "{differing} pixels differ between CPU and GPU culling of the view");
}
