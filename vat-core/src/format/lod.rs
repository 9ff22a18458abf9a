//! LOD selection and the chunk-grid math of the crowd.
//!
//! The crowd sorts its instances into the cells of a uniform [`ChunkGrid`] on the XZ plane (Y up),
//! culls whole cells against the view frustum with [`ChunkGrid::cell_bounding_sphere`] and picks one
//! LOD per cell from the camera's distance to it ([`ChunkGrid::distance_to_cell`],
//! [`LodThresholds::select`]). The GPU culling shader mirrors the same formulas per instance, so every
//! formula here is plain f32 arithmetic written out in its doc comment, in evaluation order.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The most LOD levels an asset or crowd uses (LOD 0 is the full mesh).
pub const MAX_LODS: usize = 8;

/// The most cells a [`ChunkGrid`] has along one axis: `2^24`, so every cell coordinate is exact as an
/// f32 (the cell bounds are computed as `origin + f32(c) * cell_size`).
pub const MAX_GRID_CELLS_PER_AXIS: u32 = 1 << 24;

/// The angle one pixel spans in the view the default LOD switch distances assume, radians: a 60 degree
/// vertical field of view over 1080 rows, `2 tan(30 deg) / 1080` (small-angle: an object of size `s`
/// at distance `d` spans `s / (d * LOD_PIXEL_ANGLE)` rows). A view of another size or field of view
/// (`Camera::pixel_angle`, set by `Camera::with_viewport`) scales every switch distance by
/// `LOD_PIXEL_ANGLE / pixel_angle` through its LOD bias (`Camera::lod_bias`).
pub const LOD_PIXEL_ANGLE: f64 = 2.0 * 0.577_350_269_189_625_8 / 1080.0;

/// Each LOD switch distance is at least this many times the previous one (see
/// [`lod_switch_distances`]): a LOD is in use over a meaningful range of distances, never a sliver.
pub const LOD_MIN_DISTANCE_RATIO: f32 = 1.25;

/// Where each LOD of a chain stops being used: entry `i` is LOD `i`'s `max_distance` (the distance at
/// which LOD `i + 1` begins), the last entry `f32::INFINITY`. Everything is in the asset's own length
/// unit (metres for a metre-scale bake, centimetres for a centimetre-scale one): the result scales
/// with the asset.
///
/// - `errors[i]` is LOD `i`'s deviation from LOD 0 (`errors[0] = 0`, non-decreasing; non-finite or
///   negative values count as 0), in asset units.
/// - `size` is the asset's size, the largest side of its bounds ([`crate::encoding::PositionBounds`]
///   `extent`), in asset units.
///
/// LOD `i` serves until the larger of
/// 1. the distance at which LOD `i + 1`'s error shrinks to one pixel: `errors[i + 1] / LOD_PIXEL_ANGLE`;
/// 2. a floor from the asset's size: the distance at which the asset spans `1080 / 2^i` rows of the
///    60 degree view, `size * 2^i / (1080 * LOD_PIXEL_ANGLE)` (LOD 1 never while the asset is taller
///    than the screen, LOD 2 never while it covers more than half of it, ...), so a chain whose
///    errors are (nearly) zero still switches at distances that mean something for its size;
///
/// and each distance is at least [`LOD_MIN_DISTANCE_RATIO`] times the previous one, so the result is
/// strictly increasing, finite and `> 0` before the last entry. A `size` that is not finite or not
/// `> 0` is treated as 1 mm (`1e-3` units). An empty `errors` gives an empty result.
pub fn lod_switch_distances(errors: &[f32], size: f32) -> Vec<f32> {
    let size = if size.is_finite() && size > 0.0 { f64::from(size) } else { 1e-3 };
    let fill = size / (1080.0 * LOD_PIXEL_ANGLE);
    let mut out = Vec::with_capacity(errors.len());
    let mut previous = 0.0f64;
    for i in 0..errors.len() {
        let Some(&next_error) = errors.get(i + 1) else {
            out.push(f32::INFINITY);
            break;
        };
        let e = if next_error.is_finite() { f64::from(next_error.max(0.0)) } else { 0.0 };
        let by_error = e / LOD_PIXEL_ANGLE;
        let by_size = fill * 2f64.powi(i as i32);
        let d = by_error.max(by_size).max(previous * f64::from(LOD_MIN_DISTANCE_RATIO));
        // At most 7 switches of a size below f32::MAX: finite; clamp anyway for absurd errors.
        let d = (d as f32).min(f32::MAX / 2.0);
        out.push(d);
        previous = f64::from(d);
    }
    out
}

/// Distances, in metres, at which LOD 1, LOD 2, ... begin: strictly ascending, finite and `> 0`, at
/// most `MAX_LODS - 1` of them. No thresholds means a single LOD.
///
/// Deserialising validates like [`LodThresholds::new`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<f32>", into = "Vec<f32>")]
pub struct LodThresholds {
    /// The first `len` entries are the thresholds; the rest stay 0.
    distances: [f32; MAX_LODS - 1],
    len: u8,
}

impl Default for LodThresholds {
    /// No thresholds: everything is LOD 0.
    fn default() -> Self {
        Self { distances: [0.0; MAX_LODS - 1], len: 0 }
    }
}

impl LodThresholds {
    /// Thresholds from `distances` (metres), the distance at which LOD `i + 1` begins at index `i`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for more than `MAX_LODS - 1` distances, a distance `<= 0`, or one not
    /// strictly greater than the previous; [`Error::NotFinite`] for a NaN or infinite distance.
    pub fn new(distances: &[f32]) -> Result<Self> {
        if distances.len() > MAX_LODS - 1 {
            return Err(Error::OutOfRange {
                what: "LOD threshold count",
                value: distances.len().to_string(),
                expected: "<= MAX_LODS - 1 = 7",
            });
        }
        let mut out = Self::default();
        let mut previous = 0.0f32;
        for (i, &d) in distances.iter().enumerate() {
            if !d.is_finite() {
                return Err(Error::NotFinite { what: "LOD threshold" });
            }
            if d <= previous {
                return Err(Error::OutOfRange {
                    what: "LOD threshold",
                    value: format!("{d} (index {i}, previous {previous})"),
                    expected: "> 0 metres and strictly ascending",
                });
            }
            out.distances[i] = d;
            previous = d;
        }
        // At most MAX_LODS - 1 = 7, fits u8.
        out.len = distances.len() as u8;
        Ok(out)
    }

    /// The thresholds, metres, ascending.
    pub fn as_slice(&self) -> &[f32] {
        &self.distances[..usize::from(self.len)]
    }

    /// Number of LOD levels these thresholds select among: thresholds + 1.
    pub fn lod_count(&self) -> u32 {
        u32::from(self.len) + 1
    }

    /// The LOD for an object `distance` metres away, with `bias` in doublings of distance.
    ///
    /// `effective = distance * exp2(bias)`; the LOD is the number of thresholds `<= effective`, so an
    /// object exactly at a threshold already uses the coarser LOD. A positive bias coarsens sooner
    /// (`bias = 1` treats everything as twice as far), a negative one later. Result in
    /// `0..lod_count()`.
    ///
    /// A NaN `distance` or `bias` selects **LOD 0**: every comparison with NaN is false, which is what
    /// the plain comparison count gives on the GPU as well, and it never shows a coarse mesh close to
    /// the camera (an instance with a NaN position is not visible anyway). An infinite distance with a
    /// finite bias selects the coarsest LOD. Keep `bias` finite (typically `-4..=4`); integer biases
    /// are exact powers of two on the CPU and GPU alike.
    pub fn select(&self, distance: f32, bias: f32) -> u32 {
        let effective = distance * bias.exp2();
        let mut lod = 0;
        for &threshold in self.as_slice() {
            if threshold <= effective {
                lod += 1;
            }
        }
        lod
    }
}

impl TryFrom<Vec<f32>> for LodThresholds {
    type Error = Error;

    fn try_from(distances: Vec<f32>) -> Result<Self> {
        Self::new(&distances)
    }
}

impl From<LodThresholds> for Vec<f32> {
    fn from(thresholds: LodThresholds) -> Self {
        thresholds.as_slice().to_vec()
    }
}

/// Which point of a cell the LOD distance is measured to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LodDistance {
    /// The cell's centre (at mid-height): the same distance for every instance of the cell.
    #[default]
    CellCentre,
    /// The closest point of the cell's box (0 inside it): never farther than the centre, so no
    /// instance of the cell is drawn coarser than its own distance calls for.
    NearEdge,
}

/// A uniform grid of square cells on the XZ plane (Y up), used to bucket a crowd's instances.
///
/// Cell `(cx, cz)` spans `x` in `[origin[0] + f32(cx) * cell_size, origin[0] + f32(cx + 1) * cell_size]`
/// and likewise `z`; its index is `cz * dims[0] + cx`. Built with [`ChunkGrid::new`] or
/// [`ChunkGrid::covering`]; deserialising validates like `new`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ChunkGridFields", into = "ChunkGridFields")]
pub struct ChunkGrid {
    origin: [f32; 2],
    cell_size: f32,
    dims: [u32; 2],
}

/// The serialised form of a [`ChunkGrid`], validated on the way in.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct ChunkGridFields {
    origin: [f32; 2],
    cell_size: f32,
    dims: [u32; 2],
}

impl TryFrom<ChunkGridFields> for ChunkGrid {
    type Error = Error;

    fn try_from(f: ChunkGridFields) -> Result<Self> {
        Self::new(f.origin, f.cell_size, f.dims)
    }
}

impl From<ChunkGrid> for ChunkGridFields {
    fn from(g: ChunkGrid) -> Self {
        Self { origin: g.origin, cell_size: g.cell_size, dims: g.dims }
    }
}

impl ChunkGrid {
    /// A grid of `dims[0] x dims[1]` cells of `cell_size` metres whose cell `(0, 0)` has its minimum
    /// corner at `origin` (`[x, z]`, metres).
    ///
    /// # Errors
    /// [`Error::NotFinite`] for a non-finite origin or cell size, or a far corner
    /// `origin + dims * cell_size` that overflows f32; [`Error::OutOfRange`] for `cell_size <= 0`, a
    /// dimension above [`MAX_GRID_CELLS_PER_AXIS`], or more than `u32::MAX` cells;
    /// [`Error::ZeroCount`] for a zero dimension.
    pub fn new(origin: [f32; 2], cell_size: f32, dims: [u32; 2]) -> Result<Self> {
        if !(origin[0].is_finite() && origin[1].is_finite()) {
            return Err(Error::NotFinite { what: "chunk grid origin" });
        }
        if !cell_size.is_finite() {
            return Err(Error::NotFinite { what: "chunk grid cell size" });
        }
        if cell_size <= 0.0 {
            return Err(Error::OutOfRange {
                what: "chunk grid cell size",
                value: cell_size.to_string(),
                expected: "> 0 metres",
            });
        }
        for (what, n) in [("chunk grid cells along x", dims[0]), ("chunk grid cells along z", dims[1])] {
            if n == 0 {
                return Err(Error::ZeroCount { what });
            }
            if n > MAX_GRID_CELLS_PER_AXIS {
                return Err(Error::OutOfRange { what, value: n.to_string(), expected: "<= 2^24" });
            }
        }
        if dims[0].checked_mul(dims[1]).is_none() {
            return Err(Error::OutOfRange {
                what: "chunk grid cell count",
                value: format!("{} x {}", dims[0], dims[1]),
                expected: "<= u32::MAX",
            });
        }
        for axis in 0..2 {
            if !(origin[axis] + dims[axis] as f32 * cell_size).is_finite() {
                return Err(Error::NotFinite { what: "chunk grid far corner" });
            }
        }
        Ok(Self { origin, cell_size, dims })
    }

    /// The smallest grid of `cell_size` cells whose minimum corner is `min_xz` and that reaches at
    /// least `max_xz` on both axes (a degenerate rectangle gets one cell along that axis).
    ///
    /// # Errors
    /// [`Error::NotFinite`] for a non-finite argument; [`Error::OutOfRange`] if `max_xz < min_xz` on an
    /// axis or `cell_size <= 0`; the errors of [`ChunkGrid::new`] if the rectangle needs too many cells.
    pub fn covering(min_xz: [f32; 2], max_xz: [f32; 2], cell_size: f32) -> Result<Self> {
        if !(min_xz.iter().chain(&max_xz).all(|v| v.is_finite()) && cell_size.is_finite()) {
            return Err(Error::NotFinite { what: "chunk grid rectangle or cell size" });
        }
        if cell_size <= 0.0 {
            return Err(Error::OutOfRange {
                what: "chunk grid cell size",
                value: cell_size.to_string(),
                expected: "> 0 metres",
            });
        }
        let mut dims = [1u32; 2];
        for axis in 0..2 {
            let (lo, hi) = (min_xz[axis], max_xz[axis]);
            if hi < lo {
                return Err(Error::OutOfRange {
                    what: "chunk grid rectangle",
                    value: format!("max {hi} < min {lo} on axis {axis}"),
                    expected: "max >= min on both axes",
                });
            }
            // Exact-ish in f64, then nudged up until the f32 far edge the grid actually uses reaches
            // `hi` (it can round one ulp short). Counts above the per-axis limit stop the loop early.
            let wanted = ((f64::from(hi) - f64::from(lo)) / f64::from(cell_size)).ceil().max(1.0);
            let limit = f64::from(MAX_GRID_CELLS_PER_AXIS) + 1.0;
            let mut n = wanted.min(limit) as u32;
            for _ in 0..4 {
                if n > MAX_GRID_CELLS_PER_AXIS || lo + n as f32 * cell_size >= hi {
                    break;
                }
                n += 1;
            }
            dims[axis] = n;
        }
        Self::new(min_xz, cell_size, dims)
    }

    /// Minimum corner `[x, z]` of cell `(0, 0)`, metres.
    pub fn origin(&self) -> [f32; 2] {
        self.origin
    }

    /// Side of a cell, metres (`> 0`).
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// Cells along x and z (each `>= 1`).
    pub fn dims(&self) -> [u32; 2] {
        self.dims
    }

    /// Number of cells, `dims[0] * dims[1]` (fits `u32`, checked by the constructors).
    pub fn cell_count(&self) -> u32 {
        self.dims[0] * self.dims[1]
    }

    /// The cell `[cx, cz]` holding `position` (`[x, y, z]`, metres; `y` is ignored), per axis
    /// `clamp(floor((p - origin) / cell_size), 0, dims - 1)`.
    ///
    /// Positions outside the grid land in the nearest border cell, whose bounds then do not contain
    /// them: size the grid to cover the crowd (see [`ChunkGrid::covering`]) for cell culling to stay
    /// conservative. A NaN coordinate gives 0 on that axis.
    pub fn cell_coords(&self, position: [f32; 3]) -> [u32; 2] {
        let axis = |p: f32, origin: f32, dim: u32| {
            let f = ((p - origin) / self.cell_size).floor();
            // `max` maps NaN to 0; `as` saturates, so huge values clamp to the last cell.
            (f.max(0.0) as u32).min(dim - 1)
        };
        [axis(position[0], self.origin[0], self.dims[0]), axis(position[2], self.origin[1], self.dims[1])]
    }

    /// Index of cell `[cx, cz]`: `cz * dims[0] + cx`. Coordinates must be inside the grid.
    pub fn cell_index(&self, coords: [u32; 2]) -> u32 {
        debug_assert!(coords[0] < self.dims[0] && coords[1] < self.dims[1]);
        coords[1] * self.dims[0] + coords[0]
    }

    /// Coordinates `[cx, cz]` of cell index `cell`: `[cell % dims[0], cell / dims[0]]`.
    pub fn cell_coords_of_index(&self, cell: u32) -> [u32; 2] {
        debug_assert!(cell < self.cell_count());
        [cell % self.dims[0], cell / self.dims[0]]
    }

    /// Index of the cell holding `position` (see [`ChunkGrid::cell_coords`]).
    pub fn cell_of(&self, position: [f32; 3]) -> u32 {
        self.cell_index(self.cell_coords(position))
    }

    /// The box of cell `cell` between heights `y_min` and `y_max` (metres): `(min, max)` corners with
    /// `min.x = origin.x + f32(cx) * cell_size`, `max.x = origin.x + f32(cx + 1) * cell_size`, likewise
    /// z, so neighbouring cells share their edges exactly.
    pub fn cell_min_max(&self, cell: u32, y_min: f32, y_max: f32) -> ([f32; 3], [f32; 3]) {
        let [cx, cz] = self.cell_coords_of_index(cell);
        let s = self.cell_size;
        let (ox, oz) = (self.origin[0], self.origin[1]);
        (
            [ox + cx as f32 * s, y_min, oz + cz as f32 * s],
            [ox + (cx + 1) as f32 * s, y_max, oz + (cz + 1) as f32 * s],
        )
    }

    /// Centre of cell `cell` at height `y`: `origin.x + (f32(cx) + 0.5) * cell_size`, likewise z.
    /// Always within [`cell_min_max`](Self::cell_min_max) (rounding is monotonic).
    pub fn cell_centre(&self, cell: u32, y: f32) -> [f32; 3] {
        let [cx, cz] = self.cell_coords_of_index(cell);
        let s = self.cell_size;
        [self.origin[0] + (cx as f32 + 0.5) * s, y, self.origin[1] + (cz as f32 + 0.5) * s]
    }

    /// Distance in metres from `camera` to cell `cell` (its box between `y_min <= y_max`), measured
    /// per `metric`:
    ///
    /// - [`LodDistance::CellCentre`]: to [`cell_centre`](Self::cell_centre) at
    ///   `y = (y_min + y_max) * 0.5`, `d = c - centre` per axis.
    /// - [`LodDistance::NearEdge`]: to the closest point of the box, per axis
    ///   `d = max(max(min - c, c - max), 0)` (0 inside).
    ///
    /// Both return `sqrt((dx * dx + dy * dy) + dz * dz)`. `NearEdge <= CellCentre` holds exactly in
    /// f32: the centre lies in the box and rounding is monotonic. A NaN camera gives NaN for
    /// `CellCentre` and 0 on the NaN axes for `NearEdge`; either way [`LodThresholds::select`] picks
    /// LOD 0.
    pub fn distance_to_cell(
        &self,
        camera: [f32; 3],
        cell: u32,
        y_min: f32,
        y_max: f32,
        metric: LodDistance,
    ) -> f32 {
        let d = match metric {
            LodDistance::CellCentre => {
                let c = self.cell_centre(cell, (y_min + y_max) * 0.5);
                [camera[0] - c[0], camera[1] - c[1], camera[2] - c[2]]
            }
            LodDistance::NearEdge => {
                let (lo, hi) = self.cell_min_max(cell, y_min, y_max);
                let axis = |i: usize| (lo[i] - camera[i]).max(camera[i] - hi[i]).max(0.0);
                [axis(0), axis(1), axis(2)]
            }
        };
        (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
    }

    /// A sphere `(centre, radius)` enclosing cell `cell`'s box between `y_min` and `y_max`, grown by
    /// `margin` metres on x and z (the characters' radius, so a character standing near the edge of
    /// its cell is inside). A negative or NaN `margin` counts as 0.
    ///
    /// The centre is [`cell_centre`](Self::cell_centre) at `(y_min + y_max) * 0.5`. The radius is the
    /// distance from it to the farthest corner, computed in f64 from the f32 corners (per axis
    /// `max(centre - min, max - centre) + margin`, relative error below `2^-50`) and rounded to the
    /// f32 one ulp above the nearest (at least `2^-25` relative headroom), so it always encloses the
    /// box: culling with it never drops a visible cell.
    pub fn cell_bounding_sphere(&self, cell: u32, y_min: f32, y_max: f32, margin: f32) -> ([f32; 3], f32) {
        let (lo, hi) = self.cell_min_max(cell, y_min, y_max);
        let centre = self.cell_centre(cell, (y_min + y_max) * 0.5);
        let margin = f64::from(margin.max(0.0));
        let reach = |i: usize, grow: f64| {
            let (c, lo, hi) = (f64::from(centre[i]), f64::from(lo[i]), f64::from(hi[i]));
            // abs: tolerates y_min > y_max (a caller bug) without shrinking the sphere.
            (c - lo).abs().max((hi - c).abs()) + grow
        };
        let (ex, ey, ez) = (reach(0, margin), reach(1, 0.0), reach(2, margin));
        let radius = (ex * ex + ey * ey + ez * ez).sqrt();
        (centre, (radius as f32).next_up())
    }
}

/// Stable counting sort of item indices by cell, reusing the allocations of `order` and `offsets`
/// (call it every frame with the same vectors).
///
/// On return `offsets` has `cell_count + 1` entries and the items of cell `c` are
/// `order[offsets[c] as usize..offsets[c + 1] as usize]`, in increasing item index. `cells[i]` is the
/// cell of item `i`.
///
/// A cell `>= cell_count` is a caller bug; such items are put in the last cell rather than panicking
/// or being dropped. A `cell_count` of 0 is treated as 1. At most `u32::MAX` items.
pub fn counting_sort_by_cell(cells: &[u32], cell_count: u32, order: &mut Vec<u32>, offsets: &mut Vec<u32>) {
    let cell_count = cell_count.max(1);
    let last = cell_count - 1;
    let n = cell_count as usize;
    offsets.clear();
    offsets.resize(n + 1, 0);
    // offsets[c + 1] = items in cell c; then the prefix sum makes offsets[c] the start of cell c.
    for &c in cells {
        offsets[c.min(last) as usize + 1] += 1;
    }
    for c in 0..n {
        offsets[c + 1] += offsets[c];
    }
    order.clear();
    order.resize(cells.len(), 0);
    // Scatter using offsets[c] as the write cursor of cell c; afterwards offsets[c] is the end of
    // cell c, i.e. the start of c + 1, so shifting right by one restores the starts.
    for (i, &c) in cells.iter().enumerate() {
        let cursor = &mut offsets[c.min(last) as usize];
        order[*cursor as usize] = i as u32;
        *cursor += 1;
    }
    for c in (1..n).rev() {
        offsets[c] = offsets[c - 1];
    }
    offsets[0] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn thresholds() -> LodThresholds {
        LodThresholds::new(&[10.0, 20.0, 40.0]).unwrap()
    }

    #[test]
    fn switch_distances_grow_strictly_and_scale_with_the_asset() {
        // Errors in metres of a 1.8 m character: the first level is free (error 0).
        let errors = [0.0, 0.0, 0.004, 0.02, 0.021];
        let d = lod_switch_distances(&errors, 1.8);
        assert_eq!(d.len(), 5);
        assert_eq!(d[4], f32::INFINITY);
        for w in d[..4].windows(2) {
            assert!(w[1] >= w[0] * LOD_MIN_DISTANCE_RATIO, "{d:?}");
        }
        // The zero-error level switches where the character fills the 60 degree view, not at 0.
        let fill = (1.8 / (1080.0 * LOD_PIXEL_ANGLE)) as f32;
        assert!((d[0] - fill).abs() < 1e-5 && fill > 1.5, "{d:?}");
        // Error-bound levels: a pixel of error (0.02 m / pixel angle = 18.7 m).
        assert!((d[2] - (0.02 / LOD_PIXEL_ANGLE) as f32).abs() < 1e-3, "{d:?}");
        // Nearly equal errors still give a distinct, later switch.
        assert!(d[3] >= d[2] * LOD_MIN_DISTANCE_RATIO);
        // The same asset in centimetres switches at 100 times the distances, in centimetres.
        let cm: Vec<f32> = errors.iter().map(|e| e * 100.0).collect();
        let d_cm = lod_switch_distances(&cm, 180.0);
        for (a, b) in d.iter().zip(&d_cm).take(4) {
            assert!((b / a - 100.0).abs() < 1e-3, "{d:?} vs {d_cm:?}");
        }
        // Every distance is usable as thresholds.
        assert!(LodThresholds::new(&d[..4]).is_ok());
        assert!(LodThresholds::new(&d_cm[..4]).is_ok());
        assert_eq!(lod_switch_distances(&[0.0], 1.8), vec![f32::INFINITY]);
        assert!(lod_switch_distances(&[], 1.8).is_empty());
        let degenerate = lod_switch_distances(&[0.0, f32::NAN, -1.0], 0.0);
        assert!(degenerate[0] > 0.0 && degenerate[1] > degenerate[0] && degenerate[2].is_infinite());
    }

    #[test]
    fn lod_switches_at_each_threshold() {
        let t = thresholds();
        assert_eq!(t.lod_count(), 4);
        let below = |d: f32| d.next_down();
        assert_eq!(t.select(0.0, 0.0), 0);
        assert_eq!(t.select(below(10.0), 0.0), 0);
        assert_eq!(t.select(10.0, 0.0), 1);
        assert_eq!(t.select(below(20.0), 0.0), 1);
        assert_eq!(t.select(20.0, 0.0), 2);
        assert_eq!(t.select(below(40.0), 0.0), 2);
        assert_eq!(t.select(40.0, 0.0), 3);
        assert_eq!(t.select(1.0e6, 0.0), 3);
        assert_eq!(t.select(f32::INFINITY, 0.0), 3);
        assert_eq!(t.select(-5.0, 0.0), 0);
    }

    #[test]
    fn lod_bias_scales_distance_in_doublings() {
        let t = thresholds();
        // +1: everything counts as twice as far. 5 m -> 10 m -> LOD 1; just under 5 m stays LOD 0.
        assert_eq!(t.select(5.0, 1.0), 1);
        assert_eq!(t.select(5.0f32.next_down(), 1.0), 0);
        assert_eq!(t.select(20.0, 1.0), 3);
        // -1: half as far. 20 m -> 10 m -> LOD 1; 40 m -> 20 m -> LOD 2; just under 20 m -> LOD 0.
        assert_eq!(t.select(20.0, -1.0), 1);
        assert_eq!(t.select(40.0, -1.0), 2);
        assert_eq!(t.select(20.0f32.next_down(), -1.0), 0);
    }

    #[test]
    fn nan_distance_or_bias_selects_lod_0() {
        let t = thresholds();
        assert_eq!(t.select(f32::NAN, 0.0), 0);
        assert_eq!(t.select(30.0, f32::NAN), 0);
        assert_eq!(LodThresholds::default().select(1.0e9, 0.0), 0);
        assert_eq!(LodThresholds::default().lod_count(), 1);
    }

    #[test]
    fn bad_thresholds_are_typed_errors() {
        let out_of_range = |d: &[f32]| matches!(LodThresholds::new(d), Err(Error::OutOfRange { .. }));
        assert!(out_of_range(&[0.0]));
        assert!(out_of_range(&[-1.0, 5.0]));
        assert!(out_of_range(&[10.0, 10.0]));
        assert!(out_of_range(&[10.0, 5.0]));
        assert!(out_of_range(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]));
        assert!(matches!(LodThresholds::new(&[f32::NAN]), Err(Error::NotFinite { .. })));
        assert!(matches!(LodThresholds::new(&[1.0, f32::INFINITY]), Err(Error::NotFinite { .. })));
        let seven = LodThresholds::new(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]).unwrap();
        assert_eq!(seven.lod_count(), MAX_LODS as u32);
        assert_eq!(seven.as_slice(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    }

    #[test]
    fn thresholds_and_grid_serde_round_trip_and_validate() {
        let t = thresholds();
        let bytes = postcard::to_stdvec(&t).unwrap();
        assert_eq!(postcard::from_bytes::<LodThresholds>(&bytes).unwrap(), t);
        let bad = postcard::to_stdvec(&vec![20.0f32, 10.0]).unwrap();
        assert!(postcard::from_bytes::<LodThresholds>(&bad).is_err());

        let g = ChunkGrid::new([-50.0, -25.0], 8.0, [13, 7]).unwrap();
        let bytes = postcard::to_stdvec(&g).unwrap();
        assert_eq!(postcard::from_bytes::<ChunkGrid>(&bytes).unwrap(), g);
        let bad = ChunkGridFields { origin: [0.0, 0.0], cell_size: 0.0, dims: [1, 1] };
        let bytes = postcard::to_stdvec(&bad).unwrap();
        assert!(postcard::from_bytes::<ChunkGrid>(&bytes).is_err());
    }

    #[test]
    fn grid_constructor_rejects_bad_input() {
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 0.0, [1, 1]), Err(Error::OutOfRange { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], -1.0, [1, 1]), Err(Error::OutOfRange { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], f32::NAN, [1, 1]), Err(Error::NotFinite { .. })));
        assert!(matches!(ChunkGrid::new([f32::INFINITY, 0.0], 1.0, [1, 1]), Err(Error::NotFinite { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 1.0, [0, 1]), Err(Error::ZeroCount { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 1.0, [1, 0]), Err(Error::ZeroCount { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 1.0, [1 << 24, 1 << 8]), Err(Error::OutOfRange { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 1.0, [(1 << 24) + 1, 1]), Err(Error::OutOfRange { .. })));
        assert!(matches!(ChunkGrid::new([0.0, 0.0], 3.0e38, [4, 1]), Err(Error::NotFinite { .. })));
        let g = ChunkGrid::new([0.0, 0.0], 1.0, [1 << 24, 255]).unwrap();
        assert_eq!(g.cell_count(), (1 << 24) * 255);
    }

    #[test]
    fn positions_clamp_into_border_cells() {
        // 4 x 3 cells of 10 m from (-20, -15).
        let g = ChunkGrid::new([-20.0, -15.0], 10.0, [4, 3]).unwrap();
        assert_eq!(g.cell_count(), 12);
        assert_eq!(g.cell_coords([-20.0, 5.0, -15.0]), [0, 0]);
        assert_eq!(g.cell_coords([-10.0, 0.0, -5.0]), [1, 1]); // on an edge: the upper cell
        assert_eq!(g.cell_coords([19.999, 0.0, 14.999]), [3, 2]);
        assert_eq!(g.cell_coords([20.0, 0.0, 15.0]), [3, 2]); // far edge clamps in
        assert_eq!(g.cell_coords([-1.0e9, 0.0, 1.0e9]), [0, 2]);
        assert_eq!(g.cell_coords([f32::INFINITY, 0.0, f32::NEG_INFINITY]), [3, 0]);
        assert_eq!(g.cell_coords([f32::NAN, 0.0, f32::NAN]), [0, 0]);
        assert_eq!(g.cell_of([5.0, 0.0, 5.0]), 2 * 4 + 2);
        assert_eq!(g.cell_coords_of_index(10), [2, 2]);
        assert_eq!(g.cell_min_max(10, 0.0, 2.0), ([0.0, 0.0, 5.0], [10.0, 2.0, 15.0]));
        assert_eq!(g.cell_centre(10, 1.0), [5.0, 1.0, 10.0]);
    }

    #[test]
    fn distances_to_a_cell() {
        let g = ChunkGrid::new([0.0, 0.0], 10.0, [2, 2]).unwrap();
        // Cell 0 spans x, z in [0, 10], y in [0, 2]; centre (5, 1, 5).
        let centre = g.distance_to_cell([5.0, 1.0, 25.0], 0, 0.0, 2.0, LodDistance::CellCentre);
        assert_eq!(centre, 20.0);
        let edge = g.distance_to_cell([5.0, 1.0, 25.0], 0, 0.0, 2.0, LodDistance::NearEdge);
        assert_eq!(edge, 15.0);
        // 3-4-5 to the corner (10, 2, 10).
        assert_eq!(g.distance_to_cell([13.0, 2.0, 14.0], 0, 0.0, 2.0, LodDistance::NearEdge), 5.0);
        assert_eq!(g.distance_to_cell([3.0, 1.0, 3.0], 0, 0.0, 2.0, LodDistance::NearEdge), 0.0);
        assert!(g.distance_to_cell([f32::NAN; 3], 0, 0.0, 2.0, LodDistance::CellCentre).is_nan());
    }

    #[test]
    fn covering_reaches_the_far_corner() {
        let g = ChunkGrid::covering([-10.0, 0.0], [25.0, 0.0], 10.0).unwrap();
        assert_eq!(g.dims(), [4, 1]);
        assert_eq!(g.origin(), [-10.0, 0.0]);
        let exact = ChunkGrid::covering([0.0, 0.0], [30.0, 20.0], 10.0).unwrap();
        assert_eq!(exact.dims(), [3, 2]);
        // 0.1 is not exact in binary: the far edge must still reach 0.7.
        let fine = ChunkGrid::covering([0.0, 0.0], [0.7, 0.7], 0.1).unwrap();
        let (_, hi) = fine.cell_min_max(fine.cell_count() - 1, 0.0, 0.0);
        assert!(hi[0] >= 0.7 && hi[2] >= 0.7, "{fine:?}");
        assert!(matches!(ChunkGrid::covering([1.0, 0.0], [0.0, 0.0], 1.0), Err(Error::OutOfRange { .. })));
        assert!(matches!(
            ChunkGrid::covering([0.0, 0.0], [1.0e9, 1.0e9], 1.0),
            Err(Error::OutOfRange { .. })
        ));
        assert!(matches!(
            ChunkGrid::covering([0.0, 0.0], [f32::NAN, 0.0], 1.0),
            Err(Error::NotFinite { .. })
        ));
    }

    #[test]
    fn counting_sort_groups_items_and_reuses_allocations() {
        let cells = [2, 0, 2, 1, 0, 9];
        let (mut order, mut offsets) = (Vec::new(), Vec::new());
        counting_sort_by_cell(&cells, 3, &mut order, &mut offsets);
        // Item 5's cell 9 is out of range: it lands in the last cell.
        assert_eq!(offsets, [0, 2, 3, 6]);
        assert_eq!(order, [1, 4, 3, 0, 2, 5]);
        let (order_ptr, offsets_ptr) = (order.as_ptr(), offsets.as_ptr());
        counting_sort_by_cell(&[1, 1, 0], 3, &mut order, &mut offsets);
        assert_eq!((order.as_slice(), offsets.as_slice()), (&[2, 0, 1][..], &[0, 1, 3, 3][..]));
        assert_eq!((order.as_ptr(), offsets.as_ptr()), (order_ptr, offsets_ptr));
        counting_sort_by_cell(&[0, 4], 0, &mut order, &mut offsets);
        assert_eq!((order.as_slice(), offsets.as_slice()), (&[0, 1][..], &[0, 2][..]));
    }

    /// A grid and one of its cells, with moderate coordinates (|x| <= 1e4 m, cells 0.1..100 m).
    fn grid_and_cell() -> impl Strategy<Value = (ChunkGrid, u32)> {
        (-1.0e4f32..1.0e4, -1.0e4f32..1.0e4, 0.1f32..100.0, 1u32..64, 1u32..64, any::<u32>()).prop_map(
            |(ox, oz, s, dx, dz, pick)| {
                let g = ChunkGrid::new([ox, oz], s, [dx, dz]).unwrap();
                let cell = pick % g.cell_count();
                (g, cell)
            },
        )
    }

    proptest! {
        #[test]
        fn near_edge_is_never_farther_than_cell_centre(
            (g, cell) in grid_and_cell(),
            camera in proptest::array::uniform3(-2.0e4f32..2.0e4),
            y_min in -10.0f32..10.0,
            height in 0.0f32..10.0,
        ) {
            let y_max = y_min + height;
            let edge = g.distance_to_cell(camera, cell, y_min, y_max, LodDistance::NearEdge);
            let centre = g.distance_to_cell(camera, cell, y_min, y_max, LodDistance::CellCentre);
            // Exact: no tolerance (see distance_to_cell's doc for why).
            prop_assert!(edge <= centre, "edge {edge} > centre {centre}");
            prop_assert!(edge >= 0.0);
        }

        #[test]
        fn bounding_sphere_contains_the_grown_cell_box(
            (g, cell) in grid_and_cell(),
            y_min in -10.0f32..10.0,
            height in 0.0f32..10.0,
            margin in 0.0f32..2.0,
            points in proptest::collection::vec(proptest::array::uniform3(0.0f64..=1.0), 16),
        ) {
            let y_max = y_min + height;
            let (c, r) = g.cell_bounding_sphere(cell, y_min, y_max, margin);
            let (lo, hi) = g.cell_min_max(cell, y_min, y_max);
            let m = f64::from(margin);
            let lo = [f64::from(lo[0]) - m, f64::from(lo[1]), f64::from(lo[2]) - m];
            let hi = [f64::from(hi[0]) + m, f64::from(hi[1]), f64::from(hi[2]) + m];
            // The 8 corners (u = 0 or 1 per axis) and random points of the grown box, measured in f64.
            // The radius has >= 2^-25 relative headroom; the f64 test arithmetic errs by < 2^-48 of
            // |coordinates| <= 2e4 m, under 1e-10 m against radii >= 0.07 m, so no tolerance is needed.
            let corners = (0..8).map(|k| [f64::from(k & 1), f64::from((k >> 1) & 1), f64::from((k >> 2) & 1)]);
            for u in corners.chain(points) {
                let mut d2 = 0.0;
                for i in 0..3 {
                    let p = lo[i] + u[i] * (hi[i] - lo[i]);
                    let d = p - f64::from(c[i]);
                    d2 += d * d;
                }
                prop_assert!(d2.sqrt() <= f64::from(r), "point at {u:?} is {} > {r}", d2.sqrt());
            }
            // Not needlessly loose. The farthest point from the computed centre c is at most
            // half_diagonal + |c - true centre| away (triangle inequality); rounding to the nearest f32
            // then one ulp up adds at most 1.5 ulp <= 1.5 * 2^-23 relative, below the 2^-22 allowed.
            let half = [0, 1, 2].map(|i| (hi[i] - lo[i]) * 0.5);
            let half_diagonal = (half[0] * half[0] + half[1] * half[1] + half[2] * half[2]).sqrt();
            let off = [0, 1, 2].map(|i| f64::from(c[i]) - (lo[i] + hi[i]) * 0.5);
            let off_centre = (off[0] * off[0] + off[1] * off[1] + off[2] * off[2]).sqrt();
            let bound = (half_diagonal + off_centre) * (1.0 + 2f64.powi(-22));
            prop_assert!(f64::from(r) <= bound, "radius {r} > {bound}");
        }

        #[test]
        fn counting_sort_equals_a_stable_sort_by_cell(
            cells in proptest::collection::vec(0u32..40, 0..300),
            cell_count in 1u32..40,
        ) {
            let (mut order, mut offsets) = (vec![7; 3], vec![1; 50]);
            counting_sort_by_cell(&cells, cell_count, &mut order, &mut offsets);
            let clamp = |c: u32| c.min(cell_count - 1);
            let mut expected: Vec<u32> = (0..cells.len() as u32).collect();
            expected.sort_by_key(|&i| clamp(cells[i as usize])); // sort_by_key is stable
            prop_assert_eq!(&order, &expected);
            prop_assert_eq!(offsets.len(), cell_count as usize + 1);
            for c in 0..cell_count {
                let items = &order[offsets[c as usize] as usize..offsets[c as usize + 1] as usize];
                prop_assert!(items.iter().all(|&i| clamp(cells[i as usize]) == c));
            }
            prop_assert_eq!(offsets[cell_count as usize] as usize, cells.len());
        }
    }
}
