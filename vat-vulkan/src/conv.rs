//! Pure mappings from vat-core's GPU interface to Vulkan types. No device needed.
//!
//! Mirrors vat-wgpu's `conv.rs` function by function (same names where they mean the same): the
//! backend never re-derives a layout; every descriptor-set layout binding comes from
//! [`vat_core::backend::gpu::BINDINGS`] through these functions.

use ash::vk;
use vat_core::backend::gpu::{self, Binding, BindingKind, ShaderStages};
use vat_core::backend::pipeline::{CompareFunction, CullMode, FilterMode, FrontFace, SamplerState};
use vat_core::format::encoding::TexelFormat;

/// Vulkan stage flags of a set of vat shader stages.
pub fn map_stages(stages: ShaderStages) -> vk::ShaderStageFlags {
    use vk::ShaderStageFlags as S;
    stages.map(S::empty(), [S::VERTEX, S::FRAGMENT, S::COMPUTE])
}

/// Vulkan descriptor type of one entry of the binding table. Textures are sampled images read with
/// `textureLoad` (or compared through a separate sampler), never combined image-samplers: naga
/// writes WGSL textures and samplers as separate descriptors.
pub fn map_binding_type(kind: &BindingKind) -> vk::DescriptorType {
    match *kind {
        BindingKind::UniformBuffer { .. } => vk::DescriptorType::UNIFORM_BUFFER,
        BindingKind::StorageBuffer { .. } => vk::DescriptorType::STORAGE_BUFFER,
        BindingKind::Texture { .. } | BindingKind::TextureArray { .. } => vk::DescriptorType::SAMPLED_IMAGE,
        BindingKind::Sampler { .. } => vk::DescriptorType::SAMPLER,
    }
}

/// One descriptor-set layout binding of the binding table (one descriptor, no immutable samplers).
pub fn map_binding(binding: &Binding) -> vk::DescriptorSetLayoutBinding<'static> {
    vk::DescriptorSetLayoutBinding::default()
        .binding(binding.binding)
        .descriptor_type(map_binding_type(&binding.kind))
        .descriptor_count(1)
        .stage_flags(map_stages(binding.stages))
}

/// The layout bindings of descriptor set `group` that a pipeline of `stages` uses
/// (see [`vat_core::backend::gpu::bindings_for_stages`]); vat-wgpu's `bind_group_layout_entries`.
pub fn bind_group_layout_entries(
    group: u32,
    stages: ShaderStages,
) -> Vec<vk::DescriptorSetLayoutBinding<'static>> {
    gpu::bindings_for_stages(group, stages).map(map_binding).collect()
}

/// Vulkan format of a vat texel format.
pub fn map_texel_format(format: TexelFormat) -> vk::Format {
    match format {
        TexelFormat::Rg32Uint => vk::Format::R32G32_UINT,
        TexelFormat::Rgba16Uint => vk::Format::R16G16B16A16_UINT,
        TexelFormat::Rg16Uint => vk::Format::R16G16_UINT,
        TexelFormat::Rgba16Float => vk::Format::R16G16B16A16_SFLOAT,
        TexelFormat::Rg16Float => vk::Format::R16G16_SFLOAT,
        TexelFormat::Rgba32Float => vk::Format::R32G32B32A32_SFLOAT,
        TexelFormat::Rg32Float => vk::Format::R32G32_SFLOAT,
        TexelFormat::Rgba8Uint => vk::Format::R8G8B8A8_UINT,
        TexelFormat::Rg8Uint => vk::Format::R8G8_UINT,
        TexelFormat::Rgba32Uint => vk::Format::R32G32B32A32_UINT,
    }
}

/// Bytes per texel of the formats [`map_texel_format`] returns (`None` for any other format).
pub fn format_texel_bytes(format: vk::Format) -> Option<u32> {
    Some(match format {
        vk::Format::R8G8_UINT => 2,
        vk::Format::R16G16_UINT | vk::Format::R16G16_SFLOAT | vk::Format::R8G8B8A8_UINT => 4,
        vk::Format::R32G32_UINT
        | vk::Format::R16G16B16A16_UINT
        | vk::Format::R16G16B16A16_SFLOAT
        | vk::Format::R32G32_SFLOAT => 8,
        vk::Format::R32G32B32A32_SFLOAT | vk::Format::R32G32B32A32_UINT => 16,
        _ => return None,
    })
}

/// Vulkan culling of a vat cull mode.
pub fn map_cull_mode(mode: CullMode) -> vk::CullModeFlags {
    match mode {
        CullMode::None => vk::CullModeFlags::NONE,
        CullMode::Back => vk::CullModeFlags::BACK,
        CullMode::Front => vk::CullModeFlags::FRONT,
    }
}

/// Vulkan front face of a vat winding (with the flipped viewport, as wgpu-hal maps wgpu's).
pub fn map_front_face(face: FrontFace) -> vk::FrontFace {
    match face {
        FrontFace::Ccw => vk::FrontFace::COUNTER_CLOCKWISE,
        FrontFace::Cw => vk::FrontFace::CLOCKWISE,
    }
}

/// Vulkan comparison of a vat comparison.
pub fn map_compare(compare: CompareFunction) -> vk::CompareOp {
    match compare {
        CompareFunction::Less => vk::CompareOp::LESS,
        CompareFunction::LessEqual => vk::CompareOp::LESS_OR_EQUAL,
        CompareFunction::Greater => vk::CompareOp::GREATER,
        CompareFunction::GreaterEqual => vk::CompareOp::GREATER_OR_EQUAL,
    }
}

/// Vulkan filter of a vat filter.
pub fn map_filter(filter: FilterMode) -> vk::Filter {
    match filter {
        FilterMode::Nearest => vk::Filter::NEAREST,
        FilterMode::Linear => vk::Filter::LINEAR,
    }
}

/// Vulkan mipmap mode of a vat filter.
pub fn map_mipmap_mode(filter: FilterMode) -> vk::SamplerMipmapMode {
    match filter {
        FilterMode::Nearest => vk::SamplerMipmapMode::NEAREST,
        FilterMode::Linear => vk::SamplerMipmapMode::LINEAR,
    }
}

/// Vulkan sample count of `samples` per pixel (1, 2, 4, 8 or 16; anything else means 1).
pub fn map_sample_count(samples: u32) -> vk::SampleCountFlags {
    match samples {
        2 => vk::SampleCountFlags::TYPE_2,
        4 => vk::SampleCountFlags::TYPE_4,
        8 => vk::SampleCountFlags::TYPE_8,
        16 => vk::SampleCountFlags::TYPE_16,
        _ => vk::SampleCountFlags::TYPE_1,
    }
}

/// The Vulkan sampler of a vat sampler (clamp-to-edge, LODs 0..=32, as wgpu-hal maps wgpu's default
/// sampler descriptor).
pub fn map_sampler(sampler: &SamplerState) -> vk::SamplerCreateInfo<'static> {
    let info = vk::SamplerCreateInfo::default()
        .mag_filter(map_filter(sampler.mag_filter))
        .min_filter(map_filter(sampler.min_filter))
        .mipmap_mode(map_mipmap_mode(sampler.mipmap_filter))
        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .min_lod(0.0)
        .max_lod(32.0);
    match sampler.compare {
        Some(c) => info.compare_enable(true).compare_op(map_compare(c)),
        None => info,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vat_core::backend::gpu::TextureSampleType;
    use vat_core::backend::texel_size_mismatches;

    #[test]
    fn texel_formats_keep_their_size() {
        let mismatches = texel_size_mismatches(|f| format_texel_bytes(map_texel_format(f)));
        assert!(mismatches.is_empty(), "Vulkan formats of another size: {mismatches:?}");
    }

    #[test]
    fn uint_textures_map_to_uint_formats() {
        // The binding table's sample types must agree with the formats uploaded into them.
        assert_eq!(map_texel_format(TexelFormat::Rg32Uint), vk::Format::R32G32_UINT);
        let vat = gpu::BINDINGS.iter().find(|b| b.name == "vat_texture").map(|b| b.kind);
        assert_eq!(vat, Some(BindingKind::Texture { sample_type: TextureSampleType::Uint }));
    }

    #[test]
    fn every_binding_maps_with_its_number_and_stages() {
        for b in gpu::BINDINGS {
            let e = map_binding(b);
            assert_eq!(e.binding, b.binding);
            assert_eq!(e.descriptor_count, 1);
            assert!(!e.stage_flags.is_empty(), "{} is visible to no stage", b.name);
            // vat's stage bits (vertex 1, fragment 2, compute 4) are wgpu's, not Vulkan's (fragment
            // 0x10, compute 0x20): each stage must map by name.
            for (vat, vulkan) in [
                (ShaderStages::VERTEX, vk::ShaderStageFlags::VERTEX),
                (ShaderStages::FRAGMENT, vk::ShaderStageFlags::FRAGMENT),
                (ShaderStages::COMPUTE, vk::ShaderStageFlags::COMPUTE),
            ] {
                assert_eq!(b.stages.contains(vat), e.stage_flags.contains(vulkan), "{}: {vulkan:?}", b.name);
            }
            let expected = match b.kind {
                BindingKind::UniformBuffer { .. } => vk::DescriptorType::UNIFORM_BUFFER,
                BindingKind::StorageBuffer { .. } => vk::DescriptorType::STORAGE_BUFFER,
                BindingKind::Texture { .. } | BindingKind::TextureArray { .. } => {
                    vk::DescriptorType::SAMPLED_IMAGE
                }
                BindingKind::Sampler { .. } => vk::DescriptorType::SAMPLER,
            };
            assert_eq!(e.descriptor_type, expected, "{}", b.name);
        }
    }

    #[test]
    fn compute_pipelines_see_the_decode_output_as_a_storage_buffer() {
        let compute = bind_group_layout_entries(gpu::GROUP_CROWD, ShaderStages::COMPUTE);
        assert!(
            compute.iter().any(|b| b.binding == 2 && b.descriptor_type == vk::DescriptorType::STORAGE_BUFFER)
        );
    }

    #[test]
    fn fixed_state_maps_to_what_the_renderer_always_used() {
        use vat_core::backend::pipeline::{PassConventions, PassKind, PipelineState, SHADOW_SAMPLER};
        let depth = PipelineState::for_pass(PassKind::Depth, &PassConventions::STANDARD);
        assert_eq!(map_cull_mode(depth.cull_mode), vk::CullModeFlags::BACK);
        assert_eq!(map_front_face(depth.front_face), vk::FrontFace::COUNTER_CLOCKWISE);
        assert_eq!(map_compare(depth.depth_compare), vk::CompareOp::LESS);
        assert_eq!((depth.depth_bias.constant, depth.depth_bias.slope_scale), (2, 2.0));
        let s = map_sampler(&SHADOW_SAMPLER);
        assert_eq!((s.compare_enable, s.compare_op), (vk::TRUE, vk::CompareOp::LESS_OR_EQUAL));
        assert_eq!((s.mag_filter, s.mipmap_mode), (vk::Filter::LINEAR, vk::SamplerMipmapMode::NEAREST));
        assert_eq!(map_sample_count(4), vk::SampleCountFlags::TYPE_4);
    }
}
