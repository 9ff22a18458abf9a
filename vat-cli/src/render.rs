//! `vat render`: a crowd rendered headless (any adapter, including Mesa's software Vulkan driver) into a PNG,
//! on either backend (`--backend wgpu|vulkan`): the frame is written once against vat-core's
//! `CrowdRenderer` seam.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use vat_bake::prepare::{BakeOptions, prepare};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{Culling, RenderMode, RenderOptions};
use vat_examples::embed::vulkan_host::VulkanHost;
use vat_examples::embed::wgpu_host::WgpuHost;
use vat_examples::embed::{HostFrame, Scene};
use vat_examples::scene::{self, DemoLayout, SceneScale};

use crate::demo::OnOff;

/// The ground's colour (linear RGB) in `vat render` and `vat demo`.
pub(crate) const GROUND_COLOR: [f32; 3] = [0.30, 0.33, 0.27];

/// GPU backend.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum BackendArg {
    /// wgpu (default).
    Wgpu,
    /// Raw Vulkan through ash (vat-vulkan), with the validation layer when installed.
    Vulkan,
}

/// Vertex path.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ModeArg {
    /// Vertex animation texture (default).
    Vat,
    /// Skinning from the bone texture (needs an asset baked with --bones).
    Bone,
    /// The bind pose, undeformed (no animation read): the static baseline of the VAT's cost.
    Rest,
}

/// Culling path.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum CullingArg {
    /// Grid cells culled on the CPU (default).
    Cpu,
    /// Every instance culled by a compute pass; indirect draws.
    Gpu,
}

impl From<ModeArg> for RenderMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Vat => RenderMode::Vat,
            ModeArg::Bone => RenderMode::Bone,
            ModeArg::Rest => RenderMode::Rest,
        }
    }
}

impl From<CullingArg> for Culling {
    fn from(culling: CullingArg) -> Self {
        match culling {
            CullingArg::Cpu => Culling::Cpu,
            CullingArg::Gpu => Culling::Gpu,
        }
    }
}

/// `vat render` arguments.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// A .vat asset; without it the procedural humanoid is baked in memory first.
    asset: Option<PathBuf>,
    /// Number of characters.
    #[arg(long, default_value_t = 400)]
    instances: u32,
    /// Output PNG path (written atomically).
    #[arg(long, short)]
    out: PathBuf,
    /// Vertex path.
    #[arg(long, value_enum, default_value_t = ModeArg::Vat)]
    mode: ModeArg,
    /// Culling path.
    #[arg(long, value_enum, default_value_t = CullingArg::Cpu)]
    culling: CullingArg,
    /// GPU backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Wgpu)]
    backend: BackendArg,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    size: [u32; 2],
    /// Seconds of animation before the frame is taken.
    #[arg(long, default_value_t = 1.0)]
    time: f64,
    /// Camera eye and target: six numbers in the asset's units, comma-separated
    /// (`--camera 30,12,30,0,0.8,0`, `--camera -30,12,-30,0,0.8,0`) or as six arguments
    /// (`--camera 30 12 30 0 0.8 0`). Default: above one corner of the crowd looking at its centre, at
    /// distances derived from the asset's size.
    // Negative numbers are values here. A comma list starting with '-' is not a number to clap, so
    // `main` joins `--camera -30,...` into `--camera=-30,...` first (see `join_camera_value`).
    #[arg(
        long,
        value_name = "EX,EY,EZ,TX,TY,TZ",
        value_delimiter = ',',
        num_args = 1..=6,
        allow_negative_numbers = true
    )]
    camera: Option<Vec<String>>,
    /// Vertical field of view, degrees.
    #[arg(long, default_value_t = 50.0)]
    fov: f32,
    /// Disable the shadow pass.
    #[arg(long)]
    no_shadows: bool,
    /// Do not draw the ground (the background is then the sky colour only). The ground is the CLI's
    /// own (a host's), centred on the crowd and covering it.
    #[arg(long)]
    no_ground: bool,
    /// LOD bias in doublings of distance (positive: coarser sooner).
    #[arg(long, default_value_t = 0.0)]
    lod_bias: f32,
    /// The impostor tier: `--impostors` (or `on`) draws the characters past the tier's switch
    /// distance as cards, baking the default tier (`vat bake --impostors`'s) in memory first when the
    /// asset has none; `off` draws every character as a mesh. Without the flag, an asset's own tier
    /// is drawn.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "on")]
    impostors: Option<OnOff>,
    /// Layout seed (same seed, same crowd).
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Memory budget in bytes (suffixes K, M, G: binary): a larger .vat file is refused before it is
    /// read, and --instances may be at most this over 256 bytes.
    #[arg(long, value_parser = crate::bake::parse_bytes, default_value = "4G")]
    max_memory: u64,
}

/// CPU bytes counted per character of `--instances` against `--max-memory`.
const INSTANCE_BYTES: u64 = 256;

/// Refuses a field of view, time or LOD bias the renderer cannot use, naming the flag and the range.
fn check_view_args(args: &RenderArgs) -> Result<()> {
    if !(args.fov.is_finite() && args.fov > 0.0 && args.fov < 180.0) {
        bail!(
            "--fov {}: the vertical field of view must be a number of degrees above 0 and below 180",
            args.fov
        );
    }
    if !(args.time.is_finite() && args.time >= 0.0) {
        bail!("--time {}: seconds of animation must be a finite number >= 0", args.time);
    }
    if !(args.lod_bias.is_finite() && args.lod_bias.abs() <= 16.0) {
        bail!(
            "--lod-bias {}: the LOD bias must be a finite number of doublings from -16 to 16",
            args.lod_bias
        );
    }
    Ok(())
}

fn parse_size(s: &str) -> Result<[u32; 2], String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("bad width in {s:?}"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("bad height in {s:?}"))?;
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!("{s:?}: width and height must be 1..=16384"));
    }
    Ok([w, h])
}

/// The command line with `--camera V` joined into `--camera=V` where `V` starts with `-` and holds a
/// comma (`--camera -30,12,-30,0,0.8,0`): clap reads a lone `-30` as a number but `-30,12,...` as a
/// short flag. Every other argument is passed through unchanged.
pub(crate) fn join_camera_value(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let joins = arg == "--camera"
            && args.peek().and_then(|v| v.to_str()).is_some_and(|v| v.starts_with('-') && v.contains(','));
        match (joins, args.next_if(|_| joins)) {
            (true, Some(value)) => {
                let mut joined = std::ffi::OsString::from("--camera=");
                joined.push(value);
                out.push(joined);
            }
            _ => out.push(arg),
        }
    }
    out
}

/// `--camera`'s values (each may hold several comma- or space-separated numbers) as eye and target.
///
/// # Errors
/// Unless there are exactly six finite numbers in all and the eye differs from the target.
fn parse_camera(values: &[String]) -> Result<([f32; 3], [f32; 3])> {
    let mut numbers = Vec::with_capacity(6);
    for token in values.iter().flat_map(|v| v.split([',', ' ']).filter(|t| !t.trim().is_empty())) {
        let n: f32 = token.trim().parse().map_err(|_| {
            anyhow::anyhow!("--camera: {token:?} is not a number (expected EX,EY,EZ,TX,TY,TZ)")
        })?;
        if !n.is_finite() {
            bail!("--camera: {token:?} is not finite (expected six finite numbers EX,EY,EZ,TX,TY,TZ)");
        }
        numbers.push(n);
    }
    let [ex, ey, ez, tx, ty, tz] = numbers[..] else {
        bail!(
            "--camera: {} numbers given; expected six, EX,EY,EZ,TX,TY,TZ (eye, then target)",
            numbers.len()
        );
    };
    if [ex, ey, ez] == [tx, ty, tz] {
        bail!(
            "--camera: the eye and the target are the same point ({ex}, {ey}, {ez}); the camera needs a direction"
        );
    }
    Ok(([ex, ey, ez], [tx, ty, tz]))
}

/// Refuses an instance count of 0, or one whose CPU state does not fit `max_memory` (each
/// character costs its 64-byte record and the crowd's per-instance state, about [`INSTANCE_BYTES`]
/// in all), before anything is allocated. The GPU copy is bounded separately by the device's
/// storage buffer size when the crowd is uploaded (the backend's `BufferTooLarge` error).
pub(crate) fn check_instances(flag: &str, instances: u32, max_memory: u64) -> Result<()> {
    if instances == 0 {
        bail!("{flag} must be at least 1");
    }
    let most = max_memory / INSTANCE_BYTES;
    if u64::from(instances) > most {
        bail!(
            "{flag} {instances}: more than the {most} that fit the memory budget of {max_memory} bytes at \
             {INSTANCE_BYTES} bytes each (raise --max-memory)"
        );
    }
    Ok(())
}

/// The asset bytes: read from `path`, or the procedural humanoid baked in memory (with bones).
fn asset_bytes(path: Option<&Path>, max_memory: u64) -> Result<Vec<u8>> {
    match path {
        Some(p) => crate::bake::read_vat(p, max_memory),
        None => {
            let rig = vat_procgen::humanoid();
            let options = BakeOptions { bones: true, ..BakeOptions::default() };
            let bake = prepare(&rig, &options).context("procedural humanoid: bake failed")?;
            Ok(bake.to_vat_bytes()?)
        }
    }
}

/// `vat render`.
pub(crate) fn render(args: &RenderArgs) -> Result<()> {
    let started = Instant::now();
    // Arguments first: a bad --camera, --fov, --time or --lod-bias fails before any bake or device work.
    let custom_camera = args.camera.as_deref().map(parse_camera).transpose()?;
    check_view_args(args)?;
    crate::bake::check_out(&args.out)?;
    if let Some(asset) = &args.asset
        && crate::bake::same_file(asset, &args.out)
    {
        bail!("{}: --out names the input asset; choose another output path", args.out.display());
    }
    let source =
        args.asset.as_ref().map_or_else(|| "procedural humanoid".to_string(), |p| p.display().to_string());
    check_instances("--instances", args.instances, args.max_memory)?;
    let mut bytes = asset_bytes(args.asset.as_deref(), args.max_memory)?;
    if args.impostors == Some(OnOff::On) {
        let (with_tier, line) = crate::bake::with_default_tier(bytes)
            .with_context(|| format!("{source}: --impostors: no impostor tier"))?;
        println!("{source}: {line}");
        bytes = with_tier;
    }
    let asset = Asset::parse_with_limits(&bytes, &crate::bake::load_limits(args.max_memory))
        .with_context(|| format!("{source}: not a valid .vat file"))?;

    if matches!(args.mode, ModeArg::Bone) && asset.manifest().bone_animation.is_none() {
        bail!("{source}: --mode bone needs an asset baked with --bones");
    }

    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    // Spacing, grid cells, camera, clip planes, ground and shadow reach follow the asset's size.
    let scale = SceneScale::from_bounds(&crowd_asset.bounds);
    // A still image can afford more shadow casters and caps than a real-time frame's defaults.
    let crowd_config = CrowdConfig {
        cell_size: scale.cell_size(),
        lod_bias: args.lod_bias,
        shadows: !args.no_shadows,
        shadow_max_lod: 3,
        attachment_max_lod: 3,
        impostors: args.impostors != Some(OnOff::Off),
        ..CrowdConfig::default()
    };
    let mut crowd = Crowd::new(crowd_asset, crowd_config);
    let layout = DemoLayout { seed: args.seed, ..scale.layout() };
    scene::populate(&mut crowd, args.instances, &layout);
    crowd.advance(args.time);

    let [w, h] = args.size;
    let mut framing = scale.overview(args.instances, &layout);
    if let Some((eye, target)) = custom_camera {
        // The far plane still reaches the crowd's ground seen from the given eye.
        let eye_distance = eye.iter().map(|v| v * v).sum::<f32>().sqrt();
        framing.far = framing.far.max(2.0 * eye_distance).max(framing.ground.farthest_from(eye));
        (framing.eye, framing.target) = (eye, target);
    }
    let camera = Camera::look_at(
        framing.eye,
        framing.target,
        args.fov.to_radians(),
        w as f32 / h as f32,
        framing.near,
        framing.far,
    );
    let options = RenderOptions {
        mode: args.mode.into(),
        culling: args.culling.into(),
        shadows: !args.no_shadows,
        shadow_distance: framing.shadow_distance,
        scene_unit: scale.unit,
        ..RenderOptions::default()
    };
    // The CLI is a host like any game: it draws its own ground (under the whole crowd, shadowed by
    // it through the host's own map, fitted as vat fits its own) and vat draws the crowd into its
    // passes.
    let scene = Scene::ground(framing.ground, GROUND_COLOR, camera, options);
    let frame = HostFrame { ground: !args.no_ground, culling: options.culling, ..HostFrame::default() };
    let crowds = vec![crowd];
    let (adapter, mut report, rgba, counts) = match args.backend {
        BackendArg::Wgpu => {
            let offscreen = vat_wgpu::Offscreen::new(args.size, vat_wgpu::RendererConfig::default())?;
            let mut host = WgpuHost::new(offscreen, scene, std::slice::from_ref(&asset), crowds)
                .with_context(|| format!("{source}: upload failed"))?;
            let (rgba, report) = host.render(&frame)?;
            (host.adapter_name(), report, rgba, host.gpu_counts()?)
        }
        BackendArg::Vulkan => {
            let offscreen = vat_vulkan::Offscreen::new(args.size, vat_vulkan::RendererConfig::default())?;
            let mut host = VulkanHost::new(offscreen, scene, std::slice::from_ref(&asset), crowds)
                .with_context(|| format!("{source}: upload failed"))?;
            let (rgba, report) = host.render(&frame)?;
            (host.adapter_name(), report, rgba, host.gpu_counts()?)
        }
    };
    if report.culling == Culling::Gpu {
        // The frame has finished (its pixels were read back): its counts have arrived, 0 frames late.
        report.set_gpu_counts(counts);
    }
    write_png(&args.out, args.size, &rgba)?;
    println!(
        "rendered {} characters of {source} on {adapter} -> {} ({}x{}), {:?} mode, {:?} culling",
        args.instances,
        args.out.display(),
        w,
        h,
        report.mode,
        report.culling
    );
    let s = &report.stats;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    // GPU culling: the counts are the GPU's, read back after the frame (0 frames late; the body
    // triangles only, see `vat_core::backend::frame::gpu_counts`).
    let counted_by = match (report.culling, report.gpu_counts_frames_late) {
        (Culling::Gpu, Some(late)) => format!(" (counted on the GPU, {late} frames late)"),
        (Culling::Gpu, None) => " (the GPU's counts did not arrive)".to_owned(),
        (Culling::Cpu, _) => String::new(),
    };
    println!(
        "  drawn {} of {} (submitted {}), {} triangles{counted_by}; draws: {} main, {} shadow, {} attachments ({} of the main draws impostor cards); {elapsed_ms:.0} ms in all",
        s.drawn,
        s.simulated,
        s.submitted,
        s.triangles,
        report.draws_main,
        // The crowd casts into the CLI's own shadow map, an extra view of the frame.
        report.draws_shadow + report.draws_views,
        report.draws_attachments,
        report.draws_impostors
    );
    Ok(())
}

/// Writes an 8-bit sRGB RGBA PNG atomically.
fn write_png(path: &Path, size: [u32; 2], rgba: &[u8]) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, size[0], size[1]);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let mut writer = encoder.write_header().context("PNG header")?;
        writer.write_image_data(rgba).context("PNG data")?;
    }
    vat_core::files::write_file_atomically(path, &bytes)
        .with_context(|| format!("{}: cannot write", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

    use super::{join_camera_value, parse_camera};

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_negative_comma_list_is_joined_to_its_flag() {
        let args = |items: &[&str]| items.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            join_camera_value(args(&["vat", "render", "--camera", "-3,2,1,0,0,0", "--out", "x.png"])),
            args(&["vat", "render", "--camera=-3,2,1,0,0,0", "--out", "x.png"])
        );
        for unchanged in [
            &["vat", "render", "--camera", "3,2,1,0,0,0", "--out", "x.png"][..],
            &["vat", "render", "--camera", "-3", "2", "1", "0", "0", "0"],
            &["vat", "render", "--camera=-3,2,1,0,0,0"],
            &["vat", "render", "--out", "-1,2.png"],
            &["vat", "render", "--camera"],
        ] {
            assert_eq!(join_camera_value(args(unchanged)), args(unchanged));
        }
    }

    #[test]
    fn camera_takes_six_finite_numbers_in_any_grouping() {
        let want = ([-30.0, 12.0, 30.5], [0.0, 0.8, 0.0]);
        assert_eq!(parse_camera(&v(&["-30", "12", "30.5", "0", "0.8", "0"])).unwrap(), want);
        assert_eq!(parse_camera(&v(&["-30,12,30.5,0,0.8,0"])).unwrap(), want);
        assert_eq!(parse_camera(&v(&["-30, 12, 30.5", "0,0.8,0"])).unwrap(), want);
        for bad in [
            vec!["1,2,3,4,5"],
            vec!["1,2,3,4,5,6,7"],
            vec!["1,2,3,x,5,6"],
            vec!["1,2,nan,4,5,6"],
            vec!["1,2,inf,4,5,6"],
        ] {
            let e = parse_camera(&v(&bad)).unwrap_err().to_string();
            assert!(e.starts_with("--camera: "), "{e}");
        }
        let same = parse_camera(&v(&["1,2,3,1,2,3"])).unwrap_err().to_string();
        assert!(same.contains("same point"), "{same}");
    }
}
