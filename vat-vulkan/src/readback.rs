//! Decode on the GPU and read-backs of a crowd's GPU copy, for verification, tests and debugging;
//! the Vulkan twin of vat-wgpu's `readback.rs`.

use ash::vk;
use vat_core::backend::frame::workgroups;
use vat_core::backend::gpu::{self, DecodeParams, DecodedVertex, FrameUniforms};
use vat_core::backend::{DecodeJob, decode_buffer, plan_decode};
use vat_core::instance::InstanceRecord;
use vat_core::render::RenderMode;

use crate::crowd::GpuCrowd;
use crate::owned::{HostBuffer, Owned};
use crate::pipelines::ComputeKey;
use crate::renderer::{Resource, StageSet, descriptor_set, memory_barrier, storage_limit};
use crate::{Error, GpuAsset, Renderer};

impl Renderer {
    /// Decodes every vertex of `records` at epoch-relative `time` with `cs_decode` /
    /// `cs_decode_bone` / `cs_decode_rigid` (chosen by the asset's `AssetDrawInfo::decode_entry_point`;
    /// the same code as the vertex paths) and reads the result back: vertex `v` of
    /// record `i` at `i * vertex_count + v`. For verification and tests; submits its own command
    /// buffer to the context's queue and waits for it. `cross_fade: false` selects the plain variant
    /// (clip B ignored). Uses its own buffers, so it does not disturb a frame recorded but not yet
    /// submitted. vat-wgpu's `Renderer::decode`.
    ///
    /// # Errors
    /// [`Error::AssetHasNoBones`] for bone mode without bones, [`ResourceError::BufferTooLarge`](vat_core::backend::gpu::ResourceError::BufferTooLarge),
    /// [`DeviceError::Vk`](crate::DeviceError::Vk), [`DeviceError::NoMemoryType`](crate::DeviceError::NoMemoryType), [`DeviceError::Shader`](crate::DeviceError::Shader).
    pub fn decode(
        &mut self,
        asset: &GpuAsset,
        records: &[InstanceRecord],
        time: f32,
        mode: RenderMode,
        cross_fade: bool,
    ) -> Result<Vec<DecodedVertex>, Error> {
        let limit = storage_limit(&self.ctx);
        let Some(DecodeJob { entry, variant, count, out_bytes }) =
            plan_decode(&asset.info, records.len(), mode, cross_fade, limit)?
        else {
            return Ok(Vec::new());
        };
        let pipeline = self.compute_pipeline(ComputeKey { entry, variant })?;
        let mut scope = Owned::new(&self.ctx);
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let frame = FrameUniforms { time, ..bytemuck::Zeroable::zeroed() };
        let frame_buf = scope.buffer_init(bytemuck::bytes_of(&frame), 0, uniform, "frame uniforms")?;
        let record_buf = scope.buffer_init(bytemuck::cast_slice(records), 64, storage, "instance records")?;
        let params = DecodeParams { first_instance: 0, instance_count: records.len() as u32, _pad: [0; 2] };
        let params_buf = scope.buffer_init(bytemuck::bytes_of(&params), 0, uniform, "decode params")?;
        let out = scope.buffer(out_bytes, storage, "decoded vertices")?;
        let compute = StageSet::Compute as usize;
        let frame_set = descriptor_set(
            &mut scope,
            self.set_layouts[compute][gpu::GROUP_FRAME as usize],
            gpu::GROUP_FRAME,
            StageSet::Compute,
            |n| (n == "frame").then_some(Resource::Buffer(frame_buf.buffer)),
        )?;
        let (cull, visible, draw_args) =
            (self.dummy_cull_params.buffer, self.dummy_visible.buffer, self.dummy_draw_args.buffer);
        let crowd_set = descriptor_set(
            &mut scope,
            self.set_layouts[compute][gpu::GROUP_CROWD as usize],
            gpu::GROUP_CROWD,
            StageSet::Compute,
            |n| {
                let buffers = [record_buf.buffer, params_buf.buffer, out.buffer, visible, cull, draw_args];
                decode_buffer(n).map(|i| Resource::Buffer(buffers[i]))
            },
        )?;
        let sets = [frame_set, asset.groups[compute], crowd_set];
        let layout = self.pipeline_layouts[compute];
        let [x, y] = workgroups(count, gpu::DECODE_WORKGROUP_SIZE);
        scope.submit_and_wait(|device, cb| {
            // SAFETY: recording into `cb`; pipeline, layout and sets are live and compatible.
            unsafe {
                device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
                device.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, &sets, &[]);
                device.cmd_dispatch(cb, x, y, 1);
                memory_barrier(
                    device,
                    cb,
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            }
        })?;
        let bytes = scope.read(&out, out_bytes as usize)?;
        Ok(bytes.chunks_exact(size_of::<DecodedVertex>()).map(bytemuck::pod_read_unaligned).collect())
    }

    /// The per-LOD visible lists (record indices, in the GPU's append order) written by the last
    /// GPU-culled frame of `crowd`; empty before any. Submit that frame to the context's queue first: this
    /// submits a barrier (device writes -> host reads) to the same queue, waits for it, then reads.
    /// For tests and debugging: compare with the CPU path after sorting.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) if the submission or the wait fails.
    pub fn read_gpu_visible(&self, crowd: &GpuCrowd) -> Result<Vec<Vec<u32>>, Error> {
        let Some(c) = &crowd.buffers else { return Ok(Vec::new()) };
        let lods = crowd.sync.gpu_lods() as usize;
        if lods == 0 {
            return Ok(Vec::new());
        }
        let mut scope = Owned::new(&self.ctx);
        scope.submit_and_wait(|device, cb| {
            // SAFETY: recording into `cb`.
            unsafe {
                memory_barrier(
                    device,
                    cb,
                    (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            }
        })?;
        let words = |b: &HostBuffer| -> Result<Vec<u32>, Error> {
            let bytes = c.keep.read(b, b.size as usize)?;
            Ok(bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
        };
        let args = words(&c.draw_args)?;
        let visible = words(&c.visible)?;
        Ok(vat_core::backend::frame::visible_lists(&args, &visible, lods, crowd.sync.record_capacity()))
    }

    /// `crowd`'s GPU copy of its records (the first `record_count` of the record buffer, as of its
    /// last submitted frame); empty before any frame. Submit that frame first: this submits a barrier
    /// (device writes -> host reads) to the context's queue, waits for it, then reads. For tests and
    /// debugging: after a frame it equals `Crowd::records`.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) if the submission or the wait fails.
    pub fn read_gpu_records(&self, crowd: &GpuCrowd) -> Result<Vec<InstanceRecord>, Error> {
        let Some(c) = &crowd.buffers else { return Ok(Vec::new()) };
        let size = crowd.sync.record_count() as usize * size_of::<InstanceRecord>();
        if size == 0 {
            return Ok(Vec::new());
        }
        let mut scope = Owned::new(&self.ctx);
        scope.submit_and_wait(|device, cb| {
            // SAFETY: recording into `cb`.
            unsafe {
                memory_barrier(
                    device,
                    cb,
                    (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
                    (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
                );
            }
        })?;
        let bytes = c.keep.read(&c.records, size)?;
        Ok(bytes.chunks_exact(size_of::<InstanceRecord>()).map(bytemuck::pod_read_unaligned).collect())
    }
}
