//! A small host renderer that owns its frame and draws vat crowds inside it: the `embed` example and
//! its image test (`tests/tests/gpu_embed_scene.rs`) share this code.
//!
//! The host has its own scene (a ground, a low wall in front of the crowd, a tall building beside
//! it), its own camera, sun and shadow map, its own shader ([`HOST_SHADER`]) and its own passes.
//! Into those passes it draws two crowds of two different assets (procedural humanoids and
//! soft-body banners) through a backend's embeddable calls:
//!
//! 1. `prepare` (uploads and culling, into the host's encoder / command buffer), with the host's
//!    sun matrix as an extra view and [`ShadowMapSource::Host`] as the shadow map;
//! 2. the host's shadow pass: its own buildings, then `draw_depth` of that view (the crowd casts
//!    into the host's map);
//! 3. the host's colour pass over its own colour and depth targets: its scene (lit and shadowed by
//!    its map: the crowd shadows the host's ground), then `draw` (vat's shading samples the same
//!    map: the host's buildings shadow the crowd, and the shared depth buffer lets the wall hide
//!    part of the crowd).
//!
//! The scene and the frame's order are written once here ([`Scene`], [`HostFrame`]); the API
//! calls are in [`wgpu_host`] and [`vulkan_host`], one small file per backend.

use crate::scene::GroundSquare;
use anyhow::Result;
use bytemuck::Zeroable;
use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::gpu::{ShadowLookup, ShadowLookupUniforms};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, RenderOptions, ShadowMapSource};

pub mod vulkan_host;
pub mod wgpu_host;

/// Image size of the example and the test, pixels.
pub const SIZE: [u32; 2] = [480, 300];

/// Side of the host's shadow map, texels.
pub const SHADOW_MAP_SIZE: u32 = 2048;

/// The host's shader: its scene lit by its sun with its shadow map (`vs_scene` / `fs_scene`), and
/// its shadow pass (`vs_shadow`). The light model matches vat's built-in one (see
/// `vat_core::backend::gpu::FrameUniforms`), so host and crowd look lit by the same sun.
pub const HOST_SHADER: &str = r#"
struct Host {
    view_proj: mat4x4<f32>,
    light_view_proj: mat4x4<f32>,
    // xyz: unit vector towards the sun; w: ambient.
    sun: vec4<f32>,
    // xyz: sun colour.
    sun_color: vec4<f32>,
    // vat's lookup of the host's map (vat_core::backend::gpu::ShadowLookupUniforms; strength 0: none).
    shadow: VatShadowLookup,
}

@group(0) @binding(0) var<uniform> host: Host;
@group(0) @binding(1) var shadow_map: texture_depth_2d_array;
@group(0) @binding(2) var shadow_sampler: sampler_comparison;

struct SceneOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec3<f32>,
}

@vertex
fn vs_scene(@location(0) position: vec3<f32>, @location(1) normal: vec3<f32>, @location(2) color: vec3<f32>) -> SceneOut {
    return SceneOut(host.view_proj * vec4<f32>(position, 1.0), position, normal, color);
}

@vertex
fn vs_shadow(@location(0) position: vec3<f32>) -> @builtin(position) vec4<f32> {
    return host.light_view_proj * vec4<f32>(position, 1.0);
}

@fragment
fn fs_scene(in: SceneOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    // vat_shadow_lookup: vat_core::backend::gpu::SHADOW_WGSL, appended (host_shader()).
    let shadow = vat_shadow_lookup(shadow_map, shadow_sampler, host.shadow, in.world, n);
    let direct = max(dot(n, host.sun.xyz), 0.0) * shadow * host.sun_color.xyz;
    let sky = mix(0.55, 1.0, 0.5 + 0.5 * n.y);
    let light = host.sun.w * sky + (1.0 - host.sun.w) * direct;
    return vec4<f32>(in.color * light, 1.0);
}
"#;

/// The host's whole shader: [`HOST_SHADER`] followed by vat's shadow lookup
/// ([`vat_core::backend::gpu::SHADOW_WGSL`]), so its surfaces are shadowed exactly as the crowd is.
pub fn host_shader() -> String {
    format!("{HOST_SHADER}{}", vat_core::backend::gpu::SHADOW_WGSL)
}

/// One vertex of the host's scene (its vertex buffer: three `vec3<f32>` attributes, 36 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HostVertex {
    /// World position, metres.
    pub position: [f32; 3],
    /// Unit world normal.
    pub normal: [f32; 3],
    /// Linear RGB albedo.
    pub color: [f32; 3],
}

/// The host's uniform block (`struct Host` of [`HOST_SHADER`], 528 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct HostUniforms {
    /// The camera's world-to-clip matrix, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// The sun's shadow-map matrix, column-major, depth 0..1.
    pub light_view_proj: [[f32; 4]; 4],
    /// Unit vector towards the sun, and the ambient light in `w`.
    pub sun: [f32; 4],
    /// The sun's colour; `w` is 0.
    pub sun_color: [f32; 4],
    /// How the host's surfaces look its shadow map up: the same lookup vat's draws use (all
    /// zeros: no shadows).
    pub shadow: ShadowLookupUniforms,
}

/// A vertex range of the host's vertex buffer.
pub type VertexRange = std::ops::Range<u32>;

/// The host's scene: geometry, camera, sun, shadow map matrix and lookup, and vat's other options.
///
/// Two scenes are built in: the example's ([`Scene::new`]: a ground, a wall and a building, the
/// host's own sun fit) and a ground alone under a crowd ([`Scene::ground`]: what `vat render` and
/// `vat demo` draw, with vat's own shadow fit following the camera, [`Scene::follow`]).
#[derive(Debug, Clone)]
pub struct Scene {
    /// Every triangle of the host's scene, non-indexed: the ground, then the wall, then the building.
    pub vertices: Vec<HostVertex>,
    /// The ground square's vertices.
    pub ground: VertexRange,
    /// The low wall in front of the crowd (it hides the legs of the crowd's left half); empty in a
    /// ground-only scene.
    pub wall: VertexRange,
    /// The tall building right of the crowd (its shadow crosses the crowd's middle row); empty in a
    /// ground-only scene.
    pub building: VertexRange,
    /// The host's camera.
    pub camera: Camera,
    /// Unit vector towards the sun.
    pub sun_direction: [f32; 3],
    /// The sun's colour, linear RGB.
    pub sun_color: [f32; 3],
    /// Ambient light, 0..=1.
    pub ambient: f32,
    /// How dark shadows get, 0..=1.
    pub shadow_strength: f32,
    /// The host's shadow-map matrix (an orthographic sun view over the whole scene).
    pub light_view_proj: [[f32; 4]; 4],
    /// The shadow lookup's depth-compare bias (the same for the host's and vat's draws).
    pub shadow_bias: f32,
    /// The shadow lookup's offset along the normal, scene units.
    pub shadow_normal_offset: f32,
    /// The host's clear colour, linear RGBA.
    pub sky: [f64; 4],
    /// vat's options for the crowds, but for what the host decides (sun, shadow map, clear, ground:
    /// see [`Scene::options`]).
    pub base: RenderOptions,
    /// Whether [`Scene::follow`] refits the shadow map to the camera (vat's own fit).
    pub fit_shadow_to_camera: bool,
}

/// What a frame draws: every part on for the example; the test turns parts off to see what each
/// one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFrame {
    /// Draw the crowds (`draw`).
    pub crowd: bool,
    /// The crowds cast into the host's shadow map (`draw_depth`).
    pub crowd_casts: bool,
    /// The host's wall and building cast into its shadow map.
    pub host_casts: bool,
    /// Draw the ground.
    pub ground: bool,
    /// Draw the wall (colour and shadow).
    pub wall: bool,
    /// Where the crowds are culled.
    pub culling: Culling,
    /// Samples per pixel of the host's colour pass: 1, or [`MSAA_SAMPLES`] (the host renders into
    /// multisampled colour and depth and resolves the colour into its image; vat's pipelines are
    /// made for the pass's sample count).
    pub samples: u32,
}

/// The sample count of the host's multisampled colour pass.
pub const MSAA_SAMPLES: u32 = 4;

impl Default for HostFrame {
    fn default() -> Self {
        Self {
            crowd: true,
            crowd_casts: true,
            host_casts: true,
            ground: true,
            wall: true,
            culling: Culling::Cpu,
            samples: 1,
        }
    }
}

/// An axis-aligned box's 12 triangles (36 vertices) of colour `color`, outward normals.
fn push_box(out: &mut Vec<HostVertex>, min: [f32; 3], max: [f32; 3], color: [f32; 3]) {
    let c = |i: usize| {
        [
            if i & 1 == 0 { min[0] } else { max[0] },
            if i & 2 == 0 { min[1] } else { max[1] },
            if i & 4 == 0 { min[2] } else { max[2] },
        ]
    };
    // Faces as (normal, four corners in a loop).
    let faces: [([f32; 3], [usize; 4]); 6] = [
        ([-1.0, 0.0, 0.0], [0, 4, 6, 2]),
        ([1.0, 0.0, 0.0], [1, 3, 7, 5]),
        ([0.0, -1.0, 0.0], [0, 1, 5, 4]),
        ([0.0, 1.0, 0.0], [2, 6, 7, 3]),
        ([0.0, 0.0, -1.0], [0, 2, 3, 1]),
        ([0.0, 0.0, 1.0], [4, 5, 7, 6]),
    ];
    for (normal, q) in faces {
        for i in [0, 1, 2, 0, 2, 3] {
            out.push(HostVertex { position: c(q[i]), normal, color });
        }
    }
}

impl Scene {
    /// The example's scene.
    pub fn new() -> Self {
        let mut vertices = Vec::new();
        let g = 30.0;
        let ground_color = [0.32, 0.36, 0.28];
        for p in [[-g, -g], [g, -g], [g, g], [-g, -g], [g, g], [-g, g]] {
            vertices.push(HostVertex {
                position: [p[0], 0.0, p[1]],
                normal: [0.0, 1.0, 0.0],
                color: ground_color,
            });
        }
        let ground = 0..vertices.len() as u32;
        push_box(&mut vertices, [-4.2, 0.0, 3.2], [-0.4, 1.5, 3.5], [0.62, 0.25, 0.18]);
        let wall = ground.end..vertices.len() as u32;
        push_box(&mut vertices, [4.6, 0.0, -1.0], [6.4, 6.0, 1.0], [0.70, 0.68, 0.62]);
        let building = wall.end..vertices.len() as u32;
        let aspect = SIZE[0] as f32 / SIZE[1] as f32;
        let camera = Camera::look_at([0.0, 5.5, 14.0], [0.0, 0.8, -0.5], 0.75, aspect, 0.1, 200.0);
        let sun = glam::Vec3::new(0.65, 0.6, 0.45).normalize();
        // The host's own fit: an orthographic sun view over a 13 m sphere around the scene.
        let centre = glam::Vec3::new(0.0, 1.5, 0.0);
        let radius = 13.0;
        let eye = centre + sun * 40.0;
        let view = glam::camera::rh::view::look_at_mat4(eye, centre, glam::Vec3::Y);
        let proj = glam::camera::rh::proj::directx::orthographic(
            -radius,
            radius,
            -radius,
            radius,
            0.0,
            40.0 + radius,
        );
        Self {
            vertices,
            ground,
            wall,
            building,
            camera,
            sun_direction: sun.to_array(),
            sun_color: [1.0, 0.95, 0.85],
            ambient: 0.3,
            shadow_strength: 0.75,
            light_view_proj: (proj * view).to_cols_array_2d(),
            shadow_bias: 0.0015,
            shadow_normal_offset: 0.03,
            sky: SKY,
            base: RenderOptions::default(),
            fit_shadow_to_camera: false,
        }
    }

    /// A ground alone: `square` of linear RGB `color`, seen by `camera`, lit by `base`'s sun,
    /// ambient and clear colour, shadowed through the host's map fitted the way vat fits its own
    /// ([`RenderOptions::built_in_shadow_view_proj`], looked up with
    /// [`ShadowLookup::built_in`]'s strength, bias and offset at `base.scene_unit`), or unshadowed
    /// when `base.shadows` is off. `base` is kept for the crowds ([`Scene::options`]).
    pub fn ground(square: GroundSquare, color: [f32; 3], camera: Camera, base: RenderOptions) -> Self {
        let [a, b, c, d] = square.corners();
        let vertices = [a, b, c, a, c, d]
            .map(|position| HostVertex { position, normal: [0.0, 1.0, 0.0], color })
            .to_vec();
        let end = vertices.len() as u32;
        let mut scene = Self {
            vertices,
            ground: 0..end,
            wall: end..end,
            building: end..end,
            camera,
            sun_direction: base.sun_direction,
            sun_color: base.sun_color,
            ambient: base.ambient,
            shadow_strength: 0.0,
            light_view_proj: glam::Mat4::IDENTITY.to_cols_array_2d(),
            shadow_bias: 0.0,
            shadow_normal_offset: 0.0,
            sky: base.clear_color,
            base,
            fit_shadow_to_camera: true,
        };
        scene.follow(camera);
        scene
    }

    /// Moves the camera to `camera`; with [`fit_shadow_to_camera`](Self::fit_shadow_to_camera),
    /// refits the shadow map to it (no shadows if vat's fit has none for this camera).
    pub fn follow(&mut self, camera: Camera) {
        self.camera = camera;
        if !self.fit_shadow_to_camera {
            return;
        }
        let fit = if self.base.shadows { self.base.built_in_shadow_view_proj(&camera) } else { None };
        match fit {
            Some(m) => {
                let lookup = ShadowLookup::built_in(m, self.base.scene_unit);
                self.light_view_proj = m;
                self.shadow_strength = lookup.strength;
                self.shadow_bias = lookup.bias;
                self.shadow_normal_offset = lookup.cascades[0].normal_offset;
            }
            None => self.shadow_strength = 0.0,
        }
    }

    /// Whether anything samples the shadow map this frame (the host's lookup or vat's).
    pub fn shadows(&self) -> bool {
        self.base.shadows && self.shadow_strength > 0.0
    }

    /// The host's uniforms.
    pub fn uniforms(&self) -> HostUniforms {
        let [x, y, z] = self.sun_direction;
        let [r, g, b] = self.sun_color;
        HostUniforms {
            view_proj: self.camera.view_proj,
            light_view_proj: self.light_view_proj,
            sun: [x, y, z, self.ambient],
            sun_color: [r, g, b, 0.0],
            shadow: if self.shadows() { self.lookup().uniforms() } else { ShadowLookupUniforms::zeroed() },
        }
    }

    /// How the host's map is looked up, by the host's surfaces and by vat's draws alike: its
    /// matrix, strength, bias and normal offset.
    pub fn lookup(&self) -> ShadowLookup {
        let mut lookup = ShadowLookup::host(self.light_view_proj);
        (lookup.strength, lookup.bias) = (self.shadow_strength, self.shadow_bias);
        lookup.cascades[0].normal_offset = self.shadow_normal_offset;
        lookup
    }

    /// The vertex ranges the host draws into its shadow map (`host_casts`) and its colour pass.
    pub fn ranges(&self, frame: &HostFrame) -> (Vec<VertexRange>, Vec<VertexRange>) {
        let mut casters = Vec::new();
        let mut colour = Vec::new();
        if frame.ground {
            colour.push(self.ground.clone());
        }
        colour.push(self.building.clone());
        if frame.host_casts {
            casters.push(self.building.clone());
        }
        if frame.wall {
            colour.push(self.wall.clone());
            if frame.host_casts {
                casters.push(self.wall.clone());
            }
        }
        casters.retain(|r| !r.is_empty());
        colour.retain(|r| !r.is_empty());
        (casters, colour)
    }

    /// vat's options for the crowds: [`base`](Self::base) culled by `culling`, with the host's sun
    /// and shadow map (looked up with the host shader's own bias, offset and strength; shadows off
    /// when nothing samples it), no ground and the host's clear colour (the host draws its own).
    pub fn options(&self, culling: Culling) -> RenderOptions {
        let lookup = self.lookup();
        RenderOptions {
            culling,
            shadows: self.shadows(),
            shadow_map: ShadowMapSource::Host(lookup),
            sun_direction: self.sun_direction,
            sun_color: self.sun_color,
            ambient: self.ambient,
            clear_color: self.sky,
            ground: false,
            ..self.base
        }
    }
}

impl Default for Scene {
    fn default() -> Self {
        Self::new()
    }
}

/// The crowds a host draws, with their assets' and their own GPU copies (crowd `i` of asset `i`),
/// on any backend.
pub struct HostCrowds<R: CrowdRenderer> {
    /// The uploaded assets.
    pub assets: Vec<R::Asset>,
    /// Each crowd's GPU state.
    pub gpu: Vec<R::Crowd>,
    /// The crowds (move, spawn or advance them between frames).
    pub crowds: Vec<Crowd>,
}

impl<R: CrowdRenderer> HostCrowds<R>
where
    R::Error: std::error::Error + Send + Sync + 'static,
{
    /// Uploads `assets` and makes the GPU state of `crowds` (one asset per crowd) on `renderer`.
    ///
    /// # Errors
    /// Not one asset per crowd, an asset that does not upload, or a crowd whose GPU state cannot
    /// be made.
    pub fn new(renderer: &mut R, assets: &[Asset<'_>], crowds: Vec<Crowd>) -> Result<Self> {
        anyhow::ensure!(assets.len() == crowds.len(), "one asset per crowd");
        let assets = assets.iter().map(|a| renderer.upload(a)).collect::<Result<Vec<_>, _>>()?;
        let gpu = crowds.iter().map(|c| renderer.create_crowd(c)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { assets, gpu, crowds })
    }

    /// The GPU-culling counts of each crowd's last frame that has arrived (see
    /// `CrowdRenderer::gpu_counts`).
    ///
    /// # Errors
    /// A device failure.
    pub fn gpu_counts(&mut self, renderer: &mut R) -> Result<Vec<Option<GpuCountsResult>>> {
        Ok(self.gpu.iter_mut().map(|c| renderer.gpu_counts(c)).collect::<Result<Vec<_>, _>>()?)
    }

    /// The frame's crowds, each with its asset and GPU copy.
    pub fn draws(&mut self) -> Vec<vat_core::render::CrowdDraw<'_, R::Asset, R::Crowd>> {
        crowd_draws(&self.assets, &mut self.gpu, &mut self.crowds)
    }
}

/// The frame's crowds: each crowd with its asset and GPU copy (in the same order).
pub fn crowd_draws<'a, A, C>(
    assets: &'a [A],
    gpu: &'a mut [C],
    crowds: &'a mut [Crowd],
) -> Vec<vat_core::render::CrowdDraw<'a, A, C>> {
    assets
        .iter()
        .zip(gpu.iter_mut())
        .zip(crowds.iter_mut())
        .map(|((asset, gpu), crowd)| vat_core::render::CrowdDraw { asset, gpu, crowd })
        .collect()
}

/// The host's sky colour (linear), its clear colour.
pub const SKY: [f64; 4] = [0.45, 0.6, 0.85, 1.0];

/// The two assets of the example as `.vat` bytes: the procedural humanoid and the procedural
/// soft-body banner, baked in memory.
///
/// # Errors
/// A bake failure (none expected).
pub fn assets() -> Result<[Vec<u8>; 2]> {
    let options = vat_bake::prepare::BakeOptions::default();
    let humanoid = vat_bake::prepare::prepare(&vat_procgen::humanoid(), &options)?.to_vat_bytes()?;
    let cloth = vat_bake::prepare::prepare(&vat_procgen::cloth()?, &options)?.to_vat_bytes()?;
    Ok([humanoid, cloth])
}

/// The crowds of the two assets: 12 humanoids in three rows (`z` = -2, 0, 2 m) between the wall
/// and the building, and three banners behind them, each at a fixed time so every frame is the
/// same.
///
/// # Errors
/// An asset that does not parse.
pub fn crowds(assets: &[Vec<u8>; 2]) -> Result<[Crowd; 2]> {
    let humanoid = Asset::parse(&assets[0])?;
    let mut people = Crowd::new(CrowdAsset::from_manifest(humanoid.manifest())?, CrowdConfig::default());
    let clips = humanoid.manifest().clips.len() as u32;
    for i in 0..12u32 {
        let (col, row) = (i % 4, i / 4);
        let p = [col as f32 * 1.6 - 2.4, 0.0, row as f32 * 2.0 - 2.0];
        people.spawn_at_phase(p, 0.3 * i as f32 - 1.0, i % clips, 0.13 * i as f32);
    }
    people.advance(0.5);
    let cloth = Asset::parse(&assets[1])?;
    let mut banners = Crowd::new(CrowdAsset::from_manifest(cloth.manifest())?, CrowdConfig::default());
    for (i, x) in [-3.5f32, 0.0, 3.5].into_iter().enumerate() {
        banners.spawn_at_phase([x, 0.0, -4.0], 0.0, 0, 0.4 * i as f32);
    }
    banners.advance(0.5);
    Ok([people, banners])
}
