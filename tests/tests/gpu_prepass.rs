//! The host's prepass (`Renderer::draw_prepass`) on both backends, in a reverse-Z host frame with
//! Bevy's layout (normal at location 0, motion at location 1, the main depth buffer):
//!
//! - **Depth.** A prepass, then the colour pass over its depth (loaded): with `GreaterEqual` the
//!   colour pass draws exactly the image of a plain `render()` (the prepass wrote nothing nearer),
//!   and with a strict `Greater` it draws nothing at all (the prepass wrote nothing farther): the
//!   prepass writes the depth `draw` writes, pixel for pixel (normal-only, motion-only and
//!   depth-only prepasses).
//! - **Normals.** The normal target holds `n * 0.5 + 0.5` of unit normals facing the camera, equal
//!   to the world normal vat's colour stage interpolates (a host shader's probe of `world_normal`
//!   in the same view), on the pixels the crowd covers and nowhere else.
//! - **Motion.** For a still crowd and camera every covered pixel's motion is exactly zero; after
//!   the camera turns about its eye (a static pose: the crowd's clock and records unchanged) each
//!   pixel's motion is the analytic one of the two cameras, Bevy's `(ndc_now - ndc_previous) *
//!   (0.5, -0.5)`, with the frame jittered by half a pixel (motion vectors stay unjittered).
//! - **Jitter.** A colour frame jittered by one pixel to the right is the unjittered frame moved by
//!   one pixel.
//!
//! With CPU and GPU culling; wgpu and Vulkan (under the validation layer, which must stay silent)
//! agree.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // raw Vulkan calls of the host's own passes, each with a SAFETY comment

use ash::vk;
use vat_core::backend::pipeline::{CompareFunction, HostShader, PassConventions};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdDraw, CrowdRenderer, Culling, RenderOptions};
use vat_tests::{humanoid_vat, save_image};

const SIZE: [u32; 2] = [160, 112];
const EYE: [f32; 3] = [0.0, 1.3, 3.4];
/// What the camera looks at in the first frames, and after it turns about its eye.
const TARGET_A: [f32; 3] = [0.0, 0.9, 0.0];
const TARGET_B: [f32; 3] = [0.3, 1.0, 0.1];
const FOV: f32 = 0.9;
const NEAR: f32 = 0.1;
/// What the motion target is cleared to: a pixel the prepass wrote has `.zw = 0`.
const SENTINEL: f32 = 7.0;
/// Largest allowed motion error, in fractions of the screen (gpu_motion's bound, doubled: the
/// expected motion is taken at the pixel centre's ray, not at the fragment's decoded position).
const MOTION_BOUND: f64 = 2e-4;

/// The probe of vat's interpolated world normal (motion entry point, location 1), encoded as the
/// normal prepass encodes it.
const PROBE: &str = "
@fragment
fn fs_probe_colour(in: VertexOutput) -> @location(0) vec4<f32> {
    return vec4<f32>(1.0);
}

@fragment
fn fs_probe(in: VertexOutput) -> LitMotionOutput {
    return LitMotionOutput(vec4<f32>(1.0), vec4<f32>(vat_normalize(in.world_normal) * 0.5 + 0.5, 1.0));
}
";

fn aspect() -> f32 {
    SIZE[0] as f32 / SIZE[1] as f32
}

fn camera(target: [f32; 3]) -> Camera {
    Camera::look_at_reverse_z(EYE, target, FOV, aspect(), NEAR)
}

/// Six humanoids in two rows, mid-animation; nothing advances them afterwards (a static pose).
fn crowd(bytes: &[u8]) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let config = CrowdConfig { lod_bias: -20.0, ..CrowdConfig::default() };
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), config);
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..6u32 {
        let p = [(i % 3) as f32 * 1.3 - 1.3, 0.0, -((i / 3) as f32) * 1.6];
        crowd.spawn_at_phase(p, 0.5 * i as f32 - 1.0, i % clips, 0.15 * i as f32);
    }
    crowd.advance(0.4);
    crowd
}

fn options(culling: Culling) -> RenderOptions {
    RenderOptions { culling, shadows: false, motion_vectors: true, ..RenderOptions::default() }
}

/// Half a pixel right and half a pixel down, in NDC.
fn half_pixel_jitter() -> [f32; 2] {
    [1.0 / SIZE[0] as f32, -1.0 / SIZE[1] as f32]
}

/// One pixel right, in NDC.
fn one_pixel_jitter() -> [f32; 2] {
    [2.0 / SIZE[0] as f32, 0.0]
}

/// Everything a backend produced.
struct Frames {
    /// `render()` of the first view, no prepass.
    reference: Vec<u8>,
    /// The probe's interpolated normals of the first view (location 1 of `render()`).
    probe: Vec<[f32; 4]>,
    /// Frame 1: the normal prepass (into a float target), then the colour pass with `GreaterEqual`.
    normals: Vec<[f32; 4]>,
    after_prepass: Vec<u8>,
    /// Frame 2, same view: the motion-only prepass, then the colour pass with a strict `Greater`.
    still: Vec<[f32; 4]>,
    strict: Vec<u8>,
    /// Frame 2b, same view: the depth-only prepass (no colour target), then the strict colour pass.
    strict_after_depth_only: Vec<u8>,
    /// Frame 3: the turned camera, jittered by half a pixel, both targets (the normal into the
    /// sRGB colour target).
    turned: Vec<[f32; 4]>,
    turned_normals: Vec<u8>,
    /// `render()` of the turned view without and with one pixel of jitter.
    unjittered: Vec<u8>,
    jittered: Vec<u8>,
}

/// The reverse-Z conventions with a strict test: passes only where the colour pass is nearer
/// than what the prepass wrote.
fn strict() -> PassConventions {
    PassConventions { depth_compare: CompareFunction::Greater, ..PassConventions::REVERSE_Z }
}

// ---------------------------------------------------------------------------------------------
// wgpu
// ---------------------------------------------------------------------------------------------

/// A wgpu pass over `colour` slots (each view with its clear value, `None` to load) and `depth`.
fn wgpu_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    colour: &[Option<(&wgpu::TextureView, Option<wgpu::Color>)>],
    depth: &wgpu::TextureView,
    clear_depth: Option<f32>,
) -> wgpu::RenderPass<'e> {
    let attachments: Vec<Option<wgpu::RenderPassColorAttachment<'_>>> = colour
        .iter()
        .map(|slot| {
            slot.map(|(view, clear)| wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: clear.map_or(wgpu::LoadOp::Load, wgpu::LoadOp::Clear),
                    store: wgpu::StoreOp::Store,
                },
            })
        })
        .collect();
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("host pass"),
        color_attachments: &attachments,
        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
            view: depth,
            depth_ops: Some(wgpu::Operations {
                load: clear_depth.map_or(wgpu::LoadOp::Load, wgpu::LoadOp::Clear),
                store: wgpu::StoreOp::Store,
            }),
            stencil_ops: None,
        }),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    })
}

fn wgpu_frames(culling: Culling) -> Frames {
    let bytes = humanoid_vat();
    let config = vat_wgpu::RendererConfig { conventions: PassConventions::REVERSE_Z, ..Default::default() };
    let mut r = vat_wgpu::Offscreen::new(SIZE, config).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let (a, b) = (camera(TARGET_A), camera(TARGET_B));
    let plain = RenderOptions { motion_vectors: false, ..options(culling) };
    let [cr, cg, cb, ca] = plain.clear_color;
    let background = wgpu::Color { r: cr, g: cg, b: cb, a: ca };
    let sentinel = wgpu::Color { r: 7.0, g: 7.0, b: 7.0, a: 7.0 };
    let depth_format = r.parts().2.pass_formats().depth;
    let prepass = |normal, motion| vat_wgpu::PrepassFormats {
        normal,
        motion,
        depth: depth_format,
        samples: 1,
        conventions: PassConventions::REVERSE_Z,
    };

    r.render_crowd(&asset, &mut gpu, &mut crowd, &a, &plain).unwrap();
    let reference = r.read_rgba8().unwrap();
    let probe = HostShader::new(PROBE, "fs_probe_colour").with_motion_entry_point("fs_probe");
    r.parts().2.set_host_shader(Some(probe)).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &a, &options(culling)).unwrap();
    let probe = r.read_motion().unwrap();
    r.parts().2.set_host_shader(None).unwrap();

    // Frame 1: the normal prepass into the float target, then colour over its depth.
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(encoder, &mut crowds, &a, &options(culling), &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        {
            let mut pass =
                wgpu_pass(encoder, &[Some((motion_view, Some(sentinel)))], target.depth, Some(0.0));
            renderer.draw_prepass(&mut pass, &crowds, prepass(Some(motion_format), None));
        }
        let mut pass = wgpu_pass(encoder, &[Some((target.color, Some(background)))], target.depth, None);
        renderer.draw(&mut pass, &crowds, renderer.pass_formats());
        Ok(())
    })
    .unwrap();
    let (normals, after_prepass) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    // Frame 2: the motion-only prepass (nothing at location 0), then colour with a strict test.
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(encoder, &mut crowds, &a, &options(culling), &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        {
            let slots = [None, Some((motion_view, Some(sentinel)))];
            let mut pass = wgpu_pass(encoder, &slots, target.depth, Some(0.0));
            renderer.draw_prepass(&mut pass, &crowds, prepass(None, Some(motion_format)));
        }
        let mut pass = wgpu_pass(encoder, &[Some((target.color, Some(background)))], target.depth, None);
        let formats = vat_wgpu::PassFormats { conventions: strict(), ..renderer.pass_formats() };
        renderer.draw(&mut pass, &crowds, formats);
        Ok(())
    })
    .unwrap();
    let (still, strict_frame) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    // Frame 2b: the depth-only prepass, then colour with a strict test.
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(encoder, &mut crowds, &a, &options(culling), &[])?;
        {
            let mut pass = wgpu_pass(encoder, &[], target.depth, Some(0.0));
            renderer.draw_prepass(&mut pass, &crowds, prepass(None, None));
        }
        let mut pass = wgpu_pass(encoder, &[Some((target.color, Some(background)))], target.depth, None);
        let formats = vat_wgpu::PassFormats { conventions: strict(), ..renderer.pass_formats() };
        renderer.draw(&mut pass, &crowds, formats);
        Ok(())
    })
    .unwrap();
    let strict_after_depth_only = r.read_rgba8().unwrap();

    // Frame 3: the camera turns; both targets, the normal into the sRGB colour target.
    let turned_options = RenderOptions { jitter: half_pixel_jitter(), ..options(culling) };
    r.record_host_frame(|_, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(encoder, &mut crowds, &b, &turned_options, &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        let slots =
            [Some((target.color, Some(wgpu::Color::TRANSPARENT))), Some((motion_view, Some(sentinel)))];
        let mut pass = wgpu_pass(encoder, &slots, target.depth, Some(0.0));
        let colour = renderer.pass_formats().color;
        renderer.draw_prepass(&mut pass, &crowds, prepass(colour, Some(motion_format)));
        Ok(())
    })
    .unwrap();
    let (turned, turned_normals) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    r.render_crowd(&asset, &mut gpu, &mut crowd, &b, &plain).unwrap();
    let unjittered = r.read_rgba8().unwrap();
    let jittered_options = RenderOptions { jitter: one_pixel_jitter(), ..plain };
    r.render_crowd(&asset, &mut gpu, &mut crowd, &b, &jittered_options).unwrap();
    let jittered = r.read_rgba8().unwrap();
    Frames {
        reference,
        probe,
        normals,
        after_prepass,
        still,
        strict: strict_frame,
        strict_after_depth_only,
        turned,
        turned_normals,
        unjittered,
        jittered,
    }
}

// ---------------------------------------------------------------------------------------------
// Vulkan
// ---------------------------------------------------------------------------------------------

/// A colour slot of a Vulkan rendering: the view and its clear value (`None`: loaded).
type VkSlot = Option<(vk::ImageView, Option<[f32; 4]>)>;

/// Begins dynamic rendering over `colour` slots (each view with its clear value, `None` to load;
/// an empty slot has a null view) and `depth` (cleared to `clear_depth`, or loaded).
///
/// # Safety
/// `cb` is recording outside any rendering; the views are the offscreen target's, in the
/// attachment layouts.
unsafe fn vk_begin(
    ctx: &vat_vulkan::Context,
    cb: vk::CommandBuffer,
    colour: &[VkSlot],
    depth: vk::ImageView,
    clear_depth: Option<f32>,
) {
    let attachments: Vec<vk::RenderingAttachmentInfo<'_>> = colour
        .iter()
        .map(|slot| match slot {
            None => vk::RenderingAttachmentInfo::default(),
            Some((view, clear)) => vk::RenderingAttachmentInfo::default()
                .image_view(*view)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(if clear.is_some() {
                    vk::AttachmentLoadOp::CLEAR
                } else {
                    vk::AttachmentLoadOp::LOAD
                })
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue { float32: clear.unwrap_or([0.0; 4]) },
                }),
        })
        .collect();
    let depth = vk::RenderingAttachmentInfo::default()
        .image_view(depth)
        .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
        .load_op(if clear_depth.is_some() { vk::AttachmentLoadOp::CLEAR } else { vk::AttachmentLoadOp::LOAD })
        .store_op(vk::AttachmentStoreOp::STORE)
        .clear_value(vk::ClearValue {
            depth_stencil: vk::ClearDepthStencilValue { depth: clear_depth.unwrap_or(0.0), stencil: 0 },
        });
    let info = vk::RenderingInfo::default()
        .render_area(vat_vulkan::full_rect(SIZE))
        .layer_count(1)
        .color_attachments(&attachments)
        .depth_attachment(&depth);
    // SAFETY: the caller's contract.
    unsafe { ctx.device.cmd_begin_rendering(cb, &info) };
}

/// Ends the rendering begun by [`vk_begin`] and orders its attachment writes before the next
/// rendering's attachment accesses.
///
/// # Safety
/// `cb` is recording inside rendering begun by [`vk_begin`].
unsafe fn vk_end(ctx: &vat_vulkan::Context, cb: vk::CommandBuffer) {
    let stages = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
        | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
        | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
    let barrier = [vk::MemoryBarrier::default()
        .src_access_mask(
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
        )
        .dst_access_mask(
            vk::AccessFlags::COLOR_ATTACHMENT_READ
                | vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
        )];
    // SAFETY: the caller's contract; the barrier is recorded outside rendering.
    unsafe {
        ctx.device.cmd_end_rendering(cb);
        ctx.device.cmd_pipeline_barrier(cb, stages, stages, vk::DependencyFlags::empty(), &barrier, &[], &[]);
    }
}

fn vulkan_frames(culling: Culling) -> Frames {
    let bytes = humanoid_vat();
    let config = vat_vulkan::RendererConfig { conventions: PassConventions::REVERSE_Z, ..Default::default() };
    let mut r = vat_vulkan::Offscreen::new(SIZE, config).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let (a, b) = (camera(TARGET_A), camera(TARGET_B));
    let plain = RenderOptions { motion_vectors: false, ..options(culling) };
    let background = plain.clear_color.map(|c| c as f32);
    let sentinel = [SENTINEL; 4];
    let area = vat_vulkan::full_rect(SIZE);
    let depth_format = r.parts().1.pass_formats().depth;
    let prepass = |normal, motion| vat_vulkan::PrepassFormats {
        normal,
        motion,
        depth: depth_format,
        samples: 1,
        conventions: PassConventions::REVERSE_Z,
    };

    r.render_crowd(&asset, &mut gpu, &mut crowd, &a, &plain).unwrap();
    let reference = r.read_rgba8().unwrap();
    let probe = HostShader::new(PROBE, "fs_probe_colour").with_motion_entry_point("fs_probe");
    r.parts().1.set_host_shader(Some(probe)).unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &a, &options(culling)).unwrap();
    let probe = r.read_motion().unwrap();
    r.parts().1.set_host_shader(None).unwrap();

    // Frame 1: the normal prepass into the float target, then colour over its depth.
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(cb, &mut crowds, &a, &options(culling), &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        // SAFETY: recording outside any rendering (`prepare` leaves none open); the target's views.
        unsafe { vk_begin(ctx, cb, &[Some((motion_view, Some(sentinel)))], target.depth, Some(0.0)) };
        let drawn = renderer.draw_prepass(cb, &crowds, prepass(Some(motion_format), None), area);
        // SAFETY: inside the rendering begun above.
        unsafe { vk_end(ctx, cb) };
        drawn?;
        // SAFETY: as above.
        unsafe { vk_begin(ctx, cb, &[Some((target.color, Some(background)))], target.depth, None) };
        let drawn = renderer.draw(cb, &crowds, renderer.pass_formats(), area);
        // SAFETY: as above.
        unsafe { vk_end(ctx, cb) };
        drawn
    })
    .unwrap();
    let (normals, after_prepass) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    // Frame 2: the motion-only prepass (a null view at location 0), then colour with a strict test.
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(cb, &mut crowds, &a, &options(culling), &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        // SAFETY: as in frame 1.
        unsafe { vk_begin(ctx, cb, &[None, Some((motion_view, Some(sentinel)))], target.depth, Some(0.0)) };
        let drawn = renderer.draw_prepass(cb, &crowds, prepass(None, Some(motion_format)), area);
        // SAFETY: as in frame 1.
        unsafe { vk_end(ctx, cb) };
        drawn?;
        // SAFETY: as in frame 1.
        unsafe { vk_begin(ctx, cb, &[Some((target.color, Some(background)))], target.depth, None) };
        let formats = vat_vulkan::PassFormats { conventions: strict(), ..renderer.pass_formats() };
        let drawn = renderer.draw(cb, &crowds, formats, area);
        // SAFETY: as in frame 1.
        unsafe { vk_end(ctx, cb) };
        drawn
    })
    .unwrap();
    let (still, strict_frame) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    // Frame 2b: the depth-only prepass, then colour with a strict test.
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(cb, &mut crowds, &a, &options(culling), &[])?;
        // SAFETY: as in frame 1.
        unsafe { vk_begin(ctx, cb, &[], target.depth, Some(0.0)) };
        let drawn = renderer.draw_prepass(cb, &crowds, prepass(None, None), area);
        // SAFETY: as in frame 1.
        unsafe { vk_end(ctx, cb) };
        drawn?;
        // SAFETY: as in frame 1.
        unsafe { vk_begin(ctx, cb, &[Some((target.color, Some(background)))], target.depth, None) };
        let formats = vat_vulkan::PassFormats { conventions: strict(), ..renderer.pass_formats() };
        let drawn = renderer.draw(cb, &crowds, formats, area);
        // SAFETY: as in frame 1.
        unsafe { vk_end(ctx, cb) };
        drawn
    })
    .unwrap();
    let strict_after_depth_only = r.read_rgba8().unwrap();

    // Frame 3: the camera turns; both targets, the normal into the sRGB colour target.
    let turned_options = RenderOptions { jitter: half_pixel_jitter(), ..options(culling) };
    r.record_host_frame(|ctx, renderer, cb, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        renderer.prepare(cb, &mut crowds, &b, &turned_options, &[])?;
        let (motion_view, motion_format) = target.motion.unwrap();
        let slots = [Some((target.color, Some([0.0; 4]))), Some((motion_view, Some(sentinel)))];
        // SAFETY: as in frame 1.
        unsafe { vk_begin(ctx, cb, &slots, target.depth, Some(0.0)) };
        let colour = renderer.pass_formats().color;
        let drawn = renderer.draw_prepass(cb, &crowds, prepass(colour, Some(motion_format)), area);
        // SAFETY: as in frame 1.
        unsafe { vk_end(ctx, cb) };
        drawn
    })
    .unwrap();
    let (turned, turned_normals) = (r.read_motion().unwrap(), r.read_rgba8().unwrap());

    r.render_crowd(&asset, &mut gpu, &mut crowd, &b, &plain).unwrap();
    let unjittered = r.read_rgba8().unwrap();
    let jittered_options = RenderOptions { jitter: one_pixel_jitter(), ..plain };
    r.render_crowd(&asset, &mut gpu, &mut crowd, &b, &jittered_options).unwrap();
    let jittered = r.read_rgba8().unwrap();
    let messages = r.parts().0.messages();
    drop(r);
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "validation messages (printed above)");
    Frames {
        reference,
        probe,
        normals,
        after_prepass,
        still,
        strict: strict_frame,
        strict_after_depth_only,
        turned,
        turned_normals,
        unjittered,
        jittered,
    }
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// Pixels (of `a` and `b`, RGBA8) differing by more than 2 in a channel.
fn differing(a: &[u8], b: &[u8]) -> usize {
    a.chunks(4).zip(b.chunks(4)).filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 2)).count()
}

fn pixel(img: &[u8], p: usize) -> &[u8] {
    &img[p * 4..p * 4 + 4]
}

/// The camera's basis: forward, right, up (unit), as `Camera::look_at_reverse_z` builds it.
fn basis(target: [f32; 3]) -> [[f64; 3]; 3] {
    let sub = |a: [f32; 3], b: [f32; 3]| [0, 1, 2].map(|i| f64::from(a[i]) - f64::from(b[i]));
    let norm = |v: [f64; 3]| {
        let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        v.map(|c| c / l)
    };
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    };
    let f = norm(sub(target, EYE));
    let r = norm(cross(f, [0.0, 1.0, 0.0]));
    [f, r, cross(r, f)]
}

/// The unit direction from the eye through NDC `(x, y)` of the camera looking at `target`.
fn ray(target: [f32; 3], ndc: [f64; 2]) -> [f64; 3] {
    let [f, r, u] = basis(target);
    let t = (f64::from(FOV) * 0.5).tan();
    let (x, y) = (ndc[0] * t * f64::from(aspect()), ndc[1] * t);
    let d = [0, 1, 2].map(|i| f[i] + r[i] * x + u[i] * y);
    let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    d.map(|c| c / l)
}

/// The NDC of direction `d` (from the eye) in the camera looking at `target`.
fn ndc_of(target: [f32; 3], d: [f64; 3]) -> [f64; 2] {
    let [f, r, u] = basis(target);
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let t = (f64::from(FOV) * 0.5).tan();
    let z = dot(d, f);
    [dot(d, r) / (z * t * f64::from(aspect())), dot(d, u) / (z * t)]
}

/// The NDC of pixel `p`'s centre.
fn pixel_ndc(p: usize) -> [f64; 2] {
    let (x, y) = ((p % SIZE[0] as usize) as f64 + 0.5, (p / SIZE[0] as usize) as f64 + 0.5);
    [x / f64::from(SIZE[0]) * 2.0 - 1.0, 1.0 - y / f64::from(SIZE[1]) * 2.0]
}

/// sRGB-encoded byte to linear.
fn srgb_to_linear(b: u8) -> f64 {
    let c = f64::from(b) / 255.0;
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

fn check(name: &str, f: &Frames) {
    save_image(&format!("prepass-{name}-after-prepass"), SIZE, &f.after_prepass);
    save_image(&format!("prepass-{name}-turned-normals"), SIZE, &f.turned_normals);
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let background = pixel(&f.reference, 0).to_vec();
    let crowd: Vec<bool> = (0..pixels).map(|p| pixel(&f.reference, p) != background.as_slice()).collect();
    let covered = crowd.iter().filter(|&&c| c).count();
    assert!(covered > 1500, "{name}: the crowd covers {covered} pixels");

    // Depth: GreaterEqual over the prepass's depth draws the plain image; a strict test nothing.
    let off = differing(&f.reference, &f.after_prepass);
    assert_eq!(off, 0, "{name}: the colour pass over the prepass differs from render() at {off} pixels");
    for (prepass, image) in [("motion", &f.strict), ("depth-only", &f.strict_after_depth_only)] {
        let drawn = (0..pixels).filter(|&p| pixel(image, p) != background.as_slice()).count();
        assert_eq!(drawn, 0, "{name}: {drawn} crowd pixels are nearer than the {prepass} prepass's depth");
    }

    // Normals: where the crowd is and only there; unit, facing the camera, vat's own normals.
    let mut facing = 0;
    for (p, &on_crowd) in crowd.iter().enumerate() {
        let (n, probe) = (f.normals[p], f.probe[p]);
        assert_eq!(n[3] == 1.0, on_crowd, "{name}: pixel {p}: normal written {n:?} vs crowd {on_crowd}");
        assert_eq!(probe[3] == 1.0, on_crowd, "{name}: pixel {p}: the probe's coverage");
        if !on_crowd {
            assert_eq!(n, [SENTINEL; 4], "{name}: pixel {p} written outside the crowd");
            continue;
        }
        let v = [0, 1, 2].map(|i| f64::from(n[i]) * 2.0 - 1.0);
        let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        assert!((len - 1.0).abs() < 1e-3, "{name}: pixel {p}: |n| = {len}");
        let d = ray(TARGET_A, pixel_ndc(p));
        let towards = -(v[0] * d[0] + v[1] * d[1] + v[2] * d[2]);
        assert!(towards > -0.35, "{name}: pixel {p}: the normal faces away ({towards})");
        facing += usize::from(towards > 0.0);
        for i in 0..3 {
            assert!(
                (n[i] - probe[i]).abs() < 1e-5,
                "{name}: pixel {p}: prepass {n:?}, vat's normal {probe:?}"
            );
        }
    }
    assert!(facing * 100 >= covered * 97, "{name}: {facing} of {covered} normals face the camera");

    // Motion of a still crowd and camera: exactly zero on every covered pixel, nothing elsewhere.
    for (p, &on_crowd) in crowd.iter().enumerate() {
        let m = f.still[p];
        if on_crowd {
            assert_eq!(m, [0.0; 4], "{name}: pixel {p}: still motion");
        } else {
            assert_eq!(m, [SENTINEL; 4], "{name}: pixel {p}: written outside the crowd");
        }
    }

    // The turned camera (jittered by half a pixel): the analytic motion of each covered pixel.
    let jitter = half_pixel_jitter().map(f64::from);
    let (mut checked, mut worst, mut largest) = (0usize, 0.0f64, 0.0f64);
    for p in 0..pixels {
        let m = f.turned[p];
        if m[3] == SENTINEL {
            continue;
        }
        assert_eq!([m[2], m[3]], [0.0; 2], "{name}: pixel {p}: motion .zw");
        // The fragment at this pixel's centre lies on the unjittered camera's ray through the NDC
        // the jitter moved there; motion vectors use the unjittered matrices.
        let c = pixel_ndc(p);
        let now = [c[0] - jitter[0], c[1] - jitter[1]];
        let before = ndc_of(TARGET_A, ray(TARGET_B, now));
        let expected = [(now[0] - before[0]) * 0.5, (now[1] - before[1]) * -0.5];
        let error = (f64::from(m[0]) - expected[0]).hypot(f64::from(m[1]) - expected[1]);
        worst = worst.max(error);
        largest = largest.max(expected[0].hypot(expected[1]));
        checked += 1;
        // The normal target of the same pass: sRGB-encoded n * 0.5 + 0.5, alpha 1.
        let px = pixel(&f.turned_normals, p);
        assert_eq!(px[3], 255, "{name}: pixel {p}: normal alpha");
        let v = [0, 1, 2].map(|i| srgb_to_linear(px[i]) * 2.0 - 1.0);
        let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        assert!((len - 1.0).abs() < 0.05, "{name}: pixel {p}: |n| = {len} (8-bit sRGB)");
    }
    println!("{name}: turned camera: {checked} pixels, worst error {worst:.2e}, largest motion {largest:.4}");
    assert!(checked * 10 > covered * 7, "{name}: {checked} pixels of motion after the turn");
    assert!(largest > 0.02, "{name}: the turn moves the image ({largest})");
    assert!(worst < MOTION_BOUND, "{name}: motion error {worst:.2e}");

    // One pixel of jitter to the right moves the image by one pixel.
    let (w, h) = (SIZE[0] as usize, SIZE[1] as usize);
    let mut moved = Vec::new();
    let mut same = Vec::new();
    for y in 0..h {
        for x in 1..w {
            moved.extend_from_slice(pixel(&f.jittered, y * w + x));
            same.extend_from_slice(pixel(&f.unjittered, y * w + x - 1));
        }
    }
    let off = differing(&moved, &same);
    assert!(off * 1000 < covered, "{name}: the jittered frame is not the frame moved by a pixel ({off} px)");
    assert!(differing(&f.jittered, &f.unjittered) > 100, "{name}: jitter moves the image");
}

/// Largest difference of two float images.
fn max_difference(a: &[[f32; 4]], b: &[[f32; 4]]) -> f32 {
    a.iter().zip(b).flat_map(|(p, q)| p.iter().zip(q).map(|(x, y)| (x - y).abs())).fold(0.0, f32::max)
}

#[test]
fn the_prepass_writes_the_colour_pass_depth_normals_and_motion_on_both_backends() {
    for culling in [Culling::Cpu, Culling::Gpu] {
        let w = wgpu_frames(culling);
        check(&format!("wgpu-{culling:?}"), &w);
        let v = vulkan_frames(culling);
        check(&format!("vulkan-{culling:?}"), &v);
        assert_eq!(differing(&w.after_prepass, &v.after_prepass), 0, "{culling:?}: colour differs");
        assert_eq!(differing(&w.turned_normals, &v.turned_normals), 0, "{culling:?}: normals differ");
        let normals = max_difference(&w.normals, &v.normals);
        assert!(normals < 1e-5, "{culling:?}: normals differ by {normals}");
        let motion = max_difference(&w.turned, &v.turned);
        assert!(motion < 1e-5, "{culling:?}: motion differs by {motion}");
    }
}
