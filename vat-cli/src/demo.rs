//! `vat demo`: a windowed, interactive crowd demo.
//!
//! A wandering crowd ([`vat_examples::sim::Simulation`]: steering, optional neighbour separation,
//! idle/walk/jog/run chosen by speed with stride-matched rates and cross-fades) on the procedural
//! humanoid (baked in memory, no files needed) or any `.vat`, with orbit and walk cameras, a key for
//! every runtime toggle and a title-bar line with the frame's figures.
//!
//! The demo is written once, generic over vat-core's [`CrowdRenderer`] seam; `--backend` picks the
//! implementation.
//!
//! # Presentation
//! Every frame is rendered offscreen through the seam, read back as RGBA8 and copied into the window
//! on the CPU with `softbuffer`. A game presents from its own swapchain (the backends' `Renderer`s
//! draw into any colour view the caller gives them); the demo instead favours one window path that is
//! the same for both backends and works on any X server, including Xvfb with Mesa's software Vulkan
//! driver and no GPU. The read-back costs a copy per frame, which is small next to rendering on a
//! software driver but shows in the frame time on a real GPU. The window is X11 (Wayland desktops run
//! it through XWayland).
//!
//! # Scripted runs
//! `--frames N` renders N frames with a fixed 1/30 s step (same flags, same images) and exits;
//! `--screenshot out.png` saves the last frame rendered (written atomically).

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::render::{CrowdRenderer, Culling, FrameReport, RenderMode, RenderOptions};
use vat_core::scene::SceneScale;
use vat_examples::sim::{Simulation, wander_half_extent};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, KeyEvent, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, KeyCode, NamedKey, PhysicalKey};
use winit::window::{Window, WindowId};

use crate::render::{BackendArg, CullingArg, ModeArg};

/// The keys, for `vat demo --help` (the README lists the same).
pub(crate) const KEYS_HELP: &str = "\
Keys (the window must have focus):
  M            VAT / bone mode (bone mode needs an asset baked with --bones)
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
    match args.backend {
        BackendArg::Wgpu => {
            // The window system first: without a display there is no point opening a device.
            let event_loop = open_event_loop()?;
            let renderer = vat_wgpu::Offscreen::new(args.size, vat_wgpu::RendererConfig::default())
                .context("wgpu: cannot open a device")?;
            run(event_loop, renderer, args)
        }
        BackendArg::Vulkan => {
            let event_loop = open_event_loop()?;
            let renderer = vat_vulkan::Offscreen::new(args.size, vat_vulkan::RendererConfig::default())
                .context("Vulkan: cannot open a device")?;
            run(event_loop, renderer, args)
        }
    }
}

/// The connection to the window system.
fn open_event_loop() -> Result<EventLoop<()>> {
    EventLoop::new().context(
        "cannot connect to a display (is DISPLAY set? headless: run under xvfb-run, or use `vat render`)",
    )
}

/// The whole demo, on any backend.
fn run<R: CrowdRenderer>(event_loop: EventLoop<()>, mut renderer: R, args: &DemoArgs) -> Result<()> {
    let source =
        args.asset.as_ref().map_or_else(|| "procedural humanoid".to_string(), |p| p.display().to_string());
    let bytes = match &args.asset {
        Some(p) => crate::bake::read_vat(p, args.max_memory)?,
        None => vat_examples::support::asset_bytes(None)?,
    };
    let asset = Asset::parse_with_limits(&bytes, &crate::bake::load_limits(args.max_memory))
        .with_context(|| format!("{source}: not a valid .vat file"))?;
    let has_bones = asset.manifest().bone_animation.is_some();
    if matches!(args.mode, ModeArg::Bone) && !has_bones {
        bail!("{source}: --mode bone needs an asset baked with --bones");
    }
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
        ground: true,
        // Centred below the camera, which starts within 1.3 half extents of the centre.
        ground_half_extent: half * 3.0 + scale.length(40.0),
        shadow_distance: scale.shadow_distance(),
        scene_unit: scale.unit,
        ..RenderOptions::default()
    };
    let camera = CameraRig::new(args.camera, half, &scale);
    let adapter = renderer.adapter_name();
    println!(
        "vat demo: {} characters of {source} on {adapter}; {}",
        args.instances,
        if args.frames.is_some() { "scripted run" } else { "keys: vat demo --help" }
    );

    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App {
        scene: Scene {
            renderer,
            gpu_asset,
            gpu_crowd,
            crowd,
            sim,
            options,
            camera,
            has_bones,
            paused: false,
        },
        adapter,
        size: args.size,
        frames: args.frames,
        screenshot: args.screenshot.clone(),
        window: None,
        surface: None,
        input: Input::default(),
        hud: Hud::new(),
        rendered: 0,
        totals: Totals::default(),
        last_frame: None,
        last_report: None,
        last_rgba: Vec::new(),
        error: None,
    };
    event_loop.run_app(&mut app).context("window event loop failed")?;
    if let Some(e) = app.error.take() {
        return Err(e);
    }
    if let Some(path) = &app.screenshot {
        if app.rendered == 0 {
            bail!("{}: no frame was rendered, nothing to save", path.display());
        }
        let size = app.scene.renderer.size();
        vat_examples::support::save_png(path, size, &app.last_rgba)?;
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

/// Draw calls of a frame, all passes.
fn draws(r: &FrameReport) -> u32 {
    r.draws_main + r.draws_shadow + r.draws_attachments + r.draws_ground
}

/// What is drawn and how: the renderer, the crowd and its simulation, the options and the camera.
struct Scene<R: CrowdRenderer> {
    renderer: R,
    gpu_asset: R::Asset,
    gpu_crowd: R::Crowd,
    crowd: Crowd,
    sim: Simulation,
    options: RenderOptions,
    camera: CameraRig,
    has_bones: bool,
    paused: bool,
}

impl<R: CrowdRenderer> Scene<R> {
    /// Applies a toggle key; returns a line saying what changed (`None`: not a toggle key).
    fn toggle(&mut self, key: &str) -> Option<String> {
        let on = |b: bool| if b { "on" } else { "off" };
        let config = self.crowd.config_mut();
        let line = match key {
            "m" => {
                if self.options.mode == RenderMode::Vat && !self.has_bones {
                    "mode: bone mode needs an asset baked with --bones; staying in VAT mode".to_string()
                } else {
                    self.options.mode = match self.options.mode {
                        RenderMode::Vat => RenderMode::Bone,
                        RenderMode::Bone => RenderMode::Vat,
                    };
                    format!("mode: {:?}", self.options.mode)
                }
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

/// Held keys and the mouse.
#[derive(Debug, Default)]
struct Input {
    forward: bool,
    back: bool,
    left: bool,
    right: bool,
    up: bool,
    down: bool,
    fast: bool,
    dragging: bool,
    cursor: Option<(f64, f64)>,
}

impl Input {
    /// Records a movement key; returns whether `code` is one.
    fn movement(&mut self, code: KeyCode, pressed: bool) -> bool {
        let slot = match code {
            KeyCode::KeyW | KeyCode::ArrowUp => &mut self.forward,
            KeyCode::KeyS | KeyCode::ArrowDown => &mut self.back,
            KeyCode::KeyA | KeyCode::ArrowLeft => &mut self.left,
            KeyCode::KeyD | KeyCode::ArrowRight => &mut self.right,
            KeyCode::KeyE => &mut self.up,
            KeyCode::KeyQ => &mut self.down,
            KeyCode::ShiftLeft | KeyCode::ShiftRight => &mut self.fast,
            _ => return false,
        };
        *slot = pressed;
        true
    }
}

/// Orbit and walk cameras; each keeps its own state while the other is in use.
#[derive(Debug, Clone, Copy)]
struct CameraRig {
    walk: bool,
    /// Orbit: the point turned around, metres.
    target: [f32; 3],
    /// Orbit: angle around +Y of the eye from the target, radians (0: eye on +Z).
    orbit_yaw: f32,
    /// Orbit: elevation of the eye above the target, radians.
    orbit_pitch: f32,
    /// Orbit: distance from target to eye, metres.
    distance: f32,
    /// Walk: eye position, metres.
    eye: [f32; 3],
    /// Walk: heading, radians (0 looks along +Z).
    walk_yaw: f32,
    /// Walk: look up (+) or down (-), radians.
    walk_pitch: f32,
    /// Vertical field of view, radians.
    fov: f32,
    /// Asset units per reference metre ([`SceneScale::unit`]): every length and speed below is
    /// tuned in reference metres and multiplied by it.
    unit: f32,
}

/// Eye height of the walk camera, reference metres.
const EYE_HEIGHT: f32 = 1.7;

impl CameraRig {
    /// Cameras for a crowd wandering within `half_extent` (asset units) of the origin.
    fn new(kind: CameraArg, half_extent: f32, scale: &SceneScale) -> Self {
        let u = scale.unit;
        let orbit = Self {
            walk: false,
            target: [0.0, scale.floor + 0.8 * u, 0.0],
            orbit_yaw: 0.6,
            orbit_pitch: 0.42,
            distance: half_extent * 0.95 + 8.0 * u,
            eye: [0.0, EYE_HEIGHT * u, 0.0],
            walk_yaw: 0.0,
            walk_pitch: 0.0,
            fov: 50f32.to_radians(),
            unit: u,
        };
        // The walker starts at the crowd's edge, looking across it.
        let mut rig = Self {
            eye: [0.0, EYE_HEIGHT * u, half_extent * 0.8 + 2.0 * u],
            walk_yaw: std::f32::consts::PI,
            walk_pitch: -0.05,
            ..orbit
        };
        rig.walk = kind == CameraArg::Walk;
        rig
    }

    fn kind_name(&self) -> &'static str {
        if self.walk { "walk" } else { "orbit" }
    }

    fn switch(&mut self) {
        self.walk = !self.walk;
    }

    fn orbit_eye(&self) -> [f32; 3] {
        let (sy, cy) = self.orbit_yaw.sin_cos();
        let (sp, cp) = self.orbit_pitch.sin_cos();
        let d = self.distance;
        [self.target[0] + d * cp * sy, self.target[1] + d * sp, self.target[2] + d * cp * cy]
    }

    /// Moves by the held keys over `dt` seconds.
    fn update(&mut self, input: &Input, dt: f32) {
        let axis = |pos: bool, neg: bool| f32::from(u8::from(pos)) - f32::from(u8::from(neg));
        let (fwd, side, vertical) =
            (axis(input.forward, input.back), axis(input.right, input.left), axis(input.up, input.down));
        let boost = if input.fast { 4.0 } else { 1.0 };
        if self.walk {
            let (sy, cy) = self.walk_yaw.sin_cos();
            // Forward (sin, cos) on the ground; right is forward x up.
            let speed = 3.0 * self.unit * boost * dt;
            self.eye[0] += (sy * fwd - cy * side) * speed;
            self.eye[2] += (cy * fwd + sy * side) * speed;
            self.eye[1] = (self.eye[1] + vertical * speed).clamp(0.3 * self.unit, 200.0 * self.unit);
        } else {
            let (sy, cy) = self.orbit_yaw.sin_cos();
            // Towards the target from the eye is (-sin, -cos); right is (cos, -sin).
            let speed = (0.5 * self.distance).max(2.0 * self.unit) * boost * dt;
            self.target[0] += (-sy * fwd + cy * side) * speed;
            self.target[2] += (-cy * fwd - sy * side) * speed;
            self.zoom((-vertical * dt * 1.5 * boost).exp());
        }
    }

    fn zoom(&mut self, factor: f32) {
        self.distance = (self.distance * factor).clamp(2.0 * self.unit, 2000.0 * self.unit);
    }

    /// Turns by a mouse drag of `dx, dy` pixels.
    fn drag(&mut self, dx: f32, dy: f32) {
        if self.walk {
            self.walk_yaw -= dx * 0.003;
            self.walk_pitch = (self.walk_pitch - dy * 0.003).clamp(-1.4, 1.4);
        } else {
            self.orbit_yaw -= dx * 0.005;
            self.orbit_pitch = (self.orbit_pitch + dy * 0.005).clamp(0.03, 1.5);
        }
    }

    fn camera(&self, size: [u32; 2]) -> Camera {
        let aspect = size[0] as f32 / size[1].max(1) as f32;
        let (eye, target) = if self.walk {
            let (sy, cy) = self.walk_yaw.sin_cos();
            let (sp, cp) = self.walk_pitch.sin_cos();
            (self.eye, [self.eye[0] + cp * sy, self.eye[1] + sp, self.eye[2] + cp * cy])
        } else {
            (self.orbit_eye(), self.target)
        };
        Camera::look_at(eye, target, self.fov, aspect, 0.1 * self.unit, 3000.0 * self.unit)
    }
}

/// Frame figures averaged over about a quarter of a second, for the title bar.
struct Hud {
    since: Instant,
    frames: u32,
    frame_seconds: f64,
    cpu_seconds: f64,
}

/// How often the title bar is refreshed.
const HUD_PERIOD: Duration = Duration::from_millis(250);

impl Hud {
    fn new() -> Self {
        Self { since: Instant::now(), frames: 0, frame_seconds: 0.0, cpu_seconds: 0.0 }
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
struct App<R: CrowdRenderer> {
    scene: Scene<R>,
    adapter: String,
    size: [u32; 2],
    frames: Option<u32>,
    screenshot: Option<PathBuf>,
    window: Option<Rc<Window>>,
    surface: Option<softbuffer::Surface<Rc<Window>, Rc<Window>>>,
    input: Input,
    hud: Hud,
    rendered: u32,
    totals: Totals,
    last_frame: Option<Instant>,
    last_report: Option<FrameReport>,
    last_rgba: Vec<u8>,
    error: Option<anyhow::Error>,
}

impl<R: CrowdRenderer> App<R> {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
        event_loop.exit();
    }

    fn open_window(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let attributes = Window::default_attributes()
            .with_title(format!("vat demo: {}", self.adapter))
            .with_inner_size(PhysicalSize::new(self.size[0], self.size[1]));
        let window = Rc::new(event_loop.create_window(attributes).context("cannot create a window")?);
        let context = softbuffer::Context::new(window.clone())
            .map_err(|e| anyhow!("softbuffer: cannot use the display: {e}"))?;
        let surface = softbuffer::Surface::new(&context, window.clone())
            .map_err(|e| anyhow!("softbuffer: cannot present to the window: {e}"))?;
        self.window = Some(window);
        self.surface = Some(surface);
        Ok(())
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

    /// One frame: simulate, render, read back, present; the screenshot and exit after `--frames`.
    fn frame(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(window) = self.window.clone() else { return Ok(()) };
        let physical = window.inner_size();
        let (Some(w), Some(h)) = (NonZeroU32::new(physical.width), NonZeroU32::new(physical.height)) else {
            return Ok(()); // Minimised.
        };
        if self.scene.renderer.size() != [w.get(), h.get()] {
            self.scene.renderer.resize([w.get(), h.get()]).context("cannot resize the render target")?;
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
        let size = scene.renderer.size();
        let camera = scene.camera.camera(size);
        let report = scene
            .renderer
            .render_crowd(&scene.gpu_asset, &mut scene.gpu_crowd, &mut scene.crowd, &camera, &scene.options)
            .context("render failed")?;
        let cpu = cpu_start.elapsed();
        self.last_rgba = scene.renderer.read_rgba8().context("read-back failed")?;
        self.last_report = Some(report);
        self.present(size)?;
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

    /// Copies the last frame into the window (sRGB RGBA8 to softbuffer's 0RGB).
    fn present(&mut self, size: [u32; 2]) -> Result<()> {
        let Some(surface) = self.surface.as_mut() else { return Ok(()) };
        let (Some(w), Some(h)) = (NonZeroU32::new(size[0]), NonZeroU32::new(size[1])) else { return Ok(()) };
        surface.resize(w, h).map_err(|e| anyhow!("softbuffer: cannot resize: {e}"))?;
        let mut buffer = surface.buffer_mut().map_err(|e| anyhow!("softbuffer: no buffer: {e}"))?;
        blit_rgba8(&self.last_rgba, &mut buffer);
        buffer.present().map_err(|e| anyhow!("softbuffer: cannot present: {e}"))
    }
}

/// RGBA8 pixels to `0x00RRGGBB` words (softbuffer's format), as many as both hold.
fn blit_rgba8(rgba: &[u8], out: &mut [u32]) {
    for (dst, px) in out.iter_mut().zip(rgba.chunks_exact(4)) {
        *dst = (u32::from(px[0]) << 16) | (u32::from(px[1]) << 8) | u32::from(px[2]);
    }
}

impl<R: CrowdRenderer> ApplicationHandler for App<R> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_none()
            && let Err(e) = self.open_window(event_loop)
        {
            self.fail(event_loop, e);
        }
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
        // The surface refers to the window: release it first.
        self.surface = None;
        self.window = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blit_packs_0rgb() {
        let rgba = [1u8, 2, 3, 255, 250, 128, 0, 7];
        let mut out = [0u32; 2];
        blit_rgba8(&rgba, &mut out);
        assert_eq!(out, [0x0001_0203, 0x00FA_8000]);
    }

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
