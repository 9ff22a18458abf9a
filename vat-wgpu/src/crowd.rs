//! Per-crowd GPU state: [`GpuCrowd`] and [`Renderer::create_crowd`] (the Vulkan twin is
//! vat-vulkan's `crowd.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use vat_core::crowd::Crowd;
use vat_core::frame::gpu_counts::{CountsRing, RING_DEPTH};
use vat_core::frame::{CrowdCapacity, CrowdSync, HostMapCache, InstanceSource, scatter_buffer_bytes};
use vat_core::gpu::{self, CullParams, FrameUniforms};

use crate::renderer::{AllocScope, StageSet, bind_group, empty_buffer};
use crate::{RenderError, Renderer};

/// One crowd's GPU copy: its frame uniforms (group 0), records (resident), CPU-culled instance list,
/// GPU-culled visible lists and indirect draws, the record scatter's buffers, their bind groups,
/// and what they hold ([`CrowdSync`]). Made by [`Renderer::create_crowd`] for one [`Crowd`]; using
/// it with another crowd panics. Buffers are created (and grown) by the frames that need them.
#[derive(Debug)]
pub struct GpuCrowd {
    pub(crate) sync: CrowdSync,
    /// The crowd's group-0 uniforms (camera, its clock and LOD settings, light).
    pub(crate) frame_buffer: wgpu::Buffer,
    /// Group 0 per [`StageSet`], over `frame_buffer` and vat's shadow map.
    pub(crate) frame_groups: Vec<wgpu::BindGroup>,
    /// Group 0 per [`StageSet`] over `frame_buffer` and each host shadow map drawn with.
    pub(crate) host_frame_groups: HostMapCache<wgpu::TextureView, Vec<wgpu::BindGroup>>,
    /// Per extra depth view (`Renderer::prepare`'s `views`, grown on demand): its group-0 uniforms
    /// and the depth and compute groups 0 over them.
    pub(crate) views: Vec<ViewUniforms>,
    pub(crate) buffers: Option<CrowdBuffers>,
    /// The read-back ring of the GPU culling's counts.
    pub(crate) counts: CountsReadback,
}

impl GpuCrowd {
    /// What the GPU copy holds (capacities, sync state).
    pub fn sync(&self) -> &CrowdSync {
        &self.sync
    }

    /// Forgets what the GPU copy holds: the next frame uploads the whole crowd. Needed only when an
    /// encoder that recorded a frame of this crowd is dropped unsubmitted.
    pub fn mark_unsynced(&mut self) {
        self.sync.mark_unsynced();
        self.counts.ring.drop_current();
    }
}

/// One extra view's group-0 uniforms of a crowd, and the groups 0 over them.
#[derive(Debug)]
pub(crate) struct ViewUniforms {
    pub(crate) buffer: wgpu::Buffer,
    /// Depth group 0 (the view's depth draws).
    pub(crate) depth: wgpu::BindGroup,
    /// Compute group 0 (the view's culling dispatch).
    pub(crate) compute: wgpu::BindGroup,
}

/// A slot's map state, set by its `map_buffer_on_submit` callback.
const SLOT_PENDING: u8 = 0;
const SLOT_MAPPED: u8 = 1;
const SLOT_FAILED: u8 = 2;

/// One slot of the counts ring: a mappable copy of `draw_args` and its map state.
#[derive(Debug)]
pub(crate) struct CountsSlot {
    pub(crate) buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
}

/// The GPU culling's counts read back without waiting (`vat_core::frame::gpu_counts`): the ring's
/// bookkeeping and its [`RING_DEPTH`] mappable buffers (made with the crowd's first GPU-culled
/// frame). A frame's copy is recorded after the culling dispatch and mapped when its encoder is
/// submitted (`map_buffer_on_submit`); `device.poll(PollType::Poll)` runs the callbacks without
/// blocking.
#[derive(Debug, Default)]
pub(crate) struct CountsReadback {
    pub(crate) ring: CountsRing,
    pub(crate) slots: Vec<CountsSlot>,
}

impl CountsReadback {
    /// Creates the slots' buffers if there are none yet (all or none).
    ///
    /// # Errors
    /// [`RenderError::OutOfDeviceMemory`] or [`RenderError::Device`] if wgpu cannot create them.
    pub(crate) fn ensure_slots(&mut self, device: &wgpu::Device) -> Result<(), RenderError> {
        let missing = RING_DEPTH.saturating_sub(self.slots.len());
        if missing == 0 {
            return Ok(());
        }
        let scope = AllocScope::push(device);
        let slots: Vec<CountsSlot> = (0..missing)
            .map(|_| {
                let buffer = empty_buffer(
                    device,
                    "vat culling counts readback",
                    gpu::DRAW_ARGS_BYTES,
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                );
                CountsSlot { buffer, state: Arc::new(AtomicU8::new(SLOT_PENDING)) }
            })
            .collect();
        let bytes = missing as u64 * gpu::DRAW_ARGS_BYTES;
        self.slots.extend(scope.finish("culling counts read-back buffers", bytes, Ok(slots))?);
        Ok(())
    }

    /// Asks for this frame's slot to be mapped once `encoder` is submitted.
    pub(crate) fn map_on_submit(&mut self, encoder: &wgpu::CommandEncoder) {
        let Some(slot) = self.ring.current_slot() else { return };
        let s = &self.slots[slot];
        s.state.store(SLOT_PENDING, Ordering::Release);
        let state = Arc::clone(&s.state);
        encoder.map_buffer_on_submit(&s.buffer, wgpu::MapMode::Read, .., move |r| {
            state.store(if r.is_ok() { SLOT_MAPPED } else { SLOT_FAILED }, Ordering::Release);
        });
    }

    /// Takes the results of every slot that has arrived, without waiting (the caller polled the
    /// device just before).
    pub(crate) fn collect(&mut self) {
        for (slot, _) in self.ring.in_flight() {
            let Some(s) = self.slots.get(slot) else { continue };
            match s.state.load(Ordering::Acquire) {
                SLOT_MAPPED => {
                    let words: Vec<u32> = match s.buffer.get_mapped_range(..) {
                        Ok(view) => bytemuck::pod_collect_to_vec(&view),
                        Err(_) => Vec::new(),
                    };
                    s.buffer.unmap();
                    s.state.store(SLOT_PENDING, Ordering::Release);
                    if words.is_empty() {
                        self.ring.release(slot);
                    } else {
                        self.ring.complete(slot, &words);
                    }
                }
                SLOT_FAILED => {
                    s.state.store(SLOT_PENDING, Ordering::Release);
                    self.ring.release(slot);
                }
                _ => {}
            }
        }
    }
}

/// The buffers of a [`GpuCrowd`] at one capacity.
#[derive(Debug)]
pub(crate) struct CrowdBuffers {
    pub(crate) records: wgpu::Buffer,
    pub(crate) list: wgpu::Buffer,
    pub(crate) visible: wgpu::Buffer,
    pub(crate) draw_args: wgpu::Buffer,
    pub(crate) args_template: wgpu::Buffer,
    pub(crate) cull_params: wgpu::Buffer,
    /// 16 bytes of user data per record (`instance_user_data`).
    pub(crate) user_data: wgpu::Buffer,
    /// Group 2: colour and depth over the CPU list, colour and depth over the GPU lists, compute.
    colour_cpu: wgpu::BindGroup,
    depth_cpu: wgpu::BindGroup,
    colour_gpu: wgpu::BindGroup,
    depth_gpu: wgpu::BindGroup,
    pub(crate) compute: wgpu::BindGroup,
    pub(crate) scatter: Option<ScatterBuffers>,
    /// Per GPU-culled extra view (`CrowdPlan::grow_view_lists`): its own lists.
    pub(crate) views: Vec<ViewLists>,
}

/// One GPU-culled extra view's own visible lists and draw arguments (sized like the crowd's), with
/// the groups 2 over them.
#[derive(Debug)]
pub(crate) struct ViewLists {
    /// The visible lists (bound by both groups; kept with them).
    _visible: wgpu::Buffer,
    pub(crate) draw_args: wgpu::Buffer,
    /// Compute group 2: the crowd's records and culling parameters, writing this view's lists.
    pub(crate) compute: wgpu::BindGroup,
    /// Depth group 2 over this view's visible lists.
    depth: wgpu::BindGroup,
}

impl CrowdBuffers {
    /// Group 2 of `set` over `instances` (`None`: a view's lists outside a depth pass).
    pub(crate) fn group(&self, set: StageSet, instances: InstanceSource) -> Option<&wgpu::BindGroup> {
        Some(match (set, instances) {
            (StageSet::Depth, InstanceSource::InstanceList) => &self.depth_cpu,
            (StageSet::Depth, InstanceSource::VisibleLists) => &self.depth_gpu,
            (StageSet::Depth, InstanceSource::ViewLists { view }) => &self.views.get(view)?.depth,
            (_, InstanceSource::InstanceList) => &self.colour_cpu,
            (_, InstanceSource::VisibleLists) => &self.colour_gpu,
            (_, InstanceSource::ViewLists { .. }) => return None,
        })
    }

    /// The draw arguments the indirect draws over `instances` read (`None`: the CPU list).
    pub(crate) fn draw_args_of(&self, instances: InstanceSource) -> Option<&wgpu::Buffer> {
        match instances {
            InstanceSource::InstanceList => None,
            InstanceSource::VisibleLists => Some(&self.draw_args),
            InstanceSource::ViewLists { view } => Some(&self.views.get(view)?.draw_args),
        }
    }
}

/// Packed changed records and their destinations (`vat_core::gpu::ScatterPlan`), bound with the
/// record buffer as group 3 of `cs_scatter`.
#[derive(Debug)]
pub(crate) struct ScatterBuffers {
    pub(crate) indices: wgpu::Buffer,
    pub(crate) records: wgpu::Buffer,
    pub(crate) group: wgpu::BindGroup,
}

impl Renderer {
    /// Creates the GPU state of `crowd` (its uniform buffer and group 0; the other buffers come with
    /// its first frame). Use the result only with `crowd` and this renderer.
    ///
    /// # Errors
    /// [`RenderError::OutOfDeviceMemory`] if the device cannot allocate the uniform buffer,
    /// [`RenderError::Device`] if it or a bind group cannot be created otherwise.
    pub fn create_crowd(&mut self, crowd: &Crowd) -> Result<GpuCrowd, RenderError> {
        let scope = AllocScope::push(&self.device);
        let bytes = size_of::<FrameUniforms>() as u64;
        let frame_buffer = empty_buffer(
            &self.device,
            "vat crowd frame",
            bytes,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let frame_groups = self.frame_groups_for(&frame_buffer, None);
        let frame_groups = scope.finish("crowd uniforms", bytes, frame_groups)?;
        Ok(GpuCrowd {
            sync: CrowdSync::new(crowd.id()),
            frame_buffer,
            frame_groups,
            host_frame_groups: HostMapCache::default(),
            views: Vec::new(),
            buffers: None,
            counts: CountsReadback::default(),
        })
    }

    /// Gives `gpu` at least `views` extra-view uniform buffers and their depth and compute groups.
    pub(crate) fn grow_views(&self, gpu: &mut GpuCrowd, views: usize) -> Result<(), RenderError> {
        while gpu.views.len() < views {
            let buffer = empty_buffer(
                &self.device,
                "vat crowd view",
                size_of::<FrameUniforms>() as u64,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            );
            let mut groups = self.frame_groups_for(&buffer, None)?;
            let compute = groups.swap_remove(StageSet::Compute as usize);
            let depth = groups.swap_remove(StageSet::Depth as usize);
            gpu.views.push(ViewUniforms { buffer, depth, compute });
        }
        Ok(())
    }

    /// Group 2 of `set` over the crowd's `records`, `cull_params` and `user_data`, `instance_list`,
    /// and the `visible` lists and `draw_args` the culling writes.
    #[allow(clippy::too_many_arguments)]
    fn crowd_group(
        &self,
        set: StageSet,
        records: &wgpu::Buffer,
        cull_params: &wgpu::Buffer,
        user_data: &wgpu::Buffer,
        instance_list: &wgpu::Buffer,
        visible: &wgpu::Buffer,
        draw_args: &wgpu::Buffer,
    ) -> Result<wgpu::BindGroup, RenderError> {
        let layout = &self.group_layouts[set as usize][2];
        bind_group(&self.device, layout, gpu::GROUP_CROWD, set, "vat crowd", |name| {
            Some(match name {
                "instances" => records.as_entire_binding(),
                "instance_list" => instance_list.as_entire_binding(),
                "decode_params" => self.dummy_decode_params.as_entire_binding(),
                "decoded" => self.dummy_decoded.as_entire_binding(),
                "cull_params" => cull_params.as_entire_binding(),
                "visible" => visible.as_entire_binding(),
                "draw_args" => draw_args.as_entire_binding(),
                "instance_user_data" => user_data.as_entire_binding(),
                _ => return None,
            })
        })
    }

    /// Gives `buffers` visible lists and draw arguments of their own for extra views `0..views`
    /// (`CrowdPlan::grow_view_lists`), the lists of the crowd's `capacity`.
    pub(crate) fn grow_view_lists(
        &self,
        buffers: &mut CrowdBuffers,
        capacity: CrowdCapacity,
        views: u32,
    ) -> Result<(), RenderError> {
        let d = &self.device;
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let bytes = capacity.visible_bytes();
        while buffers.views.len() < views as usize {
            let visible = empty_buffer(d, "vat view visible lists", bytes, storage);
            let draw_args = empty_buffer(
                d,
                "vat view draw args",
                gpu::DRAW_ARGS_BYTES,
                storage | wgpu::BufferUsages::INDIRECT,
            );
            let b = &*buffers;
            let compute = self.crowd_group(
                StageSet::Compute,
                &b.records,
                &b.cull_params,
                &b.user_data,
                &b.list,
                &visible,
                &draw_args,
            )?;
            let depth = self.crowd_group(
                StageSet::Depth,
                &b.records,
                &b.cull_params,
                &b.user_data,
                &visible,
                &visible,
                &draw_args,
            )?;
            buffers.views.push(ViewLists { _visible: visible, draw_args, compute, depth });
        }
        Ok(())
    }

    /// Replaces `gpu`'s buffers with ones of `capacity` (the plan then uploads everything). Call it
    /// inside an [`AllocScope`] (`upload_crowd`'s): a failed creation is caught there.
    pub(crate) fn grow_crowd(&self, gpu: &mut GpuCrowd, capacity: CrowdCapacity) -> Result<(), RenderError> {
        let d = &self.device;
        let copy = wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let storage = wgpu::BufferUsages::STORAGE | copy;
        let records = empty_buffer(d, "vat records", capacity.record_bytes(), storage);
        let list = empty_buffer(d, "vat instance list", capacity.list_bytes(), storage);
        let visible = empty_buffer(d, "vat visible lists", capacity.visible_bytes(), storage);
        let draw_args =
            empty_buffer(d, "vat draw args", gpu::DRAW_ARGS_BYTES, storage | wgpu::BufferUsages::INDIRECT);
        let args_template = empty_buffer(d, "vat draw args template", gpu::DRAW_ARGS_BYTES, copy);
        let cull_params = empty_buffer(
            d,
            "vat cull params",
            size_of::<CullParams>() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let user_data =
            empty_buffer(d, "vat instance user data", capacity.user_data_bytes().max(16), storage);
        let group = |set: StageSet, instance_list: &wgpu::Buffer| {
            self.crowd_group(set, &records, &cull_params, &user_data, instance_list, &visible, &draw_args)
        };
        gpu.buffers = Some(CrowdBuffers {
            colour_cpu: group(StageSet::Colour, &list)?,
            depth_cpu: group(StageSet::Depth, &list)?,
            colour_gpu: group(StageSet::Colour, &visible)?,
            depth_gpu: group(StageSet::Depth, &visible)?,
            compute: group(StageSet::Compute, &list)?,
            records,
            list,
            visible,
            draw_args,
            args_template,
            cull_params,
            user_data,
            scatter: None,
            views: Vec::new(),
        });
        Ok(())
    }

    /// Replaces `buffers`' scatter buffers with ones of `capacity` records.
    pub(crate) fn grow_scatter(&self, buffers: &mut CrowdBuffers, capacity: u32) -> Result<(), RenderError> {
        let d = &self.device;
        let (index_bytes, record_bytes) = scatter_buffer_bytes(capacity);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let indices = empty_buffer(d, "vat scatter indices", index_bytes, usage);
        let records = empty_buffer(d, "vat scatter records", record_bytes, usage);
        let group = bind_group(
            d,
            &self.scatter_layout,
            gpu::GROUP_SCATTER,
            StageSet::Compute,
            "vat scatter",
            |name| match name {
                "scatter_indices" => Some(indices.as_entire_binding()),
                "scatter_records" => Some(records.as_entire_binding()),
                "scatter_target" => Some(buffers.records.as_entire_binding()),
                _ => None,
            },
        )?;
        buffers.scatter = Some(ScatterBuffers { indices, records, group });
        Ok(())
    }
}
