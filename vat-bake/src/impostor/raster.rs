//! The deterministic CPU rasteriser the tier's images are drawn with: one frame of a body from one
//! view into colour (one image per colour set), coverage, normal and depth.

use glam::Vec3;
use vat_core::format::encoding::oct_encode_f32;
use vat_core::format::impostor::project_to_view;

use crate::{BakeError, Result};

/// The largest image side times samples per side the rasteriser accepts (a 4,096-sample-wide
/// buffer: 4 bytes of depth and 40 of attributes per sample, 704 MiB at the limit).
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
    /// More colour sets drawn from the same coverage (an asset's material variants): each one
    /// linear RGBA colour per position, or empty for white; [`ViewImage::variant_colors`] holds
    /// their images, in order.
    pub variant_colors: &'a [Vec<[f32; 4]>],
    /// Material ids, one per position, or empty for material 0. A triangle takes its first
    /// vertex's id, stored in the normal-depth image's alpha.
    pub material_ids: &'a [u32],
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
    /// The same image in each of [`ImpostorMesh::variant_colors`]' colour sets (the same coverage
    /// and samples; empty without).
    pub variant_colors: Vec<Vec<[u8; 4]>>,
    /// The mean covered normal (object space) octahedrally encoded in R and G
    /// (`round((o + 1) / 2 * 255)`), the mean covered view depth in B (`round((depth + 1) / 2 *
    /// 255)`, depth in `[-1, 1]` positive towards the viewer), coverage in A; zero where nothing is
    /// covered.
    pub normal_depth: Vec<[u8; 4]>,
}

/// What a covered sample holds: its colour is resolved per colour set from the triangle's corners
/// and their weights.
#[derive(Debug, Clone, Copy)]
struct Sample {
    depth: f32,
    normal: [f32; 3],
    corners: [u32; 3],
    weights: [f32; 3],
    material: u32,
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
    Ok(resolve(&samples, mesh, options))
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
    if mesh.normals.len() != n
        || !(mesh.colors.is_empty() || mesh.colors.len() == n)
        || !(mesh.material_ids.is_empty() || mesh.material_ids.len() == n)
    {
        return Err(input(format!(
            "{n} positions but {} normals, {} colours and {} material ids",
            mesh.normals.len(),
            mesh.colors.len(),
            mesh.material_ids.len()
        )));
    }
    if let Some(set) = mesh.variant_colors.iter().find(|set| !(set.is_empty() || set.len() == n)) {
        return Err(input(format!("{n} positions but a variant colour set of {}", set.len())));
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
    let (n0, n1, n2) = (mesh.normals[i0], mesh.normals[j1], mesh.normals[j2]);
    let corners = [i0 as u32, j1 as u32, j2 as u32];
    let material = mesh.material_ids.get(i0).copied().unwrap_or(0);
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
            *slot = Some(Sample { depth, normal, corners, weights: [wa, wb, wc], material });
        }
    }
}

fn resolve(samples: &[Option<Sample>], mesh: &ImpostorMesh<'_>, options: &RasterOptions) -> ViewImage {
    let (size, s) = (options.size as usize, options.samples_per_side as usize);
    let width = size * s;
    let total = (s * s) as f32;
    let sets: Vec<&[[f32; 4]]> =
        std::iter::once(mesh.colors).chain(mesh.variant_colors.iter().map(Vec::as_slice)).collect();
    // A sample's linear colour in colour set `set`: its corners' colours by its weights.
    let sample_color = |sample: &Sample, set: &[[f32; 4]]| {
        let color = |i: u32| set.get(i as usize).copied().unwrap_or([1.0; 4]);
        let (c0, c1, c2) = (color(sample.corners[0]), color(sample.corners[1]), color(sample.corners[2]));
        let [wa, wb, wc] = sample.weights;
        std::array::from_fn::<f32, 4, _>(|k| c0[k] * wa + c1[k] * wb + c2[k] * wc)
    };
    let mut colors = vec![vec![[0u8; 4]; size * size]; sets.len()];
    let mut normal_depth = vec![[0u8; 4]; size * size];
    let mut rgba = vec![[0.0f32; 4]; sets.len()];
    for py in 0..size {
        for px in 0..size {
            let (mut covered, mut depth, mut normal) = (0u32, 0.0f32, [0.0f32; 3]);
            rgba.fill([0.0; 4]);
            // Samples per material id: the pixel takes the most frequent (the lowest id on a tie).
            let mut materials: Vec<(u32, u32)> = Vec::new();
            for sy in 0..s {
                let row = (py * s + sy) * width + px * s;
                for sample in samples[row..row + s].iter().flatten() {
                    covered += 1;
                    match materials.iter_mut().find(|(id, _)| *id == sample.material) {
                        Some((_, count)) => *count += 1,
                        None => materials.push((sample.material, 1)),
                    }
                    depth += sample.depth;
                    for (sum, x) in normal.iter_mut().zip(sample.normal) {
                        *sum += x;
                    }
                    for (sum, set) in rgba.iter_mut().zip(&sets) {
                        for (sum, x) in sum.iter_mut().zip(sample_color(sample, set)) {
                            *sum += x;
                        }
                    }
                }
            }
            if covered == 0 {
                continue;
            }
            let n = covered as f32;
            let coverage = unorm8(covered as f32 / total);
            for (image, sum) in colors.iter_mut().zip(&rgba) {
                let [r, g, b, _] = sum.map(|c| c / n);
                image[py * size + px] = [srgb8(r), srgb8(g), srgb8(b), coverage];
            }
            let [ox, oy] = oct_encode_f32(normal);
            normal_depth[py * size + px] = [
                unorm8((ox + 1.0) * 0.5),
                unorm8((oy + 1.0) * 0.5),
                unorm8((depth / n + 1.0) * 0.5),
                majority_material(&materials),
            ];
        }
    }
    let mut sets = colors.into_iter();
    let color = sets.next().unwrap_or_default();
    ViewImage { size: options.size, color, variant_colors: sets.collect(), normal_depth }
}

/// The most frequent material id of `(id, count)` pairs (the lowest id on a tie; 0 when empty),
/// as the byte the normal-depth images store (ids past 255 are 255).
fn majority_material(materials: &[(u32, u32)]) -> u8 {
    let best = materials.iter().copied().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
    best.map_or(0, |(id, _)| id.min(255) as u8)
}

/// `x` in `[0, 1]` (clamped) to 8 bits, rounded to nearest.
pub(super) fn unorm8(x: f32) -> u8 {
    (x.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// A linear colour component to 8-bit sRGB (the sRGB transfer function, rounded to nearest).
pub(super) fn srgb8(linear: f32) -> u8 {
    let l = linear.clamp(0.0, 1.0);
    let s = if l <= 0.003_130_8 { l * 12.92 } else { 1.055 * l.powf(1.0 / 2.4) - 0.055 };
    unorm8(s)
}
