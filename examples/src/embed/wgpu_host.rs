//! The host of [`super`] on wgpu: its pipelines, buffers and shadow map ([`SceneGpu`]) on a wgpu
//! device, and its frame recorded into one encoder around vat's `prepare`, `draw_depth` and `draw`
//! ([`WgpuHost`], on a `vat_wgpu::Offscreen`; `vat demo` records the same passes into its
//! window's surface texture).

use anyhow::{Context as _, Result};
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::pipeline::SHADOW_DEPTH_BIAS;
use vat_core::container::Asset;
use vat_core::crowd::Crowd;
use vat_core::render::{CrowdRenderer, FrameReport};
use vat_wgpu::{Offscreen, PassFormats, Renderer, RendererConfig};
use wgpu::util::DeviceExt as _;

use super::{
    HostCrowds, HostFrame, HostVertex, MSAA_SAMPLES, SHADOW_MAP_SIZE, SIZE, Scene, VertexRange, host_shader,
};

/// The host's shadow map format.
pub const SHADOW_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The host's GPU side of a [`Scene`]: its vertex and uniform buffers, its shadow map, its
/// pipelines (made for each colour pass's formats on first use) and bind groups. It records the
/// host's two passes; vat's draws go inside them through the callbacks.
pub struct SceneGpu {
    /// The device it was made on (pipelines are made on first use).
    device: wgpu::Device,
    module: wgpu::ShaderModule,
    vertices: wgpu::Buffer,
    uniforms: wgpu::Buffer,
    shadow_attachment: wgpu::TextureView,
    shadow_view: wgpu::TextureView,
    scene_layout: wgpu::PipelineLayout,
    scene_pipelines: Vec<(PassFormats, wgpu::RenderPipeline)>,
    shadow_pipeline: wgpu::RenderPipeline,
    scene_group: wgpu::BindGroup,
    shadow_group: wgpu::BindGroup,
}

/// The attachments of the host's colour pass.
pub struct ColourTarget<'a> {
    /// The colour attachment (multisampled when `formats.samples > 1`).
    pub color: &'a wgpu::TextureView,
    /// Where a multisampled colour resolves to.
    pub resolve: Option<&'a wgpu::TextureView>,
    /// The depth attachment (shared by the host's draws and vat's).
    pub depth: &'a wgpu::TextureView,
    /// Their formats and sample count.
    pub formats: PassFormats,
}

fn vertex_layout() -> [wgpu::VertexAttribute; 3] {
    wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x3]
}

/// The host's shadow map: its attachment view, its view sampled as a one-layer array, and its
/// comparison sampler.
fn shadow_map(device: &wgpu::Device) -> (wgpu::TextureView, wgpu::TextureView, wgpu::Sampler) {
    let shadow_map = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("host shadow map"),
        size: wgpu::Extent3d { width: SHADOW_MAP_SIZE, height: SHADOW_MAP_SIZE, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: SHADOW_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    let shadow_attachment = shadow_map.create_view(&wgpu::TextureViewDescriptor::default());
    // Sampled as a one-layer array: vat's lookup (SHADOW_WGSL) takes cascade layers.
    let shadow_view = shadow_map.create_view(&wgpu::TextureViewDescriptor {
        label: Some("host shadow map (array)"),
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    });
    let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("host shadow sampler"),
        mag_filter: wgpu::FilterMode::Linear,
        min_filter: wgpu::FilterMode::Linear,
        compare: Some(wgpu::CompareFunction::LessEqual),
        ..Default::default()
    });
    (shadow_attachment, shadow_view, sampler)
}

/// The layouts of the host's scene group (uniforms, shadow map, sampler) and shadow group (uniforms).
fn group_layouts(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::BindGroupLayout) {
    let entry = |binding, visibility, ty| wgpu::BindGroupLayoutEntry { binding, visibility, ty, count: None };
    let uniform_entry = entry(
        0,
        wgpu::ShaderStages::VERTEX_FRAGMENT,
        wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
    );
    let scene_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("host scene"),
        entries: &[
            uniform_entry,
            entry(
                1,
                wgpu::ShaderStages::FRAGMENT,
                wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Depth,
                    view_dimension: wgpu::TextureViewDimension::D2Array,
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
    let shadow_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("host shadow"),
        entries: &[uniform_entry],
    });
    (scene_group_layout, shadow_group_layout)
}

/// The host's shadow pipeline: its depth-only `vs_shadow` with vat's shadow depth bias.
fn shadow_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: &wgpu::PipelineLayout,
) -> wgpu::RenderPipeline {
    let attributes = vertex_layout();
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("host shadow"),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some("vs_shadow"),
            compilation_options: Default::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: size_of::<HostVertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: SHADOW_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState {
                constant: SHADOW_DEPTH_BIAS.constant,
                slope_scale: SHADOW_DEPTH_BIAS.slope_scale,
                clamp: SHADOW_DEPTH_BIAS.clamp,
            },
        }),
        multisample: wgpu::MultisampleState::default(),
        fragment: None,
        multiview_mask: None,
        cache: None,
    })
}

impl SceneGpu {
    /// The host's resources for `scene` on `device` (its uniforms written from `scene`).
    pub fn new(device: &wgpu::Device, scene: &Scene) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("host shader"),
            source: wgpu::ShaderSource::Wgsl(host_shader().into()),
        });
        // At least one vertex: a ground-only scene may draw nothing, but a buffer is never empty.
        let mut vertices = scene.vertices.clone();
        if vertices.is_empty() {
            vertices.push(HostVertex { position: [0.0; 3], normal: [0.0, 1.0, 0.0], color: [0.0; 3] });
        }
        let vertices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host vertices"),
            contents: bytemuck::cast_slice(&vertices),
            usage: wgpu::BufferUsages::VERTEX,
        });
        let uniforms = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("host uniforms"),
            contents: bytemuck::bytes_of(&scene.uniforms()),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        let (shadow_attachment, shadow_view, sampler) = shadow_map(device);
        let (scene_group_layout, shadow_group_layout) = group_layouts(device);
        let scene_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("host scene"),
            layout: &scene_group_layout,
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
            layout: &shadow_group_layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: uniforms.as_entire_binding() }],
        });
        let layout = |label, group: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(group)],
                immediate_size: 0,
            })
        };
        let scene_layout = layout("host scene", &scene_group_layout);
        let shadow_layout = layout("host shadow", &shadow_group_layout);
        let shadow_pipeline = shadow_pipeline(device, &module, &shadow_layout);
        Self {
            device: device.clone(),
            module,
            vertices,
            uniforms,
            shadow_attachment,
            shadow_view,
            scene_layout,
            scene_pipelines: Vec::new(),
            shadow_pipeline,
            scene_group,
            shadow_group,
        }
    }

    /// The host's shadow map as a one-layer array (give it to vat with
    /// `Renderer::set_host_shadow_map`).
    pub fn shadow_view(&self) -> &wgpu::TextureView {
        &self.shadow_view
    }

    /// Writes `scene`'s uniforms (camera, sun, shadow matrix) for the next submitted frame.
    pub fn write_uniforms(&self, queue: &wgpu::Queue, scene: &Scene) {
        queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&scene.uniforms()));
    }

    /// The scene pipeline of a colour pass of `formats` (made on first use).
    fn scene_pipeline(&mut self, formats: PassFormats) -> usize {
        if let Some(i) = self.scene_pipelines.iter().position(|(f, _)| *f == formats) {
            return i;
        }
        let attributes = vertex_layout();
        let targets = [formats.color.map(|format| wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        let pipeline = self.device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("host scene"),
            layout: Some(&self.scene_layout),
            vertex: wgpu::VertexState {
                module: &self.module,
                entry_point: Some("vs_scene"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: size_of::<HostVertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &attributes,
                })],
            },
            primitive: wgpu::PrimitiveState::default(),
            depth_stencil: Some(wgpu::DepthStencilState {
                format: formats.depth,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: wgpu::StencilState::default(),
                bias: Default::default(),
            }),
            multisample: wgpu::MultisampleState { count: formats.samples, ..Default::default() },
            fragment: Some(wgpu::FragmentState {
                module: &self.module,
                entry_point: Some("fs_scene"),
                compilation_options: Default::default(),
                targets: &targets,
            }),
            multiview_mask: None,
            cache: None,
        });
        self.scene_pipelines.push((formats, pipeline));
        self.scene_pipelines.len() - 1
    }

    /// Records the host's shadow pass into `encoder`: the map cleared to 1, the `casters` ranges of
    /// its vertices, then `crowd` (vat's `draw_depth` of the host's view, in a depth-only pass of
    /// the given formats).
    pub fn record_shadow_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        casters: &[VertexRange],
        crowd: impl FnOnce(&mut wgpu::RenderPass<'_>, PassFormats),
    ) {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("host shadow pass"),
            color_attachments: &[],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.shadow_attachment,
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
        pass.set_pipeline(&self.shadow_pipeline);
        pass.set_bind_group(0, &self.shadow_group, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        for range in casters {
            pass.draw(range.clone(), 0..1);
        }
        crowd(
            &mut pass,
            PassFormats {
                conventions: vat_wgpu::PassConventions::STANDARD,
                color: None,
                motion: None,
                depth: SHADOW_FORMAT,
                samples: 1,
            },
        );
    }

    /// Records the host's colour pass into `encoder` over `target`: colour cleared to `sky`,
    /// depth to 1, the `colour` ranges of its vertices lit and shadowed by its map, then `crowd`
    /// (vat's `draw`, sharing the depth buffer).
    pub fn record_colour_pass(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        target: &ColourTarget<'_>,
        sky: [f64; 4],
        colour: &[VertexRange],
        crowd: impl FnOnce(&mut wgpu::RenderPass<'_>, PassFormats),
    ) {
        let pipeline = self.scene_pipeline(target.formats);
        let [r, g, b, a] = sky;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("host colour pass"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target.color,
                depth_slice: None,
                resolve_target: target.resolve,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }),
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
        pass.set_pipeline(&self.scene_pipelines[pipeline].1);
        pass.set_bind_group(0, &self.scene_group, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        for range in colour {
            pass.draw(range.clone(), 0..1);
        }
        crowd(&mut pass, target.formats);
    }

    /// Records a whole host frame into `encoder` with `renderer`: `prepare` of `draws` (the
    /// scene's sun view as extra view 0), the shadow pass, the colour pass over `target`, each
    /// part as `frame` says. Returns vat's report.
    ///
    /// # Errors
    /// Those of `Renderer::prepare`.
    pub fn record_frame(
        &mut self,
        renderer: &mut Renderer,
        encoder: &mut wgpu::CommandEncoder,
        draws: &mut [vat_wgpu::CrowdDraw<'_>],
        scene: &Scene,
        frame: &HostFrame,
        target: &ColourTarget<'_>,
    ) -> Result<FrameReport, vat_wgpu::Error> {
        let (casters, colour) = scene.ranges(frame);
        let options = scene.options(frame.culling);
        // The sun's view only when something casts into the map (culling it costs CPU or GPU time).
        let views = if frame.crowd_casts && options.shadows { &[scene.light_view_proj][..] } else { &[] };
        let report = renderer.prepare(encoder, draws, &scene.camera, &options, views)?;
        self.record_shadow_pass(encoder, &casters, |pass, formats| {
            if frame.crowd_casts && options.shadows {
                renderer.draw_depth(pass, draws, 0, formats);
            }
        });
        self.record_colour_pass(encoder, target, scene.sky, &colour, |pass, formats| {
            if frame.crowd {
                renderer.draw(pass, draws, formats);
            }
        });
        Ok(report)
    }
}

/// A host on a `vat_wgpu::Offscreen`: its scene, the crowds it draws, and their GPU copies.
pub struct WgpuHost {
    offscreen: Offscreen,
    scene: Scene,
    gpu: SceneGpu,
    crowds: HostCrowds<Offscreen>,
    /// Multisampled colour and depth of the MSAA colour pass (made on first use).
    msaa: Option<[wgpu::TextureView; 2]>,
}

impl WgpuHost {
    /// The example's host: a headless wgpu device of [`SIZE`] pixels, `scene`, and the two
    /// crowds of [`super::crowds`] (of `assets`, see [`super::assets`]).
    ///
    /// # Errors
    /// No adapter, or an asset that does not upload.
    pub fn example(scene: Scene, assets: &[Vec<u8>; 2]) -> Result<Self> {
        let parsed = assets.iter().map(|b| Asset::parse(b)).collect::<Result<Vec<_>, _>>()?;
        let offscreen = Offscreen::new(SIZE, RendererConfig::default())?;
        Self::new(offscreen, scene, &parsed, super::crowds(assets)?.into())
    }

    /// A host on `offscreen` drawing `scene` and `crowds` (crowd `i` of asset `i`).
    ///
    /// # Errors
    /// An asset that does not upload, or a crowd whose GPU state cannot be made.
    pub fn new(
        mut offscreen: Offscreen,
        scene: Scene,
        assets: &[Asset<'_>],
        crowds: Vec<Crowd>,
    ) -> Result<Self> {
        let crowds = HostCrowds::new(&mut offscreen, assets, crowds)?;
        let (device, _, renderer) = offscreen.parts();
        let gpu = SceneGpu::new(device, &scene);
        // The crowd's colour draws sample the host's map.
        renderer.set_host_shadow_map(Some(gpu.shadow_view().clone()));
        Ok(Self { offscreen, scene, gpu, crowds, msaa: None })
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> String {
        self.offscreen.adapter_name()
    }

    /// The crowds drawn (move, spawn or advance them between frames).
    pub fn crowds_mut(&mut self) -> &mut [Crowd] {
        &mut self.crowds.crowds
    }

    /// The scene (move its camera with [`Scene::follow`] between frames).
    pub fn scene_mut(&mut self) -> &mut Scene {
        &mut self.scene
    }

    /// The GPU-culling counts of each crowd's last frame that has arrived (see
    /// `CrowdRenderer::gpu_counts`).
    ///
    /// # Errors
    /// A device failure.
    pub fn gpu_counts(&mut self) -> Result<Vec<Option<GpuCountsResult>>> {
        self.crowds.gpu_counts(&mut self.offscreen)
    }

    /// Renders `frame` and reads it back: tightly packed sRGB RGBA8 rows of the offscreen's size,
    /// top first, and vat's report.
    ///
    /// # Errors
    /// A device failure.
    pub fn render(&mut self, frame: &HostFrame) -> Result<(Vec<u8>, FrameReport)> {
        let size = self.offscreen.size();
        let (device, queue, renderer) = self.offscreen.parts();
        self.gpu.write_uniforms(queue, &self.scene);
        let formats = PassFormats { samples: frame.samples, ..renderer.pass_formats() };
        if frame.samples > 1 && self.msaa.is_none() {
            let color = formats.color.context("the offscreen target has a colour format")?;
            self.msaa = Some([color, formats.depth].map(|format| {
                device
                    .create_texture(&wgpu::TextureDescriptor {
                        label: Some("host msaa"),
                        size: wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
                        mip_level_count: 1,
                        sample_count: MSAA_SAMPLES,
                        dimension: wgpu::TextureDimension::D2,
                        format,
                        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                        view_formats: &[],
                    })
                    .create_view(&wgpu::TextureViewDescriptor::default())
            }));
        }
        let mut draws = self.crowds.draws();
        let (gpu, scene, msaa) = (&mut self.gpu, &self.scene, &self.msaa);
        let report = self.offscreen.record_host_frame(|_, renderer, encoder, target| {
            // With MSAA: multisampled colour and depth, the colour resolved into the target.
            let target = match msaa {
                Some([color, depth]) if frame.samples > 1 => {
                    ColourTarget { color, resolve: Some(target.color), depth, formats }
                }
                _ => ColourTarget { color: target.color, resolve: None, depth: target.depth, formats },
            };
            gpu.record_frame(renderer, encoder, &mut draws, scene, frame, &target)
        })?;
        let pixels = self.offscreen.read_rgba8().context("reading the frame back")?;
        Ok((pixels, report))
    }
}
