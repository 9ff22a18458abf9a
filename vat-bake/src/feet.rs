//! Finding a rig's feet (the joints [`crate::stride`] measures a locomotion clip's stride from):
//! by the naming conventions of the common rigs, else by the shape of the skeleton.
//!
//! # By name ([`foot_side`])
//! A name is read as words: anything up to the last `:` or `|` is a namespace and dropped
//! (`mixamorig:`, `mixamorig1:`, `rig:`, `Armature|`), the rest is split at non-alphanumerics, at
//! lower-to-upper case changes (`LeftFoot`, `FootL`), before the last capital of a capital run
//! (`LFoot`) and between letters and digits, and a word written together in one case (`leftfoot`,
//! `FOOTL`, `lfoot`) is split into the known words it is made of. A foot is a name with the word
//! `foot` or `ankle` and exactly one side: `left`/`l`/`lt` or `right`/`r`/`rt`. That covers Mixamo
//! (`mixamorig:LeftFoot`), Blender (`foot.L`, `Foot.R`, `foot_l`, `DEF-foot.L`), Unreal (`foot_l`,
//! `foot_r`), Unity humanoid (`LeftFoot`, `RightFoot`), 3ds Max biped (`Bip01 L Foot`) and
//! `FootL`/`FootR`, in any case. Controllers are never feet (a name with `ik`, `pole`, `target`,
//! `ctrl`, `control`, `mch`, `roll`, `pivot` or `helper`: Unreal's `ik_foot_l` does not follow the
//! foot in every clip); a name that also says toe, ball, heel, end, nub, tip or a digit's name
//! (`LeftFootIndex1`) is taken only when a side has no plain foot. [`crate::stride`] assumes the
//! ankle, so among plain feet the first in rig order (ancestors first) wins.
//!
//! # By geometry ([`by_geometry`])
//! When names fail, the feet are the lowest end joints of the two legs: among the candidate joints
//! (a skin's joints, else every node), at rest, the end joints (no candidate child) in the lowest
//! quarter of the skeleton's height, two of them in different branches of the shallowest joint
//! that has two (the hips), one on each side of the vertical plane through that joint (the body's
//! mid-plane); in each leg the lowest end joint. Left is the side the toes' direction puts on the
//! left (the lowest joints' offsets from their parents, when they point somewhere), else the `+X`
//! side (glTF's convention for a character facing `+Z`). Which foot is called left does not change
//! a stride.

use glam::Vec3;

use crate::rig::{Feet, Rig};

/// How [`find_feet`] found a rig's feet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeetSource {
    /// The rig says ([`Rig::feet`]: tagged in the source, or found by name at import).
    Rig,
    /// By the naming conventions ([`foot_side`]).
    Name,
    /// By the shape of the skeleton ([`by_geometry`]).
    Geometry,
}

impl std::fmt::Display for FeetSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Rig => "given by the rig",
            Self::Name => "found by name",
            Self::Geometry => "found by geometry",
        })
    }
}

/// Why [`find_feet`] found no feet: names failed, and the shape of the skeleton did too, for the
/// reason held here. Displayed as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoFeet {
    /// Why the geometric search failed.
    pub geometry: String,
}

/// The names [`NoFeet`] says were tried.
pub const TRIED_NAMES: &str = "Mixamo mixamorig:LeftFoot, Blender foot.L, Unreal foot_l, Unity LeftFoot, FootL/FootR, \
     l_ankle";

impl std::fmt::Display for NoFeet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no foot joints found by name (tried {TRIED_NAMES}, any case or prefix) or by geometry ({})",
            self.geometry
        )
    }
}

/// The joints feet are looked for among: the skins' joints in rig order (ancestors first) when the
/// rig has a skin, else every node.
pub fn candidates(rig: &Rig) -> Vec<usize> {
    if rig.skins.is_empty() {
        return (0..rig.nodes.len()).collect();
    }
    let mut joints: Vec<usize> =
        rig.skins.iter().flat_map(|s| s.joints.iter().copied()).filter(|&j| j < rig.nodes.len()).collect();
    joints.sort_unstable();
    joints.dedup();
    joints
}

/// The rig's feet: [`Rig::feet`] when set, else by name among [`candidates`], else by geometry.
pub fn find_feet(rig: &Rig) -> Result<(Feet, FeetSource), NoFeet> {
    if let Some(feet) = rig.feet {
        return Ok((feet, FeetSource::Rig));
    }
    let candidates = candidates(rig);
    if let [Some(left), Some(right)] = by_name(rig, &candidates)
        && left != right
    {
        return Ok((Feet { left, right }, FeetSource::Name));
    }
    by_geometry(rig, &candidates)
        .map(|feet| (feet, FeetSource::Geometry))
        .map_err(|geometry| NoFeet { geometry })
}

/// The left and right foot among `candidates` by name (see the [module docs](self)): per side the
/// first plain foot in `candidates`' order, else the first foot word with a toe word.
pub fn by_name(rig: &Rig, candidates: &[usize]) -> [Option<usize>; 2] {
    let mut best: [Option<(u8, usize)>; 2] = [None, None];
    for &c in candidates {
        let Some(node) = rig.nodes.get(c) else { continue };
        let Some((side, tier)) = classify(&node.name) else { continue };
        if best[side].is_none_or(|(t, _)| tier < t) {
            best[side] = Some((tier, c));
        }
    }
    best.map(|b| b.map(|(_, c)| c))
}

/// 0 for a left foot, 1 for a right foot, by name (see the [module docs](self)); `None` when the name
/// is not a foot, names no side or both, or is a controller.
pub fn foot_side(name: &str) -> Option<usize> {
    classify(name).map(|(side, _)| side)
}

/// Words a name is split into when written together in one case.
const DICTIONARY: &[&str] = &[
    "left", "right", "l", "r", "lt", "rt", "foot", "ankle", "toe", "toes", "ball", "heel", "ik", "fk",
    "base", "end",
];
const LEFT: &[&str] = &["left", "l", "lt", "lft"];
const RIGHT: &[&str] = &["right", "r", "rt", "rgt"];
const FOOT: &[&str] = &["foot", "ankle"];
/// Controllers and mechanism bones: never a foot.
const CONTROL: &[&str] =
    &["ik", "pole", "target", "ctrl", "ctl", "control", "mch", "roll", "pivot", "helper"];
/// Parts of a foot other than the ankle: a foot only when a side has nothing else.
const PART: &[&str] = &[
    "toe", "toes", "ball", "heel", "end", "nub", "tip", "index", "thumb", "middle", "ring", "pinky",
    "little", "big",
];

/// `(side, tier)` of a foot name: tier 0 a plain foot, 1 a foot word with a part word.
fn classify(name: &str) -> Option<(usize, u8)> {
    let words = words(name);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if !has(FOOT) || has(CONTROL) {
        return None;
    }
    let side = match (has(LEFT), has(RIGHT)) {
        (true, false) => 0,
        (false, true) => 1,
        _ => return None,
    };
    Some((side, u8::from(has(PART))))
}

/// The lower-case words of a name (see the [module docs](self)).
fn words(name: &str) -> Vec<String> {
    let base = name.rsplit([':', '|']).next().unwrap_or(name);
    let chars: Vec<char> = base.chars().collect();
    let mut raw: Vec<String> = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                raw.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p))
            && prev.is_alphanumeric()
        {
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_alphabetic() != c.is_alphabetic());
            if boundary && !current.is_empty() {
                raw.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        raw.push(current);
    }
    raw.into_iter().flat_map(|w| segment(&w).unwrap_or_else(|| vec![w])).collect()
}

/// `word` as the fewest [`DICTIONARY`] words written together, if it is made of them only.
fn segment(word: &str) -> Option<Vec<String>> {
    if !word.is_ascii() || word.len() > 64 {
        return None;
    }
    let n = word.len();
    // best[i]: the fewest words making word[..i], and where the last one starts.
    let mut best: Vec<Option<(usize, usize)>> = vec![None; n + 1];
    best[0] = Some((0, 0));
    for end in 1..=n {
        for start in 0..end {
            let Some((count, _)) = best[start] else { continue };
            if DICTIONARY.contains(&&word[start..end]) && best[end].is_none_or(|(c, _)| count + 1 < c) {
                best[end] = Some((count + 1, start));
            }
        }
    }
    best[n]?;
    let mut parts = Vec::new();
    let mut end = n;
    while end > 0 {
        let (_, start) = best[end]?;
        parts.push(word[start..end].to_owned());
        end = start;
    }
    parts.reverse();
    Some(parts)
}

/// The feet by the shape of the skeleton at rest (see the [module docs](self)), or why not.
pub fn by_geometry(rig: &Rig, candidates: &[usize]) -> Result<Feet, String> {
    let globals = rig.rest_globals();
    let position = |n: usize| globals[n].w_axis.truncate();
    let candidates: Vec<usize> = candidates.iter().copied().filter(|&c| c < rig.nodes.len()).collect();
    if candidates.len() < 2 {
        let has = if candidates.is_empty() { "no joint" } else { "one joint" };
        return Err(format!("the rig has {has}; two legs need two"));
    }
    if candidates.iter().any(|&c| !position(c).is_finite()) {
        return Err("a joint's rest position is not finite".to_owned());
    }
    let (low, high) = candidates.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &c| {
        let y = position(c).y;
        (lo.min(y), hi.max(y))
    });
    let height = high - low;
    if height <= 0.0 {
        return Err("every joint rests at one height".to_owned());
    }
    let is_candidate = {
        let mut mask = vec![false; rig.nodes.len()];
        for &c in &candidates {
            mask[c] = true;
        }
        mask
    };
    let mut has_child = vec![false; rig.nodes.len()];
    for &c in &candidates {
        // The nearest candidate ancestor has a candidate below it.
        let mut node = c;
        while let Some(p) = rig.nodes[node].parent.filter(|&p| p < node) {
            if is_candidate[p] {
                has_child[p] = true;
                break;
            }
            node = p;
        }
    }
    let ends: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&c| !has_child[c] && position(c).y <= low + 0.25 * height)
        .collect();
    if ends.len() < 2 {
        let found = if ends.is_empty() { "no end joint" } else { "only one end joint" };
        return Err(format!("{found} in the lowest quarter of the skeleton's height; two legs need two"));
    }
    let ancestors = |n: usize| {
        let mut chain = vec![n];
        let mut node = n;
        while let Some(p) = rig.nodes[node].parent.filter(|&p| p < node) {
            chain.push(p);
            node = p;
        }
        chain.reverse(); // root first
        chain
    };
    let chains: Vec<Vec<usize>> = ends.iter().map(|&e| ancestors(e)).collect();
    // The shallowest joint two low end joints branch from, and the child of it each leg starts at.
    let mut fork: Option<(usize, usize)> = None; // (depth, node)
    for a in 0..chains.len() {
        for b in a + 1..chains.len() {
            let common = chains[a].iter().zip(&chains[b]).take_while(|(x, y)| x == y).count();
            if common == 0 || common == chains[a].len() || common == chains[b].len() {
                continue;
            }
            let node = chains[a][common - 1];
            if fork.is_none_or(|(d, _)| common - 1 < d) {
                fork = Some((common - 1, node));
            }
        }
    }
    let Some((depth, hips)) = fork else {
        return Err("no two low end joints branch from one joint".to_owned());
    };
    // Per branch below the fork: its lowest end joint (first in rig order on a tie).
    let mut legs: Vec<(usize, usize)> = Vec::new(); // (branch child, end joint)
    for (k, chain) in chains.iter().enumerate() {
        if chain.get(depth) != Some(&hips) || chain.len() <= depth + 1 {
            continue;
        }
        let branch = chain[depth + 1];
        match legs.iter_mut().find(|(b, _)| *b == branch) {
            Some(leg) if position(ends[k]).y < position(leg.1).y => leg.1 = ends[k],
            Some(_) => {}
            None => legs.push((branch, ends[k])),
        }
    }
    // The two lowest legs that stand on either side of the fork.
    legs.sort_by(|a, b| position(a.1).y.total_cmp(&position(b.1).y));
    let centre = position(hips);
    let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
    let mut pair = None;
    'outer: for i in 0..legs.len() {
        for j in i + 1..legs.len() {
            let (a, b) = (position(legs[i].1), position(legs[j].1));
            let across = flat(b - a);
            if across.length() <= 1e-3 * height {
                continue;
            }
            if flat(a - centre).dot(across) < 0.0 && flat(b - centre).dot(across) > 0.0 {
                pair = Some((legs[i].1, legs[j].1));
                break 'outer;
            }
        }
    }
    let Some((a, b)) = pair else {
        return Err(format!(
            "no two low end joints stand on either side of \"{}\", where they branch",
            rig.nodes[hips].name
        ));
    };
    // Forward: where the lowest joints point from their parents; left = up x forward.
    let pointing = |n: usize| {
        rig.nodes[n].parent.filter(|&p| p < rig.nodes.len()).map(|p| flat(position(n) - position(p)))
    };
    let forward = pointing(a).unwrap_or(Vec3::ZERO) + pointing(b).unwrap_or(Vec3::ZERO);
    let left_axis = if forward.length() > 1e-3 * height { Vec3::Y.cross(forward) } else { Vec3::X };
    Ok(if (position(a) - position(b)).dot(left_axis) >= 0.0 {
        Feet { left: a, right: b }
    } else {
        Feet { left: b, right: a }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::{Node, Skin, Transform};

    #[test]
    fn names_of_every_convention_say_their_side() {
        let left = [
            "mixamorig:LeftFoot",
            "mixamorig1:LeftFoot",
            "mixamorig12:leftfoot",
            "foot.L",
            "Foot.L",
            "DEF-foot.L",
            "Armature|foot.L",
            "foot_l",
            "Foot_L_01",
            "LeftFoot",
            "Left_Foot",
            "Left Foot",
            "FootL",
            "rig:FootL",
            "FOOTL",
            "LFoot",
            "lfoot",
            "Bip01 L Foot",
            "CC_Base_L_Foot",
            "l_ankle",
            "Ankle.L",
            "leftAnkle",
        ];
        for name in left {
            assert_eq!(foot_side(name), Some(0), "{name}");
            let mirrored = name
                .replace("Left", "Right")
                .replace("left", "right")
                .replace(".L", ".R")
                .replace("_L", "_R")
                .replace("_l", "_r")
                .replace("FootL", "FootR")
                .replace("FOOTL", "FOOTR")
                .replace("LFoot", "RFoot")
                .replace("lfoot", "rfoot")
                .replace(" L ", " R ")
                .replace("l_", "r_");
            assert_eq!(foot_side(&mirrored), Some(1), "{mirrored} (from {name})");
        }
        // Not a foot: no side or both, no foot word, controllers and mechanism bones.
        for name in [
            "Foot",
            "LeftRightFoot",
            "mixamorig:LeftLeg",
            "mixamorig:LeftToeBase",
            "LeftUpLeg",
            "footrest_l",
            "ik_foot_l",
            "IKFootL",
            "foot_ik.L",
            "MCH-foot_roll.L",
            "foot_l_pole_target",
            "Leftfootctrl",
        ] {
            assert_eq!(foot_side(name), None, "{name}");
        }
        // A foot word with a toe word is a foot, ranked below a plain one.
        assert_eq!(classify("LeftFootIndex1"), Some((0, 1)));
        assert_eq!(classify("foot_toe.R"), Some((1, 1)));
        assert_eq!(classify("foot.R"), Some((1, 0)));
    }

    fn node(name: &str, parent: Option<usize>, t: [f32; 3]) -> Node {
        Node {
            name: name.into(),
            parent,
            rest: Transform { translation: Vec3::from(t), ..Transform::IDENTITY },
        }
    }

    /// Hips, two legs (thigh, shin, ankle, toe) standing, a spine with two arms hanging beside the
    /// body, facing `+Z`; an unnamed skeleton.
    fn body() -> Rig {
        let mut nodes = vec![node("root", None, [0.0, 0.0, 0.0]), node("b1", Some(0), [0.0, 0.95, 0.0])];
        for side in [1.0f32, -1.0] {
            let hip = nodes.len();
            nodes.push(node("t", Some(1), [0.1 * side, -0.05, 0.0]));
            nodes.push(node("s", Some(hip), [0.0, -0.45, 0.0]));
            nodes.push(node("a", Some(hip + 1), [0.0, -0.40, 0.0]));
            nodes.push(node("toe", Some(hip + 2), [0.0, -0.04, 0.12]));
        }
        let spine = nodes.len();
        nodes.push(node("spine", Some(1), [0.0, 0.5, 0.0]));
        for side in [1.0f32, -1.0] {
            let arm = nodes.len();
            nodes.push(node("arm", Some(spine), [0.2 * side, 0.0, 0.0]));
            nodes.push(node("hand", Some(arm), [0.0, -0.6, 0.0]));
        }
        Rig { name: "body".into(), nodes, ..Rig::default() }
    }

    #[test]
    fn geometry_finds_the_lowest_end_joints_of_the_two_legs() {
        let mut rig = body();
        let all: Vec<usize> = (0..rig.nodes.len()).collect();
        // The toes (nodes 5 and 9), the left one on +X for a character whose toes point +Z.
        assert_eq!(by_geometry(&rig, &all), Ok(Feet { left: 5, right: 9 }));
        assert_eq!(find_feet(&rig), Ok((Feet { left: 5, right: 9 }, FeetSource::Geometry)));
        // Facing -Z (the toes point back), left is -X.
        for n in [5, 9] {
            rig.nodes[n].rest.translation.z = -0.12;
        }
        assert_eq!(by_geometry(&rig, &all), Ok(Feet { left: 9, right: 5 }));
        // A skin without the toes: the ankles; names win over geometry.
        rig.skins =
            vec![Skin { joints: vec![1, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14], inverse_bind: vec![] }];
        // Without toes to point forward, the +X side is left.
        assert_eq!(find_feet(&rig), Ok((Feet { left: 4, right: 8 }, FeetSource::Geometry)));
        rig.nodes[8].name = "Foot.L".into();
        rig.nodes[4].name = "Foot.R".into();
        assert_eq!(find_feet(&rig), Ok((Feet { left: 8, right: 4 }, FeetSource::Name)));
    }

    #[test]
    fn geometry_says_why_it_finds_no_feet() {
        let one = Rig { nodes: vec![node("a", None, [0.0; 3])], ..Rig::default() };
        let why = find_feet(&one).unwrap_err();
        assert_eq!(why.geometry, "the rig has one joint; two legs need two");
        assert!(why.to_string().starts_with("no foot joints found by name (tried Mixamo mixamorig:LeftFoot"));
        // A single chain hanging down: one end joint.
        let chain = Rig {
            nodes: vec![
                node("a", None, [0.0, 1.0, 0.0]),
                node("b", Some(0), [0.0, -0.5, 0.0]),
                node("c", Some(1), [0.0, -0.5, 0.0]),
            ],
            ..Rig::default()
        };
        assert_eq!(
            find_feet(&chain).unwrap_err().geometry,
            "only one end joint in the lowest quarter of the skeleton's height; two legs need two"
        );
        // Two low end joints on one side of the joint they branch from.
        let lopsided = Rig {
            nodes: vec![
                node("a", None, [0.0, 1.0, 0.0]),
                node("b", Some(0), [0.3, -1.0, 0.0]),
                node("c", Some(0), [0.5, -1.0, 0.0]),
            ],
            ..Rig::default()
        };
        assert_eq!(
            find_feet(&lopsided).unwrap_err().geometry,
            "no two low end joints stand on either side of \"a\", where they branch"
        );
        let flat = Rig {
            nodes: vec![node("a", None, [0.0; 3]), node("b", Some(0), [1.0, 0.0, 0.0])],
            ..Rig::default()
        };
        assert_eq!(find_feet(&flat).unwrap_err().geometry, "every joint rests at one height");
    }
}
