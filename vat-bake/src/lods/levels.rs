//! LOD options, levels, dropped levels and the chain of index lists.

use super::*;

/// How many LODs to build and how small each is.
#[derive(Debug, Clone, PartialEq)]
pub enum LodOptions {
    /// `n` levels (`1..=8`, default 5) with geometric triangle ratios from 1 down to
    /// [`DEFAULT_LAST_RATIO`]: ratio `i` is `0.01^(i / (n - 1))` (5 levels: 1, 0.316, 0.1, 0.0316,
    /// 0.01).
    Count(u32),
    /// Explicit ratios of LOD 0's triangle count, one per level (`1..=8` of them): the first must be
    /// exactly 1 (LOD 0 is the full mesh), the others in `(0, 1)` and strictly decreasing, e.g.
    /// `[1, 0.38, 0.1, 0.03, 0.01]`.
    Ratios(Vec<f32>),
}

impl Default for LodOptions {
    fn default() -> Self {
        LodOptions::Count(5)
    }
}

impl LodOptions {
    /// The triangle ratio of each level, LOD 0 first (always 1).
    ///
    /// # Errors
    /// [`BakeError::InvalidOption`] (`--lods` / `--lod-ratios`) for a count outside `1..=8`, or
    /// ratios that are empty, more than 8, not starting at 1, not finite, outside `(0, 1]` or not
    /// strictly decreasing.
    pub fn ratios(&self) -> Result<Vec<f32>> {
        match self {
            LodOptions::Count(n) => {
                let n = *n as usize;
                if !(1..=MAX_LODS).contains(&n) {
                    return Err(BakeError::InvalidOption {
                        option: "--lods",
                        problem: format!("{n} levels; expected 1 to {MAX_LODS}"),
                    });
                }
                let last = (n - 1).max(1) as f64;
                Ok((0..n).map(|i| DEFAULT_LAST_RATIO.powf(i as f64 / last) as f32).collect())
            }
            LodOptions::Ratios(r) => {
                let bad = |problem: String| BakeError::InvalidOption { option: "--lod-ratios", problem };
                if r.is_empty() || r.len() > MAX_LODS {
                    return Err(bad(format!("{} ratios; expected 1 to {MAX_LODS}", r.len())));
                }
                if r[0] != 1.0 {
                    return Err(bad(format!("the first ratio is {}; LOD 0 is the full mesh, ratio 1", r[0])));
                }
                for (i, w) in r.windows(2).enumerate() {
                    if !(w[1].is_finite() && w[1] > 0.0 && w[1] < w[0]) {
                        return Err(bad(format!(
                            "ratio {} is {}; ratios must be in (0, 1] and strictly decreasing (previous {})",
                            i + 1,
                            w[1],
                            w[0]
                        )));
                    }
                }
                Ok(r.clone())
            }
        }
    }
}

/// One level of a [`LodChain`].
#[derive(Debug, Clone, PartialEq)]
pub struct LodLevel {
    /// Triangle list over the original vertex ids (three indices per triangle, at least one
    /// triangle).
    pub indices: Vec<u32>,
    /// The requested share of LOD 0's triangles (`1` for LOD 0).
    pub target_ratio: f32,
    /// Largest deviation from LOD 0 in metres as meshoptimizer estimates it, accumulated along the
    /// chain (a sum of the per-step errors, so an upper estimate); includes the reference poses.
    /// `0` for LOD 0.
    pub error: f32,
    /// Index of this level in the requested chain ([`LodOptions::ratios`]): equal to its index in
    /// [`LodChain::levels`] until a level has been dropped, larger after.
    pub requested: usize,
    /// How the level was made.
    pub method: LodMethod,
    /// Its surface attribute error at the positions it keeps (see [`AttributeError`]).
    pub attribute_error: AttributeError,
}

impl LodLevel {
    /// Triangles in this level.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }
}

/// Work units per triangle the simplifier and the vertex cache optimiser may spend ([`AdjacencyWork`]):
/// about 50 times what ordinary meshes need (a vertex shared by about 6 triangles costs 36 units
/// for its 2 triangles).
pub const ADJACENCY_WORK_PER_TRIANGLE: u64 = 1024;

/// The least adjacency work any mesh may spend, so that small meshes with one busy vertex (a disc,
/// a cone's cap of a few thousand triangles) keep their LODs: `2^24`, well under a second.
pub const ADJACENCY_WORK_MIN: u64 = 1 << 24;

/// What the simplifier and the vertex cache optimiser would cost on a triangle list: `work` is the
/// sum over vertices of the square of the number of triangle corners on them (their cost grows with
/// it, see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdjacencyWork {
    /// Sum over vertices of (triangle corners on the vertex)^2.
    pub work: u64,
    /// The most triangle corners on one vertex.
    pub busiest_vertex: u64,
    /// The budget for this list: `max(ADJACENCY_WORK_MIN, ADJACENCY_WORK_PER_TRIANGLE * triangles)`.
    pub budget: u64,
}

impl AdjacencyWork {
    /// Measures `indices` (a triangle list; indices `>= vertex_count` are not counted). Linear.
    pub fn of(indices: &[u32], vertex_count: usize) -> Self {
        let mut corners = vec![0u64; vertex_count];
        for &i in indices {
            if let Some(c) = corners.get_mut(i as usize) {
                *c += 1;
            }
        }
        let work = corners.iter().fold(0u64, |sum, &c| sum.saturating_add(c.saturating_mul(c)));
        let busiest_vertex = corners.iter().copied().max().unwrap_or(0);
        let triangles = (indices.len() / 3) as u64;
        let budget = ADJACENCY_WORK_MIN.max(ADJACENCY_WORK_PER_TRIANGLE.saturating_mul(triangles));
        Self { work, busiest_vertex, budget }
    }

    /// Whether the work is within the budget.
    pub fn within_budget(&self) -> bool {
        self.work <= self.budget
    }
}

/// A vertex-cache-optimised copy of the triangle list `indices`: meshoptimizer's
/// [`meshopt::optimize_vertex_cache`] when its cost is within budget ([`AdjacencyWork`]), its linear
/// FIFO optimiser (cache of 16) otherwise.
pub fn optimize_vertex_cache_bounded(indices: &[u32], vertex_count: usize) -> Vec<u32> {
    if AdjacencyWork::of(indices, vertex_count).within_budget() {
        meshopt::optimize_vertex_cache(indices, vertex_count)
    } else {
        meshopt::optimize_vertex_cache_fifo(indices, vertex_count, 16)
    }
}

/// Why a requested level was not kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropReason {
    /// The simplifier did not get the last kept level below [`MAX_KEPT_FRACTION`] of its triangles.
    NotSimplified,
    /// Simplifying would cost more than the budget ([`AdjacencyWork`]): no level after LOD 0 is
    /// built.
    OverWorkBudget(AdjacencyWork),
}

/// A requested level that was not kept because it could not simplify the last kept level enough,
/// or because simplifying would cost too much (see the module docs). Its
/// [`Display`](std::fmt::Display) is the one-line warning a bake prints, e.g. `LOD 2 dropped:
/// simplification stalled at 12 triangles (LOD 1 has 12)`; LOD numbers there are those of the
/// requested chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedLod {
    /// Why it was dropped.
    pub reason: DropReason,
    /// Index of the dropped level in the requested chain (`>= 1`).
    pub requested: usize,
    /// Triangles the simplifier reached (the previous level's count when it removed none; 0 when it
    /// removed everything).
    pub reached: usize,
    /// The requested index of the kept level it was simplified from.
    pub previous: usize,
    /// Triangles of that kept level.
    pub previous_triangles: usize,
}

impl std::fmt::Display for DroppedLod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lod, prev, prev_tris) = (self.requested, self.previous, self.previous_triangles);
        if let DropReason::OverWorkBudget(w) = &self.reason {
            return write!(
                f,
                "LOD {lod} dropped: not simplified, because one vertex is shared by {} triangle corners and \
                 simplifying LOD {prev}'s {prev_tris} triangles would cost {} adjacency steps, over the budget \
                 of {} ({ADJACENCY_WORK_PER_TRIANGLE} per triangle); split the mesh around that vertex to get LODs",
                w.busiest_vertex, w.work, w.budget
            );
        }
        if self.reached == 0 {
            write!(f, "LOD {lod} dropped: simplification left no triangles (LOD {prev} has {prev_tris})")
        } else if self.reached >= prev_tris {
            write!(
                f,
                "LOD {lod} dropped: simplification stalled at {} triangles (LOD {prev} has {prev_tris})",
                self.reached
            )
        } else {
            write!(
                f,
                "LOD {lod} dropped: simplification reached only {} triangles, not under {:.0} % of LOD {prev}'s {prev_tris}",
                self.reached,
                MAX_KEPT_FRACTION * 100.0
            )
        }
    }
}

/// Whether a level of `triangles` simplified from one of `previous` triangles is kept:
/// `1 <= triangles < MAX_KEPT_FRACTION * previous`.
pub fn is_meaningful_reduction(triangles: usize, previous: usize) -> bool {
    triangles >= 1 && (triangles as f64) < MAX_KEPT_FRACTION * previous as f64
}

/// The levels of detail of one mesh, most detailed first. Triangle counts are strictly decreasing,
/// each below [`MAX_KEPT_FRACTION`] of the previous one; levels that could not get there are in
/// `dropped` instead.
#[derive(Debug, Clone, PartialEq)]
pub struct LodChain {
    /// The kept levels (at least one); `levels[0]` holds every triangle of the input.
    pub levels: Vec<LodLevel>,
    /// The requested levels that were dropped, in request order.
    pub dropped: Vec<DroppedLod>,
}

impl LodChain {
    /// The index lists of every level.
    pub fn index_lists(&self) -> Vec<Vec<u32>> {
        self.levels.iter().map(|l| l.indices.clone()).collect()
    }

    /// Triangle counts of every level.
    pub fn triangle_counts(&self) -> Vec<usize> {
        self.levels.iter().map(LodLevel::triangle_count).collect()
    }

    /// The lines a bake notes about its chain: one per level made by clustering
    /// ([`LodMethod::Clustered`], naming the level and why), then, when a level after LOD 0 has a
    /// surface attribute error above zero, one line with every level's triangles, geometric error and
    /// [`AttributeError`]. LOD numbers are those of the kept chain (what `vat inspect` lists).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (lod, level) in self.levels.iter().enumerate() {
            if let LodMethod::Clustered { collapsed_to, joining_dropped } = level.method {
                let joining = if joining_dropped > 0 {
                    format!(", {joining_dropped} clustered triangles joining parts that move apart left out")
                } else {
                    String::new()
                };
                notes.push(format!(
                    "LOD {lod}: edge collapses stalled at {collapsed_to} triangles, so it was made by vertex \
                     clustering: {} triangles, error {:.4} m{joining}",
                    level.triangle_count(),
                    level.error
                ));
            }
        }
        let lossy = |e: &AttributeError| [e.normal_deg, e.uv, e.color].into_iter().flatten().any(|x| x > 0.0);
        if self.levels.iter().skip(1).any(|l| lossy(&l.attribute_error)) {
            let levels: Vec<String> = self
                .levels
                .iter()
                .enumerate()
                .skip(1)
                .map(|(lod, l)| {
                    format!(
                        "LOD {lod} {} triangles, {:.4} m, {}",
                        l.triangle_count(),
                        l.error,
                        l.attribute_error
                    )
                })
                .collect();
            notes.push(format!("LOD attribute error at the positions each keeps: {}", levels.join("; ")));
        }
        notes
    }
}
