//! Root motion in the ECS without a GPU: a crowd's reported moves in its `VatRootMotion`
//! component, replaced each frame, and `VatInstance` entities with `root_motion` moved by their
//! clips (the `Transform` moves, the record follows it).

#![allow(clippy::unwrap_used)] // Tests.

use std::sync::OnceLock;
use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use vat_bevy::{VatAsset, VatCrowd, VatInstance, VatPlugin, VatRootMotion};
use vat_core::crowd::{CrowdConfig, RootMotionMode};
use vat_core::root_motion::RootPose;

/// The humanoid whose walk travels 1.2 m/s along +Z while turning 0.25 rad/s, baked with root
/// motion (walk and idle, one LOD): its walk's track is that motion, its frames in place.
fn travelling() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut rig = vat_procgen::humanoid();
        let walk = rig.clips.iter().position(|c| c.name == "walk").unwrap();
        vat_bake::root_motion::add_root_motion(&mut rig, walk, 60.0, |t| RootPose {
            x: 0.0,
            z: 1.2 * t,
            yaw: 0.25 * t,
        })
        .unwrap();
        let options = vat_bake::prepare::BakeOptions {
            clips: Some(vec!["walk".into(), "idle".into()]),
            lods: vat_bake::lods::LodOptions::Count(1),
            root_motion: true,
            ..Default::default()
        };
        vat_bake::prepare::prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
    })
}

/// An app without a GPU, stepping 50 ms a frame, with one crowd of the travelling humanoid.
fn app() -> (App, Entity, VatAsset) {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default(), TransformPlugin, VatPlugin))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(50)));
    let asset = VatAsset::from_bytes(travelling().to_vec()).unwrap();
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset.clone());
    let crowd = app.world_mut().spawn(VatCrowd::with_asset(handle, &asset, CrowdConfig::default())).id();
    (app, crowd, asset)
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol
}

/// Reporting instances of a bulk crowd: each frame the component holds that frame's moves, one
/// per reporting instance, sorted by instance, each the move the crowd computes for the frame's
/// step; the records stay put; an applying instance moves and is not reported.
#[test]
fn the_crowd_s_component_holds_each_frame_s_moves() {
    let (mut app, crowd, asset) = app();
    let walk = asset.clip_index("walk").unwrap();
    assert!(asset.crowd_asset().root_motion.iter().any(|t| t.clip == walk && t.cycle.distance() > 1.0));
    app.update();
    {
        let entity = app.world().get::<VatCrowd>(crowd).unwrap();
        let mut c = entity.crowd().unwrap();
        for i in 0..100u32 {
            let id = c.spawn([i as f32, 0.0, 0.0], 0.1 * i as f32, walk);
            c.set_scale(id, 1.0 + 0.01 * i as f32);
        }
        // Set in descending order: reported in ascending order all the same.
        for i in (0..100).rev().filter(|i| i % 10 != 0) {
            c.set_root_motion_mode(i, RootMotionMode::Report);
        }
        c.set_root_motion_mode(10, RootMotionMode::Apply);
    }
    let reporting: Vec<u32> = (0..100).filter(|i| i % 10 != 0).collect();
    for frame in 0..30 {
        let (records, t0) = {
            let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
            (c.records().to_vec(), c.shader_time())
        };
        app.update();
        let motion = app.world().get::<VatRootMotion>(crowd).unwrap();
        let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
        let t1 = c.shader_time();
        assert!(t1 > t0);
        let ids: Vec<u32> = motion.deltas().iter().map(|d| d.instance).collect();
        assert_eq!(ids, reporting, "frame {frame}: this frame's moves only, sorted");
        assert_eq!(motion.dropped(), 0);
        for &i in &reporting {
            let d = motion.of(i);
            assert_eq!(d.len(), 1);
            let d = d[0];
            assert_eq!(d.local, c.root_motion_delta(i, t0, t1), "frame {frame} instance {i}");
            assert_eq!(d.to_time, c.clock().now());
            // World move: scaled by the instance scale, turned by its yaw.
            let r = records[i as usize];
            let (s, co) = r.yaw.sin_cos();
            let (x, z) = (d.local.x * r.scale, d.local.z * r.scale);
            assert!(
                close(d.translation[0], co * x + s * z, 1e-6)
                    && close(d.translation[1], co * z - s * x, 1e-6)
            );
            assert!(d.translation[0].hypot(d.translation[1]) > 0.03, "{d:?}: the walk travels 1.2 m/s");
            assert_eq!(c.records()[i as usize].position, r.position, "report only: the record stays");
        }
        assert_ne!(c.records()[10].position, records[10].position, "applied");
        assert!(motion.of(10).is_empty() && motion.of(0).is_empty());
    }
}

/// A `VatInstance` with `root_motion` walks: over one whole walk cycle its `Transform` moves by
/// the track's cycle (1.2 m ahead along its heading, a 0.25 rad turn), the record follows the
/// transform, a hot reload keeps it walking, and turning the option off stops it.
#[test]
fn an_instance_entity_is_moved_by_its_clips() {
    let (mut app, crowd, asset) = app();
    let walk = asset.clip_index("walk").unwrap();
    let yaw0 = 0.6f32;
    let start = Vec3::new(3.0, 0.0, 4.0);
    let one = app
        .world_mut()
        .spawn((
            VatInstance::new(crowd, walk).with_root_motion(true),
            Transform::from_translation(start).with_rotation(Quat::from_rotation_y(yaw0)),
        ))
        .id();
    // Spawned into the crowd (in report mode) at the end of the first frame.
    app.update();
    let t0 = {
        let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
        assert_eq!(c.count(), 1);
        assert_eq!(c.root_motion_mode(0), RootMotionMode::Report);
        c.shader_time()
    };
    assert_eq!(app.world().get::<Transform>(one).unwrap().translation, start);
    // The walk's cycle is 1 s: 20 frames of 50 ms.
    let cycle = asset.crowd_asset().clips[walk as usize].duration;
    assert!(close(cycle, 1.0, 1e-6), "{cycle}");
    let track = asset.crowd_asset().root_motion.iter().find(|t| t.clip == walk).unwrap().cycle;
    assert!(close(track.z, 1.2, 0.02) && close(track.yaw, 0.25, 0.02), "{track:?}");
    for _ in 0..20 {
        app.update();
    }
    let transform = *app.world().get::<Transform>(one).unwrap();
    let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
    let moved = c.root_motion_delta(0, t0, c.shader_time());
    // One cycle, up to the clock's rounding.
    for (got, want) in [(moved.x, track.x), (moved.z, track.z), (moved.yaw, track.yaw)] {
        assert!(close(got, want, 1e-4), "{moved:?} vs {track:?}");
    }
    let (s, co) = yaw0.sin_cos();
    let expected = start + Vec3::new(co * moved.x + s * moved.z, 0.0, co * moved.z - s * moved.x);
    assert!(transform.translation.distance(expected) < 1e-4, "{} vs {expected}", transform.translation);
    let (yaw, _, _) = transform.rotation.to_euler(EulerRot::YXZ);
    assert!(close(yaw, yaw0 + moved.yaw, 1e-4), "{yaw} vs {}", yaw0 + moved.yaw);
    // The record follows the transform.
    let r = c.records()[0];
    assert_eq!(r.position, transform.translation.to_array());
    assert!(close(r.yaw, yaw, 1e-6));
    drop(c);

    // A hot reload rebuilds the crowd: the instance keeps its report mode and walks on.
    let handle = app.world().get::<VatCrowd>(crowd).unwrap().asset().clone();
    let reloaded = VatAsset::from_bytes(travelling().to_vec()).unwrap();
    app.world_mut().resource_mut::<Assets<VatAsset>>().insert(handle.id(), reloaded).unwrap();
    app.update();
    let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
    assert_eq!(c.root_motion_mode(0), RootMotionMode::Report, "carried over the rebuild");
    drop(c);
    app.update();
    let after = app.world().get::<Transform>(one).unwrap().translation;
    assert!(after.distance(transform.translation) > 0.03, "walks on: {after}");

    // Off: the crowd stops reporting and the entity stays where it is.
    app.world_mut().get_mut::<VatInstance>(one).unwrap().root_motion = false;
    app.update();
    let here = *app.world().get::<Transform>(one).unwrap();
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(*app.world().get::<Transform>(one).unwrap(), here);
    let c = app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap();
    assert_eq!(c.root_motion_mode(0), RootMotionMode::Off);
    assert!(app.world().get::<VatRootMotion>(crowd).unwrap().deltas().is_empty());
}
