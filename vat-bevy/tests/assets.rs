//! `.vat` assets and crowds in the ECS without a GPU: the typed error of a bad file, crowds built
//! when their asset arrives and rebuilt (instance ids kept) when it is replaced, as a hot reload
//! does, and animation events as Bevy messages.

#![allow(clippy::unwrap_used)] // Tests.

use std::time::Duration;

use bevy::asset::AssetPlugin;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use vat_bevy::{
    VatAnimationEvent, VatAsset, VatBevyError, VatCrowd, VatCrowdRebuilt, VatInstance, VatPlugin,
};
use vat_core::crowd::CrowdConfig;
use vat_core::instance::PlayMode;

fn humanoid() -> Vec<u8> {
    let rig = vat_procgen::humanoid();
    let options =
        vat_bake::prepare::BakeOptions { lods: vat_bake::lods::LodOptions::Count(1), ..Default::default() };
    vat_bake::prepare::prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
}

#[test]
fn a_bad_file_is_a_typed_error() {
    let e = VatAsset::from_bytes(b"not a vat file".to_vec()).unwrap_err();
    assert!(matches!(e, VatBevyError::Asset(_)), "{e:?}");
}

#[test]
fn crowds_are_built_rebuilt_on_reload_and_send_events() {
    let bytes = humanoid();
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default(), VatPlugin))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(100)));
    let asset = VatAsset::from_bytes(bytes.clone()).unwrap();
    let wave = asset.clip_index("wave").unwrap();
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset);
    let entity = app
        .world_mut()
        .spawn(VatCrowd::new(handle.clone(), CrowdConfig { record_events: true, ..default() }))
        .id();
    assert!(app.world().get::<VatCrowd>(entity).unwrap().crowd().is_none(), "built before any update");
    app.update();
    {
        let crowd = app.world().get::<VatCrowd>(entity).unwrap();
        let mut c = crowd.crowd().expect("built at the first update");
        for i in 0..1000 {
            let id = c.spawn([i as f32, 0.0, 0.0], 0.0, 0);
            c.set_tint(id, [0.5, 0.25, 1.0]);
        }
        c.despawn(7);
        c.play_as(3, wave, 0.0, PlayMode::Once);
    }
    let rebuilt: Vec<VatCrowdRebuilt> =
        app.world_mut().resource_mut::<Messages<VatCrowdRebuilt>>().drain().collect();
    assert_eq!(rebuilt, [VatCrowdRebuilt { crowd: entity, instances: 0 }]);

    // The wave (2 s, once) ends: an event for instance 3, as a message.
    let mut events: Vec<VatAnimationEvent> = Vec::new();
    for _ in 0..30 {
        app.update();
        events.extend(app.world_mut().resource_mut::<Messages<VatAnimationEvent>>().drain());
    }
    assert!(
        events.iter().any(|e| e.crowd == entity && e.event.instance == 3 && e.event.clip == wave),
        "{events:?}"
    );

    // A reload replaces the asset (new bytes): the crowd is rebuilt with the same instances.
    let reloaded = VatAsset::from_bytes(bytes).unwrap();
    app.world_mut().resource_mut::<Assets<VatAsset>>().insert(handle.id(), reloaded).unwrap();
    app.update();
    let rebuilt: Vec<VatCrowdRebuilt> =
        app.world_mut().resource_mut::<Messages<VatCrowdRebuilt>>().drain().collect();
    assert_eq!(rebuilt, [VatCrowdRebuilt { crowd: entity, instances: 1000 }]);
    let crowd = app.world().get::<VatCrowd>(entity).unwrap();
    let c = crowd.crowd().unwrap();
    assert_eq!(c.count(), 1000);
    assert_eq!(c.records()[42].position, [42.0, 0.0, 0.0]);
    assert_eq!(c.records()[42].tint, [0.5, 0.25, 1.0]);
    assert_ne!(c.records()[7].variant_bits & vat_core::instance::VARIANT_HIDDEN, 0, "hidden stays hidden");
}

#[test]
fn instances_as_entities_follow_their_transform() {
    let bytes = humanoid();
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default(), TransformPlugin, VatPlugin));
    let asset = VatAsset::from_bytes(bytes).unwrap();
    let walk = asset.clip_index("walk").unwrap();
    let handle = app.world_mut().resource_mut::<Assets<VatAsset>>().add(asset.clone());
    let crowd = app.world_mut().spawn(VatCrowd::with_asset(handle, &asset, CrowdConfig::default())).id();
    let one = app
        .world_mut()
        .spawn((
            VatInstance::new(crowd, 0),
            Transform::from_xyz(3.0, 0.0, 4.0).with_rotation(Quat::from_rotation_y(1.0)),
        ))
        .id();
    app.update();
    let record = |app: &App| app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap().records()[0];
    assert_eq!(app.world().get::<VatCrowd>(crowd).unwrap().crowd().unwrap().count(), 1);
    assert_eq!(record(&app).position, [3.0, 0.0, 4.0]);
    assert!((record(&app).yaw - 1.0).abs() < 1e-5, "yaw {}", record(&app).yaw);

    app.world_mut().get_mut::<Transform>(one).unwrap().translation.x = -2.0;
    app.world_mut().get_mut::<VatInstance>(one).unwrap().clip = walk;
    app.update();
    assert_eq!(record(&app).position, [-2.0, 0.0, 4.0]);
    assert_eq!(record(&app).clip_b_index(), walk, "the walk fades in");

    app.world_mut().despawn(one);
    app.update();
    assert_ne!(record(&app).variant_bits & vat_core::instance::VARIANT_HIDDEN, 0, "despawned");
}
