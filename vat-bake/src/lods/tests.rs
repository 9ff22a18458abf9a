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
        assert!((got - target).abs() <= 0.1 * target + 2.0, "ratio {r}: {got} triangles for target {target}");
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
            assert!(2 * w[1] <= w[0], "{}: LOD {} has {} triangles after {}", rig.name, i + 1, w[1], w[0]);
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
        let distances = vat_core::format::lod::lod_switch_distances(errors, size);
        for (i, lod) in lods.iter().enumerate() {
            assert_eq!(lod.screen_error, errors[i]);
            assert_eq!(lod.triangle_count, tris[i]);
            assert_eq!(lod.max_distance, distances[i]);
            if let Some(next) = errors.get(i + 1) {
                let by_error = (f64::from(*next) / vat_core::format::lod::LOD_PIXEL_ANGLE) as f32;
                assert!(lod.max_distance >= by_error * 0.999, "LOD {i} switches before its error is a pixel");
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
        assert!(e.normal_deg.is_some_and(|d| (0.0..=180.0).contains(&d)) && e.uv.is_some_and(f32::is_finite));
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
            let fold = if y > h / 2 { Vec3::new(0.0, 0.0, (y - h / 2) as f32 * 0.05) } else { Vec3::ZERO };
            posed.push(v + fold);
        }
    }
    let id = |x: u32, y: u32| y * (w + 1) + x;
    let mut idx = Vec::new();
    for y in 0..h {
        for x in 0..w {
            idx.extend([id(x, y), id(x + 1, y), id(x, y + 1), id(x + 1, y), id(x + 1, y + 1), id(x, y + 1)]);
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
