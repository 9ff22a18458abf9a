//! Animation control on the procedural humanoid: a wave played once with the idle queued behind it,
//! a ping-ponged clip, a clamped one, and footstep marks on the walk, with the events they raise
//! printed frame by frame, then the last frame rendered (any backend, through the `CrowdRenderer`
//! seam).
//!
//! `cargo run --release -p vat-examples --example animation_control [-- wgpu|vulkan]`

use anyhow::{Context as _, Result, bail};
use vat_core::container::Asset;
use vat_core::crowd::{AnimationEventKind, Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::instance::PlayMode;
use vat_core::render::{CrowdRenderer, RenderOptions};

/// The index of the clip named `name`.
fn clip(asset: &Asset<'_>, name: &str) -> Result<u32> {
    let clips = &asset.manifest().clips;
    let found = clips.iter().position(|c| c.name == name);
    let names: Vec<&str> = clips.iter().map(|c| c.name.as_str()).collect();
    Ok(found.with_context(|| format!("no clip {name:?} (clips: {names:?})"))? as u32)
}

fn main() -> Result<()> {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "wgpu".into());
    let bytes = vat_examples::support::asset_bytes(None)?;
    let asset = Asset::parse(&bytes)?;
    let (idle, walk, wave) = (clip(&asset, "idle")?, clip(&asset, "walk")?, clip(&asset, "wave")?);

    // Events are kept only when asked for (a game that never drains them does not accumulate them).
    let config = CrowdConfig { record_events: true, ..CrowdConfig::default() };
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest())?, config);
    let waver = crowd.spawn([-2.4, 0.0, 0.0], 0.3, idle);
    crowd.play_as(waver, wave, 0.2, PlayMode::Once);
    crowd.play_after(waver, idle, 0.4, PlayMode::AsBaked);
    let ping_pong = crowd.spawn([-0.8, 0.0, 0.0], 0.3, idle);
    crowd.play_as(ping_pong, wave, 0.0, PlayMode::PingPong);
    let clamped = crowd.spawn([0.8, 0.0, 0.0], 0.3, idle);
    crowd.play_as(clamped, walk, 0.0, PlayMode::Clamp);
    let walker = crowd.spawn([2.4, 0.0, 0.0], 0.3, walk);
    // Two footsteps a cycle: the walk's first frame and its middle one.
    let walk_frames = asset.manifest().clips[walk as usize].frame_count;
    crowd.mark_frame(walk, 0);
    crowd.mark_frame(walk, walk_frames / 2);
    crowd.set_speed(walker, 1.4);

    let names = ["waver", "ping-pong", "clamped", "walker"];
    let clip_name = |c: u32| asset.manifest().clips[c as usize].name.clone();
    let (mut footsteps, mut ended) = (0, 0);
    for _ in 0..4 * 30 {
        crowd.advance(1.0 / 30.0);
        for e in crowd.drain_events() {
            let who = names[e.instance as usize];
            match e.kind {
                AnimationEventKind::Ended => {
                    ended += 1;
                    println!("{:6.3} s  {who}: {:?} ended", e.time, clip_name(e.clip));
                }
                AnimationEventKind::Marker { frame } => {
                    footsteps += 1;
                    println!("{:6.3} s  {who}: footstep (frame {frame} of {:?})", e.time, clip_name(e.clip));
                }
            }
        }
    }
    println!(
        "4 s: {ended} clip ended, {footsteps} footsteps; the waver now plays {:?} ({:?})",
        clip_name(crowd.records()[waver as usize].clip_b_index()),
        crowd.play_mode(waver)
    );

    let size = [640, 360];
    let rgba = match backend.as_str() {
        "wgpu" => {
            render(vat_wgpu::Offscreen::new(size, vat_wgpu::RendererConfig::default())?, &asset, &mut crowd)?
        }
        "vulkan" => render(
            vat_vulkan::Offscreen::new(size, vat_vulkan::RendererConfig::default())?,
            &asset,
            &mut crowd,
        )?,
        other => bail!("backend {other:?}: expected wgpu or vulkan"),
    };
    vat_examples::support::save_png(std::path::Path::new("animation_control.png"), size, &rgba)?;
    println!("-> animation_control.png ({backend})");
    Ok(())
}

/// One frame of `crowd` on any backend, read back.
fn render<R: CrowdRenderer>(mut renderer: R, asset: &Asset<'_>, crowd: &mut Crowd) -> Result<Vec<u8>>
where
    R::Error: std::error::Error + Send + Sync + 'static,
{
    let gpu_asset = renderer.upload(asset)?;
    let mut gpu_crowd = renderer.create_crowd(crowd)?;
    let [w, h] = renderer.size();
    let camera = Camera::look_at([0.0, 1.6, 7.0], [0.0, 0.9, 0.0], 0.8, w as f32 / h as f32, 0.1, 100.0);
    let options = RenderOptions { ground: true, ground_half_extent: 12.0, ..RenderOptions::default() };
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, crowd, &camera, &options)?;
    Ok(renderer.read_rgba8()?)
}
