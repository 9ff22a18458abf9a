//! The crowds in Bevy's prepasses: the depth, normal and motion-vector prepass of every 3D camera
//! that has one (`DepthPrepass`, `NormalPrepass`, `MotionVectorPrepass`), so that TAA, SSAO,
//! depth of field and motion blur see them, and TAA's jitter on their colour and prepass draws.
//!
//! - [`prepare_view_temporal`] (`Render`, `PrepareResources`) gives each 3D view a [`ViewTemporal`]:
//!   motion vectors on when the view has a motion-vector prepass, the previous frame's camera
//!   (Bevy's `PreviousViewData`) and the view's `TemporalJitter` as vat's NDC jitter. The view's
//!   frame is prepared with them ([`ViewTemporal::apply`], from `render::frame_options`).
//! - [`vat_prepass`] (`Core3d`, after Bevy's `late_prepass`, before the main pass) draws the
//!   prepared frame into the view's prepass (`Renderer::draw_prepass`: Bevy's depth buffer, the
//!   normal target at location 0, the motion target at location 1), then copies the depth into
//!   `ViewPrepassTextures::depth` again, as Bevy's `run_prepass_system` does (what SSAO and depth
//!   of field read). The view's main pass then draws the same frame over that depth.

use bevy::core_pipeline::core_3d::CORE_3D_DEPTH_FORMAT;
use bevy::core_pipeline::prepass::{
    DeferredPrepass, MOTION_VECTOR_PREPASS_FORMAT, MotionVectorPrepass, NORMAL_PREPASS_FORMAT,
    PreviousViewData, ViewPrepassTextures,
};
use bevy::pbr::{ExtractedDirectionalLight, LightEntity, ViewLightEntities, ViewShadowBindings};
use bevy::prelude::*;
use bevy::render::camera::{ExtractedCamera, TemporalJitter};
use bevy::render::render_resource::{RenderPassDescriptor, StoreOp};
use bevy::render::renderer::{FlushCommands, RenderDevice, RenderQueue, ViewQuery};
use bevy::render::view::{ExtractedView, Msaa, ViewDepthStencilTexture};
use vat_core::backend::pipeline::{PassConventions, colour_slots};
use vat_wgpu::{PrepassFormats, RenderOptions};

use crate::VatRenderSettings;
use crate::render::{
    ExtractedCrowds, ExtractedLight, VatRenderState, frame_options, lock_all, new_encoder, pair, vat_camera,
    view_shadows,
};
use crate::timing::VatCpuTime;

/// What a 3D view's frame needs for Bevy's temporal effects: a component of the render world's view
/// entity, made each frame by [`prepare_view_temporal`].
#[derive(Component, Debug, Clone, Copy, PartialEq)]
pub(crate) struct ViewTemporal {
    /// Some 3D view has a motion-vector prepass this frame: every view's frame is prepared with
    /// motion vectors (a crowd planned without them would forget its previous frame, which the
    /// views with a motion prepass need; a view without a motion target draws colour alone).
    motion_vectors: bool,
    /// The camera's unjittered world-to-clip matrix of the previous frame (Bevy's
    /// `PreviousViewData::unjittered_clip_from_world`), column-major; `None` at its first frame.
    previous_view_proj: Option<[[f32; 4]; 4]>,
    /// The view's TAA jitter in NDC units ([`ndc_jitter`]); zero without `TemporalJitter`.
    jitter: [f32; 2],
}

impl ViewTemporal {
    /// Sets `options`' motion vectors, previous camera and jitter for this view.
    pub(crate) fn apply(&self, options: &mut RenderOptions) {
        options.motion_vectors = self.motion_vectors;
        options.previous_view_proj = self.previous_view_proj;
        options.jitter = self.jitter;
    }
}

/// Bevy's `TemporalJitter` (`offset` in pixels, within -0.5..0.5) of a view of `size` pixels as
/// vat's NDC jitter (`RenderOptions::jitter`, `clip.xy += jitter * clip.w`): Bevy adds `offset *
/// (2, -2) / size` to column z of a perspective projection, and `w = -z` there, so every point's
/// NDC moves by `offset * (-2, 2) / size`. `None` for an orthographic projection
/// (`clip_from_view.w_axis.w == 1`), where Bevy's jitter shifts each depth by a different amount,
/// which vat's constant offset cannot follow (the crowds are then drawn unjittered), and for an
/// empty view.
pub(crate) fn ndc_jitter(offset: Vec2, size: Vec2, clip_from_view: &Mat4) -> Option<[f32; 2]> {
    if clip_from_view.w_axis.w == 1.0 || size.x <= 0.0 || size.y <= 0.0 {
        return None;
    }
    let jitter = offset * Vec2::new(-2.0, 2.0) / size;
    jitter.is_finite().then_some(jitter.to_array())
}

/// A view's [`ViewTemporal`], as the render systems query it (`None` before
/// [`prepare_view_temporal`] made it).
pub(crate) type Temporal<'a> = Option<&'a ViewTemporal>;

/// What [`prepare_view_temporal`] reads of a view.
type TemporalInputs<'a> = (
    Entity,
    &'a ExtractedView,
    Has<MotionVectorPrepass>,
    Option<&'a TemporalJitter>,
    Option<&'a PreviousViewData>,
);

/// What [`vat_prepass`] reads of its view.
type PrepassView<'a> = (
    Entity,
    &'a ExtractedCamera,
    &'a ExtractedView,
    &'a ViewDepthStencilTexture,
    &'a ViewPrepassTextures,
    &'a Msaa,
    Temporal<'a>,
    (Option<&'a ViewLightEntities>, Option<&'a ViewShadowBindings>),
    Has<DeferredPrepass>,
);

/// `Render` (`PrepareResources`): the [`ViewTemporal`] of every camera's view.
pub(crate) fn prepare_view_temporal(
    views: Query<TemporalInputs<'_>, With<ExtractedCamera>>,
    mut commands: Commands,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    let motion_vectors = views.iter().any(|(_, _, motion, _, _)| motion);
    for (entity, view, _, jitter, previous) in &views {
        let size = view.viewport.zw().as_vec2();
        let temporal = ViewTemporal {
            motion_vectors,
            previous_view_proj: previous.map(|p| p.unjittered_clip_from_world.to_cols_array_2d()),
            jitter: jitter.and_then(|j| ndc_jitter(j.offset, size, &view.clip_from_view)).unwrap_or([0.0; 2]),
        };
        commands.entity(entity).insert(temporal);
    }
}

/// `Core3d`, after Bevy's prepasses and [`crate::render::vat_shadow_pass`], before the main pass:
/// draws the crowds into the view's prepass (views with `ViewPrepassTextures`, not deferred ones)
/// with the frame prepared for the view (preparing it here unless the shadow pass did, for the
/// main pass to draw too), then copies the depth into the prepass depth texture again when the
/// view has one. Submitted at once after Bevy's commands so far, as the main pass is.
#[allow(clippy::too_many_arguments)] // One system: its parameters are its queries.
pub(crate) fn vat_prepass(
    view: ViewQuery<PrepassView<'_>>,
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
    let (view_entity, camera, extracted_view, depth, textures, msaa, temporal, (lights, bindings), deferred) =
        view.into_inner();
    if deferred {
        return; // vat draws no G-buffer: deferred views are not supported.
    }
    let state = &mut *state;
    let Some(Ok(renderer)) = state.renderer.as_mut() else { return };
    let mut guards = lock_all(&extracted);
    let (mut draws, entities) = pair(&mut guards, &state.assets, &mut state.crowds);
    if draws.is_empty() {
        return;
    }
    let mut encoder = new_encoder(&device);
    let prepared = Some((view_entity, entities));
    if state.prepared != prepared {
        let shadows =
            view_shadows(view_entity, extracted_view, lights, bindings, &light_entities, &directional);
        let options = frame_options(&settings, &light, camera, shadows.as_ref(), temporal, renderer);
        if let Err(e) = renderer.prepare(&mut encoder, &mut draws, &vat_camera(extracted_view), &options, &[])
        {
            error!("vat-bevy: crowds not drawn this frame: {}", crate::VatBevyError::from(e));
            state.prepared = None;
            return;
        }
    }
    // The motion target only for a frame prepared with motion vectors (its ViewTemporal's).
    let motion = textures.motion_vectors.as_ref().filter(|_| renderer.motion_vectors_prepared());
    let formats = PrepassFormats {
        normal: textures.normal.as_ref().map(|_| NORMAL_PREPASS_FORMAT),
        motion: motion.map(|_| MOTION_VECTOR_PREPASS_FORMAT),
        depth: CORE_3D_DEPTH_FORMAT,
        samples: msaa.samples(),
        conventions: PassConventions::REVERSE_Z,
    };
    {
        let color = colour_slots(
            textures.normal.as_ref().map(|t| t.get_attachment()),
            motion.map(|t| t.get_attachment()),
        );
        let mut pass = encoder.begin_render_pass(&RenderPassDescriptor {
            label: Some("vat crowds: prepass"),
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
        renderer.draw_prepass(&mut pass, &draws, formats);
    }
    if let Some(prepass_depth) = &textures.depth {
        encoder.copy_texture_to_texture(
            depth.texture().as_image_copy(),
            prepass_depth.texture.texture.as_image_copy(),
            textures.size,
        );
    }
    // Unlock the crowds before flushing (as the main pass does: the flush waits for Bevy's
    // command-encoding tasks, which share the task pool with main-world systems that may be
    // waiting for these locks).
    drop(draws);
    drop(guards);
    // Neither Bevy's own commands (flushed first so that vat's follow them) nor the submit are
    // vat's CPU time: on a software driver a submit waits for the device's queue.
    span.excluding(|| flush.flush());
    let commands = encoder.finish();
    span.excluding(|| queue.submit([commands]));
    state.prepared = prepared;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vat's NDC offset moves a point exactly as Bevy's jittered projection does.
    #[test]
    fn the_ndc_jitter_is_bevys_projection_jitter() {
        let size = Vec2::new(320.0, 200.0);
        let projection = bevy::math::proj::perspective_infinite_reverse(0.8, size.x / size.y, 0.1);
        for offset in [Vec2::new(0.25, -0.4), Vec2::new(-0.5, 0.5), Vec2::ZERO] {
            let mut jittered = projection;
            TemporalJitter { offset }.jitter_projection(&mut jittered, size);
            let jitter = Vec2::from(ndc_jitter(offset, size, &projection).unwrap());
            for p in [Vec3::new(0.3, -0.2, -2.0), Vec3::new(-4.0, 1.0, -30.0)] {
                let ndc = |m: Mat4| {
                    let c = m * p.extend(1.0);
                    c.truncate().truncate() / c.w
                };
                let moved = ndc(jittered) - ndc(projection);
                assert!((moved - jitter).abs().max_element() < 1e-6, "{offset}: {moved} vs {jitter}");
            }
        }
        let orthographic = bevy::math::proj::orthographic(-1.0, 1.0, -1.0, 1.0, 0.0, 10.0);
        assert_eq!(ndc_jitter(Vec2::splat(0.25), size, &orthographic), None);
        assert_eq!(ndc_jitter(Vec2::splat(0.25), Vec2::ZERO, &projection), None);
    }

    #[test]
    fn a_view_temporal_sets_motion_history_and_jitter() {
        let previous = Mat4::from_translation(Vec3::X).to_cols_array_2d();
        let temporal =
            ViewTemporal { motion_vectors: true, previous_view_proj: Some(previous), jitter: [0.5, -0.25] };
        let mut options = RenderOptions::default();
        temporal.apply(&mut options);
        assert!(options.motion_vectors);
        assert_eq!(options.previous_view_proj, Some(previous));
        assert_eq!(options.jitter, [0.5, -0.25]);
    }
}
