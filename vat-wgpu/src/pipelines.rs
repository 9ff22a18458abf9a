//! The pipeline cache: render pipelines keyed by vat-core's [`PipelineKey`] and the host pass's
//! formats ([`PassFormats`]), compute pipelines by [`ComputeKey`]; fixed state from
//! `vat_core::backend::pipeline` through [`crate::conv`] (the Vulkan twin is vat-vulkan's `pipelines.rs`).

use vat_core::backend::pipeline::{
    FragmentStage, HostShader, PassKind, PipelineKey, ShaderVariantKey, VertexStage, colour_slots,
};

use crate::renderer::StageSet;
use crate::{Renderer, conv};

/// The state of the pass a render pipeline draws in, in this backend's formats (`wgpu::TextureFormat`):
/// see [`vat_core::backend::pipeline::PassFormats`].
pub type PassFormats = vat_core::backend::pipeline::PassFormats<wgpu::TextureFormat>;

/// The state of a host's prepass that [`Renderer::draw_prepass`] draws into, in this backend's
/// formats: see [`vat_core::backend::pipeline::PrepassFormats`].
pub type PrepassFormats = vat_core::backend::pipeline::PrepassFormats<wgpu::TextureFormat>;

pub(crate) use vat_core::backend::{CULL, ComputeKey};

impl Renderer {
    /// Sets the host's own fragment stage for every colour pipeline that draws an asset (see
    /// [`HostShader`]: WGSL appended to vat's shader, its input vat's `VertexOutput`), or with
    /// `None` goes back to vat's `fs_lit`. The module is checked with naga (parse, validation, a
    /// `@fragment` entry point of that name) before wgpu compiles it; pipelines are rebuilt on
    /// next use. The vat-vulkan twin is `Renderer::set_host_shader`.
    ///
    /// # Errors
    /// [`crate::Error::HostShader`] with naga's message; the renderer keeps its previous shader.
    pub fn set_host_shader(&mut self, shader: Option<HostShader>) -> Result<(), crate::Error> {
        let Some(shader) = shader else {
            self.host_shader = None;
            self.render_pipelines.clear();
            return Ok(());
        };
        let source = shader.module_source();
        let module = naga::front::wgsl::parse_str(&source)
            .map_err(|e| crate::Error::HostShader(e.emit_to_string(&source)))?;
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32,
        )
        .validate(&module)
        .map_err(|e| crate::Error::HostShader(e.emit_to_string(&source)))?;
        for entry in shader.entry_points() {
            if !module.entry_points.iter().any(|e| e.name == entry && e.stage == naga::ShaderStage::Fragment)
            {
                return Err(crate::Error::HostShader(format!("the source has no @fragment fn {entry}")));
            }
        }
        let vertex = shader.vertex_entry_point();
        if let Some(entry) = vertex.filter(|v| {
            !module.entry_points.iter().any(|e| e.name == *v && e.stage == naga::ShaderStage::Vertex)
        }) {
            return Err(crate::Error::HostShader(format!("the source has no @vertex fn {entry}")));
        }
        let compiled = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("vat host shader"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        self.host_shader = Some((shader, compiled));
        self.render_pipelines.clear();
        Ok(())
    }

    /// The pipeline constants (WGSL overrides) of a compute pipeline of `variant`.
    fn constants(&self, variant: &ShaderVariantKey) -> [(&'static str, f64); 9] {
        vat_core::backend::pipeline::override_constants(variant, self.config.interpolation, 0)
    }

    /// The compute pipeline of `key`, created on first use.
    pub(crate) fn compute_pipeline(&mut self, key: ComputeKey) -> wgpu::ComputePipeline {
        if let Some(p) = self.compute_pipelines.get(&key) {
            return p.clone();
        }
        let constants = self.constants(&key.variant);
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(key.entry),
            layout: Some(&self.pipeline_layouts[StageSet::Compute as usize]),
            module: &self.module,
            entry_point: Some(key.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        });
        self.compute_pipelines.insert(key, pipeline.clone());
        pipeline
    }

    /// The render pipeline of `key` for a pass of `formats`, created on first use.
    pub(crate) fn render_pipeline(&mut self, key: PipelineKey, formats: PassFormats) -> wgpu::RenderPipeline {
        if let Some(p) = self.render_pipelines.get(&(key, formats)) {
            return p.clone();
        }
        let entry = key.vertex_entry_point();
        let host_stage = key.runs_host_stage(self.host_shader.as_ref().map(|(h, _)| h));
        let constants = key.override_constants_for(self.config.interpolation, host_stage);
        let options = wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() };
        let layout = if !key.binds_asset_and_crowd() {
            &self.frame_only_layout
        } else {
            match key.pass {
                PassKind::Colour | PassKind::Prepass(_) => &self.pipeline_layouts[StageSet::Colour as usize],
                PassKind::Depth => &self.pipeline_layouts[StageSet::Depth as usize],
            }
        };
        let target =
            |format| wgpu::ColorTargetState { format, blend: None, write_mask: wgpu::ColorWrites::ALL };
        let targets: Vec<Option<wgpu::ColorTargetState>> =
            colour_slots(formats.color.map(target), formats.motion.map(target));
        let host = self.host_shader.as_ref();
        let (vertex_module, vertex_entry) = match (key.vertex_stage(host.map(|(h, _)| h)), host) {
            (VertexStage::Host(entry), Some((_, module))) => (module, entry),
            (VertexStage::Host(entry), None) | (VertexStage::Vat(entry), _) => (&self.module, entry),
        };
        let state = key.state_in(&formats.conventions);
        let pipeline = self.device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(entry),
            layout: Some(layout),
            vertex: wgpu::VertexState {
                module: vertex_module,
                entry_point: Some(vertex_entry),
                compilation_options: options.clone(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleList,
                front_face: conv::map_front_face(state.front_face),
                cull_mode: conv::map_cull_mode(state.cull_mode),
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: formats.depth,
                depth_write_enabled: Some(state.depth_write),
                depth_compare: Some(conv::map_compare(state.depth_compare)),
                stencil: wgpu::StencilState::default(),
                bias: conv::map_depth_bias(state.depth_bias),
            }),
            multisample: wgpu::MultisampleState { count: formats.samples, ..Default::default() },
            fragment: key.fragment_stage(self.host_shader.as_ref().map(|(h, _)| h)).map(|stage| {
                let (module, entry) = match (stage, &self.host_shader) {
                    (FragmentStage::Host(entry), Some((_, module))) => (module, entry),
                    (FragmentStage::Host(entry), None) | (FragmentStage::Vat(entry), _) => {
                        (&self.module, entry)
                    }
                };
                wgpu::FragmentState {
                    module,
                    entry_point: Some(entry),
                    compilation_options: options.clone(),
                    targets: &targets,
                }
            }),
            multiview_mask: None,
            cache: None,
        });
        self.render_pipelines.insert((key, formats), pipeline.clone());
        pipeline
    }
}
