//! Four-lane skinning: lane matrices, blending, the inner loops.

use super::*;

/// Vertices skinned together, one per lane of a `Vec4`: the per-vertex math runs on four vertices
/// at once (transposed in registers), instead of on one vertex's xyz with horizontal sums.
pub(super) const LANES: usize = 4;

/// The affine part of a skinning matrix as its three rows `(m_r0, m_r1, m_r2, translation_r)`:
/// blending rows costs three vector operations per influence instead of four, and transposing the
/// rows of four vertices gives each matrix entry across the four lanes.
pub(super) type Rows = [Vec4; 3];

pub(super) fn rows_of(m: &Mat4) -> Rows {
    [m.row(0), m.row(1), m.row(2)]
}

pub(super) const IDENTITY_ROWS: Rows = [Vec4::X, Vec4::Y, Vec4::Z];

/// The skinning matrices of four vertices, entry by entry across the lanes: column `a` of the
/// linear part is `(a[0], a[1], a[2])`, likewise `b` and `c`; the translation is `w`.
pub(super) struct LaneMatrices {
    pub(super) a: [Vec4; 3],
    pub(super) b: [Vec4; 3],
    pub(super) c: [Vec4; 3],
    pub(super) w: [Vec4; 3],
}

/// [`LaneMatrices`] with what normals need: `sign(det M3) * cof(M3)`, whose columns are
/// `b x c`, `c x a` and `a x b` (`det = a . (b x c)`), entry by entry across the lanes. Computed
/// once per group for vertices wholly on one bone.
pub(super) struct LaneSkin {
    pub(super) m: LaneMatrices,
    pub(super) bc: [Vec4; 3],
    pub(super) ca: [Vec4; 3],
    pub(super) ab: [Vec4; 3],
    pub(super) sign: Vec4,
}

impl LaneSkin {
    #[inline(always)]
    pub(super) fn new(m: LaneMatrices) -> Self {
        let ([a0, a1, a2], [b0, b1, b2], [c0, c1, c2]) = (m.a, m.b, m.c);
        let bc = [b1 * c2 - b2 * c1, b2 * c0 - b0 * c2, b0 * c1 - b1 * c0];
        let ca = [c1 * a2 - c2 * a1, c2 * a0 - c0 * a2, c0 * a1 - c1 * a0];
        let ab = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0];
        let det = a0 * bc[0] + a1 * bc[1] + a2 * bc[2];
        let sign = Vec4::select(det.cmplt(Vec4::ZERO), Vec4::NEG_ONE, Vec4::ONE);
        Self { m, bc, ca, ab, sign }
    }
}

impl LaneMatrices {
    /// One matrix in every lane.
    #[inline(always)]
    pub(super) fn splat(rows: &Rows) -> Self {
        let e = |f: fn(Vec4) -> f32| rows.map(|r| Vec4::splat(f(r)));
        Self { a: e(|r| r.x), b: e(|r| r.y), c: e(|r| r.z), w: e(|r| r.w) }
    }

    /// Four matrices, one per lane.
    #[inline(always)]
    pub(super) fn transposed(m: &[Rows; LANES]) -> Self {
        // Row r of the four lanes, transposed: entries (r, 0), (r, 1), (r, 2) and translation r,
        // each across the lanes.
        let row = |r: usize| Mat4::from_cols(m[0][r], m[1][r], m[2][r], m[3][r]).transpose();
        let (r0, r1, r2) = (row(0), row(1), row(2));
        Self {
            a: [r0.x_axis, r1.x_axis, r2.x_axis],
            b: [r0.y_axis, r1.y_axis, r2.y_axis],
            c: [r0.z_axis, r1.z_axis, r2.z_axis],
            w: [r0.w_axis, r1.w_axis, r2.w_axis],
        }
    }
}

/// `Σ w_i * bone(j_i)` over one vertex's non-zero `(joint, weight)` pairs, in slot order, from zero.
/// A missing bone counts as the identity.
#[inline(always)]
pub(super) fn blend(rows: &[Rows], joints: &[u16], weights: &[f32]) -> Rows {
    let mut m = [Vec4::ZERO; 3];
    for (&j, &w) in joints.iter().zip(weights) {
        let b = rows.get(usize::from(j)).copied().unwrap_or(IDENTITY_ROWS);
        m[0] += b[0] * w;
        m[1] += b[1] * w;
        m[2] += b[2] * w;
    }
    m
}

/// Bind-space sources of one frame (morphed or not).
pub(super) struct Sources<'a> {
    pub(super) positions: &'a [Vec3],
    pub(super) normals: &'a [Vec3],
    pub(super) tangents: Option<&'a [Vec4]>,
}

/// The skinning kernel: morphs (into scratch copies, only when a target has a non-zero weight),
/// then skins every vertex of `plan`, group by group, four at a time, putting the results into
/// `sink`. Returns the number of vertices covered.
pub(super) fn skin_into<S: FrameSink + ?Sized>(
    set: &VertexSet,
    plan: &SkinPlan,
    bones: &[Mat4],
    morph_weights: &[Vec<f32>],
    sink: &mut S,
) -> usize {
    let morphed = morph(set, morph_weights);
    let src = match &morphed {
        Some(m) => Sources { positions: &m.positions, normals: &m.normals, tangents: m.tangents.as_deref() },
        None => {
            Sources { positions: &set.positions, normals: &set.normals, tangents: set.tangents.as_deref() }
        }
    };
    let rows: Vec<Rows> = bones.iter().map(rows_of).collect();
    let bone = |b: u16| rows.get(usize::from(b)).copied().unwrap_or(IDENTITY_ROWS);
    for g in &plan.groups {
        let shared = match &g.matrix {
            GroupMatrix::Rigid(b) => Some(bone(*b)),
            GroupMatrix::Shared { joints, weights } => Some(blend(&rows, joints, weights)),
            GroupMatrix::PerVertex { .. } => None,
        };
        let shared = shared.map(|m| LaneSkin::new(LaneMatrices::splat(&m)));
        for (c, (chunk, rest)) in g.vertices.chunks(LANES).zip(&g.rest).enumerate() {
            let len = chunk.len();
            let ids = lane_ids(chunk);
            let per_vertex;
            let skin = match (&shared, &g.matrix) {
                (Some(m), _) => m,
                (None, GroupMatrix::PerVertex { k, joints, weights }) => {
                    let k = *k;
                    let lane = |l: usize| {
                        let i = (c * LANES + l.min(len - 1)) * k;
                        blend(&rows, &joints[i..i + k], &weights[i..i + k])
                    };
                    per_vertex =
                        LaneSkin::new(LaneMatrices::transposed(&[lane(0), lane(1), lane(2), lane(3)]));
                    &per_vertex
                }
                (None, _) => continue,
            };
            // The rest attributes were gathered in advance unless morphs moved them.
            let (p, nrm_in) = if morphed.is_some() {
                (gathered(src.positions, &ids), gathered(src.normals, &ids))
            } else {
                ([rest[0], rest[1], rest[2]], [rest[3], rest[4], rest[5]])
            };
            skin_lanes(skin, &ids, len, p, nrm_in, &src, sink);
        }
    }
    plan.vertex_count
}

/// Skins the vertices `ids[..len]` (see the module docs for the math) with their matrices `skin`,
/// from their bind-space positions `p` and normals `n` across the lanes. Lanes past `len` repeat
/// the last vertex, so every lane holds real data, and are not written back. Every lane does the
/// same IEEE operations as every other, so a vertex's result does not depend on its lane.
#[inline(always)]
pub(super) fn skin_lanes<S: FrameSink + ?Sized>(
    skin: &LaneSkin,
    ids: &[u32; LANES],
    len: usize,
    [px, py, pz]: [Vec4; 3],
    [nx, ny, nz]: [Vec4; 3],
    src: &Sources<'_>,
    sink: &mut S,
) {
    let m = &skin.m;
    let [a0, a1, a2] = m.a;
    let [b0, b1, b2] = m.b;
    let [c0, c1, c2] = m.c;
    let [w0, w1, w2] = m.w;
    let ox = a0 * px + b0 * py + c0 * pz + w0;
    let oy = a1 * px + b1 * py + c1 * pz + w1;
    let oz = a2 * px + b2 * py + c2 * pz + w2;
    if !sink.wants_normals() {
        sink.put(ids, len, [ox, oy, oz], None, None);
        return;
    }
    let ([bc0, bc1, bc2], [ca0, ca1, ca2], [ab0, ab1, ab2], sign) = (skin.bc, skin.ca, skin.ab, skin.sign);
    let tx = sign * (bc0 * nx + ca0 * ny + ab0 * nz);
    let ty = sign * (bc1 * nx + ca1 * ny + ab1 * nz);
    let tz = sign * (bc2 * nx + ca2 * ny + ab2 * nz);
    let recip = (tx * tx + ty * ty + tz * tz).sqrt().recip();
    let (ux, uy, uz) = (tx * recip, ty * recip, tz * recip);
    let normal_ok = recip.is_finite_mask() & recip.cmpgt(Vec4::ZERO);
    // A blend of rank <= 1 has no normal direction: keep the bind-space one.
    let fallback_normal = |l: usize| unit_or(Vec3A::new(nx[l], ny[l], nz[l]), || Vec3A::Y);
    let mut normal = [ux, uy, uz];
    if !normal_ok.all() {
        for l in (0..LANES).filter(|&l| !normal_ok.test(l)) {
            let f = fallback_normal(l);
            (normal[0][l], normal[1][l], normal[2][l]) = (f.x, f.y, f.z);
        }
    }
    let tangents = match src.tangents {
        Some(src_t) if sink.wants_tangents() && ids.iter().all(|&i| (i as usize) < src_t.len()) => {
            // Tangents: t' = M3 t, made orthogonal to the skinned normal and unit (Gram-Schmidt).
            let ts = |l: usize| src_t[ids[l] as usize];
            let t = Mat4::from_cols(ts(0), ts(1), ts(2), ts(3)).transpose();
            let (tx, ty, tz, tw) = (t.x_axis, t.y_axis, t.z_axis, t.w_axis);
            let mx = a0 * tx + b0 * ty + c0 * tz;
            let my = a1 * tx + b1 * ty + c1 * tz;
            let mz = a2 * tx + b2 * ty + c2 * tz;
            let d = ux * mx + uy * my + uz * mz;
            let (ox, oy, oz) = (mx - ux * d, my - uy * d, mz - uz * d);
            let recip_t = (ox * ox + oy * oy + oz * oz).sqrt().recip();
            let mut tangent = [ox * recip_t, oy * recip_t, oz * recip_t];
            let tangent_ok = normal_ok & recip_t.is_finite_mask() & recip_t.cmpgt(Vec4::ZERO);
            // Each lane's choice depends on its own vertex only, so results stay lane-independent.
            for l in (0..LANES).filter(|&l| !tangent_ok.test(l)) {
                let n = Vec3A::new(normal[0][l], normal[1][l], normal[2][l]);
                let tm = Vec3A::new(mx[l], my[l], mz[l]);
                let f = unit_or(tm - n * n.dot(tm), || n.any_orthonormal_vector());
                (tangent[0][l], tangent[1][l], tangent[2][l]) = (f.x, f.y, f.z);
            }
            Some([tangent[0], tangent[1], tangent[2], tw])
        }
        _ => None,
    };
    sink.put(ids, len, [ox, oy, oz], Some(normal), tangents);
}

/// Four vectors as the rows of a matrix whose columns are their x, y and z across the lanes.
#[inline(always)]
pub(super) fn transposed(v: [Vec3; LANES]) -> Mat4 {
    Mat4::from_cols(v[0].extend(0.0), v[1].extend(0.0), v[2].extend(0.0), v[3].extend(0.0)).transpose()
}

/// `v` scaled to unit length, or `fallback()` when `v` has no direction (zero, subnormal or not
/// finite). The fallback is evaluated only when needed.
#[inline]
pub(super) fn unit_or(v: Vec3A, fallback: impl FnOnce() -> Vec3A) -> Vec3A {
    let recip = v.length_recip();
    if recip.is_finite() && recip > 0.0 { v * recip } else { fallback() }
}
