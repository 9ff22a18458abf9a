
// ---- shadow.wgsl: the sun shadow lookup (vat_core::gpu::SHADOW_WGSL) ----
//
// Self-contained (no bindings, no uniforms): vat's shader calls it for the crowd and its ground, and
// a host includes the same text in its own shader to shade its surfaces with exactly the crowd's
// lookup, passing vat's shadow map (or its own), a comparison sampler of
// vat_core::pipeline::SHADOW_SAMPLER's state and the lookup (vat_core::gpu::ShadowLookup, as
// vat_core::gpu::ShadowLookupUniforms; the built-in map's is ShadowLookup::built_in of
// FrameReport::shadow_view_proj).

// One cascade of a sun shadow map (vat_core::gpu::ShadowCascadeUniforms).
struct VatShadowCascade {
    // World to the cascade's clip space, column-major.
    view_proj: mat4x4<f32>,
    // View distance (metres along the camera's view_depth row) where the cascade ends.
    far_bound: f32,
    // Offset along the surface normal before this cascade's lookup, metres.
    normal_offset: f32,
    // Layer of the map array holding the cascade.
    layer: u32,
    _pad: u32,
}

// How a surface looks a sun shadow map up (vat_core::gpu::ShadowLookupUniforms, 368 bytes).
struct VatShadowLookup {
    cascades: array<VatShadowCascade, 4>,
    // View distance of a world point: dot(view_depth, vec4(world, 1)), metres (0 with one cascade).
    view_depth: vec4<f32>,
    // World-space offset added before every lookup (a host's depth bias along the sun), metres.
    light_offset: vec3<f32>,
    // Cascades in use, 0..=4 (0: no shadows).
    count: u32,
    // Share of each cascade's far end blended with the next one, 0..1.
    overlap: f32,
    // Moves the reference depth towards the light before the comparison, depth units.
    bias: f32,
    // How dark shadowed surfaces get: 0 = no shadows (the map is not read), 1 = full.
    strength: f32,
    // 1: the map is reverse-Z (1 nearest the light, cleared to 0); 0: 0 nearest the light.
    reverse_z: u32,
}

// How much of cascade k's light reaches `world` (unit normal n): 1 lit, 0 in shadow, 2 x 2 PCF in
// between; 1 outside the cascade. The map holds depth through the cascade's view_proj (clip-space y
// up, texture v down). The one comparison sampler compares LessEqual ([r <= d] per texel); a
// reverse-Z map is lit where r >= d, and [r >= d] = 1 - [next_up(r) <= d] exactly for Depth32Float
// (no float lies between r and next_up(r); the smallest normal float stands for next_up below it,
// so a cleared texel, d = 0, stays lit at r = 0), and bilinear PCF is linear in the per-texel
// results, so the complement's PCF is the complement of the PCF.
fn vat_shadow_cascade_lit(
    map: texture_depth_2d_array,
    compare: sampler_comparison,
    lookup: VatShadowLookup,
    cascade: VatShadowCascade,
    world: vec3<f32>,
    n: vec3<f32>,
) -> f32 {
    let p = world + n * cascade.normal_offset + lookup.light_offset;
    let lp = cascade.view_proj * vec4<f32>(p, 1.0);
    let ndc = lp.xyz / lp.w;
    let uv = vec2<f32>(ndc.x * 0.5 + 0.5, 0.5 - ndc.y * 0.5);
    if uv.x < 0.0 || uv.x > 1.0 || uv.y < 0.0 || uv.y > 1.0 || ndc.z < 0.0 || ndc.z > 1.0 {
        return 1.0;
    }
    let layer = i32(cascade.layer);
    if lookup.reverse_z != 0u {
        let r = ndc.z + lookup.bias;
        let above = max(bitcast<f32>(bitcast<u32>(max(r, 0.0)) + 1u), 1.17549435e-38);
        return 1.0 - textureSampleCompareLevel(map, compare, uv, layer, above);
    }
    return textureSampleCompareLevel(map, compare, uv, layer, ndc.z - lookup.bias);
}

// 1 where the sun reaches `world` (metres; `n` its unit normal), down to 1 - strength in full
// shadow; 1 outside every cascade or with strength <= 0. The cascade is the first whose far_bound
// exceeds the point's view distance; over the last `overlap` share of its range it is blended with
// the next one (Bevy's directional cascades choose and blend the same way).
// Cascade `k` (0..=3) of `lookup`, by constant indices: a runtime index into a value array would
// copy the whole array into function memory first, for every fragment.
fn vat_shadow_cascade_at(lookup: VatShadowLookup, k: u32) -> VatShadowCascade {
    switch k {
        case 0u: {
            return lookup.cascades[0];
        }
        case 1u: {
            return lookup.cascades[1];
        }
        case 2u: {
            return lookup.cascades[2];
        }
        default: {
            return lookup.cascades[3];
        }
    }
}

fn vat_shadow_lookup(
    map: texture_depth_2d_array,
    compare: sampler_comparison,
    lookup: VatShadowLookup,
    world: vec3<f32>,
    n: vec3<f32>,
) -> f32 {
    if lookup.strength <= 0.0 || lookup.count == 0u {
        return 1.0;
    }
    let count = min(lookup.count, 4u);
    let distance = dot(lookup.view_depth, vec4<f32>(world, 1.0));
    let bounds = vec4<f32>(
        lookup.cascades[0].far_bound,
        lookup.cascades[1].far_bound,
        lookup.cascades[2].far_bound,
        lookup.cascades[3].far_bound,
    );
    var k = 0u;
    for (; k < count; k++) {
        if distance < bounds[k] {
            break;
        }
    }
    if k >= count {
        return 1.0;
    }
    let cascade = vat_shadow_cascade_at(lookup, k);
    var lit = vat_shadow_cascade_lit(map, compare, lookup, cascade, world, n);
    if k + 1u < count {
        let far = cascade.far_bound;
        let next_near = (1.0 - lookup.overlap) * far;
        if distance >= next_near && far > next_near {
            let next = vat_shadow_cascade_lit(map, compare, lookup, vat_shadow_cascade_at(lookup, k + 1u), world, n);
            lit = mix(lit, next, (distance - next_near) / (far - next_near));
        }
    }
    return 1.0 - lookup.strength * (1.0 - lit);
}
