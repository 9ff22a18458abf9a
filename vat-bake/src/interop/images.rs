//! EXR and PNG textures in and out, bounded: an image's size is read from its header and charged to
//! the budget before its pixels are decoded.

use std::io::Cursor;
use std::path::Path;

use super::{Budget, bad};
use crate::Result;

/// What kind of samples a texture had in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SampleKind {
    /// EXR 16-bit float.
    Half,
    /// EXR 32-bit float (or 32-bit unsigned int).
    Float,
    /// PNG with this many bits per channel, read as `value / (2^bits - 1)`.
    Unorm(u8),
}

impl SampleKind {
    /// The largest rounding error of a value in `[0, 1]` stored this way, relative to the range:
    /// half a step (a half float has 11 significant bits, so a step below 1 is at most 2^-11).
    pub(crate) fn half_step(self) -> f32 {
        match self {
            SampleKind::Half => 0.5 * 2f32.powi(-11),
            SampleKind::Float => 0.5 * 2f32.powi(-24),
            SampleKind::Unorm(bits) => 0.5 / ((1u32 << bits) - 1) as f32,
        }
    }
}

/// A decoded texture: RGBA per texel, rows top to bottom (row 0 is the file's first scanline).
#[derive(Debug, Clone, PartialEq)]
pub struct Texture {
    /// Texels a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    pub(crate) texels: Vec<[f32; 4]>,
    pub(crate) kind: SampleKind,
}

impl Texture {
    pub(crate) fn at(&self, col: usize, row: usize) -> [f32; 4] {
        self.texels[row * self.width + col]
    }
}

/// Reads an EXR or PNG texture (by extension; the content must match).
pub(crate) fn read_texture(path: &Path, what: &str, budget: &mut Budget) -> Result<Texture> {
    let bytes = super::read_file(path, what, budget)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "exr" => decode_exr(&bytes, path, budget),
        "png" => decode_png(&bytes, path, budget),
        _ => Err(bad(path, what, "is neither .exr nor .png")),
    }
}

/// Decodes EXR bytes: the first layer's `R`, `G`, `B` (required) and `A` (optional, 1 when absent)
/// channels at full resolution, as f32.
pub fn decode_exr(bytes: &[u8], path: &Path, budget: &mut Budget) -> Result<Texture> {
    use exr::prelude::*;
    if bytes.len() < 4 || bytes[..4] != [0x76, 0x2f, 0x31, 0x01] {
        return Err(bad(path, "the EXR", "does not start with the EXR magic number (76 2f 31 01)"));
    }
    let meta = MetaData::read_from_buffered(Cursor::new(bytes), false)
        .map_err(|e| bad(path, "the EXR header", e.to_string()))?;
    let Some(header) = meta.headers.first() else {
        return Err(bad(path, "the EXR header", "has no layer"));
    };
    let (w, h) = (header.layer_size.width(), header.layer_size.height());
    let area = (w as u64).saturating_mul(h as u64);
    if w == 0 || h == 0 {
        return Err(bad(path, "the EXR", format!("is {w} x {h}: empty")));
    }
    // The texels, and the decoder's own copy of a block at a time (bounded by the file).
    budget.charge(&format!("{} x {} texels of {}", w, h, path.display()), area.saturating_mul(16))?;
    let mut kind = SampleKind::Half;
    for c in header.channels.list.iter() {
        if matches!(c.sample_type, SampleType::F32 | SampleType::U32) && c.name.to_string() != "A" {
            kind = SampleKind::Float;
        }
    }
    let decoded = std::panic::catch_unwind(|| {
        read()
            .no_deep_data()
            .largest_resolution_level()
            .specific_channels()
            .required("R")
            .required("G")
            .required("B")
            .optional("A", 1.0f32)
            .collect_pixels(
                |size, _| (size.width(), vec![[0.0f32; 4]; size.area()]),
                |(width, texels): &mut (usize, Vec<[f32; 4]>), pos, (r, g, b, a): (f32, f32, f32, f32)| {
                    if let Some(t) = texels.get_mut(pos.y() * *width + pos.x()) {
                        *t = [r, g, b, a];
                    }
                },
            )
            .first_valid_layer()
            .all_attributes()
            .non_parallel()
            .from_buffered(Cursor::new(bytes))
    });
    let image = match decoded {
        Ok(Ok(image)) => image,
        Ok(Err(e)) => return Err(bad(path, "the EXR", format!("does not decode: {e}"))),
        Err(_) => return Err(bad(path, "the EXR", "does not decode (the decoder gave up on it)")),
    };
    let (width, texels) = image.layer_data.channel_data.pixels;
    let height = texels.len().checked_div(width).unwrap_or(0);
    if width != w || height != h {
        return Err(bad(
            path,
            "the EXR",
            format!("decoded to {width} x {height}, its header says {w} x {h}"),
        ));
    }
    Ok(Texture { width, height, texels, kind })
}

/// Decodes PNG bytes (grey, grey + alpha, RGB or RGBA, 8 or 16 bits; palettes expanded): raw values
/// over the largest code, with no colour-space conversion (these tools write linear data even
/// where the file says `sRGB`).
pub fn decode_png(bytes: &[u8], path: &Path, budget: &mut Budget) -> Result<Texture> {
    let limit = usize::try_from(budget.left()).unwrap_or(usize::MAX);
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(bytes), png::Limits { bytes: limit });
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader =
        decoder.read_info().map_err(|e| bad(path, "the PNG", format!("does not decode: {e}")))?;
    let (w, h) = reader.info().size();
    let (w, h) = (w as usize, h as usize);
    let Some(size) = reader.output_buffer_size() else {
        return Err(bad(path, "the PNG", format!("is {w} x {h}: too large")));
    };
    budget.charge(
        &format!("{w} x {h} texels of {}", path.display()),
        (size as u64).saturating_add((w * h) as u64 * 16),
    )?;
    let (color, depth) = reader.output_color_type();
    let mut buf = vec![0u8; size];
    reader.next_frame(&mut buf).map_err(|e| bad(path, "the PNG", format!("does not decode: {e}")))?;
    let channels = color.samples();
    let bits: u8 = match depth {
        png::BitDepth::Sixteen => 16,
        _ => 8,
    };
    let bytes_per_sample = if bits == 16 { 2 } else { 1 };
    let max = ((1u32 << bits) - 1) as f32;
    let stride = w * channels * bytes_per_sample;
    let mut texels = Vec::with_capacity(w * h);
    for row in 0..h {
        let line =
            buf.get(row * stride..(row + 1) * stride).ok_or_else(|| bad(path, "the PNG", "is truncated"))?;
        for px in line.chunks_exact(channels * bytes_per_sample) {
            let sample = |i: usize| -> f32 {
                if bits == 16 {
                    f32::from(u16::from_be_bytes([px[2 * i], px[2 * i + 1]])) / max
                } else {
                    f32::from(px[i]) / max
                }
            };
            texels.push(match channels {
                1 => [sample(0), sample(0), sample(0), 1.0],
                2 => [sample(0), sample(0), sample(0), sample(1)],
                3 => [sample(0), sample(1), sample(2), 1.0],
                _ => [sample(0), sample(1), sample(2), sample(3)],
            });
        }
    }
    if w == 0 || h == 0 {
        return Err(bad(path, "the PNG", format!("is {w} x {h}: empty")));
    }
    Ok(Texture { width: w, height: h, texels, kind: SampleKind::Unorm(bits) })
}

/// How an exported texture is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextureFormat {
    /// 16-bit RGB PNG.
    Png16,
    /// Half-float RGB EXR (ZIP compressed), as Blender writes OpenVAT bakes.
    Exr16,
    /// 32-bit float RGB EXR (ZIP compressed).
    Exr32,
}

impl TextureFormat {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            TextureFormat::Png16 => "png",
            TextureFormat::Exr16 | TextureFormat::Exr32 => "exr",
        }
    }

    pub(crate) fn kind(self) -> SampleKind {
        match self {
            TextureFormat::Png16 => SampleKind::Unorm(16),
            TextureFormat::Exr16 => SampleKind::Half,
            TextureFormat::Exr32 => SampleKind::Float,
        }
    }

    /// `v` in `[0, 1]` as this format stores it, read back (what a decoder sees).
    #[cfg(test)]
    pub(crate) fn quantise(self, v: f32) -> f32 {
        let v = v.clamp(0.0, 1.0);
        match self {
            TextureFormat::Png16 => (v * 65535.0).round() / 65535.0,
            TextureFormat::Exr16 => half::f16::from_f32(v).to_f32(),
            TextureFormat::Exr32 => v,
        }
    }
}

/// Encodes `w x h` RGB values in `[0, 1]` (rows top to bottom) in `format`.
pub fn encode_texture(format: TextureFormat, w: usize, h: usize, rgb: &[[f32; 3]]) -> Result<Vec<u8>> {
    use exr::prelude::*;
    let mut out = Vec::new();
    let fail = |e: String| crate::BakeError::InvalidInput { part: "the exported texture".into(), problem: e };
    let at = |x: usize, y: usize| rgb.get(y * w + x).copied().unwrap_or([0.0; 3]);
    match format {
        TextureFormat::Png16 => {
            let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Sixteen);
            let mut writer = encoder.write_header().map_err(|e| fail(e.to_string()))?;
            let mut data = Vec::with_capacity(w * h * 6);
            for y in 0..h {
                for x in 0..w {
                    for c in at(x, y) {
                        let q = (c.clamp(0.0, 1.0) * 65535.0).round() as u16;
                        data.extend_from_slice(&q.to_be_bytes());
                    }
                }
            }
            writer.write_image_data(&data).map_err(|e| fail(e.to_string()))?;
            writer.finish().map_err(|e| fail(e.to_string()))?;
        }
        TextureFormat::Exr16 => {
            let channels = SpecificChannels::rgb(|p: Vec2<usize>| {
                let [r, g, b] = at(p.x(), p.y());
                (f16::from_f32(r), f16::from_f32(g), f16::from_f32(b))
            });
            let layer = Layer::new((w, h), LayerAttributes::default(), Encoding::SMALL_LOSSLESS, channels);
            Image::from_layer(layer)
                .write()
                .non_parallel()
                .to_buffered(Cursor::new(&mut out))
                .map_err(|e| fail(e.to_string()))?;
        }
        TextureFormat::Exr32 => {
            let channels = SpecificChannels::rgb(|p: Vec2<usize>| {
                let [r, g, b] = at(p.x(), p.y());
                (r, g, b)
            });
            let layer = Layer::new((w, h), LayerAttributes::default(), Encoding::SMALL_LOSSLESS, channels);
            Image::from_layer(layer)
                .write()
                .non_parallel()
                .to_buffered(Cursor::new(&mut out))
                .map_err(|e| fail(e.to_string()))?;
        }
    }
    Ok(out)
}

/// Encodes `w x h` RGBA values (rows top to bottom) as a 32-bit float RGBA EXR, as Houdini's VAT 3
/// ROP writes its HDR textures (values as they are, not remapped).
pub fn encode_rgba_exr32(w: usize, h: usize, rgba: &[[f32; 4]]) -> Result<Vec<u8>> {
    use exr::prelude::*;
    let mut out = Vec::new();
    let at = |x: usize, y: usize| rgba.get(y * w + x).copied().unwrap_or([0.0; 4]);
    let channels = SpecificChannels::rgba(|p: Vec2<usize>| {
        let [r, g, b, a] = at(p.x(), p.y());
        (r, g, b, a)
    });
    let layer = Layer::new((w, h), LayerAttributes::default(), Encoding::SMALL_LOSSLESS, channels);
    Image::from_layer(layer).write().non_parallel().to_buffered(Cursor::new(&mut out)).map_err(|e| {
        crate::BakeError::InvalidInput { part: "the RGBA texture".into(), problem: e.to_string() }
    })?;
    Ok(out)
}

/// Encodes `w x h` RGBA byte codes (rows top to bottom) as an 8-bit RGBA PNG, as Houdini's VAT 3
/// ROP writes its LDR textures.
pub fn encode_rgba_png8(w: usize, h: usize, rgba: &[[u8; 4]]) -> Result<Vec<u8>> {
    let fail = |e: String| crate::BakeError::InvalidInput { part: "the RGBA texture".into(), problem: e };
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| fail(e.to_string()))?;
    let mut data: Vec<u8> = rgba.iter().flatten().copied().collect();
    data.resize(w * h * 4, 0);
    writer.write_image_data(&data).map_err(|e| fail(e.to_string()))?;
    writer.finish().map_err(|e| fail(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_reads_back_within_its_step() {
        let (w, h) = (7, 3);
        let rgb: Vec<[f32; 3]> =
            (0..w * h).map(|i| [i as f32 / 20.0, 1.0 - i as f32 / 20.0, (i % 5) as f32 / 4.0]).collect();
        for format in [TextureFormat::Png16, TextureFormat::Exr16, TextureFormat::Exr32] {
            let bytes = encode_texture(format, w, h, &rgb).unwrap();
            let path = Path::new("t").with_extension(format.extension());
            let mut budget = Budget::new(1 << 20);
            let t = match format {
                TextureFormat::Png16 => decode_png(&bytes, &path, &mut budget),
                _ => decode_exr(&bytes, &path, &mut budget),
            }
            .unwrap();
            assert_eq!((t.width, t.height, t.kind), (w, h, format.kind()));
            for (i, want) in rgb.iter().enumerate() {
                for (c, &w) in want.iter().enumerate() {
                    let got = t.texels[i][c];
                    assert_eq!(got, format.quantise(w), "{format:?} texel {i}");
                    assert!((got - w).abs() <= format.kind().half_step() * 1.0001, "{format:?}");
                }
            }
            // Truncated files are typed errors.
            // (A PNG that lost only its IEND chunk still holds every texel and may decode.)
            for cut in [3, 40, bytes.len() / 2] {
                let r = match format {
                    TextureFormat::Png16 => decode_png(&bytes[..cut], &path, &mut Budget::new(1 << 20)),
                    _ => decode_exr(&bytes[..cut], &path, &mut Budget::new(1 << 20)),
                };
                assert!(r.is_err(), "{format:?} cut at {cut}");
            }
            // A budget smaller than the texels is refused before decoding.
            let r = match format {
                TextureFormat::Png16 => decode_png(&bytes, &path, &mut Budget::new(64)),
                _ => decode_exr(&bytes, &path, &mut Budget::new(64)),
            };
            assert!(r.is_err());
        }
    }
}
