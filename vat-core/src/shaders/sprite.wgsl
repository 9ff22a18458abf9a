// The sprite mode's part of vat's shader: its decode and its entry points. Concatenated after
// vat.wgsl (vat_core::backend::gpu::SHADER_SOURCE); it uses vat.wgsl's bindings, structs and helpers.

// ---------------------------------------------------------------------------------------------------
// Sprite mode: one camera-facing card per particle slot (vat_core::sprite; CPU twins
// vat_core::sprite::sample_particle and vat_core::reference::decode_sprite_corner)
// ---------------------------------------------------------------------------------------------------

// One particle: the centre in box coordinates (0..1 per axis of the particle box), the card's edge
// length (metres), linear RGBA, the rotation about the view axis (radians), and whether the slot
// holds a particle at all.
struct SpriteParticle {
    n: vec3<f32>,
    size: f32,
    color: vec4<f32>,
    rotation: f32,
    alive: bool,
}

// The particle texel of `slot` at absolute frame `frame_index` (texel frame * slots + slot).
fn vat_sprite_texel(frame_index: u32, slot: u32) -> vec4<u32> {
    let t = frame_index * (asset.vertex_count / 4u) + slot;
    return textureLoad(sprite_particles, vat_texel_xy(t, asset.particle_texture_width), 0);
}

// vat_core::sprite::decode_particle_texel, the centre left in box coordinates.
fn vat_sprite_decode(t: vec4<u32>) -> SpriteParticle {
    let steps = 65535.0;
    let n = vec3<f32>(f32(t.x & 0xFFFFu) / steps, f32(t.x >> 16u) / steps, f32(t.y & 0xFFFFu) / steps);
    let size = f32(t.y >> 16u) / steps * asset.particle_max_size;
    let color = vec4<f32>(
        f32(t.z & 0xFFu) / 255.0,
        f32((t.z >> 8u) & 0xFFu) / 255.0,
        f32((t.z >> 16u) & 0xFFu) / 255.0,
        f32(t.z >> 24u) / 255.0,
    );
    let rotation = max(f32(i32(t.w << 16u) >> 16u) / 32767.0, -1.0) * PI;
    return SpriteParticle(n, size, color, rotation, (t.w & SPRITE_FLAG_ALIVE) != 0u);
}

// vat_core::sprite::wrap_delta: the shortest-arc form of a difference of two decoded rotations.
fn vat_sprite_wrap_delta(d: f32) -> f32 {
    if d > PI {
        return d - 2.0 * PI;
    }
    if d < -PI {
        return d + 2.0 * PI;
    }
    return d;
}

// vat_core::sprite::sample_particle: interpolated (a + (c - a) * w per field, the rotation along
// the shortest arc) when `first` is alive and continues into `second`, which is alive; else the
// nearer texel.
fn vat_sprite_sample(first: vec4<u32>, second: vec4<u32>, w: f32) -> SpriteParticle {
    let blend = (first.w & SPRITE_FLAG_ALIVE) != 0u && (first.w & SPRITE_FLAG_CONTINUES) != 0u
        && (second.w & SPRITE_FLAG_ALIVE) != 0u;
    if !blend {
        return vat_sprite_decode(select(second, first, w < 0.5));
    }
    let a = vat_sprite_decode(first);
    let c = vat_sprite_decode(second);
    return SpriteParticle(
        a.n + (c.n - a.n) * w,
        a.size + (c.size - a.size) * w,
        a.color + (c.color - a.color) * w,
        a.rotation + vat_sprite_wrap_delta(c.rotation - a.rotation) * w,
        true,
    );
}

// The particle slot `slot` of instance `inst` shows at `time`: clip A's two frames around the phase
// (vat_clip_pair), the nearer one at point interpolation, else vat_sprite_sample (linear; cubic
// interpolation samples particles linearly too). Never cross-faded: clip B is ignored.
fn vat_sprite_particle(inst: InstanceRecord, slot: u32, time: f32) -> SpriteParticle {
    let p = vat_clip_pair(inst, time);
    if INTERPOLATION == INTERPOLATION_POINT {
        return vat_sprite_decode(vat_sprite_texel(select(p.f1, p.f0, p.t < 0.5), slot));
    }
    return vat_sprite_sample(vat_sprite_texel(p.f0, slot), vat_sprite_texel(p.f1, slot), p.t);
}

// Corner `corner` (0..4: (-,-), (+,-), (+,+), (-,+) along the card's right and up axes) of the card
// of live particle `s` of instance `inst`, facing the world point `camera`: the centre placed by
// vat_to_world; normal n = normalize(camera - centre) (+Z when they coincide); right =
// normalize((n.z, 0, -n.x)) (+X when n is vertical); up = cross(n, right); both rotated by the
// particle's rotation (counter-clockwise on screen); edge length size * scale. The tangent is the
// rotated right axis with bitangent sign +1 (cross(n, right) is the card's up, texture v down).
fn vat_sprite_card(inst: InstanceRecord, s: SpriteParticle, corner: u32, camera: vec3<f32>) -> DecodedVertex {
    let centre = vat_to_world(inst, asset.particle_min + s.n * asset.particle_extent, vec3<f32>(0.0, 1.0, 0.0)).position.xyz;
    let n = vat_normalize(camera - centre);
    var right = vec3<f32>(1.0, 0.0, 0.0);
    let r2 = n.z * n.z + n.x * n.x;
    if r2 > 1e-12 {
        let inv = 1.0 / sqrt(r2);
        right = vec3<f32>(n.z * inv, 0.0, -n.x * inv);
    }
    let up = vec3<f32>(n.y * right.z - n.z * right.y, n.z * right.x - n.x * right.z, n.x * right.y - n.y * right.x);
    let cr = cos(s.rotation);
    let sr = sin(s.rotation);
    let r = right * cr + up * sr;
    let u = up * cr - right * sr;
    let ox = select(-0.5, 0.5, corner == 1u || corner == 2u);
    let oy = select(-0.5, 0.5, corner >= 2u);
    let edge = s.size * inst.scale;
    let p = centre + (r * ox + u * oy) * edge;
    return DecodedVertex(vec4<f32>(p, 1.0), vec4<f32>(n, 0.0), vec4<f32>(r, 1.0));
}

// Decodes card corner `vertex` (slot vertex / 4, corner vertex % 4) of a sprite asset for instance
// `inst` at `time`, facing `camera`: a dead slot gives all zeros (position.w == 0), which callers
// draw at HIDDEN_POSITION.
fn vat_sprite_vertex(inst: InstanceRecord, vertex: u32, time: f32, camera: vec3<f32>) -> DecodedVertex {
    let s = vat_sprite_particle(inst, vertex / 4u, time);
    if !s.alive {
        return DecodedVertex(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    }
    return vat_sprite_card(inst, s, vertex % 4u, camera);
}

// cs_decode of a sprite asset: the same threads and output, card corners facing
// frame.camera_position (a dead slot's corners write all zeros).
@compute @workgroup_size(DECODE_WORKGROUP_SIZE)
fn cs_decode_sprite(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
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
    decoded[index] = vat_sprite_vertex(instances[instance_index], vertex, frame.time, frame.camera_position);
}

// Sprite mode (a sprite asset in VAT mode), colour pass.
@vertex
fn vs_sprite(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> VertexOutput {
    return vat_output_sprite(vertex, instance_index);
}

// What vs_sprite outputs for card corner `vertex` of draw instance `instance_index` (vat_vertex with
// PROGRAM_SPRITE): material 0, texture coordinates (0, 1), (1, 1), (1, 0), (0, 0) at corners 0..4,
// the particle's colour as the vertex colour; a dead slot is hidden. The previous world position
// is the same corner of the slot's particle at frame.previous_time placed by the previous record
// and facing the current camera position; a particle born since keeps its current position (the
// camera's motion only).
fn vat_output_sprite(vertex: u32, instance_index: u32) -> VertexOutput {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return vat_hidden_output();
    }
    let s = vat_sprite_particle(inst, vertex / 4u, frame.time);
    if !s.alive {
        return vat_hidden_output();
    }
    let corner = vertex % 4u;
    let v = vat_sprite_card(inst, s, corner, frame.camera_position);
    let uv = vec2<f32>(select(0.0, 1.0, corner == 1u || corner == 2u), select(1.0, 0.0, corner >= 2u));
    var out = vat_lit_output(inst, v, 0u, uv, s.color);
    out.instance = instance_list[instance_index];
    if MOTION_VECTORS {
        let previous = vat_previous_instance(out.instance);
        let ps = vat_sprite_particle(previous, vertex / 4u, frame.previous_time);
        if ps.alive {
            out.previous_world_position = vat_sprite_card(previous, ps, corner, frame.camera_position).position.xyz;
        }
    }
    return out;
}

// Sprite mode, shadow pass: the same cards (facing the camera, not the light).
@vertex
fn vs_sprite_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> @builtin(position) vec4<f32> {
    let inst = vat_drawn_instance(instance_index);
    if vat_is_hidden(inst) {
        return HIDDEN_POSITION;
    }
    let v = vat_sprite_vertex(inst, vertex, frame.time, frame.camera_position);
    if v.position.w == 0.0 {
        return HIDDEN_POSITION;
    }
    return frame.light_view_proj * vec4<f32>(v.position.xyz, 1.0);
}
