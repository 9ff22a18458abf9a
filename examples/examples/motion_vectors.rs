//! Motion vectors for TAA and motion blur (`RenderOptions::motion_vectors`): two frames of a crowd
//! walking and turning under a moving camera, drawn through the backend seam on either backend; the
//! second frame's motion target is written to `motion_vectors_<backend>.png` as colour (hue: the
//! direction of the screen motion, brightness: its length, 2 % of the screen = full) beside the
//! frame itself.
//!
//! `cargo run --release -p vat-examples --example motion_vectors [-- wgpu|vulkan|both]`
//!
//! With `both`, the two motion fields are compared and the largest difference is printed.

use anyhow::{Result, bail};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, RenderOptions};

const SIZE: [u32; 2] = [480, 270];

/// Screen motion (fractions of the screen per frame) drawn at full brightness.
const FULL: f32 = 0.02;

fn main() -> Result<()> {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "wgpu".into());
    let bytes = vat_bake::prepare::prepare(&vat_procgen::humanoid(), &Default::default())?.to_vat_bytes()?;
    let asset = Asset::parse(&bytes)?;
    let mut fields = Vec::new();
    for name in match backend.as_str() {
        "both" => vec!["wgpu", "vulkan"],
        "wgpu" | "vulkan" => vec![backend.as_str()],
        other => bail!("backend {other:?}: expected wgpu, vulkan or both"),
    } {
        let (rgba, motion) = if name == "wgpu" {
            two_frames(vat_wgpu::Offscreen::new(SIZE, Default::default())?, &asset)?
        } else {
            two_frames(vat_vulkan::Offscreen::new(SIZE, Default::default())?, &asset)?
        };
        let path = format!("motion_vectors_{name}.png");
        vat_examples::support::save_png(
            std::path::Path::new(&path),
            [SIZE[0] * 2, SIZE[1]],
            &side_by_side(&rgba, &motion),
        )?;
        let largest = motion.iter().map(|m| m[0].hypot(m[1])).fold(0.0f32, f32::max);
        println!("-> {path} (largest motion {largest:.4} of the screen per frame)");
        fields.push(motion);
    }
    if let [a, b] = fields.as_slice() {
        let max = a.iter().zip(b).map(|(p, q)| (p[0] - q[0]).hypot(p[1] - q[1])).fold(0.0f32, f32::max);
        println!("wgpu vs Vulkan: largest motion difference {max:e} of the screen");
    }
    Ok(())
}

/// A 4 x 3 crowd, walking in place and turning, seen by a camera that pans between the frames:
/// the second frame's colour and motion.
fn two_frames<R: CrowdRenderer>(mut renderer: R, asset: &Asset<'_>) -> Result<(Vec<u8>, Vec<[f32; 4]>)>
where
    R::Error: std::error::Error + Send + Sync + 'static,
{
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, CrowdConfig::default());
    let walk = asset.manifest().clips.iter().position(|c| c.name == "walk").unwrap_or(0) as u32;
    let mut ids = Vec::new();
    for k in 0..12u32 {
        let (x, z) = ((k % 4) as f32 * 1.5 - 2.25, (k / 4) as f32 * -1.8);
        ids.push((crowd.spawn_at_phase([x, 0.0, z], 0.3 * k as f32, walk, k as f32 / 12.0), [x, z]));
    }
    let gpu_asset = renderer.upload(asset)?;
    let mut gpu_crowd = renderer.create_crowd(&crowd)?;
    let options = RenderOptions { motion_vectors: true, ground: true, ..RenderOptions::default() };
    let aspect = SIZE[0] as f32 / SIZE[1] as f32;
    for frame in 0..2 {
        let eye = [0.25 * frame as f32, 2.2, 5.5];
        let camera = Camera::look_at(eye, [0.0, 0.9, -1.8], 0.8, aspect, 0.1, 100.0);
        renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)?;
        crowd.advance(1.0 / 30.0);
        for (k, &(id, [x, z])) in ids.iter().enumerate() {
            // Every other character turns and steps sideways between the frames.
            if k % 2 == 1 {
                crowd.set_transform(id, [x + 0.05, 0.0, z], 0.3 * k as f32 + 0.25);
            }
        }
    }
    Ok((renderer.read_rgba8()?, renderer.read_motion()?))
}

/// The frame (left) and the motion field as colour (right), one image of twice the width.
fn side_by_side(rgba: &[u8], motion: &[[f32; 4]]) -> Vec<u8> {
    let [w, h] = SIZE.map(|v| v as usize);
    let mut out = vec![0u8; w * h * 8];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let left = (y * 2 * w + x) * 4;
            out[left..left + 4].copy_from_slice(&rgba[i * 4..i * 4 + 4]);
            let m = motion[i];
            let value = (m[0].hypot(m[1]) / FULL).min(1.0);
            let hue = m[1].atan2(m[0]) / std::f32::consts::TAU + 0.5;
            let [r, g, b] = hsv(hue, 1.0, value);
            let right = (y * 2 * w + w + x) * 4;
            out[right..right + 4].copy_from_slice(&[r, g, b, 255]);
        }
    }
    out
}

/// HSV (each 0..=1) to 8-bit RGB.
fn hsv(h: f32, s: f32, v: f32) -> [u8; 3] {
    let sector = (h.fract() * 6.0).floor();
    let f = h.fract() * 6.0 - sector;
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    let (r, g, b) = match sector as u32 {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    };
    [r, g, b].map(|c| (c * 255.0).round() as u8)
}
