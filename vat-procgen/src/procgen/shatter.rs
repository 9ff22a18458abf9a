//! The built-in rigid-body source: a wall shattering into a few hundred pieces under gravity, with
//! ground bounces ([`shatter`]).
//!
//! The wall (6 m wide, 3 m tall, 0.25 m thick, standing on `y = 0` in the `z = 0` plane, facing
//! +Z) is cut into Voronoi cells of seeds scattered over its face (each cell the wall rectangle
//! clipped by the bisectors of its seed and every other seed), each extruded through the wall's
//! thickness into a prism: a piece. Its pivot is the cell's area centroid on the wall's mid-plane.
//! After [`SHATTER_HOLD`] s standing, an impact behind the wall, a little above its middle, throws the pieces towards +Z with a speed
//! falling off with distance and a spin; gravity pulls them down, and a piece whose lowest corner
//! goes below the ground is pushed back onto it and bounces (restitution [`RESTITUTION`], with
//! friction on its sliding and spin), until it rests.
//!
//! Deterministic: a fixed-seed generator and plain f32 arithmetic in a fixed order; the same seed
//! and piece count give the same source, bit for bit, and so the same bytes.

use glam::{Quat, Vec2, Vec3};

use vat_bake::rigid::{PieceTransform, RigidClip, RigidPiece, RigidSource};

/// Frames per second of the shatter clip.
pub const SHATTER_FPS: f32 = 30.0;
/// Duration of the shatter clip, seconds (one-shot: `SHATTER_FPS * SHATTER_DURATION + 1` frames).
pub const SHATTER_DURATION: f32 = 3.0;
/// The wall stands intact this long before the impact, seconds.
pub const SHATTER_HOLD: f32 = 0.4;
/// Pieces of the built-in shatter (`vat bake --procgen shatter`).
pub const SHATTER_PIECES: usize = 300;
/// Seed of the built-in shatter.
pub const SHATTER_SEED: u64 = 0x5EED_CAFE;
/// Wall width (x), metres.
pub const WALL_WIDTH: f32 = 6.0;
/// Wall height (y), metres.
pub const WALL_HEIGHT: f32 = 3.0;
/// Wall thickness (z), metres.
pub const WALL_THICKNESS: f32 = 0.25;
/// Vertical speed kept by a bounce (fraction).
pub const RESTITUTION: f32 = 0.3;
/// Material id of the wall's faces (front and back).
pub const MATERIAL_WALL: u8 = 0;
/// Material id of the fracture faces (inside the wall).
pub const MATERIAL_FRACTURE: u8 = 5;

const GRAVITY: f32 = 9.81;
const SUBSTEPS: u32 = 8;

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
}

/// The convex polygon `poly` (counter-clockwise) clipped to the half-plane `dot(p, n) <= d`.
fn clip(poly: &[Vec2], n: Vec2, d: f32) -> Vec<Vec2> {
    let mut out = Vec::with_capacity(poly.len() + 1);
    for (i, &a) in poly.iter().enumerate() {
        let b = poly[(i + 1) % poly.len()];
        let (da, db) = (a.dot(n) - d, b.dot(n) - d);
        if da <= 0.0 {
            out.push(a);
        }
        if (da < 0.0 && db > 0.0) || (da > 0.0 && db < 0.0) {
            out.push(a + (b - a) * (da / (da - db)));
        }
    }
    out
}

/// Area and centroid of a counter-clockwise polygon.
fn area_centroid(poly: &[Vec2]) -> (f32, Vec2) {
    let (mut area, mut c) = (0.0f32, Vec2::ZERO);
    for (i, &a) in poly.iter().enumerate() {
        let b = poly[(i + 1) % poly.len()];
        let cross = a.perp_dot(b);
        area += cross;
        c += (a + b) * cross;
    }
    area *= 0.5;
    if area.abs() < 1e-12 {
        let mean = poly.iter().copied().sum::<Vec2>() / poly.len().max(1) as f32;
        return (0.0, mean);
    }
    (area, c / (6.0 * area))
}

/// The Voronoi cells of `seeds` inside the wall rectangle, counter-clockwise (degenerate cells
/// dropped).
fn voronoi_cells(seeds: &[Vec2]) -> Vec<Vec<Vec2>> {
    let rect = vec![
        Vec2::new(-0.5 * WALL_WIDTH, 0.0),
        Vec2::new(0.5 * WALL_WIDTH, 0.0),
        Vec2::new(0.5 * WALL_WIDTH, WALL_HEIGHT),
        Vec2::new(-0.5 * WALL_WIDTH, WALL_HEIGHT),
    ];
    seeds
        .iter()
        .enumerate()
        .filter_map(|(i, &s)| {
            let mut poly = rect.clone();
            for (j, &o) in seeds.iter().enumerate() {
                if i == j || poly.len() < 3 {
                    continue;
                }
                // Points nearer s than o: dot(p, o - s) <= (|o|^2 - |s|^2) / 2.
                let n = o - s;
                poly = clip(&poly, n, 0.5 * (o.length_squared() - s.length_squared()));
            }
            (poly.len() >= 3 && area_centroid(&poly).0 > 1e-5).then_some(poly)
        })
        .collect()
}

/// A prism of `poly` (wall-plane coordinates) through the wall, flat-shaded, with its pivot at the
/// cell's centroid on the mid-plane.
fn prism(poly: &[Vec2], name: String) -> (RigidPiece, Vec<Vec3>) {
    let (_, c) = area_centroid(poly);
    let h = 0.5 * WALL_THICKNESS;
    let (mut positions, mut normals, mut material_ids, mut indices) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let n = poly.len() as u32;
    for (z, normal, flip) in [(h, Vec3::Z, false), (-h, Vec3::NEG_Z, true)] {
        let base = positions.len() as u32;
        for p in poly {
            positions.push([p.x, p.y, z]);
            normals.push(normal.to_array());
            material_ids.push(MATERIAL_WALL);
        }
        for k in 1..n - 1 {
            if flip {
                indices.extend([base, base + k + 1, base + k]);
            } else {
                indices.extend([base, base + k, base + k + 1]);
            }
        }
    }
    for (i, &a) in poly.iter().enumerate() {
        let b = poly[(i + 1) % poly.len()];
        let e = b - a;
        let normal = Vec3::new(e.y, -e.x, 0.0).normalize_or_zero();
        let base = positions.len() as u32;
        for (p, z) in [(a, h), (b, h), (b, -h), (a, -h)] {
            positions.push([p.x, p.y, z]);
            normals.push(normal.to_array());
            material_ids.push(MATERIAL_FRACTURE);
        }
        indices.extend([base, base + 3, base + 2, base, base + 2, base + 1]);
    }
    let corners: Vec<Vec3> = poly
        .iter()
        .flat_map(|p| [Vec3::new(p.x - c.x, p.y - c.y, h), Vec3::new(p.x - c.x, p.y - c.y, -h)])
        .collect();
    (
        RigidPiece {
            name,
            positions,
            normals,
            material_ids,
            uvs: None,
            colors: None,
            indices,
            rest_pivot: [c.x, c.y, 0.0],
        },
        corners,
    )
}

/// A wall of about `pieces` Voronoi pieces (seeded by `seed`) shattering: one one-shot clip
/// `"shatter"` of [`SHATTER_DURATION`] s at [`SHATTER_FPS`]. See the module docs.
pub fn shatter_with(pieces: usize, seed: u64) -> RigidSource {
    let mut rng = Rng(seed);
    // Seeds denser towards the impact point, so the pieces there are smaller.
    let impact = Vec2::new(0.4, 1.6);
    let seeds: Vec<Vec2> = (0..pieces.max(1))
        .map(|_| {
            let pull = rng.unit() * rng.unit();
            let p = Vec2::new(rng.range(-0.5, 0.5) * WALL_WIDTH, rng.unit() * WALL_HEIGHT);
            p + (impact - p) * (0.45 * pull)
        })
        .collect();
    let cells = voronoi_cells(&seeds);
    let mut out = Vec::with_capacity(cells.len());
    let mut hulls = Vec::with_capacity(cells.len());
    for (k, cell) in cells.iter().enumerate() {
        let (piece, corners) = prism(cell, format!("piece {k}"));
        out.push(piece);
        hulls.push(corners);
    }
    // Initial state: thrown from the impact (behind the wall at z = -1) towards +Z.
    let origin = Vec3::new(impact.x, impact.y, -1.0);
    let mut state: Vec<(Vec3, Vec3, Quat, Vec3)> = out
        .iter()
        .map(|p| {
            let pos = Vec3::from(p.rest_pivot);
            let away = pos - origin;
            let d = away.length().max(0.3);
            let speed = (5.0 / (d * d)).min(6.0) + rng.range(0.0, 0.6);
            let v =
                away / d * speed + Vec3::new(rng.range(-0.4, 0.4), rng.range(0.0, 0.8), rng.range(0.0, 0.8));
            let spin = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0))
                * (speed.min(8.0) * 1.5);
            (pos, v, Quat::IDENTITY, spin)
        })
        .collect();
    let frames = (SHATTER_DURATION * SHATTER_FPS).round() as usize + 1;
    let dt = 1.0 / (SHATTER_FPS * SUBSTEPS as f32);
    let hold = (SHATTER_HOLD * SHATTER_FPS).round() as usize;
    let mut track = Vec::with_capacity(frames);
    for f in 0..frames {
        if f > hold {
            for _ in 0..SUBSTEPS {
                for ((pos, v, q, w), hull) in state.iter_mut().zip(&hulls) {
                    v.y -= GRAVITY * dt;
                    *pos += *v * dt;
                    let turn = *w * dt;
                    if turn.length_squared() > 0.0 {
                        *q = (Quat::from_scaled_axis(turn) * *q).normalize();
                    }
                    let lowest = hull.iter().map(|c| (*q * *c).y).fold(f32::INFINITY, f32::min) + pos.y;
                    if lowest < 0.0 {
                        pos.y -= lowest;
                        if v.y < 0.0 {
                            v.y = -v.y * RESTITUTION;
                        }
                        v.x *= 0.85;
                        v.z *= 0.85;
                        *w *= 0.8;
                        if v.length_squared() < 0.01 {
                            *v = Vec3::ZERO;
                            *w = Vec3::ZERO;
                        }
                    }
                }
            }
        }
        track.push(
            state
                .iter()
                .map(|(pos, _, q, _)| PieceTransform { pivot: pos.to_array(), rotation: q.to_array() })
                .collect(),
        );
    }
    RigidSource {
        name: "shatter".into(),
        pieces: out,
        clips: vec![RigidClip { name: "shatter".into(), fps: SHATTER_FPS, looping: false, frames: track }],
        materials: None,
    }
}

/// The built-in shatter: [`SHATTER_PIECES`] pieces, seed [`SHATTER_SEED`]
/// (`vat bake --procgen shatter`).
pub fn shatter() -> RigidSource {
    shatter_with(SHATTER_PIECES, SHATTER_SEED)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;
    use vat_bake::rigid::{RigidBakeOptions, bake_rigid, verify_rigid};

    #[test]
    fn cells_tile_the_wall() {
        let s = shatter_with(120, 7);
        // Every seed keeps its cell (the seeds are distinct), and the cells cover the wall.
        assert!(s.pieces.len() >= 115, "{}", s.pieces.len());
        let area: f32 = s
            .pieces
            .iter()
            .map(|p| {
                let front: Vec<Vec2> =
                    p.positions.iter().take_while(|v| v[2] > 0.0).map(|v| Vec2::new(v[0], v[1])).collect();
                area_centroid(&front).0
            })
            .sum();
        assert!((area - WALL_WIDTH * WALL_HEIGHT).abs() < 1e-2, "{area}");
    }

    #[test]
    fn pieces_fall_bounce_and_rest_on_the_ground() {
        let s = shatter_with(80, 3);
        let frames = &s.clips[0].frames;
        assert_eq!(frames.len(), 91);
        let last = frames.last().unwrap();
        // Everything has come down near the ground and no piece is below it.
        let high = last.iter().filter(|t| t.pivot[1] > 0.6).count();
        assert!(high <= 2, "{high} pieces still high");
        for f in frames {
            for t in f {
                assert!(t.pivot[1] > -1e-3, "{t:?}");
            }
        }
        // They moved towards +Z, away from the impact behind the wall.
        let mean_z = last.iter().map(|t| t.pivot[2]).sum::<f32>() / last.len() as f32;
        assert!(mean_z > 0.5, "{mean_z}");
    }

    #[test]
    fn the_bake_is_deterministic_and_verifies() {
        let a = bake_rigid(&shatter_with(60, 11), &RigidBakeOptions::default()).unwrap().0;
        let b = bake_rigid(&shatter_with(60, 11), &RigidBakeOptions::default()).unwrap().0;
        assert_eq!(a, b);
        assert_ne!(a, bake_rigid(&shatter_with(60, 12), &RigidBakeOptions::default()).unwrap().0);
        let asset = vat_core::container::Asset::parse(&a).unwrap();
        let report = verify_rigid(&asset, &shatter_with(60, 11)).unwrap();
        assert!(report.passed, "{report:?}");
    }

    /// The figure: a 500-piece shatter costs one 16-byte texel per piece per frame, and its
    /// errors stay within the format's bounds (rotation within 0.05 degrees, translation within the
    /// box quantum). `--nocapture` prints the figures.
    #[test]
    fn a_500_piece_shatter_costs_one_texel_per_piece_per_frame() {
        let source = shatter_with(500, SHATTER_SEED);
        let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
        assert!(stats.pieces >= 490, "{}", stats.pieces);
        assert_eq!(stats.bytes_per_piece_frame, 16);
        let texels = u64::from(stats.pieces) * u64::from(stats.frames);
        // One column per piece, one row per frame: exactly 16 bytes per piece per frame.
        assert_eq!(stats.piece_texture, [stats.pieces, stats.frames]);
        assert_eq!(stats.piece_texture_bytes, texels * 16);
        let asset = vat_core::container::Asset::parse(&bytes).unwrap();
        let report = verify_rigid(&asset, &source).unwrap();
        assert!(report.passed, "{report:?}");
        assert!(report.rotation_max_error_deg <= 0.05);
        for a in 0..3 {
            // Within the quantum (twice the half-quantum bound, which verification already checks).
            assert!(report.translation_max_error_mm[a] <= 2.0 * report.translation_bound_mm[a]);
        }
        println!(
            "500-piece shatter: {} pieces x {} frames, piece texture {} x {} = {} bytes ({:.2} bytes per piece per \
             frame), vertex texture {} bytes, file {} bytes; pivot \
             error {:?} mm (bound {:?}), rotation {:.5} deg (bound {:.5}), vertices {:.5} mm (bound {:.5})",
            stats.pieces,
            stats.frames,
            stats.piece_texture[0],
            stats.piece_texture[1],
            stats.piece_texture_bytes,
            stats.piece_texture_bytes as f64 / texels as f64,
            stats.vertex_texture_bytes,
            stats.file_bytes,
            report.translation_max_error_mm,
            report.translation_bound_mm,
            report.rotation_max_error_deg,
            report.rotation_bound_deg,
            report.vertex_max_error_mm,
            report.vertex_bound_mm
        );
    }
}
