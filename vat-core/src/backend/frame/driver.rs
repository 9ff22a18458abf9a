//! The one `prepare` driver both backends run ([`FrameState::prepare`]): the prechecks, planning,
//! replaying the recording through the backend ([`FrameBackend`]), the failure handling (every crowd
//! marked unsynced) and the report; and the checks of the host-pass calls (`draw`, `draw_prepass`,
//! `draw_depth`).

use std::borrow::Cow;

use super::*;
use crate::backend::{GpuAsset, GpuCrowd, Handles, RendererFrame, Stage, bindings};
use crate::pipeline::HostShader;
use crate::render::CrowdDraw;

/// A backend as the driver sees it: its handles, the replay of one [`Command`] and the recording of
/// what it queued.
pub trait FrameBackend {
    /// The backend's handle types.
    type Handles: Handles;
    /// The backend's error.
    type Error: From<FrameError>;

    /// The device's limits on a plan.
    fn plan_limits(&self) -> PlanLimits;
    /// The renderer's own group-0 state.
    fn own(&mut self) -> &mut RendererFrame<Self::Handles>;
    /// Groups 0 over the uniforms `frame` and the host's shadow map `map`.
    ///
    /// # Errors
    /// The backend's.
    fn host_groups(
        &self,
        frame: &<Self::Handles as Handles>::Buffer,
        map: &<Self::Handles as Handles>::HostMap,
    ) -> Result<<Self::Handles as Handles>::HostGroups, Self::Error>;
    /// Releases groups 0 over a host shadow map no longer kept (once no submitted frame reads them).
    fn release_host_groups(&self, old: <Self::Handles as Handles>::HostGroups) {
        drop(old);
    }
    /// After planning, before any command: collect the counts that arrived and start each crowd's
    /// ring frame (a slot for this frame's counts with GPU culling).
    ///
    /// # Errors
    /// The backend's, e.g. a ring buffer that cannot be created.
    fn begin_frame(
        &mut self,
        crowds: &mut [FrameCrowd<'_, Self>],
        culling: Culling,
    ) -> Result<(), Self::Error>;
    /// Carries out one command (or queues it, for a backend that records only once nothing can
    /// fail); [`Command::HostShadowGroups`] is the driver's. A resource it does not hold is
    /// [`FrameError::Missing`].
    ///
    /// # Errors
    /// The backend's; [`FrameError::Missing`].
    fn command(&mut self, step: Step<'_, '_, Self>) -> Result<(), Self::Error>;
    /// After the last command, once the driver found every draw of the host's passes: records what
    /// the backend queued (finding the rest first: nothing fails once recording starts).
    ///
    /// # Errors
    /// The backend's; [`FrameError::Missing`].
    fn finish(&mut self, _crowds: &mut [FrameCrowd<'_, Self>], _plan: &FramePlan) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Last, whenever the prechecks passed (after a failed plan too): closes what the backend opened for
    /// the frame and gives the frame's result, which it may turn into an error.
    ///
    /// # Errors
    /// `result`'s, or the backend's.
    fn end_frame(
        &mut self,
        _crowds: &mut [FrameCrowd<'_, Self>],
        result: Result<(), Self::Error>,
    ) -> Result<(), Self::Error> {
        result
    }
}

/// One command of a frame's recording as [`FrameBackend::command`] carries it out: the command,
/// the plan it belongs to (its ids index the plan's crowds and buffers) and the frame's crowds.
pub struct Step<'s, 'c, B: FrameBackend + ?Sized> {
    /// The frame's crowds, in the plan's order.
    pub crowds: &'s mut [FrameCrowd<'c, B>],
    /// The plan the command belongs to.
    pub plan: &'s FramePlan,
    /// The command.
    pub command: &'s Command,
}

/// One crowd of a frame on backend `B`.
pub type FrameCrowd<'a, B> =
    CrowdDraw<'a, GpuAsset<<B as FrameBackend>::Handles>, GpuCrowd<<B as FrameBackend>::Handles>>;

/// Makes (or reuses) group 0 over the host's shadow map for every crowd, and for the renderer's own
/// uniforms when the frame has them: the colour draws sample it.
///
/// # Errors
/// [`FrameError::NoHostShadowMap`]; the backend's.
fn host_shadow_groups<B: FrameBackend + ?Sized>(
    backend: &mut B,
    crowds: &mut [FrameCrowd<'_, B>],
    plan: &FramePlan,
) -> Result<(), B::Error> {
    let map = backend.own().host_shadow.clone().ok_or(FrameError::NoHostShadowMap)?;
    for d in crowds.iter_mut() {
        let gpu = &mut *d.gpu;
        let made = || backend.host_groups(&gpu.frame_buffer, &map);
        gpu.frame.host.get_or_insert(map.clone(), made, |old| backend.release_host_groups(old))?;
    }
    if plan.frame_uniforms.is_some() {
        let own = backend.own();
        let (frame, mut cache) = (own.frame_buffer.clone(), std::mem::take(&mut own.groups.host));
        let made = cache.get_or_insert(
            map.clone(),
            || backend.host_groups(&frame, &map),
            |old| backend.release_host_groups(old),
        );
        let made = made.map(|_| ());
        backend.own().groups.host = cache;
        made?;
    }
    backend.own().frame_host_shadow = Some(map);
    Ok(())
}

/// Checks that every draw of the host's passes (colour, extra views' depth) finds its resources.
///
/// # Errors
/// [`FrameError::Missing`].
fn check_host_draws<B: FrameBackend + ?Sized>(
    backend: &mut B,
    crowds: &[FrameCrowd<'_, B>],
    plan: &FramePlan,
) -> Result<(), FrameError> {
    let own = &*backend.own();
    for draw in &plan.colour {
        bindings(crowds, own, Stage::Colour, None, draw)?;
    }
    for (view, draws) in plan.view_depth.iter().enumerate() {
        for draw in draws {
            bindings(crowds, own, Stage::Depth, Some(view), draw)?;
        }
    }
    Ok(())
}

/// What the driver checks before planning, as plain data of the backend's renderer.
#[derive(Debug, Clone, Copy)]
pub struct Prechecks<'a> {
    /// Whether the host gave its shadow map (`set_host_shadow_map`).
    pub host_shadow_map: bool,
    /// Whether the renderer has a built-in shadow map (`shadow_map_size` > 0).
    pub built_in_shadow_map: bool,
    /// The host shader, if any.
    pub host_shader: Option<&'a HostShader>,
}

impl Prechecks<'_> {
    /// # Errors
    /// [`FrameError::NoHostShadowMap`], [`FrameError::NoBuiltInShadowMap`],
    /// [`FrameError::HostShader`].
    fn check(&self, options: &RenderOptions) -> Result<(), FrameError> {
        if options.samples_host_shadow_map() && !self.host_shadow_map {
            return Err(FrameError::NoHostShadowMap);
        }
        if !self.built_in_shadow_map && options.shadows && options.shadow_map == ShadowMapSource::BuiltIn {
            return Err(FrameError::NoBuiltInShadowMap);
        }
        match self.host_shader.and_then(|h| h.refuses(options.motion_vectors)) {
            Some(refusal) => Err(FrameError::HostShader(refusal)),
            None => Ok(()),
        }
    }
}

/// A host pass the draws are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPass {
    /// The colour pass, with (`true`) or without a motion attachment.
    Colour {
        /// Whether it has a motion attachment.
        motion: bool,
    },
    /// A prepass of the camera with these targets.
    Prepass(PrepassTargets),
    /// The depth pass of extra view `view`, with (`true`) or without a colour attachment.
    Depth {
        /// Position of the view.
        view: usize,
        /// Whether the pass has a colour attachment (refused).
        colour: bool,
    },
}

/// A backend renderer's frame state: the plan (reused every frame), its recording and the crowds
/// of the last successful `prepare`. Both backends keep one and run the same driver over it.
#[derive(Debug, Default)]
pub struct FrameState {
    /// The last frame's plan.
    pub plan: FramePlan,
    /// The commands of its recording.
    commands: Vec<Command>,
    /// The crowds (ids) of the last successful `prepare`; `None` after a failed one.
    prepared: Option<PreparedCrowds>,
}

impl FrameState {
    /// Whether the last `prepare` succeeded and planned motion vectors.
    pub fn motion_vectors_prepared(&self) -> bool {
        self.prepared.is_some() && self.plan.motion_vectors
    }

    /// Plans one frame of `crowds` and replays its recording through `backend`: the prechecks
    /// (nothing of the crowds is taken before they pass), the plan, the backend's
    /// [`begin_frame`](FrameBackend::begin_frame), every command, its
    /// [`finish`](FrameBackend::finish). On failure every crowd is marked unsynced and its ring's
    /// frame dropped; either way the report is the plan's, with the rings' counts.
    ///
    /// # Errors
    /// The prechecks', the plan's and the backend's.
    ///
    /// # Panics
    /// If a crowd's copy belongs to another crowd.
    #[allow(clippy::too_many_arguments)] // the backend, its checks, and `prepare`'s own arguments
    pub fn prepare<B: FrameBackend>(
        &mut self,
        backend: &mut B,
        checks: Prechecks<'_>,
        crowds: &mut [FrameCrowd<'_, B>],
        camera: &Camera,
        options: &RenderOptions,
        views: &[[[f32; 4]; 4]],
    ) -> Result<FrameReport, B::Error> {
        self.prepared = None;
        backend.own().frame_host_shadow = None;
        // Before planning: nothing of the crowds is taken or changed.
        checks.check(options)?;
        let limits = backend.plan_limits();
        let planned = {
            let mut inputs: Vec<PlanCrowd<'_>> = crowds
                .iter_mut()
                .map(|d| PlanCrowd { crowd: &mut *d.crowd, asset: &d.asset.info, sync: &mut d.gpu.sync })
                .collect();
            self.plan.plan_with_views(&mut inputs, camera, options, &limits, views)
        };
        let result = planned.map_err(|e| B::Error::from(FrameError::Plan(e))).and_then(|()| {
            backend.begin_frame(crowds, options.culling)?;
            self.plan.record(&mut self.commands);
            for command in &self.commands {
                match command {
                    Command::HostShadowGroups => host_shadow_groups(backend, crowds, &self.plan)?,
                    _ => backend.command(Step { crowds, plan: &self.plan, command })?,
                }
            }
            check_host_draws(backend, crowds, &self.plan)?;
            backend.finish(crowds, &self.plan)
        });
        let result = backend.end_frame(crowds, result);
        if result.is_err() {
            for d in crowds.iter_mut() {
                d.gpu.mark_unsynced();
            }
        } else {
            self.prepared = Some(PreparedCrowds::new(crowds.iter().map(|d| d.crowd.id())));
        }
        let mut report = self.plan.report();
        report.set_gpu_rings(crowds.iter().map(|d| &d.gpu.counts.ring));
        result.map(|()| report)
    }

    /// The draws of `pass` of the prepared frame, `None` after a failed `prepare` (nothing is
    /// drawn then).
    ///
    /// # Panics
    /// If `crowds` are not the prepared crowds in order; a motion attachment for a frame without
    /// motion vectors; a view that is not one of the frame's, or a depth pass with a colour
    /// attachment.
    pub fn draws<'c>(
        &self,
        crowds: impl IntoIterator<Item = &'c CrowdId>,
        pass: HostPass,
    ) -> Option<Cow<'_, [Draw]>> {
        self.prepared.as_ref()?.check(crowds);
        Some(match pass {
            HostPass::Colour { motion } => {
                self.plan.check_motion_attachment(motion);
                self.plan.colour_draws(motion)
            }
            HostPass::Prepass(targets) => {
                self.plan.check_motion_attachment(targets.motion);
                Cow::Owned(self.plan.prepass_draws(targets))
            }
            HostPass::Depth { view, colour } => {
                assert!(
                    view < self.plan.views.len(),
                    "view {view} of a frame prepared with {} views",
                    self.plan.views.len()
                );
                assert!(!colour, "draw_depth draws into a depth-only pass: formats.color must be None");
                Cow::Borrowed(self.plan.view_depth[view].as_slice())
            }
        })
    }
}
