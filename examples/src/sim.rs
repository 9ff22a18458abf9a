//! A simple crowd simulation on top of [`vat_core::crowd::Crowd`]: agents wander towards random goals
//! with steering, avoid their neighbours a little, and their speed chooses the clip (idle, walk, jog,
//! run) with stride-matched rates and cross-fades between clips. Written against vat-core only, so it
//! runs unchanged with any backend.

use vat_core::crowd::{Crowd, InstanceId};

/// The clips the simulation switches between, by index in the asset (`None` when the asset lacks one).
#[derive(Debug, Clone, Copy, Default)]
pub struct GaitClips {
    /// Standing.
    pub idle: Option<u32>,
    /// Slow locomotion.
    pub walk: Option<u32>,
    /// Medium locomotion.
    pub jog: Option<u32>,
    /// Fast locomotion.
    pub run: Option<u32>,
}

impl GaitClips {
    /// Finds the clips called idle, walk, jog and run.
    pub fn find(crowd: &Crowd) -> Self {
        let find = |name: &str| crowd.asset().clips.iter().position(|c| c.name == name).map(|i| i as u32);
        Self { idle: find("idle"), walk: find("walk"), jog: find("jog"), run: find("run") }
    }

    /// The clip for a speed in metres per second (falling back to any locomotion clip there is).
    pub fn for_speed(&self, speed: f32) -> Option<u32> {
        let loco = |first: Option<u32>, second: Option<u32>, third: Option<u32>| first.or(second).or(third);
        if speed < 0.3 {
            self.idle.or(self.walk)
        } else if speed < 2.0 {
            loco(self.walk, self.jog, self.run)
        } else if speed < 3.6 {
            loco(self.jog, self.run, self.walk)
        } else {
            loco(self.run, self.jog, self.walk)
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Agent {
    id: InstanceId,
    position: [f32; 2],
    heading: f32,
    speed: f32,
    goal: [f32; 2],
    cruise: f32,
    clip: Option<u32>,
}

/// The simulation state: one agent per crowd instance it spawned.
pub struct Simulation {
    agents: Vec<Agent>,
    clips: GaitClips,
    half_extent: f32,
    rng: u64,
    /// Cross-fade duration when an agent changes clip, seconds.
    pub fade_seconds: f32,
    /// Whether speeds drive clip rates by stride (`false` plays clips at their natural rate, so the
    /// feet slide: a toggle to show what stride matching buys).
    pub stride_matching: bool,
}

impl Simulation {
    /// Spawns `count` agents on a square of side `2 * half_extent` metres centred on the origin.
    pub fn new(crowd: &mut Crowd, count: u32, half_extent: f32, seed: u64) -> Self {
        let clips = GaitClips::find(crowd);
        let mut sim = Self {
            agents: Vec::with_capacity(count as usize),
            clips,
            half_extent,
            rng: seed | 1,
            fade_seconds: 0.3,
            stride_matching: true,
        };
        for _ in 0..count {
            let position = [sim.uniform(-half_extent, half_extent), sim.uniform(-half_extent, half_extent)];
            let heading = sim.uniform(0.0, std::f32::consts::TAU);
            let cruise = sim.cruise_speed();
            let clip = clips.for_speed(0.0).unwrap_or(0);
            let phase = sim.uniform(0.0, 1.0);
            let id = crowd.spawn_at_phase([position[0], 0.0, position[1]], heading, clip, phase);
            let goal = sim.goal();
            let accessory = if id.is_multiple_of(2) { vat_core::instance::VARIANT_ACCESSORY } else { 0 };
            crowd.set_variant(id, (id % 8) | accessory);
            sim.agents.push(Agent { id, position, heading, speed: 0.0, goal, cruise, clip: Some(clip) });
        }
        sim
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }

    fn goal(&mut self) -> [f32; 2] {
        let h = self.half_extent;
        [self.uniform(-h, h), self.uniform(-h, h)]
    }

    fn cruise_speed(&mut self) -> f32 {
        // Most walk, some jog, a few run, some stand.
        match self.next() % 10 {
            0 => 0.0,
            1 | 2 => self.uniform(2.4, 3.2),
            3 => self.uniform(4.0, 4.8),
            _ => self.uniform(1.1, 1.6),
        }
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether there are no agents.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Advances every agent by `dt` seconds and writes the result into `crowd` (transforms, speeds,
    /// clip changes with cross-fades), then advances the crowd's clock.
    pub fn step(&mut self, crowd: &mut Crowd, dt: f32) {
        let count = self.agents.len();
        for k in 0..count {
            let mut a = self.agents[k];
            let to_goal = [a.goal[0] - a.position[0], a.goal[1] - a.position[1]];
            let distance = (to_goal[0] * to_goal[0] + to_goal[1] * to_goal[1]).sqrt();
            if distance < 1.0 {
                a.goal = self.goal();
                a.cruise = self.cruise_speed();
            }
            // Steering: turn towards the goal at a limited rate (yaw 0 faces +Z: heading = atan2(x, z)).
            let desired = to_goal[0].atan2(to_goal[1]);
            let mut turn = desired - a.heading;
            turn = (turn + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU) - std::f32::consts::PI;
            a.heading += turn.clamp(-2.0 * dt, 2.0 * dt);
            // Accelerate towards the cruise speed; slow down in sharp turns.
            let target = a.cruise * (1.0 - turn.abs() / std::f32::consts::PI * 0.5);
            a.speed += (target - a.speed).clamp(-3.0 * dt, 3.0 * dt);
            a.position[0] += a.heading.sin() * a.speed * dt;
            a.position[1] += a.heading.cos() * a.speed * dt;
            crowd.set_transform(a.id, [a.position[0], 0.0, a.position[1]], a.heading);
            let clip = self.clips.for_speed(a.speed);
            if clip != a.clip
                && let Some(c) = clip
            {
                crowd.play(a.id, c, self.fade_seconds);
                a.clip = clip;
            }
            if self.stride_matching {
                crowd.set_speed(a.id, a.speed);
            }
            self.agents[k] = a;
        }
        crowd.advance(f64::from(dt));
    }
}
