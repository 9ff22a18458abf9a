//! The crowd's grid: which cell lists which instance, per-cell bounds and counts, and the
//! cell-grouped instance list, kept up to date incrementally.
//!
//! Invariants (between two calls of the crowd's public methods):
//! - `list[..listed_len]` holds every listed instance exactly once, grouped by cell in cell order:
//!   cell `c`'s members are `list[cell_start[c]..cell_start[c + 1]]`, and `cell_of[i] == c` for each.
//!   Instances spawned since the last rebuild/apply are unlisted (`cell_of[i] == UNLISTED`).
//! - `cells[c].min..max` encloses the current position of every instance listed in `c` whose position
//!   is still inside grid cell `c` (the crowd queues the others as movers), `max_scale` is at least
//!   their scale, and the counts match their variant bits.
//! - `list[listed_len..]` is the far pool of the last frame (rebuilt by the frame code).

use crate::instance::{InstanceRecord, VARIANT_ACCESSORY, VARIANT_HIDDEN};
use crate::lod::{ChunkGrid, counting_sort_by_cell};

/// `cell_of` value of an instance not yet sorted into a cell.
pub(super) const UNLISTED: u32 = u32::MAX;

/// Upper bound on the cells of a grid: the cell size doubles until the crowd's extent fits in this many.
pub(super) const MAX_CELLS: f64 = (1u32 << 22) as f64;

/// Cell size used when the configured one is not finite and `> 0`, metres.
pub(super) const FALLBACK_CELL_SIZE: f32 = 16.0;

/// Bounds and counts of one cell's listed instances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CellData {
    /// Lowest corner of the members' positions (origins), metres; `+inf` when empty.
    pub(super) min: [f32; 3],
    /// Highest corner of the members' positions, metres; `-inf` when empty.
    pub(super) max: [f32; 3],
    /// Largest scale of any member.
    pub(super) max_scale: f32,
    /// Members, hidden ones included.
    pub(super) count: u32,
    /// Members without `VARIANT_HIDDEN`.
    pub(super) shown: u32,
    /// Members without `VARIANT_HIDDEN` and with `VARIANT_ACCESSORY`.
    pub(super) accessory: u32,
}

impl CellData {
    pub(super) const EMPTY: Self = Self {
        min: [f32::INFINITY; 3],
        max: [f32::NEG_INFINITY; 3],
        max_scale: 0.0,
        count: 0,
        shown: 0,
        accessory: 0,
    };

    /// Grows the box to hold `p` (NaN coordinates are ignored by `min`/`max`).
    pub(super) fn grow(&mut self, p: [f32; 3]) {
        for (a, &v) in p.iter().enumerate() {
            self.min[a] = self.min[a].min(v);
            self.max[a] = self.max[a].max(v);
        }
    }

    fn add(&mut self, r: &InstanceRecord) {
        self.grow(r.position);
        self.max_scale = self.max_scale.max(r.scale);
        self.count += 1;
        let (shown, accessory) = variant_counts(r.variant_bits);
        self.shown += shown;
        self.accessory += accessory;
    }

    fn remove(&mut self, r: &InstanceRecord) {
        self.count = self.count.saturating_sub(1);
        if self.count == 0 {
            *self = Self::EMPTY;
            return;
        }
        let (shown, accessory) = variant_counts(r.variant_bits);
        self.shown = self.shown.saturating_sub(shown);
        self.accessory = self.accessory.saturating_sub(accessory);
    }
}

/// `(shown, accessory)` contributions (0 or 1 each) of an instance with these variant bits.
pub(super) fn variant_counts(bits: u32) -> (u32, u32) {
    let shown = bits & VARIANT_HIDDEN == 0;
    (u32::from(shown), u32::from(shown && bits & VARIANT_ACCESSORY != 0))
}

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub(super) struct Spatial {
    pub(super) grid: Option<ChunkGrid>,
    /// Far corner `[x, z]` of the grid (the max corner of its last cell), metres.
    grid_far: [f32; 2],
    /// False for the one-cell fallback grid used when no grid can cover the crowd (absurd extents).
    pub(super) covers: bool,
    /// The sanitised configured cell size the grid was built for, metres.
    built_cell_size: f32,
    pub(super) cell_of: Vec<u32>,
    pub(super) cells: Vec<CellData>,
    pub(super) cell_start: Vec<u32>,
    pub(super) nonempty: Vec<u32>,
    pub(super) list: Vec<u32>,
    pub(super) listed_len: usize,
    /// First list entry changed since the list was last handed out (None: unchanged).
    pub(super) list_dirty_from: Option<usize>,
    /// Finite position coordinates seen since the last rebuild (grow-only), metres.
    pub(super) ext_min: [f32; 3],
    pub(super) ext_max: [f32; 3],
    /// Largest scale seen since the last rebuild (grow-only).
    pub(super) scale_max: f32,
    // Scratch, reused.
    scratch: Vec<u32>,
    order: Vec<u32>,
    offsets: Vec<u32>,
    removed: Vec<u32>,
    moves: Vec<(u32, u32)>,
}

/// The configured cell size if usable, else [`FALLBACK_CELL_SIZE`].
pub(super) fn sanitize_cell_size(cell_size: f32) -> f32 {
    if cell_size.is_finite() && cell_size > 0.0 { cell_size } else { FALLBACK_CELL_SIZE }
}

impl Spatial {
    pub(super) fn new() -> Self {
        Self { ext_min: [f32::INFINITY; 3], ext_max: [f32::NEG_INFINITY; 3], ..Self::default() }
    }

    /// Registers a new (unlisted) instance at `position` with `scale`.
    pub(super) fn push_instance(&mut self, position: [f32; 3], scale: f32) {
        self.cell_of.push(UNLISTED);
        self.grow_extent(position);
        self.scale_max = self.scale_max.max(scale);
    }

    fn grow_extent(&mut self, p: [f32; 3]) {
        for (a, &v) in p.iter().enumerate() {
            if v.is_finite() {
                self.ext_min[a] = self.ext_min[a].min(v);
                self.ext_max[a] = self.ext_max[a].max(v);
            }
        }
    }

    /// Whether `p` lies in the grid's rectangle (edges included); false for NaN.
    fn inside(&self, p: [f32; 3]) -> bool {
        match &self.grid {
            Some(g) => {
                let o = g.origin();
                p[0] >= o[0] && p[0] <= self.grid_far[0] && p[2] >= o[1] && p[2] <= self.grid_far[1]
            }
            None => false,
        }
    }

    /// Instance `i` now stands at `p`. Returns true if its listed cell may no longer hold it (the
    /// caller queues it as a mover); otherwise grows the listed cell's box to hold `p`.
    pub(super) fn note_position(&mut self, i: usize, p: [f32; 3]) -> bool {
        self.grow_extent(p);
        let listed = self.cell_of[i];
        if listed == UNLISTED || !self.inside(p) {
            return true;
        }
        let Some(grid) = &self.grid else { return true };
        if grid.cell_of(p) != listed {
            return true;
        }
        self.cells[listed as usize].grow(p);
        false
    }

    /// Instance `i`'s scale is now `scale`.
    pub(super) fn note_scale(&mut self, i: usize, scale: f32) {
        self.scale_max = self.scale_max.max(scale);
        let listed = self.cell_of[i];
        if listed != UNLISTED {
            let cell = &mut self.cells[listed as usize];
            cell.max_scale = cell.max_scale.max(scale);
        }
    }

    /// Instance `i`'s variant bits changed from `old` to `new`.
    pub(super) fn note_variant(&mut self, i: usize, old: u32, new: u32) {
        let listed = self.cell_of[i];
        if listed == UNLISTED {
            return;
        }
        let cell = &mut self.cells[listed as usize];
        let (s0, a0) = variant_counts(old);
        let (s1, a1) = variant_counts(new);
        cell.shown = (cell.shown + s1).saturating_sub(s0);
        cell.accessory = (cell.accessory + a1).saturating_sub(a0);
    }

    /// Whether the grid must be (re)built: none yet for a non-empty crowd, a position seen outside it,
    /// or another configured cell size.
    pub(super) fn needs_rebuild(&self, cell_size: f32, instance_count: usize) -> bool {
        let Some(grid) = &self.grid else { return instance_count > 0 };
        if sanitize_cell_size(cell_size) != self.built_cell_size {
            return true;
        }
        if !self.covers || self.ext_min[0] > self.ext_max[0] {
            // The fallback grid is kept until the extent changes; an empty extent needs nothing.
            return false;
        }
        let o = grid.origin();
        self.ext_min[0] < o[0]
            || self.ext_min[2] < o[1]
            || self.ext_max[0] > self.grid_far[0]
            || self.ext_max[2] > self.grid_far[1]
    }

    /// Rebuilds everything from the records: exact extent, a grid covering it with slack (12.5 % of
    /// the extent or one cell per side, whichever is more; the cell size doubles until the grid has at
    /// most [`MAX_CELLS`] cells), every instance's cell, the per-cell data and the sorted list.
    /// Reads every record once.
    pub(super) fn rebuild(&mut self, records: &[InstanceRecord], cell_size: f32) {
        let cell_size = sanitize_cell_size(cell_size);
        self.built_cell_size = cell_size;
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        let mut scale_max = 0.0f32;
        for r in records {
            for a in 0..3 {
                let v = r.position[a];
                if v.is_finite() {
                    lo[a] = lo[a].min(v);
                    hi[a] = hi[a].max(v);
                }
            }
            scale_max = scale_max.max(r.scale);
        }
        self.ext_min = lo;
        self.ext_max = hi;
        self.scale_max = scale_max;
        for a in 0..3 {
            if lo[a] > hi[a] {
                lo[a] = 0.0;
                hi[a] = 0.0;
            }
        }
        let (grid, covers) = make_grid([lo[0], lo[2]], [hi[0], hi[2]], cell_size);
        let (_, far) = grid.cell_min_max(grid.cell_count() - 1, 0.0, 0.0);
        self.grid_far = [far[0], far[2]];
        self.covers = covers;
        let n_cells = grid.cell_count() as usize;
        self.cells.clear();
        self.cells.resize(n_cells, CellData::EMPTY);
        self.removed.clear();
        self.removed.resize(n_cells, 0);
        self.cell_of.clear();
        for r in records {
            let c = grid.cell_of(r.position);
            self.cell_of.push(c);
            self.cells[c as usize].add(r);
        }
        self.grid = Some(grid);
        self.sort_all();
    }

    /// Counting sort of every instance by `cell_of` into `list` / `cell_start`.
    fn sort_all(&mut self) {
        let n_cells = self.cells.len() as u32;
        counting_sort_by_cell(&self.cell_of, n_cells, &mut self.order, &mut self.offsets);
        std::mem::swap(&mut self.list, &mut self.order);
        std::mem::swap(&mut self.cell_start, &mut self.offsets);
        self.listed_len = self.list.len();
        self.list_dirty_from = Some(0);
        self.refresh_nonempty();
    }

    fn refresh_nonempty(&mut self) {
        self.nonempty.clear();
        for (c, w) in self.cell_start.windows(2).enumerate() {
            if w[1] > w[0] {
                self.nonempty.push(c as u32);
            }
        }
    }

    /// Lists the queued movers (each at most once) in the cell of their current position.
    ///
    /// Few moves: the list is rewritten from the first affected cell on (one copy of that suffix,
    /// leavers filtered out of the cells they left, arrivals appended to the cells they entered);
    /// per-cell work is O(cells). Many moves (more than 1/16 of the crowd): one counting sort.
    pub(super) fn apply_moves(&mut self, movers: &[u32], records: &[InstanceRecord]) {
        let Some(grid) = self.grid else { return };
        self.moves.clear();
        let mut first = usize::MAX;
        for &i in movers {
            let r = &records[i as usize];
            let to = grid.cell_of(r.position);
            let from = self.cell_of[i as usize];
            if from == to {
                self.cells[to as usize].grow(r.position);
                continue;
            }
            if from != UNLISTED {
                self.cells[from as usize].remove(r);
                self.removed[from as usize] += 1;
                first = first.min(from as usize);
            }
            self.cells[to as usize].add(r);
            self.cell_of[i as usize] = to;
            first = first.min(to as usize);
            self.moves.push((to, i));
        }
        if self.moves.is_empty() {
            return;
        }
        if self.moves.len() > records.len() / 16 {
            self.removed.fill(0);
            self.sort_all();
            return;
        }
        self.moves.sort_unstable();
        let p = self.cell_start[first] as usize;
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.list[p..self.listed_len]);
        self.list.truncate(p);
        let mut old_start = p;
        let mut next_move = 0;
        for c in first..self.cells.len() {
            let old_end = self.cell_start[c + 1] as usize;
            let segment = &self.scratch[old_start - p..old_end - p];
            if self.removed[c] > 0 {
                let cell_of = &self.cell_of;
                self.list.extend(segment.iter().copied().filter(|&i| cell_of[i as usize] == c as u32));
                self.removed[c] = 0;
            } else {
                self.list.extend_from_slice(segment);
            }
            while let Some(&(to, i)) = self.moves.get(next_move) {
                if to as usize != c {
                    break;
                }
                self.list.push(i);
                next_move += 1;
            }
            old_start = old_end;
            self.cell_start[c + 1] = self.list.len() as u32;
        }
        self.listed_len = self.list.len();
        self.list_dirty_from = Some(self.list_dirty_from.map_or(p, |d| d.min(p)));
        self.refresh_nonempty();
    }

    /// The members of cell `c` in the list.
    pub(super) fn members(&self, c: usize) -> &[u32] {
        &self.list[self.cell_start[c] as usize..self.cell_start[c + 1] as usize]
    }
}

/// A grid covering `lo..hi` (`[x, z]`, metres) with slack; `(grid, true)`, or a one-cell fallback and
/// `false` if no grid can be built (non-finite far corner).
fn make_grid(lo: [f32; 2], hi: [f32; 2], cell_size: f32) -> (ChunkGrid, bool) {
    let size = [f64::from(hi[0]) - f64::from(lo[0]), f64::from(hi[1]) - f64::from(lo[1])];
    let mut cs = f64::from(cell_size);
    let mut pad = [0.0f64; 2];
    for _ in 0..256 {
        pad = [(size[0] * 0.125).max(cs), (size[1] * 0.125).max(cs)];
        let nx = ((size[0] + 2.0 * pad[0]) / cs).ceil() + 1.0;
        let nz = ((size[1] + 2.0 * pad[1]) / cs).ceil() + 1.0;
        if nx * nz <= MAX_CELLS {
            break;
        }
        cs *= 2.0;
    }
    let min = [(f64::from(lo[0]) - pad[0]) as f32, (f64::from(lo[1]) - pad[1]) as f32];
    let max = [(f64::from(hi[0]) + pad[0]) as f32, (f64::from(hi[1]) + pad[1]) as f32];
    match ChunkGrid::covering(min, max, cs as f32) {
        Ok(g) => (g, true),
        Err(_) => match ChunkGrid::new([0.0, 0.0], 1.0, [1, 1]) {
            Ok(g) => (g, false),
            // A 1 x 1 grid of 1 m cells at the origin is always valid; this arm is unreachable.
            Err(_) => unreachable!("a one-cell grid is valid"),
        },
    }
}
