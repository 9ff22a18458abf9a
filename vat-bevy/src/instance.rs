//! Instances as entities, for small crowds: [`VatInstance`] with a `Transform`.

use std::collections::HashMap;

use bevy::prelude::*;
use vat_core::crowd::{InstanceId, RootMotionMode};

use crate::VatCrowd;
use crate::timing::VatCpuTime;

/// One instance of a [`VatCrowd`] as an entity, placed by its `GlobalTransform` (translation,
/// heading about +Y, uniform scale from `x`), for small crowds and characters the game handles
/// one by one. Each costs what an entity costs and is synced every frame it moves: for thousands,
/// drive the crowd in bulk through [`VatCrowd::crowd`] instead.
///
/// Spawned into the crowd once the crowd is built, in `PostUpdate` after transform propagation;
/// changing [`clip`](Self::clip) cross-fades to it over [`fade_seconds`](Self::fade_seconds);
/// despawning the entity (or removing the component) despawns the instance.
///
/// With [`root_motion`](Self::root_motion) the instance's clips move the entity: its `Transform`
/// stays the source of truth (see the field).
#[derive(Component, Debug, Clone, PartialEq)]
#[require(Transform)]
pub struct VatInstance {
    /// The crowd's entity.
    pub crowd: Entity,
    /// The clip to play (looping as baked).
    pub clip: u32,
    /// Cross-fade of a clip change, seconds.
    pub fade_seconds: f32,
    /// Move the entity by its clips' root motion (default off). The instance then runs in
    /// `RootMotionMode::Report`: each `PreUpdate`, right after the crowd advanced, the move its
    /// clips made over the frame (the crowd's [`crate::VatRootMotion`]) is added to the entity's
    /// `Transform` (world x and z, metres; a turn about +Y, radians), so `Update` systems see
    /// the entity where its clips took it and may correct it (collision, navigation); the
    /// transform is then written back to the record as any move is. The move is in world space:
    /// give such an entity no parent, or one that only translates. Off: the crowd's root-motion
    /// mode of the instance is set back to `Off`.
    pub root_motion: bool,
    id: Option<InstanceId>,
    played: Option<u32>,
    /// The `root_motion` last given to the crowd (`None`: not yet).
    root_motion_set: Option<bool>,
}

impl VatInstance {
    /// An instance of `crowd` playing `clip`, clip changes cross-faded over 0.25 s, root motion
    /// off.
    pub fn new(crowd: Entity, clip: u32) -> Self {
        Self {
            crowd,
            clip,
            fade_seconds: 0.25,
            root_motion: false,
            id: None,
            played: None,
            root_motion_set: None,
        }
    }

    /// The same instance with [`root_motion`](Self::root_motion) set to `on`.
    pub fn with_root_motion(mut self, on: bool) -> Self {
        self.root_motion = on;
        self
    }

    /// Its id in the crowd, once spawned there.
    pub fn id(&self) -> Option<InstanceId> {
        self.id
    }
}

/// `PostUpdate`, after transform propagation: spawns new instances, moves the moved ones, plays
/// changed clips, sets changed root-motion modes, despawns the removed ones.
pub(crate) fn sync_instances(
    mut instances: Query<(Entity, &mut VatInstance, Ref<GlobalTransform>)>,
    crowds: Query<&VatCrowd>,
    mut removed: RemovedComponents<VatInstance>,
    mut owners: Local<HashMap<Entity, (Entity, InstanceId)>>,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    for entity in removed.read() {
        if let Some((crowd, id)) = owners.remove(&entity)
            && let Some(mut c) = crowds.get(crowd).ok().and_then(VatCrowd::crowd)
            && id < c.count()
        {
            c.despawn(id);
        }
    }
    for (entity, mut instance, transform) in &mut instances {
        let fresh = instance.id.is_none();
        if !fresh && !transform.is_changed() && !instance.is_changed() {
            continue;
        }
        let Some(mut c) = crowds.get(instance.crowd).ok().and_then(VatCrowd::crowd) else { continue };
        let clips = c.asset().clips.len() as u32;
        if instance.clip >= clips {
            warn_once!("vat-bevy: VatInstance clip {} out of range ({clips} clips)", instance.clip);
            continue;
        }
        let (scale, rotation, translation) = transform.to_scale_rotation_translation();
        let (yaw, _, _) = rotation.to_euler(EulerRot::YXZ);
        let p = translation.to_array();
        let instance = instance.bypass_change_detection();
        let id = match instance.id {
            Some(id) if id < c.count() => id,
            _ => {
                let id = c.spawn(p, yaw, instance.clip);
                instance.id = Some(id);
                instance.played = Some(instance.clip);
                instance.root_motion_set = None;
                owners.insert(entity, (instance.crowd, id));
                id
            }
        };
        c.set_transform(id, p, yaw);
        c.set_scale(id, scale.x);
        if instance.played != Some(instance.clip) {
            c.play(id, instance.clip, instance.fade_seconds);
            instance.played = Some(instance.clip);
        }
        if instance.root_motion_set != Some(instance.root_motion) {
            // A fresh instance without root motion keeps the crowd's default (`Off`), and any mode
            // the game gave its id through the bulk API is left alone until the field changes.
            if instance.root_motion || instance.root_motion_set.is_some() {
                let mode = if instance.root_motion { RootMotionMode::Report } else { RootMotionMode::Off };
                c.set_root_motion_mode(id, mode);
            }
            instance.root_motion_set = Some(instance.root_motion);
        }
    }
}
