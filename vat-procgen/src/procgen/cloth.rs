//! The built-in soft-body source: a banner on a pole, flapping in a periodic wind, simulated as a
//! small mass-spring cloth (position-based: Verlet integration, then distance constraints relaxed in
//! a fixed order), so a soft-body bake needs no files.
//!
//! - A pole 2.6 m tall at the origin (a static box) and a banner of [`CLOTH_COLUMNS`] x [`CLOTH_ROWS`]
//!   particles, 1.6 m by 1.0 m, its edge along the pole pinned. Two sheets 1.5 mm apart (front and
//!   back, opposite windings) so both sides are lit. Material ids: 0 for the pole, 1 for the banner.
//! - The wind repeats every [`CLOTH_PERIOD`] seconds. After three periods of warm-up the motion is
//!   periodic up to a small drift; one period is recorded at 30 frames per second, the drift is
//!   spread linearly over it and the last frame is a copy of the first, so the clip loops exactly.
//! - Deterministic: single-threaded f32 arithmetic in a fixed order, no randomness.

use glam::{Vec2, Vec3};

use vat_bake::Result;
use vat_bake::rig::Rig;
use vat_bake::sequence::{MeshSequence, smooth_normals};

/// Particles along the banner's length (x).
pub const CLOTH_COLUMNS: usize = 24;
/// Particles along the banner's height (y).
pub const CLOTH_ROWS: usize = 16;
/// Seconds after which the wind repeats (the clip's length).
pub const CLOTH_PERIOD: f32 = 2.0;
/// Frames per second of the recorded sequence.
pub const CLOTH_FPS: f32 = 30.0;

const LENGTH: f32 = 1.6;
const HEIGHT: f32 = 1.0;
const TOP: f32 = 2.5;
const POLE_HEIGHT: f32 = 2.6;
const POLE_HALF_WIDTH: f32 = 0.025;
const SUBSTEPS: usize = 4;
const ITERATIONS: usize = 8;
const WARMUP_PERIODS: usize = 3;
const DAMPING: f32 = 0.985;
/// Metres between the banner's front and back sheets.
const BACK_OFFSET: f32 = 0.0015;

/// The wind's acceleration at a particle (m/s^2): a steady push along +x with gusts across it that
/// travel along the banner, periodic in `t` with period [`CLOTH_PERIOD`].
fn wind(rest: Vec3, t: f32) -> Vec3 {
    let w = std::f32::consts::TAU / CLOTH_PERIOD;
    let phase = rest.x * 3.0 + rest.y * 1.3;
    Vec3::new(
        9.0 + 3.0 * (w * t - phase).sin(),
        1.5 * (2.0 * w * t - phase).sin(),
        6.0 * (w * t - phase).sin() + 2.5 * (2.0 * w * t + 0.5 * phase).cos(),
    )
}

/// The simulated banner: rest positions, then one recorded frame per 1/30 s of one period.
fn simulate() -> (Vec<Vec3>, Vec<Vec<Vec3>>) {
    let index = |c: usize, r: usize| r * CLOTH_COLUMNS + c;
    let rest: Vec<Vec3> = (0..CLOTH_ROWS)
        .flat_map(|r| {
            (0..CLOTH_COLUMNS).map(move |c| {
                Vec3::new(
                    POLE_HALF_WIDTH + LENGTH * c as f32 / (CLOTH_COLUMNS - 1) as f32,
                    TOP - HEIGHT * r as f32 / (CLOTH_ROWS - 1) as f32,
                    0.0,
                )
            })
        })
        .collect();
    // Structural, shear and bend springs, in a fixed order.
    let mut springs: Vec<(usize, usize, f32)> = Vec::new();
    for r in 0..CLOTH_ROWS {
        for c in 0..CLOTH_COLUMNS {
            let mut link = |c2: usize, r2: usize| {
                if c2 < CLOTH_COLUMNS && r2 < CLOTH_ROWS {
                    let (a, b) = (index(c, r), index(c2, r2));
                    springs.push((a, b, rest[a].distance(rest[b])));
                }
            };
            link(c + 1, r);
            link(c, r + 1);
            link(c + 1, r + 1);
            link(c + 2, r);
            link(c, r + 2);
            if c > 0 && r + 1 < CLOTH_ROWS {
                let (a, b) = (index(c, r), index(c - 1, r + 1));
                springs.push((a, b, rest[a].distance(rest[b])));
            }
        }
    }
    let pinned: Vec<bool> = (0..rest.len()).map(|i| i % CLOTH_COLUMNS == 0).collect();
    let mut p = rest.clone();
    let mut previous = rest.clone();
    let dt = 1.0 / (CLOTH_FPS * SUBSTEPS as f32);
    let gravity = Vec3::new(0.0, -9.81, 0.0);
    let frames_per_period = (CLOTH_PERIOD * CLOTH_FPS).round() as usize;
    let warmup = WARMUP_PERIODS * frames_per_period;
    let mut recorded = Vec::with_capacity(frames_per_period + 1);
    for frame in 0..=warmup + frames_per_period {
        if frame >= warmup {
            recorded.push(p.clone());
        }
        if frame == warmup + frames_per_period {
            break;
        }
        for sub in 0..SUBSTEPS {
            let t = (frame * SUBSTEPS + sub) as f32 * dt;
            for i in 0..p.len() {
                if pinned[i] {
                    continue;
                }
                let velocity = (p[i] - previous[i]) * DAMPING;
                previous[i] = p[i];
                p[i] += velocity + (gravity + wind(rest[i], t)) * dt * dt;
            }
            for _ in 0..ITERATIONS {
                for &(a, b, length) in &springs {
                    let d = p[b] - p[a];
                    let distance = d.length();
                    if distance <= f32::EPSILON {
                        continue;
                    }
                    let (wa, wb) = (f32::from(u8::from(!pinned[a])), f32::from(u8::from(!pinned[b])));
                    if wa + wb == 0.0 {
                        continue;
                    }
                    let correction = d * ((distance - length) / (distance * (wa + wb)));
                    p[a] += correction * wa;
                    p[b] -= correction * wb;
                }
            }
        }
    }
    // Spread the small drift of the last recorded frame from the first over the period, so the
    // clip's last frame is its first.
    let last = recorded.len() - 1;
    let drift: Vec<Vec3> = recorded[0].iter().zip(&recorded[last]).map(|(a, b)| *a - *b).collect();
    for (k, frame) in recorded.iter_mut().enumerate().take(last).skip(1) {
        let s = k as f32 / last as f32;
        for (v, d) in frame.iter_mut().zip(&drift) {
            *v += *d * s;
        }
    }
    recorded[last] = recorded[0].clone();
    (rest, recorded)
}

/// The banner and pole as a [`MeshSequence`] of 61 frames at 30 fps (see the module docs).
pub fn cloth_sequence() -> MeshSequence {
    let (_, frames) = simulate();
    let banner = CLOTH_COLUMNS * CLOTH_ROWS;
    // Pole: a box, one vertex per face corner so its edges stay hard.
    let (lo, hi) = (
        Vec3::new(-POLE_HALF_WIDTH, 0.0, -POLE_HALF_WIDTH),
        Vec3::new(POLE_HALF_WIDTH, POLE_HEIGHT, POLE_HALF_WIDTH),
    );
    let corner = |i: usize| {
        Vec3::new(
            if i & 1 == 0 { lo.x } else { hi.x },
            if i & 2 == 0 { lo.y } else { hi.y },
            if i & 4 == 0 { lo.z } else { hi.z },
        )
    };
    // Faces as corner ids, counter-clockwise seen from outside.
    const FACES: [[usize; 4]; 6] =
        [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
    let mut pole_positions = Vec::new();
    let mut pole_indices = Vec::new();
    for face in FACES {
        let base = pole_positions.len() as u32;
        pole_positions.extend(face.iter().map(|&c| corner(c)));
        pole_indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    let mut indices: Vec<u32> = pole_indices;
    let pole = pole_positions.len() as u32;
    let index = |c: usize, r: usize| (r * CLOTH_COLUMNS + c) as u32;
    for side in 0..2u32 {
        let base = pole + side * banner as u32;
        for r in 0..CLOTH_ROWS - 1 {
            for c in 0..CLOTH_COLUMNS - 1 {
                let [a, b, d, e] =
                    [index(c, r), index(c + 1, r), index(c, r + 1), index(c + 1, r + 1)].map(|i| i + base);
                if side == 0 {
                    indices.extend([a, d, b, b, d, e]);
                } else {
                    indices.extend([a, b, d, b, e, d]);
                }
            }
        }
    }
    // The back sheet sits 1.5 mm behind the front one along the front's normals: a thin cloth, and
    // no two vertices at the same point (the simplifier would take them for one vertex's seam and
    // refuse to collapse either sheet).
    let front_indices: Vec<u32> =
        indices[36..36 + (CLOTH_ROWS - 1) * (CLOTH_COLUMNS - 1) * 6].iter().map(|&i| i - pole).collect();
    let positions: Vec<Vec<Vec3>> = frames
        .iter()
        .map(|f| {
            let normals = smooth_normals(f, &front_indices);
            let back = f.iter().zip(&normals).map(|(p, n)| *p - *n * BACK_OFFSET);
            pole_positions.iter().chain(f).copied().chain(back).collect()
        })
        .collect();
    let grid_uv = (0..banner).map(|i| {
        Vec2::new(
            (i % CLOTH_COLUMNS) as f32 / (CLOTH_COLUMNS - 1) as f32,
            (i / CLOTH_COLUMNS) as f32 / (CLOTH_ROWS - 1) as f32,
        )
    });
    let uvs: Vec<Vec2> = (0..pole_positions.len())
        .map(|i| Vec2::new((i % 4) as f32 * 0.25, 0.0))
        .chain(grid_uv.clone())
        .chain(grid_uv)
        .collect();
    let normals = positions.iter().map(|p| smooth_normals(p, &indices)).collect();
    MeshSequence {
        name: "cloth".into(),
        positions,
        normals: Some(normals),
        uvs: Some(uvs),
        indices,
        fps: CLOTH_FPS,
        notes: Vec::new(),
    }
}

/// Material id of the banner's vertices (the pole's are 0).
pub const MATERIAL_BANNER: u8 = 1;

/// The banner as a rig ([`MeshSequence::into_rig`]): one clip `"cloth"` of 61 frames that loops, the
/// banner's vertices on material [`MATERIAL_BANNER`].
///
/// # Errors
/// None in practice (the sequence is valid by construction); [`MeshSequence::into_rig`]'s errors.
pub fn cloth() -> Result<Rig> {
    let pole_vertices = 24;
    let mut rig = cloth_sequence().into_rig()?;
    for (v, id) in rig.meshes[0].material_ids.iter_mut().enumerate() {
        if v >= pole_vertices {
            *id = MATERIAL_BANNER;
        }
    }
    Ok(rig)
}
