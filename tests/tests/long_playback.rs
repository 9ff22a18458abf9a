//! Seven days of simulated clock time on a crowd: the phase the shader computes for every instance
//! stays within 1e-4 cycles of an exact `f64` phase, and the crowd's memory does not grow.
//!
//! The clock advances in 64-second periods: one 60 s step (a paused or backgrounded app), then 240
//! frames of 1/60 s, across which the epoch re-base (every `REBASE_AFTER_SECONDS` = 64 s) happens
//! at frame granularity, as in a game loop; 9,450 periods and 2.3 million `advance` calls in all.
//! Instances loop idle/walk/run clips at several rates, play a one-shot clip that ends and must stay
//! ended for days, change speed every simulated hour and start one-shots (some with cross-fades)
//! every simulated day.
//!
//! Memory: a counting global allocator tracks the bytes live on the test's thread; after the first
//! simulated day (every kind of event has happened once, so every buffer has reached its working
//! size) the live bytes must not grow over the remaining six days.

// Integration tests report failure by panicking.
#![allow(clippy::unwrap_used)]
// The counting allocator below implements `GlobalAlloc`, an unsafe trait; it only forwards to the
// system allocator and counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::PositionBounds;
use vat_core::format::lod::LodThresholds;
use vat_core::playback;

/// The system allocator, counting the bytes live per thread.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed on this thread.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: during thread teardown the slot may be gone; those bytes are not ours to count.
    let _ = LIVE.try_with(|l| l.set(l.get() + delta));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged (so `System`'s
// guarantees hold) and only updates a const-initialised thread-local counter, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from `System` with this layout (every allocation goes through `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE.with(Cell::get)
}

const IDLE: u32 = 0;
const WALK: u32 = 1;
const RUN: u32 = 2;
const WAVE: u32 = 3;

/// idle (2 s loop), walk (1 s loop, 1.48 m stride), run (0.7 s loop, 3.3 m), wave (1.5 s one-shot).
fn asset() -> CrowdAsset {
    let mut m = ClipRowMap::new();
    m.push("idle", 2.0, 30.0, ClipMode::Looping, 0.0).unwrap();
    m.push("walk", 1.0, 30.0, ClipMode::Looping, 1.48).unwrap();
    m.push("run", 0.7, 30.0, ClipMode::Looping, 3.3).unwrap();
    m.push("wave", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
    CrowdAsset {
        clips: m.clips().to_vec(),
        bounds: PositionBounds { min: [-0.3, 0.0, -0.2], extent: [0.6, 1.8, 0.4] },
        lod_triangles: vec![2000, 800, 300, 100, 40],
        lod_distances: LodThresholds::new(&[10.0, 25.0, 50.0, 100.0]).unwrap(),
        attachment_triangles: 0,
        root_motion: Vec::new(),
        impostor_switch: None,
    }
}

/// The exact playback of one instance's slot A: phase `phase0` at absolute time `t0`, then `rate`.
#[derive(Clone, Copy)]
struct Exact {
    mode: ClipMode,
    phase0: f64,
    t0: f64,
    rate: f64,
}

impl Exact {
    fn x(&self, now: f64) -> f64 {
        self.phase0 + (now - self.t0) * self.rate
    }

    fn phase(&self, now: f64) -> f64 {
        match self.mode {
            ClipMode::Looping => self.x(now).rem_euclid(1.0),
            ClipMode::OneShot => self.x(now).clamp(0.0, 1.0),
        }
    }
}

/// The phase error of every instance (slot A: every check happens with no fade running), worst first.
fn worst_error(crowd: &Crowd, exact: &[Exact]) -> f64 {
    let t = crowd.shader_time();
    let now = crowd.clock().now();
    let mut worst = 0.0f64;
    for (r, e) in crowd.records().iter().zip(exact) {
        let shader = f64::from(playback::phase(r.phase_offset_a, t, r.rate_a, e.mode));
        let want = e.phase(now);
        let d = match e.mode {
            ClipMode::Looping => {
                let d = (shader - want).rem_euclid(1.0);
                d.min(1.0 - d)
            }
            ClipMode::OneShot => (shader - want).abs(),
        };
        worst = worst.max(d);
    }
    worst
}

#[test]
fn seven_days_of_playback_without_drift_or_growth() {
    const DAY: f64 = 86_400.0;
    const HOUR: f64 = 3_600.0;
    const FRAME: f64 = 1.0 / 60.0;
    const PERIOD_FRAMES: u32 = 240;
    let mut crowd = Crowd::new(asset(), CrowdConfig::default());
    let clips = crowd.asset().clips.clone();
    let mut exact = Vec::new();
    let walk_speeds = [0.4f32, 1.1, 1.48, 2.2];
    let run_speeds = [2.5f32, 3.3, 5.1];
    for i in 0..96u32 {
        let clip = [IDLE, WALK, RUN, WAVE][(i % 4) as usize];
        let phase = (i as f32 * 0.618_034).fract();
        let id = crowd.spawn_at_phase([(i % 12) as f32 * 2.0, 0.0, (i / 12) as f32 * 2.0], 0.0, clip, phase);
        match clip {
            WALK => crowd.set_speed(id, walk_speeds[(i / 4) as usize % walk_speeds.len()]),
            RUN => crowd.set_speed(id, run_speeds[(i / 4) as usize % run_speeds.len()]),
            _ => {}
        }
        let r = crowd.records()[id as usize];
        let c = &clips[clip as usize];
        exact.push(Exact { mode: c.mode, phase0: f64::from(phase), t0: 0.0, rate: f64::from(r.rate_a) });
    }
    let camera = Camera::look_at([10.0, 20.0, -30.0], [10.0, 0.0, 10.0], 1.0, 16.0 / 9.0, 0.1, 500.0);
    let (mut next_hour, mut next_day) = (HOUR, DAY);
    let (mut worst, mut checks, mut periods, mut advances) = (0.0f64, 0u64, 0u64, 0u64);
    let mut rebases = 0u64;
    let mut warm_bytes: Option<isize> = None;
    let mut day_index = 0u32;
    let mut fading_until = 0.0f64;
    while crowd.clock().now() < 7.0 * DAY {
        // A 60 s step, then 240 frames: the re-base at 64 s falls on a frame.
        let epoch = crowd.clock().epoch();
        crowd.advance(60.0);
        advances += 1;
        if crowd.clock().epoch() != epoch {
            rebases += 1;
        }
        let e = worst_error(&crowd, &exact);
        worst = worst.max(e);
        checks += 1;
        for k in 0..PERIOD_FRAMES {
            let epoch = crowd.clock().epoch();
            crowd.advance(FRAME);
            advances += 1;
            if crowd.clock().epoch() != epoch {
                rebases += 1;
            }
            // Phases are checked every 20th frame, and never while a fade runs (slot B then blends in).
            if k % 20 == 19 && crowd.clock().now() > fading_until {
                worst = worst.max(worst_error(&crowd, &exact));
                checks += 1;
            }
        }
        periods += 1;
        let now = crowd.clock().now();
        if now >= next_hour {
            next_hour += HOUR;
            // Walkers and runners change speed: the phase continues, at the new rate.
            let hour = (next_hour / HOUR) as usize;
            for i in (0..crowd.count()).filter(|i| matches!(i % 4, 1 | 2)) {
                let speeds: &[f32] = if i % 4 == 1 { &walk_speeds } else { &run_speeds };
                let e = &mut exact[i as usize];
                if e.mode == ClipMode::OneShot || !matches!(crowd.records()[i as usize].clip_a, WALK | RUN) {
                    continue;
                }
                let phase = e.phase(now);
                crowd.set_speed(i, speeds[(hour + i as usize) % speeds.len()]);
                let r = crowd.records()[i as usize];
                *e = Exact { mode: ClipMode::Looping, phase0: phase, t0: now, rate: f64::from(r.rate_a) };
            }
            // Keep the culling and upload path running too (its buffers are part of the memory check).
            let draws = crowd.prepare_frame(&camera);
            assert!(!draws.main_plain.is_empty() || !draws.main_fade.is_empty());
        }
        if now >= next_day {
            next_day += DAY;
            day_index += 1;
            // Every day some idle instances wave (a cut), and some with a 0.5 s cross-fade.
            for i in (0..crowd.count()).filter(|i| i % 4 == 0 && (i / 4) % 3 == day_index % 3) {
                let fade = if i % 8 == 0 { 0.5 } else { 0.0 };
                crowd.play(i, WAVE, fade);
                let r = crowd.records()[i as usize];
                let rate = if fade > 0.0 { r.rate_b } else { r.rate_a };
                exact[i as usize] =
                    Exact { mode: ClipMode::OneShot, phase0: 0.0, t0: now, rate: f64::from(rate) };
            }
            fading_until = now + 0.5;
            if day_index == 1 {
                // Let the fades finish, then take the working-set size.
                crowd.advance(1.0);
                advances += 1;
                let _ = crowd.prepare_frame(&camera);
                warm_bytes = Some(live_bytes());
            }
        }
    }
    let warm = warm_bytes.unwrap();
    let _ = crowd.prepare_frame(&camera);
    let end = live_bytes();
    println!(
        "7 days: {periods} periods, {advances} advances, {rebases} re-bases, {checks} checks of {} \
         instances; worst phase error {worst:.3e} cycles; live bytes after day 1 {warm}, at the end {end}",
        crowd.count()
    );
    assert!(rebases >= 9_000, "{rebases}");
    // The bound. The derived worst case (see REBASE_AFTER_SECONDS) is u (3 R T + 1.5) for the
    // shader's f32 math (R = 3.5 cycles/s, T = 64 s: 4.0e-5) plus at most 2^-25 per re-base and per
    // rate change for rounding the stored offset; those roundings are not biased, so they do not add
    // up linearly in practice, and this test measures what they add up to over a week.
    assert!(worst <= 1e-4, "worst phase error {worst} cycles");
    // Finished one-shots are still exactly at their end.
    for (r, e) in crowd.records().iter().zip(&exact).filter(|(_, e)| e.mode == ClipMode::OneShot) {
        let p = playback::phase(r.phase_offset_a, crowd.shader_time(), r.rate_a, ClipMode::OneShot);
        if e.x(crowd.clock().now()) >= 1.0 {
            assert_eq!(p, 1.0);
        }
    }
    assert!(end <= warm, "live bytes grew from {warm} after the first day to {end} after seven");
}
