//! What vat-bevy's headless tests share: an app on the software Vulkan driver with `VatPlugin`,
//! and screenshots of an image target.

#![allow(dead_code)] // Each test uses some of it.

use std::sync::{Arc, Mutex};

use bevy::app::PluginsState;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::render_resource::TextureFormat;
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::WgpuSettings;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::ExitCondition;
use vat_bevy::VatPlugin;

/// A headless app (no window; Vulkan only, the software driver in CI) with Bevy's default plugins
/// and `VatPlugin`, its plugins built ([`finish`]); panics when Bevy found no GPU adapter.
pub(crate) fn headless_app() -> App {
    let mut app = unfinished_headless_app();
    finish(&mut app);
    app
}

/// [`headless_app`] before [`finish`]: the render sub-app can still be reached (pipelined rendering
/// moves it to its own thread when the app finishes).
pub(crate) fn unfinished_headless_app() -> App {
    let mut app = App::new();
    let wgpu = WgpuSettings { backends: Some(wgpu::Backends::VULKAN), ..vat_bevy::wgpu_settings() };
    let plugins = DefaultPlugins
        .set(WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() })
        .set(RenderPlugin { render_creation: wgpu.into(), ..default() });
    #[cfg(feature = "window")]
    let plugins = plugins.disable::<bevy::winit::WinitPlugin>();
    app.add_plugins((plugins, VatPlugin));
    app
}

/// Builds the app's plugins; panics when Bevy found no GPU adapter.
pub(crate) fn finish(app: &mut App) {
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
    assert!(
        app.world().get_resource::<RenderDevice>().is_some(),
        "Bevy found no GPU adapter: install the software Vulkan driver (cargo xtask deps)"
    );
}

/// An RGBA8 (sRGB) render target of `size` in the app's images.
pub(crate) fn image_target(app: &mut App, size: UVec2) -> Handle<Image> {
    let image = Image::new_target_texture(size.x, size.y, TextureFormat::Rgba8UnormSrgb, None);
    app.world_mut().resource_mut::<Assets<Image>>().add(image)
}

/// A screenshot of `target` after the frames it takes (Bevy compiles the screenshot's pipeline in
/// the background: up to a minute of frames); with `VAT_BEVY_TEST_OUT=dir`, also saved there as
/// `name.png` for a look.
pub(crate) fn screenshot(app: &mut App, target: Handle<Image>, name: &str) -> Image {
    let shot: Arc<Mutex<Option<Image>>> = Arc::default();
    let slot = shot.clone();
    app.world_mut().spawn(Screenshot::image(target)).observe(move |captured: On<ScreenshotCaptured>| {
        *slot.lock().unwrap() = Some(captured.image.clone());
    });
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < 60 {
        app.update();
        if let Some(image) = shot.lock().unwrap().take() {
            if let Ok(dir) = std::env::var("VAT_BEVY_TEST_OUT") {
                image
                    .clone()
                    .try_into_dynamic()
                    .unwrap()
                    .to_rgba8()
                    .save(format!("{dir}/{name}.png"))
                    .unwrap();
            }
            return image;
        }
    }
    panic!("no screenshot after 60 s of frames");
}
