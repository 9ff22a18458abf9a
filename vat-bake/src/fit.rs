//! Rigid skinning decomposition: a skin (bones with one rigid transform per frame, up to four
//! weighted bones per vertex) fitted to a vertex animation that has no skeleton (a mesh sequence,
//! a soft body), so that the skin-plus-residual vertex format
//! ([`vat_core::format::skin_residual`]) can encode it. The residual holds every vertex within its
//! bound whatever the fit; the fit only decides how many residual bits are spent. So the fit is
//! bounded in time, deterministic and robust rather than optimal (measurements and the choice in
//! `docs/notes/compressed-format.md`, "Rigid skinning decomposition plus a quantized residual" and
//! "Bake cost"; the numpy prototype is `scripts/research/compressed/rigid.py`).
//!
//! # Algorithm
//! Rigid SSDR (Le and Deng 2012), simplified and bounded, in `f64`; the rest pose is frame 0.
//! 1. **Clusters.** k-means of the vertices on their trajectories: the feature of a vertex is its
//!    positions at up to 16 evenly spaced frames, concatenated. Initial centres by farthest-point
//!    sampling from vertex 0, then a fixed number of Lloyd rounds (fewer when nothing moves). A
//!    cluster left empty is reseeded with the vertex farthest from its own centre (taken only from
//!    a cluster that keeps at least one vertex). `bone_count = min(bones, vertex_count)`.
//! 2. **Transforms.** Per bone per frame, the rigid transform that best maps its vertices' rest
//!    positions onto their positions in that frame (weighted Procrustes), by Horn's quaternion
//!    method: the eigenvector of the largest eigenvalue of a 4 x 4 symmetric matrix (cyclic
//!    Jacobi). A vanishing `1e-9` relative pull towards the identity makes the degenerate clusters
//!    (one vertex, coincident or collinear vertices) take the rotation closest to the identity
//!    (a pure translation for a single vertex) instead of an arbitrary one.
//! 3. **Rigid k-means**, `iterations` rounds (fewer when no vertex changes bone): each vertex goes
//!    to the bone whose transforms reproduce its trajectory best (squared error summed over up to
//!    64 evenly spaced sample frames), searched among its current bone and the 8 bones whose
//!    rest-pose centroids are nearest; empty bones are reseeded with the worst-reproduced vertex;
//!    transforms refitted.
//! 4. **Weights.** Per vertex, its `influences` best single bones (among the same candidates), then
//!    the exact non-negative least-squares weights summing to 1 over the sample frames (every
//!    subset of those bones solved in closed form, the best feasible one kept; at most 15 subsets
//!    of at most 4 unknowns), rounded to `f32` so that they still sum to 1.
//! 5. **Final transforms, every frame.** The hard (one bone per vertex) fit of step 2 from the
//!    last clusters, then one block-coordinate-descent round over the bones (in index order) with
//!    the final weights: each bone's weighted Procrustes fit of what the other bones leave. A bone
//!    whose weights sum to less than 1 keeps its hard fit (too little data to move it, and a
//!    transform fitted to a few small weights can take a far translation).
//! 6. **Figures.** The RMS and maximum distance between the source positions and the skin as
//!    stored (`f32` transforms, weights and rest positions, blended in `f64` as bone mode skins:
//!    `p' = sum_k w_k (R_k p + t_k)`), over every vertex of every frame.
//!
//! # Cost and determinism
//! Every stage is bounded: the k-means is `O(V B 48)` per round, the rigid k-means and the weights
//! `O(V 9 S)` per round with `S <= 64` sample frames, the final fit and the figures one pass over
//! the `V F` positions with at most 4 bones per vertex. Work is split per vertex or per frame with
//! rayon, and every reduction runs in a fixed order, so the result is bit-identical whatever the
//! thread count. The positions are read through the caller's closure (once to validate, once per
//! sample frame, once for the final fit); the fit keeps only the sample frames (`V S` points).

use rayon::prelude::*;

use crate::{BakeError, Result};

/// The most bones [`fit_rigid_skin`] fits (`FitOptions::bones`).
pub const MAX_BONES: u32 = 1024;

/// The most rigid k-means rounds [`fit_rigid_skin`] runs (`FitOptions::iterations`).
pub const MAX_ITERATIONS: u32 = 100;

/// Frames (evenly spaced, the first and last included) whose positions form a vertex's k-means
/// feature.
const KMEANS_FRAMES: usize = 16;

/// Frames (evenly spaced, the first and last included) over which vertices are assigned to bones
/// and their weights solved.
const SAMPLE_FRAMES: usize = 64;

/// The most Lloyd rounds of the initial k-means.
const KMEANS_ROUNDS: usize = 6;

/// Bones, nearest by rest-pose centroid, searched for each vertex (besides its own).
const CANDIDATES: usize = 8;

/// How the decomposition is fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitOptions {
    /// Bones to fit, `1..=1024` ([`MAX_BONES`]); fewer are fitted when the mesh has fewer vertices.
    /// Default 32.
    pub bones: u32,
    /// Rigid k-means rounds (reassigning vertices to bones, refitting the transforms),
    /// `0..=100` ([`MAX_ITERATIONS`]); 0 keeps the trajectory k-means clusters. Default 3.
    pub iterations: u32,
    /// Bones per vertex, `1..=4`. Default 4.
    pub influences: u32,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self { bones: 32, iterations: 3, influences: 4 }
    }
}

/// A fitted rigid skin: bone transforms per frame, bone weights per vertex, the rest pose, and how
/// well the skin reproduces the source.
#[derive(Clone, Debug, PartialEq)]
pub struct FittedSkin {
    /// Per bone per frame: the rigid transform as three affine rows `[r0, r1, r2]` with the
    /// translation (metres) in element 3 (`p' = R p + t`), `f32`, frame-major:
    /// `transforms[frame * bone_count + bone]`. `R` is a rotation up to `f32` rounding.
    pub transforms: Vec<[[f32; 4]; 3]>,
    /// Bones fitted: `min(FitOptions::bones, vertex_count)`, at most [`MAX_BONES`].
    pub bone_count: u32,
    /// Per vertex, up to `FitOptions::influences` bone indices (`< bone_count`), heaviest first;
    /// unused slots are 0 (with weight 0).
    pub joints: Vec<[u16; 4]>,
    /// Per vertex, the weights of [`FittedSkin::joints`]: `>= 0`, summing to 1 (in `f32`, to
    /// rounding); unused slots 0.
    pub weights: Vec<[f32; 4]>,
    /// The rest pose the transforms apply to: frame 0's positions, metres.
    pub rest_positions: Vec<[f32; 3]>,
    /// The rest pose's normals: the given frame-0 normals, normalised (a zero normal becomes +Y).
    pub rest_normals: Vec<[f32; 3]>,
    /// RMS over every vertex of every frame of the distance between the skinned position (the
    /// stored `f32` values, blended in `f64`) and the source position, metres.
    pub rms_error_m: f64,
    /// The largest such distance, metres.
    pub max_error_m: f64,
}

/// Fits a rigid skin to `frame_count` frames of `vertex_count` vertices; `position(frame, vertex)`
/// gives a position in metres (called from several threads, several times per vertex and frame;
/// it must return the same value every time), and `normal0` the frame-0 normal of every vertex
/// (any length but 0; normalised here). See the [module documentation](self) for the algorithm
/// and its cost.
///
/// # Errors
/// [`BakeError::InvalidOption`] for `bones` outside `1..=1024`, `iterations` above 100 or
/// `influences` outside `1..=4`; [`BakeError::InvalidInput`] for no frames, no vertices (or more
/// than `u32::MAX`), a
/// `normal0` whose length is not `vertex_count`, a non-finite position or normal, or positions so
/// large that the fitted transforms overflow `f32`.
pub fn fit_rigid_skin(
    frame_count: usize,
    vertex_count: usize,
    position: impl Fn(usize, usize) -> [f32; 3] + Sync,
    normal0: &[[f32; 3]],
    options: &FitOptions,
) -> Result<FittedSkin> {
    fit(frame_count, vertex_count, &position, normal0, options)
}

fn invalid(part: &str, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

type PositionFn<'a> = &'a (dyn Fn(usize, usize) -> [f32; 3] + Sync);

/// One frame's fit: its bones' `f32` transforms, the sum of squared errors and the largest error.
type FrameFit = (Vec<[[f32; 4]; 3]>, f64, f64);

fn fit(
    frame_count: usize,
    vertex_count: usize,
    position: PositionFn<'_>,
    normal0: &[[f32; 3]],
    options: &FitOptions,
) -> Result<FittedSkin> {
    validate_options(options)?;
    if frame_count == 0 {
        return Err(invalid("rigid skin fit", "needs at least one frame, has none"));
    }
    if vertex_count == 0 {
        return Err(invalid("rigid skin fit", "needs at least one vertex, has none"));
    }
    if frame_count.checked_mul(vertex_count).and_then(|n| n.checked_mul(24)).is_none() {
        return Err(invalid(
            "rigid skin fit",
            format!("{frame_count} frames of {vertex_count} vertices overflow"),
        ));
    }
    if u32::try_from(vertex_count).is_err() {
        return Err(invalid(
            "rigid skin fit",
            format!("{vertex_count} vertices: at most {} are supported", u32::MAX),
        ));
    }
    if normal0.len() != vertex_count {
        return Err(invalid(
            "rigid skin fit: frame 0 normals",
            format!("needs one per vertex ({vertex_count}), has {}", normal0.len()),
        ));
    }
    if let Some(v) = normal0.iter().position(|n| !n.iter().all(|c| c.is_finite())) {
        return Err(invalid("rigid skin fit: frame 0 normals", format!("vertex {v}'s normal is not finite")));
    }
    let bad = (0..frame_count).into_par_iter().find_map_first(|f| {
        (0..vertex_count).find(|&v| !position(f, v).iter().all(|c| c.is_finite())).map(|v| (f, v))
    });
    if let Some((f, v)) = bad {
        return Err(invalid(
            &format!("rigid skin fit: frame {f} vertex {v}"),
            format!("position {:?} is not finite", position(f, v)),
        ));
    }

    let bones = options.bones.min(u32::try_from(vertex_count).unwrap_or(u32::MAX)) as usize;
    let influences = options.influences as usize;

    // The sample frames, vertex-major: samples[v * m + j] is vertex v at frame sample[j].
    let sample = spaced(frame_count, SAMPLE_FRAMES);
    let m = sample.len();
    let mut samples = vec![[0f32; 3]; vertex_count * m];
    samples.par_chunks_mut(m).enumerate().for_each(|(v, row)| {
        for (out, &f) in row.iter_mut().zip(&sample) {
            *out = position(f, v);
        }
    });
    let rest32: Vec<[f32; 3]> = (0..vertex_count).map(|v| samples[v * m]).collect();
    let rest: Vec<[f64; 3]> = rest32.iter().map(|p| p.map(f64::from)).collect();
    let data = Samples { rest: &rest, samples: &samples, m, bones };

    // 1. Clusters on trajectories.
    let mut labels = kmeans(&data);

    // 2 and 3. Transforms at the sample frames, rigid k-means.
    let mut centroids = bone_centroids(&rest, &labels, bones);
    let mut tf_s = data.fit_hard_samples(&labels, &centroids);
    for _ in 0..options.iterations {
        let best: Vec<(u32, f64)> = (0..vertex_count)
            .into_par_iter()
            .map(|v| {
                let (cand, n) = candidates(rest[v], labels[v], &centroids);
                let mut best = (labels[v], f64::INFINITY);
                for &b in &cand[..n] {
                    let e = data.trajectory_error(v, b as usize, &tf_s);
                    if e < best.1 {
                        best = (b, e);
                    }
                }
                best
            })
            .collect();
        let changed = best.iter().zip(&labels).any(|(b, &l)| b.0 != l);
        labels = best.iter().map(|b| b.0).collect();
        let errors: Vec<f64> = best.iter().map(|b| b.1).collect();
        let reseeded = reseed_empty(&mut labels, bones, &errors);
        centroids = bone_centroids(&rest, &labels, bones);
        tf_s = data.fit_hard_samples(&labels, &centroids);
        if !changed && !reseeded {
            break;
        }
    }

    // 4. Weights.
    let skin: Vec<([u16; 4], [f32; 4])> = (0..vertex_count)
        .into_par_iter()
        .map(|v| data.solve_weights(v, labels[v], &centroids, &tf_s, influences))
        .collect();
    let joints: Vec<[u16; 4]> = skin.iter().map(|s| s.0).collect();
    let weights: Vec<[f32; 4]> = skin.iter().map(|s| s.1).collect();

    // 5 and 6. Every frame: hard fit, one block-coordinate-descent round, figures.
    let lists = BoneLists::new(&rest, &joints, &weights, bones);
    let frame =
        FramePass { rest: &rest, rest32: &rest32, labels: &labels, centroids: &centroids, lists: &lists };
    let frames: Vec<FrameFit> = (0..frame_count)
        .into_par_iter()
        .map_init(
            || (vec![[0f64; 3]; vertex_count], vec![[0f64; 3]; vertex_count]),
            |(pos, pred), f| frame.run(f, position, &joints, &weights, pos, pred),
        )
        .collect();
    let mut transforms = Vec::with_capacity(frame_count * bones);
    let (mut sum, mut max) = (0f64, 0f64);
    for (t, s, mx) in frames {
        transforms.extend(t);
        sum += s;
        max = max.max(mx);
    }
    if !transforms.iter().flatten().flatten().all(|c| c.is_finite()) || !sum.is_finite() {
        return Err(invalid(
            "rigid skin fit",
            "the positions are too large: the fitted transforms overflow f32",
        ));
    }
    let rest_normals = normal0
        .iter()
        .map(|n| {
            let n = n.map(f64::from);
            let l = dot(n, n).sqrt();
            if l > 0.0 && l.is_finite() { n.map(|c| (c / l) as f32) } else { [0.0, 1.0, 0.0] }
        })
        .collect();
    Ok(FittedSkin {
        transforms,
        bone_count: bones as u32,
        joints,
        weights,
        rest_positions: rest32,
        rest_normals,
        rms_error_m: (sum / (frame_count as f64 * vertex_count as f64)).sqrt(),
        max_error_m: max,
    })
}

fn validate_options(options: &FitOptions) -> Result<()> {
    if !(1..=MAX_BONES).contains(&options.bones) {
        return Err(BakeError::InvalidOption {
            option: "bones",
            problem: format!("{} is outside 1..={MAX_BONES}", options.bones),
        });
    }
    if options.iterations > MAX_ITERATIONS {
        return Err(BakeError::InvalidOption {
            option: "iterations",
            problem: format!("{} is more than {MAX_ITERATIONS}", options.iterations),
        });
    }
    if !(1..=4).contains(&options.influences) {
        return Err(BakeError::InvalidOption {
            option: "influences",
            problem: format!("{} is outside 1..=4", options.influences),
        });
    }
    Ok(())
}

/// `n` (at most `count`) indices evenly spaced over `0..count`, the first and last included.
fn spaced(count: usize, n: usize) -> Vec<usize> {
    if count <= n {
        return (0..count).collect();
    }
    (0..n).map(|i| (i * (count - 1) + (n - 1) / 2) / (n - 1)).collect()
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dist2(a: [f64; 3], b: [f64; 3]) -> f64 {
    let d = sub(a, b);
    dot(d, d)
}

/// A rigid transform `p' = r p + t` (`r` row-major).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Rigid {
    r: [[f64; 3]; 3],
    t: [f64; 3],
}

impl Rigid {
    const IDENTITY: Rigid = Rigid { r: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], t: [0.0; 3] };

    fn apply(&self, p: [f64; 3]) -> [f64; 3] {
        [dot(self.r[0], p) + self.t[0], dot(self.r[1], p) + self.t[1], dot(self.r[2], p) + self.t[2]]
    }

    fn rows32(&self) -> [[f32; 4]; 3] {
        std::array::from_fn(|i| {
            let r = self.r[i];
            [r[0] as f32, r[1] as f32, r[2] as f32, self.t[i] as f32]
        })
    }
}

/// The rigid transform `p' = R p + t` minimising `sum_i |q_i - w_i (R x_i + t)|^2`, given
/// `h = sum_i w_i (x_i - x̄) q_i^T` (`h[a][b]`: component `a` of `x`, `b` of `q`),
/// `x̄ = sum w_i^2 x_i / sum w_i^2` and `q̄ = sum w_i q_i / sum w_i^2`: Horn's quaternion method,
/// `t = q̄ - R x̄`. A `1e-9` relative pull towards the identity decides the degenerate cases.
fn procrustes(h: [[f64; 3]; 3], xbar: [f64; 3], qbar: [f64; 3]) -> Rigid {
    let norm = h.iter().flatten().map(|c| c * c).sum::<f64>().sqrt();
    let r = if norm > 0.0 && norm.is_finite() {
        let d = 1e-9 * norm;
        let s = |a: usize, b: usize| h[a][b] + if a == b { d } else { 0.0 };
        let (sxx, sxy, sxz) = (s(0, 0), s(0, 1), s(0, 2));
        let (syx, syy, syz) = (s(1, 0), s(1, 1), s(1, 2));
        let (szx, szy, szz) = (s(2, 0), s(2, 1), s(2, 2));
        let n = [
            [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
            [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
            [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
            [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
        ];
        quaternion_matrix(largest_eigenvector(n))
    } else {
        Rigid::IDENTITY.r
    };
    let rx = Rigid { r, t: [0.0; 3] }.apply(xbar);
    Rigid { r, t: sub(qbar, rx) }
}

/// The rotation matrix of the quaternion `(w, x, y, z)` (normalised here; the identity for 0).
fn quaternion_matrix(q: [f64; 4]) -> [[f64; 3]; 3] {
    let l = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    if !(l > 0.0 && l.is_finite()) {
        return Rigid::IDENTITY.r;
    }
    let [w, x, y, z] = q.map(|c| c / l);
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

/// The unit eigenvector of the largest eigenvalue of the symmetric `a` (cyclic Jacobi; the lowest
/// index among equal eigenvalues).
fn largest_eigenvector(mut a: [[f64; 4]; 4]) -> [f64; 4] {
    let mut v = [[0f64; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    // Off-diagonal entries below this are rounding noise: set to 0 rather than rotated away (so
    // the sweeps end, in a handful for a converged matrix).
    let negligible = 1e-17 * a.iter().flatten().map(|c| c * c).sum::<f64>().sqrt();
    for _sweep in 0..32 {
        let mut rotated = false;
        for p in 0..3 {
            for q in p + 1..4 {
                let apq = a[p][q];
                if apq.abs() <= negligible || !apq.is_finite() {
                    a[p][q] = 0.0;
                    a[q][p] = 0.0;
                    continue;
                }
                rotated = true;
                let theta = (a[q][q] - a[p][p]) / (2.0 * apq);
                let t = if theta.abs() > 1e150 {
                    0.5 / theta
                } else {
                    theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
                };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (kp, kq) = (row[p], row[q]);
                    row[p] = c * kp - s * kq;
                    row[q] = s * kp + c * kq;
                }
                let (rp, rq) = (a[p], a[q]);
                a[p] = std::array::from_fn(|k| c * rp[k] - s * rq[k]);
                a[q] = std::array::from_fn(|k| s * rp[k] + c * rq[k]);
                a[p][q] = 0.0;
                a[q][p] = 0.0;
                for row in v.iter_mut() {
                    let (kp, kq) = (row[p], row[q]);
                    row[p] = c * kp - s * kq;
                    row[q] = s * kp + c * kq;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut best = 0;
    for i in 1..4 {
        if a[i][i] > a[best][best] {
            best = i;
        }
    }
    [v[0][best], v[1][best], v[2][best], v[3][best]]
}

/// Each bone's rest-pose centroid over the vertices `labels` gives it (`None` for an empty bone).
fn bone_centroids(rest: &[[f64; 3]], labels: &[u32], bones: usize) -> Vec<Option<[f64; 3]>> {
    let mut sum = vec![([0f64; 3], 0usize); bones];
    for (p, &l) in rest.iter().zip(labels) {
        let s = &mut sum[l as usize];
        s.0 = [s.0[0] + p[0], s.0[1] + p[1], s.0[2] + p[2]];
        s.1 += 1;
    }
    sum.into_iter().map(|(s, n)| (n > 0).then(|| s.map(|c| c / n as f64))).collect()
}

/// Gives every empty bone a vertex: the one with the largest `error` (the first among equals)
/// whose bone keeps another vertex. Whether any moved.
fn reseed_empty(labels: &mut [u32], bones: usize, error: &[f64]) -> bool {
    let mut counts = vec![0usize; bones];
    for &l in labels.iter() {
        counts[l as usize] += 1;
    }
    let mut taken = vec![false; labels.len()];
    let mut moved = false;
    for b in 0..bones {
        if counts[b] > 0 {
            continue;
        }
        let mut pick: Option<usize> = None;
        for (v, &l) in labels.iter().enumerate() {
            if taken[v] || counts[l as usize] < 2 {
                continue;
            }
            if pick.is_none_or(|p| error[v] > error[p]) {
                pick = Some(v);
            }
        }
        if let Some(v) = pick {
            counts[labels[v] as usize] -= 1;
            counts[b] += 1;
            labels[v] = b as u32;
            taken[v] = true;
            moved = true;
        }
    }
    moved
}

/// A vertex's candidate bones: its own, then up to [`CANDIDATES`] others by rest-pose centroid
/// distance (nearest first, lower index among equals); the count used.
fn candidates(p: [f64; 3], own: u32, centroids: &[Option<[f64; 3]>]) -> ([u32; CANDIDATES + 1], usize) {
    let mut near = [(f64::INFINITY, u32::MAX); CANDIDATES];
    let mut n = 0;
    for (b, c) in centroids.iter().enumerate() {
        let Some(c) = c else { continue };
        if b as u32 == own {
            continue;
        }
        let d = dist2(p, *c);
        if n == CANDIDATES && d >= near[n - 1].0 {
            continue;
        }
        let mut i = n.min(CANDIDATES - 1);
        n = (n + 1).min(CANDIDATES);
        while i > 0 && near[i - 1].0 > d {
            near[i] = near[i - 1];
            i -= 1;
        }
        near[i] = (d, b as u32);
    }
    let mut out = [own; CANDIDATES + 1];
    for (o, c) in out[1..].iter_mut().zip(&near[..n]) {
        *o = c.1;
    }
    (out, n + 1)
}

/// The rest pose and the sample frames.
struct Samples<'a> {
    rest: &'a [[f64; 3]],
    /// `samples[v * m + j]`: vertex `v` at the `j`th sample frame.
    samples: &'a [[f32; 3]],
    m: usize,
    bones: usize,
}

impl Samples<'_> {
    fn at(&self, v: usize, j: usize) -> [f64; 3] {
        self.samples[v * self.m + j].map(f64::from)
    }

    /// The hard fit (every vertex weighs 1 on its bone) at every sample frame:
    /// `out[j * bones + b]`.
    fn fit_hard_samples(&self, labels: &[u32], centroids: &[Option<[f64; 3]>]) -> Vec<Rigid> {
        (0..self.m)
            .into_par_iter()
            .flat_map_iter(|j| fit_hard(self.rest, labels, centroids, |v| self.at(v, j)))
            .collect()
    }

    /// `sum_j |T_bj x_v - p_vj|^2` over the sample frames.
    fn trajectory_error(&self, v: usize, b: usize, tf_s: &[Rigid]) -> f64 {
        let x = self.rest[v];
        (0..self.m).map(|j| dist2(tf_s[j * self.bones + b].apply(x), self.at(v, j))).sum()
    }

    /// Vertex `v`'s joints and weights: its `influences` best single bones among its candidates,
    /// then the non-negative weights summing to 1 that minimise the squared error over the
    /// sample frames, heaviest first, as `f32` summing to 1.
    fn solve_weights(
        &self,
        v: usize,
        own: u32,
        centroids: &[Option<[f64; 3]>],
        tf_s: &[Rigid],
        influences: usize,
    ) -> ([u16; 4], [f32; 4]) {
        let (cand, n) = candidates(self.rest[v], own, centroids);
        let mut ranked: Vec<(f64, u32)> =
            cand[..n].iter().map(|&b| (self.trajectory_error(v, b as usize, tf_s), b)).collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let k = influences.min(ranked.len());
        let chosen: Vec<u32> = ranked[..k].iter().map(|r| r.1).collect();
        // Gram matrix of the bones' prediction errors: since the weights sum to 1,
        // sum_k w_k T_k x - p = sum_k w_k (T_k x - p), so the error is w^T g w.
        let mut g = [[0f64; 4]; 4];
        let x = self.rest[v];
        for j in 0..self.m {
            let p = self.at(v, j);
            let d: [[f64; 3]; 4] = std::array::from_fn(|i| {
                chosen.get(i).map_or([0.0; 3], |&b| sub(tf_s[j * self.bones + b as usize].apply(x), p))
            });
            for a in 0..k {
                for b in a..k {
                    g[a][b] += dot(d[a], d[b]);
                }
            }
        }
        let upper = g;
        for (a, row) in g.iter_mut().enumerate() {
            for (b, c) in row.iter_mut().enumerate().take(a) {
                *c = upper[b][a];
            }
        }
        let w = simplex_least_squares(&g, k);
        let mut order: Vec<usize> = (0..k).filter(|&i| w[i] > 0.0).collect();
        order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(chosen[a].cmp(&chosen[b])));
        let mut joints = [0u16; 4];
        let mut weights = [0f32; 4];
        for (slot, &i) in order.iter().enumerate() {
            joints[slot] = chosen[i] as u16;
            weights[slot] = w[i] as f32;
        }
        // The heaviest takes what the others leave, so the f32 weights sum to 1.
        let rest_sum: f32 = weights[1..].iter().sum();
        weights[0] = 1.0 - rest_sum;
        (joints, weights)
    }
}

/// `argmin w^T g w` over `w >= 0`, `sum w = 1` (the first `k <= 4` entries; `g` symmetric positive
/// semi-definite): every non-empty subset of the bones, in order of size, solved on its affine
/// hull (the KKT system `g_S w + mu 1 = 0`, `1^T w = 1`), the best feasible one kept (a larger
/// subset must do better by a relative `1e-9`). Subsets whose system is singular (the optimum is
/// not unique, so a smaller subset attains it) are skipped; singletons always solve.
fn simplex_least_squares(g: &[[f64; 4]; 4], k: usize) -> [f64; 4] {
    let mut best = [0f64; 4];
    let mut best_obj = f64::INFINITY;
    let mut masks: Vec<u32> = (1..1u32 << k).collect();
    masks.sort_by_key(|m| (m.count_ones(), *m));
    for mask in masks {
        let idx: Vec<usize> = (0..k).filter(|i| mask & (1 << i) != 0).collect();
        let w_sub: Vec<f64> = if idx.len() == 1 {
            vec![1.0]
        } else {
            let Some(w) = solve_affine(g, &idx) else { continue };
            let s: f64 = w.iter().sum();
            if !(s > 0.0 && s.is_finite()) || w.iter().any(|&c| c < 0.0) {
                continue;
            }
            w.iter().map(|c| c / s).collect()
        };
        let mut obj = 0.0;
        for (a, &i) in idx.iter().enumerate() {
            for (b, &j) in idx.iter().enumerate() {
                obj += w_sub[a] * g[i][j] * w_sub[b];
            }
        }
        if obj < best_obj * (1.0 - 1e-9) || best_obj == f64::INFINITY {
            best_obj = obj;
            best = [0.0; 4];
            for (a, &i) in idx.iter().enumerate() {
                best[i] = w_sub[a];
            }
        }
    }
    best
}

/// The minimiser of `w^T g_S w` with `sum w = 1` over the bones `idx` (at most 4): the KKT system
/// `[g_S c1; c1^T 0] [w; mu] = [0; c]` (`c` the largest diagonal entry, for scale) by Gaussian
/// elimination with partial pivoting; `None` when it is singular to a relative `1e-12`.
fn solve_affine(g: &[[f64; 4]; 4], idx: &[usize]) -> Option<Vec<f64>> {
    let n = idx.len() + 1;
    let c = idx.iter().map(|&i| g[i][i].abs()).fold(0.0, f64::max);
    if !(c > 0.0 && c.is_finite()) {
        return None;
    }
    let mut a = [[0f64; 6]; 5];
    for (r, &i) in idx.iter().enumerate() {
        for (col, &j) in idx.iter().enumerate() {
            a[r][col] = g[i][j];
        }
        a[r][n - 1] = c;
        a[n - 1][r] = c;
    }
    a[n - 1][n] = c;
    for col in 0..n {
        let mut p = col;
        for r in col + 1..n {
            if a[r][col].abs() > a[p][col].abs() {
                p = r;
            }
        }
        if a[p][col].abs() <= 1e-12 * c {
            return None;
        }
        a.swap(col, p);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            let pivot = a[col];
            for (x, p) in a[r].iter_mut().zip(pivot).take(n + 1).skip(col) {
                *x -= f * p;
            }
        }
    }
    let mut x = [0f64; 5];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (a[r][n] - s) / a[r][r];
    }
    let w = x[..n - 1].to_vec();
    w.iter().all(|c| c.is_finite()).then_some(w)
}

/// The hard fit at one frame: per bone, the Procrustes fit of its vertices (weight 1 each) from
/// their rest positions to `pos(v)`; the identity for an empty bone.
fn fit_hard(
    rest: &[[f64; 3]],
    labels: &[u32],
    centroids: &[Option<[f64; 3]>],
    pos: impl Fn(usize) -> [f64; 3],
) -> Vec<Rigid> {
    let bones = centroids.len();
    let mut acc = vec![([[0f64; 3]; 3], [0f64; 3], 0usize); bones];
    for (v, (&x, &l)) in rest.iter().zip(labels).enumerate() {
        let l = l as usize;
        let Some(c) = centroids[l] else { continue };
        let q = pos(v);
        let d = sub(x, c);
        let a = &mut acc[l];
        for (row, di) in a.0.iter_mut().zip(d) {
            for (h, qj) in row.iter_mut().zip(q) {
                *h += di * qj;
            }
        }
        for (s, qi) in a.1.iter_mut().zip(q) {
            *s += qi;
        }
        a.2 += 1;
    }
    acc.into_iter()
        .zip(centroids)
        .map(|((h, sq, n), c)| match c {
            Some(c) if n > 0 => procrustes(h, *c, sq.map(|s| s / n as f64)),
            _ => Rigid::IDENTITY,
        })
        .collect()
}

/// Per bone, the vertices it weighs on (vertex order) and the statistics of its weights.
struct BoneLists {
    /// `entries[offsets[b]..offsets[b + 1]]`: bone `b`'s `(vertex, weight)`.
    offsets: Vec<usize>,
    entries: Vec<(u32, f64)>,
    /// Per bone: `sum w`, `sum w^2`, `sum w^2 x / sum w^2`.
    stats: Vec<(f64, f64, [f64; 3])>,
}

impl BoneLists {
    fn new(rest: &[[f64; 3]], joints: &[[u16; 4]], weights: &[[f32; 4]], bones: usize) -> Self {
        let mut counts = vec![0usize; bones + 1];
        for (j, w) in joints.iter().zip(weights) {
            for (&b, &w) in j.iter().zip(w) {
                if w > 0.0 {
                    counts[b as usize + 1] += 1;
                }
            }
        }
        for b in 0..bones {
            counts[b + 1] += counts[b];
        }
        let offsets = counts.clone();
        let mut fill = counts;
        let mut entries = vec![(0u32, 0f64); offsets[bones]];
        for (v, (j, w)) in joints.iter().zip(weights).enumerate() {
            for (&b, &w) in j.iter().zip(w) {
                if w > 0.0 {
                    entries[fill[b as usize]] = (v as u32, f64::from(w));
                    fill[b as usize] += 1;
                }
            }
        }
        let stats = (0..bones)
            .map(|b| {
                let (mut s, mut s2, mut sx) = (0f64, 0f64, [0f64; 3]);
                for &(v, w) in &entries[offsets[b]..offsets[b + 1]] {
                    let x = rest[v as usize];
                    s += w;
                    s2 += w * w;
                    sx = [sx[0] + w * w * x[0], sx[1] + w * w * x[1], sx[2] + w * w * x[2]];
                }
                (s, s2, if s2 > 0.0 { sx.map(|c| c / s2) } else { [0.0; 3] })
            })
            .collect();
        Self { offsets, entries, stats }
    }
}

/// What the per-frame pass needs.
struct FramePass<'a> {
    rest: &'a [[f64; 3]],
    rest32: &'a [[f32; 3]],
    labels: &'a [u32],
    centroids: &'a [Option<[f64; 3]>],
    lists: &'a BoneLists,
}

impl FramePass<'_> {
    /// Frame `f`: the hard fit, one block-coordinate-descent round with the weights, the `f32`
    /// transforms, and the sum of squared errors and largest error of the skin they give.
    fn run(
        &self,
        f: usize,
        position: PositionFn<'_>,
        joints: &[[u16; 4]],
        weights: &[[f32; 4]],
        pos: &mut [[f64; 3]],
        pred: &mut [[f64; 3]],
    ) -> FrameFit {
        for (v, p) in pos.iter_mut().enumerate() {
            *p = position(f, v).map(f64::from);
        }
        let mut tf = fit_hard(self.rest, self.labels, self.centroids, |v| pos[v]);
        for (v, out) in pred.iter_mut().enumerate() {
            let x = self.rest[v];
            let mut s = [0f64; 3];
            for (&b, &w) in joints[v].iter().zip(&weights[v]) {
                if w > 0.0 {
                    let q = tf[b as usize].apply(x);
                    let w = f64::from(w);
                    s = [s[0] + w * q[0], s[1] + w * q[1], s[2] + w * q[2]];
                }
            }
            *out = s;
        }
        let lists = self.lists;
        for (b, &(mass, w2, xbar)) in lists.stats.iter().enumerate() {
            if mass < 1.0 || w2 <= 0.0 {
                continue;
            }
            let entries = &lists.entries[lists.offsets[b]..lists.offsets[b + 1]];
            let mut h = [[0f64; 3]; 3];
            let mut sq = [0f64; 3];
            for &(v, w) in entries {
                let v = v as usize;
                let x = self.rest[v];
                let own = tf[b].apply(x);
                let q: [f64; 3] = std::array::from_fn(|i| pos[v][i] - pred[v][i] + w * own[i]);
                let wd = sub(x, xbar).map(|c| w * c);
                for i in 0..3 {
                    for j in 0..3 {
                        h[i][j] += wd[i] * q[j];
                    }
                    sq[i] += w * q[i];
                }
            }
            let new = procrustes(h, xbar, sq.map(|c| c / w2));
            // The change of the bone's part of every prediction: w (new - old) x.
            let old = tf[b];
            let delta = Rigid {
                r: std::array::from_fn(|i| std::array::from_fn(|j| new.r[i][j] - old.r[i][j])),
                t: std::array::from_fn(|i| new.t[i] - old.t[i]),
            };
            for &(v, w) in entries {
                let v = v as usize;
                let a = delta.apply(self.rest[v]);
                for i in 0..3 {
                    pred[v][i] += w * a[i];
                }
            }
            tf[b] = new;
        }
        let rows: Vec<[[f32; 4]; 3]> = tf.iter().map(Rigid::rows32).collect();
        let stored: Vec<Rigid> = rows
            .iter()
            .map(|r| Rigid {
                r: std::array::from_fn(|i| std::array::from_fn(|j| f64::from(r[i][j]))),
                t: std::array::from_fn(|i| f64::from(r[i][3])),
            })
            .collect();
        let (mut sum, mut max) = (0f64, 0f64);
        for (v, p) in pos.iter().enumerate() {
            let x = self.rest32[v].map(f64::from);
            let mut s = [0f64; 3];
            for (&b, &w) in joints[v].iter().zip(&weights[v]) {
                if w > 0.0 {
                    let q = stored[b as usize].apply(x);
                    let w = f64::from(w);
                    s = [s[0] + w * q[0], s[1] + w * q[1], s[2] + w * q[2]];
                }
            }
            let e = dist2(s, *p);
            sum += e;
            max = max.max(e);
        }
        (rows, sum, max.sqrt())
    }
}

/// The initial clusters: k-means of the vertices on their positions at up to [`KMEANS_FRAMES`]
/// of the sample frames, farthest-point initialisation from vertex 0, at most [`KMEANS_ROUNDS`]
/// Lloyd rounds, empty clusters reseeded. Every label is `< bones` and every bone has a vertex.
fn kmeans(data: &Samples<'_>) -> Vec<u32> {
    let cols = spaced(data.m, KMEANS_FRAMES);
    let dim = cols.len() * 3;
    let vertex_count = data.rest.len();
    let bones = data.bones;
    let feature = |v: usize, out: &mut [f64]| {
        for (o, &j) in out.chunks_exact_mut(3).zip(&cols) {
            o.copy_from_slice(&data.at(v, j));
        }
    };
    let dist = |v: usize, c: &[f64]| -> f64 {
        cols.iter().zip(c.chunks_exact(3)).map(|(&j, c)| dist2(data.at(v, j), [c[0], c[1], c[2]])).sum()
    };
    let mut centers = vec![0f64; bones * dim];
    feature(0, &mut centers[..dim]);
    let mut nearest: Vec<f64> = (0..vertex_count).into_par_iter().map(|v| dist(v, &centers[..dim])).collect();
    for b in 1..bones {
        let mut pick = 0;
        for (v, &d) in nearest.iter().enumerate() {
            if d > nearest[pick] {
                pick = v;
            }
        }
        feature(pick, &mut centers[b * dim..(b + 1) * dim]);
        let center = &centers[b * dim..(b + 1) * dim];
        nearest.par_iter_mut().enumerate().for_each(|(v, d)| *d = d.min(dist(v, center)));
    }
    let mut labels = vec![u32::MAX; vertex_count];
    for _round in 0..KMEANS_ROUNDS {
        let assigned: Vec<(u32, f64)> = (0..vertex_count)
            .into_par_iter()
            .map(|v| {
                let mut best = (0u32, f64::INFINITY);
                for (b, c) in centers.chunks_exact(dim).enumerate() {
                    let d = dist(v, c);
                    if d < best.1 {
                        best = (b as u32, d);
                    }
                }
                best
            })
            .collect();
        let changed = assigned.iter().zip(&labels).any(|(a, &l)| a.0 != l);
        labels = assigned.iter().map(|a| a.0).collect();
        let errors: Vec<f64> = assigned.iter().map(|a| a.1).collect();
        let reseeded = reseed_empty(&mut labels, bones, &errors);
        if !changed && !reseeded {
            break;
        }
        let mut sums = vec![0f64; bones * dim];
        let mut counts = vec![0usize; bones];
        let mut buf = vec![0f64; dim];
        for (v, &l) in labels.iter().enumerate() {
            feature(v, &mut buf);
            for (s, x) in sums[l as usize * dim..][..dim].iter_mut().zip(&buf) {
                *s += x;
            }
            counts[l as usize] += 1;
        }
        for ((c, s), &n) in centers.chunks_exact_mut(dim).zip(sums.chunks_exact(dim)).zip(&counts) {
            if n > 0 {
                for (c, s) in c.iter_mut().zip(s) {
                    *c = s / n as f64;
                }
            }
        }
    }
    labels
}

#[cfg(test)]
mod tests;
