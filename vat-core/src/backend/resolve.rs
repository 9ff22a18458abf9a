//! Ids to handles: the buffer a [`BufferId`] names, what a draw binds ([`Bindings`]), what a
//! dispatch binds ([`Compute`]), and a list of draws as the binding changes a pass records
//! ([`DrawStep`]). Every lookup that fails is a [`Missing`], so a backend never skips a command.

use std::ops::Range;

use super::{FrameGroups, GpuCrowd, Handles, RendererFrame, Stage};
use crate::frame::{AssetDrawInfo, BufferId, Dispatch, Draw, DrawGeometry, DrawResources, Missing};
use crate::pipeline::PipelineKey;
use crate::render::CrowdDraw;

/// What a draw binds of an uploaded asset.
pub struct AssetParts<'a, H: Handles> {
    /// What the planner takes of it.
    pub info: &'a AssetDrawInfo,
    /// Group 1, per [`Stage`].
    pub groups: &'a [H::Group],
    /// The index buffer.
    pub index: &'a H::Index,
}

/// A backend's uploaded asset (`GpuAsset`) as the core reads it.
pub trait GpuAssetParts<H: Handles> {
    /// What the planner and the draws take of it.
    fn parts(&self) -> AssetParts<'_, H>;
}

/// The crowds of a frame on backend `H`.
pub type Crowds<'a, 'c, A, H> = &'a [CrowdDraw<'c, A, GpuCrowd<H>>];

/// The buffer `id` names among `crowds` and the renderer's `own` uniforms.
///
/// # Errors
/// [`Missing::Buffer`] when it is not created.
pub fn buffer<'a, A, H: Handles>(
    crowds: Crowds<'a, '_, A, H>,
    own: &'a H::Buffer,
    id: BufferId,
) -> Result<&'a H::Buffer, Missing> {
    let found = match id.crowd() {
        Some(k) => crowds[k].gpu.buffer(id),
        None => Some(own),
    };
    found.ok_or(Missing::Buffer(id))
}

/// What one draw binds, found.
pub enum Bindings<'a, H: Handles> {
    /// Groups 0-2 and the index buffer of a crowd's draw, and its indirect arguments.
    Crowd {
        /// Groups 0, 1 and 2.
        groups: [&'a H::Group; 3],
        /// The asset's index buffer.
        index: &'a H::Index,
        /// The indirect draw's arguments.
        args: Option<&'a H::Buffer>,
    },
    /// Group 0 alone.
    FrameOnly(&'a H::Group),
}

/// What `draw` binds in a pass of `stage`, each crowd's group 0 that of extra view `view` when
/// given, the renderer's own groups and host map being `own`'s.
///
/// # Errors
/// [`Missing`] for a group or buffer not created.
pub fn bindings<'a, A: GpuAssetParts<H>, H: Handles>(
    crowds: Crowds<'a, '_, A, H>,
    own: &'a RendererFrame<H>,
    stage: Stage,
    view: Option<usize>,
    draw: &Draw,
) -> Result<Bindings<'a, H>, Missing> {
    let host_map = own.frame_host_shadow.as_ref();
    let frame = |groups: &'a FrameGroups<H>| groups.get(stage, host_map);
    match draw.resources {
        DrawResources::Crowd { crowd, instances } => {
            let c = &crowds[crowd];
            let gpu: &'a GpuCrowd<H> = c.gpu;
            let buffers = gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?;
            let group0 = match view {
                Some(v) => gpu.views.get(v).map(|u| &u.depth),
                None => frame(&gpu.frame),
            };
            let group0 = group0.ok_or(Missing::FrameGroup { crowd: Some(crowd), view })?;
            let lists = buffers.group(stage, instances).ok_or(Missing::CrowdBuffers(crowd))?;
            let args = match draw.geometry {
                DrawGeometry::IndexedIndirect { .. } => {
                    Some(buffers.draw_args_of(instances).ok_or(Missing::CrowdBuffers(crowd))?)
                }
                _ => None,
            };
            let asset = c.asset.parts();
            let group1 = asset.groups.get(stage as usize).ok_or(Missing::CrowdBuffers(crowd))?;
            Ok(Bindings::Crowd { groups: [group0, group1, lists], index: asset.index, args })
        }
        DrawResources::FrameOnly { crowd } => {
            let group = match crowd {
                Some(k) => frame(&crowds[k].gpu.frame),
                None => frame(&own.groups),
            };
            Ok(Bindings::FrameOnly(group.ok_or(Missing::FrameGroup { crowd, view: None })?))
        }
    }
}

/// A draw with its resources and pipeline (`P`, the backend's) found: recording it cannot fail.
pub struct Found<'a, H: Handles, P> {
    /// The draw.
    pub draw: &'a Draw,
    /// What it binds.
    pub bindings: Bindings<'a, H>,
    /// Its pipeline.
    pub pipeline: &'a P,
}

/// `draws` of a pass of `stage` (see [`bindings`]) with their resources and pipelines found.
///
/// # Errors
/// [`Missing`] for a resource or pipeline not found.
pub fn find_draws<'a, A: GpuAssetParts<H>, H: Handles, P>(
    crowds: Crowds<'a, '_, A, H>,
    own: &'a RendererFrame<H>,
    (stage, view): (Stage, Option<usize>),
    draws: &'a [Draw],
    pipelines: &'a [(PipelineKey, P)],
) -> Result<Vec<Found<'a, H, P>>, Missing> {
    draws
        .iter()
        .map(|draw| {
            let bindings = bindings(crowds, own, stage, view, draw)?;
            let found = pipelines.iter().find(|(k, _)| *k == draw.pipeline);
            let pipeline = &found.ok_or(Missing::Pipeline(draw.pipeline))?.1;
            Ok(Found { draw, bindings, pipeline })
        })
        .collect()
}

/// The pipelines (made by `make`, the backend's) of `draws`, each once.
///
/// # Errors
/// `make`'s.
pub fn pipelines_for<P, E>(
    draws: &[Draw],
    mut make: impl FnMut(PipelineKey) -> Result<P, E>,
) -> Result<Vec<(PipelineKey, P)>, E> {
    let mut pipelines: Vec<(PipelineKey, P)> = Vec::new();
    for draw in draws {
        if !pipelines.iter().any(|(k, _)| *k == draw.pipeline) {
            pipelines.push((draw.pipeline, make(draw.pipeline)?));
        }
    }
    Ok(pipelines)
}

/// One step of recording found draws into a pass.
pub enum DrawStep<'a, H: Handles, P> {
    /// Bind groups 0-2 and the index buffer (32-bit indices).
    BindCrowd {
        /// Groups 0, 1 and 2.
        groups: [&'a H::Group; 3],
        /// The index buffer.
        index: &'a H::Index,
    },
    /// Bind group 0 alone (with the frame-only layout).
    BindFrameOnly(&'a H::Group),
    /// Bind a pipeline.
    Pipeline(&'a P),
    /// An indexed draw.
    Indexed {
        /// Index range.
        indices: Range<u32>,
        /// Instance range.
        instances: Range<u32>,
    },
    /// An indexed indirect draw of one draw's arguments at byte `offset` of `args`.
    IndexedIndirect {
        /// The arguments' buffer.
        args: &'a H::Buffer,
        /// Byte offset.
        offset: u64,
    },
    /// A non-indexed draw.
    Vertices {
        /// Vertex range.
        vertices: Range<u32>,
        /// Instance range.
        instances: Range<u32>,
    },
}

/// Gives `step` the steps of recording `found`, binding only what changes from one draw to the
/// next (the last pipeline, groups and index buffer stay bound).
pub fn draw_steps<'a, H: Handles, P>(found: &'a [Found<'a, H, P>], mut step: impl FnMut(DrawStep<'a, H, P>)) {
    let mut bound: Option<DrawResources> = None;
    let mut current: Option<PipelineKey> = None;
    for f in found {
        if bound != Some(f.draw.resources) {
            step(match f.bindings {
                Bindings::Crowd { groups, index, .. } => DrawStep::BindCrowd { groups, index },
                Bindings::FrameOnly(group) => DrawStep::BindFrameOnly(group),
            });
            bound = Some(f.draw.resources);
        }
        if current != Some(f.draw.pipeline) {
            step(DrawStep::Pipeline(f.pipeline));
            current = Some(f.draw.pipeline);
        }
        match (&f.draw.geometry, &f.bindings) {
            (DrawGeometry::Indexed { indices, instances }, _) => {
                step(DrawStep::Indexed { indices: indices.clone(), instances: instances.clone() });
            }
            (DrawGeometry::IndexedIndirect { offset }, Bindings::Crowd { args: Some(args), .. }) => {
                step(DrawStep::IndexedIndirect { args, offset: *offset });
            }
            (DrawGeometry::IndexedIndirect { .. }, _) => {}
            (DrawGeometry::Vertices { vertices, instances }, _) => {
                step(DrawStep::Vertices { vertices: vertices.clone(), instances: instances.clone() });
            }
        }
    }
}

/// What a compute dispatch binds, found.
pub enum Compute<'a, H: Handles> {
    /// `cs_scatter`: its group 3.
    Scatter {
        /// Group 3.
        group: &'a H::Group,
        /// Workgroups in x and y.
        workgroups: [u32; 2],
    },
    /// The culling: groups 0-2 of the compute stage.
    Cull {
        /// Groups 0, 1 and 2.
        groups: [&'a H::Group; 3],
        /// Workgroups in x and y.
        workgroups: [u32; 2],
    },
}

/// What `dispatch` binds.
///
/// # Errors
/// [`Missing`] for a group not created.
pub fn compute<'a, A: GpuAssetParts<H>, H: Handles>(
    crowds: Crowds<'a, '_, A, H>,
    dispatch: Dispatch,
) -> Result<Compute<'a, H>, Missing> {
    let compute = Stage::Compute as usize;
    let (crowd, workgroups, group0, lists) = match dispatch {
        Dispatch::Scatter { crowd, workgroups, .. } => {
            let scatter = crowds[crowd].gpu.buffers.as_ref().and_then(|b| b.scatter.as_ref());
            let scatter = scatter.ok_or(Missing::Buffer(BufferId::ScatterRecords { crowd }))?;
            return Ok(Compute::Scatter { group: &scatter.group, workgroups });
        }
        Dispatch::Cull { crowd, workgroups, .. } => {
            let gpu: &'a GpuCrowd<H> = crowds[crowd].gpu;
            let buffers = gpu.buffers.as_ref().ok_or(Missing::CrowdBuffers(crowd))?;
            let group0 =
                gpu.frame.own.get(compute).ok_or(Missing::FrameGroup { crowd: Some(crowd), view: None })?;
            (crowd, workgroups, group0, &buffers.groups.compute)
        }
        Dispatch::CullView { crowd, view, workgroups, .. } => {
            let gpu: &'a GpuCrowd<H> = crowds[crowd].gpu;
            let (Some(uniforms), Some(lists)) =
                (gpu.views.get(view), gpu.buffers.as_ref().and_then(|b| b.views.get(view)))
            else {
                return Err(Missing::ViewLists { crowd, view });
            };
            (crowd, workgroups, &uniforms.compute, &lists.compute)
        }
    };
    let group1 = crowds[crowd].asset.parts().groups.get(compute).ok_or(Missing::CrowdBuffers(crowd))?;
    Ok(Compute::Cull { groups: [group0, group1, lists], workgroups })
}
