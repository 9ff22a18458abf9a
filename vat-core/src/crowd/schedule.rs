//! When each instance's play might next raise an event: the schedule [`Crowd::advance`] pops, and
//! the search for the events due between two advances.

use super::*;

impl Crowd {
    /// Re-schedules `i` after its play changed: its earlier entry goes stale, and a new one is
    /// made for the next time its play might raise an event (none if it never can).
    pub(super) fn watch(&mut self, i: InstanceId) {
        let g = &mut self.generations[i as usize];
        *g = g.wrapping_add(1);
        self.schedule_next(i, self.time());
    }

    /// Schedules the next time after shader time `t` (of the current epoch) at which `i`'s play
    /// might raise an event: the earliest marked frame or completion ahead of its phase
    /// ([`events::next_point`]), a millisecond early (the exact check is made in the frame it is
    /// popped, from the shader's own `f32` phase), never before the next `advance`.
    pub(super) fn schedule_next(&mut self, i: InstanceId, t: f32) {
        let slot = self.current_slot(i);
        let Some(clip) = self.asset.clips.get(slot.clip as usize) else { return };
        let mode = self.modes[i as usize];
        let once = mode == PlayMode::Once || (mode == PlayMode::AsBaked && clip.mode == ClipMode::OneShot);
        let marks = self.markers.get(slot.clip as usize).map_or(&[][..], Vec::as_slice);
        let queued = self.flags[i as usize] & FLAG_QUEUED != 0;
        let recording = self.config.record_events;
        if !(queued || recording && (once || !marks.is_empty())) {
            return;
        }
        let marks = if recording { marks } else { &[] };
        let wrap = Wrap::from_code(slot.wrap_code, clip.mode);
        let x = f64::from(events::unwrapped(slot.phase_offset, t, slot.rate));
        let rate = f64::from(slot.rate);
        let completion = match wrap {
            Wrap::Clamp => (if rate > 0.0 { 1.0 } else { 0.0 }, None),
            Wrap::Loop => (0.0, Some(1.0)),
            Wrap::PingPong => (0.0, Some(2.0)),
        };
        let mut next = events::next_point(x, rate, completion.0, completion.1);
        for &(_, q) in marks {
            let points: &[(f64, Option<f64>)] = match wrap {
                Wrap::Clamp => &[(q, None)],
                Wrap::Loop => &[(q, Some(1.0))],
                Wrap::PingPong => &[(q, Some(2.0)), (2.0 - q, Some(2.0))],
            };
            for &(p, period) in points {
                next = match (next, events::next_point(x, rate, p, period)) {
                    (Some(a), Some(b)) => Some(if (b - x).abs() < (a - x).abs() { b } else { a }),
                    (a, b) => a.or(b),
                };
            }
        }
        let Some(point) = next else { return };
        // Shader time of the point, then clock time (the epoch moves; the clock does not).
        let at_shader = (point - f64::from(slot.phase_offset)) / rate;
        let now = self.clock.now();
        let at = (self.clock.epoch() + at_shader - events::SCHEDULE_EARLY_SECONDS)
            .max(now + f64::EPSILON * now.max(1.0));
        if at.is_finite() {
            self.schedule.push(std::cmp::Reverse((at.to_bits(), i, self.generations[i as usize])));
        }
    }

    /// Finds the events of the instances due by this `advance`, between shader times `t0` (the
    /// previous `advance`) and `t1` (this one), both of the current epoch; schedules each one's
    /// next and returns the queued plays due.
    pub(super) fn find_events(&mut self, t0: f32, t1: f32) -> Vec<(InstanceId, QueuedPlay)> {
        let now = self.clock.now();
        let mut due = Vec::new();
        let mut checked = Vec::new();
        while let Some(&std::cmp::Reverse((at, i, generation))) = self.schedule.peek() {
            if f64::from_bits(at) > now {
                break;
            }
            self.schedule.pop();
            if self.generations.get(i as usize) == Some(&generation) {
                checked.push(i);
            }
        }
        for i in checked {
            let slot = self.current_slot(i);
            let Some(clip) = self.asset.clips.get(slot.clip as usize) else { continue };
            let mode = self.modes[i as usize];
            let once =
                mode == PlayMode::Once || (mode == PlayMode::AsBaked && clip.mode == ClipMode::OneShot);
            let marks = self.markers.get(slot.clip as usize).map_or(&[][..], Vec::as_slice);
            let queued = self.flags[i as usize] & FLAG_QUEUED != 0;
            let wrap = Wrap::from_code(slot.wrap_code, clip.mode);
            let a = events::unwrapped(slot.phase_offset, t0, slot.rate);
            let b = events::unwrapped(slot.phase_offset, t1, slot.rate);
            let recording = self.config.record_events;
            let mut found = Vec::new();
            if recording {
                for &(frame, q) in marks {
                    if events::reaches(wrap, a, b, q) {
                        found.push(AnimationEventKind::Marker { frame });
                    }
                }
            }
            let completes = events::completes(wrap, a, b, slot.rate);
            if completes && recording && once && wrap == Wrap::Clamp {
                found.push(AnimationEventKind::Ended);
            }
            for kind in found {
                if self.events.len() < events::MAX_PENDING_EVENTS {
                    self.events.push(AnimationEvent { instance: i, clip: slot.clip, kind, time: now });
                } else {
                    self.dropped_events += 1;
                }
            }
            if completes && queued {
                self.flags[i as usize] &= !FLAG_QUEUED;
                if let Some(next) = self.queued.remove(&i) {
                    // `play_as` schedules the new play.
                    due.push((i, next));
                    continue;
                }
            }
            self.schedule_next(i, t1);
        }
        due
    }
}
