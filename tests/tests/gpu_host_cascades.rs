//! The crowd receives a host's cascaded shadow map, reverse-Z (Bevy's) or standard, on both
//! backends. The host's map is a two-layer depth array: the layer of cascade 0 holds "a caster
//! nearest the light everywhere" and the layer of cascade 1 "nothing": so instances nearer than
//! cascade 0's far bound are in full shadow and farther ones fully lit, exactly when vat picks the
//! cascade by view distance, reads the named layer and compares in the map's depth convention.
//! (Reverse-Z: layer 0 cleared to 1, layer 1 to 0; standard: the opposite.) Swapping the layers
//! swaps which instances are shadowed, and both backends agree to the pixel.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // the host's own Vulkan image, each call with a SAFETY comment

use ash::vk;
use vat_core::backend::gpu::{ShadowCascade, ShadowLookup};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdRenderer, RenderOptions, ShadowMapSource};
use vat_tests::{humanoid_vat_in, save_image};

const SIZE: [u32; 2] = [256, 160];
const EYE: [f32; 3] = [0.0, 2.5, 6.0];
const TARGET: [f32; 3] = [0.0, 0.8, -4.0];
/// Cascade 0 ends at this view distance, metres: between the crowd's near row (about 6 m from the
/// eye) and its far row (about 14 m).
const SPLIT: f32 = 10.0;
const SUN: [f32; 3] = [0.3, 0.8, 0.4];

/// Three humanoids about 6 m from the eye in the left half of the image (inside cascade 0) and three
/// about 14 m away in the right half (inside cascade 1).
fn crowd(bytes: &[u8]) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    for i in 0..3u32 {
        let k = i as f32;
        crowd.spawn_at_phase([-3.2 + 1.2 * k, 0.0, 0.0], 0.3 * k, 0, 0.1 * k);
        crowd.spawn_at_phase([1.6 + 1.2 * k, 0.0, -8.0], 0.3 * k + 1.0, 0, 0.2 + 0.1 * k);
    }
    crowd.advance(0.4);
    crowd
}

fn camera() -> Camera {
    Camera::look_at(EYE, TARGET, 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0)
}

/// The host's two cascades: both through one sun matrix covering the whole crowd (depth 0..1 for
/// every instance), cascade 0 up to [`SPLIT`] m in layer `first_layer`, cascade 1 beyond in the
/// other layer; view distance along the camera's forward axis.
fn lookup(reverse_z: bool, first_layer: u32) -> ShadowLookup {
    let cam = camera();
    let light = vat_core::backend::gpu::shadow_view_proj(&cam.view_proj, SUN, 30.0, 10.0).unwrap();
    let forward: Vec<f32> = TARGET.iter().zip(EYE).map(|(t, e)| t - e).collect();
    let len = forward.iter().map(|v| v * v).sum::<f32>().sqrt();
    let f = [forward[0] / len, forward[1] / len, forward[2] / len];
    let view_depth = [f[0], f[1], f[2], -(f[0] * EYE[0] + f[1] * EYE[1] + f[2] * EYE[2])];
    let cascade = |far_bound, layer| ShadowCascade { view_proj: light, far_bound, normal_offset: 0.0, layer };
    let cascades = [cascade(SPLIT, first_layer), cascade(1000.0, 1 - first_layer)];
    let mut lookup = ShadowLookup::cascaded(&cascades, view_depth, 0.0, reverse_z).unwrap();
    lookup.bias = 0.001;
    lookup
}

/// Depth stored in the host's layers: `[caster everywhere, nothing]` in the map's convention.
fn layer_depths(reverse_z: bool) -> [f32; 2] {
    if reverse_z { [1.0, 0.0] } else { [0.0, 1.0] }
}

fn options(shadows: bool, lookup: ShadowLookup) -> RenderOptions {
    RenderOptions { shadows, shadow_map: ShadowMapSource::Host(lookup), ..RenderOptions::default() }
}

/// wgpu: the crowd lit (shadows off) and shadowed through the host's map (cascade 0 in layer
/// `first_layer`).
fn wgpu_frames(bytes: &[u8], reverse_z: bool, first_layer: u32) -> (Vec<u8>, Vec<u8>) {
    let config = vat_wgpu::RendererConfig { shadow_map_size: 0, ..Default::default() };
    let mut r = vat_wgpu::Offscreen::new(SIZE, config).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let (device, queue, _) = r.parts();
    let map = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("host cascades"),
        size: wgpu::Extent3d { width: 64, height: 64, depth_or_array_layers: 2 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Depth32Float,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    for (layer, depth) in layer_depths(reverse_z).into_iter().enumerate() {
        let view = map.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2),
            base_array_layer: layer as u32,
            array_layer_count: Some(1),
            ..Default::default()
        });
        encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("host cascade clear"),
            color_attachments: &[],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(depth),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
    }
    queue.submit([encoder.finish()]);
    let array = map.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    });
    r.parts().2.set_host_shadow_map(Some(array));
    let cam = camera();
    let lookup = lookup(reverse_z, first_layer);
    r.render_crowd(&asset, &mut gpu, &mut crowd, &cam, &options(false, lookup)).unwrap();
    let lit = r.read_rgba8().unwrap();
    r.render_crowd(&asset, &mut gpu, &mut crowd, &cam, &options(true, lookup)).unwrap();
    (lit, r.read_rgba8().unwrap())
}

/// A memory type of `ctx` among `bits` with `flags`.
fn memory_type(ctx: &vat_vulkan::Context, bits: u32, flags: vk::MemoryPropertyFlags) -> u32 {
    let m = &ctx.memory_properties;
    (0..m.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(flags))
        .unwrap()
}

/// The same frames on Vulkan, under the validation layer (which must stay silent).
fn vulkan_frames(bytes: &[u8], reverse_z: bool, first_layer: u32) -> (Vec<u8>, Vec<u8>) {
    let config = vat_vulkan::RendererConfig { shadow_map_size: 0, ..Default::default() };
    let mut r = vat_vulkan::Offscreen::new(SIZE, config).unwrap();
    assert!(r.parts().0.validation_enabled(), "vat-vulkan tests must run under the validation layer");
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let ctx = r.parts().0.clone();
    let d = &ctx.device;
    let depth_range = |layer: u32, count: u32| vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::DEPTH,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: layer,
        layer_count: count,
    };
    let info = vk::ImageCreateInfo::default()
        .image_type(vk::ImageType::TYPE_2D)
        .format(vk::Format::D32_SFLOAT)
        .extent(vk::Extent3D { width: 64, height: 64, depth: 1 })
        .mip_levels(1)
        .array_layers(2)
        .samples(vk::SampleCountFlags::TYPE_1)
        .tiling(vk::ImageTiling::OPTIMAL)
        .usage(vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST);
    // SAFETY: valid create info on a live device; destroyed below after the device is idle.
    let image = unsafe { d.create_image(&info, None) }.unwrap();
    // SAFETY: a live image of this device.
    let req = unsafe { d.get_image_memory_requirements(image) };
    let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(memory_type(
        &ctx,
        req.memory_type_bits,
        vk::MemoryPropertyFlags::DEVICE_LOCAL,
    ));
    // SAFETY: valid allocate info; freed below.
    let memory = unsafe { d.allocate_memory(&alloc, None) }.unwrap();
    // SAFETY: bound once, before any use, to memory of a type the image accepts.
    unsafe { d.bind_image_memory(image, memory, 0) }.unwrap();
    let view_info = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(vk::ImageViewType::TYPE_2D_ARRAY)
        .format(vk::Format::D32_SFLOAT)
        .subresource_range(depth_range(0, 2));
    // SAFETY: a view of the live image above; destroyed below.
    let view = unsafe { d.create_image_view(&view_info, None) }.unwrap();
    let cam = camera();
    let lookup = lookup(reverse_z, first_layer);
    r.parts().1.set_host_shadow_map(Some(view));
    let depths = layer_depths(reverse_z);
    // The host's "shadow pass": each layer cleared to its depth, then made readable by fragment
    // shaders (the layout vat expects of a host map).
    r.record_host_frame(|ctx, _, cb, _| {
        let d = &ctx.device;
        let barrier = |old, new, src_access, dst_access| {
            vk::ImageMemoryBarrier::default()
                .old_layout(old)
                .new_layout(new)
                .src_access_mask(src_access)
                .dst_access_mask(dst_access)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(image)
                .subresource_range(depth_range(0, 2))
        };
        let to_transfer = barrier(
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::AccessFlags::empty(),
            vk::AccessFlags::TRANSFER_WRITE,
        );
        let to_read = barrier(
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::AccessFlags::SHADER_READ,
        );
        let stages = |src, dst, b| {
            // SAFETY: `cb` is recording outside any rendering (record_host_frame's contract); the
            // barrier names this test's image.
            unsafe { d.cmd_pipeline_barrier(cb, src, dst, vk::DependencyFlags::empty(), &[], &[], &[b]) }
        };
        stages(vk::PipelineStageFlags::TOP_OF_PIPE, vk::PipelineStageFlags::TRANSFER, to_transfer);
        for (layer, &depth) in depths.iter().enumerate() {
            let value = vk::ClearDepthStencilValue { depth, stencil: 0 };
            let range = [depth_range(layer as u32, 1)];
            // SAFETY: the image is in TRANSFER_DST_OPTIMAL (barrier above), the range within it.
            unsafe {
                d.cmd_clear_depth_stencil_image(
                    cb,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &value,
                    &range,
                )
            };
        }
        stages(vk::PipelineStageFlags::TRANSFER, vk::PipelineStageFlags::FRAGMENT_SHADER, to_read);
        Ok(())
    })
    .unwrap();
    let mut frames = Vec::new();
    for shadows in [false, true] {
        r.render_crowd(&asset, &mut gpu, &mut crowd, &cam, &options(shadows, lookup)).unwrap();
        frames.push(r.read_rgba8().unwrap());
    }
    let messages = r.parts().0.messages();
    drop(r);
    // SAFETY: the renderer (and every command buffer using the image) is gone and the device idle.
    unsafe {
        ctx.device.device_wait_idle().unwrap();
        ctx.device.destroy_image_view(view, None);
        ctx.device.destroy_image(image, None);
        ctx.device.free_memory(memory, None);
    }
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "validation messages (printed above)");
    let shadowed = frames.pop().unwrap();
    (frames.pop().unwrap(), shadowed)
}

/// Pixels where `a` and `b` (RGBA8) differ by more than 2 in a channel, in the left half (the near
/// instances) and the right half (the far ones) of the image.
fn differing_halves(a: &[u8], b: &[u8]) -> [usize; 2] {
    let mut counts = [0, 0];
    for (p, (x, y)) in a.chunks(4).zip(b.chunks(4)).enumerate() {
        if x.iter().zip(y).any(|(u, v)| u.abs_diff(*v) > 2) {
            counts[usize::from(p % SIZE[0] as usize >= SIZE[0] as usize / 2)] += 1;
        }
    }
    counts
}

/// Crowd pixels (not the background colour) in the left and right halves of `img`.
fn crowd_halves(img: &[u8]) -> [usize; 2] {
    let background = &img[..4];
    let mut counts = [0, 0];
    for (p, x) in img.chunks(4).enumerate() {
        if x != background {
            counts[usize::from(p % SIZE[0] as usize >= SIZE[0] as usize / 2)] += 1;
        }
    }
    counts
}

#[test]
fn host_cascades_shadow_by_view_distance_in_either_depth_convention_on_both_backends() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    for reverse_z in [true, false] {
        for first_layer in [0, 1] {
            let name = format!("{}-layer{first_layer}", if reverse_z { "reverse" } else { "standard" });
            let (lit, shadowed) = wgpu_frames(bytes, reverse_z, first_layer);
            save_image(&format!("host-cascades-wgpu-{name}"), SIZE, &shadowed);
            save_image(&format!("host-cascades-wgpu-{name}-lit"), SIZE, &lit);
            let crowd = crowd_halves(&lit);
            assert!(crowd[0] > 800 && crowd[1] > 100, "{name}: both groups are drawn: {crowd:?}");
            // The group whose cascade reads the caster layer (layer 0) darkens where the sun
            // reaches it (most of its pixels); the group whose cascade reads the empty layer does
            // not change at all. Cascade 0 covers the near group (left), cascade 1 the far one.
            let (dark, bright) = if first_layer == 0 { (0, 1) } else { (1, 0) };
            let changed = differing_halves(&lit, &shadowed);
            assert!(changed[dark] * 2 > crowd[dark], "{name}: in shadow: {changed:?} of {crowd:?}");
            assert_eq!(changed[bright], 0, "{name}: lit: {changed:?} of {crowd:?}");
            let (v_lit, v_shadowed) = vulkan_frames(bytes, reverse_z, first_layer);
            assert_eq!(differing_halves(&lit, &v_lit), [0, 0], "{name}: wgpu and Vulkan differ (lit)");
            assert_eq!(differing_halves(&shadowed, &v_shadowed), [0, 0], "{name}: wgpu and Vulkan differ");
        }
    }
}
