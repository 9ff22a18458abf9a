//! Where skinned vertices go: arrays, bounds, packed 64-bit texels.

use super::*;

/// A value type the kernel writes per vertex (glam vectors or plain arrays).
pub(super) trait Slot<V> {
    fn set(&mut self, v: V);
}

impl Slot<Vec3> for Vec3 {
    #[inline]
    fn set(&mut self, v: Vec3) {
        *self = v;
    }
}

impl Slot<Vec3> for [f32; 3] {
    #[inline]
    fn set(&mut self, v: Vec3) {
        *self = v.to_array();
    }
}

impl Slot<Vec4> for Vec4 {
    #[inline]
    fn set(&mut self, v: Vec4) {
        *self = v;
    }
}

impl Slot<Vec4> for [f32; 4] {
    #[inline]
    fn set(&mut self, v: Vec4) {
        *self = v.to_array();
    }
}

/// Where skinned vertices go, four lanes at a time: `x`, `y`, `z` (and `w`) of each attribute
/// across the lanes, of which the first `len` are vertices `ids[..len]` (the other lanes repeat the
/// last vertex).
pub(super) trait FrameSink {
    /// Whether normals are wanted (else only positions are computed).
    fn wants_normals(&self) -> bool;
    /// Whether tangents are wanted (with normals, when the set has tangents).
    fn wants_tangents(&self) -> bool;
    /// Takes the lanes' positions, unit normals (when wanted) and tangents (when wanted and present).
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        positions: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        tangents: Option<[Vec4; 4]>,
    );
}

/// Per-vertex arrays, written at each vertex's index.
pub(super) struct ArraySink<'a, P, N, T> {
    pub(super) positions: &'a mut [P],
    pub(super) normals: Option<&'a mut [N]>,
    pub(super) tangents: Option<&'a mut [T]>,
}

impl<P: Slot<Vec3>, N: Slot<Vec3>, T: Slot<Vec4>> FrameSink for ArraySink<'_, P, N, T> {
    fn wants_normals(&self) -> bool {
        self.normals.is_some()
    }

    fn wants_tangents(&self) -> bool {
        self.tangents.is_some()
    }

    #[inline(always)]
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        [x, y, z]: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        tangents: Option<[Vec4; 4]>,
    ) {
        let out = Mat4::from_cols(x, y, z, Vec4::ZERO).transpose();
        for (l, &id) in ids.iter().enumerate().take(len) {
            if let Some(o) = self.positions.get_mut(id as usize) {
                o.set(out.col(l).truncate());
            }
        }
        if let (Some(out), Some([x, y, z])) = (self.normals.as_deref_mut(), normals) {
            let n = Mat4::from_cols(x, y, z, Vec4::ZERO).transpose();
            for (l, &id) in ids.iter().enumerate().take(len) {
                if let Some(o) = out.get_mut(id as usize) {
                    o.set(n.col(l).truncate());
                }
            }
        }
        if let (Some(out), Some([x, y, z, w])) = (self.tangents.as_deref_mut(), tangents) {
            let t = Mat4::from_cols(x, y, z, w).transpose();
            for (l, &id) in ids.iter().enumerate().take(len) {
                if let Some(o) = out.get_mut(id as usize) {
                    o.set(t.col(l));
                }
            }
        }
    }
}

/// Keeps the running per-lane min/max of the positions put into it, and whether all were finite.
pub(super) struct BoundsSink {
    pub(super) lo: [Vec4; 3],
    pub(super) hi: [Vec4; 3],
    pub(super) finite: BVec4A,
}

impl FrameSink for BoundsSink {
    fn wants_normals(&self) -> bool {
        false
    }

    fn wants_tangents(&self) -> bool {
        false
    }

    #[inline(always)]
    fn put(
        &mut self,
        _: &[u32; LANES],
        _: usize,
        [x, y, z]: [Vec4; 3],
        _: Option<[Vec4; 3]>,
        _: Option<[Vec4; 4]>,
    ) {
        // Lanes past `len` repeat a real vertex: they change neither the min nor the max.
        self.finite &= x.is_finite_mask() & y.is_finite_mask() & z.is_finite_mask();
        self.lo = [self.lo[0].min(x), self.lo[1].min(y), self.lo[2].min(z)];
        self.hi = [self.hi[0].max(x), self.hi[1].max(y), self.hi[2].max(z)];
    }
}

/// One frame of [`vat_core::format::encoding::VertexFormat::Packed64`] texels (8 bytes per vertex, vertex `v` at byte `8 v`),
/// encoded from the lanes as they are skinned.
pub(super) struct Packed64Sink<'a> {
    pub(super) encoder: &'a Packed64Encoder,
    pub(super) texels: &'a mut [u8],
}

impl FrameSink for Packed64Sink<'_> {
    fn wants_normals(&self) -> bool {
        true
    }

    fn wants_tangents(&self) -> bool {
        false
    }

    #[inline(always)]
    fn put(
        &mut self,
        ids: &[u32; LANES],
        len: usize,
        positions: [Vec4; 3],
        normals: Option<[Vec4; 3]>,
        _: Option<[Vec4; 4]>,
    ) {
        let Some(normals) = normals else { return };
        let [x, y, z] = positions;
        let [nx, ny, nz] = normals;
        let texels = self.encoder.encode4(
            [x.to_array(), y.to_array(), z.to_array()],
            [nx.to_array(), ny.to_array(), nz.to_array()],
        );
        for l in 0..len {
            let at = ids[l] as usize * 8;
            if let Some(out) = self.texels.get_mut(at..at + 8) {
                out[..4].copy_from_slice(&texels[l][0].to_le_bytes());
                out[4..].copy_from_slice(&texels[l][1].to_le_bytes());
            }
        }
    }
}

/// Bind-space attributes with the pose's morph deltas added.
pub(super) struct Morphed {
    pub(super) positions: Vec<Vec3>,
    pub(super) normals: Vec<Vec3>,
    pub(super) tangents: Option<Vec<Vec4>>,
}

/// Adds `Σ weight * delta` of every morph target with a non-zero weight (targets in set order) to
/// copies of the set's attributes; `None` when no target is active.
pub(super) fn morph(set: &VertexSet, morph_weights: &[Vec<f32>]) -> Option<Morphed> {
    let weight =
        |t: &SetMorphTarget| morph_weights.get(t.mesh).and_then(|w| w.get(t.target)).copied().unwrap_or(0.0);
    if set.morph_targets.iter().all(|t| weight(t) == 0.0 || t.vertices.is_empty()) {
        return None;
    }
    let mut out = Morphed {
        positions: set.positions.clone(),
        normals: set.normals.clone(),
        tangents: set.tangents.clone(),
    };
    fn add(out: &mut [Vec3], vertices: &[u32], deltas: &[Vec3], w: f32) {
        for (&v, d) in vertices.iter().zip(deltas) {
            if let Some(o) = out.get_mut(v as usize) {
                *o += *d * w;
            }
        }
    }
    for target in &set.morph_targets {
        let w = weight(target);
        if w == 0.0 {
            continue;
        }
        add(&mut out.positions, &target.vertices, &target.positions, w);
        if let Some(d) = &target.normals {
            add(&mut out.normals, &target.vertices, d, w);
        }
        if let (Some(d), Some(t)) = (&target.tangents, &mut out.tangents) {
            for (&v, d) in target.vertices.iter().zip(d) {
                if let Some(o) = t.get_mut(v as usize) {
                    *o = (o.truncate() + *d * w).extend(o.w);
                }
            }
        }
    }
    Some(out)
}
