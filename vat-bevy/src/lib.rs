//! # vat-bevy
//!
//! A [Bevy](https://bevyengine.org) 0.20.1 plugin for vat's crowds: `.vat` files as Bevy assets,
//! crowds of any size as single entities with a bulk API, drawn by every 3D camera into its main
//! pass through [`vat_wgpu`] on Bevy's own wgpu device (same wgpu 30.0.2).
//!
//! - [`VatPlugin`]: registers [`VatAsset`] and its loader (`*.vat`, hot reload included), steps
//!   every crowd's clock in `PreUpdate` and sends [`VatAnimationEvent`]s, and adds the crowd pass
//!   to Bevy's `Core3d` schedule.
//! - [`VatCrowd`]: a component naming its `Handle<VatAsset>`; its instances live in a
//!   [`vat_core::crowd::Crowd`] ([`VatCrowd::crowd`]), not as entities, so 100,000 of them cost
//!   64 bytes each and only the changed ones are uploaded. For a few characters handled one by
//!   one, [`VatInstance`] makes an instance an entity placed by its `Transform`.
//! - Hot reload: a `.vat` file changed on disk (the crate's `file_watcher` feature, Bevy's) or an
//!   asset replaced in `Assets<VatAsset>` rebuilds its crowds with the same instance ids
//!   ([`VatCrowdRebuilt`]) and uploads the new asset.
//! - Drawing: after Bevy's main opaque pass, into the view's colour target (HDR or not, any MSAA)
//!   and Bevy's depth buffer with Bevy's conventions (reverse-Z, `GreaterEqual`, `Depth32Float`),
//!   lit by the scene's first `DirectionalLight` and the `GlobalAmbientLight`, casting shadows into
//!   Bevy's directional cascades (see [`VatRenderSettings`] for what is and is not shared with
//!   Bevy's PBR).
//!
//! ```no_run
//! use bevy::prelude::*;
//! use vat_bevy::{VatAsset, VatCrowd, VatPlugin};
//! use vat_core::crowd::CrowdConfig;
//!
//! fn main() {
//!     App::new()
//!         .add_plugins((DefaultPlugins, VatPlugin))
//!         .add_systems(Startup, setup)
//!         .add_systems(Update, walk)
//!         .run();
//! }
//!
//! fn setup(mut commands: Commands, server: Res<AssetServer>) {
//!     commands.spawn((Camera3d::default(), Transform::from_xyz(0.0, 3.0, 12.0)));
//!     commands.spawn((DirectionalLight::default(), Transform::from_xyz(1.0, 2.0, 1.0).looking_at(Vec3::ZERO, Vec3::Y)));
//!     // One entity for the whole crowd; built when the asset has loaded.
//!     commands.spawn(VatCrowd::new(server.load("humanoid.vat"), CrowdConfig::default()));
//! }
//!
//! fn walk(crowds: Query<&VatCrowd>, assets: Res<Assets<VatAsset>>, mut done: Local<bool>) {
//!     for crowd in &crowds {
//!         let (Some(mut crowd_mut), Some(asset)) = (crowd.crowd(), assets.get(crowd.asset())) else { continue };
//!         if *done { continue; }
//!         let walk = asset.clip_index("walk").unwrap_or(0);
//!         for i in 0..100_000u32 {
//!             let (x, z) = ((i % 316) as f32, (i / 316) as f32);
//!             let id = crowd_mut.spawn([x, 0.0, -z], 0.0, 0);
//!             crowd_mut.play(id, walk, 0.3); // cross-fade into the walk over 0.3 s
//!         }
//!         *done = true;
//!     }
//! }
//! ```
//!
//! Bevy 0.20.1 declares `rust-version = 1.97.1`; this workspace's toolchain is 1.95, which builds it
//! with `cargo ... --ignore-rust-version` (the crate is not in the workspace's default members).

mod asset;
mod crowd;
mod error;
mod instance;
mod prepass;
mod render;
mod root_motion;
mod timing;

pub use asset::{VatAsset, VatAssetLoader};
pub use crowd::{CrowdGuard, VatAnimationEvent, VatCrowd, VatCrowdRebuilt};
pub use error::VatBevyError;
pub use instance::VatInstance;
pub use root_motion::VatRootMotion;
pub use timing::VatCpuTime;

use bevy::core_pipeline::core_3d::{main_opaque_pass_3d, main_transparent_pass_3d};
use bevy::core_pipeline::prepass::node::late_prepass;
use bevy::core_pipeline::schedule::{Core3d, Core3dSystems};
use bevy::ecs::schedule::ApplyDeferred;
use bevy::pbr::{LATE_SHADOW_PASS, per_view_shadow_pass};
use bevy::prelude::*;
use bevy::render::settings::WgpuSettings;
use bevy::render::{Render, RenderApp, RenderSystems};
pub use vat_wgpu::Culling;

/// Adds vat's crowds to an app with Bevy's renderer (`DefaultPlugins`, or at least the asset,
/// render, core pipeline and PBR plugins): see the [crate docs](crate). Add it after them.
///
/// The device must meet vat's requirements (`vat_wgpu::required_features()`, e.g.
/// `INDIRECT_FIRST_INSTANCE`, and `required_limits()`): Bevy's default `WgpuSettings` ask for
/// every feature and limit the adapter has, and [`wgpu_settings`] adds them to settings that do
/// not. Without them an error naming what is missing is logged once and crowds are not drawn.
#[derive(Debug, Default, Clone, Copy)]
pub struct VatPlugin;

impl Plugin for VatPlugin {
    fn build(&self, app: &mut App) {
        // One counter for both worlds' systems.
        let cpu = VatCpuTime::default();
        app.init_asset::<VatAsset>()
            .init_asset_loader::<VatAssetLoader>()
            .init_resource::<VatRenderSettings>()
            .insert_resource(cpu.clone())
            .add_message::<VatAnimationEvent>()
            .add_message::<VatCrowdRebuilt>()
            .add_systems(
                PreUpdate,
                (crowd::build_crowds, crowd::advance_crowds, root_motion::move_instances).chain(),
            )
            .add_systems(PostUpdate, instance::sync_instances.after(TransformSystems::Propagate));
        let Some(render_app) = app.get_sub_app_mut(RenderApp) else { return };
        render_app
            .insert_resource(cpu)
            .init_resource::<render::VatRenderState>()
            .init_resource::<render::ExtractedCrowds>()
            .init_resource::<render::ExtractedLight>()
            .init_resource::<VatRenderSettings>()
            .add_systems(ExtractSchedule, render::extract_crowds)
            .add_systems(
                Render,
                (render::prepare_crowds, prepass::prepare_view_temporal)
                    .in_set(RenderSystems::PrepareResources),
            )
            .add_systems(
                Core3d,
                // The opaque pass's commands are handed over first, so that the crowd pass can
                // submit them, then its own, in order (see `render::vat_main_pass`).
                (
                    (ApplyDeferred, render::vat_shadow_pass)
                        .chain()
                        .after(per_view_shadow_pass::<LATE_SHADOW_PASS>)
                        .before(Core3dSystems::MainPass),
                    (ApplyDeferred, prepass::vat_prepass)
                        .chain()
                        .after(late_prepass)
                        .after(render::vat_shadow_pass)
                        .before(Core3dSystems::MainPass),
                    (ApplyDeferred, render::vat_main_pass)
                        .chain()
                        .after(main_opaque_pass_3d)
                        .before(main_transparent_pass_3d)
                        .in_set(Core3dSystems::MainPass),
                ),
            );
    }
}

/// Bevy's default `WgpuSettings` with vat's device requirements added
/// (`vat_wgpu::required_features()`, `vat_wgpu::required_limits()`) and without the `DEBUG`
/// instance flag, for `RenderPlugin { render_creation: vat_bevy::wgpu_settings().into(), .. }`.
/// Bevy's default settings already ask for every feature and limit of the adapter; these are for
/// an app that trims them (another `WgpuSettingsPriority`), so that the device still has what vat
/// needs. `DEBUG` (on in debug builds) embeds each shader's WGSL in its SPIR-V, which older
/// Vulkan validation layers (Debian 12's) misreport as invalid SPIR-V on every module.
pub fn wgpu_settings() -> WgpuSettings {
    let mut settings = WgpuSettings::default();
    settings.instance_flags.remove(wgpu::InstanceFlags::DEBUG);
    settings.features |= vat_wgpu::required_features();
    settings.limits = settings.limits.or_better_values_from(&vat_wgpu::required_limits());
    settings
}

/// How crowds are drawn (a resource of the main world, read every frame).
///
/// What is shared with Bevy's renderer: the view (matrix, viewport, MSAA, HDR target), the depth
/// buffer (crowds and Bevy's meshes occlude each other), the directional lights' shadow cascades
/// (the crowds cast into them, so onto Bevy's meshes: [`cast_bevy_shadows`](Self::cast_bevy_shadows)),
/// and the crowds receive those cascades too ([`shadows`](Self::shadows): Bevy's meshes and the
/// crowds shadow the crowds, looked up as Bevy's shader picks and blends cascades, with the
/// light's depth and normal biases, through hardware 2 x 2 PCF rather than Bevy's default
/// Gaussian filter); the direction, colour and illuminance of the view's first shadowed
/// `DirectionalLight` (the first `DirectionalLight` when none casts shadows) and the
/// `GlobalAmbientLight`, scaled by the camera's exposure so that the crowd is about as bright as a
/// Lambertian `StandardMaterial` of the same colour. vat allocates no shadow map of its own. What
/// is not: the crowd is shaded by vat's own `fs_lit` (Lambert plus GGX for textured assets, not
/// Bevy's PBR: no environment maps, point or spot lights, fog, per-camera `AmbientLight`). The
/// crowds are in Bevy's depth, normal and motion-vector prepasses (a camera's `DepthPrepass`,
/// `NormalPrepass`, `MotionVectorPrepass`; not the deferred G-buffer), jittered by TAA, so TAA,
/// SSAO, depth of field and motion blur see them.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct VatRenderSettings {
    /// CPU or GPU culling (default CPU).
    pub culling: Culling,
    /// The crowds receive the view's directional shadow cascades (default on; without a
    /// `DirectionalLight` with `shadows_enabled` there are none).
    pub shadows: bool,
    /// Crowds cast shadows into Bevy's directional-light cascades, onto Bevy's meshes (default
    /// on; each cascade is one more depth-only draw of the crowds).
    pub cast_bevy_shadows: bool,
}

impl Default for VatRenderSettings {
    fn default() -> Self {
        Self { culling: Culling::Cpu, shadows: true, cast_bevy_shadows: true }
    }
}
