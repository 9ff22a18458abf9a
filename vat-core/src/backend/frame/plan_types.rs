//! What a plan holds: per-crowd plans, dispatches, draws, and the caches a backend keeps for them.

use super::*;

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
    /// Impostor cards, colour pass.
    pub impostors: Vec<DrawBatch>,
    /// Impostor cards, shadow pass.
    pub impostor_shadow: Vec<DrawBatch>,
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
pub struct PreparedCrowds(pub(super) Vec<u64>);

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
    pub(super) entries: Vec<(K, V)>,
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
