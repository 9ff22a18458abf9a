//! Writes the generated large benchmark asset as a `.glb` (34,560 vertices in 60 skinned
//! primitives, 18 joints, one 35 s clip of 1,050 frames at 30 fps), the shape of a large real
//! export, for timing `vat bake` as a whole process:
//!
//! ```text
//! cargo run --release -p vat-bake --example large_asset -- large.glb
//! vat bake large.glb --out large.vat --max-memory 700M
//! ```

use vat_bake::export::write_glb;
use vat_procgen::testdata::{LargeRigShape, large_rig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "large.glb".to_owned());
    let rig = large_rig(LargeRigShape::ISSUE);
    write_glb(&rig, std::path::Path::new(&out))?;
    println!(
        "wrote {out}: {} vertices, {} primitives, {} joints",
        rig.body_vertex_count(),
        rig.meshes.len(),
        rig.nodes.len()
    );
    Ok(())
}
