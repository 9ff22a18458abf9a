//! Writes a textured character to glTF: the procedural humanoid with a JPEG base colour texture, a
//! PNG normal map and a metallic-roughness texture (a stand-in for a real textured export such as
//! CesiumMan), for trying the material pipeline end to end:
//!
//! ```text
//! cargo run --release -p vat-examples --example textured_character -- textured.glb
//! cargo run --release -p vat-cli -- bake textured.glb --tangents -o textured.vat
//! cargo run --release -p vat-cli -- inspect textured.vat
//! cargo run --release -p vat-cli -- render textured.vat --count 16 -o textured.png
//! ```

use anyhow::Context as _;

fn main() -> anyhow::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "textured.glb".into());
    let bytes = vat_procgen::testdata::textured_humanoid_glb();
    std::fs::write(&out, &bytes).with_context(|| format!("writing {out}"))?;
    println!("wrote {out} ({} bytes): 2 materials, 3 embedded textures", bytes.len());
    Ok(())
}
