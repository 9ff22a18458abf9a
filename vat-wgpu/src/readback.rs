//! Decode on the GPU and read-backs of a crowd's GPU copy, for verification, tests and debugging
//! (the Vulkan twin is vat-vulkan's `readback.rs`).

use vat_core::backend::frame::workgroups;
use vat_core::backend::gpu::{self, DecodeParams, DecodedVertex, FrameUniforms};
use vat_core::backend::{DecodeJob, decode_buffer, plan_decode};
use vat_core::instance::InstanceRecord;

use crate::crowd::GpuCrowd;
use crate::pipelines::ComputeKey;
use crate::renderer::{AllocScope, StageSet, bind_group, buffer_init, empty_buffer, storage_limit};
use crate::target::read_mapped;
use crate::{Error, GpuAsset, RenderMode, Renderer};

impl Renderer {
    /// Decodes every vertex of `records` at epoch-relative `time` on the GPU (the `cs_decode` /
    /// `cs_decode_bone` / `cs_decode_rigid` compute shaders, chosen by the asset's
    /// `AssetDrawInfo::decode_entry_point`; the same code as the vertex paths) and reads the result
    /// back: vertex `v` of record `i` at `i * vertex_count + v`. For verification and tests; waits for
    /// the GPU. `cross_fade: false` selects the plain variant (clip B ignored). Uses its own uniform
    /// buffers, so it does not disturb a frame recorded but not yet submitted.
    ///
    /// # Errors
    /// [`Error::AssetHasNoBones`] for bone mode without bones, [`ResourceError::BufferTooLarge`](vat_core::backend::gpu::ResourceError::BufferTooLarge),
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate the output and read-back
    /// buffers, [`DeviceError::Readback`](crate::DeviceError::Readback).
    pub fn decode(
        &mut self,
        asset: &GpuAsset,
        records: &[InstanceRecord],
        time: f32,
        mode: RenderMode,
        cross_fade: bool,
    ) -> Result<Vec<DecodedVertex>, Error> {
        let limit = storage_limit(&self.device.limits());
        let Some(DecodeJob { entry, variant, count, out_bytes }) =
            plan_decode(&asset.info, records.len(), mode, cross_fade, limit)?
        else {
            return Ok(Vec::new());
        };
        let pipeline = self.compute_pipeline(ComputeKey { entry, variant });
        let d = &self.device;
        // The buffers, their bind groups and the copy into the staging buffer, in one scope.
        let scope = AllocScope::push(d);
        let requested = 2 * out_bytes + size_of_val(records) as u64;
        let created = (|| -> Result<_, Error> {
            let uniform = wgpu::BufferUsages::UNIFORM;
            let frame = FrameUniforms { time, ..bytemuck::Zeroable::zeroed() };
            let frame_buf = buffer_init(d, "vat decode frame", bytemuck::bytes_of(&frame), 0, uniform)?;
            let frame_group = self.frame_groups_for(&frame_buf, None)?;
            let record_buf = buffer_init(
                d,
                "vat decode records",
                bytemuck::cast_slice(records),
                64,
                wgpu::BufferUsages::STORAGE,
            )?;
            let params =
                DecodeParams { first_instance: 0, instance_count: records.len() as u32, _pad: [0; 2] };
            let params_buf = buffer_init(d, "vat decode params", bytemuck::bytes_of(&params), 0, uniform)?;
            let out = empty_buffer(
                d,
                "vat decoded",
                out_bytes,
                wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            );
            let group = bind_group(
                d,
                &self.group_layouts[StageSet::Compute as usize][2],
                gpu::GROUP_CROWD,
                StageSet::Compute,
                "vat decode",
                |name| {
                    let buffers = [
                        &record_buf,
                        &params_buf,
                        &out,
                        &self.dummy_visible,
                        &self.dummy_cull_params,
                        &self.dummy_draw_args,
                    ];
                    decode_buffer(name).map(|i| buffers[i].as_entire_binding())
                },
            )?;
            let staging = empty_buffer(
                d,
                "vat decoded readback",
                out_bytes,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            );
            let mut encoder =
                d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vat decode") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("vat decode"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &frame_group[StageSet::Compute as usize], &[]);
                pass.set_bind_group(1, &asset.groups[StageSet::Compute as usize], &[]);
                pass.set_bind_group(2, &group, &[]);
                let [x, y] = workgroups(count, gpu::DECODE_WORKGROUP_SIZE);
                pass.dispatch_workgroups(x, y, 1);
            }
            encoder.copy_buffer_to_buffer(&out, 0, &staging, 0, out_bytes);
            Ok((encoder.finish(), staging))
        })();
        let (commands, staging) = scope.finish("decoded vertex buffers", requested, created)?;
        self.queue.submit([commands]);
        let bytes = read_mapped(d, &staging)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes[..out_bytes as usize]))
    }

    /// The first `size` bytes of `buffer` (which has `COPY_SRC`), copied to a mappable buffer and read
    /// after waiting for the GPU.
    fn read_back(&self, buffer: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, Error> {
        let d = &self.device;
        let scope = AllocScope::push(d);
        let staging = empty_buffer(
            d,
            "vat readback",
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut encoder =
            d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vat readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        let commands = scope.finish("read-back buffer", size, Ok(encoder.finish()))?;
        self.queue.submit([commands]);
        read_mapped(d, &staging)
    }

    /// `crowd`'s GPU copy of its records (the first `record_count` of the record buffer, as of its
    /// last submitted frame), read back after waiting for the GPU; empty before any frame. For tests
    /// and debugging: after a frame it equals `Crowd::records`.
    ///
    /// # Errors
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) for the read-back buffer, [`DeviceError::Readback`](crate::DeviceError::Readback).
    pub fn read_gpu_records(&self, crowd: &GpuCrowd) -> Result<Vec<InstanceRecord>, Error> {
        let Some(b) = &crowd.buffers else { return Ok(Vec::new()) };
        let size = u64::from(crowd.sync.record_count()) * size_of::<InstanceRecord>() as u64;
        if size == 0 {
            return Ok(Vec::new());
        }
        Ok(bytemuck::pod_collect_to_vec(&self.read_back(&b.records, size)?))
    }

    /// The per-LOD visible lists (record indices, in the GPU's append order) written by `crowd`'s
    /// last GPU-culled frame, read back after waiting for the GPU (submit that frame first); empty
    /// before any. For tests and debugging: compare with the CPU path after sorting.
    ///
    /// # Errors
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) for the read-back buffers, [`DeviceError::Readback`](crate::DeviceError::Readback).
    pub fn read_gpu_visible(&self, crowd: &GpuCrowd) -> Result<Vec<Vec<u32>>, Error> {
        let Some(b) = &crowd.buffers else { return Ok(Vec::new()) };
        let lods = crowd.sync.gpu_lods() as usize;
        if lods == 0 {
            return Ok(Vec::new());
        }
        let read = |buffer: &wgpu::Buffer| -> Result<Vec<u32>, Error> {
            Ok(bytemuck::pod_collect_to_vec(&self.read_back(buffer, buffer.size())?))
        };
        let args = read(&b.draw_args)?;
        let visible = read(&b.visible)?;
        Ok(vat_core::backend::frame::visible_lists(&args, &visible, lods, crowd.sync.record_capacity()))
    }
}
