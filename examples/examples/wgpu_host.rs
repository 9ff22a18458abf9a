//! vat inside a wgpu renderer of one's own: the host opens its device with vat's requirements, owns
//! its pass and its reverse-Z depth, draws its own object (a wall in front of part of the crowd) and
//! the crowd in the same pass. Writes `wgpu_host.png`.
//!
//! `cargo run --release -p vat-examples --example wgpu_host`

use anyhow::Result;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_wgpu::{CrowdDraw, HeadlessTarget, PassConventions, RenderOptions, Renderer, RendererConfig};

/// The host's own object: a grey wall over the left third of the screen, 5 m away (reverse-Z depth
/// near / distance = 0.1 / 5).
const WALL: &str = "
@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let p = array(vec2(-1.0, -1.0), vec2(-0.35, -1.0), vec2(-1.0, 1.0), vec2(-0.35, 1.0));
    return vec4(p[array(0u, 1u, 2u, 2u, 1u, 3u)[i]], 0.02, 1.0);
}
@fragment fn fs() -> @location(0) vec4<f32> { return vec4(0.3, 0.3, 0.32, 1.0); }";

fn main() -> Result<()> {
    // 1. The host's device, with what vat needs merged into the host's own request.
    let instance = vat_wgpu::vat_instance();
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: vat_wgpu::required_features(),
        required_limits: wgpu::Limits::default().or_better_values_from(&vat_wgpu::required_limits()),
        ..Default::default()
    }))?;

    // 2. vat: a renderer for the host's passes (reverse-Z), an asset, a crowd.
    let config = RendererConfig { conventions: PassConventions::REVERSE_Z, ..Default::default() };
    let mut renderer = Renderer::new(&device, &queue, config)?;
    let bytes = vat_examples::support::asset_bytes(None)?; // the built-in humanoid, baked in memory
    let asset = Asset::parse(&bytes)?;
    let gpu_asset = renderer.upload(&asset)?;
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, CrowdConfig::default());
    for i in 0..12 {
        crowd.spawn([(i % 6) as f32 * 1.1 - 2.75, 0.0, -((i / 6) as f32) * 1.5], 0.3 * i as f32, i % 3);
    }
    crowd.advance(0.5);
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;

    // 3. The host's frame: its camera (reverse-Z, infinite far plane), its pass, its object, the crowd.
    let size = [640, 360];
    let camera = Camera::look_at_reverse_z([0.0, 1.6, 7.0], [0.0, 0.9, 0.0], 0.8, 640.0 / 360.0, 0.1)
        .with_viewport(size[1], 0.8);
    let target = HeadlessTarget::new(&device, size, config)?; // any colour + depth textures will do
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("wall"),
        source: wgpu::ShaderSource::Wgsl(WALL.into()),
    });
    let wall = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("wall"),
        layout: None,
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: None,
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: Default::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: config.depth_format,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::GreaterEqual),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: None,
            compilation_options: Default::default(),
            targets: &[Some(config.color_format.into())],
        }),
        multiview_mask: None,
        cache: None,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let mut crowds = [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
    let report = renderer.prepare(&mut encoder, &mut crowds, &camera, &RenderOptions::default(), &[])?;
    {
        let t = target.target();
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: t.color,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::WHITE),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: t.depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(0.0),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            ..Default::default()
        });
        pass.set_pipeline(&wall);
        pass.draw(0..6, 0..1);
        renderer.draw(&mut pass, &crowds, renderer.pass_formats());
    }
    queue.submit([encoder.finish()]);
    let rgba = target.read_rgba8(&device, &queue)?;
    vat_examples::support::save_png(std::path::Path::new("wgpu_host.png"), size, &rgba)?;
    println!(
        "{} characters and the host's wall -> wgpu_host.png ({} draws)",
        crowds[0].crowd.count(),
        report.draws_main
    );
    Ok(())
}
