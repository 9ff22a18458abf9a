//! The host of [`super`] on Vulkan (ash): its pipelines (its WGSL through naga, as an engine with
//! WGSL or HLSL sources would translate them), buffers, shadow map and descriptor sets
//! ([`SceneGpu`]) on a Vulkan device, and its frame recorded into one command buffer around vat's
//! `prepare`, `draw_depth` and `draw`, with the host's own layout transitions ([`VulkanHost`], on
//! a `vat_vulkan::Offscreen`; `vat demo` records the same passes into its swapchain's images).

#![allow(unsafe_code)] // the host side is raw Vulkan, as an engine's would be; each call says why it is sound

use std::rc::Rc;

use anyhow::{Context as _, Result, anyhow};
use ash::vk;
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::pipeline::SHADOW_DEPTH_BIAS;
use vat_core::container::Asset;
use vat_core::crowd::Crowd;
use vat_core::render::{CrowdRenderer, FrameReport};
use vat_vulkan::{
    Context, CrowdDraw, Offscreen, PassFormats, Renderer, RendererConfig, flipped_viewport, full_rect,
};

use super::{
    HostCrowds, HostFrame, HostVertex, MSAA_SAMPLES, SHADOW_MAP_SIZE, SIZE, Scene, VertexRange, host_shader,
};

/// The host's shadow map format.
pub const SHADOW_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

/// The host's GPU side of a [`Scene`] on Vulkan: its vertex and uniform buffers, shadow map,
/// descriptor sets and pipelines (the scene's made for each colour pass's formats on first use),
/// destroyed on drop (after the device is idle). It records the host's two passes; vat's draws go
/// inside them through the callbacks.
pub struct SceneGpu {
    ctx: Rc<Context>,
    memories: Vec<vk::DeviceMemory>,
    buffers: Vec<vk::Buffer>,
    vertices: vk::Buffer,
    uniforms: vk::Buffer,
    /// Every image and view, destroyed on drop.
    images: Vec<vk::Image>,
    views: Vec<vk::ImageView>,
    shadow_image: vk::Image,
    shadow_view: vk::ImageView,
    sampler: vk::Sampler,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pool: vk::DescriptorPool,
    scene_set: vk::DescriptorSet,
    shadow_set: vk::DescriptorSet,
    layouts: Vec<vk::PipelineLayout>,
    scene_pipelines: Vec<(PassFormats, vk::Pipeline)>,
    shadow_pipeline: vk::Pipeline,
}

impl Drop for SceneGpu {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: every object was created on this device and is destroyed once, after the device
        // is idle (no submitted frame uses them).
        unsafe {
            let _ = d.device_wait_idle();
            for &(_, p) in &self.scene_pipelines {
                d.destroy_pipeline(p, None);
            }
            d.destroy_pipeline(self.shadow_pipeline, None);
            for &l in &self.layouts {
                d.destroy_pipeline_layout(l, None);
            }
            d.destroy_descriptor_pool(self.pool, None);
            for &l in &self.set_layouts {
                d.destroy_descriptor_set_layout(l, None);
            }
            d.destroy_sampler(self.sampler, None);
            for &v in &self.views {
                d.destroy_image_view(v, None);
            }
            for &i in &self.images {
                d.destroy_image(i, None);
            }
            for &b in &self.buffers {
                d.destroy_buffer(b, None);
            }
            for &m in &self.memories {
                d.free_memory(m, None);
            }
        }
    }
}

/// The attachments of the host's colour pass: views of images in `COLOR_ATTACHMENT_OPTIMAL`
/// (colour, resolve) and `DEPTH_ATTACHMENT_OPTIMAL` (depth), contents undefined (both are
/// cleared).
#[derive(Debug, Clone, Copy)]
pub struct ColourTarget {
    /// The colour attachment (multisampled when `formats.samples > 1`).
    pub color: vk::ImageView,
    /// Where a multisampled colour resolves to.
    pub resolve: Option<vk::ImageView>,
    /// The depth attachment (shared by the host's draws and vat's).
    pub depth: vk::ImageView,
    /// The area rendered.
    pub area: vk::Rect2D,
    /// Their formats and sample count.
    pub formats: PassFormats,
}

/// A memory type of `ctx` among `bits` with `flags`.
fn memory_type(ctx: &Context, bits: u32, flags: vk::MemoryPropertyFlags) -> Result<u32> {
    let m = &ctx.memory_properties;
    (0..m.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(flags))
        .ok_or_else(|| anyhow!("no memory type with {flags:?}"))
}

/// SPIR-V of `entry` of the host's shader ([`host_shader`]) (no coordinate adjustment: the host flips Y with the
/// viewport, as vat-vulkan does).
fn spirv(entry: &str, stage: naga::ShaderStage) -> Result<Vec<u32>> {
    let source = host_shader();
    let module =
        naga::front::wgsl::parse_str(&source).map_err(|e| anyhow!("{}", e.emit_to_string(&source)))?;
    let info =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .map_err(|e| anyhow!("{}", e.emit_to_string(&source)))?;
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        flags: naga::back::spv::WriterFlags::LABEL_VARYINGS,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions { shader_stage: stage, entry_point: entry.to_owned() };
    Ok(naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))?)
}

impl SceneGpu {
    /// A device-local 2D image of `format` and its view (colour or depth aspect by format),
    /// destroyed by `SceneGpu::drop`.
    fn image(
        &mut self,
        format: vk::Format,
        size: [u32; 2],
        samples: u32,
        usage: vk::ImageUsageFlags,
    ) -> Result<(vk::Image, vk::ImageView)> {
        let d = &self.ctx.device;
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D { width: size[0], height: size[1], depth: 1 })
            .mip_levels(1)
            .array_layers(1)
            .samples(vat_vulkan::conv::map_sample_count(samples))
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage);
        // SAFETY: valid create info; destroyed by `SceneGpu::drop`.
        let image = unsafe { d.create_image(&info, None) }?;
        self.images.push(image);
        // SAFETY: a live image of this device.
        let req = unsafe { d.get_image_memory_requirements(image) };
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(
            memory_type(&self.ctx, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)?,
        );
        // SAFETY: valid allocate info; freed by `SceneGpu::drop`.
        let memory = unsafe { d.allocate_memory(&alloc, None) }?;
        self.memories.push(memory);
        // SAFETY: the image is bound once, to memory of a type it accepts, before any use.
        unsafe { d.bind_image_memory(image, memory, 0) }?;
        let aspect = if usage.contains(vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT) {
            vk::ImageAspectFlags::DEPTH
        } else {
            vk::ImageAspectFlags::COLOR
        };
        // Depth images are sampled as one-layer arrays (vat's lookup takes cascade layers); the same
        // view is the shadow pass's attachment.
        let view_type =
            if aspect == vk::ImageAspectFlags::DEPTH && usage.contains(vk::ImageUsageFlags::SAMPLED) {
                vk::ImageViewType::TYPE_2D_ARRAY
            } else {
                vk::ImageViewType::TYPE_2D
            };
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(view_type)
            .format(format)
            .subresource_range(vk::ImageSubresourceRange { aspect_mask: aspect, ..depth_range() });
        // SAFETY: a view of the live image above; destroyed by `SceneGpu::drop`.
        let view = unsafe { d.create_image_view(&view_info, None) }?;
        self.views.push(view);
        Ok((image, view))
    }

    /// The host's resources for `scene` on `ctx`'s device (its uniforms written from `scene`).
    ///
    /// # Errors
    /// A Vulkan failure, or a host shader that does not translate.
    pub fn new(ctx: &Rc<Context>, scene: &Scene) -> Result<Self> {
        let d = &ctx.device;
        let mut host = SceneGpu {
            ctx: ctx.clone(),
            memories: Vec::new(),
            buffers: Vec::new(),
            vertices: vk::Buffer::null(),
            uniforms: vk::Buffer::null(),
            shadow_image: vk::Image::null(),
            shadow_view: vk::ImageView::null(),
            images: Vec::new(),
            views: Vec::new(),
            sampler: vk::Sampler::null(),
            set_layouts: Vec::new(),
            pool: vk::DescriptorPool::null(),
            scene_set: vk::DescriptorSet::null(),
            shadow_set: vk::DescriptorSet::null(),
            layouts: Vec::new(),
            scene_pipelines: Vec::new(),
            shadow_pipeline: vk::Pipeline::null(),
        };
        // Host-visible buffers, written once here (the uniforms later by `cmd_update_buffer`, in
        // the frame's order).
        let mut buffer = |bytes: &[u8], usage| -> Result<vk::Buffer> {
            let info = vk::BufferCreateInfo::default().size(bytes.len() as u64).usage(usage);
            // SAFETY: valid create info on a live device; destroyed by `SceneGpu::drop`.
            let b = unsafe { d.create_buffer(&info, None) }?;
            host.buffers.push(b);
            // SAFETY: `b` is a live buffer of this device.
            let req = unsafe { d.get_buffer_memory_requirements(b) };
            let flags = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(memory_type(ctx, req.memory_type_bits, flags)?);
            // SAFETY: valid allocate info; freed by `SceneGpu::drop`.
            let memory = unsafe { d.allocate_memory(&alloc, None) }?;
            host.memories.push(memory);
            // SAFETY: the memory is host-visible and coherent, unmapped, at least `bytes.len()` long;
            // `b` is bound to it once, before any use.
            unsafe {
                d.bind_buffer_memory(b, memory, 0)?;
                let ptr = d.map_memory(memory, 0, req.size, vk::MemoryMapFlags::empty())?;
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.cast::<u8>(), bytes.len());
                d.unmap_memory(memory);
            }
            Ok(b)
        };
        // At least one vertex: a ground-only scene may draw nothing, but a buffer is never empty.
        let mut vertices = scene.vertices.clone();
        if vertices.is_empty() {
            vertices.push(HostVertex { position: [0.0; 3], normal: [0.0, 1.0, 0.0], color: [0.0; 3] });
        }
        host.vertices = buffer(bytemuck::cast_slice(&vertices), vk::BufferUsageFlags::VERTEX_BUFFER)?;
        host.uniforms = buffer(
            bytemuck::bytes_of(&scene.uniforms()),
            vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST,
        )?;

        // The shadow map: depth attachment of the shadow pass, sampled by the host's and vat's
        // colour draws.
        let usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::SAMPLED;
        let shadow_size = [SHADOW_MAP_SIZE, SHADOW_MAP_SIZE];
        (host.shadow_image, host.shadow_view) = host.image(SHADOW_FORMAT, shadow_size, 1, usage)?;
        let sampler_info = vk::SamplerCreateInfo::default()
            .mag_filter(vk::Filter::LINEAR)
            .min_filter(vk::Filter::LINEAR)
            .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .compare_enable(true)
            .compare_op(vk::CompareOp::LESS_OR_EQUAL);
        // SAFETY: valid create info; destroyed by `SceneGpu::drop`.
        host.sampler = unsafe { d.create_sampler(&sampler_info, None) }?;

        // Set layouts: the scene's (uniforms, shadow map, sampler) and the shadow pass's (uniforms).
        let binding = |b, ty, stages| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(ty)
                .descriptor_count(1)
                .stage_flags(stages)
        };
        let vf = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
        let scene_bindings = [
            binding(0, vk::DescriptorType::UNIFORM_BUFFER, vf),
            binding(1, vk::DescriptorType::SAMPLED_IMAGE, vk::ShaderStageFlags::FRAGMENT),
            binding(2, vk::DescriptorType::SAMPLER, vk::ShaderStageFlags::FRAGMENT),
        ];
        for bindings in [&scene_bindings[..], &scene_bindings[..1]] {
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
            // SAFETY: valid create info; destroyed by `SceneGpu::drop`.
            host.set_layouts.push(unsafe { d.create_descriptor_set_layout(&info, None) }?);
        }
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: 2 },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLED_IMAGE, descriptor_count: 1 },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLER, descriptor_count: 1 },
        ];
        let pool_info = vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes);
        // SAFETY: valid create info; destroyed by `SceneGpu::drop`.
        host.pool = unsafe { d.create_descriptor_pool(&pool_info, None) }?;
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(host.pool)
            .set_layouts(&host.set_layouts);
        // SAFETY: the pool has room for both sets.
        let sets = unsafe { d.allocate_descriptor_sets(&alloc) }?;
        (host.scene_set, host.shadow_set) = (sets[0], sets[1]);
        let buffer_info =
            [vk::DescriptorBufferInfo { buffer: host.uniforms, offset: 0, range: vk::WHOLE_SIZE }];
        let image_info = [vk::DescriptorImageInfo {
            sampler: vk::Sampler::null(),
            image_view: host.shadow_view,
            image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
        }];
        let sampler_info = [vk::DescriptorImageInfo {
            sampler: host.sampler,
            image_view: vk::ImageView::null(),
            image_layout: vk::ImageLayout::UNDEFINED,
        }];
        let write =
            |set, b, ty| vk::WriteDescriptorSet::default().dst_set(set).dst_binding(b).descriptor_type(ty);
        let writes = [
            write(host.scene_set, 0, vk::DescriptorType::UNIFORM_BUFFER).buffer_info(&buffer_info),
            write(host.scene_set, 1, vk::DescriptorType::SAMPLED_IMAGE).image_info(&image_info),
            write(host.scene_set, 2, vk::DescriptorType::SAMPLER).image_info(&sampler_info),
            write(host.shadow_set, 0, vk::DescriptorType::UNIFORM_BUFFER).buffer_info(&buffer_info),
        ];
        // SAFETY: each write matches its set layout's binding and names live resources.
        unsafe { d.update_descriptor_sets(&writes, &[]) };

        for &set_layout in &host.set_layouts {
            let set_layouts = [set_layout];
            let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
            // SAFETY: valid create info; destroyed by `SceneGpu::drop`.
            host.layouts.push(unsafe { d.create_pipeline_layout(&info, None) }?);
        }
        host.shadow_pipeline = host.pipeline(PassFormats {
            conventions: vat_vulkan::PassConventions::STANDARD,
            color: None,
            motion: None,
            depth: SHADOW_FORMAT,
            samples: 1,
        })?;
        Ok(host)
    }

    /// The host's shadow map, in `SHADER_READ_ONLY_OPTIMAL` outside its shadow pass (give it to vat
    /// with `Renderer::set_host_shadow_map`).
    pub fn shadow_view(&self) -> vk::ImageView {
        self.shadow_view
    }

    /// The scene pipeline (`formats.color` given) or the shadow pipeline (depth only, vat's shadow
    /// bias).
    fn pipeline(&self, formats: PassFormats) -> Result<vk::Pipeline> {
        let d = &self.ctx.device;
        let shadow = formats.color.is_none();
        let mut modules = Vec::new();
        let mut stages = Vec::new();
        let entries: &[(&std::ffi::CStr, naga::ShaderStage, vk::ShaderStageFlags)] = if shadow {
            &[(c"vs_shadow", naga::ShaderStage::Vertex, vk::ShaderStageFlags::VERTEX)]
        } else {
            &[
                (c"vs_scene", naga::ShaderStage::Vertex, vk::ShaderStageFlags::VERTEX),
                (c"fs_scene", naga::ShaderStage::Fragment, vk::ShaderStageFlags::FRAGMENT),
            ]
        };
        for &(name, stage, flags) in entries {
            let words = spirv(name.to_str()?, stage)?;
            let info = vk::ShaderModuleCreateInfo::default().code(&words);
            // SAFETY: valid SPIR-V from naga; destroyed below once the pipeline exists.
            let module = unsafe { d.create_shader_module(&info, None) }?;
            modules.push(module);
            stages.push(vk::PipelineShaderStageCreateInfo::default().stage(flags).module(module).name(name));
        }
        let bindings = [vk::VertexInputBindingDescription {
            binding: 0,
            stride: size_of::<HostVertex>() as u32,
            input_rate: vk::VertexInputRate::VERTEX,
        }];
        let attribute = |location, offset| vk::VertexInputAttributeDescription {
            location,
            binding: 0,
            format: vk::Format::R32G32B32_SFLOAT,
            offset,
        };
        let attributes = [attribute(0, 0), attribute(1, 12), attribute(2, 24)];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
            .vertex_binding_descriptions(&bindings)
            .vertex_attribute_descriptions(if shadow { &attributes[..1] } else { &attributes });
        let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let mut raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .line_width(1.0);
        if shadow {
            raster = raster
                .depth_bias_enable(true)
                .depth_bias_constant_factor(SHADOW_DEPTH_BIAS.constant as f32)
                .depth_bias_slope_factor(SHADOW_DEPTH_BIAS.slope_scale)
                .depth_bias_clamp(SHADOW_DEPTH_BIAS.clamp);
        }
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(vat_vulkan::conv::map_sample_count(formats.samples));
        let depth_state = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_write_enable(true)
            .depth_compare_op(vk::CompareOp::LESS);
        let blend_attachments =
            [vk::PipelineColorBlendAttachmentState::default()
                .color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend_attachments);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let color_formats: Vec<vk::Format> = formats.color.into_iter().collect();
        let mut rendering = vk::PipelineRenderingCreateInfo::default()
            .color_attachment_formats(&color_formats)
            .depth_attachment_format(formats.depth);
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .depth_stencil_state(&depth_state)
            .dynamic_state(&dynamic)
            .layout(self.layouts[usize::from(shadow)])
            .push_next(&mut rendering);
        if !shadow {
            info = info.color_blend_state(&blend);
        }
        // SAFETY: valid create info (dynamic rendering, formats as the passes'), live modules.
        let created = unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
        for m in modules {
            // SAFETY: the modules are not needed once the pipeline is created (or failed).
            unsafe { d.destroy_shader_module(m, None) };
        }
        let pipelines = created.map_err(|(_, e)| anyhow!("create host pipeline: {e}"))?;
        Ok(pipelines[0])
    }

    /// The scene pipeline of a colour pass of `formats` (made on first use).
    fn scene_pipeline(&mut self, formats: PassFormats) -> Result<vk::Pipeline> {
        if let Some(&(_, p)) = self.scene_pipelines.iter().find(|(f, _)| *f == formats) {
            return Ok(p);
        }
        let pipeline = self.pipeline(formats)?;
        self.scene_pipelines.push((formats, pipeline));
        Ok(pipeline)
    }

    /// Records, into `cb` (recording, outside any rendering), the write of `scene`'s uniforms
    /// (camera, sun, shadow matrix), ordered after the previous frames' reads and before this
    /// frame's.
    pub fn record_uniforms(&self, cb: vk::CommandBuffer, scene: &Scene) {
        let d = &self.ctx.device;
        let shaders = vk::PipelineStageFlags::VERTEX_SHADER | vk::PipelineStageFlags::FRAGMENT_SHADER;
        let barrier = |src, dst| {
            [vk::BufferMemoryBarrier::default()
                .src_access_mask(src)
                .dst_access_mask(dst)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .buffer(self.uniforms)
                .offset(0)
                .size(vk::WHOLE_SIZE)]
        };
        let empty = vk::DependencyFlags::empty();
        // SAFETY: recording, outside any rendering; the buffer is the host's, made with
        // TRANSFER_DST, and the update is 176 bytes (a multiple of 4, under 65536).
        unsafe {
            let before = barrier(vk::AccessFlags::UNIFORM_READ, vk::AccessFlags::TRANSFER_WRITE);
            d.cmd_pipeline_barrier(cb, shaders, vk::PipelineStageFlags::TRANSFER, empty, &[], &before, &[]);
            d.cmd_update_buffer(cb, self.uniforms, 0, bytemuck::bytes_of(&scene.uniforms()));
            let after = barrier(vk::AccessFlags::TRANSFER_WRITE, vk::AccessFlags::UNIFORM_READ);
            d.cmd_pipeline_barrier(cb, vk::PipelineStageFlags::TRANSFER, shaders, empty, &[], &after, &[]);
        }
    }

    /// Records, into `cb` (recording, outside any rendering), the host's shadow pass: the map
    /// cleared to 1, the `casters` ranges of its vertices, then `crowd` (vat's `draw_depth` of the
    /// host's view, in a depth-only rendering of the given formats and area), and leaves the map
    /// in `SHADER_READ_ONLY_OPTIMAL` for the colour pass's fragment shaders.
    ///
    /// # Errors
    /// `crowd`'s.
    pub fn record_shadow_pass(
        &self,
        cb: vk::CommandBuffer,
        casters: &[VertexRange],
        crowd: impl FnOnce(vk::CommandBuffer, PassFormats, vk::Rect2D) -> Result<()>,
    ) -> Result<()> {
        let d = &self.ctx.device;
        let shadow_area = full_rect([SHADOW_MAP_SIZE, SHADOW_MAP_SIZE]);
        let barrier = |old,
                       new,
                       src: (vk::PipelineStageFlags, vk::AccessFlags),
                       dst: (vk::PipelineStageFlags, vk::AccessFlags)| {
            let b = [vk::ImageMemoryBarrier::default()
                .src_access_mask(src.1)
                .dst_access_mask(dst.1)
                .old_layout(old)
                .new_layout(new)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(self.shadow_image)
                .subresource_range(depth_range())];
            // SAFETY: recording, outside any rendering; the image is the host's.
            unsafe { d.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b) };
        };
        let tests =
            vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let depth_rw =
            vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
        // The map is cleared: its old contents may be discarded (after the previous frame's reads).
        barrier(
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::empty()),
            (tests, depth_rw),
        );
        let depth = vk::RenderingAttachmentInfo::default()
            .image_view(self.shadow_view)
            .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            });
        let info =
            vk::RenderingInfo::default().render_area(shadow_area).layer_count(1).depth_attachment(&depth);
        // SAFETY: recording outside rendering; the host's pipeline, set and buffer are live and
        // match; the viewport is vat's convention (y flipped).
        unsafe {
            d.cmd_begin_rendering(cb, &info);
            d.cmd_set_viewport(cb, 0, &[flipped_viewport(shadow_area)]);
            d.cmd_set_scissor(cb, 0, &[shadow_area]);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, self.shadow_pipeline);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::GRAPHICS,
                self.layouts[1],
                0,
                &[self.shadow_set],
                &[],
            );
            d.cmd_bind_vertex_buffers(cb, 0, &[self.vertices], &[0]);
            for r in casters {
                d.cmd_draw(cb, r.end - r.start, 1, r.start, 0);
            }
        }
        let cast = crowd(
            cb,
            PassFormats {
                conventions: vat_vulkan::PassConventions::STANDARD,
                color: None,
                motion: None,
                depth: SHADOW_FORMAT,
                samples: 1,
            },
            shadow_area,
        );
        // SAFETY: ends the rendering begun above.
        unsafe { d.cmd_end_rendering(cb) };
        cast?;
        // Depth writes before the colour pass's fragment-shader reads (host's and vat's).
        barrier(
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            (tests, vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE),
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
        );
        Ok(())
    }

    /// Records, into `cb` (recording, outside any rendering), the host's colour pass over `target`:
    /// colour cleared to `sky`, depth to 1, the `colour` ranges of its vertices lit and shadowed by
    /// its map, then `crowd` (vat's `draw`, sharing the depth buffer). Leaves no rendering open and
    /// the attachments in their layouts.
    ///
    /// # Errors
    /// A pipeline that cannot be made, or `crowd`'s error.
    pub fn record_colour_pass(
        &mut self,
        cb: vk::CommandBuffer,
        target: &ColourTarget,
        sky: [f64; 4],
        colour: &[VertexRange],
        crowd: impl FnOnce(vk::CommandBuffer, PassFormats, vk::Rect2D) -> Result<()>,
    ) -> Result<()> {
        let pipeline = self.scene_pipeline(target.formats)?;
        let d = &self.ctx.device;
        let [r, g, b, a] = sky.map(|c| c as f32);
        let mut colour_info = vk::RenderingAttachmentInfo::default()
            .image_view(target.color)
            .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(if target.resolve.is_some() {
                vk::AttachmentStoreOp::DONT_CARE
            } else {
                vk::AttachmentStoreOp::STORE
            })
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [r, g, b, a] } });
        if let Some(resolve) = target.resolve {
            colour_info = colour_info
                .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                .resolve_image_view(resolve)
                .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
        }
        let colour_attachment = [colour_info];
        let depth = vk::RenderingAttachmentInfo::default()
            .image_view(target.depth)
            .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
            });
        let area = target.area;
        let info = vk::RenderingInfo::default()
            .render_area(area)
            .layer_count(1)
            .color_attachments(&colour_attachment)
            .depth_attachment(&depth);
        // SAFETY: recording outside rendering; the target's views are in the layouts given (this
        // function's contract); the host's pipeline, set and buffer are live and match.
        unsafe {
            d.cmd_begin_rendering(cb, &info);
            d.cmd_set_viewport(cb, 0, &[flipped_viewport(area)]);
            d.cmd_set_scissor(cb, 0, &[area]);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::GRAPHICS,
                self.layouts[0],
                0,
                &[self.scene_set],
                &[],
            );
            d.cmd_bind_vertex_buffers(cb, 0, &[self.vertices], &[0]);
            for r in colour {
                d.cmd_draw(cb, r.end - r.start, 1, r.start, 0);
            }
        }
        let drawn = crowd(cb, target.formats, area);
        // SAFETY: ends the rendering begun above.
        unsafe { d.cmd_end_rendering(cb) };
        drawn
    }

    /// Records a whole host frame into `cb` (recording, outside any rendering) with `renderer`:
    /// the uniforms, `prepare` of `draws` (the scene's sun view as extra view 0), the shadow pass,
    /// the colour pass over `target`, each part as `frame` says. Returns vat's report.
    ///
    /// # Errors
    /// Those of vat's calls, or a host pipeline that cannot be made.
    pub fn record_frame(
        &mut self,
        renderer: &mut Renderer,
        cb: vk::CommandBuffer,
        draws: &mut [CrowdDraw<'_>],
        scene: &Scene,
        frame: &HostFrame,
        target: &ColourTarget,
    ) -> Result<FrameReport> {
        let (casters, colour) = scene.ranges(frame);
        let options = scene.options(frame.culling);
        self.record_uniforms(cb, scene);
        // The sun's view only when something casts into the map (culling it costs CPU or GPU time).
        let views = if frame.crowd_casts && options.shadows { &[scene.light_view_proj][..] } else { &[] };
        let report = renderer.prepare(cb, draws, &scene.camera, &options, views)?;
        self.record_shadow_pass(cb, &casters, |cb, formats, area| {
            if frame.crowd_casts && options.shadows {
                renderer.draw_depth(cb, draws, 0, formats, area)?;
            }
            Ok(())
        })?;
        self.record_colour_pass(cb, target, scene.sky, &colour, |cb, formats, area| {
            if frame.crowd {
                renderer.draw(cb, draws, formats, area)?;
            }
            Ok(())
        })?;
        Ok(report)
    }
}

fn depth_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::DEPTH,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

/// A host on a `vat_vulkan::Offscreen`: its scene, the crowds it draws, and their GPU copies.
pub struct VulkanHost {
    scene: Scene,
    crowds: HostCrowds<Offscreen>,
    gpu: SceneGpu,
    /// Multisampled colour and depth images and views of the MSAA colour pass (made on first use,
    /// owned by `gpu`).
    msaa: Option<[(vk::Image, vk::ImageView); 2]>,
    // Last: the GPU crowds and assets above are destroyed while their renderer's device lives.
    offscreen: Offscreen,
}

impl VulkanHost {
    /// The example's host: a headless Vulkan context of [`SIZE`] pixels (the validation layer on
    /// when installed), `scene`, and the two crowds of [`super::crowds`] (of `assets`, see
    /// [`super::assets`]).
    ///
    /// # Errors
    /// No Vulkan 1.3 device, or an asset that does not upload.
    pub fn example(scene: Scene, assets: &[Vec<u8>; 2]) -> Result<Self> {
        let parsed = assets.iter().map(|b| Asset::parse(b)).collect::<Result<Vec<_>, _>>()?;
        let offscreen = Offscreen::new(SIZE, RendererConfig::default())?;
        Self::new(offscreen, scene, &parsed, super::crowds(assets)?.into())
    }

    /// A host on `offscreen` drawing `scene` and `crowds` (crowd `i` of asset `i`).
    ///
    /// # Errors
    /// An asset that does not upload, a crowd whose GPU state cannot be made, or a Vulkan failure.
    pub fn new(
        mut offscreen: Offscreen,
        scene: Scene,
        assets: &[Asset<'_>],
        crowds: Vec<Crowd>,
    ) -> Result<Self> {
        let crowds = HostCrowds::new(&mut offscreen, assets, crowds)?;
        let (ctx, renderer) = offscreen.parts();
        let gpu = SceneGpu::new(ctx, &scene)?;
        // The crowd's colour draws sample the host's map.
        renderer.set_host_shadow_map(Some(gpu.shadow_view()));
        Ok(Self { scene, crowds, gpu, msaa: None, offscreen })
    }

    /// The device's name.
    pub fn adapter_name(&self) -> String {
        self.offscreen.adapter_name()
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&mut self) -> bool {
        self.offscreen.parts().0.validation_enabled()
    }

    /// Validation errors and warnings so far.
    pub fn validation_messages(&mut self) -> (u32, u32) {
        let m = self.offscreen.parts().0.messages();
        (m.errors(), m.warnings())
    }

    /// The crowds drawn (move, spawn or advance them between frames).
    pub fn crowds_mut(&mut self) -> &mut [Crowd] {
        &mut self.crowds.crowds
    }

    /// The scene (move its camera with [`Scene::follow`] between frames).
    pub fn scene_mut(&mut self) -> &mut Scene {
        &mut self.scene
    }

    /// The GPU-culling counts of each crowd's last frame that has arrived (see
    /// `CrowdRenderer::gpu_counts`).
    ///
    /// # Errors
    /// A device failure.
    pub fn gpu_counts(&mut self) -> Result<Vec<Option<GpuCountsResult>>> {
        self.crowds.gpu_counts(&mut self.offscreen)
    }

    /// Renders `frame` and reads it back: tightly packed sRGB RGBA8 rows of the offscreen's size,
    /// top first, and vat's report.
    ///
    /// # Errors
    /// A device failure.
    pub fn render(&mut self, frame: &HostFrame) -> Result<(Vec<u8>, FrameReport)> {
        let size = self.offscreen.size();
        let formats = PassFormats { samples: frame.samples, ..self.offscreen.parts().1.pass_formats() };
        if frame.samples > 1 && self.msaa.is_none() {
            let color = formats.color.ok_or_else(|| anyhow!("the offscreen target has a colour format"))?;
            let attachment = vk::ImageUsageFlags::TRANSIENT_ATTACHMENT;
            self.msaa = Some([
                self.gpu.image(
                    color,
                    size,
                    MSAA_SAMPLES,
                    vk::ImageUsageFlags::COLOR_ATTACHMENT | attachment,
                )?,
                self.gpu.image(
                    formats.depth,
                    size,
                    MSAA_SAMPLES,
                    vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | attachment,
                )?,
            ]);
        }
        let mut draws = self.crowds.draws();
        let (gpu, scene, msaa) = (&mut self.gpu, &self.scene, self.msaa.filter(|_| frame.samples > 1));
        let mut failure = None;
        let report = self.offscreen.record_host_frame(|ctx, renderer, cb, target| {
            let area = full_rect(size);
            // With MSAA: multisampled colour and depth (cleared: their old contents may be
            // discarded), the colour resolved into the target (in COLOR_ATTACHMENT_OPTIMAL).
            let target = match msaa {
                Some([color, depth]) => {
                    record_msaa_transitions(ctx, cb, color.0, depth.0);
                    ColourTarget {
                        color: color.1,
                        resolve: Some(target.color),
                        depth: depth.1,
                        area,
                        formats,
                    }
                }
                None => {
                    ColourTarget { color: target.color, resolve: None, depth: target.depth, area, formats }
                }
            };
            match gpu.record_frame(renderer, cb, &mut draws, scene, frame, &target) {
                Ok(report) => Ok(Some(report)),
                Err(e) => {
                    failure = Some(e);
                    Ok(None)
                }
            }
        })?;
        let report = match (report, failure) {
            (Some(report), _) => report,
            (None, Some(e)) => return Err(e),
            (None, None) => anyhow::bail!("the host frame recorded no report"),
        };
        let pixels = self.offscreen.read_rgba8().context("reading the frame back")?;
        Ok((pixels, report))
    }
}

/// Records, into `cb` (recording, outside any rendering), the transitions of the host's
/// multisampled colour and depth images to attachment layouts (contents discarded), after earlier
/// frames' writes to them.
pub fn record_msaa_transitions(ctx: &Context, cb: vk::CommandBuffer, color: vk::Image, depth: vk::Image) {
    let tests = vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
    let depth_rw =
        vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
    let image_barrier = |image, aspect_mask, layout, access| {
        vk::ImageMemoryBarrier::default()
            .dst_access_mask(access)
            .old_layout(vk::ImageLayout::UNDEFINED)
            .new_layout(layout)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(vk::ImageSubresourceRange { aspect_mask, ..depth_range() })
    };
    let barriers = [
        image_barrier(
            color,
            vk::ImageAspectFlags::COLOR,
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        ),
        image_barrier(
            depth,
            vk::ImageAspectFlags::DEPTH,
            vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
            depth_rw,
        ),
    ];
    let stages = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | tests;
    // SAFETY: recording, outside any rendering; both images are the host's. Earlier frames' writes
    // to them are ordered by the stages (write-after-write on attachments).
    unsafe {
        ctx.device.cmd_pipeline_barrier(cb, stages, stages, vk::DependencyFlags::empty(), &[], &[], &barriers)
    };
}
