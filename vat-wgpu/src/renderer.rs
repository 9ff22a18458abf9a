//! The crowd renderer: the shared cache of one device (shader module, layouts, pipelines, the shadow
//! map) and the frame entry point, [`Renderer::render`], which plans a frame of any number of crowds
//! with `vat_core::backend::frame::FramePlan` and carries the plan out (`encode.rs`). The Vulkan twin is
//! vat-vulkan's `renderer.rs`; the other files mirror it one for one: `asset.rs` (uploads),
//! `crowd.rs` (per-crowd GPU state), `pipelines.rs` (the pipeline cache), `encode.rs` (recording a
//! plan), `readback.rs` (decode and read-backs).
//!
//! Every bind-group layout comes from `vat_core::backend::gpu::BINDINGS` through [`crate::conv`], per pipeline
//! kind ([`StageSet`]): colour pipelines (vertex + fragment) see the shadow map, depth-only shadow
//! pipelines (vertex) do not, compute pipelines see the decode and culling outputs. Every resource is
//! bound by its WGSL name. The record scatter (`cs_scatter`) has a layout of its own: group 3 alone;
//! the ground has one of group 0 alone.

use std::collections::HashMap;

use vat_core::backend::RendererFrame;
use vat_core::backend::TargetFormats as _;
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::frame::{FrameState, HostPass, PlanLimits};
use vat_core::backend::gpu::{self, CullParams, DecodeParams, DecodedVertex, FrameUniforms, ShaderStages};
use vat_core::backend::pipeline::{MATERIAL_SAMPLER, PipelineKey, SHADOW_SAMPLER};
use vat_core::crowd::Camera;

use crate::crowd::{GpuCrowd, WgpuHandles};
use crate::device::REQUIRED_FEATURES;
use crate::encode::Replay;
use crate::pipelines::{CULL, ComputeKey};
use crate::{
    Culling, DeviceError, Error, Formats, FrameReport, GpuAsset, PassFormats, PrepassFormats, RenderOptions,
    RenderTarget, RendererConfig, conv,
};

/// Bytes of one chunk of the staging belt that carries the frame uniforms.
pub(crate) const BELT_CHUNK: u64 = 4096;
// The belt copies whole words.
const _: () = assert!(size_of::<FrameUniforms>().is_multiple_of(4));

/// One crowd of a frame on this backend: `vat_core::render::CrowdDraw` of [`GpuAsset`] and [`GpuCrowd`].
pub type CrowdDraw<'a> = vat_core::render::CrowdDraw<'a, GpuAsset, GpuCrowd>;

/// The pipeline kinds, each with its own layouts (vat-core's).
pub(crate) use vat_core::backend::Stage as StageSet;

/// Renders crowds of uploaded assets with vat-core's shader; see the crate docs.
///
/// The renderer is the cache shared by every asset and crowd of its device: shader module,
/// layouts, pipelines (keyed by the pass's formats), the shadow map. Each crowd's GPU state is a
/// [`GpuCrowd`] ([`create_crowd`](Self::create_crowd)); each asset's a [`GpuAsset`]
/// ([`upload`](Self::upload)).
#[derive(Debug)]
pub struct Renderer {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) config: RendererConfig,
    pub(crate) module: wgpu::ShaderModule,
    /// `[stage set][group]`.
    pub(crate) group_layouts: Vec<Vec<wgpu::BindGroupLayout>>,
    /// Per stage set.
    pub(crate) pipeline_layouts: Vec<wgpu::PipelineLayout>,
    /// Group 0 alone (the ground).
    pub(crate) frame_only_layout: wgpu::PipelineLayout,
    /// Group 3 (`cs_scatter`'s own) and the scatter pipeline (its layout holds group 3 alone).
    pub(crate) scatter_layout: wgpu::BindGroupLayout,
    pub(crate) scatter_pipeline: wgpu::ComputePipeline,
    /// The frame plan and its recording, reused every frame, and the crowds of the last successful
    /// `prepare`.
    frame: FrameState,
    /// Test hook: the upload step at which [`Renderer::upload`] fails on purpose.
    #[cfg(feature = "fault-injection")]
    pub(crate) upload_fault: Option<u32>,
    pub(crate) render_pipelines: HashMap<(PipelineKey, PassFormats), wgpu::RenderPipeline>,
    /// The host's fragment stage and its module ([`Renderer::set_host_shader`]).
    pub(crate) host_shader: Option<(vat_core::backend::pipeline::HostShader, wgpu::ShaderModule)>,
    pub(crate) compute_pipelines: HashMap<ComputeKey, wgpu::ComputePipeline>,
    /// The renderer's own group-0 uniforms (the ground of a frame without crowds; decode), their
    /// groups, and the host's shadow map.
    pub(crate) own: RendererFrame<WgpuHandles>,
    pub(crate) shadow_view: wgpu::TextureView,
    /// `shadow_view` as the one-layer array the `shadow_map` binding takes.
    pub(crate) shadow_array_view: wgpu::TextureView,
    pub(crate) shadow_sampler: wgpu::Sampler,
    /// The material textures' sampler (group 1's `material_sampler`), shared by every asset.
    pub(crate) material_sampler: wgpu::Sampler,
    /// Stand-ins for the decode bindings in the culling group and the culling bindings in the decode
    /// group (one compute layout serves both entry points).
    pub(crate) dummy_decode_params: wgpu::Buffer,
    pub(crate) dummy_decoded: wgpu::Buffer,
    pub(crate) dummy_cull_params: wgpu::Buffer,
    pub(crate) dummy_visible: wgpu::Buffer,
    pub(crate) dummy_draw_args: wgpu::Buffer,
    /// Mapped staging chunks for the frame uniforms, copied in the frame's encoder and re-mapped when
    /// it is submitted: unlike `queue.write_buffer`, no staging buffer is created per frame (on
    /// lavapipe that was a fifth of a GPU-culled frame's CPU time). Writes made only on change
    /// (records, instance list, culling parameters) go through `queue.write_buffer`.
    pub(crate) belt: wgpu::util::StagingBelt,
}

/// A storage/uniform buffer initialised with `bytes`, padded with zeros to at least `min_size` bytes
/// and a multiple of 4. Call it inside an [`AllocScope`].
///
/// Not `DeviceExt::create_buffer_init`: when the device cannot create the buffer (out of memory),
/// that `expect`s its mapping and panics, whatever error scope is open.
///
/// # Errors
/// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) naming `label` when the buffer could not be created (the
/// scope's error says why).
pub(crate) fn buffer_init(
    device: &wgpu::Device,
    label: &'static str,
    bytes: &[u8],
    min_size: usize,
    usage: wgpu::BufferUsages,
) -> Result<wgpu::Buffer, Error> {
    let len = bytes.len().max(min_size).max(4).next_multiple_of(4);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: len as u64,
        usage,
        // Mapped at creation: no staging copy; the bytes past `bytes` are zeroed by wgpu.
        mapped_at_creation: true,
    });
    let Ok(mut view) = buffer.get_mapped_range_mut(..) else {
        return Err(DeviceError::OutOfDeviceMemory { what: label, bytes: len as u64 }.into());
    };
    view.slice(..bytes.len()).copy_from_slice(bytes);
    drop(view);
    buffer.unmap();
    Ok(buffer)
}

/// Two error scopes around resource creation, out of memory apart from validation: wgpu reports
/// both asynchronously, and its default handler for an error outside any scope panics (a host's
/// device may have it).
pub(crate) struct AllocScope {
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl AllocScope {
    /// Pushes the scopes on `device` (for the calling thread).
    pub(crate) fn push(device: &wgpu::Device) -> Self {
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        Self { oom, validation }
    }

    /// Pops the scopes and gives `result` unless they caught an error: out of memory is
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) of `what` and `bytes`, validation is
    /// [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) unless `result` is already an error.
    ///
    /// # Errors
    /// As above, or `result`'s error.
    pub(crate) fn finish<T>(
        self,
        what: &'static str,
        bytes: u64,
        result: Result<T, Error>,
    ) -> Result<T, Error> {
        // Reverse order of pushing.
        let validation = pollster::block_on(self.validation.pop());
        let oom = pollster::block_on(self.oom.pop());
        match (oom, validation) {
            (Some(_), _) => Err(DeviceError::OutOfDeviceMemory { what, bytes }.into()),
            // A validation error after a failure is its consequence (an invalid object used).
            (None, Some(_)) if result.is_err() => result,
            (None, Some(e)) => Err(DeviceError::Wgpu(e.to_string()).into()),
            (None, None) => result,
        }
    }
}

pub(crate) fn empty_buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).next_multiple_of(4),
        usage,
        mapped_at_creation: false,
    })
}

/// The largest storage buffer the renderer may create and bind whole, bytes.
pub(crate) fn storage_limit(limits: &wgpu::Limits) -> u64 {
    limits.max_storage_buffer_binding_size.min(limits.max_buffer_size)
}

/// Creates the bind group of `group` for `set` from resources looked up by WGSL name.
pub(crate) fn bind_group<'a>(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    group: u32,
    set: StageSet,
    label: &str,
    resource: impl Fn(&str) -> Option<wgpu::BindingResource<'a>>,
) -> Result<wgpu::BindGroup, Error> {
    let mut entries = Vec::new();
    for b in gpu::bindings_for_stages(group, set.shader_stages(group)) {
        let r = resource(b.name)
            .ok_or_else(|| DeviceError::Wgpu(format!("internal: no resource for binding {}", b.name)))?;
        entries.push(wgpu::BindGroupEntry { binding: b.binding, resource: r });
    }
    Ok(device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout, entries: &entries }))
}

impl Renderer {
    /// Creates the layouts, the per-frame resources (uniforms, shadow map, sampler) and the culling
    /// pipeline; render and decode pipelines are created on first use (each variant once).
    ///
    /// # Errors
    /// [`DeviceError::MissingFeature`](crate::DeviceError::MissingFeature) without `INDIRECT_FIRST_INSTANCE`, [`Error::LimitTooLow`]
    /// if the device's per-stage binding limits or bind groups are below [`crate::required_limits`]'s,
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate them (the shadow map),
    /// [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) if wgpu reports another error while creating them.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, config: RendererConfig) -> Result<Self, Error> {
        for (feature, name, why) in REQUIRED_FEATURES {
            if !device.features().contains(feature) {
                return Err(DeviceError::MissingFeature {
                    feature: name,
                    why,
                    adapter: "the device (opened without it)".into(),
                }
                .into());
            }
        }
        let limits = device.limits();
        crate::device::check_binding_limits(&limits)?;
        let scope = AllocScope::push(device);
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
                            entries: &conv::bind_group_layout_entries(g, set.shader_stages(g)),
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
            format: Formats::SHADOW,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let shadow_view = shadow_map.create_view(&wgpu::TextureViewDescriptor::default());
        // The binding is a depth array (a host's cascades are layers); vat's own map is one layer.
        let shadow_array_view = shadow_map.create_view(&wgpu::TextureViewDescriptor {
            label: Some("vat shadow map (array)"),
            dimension: Some(wgpu::TextureViewDimension::D2Array),
            ..Default::default()
        });
        let shadow_sampler = device.create_sampler(&conv::map_sampler("vat shadow sampler", &SHADOW_SAMPLER));
        let material_sampler =
            device.create_sampler(&conv::map_sampler("vat material sampler", &MATERIAL_SAMPLER));
        let frame_only_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("vat frame-only layout"),
            bind_group_layouts: &[Some(&group_layouts[StageSet::Colour as usize][gpu::GROUP_FRAME as usize])],
            immediate_size: 0,
        });
        let mut renderer = Self {
            device: device.clone(),
            queue: queue.clone(),
            config,
            module,
            group_layouts,
            pipeline_layouts,
            frame_only_layout,
            scatter_layout,
            scatter_pipeline,
            frame: FrameState::default(),
            #[cfg(feature = "fault-injection")]
            upload_fault: None,
            render_pipelines: HashMap::new(),
            host_shader: None,
            compute_pipelines: HashMap::new(),
            dummy_decode_params: empty_buffer(device, "vat dummy", size_of::<DecodeParams>() as u64, uniform),
            dummy_decoded: empty_buffer(device, "vat dummy", size_of::<DecodedVertex>() as u64, storage),
            dummy_cull_params: empty_buffer(device, "vat dummy", size_of::<CullParams>() as u64, uniform),
            dummy_visible: empty_buffer(device, "vat dummy", 4, storage),
            dummy_draw_args: empty_buffer(device, "vat dummy", gpu::DRAW_ARGS_BYTES, storage),
            own: RendererFrame::new(frame_buffer, Vec::new()),
            shadow_view,
            shadow_array_view,
            shadow_sampler,
            material_sampler,
            belt: wgpu::util::StagingBelt::new(device.clone(), BELT_CHUNK),
        };
        let groups = renderer.frame_groups_for(&renderer.own.frame_buffer, None);
        renderer.compute_pipeline(CULL);
        let shadow_bytes = u64::from(size) * u64::from(size) * 4;
        renderer.own.groups.own = scope.finish("renderer's shadow map and buffers", shadow_bytes, groups)?;
        Ok(renderer)
    }

    /// The configuration the renderer was created with.
    pub fn config(&self) -> &RendererConfig {
        &self.config
    }

    /// Group 0 bind groups (per stage set) over `frame` and the host's shadow map `host_shadow`
    /// (vat's own with `None`).
    pub(crate) fn frame_groups_for(
        &self,
        frame: &wgpu::Buffer,
        host_shadow: Option<&wgpu::TextureView>,
    ) -> Result<Vec<wgpu::BindGroup>, Error> {
        let shadow_view = host_shadow.unwrap_or(&self.shadow_array_view);
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
                        "shadow_map" => Some(wgpu::BindingResource::TextureView(shadow_view)),
                        "shadow_sampler" => Some(wgpu::BindingResource::Sampler(&self.shadow_sampler)),
                        _ => None,
                    },
                )
            })
            .collect()
    }

    /// Gives the renderer the host's shadow map, sampled by the colour draws of frames whose
    /// `RenderOptions::shadow_map` is `ShadowMapSource::Host` (with that lookup's matrix, bias and
    /// strength; `None` forgets it). `view` must be a `D2Array` view (aspect depth only) of a
    /// `Depth32Float` (or other depth-format) texture with `TEXTURE_BINDING` usage: one layer for a
    /// single map, the cascades' layers for a cascaded one (`ShadowLookup::cascaded`, each
    /// cascade naming its layer). It is sampled through vat's comparison sampler (`LessEqual`,
    /// linear: 2 x 2 PCF; reverse-Z maps, `ShadowLookup::reverse_z`, through its exact
    /// complement); its conventions are `vat_core::backend::gpu::ShadowLookup`'s. Bevy's
    /// `ViewShadowBindings::directional_light_depth_texture_view` is such a view. The host renders
    /// it before the colour pass that samples it, typically with
    /// [`draw_depth`](Self::draw_depth) of the same frame for the crowd's own shadows. A host that
    /// cycles through several maps (one per frame in flight) calls this every frame; each crowd
    /// keeps bind groups over `vat_core::backend::frame::HOST_SHADOW_MAPS_KEPT` of them.
    pub fn set_host_shadow_map(&mut self, view: Option<wgpu::TextureView>) {
        self.own.host_shadow = view;
    }

    /// vat's built-in sun shadow map as a one-layer `D2Array` view (`Depth32Float`,
    /// `TEXTURE_BINDING`; 1 x 1 when `RendererConfig::shadow_map_size` is 0). After a
    /// [`prepare`](Self::prepare) whose report has `shadow_view_proj`, it holds that frame's casters
    /// for passes recorded after `prepare`'s commands: bind it as a `texture_depth_2d_array` with a
    /// comparison sampler of `vat_core::backend::pipeline::SHADOW_SAMPLER`'s state (`conv::map_sampler`)
    /// and look it up with `vat_core::backend::gpu::SHADOW_WGSL`'s `vat_shadow_lookup` and
    /// `ShadowLookup::built_in(report.shadow_view_proj, scene_unit).uniforms()` to shadow the
    /// host's own surfaces exactly as the crowd is shadowed.
    pub fn shadow_map_view(&self) -> &wgpu::TextureView {
        &self.shadow_array_view
    }

    /// The plan's limits on this device.
    pub(crate) fn plan_limits(&self) -> PlanLimits {
        PlanLimits { max_storage_buffer_bytes: storage_limit(&self.device.limits()) }
    }

    /// The formats of the passes [`render`](Self::render) begins: the config's colour and depth
    /// formats, one sample. Give them to [`draw`](Self::draw) for a host pass of the same kind.
    pub fn pass_formats(&self) -> PassFormats {
        self.config.pass_formats()
    }

    /// Records everything of one frame of `crowds` (any number, of any assets uploaded to this
    /// renderer) seen by `camera`, and of the host's extra depth `views` (world-to-clip matrices,
    /// column-major, depth 0..1, each drawn by [`draw_depth`](Self::draw_depth); `&[]` for none),
    /// that comes before the host's render passes, into the host's `encoder`: plans the frame (`vat_core::backend::frame::FramePlan::plan`: CPU culling with
    /// `Crowd::prepare_frame`, or only the dirty records for GPU culling), queues each crowd's
    /// changed records and list entries (written at the next `queue.submit`), then records the
    /// copies of the uniforms, the scatter and culling compute passes (GPU culling: the camera's and
    /// one per extra view) and, when shadows are drawn,
    /// the built-in shadow pass (into the renderer's own shadow map, which it clears). Then record
    /// [`draw`](Self::draw) of the same `crowds` into a pass the host begins in the same `encoder`
    /// (or one submitted after it).
    ///
    /// **State.** Call it outside any pass: it begins and ends its own compute passes and the
    /// shadow pass; nothing of the host's (attachments, bind groups, pipelines) is touched or left
    /// bound. Call it at most once per encoder, and submit every encoder it recorded into: the
    /// uniforms' staging memory is recycled when the encoder is submitted, and a frame dropped
    /// unsubmitted leaves the GPU copies behind their crowds (call [`GpuCrowd::mark_unsynced`] on
    /// each then).
    ///
    /// Each crowd must have been built from the asset it is paired with. Shadows are drawn when
    /// [`RenderOptions::shadows`] is on and a crowd's `CrowdConfig::shadows` is on (only those
    /// crowds cast). [`RenderOptions::clear_color`] is not used (only [`render`](Self::render)
    /// clears).
    ///
    /// # Errors
    /// [`Error::AssetHasNoBones`] for bone mode on an asset without bones;
    /// a [`vat_core::backend::frame::PlanError::BufferTooLarge`] if a crowd outgrows the device's storage binding size;
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate a crowd's grown buffers (or
    /// the staging memory of its writes); [`DeviceError::Wgpu`](crate::DeviceError::Wgpu). After an error each crowd is uploaded whole at its next frame, and
    /// [`draw`](Self::draw) draws nothing until the next successful `prepare`.
    ///
    /// # Panics
    /// If a [`GpuCrowd`] is paired with a crowd it was not made for.
    pub fn prepare(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        options: &RenderOptions,
        views: &[[[f32; 4]; 4]],
    ) -> Result<FrameReport, Error> {
        // A copy: the replay borrows the renderer.
        let host_shader = self.host_shader.as_ref().map(|(h, _)| h.clone());
        let checks = self.own.prechecks(&self.config, host_shader.as_ref());
        let mut frame = std::mem::take(&mut self.frame);
        let report = frame.prepare(&mut Replay::new(self, encoder), checks, crowds, camera, options, views);
        self.frame = frame;
        report
    }

    /// The counts of every crowd's read-back ring that arrived (polling the device once, without
    /// waiting), then a new frame of each ring, and with GPU culling a slot for this frame's copy
    /// (none when every slot is in flight).
    ///
    /// # Errors
    /// Those of creating the rings' buffers (before any ring starts a frame).
    pub(crate) fn begin_counts(&self, crowds: &mut [CrowdDraw<'_>], culling: Culling) -> Result<(), Error> {
        if culling == Culling::Gpu {
            for d in crowds.iter_mut() {
                crate::crowd::ensure_slots(&mut d.gpu.counts, &self.device)?;
            }
        }
        if crowds.iter().any(|d| !d.gpu.counts.ring.in_flight().is_empty()) {
            let _ = self.device.poll(wgpu::PollType::Poll);
        }
        for d in crowds.iter_mut() {
            let counts = &mut d.gpu.counts;
            crate::crowd::collect(counts);
            counts.ring.start_frame(culling == Culling::Gpu);
        }
        Ok(())
    }

    /// The GPU culling's counts of `crowd`'s newest frame whose read-back has arrived, polling the
    /// device once **without waiting**, and how many of the crowd's frames late they are (0: its last
    /// prepared frame, once the host has waited for it); `None` before any. See
    /// `vat_core::backend::frame::gpu_counts` for what is counted; each frame's [`FrameReport`] carries the
    /// counts known when it was prepared.
    pub fn gpu_counts(&self, crowd: &mut GpuCrowd) -> Option<GpuCountsResult> {
        if !crowd.counts.ring.in_flight().is_empty() {
            let _ = self.device.poll(wgpu::PollType::Poll);
            crate::crowd::collect(&mut crowd.counts);
        }
        crowd.counts.ring.latest()
    }

    /// Records the colour draws of the last [`prepare`](Self::prepare)d frame (the ground first when
    /// [`RenderOptions::ground`] is on, then every crowd's bodies and attachments, lit and shadowed
    /// by vat's `fs_lit`) into a render pass the host began, whose attachments have `formats` (one
    /// colour attachment at location 0 and a depth attachment; see [`PassFormats`]): the render
    /// pipelines are created for them on first use. `crowds` must be those given to `prepare`, in
    /// the same order; their uploads and culling must execute before this pass (same encoder, or an
    /// earlier submission).
    ///
    /// **State expected:** a pass over a colour and a depth attachment of `formats`, any load ops
    /// (nothing is cleared: the host's colour and depth are kept, vat's draws test `Less` against the
    /// host's depth and write depth), any viewport and scissor (the draws use whatever the pass has:
    /// set the viewport to the camera's image, the default is the whole attachment).
    /// **State left:** the viewport, scissor, blend constant and stencil reference are not touched;
    /// the last vat pipeline, bind groups 0-2 and vat's index buffer (`Uint32`) stay bound, so the
    /// host sets its own pipeline, bind groups and buffers before its next draw. Draws nothing
    /// after a failed `prepare`.
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, in the same order.
    pub fn draw(&mut self, pass: &mut wgpu::RenderPass<'_>, crowds: &[CrowdDraw<'_>], formats: PassFormats) {
        self.draw_host_pass(pass, crowds, HostPass::Colour { motion: formats.motion.is_some() }, formats);
    }

    /// Records the prepared frame's draws of `host` into the host's `pass` of `formats` (nothing
    /// after a failed `prepare`).
    ///
    /// # Panics
    /// Those of `FrameState::draws`.
    fn draw_host_pass(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        crowds: &[CrowdDraw<'_>],
        host: HostPass,
        formats: PassFormats,
    ) {
        let frame = std::mem::take(&mut self.frame);
        let (set, view) = match host {
            HostPass::Depth { view, .. } => (StageSet::Depth, Some(view)),
            _ => (StageSet::Colour, None),
        };
        let drawn = match frame.draws(crowds.iter().map(|d| d.crowd.id()), host) {
            Some(draws) => {
                let pipelines = self.pipelines_for(&draws, formats);
                self.encode_draws(pass, set, view, &draws, crowds, &pipelines)
            }
            None => Ok(()),
        };
        self.frame = frame;
        if let Err(missing) = drawn {
            // `prepare` found every draw's resources (its `finish`), and nothing drops them between.
            panic!("internal: {missing} at draw time, though prepare found it");
        }
    }

    /// Whether the last successful [`prepare`](Self::prepare) planned motion vectors
    /// ([`RenderOptions::motion_vectors`]): only then may [`draw`](Self::draw) or
    /// [`draw_prepass`](Self::draw_prepass) be given a pass with a motion attachment. `false` after
    /// a failed `prepare`.
    pub fn motion_vectors_prepared(&self) -> bool {
        self.frame.motion_vectors_prepared()
    }

    /// Records the prepass draws of the last [`prepare`](Self::prepare)d frame into a host's prepass
    /// of the camera that the host began (Bevy's depth, normal and motion-vector prepasses): the
    /// colour draws' instances, LODs and cross-fades (the ground first when
    /// [`RenderOptions::ground`] is on, then every crowd's bodies and attachments, culled as
    /// [`draw`](Self::draw) culls them), each with the colour pass's vertex stage (the same
    /// positions and [`RenderOptions::jitter`]) and a prepass fragment stage writing what `formats`
    /// has: the unit world normal as `vec4(n * 0.5 + 0.5, 1)` at location 0, the motion as
    /// `vec4(motion, 0, 0)` at location 1 (`vat_core::backend::gpu::ENTRY_POINT_FS_PREPASS` and its
    /// siblings), with `fs_lit`'s discards (back faces of single-sided materials, alpha mask), so
    /// the depth it writes is the depth `draw` writes (no bias). The later colour pass then draws
    /// the same fragments with the pass's test (`GreaterEqual` or `LessEqual` pass on equal depth;
    /// use such conventions, not `Greater` or `Less`). A host shader's stages are not used here.
    ///
    /// **State expected:** a pass whose colour attachments are
    /// `vat_core::backend::pipeline::colour_slots(formats.normal, formats.motion)` (a motion-only pass has no
    /// attachment at location 0) and a depth attachment of `formats.depth`, any load ops, any
    /// viewport. **State left:** as [`draw`](Self::draw). Draws nothing after a failed `prepare`.
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, in the same order, or
    /// `formats.motion` is set and the frame was prepared without
    /// [`RenderOptions::motion_vectors`].
    pub fn draw_prepass(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        crowds: &[CrowdDraw<'_>],
        formats: PrepassFormats,
    ) {
        self.draw_host_pass(pass, crowds, HostPass::Prepass(formats.targets()), formats.pass_formats());
    }

    /// Records the depth-only draws of extra view `view` (an index into the `views` given to the last
    /// [`prepare`](Self::prepare): the host's shadow cascade, spot light or depth pre-pass) into a
    /// depth-only render pass the host began, whose depth attachment has `formats.depth`
    /// (`formats.color` must be `None`: vat's depth pipelines have no fragment stage). The draws are
    /// bodies and attachments as the camera's colour draws (same LODs and cross-fades; no ground),
    /// projected by the view's matrix, depth test `Less` with writes and the shadow depth bias
    /// (`vat_core::backend::pipeline::SHADOW_DEPTH_BIAS`). The instances are culled for the view itself
    /// (CPU culling: `Crowd::cull_view`; GPU culling: a culling dispatch of `prepare` into the
    /// view's own lists), so a view reaching beyond the camera's frustum gets the casters there.
    ///
    /// **State expected and left:** as [`draw`](Self::draw): nothing is cleared, the viewport and
    /// scissor are the host's and untouched, vat's last pipeline, bind groups 0-2 and index buffer
    /// stay bound. Draws nothing after a failed `prepare`.
    ///
    /// # Panics
    /// If `crowds` are not the crowds of the last successful `prepare`, `view` is not an index into
    /// its `views`, or `formats.color` is not `None`.
    pub fn draw_depth(
        &mut self,
        pass: &mut wgpu::RenderPass<'_>,
        crowds: &[CrowdDraw<'_>],
        view: usize,
        formats: PassFormats,
    ) {
        self.draw_host_pass(pass, crowds, HostPass::Depth { view, colour: formats.color.is_some() }, formats);
    }

    /// Records one frame of `crowds` seen by `camera` into `encoder` and `target`, clearing it: the
    /// convenience built from the embeddable calls, [`prepare`](Self::prepare) then a colour pass it
    /// begins itself over `target` (colour cleared to [`RenderOptions::clear_color`], depth to 1,
    /// both stored), into which it records [`draw`](Self::draw) with [`pass_formats`](Self::pass_formats).
    ///
    /// # Errors
    /// Those of [`prepare`](Self::prepare) (nothing is drawn then).
    ///
    /// # Panics
    /// If the target's size is zero, or a [`GpuCrowd`] is paired with a crowd it was not made for.
    pub fn render(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        target: RenderTarget<'_>,
        options: &RenderOptions,
    ) -> Result<FrameReport, Error> {
        assert!(target.size[0] > 0 && target.size[1] > 0, "render target of size {:?}", target.size);
        let motion =
            if options.motion_vectors { Some(target.motion.ok_or(Error::NoMotionTarget)?) } else { None };
        let report = self.prepare(encoder, crowds, camera, options, &[])?;
        let [r, g, b, a] = options.clear_color;
        let attachment = |view, clear| {
            Some(wgpu::RenderPassColorAttachment {
                view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations { load: wgpu::LoadOp::Clear(clear), store: wgpu::StoreOp::Store },
            })
        };
        let mut color_attachments = vec![attachment(target.color, wgpu::Color { r, g, b, a })];
        color_attachments.extend(motion.map(|(view, _)| attachment(view, wgpu::Color::TRANSPARENT)));
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("vat colour"),
            color_attachments: &color_attachments,
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: target.depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(self.config.conventions.clear_depth()),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let formats = PassFormats { motion: motion.map(|(_, format)| format), ..self.pass_formats() };
        self.draw(&mut pass, crowds, formats);
        Ok(report)
    }
}
