//! Issue 34 research (scratch, not part of vat): a compute-shader proxy of the per-vertex decode cost
//! of packed64, bone mode and the proposed skin + variable-rate residual format, on the Vulkan adapter
//! wgpu picks first (CPU adapter first, as vat does). Every invocation decodes one vertex of one
//! instance at two frames (linear interpolation) and writes one vec4. Decode only: no rasterisation,
//! so the ratios are an upper bound of what a full frame would show. Synthetic, humanoid-sized data
//! (2,438 vertices, 345 frames, 25 bones, 52% of vertices at 0 residual bits).
//! Not built by the workspace: a one-file crate outside it with wgpu =30.0.2, pollster 0.4 and
//! bytemuck =1.25.2 (docs/notes/compressed-format.md, "Reproducing every figure").
//! usage: decbench [INSTANCES (400)] [REPS (9)]
use wgpu::util::DeviceExt;

const V: u32 = 2438;
const F: u32 = 345;
const B: u32 = 25;
const WIDTH: u32 = 4096;

const COMMON: &str = r#"
struct P { instances: u32, vertex_count: u32, frames: u32, bones: u32 }
@group(0) @binding(0) var<uniform> prm: P;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
fn hash(x: u32) -> u32 { var h = x * 747796405u + 2891336453u; h = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u; return (h >> 22u) ^ h; }
fn oct_decode(o: vec2<f32>) -> vec3<f32> {
    var v = vec3<f32>(o.x, o.y, 1.0 - abs(o.x) - abs(o.y));
    if v.z < 0.0 { v.x = (1.0 - abs(o.y)) * select(-1.0, 1.0, o.x >= 0.0); v.y = (1.0 - abs(o.x)) * select(-1.0, 1.0, o.y >= 0.0); }
    return normalize(v);
}
struct Job { vertex: u32, f0: u32, f1: u32, t: f32, slot: u32, ok: bool }
fn job(id: u32) -> Job {
    let inst = id / prm.vertex_count;
    let h = hash(inst);
    let f0 = h % (prm.frames - 1u);
    return Job(id % prm.vertex_count, f0, f0 + 1u, f32(hash(h) & 1023u) / 1024.0, id, inst < prm.instances);
}
"#;

const PACKED64: &str = r#"
@group(0) @binding(2) var tex: texture_2d<u32>;
fn bits(w0: u32, w1: u32, offset: u32, count: u32) -> u32 {
    if offset >= 32u { return extractBits(w1, offset - 32u, count); }
    if offset + count <= 32u { return extractBits(w0, offset, count); }
    let lo = 32u - offset;
    return extractBits(w0, offset, lo) | (extractBits(w1, 0u, count - lo) << lo);
}
fn load(frame: u32, v: u32) -> array<vec3<f32>, 2> {
    let t = frame * prm.vertex_count + v;
    let x = textureLoad(tex, vec2<i32>(i32(t % 4096u), i32(t / 4096u)), 0).xy;
    let p = vec3<f32>(f32(bits(x.x, x.y, 0u, 14u)) / 16383.0, f32(bits(x.x, x.y, 14u, 13u)) / 8191.0, f32(bits(x.x, x.y, 27u, 13u)) / 8191.0);
    let o = vec2<f32>(f32(bits(x.x, x.y, 40u, 12u)) / 4095.0, f32(bits(x.x, x.y, 52u, 12u)) / 4095.0) * 2.0 - 1.0;
    return array<vec3<f32>, 2>(p, oct_decode(o));
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let j = job(gid.x + gid.y * nw.x * 64u);
    if !j.ok { return; }
    let a = load(j.f0, j.vertex); let b = load(j.f1, j.vertex);
    let p = mix(a[0], b[0], j.t); let n = normalize(mix(a[1], b[1], j.t));
    out[j.slot] = vec4<f32>(p, dot(n, vec3<f32>(1.0, 2.0, 3.0)));
}
"#;

const BONE: &str = r#"
@group(0) @binding(2) var bones: texture_2d<f32>;
@group(0) @binding(3) var<storage, read> weights: array<f32>;
@group(0) @binding(4) var<storage, read> joints: array<u32>;
@group(0) @binding(5) var<storage, read> rest: array<vec4<f32>>;
fn row(frame: u32, bone: u32, r: u32) -> vec4<f32> {
    let t = (frame * prm.bones + bone) * 3u + r;
    return textureLoad(bones, vec2<i32>(i32(t % 4096u), i32(t / 4096u)), 0);
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let j = job(gid.x + gid.y * nw.x * 64u);
    if !j.ok { return; }
    var r0 = vec4<f32>(0.0); var r1 = vec4<f32>(0.0); var r2 = vec4<f32>(0.0);
    for (var k = 0u; k < 4u; k++) {
        let slot = j.vertex * 4u + k;
        let w = weights[slot];
        if w == 0.0 { continue; }
        let b = (joints[slot / 2u] >> (16u * (slot & 1u))) & 0xFFFFu;
        let wa = w * (1.0 - j.t); let wb = w * j.t;
        r0 += wa * row(j.f0, b, 0u) + wb * row(j.f1, b, 0u);
        r1 += wa * row(j.f0, b, 1u) + wb * row(j.f1, b, 1u);
        r2 += wa * row(j.f0, b, 2u) + wb * row(j.f1, b, 2u);
    }
    let h = vec4<f32>(rest[2u * j.vertex].xyz, 1.0);
    let p = vec3<f32>(dot(r0, h), dot(r1, h), dot(r2, h));
    let c0 = vec3<f32>(r0.x, r1.x, r2.x); let c1 = vec3<f32>(r0.y, r1.y, r2.y); let c2 = vec3<f32>(r0.z, r1.z, r2.z);
    let nr = rest[2u * j.vertex + 1u].xyz;
    let n = normalize(cross(c1, c2) * nr.x + cross(c2, c0) * nr.y + cross(c0, c1) * nr.z);
    out[j.slot] = vec4<f32>(p, dot(n, vec3<f32>(1.0, 2.0, 3.0)));
}
"#;

const BONE_RES_TAIL: &str = r#"
struct CompVertex { rest: vec3<f32>, normal_oct: u32, joints: u32, weights: u32, base: u32, widths: u32 }
@group(0) @binding(6) var<storage, read> verts: array<CompVertex>;
@group(0) @binding(7) var<storage, read> residual: array<u32>;
fn res_bits(o: u32, n: u32) -> u32 {
    if n == 0u { return 0u; }
    let i = o >> 5u; let sh = o & 31u;
    var x = residual[i] >> sh;
    if sh + n > 32u { x |= residual[i + 1u] << (32u - sh); }
    return x & ((1u << n) - 1u);
}
fn sgn(x: u32, shift: u32, n: u32) -> f32 {
    if n == 0u { return 0.0; }
    return f32(bitcast<i32>((x >> shift) << (32u - n)) >> (32u - n));
}
fn residual_of(j: Job, m: vec3<f32>) -> array<vec3<f32>, 2> {
    let v = verts[j.vertex];
    let bp = v.widths & 15u; let bn = (v.widths >> 4u) & 15u; let wdt = 3u * bp + 2u * bn;
    var d = vec3<f32>(0.0); var dn = vec2<f32>(0.0);
    for (var f = 0u; f < 2u; f++) {
        let fr = select(j.f0, j.f1, f == 1u); let wf = select(1.0 - j.t, j.t, f == 1u);
        let o = v.base + fr * wdt;
        let qp = res_bits(o, 3u * bp);
        d += wf * vec3<f32>(sgn(qp, 0u, bp), sgn(qp, bp, bp), sgn(qp, 2u * bp, bp));
        let qn = res_bits(o + 3u * bp, 2u * bn);
        dn += wf * vec2<f32>(sgn(qn, 0u, bn), sgn(qn, bn, bn));
    }
    let s = select(-1.0, 1.0, m.z >= 0.0); let a = -1.0 / (s + m.z); let bb = m.x * m.y * a;
    let t1 = vec3<f32>(1.0 + s * m.x * m.x * a, s * bb, -s * m.x); let t2 = vec3<f32>(bb, s + m.y * m.y * a, -m.y);
    return array<vec3<f32>, 2>(0.000577 * d, normalize(m + 0.0247 * (dn.x * t1 + dn.y * t2)));
}
"#;

const COMPRESSED_OLD: &str = r#"
@group(0) @binding(2) var bones: texture_2d<u32>;
struct CompVertex { rest: vec3<f32>, normal_oct: u32, joints: u32, weights: u32, base: u32, widths: u32 }
@group(0) @binding(3) var<storage, read> verts: array<CompVertex>;
@group(0) @binding(4) var<storage, read> residual: array<u32>;
fn res_bits(o: u32, n: u32) -> u32 {
    if n == 0u { return 0u; }
    let i = o >> 5u; let sh = o & 31u;
    var x = residual[i] >> sh;
    if sh + n > 32u { x |= residual[i + 1u] << (32u - sh); }
    return x & ((1u << n) - 1u);
}
fn sgn(x: u32, shift: u32, n: u32) -> f32 {
    if n == 0u { return 0.0; }
    return f32(bitcast<i32>((x >> shift) << (32u - n)) >> (32u - n));
}
fn bone(frame: u32, b: u32, w: f32, r: ptr<function, array<vec4<f32>, 3>>) {
    let t = frame * prm.bones + b;
    let e = textureLoad(bones, vec2<i32>(i32(t % 4096u), i32(t / 4096u)), 0);
    let q = normalize(vec4<f32>(unpack2x16snorm(e.x), unpack2x16snorm(e.y)));
    let tr = vec3<f32>(unpack2x16unorm(e.z), unpack2x16unorm(e.w).x) * 2.0 - 1.0;
    let x2 = q.x + q.x; let y2 = q.y + q.y; let z2 = q.z + q.z;
    let xx = q.x * x2; let xy = q.x * y2; let xz = q.x * z2; let yy = q.y * y2; let yz = q.y * z2; let zz = q.z * z2;
    let wx = q.w * x2; let wy = q.w * y2; let wz = q.w * z2;
    (*r)[0] += w * vec4<f32>(1.0 - (yy + zz), xy - wz, xz + wy, tr.x);
    (*r)[1] += w * vec4<f32>(xy + wz, 1.0 - (xx + zz), yz - wx, tr.y);
    (*r)[2] += w * vec4<f32>(xz - wy, yz + wx, 1.0 - (xx + yy), tr.z);
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let j = job(gid.x + gid.y * nw.x * 64u);
    if !j.ok { return; }
    let v = verts[j.vertex];
    var r = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    let wv = unpack4x8unorm(v.weights);
    for (var k = 0u; k < 4u; k++) {
        let w = wv[k];
        if w == 0.0 { continue; }
        let b = (v.joints >> (8u * k)) & 0xFFu;
        bone(j.f0, b, w * (1.0 - j.t), &r);
        bone(j.f1, b, w * j.t, &r);
    }
    let bp = v.widths & 15u; let bn = (v.widths >> 4u) & 15u; let wdt = 3u * bp + 2u * bn;
    var d = vec3<f32>(0.0); var dn = vec2<f32>(0.0);
    for (var f = 0u; f < 2u; f++) {
        let fr = select(j.f0, j.f1, f == 1u); let wf = select(1.0 - j.t, j.t, f == 1u);
        let o = v.base + fr * wdt;
        let qp = res_bits(o, 3u * bp);
        d += wf * vec3<f32>(sgn(qp, 0u, bp), sgn(qp, bp, bp), sgn(qp, 2u * bp, bp));
        let qn = res_bits(o + 3u * bp, 2u * bn);
        dn += wf * vec2<f32>(sgn(qn, 0u, bn), sgn(qn, bn, bn));
    }
    let h = vec4<f32>(v.rest, 1.0);
    let p = vec3<f32>(dot(r[0], h), dot(r[1], h), dot(r[2], h)) + 0.000577 * d;
    let c0 = vec3<f32>(r[0].x, r[1].x, r[2].x); let c1 = vec3<f32>(r[0].y, r[1].y, r[2].y); let c2 = vec3<f32>(r[0].z, r[1].z, r[2].z);
    let nr = oct_decode(unpack2x16unorm(v.normal_oct) * 2.0 - 1.0);
    let m = normalize(cross(c1, c2) * nr.x + cross(c2, c0) * nr.y + cross(c0, c1) * nr.z);
    let s = select(-1.0, 1.0, m.z >= 0.0); let a = -1.0 / (s + m.z); let bb = m.x * m.y * a;
    let t1 = vec3<f32>(1.0 + s * m.x * m.x * a, s * bb, -s * m.x); let t2 = vec3<f32>(bb, s + m.y * m.y * a, -m.y);
    let n = normalize(m + 0.0247 * (dn.x * t1 + dn.y * t2));
    out[j.slot] = vec4<f32>(p, dot(n, vec3<f32>(1.0, 2.0, 3.0)));
}
"#;

const COMPRESSED: &str = r#"
@group(0) @binding(2) var bones: texture_2d<u32>;
struct CompVertex { rest: vec3<f32>, normal_oct: u32, joints: u32, weights: u32, base: u32, widths: u32 }
@group(0) @binding(3) var<storage, read> verts: array<CompVertex>;
@group(0) @binding(4) var<storage, read> residual: array<u32>;
fn res_bits(o: u32, n: u32) -> u32 {
    if n == 0u { return 0u; }
    let i = o >> 5u; let sh = o & 31u;
    var x = residual[i] >> sh;
    if sh + n > 32u { x |= residual[i + 1u] << (32u - sh); }
    return x & ((1u << n) - 1u);
}
fn sgn(x: u32, shift: u32, n: u32) -> f32 {
    if n == 0u { return 0.0; }
    return f32(bitcast<i32>((x >> shift) << (32u - n)) >> (32u - n));
}
fn bone(frame: u32, b: u32, w: f32, r: ptr<function, array<vec4<f32>, 3>>) {
    let t = frame * prm.bones + b;
    let e = textureLoad(bones, vec2<i32>(i32(t % 4096u), i32(t / 4096u)), 0);
    let q = normalize(vec4<f32>(unpack2x16snorm(e.x), unpack2x16snorm(e.y)));
    let tr = vec3<f32>(unpack2x16unorm(e.z), unpack2x16unorm(e.w).x) * 2.0 - 1.0;
    let x2 = q.x + q.x; let y2 = q.y + q.y; let z2 = q.z + q.z;
    let xx = q.x * x2; let xy = q.x * y2; let xz = q.x * z2; let yy = q.y * y2; let yz = q.y * z2; let zz = q.z * z2;
    let wx = q.w * x2; let wy = q.w * y2; let wz = q.w * z2;
    (*r)[0] += w * vec4<f32>(1.0 - (yy + zz), xy - wz, xz + wy, tr.x);
    (*r)[1] += w * vec4<f32>(xy + wz, 1.0 - (xx + zz), yz - wx, tr.y);
    (*r)[2] += w * vec4<f32>(xz - wy, yz + wx, 1.0 - (xx + yy), tr.z);
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let j = job(gid.x + gid.y * nw.x * 64u);
    if !j.ok { return; }
    let v = verts[j.vertex];
    var r = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    let wv = unpack4x8unorm(v.weights);
    for (var k = 0u; k < 4u; k++) {
        let w = wv[k];
        if w == 0.0 { continue; }
        let b = (v.joints >> (8u * k)) & 0xFFu;
        bone(j.f0, b, w * (1.0 - j.t), &r);
        bone(j.f1, b, w * j.t, &r);
    }
    let bp = v.widths & 15u; let bn = (v.widths >> 4u) & 15u; let wdt = 3u * bp + 2u * bn;
    var d = vec3<f32>(0.0); var dn = vec2<f32>(0.0);
    for (var f = 0u; f < 2u; f++) {
        let fr = select(j.f0, j.f1, f == 1u); let wf = select(1.0 - j.t, j.t, f == 1u);
        // one 32-bit window (3 b_p + 2 b_n <= 32), branch-free; extractBits on i32 sign-extends
        let o = v.base + fr * wdt; let i = o >> 5u; let sh = o & 31u;
        let x = bitcast<i32>((residual[i] >> sh) | select(0u, residual[i + 1u] << ((32u - sh) & 31u), sh != 0u));
        d += wf * vec3<f32>(f32(extractBits(x, 0u, bp)), f32(extractBits(x, bp, bp)), f32(extractBits(x, 2u * bp, bp)));
        dn += wf * vec2<f32>(f32(extractBits(x, 3u * bp, bn)), f32(extractBits(x, 3u * bp + bn, bn)));
    }
    let h = vec4<f32>(v.rest, 1.0);
    let p = vec3<f32>(dot(r[0], h), dot(r[1], h), dot(r[2], h)) + 0.000577 * d;
    let c0 = vec3<f32>(r[0].x, r[1].x, r[2].x); let c1 = vec3<f32>(r[0].y, r[1].y, r[2].y); let c2 = vec3<f32>(r[0].z, r[1].z, r[2].z);
    let nr = oct_decode(unpack2x16unorm(v.normal_oct) * 2.0 - 1.0);
    let m = normalize(cross(c1, c2) * nr.x + cross(c2, c0) * nr.y + cross(c0, c1) * nr.z);
    let s = select(-1.0, 1.0, m.z >= 0.0); let a = -1.0 / (s + m.z); let bb = m.x * m.y * a;
    let t1 = vec3<f32>(1.0 + s * m.x * m.x * a, s * bb, -s * m.x); let t2 = vec3<f32>(bb, s + m.y * m.y * a, -m.y);
    let n = normalize(m + 0.0247 * (dn.x * t1 + dn.y * t2));
    out[j.slot] = vec4<f32>(p, dot(n, vec3<f32>(1.0, 2.0, 3.0)));
}
"#;


struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

fn main() {
    let instances: u32 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(400);
    let reps: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(9);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let inst = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter = adapters.into_iter().next().expect("no Vulkan adapter");
    println!("adapter: {:?}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .expect("the adapter opens a device with its own limits");
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let tex = |format: wgpu::TextureFormat, texels: u32, bytes_per: u32, rng: &mut Rng| {
        let h = texels.div_ceil(WIDTH);
        let mut data = vec![0u8; (WIDTH * h * bytes_per) as usize];
        for c in data.chunks_mut(4) {
            let x = rng.next();
            c.copy_from_slice(&x.to_le_bytes());
        }
        if format == wgpu::TextureFormat::Rgba32Float {
            for c in data.chunks_mut(4) {
                let f = (rng.next() as f32 / u32::MAX as f32) * 2.0 - 1.0;
                c.copy_from_slice(&f.to_le_bytes());
            }
        }
        let t = device.create_texture_with_data(
            &queue,
            &wgpu::TextureDescriptor {
                label: None,
                size: wgpu::Extent3d { width: WIDTH, height: h, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            },
            wgpu::util::TextureDataOrder::LayerMajor,
            &data,
        );
        t.create_view(&Default::default())
    };
    let storage = |bytes: &[u8]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    // humanoid-like data: 4 influences (1-4 used), compressed widths as measured (52% zero)
    let mut weights = Vec::new();
    let mut joints16 = Vec::new();
    let mut rest = Vec::new();
    let mut comp = Vec::new();
    let mut base = 0u32;
    for _ in 0..V {
        let used = 1 + rng.next() % 4;
        let mut w = [0f32; 4];
        let mut j = [0u32; 4];
        for k in 0..used as usize {
            w[k] = 1.0 / used as f32;
            j[k] = rng.next() % B;
        }
        weights.extend_from_slice(&w);
        joints16.push(j[0] | j[1] << 16);
        joints16.push(j[2] | j[3] << 16);
        rest.extend_from_slice(&[0.1f32, 0.9, 0.05, 1.0, 0.0, 0.0, 1.0, 0.0]);
        let zero = rng.next() % 100 < 52;
        let (bp, bn) = if zero { (0, 0) } else { (2 + rng.next() % 3, [0, 2, 3][(rng.next() % 3) as usize]) };
        let wq: Vec<u32> = w.iter().map(|x| (x * 255.0).round() as u32).collect();
        comp.extend_from_slice(&[
            0.1f32.to_bits(),
            0.9f32.to_bits(),
            0.05f32.to_bits(),
            0x8000_8000,
            j[0] | j[1] << 8 | j[2] << 16 | j[3] << 24,
            wq[0] | wq[1] << 8 | wq[2] << 16 | wq[3] << 24,
            base,
            bp | bn << 4,
        ]);
        base += F * (3 * bp + 2 * bn);
    }
    let residual: Vec<u32> = (0..base / 32 + 2).map(|_| rng.next()).collect();
    println!("residual stream: {:.2} bits/v/f", base as f64 / (V * F) as f64);
    let n = instances * V;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: n as u64 * 16,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let prm = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&[instances, V, F, B]),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let p64 = tex(wgpu::TextureFormat::Rg32Uint, V * F, 8, &mut rng);
    let bone_tex = tex(wgpu::TextureFormat::Rgba32Float, B * F * 3, 16, &mut rng);
    let comp_tex = tex(wgpu::TextureFormat::Rgba32Uint, B * F, 16, &mut rng);
    let wbuf = storage(bytemuck::cast_slice(&weights));
    let jbuf = storage(bytemuck::cast_slice(&joints16));
    let rbuf = storage(bytemuck::cast_slice(&rest));
    let cbuf = storage(bytemuck::cast_slice(&comp));
    let resbuf = storage(bytemuck::cast_slice(&residual));
    let make = |name: &str, src: &str, extra: Vec<wgpu::BindingResource<'_>>| {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(format!("{COMMON}{src}").into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let mut entries = vec![
            wgpu::BindGroupEntry { binding: 0, resource: prm.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
        ];
        for (i, r) in extra.into_iter().enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: 2 + i as u32, resource: r });
        }
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        (name.to_string(), pipeline, bg)
    };
    let bone_res = format!("{BONE_RES_TAIL}{}", BONE.replace(
        "    out[j.slot] = vec4<f32>(p, dot(n, vec3<f32>(1.0, 2.0, 3.0)));",
        "    let rr = residual_of(j, n);\n    out[j.slot] = vec4<f32>(p + rr[0], dot(rr[1], vec3<f32>(1.0, 2.0, 3.0)));"));
    let skin16 = COMPRESSED.replace("let bp = v.widths & 15u; let bn = (v.widths >> 4u) & 15u;", "let bp = 0u; let bn = 0u;");
    let variants = [
        make("packed64", PACKED64, vec![wgpu::BindingResource::TextureView(&p64)]),
        make(
            "bone mode",
            BONE,
            vec![
                wgpu::BindingResource::TextureView(&bone_tex),
                wbuf.as_entire_binding(),
                jbuf.as_entire_binding(),
                rbuf.as_entire_binding(),
            ],
        ),
        make(
            "bone mode rows + residual",
            &bone_res,
            vec![
                wgpu::BindingResource::TextureView(&bone_tex),
                wbuf.as_entire_binding(),
                jbuf.as_entire_binding(),
                rbuf.as_entire_binding(),
                cbuf.as_entire_binding(),
                resbuf.as_entire_binding(),
            ],
        ),
        make(
            "16-bit bone texel, no residual bits",
            &skin16,
            vec![wgpu::BindingResource::TextureView(&comp_tex), cbuf.as_entire_binding(), resbuf.as_entire_binding()],
        ),
        make(
            "skin + residual (branchy reads)",
            COMPRESSED_OLD,
            vec![wgpu::BindingResource::TextureView(&comp_tex), cbuf.as_entire_binding(), resbuf.as_entire_binding()],
        ),
        make(
            "skin + residual",
            COMPRESSED,
            vec![wgpu::BindingResource::TextureView(&comp_tex), cbuf.as_entire_binding(), resbuf.as_entire_binding()],
        ),
    ];
    let groups = n.div_ceil(64);
    let (gx, gy) = if groups <= 65535 { (groups, 1) } else { (65535, groups.div_ceil(65535)) };
    let mut times = vec![Vec::new(); variants.len()];
    for rep in 0..reps + 1 {
        for (i, (_, pipeline, bg)) in variants.iter().enumerate() {
            let mut enc = device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bg, &[]);
                pass.dispatch_workgroups(gx, gy, 1);
            }
            let t = std::time::Instant::now();
            queue.submit([enc.finish()]);
            device.poll(wgpu::PollType::wait_indefinitely()).expect("the device finishes the dispatch");
            if rep > 0 {
                times[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base_ms = med(&mut times[0].clone());
    for (i, (name, _, _)) in variants.iter().enumerate() {
        let m = med(&mut times[i]);
        println!(
            "{name}: median {m:.2} ms for {instances} x {V} vertex decodes (2 frames each), {:.2}x packed64",
            m / base_ms
        );
    }
}
