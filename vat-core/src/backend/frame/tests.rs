//! The frame plan without a GPU: uploads, growth, sync after failures, dispatches, draws and the
//! report, for one crowd and for several crowds of different assets.

use super::*;
use crate::clip::{ClipMode, ClipRowMap};
use crate::container::{BlobId, VertexAnimation};
use crate::crowd::CrowdAsset;
use crate::encoding::PositionBounds;
use crate::layout::VertexTextureLayout;
use crate::pipeline::ImpostorViews;

const LIMITS: PlanLimits = PlanLimits { max_storage_buffer_bytes: 128 << 20 };

/// A manifest of `lods` LODs of 300, 120, 30 ... triangles, switching at 10, 20, 30 ... m.
fn manifest(lods: u32, format: VertexFormat) -> Manifest {
    let mut m = Manifest::new("plan test", 100);
    let mut clips = ClipRowMap::new();
    clips.push("walk", 1.0, 30.0, ClipMode::Looping, 1.5).unwrap();
    m.clips = clips.clips().to_vec();
    m.vertex_animation = Some(VertexAnimation {
        layout: VertexTextureLayout { vertex_count: 100, frame_count: 30, width: 64, height: 47 },
        format,
        bounds: PositionBounds { min: [-0.3, 0.0, -0.2], extent: [0.6, 1.8, 0.4] },
        position_bits: [13, 14, 13],
        textures: vec![BlobId(0)],
        tangents: None,
    });
    let mut first = 0;
    for l in 0..lods {
        let triangles = 300 >> (l + 1).min(8);
        m.lods.push(Lod {
            first_index: first,
            index_count: triangles * 3,
            triangle_count: triangles,
            screen_error: 0.0,
            max_distance: if l + 1 == lods { f32::INFINITY } else { 10.0 * (l + 1) as f32 },
        });
        first += triangles * 3;
    }
    m
}

struct Fixture {
    crowd: Crowd,
    asset: AssetDrawInfo,
    sync: CrowdSync,
}

/// A crowd of `n` instances on a line in front of the camera, 2 m apart.
fn fixture(n: u32, lods: u32, format: VertexFormat) -> Fixture {
    fixture_of(&manifest(lods, format), n)
}

/// [`fixture`] of manifest `m`.
fn fixture_of(m: &Manifest, n: u32) -> Fixture {
    let index_count = m.lods.iter().map(|l| l.index_count).sum();
    let asset = AssetDrawInfo::new(m, index_count, 0).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(m).unwrap(), Default::default());
    for i in 0..n {
        crowd.spawn([(i % 10) as f32 * 2.0 - 9.0, 0.0, -((i / 10) as f32) * 2.0], 0.0, 0);
    }
    let sync = CrowdSync::new(crowd.id());
    Fixture { crowd, asset, sync }
}

fn camera() -> Camera {
    Camera::look_at([0.0, 2.0, 12.0], [0.0, 1.0, 0.0], 0.9, 1.0, 0.1, 500.0)
}

fn plan(
    plan: &mut FramePlan,
    fixtures: &mut [&mut Fixture],
    options: &RenderOptions,
) -> Result<(), PlanError> {
    let mut inputs: Vec<PlanCrowd<'_>> = fixtures
        .iter_mut()
        .map(|f| PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync })
        .collect();
    plan.plan(&mut inputs, &camera(), options, &LIMITS)
}

fn cpu() -> RenderOptions {
    RenderOptions::default()
}

fn gpu_culled() -> RenderOptions {
    RenderOptions { culling: Culling::Gpu, ..RenderOptions::default() }
}

fn uniforms() -> u64 {
    size_of::<FrameUniforms>() as u64
}

#[test]
fn workgroups_split_at_65535() {
    assert_eq!(workgroups(64, 64), [1, 1]);
    assert_eq!(workgroups(0, 64), [1, 1]);
    assert_eq!(workgroups(65536 * 64, 64), [65535, 2]);
}

#[test]
fn a_first_cpu_frame_grows_the_buffers_and_uploads_everything_then_nothing() {
    let mut f = fixture(40, 3, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    let c = &p.crowds[0];
    let list_len = f.crowd.instance_list().len() as u32;
    assert!(list_len >= 40);
    assert_eq!(
        c.grow,
        Some(CrowdCapacity { records: 64, list: list_len.max(64).next_power_of_two(), history: false })
    );
    assert_eq!(c.record_writes, vec![0..40]);
    assert_eq!(c.user_data_writes, vec![0..40]);
    assert_eq!(c.list_writes, Some(0..list_len));
    assert_eq!(c.uploaded_bytes, 40 * 64 + 40 * 16 + u64::from(list_len) * 4 + uniforms());
    assert!(p.dispatches.is_empty());
    assert!(p.shadow_view_proj.is_some());
    // The draws are the crowd's batches, each with its LOD's index range.
    let b = &c.batches;
    assert_eq!(p.colour.len(), b.main_fade.len() + b.main_plain.len());
    assert_eq!(p.depth.len(), b.shadow.len());
    for (d, batch) in p.colour.iter().zip(b.main_fade.iter().chain(&b.main_plain)) {
        let DrawGeometry::Indexed { indices, instances } = &d.geometry else { panic!("{d:?}") };
        assert_eq!(*indices, f.asset.lod_indices(batch.lod));
        assert_eq!(*instances, batch.first_instance..batch.first_instance + batch.instance_count);
        assert_eq!(d.resources, DrawResources::Crowd { crowd: 0, instances: InstanceSource::InstanceList });
    }
    let report = p.report();
    assert_eq!(report.draws_main, report.stats.draws_main);
    assert_eq!(report.draws_shadow, report.stats.draws_shadow);
    assert_eq!(report.uploaded_bytes, c.uploaded_bytes);

    // Nothing changed: only the uniforms.
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    let c = &p.crowds[0];
    assert_eq!((c.grow, c.record_writes.len(), c.list_writes.clone()), (None, 0, None));
    assert_eq!(c.uploaded_bytes, uniforms());

    // One instance moved: one range.
    f.crowd.set_transform(7, [0.5, 0.0, 0.0], 1.0);
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].record_writes, vec![7..8]);
}

#[test]
fn gpu_culling_dispatches_once_and_draws_indirect_per_lod() {
    let mut f = fixture(100, 3, VertexFormat::Packed64);
    // A fade running: the cross-fade pipeline is in use.
    f.crowd.play_as(0, 0, 0.5, crate::instance::PlayMode::Once);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let c = &p.crowds[0];
    assert_eq!(p.dispatches, vec![Dispatch::Cull { crowd: 0, records: 100, workgroups: [2, 1] }]);
    assert!(c.reset_draw_args);
    let template = c.args_template.as_ref().expect("first frame writes the template");
    assert_eq!(template[4..5], [0]);
    assert_eq!(template[5 + 4], 128, "LOD 1 starts at one capacity");
    assert_eq!(c.cull_params.map(|q| (q.record_count, q.capacity)), Some((100, 128)));
    assert_eq!(c.list_writes, None, "the GPU path never writes the instance list");
    let offsets: Vec<u64> = p
        .colour
        .iter()
        .map(|d| match d.geometry {
            DrawGeometry::IndexedIndirect { offset } => offset,
            _ => panic!("{d:?}"),
        })
        .collect();
    assert_eq!(offsets, vec![0, DRAW_ARGS_STRIDE, 2 * DRAW_ARGS_STRIDE]);
    // Cross-fade up to LOD 1 (the default), plain beyond.
    let fades: Vec<bool> = p.colour.iter().map(|d| d.pipeline.variant.cross_fade).collect();
    assert_eq!(fades, vec![true, true, false]);
    assert_eq!(p.depth.len(), 2, "shadow casters: LODs 0 and 1");
    assert_eq!(p.report().dispatches, 1);
    assert_eq!(c.uploaded_bytes, 100 * 64 + 100 * 16 + uniforms() + 16);
    assert_eq!(f.sync.gpu_lods(), 3);

    // Unchanged: no template, no parameters, no records; the draw args are still reset.
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let c = &p.crowds[0];
    assert_eq!((c.args_template.is_none(), c.cull_params, c.record_writes.len()), (true, None, 0));
    assert!(c.reset_draw_args);
    assert_eq!(c.uploaded_bytes, uniforms());
}

#[test]
fn many_short_ranges_are_scattered_with_the_one_minimum_capacity() {
    let mut f = fixture(4000, 2, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    for i in (0..4000).step_by(100) {
        f.crowd.set_transform(i, [0.0, 0.0, 1.0], 0.0);
    }
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let c = &p.crowds[0];
    assert_eq!(c.scatter.scattered(), 40);
    assert_eq!(c.grow_scatter, Some(MIN_SCATTER_CAPACITY));
    assert!(c.record_writes.is_empty());
    assert_eq!(p.dispatches[0], Dispatch::Scatter { crowd: 0, records: 40, workgroups: [1, 1] });
    assert!(matches!(p.dispatches[1], Dispatch::Cull { crowd: 0, .. }));
    // The scatter reproduces the crowd's records on a CPU copy.
    let mut copy = vec![InstanceRecord::default(); 4000];
    copy.copy_from_slice(f.crowd.records());
    for i in (0..4000).step_by(100) {
        copy[i] = InstanceRecord::default();
    }
    c.scatter.apply(&[], &mut copy);
    assert_eq!(copy, f.crowd.records());
    // The buffers are kept the next time.
    f.crowd.set_transform(5, [0.0, 0.0, 2.0], 0.0);
    for i in (1..4000).step_by(200) {
        f.crowd.set_transform(i, [0.0, 0.0, 2.0], 0.0);
    }
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    assert_eq!(p.crowds[0].grow_scatter, None);
    assert_eq!(f.sync.scatter_capacity(), MIN_SCATTER_CAPACITY);
}

#[test]
fn two_crowds_of_two_assets_share_one_frame() {
    let mut a = fixture(30, 3, VertexFormat::Packed64);
    let mut b = fixture(12, 1, VertexFormat::F16);
    for culling in [Culling::Cpu, Culling::Gpu] {
        let options = RenderOptions { culling, ground: true, ..RenderOptions::default() };
        let mut p = FramePlan::default();
        plan(&mut p, &mut [&mut a, &mut b], &options).unwrap();
        assert_eq!(p.crowds.len(), 2);
        assert_eq!(p.colour[0].pipeline.program, Program::Ground);
        assert_eq!(p.colour[0].resources, DrawResources::FrameOnly { crowd: Some(0) });
        for (k, fixture) in [(0usize, &a), (1, &b)] {
            let of_crowd: Vec<&Draw> = p
                .colour
                .iter()
                .filter(|d| matches!(d.resources, DrawResources::Crowd { crowd, .. } if crowd == k))
                .collect();
            assert!(!of_crowd.is_empty(), "crowd {k} {culling:?}");
            for d in of_crowd {
                assert_eq!(d.pipeline.variant.vertex_format, fixture.asset.vertex_format());
                if let DrawGeometry::Indexed { indices, .. } = &d.geometry {
                    assert!(fixture.asset.lods().iter().any(|l| l.first_index == indices.start));
                }
            }
            assert!(
                p.depth
                    .iter()
                    .any(|d| matches!(d.resources, DrawResources::Crowd { crowd, .. } if crowd == k)),
                "both crowds cast into the one shadow pass"
            );
        }
        let report = p.report();
        assert_eq!(report.stats.simulated, 42);
        assert_eq!(report.draws_ground, 1);
        if culling == Culling::Gpu {
            assert_eq!(report.dispatches, 2);
            assert_eq!(report.draws_main, 3 + 1, "3 LODs + 1 LOD");
        }
        assert_eq!(p.crowds[0].uniforms.lod_count, 3);
        assert_eq!(p.crowds[1].uniforms.lod_count, 1);
        assert_eq!(p.crowds[0].uniforms.view_proj, p.crowds[1].uniforms.view_proj);
    }
}

#[test]
fn the_ground_alone_has_uniforms_of_its_own() {
    let mut p = FramePlan::default();
    p.plan(&mut [], &camera(), &RenderOptions { ground: true, ..cpu() }, &LIMITS).unwrap();
    assert_eq!(p.colour.len(), 1);
    assert_eq!(p.colour[0].resources, DrawResources::FrameOnly { crowd: None });
    assert!(p.frame_uniforms.is_some());
    assert_eq!(p.shadow_view_proj, None, "no crowd casts");
    assert_eq!(p.report().uploaded_bytes, uniforms());
}

#[test]
#[should_panic(expected = "create one GpuCrowd per Crowd")]
fn a_gpu_copy_used_with_another_crowd_panics() {
    let mut a = fixture(3, 1, VertexFormat::Packed64);
    let b = fixture(3, 1, VertexFormat::Packed64);
    a.sync = b.sync;
    let _ = plan(&mut FramePlan::default(), &mut [&mut a], &cpu());
}

#[test]
fn a_cloned_crowd_is_another_crowd() {
    let a = fixture(3, 1, VertexFormat::Packed64);
    assert_ne!(a.crowd.clone().id(), a.crowd.id());
}

#[test]
fn bone_mode_without_bones_changes_nothing() {
    let mut f = fixture(3, 1, VertexFormat::Packed64);
    let before = f.sync.clone();
    let options = RenderOptions { mode: RenderMode::Bone, ..cpu() };
    let e = plan(&mut FramePlan::default(), &mut [&mut f], &options).unwrap_err();
    assert_eq!(e, PlanError::AssetHasNoBones { crowd: 0 });
    assert_eq!(f.sync, before);
}

#[test]
fn a_failed_frame_uploads_every_crowd_whole_next_time() {
    let mut a = fixture(50, 2, VertexFormat::Packed64);
    let mut b = fixture(50, 2, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut a, &mut b], &gpu_culled()).unwrap();
    // Crowd a's dirty set is taken, then crowd b outgrows the limit.
    a.crowd.set_transform(3, [1.0, 0.0, 0.0], 0.0);
    for _ in 0..100 {
        b.crowd.spawn([0.0; 3], 0.0, 0);
    }
    let tiny = PlanLimits { max_storage_buffer_bytes: 128 * 64 };
    let mut inputs = [
        PlanCrowd { crowd: &mut a.crowd, asset: &a.asset, sync: &mut a.sync },
        PlanCrowd { crowd: &mut b.crowd, asset: &b.asset, sync: &mut b.sync },
    ];
    let e = p.plan(&mut inputs, &camera(), &gpu_culled(), &tiny).unwrap_err();
    assert!(matches!(e, PlanError::BufferTooLarge { what: "instance record", .. }), "{e:?}");
    assert!(!a.sync.records_synced() && !b.sync.records_synced());
    plan(&mut p, &mut [&mut a, &mut b], &gpu_culled()).unwrap();
    assert_eq!(p.crowds[0].record_writes, vec![0..50], "a's change is not lost");
    assert_eq!(p.crowds[1].record_writes, vec![0..150]);
}

#[test]
fn a_backend_failure_after_planning_resyncs_through_mark_unsynced() {
    let mut f = fixture(20, 1, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    f.crowd.set_transform(2, [1.0, 0.0, 0.0], 0.0);
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].record_writes, vec![2..3]);
    // The backend failed to carry that plan out (perhaps before creating the buffers it planned).
    f.sync.mark_unsynced();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].record_writes, vec![0..20]);
    assert!(p.crowds[0].list_writes.is_some(), "and the whole list");
    assert!(p.crowds[0].grow.is_some(), "into buffers created again");
    // GPU culling: the template and the culling inputs are written again too.
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    f.sync.mark_unsynced();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let c = &p.crowds[0];
    assert!(c.grow.is_some() && c.args_template.is_some() && c.cull_params.is_some());
}

#[test]
fn shadows_off_plans_no_depth_pass() {
    let mut f = fixture(20, 3, VertexFormat::Packed64);
    f.crowd.play_as(0, 0, 0.5, crate::instance::PlayMode::Once);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &RenderOptions { shadows: false, ..gpu_culled() }).unwrap();
    assert_eq!((p.shadow_view_proj, p.depth.len()), (None, 0));
    assert_eq!((p.crowds[0].uniforms.shadow.count, p.crowds[0].uniforms.shadow.strength), (0, 0.0));
    assert_eq!(p.pipelines().len(), 2, "fade and plain colour pipelines");
    // No fade running: the plain pipeline alone.
    let mut f = fixture(20, 3, VertexFormat::Packed64);
    plan(&mut p, &mut [&mut f], &RenderOptions { shadows: false, ..gpu_culled() }).unwrap();
    assert_eq!(p.pipelines().len(), 1, "the plain colour pipeline");
    assert!(p.colour.iter().all(|d| !d.pipeline.variant.cross_fade));
}

#[test]
fn colour_pipelines_fix_the_assets_shading_path_and_the_light_model() {
    use crate::container::Material;
    use crate::gpu::LightModel;
    let mut palette = fixture(20, 3, VertexFormat::Packed64);
    let mut m = manifest(3, VertexFormat::Packed64);
    m.materials = vec![Material::default()];
    let index_count = m.lods.iter().map(|l| l.index_count).sum();
    let mut textured = fixture(20, 3, VertexFormat::Packed64);
    textured.asset = AssetDrawInfo::new(&m, index_count, 0).unwrap();
    assert!(textured.asset.has_materials() && !palette.asset.has_materials());
    // The decode for verification chooses at run time: it must read every tangent frame.
    for f in [&palette, &textured] {
        assert_eq!(f.asset.variant(true).materials, None);
        assert_eq!(f.asset.render_variant(true).materials, Some(f.asset.has_materials()));
    }
    let pbr = LightModel::Pbr { ambient_color: [0.2; 3] };
    for light_model in [LightModel::Vat, pbr] {
        let mut p = FramePlan::default();
        let options = RenderOptions { light_model, ground: true, ..cpu() };
        plan(&mut p, &mut [&mut palette, &mut textured], &options).unwrap();
        for d in &p.colour {
            let v = d.pipeline.variant;
            assert_eq!(v.light_model, Some(light_model.code()), "{:?}", d.pipeline);
            let expected = match d.resources {
                DrawResources::Crowd { crowd: 0, .. } => Some(false),
                DrawResources::Crowd { .. } => Some(true),
                DrawResources::FrameOnly { .. } => None,
            };
            assert_eq!(v.materials, expected, "{:?}", d.pipeline);
        }
        assert!(p.colour.iter().any(|d| d.pipeline.variant.materials == Some(true)));
        assert!(p.colour.iter().any(|d| d.pipeline.variant.materials == Some(false)));
        // Depth draws do not light: one pipeline whatever the light model.
        assert!(!p.depth.is_empty());
        assert!(p.depth.iter().all(|d| d.pipeline.variant.light_model.is_none()));
    }
}

#[test]
fn extra_views_draw_bodies_in_depth_pipelines_with_their_own_uniforms() {
    for options in [RenderOptions { ground: true, ..cpu() }, RenderOptions { ground: true, ..gpu_culled() }] {
        let mut f = fixture(20, 3, VertexFormat::Packed64);
        let view = camera().view_proj;
        let mut p = FramePlan::default();
        let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
        p.plan_with_views(&mut inputs, &camera(), &options, &LIMITS, &[view, view]).unwrap();
        assert_eq!(p.views, vec![view, view]);
        let bodies: Vec<&Draw> = p.colour.iter().filter(|d| d.pipeline.binds_asset_and_crowd()).collect();
        assert!(!bodies.is_empty() && bodies.len() < p.colour.len(), "{options:?}: bodies and a ground");
        assert_eq!(p.view_depth.len(), 2, "one list per view");
        // A view equal to the camera draws what the camera draws (culled again on the CPU path,
        // with the same cells and LODs), in depth pipelines, no ground.
        for draws in &p.view_depth {
            assert_eq!(draws.len(), bodies.len(), "{options:?}: no ground in the view's draws");
            for (depth, colour) in draws.iter().zip(&bodies) {
                assert_eq!(depth.pipeline.pass, PassKind::Depth);
                // The same variant, but unlit (depth pipelines keep no light model).
                let unlit = ShaderVariantKey { light_model: None, ..colour.pipeline.variant };
                assert_eq!(
                    (depth.pipeline.program, depth.pipeline.variant),
                    (colour.pipeline.program, unlit)
                );
                assert_eq!(depth.geometry, colour.geometry);
                if options.culling == Culling::Cpu {
                    assert_eq!(depth.resources, colour.resources);
                }
            }
        }
        let c = &p.crowds[0];
        assert_eq!(c.view_uniforms.len(), 2);
        assert_eq!(c.view_uniforms[0], FrameUniforms { light_view_proj: view, ..c.uniforms });
        // A frame without views drops them.
        let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
        p.plan(&mut inputs, &camera(), &options, &LIMITS).unwrap();
        assert!(p.views.is_empty() && p.view_depth.is_empty() && p.crowds[0].view_uniforms.is_empty());
    }
}

#[test]
fn a_gpu_culled_view_is_culled_for_itself_into_its_own_lists() {
    let mut f = fixture(20, 3, VertexFormat::Packed64);
    let back = Camera::look_at([0.0, 2.0, 12.0], [0.0, 1.0, 40.0], 0.9, 1.0, 0.1, 500.0).view_proj;
    let side = Camera::look_at([0.0, 2.0, 12.0], [30.0, 1.0, 12.0], 0.5, 1.0, 0.1, 100.0).view_proj;
    let mut p = FramePlan::default();
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &gpu_culled(), &LIMITS, &[back, side]).unwrap();
    // The camera's culling, then one per view, each over every record.
    let w = workgroups(20, gpu::CULL_WORKGROUP_SIZE);
    assert_eq!(
        p.dispatches,
        vec![
            Dispatch::Cull { crowd: 0, records: 20, workgroups: w },
            Dispatch::CullView { crowd: 0, view: 0, records: 20, workgroups: w },
            Dispatch::CullView { crowd: 0, view: 1, records: 20, workgroups: w },
        ]
    );
    assert_eq!(p.report().dispatches, 3);
    let c = &p.crowds[0];
    assert!(c.grow.is_some(), "a first frame grows the buffers");
    assert_eq!((c.grow_view_lists, c.reset_view_draw_args, c.reset_draw_args), (Some(2), 2, true));
    // The views' uniforms: the view's matrix and frustum, the camera's position (its LODs).
    for (u, view) in c.view_uniforms.iter().zip([back, side]) {
        assert_eq!(u.light_view_proj, view);
        assert_eq!(u.frustum_planes, Frustum::from_view_proj(&view).planes);
        assert_ne!(u.frustum_planes, c.uniforms.frustum_planes);
        assert_eq!(u.camera_position, c.uniforms.camera_position);
        assert_eq!(
            *u,
            FrameUniforms { light_view_proj: view, frustum_planes: u.frustum_planes, ..c.uniforms }
        );
    }
    // Each view draws indirect draws of its own lists: the camera's colour draws in depth
    // pipelines, over the view's lists and draw arguments.
    let bodies: Vec<&Draw> = p.colour.iter().filter(|d| d.pipeline.binds_asset_and_crowd()).collect();
    assert_eq!(p.view_depth.len(), 2);
    for (v, draws) in p.view_depth.iter().enumerate() {
        assert_eq!(draws.len(), bodies.len());
        for (depth, colour) in draws.iter().zip(&bodies) {
            assert_eq!(depth.pipeline, colour.pipeline.in_depth_pass());
            assert_eq!(
                depth.resources,
                DrawResources::Crowd { crowd: 0, instances: InstanceSource::ViewLists { view: v } }
            );
            assert!(matches!(depth.geometry, DrawGeometry::IndexedIndirect { .. }));
            assert_eq!(depth.geometry, colour.geometry);
        }
    }
    // The next frame keeps the view lists (and resets their draw arguments again); a third view
    // asks for one more; growing the crowd's buffers makes them all again.
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &gpu_culled(), &LIMITS, &[back, side]).unwrap();
    assert_eq!(
        (p.crowds[0].grow, p.crowds[0].grow_view_lists, p.crowds[0].reset_view_draw_args),
        (None, None, 2)
    );
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &gpu_culled(), &LIMITS, &[back, side, back]).unwrap();
    assert_eq!((p.crowds[0].grow_view_lists, p.crowds[0].reset_view_draw_args), (Some(3), 3));
    assert_eq!(p.dispatches.len(), 4);
    assert_eq!(f.sync.view_lists(), 3);
    for i in 0..100 {
        f.crowd.spawn([i as f32 * 0.1, 0.0, -30.0], 0.0, 0);
    }
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &gpu_culled(), &LIMITS, &[back]).unwrap();
    assert!(p.crowds[0].grow.is_some());
    assert_eq!((p.crowds[0].grow_view_lists, p.crowds[0].reset_view_draw_args), (Some(1), 1));
    // Without views: none; a CPU-culled crowd never has view lists.
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan(&mut inputs, &camera(), &gpu_culled(), &LIMITS).unwrap();
    assert_eq!((p.crowds[0].grow_view_lists, p.crowds[0].reset_view_draw_args), (None, 0));
    assert_eq!(p.dispatches.len(), 1);
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &cpu(), &LIMITS, &[back]).unwrap();
    assert_eq!((p.crowds[0].grow_view_lists, p.crowds[0].reset_view_draw_args), (None, 0));
    assert!(p.dispatches.iter().all(|d| !matches!(d, Dispatch::CullView { .. })));
}

/// The records a plan's draws of crowd 0 list, through the crowd's instance list.
fn drawn_records(draws: &[Draw], list: &[u32]) -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    for d in draws {
        if let DrawGeometry::Indexed { instances, .. } = &d.geometry {
            out.extend(instances.clone().map(|e| list[e as usize]));
        }
    }
    out
}

#[test]
fn a_cpu_culled_view_is_culled_for_itself() {
    let mut f = fixture(20, 3, VertexFormat::Packed64);
    // Five more behind the camera (it looks towards -z from z = 12): only a view turned round sees them.
    let behind: Vec<u32> = (0..5).map(|i| f.crowd.spawn([i as f32 * 2.0 - 4.0, 0.0, 30.0], 0.0, 0)).collect();
    let back = Camera::look_at([0.0, 2.0, 12.0], [0.0, 1.0, 40.0], 0.9, 1.0, 0.1, 500.0).view_proj;
    let away = Camera::look_at([0.0, 2.0, 12.0], [0.0, 80.0, 12.5], 0.2, 1.0, 0.1, 50.0).view_proj;
    let mut p = FramePlan::default();
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan_with_views(&mut inputs, &camera(), &cpu(), &LIMITS, &[back, away]).unwrap();
    let list = f.crowd.instance_list();
    let seen = drawn_records(&p.colour, list);
    assert!(behind.iter().all(|i| !seen.contains(i)), "the camera does not see those behind it");
    let back_drawn = drawn_records(&p.view_depth[0], list);
    assert!(behind.iter().all(|i| back_drawn.contains(i)), "the turned view draws them: {back_drawn:?}");
    assert!(
        back_drawn.iter().all(|i| !seen.contains(i)),
        "and none the camera sees (they are in front of it)"
    );
    assert!(p.view_depth[1].is_empty(), "a view seeing no cell draws nothing");
    assert!(p.view_depth[0].iter().all(|d| d.pipeline.pass == PassKind::Depth));
}

#[test]
fn the_hosts_shadow_map_replaces_vats_shadow_pass() {
    let mut f = fixture(20, 2, VertexFormat::Packed64);
    let matrix = camera().view_proj;
    let mut lookup = gpu::ShadowLookup::host(matrix);
    (lookup.strength, lookup.bias, lookup.cascades[0].normal_offset) = (0.6, 0.002, 0.05);
    let host =
        RenderOptions { shadow_map: ShadowMapSource::Host(lookup), sun_color: [1.0, 0.5, 0.25], ..cpu() };
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &host).unwrap();
    assert!(p.host_shadow_map, "the colour draws sample the host's map");
    assert_eq!(p.shadow_view_proj, None, "vat draws no shadow pass of its own");
    assert!(p.depth.is_empty() && !p.colour.is_empty());
    let u = p.crowds[0].uniforms;
    assert_eq!((u.light_view_proj, u.shadow.strength, u.shadow.bias), (matrix, 0.6, 0.002));
    assert_eq!((u.shadow.cascades[0].normal_offset, u.sun_color), (0.05, [1.0, 0.5, 0.25]));
    assert_eq!(u.shadow, lookup.uniforms());
    // Shadows off: neither map is sampled.
    plan(&mut p, &mut [&mut f], &RenderOptions { shadows: false, ..host }).unwrap();
    assert!(!p.host_shadow_map && p.shadow_view_proj.is_none());
    assert_eq!(p.crowds[0].uniforms.shadow.count, 0);
    // Back to vat's own: its pass and its lookup.
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert!(!p.host_shadow_map && !p.depth.is_empty());
    let u = p.crowds[0].uniforms;
    assert_eq!(Some(u.light_view_proj), p.shadow_view_proj);
    assert_eq!((u.shadow.strength, u.shadow.bias), (gpu::SHADOW_STRENGTH, gpu::SHADOW_COMPARE_BIAS));
    assert_eq!((u.shadow.count, u.shadow.reverse_z, u.shadow.cascades[0].far_bound), (1, 0, f32::MAX));
}

#[test]
fn host_map_groups_are_kept_for_four_maps_and_the_least_recently_used_is_evicted() {
    let mut cache: HostMapCache<u32, String> = HostMapCache::default();
    let mut made = Vec::new();
    let mut evicted = Vec::new();
    let mut use_map = |cache: &mut HostMapCache<u32, String>, key: u32| {
        cache
            .get_or_insert::<()>(
                key,
                || {
                    made.push(key);
                    Ok(format!("groups over {key}"))
                },
                |v| evicted.push(v),
            )
            .unwrap()
            .clone()
    };
    for key in [1, 2, 1, 3, 4, 1] {
        assert_eq!(use_map(&mut cache, key), format!("groups over {key}"));
    }
    assert_eq!(cache.len(), HOST_SHADOW_MAPS_KEPT);
    // 2 is now the least recently used: a fifth map evicts it, not 1.
    use_map(&mut cache, 5);
    assert_eq!(cache.get(&2), None);
    assert!(cache.get(&1).is_some() && cache.get(&5).is_some());
    assert_eq!(made, [1, 2, 3, 4, 5], "a kept map is not made again");
    assert_eq!(evicted, ["groups over 2"]);
    let failed = cache.get_or_insert(9, || Err("device lost"), |_| panic!("nothing is evicted on failure"));
    assert_eq!(failed.unwrap_err(), "device lost");
    assert_eq!(cache.len(), HOST_SHADOW_MAPS_KEPT);
}

#[test]
fn prepared_crowds_accept_the_same_crowds_in_order_only() {
    let (a, b) = (fixture(2, 1, VertexFormat::Packed64), fixture(2, 1, VertexFormat::Packed64));
    let prepared = PreparedCrowds::new([a.crowd.id(), b.crowd.id()]);
    prepared.check([a.crowd.id(), b.crowd.id()]);
    let swapped = std::panic::catch_unwind(|| prepared.check([b.crowd.id(), a.crowd.id()]));
    assert!(swapped.is_err(), "another order panics");
    let fewer = std::panic::catch_unwind(|| prepared.check([a.crowd.id()]));
    assert!(fewer.is_err(), "fewer crowds panic");
}

/// The plan test manifest as a rigid asset: the same clips and LODs, a rigid animation instead of
/// the vertex animation.
fn rigid_manifest() -> Manifest {
    let mut m = manifest(2, VertexFormat::Packed64);
    m.vertex_animation = None;
    m.rigid_animation = Some(crate::container::RigidAnimation {
        layout: VertexTextureLayout { vertex_count: 5, frame_count: 30, width: 5, height: 30 },
        pivot_bounds: PositionBounds { min: [-0.3, 0.0, -0.2], extent: [0.6, 1.8, 0.4] },
        bounds: PositionBounds { min: [-1.0, 0.0, -1.0], extent: [2.0, 2.0, 2.0] },
        pieces: BlobId(0),
        vertex_layout: VertexTextureLayout { vertex_count: 100, frame_count: 1, width: 100, height: 1 },
        vertices: BlobId(1),
        piece_names: (0..5).map(|k| format!("piece {k}")).collect(),
    });
    m
}

#[test]
fn a_rigid_asset_draws_through_the_rigid_program_on_both_culling_paths() {
    let m = rigid_manifest();
    let index_count = m.lods.iter().map(|l| l.index_count).sum();
    let asset = AssetDrawInfo::new(&m, index_count, 0).unwrap();
    assert_eq!(asset.mode(), VatMode::Rigid);
    assert_eq!(asset.body_program(RenderMode::Vat), Program::Rigid);
    assert_eq!(asset.body_program(RenderMode::Rest), Program::Body(RenderMode::Rest));
    assert_eq!(asset.decode_entry_point(RenderMode::Vat), Some(gpu::ENTRY_POINT_DECODE_RIGID));
    assert_eq!(asset.decode_entry_point(RenderMode::Rest), None);
    // The crowd bounds instances by the rigid animation's vertex box.
    let crowd_asset = CrowdAsset::from_manifest(&m).unwrap();
    assert_eq!(crowd_asset.bounds, m.rigid_animation.as_ref().unwrap().bounds);
    let mut crowd = Crowd::new(crowd_asset, Default::default());
    for i in 0..12 {
        crowd.spawn([(i % 6) as f32 * 2.0 - 5.0, 0.0, -((i / 6) as f32) * 2.0], 0.0, 0);
    }
    let mut f = Fixture { sync: CrowdSync::new(crowd.id()), crowd, asset };
    for options in [cpu(), gpu_culled()] {
        let mut p = FramePlan::default();
        plan(&mut p, &mut [&mut f], &options).unwrap();
        let bodies: Vec<&Draw> = p.colour.iter().filter(|d| d.pipeline.program != Program::Ground).collect();
        assert!(!bodies.is_empty(), "{:?}: no colour draws", options.culling);
        assert!(bodies.iter().all(|d| d.pipeline.program == Program::Rigid), "{:?}", options.culling);
        assert!(!p.depth.is_empty(), "{:?}: shadows cast", options.culling);
        assert!(p.depth.iter().all(|d| d.pipeline.program == Program::Rigid));
        assert_eq!(p.depth[0].pipeline.vertex_entry_point(), gpu::ENTRY_POINT_VS_RIGID_DEPTH);
        assert_eq!(bodies[0].pipeline.vertex_entry_point(), gpu::ENTRY_POINT_VS_RIGID);
    }
    // Bone mode needs bones, which a rigid asset has none of.
    let mut p = FramePlan::default();
    let bone = RenderOptions { mode: RenderMode::Bone, ..cpu() };
    assert!(matches!(plan(&mut p, &mut [&mut f], &bone), Err(PlanError::AssetHasNoBones { .. })));
}

#[test]
fn user_data_uploads_only_what_changed() {
    let mut f = fixture(40, 3, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].user_data_writes, vec![0..40]);
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert!(p.crowds[0].user_data_writes.is_empty(), "nothing changed");
    f.crowd.set_user_data(7, [1, 2, 3, 4]);
    f.crowd.set_user_data(9, [0; 4]); // unchanged: not uploaded
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].user_data_writes, vec![7..8]);
    assert_eq!(f.crowd.user_data()[7], [1, 2, 3, 4]);
    assert!(p.crowds[0].record_writes.is_empty(), "user data leaves the records alone");
    // After the GPU copy is lost, everything again.
    f.sync.mark_unsynced();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    assert_eq!(p.crowds[0].user_data_writes, vec![0..40]);
}

/// The previous records a plan writes, by record index (the buffer index less the capacity).
fn previous_writes(c: &CrowdPlan, capacity: u32) -> Vec<(u32, InstanceRecord)> {
    let mut out = Vec::new();
    for (first, r) in &c.previous_record_writes {
        assert!(*first >= capacity, "previous record written at {first}, below the capacity {capacity}");
        for (k, rec) in c.previous_records[r.start as usize..r.end as usize].iter().enumerate() {
            out.push((first - capacity + k as u32, *rec));
        }
    }
    out
}

/// Every previous record `c` writes is `expected[i]`, and those of `must` are written. (Dirty
/// ranges merge across short clean gaps, so a few unchanged records may be written again, with the
/// value they already have.)
fn assert_previous(c: &CrowdPlan, capacity: u32, expected: &[InstanceRecord], must: &[u32]) {
    let written = previous_writes(c, capacity);
    for (i, r) in &written {
        assert_eq!(*r, expected[*i as usize], "previous record {i}");
    }
    for i in must {
        assert!(written.iter().any(|(k, _)| k == i), "previous record {i} is not written: {written:?}");
    }
}

#[test]
fn motion_vectors_keep_each_records_previous_frame_and_the_previous_camera_and_clock() {
    let mut f = fixture(6, 1, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    let motion = RenderOptions { motion_vectors: true, ..cpu() };
    let cam_a = camera();
    let cam_b = Camera::look_at([1.0, 2.0, 12.0], [0.0, 1.0, 0.0], 0.9, 1.0, 0.1, 500.0);
    let run = |p: &mut FramePlan, f: &mut Fixture, cam: &Camera, o: &RenderOptions| {
        let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
        p.plan(&mut inputs, cam, o, &LIMITS).unwrap();
    };

    // Frame 1: the buffers get a history half; every previous record is the current one, and the
    // previous camera and clock are this frame's.
    run(&mut p, &mut f, &cam_a, &motion);
    let c = &p.crowds[0];
    let capacity = c.grow.unwrap().records;
    assert!(c.grow.unwrap().history);
    assert_eq!(c.grow.unwrap().record_bytes(), u64::from(capacity) * 64 * 2);
    let frame1: Vec<InstanceRecord> = f.crowd.records().to_vec();
    let written = previous_writes(c, capacity);
    assert_eq!(written, frame1.iter().copied().enumerate().map(|(i, r)| (i as u32, r)).collect::<Vec<_>>());
    assert_eq!(c.uniforms.previous_records, capacity);
    assert_eq!(c.uniforms.previous_view_proj, cam_a.view_proj);
    assert_eq!(c.uniforms.previous_time, c.uniforms.time);
    assert!(p.motion_vectors);
    assert!(p.colour.iter().all(|d| d.pipeline.variant.motion_vectors));
    assert!(p.depth.iter().all(|d| !d.pipeline.variant.motion_vectors));
    assert_eq!(p.colour[0].pipeline.fragment_entry_point(), Some(gpu::ENTRY_POINT_FS_LIT_MOTION));
    assert_eq!(p.colour[0].pipeline.color_target_count(), 2);
    let t1 = c.uniforms.time;

    // Frame 2: instance 1 moves, instance 3 teleports with its history reset, the camera moves.
    f.crowd.advance(0.25);
    f.crowd.set_transform(1, [5.0, 0.0, 1.0], 0.3);
    f.crowd.set_transform(3, [-20.0, 0.0, 0.0], 0.0);
    f.crowd.reset_motion_history(3);
    run(&mut p, &mut f, &cam_b, &motion);
    let c = &p.crowds[0];
    assert_eq!(c.grow, None);
    // Moved: its old record; reset: its current one; the others keep theirs.
    let mut expected = frame1.clone();
    expected[3] = f.crowd.records()[3];
    assert_previous(c, capacity, &expected, &[1, 3]);
    assert!(previous_writes(c, capacity).len() < 6, "only the changed records are written");
    assert_eq!(c.uniforms.previous_view_proj, cam_a.view_proj);
    assert_eq!(c.uniforms.previous_time, t1);
    assert!(c.uniforms.time > t1);
    let frame2: Vec<InstanceRecord> = f.crowd.records().to_vec();

    // Frame 3: nothing changes, but the records written last frame get their frame-2 values as
    // their previous ones.
    run(&mut p, &mut f, &cam_b, &motion);
    let c = &p.crowds[0];
    assert_previous(c, capacity, &frame2, &[1, 3]);
    assert_eq!(c.uniforms.previous_view_proj, cam_b.view_proj);

    // Frame 4: nothing left to write; a camera cut forgets the previous camera.
    run(&mut p, &mut f, &cam_a, &RenderOptions { camera_cut: true, ..motion });
    let c = &p.crowds[0];
    assert!(c.previous_record_writes.is_empty());
    assert_eq!(c.uniforms.previous_view_proj, cam_a.view_proj);

    // A new instance's previous record is its current one.
    let id = f.crowd.spawn([2.0, 0.0, 0.0], 0.0, 0);
    run(&mut p, &mut f, &cam_a, &motion);
    let c = &p.crowds[0];
    assert_eq!(previous_writes(c, capacity), vec![(id, f.crowd.records()[id as usize])]);

    // Motion vectors off: no history, no previous writes, plain pipelines.
    f.crowd.set_transform(0, [1.0, 0.0, 0.0], 0.0);
    run(&mut p, &mut f, &cam_a, &cpu());
    let c = &p.crowds[0];
    assert!(c.previous_record_writes.is_empty());
    assert_eq!(c.uniforms.previous_records, 0);
    assert_eq!(c.uniforms.previous_view_proj, cam_a.view_proj);
    assert!(!p.motion_vectors);
    assert!(p.colour.iter().all(|d| !d.pipeline.variant.motion_vectors));
    // On again: the history starts over from the current records, written whole.
    run(&mut p, &mut f, &cam_b, &motion);
    let c = &p.crowds[0];
    let current = f.crowd.records().to_vec();
    assert_eq!(
        previous_writes(c, capacity),
        current.iter().copied().enumerate().map(|(i, r)| (i as u32, r)).collect::<Vec<_>>()
    );
    assert_eq!(c.uniforms.previous_view_proj, cam_b.view_proj);
}

#[test]
fn the_hosts_previous_camera_and_jitter_reach_the_uniforms() {
    let mut f = fixture(4, 1, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    let host_previous = Camera::look_at([3.0, 2.0, 12.0], [0.0, 1.0, 0.0], 0.9, 1.0, 0.1, 500.0).view_proj;
    let options = RenderOptions {
        motion_vectors: true,
        previous_view_proj: Some(host_previous),
        jitter: [0.25, f32::NAN],
        ..cpu()
    };
    // The host's previous camera, from the first frame on (no history of the crowd's own yet).
    plan(&mut p, &mut [&mut f], &options).unwrap();
    assert_eq!(p.crowds[0].uniforms.previous_view_proj, host_previous);
    assert_eq!(p.crowds[0].uniforms.jitter, [0.25, 0.0]);
    assert_eq!(p.crowds[0].uniforms.view_proj, camera().view_proj, "the camera stays unjittered");
    plan(&mut p, &mut [&mut f], &options).unwrap();
    assert_eq!(p.crowds[0].uniforms.previous_view_proj, host_previous);
    // A camera cut wins over it.
    plan(&mut p, &mut [&mut f], &RenderOptions { camera_cut: true, ..options }).unwrap();
    assert_eq!(p.crowds[0].uniforms.previous_view_proj, camera().view_proj);
    // Without it, the crowd's last camera.
    let other = Camera::look_at([0.0, 5.0, 12.0], [0.0, 1.0, 0.0], 0.9, 1.0, 0.1, 500.0);
    let mut inputs = [PlanCrowd { crowd: &mut f.crowd, asset: &f.asset, sync: &mut f.sync }];
    p.plan(&mut inputs, &other, &RenderOptions { previous_view_proj: None, ..options }, &LIMITS).unwrap();
    assert_eq!(p.crowds[0].uniforms.previous_view_proj, camera().view_proj);
    assert_eq!(RenderOptions::default().jitter, [0.0; 2]);
}

#[test]
fn a_prepass_draws_the_colour_draws_in_prepass_pipelines() {
    use crate::pipeline::{PipelineState, PrepassTargets};
    let mut f = fixture(30, 3, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    let options = RenderOptions { ground: true, motion_vectors: true, ..cpu() };
    plan(&mut p, &mut [&mut f], &options).unwrap();
    assert!(p.colour.len() >= 2 && p.colour[0].pipeline.program == Program::Ground);
    for targets in [
        PrepassTargets { normal: true, motion: true },
        PrepassTargets { normal: true, motion: false },
        PrepassTargets { normal: false, motion: true },
        PrepassTargets::default(),
    ] {
        let draws = p.prepass_draws(targets);
        assert_eq!(draws.len(), p.colour.len());
        for (pre, colour) in draws.iter().zip(&p.colour) {
            // Same resources, geometry, program, LOD and fade: the same instances and positions.
            assert_eq!((pre.resources, &pre.geometry), (colour.resources, &colour.geometry));
            assert_eq!(pre.pipeline.program, colour.pipeline.program);
            assert_eq!(pre.pipeline.variant.cross_fade, colour.pipeline.variant.cross_fade);
            assert_eq!(pre.pipeline.pass, PassKind::Prepass(targets));
            assert_eq!(pre.pipeline.variant.motion_vectors, targets.motion);
            assert_eq!(pre.pipeline.vertex_entry_point(), colour.pipeline.vertex_entry_point());
            let conventions = crate::pipeline::PassConventions::REVERSE_Z;
            assert_eq!(pre.pipeline.state_in(&conventions), colour.pipeline.state_in(&conventions));
            assert!(!PipelineState::for_pass(pre.pipeline.pass, &conventions).depth_bias.is_enabled());
        }
    }
    // The colour pass after a prepass that wrote the motion: the same draws, colour alone.
    let plain = p.colour_draws(false);
    assert!(plain.iter().zip(&p.colour).all(|(a, b)| a.pipeline == b.pipeline.with_motion_target(false)));
    assert!(plain.iter().all(|d| d.pipeline.color_target_count() == 1));
    assert!(matches!(p.colour_draws(true), std::borrow::Cow::Borrowed(_)));
    p.check_motion_attachment(false);
    p.check_motion_attachment(true);
}

#[test]
#[should_panic(expected = "prepared with motion_vectors = false")]
fn a_motion_attachment_needs_a_frame_with_motion_vectors() {
    let mut f = fixture(3, 1, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &cpu()).unwrap();
    p.check_motion_attachment(false);
    assert!(matches!(p.colour_draws(false), std::borrow::Cow::Borrowed(_)));
    p.check_motion_attachment(true);
}

#[test]
fn a_failed_frame_starts_the_motion_history_over() {
    let mut f = fixture(3, 1, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    let motion = RenderOptions { motion_vectors: true, ..cpu() };
    plan(&mut p, &mut [&mut f], &motion).unwrap();
    f.crowd.set_transform(0, [3.0, 0.0, 0.0], 0.0);
    f.sync.mark_unsynced();
    plan(&mut p, &mut [&mut f], &motion).unwrap();
    let c = &p.crowds[0];
    let capacity = c.grow.unwrap().records;
    // The buffers are new and the history is gone: every previous record is the current one.
    let current = f.crowd.records().to_vec();
    assert_eq!(
        previous_writes(c, capacity),
        current.iter().copied().enumerate().map(|(i, r)| (i as u32, r)).collect::<Vec<_>>()
    );
}

#[test]
fn ranges_merge_where_they_overlap_or_touch() {
    assert_eq!(merge_ranges(vec![5..7, 0..2, 2..3, 6..9, 4..4, 11..12]), vec![0..3, 5..9, 11..12]);
    assert!(merge_ranges(vec![]).is_empty());
}

#[test]
fn a_gpu_culled_frame_records_growth_writes_resets_dispatches_and_counts_in_order() {
    let mut f = fixture(20, 2, VertexFormat::Packed64);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let mut commands = Vec::new();
    p.record(&mut commands);
    let at = |want: &dyn Fn(&Command) -> bool| commands.iter().position(want).unwrap();
    let grow = at(&|c| matches!(c, Command::GrowCrowd { crowd: 0, .. }));
    let records = at(&|c| matches!(c, Command::Write { target: BufferId::Records { crowd: 0 }, .. }));
    let reset = at(&|c| matches!(c, Command::Copy { to: BufferId::DrawArgs { crowd: 0 }, .. }));
    let cull = at(&|c| matches!(c, Command::Dispatch(Dispatch::Cull { crowd: 0, .. })));
    let counts = at(&|c| matches!(c, Command::CopyCounts { crowd: 0 }));
    assert!(grow < records && records < reset && reset < cull && cull < counts, "{commands:#?}");
    // Every write's bytes come from the plan or the crowd, and the record write covers them all.
    let Command::Write { data, offset: 0, .. } = &commands[records] else { panic!("{commands:#?}") };
    assert_eq!(p.bytes(Some((0, &f.crowd)), data).len(), 20 * size_of::<InstanceRecord>());
    // With the default built-in shadows, the shadow pass (of the plan's depth draws) is last.
    assert_eq!(commands.last(), Some(&Command::ShadowPass));
    assert!(!p.depth.is_empty());
}

#[test]
fn a_missing_resource_is_an_error_naming_it() {
    let e = FrameError::from(Missing::Buffer(BufferId::DrawArgs { crowd: 2 }));
    assert!(e.to_string().contains("DrawArgs { crowd: 2 }"), "{e}");
}

/// [`fixture`] with an impostor tier of sphere radius `radius` (tile 64: the switch at
/// `format::impostor::switch_distance(radius, 64)`, about 29 m per metre of radius).
fn fixture_with_tier(n: u32, lods: u32, radius: f32) -> Fixture {
    use crate::format::impostor::{ImpostorBound, ImpostorTier, ViewCoverage, ViewGrid};
    let mut m = manifest(lods, VertexFormat::Packed64);
    m.impostors = Some(ImpostorTier {
        grid: ViewGrid::new(8, ViewCoverage::Hemi).unwrap(),
        tile_size: 64,
        frames_per_clip: vec![4],
        centre: [0.0, 0.9, 0.0],
        radius,
        mip_levels: 7,
        color: BlobId(1),
        normal_depth: BlobId(2),
        bound: ImpostorBound { min_coverage_iou: 0.5, max_mean_color_error: 0.1 },
    });
    fixture_of(&m, n)
}

/// The impostor card draws of a plan: `(indirect draw offset or first batch instance, views)`.
fn card_draws(draws: &[Draw]) -> Vec<(u64, ImpostorViews)> {
    draws
        .iter()
        .filter(|d| d.pipeline.program == Program::Impostor)
        .map(|d| {
            let at = match &d.geometry {
                DrawGeometry::IndexedIndirect { offset } => *offset,
                DrawGeometry::Indexed { instances, .. } => u64::from(instances.start),
                g => panic!("{g:?}"),
            };
            (at, d.pipeline.variant.impostor_views)
        })
        .collect()
}

#[test]
fn gpu_culled_cards_have_a_near_draw_of_three_views_and_a_far_draw_of_one() {
    use crate::pipeline::ImpostorViews::{One, PerCard, Three};
    let mut f = fixture_with_tier(100, 3, 1.0);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    let c = &p.crowds[0];
    let template = c.args_template.as_ref().expect("first frame writes the template");
    let words = gpu::DRAW_ARGS_WORDS as usize;
    // The near cards two triangles each, the far cards one.
    let indices = [(3u32, gpu::IMPOSTOR_CARD_INDICES.len() as u32), (4, gpu::IMPOSTOR_ONE_VIEW_INDEX_COUNT)];
    for (slot, count) in indices {
        let args = &template[slot as usize * words..(slot as usize + 1) * words];
        assert_eq!((args[0], args[4]), (count, slot * 128), "slot {slot}: {args:?}");
    }
    assert_eq!(f.sync.gpu_lods(), 5, "three mesh LODs, the near cards, the far cards");
    let u = c.uniforms;
    assert_eq!((u.impostor_slot, u.impostor_far_slot), (3, 4));
    let at = |slot: u64| slot * DRAW_ARGS_STRIDE;
    assert_eq!(card_draws(&p.colour), vec![(at(3), Three), (at(4), One)]);
    // Shadows reach the cards' draw only when shadow_max_lod does (default 1): none here.
    assert_eq!(card_draws(&p.depth), vec![]);

    // Seven mesh LODs leave one draw: every card in it, each choosing its views.
    let mut f = fixture_with_tier(100, 7, 1.0);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    assert_eq!(card_draws(&p.colour), vec![(at(7), PerCard)]);
    assert_eq!((p.crowds[0].uniforms.impostor_slot, p.crowds[0].uniforms.impostor_far_slot), (7, 0));
    assert_eq!(f.sync.gpu_lods(), 8);
    // Eight leave none: no cards.
    let mut f = fixture_with_tier(100, 8, 1.0);
    let mut p = FramePlan::default();
    plan(&mut p, &mut [&mut f], &gpu_culled()).unwrap();
    assert_eq!(card_draws(&p.colour), vec![]);
    assert_eq!(f.sync.gpu_lods(), 8);
}

#[test]
fn cpu_culled_cells_wholly_in_the_one_view_range_draw_with_the_one_view_pipeline() {
    use crate::format::impostor::{SINGLE_VIEW_LEVEL, switch_distance};
    use crate::pipeline::ImpostorViews::{One, PerCard};
    // The crowd stands 12 to 210 m from the camera: one view from 2.3 m on (all cells), from
    // about 20 m on (the far cells), from 580 m on (none).
    for (radius, expected) in [(0.02, vec![One]), (0.17, vec![PerCard, One]), (5.0, vec![PerCard])] {
        let one_view_from = switch_distance(radius, 64) * SINGLE_VIEW_LEVEL.exp2();
        let mut f = fixture_with_tier(1000, 3, radius);
        let mut p = FramePlan::default();
        plan(&mut p, &mut [&mut f], &cpu()).unwrap();
        let mut views: Vec<ImpostorViews> = Vec::new();
        for (_, v) in card_draws(&p.colour) {
            if !views.contains(&v) {
                views.push(v);
            }
        }
        views.sort_by_key(|v| v.code());
        assert_eq!(views, expected, "radius {radius}: one view from {one_view_from} m");
        // Every card of the crowd is in one batch or the other.
        let cards: u32 = p
            .colour
            .iter()
            .filter(|d| d.pipeline.program == Program::Impostor)
            .map(|d| match &d.geometry {
                DrawGeometry::Indexed { instances, .. } => instances.len() as u32,
                g => panic!("{g:?}"),
            })
            .sum();
        assert_eq!(cards, 1000, "radius {radius}");
        // One triangle per card drawn from one view, two otherwise.
        for d in p.colour.iter().filter(|d| d.pipeline.program == Program::Impostor) {
            let DrawGeometry::Indexed { indices, .. } = &d.geometry else { unreachable!() };
            let one = d.pipeline.variant.impostor_views == One;
            assert_eq!(indices.len(), if one { 3 } else { 6 }, "{d:?}");
        }
    }
}
