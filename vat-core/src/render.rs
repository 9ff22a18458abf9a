//! The seam between game code and a GPU backend: the per-frame choices ([`RenderOptions`]), the
//! report of a frame ([`FrameReport`]) and the [`CrowdRenderer`] trait that vat-wgpu and vat-vulkan
//! both implement, so code written against it runs unchanged on either backend.
//!
//! Everything here is plain data: no GPU types. A backend's own `Renderer` (recording into a caller's
//! command encoder or command buffer, drawing into a caller's images) takes the same
//! [`RenderOptions`] and returns the same [`FrameReport`]; [`CrowdRenderer`] is the smaller, owned
//! facade over it: the backend owns its device (or borrows the caller's), renders into its own
//! offscreen colour + depth target and reads it back.
//!
//! ```no_run
//! use vat_core::container::Asset;
//! use vat_core::crowd::{Camera, Crowd, CrowdAsset};
//! use vat_core::render::{CrowdRenderer, RenderOptions};
//!
//! /// Written once, runs on `vat_wgpu::Offscreen` and `vat_vulkan::Offscreen` alike.
//! fn one_frame<R: CrowdRenderer>(renderer: &mut R, bytes: &[u8]) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
//!     let asset = Asset::parse(bytes)?;
//!     let gpu_asset = renderer.upload(&asset)?;
//!     let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, Default::default());
//!     crowd.spawn([0.0, 0.0, 0.0], 0.0, 0);
//!     let mut gpu_crowd = renderer.create_crowd(&crowd)?;
//!     let [w, h] = renderer.size();
//!     let camera = Camera::look_at([0.0, 1.5, 5.0], [0.0, 1.0, 0.0], 0.8, w as f32 / h as f32, 0.1, 500.0);
//!     renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &RenderOptions::default())?;
//!     Ok(renderer.read_rgba8()?)
//! }
//! ```

use crate::container::Asset;
use crate::crowd::{Camera, Crowd, CrowdStats};
use crate::frame::gpu_counts::{CountsRing, GpuCountsResult, GpuCullCounts};

/// Which vertex path displaces the mesh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RenderMode {
    /// Vertex animation texture: one 64-bit texel per vertex per frame (the default).
    #[default]
    Vat,
    /// Skinning from the bone texture (assets baked with `--bones`).
    Bone,
    /// The bind pose, undeformed: the rest mesh of every asset drawn as plain static instances
    /// (same triangles, LODs, culling and shading; no animation texture is read). The baseline
    /// against which the VAT's own cost is measured (`cargo bench -p vat-vulkan --bench vat_tax`),
    /// and a frozen crowd. Socket attachments still follow their capture tracks.
    Rest,
}

impl RenderMode {
    /// The compute entry point that decodes this mode's vertices for verification (`cs_decode`,
    /// `cs_decode_bone`); `None` for [`RenderMode::Rest`], whose vertices are the asset's rest
    /// vertices as stored (`crate::gpu::rest_vertices`).
    pub fn decode_entry_point(self) -> Option<&'static str> {
        match self {
            RenderMode::Vat => Some(crate::gpu::ENTRY_POINT_DECODE),
            RenderMode::Bone => Some(crate::gpu::ENTRY_POINT_DECODE_BONE),
            RenderMode::Rest => None,
        }
    }
}

/// Where instances are culled and sorted into LOD batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Culling {
    /// `Crowd::prepare_frame` culls grid cells on the CPU; one draw per batch of cells (the default).
    #[default]
    Cpu,
    /// A compute pass culls every instance and writes indexed-indirect draws, one per LOD: the draw
    /// count does not depend on the number of cells, and the CPU only uploads changed records.
    Gpu,
}

/// Per-frame choices of a render call ([`CrowdRenderer::render`], or a backend's own `Renderer::render`). Cross-fade, LOD bias, far pool, attachments and the
/// shadow/cross-fade LOD limits are each crowd's (`vat_core::crowd::CrowdConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderOptions {
    /// VAT or bone mode.
    pub mode: RenderMode,
    /// CPU or GPU culling.
    pub culling: Culling,
    /// Shadows on: the colour draws sample a shadow map ([`shadow_map`](Self::shadow_map) says
    /// whose). With vat's own map, `prepare` renders it (casters are drawn only when the crowd's
    /// `CrowdConfig::shadows` is on as well: the crowd decides which batches cast).
    pub shadows: bool,
    /// Whose shadow map the colour draws sample when [`shadows`](Self::shadows) is on.
    pub shadow_map: ShadowMapSource,
    /// Unit vector from the scene towards the sun, world space (normalised by the renderer).
    pub sun_direction: [f32; 3],
    /// Colour of the sun's light, linear RGB (default white): multiplies the direct light (see
    /// [`crate::gpu::FrameUniforms`] for the light model). Negative or non-finite components are 0.
    pub sun_color: [f32; 3],
    /// Ambient light, linear, 0..=1.
    pub ambient: f32,
    /// Linear RGBA the colour target is cleared to.
    pub clear_color: [f64; 4],
    /// How far from the camera the shadow map reaches, metres.
    pub shadow_distance: f32,
    /// Draw a ground square at `y = 0` around the camera (half side `ground_half_extent`), lit and
    /// shadowed like the crowd. Off by default (the background is then the clear colour). A
    /// convenience of the all-in-one `render` (tests, quick looks): a host draws its own ground in
    /// its own pass, as `vat render` and `vat demo` do (`vat_examples::embed::Scene::ground`).
    pub ground: bool,
    /// Half the side of the ground square, metres.
    pub ground_half_extent: f32,
    /// Length units of the scene per metre of the renderer's own fixed lengths (default 1): the
    /// drawn asset's unit (100 for a centimetre-scale scene; the examples take it from
    /// `vat_examples::scene::SceneScale::unit`). The shadow map's reach towards the sun for casters outside the view
    /// ([`crate::gpu::SHADOW_CASTER_MARGIN`]) and the shadow lookup's normal offset
    /// ([`crate::gpu::SHADOW_NORMAL_OFFSET`]) are multiplied by it, so shadows look the same at any
    /// scale. Not finite or `<= 0` means 1.
    pub scene_unit: f32,
    /// Motion vectors (default off): the frame keeps what motion needs, and the draws into a pass
    /// with a motion target write each pixel's screen motion since the previous frame there: the
    /// colour draws into a pass with a second colour target (location 1, the backend's
    /// `PassFormats::motion`; a colour pass without one draws colour alone), and the prepass draws
    /// (the backend's `draw_prepass` with `PrepassFormats::motion`). A pass with a motion target
    /// needs a frame prepared with them. The motion is `uv_now - uv_previous` in fractions of
    /// the target (`uv = (0.5 + 0.5 x, 0.5 - 0.5 y)` of the NDC: x right, y down), in `.xy` of a
    /// `vec4` (`.zw` = 0), from the previous frame's camera, clock and instance records: Bevy's
    /// convention (`(ndc_now - ndc_previous) * (0.5, -0.5)`, unjittered). Each crowd
    /// keeps its records of the previous frame in a second half of its record buffer (64 more bytes
    /// per instance on the GPU and the CPU, and the previous records of the changed instances
    /// uploaded as well), and the vertex stage decodes each vertex twice. The previous frame of a
    /// crowd is its last planned one; the first frame with motion vectors has none (zero motion
    /// but the camera's, which it has neither).
    pub motion_vectors: bool,
    /// Motion vectors: forget the previous camera this frame (a cut), so the motion is the scene's
    /// alone. Instances are reset one by one with `Crowd::reset_motion_history` (a teleport).
    pub camera_cut: bool,
    /// Motion vectors: the camera's world-to-clip matrix of the previous frame as the host knows it
    /// (column-major, unjittered; Bevy's `PreviousViewData::clip_from_world`), instead of the
    /// camera each crowd was last planned with. For a host that prepares several views a frame,
    /// where a crowd's last plan may be another view's. `None` (default): the crowd's last camera.
    /// [`camera_cut`](Self::camera_cut) wins over it.
    pub previous_view_proj: Option<[[f32; 4]; 4]>,
    /// Sub-pixel jitter of the colour and prepass draws (TAA), in NDC units (x right, y up; one
    /// pixel is `2 / width` by `2 / height`): every colour and prepass vertex stage moves its clip
    /// position by `jitter * clip.w` (`crate::gpu::FrameUniforms::jitter`). Default `[0, 0]`;
    /// non-finite components are 0. The camera's matrix stays unjittered: culling, LOD, the
    /// depth-only views and the motion vectors use it as given.
    pub jitter: [f32; 2],
    /// How the colour draws light surfaces: vat's own model (default, with
    /// [`ambient`](Self::ambient) and [`sun_color`](Self::sun_color) as shares) or the physically
    /// based one of a host's PBR meshes ([`crate::gpu::LightModel::Pbr`], `sun_color` in the
    /// host's units).
    pub light_model: crate::gpu::LightModel,
}

impl RenderOptions {
    /// The matrix of vat's built-in shadow map for `camera` (see [`crate::gpu::shadow_view_proj`]:
    /// fitted to the first [`shadow_distance`](Self::shadow_distance) of the view, reaching
    /// [`crate::gpu::SHADOW_CASTER_MARGIN`] times [`scene_unit`](Self::scene_unit) towards the sun),
    /// whether or not these options use it. A host that renders its own map with vat's fit (the
    /// CLI's `render` and `demo`) passes it, with [`crate::gpu::ShadowLookup::built_in`], as
    /// [`ShadowMapSource::Host`]. `None` if the camera's matrix is not invertible or the sun
    /// direction is zero.
    pub fn built_in_shadow_view_proj(&self, camera: &crate::crowd::Camera) -> Option<[[f32; 4]; 4]> {
        crate::gpu::shadow_view_proj(
            &camera.view_proj,
            self.sun_direction,
            self.shadow_distance,
            crate::gpu::SHADOW_CASTER_MARGIN * crate::gpu::sanitized_scene_unit(self.scene_unit),
        )
    }

    /// Whether the colour draws sample the host's shadow map (shadows on, [`ShadowMapSource::Host`]):
    /// a backend then needs the host's map before it plans the frame.
    pub fn samples_host_shadow_map(&self) -> bool {
        self.shadows && matches!(self.shadow_map, ShadowMapSource::Host(_))
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            mode: RenderMode::Vat,
            culling: Culling::Cpu,
            shadows: true,
            shadow_map: ShadowMapSource::BuiltIn,
            sun_direction: [0.4, 0.8, 0.3],
            sun_color: [1.0, 1.0, 1.0],
            ambient: 0.3,
            clear_color: [0.55, 0.65, 0.8, 1.0],
            shadow_distance: 60.0,
            ground: false,
            ground_half_extent: 250.0,
            scene_unit: 1.0,
            motion_vectors: false,
            camera_cut: false,
            previous_view_proj: None,
            jitter: [0.0; 2],
            light_model: crate::gpu::LightModel::Vat,
        }
    }
}

/// Whose shadow map the crowd's colour draws sample ([`RenderOptions::shadow_map`]).
// The host's lookup (four cascades) is held inline so that `RenderOptions` stays `Copy`; options are
// made once per frame, so their size costs nothing that matters.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum ShadowMapSource {
    /// vat's own: `prepare` fits an orthographic sun map around the camera's first
    /// [`RenderOptions::shadow_distance`] metres, clears it and draws the casting crowds into it.
    #[default]
    BuiltIn,
    /// The host's: vat draws no shadow pass; the host renders its map (drawing the crowd into it
    /// with the backend's `draw_depth` of a view whose matrix is the lookup's `view_proj`), gives
    /// the map to the backend's `Renderer::set_host_shadow_map` and it is sampled with this lookup
    /// (its conventions are [`crate::gpu::ShadowLookup`]'s). Shadows are sampled only when
    /// [`RenderOptions::shadows`] is on; `prepare` fails when no map was given.
    Host(crate::gpu::ShadowLookup),
}

/// One crowd of a frame: the crowd, its asset as uploaded (`A`, a backend's `GpuAsset`) and its GPU
/// copy (`C`, a backend's `GpuCrowd`, made for this crowd by `create_crowd`). A frame draws any
/// number of them, of any assets, with one shadow pass and one colour pass.
#[derive(Debug)]
pub struct CrowdDraw<'a, A, C> {
    /// The asset the crowd was built from, uploaded to the same renderer.
    pub asset: &'a A,
    /// The crowd's GPU copy.
    pub gpu: &'a mut C,
    /// The crowd (its dirty set is taken; CPU culling runs its frame preparation).
    pub crowd: &'a mut Crowd,
}

/// What one render call did (the same report from every backend).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameReport {
    /// The crowds' statistics of this frame, summed over the frame's crowds.
    ///
    /// CPU culling: those of `Crowd::prepare_frame`. GPU culling runs no CPU culling: the CPU fills
    /// in `simulated` (the crowd's instance count) and `uploaded_record_bytes` (the bytes of the
    /// crowd's dirty record ranges, as on the CPU path), and `drawn`, `submitted` (equal to `drawn`:
    /// the GPU draws every instance it keeps) and `triangles` (bodies only, no attachment triangles)
    /// come from the GPU's counts of an **earlier** frame, [`gpu_counts`](Self::gpu_counts), read
    /// back without waiting; they are 0 while [`gpu_counts_frames_late`](Self::gpu_counts_frames_late)
    /// is `None`. Every other field is 0 with GPU culling. Which instances the GPU drew is known
    /// only on the GPU: [`CrowdRenderer::read_gpu_visible`] reads the lists back (waiting). The
    /// bytes actually written this frame (including a full upload) are in
    /// [`uploaded_bytes`](Self::uploaded_bytes).
    pub stats: CrowdStats,
    /// Draw calls recorded in the colour pass (bodies).
    pub draws_main: u32,
    /// The crowd's shadow-casting draw calls: those of vat's shadow pass with the built-in map, or,
    /// when the colour draws sample the host's map ([`ShadowMapSource::Host`]), the depth draws of
    /// the extra views (`draw_depth`, through which the host draws the crowd into its maps, so
    /// the same as [`draws_views`](Self::draws_views)); 0 when shadows are off.
    pub draws_shadow: u32,
    /// Draw calls of socket attachments in the colour pass.
    pub draws_attachments: u32,
    /// Draw calls of impostor cards in the colour pass (counted in [`draws_main`](Self::draws_main)
    /// too): one per crowd with GPU culling, one per run of cells with CPU culling.
    pub draws_impostors: u32,
    /// Draw calls of the ground (0 or 1).
    pub draws_ground: u32,
    /// Depth-only draw calls planned for the extra views (a host's shadow maps or prepasses, drawn
    /// by `draw_depth`), summed over the views.
    pub draws_views: u32,
    /// Compute dispatches recorded, summed over the crowds: per crowd the record scatter (a frame
    /// with many short runs of changed records; see `vat_core::backend::gpu::ScatterPlan`), and with GPU
    /// culling the camera's culling pass and one per extra view: 0 to 2 + views per crowd.
    pub dispatches: u32,
    /// Bytes written to GPU buffers this frame (records, instance list, uniforms).
    pub uploaded_bytes: u64,
    /// The mode drawn.
    pub mode: RenderMode,
    /// The culling path used.
    pub culling: Culling,
    /// GPU culling: the GPU's counts (summed over the frame's crowds) of the newest earlier frame
    /// whose read-back has arrived (see [`crate::frame::gpu_counts`] for what is counted), also
    /// folded into [`stats`](Self::stats). `None` with CPU culling, and with GPU culling until every
    /// crowd of the frame has a result (the first frame of a crowd never has one: its own counts
    /// are still being computed).
    pub gpu_counts: Option<GpuCullCounts>,
    /// How many frames late [`gpu_counts`](Self::gpu_counts) are: `Some(k)`, the counts are those of
    /// the crowd's frame `k` frames before this one (the largest `k` over the frame's crowds; frames
    /// are counted per crowd, each prepared frame of it, either culling). A report returned by
    /// `render`/`prepare` says at least 1 (this frame's counts cannot have arrived yet); it is 1 when
    /// the previous frame has finished on the GPU by then, up to
    /// [`RING_DEPTH`](crate::frame::gpu_counts::RING_DEPTH) with frames in flight. `None`: no counts
    /// yet (CPU culling, or no result has arrived for some crowd); `Some(0)` only from
    /// [`CrowdRenderer::gpu_counts`] after waiting for the frame.
    pub gpu_counts_frames_late: Option<u32>,
    /// GPU culling: this frame's draw arguments were not copied for read-back because every slot of
    /// a crowd's ring was still in flight (the GPU is more than
    /// [`RING_DEPTH`](crate::frame::gpu_counts::RING_DEPTH) frames behind); the counts of this frame
    /// will never be reported. Nothing waits for a slot.
    pub gpu_counts_skipped: bool,
    /// The built-in sun shadow map's matrix this frame (world to clip, column-major, depth 0..1 with
    /// 0 nearest the sun), when vat drew its shadow pass: with the backend's `Renderer::shadow_map_view`
    /// and [`crate::gpu::SHADOW_WGSL`]'s `vat_shadow_lookup`, a host shades its own surfaces with
    /// the crowd's shadows exactly as vat shades the crowd (bias and normal offset of
    /// `ShadowLookup::built_in`). `None` without a built-in shadow pass.
    pub shadow_view_proj: Option<[[f32; 4]; 4]>,
}

impl FrameReport {
    /// Folds GPU counts into a GPU-culled frame's report: `results` has one entry per crowd of the
    /// frame (a ring's [`CountsRing::latest`]). When every crowd has one, sets
    /// [`gpu_counts`](Self::gpu_counts) to their sum, [`gpu_counts_frames_late`](Self::gpu_counts_frames_late)
    /// to the largest lag and `stats.drawn`, `stats.submitted` (both the counts' `drawn`) and
    /// `stats.triangles` from them; otherwise (or with no crowd) clears those. A CPU-culled report
    /// is left as it is.
    pub fn set_gpu_counts(&mut self, results: impl IntoIterator<Item = Option<GpuCountsResult>>) {
        if self.culling != Culling::Gpu {
            return;
        }
        let mut sum: Option<(GpuCullCounts, u32)> = None;
        let mut complete = true;
        for r in results {
            match r {
                Some(r) => {
                    let (counts, late) = sum.get_or_insert((GpuCullCounts::default(), 0));
                    *counts += r.counts;
                    *late = (*late).max(r.frames_late);
                }
                None => complete = false,
            }
        }
        let sum = sum.filter(|_| complete);
        let counts = sum.map(|(c, _)| c).unwrap_or_default();
        self.stats.drawn = counts.drawn;
        self.stats.submitted = counts.drawn;
        self.stats.triangles = counts.triangles;
        self.gpu_counts = sum.map(|(c, _)| c);
        self.gpu_counts_frames_late = sum.map(|(_, late)| late);
    }

    /// [`set_gpu_counts`](Self::set_gpu_counts) from the rings of the frame's crowds, and
    /// [`gpu_counts_skipped`](Self::gpu_counts_skipped) if a ring skipped this frame's copy.
    pub fn set_gpu_rings<'a>(&mut self, rings: impl IntoIterator<Item = &'a CountsRing>) {
        let rings: Vec<&CountsRing> = rings.into_iter().collect();
        self.set_gpu_counts(rings.iter().map(|r| r.latest()));
        self.gpu_counts_skipped = self.culling == Culling::Gpu && rings.iter().any(|r| r.skipped());
    }
}

/// A GPU backend that renders crowds offscreen: the one seam game code is written against.
///
/// Implemented by `vat_wgpu::Offscreen` and `vat_vulkan::Offscreen`. Both build their pipelines from
/// [`crate::gpu::SHADER_SOURCE`] and [`crate::gpu::BINDINGS`], so the same crowd, camera, time and
/// options give the same image on either (the workspace's parity tests measure how close).
///
/// The target is an sRGB RGBA8 colour image plus a 32-bit float depth image of [`size`](Self::size)
/// pixels, owned by the renderer. Every call is synchronous from the caller's point of view except
/// [`render`](Self::render), which submits the frame's GPU work and returns without waiting for it;
/// [`read_rgba8`](Self::read_rgba8), [`wait`](Self::wait) and [`read_gpu_visible`](Self::read_gpu_visible)
/// wait for submitted work first; [`gpu_counts`](Self::gpu_counts) never waits.
pub trait CrowdRenderer {
    /// An uploaded asset: textures and buffers on this backend's device, no CPU copy of the payload.
    type Asset;
    /// One crowd's GPU copy (records, lists, uniforms and their sync state), made by
    /// [`create_crowd`](Self::create_crowd) for one [`Crowd`].
    type Crowd;
    /// This backend's error (`vat_wgpu::Error`, `vat_vulkan::Error`: both
    /// [`crate::backend::Error`] over the backend's own device errors).
    type Error: std::error::Error + Send + Sync + 'static;

    /// A short name of the backend and adapter, e.g. `"wgpu/Vulkan: llvmpipe (LLVM 19.1.7, 256 bits)"`.
    fn adapter_name(&self) -> String;

    /// Uploads a validated asset. A failed upload releases everything it created.
    ///
    /// # Errors
    /// The asset exceeds a device limit (texture size, buffer size), or the device is out of memory or lost.
    fn upload(&mut self, asset: &Asset<'_>) -> Result<Self::Asset, Self::Error>;

    /// Creates the GPU copy of `crowd` (its buffers come with its first frame). Use it only with
    /// `crowd`: a frame that pairs it with another crowd panics.
    ///
    /// # Errors
    /// A device failure.
    fn create_crowd(&mut self, crowd: &Crowd) -> Result<Self::Crowd, Self::Error>;

    /// The target size in pixels, `[width, height]`.
    fn size(&self) -> [u32; 2];

    /// Replaces the target with one of `size` pixels (both at least 1). Waits for submitted work.
    ///
    /// # Errors
    /// A zero or over-limit size, or a device failure.
    fn resize(&mut self, size: [u32; 2]) -> Result<(), Self::Error>;

    /// Records and submits one frame of `crowds` seen by `camera` (shadow pass over every crowd,
    /// culling, colour pass), clearing the target first. Uploads only what changed in each crowd
    /// since its previous frame. The frame is planned by [`crate::frame::FramePlan::plan`].
    ///
    /// # Errors
    /// Bone mode on an asset without bones, a crowd larger than the device's buffer limits, or a
    /// device failure. After an error every crowd of the frame is uploaded whole at its next frame.
    ///
    /// # Panics
    /// If a crowd's GPU copy was made for another crowd.
    fn render(
        &mut self,
        crowds: &mut [CrowdDraw<'_, Self::Asset, Self::Crowd>],
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<FrameReport, Self::Error>;

    /// [`render`](Self::render) of one crowd.
    ///
    /// # Errors
    /// Those of [`render`](Self::render).
    fn render_crowd(
        &mut self,
        asset: &Self::Asset,
        gpu: &mut Self::Crowd,
        crowd: &mut Crowd,
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<FrameReport, Self::Error> {
        self.render(&mut [CrowdDraw { asset, gpu, crowd }], camera, options)
    }

    /// Blocks until every submitted frame has finished on the GPU.
    ///
    /// # Errors
    /// The device was lost.
    fn wait(&mut self) -> Result<(), Self::Error>;

    /// The last rendered frame as tightly packed 8-bit sRGB RGBA rows, top row first
    /// (`width * height * 4` bytes). Waits for the frame.
    ///
    /// # Errors
    /// The device was lost or the read-back failed.
    fn read_rgba8(&mut self) -> Result<Vec<u8>, Self::Error>;

    /// The motion-vector target of the last frame rendered with [`RenderOptions::motion_vectors`]:
    /// `width * height` RGBA `f32` texels, top row first, `.xy` the motion (0 where nothing was
    /// drawn). Waits for the frame.
    ///
    /// # Errors
    /// The device was lost or the read-back failed.
    fn read_motion(&mut self) -> Result<Vec<[f32; 4]>, Self::Error>;

    /// The instance indices the last GPU-culled frame of `crowd` put in each LOD's draw list, one
    /// ascending list per LOD, then the impostor cards' list when the crowd draws its asset's tier
    /// (empty before any GPU-culled frame). Waits for the frame. For tests and
    /// debugging: the CPU path's choices are in the crowd's `FrameDraws`.
    ///
    /// # Errors
    /// The device was lost or the read-back failed.
    fn read_gpu_visible(&mut self, crowd: &Self::Crowd) -> Result<Vec<Vec<u32>>, Self::Error>;

    /// The GPU culling's counts of `crowd`'s newest frame whose read-back has arrived, checked
    /// **without waiting** (a frame still on the GPU is simply not there yet), and how many of the
    /// crowd's frames late they are (0: the last rendered frame, after [`wait`](Self::wait) or
    /// [`read_rgba8`](Self::read_rgba8)). `None` before any has arrived. Each GPU-culled frame's
    /// report already carries the counts known when it was prepared
    /// ([`FrameReport::gpu_counts`]); this is for the counts that arrived since, e.g. a one-frame
    /// render that waited for its frame. Fold them into a report with [`FrameReport::set_gpu_counts`].
    ///
    /// # Errors
    /// The device was lost or the read-back failed.
    fn gpu_counts(&mut self, crowd: &mut Self::Crowd) -> Result<Option<GpuCountsResult>, Self::Error>;

    /// GPU time of the last rendered frame in milliseconds, from timestamp queries, when the backend
    /// and adapter support them (`None` otherwise). Waits for the frame.
    fn last_gpu_time_ms(&mut self) -> Option<f64> {
        None
    }
}
