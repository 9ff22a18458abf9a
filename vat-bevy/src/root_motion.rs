//! Root motion the game can see: every frame's reported moves of a crowd's instances in one
//! component ([`VatRootMotion`]), and [`crate::VatInstance`] entities moved by theirs.

use bevy::prelude::*;
use vat_core::crowd::{InstanceId, RootMotionDelta};

use crate::VatInstance;
use crate::timing::VatCpuTime;

/// The root-motion moves of one crowd's instances over the last frame: every
/// [`RootMotionDelta`] that `Crowd::advance` reported in this frame's `PreUpdate`, for the
/// instances in `RootMotionMode::Report` or `RootMotionMode::ApplyAndReport`
/// (`Crowd::set_root_motion_mode` through [`crate::VatCrowd::crowd`]).
///
/// On every [`crate::VatCrowd`] entity (a required component). Replaced each `PreUpdate`, right
/// after the crowd's clock steps (not accumulated: a frame's systems see that frame's moves), so
/// `Update` systems read it with `Query<&VatRootMotion>`: one component per crowd rather than a
/// message per instance, whatever the crowd's size. Each delta's `translation` (world `[x, z]`,
/// metres) and `yaw` (radians about +Y) are what `RootMotionMode::Apply` would have added to the
/// record; its `local` is the same move in the instance's own frame, unscaled; `from_time` and
/// `to_time` are the crowd clock's seconds. Sorted by instance (a stable sort: an instance's
/// moves of several `advance` calls stay in order), so [`of`](Self::of) finds one instance's by
/// binary search.
///
/// vat-bevy drains the crowd's reports (`Crowd::drain_root_motion`) into this component: read
/// them here, not from the crowd.
#[derive(Component, Debug, Clone, Default, PartialEq)]
pub struct VatRootMotion {
    deltas: Vec<RootMotionDelta>,
    dropped: u64,
}

impl VatRootMotion {
    /// This frame's moves, sorted by instance.
    pub fn deltas(&self) -> &[RootMotionDelta] {
        &self.deltas
    }

    /// This frame's moves of `instance` (none, or one per `advance` of the frame: one in
    /// `VatPlugin`'s schedule).
    pub fn of(&self, instance: InstanceId) -> &[RootMotionDelta] {
        let start = self.deltas.partition_point(|d| d.instance < instance);
        let end = start + self.deltas[start..].partition_point(|d| d.instance == instance);
        &self.deltas[start..end]
    }

    /// Moves the crowd could not keep since it was made (`Crowd::dropped_root_motion`: more were
    /// waiting than `CrowdConfig::root_motion_capacity`); a report-only instance whose move was
    /// dropped did not move.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Replaces the moves by `deltas` (and the dropped count), sorted by instance. Leaves the
    /// component untouched (no change detected) when it was and stays empty.
    pub(crate) fn replace(
        this: &mut Mut<'_, Self>,
        deltas: impl ExactSizeIterator<Item = RootMotionDelta>,
        dropped: u64,
    ) {
        if deltas.len() == 0 && this.deltas.is_empty() && this.dropped == dropped {
            return;
        }
        let this = &mut **this;
        this.deltas.clear();
        this.deltas.extend(deltas);
        // One `advance` reports in ascending instance order already; only several are interleaved.
        if !this.deltas.is_sorted_by_key(|d| d.instance) {
            this.deltas.sort_by_key(|d| d.instance);
        }
        this.dropped = dropped;
    }
}

/// `PreUpdate`, after the crowds advanced: moves the `Transform` of every [`VatInstance`] with
/// [`root_motion`](VatInstance::root_motion) by its instance's moves in its crowd's
/// [`VatRootMotion`] (translation along x and z, a turn about +Y), so that the entity is where its
/// clips took it before `Update` runs; `sync_instances` then writes the (possibly corrected)
/// transform back to the record, which the crowd left alone (report mode).
pub(crate) fn move_instances(
    mut instances: Query<(&VatInstance, &mut Transform)>,
    crowds: Query<&VatRootMotion>,
    cpu: Res<VatCpuTime>,
) {
    let _span = cpu.span();
    for (instance, mut transform) in &mut instances {
        let Some(id) = instance.id() else { continue };
        if !instance.root_motion {
            continue;
        }
        let Ok(motion) = crowds.get(instance.crowd) else { continue };
        for d in motion.of(id) {
            transform.translation.x += d.translation[0];
            transform.translation.z += d.translation[1];
            // About the world's +Y (the parent's, for a child): the record's yaw grows by `d.yaw`.
            transform.rotate_y(d.yaw);
        }
    }
}
