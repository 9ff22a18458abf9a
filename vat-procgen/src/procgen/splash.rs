//! The built-in fluid source: a liquid splash. A drop falls into a shallow pool; a crown of
//! droplets is thrown up and out, falls back under gravity and merges with the pool again. The
//! liquid is a field of metaballs meshed per frame by marching tetrahedra on a fixed grid, so the
//! vertex and triangle counts change every frame (the fluid mode's job). Deterministic: no
//! randomness but a fixed xorshift, same bytes every call.

use glam::Vec3;

use vat_bake::fluid::{FluidMesh, FluidSequence};

/// Frames of the splash.
pub(crate) const SPLASH_FRAMES: usize = 48;
/// Frames per second of the splash.
pub(crate) const SPLASH_FPS: f32 = 24.0;

/// Grid cells per axis (x, y, z) of the meshing; the box is `BOX_MIN..BOX_MAX`.
const CELLS: [usize; 3] = [36, 18, 36];
const BOX_MIN: Vec3 = Vec3::new(-1.0, -0.05, -1.0);
const BOX_MAX: Vec3 = Vec3::new(1.0, 0.95, 1.0);
/// The iso level of the field (a ball alone has its surface at `d = 1.6 r * sqrt(1 - ISO^(1/3))`,
/// about `1.03 r`).
const ISO: f32 = 0.2;
const GRAVITY: f32 = 9.81;
/// When the drop meets the pool, seconds.
const IMPACT: f32 = 0.35;

/// A metaball: centre (metres) and radius (metres).
struct Ball {
    centre: Vec3,
    radius: f32,
}

/// The balls of the splash at time `t` (seconds).
fn balls(t: f32) -> Vec<Ball> {
    let mut out = Vec::new();
    let impact = IMPACT;
    // The falling drop, until it lands.
    if t < impact {
        let y = 0.85 - 0.5 * GRAVITY * t * t;
        out.push(Ball { centre: Vec3::new(0.0, y.max(0.0), 0.0), radius: 0.11 });
    }
    // The crown: droplets thrown from the impact ring, ballistic, shrinking as they fall back.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    for i in 0..14 {
        let a = i as f32 / 14.0 * std::f32::consts::TAU + 0.2 * next();
        let speed = 1.1 + 0.5 * next();
        let up = 2.0 + 0.8 * next();
        let radius = 0.08 + 0.04 * next();
        let dt = t - impact;
        if dt <= 0.0 {
            continue;
        }
        let y = 0.05 + up * dt - 0.5 * GRAVITY * dt * dt;
        if y < -0.05 {
            continue;
        }
        let r = 0.12 + speed * dt;
        out.push(Ball { centre: Vec3::new(r * a.cos(), y, r * a.sin()), radius });
    }
    // The jet that rises from the centre once the crater closes, and falls back.
    let dt = t - impact - 0.25;
    if dt > 0.0 {
        let y = 1.9 * dt - 0.5 * GRAVITY * dt * dt;
        if y > -0.05 {
            out.push(Ball { centre: Vec3::new(0.0, y, 0.0), radius: 0.1 });
            out.push(Ball { centre: Vec3::new(0.0, 0.5 * y, 0.0), radius: 0.08 });
        }
    }
    out
}

/// The field at `p` at time `t`: the pool, a flat pancake `(1 - u^2)^3 (1 - s^2)^3` (`u` the
/// height from its rippling middle plane over its half thickness, `s` the distance from its axis
/// over its radius), plus a compact kernel `(1 - d^2 / R^2)^3` per ball with `R = 1.6 r` (zero
/// beyond `R`, so distant balls do not swell the surface).
fn field(balls: &[Ball], t: f32, p: Vec3) -> f32 {
    const POOL_Y: f32 = -0.02;
    const POOL_HALF: f32 = 0.1;
    const POOL_RADIUS: f32 = 0.85;
    let r = (p.x * p.x + p.z * p.z).sqrt();
    let dt = t - IMPACT;
    let ripple = if dt > 0.0 { 0.03 * (-1.2 * dt).exp() * (14.0 * r - 16.0 * dt).sin() } else { 0.0 };
    let u = (p.y - POOL_Y - ripple) / POOL_HALF;
    let s = r / POOL_RADIUS;
    let (a, b) = (1.0 - u * u, 1.0 - s * s);
    let mut f = if a > 0.0 && b > 0.0 { a * a * a * b * b * b } else { 0.0 };
    for ball in balls {
        let big_r2 = (1.6 * ball.radius) * (1.6 * ball.radius);
        let x = 1.0 - (p - ball.centre).length_squared() / big_r2;
        if x > 0.0 {
            f += x * x * x;
        }
    }
    f
}

/// The field's gradient at `p` by central differences (1 mm steps).
fn gradient(balls: &[Ball], t: f32, p: Vec3) -> Vec3 {
    let h = 1e-3;
    let d = |e: Vec3| (field(balls, t, p + e * h) - field(balls, t, p - e * h)) / (2.0 * h);
    Vec3::new(d(Vec3::X), d(Vec3::Y), d(Vec3::Z))
}

/// Meshes the iso surface of `balls` by marching tetrahedra (six per cube, split along the main
/// diagonal): one vertex per grid edge the surface crosses, shared by the triangles around it, its
/// normal the field's descending gradient; triangles wound outwards.
fn mesh(balls: &[Ball], t: f32) -> FluidMesh {
    let [nx, ny, nz] = CELLS;
    let step = (BOX_MAX - BOX_MIN) / Vec3::new(nx as f32, ny as f32, nz as f32);
    let index = |x: usize, y: usize, z: usize| (z * (ny + 1) + y) * (nx + 1) + x;
    let point = |x: usize, y: usize, z: usize| BOX_MIN + step * Vec3::new(x as f32, y as f32, z as f32);
    let mut values = vec![0.0f32; (nx + 1) * (ny + 1) * (nz + 1)];
    for z in 0..=nz {
        for y in 0..=ny {
            for x in 0..=nx {
                values[index(x, y, z)] = field(balls, t, point(x, y, z)) - ISO;
            }
        }
    }
    let mut out = FluidMesh::default();
    let mut edge_vertex = std::collections::HashMap::<(usize, usize), u32>::new();
    let mut vertex_on = |a: usize, pa: Vec3, b: usize, pb: Vec3, out: &mut FluidMesh| -> u32 {
        let key = (a.min(b), a.max(b));
        *edge_vertex.entry(key).or_insert_with(|| {
            let (va, vb) = (values[a], values[b]);
            let t = va / (va - vb);
            let p = pa + (pb - pa) * t;
            let n = -gradient(balls, t, p);
            out.positions.push(p.to_array());
            out.normals.push(n.try_normalize().unwrap_or(Vec3::Y).to_array());
            (out.positions.len() - 1) as u32
        })
    };
    // The cube's corners (bit 0 x, bit 1 y, bit 2 z) and its six tetrahedra around the 0-7 diagonal.
    const TETS: [[usize; 4]; 6] =
        [[0, 1, 3, 7], [0, 3, 2, 7], [0, 2, 6, 7], [0, 6, 4, 7], [0, 4, 5, 7], [0, 5, 1, 7]];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let corner = |c: usize| (x + (c & 1), y + ((c >> 1) & 1), z + ((c >> 2) & 1));
                let ids: [usize; 8] = std::array::from_fn(|c| {
                    let (a, b, d) = corner(c);
                    index(a, b, d)
                });
                if ids.iter().all(|&i| values[i] < 0.0) || ids.iter().all(|&i| values[i] >= 0.0) {
                    continue;
                }
                let pts: [Vec3; 8] = std::array::from_fn(|c| {
                    let (a, b, d) = corner(c);
                    point(a, b, d)
                });
                for tet in TETS {
                    let inside: Vec<usize> = tet.iter().copied().filter(|&c| values[ids[c]] >= 0.0).collect();
                    let outside: Vec<usize> = tet.iter().copied().filter(|&c| values[ids[c]] < 0.0).collect();
                    let mut v = |a: usize, b: usize, out: &mut FluidMesh| {
                        vertex_on(ids[a], pts[a], ids[b], pts[b], out)
                    };
                    let mut tris: Vec<[u32; 3]> = Vec::new();
                    match inside.len() {
                        1 | 3 => {
                            // One corner apart from the other three: one triangle.
                            let (lone, rest) =
                                if inside.len() == 1 { (inside[0], &outside) } else { (outside[0], &inside) };
                            tris.push([
                                v(lone, rest[0], &mut out),
                                v(lone, rest[1], &mut out),
                                v(lone, rest[2], &mut out),
                            ]);
                        }
                        2 => {
                            let (i0, i1, o0, o1) = (inside[0], inside[1], outside[0], outside[1]);
                            let q = [
                                v(i0, o0, &mut out),
                                v(i0, o1, &mut out),
                                v(i1, o1, &mut out),
                                v(i1, o0, &mut out),
                            ];
                            tris.push([q[0], q[1], q[2]]);
                            tris.push([q[0], q[2], q[3]]);
                        }
                        _ => {}
                    }
                    // Wind each triangle so that its normal points down the field (outwards).
                    for t in tris {
                        let [a, b, c] = t.map(|i| Vec3::from(out.positions[i as usize]));
                        let n = (b - a).cross(c - a);
                        let outward = Vec3::from(out.normals[t[0] as usize]);
                        if n.length_squared() == 0.0 {
                            continue;
                        }
                        out.triangles.push(if n.dot(outward) >= 0.0 { t } else { [t[0], t[2], t[1]] });
                    }
                }
            }
        }
    }
    out
}

/// The splash: [`SPLASH_FRAMES`] frames at [`SPLASH_FPS`], about 2 m across.
pub(crate) fn splash() -> FluidSequence {
    let frames = (0..SPLASH_FRAMES)
        .map(|f| {
            let t = f as f32 / SPLASH_FPS;
            mesh(&balls(t), t)
        })
        .collect();
    FluidSequence { name: "splash".into(), fps: SPLASH_FPS, frames }
}
