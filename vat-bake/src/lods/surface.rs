//! Building a LOD chain over a surface: welding, simplification and clustering.

use super::*;

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
pub(super) const MAX_WEDGE_COMBINATIONS: usize = 512;

/// Vertices welded by position: `class[v]` is the smallest vertex id with `v`'s rest position, its
/// position in every reference pose, its group and its texture coordinates (bit for bit, `-0.0` as
/// `0.0`). Normals and colours do not split a class (hard edges weld); texture coordinates do, so a
/// UV seam stays a seam the simplifier collapses along, never across (a triangle spanning two UV
/// islands would smear the texture).
pub(super) fn weld_classes(
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
pub(super) fn find(parent: &mut [u32], mut v: u32) -> u32 {
    while parent[v as usize] != v {
        let grand = parent[parent[v as usize] as usize];
        parent[v as usize] = grand;
        v = grand;
    }
    v
}

/// What maps a triangle list over welded classes back to the split vertices of LOD 0.
pub(super) struct Unweld<'a> {
    pub(super) positions: &'a [Vec3],
    pub(super) surface: &'a LodSurface<'a>,
    pub(super) class: Vec<u32>,
    /// CSR of the LOD 0 vertices of each class, ascending: `wedges[start[c]..start[c + 1]]`.
    pub(super) start: Vec<u32>,
    pub(super) wedges: Vec<u32>,
    /// Attribute-continuous region of each vertex: connected through LOD 0's triangles, or split at
    /// one position with the same texture coordinates.
    pub(super) island: Vec<u32>,
    /// CSR as `wedges`: the islands of each class, sorted, without repeats.
    pub(super) island_start: Vec<u32>,
    pub(super) islands: Vec<u32>,
}

impl<'a> Unweld<'a> {
    pub(super) fn new(
        positions: &'a [Vec3],
        lod0: &[u32],
        class: Vec<u32>,
        surface: &'a LodSurface<'a>,
    ) -> Self {
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

    pub(super) fn wedges_of(&self, class: u32) -> &[u32] {
        &self.wedges[self.start[class as usize] as usize..self.start[class as usize + 1] as usize]
    }

    pub(super) fn has_island(&self, class: u32, island: u32) -> bool {
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
    pub(super) fn unweld(&self, welded: &[u32]) -> Vec<u32> {
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
    pub(super) fn attribute_error(&self, level: &[u32]) -> AttributeError {
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
    let poses = &poses[..poses.len().min(MAX_REFERENCE_POSES)];
    let n = positions.len();
    check_chain_input(positions, indices, poses, surface)?;

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
        dropped = dropped_all(ratios.len(), reason, lod0_triangles);
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

/// Refuses what the simplifier cannot take: no whole triangles, an index past the vertices, a
/// position or a reference pose position that is not finite, a pose or surface attribute that does
/// not have one value per vertex.
fn check_chain_input(
    positions: &[Vec3],
    indices: &[u32],
    poses: &[&[Vec3]],
    surface: &LodSurface<'_>,
) -> Result<()> {
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
    Ok(())
}

/// Every level past LOD 0 dropped for `reason`.
fn dropped_all(levels: usize, reason: DropReason, lod0_triangles: usize) -> Vec<DroppedLod> {
    (1..levels)
        .map(|requested| DroppedLod {
            reason: reason.clone(),
            requested,
            reached: 0,
            previous: 0,
            previous_triangles: lod0_triangles,
        })
        .collect()
}

/// meshoptimizer's vertex clustering of `welded` (a triangle list over welded classes) to about
/// `target` triangles, without the triangles that join vertices moving apart: of different
/// `groups`, or with an edge whose length in a reference pose differs from its rest length by more
/// than the clustering's own error. Returns the triangles, how many were left out and the error in
/// metres (the clustering's estimate, made absolute with `scale`).
pub(super) fn cluster(
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
