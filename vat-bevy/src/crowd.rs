//! Crowds in the ECS: the [`VatCrowd`] component (one entity per crowd, any number of instances in
//! it), the per-frame clock step, animation events as Bevy messages, root-motion moves in the
//! crowd's [`VatRootMotion`], and the rebuild after a hot reload.

use std::sync::{Arc, Mutex, MutexGuard};

use bevy::prelude::*;
use vat_core::crowd::{AnimationEvent, Crowd, CrowdConfig};

use crate::timing::VatCpuTime;
use crate::{VatAsset, VatRootMotion};

/// A crowd of one [`VatAsset`]: any number of instances (100,000 and more), each a 64-byte record
/// in a [`vat_core::crowd::Crowd`], not an entity. Spawn, move, play, cross-fade and despawn them
/// through [`VatCrowd::crowd`], which gives the whole `Crowd` API (`spawn`, `set_transform`,
/// `play`, `play_as`, `play_after`, `set_speed`, `set_root_motion_mode`, `set_tint`, `despawn`,
/// ...). Only the instances touched are uploaded at the next frame. The moves of instances whose
/// root motion is reported (`RootMotionMode::Report`) arrive each frame in the entity's
/// [`VatRootMotion`] (a required component).
///
/// The crowd is drawn by every 3D camera (see [`crate::VatPlugin`]), in world space: the entity's
/// own `Transform` is not applied. Hide the whole crowd with `Visibility::Hidden`.
///
/// The crowd is created when its asset is loaded ([`VatCrowd::new`]; until then
/// [`VatCrowd::crowd`] is `None`), or at once from an asset at hand ([`VatCrowd::with_asset`]).
/// When the asset is reloaded, the crowd is rebuilt on the new asset with the same instance ids
/// (each keeps its position, heading, scale, tint, variant bits and clip when the new asset has
/// it, else clip 0) and a [`VatCrowdRebuilt`] message is sent.
#[derive(Component, Debug, Clone)]
#[require(Visibility, VatRootMotion)]
pub struct VatCrowd {
    asset: Handle<VatAsset>,
    config: CrowdConfig,
    shared: SharedCrowd,
}

/// The crowd as both worlds see it: the main world changes it, the render world plans and draws it.
pub(crate) type SharedCrowd = Arc<Mutex<Option<BuiltCrowd>>>;

/// A crowd and the asset bytes it was built from (a different `Arc` means the asset was reloaded).
#[derive(Debug)]
pub(crate) struct BuiltCrowd {
    pub(crate) crowd: Crowd,
    pub(crate) source: Arc<[u8]>,
}

impl VatCrowd {
    /// A crowd of `asset` with `config`, built as soon as the asset is loaded.
    pub fn new(asset: Handle<VatAsset>, config: CrowdConfig) -> Self {
        Self { asset, config, shared: Arc::new(Mutex::new(None)) }
    }

    /// A crowd of `loaded` (the asset behind `asset`, e.g. just made with
    /// [`VatAsset::from_bytes`] and added to `Assets<VatAsset>`), built at once so that instances
    /// can be spawned right away.
    pub fn with_asset(asset: Handle<VatAsset>, loaded: &VatAsset, config: CrowdConfig) -> Self {
        let crowd = Crowd::new(loaded.crowd_asset().clone(), config);
        let built = BuiltCrowd { crowd, source: loaded.bytes().clone() };
        Self { asset, config, shared: Arc::new(Mutex::new(Some(built))) }
    }

    /// The asset the crowd draws.
    pub fn asset(&self) -> &Handle<VatAsset> {
        &self.asset
    }

    /// The crowd, locked for changes (`None` until its asset is loaded). The render world locks
    /// it too, briefly, while it plans a frame: do not hold the guard across frames.
    pub fn crowd(&self) -> Option<CrowdGuard<'_>> {
        let guard = self.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.is_some().then_some(CrowdGuard(guard))
    }

    pub(crate) fn shared(&self) -> &SharedCrowd {
        &self.shared
    }
}

/// Exclusive access to a [`VatCrowd`]'s [`Crowd`]; dereferences to it.
#[derive(Debug)]
pub struct CrowdGuard<'a>(MutexGuard<'a, Option<BuiltCrowd>>);

impl std::ops::Deref for CrowdGuard<'_> {
    type Target = Crowd;
    fn deref(&self) -> &Crowd {
        // Checked when the guard was made; the lock is held since.
        match self.0.as_ref() {
            Some(built) => &built.crowd,
            None => unreachable!("a CrowdGuard is made only over a built crowd"),
        }
    }
}

impl std::ops::DerefMut for CrowdGuard<'_> {
    fn deref_mut(&mut self) -> &mut Crowd {
        match self.0.as_mut() {
            Some(built) => &mut built.crowd,
            None => unreachable!("a CrowdGuard is made only over a built crowd"),
        }
    }
}

/// An animation event of one instance of a crowd (`vat_core::crowd::AnimationEvent`: a play
/// ended, a marked frame reached), sent in `PreUpdate` of the frame that found it, so `Update`
/// systems read it with a `MessageReader<VatAnimationEvent>`. Recorded only for crowds whose
/// `CrowdConfig::record_events` is on.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct VatAnimationEvent {
    /// The crowd's entity.
    pub crowd: Entity,
    /// The event (instance, clip, kind, crowd time).
    pub event: AnimationEvent,
}

/// A crowd was (re)built on a newly loaded version of its asset: the first time, or after a hot
/// reload (instance ids are kept; see [`VatCrowd`]).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct VatCrowdRebuilt {
    /// The crowd's entity.
    pub crowd: Entity,
    /// Instances carried over from the previous build (0 the first time).
    pub instances: u32,
}

/// `PreUpdate`: builds crowds whose asset arrived or changed.
pub(crate) fn build_crowds(
    crowds: Query<(Entity, &VatCrowd)>,
    assets: Res<Assets<VatAsset>>,
    mut rebuilt: MessageWriter<VatCrowdRebuilt>,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    for (entity, crowd) in &crowds {
        let Some(asset) = assets.get(&crowd.asset) else { continue };
        let mut slot = crowd.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_some_and(|b| Arc::ptr_eq(&b.source, asset.bytes())) {
            continue;
        }
        let old = slot.take();
        let mut fresh = Crowd::new(asset.crowd_asset().clone(), crowd.config);
        let mut carried = 0;
        if let Some(old) = old {
            *fresh.config_mut() = *old.crowd.config();
            carried = carry_instances(&old.crowd, &mut fresh);
        }
        *slot = Some(BuiltCrowd { crowd: fresh, source: asset.bytes().clone() });
        rebuilt.write(VatCrowdRebuilt { crowd: entity, instances: carried });
    }
}

/// Spawns every instance of `old` into `fresh` with the same id, transform, scale, tint, variant
/// bits (hidden ones stay hidden), root-motion mode and clip (clip 0 when `fresh`'s asset has no
/// such clip).
fn carry_instances(old: &Crowd, fresh: &mut Crowd) -> u32 {
    let clips = fresh.asset().clips.len() as u32;
    if clips == 0 {
        return 0;
    }
    for r in old.records() {
        let clip = if r.clip_a < clips { r.clip_a } else { 0 };
        let id = fresh.spawn(r.position, r.yaw, clip);
        fresh.set_scale(id, r.scale);
        fresh.set_tint(id, r.tint);
        // Hidden ones stay hidden; the playback bits are `fresh`'s own.
        fresh.set_variant(id, r.variant_bits);
        // A `VatInstance` sets its mode once: the rebuilt crowd must keep it.
        fresh.set_root_motion_mode(id, old.root_motion_mode(id));
    }
    old.count()
}

/// `PreUpdate`: advances every crowd's clock by the frame's time, sends the events found and
/// replaces the crowd's [`VatRootMotion`] by the moves reported.
pub(crate) fn advance_crowds(
    mut crowds: Query<(Entity, &VatCrowd, Option<&mut VatRootMotion>)>,
    time: Res<Time>,
    mut events: MessageWriter<VatAnimationEvent>,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    let dt = time.delta_secs_f64();
    for (entity, crowd, motion) in &mut crowds {
        let Some(mut guard) = crowd.crowd() else { continue };
        guard.advance(dt);
        events.write_batch(guard.drain_events().map(|event| VatAnimationEvent { crowd: entity, event }));
        let dropped = guard.dropped_root_motion();
        match motion {
            Some(mut motion) => VatRootMotion::replace(&mut motion, guard.drain_root_motion(), dropped),
            // The component was removed: the moves are not kept (bounded by the crowd anyway).
            None => drop(guard.drain_root_motion()),
        }
    }
}
