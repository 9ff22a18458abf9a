//! The one `prepare` driver both backends run ([`FrameState::prepare`]): the prechecks, planning,
//! replaying the recording through the backend ([`FrameBackend`]), the failure handling (every crowd
//! marked unsynced) and the report; and the checks of the host-pass calls (`draw`, `draw_prepass`,
//! `draw_depth`).

use std::borrow::Cow;

use super::*;
use crate::frame::gpu_counts::CountsRing;
use crate::pipeline::HostShader;
use crate::render::CrowdDraw;

/// A backend as the driver sees it: its crowds' state and the replay of one [`Command`].
pub trait FrameBackend {
    /// The backend's uploaded asset (`GpuAsset`).
    type Asset;
    /// The backend's GPU copy of a crowd (`GpuCrowd`).
    type Crowd;
    /// The backend's error.
    type Error: From<FrameError>;

    /// The asset as the planner takes it.
    fn info(asset: &Self::Asset) -> &AssetDrawInfo;
    /// The crowd copy's sync state.
    fn sync(crowd: &mut Self::Crowd) -> &mut CrowdSync;
    /// The crowd copy's read-back ring of culling counts.
    fn ring(crowd: &Self::Crowd) -> &CountsRing;
    /// The crowd copy's read-back ring, to change.
    fn ring_mut(crowd: &mut Self::Crowd) -> &mut CountsRing;
    /// The device's limits on a plan.
    fn plan_limits(&self) -> PlanLimits;
    /// After planning, before any command: collect the counts that arrived and start each crowd's
    /// ring frame (a slot for this frame's counts with GPU culling).
    ///
    /// # Errors
    /// The backend's, e.g. a ring buffer that cannot be created.
    fn begin_frame(
        &mut self,
        crowds: &mut [CrowdDraw<'_, Self::Asset, Self::Crowd>],
        culling: Culling,
    ) -> Result<(), Self::Error>;
    /// Carries out one command (or queues it, for a backend that records only once nothing can
    /// fail). A resource it does not hold is [`FrameError::Missing`].
    ///
    /// # Errors
    /// The backend's; [`FrameError::Missing`].
    fn command(
        &mut self,
        crowds: &mut [CrowdDraw<'_, Self::Asset, Self::Crowd>],
        plan: &FramePlan,
        command: &Command,
    ) -> Result<(), Self::Error>;
    /// After the last command: checks that every draw of the host's passes finds its resources and
    /// records what the backend queued.
    ///
    /// # Errors
    /// The backend's; [`FrameError::Missing`].
    fn finish(
        &mut self,
        crowds: &mut [CrowdDraw<'_, Self::Asset, Self::Crowd>],
        plan: &FramePlan,
    ) -> Result<(), Self::Error>;
    /// Last, whenever the prechecks passed (after a failed plan too): closes what the backend opened for
    /// the frame and gives the frame's result, which it may turn into an error.
    ///
    /// # Errors
    /// `result`'s, or the backend's.
    fn end_frame(
        &mut self,
        crowds: &mut [CrowdDraw<'_, Self::Asset, Self::Crowd>],
        result: Result<(), Self::Error>,
    ) -> Result<(), Self::Error>;
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
        crowds: &mut [CrowdDraw<'_, B::Asset, B::Crowd>],
        camera: &Camera,
        options: &RenderOptions,
        views: &[[[f32; 4]; 4]],
    ) -> Result<FrameReport, B::Error> {
        self.prepared = None;
        // Before planning: nothing of the crowds is taken or changed.
        checks.check(options)?;
        let limits = backend.plan_limits();
        let planned = {
            let mut inputs: Vec<PlanCrowd<'_>> = crowds
                .iter_mut()
                .map(|d| PlanCrowd { crowd: &mut *d.crowd, asset: B::info(d.asset), sync: B::sync(d.gpu) })
                .collect();
            self.plan.plan_with_views(&mut inputs, camera, options, &limits, views)
        };
        let result = planned.map_err(|e| B::Error::from(FrameError::Plan(e))).and_then(|()| {
            backend.begin_frame(crowds, options.culling)?;
            self.plan.record(&mut self.commands);
            for command in &self.commands {
                backend.command(crowds, &self.plan, command)?;
            }
            backend.finish(crowds, &self.plan)
        });
        let result = backend.end_frame(crowds, result);
        if result.is_err() {
            for d in crowds.iter_mut() {
                B::sync(d.gpu).mark_unsynced();
                B::ring_mut(d.gpu).drop_current();
            }
        } else {
            self.prepared = Some(PreparedCrowds::new(crowds.iter().map(|d| d.crowd.id())));
        }
        let mut report = self.plan.report();
        report.set_gpu_rings(crowds.iter().map(|d| B::ring(d.gpu)));
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
