//! The GPU interface both backends build from: the one WGSL source, the GPU-visible structs and the
//! binding table.
//!
//! - [`SHADER_SOURCE`] is the only shader text. vat-wgpu hands it to wgpu; vat-vulkan translates the same
//!   text to SPIR-V with naga. Variants are WGSL `override` constants set at pipeline creation
//!   ([`OVERRIDE_INTERPOLATION`]), never text templating.
//! - Every struct here is `#[repr(C)]` + [`Pod`], with explicit `_pad` fields, and is kept in sync with
//!   the WGSL struct of the same name; tests compare sizes and member offsets with what naga computes
//!   for the WGSL. [`crate::instance::InstanceRecord`] is the fourth such struct.
//! - [`BINDINGS`] lists every `@group/@binding` of the shader; each backend maps it to its own layout
//!   types (bind-group layouts, descriptor-set layouts). [`ENTRY_POINTS`] lists the entry points.
//!
//! | group | binding | WGSL name | resource | stages |
//! |---|---|---|---|---|
//! | 0 | 0 | `frame` | uniform [`FrameUniforms`] | vertex, fragment, compute |
//! | 1 | 0 | `vat_texture` | `texture_2d<u32>` (`Rg32Uint`, Packed64) | vertex, compute |
//! | 1 | 1 | `clips` | read-only storage `array<ClipRecord>` | vertex, compute |
//! | 1 | 2 | `asset` | uniform [`AssetConstants`] | vertex, compute |
//! | 2 | 0 | `instances` | read-only storage `array<InstanceRecord>` | vertex, compute |
//! | 2 | 1 | `decode_params` | uniform [`DecodeParams`] | compute |
//! | 2 | 2 | `decoded` | read-write storage `array<DecodedVertex>` | compute |
//!
//! A pipeline's layout for group `g` is [`bindings_for_stages`]`(g, stages of the pipeline)`: a render
//! pipeline's group 2 then holds only `instances`, the decode pipeline's all three.

use bytemuck::{Pod, Zeroable};

use crate::clip::{Clip, ClipMode};
use crate::encoding::VertexFormat;
use crate::instance::InstanceRecord;

#[cfg(test)]
mod tests;

/// The WGSL source of every vat shader (`src/shaders/vat.wgsl`).
pub const SHADER_SOURCE: &str = include_str!("shaders/vat.wgsl");

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

/// Threads per workgroup of `cs_decode` (the WGSL `@workgroup_size`). A dispatch decoding `n`
/// (instance, vertex) pairs needs `ceil(n / 64)` workgroups, which may be spread over y:
/// thread index `= global_id.y * (num_workgroups.x * 64) + global_id.x`.
pub const DECODE_WORKGROUP_SIZE: u32 = 64;

/// The code of a vertex format in [`AssetConstants::vertex_format`]: the variant's position in
/// [`VertexFormat`] (Packed64 0, Unorm16 1, F16 2, F32 3, Unorm8 4, Split8 5). The shader decodes only
/// Packed64 so far.
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

/// Per-frame values shared by every pass (group 0, binding 0; uniform, 304 bytes).
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
    /// Multiplies the camera distance before it is compared with `lod_distances` (1 = none; > 1 picks
    /// coarser LODs sooner).
    pub lod_bias: f32,
    /// LOD levels of the drawn asset, 1..=9.
    pub lod_count: u32,
    /// Coarsest LOD that still decodes clip B during a cross-fade (coarser ones show clip A only).
    pub cross_fade_max_lod: u32,
    /// Coarsest LOD drawn into the shadow map.
    pub shadow_max_lod: u32,
}

const _: () = assert!(std::mem::size_of::<FrameUniforms>() == 304);

/// Constants of one baked asset (group 1, binding 2; uniform, 64 bytes).
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
}

const _: () = assert!(std::mem::size_of::<AssetConstants>() == 64);

impl AssetConstants {
    /// The constants of a validated asset's vertex animation; `None` if it was baked without a vertex
    /// animation texture. Backends upload this as is: they never re-derive it.
    pub fn from_manifest(manifest: &crate::container::Manifest) -> Option<Self> {
        let va = manifest.vertex_animation.as_ref()?;
        let [bx, by, bz] = va.position_bits;
        Some(Self {
            bounds_min: va.bounds.min,
            vertex_count: va.layout.vertex_count,
            bounds_extent: va.bounds.extent,
            frame_count: va.layout.frame_count,
            position_bits: [bx, by, bz, 0],
            texture_width: va.layout.width,
            clip_count: manifest.clips.len() as u32,
            bone_count: manifest.bone_animation.as_ref().map_or(0, |b| b.layout.bone_count),
            vertex_format: vertex_format_code(va.format),
        })
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

/// One vertex decoded by `cs_decode` (group 2, binding 2: an array of these; 32 bytes). Vertex `v` of
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
}

const _: () = assert!(std::mem::size_of::<DecodedVertex>() == 32);
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

    /// The bits: vertex 1, fragment 2, compute 4 (the same values as wgpu's and Vulkan's flags for
    /// these stages).
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
    /// A sampled (not storage) 2D texture, not arrayed, not multisampled, read with `textureLoad`.
    Texture {
        /// What the texture returns.
        sample_type: TextureSampleType,
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

/// Group of per-frame resources ([`FrameUniforms`]).
pub const GROUP_FRAME: u32 = 0;
/// Group of per-asset resources (animation texture, clip table, [`AssetConstants`]).
pub const GROUP_ASSET: u32 = 1;
/// Group of per-crowd resources (instance records; decode parameters and output).
pub const GROUP_CROWD: u32 = 2;

const VERTEX_COMPUTE: ShaderStages = ShaderStages::VERTEX.union(ShaderStages::COMPUTE);

const fn uniform<T>() -> BindingKind {
    BindingKind::UniformBuffer { min_size: std::mem::size_of::<T>() as u64 }
}

const fn storage<T>(read_only: bool) -> BindingKind {
    BindingKind::StorageBuffer { read_only, min_size: std::mem::size_of::<T>() as u64 }
}

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

/// Number of bind groups (descriptor sets): one more than the highest group in [`BINDINGS`].
pub fn group_count() -> u32 {
    BINDINGS.iter().map(|b| b.group + 1).max().unwrap_or(0)
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

/// Every entry point of [`SHADER_SOURCE`].
pub const ENTRY_POINTS: &[EntryPoint] =
    &[EntryPoint { name: ENTRY_POINT_DECODE, stage: ShaderStage::Compute }];
