//! A crowd in a Bevy scene: a ground, a building, a directional light with cascades and 10,000
//! characters of two assets (the procedural humanoid, and the same exported as a textured glTF
//! character and baked from that file) walking, jogging and idling with cross-fades, drawn by
//! vat-bevy.
//!
//! ```sh
//! cargo run --release -p vat-bevy --example crowd --ignore-rust-version                 # a window
//! cargo run --release -p vat-bevy --example crowd --ignore-rust-version -- --frames 60 --screenshot out.png
//! #   headless: renders 60 frames into an image, saves the last through Bevy's screenshot API, exits
//! cargo run --release -p vat-bevy --example crowd --ignore-rust-version -- --instances 100000
//! ```

#[path = "common/scene.rs"]
mod scene;

use std::path::PathBuf;
use std::time::Duration;

use bevy::app::ScheduleRunnerPlugin;
use bevy::image::Image;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::ExitCondition;
use vat_bevy::{VatAnimationEvent, VatPlugin};

struct Args {
    frames: Option<u32>,
    screenshot: Option<PathBuf>,
    instances: u32,
    size: UVec2,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { frames: None, screenshot: None, instances: 10_000, size: UVec2::new(1280, 720) };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--frames" => {
                args.frames = Some(value("--frames")?.parse().map_err(|e| format!("--frames: {e}"))?)
            }
            "--screenshot" => args.screenshot = Some(value("--screenshot")?.into()),
            "--instances" => {
                args.instances = value("--instances")?.parse().map_err(|e| format!("--instances: {e}"))?
            }
            "--size" => {
                let v = value("--size")?;
                let (w, h) = v.split_once('x').ok_or(format!("--size {v}: expected WxH"))?;
                let w: u32 = w.parse().map_err(|e| format!("--size: {e}"))?;
                let h: u32 = h.parse().map_err(|e| format!("--size: {e}"))?;
                args.size = UVec2::new(w.max(1), h.max(1));
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// Counts frames in headless mode; takes the screenshot after the last one and exits once saved.
#[derive(Resource)]
struct Headless {
    frames: u32,
    rendered: u32,
    screenshot: Option<PathBuf>,
    target: Handle<Image>,
}

fn main() -> AppExit {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "crowd: {e}\nusage: crowd [--frames N] [--screenshot out.png] [--instances N] [--size WxH]"
            );
            return AppExit::error();
        }
    };
    // The output is checked before anything runs (vat's write gate: never replaces what is not a
    // regular file), and written all or nothing at the end.
    if let Some(path) = &args.screenshot
        && let Err(e) = vat_core::files::check_output(path)
    {
        eprintln!("crowd: {e}");
        return AppExit::error();
    }
    let headless = args.frames.is_some() || args.screenshot.is_some();
    let mut app = App::new();
    if headless {
        let plugins = DefaultPlugins.set(render_plugin()).set(WindowPlugin {
            primary_window: None,
            exit_condition: ExitCondition::DontExit,
            ..default()
        });
        #[cfg(feature = "window")]
        let plugins = plugins.disable::<bevy::winit::WinitPlugin>();
        app.add_plugins((plugins, ScheduleRunnerPlugin::run_loop(Duration::ZERO)));
    } else {
        app.add_plugins(DefaultPlugins.set(render_plugin()).set(WindowPlugin {
            primary_window: Some(Window {
                title: "vat-bevy crowd".into(),
                resolution: (args.size.x, args.size.y).into(),
                ..default()
            }),
            ..default()
        }));
    }
    app.add_plugins(VatPlugin);
    let target = headless.then(|| {
        let image = Image::new_target_texture(args.size.x, args.size.y, TextureFormat::Rgba8UnormSrgb, None);
        app.world_mut().resource_mut::<Assets<Image>>().add(image)
    });
    if let Some(target) = &target {
        app.insert_resource(Headless {
            frames: args.frames.unwrap_or(30).max(1),
            rendered: 0,
            screenshot: args.screenshot.clone(),
            target: target.clone(),
        })
        .add_systems(Last, count_frames);
    }
    app.insert_resource(scene::SceneConfig {
        instances: args.instances,
        target,
        vat: scene::humanoid_vat(),
        second: Some(scene::textured_vat()),
        z_range: (-scene::AREA, scene::AREA),
    })
    .add_systems(Startup, scene::setup)
    .add_systems(Update, (scene::walk, count_events))
    .run()
}

/// Bevy's renderer with vat's device requirements (see `vat_bevy::wgpu_settings`).
fn render_plugin() -> RenderPlugin {
    RenderPlugin { render_creation: vat_bevy::wgpu_settings().into(), ..default() }
}

fn count_frames(mut headless: ResMut<Headless>, mut commands: Commands, mut exit: MessageWriter<AppExit>) {
    headless.rendered += 1;
    if headless.rendered != headless.frames {
        return;
    }
    match headless.screenshot.clone() {
        Some(path) => {
            commands.spawn(Screenshot::image(headless.target.clone())).observe(
                move |captured: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>| match save_png(
                    &path,
                    &captured.image,
                ) {
                    Ok(()) => {
                        println!("crowd: saved {}", path.display());
                        exit.write(AppExit::Success);
                    }
                    Err(e) => {
                        eprintln!("crowd: {}: {e}", path.display());
                        exit.write(AppExit::error());
                    }
                },
            );
        }
        None => {
            exit.write(AppExit::Success);
        }
    }
}

/// Writes `image` as an 8-bit RGBA PNG at `path` through vat's write gate (temporary file, then
/// rename: nothing is left on failure).
fn save_png(path: &std::path::Path, image: &Image) -> Result<(), String> {
    let rgba = image.clone().try_into_dynamic().map_err(|e| e.to_string())?.to_rgba8();
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, rgba.width(), rgba.height());
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        encoder
            .write_header()
            .and_then(|mut w| w.write_image_data(rgba.as_raw()))
            .map_err(|e| e.to_string())?;
    }
    vat_core::files::write_file_atomically(path, &bytes).map_err(|e| e.to_string())
}

/// Prints how many animation events (footsteps: the marked first frame of each gait) arrived, every
/// 5 s.
fn count_events(
    mut events: MessageReader<VatAnimationEvent>,
    time: Res<Time>,
    mut total: Local<(usize, f32)>,
) {
    total.0 += events.read().count();
    if time.elapsed_secs() - total.1 >= 5.0 {
        total.1 = time.elapsed_secs();
        info!("animation events so far: {}", total.0);
    }
}
