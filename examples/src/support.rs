//! What the examples share besides the simulation: an asset to show and a way to save a frame.

use std::path::Path;

use anyhow::{Context, Result};

/// The bytes of a `.vat`: the file at `path`, or the procedural humanoid baked in memory (with bones).
pub fn asset_bytes(path: Option<&Path>) -> Result<Vec<u8>> {
    match path {
        Some(p) => std::fs::read(p).with_context(|| format!("{}: cannot read", p.display())),
        None => {
            let rig = vat_procgen::humanoid();
            let options = vat_bake::prepare::BakeOptions { bones: true, ..Default::default() };
            Ok(vat_bake::prepare::prepare(&rig, &options)?.to_vat_bytes()?)
        }
    }
}

/// Writes 8-bit RGBA pixels as a PNG (atomically).
pub fn save_png(path: &Path, size: [u32; 2], rgba: &[u8]) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, size[0], size[1]);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        encoder.write_header()?.write_image_data(rgba)?;
    }
    vat_core::files::write_file_atomically(path, &bytes)
        .with_context(|| format!("{}: cannot write", path.display()))
}
