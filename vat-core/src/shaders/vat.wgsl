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

// ClipRecord.flags bit 0: the clip wraps (looping); clear: one-shot, clamps (vat_core::gpu::CLIP_FLAG_LOOPING).
const CLIP_FLAG_LOOPING: u32 = 1u;
// InstanceRecord.clip_b bits 0..16 hold the clip index; bits 16..32 the fade duration as binary16.
const CLIP_INDEX_MASK: u32 = 0xFFFFu;
// Packed64: the 40 position bits start at bit 0; the 12 + 12 octahedral normal bits follow at 40 and 52.
const PACKED64_NORMAL_U_OFFSET: u32 = 40u;
const PACKED64_NORMAL_V_OFFSET: u32 = 52u;
const PACKED64_NORMAL_BITS: u32 = 12u;
// Threads per workgroup of cs_decode (vat_core::gpu::DECODE_WORKGROUP_SIZE).
const DECODE_WORKGROUP_SIZE: u32 = 64u;

// ---------------------------------------------------------------------------------------------------
// GPU-visible structs (twins of the Rust structs named alike)
// ---------------------------------------------------------------------------------------------------

// Per-frame values shared by every pass. Twin of vat_core::gpu::FrameUniforms (304 bytes).
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
    // Multiplies the camera distance before it is compared with lod_distances (1 = none).
    lod_bias: f32,
    // Number of LOD levels of the drawn asset (1..=9); lod_distances[0..lod_count-1] are used.
    lod_count: u32,
    // Coarsest LOD that still decodes clip B while cross-fading (coarser LODs show clip A only).
    cross_fade_max_lod: u32,
    // Coarsest LOD drawn into the shadow map.
    shadow_max_lod: u32,
}

// Per-asset constants. Twin of vat_core::gpu::AssetConstants (64 bytes).
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
    // vat_core::gpu::vertex_format_code of the asset's vertex format (0 = Packed64, the only one
    // this shader decodes so far).
    vertex_format: u32,
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
    _pad: vec2<u32>,
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

// One decoded vertex in world space. Twin of vat_core::gpu::DecodedVertex (32 bytes).
struct DecodedVertex {
    // xyz: world position, metres; w = 1.
    position: vec4<f32>,
    // xyz: unit world normal; w = 0.
    normal: vec4<f32>,
}

// ---------------------------------------------------------------------------------------------------
// Bindings (vat_core::gpu::BINDINGS)
// ---------------------------------------------------------------------------------------------------

// Group 0: per frame.
@group(0) @binding(0) var<uniform> frame: FrameUniforms;

// Group 1: per asset.
// Animation texture: Packed64, one Rg32Uint texel per vertex per frame, texel t = frame * vertex_count
// + vertex at (t % texture_width, t / texture_width).
@group(1) @binding(0) var vat_texture: texture_2d<u32>;
@group(1) @binding(1) var<storage, read> clips: array<ClipRecord>;
@group(1) @binding(2) var<uniform> asset: AssetConstants;

// Group 2: per crowd.
@group(2) @binding(0) var<storage, read> instances: array<InstanceRecord>;
@group(2) @binding(1) var<uniform> decode_params: DecodeParams;
@group(2) @binding(2) var<storage, read_write> decoded: array<DecodedVertex>;

// ---------------------------------------------------------------------------------------------------
// Playback
// ---------------------------------------------------------------------------------------------------

// Phase of a clip at `time` (epoch-relative seconds), in cycles: x = offset + time * rate; looping clips
// take the fractional part (in [0, 1]; rounding may give exactly 1.0, which vat_frame_sample maps to
// frame 0), one-shot clips clamp x into [0, 1].
fn vat_phase(offset: f32, time: f32, rate: f32, looping: bool) -> f32 {
    let x = offset + time * rate;
    if looping {
        return x - floor(x);
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
        f0 = u32(fl) % frame_count;
        prev = (f0 + frame_count - 1u) % frame_count;
        f1 = (f0 + 1u) % frame_count;
        next = (f0 + 2u) % frame_count;
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
    let max_q = f32((1u << PACKED64_NORMAL_BITS) - 1u);
    let ox = f32(u) / max_q * 2.0 - 1.0;
    let oy = f32(v) / max_q * 2.0 - 1.0;
    return VertexSample(n, vat_oct_decode(vec2<f32>(ox, oy)));
}

// ---------------------------------------------------------------------------------------------------
// Vertex decoding
// ---------------------------------------------------------------------------------------------------

// Loads and unpacks texel t = frame * vertex_count + vertex (frame counted over all clips).
// t is computed in u32: exact while frame_count * vertex_count <= 2^32, which every texture that fits
// the device (at most 16384 x 16384 = 2^28 texels) satisfies.
fn vat_load_vertex(frame_index: u32, vertex: u32) -> VertexSample {
    let t = frame_index * asset.vertex_count + vertex;
    let width = asset.texture_width;
    let texel = textureLoad(vat_texture, vec2<i32>(i32(t % width), i32(t / width)), 0);
    return vat_unpack_packed64(texel.xy, asset.position_bits.xyz);
}

// Samples clip `clip_index` of one vertex at `time` (s) with phase offset (cycles) and rate (cycles/s):
// interpolates the normalised positions and the unit normals of the sampled frames ("lerp before
// decode"). The normal of the result is not normalised. An index past the clip table reads its last clip.
fn vat_decode_clip(clip_index: u32, phase_offset: f32, time: f32, rate: f32, vertex: u32) -> VertexSample {
    let clip = clips[min(clip_index, arrayLength(&clips) - 1u)];
    let looping = (clip.flags & CLIP_FLAG_LOOPING) != 0u;
    let phase = vat_phase(phase_offset, time, rate, looping);
    let s = vat_frame_sample(phase, clip.frame_count, looping);
    let w = s.weights;
    if INTERPOLATION == INTERPOLATION_POINT {
        // One fetch: the frame of weight 1. Equals the 4-term sum (1 * b + 0 * finite terms) except
        // possibly for the sign of a zero component.
        var chosen = s.frames.z;
        if w.y == 1.0 {
            chosen = s.frames.y;
        }
        return vat_load_vertex(clip.first_frame + chosen, vertex);
    }
    let b = vat_load_vertex(clip.first_frame + s.frames.y, vertex);
    let c = vat_load_vertex(clip.first_frame + s.frames.z, vertex);
    if INTERPOLATION == INTERPOLATION_CUBIC {
        let a = vat_load_vertex(clip.first_frame + s.frames.x, vertex);
        let d = vat_load_vertex(clip.first_frame + s.frames.w, vertex);
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
    var mixed = vat_decode_clip(inst.clip_a, inst.phase_offset_a, time, inst.rate_a, vertex);
    let fade_duration = unpack2x16float(inst.clip_b).y;
    let w = vat_fade_weight(time, inst.fade_start, fade_duration);
    if w > 0.0 {
        let b = vat_decode_clip(inst.clip_b & CLIP_INDEX_MASK, inst.phase_offset_b, time, inst.rate_b, vertex);
        mixed.position = mixed.position * (1.0 - w) + b.position * w;
        mixed.normal = mixed.normal * (1.0 - w) + b.normal * w;
    }
    let p = asset.bounds_min + mixed.position * asset.bounds_extent;
    let n = vat_normalize(mixed.normal);
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let q = inst.scale * p;
    let world = inst.position + vec3<f32>(c * q.x + s * q.z, q.y, c * q.z - s * q.x);
    let world_normal = vat_normalize(vec3<f32>(c * n.x + s * n.z, n.y, c * n.z - s * n.x));
    return DecodedVertex(vec4<f32>(world, 1.0), vec4<f32>(world_normal, 0.0));
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
