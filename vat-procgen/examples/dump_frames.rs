//! Writes the positions and normals of every frame a rig bakes (30 fps, every clip) as raw little-endian
//! data for the compressed-format research of issue 34 (`scripts/research/compressed/`): a u32 frame
//! count, a u32 vertex count, then per frame the positions and the normals as f32 triples.
//! `cargo run --release -p vat-procgen --example dump_frames -- humanoid /tmp/r34/humanoid.bin`
//! (a built-in source name or a glTF path).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(name), Some(out)) = (args.get(1), args.get(2)) else {
        return Err("usage: dump_frames SOURCE OUT (a built-in source name or a glTF path)".into());
    };
    let fps: f32 = 30.0;
    let rig = match vat_procgen::by_name(name) {
        Some(r) => r?,
        None => vat_bake::gltf_import::import_file(std::path::Path::new(name), &Default::default())?,
    };
    let set = vat_bake::skin::VertexSet::from_rig(&rig)?;
    let mut samples = Vec::new();
    for (c, clip) in rig.clips.iter().enumerate() {
        let n = ((clip.end - clip.start) * fps).ceil().max(1.0) as usize;
        for f in 0..n {
            samples.push((c, clip.start + f as f32 / fps));
        }
    }
    let frames = vat_bake::skin::skin_clip_frames(&rig, &set, &samples, false)?;
    // Built in memory, then written through vat's file gate (temporary file, then rename).
    let v = frames.first().map_or(0, |f| f.positions.len());
    let mut bytes = Vec::with_capacity(8 + frames.len() * v * 24);
    bytes.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&(v as u32).to_le_bytes());
    for frame in &frames {
        for p in frame.positions.iter().chain(&frame.normals) {
            for c in p.to_array() {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
    vat_core::files::write_file_atomically(std::path::Path::new(out), &bytes)?;
    eprintln!("{name}: {} frames x {v} vertices, {} clips", frames.len(), rig.clips.len());
    Ok(())
}
