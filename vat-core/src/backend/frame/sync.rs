//! The state of a crowd's GPU copy ([`CrowdSync`]) and its buffer capacities.

use super::*;

/// The state of one crowd's GPU copy, as plain data: the capacities of its buffers, whether they
/// mirror the crowd, what the culling inputs hold, and which [`Crowd`] it belongs to. Each
/// backend's `GpuCrowd` holds one next to its buffers; [`FramePlan::plan`] reads and updates it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CrowdSync {
    pub(super) crowd: Option<u64>,
    pub(super) record_capacity: u32,
    pub(super) list_capacity: u32,
    pub(super) history_capacity: bool,
    pub(super) scatter_capacity: u32,
    pub(super) records_synced: bool,
    pub(super) list_synced: bool,
    pub(super) user_data_synced: bool,
    pub(super) template_for: Option<(u64, u32)>,
    pub(super) cull_params_written: Option<CullParams>,
    pub(super) record_count: u32,
    pub(super) gpu_lods: u32,
    pub(super) view_lists: u32,
    /// Motion vectors on: the records as the last plan uploaded them (the previous frame's records
    /// of the next plan), indexed like the crowd's; `None` while motion vectors are off.
    pub(super) history: Option<Vec<InstanceRecord>>,
    /// The record ranges the last plan wrote (their previous records change again this frame).
    pub(super) history_ranges: Vec<Range<u32>>,
    /// The camera matrix and crowd clock of the last plan with motion vectors.
    pub(super) previous_frame: Option<([[f32; 4]; 4], f32)>,
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

    /// LODs of the last GPU-culled frame (the visible lists to read back), plus one for the
    /// impostor cards' list when the asset has a tier; 0 before any.
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
