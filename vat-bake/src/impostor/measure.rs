//! How closely a tier stands for its mesh: the near and far cards rebuilt from the tier's images
//! along the run time's two paths and compared with the mesh drawn from the same directions and
//! frames, per colour set; the bake states the result and `vat verify` checks it again.

use super::raster::srgb8;
use super::{
    ImpostorImages, ImpostorMesh, ImpostorOptions, RasterOptions, bake_tier, lod0_indices, object_frame,
    render_view, srgb_to_linear, vertex_albedo_in, vertex_material_ids,
};
use crate::{BakeError, Result};

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
    measure_images(asset, images, options.samples_per_side, CardPath::ThreeViews)
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
    measure_images(asset, images, options.samples_per_side, CardPath::OneView)
}

/// `images` measured along `path` from [`sample_directions`], every colour set, the mesh drawn with
/// `samples_per_side`.
fn measure_images(
    asset: &vat_core::container::Asset<'_>,
    images: &ImpostorImages,
    samples_per_side: u32,
    path: CardPath,
) -> Result<(vat_core::format::impostor::ImpostorBound, u32)> {
    let directions = sample_directions(&images.tier.grid);
    let texels = (images.color.as_slice(), images.normal_depth.as_slice());
    measure_at(asset, &images.tier, texels, images.material_variants, samples_per_side, &directions, path)
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
    let (bound, samples) = measure_images(asset, &images, REFERENCE_SAMPLES_PER_SIDE, CardPath::ThreeViews)?;
    let (one_view, _) = measure_images(asset, &images, REFERENCE_SAMPLES_PER_SIDE, CardPath::OneView)?;
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
pub(super) enum CardPath {
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
pub(super) fn measure_colored(
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
    use vat_core::format::reference::ObjectFrames;
    let m = asset.manifest();
    let input = |problem: String| BakeError::InvalidInput { part: m.name.clone(), problem };
    let view = ObjectFrames::from_asset(asset).map_err(|e| input(e.to_string()))?;
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
