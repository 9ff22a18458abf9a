//! Render pipelines described once for both backends: which program a pipeline runs
//! ([`PipelineKey`]) and its fixed state ([`PipelineState`]: primitive assembly, culling, depth test
//! and bias), plus the shadow map's comparison sampler ([`SHADOW_SAMPLER`]). Each backend's `conv.rs`
//! maps these to its own types with small pure `map_*` functions, as it maps the binding table.
//!
//! What a pipeline does *not* carry here is the host pass's state (colour and depth formats, sample
//! count, and the depth and winding conventions of [`PassConventions`]): a backend caches pipelines
//! by `(PipelineKey, its pass formats)`, whose conventions give the state through
//! [`PipelineKey::state_in`], so one renderer can draw into several hosts' passes (an MSAA one, a
//! reverse-Z one included).

use crate::encoding::VertexFormat;
use crate::gpu;
use crate::render::RenderMode;

/// Which kind of pass a draw belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PassKind {
    /// Colour + depth: vertex and fragment (`fs_lit`) stages, the shadow map sampled.
    Colour,
    /// Depth only (the shadow map, or a host's depth-only view): vertex stage alone, projected by
    /// `light_view_proj`, depth bias on.
    Depth,
    /// A host's prepass of the camera (depth, and the normal and motion targets it has): the colour
    /// pipelines' vertex stages (same positions, the same jitter), a prepass fragment stage
    /// ([`PipelineKey::fragment_entry_point`]) and no depth bias, so its depth is the colour
    /// pass's.
    Prepass(PrepassTargets),
}

/// The colour targets of a host's prepass ([`PassKind::Prepass`]), at Bevy's locations: the normal
/// at location 0 (`vec4(n * 0.5 + 0.5, 1)` of the unit world normal, for an unsigned normalised
/// format such as `Rgb10a2Unorm`), the motion at location 1 (`vec4(motion, 0, 0)`, the convention
/// of `RenderOptions::motion_vectors`, for a float format such as `Rg16Float`). A pass with the
/// motion target alone has no attachment at location 0 ([`colour_slots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PrepassTargets {
    /// Whether the pass has the normal target (location 0).
    pub normal: bool,
    /// Whether the pass has the motion target (location 1). The frame must have been prepared with
    /// `RenderOptions::motion_vectors`.
    pub motion: bool,
}

/// The colour attachments of a pass with `location0` and `location1` (formats, or any per-slot
/// value), as both backends give them to a pipeline and a pass: `[location0, location1]` without the
/// trailing empty slots. A colour pass with motion gives `[Some(colour), Some(motion)]`; a prepass
/// with the motion target alone `[None, Some(motion)]`; a depth-only pass `[]`.
pub fn colour_slots<T>(location0: Option<T>, location1: Option<T>) -> Vec<Option<T>> {
    let mut slots = vec![location0, location1];
    while slots.last().is_some_and(Option::is_none) {
        slots.pop();
    }
    slots
}

/// What a render pipeline draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Program {
    /// The crowd's bodies, displaced by the VAT or the bone texture.
    Body(RenderMode),
    /// The pieces of a rigid asset ([`crate::container::VatMode::Rigid`]) drawn in
    /// [`RenderMode::Vat`]: placed by the piece texture (`vs_rigid`, `vs_rigid_depth`).
    Rigid,
    /// The pool corners of a fluid asset ([`crate::container::VatMode::Fluid`]) drawn in
    /// [`RenderMode::Vat`]: placed through the lookup texture (`vs_fluid`, `vs_fluid_depth`).
    Fluid,
    /// The particle cards of a sprite asset ([`crate::container::VatMode::Sprite`]) drawn in
    /// [`RenderMode::Vat`]: built from the particle texture facing the camera (`vs_sprite`,
    /// `vs_sprite_depth`).
    Sprite,
    /// Socket attachments, placed by the capture tracks.
    Attachment,
    /// The impostor tier's cards of a soft or skeletal asset ([`crate::format::impostor`]): one
    /// camera-facing card per far instance, drawn from the tier's images (`vs_impostor`,
    /// `vs_impostor_depth` facing the sun; fragment stages `fs_impostor*` in every pass, the depth
    /// pass's testing coverage). A host's own shader stages never replace these.
    Impostor,
    /// The ground square (`vs_ground`, colour passes only; group 0 alone).
    Ground,
}

/// The shader variant of a pipeline: the WGSL `override` constants that depend on the asset and the
/// draw (the renderer-wide `INTERPOLATION` override is the renderer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShaderVariantKey {
    /// `CROSS_FADE`: decode clip B while a fade runs.
    pub cross_fade: bool,
    /// `INFLUENCES`: bone influences per vertex, 4 or 8 (anything else means 4).
    pub influences: u32,
    /// `VERTEX_FORMAT`: the asset's vertex animation format.
    pub vertex_format: VertexFormat,
    /// Whether back faces are drawn (not an override constant: it selects [`CullMode::None`]), for
    /// an asset with a double-sided material; the fragment stage then discards the back faces of
    /// its single-sided materials.
    pub double_sided: bool,
    /// `MOTION_VECTORS`: the colour pipeline also decodes each vertex at the previous frame and
    /// writes the motion target (location 1; `fs_lit_motion`, `fs_ground_motion`, or the host
    /// shader's motion entry point). Set by the frame plan from `RenderOptions::motion_vectors`.
    pub motion_vectors: bool,
    /// `MATERIALS`: the shading path fixed in the pipeline, `Some(true)` the asset's materials,
    /// `Some(false)` the built-in palette (then no tangent frames are decoded), `None` chosen at run
    /// time from the asset's uniforms. Must match the asset. Pipelines with a host's shader stage
    /// always choose at run time ([`PipelineKey::override_constants_for`]).
    pub materials: Option<bool>,
    /// `LIGHT_MODEL`: the light model fixed in the pipeline ([`gpu::LightModel::code`]), or `None`
    /// for the frame's (`FrameUniforms::light_model`) at run time. Set by the frame plan from
    /// `RenderOptions::light_model` for colour pipelines.
    pub light_model: Option<u32>,
    /// `IMPOSTOR_VIEWS`: how many of the tier's views an impostor card pipeline reads
    /// ([`ImpostorViews`]); [`ImpostorViews::PerCard`] for every other program.
    pub impostor_views: ImpostorViews,
}

/// How many of the impostor tier's views a card pipeline reads per fragment
/// ([`gpu::OVERRIDE_IMPOSTOR_VIEWS`]). A card from `SINGLE_VIEW_LEVEL` mip levels past the switch
/// on ([`crate::format::impostor::SINGLE_VIEW_LEVEL`]) reads one view; nearer cards blend three.
/// The frame plan draws the two kinds with pipelines fixed to one path each, so a rasteriser that
/// runs both sides of a branch (a software one) pays for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ImpostorViews {
    /// Each card by its mip level (a draw that mixes near and far cards; the default).
    #[default]
    PerCard,
    /// One view at its nearest texel: the draw of far cards only.
    One,
    /// Three views blended with the depth correction: the draw of near cards only.
    Three,
}

impl ImpostorViews {
    /// The `IMPOSTOR_VIEWS` override's value: 0 per card, 1 one view, 3 three views.
    pub fn code(self) -> u32 {
        match self {
            Self::PerCard => 0,
            Self::One => 1,
            Self::Three => 3,
        }
    }
}

impl ShaderVariantKey {
    /// The variant of pipelines that decode no asset (culling, ground): no fade, 4 influences, the
    /// default format, no motion vectors, shading chosen at run time.
    pub const NEUTRAL: Self = Self {
        cross_fade: false,
        influences: 4,
        vertex_format: VertexFormat::Packed64,
        double_sided: false,
        motion_vectors: false,
        materials: None,
        light_model: None,
        impostor_views: ImpostorViews::PerCard,
    };

    /// `influences` as the override takes it: 8 stays 8, everything else is 4.
    pub fn influences_override(&self) -> u32 {
        if self.influences == 8 { 8 } else { 4 }
    }
}

/// The values of every WGSL `override` of [`gpu::SHADER_SOURCE`] for `variant` with the renderer's
/// `interpolation` and the pipeline's `program_code` ([`PipelineKey::program_code`]; 0 for compute
/// pipelines), by name, as both backends pass them (wgpu as pipeline constants, vat-vulkan to naga's
/// `process_overrides`); booleans are `1.0` / `0.0`, an unfixed shading choice `0.0`.
pub fn override_constants(
    variant: &ShaderVariantKey,
    interpolation: crate::playback::Interpolation,
    program_code: u32,
) -> [(&'static str, f64); 9] {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let materials = match variant.materials {
        None => 0.0,
        Some(false) => 1.0,
        Some(true) => 2.0,
    };
    [
        (gpu::OVERRIDE_INTERPOLATION, f64::from(interpolation.as_u32())),
        (gpu::OVERRIDE_CROSS_FADE, flag(variant.cross_fade)),
        (gpu::OVERRIDE_INFLUENCES, f64::from(variant.influences_override())),
        (gpu::OVERRIDE_VERTEX_FORMAT, f64::from(gpu::vertex_format_code(variant.vertex_format))),
        (gpu::OVERRIDE_MOTION_VECTORS, flag(variant.motion_vectors)),
        (gpu::OVERRIDE_PROGRAM, f64::from(program_code)),
        (gpu::OVERRIDE_MATERIALS, materials),
        (gpu::OVERRIDE_LIGHT_MODEL, variant.light_model.map_or(0.0, |code| f64::from(code) + 1.0)),
        (gpu::OVERRIDE_IMPOSTOR_VIEWS, f64::from(variant.impostor_views.code())),
    ]
}

/// A render pipeline independent of the host pass: program, pass kind and shader variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    /// What it draws.
    pub program: Program,
    /// The pass kind it draws in.
    pub pass: PassKind,
    /// The override constants.
    pub variant: ShaderVariantKey,
}

impl PipelineKey {
    /// The vertex entry point of [`gpu::SHADER_SOURCE`] it runs (a prepass runs the colour pass's).
    pub fn vertex_entry_point(&self) -> &'static str {
        let depth = self.pass == PassKind::Depth;
        match (self.program, depth) {
            (Program::Body(RenderMode::Vat), false) => gpu::ENTRY_POINT_VS_VAT,
            (Program::Body(RenderMode::Vat), true) => gpu::ENTRY_POINT_VS_VAT_DEPTH,
            (Program::Body(RenderMode::Bone), false) => gpu::ENTRY_POINT_VS_BONE,
            (Program::Body(RenderMode::Bone), true) => gpu::ENTRY_POINT_VS_BONE_DEPTH,
            (Program::Body(RenderMode::Rest), false) => gpu::ENTRY_POINT_VS_REST,
            (Program::Body(RenderMode::Rest), true) => gpu::ENTRY_POINT_VS_REST_DEPTH,
            (Program::Rigid, false) => gpu::ENTRY_POINT_VS_RIGID,
            (Program::Rigid, true) => gpu::ENTRY_POINT_VS_RIGID_DEPTH,
            (Program::Fluid, false) => gpu::ENTRY_POINT_VS_FLUID,
            (Program::Fluid, true) => gpu::ENTRY_POINT_VS_FLUID_DEPTH,
            (Program::Sprite, false) => gpu::ENTRY_POINT_VS_SPRITE,
            (Program::Sprite, true) => gpu::ENTRY_POINT_VS_SPRITE_DEPTH,
            (Program::Attachment, false) => gpu::ENTRY_POINT_VS_ATTACHMENT,
            (Program::Attachment, true) => gpu::ENTRY_POINT_VS_ATTACHMENT_DEPTH,
            (Program::Impostor, false) => gpu::ENTRY_POINT_VS_IMPOSTOR,
            (Program::Impostor, true) => gpu::ENTRY_POINT_VS_IMPOSTOR_DEPTH,
            (Program::Ground, _) => gpu::ENTRY_POINT_VS_GROUND,
        }
    }

    /// The fragment entry point: `fs_lit` in colour passes (`fs_ground` for the ground, which binds
    /// no asset; `fs_lit_motion` and `fs_ground_motion` with motion vectors), none in depth passes.
    /// In a prepass, by its targets: `fs_prepass` (normal), `fs_prepass_motion` (normal and motion),
    /// `fs_prepass_motion_only` (motion), `fs_prepass_depth` (none: `fs_lit`'s discards alone);
    /// the ground's `fs_ground_prepass`, `fs_ground_prepass_motion`,
    /// `fs_ground_prepass_motion_only`, and no fragment stage in a depth-only prepass. The impostor
    /// cards' twins: `fs_impostor`, `fs_impostor_motion`, `fs_impostor_prepass`,
    /// `fs_impostor_prepass_motion`, `fs_impostor_prepass_motion_only`, and `fs_impostor_depth`
    /// (coverage alone) in depth passes and depth-only prepasses.
    pub fn fragment_entry_point(&self) -> Option<&'static str> {
        let motion = self.variant.motion_vectors;
        let ground = self.program == Program::Ground;
        if self.program == Program::Impostor {
            return Some(match self.pass {
                PassKind::Colour if motion => gpu::ENTRY_POINT_FS_IMPOSTOR_MOTION,
                PassKind::Colour => gpu::ENTRY_POINT_FS_IMPOSTOR,
                PassKind::Depth => gpu::ENTRY_POINT_FS_IMPOSTOR_DEPTH,
                PassKind::Prepass(t) => match (t.normal, t.motion) {
                    (true, true) => gpu::ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION,
                    (true, false) => gpu::ENTRY_POINT_FS_IMPOSTOR_PREPASS,
                    (false, true) => gpu::ENTRY_POINT_FS_IMPOSTOR_PREPASS_MOTION_ONLY,
                    (false, false) => gpu::ENTRY_POINT_FS_IMPOSTOR_DEPTH,
                },
            });
        }
        match self.pass {
            PassKind::Colour if ground && motion => Some(gpu::ENTRY_POINT_FS_GROUND_MOTION),
            PassKind::Colour if ground => Some(gpu::ENTRY_POINT_FS_GROUND),
            PassKind::Colour if motion => Some(gpu::ENTRY_POINT_FS_LIT_MOTION),
            PassKind::Colour => Some(gpu::ENTRY_POINT_FS_LIT),
            PassKind::Depth => None,
            PassKind::Prepass(t) => match (ground, t.normal, t.motion) {
                (true, true, true) => Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS_MOTION),
                (true, true, false) => Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS),
                (true, false, true) => Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS_MOTION_ONLY),
                (true, false, false) => None,
                (false, true, true) => Some(gpu::ENTRY_POINT_FS_PREPASS_MOTION),
                (false, true, false) => Some(gpu::ENTRY_POINT_FS_PREPASS),
                (false, false, true) => Some(gpu::ENTRY_POINT_FS_PREPASS_MOTION_ONLY),
                (false, false, false) => Some(gpu::ENTRY_POINT_FS_PREPASS_DEPTH),
            },
        }
    }

    /// Number of colour attachment slots of the pipeline ([`colour_slots`]): 0 in depth passes,
    /// 2 with motion vectors (colour, motion), else 1; in a prepass 2 with the motion target
    /// (location 0 empty without the normal one), 1 with the normal target alone, else 0.
    pub fn color_target_count(&self) -> u32 {
        match self.pass {
            PassKind::Depth => 0,
            PassKind::Colour => 1 + u32::from(self.variant.motion_vectors),
            PassKind::Prepass(t) if t.motion => 2,
            PassKind::Prepass(t) => u32::from(t.normal),
        }
    }

    /// This colour pipeline's twin in a host's prepass with `targets`: the same program and
    /// variant, motion decoded only when the prepass writes it.
    pub fn in_prepass(self, targets: PrepassTargets) -> Self {
        Self {
            pass: PassKind::Prepass(targets),
            variant: ShaderVariantKey { motion_vectors: targets.motion, ..self.variant },
            ..self
        }
    }

    /// This colour pipeline's twin in a depth pass (an extra view's shadow draws): the same program
    /// and variant, unlit (no light model: one depth pipeline whatever the light).
    pub fn in_depth_pass(self) -> Self {
        Self {
            pass: PassKind::Depth,
            variant: ShaderVariantKey { light_model: None, ..self.variant },
            ..self
        }
    }

    /// This colour pipeline in a colour pass with (`true`) or without a motion target: a frame
    /// prepared with motion vectors draws colour alone into a pass without one (its motion written
    /// by a prepass, or not at all).
    pub fn with_motion_target(self, motion: bool) -> Self {
        Self { variant: ShaderVariantKey { motion_vectors: motion, ..self.variant }, ..self }
    }

    /// Whether the pipeline binds groups 1 (asset) and 2 (crowd) as well as group 0; the ground
    /// binds group 0 alone.
    pub fn binds_asset_and_crowd(&self) -> bool {
        self.program != Program::Ground
    }

    /// The `PROGRAM` override's value ([`gpu::OVERRIDE_PROGRAM`]): which decode `vat_vertex` runs
    /// (`PROGRAM_VAT` 0, `PROGRAM_BONE` 1, `PROGRAM_RIGID` 2, `PROGRAM_REST` 3, `PROGRAM_ATTACHMENT` 4,
    /// `PROGRAM_FLUID` 5, `PROGRAM_SPRITE` 6; the ground, which decodes nothing, 0).
    pub fn program_code(&self) -> u32 {
        match self.program {
            Program::Body(RenderMode::Vat) | Program::Ground => 0,
            Program::Body(RenderMode::Bone) => 1,
            Program::Rigid => 2,
            Program::Body(RenderMode::Rest) => 3,
            Program::Attachment => 4,
            Program::Fluid => 5,
            Program::Sprite => 6,
            Program::Impostor => 7,
        }
    }

    /// The values of every WGSL `override` for this render pipeline ([`override_constants`] of its
    /// variant and [`program_code`](Self::program_code)) when vat's own stages draw it.
    pub fn override_constants(
        &self,
        interpolation: crate::playback::Interpolation,
    ) -> [(&'static str, f64); 9] {
        self.override_constants_for(interpolation, false)
    }

    /// [`override_constants`](Self::override_constants) for a pipeline with (`host_shader`) or
    /// without a stage of a host's shader: a host's stage gets the shading path chosen at run time
    /// (`MATERIALS` 0), so it sees the asset's tangent frames whatever the asset's shading path.
    pub fn override_constants_for(
        &self,
        interpolation: crate::playback::Interpolation,
        host_shader: bool,
    ) -> [(&'static str, f64); 9] {
        let mut variant = self.variant;
        if host_shader {
            variant.materials = None;
        }
        override_constants(&variant, interpolation, self.program_code())
    }

    /// Its fixed state in a pass of `conventions` ([`PipelineState::for_pass`]), with no culling
    /// for a double-sided variant.
    pub fn state_in(&self, conventions: &PassConventions) -> PipelineState {
        let mut state = PipelineState::for_pass(self.pass, conventions);
        if self.variant.double_sided {
            state.cull_mode = CullMode::None;
        }
        state
    }
}

/// Which triangles are discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CullMode {
    /// None.
    None,
    /// Back faces.
    Back,
    /// Front faces.
    Front,
}

/// Which winding is the front face (in the framebuffer, with the backends' y-up clip space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrontFace {
    /// Counter-clockwise: vat's meshes seen through a right-handed camera with a y-up clip space.
    Ccw,
    /// Clockwise: for a host whose projection mirrors the image (a y-down clip space, say).
    Cw,
}

/// A depth (or sampler) comparison: passes when `new op stored`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareFunction {
    /// `<`.
    Less,
    /// `<=`.
    LessEqual,
    /// `>` (reverse-Z).
    Greater,
    /// `>=` (reverse-Z).
    GreaterEqual,
}

impl CompareFunction {
    /// Whether nearer is greater (reverse-Z: depth 1 at the near plane, 0 at the far one or at
    /// infinity).
    pub fn is_reverse_z(self) -> bool {
        matches!(self, Self::Greater | Self::GreaterEqual)
    }
}

/// The depth and winding conventions of the pass vat draws into, which the host's pass sets:
/// part of every render pipeline's state ([`PipelineKey::state_in`]) for the colour and depth
/// draws into the host's passes. vat's own shadow map is always [`PassConventions::STANDARD`].
///
/// The camera's matrix must match: a reverse-Z pass needs a reverse-Z projection
/// (`Camera::look_at_reverse_z`, or the host's own). The frustum culling reads either
/// (`Frustum::from_view_proj`), an infinite far plane included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PassConventions {
    /// The depth test of vat's draws.
    pub depth_compare: CompareFunction,
    /// Whether vat's draws write depth.
    pub depth_write: bool,
    /// Which winding is the front face.
    pub front_face: FrontFace,
    /// Which faces are discarded (a double-sided asset draws both whatever this says).
    pub cull_mode: CullMode,
}

impl Default for PassConventions {
    /// [`PassConventions::STANDARD`].
    fn default() -> Self {
        Self::STANDARD
    }
}

impl PassConventions {
    /// Depth 0 at the near plane, 1 at the far one, cleared to 1, test `Less` with writes;
    /// counter-clockwise front faces, back faces culled. vat's own passes.
    pub const STANDARD: Self = Self {
        depth_compare: CompareFunction::Less,
        depth_write: true,
        front_face: FrontFace::Ccw,
        cull_mode: CullMode::Back,
    };

    /// Reverse-Z as Bevy and most modern engines use it (an infinite far plane): depth 1 at the near
    /// plane, 0 at infinity, cleared to 0, test `GreaterEqual` with writes; counter-clockwise front
    /// faces, back faces culled.
    pub const REVERSE_Z: Self = Self { depth_compare: CompareFunction::GreaterEqual, ..Self::STANDARD };

    /// The depth a pass of these conventions is cleared to: the farthest value, 0 for reverse-Z, else 1.
    pub fn clear_depth(&self) -> f32 {
        if self.depth_compare.is_reverse_z() { 0.0 } else { 1.0 }
    }
}

/// Depth bias of a depth-only pipeline, in the API's terms: `constant` depth units plus
/// `slope_scale` times the depth slope, the sum clamped to `clamp` (0: no clamp).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DepthBias {
    /// Constant part, in units of the depth format's smallest step.
    pub constant: i32,
    /// Slope-scaled part.
    pub slope_scale: f32,
    /// Largest bias (0: unclamped).
    pub clamp: f32,
}

impl DepthBias {
    /// No bias.
    pub const NONE: Self = Self { constant: 0, slope_scale: 0.0, clamp: 0.0 };

    /// Whether any bias is applied.
    pub fn is_enabled(&self) -> bool {
        *self != Self::NONE
    }
}

/// The fixed state of every vat render pipeline of one pass kind: triangle lists, no vertex buffers
/// (everything is fetched in the shader), no blending, depth written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipelineState {
    /// Discarded faces.
    pub cull_mode: CullMode,
    /// Front-face winding.
    pub front_face: FrontFace,
    /// Whether depth is written.
    pub depth_write: bool,
    /// The depth test.
    pub depth_compare: CompareFunction,
    /// Depth bias.
    pub depth_bias: DepthBias,
}

/// Depth bias of the shadow (depth-only) pipelines: 2 steps + 2 x slope, away from the light
/// (negated in a reverse-Z pass, where farther is smaller).
pub const SHADOW_DEPTH_BIAS: DepthBias = DepthBias { constant: 2, slope_scale: 2.0, clamp: 0.0 };

impl PipelineState {
    /// The state of `pass`'s pipelines in a pass of `conventions`: its culling, winding, depth test
    /// and writes, and in depth-only passes [`SHADOW_DEPTH_BIAS`] pushing depth away from the view
    /// (negated for reverse-Z).
    pub fn for_pass(pass: PassKind, conventions: &PassConventions) -> Self {
        let away = if conventions.depth_compare.is_reverse_z() { -1 } else { 1 };
        Self {
            cull_mode: conventions.cull_mode,
            front_face: conventions.front_face,
            depth_write: conventions.depth_write,
            depth_compare: conventions.depth_compare,
            depth_bias: match pass {
                PassKind::Colour | PassKind::Prepass(_) => DepthBias::NONE,
                PassKind::Depth => DepthBias {
                    constant: SHADOW_DEPTH_BIAS.constant * away,
                    slope_scale: SHADOW_DEPTH_BIAS.slope_scale * away as f32,
                    clamp: SHADOW_DEPTH_BIAS.clamp,
                },
            },
        }
    }
}

/// Texel filtering of a sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// Nearest texel.
    Nearest,
    /// Linear between texels (for a comparison sampler: of the comparison results, i.e. 2x2 PCF).
    Linear,
}

/// A sampler, described once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SamplerState {
    /// Magnification filter.
    pub mag_filter: FilterMode,
    /// Minification filter.
    pub min_filter: FilterMode,
    /// Mip filter.
    pub mipmap_filter: FilterMode,
    /// The comparison of a comparison sampler (`None`: a plain sampler). Every address mode is
    /// clamp-to-edge.
    pub compare: Option<CompareFunction>,
}

/// The shadow map's sampler (`shadow_sampler`): linear comparison `LessEqual`, clamped to the edge.
pub const SHADOW_SAMPLER: SamplerState = SamplerState {
    mag_filter: FilterMode::Linear,
    min_filter: FilterMode::Linear,
    mipmap_filter: FilterMode::Nearest,
    compare: Some(CompareFunction::LessEqual),
};

/// A host's own fragment stage for vat's colour pipelines: WGSL written against vat's shader,
/// which it is appended to ([`HostShader::module_source`]), so it can use every declaration of
/// [`gpu::SHADER_SOURCE`]:
///
/// - its input is vat's `VertexOutput` (clip position; `world_position` and `world_normal`;
///   `color`, the vertex colour times the instance tint, or the built-in palette's albedo without
///   materials; `world_tangent` with the bitangent sign in `w`, zero without tangent frames; `uv`;
///   `material`, the record in `materials` of the vertex's material under the instance's variant;
///   `instance`, the drawn instance's record index);
/// - the bindings: `instance_user_data[in.instance]`, the 16 bytes the host gave the instance
///   (`Crowd::set_user_data`); `instances[in.instance]`, its record; `frame` (camera, clock, the
///   host's light), `asset` (`material_count`...),
///   `materials`, `material_color_texture`, `material_data_texture`, `material_sampler`,
///   `shadow_map` with `shadow_sampler`;
/// - the helpers: `vat_shade` (the built-in palette shading), `vat_shade_material` (the built-in
///   material shading), `vat_shadow`, `vat_wrap_uv`, `vat_normalize`.
///
/// Both backends build every colour pipeline that draws an asset (not the ground, not depth passes)
/// with this fragment entry point while it is set (`Renderer::set_host_shader`); the vertex stages
/// are vat's. The entry point must be a `@fragment` function of the source writing
/// `@location(0)`. Compile errors name lines of [`HostShader::module_source`] (vat's source comes
/// first). With motion vectors, `VertexOutput::previous_world_position` is the vertex at the previous
/// frame and the pipelines use the motion entry point ([`HostShader::with_motion_entry_point`]).
/// A host may also write its own vertex stage ([`HostShader::with_vertex_entry_point`]): it calls
/// `vat_vertex(vertex_index, instance_index)`, the documented decode library function (vat's
/// `VertexOutput` of the pipeline's program: clip, world position, normal, tangent frame, UV0,
/// colour, material, record index, previous world position), and writes outputs of its own, which
/// its fragment entry points take; `vat_object_position` / `vat_object_direction` give object space.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostShader {
    source: String,
    fragment_entry_point: String,
    motion_entry_point: Option<String>,
    vertex_entry_point: Option<String>,
}

impl HostShader {
    /// A host fragment stage: `source` (WGSL, no `enable` directives: it follows vat's source) and the
    /// name of its `@fragment` entry point.
    pub fn new(source: impl Into<String>, fragment_entry_point: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            fragment_entry_point: fragment_entry_point.into(),
            motion_entry_point: None,
            vertex_entry_point: None,
        }
    }

    /// With the host's own vertex stage for the same pipelines: a `@vertex` function of the source
    /// taking `@builtin(vertex_index)` and `@builtin(instance_index)`, which calls
    /// `vat_vertex(vertex_index, instance_index)` (vat's decode of the pipeline's program: vat's
    /// `VertexOutput`, see [`HostShader`]) and writes outputs of its own, which the host's fragment
    /// entry points then take. `vat_object_position` and `vat_object_direction` give object space
    /// back from world space with the instance's record (`instances[out.instance]`). Pass the clip
    /// position through unchanged for hidden instances (it is outside the clip volume).
    pub fn with_vertex_entry_point(mut self, entry_point: impl Into<String>) -> Self {
        self.vertex_entry_point = Some(entry_point.into());
        self
    }

    /// The host vertex entry point's name, if it has one.
    pub fn vertex_entry_point(&self) -> Option<&str> {
        self.vertex_entry_point.as_deref()
    }

    /// With the entry point of its colour pipelines when motion vectors are on
    /// (`RenderOptions::motion_vectors`): a `@fragment` function of the source writing
    /// `@location(0)` (colour) and `@location(1)` (motion: `vec4<f32>(vat_motion_vector(in), 0.0,
    /// 0.0)`, the helper vat's own `fs_lit_motion` writes). Without one, a frame with motion vectors
    /// and this shader is refused (the backend's `HostShader` error).
    pub fn with_motion_entry_point(mut self, entry_point: impl Into<String>) -> Self {
        self.motion_entry_point = Some(entry_point.into());
        self
    }

    /// The motion entry point's name, if it has one.
    pub fn motion_entry_point(&self) -> Option<&str> {
        self.motion_entry_point.as_deref()
    }

    /// Every fragment entry point a backend checks the module for: the fragment one, then the
    /// motion one. (The vertex one is [`vertex_entry_point`](Self::vertex_entry_point).)
    pub fn entry_points(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.fragment_entry_point.as_str()).chain(self.motion_entry_point.as_deref())
    }

    /// Why a frame with `motion_vectors` cannot be drawn with this shader: `Some(message)` when
    /// motion vectors are on and it has no motion entry point.
    pub fn refuses(&self, motion_vectors: bool) -> Option<String> {
        (motion_vectors && self.motion_entry_point.is_none()).then(|| {
            format!(
                "motion vectors are on but the host shader has no motion entry point (only `{}`): \
                 add one with HostShader::with_motion_entry_point",
                self.fragment_entry_point
            )
        })
    }

    /// The host's WGSL as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The fragment entry point's name.
    pub fn fragment_entry_point(&self) -> &str {
        &self.fragment_entry_point
    }

    /// The whole module a backend compiles: [`gpu::SHADER_SOURCE`], then the host's source.
    pub fn module_source(&self) -> String {
        format!(
            "{}
// ---- host shader ----
{}
",
            gpu::SHADER_SOURCE,
            self.source
        )
    }
}

/// The vertex stage of a render pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VertexStage<'a> {
    /// An entry point of vat's own module.
    Vat(&'static str),
    /// The host shader's entry point (compiled from [`HostShader::module_source`]).
    Host(&'a str),
}

impl PipelineKey {
    /// The vertex stage of this pipeline when `host` is set: the host's vertex entry point (if it
    /// has one) for the colour pipelines that draw an asset, vat's
    /// ([`PipelineKey::vertex_entry_point`]) otherwise (prepasses included: vat's prepass fragment
    /// stages take vat's `VertexOutput`).
    pub fn vertex_stage<'a>(&self, host: Option<&'a HostShader>) -> VertexStage<'a> {
        match host.and_then(HostShader::vertex_entry_point) {
            Some(entry)
                if self.binds_asset_and_crowd()
                    && self.program != Program::Impostor
                    && self.pass == PassKind::Colour =>
            {
                VertexStage::Host(entry)
            }
            _ => VertexStage::Vat(self.vertex_entry_point()),
        }
    }
}

/// The fragment stage of a render pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentStage<'a> {
    /// An entry point of vat's own module.
    Vat(&'static str),
    /// The host shader's entry point (compiled from [`HostShader::module_source`]).
    Host(&'a str),
}

impl PipelineKey {
    /// The fragment stage of this pipeline when `host` is set: the host's entry point for the colour
    /// pipelines that draw an asset, vat's ([`PipelineKey::fragment_entry_point`]) otherwise
    /// (prepasses included); `None` in depth passes.
    pub fn fragment_stage<'a>(&self, host: Option<&'a HostShader>) -> Option<FragmentStage<'a>> {
        let vat = self.fragment_entry_point()?;
        let host = host.filter(|_| self.pass == PassKind::Colour && self.program != Program::Impostor);
        match host {
            Some(h) if self.binds_asset_and_crowd() && self.variant.motion_vectors => {
                // A host shader without a motion entry point is refused before planning
                // (HostShader::refuses); vat's own stage stands in here so nothing draws unshaded.
                Some(h.motion_entry_point().map_or(FragmentStage::Vat(vat), FragmentStage::Host))
            }
            Some(h) if self.binds_asset_and_crowd() => Some(FragmentStage::Host(h.fragment_entry_point())),
            _ => Some(FragmentStage::Vat(vat)),
        }
    }

    /// Whether a stage of `host` runs in this pipeline ([`vertex_stage`](Self::vertex_stage) or
    /// [`fragment_stage`](Self::fragment_stage)): its constants are then
    /// [`override_constants_for`](Self::override_constants_for)`(_, true)`.
    pub fn runs_host_stage(&self, host: Option<&HostShader>) -> bool {
        matches!(self.vertex_stage(host), VertexStage::Host(_))
            || matches!(self.fragment_stage(host), Some(FragmentStage::Host(_)))
    }
}

/// The material textures' sampler (`material_sampler`): trilinear, clamped to the edge. Each
/// material's wrap modes are applied to the coordinates in the shader (with the unwrapped
/// coordinates' derivatives), so one sampler serves every material of every asset.
pub const MATERIAL_SAMPLER: SamplerState = SamplerState {
    mag_filter: FilterMode::Linear,
    min_filter: FilterMode::Linear,
    mipmap_filter: FilterMode::Linear,
    compare: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shading_overrides_follow_the_key_and_a_host_stage_chooses_at_run_time() {
        use crate::playback::Interpolation;
        let value = |c: &[(&str, f64); 9], name: &str| c.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let body = |materials, light_model| PipelineKey {
            program: Program::Body(RenderMode::Vat),
            pass: PassKind::Colour,
            variant: ShaderVariantKey { materials, light_model, ..ShaderVariantKey::NEUTRAL },
        };
        for (materials, code) in [(None, 0.0), (Some(false), 1.0), (Some(true), 2.0)] {
            let c = body(materials, None).override_constants(Interpolation::Linear);
            assert_eq!(value(&c, gpu::OVERRIDE_MATERIALS), Some(code), "{materials:?}");
            assert_eq!(value(&c, gpu::OVERRIDE_LIGHT_MODEL), Some(0.0));
        }
        let pbr = gpu::LightModel::Pbr { ambient_color: [0.1; 3] }.code();
        let c = body(Some(false), Some(pbr)).override_constants(Interpolation::Linear);
        assert_eq!(value(&c, gpu::OVERRIDE_LIGHT_MODEL), Some(f64::from(gpu::LIGHT_MODEL_PBR) + 1.0));
        let c = body(Some(true), Some(gpu::LightModel::Vat.code())).override_constants(Interpolation::Linear);
        assert_eq!(value(&c, gpu::OVERRIDE_LIGHT_MODEL), Some(f64::from(gpu::LIGHT_MODEL_VAT) + 1.0));
        // A host's fragment stage runs in the colour pipeline: the shading path is left to run time
        // (it may read tangent frames of a palette asset); the light model stays fixed.
        let host = HostShader::new("", "fs_host");
        let key = body(Some(false), Some(pbr));
        assert!(key.runs_host_stage(Some(&host)));
        assert!(!key.runs_host_stage(None));
        let c = key.override_constants_for(Interpolation::Linear, key.runs_host_stage(Some(&host)));
        assert_eq!(value(&c, gpu::OVERRIDE_MATERIALS), Some(0.0));
        assert_eq!(value(&c, gpu::OVERRIDE_LIGHT_MODEL), Some(f64::from(gpu::LIGHT_MODEL_PBR) + 1.0));
        // The shadow pass runs no host stage.
        let depth = PipelineKey { pass: PassKind::Depth, ..key };
        assert!(!depth.runs_host_stage(Some(&host)));
    }

    #[test]
    fn a_host_shader_replaces_the_fragment_of_asset_colour_pipelines_only() {
        let host = HostShader::new(
            "@fragment fn fs_toon(in: VertexOutput) -> @location(0) vec4<f32> { return in.color; }",
            "fs_toon",
        );
        assert!(host.module_source().starts_with(gpu::SHADER_SOURCE));
        assert!(host.module_source().ends_with(&format!("{}\n", host.source())));
        let key = |program, pass| PipelineKey { program, pass, variant: ShaderVariantKey::NEUTRAL };
        let body = key(Program::Body(RenderMode::Vat), PassKind::Colour);
        assert_eq!(body.fragment_stage(Some(&host)), Some(FragmentStage::Host("fs_toon")));
        assert_eq!(body.fragment_stage(None), Some(FragmentStage::Vat(gpu::ENTRY_POINT_FS_LIT)));
        assert_eq!(
            key(Program::Attachment, PassKind::Colour).fragment_stage(Some(&host)),
            Some(FragmentStage::Host("fs_toon"))
        );
        assert_eq!(
            key(Program::Ground, PassKind::Colour).fragment_stage(Some(&host)),
            Some(FragmentStage::Vat(gpu::ENTRY_POINT_FS_GROUND))
        );
        assert_eq!(key(Program::Rigid, PassKind::Depth).fragment_stage(Some(&host)), None);
    }

    #[test]
    fn prepass_pipelines_pick_their_fragment_stage_by_targets() {
        let both = PrepassTargets { normal: true, motion: true };
        let normal = PrepassTargets { normal: true, motion: false };
        let motion = PrepassTargets { normal: false, motion: true };
        let none = PrepassTargets::default();
        let colour =
            |program| PipelineKey { program, pass: PassKind::Colour, variant: ShaderVariantKey::NEUTRAL };
        let body = colour(Program::Body(RenderMode::Bone));
        let cases = [
            (
                both,
                Some(gpu::ENTRY_POINT_FS_PREPASS_MOTION),
                Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS_MOTION),
                2,
            ),
            (normal, Some(gpu::ENTRY_POINT_FS_PREPASS), Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS), 1),
            (
                motion,
                Some(gpu::ENTRY_POINT_FS_PREPASS_MOTION_ONLY),
                Some(gpu::ENTRY_POINT_FS_GROUND_PREPASS_MOTION_ONLY),
                2,
            ),
            (none, Some(gpu::ENTRY_POINT_FS_PREPASS_DEPTH), None, 0),
        ];
        for (targets, fs, ground_fs, slots) in cases {
            let pre = body.in_prepass(targets);
            assert_eq!(pre.vertex_entry_point(), gpu::ENTRY_POINT_VS_BONE, "the colour vertex stage");
            assert_eq!(pre.variant.motion_vectors, targets.motion);
            assert_eq!(pre.fragment_entry_point(), fs);
            assert_eq!(pre.color_target_count(), slots);
            let slots_of = colour_slots(targets.normal.then_some(0), targets.motion.then_some(1));
            assert_eq!(slots_of.len() as u32, slots);
            let ground = colour(Program::Ground).in_prepass(targets);
            assert_eq!(ground.fragment_entry_point(), ground_fs);
            // vat's prepass stages whatever host shader is set (they take vat's VertexOutput).
            let host = HostShader::new("", "fs_host").with_vertex_entry_point("vs_host");
            assert_eq!(pre.fragment_stage(Some(&host)), fs.map(FragmentStage::Vat));
            assert_eq!(pre.vertex_stage(Some(&host)), VertexStage::Vat(gpu::ENTRY_POINT_VS_BONE));
            for entry in fs.into_iter().chain(ground_fs) {
                assert!(gpu::SHADER_SOURCE.contains(&format!("fn {entry}(")), "{entry}");
            }
        }
        assert_eq!(colour_slots(None, Some('m')), vec![None, Some('m')]);
        assert_eq!(colour_slots(Some('c'), None), vec![Some('c')]);
        assert_eq!(colour_slots::<char>(None, None), Vec::<Option<char>>::new());
        // A colour pass without a motion target draws colour alone.
        let moving =
            PipelineKey { variant: ShaderVariantKey { motion_vectors: true, ..body.variant }, ..body };
        assert_eq!(moving.with_motion_target(false), body);
        assert_eq!(body.with_motion_target(false).fragment_entry_point(), Some(gpu::ENTRY_POINT_FS_LIT));
    }

    #[test]
    fn only_depth_passes_are_biased() {
        let standard = &PassConventions::STANDARD;
        assert!(!PipelineState::for_pass(PassKind::Colour, standard).depth_bias.is_enabled());
        assert_eq!(PipelineState::for_pass(PassKind::Depth, standard).depth_bias, SHADOW_DEPTH_BIAS);
        assert!(SHADOW_DEPTH_BIAS.is_enabled());
    }

    #[test]
    fn the_host_pass_sets_depth_test_winding_and_culling() {
        let reverse = PassConventions::REVERSE_Z;
        assert_eq!(reverse.clear_depth(), 0.0);
        assert_eq!(PassConventions::STANDARD.clear_depth(), 1.0);
        let key = |pass, double_sided| PipelineKey {
            program: Program::Body(RenderMode::Vat),
            pass,
            variant: ShaderVariantKey { double_sided, ..ShaderVariantKey::NEUTRAL },
        };
        let colour = key(PassKind::Colour, false).state_in(&reverse);
        assert_eq!(colour.depth_compare, CompareFunction::GreaterEqual);
        assert!(colour.depth_write && colour.cull_mode == CullMode::Back);
        // The depth bias still pushes away from the view: towards 0 in reverse-Z.
        let depth = key(PassKind::Depth, false).state_in(&reverse);
        assert_eq!(depth.depth_bias.constant, -SHADOW_DEPTH_BIAS.constant);
        assert!(depth.depth_bias.slope_scale < 0.0);
        let host = PassConventions {
            depth_write: false,
            front_face: FrontFace::Cw,
            cull_mode: CullMode::Front,
            ..PassConventions::STANDARD
        };
        let state = key(PassKind::Colour, false).state_in(&host);
        assert_eq!(
            (state.depth_write, state.front_face, state.cull_mode),
            (false, FrontFace::Cw, CullMode::Front)
        );
        // A double-sided asset draws both faces whatever the host culls.
        assert_eq!(key(PassKind::Colour, true).state_in(&host).cull_mode, CullMode::None);
    }

    #[test]
    fn entry_points_follow_program_and_pass() {
        let key = |program, pass| PipelineKey { program, pass, variant: ShaderVariantKey::NEUTRAL };
        assert_eq!(
            key(Program::Body(RenderMode::Bone), PassKind::Depth).vertex_entry_point(),
            "vs_bone_depth"
        );
        assert_eq!(key(Program::Attachment, PassKind::Colour).fragment_entry_point(), Some("fs_lit"));
        assert_eq!(key(Program::Attachment, PassKind::Depth).fragment_entry_point(), None);
        assert!(!key(Program::Ground, PassKind::Colour).binds_asset_and_crowd());
        assert_eq!(key(Program::Rigid, PassKind::Colour).vertex_entry_point(), "vs_rigid");
        assert_eq!(key(Program::Rigid, PassKind::Depth).vertex_entry_point(), "vs_rigid_depth");
        for program in [
            Program::Body(RenderMode::Vat),
            Program::Body(RenderMode::Bone),
            Program::Body(RenderMode::Rest),
            Program::Rigid,
            Program::Attachment,
        ] {
            for pass in [PassKind::Colour, PassKind::Depth] {
                let entry = key(program, pass).vertex_entry_point();
                assert!(gpu::SHADER_SOURCE.contains(&format!("fn {entry}(")), "{entry}");
            }
        }
    }
}

/// The state of the pass a render pipeline draws in, over a graphics API's format type `F`
/// (`wgpu::TextureFormat` in vat-wgpu, `vk::Format` in vat-vulkan, which name it `PassFormats`):
/// attachment formats, sample count and the pass's conventions. Given to a renderer's `draw` as the
/// host pass's: the renderer caches one pipeline per `(PipelineKey, PassFormats)`, so it can draw
/// into several hosts' passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PassFormats<F> {
    /// Format of the pass's single colour attachment, at location 0 (`None`: a depth-only pass).
    pub color: Option<F>,
    /// Format of the pass's depth attachment (vat's pipelines always test and write depth).
    pub depth: F,
    /// Format of the motion-vector attachment at location 1 (`None`: none). Only a frame prepared
    /// with `RenderOptions::motion_vectors` may be drawn into a pass that has one: its colour
    /// pipelines write `vec4<f32>(motion.xy, 0, 0)` there (see
    /// [`crate::render::RenderOptions::motion_vectors`]; a float format such as `Rg16Float` or, for
    /// exact motion, `Rg32Float`). Such a frame drawn into a pass without one draws colour alone
    /// (its motion written by the renderer's `draw_prepass`, say).
    pub motion: Option<F>,
    /// The pass's depth and winding conventions: every pipeline's depth test and writes, front face
    /// and culling ([`PassConventions::STANDARD`], or [`PassConventions::REVERSE_Z`] for a host
    /// with reverse-Z depth such as Bevy). Part of the pipeline cache's key.
    pub conventions: PassConventions,
    /// Samples per pixel of the attachments (1 without MSAA; the pipelines' sample count).
    pub samples: u32,
}

impl<F> PassFormats<F> {
    /// vat's own shadow pass: depth only, in `depth`, standard conventions, one sample.
    pub const fn shadow(depth: F) -> Self {
        Self { color: None, depth, motion: None, conventions: PassConventions::STANDARD, samples: 1 }
    }
}

/// The state of a host's prepass of the camera that a renderer's `draw_prepass` draws into, over a
/// graphics API's format type `F` (each backend names it `PrepassFormats`): Bevy's layout
/// (`ViewPrepassTextures`), a depth attachment and at most two colour attachments, the normal at
/// location 0 and the motion at location 1. The pass's colour attachments must be those of
/// [`colour_slots`]`(normal, motion)`: `[normal, motion]` without the trailing empty ones, so a
/// motion-only pass has an empty slot at location 0 (wgpu: `None`; Vulkan: a null image view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrepassFormats<F> {
    /// Format of the normal attachment at location 0 (`None`: none): vat writes
    /// `vec4(n * 0.5 + 0.5, 1)` of the unit world normal (after normal mapping, negated on back
    /// faces), for an unsigned normalised format such as Bevy's `Rgb10a2Unorm`.
    pub normal: Option<F>,
    /// Format of the motion attachment at location 1 (`None`: none): `vec4(motion, 0, 0)` in the
    /// convention of `RenderOptions::motion_vectors` (Bevy's), for a float format such as Bevy's
    /// `Rg16Float`. The frame must have been prepared with motion vectors.
    pub motion: Option<F>,
    /// Format of the depth attachment (the host's main depth buffer, which the prepass fills).
    pub depth: F,
    /// Samples per pixel of the attachments (1 without MSAA).
    pub samples: u32,
    /// The pass's depth and winding conventions ([`PassConventions::REVERSE_Z`] for Bevy): the
    /// same as the colour pass's, so its draws pass the depth test where the prepass wrote.
    pub conventions: PassConventions,
}

impl<F: Copy> PrepassFormats<F> {
    /// Which targets the pass has.
    pub fn targets(&self) -> PrepassTargets {
        PrepassTargets { normal: self.normal.is_some(), motion: self.motion.is_some() }
    }

    /// The same attachments as [`PassFormats`] (the normal one as `color`), the pipeline cache's
    /// key with the prepass pipeline's [`PipelineKey`].
    pub fn pass_formats(&self) -> PassFormats<F> {
        PassFormats {
            color: self.normal,
            depth: self.depth,
            motion: self.motion,
            conventions: self.conventions,
            samples: self.samples,
        }
    }
}
