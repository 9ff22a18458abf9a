// The fluid mode's part of vat's shader: its decode and its entry points. Concatenated after
// vat.wgsl (vat_core::backend::gpu::SHADER_SOURCE); it uses vat.wgsl's bindings, structs and helpers.

// ---------------------------------------------------------------------------------------------------
// Fluid mode: a triangle pool whose corners find their vertex through a per-frame lookup
// (vat_core::fluid; CPU twin vat_core::reference::decode_fluid_vertex)
// ---------------------------------------------------------------------------------------------------

// Clip A's two frames around its phase at `time` (absolute frame indices; a looping clip's last
// frame is followed by its first, a one-shot clip's by itself) and the blend factor `t` in [0, 1)
// between them, whatever INTERPOLATION is: the fluid and sprite modes sample frames their own way.
// An index past the clip table reads its last clip.
struct ClipPair {
    f0: u32,
    f1: u32,
    t: f32,
}

fn vat_clip_pair(inst: InstanceRecord, time: f32) -> ClipPair {
    let clip = clips[min(inst.clip_a, arrayLength(&clips) - 1u)];
    let looping = (clip.flags & CLIP_FLAG_LOOPING) != 0u;
    let phase = vat_phase(inst.phase_offset_a, time, inst.rate_a, vat_wrap(inst.variant_bits >> VARIANT_WRAP_A_SHIFT, looping));
    var f0: u32;
    var f1: u32;
    var t: f32;
    if looping {
        let pos = phase * f32(clip.frame_count);
        let fl = floor(pos);
        t = pos - fl;
        f0 = u32(fl) % clip.frame_count;
        f1 = (f0 + 1u) % clip.frame_count;
    } else {
        let last = clip.frame_count - 1u;
        let pos = phase * f32(last);
        let fl = floor(pos);
        t = pos - fl;
        f0 = min(u32(fl), last);
        f1 = min(f0 + 1u, last);
    }
    return ClipPair(clip.first_frame + f0, clip.first_frame + f1, t);
}

// The absolute frame a fluid instance shows at `time`: clip A's frame of point interpolation (the
// nearer of the two frames around the phase), whatever INTERPOLATION is: frames of different
// topology are never blended.
fn vat_fluid_frame(inst: InstanceRecord, time: f32) -> u32 {
    let p = vat_clip_pair(inst, time);
    return select(p.f1, p.f0, p.t < 0.5);
}

// Decodes pool corner `corner` of a fluid asset for instance `inst` at `time`: the lookup entry of
// the corner at the instance's frame (vat_fluid_frame), then that vat_texture texel decoded in
// VERTEX_FORMAT and the instance transform of vat_to_world. A collapsed corner gives all zeros
// (position.w == 0), which callers draw at HIDDEN_POSITION.
fn vat_fluid_vertex(inst: InstanceRecord, corner: u32, time: f32) -> DecodedVertex {
    let frame_index = vat_fluid_frame(inst, time);
    let e = frame_index * (((asset.vertex_count + 3u) / 4u) * 4u) + corner;
    let t = e / 4u;
    let entries = textureLoad(fluid_lookup, vat_texel_xy(t, asset.fluid_lookup_width), 0);
    let d = entries[e % 4u];
    if d == FLUID_COLLAPSED {
        return DecodedVertex(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    let s = vat_decode_texel(vat_texel_xy(d, asset.texture_width));
    let p = asset.bounds_min + s.position * asset.bounds_extent;
    return vat_to_world(inst, p, vat_normalize(s.normal));
}

// cs_decode of a fluid asset: the same threads and output, corners through the lookup texture (a
// collapsed corner writes all zeros).
@compute @workgroup_size(DECODE_WORKGROUP_SIZE)
fn cs_decode_fluid(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
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
    decoded[index] = vat_fluid_vertex(instances[instance_index], vertex, frame.time);
}

// Fluid mode (a fluid asset in VAT mode), colour pass.
@vertex
fn vs_fluid(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_fluid(vertex, instance_index);
}

// What vs_fluid outputs for pool corner `vertex` of draw instance `instance_index` (vat_vertex with
// PROGRAM_FLUID): material 0, no UV, white vertex colour; a collapsed corner is hidden. The previous
// world position is this frame's object position placed by the previous record (no surface point
// persists across a change of topology; see vat_core::fluid).
fn vat_output_fluid(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let v = vat_fluid_vertex(inst, vertex, frame.time);
    if v.position.w == 0.0 {
        return vat_hidden_output();
    }
    var out = vat_lit_output(inst, v, 0u, vec2<f32>(0.0), vec4<f32>(1.0));
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        let object = vat_object_position(inst, v.position.xyz);
        out.previous_world_position = vat_to_world(previous, object, vec3<f32>(0.0, 1.0, 0.0)).position.xyz;
    }
    return out;
}

// Fluid mode, shadow pass.
@vertex
fn vs_fluid_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return HIDDEN_POSITION;
    }
    let v = vat_fluid_vertex(inst, vertex, frame.time);
    if v.position.w == 0.0 {
        return HIDDEN_POSITION;
    }
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}
