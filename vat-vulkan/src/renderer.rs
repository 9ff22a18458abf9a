//! The crowd renderer: the shared cache of one device (shader modules, layouts, pipelines, the
//! shadow map) and the frame entry point, [`Renderer::render`], which plans a frame of any number of
//! crowds with `vat_core::backend::frame::FramePlan` and carries the plan out (`encode.rs`); the Vulkan twin
//! of vat-wgpu's `renderer.rs`, with the same files beside it: `asset.rs`, `crowd.rs`,
//! `pipelines.rs`, `encode.rs`, `readback.rs`.
//!
//! Every descriptor-set layout comes from `vat_core::backend::gpu::BINDINGS` through [`crate::conv`], per
//! pipeline kind ([`StageSet`]): colour pipelines (vertex + fragment) see the shadow map, depth-only
//! shadow pipelines (vertex) do not, compute pipelines see the decode and culling outputs. Every
//! resource is bound by its WGSL name. Render pipelines use dynamic rendering (Vulkan 1.3) and the
//! viewport convention of wgpu-hal (negative height, `y = height`), so clip space is wgpu's (y up).

use std::collections::HashMap;
use std::rc::Rc;

use ash::vk;
use vat_core::backend::TargetFormats as _;
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::frame::{FrameState, HostPass};
use vat_core::backend::gpu::{self, CullParams, DecodeParams, DecodedVertex, FrameUniforms, ShaderStages};
use vat_core::backend::pipeline::{MATERIAL_SAMPLER, PipelineKey, SHADOW_SAMPLER};
use vat_core::backend::{RendererFrame, find_draws};
use vat_core::crowd::Camera;
use vat_core::render::{Culling, FrameReport, RenderOptions};

use crate::crowd::{GpuCrowd, VkHandles};
use crate::encode::Replay;
use crate::owned::{HostBuffer, Object, Owned, color_range};
use crate::pipelines::{CULL, ComputeKey, PassFormats, PrepassFormats};
use crate::shader::{ShaderModule, ShaderVariant};
use crate::{Context, DeviceError, Error, GpuAsset, conv};

/// One crowd of a frame on this backend: `vat_core::render::CrowdDraw` of [`GpuAsset`] and [`GpuCrowd`].
pub type CrowdDraw<'a> = vat_core::render::CrowdDraw<'a, GpuAsset, GpuCrowd>;

/// vat-vulkan's image formats ([`vat_core::backend::TargetFormats`]): `R8G8B8A8_SRGB` colour and
/// `D32_SFLOAT` depth by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Formats;

impl vat_core::backend::TargetFormats for Formats {
    type Format = vk::Format;
    const COLOR: vk::Format = vk::Format::R8G8B8A8_SRGB;
    const DEPTH: vk::Format = vk::Format::D32_SFLOAT;
}

/// How a [`Renderer`] is set up: the formats of the targets it renders into ([`RenderTarget`]'s
/// views) and its fixed variants; vat-core's one definition over Vulkan's formats.
pub type RendererConfig = vat_core::backend::RendererConfig<Formats>;

/// Where [`Renderer::render`] draws: views of the caller's colour and depth images (formats as in
/// [`RendererConfig`], one mip level and layer each) and their size in pixels.
///
/// On entry to the recorded commands the colour image (and the motion image, when drawn into) must
/// be in `COLOR_ATTACHMENT_OPTIMAL` and the depth image in `DEPTH_ATTACHMENT_OPTIMAL` (or
/// `DEPTH_STENCIL_ATTACHMENT_OPTIMAL` for a combined format, see [`RendererConfig::depth_format`](vat_core::backend::RendererConfig::depth_format));
/// they are cleared, and left in the same layouts.
#[derive(Debug, Clone, Copy)]
pub struct RenderTarget {
    /// Colour attachment, cleared to [`RenderOptions::clear_color`].
    pub color: vk::ImageView,
    /// Depth attachment, cleared to 1.
    pub depth: vk::ImageView,
    /// Motion-vector attachment and its format (cleared to 0), drawn into only when
    /// [`RenderOptions::motion_vectors`] is on, which needs one.
    pub motion: Option<(vk::ImageView, vk::Format)>,
    /// Width and height in pixels.
    pub size: [u32; 2],
}

/// The pipeline kinds, each with its own layouts (vat-core's).
pub(crate) use vat_core::backend::Stage as StageSet;

/// What a descriptor of a set is bound to.
#[derive(Clone, Copy)]
pub(crate) enum Resource {
    Buffer(vk::Buffer),
    Image(vk::ImageView),
    Sampler(vk::Sampler),
}

/// Renders crowds of uploaded assets with vat-core's shader on a [`Context`]'s device, recording
/// into a command buffer the caller owns; the Vulkan twin of vat-wgpu's `Renderer`. See the crate
/// docs for what it expects of the caller (layouts, synchronisation) and what state it changes.
///
/// The renderer is the cache shared by every asset and crowd of its device: shader modules,
/// layouts, pipelines (keyed by the pass's formats), the shadow map. Each crowd's GPU state is a
/// [`GpuCrowd`] ([`create_crowd`](Self::create_crowd)); each asset's a [`GpuAsset`]
/// ([`upload`](Self::upload)). Dropping it waits for the device to be idle, then destroys its
/// objects.
pub struct Renderer {
    pub(crate) ctx: Rc<Context>,
    pub(crate) config: RendererConfig,
    pub(crate) shader: ShaderModule,
    /// The host's fragment stage and its parsed module ([`Renderer::set_host_shader`]).
    pub(crate) host_shader: Option<(vat_core::backend::pipeline::HostShader, ShaderModule)>,
    /// `[stage set][group]`.
    pub(crate) set_layouts: Vec<Vec<vk::DescriptorSetLayout>>,
    /// Per stage set.
    pub(crate) pipeline_layouts: Vec<vk::PipelineLayout>,
    /// Set 0 alone (the ground).
    pub(crate) frame_only_layout: vk::PipelineLayout,
    pub(crate) render_pipelines: HashMap<(PipelineKey, PassFormats), vk::Pipeline>,
    pub(crate) compute_pipelines: HashMap<ComputeKey, vk::Pipeline>,
    /// The renderer's own set-0 uniforms (the ground of a frame without crowds), their sets, and
    /// the host's shadow map.
    pub(crate) own: RendererFrame<VkHandles>,
    pub(crate) shadow_image: vk::Image,
    pub(crate) shadow_size: u32,
    pub(crate) shadow_view: vk::ImageView,
    pub(crate) shadow_sampler: vk::Sampler,
    /// The material textures' sampler (group 1's `material_sampler`), shared by every asset.
    pub(crate) material_sampler: vk::Sampler,
    /// Stand-ins for the decode bindings in the culling set and the culling bindings in the decode
    /// set (one compute layout serves both entry points).
    pub(crate) dummy_decode_params: HostBuffer,
    pub(crate) dummy_decoded: HostBuffer,
    pub(crate) dummy_cull_params: HostBuffer,
    pub(crate) dummy_visible: HostBuffer,
    pub(crate) dummy_draw_args: HostBuffer,
    /// Set 3 (`cs_scatter`'s own), its pipeline layout (empty sets 0-2, then set 3) and pipeline.
    pub(crate) scatter_set_layout: vk::DescriptorSetLayout,
    pub(crate) scatter_pipeline_layout: vk::PipelineLayout,
    pub(crate) scatter_pipeline: vk::Pipeline,
    /// The frame plan, reused every frame.
    frame: FrameState,
    /// Layouts, pipelines, per-frame resources; destroyed last.
    pub(crate) owned: Owned,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("config", &self.config)
            .field("render_pipelines", &self.render_pipelines.len())
            .field("compute_pipelines", &self.compute_pipelines.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        // SAFETY: plain wait on a live device; submitted frames may still use the renderer's objects,
        // which its fields destroy next.
        let _ = unsafe { self.ctx.device.device_wait_idle() };
    }
}

/// The largest storage buffer the renderer may create and bind whole, bytes.
pub(crate) fn storage_limit(ctx: &Context) -> u64 {
    u64::from(ctx.properties.limits.max_storage_buffer_range)
}

/// Set 0 per stage set over a frame's uniforms and a host's shadow map, with the descriptor pools
/// they came from (destroyed with it).
pub struct HostFrameSets {
    pub(crate) sets: Vec<vk::DescriptorSet>,
    _owned: Owned,
}

impl AsRef<[vk::DescriptorSet]> for HostFrameSets {
    fn as_ref(&self) -> &[vk::DescriptorSet] {
        &self.sets
    }
}

/// Clears vat's shadow map `shadow_image` to depth 1 and leaves it in `SHADER_READ_ONLY_OPTIMAL`
/// (a submission on the context's queue, waited for): it is sampled before any shadow pass when
/// shadows are off.
fn clear_shadow_map(ctx: &Rc<Context>, shadow_image: vk::Image) -> Result<(), Error> {
    let mut scope = Owned::new(ctx);
    scope.submit_and_wait(|device, cb| {
        let range = vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::DEPTH, ..color_range() };
        let barrier = |old, new, src, dst| {
            [vk::ImageMemoryBarrier::default()
                .src_access_mask(src)
                .dst_access_mask(dst)
                .old_layout(old)
                .new_layout(new)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(shadow_image)
                .subresource_range(range)]
        };
        let to_dst = barrier(
            vk::ImageLayout::UNDEFINED,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::AccessFlags::empty(),
            vk::AccessFlags::TRANSFER_WRITE,
        );
        let to_read = barrier(
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            vk::AccessFlags::TRANSFER_WRITE,
            vk::AccessFlags::SHADER_READ,
        );
        // SAFETY: recording into `cb`; the image is live and has TRANSFER_DST usage.
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
            device.cmd_clear_depth_stencil_image(
                cb,
                shadow_image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                &[range],
            );
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::FRAGMENT_SHADER,
                vk::DependencyFlags::empty(),
                &[],
                &[],
                &to_read,
            );
        }
    })?;
    Ok(())
}

/// The set layouts of `cs_scatter`'s own pipeline layout (empty sets 0-2, then set 3) and that
/// layout, recorded in `owned`: set 3's layout and the pipeline layout.
fn scatter_layouts(
    device: &ash::Device,
    owned: &mut Owned,
) -> Result<(vk::DescriptorSetLayout, vk::PipelineLayout), Error> {
    // `cs_scatter` has a layout of its own: empty sets 0-2, then set 3.
    let scatter_bindings = conv::bind_group_layout_entries(gpu::GROUP_SCATTER, ShaderStages::COMPUTE);
    let mut scatter_layouts = Vec::new();
    for group in 0..=gpu::GROUP_SCATTER {
        let bindings = if group == gpu::GROUP_SCATTER { &scatter_bindings[..] } else { &[] };
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
        // SAFETY: valid create info on a live device.
        let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
            .map_err(DeviceError::vk("create descriptor set layout"))?;
        owned.push(Object::SetLayout(layout));
        scatter_layouts.push(layout);
    }
    let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&scatter_layouts);
    // SAFETY: valid create info; the set layouts are live.
    let scatter_pipeline_layout = unsafe { device.create_pipeline_layout(&info, None) }
        .map_err(DeviceError::vk("create pipeline layout"))?;
    owned.push(Object::PipelineLayout(scatter_pipeline_layout));
    Ok((scatter_layouts[gpu::GROUP_SCATTER as usize], scatter_pipeline_layout))
}

/// Set 0 per stage set over `frame`, the shadow map and its sampler; pools recorded in `owned`.
fn frame_sets_for(
    set_layouts: &[Vec<vk::DescriptorSetLayout>],
    owned: &mut Owned,
    frame: vk::Buffer,
    shadow_view: vk::ImageView,
    shadow_sampler: vk::Sampler,
) -> Result<Vec<vk::DescriptorSet>, Error> {
    let mut frame_sets = Vec::new();
    for set in StageSet::ALL {
        let layout = set_layouts[set as usize][gpu::GROUP_FRAME as usize];
        frame_sets.push(descriptor_set(owned, layout, gpu::GROUP_FRAME, set, |name| {
            Some(match name {
                "frame" => Resource::Buffer(frame),
                "shadow_map" => Resource::Image(shadow_view),
                "shadow_sampler" => Resource::Sampler(shadow_sampler),
                _ => return None,
            })
        })?);
    }
    Ok(frame_sets)
}

/// Creates a descriptor pool for one set of group `group` as seen by `set`'s stages, allocates the
/// set with `layout` and writes every binding from `resource` (looked up by WGSL name). The pool is
/// recorded in `owned`.
pub(crate) fn descriptor_set(
    owned: &mut Owned,
    layout: vk::DescriptorSetLayout,
    group: u32,
    set: StageSet,
    resource: impl Fn(&str) -> Option<Resource>,
) -> Result<vk::DescriptorSet, Error> {
    let bindings: Vec<&gpu::Binding> = gpu::bindings_for_stages(group, set.shader_stages(group)).collect();
    let mut resources = Vec::with_capacity(bindings.len());
    for b in &bindings {
        resources.push(resource(b.name).ok_or(DeviceError::UnboundBinding { name: b.name, group })?);
    }
    let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
    for b in &bindings {
        let ty = conv::map_binding_type(&b.kind);
        match sizes.iter_mut().find(|s| s.ty == ty) {
            Some(s) => s.descriptor_count += 1,
            None => sizes.push(vk::DescriptorPoolSize { ty, descriptor_count: 1 }),
        }
    }
    if sizes.is_empty() {
        // A set with no binding still needs a pool that allows one set.
        sizes.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: 1 });
    }
    let device = &owned.ctx.device;
    let info = vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes);
    // SAFETY: valid create info on a live device.
    let pool = unsafe { device.create_descriptor_pool(&info, None) }
        .map_err(DeviceError::vk("create descriptor pool"))?;
    owned.push(Object::DescriptorPool(pool));
    let device = &owned.ctx.device;
    let layouts = [layout];
    let alloc = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
    // SAFETY: the pool has room for exactly this set's descriptors.
    let descriptor_set = unsafe { device.allocate_descriptor_sets(&alloc) }
        .map_err(DeviceError::vk("allocate descriptor set"))?[0];
    let infos: Vec<(vk::DescriptorBufferInfo, vk::DescriptorImageInfo)> = resources
        .iter()
        .map(|r| match *r {
            Resource::Buffer(buffer) => (
                vk::DescriptorBufferInfo { buffer, offset: 0, range: vk::WHOLE_SIZE },
                vk::DescriptorImageInfo::default(),
            ),
            Resource::Image(view) => (
                vk::DescriptorBufferInfo::default(),
                vk::DescriptorImageInfo {
                    sampler: vk::Sampler::null(),
                    image_view: view,
                    image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                },
            ),
            Resource::Sampler(sampler) => (
                vk::DescriptorBufferInfo::default(),
                vk::DescriptorImageInfo {
                    sampler,
                    image_view: vk::ImageView::null(),
                    image_layout: vk::ImageLayout::UNDEFINED,
                },
            ),
        })
        .collect();
    let writes: Vec<vk::WriteDescriptorSet<'_>> = bindings
        .iter()
        .zip(&resources)
        .zip(&infos)
        .map(|((b, r), (buffer_info, image_info))| {
            let w = vk::WriteDescriptorSet::default()
                .dst_set(descriptor_set)
                .dst_binding(b.binding)
                .descriptor_type(conv::map_binding_type(&b.kind));
            match r {
                Resource::Buffer(_) => w.buffer_info(std::slice::from_ref(buffer_info)),
                Resource::Image(_) | Resource::Sampler(_) => w.image_info(std::slice::from_ref(image_info)),
            }
        })
        .collect();
    // SAFETY: every write targets a binding of the set's layout with its descriptor type and a live
    // resource.
    unsafe { device.update_descriptor_sets(&writes, &[]) };
    Ok(descriptor_set)
}

/// A global memory barrier.
///
/// # Safety
/// `cb` must be recording, outside dynamic rendering.
pub(crate) unsafe fn memory_barrier(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    src: (vk::PipelineStageFlags, vk::AccessFlags),
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let barrier = [vk::MemoryBarrier::default().src_access_mask(src.1).dst_access_mask(dst.1)];
    // SAFETY: the caller guarantees `cb` is recording outside a render pass.
    unsafe {
        device.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &barrier, &[], &[])
    };
}

/// The viewport wgpu-hal sets for drawing into `area`: y flipped by a negative height, so that clip
/// space y points up as in wgpu (and naga writes no coordinate adjustment).
pub fn flipped_viewport(area: vk::Rect2D) -> vk::Viewport {
    vk::Viewport {
        x: area.offset.x as f32,
        y: area.offset.y as f32 + area.extent.height as f32,
        width: area.extent.width as f32,
        height: -(area.extent.height as f32),
        min_depth: 0.0,
        max_depth: 1.0,
    }
}

/// The rectangle of a whole attachment of `size` pixels, at the origin.
pub fn full_rect(size: [u32; 2]) -> vk::Rect2D {
    vk::Rect2D {
        offset: vk::Offset2D { x: 0, y: 0 },
        extent: vk::Extent2D { width: size[0], height: size[1] },
    }
}

impl Renderer {
    /// Creates the layouts, the per-frame resources (uniforms, shadow map, sampler) and the culling
    /// pipeline; render and decode pipelines are created on first use (each variant once). Clears
    /// the shadow map once and leaves it in `SHADER_READ_ONLY_OPTIMAL` (a submission on the
    /// context's queue, waited for).
    ///
    /// # Errors
    /// [`Error::LimitTooLow`] if the device's descriptor limits are below what vat binds
    /// ([`crate::DeviceRequirements::check_limits`]),
    /// [`DeviceError::Shader`](crate::DeviceError::Shader), [`DeviceError::Vk`](crate::DeviceError::Vk), [`DeviceError::NoMemoryType`](crate::DeviceError::NoMemoryType).
    pub fn new(ctx: &Rc<Context>, config: RendererConfig) -> Result<Self, Error> {
        let limits = &ctx.properties.limits;
        crate::DeviceRequirements::check_limits(limits)?;
        let shader = ShaderModule::new()?;
        let mut owned = Owned::new(ctx);
        let device = &ctx.device;
        let mut set_layouts = Vec::new();
        let mut pipeline_layouts = Vec::new();
        for set in StageSet::ALL {
            let mut layouts = Vec::new();
            for group in 0..gpu::group_count() {
                let bindings = conv::bind_group_layout_entries(group, set.shader_stages(group));
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                // SAFETY: valid create info on a live device.
                let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
                    .map_err(DeviceError::vk("create descriptor set layout"))?;
                owned.push(Object::SetLayout(layout));
                layouts.push(layout);
            }
            let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
            // SAFETY: valid create info; the set layouts are live.
            let layout = unsafe { device.create_pipeline_layout(&info, None) }
                .map_err(DeviceError::vk("create pipeline layout"))?;
            owned.push(Object::PipelineLayout(layout));
            pipeline_layouts.push(layout);
            set_layouts.push(layouts);
        }
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let frame_buffer = owned.buffer(size_of::<FrameUniforms>() as u64, uniform, "frame uniforms")?;
        let shadow_size = config.shadow_map_size.clamp(1, limits.max_image_dimension2_d);
        let (shadow_image, shadow_view) = owned.layer_array_image_with(
            shadow_size,
            shadow_size,
            Formats::SHADOW,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
                | vk::ImageUsageFlags::SAMPLED
                | vk::ImageUsageFlags::TRANSFER_DST,
            vk::ImageAspectFlags::DEPTH,
            "shadow map",
        )?;
        let sampler_info = conv::map_sampler(&SHADOW_SAMPLER);
        // SAFETY: valid create info on a live device.
        let shadow_sampler = unsafe { device.create_sampler(&sampler_info, None) }
            .map_err(DeviceError::vk("create sampler"))?;
        owned.push(Object::Sampler(shadow_sampler));
        let sampler_info = conv::map_sampler(&MATERIAL_SAMPLER);
        // SAFETY: valid create info on a live device.
        let material_sampler = unsafe { device.create_sampler(&sampler_info, None) }
            .map_err(DeviceError::vk("create sampler"))?;
        owned.push(Object::Sampler(material_sampler));
        let dummy_decode_params = owned.buffer(size_of::<DecodeParams>() as u64, uniform, "dummy buffer")?;
        let dummy_decoded = owned.buffer(size_of::<DecodedVertex>() as u64, storage, "dummy buffer")?;
        let dummy_cull_params = owned.buffer(size_of::<CullParams>() as u64, uniform, "dummy buffer")?;
        let dummy_visible = owned.buffer(4, storage, "dummy buffer")?;
        let dummy_draw_args = owned.buffer(gpu::DRAW_ARGS_BYTES, storage, "dummy buffer")?;
        let frame_sets =
            frame_sets_for(&set_layouts, &mut owned, frame_buffer.buffer, shadow_view, shadow_sampler)?;
        let frame_only_info = vk::PipelineLayoutCreateInfo::default().set_layouts(std::slice::from_ref(
            &set_layouts[StageSet::Colour as usize][gpu::GROUP_FRAME as usize],
        ));
        // SAFETY: valid create info; the set layout is live.
        let frame_only_layout = unsafe { device.create_pipeline_layout(&frame_only_info, None) }
            .map_err(DeviceError::vk("create pipeline layout"))?;
        owned.push(Object::PipelineLayout(frame_only_layout));
        // Clear the shadow map once: sampled before any shadow pass when shadows are off.
        clear_shadow_map(ctx, shadow_image)?;
        let (scatter_set_layout, scatter_pipeline_layout) = scatter_layouts(device, &mut owned)?;
        let mut renderer = Self {
            ctx: Rc::clone(ctx),
            config,
            shader,
            host_shader: None,
            set_layouts,
            pipeline_layouts,
            render_pipelines: HashMap::new(),
            compute_pipelines: HashMap::new(),
            own: RendererFrame::new(frame_buffer, frame_sets),
            shadow_image,
            shadow_size,
            shadow_view,
            shadow_sampler,
            material_sampler,
            frame_only_layout,
            dummy_decode_params,
            dummy_decoded,
            dummy_cull_params,
            dummy_visible,
            dummy_draw_args,
            scatter_set_layout,
            scatter_pipeline_layout,
            scatter_pipeline: vk::Pipeline::null(),
            frame: FrameState::default(),
            owned,
        };
        renderer.scatter_pipeline = renderer.create_compute_pipeline(
            gpu::ENTRY_POINT_SCATTER,
            &ShaderVariant::default(),
            scatter_pipeline_layout,
        )?;
        renderer.compute_pipeline(CULL)?;
        Ok(renderer)
    }

    /// The configuration the renderer was created with.
    pub fn config(&self) -> &RendererConfig {
        &self.config
    }

    /// The context the renderer was created on.
    pub fn context(&self) -> &Rc<Context> {
        &self.ctx
    }

    /// Set 0 per stage set over `frame` (a crowd's uniforms); pools recorded in `owned`.
    pub(crate) fn frame_sets_for(
        &self,
        owned: &mut Owned,
        frame: vk::Buffer,
    ) -> Result<Vec<vk::DescriptorSet>, Error> {
        frame_sets_for(&self.set_layouts, owned, frame, self.shadow_view, self.shadow_sampler)
    }

    /// Set 0 per stage set over `frame` and the host's shadow map `view`, with pools of their own.
    pub(crate) fn host_frame_sets_for(
        &self,
        frame: vk::Buffer,
        view: vk::ImageView,
    ) -> Result<HostFrameSets, Error> {
        let mut owned = Owned::new(&self.ctx);
        let sets = frame_sets_for(&self.set_layouts, &mut owned, frame, view, self.shadow_sampler)?;
        Ok(HostFrameSets { sets, _owned: owned })
    }

    /// Releases `old` host-map sets once no submitted frame can read them: waits for the device to
    /// be idle (a host drawing with more than `HOST_SHADOW_MAPS_KEPT` maps stalls here once per
    /// change).
    pub(crate) fn release_host_frame_sets(&self, old: HostFrameSets) {
        // SAFETY: plain wait on a live device, before `old`'s pools are destroyed.
        let _ = unsafe { self.ctx.device.device_wait_idle() };
        drop(old);
    }

    /// vat's built-in sun shadow map's view (`D32_SFLOAT`, sampled; 1 x 1 when
    /// `RendererConfig::shadow_map_size` is 0), in `SHADER_READ_ONLY_OPTIMAL` outside vat's shadow
    /// pass. After a [`prepare`](Self::prepare) whose report has `shadow_view_proj`, it holds that
    /// frame's casters for commands recorded after `prepare`'s (which end with a barrier making the
    /// depth writes visible to fragment-shader reads): a one-layer `TYPE_2D_ARRAY` view. Bind it as
    /// a `texture_depth_2d_array` with a comparison sampler of
    /// `vat_core::backend::pipeline::SHADOW_SAMPLER`'s state and look it up with
    /// `vat_core::backend::gpu::SHADOW_WGSL`'s `vat_shadow_lookup` and
    /// `ShadowLookup::built_in(report.shadow_view_proj, scene_unit).uniforms()` to shadow the host's
    /// own surfaces exactly as the crowd is shadowed. Owned by the renderer.
    pub fn shadow_map_view(&self) -> vk::ImageView {
        self.shadow_view
    }

    /// Gives the renderer the host's shadow map, sampled by the colour draws of frames whose
    /// `RenderOptions::shadow_map` is `ShadowMapSource::Host` (with that lookup's matrix, bias and
    /// strength; `None` forgets it). `view` must be a `TYPE_2D_ARRAY` view (aspect depth) of a
    /// depth-format image (`D32_SFLOAT`, `D16_UNORM`, ...) made with `SAMPLED` usage: one layer for a
    /// single map, the cascades' layers for a cascaded one (`ShadowLookup::cascaded`), in
    /// `SHADER_READ_ONLY_OPTIMAL` layout whenever a command buffer recorded by
    /// [`draw`](Self::draw) executes, and alive until those command buffers finish. It is sampled
    /// through vat's comparison sampler (`LESS_OR_EQUAL`, linear: 2 x 2 PCF; reverse-Z maps through
    /// its exact complement); its conventions are
    /// `vat_core::backend::gpu::ShadowLookup`'s. The host renders it before the colour rendering that
    /// samples it, typically with [`draw_depth`](Self::draw_depth) of the same frame for the crowd's
    /// own shadows, then transitions it (depth writes before fragment-shader reads). A host that
    /// cycles through several maps calls this every frame; each crowd keeps descriptor sets over
    /// `vat_core::backend::frame::HOST_SHADOW_MAPS_KEPT` of them (a further map waits for the device to be
    /// idle once before releasing the least recently used).
    pub fn set_host_shadow_map(&mut self, view: Option<vk::ImageView>) {
        self.own.host_shadow = view;
    }

    /// The formats of the rendering [`render`](Self::render) begins: the config's colour and depth
    /// formats, one sample. Give them to [`draw`](Self::draw) for host rendering of the same kind.
    pub fn pass_formats(&self) -> PassFormats {
        self.config.pass_formats()
    }

    /// Records everything of one frame of `crowds` (any number, of any assets uploaded to this
    /// renderer) seen by `camera`, and of the host's extra depth `views` (world-to-clip matrices,
    /// column-major, depth 0..1, each drawn by [`draw_depth`](Self::draw_depth); `&[]` for none),
    /// that comes before the host's rendering into the host's command buffer `cb`: plans the frame (`vat_core::backend::frame::FramePlan::plan`), then records the writes of
    /// each crowd's changed records, list entries and uniforms (`vkCmdUpdateBuffer`), the scatter and
    /// culling dispatches (GPU culling: the camera's and one per extra view) and, when shadows are
    /// drawn, the built-in shadow pass into the renderer's
    /// own shadow map, with their barriers (the last one makes the culling outputs and the shadow map
    /// visible to the vertex, fragment and indirect stages of later commands). Then record
    /// [`draw`](Self::draw) of the same `crowds` inside rendering the host begins later in `cb` (or
    /// in a command buffer submitted after it on the same queue).
    ///
    /// **State expected:** `cb` primary, recording, of a queue family with graphics and compute,
    /// **outside** any rendering (`vkCmdBeginRendering`) or render pass. **State left:** no
    /// rendering open; the compute pipeline and compute descriptor sets bound by the dispatches, and
    /// the graphics pipeline, sets 0-2, index buffer, viewport and scissor of the shadow pass, are
    /// left changed (rebind yours). Submit `cb` before recording the next frame of this renderer
    /// into another command buffer (frames share the shadow map), and submit every command buffer it
    /// recorded into (or call [`GpuCrowd::mark_unsynced`] on its crowds).
    /// [`RenderOptions::clear_color`] is not used (only [`render`](Self::render) clears).
    ///
    /// Everything that can fail (pipeline creation, buffer growth) happens before anything is
    /// recorded: on error, `cb` is left as it was, every crowd is uploaded whole at its next frame,
    /// and [`draw`](Self::draw) draws nothing until the next successful `prepare`.
    ///
    /// # Errors
    /// [`Error::AssetHasNoBones`] for bone mode on an asset without bones;
    /// a [`vat_core::backend::frame::PlanError::BufferTooLarge`] if a crowd outgrows the device's storage buffer range;
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`DeviceError::Shader`](crate::DeviceError::Shader) if a pipeline cannot be created.
    ///
    /// # Panics
    /// If a [`GpuCrowd`] is paired with a crowd it was not made for.
    pub fn prepare(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        options: &RenderOptions,
        views: &[[[f32; 4]; 4]],
    ) -> Result<FrameReport, Error> {
        // A copy: the replay borrows the renderer.
        let host_shader = self.host_shader.as_ref().map(|(h, _)| h.clone());
        let checks = self.own.prechecks(&self.config, host_shader.as_ref());
        let mut frame = std::mem::take(&mut self.frame);
        let report = frame.prepare(&mut Replay::new(self, cb), checks, crowds, camera, options, views);
        self.frame = frame;
        report
    }

    /// The counts of every crowd's read-back ring that arrived (events checked without waiting),
    /// then a new frame of each ring, and with GPU culling a slot for this frame's copy (none when
    /// every slot is in flight).
    pub(crate) fn begin_counts(&self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), Error> {
        for d in crowds.iter_mut() {
            let counts = &mut d.gpu.counts;
            crate::crowd::collect(counts)?;
            if culling == Culling::Gpu {
                crate::crowd::ensure_slots(counts, &self.ctx)?;
            }
            counts.ring.start_frame(culling == Culling::Gpu);
        }
        Ok(())
    }

    /// The GPU culling's counts of `crowd`'s newest frame whose read-back has arrived, checked
    /// **without waiting** (`vkGetEventStatus`), and how many of the crowd's frames late they are
    /// (0: its last prepared frame, once the host has waited for it); `None` before any. See
    /// `vat_core::backend::frame::gpu_counts` for what is counted; each frame's [`FrameReport`] carries the
    /// counts known when it was prepared.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`Error::DeviceLost`] from the event query or the read.
    pub fn gpu_counts(&self, crowd: &mut GpuCrowd) -> Result<Option<GpuCountsResult>, Error> {
        crate::crowd::collect(&mut crowd.counts)?;
        Ok(crowd.counts.ring.latest())
    }

    /// Records the colour draws of the last [`prepare`](Self::prepare)d frame (the ground first when
    /// [`RenderOptions::ground`] is on, then every crowd's bodies and attachments, lit and shadowed
    /// by vat's `fs_lit`) into `cb`, **inside** dynamic rendering the host began
    /// (`vkCmdBeginRendering`) over one colour attachment (location 0) and a depth attachment of
    /// `formats`, drawing into `area` of them. The graphics pipelines are created for `formats` on
    /// first use, before anything is recorded. `crowds` must be those given to `prepare`, in the
    /// same order.
    ///
    /// **State expected:** rendering begun by the host with any load ops (nothing is cleared: the
    /// host's colour and depth are kept; vat's draws test `LESS` against the host's depth and write
    /// depth). **State left:** the viewport is set to [`flipped_viewport`]`(area)` (vat's clip space
    /// is wgpu's, y up, by wgpu-hal's negative-height viewport) and the scissor to `area`; the last
    /// vat graphics pipeline, descriptor sets 0-2 and vat's index buffer (`UINT32`) stay bound;
    /// rendering stays open (the host ends it). Rebind your pipeline, sets, buffers, viewport and
    /// scissor before your next draw. Draws nothing after a failed `prepare`.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`DeviceError::Shader`](crate::DeviceError::Shader) if a pipeline cannot be created (nothing is
    /// recorded then).
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, in the same order.
    pub fn draw(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &[CrowdDraw<'_>],
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), Error> {
        self.draw_host_pass(cb, crowds, HostPass::Colour { motion: formats.motion.is_some() }, formats, area)
    }

    /// Records the prepared frame's draws of `host` into `cb`, inside the host's rendering of
    /// `formats`, drawing into `area`: pipelines and resources are found before anything is
    /// recorded (nothing after a failed `prepare`).
    ///
    /// # Errors
    /// Those of creating a pipeline; a resource not found.
    ///
    /// # Panics
    /// Those of `FrameState::draws`.
    fn draw_host_pass(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &[CrowdDraw<'_>],
        host: HostPass,
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), Error> {
        let frame = std::mem::take(&mut self.frame);
        let (set, view) = match host {
            HostPass::Depth { view, .. } => (StageSet::Depth, Some(view)),
            _ => (StageSet::Colour, None),
        };
        let result = match frame.draws(crowds.iter().map(|d| d.crowd.id()), host) {
            Some(draws) => self.pipelines_for(&draws, formats).and_then(|pipelines| {
                let found = find_draws(crowds, &self.own, (set, view), &draws, &pipelines)?;
                self.record_draws(cb, set, area, &found);
                Ok(())
            }),
            None => {
                self.record_draws(cb, set, area, &[]);
                Ok(())
            }
        };
        self.frame = frame;
        result
    }

    /// Whether the last successful [`prepare`](Self::prepare) planned motion vectors
    /// ([`RenderOptions::motion_vectors`]): only then may [`draw`](Self::draw) or
    /// [`draw_prepass`](Self::draw_prepass) be given a pass with a motion attachment. `false` after
    /// a failed `prepare`.
    pub fn motion_vectors_prepared(&self) -> bool {
        self.frame.motion_vectors_prepared()
    }

    /// Records the prepass draws of the last [`prepare`](Self::prepare)d frame into `cb`, **inside**
    /// dynamic rendering the host began for its prepass of the camera, drawing into `area`: the
    /// colour draws' instances, LODs and cross-fades (the ground first when
    /// [`RenderOptions::ground`] is on, then every crowd's bodies and attachments, culled as
    /// [`draw`](Self::draw) culls them), each with the colour pass's vertex stage (the same
    /// positions and [`RenderOptions::jitter`]) and a prepass fragment stage writing what `formats`
    /// has: the unit world normal as `vec4(n * 0.5 + 0.5, 1)` at location 0, the motion as
    /// `vec4(motion, 0, 0)` at location 1, with `fs_lit`'s discards, so the depth it writes is the
    /// depth `draw` writes (no bias). The later colour pass then draws the same fragments with an
    /// `OR_EQUAL` test. The twin of vat-wgpu's `Renderer::draw_prepass`; a host shader's stages are
    /// not used here.
    ///
    /// **State expected:** rendering whose colour attachments are
    /// `vat_core::backend::pipeline::colour_slots(formats.normal, formats.motion)` (a motion-only prepass has
    /// a null image view at location 0) and a depth attachment of `formats.depth`, any load ops.
    /// **State left:** as [`draw`](Self::draw). Draws nothing after a failed `prepare`.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`DeviceError::Shader`](crate::DeviceError::Shader) if a pipeline cannot be created (nothing is
    /// recorded then).
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, in the same order, or
    /// `formats.motion` is set and the frame was prepared without
    /// [`RenderOptions::motion_vectors`].
    pub fn draw_prepass(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &[CrowdDraw<'_>],
        formats: PrepassFormats,
        area: vk::Rect2D,
    ) -> Result<(), Error> {
        self.draw_host_pass(cb, crowds, HostPass::Prepass(formats.targets()), formats.pass_formats(), area)
    }

    /// Records the depth-only draws of extra view `view` (an index into the `views` given to the last
    /// [`prepare`](Self::prepare): the host's shadow cascade, spot light or depth pre-pass) into
    /// `cb`, **inside** depth-only dynamic rendering the host began with a depth attachment of
    /// `formats.depth` (`formats.color` must be `None`: vat's depth pipelines have no fragment
    /// stage), drawing into `area`. The draws are bodies and attachments as the camera's colour
    /// draws (same LODs and cross-fades; no ground), projected by the view's matrix, depth test
    /// `LESS` with writes and the shadow depth bias (`vat_core::backend::pipeline::SHADOW_DEPTH_BIAS`). The
    /// instances are culled for the view itself (CPU culling: `Crowd::cull_view`; GPU culling: a
    /// culling dispatch of `prepare` into the view's own lists), so a view reaching beyond the
    /// camera's frustum gets the casters there.
    ///
    /// **State expected and left:** as [`draw`](Self::draw): nothing is cleared; the viewport is set
    /// to [`flipped_viewport`]`(area)` and the scissor to `area`; vat's last pipeline, sets 0-2 and
    /// index buffer stay bound; rendering stays open. Draws nothing after a failed `prepare`.
    ///
    /// # Errors
    /// [`DeviceError::Vk`](crate::DeviceError::Vk) or [`DeviceError::Shader`](crate::DeviceError::Shader) if a pipeline cannot be created (nothing is
    /// recorded then).
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, `view` is not an index into
    /// its `views`, or `formats.color` is not `None`.
    pub fn draw_depth(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &[CrowdDraw<'_>],
        view: usize,
        formats: PassFormats,
        area: vk::Rect2D,
    ) -> Result<(), Error> {
        self.draw_host_pass(
            cb,
            crowds,
            HostPass::Depth { view, colour: formats.color.is_some() },
            formats,
            area,
        )
    }

    /// Records one frame of `crowds` seen by `camera` into the caller's command buffer `cb`
    /// (recording, primary, outside any render pass), clearing `target`: the convenience built from
    /// the embeddable calls, [`prepare`](Self::prepare), a barrier ordering this frame's attachment
    /// writes after earlier ones, then rendering it begins itself over `target` (colour cleared to
    /// [`RenderOptions::clear_color`], depth to 1, both stored) with [`draw`](Self::draw) of
    /// [`pass_formats`](Self::pass_formats) over the whole target inside, ended before it returns.
    ///
    /// Everything that can fail (pipeline creation, buffer growth) happens before anything is
    /// recorded by `prepare`; a colour pipeline that cannot be created fails after it (`cb` then
    /// holds the prepare part and an empty colour pass). See the crate docs for the state it changes
    /// (bound pipelines, descriptor sets, index buffer, viewport and scissor) and the layouts it
    /// expects of `target`.
    ///
    /// # Errors
    /// Those of [`prepare`](Self::prepare) and [`draw`](Self::draw); [`Error::EmptyTarget`]
    /// for a target of size zero.
    ///
    /// # Panics
    /// If a [`GpuCrowd`] is paired with a crowd it was not made for.
    pub fn render(
        &mut self,
        cb: vk::CommandBuffer,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        target: RenderTarget,
        options: &RenderOptions,
    ) -> Result<FrameReport, Error> {
        if target.size[0] == 0 || target.size[1] == 0 {
            return Err(Error::EmptyTarget);
        }
        let motion =
            if options.motion_vectors { Some(target.motion.ok_or(Error::NoMotionTarget)?) } else { None };
        let report = self.prepare(cb, crowds, camera, options, &[])?;
        let d = &self.ctx.device;
        let output = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
            | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
            | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
        let attachment_rw = vk::AccessFlags::COLOR_ATTACHMENT_READ
            | vk::AccessFlags::COLOR_ATTACHMENT_WRITE
            | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
            | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
        // SAFETY: `cb` is recording outside any render pass (the caller's contract; `prepare` leaves
        // no rendering open): orders this frame's attachment writes after the previous frame's.
        unsafe {
            memory_barrier(
                d,
                cb,
                (
                    output,
                    vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (output, attachment_rw),
            );
        }
        let [r, g, b, a] = options.clear_color;
        let attachment = |view, clear| {
            vk::RenderingAttachmentInfo::default()
                .image_view(view)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: clear } })
        };
        let mut color_attachment = vec![attachment(target.color, [r as f32, g as f32, b as f32, a as f32])];
        color_attachment.extend(motion.map(|(view, _)| attachment(view, [0.0; 4])));
        let depth_attachment = vk::RenderingAttachmentInfo::default()
            .image_view(target.depth)
            .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue {
                depth_stencil: vk::ClearDepthStencilValue {
                    depth: self.config.conventions.clear_depth(),
                    stencil: 0,
                },
            });
        let area = full_rect(target.size);
        let info = vk::RenderingInfo::default()
            .render_area(area)
            .layer_count(1)
            .color_attachments(&color_attachment)
            .depth_attachment(&depth_attachment);
        // SAFETY: outside any render pass; the caller guarantees the layouts given.
        unsafe { d.cmd_begin_rendering(cb, &info) };
        let formats = PassFormats { motion: motion.map(|(_, format)| format), ..self.pass_formats() };
        let drawn = self.draw(cb, crowds, formats, area);
        // SAFETY: ends the rendering begun above (also when no draw was recorded).
        unsafe { self.ctx.device.cmd_end_rendering(cb) };
        drawn.map(|()| report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_viewport_flips_y_like_wgpu_hal() {
        let v = flipped_viewport(full_rect([320, 240]));
        assert_eq!((v.y, v.height), (240.0, -240.0));
    }

    #[test]
    fn workgroups_split_at_65535() {
        assert_eq!(vat_core::backend::frame::workgroups(64, 64), [1, 1]);
        assert_eq!(vat_core::backend::frame::workgroups(65536 * 64, 64), [65535, 2]);
    }
}
