//! [`FramePlan`] and the planning of a frame: buffers, uploads, dispatches and draws.

use super::*;
use crate::pipeline::ImpostorViews;

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
        let uniforms_for = |time: f32,
                            thresholds: &LodThresholds,
                            config: &CrowdConfig,
                            impostor: Option<gpu::ImpostorSwitch>| {
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
                impostor,
            })
        };
        if options.ground {
            let crowd = if crowds.is_empty() {
                self.frame_uniforms =
                    Some(uniforms_for(0.0, &LodThresholds::default(), &CrowdConfig::default(), None));
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
            let impostor = impostor_switch(c, options.mode);
            plan.uniforms = uniforms_for(
                c.crowd.shader_time(),
                &c.crowd.asset().lod_distances,
                c.crowd.config(),
                impostor,
            );
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
        self.plan_views(crowds, camera, options, views);
        self.plan_dispatches(crowds, views.len());
        Ok(())
    }

    /// The host's extra depth `views` of the planned crowds: each crowd's view uniforms and, with
    /// GPU culling, its view lists; the depth draws of each view ([`view_depth`](Self::view_depth)).
    fn plan_views(
        &mut self,
        crowds: &mut [PlanCrowd<'_>],
        camera: &Camera,
        options: &RenderOptions,
        views: &[[[f32; 4]; 4]],
    ) {
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
    }

    /// The compute dispatches of the planned crowds: the record scatters, then the camera's culling,
    /// then the culling of each of `views` extra views.
    fn plan_dispatches(&mut self, crowds: &[PlanCrowd<'_>], views: usize) {
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
                for view in 0..views {
                    self.dispatches.push(Dispatch::CullView { crowd: k, view, records, workgroups });
                }
            }
        }
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
                matches!(
                    p,
                    Program::Body(_) | Program::Rigid | Program::Fluid | Program::Sprite | Program::Impostor
                )
            }),
            // The crowd's shadow draws: into vat's map, or, when the colour draws sample the host's
            // map, into the host's depth views (draw_depth), where the host draws its casters.
            draws_shadow: if self.host_shadow_map {
                self.view_depth.iter().map(|v| v.len() as u32).sum()
            } else {
                self.depth.len() as u32
            },
            draws_attachments: count(|p| *p == Program::Attachment),
            draws_impostors: count(|p| *p == Program::Impostor),
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
pub(super) fn record_bytes(records: u32) -> u64 {
    u64::from(records) * size_of::<InstanceRecord>() as u64
}

/// Capacity growth: at least `n`, [`MIN_RECORD_CAPACITY`], twice `old`, a power of two.
pub(super) fn grow(n: u32, old: u32) -> u32 {
    n.max(MIN_RECORD_CAPACITY).max(old.saturating_mul(2)).next_power_of_two().max(n)
}

pub(super) fn check(what: &'static str, size: u64, limits: &PlanLimits) -> Result<(), PlanError> {
    let limit = limits.max_storage_buffer_bytes;
    if size > limit { Err(PlanError::BufferTooLarge { what, size, limit }) } else { Ok(()) }
}

/// The uploads of one crowd; updates its sync state.
pub(super) fn plan_crowd(
    plan: &mut CrowdPlan,
    c: &mut PlanCrowd<'_>,
    camera: &Camera,
    culling: Culling,
    motion: bool,
    limits: &PlanLimits,
) -> Result<(), PlanError> {
    reset_crowd_plan(plan, culling);
    let count = c.crowd.count();
    let sync = &mut *c.sync;
    let gpu_culling = culling == Culling::Gpu;
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
            impostors: frame.impostors,
            impostor_shadow: frame.impostor_shadow,
        };
    }
    plan.grow = plan_capacity(sync, count, list_len, motion, limits)?;
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
        uploaded += plan_cull_inputs(plan, c.crowd, c.asset, sync, count);
    }
    sync.record_count = count;
    plan.uploaded_bytes = uploaded;
    Ok(())
}

/// `plan` emptied for a new frame with `culling`.
fn reset_crowd_plan(plan: &mut CrowdPlan, culling: Culling) {
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
    plan.batches.main_fade.clear();
    plan.batches.main_plain.clear();
    plan.batches.shadow.clear();
    plan.batches.attachments.clear();
}

/// The capacities to grow a crowd's buffers to (`None`: they fit) for `count` records, a CPU
/// instance list of `list_len` and motion history when `motion`; a growth resets `sync` to nothing
/// synced at the new capacities.
fn plan_capacity(
    sync: &mut CrowdSync,
    count: u32,
    list_len: u32,
    motion: bool,
    limits: &PlanLimits,
) -> Result<Option<CrowdCapacity>, PlanError> {
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
        return Ok(Some(capacity));
    }
    Ok(None)
}

/// GPU culling's inputs of a crowd of `count` records: the draw template (when its asset or
/// capacity changed) and the parameters (when changed); the bytes they upload.
fn plan_cull_inputs(
    plan: &mut CrowdPlan,
    crowd: &Crowd,
    asset: &AssetDrawInfo,
    sync: &mut CrowdSync,
    count: u32,
) -> u64 {
    let mut uploaded = 0;
    let config = crowd.config();
    let lod_count = lod_count(crowd, asset);
    let key = (asset.id(), sync.record_capacity);
    if sync.template_for != Some(key) {
        let mut template = gpu::draw_args_template(
            &asset.lods()[..lod_count as usize],
            sync.record_capacity,
            asset.attachment_first_index(),
            asset.attachment_indices().len() as u32,
        );
        // The cards' draws take the draws (and list regions) after the last mesh LOD's: the
        // cards, then the cards drawn from one view (when there is room for both).
        if let Some(tier) = asset.impostor() {
            let [near, far] = card_slots(lod_count);
            // The far cards' draw is one triangle each (IMPOSTOR_ONE_VIEW_INDEX_COUNT).
            let far = far.map(|slot| (slot, gpu::IMPOSTOR_ONE_VIEW_INDEX_COUNT));
            let near = near.map(|slot| (slot, gpu::IMPOSTOR_CARD_INDICES.len() as u32));
            for (slot, index_count) in [near, far].into_iter().flatten() {
                let words = gpu::DRAW_ARGS_WORDS as usize;
                let at = slot as usize * words;
                let first_instance = slot.saturating_mul(sync.record_capacity);
                template[at..at + words].copy_from_slice(&[
                    index_count,
                    0,
                    tier.first_index,
                    0,
                    first_instance,
                ]);
            }
        }
        plan.args_template = Some(template);
        sync.template_for = Some(key);
    }
    let params = CullParams {
        record_count: count,
        capacity: sync.record_capacity,
        attachment_max_lod: config.attachment_max_lod,
        attachments: u32::from(config.attachments && asset.has_attachments()),
    };
    if sync.cull_params_written != Some(params) {
        plan.cull_params = Some(params);
        sync.cull_params_written = Some(params);
        uploaded = size_of::<CullParams>() as u64;
    }
    // The cards' lists follow the mesh LODs' when the template has their draws.
    sync.gpu_lods = match (asset.impostor(), card_slots(lod_count)) {
        (Some(_), [_, Some(far)]) => far + 1,
        (Some(_), [Some(near), None]) => near + 1,
        _ => lod_count,
    };
    uploaded
}

/// The previous records this frame writes (motion vectors), and the history moved on: instance
/// `i`'s previous record must be its record as the last plan uploaded it. That changes for the
/// records written this frame and those written by the last plan (`dirty`, `sync.history_ranges`);
/// instances new to the history and those whose history the host reset
/// (`Crowd::reset_motion_history`) get their current record (no motion of their own). `whole`:
/// the buffers are new, so every previous record is written.
pub(super) fn plan_previous_records(
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
pub(super) fn merge_ranges(mut ranges: Vec<Range<u32>>) -> Vec<Range<u32>> {
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
pub(super) fn plan_history(
    plan: &mut CrowdPlan,
    c: &mut PlanCrowd<'_>,
    camera: &Camera,
    options: &RenderOptions,
) {
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

/// Where crowd `c`'s impostor tier takes over this frame: `None` without a tier, with
/// `CrowdConfig::impostors` off, for bodies the cards do not stand for (rigid, fluid, sprite
/// assets, which have no tier), or with [`MAX_LODS`] mesh LODs (no draw left for the cards). Cards
/// show the animation in every body mode (rest mode too).
pub(super) fn impostor_switch(c: &PlanCrowd<'_>, mode: RenderMode) -> Option<gpu::ImpostorSwitch> {
    use crate::format::impostor::{SWITCH_FADE_BAND, switch_distance};
    let tier = c.asset.impostor()?;
    let slot = lod_count(c.crowd, c.asset);
    let body = matches!(c.asset.body_program(mode), Program::Body(_));
    let [Some(slot), far] = card_slots(slot) else { return None };
    (c.crowd.config().impostors && body).then(|| {
        let start = switch_distance(tier.radius, tier.tile_size);
        gpu::ImpostorSwitch { slot, far_slot: far.unwrap_or(0), start, end: start * SWITCH_FADE_BAND }
    })
}

/// The GPU-culled draws of the impostor cards after `lod_count` mesh LODs: the cards' (the draw
/// after the last LOD's) and that of the cards drawn from one view (the next), each `None` past
/// [`MAX_LODS`] draws.
fn card_slots(lod_count: u32) -> [Option<u32>; 2] {
    [lod_count, lod_count + 1].map(|slot| ((slot as usize) < MAX_LODS).then_some(slot))
}

/// LODs a crowd draws: those of its thresholds and of its asset, 1 to [`MAX_LODS`].
pub(super) fn lod_count(crowd: &Crowd, asset: &AssetDrawInfo) -> u32 {
    crowd.asset().lod_distances.lod_count().min(asset.lod_count()).clamp(1, MAX_LODS as u32)
}

/// The depth and colour draws of crowd `k`.
pub(super) fn plan_draws(
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
    // The cross-fade pipeline only while a fade runs (Crowd::cross_fade_in_use).
    let cross_fade = c.crowd.cross_fade_in_use();
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
                depth.push(draw(key(body, PassKind::Depth, cross_fade), src, indirect(lod)));
            }
            if attachments_on {
                let last =
                    config.shadow_max_lod.min(config.attachment_max_lod).saturating_add(1).min(lod_count);
                for lod in 0..last {
                    let pipeline = key(Program::Attachment, PassKind::Depth, cross_fade);
                    depth.push(draw(pipeline, src, indirect(MAX_LODS as u32 + lod)));
                }
            }
        }
        for lod in 0..lod_count {
            let fade = cross_fade && lod <= config.cross_fade_max_lod;
            colour.push(draw(key(body, PassKind::Colour, fade), src, indirect(lod)));
        }
        if let Some(switch) = impostor_switch(c, mode) {
            // The near cards' draw reads three views (one for every card without a far draw),
            // the far cards' one.
            let mut cards = vec![(switch.slot, ImpostorViews::PerCard)];
            if switch.far_slot != 0 {
                cards = vec![(switch.slot, ImpostorViews::Three), (switch.far_slot, ImpostorViews::One)];
            }
            for (slot, views) in cards {
                let card = |pass| impostor_key(key(Program::Impostor, pass, cross_fade), views);
                if casts && config.shadow_max_lod >= switch.slot {
                    depth.push(draw(card(PassKind::Depth), src, indirect(slot)));
                }
                colour.push(draw(card(PassKind::Colour), src, indirect(slot)));
            }
        }
        if attachments_on {
            for lod in 0..lod_count.min(config.attachment_max_lod.saturating_add(1)) {
                let pipeline = key(Program::Attachment, PassKind::Colour, cross_fade);
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
            depth.push(draw(key(body, PassKind::Depth, cross_fade), src, batch(asset.lod_indices(s.lod), s)));
        }
        if attachments_on {
            for a in b.attachments.iter().filter(|a| a.lod <= config.shadow_max_lod) {
                let pipeline = key(Program::Attachment, PassKind::Depth, cross_fade);
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
    if let Some(tier) = asset.impostor().filter(|_| impostor_switch(c, mode).is_some()) {
        let card = |pass, b: &DrawBatch| {
            let views = cpu_card_views(b, c.crowd);
            let pipeline = impostor_key(key(Program::Impostor, pass, cross_fade), views);
            draw(pipeline, src, batch(card_indices(tier.first_index, views), b))
        };
        if casts {
            depth.extend(b.impostor_shadow.iter().map(|s| card(PassKind::Depth, s)));
        }
        colour.extend(b.impostors.iter().map(|m| card(PassKind::Colour, m)));
    }
    if attachments_on {
        for a in &b.attachments {
            let pipeline = key(Program::Attachment, PassKind::Colour, cross_fade);
            colour.push(draw(pipeline, src, batch(asset.attachment_indices(), a)));
        }
    }
}

/// The card pipeline of `key` reading `views`: both faces drawn (a card faces the viewer whichever
/// way it turns).
fn impostor_key(key: PipelineKey, views: ImpostorViews) -> PipelineKey {
    PipelineKey {
        variant: ShaderVariantKey { double_sided: true, impostor_views: views, ..key.variant },
        ..key
    }
}

/// The index range of a card drawn with `views` whose indices start at `first_index`: one triangle
/// for a card drawn from one view, else two.
fn card_indices(first_index: u32, views: ImpostorViews) -> Range<u32> {
    let count = match views {
        ImpostorViews::One => gpu::IMPOSTOR_ONE_VIEW_INDEX_COUNT,
        _ => gpu::IMPOSTOR_CARD_INDICES.len() as u32,
    };
    first_index..first_index + count
}

/// The views the cards of CPU-culled batch `b` read: one in the batches of cells wholly in the
/// one-view range (their `DrawBatch::lod` is one past the crowd's LOD count, see
/// [`crate::crowd::FrameDraws::impostors`]), else each card's own choice.
fn cpu_card_views(b: &DrawBatch, crowd: &Crowd) -> ImpostorViews {
    if b.lod > crowd.asset().lod_distances.lod_count() { ImpostorViews::One } else { ImpostorViews::PerCard }
}

/// The depth draws of crowd `k`'s batches of one extra view, appended to `out`.
pub(super) fn plan_view_draws(
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
    if let Some(tier) = asset.impostor().filter(|_| impostor_switch(c, mode).is_some()) {
        let cross_fade = c.crowd.cross_fade_in_use();
        out.extend(view.impostors.iter().map(|b| {
            let views = cpu_card_views(b, c.crowd);
            let mut d = draw(Program::Impostor, cross_fade, card_indices(tier.first_index, views), b);
            d.pipeline = impostor_key(d.pipeline, views);
            d
        }));
    }
    out.extend(view.main_fade.iter().map(|b| draw(body, true, asset.lod_indices(b.lod), b)));
    out.extend(view.main_plain.iter().map(|b| draw(body, false, asset.lod_indices(b.lod), b)));
    if config.attachments && asset.has_attachments() {
        let attachments = view.attachments.iter();
        out.extend(
            attachments.map(|b| {
                draw(Program::Attachment, c.crowd.cross_fade_in_use(), asset.attachment_indices(), b)
            }),
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
