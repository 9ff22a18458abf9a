
// ---- shadow.wgsl: the sun shadow lookup (vat_core::gpu::SHADOW_WGSL) ----
//
// Self-contained (no bindings, no uniforms): vat's shader calls it for the crowd and its ground, and
// a host includes the same text in its own shader to shade its surfaces with exactly the crowd's
// lookup, passing vat's shadow map (or its own), a comparison sampler of
// vat_core::pipeline::SHADOW_SAMPLER's state and the lookup's matrix and parameters
// (vat_core::gpu::ShadowLookup; the built-in map's matrix is FrameReport::shadow_view_proj).

// 1 where the light reaches `world` (metres; `n` its unit normal), down to 1 - strength in full
// shadow; 1 outside the map or with strength <= 0. The map holds depth 0..1, 0 nearest the light,
// through `light_view_proj` (column-major, world to clip); `world` is first moved `normal_offset`
// metres along `n`, and its depth compared after subtracting `bias` (LessEqual, 2 x 2 PCF with a
// linear comparison sampler).
fn vat_shadow_lookup(
    map: texture_depth_2d,
    compare: sampler_comparison,
    light_view_proj: mat4x4<f32>,
    world: vec3<f32>,
    n: vec3<f32>,
    normal_offset: f32,
    bias: f32,
    strength: f32,
) -> f32 {
    if strength <= 0.0 {
        return 1.0;
    }
    let lp = light_view_proj * vec4<f32>(world + n * normal_offset, 1.0);
    let ndc = lp.xyz / lp.w;
    let uv = vec2<f32>(ndc.x * 0.5 + 0.5, 0.5 - ndc.y * 0.5);
    if uv.x < 0.0 || uv.x > 1.0 || uv.y < 0.0 || uv.y > 1.0 || ndc.z > 1.0 {
        return 1.0;
    }
    let lit = textureSampleCompareLevel(map, compare, uv, ndc.z - bias);
    return 1.0 - strength * (1.0 - lit);
}
