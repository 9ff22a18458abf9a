//! The rig: the one in-memory description of an animated character that every source produces
//! (glTF import, the procedural humanoid) and every later stage consumes (sampling, skinning, baking,
//! glTF export).
//!
//! Conventions (those of glTF and vat-core): right-handed, +Y up, metres, seconds; a character faces +Z.
//! Quaternions are unit `(x, y, z, w)`. Node transforms are local to the parent node; a node's global
//! transform is `parent_global * local`.

use glam::{Mat4, Quat, Vec2, Vec3, Vec4};

/// A node's local transform: `T * R * S`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transform {
    /// Translation, metres.
    pub translation: Vec3,
    /// Rotation, unit quaternion.
    pub rotation: Quat,
    /// Scale (non-zero per axis).
    pub scale: Vec3,
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Self = Self { translation: Vec3::ZERO, rotation: Quat::IDENTITY, scale: Vec3::ONE };

    /// `T * R * S` as a matrix.
    pub fn to_mat4(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }
}

impl Default for Transform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// One node of the hierarchy (a joint, a non-joint ancestor of the skeleton, or a node carrying a mesh).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name, as authored (may be empty).
    pub name: String,
    /// Parent node index. Parents always come before their children (`parent < own index`).
    pub parent: Option<usize>,
    /// Local transform at rest (when no animation channel drives it).
    pub rest: Transform,
}

/// A skin: which nodes are its joints and their inverse bind matrices.
#[derive(Debug, Clone, PartialEq)]
pub struct Skin {
    /// Node index of each joint. A mesh's joint index `j` means node `joints[j]`.
    pub joints: Vec<usize>,
    /// Inverse bind matrix of each joint (same length as `joints`).
    pub inverse_bind: Vec<Mat4>,
}

/// How a mesh follows the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshBinding {
    /// Linear-blend skinned by skin `skin` with the mesh's joints/weights. Vertices are in the bind
    /// space of the skin (glTF: the mesh node's transform is ignored for skinned meshes).
    Skinned {
        /// Index into [`Rig::skins`].
        skin: usize,
    },
    /// Rigidly carried by node `node` (an unskinned mesh, a prop parented to a joint): vertex positions
    /// are local to that node and follow its global transform.
    Rigid {
        /// Index into [`Rig::nodes`].
        node: usize,
    },
}

/// What a mesh is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeshRole {
    /// Part of the character's body: baked into the shared vertex set.
    Body,
    /// An attachment drawn at a socket (e.g. a cap on the head socket), baked separately from the body
    /// and instanced with it. Its vertices are in the socket's space.
    Attachment {
        /// Index into [`Rig::sockets`].
        socket: usize,
    },
}

/// A morph target: per-vertex deltas added before skinning, scaled by the target's weight.
#[derive(Debug, Clone, PartialEq)]
pub struct MorphTarget {
    /// Name (from glTF `mesh.extras.targetNames` when valid), if any.
    pub name: Option<String>,
    /// Position deltas, metres, one per vertex.
    pub positions: Vec<Vec3>,
    /// Normal deltas, one per vertex, if authored.
    pub normals: Option<Vec<Vec3>>,
    /// Tangent deltas (xyz), one per vertex, if authored.
    pub tangents: Option<Vec<Vec3>>,
}

/// Maximum influences per vertex that are baked (two sets of four: what `JOINTS_0/WEIGHTS_0` and
/// `JOINTS_1/WEIGHTS_1` hold, and what the bone-mode shaders read). A source with more keeps every
/// influence in [`Mesh::full_influences`], so verification can measure what the reduction costs.
pub const MAX_INFLUENCES: usize = 8;

/// One triangle mesh (one glTF primitive).
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// Name, for messages.
    pub name: String,
    /// How it follows the hierarchy.
    pub binding: MeshBinding,
    /// Body or attachment.
    pub role: MeshRole,
    /// Rest positions, metres.
    pub positions: Vec<Vec3>,
    /// Rest unit normals (generated flat-shaded by the importer when absent).
    pub normals: Vec<Vec3>,
    /// Rest tangents (xyz unit, w = bitangent sign ±1), if authored.
    pub tangents: Option<Vec<Vec4>>,
    /// Texture coordinates, if authored.
    pub uvs: Option<Vec<Vec2>>,
    /// Linear RGBA vertex colours (glTF `COLOR_0`; RGB sources get alpha 1), if authored.
    pub colors: Option<Vec<Vec4>>,
    /// Material id per vertex (e.g. shirt, pants, skin; 0 when the source has none).
    pub material_ids: Vec<u8>,
    /// Triangle list, three indices per triangle into this mesh's vertices.
    pub indices: Vec<u32>,
    /// Influences per vertex used: 4 or 8 (0 for rigid meshes).
    pub influence_count: usize,
    /// Joint indices (into the skin's `joints`) per vertex; unused slots 0 with weight 0.
    pub joints: Vec<[u16; MAX_INFLUENCES]>,
    /// Weights per vertex, summing to 1 (renormalised by the importer); unused slots 0.
    pub weights: Vec<[f32; MAX_INFLUENCES]>,
    /// Every influence of every vertex, `(joint, weight)` with weights summing to 1, when the source
    /// gave some vertex more than [`MAX_INFLUENCES`] non-zero influences (glTF `JOINTS_2` and up);
    /// `None` otherwise. `joints`/`weights` then hold each vertex's [`MAX_INFLUENCES`] largest,
    /// renormalised: what is baked. Verification skins with these, the full source.
    pub full_influences: Option<Vec<Vec<(u16, f32)>>>,
    /// Morph targets.
    pub morph_targets: Vec<MorphTarget>,
    /// Weights of the morph targets when no animation drives them (glTF `mesh.weights`).
    pub default_morph_weights: Vec<f32>,
}

impl Mesh {
    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Rebuilds the vertices from an index map: new vertex `i` is old vertex `map[i]` (a vertex may
    /// be listed several times, to unweld it, or not at all, to drop it). Every per-vertex attribute
    /// follows the one map together (positions, normals, tangents, texture coordinates, colours,
    /// material ids, joints and weights, the full influence lists, and every morph target's
    /// deltas), so no attribute is ever unwelded, remapped or dropped without the others. The
    /// triangle list is left as it is: the caller rewrites it for the new vertices.
    ///
    /// # Errors
    /// [`crate::BakeError::InvalidInput`] when an entry of `map` is not a vertex of the mesh.
    pub fn select_vertices(&mut self, map: &[u32]) -> crate::Result<()> {
        let n = self.vertex_count();
        if let Some(k) = map.iter().position(|&v| v as usize >= n) {
            return Err(crate::BakeError::InvalidInput {
                part: format!("mesh \"{}\"", self.name),
                problem: format!("vertex map entry {k} is {}, past its {n} vertices", map[k]),
            });
        }
        fn pick<T: Clone>(values: &mut Vec<T>, map: &[u32]) {
            // Empty arrays stay empty: joints and weights of a rigid mesh.
            if !values.is_empty() {
                *values = map.iter().map(|&v| values[v as usize].clone()).collect();
            }
        }
        // Destructured without `..`: a per-vertex field added to `Mesh` must be handled here.
        let Mesh {
            name: _,
            binding: _,
            role: _,
            positions,
            normals,
            tangents,
            uvs,
            colors,
            material_ids,
            indices: _,
            influence_count: _,
            joints,
            weights,
            full_influences,
            morph_targets,
            default_morph_weights: _,
        } = self;
        pick(positions, map);
        pick(normals, map);
        tangents.iter_mut().for_each(|t| pick(t, map));
        uvs.iter_mut().for_each(|uv| pick(uv, map));
        colors.iter_mut().for_each(|c| pick(c, map));
        pick(material_ids, map);
        pick(joints, map);
        pick(weights, map);
        full_influences.iter_mut().for_each(|f| pick(f, map));
        for target in morph_targets {
            let MorphTarget { name: _, positions, normals, tangents } = target;
            pick(positions, map);
            normals.iter_mut().for_each(|d| pick(d, map));
            tangents.iter_mut().for_each(|d| pick(d, map));
        }
        Ok(())
    }
}

/// How a keyframe sampler interpolates (glTF `sampler.interpolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyInterpolation {
    /// Holds each key until the next.
    Step,
    /// Linear (rotations: shortest-path slerp).
    Linear,
    /// Cubic Hermite with in/out tangents (glTF CUBICSPLINE); rotations normalised after.
    CubicSpline,
}

/// What a channel drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelTarget {
    /// A node's translation (3 components per key).
    Translation(usize),
    /// A node's rotation (4 components per key, xyzw).
    Rotation(usize),
    /// A node's scale (3 components per key).
    Scale(usize),
    /// A mesh's morph weights (one component per target per key); the index is into [`Rig::meshes`].
    MorphWeights(usize),
}

impl ChannelTarget {
    /// Components per key value, given the morph target count of the driven mesh.
    pub fn components(&self, morph_targets: usize) -> usize {
        match self {
            ChannelTarget::Translation(_) | ChannelTarget::Scale(_) => 3,
            ChannelTarget::Rotation(_) => 4,
            ChannelTarget::MorphWeights(_) => morph_targets,
        }
    }
}

/// A keyframe track.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// What it drives.
    pub target: ChannelTarget,
    /// Interpolation between keys.
    pub interpolation: KeyInterpolation,
    /// Key times, seconds, strictly increasing, finite.
    pub times: Vec<f32>,
    /// Key values, flat: `components` per key, or for `CubicSpline` `3 * components` per key laid out
    /// as glTF does (in-tangent, value, out-tangent).
    pub values: Vec<f32>,
}

/// An animation clip.
#[derive(Debug, Clone, PartialEq)]
pub struct AnimationClip {
    /// Name (unique within the rig).
    pub name: String,
    /// Its tracks.
    pub channels: Vec<Channel>,
    /// First key time of any channel, seconds (exporters often start at 0.04 s, not 0).
    pub start: f32,
    /// Last key time of any channel, seconds. `end - start` is the clip's duration.
    pub end: f32,
    /// Whether the clip loops (locomotion cycles, idle) or plays once, when the source says
    /// (`Some`); `None` lets the bake decide from the clip itself: it loops when its last pose
    /// returns to its first within the format's quantum (see [`crate::prepare::BakeOptions::looping`]
    /// for the command-line override).
    pub looping: Option<bool>,
    /// The exact stride in metres per cycle when the source knows it (the procedural humanoid);
    /// `None` means "extract it from the feet" for locomotion clips, or not locomotion.
    pub known_stride: Option<f32>,
    /// Whether this clip moves the character (walk, jog, run): its stride is baked.
    pub locomotion: bool,
}

impl AnimationClip {
    /// Duration in seconds (`end - start`, `>= 0`).
    pub fn duration(&self) -> f32 {
        (self.end - self.start).max(0.0)
    }
}

/// A named attachment point: a node plus a local offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Socket {
    /// Name (e.g. "head").
    pub name: String,
    /// The node it follows.
    pub node: usize,
    /// Offset from the node, local to it.
    pub local: Mat4,
}

/// The feet of a biped, for stride extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feet {
    /// Node index of the left foot (ankle) joint.
    pub left: usize,
    /// Node index of the right foot (ankle) joint.
    pub right: usize,
}

/// An animated character, from any source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rig {
    /// Name (file stem or "humanoid").
    pub name: String,
    /// The node hierarchy, parents before children.
    pub nodes: Vec<Node>,
    /// Skins.
    pub skins: Vec<Skin>,
    /// Meshes (several on one skin bake into one vertex set).
    pub meshes: Vec<Mesh>,
    /// Clips.
    pub clips: Vec<AnimationClip>,
    /// Sockets.
    pub sockets: Vec<Socket>,
    /// The feet, when known (the procedural humanoid, or found by name in glTF).
    pub feet: Option<Feet>,
    /// What the source had that this rig leaves out, one line each with the reason (e.g. a `POINTS`
    /// primitive, meshes of a skin other than the one chosen with `--skin`), and what the import
    /// changed (influences past [`MAX_INFLUENCES`] dropped). Empty when nothing was left out. The
    /// CLI prints every line; the importers say a note that repeats per mesh or frame once, with a
    /// count ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
    /// Vertices of the source's meshes that [`Rig::notes`] says were left out (0 when none), so a
    /// report can say "baked V of V + left_out vertices".
    pub left_out_vertices: u64,
    /// The source's materials and their decoded textures, indexed by [`Mesh::material_ids`]
    /// (`None`: the source has none, or its material ids are authored `_MATERIAL_ID` values, and
    /// the asset is drawn with the built-in palette).
    pub materials: Option<RigMaterials>,
    /// A body whose frames are read from its source on demand instead of computed from the clips'
    /// channels (a mesh sequence: [`crate::sequence`]). When set, the rig has one body mesh, rigid on
    /// an identity node, holding frame 0 (its rest pose), and its clips have no channels: sampling
    /// clip `c` at a time reads the frames [`StreamedBody::clips`]`[c]` maps it to.
    pub streamed_body: Option<StreamedBody>,
}

/// One frame of a [`BodyFrames`] source: every vertex of the body mesh, in its vertex order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BodyFrame {
    /// Positions, metres.
    pub positions: Vec<Vec3>,
    /// Unit normals.
    pub normals: Vec<Vec3>,
}

/// The frames of a streamed body ([`Rig::streamed_body`]): read one at a time, so a bake holds a
/// few frames at once whatever the sequence's length. Implementations are read from several
/// threads at once.
pub trait BodyFrames: Send + Sync {
    /// Frames in the source (`>= 1`).
    fn frame_count(&self) -> usize;
    /// Vertices per frame: the body mesh's.
    fn vertex_count(&self) -> usize;
    /// The most bytes one [`BodyFrames::read_frame`] holds while it runs (the file and the decoded
    /// frame), for the bake's memory budget.
    fn frame_bytes(&self) -> u64;
    /// Frame `k` (`k < frame_count()`).
    ///
    /// # Errors
    /// The source's: a file that cannot be read again, or that changed since it was checked (its
    /// topology or vertex count differs from frame 0's).
    fn read_frame(&self, k: usize) -> crate::Result<BodyFrame>;
}

/// Which source frames a clip of a streamed body plays: clip time `t` seconds (from the clip's
/// start) is source position `first + t * fps`, between two frames a linear blend of them (normals
/// renormalised); past `last` it stays on `last`, unless the clip `wraps`, when the position
/// `last + 1` is `first` again (a looping clip whose source stores its frames once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamedClip {
    /// First source frame of the clip.
    pub first: usize,
    /// Last source frame of the clip (`>= first`).
    pub last: usize,
    /// Source frames per second (`> 0`).
    pub fps: f32,
    /// Whether the frame after `last` is `first`.
    pub wraps: bool,
}

impl StreamedClip {
    /// The source frames and weight at `t` seconds into the clip: `(a, b, w)`, the frame is
    /// `a + w * (b - a)`, `w` in `[0, 1)` (0 when `t` lands on a frame, within f32 rounding of the
    /// time).
    pub fn frames_at(&self, t: f32) -> (usize, usize, f32) {
        let count = self.last.saturating_sub(self.first) + 1;
        let x = (f64::from(t) * f64::from(self.fps)).max(0.0);
        let nearest = x.round();
        // Frame times are `k / fps` rounded to f32: within a few ulps of a whole frame is that frame.
        let (i, w) = if (x - nearest).abs() <= 1e-5 * nearest.max(1.0) {
            (nearest as usize, 0.0)
        } else {
            (x.floor() as usize, (x - x.floor()) as f32)
        };
        let frame = |i: usize| {
            if i < count {
                self.first + i
            } else if self.wraps && i == count {
                self.first
            } else {
                self.last
            }
        };
        if w == 0.0 || i + 1 > count { (frame(i), frame(i), 0.0) } else { (frame(i), frame(i + 1), w) }
    }
}

/// A rig's streamed body: its frame source and the frames each clip plays.
#[derive(Clone)]
pub struct StreamedBody {
    /// The frames.
    pub frames: std::sync::Arc<dyn BodyFrames>,
    /// One entry per [`Rig::clips`] entry, in order.
    pub clips: Vec<StreamedClip>,
}

impl std::fmt::Debug for StreamedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedBody")
            .field("frames", &self.frames.frame_count())
            .field("vertices", &self.frames.vertex_count())
            .field("clips", &self.clips)
            .finish()
    }
}

impl PartialEq for StreamedBody {
    /// The same source object and the same clips.
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.frames, &other.frames) && self.clips == other.clips
    }
}

/// A rig's materials and the images their textures sample, split by colour space: a
/// [`vat_core::container::TextureBinding::layer`] of a base colour texture indexes
/// [`RigMaterials::color_images`], of a normal or metallic-roughness texture
/// [`RigMaterials::data_images`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RigMaterials {
    /// The materials (at most [`vat_core::container::MAX_MATERIALS`]).
    pub materials: Vec<vat_core::container::Material>,
    /// Base colour images (sRGB-encoded RGBA8).
    pub color_images: Vec<MaterialImage>,
    /// Normal and metallic-roughness images (linear RGBA8).
    pub data_images: Vec<MaterialImage>,
    /// Material variants (glTF `KHR_materials_variants`), at most 255.
    pub variants: Vec<vat_core::container::MaterialVariant>,
}

/// A decoded image, RGBA8, rows top to bottom (glTF's texture origin is the top-left corner).
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialImage {
    /// The image's name or URI as authored, or `"image <k>"`.
    pub name: String,
    /// Width in texels, `>= 1`.
    pub width: u32,
    /// Height in texels, `>= 1`.
    pub height: u32,
    /// `4 * width * height` bytes.
    pub rgba: Vec<u8>,
}

impl Rig {
    /// What the rig's source is, in words, for a bake's summary line: `2 skinned + 1 rigid meshes`
    /// (`+ 1 attachments` when it has some) for a character or scene, and for a mesh sequence (a
    /// [`Rig::streamed_body`]: a soft-body or cloth cache) `a mesh sequence of 61 frames (one
    /// soft-body mesh)`, which has no skin nor rigid parts to count.
    pub fn source_summary(&self) -> String {
        if let Some(body) = &self.streamed_body {
            let frames = body.frames.frame_count();
            let frames = if frames == 1 { "1 frame".to_owned() } else { format!("{frames} frames") };
            return format!("a mesh sequence of {frames} (one soft-body mesh)");
        }
        let body = self.meshes.iter().filter(|m| m.role == MeshRole::Body);
        let skinned = body.clone().filter(|m| matches!(m.binding, MeshBinding::Skinned { .. })).count();
        let rigid = body.count() - skinned;
        let attachments = self.meshes.len() - skinned - rigid;
        let attachments =
            if attachments > 0 { format!(" + {attachments} attachments") } else { String::new() };
        format!("{skinned} skinned + {rigid} rigid meshes{attachments}")
    }

    /// Global (model-space) rest transforms of every node.
    pub fn rest_globals(&self) -> Vec<Mat4> {
        let locals: Vec<Mat4> = self.nodes.iter().map(|n| n.rest.to_mat4()).collect();
        self.globals_from_locals(&locals)
    }

    /// Global transforms from local ones (`parent_global * local`, parents first).
    pub fn globals_from_locals(&self, locals: &[Mat4]) -> Vec<Mat4> {
        let mut globals: Vec<Mat4> = Vec::with_capacity(locals.len());
        for (i, node) in self.nodes.iter().enumerate() {
            let g = match node.parent {
                Some(p) if p < i => globals[p] * locals[i],
                _ => locals[i],
            };
            globals.push(g);
        }
        globals
    }

    /// Vertices of all body meshes together (the baked vertex set, before reordering).
    pub fn body_vertex_count(&self) -> usize {
        self.meshes.iter().filter(|m| m.role == MeshRole::Body).map(Mesh::vertex_count).sum()
    }

    /// The same rig with every length multiplied by `factor` (a unit change: 100 turns metres into
    /// centimetres): node rest translations, translation keys (values and cubic-spline tangents),
    /// the translation of every inverse bind matrix and socket offset, mesh positions, morph position
    /// deltas and known strides. Rotations, scales, normals, tangents and timing are unchanged, so
    /// every posed vertex is exactly `factor` times the original's (up to rounding).
    pub fn scaled(&self, factor: f32) -> Rig {
        let mut rig = self.clone();
        let scale_translation = |m: &mut Mat4| m.w_axis = (m.w_axis.truncate() * factor).extend(m.w_axis.w);
        for node in &mut rig.nodes {
            node.rest.translation *= factor;
        }
        for skin in &mut rig.skins {
            skin.inverse_bind.iter_mut().for_each(scale_translation);
        }
        for socket in &mut rig.sockets {
            scale_translation(&mut socket.local);
        }
        for mesh in &mut rig.meshes {
            mesh.positions.iter_mut().for_each(|p| *p *= factor);
            for target in &mut mesh.morph_targets {
                target.positions.iter_mut().for_each(|p| *p *= factor);
            }
        }
        for clip in &mut rig.clips {
            clip.known_stride = clip.known_stride.map(|s| s * factor);
            for channel in &mut clip.channels {
                if let ChannelTarget::Translation(_) = channel.target {
                    channel.values.iter_mut().for_each(|v| *v *= factor);
                }
            }
        }
        rig
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

    use crate::prepare::{BakeOptions, prepare};

    #[test]
    fn the_summary_says_what_the_source_is() {
        // A cloth cache is a mesh sequence, not "0 skinned + 1 rigid meshes".
        let cloth = crate::procgen::cloth().unwrap();
        assert_eq!(cloth.source_summary(), "a mesh sequence of 61 frames (one soft-body mesh)");
        let humanoid = crate::procgen::humanoid();
        let skinned = humanoid.meshes.iter().filter(|m| m.role == super::MeshRole::Body).count();
        let attachments = humanoid.meshes.len() - skinned;
        assert!(attachments > 0);
        assert_eq!(
            humanoid.source_summary(),
            format!("{skinned} skinned + 0 rigid meshes + {attachments} attachments")
        );
    }

    #[test]
    fn a_scaled_rig_bakes_a_scaled_asset() {
        let rig = crate::procgen::humanoid();
        let options = BakeOptions { frames: Some(4), ..Default::default() };
        let metres = prepare(&rig, &options).unwrap();
        let m = metres.manifest();
        let b = m.vertex_animation.as_ref().unwrap().bounds;
        for factor in [100.0f32, 0.2 / b.extent[1]] {
            let scaled = prepare(&rig.scaled(factor), &options).unwrap();
            let s = scaled.manifest();
            let sb = s.vertex_animation.as_ref().unwrap().bounds;
            let close =
                |a: f32, b: f32| (a - b * factor).abs() <= 1e-3 * (b * factor).abs().max(1e-3 * factor);
            for axis in 0..3 {
                assert!(close(sb.extent[axis], b.extent[axis]), "{factor}: {sb:?} vs {b:?}");
                assert!(close(sb.min[axis], b.min[axis]), "{factor}: {sb:?} vs {b:?}");
            }
            for (c, d) in s.clips.iter().zip(&m.clips) {
                assert!(close(c.stride, d.stride), "{factor}: stride {} vs {}", c.stride, d.stride);
            }
            // The same chain (meshoptimizer's last collapses may differ by a few triangles in
            // rounding, and the last level's error by a few %: 5.3 % at the 0.2 m scale since
            // the chain welds by position), switch distances in the asset's units.
            let (a, t) = (&scaled.stats.triangle_counts, &metres.stats.triangle_counts);
            assert_eq!(a.len(), t.len());
            assert!(a.iter().zip(t).all(|(x, y)| x.abs_diff(*y) * 10 <= *y), "{factor}: {a:?} vs {t:?}");
            for (l, k) in s.lods.iter().zip(&m.lods) {
                assert!(
                    l.max_distance == k.max_distance
                        || (l.max_distance / k.max_distance / factor - 1.0).abs() < 0.1,
                    "{factor}: {} vs {}",
                    l.max_distance,
                    k.max_distance
                );
            }
        }
    }
}
