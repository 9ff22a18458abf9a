use std::f64::consts::PI;
use std::time::Instant;

use super::*;

/// Frames of positions, frame-major.
type Frames = Vec<Vec<[f32; 3]>>;

fn fit_frames(frames: &Frames, options: &FitOptions) -> Result<FittedSkin> {
    let vertex_count = frames.first().map_or(0, Vec::len);
    let normals = vec![[0.0, 1.0, 0.0]; vertex_count];
    fit_rigid_skin(frames.len(), vertex_count, |f, v| frames[f][v], &normals, options)
}

/// Rodrigues: rotation by `angle` about the unit `axis`, applied to `p`.
fn rotate(axis: [f64; 3], angle: f64, p: [f64; 3]) -> [f64; 3] {
    let (s, c) = angle.sin_cos();
    let k = axis;
    let kxp = [k[1] * p[2] - k[2] * p[1], k[2] * p[0] - k[0] * p[2], k[0] * p[1] - k[1] * p[0]];
    let kdp = dot(k, p);
    std::array::from_fn(|i| p[i] * c + kxp[i] * s + k[i] * kdp * (1.0 - c))
}

fn normalized(v: [f64; 3]) -> [f64; 3] {
    let l = dot(v, v).sqrt();
    v.map(|c| c / l)
}

/// Three boxes of 4 x 4 x 4 points (0.4 m wide, centres up to 1.5 m from the origin), each
/// turning about its own axis through its centre and translating on its own, over `frames` frames
/// (20 frames: up to 3 m from the origin).
fn rigid_parts(frames: usize) -> Frames {
    let centres = [[-1.5, 0.0, 0.0], [0.0, 0.5, 0.2], [1.5, -0.2, 0.3]];
    let axes = [normalized([0.0, 1.0, 0.0]), normalized([1.0, 1.0, 0.0]), normalized([0.3, -0.2, 1.0])];
    let mut rest = Vec::new();
    for (k, c) in centres.iter().enumerate() {
        for i in 0..4 {
            for j in 0..4 {
                for l in 0..4 {
                    let o = [i, j, l].map(|n| (n as f64 - 1.5) * 0.4 / 3.0);
                    rest.push((k, [c[0] + o[0], c[1] + o[1], c[2] + o[2]]));
                }
            }
        }
    }
    (0..frames)
        .map(|f| {
            let f = f as f64 * 20.0 / frames as f64;
            rest.iter()
                .map(|&(k, p)| {
                    let c = centres[k];
                    let r = rotate(axes[k], 0.08 * f * (k as f64 + 1.0), sub(p, c));
                    let t = [0.03 * f, 0.02 * f * k as f64, -0.01 * f * (k as f64 - 1.0)];
                    std::array::from_fn(|i| (c[i] + r[i] + t[i]) as f32)
                })
                .collect()
        })
        .collect()
}

/// A `nx` x `nz` sheet on [0, width] x [0, 1] (metres) that bends about the z axis, from flat at
/// frame 0 to a half cylinder at the last frame, with a travelling ripple of `ripple` metres.
fn bending_sheet(nx: usize, nz: usize, width: f64, frames: usize, ripple: f64) -> Frames {
    (0..frames)
        .map(|f| {
            let s = f as f64 / (frames - 1).max(1) as f64;
            let kappa = s * PI / width;
            let mut out = Vec::with_capacity(nx * nz);
            for i in 0..nx {
                for k in 0..nz {
                    let x = width * i as f64 / (nx - 1) as f64;
                    let z = k as f64 / (nz - 1) as f64;
                    let (bx, by) = if kappa > 0.0 {
                        ((kappa * x).sin() / kappa, (1.0 - (kappa * x).cos()) / kappa)
                    } else {
                        (x, 0.0)
                    };
                    let wave = ripple * s * (2.0 * PI * (x + z - 2.0 * s)).sin();
                    out.push([bx as f32, (by + wave) as f32, z as f32]);
                }
            }
            out
        })
        .collect()
}

/// RMS and max of `|skin - source|` over every vertex-frame, recomputed here from the returned
/// skin (f32 values, blended in f64).
fn skin_errors(skin: &FittedSkin, frames: &Frames) -> (f64, f64) {
    let bones = skin.bone_count as usize;
    let (mut sum, mut max, mut n) = (0f64, 0f64, 0f64);
    for (f, frame) in frames.iter().enumerate() {
        for (v, p) in frame.iter().enumerate() {
            let x = skin.rest_positions[v].map(f64::from);
            let mut s = [0f64; 3];
            for (&b, &w) in skin.joints[v].iter().zip(&skin.weights[v]) {
                let m = skin.transforms[f * bones + b as usize];
                for i in 0..3 {
                    let row = m[i].map(f64::from);
                    s[i] += f64::from(w) * (row[0] * x[0] + row[1] * x[1] + row[2] * x[2] + row[3]);
                }
            }
            let e = dist2(s, p.map(f64::from));
            sum += e;
            max = max.max(e.sqrt());
            n += 1.0;
        }
    }
    ((sum / n).sqrt(), max)
}

/// The shape every fit must have, whatever its quality.
fn check_skin(skin: &FittedSkin, frames: &Frames, options: &FitOptions) {
    let v = frames[0].len();
    let bones = skin.bone_count as usize;
    assert_eq!(bones, (options.bones as usize).min(v));
    assert_eq!(skin.transforms.len(), frames.len() * bones);
    assert_eq!((skin.joints.len(), skin.weights.len()), (v, v));
    assert_eq!(skin.rest_positions, frames[0]);
    for (j, w) in skin.joints.iter().zip(&skin.weights) {
        let sum: f32 = w.iter().sum();
        assert!((sum - 1.0).abs() <= 1e-6, "weights {w:?} sum to {sum}");
        for (&j, &w) in j.iter().zip(w) {
            assert!(w.is_finite() && w >= 0.0, "weight {w}");
            assert!((j as usize) < bones, "joint {j} of {bones} bones");
        }
        let used = w.iter().filter(|&&w| w > 0.0).count();
        assert!(used >= 1 && used <= options.influences as usize, "{used} weights used");
        assert!(w.windows(2).all(|p| p[0] >= p[1]), "weights {w:?} not heaviest first");
        assert!(j.iter().zip(w).all(|(&j, &w)| w > 0.0 || j == 0), "unused slot not (0, 0)");
    }
    for m in &skin.transforms {
        assert!(m.iter().flatten().all(|c| c.is_finite()));
        // Orthonormal rows (a rotation rounded to f32).
        for a in 0..3 {
            for b in 0..3 {
                let d: f32 = (0..3).map(|k| m[a][k] * m[b][k]).sum();
                assert!((d - if a == b { 1.0 } else { 0.0 }).abs() < 1e-5, "R R^T entry {d}");
            }
        }
    }
    for n in &skin.rest_normals {
        assert!((n[0] * n[0] + n[1] * n[1] + n[2] * n[2] - 1.0).abs() < 1e-6);
    }
    // The reported figures are those of the returned skin.
    let (rms, max) = skin_errors(skin, frames);
    assert!(
        (rms - skin.rms_error_m).abs() <= 1e-9 + 1e-6 * rms,
        "rms {rms} vs reported {}",
        skin.rms_error_m
    );
    assert!(
        (max - skin.max_error_m).abs() <= 1e-9 + 1e-6 * max,
        "max {max} vs reported {}",
        skin.max_error_m
    );
    assert!(skin.rms_error_m <= skin.max_error_m + 1e-12);
}

/// The RMS distance of every vertex-frame from its rest position: the error of the skin that does
/// nothing (one bone, the identity at every frame).
fn rms_displacement(frames: &Frames) -> f64 {
    let (mut sum, mut n) = (0f64, 0f64);
    for frame in frames {
        for (p, r) in frame.iter().zip(&frames[0]) {
            sum += dist2(p.map(f64::from), r.map(f64::from));
            n += 1.0;
        }
    }
    (sum / n).sqrt()
}

fn skin_bits(skin: &FittedSkin) -> Vec<u64> {
    let mut out = vec![u64::from(skin.bone_count), skin.rms_error_m.to_bits(), skin.max_error_m.to_bits()];
    out.extend(skin.transforms.iter().flatten().flatten().map(|c| u64::from(c.to_bits())));
    out.extend(skin.joints.iter().flatten().map(|&j| u64::from(j)));
    out.extend(skin.weights.iter().flatten().map(|c| u64::from(c.to_bits())));
    out.extend(
        skin.rest_positions.iter().chain(&skin.rest_normals).flatten().map(|c| u64::from(c.to_bits())),
    );
    out
}

#[test]
fn rigid_parts_are_fitted_to_f32_rounding() {
    // Tolerance: every coordinate is below 4 m, where an f32 ulp is 2.4e-7 m. The source positions
    // are rounded to f32 (up to half an ulp per component, so the rigid motion is no longer exact),
    // and the stored skin rounds each rotation entry (relative 6e-8, times |p| < 4 m, three terms
    // per row) and translation (half an ulp) to f32: together a few ulp, about 1e-6 m. 1e-5 m leaves
    // a factor 10 for the f64 arithmetic while any vertex on the wrong part would be off by
    // centimetres to metres.
    let tolerance = 1e-5;
    // 100 frames: bones are assigned and weighted on 64 of them, the final fit uses all.
    for (frame_count, bones, influences) in [(20, 3, 4), (20, 3, 1), (20, 6, 4), (20, 32, 2), (100, 6, 4)] {
        let frames = rigid_parts(frame_count);
        let options = FitOptions { bones, influences, ..FitOptions::default() };
        let skin = fit_frames(&frames, &options).expect("a valid input fits");
        check_skin(&skin, &frames, &options);
        println!(
            "rigid parts ({} vertices, {} frames), {bones} bones, {influences} influences: rms {:.3e} m, max {:.3e} m",
            frames[0].len(),
            frames.len(),
            skin.rms_error_m,
            skin.max_error_m
        );
        assert!(skin.max_error_m < tolerance, "{bones} bones: max error {} m", skin.max_error_m);
    }
}

#[test]
fn fewer_vertices_than_bones_gives_a_bone_per_vertex() {
    // Five vertices moving independently (not rigidly): each gets its own bone, a translation
    // following it, so the skin reproduces them to f32 rounding (coordinates below 2 m).
    let frames: Frames = (0..12)
        .map(|f| {
            let f = f as f64;
            (0..5)
                .map(|v| {
                    let v = v as f64;
                    [
                        (v * 0.3 + (f * 0.4 + v).sin() * 0.5) as f32,
                        (f * 0.05 * v) as f32,
                        (v * f * 0.01).cos() as f32,
                    ]
                })
                .collect()
        })
        .collect();
    let options = FitOptions::default();
    let skin = fit_frames(&frames, &options).expect("a valid input fits");
    check_skin(&skin, &frames, &options);
    assert_eq!(skin.bone_count, 5);
    assert!(skin.max_error_m < 1e-5, "max error {} m", skin.max_error_m);
    let mut bones: Vec<u16> = skin.joints.iter().map(|j| j[0]).collect();
    bones.sort_unstable();
    assert_eq!(bones, [0, 1, 2, 3, 4]);
}

#[test]
fn a_single_frame_is_the_identity() {
    let frames: Frames = vec![rigid_parts(20).swap_remove(0)];
    let options = FitOptions { iterations: 0, ..FitOptions::default() };
    let skin = fit_frames(&frames, &options).expect("a valid input fits");
    check_skin(&skin, &frames, &options);
    assert!(skin.max_error_m < 1e-6, "max error {} m", skin.max_error_m);
}

#[test]
fn bending_sheet_fits_better_with_more_bones() {
    let frames = bending_sheet(20, 20, 1.0, 20, 0.02);
    let nothing = rms_displacement(&frames);
    let mut last = f64::INFINITY;
    for bones in [4, 16] {
        let options = FitOptions { bones, ..FitOptions::default() };
        let skin = fit_frames(&frames, &options).expect("a valid input fits");
        check_skin(&skin, &frames, &options);
        println!(
            "bending sheet (400 vertices, 20 frames, rms displacement {nothing:.4} m), {bones} bones: rms {:.3e} m, max {:.3e} m",
            skin.rms_error_m, skin.max_error_m
        );
        // Not rigid: some error remains; but far less than doing nothing.
        assert!(skin.rms_error_m > 1e-4, "{bones} bones: rms {} m on a non-rigid sheet", skin.rms_error_m);
        assert!(skin.rms_error_m < 0.1 * nothing, "{bones} bones: rms {} m vs {nothing} m", skin.rms_error_m);
        assert!(
            skin.rms_error_m < 0.7 * last,
            "{bones} bones: rms {} m, fewer bones {last} m",
            skin.rms_error_m
        );
        last = skin.rms_error_m;
    }
}

#[test]
fn more_influences_do_not_fit_worse_on_the_sample_frames() {
    // With 20 frames every frame is a sample frame, where four weights are the exact optimum over
    // a set that holds the one bone of one influence: before the final transform round, four
    // influences cannot fit worse. That round lowers both errors, so after it this is not a
    // theorem, but a regression check with a wide margin (about 3.7x here).
    let frames = bending_sheet(16, 8, 1.0, 20, 0.0);
    let one = fit_frames(&frames, &FitOptions { bones: 8, influences: 1, ..FitOptions::default() })
        .expect("a valid input fits");
    let four = fit_frames(&frames, &FitOptions { bones: 8, influences: 4, ..FitOptions::default() })
        .expect("a valid input fits");
    println!(
        "bending sheet, 8 bones: rms {:.3e} m (1 influence), {:.3e} m (4)",
        one.rms_error_m, four.rms_error_m
    );
    assert!(four.rms_error_m <= one.rms_error_m, "{} > {}", four.rms_error_m, one.rms_error_m);
}

#[test]
fn fit_is_deterministic_across_runs_and_threads() {
    let frames = bending_sheet(40, 25, 1.5, 90, 0.05);
    let options = FitOptions { bones: 16, ..FitOptions::default() };
    let a = fit_frames(&frames, &options).expect("a valid input fits");
    let b = fit_frames(&frames, &options).expect("a valid input fits");
    assert!(skin_bits(&a) == skin_bits(&b), "two runs differ");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let one = pool.install(|| fit_frames(&frames, &options)).expect("a valid input fits");
    assert!(skin_bits(&a) == skin_bits(&one), "one thread differs from the default pool");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("a three-thread pool");
    let three = pool.install(|| fit_frames(&frames, &options)).expect("a valid input fits");
    assert!(skin_bits(&a) == skin_bits(&three), "three threads differ from the default pool");
}

#[test]
fn bad_inputs_are_typed_errors() {
    let frames = rigid_parts(20);
    let v = frames[0].len();
    let normals = vec![[0.0f32, 0.0, 1.0]; v];
    let at = |f: usize, v: usize| frames[f][v];
    let ok = FitOptions::default();
    let input = |r: Result<FittedSkin>, what: &str| match r {
        Err(BakeError::InvalidInput { part, problem }) => println!("{what}: {part}: {problem}"),
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    };
    input(fit_rigid_skin(0, v, at, &normals, &ok), "no frames");
    input(fit_rigid_skin(frames.len(), 0, at, &[], &ok), "no vertices");
    input(fit_rigid_skin(frames.len(), v, at, &normals[1..], &ok), "too few normals");
    let mut bad_normals = normals.clone();
    bad_normals[7] = [f32::NAN, 0.0, 1.0];
    input(fit_rigid_skin(frames.len(), v, at, &bad_normals, &ok), "NaN normal");
    let nan = |f: usize, v: usize| if f == 13 && v == 100 { [0.0, f32::NAN, 0.0] } else { frames[f][v] };
    match fit_rigid_skin(frames.len(), v, nan, &normals, &ok) {
        Err(BakeError::InvalidInput { part, .. }) => assert!(part.contains("frame 13 vertex 100"), "{part}"),
        other => panic!("NaN position: expected InvalidInput, got {other:?}"),
    }
    let inf = |f: usize, v: usize| if f == 0 && v == 3 { [f32::INFINITY, 0.0, 0.0] } else { frames[f][v] };
    input(fit_rigid_skin(frames.len(), v, inf, &normals, &ok), "infinite position");
    let option = |o: FitOptions, name: &str| match fit_rigid_skin(frames.len(), v, at, &normals, &o) {
        Err(BakeError::InvalidOption { option, problem }) => {
            assert_eq!(option, name);
            println!("{option}: {problem}");
        }
        other => panic!("{o:?}: expected InvalidOption, got {other:?}"),
    };
    option(FitOptions { bones: 0, ..ok }, "bones");
    option(FitOptions { bones: MAX_BONES + 1, ..ok }, "bones");
    option(FitOptions { influences: 0, ..ok }, "influences");
    option(FitOptions { influences: 5, ..ok }, "influences");
    option(FitOptions { iterations: MAX_ITERATIONS + 1, ..ok }, "iterations");
    // The limits themselves are accepted.
    let edge = FitOptions { bones: MAX_BONES, iterations: 1, influences: 1 };
    fit_rigid_skin(frames.len(), v, at, &normals, &edge).expect("the largest bone count is valid");
}

#[test]
fn procrustes_recovers_rotations_and_degenerate_clusters() {
    let axis = normalized([0.2, -1.0, 0.5]);
    let t = [0.3, -2.0, 1.25];
    let points = [[0.1, 0.2, 0.3], [1.0, -0.5, 0.2], [-0.4, 0.9, 1.1], [0.5, 0.5, -0.7]];
    for angle in [0.0, 0.3, 2.0, PI - 1e-3, -2.9] {
        for n in 1..=points.len() {
            let x = &points[..n];
            let q: Vec<[f64; 3]> =
                x.iter().map(|&p| std::array::from_fn(|i| rotate(axis, angle, p)[i] + t[i])).collect();
            let xbar =
                x.iter().fold([0.0; 3], |s, p| [s[0] + p[0], s[1] + p[1], s[2] + p[2]]).map(|c| c / n as f64);
            let qbar =
                q.iter().fold([0.0; 3], |s, p| [s[0] + p[0], s[1] + p[1], s[2] + p[2]]).map(|c| c / n as f64);
            let mut h = [[0.0; 3]; 3];
            for (p, q) in x.iter().zip(&q) {
                let d = sub(*p, xbar);
                for i in 0..3 {
                    for j in 0..3 {
                        h[i][j] += d[i] * q[j];
                    }
                }
            }
            let fit = procrustes(h, xbar, qbar);
            // A rotation (orthonormal, determinant 1) ...
            let r = fit.r;
            for a in 0..3 {
                for b in 0..3 {
                    assert!((dot(r[a], r[b]) - if a == b { 1.0 } else { 0.0 }).abs() < 1e-12);
                }
            }
            let det = dot(
                r[0],
                [
                    r[1][1] * r[2][2] - r[1][2] * r[2][1],
                    r[1][2] * r[2][0] - r[1][0] * r[2][2],
                    r[1][0] * r[2][1] - r[1][1] * r[2][0],
                ],
            );
            assert!((det - 1.0).abs() < 1e-12, "det {det}");
            // ... that reproduces every point (1 and 2 points: any fitting rotation; 3+: the one).
            for (p, q) in x.iter().zip(&q) {
                assert!(dist2(fit.apply(*p), *q).sqrt() < 1e-7, "{n} points, angle {angle}");
            }
            if n == 1 {
                assert_eq!(fit.r, Rigid::IDENTITY.r, "one point: a pure translation");
            }
        }
    }
}

#[test]
fn simplex_least_squares_is_exact_and_non_negative() {
    // Two bones erring in opposite directions: the even blend is exact.
    let g = [[1.0, -1.0, 0.0, 0.0], [-1.0, 1.0, 0.0, 0.0], [0.0; 4], [0.0; 4]];
    let w = simplex_least_squares(&g, 2);
    assert!((w[0] - 0.5).abs() < 1e-12 && (w[1] - 0.5).abs() < 1e-12, "{w:?}");
    // Both err the same way, the second twice as far: the unconstrained optimum (2, -1) is out
    // of bounds, so the first bone alone.
    let g = [[1.0, 2.0, 0.0, 0.0], [2.0, 4.0, 0.0, 0.0], [0.0; 4], [0.0; 4]];
    assert_eq!(simplex_least_squares(&g, 2), [1.0, 0.0, 0.0, 0.0]);
    // A perfect single bone is kept alone.
    let g = [[4.0, 1.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 3.0, 0.0], [0.0; 4]];
    assert_eq!(simplex_least_squares(&g, 3), [0.0, 1.0, 0.0, 0.0]);
    // Three orthogonal errors of sizes 1, 2, 3: weights proportional to 1 / |d|^2.
    let g = [[1.0, 0.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0], [0.0, 0.0, 9.0, 0.0], [0.0, 0.0, 0.0, 0.0]];
    let w = simplex_least_squares(&g, 3);
    let s = 1.0 + 0.25 + 1.0 / 9.0;
    for (got, want) in w.iter().zip([1.0 / s, 0.25 / s, 1.0 / 9.0 / s]) {
        assert!((got - want).abs() < 1e-12, "{w:?}");
    }
}

#[test]
fn fit_time_mid_size() {
    // 5,000 vertices x 120 frames x 32 bones; prints the time, asserts only the shape and that
    // the fit beats doing nothing.
    let frames = bending_sheet(100, 50, 2.0, 120, 0.05);
    let options = FitOptions { bones: 32, ..FitOptions::default() };
    let start = Instant::now();
    let skin = fit_frames(&frames, &options).expect("a valid input fits");
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "fit time: {} vertices x {} frames x {} bones, {} iterations, {} influences, {} threads: {seconds:.3} s; rms {:.3e} m, max {:.3e} m (rms displacement {:.3} m)",
        frames[0].len(),
        frames.len(),
        skin.bone_count,
        options.iterations,
        options.influences,
        rayon::current_num_threads(),
        skin.rms_error_m,
        skin.max_error_m,
        rms_displacement(&frames)
    );
    check_skin(&skin, &frames, &options);
    assert!(skin.rms_error_m < 0.1 * rms_displacement(&frames));
}
