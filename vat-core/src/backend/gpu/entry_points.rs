//! The record scatter's plan ([`ScatterPlan`]) and the shader's entry points.

use super::*;

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

/// Impostor-card colour vertex shader ([`crate::backend::pipeline::Program::Impostor`]).
pub const ENTRY_POINT_VS_IMPOSTOR: &str = "vs_impostor";
/// Impostor-card depth vertex shader (the card facing the sun).
pub const ENTRY_POINT_VS_IMPOSTOR_DEPTH: &str = "vs_impostor_depth";
/// Impostor-card lit fragment shader.
pub const ENTRY_POINT_FS_IMPOSTOR: &str = "fs_impostor";
/// [`ENTRY_POINT_FS_IMPOSTOR`] with the motion target.
pub const ENTRY_POINT_FS_IMPOSTOR_MOTION: &str = "fs_impostor_motion";
/// Impostor-card coverage test of depth passes and depth-only prepasses (no colour target).
pub const ENTRY_POINT_FS_IMPOSTOR_DEPTH: &str = "fs_impostor_depth";
/// Impostor-card prepass fragment shader (normal target).
pub const ENTRY_POINT_FS_IMPOSTOR_PREPASS: &str = "fs_impostor_prepass";
/// Impostor-card prepass fragment shader (normal and motion targets).
pub const ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION: &str = "fs_impostor_prepass_motion";
/// Impostor-card prepass fragment shader (motion target only).
pub const ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION_ONLY: &str = "fs_impostor_prepass_motion_only";

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
    EntryPoint { name: ENTRY_POINT_VS_IMPOSTOR, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_VS_IMPOSTOR_DEPTH, stage: ShaderStage::Vertex },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR_DEPTH, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR_PREPASS, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION, stage: ShaderStage::Fragment },
    EntryPoint { name: ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION_ONLY, stage: ShaderStage::Fragment },
];
