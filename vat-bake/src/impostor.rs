//! The impostor tier's images (issue 33): a deterministic CPU rasteriser that renders one frame of a
//! body from one view of [`vat_core::format::impostor::ViewGrid`] into a small image of colour,
//! coverage, normal and depth. No GPU is involved, every step is a fixed sequence of `f32`
//! operations on one thread per image, so the bytes are the same on every machine, run and thread
//! count.
//!
//! Each pixel is covered by `samples_per_side^2` samples at fixed positions; a sample keeps the
//! nearest triangle (largest view depth; on a tie the earlier triangle), and the pixel's colour and
//! normal are the mean of its covered samples, its coverage the fraction covered. Triangles are drawn
//! from both sides (an impostor shows whatever faces the camera). The view is the orthographic image
//! of the body's bounding sphere that [`vat_core::format::impostor::project_to_view`] defines.

use glam::Vec3;
use vat_core::format::encoding::oct_encode_f32;
use vat_core::format::impostor::project_to_view;

use crate::{BakeError, Result};

/// The largest image side times samples per side the rasteriser accepts (a 4,096-sample-wide
/// buffer: 4 bytes of depth and 28 of attributes per sample, 512 MiB at the limit).
pub const MAX_SAMPLES_PER_IMAGE_SIDE: u32 = 4096;

/// One frame of a body to draw: object-space positions (metres) and unit normals per vertex, an
/// optional linear RGBA colour per vertex (white when empty), and triangles as vertex indices.
#[derive(Debug, Clone, Copy)]
pub struct ImpostorMesh<'a> {
    /// Positions, metres.
    pub positions: &'a [Vec3],
    /// Unit normals, one per position.
    pub normals: &'a [Vec3],
    /// Linear RGBA colours, one per position, or empty for white.
    pub colors: &'a [[f32; 4]],
    /// Triangles, three indices each.
    pub indices: &'a [u32],
}

/// How an image is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RasterOptions {
    /// Image side in pixels (at least 1).
    pub size: u32,
    /// Samples per pixel side (at least 1): `samples_per_side^2` coverage levels per pixel.
    pub samples_per_side: u32,
}

/// One view's image, row-major from the top-left pixel, `size * size` pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewImage {
    /// Image side in pixels.
    pub size: u32,
    /// sRGB-encoded colour (the mean of the covered samples' linear colours) and coverage in
    /// alpha (`round(255 * covered / samples)`); zero where nothing is covered.
    pub color: Vec<[u8; 4]>,
    /// The mean covered normal (object space) octahedrally encoded in R and G
    /// (`round((o + 1) / 2 * 255)`), the mean covered view depth in B (`round((depth + 1) / 2 *
    /// 255)`, depth in `[-1, 1]` positive towards the viewer), coverage in A; zero where nothing is
    /// covered.
    pub normal_depth: Vec<[u8; 4]>,
}

/// What a covered sample holds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    depth: f32,
    normal: [f32; 3],
    color: [f32; 4],
}

/// Renders `mesh` as seen from `direction` (unit, towards the viewer) inside the bounding sphere
/// `(centre, radius)`.
///
/// # Errors
/// [`BakeError::InvalidOption`] for a zero size or sample count or a sample buffer wider than
/// [`MAX_SAMPLES_PER_IMAGE_SIDE`]; [`BakeError::InvalidInput`] for a radius that is not positive and
/// finite, normals or colours whose count differs from the positions', an index past the positions,
/// an index count that is not a multiple of 3, or a position or normal that is not finite.
pub fn render_view(
    mesh: &ImpostorMesh<'_>,
    direction: [f32; 3],
    centre: [f32; 3],
    radius: f32,
    options: &RasterOptions,
) -> Result<ViewImage> {
    check(mesh, radius, options)?;
    let width = options.size * options.samples_per_side;
    let mut samples: Vec<Option<Sample>> = vec![None; (width as usize) * (width as usize)];
    let projected: Vec<[f32; 3]> = mesh
        .positions
        .iter()
        .map(|p| {
            let [u, v, depth] = project_to_view(p.to_array(), direction, centre, radius);
            [u * width as f32, v * width as f32, depth]
        })
        .collect();
    for tri in mesh.indices.chunks_exact(3) {
        let corners = [tri[0] as usize, tri[1] as usize, tri[2] as usize];
        draw_triangle(mesh, &projected, corners, width, &mut samples);
    }
    Ok(resolve(&samples, options))
}

fn check(mesh: &ImpostorMesh<'_>, radius: f32, options: &RasterOptions) -> Result<()> {
    let option = |problem: String| BakeError::InvalidOption { option: "impostor image", problem };
    let input = |problem: String| BakeError::InvalidInput { part: "impostor mesh".into(), problem };
    if options.size == 0 || options.samples_per_side == 0 {
        return Err(option(format!(
            "size {} and samples per side {} must both be at least 1",
            options.size, options.samples_per_side
        )));
    }
    if options.size.saturating_mul(options.samples_per_side) > MAX_SAMPLES_PER_IMAGE_SIDE {
        return Err(option(format!(
            "{} pixels x {} samples per side is over {MAX_SAMPLES_PER_IMAGE_SIDE} samples per image side",
            options.size, options.samples_per_side
        )));
    }
    if !(radius.is_finite() && radius > 0.0) {
        return Err(input(format!("bounding radius {radius} is not a positive finite number")));
    }
    let n = mesh.positions.len();
    if mesh.normals.len() != n || !(mesh.colors.is_empty() || mesh.colors.len() == n) {
        return Err(input(format!(
            "{n} positions but {} normals and {} colours",
            mesh.normals.len(),
            mesh.colors.len()
        )));
    }
    if !mesh.indices.len().is_multiple_of(3) {
        return Err(input(format!("{} indices is not a whole number of triangles", mesh.indices.len())));
    }
    if let Some(i) = mesh.indices.iter().find(|&&i| i as usize >= n) {
        return Err(input(format!("index {i} is past the {n} positions")));
    }
    if let Some(v) = (0..n).find(|&v| !(mesh.positions[v].is_finite() && mesh.normals[v].is_finite())) {
        return Err(input(format!("vertex {v} has a position or normal that is not finite")));
    }
    Ok(())
}

/// `(b - a) x (p - a)` in the image plane: positive on one side of edge `a -> b`.
fn edge(a: [f32; 3], b: [f32; 3], px: f32, py: f32) -> f32 {
    (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0])
}

fn draw_triangle(
    mesh: &ImpostorMesh<'_>,
    projected: &[[f32; 3]],
    [i0, i1, i2]: [usize; 3],
    width: u32,
    samples: &mut [Option<Sample>],
) {
    let (a, mut b, mut c) = (projected[i0], projected[i1], projected[i2]);
    let (mut j1, mut j2) = (i1, i2);
    let mut area = edge(a, b, c[0], c[1]);
    if area == 0.0 || !area.is_finite() {
        return;
    }
    // Both sides are drawn: a clockwise triangle is drawn as its counter-clockwise twin.
    if area < 0.0 {
        std::mem::swap(&mut b, &mut c);
        std::mem::swap(&mut j1, &mut j2);
        area = -area;
    }
    let last = (width - 1) as f32;
    let lo_x = (a[0].min(b[0]).min(c[0]) - 0.5).ceil().clamp(0.0, last) as u32;
    let hi_x = (a[0].max(b[0]).max(c[0]) - 0.5).floor().clamp(-1.0, last);
    let lo_y = (a[1].min(b[1]).min(c[1]) - 0.5).ceil().clamp(0.0, last) as u32;
    let hi_y = (a[1].max(b[1]).max(c[1]) - 0.5).floor().clamp(-1.0, last);
    if hi_x < 0.0 || hi_y < 0.0 {
        return;
    }
    let (hi_x, hi_y) = (hi_x as u32, hi_y as u32);
    let color = |i: usize| mesh.colors.get(i).copied().unwrap_or([1.0; 4]);
    let (n0, n1, n2) = (mesh.normals[i0], mesh.normals[j1], mesh.normals[j2]);
    let (c0, c1, c2) = (color(i0), color(j1), color(j2));
    let inv = 1.0 / area;
    for y in lo_y..=hi_y {
        let py = y as f32 + 0.5;
        for x in lo_x..=hi_x {
            let px = x as f32 + 0.5;
            // Barycentric weights of a, b and c.
            let wa = edge(b, c, px, py) * inv;
            let wb = edge(c, a, px, py) * inv;
            let wc = edge(a, b, px, py) * inv;
            if wa < 0.0 || wb < 0.0 || wc < 0.0 {
                continue;
            }
            let depth = a[2] * wa + b[2] * wb + c[2] * wc;
            let slot = &mut samples[(y * width + x) as usize];
            if slot.is_some_and(|s| s.depth >= depth) {
                continue;
            }
            let normal = (n0 * wa + n1 * wb + n2 * wc).to_array();
            let mut rgba = [0.0; 4];
            for (k, out) in rgba.iter_mut().enumerate() {
                *out = c0[k] * wa + c1[k] * wb + c2[k] * wc;
            }
            *slot = Some(Sample { depth, normal, color: rgba });
        }
    }
}

fn resolve(samples: &[Option<Sample>], options: &RasterOptions) -> ViewImage {
    let (size, s) = (options.size as usize, options.samples_per_side as usize);
    let width = size * s;
    let total = (s * s) as f32;
    let mut color = vec![[0u8; 4]; size * size];
    let mut normal_depth = vec![[0u8; 4]; size * size];
    for py in 0..size {
        for px in 0..size {
            let (mut covered, mut depth, mut normal, mut rgba) = (0u32, 0.0f32, [0.0f32; 3], [0.0f32; 4]);
            for sy in 0..s {
                let row = (py * s + sy) * width + px * s;
                for sample in samples[row..row + s].iter().flatten() {
                    covered += 1;
                    depth += sample.depth;
                    for (sum, x) in normal.iter_mut().zip(sample.normal) {
                        *sum += x;
                    }
                    for (sum, x) in rgba.iter_mut().zip(sample.color) {
                        *sum += x;
                    }
                }
            }
            if covered == 0 {
                continue;
            }
            let n = covered as f32;
            let coverage = unorm8(covered as f32 / total);
            let [r, g, b, _] = rgba.map(|c| c / n);
            color[py * size + px] = [srgb8(r), srgb8(g), srgb8(b), coverage];
            let [ox, oy] = oct_encode_f32(normal);
            normal_depth[py * size + px] = [
                unorm8((ox + 1.0) * 0.5),
                unorm8((oy + 1.0) * 0.5),
                unorm8((depth / n + 1.0) * 0.5),
                coverage,
            ];
        }
    }
    ViewImage { size: options.size, color, normal_depth }
}

/// `x` in `[0, 1]` (clamped) to 8 bits, rounded to nearest.
fn unorm8(x: f32) -> u8 {
    (x.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// A linear colour component to 8-bit sRGB (the sRGB transfer function, rounded to nearest).
fn srgb8(linear: f32) -> u8 {
    let l = linear.clamp(0.0, 1.0);
    let s = if l <= 0.003_130_8 { l * 12.92 } else { 1.055 * l.powf(1.0 / 2.4) - 0.055 };
    unorm8(s)
}

/// How an impostor tier is baked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImpostorOptions {
    /// The view directions.
    pub grid: vat_core::format::impostor::ViewGrid,
    /// Pixels per side of one view's image, a power of two in
    /// [`vat_core::format::impostor::TILE_SIZES`].
    pub tile_size: u32,
    /// Images per clip, evenly spaced in phase, 1 to
    /// [`vat_core::format::impostor::MAX_FRAMES_PER_CLIP`].
    pub frames_per_clip: u32,
    /// Samples per pixel side when drawing (coverage levels per pixel: its square).
    pub samples_per_side: u32,
}

impl Default for ImpostorOptions {
    /// 8 x 8 hemi views of 64 pixels, 8 images per clip, 4 x 4 samples per pixel: sized for
    /// characters a few dozen pixels tall.
    fn default() -> Self {
        ImpostorOptions {
            grid: vat_core::format::impostor::ViewGrid {
                views_per_side: 8,
                coverage: vat_core::format::impostor::ViewCoverage::Hemi,
            },
            tile_size: 64,
            frames_per_clip: 8,
            samples_per_side: 4,
        }
    }
}

/// The images of an impostor tier, ready for a container: the two blobs in the layout
/// [`vat_core::format::impostor::ImpostorTier`] documents, and the tier's geometry (its blob ids
/// and bound are the writer's and verification's to fill in).
#[derive(Debug, Clone, PartialEq)]
pub struct ImpostorImages {
    /// The tier with placeholder blob ids (0) and bound (perfect agreement).
    pub tier: vat_core::format::impostor::ImpostorTier,
    /// Colour texels, every mip level of every layer.
    pub color: Vec<u8>,
    /// Normal-depth texels, the same layout.
    pub normal_depth: Vec<u8>,
}

/// Renders the impostor tier of a soft (or skeletal) asset from its own decode: for every clip,
/// `frames_per_clip` images at phases `k / frames_per_clip`, each from every view of the grid, of
/// LOD 0 as vat-core's CPU reference decodes it (linear interpolation, as the mesh is drawn), inside
/// the sphere around the asset's animation bounds, white (materials are not drawn yet); then a mip
/// chain per tile down to one pixel. Views render in parallel; the bytes do not depend on the thread
/// count.
///
/// # Errors
/// [`BakeError::InvalidOption`] for options out of range; [`BakeError::InvalidInput`] for an asset
/// that is not a soft body with a vertex animation and LOD 0; the reference decoder's errors.
pub fn bake_tier(
    asset: &vat_core::container::Asset<'_>,
    options: &ImpostorOptions,
) -> Result<ImpostorImages> {
    use rayon::prelude::*;
    use vat_core::format::impostor::{
        ImpostorBound, ImpostorTier, MAX_FRAMES_PER_CLIP, TILE_SIZES, ViewGrid,
    };
    use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
    let option = |problem: String| BakeError::InvalidOption { option: "--impostors", problem };
    ViewGrid::new(options.grid.views_per_side, options.grid.coverage).map_err(|e| option(e.to_string()))?;
    if !(TILE_SIZES.contains(&options.tile_size) && options.tile_size.is_power_of_two()) {
        return Err(option(format!("tile size {} is not a power of two from 8 to 512", options.tile_size)));
    }
    if !(1..=MAX_FRAMES_PER_CLIP).contains(&options.frames_per_clip) {
        return Err(option(format!(
            "{} frames per clip is not 1 to {MAX_FRAMES_PER_CLIP}",
            options.frames_per_clip
        )));
    }
    let m = asset.manifest();
    let input = |problem: &str| BakeError::InvalidInput { part: m.name.clone(), problem: problem.to_owned() };
    let bounds = m.animation_bounds().ok_or_else(|| input("has no animation bounds: no impostor tier"))?;
    let view =
        VertexAnimationView::from_asset(asset).map_err(|e| input(&format!("no impostor tier: {e}")))?;
    let indices = lod0_indices(asset).ok_or_else(|| input("has no LOD 0 triangles: no impostor tier"))?;
    let centre: [f32; 3] = std::array::from_fn(|i| bounds.min[i] + bounds.extent[i] * 0.5);
    let radius = bounds.extent.iter().map(|e| e * e).sum::<f32>().sqrt() * 0.5;
    let radius = if radius > 0.0 { radius } else { 1e-3 };
    let raster = RasterOptions { size: options.tile_size, samples_per_side: options.samples_per_side };
    let n = m.vertex_count as usize;
    let views = options.grid.view_count();
    let frames = options.frames_per_clip;
    // Every (clip, frame) decoded once, then every view of it drawn.
    let images: Vec<Vec<ViewImage>> = (0..m.clips.len() as u32 * frames)
        .into_par_iter()
        .map(|layer| {
            let (clip, k) = (layer / frames, layer % frames);
            let mut positions = vec![[0.0f32; 3]; n];
            let mut normals = vec![[0.0f32; 3]; n];
            decode_object_frame(
                &view,
                clip,
                k as f32 / frames as f32,
                vat_core::playback::Interpolation::Linear,
                &mut positions,
                &mut normals,
            )?;
            let positions: Vec<Vec3> = positions.into_iter().map(Vec3::from).collect();
            let normals: Vec<Vec3> = normals.into_iter().map(Vec3::from).collect();
            let mesh =
                ImpostorMesh { positions: &positions, normals: &normals, colors: &[], indices: &indices };
            (0..views)
                .map(|v| render_view(&mesh, options.grid.view_direction(v), centre, radius, &raster))
                .collect()
        })
        .collect::<Result<_>>()?;
    let mip_levels = options.tile_size.ilog2() + 1;
    let (color, normal_depth) =
        assemble_layers(&images, options.grid.views_per_side, options.tile_size, mip_levels);
    let tier = ImpostorTier {
        grid: options.grid,
        tile_size: options.tile_size,
        frames_per_clip: vec![frames; m.clips.len()],
        centre,
        radius,
        mip_levels,
        color: vat_core::container::BlobId(0),
        normal_depth: vat_core::container::BlobId(0),
        bound: ImpostorBound { min_coverage_iou: 1.0, max_mean_color_error: 0.0 },
    };
    Ok(ImpostorImages { tier, color, normal_depth })
}

/// How closely a baked tier stands for its mesh: at the centre of every cell of the view grid (the
/// directions furthest from any baked view) and every baked frame, the mesh drawn from that
/// direction against the card reconstructed from the tier ([`vat_core::format::impostor::card_samples`]:
/// three views blended, each sampled bilinearly within its tile, colours blended by coverage). Returns
/// the smallest coverage intersection-over-union (`sum min(a, b) / sum max(a, b)` over the pixels'
/// coverages) and the largest mean absolute colour difference over the pixels the mesh covers at
/// least half (sRGB, fraction of full scale), with the number of images compared.
///
/// # Errors
/// As [`bake_tier`], for the same asset and options.
pub fn measure_tier(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    options: &ImpostorOptions,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    use vat_core::format::impostor::square_to_direction;
    let tier = &images.tier;
    let n = tier.grid.views_per_side;
    let last = (n - 1) as f32;
    let directions: Vec<[f32; 3]> = (0..(n - 1) * (n - 1))
        .map(|c| {
            let (i, j) = ((c % (n - 1)) as f32 + 0.5, (c / (n - 1)) as f32 + 0.5);
            square_to_direction([2.0 * i / last - 1.0, 2.0 * j / last - 1.0], tier.grid.coverage)
        })
        .collect();
    measure_at(asset, images, options, &directions)
}

/// [`measure_tier`] at the given directions (towards the viewer).
fn measure_at(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    options: &ImpostorOptions,
    directions: &[[f32; 3]],
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    use rayon::prelude::*;
    use vat_core::format::impostor::{ImpostorBound, card_samples};
    use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
    let m = asset.manifest();
    let input = |problem: String| BakeError::InvalidInput { part: m.name.clone(), problem };
    let view = VertexAnimationView::from_asset(asset).map_err(|e| input(e.to_string()))?;
    let indices = lod0_indices(asset).ok_or_else(|| input("has no LOD 0 triangles".into()))?;
    let tier = &images.tier;
    let raster = RasterOptions { size: tier.tile_size, samples_per_side: options.samples_per_side };
    let frames = options.frames_per_clip;
    let per_layer: Vec<(f32, f32)> = (0..tier.layer_count() as u32)
        .into_par_iter()
        .map(|layer| {
            let (clip, k) = (layer / frames, layer % frames);
            let count = m.vertex_count as usize;
            let (mut positions, mut normals) = (vec![[0.0f32; 3]; count], vec![[0.0f32; 3]; count]);
            let phase = k as f32 / frames as f32;
            let interp = vat_core::playback::Interpolation::Linear;
            decode_object_frame(&view, clip, phase, interp, &mut positions, &mut normals)?;
            let positions: Vec<Vec3> = positions.into_iter().map(Vec3::from).collect();
            let normals: Vec<Vec3> = normals.into_iter().map(Vec3::from).collect();
            let mesh =
                ImpostorMesh { positions: &positions, normals: &normals, colors: &[], indices: &indices };
            let (mut iou, mut error) = (1.0f32, 0.0f32);
            for &d in directions {
                let reference = render_view(&mesh, d, tier.centre, tier.radius, &raster)?;
                let size = tier.tile_size as usize;
                let (mut inter, mut union, mut diff, mut pixels) = (0.0f32, 0.0f32, 0.0f32, 0u32);
                for p in 0..size * size {
                    let (u, v) =
                        (((p % size) as f32 + 0.5) / size as f32, ((p / size) as f32 + 0.5) / size as f32);
                    let depth = |view: u32, uv: [f32; 2]| stored_depth(images, layer as usize, view, uv);
                    let (alpha, rgb) =
                        reconstruct(images, layer as usize, card_samples(&tier.grid, d, u, v, depth));
                    let r = reference.color[p];
                    let ra = f32::from(r[3]) / 255.0;
                    inter += ra.min(alpha);
                    union += ra.max(alpha);
                    if ra >= 0.5 {
                        let rgb = rgb.map(|c| f32::from(srgb8(c)));
                        diff += (0..3).map(|i| (rgb[i] - f32::from(r[i])).abs()).sum::<f32>() / (3.0 * 255.0);
                        pixels += 1;
                    }
                }
                iou = iou.min(if union > 0.0 { inter / union } else { 1.0 });
                error = error.max(if pixels > 0 { diff / pixels as f32 } else { 0.0 });
            }
            Ok((iou, error))
        })
        .collect::<Result<_>>()?;
    let bound = per_layer.iter().fold(
        ImpostorBound { min_coverage_iou: 1.0, max_mean_color_error: 0.0 },
        |b, &(iou, error)| ImpostorBound {
            min_coverage_iou: b.min_coverage_iou.min(iou),
            max_mean_color_error: b.max_mean_color_error.max(error),
        },
    );
    Ok((bound, (per_layer.len() * directions.len()) as u32))
}

/// A card pixel from three views of `layer` (level 0): coverage `sum w a_k` and the coverage-weighted
/// linear colour, each view sampled bilinearly with its coordinates clamped inside its own tile.
fn reconstruct(images: &ImpostorImages, layer: usize, samples: [(u32, f32, [f32; 2]); 3]) -> (f32, [f32; 3]) {
    let tier = &images.tier;
    let (n, tile) = (tier.grid.views_per_side as usize, tier.tile_size as usize);
    let side = n * tile;
    let texel = |view: usize, x: usize, y: usize| {
        let (i, j) = (view % n, view / n);
        let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4;
        let c = &images.color[at..at + 4];
        (f32::from(c[3]) / 255.0, [srgb_to_linear(c[0]), srgb_to_linear(c[1]), srgb_to_linear(c[2])])
    };
    let (mut alpha, mut rgb) = (0.0f32, [0.0f32; 3]);
    for (view, weight, [u, v]) in samples {
        if weight <= 0.0 {
            continue;
        }
        let fx = (u * tile as f32 - 0.5).clamp(0.0, (tile - 1) as f32);
        let fy = (v * tile as f32 - 0.5).clamp(0.0, (tile - 1) as f32);
        let (x0, y0) = (fx.floor() as usize, fy.floor() as usize);
        let (x1, y1) = ((x0 + 1).min(tile - 1), (y0 + 1).min(tile - 1));
        let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
        for (x, y, w) in [
            (x0, y0, (1.0 - tx) * (1.0 - ty)),
            (x1, y0, tx * (1.0 - ty)),
            (x0, y1, (1.0 - tx) * ty),
            (x1, y1, tx * ty),
        ] {
            let (a, c) = texel(view as usize, x, y);
            let w = w * weight * a;
            alpha += w;
            for (sum, s) in rgb.iter_mut().zip(c) {
                *sum += s * w;
            }
        }
    }
    if alpha > 0.0 {
        rgb = rgb.map(|c| c / alpha);
    }
    (alpha, rgb)
}

/// View `view`'s stored depth (`2 b - 1` of the normal-depth texels' blue channel, level 0 of
/// `layer`) at `uv`, sampled bilinearly with the coordinates clamped inside the view's tile, as the
/// card's depth correction reads it ([`vat_core::format::impostor::card_samples`]).
fn stored_depth(images: &ImpostorImages, layer: usize, view: u32, [u, v]: [f32; 2]) -> f32 {
    let tier = &images.tier;
    let (n, tile) = (tier.grid.views_per_side as usize, tier.tile_size as usize);
    let side = n * tile;
    let (i, j) = (view as usize % n, view as usize / n);
    let blue = |x: usize, y: usize| {
        let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4 + 2;
        f32::from(images.normal_depth[at]) / 255.0
    };
    let fx = (u * tile as f32 - 0.5).clamp(0.0, (tile - 1) as f32);
    let fy = (v * tile as f32 - 0.5).clamp(0.0, (tile - 1) as f32);
    let (x0, y0) = (fx.floor() as usize, fy.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(tile - 1), (y0 + 1).min(tile - 1));
    let (tx, ty) = (fx - x0 as f32, fy - y0 as f32);
    let b = (blue(x0, y0) * (1.0 - tx) + blue(x1, y0) * tx) * (1.0 - ty)
        + (blue(x0, y1) * (1.0 - tx) + blue(x1, y1) * tx) * ty;
    2.0 * b - 1.0
}

/// LOD 0's triangles as vertex indices.
fn lod0_indices(asset: &vat_core::container::Asset<'_>) -> Option<Vec<u32>> {
    let m = asset.manifest();
    let lod = m.lods.first()?;
    let blob = asset.get_blob(m.indices?)?;
    let start = lod.first_index as usize * 4;
    let bytes = blob.get(start..start + lod.index_count as usize * 4)?;
    Some(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// One tile at one mip level: its colour and normal-depth texels.
type TileLevel = (Vec<[u8; 4]>, Vec<[u8; 4]>);

/// The two blobs of a tier: `images[layer][view]` placed as tiles of their layer, level 0 of every
/// layer, then each further level (each tile halved by [`halve_tile`]) of every layer.
fn assemble_layers(images: &[Vec<ViewImage>], per_side: u32, tile: u32, levels: u32) -> (Vec<u8>, Vec<u8>) {
    let (mut color, mut normal_depth) = (Vec::new(), Vec::new());
    // Each image's chain of (colour, normal-depth) tiles, level by level.
    let mut chains: Vec<Vec<TileLevel>> = images
        .iter()
        .flatten()
        .map(|image| vec![(image.color.clone(), image.normal_depth.clone())])
        .collect();
    for level in 1..levels {
        let side = (tile >> (level - 1)) as usize;
        for chain in &mut chains {
            let (c, nd) = chain.last().map(|(c, nd)| halve_tile(c, nd, side)).unwrap_or_default();
            chain.push((c, nd));
        }
    }
    let per_side = per_side as usize;
    for level in 0..levels as usize {
        let side = (tile >> level) as usize;
        let layer_side = side * per_side;
        for layer in chains.chunks(per_side * per_side) {
            for y in 0..layer_side {
                let (j, ty) = (y / side, y % side);
                for x in 0..layer_side {
                    let (i, tx) = (x / side, x % side);
                    let (c, nd) = &layer[j * per_side + i][level];
                    color.extend_from_slice(&c[ty * side + tx]);
                    normal_depth.extend_from_slice(&nd[ty * side + tx]);
                }
            }
        }
    }
    (color, normal_depth)
}

/// One mip step of a tile `side` pixels wide (even): each 2 x 2 block to one pixel. Coverage is the
/// mean; colour is the coverage-weighted mean in linear light, normal the coverage-weighted mean
/// direction and depth the coverage-weighted mean, so uncovered pixels never darken or bend an edge.
fn halve_tile(color: &[[u8; 4]], normal_depth: &[[u8; 4]], side: usize) -> (Vec<[u8; 4]>, Vec<[u8; 4]>) {
    let half = side / 2;
    let mut c_out = vec![[0u8; 4]; half * half];
    let mut nd_out = vec![[0u8; 4]; half * half];
    for y in 0..half {
        for x in 0..half {
            let (mut weight, mut rgb, mut normal, mut depth) = (0.0f32, [0.0f32; 3], [0.0f32; 3], 0.0f32);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let at = (2 * y + dy) * side + 2 * x + dx;
                let (c, nd) = (color[at], normal_depth[at]);
                let w = f32::from(c[3]) / 255.0;
                weight += w;
                for (sum, s) in rgb.iter_mut().zip(&c[..3]) {
                    *sum += srgb_to_linear(*s) * w;
                }
                let o = [f32::from(nd[0]) / 255.0 * 2.0 - 1.0, f32::from(nd[1]) / 255.0 * 2.0 - 1.0];
                let n = vat_core::format::encoding::oct_decode_f32(o);
                for (sum, s) in normal.iter_mut().zip(n) {
                    *sum += s * w;
                }
                depth += (f32::from(nd[2]) / 255.0 * 2.0 - 1.0) * w;
            }
            if weight == 0.0 {
                continue;
            }
            let coverage = unorm8(weight / 4.0);
            let [r, g, b] = rgb.map(|s| srgb8(s / weight));
            c_out[y * half + x] = [r, g, b, coverage];
            let [ox, oy] = oct_encode_f32(normal);
            nd_out[y * half + x] = [
                unorm8((ox + 1.0) * 0.5),
                unorm8((oy + 1.0) * 0.5),
                unorm8((depth / weight + 1.0) * 0.5),
                coverage,
            ];
        }
    }
    (c_out, nd_out)
}

/// An 8-bit sRGB component to linear light.
fn srgb_to_linear(s: u8) -> f32 {
    let s = f32::from(s) / 255.0;
    if s <= 0.040_45 { s / 12.92 } else { ((s + 0.055) / 1.055).powf(2.4) }
}

#[cfg(test)]
#[path = "impostor_tests.rs"]
mod tests;
