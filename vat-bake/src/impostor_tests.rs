//! The rasteriser against images whose every pixel follows from the geometry.

use super::*;
use rayon::prelude::*;
use vat_core::format::impostor::ImpostorBound;

/// Positions, normals, colours and indices of a test mesh.
type Parts = (Vec<Vec3>, Vec<Vec3>, Vec<[f32; 4]>, Vec<u32>);

/// A square of side `side` in the plane z = `z`, centred on the origin, two triangles
/// (counter-clockwise seen from +Z unless `flip`), normals +Z, one colour.
fn square(side: f32, z: f32, color: [f32; 4], flip: bool) -> Parts {
    let h = side / 2.0;
    let p = vec![Vec3::new(-h, -h, z), Vec3::new(h, -h, z), Vec3::new(h, h, z), Vec3::new(-h, h, z)];
    let idx = if flip { vec![0, 2, 1, 0, 3, 2] } else { vec![0, 1, 2, 0, 2, 3] };
    (p, vec![Vec3::Z; 4], vec![color; 4], idx)
}

const FRONT: [f32; 3] = [0.0, 0.0, 1.0];
const OPTIONS: RasterOptions = RasterOptions { size: 16, samples_per_side: 4 };

/// A mesh of one colour set and material 0.
fn plain_mesh<'a>(p: &'a [Vec3], n: &'a [Vec3], c: &'a [[f32; 4]], idx: &'a [u32]) -> ImpostorMesh<'a> {
    ImpostorMesh { positions: p, normals: n, colors: c, variant_colors: &[], material_ids: &[], indices: idx }
}

fn render(parts: &[Parts], options: &RasterOptions) -> ViewImage {
    let (mut p, mut n, mut c, mut idx) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (pp, nn, cc, ii) in parts {
        let base = p.len() as u32;
        p.extend_from_slice(pp);
        n.extend_from_slice(nn);
        c.extend_from_slice(cc);
        idx.extend(ii.iter().map(|i| i + base));
    }
    let mesh = plain_mesh(&p, &n, &c, &idx);
    render_view(&mesh, FRONT, [0.0; 3], 1.0, options).unwrap()
}

#[test]
fn a_square_facing_the_view_covers_exactly_its_pixels_from_either_side() {
    // Side 1 in a sphere of radius 1: u from 0.25 to 0.75, pixels 4..12 of 16, edges on pixel
    // boundaries, so every pixel is wholly in or out.
    for flip in [false, true] {
        let image = render(&[square(1.0, 0.0, [1.0; 4], flip)], &OPTIONS);
        for y in 0..16 {
            for x in 0..16 {
                let inside = (4..12).contains(&x) && (4..12).contains(&y);
                let (c, nd) = (image.color[y * 16 + x], image.normal_depth[y * 16 + x]);
                if inside {
                    // White, fully covered, normal +Z (octahedral 0, 0 -> 128), depth 0 (128),
                    // material 0.
                    assert_eq!((c, nd), ([255, 255, 255, 255], [128, 128, 128, 0]), "pixel {x},{y}");
                } else {
                    assert_eq!((c, nd), ([0; 4], [0; 4]), "pixel {x},{y}");
                }
            }
        }
    }
}

#[test]
fn the_nearer_surface_wins_whatever_the_drawing_order() {
    let red = square(1.0, 0.0, [1.0, 0.0, 0.0, 1.0], false);
    let green = square(0.5, 0.25, [0.0, 1.0, 0.0, 1.0], false);
    for parts in [[red.clone(), green.clone()], [green, red]] {
        let image = render(&parts, &OPTIONS);
        // The green square (u 0.375..0.625: pixels 6..10) is nearer the viewer (+Z): depth 0.25 ->
        // round(0.625 * 255) = 159.
        assert_eq!(image.color[8 * 16 + 8], [0, 255, 0, 255]);
        assert_eq!(image.normal_depth[8 * 16 + 8][2], 159);
        assert_eq!(image.color[4 * 16 + 4], [255, 0, 0, 255]);
    }
}

#[test]
fn coverage_adds_up_to_the_area_within_the_sampling_bound() {
    // A square turned 30 degrees: its edges cross pixels at every angle.
    let (mut p, n, c, idx) = square(1.1, 0.0, [0.5; 4], false);
    let (s, co) = (30f32.to_radians().sin(), 30f32.to_radians().cos());
    for q in &mut p {
        *q = Vec3::new(q.x * co - q.y * s, q.x * s + q.y * co, q.z);
    }
    for samples_per_side in [1, 2, 4, 8] {
        let options = RasterOptions { size: 32, samples_per_side };
        let image = render(&[(p.clone(), n.clone(), c.clone(), idx.clone())], &options);
        let covered: f32 = image.color.iter().map(|c| c[3] as f32 / 255.0).sum();
        // In pixels of this image: side 1.1 of the sphere's diameter 2 is 17.6 pixels.
        let side = 1.1 / 2.0 * 32.0;
        let area = side * side;
        // Only samples whose cell an edge crosses can be misclassified: a segment of length L
        // crosses at most sqrt(2) L S + 2 cells of side 1 / S, each worth 1 / S^2 pixels; plus half
        // a level of 8-bit rounding per pixel along the edges.
        let sp = samples_per_side as f32;
        let crossing_cells = 4.0 * (2f32.sqrt() * side * sp + 2.0);
        let bound = crossing_cells / (sp * sp) + 4.0 * (2f32.sqrt() * side + 2.0) * 0.5 / 255.0;
        assert!((covered - area).abs() <= bound, "S={samples_per_side}: {covered} vs {area} (bound {bound})");
    }
}

/// A UV sphere of radius 0.8, `rings x segments`, vertex colours from position.
fn sphere_mesh(rings: u32, segments: u32) -> Parts {
    let (mut p, mut n, mut c, mut idx) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..=rings {
        let phi = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..=segments {
            let theta = std::f32::consts::TAU * s as f32 / segments as f32;
            let d = Vec3::new(phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin());
            p.push(d * 0.8);
            n.push(d);
            c.push([(d.x + 1.0) / 2.0, (d.y + 1.0) / 2.0, (d.z + 1.0) / 2.0, 1.0]);
        }
    }
    for r in 0..rings {
        for s in 0..segments {
            let a = r * (segments + 1) + s;
            let b = a + segments + 1;
            idx.extend_from_slice(&[a, b, a + 1, a + 1, b, b + 1]);
        }
    }
    (p, n, c, idx)
}

#[test]
fn images_are_the_same_bytes_on_any_thread_and_every_run() {
    let (p, n, c, idx) = sphere_mesh(12, 24);
    let mesh = plain_mesh(&p, &n, &c, &idx);
    let grid =
        vat_core::format::impostor::ViewGrid::new(4, vat_core::format::impostor::ViewCoverage::Hemi).unwrap();
    let options = RasterOptions { size: 24, samples_per_side: 3 };
    let draw = |v: u32| render_view(&mesh, grid.view_direction(v), [0.0; 3], 1.0, &options).unwrap();
    let serial: Vec<ViewImage> = (0..grid.view_count()).map(draw).collect();
    let parallel: Vec<ViewImage> = (0..grid.view_count()).into_par_iter().map(draw).collect();
    assert_eq!(serial, parallel);
    assert_eq!(serial, (0..grid.view_count()).map(draw).collect::<Vec<_>>());
    // Every image shows the sphere whole: the centre pixel is covered, the corners are not.
    for image in &serial {
        assert_eq!(image.color[12 * 24 + 12][3], 255);
        assert_eq!(image.color[0], [0; 4]);
    }
}

#[test]
fn bad_meshes_and_options_are_typed_errors() {
    let (p, n, c, idx) = square(1.0, 0.0, [1.0; 4], false);
    let ok = plain_mesh(&p, &n, &c, &idx);
    let draw = |mesh: &ImpostorMesh<'_>, radius: f32, options: &RasterOptions| {
        render_view(mesh, FRONT, [0.0; 3], radius, options)
    };
    assert!(draw(&ok, 1.0, &OPTIONS).is_ok());
    for options in [
        RasterOptions { size: 0, samples_per_side: 4 },
        RasterOptions { size: 16, samples_per_side: 0 },
        RasterOptions { size: 4096, samples_per_side: 2 },
    ] {
        assert!(matches!(draw(&ok, 1.0, &options), Err(BakeError::InvalidOption { .. })), "{options:?}");
    }
    for radius in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert!(matches!(draw(&ok, radius, &OPTIONS), Err(BakeError::InvalidInput { .. })), "{radius}");
    }
    let bad_index = [0, 1, 4];
    let short_indices = [0, 1];
    let nan = [Vec3::new(f32::NAN, 0.0, 0.0), p[1], p[2], p[3]];
    for mesh in [
        ImpostorMesh { normals: &n[..3], ..ok },
        ImpostorMesh { colors: &c[..2], ..ok },
        ImpostorMesh { indices: &bad_index, ..ok },
        ImpostorMesh { indices: &short_indices, ..ok },
        ImpostorMesh { positions: &nan, ..ok },
    ] {
        assert!(matches!(draw(&mesh, 1.0, &OPTIONS), Err(BakeError::InvalidInput { .. })));
    }
    // No colours means white.
    let white = draw(&ImpostorMesh { colors: &[], ..ok }, 1.0, &OPTIONS).unwrap();
    assert_eq!(white.color[8 * 16 + 8], [255, 255, 255, 255]);
}

#[test]
fn normals_come_back_within_the_octahedral_quantum_from_every_view() {
    use vat_core::format::impostor::{ViewCoverage, ViewGrid, view_axes};
    let grid = ViewGrid::new(6, ViewCoverage::Full).unwrap();
    for v in 0..grid.view_count() {
        // A square facing view v, its normals the view direction.
        let d = grid.view_direction(v);
        let (right, up) = view_axes(d);
        let (d, right, up) = (Vec3::from(d), Vec3::from(right), Vec3::from(up));
        let p = [-right - up, right - up, right + up, -right + up].map(|q| q * 0.5);
        let n = [d; 4];
        let mesh = ImpostorMesh {
            positions: &p,
            normals: &n,
            colors: &[],
            variant_colors: &[],
            material_ids: &[],
            indices: &[0, 1, 2, 0, 2, 3],
        };
        let image = render_view(&mesh, d.to_array(), [0.0; 3], 1.0, &OPTIONS).unwrap();
        let nd = image.normal_depth[8 * 16 + 8];
        let o = [nd[0] as f32 / 255.0 * 2.0 - 1.0, nd[1] as f32 / 255.0 * 2.0 - 1.0];
        let decoded = Vec3::from(vat_core::format::encoding::oct_decode_f32(o));
        // Rounding to 8 bits moves each octahedral coordinate by at most 1/255 (half a step of
        // 2/255), sqrt(2)/255 together. The map from the square to the sphere stretches lengths by
        // at most 3: onto the octahedron (s, t, 1 - |s| - |t|) by sqrt(3) (the step (1, 1) becomes
        // (1, 1, -2)), then normalising a point at least 1 / sqrt(3) from the centre by sqrt(3); the
        // lower half's fold is an isometry. The angle is the arc, bounded by that length.
        let bound = 3.0 * 2f32.sqrt() / 255.0;
        assert!(decoded.angle_between(d) <= bound + 1e-6, "view {v}: {decoded} vs {d}");
        // Depth 0 at the centre, material 0.
        assert_eq!((nd[2], nd[3]), (128, 0), "view {v}");
    }
}

#[test]
fn a_mip_step_keeps_edge_colours_and_averages_coverage() {
    // One opaque red pixel among three empty ones: the colour stays red (the empty pixels weigh
    // nothing), coverage is a quarter, the normal, depth and material (7) are the red pixel's.
    let color = [[255, 0, 0, 255], [0; 4], [0; 4], [0; 4]];
    let normal_depth = [[128, 128, 200, 7], [0; 4], [0; 4], [0; 4]];
    let (c, nd) = halve_tile(&color, &normal_depth, 2);
    assert_eq!(c, vec![[255, 0, 0, 64]]);
    assert_eq!(nd, vec![[128, 128, 200, 7]]);
    // The material is the most covered child's, not a blend.
    let color = [[255, 0, 0, 100], [0, 0, 255, 200], [0; 4], [0; 4]];
    let normal_depth = [[128, 128, 128, 3], [128, 128, 128, 9], [0; 4], [0; 4]];
    assert_eq!(halve_tile(&color, &normal_depth, 2).1[0][3], 9);
    // Nothing covered stays zero.
    assert_eq!(halve_tile(&[[0; 4]; 4], &[[0; 4]; 4], 2), (vec![[0; 4]], vec![[0; 4]]));
}

/// The built-in humanoid baked with one LOD, its file bytes.
fn humanoid_file() -> Vec<u8> {
    let rig = crate::procgen::humanoid();
    crate::prepare::prepare(&rig, &crate::prepare::BakeOptions::default()).unwrap().to_vat_bytes().unwrap()
}

#[test]
fn a_tier_baked_from_a_file_fits_its_layout_and_the_container() {
    use vat_core::container::{Asset, BlobId, ContainerWriter};
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    let bytes = humanoid_file();
    let asset = Asset::parse(&bytes).unwrap();
    let options = ImpostorOptions {
        grid: ViewGrid::new(3, ViewCoverage::Hemi).unwrap(),
        tile_size: 16,
        frames_per_clip: 2,
        samples_per_side: 2,
    };
    let images = bake_tier(&asset, &options).unwrap();
    let clips = asset.manifest().clips.len() as u64;
    assert_eq!(images.tier.layer_count(), 2 * clips);
    assert_eq!(images.tier.mip_levels, 5);
    assert_eq!(Some(images.color.len() as u64), images.tier.blob_bytes());
    assert_eq!(images.color.len(), images.normal_depth.len());
    // Every layer shows the body from every view: each tile of level 0 has covered pixels, and the
    // one-pixel top level of each tile is covered where its tile is.
    let (side, layer_side) = (16usize, 48usize);
    for layer in 0..images.tier.layer_count() as usize {
        for tile in 0..9 {
            let (ti, tj) = (tile % 3, tile / 3);
            let covered = (0..side * side).any(|p| {
                let (x, y) = (ti * side + p % side, tj * side + p / side);
                images.color[((layer * layer_side + y) * layer_side + x) * 4 + 3] > 0
            });
            assert!(covered, "layer {layer} view {tile} is empty");
        }
    }
    // The tier and its blobs make a valid file.
    let mut manifest = asset.manifest().clone();
    let mut writer = ContainerWriter::new();
    for i in 0..manifest.blobs.len() {
        writer.add_blob(asset.blob(BlobId(i as u32)));
    }
    let mut tier = images.tier.clone();
    tier.color = writer.add_blob(images.color.clone());
    tier.normal_depth = writer.add_blob(images.normal_depth.clone());
    manifest.impostors = Some(tier);
    let file = writer.finish(manifest).unwrap();
    assert!(Asset::parse(&file).unwrap().manifest().impostors.is_some());
    // The same bytes on one thread.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert_eq!(pool.install(|| bake_tier(&asset, &options)).unwrap(), images);
}

#[test]
fn tier_options_out_of_range_are_refused() {
    use vat_core::container::Asset;
    let bytes = humanoid_file();
    let asset = Asset::parse(&bytes).unwrap();
    for options in [
        ImpostorOptions { tile_size: 48, ..Default::default() },
        ImpostorOptions { tile_size: 4, ..Default::default() },
        ImpostorOptions { frames_per_clip: 0, ..Default::default() },
        ImpostorOptions { frames_per_clip: 257, ..Default::default() },
    ] {
        assert!(matches!(bake_tier(&asset, &options), Err(BakeError::InvalidOption { .. })), "{options:?}");
    }
}

#[test]
fn a_tier_is_measured_against_its_mesh_between_the_baked_views() {
    use vat_core::container::Asset;
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    let bytes = humanoid_file();
    let asset = Asset::parse(&bytes).unwrap();
    let coarse = ImpostorOptions {
        grid: ViewGrid::new(3, ViewCoverage::Hemi).unwrap(),
        tile_size: 32,
        frames_per_clip: 1,
        samples_per_side: 2,
    };
    let fine = ImpostorOptions { grid: ViewGrid::new(9, ViewCoverage::Hemi).unwrap(), ..coarse };
    let measure = |options: &ImpostorOptions| {
        let images = bake_tier(&asset, options).unwrap();
        measure_tier(&asset, &images, options).unwrap()
    };
    let ((coarse_bound, coarse_samples), (fine_bound, fine_samples)) = (measure(&coarse), measure(&fine));
    eprintln!("humanoid, 32 px tiles: 3 x 3 hemi views {coarse_bound:?}; 9 x 9 {fine_bound:?}");
    let clips = asset.manifest().clips.len() as u32;
    assert_eq!((coarse_samples, fine_samples), (4 * clips, 64 * clips));
    for b in [coarse_bound, fine_bound] {
        assert!((0.0..=1.0).contains(&b.min_coverage_iou) && (0.0..=1.0).contains(&b.max_mean_color_error));
    }
    // More views stand closer for the mesh (the views between are nearer a baked one).
    assert!(
        fine_bound.min_coverage_iou > coarse_bound.min_coverage_iou,
        "{fine_bound:?} vs {coarse_bound:?}"
    );
}

#[test]
fn a_card_seen_from_a_baked_view_is_that_view() {
    use vat_core::container::Asset;
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    let bytes = humanoid_file();
    let asset = Asset::parse(&bytes).unwrap();
    let options = ImpostorOptions {
        grid: ViewGrid::new(3, ViewCoverage::Hemi).unwrap(),
        tile_size: 32,
        frames_per_clip: 1,
        samples_per_side: 2,
    };
    let images = bake_tier(&asset, &options).unwrap();
    let directions: Vec<[f32; 3]> = (0..9).map(|v| options.grid.view_direction(v)).collect();
    // Bilinear samples at the tile's own pixel centres read those pixels back exactly (in the
    // images' own colours: the palette's ids do not filter, so pixels on a boundary between two
    // materials would differ there).
    let texels = (images.color.as_slice(), images.normal_depth.as_slice());
    let measure = |tier: &vat_core::format::impostor::ImpostorTier, path| {
        measure_colored(&asset, tier, texels, (1, 0), options.samples_per_side, &directions, false, path)
            .expect("the baked tier measures")
    };
    let (bound, _) = measure(&images.tier, CardPath::ThreeViews);
    assert!(bound.min_coverage_iou > 0.999 && bound.max_mean_color_error < 1e-3, "{bound:?}");
    // The far cards' path reads the nearest texel: with level 0 the last stored, it too reads the
    // baked view's pixels back exactly (the heaviest view of a baked direction is that view).
    let mut level0_only = images.tier.clone();
    level0_only.mip_levels = 1;
    let (bound, _) = measure(&level0_only, CardPath::OneView);
    assert!(bound.min_coverage_iou > 0.999 && bound.max_mean_color_error < 1e-3, "{bound:?}");
}

/// Small tier options for the tests: 3 x 3 hemi views of 16 px, 2 frames per clip.
fn small_options() -> ImpostorOptions {
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    ImpostorOptions {
        grid: ViewGrid::new(3, ViewCoverage::Hemi).unwrap(),
        tile_size: 16,
        frames_per_clip: 2,
        samples_per_side: REFERENCE_SAMPLES_PER_SIDE,
    }
}

/// `bytes` with `images`' tier added, as `vat bake --impostors` writes it (through a pending file).
/// [`verify_tier`] of `file`, a file with a tier.
fn tier_check(file: &[u8]) -> TierCheck {
    let asset = vat_core::container::Asset::parse(file).expect("the file with the tier parses");
    verify_tier(&asset).expect("the tier verifies without an error").expect("the file has a tier")
}

fn with_tier(bytes: &[u8], images: &ImpostorImages) -> Vec<u8> {
    let asset = vat_core::container::Asset::parse(bytes).unwrap();
    let dir = std::env::temp_dir().join(format!("vat-impostor-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tier.vat");
    let pending = write_pending_with_tier(&asset, images, &path).unwrap();
    let written = std::fs::read(pending.temp_path()).unwrap();
    drop(pending);
    // Dropped without a commit: nothing is left at the final path.
    assert!(!path.exists());
    written
}

#[test]
fn the_humanoid_keeps_its_material_ids_for_the_run_time_palette() {
    let bytes = humanoid_file();
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    assert!(asset.manifest().materials.is_empty());
    // No materials: white albedo (the palette colour is picked at run time by id, variant and tint).
    let albedo = vertex_albedo(&asset).unwrap();
    assert_eq!(albedo.len(), asset.manifest().vertex_count as usize);
    assert!(albedo.iter().all(|c| *c == [1.0; 4]), "the humanoid has no vertex colours");
    let ids = vertex_material_ids(&asset).unwrap();
    // Skin, shirt, pants and shoes all show.
    for id in 0..4 {
        assert!(ids.contains(&id), "material {id}");
    }
    // The images carry the ids: every covered texel of level 0 names one of the mesh's materials,
    // uncovered ones 0, and all four show somewhere.
    let images = bake_tier(&asset, &small_options()).unwrap();
    let tier = &images.tier;
    let level0 = (tier.layer_side(0) * tier.layer_side(0) * tier.layer_count()) as usize * 4;
    let mut seen = [false; 256];
    for (c, nd) in images.color[..level0].chunks_exact(4).zip(images.normal_depth[..level0].chunks_exact(4)) {
        if c[3] == 0 {
            assert_eq!(nd[3], 0);
        } else {
            assert!(ids.contains(&u32::from(nd[3])), "id {}", nd[3]);
            seen[nd[3] as usize] = true;
        }
    }
    assert!(seen[..4].iter().all(|&s| s), "{:?}", &seen[..5]);
    // A mip texel takes the id of a texel of the level above it (ids never blend into others).
    assert!(
        images.normal_depth[level0..].chunks_exact(4).all(|nd| nd[3] == 0 || ids.contains(&u32::from(nd[3])))
    );
}

/// The `.vat` bytes of the glTF binary `glb` baked with the default options.
fn glb_file(glb: &[u8], name: &str) -> Vec<u8> {
    let rig = crate::gltf_import::import_slice(glb, None, name).expect("the fixture imports");
    let prepared = crate::prepare::prepare(&rig, &crate::prepare::BakeOptions::default()).expect("it bakes");
    prepared.to_vat_bytes().expect("the bake writes")
}

#[test]
fn a_textured_asset_is_drawn_with_its_base_colour_texture_and_factors() {
    let bytes = glb_file(&crate::testdata::textured_humanoid_glb(), "textured");
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    assert_eq!(m.materials.len(), 2);
    let albedo = vertex_albedo(&asset).unwrap();
    // The cap is its factor (no texture); the body takes many colours from the banded texture.
    let cap = [0.8f32, 0.1, 0.08, 1.0];
    let (element, id_bytes) = asset.stream(vat_core::container::StreamKind::MaterialId).unwrap();
    let ids = decode_stream(element, id_bytes, albedo.len()).unwrap();
    for (id, colour) in ids.iter().zip(&albedo) {
        if id[0] == 1.0 {
            assert_eq!(*colour, cap);
        }
    }
    let mut distinct: Vec<[u32; 3]> =
        albedo.iter().filter(|c| **c != cap).map(|c| [0, 1, 2].map(|i| (c[i] * 64.0) as u32)).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() >= 8, "{} distinct body colours", distinct.len());
    assert!(albedo.iter().flatten().all(|x| (0.0..=1.0).contains(x)));
    // And the tier bakes with them, the same bytes on one thread.
    let options = small_options();
    let images = bake_tier(&asset, &options).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    assert_eq!(pool.install(|| bake_tier(&asset, &options)).unwrap(), images);
}

#[test]
fn texture_coordinates_wrap_as_their_binding_says() {
    use vat_core::container::TextureWrap;
    assert_eq!([-1, 0, 3, 4, 9].map(|x| wrap_texel(x, 4, TextureWrap::Repeat)), [3, 0, 3, 0, 1]);
    assert_eq!([-1, 0, 3, 4, 9].map(|x| wrap_texel(x, 4, TextureWrap::ClampToEdge)), [0, 0, 3, 3, 3]);
    assert_eq!(
        [-1, 0, 3, 4, 7, 8].map(|x| wrap_texel(x, 4, TextureWrap::MirroredRepeat)),
        [0, 0, 3, 3, 0, 0]
    );
    assert_eq!(wrap_texel(i64::MIN, 4, TextureWrap::Repeat), 0);
}

#[test]
fn a_file_with_a_tier_verifies_against_the_bound_it_states_and_tampering_fails() {
    let bytes = humanoid_file();
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    assert_eq!(verify_tier(&asset).unwrap(), None);
    let options = small_options();
    let (images, samples) = bake_measured_tier(&asset, &options).unwrap();
    let clips = asset.manifest().clips.len() as u32;
    assert_eq!(samples, 4 * 2 * clips);
    let b = images.tier.bound;
    assert!(b.min_coverage_iou > 0.05 && b.min_coverage_iou < 1.0, "{b:?}");
    // The humanoid's images are white and its cards take the palette colour of the ids they store:
    // at 16 px, limbs a pixel wide, ids differ from the mesh's on some pixels of every image.
    assert!(b.max_mean_color_error > 0.0 && b.max_mean_color_error < 1.0, "{b:?}");
    let far = images.one_view_bound.expect("the bake measures the far cards");
    assert!(far.min_coverage_iou > 0.05 && far.min_coverage_iou < 1.0, "{far:?}");
    let file = with_tier(&bytes, &images);
    let parsed = vat_core::container::Asset::parse(&file).unwrap();
    assert_eq!(parsed.manifest().format_version(), vat_core::container::FORMAT_VERSION_IMPOSTOR_ONE_VIEW);
    let check = verify_tier(&parsed).unwrap().unwrap();
    assert!(check.passed(), "{check:?}");
    // The same figures from the file's bytes as from the bake's, for both paths.
    assert_eq!((check.stated, check.measured, check.samples), (b, b, samples));
    assert_eq!((check.one_view_stated, check.one_view_measured), (Some(far), far));

    // A tier that states no far-card bound (baked before it existed) is a version 8 file: its far
    // cards are measured, nothing to hold them to.
    let mut unstated = images.clone();
    unstated.one_view_bound = None;
    let unstated_file = with_tier(&bytes, &unstated);
    let parsed = vat_core::container::Asset::parse(&unstated_file).expect("a version 8 tier parses");
    assert_eq!(parsed.manifest().format_version(), vat_core::container::FORMAT_VERSION_IMPOSTORS);
    let check = tier_check(&unstated_file);
    assert_eq!((check.one_view_stated, check.one_view_measured), (None, far));
    assert!(check.passed(), "{check:?}");

    // A far-card bound claiming better than measured fails, naming the far cards.
    let mut boasting = images.clone();
    boasting.one_view_bound = Some(ImpostorBound { min_coverage_iou: 1.0, ..far });
    let check = tier_check(&with_tier(&bytes, &boasting));
    assert_eq!(check.failures().len(), 1, "{check:?}");
    assert!(check.failures()[0].contains("far-card (one view) coverage IoU"), "{check:?}");

    // A bound edited to claim better than measured fails.
    let mut boasting = images.clone();
    boasting.tier.bound.min_coverage_iou = 1.0;
    let check = tier_check(&with_tier(&bytes, &boasting));
    assert!(!check.passed() && check.failures()[0].contains("coverage IoU"), "{check:?}");
    // (The humanoid's colours agree exactly where both cover, so no colour bound can claim
    // better: the corrupted texels below fail on colour instead.)

    // Corrupted colour texels (every covered texel of level 0 turned green) fail on colour.
    let mut corrupt = images.clone();
    let level0 =
        (corrupt.tier.layer_side(0) * corrupt.tier.layer_side(0) * corrupt.tier.layer_count()) as usize;
    for texel in corrupt.color[..level0 * 4].chunks_exact_mut(4) {
        if texel[3] > 0 {
            texel[..3].copy_from_slice(&[0, 255, 0]);
        }
    }
    let check = tier_check(&with_tier(&bytes, &corrupt));
    assert!(!check.passed(), "{check:?}");
    assert!(check.measured.max_mean_color_error > b.max_mean_color_error + 0.1, "{check:?}");
    // The far cards read level 2 alone: level 0's texels do not change them.
    assert_eq!(check.one_view_measured, far, "{check:?}");
    // Erased coverage at level 2 fails the far cards alone.
    let mut far_erased = images.clone();
    let side = |l: u32| (far_erased.tier.layer_side(l).pow(2) * far_erased.tier.layer_count()) as usize * 4;
    let level2 = side(0) + side(1)..side(0) + side(1) + side(2);
    for texel in far_erased.color[level2].chunks_exact_mut(4) {
        texel.copy_from_slice(&[0; 4]);
    }
    let check = tier_check(&with_tier(&bytes, &far_erased));
    assert_eq!(check.measured, b, "level 2 is not the near cards'");
    assert!(check.one_view_measured.min_coverage_iou < 0.01, "{check:?}");
    assert!(!check.passed() && check.failures()[0].contains("far-card"), "{check:?}");
    // Erased coverage fails on IoU.
    let mut erased = images;
    for texel in erased.color[..level0 * 4].chunks_exact_mut(4).step_by(2) {
        texel.copy_from_slice(&[0; 4]);
    }
    let check = tier_check(&with_tier(&bytes, &erased));
    assert!(check.measured.min_coverage_iou < b.min_coverage_iou - 0.01, "{check:?}");
    assert!(!check.passed());
}

#[test]
fn a_second_tier_is_refused() {
    let bytes = humanoid_file();
    let asset = vat_core::container::Asset::parse(&bytes).unwrap();
    let images = bake_tier(&asset, &small_options()).unwrap();
    let file = with_tier(&bytes, &images);
    let parsed = vat_core::container::Asset::parse(&file).unwrap();
    let path = std::env::temp_dir().join(format!("vat-impostor-second-{}.vat", std::process::id()));
    assert!(matches!(write_pending_with_tier(&parsed, &images, &path), Err(BakeError::InvalidInput { .. })));
}

#[test]
fn options_name_their_flag_and_sizes_are_checked_before_drawing() {
    use vat_core::format::impostor::{ViewCoverage, ViewGrid};
    let flag = |options: ImpostorOptions| match validate_options(&options) {
        Err(BakeError::InvalidOption { option, .. }) => option,
        other => panic!("{options:?}: {other:?}"),
    };
    let grid = |n| ViewGrid { views_per_side: n, coverage: ViewCoverage::Full };
    assert!(validate_options(&ImpostorOptions::default()).is_ok());
    assert_eq!(flag(ImpostorOptions { grid: grid(1), ..Default::default() }), "--impostor-views");
    assert_eq!(flag(ImpostorOptions { grid: grid(33), ..Default::default() }), "--impostor-views");
    assert_eq!(flag(ImpostorOptions { tile_size: 96, ..Default::default() }), "--impostor-tile");
    assert_eq!(flag(ImpostorOptions { tile_size: 1024, ..Default::default() }), "--impostor-tile");
    assert_eq!(flag(ImpostorOptions { frames_per_clip: 0, ..Default::default() }), "--impostor-frames");
    assert_eq!(
        flag(ImpostorOptions { samples_per_side: 0, ..Default::default() }),
        "impostor samples per side"
    );
    // 40 clips x 8 frames is over 256 layers.
    let too_many = check_tier_size(&ImpostorOptions::default(), 40, 0, u64::MAX);
    assert!(
        matches!(too_many, Err(BakeError::InvalidOption { option: "--impostor-frames", .. })),
        "{too_many:?}"
    );
    // The default tier of 8 clips: 64 layers of 512 x 512 texels and their mips.
    let bytes = check_tier_size(&ImpostorOptions::default(), 8, 0, u64::MAX).unwrap();
    assert_eq!(bytes, 64 * 512 * 512 * 4 + 64 * 512 * 512 * 4 / 3);
    assert!(matches!(
        check_tier_size(&ImpostorOptions::default(), 8, 0, 1 << 20),
        Err(BakeError::OverBudget { .. })
    ));
}

/// Mean linear colour of the covered texels of level 0 of colour set `set` (of `sets`).
fn mean_covered_color(images: &ImpostorImages, sets: u32, set: u32) -> [f32; 3] {
    let range = images.tier.color_level_range(sets, set, 0);
    let texels = &images.color[range.start as usize..range.end as usize];
    let (mut sum, mut n) = ([0.0f32; 3], 0.0f32);
    for t in texels.chunks_exact(4).filter(|t| t[3] == 255) {
        for (s, &c) in sum.iter_mut().zip(&t[..3]) {
            *s += srgb_to_linear(c);
        }
        n += 1.0;
    }
    sum.map(|s| s / n.max(1.0))
}

#[test]
fn each_material_variant_gets_colour_images_of_its_own_verified_against_its_mesh() {
    let bytes = glb_file(&crate::testdata::textured_humanoid_with_variants_glb(), "variants");
    let asset = vat_core::container::Asset::parse(&bytes).expect("the bake parses");
    let options = small_options();
    assert_eq!(material_variant_sets(asset.manifest(), &options), (2, 0));
    let (images, samples) = bake_measured_tier(&asset, &options).expect("the tier bakes");
    assert_eq!(images.material_variants, 2);
    assert_eq!(images.color.len(), 3 * images.normal_depth.len());
    // Every set has the coverage of the first at every level: only the colours differ.
    for level in 0..images.tier.mip_levels {
        let alpha = |set: u32| {
            let r = images.tier.color_level_range(3, set, level);
            images.color[r.start as usize..r.end as usize].chunks_exact(4).map(|t| t[3]).collect::<Vec<_>>()
        };
        assert!(alpha(1) == alpha(0) && alpha(2) == alpha(0), "level {level}");
    }
    // "red" draws the body in the cap's red, "blue" in blue: each set leans that way against the
    // authored one.
    let [authored, red, blue] = [0, 1, 2].map(|set| mean_covered_color(&images, 3, set));
    assert!(red[0] > authored[0] && red[2] < authored[2], "{authored:?} {red:?}");
    assert!(blue[2] > authored[2] && blue[0] < authored[0], "{authored:?} {blue:?}");

    let file = with_tier(&bytes, &images);
    let parsed = vat_core::container::Asset::parse(&file).expect("the file with its tier parses");
    assert_eq!(parsed.manifest().format_version(), vat_core::container::FORMAT_VERSION_IMPOSTOR_VARIANTS);
    assert_eq!(parsed.manifest().impostor_material_variants, 2);
    let check = tier_check(&file);
    assert!(check.passed(), "{check:?}");
    // Every set measured: three times the images of one set.
    let clips = asset.manifest().clips.len() as u32;
    assert_eq!((check.samples, samples), (3 * 4 * 2 * clips, 3 * 4 * 2 * clips));

    // The blue variant's images replaced by the authored ones: the blue mesh no longer matches.
    let mut swapped = images.clone();
    let (r0, r2) = (swapped.tier.color_level_range(3, 0, 0), swapped.tier.color_level_range(3, 2, 0));
    let authored_level0 = swapped.color[r0.start as usize..r0.end as usize].to_vec();
    swapped.color[r2.start as usize..r2.end as usize].copy_from_slice(&authored_level0);
    let check = tier_check(&with_tier(&bytes, &swapped));
    assert!(!check.passed() && check.failures()[0].contains("mean colour error"), "{check:?}");

    // The same bytes on one thread.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let baked = |_| bake_tier(&asset, &options).expect("the tier bakes");
    assert_eq!(pool.install(|| baked(())), baked(()));
}

#[test]
fn variant_colour_sets_stop_at_the_layers_a_tier_holds() {
    let bytes = glb_file(&crate::testdata::textured_humanoid_with_variants_glb(), "variants");
    let asset = vat_core::container::Asset::parse(&bytes).expect("the bake parses");
    let mut m = asset.manifest().clone();
    m.clips.truncate(1);
    let variant = m.material_variants[0].clone();
    m.material_variants = vec![variant; 5];
    // One clip of 64 images: 256 layers hold 4 sets, the authored materials' and 3 variants'.
    let options = |frames_per_clip| ImpostorOptions { frames_per_clip, ..small_options() };
    assert_eq!(material_variant_sets(&m, &options(64)), (3, 2));
    assert_eq!(material_variant_sets(&m, &options(128)), (1, 4));
    assert_eq!(material_variant_sets(&m, &options(256)), (0, 5));
    assert_eq!(material_variant_sets(&m, &options(8)), (5, 0));
    // Without materials the palette varies the cards at run time: no sets.
    m.materials.clear();
    assert_eq!(material_variant_sets(&m, &options(8)), (0, 0));
    // The colour sets count against the memory budget.
    let one = check_tier_size(&small_options(), 1, 0, u64::MAX).expect("a small tier fits");
    assert!(check_tier_size(&small_options(), 1, 5, one * 3 * 2).is_err());
    assert!(check_tier_size(&small_options(), 1, 0, one * 3 * 2).is_ok());
}

#[test]
fn a_skin_residual_file_bakes_its_tier_from_the_frames_it_decodes_to() {
    // The tier was refused for the compressed format ("a format with a texel per vertex per
    // frame"). Its images now draw the frames its skin and residual decode to, and `vat verify`'s
    // measure of the written file holds the bound it states, as for a packed64 file.
    use vat_core::format::encoding::VertexFormat;
    use vat_core::format::reference::{ObjectFrames, SkinResidualView, decode_skin_residual_frame_at};
    let rig = crate::procgen::humanoid();
    let options = crate::prepare::BakeOptions {
        frames: Some(4),
        lods: crate::lods::LodOptions::Count(1),
        format: VertexFormat::SkinResidual,
        ..Default::default()
    };
    let bytes = crate::prepare::prepare(&rig, &options).expect("it bakes").to_vat_bytes().expect("its bytes");
    let asset = vat_core::container::Asset::parse(&bytes).expect("the written file reads back");
    // What the tier draws for clip 1's second image is the skin-residual decode at phase 1/2.
    let frames = ObjectFrames::from_asset(&asset).expect("it has a vertex animation");
    assert!(matches!(frames, ObjectFrames::SkinResidual(_)));
    let n = frames.vertex_count();
    let (drawn_p, drawn_n) = object_frame(&frames, 1, 1, 2, n).expect("the frame decodes");
    let view = SkinResidualView::from_asset(&asset).expect("it is in skin-residual");
    let instance = vat_core::instance::InstanceRecord {
        clip_a: 1,
        phase_offset_a: 0.5,
        rate_a: 0.0,
        ..Default::default()
    };
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    decode_skin_residual_frame_at(
        &view,
        &instance,
        0.0,
        vat_core::playback::Interpolation::Linear,
        &mut p,
        &mut nrm,
    )
    .expect("the skin-residual frame decodes");
    assert!(drawn_p.iter().zip(&p).all(|(a, b)| a.to_array() == *b));
    assert!(drawn_n.iter().zip(&nrm).all(|(a, b)| a.to_array() == *b));
    let (images, _) = bake_measured_tier(&asset, &small_options()).expect("the tier bakes");
    let check = tier_check(&with_tier(&bytes, &images));
    assert!(check.passed(), "{:?}", check.failures());
}
