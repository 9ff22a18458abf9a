//! The GPU interface both backends build from: the one WGSL source, the GPU-visible structs and the
//! binding table.
//!
//! - [`SHADER_SOURCE`] is the only shader text. vat-wgpu hands it to wgpu; vat-vulkan translates the same
//!   text to SPIR-V with naga. Variants are WGSL `override` constants set at pipeline creation
//!   ([`OVERRIDE_INTERPOLATION`], [`OVERRIDE_CROSS_FADE`], [`OVERRIDE_INFLUENCES`],
//!   [`OVERRIDE_VERTEX_FORMAT`], [`OVERRIDE_MOTION_VECTORS`], [`OVERRIDE_PROGRAM`],
//!   [`OVERRIDE_MATERIALS`], [`OVERRIDE_LIGHT_MODEL`], [`OVERRIDE_IMPOSTOR_VIEWS`]), never text templating.
//! - Every struct here is `#[repr(C)]` + [`Pod`], with explicit `_pad` fields, and is kept in sync with
//!   the WGSL struct of the same name; tests compare sizes and member offsets with what naga computes
//!   for the WGSL. [`crate::instance::InstanceRecord`] is one more such struct.
//! - [`BINDINGS`] lists every `@group/@binding` of the shader; each backend maps it to its own layout
//!   types (bind-group layouts, descriptor-set layouts). [`ENTRY_POINTS`] lists the entry points.
//! - What a backend uploads is computed here, from a validated asset ([`AssetConstants::from_manifest`],
//!   [`clip_records`], [`rest_vertices`], [`AttachmentMesh::from_asset`], [`draw_args_template`]) and
//!   per frame ([`FrameUniforms::new`], [`shadow_view_proj`]): backends never re-derive it.
//!
//! | group | binding | WGSL name | resource | stages |
//! |---|---|---|---|---|
//! | 0 | 0 | `frame` | uniform [`FrameUniforms`] | vertex, fragment, compute |
//! | 0 | 1 | `shadow_map` | `texture_depth_2d_array` (the sun's shadow map, its cascades' layers) | fragment |
//! | 0 | 2 | `shadow_sampler` | `sampler_comparison` (less-equal, linear) | fragment |
//! | 1 | 0 | `vat_texture` | `texture_2d<u32>` (first unsigned vertex texture: `Rg32Uint` Packed64, `Rgba16Uint` Unorm16 / `Rgba8Uint` Unorm8 positions, `Rgba8Uint` Split8 high bytes) | vertex, compute |
//! | 1 | 1 | `clips` | read-only storage `array<ClipRecord>` | vertex, compute |
//! | 1 | 2 | `asset` | uniform [`AssetConstants`] | vertex, fragment, compute |
//! | 1 | 3 | `bone_texture` | `texture_2d<f32>` (`Rgba32Float`, not filterable) | vertex, compute |
//! | 1 | 4 | `joints` | read-only storage `array<u32>` (u16 pairs) | vertex, compute |
//! | 1 | 5 | `weights` | read-only storage `array<f32>` | vertex, compute |
//! | 1 | 6 | `rest_vertices` | read-only storage `array<RestVertex>` | vertex, compute |
//! | 1 | 7 | `attachment_vertices` | read-only storage `array<AttachmentVertex>` | vertex |
//! | 1 | 8 | `captures` | read-only storage `array<vec4<f32>>` (capture rows) | vertex |
//! | 1 | 9 | `morph_texture` | `texture_2d<f32>` (`Rgba32Float` morph deltas, tiled; 1x1 without) | vertex, compute |
//! | 1 | 10 | `morph_weights` | `texture_2d<f32>` (`Rgba32Float` per-frame morph weights; 1x1 without) | vertex, compute |
//! | 1 | 11 | `vat_texture_1` | `texture_2d<u32>` (`Rg16Uint` Unorm16 / `Rg8Uint` Unorm8 normals, `Rgba8Uint` Split8 low bytes; 1x1 otherwise) | vertex, compute |
//! | 1 | 12 | `vat_texture_2` | `texture_2d<u32>` (`Rgba8Uint` Split8 normals; 1x1 otherwise) | vertex, compute |
//! | 1 | 13 | `vat_float_texture` | `texture_2d<f32>` (`Rgba16Float` F16 / `Rgba32Float` F32 positions, not filterable; 1x1 otherwise) | vertex, compute |
//! | 1 | 14 | `vat_float_texture_1` | `texture_2d<f32>` (`Rg16Float` F16 / `Rg32Float` F32 octahedral normals, not filterable; 1x1 otherwise) | vertex, compute |
//! | 1 | 15 | `rigid_pieces` | `texture_2d<u32>` (`Rgba32Uint` rigid piece texture, [`crate::rigid`]; 1x1 for a soft asset) | vertex, compute |
//! | 1 | 16 | `rigid_vertices` | `texture_2d<u32>` (`Rgba32Uint` rigid vertex texture: piece index, rest pivot; 1x1 for a soft asset) | vertex, compute |
//! | 1 | 17 | `vat_tangent_texture` | `texture_2d<f32>` (`Rgba16Float` per-frame tangent frames; 1x1 without) | vertex, compute |
//! | 1 | 18 | `materials` | read-only storage `array<MaterialRecord>` ([`material_records`]) | fragment |
//! | 1 | 19 | `material_color_texture` | `texture_2d_array<f32>` (`Rgba8UnormSrgb` base colour layers, mipmapped; [`material_textures`]) | fragment |
//! | 1 | 20 | `material_data_texture` | `texture_2d_array<f32>` (`Rgba8Unorm` normal and metallic-roughness layers, mipmapped) | fragment |
//! | 1 | 21 | `material_sampler` | `sampler` (trilinear, clamp to edge: wraps are applied in the shader, [`crate::pipeline::MATERIAL_SAMPLER`]) | fragment |
//! | 1 | 22 | `fluid_lookup` | `texture_2d<u32>` (`Rgba32Uint` fluid lookup texture, [`crate::fluid`]; 1x1 for other assets) | vertex, compute |
//! | 1 | 23 | `sprite_particles` | `texture_2d<u32>` (`Rgba32Uint` particle texture, [`crate::sprite`]; 1x1 for other assets) | vertex, compute |
//! | 1 | 24 | `impostor_color` | `texture_2d_array<f32>` (`Rgba8UnormSrgb` impostor colour and coverage, one layer per clip image, mipmapped; 1x1 without a tier) | fragment |
//! | 1 | 25 | `impostor_normal_depth` | `texture_2d_array<f32>` (`Rgba8Unorm` impostor normal, depth and material, same layers) | fragment |
//! | 2 | 0 | `instances` | read-only storage `array<InstanceRecord>` | vertex, fragment, compute |
//! | 2 | 1 | `decode_params` | uniform [`DecodeParams`] | compute |
//! | 2 | 2 | `decoded` | read-write storage `array<DecodedVertex>` | compute |
//! | 2 | 3 | `instance_list` | read-only storage `array<u32>` (record indices drawn) | vertex |
//! | 2 | 4 | `cull_params` | uniform [`CullParams`] | compute |
//! | 2 | 5 | `visible` | read-write storage `array<u32>` (per-LOD visible lists) | compute |
//! | 2 | 6 | `draw_args` | read-write storage `array<atomic<u32>>` (indexed-indirect draws) | compute |
//! | 2 | 7 | `instance_user_data` | read-only storage `array<vec4<u32>>` (16 bytes of user data per record, `Crowd::set_user_data`) | fragment |
//! | 3 | 0 | `scatter_indices` | read-only storage `array<u32>` (count, then destinations) | compute (`cs_scatter` only) |
//! | 3 | 1 | `scatter_records` | read-only storage `array<InstanceRecord>` (packed changed records) | compute (`cs_scatter` only) |
//! | 3 | 2 | `scatter_target` | read-write storage `array<InstanceRecord>` (the crowd's records) | compute (`cs_scatter` only) |
//!
//! Groups 0-2 ([`group_count`]) make the layouts of every render, culling and decode pipeline. Group
//! 3 ([`GROUP_SCATTER`]) belongs to `cs_scatter` alone: its pipeline layout holds only group 3 (groups
//! 0-2 empty), because its target is the record buffer that group 2 binds read-only.
//!
//! A pipeline's layout for group `g` is [`bindings_for_stages`]`(g, stages of the pipeline)`: a colour
//! pipeline (vertex + fragment) sees the shadow map, a depth-only shadow pipeline (vertex only) does
//! not (it renders into it), and compute pipelines see the decode and culling outputs. No stage sees
//! more than 8 storage buffers (WebGPU's default limit): vertex and compute 8 each.
//!
//! Texel fetches per vertex of the vertex paths at linear interpolation: VAT mode 2 per texture of
//! the format (Packed64 2, Unorm16/F16/F32/Unorm8 4, Split8 6; doubled while cross-fading); bone mode `3 * 2 * influences` (24 for 4 influences, 48 for 8; doubled while
//! cross-fading), fewer when weights are 0; bone mode with a morph layer of `T` targets adds
//! `2 * ceil(T / 4)` weight fetches (doubled while cross-fading) plus 2 delta fetches (position and
//! normal) per target whose blended weight is not 0.
//!
//! Rigid mode (a rigid asset in VAT mode, `vs_rigid`): one rigid vertex texel per vertex plus one
//! piece texel per sampled frame (point 1, linear 2, cubic 4; doubled while cross-fading), so 3 at
//! linear interpolation.
//!
//! Fluid mode (a fluid asset in VAT mode, `vs_fluid`): one lookup fetch per corner, then the
//! format's textures once (Packed64 1, Unorm16/F16/F32/Unorm8 2, Split8 3), never interpolated;
//! a collapsed corner stops after the lookup.
//!
//! Sprite mode (a sprite asset in VAT mode, `vs_sprite`): one particle texel per sampled frame
//! (point 1, linear and cubic 2: particles interpolate linearly), per card corner; never
//! cross-faded.
//!
//! The morph layer uses textures, not storage buffers: the vertex and compute stages already bind 8
//! storage buffers each (WebGPU's default limit).
//!
//! Vertex formats: every asset binds the same five vertex-texture bindings
//! ([`VERTEX_TEXTURE_BINDINGS`]), whatever its [`VertexFormat`]; [`vertex_texture_bindings`] says
//! which of them hold the format's textures (in [`VertexFormat::texel_formats`] order) and
//! [`vertex_textures`] gives what to upload into each (the asset's textures, 1x1 zero stand-ins for
//! the rest), so one layout serves every format and backends only translate. The decode path is
//! chosen per pipeline by [`OVERRIDE_VERTEX_FORMAT`] (set to [`vertex_format_code`] of the asset's
//! format); integer formats bind `texture_2d<u32>`, float formats `texture_2d<f32>` read with
//! `textureLoad` (never filtered), so every format decodes exactly what
//! [`crate::encoding::decode_vertex_texel`] decodes. Sampled textures per stage: vertex and compute 13
//! each (WebGPU's default limit is 16).

use bytemuck::{Pod, Zeroable};

use crate::clip::{Clip, ClipMode};
use crate::encoding::{TexelFormat, VertexFormat};
use crate::instance::InstanceRecord;

mod asset_data;
mod bindings;
mod entry_points;
mod resources;
#[cfg(test)]
mod tests;
mod uniforms;

pub use asset_data::*;
pub use bindings::*;
pub use entry_points::*;
pub use resources::{AssetBinding, AssetResource, AssetResources, ResourceError, ResourceLimits};
pub use uniforms::*;

/// The WGSL source of every vat shader: `src/shaders/vat.wgsl` (bindings, structs, the soft
/// paths, culling, shading), then each mode's own file (`bone.wgsl`, `rigid.wgsl`, `fluid.wgsl`,
/// `sprite.wgsl`: its decode and entry points), then the impostor tier's cards (`impostor.wgsl`), then the shadow lookup of `src/shaders/shadow.wgsl`
/// ([`SHADOW_WGSL`]).
pub const SHADER_SOURCE: &str = concat!(
    include_str!("../shaders/vat.wgsl"),
    include_str!("../shaders/bone.wgsl"),
    include_str!("../shaders/rigid.wgsl"),
    include_str!("../shaders/fluid.wgsl"),
    include_str!("../shaders/sprite.wgsl"),
    include_str!("../shaders/impostor.wgsl"),
    include_str!("../shaders/shadow.wgsl")
);

/// The sun shadow lookup of [`SHADER_SOURCE`] on its own (`vat_shadow_lookup`, the end of
/// `SHADER_SOURCE`): WGSL with no bindings, which a host includes in its own shader to shade its
/// surfaces exactly as vat shades the crowd, from vat's built-in shadow map (the backend's
/// `Renderer::shadow_map_view`, the matrix [`crate::render::FrameReport::shadow_view_proj`]) or its
/// own ([`ShadowLookup`]'s conventions). Its sampler is a comparison sampler of
/// [`crate::pipeline::SHADOW_SAMPLER`]'s state.
pub const SHADOW_WGSL: &str = include_str!("../shaders/shadow.wgsl");

/// Name of the WGSL `override` constant that selects the interpolation mode; its value is one of
/// [`INTERPOLATION_POINT`], [`INTERPOLATION_LINEAR`] (the default) or [`INTERPOLATION_CUBIC`].
/// wgpu: a `constants` entry of the pipeline's compilation options; naga:
/// `naga::back::pipeline_constants::process_overrides` before writing SPIR-V.
pub const OVERRIDE_INTERPOLATION: &str = "INTERPOLATION";
/// [`OVERRIDE_INTERPOLATION`] value: nearest frame, one texture fetch per frame.
pub const INTERPOLATION_POINT: u32 = 0;
/// [`OVERRIDE_INTERPOLATION`] value: linear blend of two frames (the shader's default).
pub const INTERPOLATION_LINEAR: u32 = 1;
/// [`OVERRIDE_INTERPOLATION`] value: uniform Catmull-Rom over four frames.
pub const INTERPOLATION_CUBIC: u32 = 2;

/// [`ClipRecord::flags`] bit: the clip loops (wraps); clear for one-shot clips (clamp).
pub const CLIP_FLAG_LOOPING: u32 = 1;

/// Name of the WGSL `override` (bool) that selects the cross-fade variant (`true`, the default: clip B
/// of a running fade is decoded and blended in) or the plain variant (`false`: clip A only, clip B
/// never fetched). wgpu takes it as `1.0` / `0.0`.
pub const OVERRIDE_CROSS_FADE: &str = "CROSS_FADE";
/// Name of the WGSL `override` (u32) giving the bone influences per vertex of the bone paths: 4 (the
/// default) or 8, which must equal the asset's [`AssetConstants::influences`].
pub const OVERRIDE_INFLUENCES: &str = "INFLUENCES";

/// Name of the WGSL `override` (u32) selecting how VAT mode decodes the vertex animation textures:
/// [`vertex_format_code`] of the asset's [`VertexFormat`] (0, Packed64, is the default), which must
/// equal [`AssetConstants::vertex_format`]. wgpu: a pipeline constant like the others; vat-vulkan:
/// resolved by naga (`process_overrides`) before it writes SPIR-V, one module per variant.
pub const OVERRIDE_VERTEX_FORMAT: &str = "VERTEX_FORMAT";

/// Name of the WGSL `override` (bool) that makes the colour vertex stages also decode each vertex
/// at the previous frame (`VertexOutput::previous_world_position`, for motion vectors; `false`, the
/// default, leaves it equal to `world_position`). wgpu takes it as `1.0` / `0.0`.
pub const OVERRIDE_MOTION_VECTORS: &str = "MOTION_VECTORS";

/// Name of the WGSL `override` (u32) naming the program of a colour pipeline
/// ([`crate::pipeline::PipelineKey::program_code`]) for `vat_vertex`, the decode a host's own vertex
/// stage calls. vat's own entry points do not read it.
pub const OVERRIDE_PROGRAM: &str = "PROGRAM";

/// Name of the WGSL `override` (u32) fixing a pipeline's shading path: 1 the built-in palette
/// (the asset has no materials; no tangent frames are decoded), 2 the materials, 0 (the default)
/// chosen at run time from [`AssetConstants::material_count`]
/// ([`crate::pipeline::ShaderVariantKey::materials`]). Must match the asset.
pub const OVERRIDE_MATERIALS: &str = "MATERIALS";

/// Name of the WGSL `override` (u32) fixing a pipeline's light model: 1 + [`LightModel::code`],
/// or 0 (the default) for [`FrameUniforms::light_model`] at run time
/// ([`crate::pipeline::ShaderVariantKey::light_model`]).
pub const OVERRIDE_LIGHT_MODEL: &str = "LIGHT_MODEL";

/// Name of the WGSL `override` (u32) fixing how many of the impostor tier's views a card pipeline
/// reads ([`crate::pipeline::ImpostorViews::code`]): 0 (the default) decides per card by its mip
/// level, 1 one view, 3 three views. Pipelines of other programs ignore it.
pub const OVERRIDE_IMPOSTOR_VIEWS: &str = "IMPOSTOR_VIEWS";

/// Threads per workgroup of `cs_cull` (one record per thread, linear index as in `cs_decode`).
pub const CULL_WORKGROUP_SIZE: u32 = 64;
/// Threads per workgroup of `cs_scatter` (one changed record per thread).
pub const SCATTER_WORKGROUP_SIZE: u32 = 64;

/// `u32` words of one indexed-indirect draw in the `draw_args` buffer: `index_count`,
/// `instance_count`, `first_index`, `base_vertex`, `first_instance` (wgpu's `DrawIndexedIndirectArgs`,
/// Vulkan's `VkDrawIndexedIndirectCommand`).
pub const DRAW_ARGS_WORDS: u32 = 5;
/// Indexed-indirect draws in the `draw_args` buffer: bodies of LOD `l` at draw `l`, attachments of LOD
/// `l` at draw `MAX_LODS + l`.
pub const DRAW_ARGS_COUNT: u32 = 2 * crate::lod::MAX_LODS as u32;
/// Bytes of the `draw_args` buffer.
pub const DRAW_ARGS_BYTES: u64 = (DRAW_ARGS_COUNT * DRAW_ARGS_WORDS * 4) as u64;

/// Threads per workgroup of `cs_decode` (the WGSL `@workgroup_size`). A dispatch decoding `n`
/// (instance, vertex) pairs needs `ceil(n / 64)` workgroups, which may be spread over y:
/// thread index `= global_id.y * (num_workgroups.x * 64) + global_id.x`.
pub const DECODE_WORKGROUP_SIZE: u32 = 64;

/// The code of a vertex format in [`AssetConstants::vertex_format`] and the value of
/// [`OVERRIDE_VERTEX_FORMAT`]: the variant's position in [`VertexFormat`] (Packed64 0, Unorm16 1,
/// F16 2, F32 3, Unorm8 4, Split8 5; the WGSL constants `VERTEX_FORMAT_*`).
pub const fn vertex_format_code(format: VertexFormat) -> u32 {
    match format {
        VertexFormat::Packed64 => 0,
        VertexFormat::Unorm16 => 1,
        VertexFormat::F16 => 2,
        VertexFormat::F32 => 3,
        VertexFormat::Unorm8 => 4,
        VertexFormat::Split8 => 5,
        VertexFormat::SkinResidual => 6,
    }
}
