//! The scene with vat-bevy: one `VatCrowd` of `N` instances of `humanoid.vat` (the file the OpenVAT
//! export was written from), each playing the looping `walk` clip from its own phase, with vat-bevy's
//! defaults (CPU culling per grid cell, LODs by distance, the crowd casting into Bevy's cascades and
//! receiving them).
//!
//! `--single-lod`: the same file, every character at LOD 0 (`CrowdConfig::lod_bias = -64`: every
//! distance is seen as 2^-64 of itself, below the first switch distance), so it draws the triangles
//! of the exported mesh (LOD 0), as bevy_open_vat does; with a single LOD every visible character
//! also casts a shadow (`shadow_max_lod` is reached by LOD 0).

use std::time::Duration;

use bevy::prelude::*;
use open_vat_compare as bench;
use vat_bevy::{VatAsset, VatCrowd, VatPlugin, VatRenderSettings};
use vat_core::crowd::{Camera as VatCamera, Crowd, CrowdConfig};

fn main() {
    let args = bench::parse_args("vat_bevy", true);
    let path = args.assets.join("humanoid.vat");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("vat_bevy: {}: {e}", path.display());
        std::process::exit(1)
    });
    let asset = VatAsset::from_bytes(bytes).unwrap_or_else(|e| {
        eprintln!("vat_bevy: {}: {e}", path.display());
        std::process::exit(1)
    });
    let walk = asset.clip_index(bench::CLIP).unwrap_or_else(|| {
        eprintln!("vat_bevy: {} has no clip {:?}", path.display(), bench::CLIP);
        std::process::exit(1)
    });
    let lod_triangles: Vec<u32> = asset.crowd_asset().lod_triangles.clone();
    let config = CrowdConfig {
        lod_bias: if args.single_lod { -64.0 } else { 0.0 },
        cross_fade: !args.no_cross_fade,
        ..default()
    };
    let n = args.instances;
    let spawn = |crowd: &mut Crowd| {
        for i in 0..n {
            let (p, heading, phase) = bench::character(i, n);
            crowd.spawn_at_phase(p.to_array(), heading, walk, phase);
        }
    };

    let mut app = bench::base_app(&args.assets);
    app.add_plugins(VatPlugin);
    bench::finish(&mut app);
    {
        let mut settings = app.world_mut().resource_mut::<VatRenderSettings>();
        if args.gpu_culling {
            settings.culling = vat_bevy::Culling::Gpu;
        }
        settings.cast_bevy_shadows = !args.no_cast;
        settings.shadows = !args.no_receive;
    }
    let adapter = bench::adapter_name(&app);
    let target = bench::spawn_scene(&mut app, &args);
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset.clone());
    let crowd = VatCrowd::with_asset(handle, &asset, config);
    if let Some(mut c) = crowd.crowd() {
        spawn(&mut c);
    }
    app.world_mut().spawn(crowd);
    // The crowd is built at once and uploaded in the first frame.
    let frames = bench::measure(&mut app, &args, Duration::from_secs(600), |_| true);

    // What vat culls and draws from this camera: the same crowd planned by vat-core outside Bevy
    // (the render world's plan is not exposed), with Bevy's projection (vertical fov pi/4, near 0.1).
    let mut reference = Crowd::new(asset.crowd_asset().clone(), config);
    spawn(&mut reference);
    let camera = VatCamera::look_at_reverse_z(
        bench::EYE.to_array(),
        bench::TARGET.to_array(),
        std::f32::consts::FRAC_PI_4,
        args.size.x as f32 / args.size.y as f32,
        0.1,
    )
    .with_viewport(args.size.y, std::f32::consts::FRAC_PI_4);
    let s = reference.prepare_frame(&camera).stats;
    // What vat draws into each of Bevy's cascades: whole grid cells that meet the cascade's frustum.
    let per_cascade: Vec<u32> = bench::cascade_matrices(&mut app)
        .iter()
        .map(|m| reference.cull_view(&m.to_cols_array_2d(), &camera).instances)
        .collect();
    eprintln!(
        "vat_bevy{}: adapter {adapter}; LOD triangles {lod_triangles:?}; drawn {} of {n}, {} main-pass triangles, \
         {} main draws, far pool {}; characters per shadow cascade {per_cascade:?}",
        args.variant(),
        s.drawn,
        s.triangles,
        s.draws_main,
        s.far_pool_instances
    );
    let casters = per_cascade.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
    bench::report(
        "vat_bevy",
        &args,
        &frames,
        &format!(
            "visible={} triangles_per_character={} main_triangles={} cascade_casters={casters}",
            s.drawn, lod_triangles[0], s.triangles
        ),
    );
    bench::save_screenshot(&mut app, &args, &target);
}
