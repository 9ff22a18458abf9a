//! A host renderer that owns its frame and draws vat crowds inside it: its own scene (a ground, a
//! low wall, a tall building), camera, sun, shadow map, shader and passes, with two crowds of two
//! assets (procedural humanoids and soft-body banners) drawn into the host's shadow map
//! (`draw_depth`) and into its colour pass with the shared depth buffer (`draw`). The wall hides
//! part of the crowd, the building shadows the crowd and the crowd shadows the host's ground. The
//! same host code runs on both backends; see `vat_examples::embed`.
//!
//! `cargo run --release -p vat-examples --example embed -- --backend wgpu|vulkan [--culling cpu|gpu] [--msaa] --out embed.png`
//! (`--msaa`: the host's colour pass at 4 samples, resolved into its image).

use std::path::PathBuf;

use anyhow::{Result, bail};
use vat_core::render::Culling;
use vat_examples::embed::{HostFrame, MSAA_SAMPLES, SIZE, Scene, assets};
use vat_examples::embed::{vulkan_host::VulkanHost, wgpu_host::WgpuHost};

fn main() -> Result<()> {
    let mut backend = String::from("wgpu");
    let mut out = PathBuf::from("embed.png");
    let mut culling = Culling::Cpu;
    let mut samples = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow::anyhow!("{arg} needs a value"));
        match arg.as_str() {
            "--backend" => backend = value()?,
            "--out" => out = PathBuf::from(value()?),
            "--culling" => {
                culling = match value()?.as_str() {
                    "cpu" => Culling::Cpu,
                    "gpu" => Culling::Gpu,
                    other => bail!("--culling {other}: expected cpu or gpu"),
                }
            }
            "--msaa" => samples = MSAA_SAMPLES,
            other => bail!(
                "unknown argument {other}; usage: embed [--backend wgpu|vulkan] [--culling cpu|gpu] [--msaa] [--out embed.png]"
            ),
        }
    }
    let frame = HostFrame { culling, samples, ..HostFrame::default() };
    let assets = assets()?;
    let (adapter, (pixels, report)) = match backend.as_str() {
        "wgpu" => {
            let mut host = WgpuHost::example(Scene::new(), &assets)?;
            (host.adapter_name(), host.render(&frame)?)
        }
        "vulkan" => {
            let mut host = VulkanHost::example(Scene::new(), &assets)?;
            let result = host.render(&frame)?;
            (host.adapter_name(), result)
        }
        other => bail!("--backend {other}: expected wgpu or vulkan"),
    };
    vat_examples::support::save_png(&out, SIZE, &pixels)?;
    let draws = report.draws_main;
    println!(
        "host frame with 2 crowds on {adapter} ({culling:?} culling, {samples}x MSAA, {draws} vat body draws) -> {}",
        out.display()
    );
    Ok(())
}
