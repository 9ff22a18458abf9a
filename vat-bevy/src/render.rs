//! The render world: vat's [`Renderer`] on Bevy's device, the GPU copies of assets and crowds, and
//! the crowd pass of every 3D camera (a system of Bevy's `Core3d` schedule, between the main opaque
//! and transparent passes).

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};

use bevy::asset::AssetId;
use bevy::core_pipeline::core_3d::CORE_3D_DEPTH_FORMAT;
use bevy::light::{DirectionalLight, GlobalAmbientLight};
use bevy::pbr::{ExtractedDirectionalLight, LightEntity, ShadowView, ViewLightEntities, ViewShadowBindings};
use bevy::prelude::*;
use bevy::render::Extract;
use bevy::render::camera::ExtractedCamera;
use bevy::render::render_resource::{RenderPassDescriptor, StoreOp};
use bevy::render::renderer::{FlushCommands, RenderDevice, RenderQueue, ViewQuery};
use bevy::render::view::{ExtractedView, Msaa, ViewDepthStencilTexture, ViewTarget};
use vat_core::backend::gpu::{LightModel, ShadowCascade, ShadowLookup};
use vat_core::backend::pipeline::PassConventions;
use vat_core::crowd::Camera as VatCamera;
use vat_core::render::ShadowMapSource;
use vat_wgpu::{CrowdDraw, GpuAsset, GpuCrowd, PassFormats, RenderOptions, Renderer, RendererConfig};

use crate::crowd::{BuiltCrowd, SharedCrowd};
use crate::prepass::ViewTemporal;
use crate::timing::VatCpuTime;
use crate::{VatAsset, VatBevyError, VatCrowd, VatRenderSettings};

/// The render world's vat state.
#[derive(Resource, Default)]
pub(crate) struct VatRenderState {
    /// vat's renderer on Bevy's device (made at the first frame), or why it could not be made.
    pub(crate) renderer: Option<Result<Renderer, String>>,
    /// Uploaded assets, with the bytes each was uploaded from.
    pub(crate) assets: HashMap<AssetId<VatAsset>, (Arc<[u8]>, GpuAsset)>,
    /// GPU copies of the crowds, by main-world entity, with the id of the crowd each mirrors.
    pub(crate) crowds: HashMap<Entity, (u64, GpuCrowd)>,
    /// The view (render-world entity) whose frame [`vat_shadow_pass`] (or `prepass::vat_prepass`)
    /// prepared, with the crowds' entities in the order they were prepared: its main pass draws
    /// without preparing again.
    pub(crate) prepared: Option<(Entity, Vec<Entity>)>,
}

/// The crowds of this frame, extracted from the main world.
#[derive(Resource, Default)]
pub(crate) struct ExtractedCrowds {
    crowds: Vec<ExtractedCrowd>,
    /// The assets the crowds draw, as loaded now.
    assets: HashMap<AssetId<VatAsset>, Arc<[u8]>>,
}

struct ExtractedCrowd {
    entity: Entity,
    asset: AssetId<VatAsset>,
    shared: SharedCrowd,
    /// Drawn this frame (hidden crowds keep their GPU copies, and are not drawn).
    visible: bool,
}

/// The scene's light as vat's `fs_lit` takes it, before the camera's exposure.
#[derive(Resource, Default, Clone, Copy)]
pub(crate) struct ExtractedLight {
    /// Unit vector towards the sun; `None` without a directional light.
    sun: Option<([f32; 3], [f32; 3])>,
    /// Ambient colour times brightness (Bevy's `GlobalAmbientLight`), linear.
    ambient: [f32; 3],
}

/// `ExtractSchedule`: the visible crowds, their assets, the settings and the light.
#[allow(clippy::too_many_arguments)] // One system: its parameters are its queries.
pub(crate) fn extract_crowds(
    crowds: Extract<Query<(Entity, &VatCrowd, &InheritedVisibility)>>,
    assets: Extract<Res<Assets<VatAsset>>>,
    settings: Extract<Res<VatRenderSettings>>,
    suns: Extract<Query<(&DirectionalLight, &GlobalTransform)>>,
    ambient: Extract<Option<Res<GlobalAmbientLight>>>,
    mut extracted: ResMut<ExtractedCrowds>,
    mut light: ResMut<ExtractedLight>,
    mut commands: Commands,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    extracted.crowds.clear();
    extracted.assets.clear();
    for (entity, crowd, visibility) in &crowds {
        let id = crowd.asset().id();
        let Some(asset) = assets.get(id) else { continue };
        extracted.assets.entry(id).or_insert_with(|| asset.bytes().clone());
        extracted.crowds.push(ExtractedCrowd {
            entity,
            asset: id,
            shared: crowd.shared().clone(),
            visible: visibility.get(),
        });
    }
    commands.insert_resource(**settings);
    light.sun = suns.iter().next().map(|(sun, transform)| {
        let towards = -transform.forward();
        let c = sun.color.to_linear();
        (towards.to_array(), [c.red, c.green, c.blue].map(|x| x * sun.illuminance))
    });
    light.ambient = ambient.as_ref().map_or([0.0; 3], |a| {
        let c = a.color.to_linear();
        [c.red, c.green, c.blue].map(|x| x * a.brightness)
    });
}

/// `Render` (`PrepareResources`): makes the renderer at the first frame, uploads new and changed
/// assets, makes the GPU copies of new crowds and drops those of crowds that are gone.
pub(crate) fn prepare_crowds(
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    extracted: Res<ExtractedCrowds>,
    mut state: ResMut<VatRenderState>,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    let state = &mut *state;
    let renderer = state.renderer.get_or_insert_with(|| {
        let config = RendererConfig {
            color_format: bevy::render::render_resource::TextureFormat::Rgba16Float,
            depth_format: CORE_3D_DEPTH_FORMAT,
            // Crowds receive Bevy's cascades (`view_shadows`): vat's own sun map is not needed.
            shadow_map_size: 0,
            ..RendererConfig::default()
        };
        Renderer::new(device.wgpu_device(), &queue, config).map_err(|e| {
            let e = VatBevyError::from(e);
            error!("vat-bevy: crowds are not drawn: {e}");
            e.to_string()
        })
    });
    let Ok(renderer) = renderer else { return };
    for (id, bytes) in &extracted.assets {
        if state.assets.get(id).is_some_and(|(uploaded, _)| Arc::ptr_eq(uploaded, bytes)) {
            continue;
        }
        let uploaded = vat_core::container::Asset::parse(bytes)
            .map_err(VatBevyError::from)
            .and_then(|asset| Ok(renderer.upload(&asset)?));
        match uploaded {
            Ok(gpu) => {
                state.assets.insert(*id, (bytes.clone(), gpu));
            }
            Err(e) => {
                error!("vat-bevy: asset {id} is not drawn: {e}");
                state.assets.remove(id);
            }
        }
    }
    state.assets.retain(|id, _| extracted.assets.contains_key(id));
    let mut alive = Vec::with_capacity(extracted.crowds.len());
    for c in &extracted.crowds {
        alive.push(c.entity);
        let guard = lock(&c.shared);
        let Some(built) = guard.as_ref() else { continue };
        let crowd_id = built.crowd.id().get();
        if state.crowds.get(&c.entity).is_some_and(|(id, _)| *id == crowd_id) {
            continue;
        }
        match renderer.create_crowd(&built.crowd) {
            Ok(gpu) => {
                state.crowds.insert(c.entity, (crowd_id, gpu));
            }
            Err(e) => error!("vat-bevy: crowd {} is not drawn: {e}", c.entity),
        }
    }
    state.crowds.retain(|entity, _| alive.contains(entity));
}

fn lock(shared: &SharedCrowd) -> MutexGuard<'_, Option<BuiltCrowd>> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The world-to-clip matrix and eye of a view, and its LOD scale (pixel rows and vertical field of
/// view, perspective only).
pub(crate) fn vat_camera(view: &ExtractedView) -> VatCamera {
    let clip_from_world = view
        .clip_from_world
        .unwrap_or_else(|| view.clip_from_view * view.world_from_view.to_matrix().inverse());
    let camera = VatCamera {
        view_proj: clip_from_world.to_cols_array_2d(),
        position: view.world_from_view.translation().to_array(),
        pixel_angle: vat_core::format::lod::LOD_PIXEL_ANGLE as f32,
    };
    let p = view.clip_from_view;
    let perspective = p.w_axis.w == 0.0 && p.y_axis.y > 0.0;
    if perspective {
        camera.with_viewport(view.viewport.w.max(1), 2.0 * (1.0 / p.y_axis.y).atan())
    } else {
        camera
    }
}

/// vat's lighting inputs for a view of `exposure` (Bevy's exposure multiplier), in Bevy's light
/// model ([`LightModel::Pbr`], the model of Bevy's `StandardMaterial`): the sun's colour times its
/// illuminance and the exposure, the ambient light's colour times its brightness and the exposure
/// (Bevy's `GlobalAmbientLight`), radiance out in Bevy's units for its tone mapping.
pub(crate) fn lighting(light: &ExtractedLight, exposure: f32, options: &mut RenderOptions) {
    options.light_model = LightModel::Pbr { ambient_color: light.ambient.map(|c| c * exposure) };
    match light.sun {
        Some((direction, color)) => {
            options.sun_direction = direction;
            options.sun_color = color.map(|c| c * exposure);
        }
        None => {
            options.sun_color = [0.0; 3];
            options.shadows = false;
        }
    }
}

/// The visible crowds of a frame, locked, in extraction order.
pub(crate) type Locked<'a> = Vec<(Entity, AssetId<VatAsset>, MutexGuard<'a, Option<BuiltCrowd>>)>;

pub(crate) fn lock_all(extracted: &ExtractedCrowds) -> Locked<'_> {
    extracted.crowds.iter().filter(|c| c.visible).map(|c| (c.entity, c.asset, lock(&c.shared))).collect()
}

/// Pairs each locked crowd with its GPU asset and crowd: the draws of a frame, and their entities.
pub(crate) fn pair<'a>(
    guards: &'a mut Locked<'_>,
    assets: &'a HashMap<AssetId<VatAsset>, (Arc<[u8]>, GpuAsset)>,
    crowds: &'a mut HashMap<Entity, (u64, GpuCrowd)>,
) -> (Vec<CrowdDraw<'a>>, Vec<Entity>) {
    let mut gpu_crowds: HashMap<Entity, &mut (u64, GpuCrowd)> =
        crowds.iter_mut().map(|(e, g)| (*e, g)).collect();
    let mut draws = Vec::with_capacity(guards.len());
    let mut entities = Vec::with_capacity(guards.len());
    for (entity, asset, guard) in guards.iter_mut() {
        let Some(built) = guard.as_mut() else { continue };
        let Some((_, gpu_asset)) = assets.get(asset) else { continue };
        let Some((crowd_id, gpu)) = gpu_crowds.remove(entity) else { continue };
        if *crowd_id != built.crowd.id().get() {
            continue; // Rebuilt since `prepare_crowds`: drawn from the next frame.
        }
        draws.push(CrowdDraw { asset: gpu_asset, gpu, crowd: &mut built.crowd });
        entities.push(*entity);
    }
    (draws, entities)
}

/// What [`view_shadows`] reads of a view: its light views (the directional cascades in layer
/// order) and its shadow map.
type ViewShadowInputs = (Option<&'static ViewLightEntities>, Option<&'static ViewShadowBindings>);

/// The light that shades and shadows a view's crowds: the first shadowed directional light of the
/// view (Bevy's light 0 of its cascades, matched by entity), with the view's cascades of it.
pub(crate) struct ViewShadows {
    /// How vat looks Bevy's cascades up (reverse-Z, the light's biases, Bevy's cascade choice).
    lookup: ShadowLookup,
    /// Unit vector towards the light, and its colour times its illuminance (linear).
    sun: ([f32; 3], [f32; 3]),
    /// Bevy's directional shadow map of the view (a `D2Array` of every cascade's layer).
    map: bevy::render::render_resource::TextureView,
}

/// The view's shadows as vat looks them up, or `None` without a directional light with shadows
/// (or before Bevy made the view's cascades). Layer `j` of Bevy's map is entry `j` of the view's
/// `ViewLightEntities` (only directional cascades are in it, in layer order).
pub(crate) fn view_shadows(
    view_entity: Entity,
    view: &ExtractedView,
    lights: Option<&ViewLightEntities>,
    bindings: Option<&ViewShadowBindings>,
    light_entities: &Query<&LightEntity>,
    directional: &Query<&ExtractedDirectionalLight>,
) -> Option<ViewShadows> {
    let layers: Vec<(u32, Entity, usize)> = lights?
        .lights
        .iter()
        .enumerate()
        .filter_map(|(j, &e)| match light_entities.get(e) {
            Ok(&LightEntity::Directional { light_entity, cascade_index }) => {
                Some((j as u32, light_entity, cascade_index))
            }
            _ => None,
        })
        .collect();
    let &(_, light_entity, _) = layers.first()?;
    let light = directional.get(light_entity).ok()?;
    let cascades = light.cascades.get(&view_entity)?;
    let bounds = &light.cascade_shadow_config.bounds;
    let mut vat_cascades = Vec::with_capacity(cascades.len());
    for &(layer, _, k) in layers.iter().filter(|(_, e, _)| *e == light_entity) {
        let (Some(cascade), Some(&far_bound)) = (cascades.get(k), bounds.get(k)) else { continue };
        vat_cascades.push(ShadowCascade {
            view_proj: cascade.clip_from_world.to_cols_array_2d(),
            far_bound,
            normal_offset: light.shadow_normal_bias * cascade.texel_size,
            layer,
        });
    }
    // Bevy's view distance is minus the view-space z: the z row of view_from_world, negated.
    let view_from_world = view.world_from_view.to_matrix().inverse();
    let row = view_from_world.row(2);
    let view_depth = [-row.x, -row.y, -row.z, -row.w];
    let overlap = light.cascade_shadow_config.overlap_proportion;
    let mut lookup = ShadowLookup::cascaded(&vat_cascades, view_depth, overlap, true).ok()?;
    let towards = light.transform.back().as_vec3();
    lookup.light_offset = (towards * light.shadow_depth_bias).to_array();
    let c = light.color;
    let sun = (towards.to_array(), [c.red, c.green, c.blue].map(|x| x * light.illuminance));
    Some(ViewShadows { lookup, sun, map: bindings?.directional_light_depth_texture_view.clone() })
}

/// The options of a frame of `camera`: shaded by the view's shadowed directional light and
/// shadowed by its cascades when there is one (then `renderer` samples Bevy's map), else by the
/// scene's first directional light, unshadowed; with the view's motion vectors, previous camera
/// and TAA jitter (`temporal`, see `crate::prepass`).
pub(crate) fn frame_options(
    settings: &VatRenderSettings,
    light: &ExtractedLight,
    camera: &ExtractedCamera,
    shadows: Option<&ViewShadows>,
    temporal: Option<&ViewTemporal>,
    renderer: &mut Renderer,
) -> RenderOptions {
    let mut options = RenderOptions { culling: settings.culling, shadows: false, ..Default::default() };
    let mut light = *light;
    if let Some(s) = shadows {
        light.sun = Some(s.sun);
        if settings.shadows {
            options.shadows = true;
            options.shadow_map = ShadowMapSource::Host(s.lookup);
            renderer.set_host_shadow_map(Some((*s.map).clone()));
        }
    }
    lighting(&light, camera.exposure, &mut options);
    if let Some(t) = temporal {
        t.apply(&mut options);
    }
    options
}

pub(crate) fn new_encoder(device: &RenderDevice) -> bevy::render::render_resource::CommandEncoder {
    device.create_command_encoder(&bevy::render::render_resource::CommandEncoderDescriptor {
        label: Some("vat crowds"),
    })
}

/// `Core3d`, after Bevy's shadow passes: plans the frame of every crowd for this view together with
/// the view's directional-light shadow cascades (`Renderer::prepare` with the cascades' matrices as
/// extra views) and draws the crowds into each cascade (`Renderer::draw_depth`, reverse-Z as Bevy's
/// shadow maps are), so that they cast shadows on Bevy's meshes. The view's main pass then draws the
/// frame prepared here.
#[allow(clippy::too_many_arguments)] // One system: its parameters are its queries.
pub(crate) fn vat_shadow_pass(
    view: ViewQuery<(Entity, &ExtractedCamera, &ExtractedView, ViewShadowInputs)>,
    cascades: Query<(&ShadowView, &ExtractedView)>,
    temporals: Query<&ViewTemporal>,
    light_entities: Query<&LightEntity>,
    directional: Query<&ExtractedDirectionalLight>,
    extracted: Res<ExtractedCrowds>,
    light: Res<ExtractedLight>,
    settings: Res<VatRenderSettings>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    mut state: ResMut<VatRenderState>,
    mut flush: FlushCommands,
    cpu: Res<VatCpuTime>,
) {
    let mut span = cpu.span();
    let (view_entity, camera, extracted_view, (lights, bindings)) = view.into_inner();
    let state = &mut *state;
    state.prepared = None;
    if !settings.cast_bevy_shadows {
        return;
    }
    let cascades: Vec<(&ShadowView, [[f32; 4]; 4])> = lights
        .map(|l| l.lights.iter().filter_map(|&e| cascades.get(e).ok()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|(shadow, view)| (shadow, vat_camera(view).view_proj))
        .collect();
    if cascades.is_empty() {
        return;
    }
    let Some(Ok(renderer)) = state.renderer.as_mut() else { return };
    let mut guards = lock_all(&extracted);
    let (mut draws, entities) = pair(&mut guards, &state.assets, &mut state.crowds);
    if draws.is_empty() {
        return;
    }
    let shadows = view_shadows(view_entity, extracted_view, lights, bindings, &light_entities, &directional);
    let temporal = temporals.get(view_entity).ok();
    let options = frame_options(&settings, &light, camera, shadows.as_ref(), temporal, renderer);
    let views: Vec<[[f32; 4]; 4]> = cascades.iter().map(|(_, m)| *m).collect();
    let mut encoder = new_encoder(&device);
    if let Err(e) = renderer.prepare(&mut encoder, &mut draws, &vat_camera(extracted_view), &options, &views)
    {
        error!("vat-bevy: crowds not drawn this frame: {}", VatBevyError::from(e));
        return;
    }
    let formats = PassFormats {
        color: None,
        depth: CORE_3D_DEPTH_FORMAT,
        motion: None,
        samples: 1,
        conventions: PassConventions::REVERSE_Z,
    };
    for (k, (shadow, _)) in cascades.iter().enumerate() {
        let mut pass = encoder.begin_render_pass(&RenderPassDescriptor {
            label: Some("vat crowds: shadow cascade"),
            color_attachments: &[],
            depth_stencil_attachment: Some(shadow.depth_attachment.get_attachment(StoreOp::Store)),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        renderer.draw_depth(&mut pass, &draws, k, formats);
    }
    // Unlock the crowds before flushing: the flush waits for Bevy's command-encoding tasks, which
    // share the task pool with main-world systems that may be waiting for these locks (pipelined
    // rendering runs both worlds at once).
    drop(draws);
    drop(guards);
    // Neither Bevy's own commands (flushed first so that vat's follow them) nor the submit are
    // vat's CPU time: on a software driver a submit waits for the device's queue.
    span.excluding(|| flush.flush());
    let commands = encoder.finish();
    span.excluding(|| queue.submit([commands]));
    state.prepared = Some((view_entity, entities));
}

/// `Core3d`, after the main opaque pass: plans the frame of every crowd for this view
/// (`Renderer::prepare`, unless [`vat_shadow_pass`] did) and draws them into the view's colour
/// target and Bevy's depth buffer (`Renderer::draw`; reverse-Z, the view's MSAA and HDR format).
///
/// Each view's commands are submitted at once, after Bevy's commands recorded so far (flushed
/// first, in order): vat writes each crowd's culling inputs for the view with `Queue::write_buffer`,
/// which would otherwise land before every command buffer of the frame and leave the first of
/// several cameras with the last one's lists.
#[allow(clippy::too_many_arguments)] // One system: its parameters are its queries.
pub(crate) fn vat_main_pass(
    view: ViewQuery<(
        Entity,
        &ExtractedCamera,
        &ExtractedView,
        &ViewTarget,
        &ViewDepthStencilTexture,
        &Msaa,
        ViewShadowInputs,
    )>,
    temporals: Query<&ViewTemporal>,
    light_entities: Query<&LightEntity>,
    directional: Query<&ExtractedDirectionalLight>,
    extracted: Res<ExtractedCrowds>,
    light: Res<ExtractedLight>,
    settings: Res<VatRenderSettings>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
    mut state: ResMut<VatRenderState>,
    mut flush: FlushCommands,
    cpu: Res<VatCpuTime>,
) {
    let mut span = cpu.span();
    let (view_entity, camera, extracted_view, target, depth, msaa, (lights, bindings)) = view.into_inner();
    let state = &mut *state;
    let prepared = state.prepared.take();
    let Some(Ok(renderer)) = state.renderer.as_mut() else { return };
    let mut guards = lock_all(&extracted);
    let (mut draws, entities) = pair(&mut guards, &state.assets, &mut state.crowds);
    if draws.is_empty() {
        return;
    }
    let mut encoder = new_encoder(&device);
    if prepared != Some((view_entity, entities)) {
        let shadows =
            view_shadows(view_entity, extracted_view, lights, bindings, &light_entities, &directional);
        let temporal = temporals.get(view_entity).ok();
        let options = frame_options(&settings, &light, camera, shadows.as_ref(), temporal, renderer);
        if let Err(e) = renderer.prepare(&mut encoder, &mut draws, &vat_camera(extracted_view), &options, &[])
        {
            error!("vat-bevy: crowds not drawn this frame: {}", VatBevyError::from(e));
            return;
        }
    }
    let formats = PassFormats {
        color: Some(target.main_texture_format()),
        depth: CORE_3D_DEPTH_FORMAT,
        motion: None,
        samples: msaa.samples(),
        conventions: PassConventions::REVERSE_Z,
    };
    {
        let color = [Some(target.get_color_attachment())];
        let mut pass = encoder.begin_render_pass(&RenderPassDescriptor {
            label: Some("vat crowds"),
            color_attachments: &color,
            depth_stencil_attachment: Some(depth.get_attachment(StoreOp::Store)),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if let Some(viewport) = camera.viewport.as_ref() {
            let (p, s) = (viewport.physical_position, viewport.physical_size);
            pass.set_viewport(
                p.x as f32,
                p.y as f32,
                s.x as f32,
                s.y as f32,
                viewport.depth.start,
                viewport.depth.end,
            );
        }
        renderer.draw(&mut pass, &draws, formats);
    }
    // Unlock the crowds before flushing: the flush waits for Bevy's command-encoding tasks, which
    // share the task pool with main-world systems that may be waiting for these locks (pipelined
    // rendering runs both worlds at once).
    drop(draws);
    drop(guards);
    // Neither Bevy's own commands (flushed first so that vat's follow them) nor the submit are
    // vat's CPU time: on a software driver a submit waits for the device's queue.
    span.excluding(|| flush.flush());
    let commands = encoder.finish();
    span.excluding(|| queue.submit([commands]));
}
