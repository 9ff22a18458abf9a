//! Per-frame values of group 0: [`FrameUniforms`], the light model, shadow lookups and cascades.

use super::*;

// ---------------------------------------------------------------------------------------------------
// GPU-visible structs
// ---------------------------------------------------------------------------------------------------

/// Per-frame values shared by every pass (group 0, binding 0; uniform, 800 bytes). Built with
/// [`FrameUniforms::new`].
///
/// **Lighting inputs (the host's light).** `fs_lit` shades with `sun_direction`, `sun_color` and
/// `ambient` (the host's `RenderOptions::sun_direction`, `sun_color`, `ambient`) and a shadow map
/// (group 0, binding 1, a depth array, with the comparison sampler of binding 2) through `shadow`
/// ([`ShadowLookup`]): `light = ambient * sky + (1 -
/// ambient) * max(n . sun, 0) * sun_color * shadow`, where `sky = mix(0.55, 1, 0.5 + 0.5 * n.y)` and
/// `shadow` is [`ShadowLookup`]'s. The map is vat's own (its built-in shadow pass) or the host's
/// (`RenderOptions::shadow_map`: the host renders its shadow map, the crowd included through
/// `draw_depth`, and gives it to the backend's `Renderer::set_host_shadow_map`).
/// For a host's extra depth view (`crate::frame::FramePlan::view_depth`) the depth entry points
/// project with `light_view_proj` set to the view's matrix (`crate::frame::CrowdPlan::view_uniforms`).
///
/// **Motion vectors.** With `RenderOptions::motion_vectors` the colour vertex stages decode each
/// vertex a second time with its previous record (`instances[previous_records + i]`) at
/// `previous_time`, and the motion fragment stages project it with `previous_view_proj`
/// (`vat_motion_vector`); without history the three equal this frame's values (no motion).
///
/// Kept in sync with `struct FrameUniforms` in vat.wgsl.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct FrameUniforms {
    /// World to clip space of the camera, column-major (`view_proj[column][row]`, glam's
    /// `Mat4::to_cols_array_2d`).
    pub view_proj: [[f32; 4]; 4],
    /// World to clip space of the sun's shadow map, column-major; identity when there are no shadows.
    pub light_view_proj: [[f32; 4]; 4],
    /// Camera position in world space, metres.
    pub camera_position: [f32; 3],
    /// Epoch-relative clock in seconds: `(now - epoch) as f32` (see [`crate::playback`]).
    pub time: f32,
    /// Unit vector from the scene towards the sun, world space.
    pub sun_direction: [f32; 3],
    /// Ambient light intensity, linear (0..=1 typical).
    pub ambient: f32,
    /// The frustum planes left, right, bottom, top, near, far as `(normal.xyz, d)` with inward normals:
    /// a point `p` is inside when `dot(normal, p) + d >= 0` for all six.
    pub frustum_planes: [[f32; 4]; 6],
    /// Camera distances in metres at which LOD 1..=8 start, ascending: entry `i` (of 8, read as
    /// `lod_distances[i / 4][i % 4]`) is where LOD `i + 1` begins; entries from `lod_count - 1` on are
    /// unused.
    pub lod_distances: [[f32; 4]; 2],
    /// LOD bias in doublings of distance, as [`crate::lod::LodThresholds::select`]: the distance is
    /// multiplied by `exp2(lod_bias)` before it is compared with `lod_distances` (0 = none; > 0 picks
    /// coarser LODs sooner).
    pub lod_bias: f32,
    /// LOD levels of the drawn asset, 1..=9.
    pub lod_count: u32,
    /// Coarsest LOD that still decodes clip B during a cross-fade (coarser ones show clip A only),
    /// at most `lod_count - 1`.
    pub cross_fade_max_lod: u32,
    /// Coarsest LOD drawn into the shadow map, at most `lod_count - 1`.
    pub shadow_max_lod: u32,
    /// Colour of the sun's light, linear RGB, multiplying the direct term (white = 1, 1, 1).
    pub sun_color: [f32; 3],
    /// Half the side of the ground square `vs_ground` draws at `y = 0` around the camera, metres.
    pub ground_half_extent: f32,
    /// The previous frame's world-to-clip matrix of the camera, column-major (motion vectors; equal
    /// to `view_proj` without history or on a camera cut).
    pub previous_view_proj: [[f32; 4]; 4],
    /// The crowd's clock at the previous frame, seconds, in the same epoch as the previous records
    /// (equal to `time` without history).
    pub previous_time: f32,
    /// Where the previous frame's records start in `instances`: instance `i`'s previous record is
    /// `instances[previous_records + i]`; 0: no history (the current record stands for it).
    pub previous_records: u32,
    /// Sub-pixel offset of every colour and prepass vertex stage's clip position, in NDC units
    /// (x right, y up; one pixel is `2 / width` by `2 / height`): `clip.xy += jitter * clip.w`, a
    /// constant offset of the image (TAA's jitter). `[0, 0]`: none. The culling, the LOD choice,
    /// the depth-only views and the motion vectors use `view_proj` unjittered.
    pub jitter: [f32; 2],
    /// [`LightModel::Pbr`]'s ambient light colour, linear RGB in the host's units; 0 otherwise.
    pub ambient_color: [f32; 3],
    /// How `fs_lit` lights surfaces: [`LightModel::code`].
    pub light_model: u32,
    /// How the colour draws look the shadow map up ([`ShadowLookup::uniforms`]; `count` 0: no
    /// shadows, the map is not read).
    pub shadow: ShadowLookupUniforms,
    /// Effective distance (metres times `exp2(lod_bias)` over the instance's scale) at which the
    /// impostor tier's cards start ([`ImpostorSwitch::start`]); 0 without a tier drawn.
    pub impostor_start: f32,
    /// Effective distance from which the mesh is no longer drawn ([`ImpostorSwitch::end`]).
    pub impostor_end: f32,
    /// Draw (and visible-list region) of the cards: the mesh LOD count; 0: no tier drawn.
    pub impostor_slot: u32,
    /// Draw of the cards drawn from one view ([`ImpostorSwitch::far_slot`]); 0: they share
    /// `impostor_slot`'s.
    pub impostor_far_slot: u32,
}

const _: () = assert!(std::mem::size_of::<FrameUniforms>() == 800);

/// Where a crowd's impostor tier takes over from its meshes ([`FrameInputs::impostor`]), in
/// effective distance (the camera's distance to an instance's centre times `exp2(lod_bias)`,
/// divided by the instance's scale; metres at the reference view).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImpostorSwitch {
    /// The draw whose visible list holds the cards: the number of mesh LODs drawn (`1..MAX_LODS`).
    pub slot: u32,
    /// The draw whose visible list holds, with GPU culling, the cards drawn from one view (from
    /// [`crate::format::impostor::SINGLE_VIEW_LEVEL`] mip levels past `start` on): `slot + 1`, or 0
    /// when `slot + 1` is [`MAX_LODS`](crate::format::lod::MAX_LODS) (those cards then stay in `slot`'s list).
    pub far_slot: u32,
    /// Cards start here ([`crate::format::impostor::switch_distance`]).
    pub start: f32,
    /// The mesh stops here (`start * SWITCH_FADE_BAND`); between the two both draw, dithered.
    pub end: f32,
}

/// How the colour draws light surfaces (`RenderOptions::light_model`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LightModel {
    /// vat's own: `light = ambient * sky + (1 - ambient) * direct`, with `ambient` a share (0..1),
    /// `sky` a tint by the normal's height and `direct` a Lambert sun of `sun_color` (plus GGX
    /// specular for assets with materials); `sun_color` 1 is a white surface facing the sun at
    /// full brightness. Made for vat's own renders.
    #[default]
    Vat,
    /// The physically based model of Bevy's `StandardMaterial` (Filament's) for one directional
    /// light and a uniform ambient light, to stand beside a host's PBR meshes: Burley diffuse,
    /// GGX specular with height-correlated Smith visibility, Schlick Fresnel and multiple-scattering
    /// compensation, ambient through the split-sum terms. `sun_color` is the sun's colour times
    /// its illuminance (lux) times the camera's exposure, `ambient_color` the ambient light's
    /// colour times its brightness times the exposure; the result is linear radiance in the same
    /// units, for the host's tone mapping. Surfaces without materials are a default
    /// `StandardMaterial` of their colour (dielectric, perceptual roughness 0.5).
    Pbr {
        /// The ambient light's colour, linear RGB in the host's units (see above).
        ambient_color: [f32; 3],
    },
}

/// [`FrameUniforms::light_model`] of [`LightModel::Vat`] (the WGSL `LIGHT_MODEL_VAT`).
pub const LIGHT_MODEL_VAT: u32 = 0;
/// [`FrameUniforms::light_model`] of [`LightModel::Pbr`] (the WGSL `LIGHT_MODEL_PBR`).
pub const LIGHT_MODEL_PBR: u32 = 1;

impl LightModel {
    /// The model's code in [`FrameUniforms::light_model`].
    pub const fn code(&self) -> u32 {
        match self {
            Self::Vat => LIGHT_MODEL_VAT,
            Self::Pbr { .. } => LIGHT_MODEL_PBR,
        }
    }
}

/// The previous frame a crowd's motion vectors are computed against ([`FrameInputs::history`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameHistory {
    /// The camera's world-to-clip matrix of the previous frame, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// The crowd's clock at the previous frame, seconds.
    pub time: f32,
    /// Index of the first previous record in the record buffer (its capacity; > 0).
    pub previous_records: u32,
}

/// What [`FrameUniforms::new`] builds the per-frame uniforms from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameInputs<'a> {
    /// The camera's world-to-clip matrix, column-major, depth 0..1.
    pub view_proj: [[f32; 4]; 4],
    /// The camera's position, metres.
    pub camera_position: [f32; 3],
    /// The crowd's epoch-relative clock, seconds.
    pub time: f32,
    /// The frustum planes of `view_proj` (inward, normalised), as the CPU culling uses them.
    pub frustum_planes: [[f32; 4]; 6],
    /// Unit vector towards the sun (normalised here).
    pub sun_direction: [f32; 3],
    /// Ambient light, 0..=1.
    pub ambient: f32,
    /// The asset's LOD switch distances.
    pub lod_thresholds: &'a crate::lod::LodThresholds,
    /// LOD bias in doublings of distance.
    pub lod_bias: f32,
    /// Coarsest LOD decoding clip B while cross-fading.
    pub cross_fade_max_lod: u32,
    /// Coarsest LOD casting shadows.
    pub shadow_max_lod: u32,
    /// Colour of the sun's light, linear RGB.
    pub sun_color: [f32; 3],
    /// How the shadow map is looked up ([`ShadowLookup::built_in`] for vat's own map, the host's
    /// for its map), or `None` for no shadows.
    pub shadow: Option<ShadowLookup>,
    /// Half the side of the ground square around the camera, metres (used only when it is drawn).
    pub ground_half_extent: f32,
    /// The previous frame, for motion vectors; `None`: no history (the previous frame is this one,
    /// so every motion vector is zero).
    pub history: Option<FrameHistory>,
    /// Where the impostor tier takes over (`None`: no tier drawn).
    pub impostor: Option<ImpostorSwitch>,
    /// Sub-pixel jitter of the colour and prepass draws, NDC units ([`FrameUniforms::jitter`]);
    /// non-finite components are 0.
    pub jitter: [f32; 2],
    /// How the colour draws light surfaces.
    pub light_model: LightModel,
}

/// The most cascades a [`ShadowLookup`] holds (Bevy's `MAX_CASCADES_PER_LIGHT` on native targets).
pub const MAX_SHADOW_CASCADES: usize = 4;

/// One cascade of a sun shadow map ([`ShadowLookup::cascades`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShadowCascade {
    /// World to the cascade's clip space, column-major, depth 0..1 (reverse-Z or not, as the
    /// lookup's [`ShadowLookup::reverse_z`] says).
    pub view_proj: [[f32; 4]; 4],
    /// View distance where the cascade ends, in scene length units along
    /// [`ShadowLookup::view_depth`]: a point is looked up in the first cascade whose `far_bound`
    /// exceeds its distance. [`f32::MAX`] for a map that covers every distance.
    pub far_bound: f32,
    /// Offset along the surface normal before this cascade's lookup, scene length units (Bevy:
    /// `shadow_normal_bias * texel_size`).
    pub normal_offset: f32,
    /// Layer of the map array that holds the cascade.
    pub layer: u32,
}

/// How the colour draws look a sun shadow map up: `light = ambient * sky + (1 - ambient) * max(n .
/// sun, 0) * sun_color * shadow`, with `shadow = 1 - strength * (1 - lit)`. `lit` is 2 x 2
/// percentage-closer filtering of a depth comparison in one cascade, at the texel its `view_proj`
/// maps `world + n * normal_offset + light_offset` to; the reference depth is moved `bias` towards
/// the light first. Clip-space `y` is up and texture `v` down (`uv = (x * 0.5 + 0.5, 0.5 - y * 0.5)`
/// of the NDC); points outside the cascade (`uv` or depth outside 0..1) are lit.
///
/// - **Which cascade.** The first whose [`ShadowCascade::far_bound`] exceeds the point's view
///   distance `dot(view_depth, (world, 1))`; past the last one a point is lit. Over the last
///   `overlap` share of a cascade's range the next one is blended in linearly
///   ([`cascade_weights`](Self::cascade_weights) computes the choice on the CPU). This is how Bevy
///   picks and blends its directional cascades.
/// - **Depth convention.** Standard maps hold 0 nearest the light and are lit where `reference <=
///   stored` (cleared to 1); reverse-Z maps ([`reverse_z`](Self::reverse_z), Bevy's) hold 1 nearest
///   the light and are lit where `reference >= stored` (cleared to 0). Both are sampled through the
///   one comparison sampler ([`crate::pipeline::SHADOW_SAMPLER`]); the shader takes the
///   complement for reverse-Z, exactly.
///
/// vat's own map is one cascade covering every distance ([`built_in`](Self::built_in)); a host's
/// cascade array is described with [`cascaded`](Self::cascaded).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShadowLookup {
    /// The cascades, nearest first; entries from `cascade_count` on are unused.
    pub cascades: [ShadowCascade; MAX_SHADOW_CASCADES],
    /// Cascades in use, 1..=[`MAX_SHADOW_CASCADES`].
    pub cascade_count: usize,
    /// The view distance of a world point is `dot(view_depth, (x, y, z, 1))`: the camera's
    /// view-space depth row, negated so that points ahead are positive (Bevy: minus the `z` row of
    /// `view_from_world`). All zeros with one cascade.
    pub view_depth: [f32; 4],
    /// Share of each cascade's far end that is blended with the next one, 0..1 (Bevy:
    /// `CascadeShadowConfig::overlap_proportion`).
    pub overlap: f32,
    /// Whether the map is reverse-Z (1 nearest the light, cleared to 0).
    pub reverse_z: bool,
    /// How dark shadowed surfaces get: 0 = not at all, 1 = only ambient light.
    pub strength: f32,
    /// Moves the reference depth towards the light before the comparison, depth units (0..1).
    pub bias: f32,
    /// Added to every looked-up point, scene length units (Bevy: `shadow_depth_bias` times the unit
    /// vector towards the light); zero for vat's own map.
    pub light_offset: [f32; 3],
}

/// How dark vat's own shadows get ([`ShadowLookup::strength`]).
pub const SHADOW_STRENGTH: f32 = 0.75;

/// The comparison bias of vat's own shadow lookups ([`ShadowLookup::bias`]), depth units.
pub const SHADOW_COMPARE_BIAS: f32 = 0.0015;

/// One cascade as the shader reads it (`VatShadowCascade` of [`SHADOW_WGSL`], 80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ShadowCascadeUniforms {
    /// [`ShadowCascade::view_proj`].
    pub view_proj: [[f32; 4]; 4],
    /// [`ShadowCascade::far_bound`].
    pub far_bound: f32,
    /// [`ShadowCascade::normal_offset`].
    pub normal_offset: f32,
    /// [`ShadowCascade::layer`].
    pub layer: u32,
    /// Padding; 0.
    pub _pad: u32,
}

/// A [`ShadowLookup`] as the shader reads it (`VatShadowLookup` of [`SHADOW_WGSL`], 368 bytes):
/// [`FrameUniforms::shadow`], and what a host puts in its own uniforms to call
/// `vat_shadow_lookup`. Built with [`ShadowLookup::uniforms`]; all zeros reads no map.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Pod, Zeroable)]
pub struct ShadowLookupUniforms {
    /// The cascades; entries from `count` on are zero.
    pub cascades: [ShadowCascadeUniforms; MAX_SHADOW_CASCADES],
    /// [`ShadowLookup::view_depth`].
    pub view_depth: [f32; 4],
    /// [`ShadowLookup::light_offset`].
    pub light_offset: [f32; 3],
    /// Cascades in use; 0: no shadows (the map is not read).
    pub count: u32,
    /// [`ShadowLookup::overlap`].
    pub overlap: f32,
    /// [`ShadowLookup::bias`].
    pub bias: f32,
    /// [`ShadowLookup::strength`], 0..=1; 0: the map is not read.
    pub strength: f32,
    /// 1 for a reverse-Z map, else 0.
    pub reverse_z: u32,
}

const _: () = assert!(std::mem::size_of::<ShadowCascadeUniforms>() == 80);
const _: () = assert!(std::mem::size_of::<ShadowLookupUniforms>() == 368);

/// Why [`ShadowLookup::cascaded`] refused its cascades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShadowCascadeError {
    /// No cascade, or more than [`MAX_SHADOW_CASCADES`].
    #[error("a shadow lookup takes 1 to {MAX_SHADOW_CASCADES} cascades, not {0}")]
    Count(usize),
    /// The far bounds do not increase from one cascade to the next (or one is not a number).
    #[error("cascade {0}'s far bound does not exceed the previous cascade's")]
    Unordered(usize),
}

impl ShadowLookup {
    /// The lookup of vat's own shadow map `view_proj` ([`shadow_view_proj`]) in a scene of
    /// `scene_unit` length units per metre (`RenderOptions::scene_unit`; not finite or `<= 0`
    /// means 1): one standard (not reverse-Z) cascade in layer 0 covering every distance,
    /// [`SHADOW_STRENGTH`], [`SHADOW_COMPARE_BIAS`], and a normal offset of
    /// [`SHADOW_NORMAL_OFFSET`] metres.
    pub fn built_in(view_proj: [[f32; 4]; 4], scene_unit: f32) -> Self {
        let cascade = ShadowCascade {
            view_proj,
            far_bound: f32::MAX,
            normal_offset: SHADOW_NORMAL_OFFSET * sanitized_scene_unit(scene_unit),
            layer: 0,
        };
        Self {
            cascades: [cascade; MAX_SHADOW_CASCADES],
            cascade_count: 1,
            view_depth: [0.0; 4],
            overlap: 0.0,
            reverse_z: false,
            strength: SHADOW_STRENGTH,
            bias: SHADOW_COMPARE_BIAS,
            light_offset: [0.0; 3],
        }
    }

    /// A host's single standard shadow map `view_proj` (layer 0) looked up like vat's own
    /// (strength, bias and normal offset of [`built_in`](Self::built_in) at scene unit 1); set the
    /// fields to the host's own values.
    pub fn host(view_proj: [[f32; 4]; 4]) -> Self {
        Self::built_in(view_proj, 1.0)
    }

    /// A host's cascaded map: `cascades` nearest first (1..=[`MAX_SHADOW_CASCADES`], far bounds
    /// increasing), chosen by the view distance `dot(view_depth, (world, 1))` and blended over the
    /// last `overlap` share of each; `reverse_z` for maps holding 1 nearest the light. Strength 1
    /// (only ambient light in full shadow), no bias and no light offset: set those fields to the
    /// host's values.
    ///
    /// # Errors
    /// [`ShadowCascadeError`] for no cascade, too many, or far bounds that do not increase.
    pub fn cascaded(
        cascades: &[ShadowCascade],
        view_depth: [f32; 4],
        overlap: f32,
        reverse_z: bool,
    ) -> Result<Self, ShadowCascadeError> {
        let (&first, _) = cascades.split_first().ok_or(ShadowCascadeError::Count(0))?;
        if cascades.len() > MAX_SHADOW_CASCADES {
            return Err(ShadowCascadeError::Count(cascades.len()));
        }
        // Anything but "less" (NaN bounds included) is refused.
        let increasing = |k: usize| {
            cascades[k - 1].far_bound.partial_cmp(&cascades[k].far_bound) == Some(std::cmp::Ordering::Less)
        };
        if let Some(k) = (1..cascades.len()).find(|&k| !increasing(k)) {
            return Err(ShadowCascadeError::Unordered(k));
        }
        let mut all = [first; MAX_SHADOW_CASCADES];
        all[..cascades.len()].copy_from_slice(cascades);
        Ok(Self {
            cascades: all,
            cascade_count: cascades.len(),
            view_depth,
            overlap,
            reverse_z,
            strength: 1.0,
            bias: 0.0,
            light_offset: [0.0; 3],
        })
    }

    /// The cascades in use.
    pub fn active_cascades(&self) -> &[ShadowCascade] {
        &self.cascades[..self.cascade_count.min(MAX_SHADOW_CASCADES)]
    }

    /// The cascades the shader reads for a point at view distance `distance`, with their weights:
    /// `[(k, 1)]` inside cascade `k`, `[(k, 1 - t), (k + 1, t)]` in the blended end of `k`, and
    /// none past the last cascade (the point is lit). The shader's choice, computed the same way
    /// in `f32`.
    pub fn cascade_weights(&self, distance: f32) -> Vec<(usize, f32)> {
        let cascades = self.active_cascades();
        let Some(k) = cascades.iter().position(|c| distance < c.far_bound) else {
            return Vec::new();
        };
        let Some(_) = cascades.get(k + 1) else {
            return vec![(k, 1.0)];
        };
        let far = cascades[k].far_bound;
        let next_near = (1.0 - finite_or_zero(self.overlap)) * far;
        if distance >= next_near && far > next_near {
            let t = (distance - next_near) / (far - next_near);
            vec![(k, 1.0 - t), (k + 1, t)]
        } else {
            vec![(k, 1.0)]
        }
    }

    /// The lookup as the shader reads it. Strengths that are not finite or negative are read as
    /// 0 and above 1 as 1; biases, offsets and the overlap that are not finite as 0 (the overlap
    /// clamped to 0..1); a lookup with a matrix that is not finite reads no map (count 0: every
    /// lookup would be NaN).
    pub fn uniforms(&self) -> ShadowLookupUniforms {
        let cascades = self.active_cascades();
        if cascades.iter().any(|c| !c.view_proj.iter().flatten().all(|v| v.is_finite())) {
            return ShadowLookupUniforms::zeroed();
        }
        let mut out = ShadowLookupUniforms::zeroed();
        for (slot, c) in out.cascades.iter_mut().zip(cascades) {
            *slot = ShadowCascadeUniforms {
                view_proj: c.view_proj,
                // NaN bounds would make every choice fail: read as covering nothing.
                far_bound: if c.far_bound.is_nan() { f32::NEG_INFINITY } else { c.far_bound },
                normal_offset: finite_or_zero(c.normal_offset),
                layer: c.layer,
                _pad: 0,
            };
        }
        out.view_depth = self.view_depth.map(finite_or_zero);
        out.light_offset = self.light_offset.map(finite_or_zero);
        out.count = cascades.len() as u32;
        out.overlap = finite_or_zero(self.overlap).clamp(0.0, 1.0);
        out.bias = finite_or_zero(self.bias);
        out.strength = finite_or_zero(self.strength).clamp(0.0, 1.0);
        out.reverse_z = u32::from(self.reverse_z);
        out
    }
}

/// How far the shadow map reaches beyond the view towards the sun, for casters outside it, metres at
/// scene unit 1 (backends pass `SHADOW_CASTER_MARGIN * scene_unit` to [`shadow_view_proj`]).
pub const SHADOW_CASTER_MARGIN: f32 = 30.0;

/// Offset along the surface normal before the shadow lookup, metres at scene unit 1.
pub const SHADOW_NORMAL_OFFSET: f32 = 0.03;

fn finite_or_zero(v: f32) -> f32 {
    if v.is_finite() { v } else { 0.0 }
}

/// `unit` if it is finite and `> 0`, else 1 (see `RenderOptions::scene_unit`).
pub fn sanitized_scene_unit(unit: f32) -> f32 {
    if unit.is_finite() && unit > 0.0 { unit } else { 1.0 }
}

impl Default for FrameUniforms {
    /// All zeros.
    fn default() -> Self {
        bytemuck::Zeroable::zeroed()
    }
}

impl FrameUniforms {
    /// The uniforms of one frame. With `shadow: None`, `light_view_proj` is the identity and
    /// `shadow` all zeros (the shadow map is never read); else `light_view_proj` is cascade 0's
    /// matrix and `shadow` is [`ShadowLookup::uniforms`]. Non-finite or negative sun colours are
    /// read as 0.
    pub fn new(inputs: &FrameInputs<'_>) -> Self {
        let mut lod_distances = [[0.0f32; 4]; 2];
        for (i, &d) in inputs.lod_thresholds.as_slice().iter().enumerate() {
            lod_distances[i / 4][i % 4] = d;
        }
        let sun = glam::Vec3::from(inputs.sun_direction).try_normalize().unwrap_or(glam::Vec3::Y);
        let shadow = inputs.shadow.map_or_else(ShadowLookupUniforms::zeroed, |s| s.uniforms());
        // vat's own shadow pass draws through cascade 0 (its only one).
        let light_view_proj = if shadow.count > 0 {
            shadow.cascades[0].view_proj
        } else {
            glam::Mat4::IDENTITY.to_cols_array_2d()
        };
        Self {
            view_proj: inputs.view_proj,
            light_view_proj,
            camera_position: inputs.camera_position,
            time: inputs.time,
            sun_direction: sun.to_array(),
            ambient: inputs.ambient,
            frustum_planes: inputs.frustum_planes,
            lod_distances,
            lod_bias: inputs.lod_bias,
            lod_count: inputs.lod_thresholds.lod_count(),
            // Clamped to the asset's last LOD (the same selection: no LOD is past it), so the
            // uniforms never name a LOD the asset lacks.
            cross_fade_max_lod: inputs.cross_fade_max_lod.min(inputs.lod_thresholds.lod_count() - 1),
            shadow_max_lod: inputs.shadow_max_lod.min(inputs.lod_thresholds.lod_count() - 1),
            sun_color: inputs.sun_color.map(|c| finite_or_zero(c).max(0.0)),
            ground_half_extent: inputs.ground_half_extent,
            previous_view_proj: inputs.history.map_or(inputs.view_proj, |h| h.view_proj),
            previous_time: inputs.history.map_or(inputs.time, |h| h.time),
            previous_records: inputs.history.map_or(0, |h| h.previous_records),
            jitter: inputs.jitter.map(finite_or_zero),
            ambient_color: match inputs.light_model {
                LightModel::Pbr { ambient_color } => ambient_color.map(|c| finite_or_zero(c).max(0.0)),
                LightModel::Vat => [0.0; 3],
            },
            light_model: inputs.light_model.code(),
            shadow,
            impostor_start: inputs.impostor.map_or(0.0, |i| i.start),
            impostor_end: inputs.impostor.map_or(0.0, |i| i.end),
            impostor_slot: inputs.impostor.map_or(0, |i| i.slot),
            impostor_far_slot: inputs.impostor.map_or(0, |i| i.far_slot),
        }
    }
}

/// The sun's shadow-map matrix for a camera: an orthographic projection looking along
/// `-sun_direction`, fitted around the bounding sphere of the camera frustum's first
/// `shadow_distance` metres (so the map follows the camera and does not shimmer with its rotation),
/// reaching `caster_margin` metres further towards the sun for casters outside the view. Column-major,
/// depth 0..1 (near the sun = 0). `view_proj` may be standard or reverse-Z, with a finite or an
/// infinite far plane. `None` if `view_proj` is not invertible.
pub fn shadow_view_proj(
    view_proj: &[[f32; 4]; 4],
    sun_direction: [f32; 3],
    shadow_distance: f32,
    caster_margin: f32,
) -> Option<[[f32; 4]; 4]> {
    use glam::{Mat4, Vec3, Vec4};
    let vp = Mat4::from_cols_array_2d(view_proj);
    if vp.determinant().abs() <= f32::MIN_POSITIVE || !vp.is_finite() {
        return None;
    }
    let inv = vp.inverse();
    let unproject = |x: f32, y: f32, z: f32| {
        let h = inv * Vec4::new(x, y, z, 1.0);
        h.truncate() / h.w
    };
    // Which clip depth is the near plane: 0, or 1 for reverse-Z. Perspective depth is hyperbolic,
    // so depth 0.5 lies next to the near plane either way; an infinite far plane unprojects to a
    // point at infinity (not finite), which is never the near one.
    let centre_ray = [unproject(0.0, 0.0, 0.0), unproject(0.0, 0.0, 0.5), unproject(0.0, 0.0, 1.0)];
    let reverse_z = !centre_ray[0].is_finite()
        || (centre_ray[2].is_finite()
            && centre_ray[2].distance(centre_ray[1]) < centre_ray[0].distance(centre_ray[1]));
    let (near_z, far_z) = if reverse_z { (1.0, 0.0) } else { (0.0, 1.0) };
    let mut corners = Vec::with_capacity(8);
    for (x, y) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        let near = unproject(x, y, near_z);
        let far = unproject(x, y, far_z);
        let reach = if far.is_finite() {
            let edge = far - near;
            let len = edge.length();
            edge * if len > 0.0 { (shadow_distance / len).min(1.0) } else { 0.0 }
        } else {
            // An infinite far plane: the first shadow_distance metres along the corner's ray.
            (unproject(x, y, 0.5) - near).normalize_or_zero() * shadow_distance
        };
        corners.push(near);
        corners.push(near + reach);
    }
    let centre = corners.iter().copied().sum::<Vec3>() / corners.len() as f32;
    let radius = corners.iter().map(|c| c.distance(centre)).fold(0.0f32, f32::max).max(1e-3);
    let sun = Vec3::from(sun_direction).try_normalize()?;
    let up = if sun.y.abs() > 0.99 { Vec3::Z } else { Vec3::Y };
    let eye = centre + sun * (radius + caster_margin);
    let view = glam::camera::rh::view::look_at_mat4(eye, centre, up);
    let proj = glam::camera::rh::proj::directx::orthographic(
        -radius,
        radius,
        -radius,
        radius,
        0.0,
        2.0 * radius + caster_margin,
    );
    let m = proj * view;
    m.is_finite().then(|| m.to_cols_array_2d())
}
