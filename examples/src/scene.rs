//! A deterministic demo crowd: `count` characters on a jittered grid with a mix of clips, stride-matched
//! walking speeds, headings, tints and material variants. Used by `vat render`, the examples and the
//! benchmarks, so they all show the same crowd for the same arguments.
//!
//! # Scale-derived framing
//!
//! Every length of a demo scene (crowd spacing, camera placement, clip planes, ground, shadow reach,
//! grid cells, walking speeds) was tuned for the built-in 1.8 m humanoid in metres. [`SceneScale`]
//! turns those *reference metres* into the asset's own length unit from its bounds (the container
//! manifest's vertex-animation bounds), so that a centimetre-scale asset (a fox 83 units tall) or a
//! 0.2 m one is framed like the humanoid: same share of the image, same spacing relative to its
//! size, no camera inside a mesh, no dots. `vat render`, `vat demo` and the examples take their
//! numbers from here; the backends only draw what they are given.

use vat_core::crowd::{Crowd, InstanceId};
use vat_core::format::encoding::PositionBounds;
use vat_core::instance::{VARIANT_ACCESSORY, VARIANT_MATERIAL_MASK};

/// The size the demo scenes' fixed lengths were tuned for: the largest side of the bounds of the
/// built-in procedural humanoid (over every frame of its clips; 1.24 x 2.07 x 1.43 m), metres.
/// An asset of this size has [`SceneScale::unit`] 1.
pub const REFERENCE_SIZE: f32 = 2.07;

/// Distance between neighbouring characters of the default [`DemoLayout`], reference metres.
pub const DEFAULT_SPACING: f32 = 1.6;

/// Side of a crowd grid cell for demo scenes, reference metres (the default `CrowdConfig::cell_size`).
pub const DEFAULT_CELL_SIZE: f32 = 16.0;

/// How far the shadow map reaches from the camera in demo scenes, reference metres (the default
/// `RenderOptions::shadow_distance`).
pub const DEFAULT_SHADOW_DISTANCE: f32 = 60.0;

/// Ground beyond the crowd's reach on every side, reference metres ([`SceneScale::overview`]).
pub const GROUND_MARGIN: f32 = 10.0;

/// How an asset's size relates to the reference humanoid, from its bounds: the factor that turns the
/// demo scenes' reference metres into the asset's length unit, and the horizontal reach of one
/// character.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SceneScale {
    /// Asset length units per reference metre: `size / REFERENCE_SIZE`, where `size` is the largest
    /// side of the bounds. About 1 for the humanoid in metres, 40 for an 83-unit centimetre fox,
    /// 0.1 for a 0.2 m character. Always finite and `> 0` (1 for empty or non-finite bounds).
    pub unit: f32,
    /// Horizontal reach of one character from its origin at scale 1, asset units: the farthest corner
    /// of the bounds from the vertical axis through the origin (`>= 0`).
    pub footprint: f32,
    /// Lowest point of the bounds above the origin (`bounds.min.y`), asset units.
    pub floor: f32,
}

impl Default for SceneScale {
    /// The reference humanoid: unit 1, a 1 m footprint, its feet at the origin.
    fn default() -> Self {
        Self { unit: 1.0, footprint: 1.0, floor: 0.0 }
    }
}

/// A camera and ground for a still image of a whole demo crowd ([`SceneScale::overview`]). Lengths in
/// asset units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Framing {
    /// Camera position.
    pub eye: [f32; 3],
    /// The point looked at (the crowd's centre, at about chest height).
    pub target: [f32; 3],
    /// Near clip plane distance, `> 0`.
    pub near: f32,
    /// Far clip plane distance, `> near`.
    pub far: f32,
    /// Half the side of the ground square (drawn centred below the camera): it covers the crowd's
    /// reach plus [`GROUND_MARGIN`] reference metres on every side.
    pub ground_half_extent: f32,
    /// How far the shadow map reaches from the camera.
    pub shadow_distance: f32,
    /// The host's ground under the whole crowd (what `vat render` and `vat demo` draw on their side
    /// of the frame): centred on the crowd, the crowd's reach plus [`GROUND_MARGIN`] reference
    /// metres on every side, whatever the camera.
    pub ground: GroundSquare,
}

/// A square of ground at `y = 0` on the XZ plane, lengths in asset units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroundSquare {
    /// Its centre, `(x, z)`.
    pub centre: [f32; 2],
    /// Half its side, `>= 0`.
    pub half_extent: f32,
}

impl GroundSquare {
    /// The square centred on the origin that covers the square `[-reach, reach]` of a
    /// [`populate`]d crowd with `margin` to spare on every side (negative lengths count as 0).
    pub fn covering(reach: f32, margin: f32) -> Self {
        Self { centre: [0.0, 0.0], half_extent: reach.max(0.0) + margin.max(0.0) }
    }

    /// Its four corners `(x, 0, z)`, counter-clockwise seen from above (+Y).
    pub fn corners(&self) -> [[f32; 3]; 4] {
        let ([x, z], h) = (self.centre, self.half_extent);
        [[x - h, 0.0, z + h], [x + h, 0.0, z + h], [x + h, 0.0, z - h], [x - h, 0.0, z - h]]
    }

    /// The farthest distance from `eye` to a point of the square, in its units.
    pub fn farthest_from(&self, eye: [f32; 3]) -> f32 {
        self.corners()
            .iter()
            .map(|c| ((c[0] - eye[0]).powi(2) + (c[1] - eye[1]).powi(2) + (c[2] - eye[2]).powi(2)).sqrt())
            .fold(0.0, f32::max)
    }
}

impl SceneScale {
    /// The scale of an asset with these bounds (asset units; see [`SceneScale::unit`]).
    pub fn from_bounds(bounds: &PositionBounds) -> Self {
        let e = bounds.extent;
        let size = e[0].max(e[1]).max(e[2]);
        let unit = if size.is_finite() && size > 0.0 { size / REFERENCE_SIZE } else { 1.0 };
        let max = [0, 1, 2].map(|a| bounds.min[a] + e[a]);
        let far_x = bounds.min[0].abs().max(max[0].abs());
        let far_z = bounds.min[2].abs().max(max[2].abs());
        let footprint = (far_x * far_x + far_z * far_z).sqrt();
        let footprint = if footprint.is_finite() { footprint } else { unit };
        let floor = if bounds.min[1].is_finite() { bounds.min[1] } else { 0.0 };
        Self { unit, footprint, floor }
    }

    /// `reference_metres` (a length tuned for the humanoid) in the asset's units: `reference_metres * unit`.
    pub fn length(&self, reference_metres: f32) -> f32 {
        reference_metres * self.unit
    }

    /// The default demo layout for this asset: [`DEFAULT_SPACING`] reference metres apart, the
    /// default jitter, seed and accessory share.
    pub fn layout(&self) -> DemoLayout {
        DemoLayout { spacing: self.length(DEFAULT_SPACING), ..DemoLayout::default() }
    }

    /// Side of a crowd grid cell for this asset, asset units ([`DEFAULT_CELL_SIZE`] reference metres).
    pub fn cell_size(&self) -> f32 {
        self.length(DEFAULT_CELL_SIZE)
    }

    /// Shadow map reach for this asset, asset units ([`DEFAULT_SHADOW_DISTANCE`] reference metres).
    pub fn shadow_distance(&self) -> f32 {
        self.length(DEFAULT_SHADOW_DISTANCE)
    }

    /// Half the side of the square the characters of [`populate`]`(count, layout)` reach, asset
    /// units: [`half_extent`] (grid and jitter) plus one character's [`footprint`](Self::footprint).
    pub fn crowd_reach(&self, count: u32, layout: &DemoLayout) -> f32 {
        half_extent(count, layout) + self.footprint
    }

    /// The default still-image view of a [`populate`]d crowd (what `vat render` uses without
    /// `--camera`): above one corner of the crowd looking at its centre, at the distances tuned for
    /// the humanoid scaled by [`unit`](Self::unit). With `r = max(half_extent, 2 u)` (`u` the unit):
    /// eye `(0.9 r + 3 u, 0.6 r + 2.5 u, 1.3 r + 5 u)`, target `(0, floor + 0.8 u, 0)`, near
    /// `0.1 u`, far `2000 u` (at least twice the eye's distance plus the ground), shadows to
    /// [`shadow_distance`](Self::shadow_distance), and the ground from
    /// [`ground_half_extent_covering`] with [`GROUND_MARGIN`] reference metres; the host's
    /// [`ground`](Framing::ground) is [`GroundSquare::covering`] the crowd's reach with that margin.
    pub fn overview(&self, count: u32, layout: &DemoLayout) -> Framing {
        let u = self.unit;
        let r = half_extent(count, layout).max(2.0 * u);
        let eye = [r * 0.9 + 3.0 * u, r * 0.6 + 2.5 * u, r * 1.3 + 5.0 * u];
        let target = [0.0, self.floor + 0.8 * u, 0.0];
        let ground_half_extent =
            ground_half_extent_covering(eye, self.crowd_reach(count, layout), self.length(GROUND_MARGIN));
        let eye_distance = (eye[0] * eye[0] + eye[1] * eye[1] + eye[2] * eye[2]).sqrt();
        let ground = GroundSquare::covering(self.crowd_reach(count, layout), self.length(GROUND_MARGIN));
        let far = (2000.0 * u).max(2.0 * (eye_distance + ground_half_extent)).max(ground.farthest_from(eye));
        Framing {
            eye,
            target,
            near: 0.1 * u,
            far,
            ground_half_extent,
            shadow_distance: self.shadow_distance(),
            ground,
        }
    }
}

/// Half the side of a ground square drawn centred below a camera at `eye` (as the renderers draw it)
/// that covers the square `[-reach, reach]` around the origin with `margin` to spare on every side:
/// `max(|eye.x|, |eye.z|) + reach + margin`. Lengths in one unit (metres or asset units).
pub fn ground_half_extent_covering(eye: [f32; 3], reach: f32, margin: f32) -> f32 {
    eye[0].abs().max(eye[2].abs()) + reach.max(0.0) + margin.max(0.0)
}

/// Layout of [`populate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemoLayout {
    /// Distance between neighbouring characters, in the asset's units (default 1.6, for a metre-scale
    /// humanoid; [`SceneScale::layout`] gives the asset's).
    pub spacing: f32,
    /// Random offset of each character within its grid cell, as a fraction of `spacing` (0..=0.5).
    pub jitter: f32,
    /// Seed of the layout (same seed, same crowd).
    pub seed: u64,
    /// Share of characters wearing the socket attachment (0..=1).
    pub accessory_share: f32,
}

impl Default for DemoLayout {
    fn default() -> Self {
        Self { spacing: 1.6, jitter: 0.3, seed: 0x5EED, accessory_share: 0.5 }
    }
}

/// SplitMix64: a tiny, good, dependency-free generator for reproducible layouts.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Spawns `count` characters centred on the origin (a square grid on the XZ plane, +Y up), each playing
/// a random clip at a random phase and heading: locomotion clips (those with a stride) at a
/// stride-matched speed within 15 % of the clip's natural speed (stride / duration), so the feet stay
/// planted; other clips at their natural rate. Random tint and material variant; the accessory bit on
/// `accessory_share` of them. Returns the ids in spawn order.
///
/// # Panics
/// If the crowd's asset has no clips.
pub fn populate(crowd: &mut Crowd, count: u32, layout: &DemoLayout) -> Vec<InstanceId> {
    let clips = crowd.asset().clips.clone();
    assert!(!clips.is_empty(), "the asset has no clips");
    let side = (f64::from(count).sqrt().ceil() as u32).max(1);
    let half = (side as f32 - 1.0) * 0.5 * layout.spacing;
    let mut rng = SplitMix64(layout.seed);
    let mut ids = Vec::with_capacity(count as usize);
    for k in 0..count {
        let (gx, gz) = (k % side, k / side);
        let jx = (rng.next_f32() - 0.5) * 2.0 * layout.jitter * layout.spacing;
        let jz = (rng.next_f32() - 0.5) * 2.0 * layout.jitter * layout.spacing;
        let position = [gx as f32 * layout.spacing - half + jx, 0.0, gz as f32 * layout.spacing - half + jz];
        let yaw = rng.next_f32() * std::f32::consts::TAU;
        let clip = (rng.next_u64() % clips.len() as u64) as u32;
        let phase = rng.next_f32();
        let id = crowd.spawn_at_phase(position, yaw, clip, phase);
        let stride = clips[clip as usize].stride;
        if stride > 0.0 {
            // Speed = stride per natural cycle, varied by +-15 %: the feet stay planted.
            let natural = stride * clips[clip as usize].natural_rate();
            crowd.set_speed(id, natural * (0.85 + 0.3 * rng.next_f32()));
        }
        let material = (rng.next_u64() % 8) as u32 & VARIANT_MATERIAL_MASK;
        let accessory = if rng.next_f32() < layout.accessory_share { VARIANT_ACCESSORY } else { 0 };
        crowd.set_variant(id, material | accessory);
        let shade = 0.75 + 0.25 * rng.next_f32();
        crowd.set_tint(id, [shade, 0.8 + 0.2 * rng.next_f32(), shade]);
        ids.push(id);
    }
    ids
}

/// Half the side of the square [`populate`] fills with character origins, in the layout's units (for
/// placing a camera): grid and jitter, without the characters' own size ([`SceneScale::crowd_reach`]
/// adds it).
pub fn half_extent(count: u32, layout: &DemoLayout) -> f32 {
    let side = (f64::from(count).sqrt().ceil() as f32).max(1.0);
    (side - 1.0) * 0.5 * layout.spacing + layout.jitter * layout.spacing
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds `scale` times those of the reference humanoid (1.24 x 2.07 x 1.43 m, feet at 0).
    fn humanoid_bounds(scale: f32) -> PositionBounds {
        PositionBounds {
            min: [-0.87 * scale, -0.011 * scale, -0.654 * scale],
            extent: [1.241 * scale, 2.073 * scale, 1.427 * scale],
        }
    }

    #[test]
    fn unit_follows_the_asset_size() {
        let h = SceneScale::from_bounds(&humanoid_bounds(1.0));
        assert!((h.unit - 1.0).abs() < 0.01, "{h:?}");
        // The same character in centimetres, and one 0.2 m tall (1/10.4 of 2.07).
        let cm = SceneScale::from_bounds(&humanoid_bounds(100.0));
        assert!((cm.unit / h.unit - 100.0).abs() < 1e-3 && (cm.footprint / h.footprint - 100.0).abs() < 1e-3);
        let tiny = SceneScale::from_bounds(&humanoid_bounds(0.2 / 2.073));
        assert!((tiny.unit * REFERENCE_SIZE - 0.2).abs() < 1e-3, "{tiny:?}");
        // A long centimetre-scale quadruped: its longest side sets the unit.
        let fox = SceneScale::from_bounds(&PositionBounds {
            min: [-20.0, 0.0, -70.0],
            extent: [40.0, 83.0, 140.0],
        });
        assert!((fox.unit - 140.0 / REFERENCE_SIZE).abs() < 1e-3);
        let empty = SceneScale::from_bounds(&PositionBounds { min: [0.0; 3], extent: [0.0; 3] });
        assert_eq!(empty.unit, 1.0);
        assert_eq!(h.layout().jitter, DemoLayout::default().jitter);
        assert!((cm.layout().spacing - 100.0 * h.layout().spacing).abs() < 1e-2);
        assert!((cm.cell_size() / h.cell_size() - 100.0).abs() < 1e-3);
    }

    #[test]
    fn overview_scales_with_the_asset_and_keeps_the_humanoid_view() {
        // The humanoid's view is the one `vat render` always had: eye (0.9 r + 3, 0.6 r + 2.5, 1.3 r + 5).
        let h = SceneScale::from_bounds(&humanoid_bounds(1.0));
        let metres = DemoLayout::default();
        let f = h.overview(400, &h.layout());
        let r = half_extent(400, &metres);
        let old_eye = [r * 0.9 + 3.0, r * 0.6 + 2.5, r * 1.3 + 5.0];
        for a in 0..3 {
            assert!((f.eye[a] / old_eye[a] - 1.0).abs() < 0.01, "{f:?} vs {old_eye:?}");
        }
        assert!((f.target[1] - 0.8).abs() < 0.02 && f.near > 0.0 && f.far > f.near);
        // Every length of the view scales with the asset, so the image is the same picture.
        for s in [100.0f32, 0.2 / 2.073, 38.0] {
            let k = SceneScale::from_bounds(&humanoid_bounds(s));
            let g = k.overview(400, &k.layout());
            let rel = |a: f32, b: f32| (a / (b * s) - 1.0).abs();
            for a in 0..3 {
                assert!(rel(g.eye[a], f.eye[a]) < 1e-3, "scale {s}: {g:?} vs {f:?}");
            }
            assert!(rel(g.target[1], f.target[1]) < 1e-3 && rel(g.near, f.near) < 1e-3);
            assert!(
                rel(g.ground_half_extent, f.ground_half_extent) < 1e-3
                    && rel(g.shadow_distance, f.shadow_distance) < 1e-3
            );
        }
    }

    #[test]
    fn the_ground_covers_the_whole_crowd() {
        for s in [0.2 / 2.073, 1.0, 40.0, 100.0] {
            let k = SceneScale::from_bounds(&humanoid_bounds(s));
            let layout = k.layout();
            for count in [1, 2, 10, 400, 10_000, 250_000] {
                let f = k.overview(count, &layout);
                // The ground square is centred below the eye; the crowd's characters reach
                // `reach` around the origin. Every crowd corner is on the ground with the margin.
                let reach = k.crowd_reach(count, &layout);
                let margin = k.length(GROUND_MARGIN);
                for corner in [[-1.0f32, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]] {
                    for (axis, eye) in [(0usize, f.eye[0]), (1, f.eye[2])] {
                        let p = corner[axis] * reach;
                        assert!(
                            (p - eye).abs() + margin <= f.ground_half_extent * (1.0 + 1e-6),
                            "scale {s}, {count} characters: corner {p} not covered by {f:?}"
                        );
                    }
                }
                // Every character's origin of populate lies within the reach.
                assert!(reach >= half_extent(count, &layout) + k.footprint);
                // The ground's far corner is before the far plane (it is drawn, not clipped at the crowd).
                let far_corner = f.eye[0].abs() + f.ground_half_extent;
                assert!(far_corner * std::f32::consts::SQRT_2 <= f.far + f.eye[1].abs(), "{f:?}");
                // The host's ground: centred on the crowd, every character's reach on it with the
                // margin, its farthest corner within the far plane.
                let g = f.ground;
                assert_eq!(g.centre, [0.0, 0.0]);
                assert!(reach + margin <= g.half_extent * (1.0 + 1e-6), "{g:?}");
                assert!(g.farthest_from(f.eye) <= f.far, "{f:?}");
            }
        }
    }
}
