// The rigid mode's part of vat's shader: its decode and its entry points. Concatenated after
// vat.wgsl (vat_core::backend::gpu::SHADER_SOURCE); it uses vat.wgsl's bindings, structs and helpers.

// ---------------------------------------------------------------------------------------------------
// Rigid mode: pieces moving as units (vat_core::rigid; CPU twin vat_core::reference::decode_rigid_vertex)
// ---------------------------------------------------------------------------------------------------

// A piece at one sampled time: pivot in pivot-box coordinates ([0, 1] per axis) and a quaternion
// (x, y, z, w), not yet normalised.
struct RigidSample {
    pivot: vec3<f32>,
    rotation: vec4<f32>,
}

// snorm16 in the low 16 bits of `bits` (two's complement, sign-extended): max(i / 32767, -1).
fn vat_rigid_snorm16(bits: u32) -> f32 {
    return max(f32(extractBits(bitcast<i32>(bits), 0u, 16u)) / 32767.0, -1.0);
}

// The piece texel of `piece` at absolute frame `frame_index` (vat_core::rigid::decode_piece_texel).
fn vat_rigid_piece_texel(frame_index: u32, piece: u32) -> RigidSample {
    let t = frame_index * asset.piece_count + piece;
    let w = textureLoad(rigid_pieces, vat_texel_xy(t, asset.piece_texture_width), 0);
    let pivot = vec3<f32>(f32(w.x & 0xFFFFu), f32(w.x >> 16u), f32(w.y & 0xFFFFu)) / 65535.0;
    let rotation = vec4<f32>(
        vat_rigid_snorm16(w.y >> 16u),
        vat_rigid_snorm16(w.z),
        vat_rigid_snorm16(w.z >> 16u),
        vat_rigid_snorm16(w.w),
    );
    return RigidSample(pivot, rotation);
}

// dot(a, b) summed left to right.
fn vat_rigid_dot(a: vec4<f32>, b: vec4<f32>) -> f32 {
    return ((a.x * b.x + a.y * b.y) + a.z * b.z) + a.w * b.w;
}

// q, negated when it lies in the other hemisphere from `reference` (same rotation, short way round).
fn vat_rigid_align(q: vec4<f32>, reference: vec4<f32>) -> vec4<f32> {
    if vat_rigid_dot(q, reference) < 0.0 {
        return -q;
    }
    return q;
}

// q / |q|; the identity for a zero quaternion.
fn vat_rigid_normalize(q: vec4<f32>) -> vec4<f32> {
    let d = vat_rigid_dot(q, q);
    if d > 0.0 {
        return q * (1.0 / sqrt(d));
    }
    return vec4<f32>(0.0, 0.0, 0.0, 1.0);
}

// v rotated by the unit quaternion q: v + 2 * cross(u, cross(u, v) + w * v), u = q.xyz.
fn vat_rigid_rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = cross(q.xyz, v) + q.w * v;
    return v + 2.0 * cross(q.xyz, t);
}

// Samples clip `clip_index` of one piece: the sampled frames' pivots blended with the frame weights
// (normalised coordinates, "lerp before decode") and their quaternions, each aligned with the first
// fetched frame's, blended the same way (normalised lerp once the fade is mixed in).
fn vat_rigid_clip(clip_index: u32, wrap_code: u32, phase_offset: f32, time: f32, rate: f32, piece: u32) -> RigidSample {
    let s = vat_clip_frames(clip_index, wrap_code, phase_offset, time, rate);
    let w = s.weights;
    if INTERPOLATION == INTERPOLATION_POINT {
        var chosen = s.frames.z;
        if w.y == 1.0 {
            chosen = s.frames.y;
        }
        return vat_rigid_piece_texel(chosen, piece);
    }
    let b = vat_rigid_piece_texel(s.frames.y, piece);
    let c = vat_rigid_piece_texel(s.frames.z, piece);
    let qc = vat_rigid_align(c.rotation, b.rotation);
    if INTERPOLATION == INTERPOLATION_CUBIC {
        let a = vat_rigid_piece_texel(s.frames.x, piece);
        let d = vat_rigid_piece_texel(s.frames.w, piece);
        let qa = vat_rigid_align(a.rotation, b.rotation);
        let qd = vat_rigid_align(d.rotation, b.rotation);
        let pivot = ((w.x * a.pivot + w.y * b.pivot) + w.z * c.pivot) + w.w * d.pivot;
        let rotation = ((w.x * qa + w.y * b.rotation) + w.z * qc) + w.w * qd;
        return RigidSample(pivot, rotation);
    }
    return RigidSample(w.y * b.pivot + w.z * c.pivot, w.y * b.rotation + w.z * qc);
}

// Decodes vertex `vertex` of a rigid asset for instance `inst` at `time`: its piece (clip A,
// cross-faded to clip B while a fade runs, B's quaternion aligned with A's), the quaternion
// normalised once, the pivot denormalised from the pivot box, then
// p = pivot + rotate(q, rest_position - rest_pivot), n = rotate(q, rest_normal), and the instance
// transform of vat_to_world.
fn vat_rigid_vertex(inst: InstanceRecord, vertex: u32, time: f32) -> DecodedVertex {
    let rv = textureLoad(rigid_vertices, vat_texel_xy(vertex, asset.rigid_vertex_width), 0);
    let piece = rv.w;
    let rest_pivot = bitcast<vec3<f32>>(rv.xyz);
    var mixed = vat_rigid_clip(inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a, piece);
    let fw = vat_instance_fade_weight(inst, time);
    if fw > 0.0 {
        let b = vat_rigid_clip(inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b, piece);
        let qb = vat_rigid_align(b.rotation, mixed.rotation);
        mixed.pivot = mixed.pivot * (1.0 - fw) + b.pivot * fw;
        mixed.rotation = mixed.rotation * (1.0 - fw) + qb * fw;
    }
    let q = vat_rigid_normalize(mixed.rotation);
    let pivot = asset.pivot_min + mixed.pivot * asset.pivot_extent;
    let rest = rest_vertices[vertex];
    let p = pivot + vat_rigid_rotate(q, rest.position - rest_pivot);
    let n = vat_normalize(vat_rigid_rotate(q, rest.normal));
    return vat_to_world(inst, p, n);
}

// cs_decode of a rigid asset: the same threads and output, pieces from the piece texture.
@compute @workgroup_size(DECODE_WORKGROUP_SIZE)
fn cs_decode_rigid(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
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
    decoded[index] = vat_rigid_vertex(instances[instance_index], vertex, frame.time);
}

// Rigid mode (a rigid asset in VAT mode), colour pass.
@vertex
fn vs_rigid(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_rigid(vertex, instance_index);
}

// What vs_rigid outputs for vertex `vertex` of draw instance `instance_index` (vat_vertex with PROGRAM_RIGID).
fn vat_output_rigid(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let v = vat_rigid_vertex(inst, vertex, frame.time);
    var out = vat_lit_output_of(inst, v, vertex);
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        out.previous_world_position = vat_rigid_vertex(previous, vertex, frame.previous_time).position.xyz;
    }
    return out;
}

// Rigid mode, shadow pass.
@vertex
fn vs_rigid_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return HIDDEN_POSITION;
    }
    let v = vat_rigid_vertex(inst, vertex, frame.time);
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}
