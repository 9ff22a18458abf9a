// Bone mode's part of vat's shader: skinning from the bone texture and its entry points. Concatenated
// after vat.wgsl (vat_core::backend::gpu::SHADER_SOURCE); it uses vat.wgsl's bindings, structs and helpers.

// ---------------------------------------------------------------------------------------------------
// Bone mode: skinning from the bone texture
// ---------------------------------------------------------------------------------------------------

// A 3x4 affine as its three rows: p'[r] = dot(row_r.xyz, p) + row_r.w.
struct Affine {
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
}

fn vat_affine_add(a: Affine, b: Affine, w: f32) -> Affine {
    return Affine(a.r0 + w * b.r0, a.r1 + w * b.r1, a.r2 + w * b.r2);
}

fn vat_affine_scale(a: Affine, w: f32) -> Affine {
    return Affine(w * a.r0, w * a.r1, w * a.r2);
}

fn vat_affine_point(m: Affine, p: vec3<f32>) -> vec3<f32> {
    let h = vec4<f32>(p, 1.0);
    return vec3<f32>(dot(m.r0, h), dot(m.r1, h), dot(m.r2, h));
}

// The normal transformed like vat_bake::skin does: normalize(sign(det M3) * cof(M3) n), where the
// cofactor matrix cof(M3) = det(M3) * M3^-T has the columns c1 x c2, c2 x c0, c0 x c1 (c_j the
// columns of the linear part): the inverse-transpose direction, defined even for singular blends.
fn vat_affine_normal(m: Affine, n: vec3<f32>) -> vec3<f32> {
    let c0 = vec3<f32>(m.r0.x, m.r1.x, m.r2.x);
    let c1 = vec3<f32>(m.r0.y, m.r1.y, m.r2.y);
    let c2 = vec3<f32>(m.r0.z, m.r1.z, m.r2.z);
    let k0 = cross(c1, c2);
    let k1 = cross(c2, c0);
    let k2 = cross(c0, c1);
    let det = dot(c0, k0);
    let v = k0 * n.x + k1 * n.y + k2 * n.z;
    return vat_normalize(select(v, -v, det < 0.0));
}

// Bone `bone` at absolute frame `frame_index` of the bone texture: its three rows, texels t, t + 1 and
// t + 2 with t = (frame_index * bone_count + bone) * TEXELS_PER_BONE (the next texel's address steps
// along the row and wraps).
fn vat_bone_affine(frame_index: u32, bone: u32) -> Affine {
    let t = (frame_index * asset.bone_count + bone) * TEXELS_PER_BONE;
    let width = i32(max(asset.bone_texture_width, 1u));
    let xy0 = vat_texel_xy(t, asset.bone_texture_width);
    let xy1 = vat_next_texel(xy0, width);
    let xy2 = vat_next_texel(xy1, width);
    return Affine(
        textureLoad(bone_texture, xy0, 0),
        textureLoad(bone_texture, xy1, 0),
        textureLoad(bone_texture, xy2, 0),
    );
}

// The texel after `xy` in a texture `width` texels wide: one step along the row, or the next row's
// first.
fn vat_next_texel(xy: vec2<i32>, width: i32) -> vec2<i32> {
    let wraps = xy.x + 1 >= width;
    return select(vec2<i32>(xy.x + 1, xy.y), vec2<i32>(0, xy.y + 1), wraps);
}

// The frames a clip samples at `time`, as absolute frame indices of the bone texture and the morph
// weights track (first_frame added), with their weights: vat_frame_sample of the clip's phase. An
// index past the clip table reads its last clip.
fn vat_clip_frames(clip_index: u32, wrap_code: u32, phase_offset: f32, time: f32, rate: f32) -> FrameSample {
    let clip = clips[min(clip_index, arrayLength(&clips) - 1u)];
    let looping = (clip.flags & CLIP_FLAG_LOOPING) != 0u;
    let phase = vat_phase(phase_offset, time, rate, vat_wrap(wrap_code, looping));
    let s = vat_frame_sample(phase, clip.frame_count, looping);
    return FrameSample(s.frames + vec4<u32>(clip.first_frame), s.weights);
}

// The influence slots of `vertex` up to its last weight other than 0: the slots after it add
// nothing, and a loop that stops there runs as few rounds as the vertex's own influences (a SIMD
// group of vertices with one or two bones does not pay for four).
fn vat_influences_used(vertex: u32) -> u32 {
    var used = 0u;
    for (var k = 0u; k < INFLUENCES; k++) {
        if weights[vertex * INFLUENCES + k] != 0.0 {
            used = k + 1u;
        }
    }
    return used;
}

// The skinning matrix of `vertex` at the sampled frames `s` (from vat_clip_frames): sum over
// influences k (weight w_k != 0) and sampled frames f (weight != 0) of w_k * w_f * M(joint_k, f).
// Linear in the bone matrices, so at linear interpolation the position equals the lerp of the two
// frames' skinned positions. The frames are those INTERPOLATION samples, as in vat_decode_clip: a
// frame of weight 0 adds 0 * (finite rows), the same sum except possibly for the sign of a zero.
fn vat_skin_clip(s: FrameSample, vertex: u32) -> Affine {
    var m = Affine(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    let used = vat_influences_used(vertex);
    for (var k = 0u; k < used; k++) {
        let slot = vertex * INFLUENCES + k;
        let wk = weights[slot];
        if wk == 0.0 {
            continue;
        }
        let joint = (joints[slot / 2u] >> (16u * (slot & 1u))) & 0xFFFFu;
        if INTERPOLATION == INTERPOLATION_POINT {
            let chosen = select(s.frames.z, s.frames.y, s.weights.y == 1.0);
            m = vat_affine_add(m, vat_bone_affine(chosen, joint), wk);
        } else if INTERPOLATION == INTERPOLATION_CUBIC {
            for (var f = 0u; f < 4u; f++) {
                let wf = s.weights[f];
                if wf == 0.0 {
                    continue;
                }
                m = vat_affine_add(m, vat_bone_affine(s.frames[f], joint), wk * wf);
            }
        } else {
            m = vat_affine_add(m, vat_bone_affine(s.frames.y, joint), wk * s.weights.y);
            m = vat_affine_add(m, vat_bone_affine(s.frames.z, joint), wk * s.weights.z);
        }
    }
    return m;
}

// The weights of morph targets 4g..4g+3 at absolute frame `frame_index` of the weights track.
fn vat_morph_weight_texel(frame_index: u32, group: u32) -> vec4<f32> {
    let t = frame_index * ((asset.morph_target_count + 3u) / 4u) + group;
    return textureLoad(morph_weights, vat_texel_xy(t, asset.morph_weights_width), 0);
}

// The weights of morph targets 4g..4g+3 at the sampled frames `s`, blended like the bone matrices:
// sum over sampled frames f (weight != 0) of w_f * W(f).
fn vat_morph_clip_weights(s: FrameSample, group: u32) -> vec4<f32> {
    var w = vec4<f32>(0.0);
    for (var f = 0u; f < 4u; f++) {
        let wf = s.weights[f];
        if wf == 0.0 {
            continue;
        }
        w = w + wf * vat_morph_weight_texel(s.frames[f], group);
    }
    return w;
}

// A rest position and (unnormalised) normal with the morph deltas added.
struct MorphedRest {
    position: vec3<f32>,
    normal: vec3<f32>,
}

// The live morph layer: adds w_t * delta_t of every morph target t (in target order) whose blended
// weight w_t is not 0 to the rest position and normal of `vertex`, as vat_bake::skin adds them before
// skinning. w_t is blended like the bone matrices: the sampled frames of clip A (`sa`), cross-faded
// with clip B's (`sb`) by `fade` (> 0 only while a fade runs). Every target is visited (no cap); a
// target of weight 0 costs its weight fetches only.
fn vat_morph_rest(sa: FrameSample, sb: FrameSample, fade: f32, vertex: u32, rest: RestVertex) -> MorphedRest {
    var p = rest.position;
    var n = rest.normal;
    let count = asset.morph_target_count;
    if count == 0u {
        return MorphedRest(p, n);
    }
    let xy = vat_texel_xy(vertex, asset.morph_texture_width);
    let x = xy.x;
    let row = u32(xy.y);
    let rows = asset.morph_rows_per_band;
    for (var g = 0u; g * 4u < count; g++) {
        var w = vat_morph_clip_weights(sa, g);
        if fade > 0.0 {
            w = (1.0 - fade) * w + fade * vat_morph_clip_weights(sb, g);
        }
        for (var c = 0u; c < 4u && g * 4u + c < count; c++) {
            let wt = w[c];
            if wt == 0.0 {
                continue;
            }
            let t = g * 4u + c;
            let dp = textureLoad(morph_texture, vec2<i32>(x, i32(2u * t * rows + row)), 0).xyz;
            let dn = textureLoad(morph_texture, vec2<i32>(x, i32((2u * t + 1u) * rows + row)), 0).xyz;
            p = p + dp * wt;
            n = n + dn * wt;
        }
    }
    return MorphedRest(p, n);
}

// Bone mode: vertex `vertex` of an instance at `time`. The skinning matrix of clip A's sampled
// frames, cross-faded to clip B's matrix while a fade runs (m = (1 - w) * m_a + w * m_b); the rest
// pose with the live morph layer blended in by the same frames and weights; then skinning and the
// instance transform.
fn vat_skin_vertex(inst: InstanceRecord, vertex: u32, time: f32) -> DecodedVertex {
    let sa = vat_clip_frames(inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a);
    let w = vat_instance_fade_weight(inst, time);
    var sb = sa;
    var m = vat_skin_clip(sa, vertex);
    if w > 0.0 {
        sb = vat_clip_frames(inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b);
        m = vat_affine_add(vat_affine_scale(m, 1.0 - w), vat_skin_clip(sb, vertex), w);
    }
    let rest = vat_morph_rest(sa, sb, w, vertex, rest_vertices[vertex]);
    return vat_to_world(inst, vat_affine_point(m, rest.position), vat_affine_normal(m, rest.normal));
}

// cs_decode in bone mode: the same threads and output, skinning from the bone texture.
@compute @workgroup_size(DECODE_WORKGROUP_SIZE)
fn cs_decode_bone(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
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
    decoded[index] = vat_skin_vertex(instances[instance_index], vertex, frame.time);
}

// Bone mode, colour pass.
@vertex
fn vs_bone(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_bone(vertex, instance_index);
}

// What vs_bone outputs for vertex `vertex` of draw instance `instance_index` (vat_vertex with PROGRAM_BONE).
fn vat_output_bone(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let v = vat_skin_vertex(inst, vertex, frame.time);
    var out = vat_lit_output_of(inst, v, vertex);
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        out.previous_world_position = vat_skin_vertex(previous, vertex, frame.previous_time).position.xyz;
    }
    return out;
}

// Bone mode, shadow pass.
@vertex
fn vs_bone_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) || !vat_mesh_casts(inst) {
        return HIDDEN_POSITION;
    }
    let v = vat_skin_vertex(inst, vertex, frame.time);
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}

// ---------------------------------------------------------------------------------------------------
// The skin-residual format (VERTEX_FORMAT_SKIN_RESIDUAL, vat_core::format::skin_residual): bone
// mode's skin plus a residual of each vertex's own width, read from vat_texture (Rg32Uint,
// asset.texture_width wide): texel v is vertex v's (first bit, widths), word i of the stream is
// channel i % 2 of texel vertex_count + i / 2.
// ---------------------------------------------------------------------------------------------------

// Texel t of the residual texture.
fn vat_residual_texel(t: u32) -> vec2<u32> {
    return textureLoad(vat_texture, vat_texel_xy(t, asset.texture_width), 0).xy;
}

// Word i of the residual stream.
fn vat_residual_word(i: u32) -> u32 {
    let texel = vat_residual_texel(asset.vertex_count + (i >> 1u));
    return select(texel.x, texel.y, (i & 1u) != 0u);
}

// The 32 bits of the stream from bit o (skin_residual::read_window): the stream ends with a zero
// word, and the container checks that every frame's fields end before it.
fn vat_residual_window(o: u32) -> u32 {
    let i = o >> 5u;
    let sh = o & 31u;
    return (vat_residual_word(i) >> sh) | select(0u, vat_residual_word(i + 1u) << ((32u - sh) & 31u), sh != 0u);
}

// Bits k .. k + c of the 64-bit value hi:lo as a two's complement integer (skin_residual::extract_field;
// c <= 15, k + c <= 64): extractBits on an i32 sign-extends, and gives 0 for a count of 0. Shift
// amounts are taken modulo 32, hence the selects.
fn vat_residual_field(lo: u32, hi: u32, k: u32, c: u32) -> f32 {
    let low = (lo >> (k & 31u)) | select(0u, hi << ((32u - k) & 31u), k != 0u);
    let x = select(low, hi >> (k & 31u), k >= 32u);
    return f32(extractBits(bitcast<i32>(x), 0u, c));
}

// A clip sample's residual: the position offset (metres) and the normal's two values, each the sum
// over the sampled frames of weight other than 0 of w_f * step * q_f (skin_residual::residual_values),
// as the bone matrices are blended.
struct ResidualValues {
    r: vec3<f32>,
    d: vec2<f32>,
}

fn vat_residual_clip(s: FrameSample, base: u32, widths: u32) -> ResidualValues {
    let bp = widths & 15u;
    let bn = (widths >> 4u) & 15u;
    let frame_bits = 3u * bp + 2u * bn;
    var r = vec3<f32>(0.0);
    var d = vec2<f32>(0.0);
    if frame_bits == 0u {
        return ResidualValues(r, d);
    }
    let absolute = ((widths >> 8u) & 1u) != 0u;
    let normal_step = select(asset.residual_normal_step, asset.residual_oct_step, absolute);
    for (var f = 0u; f < 4u; f++) {
        let wf = s.weights[f];
        if wf == 0.0 {
            continue;
        }
        // One 32-bit window, and a second 32 bits on for a frame wider than that.
        let o = base + s.frames[f] * frame_bits;
        let lo = vat_residual_window(o);
        var hi = 0u;
        if frame_bits > 32u {
            hi = vat_residual_window(o + 32u);
        }
        let q = vec3<f32>(vat_residual_field(lo, hi, 0u, bp), vat_residual_field(lo, hi, bp, bp), vat_residual_field(lo, hi, 2u * bp, bp));
        let qn = vec2<f32>(vat_residual_field(lo, hi, 3u * bp, bn), vat_residual_field(lo, hi, 3u * bp + bn, bn));
        r = r + wf * (asset.residual_position_step * q);
        d = d + wf * (normal_step * qn);
    }
    return ResidualValues(r, d);
}

// The skinned point p and unit normal m finished with residual values (skin_residual::finish_residual):
// p + r, and normalize(m + (d.x t1 + d.y t2)) in Duff et al.'s branch-free basis of m, or with the
// absolute flag the octahedral decode of d.
fn vat_finish_residual(p: vec3<f32>, m: vec3<f32>, v: ResidualValues, absolute: bool) -> VertexSample {
    if absolute {
        return VertexSample(p + v.r, vat_oct_decode(v.d));
    }
    let sign = select(-1.0, 1.0, m.z >= 0.0);
    let a = -1.0 / (sign + m.z);
    let b = m.x * m.y * a;
    let t1 = vec3<f32>(1.0 + sign * m.x * m.x * a, sign * b, -sign * m.x);
    let t2 = vec3<f32>(b, sign + m.y * m.y * a, -m.y);
    return VertexSample(p + v.r, vat_normalize(m + (v.d.x * t1 + v.d.y * t2)));
}

// The skin-residual format: vertex `vertex` of an instance at `time`
// (vat_core::format::reference::decode_skin_residual_vertex). Bone mode's skinning matrix and
// morphed rest pose (vat_skin_vertex), the residual blended by the same frame and fade weights.
fn vat_skin_residual_vertex(inst: InstanceRecord, vertex: u32, time: f32) -> DecodedVertex {
    let entry = vat_residual_texel(vertex);
    let sa = vat_clip_frames(inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a);
    let w = vat_instance_fade_weight(inst, time);
    var sb = sa;
    var m = vat_skin_clip(sa, vertex);
    var res = vat_residual_clip(sa, entry.x, entry.y);
    if w > 0.0 {
        sb = vat_clip_frames(inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b);
        m = vat_affine_add(vat_affine_scale(m, 1.0 - w), vat_skin_clip(sb, vertex), w);
        let rb = vat_residual_clip(sb, entry.x, entry.y);
        res = ResidualValues((1.0 - w) * res.r + w * rb.r, (1.0 - w) * res.d + w * rb.d);
    }
    let rest = vat_morph_rest(sa, sb, w, vertex, rest_vertices[vertex]);
    let absolute = ((entry.y >> 8u) & 1u) != 0u;
    let s = vat_finish_residual(vat_affine_point(m, rest.position), vat_affine_normal(m, rest.normal), res, absolute);
    return vat_to_world(inst, s.position, s.normal);
}
