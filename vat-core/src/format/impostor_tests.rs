//! The view grid against its own definition: every baked view blends to itself, blends never leave
//! the grid or go negative, and the maps invert each other.

use super::*;

/// `count` unit directions spread over the sphere (a Fibonacci spiral), deterministic.
fn sphere(count: usize) -> Vec<[f32; 3]> {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    (0..count)
        .map(|k| {
            let y = 1.0 - 2.0 * (k as f32 + 0.5) / count as f32;
            let r = (1.0 - y * y).max(0.0).sqrt();
            let a = golden * k as f32;
            [r * a.cos(), y, r * a.sin()]
        })
        .collect()
}

fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

const COVERAGES: [ViewCoverage; 2] = [ViewCoverage::Full, ViewCoverage::Hemi];

#[test]
fn grids_outside_two_to_thirty_two_views_per_side_are_refused() {
    for n in [0, 1, MAX_VIEWS_PER_SIDE + 1] {
        assert!(matches!(ViewGrid::new(n, ViewCoverage::Hemi), Err(crate::Error::OutOfRange { .. })), "{n}");
    }
    assert_eq!(ViewGrid::new(8, ViewCoverage::Full).unwrap().view_count(), 64);
}

#[test]
fn every_baked_view_blends_to_itself() {
    // On a baked view, the weight sits on views looking exactly that way (on the full map's border
    // two grid points share a direction: either may take it).
    for coverage in COVERAGES {
        for n in [2, 3, 8, 16, MAX_VIEWS_PER_SIDE] {
            let grid = ViewGrid::new(n, coverage).unwrap();
            for k in 0..grid.view_count() {
                let d = grid.view_direction(k);
                assert!((distance(d, [0.0; 3]) - 1.0).abs() < 1e-5, "view {k} of {n} is not unit");
                let blend = grid.blend(d);
                let on_view: f32 = blend
                    .iter()
                    .filter(|(v, _)| distance(grid.view_direction(*v), d) < 1e-4)
                    .map(|(_, w)| w)
                    .sum();
                assert!(on_view > 1.0 - 1e-4, "{coverage:?} n={n} view {k}: {blend:?}");
            }
        }
    }
}

#[test]
fn blends_are_convex_and_stay_in_the_grid() {
    for coverage in COVERAGES {
        for n in [2, 5, 8, 16] {
            let grid = ViewGrid::new(n, coverage).unwrap();
            for d in sphere(4000) {
                let blend = grid.blend(d);
                let sum: f32 = blend.iter().map(|(_, w)| w).sum();
                assert!((sum - 1.0).abs() < 1e-5, "{blend:?}");
                for (v, w) in blend {
                    assert!(v < grid.view_count() && w >= -1e-6, "{coverage:?} n={n} {d:?}: {blend:?}");
                }
                // The blended views surround the direction. Bound: the nearest grid point of the
                // cell is a corner of the chosen triangle and lies within h / sqrt(2) of the point
                // on the square (h = 2 / (n - 1)). The map from the square to the sphere stretches
                // lengths by at most 3: onto the octahedron (s, t, 1 - |s| - |t|) by sqrt(3) (the
                // step (1, 1) becomes (1, 1, -2)), normalising a point at least 1 / sqrt(3) from the
                // centre by sqrt(3); the lower half's fold is an isometry, and the hemi layout's
                // 45-degree rotation halves the square first (1 / sqrt(2)). A chord is shorter than
                // its arc.
                let stretch = match coverage {
                    ViewCoverage::Full => 3.0,
                    ViewCoverage::Hemi => 3.0 / 2f32.sqrt(),
                };
                let bound = stretch * 2f32.sqrt() / (n - 1) as f32;
                let mut d = d;
                if coverage == ViewCoverage::Hemi {
                    d[1] = d[1].max(0.0);
                    let len = distance(d, [0.0; 3]);
                    d = [d[0] / len, d[1] / len, d[2] / len];
                }
                let nearest =
                    blend.iter().map(|(v, _)| distance(grid.view_direction(*v), d)).fold(f32::MAX, f32::min);
                assert!(nearest <= bound, "{coverage:?} n={n} {d:?}: nearest view {nearest} > {bound}");
            }
        }
    }
}

#[test]
fn the_square_and_the_sphere_map_back_and_forth() {
    for d in sphere(2000) {
        let back = square_to_direction(direction_to_square(d, ViewCoverage::Full), ViewCoverage::Full);
        assert!(distance(back, d) < 1e-5, "{d:?} -> {back:?}");
        if d[1] >= 0.0 {
            let back = square_to_direction(direction_to_square(d, ViewCoverage::Hemi), ViewCoverage::Hemi);
            assert!(distance(back, d) < 1e-5, "hemi {d:?} -> {back:?}");
        } else {
            // Below the horizon: the horizon direction with the same heading.
            let h = direction_to_square([d[0], 0.0, d[2]], ViewCoverage::Hemi);
            assert_eq!(direction_to_square(d, ViewCoverage::Hemi), h);
        }
    }
    for bad in [[0.0; 3], [f32::NAN, 0.0, 1.0], [f32::INFINITY, 0.0, 0.0]] {
        assert_eq!(direction_to_square(bad, ViewCoverage::Full), [0.0, 0.0]);
    }
}

#[test]
fn a_views_image_holds_the_bounding_sphere() {
    let (c, r) = ([0.5, 1.0, -0.25], 1.25);
    for d in sphere(500) {
        let (right, up) = view_axes(d);
        // An orthonormal, right-handed frame with d towards the viewer.
        assert!(dot(right, up).abs() < 1e-5 && dot(right, d).abs() < 1e-5 && dot(up, d).abs() < 1e-5);
        assert!(distance(cross(right, up), d) < 1e-4, "{d:?}");
        let at = |k: [f32; 3], s: f32| [c[0] + k[0] * r * s, c[1] + k[1] * r * s, c[2] + k[2] * r * s];
        let close = |a: [f32; 3], b: [f32; 3]| distance(a, b) < 1e-5;
        assert!(close(project_to_view(c, d, c, r), [0.5, 0.5, 0.0]));
        assert!(close(project_to_view(at(right, 1.0), d, c, r), [1.0, 0.5, 0.0]));
        assert!(close(project_to_view(at(up, 1.0), d, c, r), [0.5, 0.0, 0.0]));
        assert!(close(project_to_view(at(d, 1.0), d, c, r), [0.5, 0.5, 1.0]));
        for p in sphere(64) {
            let uvz = project_to_view(at(p, 0.999), d, c, r);
            assert!(uvz.iter().enumerate().all(|(i, x)| if i < 2 {
                (0.0..=1.0).contains(x)
            } else {
                x.abs() <= 1.0
            }));
        }
    }
}

#[test]
fn a_card_seen_from_a_baked_view_samples_that_view_where_it_is() {
    for coverage in COVERAGES {
        let grid = ViewGrid::new(5, coverage).unwrap();
        for k in 0..grid.view_count() {
            let d = grid.view_direction(k);
            for (u, v) in [(0.5, 0.5), (0.1, 0.8), (0.9, 0.25)] {
                let samples = card_samples(&grid, d, u, v, |_, _| f32::NAN);
                // All the weight on views looking the same way, each sampled at the card's own pixel.
                for (view, weight, [uk, vk]) in samples {
                    if weight > 1e-4 {
                        assert!(distance(grid.view_direction(view), d) < 1e-4);
                        assert!(
                            (uk - u).abs() < 1e-4 && (vk - v).abs() < 1e-4,
                            "{coverage:?} {k}: {uk},{vk}"
                        );
                    }
                }
            }
        }
    }
    // The card's centre is every view's centre.
    let grid = ViewGrid::new(4, ViewCoverage::Full).unwrap();
    for d in sphere(100) {
        for (_, _, [uk, vk]) in card_samples(&grid, d, 0.5, 0.5, |_, _| f32::NAN) {
            assert!((uk - 0.5).abs() < 1e-6 && (vk - 0.5).abs() < 1e-6);
        }
    }
}

#[test]
fn depth_correction_lands_on_a_surface_of_constant_depth() {
    // A surface every view saw at one depth c is the plane `x . d_k = c` for view k: after the
    // first step the ray point lies on it exactly (the second step keeps it there).
    let grid = ViewGrid::new(6, ViewCoverage::Hemi).unwrap();
    for d in sphere(200).into_iter().filter(|d| d[1] > 0.1) {
        for c in [-0.4f32, 0.0, 0.3] {
            for (u, v) in [(0.3, 0.6), (0.5, 0.5), (0.7, 0.2)] {
                let samples = card_samples(&grid, d, u, v, |_, _| c);
                let plain = card_samples(&grid, d, u, v, |_, _| f32::NAN);
                for ((view, w, uv), (_, _, uv0)) in samples.into_iter().zip(plain) {
                    let dk = grid.view_direction(view);
                    let along = dot(d, dk);
                    if w <= 0.0 || along <= 0.05 {
                        continue;
                    }
                    let (right, up) = view_axes(d);
                    let (x, y) = (2.0 * u - 1.0, 1.0 - 2.0 * v);
                    let p: [f32; 3] = std::array::from_fn(|i| right[i] * x + up[i] * y);
                    let s = (c - dot(p, dk)) / along;
                    if s.abs() >= 1.0 {
                        continue;
                    }
                    let q: [f32; 3] = std::array::from_fn(|i| p[i] + s * d[i]);
                    let [ue, ve, depth] = project_to_view(q, dk, [0.0; 3], 1.0);
                    assert!((depth - c).abs() < 1e-5);
                    assert!((uv[0] - ue).abs() < 1e-5 && (uv[1] - ve).abs() < 1e-5, "{uv:?} vs {ue},{ve}");
                    // The plain reprojection differs by the parallax s * (d's image in view k).
                    let shift = ((uv[0] - uv0[0]).powi(2) + (uv[1] - uv0[1]).powi(2)).sqrt();
                    let sin = (1.0 - along * along).max(0.0).sqrt();
                    assert!((shift - 0.5 * s.abs() * sin).abs() < 1e-4, "{shift} {s} {sin}");
                }
            }
        }
    }
}

#[test]
fn clip_images_follow_the_phase_and_wrap_only_when_looping() {
    assert_eq!(clip_images(8, 0.0, true), (0, 1, 0.0));
    assert_eq!(clip_images(8, 0.5, true), (4, 5, 0.0));
    let (a, b, t) = clip_images(8, 0.95, true);
    assert_eq!((a, b), (7, 0));
    assert!((t - 0.6).abs() < 1e-4);
    // Phase 1 of a loop is image 0 again: the last image blends fully into the first.
    assert_eq!(clip_images(8, 1.0, true), (7, 0, 1.0));
    // A one-shot holds its last image.
    assert_eq!(clip_images(8, 0.95, false), (7, 7, 0.0));
    assert_eq!(clip_images(8, 1.0, false), (7, 7, 0.0));
    assert_eq!(clip_images(1, 0.3, true), (0, 0, 0.3));
    assert_eq!(clip_images(8, f32::NAN, true), (0, 1, 0.0));
    assert_eq!(clip_images(0, 0.5, false), (0, 0, 0.0));
}

#[test]
fn the_switch_puts_one_texel_on_one_pixel_and_its_fade_covers_each_pixel_once() {
    // At the switch distance the sphere's diameter spans tile_size pixels of the reference view.
    let (radius, tile) = (0.9f32, 64u32);
    let d = switch_distance(radius, tile);
    let pixels = 2.0 * radius / (d * crate::lod::LOD_PIXEL_ANGLE as f32);
    assert!((pixels - tile as f32).abs() < 1e-3, "{pixels}");
    assert_eq!(switch_fade(d * 0.99, d, d * SWITCH_FADE_BAND), 0.0);
    assert_eq!(switch_fade(d * SWITCH_FADE_BAND, d, d * SWITCH_FADE_BAND), 1.0);
    assert_eq!(switch_fade(f32::NAN, d, d * SWITCH_FADE_BAND), 0.0);
    let mid = switch_fade(d * (1.0 + SWITCH_FADE_BAND) * 0.5, d, d * SWITCH_FADE_BAND);
    assert!((mid - 0.5).abs() < 1e-5);
    // The 16 thresholds are distinct, so a fade f keeps round(16 f) of every 16 pixels on the card
    // and the rest on the mesh: never both, never neither.
    let mut t: Vec<f32> = (0..16).map(|k| switch_dither(k % 4, k / 4)).collect();
    t.sort_by(f32::total_cmp);
    for (k, x) in t.iter().enumerate() {
        assert_eq!(*x, (k as f32 + 0.5) / 16.0);
    }
    assert_eq!(switch_dither(5, 6), switch_dither(1, 2));
}
