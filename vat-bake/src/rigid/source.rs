//! Rigid sources: pieces, per-frame transforms, clips and their validation.

use super::*;

/// A piece's transform at one frame: where its pivot is and how it is turned from its rest
/// orientation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieceTransform {
    /// The pivot's position, metres, object space.
    pub pivot: [f32; 3],
    /// Rotation from the rest orientation, unit quaternion `[x, y, z, w]` (either sign).
    pub rotation: [f32; 4],
}

/// One piece: its rest mesh (object space) and the rest position of its pivot.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidPiece {
    /// Name (the glTF node's, or `"piece <k>"`).
    pub name: String,
    /// Rest positions, metres, object space.
    pub positions: Vec<[f32; 3]>,
    /// Rest unit normals.
    pub normals: Vec<[f32; 3]>,
    /// Material id per vertex, indexing [`RigidSource::materials`] when the source has them (else
    /// the built-in palette).
    pub material_ids: Vec<u8>,
    /// Texture coordinates per vertex (glTF `TEXCOORD_0`), if authored.
    pub uvs: Option<Vec<[f32; 2]>>,
    /// Linear RGBA vertex colours (glTF `COLOR_0`), if authored.
    pub colors: Option<Vec<[f32; 4]>>,
    /// Triangle list into this piece's vertices.
    pub indices: Vec<u32>,
    /// The pivot's rest position, metres, object space: vertex `p` of the piece at a frame is
    /// `pivot + rotate(rotation, p - rest_pivot)`.
    pub rest_pivot: [f32; 3],
}

/// One clip: every piece's transform at every baked frame.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidClip {
    /// Name (unique in the source).
    pub name: String,
    /// Frames per second.
    pub fps: f32,
    /// Whether the clip loops (frame `frames.len()` would be frame 0) or plays once.
    pub looping: bool,
    /// `frames[f][piece]`: frame `f` at `f / fps` seconds. As many frames as vat-core's clip rules
    /// give the clip's duration (see [`RigidClip::duration`]).
    pub frames: Vec<Vec<PieceTransform>>,
}

impl RigidClip {
    /// Duration in seconds whose frame count under vat-core's rules (looping: `round(d * fps)`,
    /// one-shot: `round(d * fps) + 1`) is `frames.len()`.
    pub fn duration(&self) -> f32 {
        let n = self.frames.len() as f32;
        if self.looping { n / self.fps } else { (n - 1.0).max(0.0) / self.fps }
    }
}

/// A rigid-body source: pieces and clips.
#[derive(Debug, Clone, PartialEq)]
pub struct RigidSource {
    /// Asset name.
    pub name: String,
    /// The pieces, in texture order.
    pub pieces: Vec<RigidPiece>,
    /// The clips, in texture order.
    pub clips: Vec<RigidClip>,
    /// The source's materials and their decoded textures, indexed by the pieces'
    /// [`RigidPiece::material_ids`] (`None`: drawn with the built-in palette).
    pub materials: Option<crate::rig::RigMaterials>,
}

/// Largest deviation from 1 of a piece's relative scale (per axis) accepted by
/// [`RigidSource::from_rig`]: a node that scales is not rigid.
pub const RIGID_SCALE_TOLERANCE: f32 = 1e-4;

impl RigidSource {
    /// The pieces of a node-animated rig: every body mesh must be carried by a node
    /// ([`MeshBinding::Rigid`]), and is one piece whose pivot is its node's origin. Each clip is
    /// sampled at `k / fps` from its start: looping clips (the source says so) `round(d * fps)`
    /// frames, the others `round(d * fps) + 1`. A piece's transform at a frame is its node's global
    /// transform times the inverse of its rest global transform; it must be a rotation and a
    /// translation (scale within [`RIGID_SCALE_TOLERANCE`] of 1).
    ///
    /// # Errors
    /// [`BakeError::InvalidInput`] for a skinned body mesh or one with morph targets, a rig without
    /// body meshes or clips, a
    /// clip that does not sample ([`sample::validate_clip`]), a node that scales or shears, or a
    /// non-finite transform; [`BakeError::InvalidOption`] for an `fps` that is not positive and finite.
    pub fn from_rig(rig: &Rig, fps: f32) -> Result<Self> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(BakeError::InvalidOption { option: "fps", problem: format!("{fps} is not > 0") });
        }
        let rest_globals = rig.rest_globals();
        let mut pieces = Vec::new();
        let mut nodes = Vec::new();
        for mesh in rig.meshes.iter().filter(|m| m.role == MeshRole::Body) {
            let MeshBinding::Rigid { node } = mesh.binding else {
                return Err(BakeError::InvalidInput {
                    part: format!("mesh {:?}", mesh.name),
                    problem:
                        "is skinned; the rigid mode bakes meshes carried by animated nodes (bake skinned \
                              meshes in the soft mode)"
                            .into(),
                });
            };
            if !mesh.morph_targets.is_empty() {
                return Err(BakeError::InvalidInput {
                    part: format!("mesh {:?}", mesh.name),
                    problem:
                        "has morph targets: its shape changes, so it is not a rigid piece (bake it in the \
                              soft mode)"
                            .into(),
                });
            }
            let g = *rest_globals.get(node).ok_or_else(|| BakeError::InvalidInput {
                part: format!("mesh {:?}", mesh.name),
                problem: format!("node {node} is not in the rig"),
            })?;
            let normal_matrix = g.inverse().transpose();
            let name = rig.nodes.get(node).map_or_else(|| mesh.name.clone(), |n| n.name.clone());
            pieces.push(RigidPiece {
                name: if name.is_empty() { format!("piece {}", pieces.len()) } else { name },
                positions: mesh.positions.iter().map(|&p| g.transform_point3(p).to_array()).collect(),
                normals: mesh
                    .normals
                    .iter()
                    .map(|&n| normal_matrix.transform_vector3(n).normalize_or_zero().to_array())
                    .collect(),
                material_ids: mesh.material_ids.clone(),
                uvs: mesh.uvs.as_ref().map(|uv| uv.iter().map(|t| t.to_array()).collect()),
                colors: mesh.colors.as_ref().map(|c| c.iter().map(|c| c.to_array()).collect()),
                indices: mesh.indices.clone(),
                rest_pivot: g.w_axis.truncate().to_array(),
            });
            nodes.push((node, g.inverse()));
        }
        if pieces.is_empty() {
            return Err(BakeError::InvalidInput {
                part: rig.name.clone(),
                problem: "has no body meshes carried by nodes: nothing to bake in the rigid mode".into(),
            });
        }
        if rig.clips.is_empty() {
            return Err(BakeError::InvalidInput {
                part: rig.name.clone(),
                problem: "has no animation clips".into(),
            });
        }
        let mut clips = Vec::new();
        for (ci, clip) in rig.clips.iter().enumerate() {
            sample::validate_clip(rig, ci)?;
            let looping = clip.looping.unwrap_or(false);
            let mut map = ClipRowMap::new();
            let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
            map.push(&clip.name, clip.duration(), fps, mode, 0.0)?;
            let frame_count = map.total_frames();
            let mut frames = Vec::with_capacity(frame_count as usize);
            for k in 0..frame_count {
                let pose = sample::sample_pose(rig, clip, clip.start + k as f32 / fps);
                let globals = sample::global_matrices(rig, &pose);
                let mut frame = Vec::with_capacity(nodes.len());
                for (piece, &(node, rest_inverse)) in nodes.iter().enumerate() {
                    let relative: Mat4 = globals[node] * rest_inverse;
                    frame.push(rigid_transform(&relative, pieces[piece].rest_pivot).map_err(|problem| {
                        BakeError::InvalidInput {
                            part: format!("clip {:?}, frame {k}, piece {:?}", clip.name, pieces[piece].name),
                            problem,
                        }
                    })?);
                }
                frames.push(frame);
            }
            clips.push(RigidClip { name: clip.name.clone(), fps, looping, frames });
        }
        Ok(Self { name: rig.name.clone(), pieces, clips, materials: rig.materials.clone() })
    }

    /// Vertices of all pieces together.
    pub fn vertex_count(&self) -> usize {
        self.pieces.iter().map(|p| p.positions.len()).sum()
    }

    /// Frames of all clips together.
    pub fn frame_count(&self) -> usize {
        self.clips.iter().map(|c| c.frames.len()).sum()
    }
}
