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

/// Checks `options` on their own (before any asset is read): a grid of 2 to 32 views per side, a
/// power-of-two tile from 8 to 512 pixels, 1 to 256 frames per clip, 1 to 16 samples per side.
///
/// # Errors
/// [`BakeError::InvalidOption`] naming the command-line flag at fault and the accepted range.
pub fn validate_options(options: &ImpostorOptions) -> Result<()> {
    use vat_core::format::impostor::{MAX_FRAMES_PER_CLIP, MAX_VIEWS_PER_SIDE, TILE_SIZES};
    let views = options.grid.views_per_side;
    if !(2..=MAX_VIEWS_PER_SIDE).contains(&views) {
        return Err(BakeError::InvalidOption {
            option: "--impostor-views",
            problem: format!("{views} views per side is not 2 to {MAX_VIEWS_PER_SIDE}"),
        });
    }
    let tile = options.tile_size;
    if !(TILE_SIZES.contains(&tile) && tile.is_power_of_two()) {
        return Err(BakeError::InvalidOption {
            option: "--impostor-tile",
            problem: format!(
                "{tile} pixels is not a power of two from {} to {}",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ),
        });
    }
    let frames = options.frames_per_clip;
    if !(1..=MAX_FRAMES_PER_CLIP).contains(&frames) {
        return Err(BakeError::InvalidOption {
            option: "--impostor-frames",
            problem: format!("{frames} frames per clip is not 1 to {MAX_FRAMES_PER_CLIP}"),
        });
    }
    if !(1..=16).contains(&options.samples_per_side) {
        return Err(BakeError::InvalidOption {
            option: "impostor samples per side",
            problem: format!("{} is not 1 to 16", options.samples_per_side),
        });
    }
    Ok(())
}

/// How many of `manifest`'s material variants a tier baked with `options` has colour images of, and
/// how many it leaves out: an asset with materials gets a colour set per variant
/// ([`vat_core::container::Manifest::impostor_material_variants`]) as long as every set's layers
/// fit [`vat_core::format::impostor::MAX_IMPOSTOR_LAYERS`] (the first variants, in order); an asset
/// without materials none (its cards take the palette's variant at run time, as its mesh does).
pub fn material_variant_sets(
    manifest: &vat_core::container::Manifest,
    options: &ImpostorOptions,
) -> (u32, u32) {
    use vat_core::format::impostor::MAX_IMPOSTOR_LAYERS;
    if manifest.materials.is_empty() {
        return (0, 0);
    }
    let variants = u32::try_from(manifest.material_variants.len()).unwrap_or(u32::MAX);
    let layers = (manifest.clips.len() as u64).saturating_mul(options.frames_per_clip.into()).max(1);
    let fit = (u64::from(MAX_IMPOSTOR_LAYERS) / layers).saturating_sub(1);
    let baked = variants.min(u32::try_from(fit).unwrap_or(u32::MAX));
    (baked, variants - baked)
}

/// Checks `options` against an asset of `clip_count` clips with `variants` material variants'
/// colour sets ([`material_variant_sets`]) and a memory budget of `max_memory` bytes, before
/// anything is drawn: at most [`vat_core::format::impostor::MAX_IMPOSTOR_LAYERS`] images (clips
/// times frames), and the images, their two texture arrays and the file they join within the
/// budget. Returns the bytes of the tier's normal-depth blob (its colour blob is `1 + variants`
/// times that).
///
/// # Errors
/// [`BakeError::InvalidOption`] for too many layers (naming `--impostor-frames`);
/// [`BakeError::OverBudget`] for a tier too large for the budget.
pub fn check_tier_size(
    options: &ImpostorOptions,
    clip_count: usize,
    variants: u32,
    max_memory: u64,
) -> Result<u64> {
    use vat_core::format::impostor::MAX_IMPOSTOR_LAYERS;
    let layers = (clip_count as u64).saturating_mul(options.frames_per_clip.into());
    if layers > u64::from(MAX_IMPOSTOR_LAYERS) {
        return Err(BakeError::InvalidOption {
            option: "--impostor-frames",
            problem: format!(
                "{clip_count} clips x {} frames is {layers} images, more than the {MAX_IMPOSTOR_LAYERS} layers a \
                 tier holds; lower --impostor-frames to {} or fewer",
                options.frames_per_clip,
                u64::from(MAX_IMPOSTOR_LAYERS) / (clip_count as u64).max(1)
            ),
        });
    }
    let (n, tile) = (u64::from(options.grid.views_per_side), u64::from(options.tile_size));
    // Level 0 and the mips of every layer (under 4/3 of level 0), 4 bytes per texel.
    let level0 = (n * tile).saturating_mul(n * tile).saturating_mul(4).saturating_mul(layers);
    let blob = level0.saturating_add(level0 / 3);
    // Two blobs (the colour one per set), the per-view images they are assembled from, and the
    // file written with them.
    let needed = blob.saturating_mul(2 + u64::from(variants)).saturating_mul(3);
    if needed > max_memory {
        return Err(BakeError::OverBudget {
            what: format!("the impostor tier ({layers} images of {} x {} views of {tile} px)", n, n),
            needed,
            limit: max_memory,
            hint: "lower --impostor-tile, --impostor-views or --impostor-frames, or raise --max-memory",
        });
    }
    Ok(blob)
}

/// The material id of every vertex of `asset` (its `MaterialId` stream; 0 without one), for the
/// normal-depth images' alpha: the card picks an asset without materials' palette colour by it at
/// run time (with the instance's variant and tint), as the mesh does.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a material id stream that is not one id per vertex.
pub fn vertex_material_ids(asset: &vat_core::container::Asset<'_>) -> Result<Vec<u32>> {
    let m = asset.manifest();
    let n = m.vertex_count as usize;
    match asset.stream(vat_core::container::StreamKind::MaterialId) {
        Some((element, bytes)) => decode_stream(element, bytes, n)
            .map(|ids| ids.iter().map(|id| id[0].clamp(0.0, 255.0) as u32).collect())
            .ok_or_else(|| BakeError::InvalidInput {
                part: m.name.clone(),
                problem: format!(
                    "its material id stream ({} bytes, {element:?}) is not one id per vertex",
                    bytes.len()
                ),
            }),
        None => Ok(vec![0; n]),
    }
}

/// The unlit albedo (linear RGBA) of every vertex of `asset`, as the mesh shader computes a
/// fragment's base colour at that vertex with no instance tint or variant: with materials, the
/// vertex's material (`MaterialId` stream, clamped to the last material as the shader does) base
/// colour factor times its base colour texture (level 0, sRGB decoded, bilinear with the binding's
/// wrap modes) at the vertex's `Uv0`; without materials, the built-in palette's colour of the
/// material id; either times the vertex colour (`Color0`) where stored. Alpha is not coverage: an
/// impostor's coverage is the rasterised area.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a material, UV or colour stream whose length is not one element
/// per vertex, or a base colour texture binding past its texture array.
pub fn vertex_albedo(asset: &vat_core::container::Asset<'_>) -> Result<Vec<[f32; 4]>> {
    vertex_albedo_in(asset, 0)
}

/// [`vertex_albedo`] with the instance's material variant `variant`: 0 (or one past the asset's
/// [`vat_core::container::Manifest::material_variants`]) the materials as authored, `v` in
/// `1..=variants` variant `v - 1`'s materials (as the mesh shader picks them). Without materials the
/// variant changes nothing here (the palette's variants are the run time's).
///
/// # Errors
/// As [`vertex_albedo`].
pub fn vertex_albedo_in(asset: &vat_core::container::Asset<'_>, variant: u32) -> Result<Vec<[f32; 4]>> {
    use vat_core::container::StreamKind;
    let m = asset.manifest();
    let n = m.vertex_count as usize;
    let input = |problem: String| BakeError::InvalidInput { part: m.name.clone(), problem };
    let ids = match asset.stream(StreamKind::MaterialId) {
        Some((element, bytes)) => decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!(
                "its material id stream ({} bytes, {element:?}) is not one id per vertex",
                bytes.len()
            ))
        })?,
        None => vec![[0.0; 4]; n],
    };
    let uvs = match asset.stream(StreamKind::Uv0) {
        Some((element, bytes)) => Some(decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!("its UV stream ({} bytes, {element:?}) is not one UV per vertex", bytes.len()))
        })?),
        None => None,
    };
    let vertex_colors = match asset.stream(StreamKind::Color0) {
        Some((element, bytes)) => Some(decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!(
                "its colour stream ({} bytes, {element:?}) is not one colour per vertex",
                bytes.len()
            ))
        })?),
        None => None,
    };
    let color_array = m.material_textures.as_ref().and_then(|t| t.color.as_ref());
    let texels = match color_array {
        Some(array) => Some(
            asset
                .get_blob(array.texels)
                .ok_or_else(|| input("its base colour texture array's texels are missing".into()))?,
        ),
        None => None,
    };
    let mut out = Vec::with_capacity(n);
    for v in 0..n {
        let id = ids[v][0] as usize;
        // Without materials the palette colour is the run time's (by the stored material id).
        let mut rgba = if m.materials.is_empty() {
            [1.0; 4]
        } else {
            let id = id.min(m.materials.len() - 1);
            // The variant's material for this id (validated: every index is a material).
            let id = match (variant as usize).checked_sub(1).and_then(|v| m.material_variants.get(v)) {
                Some(v) => v.materials.get(id).map_or(id, |&i| usize::from(i).min(m.materials.len() - 1)),
                None => id,
            };
            let material = &m.materials[id];
            let mut base = material.base_color_factor;
            if let (Some(binding), Some(array), Some(texels), Some(uvs)) =
                (&material.base_color_texture, color_array, texels, &uvs)
            {
                let t = sample_layer(array, texels, binding, [uvs[v][0], uvs[v][1]]).ok_or_else(|| {
                    input(format!("base colour texture layer {} is past its texture array", binding.layer))
                })?;
                for (b, x) in base.iter_mut().zip(t) {
                    *b *= x;
                }
            }
            base
        };
        if let Some(c) = &vertex_colors {
            for (x, y) in rgba.iter_mut().zip(c[v]) {
                *x *= y;
            }
        }
        out.push(rgba);
    }
    Ok(out)
}

/// `n` elements of a vertex stream as up to four `f32` each (integers as their value, unorm
/// formats in `[0, 1]`), or `None` when `bytes` is not `n` elements long.
fn decode_stream(
    element: vat_core::container::ElementFormat,
    bytes: &[u8],
    n: usize,
) -> Option<Vec<[f32; 4]>> {
    use vat_core::container::ElementFormat as E;
    let size = element.byte_size() as usize;
    if bytes.len() != n.checked_mul(size)? {
        return None;
    }
    let f32_at =
        |c: &[u8], i: usize| f32::from_le_bytes([c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]]);
    let u16_at = |c: &[u8], i: usize| u16::from_le_bytes([c[2 * i], c[2 * i + 1]]);
    Some(
        bytes
            .chunks_exact(size)
            .map(|c| match element {
                E::F32x2 => [f32_at(c, 0), f32_at(c, 1), 0.0, 1.0],
                E::F32x3 => [f32_at(c, 0), f32_at(c, 1), f32_at(c, 2), 1.0],
                E::F32x4 => [f32_at(c, 0), f32_at(c, 1), f32_at(c, 2), f32_at(c, 3)],
                E::Unorm8x4 => [0, 1, 2, 3].map(|i| f32::from(c[i]) / 255.0),
                E::Unorm16x2 => {
                    [f32::from(u16_at(c, 0)) / 65535.0, f32::from(u16_at(c, 1)) / 65535.0, 0.0, 1.0]
                }
                E::Unorm16x4 => [0, 1, 2, 3].map(|i| f32::from(u16_at(c, i)) / 65535.0),
                E::U8 => [f32::from(c[0]), 0.0, 0.0, 0.0],
                E::U16 => [f32::from(u16_at(c, 0)), 0.0, 0.0, 0.0],
                E::U32 => [u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32, 0.0, 0.0, 0.0],
            })
            .map(|v| v.map(|x| if x.is_finite() { x } else { 0.0 }))
            .collect(),
    )
}

/// Texel coordinate `x` (of a `size`-texel side) wrapped as `wrap` says.
fn wrap_texel(x: i64, size: u32, wrap: vat_core::container::TextureWrap) -> usize {
    use vat_core::container::TextureWrap;
    let size = i64::from(size.max(1));
    let wrapped = match wrap {
        TextureWrap::Repeat => x.rem_euclid(size),
        TextureWrap::ClampToEdge => x.clamp(0, size - 1),
        TextureWrap::MirroredRepeat => {
            let t = x.rem_euclid(2 * size);
            if t < size { t } else { 2 * size - 1 - t }
        }
    };
    wrapped as usize
}

/// Level 0 of the base colour layer `binding` names, sampled bilinearly at `uv` with its wrap
/// modes, as linear RGBA (sRGB decoded; alpha linear); `None` when the layer is past the texels.
fn sample_layer(
    array: &vat_core::container::TextureArray,
    texels: &[u8],
    binding: &vat_core::container::TextureBinding,
    uv: [f32; 2],
) -> Option<[f32; 4]> {
    let (w, h) = (array.width as usize, array.height as usize);
    let layer_bytes = w.checked_mul(h)?.checked_mul(4)?;
    let start = (binding.layer as usize).checked_mul(layer_bytes)?;
    let layer = texels.get(start..start.checked_add(layer_bytes)?)?;
    let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
    let fx = finite(uv[0]) * w as f32 - 0.5;
    let fy = finite(uv[1]) * h as f32 - 0.5;
    let (x0, y0) = (fx.floor(), fy.floor());
    let (tx, ty) = (fx - x0, fy - y0);
    // Far outside any texture the float-to-int cast saturates; the wrap brings it back in.
    let (x0, y0) = (x0 as i64, y0 as i64);
    let mut out = [0.0f32; 4];
    for (dx, dy, weight) in
        [(0, 0, (1.0 - tx) * (1.0 - ty)), (1, 0, tx * (1.0 - ty)), (0, 1, (1.0 - tx) * ty), (1, 1, tx * ty)]
    {
        let x = wrap_texel(x0.saturating_add(dx), array.width, binding.wrap_u);
        let y = wrap_texel(y0.saturating_add(dy), array.height, binding.wrap_v);
        let at = (y * w + x) * 4;
        let c = layer.get(at..at + 4)?;
        let linear =
            [srgb_to_linear(c[0]), srgb_to_linear(c[1]), srgb_to_linear(c[2]), f32::from(c[3]) / 255.0];
        for (o, l) in out.iter_mut().zip(linear) {
            *o += l * weight;
        }
    }
    Some(out)
}

/// Writes `asset` (a parsed file, every blob kept as it is) with `images`' tier added as a new
/// section (format version 8; 9 with its far cards' bound) to a temporary file beside `path`: the tier's two blobs follow the
/// asset's, and its blob ids are filled in. Read it back and check it before
/// [`vat_core::files::PendingFile::commit`]ting it; dropped, it is removed.
///
/// # Errors
/// [`BakeError::InvalidInput`] when the asset already has a tier; [`BakeError::Core`] for an I/O
/// failure or a file too large to lay out.
pub fn write_pending_with_tier(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    path: &std::path::Path,
) -> Result<vat_core::files::PendingFile> {
    let (manifest, blobs) = with_tier_parts(asset, images)?;
    let mut failure = None;
    let pending = vat_core::files::PendingFile::create(path, &mut |w| {
        vat_core::container::write_container(w, path, manifest.clone(), &blobs).map(|_| ()).map_err(|e| {
            let io = std::io::Error::other(e.to_string());
            failure = Some(e);
            io
        })
    });
    match (pending, failure) {
        (Ok(pending), _) => Ok(pending),
        (Err(_), Some(e)) | (Err(e), None) => Err(e.into()),
    }
}

/// The `.vat` bytes of `asset` with the tier `images` added (format version 8, 9 with its
/// one-view bound), in memory: the
/// same container [`write_pending_with_tier`] writes.
///
/// # Errors
/// As [`write_pending_with_tier`] (no I/O).
pub fn with_tier_bytes(asset: &vat_core::container::Asset<'_>, images: &ImpostorImages) -> Result<Vec<u8>> {
    let (manifest, blobs) = with_tier_parts(asset, images)?;
    Ok(vat_core::container::container_bytes(manifest, &blobs)?)
}

/// The manifest with the tier and every blob of `asset` then the tier's two.
fn with_tier_parts<'a>(
    asset: &vat_core::container::Asset<'a>,
    images: &'a ImpostorImages,
) -> Result<(vat_core::container::Manifest, Vec<&'a [u8]>)> {
    use vat_core::container::BlobId;
    let mut manifest = asset.manifest().clone();
    if manifest.impostors.is_some() {
        return Err(BakeError::InvalidInput {
            part: manifest.name.clone(),
            problem: "already has an impostor tier; bake the asset again to replace it".into(),
        });
    }
    let count = manifest.blobs.len();
    let mut blobs: Vec<&[u8]> = Vec::with_capacity(count + 2);
    for i in 0..count {
        let blob = asset.get_blob(BlobId(i as u32)).ok_or_else(|| BakeError::InvalidInput {
            part: manifest.name.clone(),
            problem: format!("blob {i} is missing"),
        })?;
        blobs.push(blob);
    }
    let mut tier = images.tier.clone();
    tier.color = BlobId(count as u32);
    tier.normal_depth = BlobId(count as u32 + 1);
    blobs.push(&images.color);
    blobs.push(&images.normal_depth);
    manifest.impostors = Some(tier);
    manifest.impostor_one_view_bound = images.one_view_bound;
    manifest.impostor_material_variants = images.material_variants;
    Ok((manifest, blobs))
}

/// The images of an impostor tier, ready for a container: the two blobs in the layout
/// [`vat_core::format::impostor::ImpostorTier`] documents, and the tier's geometry (its blob ids
/// and bound are the writer's and verification's to fill in).
#[derive(Debug, Clone, PartialEq)]
pub struct ImpostorImages {
    /// The tier with placeholder blob ids (0) and bound (perfect agreement).
    pub tier: vat_core::format::impostor::ImpostorTier,
    /// Colour texels, every mip level of every layer, `1 + material_variants` colour sets per level
    /// ([`vat_core::format::impostor::ImpostorTier::color_level_range`]).
    pub color: Vec<u8>,
    /// Normal-depth texels, the same layout.
    pub normal_depth: Vec<u8>,
    /// The far cards' bound (`Manifest::impostor_one_view_bound`), `None` until measured
    /// ([`bake_measured_tier`] fills it in).
    pub one_view_bound: Option<vat_core::format::impostor::ImpostorBound>,
    /// The material variants with a colour set of their own in `color`
    /// (`Manifest::impostor_material_variants`; [`material_variant_sets`]).
    pub material_variants: u32,
}

/// Renders the impostor tier of a soft (or skeletal) asset from its own decode: for every clip,
/// `frames_per_clip` images at phases `k / frames_per_clip`, each from every view of the grid, of
/// LOD 0 as vat-core's CPU reference decodes it (linear interpolation, as the mesh is drawn), inside
/// the sphere around the asset's animation bounds, in each vertex's unlit albedo ([`vertex_albedo`]:
/// the runtime lights the card with its stored normal); then a mip chain per tile down to one pixel.
/// Views render in parallel; the bytes do not depend on the thread count. The tier's bound is left
/// perfect: [`bake_measured_tier`] fills it in.
///
/// # Errors
/// [`BakeError::InvalidOption`] for options out of range; [`BakeError::InvalidInput`] for an asset
/// that is not a soft body with a vertex animation and LOD 0, or whose material streams or textures
/// are inconsistent; the reference decoder's errors.
pub fn bake_tier(
    asset: &vat_core::container::Asset<'_>,
    options: &ImpostorOptions,
) -> Result<ImpostorImages> {
    use rayon::prelude::*;
    use vat_core::format::impostor::{ImpostorBound, ImpostorTier};
    use vat_core::format::reference::VertexAnimationView;
    validate_options(options)?;
    let m = asset.manifest();
    let (variants, _) = material_variant_sets(m, options);
    check_tier_size(options, m.clips.len(), variants, u64::MAX)?;
    let input = |problem: &str| BakeError::InvalidInput { part: m.name.clone(), problem: problem.to_owned() };
    let bounds = m.animation_bounds().ok_or_else(|| input("has no animation bounds: no impostor tier"))?;
    let view =
        VertexAnimationView::from_asset(asset).map_err(|e| input(&format!("no impostor tier: {e}")))?;
    let indices = lod0_indices(asset).ok_or_else(|| input("has no LOD 0 triangles: no impostor tier"))?;
    let colors = vertex_albedo(asset)?;
    let variant_colors = (1..=variants).map(|v| vertex_albedo_in(asset, v)).collect::<Result<Vec<_>>>()?;
    let material_ids = vertex_material_ids(asset)?;
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
            let (positions, normals) = object_frame(&view, clip, k, frames, n)?;
            let mesh = ImpostorMesh {
                positions: &positions,
                normals: &normals,
                colors: &colors,
                variant_colors: &variant_colors,
                material_ids: &material_ids,
                indices: &indices,
            };
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
    Ok(ImpostorImages { tier, color, normal_depth, one_view_bound: None, material_variants: variants })
}

/// Samples per pixel side of the mesh images a tier is measured against, at bake
/// ([`bake_measured_tier`]) and in [`verify_tier`] alike, so that verification measures exactly
/// what the bake stated.
pub const REFERENCE_SAMPLES_PER_SIDE: u32 = 4;

/// How far a measured figure may fall short of the stated bound before [`TierCheck::passed`]
/// fails. The measurement is deterministic (the same bytes give the same figures); this only
/// absorbs a platform's last-bit differences in `powf`.
pub const BOUND_TOLERANCE: f32 = 1e-4;

/// The directions (towards the viewer) a tier is measured from: the centre of every cell of its
/// view grid, the directions furthest from any baked view, `(n - 1)^2` of them in row order.
pub fn sample_directions(grid: &vat_core::format::impostor::ViewGrid) -> Vec<[f32; 3]> {
    use vat_core::format::impostor::square_to_direction;
    let n = grid.views_per_side.max(2);
    let last = (n - 1) as f32;
    (0..(n - 1) * (n - 1))
        .map(|c| {
            let (i, j) = ((c % (n - 1)) as f32 + 0.5, (c / (n - 1)) as f32 + 0.5);
            square_to_direction([2.0 * i / last - 1.0, 2.0 * j / last - 1.0], grid.coverage)
        })
        .collect()
}

/// How closely a baked tier stands for its mesh: from every direction of [`sample_directions`] and
/// at every baked frame, the mesh drawn from that direction (in its albedo, `samples_per_side` of
/// `options`) against the card reconstructed from the tier
/// ([`vat_core::format::impostor::card_samples`]: three views blended, each sampled bilinearly
/// within its tile, colours blended by coverage). Returns the smallest coverage
/// intersection-over-union (`sum min(a, b) / sum max(a, b)` over the pixels' coverages) and the
/// largest mean absolute colour difference over the pixels both the mesh and the card cover at
/// least half (sRGB, fraction of full scale: where only one covers, the IoU counts it), with the
/// number of images compared. Colours are the unlit albedo as the run time shows it: the images'
/// own for an asset with materials; for one without, the built-in palette's colours of variant 0
/// (`vat_core::format::reference::palette_color`), picked on the mesh by each vertex's material
/// id and on the card by the id each view stores (its images hold white), so a wrong id counts.
///
/// # Errors
/// As [`bake_tier`], for the same asset and options.
pub fn measure_tier(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    options: &ImpostorOptions,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    let directions = sample_directions(&images.tier.grid);
    measure_at(
        asset,
        &images.tier,
        (&images.color, &images.normal_depth),
        images.material_variants,
        options.samples_per_side,
        &directions,
        CardPath::ThreeViews,
    )
}

/// [`measure_tier`] for the far cards, which the run time draws from one view: each card pixel is
/// the nearest texel of the heaviest view ([`vat_core::format::impostor::one_view_sample`]) at mip
/// level [`vat_core::format::impostor::SINGLE_VIEW_LEVEL`] (or the last the tier stores), against
/// the mesh drawn at that level's size (a quarter of the tile's side), from the same directions
/// and frames.
///
/// # Errors
/// As [`measure_tier`].
pub fn measure_one_view(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    options: &ImpostorOptions,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    let directions = sample_directions(&images.tier.grid);
    measure_at(
        asset,
        &images.tier,
        (&images.color, &images.normal_depth),
        images.material_variants,
        options.samples_per_side,
        &directions,
        CardPath::OneView,
    )
}

/// [`bake_tier`], then the tier measured against its mesh as [`verify_tier`] measures it (with
/// [`REFERENCE_SAMPLES_PER_SIDE`]), the measured figures stored as the tier's bound and its far
/// cards' ([`measure_one_view`]) as [`ImpostorImages::one_view_bound`]: what the file states and
/// `vat verify` checks again. Returns the images and the number of images measured per path.
///
/// # Errors
/// As [`bake_tier`].
pub fn bake_measured_tier(
    asset: &vat_core::container::Asset<'_>,
    options: &ImpostorOptions,
) -> Result<(ImpostorImages, u32)> {
    let mut images = bake_tier(asset, options)?;
    let directions = sample_directions(&images.tier.grid);
    let measure = |path| {
        let texels = (images.color.as_slice(), images.normal_depth.as_slice());
        let variants = images.material_variants;
        measure_at(asset, &images.tier, texels, variants, REFERENCE_SAMPLES_PER_SIDE, &directions, path)
    };
    let (bound, samples) = measure(CardPath::ThreeViews)?;
    let (one_view, _) = measure(CardPath::OneView)?;
    images.tier.bound = bound;
    images.one_view_bound = Some(one_view);
    Ok((images, samples))
}

/// What [`verify_tier`] found: for both card paths, the bound the file states and the one measured
/// again from its own images.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierCheck {
    /// The bound stored in the file's tier (the near cards: three views at mip level 0).
    pub stated: vat_core::format::impostor::ImpostorBound,
    /// The bound measured from the file's images and mesh.
    pub measured: vat_core::format::impostor::ImpostorBound,
    /// The far cards' bound the file states (`Manifest::impostor_one_view_bound`); `None` in a
    /// file baked before it was stated (its far cards are measured, with nothing to hold them to).
    pub one_view_stated: Option<vat_core::format::impostor::ImpostorBound>,
    /// The far cards' bound measured ([`measure_one_view`]).
    pub one_view_measured: vat_core::format::impostor::ImpostorBound,
    /// Images compared per path (sample directions times frames).
    pub samples: u32,
}

impl TierCheck {
    /// Whether the file does at least as well as it states (within [`BOUND_TOLERANCE`]).
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// One line per figure that is worse than stated.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let paths = [
            ("impostor", Some(self.stated), self.measured),
            ("impostor far-card (one view)", self.one_view_stated, self.one_view_measured),
        ];
        for (what, stated, m) in paths {
            let Some(s) = stated else { continue };
            if m.min_coverage_iou < s.min_coverage_iou - BOUND_TOLERANCE {
                out.push(format!(
                    "{what} coverage IoU {:.4} is below the {:.4} the tier states",
                    m.min_coverage_iou, s.min_coverage_iou
                ));
            }
            if m.max_mean_color_error > s.max_mean_color_error + BOUND_TOLERANCE {
                out.push(format!(
                    "{what} mean colour error {:.4} is above the {:.4} the tier states",
                    m.max_mean_color_error, s.max_mean_color_error
                ));
            }
        }
        out
    }
}

/// Checks the impostor tier of `asset` (a parsed file) against the bounds it states: re-bakes
/// nothing, but reconstructs the cards from the file's own images along both run-time paths (near
/// cards: [`measure_tier`]; far cards: [`measure_one_view`]) and compares them with the mesh as the
/// CPU reference decodes it, from [`sample_directions`] at every baked frame, as the bake measured
/// it. `None` for a file without a tier.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a tier whose images are shorter than it says or an asset whose
/// mesh cannot be drawn (no LOD 0, inconsistent material streams); the reference decoder's errors.
pub fn verify_tier(asset: &vat_core::container::Asset<'_>) -> Result<Option<TierCheck>> {
    let Some(tier) = asset.manifest().impostors.as_ref() else {
        return Ok(None);
    };
    let color = asset.get_blob(tier.color).ok_or_else(|| BakeError::InvalidInput {
        part: asset.manifest().name.clone(),
        problem: "the impostor tier's colour blob is missing".into(),
    })?;
    let normal_depth = asset.get_blob(tier.normal_depth).ok_or_else(|| BakeError::InvalidInput {
        part: asset.manifest().name.clone(),
        problem: "the impostor tier's normal and depth blob is missing".into(),
    })?;
    let directions = sample_directions(&tier.grid);
    let variants = asset.manifest().impostor_material_variants;
    let measure = |path| {
        measure_at(
            asset,
            tier,
            (color, normal_depth),
            variants,
            REFERENCE_SAMPLES_PER_SIDE,
            &directions,
            path,
        )
    };
    let (measured, samples) = measure(CardPath::ThreeViews)?;
    let (one_view_measured, _) = measure(CardPath::OneView)?;
    Ok(Some(TierCheck {
        stated: tier.bound,
        measured,
        one_view_stated: asset.manifest().impostor_one_view_bound,
        one_view_measured,
        samples,
    }))
}

/// The `(clip, frame, frames of the clip)` of every layer of `tier`, in layer order.
fn layer_frames(tier: &vat_core::format::impostor::ImpostorTier) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for (clip, &frames) in tier.frames_per_clip.iter().enumerate() {
        out.extend((0..frames).map(|k| (clip as u32, k, frames)));
    }
    out
}

/// Which of the run time's two card paths a measurement reconstructs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CardPath {
    /// The near cards: three views blended with the depth correction, bilinear, at mip level 0,
    /// against the mesh at the tile's size.
    ThreeViews,
    /// The far cards: the heaviest view's nearest texel
    /// ([`vat_core::format::impostor::one_view_sample`]) at mip level `SINGLE_VIEW_LEVEL` (or the
    /// last stored), against the mesh at that level's size.
    OneView,
}

/// [`measure_tier`] of `tier` (its colour and normal-depth texels, every stored level) along
/// `path` at the given directions (towards the viewer), the mesh drawn with `samples_per_side`.
/// `variants` is the number of material variants with a colour set of their own in `color`: each
/// set is measured against the mesh in that variant's materials, and the bound is the worst of
/// them (the count, every set's images).
fn measure_at(
    asset: &vat_core::container::Asset<'_>,
    tier: &vat_core::format::impostor::ImpostorTier,
    (color, normal_depth): (&[u8], &[u8]),
    variants: u32,
    samples_per_side: u32,
    directions: &[[f32; 3]],
    path: CardPath,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    use vat_core::format::impostor::ImpostorBound;
    let palette = asset.manifest().materials.is_empty();
    let (mut bound, mut count) = (ImpostorBound { min_coverage_iou: 1.0, max_mean_color_error: 0.0 }, 0u32);
    for set in 0..=variants {
        let texels = (color, normal_depth);
        let sets = (variants.saturating_add(1), set);
        let (b, n) = measure_colored(asset, tier, texels, sets, samples_per_side, directions, palette, path)?;
        bound.min_coverage_iou = bound.min_coverage_iou.min(b.min_coverage_iou);
        bound.max_mean_color_error = bound.max_mean_color_error.max(b.max_mean_color_error);
        count = count.saturating_add(n);
    }
    Ok((bound, count))
}

/// [`measure_at`] of colour set `set` of `sets` (0: the authored materials; `v`: material variant
/// `v`, the mesh drawn in its materials), the colours in the palette (both sides) when `palette`
/// is set, else in the images' own albedo.
#[allow(clippy::too_many_arguments)] // the measurement's inputs, each used once
fn measure_colored(
    asset: &vat_core::container::Asset<'_>,
    tier: &vat_core::format::impostor::ImpostorTier,
    (color, normal_depth): (&[u8], &[u8]),
    (sets, set): (u32, u32),
    samples_per_side: u32,
    directions: &[[f32; 3]],
    palette: bool,
    path: CardPath,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    use rayon::prelude::*;
    use vat_core::format::impostor::{ImpostorBound, SINGLE_VIEW_LEVEL, card_samples, one_view_sample};
    use vat_core::format::reference::VertexAnimationView;
    let m = asset.manifest();
    let input = |problem: String| BakeError::InvalidInput { part: m.name.clone(), problem };
    let view = VertexAnimationView::from_asset(asset).map_err(|e| input(e.to_string()))?;
    let indices = lod0_indices(asset).ok_or_else(|| input("has no LOD 0 triangles".into()))?;
    let material_ids = vertex_material_ids(asset)?;
    // Colours as the run time shows them: an asset without materials in its palette's (variant 0),
    // on the mesh by vertex, on the card by the stored ids (its images hold white).
    let mut colors = vertex_albedo_in(asset, set)?;
    let palette_ids = palette.then_some(normal_depth);
    if palette_ids.is_some() {
        for (c, &id) in colors.iter_mut().zip(&material_ids) {
            let p = vat_core::format::reference::palette_color(id, 0, [1.0; 3]);
            for (x, y) in c.iter_mut().zip(p) {
                *x *= y;
            }
        }
    }
    let layers = layer_frames(tier);
    let level = match path {
        CardPath::ThreeViews => 0,
        CardPath::OneView => (SINGLE_VIEW_LEVEL as u32).min(tier.mip_levels.saturating_sub(1)),
    };
    // The measured level's texels of this colour set, and of the normal-depth images (one set).
    let (color_range, nd_range) =
        (tier.color_level_range(sets, set, level), tier.color_level_range(1, 0, level));
    fn bytes_in<'a>(bytes: &'a [u8], range: &std::ops::Range<u64>) -> Option<&'a [u8]> {
        bytes.get(usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?)
    }
    let short = |what: &str, len: usize, range: &std::ops::Range<u64>| {
        input(format!(
            "the impostor {what} images hold {len} bytes, fewer than the {} of their {} layers up to mip level {level}",
            range.end,
            layers.len()
        ))
    };
    let level_texels = (
        bytes_in(color, &color_range).ok_or_else(|| short("colour", color.len(), &color_range))?,
        bytes_in(normal_depth, &nd_range)
            .ok_or_else(|| short("normal-depth", normal_depth.len(), &nd_range))?,
    );
    let size = (tier.tile_size >> level).max(1);
    let raster = RasterOptions { size, samples_per_side };
    let per_layer: Vec<(f32, f32)> = layers
        .par_iter()
        .enumerate()
        .map(|(layer, &(clip, k, frames))| {
            let (positions, normals) = object_frame(&view, clip, k, frames, m.vertex_count as usize)?;
            let mesh = ImpostorMesh {
                positions: &positions,
                normals: &normals,
                colors: &colors,
                variant_colors: &[],
                material_ids: &material_ids,
                indices: &indices,
            };
            let (mut iou, mut error) = (1.0f32, 0.0f32);
            for &d in directions {
                let reference = render_view(&mesh, d, tier.centre, tier.radius, &raster)?;
                let size = size as usize;
                let (mut inter, mut union, mut diff, mut pixels) = (0.0f32, 0.0f32, 0.0f32, 0u32);
                for p in 0..size * size {
                    let (u, v) =
                        (((p % size) as f32 + 0.5) / size as f32, ((p / size) as f32 + 0.5) / size as f32);
                    let (alpha, rgb) = match path {
                        CardPath::ThreeViews => {
                            let depth =
                                |view: u32, uv: [f32; 2]| stored_depth(tier, normal_depth, layer, view, uv);
                            let samples = card_samples(&tier.grid, d, u, v, depth);
                            reconstruct(tier, level_texels.0, palette_ids, layer, samples)
                        }
                        CardPath::OneView => {
                            let sample = one_view_sample(&tier.grid, d, u, v);
                            one_view_texel(tier, level, level_texels, palette, layer, sample)
                        }
                    };
                    let r = reference.color[p];
                    let ra = f32::from(r[3]) / 255.0;
                    inter += ra.min(alpha);
                    union += ra.max(alpha);
                    if ra >= 0.5 && alpha >= 0.5 {
                        let rgb = rgb.map(|c| f32::from(srgb8(c)));
                        diff += (0..3).map(|i| (rgb[i] - f32::from(r[i])).abs()).sum::<f32>() / (3.0 * 255.0);
                        pixels += 1;
                    }
                }
                iou = iou.min(if union > 0.0 { inter / union } else { 1.0 });
                error = error.max(if pixels > 0 { diff / pixels as f32 } else { 0.0 });
            }
            Ok((iou.clamp(0.0, 1.0), error.clamp(0.0, 1.0)))
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

/// A card pixel from three views of `layer` (level 0 of `color`, the tier's colour texels, at
/// least every layer's level 0 long): coverage `sum w a_k` and the coverage-weighted linear colour,
/// each view sampled bilinearly with its coordinates clamped inside its own tile. With
/// `palette_ids` (the normal-depth texels of an asset without materials) each view's colour is
/// multiplied by the built-in palette's colour (variant 0, no tint) of the material id of its
/// nearest texel, as the run time colours such a card.
fn reconstruct(
    tier: &vat_core::format::impostor::ImpostorTier,
    color: &[u8],
    palette_ids: Option<&[u8]>,
    layer: usize,
    samples: [(u32, f32, [f32; 2]); 3],
) -> (f32, [f32; 3]) {
    let (n, tile) = (tier.grid.views_per_side as usize, tier.tile_size as usize);
    let side = n * tile;
    let palette = |view: usize, [u, v]: [f32; 2]| match palette_ids {
        Some(ids) => {
            let (i, j) = (view % n, (view / n).min(n - 1));
            let x = ((u * tile as f32).max(0.0) as usize).min(tile - 1);
            let y = ((v * tile as f32).max(0.0) as usize).min(tile - 1);
            let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4 + 3;
            let id = ids.get(at).copied().unwrap_or(0);
            vat_core::format::reference::palette_color(u32::from(id), 0, [1.0; 3])
        }
        None => [1.0; 3],
    };
    let texel = |view: usize, x: usize, y: usize| {
        let (i, j) = (view % n, (view / n).min(n - 1));
        let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4;
        match color.get(at..at + 4) {
            Some(c) => {
                (f32::from(c[3]) / 255.0, [srgb_to_linear(c[0]), srgb_to_linear(c[1]), srgb_to_linear(c[2])])
            }
            None => (0.0, [0.0; 3]),
        }
    };
    let (mut alpha, mut rgb) = (0.0f32, [0.0f32; 3]);
    for (view, weight, [u, v]) in samples {
        if weight <= 0.0 {
            continue;
        }
        let tint = palette(view as usize, [u, v]);
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
            for ((sum, s), t) in rgb.iter_mut().zip(c).zip(tint) {
                *sum += s * t * w;
            }
        }
    }
    if alpha > 0.0 {
        rgb = rgb.map(|c| c / alpha);
    }
    (alpha, rgb)
}

/// A far card's pixel (the run time's one-view path): the nearest texel at `[u, v]` of view `view`
/// of `layer` at mip level `level` (`color` and `normal_depth`: that level's texels of every
/// layer), transparent outside the view's image; coverage and linear colour, the colour times the
/// palette colour (variant 0, no tint) of the texel's material id with `palette`.
fn one_view_texel(
    tier: &vat_core::format::impostor::ImpostorTier,
    level: u32,
    (color, normal_depth): (&[u8], &[u8]),
    palette: bool,
    layer: usize,
    (view, [u, v]): (u32, [f32; 2]),
) -> (f32, [f32; 3]) {
    if !((0.0..=1.0).contains(&u) && (0.0..=1.0).contains(&v)) {
        return (0.0, [0.0; 3]);
    }
    let n = tier.grid.views_per_side as usize;
    let tile = (tier.tile_size >> level).max(1) as usize;
    let side = n * tile;
    let (x, y) = (((u * tile as f32) as usize).min(tile - 1), ((v * tile as f32) as usize).min(tile - 1));
    let (i, j) = (view as usize % n, (view as usize / n).min(n - 1));
    let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4;
    let Some(c) = color.get(at..at + 4) else { return (0.0, [0.0; 3]) };
    let mut rgb = [srgb_to_linear(c[0]), srgb_to_linear(c[1]), srgb_to_linear(c[2])];
    if palette {
        let id = normal_depth.get(at + 3).copied().unwrap_or(0);
        let tint = vat_core::format::reference::palette_color(u32::from(id), 0, [1.0; 3]);
        for (c, t) in rgb.iter_mut().zip(tint) {
            *c *= t;
        }
    }
    (f32::from(c[3]) / 255.0, rgb)
}

/// View `view`'s stored depth (`2 b - 1` of the normal-depth texels' blue channel, level 0 of
/// `layer`) at `uv`, sampled bilinearly with the coordinates clamped inside the view's tile, as the
/// card's depth correction reads it ([`vat_core::format::impostor::card_samples`]).
fn stored_depth(
    tier: &vat_core::format::impostor::ImpostorTier,
    normal_depth: &[u8],
    layer: usize,
    view: u32,
    [u, v]: [f32; 2],
) -> f32 {
    let (n, tile) = (tier.grid.views_per_side as usize, tier.tile_size as usize);
    let side = n * tile;
    let (i, j) = (view as usize % n, view as usize / n);
    let blue = |x: usize, y: usize| {
        let at = ((layer * side + j * tile + y) * side + i * tile + x) * 4 + 2;
        normal_depth.get(at).map_or(0.5, |&b| f32::from(b) / 255.0)
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

/// Object-space positions and normals of all `count` vertices at frame `k` of `frames` evenly
/// spaced ones of clip `clip` (phase `k / frames`, linear interpolation): what a tier's image of
/// that frame draws.
fn object_frame(
    view: &vat_core::format::reference::VertexAnimationView<'_>,
    clip: u32,
    k: u32,
    frames: u32,
    count: usize,
) -> Result<(Vec<Vec3>, Vec<Vec3>)> {
    let (mut positions, mut normals) = (vec![[0.0f32; 3]; count], vec![[0.0f32; 3]; count]);
    let phase = k as f32 / frames as f32;
    let interp = vat_core::playback::Interpolation::Linear;
    vat_core::format::reference::decode_object_frame(
        view,
        clip,
        phase,
        interp,
        &mut positions,
        &mut normals,
    )?;
    Ok((positions.into_iter().map(Vec3::from).collect(), normals.into_iter().map(Vec3::from).collect()))
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

/// One tile at one mip level: its colour texels per colour set and its normal-depth texels.
type TileLevel = (Vec<Vec<[u8; 4]>>, Vec<[u8; 4]>);

/// The two blobs of a tier: `images[layer][view]` placed as tiles of their layer, level 0 of every
/// layer, then each further level (each tile halved by [`halve_tile`]) of every layer; the colour
/// blob holds every colour set's layers at each level, set after set.
fn assemble_layers(images: &[Vec<ViewImage>], per_side: u32, tile: u32, levels: u32) -> (Vec<u8>, Vec<u8>) {
    let (mut color, mut normal_depth) = (Vec::new(), Vec::new());
    // Each image's chain of (colour sets, normal-depth) tiles, level by level.
    let mut chains: Vec<Vec<TileLevel>> = images
        .iter()
        .flatten()
        .map(|image| {
            let sets = std::iter::once(&image.color).chain(&image.variant_colors).cloned().collect();
            vec![(sets, image.normal_depth.clone())]
        })
        .collect();
    let sets = chains.first().map_or(1, |chain| chain[0].0.len());
    for level in 1..levels {
        let side = (tile >> (level - 1)) as usize;
        for chain in &mut chains {
            let (c, nd) = chain.last().cloned().unwrap_or_default();
            // The normal-depth tile from the first set (every set has the same coverage).
            let (first, half_nd) = halve_tile(c.first().map_or(&[][..], Vec::as_slice), &nd, side);
            let mut half = vec![first];
            half.extend(c.iter().skip(1).map(|set| halve_tile(set, &nd, side).0));
            chain.push((half, half_nd));
        }
    }
    let per_side = per_side as usize;
    for level in 0..levels as usize {
        let side = (tile >> level) as usize;
        let layer_side = side * per_side;
        for set in 0..sets {
            for layer in chains.chunks(per_side * per_side) {
                for y in 0..layer_side {
                    let (j, ty) = (y / side, y % side);
                    for x in 0..layer_side {
                        let (i, tx) = (x / side, x % side);
                        let (c, nd) = &layer[j * per_side + i][level];
                        color.extend_from_slice(&c[set][ty * side + tx]);
                        if set == 0 {
                            normal_depth.extend_from_slice(&nd[ty * side + tx]);
                        }
                    }
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
            // The material id of the most covered child (the first in reading order on a tie): ids
            // do not average.
            let (mut material, mut most) = (0u8, 0u8);
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let at = (2 * y + dy) * side + 2 * x + dx;
                let (c, nd) = (color[at], normal_depth[at]);
                if c[3] > most {
                    (material, most) = (nd[3], c[3]);
                }
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
                material,
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
