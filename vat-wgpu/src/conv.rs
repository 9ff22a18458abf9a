//! Pure mappings from vat-core's GPU interface to wgpu types. No device needed.
//!
//! The backend never re-derives a layout: every bind-group layout entry comes from
//! [`vat_core::backend::gpu::BINDINGS`] through these functions.

use vat_core::backend::gpu::{self, Binding, BindingKind, ShaderStages, TextureSampleType};
use vat_core::backend::pipeline::{
    CompareFunction, CullMode, DepthBias, FilterMode, FrontFace, SamplerState,
};
use vat_core::format::encoding::TexelFormat;

/// wgpu visibility of a set of vat shader stages.
pub fn map_stages(stages: ShaderStages) -> wgpu::ShaderStages {
    use wgpu::ShaderStages as S;
    stages.map(S::NONE, [S::VERTEX, S::FRAGMENT, S::COMPUTE])
}

/// wgpu binding type of one entry of the binding table.
pub fn map_binding_type(kind: &BindingKind) -> wgpu::BindingType {
    match *kind {
        BindingKind::UniformBuffer { min_size } => wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: wgpu::BufferSize::new(min_size),
        },
        BindingKind::StorageBuffer { read_only, min_size } => wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: wgpu::BufferSize::new(min_size),
        },
        BindingKind::Texture { sample_type } => wgpu::BindingType::Texture {
            sample_type: map_sample_type(sample_type),
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        BindingKind::TextureArray { sample_type } => wgpu::BindingType::Texture {
            sample_type: map_sample_type(sample_type),
            view_dimension: wgpu::TextureViewDimension::D2Array,
            multisampled: false,
        },
        BindingKind::Sampler { comparison: true } => {
            wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Comparison)
        }
        BindingKind::Sampler { comparison: false } => {
            wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering)
        }
    }
}

/// wgpu sample type of a vat texture binding.
pub fn map_sample_type(sample_type: TextureSampleType) -> wgpu::TextureSampleType {
    match sample_type {
        TextureSampleType::Float { filterable } => wgpu::TextureSampleType::Float { filterable },
        TextureSampleType::Uint => wgpu::TextureSampleType::Uint,
        TextureSampleType::Sint => wgpu::TextureSampleType::Sint,
        TextureSampleType::Depth => wgpu::TextureSampleType::Depth,
    }
}

/// One bind-group layout entry of the binding table.
pub fn map_binding(binding: &Binding) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding: binding.binding,
        visibility: map_stages(binding.stages),
        ty: map_binding_type(&binding.kind),
        count: None,
    }
}

/// The layout entries of bind group `group` that a pipeline of `stages` uses
/// (see [`vat_core::backend::gpu::bindings_for_stages`]).
pub fn bind_group_layout_entries(group: u32, stages: ShaderStages) -> Vec<wgpu::BindGroupLayoutEntry> {
    gpu::bindings_for_stages(group, stages).map(map_binding).collect()
}

/// wgpu texture format of a vat texel format.
pub fn map_texel_format(format: TexelFormat) -> wgpu::TextureFormat {
    match format {
        TexelFormat::Rg32Uint => wgpu::TextureFormat::Rg32Uint,
        TexelFormat::Rgba16Uint => wgpu::TextureFormat::Rgba16Uint,
        TexelFormat::Rg16Uint => wgpu::TextureFormat::Rg16Uint,
        TexelFormat::Rgba16Float => wgpu::TextureFormat::Rgba16Float,
        TexelFormat::Rg16Float => wgpu::TextureFormat::Rg16Float,
        TexelFormat::Rgba32Float => wgpu::TextureFormat::Rgba32Float,
        TexelFormat::Rg32Float => wgpu::TextureFormat::Rg32Float,
        TexelFormat::Rgba8Uint => wgpu::TextureFormat::Rgba8Uint,
        TexelFormat::Rg8Uint => wgpu::TextureFormat::Rg8Uint,
        TexelFormat::Rgba32Uint => wgpu::TextureFormat::Rgba32Uint,
    }
}

/// wgpu culling of a vat cull mode.
pub fn map_cull_mode(mode: CullMode) -> Option<wgpu::Face> {
    match mode {
        CullMode::None => None,
        CullMode::Back => Some(wgpu::Face::Back),
        CullMode::Front => Some(wgpu::Face::Front),
    }
}

/// wgpu front face of a vat winding.
pub fn map_front_face(face: FrontFace) -> wgpu::FrontFace {
    match face {
        FrontFace::Ccw => wgpu::FrontFace::Ccw,
        FrontFace::Cw => wgpu::FrontFace::Cw,
    }
}

/// wgpu comparison of a vat comparison.
pub fn map_compare(compare: CompareFunction) -> wgpu::CompareFunction {
    match compare {
        CompareFunction::Less => wgpu::CompareFunction::Less,
        CompareFunction::LessEqual => wgpu::CompareFunction::LessEqual,
        CompareFunction::Greater => wgpu::CompareFunction::Greater,
        CompareFunction::GreaterEqual => wgpu::CompareFunction::GreaterEqual,
    }
}

/// wgpu depth bias of a vat depth bias.
pub fn map_depth_bias(bias: DepthBias) -> wgpu::DepthBiasState {
    wgpu::DepthBiasState { constant: bias.constant, slope_scale: bias.slope_scale, clamp: bias.clamp }
}

/// wgpu filter of a vat filter.
pub fn map_filter(filter: FilterMode) -> wgpu::FilterMode {
    match filter {
        FilterMode::Nearest => wgpu::FilterMode::Nearest,
        FilterMode::Linear => wgpu::FilterMode::Linear,
    }
}

/// wgpu mipmap filter of a vat filter.
pub fn map_mipmap_filter(filter: FilterMode) -> wgpu::MipmapFilterMode {
    match filter {
        FilterMode::Nearest => wgpu::MipmapFilterMode::Nearest,
        FilterMode::Linear => wgpu::MipmapFilterMode::Linear,
    }
}

/// The wgpu sampler of a vat sampler (every address mode clamp-to-edge).
pub fn map_sampler<'a>(label: &'a str, sampler: &SamplerState) -> wgpu::SamplerDescriptor<'a> {
    wgpu::SamplerDescriptor {
        label: Some(label),
        address_mode_u: wgpu::AddressMode::ClampToEdge,
        address_mode_v: wgpu::AddressMode::ClampToEdge,
        address_mode_w: wgpu::AddressMode::ClampToEdge,
        mag_filter: map_filter(sampler.mag_filter),
        min_filter: map_filter(sampler.min_filter),
        mipmap_filter: map_mipmap_filter(sampler.mipmap_filter),
        compare: sampler.compare.map(map_compare),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texel_formats_keep_their_size() {
        let wgpu_bytes = |f| map_texel_format(f).block_copy_size(None);
        assert_eq!(vat_core::backend::texel_size_mismatches(wgpu_bytes), []);
    }

    #[test]
    fn every_binding_maps_with_its_number_and_stages() {
        for b in gpu::BINDINGS {
            let e = map_binding(b);
            assert_eq!(e.binding, b.binding);
            assert!(!e.visibility.is_empty(), "{} is visible to no stage", b.name);
            match (b.kind, e.ty) {
                (
                    BindingKind::UniformBuffer { min_size },
                    wgpu::BindingType::Buffer { ty, min_binding_size, .. },
                ) => {
                    assert_eq!(ty, wgpu::BufferBindingType::Uniform);
                    assert_eq!(min_binding_size.map(|s| s.get()), Some(min_size).filter(|&s| s > 0));
                }
                (BindingKind::StorageBuffer { read_only, .. }, wgpu::BindingType::Buffer { ty, .. }) => {
                    assert_eq!(ty, wgpu::BufferBindingType::Storage { read_only });
                }
                (BindingKind::Texture { .. }, wgpu::BindingType::Texture { view_dimension, .. }) => {
                    assert_eq!(view_dimension, wgpu::TextureViewDimension::D2);
                }
                (BindingKind::TextureArray { .. }, wgpu::BindingType::Texture { view_dimension, .. }) => {
                    assert_eq!(view_dimension, wgpu::TextureViewDimension::D2Array);
                }
                (BindingKind::Sampler { comparison }, wgpu::BindingType::Sampler(ty)) => {
                    assert_eq!(comparison, ty == wgpu::SamplerBindingType::Comparison);
                }
                (k, t) => panic!("{}: {k:?} mapped to {t:?}", b.name),
            }
        }
    }

    #[test]
    fn stages_map_bit_for_bit() {
        let both = ShaderStages::VERTEX | ShaderStages::COMPUTE;
        assert_eq!(map_stages(both), wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::COMPUTE);
        assert_eq!(map_stages(ShaderStages::NONE), wgpu::ShaderStages::NONE);
    }

    #[test]
    fn fixed_state_maps_to_what_the_renderer_always_used() {
        use vat_core::backend::pipeline::{PassConventions, PassKind, PipelineState, SHADOW_SAMPLER};
        let depth = PipelineState::for_pass(PassKind::Depth, &PassConventions::STANDARD);
        assert_eq!(
            map_depth_bias(depth.depth_bias),
            wgpu::DepthBiasState { constant: 2, slope_scale: 2.0, clamp: 0.0 }
        );
        assert_eq!(map_cull_mode(depth.cull_mode), Some(wgpu::Face::Back));
        assert_eq!(map_compare(depth.depth_compare), wgpu::CompareFunction::Less);
        let s = map_sampler("shadow", &SHADOW_SAMPLER);
        assert_eq!(s.compare, Some(wgpu::CompareFunction::LessEqual));
        assert_eq!((s.mag_filter, s.min_filter), (wgpu::FilterMode::Linear, wgpu::FilterMode::Linear));
        assert_eq!(s.mipmap_filter, wgpu::MipmapFilterMode::Nearest);
    }
}
