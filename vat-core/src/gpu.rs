//! The GPU interface both backends build from: the one WGSL source, the GPU-visible structs and the
//! binding table.
//!
//! - [`SHADER_SOURCE`] is the only shader text. vat-wgpu hands it to wgpu; vat-vulkan translates the same
//!   text to SPIR-V with naga. Variants are WGSL `override` constants set at pipeline creation
//!   ([`OVERRIDE_INTERPOLATION`], [`OVERRIDE_CROSS_FADE`], [`OVERRIDE_INFLUENCES`],
//!   [`OVERRIDE_VERTEX_FORMAT`], [`OVERRIDE_MOTION_VECTORS`], [`OVERRIDE_PROGRAM`],
//!   [`OVERRIDE_MATERIALS`], [`OVERRIDE_LIGHT_MODEL`]), never text templating.
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
//! | 2 | 0 | `instances` | read-only storage `array<InstanceRecord>` | vertex, compute |
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

mod resources;
#[cfg(test)]
mod tests;

pub use resources::{AssetBinding, AssetResource, AssetResources, ResourceError, ResourceLimits};

/// Serialises the creation and destruction of Vulkan instances and devices in this process. Hold the
/// guard across `vkCreateInstance` .. `vkCreateDevice` and across `vkDestroyDevice` ..
/// `vkDestroyInstance`.
///
/// Why: the Khronos Vulkan loader walks its process-global list of logical devices under a lock in
/// `vkCreateDevice` but unlinks and frees a device's entry in `vkDestroyDevice` without one, so one
/// thread destroying a device while another creates one (even on separate instances) can read freed
/// memory and crash (Vulkan-Loader issue 2018, present in the loaders Debian ships). Both backends
/// take this guard wherever vat creates or destroys a device (`vat_vulkan::Context`,
/// `vat_wgpu::headless_device`). A wgpu device is destroyed when its last handle drops, which vat
/// cannot see, so a host that drops devices on one thread while another thread creates one (parallel
/// tests do) should hold this guard around the drop too.
///
/// The guard carries no data; a panic while it was held does not poison it for later callers.
pub fn device_lifetime_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The WGSL source of every vat shader (`src/shaders/vat.wgsl`, then the shadow lookup of
/// `src/shaders/shadow.wgsl`, [`SHADOW_WGSL`]).
pub const SHADER_SOURCE: &str =
    concat!(include_str!("shaders/vat.wgsl"), include_str!("shaders/shadow.wgsl"));

/// The sun shadow lookup of [`SHADER_SOURCE`] on its own (`vat_shadow_lookup`, the end of
/// `SHADER_SOURCE`): WGSL with no bindings, which a host includes in its own shader to shade its
/// surfaces exactly as vat shades the crowd, from vat's built-in shadow map (the backend's
/// `Renderer::shadow_map_view`, the matrix [`crate::render::FrameReport::shadow_view_proj`]) or its
/// own ([`ShadowLookup`]'s conventions). Its sampler is a comparison sampler of
/// [`crate::pipeline::SHADOW_SAMPLER`]'s state.
pub const SHADOW_WGSL: &str = include_str!("shaders/shadow.wgsl");

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
    }
}

// ---------------------------------------------------------------------------------------------------
// GPU-visible structs
// ---------------------------------------------------------------------------------------------------

/// Per-frame values shared by every pass (group 0, binding 0; uniform, 784 bytes). Built with
/// [`FrameUniforms::new`].
///
/// **Lighting inputs (the host's light).** `fs_lit` shades with `sun_direction`, `sun_color` and
/// `ambient` (the host's `RenderOptions::sun_direction`, `sun_color`, `ambient`) and a shadow map
/// (group 0, binding 1, a depth array, with the comparison sampler of binding 2) through `shadow`
/// ([`ShadowLookup`]): `light = ambient * sky + (1 -
/// ambient) * max(n . sun, 0) * sun_color * shadow`, where `sky = mix(0.55, 1, 0.5 + 0.5 * n.y)` and
/// `shadow` is [`ShadowLookup`]'s. The map is vat's own (its built-in shadow pass) or the host's
/// (`RenderOptions::shadow_map`: the host renders its shadow map, the crowd included through
/// `draw_depth`, and gives it to the backend's `Renderer::set_host_shadow_map`).
/// For a host's extra depth view (`crate::frame::FramePlan::view_depth`) the depth entry points
/// project with `light_view_proj` set to the view's matrix (`crate::frame::CrowdPlan::view_uniforms`).
///
/// **Motion vectors.** With `RenderOptions::motion_vectors` the colour vertex stages decode each
/// vertex a second time with its previous record (`instances[previous_records + i]`) at
/// `previous_time`, and the motion fragment stages project it with `previous_view_proj`
/// (`vat_motion_vector`); without history the three equal this frame's values (no motion).
///
/// Kept in sync with `struct FrameUniforms` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct FrameUniforms {
    /// World to clip space of the camera, column-major (`view_proj[column][row]`, glam's
    /// `Mat4::to_cols_array_2d`).
    pub view_proj: [[f32; 4]; 4],
    /// World to clip space of the sun's shadow map, column-major; identity when there are no shadows.
    pub light_view_proj: [[f32; 4]; 4],
    /// Camera position in world space, metres.
    pub camera_position: [f32; 3],
    /// Epoch-relative clock in seconds: `(now - epoch) as f32` (see [`crate::playback`]).
    pub time: f32,
    /// Unit vector from the scene towards the sun, world space.
    pub sun_direction: [f32; 3],
    /// Ambient light intensity, linear (0..=1 typical).
    pub ambient: f32,
    /// The frustum planes left, right, bottom, top, near, far as `(normal.xyz, d)` with inward normals:
    /// a point `p` is inside when `dot(normal, p) + d >= 0` for all six.
    pub frustum_planes: [[f32; 4]; 6],
    /// Camera distances in metres at which LOD 1..=8 start, ascending: entry `i` (of 8, read as
    /// `lod_distances[i / 4][i % 4]`) is where LOD `i + 1` begins; entries from `lod_count - 1` on are
    /// unused.
    pub lod_distances: [[f32; 4]; 2],
    /// LOD bias in doublings of distance, as [`crate::lod::LodThresholds::select`]: the distance is
    /// multiplied by `exp2(lod_bias)` before it is compared with `lod_distances` (0 = none; > 0 picks
    /// coarser LODs sooner).
    pub lod_bias: f32,
    /// LOD levels of the drawn asset, 1..=9.
    pub lod_count: u32,
    /// Coarsest LOD that still decodes clip B during a cross-fade (coarser ones show clip A only),
    /// at most `lod_count - 1`.
    pub cross_fade_max_lod: u32,
    /// Coarsest LOD drawn into the shadow map, at most `lod_count - 1`.
    pub shadow_max_lod: u32,
    /// Colour of the sun's light, linear RGB, multiplying the direct term (white = 1, 1, 1).
    pub sun_color: [f32; 3],
    /// Half the side of the ground square `vs_ground` draws at `y = 0` around the camera, metres.
    pub ground_half_extent: f32,
    /// The previous frame's world-to-clip matrix of the camera, column-major (motion vectors; equal
    /// to `view_proj` without history or on a camera cut).
    pub previous_view_proj: [[f32; 4]; 4],
    /// The crowd's clock at the previous frame, seconds, in the same epoch as the previous records
    /// (equal to `time` without history).
    pub previous_time: f32,
    /// Where the previous frame's records start in `instances`: instance `i`'s previous record is
    /// `instances[previous_records + i]`; 0: no history (the current record stands for it).
    pub previous_records: u32,
    /// Sub-pixel offset of every colour and prepass vertex stage's clip position, in NDC units
    /// (x right, y up; one pixel is `2 / width` by `2 / height`): `clip.xy += jitter * clip.w`, a
    /// constant offset of the image (TAA's jitter). `[0, 0]`: none. The culling, the LOD choice,
    /// the depth-only views and the motion vectors use `view_proj` unjittered.
    pub jitter: [f32; 2],
    /// [`LightModel::Pbr`]'s ambient light colour, linear RGB in the host's units; 0 otherwise.
    pub ambient_color: [f32; 3],
    /// How `fs_lit` lights surfaces: [`LightModel::code`].
    pub light_model: u32,
    /// How the colour draws look the shadow map up ([`ShadowLookup::uniforms`]; `count` 0: no
    /// shadows, the map is not read).
    pub shadow: ShadowLookupUniforms,
}

const _: () = assert!(std::mem::size_of::<FrameUniforms>() == 784);

/// How the colour draws light surfaces (`RenderOptions::light_model`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LightModel {
    /// vat's own: `light = ambient * sky + (1 - ambient) * direct`, with `ambient` a share (0..1),
    /// `sky` a tint by the normal's height and `direct` a Lambert sun of `sun_color` (plus GGX
    /// specular for assets with materials); `sun_color` 1 is a white surface facing the sun at
    /// full brightness. Made for vat's own renders.
    #[default]
    Vat,
    /// The physically based model of Bevy's `StandardMaterial` (Filament's) for one directional
    /// light and a uniform ambient light, to stand beside a host's PBR meshes: Burley diffuse,
    /// GGX specular with height-correlated Smith visibility, Schlick Fresnel and multiple-scattering
    /// compensation, ambient through the split-sum terms. `sun_color` is the sun's colour times
    /// its illuminance (lux) times the camera's exposure, `ambient_color` the ambient light's
    /// colour times its brightness times the exposure; the result is linear radiance in the same
    /// units, for the host's tone mapping. Surfaces without materials are a default
    /// `StandardMaterial` of their colour (dielectric, perceptual roughness 0.5).
    Pbr {
        /// The ambient light's colour, linear RGB in the host's units (see above).
        ambient_color: [f32; 3],
    },
}

/// [`FrameUniforms::light_model`] of [`LightModel::Vat`] (the WGSL `LIGHT_MODEL_VAT`).
pub const LIGHT_MODEL_VAT: u32 = 0;
/// [`FrameUniforms::light_model`] of [`LightModel::Pbr`] (the WGSL `LIGHT_MODEL_PBR`).
pub const LIGHT_MODEL_PBR: u32 = 1;

impl LightModel {
    /// The model's code in [`FrameUniforms::light_model`].
    pub const fn code(&self) -> u32 {
        match self {
            Self::Vat => LIGHT_MODEL_VAT,
            Self::Pbr { .. } => LIGHT_MODEL_PBR,
        }
    }
}

/// The previous frame a crowd's motion vectors are computed against ([`FrameInputs::history`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameHistory {
    /// The camera's world-to-clip matrix of the previous frame, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// The crowd's clock at the previous frame, seconds.
    pub time: f32,
    /// Index of the first previous record in the record buffer (its capacity; > 0).
    pub previous_records: u32,
}

/// What [`FrameUniforms::new`] builds the per-frame uniforms from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameInputs<'a> {
    /// The camera's world-to-clip matrix, column-major, depth 0..1.
    pub view_proj: [[f32; 4]; 4],
    /// The camera's position, metres.
    pub camera_position: [f32; 3],
    /// The crowd's epoch-relative clock, seconds.
    pub time: f32,
    /// The frustum planes of `view_proj` (inward, normalised), as the CPU culling uses them.
    pub frustum_planes: [[f32; 4]; 6],
    /// Unit vector towards the sun (normalised here).
    pub sun_direction: [f32; 3],
    /// Ambient light, 0..=1.
    pub ambient: f32,
    /// The asset's LOD switch distances.
    pub lod_thresholds: &'a crate::lod::LodThresholds,
    /// LOD bias in doublings of distance.
    pub lod_bias: f32,
    /// Coarsest LOD decoding clip B while cross-fading.
    pub cross_fade_max_lod: u32,
    /// Coarsest LOD casting shadows.
    pub shadow_max_lod: u32,
    /// Colour of the sun's light, linear RGB.
    pub sun_color: [f32; 3],
    /// How the shadow map is looked up ([`ShadowLookup::built_in`] for vat's own map, the host's
    /// for its map), or `None` for no shadows.
    pub shadow: Option<ShadowLookup>,
    /// Half the side of the ground square around the camera, metres (used only when it is drawn).
    pub ground_half_extent: f32,
    /// The previous frame, for motion vectors; `None`: no history (the previous frame is this one,
    /// so every motion vector is zero).
    pub history: Option<FrameHistory>,
    /// Sub-pixel jitter of the colour and prepass draws, NDC units ([`FrameUniforms::jitter`]);
    /// non-finite components are 0.
    pub jitter: [f32; 2],
    /// How the colour draws light surfaces.
    pub light_model: LightModel,
}

/// The most cascades a [`ShadowLookup`] holds (Bevy's `MAX_CASCADES_PER_LIGHT` on native targets).
pub const MAX_SHADOW_CASCADES: usize = 4;

/// One cascade of a sun shadow map ([`ShadowLookup::cascades`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShadowCascade {
    /// World to the cascade's clip space, column-major, depth 0..1 (reverse-Z or not, as the
    /// lookup's [`ShadowLookup::reverse_z`] says).
    pub view_proj: [[f32; 4]; 4],
    /// View distance where the cascade ends, in scene length units along
    /// [`ShadowLookup::view_depth`]: a point is looked up in the first cascade whose `far_bound`
    /// exceeds its distance. [`f32::MAX`] for a map that covers every distance.
    pub far_bound: f32,
    /// Offset along the surface normal before this cascade's lookup, scene length units (Bevy:
    /// `shadow_normal_bias * texel_size`).
    pub normal_offset: f32,
    /// Layer of the map array that holds the cascade.
    pub layer: u32,
}

/// How the colour draws look a sun shadow map up: `light = ambient * sky + (1 - ambient) * max(n .
/// sun, 0) * sun_color * shadow`, with `shadow = 1 - strength * (1 - lit)`. `lit` is 2 x 2
/// percentage-closer filtering of a depth comparison in one cascade, at the texel its `view_proj`
/// maps `world + n * normal_offset + light_offset` to; the reference depth is moved `bias` towards
/// the light first. Clip-space `y` is up and texture `v` down (`uv = (x * 0.5 + 0.5, 0.5 - y * 0.5)`
/// of the NDC); points outside the cascade (`uv` or depth outside 0..1) are lit.
///
/// - **Which cascade.** The first whose [`ShadowCascade::far_bound`] exceeds the point's view
///   distance `dot(view_depth, (world, 1))`; past the last one a point is lit. Over the last
///   `overlap` share of a cascade's range the next one is blended in linearly
///   ([`cascade_weights`](Self::cascade_weights) computes the choice on the CPU). This is how Bevy
///   picks and blends its directional cascades.
/// - **Depth convention.** Standard maps hold 0 nearest the light and are lit where `reference <=
///   stored` (cleared to 1); reverse-Z maps ([`reverse_z`](Self::reverse_z), Bevy's) hold 1 nearest
///   the light and are lit where `reference >= stored` (cleared to 0). Both are sampled through the
///   one comparison sampler ([`crate::pipeline::SHADOW_SAMPLER`]); the shader takes the
///   complement for reverse-Z, exactly.
///
/// vat's own map is one cascade covering every distance ([`built_in`](Self::built_in)); a host's
/// cascade array is described with [`cascaded`](Self::cascaded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShadowLookup {
    /// The cascades, nearest first; entries from `cascade_count` on are unused.
    pub cascades: [ShadowCascade; MAX_SHADOW_CASCADES],
    /// Cascades in use, 1..=[`MAX_SHADOW_CASCADES`].
    pub cascade_count: usize,
    /// The view distance of a world point is `dot(view_depth, (x, y, z, 1))`: the camera's
    /// view-space depth row, negated so that points ahead are positive (Bevy: minus the `z` row of
    /// `view_from_world`). All zeros with one cascade.
    pub view_depth: [f32; 4],
    /// Share of each cascade's far end that is blended with the next one, 0..1 (Bevy:
    /// `CascadeShadowConfig::overlap_proportion`).
    pub overlap: f32,
    /// Whether the map is reverse-Z (1 nearest the light, cleared to 0).
    pub reverse_z: bool,
    /// How dark shadowed surfaces get: 0 = not at all, 1 = only ambient light.
    pub strength: f32,
    /// Moves the reference depth towards the light before the comparison, depth units (0..1).
    pub bias: f32,
    /// Added to every looked-up point, scene length units (Bevy: `shadow_depth_bias` times the unit
    /// vector towards the light); zero for vat's own map.
    pub light_offset: [f32; 3],
}

/// How dark vat's own shadows get ([`ShadowLookup::strength`]).
pub const SHADOW_STRENGTH: f32 = 0.75;

/// The comparison bias of vat's own shadow lookups ([`ShadowLookup::bias`]), depth units.
pub const SHADOW_COMPARE_BIAS: f32 = 0.0015;

/// One cascade as the shader reads it (`VatShadowCascade` of [`SHADOW_WGSL`], 80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ShadowCascadeUniforms {
    /// [`ShadowCascade::view_proj`].
    pub view_proj: [[f32; 4]; 4],
    /// [`ShadowCascade::far_bound`].
    pub far_bound: f32,
    /// [`ShadowCascade::normal_offset`].
    pub normal_offset: f32,
    /// [`ShadowCascade::layer`].
    pub layer: u32,
    /// Padding; 0.
    pub _pad: u32,
}

/// A [`ShadowLookup`] as the shader reads it (`VatShadowLookup` of [`SHADOW_WGSL`], 368 bytes):
/// [`FrameUniforms::shadow`], and what a host puts in its own uniforms to call
/// `vat_shadow_lookup`. Built with [`ShadowLookup::uniforms`]; all zeros reads no map.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ShadowLookupUniforms {
    /// The cascades; entries from `count` on are zero.
    pub cascades: [ShadowCascadeUniforms; MAX_SHADOW_CASCADES],
    /// [`ShadowLookup::view_depth`].
    pub view_depth: [f32; 4],
    /// [`ShadowLookup::light_offset`].
    pub light_offset: [f32; 3],
    /// Cascades in use; 0: no shadows (the map is not read).
    pub count: u32,
    /// [`ShadowLookup::overlap`].
    pub overlap: f32,
    /// [`ShadowLookup::bias`].
    pub bias: f32,
    /// [`ShadowLookup::strength`], 0..=1; 0: the map is not read.
    pub strength: f32,
    /// 1 for a reverse-Z map, else 0.
    pub reverse_z: u32,
}

const _: () = assert!(std::mem::size_of::<ShadowCascadeUniforms>() == 80);
const _: () = assert!(std::mem::size_of::<ShadowLookupUniforms>() == 368);

/// Why [`ShadowLookup::cascaded`] refused its cascades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShadowCascadeError {
    /// No cascade, or more than [`MAX_SHADOW_CASCADES`].
    #[error("a shadow lookup takes 1 to {MAX_SHADOW_CASCADES} cascades, not {0}")]
    Count(usize),
    /// The far bounds do not increase from one cascade to the next (or one is not a number).
    #[error("cascade {0}'s far bound does not exceed the previous cascade's")]
    Unordered(usize),
}

impl ShadowLookup {
    /// The lookup of vat's own shadow map `view_proj` ([`shadow_view_proj`]) in a scene of
    /// `scene_unit` length units per metre (`RenderOptions::scene_unit`; not finite or `<= 0`
    /// means 1): one standard (not reverse-Z) cascade in layer 0 covering every distance,
    /// [`SHADOW_STRENGTH`], [`SHADOW_COMPARE_BIAS`], and a normal offset of
    /// [`SHADOW_NORMAL_OFFSET`] metres.
    pub fn built_in(view_proj: [[f32; 4]; 4], scene_unit: f32) -> Self {
        let cascade = ShadowCascade {
            view_proj,
            far_bound: f32::MAX,
            normal_offset: SHADOW_NORMAL_OFFSET * sanitized_scene_unit(scene_unit),
            layer: 0,
        };
        Self {
            cascades: [cascade; MAX_SHADOW_CASCADES],
            cascade_count: 1,
            view_depth: [0.0; 4],
            overlap: 0.0,
            reverse_z: false,
            strength: SHADOW_STRENGTH,
            bias: SHADOW_COMPARE_BIAS,
            light_offset: [0.0; 3],
        }
    }

    /// A host's single standard shadow map `view_proj` (layer 0) looked up like vat's own
    /// (strength, bias and normal offset of [`built_in`](Self::built_in) at scene unit 1); set the
    /// fields to the host's own values.
    pub fn host(view_proj: [[f32; 4]; 4]) -> Self {
        Self::built_in(view_proj, 1.0)
    }

    /// A host's cascaded map: `cascades` nearest first (1..=[`MAX_SHADOW_CASCADES`], far bounds
    /// increasing), chosen by the view distance `dot(view_depth, (world, 1))` and blended over the
    /// last `overlap` share of each; `reverse_z` for maps holding 1 nearest the light. Strength 1
    /// (only ambient light in full shadow), no bias and no light offset: set those fields to the
    /// host's values.
    ///
    /// # Errors
    /// [`ShadowCascadeError`] for no cascade, too many, or far bounds that do not increase.
    pub fn cascaded(
        cascades: &[ShadowCascade],
        view_depth: [f32; 4],
        overlap: f32,
        reverse_z: bool,
    ) -> Result<Self, ShadowCascadeError> {
        let (&first, _) = cascades.split_first().ok_or(ShadowCascadeError::Count(0))?;
        if cascades.len() > MAX_SHADOW_CASCADES {
            return Err(ShadowCascadeError::Count(cascades.len()));
        }
        // Anything but "less" (NaN bounds included) is refused.
        let increasing = |k: usize| {
            cascades[k - 1].far_bound.partial_cmp(&cascades[k].far_bound) == Some(std::cmp::Ordering::Less)
        };
        if let Some(k) = (1..cascades.len()).find(|&k| !increasing(k)) {
            return Err(ShadowCascadeError::Unordered(k));
        }
        let mut all = [first; MAX_SHADOW_CASCADES];
        all[..cascades.len()].copy_from_slice(cascades);
        Ok(Self {
            cascades: all,
            cascade_count: cascades.len(),
            view_depth,
            overlap,
            reverse_z,
            strength: 1.0,
            bias: 0.0,
            light_offset: [0.0; 3],
        })
    }

    /// The cascades in use.
    pub fn active_cascades(&self) -> &[ShadowCascade] {
        &self.cascades[..self.cascade_count.min(MAX_SHADOW_CASCADES)]
    }

    /// The cascades the shader reads for a point at view distance `distance`, with their weights:
    /// `[(k, 1)]` inside cascade `k`, `[(k, 1 - t), (k + 1, t)]` in the blended end of `k`, and
    /// none past the last cascade (the point is lit). The shader's choice, computed the same way
    /// in `f32`.
    pub fn cascade_weights(&self, distance: f32) -> Vec<(usize, f32)> {
        let cascades = self.active_cascades();
        let Some(k) = cascades.iter().position(|c| distance < c.far_bound) else {
            return Vec::new();
        };
        let Some(_) = cascades.get(k + 1) else {
            return vec![(k, 1.0)];
        };
        let far = cascades[k].far_bound;
        let next_near = (1.0 - finite_or_zero(self.overlap)) * far;
        if distance >= next_near && far > next_near {
            let t = (distance - next_near) / (far - next_near);
            vec![(k, 1.0 - t), (k + 1, t)]
        } else {
            vec![(k, 1.0)]
        }
    }

    /// The lookup as the shader reads it. Strengths that are not finite or negative are read as
    /// 0 and above 1 as 1; biases, offsets and the overlap that are not finite as 0 (the overlap
    /// clamped to 0..1); a lookup with a matrix that is not finite reads no map (count 0: every
    /// lookup would be NaN).
    pub fn uniforms(&self) -> ShadowLookupUniforms {
        let cascades = self.active_cascades();
        if cascades.iter().any(|c| !c.view_proj.iter().flatten().all(|v| v.is_finite())) {
            return ShadowLookupUniforms::zeroed();
        }
        let mut out = ShadowLookupUniforms::zeroed();
        for (slot, c) in out.cascades.iter_mut().zip(cascades) {
            *slot = ShadowCascadeUniforms {
                view_proj: c.view_proj,
                // NaN bounds would make every choice fail: read as covering nothing.
                far_bound: if c.far_bound.is_nan() { f32::NEG_INFINITY } else { c.far_bound },
                normal_offset: finite_or_zero(c.normal_offset),
                layer: c.layer,
                _pad: 0,
            };
        }
        out.view_depth = self.view_depth.map(finite_or_zero);
        out.light_offset = self.light_offset.map(finite_or_zero);
        out.count = cascades.len() as u32;
        out.overlap = finite_or_zero(self.overlap).clamp(0.0, 1.0);
        out.bias = finite_or_zero(self.bias);
        out.strength = finite_or_zero(self.strength).clamp(0.0, 1.0);
        out.reverse_z = u32::from(self.reverse_z);
        out
    }
}

/// How far the shadow map reaches beyond the view towards the sun, for casters outside it, metres at
/// scene unit 1 (backends pass `SHADOW_CASTER_MARGIN * scene_unit` to [`shadow_view_proj`]).
pub const SHADOW_CASTER_MARGIN: f32 = 30.0;

/// Offset along the surface normal before the shadow lookup, metres at scene unit 1.
pub const SHADOW_NORMAL_OFFSET: f32 = 0.03;

fn finite_or_zero(v: f32) -> f32 {
    if v.is_finite() { v } else { 0.0 }
}

/// `unit` if it is finite and `> 0`, else 1 (see `RenderOptions::scene_unit`).
pub fn sanitized_scene_unit(unit: f32) -> f32 {
    if unit.is_finite() && unit > 0.0 { unit } else { 1.0 }
}

impl Default for FrameUniforms {
    /// All zeros.
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

impl FrameUniforms {
    /// The uniforms of one frame. With `shadow: None`, `light_view_proj` is the identity and
    /// `shadow` all zeros (the shadow map is never read); else `light_view_proj` is cascade 0's
    /// matrix and `shadow` is [`ShadowLookup::uniforms`]. Non-finite or negative sun colours are
    /// read as 0.
    pub fn new(inputs: &FrameInputs<'_>) -> Self {
        let mut lod_distances = [[0.0f32; 4]; 2];
        for (i, &d) in inputs.lod_thresholds.as_slice().iter().enumerate() {
            lod_distances[i / 4][i % 4] = d;
        }
        let sun = glam::Vec3::from(inputs.sun_direction).try_normalize().unwrap_or(glam::Vec3::Y);
        let shadow = inputs.shadow.map_or_else(ShadowLookupUniforms::zeroed, |s| s.uniforms());
        // vat's own shadow pass draws through cascade 0 (its only one).
        let light_view_proj = if shadow.count > 0 {
            shadow.cascades[0].view_proj
        } else {
            glam::Mat4::IDENTITY.to_cols_array_2d()
        };
        Self {
            view_proj: inputs.view_proj,
            light_view_proj,
            camera_position: inputs.camera_position,
            time: inputs.time,
            sun_direction: sun.to_array(),
            ambient: inputs.ambient,
            frustum_planes: inputs.frustum_planes,
            lod_distances,
            lod_bias: inputs.lod_bias,
            lod_count: inputs.lod_thresholds.lod_count(),
            // Clamped to the asset's last LOD (the same selection: no LOD is past it), so the
            // uniforms never name a LOD the asset lacks.
            cross_fade_max_lod: inputs.cross_fade_max_lod.min(inputs.lod_thresholds.lod_count() - 1),
            shadow_max_lod: inputs.shadow_max_lod.min(inputs.lod_thresholds.lod_count() - 1),
            sun_color: inputs.sun_color.map(|c| finite_or_zero(c).max(0.0)),
            ground_half_extent: inputs.ground_half_extent,
            previous_view_proj: inputs.history.map_or(inputs.view_proj, |h| h.view_proj),
            previous_time: inputs.history.map_or(inputs.time, |h| h.time),
            previous_records: inputs.history.map_or(0, |h| h.previous_records),
            jitter: inputs.jitter.map(finite_or_zero),
            ambient_color: match inputs.light_model {
                LightModel::Pbr { ambient_color } => ambient_color.map(|c| finite_or_zero(c).max(0.0)),
                LightModel::Vat => [0.0; 3],
            },
            light_model: inputs.light_model.code(),
            shadow,
        }
    }
}

/// The sun's shadow-map matrix for a camera: an orthographic projection looking along
/// `-sun_direction`, fitted around the bounding sphere of the camera frustum's first
/// `shadow_distance` metres (so the map follows the camera and does not shimmer with its rotation),
/// reaching `caster_margin` metres further towards the sun for casters outside the view. Column-major,
/// depth 0..1 (near the sun = 0). `view_proj` may be standard or reverse-Z, with a finite or an
/// infinite far plane. `None` if `view_proj` is not invertible.
pub fn shadow_view_proj(
    view_proj: &[[f32; 4]; 4],
    sun_direction: [f32; 3],
    shadow_distance: f32,
    caster_margin: f32,
) -> Option<[[f32; 4]; 4]> {
    use glam::{Mat4, Vec3, Vec4};
    let vp = Mat4::from_cols_array_2d(view_proj);
    if vp.determinant().abs() <= f32::MIN_POSITIVE || !vp.is_finite() {
        return None;
    }
    let inv = vp.inverse();
    let unproject = |x: f32, y: f32, z: f32| {
        let h = inv * Vec4::new(x, y, z, 1.0);
        h.truncate() / h.w
    };
    // Which clip depth is the near plane: 0, or 1 for reverse-Z. Perspective depth is hyperbolic,
    // so depth 0.5 lies next to the near plane either way; an infinite far plane unprojects to a
    // point at infinity (not finite), which is never the near one.
    let centre_ray = [unproject(0.0, 0.0, 0.0), unproject(0.0, 0.0, 0.5), unproject(0.0, 0.0, 1.0)];
    let reverse_z = !centre_ray[0].is_finite()
        || (centre_ray[2].is_finite()
            && centre_ray[2].distance(centre_ray[1]) < centre_ray[0].distance(centre_ray[1]));
    let (near_z, far_z) = if reverse_z { (1.0, 0.0) } else { (0.0, 1.0) };
    let mut corners = Vec::with_capacity(8);
    for (x, y) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        let near = unproject(x, y, near_z);
        let far = unproject(x, y, far_z);
        let reach = if far.is_finite() {
            let edge = far - near;
            let len = edge.length();
            edge * if len > 0.0 { (shadow_distance / len).min(1.0) } else { 0.0 }
        } else {
            // An infinite far plane: the first shadow_distance metres along the corner's ray.
            (unproject(x, y, 0.5) - near).normalize_or_zero() * shadow_distance
        };
        corners.push(near);
        corners.push(near + reach);
    }
    let centre = corners.iter().copied().sum::<Vec3>() / corners.len() as f32;
    let radius = corners.iter().map(|c| c.distance(centre)).fold(0.0f32, f32::max).max(1e-3);
    let sun = Vec3::from(sun_direction).try_normalize()?;
    let up = if sun.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y };
    let eye = centre + sun * (radius + caster_margin);
    let view = glam::camera::rh::view::look_at_mat4(eye, centre, up);
    let proj = glam::camera::rh::proj::directx::orthographic(
        -radius,
        radius,
        -radius,
        radius,
        0.0,
        2.0 * radius + caster_margin,
    );
    let m = proj * view;
    m.is_finite().then(|| m.to_cols_array_2d())
}

/// Constants of one baked asset (group 1, binding 2; uniform, 144 bytes).
///
/// For a rigid asset (`piece_count > 0`) `bounds_min` / `bounds_extent` are the box of every vertex
/// at every frame (culling's box), `frame_count` the piece texture's frames, `texture_width` and
/// `position_bits` 0 and `vertex_format` that of Packed64 (unused).
///
/// Kept in sync with `struct AssetConstants` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct AssetConstants {
    /// Lowest corner of the bake's bounding box, metres, object space.
    pub bounds_min: [f32; 3],
    /// Vertices per frame.
    pub vertex_count: u32,
    /// Size of the bounding box along each axis, metres, `>= 0`.
    pub bounds_extent: [f32; 3],
    /// Frames of all clips together (rows of the clip row map).
    pub frame_count: u32,
    /// Packed64 position bits per axis `[x, y, z, 0]`: each `<= 20`, `x + y + z == 40`; the fourth is
    /// reserved and must be 0.
    pub position_bits: [u32; 4],
    /// Width of the animation texture in texels; texel `t` sits at `(t % width, t / width)`.
    pub texture_width: u32,
    /// Entries of the clip table (`clips`, group 1 binding 1).
    pub clip_count: u32,
    /// Bones per frame of the bone texture, 0 without one.
    pub bone_count: u32,
    /// [`vertex_format_code`] of the asset's vertex format.
    pub vertex_format: u32,
    /// Width of the bone texture in texels, 0 without one.
    pub bone_texture_width: u32,
    /// Bone influences per vertex of the joints/weights streams (4 or 8), 0 without bones.
    pub influences: u32,
    /// Vertices of all socket attachments together ([`AttachmentMesh`]), 0 without attachments.
    pub attachment_vertex_count: u32,
    /// Morph targets of the live morph layer ([`crate::container::MorphAnimation`]), 0 without one
    /// (bone mode then adds no deltas).
    pub morph_target_count: u32,
    /// Width of the morph delta texture (`min(vertex_count, 2048)`), 0 without a morph layer.
    pub morph_texture_width: u32,
    /// Rows per band of the morph delta texture, 0 without a morph layer.
    pub morph_rows_per_band: u32,
    /// Width of the morph weights texture in texels, 0 without a morph layer.
    pub morph_weights_width: u32,
    /// Pieces of the rigid animation ([`crate::container::RigidAnimation`]), 0 for a soft asset.
    pub piece_count: u32,
    /// Lowest corner of the rigid pivot box, metres, object space (0 for a soft asset).
    pub pivot_min: [f32; 3],
    /// Width of the piece texture in texels (texel `frame * piece_count + piece` at
    /// `(t % width, t / width)`), 0 for a soft asset.
    pub piece_texture_width: u32,
    /// Size of the rigid pivot box along each axis, metres, `>= 0` (0 for a soft asset).
    pub pivot_extent: [f32; 3],
    /// Width of the rigid vertex texture in texels (texel `v` at `(v % width, v / width)`), 0 for a
    /// soft asset.
    pub rigid_vertex_width: u32,
    /// 1 when the asset has per-frame tangent frames (`vat_tangent_texture`), else 0: the VAT
    /// path then decodes each vertex's tangent (one more texel fetch).
    pub tangents: u32,
    /// Materials of the asset ([`crate::container::Manifest::materials`]): the fragment stage shades
    /// with the material table and textures when not 0, with the built-in palette when 0.
    pub material_count: u32,
    /// Material variants of the asset ([`crate::container::Manifest::material_variants`]): an
    /// instance's material variant `v` in `1..=material_variant_count` draws variant `v - 1`.
    pub material_variant_count: u32,
    /// Width of the fluid lookup texture in texels ([`crate::fluid`]; frame `f`'s entry of corner
    /// `c` is lane `e % 4` of texel `e / 4`, `e = f * 4 * ceil(vertex_count / 4) + c`), 0 for other
    /// assets. A fluid asset's `vertex_count` is its pool's corners and `frame_count` its frames.
    pub fluid_lookup_width: u32,
    /// Lowest corner of the box particle centres are quantised into ([`crate::sprite`]), metres,
    /// object space; 0 for other assets. (`bounds_min`/`bounds_extent` of a sprite asset are its
    /// card box, [`crate::container::SpriteAnimation::card_bounds`], which culling uses.)
    pub particle_min: [f32; 3],
    /// Width of the particle texture in texels (texel `frame * slots + slot` at
    /// `(t % width, t / width)`, `slots = vertex_count / 4`), 0 for other assets.
    pub particle_texture_width: u32,
    /// Size of the particle centre box along each axis, metres, `>= 0` (0 for other assets).
    pub particle_extent: [f32; 3],
    /// The largest card edge length, metres (a size field of 65535), 0 for other assets.
    pub particle_max_size: f32,
}

const _: () = assert!(std::mem::size_of::<AssetConstants>() == 176);

impl AssetConstants {
    /// The constants of a validated asset's vertex animation (or rigid animation); `None` if it was
    /// baked with neither. Backends upload this as is: they never re-derive it.
    pub fn from_manifest(manifest: &crate::container::Manifest) -> Option<Self> {
        if let (None, Some(ra)) = (&manifest.vertex_animation, &manifest.rigid_animation) {
            return Some(Self {
                bounds_min: ra.bounds.min,
                vertex_count: manifest.vertex_count,
                bounds_extent: ra.bounds.extent,
                frame_count: ra.layout.frame_count,
                position_bits: [0; 4],
                texture_width: 0,
                clip_count: manifest.clips.len() as u32,
                bone_count: 0,
                vertex_format: vertex_format_code(VertexFormat::Packed64),
                bone_texture_width: 0,
                influences: 0,
                attachment_vertex_count: manifest.attachments.iter().map(|a| a.vertex_count).sum(),
                morph_target_count: 0,
                morph_texture_width: 0,
                morph_rows_per_band: 0,
                morph_weights_width: 0,
                piece_count: ra.layout.vertex_count,
                pivot_min: ra.pivot_bounds.min,
                piece_texture_width: ra.layout.width,
                pivot_extent: ra.pivot_bounds.extent,
                rigid_vertex_width: ra.vertex_layout.width,
                tangents: 0,
                material_count: manifest.materials.len() as u32,
                material_variant_count: manifest.material_variants.len() as u32,
                fluid_lookup_width: 0,
                particle_min: [0.0; 3],
                particle_texture_width: 0,
                particle_extent: [0.0; 3],
                particle_max_size: 0.0,
            });
        }
        if let (None, Some(sa)) = (&manifest.vertex_animation, &manifest.sprite_animation) {
            let cards = sa.card_bounds();
            return Some(Self {
                bounds_min: cards.min,
                vertex_count: manifest.vertex_count,
                bounds_extent: cards.extent,
                frame_count: sa.layout.frame_count,
                position_bits: [0; 4],
                texture_width: 0,
                clip_count: manifest.clips.len() as u32,
                bone_count: 0,
                vertex_format: vertex_format_code(VertexFormat::Packed64),
                bone_texture_width: 0,
                influences: 0,
                attachment_vertex_count: 0,
                morph_target_count: 0,
                morph_texture_width: 0,
                morph_rows_per_band: 0,
                morph_weights_width: 0,
                piece_count: 0,
                pivot_min: [0.0; 3],
                piece_texture_width: 0,
                pivot_extent: [0.0; 3],
                rigid_vertex_width: 0,
                tangents: 0,
                material_count: manifest.materials.len() as u32,
                material_variant_count: manifest.material_variants.len() as u32,
                fluid_lookup_width: 0,
                particle_min: sa.position_bounds.min,
                particle_texture_width: sa.layout.width,
                particle_extent: sa.position_bounds.extent,
                particle_max_size: sa.max_size,
            });
        }
        let va = manifest.vertex_animation.as_ref()?;
        let fluid = manifest.fluid_animation.as_ref();
        let morph = manifest.morph_animation.as_ref();
        let [bx, by, bz] = va.position_bits;
        Some(Self {
            bounds_min: va.bounds.min,
            vertex_count: if fluid.is_some() { manifest.vertex_count } else { va.layout.vertex_count },
            bounds_extent: va.bounds.extent,
            frame_count: fluid.map_or(va.layout.frame_count, |f| f.lookup_layout.frame_count),
            position_bits: [bx, by, bz, 0],
            texture_width: va.layout.width,
            clip_count: manifest.clips.len() as u32,
            bone_count: manifest.bone_animation.as_ref().map_or(0, |b| b.layout.bone_count),
            vertex_format: vertex_format_code(va.format),
            bone_texture_width: manifest.bone_animation.as_ref().map_or(0, |b| b.layout.width),
            influences: manifest.bone_animation.as_ref().map_or(0, |b| b.influences),
            attachment_vertex_count: manifest.attachments.iter().map(|a| a.vertex_count).sum(),
            morph_target_count: morph.map_or(0, |m| m.layout.target_count),
            morph_texture_width: morph.map_or(0, |m| m.layout.width),
            morph_rows_per_band: morph.map_or(0, |m| m.layout.rows_per_band),
            morph_weights_width: morph.map_or(0, |m| m.weights_layout.width),
            tangents: u32::from(va.tangents.is_some()),
            piece_count: 0,
            pivot_min: [0.0; 3],
            piece_texture_width: 0,
            pivot_extent: [0.0; 3],
            rigid_vertex_width: 0,
            material_count: manifest.materials.len() as u32,
            material_variant_count: manifest.material_variants.len() as u32,
            fluid_lookup_width: fluid.map_or(0, |f| f.lookup_layout.width),
            particle_min: [0.0; 3],
            particle_texture_width: 0,
            particle_extent: [0.0; 3],
            particle_max_size: 0.0,
        })
    }
}

/// A texture a backend uploads as it is: its size, texel format and texel bytes (rows of `width`
/// texels, tightly packed, `width * height * format.bytes_per_texel()` bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextureData<'a> {
    /// Width in texels.
    pub width: u32,
    /// Height in texels.
    pub height: u32,
    /// Texel format.
    pub format: TexelFormat,
    /// The texels.
    pub bytes: &'a [u8],
}

/// One zero `Rgba32Float` texel: the 1x1 stand-in of an absent float texture.
static ZERO_RGBA32F_TEXEL: [u8; 16] = [0; 16];
/// One zero `Rgba8Uint` texel: the 1x1 stand-in of an absent unsigned texture.
static ZERO_RGBA8U_TEXEL: [u8; 4] = [0; 4];

/// The group 1 bindings of the vertex animation textures, every one present in every asset's bind
/// group: `vat_texture`, `vat_texture_1`, `vat_texture_2` (`texture_2d<u32>`), `vat_float_texture`,
/// `vat_float_texture_1` (`texture_2d<f32>`, not filterable), and `vat_tangent_texture` (the
/// `Rgba16Float` tangent-frame quaternions of `--tangents`, `texture_2d<f32>`). See
/// [`vertex_texture_bindings`].
pub const VERTEX_TEXTURE_BINDINGS: [&str; 6] = [
    "vat_texture",
    "vat_texture_1",
    "vat_texture_2",
    "vat_float_texture",
    "vat_float_texture_1",
    "vat_tangent_texture",
];

/// The bindings (names in [`VERTEX_TEXTURE_BINDINGS`]) that hold the textures of `format`, one per
/// texture in [`VertexFormat::texel_formats`] order:
///
/// | format | textures | bindings |
/// |---|---|---|
/// | Packed64 | `Rg32Uint` | `vat_texture` |
/// | Unorm16 | `Rgba16Uint`, `Rg16Uint` | `vat_texture`, `vat_texture_1` |
/// | F16 | `Rgba16Float`, `Rg16Float` | `vat_float_texture`, `vat_float_texture_1` |
/// | F32 | `Rgba32Float`, `Rg32Float` | `vat_float_texture`, `vat_float_texture_1` |
/// | Unorm8 | `Rgba8Uint`, `Rg8Uint` | `vat_texture`, `vat_texture_1` |
/// | Split8 | `Rgba8Uint` x 3 | `vat_texture`, `vat_texture_1`, `vat_texture_2` |
pub const fn vertex_texture_bindings(format: VertexFormat) -> &'static [&'static str] {
    match format {
        VertexFormat::Packed64 => &["vat_texture"],
        VertexFormat::Unorm16 | VertexFormat::Unorm8 => &["vat_texture", "vat_texture_1"],
        VertexFormat::Split8 => &["vat_texture", "vat_texture_1", "vat_texture_2"],
        VertexFormat::F16 | VertexFormat::F32 => &["vat_float_texture", "vat_float_texture_1"],
    }
}

/// What one vertex-texture binding holds for an asset ([`vertex_textures`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VertexTexture<'a> {
    /// The binding's WGSL name (one of [`VERTEX_TEXTURE_BINDINGS`]).
    pub name: &'static str,
    /// What to upload: one of the asset's textures, or a 1x1 zero stand-in.
    pub data: TextureData<'a>,
    /// Whether `data` is a stand-in (the format does not use this binding; the shader never reads it).
    pub stand_in: bool,
}

/// The vertex animation textures of a validated asset, one per binding of
/// [`VERTEX_TEXTURE_BINDINGS`] (in that order): the format's textures where
/// [`vertex_texture_bindings`] puts them, each `layout.width x layout.height` in its
/// [`TexelFormat`], and 1x1 zero stand-ins (`Rgba8Uint` for the unsigned bindings, `Rgba32Float` for
/// the float ones) elsewhere; all six stand-ins for a rigid asset (its pieces live in
/// [`rigid_textures`]) and a sprite asset (its particles live in [`sprite_particle_texture`]).
/// `None` if the asset has no vertex animation texture, rigid animation or sprite animation. Backends upload these as they are; they never re-derive them.
pub fn vertex_textures<'a>(asset: &crate::container::Asset<'a>) -> Option<[VertexTexture<'a>; 6]> {
    let m = asset.manifest();
    if m.vertex_animation.is_none() && m.rigid_animation.is_none() && m.sprite_animation.is_none() {
        return None;
    }
    let mut out = VERTEX_TEXTURE_BINDINGS.map(|name| {
        let float = name.starts_with("vat_float") || name == "vat_tangent_texture";
        let data = if float {
            TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Float, bytes: &ZERO_RGBA32F_TEXEL }
        } else {
            TextureData { width: 1, height: 1, format: TexelFormat::Rgba8Uint, bytes: &ZERO_RGBA8U_TEXEL }
        };
        VertexTexture { name, data, stand_in: true }
    });
    let Some(va) = m.vertex_animation.as_ref() else { return Some(out) };
    let textures = va.format.texel_formats().iter().zip(&va.textures);
    for ((&format, &blob), &name) in textures.zip(vertex_texture_bindings(va.format)) {
        let bytes = asset.get_blob(blob)?;
        let slot = out.iter_mut().find(|t| t.name == name)?;
        slot.data = TextureData { width: va.layout.width, height: va.layout.height, format, bytes };
        slot.stand_in = false;
    }
    if let Some(blob) = va.tangents {
        let bytes = asset.get_blob(blob)?;
        let slot = out.iter_mut().find(|t| t.name == "vat_tangent_texture")?;
        let format = TexelFormat::Rgba16Float;
        slot.data = TextureData { width: va.layout.width, height: va.layout.height, format, bytes };
        slot.stand_in = false;
    }
    Some(out)
}

/// The textures of bone mode's live morph layer, `[morph_texture, morph_weights]` (group 1, bindings
/// 9 and 10), borrowed from a validated asset: the delta texture and the weights track of its
/// [`crate::container::MorphAnimation`], or two 1x1 zero `Rgba32Float` textures when it has none, so
/// that every asset binds the same layout (with [`AssetConstants::morph_target_count`] 0 the shader
/// never reads them). Backends upload these as they are; they never re-derive them.
pub fn morph_textures<'a>(asset: &crate::container::Asset<'a>) -> [TextureData<'a>; 2] {
    let dummy =
        TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Float, bytes: &ZERO_RGBA32F_TEXEL };
    let Some(ma) = asset.manifest().morph_animation.as_ref() else { return [dummy, dummy] };
    match (asset.get_blob(ma.texture), asset.get_blob(ma.weights)) {
        (Some(deltas), Some(weights)) => [
            TextureData {
                width: ma.layout.width,
                height: ma.layout.height,
                format: ma.format,
                bytes: deltas,
            },
            TextureData {
                width: ma.weights_layout.width,
                height: ma.weights_layout.height,
                format: crate::layout::MORPH_WEIGHTS_TEXEL_FORMAT,
                bytes: weights,
            },
        ],
        // A parsed asset has both blobs; only a hand-made Asset could lack them.
        _ => [dummy, dummy],
    }
}

/// One zero `Rgba32Uint` texel: the 1x1 stand-in of an absent rigid texture.
static ZERO_RGBA32U_TEXEL: [u8; 16] = [0; 16];

/// The textures of the rigid mode, `[rigid_pieces, rigid_vertices]` (group 1, bindings 15 and 16),
/// borrowed from a validated asset: the piece texture and the rigid vertex texture of its
/// [`crate::container::RigidAnimation`] (both [`crate::rigid::RIGID_TEXEL_FORMAT`]), or two 1x1 zero
/// `Rgba32Uint` stand-ins for a soft asset (its pipelines never read them), so that every asset
/// binds the same layout. Backends upload these as they are; they never re-derive them.
pub fn rigid_textures<'a>(asset: &crate::container::Asset<'a>) -> [TextureData<'a>; 2] {
    let dummy =
        TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Uint, bytes: &ZERO_RGBA32U_TEXEL };
    let Some(ra) = asset.manifest().rigid_animation.as_ref() else { return [dummy, dummy] };
    match (asset.get_blob(ra.pieces), asset.get_blob(ra.vertices)) {
        (Some(pieces), Some(vertices)) => [
            TextureData {
                width: ra.layout.width,
                height: ra.layout.height,
                format: crate::rigid::RIGID_TEXEL_FORMAT,
                bytes: pieces,
            },
            TextureData {
                width: ra.vertex_layout.width,
                height: ra.vertex_layout.height,
                format: crate::rigid::RIGID_TEXEL_FORMAT,
                bytes: vertices,
            },
        ],
        // A parsed asset has both blobs; only a hand-made Asset could lack them.
        _ => [dummy, dummy],
    }
}

/// The fluid mode's lookup texture (group 1, binding 22), borrowed from a validated asset: that of
/// its [`crate::container::FluidAnimation`] ([`crate::fluid::LOOKUP_TEXEL_FORMAT`]), or a 1x1 zero
/// `Rgba32Uint` stand-in for other assets (their pipelines never read it).
pub fn fluid_lookup_texture<'a>(asset: &crate::container::Asset<'a>) -> TextureData<'a> {
    let dummy =
        TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Uint, bytes: &ZERO_RGBA32U_TEXEL };
    let Some(fa) = asset.manifest().fluid_animation.as_ref() else { return dummy };
    match asset.get_blob(fa.lookup) {
        Some(bytes) => TextureData {
            width: fa.lookup_layout.width,
            height: fa.lookup_layout.height,
            format: crate::fluid::LOOKUP_TEXEL_FORMAT,
            bytes,
        },
        // A parsed asset has the blob; only a hand-made Asset could lack it.
        None => dummy,
    }
}

/// The sprite mode's particle texture (group 1, binding 23), borrowed from a validated asset: that
/// of its [`crate::container::SpriteAnimation`] ([`crate::sprite::SPRITE_TEXEL_FORMAT`]), or a 1x1
/// zero `Rgba32Uint` stand-in for other assets (their pipelines never read it).
pub fn sprite_particle_texture<'a>(asset: &crate::container::Asset<'a>) -> TextureData<'a> {
    let dummy =
        TextureData { width: 1, height: 1, format: TexelFormat::Rgba32Uint, bytes: &ZERO_RGBA32U_TEXEL };
    let Some(sa) = asset.manifest().sprite_animation.as_ref() else { return dummy };
    match asset.get_blob(sa.particles) {
        Some(bytes) => TextureData {
            width: sa.layout.width,
            height: sa.layout.height,
            format: crate::sprite::SPRITE_TEXEL_FORMAT,
            bytes,
        },
        // A parsed asset has the blob; only a hand-made Asset could lack it.
        None => dummy,
    }
}

/// The clip table of an asset, in texture order, as the shader reads it.
pub fn clip_records(clips: &[Clip]) -> Vec<ClipRecord> {
    clips.iter().map(ClipRecord::from).collect()
}

/// One clip of an asset as the shader reads it (group 1, binding 1: an array of these; 32 bytes).
///
/// Kept in sync with `struct ClipRecord` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ClipRecord {
    /// Index of the clip's first frame among all frames of the texture.
    pub first_frame: u32,
    /// Stored frames, `>= 1`.
    pub frame_count: u32,
    /// Bit 0: [`CLIP_FLAG_LOOPING`]; other bits 0.
    pub flags: u32,
    /// Frames per second of the bake.
    pub fps: f32,
    /// Duration of one cycle, seconds.
    pub duration: f32,
    /// Metres travelled per cycle, 0 if the clip is not locomotion.
    pub stride: f32,
    /// Keeps the size at 32 bytes, the WGSL array stride; zero.
    pub _pad: [u32; 2],
}

const _: () = assert!(std::mem::size_of::<ClipRecord>() == 32);

impl From<&Clip> for ClipRecord {
    fn from(clip: &Clip) -> Self {
        Self {
            first_frame: clip.first_frame,
            frame_count: clip.frame_count,
            flags: match clip.mode {
                ClipMode::Looping => CLIP_FLAG_LOOPING,
                ClipMode::OneShot => 0,
            },
            fps: clip.fps,
            duration: clip.duration,
            stride: clip.stride,
            _pad: [0; 2],
        }
    }
}

/// Which instances `cs_decode` decodes (group 2, binding 1; uniform, 16 bytes).
///
/// Kept in sync with `struct DecodeParams` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct DecodeParams {
    /// Index of the first instance record decoded.
    pub first_instance: u32,
    /// Instance records decoded from `first_instance` on; the output holds
    /// `instance_count * vertex_count` [`DecodedVertex`]es.
    pub instance_count: u32,
    /// Keeps the size at 16 bytes; zero.
    pub _pad: [u32; 2],
}

const _: () = assert!(std::mem::size_of::<DecodeParams>() == 16);

/// One vertex decoded by `cs_decode` (group 2, binding 2: an array of these; 48 bytes). Vertex `v` of
/// instance `i` is at index `(i - first_instance) * vertex_count + v`.
///
/// Kept in sync with `struct DecodedVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct DecodedVertex {
    /// World position in metres (xyz), `w = 1`.
    pub position: [f32; 4],
    /// Unit world normal (xyz), `w = 0`.
    pub normal: [f32; 4],
    /// Unit world tangent (xyz, perpendicular to the normal) and the bitangent sign (`w`, ±1;
    /// `bitangent = cross(normal, tangent) * w`); all zero when the asset has no tangent frames or
    /// the vertex path decodes none (VAT mode decodes them).
    pub tangent: [f32; 4],
}

const _: () = assert!(std::mem::size_of::<DecodedVertex>() == 48);

/// Rest pose, material and surface attributes of one vertex (group 1, binding 6: an array of
/// these, one per vertex; 48 bytes). Built by [`rest_vertices`].
///
/// Kept in sync with `struct RestVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct RestVertex {
    /// Bind-pose position, metres, object space.
    pub position: [f32; 3],
    /// Material id (0 without a material stream).
    pub material: u32,
    /// Bind-pose unit normal.
    pub normal: [f32; 3],
    /// Linear RGBA vertex colour (the `Color0` stream), packed as `unorm8x4` (r in the low byte),
    /// WGSL `unpack4x8unorm`; `0xffff_ffff` (white) without one.
    pub color: u32,
    /// First texture coordinates (the `Uv0` stream; glTF convention, origin top-left), 0 without.
    pub uv: [f32; 2],
    /// Keeps the size at 48 bytes; zero.
    pub _pad: [u32; 2],
}

const _: () = assert!(std::mem::size_of::<RestVertex>() == 48);

/// `rgba` (each clamped to `0..=1`) packed as WGSL's `pack4x8unorm` does: round to nearest, r in
/// the low byte.
pub fn pack_unorm8x4(rgba: [f32; 4]) -> u32 {
    let byte = |c: f32| (c.clamp(0.0, 1.0) * 255.0).round() as u32;
    byte(rgba[0]) | (byte(rgba[1]) << 8) | (byte(rgba[2]) << 16) | (byte(rgba[3]) << 24)
}

/// No texture (a [`MaterialRecord`] layer index).
pub const NO_TEXTURE_LAYER: u32 = u32::MAX;

/// [`MaterialRecord::flags`] bit: the material is double-sided.
pub const MATERIAL_DOUBLE_SIDED: u32 = 1;

/// One material as the fragment stage reads it (group 1, binding 18: an array of these, indexed by
/// the vertex's material id; 64 bytes). Built by [`material_records`] from
/// [`crate::container::Material`].
///
/// Kept in sync with `struct MaterialRecord` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct MaterialRecord {
    /// Linear RGBA base colour factor.
    pub base_color_factor: [f32; 4],
    /// Linear RGB emitted light.
    pub emissive_factor: [f32; 3],
    /// Metalness, `0..=1`.
    pub metallic: f32,
    /// Perceptual roughness, `0..=1`.
    pub roughness: f32,
    /// Normal map x/y scale.
    pub normal_scale: f32,
    /// Alpha below which fragments are discarded ([`crate::container::AlphaMode::shader_cutoff`]).
    pub alpha_cutoff: f32,
    /// [`MATERIAL_DOUBLE_SIDED`].
    pub flags: u32,
    /// Layer of `material_color_texture` holding the base colour, or [`NO_TEXTURE_LAYER`].
    pub base_color_layer: u32,
    /// Layer of `material_data_texture` holding metallic-roughness, or [`NO_TEXTURE_LAYER`].
    pub metallic_roughness_layer: u32,
    /// Layer of `material_data_texture` holding the normal map, or [`NO_TEXTURE_LAYER`].
    pub normal_layer: u32,
    /// Wrap codes ([`crate::container::TextureWrap::code`]), 4 bits per texture (u in the low 2
    /// bits, v in the next 2): base colour in bits 0..4, metallic-roughness 4..8, normal 8..12.
    pub wrap: u32,
}

const _: () = assert!(std::mem::size_of::<MaterialRecord>() == 64);

/// The material table of a manifest, ready to upload: one [`MaterialRecord`] per material, then
/// for each material variant ([`crate::container::MaterialVariant`]) one more record per material
/// id (the record of the material it maps to), so that variant slot `s` (0 = as authored) of
/// material id `k` is record `s * material_count + k`; or one neutral record (white,
/// non-metallic, rough, untextured) without materials, since a storage binding cannot be empty.
/// Shaders use the table only when [`AssetConstants::material_count`] is not 0.
pub fn material_records(manifest: &crate::container::Manifest) -> Vec<MaterialRecord> {
    use crate::container::TextureBinding;
    let layer = |b: &Option<TextureBinding>| b.as_ref().map_or(NO_TEXTURE_LAYER, |b| b.layer);
    let wrap =
        |b: &Option<TextureBinding>| b.as_ref().map_or(0, |b| b.wrap_u.code() | (b.wrap_v.code() << 2));
    let records: Vec<MaterialRecord> = manifest
        .materials
        .iter()
        .map(|m| MaterialRecord {
            base_color_factor: m.base_color_factor,
            emissive_factor: m.emissive_factor,
            metallic: m.metallic_factor,
            roughness: m.roughness_factor,
            normal_scale: m.normal_scale,
            alpha_cutoff: m.alpha_mode.shader_cutoff(),
            flags: if m.double_sided { MATERIAL_DOUBLE_SIDED } else { 0 },
            base_color_layer: layer(&m.base_color_texture),
            metallic_roughness_layer: layer(&m.metallic_roughness_texture),
            normal_layer: layer(&m.normal_texture),
            wrap: wrap(&m.base_color_texture)
                | (wrap(&m.metallic_roughness_texture) << 4)
                | (wrap(&m.normal_texture) << 8),
        })
        .collect();
    let mut records = records;
    for variant in &manifest.material_variants {
        for &k in &variant.materials {
            let record = records.get(usize::from(k)).copied();
            records.extend(record);
        }
    }
    if records.is_empty() {
        return vec![MaterialRecord {
            base_color_factor: [1.0; 4],
            emissive_factor: [0.0; 3],
            metallic: 0.0,
            roughness: 1.0,
            normal_scale: 1.0,
            alpha_cutoff: 0.0,
            flags: 0,
            base_color_layer: NO_TEXTURE_LAYER,
            metallic_roughness_layer: NO_TEXTURE_LAYER,
            normal_layer: NO_TEXTURE_LAYER,
            wrap: 0,
        }];
    }
    records
}

/// One mip level of a [`MaterialTexture`]: every layer's texels at that level, layer 0 first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialTextureLevel<'a> {
    /// Width of the level in texels.
    pub width: u32,
    /// Height of the level in texels.
    pub height: u32,
    /// `4 * width * height * layers` bytes of RGBA8.
    pub bytes: &'a [u8],
}

/// A material texture array as a backend uploads it (group 1, bindings 19 and 20), borrowed from a
/// validated asset: RGBA8 layers with their full mip chain, sRGB (`Rgba8UnormSrgb`) or linear
/// (`Rgba8Unorm`). An asset without the array gets a 1x1, one-layer stand-in (white for colour,
/// a flat normal `(0.5, 0.5, 1)` for data) that no material reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialTexture<'a> {
    /// The binding name (`material_color_texture` or `material_data_texture`).
    pub name: &'static str,
    /// Whether the texels are sRGB-encoded.
    pub srgb: bool,
    /// Layers of the array (`>= 1`).
    pub layers: u32,
    /// Mip levels, largest first.
    pub levels: Vec<MaterialTextureLevel<'a>>,
    /// Whether this is the 1x1 stand-in.
    pub stand_in: bool,
}

static WHITE_RGBA8_TEXEL: [u8; 4] = [255; 4];
static FLAT_NORMAL_RGBA8_TEXEL: [u8; 4] = [128, 128, 255, 255];

/// The two material texture arrays of a validated asset, `[material_color_texture,
/// material_data_texture]`, or their stand-ins. `None` only if a blob is missing, which a parsed
/// asset never has.
pub fn material_textures<'a>(asset: &crate::container::Asset<'a>) -> Option<[MaterialTexture<'a>; 2]> {
    let textures = asset.manifest().material_textures.as_ref();
    let arrays = [
        ("material_color_texture", textures.and_then(|t| t.color.as_ref()), true, &WHITE_RGBA8_TEXEL),
        ("material_data_texture", textures.and_then(|t| t.data.as_ref()), false, &FLAT_NORMAL_RGBA8_TEXEL),
    ];
    let mut out = Vec::with_capacity(2);
    for (name, array, srgb, stand_in) in arrays {
        let texture = match array {
            None => MaterialTexture {
                name,
                srgb,
                layers: 1,
                levels: vec![MaterialTextureLevel { width: 1, height: 1, bytes: stand_in }],
                stand_in: true,
            },
            Some(a) => {
                let blob = asset.get_blob(a.texels)?;
                let mut levels = Vec::with_capacity(a.mip_levels as usize);
                for level in 0..a.mip_levels {
                    let (offset, len) = a.mip_range(level)?;
                    let bytes =
                        blob.get(usize::try_from(offset).ok()?..usize::try_from(offset + len).ok()?)?;
                    let (width, height) = a.mip_size(level);
                    levels.push(MaterialTextureLevel { width, height, bytes });
                }
                MaterialTexture { name, srgb, layers: a.layers.len() as u32, levels, stand_in: false }
            }
        };
        out.push(texture);
    }
    out.try_into().ok()
}

/// One vertex of the socket attachments (group 1, binding 7; 32 bytes). Built by
/// [`AttachmentMesh::from_asset`].
///
/// Kept in sync with `struct AttachmentVertex` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct AttachmentVertex {
    /// Position in the socket bone's space (socket transform applied), metres.
    pub position: [f32; 3],
    /// Material id.
    pub material: u32,
    /// Unit normal in the bone's space.
    pub normal: [f32; 3],
    /// Index in the capture rows of row 0 of frame 0 of the bone's capture track.
    pub capture_row: u32,
}

const _: () = assert!(std::mem::size_of::<AttachmentVertex>() == 32);

/// What `cs_cull` culls (group 2, binding 4; uniform, 16 bytes).
///
/// Kept in sync with `struct CullParams` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct CullParams {
    /// Records culled: `[0, record_count)`; dispatch `ceil(record_count / CULL_WORKGROUP_SIZE)`.
    pub record_count: u32,
    /// Entries per LOD region of the visible lists (at least `record_count`): LOD `l`'s list starts at
    /// `l * capacity`, which is also its draw's `first_instance`.
    pub capacity: u32,
    /// Coarsest LOD whose instances draw their attachments.
    pub attachment_max_lod: u32,
    /// 1 to count attachment draws, 0 to leave them empty.
    pub attachments: u32,
}

const _: () = assert!(std::mem::size_of::<CullParams>() == 16);

/// The `draw_args` buffer before culling: every indexed-indirect draw filled in except
/// `instance_count` (0, counted up by `cs_cull`). Body draw `l < lods.len()` draws LOD `l`'s index
/// range from `first_instance = l * capacity`; attachment draw `MAX_LODS + l` (for every LOD when
/// `attachment_index_count > 0`) draws the attachment indices that follow the LOD indices in the same
/// list region. Unused draws are all zero. `attachment_first_index` is where the attachment indices
/// start in the index buffer the draws use.
pub fn draw_args_template(
    lods: &[crate::container::Lod],
    capacity: u32,
    attachment_first_index: u32,
    attachment_index_count: u32,
) -> Vec<u32> {
    let words = DRAW_ARGS_WORDS as usize;
    let mut out = vec![0u32; DRAW_ARGS_COUNT as usize * words];
    for (l, lod) in lods.iter().enumerate().take(crate::lod::MAX_LODS) {
        let first_instance = (l as u32).saturating_mul(capacity);
        out[l * words..(l + 1) * words].copy_from_slice(&[
            lod.index_count,
            0,
            lod.first_index,
            0,
            first_instance,
        ]);
        if attachment_index_count > 0 {
            let a = (crate::lod::MAX_LODS + l) * words;
            out[a..a + words].copy_from_slice(&[
                attachment_index_count,
                0,
                attachment_first_index,
                0,
                first_instance,
            ]);
        }
    }
    out
}

/// The rest pose and material id of every vertex of a validated asset, from its `RestPosition`,
/// `RestNormal` and `MaterialId` streams (zeros, +Y normals and material 0 where a stream is absent).
pub fn rest_vertices(asset: &crate::container::Asset<'_>) -> Vec<RestVertex> {
    use crate::container::{ElementFormat, StreamKind};
    let n = asset.manifest().vertex_count as usize;
    let blank = RestVertex {
        position: [0.0; 3],
        material: 0,
        normal: [0.0, 1.0, 0.0],
        color: u32::MAX,
        uv: [0.0; 2],
        _pad: [0; 2],
    };
    let mut out = vec![blank; n];
    let vec3s = |bytes: &[u8]| -> Vec<[f32; 3]> {
        bytes.chunks_exact(12).map(bytemuck::pod_read_unaligned::<[f32; 3]>).collect()
    };
    if let Some((ElementFormat::F32x3, bytes)) = asset.stream(StreamKind::RestPosition) {
        for (v, p) in out.iter_mut().zip(vec3s(bytes)) {
            v.position = p;
        }
    }
    if let Some((ElementFormat::F32x3, bytes)) = asset.stream(StreamKind::RestNormal) {
        for (v, p) in out.iter_mut().zip(vec3s(bytes)) {
            v.normal = p;
        }
    }
    if let Some((format, bytes)) = asset.stream(StreamKind::MaterialId) {
        let ids: Vec<u32> = match format {
            ElementFormat::U8 => bytes.iter().map(|&b| u32::from(b)).collect(),
            ElementFormat::U16 => {
                bytes.chunks_exact(2).map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))).collect()
            }
            ElementFormat::U32 => {
                bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            }
            _ => Vec::new(),
        };
        for (v, id) in out.iter_mut().zip(ids) {
            v.material = id;
        }
    }
    match asset.stream(StreamKind::Uv0) {
        Some((ElementFormat::F32x2, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                v.uv = bytemuck::pod_read_unaligned(c);
            }
        }
        Some((ElementFormat::Unorm16x2, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                let unorm = |lo: u8, hi: u8| f32::from(u16::from_le_bytes([lo, hi])) / 65535.0;
                v.uv = [unorm(c[0], c[1]), unorm(c[2], c[3])];
            }
        }
        _ => {}
    }
    match asset.stream(StreamKind::Color0) {
        Some((ElementFormat::Unorm8x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                v.color = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        Some((ElementFormat::Unorm16x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                let unorm = |k: usize| f32::from(u16::from_le_bytes([c[2 * k], c[2 * k + 1]])) / 65535.0;
                v.color = pack_unorm8x4([unorm(0), unorm(1), unorm(2), unorm(3)]);
            }
        }
        Some((ElementFormat::F32x4, bytes)) => {
            for (v, c) in out.iter_mut().zip(bytes.chunks_exact(16)) {
                v.color = pack_unorm8x4(bytemuck::pod_read_unaligned(c));
            }
        }
        _ => {}
    }
    out
}

/// Every socket attachment of an asset merged into one mesh, ready to upload: vertices in their
/// socket bone's space, indices offset into the merged vertex array, and the capture rows
/// (`vec4` rows of the bone-to-object 3x4 affines, 3 per frame) of the bones carrying them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttachmentMesh {
    /// Vertices of all attachments, in manifest order.
    pub vertices: Vec<AttachmentVertex>,
    /// Triangle list indexing `vertices`.
    pub indices: Vec<u32>,
    /// Capture rows: for each carrying bone, `frame_count * 3` rows `[m0r, m1r, m2r, m3r]`.
    pub capture_rows: Vec<[f32; 4]>,
}

impl AttachmentMesh {
    /// The attachments of a validated asset. An attachment whose socket bone has no capture track is
    /// skipped (the container requires one for every socket, so only hand-made files lack it).
    pub fn from_asset(asset: &crate::container::Asset<'_>) -> Self {
        let m = asset.manifest();
        let frames = asset.frame_count() as usize;
        let mut out = Self::default();
        let mut tracks: Vec<(u32, u32)> = Vec::new(); // (bone, first row)
        for a in &m.attachments {
            let Some(socket) = m.sockets.get(a.socket as usize) else { continue };
            let row = match tracks.iter().find(|(b, _)| *b == socket.bone) {
                Some(&(_, row)) => row,
                None => {
                    let Some(bytes) = asset.capture_bytes(socket.bone) else { continue };
                    let row = out.capture_rows.len() as u32;
                    for f in bytes.chunks_exact(48).take(frames) {
                        let c: [f32; 12] = bytemuck::pod_read_unaligned(f);
                        // Column-major 3x4 (4 columns of 3) -> 3 rows of 4.
                        for r in 0..3 {
                            out.capture_rows.push([c[r], c[3 + r], c[6 + r], c[9 + r]]);
                        }
                    }
                    tracks.push((socket.bone, row));
                    row
                }
            };
            let l = socket.local;
            let local = glam::Mat4::from_cols(
                glam::Vec4::new(l[0], l[1], l[2], 0.0),
                glam::Vec4::new(l[3], l[4], l[5], 0.0),
                glam::Vec4::new(l[6], l[7], l[8], 0.0),
                glam::Vec4::new(l[9], l[10], l[11], 1.0),
            );
            let normal_matrix = glam::Mat3::from_mat4(local).inverse().transpose();
            let base = out.vertices.len() as u32;
            let positions = asset.blob(a.positions).chunks_exact(12);
            let normals = asset.blob(a.normals).chunks_exact(12);
            let materials = asset.blob(a.material_ids).iter();
            for ((p, n), &mat) in positions.zip(normals).zip(materials) {
                let p = local.transform_point3(glam::Vec3::from(bytemuck::pod_read_unaligned::<[f32; 3]>(p)));
                let n = normal_matrix * glam::Vec3::from(bytemuck::pod_read_unaligned::<[f32; 3]>(n));
                out.vertices.push(AttachmentVertex {
                    position: p.to_array(),
                    material: u32::from(mat),
                    normal: n.normalize_or(glam::Vec3::Y).to_array(),
                    capture_row: row,
                });
            }
            out.indices.extend(
                asset
                    .blob(a.indices)
                    .chunks_exact(4)
                    .map(|c| base + u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        out
    }
}
const _: () = assert!(std::mem::size_of::<InstanceRecord>() == 64);

// ---------------------------------------------------------------------------------------------------
// Binding table
// ---------------------------------------------------------------------------------------------------

/// A set of shader stages (a small bit set; combine with `|` or [`ShaderStages::union`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ShaderStages(u32);

impl ShaderStages {
    /// No stage.
    pub const NONE: Self = Self(0);
    /// The vertex stage.
    pub const VERTEX: Self = Self(1);
    /// The fragment stage.
    pub const FRAGMENT: Self = Self(1 << 1);
    /// The compute stage.
    pub const COMPUTE: Self = Self(1 << 2);
    /// Vertex and fragment: a render pipeline.
    pub const VERTEX_FRAGMENT: Self = Self::VERTEX.union(Self::FRAGMENT);
    /// Every stage.
    pub const ALL: Self = Self::VERTEX_FRAGMENT.union(Self::COMPUTE);

    /// The bits: vertex 1, fragment 2, compute 4 (wgpu's values for these stages; Vulkan's differ —
    /// fragment 0x10, compute 0x20 — so backends map stage by stage, never by value).
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Both sets together (`self | other`, usable in constants).
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every stage of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether `self` and `other` share a stage.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for ShaderStages {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}

/// What a sampled texture returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextureSampleType {
    /// `texture_2d<f32>`; `filterable` if a filtering sampler may be used with it.
    Float {
        /// Whether linear filtering is allowed.
        filterable: bool,
    },
    /// `texture_2d<u32>`.
    Uint,
    /// `texture_2d<i32>`.
    Sint,
    /// `texture_depth_2d`.
    Depth,
}

/// The kind of resource at a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BindingKind {
    /// `var<uniform>`; `min_size` is the struct's size in bytes.
    UniformBuffer {
        /// Smallest buffer binding the shader accepts, bytes.
        min_size: u64,
    },
    /// `var<storage, read>` (`read_only`) or `var<storage, read_write>`; `min_size` is the size of one
    /// element of the runtime-sized array (its stride), bytes.
    StorageBuffer {
        /// Whether the shader only reads the buffer.
        read_only: bool,
        /// Smallest buffer binding the shader accepts, bytes.
        min_size: u64,
    },
    /// A sampled (not storage) 2D texture, not arrayed, not multisampled (`textureLoad`, or a
    /// comparison sample for depth textures).
    Texture {
        /// What the texture returns.
        sample_type: TextureSampleType,
    },
    /// A sampled 2D texture array (`texture_2d_array`, or `texture_depth_2d_array` with a comparison
    /// sampler), not multisampled; colour arrays are sampled with a filtering sampler.
    TextureArray {
        /// What the texture returns.
        sample_type: TextureSampleType,
    },
    /// A sampler; `comparison` for `sampler_comparison` (depth comparisons, linear filtering),
    /// else a filtering sampler.
    Sampler {
        /// Whether it is a comparison sampler.
        comparison: bool,
    },
}

/// One resource binding of the shader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding {
    /// Bind group (WGSL `@group`, Vulkan descriptor set).
    pub group: u32,
    /// Binding within the group (WGSL `@binding`, Vulkan binding).
    pub binding: u32,
    /// The WGSL variable name.
    pub name: &'static str,
    /// The resource kind.
    pub kind: BindingKind,
    /// The stages that may use it (its visibility).
    pub stages: ShaderStages,
}

/// Group of per-frame resources ([`FrameUniforms`], the shadow map and its sampler).
pub const GROUP_FRAME: u32 = 0;
/// Group of per-asset resources (animation and bone textures, clip table, [`AssetConstants`], vertex
/// streams, attachments).
pub const GROUP_ASSET: u32 = 1;
/// Group of per-crowd resources (instance records, instance list; decode and culling parameters and
/// outputs).
pub const GROUP_CROWD: u32 = 2;
/// Group of the record scatter (`cs_scatter` only; see the module docs): changed records packed by the
/// CPU, their destinations, and the record buffer they are copied into.
pub const GROUP_SCATTER: u32 = 3;

const VERTEX_COMPUTE: ShaderStages = ShaderStages::VERTEX.union(ShaderStages::COMPUTE);

const fn uniform<T>() -> BindingKind {
    BindingKind::UniformBuffer { min_size: std::mem::size_of::<T>() as u64 }
}

const fn storage<T>(read_only: bool) -> BindingKind {
    BindingKind::StorageBuffer { read_only, min_size: std::mem::size_of::<T>() as u64 }
}

/// Bindings that only a host's shader reads (`vat_core::pipeline::HostShader`); vat's own entry
/// points leave them alone.
pub const HOST_ONLY_BINDINGS: &[&str] = &["instance_user_data"];

/// Every resource binding of [`SHADER_SOURCE`], sorted by group then binding; bindings of a group are
/// numbered from 0 without gaps.
pub const BINDINGS: &[Binding] = &[
    Binding {
        group: GROUP_FRAME,
        binding: 0,
        name: "frame",
        kind: uniform::<FrameUniforms>(),
        stages: ShaderStages::ALL,
    },
    Binding {
        group: GROUP_FRAME,
        binding: 1,
        name: "shadow_map",
        kind: BindingKind::TextureArray { sample_type: TextureSampleType::Depth },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_FRAME,
        binding: 2,
        name: "shadow_sampler",
        kind: BindingKind::Sampler { comparison: true },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 0,
        name: "vat_texture",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 1,
        name: "clips",
        kind: storage::<ClipRecord>(true),
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 2,
        name: "asset",
        kind: uniform::<AssetConstants>(),
        stages: ShaderStages::ALL,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 3,
        name: "bone_texture",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 4,
        name: "joints",
        kind: storage::<u32>(true),
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 5,
        name: "weights",
        kind: storage::<f32>(true),
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 6,
        name: "rest_vertices",
        kind: storage::<RestVertex>(true),
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 7,
        name: "attachment_vertices",
        kind: storage::<AttachmentVertex>(true),
        stages: ShaderStages::VERTEX,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 8,
        name: "captures",
        kind: storage::<[f32; 4]>(true),
        stages: ShaderStages::VERTEX,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 9,
        name: "morph_texture",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 10,
        name: "morph_weights",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 11,
        name: "vat_texture_1",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 12,
        name: "vat_texture_2",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 13,
        name: "vat_float_texture",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 14,
        name: "vat_float_texture_1",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 15,
        name: "rigid_pieces",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 16,
        name: "rigid_vertices",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 17,
        name: "vat_tangent_texture",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 18,
        name: "materials",
        kind: storage::<MaterialRecord>(true),
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 19,
        name: "material_color_texture",
        kind: BindingKind::TextureArray { sample_type: TextureSampleType::Float { filterable: true } },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 20,
        name: "material_data_texture",
        kind: BindingKind::TextureArray { sample_type: TextureSampleType::Float { filterable: true } },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 21,
        name: "material_sampler",
        kind: BindingKind::Sampler { comparison: false },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 22,
        name: "fluid_lookup",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 23,
        name: "sprite_particles",
        kind: BindingKind::Texture { sample_type: TextureSampleType::Uint },
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 0,
        name: "instances",
        kind: storage::<InstanceRecord>(true),
        stages: VERTEX_COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 1,
        name: "decode_params",
        kind: uniform::<DecodeParams>(),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 2,
        name: "decoded",
        kind: storage::<DecodedVertex>(false),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 3,
        name: "instance_list",
        kind: storage::<u32>(true),
        stages: ShaderStages::VERTEX,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 4,
        name: "cull_params",
        kind: uniform::<CullParams>(),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 5,
        name: "visible",
        kind: storage::<u32>(false),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 6,
        name: "draw_args",
        kind: storage::<u32>(false),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 7,
        name: "instance_user_data",
        kind: BindingKind::StorageBuffer { read_only: true, min_size: 16 },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_SCATTER,
        binding: 0,
        name: "scatter_indices",
        kind: storage::<u32>(true),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_SCATTER,
        binding: 1,
        name: "scatter_records",
        kind: storage::<InstanceRecord>(true),
        stages: ShaderStages::COMPUTE,
    },
    Binding {
        group: GROUP_SCATTER,
        binding: 2,
        name: "scatter_target",
        kind: storage::<InstanceRecord>(false),
        stages: ShaderStages::COMPUTE,
    },
];

/// The bindings of group `group`, in binding order (empty for a group that does not exist).
pub fn bindings_in_group(group: u32) -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(move |b| b.group == group)
}

/// The bindings of group `group` visible to any of `stages`: the layout of that group for a pipeline
/// made of those stages (a render pipeline passes [`ShaderStages::VERTEX_FRAGMENT`]).
pub fn bindings_for_stages(group: u32, stages: ShaderStages) -> impl Iterator<Item = &'static Binding> {
    bindings_in_group(group).filter(move |b| b.stages.intersects(stages))
}

/// Number of bind groups (descriptor sets) of the render, culling and decode pipelines (groups
/// `0..group_count()`). [`GROUP_SCATTER`], after them, is `cs_scatter`'s alone.
pub fn group_count() -> u32 {
    BINDINGS.iter().filter(|b| b.group != GROUP_SCATTER).map(|b| b.group + 1).max().unwrap_or(0)
}

/// How many resources of each kind one shader stage sees at most in one of vat's pipeline layouts:
/// what a device's per-stage limits must allow ([`stage_binding_counts`]). Backends turn it into
/// their device requirements (vat-wgpu's `required_limits`, vat-vulkan's `DeviceRequirements`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageBindingCounts {
    /// `var<uniform>` buffers.
    pub uniform_buffers: u32,
    /// `var<storage>` buffers.
    pub storage_buffers: u32,
    /// Sampled textures (arrays count once).
    pub sampled_textures: u32,
    /// Samplers, comparison ones included.
    pub samplers: u32,
}

/// The largest [`StageBindingCounts`] of `stage` (one of [`ShaderStages::VERTEX`], `FRAGMENT`,
/// `COMPUTE`) over vat's pipeline layouts: groups `0..group_count()` together, or
/// [`GROUP_SCATTER`] alone (`cs_scatter`'s layout).
pub fn stage_binding_counts(stage: ShaderStages) -> StageBindingCounts {
    let count = |groups: &mut dyn Iterator<Item = u32>| {
        let mut c = StageBindingCounts::default();
        for g in groups {
            for b in bindings_in_group(g).filter(|b| b.stages.contains(stage)) {
                match b.kind {
                    BindingKind::UniformBuffer { .. } => c.uniform_buffers += 1,
                    BindingKind::StorageBuffer { .. } => c.storage_buffers += 1,
                    BindingKind::Texture { .. } | BindingKind::TextureArray { .. } => c.sampled_textures += 1,
                    BindingKind::Sampler { .. } => c.samplers += 1,
                }
            }
        }
        c
    };
    let main = count(&mut (0..group_count()));
    let scatter = count(&mut std::iter::once(GROUP_SCATTER));
    StageBindingCounts {
        uniform_buffers: main.uniform_buffers.max(scatter.uniform_buffers),
        storage_buffers: main.storage_buffers.max(scatter.storage_buffers),
        sampled_textures: main.sampled_textures.max(scatter.sampled_textures),
        samplers: main.samplers.max(scatter.samplers),
    }
}

/// The per-stage limits a device needs for vat: the largest [`stage_binding_counts`] of the vertex,
/// fragment and compute stages, field by field.
pub fn max_stage_binding_counts() -> StageBindingCounts {
    [ShaderStages::VERTEX, ShaderStages::FRAGMENT, ShaderStages::COMPUTE]
        .into_iter()
        .map(stage_binding_counts)
        .fold(StageBindingCounts::default(), |a, c| StageBindingCounts {
            uniform_buffers: a.uniform_buffers.max(c.uniform_buffers),
            storage_buffers: a.storage_buffers.max(c.storage_buffers),
            sampled_textures: a.sampled_textures.max(c.sampled_textures),
            samplers: a.samplers.max(c.samplers),
        })
}

/// The most bind groups (descriptor sets) any of vat's pipeline layouts has: `cs_scatter`'s, whose
/// [`GROUP_SCATTER`] comes after the others.
pub fn required_bind_groups() -> u32 {
    group_count().max(GROUP_SCATTER + 1)
}

/// How [`ScatterPlan`] splits a frame's dirty record ranges: ranges of at least this many records are
/// written in place (one copy each); shorter ones are packed for `cs_scatter`.
pub const SCATTER_MIN_DIRECT_RECORDS: usize = 16;
/// Below this many short ranges, writing each in place is cheaper than a scatter pass.
pub const SCATTER_MIN_RANGES: usize = 16;

/// How a backend uploads a frame's changed records (the crowd's dirty ranges, ascending): long ranges
/// and few short ones are written in place, many short ones (a few moving instances spread over a
/// large crowd) are packed into two buffers and copied into place by one `cs_scatter` dispatch, so the
/// number of copy commands stays bounded whatever moves.
///
/// `indices` is what `scatter_indices` holds: the record count `n`, then the destination index of
/// each packed record; `records` is what `scatter_records` holds. Dispatch
/// `ceil(n / SCATTER_WORKGROUP_SIZE)` workgroups (linearised over x and y like `cs_cull`). Keep one
/// plan and call [`plan`](Self::plan) every frame: its buffers are reused.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScatterPlan {
    /// Positions in the planned `ranges` of the ranges to write in place.
    pub direct: Vec<usize>,
    /// `[n, destination_0, ..., destination_{n-1}]`; empty when nothing is scattered.
    pub indices: Vec<u32>,
    /// The `n` packed records.
    pub records: Vec<InstanceRecord>,
}

impl ScatterPlan {
    /// Splits `ranges` (`(first record index, records)`, as `Crowd::take_record_uploads` returns
    /// them) into in-place writes and a scatter, replacing the previous plan.
    pub fn plan(&mut self, ranges: &[(u32, &[InstanceRecord])]) {
        self.direct.clear();
        self.indices.clear();
        self.records.clear();
        let short = ranges.iter().filter(|(_, r)| r.len() < SCATTER_MIN_DIRECT_RECORDS).count();
        if short < SCATTER_MIN_RANGES {
            self.direct.extend(0..ranges.len());
            return;
        }
        self.indices.push(0);
        for (k, &(first, records)) in ranges.iter().enumerate() {
            if records.len() >= SCATTER_MIN_DIRECT_RECORDS {
                self.direct.push(k);
            } else {
                self.indices.extend((0..records.len() as u32).map(|j| first + j));
                self.records.extend_from_slice(records);
            }
        }
        self.indices[0] = self.records.len() as u32;
    }

    /// Records copied by the scatter pass (0: no pass needed).
    pub fn scattered(&self) -> u32 {
        self.records.len() as u32
    }

    /// Applies the plan of `ranges` to a CPU copy of the record buffer exactly as the GPU does
    /// (in-place writes, then the scatter): the reference for tests. Destinations past the end are
    /// skipped, as in the shader.
    pub fn apply(&self, ranges: &[(u32, &[InstanceRecord])], target: &mut [InstanceRecord]) {
        for &(first, records) in self.direct.iter().filter_map(|&k| ranges.get(k)) {
            let first = first as usize;
            if let Some(dst) = target.get_mut(first..first + records.len()) {
                dst.copy_from_slice(records);
            }
        }
        for (k, record) in self.records.iter().enumerate() {
            if let Some(dst) = self.indices.get(k + 1).and_then(|&i| target.get_mut(i as usize)) {
                *dst = *record;
            }
        }
    }
}

/// A pipeline stage an entry point runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShaderStage {
    /// `@vertex`.
    Vertex,
    /// `@fragment`.
    Fragment,
    /// `@compute`.
    Compute,
}

impl ShaderStage {
    /// The one-stage set of this stage.
    pub const fn stages(self) -> ShaderStages {
        match self {
            ShaderStage::Vertex => ShaderStages::VERTEX,
            ShaderStage::Fragment => ShaderStages::FRAGMENT,
            ShaderStage::Compute => ShaderStages::COMPUTE,
        }
    }
}

/// An entry point of [`SHADER_SOURCE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryPoint {
    /// The WGSL function name (kept as the SPIR-V entry point name by naga).
    pub name: &'static str,
    /// Its stage.
    pub stage: ShaderStage,
}

/// Entry point of the decode compute shader: every vertex of a range of instances to world space
/// ([`DecodedVertex`]), `@workgroup_size(`[`DECODE_WORKGROUP_SIZE`]`)`.
pub const ENTRY_POINT_DECODE: &str = "cs_decode";
/// [`ENTRY_POINT_DECODE`] in bone mode (skinning from the bone texture; same threads and output).
pub const ENTRY_POINT_DECODE_BONE: &str = "cs_decode_bone";
/// [`ENTRY_POINT_DECODE`] of a rigid asset (pieces from the piece texture; same threads and output).
pub const ENTRY_POINT_DECODE_RIGID: &str = "cs_decode_rigid";
/// Entry point of the culling compute shader (one thread per record, see [`CullParams`]).
pub const ENTRY_POINT_CULL: &str = "cs_cull";
/// Record scatter compute shader (group 3 only; see [`ScatterPlan`]).
pub const ENTRY_POINT_SCATTER: &str = "cs_scatter";
/// VAT-mode colour vertex shader (instance list + LOD index buffer).
pub const ENTRY_POINT_VS_VAT: &str = "vs_vat";
/// VAT-mode depth-only vertex shader of the shadow pass.
pub const ENTRY_POINT_VS_VAT_DEPTH: &str = "vs_vat_depth";
/// Bone-mode colour vertex shader.
pub const ENTRY_POINT_VS_BONE: &str = "vs_bone";
/// Bone-mode depth-only vertex shader.
pub const ENTRY_POINT_VS_BONE_DEPTH: &str = "vs_bone_depth";
/// [`ENTRY_POINT_DECODE`] of a fluid asset (corners through the lookup texture; a collapsed corner
/// decodes to all zeros, `position.w == 0`).
pub const ENTRY_POINT_DECODE_FLUID: &str = "cs_decode_fluid";
/// Fluid-mode colour vertex shader (a fluid asset drawn in `RenderMode::Vat`).
pub const ENTRY_POINT_VS_FLUID: &str = "vs_fluid";
/// Fluid-mode depth-only vertex shader.
pub const ENTRY_POINT_VS_FLUID_DEPTH: &str = "vs_fluid_depth";
/// [`ENTRY_POINT_DECODE`] of a sprite asset (card corners built facing `FrameUniforms::camera_position`;
/// a dead slot's corners decode to all zeros, `position.w == 0`).
pub const ENTRY_POINT_DECODE_SPRITE: &str = "cs_decode_sprite";
/// Sprite-mode colour vertex shader (a sprite asset drawn in `RenderMode::Vat`).
pub const ENTRY_POINT_VS_SPRITE: &str = "vs_sprite";
/// Sprite-mode depth-only vertex shader.
pub const ENTRY_POINT_VS_SPRITE_DEPTH: &str = "vs_sprite_depth";
/// Rigid-mode colour vertex shader (a rigid asset drawn in `RenderMode::Vat`).
pub const ENTRY_POINT_VS_RIGID: &str = "vs_rigid";
/// Rigid-mode depth-only vertex shader.
pub const ENTRY_POINT_VS_RIGID_DEPTH: &str = "vs_rigid_depth";
/// Rest-pose colour vertex shader (`RenderMode::Rest`: the bind pose, no animation fetched).
pub const ENTRY_POINT_VS_REST: &str = "vs_rest";
/// Rest-pose depth-only vertex shader.
pub const ENTRY_POINT_VS_REST_DEPTH: &str = "vs_rest_depth";
/// Socket-attachment colour vertex shader.
pub const ENTRY_POINT_VS_ATTACHMENT: &str = "vs_attachment";
/// Socket-attachment depth-only vertex shader.
pub const ENTRY_POINT_VS_ATTACHMENT_DEPTH: &str = "vs_attachment_depth";
/// Ground vertex shader (6 vertices, no buffers; see [`FrameUniforms::ground_half_extent`]).
pub const ENTRY_POINT_VS_GROUND: &str = "vs_ground";
/// The lit fragment shader of every colour pipeline that draws an asset.
pub const ENTRY_POINT_FS_LIT: &str = "fs_lit";
/// The ground's fragment shader (binds group 0 alone).
pub const ENTRY_POINT_FS_GROUND: &str = "fs_ground";
/// `fs_lit` plus the motion target (location 1), for pipelines with motion vectors.
pub const ENTRY_POINT_FS_LIT_MOTION: &str = "fs_lit_motion";
/// `fs_ground` plus the motion target (location 1).
pub const ENTRY_POINT_FS_GROUND_MOTION: &str = "fs_ground_motion";
/// Prepass fragment shader of the pipelines that draw an asset, normal target alone: writes
/// `vec4(n * 0.5 + 0.5, 1)` of the unit world normal at location 0 (Bevy's `Rgb10a2Unorm` normal
/// prepass), after `fs_lit`'s discards (back faces of single-sided materials, alpha mask).
pub const ENTRY_POINT_FS_PREPASS: &str = "fs_prepass";
/// [`ENTRY_POINT_FS_PREPASS`] plus the motion target at location 1 (`vec4(motion, 0, 0)`, see
/// `RenderOptions::motion_vectors` for the convention).
pub const ENTRY_POINT_FS_PREPASS_MOTION: &str = "fs_prepass_motion";
/// Prepass fragment shader with the motion target alone, at location 1 (location 0 has no
/// attachment: the pipeline's slot 0 is empty, with no writes), after `fs_lit`'s discards.
pub const ENTRY_POINT_FS_PREPASS_MOTION_ONLY: &str = "fs_prepass_motion_only";
/// Depth-only prepass fragment shader of the pipelines that draw an asset: no target, only
/// `fs_lit`'s discards, so the prepass's depth is the colour pass's.
pub const ENTRY_POINT_FS_PREPASS_DEPTH: &str = "fs_prepass_depth";
/// The ground's prepass fragment shader, normal target alone (group 0 alone; the ground's
/// depth-only prepass has no fragment stage).
pub const ENTRY_POINT_FS_GROUND_PREPASS: &str = "fs_ground_prepass";
/// [`ENTRY_POINT_FS_GROUND_PREPASS`] plus the motion target (location 1).
pub const ENTRY_POINT_FS_GROUND_PREPASS_MOTION: &str = "fs_ground_prepass_motion";
/// The ground's prepass fragment shader with the motion target alone (location 1).
pub const ENTRY_POINT_FS_GROUND_PREPASS_MOTION_ONLY: &str = "fs_ground_prepass_motion_only";

/// Every entry point of [`SHADER_SOURCE`], in source order.
pub const ENTRY_POINTS: &[EntryPoint] = &[
    EntryPoint { name: ENTRY_POINT_DECODE, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_DECODE_BONE, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_DECODE_RIGID, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_DECODE_FLUID, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_DECODE_SPRITE, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_CULL, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_SCATTER, stage: ShaderStage::Compute },
    EntryPoint { name: ENTRY_POINT_VS_VAT, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_VAT_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_BONE, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_BONE_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_RIGID, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_RIGID_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_FLUID, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_FLUID_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_SPRITE, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_SPRITE_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_REST, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_REST_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_ATTACHMENT, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_ATTACHMENT_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_GROUND, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_FS_LIT, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_GROUND, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_LIT_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_GROUND_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_PREPASS, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_PREPASS_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_PREPASS_MOTION_ONLY, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_PREPASS_DEPTH, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_GROUND_PREPASS, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_GROUND_PREPASS_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_GROUND_PREPASS_MOTION_ONLY, stage: ShaderStage::Fragment },
];
