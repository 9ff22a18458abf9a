//! The frame plan: everything a frame of one or more crowds asks of the GPU, computed once here and
//! only *interpreted* by a backend.
//!
//! [`FramePlan::plan`] takes the frame's crowds (each with its uploaded asset's [`AssetDrawInfo`] and
//! the [`CrowdSync`] state of its GPU copy), the camera, the [`RenderOptions`] and the device's
//! [`PlanLimits`], runs the CPU side of the frame (CPU culling with `Crowd::prepare_frame`, or only
//! the dirty record ranges with `Crowd::take_record_uploads` for GPU culling) and writes plain data:
//!
//! 1. per crowd ([`CrowdPlan`]): buffers to grow, the frame uniforms, the record ranges and list
//!    entries to write, the packed scatter records, the draw-argument template and culling
//!    parameters to write (only when they changed);
//! 2. the compute dispatches ([`Dispatch`]: scatter, then culling: the camera's, then each extra
//!    view's of a GPU-culled crowd) with their workgroup counts;
//! 3. per pass kind ([`FramePlan::depth`] for the shadow map, [`FramePlan::colour`]) the draws
//!    ([`Draw`]): pipeline key, bound resources, index range and instance range or indirect-argument
//!    offset.
//!
//! A backend executes it in this order: grow buffers, write the uploads, the template copies of
//! GPU-culled crowds (`args_template` → `draw_args`, and → each extra view's draw args,
//! [`gpu::DRAW_ARGS_BYTES`]), the dispatches, the
//! depth pass (when [`FramePlan::shadow_view_proj`] is set) and the colour pass. The plan decides
//! what is drawn; a backend decides nothing.
//!
//! **Sync contract.** The plan marks each crowd's GPU copy as synced as of this frame (the crowd's
//! dirty set is taken while planning). If planning fails part-way, every crowd of the frame is
//! marked unsynced here; if the backend fails to carry a plan out, it must call
//! [`CrowdSync::mark_unsynced`] on every crowd of the frame. Either way, the next frame uploads
//! those crowds whole: no change is ever lost.

use std::ops::Range;

use crate::container::{Lod, Manifest, VatMode};
use crate::crowd::{Camera, Crowd, CrowdConfig, CrowdId, CrowdStats, DrawBatch, Frustum};
use crate::encoding::VertexFormat;
use crate::gpu::{self, CullParams, FrameInputs, FrameUniforms, ScatterPlan, ShadowLookup};
use crate::instance::InstanceRecord;
use crate::lod::{LodThresholds, MAX_LODS};
use crate::pipeline::{PassKind, PipelineKey, PrepassTargets, Program, ShaderVariantKey};
use crate::render::{Culling, FrameReport, RenderMode, RenderOptions, ShadowMapSource};

pub mod gpu_counts;
#[cfg(test)]
mod tests;

/// Smallest record capacity of a crowd's buffers (records).
pub const MIN_RECORD_CAPACITY: u32 = 64;
/// Smallest capacity of a crowd's scatter buffers (records): both backends allocate exactly this.
pub const MIN_SCATTER_CAPACITY: u32 = 1024;
/// Bytes of one indexed-indirect draw in `draw_args`.
pub const DRAW_ARGS_STRIDE: u64 = gpu::DRAW_ARGS_WORDS as u64 * 4;
/// Largest x workgroup count of one dispatch (WebGPU's and Vulkan's guaranteed minimum).
pub const MAX_WORKGROUPS_X: u32 = 65535;

/// Workgroup counts `[x, y]` for `threads` threads of `size` per workgroup, `x` at most
/// [`MAX_WORKGROUPS_X`] (the shaders linearise `global_id.y * num_workgroups.x * size + global_id.x`);
/// at least one workgroup.
pub fn workgroups(threads: u64, size: u32) -> [u32; 2] {
    let groups = threads.div_ceil(u64::from(size)).max(1);
    let x = groups.min(u64::from(MAX_WORKGROUPS_X));
    let y = groups.div_ceil(x);
    [x as u32, y.min(u64::from(u32::MAX)) as u32]
}

/// The device limits a plan respects, as plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// The largest storage buffer the backend may create and bind whole, bytes.
    pub max_storage_buffer_bytes: u64,
}

/// Why a frame cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Bone mode was asked for a crowd whose asset was baked without bones.
    #[error("bone mode needs an asset baked with bones; the asset of crowd {crowd} of the frame has none")]
    AssetHasNoBones {
        /// Position of the crowd in the frame's list.
        crowd: usize,
    },
    /// A crowd's buffer would exceed the device's storage buffer limit.
    #[error("the {what} buffer would take {size} bytes, more than the device's {limit}")]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Bytes it would take.
        size: u64,
        /// The device's limit, bytes.
        limit: u64,
    },
}

/// What the plan needs of an uploaded asset: its LOD index ranges, attachments, bone influences and
/// vertex format, and a process-wide id. Each backend's `GpuAsset` holds one.
#[derive(Debug, Clone, PartialEq)]
pub struct AssetDrawInfo {
    id: u64,
    lods: Vec<Lod>,
    attachment_first_index: u32,
    attachment_index_count: u32,
    vertex_count: u32,
    influences: u32,
    vertex_format: VertexFormat,
    mode: VatMode,
    double_sided: bool,
    has_materials: bool,
}

impl AssetDrawInfo {
    /// The description of an asset of manifest `m` whose index buffer holds `lod_index_count`
    /// indices of LODs, then `attachment_index_count` indices of the attachment meshes. A new id each
    /// call. `None` without vertex, rigid or sprite animation or without LODs.
    pub fn new(m: &Manifest, lod_index_count: u32, attachment_index_count: u32) -> Option<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        // A rigid or sprite asset has no vertex format; its pipelines carry the neutral one.
        let vertex_format = match (&m.vertex_animation, &m.rigid_animation, &m.sprite_animation) {
            (Some(va), _, _) => va.format,
            (None, Some(_), _) | (None, None, Some(_)) => ShaderVariantKey::NEUTRAL.vertex_format,
            (None, None, None) => return None,
        };
        if m.lods.is_empty() {
            return None;
        }
        Some(Self {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            lods: m.lods.clone(),
            attachment_first_index: lod_index_count,
            attachment_index_count,
            vertex_count: m.vertex_count,
            influences: m.bone_animation.as_ref().map_or(0, |b| b.influences),
            vertex_format,
            mode: m.mode(),
            double_sided: m.materials.iter().any(|mat| mat.double_sided),
            has_materials: !m.materials.is_empty(),
        })
    }

    /// The id, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The LODs, finest first (at least one).
    pub fn lods(&self) -> &[Lod] {
        &self.lods
    }

    /// LOD levels of the index buffer.
    pub fn lod_count(&self) -> u32 {
        self.lods.len() as u32
    }

    /// Whether bone mode is available (the asset was baked with `--bones`).
    pub fn has_bones(&self) -> bool {
        self.influences > 0
    }

    /// Whether the asset has socket attachments.
    pub fn has_attachments(&self) -> bool {
        self.attachment_index_count > 0
    }

    /// Bone influences per vertex (4 or 8), 0 without bones.
    pub fn influences(&self) -> u32 {
        self.influences
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// The vertex format of its animation textures.
    pub fn vertex_format(&self) -> VertexFormat {
        self.vertex_format
    }

    /// The index range of LOD `lod` (the last LOD for a larger one), in indices.
    pub fn lod_indices(&self, lod: u32) -> Range<u32> {
        let l = &self.lods[(lod as usize).min(self.lods.len() - 1)];
        l.first_index..l.first_index + l.index_count
    }

    /// The index range of the attachment meshes, in indices (empty without attachments).
    pub fn attachment_indices(&self) -> Range<u32> {
        self.attachment_first_index..self.attachment_first_index + self.attachment_index_count
    }

    /// Where the attachment indices start in the index buffer, in indices.
    pub fn attachment_first_index(&self) -> u32 {
        self.attachment_first_index
    }

    /// The mode the asset was baked in.
    pub fn mode(&self) -> VatMode {
        self.mode
    }

    /// The program that draws its bodies in `mode`: [`Program::Rigid`] for a rigid asset,
    /// [`Program::Fluid`] for a fluid asset and [`Program::Sprite`] for a sprite asset in
    /// [`RenderMode::Vat`], else [`Program::Body`]`(mode)`.
    pub fn body_program(&self, mode: RenderMode) -> Program {
        match (self.mode, mode) {
            (VatMode::Rigid, RenderMode::Vat) => Program::Rigid,
            (VatMode::Fluid, RenderMode::Vat) => Program::Fluid,
            (VatMode::Sprite, RenderMode::Vat) => Program::Sprite,
            _ => Program::Body(mode),
        }
    }

    /// The compute entry point that decodes its vertices in `mode` for verification:
    /// [`gpu::ENTRY_POINT_DECODE_RIGID`] for a rigid asset and [`gpu::ENTRY_POINT_DECODE_FLUID`] for
    /// a fluid asset and [`gpu::ENTRY_POINT_DECODE_SPRITE`] for a sprite asset in
    /// [`RenderMode::Vat`], else [`RenderMode::decode_entry_point`].
    pub fn decode_entry_point(&self, mode: RenderMode) -> Option<&'static str> {
        match self.body_program(mode) {
            Program::Rigid => Some(gpu::ENTRY_POINT_DECODE_RIGID),
            Program::Fluid => Some(gpu::ENTRY_POINT_DECODE_FLUID),
            Program::Sprite => Some(gpu::ENTRY_POINT_DECODE_SPRITE),
            _ => mode.decode_entry_point(),
        }
    }

    /// Whether it has materials (else it is shaded with the built-in palette).
    pub fn has_materials(&self) -> bool {
        self.has_materials
    }

    /// The shader variant of its compute pipelines (decode for verification) with cross-fade
    /// `cross_fade`: its influences, vertex format and sidedness; no motion vectors, shading chosen
    /// at run time (so the decode reads every tangent frame the asset has).
    pub fn variant(&self, cross_fade: bool) -> ShaderVariantKey {
        ShaderVariantKey {
            cross_fade,
            influences: self.influences,
            vertex_format: self.vertex_format,
            double_sided: self.double_sided,
            motion_vectors: false,
            materials: None,
            light_model: None,
        }
    }

    /// The shader variant of its render pipelines: [`variant`](Self::variant) with its shading path
    /// fixed (materials or the palette, which decodes no tangent frames).
    pub fn render_variant(&self, cross_fade: bool) -> ShaderVariantKey {
        ShaderVariantKey { materials: Some(self.has_materials), ..self.variant(cross_fade) }
    }
}

/// The state of one crowd's GPU copy, as plain data: the capacities of its buffers, whether they
/// mirror the crowd, what the culling inputs hold, and which [`Crowd`] it belongs to. Each
/// backend's `GpuCrowd` holds one next to its buffers; [`FramePlan::plan`] reads and updates it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrowdSync {
    crowd: Option<u64>,
    record_capacity: u32,
    list_capacity: u32,
    history_capacity: bool,
    scatter_capacity: u32,
    records_synced: bool,
    list_synced: bool,
    user_data_synced: bool,
    template_for: Option<(u64, u32)>,
    cull_params_written: Option<CullParams>,
    record_count: u32,
    gpu_lods: u32,
    view_lists: u32,
    /// Motion vectors on: the records as the last plan uploaded them (the previous frame's records
    /// of the next plan), indexed like the crowd's; `None` while motion vectors are off.
    history: Option<Vec<InstanceRecord>>,
    /// The record ranges the last plan wrote (their previous records change again this frame).
    history_ranges: Vec<Range<u32>>,
    /// The camera matrix and crowd clock of the last plan with motion vectors.
    previous_frame: Option<([[f32; 4]; 4], f32)>,
}

impl CrowdSync {
    /// The state of GPU buffers not created yet, bound to `crowd`.
    pub fn new(crowd: &CrowdId) -> Self {
        Self { crowd: Some(crowd.get()), ..Self::default() }
    }

    /// Checks that `crowd` is the crowd this state was created for.
    ///
    /// # Panics
    /// If it is another crowd: a GPU copy mirrors one crowd; create one `GpuCrowd` per `Crowd`.
    pub fn check_crowd(&self, crowd: &CrowdId) {
        if let Some(own) = self.crowd {
            assert!(
                own == crowd.get(),
                "this GpuCrowd mirrors crowd #{own} and was given crowd #{}: create one GpuCrowd per Crowd \
                 (Renderer::create_crowd)",
                crowd.get()
            );
        }
    }

    /// Forgets what the GPU copy holds: the next frame creates its buffers again and uploads
    /// everything (records, the whole instance list, the draw-argument template, the culling
    /// inputs). Called by the planner when planning fails, and by a backend when it fails to carry
    /// a plan out (which may have failed before the buffers it planned were created), or when a
    /// recorded frame is dropped unsubmitted.
    pub fn mark_unsynced(&mut self) {
        self.records_synced = false;
        self.user_data_synced = false;
        self.list_synced = false;
        self.record_capacity = 0;
        self.list_capacity = 0;
        self.scatter_capacity = 0;
        self.template_for = None;
        self.cull_params_written = None;
        self.view_lists = 0;
        // The failed frame may have moved the history on without its upload: start it again.
        self.history = None;
        self.history_ranges.clear();
        self.previous_frame = None;
    }

    /// Whether the GPU records mirror the crowd's.
    pub fn records_synced(&self) -> bool {
        self.records_synced
    }

    /// Records the record buffer holds (0 before the first frame); also the entries of each LOD's
    /// region of the visible lists.
    pub fn record_capacity(&self) -> u32 {
        self.record_capacity
    }

    /// Entries the instance-list buffer holds.
    pub fn list_capacity(&self) -> u32 {
        self.list_capacity
    }

    /// The capacities of the buffers (zero before the first frame).
    pub fn capacity(&self) -> CrowdCapacity {
        CrowdCapacity {
            records: self.record_capacity,
            list: self.list_capacity,
            history: self.history_capacity,
        }
    }

    /// Records the scatter buffers hold (0: none yet).
    pub fn scatter_capacity(&self) -> u32 {
        self.scatter_capacity
    }

    /// Records of the crowd at the last planned frame (the GPU copy's valid prefix).
    pub fn record_count(&self) -> u32 {
        self.record_count
    }

    /// LODs of the last GPU-culled frame (the visible lists to read back); 0 before any.
    pub fn gpu_lods(&self) -> u32 {
        self.gpu_lods
    }

    /// Extra views whose own visible lists and draw arguments the buffers at the current capacity
    /// have ([`CrowdPlan::grow_view_lists`]).
    pub fn view_lists(&self) -> u32 {
        self.view_lists
    }
}

/// One crowd of a frame, as the planner takes it.
#[derive(Debug)]
pub struct PlanCrowd<'a> {
    /// The crowd (its dirty set is taken; CPU culling runs its frame preparation).
    pub crowd: &'a mut Crowd,
    /// Its asset as uploaded (the crowd must have been built from the same asset).
    pub asset: &'a AssetDrawInfo,
    /// Its GPU copy's state.
    pub sync: &'a mut CrowdSync,
}

/// The capacities of a crowd's buffers, to create (replacing the old ones, which the GPU may still
/// be reading: a backend waits for them first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrowdCapacity {
    /// Records of the record buffer; entries of each of the [`MAX_LODS`] regions of the visible lists.
    pub records: u32,
    /// Entries of the instance list.
    pub list: u32,
    /// Whether the record buffer holds a second half of `records` previous records after the
    /// current ones (motion vectors: instance `i`'s previous record at index `records + i`).
    pub history: bool,
}

impl CrowdCapacity {
    /// Bytes of the record buffer (twice as many records with [`history`](Self::history)).
    pub fn record_bytes(&self) -> u64 {
        u64::from(self.records) * size_of::<InstanceRecord>() as u64 * (1 + u64::from(self.history))
    }

    /// Bytes of the visible lists (the camera's, and each GPU-culled extra view's).
    pub fn visible_bytes(&self) -> u64 {
        u64::from(self.records) * MAX_LODS as u64 * 4
    }

    /// Bytes of the instance list.
    pub fn list_bytes(&self) -> u64 {
        u64::from(self.list) * 4
    }

    /// Bytes of the per-instance user data buffer (`instance_user_data`, 16 bytes a record).
    pub fn user_data_bytes(&self) -> u64 {
        u64::from(self.records) * 16
    }
}

/// Bytes of a crowd's scatter buffers of `capacity` records: `(indices, records)`.
pub fn scatter_buffer_bytes(capacity: u32) -> (u64, u64) {
    ((u64::from(capacity) + 1) * 4, u64::from(capacity) * size_of::<InstanceRecord>() as u64)
}

/// What one crowd needs this frame, before the passes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrowdPlan {
    /// CPU or GPU culling.
    pub culling: Culling,
    /// Buffers to (re)create first (then everything is uploaded whole); `None`: keep them. The
    /// extra views' visible lists and draw arguments go with them (none are left after a grow).
    pub grow: Option<CrowdCapacity>,
    /// GPU culling with extra views: after `grow`, give the buffers visible lists
    /// ([`CrowdCapacity::visible_bytes`]) and draw arguments ([`gpu::DRAW_ARGS_BYTES`]) of their
    /// own for views `0..n` at the crowd's capacity (creating those that are missing: views past the
    /// ones they have), with their bind groups (compute group 0 over the view's uniforms, compute
    /// group 2 writing the view's lists, depth group 2 reading them). `None`: they have enough.
    pub grow_view_lists: Option<u32>,
    /// Scatter buffers of this many records to (re)create, bound with the record buffer.
    pub grow_scatter: Option<u32>,
    /// The crowd's group-0 uniforms (camera, its clock and LOD settings, light, shadow matrix).
    pub uniforms: FrameUniforms,
    /// The crowd's group-0 uniforms of each extra view of [`FramePlan::views`]: `uniforms` with
    /// `light_view_proj` (the matrix the depth entry points project with) set to the view's and
    /// `frustum_planes` to the view's frustum (what [`Dispatch::CullView`] culls against; the
    /// camera's position stays, so a view draws the LODs the camera gives).
    pub view_uniforms: Vec<FrameUniforms>,
    /// Record ranges to write in place: indices into `Crowd::records`, written at the same index of
    /// the record buffer.
    pub record_writes: Vec<Range<u32>>,
    /// Motion vectors: previous records to write, as `(first record index in the record buffer,
    /// range of previous_records)` (the indices are past the capacity: the buffer's second half).
    pub previous_record_writes: Vec<(u32, Range<u32>)>,
    /// The previous records `previous_record_writes` take their data from.
    pub previous_records: Vec<InstanceRecord>,
    /// Instance-list entries to write: indices into `Crowd::instance_list`, written at the same entry.
    pub list_writes: Option<Range<u32>>,
    /// User data ranges to write in place (`Crowd::user_data` indices, 16 bytes each, written at the
    /// same index of the `instance_user_data` buffer): the changed ones, or all after a grow.
    pub user_data_writes: Vec<Range<u32>>,
    /// Records packed for `cs_scatter` (`indices` to `scatter_indices`, `records` to
    /// `scatter_records`, both from offset 0); `scattered() == 0`: none. Its `direct` list is empty
    /// (the direct ranges are in `record_writes`).
    pub scatter: ScatterPlan,
    /// The draw-argument template to write to `args_template` (when the asset or capacity changed).
    pub args_template: Option<Vec<u32>>,
    /// The culling parameters to write to `cull_params` (when they changed).
    pub cull_params: Option<CullParams>,
    /// Whether `draw_args` is reset from the template before the dispatches (GPU culling).
    pub reset_draw_args: bool,
    /// Extra views `0..n` whose own draw arguments are reset from the template before the
    /// dispatches (GPU culling; 0: none).
    pub reset_view_draw_args: u32,
    /// The crowd's statistics (see `FrameReport::stats`).
    pub stats: CrowdStats,
    /// Bytes this crowd's uploads write (records, list, scatter, uniforms, culling parameters).
    pub uploaded_bytes: u64,
    /// CPU culling: the crowd's batches of this frame, from which its draws were made (empty when
    /// GPU-culled).
    pub batches: CpuBatches,
}

/// The batches of one CPU-culled frame of a crowd (`Crowd::prepare_frame`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuBatches {
    /// Colour pass, cross-fade pipeline.
    pub main_fade: Vec<DrawBatch>,
    /// Colour pass, plain pipeline.
    pub main_plain: Vec<DrawBatch>,
    /// Shadow pass.
    pub shadow: Vec<DrawBatch>,
    /// Attachments.
    pub attachments: Vec<DrawBatch>,
}

/// A compute dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// `cs_scatter` over crowd `crowd`'s scatter buffers (group 3 alone).
    Scatter {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Records copied.
        records: u32,
        /// Workgroup counts `[x, y]` ([`gpu::SCATTER_WORKGROUP_SIZE`]).
        workgroups: [u32; 2],
    },
    /// `cs_cull` over crowd `crowd`'s records (groups 0-2 of the crowd, compute layouts).
    Cull {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Records culled.
        records: u32,
        /// Workgroup counts `[x, y]` ([`gpu::CULL_WORKGROUP_SIZE`]).
        workgroups: [u32; 2],
    },
    /// `cs_cull` of crowd `crowd`'s records for extra view `view` (after every [`Dispatch::Cull`]):
    /// group 0 over the crowd's uniforms of that view ([`CrowdPlan::view_uniforms`], compute
    /// layout), group 1 of its asset, group 2 over its records and culling parameters writing the
    /// view's own visible lists and draw arguments ([`InstanceSource::ViewLists`]).
    CullView {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Position of the view in [`FramePlan::views`].
        view: usize,
        /// Records culled.
        records: u32,
        /// Workgroup counts `[x, y]` ([`gpu::CULL_WORKGROUP_SIZE`]).
        workgroups: [u32; 2],
    },
}

/// Where a crowd's draws take their instances from (the `instance_list` binding of group 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstanceSource {
    /// The CPU-culled instance list (`instance_range` indexes it).
    InstanceList,
    /// The GPU-culled visible lists (the indirect draws' `first_instance` indexes them).
    VisibleLists,
    /// Extra view `view`'s own GPU-culled visible lists ([`Dispatch::CullView`]); its indirect draws
    /// read that view's draw arguments, not the crowd's.
    ViewLists {
        /// Position of the view in [`FramePlan::views`].
        view: usize,
    },
}

/// The resources a draw binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DrawResources {
    /// Group 0 of crowd `crowd` (its uniforms), group 1 of its asset, group 2 of its buffers over
    /// `instances`, and its asset's index buffer.
    Crowd {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// The list group 2 binds.
        instances: InstanceSource,
    },
    /// Group 0 alone: crowd `Some(c)`'s uniforms, or the renderer's own ([`FramePlan::frame_uniforms`]).
    FrameOnly {
        /// Whose uniforms.
        crowd: Option<usize>,
    },
}

/// The geometry of a draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrawGeometry {
    /// Indexed: `indices` of the bound index buffer, `instances` of the bound instance list.
    Indexed {
        /// Index range, in indices.
        indices: Range<u32>,
        /// Instance range (entries of the instance list).
        instances: Range<u32>,
    },
    /// Indexed-indirect: one draw whose arguments are at byte `offset` of the crowd's `draw_args`
    /// ([`InstanceSource::VisibleLists`]), or of extra view `view`'s draw arguments
    /// ([`InstanceSource::ViewLists`]).
    IndexedIndirect {
        /// Byte offset, a multiple of [`DRAW_ARGS_STRIDE`].
        offset: u64,
    },
    /// Non-indexed: `vertices`, `instances` (the ground).
    Vertices {
        /// Vertex range.
        vertices: Range<u32>,
        /// Instance range.
        instances: Range<u32>,
    },
}

/// One draw of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    /// The pipeline (the backend adds its pass's formats).
    pub pipeline: PipelineKey,
    /// What it binds.
    pub resources: DrawResources,
    /// What it draws.
    pub geometry: DrawGeometry,
}

/// The crowds a backend's last successful `prepare` planned, in order: the crowds its `draw` and
/// `draw_depth` must be given (both backends keep one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreparedCrowds(Vec<u64>);

impl PreparedCrowds {
    /// The crowds of a prepared frame, by id, in order.
    pub fn new<'a>(crowds: impl IntoIterator<Item = &'a CrowdId>) -> Self {
        Self(crowds.into_iter().map(CrowdId::get).collect())
    }

    /// Checks that `crowds` are the prepared crowds, in the same order.
    ///
    /// # Panics
    /// If they are not.
    pub fn check<'a>(&self, crowds: impl IntoIterator<Item = &'a CrowdId>) {
        let given: Vec<u64> = crowds.into_iter().map(CrowdId::get).collect();
        assert!(
            given == self.0,
            "draw was given crowds {given:?} but the last prepare planned crowds {:?}: pass the same \
             crowds, in the same order",
            self.0
        );
    }
}

/// How many of the host's shadow-map views a crowd keeps group-0 bind groups (descriptor sets)
/// over ([`HostMapCache`]): one per frame in flight of a host that double or triple buffers its
/// shadow map, and one spare.
pub const HOST_SHADOW_MAPS_KEPT: usize = 4;

/// The group-0 bind groups (descriptor sets) of one crowd over each of the host's shadow maps it was
/// drawn with, keyed by the map's view handle, at most [`HOST_SHADOW_MAPS_KEPT`]: a host cycling
/// through its own few maps reuses them, and a frame recorded earlier (perhaps still executing)
/// keeps its groups until a fifth map evicts the least recently used one. Both backends keep their
/// host-map groups in one.
#[derive(Debug)]
pub struct HostMapCache<K, V> {
    /// Most recently used last.
    entries: Vec<(K, V)>,
}

impl<K, V> Default for HostMapCache<K, V> {
    fn default() -> Self {
        Self { entries: Vec::new() }
    }
}

impl<K: PartialEq, V> HostMapCache<K, V> {
    /// The groups over `key`'s map: kept ones, or `make()`'s, stored. Storing a fifth map first
    /// hands the least recently used entry to `evict` (where a backend waits for the frames that
    /// may still read it, then releases it).
    ///
    /// # Errors
    /// `make`'s error (the cache is unchanged).
    pub fn get_or_insert<E>(
        &mut self,
        key: K,
        make: impl FnOnce() -> Result<V, E>,
        evict: impl FnOnce(V),
    ) -> Result<&V, E> {
        if let Some(i) = self.entries.iter().position(|(k, _)| *k == key) {
            let entry = self.entries.remove(i);
            self.entries.push(entry);
        } else {
            let value = make()?;
            if self.entries.len() >= HOST_SHADOW_MAPS_KEPT {
                evict(self.entries.remove(0).1);
            }
            self.entries.push((key, value));
        }
        let last = self.entries.len() - 1;
        Ok(&self.entries[last].1)
    }

    /// The groups over `key`'s map, if kept.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Maps kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no map is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A frame of one or more crowds, as plain data. Keep one and call [`plan`](Self::plan) every
/// frame: its vectors are reused.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FramePlan {
    /// Per crowd, in the order given.
    pub crowds: Vec<CrowdPlan>,
    /// The renderer's own group-0 uniforms, when a draw binds them (the ground with no crowd).
    pub frame_uniforms: Option<FrameUniforms>,
    /// The sun's view-projection: `Some` when vat's own shadow pass runs (the shadow map is cleared
    /// to 1, then [`depth`](Self::depth) is drawn into it); `None`: no shadow pass.
    pub shadow_view_proj: Option<[[f32; 4]; 4]>,
    /// The colour draws sample the host's shadow map (`RenderOptions::shadow_map` is
    /// `ShadowMapSource::Host` and shadows are on): the backend binds the map the host gave it in
    /// group 0 instead of its own.
    pub host_shadow_map: bool,
    /// Compute dispatches, in order (every scatter, then every camera culling pass, then every
    /// extra view's culling pass).
    pub dispatches: Vec<Dispatch>,
    /// Depth-pass draws (the shadow map), in order.
    pub depth: Vec<Draw>,
    /// Colour-pass draws, in order (the ground first).
    pub colour: Vec<Draw>,
    /// The host's extra depth views (world-to-clip, column-major, depth 0..1) of
    /// [`plan_with_views`](Self::plan_with_views): shadow cascades, spot lights, a depth pre-pass.
    pub views: Vec<[[f32; 4]; 4]>,
    /// The depth draws of each extra view (one list per view, in [`views`](Self::views)' order):
    /// bodies and attachments (no ground) in depth pipelines, each view binding its own group 0,
    /// [`CrowdPlan::view_uniforms`]. Each view is culled for itself, so a shadow cascade gets
    /// casters the camera does not see: a CPU-culled crowd with [`Crowd::cull_view`] (the cells in
    /// the view's frustum, at the LODs the camera gives them, as ranges of the frame's instance
    /// list); a GPU-culled crowd by a [`Dispatch::CullView`] into the view's own lists (each record's
    /// bounding sphere against the view's frustum, at the LOD the camera gives it), drawn as indirect
    /// draws over [`InstanceSource::ViewLists`] (the crowd's colour draws, in depth pipelines).
    pub view_depth: Vec<Vec<Draw>>,
    /// Clear colour of the colour target (linear RGBA), for a pass the renderer begins itself.
    pub clear_color: [f64; 4],
    /// The mode drawn.
    pub mode: RenderMode,
    /// The culling path used.
    pub culling: Culling,
    /// Whether the frame was planned with motion vectors (`RenderOptions::motion_vectors`): its
    /// colour draws write them into a pass with a motion attachment, and only such a frame may be
    /// drawn into one (a colour pass or a prepass).
    pub motion_vectors: bool,
}

impl FramePlan {
    /// Checks that a pass with (`true`) or without a motion attachment suits the planned frame, as
    /// both backends' `draw` and `draw_prepass` do: a motion attachment needs a frame planned with
    /// motion vectors (a frame with them may be drawn into a pass without one).
    ///
    /// # Panics
    /// If the pass has a motion attachment and the frame was prepared without motion vectors.
    pub fn check_motion_attachment(&self, pass_has_motion: bool) {
        assert!(
            !pass_has_motion || self.motion_vectors,
            "the pass has a motion attachment (PassFormats::motion or PrepassFormats::motion) but the \
             frame was prepared with motion_vectors = false"
        );
    }

    /// The colour draws as a colour pass with (`true`) or without a motion attachment draws them:
    /// [`colour`](Self::colour) as planned, or, for a frame planned with motion vectors drawn into a
    /// pass without one, each pipeline without its motion target
    /// ([`PipelineKey::with_motion_target`]). See [`check_motion_attachment`](Self::check_motion_attachment).
    pub fn colour_draws(&self, pass_has_motion: bool) -> std::borrow::Cow<'_, [Draw]> {
        if pass_has_motion || !self.motion_vectors {
            return std::borrow::Cow::Borrowed(&self.colour);
        }
        std::borrow::Cow::Owned(
            self.colour
                .iter()
                .map(|d| Draw { pipeline: d.pipeline.with_motion_target(false), ..d.clone() })
                .collect(),
        )
    }

    /// The draws of a host's prepass of the camera with `targets` (depth, and the normal and motion
    /// targets it has): the colour draws (the ground, then every crowd's bodies and attachments,
    /// the same instances, LODs, cross-fades and resources), each in its prepass pipeline
    /// ([`PipelineKey::in_prepass`]), so the prepass writes the depth the colour pass writes.
    pub fn prepass_draws(&self, targets: PrepassTargets) -> Vec<Draw> {
        self.colour.iter().map(|d| Draw { pipeline: d.pipeline.in_prepass(targets), ..d.clone() }).collect()
    }

    /// Plans a frame of `crowds` seen by `camera`: runs each crowd's CPU side (see the module docs),
    /// updates each [`CrowdSync`] and replaces the plan.
    ///
    /// # Errors
    /// [`PlanError::AssetHasNoBones`] for bone mode on an asset without bones (nothing is changed);
    /// [`PlanError::BufferTooLarge`] when a crowd outgrows `limits` (every crowd is marked unsynced).
    ///
    /// # Panics
    /// If a crowd's [`CrowdSync`] belongs to another crowd.
    pub fn plan(
        &mut self,
        crowds: &mut [PlanCrowd<'_>],
        camera: &Camera,
        options: &RenderOptions,
        limits: &PlanLimits,
    ) -> Result<(), PlanError> {
        self.plan_with_views(crowds, camera, options, limits, &[])
    }

    /// [`plan`](Self::plan), plus depth draws for the host's extra `views` (world-to-clip matrices):
    /// [`views`](Self::views), [`view_depth`](Self::view_depth) and each crowd's
    /// [`CrowdPlan::view_uniforms`] (uploaded with the frame).
    ///
    /// # Errors
    /// Those of [`plan`](Self::plan).
    ///
    /// # Panics
    /// Those of [`plan`](Self::plan).
    pub fn plan_with_views(
        &mut self,
        crowds: &mut [PlanCrowd<'_>],
        camera: &Camera,
        options: &RenderOptions,
        limits: &PlanLimits,
        views: &[[[f32; 4]; 4]],
    ) -> Result<(), PlanError> {
        self.views.clear();
        self.view_depth.clear();
        for (k, c) in crowds.iter().enumerate() {
            c.sync.check_crowd(c.crowd.id());
            if options.mode == RenderMode::Bone && !c.asset.has_bones() {
                return Err(PlanError::AssetHasNoBones { crowd: k });
            }
        }
        self.crowds.resize_with(crowds.len(), CrowdPlan::default);
        self.dispatches.clear();
        self.depth.clear();
        self.colour.clear();
        self.frame_uniforms = None;
        self.clear_color = options.clear_color;
        self.mode = options.mode;
        self.culling = options.culling;
        self.motion_vectors = options.motion_vectors;
        let casts = crowds.iter().any(|c| c.crowd.config().shadows);
        self.host_shadow_map = false;
        self.shadow_view_proj = None;
        self.host_shadow_map = options.samples_host_shadow_map();
        let lookup = match options.shadow_map {
            _ if !options.shadows => None,
            ShadowMapSource::Host(lookup) => Some(lookup),
            ShadowMapSource::BuiltIn if casts => {
                self.shadow_view_proj = options.built_in_shadow_view_proj(camera);
                self.shadow_view_proj.map(|m| ShadowLookup::built_in(m, options.scene_unit))
            }
            ShadowMapSource::BuiltIn => None,
        };
        let frustum_planes = Frustum::from_view_proj(&camera.view_proj).planes;
        let shadow = self.shadow_view_proj;
        let uniforms_for = |time: f32, thresholds: &LodThresholds, config: &CrowdConfig| {
            FrameUniforms::new(&FrameInputs {
                view_proj: camera.view_proj,
                camera_position: camera.position,
                time,
                frustum_planes,
                sun_direction: options.sun_direction,
                sun_color: options.sun_color,
                ambient: options.ambient,
                lod_thresholds: thresholds,
                lod_bias: config.lod_bias + camera.lod_bias(),
                cross_fade_max_lod: config.cross_fade_max_lod,
                shadow_max_lod: config.shadow_max_lod,
                shadow: lookup,
                ground_half_extent: options.ground_half_extent,
                history: None,
                jitter: options.jitter,
                light_model: options.light_model,
            })
        };
        if options.ground {
            let crowd = if crowds.is_empty() {
                self.frame_uniforms =
                    Some(uniforms_for(0.0, &LodThresholds::default(), &CrowdConfig::default()));
                None
            } else {
                Some(0)
            };
            self.colour.push(Draw {
                pipeline: PipelineKey {
                    program: Program::Ground,
                    pass: PassKind::Colour,
                    variant: ShaderVariantKey {
                        motion_vectors: options.motion_vectors,
                        light_model: Some(options.light_model.code()),
                        ..ShaderVariantKey::NEUTRAL
                    },
                },
                resources: DrawResources::FrameOnly { crowd },
                geometry: DrawGeometry::Vertices { vertices: 0..6, instances: 0..1 },
            });
        }
        let mut failed = None;
        for (k, (c, plan)) in crowds.iter_mut().zip(self.crowds.iter_mut()).enumerate() {
            plan.uniforms =
                uniforms_for(c.crowd.shader_time(), &c.crowd.asset().lod_distances, c.crowd.config());
            if let Err(e) = plan_crowd(plan, c, camera, options.culling, options.motion_vectors, limits) {
                failed = Some(e);
                break;
            }
            plan_history(plan, c, camera, options);
            plan_draws(k, c, plan, options, shadow.is_some(), &mut self.depth, &mut self.colour);
        }
        if let Some(e) = failed {
            for c in crowds.iter_mut() {
                c.sync.mark_unsynced();
            }
            return Err(e);
        }
        self.views.extend_from_slice(views);
        let n_views = views.len() as u32;
        for (plan, c) in self.crowds.iter_mut().zip(crowds.iter_mut()) {
            plan.view_uniforms.clear();
            plan.view_uniforms.extend(views.iter().map(|v| FrameUniforms {
                light_view_proj: *v,
                frustum_planes: Frustum::from_view_proj(v).planes,
                ..plan.uniforms
            }));
            plan.uploaded_bytes += (views.len() * size_of::<FrameUniforms>()) as u64;
            plan.grow_view_lists = None;
            plan.reset_view_draw_args = 0;
            if plan.culling == Culling::Gpu && n_views > 0 {
                if c.sync.view_lists < n_views {
                    plan.grow_view_lists = Some(n_views);
                    c.sync.view_lists = n_views;
                }
                plan.reset_view_draw_args = n_views;
            }
        }
        for (v, view) in views.iter().enumerate() {
            let mut draws = Vec::new();
            for (k, (c, plan)) in crowds.iter().zip(&self.crowds).enumerate() {
                if plan.culling == Culling::Cpu {
                    plan_view_draws(k, c, options.mode, &c.crowd.cull_view(view, camera), &mut draws);
                } else {
                    let theirs =
                        |d: &&Draw| matches!(d.resources, DrawResources::Crowd { crowd, .. } if crowd == k);
                    draws.extend(self.colour.iter().filter(theirs).map(|d| Draw {
                        pipeline: d.pipeline.in_depth_pass(),
                        resources: DrawResources::Crowd {
                            crowd: k,
                            instances: InstanceSource::ViewLists { view: v },
                        },
                        geometry: d.geometry.clone(),
                    }));
                }
            }
            self.view_depth.push(draws);
        }
        for (k, plan) in self.crowds.iter().enumerate() {
            let records = plan.scatter.scattered();
            if records > 0 {
                let workgroups = workgroups(u64::from(records), gpu::SCATTER_WORKGROUP_SIZE);
                self.dispatches.push(Dispatch::Scatter { crowd: k, records, workgroups });
            }
        }
        for (k, (plan, c)) in self.crowds.iter().zip(crowds.iter()).enumerate() {
            let records = c.crowd.count();
            if plan.culling == Culling::Gpu && records > 0 {
                let workgroups = workgroups(u64::from(records), gpu::CULL_WORKGROUP_SIZE);
                self.dispatches.push(Dispatch::Cull { crowd: k, records, workgroups });
            }
        }
        for (k, (plan, c)) in self.crowds.iter().zip(crowds.iter()).enumerate() {
            let records = c.crowd.count();
            if plan.culling == Culling::Gpu && records > 0 {
                let workgroups = workgroups(u64::from(records), gpu::CULL_WORKGROUP_SIZE);
                for view in 0..views.len() {
                    self.dispatches.push(Dispatch::CullView { crowd: k, view, records, workgroups });
                }
            }
        }
        Ok(())
    }

    /// The pipelines the plan's draws use, each once, in first-use order.
    pub fn pipelines(&self) -> Vec<PipelineKey> {
        let mut out: Vec<PipelineKey> = Vec::new();
        for d in self.depth.iter().chain(&self.colour) {
            if !out.contains(&d.pipeline) {
                out.push(d.pipeline);
            }
        }
        out
    }

    /// The frame's report: statistics summed over the crowds, draws per kind, dispatches and bytes
    /// uploaded.
    pub fn report(&self) -> FrameReport {
        let mut stats = CrowdStats::default();
        for c in &self.crowds {
            stats += c.stats;
        }
        let count = |program: fn(&Program) -> bool| {
            self.colour.iter().filter(|d| program(&d.pipeline.program)).count() as u32
        };
        FrameReport {
            stats,
            draws_main: count(|p| {
                matches!(p, Program::Body(_) | Program::Rigid | Program::Fluid | Program::Sprite)
            }),
            // The crowd's shadow draws: into vat's map, or, when the colour draws sample the host's
            // map, into the host's depth views (draw_depth), where the host draws its casters.
            draws_shadow: if self.host_shadow_map {
                self.view_depth.iter().map(|v| v.len() as u32).sum()
            } else {
                self.depth.len() as u32
            },
            draws_attachments: count(|p| *p == Program::Attachment),
            draws_ground: count(|p| *p == Program::Ground),
            draws_views: self.view_depth.iter().map(|v| v.len() as u32).sum(),
            dispatches: self.dispatches.len() as u32,
            uploaded_bytes: self.crowds.iter().map(|c| c.uploaded_bytes).sum::<u64>()
                + self.frame_uniforms.map_or(0, |_| size_of::<FrameUniforms>() as u64),
            mode: self.mode,
            culling: self.culling,
            gpu_counts: None,
            gpu_counts_frames_late: None,
            gpu_counts_skipped: false,
            shadow_view_proj: self.shadow_view_proj,
        }
    }
}

/// Bytes of `records`.
fn record_bytes(records: u32) -> u64 {
    u64::from(records) * size_of::<InstanceRecord>() as u64
}

/// Capacity growth: at least `n`, [`MIN_RECORD_CAPACITY`], twice `old`, a power of two.
fn grow(n: u32, old: u32) -> u32 {
    n.max(MIN_RECORD_CAPACITY).max(old.saturating_mul(2)).next_power_of_two().max(n)
}

fn check(what: &'static str, size: u64, limits: &PlanLimits) -> Result<(), PlanError> {
    let limit = limits.max_storage_buffer_bytes;
    if size > limit { Err(PlanError::BufferTooLarge { what, size, limit }) } else { Ok(()) }
}

/// The uploads of one crowd; updates its sync state.
fn plan_crowd(
    plan: &mut CrowdPlan,
    c: &mut PlanCrowd<'_>,
    camera: &Camera,
    culling: Culling,
    motion: bool,
    limits: &PlanLimits,
) -> Result<(), PlanError> {
    plan.culling = culling;
    plan.grow = None;
    plan.grow_scatter = None;
    plan.record_writes.clear();
    plan.previous_record_writes.clear();
    plan.previous_records.clear();
    plan.user_data_writes.clear();
    plan.list_writes = None;
    plan.scatter.direct.clear();
    plan.scatter.indices.clear();
    plan.scatter.records.clear();
    plan.args_template = None;
    plan.cull_params = None;
    plan.reset_draw_args = culling == Culling::Gpu;
    let count = c.crowd.count();
    let sync = &mut *c.sync;
    let gpu_culling = culling == Culling::Gpu;
    plan.batches.main_fade.clear();
    plan.batches.main_plain.clear();
    plan.batches.shadow.clear();
    plan.batches.attachments.clear();
    // The CPU side: dirty ranges (and, CPU-culled, the batches). Ranges are copied out as index
    // ranges so the plan does not borrow the crowd.
    let mut ranges: Vec<Range<u32>> = Vec::new();
    let list_len;
    let mut list_upload = None;
    if gpu_culling {
        let taken = c.crowd.take_record_uploads();
        ranges.extend(taken.iter().map(|&(first, r)| first..first + r.len() as u32));
        list_len = 0;
        plan.stats = CrowdStats {
            simulated: count,
            uploaded_record_bytes: ranges.iter().map(|r| record_bytes(r.len() as u32)).sum(),
            ..CrowdStats::default()
        };
    } else {
        let frame = c.crowd.prepare_frame(camera);
        ranges.extend(frame.record_uploads.iter().map(|&(first, r)| first..first + r.len() as u32));
        list_upload = frame.list_upload.map(|(first, l)| first..first + l.len() as u32);
        list_len = frame.instance_list_len;
        plan.stats = frame.stats;
        plan.batches = CpuBatches {
            main_fade: frame.main_fade,
            main_plain: frame.main_plain,
            shadow: frame.shadow,
            attachments: frame.attachments,
        };
    }
    // Buffers.
    let fresh = sync.record_capacity == 0;
    let needs_history = motion && !sync.history_capacity;
    if fresh || needs_history || count > sync.record_capacity || list_len > sync.list_capacity {
        let capacity = CrowdCapacity {
            history: motion,
            records: if fresh || count > sync.record_capacity {
                grow(count, sync.record_capacity)
            } else {
                sync.record_capacity
            },
            list: if fresh || list_len > sync.list_capacity {
                grow(list_len, sync.list_capacity)
            } else {
                sync.list_capacity
            },
        };
        check("instance record", capacity.record_bytes(), limits)?;
        check("visible list", capacity.visible_bytes(), limits)?;
        check("instance list", capacity.list_bytes(), limits)?;
        check("instance user data", capacity.user_data_bytes(), limits)?;
        plan.grow = Some(capacity);
        sync.record_capacity = capacity.records;
        sync.list_capacity = capacity.list;
        sync.history_capacity = capacity.history;
        sync.scatter_capacity = 0;
        sync.template_for = None;
        sync.cull_params_written = None;
        sync.view_lists = 0;
        sync.records_synced = false;
        sync.list_synced = false;
        sync.user_data_synced = false;
    }
    let mut uploaded = size_of::<FrameUniforms>() as u64;
    // User data: whole when unsynced, else the changed ranges (always taken, so changes do not pile
    // up while the buffers are recreated).
    let user_ranges: Vec<Range<u32>> =
        c.crowd.take_user_data_uploads().iter().map(|&(a, d)| a..a + d.len() as u32).collect();
    if sync.user_data_synced {
        plan.user_data_writes = user_ranges;
    } else if count > 0 {
        plan.user_data_writes.push(0..count);
    }
    sync.user_data_synced = true;
    uploaded += plan.user_data_writes.iter().map(|r| u64::from(r.len() as u32) * 16).sum::<u64>();
    // Records: whole when unsynced, else the dirty ranges (long ones in place, many short ones
    // packed for the scatter pass).
    if sync.records_synced {
        let records = c.crowd.records();
        let slices: Vec<(u32, &[InstanceRecord])> =
            ranges.iter().map(|r| (r.start, &records[r.start as usize..r.end as usize])).collect();
        plan.scatter.plan(&slices);
        for &k in &plan.scatter.direct {
            plan.record_writes.push(ranges[k].clone());
        }
        plan.scatter.direct.clear();
        let n = plan.scatter.scattered();
        if n > 0 {
            if sync.scatter_capacity < n {
                let capacity = n.next_power_of_two().max(MIN_SCATTER_CAPACITY);
                check("record scatter", record_bytes(capacity), limits)?;
                plan.grow_scatter = Some(capacity);
                sync.scatter_capacity = capacity;
            }
            uploaded += (plan.scatter.indices.len() * 4) as u64 + record_bytes(n);
        }
    } else if count > 0 {
        plan.record_writes.push(0..count);
    }
    let whole = !sync.records_synced;
    sync.records_synced = true;
    if motion {
        plan_previous_records(plan, c.crowd, sync, &ranges, whole);
    } else {
        sync.history = None;
        sync.history_ranges.clear();
        sync.previous_frame = None;
        c.crowd.take_motion_resets();
    }
    uploaded += plan.previous_records.len() as u64 * size_of::<InstanceRecord>() as u64;
    uploaded += plan.record_writes.iter().map(|r| record_bytes(r.len() as u32)).sum::<u64>();
    // The instance list (CPU culling only; the GPU path neither reads nor writes it).
    if !gpu_culling {
        let len = c.crowd.instance_list().len() as u32;
        plan.list_writes =
            if sync.list_synced { list_upload } else { Some(0..len) }.filter(|r| !r.is_empty());
        sync.list_synced = true;
        uploaded += plan.list_writes.as_ref().map_or(0, |r| u64::from(r.len() as u32) * 4);
    }
    // GPU culling inputs: the draw template (asset or capacity changed) and the parameters (changed).
    if gpu_culling {
        let config = c.crowd.config();
        let lod_count = lod_count(c.crowd, c.asset);
        let key = (c.asset.id(), sync.record_capacity);
        if sync.template_for != Some(key) {
            plan.args_template = Some(gpu::draw_args_template(
                &c.asset.lods()[..lod_count as usize],
                sync.record_capacity,
                c.asset.attachment_first_index(),
                c.asset.attachment_indices().len() as u32,
            ));
            sync.template_for = Some(key);
        }
        let params = CullParams {
            record_count: count,
            capacity: sync.record_capacity,
            attachment_max_lod: config.attachment_max_lod,
            attachments: u32::from(config.attachments && c.asset.has_attachments()),
        };
        if sync.cull_params_written != Some(params) {
            plan.cull_params = Some(params);
            sync.cull_params_written = Some(params);
            uploaded += size_of::<CullParams>() as u64;
        }
        sync.gpu_lods = lod_count;
    }
    sync.record_count = count;
    plan.uploaded_bytes = uploaded;
    Ok(())
}

/// The previous records this frame writes (motion vectors), and the history moved on: instance
/// `i`'s previous record must be its record as the last plan uploaded it. That changes for the
/// records written this frame and those written by the last plan (`dirty`, `sync.history_ranges`);
/// instances new to the history and those whose history the host reset
/// (`Crowd::reset_motion_history`) get their current record (no motion of their own). `whole`:
/// the buffers are new, so every previous record is written.
fn plan_previous_records(
    plan: &mut CrowdPlan,
    crowd: &mut Crowd,
    sync: &mut CrowdSync,
    dirty: &[Range<u32>],
    whole: bool,
) {
    let count = crowd.count();
    let resets = crowd.take_motion_resets();
    let records = crowd.records();
    let history = sync.history.get_or_insert_with(Vec::new);
    let known = history.len().min(count as usize);
    history.truncate(known);
    history.extend_from_slice(&records[known..count as usize]);
    let mut touched: Vec<Range<u32>> = Vec::new();
    if whole {
        touched.push(0..count);
    } else {
        touched.extend(dirty.iter().cloned());
        touched.extend(sync.history_ranges.iter().map(|r| r.start.min(count)..r.end.min(count)));
        touched.push(known as u32..count);
    }
    for &i in resets.iter().filter(|&&i| i < count) {
        history[i as usize] = records[i as usize];
        touched.push(i..i + 1);
    }
    for r in merge_ranges(touched) {
        let first = plan.previous_records.len() as u32;
        plan.previous_records.extend_from_slice(&history[r.start as usize..r.end as usize]);
        let written = first..plan.previous_records.len() as u32;
        plan.previous_record_writes.push((sync.record_capacity + r.start, written));
    }
    for r in dirty {
        let r = r.start.min(count) as usize..r.end.min(count) as usize;
        history[r.clone()].copy_from_slice(&records[r]);
    }
    // Next frame, the records written now get them as their previous ones; not those new to the
    // history, whose previous record is already their current one.
    sync.history_ranges.clear();
    let known = known as u32;
    sync.history_ranges
        .extend(dirty.iter().map(|r| r.start.min(known)..r.end.min(known)).filter(|r| !r.is_empty()));
}

/// `ranges` sorted and merged where they overlap or touch; empty ones dropped.
fn merge_ranges(mut ranges: Vec<Range<u32>>) -> Vec<Range<u32>> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u32>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The crowd's uniforms' previous frame (motion vectors): the camera (`options.previous_view_proj`
/// when the host gives it, else that of the crowd's last plan; this frame's camera on a camera cut
/// or without either) and clock of its last plan, and where its previous records are.
fn plan_history(plan: &mut CrowdPlan, c: &mut PlanCrowd<'_>, camera: &Camera, options: &RenderOptions) {
    if !options.motion_vectors {
        return;
    }
    let time = plan.uniforms.time;
    let (view_proj, previous_time) = match c.sync.previous_frame {
        Some((view_proj, t)) if !options.camera_cut => (options.previous_view_proj.unwrap_or(view_proj), t),
        Some((_, t)) => (camera.view_proj, t),
        None if !options.camera_cut => (options.previous_view_proj.unwrap_or(camera.view_proj), time),
        None => (camera.view_proj, time),
    };
    plan.uniforms.previous_view_proj = view_proj;
    plan.uniforms.previous_time = previous_time;
    plan.uniforms.previous_records = c.sync.record_capacity;
    c.sync.previous_frame = Some((camera.view_proj, time));
}

/// LODs a crowd draws: those of its thresholds and of its asset, 1 to [`MAX_LODS`].
fn lod_count(crowd: &Crowd, asset: &AssetDrawInfo) -> u32 {
    crowd.asset().lod_distances.lod_count().min(asset.lod_count()).clamp(1, MAX_LODS as u32)
}

/// The depth and colour draws of crowd `k`.
fn plan_draws(
    k: usize,
    c: &PlanCrowd<'_>,
    plan: &CrowdPlan,
    options: &RenderOptions,
    shadow_pass: bool,
    depth: &mut Vec<Draw>,
    colour: &mut Vec<Draw>,
) {
    let (mode, motion) = (options.mode, options.motion_vectors);
    let config = c.crowd.config();
    let asset = c.asset;
    let attachments_on = config.attachments && asset.has_attachments();
    let key = |program, pass, cross_fade| PipelineKey {
        program,
        pass,
        variant: ShaderVariantKey {
            motion_vectors: motion && pass == PassKind::Colour,
            // Only the colour pass lights; the others keep one pipeline whatever the light model.
            light_model: (pass == PassKind::Colour).then_some(options.light_model.code()),
            ..asset.render_variant(cross_fade)
        },
    };
    let body = asset.body_program(mode);
    let casts = shadow_pass && config.shadows;
    let draw = |pipeline, instances, geometry| Draw {
        pipeline,
        resources: DrawResources::Crowd { crowd: k, instances },
        geometry,
    };
    if plan.culling == Culling::Gpu {
        let lod_count = lod_count(c.crowd, c.asset);
        let src = InstanceSource::VisibleLists;
        let indirect =
            |draw: u32| DrawGeometry::IndexedIndirect { offset: u64::from(draw) * DRAW_ARGS_STRIDE };
        if casts {
            for lod in 0..lod_count.min(config.shadow_max_lod.saturating_add(1)) {
                depth.push(draw(key(body, PassKind::Depth, config.cross_fade), src, indirect(lod)));
            }
            if attachments_on {
                let last =
                    config.shadow_max_lod.min(config.attachment_max_lod).saturating_add(1).min(lod_count);
                for lod in 0..last {
                    let pipeline = key(Program::Attachment, PassKind::Depth, config.cross_fade);
                    depth.push(draw(pipeline, src, indirect(MAX_LODS as u32 + lod)));
                }
            }
        }
        for lod in 0..lod_count {
            let fade = config.cross_fade && lod <= config.cross_fade_max_lod;
            colour.push(draw(key(body, PassKind::Colour, fade), src, indirect(lod)));
        }
        if attachments_on {
            for lod in 0..lod_count.min(config.attachment_max_lod.saturating_add(1)) {
                let pipeline = key(Program::Attachment, PassKind::Colour, config.cross_fade);
                colour.push(draw(pipeline, src, indirect(MAX_LODS as u32 + lod)));
            }
        }
        return;
    }
    let b = &plan.batches;
    let src = InstanceSource::InstanceList;
    let batch = |indices: Range<u32>, b: &DrawBatch| DrawGeometry::Indexed {
        indices,
        instances: b.first_instance..b.first_instance + b.instance_count,
    };
    if casts {
        for s in &b.shadow {
            depth.push(draw(
                key(body, PassKind::Depth, config.cross_fade),
                src,
                batch(asset.lod_indices(s.lod), s),
            ));
        }
        if attachments_on {
            for a in b.attachments.iter().filter(|a| a.lod <= config.shadow_max_lod) {
                let pipeline = key(Program::Attachment, PassKind::Depth, config.cross_fade);
                depth.push(draw(pipeline, src, batch(asset.attachment_indices(), a)));
            }
        }
    }
    for m in &b.main_fade {
        colour.push(draw(key(body, PassKind::Colour, true), src, batch(asset.lod_indices(m.lod), m)));
    }
    for m in &b.main_plain {
        colour.push(draw(key(body, PassKind::Colour, false), src, batch(asset.lod_indices(m.lod), m)));
    }
    if attachments_on {
        for a in &b.attachments {
            let pipeline = key(Program::Attachment, PassKind::Colour, config.cross_fade);
            colour.push(draw(pipeline, src, batch(asset.attachment_indices(), a)));
        }
    }
}

/// The depth draws of crowd `k`'s batches of one extra view, appended to `out`.
fn plan_view_draws(
    k: usize,
    c: &PlanCrowd<'_>,
    mode: RenderMode,
    view: &crate::crowd::ViewDraws,
    out: &mut Vec<Draw>,
) {
    let config = c.crowd.config();
    let asset = c.asset;
    let draw = |program, cross_fade, indices: Range<u32>, b: &DrawBatch| Draw {
        pipeline: PipelineKey { program, pass: PassKind::Depth, variant: asset.render_variant(cross_fade) },
        resources: DrawResources::Crowd { crowd: k, instances: InstanceSource::InstanceList },
        geometry: DrawGeometry::Indexed {
            indices,
            instances: b.first_instance..b.first_instance + b.instance_count,
        },
    };
    let body = asset.body_program(mode);
    out.extend(view.main_fade.iter().map(|b| draw(body, true, asset.lod_indices(b.lod), b)));
    out.extend(view.main_plain.iter().map(|b| draw(body, false, asset.lod_indices(b.lod), b)));
    if config.attachments && asset.has_attachments() {
        let attachments = view.attachments.iter();
        out.extend(
            attachments.map(|b| draw(Program::Attachment, config.cross_fade, asset.attachment_indices(), b)),
        );
    }
}

/// The per-LOD visible lists of a GPU-culled frame from read-backs of a crowd's `draw_args` and
/// `visible` buffers (as `u32` words): LOD `l`'s list is the first `instance_count` (word 1 of draw
/// `l`, at most `capacity`) entries of region `l * capacity ..` of `visible`, in the GPU's append
/// order. `lods` lists, one per LOD drawn.
pub fn visible_lists(draw_args: &[u32], visible: &[u32], lods: usize, capacity: u32) -> Vec<Vec<u32>> {
    (0..lods)
        .map(|lod| {
            let n = draw_args.get(lod * gpu::DRAW_ARGS_WORDS as usize + 1).copied().unwrap_or(0).min(capacity)
                as usize;
            let start = lod * capacity as usize;
            visible.get(start..start + n).map(<[u32]>::to_vec).unwrap_or_default()
        })
        .collect()
}
