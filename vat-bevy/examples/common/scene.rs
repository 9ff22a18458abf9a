//! The crowd scene shared by the `crowd` example and the headless render test: a ground, a building
//! (a cuboid), a directional light with cascades and a crowd of procedural humanoids (baked in
//! memory; optionally a second crowd of another asset) walking, jogging and idling with cross-fades.

use bevy::camera::RenderTarget;
use bevy::core_pipeline::tonemapping::Tonemapping;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::prelude::*;
use vat_bevy::{VatAsset, VatCrowd};
use vat_core::crowd::CrowdConfig;

/// The procedural humanoid baked with default options (5 LODs), as `.vat` bytes.
pub(crate) fn humanoid_vat() -> Vec<u8> {
    let rig = vat_procgen::humanoid();
    let bake = vat_bake::prepare::prepare(&rig, &Default::default()).expect("the humanoid bakes");
    bake.to_vat_bytes().expect("the bake serialises")
}

/// The procedural humanoid exported to glTF as a textured character (base colour, normal and
/// metallic-roughness textures), imported and baked with default options, as `.vat` bytes: the
/// second asset of the example's crowd.
#[allow(dead_code)] // The example uses it, the render test does not.
pub(crate) fn textured_vat() -> Vec<u8> {
    let glb = vat_procgen::testdata::textured_humanoid_glb();
    let rig = vat_bake::gltf_import::import_slice(&glb, None, "textured-humanoid.glb").expect("imports");
    let bake = vat_bake::prepare::prepare(&rig, &Default::default()).expect("the textured humanoid bakes");
    bake.to_vat_bytes().expect("the bake serialises")
}

/// How the scene is set up.
#[derive(Resource, Clone)]
pub(crate) struct SceneConfig {
    /// Characters in the crowd.
    pub(crate) instances: u32,
    /// Render into this image instead of the window (headless).
    pub(crate) target: Option<Handle<Image>>,
    /// The baked asset.
    pub(crate) vat: Vec<u8>,
    /// A second baked asset: every other character is one of it (its own crowd).
    pub(crate) second: Option<Vec<u8>>,
    /// The characters stay within these `z` (metres); `x` spans the whole area.
    pub(crate) z_range: (f32, f32),
}

/// The camera's eye and target (metres) and vertical field of view (radians, Bevy's default).
pub(crate) const EYE: Vec3 = Vec3::new(0.0, 6.0, 22.0);
pub(crate) const TARGET: Vec3 = Vec3::new(0.0, 1.0, 0.0);

/// The scene's main entities.
#[derive(Resource, Debug, Clone, Copy)]
#[allow(dead_code)] // Shared by the example and the test; each reads only some of them.
pub(crate) struct SceneEntities {
    pub(crate) camera: Entity,
    pub(crate) crowd: Entity,
    pub(crate) building: Entity,
}

/// Per crowd, per character: where it heads and how fast; the crowd holds the rest.
#[derive(Resource, Default)]
pub(crate) struct Agents {
    crowds: Vec<(Entity, CrowdAgents)>,
    z_range: (f32, f32),
}

/// The characters of one crowd.
#[derive(Default)]
struct CrowdAgents {
    heading: Vec<f32>,
    speed: Vec<f32>,
    next_change: Vec<f32>,
    clips: [u32; 4],
}

/// Half the side of the square the characters walk in, metres; the building stands in the middle.
pub(crate) const AREA: f32 = 12.0;

/// A small deterministic generator (the scene is the same on every run).
fn hash(i: u32, salt: u32) -> f32 {
    let mut x = i.wrapping_mul(0x9E37_79B9) ^ salt.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    (x >> 8) as f32 / (1u32 << 24) as f32
}

pub(crate) fn setup(
    mut commands: Commands,
    config: Res<SceneConfig>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut vat_assets: ResMut<Assets<VatAsset>>,
) {
    let mut camera = commands.spawn((
        Camera3d::default(),
        Msaa::Sample4,
        bevy::camera::Hdr,
        Tonemapping::AcesFitted,
        Transform::from_translation(EYE).looking_at(TARGET, Vec3::Y),
    ));
    if let Some(image) = &config.target {
        camera.insert(RenderTarget::Image(image.clone().into()));
    }
    let camera = camera.id();
    commands.spawn((
        DirectionalLight { illuminance: 8_000.0, shadow_maps_enabled: true, ..default() },
        // Low from the left: the building's shadow falls across the crowd to its right.
        Transform::from_xyz(-8.0, 8.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
        CascadeShadowConfigBuilder { num_cascades: 2, maximum_distance: 60.0, ..default() }.build(),
    ));
    commands.insert_resource(GlobalAmbientLight { brightness: 300.0, ..default() });
    commands.insert_resource(ClearColor(Color::srgb(0.45, 0.6, 0.8)));
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(2.0 * AREA + 20.0, 2.0 * AREA + 20.0))),
        MeshMaterial3d(materials.add(Color::srgb(0.35, 0.45, 0.3))),
    ));
    let building = commands
        .spawn((
            Mesh3d(meshes.add(Cuboid::new(6.0, 5.0, 3.0))),
            MeshMaterial3d(
                materials.add(StandardMaterial { base_color: Color::srgb(0.8, 0.1, 0.1), ..default() }),
            ),
            Transform::from_xyz(0.0, 2.5, 6.0),
        ))
        .id();
    let mut agents = Agents { z_range: config.z_range, ..default() };
    let assets: Vec<&Vec<u8>> = std::iter::once(&config.vat).chain(config.second.as_ref()).collect();
    let mut crowd = None;
    for (k, bytes) in assets.iter().enumerate() {
        let asset = VatAsset::from_bytes((*bytes).clone()).expect("the scene's assets are valid .vat files");
        let clip = |name: &str| asset.clip_index(name).unwrap_or(0);
        let clips = [clip("idle"), clip("walk"), clip("jog"), clip("run")];
        let crowd_config = CrowdConfig { record_events: true, ..default() };
        let handle = vat_assets.add(asset.clone());
        let vat_crowd = VatCrowd::with_asset(handle, &asset, crowd_config);
        let mut set = CrowdAgents { clips, ..default() };
        if let Some(mut c) = vat_crowd.crowd() {
            // Footsteps: an event each time a gait passes its first frame.
            for &gait in &clips[1..] {
                c.mark_frame(gait, 0);
            }
            // Character i belongs to crowd i % assets.
            for i in (k as u32..config.instances).step_by(assets.len()) {
                let (z0, z1) = config.z_range;
                let p = [(hash(i, 1) * 2.0 - 1.0) * AREA, 0.0, z0 + hash(i, 2) * (z1 - z0)];
                let heading = hash(i, 3) * std::f32::consts::TAU;
                let id = c.spawn_at_phase(p, heading, clips[0], hash(i, 4));
                c.set_tint(id, [0.6 + 0.4 * hash(i, 5), 0.6 + 0.4 * hash(i, 6), 0.6 + 0.4 * hash(i, 7)]);
                set.heading.push(heading);
                set.speed.push(0.0);
                set.next_change.push(0.0);
            }
        }
        let entity = commands.spawn(vat_crowd).id();
        crowd.get_or_insert(entity);
        agents.crowds.push((entity, set));
    }
    let crowd = crowd.expect("the scene has a crowd");
    commands.insert_resource(agents);
    commands.insert_resource(SceneEntities { camera, crowd, building });
}

/// Moves every character along its heading, turning back at the edge of the area; every few
/// seconds each picks a new speed and cross-fades (0.4 s) to idle, walk, jog or run.
pub(crate) fn walk(time: Res<Time>, mut agents: ResMut<Agents>, crowds: Query<&VatCrowd>) {
    let dt = time.delta_secs().min(0.1);
    let now = time.elapsed_secs();
    let agents = &mut *agents;
    let (z0, z1) = agents.z_range;
    for (entity, set) in &mut agents.crowds {
        let Ok(crowd) = crowds.get(*entity) else { continue };
        let Some(mut c) = crowd.crowd() else { continue };
        for i in 0..set.heading.len() {
            let id = i as u32;
            if now >= set.next_change[i] {
                let pick = hash(id, (now * 10.0) as u32 + 11);
                let (speed, clip) = match pick {
                    p if p < 0.2 => (0.0, set.clips[0]),
                    p if p < 0.7 => (1.2 + pick, set.clips[1]),
                    p if p < 0.9 => (2.5 + pick, set.clips[2]),
                    _ => (4.5, set.clips[3]),
                };
                set.speed[i] = speed;
                set.next_change[i] = now + 2.0 + 4.0 * hash(id, (now * 10.0) as u32 + 12);
                c.set_speed(id, speed.max(0.01));
                c.play(id, clip, 0.4);
            }
            let speed = set.speed[i];
            if speed == 0.0 {
                continue;
            }
            let r = c.records()[i];
            let mut heading = set.heading[i];
            let mut p =
                Vec3::from_array(r.position) + Vec3::new(heading.sin(), 0.0, heading.cos()) * speed * dt;
            if p.x.abs() > AREA || p.z < z0 || p.z > z1 {
                // Back towards the middle of the area.
                heading = (-p.x).atan2(0.5 * (z0 + z1) - p.z);
                p = p.clamp(Vec3::new(-AREA, 0.0, z0), Vec3::new(AREA, 0.0, z1));
                set.heading[i] = heading;
            }
            c.set_transform(id, p.to_array(), heading);
        }
    }
}
