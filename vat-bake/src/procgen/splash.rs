//! The built-in fluid source: a liquid splash. A drop falls into a shallow pool; a crown of
//! droplets is thrown up and out, falls back under gravity and merges with the pool again. The
//! liquid is a field of metaballs meshed per frame by marching tetrahedra on a fixed grid, so the
//! vertex and triangle counts change every frame (the fluid mode's job). Deterministic: no
//! randomness but a fixed xorshift, same bytes every call.

use glam::Vec3;

use crate::fluid::{FluidMesh, FluidSequence};

/// Frames of the splash.
pub(crate) const SPLASH_FRAMES: usize = 48;
/// Frames per second of the splash.
pub(crate) const SPLASH_FPS: f32 = 24.0;

/// Grid cells per axis (x, y, z) of the meshing; the box is `BOX_MIN..BOX_MAX`.
const CELLS: [usize; 3] = [36, 18, 36];
const BOX_MIN: Vec3 = Vec3::new(-1.0, -0.05, -1.0);
const BOX_MAX: Vec3 = Vec3::new(1.0, 0.95, 1.0);
/// The iso level of the field `sum r^2 / d^2` (a ball alone has its surface at `d = r`).
const ISO: f32 = 1.0;
const GRAVITY: f32 = 9.81;

/// A metaball: centre (metres) and radius (metres).
struct Ball {
    centre: Vec3,
    radius: f32,
}

/// The balls of the splash at time `t` (seconds).
fn balls(t: f32) -> Vec<Ball> {
    let mut out = Vec::new();
    // The pool: a ring of flat balls just under y = 0, bulging as the drop lands.
    let impact = 0.35;
    let bulge =
        if t > impact { 0.06 * (-(t - impact) * 3.0).exp() * ((t - impact) * 14.0).sin().abs() } else { 0.0 };
    for i in 0..7 {
        let a = i as f32 / 7.0 * std::f32::consts::TAU;
        let r = if i == 0 { 0.0 } else { 0.45 };
        let (x, z) = if i == 0 { (0.0, 0.0) } else { (r * a.cos(), r * a.sin()) };
        out.push(Ball { centre: Vec3::new(x, -0.16 + bulge, z), radius: 0.26 });
    }
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
        let radius = 0.05 + 0.03 * next();
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
    out
}

/// The field and its gradient at `p`.
fn field(balls: &[Ball], p: Vec3) -> (f32, Vec3) {
    let mut f = 0.0;
    let mut g = Vec3::ZERO;
    for b in balls {
        let d = p - b.centre;
        let d2 = d.length_squared().max(1e-6);
        let r2 = b.radius * b.radius;
        f += r2 / d2;
        g += d * (-2.0 * r2 / (d2 * d2));
    }
    (f, g)
}

/// Meshes the iso surface of `balls` by marching tetrahedra (six per cube, split along the main
/// diagonal): one vertex per grid edge the surface crosses, shared by the triangles around it, its
/// normal the field's descending gradient; triangles wound outwards.
fn mesh(balls: &[Ball]) -> FluidMesh {
    let [nx, ny, nz] = CELLS;
    let step = (BOX_MAX - BOX_MIN) / Vec3::new(nx as f32, ny as f32, nz as f32);
    let index = |x: usize, y: usize, z: usize| (z * (ny + 1) + y) * (nx + 1) + x;
    let point = |x: usize, y: usize, z: usize| BOX_MIN + step * Vec3::new(x as f32, y as f32, z as f32);
    let mut values = vec![0.0f32; (nx + 1) * (ny + 1) * (nz + 1)];
    for z in 0..=nz {
        for y in 0..=ny {
            for x in 0..=nx {
                values[index(x, y, z)] = field(balls, point(x, y, z)).0 - ISO;
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
            let n = -field(balls, p).1;
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
    let frames = (0..SPLASH_FRAMES).map(|f| mesh(&balls(f as f32 / SPLASH_FPS))).collect();
    FluidSequence { name: "splash".into(), fps: SPLASH_FPS, frames }
}
