//! The host of [`super`] on wgpu: its pipelines, buffers and shadow map on the device of a
//! `vat_wgpu::Offscreen`, and its frame recorded into one encoder around vat's `prepare`,
//! `draw_depth` and `draw`.

use anyhow::{Context as _, Result, anyhow};
use vat_core::container::Asset;
use vat_core::crowd::Crowd;
use vat_core::pipeline::SHADOW_DEPTH_BIAS;
use vat_core::render::CrowdRenderer;
use vat_wgpu::{GpuAsset, GpuCrowd, Offscreen, PassFormats, RendererConfig};
use wgpu::util::DeviceExt as _;

use super::{HOST_SHADER, HostFrame, HostVertex, MSAA_SAMPLES, SHADOW_MAP_SIZE, SIZE, SKY, Scene};

const SHADOW_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The host and the two crowds it draws, on wgpu.
pub struct WgpuHost {
    offscreen: Offscreen,
    scene: Scene,
    assets: Vec<GpuAsset>,
    gpu_crowds: Vec<GpuCrowd>,
    crowds: [Crowd; 2],
    vertices: wgpu::Buffer,
    shadow_view: wgpu::TextureView,
    /// The scene pipelines at 1 and at [`MSAA_SAMPLES`] samples.
    scene_pipelines: [wgpu::RenderPipeline; 2],
    shadow_pipeline: wgpu::RenderPipeline,
    /// Multisampled colour and depth of the MSAA colour pass (the colour resolves into the target).
    msaa: [wgpu::TextureView; 2],
    scene_group: wgpu::BindGroup,
    shadow_group: wgpu::BindGroup,
}

impl WgpuHost {
    /// Opens a headless wgpu device of [`SIZE`] pixels and builds the host's resources and both
    /// crowds (of `assets`, see [`super::assets`]).
    ///
    /// # Errors
    /// No adapter, or an asset that does not upload.
    pub fn new(scene: Scene, assets: &[Vec<u8>; 2]) -> Result<Self> {
        let mut offscreen = Offscreen::new(SIZE, RendererConfig::default())?;
        let mut uploaded = Vec::new();
        for bytes in assets {
            uploaded.push(offscreen.upload(&Asset::parse(bytes)?)?);
        }
        let crowds = super::crowds(assets)?;
        let gpu_crowds = crowds.iter().map(|c| offscreen.create_crowd(c)).collect::<Result<Vec<_>, _>>()?;
        let (device, _, renderer) = offscreen.parts();
        let color_format = renderer
            .pass_formats()
            .color
            .ok_or_else(|| anyhow!("the offscreen target has a colour format"))?;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("host shader"),
            source: wgpu::ShaderSource::Wgsl(HOST_SHADER.into()),
        });
        let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host vertices"),
            contents: bytemuck::cast_slice(&scene.vertices),
            usage: wgpu::BufferUsages::VERTEX,
        });
        let uniforms = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host uniforms"),
            contents: bytemuck::bytes_of(&scene.uniforms()),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let shadow_map = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("host shadow map"),
            size: wgpu::Extent3d {
                width: SHADOW_MAP_SIZE,
                height: SHADOW_MAP_SIZE,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: SHADOW_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let shadow_view = shadow_map.create_view(&wgpu::TextureViewDescriptor::default());
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("host shadow sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            compare: Some(wgpu::CompareFunction::LessEqual),
            ..Default::default()
        });
        let entry =
            |binding, visibility, ty| wgpu::BindGroupLayoutEntry { binding, visibility, ty, count: None };
        let uniform_entry = entry(
            0,
            wgpu::ShaderStages::VERTEX_FRAGMENT,
            wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
        );
        let scene_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("host scene"),
            entries: &[
                uniform_entry,
                entry(
                    1,
                    wgpu::ShaderStages::FRAGMENT,
                    wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Depth,
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                ),
                entry(
                    2,
                    wgpu::ShaderStages::FRAGMENT,
                    wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Comparison),
                ),
            ],
        });
        let shadow_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("host shadow"),
            entries: &[uniform_entry],
        });
        let scene_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("host scene"),
            layout: &scene_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniforms.as_entire_binding() },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(&shadow_view),
                },
                wgpu::BindGroupEntry { binding: 2, resource: wgpu::BindingResource::Sampler(&sampler) },
            ],
        });
        let shadow_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("host shadow"),
            layout: &shadow_layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: uniforms.as_entire_binding() }],
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x3];
        let buffers = [Some(wgpu::VertexBufferLayout {
            array_stride: size_of::<HostVertex>() as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &attributes,
        })];
        let depth_format = renderer.pass_formats().depth;
        let pipeline = |label,
                        layout: &wgpu::BindGroupLayout,
                        entry: &str,
                        fragment: bool,
                        bias: wgpu::DepthBiasState,
                        samples: u32| {
            let format = if fragment { depth_format } else { SHADOW_FORMAT };
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(layout)],
                immediate_size: 0,
            });
            let targets = [Some(wgpu::ColorTargetState {
                format: color_format,
                blend: None,
                write_mask: wgpu::ColorWrites::ALL,
            })];
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    buffers: &buffers,
                },
                primitive: wgpu::PrimitiveState::default(),
                depth_stencil: Some(wgpu::DepthStencilState {
                    format,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Less),
                    stencil: wgpu::StencilState::default(),
                    bias,
                }),
                multisample: wgpu::MultisampleState { count: samples, ..Default::default() },
                fragment: fragment.then(|| wgpu::FragmentState {
                    module: &module,
                    entry_point: Some("fs_scene"),
                    compilation_options: Default::default(),
                    targets: &targets,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let scene_pipelines = [1, MSAA_SAMPLES].map(|samples| {
            pipeline("host scene", &scene_layout, "vs_scene", true, Default::default(), samples)
        });
        let bias = wgpu::DepthBiasState {
            constant: SHADOW_DEPTH_BIAS.constant,
            slope_scale: SHADOW_DEPTH_BIAS.slope_scale,
            clamp: SHADOW_DEPTH_BIAS.clamp,
        };
        let shadow_pipeline = pipeline("host shadow", &shadow_layout, "vs_shadow", false, bias, 1);
        let msaa = [color_format, depth_format].map(|format| {
            device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some("host msaa"),
                    size: wgpu::Extent3d { width: SIZE[0], height: SIZE[1], depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: MSAA_SAMPLES,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                    view_formats: &[],
                })
                .create_view(&wgpu::TextureViewDescriptor::default())
        });
        // The crowd's colour draws sample the host's map.
        renderer.set_host_shadow_map(Some(shadow_view.clone()));
        Ok(Self {
            offscreen,
            scene,
            assets: uploaded,
            gpu_crowds,
            crowds,
            vertices,
            shadow_view,
            scene_pipelines,
            shadow_pipeline,
            msaa,
            scene_group,
            shadow_group,
        })
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> String {
        self.offscreen.adapter_name()
    }

    /// Renders `frame` and reads it back: tightly packed sRGB RGBA8 rows of [`SIZE`], top first.
    /// Returns the pixels and the crowds' bodies drawn (vat's report).
    ///
    /// # Errors
    /// A device failure.
    pub fn render(&mut self, frame: &HostFrame) -> Result<(Vec<u8>, u32)> {
        let (casters, colour) = self.scene.ranges(frame);
        let camera = self.scene.camera;
        let options = self.scene.options(frame.culling);
        let views = [self.scene.light_view_proj];
        let mut draws = super::crowd_draws(&self.assets, &mut self.gpu_crowds, &mut self.crowds);
        let (vertices, shadow_view) = (&self.vertices, &self.shadow_view);
        let msaa = frame.samples > 1;
        let scene_pipeline = &self.scene_pipelines[usize::from(msaa)];
        let shadow_pipeline = &self.shadow_pipeline;
        let msaa_views = &self.msaa;
        let (scene_group, shadow_group) = (&self.scene_group, &self.shadow_group);
        let drawn = self.offscreen.record_host_frame(|_, renderer, encoder, target| {
            // 1. vat's uploads and culling, with the host's sun view as extra view 0.
            let report = renderer.prepare(encoder, &mut draws, &camera, &options, &views)?;
            // 2. The host's shadow pass: its buildings, then the crowds.
            {
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("host shadow pass"),
                    color_attachments: &[],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: shadow_view,
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
                pass.set_pipeline(shadow_pipeline);
                pass.set_bind_group(0, shadow_group, &[]);
                pass.set_vertex_buffer(0, vertices.slice(..));
                for range in &casters {
                    pass.draw(range.clone(), 0..1);
                }
                if frame.crowd_casts {
                    let depth_only = PassFormats { color: None, depth: SHADOW_FORMAT, samples: 1 };
                    renderer.draw_depth(&mut pass, &draws, 0, depth_only);
                }
            }
            // 3. The host's colour pass: its scene, then the crowds, one depth buffer.
            // With MSAA: multisampled colour and depth, the colour resolved into the target.
            let [r, g, b, a] = SKY;
            let (color, resolve, depth) = if msaa {
                (&msaa_views[0], Some(target.color), &msaa_views[1])
            } else {
                (target.color, None, target.depth)
            };
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("host colour pass"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: color,
                    depth_slice: None,
                    resolve_target: resolve,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: depth,
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
            pass.set_pipeline(scene_pipeline);
            pass.set_bind_group(0, scene_group, &[]);
            pass.set_vertex_buffer(0, vertices.slice(..));
            for range in &colour {
                pass.draw(range.clone(), 0..1);
            }
            if frame.crowd {
                let formats = PassFormats { samples: frame.samples, ..renderer.pass_formats() };
                renderer.draw(&mut pass, &draws, formats);
            }
            Ok(report.draws_main)
        })?;
        let pixels = self.offscreen.read_rgba8().context("reading the frame back")?;
        Ok((pixels, drawn))
    }
}
