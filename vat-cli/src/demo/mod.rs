//! `vat demo`: a windowed, interactive crowd demo.
//!
//! A wandering crowd ([`vat_examples::sim::Simulation`]: steering, optional neighbour separation,
//! idle/walk/jog/run chosen by speed with stride-matched rates and cross-fades) on the procedural
//! humanoid (baked in memory, no files needed) or any `.vat`, with orbit and walk cameras, a key for
//! every runtime toggle and a title-bar line with the frame's figures.
//!
//! The demo is written once, generic over a [`Presenter`] (how frames reach the window, and the
//! host side of the frame on that backend) and its vat-core [`CrowdRenderer`] (the backend seam,
//! for uploads and crowds); `--backend` picks the pair. The simulation, camera, keys and title bar
//! are the same code for both.
//!
//! # Presentation
//! Every frame is rendered straight into the window's swapchain the way a game embeds vat: the demo
//! is a host with its own ground (centred on the crowd and covering the whole area it wanders in;
//! [`vat_examples::embed::Scene::ground`]) and its own shadow map (fitted to the camera as vat fits
//! its own), drawn by the host code of the `embed` example
//! ([`vat_examples::embed::wgpu_host::SceneGpu`], [`vat_examples::embed::vulkan_host::SceneGpu`]).
//! A frame is the backend's `Renderer::prepare` (the sun's view as an extra view), the host's shadow
//! pass with `Renderer::draw_depth` inside, then the host's colour pass over the swapchain image and
//! its own depth image (the ground, then `Renderer::draw`: the pipelines are keyed by the pass's
//! formats, so the swapchain's format needs nothing else), then present. Nothing is read back or
//! copied on the CPU. At start the demo prints one line naming the path:
//! - `--backend wgpu`: a `wgpu::Surface` made from the window on the device of the renderer
//!   ([`vat_wgpu::presenting_device`] picks an adapter that can present to it), configured `Fifo`
//!   with an sRGB format (`Bgra8UnormSrgb` or `Rgba8UnormSrgb`) and `Depth32Float` depth;
//!   `Outdated`/`Lost` reconfigure (`Lost` makes the surface again), `Timeout`/`Occluded` skip a
//!   frame. Line: `presenting through a wgpu surface (Fifo, Bgra8UnormSrgb, 1280x720)`.
//! - `--backend vulkan`: a `VkSwapchainKHR` ([`vat_vulkan::Swapchain`]) on a context made for the
//!   window ([`vat_vulkan::Context::presenting`]: the surface extensions, `VK_KHR_swapchain` and a
//!   queue that presents), `FIFO`, `B8G8R8A8_SRGB` or `R8G8B8A8_SRGB`: acquire with a semaphore,
//!   the host's frame recorded by [`vat_vulkan::Swapchain::render_with`] (prepare, the shadow pass,
//!   dynamic rendering over the image), transition to `PRESENT_SRC_KHR`, present;
//!   `ERROR_OUT_OF_DATE_KHR`/`SUBOPTIMAL_KHR` recreate it. Line:
//!   `presenting through VkSwapchainKHR (FIFO, B8G8R8A8_SRGB, 3 images, 1280x720)`, followed by
//!   `; validation layer on` when the Khronos validation layer is installed (it then checks every
//!   frame, and its messages go to stderr).
//!
//! Both run under Xvfb with Mesa's software Vulkan driver (the tests do). The window is X11 (Wayland
//! desktops run it through XWayland). The asset is read and validated before the event loop runs;
//! the window, the device chosen for its surface and the upload come once the loop has started.
//!
//! # Scripted runs
//! `--frames N` renders N frames with a fixed 1/30 s step (same flags, same images) and exits;
//! `--screenshot out.png` saves the last frame (also after Esc) as a PNG (written atomically). The
//! screenshot is that frame rendered once more, offscreen by the same host code into the backend's
//! offscreen target (same crowd state, camera and options, at the swapchain's size) and read back:
//! a presented swapchain
//! image belongs to the window system, and reading it would need copy-source usage on the
//! swapchain images, which a surface need not offer.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, FrameReport, RenderMode, RenderOptions};
use vat_examples::embed::vulkan_host::{ColourTarget as VulkanColourTarget, SceneGpu as VulkanSceneGpu};
use vat_examples::embed::wgpu_host::{ColourTarget, SceneGpu};
use vat_examples::embed::{HostFrame, Scene as HostScene};
use vat_examples::scene::{GROUND_MARGIN, GroundSquare, SceneScale};
use vat_examples::sim::{Simulation, wander_half_extent};

use crate::render::GROUND_COLOR;
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, KeyEvent, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, KeyCode, NamedKey, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::render::{BackendArg, CullingArg, ModeArg};

mod controls;
mod present;

use controls::{CameraRig, HUD_PERIOD, Hud, Input};
use present::{VulkanPresenter, WgpuPresenter};

/// The keys, for `vat demo --help` (the guide's demo chapter lists the same).
pub(crate) const KEYS_HELP: &str = "\
Keys (the window must have focus):
  M            VAT / bone / rest pose (bone mode needs an asset baked with --bones)
  C            culling on the CPU / GPU
  F            cross-fades on / off (off: clip changes cut)
  [ / ]        LOD bias -0.5 / +0.5 (doublings of distance)
  H            shadows on / off
  P            far pool on / off
  X            attachments on / off
  T            stride matching on / off (off: gaits play at their baked rate and the feet slide)
  N            neighbour separation on / off
  V            camera: orbit / walk
  Space        pause / resume the simulation
  W A S D, arrows   orbit: move the target; walk: move (Shift: faster)
  Q / E        orbit: zoom in / out; walk: down / up
  mouse drag   orbit: turn around the target; walk: look around
  mouse wheel  orbit: zoom
  Esc          quit (saves --screenshot if given)

The title bar shows, about 4 times a second: frame time, CPU time (simulation + recording), simulated /
submitted / drawn instances, triangles, draw calls and the toggles. With GPU culling the drawn
instances and triangles are read back from the GPU's draw lists.";

/// Camera at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CameraArg {
    /// Turn around a target above the crowd.
    Orbit,
    /// Walk among the crowd at eye height.
    Walk,
}

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnOff {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// `vat demo` arguments.
#[derive(Debug, Args)]
#[command(after_help = KEYS_HELP)]
pub(crate) struct DemoArgs {
    /// A .vat asset; without it the procedural humanoid is baked in memory first.
    asset: Option<PathBuf>,
    /// GPU backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Wgpu)]
    backend: BackendArg,
    /// Number of characters.
    #[arg(long, default_value_t = 2000)]
    instances: u32,
    /// Memory budget in bytes (suffixes K, M, G: binary): a larger .vat file is refused before it is
    /// read, and --instances may be at most this over 256 bytes.
    #[arg(long, value_parser = crate::bake::parse_bytes, default_value = "4G")]
    max_memory: u64,
    /// Window (and render) size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    size: [u32; 2],
    /// Render this many frames with a fixed 1/30 s step, then exit.
    #[arg(long)]
    frames: Option<u32>,
    /// Save the last frame rendered as a PNG when the demo ends (written atomically).
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// With --frames: resize the window to WIDTHxHEIGHT after half the frames (the swapchain is
    /// made again; the screenshot has the new size).
    #[arg(long, value_parser = parse_size, requires = "frames")]
    resize: Option<[u32; 2]>,
    /// Vertex path at start (key M).
    #[arg(long, value_enum, default_value_t = ModeArg::Vat)]
    mode: ModeArg,
    /// Culling path at start (key C).
    #[arg(long, value_enum, default_value_t = CullingArg::Cpu)]
    culling: CullingArg,
    /// Start with shadows off (key H).
    #[arg(long)]
    no_shadows: bool,
    /// LOD bias in doublings of distance at start (keys `[` and `]`).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    lod_bias: f32,
    /// Start with cross-fades off (key F).
    #[arg(long)]
    no_cross_fade: bool,
    /// Start with attachments off (key X).
    #[arg(long)]
    no_attachments: bool,
    /// Far pool at start (key P): `--far-pool` or `--far-pool on` (the default), `--far-pool off`.
    #[arg(long, value_enum, default_value_t = OnOff::On, num_args = 0..=1, default_missing_value = "on")]
    far_pool: OnOff,
    /// The impostor tier: `--impostors` (or `on`) draws the characters past the tier's switch
    /// distance as cards, baking the default tier (`vat bake --impostors`'s) in memory first when the
    /// asset has none; `off` draws every character as a mesh. Without the flag, an asset's own tier
    /// is drawn.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "on")]
    impostors: Option<OnOff>,
    /// Start with stride matching off: gaits play at their baked rate and the feet slide (key T).
    #[arg(long)]
    no_stride_match: bool,
    /// Camera at start (key V).
    #[arg(long, value_enum, default_value_t = CameraArg::Orbit)]
    camera: CameraArg,
    /// Start with neighbour separation on (key N).
    #[arg(long)]
    separation: bool,
    /// Simulation seed (same seed, same crowd).
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// `WIDTHxHEIGHT`, both 1..=16384.
fn parse_size(s: &str) -> Result<[u32; 2], String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("{s:?} is not WIDTHxHEIGHT"))?;
    let parse = |v: &str, what: &str| v.trim().parse::<u32>().map_err(|_| format!("bad {what} in {s:?}"));
    let size = [parse(w, "width")?, parse(h, "height")?];
    if size.iter().any(|v| !(1..=16384).contains(v)) {
        return Err(format!("{s:?}: width and height must be 1..=16384"));
    }
    Ok(size)
}

/// `vat demo`.
pub(crate) fn demo(args: &DemoArgs) -> Result<()> {
    crate::render::check_instances("--instances", args.instances, args.max_memory)?;
    if args.frames == Some(0) {
        bail!("--frames must be at least 1");
    }
    if !args.lod_bias.is_finite() {
        bail!("--lod-bias must be a finite number");
    }
    if let Some(shot) = &args.screenshot {
        vat_core::files::check_output(shot).context("--screenshot cannot be written")?;
    }
    // The window system first: without a display there is no point opening a device.
    let event_loop = open_event_loop()?;
    match args.backend {
        BackendArg::Wgpu => run::<WgpuPresenter>(event_loop, args),
        BackendArg::Vulkan => run::<VulkanPresenter>(event_loop, args),
    }
}

/// How frames reach the window: a swapchain of one backend, with the renderer it draws with.
trait Presenter: Sized {
    /// The backend's offscreen renderer (uploads, crowds, the screenshot; its `Renderer` draws the
    /// presented frames).
    type Renderer: CrowdRenderer;

    /// The swapchain of `window` (`size` pixels), on a device that can present to it, and the
    /// renderer on that device.
    fn open(window: Arc<Window>, size: [u32; 2]) -> Result<(Self::Renderer, Self)>;

    /// One line naming the presentation path, e.g. `a wgpu surface (Fifo, Bgra8UnormSrgb, 320x240)`.
    fn describe(&self) -> String;

    /// The size of the images presented (`[0, 0]` while the window has no area).
    fn size(&self) -> [u32; 2];

    /// Makes the swapchain `size` pixels (the window's).
    fn resize(&mut self, size: [u32; 2]) -> Result<()>;

    /// Renders one frame into the next swapchain image and presents it: the demo's own ground
    /// (`ground`, drawn and shadowed on the demo's side as a host's, see
    /// [`vat_examples::embed`]) and the crowd, seen by `ground.camera`; `None` when the frame was
    /// skipped (swapchain out of date and recreated, acquisition timed out).
    fn render(
        &mut self,
        renderer: &mut Self::Renderer,
        draw: CrowdFrame<'_, Self::Renderer>,
    ) -> Result<Option<FrameReport>>;

    /// The same frame rendered offscreen into `renderer`'s target (resized to the swapchain's size
    /// first) and read back as RGBA8: the screenshot.
    fn screenshot(
        &mut self,
        renderer: &mut Self::Renderer,
        draw: CrowdFrame<'_, Self::Renderer>,
    ) -> Result<Vec<u8>>;
}

/// What a frame draws: the crowd, its asset and GPU copy, and the demo's own scene (its ground,
/// camera, sun and vat's options) with what to draw of it.
struct CrowdFrame<'a, R: CrowdRenderer> {
    asset: &'a R::Asset,
    gpu: &'a mut R::Crowd,
    crowd: &'a mut Crowd,
    ground: &'a HostScene,
    frame: HostFrame,
}

/// The connection to the window system.
fn open_event_loop() -> Result<EventLoop<()>> {
    EventLoop::new().context(
        "cannot connect to a display (is DISPLAY set? headless: run under xvfb-run, or use `vat render`)",
    )
}

/// The whole demo, on any backend: the asset is read and checked first, then the event loop starts
/// the demo ([`start`]) once the window system is ready.
fn run<P: Presenter>(event_loop: EventLoop<()>, args: &DemoArgs) -> Result<()> {
    let source =
        args.asset.as_ref().map_or_else(|| "procedural humanoid".to_string(), |p| p.display().to_string());
    let mut bytes = match &args.asset {
        Some(p) => crate::bake::read_vat(p, args.max_memory)?,
        None => vat_examples::support::asset_bytes(None)?,
    };
    if args.impostors == Some(OnOff::On) {
        let (with_tier, line) = crate::bake::with_default_tier(bytes)
            .with_context(|| format!("{source}: --impostors: no impostor tier"))?;
        println!("{source}: {line}");
        bytes = with_tier;
    }
    parse_asset(&bytes, &source, args)?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut demo = Demo::<P> { args, source, bytes, app: None, error: None };
    event_loop.run_app(&mut demo).context("window event loop failed")?;
    if let Some(e) = demo.error.take() {
        return Err(e);
    }
    let Some(mut app) = demo.app else { bail!("the window system ended the demo before it started") };
    if let Some(e) = app.error.take() {
        return Err(e);
    }
    if let Some(path) = &app.screenshot {
        if app.rendered == 0 {
            bail!("{}: no frame was rendered, nothing to save", path.display());
        }
        // The last presented frame again: same crowd state, camera and options.
        let camera = app.scene.camera.camera(app.presenter.size());
        let (renderer, draw) = app.scene.frame(camera);
        let rgba = app.presenter.screenshot(renderer, draw)?;
        vat_examples::support::save_png(path, app.scene.renderer.size(), &rgba)?;
    }
    let mut line = format!("vat demo: {} frames", app.rendered);
    let t = &app.totals;
    if t.frames > 0 {
        let n = f64::from(t.frames);
        line += &format!(
            " ({:.1} ms a frame, {:.1} ms CPU, after the first)",
            t.frame_seconds / n * 1e3,
            t.cpu_seconds / n * 1e3
        );
    }
    if let Some(r) = &app.last_report {
        line += &format!(
            "; last frame: {} simulated, {} submitted, {} drawn, {} triangles, {} draws",
            r.stats.simulated,
            r.stats.submitted,
            r.stats.drawn,
            r.stats.triangles,
            draws(r)
        );
        if r.culling == Culling::Gpu {
            line += " (GPU culling: submitted/drawn/triangles are counted on the GPU, not here)";
        }
    }
    if let Some(path) = &app.screenshot {
        line += &format!("; wrote {}", path.display());
    }
    println!("{line}");
    Ok(())
}

/// The asset, validated, with `--mode bone` checked against it.
fn parse_asset<'a>(bytes: &'a [u8], source: &str, args: &DemoArgs) -> Result<Asset<'a>> {
    let asset = Asset::parse_with_limits(bytes, &crate::bake::load_limits(args.max_memory))
        .with_context(|| format!("{source}: not a valid .vat file"))?;
    if matches!(args.mode, ModeArg::Bone) && asset.manifest().bone_animation.is_none() {
        bail!("{source}: --mode bone needs an asset baked with --bones");
    }
    Ok(asset)
}

/// The event loop's handler: starts the demo when the loop is ready, then hands events to [`App`].
struct Demo<'a, P: Presenter> {
    args: &'a DemoArgs,
    source: String,
    bytes: Vec<u8>,
    app: Option<App<P>>,
    error: Option<anyhow::Error>,
}

impl<P: Presenter> ApplicationHandler for Demo<'_, P> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.app.is_some() || self.error.is_some() {
            return;
        }
        match start(event_loop, self.args, &self.source, &self.bytes) {
            Ok(app) => self.app = Some(app),
            Err(e) => {
                self.error = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        if let Some(app) = &mut self.app {
            app.window_event(event_loop, id, event);
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if let Some(app) = &mut self.app {
            app.about_to_wait(event_loop);
        }
    }

    fn exiting(&mut self, event_loop: &ActiveEventLoop) {
        if let Some(app) = &mut self.app {
            app.exiting(event_loop);
        }
    }
}

/// Opens the window, then the device chosen for its surface and the swapchain, uploads the asset
/// and sets up the crowd, its simulation and the camera.
fn start<P: Presenter>(
    event_loop: &ActiveEventLoop,
    args: &DemoArgs,
    source: &str,
    bytes: &[u8],
) -> Result<App<P>> {
    let attributes = Window::default_attributes()
        .with_title("vat demo")
        .with_inner_size(PhysicalSize::new(args.size[0], args.size[1]));
    let window = Arc::new(event_loop.create_window(attributes).context("cannot create a window")?);
    let (mut renderer, presenter) = P::open(Arc::clone(&window), args.size)?;
    let asset = parse_asset(bytes, source, args)?;
    let has_bones = asset.manifest().bone_animation.is_some();
    let gpu_asset = renderer.upload(&asset).with_context(|| format!("{source}: upload failed"))?;
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest())?;
    // Every length of the scene (spacing, speeds, camera, ground, shadows) follows the asset's size.
    let scale = SceneScale::from_bounds(&crowd_asset.bounds);
    let crowd_config = CrowdConfig {
        cell_size: scale.cell_size(),
        lod_bias: args.lod_bias,
        shadows: !args.no_shadows,
        cross_fade: !args.no_cross_fade,
        attachments: !args.no_attachments,
        far_pool: args.far_pool == OnOff::On,
        impostors: args.impostors != Some(OnOff::Off),
        ..CrowdConfig::default()
    };
    let mut crowd = Crowd::new(crowd_asset, crowd_config);
    let gpu_crowd = renderer.create_crowd(&crowd).context("creating the crowd's GPU state failed")?;
    let half = wander_half_extent(args.instances, &scale);
    let mut sim = Simulation::new(&mut crowd, args.instances, half, args.seed);
    sim.stride_matching = !args.no_stride_match;
    sim.separation = args.separation;
    if args.no_cross_fade {
        sim.fade_seconds = 0.0;
    }
    let options = RenderOptions {
        mode: args.mode.into(),
        culling: args.culling.into(),
        shadows: !args.no_shadows,
        shadow_distance: scale.shadow_distance(),
        scene_unit: scale.unit,
        ..RenderOptions::default()
    };
    let camera = CameraRig::new(args.camera, half, &scale);
    // The demo is a host like any game: its own ground under the whole wandering crowd (the
    // characters stay within `half` of the centre), shadowed by the crowd through its own map.
    let reach = half + scale.footprint;
    let ground_square = GroundSquare::covering(reach, scale.length(GROUND_MARGIN));
    let ground = HostScene::ground(ground_square, GROUND_COLOR, camera.camera(args.size), options);
    let adapter = renderer.adapter_name();
    println!(
        "vat demo: {} characters of {source} on {adapter}; {}",
        args.instances,
        if args.frames.is_some() { "scripted run" } else { "keys: vat demo --help" }
    );
    println!("vat demo: presenting through {}", presenter.describe());
    window.set_title(&format!("vat demo: {adapter}"));
    Ok(App {
        scene: Scene {
            renderer,
            gpu_asset,
            gpu_crowd,
            crowd,
            sim,
            options,
            ground,
            camera,
            has_bones,
            paused: false,
        },
        window_size: presenter.size(),
        presenter,
        frames: args.frames,
        resize: args.resize,
        screenshot: args.screenshot.clone(),
        window: Some(window),
        input: Input::default(),
        hud: Hud::new(),
        rendered: 0,
        totals: Totals::default(),
        last_frame: None,
        last_report: None,
        error: None,
    })
}

/// Draw calls of a frame, all passes.
fn draws(r: &FrameReport) -> u32 {
    r.draws_main + r.draws_shadow + r.draws_views + r.draws_attachments + r.draws_ground
}

/// What is drawn and how: the renderer, the crowd and its simulation, the options and the camera.
struct Scene<R: CrowdRenderer> {
    renderer: R,
    gpu_asset: R::Asset,
    gpu_crowd: R::Crowd,
    crowd: Crowd,
    sim: Simulation,
    options: RenderOptions,
    /// The demo's own scene: its ground, and the camera, sun and shadow map it shares with vat.
    ground: HostScene,
    camera: CameraRig,
    has_bones: bool,
    paused: bool,
}

impl<R: CrowdRenderer> Scene<R> {
    /// The renderer and what the next frame draws, seen by `camera`.
    fn frame(&mut self, camera: Camera) -> (&mut R, CrowdFrame<'_, R>) {
        self.ground.base = self.options;
        self.ground.follow(camera);
        let frame = HostFrame { culling: self.options.culling, ..HostFrame::default() };
        let draw = CrowdFrame {
            asset: &self.gpu_asset,
            gpu: &mut self.gpu_crowd,
            crowd: &mut self.crowd,
            ground: &self.ground,
            frame,
        };
        (&mut self.renderer, draw)
    }

    /// Applies a toggle key; returns a line saying what changed (`None`: not a toggle key).
    fn toggle(&mut self, key: &str) -> Option<String> {
        let on = |b: bool| if b { "on" } else { "off" };
        let config = self.crowd.config_mut();
        let line = match key {
            "m" => {
                // VAT -> bone (assets baked with --bones) -> rest pose -> VAT.
                self.options.mode = match self.options.mode {
                    RenderMode::Vat if self.has_bones => RenderMode::Bone,
                    RenderMode::Vat | RenderMode::Bone => RenderMode::Rest,
                    RenderMode::Rest => RenderMode::Vat,
                };
                let skipped = if self.has_bones { "" } else { " (bone mode skipped: bake with --bones)" };
                format!("mode: {:?}{skipped}", self.options.mode)
            }
            "c" => {
                self.options.culling = match self.options.culling {
                    Culling::Cpu => Culling::Gpu,
                    Culling::Gpu => Culling::Cpu,
                };
                format!("culling: {:?}", self.options.culling)
            }
            "f" => {
                config.cross_fade = !config.cross_fade;
                self.sim.fade_seconds = if config.cross_fade { 0.3 } else { 0.0 };
                format!("cross-fade: {}", on(config.cross_fade))
            }
            "[" | "]" => {
                let step = if key == "[" { -0.5 } else { 0.5 };
                config.lod_bias = (config.lod_bias + step).clamp(-4.0, 4.0);
                format!("LOD bias: {:+.1}", config.lod_bias)
            }
            "h" => {
                config.shadows = !config.shadows;
                self.options.shadows = config.shadows;
                format!("shadows: {}", on(config.shadows))
            }
            "p" => {
                config.far_pool = !config.far_pool;
                format!("far pool: {}", on(config.far_pool))
            }
            "x" => {
                config.attachments = !config.attachments;
                format!("attachments: {}", on(config.attachments))
            }
            "t" => {
                self.sim.stride_matching = !self.sim.stride_matching;
                format!("stride matching: {}", on(self.sim.stride_matching))
            }
            "n" => {
                self.sim.separation = !self.sim.separation;
                format!("separation: {}", on(self.sim.separation))
            }
            "v" => {
                self.camera.switch();
                format!("camera: {}", self.camera.kind_name())
            }
            " " => {
                self.paused = !self.paused;
                format!("simulation: {}", if self.paused { "paused" } else { "running" })
            }
            _ => return None,
        };
        Some(line)
    }

    /// The toggles, short, for the title bar.
    fn toggles(&self) -> String {
        let c = self.crowd.config();
        let on = |b: bool| if b { "on" } else { "off" };
        format!(
            "{} | {} culling | fade {} | LOD bias {:+.1} | shadows {} | far pool {} | attachments {} | stride {} | \
             separation {} | {} camera{}",
            match self.options.mode {
                RenderMode::Vat => "VAT",
                RenderMode::Bone => "bone",
                RenderMode::Rest => "rest pose",
            },
            match self.options.culling {
                Culling::Cpu => "CPU",
                Culling::Gpu => "GPU",
            },
            on(c.cross_fade),
            c.lod_bias,
            on(c.shadows && self.options.shadows),
            on(c.far_pool),
            on(c.attachments),
            on(self.sim.stride_matching),
            on(self.sim.separation),
            self.camera.kind_name(),
            if self.paused { " | paused" } else { "" }
        )
    }
}

/// Frame figures over the whole run (the first frame, which has no previous one, left out).
#[derive(Debug, Default)]
struct Totals {
    frames: u32,
    frame_seconds: f64,
    cpu_seconds: f64,
}

/// Everything the event loop touches.
struct App<P: Presenter> {
    scene: Scene<P::Renderer>,
    presenter: P,
    /// The window's size when the swapchain was last made for it.
    window_size: [u32; 2],
    frames: Option<u32>,
    /// `--resize`, until it is asked of the window.
    resize: Option<[u32; 2]>,
    screenshot: Option<PathBuf>,
    window: Option<Arc<Window>>,
    input: Input,
    hud: Hud,
    rendered: u32,
    totals: Totals,
    last_frame: Option<Instant>,
    last_report: Option<FrameReport>,
    error: Option<anyhow::Error>,
}

impl<P: Presenter> App<P> {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        event_loop.exit();
    }

    /// A key event. Synthetic events (keys already held when the window gains focus, released when
    /// it loses it) move the camera but toggle nothing.
    fn key(&mut self, event_loop: &ActiveEventLoop, event: &KeyEvent, synthetic: bool) {
        let pressed = event.state == ElementState::Pressed;
        if let PhysicalKey::Code(code) = event.physical_key
            && self.input.movement(code, pressed)
        {
            return;
        }
        if !pressed || event.repeat || synthetic {
            return;
        }
        let name = match &event.logical_key {
            Key::Named(NamedKey::Escape) => {
                event_loop.exit();
                return;
            }
            Key::Named(NamedKey::Space) => " ".to_string(),
            Key::Character(c) => c.to_lowercase(),
            _ => return,
        };
        if let Some(line) = self.scene.toggle(&name) {
            println!("vat demo: {line}");
            // Show the change at once.
            if let Some(earlier) = self.hud.since.checked_sub(HUD_PERIOD) {
                self.hud.since = earlier;
            }
        }
    }

    /// One frame: simulate, render into the swapchain, present; exit after `--frames`.
    fn frame(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(window) = self.window.clone() else { return Ok(()) };
        let physical = window.inner_size();
        let (Some(w), Some(h)) = (NonZeroU32::new(physical.width), NonZeroU32::new(physical.height)) else {
            return Ok(()); // Minimised.
        };
        // Compared with the window's last size, not the swapchain's (a surface may fix its own extent).
        if self.window_size != [w.get(), h.get()] {
            self.window_size = [w.get(), h.get()];
            self.presenter.resize(self.window_size)?;
            if self.frames.is_some() {
                println!("vat demo: window resized, presenting through {}", self.presenter.describe());
            }
        }
        let now = Instant::now();
        let wall_dt = self.last_frame.map_or(0.0, |t| now.duration_since(t).as_secs_f32());
        self.last_frame = Some(now);
        // Scripted runs step by a fixed 1/30 s (reproducible images); interactive ones by the clock.
        let dt = if self.frames.is_some() { 1.0 / 30.0 } else { wall_dt.min(0.1) };

        let cpu_start = Instant::now();
        self.scene.camera.update(&self.input, dt);
        let scene = &mut self.scene;
        scene.sim.step(&mut scene.crowd, if scene.paused { 0.0 } else { dt });
        let camera = scene.camera.camera(self.presenter.size());
        let (renderer, draw) = scene.frame(camera);
        let Some(report) = self.presenter.render(renderer, draw)? else {
            return Ok(()); // Skipped (swapchain recreated): the next redraw renders it.
        };
        let cpu = cpu_start.elapsed();
        self.last_report = Some(report);
        self.rendered += 1;
        if self.rendered > 1 {
            self.totals.frames += 1;
            self.totals.frame_seconds += f64::from(wall_dt);
            self.totals.cpu_seconds += cpu.as_secs_f64();
        }

        self.hud.frames += 1;
        self.hud.frame_seconds += f64::from(wall_dt);
        self.hud.cpu_seconds += cpu.as_secs_f64();
        if self.hud.since.elapsed() >= HUD_PERIOD {
            let title = self.title(&report)?;
            window.set_title(&title);
            self.hud = Hud::new();
        }
        if let (Some(n), Some(size)) = (self.frames, self.resize)
            && self.rendered >= n / 2
        {
            self.resize = None;
            // Applied by the X server at once without a window manager; a later frame sees it.
            let _ = window.request_inner_size(PhysicalSize::new(size[0], size[1]));
        }
        if self.frames.is_some_and(|n| self.rendered >= n) {
            event_loop.exit();
        }
        Ok(())
    }

    /// The title-bar line.
    fn title(&mut self, report: &FrameReport) -> Result<String> {
        let hud = &self.hud;
        let n = f64::from(hud.frames.max(1));
        // The first frame has no previous one to measure from.
        let timed = if self.rendered > 1 { n } else { 1.0 };
        let s = &report.stats;
        // GPU culling: the GPU's counts of an earlier frame, read back without waiting.
        let lag = match (report.culling, report.gpu_counts_frames_late) {
            (Culling::Gpu, Some(late)) => format!(" ({late} frames late)"),
            (Culling::Gpu, None) => " (GPU counts pending)".to_owned(),
            (Culling::Cpu, _) => String::new(),
        };
        Ok(format!(
            "vat demo | {:.1} ms frame, {:.1} ms CPU | {} simulated, {} submitted, {} drawn{lag} | {} triangles, {} draws | {}",
            hud.frame_seconds / timed * 1e3,
            hud.cpu_seconds / n * 1e3,
            s.simulated,
            s.submitted,
            s.drawn,
            s.triangles,
            draws(report),
            self.scene.toggles()
        ))
    }
}

impl<P: Presenter> ApplicationHandler for App<P> {
    fn resumed(&mut self, _event_loop: &ActiveEventLoop) {
        // Started by `Demo`, which opened the window.
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.frame(event_loop) {
                    self.fail(event_loop, e);
                }
            }
            WindowEvent::KeyboardInput { event, is_synthetic, .. } => {
                self.key(event_loop, &event, is_synthetic)
            }
            WindowEvent::Focused(false) => {
                // Keys released elsewhere never reach us.
                self.input = Input { cursor: self.input.cursor, ..Input::default() };
            }
            WindowEvent::MouseInput { state, button: MouseButton::Left, .. } => {
                self.input.dragging = state == ElementState::Pressed;
            }
            WindowEvent::CursorMoved { position, .. } => {
                if let Some((x, y)) = self.input.cursor
                    && self.input.dragging
                {
                    self.scene.camera.drag((position.x - x) as f32, (position.y - y) as f32);
                }
                self.input.cursor = Some((position.x, position.y));
            }
            WindowEvent::CursorLeft { .. } => self.input.cursor = None,
            WindowEvent::MouseWheel { delta, .. } => {
                let notches = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                if !self.scene.camera.walk {
                    self.scene.camera.zoom(0.9f32.powf(notches));
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(window) = &self.window {
            window.request_redraw();
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        self.window = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orbit_camera_moves_towards_target_on_forward() {
        let mut rig = CameraRig::new(CameraArg::Orbit, 10.0, &SceneScale::default());
        let before = rig.orbit_eye();
        let input = Input { forward: true, ..Input::default() };
        rig.update(&input, 0.1);
        let after = rig.orbit_eye();
        // The eye moves horizontally towards where the target was.
        let d0 = before[0].hypot(before[2]);
        let d1 = after[0].hypot(after[2]);
        assert!(d1 < d0, "{before:?} -> {after:?}");
        assert!((before[1] - after[1]).abs() < 1e-4);
    }

    #[test]
    fn walk_camera_moves_along_heading() {
        let mut rig = CameraRig::new(CameraArg::Walk, 10.0, &SceneScale::default());
        rig.walk_yaw = 0.0;
        let z0 = rig.eye[2];
        rig.update(&Input { forward: true, ..Input::default() }, 1.0);
        assert!(rig.eye[2] > z0 + 2.9);
        let x0 = rig.eye[0];
        rig.update(&Input { right: true, ..Input::default() }, 1.0);
        // Heading +Z with +Y up: right is -X (right-handed).
        assert!(rig.eye[0] < x0 - 2.9);
    }
}
