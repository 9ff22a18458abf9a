//! Per-crowd GPU state: [`GpuCrowd`] and [`Renderer::create_crowd`]; the Vulkan twin of vat-wgpu's
//! `crowd.rs`.

use ash::vk;
use vat_core::backend::frame::gpu_counts::RING_DEPTH;
use vat_core::backend::frame::{CrowdCapacity, InstanceSource, scatter_buffer_bytes};
use vat_core::backend::gpu::{self, FrameUniforms};
use vat_core::backend::{CrowdBuffer, CrowdGroups, Handles, ScatterBuffers, ViewLists, ViewUniforms};
use vat_core::crowd::Crowd;

use crate::owned::{HostBuffer, Object, Owned};
use crate::renderer::{HostFrameSets, Resource, StageSet, descriptor_set};
use crate::{DeviceError, Error, Renderer};

/// vat-vulkan's handle types in vat-core's generic GPU state ([`vat_core::backend::Handles`]).
#[derive(Debug)]
pub struct VkHandles;

impl Handles for VkHandles {
    type Buffer = HostBuffer;
    type Group = vk::DescriptorSet;
    type Index = vk::Buffer;
    type HostMap = vk::ImageView;
    type HostGroups = HostFrameSets;
    type Slot = CountsSlot;
    type Keep = Owned;

    fn release(keep: &mut Owned) {
        // SAFETY: plain wait on a live device; submitted frames may still use the crowd's buffers,
        // which its fields destroy next.
        let _ = unsafe { keep.ctx.device.device_wait_idle() };
    }
}

/// One crowd's GPU copy on Vulkan (`vat_core::backend::GpuCrowd`): made by
/// [`Renderer::create_crowd`] for one [`Crowd`]; using it with another crowd panics. Dropping it
/// waits for the device to be idle, then destroys it.
pub type GpuCrowd = vat_core::backend::GpuCrowd<VkHandles>;
type CountsReadback = vat_core::backend::CountsReadback<VkHandles>;
type CrowdBuffers = vat_core::backend::CrowdBuffers<VkHandles>;

/// One slot of the counts ring: a host-visible, coherent copy of `draw_args` and the event the
/// frame's command buffer sets after the copy (and a barrier making it visible to host reads).
pub struct CountsSlot {
    pub(crate) buffer: HostBuffer,
    pub(crate) event: vk::Event,
}

// The GPU culling's counts read back without waiting (`vat_core::backend::frame::gpu_counts`): the ring's
// [`RING_DEPTH`] slots are made with the crowd's first GPU-culled frame. A frame's copy is recorded
// after the culling dispatch, followed by a transfer -> host barrier and `vkCmdSetEvent`;
// `vkGetEventStatus` tells, without blocking, whether it has executed. This needs no fence of the
// host's: the renderer records into command buffers it does not submit.

/// Creates the slots of `counts` if there are none yet.
pub(crate) fn ensure_slots(
    counts: &mut CountsReadback,
    ctx: &std::rc::Rc<crate::Context>,
) -> Result<(), Error> {
    if counts.keep.is_some() {
        return Ok(());
    }
    let mut owned = Owned::new(ctx);
    let mut slots = Vec::with_capacity(RING_DEPTH);
    for _ in 0..RING_DEPTH {
        let buffer =
            owned.buffer(gpu::DRAW_ARGS_BYTES, vk::BufferUsageFlags::TRANSFER_DST, "culling counts")?;
        // SAFETY: valid create info on a live device; the event is destroyed with `owned`.
        let event = unsafe { ctx.device.create_event(&vk::EventCreateInfo::default(), None) }
            .map_err(DeviceError::vk("create event"))?;
        owned.push(Object::Event(event));
        slots.push(CountsSlot { buffer, event });
    }
    counts.slots = slots;
    counts.keep = Some(owned);
    Ok(())
}

/// Takes the results of every slot of `counts` whose event is set, without waiting, and resets the
/// events.
///
/// # Errors
/// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`Error::DeviceLost`] from the event query or the read.
pub(crate) fn collect(counts: &mut CountsReadback) -> Result<(), Error> {
    let Some(owned) = &counts.keep else { return Ok(()) };
    let d = &owned.ctx.device;
    for (slot, _) in counts.ring.in_flight() {
        let Some(s) = counts.slots.get(slot) else { continue };
        // SAFETY: an event of this device, not waited on by any command buffer.
        let set = unsafe { d.get_event_status(s.event) }.map_err(DeviceError::vk("get event status"))?;
        if !set {
            continue;
        }
        // The event was set after the copy and a transfer -> host barrier: the copy is complete
        // and visible in the coherent memory.
        let bytes = owned.read(&s.buffer, gpu::DRAW_ARGS_BYTES as usize)?;
        let words: Vec<u32> =
            bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        // SAFETY: the event's set has executed (observed above) and no command waits on it; the
        // slot is recorded again only after this reset.
        unsafe { d.reset_event(s.event) }.map_err(DeviceError::vk("reset event"))?;
        counts.ring.complete(slot, &words);
    }
    Ok(())
}

/// The buffers of a crowd's set 2 besides its instance list: the records and culling parameters
/// culled, and the visible lists and draw arguments the culling writes.
#[derive(Clone, Copy)]
struct CrowdSetBuffers {
    records: vk::Buffer,
    cull_params: vk::Buffer,
    user_data: vk::Buffer,
    visible: vk::Buffer,
    draw_args: vk::Buffer,
}

/// How a crowd buffer of `kind` is used: written by `vkCmdUpdateBuffer` or copies, the draw
/// arguments also copied from (their counts' read-back), the template only copied from.
fn usage(kind: CrowdBuffer) -> vk::BufferUsageFlags {
    use vk::BufferUsageFlags as U;
    match kind {
        CrowdBuffer::ArgsTemplate => U::TRANSFER_SRC | U::TRANSFER_DST,
        CrowdBuffer::CullParams => U::UNIFORM_BUFFER | U::TRANSFER_DST,
        CrowdBuffer::DrawArgs => U::STORAGE_BUFFER | U::TRANSFER_DST | U::INDIRECT_BUFFER | U::TRANSFER_SRC,
        _ => U::STORAGE_BUFFER | U::TRANSFER_DST,
    }
}

impl Renderer {
    /// Creates the GPU state of `crowd` (its uniform buffer and set 0; the other buffers come with
    /// its first frame). Use the result only with `crowd` and this renderer.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk), [`DeviceError::NoMemoryType`](crate::DeviceError::NoMemoryType).
    pub fn create_crowd(&mut self, crowd: &Crowd) -> Result<GpuCrowd, Error> {
        let mut owned = Owned::new(&self.ctx);
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let frame_buffer =
            owned.buffer(size_of::<FrameUniforms>() as u64, uniform, "crowd frame uniforms")?;
        let frame_sets = self.frame_sets_for(&mut owned, frame_buffer.buffer)?;
        Ok(GpuCrowd::new(crowd.id(), frame_buffer, frame_sets, owned))
    }

    /// Gives `gpu` at least `views` extra-view uniform buffers and their depth and compute sets.
    pub(crate) fn grow_views(&self, gpu: &mut GpuCrowd, views: usize) -> Result<(), Error> {
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        while gpu.views.len() < views {
            let buffer =
                gpu.keep.buffer(size_of::<FrameUniforms>() as u64, uniform, "crowd view uniforms")?;
            let sets = self.frame_sets_for(&mut gpu.keep, buffer.buffer)?;
            let (depth, compute) = (sets[StageSet::Depth as usize], sets[StageSet::Compute as usize]);
            gpu.views.push(ViewUniforms { buffer, depth, compute });
        }
        Ok(())
    }

    /// One extra view's own visible lists and draw arguments for `buffers` (allocated from their
    /// `keep`), the lists of the crowd's `capacity` ([`CrowdBuffers::grow_view_lists`] makes them).
    pub(crate) fn view_lists(
        &self,
        buffers: &mut CrowdBuffers,
        capacity: CrowdCapacity,
    ) -> Result<ViewLists<VkHandles>, Error> {
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let owned = &mut buffers.keep;
        let visible = owned.buffer(capacity.visible_bytes(), storage, "view visible lists")?;
        let draw_args = owned.buffer(
            gpu::DRAW_ARGS_BYTES,
            storage | vk::BufferUsageFlags::INDIRECT_BUFFER,
            "view draw args",
        )?;
        let crowd = CrowdSetBuffers {
            records: buffers.records.buffer,
            cull_params: buffers.cull_params.buffer,
            user_data: buffers.user_data.buffer,
            visible: visible.buffer,
            draw_args: draw_args.buffer,
        };
        let compute = self.crowd_set(owned, StageSet::Compute, crowd, buffers.list.buffer)?;
        let depth = self.crowd_set(owned, StageSet::Depth, crowd, visible.buffer)?;
        Ok(ViewLists { visible, draw_args, compute, depth })
    }

    /// Set 2 of `set` over `crowd`'s buffers and `instance_list`, allocated from `owned`.
    fn crowd_set(
        &self,
        owned: &mut Owned,
        set: StageSet,
        crowd: CrowdSetBuffers,
        instance_list: vk::Buffer,
    ) -> Result<vk::DescriptorSet, Error> {
        let (decode_params, decoded) = (self.dummy_decode_params.buffer, self.dummy_decoded.buffer);
        let layout = self.set_layouts[set as usize][gpu::GROUP_CROWD as usize];
        descriptor_set(owned, layout, gpu::GROUP_CROWD, set, |name| {
            Some(Resource::Buffer(match name {
                "instances" => crowd.records,
                "instance_list" => instance_list,
                "decode_params" => decode_params,
                "decoded" => decoded,
                "cull_params" => crowd.cull_params,
                "visible" => crowd.visible,
                "draw_args" => crowd.draw_args,
                "instance_user_data" => crowd.user_data,
                _ => return None,
            }))
        })
    }

    /// Replaces `gpu`'s buffers with ones of `capacity` (the plan then uploads everything); waits for
    /// the device to be idle first when there are old ones (frames in flight may read them).
    pub(crate) fn grow_crowd(&self, gpu: &mut GpuCrowd, capacity: CrowdCapacity) -> Result<(), Error> {
        if gpu.buffers.is_some() {
            // SAFETY: plain wait on a live device, before the old buffers are destroyed.
            unsafe { self.ctx.device.device_wait_idle() }.map_err(DeviceError::vk("wait for device idle"))?;
            gpu.buffers = None;
        }
        let mut owned = Owned::new(&self.ctx);
        let mut buffers = Vec::with_capacity(CrowdBuffer::ALL.len());
        for kind in CrowdBuffer::ALL {
            buffers.push(owned.buffer(kind.bytes(capacity), usage(kind), kind.label())?);
        }
        let buffers: [HostBuffer; 7] = buffers.try_into().expect("one buffer per kind");
        let [records, list, visible, draw_args, _, cull_params, user_data] = buffers.map(|b| b.buffer);
        let crowd = CrowdSetBuffers { records, cull_params, user_data, visible, draw_args };
        let groups = CrowdGroups::try_new(|set, instances| {
            let instance_list = if instances == InstanceSource::VisibleLists { visible } else { list };
            self.crowd_set(&mut owned, set, crowd, instance_list)
        })?;
        gpu.buffers = Some(CrowdBuffers::new(buffers, groups, owned));
        Ok(())
    }

    /// Replaces `buffers`' scatter buffers with ones of `capacity` records (waiting for the device
    /// to be idle first when there are old ones).
    pub(crate) fn grow_scatter(&self, buffers: &mut CrowdBuffers, capacity: u32) -> Result<(), Error> {
        if buffers.scatter.is_some() {
            // SAFETY: plain wait on a live device, before the old buffers are destroyed.
            unsafe { self.ctx.device.device_wait_idle() }.map_err(DeviceError::vk("wait for device idle"))?;
            buffers.scatter = None;
        }
        let mut owned = Owned::new(&self.ctx);
        let (index_bytes, record_bytes) = scatter_buffer_bytes(capacity);
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let indices = owned.buffer(index_bytes, usage, "scatter indices")?;
        let records = owned.buffer(record_bytes, usage, "scatter records")?;
        let target = buffers.records.buffer;
        let set = descriptor_set(
            &mut owned,
            self.scatter_set_layout,
            gpu::GROUP_SCATTER,
            StageSet::Compute,
            |n| {
                Some(Resource::Buffer(match n {
                    "scatter_indices" => indices.buffer,
                    "scatter_records" => records.buffer,
                    "scatter_target" => target,
                    _ => return None,
                }))
            },
        )?;
        buffers.scatter = Some(ScatterBuffers { indices, records, group: set, keep: owned });
        Ok(())
    }
}
