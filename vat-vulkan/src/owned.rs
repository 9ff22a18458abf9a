//! A scope of Vulkan objects destroyed together, in reverse order of creation, when it is dropped:
//! whatever a failed step created is released on the way out, and long-lived objects (an uploaded
//! asset, the decoder's pipelines) are destroyed with their owner.

use std::rc::Rc;

use ash::vk;

use crate::{Context, DeviceError, Error};

/// One object of a scope.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Object {
    Buffer(vk::Buffer),
    Memory(vk::DeviceMemory),
    Image(vk::Image),
    ImageView(vk::ImageView),
    SetLayout(vk::DescriptorSetLayout),
    PipelineLayout(vk::PipelineLayout),
    Pipeline(vk::Pipeline),
    ShaderModule(vk::ShaderModule),
    DescriptorPool(vk::DescriptorPool),
    Sampler(vk::Sampler),
    Fence(vk::Fence),
    Event(vk::Event),
    CommandBuffer(vk::CommandBuffer),
}

/// Objects created on `ctx`'s device, destroyed on drop. Holds the context, so the device outlives
/// every object of the scope.
pub struct Owned {
    pub(crate) ctx: Rc<Context>,
    objects: Vec<Object>,
}

/// A buffer with its own memory, host-visible and coherent.
#[derive(Debug, Clone, Copy)]
pub struct HostBuffer {
    pub(crate) buffer: vk::Buffer,
    pub(crate) memory: vk::DeviceMemory,
    pub(crate) size: u64,
}

impl Owned {
    pub(crate) fn new(ctx: &Rc<Context>) -> Self {
        Self { ctx: Rc::clone(ctx), objects: Vec::new() }
    }

    pub(crate) fn push(&mut self, object: Object) {
        self.objects.push(object);
    }

    fn device(&self) -> &ash::Device {
        &self.ctx.device
    }

    /// Allocates memory for `requirements` with `flags` and records it.
    fn allocate(
        &mut self,
        requirements: vk::MemoryRequirements,
        flags: vk::MemoryPropertyFlags,
        what: &'static str,
    ) -> Result<vk::DeviceMemory, Error> {
        let type_index = self
            .ctx
            .memory_type(requirements.memory_type_bits, flags)
            .ok_or(DeviceError::NoMemoryType(what))?;
        self.allocate_type(requirements, type_index)
    }

    /// Allocates memory of type `type_index` for `requirements` and records it.
    fn allocate_type(
        &mut self,
        requirements: vk::MemoryRequirements,
        type_index: u32,
    ) -> Result<vk::DeviceMemory, Error> {
        self.ctx.count_allocation()?;
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(type_index);
        // SAFETY: valid allocate info on a live device.
        let memory = unsafe { self.device().allocate_memory(&info, None) }
            .map_err(DeviceError::vk("allocate memory"))?;
        self.push(Object::Memory(memory));
        Ok(memory)
    }

    /// A host-visible, coherent buffer of at least `size` bytes (at least 4, a multiple of 4), in
    /// the memory [`crate::device::host_buffer_memory_type`] picks: video memory the CPU can write
    /// when the device exposes all of it (resizable BAR), else host memory; a buffer only
    /// transferred into (`TRANSFER_DST` alone: a read-back) in cached host memory. When video
    /// memory is full the buffer goes to host memory instead (counted by
    /// [`Context::buffers_in_host_memory_for_want_of_video_memory`](crate::Context::buffers_in_host_memory_for_want_of_video_memory)).
    pub(crate) fn buffer(
        &mut self,
        size: u64,
        usage: vk::BufferUsageFlags,
        what: &'static str,
    ) -> Result<HostBuffer, Error> {
        let size = size.max(4).next_multiple_of(4);
        let info =
            vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info on a live device.
        let buffer =
            unsafe { self.device().create_buffer(&info, None) }.map_err(DeviceError::vk("create buffer"))?;
        self.push(Object::Buffer(buffer));
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { self.device().get_buffer_memory_requirements(buffer) };
        let read_back = usage == vk::BufferUsageFlags::TRANSFER_DST;
        let candidates = self.ctx.host_buffer_memory_types(requirements.memory_type_bits, read_back);
        if candidates.is_empty() {
            return Err(DeviceError::NoMemoryType(what).into());
        }
        let ctx = Rc::clone(&self.ctx);
        let memory = crate::device::allocate_with_fallback(
            &candidates,
            |type_index| self.allocate_type(requirements, type_index),
            || ctx.count_vram_fallback(),
        )?;
        // SAFETY: fresh buffer and memory of the right size and type, bound once at offset 0.
        unsafe { self.device().bind_buffer_memory(buffer, memory, 0) }
            .map_err(DeviceError::vk("bind buffer"))?;
        Ok(HostBuffer { buffer, memory, size })
    }

    /// A host-visible buffer holding `bytes`, zero-padded to at least `min_size` bytes.
    pub(crate) fn buffer_init(
        &mut self,
        bytes: &[u8],
        min_size: u64,
        usage: vk::BufferUsageFlags,
        what: &'static str,
    ) -> Result<HostBuffer, Error> {
        let b = self.buffer((bytes.len() as u64).max(min_size), usage, what)?;
        let mut data = bytes.to_vec();
        data.resize(b.size as usize, 0);
        self.write(&b, &data)?;
        Ok(b)
    }

    /// Copies `bytes` (at most the buffer's size) to the start of a host-visible buffer.
    pub(crate) fn write(&self, b: &HostBuffer, bytes: &[u8]) -> Result<(), Error> {
        let len = bytes.len().min(b.size as usize);
        // SAFETY: the memory is host-visible, not mapped elsewhere, and `size` is within it.
        let ptr = unsafe { self.device().map_memory(b.memory, 0, b.size, vk::MemoryMapFlags::empty()) }
            .map_err(DeviceError::vk("map memory"))?;
        // SAFETY: `ptr` points at `b.size >= len` mapped bytes that nothing else accesses.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.cast::<u8>(), len) };
        // SAFETY: mapped just above.
        unsafe { self.device().unmap_memory(b.memory) };
        Ok(())
    }

    /// The first `len` bytes of a host-visible buffer (the GPU must be done writing it).
    pub(crate) fn read(&self, b: &HostBuffer, len: usize) -> Result<Vec<u8>, Error> {
        let len = len.min(b.size as usize);
        // SAFETY: as in `write`.
        let ptr = unsafe { self.device().map_memory(b.memory, 0, b.size, vk::MemoryMapFlags::empty()) }
            .map_err(DeviceError::vk("map memory"))?;
        let mut out = vec![0u8; len];
        // SAFETY: `ptr` points at `b.size >= len` mapped, coherent bytes.
        unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr(), len) };
        // SAFETY: mapped just above.
        unsafe { self.device().unmap_memory(b.memory) };
        Ok(out)
    }

    /// A device-local 2D sampled image of one mip level that transfers can fill, and a view of it.
    pub(crate) fn image(
        &mut self,
        width: u32,
        height: u32,
        format: vk::Format,
        what: &'static str,
    ) -> Result<(vk::Image, vk::ImageView), Error> {
        let usage = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
        self.image_with(width, height, format, usage, vk::ImageAspectFlags::COLOR, what)
    }

    /// A sampleable, transfer-destination 2D array image of `layers` layers and `mip_levels` mip
    /// levels, and a `TYPE_2D_ARRAY` view of all of it.
    pub(crate) fn image_array(
        &mut self,
        width: u32,
        height: u32,
        layers: u32,
        mip_levels: u32,
        format: vk::Format,
        what: &'static str,
    ) -> Result<(vk::Image, vk::ImageView), Error> {
        let usage = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
        let range =
            vk::ImageSubresourceRange { level_count: mip_levels, layer_count: layers, ..color_range() };
        self.create_image(width, height, format, usage, range, vk::ImageViewType::TYPE_2D_ARRAY, what)
    }

    /// A device-local 2D image of one mip level with `usage`, and a view of its `aspect`.
    pub(crate) fn image_with(
        &mut self,
        width: u32,
        height: u32,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
        what: &'static str,
    ) -> Result<(vk::Image, vk::ImageView), Error> {
        let range = vk::ImageSubresourceRange { aspect_mask: aspect, ..color_range() };
        self.create_image(width, height, format, usage, range, vk::ImageViewType::TYPE_2D, what)
    }

    /// [`image_with`](Self::image_with), its view an array of the one layer (`TYPE_2D_ARRAY`), as a
    /// binding declared `texture_depth_2d_array` needs; the same view serves as an attachment.
    pub(crate) fn layer_array_image_with(
        &mut self,
        width: u32,
        height: u32,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
        what: &'static str,
    ) -> Result<(vk::Image, vk::ImageView), Error> {
        let range = vk::ImageSubresourceRange { aspect_mask: aspect, ..color_range() };
        self.create_image(width, height, format, usage, range, vk::ImageViewType::TYPE_2D_ARRAY, what)
    }

    /// A device-local 2D image with `range.level_count` mip levels and `range.layer_count` layers,
    /// and a `view_type` view of `range`.
    #[allow(clippy::too_many_arguments)]
    fn create_image(
        &mut self,
        width: u32,
        height: u32,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
        range: vk::ImageSubresourceRange,
        view_type: vk::ImageViewType,
        what: &'static str,
    ) -> Result<(vk::Image, vk::ImageView), Error> {
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width, height, depth: 1 })
            .mip_levels(range.level_count)
            .array_layers(range.layer_count)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid create info on a live device.
        let image =
            unsafe { self.device().create_image(&info, None) }.map_err(DeviceError::vk("create image"))?;
        self.push(Object::Image(image));
        // SAFETY: `image` was just created on this device.
        let requirements = unsafe { self.device().get_image_memory_requirements(image) };
        let memory = self.allocate(requirements, vk::MemoryPropertyFlags::DEVICE_LOCAL, what)?;
        // SAFETY: fresh image and memory of the right size and type, bound once at offset 0.
        unsafe { self.device().bind_image_memory(image, memory, 0) }
            .map_err(DeviceError::vk("bind image"))?;
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(view_type)
            .format(format)
            .subresource_range(range);
        // SAFETY: view of a live image with bound memory; the range is within its levels and layers.
        let view = unsafe { self.device().create_image_view(&view_info, None) }
            .map_err(DeviceError::vk("create image view"))?;
        self.push(Object::ImageView(view));
        Ok((image, view))
    }

    /// Records commands with `record` into a new primary command buffer, submits it to the context's
    /// queue and waits for it to finish.
    pub(crate) fn submit_and_wait(
        &mut self,
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
    ) -> Result<(), Error> {
        let ctx = Rc::clone(&self.ctx);
        let device = &ctx.device;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.ctx.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is the context's and lives as long as it; the context is not `Sync`, so no
        // other thread uses the pool meanwhile.
        let cb = unsafe { device.allocate_command_buffers(&info) }
            .map_err(DeviceError::vk("allocate command buffer"))?[0];
        self.push(Object::CommandBuffer(cb));
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a fresh command buffer in the initial state.
        unsafe { device.begin_command_buffer(cb, &begin) }
            .map_err(DeviceError::vk("begin command buffer"))?;
        record(device, cb);
        // SAFETY: recording, begun above.
        unsafe { device.end_command_buffer(cb) }.map_err(DeviceError::vk("end command buffer"))?;
        // SAFETY: valid create info on a live device.
        let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(DeviceError::vk("create fence"))?;
        self.push(Object::Fence(fence));
        let cbs = [cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        // SAFETY: the command buffer is executable and every object it uses lives in this scope or
        // longer; the queue is used by one thread at a time.
        unsafe { device.queue_submit(self.ctx.queue, &submit, fence) }
            .map_err(DeviceError::vk("queue submit"))?;
        // SAFETY: waits on a fence of this device.
        let waited = unsafe { device.wait_for_fences(&[fence], true, u64::MAX) };
        if let Err(e) = waited {
            // The objects the work uses must not be destroyed while it may still run.
            // SAFETY: plain wait on a live device.
            let _ = unsafe { device.device_wait_idle() };
            return Err(DeviceError::from_vk("wait for fence", e));
        }
        Ok(())
    }
}

/// The one colour mip level and layer of a sampled image.
pub(crate) fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        for object in self.objects.drain(..).rev() {
            // SAFETY: each object was created on this device by this scope, is destroyed once, and no
            // submitted work still uses it (submissions are waited for before the scope ends).
            unsafe {
                match object {
                    Object::Buffer(b) => d.destroy_buffer(b, None),
                    Object::Memory(m) => d.free_memory(m, None),
                    Object::Image(i) => d.destroy_image(i, None),
                    Object::ImageView(v) => d.destroy_image_view(v, None),
                    Object::SetLayout(l) => d.destroy_descriptor_set_layout(l, None),
                    Object::PipelineLayout(l) => d.destroy_pipeline_layout(l, None),
                    Object::Pipeline(p) => d.destroy_pipeline(p, None),
                    Object::ShaderModule(s) => d.destroy_shader_module(s, None),
                    Object::DescriptorPool(p) => d.destroy_descriptor_pool(p, None),
                    Object::Sampler(s) => d.destroy_sampler(s, None),
                    Object::Fence(f) => d.destroy_fence(f, None),
                    Object::Event(e) => d.destroy_event(e, None),
                    Object::CommandBuffer(cb) => d.free_command_buffers(self.ctx.command_pool, &[cb]),
                }
            }
        }
    }
}
