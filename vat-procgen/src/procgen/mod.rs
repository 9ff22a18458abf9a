//! The built-in procedural sources; re-exported at the crate root (see the crate docs).

mod cloth;
mod fountain;
mod math;
mod mesh;
mod morph_sheet;
mod motion;
mod shatter;
mod skeleton;
mod splash;
#[cfg(test)]
mod tests;

use glam::{Mat4, Quat, Vec3};

pub use cloth::{CLOTH_COLUMNS, CLOTH_FPS, CLOTH_PERIOD, CLOTH_ROWS, MATERIAL_BANNER, cloth, cloth_sequence};
pub use fountain::{
    FOUNTAIN_EMISSION_RATE, FOUNTAIN_FPS, FOUNTAIN_FRAMES, FOUNTAIN_LOOP_PARTICLES, FOUNTAIN_MAX_LIFE,
    fountain,
};
pub use morph_sheet::{SHEET_COLUMNS, SHEET_ROWS, morph_rig};
pub use motion::{
    GAITS, Gait, IDLE_DURATION, JOG, KEYS_PER_SECOND, LOOK_AROUND_DURATION, RUN, Side, WALK, WAVE_DURATION,
};
pub use shatter::{
    MATERIAL_FRACTURE, MATERIAL_WALL, RESTITUTION, SHATTER_DURATION, SHATTER_FPS, SHATTER_HOLD,
    SHATTER_PIECES, SHATTER_SEED, WALL_HEIGHT, WALL_THICKNESS, WALL_WIDTH, shatter, shatter_with,
};

use vat_bake::rig::{Feet, Mesh, MeshBinding, MeshRole, Node, Rig, Skin, Socket, Transform};
use vat_bake::{BakeError, Result};

/// Joint (and node) indices of the humanoid. Every node is a joint of the one skin, and joint `j`
/// is node `j`.
pub mod joint {
    /// The root, on the ground under the hips; never animated.
    pub const ROOT: usize = 0;
    /// The pelvis; its translation is animated (bob and sway).
    pub const HIPS: usize = 1;
    /// Lower spine.
    pub const SPINE: usize = 2;
    /// Middle spine.
    pub const CHEST: usize = 3;
    /// Upper spine; parent of the neck and clavicles.
    pub const UPPER_CHEST: usize = 4;
    /// Neck.
    pub const NECK: usize = 5;
    /// Head (at the base of the skull); carries the `"head"` socket.
    pub const HEAD: usize = 6;
    /// Left clavicle.
    pub const CLAVICLE_L: usize = 7;
    /// Left upper arm (shoulder joint).
    pub const UPPER_ARM_L: usize = 8;
    /// Left forearm (elbow joint).
    pub const FOREARM_L: usize = 9;
    /// Left hand (wrist joint).
    pub const HAND_L: usize = 10;
    /// Left fingers (knuckles).
    pub const FINGERS_L: usize = 11;
    /// Right clavicle.
    pub const CLAVICLE_R: usize = 12;
    /// Right upper arm.
    pub const UPPER_ARM_R: usize = 13;
    /// Right forearm.
    pub const FOREARM_R: usize = 14;
    /// Right hand.
    pub const HAND_R: usize = 15;
    /// Right fingers.
    pub const FINGERS_R: usize = 16;
    /// Left thigh (hip joint).
    pub const THIGH_L: usize = 17;
    /// Left shin (knee joint).
    pub const SHIN_L: usize = 18;
    /// Left foot (ankle joint); [`vat_bake::rig::Feet::left`].
    pub const FOOT_L: usize = 19;
    /// Left toes (ball of the foot).
    pub const TOE_L: usize = 20;
    /// Right thigh.
    pub const THIGH_R: usize = 21;
    /// Right shin.
    pub const SHIN_R: usize = 22;
    /// Right foot (ankle joint); [`vat_bake::rig::Feet::right`].
    pub const FOOT_R: usize = 23;
    /// Right toes.
    pub const TOE_R: usize = 24;
    /// Number of joints.
    pub const COUNT: usize = 25;
}

/// Material id of bare skin (head, neck, forearms, hands).
pub const MATERIAL_SKIN: u8 = 0;
/// Material id of the shirt (chest, belly, upper arms).
pub const MATERIAL_SHIRT: u8 = 1;
/// Material id of the pants (pelvis, legs).
pub const MATERIAL_PANTS: u8 = 2;
/// Material id of the shoes.
pub const MATERIAL_SHOES: u8 = 3;
/// Material id of the cap accessory.
pub const MATERIAL_CAP: u8 = 4;

/// Height the humanoid is designed at, metres; [`HumanoidParams::height`] scales everything
/// (skeleton, meshes, gait lengths and strides) uniformly from it.
pub const REFERENCE_HEIGHT: f32 = 1.78;

/// Parameters of [`humanoid_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HumanoidParams {
    /// Standing height (sole to crown), metres, in `0.5..=3.0`. Default [`REFERENCE_HEIGHT`].
    pub height: f32,
}

impl Default for HumanoidParams {
    fn default() -> Self {
        Self { height: REFERENCE_HEIGHT }
    }
}

/// The procedural humanoid at the reference height (1.78 m). Takes about a millisecond in release
/// builds (0.9 ms measured on a 2-core machine).
pub fn humanoid() -> Rig {
    build(1.0)
}

/// The procedural humanoid with `params`.
///
/// Errors: [`BakeError::InvalidInput`] when the height is not finite or outside `0.5..=3.0` m.
pub fn humanoid_with(params: &HumanoidParams) -> Result<Rig> {
    let h = params.height;
    if !(h.is_finite() && (0.5..=3.0).contains(&h)) {
        return Err(BakeError::InvalidInput {
            part: "procedural humanoid".into(),
            problem: format!("height {h} m is outside 0.5..=3.0 m"),
        });
    }
    Ok(build(f64::from(h) / f64::from(REFERENCE_HEIGHT)))
}

fn build(scale: f64) -> Rig {
    let sk = skeleton::Skeleton::new(scale);
    let nodes: Vec<Node> = (0..joint::COUNT)
        .map(|j| Node {
            name: skeleton::NAMES[j].to_owned(),
            parent: skeleton::PARENTS[j],
            rest: Transform {
                translation: sk.offset[j].as_vec3(),
                rotation: Quat::IDENTITY,
                scale: Vec3::ONE,
            },
        })
        .collect();
    let mut rig = Rig { name: "humanoid".into(), nodes, ..Rig::default() };
    // Rest rotations are identities, so each rest global is a pure translation and its inverse is
    // the negated translation, exactly.
    let inverse_bind =
        rig.rest_globals().iter().map(|g| Mat4::from_translation(-g.w_axis.truncate())).collect();
    rig.skins.push(Skin { joints: (0..joint::COUNT).collect(), inverse_bind });

    let body = mesh::body(&sk);
    rig.meshes.push(Mesh {
        name: "body".into(),
        binding: MeshBinding::Skinned { skin: 0 },
        role: MeshRole::Body,
        positions: body.positions,
        normals: body.normals,
        tangents: Some(body.tangents),
        uvs: Some(body.uvs),
        colors: None,
        material_ids: body.material_ids,
        indices: body.indices,
        influence_count: 4,
        joints: body.joints,
        weights: body.weights,
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    });

    // The socket sits on the crown, straight above the head ellipsoid's centre.
    let head = mesh::head_ellipsoid();
    let crown = (head.center + math::DVec3::new(0.0, head.radii.y, 0.0)) * scale;
    let socket_offset = (crown - sk.pos[joint::HEAD]).as_vec3();
    rig.sockets.push(Socket {
        name: "head".into(),
        node: joint::HEAD,
        local: Mat4::from_translation(socket_offset),
    });
    let cap = mesh::cap(scale);
    rig.meshes.push(Mesh {
        name: "cap".into(),
        binding: MeshBinding::Rigid { node: joint::HEAD },
        role: MeshRole::Attachment { socket: 0 },
        positions: cap.positions,
        normals: cap.normals,
        tangents: Some(cap.tangents),
        uvs: Some(cap.uvs),
        colors: None,
        material_ids: cap.material_ids,
        indices: cap.indices,
        influence_count: 0,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    });
    rig.feet = Some(Feet { left: joint::FOOT_L, right: joint::FOOT_R });
    rig.clips = motion::clips(&sk);
    rig
}

/// The names of the built-in procedural sources, as `vat bake --procgen NAME` takes them: the
/// rigged `"humanoid"` ([`humanoid`]) and the soft-body `"cloth"` ([`cloth`]).
pub const SOURCES: [&str; 2] = ["humanoid", "cloth"];

/// The built-in source named `name` (one of [`SOURCES`]); `None` for another name. Every call builds
/// the same rig, bit for bit.
///
/// # Errors
/// The source's own build errors (none in practice).
pub fn by_name(name: &str) -> Option<Result<Rig>> {
    // (The rigid-body sources are not rigs: see [`RIGID_SOURCES`] and [`rigid_by_name`].)
    match name {
        "humanoid" => Some(Ok(humanoid())),
        "cloth" => Some(cloth()),
        _ => None,
    }
}

/// Names of the built-in rigid-body sources ([`rigid_by_name`]): `shatter`, a wall breaking into
/// [`SHATTER_PIECES`] Voronoi pieces under gravity with ground bounces.
pub const RIGID_SOURCES: [&str; 1] = ["shatter"];

/// The built-in fluid sources (`vat bake --procgen NAME`, [`vat_bake::fluid`]).
pub const FLUID_SOURCES: [&str; 1] = ["splash"];

/// The built-in fluid source named `name` (one of [`FLUID_SOURCES`]); `None` for another name.
/// Every call builds the same frames, bit for bit.
pub fn fluid_by_name(name: &str) -> Option<vat_bake::fluid::FluidSequence> {
    match name {
        "splash" => Some(splash::splash()),
        _ => None,
    }
}

/// The built-in sprite sources (`vat bake --procgen NAME`, [`vat_bake::sprite`]): `fountain`, a
/// looping water fountain ([`fountain`]), baked with `looping: true`.
pub const SPRITE_SOURCES: [&str; 1] = ["fountain"];

/// The built-in sprite source named `name` (one of [`SPRITE_SOURCES`]); `None` for another name.
/// Every call builds the same frames, bit for bit.
pub fn sprite_by_name(name: &str) -> Option<vat_bake::sprite::SpriteSequence> {
    match name {
        "fountain" => Some(fountain::fountain()),
        _ => None,
    }
}

/// The built-in rigid-body source named `name` (one of [`RIGID_SOURCES`]); `None` for another name.
/// Every call builds the same source, bit for bit.
pub fn rigid_by_name(name: &str) -> Option<vat_bake::rigid::RigidSource> {
    match name {
        "shatter" => Some(shatter()),
        _ => None,
    }
}
