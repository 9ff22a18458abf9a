//! Which vat material each glTF material becomes.
//!
//! A `.vat` holds at most [`MAX_MATERIALS`] (256) materials, one 8-bit id per vertex. A document
//! within that keeps its materials as they are: glTF material `k` is vat material `k`, and the
//! glTF default material (for primitives without one) comes after them. A document over it is
//! compacted, each step exact, and each said in one note:
//!
//! 1. Materials no primitive uses are left out.
//! 2. Materials identical but for their `name` and `extras` (which vat does not draw with) share
//!    one vat material, the first one's.
//! 3. When more than 256 remain, materials that differ only in `baseColorFactor` (exports that
//!    write one material per colour: voxel and low-poly models, CAD) share one vat material with a
//!    white factor, each one's factor moved into the vertex colours of the vertices drawn with it.
//!    glTF multiplies the two (`baseColorFactor x COLOR_0`), so the product is the same; it is stored
//!    as 8-bit linear vertex colour, as any `COLOR_0` is, and the note gives the largest rounding
//!    of a factor (none for factors that are multiples of 1/255, as 8-bit palettes are).
//!
//! A document still over the limit, or one with `KHR_materials_variants` (whose mappings name glTF
//! materials), is an error naming the counts.

use std::collections::HashMap;

use serde_json::Value;
use vat_core::container::MAX_MATERIALS;

use super::Ctx;
use crate::Result;

/// What the vertices of one glTF material slot are drawn with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Slot {
    /// The vat material id.
    pub(super) id: u8,
    /// The base colour factor moved into the vertex colours (step 3), else `None`.
    pub(super) color: Option<[f32; 4]>,
    /// Slots with the same key draw their vertices identically (same id, same colour): a vertex
    /// shared by primitives of two such slots stays one vertex.
    pub(super) key: u32,
}

/// Where one vat material comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Source {
    /// The glTF material it is imported from; `None` for the glTF default material.
    pub(super) material: Option<usize>,
    /// Whether its base colour factor went into the vertex colours (it is then white).
    pub(super) white: bool,
    /// The distinct glTF materials it stands for (1 unless merged or folded).
    pub(super) members: usize,
}

/// The map from glTF material slots to vat materials (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct MaterialPlan {
    /// By slot: glTF material `k` at `k`, the default material at the document's material count.
    slots: Vec<Slot>,
    /// The vat materials in id order.
    pub(super) sources: Vec<Source>,
    /// One line per compaction step taken.
    pub(super) notes: Vec<String>,
}

impl Default for MaterialPlan {
    /// The identity plan of a document without materials.
    fn default() -> Self {
        Self::identity(0, false)
    }
}

impl MaterialPlan {
    /// The identity plan of a document with `count` materials: material `k` is vat material `k`,
    /// the default material `count` (a source only when `needs_default`).
    fn identity(count: usize, needs_default: bool) -> Self {
        let slots = (0..=count).map(|k| Slot { id: k.min(255) as u8, color: None, key: k as u32 }).collect();
        let mut sources: Vec<Source> =
            (0..count).map(|k| Source { material: Some(k), white: false, members: 1 }).collect();
        if needs_default {
            sources.push(Source { material: None, white: false, members: 1 });
        }
        Self { slots, sources, notes: Vec::new() }
    }

    /// The slot of glTF material `material` (`None`: the default material). An index past the
    /// document's materials (not possible after validation) reads as the default material.
    pub(super) fn slot(&self, material: Option<usize>) -> Slot {
        let default = self.slots.len() - 1;
        self.slots[material.unwrap_or(default).min(default)]
    }

    /// The slot whose key is `key` (keys are slot indices).
    pub(super) fn slot_of_key(&self, key: u32) -> Slot {
        self.slots[(key as usize).min(self.slots.len() - 1)]
    }

    /// Whether some slot's base colour moves into the vertex colours.
    pub(super) fn folds_colors(&self) -> bool {
        self.slots.iter().any(|s| s.color.is_some())
    }
}

/// The plan for `doc` (`json_bytes` its JSON, for comparing materials as written: the gltf crate
/// drops the extensions it is built without, such as `KHR_texture_transform`). `authored_ids`:
/// the primitives carry `_MATERIAL_ID` (then the ids are authored and the plan is the identity).
///
/// # Errors
/// [`crate::BakeError::Gltf`] when more than 256 materials remain after the steps of the module
/// docs, or when a document over the limit has `KHR_materials_variants`.
pub(super) fn plan(
    ctx: &Ctx<'_>,
    doc: &gltf::Document,
    json_bytes: &[u8],
    has_variants: bool,
) -> Result<MaterialPlan> {
    let primitives = || doc.meshes().flat_map(|m| m.primitives());
    let count = doc.materials().len();
    let needs_default = primitives().any(|p| p.material().index().is_none());
    let authored_ids = primitives().any(|p| p.get(&gltf::Semantic::Extras("MATERIAL_ID".into())).is_some());
    let total = count + usize::from(needs_default);
    if total <= MAX_MATERIALS || authored_ids || count == 0 {
        return Ok(MaterialPlan::identity(count, needs_default));
    }
    let over = |detail: String| {
        ctx.err(
            "materials",
            format!("{total} materials{detail}; at most {MAX_MATERIALS} fit (merge materials before baking)"),
        )
    };
    if has_variants {
        return Err(over(" (not merged: KHR_materials_variants maps them by index)".into()));
    }
    let json_bytes = json_bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(json_bytes);
    // The document parsed as glTF already, so this parse does not fail; if it did, every material
    // would compare different (nothing merged, the error below).
    let root: Value = serde_json::from_slice(json_bytes).unwrap_or(Value::Null);
    let mut used = vec![false; count];
    primitives().filter_map(|p| p.material().index()).for_each(|k| used[k.min(count - 1)] = true);
    let written = |k: usize| -> Value {
        let mut m = root["materials"][k].clone();
        if let Some(object) = m.as_object_mut() {
            object.remove("name");
            object.remove("extras");
        }
        m
    };
    // Each material's base colour factor as `materials::import` reads it (clamped to 0..=1).
    let unit = |v: f32| if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
    let factors: Vec<[f32; 4]> =
        doc.materials().map(|m| m.pbr_metallic_roughness().base_color_factor().map(unit)).collect();
    let factor = |k: usize| factors[k];

    // Step 2: one group per distinct material as written.
    let mut exact: HashMap<String, usize> = HashMap::new();
    let mut exact_of = vec![usize::MAX; count];
    for k in (0..count).filter(|&k| used[k]) {
        let key = written(k).to_string();
        exact_of[k] = *exact.entry(key).or_insert(k);
    }
    let unused = used.iter().filter(|&&u| !u).count();
    let merged = used.iter().filter(|&&u| u).count() - exact.len();
    let distinct = exact.len() + usize::from(needs_default);

    // Step 3 only when step 2 leaves too many: the distinct materials grouped by all but their
    // base colour factor.
    let fold = distinct > MAX_MATERIALS;
    let mut group_of = vec![usize::MAX; count];
    let mut groups: Vec<usize> = Vec::new(); // each group's first (representative) material
    let mut by_rest: HashMap<String, usize> = HashMap::new();
    for k in (0..count).filter(|&k| used[k] && exact_of[k] == k) {
        let key = if fold {
            let mut rest = written(k);
            if let Some(pbr) = rest.get_mut("pbrMetallicRoughness").and_then(Value::as_object_mut) {
                pbr.remove("baseColorFactor");
            }
            rest.to_string()
        } else {
            written(k).to_string()
        };
        let g = *by_rest.entry(key).or_insert_with(|| {
            groups.push(k);
            groups.len() - 1
        });
        group_of[k] = g;
    }
    for k in (0..count).filter(|&k| used[k]) {
        group_of[k] = group_of[exact_of[k]];
    }
    let vat_count = groups.len() + usize::from(needs_default);
    if vat_count > MAX_MATERIALS {
        return Err(over(format!(
            " ({} used, {distinct} distinct, {vat_count} after moving base colours to vertex colours)",
            count - unused
        )));
    }
    // A group folds when its members do not all have one factor (one pass over the materials).
    let mut folded = vec![false; groups.len()];
    for k in (0..count).filter(|&k| used[k]) {
        let g = group_of[k];
        folded[g] |= factor(k) != factor(groups[g]);
    }

    let default_slot = Slot { id: groups.len() as u8, color: None, key: count as u32 };
    let mut slots: Vec<Slot> = (0..count)
        .map(|k| {
            if !used[k] {
                // No primitive draws with it; kept only so that every index has a slot.
                return default_slot;
            }
            let g = group_of[k];
            Slot { id: g as u8, color: folded[g].then(|| factor(k)), key: exact_of[k] as u32 }
        })
        .collect();
    slots.push(default_slot);
    let mut members = vec![0usize; groups.len()];
    for k in (0..count).filter(|&k| used[k] && exact_of[k] == k) {
        members[group_of[k]] += 1;
    }
    let mut sources: Vec<Source> = groups
        .iter()
        .enumerate()
        .map(|(g, &k)| Source { material: Some(k), white: folded[g], members: members[g] })
        .collect();
    if needs_default {
        sources.push(Source { material: None, white: false, members: 1 });
    }

    let mut notes = Vec::new();
    if unused > 0 {
        notes.push(format!("materials: {unused} of {count} left out: no primitive draws with them"));
    }
    if merged > 0 {
        notes.push(format!(
            "materials: {merged} identical to another but for their names merged into it ({} distinct)",
            exact.len()
        ));
    }
    let folded_groups = folded.iter().filter(|&&f| f).count();
    if folded_groups > 0 {
        let folded_members =
            (0..count).filter(|&k| used[k] && exact_of[k] == k && folded[group_of[k]]).count();
        let rounding = (0..count)
            .filter(|&k| used[k] && folded[group_of[k]])
            .flat_map(factor)
            .map(|f| (f - (f * 255.0).round() / 255.0).abs())
            .fold(0.0f32, f32::max);
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        notes.push(format!(
            "materials: {distinct} exceed the {MAX_MATERIALS} a .vat holds, so {folded_members} that differ only in base \
             colour became {folded_groups} white material{}, each one's baseColorFactor moved into the vertex \
             colours of its vertices (glTF multiplies the two; stored as 8-bit linear, largest rounding of a \
             factor {rounding:.4})",
            plural(folded_groups)
        ));
    }
    Ok(MaterialPlan { slots, sources, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_plan_maps_every_material_to_itself_and_the_default_after_them() {
        let plan = MaterialPlan::identity(3, true);
        assert_eq!(plan.slot(Some(1)), Slot { id: 1, color: None, key: 1 });
        assert_eq!(plan.slot(None), Slot { id: 3, color: None, key: 3 });
        assert_eq!(plan.sources.len(), 4);
        assert_eq!(plan.sources[3], Source { material: None, white: false, members: 1 });
        assert!(!plan.folds_colors());
        assert_eq!(MaterialPlan::identity(3, false).sources.len(), 3);
    }
}
