//! The impostor tier's bake (issue 33): its options and sizes, the images (`raster`: a
//! deterministic CPU rasteriser; `albedo`: what each vertex looks like), their assembly into the
//! tier's texture arrays with mip chains, its measurement against the mesh (`measure`) and the file
//! written with it.
//!
//! The rasteriser renders one frame of a body from one view of [`vat_core::format::impostor::ViewGrid`] into a small image of colour,
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

use crate::{BakeError, Result};

mod albedo;
mod measure;
mod raster;

use crate::textures::srgb_to_linear;
pub use albedo::{vertex_albedo, vertex_albedo_in, vertex_material_ids};
pub use measure::{
    BOUND_TOLERANCE, REFERENCE_SAMPLES_PER_SIDE, TierCheck, bake_measured_tier, measure_one_view,
    measure_tier, sample_directions, verify_tier,
};
pub use raster::{ImpostorMesh, MAX_SAMPLES_PER_IMAGE_SIDE, RasterOptions, ViewImage, render_view};
use raster::{srgb8, unorm8};

#[cfg(test)]
use albedo::{decode_stream, wrap_texel};
#[cfg(test)]
use measure::{CardPath, measure_colored};

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
    use vat_core::format::reference::ObjectFrames;
    validate_options(options)?;
    let m = asset.manifest();
    let (variants, _) = material_variant_sets(m, options);
    check_tier_size(options, m.clips.len(), variants, u64::MAX)?;
    let input = |problem: &str| BakeError::InvalidInput { part: m.name.clone(), problem: problem.to_owned() };
    let bounds = m.animation_bounds().ok_or_else(|| input("has no animation bounds: no impostor tier"))?;
    let view = ObjectFrames::from_asset(asset).map_err(|e| input(&format!("no impostor tier: {e}")))?;
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

/// Object-space positions and normals of all `count` vertices at frame `k` of `frames` evenly
/// spaced ones of clip `clip` (phase `k / frames`, linear interpolation): what a tier's image of
/// that frame draws.
pub(super) fn object_frame(
    view: &vat_core::format::reference::ObjectFrames<'_>,
    clip: u32,
    k: u32,
    frames: u32,
    count: usize,
) -> Result<(Vec<Vec3>, Vec<Vec3>)> {
    let (mut positions, mut normals) = (vec![[0.0f32; 3]; count], vec![[0.0f32; 3]; count]);
    let phase = k as f32 / frames as f32;
    let interp = vat_core::playback::Interpolation::Linear;
    view.decode_at(clip, phase, interp, &mut positions, &mut normals)?;
    Ok((positions.into_iter().map(Vec3::from).collect(), normals.into_iter().map(Vec3::from).collect()))
}

/// LOD 0's triangles as vertex indices.
pub(super) fn lod0_indices(asset: &vat_core::container::Asset<'_>) -> Option<Vec<u32>> {
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
pub(super) fn halve_tile(
    color: &[[u8; 4]],
    normal_depth: &[[u8; 4]],
    side: usize,
) -> (Vec<[u8; 4]>, Vec<[u8; 4]>) {
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

#[cfg(test)]
#[path = "impostor_tests.rs"]
mod tests;
