//! The CPU cost of vat-bevy per frame against vat-wgpu used directly by a host, for the same crowd,
//! camera, light and passes, measured side by side in one process.
//!
//! ```sh
//! cargo run --release -p vat-bevy --example bench --ignore-rust-version -- --instances 1000,100000,1000000
//! ```
//!
//! Both sides draw one crowd of procedural humanoids standing in a square grid (2 m apart) and
//! playing the walk at random phases, from one camera (960 x 540, one sample, reverse-Z) at a corner
//! of the grid, with a directional light of two shadow cascades (Bevy's: the direct host draws into
//! the very cascade views Bevy made for the camera): the crowd is planned once per frame with both
//! cascades as extra views, drawn into each cascade, then into the main pass.
//!
//! - **vat-bevy**: a headless Bevy app with [`VatPlugin`] (Bevy's camera, light and cascades). Its
//!   figure is [`VatCpuTime`]: the CPU time of vat-bevy's own systems in both worlds (building and
//!   advancing crowds, instance sync, extraction, upload, planning and recording the shadow,
//!   prepass and main passes; not Bevy's work they wait for, not the submits), per frame.
//! - **vat-wgpu direct**: a host on vat-wgpu's headless device: per frame `Crowd::advance`,
//!   `Renderer::prepare` with two extra views, `draw_depth` into two layers of its own shadow map,
//!   `draw` into its colour and depth target. Its figure is the CPU time of those calls; the
//!   submit and the wait for the GPU after each frame are outside it, as they are outside
//!   `VatCpuTime` (on the software driver a submit waits for the device's queue).
//!
//! Each prints the median and the 90th percentile over the measured frames (after a warm-up), and
//! the ratio of the medians. On the software Vulkan driver the GPU work shares the CPU with the
//! measured code, so compare the two columns of one run, not runs on different machines.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::app::PluginsState;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::render_resource::TextureFormat;
use bevy::render::settings::WgpuSettings;
use bevy::window::ExitCondition;
use vat_bevy::{VatAsset, VatCpuTime, VatCrowd, VatPlugin};
use vat_core::backend::gpu::{ShadowCascade, ShadowLookup};
use vat_core::crowd::{Camera as VatCamera, Crowd, CrowdConfig};
use vat_core::render::ShadowMapSource;
use vat_wgpu::{CrowdDraw, PassConventions, PassFormats, RenderOptions, Renderer, RendererConfig};

const SIZE: UVec2 = UVec2::new(960, 540);
const SPACING: f32 = 2.0;
const EYE_HEIGHT: f32 = 12.0;
const FOV: f32 = std::f32::consts::FRAC_PI_4;
const NEAR: f32 = 0.1;
/// The two cascades' far bounds, metres.
const CASCADES: [f32; 2] = [20.0, 80.0];

struct Args {
    instances: Vec<u32>,
    frames: usize,
    warm_up: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { instances: vec![1_000, 100_000, 1_000_000], frames: 60, warm_up: 20 };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--instances" => {
                args.instances = value("--instances")?
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|e| format!("--instances {n}: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--frames" => args.frames = value("--frames")?.parse().map_err(|e| format!("--frames: {e}"))?,
            "--warm-up" => {
                args.warm_up = value("--warm-up")?.parse().map_err(|e| format!("--warm-up: {e}"))?
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?} (--instances N,N,... --frames F --warm-up W)"
                ));
            }
        }
    }
    if args.frames == 0 || args.instances.is_empty() {
        return Err("--frames and --instances must not be empty".into());
    }
    Ok(args)
}

/// The grid: `n` instances, about square, from the origin towards -z and +x.
fn spawn_grid(crowd: &mut Crowd, n: u32, walk: u32) {
    let side = (n as f32).sqrt().ceil().max(1.0) as u32;
    for i in 0..n {
        let (x, z) = ((i % side) as f32 * SPACING, -((i / side) as f32) * SPACING);
        let phase = (i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1u32 << 24) as f32;
        crowd.spawn_at_phase([x, 0.0, z], std::f32::consts::PI, walk, phase);
    }
}

/// The camera: above the grid's corner, looking along its diagonal.
fn eye_and_target(n: u32) -> (Vec3, Vec3) {
    let side = (n as f32).sqrt().ceil().max(1.0) * SPACING;
    let eye = Vec3::new(-6.0, EYE_HEIGHT, 6.0);
    let reach = side.min(150.0);
    (eye, Vec3::new(reach * 0.5, 0.0, -reach * 0.5))
}

fn sun() -> Vec3 {
    Vec3::new(-0.4, 0.8, 0.3).normalize()
}

fn median_and_p90(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(v[v.len() / 2]), ms(v[(v.len() * 9 / 10).min(v.len() - 1)]))
}

/// One of Bevy's cascades for the camera: world to clip, and where it ends (view distance, m).
type BevyCascade = ([[f32; 4]; 4], f32);

/// vat-bevy: the CPU time of its systems per frame, and Bevy's cascades for the camera (the views
/// the direct host then draws into, so both sides do the same work).
fn bevy_frames(bytes: &Arc<[u8]>, n: u32, args: &Args) -> (Vec<Duration>, Vec<BevyCascade>) {
    let mut app = App::new();
    let wgpu = WgpuSettings { backends: Some(wgpu::Backends::VULKAN), ..vat_bevy::wgpu_settings() };
    let plugins = DefaultPlugins
        .set(WindowPlugin { primary_window: None, exit_condition: ExitCondition::DontExit, ..default() })
        .set(RenderPlugin { render_creation: wgpu.into(), ..default() });
    #[cfg(feature = "window")]
    let plugins = plugins.disable::<bevy::winit::WinitPlugin>();
    app.add_plugins((plugins, VatPlugin));
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
    let image = Image::new_target_texture(SIZE.x, SIZE.y, TextureFormat::Rgba8UnormSrgb, None);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(image);
    let (eye, look) = eye_and_target(n);
    let camera = app.world_mut().spawn((
        Camera3d::default(),
        Msaa::Off,
        // Bevy's default (TonyMcMapFace) needs the `tonemapping_luts` feature vat-bevy leaves out.
        bevy::core_pipeline::tonemapping::Tonemapping::AcesFitted,
        Transform::from_translation(eye).looking_at(look, Vec3::Y),
        bevy::camera::RenderTarget::Image(target.into()),
    ));
    let camera = camera.id();
    let light = app.world_mut().spawn((
        DirectionalLight { illuminance: 8_000.0, shadow_maps_enabled: true, ..default() },
        Transform::from_translation(sun()).looking_at(Vec3::ZERO, Vec3::Y),
        CascadeShadowConfigBuilder {
            num_cascades: 2,
            first_cascade_far_bound: CASCADES[0],
            maximum_distance: CASCADES[1],
            ..default()
        }
        .build(),
    ));
    let light = light.id();
    let asset = VatAsset::from_bytes(bytes.to_vec()).expect("the humanoid is a valid .vat");
    let walk = asset.clip_index("walk").unwrap_or(0);
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset.clone());
    let crowd = VatCrowd::with_asset(handle, &asset, CrowdConfig::default());
    if let Some(mut c) = crowd.crowd() {
        spawn_grid(&mut c, n, walk);
    }
    app.world_mut().spawn(crowd);
    let cpu = app.world().resource::<VatCpuTime>().clone();
    let mut frames = Vec::with_capacity(args.frames);
    for k in 0..args.warm_up + args.frames {
        let before = cpu.total();
        app.update();
        if k >= args.warm_up {
            frames.push(cpu.total() - before);
        }
    }
    let bounds = app.world().get::<bevy::light::CascadeShadowConfig>(light).expect("cascades").bounds.clone();
    let cascades = app.world().get::<bevy::light::Cascades>(light).expect("cascades");
    let views = cascades.cascades.get(&camera).expect("the camera's cascades");
    let cascades =
        views.iter().zip(bounds).map(|(c, far)| (c.clip_from_world.to_cols_array_2d(), far)).collect();
    (frames, cascades)
}

/// vat-wgpu used directly, drawing into `cascades` (Bevy's, for the same camera and light): the CPU
/// time of the host's vat calls per frame.
fn direct_frames(bytes: &Arc<[u8]>, n: u32, args: &Args, cascades: &[BevyCascade]) -> Vec<Duration> {
    let (device, queue, _) = vat_wgpu::headless_device().expect("a Vulkan adapter (cargo xtask deps)");
    let config = RendererConfig {
        color_format: wgpu::TextureFormat::Rgba8UnormSrgb,
        depth_format: wgpu::TextureFormat::Depth32Float,
        shadow_map_size: 0,
        conventions: PassConventions::REVERSE_Z,
        ..Default::default()
    };
    let mut renderer = Renderer::new(&device, &queue, config).expect("vat's renderer");
    let parsed = vat_core::container::Asset::parse(bytes).expect("the humanoid is a valid .vat");
    let gpu_asset = renderer.upload(&parsed).expect("upload");
    let crowd_asset = vat_core::crowd::CrowdAsset::from_manifest(parsed.manifest()).expect("crowd asset");
    let walk = parsed.manifest().clips.iter().position(|c| c.name == "walk").unwrap_or(0) as u32;
    let mut crowd = Crowd::new(crowd_asset, CrowdConfig::default());
    spawn_grid(&mut crowd, n, walk);
    let mut gpu_crowd = renderer.create_crowd(&crowd).expect("crowd");
    let texture = |label, format, layers| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size: wgpu::Extent3d { width: SIZE.x, height: SIZE.y, depth_or_array_layers: layers },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        })
    };
    let color = texture("color", wgpu::TextureFormat::Rgba8UnormSrgb, 1).create_view(&Default::default());
    let depth = texture("depth", wgpu::TextureFormat::Depth32Float, 1).create_view(&Default::default());
    let shadow = texture("cascades", wgpu::TextureFormat::Depth32Float, cascades.len() as u32);
    let layer = |k: u32| {
        shadow.create_view(&wgpu::TextureViewDescriptor {
            dimension: Some(wgpu::TextureViewDimension::D2),
            base_array_layer: k,
            array_layer_count: Some(1),
            ..Default::default()
        })
    };
    let layers: Vec<wgpu::TextureView> = (0..cascades.len() as u32).map(layer).collect();
    renderer.set_host_shadow_map(Some(shadow.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    })));
    let (eye, look) = eye_and_target(n);
    let camera = VatCamera::look_at_reverse_z(
        eye.to_array(),
        look.to_array(),
        FOV,
        SIZE.x as f32 / SIZE.y as f32,
        NEAR,
    )
    .with_viewport(SIZE.y, FOV);
    let cascades: Vec<ShadowCascade> = cascades
        .iter()
        .enumerate()
        .map(|(k, &(view_proj, far_bound))| ShadowCascade {
            view_proj,
            far_bound,
            normal_offset: 0.02,
            layer: k as u32,
        })
        .collect();
    let forward = (look - eye).normalize();
    let view_depth = [forward.x, forward.y, forward.z, -forward.dot(eye)];
    let lookup = ShadowLookup::cascaded(&cascades, view_depth, 0.2, true).expect("Bevy's cascades");
    let options = RenderOptions {
        shadow_map: ShadowMapSource::Host(lookup),
        sun_direction: sun().to_array(),
        ..Default::default()
    };
    let views: Vec<[[f32; 4]; 4]> = cascades.iter().map(|c| c.view_proj).collect();
    let depth_formats = PassFormats {
        color: None,
        depth: wgpu::TextureFormat::Depth32Float,
        motion: None,
        samples: 1,
        conventions: PassConventions::REVERSE_Z,
    };
    let colour_formats = PassFormats { color: Some(wgpu::TextureFormat::Rgba8UnormSrgb), ..depth_formats };
    let depth_pass =
        |encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView| -> wgpu::RenderPass<'static> {
            encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("host depth"),
                    color_attachments: &[],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(0.0),
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime()
        };
    let dt = 1.0 / 60.0;
    let mut frames = Vec::with_capacity(args.frames);
    for k in 0..args.warm_up + args.frames {
        let start = Instant::now();
        crowd.advance(dt);
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut draws = [CrowdDraw { asset: &gpu_asset, gpu: &mut gpu_crowd, crowd: &mut crowd }];
            renderer.prepare(&mut encoder, &mut draws, &camera, &options, &views).expect("prepare");
            for (view, layer) in layers.iter().enumerate() {
                let mut pass = depth_pass(&mut encoder, layer);
                renderer.draw_depth(&mut pass, &draws, view, depth_formats);
            }
            let mut pass = encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("host colour"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: &color,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &depth,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(0.0),
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime();
            renderer.draw(&mut pass, &draws, colour_formats);
        }
        let commands = encoder.finish();
        // The submit is not counted (as in VatCpuTime): on a software driver it waits for the
        // device's queue.
        let elapsed = start.elapsed();
        queue.submit([commands]);
        // The GPU's frame, outside the measured time (as Bevy's wait is outside vat's systems).
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
        if k >= args.warm_up {
            frames.push(elapsed);
        }
    }
    frames
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let rig = vat_procgen::humanoid();
    let bake = vat_bake::prepare::prepare(&rig, &Default::default()).expect("the humanoid bakes");
    let bytes: Arc<[u8]> = bake.to_vat_bytes().expect("the bake serialises").into();
    println!(
        "CPU ms per frame ({} frames after {} of warm-up; median / p90), {}x{}, 2 cascades",
        args.frames, args.warm_up, SIZE.x, SIZE.y
    );
    println!("| instances | vat-bevy | vat-wgpu direct | vat-bevy / direct |");
    println!("|---:|---:|---:|---:|");
    for &n in &args.instances {
        let (bevy_times, cascades) = bevy_frames(&bytes, n, &args);
        let (bevy, bevy_p90) = median_and_p90(bevy_times);
        let (direct, direct_p90) = median_and_p90(direct_frames(&bytes, n, &args, &cascades));
        println!(
            "| {n} | {bevy:.2} / {bevy_p90:.2} | {direct:.2} / {direct_p90:.2} | {:.2} |",
            bevy / direct
        );
    }
}
