//! The binding table ([`BINDINGS`]): every group, binding, kind and stage set, the one source both
//! backends build their layouts from.

use super::*;

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

    /// A backend's flags of these stages: `empty` with `each` (the flags of the vertex, fragment and
    /// compute stage) or-ed in for every stage in the set. Backends map stage by stage this way,
    /// never by bit value.
    pub fn map<T: Copy + std::ops::BitOr<Output = T>>(self, empty: T, each: [T; 3]) -> T {
        let [vertex, fragment, compute] = each;
        [(Self::VERTEX, vertex), (Self::FRAGMENT, fragment), (Self::COMPUTE, compute)]
            .into_iter()
            .filter(|&(stage, _)| self.contains(stage))
            .fold(empty, |out, (_, flag)| out | flag)
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

pub(super) const fn uniform<T>() -> BindingKind {
    BindingKind::UniformBuffer { min_size: std::mem::size_of::<T>() as u64 }
}

pub(super) const fn storage<T>(read_only: bool) -> BindingKind {
    BindingKind::StorageBuffer { read_only, min_size: std::mem::size_of::<T>() as u64 }
}

/// Bindings that only a host's shader reads (`vat_core::backend::pipeline::HostShader`); vat's own entry
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
        group: GROUP_ASSET,
        binding: 24,
        name: "impostor_color",
        kind: BindingKind::TextureArray { sample_type: TextureSampleType::Float { filterable: true } },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_ASSET,
        binding: 25,
        name: "impostor_normal_depth",
        kind: BindingKind::TextureArray { sample_type: TextureSampleType::Float { filterable: true } },
        stages: ShaderStages::FRAGMENT,
    },
    Binding {
        group: GROUP_CROWD,
        binding: 0,
        name: "instances",
        kind: storage::<InstanceRecord>(true),
        // The fragment stage reads an instance's distance during the impostor switch's fade.
        stages: ShaderStages::ALL,
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
