//! Material texture arrays: a rig's decoded images resampled to one layer size per array, with a
//! full box-filtered mip chain (in linear light for sRGB arrays), laid out as
//! [`vat_core::container::TextureArray`] documents.

use image::RgbaImage;
use image::imageops::FilterType;
use vat_core::container::{BlobId, TextureArray, TextureColorSpace, TextureSource};

use crate::rig::MaterialImage;

/// Default largest layer side of a material texture array (`--material-texture-size`), texels.
pub const DEFAULT_MATERIAL_TEXTURE_SIZE: u32 = 1024;

/// The layer size of an array of `images` under `max_side`: the largest width and the largest
/// height among them, each rounded up to a power of two and capped at `max_side` (itself rounded
/// down to a power of two, at least 1).
pub fn layer_size(images: &[MaterialImage], max_side: u32) -> (u32, u32) {
    let cap = if max_side == 0 { 1 } else { 1 << (31 - max_side.leading_zeros()) };
    let fit = |v: u32| v.max(1).checked_next_power_of_two().unwrap_or(cap).min(cap);
    let w = images.iter().map(|i| i.width).max().unwrap_or(1);
    let h = images.iter().map(|i| i.height).max().unwrap_or(1);
    (fit(w), fit(h))
}

/// The bytes building the material texture arrays of `materials` holds at once under `max_side`:
/// for each array, its mip chain twice (the levels, then the blob they are copied into) plus one
/// resampled layer in flight, and the file read back for verification holds the blob once more.
/// The decoded images themselves are the rig's, counted by the caller.
pub fn material_texture_bytes(materials: &crate::rig::RigMaterials, max_side: u32) -> u64 {
    let array = |images: &[MaterialImage]| -> u64 {
        if images.is_empty() {
            return 0;
        }
        let (w, h) = layer_size(images, max_side);
        let layer = u64::from(w) * u64::from(h) * 4;
        // A full mip chain is at most 4/3 of level 0.
        let chain = (layer.saturating_mul(images.len() as u64)).saturating_mul(4) / 3;
        chain.saturating_mul(3).saturating_add(layer)
    };
    array(&materials.color_images).saturating_add(array(&materials.data_images))
}

/// The texture array of `images` (each resampled bilinearly to [`layer_size`] when its size
/// differs, with one note saying so), and its texel blob (every layer's level 0, then level 1, ...).
/// The array's `texels` is a placeholder [`BlobId`] the caller replaces. `None` without images.
pub fn texture_array(
    images: &[MaterialImage],
    color_space: TextureColorSpace,
    max_side: u32,
    notes: &mut Vec<String>,
) -> Option<(TextureArray, Vec<u8>)> {
    if images.is_empty() {
        return None;
    }
    let (width, height) = layer_size(images, max_side);
    let srgb = color_space == TextureColorSpace::Srgb;
    let mut levels: Vec<Vec<RgbaImage>> = Vec::new();
    let mut level0 = Vec::with_capacity(images.len());
    for img in images {
        // Borrowed: only the layer that goes into the array is a new image.
        let source =
            image::ImageBuffer::<image::Rgba<u8>, &[u8]>::from_raw(img.width, img.height, &img.rgba[..]);
        let Some(source) = source else {
            level0.push(RgbaImage::new(width, height));
            continue;
        };
        if (img.width, img.height) == (width, height) {
            level0.push(
                RgbaImage::from_raw(width, height, img.rgba.clone())
                    .unwrap_or_else(|| RgbaImage::new(width, height)),
            );
        } else {
            notes.push(format!(
                "texture {}: {}x{} resampled to {width}x{height} (the {} array's layer size; \
                 --material-texture-size caps it)",
                img.name,
                img.width,
                img.height,
                if srgb { "colour" } else { "data" },
            ));
            level0.push(image::imageops::resize(&source, width, height, FilterType::Triangle));
        }
    }
    levels.push(level0);
    let mip_levels = TextureArray::full_mip_levels(width, height);
    for _ in 1..mip_levels {
        let next = levels.last().map(|l| l.iter().map(|i| half_size(i, srgb)).collect()).unwrap_or_default();
        levels.push(next);
    }
    let mut bytes = Vec::new();
    for level in &levels {
        for layer in level {
            bytes.extend_from_slice(layer.as_raw());
        }
    }
    let layers = images
        .iter()
        .map(|i| TextureSource { name: i.name.clone(), width: i.width, height: i.height })
        .collect();
    Some((TextureArray { width, height, mip_levels, color_space, layers, texels: BlobId(0) }, bytes))
}

/// sRGB-encoded byte to linear (exact transfer function).
pub(crate) fn srgb_to_linear(v: u8) -> f32 {
    let c = f32::from(v) / 255.0;
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

/// Linear to the nearest sRGB-encoded byte.
fn linear_to_srgb(c: f32) -> u8 {
    let c = c.clamp(0.0, 1.0);
    let e = if c <= 0.003_130_8 { c * 12.92 } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
    (e * 255.0).round() as u8
}

/// The next mip level of `img`: each texel the mean of the 2x2 (or 2x1, 1x2 once a side is 1)
/// texels it covers; RGB averaged in linear light when `srgb`, alpha always linearly.
fn half_size(img: &RgbaImage, srgb: bool) -> RgbaImage {
    let (w, h) = img.dimensions();
    let (nw, nh) = ((w / 2).max(1), (h / 2).max(1));
    let lut: Vec<f32> = (0..=255u8).map(srgb_to_linear).collect();
    let mut out = RgbaImage::new(nw, nh);
    for y in 0..nh {
        for x in 0..nw {
            let xs = if w > 1 { [2 * x, 2 * x + 1] } else { [0, 0] };
            let ys = if h > 1 { [2 * y, 2 * y + 1] } else { [0, 0] };
            let mut sum = [0.0f32; 4];
            for &sy in &ys {
                for &sx in &xs {
                    let p = img.get_pixel(sx, sy).0;
                    for c in 0..3 {
                        sum[c] += if srgb { lut[usize::from(p[c])] } else { f32::from(p[c]) / 255.0 };
                    }
                    sum[3] += f32::from(p[3]) / 255.0;
                }
            }
            let mean = sum.map(|s| s / 4.0);
            let rgb = |c: usize| if srgb { linear_to_srgb(mean[c]) } else { (mean[c] * 255.0).round() as u8 };
            out.put_pixel(x, y, image::Rgba([rgb(0), rgb(1), rgb(2), (mean[3] * 255.0).round() as u8]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(name: &str, width: u32, height: u32, f: impl Fn(u32, u32) -> [u8; 4]) -> MaterialImage {
        let mut bytes = Vec::new();
        for y in 0..height {
            for x in 0..width {
                bytes.extend_from_slice(&f(x, y));
            }
        }
        MaterialImage { name: name.into(), width, height, rgba: bytes }
    }

    #[test]
    fn layers_take_the_largest_power_of_two_under_the_cap() {
        let a = image("a", 300, 64, |_, _| [0; 4]);
        let b = image("b", 100, 200, |_, _| [0; 4]);
        assert_eq!(layer_size(&[a.clone(), b.clone()], 1024), (512, 256));
        assert_eq!(layer_size(&[a.clone(), b], 300), (256, 256));
        assert_eq!(layer_size(&[a], 0), (1, 1));
    }

    #[test]
    fn the_mip_chain_is_complete_and_box_filtered_in_linear_light() {
        // A 4x2 checker of black and white: every level below 0 averages to mid grey in linear
        // light, i.e. sRGB byte 188 (not 128, which averaging the encoded bytes would give).
        let checker = image("checker", 4, 2, |x, y| if (x + y) % 2 == 0 { [0, 0, 0, 255] } else { [255; 4] });
        let mut notes = Vec::new();
        let (array, bytes) =
            texture_array(std::slice::from_ref(&checker), TextureColorSpace::Srgb, 1024, &mut notes).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!((array.width, array.height, array.mip_levels), (4, 2, 3));
        assert_eq!(bytes.len() as u64, array.byte_len().unwrap());
        let (offset, len) = array.mip_range(1).unwrap();
        let level1 = &bytes[offset as usize..(offset + len) as usize];
        assert_eq!(level1, [188, 188, 188, 255, 188, 188, 188, 255]);
        let (offset, _) = array.mip_range(2).unwrap();
        assert_eq!(&bytes[offset as usize..], [188, 188, 188, 255]);
        // A data array averages the bytes themselves.
        let (array, bytes) = texture_array(&[checker], TextureColorSpace::Linear, 1024, &mut notes).unwrap();
        let (offset, len) = array.mip_range(1).unwrap();
        assert_eq!(
            &bytes[offset as usize..(offset + len) as usize],
            [128, 128, 128, 255, 128, 128, 128, 255]
        );
    }

    #[test]
    fn a_resampled_image_is_said_in_a_note() {
        let small = image("small.png", 2, 2, |_, _| [10, 20, 30, 255]);
        let large = image("large.png", 8, 8, |_, _| [200, 100, 50, 255]);
        let mut notes = Vec::new();
        let (array, bytes) =
            texture_array(&[small, large], TextureColorSpace::Srgb, 1024, &mut notes).unwrap();
        assert_eq!((array.width, array.height, array.layers.len()), (8, 8, 2));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("small.png: 2x2 resampled to 8x8"), "{notes:?}");
        // A flat image stays flat when resampled, and layer 1 follows layer 0 in level 0.
        assert!(bytes[..8 * 8 * 4].chunks(4).all(|p| p == [10, 20, 30, 255]));
        assert!(bytes[8 * 8 * 4..2 * 8 * 8 * 4].chunks(4).all(|p| p == [200, 100, 50, 255]));
        assert_eq!(array.layers[0], TextureSource { name: "small.png".into(), width: 2, height: 2 });
    }
}
