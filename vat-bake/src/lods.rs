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

/// The most LODs a chain may have (vat-core's [`vat_core::format::lod::MAX_LODS`]).
pub const MAX_LODS: usize = vat_core::format::lod::MAX_LODS;

/// The last ratio of a chain built from [`LodOptions::Count`]: about 1 % of LOD 0's triangles.
pub const DEFAULT_LAST_RATIO: f64 = 0.01;

/// A simplified level is kept only if its triangle count is below this fraction of the level it was
/// simplified from (`triangles < 0.9 * previous`); otherwise it is dropped as "not simplified"
/// (see the module docs).
pub const MAX_KEPT_FRACTION: f64 = 0.9;

/// Most reference poses used as simplification attributes (3 coordinates each; meshoptimizer takes
/// at most 32 attributes).
pub const MAX_REFERENCE_POSES: usize = 8;

mod levels;
mod locality;
mod surface;
#[cfg(test)]
mod tests;

pub use levels::*;
pub use locality::*;
pub use surface::*;
