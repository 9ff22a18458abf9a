//! The crowd renderer: resources, pipelines and passes; the Vulkan twin of vat-wgpu's `renderer.rs`,
//! in the same order and with the same names.
//!
//! Every descriptor-set layout comes from `vat_core::gpu::BINDINGS` through [`crate::conv`], per
//! pipeline kind ([`StageSet`]): colour pipelines (vertex + fragment) see the shadow map, depth-only
//! shadow pipelines (vertex) do not, compute pipelines see the decode and culling outputs. Every
//! resource is bound by its WGSL name. Render pipelines use dynamic rendering (Vulkan 1.3) and the
//! viewport convention of wgpu-hal (negative height, `y = height`), so clip space is wgpu's (y up).

use std::collections::HashMap;
use std::ffi::CString;
use std::rc::Rc;

use ash::vk;
use vat_core::container::{Asset, Lod};
use vat_core::crowd::{Camera, Crowd, CrowdStats, DrawBatch, FrameDraws, Frustum};
use vat_core::encoding::VertexFormat;
use vat_core::gpu::{
    self, AssetConstants, AttachmentMesh, CullParams, DecodeParams, DecodedVertex, FrameInputs,
    FrameUniforms, ScatterPlan, ShaderStages,
};
use vat_core::instance::InstanceRecord;
use vat_core::lod::MAX_LODS;
use vat_core::playback::Interpolation;
use vat_core::render::{Culling, FrameReport, RenderMode, RenderOptions};

use crate::owned::{HostBuffer, Object, Owned, color_range};
use crate::shader::{ShaderModule, ShaderVariant, entry_point};
use crate::{Context, VulkanError, conv};

/// Smallest record capacity of the per-crowd buffers (records).
const MIN_CAPACITY: u32 = 64;
/// Smallest capacity of the scatter buffers (records).
const MIN_SCATTER_CAPACITY: u32 = 256;
/// Bytes of one indexed-indirect draw.
const DRAW_ARGS_STRIDE: u64 = gpu::DRAW_ARGS_WORDS as u64 * 4;
/// Format of the shadow map (wgpu's `Depth32Float`).
const SHADOW_FORMAT: vk::Format = vk::Format::D32_SFLOAT;
/// Most bytes one `vkCmdUpdateBuffer` may write.
const UPDATE_CHUNK: usize = 65536;
// `vkCmdUpdateBuffer` writes whole words.
const _: () = assert!(size_of::<FrameUniforms>().is_multiple_of(4));

/// How a [`Renderer`] is set up: the formats of the targets it renders into and its fixed variants
/// (vat-wgpu's `RendererConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RendererConfig {
    /// Format of [`RenderTarget::color`] (e.g. `R8G8B8A8_SRGB`, or the swapchain's format).
    pub color_format: vk::Format,
    /// Format of [`RenderTarget::depth`] (e.g. `D32_SFLOAT`).
    pub depth_format: vk::Format,
    /// Side of the square shadow map in texels (e.g. 2048); at least 1.
    pub shadow_map_size: u32,
    /// Frame interpolation of every pipeline (the `INTERPOLATION` override): linear by default.
    pub interpolation: Interpolation,
}

impl Default for RendererConfig {
    /// `R8G8B8A8_SRGB` colour, `D32_SFLOAT` depth, a 2048² shadow map, linear interpolation.
    fn default() -> Self {
        Self {
            color_format: vk::Format::R8G8B8A8_SRGB,
            depth_format: vk::Format::D32_SFLOAT,
            shadow_map_size: 2048,
            interpolation: Interpolation::Linear,
        }
    }
}

/// Where [`Renderer::render`] draws: views of the caller's colour and depth images (formats as in
/// [`RendererConfig`], one mip level and layer each) and their size in pixels.
///
/// On entry to the recorded commands the colour image must be in `COLOR_ATTACHMENT_OPTIMAL` and the
/// depth image in `DEPTH_ATTACHMENT_OPTIMAL` (or `DEPTH_STENCIL_ATTACHMENT_OPTIMAL` for a combined
/// format, see [`RendererConfig::depth_format`]); both are cleared, and left in the same layouts.
#[derive(Debug, Clone, Copy)]
pub struct RenderTarget {
    /// Colour attachment, cleared to [`RenderOptions::clear_color`].
    pub color: vk::ImageView,
    /// Depth attachment, cleared to 1.
    pub depth: vk::ImageView,
    /// Width and height in pixels.
    pub size: [u32; 2],
}

/// The pipeline kinds, each with its own layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum StageSet {
    /// Colour pipelines: vertex + fragment.
    Colour = 0,
    /// Depth-only shadow pipelines: vertex.
    Depth = 1,
    /// Compute pipelines.
    Compute = 2,
}

impl StageSet {
    const ALL: [StageSet; 3] = [StageSet::Colour, StageSet::Depth, StageSet::Compute];

    fn stages(self) -> ShaderStages {
        match self {
            StageSet::Colour => ShaderStages::VERTEX_FRAGMENT,
            StageSet::Depth => ShaderStages::VERTEX,
            StageSet::Compute => ShaderStages::COMPUTE,
        }
    }
}

/// What a render pipeline draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Draw {
    Body(RenderMode),
    Attachment,
    Ground,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RenderKey {
    draw: Draw,
    depth_only: bool,
    fade: bool,
    influences: u32,
    /// The asset's vertex format ([`gpu::OVERRIDE_VERTEX_FORMAT`]).
    vertex_format: VertexFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ComputeKey {
    entry: &'static str,
    fade: bool,
    influences: u32,
    /// The asset's vertex format ([`gpu::OVERRIDE_VERTEX_FORMAT`]).
    vertex_format: VertexFormat,
}

/// What a descriptor of a set is bound to.
#[derive(Clone, Copy)]
enum Resource {
    Buffer(vk::Buffer),
    Image(vk::ImageView),
    Sampler(vk::Sampler),
}

/// A baked asset on the device: animation and bone textures, clip table, vertex streams, index buffer
/// (every LOD, then the attachments), attachment meshes and capture tracks, with their descriptor
/// sets (set 1 per pipeline kind). Keeps no CPU copy of the payload. Made by [`Renderer::upload`];
/// use it only with that renderer. Dropping it waits for the device to be idle, then destroys it.
pub struct GpuAsset {
    owned: Owned,
    id: u64,
    /// Set 1, per [`StageSet`].
    sets: Vec<vk::DescriptorSet>,
    index_buffer: vk::Buffer,
    lods: Vec<Lod>,
    attachment_first_index: u32,
    attachment_index_count: u32,
    vertex_count: u32,
    influences: u32,
    /// The vertex format of the animation textures (selects the decode variant).
    vertex_format: VertexFormat,
    gpu_bytes: u64,
}

impl std::fmt::Debug for GpuAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuAsset")
            .field("id", &self.id)
            .field("vertex_count", &self.vertex_count)
            .field("influences", &self.influences)
            .field("lods", &self.lods.len())
            .field("gpu_bytes", &self.gpu_bytes)
            .finish_non_exhaustive()
    }
}

impl Drop for GpuAsset {
    fn drop(&mut self) {
        // SAFETY: plain wait on a live device (the asset holds the context); submitted frames may
        // still read the asset's objects, which `owned` destroys next.
        let _ = unsafe { self.owned.ctx.device.device_wait_idle() };
    }
}

impl GpuAsset {
    /// Whether bone mode is available (the asset was baked with `--bones`).
    pub fn has_bones(&self) -> bool {
        self.influences > 0
    }

    /// Whether the asset has socket attachments.
    pub fn has_attachments(&self) -> bool {
        self.attachment_index_count > 0
    }

    /// Bone influences per vertex (4 or 8), 0 without bones.
    pub fn influences(&self) -> u32 {
        self.influences
    }

    /// LOD levels of the asset's index buffer.
    pub fn lod_count(&self) -> u32 {
        self.lods.len() as u32
    }

    /// The vertex format of its animation textures.
    pub fn vertex_format(&self) -> VertexFormat {
        self.vertex_format
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// Bytes of GPU memory its textures and buffers take.
    pub fn gpu_bytes(&self) -> u64 {
        self.gpu_bytes
    }
}

/// Per-crowd GPU state: the records (resident), the CPU path's instance list, and the GPU path's
/// visible lists and indirect draws.
struct CrowdBuffers {
    /// Records the record buffer holds; also the size of one LOD region of `visible`.
    capacity: u32,
    records: HostBuffer,
    list_capacity: u32,
    list: HostBuffer,
    visible: HostBuffer,
    draw_args: HostBuffer,
    args_template: HostBuffer,
    /// (asset id, capacity) the template was written for.
    template_for: Option<(u64, u32)>,
    cull_params: HostBuffer,
    /// What `cull_params` holds (None: nothing yet); rewritten only when it changes.
    cull_params_written: Option<CullParams>,
    /// Set 2: colour and depth with the CPU list, colour and depth with the GPU lists, and compute.
    colour_cpu: vk::DescriptorSet,
    depth_cpu: vk::DescriptorSet,
    colour_gpu: vk::DescriptorSet,
    depth_gpu: vk::DescriptorSet,
    compute: vk::DescriptorSet,
    /// Whether the GPU records mirror the crowd's (false: upload every record next frame).
    records_synced: bool,
    /// Whether the GPU instance list mirrors the crowd's as of its last `Crowd::prepare_frame`.
    list_synced: bool,
    /// Records the crowd had at the last frame (a smaller count means another crowd: resync).
    last_count: u32,
    /// LODs of the last GPU-culled frame (for [`Renderer::read_gpu_visible`]); 0 before any.
    gpu_lods: u32,
    /// The scatter pass's buffers and set 3, created on the first frame that needs them.
    scatter: Option<ScatterBuffers>,
    /// The buffers, descriptor pools; destroyed last.
    owned: Owned,
}

/// The record scatter's packed records and destinations, and set 3 of `cs_scatter` over them and the
/// record buffer.
struct ScatterBuffers {
    /// Records the buffers hold.
    capacity: u32,
    indices: HostBuffer,
    records: HostBuffer,
    set: vk::DescriptorSet,
    _owned: Owned,
}

/// The CPU-culled path's batches of one frame (all empty on the GPU-culled path).
#[derive(Debug, Default)]
struct Batches {
    main_fade: Vec<DrawBatch>,
    main_plain: Vec<DrawBatch>,
    shadow: Vec<DrawBatch>,
    attachments: Vec<DrawBatch>,
}

/// Buffer writes of one frame, recorded with `vkCmdUpdateBuffer` before the passes: (buffer, byte
/// offset, bytes).
type Writes = Vec<(vk::Buffer, u64, Vec<u8>)>;

/// Renders crowds of uploaded assets with vat-core's shader on a [`Context`]'s device, recording
/// into a command buffer the caller owns; the Vulkan twin of vat-wgpu's `Renderer`. See the crate
/// docs for what it expects of the caller (layouts, synchronisation) and what state it changes.
///
/// A renderer holds the GPU copy of one crowd's records between frames (uploading only what the
/// crowd reports as changed); to render a different crowd with it, call
/// [`forget_crowd`](Self::forget_crowd) first (or use one renderer per crowd). Dropping it waits for
/// the device to be idle, then destroys its objects.
pub struct Renderer {
    ctx: Rc<Context>,
    config: RendererConfig,
    shader: ShaderModule,
    /// `[stage set][group]`.
    set_layouts: Vec<Vec<vk::DescriptorSetLayout>>,
    /// Per stage set.
    pipeline_layouts: Vec<vk::PipelineLayout>,
    render_pipelines: HashMap<RenderKey, vk::Pipeline>,
    compute_pipelines: HashMap<ComputeKey, vk::Pipeline>,
    frame_buffer: HostBuffer,
    shadow_image: vk::Image,
    shadow_size: u32,
    shadow_view: vk::ImageView,
    /// Set 0 per stage set.
    frame_sets: Vec<vk::DescriptorSet>,
    /// Stand-ins for the decode bindings in the culling set and the culling bindings in the decode
    /// set (one compute layout serves both entry points).
    dummy_decode_params: HostBuffer,
    dummy_decoded: HostBuffer,
    dummy_cull_params: HostBuffer,
    dummy_visible: HostBuffer,
    dummy_draw_args: HostBuffer,
    crowd: Option<CrowdBuffers>,
    next_asset_id: u64,
    /// Set 3 (`cs_scatter`'s own), its pipeline layout (empty sets 0-2, then set 3) and pipeline.
    scatter_set_layout: vk::DescriptorSetLayout,
    scatter_pipeline_layout: vk::PipelineLayout,
    scatter_pipeline: vk::Pipeline,
    scatter_plan: ScatterPlan,
    /// Layouts, pipelines, per-frame resources; destroyed after the crowd buffers.
    owned: Owned,
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
fn storage_limit(ctx: &Context) -> u64 {
    u64::from(ctx.properties.limits.max_storage_buffer_range)
}

/// Workgroup counts `(x, y)` for `threads` threads of `size` per workgroup, x at most 65535 (the
/// shaders linearise `global_id.y * num_workgroups.x * size + global_id.x`); vat-wgpu's `workgroups`.
fn workgroups(threads: u64, size: u32) -> (u32, u32) {
    let groups = threads.div_ceil(u64::from(size)).max(1);
    let x = groups.min(65535);
    let y = groups.div_ceil(x);
    (x as u32, y.min(u64::from(u32::MAX)) as u32)
}

/// Creates a descriptor pool for one set of group `group` as seen by `set`'s stages, allocates the
/// set with `layout` and writes every binding from `resource` (looked up by WGSL name). The pool is
/// recorded in `owned`.
fn descriptor_set(
    owned: &mut Owned,
    layout: vk::DescriptorSetLayout,
    group: u32,
    set: StageSet,
    resource: impl Fn(&str) -> Option<Resource>,
) -> Result<vk::DescriptorSet, VulkanError> {
    let bindings: Vec<&gpu::Binding> = gpu::bindings_for_stages(group, set.stages()).collect();
    let mut resources = Vec::with_capacity(bindings.len());
    for b in &bindings {
        resources.push(resource(b.name).ok_or(VulkanError::UnboundBinding { name: b.name, group })?);
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
        .map_err(VulkanError::vk("create descriptor pool"))?;
    owned.push(Object::DescriptorPool(pool));
    let device = &owned.ctx.device;
    let layouts = [layout];
    let alloc = vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts);
    // SAFETY: the pool has room for exactly this set's descriptors.
    let descriptor_set = unsafe { device.allocate_descriptor_sets(&alloc) }
        .map_err(VulkanError::vk("allocate descriptor set"))?[0];
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

/// Queues `bytes` for `buffer` at byte `offset` (both multiples of 4); returns the bytes queued.
fn queue_write(writes: &mut Writes, buffer: vk::Buffer, offset: u64, bytes: &[u8]) -> u64 {
    if !bytes.is_empty() {
        writes.push((buffer, offset, bytes.to_vec()));
    }
    bytes.len() as u64
}

/// Queues a frame's changed record ranges (`ranges`, ascending) as `vat_core::gpu::ScatterPlan`
/// says: long ranges and few short ones as direct writes, many short ones packed into the scatter
/// buffers (grown and re-bound as needed; replacing them waits for the device to be idle) for the
/// scatter pass; vat-wgpu's `queue_record_ranges`. Returns the bytes queued and the records the
/// scatter pass must copy (0: no pass).
fn queue_record_ranges(
    ctx: &Rc<Context>,
    scatter_set_layout: vk::DescriptorSetLayout,
    buffers: &mut CrowdBuffers,
    plan: &mut ScatterPlan,
    ranges: &[(u32, &[InstanceRecord])],
    writes: &mut Writes,
) -> Result<(u64, u32), VulkanError> {
    plan.plan(ranges);
    let mut uploaded = 0u64;
    for (first, records) in plan.direct.iter().filter_map(|&k| ranges.get(k)) {
        let offset = u64::from(*first) * size_of::<InstanceRecord>() as u64;
        uploaded += queue_write(writes, buffers.records.buffer, offset, bytemuck::cast_slice(records));
    }
    let n = plan.scattered();
    if n == 0 {
        return Ok((uploaded, 0));
    }
    if buffers.scatter.as_ref().is_none_or(|s| s.capacity < n) {
        let capacity = n.next_power_of_two().max(MIN_SCATTER_CAPACITY);
        let limit = storage_limit(ctx);
        let record_bytes = u64::from(capacity) * size_of::<InstanceRecord>() as u64;
        if record_bytes > limit {
            return Err(VulkanError::BufferTooLarge { what: "record scatter", size: record_bytes, limit });
        }
        if buffers.scatter.is_some() {
            // SAFETY: plain wait on a live device, before the old buffers are destroyed.
            unsafe { ctx.device.device_wait_idle() }.map_err(VulkanError::vk("wait for device idle"))?;
            buffers.scatter = None;
        }
        let mut owned = Owned::new(ctx);
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let indices = owned.buffer((u64::from(capacity) + 1) * 4, usage, "scatter indices")?;
        let records = owned.buffer(record_bytes, usage, "scatter records")?;
        let target = buffers.records.buffer;
        let set =
            descriptor_set(&mut owned, scatter_set_layout, gpu::GROUP_SCATTER, StageSet::Compute, |n| {
                Some(Resource::Buffer(match n {
                    "scatter_indices" => indices.buffer,
                    "scatter_records" => records.buffer,
                    "scatter_target" => target,
                    _ => return None,
                }))
            })?;
        buffers.scatter = Some(ScatterBuffers { capacity, indices, records, set, _owned: owned });
    }
    let scatter = buffers.scatter.as_ref().ok_or(VulkanError::Internal("scatter buffers missing"))?;
    uploaded += queue_write(writes, scatter.indices.buffer, 0, bytemuck::cast_slice(&plan.indices));
    uploaded += queue_write(writes, scatter.records.buffer, 0, bytemuck::cast_slice(&plan.records));
    Ok((uploaded, n))
}

/// A global memory barrier.
///
/// # Safety
/// `cb` must be recording, outside dynamic rendering.
unsafe fn memory_barrier(
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

/// The viewport wgpu-hal sets for a target of `size`: y flipped by a negative height, so that clip
/// space y points up as in wgpu (and naga writes no coordinate adjustment).
fn flipped_viewport(size: [u32; 2]) -> vk::Viewport {
    vk::Viewport {
        x: 0.0,
        y: size[1] as f32,
        width: size[0] as f32,
        height: -(size[1] as f32),
        min_depth: 0.0,
        max_depth: 1.0,
    }
}

fn full_rect(size: [u32; 2]) -> vk::Rect2D {
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
    /// [`VulkanError::LimitTooLow`] if the device allows fewer than 8 storage buffers per stage,
    /// [`VulkanError::Shader`], [`VulkanError::Vk`], [`VulkanError::NoMemoryType`].
    pub fn new(ctx: &Rc<Context>, config: RendererConfig) -> Result<Self, VulkanError> {
        let limits = &ctx.properties.limits;
        let storage_per_stage = limits.max_per_stage_descriptor_storage_buffers;
        if storage_per_stage < 8 {
            return Err(VulkanError::LimitTooLow {
                limit: "maxPerStageDescriptorStorageBuffers",
                required: 8,
                available: u64::from(storage_per_stage),
            });
        }
        let shader = ShaderModule::new()?;
        let mut owned = Owned::new(ctx);
        let device = &ctx.device;
        let mut set_layouts = Vec::new();
        let mut pipeline_layouts = Vec::new();
        for set in StageSet::ALL {
            let mut layouts = Vec::new();
            for group in 0..gpu::group_count() {
                let bindings = conv::bind_group_layout_entries(group, set.stages());
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                // SAFETY: valid create info on a live device.
                let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
                    .map_err(VulkanError::vk("create descriptor set layout"))?;
                owned.push(Object::SetLayout(layout));
                layouts.push(layout);
            }
            let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
            // SAFETY: valid create info; the set layouts are live.
            let layout = unsafe { device.create_pipeline_layout(&info, None) }
                .map_err(VulkanError::vk("create pipeline layout"))?;
            owned.push(Object::PipelineLayout(layout));
            pipeline_layouts.push(layout);
            set_layouts.push(layouts);
        }
        let uniform = vk::BufferUsageFlags::UNIFORM_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let frame_buffer = owned.buffer(size_of::<FrameUniforms>() as u64, uniform, "frame uniforms")?;
        let shadow_size = config.shadow_map_size.clamp(1, limits.max_image_dimension2_d);
        let (shadow_image, shadow_view) = owned.image_with(
            shadow_size,
            shadow_size,
            SHADOW_FORMAT,
            vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
                | vk::ImageUsageFlags::SAMPLED
                | vk::ImageUsageFlags::TRANSFER_DST,
            vk::ImageAspectFlags::DEPTH,
            "shadow map",
        )?;
        // wgpu's SamplerDescriptor { mag/min Linear, compare LessEqual, ..Default } as wgpu-hal maps it.
        let sampler_info = vk::SamplerCreateInfo::default()
            .mag_filter(vk::Filter::LINEAR)
            .min_filter(vk::Filter::LINEAR)
            .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
            .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .compare_enable(true)
            .compare_op(vk::CompareOp::LESS_OR_EQUAL)
            .min_lod(0.0)
            .max_lod(32.0);
        // SAFETY: valid create info on a live device.
        let shadow_sampler = unsafe { device.create_sampler(&sampler_info, None) }
            .map_err(VulkanError::vk("create sampler"))?;
        owned.push(Object::Sampler(shadow_sampler));
        let dummy_decode_params = owned.buffer(size_of::<DecodeParams>() as u64, uniform, "dummy buffer")?;
        let dummy_decoded = owned.buffer(size_of::<DecodedVertex>() as u64, storage, "dummy buffer")?;
        let dummy_cull_params = owned.buffer(size_of::<CullParams>() as u64, uniform, "dummy buffer")?;
        let dummy_visible = owned.buffer(4, storage, "dummy buffer")?;
        let dummy_draw_args = owned.buffer(gpu::DRAW_ARGS_BYTES, storage, "dummy buffer")?;
        let mut frame_sets = Vec::new();
        for set in StageSet::ALL {
            let layout = set_layouts[set as usize][gpu::GROUP_FRAME as usize];
            frame_sets.push(descriptor_set(&mut owned, layout, gpu::GROUP_FRAME, set, |name| {
                Some(match name {
                    "frame" => Resource::Buffer(frame_buffer.buffer),
                    "shadow_map" => Resource::Image(shadow_view),
                    "shadow_sampler" => Resource::Sampler(shadow_sampler),
                    _ => return None,
                })
            })?);
        }
        // Clear the shadow map once: sampled before any shadow pass when shadows are off.
        let mut scope = Owned::new(ctx);
        scope.submit_and_wait(|device, cb| {
            let range =
                vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::DEPTH, ..color_range() };
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
        drop(scope);
        // `cs_scatter` has a layout of its own: empty sets 0-2, then set 3.
        let scatter_bindings = conv::bind_group_layout_entries(gpu::GROUP_SCATTER, ShaderStages::COMPUTE);
        let mut scatter_layouts = Vec::new();
        for group in 0..=gpu::GROUP_SCATTER {
            let bindings = if group == gpu::GROUP_SCATTER { &scatter_bindings[..] } else { &[] };
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
            // SAFETY: valid create info on a live device.
            let layout = unsafe { device.create_descriptor_set_layout(&info, None) }
                .map_err(VulkanError::vk("create descriptor set layout"))?;
            owned.push(Object::SetLayout(layout));
            scatter_layouts.push(layout);
        }
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&scatter_layouts);
        // SAFETY: valid create info; the set layouts are live.
        let scatter_pipeline_layout = unsafe { device.create_pipeline_layout(&info, None) }
            .map_err(VulkanError::vk("create pipeline layout"))?;
        owned.push(Object::PipelineLayout(scatter_pipeline_layout));
        let scatter_set_layout = scatter_layouts[gpu::GROUP_SCATTER as usize];
        let mut renderer = Self {
            ctx: Rc::clone(ctx),
            config,
            shader,
            set_layouts,
            pipeline_layouts,
            render_pipelines: HashMap::new(),
            compute_pipelines: HashMap::new(),
            frame_buffer,
            shadow_image,
            shadow_size,
            shadow_view,
            frame_sets,
            dummy_decode_params,
            dummy_decoded,
            dummy_cull_params,
            dummy_visible,
            dummy_draw_args,
            crowd: None,
            next_asset_id: 1,
            scatter_set_layout,
            scatter_pipeline_layout,
            scatter_pipeline: vk::Pipeline::null(),
            scatter_plan: ScatterPlan::default(),
            owned,
        };
        renderer.scatter_pipeline = renderer.create_compute_pipeline(
            gpu::ENTRY_POINT_SCATTER,
            &ShaderVariant::default(),
            scatter_pipeline_layout,
        )?;
        renderer.compute_pipeline(ComputeKey {
            entry: gpu::ENTRY_POINT_CULL,
            fade: true,
            influences: 4,
            vertex_format: VertexFormat::Packed64,
        })?;
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

    fn variant(&self, fade: bool, influences: u32, vertex_format: VertexFormat) -> ShaderVariant {
        ShaderVariant {
            interpolation: self.config.interpolation,
            cross_fade: fade,
            influences: if influences == 8 { 8 } else { 4 },
            vertex_format,
        }
    }

    /// A shader module of `entry` in `variant`, recorded in `scope` (destroyed with it).
    fn shader_module(
        &self,
        scope: &mut Owned,
        entry: &'static str,
        variant: &ShaderVariant,
    ) -> Result<vk::ShaderModule, VulkanError> {
        let ep = entry_point(entry).ok_or(VulkanError::UnknownEntryPoint(entry))?;
        let words = self.shader.spirv(ep, variant)?;
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        // SAFETY: valid SPIR-V from naga's writer, on a live device.
        let module = unsafe { self.ctx.device.create_shader_module(&info, None) }
            .map_err(VulkanError::vk("create shader module"))?;
        scope.push(Object::ShaderModule(module));
        Ok(module)
    }

    fn compute_pipeline(&mut self, key: ComputeKey) -> Result<vk::Pipeline, VulkanError> {
        if let Some(&p) = self.compute_pipelines.get(&key) {
            return Ok(p);
        }
        let layout = self.pipeline_layouts[StageSet::Compute as usize];
        let pipeline = self.create_compute_pipeline(
            key.entry,
            &self.variant(key.fade, key.influences, key.vertex_format),
            layout,
        )?;
        self.compute_pipelines.insert(key, pipeline);
        Ok(pipeline)
    }

    /// A compute pipeline of `entry` in `variant` with `layout`, destroyed with the renderer.
    fn create_compute_pipeline(
        &mut self,
        entry: &'static str,
        variant: &ShaderVariant,
        layout: vk::PipelineLayout,
    ) -> Result<vk::Pipeline, VulkanError> {
        let mut scope = Owned::new(&self.ctx);
        let module = self.shader_module(&mut scope, entry, variant)?;
        let name = CString::new(entry).map_err(|_| VulkanError::UnknownEntryPoint(entry))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&name);
        let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        // SAFETY: valid create info; module and layout are live.
        let pipeline =
            unsafe { self.ctx.device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) }
                .map_err(|(_, e)| VulkanError::from_vk("create compute pipeline", e))?[0];
        self.owned.push(Object::Pipeline(pipeline));
        Ok(pipeline) // `scope` destroys the shader module.
    }

    fn render_pipeline(&mut self, key: RenderKey) -> Result<vk::Pipeline, VulkanError> {
        if let Some(&p) = self.render_pipelines.get(&key) {
            return Ok(p);
        }
        let entry = match (key.draw, key.depth_only) {
            (Draw::Body(RenderMode::Vat), false) => gpu::ENTRY_POINT_VS_VAT,
            (Draw::Body(RenderMode::Vat), true) => gpu::ENTRY_POINT_VS_VAT_DEPTH,
            (Draw::Body(RenderMode::Bone), false) => gpu::ENTRY_POINT_VS_BONE,
            (Draw::Body(RenderMode::Bone), true) => gpu::ENTRY_POINT_VS_BONE_DEPTH,
            (Draw::Attachment, false) => gpu::ENTRY_POINT_VS_ATTACHMENT,
            (Draw::Attachment, true) => gpu::ENTRY_POINT_VS_ATTACHMENT_DEPTH,
            (Draw::Ground, _) => gpu::ENTRY_POINT_VS_GROUND,
        };
        let variant = self.variant(key.fade, key.influences, key.vertex_format);
        let mut scope = Owned::new(&self.ctx);
        let vertex = self.shader_module(&mut scope, entry, &variant)?;
        let vs_name = CString::new(entry).map_err(|_| VulkanError::UnknownEntryPoint(entry))?;
        let fs_name = c"fs_lit";
        let mut stages = vec![
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vertex)
                .name(&vs_name),
        ];
        if !key.depth_only {
            let fragment = self.shader_module(&mut scope, gpu::ENTRY_POINT_FS_LIT, &variant)?;
            stages.push(
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fragment)
                    .name(fs_name),
            );
        }
        let set = if key.depth_only { StageSet::Depth } else { StageSet::Colour };
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        // wgpu: front_face Ccw, cull_mode Back; the shadow pipelines' DepthBiasState { constant: 2,
        // slope_scale: 2.0, clamp: 0.0 } as wgpu-hal maps them.
        let mut raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::BACK)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let depth_format = if key.depth_only {
            raster = raster
                .depth_bias_enable(true)
                .depth_bias_constant_factor(2.0)
                .depth_bias_slope_factor(2.0)
                .depth_bias_clamp(0.0);
            SHADOW_FORMAT
        } else {
            self.config.depth_format
        };
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let depth = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_write_enable(true)
            .depth_compare_op(vk::CompareOp::LESS);
        let blend_attachments = [vk::PipelineColorBlendAttachmentState::default()
            .blend_enable(false)
            .color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(if key.depth_only {
            &[]
        } else {
            &blend_attachments
        });
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let color_formats = [self.config.color_format];
        let mut rendering = vk::PipelineRenderingCreateInfo::default()
            .color_attachment_formats(if key.depth_only { &[] } else { &color_formats })
            .depth_attachment_format(depth_format);
        let info = [vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&input_assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .depth_stencil_state(&depth)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(self.pipeline_layouts[set as usize])
            .push_next(&mut rendering)];
        // SAFETY: valid create info (dynamic rendering, enabled on every context's device); modules
        // and layout are live.
        let pipeline =
            unsafe { self.ctx.device.create_graphics_pipelines(vk::PipelineCache::null(), &info, None) }
                .map_err(|(_, e)| VulkanError::from_vk("create graphics pipeline", e))?[0];
        self.owned.push(Object::Pipeline(pipeline));
        self.render_pipelines.insert(key, pipeline);
        Ok(pipeline) // `scope` destroys the shader modules.
    }

    /// Uploads a validated asset: the vertex animation textures of its format (one to three, in the
    /// bindings `vat_core::gpu::vertex_textures` names, 1x1 stand-ins in the others) and the bone texture (device-local
    /// images filled through a staging buffer, left in `SHADER_READ_ONLY_OPTIMAL`), clip table,
    /// asset constants, joints, weights, rest vertices, attachment meshes and captures, and one index
    /// buffer (every LOD, then the attachments); builds set 1 of every pipeline kind. Texture and
    /// buffer sizes are checked against the device's limits first. Submits the texture copies to the
    /// context's queue and waits for them. On error, everything created so far is destroyed and
    /// nothing is kept.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoVertexAnimation`], [`VulkanError::AssetHasNoLods`],
    /// [`VulkanError::UnsupportedFormat`] (the device cannot sample one of the vertex format's texel
    /// formats; never on a conformant device), [`VulkanError::TextureTooLarge`],
    /// [`VulkanError::TextureData`], [`VulkanError::BufferTooLarge`], [`VulkanError::Vk`],
    /// [`VulkanError::NoMemoryType`].
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, VulkanError> {
        let m = asset.manifest();
        let va = m.vertex_animation.as_ref().ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        for &texel in va.format.texel_formats() {
            if !self.ctx.supports_sampled_image(conv::map_texel_format(texel)) {
                return Err(VulkanError::UnsupportedFormat { format: va.format, texel });
            }
        }
        let vertex_textures = gpu::vertex_textures(asset).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let constants = AssetConstants::from_manifest(m).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let index_bytes =
            asset.index_bytes().filter(|_| !m.lods.is_empty()).ok_or(VulkanError::AssetHasNoLods)?;
        let max_dim = self.ctx.properties.limits.max_image_dimension2_d;
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
        let morph = gpu::morph_textures(asset);
        check_texture("morph delta", morph[0].width, morph[0].height)?;
        check_texture("morph weights", morph[1].width, morph[1].height)?;
        let rest = gpu::rest_vertices(asset);
        let attachments = AttachmentMesh::from_asset(asset);
        let storage_limit = storage_limit(&self.ctx);
        let check_buffer = |what, size: usize| {
            let size = size as u64;
            if size > storage_limit {
                Err(VulkanError::BufferTooLarge { what, size, limit: storage_limit })
            } else {
                Ok(())
            }
        };
        check_buffer("rest vertices", rest.len() * size_of::<gpu::RestVertex>())?;
        check_buffer("attachment vertices", attachments.vertices.len() * size_of::<gpu::AttachmentVertex>())?;
        check_buffer("capture", attachments.capture_rows.len() * 16)?;
        if let Some(b) = &m.bone_animation {
            check_buffer("joints", asset.blob(b.joints).len())?;
            check_buffer("weights", asset.blob(b.weights).len())?;
        }

        let mut owned = Owned::new(&self.ctx);
        let mut gpu_bytes = 0u64;
        // Textures: (what, width, height, format, bytes): the bone texture, the morph layer's two,
        // then every vertex-texture binding (the format's textures, 1x1 stand-ins for the others).
        let zero_texel = [0u8; 16];
        let mut textures = Vec::new();
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
        for (what, t) in ["morph delta", "morph weights"].into_iter().zip(morph) {
            textures.push((what, t.width, t.height, conv::map_texel_format(t.format), t.bytes));
        }
        for t in &vertex_textures {
            let what =
                if t.stand_in { "vertex animation (unused by this format)" } else { "vertex animation" };
            let d = t.data;
            textures.push((what, d.width, d.height, conv::map_texel_format(d.format), d.bytes));
        }
        let mut views = Vec::new();
        {
            let mut staging_scope = Owned::new(&self.ctx);
            let mut copies = Vec::new();
            for &(what, width, height, format, bytes) in &textures {
                let texel = conv::format_texel_bytes(format).unwrap_or(4);
                let expected = u64::from(width) * u64::from(height) * u64::from(texel);
                if (bytes.len() as u64) < expected {
                    return Err(VulkanError::TextureData { what, expected, actual: bytes.len() as u64 });
                }
                gpu_bytes += expected;
                let staging = staging_scope.buffer_init(
                    &bytes[..expected as usize],
                    0,
                    vk::BufferUsageFlags::TRANSFER_SRC,
                    "staging buffer",
                )?;
                let (image, view) = owned.image(width, height, format, "texture")?;
                views.push(view);
                copies.push((staging.buffer, image, width, height));
            }
            staging_scope.submit_and_wait(|device, cb| {
                for &(buffer, image, width, height) in &copies {
                    // SAFETY: recording into `cb`; the image and staging buffer are live, the copy
                    // covers the whole image and the staging buffer holds all its texels.
                    unsafe { record_texture_copy(device, cb, buffer, image, width, height) };
                }
            })?;
        } // The staging buffers and the command buffer are destroyed here.
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let clips = gpu::clip_records(&m.clips);
        let buffers = [
            owned.buffer_init(bytemuck::cast_slice(&clips), 32, storage, "clip table")?,
            owned.buffer_init(
                bytemuck::bytes_of(&constants),
                0,
                vk::BufferUsageFlags::UNIFORM_BUFFER,
                "asset constants",
            )?,
            owned.buffer_init(joints, 4, storage, "joints")?,
            owned.buffer_init(weights, 4, storage, "weights")?,
            owned.buffer_init(bytemuck::cast_slice(&rest), 32, storage, "rest vertices")?,
            owned.buffer_init(
                bytemuck::cast_slice(&attachments.vertices),
                32,
                storage,
                "attachment vertices",
            )?,
            owned.buffer_init(bytemuck::cast_slice(&attachments.capture_rows), 16, storage, "captures")?,
        ];
        let [clip_buf, asset_buf, joint_buf, weight_buf, rest_buf, attach_buf, capture_buf] = buffers;
        let mut indices = index_bytes.to_vec();
        let attachment_first_index = (index_bytes.len() / 4) as u32;
        indices.extend(attachments.indices.iter().flat_map(|i| i.to_le_bytes()));
        let index_buffer = owned.buffer_init(&indices, 4, vk::BufferUsageFlags::INDEX_BUFFER, "index")?;
        drop(indices);
        gpu_bytes += buffers.iter().map(|b| b.size).sum::<u64>() + index_buffer.size;
        let (bone_view, morph_view, morph_weights_view) = (views[0], views[1], views[2]);
        let vat_views: Vec<(&str, vk::ImageView)> =
            vertex_textures.iter().zip(&views[3..]).map(|(t, &view)| (t.name, view)).collect();
        let mut sets = Vec::new();
        for set in StageSet::ALL {
            let layout = self.set_layouts[set as usize][gpu::GROUP_ASSET as usize];
            sets.push(descriptor_set(&mut owned, layout, gpu::GROUP_ASSET, set, |name| {
                if let Some(&(_, view)) = vat_views.iter().find(|(n, _)| *n == name) {
                    return Some(Resource::Image(view));
                }
                Some(match name {
                    "clips" => Resource::Buffer(clip_buf.buffer),
                    "asset" => Resource::Buffer(asset_buf.buffer),
                    "bone_texture" => Resource::Image(bone_view),
                    "joints" => Resource::Buffer(joint_buf.buffer),
                    "weights" => Resource::Buffer(weight_buf.buffer),
                    "rest_vertices" => Resource::Buffer(rest_buf.buffer),
                    "attachment_vertices" => Resource::Buffer(attach_buf.buffer),
                    "captures" => Resource::Buffer(capture_buf.buffer),
                    "morph_texture" => Resource::Image(morph_view),
                    "morph_weights" => Resource::Image(morph_weights_view),
                    _ => return None,
                })
            })?);
        }
        let id = self.next_asset_id;
        self.next_asset_id += 1;
        Ok(GpuAsset {
            owned,
            id,
            sets,
            index_buffer: index_buffer.buffer,
            lods: m.lods.clone(),
            attachment_first_index,
            attachment_index_count: attachments.indices.len() as u32,
            vertex_count: m.vertex_count,
            influences,
            vertex_format: va.format,
            gpu_bytes,
        })
    }

    /// Forgets the GPU copy of the crowd's records: the next [`render`](Self::render) uploads every
    /// record, and the next CPU-culled one the whole instance list. Call it before rendering another
    /// crowd with this renderer, or after dropping a command buffer `render` recorded into without
    /// submitting it.
    pub fn forget_crowd(&mut self) {
        if let Some(c) = &mut self.crowd {
            c.records_synced = false;
            c.list_synced = false;
        }
    }

    /// Makes sure the per-crowd buffers hold `count` records and `list_len` list entries; new
    /// buffers start unsynced. Replacing buffers waits for the device to be idle first (frames in
    /// flight may read the old ones).
    fn ensure_crowd_buffers(&mut self, count: u32, list_len: u32) -> Result<(), VulkanError> {
        let (need_records, need_list) = match &self.crowd {
            Some(c) => (count > c.capacity, list_len > c.list_capacity),
            None => (true, true),
        };
        if !need_records && !need_list {
            return Ok(());
        }
        let limit = storage_limit(&self.ctx);
        let grow =
            |n: u32, old: u32| n.max(MIN_CAPACITY).max(old.saturating_mul(2)).next_power_of_two().max(n);
        let old = self.crowd.as_ref();
        let capacity = if need_records {
            grow(count, old.map_or(0, |c| c.capacity))
        } else {
            old.map_or(0, |c| c.capacity)
        };
        let list_capacity = if need_list {
            grow(list_len, old.map_or(0, |c| c.list_capacity))
        } else {
            old.map_or(0, |c| c.list_capacity)
        };
        let record_bytes = u64::from(capacity) * size_of::<InstanceRecord>() as u64;
        let visible_bytes = u64::from(capacity) * MAX_LODS as u64 * 4;
        let list_bytes = u64::from(list_capacity) * 4;
        for (what, size) in [
            ("instance record", record_bytes),
            ("visible list", visible_bytes),
            ("instance list", list_bytes),
        ] {
            if size > limit {
                return Err(VulkanError::BufferTooLarge { what, size, limit });
            }
        }
        if self.crowd.is_some() {
            // SAFETY: plain wait on a live device, before the old buffers are destroyed.
            unsafe { self.ctx.device.device_wait_idle() }.map_err(VulkanError::vk("wait for device idle"))?;
            self.crowd = None;
        }
        let mut owned = Owned::new(&self.ctx);
        let dst = vk::BufferUsageFlags::TRANSFER_DST;
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER | dst;
        let records = owned.buffer(record_bytes, storage, "instance records")?;
        let list = owned.buffer(list_bytes, storage, "instance list")?;
        let visible = owned.buffer(visible_bytes, storage, "visible lists")?;
        let draw_args = owned.buffer(
            gpu::DRAW_ARGS_BYTES,
            storage | vk::BufferUsageFlags::INDIRECT_BUFFER,
            "draw args",
        )?;
        let args_template = owned.buffer(
            gpu::DRAW_ARGS_BYTES,
            vk::BufferUsageFlags::TRANSFER_SRC | dst,
            "draw args template",
        )?;
        let cull_params = owned.buffer(
            size_of::<CullParams>() as u64,
            vk::BufferUsageFlags::UNIFORM_BUFFER | dst,
            "cull params",
        )?;
        let (decode_params, decoded) = (self.dummy_decode_params.buffer, self.dummy_decoded.buffer);
        let mut group = |set: StageSet, instance_list: vk::Buffer| {
            let layout = self.set_layouts[set as usize][gpu::GROUP_CROWD as usize];
            descriptor_set(&mut owned, layout, gpu::GROUP_CROWD, set, |name| {
                Some(Resource::Buffer(match name {
                    "instances" => records.buffer,
                    "instance_list" => instance_list,
                    "decode_params" => decode_params,
                    "decoded" => decoded,
                    "cull_params" => cull_params.buffer,
                    "visible" => visible.buffer,
                    "draw_args" => draw_args.buffer,
                    _ => return None,
                }))
            })
        };
        let colour_cpu = group(StageSet::Colour, list.buffer)?;
        let depth_cpu = group(StageSet::Depth, list.buffer)?;
        let colour_gpu = group(StageSet::Colour, visible.buffer)?;
        let depth_gpu = group(StageSet::Depth, visible.buffer)?;
        let compute = group(StageSet::Compute, list.buffer)?;
        self.crowd = Some(CrowdBuffers {
            capacity,
            list_capacity,
            colour_cpu,
            depth_cpu,
            colour_gpu,
            depth_gpu,
            compute,
            records,
            list,
            visible,
            draw_args,
            args_template,
            template_for: None,
            cull_params,
            cull_params_written: None,
            records_synced: false,
            list_synced: false,
            last_count: 0,
            gpu_lods: 0,
            scatter: None,
            owned,
        });
        Ok(())
    }

    /// The per-crowd buffers for `count` records (and `list_len` list entries), marked unsynced when
    /// the crowd shrank (another crowd).
    fn crowd_buffers(&mut self, count: u32, list_len: u32) -> Result<&mut CrowdBuffers, VulkanError> {
        self.ensure_crowd_buffers(count, list_len)?;
        let buffers = self.crowd.as_mut().ok_or(VulkanError::Internal("crowd buffers missing"))?;
        if count < buffers.last_count {
            buffers.records_synced = false;
            buffers.list_synced = false;
        }
        buffers.last_count = count;
        Ok(buffers)
    }

    /// The GPU-culled path's CPU work: queues the crowd's dirty record ranges
    /// (`Crowd::take_record_uploads`), or every record when the GPU copy is not synced.
    fn sync_records(
        &mut self,
        crowd: &mut Crowd,
        writes: &mut Writes,
    ) -> Result<(CrowdStats, u64, u32), VulkanError> {
        let count = crowd.count();
        self.crowd_buffers(count, 0)?;
        let buffers = self.crowd.as_mut().ok_or(VulkanError::Internal("crowd buffers missing"))?;
        // Taken even for a full upload: it clears the crowd's dirty set.
        let ranges = crowd.take_record_uploads();
        let dirty_bytes: u64 = ranges.iter().map(|(_, r)| size_of_val(*r) as u64).sum();
        let mut uploaded = 0u64;
        let mut scattered = 0;
        if buffers.records_synced {
            let queued = queue_record_ranges(
                &self.ctx,
                self.scatter_set_layout,
                buffers,
                &mut self.scatter_plan,
                &ranges,
                writes,
            );
            match queued {
                Ok(q) => (uploaded, scattered) = q,
                Err(e) => {
                    // The crowd's dirty set is taken: upload everything next time.
                    buffers.records_synced = false;
                    return Err(e);
                }
            }
        } else {
            drop(ranges);
            uploaded += queue_write(writes, buffers.records.buffer, 0, bytemuck::cast_slice(crowd.records()));
            buffers.records_synced = true;
        }
        let stats =
            CrowdStats { simulated: count, uploaded_record_bytes: dirty_bytes, ..CrowdStats::default() };
        Ok((stats, uploaded, scattered))
    }

    /// The CPU-culled path's CPU work: `Crowd::prepare_frame`, then queues its dirty record ranges and
    /// list entries (everything the GPU copy lacks when unsynced).
    fn sync_cpu_frame(
        &mut self,
        crowd: &mut Crowd,
        camera: &Camera,
        writes: &mut Writes,
    ) -> Result<(CrowdStats, Batches, u64, u32), VulkanError> {
        let count = crowd.count();
        let frame = crowd.prepare_frame(camera);
        if let Err(e) = self.crowd_buffers(count, frame.instance_list_len) {
            // `prepare_frame` cleared the crowd's dirty state: upload everything next time.
            self.forget_crowd();
            return Err(e);
        }
        let buffers = self.crowd.as_mut().ok_or(VulkanError::Internal("crowd buffers missing"))?;
        let mut uploaded = 0u64;
        let mut scattered = 0;
        let (full_records, full_list) = (!buffers.records_synced, !buffers.list_synced);
        if !full_records {
            let queued = queue_record_ranges(
                &self.ctx,
                self.scatter_set_layout,
                buffers,
                &mut self.scatter_plan,
                &frame.record_uploads,
                writes,
            );
            match queued {
                Ok(q) => (uploaded, scattered) = q,
                Err(e) => {
                    buffers.records_synced = false;
                    buffers.list_synced = false;
                    return Err(e);
                }
            }
        }
        if !full_list && let Some((first, list)) = frame.list_upload {
            uploaded +=
                queue_write(writes, buffers.list.buffer, u64::from(first) * 4, bytemuck::cast_slice(list));
        }
        let FrameDraws { main_fade, main_plain, shadow, attachments, stats, .. } = frame;
        if full_records {
            uploaded += queue_write(writes, buffers.records.buffer, 0, bytemuck::cast_slice(crowd.records()));
            buffers.records_synced = true;
        }
        if full_list {
            uploaded +=
                queue_write(writes, buffers.list.buffer, 0, bytemuck::cast_slice(crowd.instance_list()));
            buffers.list_synced = true;
        }
        Ok((stats, Batches { main_fade, main_plain, shadow, attachments }, uploaded, scattered))
    }

    /// Records one frame of `crowd` seen by `camera` into the caller's command buffer `cb` (recording,
    /// primary, of a queue family with graphics and compute, outside any render pass): the writes of
    /// the changed records (and, with CPU culling, instance-list entries) and of the frame uniforms
    /// (`vkCmdUpdateBuffer`), the culling compute pass (GPU culling), the shadow pass and the colour
    /// pass (cleared), in vat-wgpu's order. Submit `cb` before recording the next frame with this
    /// renderer into another command buffer (frames share the renderer's buffers; the barriers it
    /// records order them on one queue), and submit every command buffer it recorded into (or call
    /// [`forget_crowd`](Self::forget_crowd)): the renderer counts what it recorded as uploaded.
    ///
    /// Everything that can fail (pipeline creation, buffer growth) happens before anything is
    /// recorded: on error, `cb` is left as it was. See the crate docs for the state it changes
    /// (bound pipelines, descriptor sets, index buffer, viewport and scissor) and the layouts it
    /// expects of `target`.
    ///
    /// CPU culling runs the crowd's frame preparation (`Crowd::prepare_frame`). GPU culling runs none
    /// of it: it takes only the crowd's dirty record ranges; the compute pass culls.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoBones`] for bone mode on an asset without bones;
    /// [`VulkanError::BufferTooLarge`] if the crowd outgrows the device's storage buffer range;
    /// [`VulkanError::EmptyTarget`] for a target of size zero; [`VulkanError::Vk`] or
    /// [`VulkanError::Shader`] if a pipeline cannot be created.
    pub fn render(
        &mut self,
        cb: vk::CommandBuffer,
        asset: &GpuAsset,
        crowd: &mut Crowd,
        camera: &Camera,
        target: RenderTarget,
        options: &RenderOptions,
    ) -> Result<FrameReport, VulkanError> {
        if target.size[0] == 0 || target.size[1] == 0 {
            return Err(VulkanError::EmptyTarget);
        }
        if options.mode == RenderMode::Bone && !asset.has_bones() {
            return Err(VulkanError::AssetHasNoBones);
        }
        let config = *crowd.config();
        let count = crowd.count();
        let time = crowd.shader_time();
        let thresholds = crowd.asset().lod_distances;
        let lod_count = thresholds.lod_count().min(asset.lod_count()).clamp(1, MAX_LODS as u32);
        let attachments_on = config.attachments && asset.has_attachments();
        let gpu_culling = options.culling == Culling::Gpu;

        // 0. Pipelines (created on first use), before anything can change: a failure leaves the
        // crowd's dirty state and `cb` untouched.
        let influences = asset.influences;
        let vertex_format = asset.vertex_format;
        let body = |fade| RenderKey {
            draw: Draw::Body(options.mode),
            depth_only: false,
            fade,
            influences,
            vertex_format,
        };
        let fade_pipeline = self.render_pipeline(body(true))?;
        let plain_pipeline = self.render_pipeline(body(false))?;
        let depth_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Body(options.mode),
            depth_only: true,
            fade: config.cross_fade,
            influences,
            vertex_format,
        })?;
        let attach_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Attachment,
            depth_only: false,
            fade: config.cross_fade,
            influences,
            vertex_format,
        })?;
        let attach_depth_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Attachment,
            depth_only: true,
            fade: config.cross_fade,
            influences,
            vertex_format,
        })?;
        let ground_pipeline = if options.ground {
            Some(self.render_pipeline(RenderKey {
                draw: Draw::Ground,
                depth_only: false,
                fade: false,
                influences: 4,
                vertex_format: VertexFormat::Packed64,
            })?)
        } else {
            None
        };
        let cull_pipeline = self.compute_pipeline(ComputeKey {
            entry: gpu::ENTRY_POINT_CULL,
            fade: true,
            influences: 4,
            vertex_format: VertexFormat::Packed64,
        })?;

        // 1. CPU frame: dirty records (both paths); instance list and batches (CPU culling only).
        let mut writes = Writes::new();
        let (stats, batches, mut uploaded, scattered) = if gpu_culling {
            let (stats, uploaded, scattered) = self.sync_records(crowd, &mut writes)?;
            (stats, Batches::default(), uploaded, scattered)
        } else {
            self.sync_cpu_frame(crowd, camera, &mut writes)?
        };
        let Batches { main_fade, main_plain, shadow, attachments } = batches;

        // 2. Uniforms.
        let shadows = options.shadows && config.shadows;
        let shadow_matrix = if shadows {
            gpu::shadow_view_proj(
                &camera.view_proj,
                options.sun_direction,
                options.shadow_distance,
                gpu::SHADOW_CASTER_MARGIN * gpu::sanitized_scene_unit(options.scene_unit),
            )
        } else {
            None
        };
        let uniforms = FrameUniforms::new(&FrameInputs {
            view_proj: camera.view_proj,
            camera_position: camera.position,
            time,
            frustum_planes: Frustum::from_view_proj(&camera.view_proj).planes,
            sun_direction: options.sun_direction,
            ambient: options.ambient,
            lod_thresholds: &thresholds,
            lod_bias: config.lod_bias,
            cross_fade_max_lod: config.cross_fade_max_lod,
            shadow_max_lod: config.shadow_max_lod,
            shadow: shadow_matrix,
            ground_half_extent: options.ground_half_extent,
            scene_unit: options.scene_unit,
        });
        uploaded += queue_write(&mut writes, self.frame_buffer.buffer, 0, bytemuck::bytes_of(&uniforms));

        let Some(buffers) = self.crowd.as_mut() else {
            return Err(VulkanError::Internal("crowd buffers missing"));
        };
        let mut report = FrameReport {
            stats,
            draws_main: 0,
            draws_shadow: 0,
            draws_attachments: 0,
            draws_ground: 0,
            dispatches: 0,
            uploaded_bytes: 0,
            mode: options.mode,
            culling: options.culling,
        };

        // 3. GPU culling inputs: the draw template (when the asset or capacity changed) and the
        // culling parameters (when they changed).
        if gpu_culling {
            let key = (asset.id, buffers.capacity);
            if buffers.template_for != Some(key) {
                let template = gpu::draw_args_template(
                    &asset.lods[..lod_count as usize],
                    buffers.capacity,
                    asset.attachment_first_index,
                    asset.attachment_index_count,
                );
                queue_write(&mut writes, buffers.args_template.buffer, 0, bytemuck::cast_slice(&template));
                buffers.template_for = Some(key);
            }
            let params = CullParams {
                record_count: count,
                capacity: buffers.capacity,
                attachment_max_lod: config.attachment_max_lod,
                attachments: u32::from(attachments_on),
            };
            if buffers.cull_params_written != Some(params) {
                uploaded +=
                    queue_write(&mut writes, buffers.cull_params.buffer, 0, bytemuck::bytes_of(&params));
                buffers.cull_params_written = Some(params);
            }
            buffers.gpu_lods = lod_count;
        }
        report.uploaded_bytes = uploaded;

        // From here on nothing fails: record.
        let d = &self.ctx.device;
        let shader_reads = vk::PipelineStageFlags::VERTEX_SHADER
            | vk::PipelineStageFlags::FRAGMENT_SHADER
            | vk::PipelineStageFlags::COMPUTE_SHADER
            | vk::PipelineStageFlags::DRAW_INDIRECT;
        let transfer = vk::PipelineStageFlags::TRANSFER;
        // SAFETY: `cb` is recording outside a render pass (the caller's contract); every object
        // recorded is live and owned by the renderer or the asset; the pipelines were made with the
        // layouts the sets are bound with.
        unsafe {
            // 4. Writes, after the previous frame's reads and writes of the same buffers.
            memory_barrier(
                d,
                cb,
                (shader_reads | transfer, vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE),
                (transfer, vk::AccessFlags::TRANSFER_WRITE),
            );
            for (buffer, offset, bytes) in &writes {
                for (k, chunk) in bytes.chunks(UPDATE_CHUNK).enumerate() {
                    d.cmd_update_buffer(cb, *buffer, offset + (k * UPDATE_CHUNK) as u64, chunk);
                }
            }
            if gpu_culling {
                memory_barrier(
                    d,
                    cb,
                    (transfer, vk::AccessFlags::TRANSFER_WRITE),
                    (transfer, vk::AccessFlags::TRANSFER_READ),
                );
                let region = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: gpu::DRAW_ARGS_BYTES }];
                d.cmd_copy_buffer(cb, buffers.args_template.buffer, buffers.draw_args.buffer, &region);
            }
            memory_barrier(
                d,
                cb,
                (transfer, vk::AccessFlags::TRANSFER_WRITE),
                (
                    shader_reads,
                    vk::AccessFlags::UNIFORM_READ
                        | vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::INDIRECT_COMMAND_READ,
                ),
            );

            // 5. Changed records packed for the scatter pass (many short ranges), copied into place.
            if scattered > 0
                && let Some(scatter) = &buffers.scatter
            {
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.scatter_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    self.scatter_pipeline_layout,
                    gpu::GROUP_SCATTER,
                    &[scatter.set],
                    &[],
                );
                let (x, y) = workgroups(u64::from(scattered), gpu::SCATTER_WORKGROUP_SIZE);
                d.cmd_dispatch(cb, x, y, 1);
                report.dispatches += 1;
                memory_barrier(
                    d,
                    cb,
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (
                        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::VERTEX_SHADER,
                        vk::AccessFlags::SHADER_READ,
                    ),
                );
            }

            // 6. GPU culling.
            if gpu_culling && count > 0 {
                let compute = StageSet::Compute as usize;
                let sets = [self.frame_sets[compute], asset.sets[compute], buffers.compute];
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, cull_pipeline);
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    self.pipeline_layouts[compute],
                    0,
                    &sets,
                    &[],
                );
                let (x, y) = workgroups(u64::from(count), gpu::CULL_WORKGROUP_SIZE);
                d.cmd_dispatch(cb, x, y, 1);
                report.dispatches += 1;
                memory_barrier(
                    d,
                    cb,
                    (vk::PipelineStageFlags::COMPUTE_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (
                        vk::PipelineStageFlags::VERTEX_SHADER | vk::PipelineStageFlags::DRAW_INDIRECT,
                        vk::AccessFlags::SHADER_READ | vk::AccessFlags::INDIRECT_COMMAND_READ,
                    ),
                );
            }
        }
        let lod_range = |lod: u32| {
            let l = &asset.lods[(lod as usize).min(asset.lods.len() - 1)];
            (l.first_index, l.index_count)
        };
        let draw_batch = |b: &DrawBatch, (first_index, index_count): (u32, u32)| {
            // SAFETY: inside dynamic rendering with a bound pipeline, sets and index buffer.
            unsafe {
                d.cmd_draw_indexed(cb, index_count, b.instance_count, first_index, 0, b.first_instance)
            };
        };
        let attach_range = (asset.attachment_first_index, asset.attachment_index_count);
        let draw_indirect = |draw: u64| {
            // SAFETY: as above; `draw_args` holds DRAW_ARGS_COUNT draws and has INDIRECT usage.
            unsafe {
                d.cmd_draw_indexed_indirect(cb, buffers.draw_args.buffer, draw * DRAW_ARGS_STRIDE, 1, 0)
            };
        };
        let bind = |set: StageSet, crowd_set: vk::DescriptorSet, size: [u32; 2]| {
            let sets = [self.frame_sets[set as usize], asset.sets[set as usize], crowd_set];
            // SAFETY: inside dynamic rendering; the sets match the layout.
            unsafe {
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::GRAPHICS,
                    self.pipeline_layouts[set as usize],
                    0,
                    &sets,
                    &[],
                );
                d.cmd_bind_index_buffer(cb, asset.index_buffer, 0, vk::IndexType::UINT32);
                d.cmd_set_viewport(cb, 0, &[flipped_viewport(size)]);
                d.cmd_set_scissor(cb, 0, &[full_rect(size)]);
            }
        };
        let bind_pipeline = |p: vk::Pipeline| {
            // SAFETY: a graphics pipeline of this device, inside dynamic rendering.
            unsafe { d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p) };
        };

        // 7. Shadow pass.
        if shadow_matrix.is_some() {
            let range =
                vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::DEPTH, ..color_range() };
            let shadow_barrier =
                |old,
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
                        .subresource_range(range)];
                    // SAFETY: outside dynamic rendering; the shadow map is the renderer's.
                    unsafe {
                        d.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b)
                    };
                };
            let tests =
                vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
            let depth_rw = vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
            // Previous contents are cleared: the old layout may be discarded.
            shadow_barrier(
                vk::ImageLayout::UNDEFINED,
                vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::empty()),
                (tests, depth_rw),
            );
            let size = [self.shadow_size, self.shadow_size];
            let depth_attachment = vk::RenderingAttachmentInfo::default()
                .image_view(self.shadow_view)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                });
            let info = vk::RenderingInfo::default()
                .render_area(full_rect(size))
                .layer_count(1)
                .depth_attachment(&depth_attachment);
            // SAFETY: outside any render pass; the attachment is in the layout given.
            unsafe { d.cmd_begin_rendering(cb, &info) };
            bind(StageSet::Depth, if gpu_culling { buffers.depth_gpu } else { buffers.depth_cpu }, size);
            bind_pipeline(depth_pipeline);
            if gpu_culling {
                for lod in 0..lod_count.min(config.shadow_max_lod.saturating_add(1)) {
                    draw_indirect(u64::from(lod));
                    report.draws_shadow += 1;
                }
            } else {
                for b in &shadow {
                    draw_batch(b, lod_range(b.lod));
                    report.draws_shadow += 1;
                }
            }
            if attachments_on {
                bind_pipeline(attach_depth_pipeline);
                if gpu_culling {
                    let last =
                        config.shadow_max_lod.min(config.attachment_max_lod).saturating_add(1).min(lod_count);
                    for lod in 0..last {
                        draw_indirect(u64::from(MAX_LODS as u32 + lod));
                        report.draws_shadow += 1;
                    }
                } else {
                    for b in attachments.iter().filter(|b| b.lod <= config.shadow_max_lod) {
                        draw_batch(b, attach_range);
                        report.draws_shadow += 1;
                    }
                }
            }
            // SAFETY: ends the rendering begun above.
            unsafe { d.cmd_end_rendering(cb) };
            shadow_barrier(
                vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL,
                vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                (
                    vk::PipelineStageFlags::LATE_FRAGMENT_TESTS,
                    vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                ),
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
            );
        }

        // 8. Colour pass.
        {
            let output = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT
                | vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS
                | vk::PipelineStageFlags::LATE_FRAGMENT_TESTS;
            let attachment_rw = vk::AccessFlags::COLOR_ATTACHMENT_READ
                | vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_READ
                | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE;
            // SAFETY: outside any render pass: orders this frame's attachment writes after the
            // previous frame's.
            unsafe {
                memory_barrier(
                    d,
                    cb,
                    (
                        output,
                        vk::AccessFlags::COLOR_ATTACHMENT_WRITE
                            | vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                    ),
                    (output, attachment_rw),
                );
            }
            let [r, g, b, a] = options.clear_color;
            let color_attachment = [vk::RenderingAttachmentInfo::default()
                .image_view(target.color)
                .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue { float32: [r as f32, g as f32, b as f32, a as f32] },
                })];
            let depth_attachment = vk::RenderingAttachmentInfo::default()
                .image_view(target.depth)
                .image_layout(vk::ImageLayout::DEPTH_ATTACHMENT_OPTIMAL)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 },
                });
            let info = vk::RenderingInfo::default()
                .render_area(full_rect(target.size))
                .layer_count(1)
                .color_attachments(&color_attachment)
                .depth_attachment(&depth_attachment);
            // SAFETY: outside any render pass; the caller guarantees the layouts given.
            unsafe { d.cmd_begin_rendering(cb, &info) };
            bind(
                StageSet::Colour,
                if gpu_culling { buffers.colour_gpu } else { buffers.colour_cpu },
                target.size,
            );
            if let Some(ground) = ground_pipeline {
                bind_pipeline(ground);
                // SAFETY: inside dynamic rendering with a bound pipeline and sets.
                unsafe { d.cmd_draw(cb, 6, 1, 0, 0) };
                report.draws_ground += 1;
            }
            if gpu_culling {
                for lod in 0..lod_count {
                    let fade = config.cross_fade && lod <= config.cross_fade_max_lod;
                    bind_pipeline(if fade { fade_pipeline } else { plain_pipeline });
                    draw_indirect(u64::from(lod));
                    report.draws_main += 1;
                }
            } else {
                bind_pipeline(fade_pipeline);
                for b in &main_fade {
                    draw_batch(b, lod_range(b.lod));
                    report.draws_main += 1;
                }
                bind_pipeline(plain_pipeline);
                for b in &main_plain {
                    draw_batch(b, lod_range(b.lod));
                    report.draws_main += 1;
                }
            }
            if attachments_on {
                bind_pipeline(attach_pipeline);
                if gpu_culling {
                    for lod in 0..lod_count.min(config.attachment_max_lod.saturating_add(1)) {
                        draw_indirect(u64::from(MAX_LODS as u32 + lod));
                        report.draws_attachments += 1;
                    }
                } else {
                    for b in &attachments {
                        draw_batch(b, attach_range);
                        report.draws_attachments += 1;
                    }
                }
            }
            // SAFETY: ends the rendering begun above.
            unsafe { d.cmd_end_rendering(cb) };
        }
        Ok(report)
    }

    /// Decodes every vertex of `records` at epoch-relative `time` with `cs_decode` /
    /// `cs_decode_bone` (the same code as the vertex paths) and reads the result back: vertex `v` of
    /// record `i` at `i * vertex_count + v`. For verification and tests; submits its own command
    /// buffer to the context's queue and waits for it. `cross_fade: false` selects the plain variant
    /// (clip B ignored). Uses its own buffers, so it does not disturb a frame recorded but not yet
    /// submitted. vat-wgpu's `Renderer::decode`.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoBones`] for bone mode without bones, [`VulkanError::BufferTooLarge`],
    /// [`VulkanError::Vk`], [`VulkanError::NoMemoryType`], [`VulkanError::Shader`].
    pub fn decode(
        &mut self,
        asset: &GpuAsset,
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
        let limit = storage_limit(&self.ctx);
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
        let pipeline = self.compute_pipeline(ComputeKey {
            entry,
            fade: cross_fade,
            influences: asset.influences,
            vertex_format: asset.vertex_format,
        })?;
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
                Some(Resource::Buffer(match n {
                    "instances" => record_buf.buffer,
                    "decode_params" => params_buf.buffer,
                    "decoded" => out.buffer,
                    "instance_list" => visible,
                    "cull_params" => cull,
                    "visible" => visible,
                    "draw_args" => draw_args,
                    _ => return None,
                }))
            },
        )?;
        let sets = [frame_set, asset.sets[compute], crowd_set];
        let layout = self.pipeline_layouts[compute];
        let (x, y) = workgroups(count, gpu::DECODE_WORKGROUP_SIZE);
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
    /// GPU-culled frame; empty before any. Submit that frame to the context's queue first: this
    /// submits a barrier (device writes -> host reads) to the same queue, waits for it, then reads.
    /// For tests and debugging: compare with the CPU path after sorting.
    ///
    /// # Errors
    /// [`VulkanError::Vk`] if the submission or the wait fails.
    pub fn read_gpu_visible(&self) -> Result<Vec<Vec<u32>>, VulkanError> {
        let Some(c) = &self.crowd else { return Ok(Vec::new()) };
        if c.gpu_lods == 0 {
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
        let words = |b: &HostBuffer| -> Result<Vec<u32>, VulkanError> {
            let bytes = c.owned.read(b, b.size as usize)?;
            Ok(bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect())
        };
        let args = words(&c.draw_args)?;
        let visible = words(&c.visible)?;
        let mut out = Vec::with_capacity(c.gpu_lods as usize);
        for lod in 0..c.gpu_lods as usize {
            let n = args.get(lod * gpu::DRAW_ARGS_WORDS as usize + 1).copied().unwrap_or(0).min(c.capacity)
                as usize;
            let start = lod * c.capacity as usize;
            out.push(visible.get(start..start + n).map(<[u32]>::to_vec).unwrap_or_default());
        }
        Ok(out)
    }
}

/// Records the copy of a staging buffer into a whole one-level colour image, with its layout
/// transitions (`UNDEFINED` -> `TRANSFER_DST_OPTIMAL` -> `SHADER_READ_ONLY_OPTIMAL`).
///
/// # Safety
/// `cb` must be recording outside a render pass; `buffer` must hold `width * height` texels of the
/// image's format; both must be live.
unsafe fn record_texture_copy(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    image: vk::Image,
    width: u32,
    height: u32,
) {
    let to_dst = [vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::empty())
        .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .old_layout(vk::ImageLayout::UNDEFINED)
        .new_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(color_range())];
    let region = [whole_colour_image_copy(width, height)];
    let to_read = [vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::SHADER_READ)
        .old_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
        .new_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(color_range())];
    // SAFETY: the caller's contract.
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
        device.cmd_copy_buffer_to_image(cb, buffer, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &region);
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

/// A copy of a whole single-layer, single-mip colour image of `width` x `height` texels to or from
/// the start of a tightly packed buffer.
pub(crate) fn whole_colour_image_copy(width: u32, height: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_viewport_flips_y_like_wgpu_hal() {
        let v = flipped_viewport([320, 240]);
        assert_eq!((v.y, v.height), (240.0, -240.0));
    }

    #[test]
    fn workgroups_split_at_65535() {
        assert_eq!(workgroups(64, 64), (1, 1));
        assert_eq!(workgroups(65536 * 64, 64), (65535, 2));
    }
}
