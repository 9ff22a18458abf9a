//! How much CPU time vat-bevy's own systems take ([`VatCpuTime`]), in both worlds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bevy::prelude::*;

/// The CPU time vat-bevy's own systems have spent since the app started, summed over both worlds:
/// in the main world building and advancing crowds, moving root-motion entities and syncing
/// [`crate::VatInstance`]s; in the render world extracting, uploading, and planning and recording
/// the shadow, prepass and main passes of every view (their submits included; neither the GPU's
/// work nor the flush of Bevy's own commands that vat's passes do first).
/// A resource of the main world (the render world adds to the same counter), for profiling: read
/// [`total`](Self::total) before and after `App::update` for one frame's cost. With Bevy's
/// pipelined rendering the render world's share of an update is the previous frame's.
#[derive(Resource, Debug, Clone, Default)]
pub struct VatCpuTime(Arc<AtomicU64>);

impl VatCpuTime {
    /// The time spent so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// Counts the time until the returned guard drops.
    pub(crate) fn span(&self) -> Span<'_> {
        Span { total: &self.0, start: Instant::now() }
    }
}

/// Adds the time since it was made to [`VatCpuTime`] when dropped.
pub(crate) struct Span<'a> {
    total: &'a AtomicU64,
    start: Instant,
}

impl Span<'_> {
    /// Runs `f` without counting its time (Bevy's work inside a vat system, a submit).
    pub(crate) fn excluding<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let started = Instant::now();
        let result = f();
        self.start += started.elapsed();
        result
    }
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.total.fetch_add(nanos, Ordering::Relaxed);
    }
}
