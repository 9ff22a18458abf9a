//! The crowd renderer: resources, pipelines and passes.
//!
//! Every bind-group layout comes from `vat_core::gpu::BINDINGS` through [`crate::conv`], per pipeline
//! kind ([`StageSet`]): colour pipelines (vertex + fragment) see the shadow map, depth-only shadow
//! pipelines (vertex) do not, compute pipelines see the decode and culling outputs. Every resource is
//! bound by its WGSL name. The record scatter (`cs_scatter`) has a layout of its own: group 3 alone.

use std::collections::HashMap;

use vat_core::container::{Asset, Lod};
use vat_core::crowd::{Camera, Crowd, CrowdStats, DrawBatch, FrameDraws, Frustum};
use vat_core::encoding::VertexFormat;
use vat_core::gpu::{
    self, AssetConstants, AttachmentMesh, CullParams, DecodeParams, DecodedVertex, FrameInputs,
    FrameUniforms, ScatterPlan, ShaderStages,
};
use vat_core::instance::InstanceRecord;
use vat_core::lod::MAX_LODS;
use wgpu::util::DeviceExt;

use crate::device::REQUIRED_FEATURES;
use crate::target::read_mapped;
use crate::{
    Culling, FrameReport, RenderError, RenderMode, RenderOptions, RenderTarget, RendererConfig, conv,
};

/// Smallest record capacity of the per-crowd buffers (records).
const MIN_CAPACITY: u32 = 64;
/// Smallest capacity of the scatter buffers (records).
const MIN_SCATTER_CAPACITY: u32 = 1024;
/// Bytes of one indexed-indirect draw.
const DRAW_ARGS_STRIDE: u64 = gpu::DRAW_ARGS_WORDS as u64 * 4;
/// Bytes of one chunk of the staging belt that carries the frame uniforms.
const BELT_CHUNK: u64 = 4096;
// The belt copies whole words.
const _: () = assert!(size_of::<FrameUniforms>().is_multiple_of(4));

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
    /// `vat_core::gpu::vertex_format_code` of the asset ([`gpu::OVERRIDE_VERTEX_FORMAT`]).
    vertex_format: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ComputeKey {
    entry: &'static str,
    fade: bool,
    influences: u32,
    /// `vat_core::gpu::vertex_format_code` of the asset ([`gpu::OVERRIDE_VERTEX_FORMAT`]).
    vertex_format: u32,
}

/// A baked asset on the GPU: animation and bone textures, clip table, vertex streams, index buffer
/// (every LOD, then the attachments), attachment meshes and capture tracks, with their bind groups.
/// Keeps no CPU copy of the payload. Made by [`Renderer::upload`]; use it only with that renderer.
#[derive(Debug)]
pub struct GpuAsset {
    id: u64,
    /// Group 1, per [`StageSet`].
    groups: Vec<wgpu::BindGroup>,
    index_buffer: wgpu::Buffer,
    lods: Vec<Lod>,
    attachment_first_index: u32,
    attachment_index_count: u32,
    vertex_count: u32,
    influences: u32,
    /// The vertex format of the animation textures (selects the decode variant).
    vertex_format: VertexFormat,
    gpu_bytes: u64,
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

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// The vertex format of its animation textures.
    pub fn vertex_format(&self) -> VertexFormat {
        self.vertex_format
    }

    /// Bytes of GPU memory its textures and buffers take.
    pub fn gpu_bytes(&self) -> u64 {
        self.gpu_bytes
    }
}

/// Per-crowd GPU state: the records (resident), the CPU path's instance list, and the GPU path's
/// visible lists and indirect draws.
#[derive(Debug)]
struct CrowdBuffers {
    /// Records the record buffer holds; also the size of one LOD region of `visible`.
    capacity: u32,
    records: wgpu::Buffer,
    list_capacity: u32,
    list: wgpu::Buffer,
    visible: wgpu::Buffer,
    draw_args: wgpu::Buffer,
    args_template: wgpu::Buffer,
    /// (asset id, capacity) the template was written for.
    template_for: Option<(u64, u32)>,
    cull_params: wgpu::Buffer,
    /// What `cull_params` holds (None: nothing yet); rewritten only when it changes.
    cull_params_written: Option<CullParams>,
    /// Group 2 bind groups: colour and depth with the CPU list, colour and depth with the GPU lists,
    /// and compute (culling).
    colour_cpu: wgpu::BindGroup,
    depth_cpu: wgpu::BindGroup,
    colour_gpu: wgpu::BindGroup,
    depth_gpu: wgpu::BindGroup,
    compute: wgpu::BindGroup,
    /// Whether the GPU records mirror the crowd's (false: upload every record next frame).
    records_synced: bool,
    /// Whether the GPU instance list mirrors the crowd's as of its last `Crowd::prepare_frame`
    /// (false: upload the whole list at the next CPU-culled frame). The GPU-culled path neither
    /// reads nor writes the list.
    list_synced: bool,
    /// Records the crowd had at the last frame (a smaller count means another crowd: resync).
    last_count: u32,
    /// LODs of the last GPU-culled frame (for [`Renderer::read_gpu_visible`]); 0 before any.
    gpu_lods: u32,
    /// The scatter pass's buffers and group 3, created on the first frame that needs them.
    scatter: Option<ScatterBuffers>,
}

/// Packed changed records and their destinations (`vat_core::gpu::ScatterPlan`), bound with the
/// record buffer as group 3 of `cs_scatter`.
#[derive(Debug)]
struct ScatterBuffers {
    /// Records the buffers hold.
    capacity: u32,
    indices: wgpu::Buffer,
    records: wgpu::Buffer,
    group: wgpu::BindGroup,
}

/// The CPU-culled path's batches of one frame (all empty on the GPU-culled path).
#[derive(Debug, Default)]
struct Batches {
    main_fade: Vec<DrawBatch>,
    main_plain: Vec<DrawBatch>,
    shadow: Vec<DrawBatch>,
    attachments: Vec<DrawBatch>,
}

/// Renders crowds of uploaded assets with vat-core's shader; see the crate docs.
///
/// A renderer holds the GPU copy of one crowd's records between frames (uploading only what the
/// crowd reports as changed); to render a different crowd with it, call
/// [`forget_crowd`](Self::forget_crowd) first (or use one renderer per crowd).
#[derive(Debug)]
pub struct Renderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    config: RendererConfig,
    module: wgpu::ShaderModule,
    /// `[stage set][group]`.
    group_layouts: Vec<Vec<wgpu::BindGroupLayout>>,
    /// Per stage set.
    pipeline_layouts: Vec<wgpu::PipelineLayout>,
    /// Group 3 (`cs_scatter`'s own) and the scatter pipeline (its layout holds group 3 alone).
    scatter_layout: wgpu::BindGroupLayout,
    scatter_pipeline: wgpu::ComputePipeline,
    /// The frame's upload plan; its buffers are reused every frame.
    scatter_plan: ScatterPlan,
    /// Test hook: the upload step at which [`Renderer::upload`] fails on purpose.
    #[cfg(feature = "fault-injection")]
    upload_fault: Option<u32>,
    render_pipelines: HashMap<RenderKey, wgpu::RenderPipeline>,
    compute_pipelines: HashMap<ComputeKey, wgpu::ComputePipeline>,
    frame_buffer: wgpu::Buffer,
    shadow_view: wgpu::TextureView,
    /// Group 0 per stage set.
    frame_groups: Vec<wgpu::BindGroup>,
    shadow_sampler: wgpu::Sampler,
    /// Stand-ins for the decode bindings in the culling group and the culling bindings in the decode
    /// group (one compute layout serves both entry points).
    dummy_decode_params: wgpu::Buffer,
    dummy_decoded: wgpu::Buffer,
    dummy_cull_params: wgpu::Buffer,
    dummy_visible: wgpu::Buffer,
    dummy_draw_args: wgpu::Buffer,
    crowd: Option<CrowdBuffers>,
    next_asset_id: u64,
    /// Mapped staging chunks for the frame uniforms, copied in the frame's encoder and re-mapped when
    /// it is submitted: unlike `queue.write_buffer`, no staging buffer is created per frame (on
    /// lavapipe that was a fifth of a GPU-culled frame's CPU time). Writes made only on change
    /// (records, instance list, culling parameters) go through `queue.write_buffer`.
    belt: wgpu::util::StagingBelt,
}

/// A storage/uniform buffer initialised with `bytes`, padded with zeros to at least `min_size` bytes
/// and a multiple of 4.
fn buffer_init(
    device: &wgpu::Device,
    label: &str,
    bytes: &[u8],
    min_size: usize,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    let len = bytes.len().max(min_size).max(4).next_multiple_of(4);
    if len == bytes.len() {
        return device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytes,
            usage,
        });
    }
    let mut padded = bytes.to_vec();
    padded.resize(len, 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &padded,
        usage,
    })
}

fn empty_buffer(device: &wgpu::Device, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).next_multiple_of(4),
        usage,
        mapped_at_creation: false,
    })
}

/// The largest storage buffer the renderer may create and bind whole, bytes.
fn storage_limit(limits: &wgpu::Limits) -> u64 {
    limits.max_storage_buffer_binding_size.min(limits.max_buffer_size)
}

/// Creates the bind group of `group` for `set` from resources looked up by WGSL name.
fn bind_group<'a>(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    group: u32,
    set: StageSet,
    label: &str,
    resource: impl Fn(&str) -> Option<wgpu::BindingResource<'a>>,
) -> Result<wgpu::BindGroup, RenderError> {
    let mut entries = Vec::new();
    for b in gpu::bindings_for_stages(group, set.stages()) {
        let r = resource(b.name)
            .ok_or_else(|| RenderError::Device(format!("internal: no resource for binding {}", b.name)))?;
        entries.push(wgpu::BindGroupEntry { binding: b.binding, resource: r });
    }
    Ok(device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries }))
}

/// Workgroup counts `(x, y)` for `threads` threads of `size` per workgroup, x at most 65535 (the
/// shaders linearise `global_id.y * num_workgroups.x * size + global_id.x`).
fn workgroups(threads: u64, size: u32) -> (u32, u32) {
    let groups = threads.div_ceil(u64::from(size)).max(1);
    let x = groups.min(65535);
    let y = groups.div_ceil(x);
    (x as u32, y.min(u64::from(u32::MAX)) as u32)
}

/// Queues a frame's changed record ranges (`ranges`, ascending) as `vat_core::gpu::ScatterPlan`
/// says: long ranges and few short ones with one `write_buffer` each, many short ones packed into the
/// scatter buffers (grown and re-bound as needed) for the scatter pass. Returns the bytes queued and
/// the records the scatter pass must copy (0: no pass).
fn queue_record_ranges(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    scatter_layout: &wgpu::BindGroupLayout,
    buffers: &mut CrowdBuffers,
    plan: &mut ScatterPlan,
    ranges: &[(u32, &[InstanceRecord])],
) -> Result<(u64, u32), RenderError> {
    plan.plan(ranges);
    let mut uploaded = 0u64;
    for (first, records) in plan.direct.iter().filter_map(|&k| ranges.get(k)) {
        let bytes: &[u8] = bytemuck::cast_slice(records);
        queue.write_buffer(&buffers.records, u64::from(*first) * size_of::<InstanceRecord>() as u64, bytes);
        uploaded += bytes.len() as u64;
    }
    let n = plan.scattered();
    if n == 0 {
        return Ok((uploaded, 0));
    }
    if buffers.scatter.as_ref().is_none_or(|s| s.capacity < n) {
        let capacity = n.next_power_of_two().max(MIN_SCATTER_CAPACITY);
        let limit = storage_limit(&device.limits());
        let record_bytes = u64::from(capacity) * size_of::<InstanceRecord>() as u64;
        if record_bytes > limit {
            return Err(RenderError::BufferTooLarge { what: "record scatter", size: record_bytes, limit });
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let indices = empty_buffer(device, "vat scatter indices", (u64::from(capacity) + 1) * 4, usage);
        let records = empty_buffer(device, "vat scatter records", record_bytes, usage);
        let group = bind_group(
            device,
            scatter_layout,
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
        buffers.scatter = Some(ScatterBuffers { capacity, indices, records, group });
    }
    let Some(scatter) = &buffers.scatter else {
        return Err(RenderError::Device("internal: scatter buffers missing".into()));
    };
    let indices: &[u8] = bytemuck::cast_slice(&plan.indices);
    let records: &[u8] = bytemuck::cast_slice(&plan.records);
    // One write each; the plan's buffers are the renderer's, reused every frame.
    queue.write_buffer(&scatter.indices, 0, indices);
    queue.write_buffer(&scatter.records, 0, records);
    uploaded += (indices.len() + records.len()) as u64;
    Ok((uploaded, n))
}

/// Copies `bytes` (a multiple of 4) to the start of `target` through the staging belt, in `encoder`.
fn belt_write(
    belt: &mut wgpu::util::StagingBelt,
    encoder: &mut wgpu::CommandEncoder,
    target: &wgpu::Buffer,
    bytes: &[u8],
) {
    if let Some(size) = wgpu::BufferSize::new(bytes.len() as u64) {
        belt.write_buffer(encoder, target, 0, size).copy_from_slice(bytes);
    }
}

impl Renderer {
    /// Creates the layouts, the per-frame resources (uniforms, shadow map, sampler) and the culling
    /// pipeline; render and decode pipelines are created on first use (each variant once).
    ///
    /// # Errors
    /// [`RenderError::MissingFeature`] without `INDIRECT_FIRST_INSTANCE`, [`RenderError::LimitTooLow`]
    /// if the device allows fewer than 8 storage buffers per stage, [`RenderError::Device`] if wgpu
    /// reports an error while creating them.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        config: RendererConfig,
    ) -> Result<Self, RenderError> {
        for (feature, name, why) in REQUIRED_FEATURES {
            if !device.features().contains(feature) {
                return Err(RenderError::MissingFeature {
                    feature: name,
                    why,
                    adapter: "the device (opened without it)".into(),
                });
            }
        }
        let limits = device.limits();
        let storage_per_stage = u64::from(limits.max_storage_buffers_per_shader_stage);
        if storage_per_stage < 8 {
            return Err(RenderError::LimitTooLow {
                limit: "max_storage_buffers_per_shader_stage",
                required: 8,
                available: storage_per_stage,
            });
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("vat.wgsl"),
            source: wgpu::ShaderSource::Wgsl(gpu::SHADER_SOURCE.into()),
        });
        let group_layouts: Vec<Vec<wgpu::BindGroupLayout>> = StageSet::ALL
            .iter()
            .map(|set| {
                (0..gpu::group_count())
                    .map(|g| {
                        device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                            label: Some("vat group"),
                            entries: &conv::bind_group_layout_entries(g, set.stages()),
                        })
                    })
                    .collect()
            })
            .collect();
        let pipeline_layouts = group_layouts
            .iter()
            .map(|layouts| {
                let refs: Vec<Option<&wgpu::BindGroupLayout>> = layouts.iter().map(Some).collect();
                device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: Some("vat pipeline layout"),
                    bind_group_layouts: &refs,
                    immediate_size: 0,
                })
            })
            .collect();
        let scatter_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("vat scatter group"),
            entries: &conv::bind_group_layout_entries(gpu::GROUP_SCATTER, ShaderStages::COMPUTE),
        });
        let mut scatter_groups: Vec<Option<&wgpu::BindGroupLayout>> = vec![None; gpu::GROUP_SCATTER as usize];
        scatter_groups.push(Some(&scatter_layout));
        let scatter_pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("vat scatter layout"),
            bind_group_layouts: &scatter_groups,
            immediate_size: 0,
        });
        let scatter_pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(gpu::ENTRY_POINT_SCATTER),
            layout: Some(&scatter_pipeline_layout),
            module: &module,
            entry_point: Some(gpu::ENTRY_POINT_SCATTER),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        let uniform = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let storage = wgpu::BufferUsages::STORAGE;
        let frame_buffer = empty_buffer(device, "vat frame", size_of::<FrameUniforms>() as u64, uniform);
        let size = config.shadow_map_size.clamp(1, limits.max_texture_dimension_2d);
        let shadow_map = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("vat shadow map"),
            size: wgpu::Extent3d { width: size, height: size, depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Depth32Float,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let shadow_view = shadow_map.create_view(&wgpu::TextureViewDescriptor::default());
        let shadow_sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("vat shadow sampler"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            compare: Some(wgpu::CompareFunction::LessEqual),
            ..Default::default()
        });
        let mut renderer = Self {
            device: device.clone(),
            queue: queue.clone(),
            config,
            module,
            frame_groups: Vec::new(),
            group_layouts,
            pipeline_layouts,
            scatter_layout,
            scatter_pipeline,
            scatter_plan: ScatterPlan::default(),
            #[cfg(feature = "fault-injection")]
            upload_fault: None,
            render_pipelines: HashMap::new(),
            compute_pipelines: HashMap::new(),
            dummy_decode_params: empty_buffer(device, "vat dummy", size_of::<DecodeParams>() as u64, uniform),
            dummy_decoded: empty_buffer(device, "vat dummy", size_of::<DecodedVertex>() as u64, storage),
            dummy_cull_params: empty_buffer(device, "vat dummy", size_of::<CullParams>() as u64, uniform),
            dummy_visible: empty_buffer(device, "vat dummy", 4, storage),
            dummy_draw_args: empty_buffer(device, "vat dummy", gpu::DRAW_ARGS_BYTES, storage),
            frame_buffer,
            shadow_view,
            shadow_sampler,
            crowd: None,
            belt: wgpu::util::StagingBelt::new(device.clone(), BELT_CHUNK),
            next_asset_id: 1,
        };
        renderer.frame_groups = renderer.frame_groups_for(&renderer.frame_buffer)?;
        renderer.compute_pipeline(ComputeKey {
            entry: gpu::ENTRY_POINT_CULL,
            fade: true,
            influences: 4,
            vertex_format: 0,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(RenderError::Device(e.to_string()));
        }
        Ok(renderer)
    }

    /// The configuration the renderer was created with.
    pub fn config(&self) -> &RendererConfig {
        &self.config
    }

    /// Group 0 bind groups (per stage set) over `frame`.
    fn frame_groups_for(&self, frame: &wgpu::Buffer) -> Result<Vec<wgpu::BindGroup>, RenderError> {
        StageSet::ALL
            .iter()
            .map(|&set| {
                bind_group(
                    &self.device,
                    &self.group_layouts[set as usize][0],
                    gpu::GROUP_FRAME,
                    set,
                    "vat frame",
                    |name| match name {
                        "frame" => Some(frame.as_entire_binding()),
                        "shadow_map" => Some(wgpu::BindingResource::TextureView(&self.shadow_view)),
                        "shadow_sampler" => Some(wgpu::BindingResource::Sampler(&self.shadow_sampler)),
                        _ => None,
                    },
                )
            })
            .collect()
    }

    /// The pipeline constants (WGSL overrides) of a variant.
    fn constants(&self, fade: bool, influences: u32, vertex_format: u32) -> [(&'static str, f64); 4] {
        [
            (gpu::OVERRIDE_INTERPOLATION, f64::from(self.config.interpolation.as_u32())),
            (gpu::OVERRIDE_CROSS_FADE, if fade { 1.0 } else { 0.0 }),
            (gpu::OVERRIDE_INFLUENCES, f64::from(if influences == 8 { 8 } else { 4 })),
            (gpu::OVERRIDE_VERTEX_FORMAT, f64::from(vertex_format)),
        ]
    }

    fn compute_pipeline(&mut self, key: ComputeKey) -> wgpu::ComputePipeline {
        if let Some(p) = self.compute_pipelines.get(&key) {
            return p.clone();
        }
        let constants = self.constants(key.fade, key.influences, key.vertex_format);
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(key.entry),
            layout: Some(&self.pipeline_layouts[StageSet::Compute as usize]),
            module: &self.module,
            entry_point: Some(key.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        });
        self.compute_pipelines.insert(key, pipeline.clone());
        pipeline
    }

    fn render_pipeline(&mut self, key: RenderKey) -> wgpu::RenderPipeline {
        if let Some(p) = self.render_pipelines.get(&key) {
            return p.clone();
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
        let constants = self.constants(key.fade, key.influences, key.vertex_format);
        let options = wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() };
        let set = if key.depth_only { StageSet::Depth } else { StageSet::Colour };
        let targets = [Some(wgpu::ColorTargetState {
            format: self.config.color_format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        let (depth_format, bias) = if key.depth_only {
            (
                wgpu::TextureFormat::Depth32Float,
                wgpu::DepthBiasState { constant: 2, slope_scale: 2.0, clamp: 0.0 },
            )
        } else {
            (self.config.depth_format, wgpu::DepthBiasState::default())
        };
        let pipeline = self.device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(entry),
            layout: Some(&self.pipeline_layouts[set as usize]),
            vertex: wgpu::VertexState {
                module: &self.module,
                entry_point: Some(entry),
                compilation_options: options.clone(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleList,
                front_face: wgpu::FrontFace::Ccw,
                cull_mode: Some(wgpu::Face::Back),
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: depth_format,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: wgpu::StencilState::default(),
                bias,
            }),
            multisample: wgpu::MultisampleState::default(),
            fragment: (!key.depth_only).then(|| wgpu::FragmentState {
                module: &self.module,
                entry_point: Some(gpu::ENTRY_POINT_FS_LIT),
                compilation_options: options.clone(),
                targets: &targets,
            }),
            multiview_mask: None,
            cache: None,
        });
        self.render_pipelines.insert(key, pipeline.clone());
        pipeline
    }

    /// Uploads a validated asset. Texture and buffer sizes are checked against the device's limits
    /// first; wgpu errors (out of memory, validation) are caught in error scopes. On failure,
    /// everything created so far is released (dropped) and nothing is kept.
    ///
    /// # Errors
    /// [`RenderError::AssetHasNoVertexAnimation`], [`RenderError::AssetHasNoLods`],
    /// [`RenderError::TextureTooLarge`], [`RenderError::BufferTooLarge`], [`RenderError::Device`].
    /// Every [`VertexFormat`] uploads: its texel formats are core WebGPU formats that every device
    /// can sample with `textureLoad`.
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, RenderError> {
        let m = asset.manifest();
        let va = m.vertex_animation.as_ref().ok_or(RenderError::AssetHasNoVertexAnimation)?;
        let vertex_textures = gpu::vertex_textures(asset).ok_or(RenderError::AssetHasNoVertexAnimation)?;
        let constants = AssetConstants::from_manifest(m).ok_or(RenderError::AssetHasNoVertexAnimation)?;
        let index_bytes =
            asset.index_bytes().filter(|_| !m.lods.is_empty()).ok_or(RenderError::AssetHasNoLods)?;
        let limits = self.device.limits();
        let max_dim = limits.max_texture_dimension_2d;
        let check_texture = |what, width: u32, height: u32| {
            if width > max_dim || height > max_dim {
                Err(RenderError::TextureTooLarge { what, width, height, limit: max_dim })
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
        let storage_limit = storage_limit(&limits);
        let check_buffer = |what, size: usize| {
            let size = size as u64;
            if size > storage_limit {
                Err(RenderError::BufferTooLarge { what, size, limit: storage_limit })
            } else {
                Ok(())
            }
        };
        check_buffer("rest vertices", rest.len() * size_of::<gpu::RestVertex>())?;
        check_buffer("attachment vertices", attachments.vertices.len() * size_of::<gpu::AttachmentVertex>())?;
        check_buffer("capture", attachments.capture_rows.len() * 16)?;
        check_buffer("index", index_bytes.len() + attachments.indices.len() * 4)?;
        if let Some(b) = &m.bone_animation {
            check_buffer("joints", asset.blob(b.joints).len())?;
            check_buffer("weights", asset.blob(b.weights).len())?;
        }

        let device = self.device.clone();
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut gpu_bytes = 0u64;
        let texture = |label, width: u32, height: u32, format: wgpu::TextureFormat, bytes: &[u8]| {
            let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
            let t = device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            let texel = format.block_copy_size(None).unwrap_or(4);
            self.queue.write_texture(
                t.as_image_copy(),
                bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(width * texel),
                    rows_per_image: Some(height),
                },
                size,
            );
            t
        };
        // Every vertex-texture binding: the format's textures and 1x1 stand-ins for the others.
        let vat_textures = vertex_textures.map(|t| {
            gpu_bytes += t.data.bytes.len() as u64;
            let label = if t.stand_in { "vat texture (unused by this format)" } else { "vat texture" };
            let texture = texture(
                label,
                t.data.width,
                t.data.height,
                conv::map_texel_format(t.data.format),
                t.data.bytes,
            );
            (t.name, texture)
        });
        self.upload_step(0)?;
        let (bone_texture, joints, weights, influences) = match &m.bone_animation {
            Some(b) => {
                let bytes = asset.blob(b.texture);
                gpu_bytes += bytes.len() as u64;
                let t = texture(
                    "vat bone texture",
                    b.layout.width,
                    b.layout.height,
                    wgpu::TextureFormat::Rgba32Float,
                    bytes,
                );
                (t, asset.blob(b.joints), asset.blob(b.weights), b.influences)
            }
            None => {
                let t = texture("vat bone texture (none)", 1, 1, wgpu::TextureFormat::Rgba32Float, &[0; 16]);
                (t, &[][..], &[][..], 0)
            }
        };
        let [morph_texture, morph_weights] = morph.map(|t| {
            gpu_bytes += t.bytes.len() as u64;
            texture("vat morph texture", t.width, t.height, conv::map_texel_format(t.format), t.bytes)
        });
        self.upload_step(1)?;
        let storage = wgpu::BufferUsages::STORAGE;
        let clips = gpu::clip_records(&m.clips);
        let buffers = [
            buffer_init(&device, "vat clips", bytemuck::cast_slice(&clips), 32, storage),
            buffer_init(&device, "vat asset", bytemuck::bytes_of(&constants), 0, wgpu::BufferUsages::UNIFORM),
            buffer_init(&device, "vat joints", joints, 4, storage),
            buffer_init(&device, "vat weights", weights, 4, storage),
            buffer_init(&device, "vat rest vertices", bytemuck::cast_slice(&rest), 32, storage),
            buffer_init(
                &device,
                "vat attachment vertices",
                bytemuck::cast_slice(&attachments.vertices),
                32,
                storage,
            ),
            buffer_init(
                &device,
                "vat captures",
                bytemuck::cast_slice(&attachments.capture_rows),
                16,
                storage,
            ),
        ];
        let [clip_buf, asset_buf, joint_buf, weight_buf, rest_buf, attach_buf, capture_buf] = &buffers;
        let mut indices = index_bytes.to_vec();
        let attachment_first_index = (index_bytes.len() / 4) as u32;
        indices.extend(attachments.indices.iter().flat_map(|i| i.to_le_bytes()));
        self.upload_step(2)?;
        let index_buffer = buffer_init(&device, "vat indices", &indices, 4, wgpu::BufferUsages::INDEX);
        drop(indices);
        self.upload_step(3)?;
        gpu_bytes += buffers.iter().map(wgpu::Buffer::size).sum::<u64>() + index_buffer.size();
        let vat_views =
            vat_textures.map(|(name, t)| (name, t.create_view(&wgpu::TextureViewDescriptor::default())));
        let bone_view = bone_texture.create_view(&wgpu::TextureViewDescriptor::default());
        let morph_view = morph_texture.create_view(&wgpu::TextureViewDescriptor::default());
        let morph_weights_view = morph_weights.create_view(&wgpu::TextureViewDescriptor::default());
        let groups = StageSet::ALL
            .iter()
            .map(|&set| {
                bind_group(
                    &device,
                    &self.group_layouts[set as usize][1],
                    gpu::GROUP_ASSET,
                    set,
                    "vat asset",
                    |name| {
                        if let Some((_, view)) = vat_views.iter().find(|(n, _)| *n == name) {
                            return Some(wgpu::BindingResource::TextureView(view));
                        }
                        Some(match name {
                            "clips" => clip_buf.as_entire_binding(),
                            "asset" => asset_buf.as_entire_binding(),
                            "bone_texture" => wgpu::BindingResource::TextureView(&bone_view),
                            "joints" => joint_buf.as_entire_binding(),
                            "weights" => weight_buf.as_entire_binding(),
                            "rest_vertices" => rest_buf.as_entire_binding(),
                            "attachment_vertices" => attach_buf.as_entire_binding(),
                            "captures" => capture_buf.as_entire_binding(),
                            "morph_texture" => wgpu::BindingResource::TextureView(&morph_view),
                            "morph_weights" => wgpu::BindingResource::TextureView(&morph_weights_view),
                            _ => return None,
                        })
                    },
                )
            })
            .collect::<Result<Vec<_>, _>>();
        // Pop in reverse order of pushing; report the first error. Whatever was created is dropped
        // on the way out (wgpu frees it once nothing refers to it).
        let validation_error = pollster::block_on(validation.pop());
        let oom_error = pollster::block_on(oom.pop());
        if let Some(e) = oom_error.or(validation_error) {
            return Err(RenderError::Device(e.to_string()));
        }
        let groups = groups?;
        self.upload_step(4)?;
        let id = self.next_asset_id;
        self.next_asset_id += 1;
        Ok(GpuAsset {
            id,
            groups,
            index_buffer,
            lods: m.lods.clone(),
            attachment_first_index,
            attachment_index_count: attachments.indices.len() as u32,
            vertex_count: m.vertex_count,
            influences,
            vertex_format: va.format,
            gpu_bytes,
        })
    }

    /// Test hook (feature `fault-injection`): the next uploads fail on purpose at `step` (0: after the
    /// animation texture, 1: after the bone texture, 2: after the asset buffers, 3: after the index
    /// buffer, 4: after the bind groups, i.e. just before success), with everything created so far
    /// released; `None` turns it off. [`UPLOAD_STEPS`](Self::UPLOAD_STEPS) is the number of steps.
    #[cfg(feature = "fault-injection")]
    pub fn inject_upload_fault(&mut self, step: Option<u32>) {
        self.upload_fault = step;
    }

    /// Number of fault-injection steps of [`upload`](Self::upload).
    #[cfg(feature = "fault-injection")]
    pub const UPLOAD_STEPS: u32 = 5;

    /// Fails the upload at `step` when a fault is injected there.
    #[allow(clippy::unused_self, clippy::unnecessary_wraps)] // without the feature: a no-op
    fn upload_step(&self, step: u32) -> Result<(), RenderError> {
        #[cfg(feature = "fault-injection")]
        if self.upload_fault == Some(step) {
            return Err(RenderError::Device(format!("injected upload fault at step {step}")));
        }
        let _ = step;
        Ok(())
    }

    /// Forgets the GPU copy of the crowd's records: the next [`render`](Self::render) uploads every
    /// record, and the next CPU-culled one the whole instance list. Call it before rendering another crowd with this
    /// renderer.
    pub fn forget_crowd(&mut self) {
        if let Some(c) = &mut self.crowd {
            c.records_synced = false;
            c.list_synced = false;
        }
    }

    /// Makes sure the per-crowd buffers hold `count` records and `list_len` list entries; new
    /// buffers start unsynced.
    fn ensure_crowd_buffers(&mut self, count: u32, list_len: u32) -> Result<(), RenderError> {
        let (need_records, need_list) = match &self.crowd {
            Some(c) => (count > c.capacity, list_len > c.list_capacity),
            None => (true, true),
        };
        if !need_records && !need_list {
            return Ok(());
        }
        let limits = self.device.limits();
        let limit = storage_limit(&limits);
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
                return Err(RenderError::BufferTooLarge { what, size, limit });
            }
        }
        let d = &self.device;
        let copy = wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let storage = wgpu::BufferUsages::STORAGE | copy;
        let records = empty_buffer(d, "vat records", record_bytes, storage);
        let list = empty_buffer(d, "vat instance list", list_bytes, storage);
        let visible = empty_buffer(d, "vat visible lists", visible_bytes, storage);
        let draw_args =
            empty_buffer(d, "vat draw args", gpu::DRAW_ARGS_BYTES, storage | wgpu::BufferUsages::INDIRECT);
        let args_template = empty_buffer(d, "vat draw args template", gpu::DRAW_ARGS_BYTES, copy);
        let cull_params = empty_buffer(
            d,
            "vat cull params",
            size_of::<CullParams>() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let group = |set: StageSet, instance_list: &wgpu::Buffer| {
            bind_group(d, &self.group_layouts[set as usize][2], gpu::GROUP_CROWD, set, "vat crowd", |name| {
                Some(match name {
                    "instances" => records.as_entire_binding(),
                    "instance_list" => instance_list.as_entire_binding(),
                    "decode_params" => self.dummy_decode_params.as_entire_binding(),
                    "decoded" => self.dummy_decoded.as_entire_binding(),
                    "cull_params" => cull_params.as_entire_binding(),
                    "visible" => visible.as_entire_binding(),
                    "draw_args" => draw_args.as_entire_binding(),
                    _ => return None,
                })
            })
        };
        let buffers = CrowdBuffers {
            capacity,
            list_capacity,
            colour_cpu: group(StageSet::Colour, &list)?,
            depth_cpu: group(StageSet::Depth, &list)?,
            colour_gpu: group(StageSet::Colour, &visible)?,
            depth_gpu: group(StageSet::Depth, &visible)?,
            compute: group(StageSet::Compute, &list)?,
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
        };
        self.crowd = Some(buffers);
        Ok(())
    }

    /// The queue and the per-crowd buffers for `count` records (and `list_len` list entries), marked
    /// unsynced when the crowd shrank (another crowd).
    fn crowd_buffers(
        &mut self,
        count: u32,
        list_len: u32,
    ) -> Result<(&wgpu::Queue, &mut CrowdBuffers), RenderError> {
        self.ensure_crowd_buffers(count, list_len)?;
        let Some(buffers) = self.crowd.as_mut() else {
            return Err(RenderError::Device("internal: crowd buffers missing".into()));
        };
        if count < buffers.last_count {
            buffers.records_synced = false;
            buffers.list_synced = false;
        }
        buffers.last_count = count;
        Ok((&self.queue, buffers))
    }

    /// The GPU-culled path's CPU work: queues the crowd's dirty record ranges
    /// (`Crowd::take_record_uploads`), or every record when the GPU copy is not synced. O(changed
    /// records); no culling, no instance list, nothing proportional to the crowd when nothing changed.
    /// Returns the statistics the CPU knows (simulated instances, dirty record bytes), the bytes
    /// queued and the records the scatter pass must copy.
    fn sync_records(&mut self, crowd: &mut Crowd) -> Result<(CrowdStats, u64, u32), RenderError> {
        let count = crowd.count();
        self.crowd_buffers(count, 0)?;
        // Taken even for a full upload: it clears the crowd's dirty set.
        let ranges = crowd.take_record_uploads();
        let dirty_bytes: u64 = ranges.iter().map(|(_, r)| size_of_val(*r) as u64).sum();
        let mut uploaded = 0u64;
        let mut scattered = 0;
        let Some(buffers) = self.crowd.as_mut() else {
            return Err(RenderError::Device("internal: crowd buffers missing".into()));
        };
        let queue = &self.queue;
        if buffers.records_synced {
            (uploaded, scattered) = queue_record_ranges(
                &self.device,
                queue,
                &self.scatter_layout,
                buffers,
                &mut self.scatter_plan,
                &ranges,
            )?;
        } else {
            drop(ranges);
            let records: &[u8] = bytemuck::cast_slice(crowd.records());
            queue.write_buffer(&buffers.records, 0, records);
            uploaded += records.len() as u64;
            buffers.records_synced = true;
        }
        let stats =
            CrowdStats { simulated: count, uploaded_record_bytes: dirty_bytes, ..CrowdStats::default() };
        Ok((stats, uploaded, scattered))
    }

    /// The CPU-culled path's CPU work: `Crowd::prepare_frame`, then queues its dirty record ranges and
    /// list entries (everything the GPU copy lacks when unsynced). Returns the crowd's statistics, the
    /// batches, the bytes queued and the records the scatter pass must copy.
    fn sync_cpu_frame(
        &mut self,
        crowd: &mut Crowd,
        camera: &Camera,
    ) -> Result<(CrowdStats, Batches, u64, u32), RenderError> {
        let count = crowd.count();
        let frame = crowd.prepare_frame(camera);
        self.crowd_buffers(count, frame.instance_list_len)?;
        let Some(buffers) = self.crowd.as_mut() else {
            return Err(RenderError::Device("internal: crowd buffers missing".into()));
        };
        let queue = &self.queue;
        let mut uploaded = 0u64;
        let mut scattered = 0;
        let (full_records, full_list) = (!buffers.records_synced, !buffers.list_synced);
        if !full_records {
            (uploaded, scattered) = queue_record_ranges(
                &self.device,
                queue,
                &self.scatter_layout,
                buffers,
                &mut self.scatter_plan,
                &frame.record_uploads,
            )?;
        }
        if !full_list && let Some((first, list)) = frame.list_upload {
            let bytes: &[u8] = bytemuck::cast_slice(list);
            queue.write_buffer(&buffers.list, u64::from(first) * 4, bytes);
            uploaded += bytes.len() as u64;
        }
        let FrameDraws { main_fade, main_plain, shadow, attachments, stats, .. } = frame;
        if full_records {
            let records: &[u8] = bytemuck::cast_slice(crowd.records());
            queue.write_buffer(&buffers.records, 0, records);
            uploaded += records.len() as u64;
            buffers.records_synced = true;
        }
        if full_list {
            let list: &[u8] = bytemuck::cast_slice(crowd.instance_list());
            queue.write_buffer(&buffers.list, 0, list);
            uploaded += list.len() as u64;
            buffers.list_synced = true;
        }
        Ok((stats, Batches { main_fade, main_plain, shadow, attachments }, uploaded, scattered))
    }

    /// Records one frame of `crowd` seen by `camera` into `encoder`: queues the changed records (and,
    /// with CPU culling, instance-list entries; written at the next `queue.submit`), then records the
    /// copy of the frame uniforms, the culling compute pass (GPU culling), the shadow pass and the
    /// colour pass (cleared). Call it at most once per encoder, and submit every encoder it recorded
    /// into: per-frame buffers are shared between calls, and the uniforms' staging memory is
    /// recycled when the encoder is submitted (an encoder dropped unsubmitted strands a few KiB until
    /// the renderer is dropped).
    ///
    /// CPU culling runs the crowd's frame preparation (`Crowd::prepare_frame`: grid, instance list,
    /// culling, LOD, batches). GPU culling runs none of it: it takes only the crowd's dirty record
    /// ranges (`Crowd::take_record_uploads`), so its CPU cost does not grow with the crowd (nothing
    /// per instance when nothing changed); the compute pass culls. After
    /// [`forget_crowd`](Self::forget_crowd), a new or grown record buffer, or a smaller crowd than last
    /// frame, every record is uploaded once (and, at the next CPU-culled frame, the whole instance
    /// list). Both paths can alternate on the same crowd.
    ///
    /// `crowd` must have been built from the same asset as `asset` (`CrowdAsset::from_manifest`).
    /// Shadows are drawn when both [`RenderOptions::shadows`] and the crowd's `CrowdConfig::shadows`
    /// are on.
    ///
    /// # Errors
    /// [`RenderError::AssetHasNoBones`] for bone mode on an asset without bones;
    /// [`RenderError::BufferTooLarge`] if the crowd outgrows the device's storage binding size.
    ///
    /// # Panics
    /// If the target's size is zero.
    pub fn render(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        asset: &GpuAsset,
        crowd: &mut Crowd,
        camera: &Camera,
        target: RenderTarget<'_>,
        options: &RenderOptions,
    ) -> Result<FrameReport, RenderError> {
        assert!(target.size[0] > 0 && target.size[1] > 0, "render target of size {:?}", target.size);
        if options.mode == RenderMode::Bone && !asset.has_bones() {
            return Err(RenderError::AssetHasNoBones);
        }
        let config = *crowd.config();
        let count = crowd.count();
        let time = crowd.shader_time();
        let thresholds = crowd.asset().lod_distances;
        let lod_count = thresholds.lod_count().min(asset.lod_count()).clamp(1, MAX_LODS as u32);

        // 1. CPU frame: dirty records (both paths); instance list and batches (CPU culling only).
        let gpu_culling = options.culling == Culling::Gpu;
        let (stats, batches, mut uploaded, scattered) = if gpu_culling {
            let (stats, uploaded, scattered) = self.sync_records(crowd)?;
            (stats, Batches::default(), uploaded, scattered)
        } else {
            self.sync_cpu_frame(crowd, camera)?
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
        belt_write(&mut self.belt, encoder, &self.frame_buffer, bytemuck::bytes_of(&uniforms));
        uploaded += size_of::<FrameUniforms>() as u64;
        let attachments_on = config.attachments && asset.has_attachments();

        // 3. Pipelines (created on first use).
        let influences = asset.influences;
        let vertex_format = gpu::vertex_format_code(asset.vertex_format);
        let body = |fade| RenderKey {
            draw: Draw::Body(options.mode),
            depth_only: false,
            fade,
            influences,
            vertex_format,
        };
        let fade_pipeline = self.render_pipeline(body(true));
        let plain_pipeline = self.render_pipeline(body(false));
        let depth_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Body(options.mode),
            depth_only: true,
            fade: config.cross_fade,
            influences,
            vertex_format,
        });
        let attach_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Attachment,
            depth_only: false,
            fade: config.cross_fade,
            influences,
            vertex_format,
        });
        let attach_depth_pipeline = self.render_pipeline(RenderKey {
            draw: Draw::Attachment,
            depth_only: true,
            fade: config.cross_fade,
            influences,
            vertex_format,
        });
        let ground_pipeline = options.ground.then(|| {
            self.render_pipeline(RenderKey {
                draw: Draw::Ground,
                depth_only: false,
                fade: false,
                influences: 4,
                vertex_format: 0,
            })
        });
        let cull_pipeline = self.compute_pipeline(ComputeKey {
            entry: gpu::ENTRY_POINT_CULL,
            fade: true,
            influences: 4,
            vertex_format: 0,
        });
        let Some(buffers) = self.crowd.as_mut() else {
            return Err(RenderError::Device("internal: crowd buffers missing".into()));
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

        // 4. Changed records packed for the scatter pass (many short ranges), copied into place.
        if scattered > 0
            && let Some(scatter) = &buffers.scatter
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("vat scatter"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.scatter_pipeline);
            pass.set_bind_group(gpu::GROUP_SCATTER, &scatter.group, &[]);
            let (x, y) = workgroups(u64::from(scattered), gpu::SCATTER_WORKGROUP_SIZE);
            pass.dispatch_workgroups(x, y, 1);
            report.dispatches += 1;
        }

        // 5. GPU culling.
        if gpu_culling {
            let key = (asset.id, buffers.capacity);
            if buffers.template_for != Some(key) {
                let template = gpu::draw_args_template(
                    &asset.lods[..lod_count as usize],
                    buffers.capacity,
                    asset.attachment_first_index,
                    asset.attachment_index_count,
                );
                self.queue.write_buffer(&buffers.args_template, 0, bytemuck::cast_slice(&template));
                buffers.template_for = Some(key);
            }
            let params = CullParams {
                record_count: count,
                capacity: buffers.capacity,
                attachment_max_lod: config.attachment_max_lod,
                attachments: u32::from(attachments_on),
            };
            if buffers.cull_params_written != Some(params) {
                // Through the queue, not the belt: the write is not repeated, so it must not be lost
                // with an encoder that is never submitted.
                self.queue.write_buffer(&buffers.cull_params, 0, bytemuck::bytes_of(&params));
                uploaded += size_of::<CullParams>() as u64;
                buffers.cull_params_written = Some(params);
            }
            encoder.copy_buffer_to_buffer(
                &buffers.args_template,
                0,
                &buffers.draw_args,
                0,
                gpu::DRAW_ARGS_BYTES,
            );
            if count > 0 {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("vat cull"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&cull_pipeline);
                pass.set_bind_group(0, &self.frame_groups[StageSet::Compute as usize], &[]);
                pass.set_bind_group(1, &asset.groups[StageSet::Compute as usize], &[]);
                pass.set_bind_group(2, &buffers.compute, &[]);
                let (x, y) = workgroups(u64::from(count), gpu::CULL_WORKGROUP_SIZE);
                pass.dispatch_workgroups(x, y, 1);
                report.dispatches += 1;
            }
            buffers.gpu_lods = lod_count;
        }
        let lod_range = |lod: u32| {
            let l = &asset.lods[(lod as usize).min(asset.lods.len() - 1)];
            l.first_index..l.first_index + l.index_count
        };
        let attach_range =
            asset.attachment_first_index..asset.attachment_first_index + asset.attachment_index_count;
        let instances = |b: &DrawBatch| b.first_instance..b.first_instance + b.instance_count;

        // 6. Shadow pass.
        if shadow_matrix.is_some() {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("vat shadow"),
                color_attachments: &[],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.shadow_view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.frame_groups[StageSet::Depth as usize], &[]);
            pass.set_bind_group(1, &asset.groups[StageSet::Depth as usize], &[]);
            pass.set_bind_group(2, if gpu_culling { &buffers.depth_gpu } else { &buffers.depth_cpu }, &[]);
            pass.set_index_buffer(asset.index_buffer.slice(..), wgpu::IndexFormat::Uint32);
            pass.set_pipeline(&depth_pipeline);
            if gpu_culling {
                for lod in 0..lod_count.min(config.shadow_max_lod.saturating_add(1)) {
                    pass.draw_indexed_indirect(&buffers.draw_args, u64::from(lod) * DRAW_ARGS_STRIDE);
                    report.draws_shadow += 1;
                }
            } else {
                for b in &shadow {
                    pass.draw_indexed(lod_range(b.lod), 0, instances(b));
                    report.draws_shadow += 1;
                }
            }
            if attachments_on {
                pass.set_pipeline(&attach_depth_pipeline);
                if gpu_culling {
                    let last =
                        config.shadow_max_lod.min(config.attachment_max_lod).saturating_add(1).min(lod_count);
                    for lod in 0..last {
                        let draw = u64::from(MAX_LODS as u32 + lod) * DRAW_ARGS_STRIDE;
                        pass.draw_indexed_indirect(&buffers.draw_args, draw);
                        report.draws_shadow += 1;
                    }
                } else {
                    for b in attachments.iter().filter(|b| b.lod <= config.shadow_max_lod) {
                        pass.draw_indexed(attach_range.clone(), 0, instances(b));
                        report.draws_shadow += 1;
                    }
                }
            }
        }

        // 6. Colour pass.
        {
            let [r, g, b, a] = options.clear_color;
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("vat colour"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target.color,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color { r, g, b, a }),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: target.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.frame_groups[StageSet::Colour as usize], &[]);
            pass.set_bind_group(1, &asset.groups[StageSet::Colour as usize], &[]);
            pass.set_bind_group(2, if gpu_culling { &buffers.colour_gpu } else { &buffers.colour_cpu }, &[]);
            pass.set_index_buffer(asset.index_buffer.slice(..), wgpu::IndexFormat::Uint32);
            if let Some(ground) = &ground_pipeline {
                pass.set_pipeline(ground);
                pass.draw(0..6, 0..1);
                report.draws_ground += 1;
            }
            if gpu_culling {
                for lod in 0..lod_count {
                    let fade = config.cross_fade && lod <= config.cross_fade_max_lod;
                    pass.set_pipeline(if fade { &fade_pipeline } else { &plain_pipeline });
                    pass.draw_indexed_indirect(&buffers.draw_args, u64::from(lod) * DRAW_ARGS_STRIDE);
                    report.draws_main += 1;
                }
            } else {
                pass.set_pipeline(&fade_pipeline);
                for b in &main_fade {
                    pass.draw_indexed(lod_range(b.lod), 0, instances(b));
                    report.draws_main += 1;
                }
                pass.set_pipeline(&plain_pipeline);
                for b in &main_plain {
                    pass.draw_indexed(lod_range(b.lod), 0, instances(b));
                    report.draws_main += 1;
                }
            }
            if attachments_on {
                pass.set_pipeline(&attach_pipeline);
                if gpu_culling {
                    for lod in 0..lod_count.min(config.attachment_max_lod.saturating_add(1)) {
                        let draw = u64::from(MAX_LODS as u32 + lod) * DRAW_ARGS_STRIDE;
                        pass.draw_indexed_indirect(&buffers.draw_args, draw);
                        report.draws_attachments += 1;
                    }
                } else {
                    for b in &attachments {
                        pass.draw_indexed(attach_range.clone(), 0, instances(b));
                        report.draws_attachments += 1;
                    }
                }
            }
        }
        report.uploaded_bytes = uploaded;
        self.belt.finish_and_recall_on_submit(encoder);
        Ok(report)
    }

    /// Decodes every vertex of `records` at epoch-relative `time` on the GPU (the `cs_decode` /
    /// `cs_decode_bone` compute shaders, the same code as the vertex paths) and reads the result
    /// back: vertex `v` of record `i` at `i * vertex_count + v`. For verification and tests; waits for
    /// the GPU. `cross_fade: false` selects the plain variant (clip B ignored). Uses its own uniform
    /// buffers, so it does not disturb a frame recorded but not yet submitted.
    ///
    /// # Errors
    /// [`RenderError::AssetHasNoBones`] for bone mode without bones, [`RenderError::BufferTooLarge`],
    /// [`RenderError::Readback`].
    pub fn decode(
        &mut self,
        asset: &GpuAsset,
        records: &[InstanceRecord],
        time: f32,
        mode: RenderMode,
        cross_fade: bool,
    ) -> Result<Vec<DecodedVertex>, RenderError> {
        if mode == RenderMode::Bone && !asset.has_bones() {
            return Err(RenderError::AssetHasNoBones);
        }
        let count = records.len() as u64 * u64::from(asset.vertex_count);
        let out_bytes = count * size_of::<DecodedVertex>() as u64;
        let limits = self.device.limits();
        let limit = storage_limit(&limits);
        if out_bytes > limit {
            return Err(RenderError::BufferTooLarge { what: "decoded vertex", size: out_bytes, limit });
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
            vertex_format: gpu::vertex_format_code(asset.vertex_format),
        });
        let d = &self.device;
        let uniform = wgpu::BufferUsages::UNIFORM;
        let frame = FrameUniforms { time, ..bytemuck::Zeroable::zeroed() };
        let frame_buf = buffer_init(d, "vat decode frame", bytemuck::bytes_of(&frame), 0, uniform);
        let frame_group = self.frame_groups_for(&frame_buf)?;
        let record_buf = buffer_init(
            d,
            "vat decode records",
            bytemuck::cast_slice(records),
            64,
            wgpu::BufferUsages::STORAGE,
        );
        let params = DecodeParams { first_instance: 0, instance_count: records.len() as u32, _pad: [0; 2] };
        let params_buf = buffer_init(d, "vat decode params", bytemuck::bytes_of(&params), 0, uniform);
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
                Some(match name {
                    "instances" => record_buf.as_entire_binding(),
                    "decode_params" => params_buf.as_entire_binding(),
                    "decoded" => out.as_entire_binding(),
                    "instance_list" => self.dummy_visible.as_entire_binding(),
                    "cull_params" => self.dummy_cull_params.as_entire_binding(),
                    "visible" => self.dummy_visible.as_entire_binding(),
                    "draw_args" => self.dummy_draw_args.as_entire_binding(),
                    _ => return None,
                })
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
            let (x, y) = workgroups(count, gpu::DECODE_WORKGROUP_SIZE);
            pass.dispatch_workgroups(x, y, 1);
        }
        encoder.copy_buffer_to_buffer(&out, 0, &staging, 0, out_bytes);
        self.queue.submit([encoder.finish()]);
        let bytes = read_mapped(d, &staging)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes[..out_bytes as usize]))
    }

    /// The GPU copy of the crowd's records (the first `count` of the record buffer, as of the last
    /// submitted frame), read back after waiting for the GPU; empty before any frame. For tests and
    /// debugging: after a frame it equals `Crowd::records`.
    ///
    /// # Errors
    /// [`RenderError::Readback`].
    pub fn read_gpu_records(&self) -> Result<Vec<InstanceRecord>, RenderError> {
        let Some(c) = &self.crowd else { return Ok(Vec::new()) };
        let size = u64::from(c.last_count) * size_of::<InstanceRecord>() as u64;
        if size == 0 {
            return Ok(Vec::new());
        }
        Ok(bytemuck::pod_collect_to_vec(&self.read_back(&c.records, size)?))
    }

    /// The first `size` bytes of `buffer` (which has `COPY_SRC`), copied to a mappable buffer and read
    /// after waiting for the GPU.
    fn read_back(&self, buffer: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, RenderError> {
        let d = &self.device;
        let staging = empty_buffer(
            d,
            "vat readback",
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut encoder =
            d.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vat readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        read_mapped(d, &staging)
    }

    /// The per-LOD visible lists (record indices, in the GPU's append order) written by the last
    /// GPU-culled frame, read back after waiting for the GPU (submit that frame first); empty before
    /// any. For tests and debugging: compare with the CPU path after sorting.
    ///
    /// # Errors
    /// [`RenderError::Readback`].
    pub fn read_gpu_visible(&self) -> Result<Vec<Vec<u32>>, RenderError> {
        let Some(c) = &self.crowd else { return Ok(Vec::new()) };
        if c.gpu_lods == 0 {
            return Ok(Vec::new());
        }
        let read = |buffer: &wgpu::Buffer| -> Result<Vec<u32>, RenderError> {
            Ok(bytemuck::pod_collect_to_vec(&self.read_back(buffer, buffer.size())?))
        };
        let args = read(&c.draw_args)?;
        let visible = read(&c.visible)?;
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
