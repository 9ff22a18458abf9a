//! Issue 34 research (scratch, not part of vat): the humanoid's own skin for the frames dump_frames
//! writes: u32 V, u32 B, u32 F; then per vertex 4 x u32 joints, 4 x f32 weights; bind positions and
//! normals (V x 3 f32 each); then per frame B bone matrices (3 x 4 rows, f32).
//! Not built by the workspace: a one-file crate outside it (docs/notes/compressed-format.md,
//! "Reproducing every figure"); read by ownskin.py.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rig = vat_procgen::by_name(&args[1]).ok_or("unknown source")??;
    let set = vat_bake::skin::VertexSet::from_rig(&rig)?;
    let fps = 30.0f32;
    let mut samples = Vec::new();
    for (c, clip) in rig.clips.iter().enumerate() {
        let n = ((clip.end - clip.start) * fps).ceil().max(1.0) as usize;
        for f in 0..n { samples.push((c, clip.start + f as f32 / fps)); }
    }
    assert!(set.morph_targets.is_empty() && set.full_influences.is_empty() && set.influence_count == 4);
    let mut b: Vec<u8> = Vec::new();
    let v = set.vertex_count();
    for x in [v as u32, set.bones.len() as u32, samples.len() as u32] { b.extend_from_slice(&x.to_le_bytes()); }
    for i in 0..v {
        for k in 0..4 { b.extend_from_slice(&(set.joints[i][k] as u32).to_le_bytes()); }
        for k in 0..4 { b.extend_from_slice(&set.weights[i][k].to_le_bytes()); }
    }
    for p in set.positions.iter().chain(&set.normals) { for c in p.to_array() { b.extend_from_slice(&c.to_le_bytes()); } }
    for &(c, t) in &samples {
        let pose = vat_bake::sample::sample_pose(&rig, &rig.clips[c], t);
        let m = vat_bake::skin::bone_matrices(&rig, &set, &vat_bake::sample::global_matrices(&rig, &pose));
        for mm in m {
            for row in 0..3 { for c in mm.row(row).to_array() { b.extend_from_slice(&c.to_le_bytes()); } }
        }
    }
    std::fs::write(&args[2], &b)?;
    eprintln!("{} vertices, {} bones, {} frames", v, set.bones.len(), samples.len());
    Ok(())
}
