//! Per-frame work: dirty record ranges and CPU culling into draw batches.

use super::spatial::{CellData, Spatial};
use super::{CrowdConfig, CrowdStats, DrawBatch, Shape, ViewDraws};
use crate::crowd::Frustum;
use crate::instance::{InstanceRecord, VARIANT_ACCESSORY, VARIANT_HIDDEN};
use crate::lod::{LodDistance, LodThresholds};

/// Which records changed since the last frame: one bit per record, plus the list of words that have a
/// bit set (so a frame with few changes does not scan the whole bit set).
#[derive(Debug, Clone, Default)]
pub(super) struct DirtySet {
    bits: Vec<u64>,
    words: Vec<u32>,
    all: bool,
}

impl DirtySet {
    /// Makes room for `n` records.
    pub(super) fn resize(&mut self, n: usize) {
        self.bits.resize(n.div_ceil(64), 0);
    }

    pub(super) fn mark(&mut self, i: usize) {
        let w = i / 64;
        let word = &mut self.bits[w];
        if *word == 0 {
            self.words.push(w as u32);
        }
        *word |= 1 << (i % 64);
    }

    pub(super) fn mark_all(&mut self) {
        self.all = true;
    }

    /// Writes the dirty records of `0..n` as sorted, disjoint `(start, end)` ranges into `out`, merging
    /// two runs separated by at most `gap` clean records, and clears the set.
    pub(super) fn take_ranges(&mut self, n: u32, gap: u32, out: &mut Vec<(u32, u32)>) {
        out.clear();
        if self.all {
            for &w in &self.words {
                self.bits[w as usize] = 0;
            }
            self.words.clear();
            self.all = false;
            if n > 0 {
                out.push((0, n));
            }
            return;
        }
        if self.words.is_empty() {
            return;
        }
        if self.words.len() * 16 > self.bits.len() {
            // Dense: a linear scan is cheaper than sorting the word list.
            for w in 0..self.bits.len() {
                let word = std::mem::take(&mut self.bits[w]);
                push_word_runs(out, w as u32, word, gap);
            }
        } else {
            self.words.sort_unstable();
            for &w in &self.words {
                let word = std::mem::take(&mut self.bits[w as usize]);
                push_word_runs(out, w, word, gap);
            }
        }
        self.words.clear();
    }
}

/// Appends the runs of set bits of `word` (records `64 w ..`) to `out`, merging with the last range
/// when at most `gap` records apart.
fn push_word_runs(out: &mut Vec<(u32, u32)>, w: u32, mut word: u64, gap: u32) {
    while word != 0 {
        let tz = word.trailing_zeros();
        let len = (word >> tz).trailing_ones();
        let start = w * 64 + tz;
        let end = start + len;
        match out.last_mut() {
            Some(last) if start <= last.1.saturating_add(gap) => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
        if tz + len >= 64 {
            break;
        }
        word &= !(((1u64 << len) - 1) << tz);
    }
}

/// Merges consecutive instance-list ranges of the same key into one batch.
#[derive(Debug, Default)]
struct Runs {
    current: Option<DrawBatch>,
}

impl Runs {
    /// Adds `start..end` at `lod`; returns the finished batch if it could not be merged. With
    /// `any_lod`, ranges of different LODs merge too (attachments ignore the LOD).
    fn push(&mut self, lod: u32, start: u32, end: u32, any_lod: bool) -> Option<DrawBatch> {
        if let Some(b) = &mut self.current
            && (any_lod || b.lod == lod)
            && b.first_instance + b.instance_count == start
        {
            b.instance_count += end - start;
            return None;
        }
        self.current.replace(DrawBatch { lod, first_instance: start, instance_count: end - start })
    }

    fn finish(&mut self) -> Option<DrawBatch> {
        self.current.take()
    }
}

/// Everything the cull loop produces.
#[derive(Debug, Default)]
pub(super) struct CullOutput {
    pub(super) main_fade: Vec<DrawBatch>,
    pub(super) main_plain: Vec<DrawBatch>,
    pub(super) shadow: Vec<DrawBatch>,
    pub(super) attachments: Vec<DrawBatch>,
    pub(super) impostors: Vec<DrawBatch>,
    pub(super) impostor_shadow: Vec<DrawBatch>,
    pub(super) stats: CrowdStats,
    /// Whether the far pool (`list[listed_len..]`) was rewritten this frame.
    pub(super) far_rewritten: bool,
}

/// Far-pool bookkeeping kept across frames.
#[derive(Debug, Clone, Default)]
pub(super) struct FarPool {
    now: Vec<u32>,
    prev: Vec<u32>,
}

/// Capacities of last frame's batch lists, so this frame's output is allocated once at the right size.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BatchCapacity {
    main_fade: usize,
    main_plain: usize,
    shadow: usize,
    attachments: usize,
}

/// Inputs of [`cull`] that are not the grid.
pub(super) struct CullParams<'a> {
    pub(super) config: &'a CrowdConfig,
    /// Route the finest LODs to the cross-fade pipeline ([`super::Crowd::cross_fade_in_use`]).
    pub(super) cross_fade: bool,
    pub(super) shape: &'a Shape,
    pub(super) thresholds: &'a LodThresholds,
    pub(super) lod_triangles: &'a [u32],
    pub(super) attachment_triangles: u32,
    pub(super) frustum: &'a Frustum,
    pub(super) eye: [f32; 3],
    /// The crowd's LOD bias plus the camera's (`Camera::lod_bias`), in doublings of distance.
    pub(super) lod_bias: f32,
    /// The impostor switch `(start, end)` in effective distance (metres times `exp2(lod_bias)`
    /// over the scale), `None` when no card is drawn.
    pub(super) impostor: Option<(f32, f32)>,
    /// The list changed membership this frame: the far pool must be rebuilt.
    pub(super) membership_changed: bool,
    /// The crowd's records (the members of a cell the frustum cuts are tested one by one).
    pub(super) records: &'a [InstanceRecord],
}

/// Culls every non-empty cell, picks its LOD, builds the batches of every pass and the far pool.
pub(super) fn cull(
    spatial: &mut Spatial,
    far: &mut FarPool,
    capacity: &mut BatchCapacity,
    p: &CullParams<'_>,
) -> CullOutput {
    let config = p.config;
    let lod_count = p.thresholds.lod_count();
    let last_lod = lod_count - 1;
    // The LOD limits clamped to the asset's last LOD: an asset with fewer LODs than the limits
    // assume (a single LOD) draws every LOD within them, shadows included.
    let shadow_max_lod = config.shadow_max_lod.min(last_lod);
    let cross_fade_max_lod = config.cross_fade_max_lod.min(last_lod);
    let attachment_max_lod = config.attachment_max_lod.min(last_lod);
    let far_active = config.far_pool && lod_count > 1;
    let attachments_on = config.attachments && p.attachment_triangles > 0;
    let attach_tris = u64::from(p.attachment_triangles);
    let tris = |lod: u32| u64::from(p.lod_triangles.get(lod as usize).copied().unwrap_or(0));
    let mut main_fade = Vec::with_capacity(capacity.main_fade);
    let mut main_plain = Vec::with_capacity(capacity.main_plain);
    let mut shadow = Vec::with_capacity(capacity.shadow);
    let mut attachments = Vec::with_capacity(capacity.attachments);
    let mut route_main = |b: Option<DrawBatch>| {
        if let Some(b) = b {
            if p.cross_fade && b.lod <= cross_fade_max_lod {
                main_fade.push(b);
            } else {
                main_plain.push(b);
            }
        }
    };
    let mut main_runs = Runs::default();
    let mut shadow_runs = Runs::default();
    let mut attach_runs = Runs::default();
    let mut cards = Cards::new(p, config, lod_count);
    let mut s = CrowdStats::default();
    let mut far_shown = 0u32;
    let mut far_accessory = 0u32;
    let mut cut = Vec::new();
    far.now.clear();
    let shape = p.shape;
    for &c in &spatial.nonempty {
        let cell = &spatial.cells[c as usize];
        if cell.shown == 0 {
            continue;
        }
        let Some((lod, inside)) = visible_cell_lod(cell, shape, p, config) else {
            continue;
        };
        let (start, end) = (spatial.cell_start[c as usize], spatial.cell_start[c as usize + 1]);
        if cards.on() {
            // Cards take whole cells (their vertex stage keeps the members past the switch).
            cards.push(start, end, cell, shape, p);
            s.triangles += 2 * u64::from(cell.shown);
            if cards.card_only(cell, shape, p) {
                s.visible_cells += 1;
                s.submitted += cell.shown;
                continue;
            }
        }
        if far_active && lod == last_lod {
            // The far pool copies whole cells (a pool that followed the frustum edge would be
            // rewritten and uploaded whenever the camera turns).
            s.visible_cells += 1;
            s.submitted += cell.shown;
            s.hidden_in_view += cell.count - cell.shown;
            s.triangles += u64::from(cell.shown) * tris(lod);
            far.now.push(c);
            far_shown += cell.shown;
            far_accessory += cell.accessory;
            continue;
        }
        s.visible_cells += 1;
        // The cell's runs in view: the whole section, or (the frustum cuts the cell) the runs of
        // its members in view. Shadows take the whole cell: its members beside the view still
        // cast into it.
        let (shown, accessory) = if inside {
            s.hidden_in_view += cell.count - cell.shown;
            cut.clear();
            cut.push((start, end));
            (cell.shown, cell.accessory)
        } else {
            members_in_view(spatial, start, end, shape, p, &mut cut)
        };
        s.submitted += shown;
        s.triangles += u64::from(shown) * tris(lod);
        for &(a, b) in &cut {
            route_main(main_runs.push(lod, a, b, false));
        }
        if config.shadows && lod <= shadow_max_lod {
            shadow.extend(shadow_runs.push(lod, start, end, false));
            s.shadow_casters += cell.shown;
        }
        if attachments_on && lod <= attachment_max_lod && accessory > 0 {
            for &(a, b) in &cut {
                attachments.extend(attach_runs.push(lod, a, b, true));
            }
            s.attachments_drawn += accessory;
            s.triangles += u64::from(accessory) * attach_tris;
        }
    }

    // The far pool: members of every visible last-LOD cell, copied after the listed section.
    let far_rewritten = p.membership_changed || far.now != far.prev;
    if far_rewritten {
        spatial.list.truncate(spatial.listed_len);
        for &c in &far.now {
            let (a, b) =
                (spatial.cell_start[c as usize] as usize, spatial.cell_start[c as usize + 1] as usize);
            spatial.list.extend_from_within(a..b);
        }
    }
    std::mem::swap(&mut far.now, &mut far.prev);
    let far_len = (spatial.list.len() - spatial.listed_len) as u32;
    if far_len > 0 {
        let (start, end) = (spatial.listed_len as u32, spatial.list.len() as u32);
        s.far_pool_instances = far_shown;
        route_main(main_runs.push(last_lod, start, end, false));
        if config.shadows && last_lod <= shadow_max_lod {
            shadow.extend(shadow_runs.push(last_lod, start, end, false));
            s.shadow_casters += far_shown;
        }
        if attachments_on && last_lod <= attachment_max_lod && far_accessory > 0 {
            attachments.extend(attach_runs.push(last_lod, start, end, true));
            s.attachments_drawn += far_accessory;
            s.triangles += u64::from(far_accessory) * attach_tris;
        }
    }
    route_main(main_runs.finish());
    shadow.extend(shadow_runs.finish());
    attachments.extend(attach_runs.finish());
    let (impostors, impostor_shadow) = cards.finish();

    s.drawn = s.submitted;
    s.draws_main = (main_fade.len() + main_plain.len() + impostors.len()) as u32;
    s.draws_shadow = (shadow.len() + impostor_shadow.len()) as u32;
    s.draws_attachments = attachments.len() as u32;
    *capacity = BatchCapacity {
        main_fade: main_fade.len(),
        main_plain: main_plain.len(),
        shadow: shadow.len(),
        attachments: attachments.len(),
    };
    CullOutput {
        main_fade,
        main_plain,
        shadow,
        attachments,
        impostors,
        impostor_shadow,
        stats: s,
        far_rewritten,
    }
}

/// The impostor cards' batches of a cull: whole cells, in the draw after the mesh LODs (`lod` the
/// LOD count), or the next (`lod` one more) for cells whose every member is drawn from one view.
struct Cards {
    switch: Option<(f32, f32)>,
    slot: u32,
    shadows: bool,
    colour: Runs,
    shadow: Runs,
    colour_batches: Vec<DrawBatch>,
    shadow_batches: Vec<DrawBatch>,
}

impl Cards {
    fn new(p: &CullParams<'_>, config: &CrowdConfig, lod_count: u32) -> Self {
        Self {
            switch: p.impostor,
            slot: lod_count,
            shadows: config.shadows && config.shadow_max_lod >= lod_count,
            colour: Runs::default(),
            shadow: Runs::default(),
            colour_batches: Vec::new(),
            shadow_batches: Vec::new(),
        }
    }

    /// Whether cards are drawn at all.
    fn on(&self) -> bool {
        self.switch.is_some()
    }

    /// Adds the list section `start..end` (the members of `cell`), to the one-view cards' batches
    /// when every member is drawn from one view.
    fn push(&mut self, start: u32, end: u32, cell: &CellData, shape: &Shape, p: &CullParams<'_>) {
        use crate::format::impostor::SINGLE_VIEW_LEVEL;
        let one_view = self
            .switch
            .is_some_and(|(start, _)| nearest_effective(cell, shape, p) >= start * SINGLE_VIEW_LEVEL.exp2());
        let slot = self.slot + u32::from(one_view);
        self.colour_batches.extend(self.colour.push(slot, start, end, false));
        if self.shadows {
            self.shadow_batches.extend(self.shadow.push(slot, start, end, false));
        }
    }

    /// Whether every member of `cell` is past the switch's fade (cards only, no mesh).
    fn card_only(&self, cell: &CellData, shape: &Shape, p: &CullParams<'_>) -> bool {
        self.switch.is_some_and(|(_, end)| nearest_effective(cell, shape, p) >= end)
    }

    fn finish(mut self) -> (Vec<DrawBatch>, Vec<DrawBatch>) {
        self.colour_batches.extend(self.colour.finish());
        self.shadow_batches.extend(self.shadow.finish());
        (self.colour_batches, self.shadow_batches)
    }
}

/// The smallest effective distance of a member of `cell` (the impostor switch's measure): the
/// distance from `p.eye` to the nearest point of its box, times `exp2(lod_bias)`, over its
/// largest scale.
fn nearest_effective(cell: &CellData, shape: &Shape, p: &CullParams<'_>) -> f32 {
    let (lo, hi) = instance_box(cell.min, cell.max, cell.max_scale, shape);
    let eye = p.eye;
    let d = |a: usize| (lo[a] - eye[a]).max(eye[a] - hi[a]).max(0.0);
    length([d(0), d(1), d(2)]) * p.lod_bias.exp2() / cell.max_scale
}

/// The LOD of `cell` seen from `p.eye` (with `p.lod_bias`), if the cell's box (its members' box
/// grown by the instance volume, see `Shape`, at the cell's largest scale) is not outside any plane
/// of `p.frustum`.
fn visible_cell_lod(
    cell: &CellData,
    shape: &Shape,
    p: &CullParams<'_>,
    config: &CrowdConfig,
) -> Option<(u32, bool)> {
    let (frustum, eye, thresholds) = (p.frustum, p.eye, p.thresholds);
    let last_lod = thresholds.lod_count() - 1;
    // The members' box grown by the instance volume (see `Shape`), at the cell's largest scale.
    let (lo, hi) = instance_box(cell.min, cell.max, cell.max_scale, shape);
    let centre = [(lo[0] + hi[0]) * 0.5, (lo[1] + hi[1]) * 0.5, (lo[2] + hi[2]) * 0.5];
    let half = [(hi[0] - lo[0]) * 0.5, (hi[1] - lo[1]) * 0.5, (hi[2] - lo[2]) * 0.5];
    // The box itself against each plane (its most inward corner): tighter than a sphere around it,
    // most of all for the thin, oblique boxes of a shadow cascade. Slack for the f32 rounding of
    // the box and the plane distances.
    let reach = centre[0].abs().max(centre[1].abs()).max(centre[2].abs()) + length(half);
    let slack = reach * 1e-5 + 1e-4;
    let (lo_s, hi_s) = (lo.map(|v| v - slack), hi.map(|v| v + slack));
    if !frustum.intersects_box(lo_s, hi_s) {
        return None;
    }
    let inside = frustum.contains_box(lo_s, hi_s);
    let distance = match config.lod_distance {
        LodDistance::CellCentre => length([eye[0] - centre[0], eye[1] - centre[1], eye[2] - centre[2]]),
        LodDistance::NearEdge => {
            let d = |a: usize| (lo[a] - eye[a]).max(eye[a] - hi[a]).max(0.0);
            length([d(0), d(1), d(2)])
        }
    };
    Some((thresholds.select(distance, p.lod_bias).min(last_lod), inside))
}

/// The maximal runs `a..b` of list positions in `start..end` (a cell's list section) whose
/// instances are shown and whose box (the instance volume at its position and scale, as a cell's,
/// see `Shape`) is not outside any plane of `p.frustum`, into `runs` (cleared first); returns how
/// many instances the runs hold and how many of them carry the accessory bit. Conservative like
/// the cell test: every shown instance whose sphere meets the frustum is in a run.
fn members_in_view(
    spatial: &Spatial,
    start: u32,
    end: u32,
    shape: &Shape,
    p: &CullParams<'_>,
    runs: &mut Vec<(u32, u32)>,
) -> (u32, u32) {
    runs.clear();
    let mut open: Option<u32> = None;
    let (mut shown, mut accessory) = (0, 0);
    for k in start..end {
        let r = &p.records[spatial.list[k as usize] as usize];
        let keep = r.variant_bits & VARIANT_HIDDEN == 0 && {
            let (lo, hi) = instance_box(r.position, r.position, r.scale, shape);
            // Slack for the f32 rounding of the box and the plane distances, as for a cell.
            let reach = lo.iter().chain(&hi).fold(0.0f32, |m, v| m.max(v.abs()));
            let slack = reach * 1e-5 + 1e-4;
            p.frustum.intersects_box(lo.map(|v| v - slack), hi.map(|v| v + slack))
        };
        match (keep, open) {
            (true, None) => open = Some(k),
            (false, Some(a)) => {
                runs.push((a, k));
                open = None;
            }
            _ => {}
        }
        if keep {
            shown += 1;
            accessory += u32::from(r.variant_bits & VARIANT_ACCESSORY != 0);
        }
    }
    if let Some(a) = open {
        runs.push((a, end));
    }
    (shown, accessory)
}

/// The box of the positions `min..max` grown by the instance volume at scale `k` (see `Shape`).
fn instance_box(min: [f32; 3], max: [f32; 3], k: f32, shape: &Shape) -> ([f32; 3], [f32; 3]) {
    let mh = shape.margin_h * k;
    let lo = [min[0] - mh, min[1] + (shape.y_lo * k).min(0.0), min[2] - mh];
    let hi = [max[0] + mh, max[1] + (shape.y_hi * k).max(0.0), max[2] + mh];
    (lo, hi)
}

/// The batches of an extra view (see `Crowd::cull_view`).
pub(super) fn cull_view(spatial: &Spatial, p: &CullParams<'_>) -> ViewDraws {
    let config = p.config;
    let last_lod = p.thresholds.lod_count() - 1;
    let cross_fade_max_lod = config.cross_fade_max_lod.min(last_lod);
    let attachment_max_lod = config.attachment_max_lod.min(last_lod);
    let attachments_on = config.attachments && p.attachment_triangles > 0;
    let mut out = ViewDraws::default();
    let (mut main_runs, mut attach_runs) = (Runs::default(), Runs::default());
    let mut cut = Vec::new();
    // A view's cards are depth draws: those of the view's cells, cast or not by the config.
    let mut cards = Cards::new(p, config, p.thresholds.lod_count());
    cards.shadows = false;
    let route_main = |b: Option<DrawBatch>, out: &mut ViewDraws| {
        if let Some(b) = b {
            if p.cross_fade && b.lod <= cross_fade_max_lod {
                out.main_fade.push(b);
            } else {
                out.main_plain.push(b);
            }
        }
    };
    for &c in &spatial.nonempty {
        let cell = &spatial.cells[c as usize];
        if cell.shown == 0 {
            continue;
        }
        let Some((lod, inside)) = visible_cell_lod(cell, p.shape, p, config) else {
            continue;
        };
        // Every cell's members stand in its own list section, far-pool cells included.
        let (start, end) = (spatial.cell_start[c as usize], spatial.cell_start[c as usize + 1]);
        if cards.on() {
            cards.push(start, end, cell, p.shape, p);
            if cards.card_only(cell, p.shape, p) {
                out.instances += cell.shown;
                continue;
            }
        }
        let (shown, accessory) = if inside {
            cut.clear();
            cut.push((start, end));
            (cell.shown, cell.accessory)
        } else {
            // The view cuts the cell (a shadow cascade's edge): its members in the view alone.
            members_in_view(spatial, start, end, p.shape, p, &mut cut)
        };
        out.instances += shown;
        for &(a, b) in &cut {
            route_main(main_runs.push(lod, a, b, false), &mut out);
        }
        if attachments_on && lod <= attachment_max_lod && accessory > 0 {
            for &(a, b) in &cut {
                out.attachments.extend(attach_runs.push(lod, a, b, true));
            }
        }
    }
    route_main(main_runs.finish(), &mut out);
    out.attachments.extend(attach_runs.finish());
    out.impostors = cards.finish().0;
    out
}

fn length(d: [f32; 3]) -> f32 {
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}
