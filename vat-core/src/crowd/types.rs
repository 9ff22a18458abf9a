//! The crowd's plain types: its asset description, configuration, draw batches, statistics and id.

use super::*;

/// What the crowd needs to know about the asset it draws (from a validated `.vat` manifest, or built
/// by hand for tests).
#[derive(Debug, Clone, PartialEq)]
pub struct CrowdAsset {
    /// The clips, in texture order (index = clip id in the records): strides, durations, modes.
    pub clips: Vec<Clip>,
    /// Object-space box of every baked frame of every clip, metres (the origin is between the feet).
    pub bounds: PositionBounds,
    /// Triangles per LOD, most detailed first (statistics only).
    pub lod_triangles: Vec<u32>,
    /// Distances (metres) at which LOD 1, 2, ... begin.
    pub lod_distances: LodThresholds,
    /// Triangles of all socket attachments together, drawn per instance with the accessory bit; 0 if
    /// the asset has none (then no attachment batches are produced).
    pub attachment_triangles: u32,
    /// Root motion of the clips that have it ([`crate::container::Manifest::root_motion`], at most
    /// one track per clip; a track of a clip index past `clips` is ignored): what
    /// [`Crowd::set_root_motion`] moves instances by. Empty for an asset without root motion.
    pub root_motion: Vec<crate::root_motion::RootMotionTrack>,
    /// Where the asset's impostor tier takes over, metres at the reference view and scale 1
    /// ([`crate::format::impostor::switch_distance`]); `None` without a tier, or with
    /// [`MAX_LODS`] mesh LODs (no draw left for the cards). [`CrowdConfig::impostors`] turns it off.
    pub impostor_switch: Option<f32>,
}

impl CrowdAsset {
    /// The crowd's view of a validated manifest.
    ///
    /// LOD thresholds are the `max_distance` of every LOD but the last (where the next LOD begins).
    /// Equal consecutive distances (a LOD that is never used) are nudged one f32 ulp apart so that
    /// LOD indices still match the manifest; an infinite distance ends the list (later LODs are never
    /// selected); at most `MAX_LODS - 1` thresholds are kept. Attachment triangles are each
    /// attachment's index count / 3.
    ///
    /// # Errors
    /// [`Error::MissingSection`] without vertex or rigid animation (the bounds come from it), clips or LODs;
    /// [`Error::BlobIdOutOfRange`] for an attachment index blob the manifest does not list.
    pub fn from_manifest(m: &Manifest) -> Result<Self> {
        let bounds = m.animation_bounds().ok_or(Error::MissingSection {
            what: "vertex or rigid animation (the crowd needs its bounds)",
        })?;
        if m.clips.is_empty() {
            return Err(Error::MissingSection { what: "clips" });
        }
        if m.lods.is_empty() {
            return Err(Error::MissingSection { what: "LODs" });
        }
        let mut distances: Vec<f32> = Vec::with_capacity(m.lods.len());
        let mut previous = 0.0f32;
        for lod in &m.lods[..m.lods.len() - 1] {
            let d = lod.max_distance;
            if !d.is_finite() || distances.len() == MAX_LODS - 1 {
                break;
            }
            let d = if d > previous { d } else { previous.next_up() };
            distances.push(d);
            previous = d;
        }
        let lod_distances = LodThresholds::new(&distances)?;
        let mut attachment_triangles = 0u32;
        for a in &m.attachments {
            let entry = m.blobs.get(a.indices.0 as usize).ok_or(Error::BlobIdOutOfRange {
                what: "attachment indices",
                blob: a.indices.0,
                blob_count: m.blobs.len() as u32,
            })?;
            let triangles = u32::try_from(entry.length / 12).unwrap_or(u32::MAX);
            attachment_triangles = attachment_triangles.saturating_add(triangles);
        }
        Ok(Self {
            clips: m.clips.clone(),
            bounds,
            lod_triangles: m.lods.iter().map(|l| l.triangle_count).collect(),
            lod_distances,
            attachment_triangles,
            root_motion: m.root_motion.clone(),
            impostor_switch: m
                .impostors
                .as_ref()
                .filter(|_| (lod_distances.lod_count() as usize) < MAX_LODS)
                .map(|t| crate::format::impostor::switch_distance(t.radius, t.tile_size)),
        })
    }

    /// LOD levels the crowd selects among: `lod_distances.lod_count()`.
    pub fn lod_count(&self) -> u32 {
        self.lod_distances.lod_count()
    }

    /// The bounding sphere `(centre, radius)` of an instance in world space, metres: the sphere around
    /// the asset's bounds (centre `min + extent / 2`, radius half the diagonal) placed by the record,
    /// `centre = position + R_y(yaw) * (scale * c)` (`x' = cos * x + sin * z`, `z' = cos * z - sin * x`),
    /// `radius = scale * r`. This is the sphere the GPU culling shader tests per instance; the CPU
    /// culling's cell volumes enclose it.
    pub fn instance_sphere(&self, r: &InstanceRecord) -> ([f32; 3], f32) {
        let (c, rho) = local_sphere(&self.bounds);
        let s = r.scale;
        let (sin, cos) = r.yaw.sin_cos();
        let (x, y, z) = (c[0] * s, c[1] * s, c[2] * s);
        let p = r.position;
        ([p[0] + (cos * x + sin * z), p[1] + y, p[2] + (cos * z - sin * x)], rho * s)
    }
}

/// Centre and radius (metres) of the sphere around `bounds`.
pub(super) fn local_sphere(bounds: &PositionBounds) -> ([f32; 3], f32) {
    let e = bounds.extent;
    let c = [bounds.min[0] + e[0] * 0.5, bounds.min[1] + e[1] * 0.5, bounds.min[2] + e[2] * 0.5];
    (c, 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2]).sqrt())
}

/// Per-unit-scale volumes derived from the asset bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Shape {
    /// Horizontal reach of the instance sphere from the origin: `|c_xz| + r` (metres at scale 1),
    /// rounded up slightly.
    pub(super) margin_h: f32,
    /// Lowest / highest reach of the instance sphere above the origin: `c_y -/+ r`.
    pub(super) y_lo: f32,
    pub(super) y_hi: f32,
    /// Radius of the picking cylinder: the bounds' farthest horizontal corner from the origin.
    pub(super) pick_radius: f32,
    /// Height range of the picking cylinder above the origin: the bounds' y range.
    pub(super) pick_y: [f32; 2],
}

impl Shape {
    pub(super) fn new(bounds: &PositionBounds) -> Self {
        let (c, rho) = local_sphere(bounds);
        let grow = |v: f32| v * (1.0 + 1e-5) + 1e-5;
        let max = [0, 1, 2].map(|a| bounds.min[a] + bounds.extent[a]);
        let far_x = bounds.min[0].abs().max(max[0].abs());
        let far_z = bounds.min[2].abs().max(max[2].abs());
        Self {
            margin_h: grow((c[0] * c[0] + c[2] * c[2]).sqrt() + rho),
            y_lo: c[1] - grow(rho),
            y_hi: c[1] + grow(rho),
            pick_radius: (far_x * far_x + far_z * far_z).sqrt(),
            pick_y: [bounds.min[1], max[1]],
        }
    }
}

/// Runtime settings of a crowd; change them between frames with [`Crowd::config_mut`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrowdConfig {
    /// Side of a grid cell, metres (default 16: about 50-100 characters per cell in a dense crowd, a
    /// few thousand cells per km²). Not finite or `<= 0` means 16. Changing it rebuilds the grid at
    /// the next frame. The grid may use a larger power-of-two multiple to stay under 4M cells.
    pub cell_size: f32,
    /// LOD bias in doublings of distance (default 0): `+1` treats everything as twice as far (coarser
    /// sooner), `-1` as half as far. See [`LodThresholds::select`].
    pub lod_bias: f32,
    /// Where a cell's LOD distance is measured to (default [`LodDistance::CellCentre`]).
    pub lod_distance: LodDistance,
    /// Draw every visible cell at the last LOD as one batch from the far pool (default true). Has no
    /// effect on a single-LOD asset.
    pub far_pool: bool,
    /// Produce shadow-pass batches (default true).
    pub shadows: bool,
    /// Coarsest LOD that casts shadows (default 1: the two finest LODs, near the camera). Clamped to
    /// the asset's last LOD, so an asset with fewer LODs (a single one) casts shadows at every
    /// distance.
    pub shadow_max_lod: u32,
    /// Use the cross-fade pipeline at all (default true). Off: every batch goes to `main_plain`.
    /// On, it is used only while some instance's fade runs ([`Crowd::cross_fade_in_use`]): with
    /// no fade running it draws what the plain pipeline draws, at the cost of a second clip's
    /// sampling per vertex.
    pub cross_fade: bool,
    /// Coarsest LOD drawn with the cross-fade pipeline (default 1); coarser batches go to
    /// `main_plain`, showing clip A only while a fade runs. Clamped to the asset's last LOD like
    /// `shadow_max_lod`.
    pub cross_fade_max_lod: u32,
    /// Produce attachment batches at all (default true).
    pub attachments: bool,
    /// Coarsest LOD whose cells draw attachments (default 1).
    pub attachment_max_lod: u32,
    /// Dirty-record runs separated by at most this many clean records are uploaded as one range
    /// (default 16 records = 1 KiB): fewer, larger copies for a little extra data.
    pub upload_merge_gap: u32,
    /// Keep [`AnimationEvent`]s for [`Crowd::drain_events`] (default off: a game that never drains
    /// them does not accumulate them). Queued plays ([`Crowd::play_after`]) start either way. Set
    /// it before the plays whose events are wanted: an instance is scheduled for events when its
    /// play starts ([`Crowd::play_as`], [`Crowd::set_speed`]) or its clip gets a mark.
    pub record_events: bool,
    /// The most [`RootMotionDelta`]s that wait to be drained ([`Crowd::drain_root_motion`]; default
    /// [`DEFAULT_ROOT_MOTION_CAPACITY`]); later ones are counted in
    /// [`Crowd::dropped_root_motion`] instead of kept. Only instances in a reporting
    /// [`RootMotionMode`] make them, one per instance and `advance` at most: a host draining every
    /// frame needs as many as it has reporting instances.
    pub root_motion_capacity: usize,
    /// Draw far instances as the asset's impostor cards when it has a tier (default true; see
    /// [`crate::format::impostor`]): from the tier's switch distance on (where a card texel covers
    /// a screen pixel, [`crate::format::impostor::switch_distance`], scaled by the view and the LOD
    /// bias like the LOD distances), cross-fading over the next quarter of that distance. Off, or
    /// for an asset without a tier or with [`crate::lod::MAX_LODS`] mesh LODs (no draw left for the
    /// cards), far instances keep their last mesh LOD.
    pub impostors: bool,
}

impl Default for CrowdConfig {
    fn default() -> Self {
        Self {
            cell_size: 16.0,
            lod_bias: 0.0,
            lod_distance: LodDistance::CellCentre,
            far_pool: true,
            shadows: true,
            shadow_max_lod: 1,
            cross_fade: true,
            cross_fade_max_lod: 1,
            attachments: true,
            attachment_max_lod: 1,
            upload_merge_gap: 16,
            record_events: false,
            root_motion_capacity: DEFAULT_ROOT_MOTION_CAPACITY,
            impostors: true,
        }
    }
}

/// Index of an instance: its position in [`Crowd::records`]. Stable for the crowd's lifetime
/// (instances are never removed or reordered; [`Crowd::despawn`] hides them).
pub type InstanceId = u32;

/// One instanced draw: `instance_count` consecutive entries of the instance list from
/// `first_instance` (indices into the **instance list**, whose entries are record indices), all at
/// LOD `lod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrawBatch {
    /// LOD of the mesh to draw (unused by attachment batches, where it is the LOD of the batch's first
    /// cell).
    pub lod: u32,
    /// First entry of the instance list.
    pub first_instance: u32,
    /// Number of entries, `>= 1`.
    pub instance_count: u32,
}

/// Everything a backend needs to draw one frame of a crowd with CPU culling.
#[derive(Debug, Clone)]
pub struct FrameDraws<'a> {
    /// Dirty record ranges to write into the GPU record buffer: `(first record index, records)`,
    /// ascending and disjoint. Empty when no record changed: a crowd that did not move uploads zero
    /// instance bytes.
    pub record_uploads: Vec<(u32, &'a [InstanceRecord])>,
    /// The part of the instance list that changed: write these entries at entry offset `.0` (in
    /// `u32`s, not bytes). `None` when the list is unchanged since the last frame.
    pub list_upload: Option<(u32, &'a [u32])>,
    /// Length of the whole instance list (entries): the buffer must hold at least this many `u32`.
    /// At most twice the number of instances (every instance once, plus the far pool).
    pub instance_list_len: u32,
    /// Colour pass, cross-fade pipeline: batches with `LOD <= cross_fade_max_lod` when cross-fade is on.
    pub main_fade: Vec<DrawBatch>,
    /// Colour pass, plain pipeline: every other batch.
    pub main_plain: Vec<DrawBatch>,
    /// Shadow pass (empty when shadows are off): the visible cells with `LOD <= shadow_max_lod`.
    pub shadow: Vec<DrawBatch>,
    /// Attachment draws (empty when attachments are off or the asset has none): the visible cells with
    /// `LOD <= attachment_max_lod` holding a shown instance with the accessory bit.
    pub attachments: Vec<DrawBatch>,
    /// Impostor cards, colour pass (empty without a tier drawn): every visible cell where some
    /// member may be past the switch; each batch's `lod` is the cards' draw, the mesh LOD count,
    /// or one more for cells whose every member is drawn from one view (from
    /// [`crate::format::impostor::SINGLE_VIEW_LEVEL`] mip levels past the switch on: a pipeline
    /// without the three-view path draws them). The cards' vertex stage keeps only the members
    /// past the switch.
    pub impostors: Vec<DrawBatch>,
    /// Impostor cards, shadow pass: the same cells when shadows are on and `shadow_max_lod`
    /// reaches the cards' draw.
    pub impostor_shadow: Vec<DrawBatch>,
    /// Counters of this frame.
    pub stats: CrowdStats,
}

/// The cull loop's inputs for `frustum`, LODs from `camera`'s position.
/// The cross-fade routing is off: the caller sets `cross_fade` from [`Crowd::cross_fade_in_use`].
pub(super) fn cull_params<'a>(
    config: &'a CrowdConfig,
    shape: &'a Shape,
    asset: &'a CrowdAsset,
    frustum: &'a Frustum,
    camera: &Camera,
    membership_changed: bool,
    records: &'a [InstanceRecord],
) -> CullParams<'a> {
    CullParams {
        config,
        cross_fade: false,
        shape,
        thresholds: &asset.lod_distances,
        lod_triangles: &asset.lod_triangles,
        attachment_triangles: asset.attachment_triangles,
        frustum,
        eye: camera.position,
        lod_bias: config.lod_bias + camera.lod_bias(),
        impostor: asset
            .impostor_switch
            .filter(|_| config.impostors)
            .map(|start| (start, start * crate::format::impostor::SWITCH_FADE_BAND)),
        membership_changed,
        records,
    }
}

/// The batches of an extra view of a frame ([`Crowd::cull_view`]): ranges of the frame's instance
/// list, for depth-only passes (a shadow cascade, a spot light, a depth pre-pass).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewDraws {
    /// Bodies, cross-fade pipeline (`LOD <= cross_fade_max_lod` when cross-fade is on).
    pub main_fade: Vec<DrawBatch>,
    /// Bodies, plain pipeline.
    pub main_plain: Vec<DrawBatch>,
    /// Attachments (cells with `LOD <= attachment_max_lod` holding an accessory).
    pub attachments: Vec<DrawBatch>,
    /// Impostor cards (see [`FrameDraws::impostors`]).
    pub impostors: Vec<DrawBatch>,
    /// Shown instances in the view's cells.
    pub instances: u32,
}

/// Counters of one frame.
///
/// They add up: `drawn == submitted` on the CPU path; the main batches hold
/// `submitted + hidden_in_view` entries; `triangles` is the sum over drawn instances of their LOD's
/// triangles plus `attachments_drawn * attachment_triangles`; `draws_main == main_fade.len() +
/// main_plain.len()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrowdStats {
    /// Instances in the crowd (records), hidden ones included.
    pub simulated: u32,
    /// Shown (not hidden) instances the CPU culling hands to the GPU: the members of the visible
    /// cells, those of a cell the frustum cuts only when in view themselves.
    pub submitted: u32,
    /// Shown instances the main pass draws (equal to `submitted` on the CPU path; a GPU-culling
    /// backend reports its per-instance count here).
    pub drawn: u32,
    /// Hidden instances in the main batches (members of visible cells the frustum does not cut):
    /// collapsed by the shader. (Added to the contract.)
    pub hidden_in_view: u32,
    /// Triangles drawn by the main pass, attachments included.
    pub triangles: u64,
    /// Draw calls of the main pass (`main_fade` + `main_plain`).
    pub draws_main: u32,
    /// Draw calls of the shadow pass.
    pub draws_shadow: u32,
    /// Attachment draw calls (per attachment mesh, a backend multiplies by its mesh count).
    pub draws_attachments: u32,
    /// Shown instances drawn into the shadow map.
    pub shadow_casters: u32,
    /// Shown instances with the accessory bit in attachment batches. (Added to the contract.)
    pub attachments_drawn: u32,
    /// Shown instances drawn from the far pool. (Added to the contract.)
    pub far_pool_instances: u32,
    /// Bytes of [`FrameDraws::record_uploads`].
    pub uploaded_record_bytes: u64,
    /// Bytes of [`FrameDraws::list_upload`].
    pub uploaded_list_bytes: u64,
    /// Cells that passed the frustum test (and have a shown instance).
    pub visible_cells: u32,
}

impl std::ops::AddAssign for CrowdStats {
    /// Adds every counter of `other` (the statistics of several crowds drawn in one frame).
    fn add_assign(&mut self, other: Self) {
        self.simulated += other.simulated;
        self.submitted += other.submitted;
        self.drawn += other.drawn;
        self.hidden_in_view += other.hidden_in_view;
        self.triangles += other.triangles;
        self.draws_main += other.draws_main;
        self.draws_shadow += other.draws_shadow;
        self.draws_attachments += other.draws_attachments;
        self.shadow_casters += other.shadow_casters;
        self.attachments_drawn += other.attachments_drawn;
        self.far_pool_instances += other.far_pool_instances;
        self.uploaded_record_bytes += other.uploaded_record_bytes;
        self.uploaded_list_bytes += other.uploaded_list_bytes;
        self.visible_cells += other.visible_cells;
    }
}

/// The identity of a [`Crowd`], unique in the process: a backend's per-crowd GPU state
/// (`GpuCrowd`) remembers the crowd it mirrors by it and refuses any other.
///
/// Cloning a crowd gives the clone a **new** id (`CrowdId::clone` draws a fresh one): the clone's
/// records diverge from the original's from then on, so a GPU copy of one is not a copy of the other.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CrowdId(u64);

impl CrowdId {
    pub(super) fn next() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The id as a number (for messages).
    pub fn get(&self) -> u64 {
        self.0
    }
}

impl Clone for CrowdId {
    /// A fresh id: see the type's documentation.
    fn clone(&self) -> Self {
        Self::next()
    }
}
