//! Ray picking: vertical cylinders per instance, the grid as broadphase.

use super::{Crowd, InstanceId};
use crate::instance::VARIANT_HIDDEN;

/// See [`Crowd::pick`].
pub(super) fn pick(crowd: &Crowd, origin: [f32; 3], direction: [f32; 3]) -> Option<(InstanceId, f32)> {
    let o = origin.map(f64::from);
    let d = direction.map(f64::from);
    let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    if !(len.is_finite() && len > 0.0 && o.iter().all(|v| v.is_finite())) {
        return None;
    }
    let d = d.map(|v| v / len);
    let mut picker = Picker { crowd, o, d, best: None };
    let spatial = &crowd.spatial;
    match &spatial.grid {
        Some(grid) if spatial.covers => {
            // Instances not (correctly) listed: spawned or moved to another cell since the last frame.
            for &i in &crowd.movers {
                picker.test(i);
            }
            picker.walk(grid);
        }
        _ => {
            for i in 0..crowd.count() {
                picker.test(i);
            }
        }
    }
    picker.best.map(|(i, t)| (i, t as f32))
}

/// A ray (unit direction) and the nearest hit so far.
struct Picker<'a> {
    crowd: &'a Crowd,
    o: [f64; 3],
    d: [f64; 3],
    best: Option<(u32, f64)>,
}

impl Picker<'_> {
    fn test(&mut self, i: u32) {
        if let Some(t) = hit(self.crowd, i, self.o, self.d)
            && self.best.is_none_or(|(_, bt)| t < bt)
        {
            self.best = Some((i, t));
        }
    }
    /// Walks the grid columns along the ray (in ray order) and tests every listed instance of the cells
    /// the ray, widened by the largest cylinder radius, can reach; stops once the best hit is nearer
    /// than the next column.
    fn walk(&mut self, grid: &crate::lod::ChunkGrid) {
        let (crowd, o, d) = (self.crowd, self.o, self.d);
        let spatial = &crowd.spatial;
        if spatial.ext_min[0] > spatial.ext_max[0] {
            return;
        }
        let shape = &crowd.shape;
        let k = f64::from(spatial.scale_max);
        // Widening: the largest cylinder radius, plus a little for f32 rounding of positions.
        let reach = f64::from(shape.pick_radius) * k * (1.0 + 1e-6) + 1e-6;
        let origin = grid.origin().map(f64::from);
        let cs = f64::from(grid.cell_size());
        let dims = grid.dims();
        let far = [origin[0] + f64::from(dims[0]) * cs, origin[1] + f64::from(dims[1]) * cs];
        // Clip the ray (t >= 0) to the grid rectangle widened by `reach` and the crowd's height range.
        let y_lo = f64::from(spatial.ext_min[1]) + (f64::from(shape.pick_y[0]) * k).min(0.0) - 1e-3;
        let y_hi = f64::from(spatial.ext_max[1]) + (f64::from(shape.pick_y[1]) * k).max(0.0) + 1e-3;
        let slabs =
            [(0, origin[0] - reach, far[0] + reach), (1, y_lo, y_hi), (2, origin[1] - reach, far[1] + reach)];
        let (mut t0, mut t1) = (0.0f64, f64::INFINITY);
        for (a, lo, hi) in slabs {
            if d[a].abs() < 1e-18 {
                if o[a] < lo || o[a] > hi {
                    return;
                }
            } else {
                let (ta, tb) = ((lo - o[a]) / d[a], (hi - o[a]) / d[a]);
                t0 = t0.max(ta.min(tb));
                t1 = t1.min(ta.max(tb));
            }
        }
        if t0 > t1 {
            return;
        }
        // Primary axis: the one the ray moves along fastest in XZ. Grid axis 0 = x, 1 = z.
        let (pa, qa, pg, qg) = if d[0].abs() >= d[2].abs() { (0, 2, 0, 1) } else { (2, 0, 1, 0) };
        let at = |t: f64, a: usize| o[a] + t * d[a];
        let (p_lo, p_hi) = {
            let (u, v) = (at(t0, pa), at(t1, pa));
            (u.min(v), u.max(v))
        };
        let column = |x: f64, g: usize| {
            (((x - origin[g]) / cs).floor().max(0.0) as u64).min(u64::from(dims[g] - 1)) as u32
        };
        let (k_lo, k_hi) = (column(p_lo - reach, pg), column(p_hi + reach, pg));
        let forward = d[pa] >= 0.0;
        let count = k_hi - k_lo + 1;
        for step in 0..count {
            let kc = if forward { k_lo + step } else { k_hi - step };
            // The part of the ray whose primary coordinate is within `reach` of this column.
            let a = origin[pg] + f64::from(kc) * cs - reach;
            let b = origin[pg] + f64::from(kc + 1) * cs + reach;
            let (mut ta, mut tb) = if d[pa].abs() < 1e-18 {
                (t0, t1)
            } else {
                let (u, v) = ((a - o[pa]) / d[pa], (b - o[pa]) / d[pa]);
                (u.min(v), u.max(v))
            };
            ta = ta.max(t0);
            tb = tb.min(t1);
            if ta > tb {
                continue;
            }
            // Every instance of this column and the later ones is hit at t >= ta.
            if self.best.is_some_and(|(_, bt)| bt < ta - 1e-9 * (1.0 + ta.abs())) {
                break;
            }
            let (s0, s1) = (at(ta, qa), at(tb, qa));
            let (j_lo, j_hi) = (column(s0.min(s1) - reach, qg), column(s0.max(s1) + reach, qg));
            for j in j_lo..=j_hi {
                let coords = if pg == 0 { [kc, j] } else { [j, kc] };
                let cell = grid.cell_index(coords) as usize;
                for &i in spatial.members(cell) {
                    self.test(i);
                }
            }
        }
    }
}

/// Distance along the unit ray `o + t d` at which it enters instance `i`'s cylinder (0 if `o` is
/// inside), if it does at `t >= 0`.
fn hit(crowd: &Crowd, i: u32, o: [f64; 3], d: [f64; 3]) -> Option<f64> {
    let r = crowd.records.get(i as usize)?;
    if r.variant_bits & VARIANT_HIDDEN != 0 {
        return None;
    }
    let s = f64::from(r.scale);
    let shape = &crowd.shape;
    let radius = f64::from(shape.pick_radius) * s;
    let p = r.position.map(f64::from);
    let y0 = p[1] + f64::from(shape.pick_y[0]) * s;
    let y1 = p[1] + f64::from(shape.pick_y[1]) * s;
    ray_cylinder(o, d, [p[0], p[2]], radius, y0, y1)
}

/// Entry distance (clamped to 0) of the ray `o + t d` into the vertical cylinder of `radius` around
/// `centre` (`[x, z]`) between heights `y0 <= y1`, if the ray meets it at some `t >= 0`.
pub(super) fn ray_cylinder(
    o: [f64; 3],
    d: [f64; 3],
    centre: [f64; 2],
    radius: f64,
    y0: f64,
    y1: f64,
) -> Option<f64> {
    let (dx, dz) = (o[0] - centre[0], o[2] - centre[1]);
    let a = d[0] * d[0] + d[2] * d[2];
    let c = dx * dx + dz * dz - radius * radius;
    let (mut enter, mut exit) = if a < 1e-18 {
        if c > 0.0 {
            return None;
        }
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let b = dx * d[0] + dz * d[2];
        let disc = b * b - a * c;
        if disc < 0.0 {
            return None;
        }
        let q = disc.sqrt();
        ((-b - q) / a, (-b + q) / a)
    };
    if d[1].abs() < 1e-18 {
        if o[1] < y0 || o[1] > y1 {
            return None;
        }
    } else {
        let (ta, tb) = ((y0 - o[1]) / d[1], (y1 - o[1]) / d[1]);
        enter = enter.max(ta.min(tb));
        exit = exit.min(ta.max(tb));
    }
    (enter <= exit && exit >= 0.0).then_some(enter.max(0.0))
}
