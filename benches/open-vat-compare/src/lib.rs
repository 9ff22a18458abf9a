//! The scene, arguments and frame timing shared by the two binaries (`open_vat`, `vat_bevy`), so
//! that only the characters differ between them.
//!
//! Scene: a 1280 x 720 camera rendering into an image (no window), 4x MSAA, HDR with ACES fitted
//! tonemapping (the vat-bevy `crowd` example's camera); a 400 m ground plane (`StandardMaterial`);
//! one `DirectionalLight` with shadows, 2 cascades (first far bound 20 m, maximum 100 m, Bevy's
//! default 2048 map); `N` characters on a square grid 2 m apart (the grid's near edge at z = 0,
//! centred on x = 0, extending towards -z), each with its own heading and phase of the looping
//! `walk` clip. The camera is fixed: at (0, 18, 24) looking at (0, 0, -40).
//!
//! Timing: pipelined rendering is off (so one `App::update` is the main world and the render world
//! of the same frame), pipelines compile synchronously, and after each update the device is polled
//! until the GPU is idle. The frame time is the wall time of the update plus that wait, so the GPU
//! work (on the software driver, CPU work too) is inside it, identically for both binaries.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bevy::app::PluginsState;
use bevy::asset::AssetMetaCheck;
use bevy::camera::RenderTarget;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::pipelined_rendering::PipelinedRenderingPlugin;
use bevy::render::render_resource::TextureFormat;
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::WgpuSettings;
use bevy::window::ExitCondition;

/// The target's default size (`--size WxH`).
pub const SIZE: UVec2 = UVec2::new(1280, 720);
/// Distance between neighbouring characters, metres.
pub const SPACING: f32 = 2.0;
/// The camera.
pub const EYE: Vec3 = Vec3::new(0.0, 18.0, 24.0);
/// Where the camera looks.
pub const TARGET: Vec3 = Vec3::new(0.0, 0.0, -40.0);
/// The looping clip every character plays.
pub const CLIP: &str = "walk";

/// Command-line arguments of both binaries.
#[derive(Debug, Clone)]
pub struct Args {
    /// Characters.
    pub instances: u32,
    /// Measured frames.
    pub frames: usize,
    /// Frames rendered before measuring (after the scene is ready).
    pub warm_up: usize,
    /// The folder holding `humanoid.vat` and the OpenVAT export of it.
    pub assets: PathBuf,
    /// `vat_bevy` only: LOD 0 for every character (the triangles of the exported mesh).
    pub single_lod: bool,
    /// `vat_bevy` only: GPU culling instead of vat-bevy's default CPU culling.
    pub gpu_culling: bool,
    /// `vat_bevy` only, diagnostics: `CrowdConfig::cross_fade = false` (every batch drawn with the
    /// plain pipeline, whose vertex stage never decodes a second clip).
    pub no_cross_fade: bool,
    /// Diagnostics: the characters cast no shadows (`NotShadowCaster`; vat-bevy:
    /// `VatRenderSettings::cast_bevy_shadows = false`).
    pub no_cast: bool,
    /// Diagnostics: the characters receive no shadows (`NotShadowReceiver`; vat-bevy:
    /// `VatRenderSettings::shadows = false`).
    pub no_receive: bool,
    /// `open_vat` only, diagnostics: spawn the characters far rows first (Bevy draws them in
    /// spawn order, so back to front from this camera).
    pub reverse_order: bool,
    /// The target's size (default [`SIZE`]).
    pub size: UVec2,
    /// MSAA samples: 1 or 4 (default 4).
    pub msaa: u32,
    /// Diagnostics: after measuring, save the target as a binary PPM here (to check that the
    /// characters are drawn, lit and animated).
    pub screenshot: Option<PathBuf>,
}

impl Args {
    /// The diagnostic flags in effect, as a suffix of the result's name.
    pub fn variant(&self) -> String {
        let mut v = String::new();
        for (on, name) in [
            (self.single_lod, "single_lod"),
            (self.gpu_culling, "gpu_culling"),
            (self.no_cross_fade, "no_cross_fade"),
            (self.no_cast, "no_cast"),
            (self.no_receive, "no_receive"),
            (self.reverse_order, "reverse_order"),
        ] {
            if on {
                v.push('+');
                v.push_str(name);
            }
        }
        if self.size != SIZE {
            v.push_str(&format!("+{}x{}", self.size.x, self.size.y));
        }
        if self.msaa != 4 {
            v.push_str(&format!("+msaa{}", self.msaa));
        }
        v
    }
}

/// Parses `--instances N --frames F --warm-up W --assets DIR`, the diagnostics `--size WxH --msaa
/// 1|4 --no-cast --no-receive`, and for `vat_bevy` (`vat`) `--single-lod --gpu-culling
/// --no-cross-fade`, for
/// `open_vat` `--reverse-order`. `--instances 0` measures the scene alone.
pub fn parse_args(binary: &str, vat: bool) -> Args {
    let usage = format!(
        "usage: {binary} [--instances N] [--frames F] [--warm-up W] [--assets DIR] [--size WxH] [--msaa 1|4] \
         [--no-cast] [--no-receive] [--screenshot out.ppm]{}",
        if vat { " [--single-lod] [--gpu-culling] [--no-cross-fade]" } else { " [--reverse-order]" }
    );
    let mut args = Args {
        instances: 1_000,
        frames: 60,
        warm_up: 20,
        assets: PathBuf::from("assets"),
        single_lod: false,
        gpu_culling: false,
        no_cross_fade: false,
        no_cast: false,
        no_receive: false,
        reverse_order: false,
        size: SIZE,
        msaa: 4,
        screenshot: None,
    };
    let mut it = std::env::args().skip(1);
    let fail = |e: String| -> ! {
        eprintln!("{binary}: {e}\n{usage}");
        std::process::exit(2)
    };
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| fail(format!("{name} needs a value")));
        match a.as_str() {
            "--instances" => {
                args.instances =
                    value("--instances").parse().unwrap_or_else(|e| fail(format!("--instances: {e}")))
            }
            "--frames" => {
                args.frames = value("--frames").parse().unwrap_or_else(|e| fail(format!("--frames: {e}")))
            }
            "--warm-up" => {
                args.warm_up = value("--warm-up").parse().unwrap_or_else(|e| fail(format!("--warm-up: {e}")))
            }
            "--assets" => args.assets = value("--assets").into(),
            "--single-lod" if vat => args.single_lod = true,
            "--gpu-culling" if vat => args.gpu_culling = true,
            "--no-cross-fade" if vat => args.no_cross_fade = true,
            "--no-cast" => args.no_cast = true,
            "--no-receive" => args.no_receive = true,
            "--reverse-order" if !vat => args.reverse_order = true,
            "--size" => {
                let v = value("--size");
                let (w, h) = v.split_once('x').unwrap_or_else(|| fail(format!("--size {v}: expected WxH")));
                let w: u32 = w.parse().unwrap_or_else(|e| fail(format!("--size: {e}")));
                let h: u32 = h.parse().unwrap_or_else(|e| fail(format!("--size: {e}")));
                args.size = UVec2::new(w.max(1), h.max(1));
            }
            "--screenshot" => args.screenshot = Some(value("--screenshot").into()),
            "--msaa" => {
                args.msaa = value("--msaa").parse().unwrap_or_else(|e| fail(format!("--msaa: {e}")));
                if args.msaa != 1 && args.msaa != 4 {
                    fail("--msaa: 1 or 4".into());
                }
            }
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0)
            }
            other => fail(format!("unknown argument {other:?}")),
        }
    }
    if args.frames == 0 {
        fail("--frames must be at least 1".into());
    }
    args.assets = std::path::absolute(&args.assets).unwrap_or_else(|e| fail(format!("--assets: {e}")));
    args
}

/// A small deterministic generator in `[0, 1)` (the same scene on every run and in both binaries).
pub fn hash(i: u32, salt: u32) -> f32 {
    let mut x = i.wrapping_mul(0x9E37_79B9) ^ salt.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    (x >> 8) as f32 / (1u32 << 24) as f32
}

/// Character `i` of `n`: its position on the grid, its heading (radians about +Y: it faces
/// `(sin h, 0, cos h)`, vat's yaw and Bevy's `Quat::from_rotation_y` alike) and its phase in the
/// clip (`[0, 1)` of a cycle).
pub fn character(i: u32, n: u32) -> (Vec3, f32, f32) {
    let side = (n as f32).sqrt().ceil().max(1.0) as u32;
    let x = (i % side) as f32 * SPACING - (side - 1) as f32 * SPACING * 0.5;
    let z = -((i / side) as f32) * SPACING;
    (Vec3::new(x, 0.0, z), hash(i, 3) * std::f32::consts::TAU, hash(i, 4))
}

/// A headless app with Bevy's default plugins as both binaries use them: no window, no winit, no
/// pipelined rendering, Vulkan only, synchronous pipeline compilation, assets read from `assets`.
pub fn base_app(assets: &Path) -> App {
    let mut app = App::new();
    // vat's device settings (Bevy's default: every feature and limit of the adapter, plus vat's
    // requirements, which that already includes) on Vulkan only, for both binaries alike.
    let wgpu = WgpuSettings { backends: Some(wgpu::Backends::VULKAN), ..vat_bevy::wgpu_settings() };
    let plugins = DefaultPlugins
        .set(WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() })
        .set(RenderPlugin {
            render_creation: wgpu.into(),
            synchronous_pipeline_compilation: true,
            ..default()
        })
        .set(AssetPlugin {
            file_path: assets.to_string_lossy().into_owned(),
            meta_check: AssetMetaCheck::Never,
            ..default()
        })
        .disable::<bevy::winit::WinitPlugin>()
        .disable::<PipelinedRenderingPlugin>();
    app.add_plugins(plugins);
    app
}

/// Finishes adding the plugins (Bevy's renderer starts on a task) and checks that a device exists.
pub fn finish(app: &mut App) {
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
    if app.world().get_resource::<RenderDevice>().is_none() {
        eprintln!("no Vulkan adapter: install the software driver (mesa-vulkan-drivers) or run on a GPU");
        std::process::exit(1);
    }
}

/// The camera, the light with its cascades and the ground. Returns the render target.
pub fn spawn_scene(app: &mut App, args: &Args) -> Handle<Image> {
    let image = Image::new_target_texture(args.size.x, args.size.y, TextureFormat::Rgba8UnormSrgb, None);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    let world = app.world_mut();
    world.spawn((
        Camera3d::default(),
        if args.msaa == 1 { Msaa::Off } else { Msaa::Sample4 },
        bevy::camera::Hdr,
        Tonemapping::AcesFitted,
        Transform::from_translation(EYE).looking_at(TARGET, Vec3::Y),
        RenderTarget::Image(target.clone().into()),
    ));
    world.spawn((
        DirectionalLight { illuminance: 8_000.0, shadow_maps_enabled: true, ..default() },
        Transform::from_xyz(-8.0, 8.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
        CascadeShadowConfigBuilder {
            num_cascades: 2,
            first_cascade_far_bound: 20.0,
            maximum_distance: 100.0,
            ..default()
        }
        .build(),
    ));
    world.insert_resource(GlobalAmbientLight { brightness: 300.0, ..default() });
    world.insert_resource(ClearColor(Color::srgb(0.45, 0.6, 0.8)));
    let ground = world.resource_mut::<Assets<Mesh>>().add(Plane3d::default().mesh().size(400.0, 400.0));
    let material = world.resource_mut::<Assets<StandardMaterial>>().add(Color::srgb(0.35, 0.45, 0.3));
    world.spawn((Mesh3d(ground), MeshMaterial3d(material), Transform::from_xyz(0.0, 0.0, -100.0)));
    target
}

/// Updates `app` until `ready` holds (at most `limit`), then `args.warm_up` frames, then measures
/// `args.frames` frames: each the wall time of `App::update` plus the wait for the GPU to go idle.
pub fn measure(
    app: &mut App,
    args: &Args,
    limit: Duration,
    mut ready: impl FnMut(&mut App) -> bool,
) -> Vec<Duration> {
    let device = app.world().resource::<RenderDevice>().clone();
    let idle = |device: &RenderDevice| {
        if let Err(e) = device.poll(wgpu::PollType::wait_indefinitely()) {
            eprintln!("device poll: {e}");
        }
    };
    let start = Instant::now();
    let mut setup_frames = 0u32;
    loop {
        app.update();
        idle(&device);
        setup_frames += 1;
        if ready(app) {
            break;
        }
        if start.elapsed() > limit {
            eprintln!("the scene was not ready after {setup_frames} frames ({limit:?})");
            std::process::exit(1);
        }
    }
    eprintln!("ready after {setup_frames} frames, {:.1} s", start.elapsed().as_secs_f64());
    let mut frames = Vec::with_capacity(args.frames);
    let mut all = Vec::with_capacity(args.warm_up + args.frames);
    for k in 0..args.warm_up + args.frames {
        let t = Instant::now();
        app.update();
        idle(&device);
        let elapsed = t.elapsed();
        all.push(format!("{:.0}", elapsed.as_secs_f64() * 1e3));
        if k >= args.warm_up {
            frames.push(elapsed);
        }
    }
    eprintln!("frame times, ms (warm-up first): {}", all.join(" "));
    frames
}

/// The world-to-clip matrices of the camera's directional-light cascades (Bevy's, from the
/// light's `Cascades`), nearest first.
pub fn cascade_matrices(app: &mut App) -> Vec<Mat4> {
    let world = app.world_mut();
    let Some(camera) = world.query_filtered::<Entity, With<Camera3d>>().iter(world).next() else {
        return Vec::new();
    };
    world
        .query::<&bevy::light::cascade::Cascades>()
        .iter(world)
        .next()
        .and_then(|c| c.cascades.get(&camera))
        .map(|c| c.iter().map(|c| c.clip_from_world).collect())
        .unwrap_or_default()
}

/// Saves the camera's target as a binary PPM at `args.screenshot`, if given (Bevy's screenshot of
/// the image, a few frames later).
pub fn save_screenshot(app: &mut App, args: &Args, target: &Handle<Image>) {
    use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
    use std::sync::{Arc, Mutex};
    let Some(path) = &args.screenshot else { return };
    let shot: Arc<Mutex<Option<Image>>> = Arc::default();
    let slot = shot.clone();
    app.world_mut().spawn(Screenshot::image(target.clone())).observe(
        move |captured: On<ScreenshotCaptured>| {
            *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(captured.image.clone());
        },
    );
    for _ in 0..10 {
        app.update();
        let taken = shot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(image) = taken {
            let (w, h) = (image.width(), image.height());
            let Some(data) = image.data else { break };
            let mut ppm = format!("P6\n{w} {h}\n255\n").into_bytes();
            for px in data.chunks_exact(4) {
                ppm.extend_from_slice(&px[..3]);
            }
            match std::fs::write(path, ppm) {
                Ok(()) => eprintln!("saved {}", path.display()),
                Err(e) => eprintln!("{}: {e}", path.display()),
            }
            return;
        }
    }
    eprintln!("no screenshot");
}

/// Median, 90th percentile and mean, milliseconds.
pub fn stats(frames: &[Duration]) -> (f64, f64, f64) {
    let mut v: Vec<f64> = frames.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    (v[n / 2], v[((n * 9).div_ceil(10)).saturating_sub(1).min(n - 1)], mean)
}

/// Prints the result line the script parses (and a readable one).
pub fn report(name: &str, args: &Args, frames: &[Duration], extra: &str) {
    let (median, p90, mean) = stats(frames);
    println!(
        "RESULT name={name}{} instances={} frames={} warm_up={} median_ms={median:.2} p90_ms={p90:.2} mean_ms={mean:.2} {extra}",
        args.variant(),
        args.instances,
        args.frames,
        args.warm_up
    );
}

/// The adapter in use, for the report.
pub fn adapter_name(app: &App) -> String {
    app.world()
        .get_resource::<bevy::render::renderer::RenderAdapterInfo>()
        .map(|info| format!("{} ({:?})", info.name, info.backend))
        .unwrap_or_else(|| "?".into())
}
