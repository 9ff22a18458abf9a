//! Per-crowd GPU state: [`GpuCrowd`] and [`Renderer::create_crowd`] (the Vulkan twin is
//! vat-vulkan's `crowd.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use vat_core::backend::frame::gpu_counts::RING_DEPTH;
use vat_core::backend::frame::{CrowdCapacity, InstanceSource, scatter_buffer_bytes};
use vat_core::backend::gpu::{self, FrameUniforms};
use vat_core::backend::{CrowdBuffer, CrowdGroups, Handles, ScatterBuffers, ViewLists, ViewUniforms};
use vat_core::crowd::Crowd;

use crate::renderer::{AllocScope, StageSet, bind_group, empty_buffer};
use crate::{Error, Renderer};

/// vat-wgpu's handle types in vat-core's generic GPU state ([`vat_core::backend::Handles`]).
#[derive(Debug)]
pub struct WgpuHandles;

impl Handles for WgpuHandles {
    type Buffer = wgpu::Buffer;
    type Group = wgpu::BindGroup;
    type Index = wgpu::Buffer;
    type HostMap = wgpu::TextureView;
    type HostGroups = Vec<wgpu::BindGroup>;
    type Slot = CountsSlot;
    type Keep = ();
}

/// One crowd's GPU copy on wgpu (`vat_core::backend::GpuCrowd`): made by
/// [`Renderer::create_crowd`] for one [`Crowd`]; using it with another crowd panics.
pub type GpuCrowd = vat_core::backend::GpuCrowd<WgpuHandles>;
type CountsReadback = vat_core::backend::CountsReadback<WgpuHandles>;
type CrowdBuffers = vat_core::backend::CrowdBuffers<WgpuHandles>;

/// A slot's map state, set by its `map_buffer_on_submit` callback.
const SLOT_PENDING: u8 = 0;
const SLOT_MAPPED: u8 = 1;
const SLOT_FAILED: u8 = 2;

/// One slot of a crowd's counts ring: a mappable copy of `draw_args` and its map state.
#[derive(Debug)]
pub struct CountsSlot {
    pub(crate) buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
}

// The GPU culling's counts read back without waiting (`vat_core::backend::frame::gpu_counts`): the ring's
// [`RING_DEPTH`] mappable buffers are made with the crowd's first GPU-culled frame. A frame's copy
// is recorded after the culling dispatch and mapped when its encoder is submitted
// (`map_buffer_on_submit`); `device.poll(PollType::Poll)` runs the callbacks without blocking.

/// Creates the slots' buffers of `counts` if there are none yet (all or none).
///
/// # Errors
/// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) or [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) if wgpu cannot create them.
pub(crate) fn ensure_slots(counts: &mut CountsReadback, device: &wgpu::Device) -> Result<(), Error> {
    let missing = RING_DEPTH.saturating_sub(counts.slots.len());
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
    counts.slots.extend(scope.finish("culling counts read-back buffers", bytes, Ok(slots))?);
    Ok(())
}

/// Asks for `counts`' slot of this frame to be mapped once `encoder` is submitted.
pub(crate) fn map_on_submit(counts: &CountsReadback, encoder: &wgpu::CommandEncoder) {
    let Some(slot) = counts.ring.current_slot() else { return };
    let s = &counts.slots[slot];
    s.state.store(SLOT_PENDING, Ordering::Release);
    let state = Arc::clone(&s.state);
    encoder.map_buffer_on_submit(&s.buffer, wgpu::MapMode::Read, .., move |r| {
        state.store(if r.is_ok() { SLOT_MAPPED } else { SLOT_FAILED }, Ordering::Release);
    });
}

/// Takes the results of every slot of `counts` that has arrived, without waiting (the caller polled
/// the device just before).
pub(crate) fn collect(counts: &mut CountsReadback) {
    for (slot, _) in counts.ring.in_flight() {
        let Some(s) = counts.slots.get(slot) else { continue };
        match s.state.load(Ordering::Acquire) {
            SLOT_MAPPED => {
                let words: Vec<u32> = match s.buffer.get_mapped_range(..) {
                    Ok(view) => bytemuck::pod_collect_to_vec(&view),
                    Err(_) => Vec::new(),
                };
                s.buffer.unmap();
                s.state.store(SLOT_PENDING, Ordering::Release);
                if words.is_empty() {
                    counts.ring.release(slot);
                } else {
                    counts.ring.complete(slot, &words);
                }
            }
            SLOT_FAILED => {
                s.state.store(SLOT_PENDING, Ordering::Release);
                counts.ring.release(slot);
            }
            _ => {}
        }
    }
}

/// How a crowd buffer of `kind` is used: every one is copied to and from (uploads, resets,
/// read-backs), the storage ones bound as storage.
fn usage(kind: CrowdBuffer) -> wgpu::BufferUsages {
    use wgpu::BufferUsages as U;
    match kind {
        CrowdBuffer::ArgsTemplate => U::COPY_DST | U::COPY_SRC,
        CrowdBuffer::CullParams => U::UNIFORM | U::COPY_DST,
        CrowdBuffer::DrawArgs => U::STORAGE | U::COPY_DST | U::COPY_SRC | U::INDIRECT,
        _ => U::STORAGE | U::COPY_DST | U::COPY_SRC,
    }
}

impl Renderer {
    /// Creates the GPU state of `crowd` (its uniform buffer and group 0; the other buffers come with
    /// its first frame). Use the result only with `crowd` and this renderer.
    ///
    /// # Errors
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate the uniform buffer,
    /// [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) if it or a bind group cannot be created otherwise.
    pub fn create_crowd(&mut self, crowd: &Crowd) -> Result<GpuCrowd, Error> {
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
        Ok(GpuCrowd::new(crowd.id(), frame_buffer, frame_groups, ()))
    }

    /// Gives `gpu` at least `views` extra-view uniform buffers and their depth and compute groups.
    pub(crate) fn grow_views(&self, gpu: &mut GpuCrowd, views: usize) -> Result<(), Error> {
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
    ) -> Result<wgpu::BindGroup, Error> {
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

    /// One extra view's own visible lists and draw arguments for `buffers`, the lists of the crowd's
    /// `capacity` ([`CrowdBuffers::grow_view_lists`] makes them).
    pub(crate) fn view_lists(
        &self,
        buffers: &CrowdBuffers,
        capacity: CrowdCapacity,
    ) -> Result<ViewLists<WgpuHandles>, Error> {
        let d = &self.device;
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let visible = empty_buffer(d, "vat view visible lists", capacity.visible_bytes(), storage);
        let draw_args = empty_buffer(
            d,
            "vat view draw args",
            gpu::DRAW_ARGS_BYTES,
            storage | wgpu::BufferUsages::INDIRECT,
        );
        let b = buffers;
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
        Ok(ViewLists { visible, draw_args, compute, depth })
    }

    /// Replaces `gpu`'s buffers with ones of `capacity` (the plan then uploads everything). Call it
    /// inside an [`AllocScope`] (`upload_crowd`'s): a failed creation is caught there.
    pub(crate) fn grow_crowd(&self, gpu: &mut GpuCrowd, capacity: CrowdCapacity) -> Result<(), Error> {
        let buffers = CrowdBuffer::ALL.map(|kind| {
            empty_buffer(&self.device, &format!("vat {}", kind.label()), kind.bytes(capacity), usage(kind))
        });
        let [records, list, visible, draw_args, _, cull_params, user_data] = &buffers;
        let groups = CrowdGroups::try_new(|set, instances| {
            let instance_list = if instances == InstanceSource::VisibleLists { visible } else { list };
            self.crowd_group(set, records, cull_params, user_data, instance_list, visible, draw_args)
        })?;
        gpu.buffers = Some(CrowdBuffers::new(buffers, groups, ()));
        Ok(())
    }

    /// Replaces `buffers`' scatter buffers with ones of `capacity` records.
    pub(crate) fn grow_scatter(&self, buffers: &mut CrowdBuffers, capacity: u32) -> Result<(), Error> {
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
        buffers.scatter = Some(ScatterBuffers { indices, records, group, keep: () });
        Ok(())
    }
}
