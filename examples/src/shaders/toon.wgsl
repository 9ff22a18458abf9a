// A host's own fragment stage for vat's crowds (vat_core::pipeline::HostShader): appended to vat's
// shader, so it reads vat's VertexOutput, bindings and helpers. Cel shading: the material's base
// colour (factor x texture x vertex colour x tint, or the built-in palette's albedo), lit in three
// bands by the host's sun and vat's shadow lookup, a rim light, and dark outlines where the surface
// turns away from the camera.
@fragment
fn fs_toon(in: VertexOutput) -> @location(0) vec4<f32> {
    // Derivatives in uniform control flow, for the sampling below.
    let ddx = dpdx(in.uv);
    let ddy = dpdy(in.uv);
    var base = in.color;
    if asset.material_count > 0u {
        let m = materials[in.material];
        base = m.base_color_factor * in.color;
        if m.base_color_layer != NO_TEXTURE_LAYER {
            let uv = vat_wrap_uv(in.uv, m.wrap & 15u);
            base *= textureSampleGrad(material_color_texture, material_sampler, uv, m.base_color_layer, ddx, ddy);
        }
    }
    let n = vat_normalize(in.world_normal);
    let l = vat_normalize(frame.sun_direction);
    let v = vat_normalize(frame.camera_position - in.world_position);
    let facing = dot(n, v);
    if facing < 0.2 {
        return vec4<f32>(0.03, 0.03, 0.04, 1.0);
    }
    let lit = max(dot(n, l), 0.0) * vat_shadow(in.world_position, n);
    let band = select(select(0.35, 0.7, lit > 0.15), 1.0, lit > 0.55);
    let rim = pow(1.0 - facing, 3.0) * 0.35;
    return vec4<f32>(base.rgb * band * frame.sun_color + vec3<f32>(rim), 1.0);
}
