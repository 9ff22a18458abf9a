//! The pipeline cache: render pipelines keyed by vat-core's [`PipelineKey`] and the host pass's
//! formats ([`PassFormats`]), compute pipelines by [`ComputeKey`]; fixed state from
//! `vat_core::backend::pipeline` through [`crate::conv`]. The Vulkan twin of vat-wgpu's `pipelines.rs`.

use std::ffi::CString;

use ash::vk;
use vat_core::backend::pipeline::{
    FragmentStage, HostShader, PassKind, PipelineKey, ShaderVariantKey, VertexStage, colour_slots,
};

use crate::owned::{Object, Owned};
use crate::renderer::StageSet;
use crate::shader::{ShaderModule, ShaderVariant, entry_point};
use crate::{DeviceError, Error, Renderer, conv};

/// The state of the pass a render pipeline draws in, in this backend's formats (`vk::Format`):
/// see [`vat_core::backend::pipeline::PassFormats`].
pub type PassFormats = vat_core::backend::pipeline::PassFormats<vk::Format>;

/// The state of a host's prepass that [`Renderer::draw_prepass`] draws into, in this backend's
/// formats: see [`vat_core::backend::pipeline::PrepassFormats`].
pub type PrepassFormats = vat_core::backend::pipeline::PrepassFormats<vk::Format>;

pub(crate) use vat_core::backend::{CULL, ComputeKey};

impl Renderer {
    /// Sets the host's own fragment stage for every colour pipeline that draws an asset (see
    /// `vat_core::backend::pipeline::HostShader`: WGSL appended to vat's shader, its input vat's
    /// `VertexOutput`), translated to SPIR-V with naga like vat's own; with `None`, vat's `fs_lit`
    /// again. Pipelines are rebuilt on next use; the replaced ones stay alive until the renderer is
    /// dropped, so command buffers that use them stay valid. The vat-wgpu twin is
    /// `Renderer::set_host_shader`.
    ///
    /// # Errors
    /// [`Error::HostShader`] with naga's message; the renderer keeps its previous shader.
    pub fn set_host_shader(&mut self, shader: Option<HostShader>) -> Result<(), Error> {
        let Some(shader) = shader else {
            self.host_shader = None;
            self.render_pipelines.clear();
            return Ok(());
        };
        let module = ShaderModule::from_source(&shader.module_source())
            .map_err(|e| Error::HostShader(e.to_string()))?;
        for entry in shader.entry_points() {
            if !module.has_fragment_entry_point(entry) {
                return Err(Error::HostShader(format!("the source has no @fragment fn {entry}")));
            }
        }
        if let Some(entry) = shader.vertex_entry_point().filter(|v| !module.has_vertex_entry_point(v)) {
            return Err(Error::HostShader(format!("the source has no @vertex fn {entry}")));
        }
        self.host_shader = Some((shader, module));
        self.render_pipelines.clear();
        Ok(())
    }

    /// The shader variant of `key` with the renderer's interpolation.
    fn variant(&self, key: &ShaderVariantKey) -> ShaderVariant {
        ShaderVariant {
            interpolation: self.config.interpolation,
            cross_fade: key.cross_fade,
            influences: key.influences_override(),
            vertex_format: key.vertex_format,
            motion_vectors: key.motion_vectors,
            program: 0,
            materials: key.materials,
            light_model: key.light_model,
            impostor_views: key.impostor_views,
        }
    }

    /// A shader module of `entry` in `variant`, recorded in `scope` (destroyed with it).
    fn shader_module(
        &self,
        scope: &mut Owned,
        entry: &'static str,
        variant: &ShaderVariant,
    ) -> Result<vk::ShaderModule, Error> {
        let ep = entry_point(entry).ok_or(DeviceError::UnknownEntryPoint(entry))?;
        let words = self.shader.spirv(ep, variant)?;
        self.module_from_words(scope, &words)
    }

    /// A shader module of SPIR-V `words` (from naga's writer), recorded in `scope`.
    fn module_from_words(&self, scope: &mut Owned, words: &[u32]) -> Result<vk::ShaderModule, Error> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        // SAFETY: valid SPIR-V from naga's writer, on a live device.
        let module = unsafe { self.ctx.device.create_shader_module(&info, None) }
            .map_err(DeviceError::vk("create shader module"))?;
        scope.push(Object::ShaderModule(module));
        Ok(module)
    }

    /// The compute pipeline of `key`, created on first use.
    pub(crate) fn compute_pipeline(&mut self, key: ComputeKey) -> Result<vk::Pipeline, Error> {
        if let Some(&p) = self.compute_pipelines.get(&key) {
            return Ok(p);
        }
        let layout = self.pipeline_layouts[StageSet::Compute as usize];
        let pipeline = self.create_compute_pipeline(key.entry, &self.variant(&key.variant), layout)?;
        self.compute_pipelines.insert(key, pipeline);
        Ok(pipeline)
    }

    /// A compute pipeline of `entry` in `variant` with `layout`, destroyed with the renderer.
    pub(crate) fn create_compute_pipeline(
        &mut self,
        entry: &'static str,
        variant: &ShaderVariant,
        layout: vk::PipelineLayout,
    ) -> Result<vk::Pipeline, Error> {
        let mut scope = Owned::new(&self.ctx);
        let module = self.shader_module(&mut scope, entry, variant)?;
        let name = CString::new(entry).map_err(|_| DeviceError::UnknownEntryPoint(entry))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&name);
        let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        // SAFETY: valid create info; module and layout are live.
        let pipeline =
            unsafe { self.ctx.device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) }
                .map_err(|(_, e)| DeviceError::from_vk("create compute pipeline", e))?[0];
        self.owned.push(Object::Pipeline(pipeline));
        Ok(pipeline) // `scope` destroys the shader module.
    }

    /// The render pipeline of `key` for a pass of `formats`, created on first use.
    pub(crate) fn render_pipeline(
        &mut self,
        key: PipelineKey,
        formats: PassFormats,
    ) -> Result<vk::Pipeline, Error> {
        if let Some(&p) = self.render_pipelines.get(&(key, formats)) {
            return Ok(p);
        }
        let mut variant = ShaderVariant { program: key.program_code(), ..self.variant(&key.variant) };
        if key.runs_host_stage(self.host_shader.as_ref().map(|(h, _)| h)) {
            // A host's stage chooses the shading path at run time (PipelineKey::override_constants_for).
            variant.materials = None;
        }
        let mut scope = Owned::new(&self.ctx);
        let (vertex, vs_name) =
            match (key.vertex_stage(self.host_shader.as_ref().map(|(h, _)| h)), &self.host_shader) {
                (VertexStage::Host(vs), Some((_, host))) => {
                    let words = host.spirv_of(vs, vat_core::backend::gpu::ShaderStage::Vertex, &variant)?;
                    let name = CString::new(vs)
                        .map_err(|_| Error::HostShader(format!("entry point {vs:?} has a NUL")))?;
                    (self.module_from_words(&mut scope, &words)?, name)
                }
                (VertexStage::Host(vs), None) => {
                    return Err(Error::HostShader(format!("{vs}: no host shader is set")));
                }
                (VertexStage::Vat(vs), _) => {
                    let name = CString::new(vs).map_err(|_| DeviceError::UnknownEntryPoint(vs))?;
                    (self.shader_module(&mut scope, vs, &variant)?, name)
                }
            };
        let stage = key.fragment_stage(self.host_shader.as_ref().map(|(h, _)| h));
        let fs_name = match stage {
            Some(FragmentStage::Vat(fs)) => {
                Some(CString::new(fs).map_err(|_| DeviceError::UnknownEntryPoint(fs))?)
            }
            Some(FragmentStage::Host(fs)) => Some(
                CString::new(fs).map_err(|_| Error::HostShader(format!("entry point {fs:?} has a NUL")))?,
            ),
            None => None,
        };
        let mut stages = vec![
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vertex)
                .name(&vs_name),
        ];
        if let (Some(stage), Some(fs_name)) = (stage, &fs_name) {
            let fragment = match (stage, &self.host_shader) {
                (FragmentStage::Host(fs), Some((_, host))) => {
                    let words = host.spirv_of(fs, vat_core::backend::gpu::ShaderStage::Fragment, &variant)?;
                    self.module_from_words(&mut scope, &words)?
                }
                (FragmentStage::Vat(fs), _) => self.shader_module(&mut scope, fs, &variant)?,
                (FragmentStage::Host(fs), None) => {
                    return Err(Error::HostShader(format!("{fs}: no host shader is set")));
                }
            };
            stages.push(
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fragment)
                    .name(fs_name),
            );
        }
        let layout = if !key.binds_asset_and_crowd() {
            self.frame_only_layout
        } else {
            match key.pass {
                PassKind::Colour | PassKind::Prepass(_) => self.pipeline_layouts[StageSet::Colour as usize],
                PassKind::Depth => self.pipeline_layouts[StageSet::Depth as usize],
            }
        };
        let state = key.state_in(&formats.conventions);
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let bias = state.depth_bias;
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(conv::map_cull_mode(state.cull_mode))
            .front_face(conv::map_front_face(state.front_face))
            .line_width(1.0)
            .depth_bias_enable(bias.is_enabled())
            .depth_bias_constant_factor(bias.constant as f32)
            .depth_bias_slope_factor(bias.slope_scale)
            .depth_bias_clamp(bias.clamp);
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(conv::map_sample_count(formats.samples));
        let depth = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_write_enable(state.depth_write)
            .depth_compare_op(conv::map_compare(state.depth_compare));
        // An empty slot (a motion-only prepass's location 0) is `UNDEFINED`: no attachment there.
        let color_formats: Vec<vk::Format> = colour_slots(formats.color, formats.motion)
            .into_iter()
            .map(|f| f.unwrap_or(vk::Format::UNDEFINED))
            .collect();
        // Nothing is written to an empty slot (`independentBlend`: the write masks differ).
        let blend_attachments: Vec<_> = color_formats
            .iter()
            .map(|&f| {
                let mask = if f == vk::Format::UNDEFINED {
                    vk::ColorComponentFlags::empty()
                } else {
                    vk::ColorComponentFlags::RGBA
                };
                vk::PipelineColorBlendAttachmentState::default().blend_enable(false).color_write_mask(mask)
            })
            .collect();
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend_attachments);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let mut rendering = vk::PipelineRenderingCreateInfo::default()
            .color_attachment_formats(&color_formats)
            .depth_attachment_format(formats.depth);
        let info = [vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&input_assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .depth_stencil_state(&depth)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(layout)
            .push_next(&mut rendering)];
        // SAFETY: valid create info (dynamic rendering, enabled on every context's device); modules
        // and layout are live.
        let pipeline =
            unsafe { self.ctx.device.create_graphics_pipelines(vk::PipelineCache::null(), &info, None) }
                .map_err(|(_, e)| DeviceError::from_vk("create graphics pipeline", e))?[0];
        self.owned.push(Object::Pipeline(pipeline));
        self.render_pipelines.insert((key, formats), pipeline);
        Ok(pipeline) // `scope` destroys the shader modules.
    }
}
