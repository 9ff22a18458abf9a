//! Assigning particle ids to texture slots across frames.

use super::*;

/// The slots of every particle of every frame ([`assign_slots`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTable {
    /// Slots of the bake: the most particles alive in one frame (`>= 1`).
    pub slot_count: u32,
    /// `frames[k][i]` is `(slot, continues)` for particle `i` of frame `k` (the frame's order):
    /// `continues` is true when the same id is alive in the same slot at the clip's next frame.
    pub frames: Vec<Vec<(u32, bool)>>,
}

/// Assigns each particle of each frame a slot, reading the frames' id lists once (memory: the ids
/// of every frame, 16 bytes per particle-frame, and the table).
///
/// The rule, deterministic: a particle whose id was alive at the previous frame keeps its slot;
/// the slots of particles that died are freed; a new particle (an id not alive at the previous
/// frame, or no id) takes the lowest free slot, else a new one, in the frame's order. So
/// `slot_count` is the most particles alive in one frame. A particle continues when its id is
/// alive in the same slot at the clip's next frame. A particle without an id never continues.
///
/// A `looping` clip's last frame is followed by frame 0, and a particle alive at both (the same
/// id) crosses the wrap: it must hold the same slot at both ends of the clip. Such particles take
/// slots `0, 1, ...` at frame 0 (in frame 0's order), and each slot is *reserved* from the frame
/// the particle is born again before the wrap; a new particle takes a free reserved slot only if it
/// dies before that frame (the tightest such slot first), else the lowest free unreserved slot,
/// else a new one. Every particle crossing the wrap then continues through it, at the cost of at
/// most a few more slots than the most particles alive at once.
///
/// # Errors
/// The first error of `ids`; [`BakeError::InvalidInput`] for an id twice in one frame, more than
/// `u32::MAX` particles in one frame, or no particle in any frame.
pub fn assign_slots(ids: impl Iterator<Item = Result<Vec<Option<u64>>>>, looping: bool) -> Result<SlotTable> {
    let ids: Vec<Vec<Option<u64>>> = ids.collect::<Result<_>>()?;
    for (k, frame) in ids.iter().enumerate() {
        let mut seen = std::collections::HashSet::with_capacity(frame.len());
        if let Some(id) = frame.iter().flatten().find(|&&id| !seen.insert(id)) {
            return Err(invalid(format!("frame {k}"), format!("id {id} appears twice")));
        }
        if u32::try_from(frame.len()).is_err() {
            return Err(invalid(format!("frame {k}"), "more than 2^32 - 1 particles"));
        }
    }
    let (slots, slot_count) = assign_pass(&ids, looping);
    if slot_count == 0 {
        return Err(invalid("sprite source", "has no particle in any frame"));
    }
    let n = ids.len();
    let mut frames = Vec::with_capacity(n);
    for k in 0..n {
        let next = if k + 1 < n {
            Some(k + 1)
        } else if looping {
            Some(0)
        } else {
            None
        };
        let next_slots = next.map(|j| id_slots(&ids[j], &slots[j])).unwrap_or_default();
        frames.push(
            ids[k]
                .iter()
                .zip(&slots[k])
                .map(|(id, &s)| (s, id.is_some_and(|id| next_slots.get(&id) == Some(&s))))
                .collect(),
        );
    }
    Ok(SlotTable { slot_count, frames })
}

/// The slot of each id of a frame (particles without an id left out).
pub(super) fn id_slots(ids: &[Option<u64>], slots: &[u32]) -> HashMap<u64, u32> {
    ids.iter().zip(slots).filter_map(|(id, &s)| id.map(|id| (id, s))).collect()
}

/// For every particle of every frame, the frame its run of consecutive frames (the same id, in
/// clip order, no wrap) begins at (`first = true`) or ends at (`first = false`).
pub(super) fn run_bounds(ids: &[Vec<Option<u64>>], first: bool) -> Vec<Vec<usize>> {
    let n = ids.len();
    let mut out: Vec<Vec<usize>> = ids.iter().map(|f| vec![0; f.len()]).collect();
    let order: Vec<usize> = if first { (0..n).collect() } else { (0..n).rev().collect() };
    let mut before: HashMap<u64, usize> = HashMap::new();
    for k in order {
        let mut here = HashMap::with_capacity(ids[k].len());
        for (i, id) in ids[k].iter().enumerate() {
            let bound = id.and_then(|id| before.get(&id).copied()).unwrap_or(k);
            out[k][i] = bound;
            if let Some(id) = id {
                here.insert(*id, bound);
            }
        }
        before = here;
    }
    out
}

/// The slot rule over every frame (see [`assign_slots`]): the slots of every particle and the
/// slot count. Ids are unique per frame (checked by the caller).
pub(super) fn assign_pass(ids: &[Vec<Option<u64>>], looping: bool) -> (Vec<Vec<u32>>, u32) {
    let n = ids.len();
    let ends = run_bounds(ids, false);
    // Particles crossing the wrap: at frame 0 and at the last frame. Each gets slot w at frame 0;
    // `reborn[w]` is the frame its run reaching the last frame begins (none when that run is the
    // one from frame 0: it lives through the whole clip).
    let mut crossing: HashMap<u64, u32> = HashMap::new();
    let mut reborn: HashMap<u32, usize> = HashMap::new();
    if looping && n > 0 {
        let starts = run_bounds(ids, true);
        let last: HashMap<u64, usize> =
            ids[n - 1].iter().zip(&starts[n - 1]).filter_map(|(id, &b)| id.map(|id| (id, b))).collect();
        for id in ids[0].iter().flatten() {
            if let Some(&b) = last.get(id) {
                let w = crossing.len() as u32;
                crossing.insert(*id, w);
                if b > 0 {
                    reborn.insert(w, b);
                }
            }
        }
    }
    let mut slot_count = crossing.len() as u32;
    let mut prev: HashMap<u64, u32> = HashMap::new();
    let mut held: Vec<u32> = Vec::new();
    // Free slots: plain ones, and reserved ones by the frame their particle is born again.
    let mut free_plain: BTreeSet<u32> = BTreeSet::new();
    let mut free_reserved: BTreeSet<(usize, u32)> = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    for (k, frame) in ids.iter().enumerate() {
        let mut current: HashMap<u64, u32> = HashMap::with_capacity(frame.len());
        let mut slots = vec![u32::MAX; frame.len()];
        for (i, id) in frame.iter().enumerate() {
            let Some(id) = id else { continue };
            let s = if k == 0 { crossing.get(id) } else { prev.get(id) };
            if let Some(&s) = s {
                current.insert(*id, s);
                slots[i] = s;
            }
        }
        let kept: BTreeSet<u32> = current.values().copied().collect();
        for s in std::mem::take(&mut held) {
            if !kept.contains(&s) {
                match reborn.get(&s) {
                    // Reserved until its particle's rebirth (which may be this very frame).
                    Some(&b) if b >= k => free_reserved.insert((b, s)),
                    _ => free_plain.insert(s),
                };
            }
        }
        for (i, id) in frame.iter().enumerate() {
            if slots[i] != u32::MAX {
                continue;
            }
            // A crossing particle born again takes its slot (free: whoever held it meanwhile died
            // before this frame).
            let own = id.and_then(|id| crossing.get(&id).copied()).filter(|w| reborn.get(w) == Some(&k));
            let s = match own {
                Some(w) if free_reserved.remove(&(k, w)) => w,
                _ => {
                    let end = ends[k][i];
                    if let Some(&(b, w)) = free_reserved.range((end + 1, 0)..).next() {
                        free_reserved.remove(&(b, w));
                        w
                    } else if let Some(w) = free_plain.pop_first() {
                        w
                    } else {
                        slot_count += 1;
                        slot_count - 1
                    }
                }
            };
            if let Some(id) = id {
                current.insert(*id, s);
            }
            slots[i] = s;
        }
        held = slots.clone();
        prev = current;
        out.push(slots);
    }
    (out, slot_count)
}
