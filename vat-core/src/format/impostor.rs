//! The geometry of the impostor tier (issue 33): which view directions a baked impostor holds, where
//! each view's image lies, and which views a direction blends. The baker renders a view for every
//! grid point and the runtime picks and weighs them the same way, so both compute everything from
//! the functions here (the shader mirrors them; this is their CPU reference).
//!
//! # Views
//! The view directions are the points of an `n x n` grid laid over the octahedral square `[-1, 1]^2`:
//! grid point `(i, j)` (column `i`, row `j`, both `0..n`) sits at `s = 2 i / (n - 1) - 1`,
//! `t = 2 j / (n - 1) - 1`, so the square's edges and corners are views too. A **full** layout maps the
//! square onto the whole sphere (the octahedral map with +Y up, the lower half folded over the
//! diagonals); a **hemi** layout maps it onto the upper hemisphere only (`y >= 0`, the square being
//! the octahedron's upper half rotated by 45 degrees), which suits characters seen from the ground or
//! above, with twice the angular density for the same count. Directions point from the object
//! **towards the viewer** (metres are not involved: the directions are unit vectors in the object's
//! own frame, +Y up, +Z forward).
//!
//! # A view's image
//! Each view is an orthographic image of the object's bounding sphere (centre `c`, radius `r`): the
//! camera looks along `-d`, its right axis is `normalize(up x d)` with `up = +Y` (or `+Z` within
//! 1e-4 of the poles, where `+Y` and `d` are parallel), its up axis `d x right`. A point `p` lands at
//! `u = 0.5 + dot(p - c, right) / (2 r)`, `v = 0.5 - dot(p - c, up) / (2 r)` (both in `[0, 1]` inside
//! the sphere, `v` down like texture rows) with depth `dot(p - c, d) / r` in `[-1, 1]` (positive
//! towards the viewer).
//!
//! # Blending
//! A direction's continuous grid position falls in one grid cell, split along its diagonal into two
//! triangles; the three views at the corners of its triangle are blended with barycentric weights
//! (summing to 1, exactly 1 on a baked view). So the image changes continuously as the camera moves.

/// Which part of the sphere the views cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ViewCoverage {
    /// The whole sphere (objects seen from below too: flocks, debris in the air).
    Full,
    /// The upper hemisphere (`y >= 0`): ground characters seen from the side or above. A direction
    /// below the horizon uses the horizon's views.
    Hemi,
}

/// The view grid of an impostor: `views_per_side^2` views over [`ViewCoverage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ViewGrid {
    /// Grid points per side, at least 2 (4 views) and at most [`MAX_VIEWS_PER_SIDE`].
    pub views_per_side: u32,
    /// Which directions the grid covers.
    pub coverage: ViewCoverage,
}

/// The largest grid side the format accepts (1,024 views).
pub const MAX_VIEWS_PER_SIDE: u32 = 32;

/// Three views and their weights (summing to 1), as `(view index, weight)`; a view index is
/// `j * views_per_side + i` for grid point `(i, j)`.
pub type ViewBlend = [(u32, f32); 3];

impl ViewGrid {
    /// A grid of `views_per_side` points per side over `coverage`.
    ///
    /// # Errors
    /// [`crate::Error::OutOfRange`] when `views_per_side` is below 2 or above
    /// [`MAX_VIEWS_PER_SIDE`].
    pub fn new(views_per_side: u32, coverage: ViewCoverage) -> crate::Result<ViewGrid> {
        if !(2..=MAX_VIEWS_PER_SIDE).contains(&views_per_side) {
            return Err(crate::Error::OutOfRange {
                what: "impostor views per side",
                value: views_per_side.to_string(),
                expected: "2 to 32",
            });
        }
        Ok(ViewGrid { views_per_side, coverage })
    }

    /// The number of views (`views_per_side^2`).
    pub fn view_count(&self) -> u32 {
        self.views_per_side * self.views_per_side
    }

    /// The unit direction (towards the viewer) of view `index` (`j * views_per_side + i`).
    /// Indices past the grid wrap into it (`index % view_count`).
    pub fn view_direction(&self, index: u32) -> [f32; 3] {
        let n = self.views_per_side;
        let index = index % self.view_count();
        let (i, j) = (index % n, index / n);
        let last = (n - 1) as f32;
        let s = 2.0 * i as f32 / last - 1.0;
        let t = 2.0 * j as f32 / last - 1.0;
        square_to_direction([s, t], self.coverage)
    }

    /// The three views to blend for `direction` (towards the viewer; need not be unit length) and
    /// their weights. A zero or non-finite direction takes the straight-up (hemi) or `+Z` (full)
    /// view.
    pub fn blend(&self, direction: [f32; 3]) -> ViewBlend {
        let n = self.views_per_side;
        let [s, t] = direction_to_square(direction, self.coverage);
        let last = (n - 1) as f32;
        let gx = ((s + 1.0) * 0.5 * last).clamp(0.0, last);
        let gy = ((t + 1.0) * 0.5 * last).clamp(0.0, last);
        // The cell's lower corner, kept inside the grid so the top edge uses the last cell.
        let cx = (gx.floor() as u32).min(n - 2);
        let cy = (gy.floor() as u32).min(n - 2);
        let (fx, fy) = (gx - cx as f32, gy - cy as f32);
        let at = |di: u32, dj: u32| (cy + dj) * n + cx + di;
        if fx + fy <= 1.0 {
            [(at(0, 0), 1.0 - fx - fy), (at(1, 0), fx), (at(0, 1), fy)]
        } else {
            [(at(1, 1), fx + fy - 1.0), (at(0, 1), 1.0 - fx), (at(1, 0), 1.0 - fy)]
        }
    }
}

/// The octahedral square position `[s, t]` (each in `[-1, 1]`) of a direction under `coverage`.
/// A hemi layout takes a direction below the horizon at the horizon (`y` treated as 0). A zero or
/// non-finite direction maps to the square's centre.
pub fn direction_to_square(d: [f32; 3], coverage: ViewCoverage) -> [f32; 2] {
    let [x, mut y, z] = d;
    if coverage == ViewCoverage::Hemi {
        y = y.max(0.0);
    }
    let sum = x.abs() + y.abs() + z.abs();
    if !(sum.is_finite() && sum > 0.0) {
        return [0.0, 0.0];
    }
    let (u, v) = (x / sum, z / sum);
    match coverage {
        // The upper half-octahedron's diamond |u| + |v| <= 1 rotated onto the square.
        ViewCoverage::Hemi => [(u + v).clamp(-1.0, 1.0), (u - v).clamp(-1.0, 1.0)],
        ViewCoverage::Full => {
            if y >= 0.0 {
                [u, v]
            } else {
                // The lower half folds over the diagonals into the square's corners.
                [(1.0 - v.abs()) * sign(u), (1.0 - u.abs()) * sign(v)]
            }
        }
    }
}

/// The unit direction at octahedral square position `[s, t]` (clamped to `[-1, 1]`) under
/// `coverage`: the inverse of [`direction_to_square`] on its range.
pub fn square_to_direction(st: [f32; 2], coverage: ViewCoverage) -> [f32; 3] {
    let s = st[0].clamp(-1.0, 1.0);
    let t = st[1].clamp(-1.0, 1.0);
    let (u, v, y) = match coverage {
        ViewCoverage::Hemi => {
            let (u, v) = ((s + t) * 0.5, (s - t) * 0.5);
            (u, v, 1.0 - u.abs() - v.abs())
        }
        ViewCoverage::Full => {
            let y = 1.0 - s.abs() - t.abs();
            if y >= 0.0 { (s, t, y) } else { ((1.0 - t.abs()) * sign(s), (1.0 - s.abs()) * sign(t), y) }
        }
    };
    normalize([u, y, v])
}

/// The right and up axes of the orthographic camera of a view whose direction (towards the viewer)
/// is `d` (unit): `right = normalize(up_ref x d)`, `up = d x right`, with `up_ref = +Y`, or `+Z`
/// where `d` is within 1e-4 of `+-Y`.
pub fn view_axes(d: [f32; 3]) -> ([f32; 3], [f32; 3]) {
    let up_ref = if d[1].abs() > 1.0 - 1e-4 { [0.0, 0.0, 1.0] } else { [0.0, 1.0, 0.0] };
    let right = normalize(cross(up_ref, d));
    (right, cross(d, right))
}

/// Where point `p` (object space, metres) lands in the image of the view with direction `d`, for a
/// bounding sphere of centre `centre` and radius `radius` (> 0): `[u, v, depth]` as in the module
/// docs (`u`, `v` in `[0, 1]` and depth in `[-1, 1]` inside the sphere; depth positive towards the
/// viewer).
pub fn project_to_view(p: [f32; 3], d: [f32; 3], centre: [f32; 3], radius: f32) -> [f32; 3] {
    let (right, up) = view_axes(d);
    let q = [p[0] - centre[0], p[1] - centre[1], p[2] - centre[2]];
    let inv = 1.0 / radius;
    [0.5 + dot(q, right) * 0.5 * inv, 0.5 - dot(q, up) * 0.5 * inv, dot(q, d) * inv]
}

/// Fixed-point steps of a card's depth correction ([`card_samples`]).
pub const PARALLAX_STEPS: u32 = 2;

/// The mip level from which the run time draws a card from one view alone: the view of the
/// largest weight of [`ViewGrid::blend`], read at the plain reprojection (no depth correction),
/// from the clip's nearer image (no blend between images). From this level on a card covers at
/// most a quarter of its tile's side on screen and costs two texture reads instead of up to
/// fifteen; the price is that its image steps from one view to the next (one grid step of angle)
/// and from one baked image to the next instead of blending. Nearer cards blend as
/// [`card_samples`] says.
pub const SINGLE_VIEW_LEVEL: f32 = 2.0;

/// Where pixel `(u, v)` of a card seen from `direction` (towards the viewer, unit) samples the
/// baked views: for each of the three views [`ViewGrid::blend`] picks, its weight and the image
/// coordinates `(u_k, v_k)` (in `[0, 1]` inside the sphere). Coordinates are relative to the
/// sphere: no centre or radius is needed.
///
/// The card is the plane through the sphere's centre facing the viewer, `(u, v)` its image
/// coordinates as [`project_to_view`] defines them for `direction`. The viewer's ray through the
/// card point `P` is `Q(s) = P + s d` (`s` in `[-1, 1]`, radii towards the viewer). For each view
/// `k` (direction `d_k`) the point where the ray meets the surface view `k` saw is found by
/// [`PARALLAX_STEPS`] fixed-point steps from `s = 0`: `s <- (D_k(uv_k(Q(s))) - P . d_k) / (d . d_k)`
/// (clamped to `[-1, 1]`; kept when `d . d_k <= 0.05`), where `D_k(uv)` is view `k`'s stored depth
/// at `uv` (`depth(k, uv)`, in `[-1, 1]` of the radius: the normal-depth texture's blue channel
/// `b` as `2 b - 1`, sampled bilinearly at mip level 0 as the shader does; a depth that is not
/// finite leaves `s`). The view's image is read at `uv_k(Q(s))`. With `depth` returning NaN this is
/// the plain reprojection of the card plane onto each view.
pub fn card_samples(
    grid: &ViewGrid,
    direction: [f32; 3],
    u: f32,
    v: f32,
    depth: impl Fn(u32, [f32; 2]) -> f32,
) -> [(u32, f32, [f32; 2]); 3] {
    let d = direction;
    let (right, up) = view_axes(d);
    let (x, y) = (2.0 * u - 1.0, 1.0 - 2.0 * v);
    let point = [right[0] * x + up[0] * y, right[1] * x + up[1] * y, right[2] * x + up[2] * y];
    grid.blend(d).map(|(view, weight)| {
        let dk = grid.view_direction(view);
        let along = dot(d, dk);
        let at = |s: f32| {
            let q = [point[0] + s * d[0], point[1] + s * d[1], point[2] + s * d[2]];
            let [uk, vk, _] = project_to_view(q, dk, [0.0; 3], 1.0);
            [uk, vk]
        };
        let mut s = 0.0f32;
        if along > 0.05 {
            for _ in 0..PARALLAX_STEPS {
                let stored = depth(view, at(s));
                if stored.is_finite() {
                    s = ((stored - dot(point, dk)) / along).clamp(-1.0, 1.0);
                }
            }
        }
        (view, weight, at(s))
    })
}

/// Where pixel `(u, v)` of a card seen from `direction` reads the tier when it is drawn from one
/// view ([`SINGLE_VIEW_LEVEL`]): the view of the largest weight of [`ViewGrid::blend`] (of equal
/// weights the first in blend order, as the shader picks it) and the plain reprojection of the
/// card point onto it, `(view, [u_k, v_k])`; outside `[0, 1]` the card is transparent there. The
/// run time reads the nearest texel of the card's mip level there, from the nearer of the clip's
/// two images.
pub fn one_view_sample(grid: &ViewGrid, direction: [f32; 3], u: f32, v: f32) -> (u32, [f32; 2]) {
    let [a, b, c] = card_samples(grid, direction, u, v, |_, _| f32::NAN);
    let heaviest = if b.1 > a.1 && b.1 >= c.1 {
        b
    } else if c.1 > a.1 {
        c
    } else {
        a
    };
    (heaviest.0, heaviest.2)
}

/// The images of a clip a phase shows: `(first, second, t)`, the two images (`0..frames`) to blend
/// with weight `t` on the second. Image `k` of a clip's `frames` was baked at phase `k / frames`;
/// `phase` is the clip's phase in cycles after its wrap (`[0, 1]`, as the mesh decode uses it). A
/// looping clip wraps from its last image to image 0; a one-shot clip holds its last image. A
/// phase that is not finite shows image 0.
pub fn clip_images(frames: u32, phase: f32, looping: bool) -> (u32, u32, f32) {
    let frames = frames.max(1);
    let x = if phase.is_finite() { phase.clamp(0.0, 1.0) * frames as f32 } else { 0.0 };
    let k = (x.floor() as u32).min(frames - 1);
    let t = (x - k as f32).clamp(0.0, 1.0);
    if looping {
        (k, (k + 1) % frames, t)
    } else {
        let next = (k + 1).min(frames - 1);
        (k, next, if next == k { 0.0 } else { t })
    }
}

/// How far past the switch the cross-fade from mesh to card runs: cards start at the switch
/// distance `D` and the mesh stops at `SWITCH_FADE_BAND * D`.
pub const SWITCH_FADE_BAND: f32 = 1.25;

/// The distance (metres, at [`crate::lod::LOD_PIXEL_ANGLE`], the reference view the LOD distances
/// are made for, and an instance scale of 1) past which an instance of a tier with bounding radius
/// `radius` (metres) and tiles of `tile_size` pixels is drawn as a card: where the sphere's
/// diameter covers `tile_size` pixels, so a card texel is no larger than a screen pixel (no visible
/// jump in detail). A view with another pixel angle and an instance of scale `s` switch where
/// `distance * exp2(lod_bias) >= s * switch_distance` (the LODs' rule, [`super::lod`]).
pub fn switch_distance(radius: f32, tile_size: u32) -> f32 {
    2.0 * radius / (tile_size.max(1) as f32 * crate::lod::LOD_PIXEL_ANGLE as f32)
}

/// How far an instance is into the switch: 0 before `start` (mesh only), 1 from `end` on (card
/// only), linear between; `effective` is its distance times `exp2(lod_bias)` divided by its scale.
pub fn switch_fade(effective: f32, start: f32, end: f32) -> f32 {
    // NaN (and anything before the start) is mesh only.
    if effective.partial_cmp(&start).is_none_or(|o| o == std::cmp::Ordering::Less) {
        return 0.0;
    }
    if effective >= end || end <= start {
        return 1.0;
    }
    (effective - start) / (end - start)
}

/// The ordered 4 x 4 dither threshold of pixel `(x, y)` (window coordinates, whole pixels):
/// `(bayer + 0.5) / 16`, in `(0, 1)`. During a switch's cross-fade a pixel of the mesh is kept
/// where `dither >= fade` and a pixel of the card where `dither < fade`, so the two cover each
/// pixel exactly once between them.
pub fn switch_dither(x: u32, y: u32) -> f32 {
    const BAYER: [u32; 16] = [0, 8, 2, 10, 12, 4, 14, 6, 3, 11, 1, 9, 15, 7, 13, 5];
    (BAYER[((y & 3) * 4 + (x & 3)) as usize] as f32 + 0.5) / 16.0
}

/// Smallest and largest image side per view, pixels (powers of two).
pub const TILE_SIZES: std::ops::RangeInclusive<u32> = 8..=512;
/// Most images baked per clip.
pub const MAX_FRAMES_PER_CLIP: u32 = 256;
/// Most images of a tier in all (clips times their frames): each is one layer of the tier's texture
/// arrays, and 256 layers is what every device offers (wgpu's default limit).
pub const MAX_IMPOSTOR_LAYERS: u32 = 256;

/// The impostor tier of an asset ([`crate::container::Manifest::impostors`], format version 8):
/// images of the body from the views of [`ImpostorTier::grid`] at evenly spaced frames of every
/// clip, for drawing far instances as camera-facing cards.
///
/// Layout: each image (one clip, one frame) is one layer of two texture arrays; a layer is the
/// views' tiles side by side, view `j * n + i` (grid point `(i, j)`) at tile column `i`, row `j`, so
/// a layer is `n * tile_size` pixels square. Layers are in clip order, then frame order (frame `k` of
/// a clip's `f` at phase `k / f`). Each blob holds mip level 0 of every layer (row-major, top row
/// first), then level 1 of every layer, ..., each level half the side of the one before (tiles
/// `tile_size >> level` wide, so a tile never bleeds into its neighbour).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImpostorTier {
    /// The view directions.
    pub grid: ViewGrid,
    /// Pixels per side of one view's image, a power of two in [`TILE_SIZES`].
    pub tile_size: u32,
    /// Images per clip (in the manifest's clip order), each 1 to [`MAX_FRAMES_PER_CLIP`].
    pub frames_per_clip: Vec<u32>,
    /// Centre of the bounding sphere every view frames, object space, metres.
    pub centre: [f32; 3],
    /// Its radius, metres (positive).
    pub radius: f32,
    /// Mip levels stored per layer, 1 to `log2(tile_size) + 1`.
    pub mip_levels: u32,
    /// sRGB colour with coverage in alpha, `Rgba8UnormSrgb` texels.
    pub color: super::super::container::BlobId,
    /// Octahedral object-space normal (R, G), view depth (B: `(depth + 1) / 2`, depth in `[-1, 1]`
    /// of the radius, positive towards the viewer), material id (A: the most covering material of the
    /// texel, and of the most covered texel of the level above in the mips; 0 where uncovered),
    /// `Rgba8Unorm` texels. An asset without materials is coloured by the palette of that id at run
    /// time (with the instance's variant and tint), as its mesh is.
    pub normal_depth: super::super::container::BlobId,
    /// What the bake measured against the mesh at its sample views and frames, and `vat verify`
    /// checks again.
    pub bound: ImpostorBound,
}

/// The worst agreement between the impostor and the mesh it stands for over the verified samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImpostorBound {
    /// The smallest coverage intersection-over-union (0 to 1) of a sample.
    pub min_coverage_iou: f32,
    /// The largest mean absolute colour difference over a sample's covered pixels, as a fraction
    /// of full scale (0 to 1).
    pub max_mean_color_error: f32,
}

impl ImpostorTier {
    /// Images in all: one layer of each texture array per clip frame.
    pub fn layer_count(&self) -> u64 {
        self.frames_per_clip.iter().map(|&f| u64::from(f)).sum()
    }

    /// Side of a layer at mip `level`, pixels.
    pub fn layer_side(&self, level: u32) -> u64 {
        u64::from(self.grid.views_per_side) * u64::from(self.tile_size >> level.min(31))
    }

    /// Bytes of each of the two blobs: every level of every layer, 4 bytes per texel (`None` on
    /// overflow).
    pub fn blob_bytes(&self) -> Option<u64> {
        (0..self.mip_levels).try_fold(0u64, |sum, level| {
            let side = self.layer_side(level);
            side.checked_mul(side)?.checked_mul(4)?.checked_mul(self.layer_count())?.checked_add(sum)
        })
    }

    /// Bytes of the colour blob of a tier with `sets` colour sets (1 plus
    /// [`crate::container::Manifest::impostor_material_variants`]): [`Self::blob_bytes`] per set
    /// (`None` on overflow).
    pub fn color_blob_bytes(&self, sets: u32) -> Option<u64> {
        self.blob_bytes()?.checked_mul(u64::from(sets))
    }

    /// Bytes of one layer at mip `level` (4 per texel).
    fn layer_bytes(&self, level: u32) -> u64 {
        self.layer_side(level).saturating_mul(self.layer_side(level)).saturating_mul(4)
    }

    /// Where colour set `set` (0: the authored materials; `v`: material variant `v`, of `sets` in
    /// all) of mip `level` lies in the colour blob: its [`Self::layer_count`] layers, every level
    /// holding every set's layers in set order (so that the run time binds one texture array of
    /// `sets * layer_count` layers, layer `set * layer_count + l` showing layer `l` in that set's
    /// colours). With one set this is also where `level` lies in the normal-depth blob. Byte
    /// offsets, saturating (a validated tier never saturates).
    pub fn color_level_range(&self, sets: u32, set: u32, level: u32) -> std::ops::Range<u64> {
        let layers = self.layer_count();
        let before: u64 = (0..level)
            .map(|l| self.layer_bytes(l).saturating_mul(layers).saturating_mul(u64::from(sets)))
            .fold(0, u64::saturating_add);
        let level_set = self.layer_bytes(level).saturating_mul(layers);
        let start = before.saturating_add(level_set.saturating_mul(u64::from(set)));
        start..start.saturating_add(level_set)
    }

    /// The first layer of `clip`'s images (`None` past the clips).
    pub fn first_layer(&self, clip: usize) -> Option<u64> {
        (clip < self.frames_per_clip.len())
            .then(|| self.frames_per_clip[..clip].iter().map(|&f| u64::from(f)).sum())
    }
}

/// Checks a manifest's impostor tier against itself, the manifest and the file (the reader runs it).
pub(crate) fn validate_impostor_tier(
    tier: &ImpostorTier,
    m: &crate::container::Manifest,
    bytes: &[u8],
    limits: &crate::container::Limits,
) -> crate::Result<()> {
    use crate::Error;
    use crate::container::reader::{expect_equal, sized_blob, within};
    let range = |what: &'static str, value: String, expected: &'static str| Error::OutOfRange {
        what,
        value,
        expected,
    };
    if m.vertex_animation.is_none() || m.mode() != crate::container::VatMode::Soft {
        return Err(Error::MissingSection {
            what: "vertex animation (an impostor tier stands for a soft or skeletal body)",
        });
    }
    ViewGrid::new(tier.grid.views_per_side, tier.grid.coverage)?;
    if !(TILE_SIZES.contains(&tier.tile_size) && tier.tile_size.is_power_of_two()) {
        return Err(range("impostor tile size", tier.tile_size.to_string(), "a power of two from 8 to 512"));
    }
    within("impostor layer side", tier.layer_side(0), limits.max_texture_dimension.into())?;
    expect_equal(
        "impostor clips (one frame count per clip)",
        m.clips.len() as u64,
        tier.frames_per_clip.len() as u64,
    )?;
    if let Some(f) = tier.frames_per_clip.iter().find(|&&f| f == 0 || f > MAX_FRAMES_PER_CLIP) {
        return Err(range("impostor frames per clip", f.to_string(), "1 to 256"));
    }
    within("impostor layers", tier.layer_count(), MAX_IMPOSTOR_LAYERS.into())?;
    if tier.mip_levels == 0 || tier.mip_levels > tier.tile_size.ilog2() + 1 {
        return Err(range("impostor mip levels", tier.mip_levels.to_string(), "1 to log2(tile size) + 1"));
    }
    if !(tier.centre.iter().all(|c| c.is_finite()) && tier.radius.is_finite()) {
        return Err(Error::NotFinite { what: "impostor bounding sphere" });
    }
    if tier.radius <= 0.0 {
        return Err(range("impostor radius", tier.radius.to_string(), "greater than 0"));
    }
    check_bound("impostor bound", tier.bound)?;
    let variants = m.impostor_material_variants;
    if variants > 0 && m.materials.is_empty() {
        return Err(Error::MissingSection {
            what: "materials (impostor colour images per material variant are an asset with materials')",
        });
    }
    within("impostor material variants", variants.into(), m.material_variants.len() as u64)?;
    let sets = variants.saturating_add(1);
    within(
        "impostor colour layers (images times colour sets)",
        tier.layer_count().saturating_mul(sets.into()),
        MAX_IMPOSTOR_LAYERS.into(),
    )?;
    let too_large = Error::LimitExceeded {
        what: "impostor texture bytes",
        value: u64::MAX,
        limit: limits.max_total_bytes,
    };
    let len = tier.blob_bytes().ok_or(too_large.clone())?;
    let color_len = tier.color_blob_bytes(sets).ok_or(too_large)?;
    within("impostor texture bytes", color_len, limits.max_total_bytes)?;
    sized_blob(bytes, m, tier.color, "impostor colour", color_len)?;
    sized_blob(bytes, m, tier.normal_depth, "impostor normal and depth", len)?;
    Ok(())
}

/// Checks [`crate::container::Manifest::impostor_one_view_bound`] `bound` of manifest `m`: a tier
/// beside it, both figures in `0..=1`.
pub(crate) fn validate_one_view_bound(
    bound: ImpostorBound,
    m: &crate::container::Manifest,
) -> crate::Result<()> {
    if m.impostors.is_none() {
        return Err(crate::Error::MissingSection {
            what: "impostor tier (the one-view bound is the far cards' of a tier)",
        });
    }
    check_bound("impostor one-view bound", bound)
}

/// Both figures of `b` in `0..=1` (NaN is not).
fn check_bound(what: &'static str, b: ImpostorBound) -> crate::Result<()> {
    if !((0.0..=1.0).contains(&b.min_coverage_iou) && (0.0..=1.0).contains(&b.max_mean_color_error)) {
        return Err(crate::Error::OutOfRange {
            what,
            value: format!("IoU {}, colour error {}", b.min_coverage_iou, b.max_mean_color_error),
            expected: "both in 0..=1",
        });
    }
    Ok(())
}

fn sign(x: f32) -> f32 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}

/// Small vector helper shared by the format's modules.
pub(crate) fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Small vector helper shared by the format's modules.
pub(crate) fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// Small vector helper shared by the format's modules.
pub(crate) fn normalize(a: [f32; 3]) -> [f32; 3] {
    let len = dot(a, a).sqrt();
    if len > 0.0 { [a[0] / len, a[1] / len, a[2] / len] } else { [0.0, 1.0, 0.0] }
}

#[cfg(test)]
#[path = "impostor_tests.rs"]
mod tests;
