//! Vertex orders for cache locality, and reordering a set and its LODs.

use super::*;

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
pub(super) fn first_touch_order(cached: &[u32], vertex_count: usize) -> Vec<u32> {
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
