//! The host of [`super`] on Vulkan (ash): its pipelines (its WGSL through naga, as an engine with
//! WGSL or HLSL sources would translate them), buffers, shadow map and descriptor sets on the device
//! of a `vat_vulkan::Offscreen`, and its frame recorded into one command buffer around vat's
//! `prepare`, `draw_depth` and `draw`, with the host's own layout transitions.

#![allow(unsafe_code)] // the host side is raw Vulkan, as an engine's would be; each call says why it is sound

use std::rc::Rc;

use anyhow::{Context as _, Result, anyhow};
use ash::vk;
use vat_core::container::Asset;
use vat_core::crowd::Crowd;
use vat_core::pipeline::SHADOW_DEPTH_BIAS;
use vat_core::render::CrowdRenderer;
use vat_vulkan::{
    Context, GpuAsset, GpuCrowd, Offscreen, PassFormats, RendererConfig, flipped_viewport, full_rect,
};

use super::{HOST_SHADER, HostFrame, HostVertex, MSAA_SAMPLES, SHADOW_MAP_SIZE, SIZE, SKY, Scene};

const SHADOW_FORMAT: vk::Format = vk::Format::D32_SFLOAT;

/// The host's Vulkan objects, destroyed on drop (after the device is idle).
struct HostObjects {
    ctx: Rc<Context>,
    memories: Vec<vk::DeviceMemory>,
    buffers: Vec<vk::Buffer>,
    vertices: vk::Buffer,
    /// Every image and view, destroyed on drop.
    images: Vec<vk::Image>,
    views: Vec<vk::ImageView>,
    shadow_image: vk::Image,
    shadow_view: vk::ImageView,
    /// Multisampled colour and depth images and views of the MSAA colour pass.
    msaa_color: (vk::Image, vk::ImageView),
    msaa_depth: (vk::Image, vk::ImageView),
    sampler: vk::Sampler,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pool: vk::DescriptorPool,
    scene_set: vk::DescriptorSet,
    shadow_set: vk::DescriptorSet,
    layouts: Vec<vk::PipelineLayout>,
    /// The scene pipelines at 1 and at [`MSAA_SAMPLES`] samples.
    scene_pipelines: [vk::Pipeline; 2],
    shadow_pipeline: vk::Pipeline,
}

impl Drop for HostObjects {
    fn drop(&mut self) {
        let d = &self.ctx.device;
        // SAFETY: every object was created on this device and is destroyed once, after the device
        // is idle (no submitted frame uses them).
        unsafe {
            let _ = d.device_wait_idle();
            for &p in &self.scene_pipelines {
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

/// The host and the two crowds it draws, on Vulkan.
pub struct VulkanHost {
    scene: Scene,
    assets: Vec<GpuAsset>,
    gpu_crowds: Vec<GpuCrowd>,
    crowds: [Crowd; 2],
    host: HostObjects,
    // Last: the GPU crowds and assets above are destroyed while their renderer's device lives.
    offscreen: Offscreen,
}

/// A memory type of `ctx` among `bits` with `flags`.
fn memory_type(ctx: &Context, bits: u32, flags: vk::MemoryPropertyFlags) -> Result<u32> {
    let m = &ctx.memory_properties;
    (0..m.memory_type_count)
        .find(|&i| bits & (1 << i) != 0 && m.memory_types[i as usize].property_flags.contains(flags))
        .ok_or_else(|| anyhow!("no memory type with {flags:?}"))
}

/// SPIR-V of `entry` of [`HOST_SHADER`] (no coordinate adjustment: the host flips Y with the
/// viewport, as vat-vulkan does).
fn spirv(entry: &str, stage: naga::ShaderStage) -> Result<Vec<u32>> {
    let module = naga::front::wgsl::parse_str(HOST_SHADER)
        .map_err(|e| anyhow!("{}", e.emit_to_string(HOST_SHADER)))?;
    let info =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .map_err(|e| anyhow!("{}", e.emit_to_string(HOST_SHADER)))?;
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        flags: naga::back::spv::WriterFlags::LABEL_VARYINGS,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions { shader_stage: stage, entry_point: entry.to_owned() };
    Ok(naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))?)
}

impl HostObjects {
    /// A device-local 2D image of `format` and its view (colour or depth aspect by format),
    /// destroyed by `HostObjects::drop`.
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
        // SAFETY: valid create info; destroyed by `HostObjects::drop`.
        let image = unsafe { d.create_image(&info, None) }?;
        self.images.push(image);
        // SAFETY: a live image of this device.
        let req = unsafe { d.get_image_memory_requirements(image) };
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(
            memory_type(&self.ctx, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)?,
        );
        // SAFETY: valid allocate info; freed by `HostObjects::drop`.
        let memory = unsafe { d.allocate_memory(&alloc, None) }?;
        self.memories.push(memory);
        // SAFETY: the image is bound once, to memory of a type it accepts, before any use.
        unsafe { d.bind_image_memory(image, memory, 0) }?;
        let aspect = if usage.contains(vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT) {
            vk::ImageAspectFlags::DEPTH
        } else {
            vk::ImageAspectFlags::COLOR
        };
        let view_info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(vk::ImageSubresourceRange { aspect_mask: aspect, ..depth_range() });
        // SAFETY: a view of the live image above; destroyed by `HostObjects::drop`.
        let view = unsafe { d.create_image_view(&view_info, None) }?;
        self.views.push(view);
        Ok((image, view))
    }

    fn new(
        ctx: &Rc<Context>,
        scene: &Scene,
        color_format: vk::Format,
        depth_format: vk::Format,
    ) -> Result<Self> {
        let d = &ctx.device;
        let mut host = HostObjects {
            ctx: ctx.clone(),
            memories: Vec::new(),
            buffers: Vec::new(),
            vertices: vk::Buffer::null(),
            shadow_image: vk::Image::null(),
            shadow_view: vk::ImageView::null(),
            images: Vec::new(),
            views: Vec::new(),
            msaa_color: (vk::Image::null(), vk::ImageView::null()),
            msaa_depth: (vk::Image::null(), vk::ImageView::null()),
            sampler: vk::Sampler::null(),
            set_layouts: Vec::new(),
            pool: vk::DescriptorPool::null(),
            scene_set: vk::DescriptorSet::null(),
            shadow_set: vk::DescriptorSet::null(),
            layouts: Vec::new(),
            scene_pipelines: [vk::Pipeline::null(); 2],
            shadow_pipeline: vk::Pipeline::null(),
        };
        // Host-visible buffers, written once.
        let mut buffer = |bytes: &[u8], usage| -> Result<vk::Buffer> {
            let info = vk::BufferCreateInfo::default().size(bytes.len() as u64).usage(usage);
            // SAFETY: valid create info on a live device; destroyed by `HostObjects::drop`.
            let b = unsafe { d.create_buffer(&info, None) }?;
            host.buffers.push(b);
            // SAFETY: `b` is a live buffer of this device.
            let req = unsafe { d.get_buffer_memory_requirements(b) };
            let flags = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(memory_type(ctx, req.memory_type_bits, flags)?);
            // SAFETY: valid allocate info; freed by `HostObjects::drop`.
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
        host.vertices = buffer(bytemuck::cast_slice(&scene.vertices), vk::BufferUsageFlags::VERTEX_BUFFER)?;
        let uniforms = buffer(bytemuck::bytes_of(&scene.uniforms()), vk::BufferUsageFlags::UNIFORM_BUFFER)?;

        // The shadow map: depth attachment of the shadow pass, sampled by the host's and vat's
        // colour draws.
        let usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::SAMPLED;
        let shadow_size = [SHADOW_MAP_SIZE, SHADOW_MAP_SIZE];
        (host.shadow_image, host.shadow_view) = host.image(SHADOW_FORMAT, shadow_size, 1, usage)?;
        // Multisampled colour and depth of the MSAA colour pass (the colour resolves into the target).
        let color_usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSIENT_ATTACHMENT;
        let depth_usage =
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | vk::ImageUsageFlags::TRANSIENT_ATTACHMENT;
        host.msaa_color = host.image(color_format, SIZE, MSAA_SAMPLES, color_usage)?;
        host.msaa_depth = host.image(depth_format, SIZE, MSAA_SAMPLES, depth_usage)?;
        let sampler_info = vk::SamplerCreateInfo::default()
            .mag_filter(vk::Filter::LINEAR)
            .min_filter(vk::Filter::LINEAR)
            .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .compare_enable(true)
            .compare_op(vk::CompareOp::LESS_OR_EQUAL);
        // SAFETY: valid create info; destroyed by `HostObjects::drop`.
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
            // SAFETY: valid create info; destroyed by `HostObjects::drop`.
            host.set_layouts.push(unsafe { d.create_descriptor_set_layout(&info, None) }?);
        }
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: 2 },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLED_IMAGE, descriptor_count: 1 },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::SAMPLER, descriptor_count: 1 },
        ];
        let pool_info = vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes);
        // SAFETY: valid create info; destroyed by `HostObjects::drop`.
        host.pool = unsafe { d.create_descriptor_pool(&pool_info, None) }?;
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(host.pool)
            .set_layouts(&host.set_layouts);
        // SAFETY: the pool has room for both sets.
        let sets = unsafe { d.allocate_descriptor_sets(&alloc) }?;
        (host.scene_set, host.shadow_set) = (sets[0], sets[1]);
        let buffer_info = [vk::DescriptorBufferInfo { buffer: uniforms, offset: 0, range: vk::WHOLE_SIZE }];
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
            // SAFETY: valid create info; destroyed by `HostObjects::drop`.
            host.layouts.push(unsafe { d.create_pipeline_layout(&info, None) }?);
        }
        host.scene_pipelines = [
            host.pipeline(Some(color_format), depth_format, false, 1)?,
            host.pipeline(Some(color_format), depth_format, false, MSAA_SAMPLES)?,
        ];
        host.shadow_pipeline = host.pipeline(None, SHADOW_FORMAT, true, 1)?;
        Ok(host)
    }

    /// The scene pipeline (`color` given) or the shadow pipeline (depth only, vat's shadow bias).
    fn pipeline(
        &self,
        color: Option<vk::Format>,
        depth: vk::Format,
        shadow: bool,
        samples: u32,
    ) -> Result<vk::Pipeline> {
        let d = &self.ctx.device;
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
            .rasterization_samples(vat_vulkan::conv::map_sample_count(samples));
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
        let color_formats: Vec<vk::Format> = color.into_iter().collect();
        let mut rendering = vk::PipelineRenderingCreateInfo::default()
            .color_attachment_formats(&color_formats)
            .depth_attachment_format(depth);
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
        if color.is_some() {
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

impl VulkanHost {
    /// Opens a headless Vulkan context of [`SIZE`] pixels (the validation layer on when
    /// installed) and builds the host's resources and both crowds (of `assets`, see
    /// [`super::assets`]).
    ///
    /// # Errors
    /// No Vulkan 1.3 device, or an asset that does not upload.
    pub fn new(scene: Scene, assets: &[Vec<u8>; 2]) -> Result<Self> {
        let mut offscreen = Offscreen::new(SIZE, RendererConfig::default())?;
        let mut uploaded = Vec::new();
        for bytes in assets {
            uploaded.push(offscreen.upload(&Asset::parse(bytes)?)?);
        }
        let crowds = super::crowds(assets)?;
        let gpu_crowds = crowds.iter().map(|c| offscreen.create_crowd(c)).collect::<Result<Vec<_>, _>>()?;
        let (ctx, renderer) = offscreen.parts();
        let formats = renderer.pass_formats();
        let color = formats.color.ok_or_else(|| anyhow!("the offscreen target has a colour format"))?;
        let host = HostObjects::new(ctx, &scene, color, formats.depth)?;
        // The crowd's colour draws sample the host's map.
        renderer.set_host_shadow_map(Some(host.shadow_view));
        Ok(Self { scene, assets: uploaded, gpu_crowds, crowds, host, offscreen })
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

    /// Renders `frame` and reads it back: tightly packed sRGB RGBA8 rows of [`SIZE`], top first.
    /// Returns the pixels and the crowds' bodies drawn (vat's report).
    ///
    /// # Errors
    /// A device failure.
    pub fn render(&mut self, frame: &HostFrame) -> Result<(Vec<u8>, u32)> {
        let (casters, colour) = self.scene.ranges(frame);
        let camera = self.scene.camera;
        let options = self.scene.options(frame.culling);
        let views = [self.scene.light_view_proj];
        let mut draws = super::crowd_draws(&self.assets, &mut self.gpu_crowds, &mut self.crowds);
        let host = &self.host;
        let drawn = self.offscreen.record_host_frame(|ctx, renderer, cb, target| {
            let d = &ctx.device;
            // 1. vat's uploads and culling, with the host's sun view as extra view 0.
            let report = renderer.prepare(cb, &mut draws, &camera, &options, &views)?;
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
                    .image(host.shadow_image)
                    .subresource_range(depth_range())];
                // SAFETY: recording, outside any rendering; the image is the host's.
                unsafe {
                    d.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b)
                };
            };
            let tests =
                vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
            let depth_rw = vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
            // 2. The host's shadow pass (the map is cleared: its old contents may be discarded).
            barrier(
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::empty()),
                (tests, depth_rw),
            );
            let depth = vk::RenderingAttachmentInfo::default()
                .image_view(host.shadow_view)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                });
            let info =
                vk::RenderingInfo::default().render_area(shadow_area).layer_count(1).depth_attachment(&depth);
            // SAFETY: recording outside rendering (`prepare` leaves none open); the host's pipeline,
            // set and buffer are live and match; the viewport is vat's convention (y flipped).
            unsafe {
                d.cmd_begin_rendering(cb, &info);
                d.cmd_set_viewport(cb, 0, &[flipped_viewport(shadow_area)]);
                d.cmd_set_scissor(cb, 0, &[shadow_area]);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, host.shadow_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    host.layouts[1],
                    0,
                    &[host.shadow_set],
                    &[],
                );
                d.cmd_bind_vertex_buffers(cb, 0, &[host.vertices], &[0]);
                for r in &casters {
                    d.cmd_draw(cb, r.end - r.start, 1, r.start, 0);
                }
            }
            let cast = if frame.crowd_casts {
                let depth_only = PassFormats { color: None, depth: SHADOW_FORMAT, samples: 1 };
                renderer.draw_depth(cb, &draws, 0, depth_only, shadow_area)
            } else {
                Ok(())
            };
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
            // 3. The host's colour pass: its scene, then the crowds, one depth buffer.
            // With MSAA: multisampled colour and depth (cleared: their old contents may be
            // discarded), the colour resolved into the target (in COLOR_ATTACHMENT_OPTIMAL).
            let msaa = frame.samples > 1;
            if msaa {
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
                        host.msaa_color.0,
                        vk::ImageAspectFlags::COLOR,
                        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                        vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                    ),
                    image_barrier(
                        host.msaa_depth.0,
                        vk::ImageAspectFlags::DEPTH,
                        vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                        depth_rw,
                    ),
                ];
                let stages = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | tests;
                // SAFETY: recording, outside any rendering; both images are the host's. Earlier
                // frames' writes to them are ordered by the stages (write-after-write on
                // attachments).
                unsafe {
                    d.cmd_pipeline_barrier(
                        cb,
                        stages,
                        stages,
                        vk::DependencyFlags::empty(),
                        &[],
                        &[],
                        &barriers,
                    )
                };
            }
            let [r, g, b, a] = SKY.map(|c| c as f32);
            let mut colour_info = vk::RenderingAttachmentInfo::default()
                .image_view(if msaa { host.msaa_color.1 } else { target.color })
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(if msaa { vk::AttachmentStoreOp::DONT_CARE } else { vk::AttachmentStoreOp::STORE })
                .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [r, g, b, a] } });
            if msaa {
                colour_info = colour_info
                    .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                    .resolve_image_view(target.color)
                    .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
            }
            let colour_attachment = [colour_info];
            let depth = vk::RenderingAttachmentInfo::default()
                .image_view(if msaa { host.msaa_depth.1 } else { target.depth })
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                });
            let area = full_rect(SIZE);
            let info = vk::RenderingInfo::default()
                .render_area(area)
                .layer_count(1)
                .color_attachments(&colour_attachment)
                .depth_attachment(&depth);
            // SAFETY: as the shadow pass; the target's views are in the layouts given
            // (`record_host_frame`'s contract).
            unsafe {
                d.cmd_begin_rendering(cb, &info);
                d.cmd_set_viewport(cb, 0, &[flipped_viewport(area)]);
                d.cmd_set_scissor(cb, 0, &[area]);
                d.cmd_bind_pipeline(
                    cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    host.scene_pipelines[usize::from(msaa)],
                );
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    host.layouts[0],
                    0,
                    &[host.scene_set],
                    &[],
                );
                d.cmd_bind_vertex_buffers(cb, 0, &[host.vertices], &[0]);
                for r in &colour {
                    d.cmd_draw(cb, r.end - r.start, 1, r.start, 0);
                }
            }
            let drawn = if frame.crowd {
                renderer.draw(
                    cb,
                    &draws,
                    PassFormats { samples: frame.samples, ..renderer.pass_formats() },
                    area,
                )
            } else {
                Ok(())
            };
            // SAFETY: ends the rendering begun above.
            unsafe { d.cmd_end_rendering(cb) };
            drawn?;
            Ok(report.draws_main)
        })?;
        let pixels = self.offscreen.read_rgba8().context("reading the frame back")?;
        Ok((pixels, drawn))
    }
}
