// vat.wgsl: the one shader source of vat (vat_core::gpu::SHADER_SOURCE).
//
// Both backends use this text as is: vat-wgpu hands it to wgpu, vat-vulkan translates it to SPIR-V with
// naga. Variants are chosen with `override` constants at pipeline creation, never by editing the text.
//
// Every struct below has a `#[repr(C)]` twin in vat-core (gpu.rs, instance.rs); a test compares their
// sizes and member offsets with what naga computes for these declarations, and the bindings with
// `vat_core::gpu::BINDINGS`. Every formula follows the shared spec literally (mul then add, in the
// written order) because vat-core's CPU reference decoder mirrors these functions line by line.
//
// Conventions: right-handed, +Y up, metres, seconds, phase in cycles, column-major matrices.

// ---------------------------------------------------------------------------------------------------
// Variants and constants
// ---------------------------------------------------------------------------------------------------

// Interpolation modes: the values of INTERPOLATION (vat_core::gpu::INTERPOLATION_*).
const INTERPOLATION_POINT: u32 = 0u;
const INTERPOLATION_LINEAR: u32 = 1u;
const INTERPOLATION_CUBIC: u32 = 2u;

// How frames of a clip are blended: Point 0, Linear 1 (default), Cubic 2 (uniform Catmull-Rom).
override INTERPOLATION: u32 = 1u;
// Whether clip B of a running cross-fade is decoded and blended in (the cross-fade variant, default);
// false gives the plain variant, which shows clip A only and never fetches clip B.
override CROSS_FADE: bool = true;

// Motion vectors: the colour vertex stages also decode each vertex at the previous frame (the
// previous record at the previous time) into VertexOutput.previous_world_position.
override MOTION_VECTORS: bool = false;

// The program of a colour pipeline (vat_core::pipeline::Program), for vat_vertex in a host's own
// vertex stage: which decode it runs. vat's own vertex entry points ignore it.
override PROGRAM: u32 = 0u;
const PROGRAM_VAT: u32 = 0u;
const PROGRAM_BONE: u32 = 1u;
const PROGRAM_RIGID: u32 = 2u;
const PROGRAM_REST: u32 = 3u;
const PROGRAM_ATTACHMENT: u32 = 4u;
const PROGRAM_FLUID: u32 = 5u;
const PROGRAM_SPRITE: u32 = 6u;
const PROGRAM_IMPOSTOR: u32 = 7u;
// Bone influences per vertex of the bone paths: 4 (default) or 8; must equal the asset's
// (vat_core::gpu::AssetConstants::influences), which is the stride of the joints/weights streams.
override INFLUENCES: u32 = 4u;

// Vertex formats: the values of VERTEX_FORMAT (vat_core::gpu::vertex_format_code).
const VERTEX_FORMAT_PACKED64: u32 = 0u;
const VERTEX_FORMAT_UNORM16: u32 = 1u;
const VERTEX_FORMAT_F16: u32 = 2u;
const VERTEX_FORMAT_F32: u32 = 3u;
const VERTEX_FORMAT_UNORM8: u32 = 4u;
const VERTEX_FORMAT_SPLIT8: u32 = 5u;
const VERTEX_FORMAT_SKIN_RESIDUAL: u32 = 6u;
// How the vertex animation texture(s) of VAT mode are decoded (vat_load_vertex): Packed64 (0, the
// default), Unorm16, F16, F32, Unorm8 or Split8; must equal the asset's
// (vat_core::gpu::AssetConstants::vertex_format). An override rather than a branch on the uniform:
// each pipeline keeps one decode path and the compiler drops the others. The textures a format reads
// sit in the bindings vat_core::gpu::vertex_texture_bindings names; the others hold 1x1 stand-ins.
override VERTEX_FORMAT: u32 = 0u;

// Shading specialisations of vat's own pipelines (vat_core::pipeline::ShaderVariantKey::materials
// and ::light_model), so a pipeline keeps one shading path and the compiler drops the others (a
// software rasteriser runs every side of a branch on a uniform). 0, the default, decides at run
// time from the uniforms, as a host's own shader that includes this source gets it.
// MATERIALS: 1 the palette (asset.material_count == 0; no tangent frames decoded), 2 the materials.
override MATERIALS: u32 = 0u;
const MATERIALS_RUN_TIME: u32 = 0u;
const MATERIALS_PALETTE: u32 = 1u;
const MATERIALS_MATERIALS: u32 = 2u;
// LIGHT_MODEL: 1 + the light model's code (LIGHT_MODEL_VAT, LIGHT_MODEL_PBR), or 0 for
// frame.light_model.
override LIGHT_MODEL: u32 = 0u;
// IMPOSTOR_VIEWS (vat_core::pipeline::ImpostorViews): how many of the tier's views a card pipeline
// reads; 0 decides per card by its mip level (impostor.wgsl, vat_impostor_one_view), 1 one view
// (the far cards' draw), 3 three views (the near cards' draw).
override IMPOSTOR_VIEWS: u32 = 0u;
const IMPOSTOR_VIEWS_PER_CARD: u32 = 0u;
const IMPOSTOR_VIEWS_ONE: u32 = 1u;
const IMPOSTOR_VIEWS_THREE: u32 = 3u;

// Whether the asset's fragments take the material path (vat_shade_material) rather than the palette.
fn vat_has_materials() -> bool {
    if MATERIALS == MATERIALS_PALETTE {
        return false;
    }
    if MATERIALS == MATERIALS_MATERIALS {
        return true;
    }
    return asset.material_count != 0u;
}

// The light model of this pipeline (LIGHT_MODEL_VAT or LIGHT_MODEL_PBR).
fn vat_light_model() -> u32 {
    if LIGHT_MODEL != 0u {
        return LIGHT_MODEL - 1u;
    }
    return frame.light_model;
}

// ClipRecord.flags bit 0: the clip wraps (looping); clear: one-shot, clamps (vat_core::gpu::CLIP_FLAG_LOOPING).
const CLIP_FLAG_LOOPING: u32 = 1u;
// InstanceRecord.clip_b bits 0..16 hold the clip index; bits 16..32 the fade duration as binary16.
const CLIP_INDEX_MASK: u32 = 0xFFFFu;
// Packed64: the 40 position bits start at bit 0; the 12 + 12 octahedral normal bits follow at 40 and 52.
const PACKED64_NORMAL_U_OFFSET: u32 = 40u;
const PACKED64_NORMAL_V_OFFSET: u32 = 52u;
const PACKED64_NORMAL_BITS: u32 = 12u;
// Threads per workgroup of cs_decode and cs_decode_bone (vat_core::gpu::DECODE_WORKGROUP_SIZE).
const DECODE_WORKGROUP_SIZE: u32 = 64u;
// Threads per workgroup of cs_cull (vat_core::gpu::CULL_WORKGROUP_SIZE).
const CULL_WORKGROUP_SIZE: u32 = 64u;
// Threads per workgroup of cs_scatter (vat_core::gpu::SCATTER_WORKGROUP_SIZE).
const SCATTER_WORKGROUP_SIZE: u32 = 64u;
// InstanceRecord.variant_bits (vat_core::instance::VARIANT_*): material variant in bits 0..8, the
// socket attachment shown, the instance hidden.
const VARIANT_MATERIAL_MASK: u32 = 0xFFu;
const VARIANT_ACCESSORY: u32 = 0x100u;
const VARIANT_HIDDEN: u32 = 0x200u;
// Slot A's and slot B's wrap codes in variant_bits (vat_core::instance::VARIANT_WRAP_*_SHIFT).
const VARIANT_WRAP_A_SHIFT: u32 = 10u;
const VARIANT_WRAP_B_SHIFT: u32 = 12u;
// Wrap codes (vat_core::playback::Wrap::code); 0 is the clip's own mode.
const WRAP_LOOP: u32 = 1u;
const WRAP_CLAMP: u32 = 2u;
const WRAP_PING_PONG: u32 = 3u;
// Texels (rows of a 3x4 affine) per bone per frame of the bone texture (vat_core::layout::TEXELS_PER_BONE).
const TEXELS_PER_BONE: u32 = 3u;
// LOD levels the per-LOD tables hold (vat_core::lod::MAX_LODS).
const MAX_LODS: u32 = 8u;
// u32 words of one indexed-indirect draw in draw_args: index_count, instance_count, first_index,
// base_vertex, first_instance (vat_core::gpu::DRAW_ARGS_WORDS).
const DRAW_ARGS_WORDS: u32 = 5u;
// Position a hidden instance's vertices collapse to: outside the clip volume, so nothing rasterises.
const HIDDEN_POSITION: vec4<f32> = vec4<f32>(2.0, 2.0, 2.0, 1.0);
// The fluid lookup entry of a collapsed corner (vat_core::fluid::COLLAPSED).
const FLUID_COLLAPSED: u32 = 0xFFFFFFFFu;
// vat_core::sprite::FLAG_ALIVE and FLAG_CONTINUES (word 3 of a particle texel).
const SPRITE_FLAG_ALIVE: u32 = 0x10000u;
const SPRITE_FLAG_CONTINUES: u32 = 0x20000u;
// vat_core::gpu::NO_TEXTURE_LAYER: a MaterialRecord without that texture.
const NO_TEXTURE_LAYER: u32 = 0xFFFFFFFFu;
// vat_core::gpu::MATERIAL_DOUBLE_SIDED (MaterialRecord.flags).
const MATERIAL_DOUBLE_SIDED: u32 = 1u;
const PI: f32 = 3.14159265358979;

// ---------------------------------------------------------------------------------------------------
// GPU-visible structs (twins of the Rust structs named alike)
// ---------------------------------------------------------------------------------------------------

// Per-frame values shared by every pass. Twin of vat_core::gpu::FrameUniforms (800 bytes).
struct FrameUniforms {
    // World to clip space of the camera, column-major.
    view_proj: mat4x4<f32>,
    // World to clip space of the sun's shadow map, column-major (identity when there are no shadows).
    light_view_proj: mat4x4<f32>,
    // Camera position in world space, metres.
    camera_position: vec3<f32>,
    // Epoch-relative clock, seconds: (now - epoch) as f32, re-based by the CPU before it loses precision.
    time: f32,
    // Unit vector from the scene towards the sun, world space.
    sun_direction: vec3<f32>,
    // Ambient light intensity, linear, 0..=1 typical.
    ambient: f32,
    // The 6 frustum planes (left, right, bottom, top, near, far) as (normal.xyz, d), normals pointing
    // inwards: a point p is inside when dot(normal, p) + d >= 0 for all six.
    frustum_planes: array<vec4<f32>, 6>,
    // Camera distances (metres) at which LOD 1..=8 start, ascending; 8 entries, unused ones past lod_count.
    lod_distances: array<vec4<f32>, 2>,
    // LOD bias in doublings of distance: the distance is multiplied by exp2(lod_bias) before it is
    // compared with lod_distances (0 = none), as vat_core::lod::LodThresholds::select does.
    lod_bias: f32,
    // Number of LOD levels of the drawn asset (1..=9); lod_distances[0..lod_count-1] are used.
    lod_count: u32,
    // Coarsest LOD that still decodes clip B while cross-fading (coarser LODs show clip A only).
    cross_fade_max_lod: u32,
    // Coarsest LOD drawn into the shadow map.
    shadow_max_lod: u32,
    // Colour of the sun's light, linear RGB, multiplying the direct term.
    sun_color: vec3<f32>,
    // Half the side of the ground square vs_ground draws at y = 0 around the camera, metres.
    ground_half_extent: f32,
    // The camera's world-to-clip matrix of the previous frame (motion vectors), column-major.
    previous_view_proj: mat4x4<f32>,
    // The crowd's clock at the previous frame, seconds (same epoch as the previous records).
    previous_time: f32,
    // Instance i's previous record is instances[previous_records + i]; 0: no history.
    previous_records: u32,
    // Sub-pixel offset of the colour and prepass draws in NDC (TAA): clip.xy += jitter * clip.w
    // (vat_jitter); (0, 0) for none. Culling, LOD and motion vectors use view_proj unjittered.
    jitter: vec2<f32>,
    // LIGHT_MODEL_PBR: the ambient light's colour, linear RGB in the host's units (0 otherwise).
    ambient_color: vec3<f32>,
    // How fs_lit lights surfaces: LIGHT_MODEL_VAT or LIGHT_MODEL_PBR (vat_core::gpu::LightModel).
    light_model: u32,
    // How the colour draws look the shadow map up (VatShadowLookup of shadow.wgsl; count 0: no
    // shadows, the map is not read).
    shadow: VatShadowLookup,
    // The impostor switch (vat_core::gpu::ImpostorSwitch): cards from effective distance
    // impostor_start (distance * exp2(lod_bias) / scale), the mesh until impostor_end, dithered
    // between; impostor_slot is the cards' draw (the mesh LOD count), 0 when no tier is drawn;
    // impostor_far_slot the draw of the cards drawn from one view (impostor_slot + 1), 0 when they
    // share impostor_slot's.
    impostor_start: f32,
    impostor_end: f32,
    impostor_slot: u32,
    impostor_far_slot: u32,
}

// Per-asset constants. Twin of vat_core::gpu::AssetConstants (240 bytes).
struct AssetConstants {
    // Lowest corner of the bake's bounding box, metres, object space.
    bounds_min: vec3<f32>,
    // Vertices per frame.
    vertex_count: u32,
    // Size of the bounding box per axis, metres (>= 0).
    bounds_extent: vec3<f32>,
    // Frames of all clips together.
    frame_count: u32,
    // Packed64 position bits per axis (x, y, z; sum 40, each <= 20); w reserved (0).
    position_bits: vec4<u32>,
    // Width of the animation texture in texels.
    texture_width: u32,
    // Number of ClipRecords in `clips`.
    clip_count: u32,
    // Bones per frame of the bone texture (0 without one).
    bone_count: u32,
    // vat_core::gpu::vertex_format_code of the asset's vertex format (what VERTEX_FORMAT must be set to).
    vertex_format: u32,
    // Width of the bone texture in texels (0 without one).
    bone_texture_width: u32,
    // Bone influences per vertex of the joints/weights streams (4 or 8; 0 without bones).
    influences: u32,
    // Vertices of all socket attachments together (0 without attachments).
    attachment_vertex_count: u32,
    // Morph targets of the live morph layer (0 without one: bone mode adds no deltas).
    morph_target_count: u32,
    // Width of the morph delta texture, min(vertex_count, 2048) (0 without a morph layer).
    morph_texture_width: u32,
    // Rows per band of the morph delta texture, ceil(vertex_count / morph_texture_width) (0 without).
    morph_rows_per_band: u32,
    // Width of the morph weights texture in texels (0 without a morph layer).
    morph_weights_width: u32,
    // Pieces of the rigid animation (0 for a soft asset). A rigid asset's bounds_min/bounds_extent
    // are the box of every vertex at every frame (culling), its frame_count the piece texture's.
    piece_count: u32,
    // Lowest corner of the rigid pivot box, metres, object space.
    pivot_min: vec3<f32>,
    // Width of the piece texture in texels (texel frame * piece_count + piece at (t % w, t / w)).
    piece_texture_width: u32,
    // Size of the rigid pivot box per axis, metres (>= 0).
    pivot_extent: vec3<f32>,
    // Width of the rigid vertex texture in texels (texel v at (v % w, v / w)).
    rigid_vertex_width: u32,
    // 1 when vat_tangent_texture holds the per-frame tangent frames, else 0.
    tangents: u32,
    // Materials of the asset (0: none, shaded with the built-in palette); `materials` holds
    // (1 + material_variant_count) * material_count records.
    material_count: u32,
    // Material variants: an instance's material variant v in 1..=material_variant_count draws
    // variant v - 1 (records v * material_count + id); 0 or past them, as authored.
    material_variant_count: u32,
    // Width of the fluid lookup texture in texels (0 for other assets). A fluid asset's vertex_count
    // is its pool's corners, its frame_count the fluid's frames.
    fluid_lookup_width: u32,
    // Sprite mode (vat_core::sprite): the box particle centres are quantised into (metres, object
    // space; bounds_min/bounds_extent are then the card box culling uses), the particle texture's
    // width and the largest card edge length (metres). Zero for other assets.
    particle_min: vec3<f32>,
    particle_texture_width: u32,
    particle_extent: vec3<f32>,
    particle_max_size: f32,
    // The impostor tier (vat_core::format::impostor::ImpostorTier): bounding sphere (object space,
    // metres), views per side (0: no tier), coverage (IMPOSTOR_HEMI or IMPOSTOR_FULL), tile side in
    // pixels, mip levels.
    impostor_centre: vec3<f32>,
    impostor_radius: f32,
    impostor_views_per_side: u32,
    impostor_coverage: u32,
    impostor_tile_size: u32,
    impostor_mip_levels: u32,
    // Layers of the normal-depth array and of each colour set of the colour array; the material
    // variants with a colour set of their own (variant v in 1..=impostor_material_variants reads
    // colour layer v * impostor_layers + l; any other variant set 0, the authored materials).
    impostor_layers: u32,
    impostor_material_variants: u32,
    // The skin-residual format's steps (vat_core::format::skin_residual::ResidualBounds): position
    // (metres), tangent-plane normal, octahedral normal; 0 for other formats. Its residual texture
    // (vat_texture) is texture_width texels wide.
    residual_position_step: f32,
    residual_normal_step: f32,
    residual_oct_step: f32,
    _residual_pad0: u32,
    _residual_pad1: u32,
    _residual_pad2: u32,
}

// One clip of the asset. Twin of vat_core::gpu::ClipRecord (32 bytes).
struct ClipRecord {
    // Index of the clip's first frame in the animation texture.
    first_frame: u32,
    // Stored frames, >= 1.
    frame_count: u32,
    // Bit 0: CLIP_FLAG_LOOPING.
    flags: u32,
    // Frames per second of the bake.
    fps: f32,
    // Duration of one cycle, seconds.
    duration: f32,
    // Metres travelled per cycle (0 if not locomotion).
    stride: f32,
    // The clip's first layer of the impostor texture arrays and its images there (0 without a tier).
    impostor_first_layer: u32,
    impostor_frames: u32,
}

// One character of a crowd. Twin of vat_core::instance::InstanceRecord (64 bytes).
struct InstanceRecord {
    // World position of the character's origin, metres.
    position: vec3<f32>,
    // Rotation about +Y, radians; 0 faces +Z.
    yaw: f32,
    clip_a: u32,
    // Cycles.
    phase_offset_a: f32,
    // Cycles per second.
    rate_a: f32,
    // Uniform scale (> 0).
    scale: f32,
    // Bits 0..16: clip index; bits 16..32: fade duration in seconds as binary16 (0 = no fade).
    clip_b: u32,
    phase_offset_b: f32,
    rate_b: f32,
    // Epoch-relative seconds.
    fade_start: f32,
    // Linear RGB colour multiplier.
    tint: vec3<f32>,
    variant_bits: u32,
}

// Which instances cs_decode decodes. Twin of vat_core::gpu::DecodeParams (16 bytes).
struct DecodeParams {
    // Index of the first instance record to decode.
    first_instance: u32,
    // Number of instance records to decode from first_instance on.
    instance_count: u32,
    _pad: vec2<u32>,
}

// Rest pose, material and surface attributes of one vertex. Twin of vat_core::gpu::RestVertex (48
// bytes).
struct RestVertex {
    // Bind-pose position, metres, object space (the RestPosition stream).
    position: vec3<f32>,
    // Material id (the MaterialId stream; 0 without one).
    material: u32,
    // Bind-pose unit normal (the RestNormal stream).
    normal: vec3<f32>,
    // Linear RGBA vertex colour (the Color0 stream) as unorm8x4 (unpack4x8unorm); white without.
    color: u32,
    // First texture coordinates (the Uv0 stream, glTF convention: origin top-left); 0 without.
    uv: vec2<f32>,
    _pad: vec2<u32>,
}

// One material. Twin of vat_core::gpu::MaterialRecord (64 bytes).
struct MaterialRecord {
    // Linear RGBA base colour factor.
    base_color_factor: vec4<f32>,
    // Linear RGB emitted light.
    emissive_factor: vec3<f32>,
    // Metalness, 0..=1.
    metallic: f32,
    // Perceptual roughness, 0..=1.
    roughness: f32,
    // Normal map x/y scale.
    normal_scale: f32,
    // Fragments with a lower alpha are discarded (0: opaque).
    alpha_cutoff: f32,
    // MATERIAL_DOUBLE_SIDED.
    flags: u32,
    // Layer of material_color_texture with the base colour, or NO_TEXTURE_LAYER.
    base_color_layer: u32,
    // Layer of material_data_texture with metallic (b) and roughness (g), or NO_TEXTURE_LAYER.
    metallic_roughness_layer: u32,
    // Layer of material_data_texture with the tangent-space normal map, or NO_TEXTURE_LAYER.
    normal_layer: u32,
    // Wrap codes (0 repeat, 1 clamp, 2 mirror), 4 bits per texture (u: low 2 bits, v: next 2): base
    // colour bits 0..4, metallic-roughness 4..8, normal 8..12.
    wrap: u32,
}

// One vertex of a socket attachment. Twin of vat_core::gpu::AttachmentVertex (32 bytes).
struct AttachmentVertex {
    // Position in the socket's bone space (the socket's local transform already applied), metres.
    position: vec3<f32>,
    // Material id.
    material: u32,
    // Unit normal in the bone's space.
    normal: vec3<f32>,
    // Index in `captures` of row 0 of frame 0 of the bone's capture track; frame f, row r is at
    // capture_row + f * 3 + r.
    capture_row: u32,
}

// What cs_cull culls. Twin of vat_core::gpu::CullParams (16 bytes).
struct CullParams {
    // Instance records to cull (records [0, record_count)).
    record_count: u32,
    // Entries per LOD region of `visible`: LOD l's list starts at l * capacity.
    capacity: u32,
    // Coarsest LOD whose instances also draw their attachments.
    attachment_max_lod: u32,
    // 1: count attachment draws (draw_args entries MAX_LODS + lod); 0: leave them at 0.
    attachments: u32,
}

// One decoded vertex in world space. Twin of vat_core::gpu::DecodedVertex (32 bytes).
struct DecodedVertex {
    // xyz: world position, metres; w = 1.
    position: vec4<f32>,
    // xyz: unit world normal; w = 0.
    normal: vec4<f32>,
    // xyz: unit world tangent (perpendicular to the normal); w: bitangent sign (+-1). Zero when the
    // asset has no tangent frames or the path decodes none.
    tangent: vec4<f32>,
}

// ---------------------------------------------------------------------------------------------------
// Bindings (vat_core::gpu::BINDINGS)
// ---------------------------------------------------------------------------------------------------

// Group 0: per frame.
@group(0) @binding(0) var<uniform> frame: FrameUniforms;
// The sun's shadow map: vat's own (one layer, the casters seen from the sun through
// frame.light_view_proj) or the host's (its cascades' layers, frame.shadow).
@group(0) @binding(1) var shadow_map: texture_depth_2d_array;
// Comparison sampler (less-equal, linear: 2x2 percentage-closer filtering).
@group(0) @binding(2) var shadow_sampler: sampler_comparison;

// Group 1: per asset.
// Vertex animation textures: every texture of the asset's format holds one texel per vertex per frame,
// texel t = frame * vertex_count + vertex at (t % texture_width, t / texture_width). Which binding holds
// which texture (vat_core::gpu::vertex_texture_bindings):
//   Packed64: vat_texture = Rg32Uint (position + normal bits);
//   Unorm16:  vat_texture = Rgba16Uint positions, vat_texture_1 = Rg16Uint octahedral 16 + 16 normals;
//   Unorm8:   vat_texture = Rgba8Uint positions, vat_texture_1 = Rg8Uint octahedral 8 + 8 normals;
//   Split8:   vat_texture = Rgba8Uint position high bytes, vat_texture_1 = Rgba8Uint low bytes,
//             vat_texture_2 = Rgba8Uint octahedral 16 + 16 normals (u hi, u lo, v hi, v lo);
//   F16, F32: vat_float_texture = Rgba16Float / Rgba32Float positions, vat_float_texture_1 =
//             Rg16Float / Rg32Float octahedral coordinates (textureLoad: never filtered, exact).
// Bindings a format does not use hold 1x1 zero stand-ins and are never read.
@group(1) @binding(0) var vat_texture: texture_2d<u32>;
@group(1) @binding(1) var<storage, read> clips: array<ClipRecord>;
@group(1) @binding(2) var<uniform> asset: AssetConstants;
// Bone texture: Rgba32Float, rows of the 3x4 affine joint_world * inverse_bind, texel
// t = (frame * bone_count + bone) * 3 + row at (t % bone_texture_width, t / bone_texture_width).
@group(1) @binding(3) var bone_texture: texture_2d<f32>;
// Bone index per influence per vertex: the u16 joints stream, two per word (low half first).
@group(1) @binding(4) var<storage, read> joints: array<u32>;
// Weight per influence per vertex.
@group(1) @binding(5) var<storage, read> weights: array<f32>;
@group(1) @binding(6) var<storage, read> rest_vertices: array<RestVertex>;
@group(1) @binding(7) var<storage, read> attachment_vertices: array<AttachmentVertex>;
// Capture tracks of the sockets' bones: per frame 3 rows (vec4) of the bone-to-object 3x4 affine.
@group(1) @binding(8) var<storage, read> captures: array<vec4<f32>>;
// Morph delta texture (bone mode's live morph layer): Rgba32Float, tiled, bands target0 position,
// target0 normal, target1 position, ...; vertex v of band b at (v % morph_texture_width,
// b * morph_rows_per_band + v / morph_texture_width); xyz = bind-space delta. 1x1 zero without one.
@group(1) @binding(9) var morph_texture: texture_2d<f32>;
// Morph weights track: Rgba32Float, the weights of targets 4g..4g+3 at global frame f in texel
// i = f * ceil(morph_target_count / 4) + g at (i % morph_weights_width, i / morph_weights_width).
// 1x1 zero without a morph layer.
@group(1) @binding(10) var morph_weights: texture_2d<f32>;
// The second and third unsigned vertex animation textures (Unorm16, Unorm8, Split8; see vat_texture).
@group(1) @binding(11) var vat_texture_1: texture_2d<u32>;
@group(1) @binding(12) var vat_texture_2: texture_2d<u32>;
// The float vertex animation textures (F16, F32; see vat_texture): positions, octahedral normals.
@group(1) @binding(13) var vat_float_texture: texture_2d<f32>;
@group(1) @binding(14) var vat_float_texture_1: texture_2d<f32>;
// Rigid mode (vat_core::rigid): the piece texture (Rgba32Uint, one texel per piece per frame: unorm16
// pivot in the pivot box, snorm16 quaternion) and the rigid vertex texture (Rgba32Uint, one texel per
// vertex: f32 bits of the piece's rest pivot, piece index). 1x1 stand-ins for a soft asset.
@group(1) @binding(15) var rigid_pieces: texture_2d<u32>;
@group(1) @binding(16) var rigid_vertices: texture_2d<u32>;
// Tangent frames (--tangents): Rgba16Float unit quaternions, one per vertex per frame at the texel of
// the vertex animation textures, the bitangent sign in the sign of w (vat_core::encoding::
// tangent_frame_to_quat). A 1x1 zero stand-in when the asset has none (asset.tangents == 0).
@group(1) @binding(17) var vat_tangent_texture: texture_2d<f32>;
// Materials (vat_core::gpu::material_records), indexed by the vertex's material id; one neutral
// record when asset.material_count == 0.
@group(1) @binding(18) var<storage, read> materials: array<MaterialRecord>;
// Base colour layers (Rgba8UnormSrgb, mipmapped) and data layers (Rgba8Unorm: normal maps,
// metallic-roughness), every layer of an array the same size; 1x1 stand-ins without.
@group(1) @binding(19) var material_color_texture: texture_2d_array<f32>;
@group(1) @binding(20) var material_data_texture: texture_2d_array<f32>;
// Trilinear, clamp to edge: each material's wrap is applied to the coordinates (vat_wrap_uv).
@group(1) @binding(21) var material_sampler: sampler;
// Fluid mode (vat_core::fluid): the lookup texture (Rgba32Uint, four u32 entries per texel: per frame
// per pool corner, the vat_texture texel of the corner's vertex, or FLUID_COLLAPSED).
@group(1) @binding(22) var fluid_lookup: texture_2d<u32>;
// Sprite mode (vat_core::sprite): the particle texture (Rgba32Uint, one texel per slot per frame).
@group(1) @binding(23) var sprite_particles: texture_2d<u32>;
// The impostor tier (impostor.wgsl): colour and coverage (Rgba8UnormSrgb) and normal, depth and
// material (Rgba8Unorm), one layer per clip image, each layer the views' tiles side by side,
// mipmapped; 1x1 stand-ins without a tier.
@group(1) @binding(24) var impostor_color: texture_2d_array<f32>;
@group(1) @binding(25) var impostor_normal_depth: texture_2d_array<f32>;

// Group 2: per crowd.
@group(2) @binding(0) var<storage, read> instances: array<InstanceRecord>;
@group(2) @binding(1) var<uniform> decode_params: DecodeParams;
@group(2) @binding(2) var<storage, read_write> decoded: array<DecodedVertex>;
// Record indices the vertex paths draw: instance_index -> instances[instance_list[instance_index]].
// The CPU path's instance list, or the visible lists written by cs_cull.
@group(2) @binding(3) var<storage, read> instance_list: array<u32>;
@group(2) @binding(4) var<uniform> cull_params: CullParams;
// Per-LOD visible lists written by cs_cull: LOD l's at [l * capacity, l * capacity + count).
@group(2) @binding(5) var<storage, read_write> visible: array<u32>;
// 2 * MAX_LODS indexed-indirect draws of DRAW_ARGS_WORDS words: bodies per LOD, then attachments per
// LOD. The CPU writes every word but instance_count, which cs_cull counts up from 0.
@group(2) @binding(6) var<storage, read_write> draw_args: array<atomic<u32>>;
// 16 bytes of user data per record (Crowd::set_user_data), for host fragment stages: index with
// VertexOutput.instance.
@group(2) @binding(7) var<storage, read> instance_user_data: array<vec4<u32>>;

// Group 3: the record scatter, cs_scatter's alone (its target is the buffer group 2 binds read-only).
// scatter_indices[0] is the count n, scatter_indices[1 + k] the destination of scatter_records[k].
@group(3) @binding(0) var<storage, read> scatter_indices: array<u32>;
@group(3) @binding(1) var<storage, read> scatter_records: array<InstanceRecord>;
@group(3) @binding(2) var<storage, read_write> scatter_target: array<InstanceRecord>;

// ---------------------------------------------------------------------------------------------------
// Playback
// ---------------------------------------------------------------------------------------------------

// The wrap of a slot's code (the low 2 bits of `code`) for a clip that loops or not:
// vat_core::playback::Wrap::from_code.
fn vat_wrap(code: u32, looping: bool) -> u32 {
    let c = code & 3u;
    if c == 0u {
        return select(WRAP_CLAMP, WRAP_LOOP, looping);
    }
    return c;
}

// Phase of a clip at `time` (epoch-relative seconds), in cycles: x = offset + time * rate, wrapped
// (vat_core::playback::Wrap::apply): loop takes the fractional part (in [0, 1]; rounding may give
// exactly 1.0, which vat_frame_sample maps to frame 0 of a looping clip), clamp clamps x into [0, 1],
// ping-pong is the triangle wave 1 - |1 - (x - 2 floor(x / 2))|.
fn vat_phase(offset: f32, time: f32, rate: f32, wrap: u32) -> f32 {
    let x = offset + time * rate;
    if wrap == WRAP_LOOP {
        return x - floor(x);
    }
    if wrap == WRAP_PING_PONG {
        let m = x - 2.0 * floor(x * 0.5);
        return 1.0 - abs(1.0 - m);
    }
    return clamp(x, 0.0, 1.0);
}

// Uniform Catmull-Rom weights of the frames [prev, f0, f1, next] at blend factor t in [0, 1].
fn vat_catmull_rom(t: f32) -> vec4<f32> {
    let t2 = t * t;
    let t3 = t2 * t;
    let w0 = 0.5 * (2.0 * t2 - t3 - t);
    let w1 = 0.5 * (3.0 * t3 - 5.0 * t2 + 2.0);
    let w2 = 0.5 * (4.0 * t2 - 3.0 * t3 + t);
    let w3 = 0.5 * (t3 - t2);
    return vec4<f32>(w0, w1, w2, w3);
}

// The four frames a sample blends and their weights, per INTERPOLATION.
struct FrameSample {
    // Clip-relative frame indices [prev, f0, f1, next], each in [0, frame_count).
    frames: vec4<u32>,
    // Weights of those frames.
    weights: vec4<f32>,
}

// Frames and weights at `phase` (cycles, from vat_phase) of a clip of `frame_count` (>= 1) frames.
// Looping clips wrap their neighbours; one-shot clips clamp them into [0, frame_count - 1].
// u32 arithmetic wraps: exact for frame_count <= 2^31.
fn vat_frame_sample(phase: f32, frame_count: u32, looping: bool) -> FrameSample {
    var t: f32;
    var prev: u32;
    var f0: u32;
    var f1: u32;
    var next: u32;
    if looping {
        let pos = phase * f32(frame_count);
        let fl = floor(pos);
        t = pos - fl;
        // f0 = u32(fl) % frame_count (fl <= frame_count, as phase <= 1), the neighbours wrapped by
        // compares: the same indices without three more integer divisions.
        f0 = u32(fl);
        if f0 >= frame_count {
            f0 = f0 % frame_count;
        }
        prev = select(f0 - 1u, frame_count - 1u, f0 == 0u);
        f1 = select(f0 + 1u, 0u, f0 + 1u >= frame_count);
        next = select(f1 + 1u, 0u, f1 + 1u >= frame_count);
    } else {
        let last = frame_count - 1u;
        let pos = phase * f32(last);
        let fl = floor(pos);
        t = pos - fl;
        f0 = min(u32(fl), last);
        prev = max(f0, 1u) - 1u;
        f1 = min(f0 + 1u, last);
        next = min(f0 + 2u, last);
    }
    var weights: vec4<f32>;
    if INTERPOLATION == INTERPOLATION_POINT {
        if t < 0.5 {
            weights = vec4<f32>(0.0, 1.0, 0.0, 0.0);
        } else {
            weights = vec4<f32>(0.0, 0.0, 1.0, 0.0);
        }
    } else if INTERPOLATION == INTERPOLATION_CUBIC {
        weights = vat_catmull_rom(t);
    } else {
        weights = vec4<f32>(0.0, 1.0 - t, t, 0.0);
    }
    return FrameSample(vec4<u32>(prev, f0, f1, next), weights);
}

// Weight of slot B of a cross-fade: 0 when fade_duration <= 0 (no fade), else
// clamp((time - fade_start) / fade_duration, 0, 1). Seconds.
fn vat_fade_weight(time: f32, fade_start: f32, fade_duration: f32) -> f32 {
    if fade_duration <= 0.0 {
        return 0.0;
    }
    return clamp((time - fade_start) / fade_duration, 0.0, 1.0);
}

// ---------------------------------------------------------------------------------------------------
// Packed64 decoding
// ---------------------------------------------------------------------------------------------------

// `count` bits (0..=32) starting at bit `offset` of the 64-bit value w0 | w1 << 32, with
// offset + count <= 64. A field may straddle bit 32: its low part comes from w0, its high part from w1.
fn vat_extract_bits(w0: u32, w1: u32, offset: u32, count: u32) -> u32 {
    if offset >= 32u {
        return extractBits(w1, offset - 32u, count);
    }
    if offset + count <= 32u {
        return extractBits(w0, offset, count);
    }
    let low_count = 32u - offset;
    return extractBits(w0, offset, low_count) | (extractBits(w1, 0u, count - low_count) << low_count);
}

// A quantised value q of `bits` (0..=20) bits back in [0, 1]: q / (2^bits - 1), a division; 0 for 0 bits.
fn vat_dequantize(q: u32, bits: u32) -> f32 {
    if bits == 0u {
        return 0.0;
    }
    let max_q = (1u << bits) - 1u;
    return f32(q) / f32(max_q);
}

// Quantised octahedral components q = (u, v) of `bits` bits each to a unit vector:
// o = f32(q) / f32(2^bits - 1) * 2 - 1 (div, mul, sub), then vat_oct_decode.
fn vat_oct_decode_quantized(q: vec2<u32>, bits: u32) -> vec3<f32> {
    let max_q = f32((1u << bits) - 1u);
    let ox = f32(q.x) / max_q * 2.0 - 1.0;
    let oy = f32(q.y) / max_q * 2.0 - 1.0;
    return vat_oct_decode(vec2<f32>(ox, oy));
}

// Octahedral decode (z is the fold axis) of o in [-1, 1]^2 to a unit vector.
fn vat_oct_decode(o: vec2<f32>) -> vec3<f32> {
    let ox = o.x;
    let oy = o.y;
    var v = vec3<f32>(ox, oy, 1.0 - abs(ox) - abs(oy));
    if v.z < 0.0 {
        // sgn(a) = 1 for a >= 0, else -1 (WGSL's sign() would give 0 at 0).
        v.x = (1.0 - abs(oy)) * select(-1.0, 1.0, ox >= 0.0);
        v.y = (1.0 - abs(ox)) * select(-1.0, 1.0, oy >= 0.0);
    }
    return vat_normalize(v);
}

// normalize(v), except that the zero vector (e.g. a cross-fade between opposite normals) gives +Z
// instead of an undefined result.
fn vat_normalize(v: vec3<f32>) -> vec3<f32> {
    if dot(v, v) > 0.0 {
        return normalize(v);
    }
    return vec3<f32>(0.0, 0.0, 1.0);
}

// One frame of one vertex, decoded but not yet interpolated.
struct VertexSample {
    // Position normalised into the bake's bounds, [0, 1] per axis.
    position: vec3<f32>,
    // Unit normal, object space (after interpolation: a blend, normalised once at the end).
    normal: vec3<f32>,
}

// Unpacks one Packed64 texel (w0 = .x, w1 = .y): position P = qx | qy << bx | qz << (bx + by) in the
// low 40 bits with bits = (bx, by, bz), octahedral normal u12 at bit 40 and v12 at bit 52.
fn vat_unpack_packed64(texel: vec2<u32>, bits: vec3<u32>) -> VertexSample {
    let w0 = texel.x;
    let w1 = texel.y;
    let qx = vat_extract_bits(w0, w1, 0u, bits.x);
    let qy = vat_extract_bits(w0, w1, bits.x, bits.y);
    let qz = vat_extract_bits(w0, w1, bits.x + bits.y, bits.z);
    let n = vec3<f32>(vat_dequantize(qx, bits.x), vat_dequantize(qy, bits.y), vat_dequantize(qz, bits.z));
    let u = vat_extract_bits(w0, w1, PACKED64_NORMAL_U_OFFSET, PACKED64_NORMAL_BITS);
    let v = vat_extract_bits(w0, w1, PACKED64_NORMAL_V_OFFSET, PACKED64_NORMAL_BITS);
    return VertexSample(n, vat_oct_decode_quantized(vec2<u32>(u, v), PACKED64_NORMAL_BITS));
}

// ---------------------------------------------------------------------------------------------------
// Texel decoding of every vertex format (vat_core::encoding::decode_vertex_texel is the CPU twin)
// ---------------------------------------------------------------------------------------------------

// Unorm positions q (`bits` bits per axis) back in [0, 1]: f32(q) / f32(2^bits - 1) per axis.
fn vat_dequantize3(q: vec3<u32>, bits: u32) -> vec3<f32> {
    return vec3<f32>(vat_dequantize(q.x, bits), vat_dequantize(q.y, bits), vat_dequantize(q.z, bits));
}

// The texel at `xy` of every texture of the VERTEX_FORMAT format, decoded: the normalised position
// and the unit normal of one vertex at one frame.
fn vat_decode_texel(xy: vec2<i32>) -> VertexSample {
    if VERTEX_FORMAT == VERTEX_FORMAT_UNORM16 {
        // Rgba16Uint (qx, qy, qz, 0) + Rg16Uint (u, v).
        let p = textureLoad(vat_texture, xy, 0);
        let o = textureLoad(vat_texture_1, xy, 0);
        return VertexSample(vat_dequantize3(p.xyz, 16u), vat_oct_decode_quantized(o.xy, 16u));
    }
    if VERTEX_FORMAT == VERTEX_FORMAT_UNORM8 {
        // Rgba8Uint (qx, qy, qz, 0) + Rg8Uint (u, v).
        let p = textureLoad(vat_texture, xy, 0);
        let o = textureLoad(vat_texture_1, xy, 0);
        return VertexSample(vat_dequantize3(p.xyz, 8u), vat_oct_decode_quantized(o.xy, 8u));
    }
    if VERTEX_FORMAT == VERTEX_FORMAT_SPLIT8 {
        // 16-bit values as high and low bytes: q = hi * 256 + lo (exact in u32).
        let hi = textureLoad(vat_texture, xy, 0);
        let lo = textureLoad(vat_texture_1, xy, 0);
        let o = textureLoad(vat_texture_2, xy, 0);
        let q = hi.xyz * 256u + lo.xyz;
        let uv = vec2<u32>(o.x * 256u + o.y, o.z * 256u + o.w);
        return VertexSample(vat_dequantize3(q, 16u), vat_oct_decode_quantized(uv, 16u));
    }
    if VERTEX_FORMAT == VERTEX_FORMAT_F16 || VERTEX_FORMAT == VERTEX_FORMAT_F32 {
        // The stored floats as they are (binary16 widens to f32 exactly), octahedral coordinates.
        let p = textureLoad(vat_float_texture, xy, 0);
        let o = textureLoad(vat_float_texture_1, xy, 0);
        return VertexSample(p.xyz, vat_oct_decode(o.xy));
    }
    // VERTEX_FORMAT_PACKED64.
    let texel = textureLoad(vat_texture, xy, 0);
    return vat_unpack_packed64(texel.xy, asset.position_bits.xyz);
}

// The coordinates (t % width, t / width) of texel t of a texture `width` texels wide, without an
// integer division (a CPU driver such as lavapipe runs one per SIMD lane; GPUs emulate it in several
// instructions): the f32 quotient is within 1 of t / width while t / width < 2^21 (the conversion of
// t, within 1 ULP, and WGSL's 2.5 ULP division give a relative error under 2^-21), so one correction
// step each way makes it exact. Every texel of a texture a device holds (at most 16384 = 2^14 rows)
// is in that range; the CPU reference's exact t % width and t / width are the same numbers
// (vat_core::backend::gpu's tests check the arithmetic with the quotient off by up to 4 ULP).
fn vat_texel_xy(t: u32, width: u32) -> vec2<i32> {
    let w = max(width, 1u);
    var y = u32(f32(t) / f32(w));
    var x = bitcast<i32>(t - y * w);
    if x < 0 {
        y = y - 1u;
        x = x + i32(w);
    } else if x >= i32(w) {
        y = y + 1u;
        x = x - i32(w);
    }
    return vec2<i32>(x, i32(y));
}

// ---------------------------------------------------------------------------------------------------
// Vertex decoding
// ---------------------------------------------------------------------------------------------------

// Loads and decodes texel t = frame * vertex_count + vertex (frame counted over all clips) in the
// VERTEX_FORMAT format. t is computed in u32: exact while frame_count * vertex_count <= 2^32, which
// every texture that fits the device (at most 16384 x 16384 = 2^28 texels) satisfies.
fn vat_load_vertex(frame_index: u32, vertex: u32) -> VertexSample {
    let t = frame_index * asset.vertex_count + vertex;
    return vat_decode_texel(vat_texel_xy(t, asset.texture_width));
}

// One vertex of a clip at the sampled frames `s` (from vat_clip_frames: absolute frames and their
// weights): interpolates the normalised positions and the unit normals of the sampled frames ("lerp
// before decode"). The normal of the result is not normalised.
fn vat_decode_clip(s: FrameSample, vertex: u32) -> VertexSample {
    let w = s.weights;
    if INTERPOLATION == INTERPOLATION_POINT {
        // One fetch: the frame of weight 1. Equals the 4-term sum (1 * b + 0 * finite terms) except
        // possibly for the sign of a zero component.
        var chosen = s.frames.z;
        if w.y == 1.0 {
            chosen = s.frames.y;
        }
        return vat_load_vertex(chosen, vertex);
    }
    let b = vat_load_vertex(s.frames.y, vertex);
    let c = vat_load_vertex(s.frames.z, vertex);
    if INTERPOLATION == INTERPOLATION_CUBIC {
        let a = vat_load_vertex(s.frames.x, vertex);
        let d = vat_load_vertex(s.frames.w, vertex);
        let position = ((w.x * a.position + w.y * b.position) + w.z * c.position) + w.w * d.position;
        let normal = ((w.x * a.normal + w.y * b.normal) + w.z * c.normal) + w.w * d.normal;
        return VertexSample(position, normal);
    }
    // Linear: weights [0, 1 - t, t, 0]; w1 * b + w2 * c equals the 4-term sum exactly (0 * finite == 0).
    return VertexSample(w.y * b.position + w.z * c.position, w.y * b.normal + w.z * c.normal);
}

// Decodes vertex `vertex` of instance `inst` at `time` to world space: clip A, cross-faded to clip B
// while a fade runs (clip B is not fetched while its weight is 0), positions decoded from the bounds
// after the blend, normals normalised once, then the instance transform
// world = position + R_y(yaw) * (scale * p) with x' = c * x + s * z, y' = y, z' = c * z - s * x.
fn vat_decode_vertex(inst: InstanceRecord, vertex: u32, time: f32) -> DecodedVertex {
    if VERTEX_FORMAT == VERTEX_FORMAT_SKIN_RESIDUAL {
        // No texel per vertex per frame: the skin plus the residual (bone.wgsl).
        return vat_skin_residual_vertex(inst, vertex, time);
    }
    let sa = vat_clip_frames(inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a);
    var mixed = vat_decode_clip(sa, vertex);
    let w = vat_instance_fade_weight(inst, time);
    var sb = sa;
    if w > 0.0 {
        sb = vat_clip_frames(inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b);
        let b = vat_decode_clip(sb, vertex);
        mixed.position = mixed.position * (1.0 - w) + b.position * w;
        mixed.normal = mixed.normal * (1.0 - w) + b.normal * w;
    }
    let p = asset.bounds_min + mixed.position * asset.bounds_extent;
    let n = vat_normalize(mixed.normal);
    var v = vat_to_world(inst, p, n);
    // The tangent of the clip with the larger weight (B once its fade weight is over one half).
    var st = sa;
    if w > 0.5 {
        st = sb;
    }
    v.tangent = vat_decode_tangent(inst, st, vertex, n);
    return v;
}

// Weight of clip B of an instance at `time`: the fade weight, or 0 in the plain variant (CROSS_FADE
// false), which then never fetches clip B.
fn vat_instance_fade_weight(inst: InstanceRecord, time: f32) -> f32 {
    if !CROSS_FADE {
        return 0.0;
    }
    let fade_duration = unpack2x16float(inst.clip_b).y;
    return vat_fade_weight(time, inst.fade_start, fade_duration);
}

// The instance transform of an object-space point p and unit normal n:
// world = position + R_y(yaw) * (scale * p) with x' = c * x + s * z, y' = y, z' = c * z - s * x.
fn vat_to_world(inst: InstanceRecord, p: vec3<f32>, n: vec3<f32>) -> DecodedVertex {
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let q = inst.scale * p;
    let world = inst.position + vec3<f32>(c * q.x + s * q.z, q.y, c * q.z - s * q.x);
    let world_normal = vat_normalize(vec3<f32>(c * n.x + s * n.z, n.y, c * n.z - s * n.x));
    return DecodedVertex(vec4<f32>(world, 1.0), vec4<f32>(world_normal, 0.0), vec4<f32>(0.0));
}

// The tangent of a tangent-frame quaternion (any non-zero length), xyz, with the bitangent sign in
// w: vat_core::encoding::quat_to_tangent_frame, in its order. A zero quaternion gives (+X, +1).
fn vat_quat_tangent(q: vec4<f32>) -> vec4<f32> {
    let sign = select(1.0, -1.0, q.w < 0.0);
    let d = ((q.x * q.x + q.y * q.y) + q.z * q.z) + q.w * q.w;
    if !(d > 0.0) {
        return vec4<f32>(1.0, 0.0, 0.0, 1.0);
    }
    let u = q * (1.0 / sqrt(d));
    return vec4<f32>(
        1.0 - 2.0 * (u.y * u.y + u.z * u.z),
        2.0 * (u.x * u.y + u.w * u.z),
        2.0 * (u.x * u.z - u.w * u.y),
        sign,
    );
}

// The world tangent of `inst` at the sampled frames `s` (of the clip with the larger fade weight)
// for the unit object normal `n`: the tangent frame of the sampled frame of larger weight (one texel
// fetch, not interpolated), made perpendicular to n (Gram-Schmidt), then turned by the instance's
// yaw. Zero without tangents.
fn vat_decode_tangent(inst: InstanceRecord, s: FrameSample, vertex: u32, n: vec3<f32>) -> vec4<f32> {
    // The palette's pipelines shade without tangents.
    if asset.tangents == 0u || MATERIALS == MATERIALS_PALETTE {
        return vec4<f32>(0.0);
    }
    var chosen = s.frames.z;
    if s.weights.y >= s.weights.z {
        chosen = s.frames.y;
    }
    let texel = chosen * asset.vertex_count + vertex;
    let t = vat_quat_tangent(textureLoad(vat_tangent_texture, vat_texel_xy(texel, asset.texture_width), 0));
    var p = t.xyz - n * dot(n, t.xyz);
    if dot(p, p) <= 1e-12 {
        p = vec3<f32>(1.0, 0.0, 0.0) - n * n.x;
    }
    let u = vat_normalize(p);
    let c = cos(inst.yaw);
    let sn = sin(inst.yaw);
    return vec4<f32>(c * u.x + sn * u.z, u.y, c * u.z - sn * u.x, t.w);
}

// ---------------------------------------------------------------------------------------------------
// Socket attachments
// ---------------------------------------------------------------------------------------------------

// A capture track's bone-to-object matrix at one clip and time: the sampled frames' matrices blended
// with the playback weights (the same frames and weights as the body).
fn vat_capture_clip(capture_row: u32, clip_index: u32, wrap_code: u32, phase_offset: f32, time: f32, rate: f32) -> Affine {
    let clip = clips[min(clip_index, arrayLength(&clips) - 1u)];
    let looping = (clip.flags & CLIP_FLAG_LOOPING) != 0u;
    let phase = vat_phase(phase_offset, time, rate, vat_wrap(wrap_code, looping));
    let s = vat_frame_sample(phase, clip.frame_count, looping);
    var m = Affine(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var f = 0u; f < 4u; f++) {
        let wf = s.weights[f];
        if wf == 0.0 {
            continue;
        }
        let row = capture_row + (clip.first_frame + s.frames[f]) * TEXELS_PER_BONE;
        m = vat_affine_add(m, Affine(captures[row], captures[row + 1u], captures[row + 2u]), wf);
    }
    return m;
}

// An attachment vertex of an instance at `time`, in world space.
fn vat_attachment_vertex(inst: InstanceRecord, vertex: u32, time: f32) -> DecodedVertex {
    let av = attachment_vertices[vertex];
    var m = vat_capture_clip(av.capture_row, inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a);
    let w = vat_instance_fade_weight(inst, time);
    if w > 0.0 {
        let b = vat_capture_clip(av.capture_row, inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b);
        m = vat_affine_add(vat_affine_scale(m, 1.0 - w), b, w);
    }
    return vat_to_world(inst, vat_affine_point(m, av.position), vat_affine_normal(m, av.normal));
}

// ---------------------------------------------------------------------------------------------------
// Shading
// ---------------------------------------------------------------------------------------------------

// Linear RGB of a material id (the procedural humanoid's: 0 skin, 1 shirt, 2 pants, 3 shoes, 4 cap)
// varied per instance by the material variant (bits 0..8 of variant_bits: shirt/cap colour in bits
// 0..3, pants in 3..5, skin tone in 5..7) and multiplied by the tint (shirt and cap only, so faces
// stay faces). Other ids are a neutral grey times the tint.
fn vat_material_color(material: u32, variant_bits: u32, tint: vec3<f32>) -> vec3<f32> {
    let v = variant_bits & VARIANT_MATERIAL_MASK;
    switch material {
        case 0u: {
            return vat_palette_skin((v >> 5u) & 3u);
        }
        case 1u: {
            return vat_palette_shirt(v & 7u) * tint;
        }
        case 2u: {
            return vat_palette_pants((v >> 3u) & 3u);
        }
        case 3u: {
            return vec3<f32>(0.08, 0.06, 0.05);
        }
        case 4u: {
            return vat_palette_shirt((v + 3u) & 7u) * tint;
        }
        default: {
            return vec3<f32>(0.6, 0.6, 0.6) * tint;
        }
    }
}

// The palette's tables (vat_material_color) as switches: a runtime index into a value array would
// build the array in function memory on every call.
fn vat_palette_shirt(i: u32) -> vec3<f32> {
    switch i {
        case 0u: { return vec3<f32>(0.70, 0.10, 0.08); }
        case 1u: { return vec3<f32>(0.08, 0.25, 0.70); }
        case 2u: { return vec3<f32>(0.10, 0.50, 0.15); }
        case 3u: { return vec3<f32>(0.80, 0.60, 0.05); }
        case 4u: { return vec3<f32>(0.45, 0.12, 0.55); }
        case 5u: { return vec3<f32>(0.85, 0.85, 0.82); }
        case 6u: { return vec3<f32>(0.05, 0.45, 0.50); }
        default: { return vec3<f32>(0.80, 0.30, 0.05); }
    }
}

fn vat_palette_pants(i: u32) -> vec3<f32> {
    switch i {
        case 0u: { return vec3<f32>(0.05, 0.07, 0.20); }
        case 1u: { return vec3<f32>(0.25, 0.20, 0.12); }
        case 2u: { return vec3<f32>(0.06, 0.06, 0.06); }
        default: { return vec3<f32>(0.30, 0.30, 0.28); }
    }
}

fn vat_palette_skin(i: u32) -> vec3<f32> {
    switch i {
        case 0u: { return vec3<f32>(0.80, 0.55, 0.42); }
        case 1u: { return vec3<f32>(0.55, 0.35, 0.22); }
        case 2u: { return vec3<f32>(0.30, 0.17, 0.10); }
        default: { return vec3<f32>(0.92, 0.70, 0.58); }
    }
}

// 1 where the sun reaches `world` (unit normal n), down to 1 - frame.shadow.strength in full
// shadow; 1 outside the shadow map or when shadows are off (vat_shadow_lookup of shadow.wgsl,
// appended).
fn vat_shadow(world: vec3<f32>, n: vec3<f32>) -> f32 {
    return vat_shadow_lookup(shadow_map, shadow_sampler, frame.shadow, world, n);
}

// What the vertex paths hand to fs_lit.
struct VertexOutput {
    @builtin(position) clip_position: vec4<f32>,
    // World position, metres.
    @location(0) world_position: vec3<f32>,
    // World normal (normalised again per fragment).
    @location(1) world_normal: vec3<f32>,
    // Linear RGBA colour the material's base colour is multiplied by: the vertex colour times the
    // instance tint (assets with materials); the built-in palette's albedo (material, variant and
    // tint) times the vertex colour (assets without).
    @location(2) color: vec4<f32>,
    // World tangent (xyz) and bitangent sign (w); zero without tangent frames (see DecodedVertex).
    @location(3) world_tangent: vec4<f32>,
    // First texture coordinates (RestVertex.uv).
    @location(4) uv: vec2<f32>,
    // The material: its id for the palette (asset.material_count == 0), else its record in
    // `materials` (the instance's variant applied).
    @location(5) @interpolate(flat) material: u32,
    // The drawn instance's record index (in `instances` and `instance_user_data`).
    @location(6) @interpolate(flat) instance: u32,
    // World position of the same vertex at the previous frame (its previous record at
    // frame.previous_time), metres; equal to world_position without motion vectors.
    @location(7) previous_world_position: vec3<f32>,
}

fn vat_hidden_output() -> VertexOutput {
    return VertexOutput(
        HIDDEN_POSITION, vec3<f32>(0.0), vec3<f32>(0.0, 1.0, 0.0), vec4<f32>(0.0), vec4<f32>(0.0),
        vec2<f32>(0.0), 0u, 0u, vec3<f32>(0.0),
    );
}

// The colour output of a decoded vertex with material `material`, texture coordinates `uv` and
// vertex colour `vertex_color`.
fn vat_lit_output(
    inst: InstanceRecord,
    v: DecodedVertex,
    material: u32,
    uv: vec2<f32>,
    vertex_color: vec4<f32>,
) -> VertexOutput {
    let world = v.position.xyz;
    var color = vertex_color * vec4<f32>(inst.tint, 1.0);
    var record = material;
    if !vat_has_materials() {
        color = vec4<f32>(vat_material_color(material, inst.variant_bits, inst.tint), 1.0) * vertex_color;
    } else {
        record = vat_material_record(inst.variant_bits, material);
    }
    return VertexOutput(vat_jitter(frame.view_proj * vec4<f32>(world, 1.0)), world, v.normal.xyz, color, v.tangent, uv, record, 0u, world);
}

// The record in `materials` of material id `material` drawn by an instance of variant bits
// `variant_bits` (an asset with materials): its material variant v in 1..=material_variant_count
// draws variant v - 1 (records v * material_count + id); 0 or past them, as authored.
fn vat_material_record(variant_bits: u32, material: u32) -> u32 {
    let v = variant_bits & VARIANT_MATERIAL_MASK;
    let slot = select(0u, v, v <= asset.material_variant_count);
    return slot * asset.material_count + min(material, asset.material_count - 1u);
}

// A clip position of the camera (frame.view_proj) moved by frame.jitter, a constant offset in NDC
// (TAA's sub-pixel jitter): the clip position every colour and prepass vertex stage outputs.
fn vat_jitter(clip: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(clip.xy + frame.jitter * clip.w, clip.zw);
}

// vat_lit_output with the material, coordinates and colour of body vertex `vertex`.
fn vat_lit_output_of(inst: InstanceRecord, v: DecodedVertex, vertex: u32) -> VertexOutput {
    let rest = rest_vertices[vertex];
    return vat_lit_output(inst, v, rest.material, rest.uv, unpack4x8unorm(rest.color));
}

// The record drawn as instance `instance_index` of a draw (its first_instance included).
fn vat_drawn_instance(instance_index: u32) -> InstanceRecord {
    return instances[instance_list[instance_index]];
}

// The previous frame's record of record `index` (motion vectors): the second half of `instances`,
// or the current record without history.
fn vat_previous_instance(index: u32) -> InstanceRecord {
    if frame.previous_records == 0u {
        return instances[index];
    }
    return instances[frame.previous_records + index];
}

// The screen motion of a fragment since the previous frame: uv_now - uv_previous in fractions of the
// target (uv = (0.5 + 0.5 x, 0.5 - 0.5 y) of the NDC: x right, y down), from the fragment's world
// position now (frame.view_proj) and at the previous frame (frame.previous_view_proj). Zero where
// the previous position was behind the previous camera (w <= 0).
fn vat_motion_vector(in: VertexOutput) -> vec2<f32> {
    let now = frame.view_proj * vec4<f32>(in.world_position, 1.0);
    let before = frame.previous_view_proj * vec4<f32>(in.previous_world_position, 1.0);
    if now.w <= 0.0 || before.w <= 0.0 {
        return vec2<f32>(0.0);
    }
    let d = now.xy / now.w - before.xy / before.w;
    return vec2<f32>(0.5 * d.x, -0.5 * d.y);
}

// What the motion-vector fragment stages write: the colour (location 0) and the motion (location 1;
// vat_motion_vector in .xy, .zw = 0).
struct LitMotionOutput {
    @location(0) color: vec4<f32>,
    @location(1) motion: vec4<f32>,
}

// How far record `inst` is into the impostor switch (vat_core::format::impostor::switch_fade): 0
// while only its mesh draws (or no tier is drawn), 1 once only its card does.
fn vat_switch_fade(inst: InstanceRecord) -> f32 {
    if frame.impostor_slot == 0u {
        return 0.0;
    }
    return vat_switch_fade_at(vat_effective_distance(inst));
}

// Effective distance of record `inst` for the impostor switch: the camera's distance to its bounds'
// centre times exp2(lod_bias), over its scale.
fn vat_effective_distance(inst: InstanceRecord) -> f32 {
    let centre_object = asset.bounds_min + 0.5 * asset.bounds_extent;
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let q = inst.scale * centre_object;
    let centre = inst.position + vec3<f32>(c * q.x + s * q.z, q.y, c * q.z - s * q.x);
    return distance(centre, frame.camera_position) * exp2(frame.lod_bias) / inst.scale;
}

// vat_switch_fade of an effective distance.
fn vat_switch_fade_at(effective: f32) -> f32 {
    if !(effective >= frame.impostor_start) {
        return 0.0;
    }
    if effective >= frame.impostor_end || frame.impostor_end <= frame.impostor_start {
        return 1.0;
    }
    return (effective - frame.impostor_start) / (frame.impostor_end - frame.impostor_start);
}

// The ordered 4x4 dither threshold of the pixel at window position `p`
// (vat_core::format::impostor::switch_dither): (bayer + 0.5) / 16.
fn vat_switch_dither(p: vec2<f32>) -> f32 {
    // The 4x4 Bayer matrix by its bits (no table: a runtime index into one would build it in
    // function memory per call): 8 (x0 ^ y0) + 4 y0 + 2 (x1 ^ y1) + y1.
    let x = u32(p.x) & 3u;
    let y = u32(p.y) & 3u;
    let b = x ^ y;
    let bayer = ((b & 1u) << 3u) | ((y & 1u) << 2u) | (b & 2u) | ((y >> 1u) & 1u);
    return (f32(bayer) + 0.5) / 16.0;
}

// The mesh's half of the switch's cross-fade: discards the pixels the card takes (dither < fade).
// Only body programs share their crowd's switch (rigid, fluid and sprite assets have no tier).
fn vat_switch_discard(in: VertexOutput) {
    if frame.impostor_slot != 0u && (PROGRAM == PROGRAM_VAT || PROGRAM == PROGRAM_BONE || PROGRAM == PROGRAM_REST) {
        if vat_switch_dither(in.clip_position.xy) < vat_switch_fade(instances[in.instance]) {
            discard;
        }
    }
}

// Whether the mesh of record `inst` casts its shadow: until the switch's fade is half way (the card
// casts from there on).
fn vat_mesh_casts(inst: InstanceRecord) -> bool {
    return vat_switch_fade(inst) < 0.5;
}

fn vat_is_hidden(inst: InstanceRecord) -> bool {
    return (inst.variant_bits & VARIANT_HIDDEN) != 0u;
}

// Lambert sun (its colour, the shadow map) plus a sky/ground ambient; alpha 1. The light model of
// vat_core::gpu::FrameUniforms' docs.
fn vat_shade(in: VertexOutput) -> vec4<f32> {
    let n = vat_normalize(in.world_normal);
    if vat_light_model() == LIGHT_MODEL_PBR {
        // The palette's colours as a default StandardMaterial: dielectric, perceptual roughness 0.5.
        return vec4<f32>(vat_light_pbr(in.color.rgb, 0.0, 0.5, n, in.world_position), 1.0);
    }
    let sun = vat_normalize(frame.sun_direction);
    let direct = max(dot(n, sun), 0.0) * vat_shadow(in.world_position, n) * frame.sun_color;
    let sky = mix(0.55, 1.0, 0.5 + 0.5 * n.y);
    let light = frame.ambient * sky + (1.0 - frame.ambient) * direct;
    return vec4<f32>(in.color.rgb * light, 1.0);
}

// FrameUniforms::light_model: vat's own light model (a Lambert sun and a sky-tinted ambient share,
// see vat_shade and vat_shade_material).
const LIGHT_MODEL_VAT: u32 = 0u;
// FrameUniforms::light_model: the physically based model of Bevy's StandardMaterial (Filament's)
// for one directional light and a uniform ambient light (vat_light_pbr).
const LIGHT_MODEL_PBR: u32 = 1u;

// Filament's split-sum DFG terms, the polynomial fit of Karis ("Physically based shading on mobile"):
// (scale, bias) of F0 for a perceptual roughness and n . v; kept above 0 for the divisions below.
fn vat_dfg(perceptual_roughness: f32, n_dot_v: f32) -> vec2<f32> {
    let r = perceptual_roughness * vec4<f32>(-1.0, -0.0275, -0.572, 0.022) + vec4<f32>(1.0, 0.0425, 1.04, -0.04);
    let a004 = min(r.x * r.x, exp2(-9.28 * n_dot_v)) * r.x + r.y;
    return max(vec2<f32>(-1.04, 1.04) * a004 + r.zw, vec2<f32>(5e-5));
}

// Radiance towards the camera of a surface lit by the sun (frame.sun_color: its illuminance times
// colour and the camera's exposure, along frame.sun_direction, shadowed) and a uniform ambient light
// (frame.ambient_color), in the physically based model of Bevy's StandardMaterial (Filament's):
// Burley diffuse; GGX distribution, height-correlated Smith visibility and Schlick Fresnel (f90 from
// F0) with multiple-scattering compensation; F0 = 0.04 for dielectrics (reflectance 0.5) and the base
// colour for metals; perceptual roughness clamped to 0.089..1; ambient through the split-sum terms
// with Fresnel-based specular occlusion. `n` is the unit shading normal, `world` the position.
fn vat_light_pbr(base: vec3<f32>, metallic: f32, perceptual_roughness: f32, n: vec3<f32>, world: vec3<f32>) -> vec3<f32> {
    let pr = clamp(perceptual_roughness, 0.089, 1.0);
    let a = pr * pr;
    let a2 = a * a;
    let v = vat_normalize(frame.camera_position - world);
    let l = vat_normalize(frame.sun_direction);
    let h = vat_normalize(l + v);
    let n_dot_v = max(dot(n, v), 1e-4);
    let n_dot_l = saturate(dot(n, l));
    let n_dot_h = saturate(dot(n, h));
    let l_dot_h = saturate(dot(l, h));
    let f0 = mix(vec3<f32>(0.04), base, saturate(metallic));
    let diffuse_color = base * (1.0 - saturate(metallic));
    let dfg = vat_dfg(pr, n_dot_v);
    // Specular: D (written to stay accurate near n . h = 1), V, F, then the energy lost to single
    // scattering put back.
    let k = a / (1.0 - n_dot_h * n_dot_h + (n_dot_h * a) * (n_dot_h * a));
    let distribution = k * k / PI;
    let lambda_v = n_dot_l * sqrt((n_dot_v - a2 * n_dot_v) * n_dot_v + a2);
    let lambda_l = n_dot_v * sqrt((n_dot_l - a2 * n_dot_l) * n_dot_l + a2);
    let visibility = 0.5 / (lambda_v + lambda_l);
    let f90 = saturate(dot(f0, vec3<f32>(50.0 * 0.33)));
    let fresnel = f0 + (f90 - f0) * pow(1.0 - l_dot_h, 5.0);
    let specular = distribution * visibility * fresnel * (1.0 + f0 * (1.0 / (dfg.x + dfg.y) - 1.0));
    // Burley diffuse.
    let burley_f90 = 0.5 + 2.0 * a * l_dot_h * l_dot_h;
    let light_scatter = 1.0 + (burley_f90 - 1.0) * pow(1.0 - n_dot_l, 5.0);
    let view_scatter = 1.0 + (burley_f90 - 1.0) * pow(1.0 - n_dot_v, 5.0);
    let diffuse = diffuse_color * (light_scatter * view_scatter / PI);
    let direct = (diffuse + specular) * frame.sun_color * n_dot_l * vat_shadow(world, n);
    // Ambient: the diffuse lobe at full roughness, the specular one at the surface's.
    let dfg_rough = vat_dfg(1.0, n_dot_v);
    let diffuse_ambient = diffuse_color * dfg_rough.x + dfg_rough.y;
    let specular_ambient = (f0 * dfg.x + dfg.y) * f90;
    return direct + (diffuse_ambient + specular_ambient) * frame.ambient_color;
}

// One texture coordinate wrapped by `code` (0 repeat, 1 clamp to edge, 2 mirrored repeat) into 0..1.
fn vat_wrap_coordinate(c: f32, code: u32) -> f32 {
    switch code {
        case 1u: {
            return clamp(c, 0.0, 1.0);
        }
        case 2u: {
            let t = c - 2.0 * floor(c * 0.5);
            return select(t, 2.0 - t, t > 1.0);
        }
        default: {
            return c - floor(c);
        }
    }
}

// `uv` wrapped by the 4-bit wrap code `codes` (u in bits 0..2, v in 2..4).
fn vat_wrap_uv(uv: vec2<f32>, codes: u32) -> vec2<f32> {
    return vec2<f32>(vat_wrap_coordinate(uv.x, codes & 3u), vat_wrap_coordinate(uv.y, (codes >> 2u) & 3u));
}

// The material record of fragment `in` (assets with materials): `in.material`, clamped to the
// records of `materials`.
fn vat_fragment_material(in: VertexOutput) -> MaterialRecord {
    return materials[min(in.material, (asset.material_variant_count + 1u) * asset.material_count - 1u)];
}

// The base colour of material `m` at fragment `in`: factor x texture (sRGB decoded by the sampler)
// x in.color. Discards the back faces of a single-sided material and what its alpha cutoff masks
// (the discards of fs_lit and of the prepass fragment stages alike).
fn vat_material_base(in: VertexOutput, m: MaterialRecord, front: bool, ddx: vec2<f32>, ddy: vec2<f32>) -> vec4<f32> {
    let double_sided = (m.flags & MATERIAL_DOUBLE_SIDED) != 0u;
    if !front && !double_sided {
        discard;
    }
    var base = m.base_color_factor * in.color;
    if m.base_color_layer != NO_TEXTURE_LAYER {
        let uv = vat_wrap_uv(in.uv, m.wrap & 15u);
        base *= textureSampleGrad(material_color_texture, material_sampler, uv, m.base_color_layer, ddx, ddy);
    }
    if base.a < m.alpha_cutoff {
        discard;
    }
    return base;
}

// The unit shading normal of material `m` at fragment `in`, world space: the interpolated normal,
// negated on back faces, then the tangent-space normal map along the decoded tangent frame.
fn vat_material_normal(in: VertexOutput, m: MaterialRecord, front: bool, ddx: vec2<f32>, ddy: vec2<f32>) -> vec3<f32> {
    var n = vat_normalize(in.world_normal);
    if !front {
        n = -n;
    }
    let t = in.world_tangent;
    if m.normal_layer != NO_TEXTURE_LAYER && dot(t.xyz, t.xyz) > 0.0 {
        let uv = vat_wrap_uv(in.uv, (m.wrap >> 8u) & 15u);
        let texel = textureSampleGrad(material_data_texture, material_sampler, uv, m.normal_layer, ddx, ddy).xyz;
        let tn = vec3<f32>((texel.xy * 2.0 - 1.0) * m.normal_scale, texel.z * 2.0 - 1.0);
        // Gram-Schmidt against the interpolated normal; glTF's bitangent is cross(n, t) * w.
        let tangent = vat_normalize(t.xyz - n * dot(n, t.xyz));
        let bitangent = cross(n, tangent) * select(-1.0, 1.0, t.w >= 0.0);
        n = vat_normalize(tangent * tn.x + bitangent * tn.y + n * tn.z);
    }
    return n;
}

// The material shading of fs_lit (assets with materials): base colour = factor x texture (sRGB
// decoded by the sampler) x in.color; alpha-mask discard; tangent-space normal map along the
// decoded tangent frame; metallic-roughness GGX specular (Smith-Schlick visibility, Schlick
// Fresnel) plus Lambert diffuse from the sun (shadowed), an ambient term of the same sky as
// vat_shade, and emission. `ddx`/`ddy` are the unwrapped coordinates' derivatives (taken in
// uniform control flow), so wrapping never breaks the mip selection at a seam.
fn vat_shade_material(in: VertexOutput, front: bool, ddx: vec2<f32>, ddy: vec2<f32>) -> vec4<f32> {
    let m = vat_fragment_material(in);
    let base = vat_material_base(in, m, front, ddx, ddy);
    var metallic = m.metallic;
    var roughness = m.roughness;
    if m.metallic_roughness_layer != NO_TEXTURE_LAYER {
        let uv = vat_wrap_uv(in.uv, (m.wrap >> 4u) & 15u);
        let mr = textureSampleGrad(material_data_texture, material_sampler, uv, m.metallic_roughness_layer, ddx, ddy);
        roughness *= mr.g;
        metallic *= mr.b;
    }
    let n = vat_material_normal(in, m, front, ddx, ddy);
    return vec4<f32>(vat_light_material(base.rgb, metallic, roughness, n, in.world_position) + m.emissive_factor, 1.0);
}

// Light reflected towards the camera by a surface of a material's base colour (linear RGB),
// metalness and perceptual roughness at world position `world` with unit shading normal `n`, in the
// frame's light model: vat_light_pbr, or vat's (a Cook-Torrance sun in vat_shade's units and a
// sky-tinted ambient share). Emission is the caller's.
fn vat_light_material(base: vec3<f32>, metallic: f32, roughness: f32, n: vec3<f32>, world: vec3<f32>) -> vec3<f32> {
    if vat_light_model() == LIGHT_MODEL_PBR {
        return vat_light_pbr(base, metallic, roughness, n, world);
    }
    let l = vat_normalize(frame.sun_direction);
    let v = vat_normalize(frame.camera_position - world);
    let h = vat_normalize(l + v);
    let n_dot_l = max(dot(n, l), 0.0);
    let n_dot_v = max(dot(n, v), 1e-4);
    let n_dot_h = max(dot(n, h), 0.0);
    let v_dot_h = max(dot(v, h), 0.0);
    let alpha = max(roughness * roughness, 2e-3);
    let alpha2 = alpha * alpha;
    let d_denominator = n_dot_h * n_dot_h * (alpha2 - 1.0) + 1.0;
    let distribution = alpha2 / (PI * d_denominator * d_denominator);
    let k = (roughness + 1.0) * (roughness + 1.0) / 8.0;
    let visibility = 1.0 / ((n_dot_l * (1.0 - k) + k) * (n_dot_v * (1.0 - k) + k) * 4.0);
    let f0 = mix(vec3<f32>(0.04), base, metallic);
    let fresnel = f0 + (vec3<f32>(1.0) - f0) * pow(1.0 - v_dot_h, 5.0);
    let diffuse = base * (1.0 - metallic);
    // vat_shade's units: a white Lambert surface facing the sun reflects sun_color, so the BRDF is
    // scaled by PI.
    let brdf = diffuse * (vec3<f32>(1.0) - fresnel) + fresnel * distribution * visibility * PI;
    let direct = brdf * n_dot_l * vat_shadow(world, n) * frame.sun_color;
    let sky = mix(0.55, 1.0, 0.5 + 0.5 * n.y);
    let ambient = (diffuse + f0 * (1.0 - 0.5 * roughness)) * frame.ambient * sky;
    return ambient + (1.0 - frame.ambient) * direct;
}

// ---------------------------------------------------------------------------------------------------
// Culling and LOD
// ---------------------------------------------------------------------------------------------------

// LOD of an object `distance` metres away: the number of lod_distances <= distance * exp2(lod_bias)
// (vat_core::lod::LodThresholds::select); NaN selects LOD 0.
fn vat_select_lod(distance: f32) -> u32 {
    let effective = distance * exp2(frame.lod_bias);
    var lod = 0u;
    for (var i = 0u; i + 1u < min(frame.lod_count, MAX_LODS); i++) {
        if frame.lod_distances[i / 4u][i % 4u] <= effective {
            lod += 1u;
        }
    }
    return lod;
}

// ---------------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------------

// Decodes every vertex of instances [first_instance, first_instance + instance_count) at frame.time into
// decoded[(instance - first_instance) * vertex_count + vertex]. One thread per (instance, vertex) pair,
// linear index = global_id.y * (num_workgroups.x * DECODE_WORKGROUP_SIZE) + global_id.x, so a dispatch
// may spread over y when it needs more than 65535 workgroups in x. Threads past the end, past the
// instance table or past the output buffer do nothing.
@compute @workgroup_size(DECODE_WORKGROUP_SIZE)
fn cs_decode(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let index = global_id.y * (num_workgroups.x * DECODE_WORKGROUP_SIZE) + global_id.x;
    let vertex_count = asset.vertex_count;
    if vertex_count == 0u || index / vertex_count >= decode_params.instance_count {
        return;
    }
    let instance_index = decode_params.first_instance + index / vertex_count;
    let vertex = index % vertex_count;
    if instance_index >= arrayLength(&instances) || index >= arrayLength(&decoded) {
        return;
    }
    decoded[index] = vat_decode_vertex(instances[instance_index], vertex, frame.time);
}

// GPU culling, one thread per record (linear index as in cs_decode): skips hidden records; tests the
// bounding sphere (centre = position + R_y(yaw) * (scale * box centre), radius = scale * |extent| / 2)
// against the six frustum planes (outside when dot(n, c) + d < -r for one plane); picks the LOD from
// the camera's distance to the centre (vat_select_lod); appends the record index to that LOD's list
// and counts it in that LOD's draw (and its attachment draw up to attachment_max_lod).
@compute @workgroup_size(CULL_WORKGROUP_SIZE)
fn cs_cull(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let index = global_id.y * (num_workgroups.x * CULL_WORKGROUP_SIZE) + global_id.x;
    if index >= cull_params.record_count || index >= arrayLength(&instances) {
        return;
    }
    let inst = instances[index];
    if vat_is_hidden(inst) {
        return;
    }
    let centre_object = asset.bounds_min + 0.5 * asset.bounds_extent;
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let q = inst.scale * centre_object;
    let centre = inst.position + vec3<f32>(c * q.x + s * q.z, q.y, c * q.z - s * q.x);
    let radius = inst.scale * (0.5 * length(asset.bounds_extent));
    for (var p = 0u; p < 6u; p++) {
        let plane = frame.frustum_planes[p];
        if dot(plane.xyz, centre) + plane.w < -radius {
            return;
        }
    }
    let camera_distance = distance(centre, frame.camera_position);
    // The impostor switch: cards from impostor_start on (their draw is impostor_slot), the mesh
    // until impostor_end; both in between (vat_switch_discard dithers them).
    if frame.impostor_slot != 0u {
        let effective = camera_distance * exp2(frame.lod_bias) / inst.scale;
        if effective >= frame.impostor_start {
            // Cards drawn from one view have a draw of their own (a pipeline without the
            // three-view path), when the frame gives them one.
            var card = frame.impostor_slot;
            if frame.impostor_far_slot != 0u && vat_impostor_level_at(effective) >= IMPOSTOR_SINGLE_VIEW_LEVEL {
                card = frame.impostor_far_slot;
            }
            card = min(card, MAX_LODS - 1u);
            let k = atomicAdd(&draw_args[card * DRAW_ARGS_WORDS + 1u], 1u);
            if k < cull_params.capacity {
                visible[card * cull_params.capacity + k] = index;
            }
            if effective >= frame.impostor_end {
                return;
            }
        }
    }
    let lod = min(vat_select_lod(camera_distance), MAX_LODS - 1u);
    let slot = atomicAdd(&draw_args[lod * DRAW_ARGS_WORDS + 1u], 1u);
    if slot < cull_params.capacity {
        visible[lod * cull_params.capacity + slot] = index;
    }
    if cull_params.attachments != 0u && lod <= cull_params.attachment_max_lod {
        atomicAdd(&draw_args[(MAX_LODS + lod) * DRAW_ARGS_WORDS + 1u], 1u);
    }
}

// Copies the changed records the CPU packed (vat_core::gpu::ScatterPlan) into the record buffer: one
// thread per record. Out-of-range counts and destinations are skipped, never written.
@compute @workgroup_size(SCATTER_WORKGROUP_SIZE)
fn cs_scatter(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let k = global_id.y * (num_workgroups.x * SCATTER_WORKGROUP_SIZE) + global_id.x;
    let n = min(scatter_indices[0], arrayLength(&scatter_records));
    if k >= n || k + 1u >= arrayLength(&scatter_indices) {
        return;
    }
    let destination = scatter_indices[k + 1u];
    if destination < arrayLength(&scatter_target) {
        scatter_target[destination] = scatter_records[k];
    }
}

// VAT mode, colour pass: `vertex_index` is the original vertex id (LOD index buffer), the instance's
// record comes from the instance list.
@vertex
fn vs_vat(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_vat(vertex, instance_index);
}

// What vs_vat outputs for vertex `vertex` of draw instance `instance_index` (vat_vertex with PROGRAM_VAT).
fn vat_output_vat(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let v = vat_decode_vertex(inst, vertex, frame.time);
    var out = vat_lit_output_of(inst, v, vertex);
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        out.previous_world_position = vat_decode_vertex(previous, vertex, frame.previous_time).position.xyz;
    }
    return out;
}

// VAT mode, shadow pass: the same displacement, projected by the sun.
@vertex
fn vs_vat_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) || !vat_mesh_casts(inst) {
        return HIDDEN_POSITION;
    }
    let v = vat_decode_vertex(inst, vertex, frame.time);
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}

// Rest mode, colour pass: the bind pose, undeformed (nothing of the animation is fetched): the
// static-instance baseline of the VAT's cost.
@vertex
fn vs_rest(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_rest(vertex, instance_index);
}

// What vs_rest outputs for vertex `vertex` of draw instance `instance_index` (vat_vertex with PROGRAM_REST).
fn vat_output_rest(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let rest = rest_vertices[vertex];
    var out = vat_lit_output_of(inst, vat_to_world(inst, rest.position, rest.normal), vertex);
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        out.previous_world_position = vat_to_world(previous, rest.position, rest.normal).position.xyz;
    }
    return out;
}

// Rest mode, shadow pass.
@vertex
fn vs_rest_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) || !vat_mesh_casts(inst) {
        return HIDDEN_POSITION;
    }
    let rest = rest_vertices[vertex];
    return frame.light_view_proj * vec4<f32>(vat_to_world(inst, rest.position, rest.normal).position.xyz, 1.0);
}

// Socket attachments, colour pass: `vertex_index` indexes attachment_vertices; instances without
// VARIANT_ACCESSORY (or hidden) collapse.
@vertex
fn vs_attachment(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_attachment(vertex, instance_index);
}

// What vs_attachment outputs for vertex `vertex` of draw instance `instance_index` (vat_vertex with PROGRAM_ATTACHMENT).
fn vat_output_attachment(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) || (inst.variant_bits & VARIANT_ACCESSORY) == 0u {
        return vat_hidden_output();
    }
    let v = vat_attachment_vertex(inst, vertex, frame.time);
    var out = vat_lit_output(inst, v, attachment_vertices[vertex].material, vec2<f32>(0.0), vec4<f32>(1.0));
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        out.previous_world_position = vat_attachment_vertex(previous, vertex, frame.previous_time).position.xyz;
    }
    return out;
}

// Socket attachments, shadow pass.
@vertex
fn vs_attachment_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) || (inst.variant_bits & VARIANT_ACCESSORY) == 0u {
        return HIDDEN_POSITION;
    }
    let v = vat_attachment_vertex(inst, vertex, frame.time);
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}

// An optional ground: a square of side 2 * ground_half_extent at y = 0 centred below the camera, two
// triangles (6 vertices, no buffers), lit and shadowed like the crowd.
@vertex
fn vs_ground(@builtin(vertex_index) vertex: u32) -> VertexOutput {
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(-1.0, 1.0), vec2<f32>(1.0, -1.0),
        vec2<f32>(1.0, -1.0), vec2<f32>(-1.0, 1.0), vec2<f32>(1.0, 1.0),
    );
    let c = corners[min(vertex, 5u)] * frame.ground_half_extent;
    let world = vec3<f32>(frame.camera_position.x + c.x, 0.0, frame.camera_position.z + c.y);
    return VertexOutput(
        vat_jitter(frame.view_proj * vec4<f32>(world, 1.0)),
        world,
        vec3<f32>(0.0, 1.0, 0.0),
        vec4<f32>(0.30, 0.33, 0.27, 1.0),
        vec4<f32>(1.0, 0.0, 0.0, 1.0),
        vec2<f32>(0.0),
        0u,
        0u,
        world,
    );
}

// The lit fragment shader of every colour pipeline that draws an asset: the material shading
// (vat_shade_material) for an asset with materials, else the built-in palette's Lambert shading.
@fragment
fn fs_lit(in: VertexOutput, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    vat_switch_discard(in);
    if !vat_has_materials() {
        return vat_shade(in);
    }
    return vat_shade_material(in, front, ddx, ddy);
}

// The ground's fragment shader (group 0 only): vat_shade.
@fragment
fn fs_ground(in: VertexOutput) -> @location(0) vec4<f32> {
    return vat_shade(in);
}

// fs_lit with motion vectors: the same colour, and the motion target.
@fragment
fn fs_lit_motion(in: VertexOutput, @builtin(front_facing) front: bool) -> LitMotionOutput {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    vat_switch_discard(in);
    var color: vec4<f32>;
    if !vat_has_materials() {
        color = vat_shade(in);
    } else {
        color = vat_shade_material(in, front, ddx, ddy);
    }
    return LitMotionOutput(color, vec4<f32>(vat_motion_vector(in), 0.0, 0.0));
}

// fs_ground with motion vectors (the ground is static: its motion is the camera's).
@fragment
fn fs_ground_motion(in: VertexOutput) -> LitMotionOutput {
    return LitMotionOutput(vat_shade(in), vec4<f32>(vat_motion_vector(in), 0.0, 0.0));
}

// ---------------------------------------------------------------------------------------------------
// Prepass fragment stages (a host's depth / normal / motion-vector prepass, Bevy's formats)
// ---------------------------------------------------------------------------------------------------

// What the prepass fragment stages with both targets write: the normal (location 0,
// vat_encode_normal) and the motion (location 1; vat_motion_vector in .xy, .zw = 0).
struct PrepassOutput {
    @location(0) normal: vec4<f32>,
    @location(1) motion: vec4<f32>,
}

// A unit world normal as a prepass stores it in an unsigned normalised target (Bevy's
// Rgb10a2Unorm normal prepass): n * 0.5 + 0.5 in .xyz, 1 in .w.
fn vat_encode_normal(n: vec3<f32>) -> vec4<f32> {
    return vec4<f32>(n * 0.5 + 0.5, 1.0);
}

// The discards of fs_lit for fragment `in` (assets with materials: the back faces of single-sided
// materials, alpha-masked texels), so a prepass keeps exactly the fragments the colour pass keeps.
fn vat_prepass_discard(in: VertexOutput, front: bool, ddx: vec2<f32>, ddy: vec2<f32>) {
    vat_switch_discard(in);
    if vat_has_materials() {
        _ = vat_material_base(in, vat_fragment_material(in), front, ddx, ddy);
    }
}

// The unit world normal a prepass writes for fragment `in` after vat_prepass_discard: the
// material's shading normal (vat_material_normal: negated on back faces, normal map applied), or
// for assets without materials the interpolated normal, negated on back faces.
fn vat_prepass_normal(in: VertexOutput, front: bool, ddx: vec2<f32>, ddy: vec2<f32>) -> vec3<f32> {
    vat_prepass_discard(in, front, ddx, ddy);
    if !vat_has_materials() {
        let n = vat_normalize(in.world_normal);
        return select(-n, n, front);
    }
    return vat_material_normal(in, vat_fragment_material(in), front, ddx, ddy);
}

// Prepass with a normal target alone (location 0).
@fragment
fn fs_prepass(in: VertexOutput, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    return vat_encode_normal(vat_prepass_normal(in, front, ddx, ddy));
}

// Prepass with normal (location 0) and motion (location 1) targets.
@fragment
fn fs_prepass_motion(in: VertexOutput, @builtin(front_facing) front: bool) -> PrepassOutput {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    let n = vat_prepass_normal(in, front, ddx, ddy);
    return PrepassOutput(vat_encode_normal(n), vec4<f32>(vat_motion_vector(in), 0.0, 0.0));
}

// Prepass with a motion target alone (location 1; location 0 has no attachment).
@fragment
fn fs_prepass_motion_only(in: VertexOutput, @builtin(front_facing) front: bool) -> @location(1) vec4<f32> {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    vat_prepass_discard(in, front, ddx, ddy);
    return vec4<f32>(vat_motion_vector(in), 0.0, 0.0);
}

// Depth-only prepass: no target, only fs_lit's discards.
@fragment
fn fs_prepass_depth(in: VertexOutput, @builtin(front_facing) front: bool) {
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    vat_prepass_discard(in, front, ddx, ddy);
}

// The ground's prepass with a normal target alone (group 0 only; its depth-only prepass has no
// fragment stage).
@fragment
fn fs_ground_prepass(in: VertexOutput) -> @location(0) vec4<f32> {
    return vat_encode_normal(vat_normalize(in.world_normal));
}

// The ground's prepass with normal and motion targets.
@fragment
fn fs_ground_prepass_motion(in: VertexOutput) -> PrepassOutput {
    let n = vat_encode_normal(vat_normalize(in.world_normal));
    return PrepassOutput(n, vec4<f32>(vat_motion_vector(in), 0.0, 0.0));
}

// The ground's prepass with a motion target alone (location 1).
@fragment
fn fs_ground_prepass_motion_only(in: VertexOutput) -> @location(1) vec4<f32> {
    return vec4<f32>(vat_motion_vector(in), 0.0, 0.0);
}

// ---------------------------------------------------------------------------------------------------
// The vertex decode library of host vertex stages (vat_core::pipeline::HostShader)
// ---------------------------------------------------------------------------------------------------

// The decoded vertex `vertex` (the index buffer's value) of draw instance `instance_index` (the
// draw's instance index, first_instance included) as vat's own colour vertex stage of the
// pipeline's program (override PROGRAM) outputs it: clip position (HIDDEN_POSITION, outside the
// clip volume, for a hidden instance: pass it through), world position and normal, tangent frame,
// UV0, colour, material record, record index, and the previous frame's world position.
fn vat_vertex(vertex: u32, instance_index: u32) -> VertexOutput {
    switch PROGRAM {
        case PROGRAM_BONE: {
            return vat_output_bone(vertex, instance_index);
        }
        case PROGRAM_RIGID: {
            return vat_output_rigid(vertex, instance_index);
        }
        case PROGRAM_REST: {
            return vat_output_rest(vertex, instance_index);
        }
        case PROGRAM_ATTACHMENT: {
            return vat_output_attachment(vertex, instance_index);
        }
        case PROGRAM_FLUID: {
            return vat_output_fluid(vertex, instance_index);
        }
        case PROGRAM_SPRITE: {
            return vat_output_sprite(vertex, instance_index);
        }
        default: {
            return vat_output_vat(vertex, instance_index);
        }
    }
}

// Object space of instance record `inst` from world space: the inverse of vat_to_world for a
// point (metres).
fn vat_object_position(inst: InstanceRecord, world: vec3<f32>) -> vec3<f32> {
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let d = (world - inst.position) / inst.scale;
    return vec3<f32>(c * d.x - s * d.z, d.y, s * d.x + c * d.z);
}

// Object space of instance record `inst` from world space for a direction (a normal or tangent).
fn vat_object_direction(inst: InstanceRecord, world: vec3<f32>) -> vec3<f32> {
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    return vec3<f32>(c * world.x - s * world.z, world.y, s * world.x + c * world.z);
}
