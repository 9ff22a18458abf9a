//! The LOD chain and the vertex order of a bake.
//!
//! Every LOD is an index buffer over the one baked vertex set: a LOD never adds or moves vertices,
//! it only drops triangles, so every LOD index is an original vertex id and one animation texture
//! serves every LOD.
//!
//! # How the chain is built, and why limbs do not weld
//!
//! Each LOD after the first simplifies the previous one with meshoptimizer's edge-collapse
//! simplifier ([`meshopt::simplify_with_attributes_and_locks`], no vertex locks) on the mesh
//! **welded by position**: vertices with the same rest position (and the same position in every
//! reference pose, and the same [`LodSurface::groups`] part) are one vertex to the simplifier,
//! whatever their normals, texture coordinates or colours, so hard edges and UV seams, which split
//! every vertex of a flat-shaded low-poly character, no longer stop the collapses. Each simplified
//! triangle is then mapped back to LOD 0's split vertices (`Unweld`: per corner, the vertex whose
//! normal is closest to the triangle's, in the same UV chart as the other corners), so attribute
//! seams stay split in the output; what a level loses at the positions it keeps is measured
//! ([`LodLevel::attribute_error`]) and noted ([`LodChain::notes`]). Where the collapses stall above
//! [`CLUSTER_FALLBACK_FACTOR`] times the target (levels after LOD 1 only), the level falls back to
//! meshoptimizer's "sloppy" vertex clustering ([`LodMethod::Clustered`]), without the triangles that
//! would join parts that move apart. Otherwise an edge collapse only merges two vertices that already
//! share an edge, so parts that are not connected (an arm hanging by the hip, fingers) can never be joined,
//! whatever the triangle budget. To keep collapses from merging vertices that are connected but
//! move apart when animated (an armpit edge between the arm and the torso), the collapse cost also
//! measures each vertex's position in a few animated *reference poses* (passed as attributes, in the
//! same metric as the rest position): an edge whose ends move apart costs as much as the distance
//! they reach in any reference pose. When a level cannot reach its triangle budget by collapses, it
//! is retried with meshoptimizer's pruning of disconnected components smaller than the deviation the
//! collapses reached: small debris goes, a part as large as the error allows stays.
//!
//! # A chain never repeats a level
//!
//! A level is kept only if it has fewer than [`MAX_KEPT_FRACTION`] (90 %) of the triangles of the
//! level it was simplified from (the last kept level), and at least one. Otherwise (a low-poly mesh
//! that cannot lose a triangle, an unwelded mesh whose triangles share no edge, a level that lost
//! only a few triangles) the level is **dropped** and recorded in [`LodChain::dropped`] with the
//! reason; the next requested ratio is then tried from the same last kept level. The chain is
//! shorter than requested, never padded: a chain of one level (LOD 0) is valid. Drawing a repeated
//! level would cost as much as its predecessor while the crowd treats it as a far LOD (no shadows,
//! no cross-fade), which is why repeats are not kept.
//!
//! # Bounded work
//!
//! meshoptimizer's simplifier and vertex cache optimiser revisit the triangles around a vertex each
//! time one of them changes, so their cost grows with the square of how many triangles share a
//! vertex: a fan of 250,000 triangles around one vertex (valid glTF, a few bytes per triangle)
//! would take minutes. Before either runs, the chain measures that cost, [`AdjacencyWork`] (the sum
//! over vertices of the square of their triangle count), and compares it with a budget linear in
//! the triangle count ([`ADJACENCY_WORK_PER_TRIANGLE`] per triangle, at least
//! [`ADJACENCY_WORK_MIN`]); ordinary meshes need about 20 per triangle. Over budget, the documented
//! fallbacks keep the work linear: the levels after LOD 0 are not built (each is
//! [dropped](DroppedLod) with the reason and the numbers), and the vertex cache order uses
//! meshoptimizer's linear FIFO optimiser ([`meshopt::optimize_vertex_cache_fifo`]) instead of the
//! slightly better quadratic-at-worst one. Triangles with a repeated index (no area) are left out of
//! the simplifier's input: they cannot be seen and only add work.
//!
//! Targets are triangle counts (`ratio * LOD0 triangles`); the error is not limited (a budget of
//! 1 % of the triangles cannot stay within a few % of the extent), it is measured and stored per
//! LOD ([`LodLevel::error`], metres) so that the runtime picks a LOD by projected error.

use glam::{Vec2, Vec3, Vec4};
use meshopt::{SimplifyOptions, VertexDataAdapter};

use crate::skin::VertexSet;
use crate::{BakeError, Result};

/// The most LODs a chain may have (vat-core's [`vat_core::lod::MAX_LODS`]).
pub const MAX_LODS: usize = vat_core::lod::MAX_LODS;

/// The last ratio of a chain built from [`LodOptions::Count`]: about 1 % of LOD 0's triangles.
pub const DEFAULT_LAST_RATIO: f64 = 0.01;

/// A simplified level is kept only if its triangle count is below this fraction of the level it was
/// simplified from (`triangles < 0.9 * previous`); otherwise it is dropped as "not simplified"
/// (see the module docs).
pub const MAX_KEPT_FRACTION: f64 = 0.9;

/// Most reference poses used as simplification attributes (3 coordinates each; meshoptimizer takes
/// at most 32 attributes).
pub const MAX_REFERENCE_POSES: usize = 8;

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

/// Builds the LOD chain of `set` from its rest positions only (no reference poses); see
/// [`build_lod_chain_posed`]. Returns the index list of every level, LOD 0 first (= `set.indices`).
///
/// # Errors
/// As [`build_lod_chain_posed`].
pub fn build_lod_chain(set: &VertexSet, options: &LodOptions) -> Result<Vec<Vec<u32>>> {
    Ok(build_lod_chain_posed(&set.positions, &set.indices, &[], options)?.index_lists())
}

/// Builds the LOD chain of the triangle list `indices` over `positions` (rest pose, metres), with
/// `poses` the same vertices in up to [`MAX_REFERENCE_POSES`] animated reference poses (each
/// `positions.len()` long; may be empty), and no surface attributes: see [`build_lod_chain_surface`].
///
/// # Errors
/// As [`build_lod_chain_surface`].
pub fn build_lod_chain_posed(
    positions: &[Vec3],
    indices: &[u32],
    poses: &[&[Vec3]],
    options: &LodOptions,
) -> Result<LodChain> {
    build_lod_chain_surface(positions, indices, poses, &LodSurface::default(), options)
}

/// The surface attributes of the vertices a chain simplifies (each, when present, one entry per
/// vertex): they never steer the collapses (the simplifier works on the mesh welded by position,
/// see the module docs), but choose which of the split vertices at one position each simplified
/// triangle uses, and are measured per level ([`LodLevel::attribute_error`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LodSurface<'a> {
    /// Unit normals: a simplified triangle's corner takes the split vertex whose normal is closest to
    /// the triangle's own (flat shading stays flat).
    pub normals: Option<&'a [Vec3]>,
    /// Texture coordinates: split vertices with the same coordinates belong to one UV chart.
    pub uvs: Option<&'a [Vec2]>,
    /// Linear RGBA colours.
    pub colors: Option<&'a [Vec4]>,
    /// Parts that move independently (a rigid bake's piece of each vertex): vertices of different
    /// groups are never welded, and a clustered level never joins two groups in one triangle.
    pub groups: Option<&'a [u32]>,
}

/// How a [`LodLevel`] was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LodMethod {
    /// LOD 0: the input, unchanged.
    #[default]
    Source,
    /// meshoptimizer's edge collapses on the mesh welded by position (and, where they stall, its
    /// pruning of small disconnected parts).
    Collapse,
    /// meshoptimizer's vertex clustering ([`meshopt::simplify_sloppy`]), used because the edge
    /// collapses stalled at `collapsed_to` triangles, more than [`CLUSTER_FALLBACK_FACTOR`] times
    /// the level's target; triangles joining vertices that move apart (in a reference pose, or
    /// another [`LodSurface::groups`] part) are left out.
    Clustered {
        /// Triangles the edge collapses (and pruning) reached.
        collapsed_to: usize,
        /// Clustered triangles left out because they would join vertices that move apart.
        joining_dropped: usize,
    },
}

/// A level's surface attribute error, measured where it keeps a position of LOD 0: for every LOD 0
/// vertex whose position (welded class) the level still uses, the difference between its attributes
/// and the closest attributes among the split vertices the level uses at that position, the largest
/// over the mesh. `0` when every attribute seam at the kept positions stays split (a level only ever
/// uses LOD 0's vertices, so the error is bounded by the largest attribute difference between the
/// vertices split at one position); `None` when the mesh has no such attribute.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AttributeError {
    /// Largest normal angle, degrees.
    pub normal_deg: Option<f32>,
    /// Largest texture coordinate distance (UV units).
    pub uv: Option<f32>,
    /// Largest colour difference (largest channel difference, `0..=1`).
    pub color: Option<f32>,
}

impl std::fmt::Display for AttributeError {
    /// `normals 12.5 deg, uv 0.0000, colour 0.000` (attributes the mesh has), or `no attributes`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(n) = self.normal_deg {
            parts.push(format!("normals {n:.1} deg"));
        }
        if let Some(uv) = self.uv {
            parts.push(format!("uv {uv:.4}"));
        }
        if let Some(c) = self.color {
            parts.push(format!("colour {c:.3}"));
        }
        if parts.is_empty() { f.write_str("no attributes") } else { f.write_str(&parts.join(", ")) }
    }
}

/// Edge collapses that stop above this many times a level's triangle target have stalled: the level
/// falls back to vertex clustering ([`LodMethod::Clustered`]) when that does better. Only levels
/// after LOD 1 fall back (LOD 1 is seen close up).
pub const CLUSTER_FALLBACK_FACTOR: f64 = 1.5;

/// The most combinations of split vertices [`Unweld`] scores for one simplified triangle.
const MAX_WEDGE_COMBINATIONS: usize = 512;

/// Vertices welded by position: `class[v]` is the smallest vertex id with `v`'s rest position, its
/// position in every reference pose, its group and its texture coordinates (bit for bit, `-0.0` as
/// `0.0`). Normals and colours do not split a class (hard edges weld); texture coordinates do, so a
/// UV seam stays a seam the simplifier collapses along, never across (a triangle spanning two UV
/// islands would smear the texture).
fn weld_classes(
    positions: &[Vec3],
    poses: &[&[Vec3]],
    groups: Option<&[u32]>,
    uvs: Option<&[Vec2]>,
) -> Vec<u32> {
    let bits = |v: Vec3| (v + Vec3::ZERO).to_array().map(f32::to_bits);
    let mut first: std::collections::HashMap<Vec<u32>, u32> =
        std::collections::HashMap::with_capacity(positions.len());
    let mut key = Vec::with_capacity(4 + 3 * poses.len());
    (0..positions.len())
        .map(|v| {
            key.clear();
            key.extend(bits(positions[v]));
            for p in poses {
                key.extend(bits(p[v]));
            }
            key.extend(groups.and_then(|g| g.get(v)).copied());
            if let Some(uv) = uvs.and_then(|u| u.get(v)) {
                key.extend((*uv + Vec2::ZERO).to_array().map(f32::to_bits));
            }
            *first.entry(key.clone()).or_insert(v as u32)
        })
        .collect()
}

/// Finds the root of `v` in a union-find forest (path halving).
fn find(parent: &mut [u32], mut v: u32) -> u32 {
    while parent[v as usize] != v {
        let grand = parent[parent[v as usize] as usize];
        parent[v as usize] = grand;
        v = grand;
    }
    v
}

/// What maps a triangle list over welded classes back to the split vertices of LOD 0.
struct Unweld<'a> {
    positions: &'a [Vec3],
    surface: &'a LodSurface<'a>,
    class: Vec<u32>,
    /// CSR of the LOD 0 vertices of each class, ascending: `wedges[start[c]..start[c + 1]]`.
    start: Vec<u32>,
    wedges: Vec<u32>,
    /// Attribute-continuous region of each vertex: connected through LOD 0's triangles, or split at
    /// one position with the same texture coordinates.
    island: Vec<u32>,
    /// CSR as `wedges`: the islands of each class, sorted, without repeats.
    island_start: Vec<u32>,
    islands: Vec<u32>,
}

impl<'a> Unweld<'a> {
    fn new(positions: &'a [Vec3], lod0: &[u32], class: Vec<u32>, surface: &'a LodSurface<'a>) -> Self {
        let n = positions.len();
        let mut used = vec![false; n];
        for &i in lod0 {
            used[i as usize] = true;
        }
        let mut count = vec![0u32; n + 1];
        for v in (0..n).filter(|&v| used[v]) {
            count[class[v] as usize + 1] += 1;
        }
        for c in 0..n {
            count[c + 1] += count[c];
        }
        let start = count.clone();
        let mut fill = count;
        let mut wedges = vec![0u32; start[n] as usize];
        for v in (0..n).filter(|&v| used[v]) {
            let c = class[v] as usize;
            wedges[fill[c] as usize] = v as u32;
            fill[c] += 1;
        }
        let mut parent: Vec<u32> = (0..n as u32).collect();
        let union = |parent: &mut Vec<u32>, a: u32, b: u32| {
            let (ra, rb) = (find(parent, a), find(parent, b));
            if ra != rb {
                parent[ra.max(rb) as usize] = ra.min(rb);
            }
        };
        for t in lod0.chunks_exact(3) {
            union(&mut parent, t[0], t[1]);
            union(&mut parent, t[1], t[2]);
        }
        if let Some(uvs) = surface.uvs {
            for c in 0..n {
                let w = &wedges[start[c] as usize..start[c + 1] as usize];
                for (k, &a) in w.iter().enumerate() {
                    let uv = |v: u32| uvs[v as usize].to_array().map(f32::to_bits);
                    if let Some(&b) = w[..k].iter().find(|&&b| uv(b) == uv(a)) {
                        union(&mut parent, a, b);
                    }
                }
            }
        }
        let island: Vec<u32> = (0..n as u32).map(|v| find(&mut parent, v)).collect();
        let mut island_start = vec![0u32; n + 1];
        let mut islands = Vec::with_capacity(wedges.len());
        for c in 0..n {
            let from = islands.len();
            islands
                .extend(wedges[start[c] as usize..start[c + 1] as usize].iter().map(|&w| island[w as usize]));
            islands[from..].sort_unstable();
            let mut kept = from;
            for k in from..islands.len() {
                if k == from || islands[k] != islands[kept - 1] {
                    islands[kept] = islands[k];
                    kept += 1;
                }
            }
            islands.truncate(kept);
            island_start[c + 1] = islands.len() as u32;
        }
        Self { positions, surface, class, start, wedges, island, island_start, islands }
    }

    fn wedges_of(&self, class: u32) -> &[u32] {
        &self.wedges[self.start[class as usize] as usize..self.start[class as usize + 1] as usize]
    }

    fn has_island(&self, class: u32, island: u32) -> bool {
        let c = class as usize;
        self.islands[self.island_start[c] as usize..self.island_start[c + 1] as usize]
            .binary_search(&island)
            .is_ok()
    }

    /// `welded` (a triangle list over classes) over LOD 0's vertices: each triangle takes, of the
    /// vertices split at its corners' positions, the combination that scores best (the first on a
    /// tie, smallest ids first): per corner, the number of other corners sharing its island plus
    /// twice the cosine between its normal and the triangle's, less the perimeter of the triangle in
    /// texture space (a corner on the far side of a UV seam stretches it across the atlas). Corners
    /// with more than [`MAX_WEDGE_COMBINATIONS`] combinations are chosen one at a time, without the
    /// perimeter.
    fn unweld(&self, welded: &[u32]) -> Vec<u32> {
        let mut out = Vec::with_capacity(welded.len());
        for t in welded.chunks_exact(3) {
            let p = |k: usize| self.positions[t[k] as usize];
            let face = (p(1) - p(0)).cross(p(2) - p(0)).normalize_or_zero();
            let corner = |k: usize, w: u32| {
                let island = self.island[w as usize];
                let shared = (0..3).filter(|&j| j != k && self.has_island(t[j], island)).count() as f32;
                let dot = self.surface.normals.map_or(0.0, |n| n[w as usize].dot(face));
                shared + if dot.is_finite() { 2.0 * dot } else { 0.0 }
            };
            let w = [self.wedges_of(t[0]), self.wedges_of(t[1]), self.wedges_of(t[2])];
            if w.iter().map(|w| w.len()).product::<usize>() <= MAX_WEDGE_COMBINATIONS {
                let scores: [Vec<f32>; 3] =
                    std::array::from_fn(|k| w[k].iter().map(|&v| corner(k, v)).collect());
                let uv_length = |a: u32, b: u32| {
                    self.surface.uvs.map_or(0.0, |uv| uv[a as usize].distance(uv[b as usize]))
                };
                let mut best = (f32::NEG_INFINITY, [t[0], t[1], t[2]]);
                for (i0, &a) in w[0].iter().enumerate() {
                    for (i1, &b) in w[1].iter().enumerate() {
                        for (i2, &c) in w[2].iter().enumerate() {
                            let perimeter = uv_length(a, b) + uv_length(b, c) + uv_length(c, a);
                            let perimeter = if perimeter.is_finite() { perimeter } else { 0.0 };
                            let score = scores[0][i0] + scores[1][i1] + scores[2][i2] - perimeter;
                            if score > best.0 {
                                best = (score, [a, b, c]);
                            }
                        }
                    }
                }
                out.extend(best.1);
            } else {
                for k in 0..3 {
                    let mut best = (f32::NEG_INFINITY, t[k]);
                    for &v in w[k] {
                        let score = corner(k, v);
                        if score > best.0 {
                            best = (score, v);
                        }
                    }
                    out.push(best.1);
                }
            }
        }
        out
    }

    /// The [`AttributeError`] of `level` (a triangle list over LOD 0's vertices).
    fn attribute_error(&self, level: &[u32]) -> AttributeError {
        let n = self.positions.len();
        let mut used = vec![false; n];
        let mut class_used = vec![false; n];
        for &i in level {
            used[i as usize] = true;
            class_used[self.class[i as usize] as usize] = true;
        }
        let s = self.surface;
        let mut err = AttributeError {
            normal_deg: s.normals.map(|_| 0.0),
            uv: s.uvs.map(|_| 0.0),
            color: s.colors.map(|_| 0.0),
        };
        let worst = |slot: &mut Option<f32>, e: f32| {
            if let Some(x) = slot
                && e.is_finite()
            {
                *x = x.max(e);
            }
        };
        for c in (0..n as u32).filter(|&c| class_used[c as usize]) {
            let wedges = self.wedges_of(c);
            let kept: Vec<u32> = wedges.iter().copied().filter(|&w| used[w as usize]).collect();
            for &v in wedges.iter().filter(|&&v| !used[v as usize]) {
                let closest =
                    |d: &dyn Fn(u32) -> f32| kept.iter().map(|&w| d(w)).fold(f32::INFINITY, f32::min);
                if let Some(nrm) = s.normals {
                    let a = nrm[v as usize];
                    worst(&mut err.normal_deg, closest(&|w| a.angle_between(nrm[w as usize]).to_degrees()));
                }
                if let Some(uvs) = s.uvs {
                    worst(&mut err.uv, closest(&|w| uvs[v as usize].distance(uvs[w as usize])));
                }
                if let Some(col) = s.colors {
                    worst(
                        &mut err.color,
                        closest(&|w| (col[v as usize] - col[w as usize]).abs().max_element()),
                    );
                }
            }
        }
        err
    }
}

/// Builds the LOD chain of the triangle list `indices` over `positions` (rest pose, metres), with
/// `poses` the same vertices in up to [`MAX_REFERENCE_POSES`] animated reference poses (each
/// `positions.len()` long; may be empty) and `surface` their attributes. See the module docs for
/// the method.
///
/// LOD 0 is `indices` unchanged. Each later level targets `max(1, round(ratio * LOD0 triangles))`
/// triangles, simplifying the last kept level; meshoptimizer may stop a little above the target
/// where the topology requires it. A level that does not get below [`MAX_KEPT_FRACTION`] of the
/// last kept level's triangles is dropped ([`LodChain::dropped`]), so the chain may have fewer
/// levels than requested (one at least).
///
/// # Errors
/// [`BakeError::InvalidInput`] for an empty triangle list, a length not a multiple of 3, an index
/// `>= positions.len()`, a non-finite position, a pose or surface attribute of the wrong length;
/// [`BakeError::InvalidOption`] from [`LodOptions::ratios`].
pub fn build_lod_chain_surface(
    positions: &[Vec3],
    indices: &[u32],
    poses: &[&[Vec3]],
    surface: &LodSurface<'_>,
    options: &LodOptions,
) -> Result<LodChain> {
    let ratios = options.ratios()?;
    let bad = |problem: String| BakeError::InvalidInput { part: "LOD chain input".into(), problem };
    let n = positions.len();
    if indices.is_empty() || !indices.len().is_multiple_of(3) {
        return Err(bad(format!("{} indices; need whole triangles, at least one", indices.len())));
    }
    // meshoptimizer reads out of bounds on a bad index instead of reporting it: check first.
    if let Some(&i) = indices.iter().find(|&&i| i as usize >= n) {
        return Err(bad(format!("index {i} >= vertex count {n}")));
    }
    if positions.iter().any(|p| !p.is_finite()) {
        return Err(bad("a position is not finite".into()));
    }
    let poses = &poses[..poses.len().min(MAX_REFERENCE_POSES)];
    if let Some(p) = poses.iter().find(|p| p.len() != n || p.iter().any(|v| !v.is_finite())) {
        return Err(bad(format!("a reference pose has {} positions (need {n}, all finite)", p.len())));
    }
    let lengths = [
        ("normals", surface.normals.map(<[Vec3]>::len)),
        ("texture coordinates", surface.uvs.map(<[Vec2]>::len)),
        ("colours", surface.colors.map(<[Vec4]>::len)),
        ("groups", surface.groups.map(<[u32]>::len)),
    ];
    if let Some((what, Some(len))) = lengths.iter().find(|(_, len)| len.is_some_and(|l| l != n)) {
        return Err(bad(format!("{len} {what} for {n} vertices")));
    }

    let rest: Vec<[f32; 3]> = positions.iter().map(|p| p.to_array()).collect();
    let rest_bytes: &[u8] = bytemuck::cast_slice(&rest);
    let adapter = VertexDataAdapter::new(rest_bytes, 12, 0)
        .map_err(|e| bad(format!("vertex data rejected by meshopt: {e}")))?;
    // meshoptimizer normalises positions by this scale internally but not attributes, so the
    // attributes are divided by it: a pose coordinate then weighs exactly as a rest coordinate.
    let scale = meshopt::simplify_scale(&adapter);
    let inv_scale = if scale > 0.0 { 1.0 / scale } else { 1.0 };
    let stride = poses.len() * 3;
    let mut attributes = Vec::with_capacity(n * stride);
    for v in 0..n {
        for p in poses {
            attributes.extend_from_slice(&(p[v] * inv_scale).to_array());
        }
    }
    let weights = vec![1.0f32; stride];
    let locks = vec![false; n];

    let lod0_triangles = indices.len() / 3;
    let mut levels = vec![LodLevel {
        indices: indices.to_vec(),
        target_ratio: 1.0,
        error: 0.0,
        requested: 0,
        method: LodMethod::Source,
        attribute_error: AttributeError::default(),
    }];
    let mut dropped = Vec::new();
    // The simplifier's input: LOD 0 welded by position, without its zero-area triangles (two
    // corners at one position).
    let class = weld_classes(positions, poses, surface.groups, surface.uvs);
    let weld = |list: &[u32]| -> Vec<u32> {
        list.chunks_exact(3)
            .map(|t| [class[t[0] as usize], class[t[1] as usize], class[t[2] as usize]])
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
            .flatten()
            .collect()
    };
    let area = weld(indices);
    let work = AdjacencyWork::of(&area, n);
    if !work.within_budget() || area.is_empty() {
        let reason =
            if area.is_empty() { DropReason::NotSimplified } else { DropReason::OverWorkBudget(work) };
        dropped = (1..ratios.len())
            .map(|requested| DroppedLod {
                reason: reason.clone(),
                requested,
                reached: 0,
                previous: 0,
                previous_triangles: lod0_triangles,
            })
            .collect();
        return Ok(LodChain { levels, dropped });
    }
    let lod0_area: Vec<u32> = indices
        .chunks_exact(3)
        .filter(|t| {
            let c = [class[t[0] as usize], class[t[1] as usize], class[t[2] as usize]];
            c[0] != c[1] && c[1] != c[2] && c[0] != c[2]
        })
        .flatten()
        .copied()
        .collect();
    let unweld = Unweld::new(positions, &lod0_area, class.clone(), surface);
    levels[0].attribute_error = unweld.attribute_error(indices);
    // The welded input of the next level: LOD 0's triangles with area, then the last kept level.
    let mut previous_welded = area;
    for (requested, &ratio) in ratios.iter().enumerate().skip(1) {
        let previous = &levels[levels.len() - 1];
        let target_triangles = ((f64::from(ratio) * lod0_triangles as f64).round() as usize).max(1);
        let simplify = |options: SimplifyOptions, target_error: f32| {
            let mut error = 0.0f32;
            let out = meshopt::simplify_with_attributes_and_locks(
                &previous_welded,
                &adapter,
                &attributes,
                &weights,
                stride * 4,
                &locks,
                target_triangles * 3,
                target_error,
                // Sparse: only the welded classes' vertices are the mesh (their split twins, not
                // referenced, would otherwise count as attribute seams and lock them).
                options | SimplifyOptions::ErrorAbsolute | SimplifyOptions::Sparse,
                Some(&mut error),
            );
            (out, error)
        };
        let (mut out, mut error) = simplify(SimplifyOptions::None, f32::MAX);
        if out.len() / 3 > target_triangles {
            // Topology stopped the collapses early: also remove small disconnected components, those
            // smaller than the deviation the collapses already reached (with an unbounded error,
            // pruning would delete whole parts, however large, to meet the triangle count).
            let (pruned, pruned_error) = simplify(SimplifyOptions::Prune, error.max(0.0));
            if !pruned.is_empty() && pruned.len() < out.len() {
                (out, error) = (pruned, pruned_error);
            }
        }
        let mut method = LodMethod::Collapse;
        if levels.len() >= 2 && (out.len() / 3) as f64 > CLUSTER_FALLBACK_FACTOR * target_triangles as f64 {
            let (clustered, joining_dropped, cluster_error) = cluster(
                &previous_welded,
                &adapter,
                target_triangles,
                scale,
                positions,
                poses,
                surface.groups,
            );
            // Clustering that would mostly join parts moving apart (a rigid bake's pieces) loses
            // them instead: not kept.
            if !clustered.is_empty() && clustered.len() < out.len() && joining_dropped <= clustered.len() / 3
            {
                method = LodMethod::Clustered { collapsed_to: out.len() / 3, joining_dropped };
                (out, error) = (clustered, cluster_error);
            }
        }
        // Against the kept level's own count (LOD 0 with its zero-area triangles).
        let previous_triangles = previous.triangle_count();
        if !is_meaningful_reduction(out.len() / 3, previous_triangles) {
            dropped.push(DroppedLod {
                reason: DropReason::NotSimplified,
                requested,
                reached: out.len() / 3,
                previous: previous.requested,
                previous_triangles,
            });
            continue;
        }
        let out = optimize_vertex_cache_bounded(&unweld.unweld(&out), n);
        let error = if error.is_finite() { previous.error + error.max(0.0) } else { previous.error };
        previous_welded = weld(&out);
        let attribute_error = unweld.attribute_error(&out);
        levels.push(LodLevel {
            indices: out,
            target_ratio: ratio,
            error,
            requested,
            method,
            attribute_error,
        });
    }
    Ok(LodChain { levels, dropped })
}

/// meshoptimizer's vertex clustering of `welded` (a triangle list over welded classes) to about
/// `target` triangles, without the triangles that join vertices moving apart: of different
/// `groups`, or with an edge whose length in a reference pose differs from its rest length by more
/// than the clustering's own error. Returns the triangles, how many were left out and the error in
/// metres (the clustering's estimate, made absolute with `scale`).
fn cluster(
    welded: &[u32],
    adapter: &VertexDataAdapter<'_>,
    target: usize,
    scale: f32,
    positions: &[Vec3],
    poses: &[&[Vec3]],
    groups: Option<&[u32]>,
) -> (Vec<u32>, usize, f32) {
    let mut relative = 0.0f32;
    let out = meshopt::simplify_sloppy(welded, adapter, target * 3, f32::MAX, Some(&mut relative));
    let error = relative * scale;
    let tolerance = error.max(0.0);
    let joins = |a: u32, b: u32| {
        let (a, b) = (a as usize, b as usize);
        if groups.is_some_and(|g| g[a] != g[b]) {
            return true;
        }
        let rest = positions[a].distance(positions[b]);
        poses.iter().any(|p| (p[a].distance(p[b]) - rest).abs() > tolerance)
    };
    let mut kept = Vec::with_capacity(out.len());
    let mut joining = 0;
    for t in out.chunks_exact(3) {
        if joins(t[0], t[1]) || joins(t[1], t[2]) || joins(t[2], t[0]) {
            joining += 1;
        } else {
            kept.extend_from_slice(t);
        }
    }
    (kept, joining, error)
}

/// The vertex order that makes texture neighbours mesh neighbours: `order[new] = old`.
///
/// The triangles of `indices` are first ordered for the post-transform cache
/// ([`optimize_vertex_cache_bounded`]), then vertices are numbered in the order those triangles
/// first reference them (what `meshopt_optimizeVertexFetchRemap` computes; done here because the
/// Rust wrapper truncates its remap table when some vertex is unreferenced); unreferenced vertices
/// follow, in their original order. Deterministic: the same input always gives the same order.
/// Indices `>= vertex_count` are ignored (callers validate them).
pub fn locality_order(indices: &[u32], vertex_count: usize) -> Vec<u32> {
    let valid: Vec<u32>;
    let indices = if indices.iter().all(|&i| (i as usize) < vertex_count) && indices.len().is_multiple_of(3) {
        indices
    } else {
        valid = indices
            .chunks_exact(3)
            .filter(|t| t.iter().all(|&i| (i as usize) < vertex_count))
            .flatten()
            .copied()
            .collect();
        &valid
    };
    first_touch_order(&optimize_vertex_cache_bounded(indices, vertex_count), vertex_count)
}

/// Vertices in the order the (cache-optimised, valid) triangle list `cached` first references
/// them, then the unreferenced ones in their order: [`locality_order`] after its vertex cache
/// optimisation.
fn first_touch_order(cached: &[u32], vertex_count: usize) -> Vec<u32> {
    let mut seen = vec![false; vertex_count];
    let mut order = Vec::with_capacity(vertex_count);
    for &i in cached {
        if let Some(s) = seen.get_mut(i as usize)
            && !*s
        {
            *s = true;
            order.push(i);
        }
    }
    order.extend((0..vertex_count as u32).filter(|&v| !seen[v as usize]));
    order
}

/// `inverse[old] = new` of an order `order[new] = old` (a permutation).
pub(crate) fn inverse_order(order: &[u32]) -> Vec<u32> {
    let mut inverse = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        if let Some(slot) = inverse.get_mut(old as usize) {
            *slot = new as u32;
        }
    }
    inverse
}

/// Reorders `set`'s vertices for texture locality ([`locality_order`] of `lods[0]`, which must be a
/// triangle list over `set`, normally `set.indices`) and rewrites every LOD's indices to the new
/// ids; LOD 0 becomes its cache-optimised triangle order. Returns the order (`order[new] = old`).
///
/// # Errors
/// [`BakeError::InvalidInput`] if `lods` is empty or an index is out of range.
pub fn reorder_for_locality(set: &mut VertexSet, lods: &mut [Vec<u32>]) -> Result<Vec<u32>> {
    let n = set.vertex_count();
    let Some(lod0) = lods.first() else {
        return Err(BakeError::InvalidInput { part: "LOD chain".into(), problem: "has no levels".into() });
    };
    if lods.iter().flatten().any(|&i| i as usize >= n) {
        return Err(BakeError::InvalidInput {
            part: "LOD chain".into(),
            problem: format!("an index is >= the vertex count {n}"),
        });
    }
    let cached0 = optimize_vertex_cache_bounded(lod0, n);
    // Every index is in range (checked above): for whole triangles, `locality_order` would
    // optimise the same list again.
    let order =
        if lod0.len().is_multiple_of(3) { first_touch_order(&cached0, n) } else { locality_order(lod0, n) };
    set.remap(&order)?;
    let inverse = inverse_order(&order);
    lods[0] = cached0;
    for lod in lods.iter_mut() {
        for i in lod.iter_mut() {
            *i = inverse[*i as usize];
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A closed UV sphere of `rings x segments` quads (poles as triangle fans): a connected surface
    /// that simplifies all the way down.
    fn sphere(rings: u32, segments: u32) -> (Vec<Vec3>, Vec<u32>) {
        let mut p = vec![Vec3::Y];
        for r in 1..rings {
            let theta = std::f32::consts::PI * r as f32 / rings as f32;
            for s in 0..segments {
                let phi = std::f32::consts::TAU * s as f32 / segments as f32;
                p.push(Vec3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()));
            }
        }
        p.push(-Vec3::Y);
        let ring = |r: u32, s: u32| 1 + (r - 1) * segments + s % segments;
        let mut idx = Vec::new();
        for s in 0..segments {
            idx.extend([0, ring(1, s + 1), ring(1, s)]);
        }
        for r in 1..rings - 1 {
            for s in 0..segments {
                let (a, b, c, d) = (ring(r, s), ring(r, s + 1), ring(r + 1, s), ring(r + 1, s + 1));
                idx.extend([a, b, c, b, d, c]);
            }
        }
        let south = p.len() as u32 - 1;
        for s in 0..segments {
            idx.extend([south, ring(rings - 1, s), ring(rings - 1, s + 1)]);
        }
        (p, idx)
    }

    fn triangles(idx: &[u32]) -> BTreeSet<[u32; 3]> {
        // A triangle as a set member: rotate so the smallest id comes first (keeps the winding).
        idx.chunks_exact(3)
            .map(|t| {
                let k = (0..3).min_by_key(|&k| t[k]).unwrap_or(0);
                [t[k], t[(k + 1) % 3], t[(k + 2) % 3]]
            })
            .collect()
    }

    #[test]
    fn default_ratios_are_geometric_to_one_percent() {
        let r = LodOptions::default().ratios().unwrap();
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], 1.0);
        assert!((r[2] - 0.1).abs() < 1e-6 && (r[4] - 0.01).abs() < 1e-7, "{r:?}");
        assert_eq!(LodOptions::Count(1).ratios().unwrap(), vec![1.0]);
        assert!(LodOptions::Count(0).ratios().is_err());
        assert!(LodOptions::Count(9).ratios().is_err());
        assert!(LodOptions::Ratios(vec![]).ratios().is_err());
        assert!(LodOptions::Ratios(vec![0.5]).ratios().is_err());
        assert!(LodOptions::Ratios(vec![1.0, 0.5, 0.5]).ratios().is_err());
        assert!(LodOptions::Ratios(vec![1.0, f32::NAN]).ratios().is_err());
        assert!(LodOptions::Ratios(vec![1.0, 0.0]).ratios().is_err());
    }

    #[test]
    fn lod_triangle_counts_strictly_decrease_and_keep_vertex_ids() {
        let (p, idx) = sphere(24, 48);
        let chain = build_lod_chain_posed(&p, &idx, &[], &LodOptions::default()).unwrap();
        let counts = chain.triangle_counts();
        assert_eq!(counts.len(), 5, "a sphere simplifies all the way: nothing dropped");
        assert!(chain.dropped.is_empty(), "{:?}", chain.dropped);
        assert_eq!(counts[0], idx.len() / 3);
        assert_eq!(chain.levels[0].indices, idx, "LOD 0 is the input");
        for w in counts.windows(2) {
            assert!(w[1] < w[0], "not strictly decreasing: {counts:?}");
        }
        for level in &chain.levels {
            assert!(level.triangle_count() >= 1);
            assert!(level.indices.iter().all(|&i| (i as usize) < p.len()), "vertex id out of range");
            assert!(level.error.is_finite() && level.error >= 0.0);
        }
        for w in chain.levels.windows(2) {
            assert!(w[1].error >= w[0].error, "accumulated error must not shrink");
        }
    }

    #[test]
    fn ratios_are_met_within_meshopt_tolerance() {
        // A closed sphere has no topological obstacle: meshoptimizer stops at or just below the
        // target (it removes whole edge collapses, 2 triangles each, and may overshoot by the last
        // batch), so each level lands within 10 % of its target.
        let (p, idx) = sphere(32, 64);
        let ratios = vec![1.0, 0.38, 0.1, 0.03];
        let chain = build_lod_chain_posed(&p, &idx, &[], &LodOptions::Ratios(ratios.clone())).unwrap();
        let tri0 = (idx.len() / 3) as f64;
        for (level, r) in chain.levels.iter().zip(&ratios) {
            let target = f64::from(*r) * tri0;
            let got = level.triangle_count() as f64;
            assert!(
                (got - target).abs() <= 0.1 * target + 2.0,
                "ratio {r}: {got} triangles for target {target}"
            );
        }
    }

    /// A closed box of 12 triangles over its 8 corners (welded), `size` wide.
    fn welded_box(size: f32) -> (Vec<Vec3>, Vec<u32>) {
        let p = (0..8u32)
            .map(|i| Vec3::new((i & 1) as f32, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32) * size)
            .collect();
        #[rustfmt::skip]
        let idx = vec![
            0, 2, 1, 1, 2, 3, // -z
            4, 5, 6, 5, 7, 6, // +z
            0, 1, 4, 1, 5, 4, // -y
            2, 6, 3, 3, 6, 7, // +y
            0, 4, 2, 2, 4, 6, // -x
            1, 3, 5, 3, 7, 5, // +x
        ];
        (p, idx)
    }

    /// `positions`/`indices` with every triangle given its own three vertices (nothing shared).
    fn unweld(positions: &[Vec3], indices: &[u32]) -> (Vec<Vec3>, Vec<u32>) {
        let p: Vec<Vec3> = indices.iter().map(|&i| positions[i as usize]).collect();
        let idx = (0..p.len() as u32).collect();
        (p, idx)
    }

    /// The rules every chain keeps: LOD 0 is the input, each later level below 90 % of the previous,
    /// one dropped entry per missing requested level, requested indices increasing.
    fn assert_chain_rules(chain: &LodChain, indices: &[u32], requested: usize) {
        assert_eq!(chain.levels[0].indices, indices);
        assert_eq!(chain.levels.len() + chain.dropped.len(), requested, "{:?}", chain.dropped);
        for w in chain.levels.windows(2) {
            let (a, b) = (w[0].triangle_count(), w[1].triangle_count());
            assert!((b as f64) < 0.9 * a as f64 && b >= 1, "level of {b} triangles after {a}");
            assert!(w[1].requested > w[0].requested);
        }
        let mut all: Vec<usize> = chain.levels.iter().map(|l| l.requested).collect();
        all.extend(chain.dropped.iter().map(|d| d.requested));
        all.sort_unstable();
        assert_eq!(all, (0..requested).collect::<Vec<_>>(), "every requested level kept or dropped once");
        for d in &chain.dropped {
            assert!(!is_meaningful_reduction(d.reached, d.previous_triangles), "{d:?}");
            assert!(
                chain
                    .levels
                    .iter()
                    .any(|l| l.requested == d.previous && l.triangle_count() == d.previous_triangles)
            );
        }
    }

    #[test]
    fn a_twelve_triangle_box_never_repeats_a_level() {
        let (p, idx) = welded_box(1.0);
        for n in [2, 5, 8] {
            let chain = build_lod_chain_posed(&p, &idx, &[], &LodOptions::Count(n)).unwrap();
            assert_chain_rules(&chain, &idx, n as usize);
            assert!(
                !chain.dropped.is_empty(),
                "a box cannot lose triangles {n} times: {:?}",
                chain.triangle_counts()
            );
            let last = chain.levels.last().unwrap().triangle_count();
            let d = chain.dropped.last().unwrap();
            assert_eq!(d.previous_triangles, last, "drops refer to the last kept level");
            let line = d.to_string();
            assert!(line.starts_with(&format!("LOD {} dropped: simplification", d.requested)), "{line}");
            assert!(
                line.contains(&format!("(LOD {} has {last})", d.previous)) || line.contains("not under 90 %"),
                "{line}"
            );
        }
    }

    #[test]
    fn an_unwelded_mesh_simplifies_like_its_welded_twin() {
        // A sphere whose triangles share no vertex (flat shading): welded by position, the chain
        // simplifies it as far as the shared sphere, and every level uses the unwelded vertices.
        let (p, idx) = sphere(8, 16);
        let welded = build_lod_chain_posed(&p, &idx, &[], &LodOptions::default()).unwrap();
        let (up, uidx) = unweld(&p, &idx);
        let chain = build_lod_chain_posed(&up, &uidx, &[], &LodOptions::default()).unwrap();
        assert_chain_rules(&chain, &uidx, 5);
        assert_eq!(chain.triangle_counts(), welded.triangle_counts(), "{:?}", chain.dropped);
        for level in &chain.levels[1..] {
            assert!(level.indices.iter().all(|&i| (i as usize) < up.len()));
            assert_eq!(level.method, LodMethod::Collapse);
        }
        // An unwelded tetrahedron (12 vertices): welded, nothing can collapse; LOD 0 only.
        let tp = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z];
        let (tp, tidx) = unweld(&tp, &[0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3]);
        let chain = build_lod_chain_posed(&tp, &tidx, &[], &LodOptions::default()).unwrap();
        assert_chain_rules(&chain, &tidx, 5);
        assert_eq!(chain.triangle_counts(), vec![4], "{:?}", chain.dropped);
        assert!(chain.dropped[0].to_string().starts_with("LOD 1 dropped: simplification"));
        assert!(chain.dropped.iter().all(|d| d.previous == 0));
    }

    /// The body of a fixture rig: positions, normals, texture coordinates, indices.
    fn body(rig: &crate::rig::Rig) -> (Vec<Vec3>, Vec<Vec3>, Vec<Vec2>, Vec<u32>) {
        let m = &rig.meshes[0];
        (m.positions.clone(), m.normals.clone(), m.uvs.clone().unwrap(), m.indices.clone())
    }

    #[test]
    fn game_characters_get_four_halving_levels_with_errors_and_switch_distances() {
        use crate::prepare::{BakeOptions, prepare};
        // A flat-shaded low-poly robot (every vertex split) kept LOD 0 only before welding by
        // position; a smooth 16,680-vertex character with UV seams simplifies too.
        for rig in [crate::testdata::lowpoly_robot(), crate::testdata::seamed_character()] {
            let options = BakeOptions { clips: Some(vec!["walk".into()]), ..BakeOptions::default() };
            let bake = prepare(&rig, &options).unwrap();
            let (tris, errors) = (&bake.stats.triangle_counts, &bake.stats.lod_errors_m);
            println!(
                "{}: {} vertices, triangles {tris:?}, errors {errors:?} m",
                rig.name, bake.stats.vertex_count
            );
            assert!(tris.len() >= 4, "{}: {tris:?} {:?}", rig.name, bake.stats.warnings);
            // At least four levels each at most half the previous; a fifth (the chain's targets are
            // fractions of LOD 0, so a level that overshoots its target leaves the next less to
            // take) need only be smaller.
            for w in tris.windows(2).skip(3) {
                assert!(w[1] < w[0], "{}: {tris:?}", rig.name);
            }
            for (i, w) in tris.windows(2).take(3).enumerate() {
                assert!(
                    2 * w[1] <= w[0],
                    "{}: LOD {} has {} triangles after {}",
                    rig.name,
                    i + 1,
                    w[1],
                    w[0]
                );
            }
            assert_eq!(errors[0], 0.0);
            for w in errors.windows(2) {
                assert!(w[1].is_finite() && w[1] > 0.0 && w[1] >= w[0], "{}: errors {errors:?}", rig.name);
            }
            // Switch distances from the errors (the runtime's screen error -> distance).
            let lods = &bake.manifest().lods;
            let size = bake
                .manifest()
                .vertex_animation
                .as_ref()
                .unwrap()
                .bounds
                .extent
                .iter()
                .fold(0.0f32, |a, &b| a.max(b));
            let distances = vat_core::lod::lod_switch_distances(errors, size);
            for (i, lod) in lods.iter().enumerate() {
                assert_eq!(lod.screen_error, errors[i]);
                assert_eq!(lod.triangle_count, tris[i]);
                assert_eq!(lod.max_distance, distances[i]);
                if let Some(next) = errors.get(i + 1) {
                    let by_error = (f64::from(*next) / vat_core::lod::LOD_PIXEL_ANGLE) as f32;
                    assert!(
                        lod.max_distance >= by_error * 0.999,
                        "LOD {i} switches before its error is a pixel"
                    );
                }
            }
        }
    }

    #[test]
    fn uv_seams_stay_split_and_flat_shading_stays_flat() {
        // The seamed character: the split UV seam vertices stay split in the simplified levels (both
        // sides of a seam used at one position), so the UV and normal error at kept positions is 0.
        let rig = crate::testdata::seamed_character();
        let (p, n, uv, idx) = body(&rig);
        let surface = LodSurface { normals: Some(&n), uvs: Some(&uv), ..LodSurface::default() };
        let chain = build_lod_chain_surface(&p, &idx, &[], &surface, &LodOptions::Count(4)).unwrap();
        let level = &chain.levels[1];
        assert_eq!(level.attribute_error.uv, Some(0.0), "{:?}", level.attribute_error);
        assert_eq!(level.attribute_error.normal_deg, Some(0.0));
        assert_eq!(level.attribute_error.color, None);
        // Both sides of the seam stay in use where a level keeps seam positions.
        let mut at: std::collections::BTreeMap<[u32; 3], BTreeSet<u32>> = Default::default();
        for &i in &level.indices {
            at.entry(p[i as usize].to_array().map(f32::to_bits)).or_default().insert(i);
        }
        let split = at.values().filter(|s| s.len() > 1).count();
        assert!(split > 0, "no seam position still split at LOD 1");
        // The robot: every simplified triangle's corners take the normal of a face that lies in the
        // triangle's plane (flat shading stays flat) wherever such a face exists at the corner.
        let rig = crate::testdata::lowpoly_robot();
        let (p, n, uv, idx) = body(&rig);
        let surface = LodSurface { normals: Some(&n), uvs: Some(&uv), ..LodSurface::default() };
        let chain = build_lod_chain_surface(&p, &idx, &[], &surface, &LodOptions::Count(4)).unwrap();
        let (mut flat, mut total) = (0, 0);
        for t in chain.levels[1].indices.chunks_exact(3) {
            let face =
                (p[t[1] as usize] - p[t[0] as usize]).cross(p[t[2] as usize] - p[t[0] as usize]).normalize();
            total += 3;
            flat += t.iter().filter(|&&i| n[i as usize].dot(face) > 0.999).count();
        }
        assert!(flat * 10 >= total * 9, "{flat} of {total} corners keep their face's normal");
        for l in &chain.levels[1..] {
            let e = l.attribute_error;
            assert!(
                e.normal_deg.is_some_and(|d| (0.0..=180.0).contains(&d)) && e.uv.is_some_and(f32::is_finite)
            );
        }
    }

    #[test]
    fn clustering_reaches_its_target_never_joins_groups_and_is_noted() {
        // The fallback itself: clustering a sphere to 40 triangles gets near the target; with the
        // sphere's halves as groups (parts that move apart) no kept triangle joins them, and the
        // triangles that would are counted.
        let (p, idx) = sphere(16, 32);
        let rest: Vec<[f32; 3]> = p.iter().map(|v| v.to_array()).collect();
        let adapter = VertexDataAdapter::new(bytemuck::cast_slice(&rest), 12, 0).unwrap();
        let scale = meshopt::simplify_scale(&adapter);
        let (all, joining, error) = cluster(&idx, &adapter, 40, scale, &p, &[], None);
        assert_eq!(joining, 0);
        assert!((1..=60).contains(&(all.len() / 3)), "{} triangles", all.len() / 3);
        assert!(error.is_finite() && error > 0.0);
        let groups: Vec<u32> = p.iter().map(|v| u32::from(v.x > 0.0)).collect();
        let (kept, joining, _) = cluster(&idx, &adapter, 40, scale, &p, &[], Some(&groups));
        assert!(joining > 0 && kept.len() + 3 * joining == all.len());
        assert!(kept.chunks_exact(3).all(|t| t.iter().all(|&i| groups[i as usize] == groups[t[0] as usize])));
        // A chain with a clustered level says so, naming the level.
        let mut chain = build_lod_chain_posed(&p, &idx, &[], &LodOptions::Count(3)).unwrap();
        chain.levels[2].method = LodMethod::Clustered { collapsed_to: 300, joining_dropped: 2 };
        let notes = chain.notes();
        let line = format!(
            "LOD 2: edge collapses stalled at 300 triangles, so it was made by vertex clustering: {} triangles, \
             error {:.4} m, 2 clustered triangles joining parts that move apart left out",
            chain.levels[2].triangle_count(),
            chain.levels[2].error
        );
        assert_eq!(notes, vec![line]);
    }

    #[test]
    fn dropped_lines_name_the_reason() {
        let d = |reached| DroppedLod {
            reason: DropReason::NotSimplified,
            requested: 2,
            reached,
            previous: 1,
            previous_triangles: 12,
        };
        assert_eq!(d(12).to_string(), "LOD 2 dropped: simplification stalled at 12 triangles (LOD 1 has 12)");
        assert_eq!(
            d(11).to_string(),
            "LOD 2 dropped: simplification reached only 11 triangles, not under 90 % of LOD 1's 12"
        );
        assert_eq!(d(0).to_string(), "LOD 2 dropped: simplification left no triangles (LOD 1 has 12)");
        assert!(is_meaningful_reduction(10, 12) && !is_meaningful_reduction(11, 12));
        assert!(!is_meaningful_reduction(90, 100) && is_meaningful_reduction(89, 100));
        assert!(!is_meaningful_reduction(0, 12) && !is_meaningful_reduction(1, 1));
    }

    #[test]
    fn pruning_never_deletes_a_large_part() {
        // The built-in cloth's banner with its back sheet on its front one (coincident vertices, which
        // meshoptimizer takes for one vertex's seams, so the collapses stall) beside its pole, with
        // animated reference poses: every level asks for pruning, and neither the banner (690
        // triangles a sheet) nor the pole is small. Each kept level must keep both.
        let seq = crate::procgen::cloth_sequence();
        let sheet = crate::procgen::CLOTH_COLUMNS * crate::procgen::CLOTH_ROWS;
        let coincident = |frame: &[Vec3]| -> Vec<Vec3> {
            let mut p = frame.to_vec();
            let (front, back) = p[24..].split_at_mut(sheet);
            back.copy_from_slice(front);
            p
        };
        let rest = coincident(&seq.positions[0]);
        let poses: Vec<Vec<Vec3>> = [15, 30, 45].iter().map(|&k| coincident(&seq.positions[k])).collect();
        let pose_refs: Vec<&[Vec3]> = poses.iter().map(Vec::as_slice).collect();
        let chain = build_lod_chain_posed(&rest, &seq.indices, &pose_refs, &LodOptions::default()).unwrap();
        for level in &chain.levels {
            let pole = level.indices.iter().any(|&i| i < 24);
            let banner = level.indices.iter().any(|&i| i >= 24);
            assert!(pole && banner, "a level of {} triangles lost a part", level.triangle_count());
        }
    }

    #[test]
    fn disconnected_parts_never_share_a_triangle() {
        // Two spheres 1 cm apart: an edge-collapse chain may shrink each but never joins them.
        let (p, idx) = sphere(12, 24);
        let n = p.len() as u32;
        let mut positions = p.clone();
        positions.extend(p.iter().map(|v| *v + Vec3::new(2.01, 0.0, 0.0)));
        let mut indices = idx.clone();
        indices.extend(idx.iter().map(|i| i + n));
        let chain = build_lod_chain_posed(&positions, &indices, &[], &LodOptions::Count(4)).unwrap();
        for level in &chain.levels {
            for t in level.indices.chunks_exact(3) {
                let sides: BTreeSet<bool> = t.iter().map(|&i| i < n).collect();
                assert_eq!(sides.len(), 1, "triangle {t:?} joins the two parts");
            }
        }
    }

    #[test]
    fn reference_poses_keep_apart_what_moves_apart() {
        // A strip of quads bent at its middle row in the reference pose: with the pose, the chain
        // keeps the fold's vertices longer, so its error (measured in the pose) is larger than the
        // rest-only chain's estimate for the same budget. Without the pose the strip is flat and
        // collapses at almost no cost.
        let (w, h) = (20u32, 20u32);
        let mut rest = Vec::new();
        let mut posed = Vec::new();
        for y in 0..=h {
            for x in 0..=w {
                let v = Vec3::new(x as f32 * 0.05, y as f32 * 0.05, 0.0);
                rest.push(v);
                let fold =
                    if y > h / 2 { Vec3::new(0.0, 0.0, (y - h / 2) as f32 * 0.05) } else { Vec3::ZERO };
                posed.push(v + fold);
            }
        }
        let id = |x: u32, y: u32| y * (w + 1) + x;
        let mut idx = Vec::new();
        for y in 0..h {
            for x in 0..w {
                idx.extend([
                    id(x, y),
                    id(x + 1, y),
                    id(x, y + 1),
                    id(x + 1, y),
                    id(x + 1, y + 1),
                    id(x, y + 1),
                ]);
            }
        }
        let options = LodOptions::Ratios(vec![1.0, 0.05]);
        let flat = build_lod_chain_posed(&rest, &idx, &[], &options).unwrap();
        let bent = build_lod_chain_posed(&rest, &idx, &[&posed], &options).unwrap();
        assert!(flat.levels[1].error < 1e-4, "a flat strip simplifies for free: {}", flat.levels[1].error);
        assert!(bent.levels[1].error > flat.levels[1].error, "the pose must count: {}", bent.levels[1].error);
        assert!(build_lod_chain_posed(&rest, &idx, &[&posed[1..]], &options).is_err());
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let (p, _) = sphere(4, 8);
        for idx in [vec![], vec![0, 1], vec![0, 1, p.len() as u32]] {
            assert!(matches!(
                build_lod_chain_posed(&p, &idx, &[], &LodOptions::default()),
                Err(BakeError::InvalidInput { .. })
            ));
        }
        let mut nan = p.clone();
        nan[0].x = f32::NAN;
        assert!(build_lod_chain_posed(&nan, &[0, 1, 2], &[], &LodOptions::default()).is_err());
    }

    fn vertex_set(positions: Vec<Vec3>, indices: Vec<u32>) -> VertexSet {
        let n = positions.len();
        VertexSet {
            normals: positions.iter().map(|p| p.normalize_or(Vec3::Y)).collect(),
            positions,
            tangents: None,
            uvs: None,
            colors: None,
            material_ids: (0..n).map(|v| (v % 3) as u8).collect(),
            indices,
            influence_count: 4,
            joints: vec![[0; crate::rig::MAX_INFLUENCES]; n],
            weights: vec![[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]; n],
            full_influences: Vec::new(),
            bones: vec![crate::skin::Bone { node: 0, inverse_bind: glam::Mat4::IDENTITY }],
            sources: (0..n as u32).map(|v| crate::skin::VertexSource { mesh: 0, vertex: v }).collect(),
            morph_targets: Vec::new(),
        }
    }

    #[test]
    fn reorder_preserves_every_lods_triangles() {
        let (p, idx) = sphere(16, 32);
        let mut set = vertex_set(p.clone(), idx.clone());
        let mut lods = build_lod_chain(&set, &LodOptions::default()).unwrap();
        let before: Vec<BTreeSet<[u32; 3]>> = lods.iter().map(|l| triangles(l)).collect();
        let order = reorder_for_locality(&mut set, &mut lods).unwrap();
        assert_ne!(order, (0..p.len() as u32).collect::<Vec<_>>(), "the test must actually reorder");
        for (v, &old) in order.iter().enumerate() {
            assert_eq!(set.positions[v], p[old as usize], "vertex data follows the order");
            assert_eq!(set.sources[v].vertex, old);
        }
        for (lod, want) in lods.iter().zip(&before) {
            // Back to original ids, the triangles (with their winding) are the same set.
            let original: Vec<u32> = lod.iter().map(|&i| order[i as usize]).collect();
            assert_eq!(&triangles(&original), want);
        }
        assert_eq!(triangles(&set.indices), triangles(&lods[0]), "the set's own list matches LOD 0");
        // Texture locality: LOD 0 walks the vertices almost in order (first touch).
        let mut next = 0u32;
        for &i in &lods[0] {
            assert!(i <= next, "vertex {i} used before {next}");
            next = next.max(i + 1);
        }
    }

    #[test]
    fn locality_order_is_a_permutation_in_first_touch_order() {
        let (p, idx) = sphere(10, 20);
        // Add an unreferenced vertex in the middle of the numbering.
        let n = p.len() + 1;
        let idx: Vec<u32> = idx.iter().map(|&i| if i >= 5 { i + 1 } else { i }).collect();
        let order = locality_order(&idx, n);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        assert_eq!(*order.last().unwrap(), 5, "the unreferenced vertex comes last");
        assert_eq!(order, locality_order(&idx, n), "deterministic");
        // First-touch: walking the cache-optimised triangles, new ids appear in increasing order.
        let inverse = inverse_order(&order);
        let mut next = 0;
        for &i in &meshopt::optimize_vertex_cache(&idx, n) {
            let new = inverse[i as usize];
            assert!(new <= next, "vertex {i} numbered {new} before {next}");
            if new == next {
                next += 1;
            }
        }
    }
}
