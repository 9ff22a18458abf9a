//! A simple crowd simulation on top of [`vat_core::crowd::Crowd`]: agents wander towards random goals
//! with steering, optionally keep apart from their neighbours ([`Simulation::separation`]), and their
//! speed chooses the clip (idle, walk, jog, run) with stride-matched rates and cross-fades between
//! clips. Written against vat-core only, so it runs unchanged with any backend.
//!
//! Lengths and speeds are tuned for the metre-scale humanoid and scaled to the asset's own unit
//! ([`crate::scene::SceneScale`], from the crowd's asset bounds): a centimetre-scale asset walks at
//! the same pace relative to its size, picks its gait by the same relative speed and keeps the same
//! relative personal space.
//!
//! Stride matching can be switched off ([`Simulation::stride_matching`]): every locomotion clip then
//! plays at the rate it was baked at whatever the agent's speed, and the feet slide. The demo
//! (`vat demo`, key T) uses it to show what stride matching buys.

use crate::scene::SceneScale;
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

/// How strongly the separation push bends an agent's desired direction (1 = as much as its goal).
const SEPARATION_STEER: f32 = 1.5;
/// Sidestep speed, reference metres per second, at full overlap: keeps agents that steer into each other apart.
const SEPARATION_SIDESTEP: f32 = 0.8;
/// Most cells of the separation grid along one side (larger crowds get larger cells).
const MAX_GRID_SIDE: usize = 1024;

/// A uniform grid over the simulation square, rebuilt each step by a counting sort of the agents:
/// `order[start[c]..start[c + 1]]` are the agents in cell `c`.
#[derive(Debug, Default)]
struct NeighbourGrid {
    side: usize,
    cell: f32,
    origin: f32,
    start: Vec<u32>,
    order: Vec<u32>,
}

impl NeighbourGrid {
    fn cell_coords(&self, p: [f32; 2]) -> (usize, usize) {
        let max = self.side.saturating_sub(1) as f32;
        let c = |v: f32| ((v - self.origin) / self.cell).floor().clamp(0.0, max) as usize;
        (c(p[0]), c(p[1]))
    }

    fn rebuild(&mut self, agents: &[Agent], half_extent: f32, radius: f32) {
        let span = 2.0 * half_extent.max(radius);
        self.cell = radius.max(span / MAX_GRID_SIDE as f32);
        self.side = ((span / self.cell).ceil() as usize).clamp(1, MAX_GRID_SIDE);
        self.origin = -half_extent.max(radius);
        let cells = self.side * self.side;
        self.start.clear();
        self.start.resize(cells + 1, 0);
        for a in agents {
            let (x, z) = self.cell_coords(a.position);
            self.start[z * self.side + x + 1] += 1;
        }
        for c in 0..cells {
            self.start[c + 1] += self.start[c];
        }
        self.order.clear();
        self.order.resize(agents.len(), 0);
        let mut next = self.start.clone();
        for (k, a) in agents.iter().enumerate() {
            let (x, z) = self.cell_coords(a.position);
            let slot = &mut next[z * self.side + x];
            self.order[*slot as usize] = k as u32;
            *slot += 1;
        }
    }

    /// The sum over neighbours closer than `radius` of the unit vector away from each, weighted by
    /// how deep the neighbour is inside the radius (0 at the rim, 1 on top).
    fn push(&self, agents: &[Agent], k: usize, radius: f32) -> [f32; 2] {
        let p = agents[k].position;
        let (cx, cz) = self.cell_coords(p);
        let mut push = [0.0f32; 2];
        for z in cz.saturating_sub(1)..=(cz + 1).min(self.side - 1) {
            for x in cx.saturating_sub(1)..=(cx + 1).min(self.side - 1) {
                let c = z * self.side + x;
                for &j in &self.order[self.start[c] as usize..self.start[c + 1] as usize] {
                    let j = j as usize;
                    if j == k {
                        continue;
                    }
                    let q = agents[j].position;
                    let d = [p[0] - q[0], p[1] - q[1]];
                    let dist = (d[0] * d[0] + d[1] * d[1]).sqrt();
                    if dist >= radius {
                        continue;
                    }
                    let w = (radius - dist) / radius;
                    let dir = if dist > 1e-4 {
                        [d[0] / dist, d[1] / dist]
                    } else {
                        // On top of each other: split along a direction fixed by the pair's order.
                        if k < j { [1.0, 0.0] } else { [-1.0, 0.0] }
                    };
                    push[0] += dir[0] * w;
                    push[1] += dir[1] * w;
                }
            }
        }
        push
    }
}

/// Half the side of the square `count` agents wander in, asset units: `1.5 * sqrt(count)` reference
/// metres (about 9 m² per agent) times `scale`'s unit.
pub fn wander_half_extent(count: u32, scale: &SceneScale) -> f32 {
    scale.length((count as f32).sqrt() * 1.5)
}

/// The simulation state: one agent per crowd instance it spawned.
pub struct Simulation {
    agents: Vec<Agent>,
    clips: GaitClips,
    half_extent: f32,
    /// Asset units per reference metre ([`SceneScale::unit`] of the crowd's asset).
    unit: f32,
    rng: u64,
    grid: NeighbourGrid,
    pushes: Vec<[f32; 2]>,
    /// Cross-fade duration when an agent changes clip, seconds (0 cuts).
    pub fade_seconds: f32,
    /// Whether speeds drive clip rates by stride (default on). Off: every locomotion clip plays at
    /// its baked rate whatever the agent's speed, so the feet slide (a toggle to show what stride
    /// matching buys).
    pub stride_matching: bool,
    /// Whether agents steer away from (and sidestep) neighbours closer than
    /// [`separation_radius`](Self::separation_radius) (default off: agents walk through each other).
    pub separation: bool,
    /// Personal space for [`separation`](Self::separation), asset units (default 1.2 reference
    /// metres: 1.2 for the metre-scale humanoid).
    pub separation_radius: f32,
}

impl Simulation {
    /// Spawns `count` agents on a square of side `2 * half_extent` (asset units, see
    /// [`wander_half_extent`]) centred on the origin. Speeds and distances scale with the crowd's
    /// asset ([`SceneScale::from_bounds`] of its bounds).
    pub fn new(crowd: &mut Crowd, count: u32, half_extent: f32, seed: u64) -> Self {
        let clips = GaitClips::find(crowd);
        let unit = SceneScale::from_bounds(&crowd.asset().bounds).unit;
        let mut sim = Self {
            agents: Vec::with_capacity(count as usize),
            clips,
            half_extent,
            unit,
            rng: seed | 1,
            grid: NeighbourGrid::default(),
            pushes: Vec::new(),
            fade_seconds: 0.3,
            stride_matching: true,
            separation: false,
            separation_radius: 1.2 * unit,
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

    /// A cruise speed in asset units per second (reference metres per second times the unit).
    fn cruise_speed(&mut self) -> f32 {
        // Most walk, some jog, a few run, some stand.
        let metres_per_second = match self.next() % 10 {
            0 => 0.0,
            1 | 2 => self.uniform(2.4, 3.2),
            3 => self.uniform(4.0, 4.8),
            _ => self.uniform(1.1, 1.6),
        };
        metres_per_second * self.unit
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether there are no agents.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Half the side of the square the agents wander in, asset units.
    pub fn half_extent(&self) -> f32 {
        self.half_extent
    }

    /// The speed at which `clip` plays at its baked rate with planted feet (`stride * rate`), for
    /// locomotion clips; `None` for others (they always play at their baked rate).
    fn baked_speed(crowd: &Crowd, clip: u32) -> Option<f32> {
        let c = crowd.asset().clips.get(clip as usize)?;
        c.is_locomotion().then(|| c.stride * c.natural_rate())
    }

    /// Advances every agent by `dt` seconds and writes the result into `crowd` (transforms, speeds,
    /// clip changes with cross-fades), then advances the crowd's clock.
    pub fn step(&mut self, crowd: &mut Crowd, dt: f32) {
        use std::f32::consts::{PI, TAU};
        let count = self.agents.len();
        let radius = self.separation_radius.max(0.1 * self.unit);
        self.pushes.clear();
        if self.separation {
            self.grid.rebuild(&self.agents, self.half_extent, radius);
            for k in 0..count {
                let push = self.grid.push(&self.agents, k, radius);
                self.pushes.push(push);
            }
        }
        for k in 0..count {
            let mut a = self.agents[k];
            let to_goal = [a.goal[0] - a.position[0], a.goal[1] - a.position[1]];
            let distance = (to_goal[0] * to_goal[0] + to_goal[1] * to_goal[1]).sqrt();
            if distance < self.unit {
                a.goal = self.goal();
                a.cruise = self.cruise_speed();
            }
            let push = self.pushes.get(k).copied().unwrap_or([0.0, 0.0]);
            // Steering: the desired direction is the goal's, bent away from close neighbours; turn
            // towards it at a limited rate (yaw 0 faces +Z: heading = atan2(x, z)).
            let inv = 1.0 / distance.max(1e-3 * self.unit);
            let desired_dir = [
                to_goal[0] * inv + SEPARATION_STEER * push[0],
                to_goal[1] * inv + SEPARATION_STEER * push[1],
            ];
            let desired = desired_dir[0].atan2(desired_dir[1]);
            let mut turn = desired - a.heading;
            turn = (turn + PI).rem_euclid(TAU) - PI;
            a.heading = (a.heading + turn.clamp(-2.0 * dt, 2.0 * dt)).rem_euclid(TAU);
            // Accelerate towards the cruise speed; slow down in sharp turns.
            let target = a.cruise * (1.0 - turn.abs() / PI * 0.5);
            a.speed += (target - a.speed).clamp(-3.0 * dt, 3.0 * dt);
            a.position[0] += a.heading.sin() * a.speed * dt;
            a.position[1] += a.heading.cos() * a.speed * dt;
            // A small sidestep out of overlaps (not animated: kept slow).
            let push_len = (push[0] * push[0] + push[1] * push[1]).sqrt();
            if push_len > 1e-4 {
                let step = SEPARATION_SIDESTEP * self.unit * dt * push_len.min(1.0) / push_len;
                a.position[0] += push[0] * step;
                a.position[1] += push[1] * step;
            }
            crowd.set_transform(a.id, [a.position[0], 0.0, a.position[1]], a.heading);
            let clip = self.clips.for_speed(a.speed / self.unit);
            // The speed the crowd times locomotion clips by: the agent's (feet planted), or the one
            // at which the clip plays at its baked rate (feet slide). Set before `play` so that a
            // new clip starts at the right rate.
            let timing_speed = if self.stride_matching {
                Some(a.speed)
            } else {
                clip.or(a.clip).and_then(|c| Self::baked_speed(crowd, c))
            };
            if let Some(s) = timing_speed {
                crowd.set_speed(a.id, s);
            }
            if clip != a.clip
                && let Some(c) = clip
            {
                crowd.play(a.id, c, self.fade_seconds);
                a.clip = clip;
            }
            self.agents[k] = a;
        }
        crowd.advance(f64::from(dt));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

    use super::*;
    use vat_core::container::Asset;
    use vat_core::crowd::{CrowdAsset, CrowdConfig};

    /// A crowd of the procedural humanoid and a simulation of `count` agents on a square of half side
    /// `half_extent`, stepped for `seconds`.
    fn simulate(count: u32, half_extent: f32, configure: impl Fn(&mut Simulation)) -> (Crowd, Simulation) {
        let bytes = crate::support::asset_bytes(None).unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let mut crowd =
            Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
        let mut sim = Simulation::new(&mut crowd, count, half_extent, 11);
        configure(&mut sim);
        (crowd, sim)
    }

    fn run(crowd: &mut Crowd, sim: &mut Simulation, seconds: f32) {
        let dt = 1.0 / 30.0;
        for _ in 0..(seconds / dt) as u32 {
            sim.step(crowd, dt);
        }
    }

    /// `(rate, natural rate, agent speed / stride)` of every agent playing one locomotion clip alone.
    fn settled_locomotion(crowd: &Crowd, sim: &Simulation) -> Vec<(f32, f32, f32)> {
        sim.agents
            .iter()
            .filter_map(|a| {
                let r = crowd.records()[a.id as usize];
                let clip = &crowd.asset().clips[r.clip_a as usize];
                (r.clip_a == r.clip_b_index() && clip.is_locomotion())
                    .then(|| (r.rate_a, clip.natural_rate(), a.speed / clip.stride))
            })
            .collect()
    }

    #[test]
    fn stride_matching_times_gaits_by_speed_and_off_plays_them_as_baked() {
        let (mut crowd, mut sim) = simulate(64, 10.0, |_| {});
        run(&mut crowd, &mut sim, 3.0);
        let on = settled_locomotion(&crowd, &sim);
        assert!(on.len() > 10, "only {} agents walking", on.len());
        for &(rate, _, matched) in &on {
            assert!(
                (rate - matched).abs() < 1e-3 * matched.max(1.0),
                "rate {rate} vs speed/stride {matched}"
            );
        }
        assert!(
            on.iter().any(|&(rate, natural, _)| (rate - natural).abs() > 0.02),
            "speeds all match the bake"
        );

        sim.stride_matching = false;
        run(&mut crowd, &mut sim, 1.0);
        let off = settled_locomotion(&crowd, &sim);
        assert!(off.len() > 10);
        for &(rate, natural, _) in &off {
            assert!((rate - natural).abs() < 1e-4 * natural.max(1.0), "rate {rate} vs baked {natural}");
        }
    }

    /// Pairs of agents closer than `d` metres.
    fn close_pairs(sim: &Simulation, d: f32) -> usize {
        let p: Vec<[f32; 2]> = sim.agents.iter().map(|a| a.position).collect();
        let mut n = 0;
        for i in 0..p.len() {
            for q in &p[i + 1..] {
                if (p[i][0] - q[0]).hypot(p[i][1] - q[1]) < d {
                    n += 1;
                }
            }
        }
        n
    }

    #[test]
    fn separation_keeps_agents_apart() {
        // 150 agents on 20 m x 20 m: crowded enough to bump into each other.
        let (mut crowd, mut off) = simulate(150, 10.0, |_| {});
        run(&mut crowd, &mut off, 6.0);
        let (mut crowd, mut on) = simulate(150, 10.0, |s| s.separation = true);
        run(&mut crowd, &mut on, 6.0);
        let (without, with) = (close_pairs(&off, 0.6), close_pairs(&on, 0.6));
        println!("pairs closer than 0.6 m after 6 s: {without} without separation, {with} with");
        assert!(with * 2 < without.max(1), "{with} close pairs with separation, {without} without");
    }

    fn agent(x: f32, z: f32) -> Agent {
        Agent { id: 0, position: [x, z], heading: 0.0, speed: 0.0, goal: [0.0, 0.0], cruise: 0.0, clip: None }
    }

    #[test]
    fn grid_push_points_away_from_close_neighbours_only() {
        let agents = [agent(0.0, 0.0), agent(0.5, 0.0), agent(5.0, 5.0), agent(-9.9, 9.9)];
        let mut grid = NeighbourGrid::default();
        grid.rebuild(&agents, 10.0, 1.2);
        let p0 = grid.push(&agents, 0, 1.2);
        let p1 = grid.push(&agents, 1, 1.2);
        assert!(p0[0] < 0.0 && p0[1].abs() < 1e-6, "{p0:?}");
        assert!(p1[0] > 0.0 && p1[1].abs() < 1e-6, "{p1:?}");
        assert!((p0[0] + p1[0]).abs() < 1e-6);
        assert_eq!(grid.push(&agents, 2, 1.2), [0.0, 0.0]);
        assert_eq!(grid.push(&agents, 3, 1.2), [0.0, 0.0]);
    }

    #[test]
    fn grid_handles_agents_outside_the_square() {
        let agents = [agent(-50.0, 50.0), agent(-50.3, 50.0), agent(30.0, -30.0)];
        let mut grid = NeighbourGrid::default();
        grid.rebuild(&agents, 10.0, 1.2);
        // Clamped into the border cells, still found as neighbours.
        assert!(grid.push(&agents, 0, 1.2)[0] > 0.0);
        assert_eq!(grid.push(&agents, 2, 1.2), [0.0, 0.0]);
    }
}
