//! vat-core's WGSL ([`vat_core::backend::gpu::SHADER_SOURCE`], the same text wgpu compiles) translated to
//! SPIR-V by naga: parse, validate, resolve the `override` constants of one variant
//! (`naga::back::pipeline_constants::process_overrides`), write one entry point
//! (`naga::back::spv::write_vec`). There is no second shader.
//!
//! Overrides are resolved at translation time rather than emitted as SPIR-V specialization constants:
//! naga 30's SPIR-V writer refuses a module that still holds overrides (`Error::Override`: it writes
//! no specialization constants), and resolving them first lets naga's
//! constant evaluator fold the variant's branches (`VERTEX_FORMAT`, `INTERPOLATION`, ...) exactly as
//! wgpu does for its own pipelines, which keeps the two backends' decode bit-identical. The cost is one
//! SPIR-V module per variant (pipeline key), created once and cached with its pipeline.

use naga::back::spv;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use vat_core::backend::gpu::{self, EntryPoint, ShaderStage};
use vat_core::backend::pipeline::{ImpostorViews, ShaderVariantKey};
use vat_core::format::encoding::VertexFormat;
use vat_core::playback::Interpolation;

/// Why the shader could not be translated. Any of these is a bug in vat-core's WGSL or in this
/// crate, not something a caller can cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShaderError {
    /// naga could not parse the WGSL.
    #[error("naga could not parse vat.wgsl: {0}")]
    Parse(String),
    /// naga's validator rejected the module (before or after the overrides were resolved).
    #[error("naga rejected vat.wgsl: {0}")]
    Validate(String),
    /// The override constants of the variant could not be applied.
    #[error("could not apply the override constants: {0}")]
    Overrides(String),
    /// The SPIR-V writer failed.
    #[error("naga could not write SPIR-V for {entry}: {message}")]
    Write {
        /// The entry point.
        entry: String,
        /// naga's message.
        message: String,
    },
}

/// The values of the WGSL `override` constants of one pipeline (the same ones vat-wgpu passes as
/// pipeline constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShaderVariant {
    /// [`gpu::OVERRIDE_INTERPOLATION`].
    pub interpolation: Interpolation,
    /// [`gpu::OVERRIDE_CROSS_FADE`]: decode and blend clip B of a running fade.
    pub cross_fade: bool,
    /// [`gpu::OVERRIDE_INFLUENCES`]: 4 or 8 (anything else is taken as 4, as vat-wgpu does).
    pub influences: u32,
    /// [`gpu::OVERRIDE_VERTEX_FORMAT`]: the asset's vertex format (its [`gpu::vertex_format_code`]).
    pub vertex_format: VertexFormat,
    /// [`gpu::OVERRIDE_MOTION_VECTORS`]: the colour vertex stages decode the previous frame too.
    pub motion_vectors: bool,
    /// [`gpu::OVERRIDE_PROGRAM`]: the render pipeline's `PipelineKey::program_code` (0 for compute).
    pub program: u32,
    /// [`gpu::OVERRIDE_MATERIALS`]: the shading path (`ShaderVariantKey::materials`; `None`
    /// chooses at run time).
    pub materials: Option<bool>,
    /// [`gpu::OVERRIDE_LIGHT_MODEL`]: the light model's code (`ShaderVariantKey::light_model`;
    /// `None` reads the frame's).
    pub light_model: Option<u32>,
    /// [`gpu::OVERRIDE_IMPOSTOR_VIEWS`]: how many views an impostor card pipeline reads
    /// (`ShaderVariantKey::impostor_views`).
    pub impostor_views: ImpostorViews,
}

impl Default for ShaderVariant {
    /// The WGSL defaults: linear, cross-fade on, 4 influences, Packed64.
    fn default() -> Self {
        Self {
            interpolation: Interpolation::Linear,
            cross_fade: true,
            influences: 4,
            vertex_format: VertexFormat::Packed64,
            motion_vectors: false,
            program: 0,
            materials: None,
            light_model: None,
            impostor_views: ImpostorViews::PerCard,
        }
    }
}

impl ShaderVariant {
    /// The pipeline constants naga resolves, by WGSL name
    /// (`vat_core::backend::pipeline::ShaderVariantKey::override_constants`, as vat-wgpu passes them).
    pub fn constants(&self) -> naga::back::PipelineConstants {
        let key = ShaderVariantKey {
            cross_fade: self.cross_fade,
            influences: self.influences,
            vertex_format: self.vertex_format,
            double_sided: false,
            motion_vectors: self.motion_vectors,
            materials: self.materials,
            light_model: self.light_model,
            impostor_views: self.impostor_views,
        };
        vat_core::backend::pipeline::override_constants(&key, self.interpolation, self.program)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }
}

/// The parsed and validated vat shader, ready to write SPIR-V for any entry point and variant.
#[derive(Debug)]
pub struct ShaderModule {
    module: naga::Module,
    info: ModuleInfo,
}

/// The validator capabilities the shader needs (the same as vat-core's naga tests use).
fn capabilities() -> Capabilities {
    Capabilities::SHADER_FLOAT16_IN_FLOAT32
}

fn naga_stage(stage: ShaderStage) -> naga::ShaderStage {
    match stage {
        ShaderStage::Vertex => naga::ShaderStage::Vertex,
        ShaderStage::Fragment => naga::ShaderStage::Fragment,
        ShaderStage::Compute => naga::ShaderStage::Compute,
    }
}

impl ShaderModule {
    /// Parses and validates [`gpu::SHADER_SOURCE`].
    ///
    /// # Errors
    /// [`ShaderError::Parse`] or [`ShaderError::Validate`].
    pub fn new() -> Result<Self, ShaderError> {
        Self::from_source(gpu::SHADER_SOURCE)
    }

    /// Parses and validates `source` (a host shader's module:
    /// `vat_core::backend::pipeline::HostShader::module_source`).
    ///
    /// # Errors
    /// [`ShaderError::Parse`] or [`ShaderError::Validate`].
    pub fn from_source(source: &str) -> Result<Self, ShaderError> {
        let module =
            naga::front::wgsl::parse_str(source).map_err(|e| ShaderError::Parse(e.emit_to_string(source)))?;
        let info = Validator::new(ValidationFlags::all(), capabilities())
            .validate(&module)
            .map_err(|e| ShaderError::Validate(e.emit_to_string(source)))?;
        Ok(Self { module, info })
    }

    /// Whether the module has a `@fragment` entry point `name`.
    pub fn has_fragment_entry_point(&self, name: &str) -> bool {
        self.module.entry_points.iter().any(|e| e.name == name && e.stage == naga::ShaderStage::Fragment)
    }

    /// Whether the module has a `@vertex` entry point `name`.
    pub fn has_vertex_entry_point(&self, name: &str) -> bool {
        self.module.entry_points.iter().any(|e| e.name == name && e.stage == naga::ShaderStage::Vertex)
    }

    /// SPIR-V words of `entry` with the overrides of `variant`: SPIR-V 1.6 (Vulkan 1.3, as wgpu-hal
    /// writes on such devices), no debug info, no coordinate-space adjustment (wgpu-hal flips Y with
    /// the viewport instead), bounds-check policy Restrict everywhere, descriptor set = WGSL `@group`
    /// and binding = `@binding` one to one.
    ///
    /// # Errors
    /// [`ShaderError::Overrides`] or [`ShaderError::Write`].
    pub fn spirv(&self, entry: &EntryPoint, variant: &ShaderVariant) -> Result<Vec<u32>, ShaderError> {
        self.spirv_of(entry.name, entry.stage, variant)
    }

    /// [`spirv`](Self::spirv) of the entry point `name` of `stage` (one of a host shader's).
    ///
    /// # Errors
    /// As [`spirv`](Self::spirv).
    pub fn spirv_of(
        &self,
        name: &str,
        stage: ShaderStage,
        variant: &ShaderVariant,
    ) -> Result<Vec<u32>, ShaderError> {
        let stage = naga_stage(stage);
        let (module, info) = naga::back::pipeline_constants::process_overrides(
            &self.module,
            &self.info,
            Some((stage, name)),
            &variant.constants(),
        )
        .map_err(|e| ShaderError::Overrides(e.to_string()))?;
        let restrict = naga::proc::BoundsCheckPolicy::Restrict;
        let options = spv::Options {
            lang_version: (1, 6),
            flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::CLAMP_FRAG_DEPTH,
            fake_missing_bindings: true,
            bounds_check_policies: naga::proc::BoundsCheckPolicies {
                index: restrict,
                buffer: restrict,
                image_load: restrict,
                binding_array: restrict,
            },
            ..spv::Options::default()
        };
        let pipeline = spv::PipelineOptions { shader_stage: stage, entry_point: name.to_owned() };
        spv::write_vec(&module, &info, &options, Some(&pipeline))
            .map_err(|e| ShaderError::Write { entry: name.to_owned(), message: e.to_string() })
    }
}

/// The [`EntryPoint`] of `name` in [`gpu::ENTRY_POINTS`].
pub(crate) fn entry_point(name: &str) -> Option<&'static EntryPoint> {
    gpu::ENTRY_POINTS.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_entry_point_translates_in_every_variant() {
        let shader = ShaderModule::new().unwrap();
        for entry in gpu::ENTRY_POINTS {
            for interpolation in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
                for cross_fade in [false, true] {
                    for influences in [4, 8] {
                        let variant =
                            ShaderVariant { interpolation, cross_fade, influences, ..Default::default() };
                        let words = shader.spirv(entry, &variant).unwrap();
                        assert_eq!(words[0], 0x0723_0203, "{}: SPIR-V magic", entry.name);
                        assert_eq!(words[1], 0x0001_0600, "{}: SPIR-V 1.6", entry.name);
                    }
                }
            }
        }
    }

    /// Every vertex format's decode variant translates for the entry points that decode VAT vertices,
    /// and the variants differ (the override reaches the SPIR-V).
    #[test]
    fn every_vertex_format_translates() {
        let shader = ShaderModule::new().unwrap();
        for name in [gpu::ENTRY_POINT_DECODE, gpu::ENTRY_POINT_VS_VAT, gpu::ENTRY_POINT_VS_VAT_DEPTH] {
            let entry = entry_point(name).unwrap();
            let mut seen = Vec::new();
            for vertex_format in [
                VertexFormat::Packed64,
                VertexFormat::Unorm16,
                VertexFormat::F16,
                VertexFormat::F32,
                VertexFormat::Unorm8,
                VertexFormat::Split8,
                VertexFormat::SkinResidual,
            ] {
                let variant = ShaderVariant { vertex_format, ..Default::default() };
                let words = shader.spirv(entry, &variant).unwrap();
                assert!(!seen.contains(&words), "{name} {vertex_format:?}: same SPIR-V as another format");
                seen.push(words);
            }
        }
    }

    #[test]
    fn the_decode_entry_points_are_known() {
        for name in [gpu::ENTRY_POINT_DECODE, gpu::ENTRY_POINT_DECODE_BONE] {
            assert_eq!(entry_point(name).map(|e| e.stage), Some(ShaderStage::Compute));
        }
    }

    /// naga's own reading of every entry point: each resource it uses is in the layout
    /// `conv::bind_group_layout_entries(group, its stage)` builds, with the descriptor type naga's
    /// SPIR-V declares for it (uniform/storage buffer, separate sampled image, separate sampler).
    #[test]
    fn the_layouts_hold_every_resource_each_entry_point_uses_with_its_descriptor_type() {
        use ash::vk;
        let shader = ShaderModule::new().unwrap();
        let (module, info) = (&shader.module, &shader.info);
        let mut checked = 0;
        for (i, ep) in module.entry_points.iter().enumerate() {
            let stage = entry_point(&ep.name).unwrap().stage;
            let uses = info.get_entry_point(i);
            for (handle, var) in module.global_variables.iter() {
                let Some(rb) = var.binding else { continue };
                if uses[handle].is_empty() {
                    continue;
                }
                let layout = crate::conv::bind_group_layout_entries(rb.group, stage.stages());
                let entry = layout.iter().find(|b| b.binding == rb.binding).unwrap_or_else(|| {
                    panic!("{} uses set {} binding {} missing from its layout", ep.name, rb.group, rb.binding)
                });
                let expected = match (var.space, &module.types[var.ty].inner) {
                    (naga::AddressSpace::Uniform, _) => vk::DescriptorType::UNIFORM_BUFFER,
                    (naga::AddressSpace::Storage { .. }, _) => vk::DescriptorType::STORAGE_BUFFER,
                    (naga::AddressSpace::Handle, naga::TypeInner::Image { .. }) => {
                        vk::DescriptorType::SAMPLED_IMAGE
                    }
                    (naga::AddressSpace::Handle, naga::TypeInner::Sampler { .. }) => {
                        vk::DescriptorType::SAMPLER
                    }
                    (space, ty) => panic!("{}: unexpected resource {space:?} {ty:?}", ep.name),
                };
                assert_eq!(
                    entry.descriptor_type, expected,
                    "{} set {} binding {}",
                    ep.name, rb.group, rb.binding
                );
                assert!(entry.stage_flags.contains(crate::conv::map_stages(stage.stages())));
                checked += 1;
            }
        }
        assert!(checked > 20, "only {checked} resource uses checked");
    }
}
