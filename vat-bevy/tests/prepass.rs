//! The crowds in Bevy's prepasses, headless (on the software Vulkan driver in CI): a camera with
//! `DepthPrepass`, `NormalPrepass` and `MotionVectorPrepass` and a crowd, no Bevy mesh, the clock
//! paused. A render-world system reads the view's prepass textures back after the main pass
//! (`textureLoad` in a compute pass: Bevy makes them without `COPY_SRC`):
//! - the normal target holds unit normals facing the camera where the crowd is, and nothing
//!   where it is not (nor anywhere with the crowd hidden);
//! - the prepass depth texture (Bevy's copy, which vat's prepass redoes) is the crowd's depth
//!   exactly where the normals are;
//! - the motion target is zero on the crowd for a still camera and still crowd, and after the
//!   camera moves to the right the crowd moves left on screen.

#![allow(clippy::unwrap_used)] // Tests.

mod common;

use std::sync::{Arc, Mutex};

use bevy::camera::RenderTarget;
use bevy::core_pipeline::prepass::{DepthPrepass, MotionVectorPrepass, NormalPrepass, ViewPrepassTextures};
use bevy::core_pipeline::schedule::{Core3d, Core3dSystems};
use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::renderer::{FlushCommands, RenderDevice, RenderQueue, ViewQuery};
use bevy::render::view::ExtractedView;
use vat_bevy::{VatAsset, VatCrowd};
use vat_core::crowd::CrowdConfig;

const SIZE: UVec2 = UVec2::new(160, 100);
const EYE: Vec3 = Vec3::new(0.0, 1.3, 4.5);
const TARGET: Vec3 = Vec3::new(0.0, 0.9, 0.0);

/// One pixel of the prepass textures: the normal target (RGBA), the motion (x, y) and the prepass
/// depth.
#[derive(Debug, Clone, Copy)]
struct Texel {
    normal: [f32; 4],
    motion: [f32; 2],
    depth: f32,
}

impl Texel {
    /// Whether a normal was written: Bevy clears the target to opaque black, which no unit normal
    /// encodes to (`n * 0.5 + 0.5`).
    fn written(&self) -> bool {
        self.normal[..3] != [0.0; 3]
    }
}

/// Shared by the test and the render world's read-back system: whether to read, and each frame
/// read, with the camera's position it was rendered from (the render world runs a frame behind
/// the main world).
#[derive(Resource, Clone, Default)]
struct ReadBack(Arc<Mutex<Frames>>);

#[derive(Default)]
struct Frames {
    /// Read the next frames.
    on: bool,
    /// Each frame read: the camera's position and the texels.
    read: Vec<(Vec3, Vec<Texel>)>,
}

#[derive(Resource)]
struct Entities {
    camera: Entity,
    crowd: Entity,
}

const READ_WGSL: &str = "
@group(0) @binding(0) var normals: texture_2d<f32>;
@group(0) @binding(1) var motion: texture_2d<f32>;
@group(0) @binding(2) var depth: texture_depth_2d;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let size = textureDimensions(normals);
    if id.x >= size.x || id.y >= size.y {
        return;
    }
    let i = (id.y * size.x + id.x) * 2u;
    out[i] = textureLoad(normals, id.xy, 0);
    let m = textureLoad(motion, id.xy, 0);
    out[i + 1u] = vec4<f32>(m.xy, textureLoad(depth, id.xy, 0), 0.0);
}
";

/// `Core3d`, after the main pass, when the test asks: the view's normal, motion and prepass depth
/// textures, read back (waiting).
fn read_prepass(
    view: ViewQuery<(&ViewPrepassTextures, &ExtractedView)>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    shared: Res<ReadBack>,
    mut flush: FlushCommands,
) {
    if !shared.0.lock().unwrap().on {
        return;
    }
    let (textures, extracted_view) = view.into_inner();
    let (Some(normal), Some(motion), Some(depth)) =
        (&textures.normal, &textures.motion_vectors, &textures.depth)
    else {
        return;
    };
    let device = device.wgpu_device();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("read prepass"),
        source: wgpu::ShaderSource::Wgsl(READ_WGSL.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("read prepass"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let texels = u64::from(textures.size.width * textures.size.height);
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read prepass"),
            size: texels * 32,
            usage,
            mapped_at_creation: false,
        })
    };
    let out = buffer(wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC);
    let staging = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("read prepass"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::TextureView(&normal.texture.default_view),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: wgpu::BindingResource::TextureView(&motion.texture.default_view),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: wgpu::BindingResource::TextureView(&depth.texture.default_view),
            },
            wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
        ],
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(textures.size.width.div_ceil(8), textures.size.height.div_ceil(8), 1);
    }
    encoder.copy_buffer_to_buffer(&out, 0, &staging, 0, texels * 32);
    flush.flush();
    queue.submit([encoder.finish()]);
    staging.slice(..).map_async(wgpu::MapMode::Read, |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let data = staging.slice(..).get_mapped_range().unwrap();
    let floats: &[f32] = bytemuck::cast_slice(&data);
    let read = floats
        .chunks_exact(8)
        .map(|t| Texel { normal: [t[0], t[1], t[2], t[3]], motion: [t[4], t[5]], depth: t[6] })
        .collect();
    shared.0.lock().unwrap().read.push((extracted_view.world_from_view.translation(), read));
}

/// A headless app of a prepass camera and a crowd of five humanoids, rendering into an image.
fn app() -> App {
    let mut app = common::unfinished_headless_app();
    let target = common::image_target(&mut app, SIZE);
    let rig = vat_procgen::humanoid();
    let bytes = vat_bake::prepare::prepare(&rig, &Default::default()).unwrap().to_vat_bytes().unwrap();
    let asset = VatAsset::from_bytes(bytes).unwrap();
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset.clone());
    let crowd = VatCrowd::with_asset(handle, &asset, CrowdConfig::default());
    if let Some(mut c) = crowd.crowd() {
        let walk = asset.clip_index("walk").unwrap_or(0);
        for i in 0..5 {
            c.spawn_at_phase(
                [i as f32 * 0.9 - 1.8, 0.0, -(i % 2) as f32],
                0.3 * i as f32,
                walk,
                0.2 * i as f32,
            );
        }
    }
    let crowd = app.world_mut().spawn(crowd).id();
    let camera = app
        .world_mut()
        .spawn((
            Camera3d::default(),
            Msaa::Off,
            DepthPrepass,
            NormalPrepass,
            MotionVectorPrepass,
            RenderTarget::Image(target.into()),
            Transform::from_translation(EYE).looking_at(TARGET, Vec3::Y),
        ))
        .id();
    app.world_mut().spawn((
        DirectionalLight { illuminance: 8_000.0, ..default() },
        Transform::from_xyz(-2.0, 4.0, 3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    app.insert_resource(Entities { camera, crowd });
    let shared = ReadBack::default();
    app.insert_resource(shared.clone());
    let render_app = app.get_sub_app_mut(RenderApp).unwrap();
    render_app.insert_resource(shared).add_systems(Core3d, read_prepass.after(Core3dSystems::MainPass));
    common::finish(&mut app);
    app.update();
    // A still crowd: its clock is Bevy's virtual time.
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    app
}

/// Moves the camera to `eye`, shows or hides the crowd, and reads the prepass textures of the
/// first `n` frames rendered so (the first one with the camera's motion from where it was).
fn frames(app: &mut App, eye: Vec3, crowd: bool, n: usize) -> Vec<Vec<Texel>> {
    let entities = app.world().resource::<Entities>();
    let (camera, crowd_entity) = (entities.camera, entities.crowd);
    let visibility = if crowd { Visibility::Inherited } else { Visibility::Hidden };
    app.world_mut().entity_mut(crowd_entity).insert(visibility);
    // Always looking along EYE -> TARGET: a move is a translation.
    let rotation = Transform::from_translation(EYE).looking_at(TARGET, Vec3::Y).rotation;
    app.world_mut().entity_mut(camera).insert(Transform::from_translation(eye).with_rotation(rotation));
    let shared = app.world().resource::<ReadBack>().clone();
    *shared.0.lock().unwrap() = Frames { on: true, read: Vec::new() };
    for _ in 0..n + 10 {
        app.update();
        let mut frames = shared.0.lock().unwrap();
        let at_eye: Vec<&Vec<Texel>> =
            frames.read.iter().filter(|(e, _)| e.distance(eye) < 1e-4).map(|(_, t)| t).collect();
        if at_eye.len() >= n {
            let out: Vec<Vec<Texel>> = at_eye.into_iter().take(n).cloned().collect();
            frames.on = false;
            assert!(out.iter().all(|t| t.len() == (SIZE.x * SIZE.y) as usize));
            return out;
        }
    }
    panic!("fewer than {n} read-backs from {eye} after {} frames", n + 10);
}

#[test]
fn crowds_are_drawn_into_bevys_depth_normal_and_motion_prepasses() {
    let mut app = app();
    frames(&mut app, EYE, true, 3);
    let forward = (TARGET - EYE).normalize();

    // The crowd hidden: the normal target as Bevy clears it (black), the depth cleared.
    let empty = frames(&mut app, EYE + Vec3::Y, false, 1).remove(0);
    assert!(empty.iter().all(|t| !t.written() && t.depth == 0.0), "written without a crowd");

    // Still camera, still crowd (from the second frame on): normals, depth and zero motion.
    let still = frames(&mut app, EYE, true, 2).remove(1);
    let crowd: Vec<bool> = still.iter().map(Texel::written).collect();
    let covered = crowd.iter().filter(|&&c| c).count();
    assert!(covered > 500, "the crowd covers {covered} pixels of the normal prepass");
    let mut facing = 0;
    for (p, t) in still.iter().enumerate() {
        // The prepass depth texture is Bevy's copy of the depth after vat's prepass.
        assert_eq!(t.depth > 0.0, crowd[p], "pixel {p}: depth {} vs normal {:?}", t.depth, t.normal);
        if !crowd[p] {
            continue;
        }
        let n = Vec3::new(t.normal[0], t.normal[1], t.normal[2]) * 2.0 - Vec3::ONE;
        assert!((n.length() - 1.0).abs() < 0.02, "pixel {p}: |n| = {}", n.length());
        facing += usize::from(n.dot(-forward) > 0.0);
        assert_eq!(t.motion, [0.0; 2], "pixel {p}: motion of a still crowd and camera");
    }
    assert!(facing * 10 >= covered * 9, "{facing} of {covered} normals face the camera");

    // The camera steps 0.2 m to the right: the crowd moves left on screen (motion = now - before),
    // then stands still again.
    let moved = frames(&mut app, EYE + Vec3::new(0.2, 0.0, 0.0), true, 2);
    let on_crowd: Vec<&Texel> = moved[0].iter().filter(|t| t.written()).collect();
    assert!(on_crowd.len() > 500);
    let left = on_crowd.iter().filter(|t| t.motion[0] < -1e-3).count();
    assert!(left * 10 >= on_crowd.len() * 9, "{left} of {} crowd pixels move left", on_crowd.len());
    let mut again = moved[1].iter().filter(|t| t.written());
    assert!(again.clone().count() > 500 && again.all(|t| t.motion == [0.0; 2]), "motion after the stop");
}
