//! The frame as a recording: [`FramePlan::record`] turns the plan's decisions into an ordered list
//! of [`Command`]s naming the backend's resources by typed ids ([`BufferId`]), which a backend
//! replays with one `match` (plus its own barriers). A command whose resource the backend does not
//! hold is a [`FrameError::Missing`], never a skipped command.

use super::*;

/// A buffer a command names: one of crowd `crowd`'s (its position in the frame), or the renderer's
/// own uniforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BufferId {
    /// The crowd's instance records (and, with motion vectors, the previous records after them).
    Records {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's CPU-culled instance list.
    List {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's per-instance user data.
    UserData {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's scatter indices (`cs_scatter`).
    ScatterIndices {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's packed scatter records.
    ScatterRecords {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's draw-argument template (GPU culling).
    ArgsTemplate {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's culling parameters.
    CullParams {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's draw arguments (the camera's culling output).
    DrawArgs {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// Extra view `view`'s own draw arguments of the crowd.
    ViewDrawArgs {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Position of the view in [`FramePlan::views`].
        view: usize,
    },
    /// The crowd's group-0 uniforms.
    Uniforms {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The crowd's group-0 uniforms of extra view `view`.
    ViewUniforms {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Position of the view in [`FramePlan::views`].
        view: usize,
    },
    /// The renderer's own group-0 uniforms ([`FramePlan::frame_uniforms`]).
    FrameUniforms,
}

impl BufferId {
    /// The crowd whose buffer it is (`None`: the renderer's own).
    pub fn crowd(self) -> Option<usize> {
        match self {
            BufferId::Records { crowd }
            | BufferId::List { crowd }
            | BufferId::UserData { crowd }
            | BufferId::ScatterIndices { crowd }
            | BufferId::ScatterRecords { crowd }
            | BufferId::ArgsTemplate { crowd }
            | BufferId::CullParams { crowd }
            | BufferId::DrawArgs { crowd }
            | BufferId::ViewDrawArgs { crowd, .. }
            | BufferId::Uniforms { crowd }
            | BufferId::ViewUniforms { crowd, .. } => Some(crowd),
            BufferId::FrameUniforms => None,
        }
    }

    /// Whether it holds group-0 uniforms (written every frame).
    pub fn is_uniforms(self) -> bool {
        matches!(self, BufferId::Uniforms { .. } | BufferId::ViewUniforms { .. } | BufferId::FrameUniforms)
    }
}

/// Where the bytes of a [`Command::Write`] come from ([`FramePlan::bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteData {
    /// `Crowd::records()[range]`.
    Records(Range<u32>),
    /// [`CrowdPlan::previous_records`]`[range]`.
    PreviousRecords(Range<u32>),
    /// `Crowd::instance_list()[range]`.
    InstanceList(Range<u32>),
    /// `Crowd::user_data()[range]`.
    UserData(Range<u32>),
    /// The scatter plan's indices.
    ScatterIndices,
    /// The scatter plan's packed records.
    ScatterRecords,
    /// [`CrowdPlan::args_template`].
    ArgsTemplate,
    /// [`CrowdPlan::cull_params`].
    CullParams,
    /// [`CrowdPlan::uniforms`].
    Uniforms,
    /// [`CrowdPlan::view_uniforms`]`[view]`.
    ViewUniforms(usize),
    /// [`FramePlan::frame_uniforms`].
    FrameUniforms,
}

/// One step of a frame before the host's passes, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Make (or reuse) group 0 over the host's shadow map for every crowd, and for the renderer's
    /// own uniforms when the frame has them: the colour draws sample it.
    HostShadowGroups,
    /// The uploads of crowd `crowd` begin: a backend may catch their allocation failures together.
    BeginUploads {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// The uploads of crowd `crowd` end.
    EndUploads {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// Create the crowd's buffers at `capacity` (replacing the old ones): [`CrowdPlan::grow`].
    GrowCrowd {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// The new capacities.
        capacity: CrowdCapacity,
    },
    /// Create the crowd's scatter buffers of `records` records: [`CrowdPlan::grow_scatter`].
    GrowScatter {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Records they hold.
        records: u32,
    },
    /// Give the crowd's buffers lists and draw arguments for extra views `0..views`:
    /// [`CrowdPlan::grow_view_lists`].
    GrowViewLists {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Views.
        views: u32,
    },
    /// Give the crowd at least `views` extra views' uniforms with their bind groups.
    GrowViewUniforms {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Views.
        views: usize,
    },
    /// Write `data` to `target` at byte `offset`.
    Write {
        /// The buffer written.
        target: BufferId,
        /// Byte offset, a multiple of 4.
        offset: u64,
        /// What is written.
        data: WriteData,
    },
    /// Copy the first `bytes` of `from` to the start of `to` (draw arguments reset from the template).
    Copy {
        /// Source.
        from: BufferId,
        /// Destination.
        to: BufferId,
        /// Bytes copied.
        bytes: u64,
    },
    /// A compute dispatch.
    Dispatch(Dispatch),
    /// Copy crowd `crowd`'s culling counts into its read-back slot of this frame, when it has one
    /// (GPU culling; after the dispatches).
    CopyCounts {
        /// Position of the crowd in the frame.
        crowd: usize,
    },
    /// vat's built-in shadow map, cleared to 1, with the draws [`FramePlan::depth`].
    ShadowPass,
}

/// What a backend failed to find or the frame refused, before or while replaying a recording.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame samples the host's shadow map but none was given.
    #[error(
        "the frame samples the host's shadow map, but none was given: call Renderer::set_host_shadow_map \
         with the map's view, or use ShadowMapSource::BuiltIn"
    )]
    NoHostShadowMap,
    /// The frame draws vat's built-in shadows but the renderer has no built-in shadow map.
    #[error(
        "the frame draws vat's built-in shadows, but the renderer has no built-in shadow map \
         (RendererConfig::shadow_map_size is 0): give a size, use ShadowMapSource::Host, or turn shadows off"
    )]
    NoBuiltInShadowMap,
    /// The host shader refuses the frame (e.g. motion vectors without its motion entry point).
    #[error("the host shader was refused: {0}")]
    HostShader(String),
    /// Planning failed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A command or draw names a resource the backend does not hold (a bug: the recording creates
    /// every resource before a command uses it).
    #[error("internal: the frame needs {0}, which the backend does not hold")]
    Missing(Missing),
}

/// A resource a command or draw named that the backend does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Missing {
    /// A buffer.
    #[error("buffer {0:?}")]
    Buffer(BufferId),
    /// Crowd `crowd`'s buffers as a whole (bind groups of group 2, scatter group).
    #[error("crowd {0}'s buffers")]
    CrowdBuffers(usize),
    /// Crowd `crowd`'s lists of extra view `view`.
    #[error("crowd {crowd}'s lists of view {view}")]
    ViewLists {
        /// Position of the crowd in the frame.
        crowd: usize,
        /// Position of the view.
        view: usize,
    },
    /// The group 0 a draw binds (a crowd's, `None`: the renderer's own; of extra view `view`, or of
    /// the camera).
    #[error("the group 0 of crowd {crowd:?} (view {view:?})")]
    FrameGroup {
        /// Whose.
        crowd: Option<usize>,
        /// Of which extra view.
        view: Option<usize>,
    },
    /// The pipeline of a draw.
    #[error("the pipeline {0:?}")]
    Pipeline(PipelineKey),
}

impl From<Missing> for FrameError {
    fn from(m: Missing) -> Self {
        FrameError::Missing(m)
    }
}

impl FramePlan {
    /// The plan as commands, in the order a backend carries them out: group 0 over the host's
    /// shadow map; per crowd its growth and writes (records, previous records, list, user data,
    /// scatter, template, culling parameters, uniforms, view uniforms); the renderer's own uniforms;
    /// the draw-argument resets; the dispatches; the culling counts' copies; the shadow pass.
    /// Replaces `out`'s contents (its allocation is reused).
    pub fn record(&self, out: &mut Vec<Command>) {
        out.clear();
        if self.host_shadow_map {
            out.push(Command::HostShadowGroups);
        }
        for (crowd, plan) in self.crowds.iter().enumerate() {
            record_uploads(crowd, plan, out);
        }
        if self.frame_uniforms.is_some() {
            let data = WriteData::FrameUniforms;
            out.push(Command::Write { target: BufferId::FrameUniforms, offset: 0, data });
        }
        for (crowd, plan) in self.crowds.iter().enumerate() {
            let bytes = gpu::DRAW_ARGS_BYTES;
            let from = BufferId::ArgsTemplate { crowd };
            if plan.reset_draw_args {
                out.push(Command::Copy { from, to: BufferId::DrawArgs { crowd }, bytes });
            }
            for view in 0..plan.reset_view_draw_args as usize {
                out.push(Command::Copy { from, to: BufferId::ViewDrawArgs { crowd, view }, bytes });
            }
        }
        out.extend(self.dispatches.iter().map(|&d| Command::Dispatch(d)));
        if self.culling == Culling::Gpu {
            out.extend((0..self.crowds.len()).map(|crowd| Command::CopyCounts { crowd }));
        }
        if self.shadow_view_proj.is_some() {
            out.push(Command::ShadowPass);
        }
    }

    /// The bytes of `data` of crowd `crowd` (`None`: the renderer's own), `records`, `list` and
    /// `user_data` being that crowd's (`Crowd::records`, `instance_list`, `user_data`).
    pub fn bytes<'a>(&'a self, crowd: Option<(usize, &'a Crowd)>, data: &WriteData) -> &'a [u8] {
        let Some((k, c)) = crowd else {
            return self.frame_uniforms.as_ref().map_or(&[], bytemuck::bytes_of);
        };
        let plan = &self.crowds[k];
        let at = |r: &Range<u32>| r.start as usize..r.end as usize;
        match data {
            WriteData::Records(r) => bytemuck::cast_slice(&c.records()[at(r)]),
            WriteData::PreviousRecords(r) => bytemuck::cast_slice(&plan.previous_records[at(r)]),
            WriteData::InstanceList(r) => bytemuck::cast_slice(&c.instance_list()[at(r)]),
            WriteData::UserData(r) => bytemuck::cast_slice(&c.user_data()[at(r)]),
            WriteData::ScatterIndices => bytemuck::cast_slice(&plan.scatter.indices),
            WriteData::ScatterRecords => bytemuck::cast_slice(&plan.scatter.records),
            WriteData::ArgsTemplate => plan.args_template.as_deref().map_or(&[], bytemuck::cast_slice),
            WriteData::CullParams => plan.cull_params.as_ref().map_or(&[], bytemuck::bytes_of),
            WriteData::Uniforms => bytemuck::bytes_of(&plan.uniforms),
            WriteData::ViewUniforms(v) => plan.view_uniforms.get(*v).map_or(&[], bytemuck::bytes_of),
            WriteData::FrameUniforms => self.frame_uniforms.as_ref().map_or(&[], bytemuck::bytes_of),
        }
    }
}

/// Crowd `crowd`'s growth and writes, between its [`Command::BeginUploads`] and
/// [`Command::EndUploads`].
fn record_uploads(crowd: usize, plan: &CrowdPlan, out: &mut Vec<Command>) {
    out.push(Command::BeginUploads { crowd });
    if let Some(capacity) = plan.grow {
        out.push(Command::GrowCrowd { crowd, capacity });
    }
    if let Some(records) = plan.grow_scatter {
        out.push(Command::GrowScatter { crowd, records });
    }
    if let Some(views) = plan.grow_view_lists {
        out.push(Command::GrowViewLists { crowd, views });
    }
    let record = size_of::<InstanceRecord>() as u64;
    let mut write = |target, offset, data| out.push(Command::Write { target, offset, data });
    for r in &plan.record_writes {
        write(BufferId::Records { crowd }, u64::from(r.start) * record, WriteData::Records(r.clone()));
    }
    for (first, r) in &plan.previous_record_writes {
        let data = WriteData::PreviousRecords(r.clone());
        write(BufferId::Records { crowd }, u64::from(*first) * record, data);
    }
    if let Some(r) = &plan.list_writes {
        write(BufferId::List { crowd }, u64::from(r.start) * 4, WriteData::InstanceList(r.clone()));
    }
    for r in &plan.user_data_writes {
        write(BufferId::UserData { crowd }, u64::from(r.start) * 16, WriteData::UserData(r.clone()));
    }
    if plan.scatter.scattered() > 0 {
        write(BufferId::ScatterIndices { crowd }, 0, WriteData::ScatterIndices);
        write(BufferId::ScatterRecords { crowd }, 0, WriteData::ScatterRecords);
    }
    if plan.args_template.is_some() {
        write(BufferId::ArgsTemplate { crowd }, 0, WriteData::ArgsTemplate);
    }
    if plan.cull_params.is_some() {
        write(BufferId::CullParams { crowd }, 0, WriteData::CullParams);
    }
    write(BufferId::Uniforms { crowd }, 0, WriteData::Uniforms);
    out.push(Command::GrowViewUniforms { crowd, views: plan.view_uniforms.len() });
    for view in 0..plan.view_uniforms.len() {
        let target = BufferId::ViewUniforms { crowd, view };
        out.push(Command::Write { target, offset: 0, data: WriteData::ViewUniforms(view) });
    }
    out.push(Command::EndUploads { crowd });
}
