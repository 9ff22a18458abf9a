//! Asset upload and the decode compute path (`cs_decode` / `cs_decode_bone`), the Vulkan twin of
//! vat-wgpu's `Renderer::upload` and `Renderer::decode`.

use std::collections::HashMap;
use std::ffi::CString;

use ash::vk;
use vat_core::container::Asset;
use vat_core::encoding::VertexFormat;
use vat_core::gpu::{self, AssetConstants, DecodeParams, DecodedVertex, FrameUniforms, ShaderStages};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;

use crate::owned::{HostBuffer, Object, Owned, color_range};
use crate::shader::{ShaderModule, ShaderVariant, entry_point};
use crate::{Context, VulkanError, conv};

/// Which vertex path is decoded (vat-wgpu's `RenderMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RenderMode {
    /// Vertex animation texture (`cs_decode`, the default).
    #[default]
    Vat,
    /// Skinning from the bone texture (`cs_decode_bone`; assets baked with `--bones`).
    Bone,
}

/// Settings of a [`Decoder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderConfig {
    /// Frame interpolation of every pipeline (the `INTERPOLATION` override): linear by default.
    pub interpolation: Interpolation,
}

/// A baked asset on the device: its animation and bone textures, clip table, constants and vertex
/// streams, and the descriptor set (set 1) of the compute pipelines. Destroyed on drop.
pub struct GpuAsset<'a> {
    _owned: Owned<'a>,
    set: vk::DescriptorSet,
    vertex_count: u32,
    influences: u32,
}

impl std::fmt::Debug for GpuAsset<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuAsset")
            .field("vertex_count", &self.vertex_count)
            .field("influences", &self.influences)
            .finish_non_exhaustive()
    }
}

impl GpuAsset<'_> {
    /// Vertices per frame (of LOD 0).
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// Whether bone mode is available (the asset was baked with `--bones`).
    pub fn has_bones(&self) -> bool {
        self.influences > 0
    }

    /// Bone influences per vertex (4 or 8), 0 without bones.
    pub fn influences(&self) -> u32 {
        self.influences
    }
}

/// Decodes instances on a [`Context`]'s device with the shared compute shaders. Holds the
/// descriptor-set layouts of the compute pipelines (from the binding table), the pipelines (created on
/// first use, each variant once) and stand-ins for the culling bindings of set 2.
pub struct Decoder<'a> {
    ctx: &'a Context,
    shader: ShaderModule,
    config: DecoderConfig,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    pipeline_layout: vk::PipelineLayout,
    pipelines: HashMap<(&'static str, bool, u32), vk::Pipeline>,
    dummy_cull_params: HostBuffer,
    dummy_visible: HostBuffer,
    dummy_draw_args: HostBuffer,
    owned: Owned<'a>,
}

impl std::fmt::Debug for Decoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("config", &self.config)
            .field("pipelines", &self.pipelines.len())
            .finish_non_exhaustive()
    }
}

/// What a descriptor of a set is bound to.
#[derive(Clone, Copy)]
enum Resource {
    Buffer(vk::Buffer),
    Image(vk::ImageView),
}

/// Workgroup counts `(x, y)` for `threads` threads of `size` per workgroup, x at most 65535 (the
/// shaders linearise `global_id.y * num_workgroups.x * size + global_id.x`); vat-wgpu's `workgroups`.
fn workgroups(threads: u64, size: u32) -> (u32, u32) {
    let groups = threads.div_ceil(u64::from(size)).max(1);
    let x = groups.min(65535);
    let y = groups.div_ceil(x);
    (x as u32, y.min(u64::from(u32::MAX)) as u32)
}

/// Creates a descriptor pool for one set of `layout_bindings`, allocates the set with `layout` and
/// writes every binding from `resource` (looked up by WGSL name). The pool is recorded in `owned`.
fn descriptor_set(
    owned: &mut Owned<'_>,
    layout: vk::DescriptorSetLayout,
    group: u32,
    resource: impl Fn(&str) -> Option<Resource>,
) -> Result<vk::DescriptorSet, VulkanError> {
    let device = &owned.ctx.device;
    let bindings: Vec<&gpu::Binding> = gpu::bindings_for_stages(group, ShaderStages::COMPUTE).collect();
    let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
    for b in &bindings {
        let ty = conv::map_binding_type(&b.kind);
        match sizes.iter_mut().find(|s| s.ty == ty) {
            Some(s) => s.descriptor_count += 1,
            None => sizes.push(vk::DescriptorPoolSize { ty, descriptor_count: 1 }),
        }
    }
    let info = vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes);
    // SAFETY: valid create info on a live device.
    let pool = unsafe { device.create_descriptor_pool(&info, None) }
        .map_err(VulkanError::vk("create descriptor pool"))?;
    owned.push(Object::DescriptorPool(pool));
    let layouts = [layout];
    let alloc = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
    // SAFETY: the pool has room for exactly this set's descriptors.
    let set = unsafe { device.allocate_descriptor_sets(&alloc) }
        .map_err(VulkanError::vk("allocate descriptor set"))?[0];
    let mut buffer_infos = Vec::new();
    let mut image_infos = Vec::new();
    for b in &bindings {
        match resource(b.name) {
            Some(Resource::Buffer(buffer)) => {
                buffer_infos
                    .push((b, [vk::DescriptorBufferInfo { buffer, offset: 0, range: vk::WHOLE_SIZE }]));
            }
            Some(Resource::Image(view)) => image_infos.push((
                b,
                [vk::DescriptorImageInfo {
                    sampler: vk::Sampler::null(),
                    image_view: view,
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                }],
            )),
            None => panic!("internal: no resource for binding {} of set {group}", b.name),
        }
    }
    let mut writes = Vec::new();
    for (b, info) in &buffer_infos {
        writes.push(
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b.binding)
                .descriptor_type(conv::map_binding_type(&b.kind))
                .buffer_info(info),
        );
    }
    for (b, info) in &image_infos {
        writes.push(
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(b.binding)
                .descriptor_type(conv::map_binding_type(&b.kind))
                .image_info(info),
        );
    }
    // SAFETY: every write targets a binding of the set's layout with its descriptor type and a live
    // resource.
    unsafe { device.update_descriptor_sets(&writes, &[]) };
    Ok(set)
}

impl<'a> Decoder<'a> {
    /// Translates the shader, creates the compute descriptor-set layouts (sets 0..3 from
    /// `bindings_for_stages(set, COMPUTE)`), the pipeline layout and the stand-in culling buffers.
    ///
    /// # Errors
    /// [`VulkanError::Shader`], [`VulkanError::Vk`], [`VulkanError::NoMemoryType`].
    pub fn new(ctx: &'a Context, config: DecoderConfig) -> Result<Self, VulkanError> {
        let shader = ShaderModule::new()?;
        let mut owned = Owned::new(ctx);
        let mut set_layouts = Vec::new();
        for group in 0..gpu::group_count() {
            let bindings = conv::bind_group_layout_entries(group, ShaderStages::COMPUTE);
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            // SAFETY: valid create info on a live device.
            let layout = unsafe { ctx.device.create_descriptor_set_layout(&info, None) }
                .map_err(VulkanError::vk("create descriptor set layout"))?;
            owned.push(Object::SetLayout(layout));
            set_layouts.push(layout);
        }
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        // SAFETY: valid create info; the set layouts are live.
        let pipeline_layout = unsafe { ctx.device.create_pipeline_layout(&info, None) }
            .map_err(VulkanError::vk("create pipeline layout"))?;
        owned.push(Object::PipelineLayout(pipeline_layout));
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let dummy_cull_params = owned.buffer(size_of::<gpu::CullParams>() as u64, uniform, "dummy buffer")?;
        let dummy_visible = owned.buffer(4, storage, "dummy buffer")?;
        let dummy_draw_args = owned.buffer(gpu::DRAW_ARGS_BYTES, storage, "dummy buffer")?;
        Ok(Self {
            ctx,
            shader,
            config,
            set_layouts,
            pipeline_layout,
            pipelines: HashMap::new(),
            dummy_cull_params,
            dummy_visible,
            dummy_draw_args,
            owned,
        })
    }

    /// The decoder's settings.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    fn compute_pipeline(
        &mut self,
        entry: &'static str,
        fade: bool,
        influences: u32,
    ) -> Result<vk::Pipeline, VulkanError> {
        let key = (entry, fade, if influences == 8 { 8 } else { 4 });
        if let Some(&p) = self.pipelines.get(&key) {
            return Ok(p);
        }
        let ep = entry_point(entry).ok_or(crate::shader::ShaderError::Write {
            entry,
            message: "not an entry point of vat.wgsl".to_owned(),
        })?;
        let variant =
            ShaderVariant { interpolation: self.config.interpolation, cross_fade: fade, influences: key.2 };
        let words = self.shader.spirv(ep, &variant)?;
        let device = &self.ctx.device;
        let mut scope = Owned::new(self.ctx);
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        // SAFETY: `words` is SPIR-V written by naga for this entry point.
        let module = unsafe { device.create_shader_module(&info, None) }
            .map_err(VulkanError::vk("create shader module"))?;
        scope.push(Object::ShaderModule(module));
        let name = CString::new(entry).map_err(|_| crate::shader::ShaderError::Write {
            entry,
            message: "entry point name contains NUL".to_owned(),
        })?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&name);
        let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(self.pipeline_layout)];
        // SAFETY: valid create info; module and layout are live.
        let pipeline = unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) }
            .map_err(|(_, e)| VulkanError::Vk { what: "create compute pipeline", result: e })?[0];
        self.owned.push(Object::Pipeline(pipeline));
        self.pipelines.insert(key, pipeline);
        Ok(pipeline) // `scope` destroys the shader module.
    }

    /// Uploads what the compute paths read of `asset`: the Packed64 animation texture and the bone
    /// texture (device-local images filled through a staging buffer), the clip table, the asset
    /// constants, joints, weights and rest vertices, and builds set 1. On error, everything created so
    /// far is destroyed and nothing is kept.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoVertexAnimation`], [`VulkanError::UnsupportedFormat`] (Packed64
    /// only), [`VulkanError::TextureTooLarge`], [`VulkanError::TextureData`],
    /// [`VulkanError::BufferTooLarge`], [`VulkanError::Vk`], [`VulkanError::NoMemoryType`].
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset<'a>, VulkanError> {
        let m = asset.manifest();
        let va = m.vertex_animation.as_ref().ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        if va.format != VertexFormat::Packed64 {
            return Err(VulkanError::UnsupportedFormat(va.format));
        }
        let constants = AssetConstants::from_manifest(m).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let limits = &self.ctx.properties.limits;
        let max_dim = limits.max_image_dimension2_d;
        let check_texture = |what, width: u32, height: u32| {
            if width > max_dim || height > max_dim {
                Err(VulkanError::TextureTooLarge { what, width, height, limit: max_dim })
            } else {
                Ok(())
            }
        };
        check_texture("vertex animation", va.layout.width, va.layout.height)?;
        if let Some(b) = &m.bone_animation {
            check_texture("bone", b.layout.width, b.layout.height)?;
        }
        let rest = gpu::rest_vertices(asset);
        let storage_limit = u64::from(limits.max_storage_buffer_range);
        let check_buffer = |what, size: usize| {
            let size = size as u64;
            if size > storage_limit {
                Err(VulkanError::BufferTooLarge { what, size, limit: storage_limit })
            } else {
                Ok(())
            }
        };
        check_buffer("rest vertices", rest.len() * size_of::<gpu::RestVertex>())?;
        if let Some(b) = &m.bone_animation {
            check_buffer("joints", asset.blob(b.joints).len())?;
            check_buffer("weights", asset.blob(b.weights).len())?;
        }

        let mut owned = Owned::new(self.ctx);
        // Textures: (what, width, height, format, bytes).
        let vat_format = conv::map_texel_format(va.format.texel_formats()[0]);
        let zero_texel = [0u8; 16];
        let mut textures = vec![(
            "vertex animation",
            va.layout.width,
            va.layout.height,
            vat_format,
            asset.blob(va.textures[0]),
        )];
        let (joints, weights, influences) = match &m.bone_animation {
            Some(b) => {
                textures.push((
                    "bone",
                    b.layout.width,
                    b.layout.height,
                    vk::Format::R32G32B32A32_SFLOAT,
                    asset.blob(b.texture),
                ));
                (asset.blob(b.joints), asset.blob(b.weights), b.influences)
            }
            None => {
                textures.push(("bone (none)", 1, 1, vk::Format::R32G32B32A32_SFLOAT, &zero_texel[..]));
                (&[][..], &[][..], 0)
            }
        };
        let mut images = Vec::new();
        {
            let mut staging_scope = Owned::new(self.ctx);
            let mut copies = Vec::new();
            for &(what, width, height, format, bytes) in &textures {
                let texel = conv::format_texel_bytes(format).unwrap_or(4);
                let expected = u64::from(width) * u64::from(height) * u64::from(texel);
                if (bytes.len() as u64) < expected {
                    return Err(VulkanError::TextureData { what, expected, actual: bytes.len() as u64 });
                }
                let staging = staging_scope.buffer_init(
                    &bytes[..expected as usize],
                    0,
                    vk::BufferUsageFlags::TRANSFER_SRC,
                    "staging buffer",
                )?;
                let (image, view) = owned.image(width, height, format, "texture")?;
                images.push(view);
                copies.push((staging.buffer, image, width, height));
            }
            staging_scope.submit_and_wait(|device, cb| {
                for &(buffer, image, width, height) in &copies {
                    let to_dst = [vk::ImageMemoryBarrier::default()
                        .src_access_mask(vk::AccessFlags::empty())
                        .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                        .old_layout(vk::ImageLayout::UNDEFINED)
                        .new_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
                        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                        .image(image)
                        .subresource_range(color_range())];
                    let region = [vk::BufferImageCopy {
                        buffer_offset: 0,
                        buffer_row_length: 0,
                        buffer_image_height: 0,
                        image_subresource: vk::ImageSubresourceLayers {
                            aspect_mask: vk::ImageAspectFlags::COLOR,
                            mip_level: 0,
                            base_array_layer: 0,
                            layer_count: 1,
                        },
                        image_offset: vk::Offset3D::default(),
                        image_extent: vk::Extent3D { width, height, depth: 1 },
                    }];
                    let to_read = [vk::ImageMemoryBarrier::default()
                        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                        .dst_access_mask(vk::AccessFlags::SHADER_READ)
                        .old_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
                        .new_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
                        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                        .image(image)
                        .subresource_range(color_range())];
                    // SAFETY: recording into `cb`; the image and staging buffer are live, the copy
                    // covers the whole image and the staging buffer holds all its texels.
                    unsafe {
                        device.cmd_pipeline_barrier(
                            cb,
                            vk::PipelineStageFlags::TOP_OF_PIPE,
                            vk::PipelineStageFlags::TRANSFER,
                            vk::DependencyFlags::empty(),
                            &[],
                            &[],
                            &to_dst,
                        );
                        device.cmd_copy_buffer_to_image(
                            cb,
                            buffer,
                            image,
                            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                            &region,
                        );
                        device.cmd_pipeline_barrier(
                            cb,
                            vk::PipelineStageFlags::TRANSFER,
                            vk::PipelineStageFlags::VERTEX_SHADER | vk::PipelineStageFlags::COMPUTE_SHADER,
                            vk::DependencyFlags::empty(),
                            &[],
                            &[],
                            &to_read,
                        );
                    }
                }
            })?;
        } // The staging buffers and the command buffer are destroyed here.
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let clips = gpu::clip_records(&m.clips);
        let clip_buf = owned.buffer_init(bytemuck::cast_slice(&clips), 32, storage, "clip table")?;
        let asset_buf = owned.buffer_init(
            bytemuck::bytes_of(&constants),
            0,
            vk::BufferUsageFlags::UNIFORM_BUFFER,
            "asset constants",
        )?;
        let joint_buf = owned.buffer_init(joints, 4, storage, "joints")?;
        let weight_buf = owned.buffer_init(weights, 4, storage, "weights")?;
        let rest_buf = owned.buffer_init(bytemuck::cast_slice(&rest), 32, storage, "rest vertices")?;
        let (vat_view, bone_view) = (images[0], images[1]);
        let set = descriptor_set(
            &mut owned,
            self.set_layouts[gpu::GROUP_ASSET as usize],
            gpu::GROUP_ASSET,
            |name| {
                Some(match name {
                    "vat_texture" => Resource::Image(vat_view),
                    "clips" => Resource::Buffer(clip_buf.buffer),
                    "asset" => Resource::Buffer(asset_buf.buffer),
                    "bone_texture" => Resource::Image(bone_view),
                    "joints" => Resource::Buffer(joint_buf.buffer),
                    "weights" => Resource::Buffer(weight_buf.buffer),
                    "rest_vertices" => Resource::Buffer(rest_buf.buffer),
                    _ => return None,
                })
            },
        )?;
        Ok(GpuAsset { _owned: owned, set, vertex_count: m.vertex_count, influences })
    }

    /// Decodes every vertex of `records` at epoch-relative `time` with `cs_decode` / `cs_decode_bone`
    /// and reads the result back: vertex `v` of record `i` at `i * vertex_count + v`. Waits for the
    /// device. `cross_fade: false` selects the plain variant (clip B ignored). The same contract as
    /// vat-wgpu's `Renderer::decode`; every object it creates is destroyed before it returns.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoBones`] for bone mode without bones, [`VulkanError::BufferTooLarge`],
    /// [`VulkanError::Vk`], [`VulkanError::NoMemoryType`], [`VulkanError::Shader`].
    pub fn decode(
        &mut self,
        asset: &GpuAsset<'_>,
        records: &[InstanceRecord],
        time: f32,
        mode: RenderMode,
        cross_fade: bool,
    ) -> Result<Vec<DecodedVertex>, VulkanError> {
        if mode == RenderMode::Bone && !asset.has_bones() {
            return Err(VulkanError::AssetHasNoBones);
        }
        let count = records.len() as u64 * u64::from(asset.vertex_count);
        let out_bytes = count * size_of::<DecodedVertex>() as u64;
        let limit = u64::from(self.ctx.properties.limits.max_storage_buffer_range);
        if out_bytes > limit {
            return Err(VulkanError::BufferTooLarge { what: "decoded vertex", size: out_bytes, limit });
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let entry = match mode {
            RenderMode::Vat => gpu::ENTRY_POINT_DECODE,
            RenderMode::Bone => gpu::ENTRY_POINT_DECODE_BONE,
        };
        let pipeline = self.compute_pipeline(entry, cross_fade, asset.influences)?;
        let mut scope = Owned::new(self.ctx);
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let frame = FrameUniforms { time, ..bytemuck::Zeroable::zeroed() };
        let frame_buf = scope.buffer_init(bytemuck::bytes_of(&frame), 0, uniform, "frame uniforms")?;
        let record_buf = scope.buffer_init(bytemuck::cast_slice(records), 64, storage, "instance records")?;
        let params = DecodeParams { first_instance: 0, instance_count: records.len() as u32, _pad: [0; 2] };
        let params_buf = scope.buffer_init(bytemuck::bytes_of(&params), 0, uniform, "decode params")?;
        let out = scope.buffer(out_bytes, storage, "decoded vertices")?;
        let frame_set =
            descriptor_set(&mut scope, self.set_layouts[gpu::GROUP_FRAME as usize], gpu::GROUP_FRAME, |n| {
                (n == "frame").then_some(Resource::Buffer(frame_buf.buffer))
            })?;
        let (cull, visible, draw_args) = (self.dummy_cull_params, self.dummy_visible, self.dummy_draw_args);
        let crowd_set =
            descriptor_set(&mut scope, self.set_layouts[gpu::GROUP_CROWD as usize], gpu::GROUP_CROWD, |n| {
                Some(Resource::Buffer(match n {
                    "instances" => record_buf.buffer,
                    "decode_params" => params_buf.buffer,
                    "decoded" => out.buffer,
                    "cull_params" => cull.buffer,
                    "visible" => visible.buffer,
                    "draw_args" => draw_args.buffer,
                    _ => return None,
                }))
            })?;
        let sets = [frame_set, asset.set, crowd_set];
        let layout = self.pipeline_layout;
        let (x, y) = workgroups(count, gpu::DECODE_WORKGROUP_SIZE);
        scope.submit_and_wait(|device, cb| {
            let to_host = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)];
            // SAFETY: recording into `cb`; pipeline, layout and sets are live and compatible (all from
            // the same set layouts).
            unsafe {
                device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
                device.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, &sets, &[]);
                device.cmd_dispatch(cb, x, y, 1);
                device.cmd_pipeline_barrier(
                    cb,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &to_host,
                    &[],
                    &[],
                );
            }
        })?;
        let bytes = scope.read(&out, out_bytes as usize)?;
        Ok(bytes.chunks_exact(size_of::<DecodedVertex>()).map(bytemuck::pod_read_unaligned).collect())
    }
}
