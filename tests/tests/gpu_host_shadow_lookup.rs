//! A host shades its own surfaces with vat's sun shadows: its ground shader includes
//! `vat_core::backend::gpu::SHADOW_WGSL` and looks up `Renderer::shadow_map_view` through
//! `FrameReport::shadow_view_proj`. The pixels it finds in shadow must be those vat's own ground
//! finds in shadow (vat's ground with shadows on against off), drawn under the same camera.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::backend::gpu::ShadowLookup;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::render::{CrowdDraw, CrowdRenderer, RenderOptions};
use vat_tests::{begin_host_pass, host_pipeline, humanoid_vat_in, save_image};
use wgpu::util::DeviceExt;

const SIZE: [u32; 2] = [256, 192];
const EYE: [f32; 3] = [0.0, 6.0, 9.0];
const HALF: f32 = 12.0;

/// The host's ground: a square of half side [`HALF`] m around the eye's foot at y = 0, each pixel
/// the grey of vat's shadow factor there.
fn host_ground_source() -> String {
    format!(
        "{}
struct Host {{ view_proj: mat4x4<f32>, eye: vec4<f32>, shadow: VatShadowLookup }}
@group(0) @binding(0) var<uniform> host: Host;
@group(0) @binding(1) var map: texture_depth_2d_array;
@group(0) @binding(2) var compare: sampler_comparison;
struct Out {{ @builtin(position) clip: vec4<f32>, @location(0) world: vec3<f32> }}
@vertex fn vs(@builtin(vertex_index) i: u32) -> Out {{
    let c = array(vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(-1.0, 1.0), vec2(1.0, 1.0));
    let k = array(0u, 1u, 2u, 2u, 1u, 3u)[i];
    let w = vec3(host.eye.x + c[k].x * {HALF:?}, 0.0, host.eye.z + c[k].y * {HALF:?});
    return Out(host.view_proj * vec4(w, 1.0), w);
}}
@fragment fn fs(in: Out) -> @location(0) vec4<f32> {{
    let f = vat_shadow_lookup(map, compare, host.shadow, in.world, vec3(0.0, 1.0, 0.0));
    return vec4(vec3(f), 1.0);
}}",
        vat_core::backend::gpu::SHADOW_WGSL
    )
}

fn crowd(bytes: &[u8]) -> Crowd {
    let asset = Asset::parse(bytes).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    for i in 0..8u32 {
        let p = [(i % 4) as f32 * 1.4 - 2.1, 0.0, -((i / 4) as f32) * 2.0];
        crowd.spawn_at_phase(p, 0.4 * i as f32, i % 3, 0.1 * i as f32);
    }
    crowd.advance(0.4);
    crowd
}

#[test]
fn a_host_ground_including_the_shadow_helper_is_shadowed_where_vats_ground_is() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let camera = Camera::look_at(EYE, [0.0, 0.0, -1.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0);
    let mut r = vat_wgpu::Offscreen::new(SIZE, Default::default()).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let frame = |r: &mut vat_wgpu::Offscreen, crowd: &mut Crowd, gpu: &mut _, ground: bool, shadows: bool| {
        let options = RenderOptions { ground, ground_half_extent: HALF, shadows, ..Default::default() };
        r.render_crowd(&asset, gpu, crowd, &camera, &options).unwrap();
        r.read_rgba8().unwrap()
    };
    let lit = frame(&mut r, &mut crowd, &mut gpu, true, true);
    let unlit = frame(&mut r, &mut crowd, &mut gpu, true, false);
    let bare = frame(&mut r, &mut crowd, &mut gpu, false, true);

    let device = r.parts().0.clone();
    let pipeline = host_pipeline(&device, &host_ground_source(), wgpu::CompareFunction::Less, true);
    let sampler = device.create_sampler(&vat_wgpu::conv::map_sampler(
        "host shadow",
        &vat_core::backend::pipeline::SHADOW_SAMPLER,
    ));
    let options = RenderOptions::default();
    let mut report = None;
    r.record_host_frame(|device, renderer, encoder, target| {
        let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
        let frame = renderer.prepare(encoder, &mut crowds, &camera, &options, &[])?;
        let light = frame.shadow_view_proj.expect("vat drew its shadow pass");
        let lookup = ShadowLookup::built_in(light, options.scene_unit);
        let mut uniforms: Vec<u8> = bytemuck::cast_slice(&camera.view_proj).to_vec();
        uniforms.extend(bytemuck::cast_slice(&[EYE[0], EYE[1], EYE[2], 0.0]));
        uniforms.extend(bytemuck::bytes_of(&lookup.uniforms()));
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host uniforms"),
            contents: &uniforms,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("host shadow"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(renderer.shadow_map_view()),
                },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::Sampler(&sampler) },
            ],
        });
        let mut pass = begin_host_pass(encoder, target, wgpu::Color::BLACK, 1.0);
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.draw(0..6, 0..1);
        renderer.draw(&mut pass, &crowds, renderer.pass_formats());
        report = Some(frame);
        Ok(())
    })
    .unwrap();
    let host = r.read_rgba8().unwrap();
    save_image("host-shadow-lookup-vat", SIZE, &lit);
    save_image("host-shadow-lookup-host", SIZE, &host);

    let report = report.unwrap();
    assert!(report.draws_shadow > 0, "vat's shadow pass drew the crowd: {report:?}");
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    fn px(img: &[u8], p: usize) -> &[u8] {
        &img[p * 4..p * 4 + 4]
    }
    let background = px(&bare, 0).to_vec();
    let crowd_pixel = |p: usize| px(&bare, p) != background.as_slice();
    // vat's ground in shadow: its pixels that shadows change; the host's: a factor below 1.
    let vat_mask: Vec<bool> = (0..pixels).map(|p| !crowd_pixel(p) && px(&lit, p) != px(&unlit, p)).collect();
    // The host's ground is grey (its sky black): shadowed where the grey is below white.
    let ground_grey =
        |p: usize| Some(px(&host, p)).filter(|c| c[0] == c[1] && c[1] == c[2] && c[0] > 0).map(|c| c[0]);
    let host_mask: Vec<bool> =
        (0..pixels).map(|p| !crowd_pixel(p) && ground_grey(p).is_some_and(|g| g < 255)).collect();
    let both = (0..pixels).filter(|&p| vat_mask[p] && host_mask[p]).count();
    let either = (0..pixels).filter(|&p| vat_mask[p] || host_mask[p]).count();
    let vat_count = vat_mask.iter().filter(|&&m| m).count();
    println!("shadow masks: {both} pixels in both, {either} in either (vat's ground {vat_count})");
    assert!(vat_count > 300, "the crowd shadows vat's ground ({vat_count} pixels)");
    // The same lookup of the same map: the masks agree but for the quantisation of the lightest
    // penumbra texels (a factor just under 1 can round to the same 8-bit colour on vat's ground).
    assert!(both * 100 >= either * 95, "shadow masks: {both} in both of {either} (vat {vat_count})");
    // Outside the crowd's shadows the host's ground is fully lit.
    let lit_host =
        (0..pixels).filter(|&p| !crowd_pixel(p) && !host_mask[p] && px(&host, p)[0] == 255).count();
    assert!(lit_host > pixels / 4, "the host's ground is lit away from the crowd ({lit_host} pixels)");
}

/// A renderer made without a built-in shadow map refuses built-in shadows by name, and with the
/// host's map the report counts the crowd's draws into the host's shadow view as shadow draws.
#[test]
fn without_a_built_in_map_the_host_map_is_used_and_its_draws_counted() {
    let bytes = humanoid_vat_in(VertexFormat::Packed64);
    let config = vat_wgpu::RendererConfig { shadow_map_size: 0, ..Default::default() };
    let mut r = vat_wgpu::Offscreen::new(SIZE, config).unwrap();
    let asset = r.upload(&Asset::parse(bytes).unwrap()).unwrap();
    let mut crowd = crowd(bytes);
    let mut gpu = r.create_crowd(&crowd).unwrap();
    let camera = Camera::look_at(EYE, [0.0, 0.0, -1.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0);
    let err = r.render_crowd(&asset, &mut gpu, &mut crowd, &camera, &RenderOptions::default()).unwrap_err();
    assert!(
        matches!(err, vat_wgpu::Error::Frame(vat_core::backend::frame::FrameError::NoBuiltInShadowMap)),
        "{err}"
    );
    assert!(err.to_string().contains("shadow_map_size"), "{err}");
    // Without shadows the frame draws.
    let off = RenderOptions { shadows: false, ..Default::default() };
    assert_eq!(r.render_crowd(&asset, &mut gpu, &mut crowd, &camera, &off).unwrap().draws_shadow, 0);

    let light =
        vat_core::backend::gpu::shadow_view_proj(&camera.view_proj, [0.4, 0.8, 0.3], 30.0, 30.0).unwrap();
    let device = r.parts().0.clone();
    let map = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("host shadow map"),
        size: wgpu::Extent3d { width: 512, height: 512, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Depth32Float,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    // One view serves as the host pass's attachment and as vat's binding (a one-layer array).
    let view = map.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    });
    r.parts().2.set_host_shadow_map(Some(view.clone()));
    let options = RenderOptions {
        shadow_map: vat_core::render::ShadowMapSource::Host(ShadowLookup::host(light)),
        ..Default::default()
    };
    let report = r
        .record_host_frame(|_, renderer, encoder, _| {
            let mut crowds = [CrowdDraw { asset: &asset, gpu: &mut gpu, crowd: &mut crowd }];
            let report = renderer.prepare(encoder, &mut crowds, &camera, &options, &[light])?;
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("host shadow pass"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &view,
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
            let formats = vat_wgpu::PassFormats { color: None, ..renderer.pass_formats() };
            renderer.draw_depth(&mut pass, &crowds, 0, formats);
            Ok(report)
        })
        .unwrap();
    assert!(report.draws_views > 0, "{report:?}");
    assert_eq!(
        report.draws_shadow, report.draws_views,
        "the host's shadow view's draws are the shadow draws"
    );
    assert_eq!(report.shadow_view_proj, None, "no built-in shadow pass");
}
