//! The rigid-body bake: pieces that move as units ([`vat_core::rigid`]).
//!
//! Every source becomes a [`RigidSource`]: pieces (a rest mesh each, with its pivot) and clips that
//! give every piece's pivot and rotation (from rest) at every baked frame. Two sources produce it: a
//! glTF (or any [`Rig`]) whose animated nodes carry meshes ([`RigidSource::from_rig`], one piece per
//! mesh), and `vat_procgen::shatter`. [`bake_rigid`] encodes it into a `.vat` in the rigid
//! mode, and [`verify_rigid`] decodes the file with vat-core's CPU reference (what the shader
//! computes) and compares every piece's transform and every vertex at every frame with the source,
//! each against the bound the format gives it.

use glam::{Mat4, Quat, Vec3};
use serde::Serialize;
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{
    Asset, ContainerWriter, ElementFormat, Lod, Manifest, RigidAnimation, StreamKind, VertexStream,
};
use vat_core::encoding::{PositionBounds, make_hemisphere_continuous};
use vat_core::instance::InstanceRecord;
use vat_core::layout::VertexTextureLayout;
use vat_core::playback::Interpolation;
use vat_core::reference::{self, RigidAnimationView};
use vat_core::rigid::{self, ROTATION_BOUND_DEG, ROTATION_BOUND_RAD};

use crate::lods::{self, LodOptions};
use crate::rig::{MeshBinding, MeshRole, Rig};
use crate::sample;
use crate::{BakeError, Result};

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

/// Largest distance (metres) a vertex of a mesh sequence may be from where its piece's fitted
/// rigid motion puts it, for [`RigidSource::from_sequence`] to call the piece rigid: 0.1 mm.
pub const RIGID_DETECTION_TOLERANCE: f32 = 1e-4;

impl RigidSource {
    /// The pieces of a mesh sequence held in memory, detected as rigid: [`RigidSource::from_frames`]
    /// over its frames.
    ///
    /// # Errors
    /// Those of [`crate::sequence::MeshSequence::validate`] and [`RigidSource::from_frames`].
    pub fn from_sequence(seq: &crate::sequence::MeshSequence, tolerance: f32) -> Result<(Self, f64)> {
        seq.validate()?;
        let frames = crate::sequence::SequenceFrames(seq);
        Self::from_frames(&seq.name, seq.fps, &seq.indices, seq.uvs.as_deref(), &frames, tolerance)
    }

    /// The pieces of a sequence folder, detected as rigid as its files are read, a few frames at
    /// a time ([`RigidSource::from_frames`]): memory in proportion to one frame per thread, not to
    /// the sequence.
    ///
    /// # Errors
    /// Those of [`RigidSource::from_frames`], and a file that changed since it was checked.
    pub fn from_folder(folder: &crate::sequence::SequenceFolder, tolerance: f32) -> Result<(Self, f64)> {
        Self::from_frames(folder.name(), folder.fps(), folder.indices(), folder.uvs(), folder, tolerance)
    }

    /// The pieces of a mesh sequence (the same triangles `indices` in every frame of `frames`, at
    /// `fps` frames per second), detected as rigid: the connected components of its triangles,
    /// where vertices at the same position in every frame count as one (a flat-shaded piece's split
    /// vertices; pieces that only touch at rest stay apart once they move); each component's motion
    /// from frame 0 fitted as a rotation about its frame-0 centroid and a translation (Horn's closed
    /// form, in f64). Every vertex must be within `tolerance` metres of its fitted position at every
    /// frame. One one-shot clip named `name`, one baked frame per source frame at its rate. Normals
    /// and positions of the rest pieces from frame 0; texture coordinates from `uvs`; material id 0.
    /// Returns the source and the largest fit residual, metres.
    ///
    /// The frames are read as they are needed and dropped after, one per thread at a time: once to
    /// tell apart vertices that share a frame-0 position (skipped when none do), once to fit the
    /// pieces. Only frame 0 and the fitted transforms stay in memory.
    ///
    /// # Errors
    /// [`BakeError::InvalidInput`] naming the piece, frame and residual when a component does not
    /// move rigidly within `tolerance`; naming the frame for a frame of the wrong vertex count or
    /// with values that are not finite; for no frames, a triangle list that is not whole triangles
    /// of the frame's vertices, or texture coordinates that do not match them.
    /// [`BakeError::InvalidOption`] for a `tolerance` that is not finite and `>= 0` or an `fps` that
    /// is not finite and `> 0`. The errors of `frames`' reads.
    pub fn from_frames(
        name: &str,
        fps: f32,
        indices: &[u32],
        uvs: Option<&[glam::Vec2]>,
        frames: &dyn crate::rig::BodyFrames,
        tolerance: f32,
    ) -> Result<(Self, f64)> {
        use rayon::prelude::*;
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(BakeError::InvalidOption {
                option: "rigid tolerance",
                problem: format!("{tolerance} is not a finite distance >= 0"),
            });
        }
        if !(fps.is_finite() && fps > 0.0) {
            return Err(BakeError::InvalidOption {
                option: "--fps",
                problem: format!("{fps} is not a finite rate > 0"),
            });
        }
        let part = || format!("sequence \"{name}\"");
        let frame_count = frames.frame_count();
        if frame_count == 0 {
            return Err(BakeError::InvalidInput { part: part(), problem: "has no frames".into() });
        }
        let n = frames.vertex_count();
        if !indices.len().is_multiple_of(3) || indices.iter().any(|&i| i as usize >= n) {
            return Err(BakeError::InvalidInput {
                part: part(),
                problem: format!("its {} indices are not whole triangles of its {n} vertices", indices.len()),
            });
        }
        if let Some(uv) = uvs
            && (uv.len() != n || uv.iter().any(|t| !t.is_finite()))
        {
            return Err(BakeError::InvalidInput {
                part: part(),
                problem: format!("needs {n} finite texture coordinates, has {}", uv.len()),
            });
        }
        let read = |f: usize| -> Result<crate::rig::BodyFrame> {
            let frame = frames.read_frame(f)?;
            if frame.positions.len() != n
                || frame.normals.len() != n
                || frame.positions.iter().chain(&frame.normals).any(|p| !p.is_finite())
            {
                return Err(BakeError::InvalidInput {
                    part: format!("sequence \"{name}\" frame {f}"),
                    problem: format!(
                        "needs {n} finite positions and normals, has {} and {}",
                        frame.positions.len(),
                        frame.normals.len()
                    ),
                });
            }
            Ok(frame)
        };
        let rest = read(0)?;
        // Vertices with the same trajectory: one class split frame by frame by the vertices'
        // positions there. Only vertices that still share a class are followed, so a sequence
        // without split vertices is not read for this.
        let mut followed: Vec<(usize, u32)> = (0..n).map(|v| (v, 0)).collect();
        split_by_position(&mut followed, &rest.positions);
        let threads = rayon::current_num_threads().max(1);
        let mut next_frame = 1;
        while next_frame < frame_count && !followed.is_empty() {
            let batch: Vec<usize> = (next_frame..frame_count.min(next_frame + threads)).collect();
            next_frame += batch.len();
            let read_batch: Vec<Result<crate::rig::BodyFrame>> = batch.par_iter().map(|&f| read(f)).collect();
            for frame in read_batch {
                split_by_position(&mut followed, &frame?.positions);
            }
        }
        // Union-find over vertices: triangles, and identical trajectories.
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut v: usize) -> usize {
            while parent[v] != v {
                parent[v] = parent[parent[v]];
                v = parent[v];
            }
            v
        }
        let union = |parent: &mut Vec<usize>, a: usize, b: usize| {
            let (ra, rb) = (find(parent, a), find(parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        };
        for t in indices.chunks_exact(3) {
            union(&mut parent, t[0] as usize, t[1] as usize);
            union(&mut parent, t[1] as usize, t[2] as usize);
        }
        let mut twin: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
        for &(v, class) in &followed {
            let w = *twin.entry(class).or_insert(v);
            union(&mut parent, v, w);
        }
        drop(followed);
        // Components in order of their first vertex.
        let mut component_of = vec![usize::MAX; n];
        let mut members: Vec<Vec<usize>> = Vec::new();
        for v in 0..n {
            let r = find(&mut parent, v);
            if component_of[r] == usize::MAX {
                component_of[r] = members.len();
                members.push(Vec::new());
            }
            let c = component_of[r];
            members[c].push(v);
        }
        let mut local_index = vec![0u32; n];
        let mut pieces = Vec::with_capacity(members.len());
        for (k, vs) in members.iter().enumerate() {
            for (i, &v) in vs.iter().enumerate() {
                local_index[v] = i as u32;
            }
            let c0 = centroid(vs.iter().map(|&v| rest.positions[v]));
            pieces.push(RigidPiece {
                name: format!("piece {k}"),
                positions: vs.iter().map(|&v| rest.positions[v].to_array()).collect(),
                normals: vs.iter().map(|&v| rest.normals[v].to_array()).collect(),
                material_ids: vec![0; vs.len()],
                uvs: uvs.map(|uv| vs.iter().map(|&v| uv[v].to_array()).collect()),
                colors: None,
                indices: Vec::new(),
                rest_pivot: [c0[0] as f32, c0[1] as f32, c0[2] as f32],
            });
        }
        for t in indices.chunks_exact(3) {
            let c = component_of[find(&mut parent, t[0] as usize)];
            pieces[c].indices.extend(t.iter().map(|&v| local_index[v as usize]));
        }
        // Every frame's fit, a frame per task; the first frame in order that fails is the error.
        let fit_frame = |f: usize, frame: &[Vec3]| -> Result<(Vec<PieceTransform>, f64)> {
            let mut worst = 0.0f64;
            let mut transforms = Vec::with_capacity(members.len());
            for (k, vs) in members.iter().enumerate() {
                let (t, residual) =
                    fit_rigid(vs.iter().map(|&v| (rest.positions[v], frame[v])), pieces[k].rest_pivot);
                if residual > f64::from(tolerance) {
                    return Err(BakeError::InvalidInput {
                        part: format!("sequence \"{name}\" frame {f}, piece {k} ({} vertices)", vs.len()),
                        problem: format!(
                            "does not move rigidly: a vertex is {:.4} mm from the best rigid fit (tolerance \
                             {:.4} mm); bake the sequence in the soft mode",
                            residual * 1e3,
                            f64::from(tolerance) * 1e3
                        ),
                    });
                }
                worst = worst.max(residual);
                transforms.push(t);
            }
            Ok((transforms, worst))
        };
        let fits: Vec<Result<(Vec<PieceTransform>, f64)>> = (0..frame_count)
            .into_par_iter()
            .map(|f| match f {
                0 => fit_frame(0, &rest.positions),
                _ => fit_frame(f, &read(f)?.positions),
            })
            .collect();
        let mut worst = 0.0f64;
        let mut clip_frames = Vec::with_capacity(frame_count);
        for fit in fits {
            let (transforms, residual) = fit?;
            worst = worst.max(residual);
            clip_frames.push(transforms);
        }
        let clip = RigidClip { name: name.to_string(), fps, looping: false, frames: clip_frames };
        Ok((Self { name: name.to_string(), pieces, clips: vec![clip], materials: None }, worst))
    }
}

/// Splits the classes of `followed` (`(vertex, class)` pairs) by the vertices' `positions`
/// (exact, on the bits; -0 is +0), and stops following a vertex left alone in its class: it has
/// no twin whose path it could share.
fn split_by_position(followed: &mut Vec<(usize, u32)>, positions: &[Vec3]) {
    let bits = |p: Vec3| p.to_array().map(|x| (x + 0.0).to_bits());
    let mut split: std::collections::HashMap<(u32, [u32; 3]), (u32, u32)> = std::collections::HashMap::new();
    for (v, class) in followed.iter_mut() {
        let next = split.len() as u32;
        let entry = split.entry((*class, bits(positions[*v]))).or_insert((next, 0));
        entry.1 += 1;
        *class = entry.0;
    }
    let alone: std::collections::HashSet<u32> =
        split.values().filter(|&&(_, count)| count == 1).map(|&(c, _)| c).collect();
    followed.retain(|(_, class)| !alone.contains(class));
}

/// The mean of `points`, f64.
fn centroid(points: impl Iterator<Item = Vec3>) -> [f64; 3] {
    let (mut sum, mut count) = ([0.0f64; 3], 0usize);
    for p in points {
        for a in 0..3 {
            sum[a] += f64::from(p[a]);
        }
        count += 1;
    }
    sum.map(|s| s / count.max(1) as f64)
}

/// The rigid motion taking each `(rest, now)` pair's rest point to its current point best (least
/// squares; Horn's quaternion method), as a piece transform whose pivot rests at `rest_pivot`,
/// and the largest distance of a current point from where the motion puts its rest point.
fn fit_rigid(
    pairs: impl Iterator<Item = (Vec3, Vec3)> + Clone,
    rest_pivot: [f32; 3],
) -> (PieceTransform, f64) {
    let c0 = rest_pivot.map(f64::from);
    let c1 = centroid(pairs.clone().map(|(_, b)| b));
    let mut m = [[0.0f64; 3]; 3];
    for (a, b) in pairs.clone() {
        let p: [f64; 3] = std::array::from_fn(|i| f64::from(a[i]) - c0[i]);
        let q: [f64; 3] = std::array::from_fn(|i| f64::from(b[i]) - c1[i]);
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += p[i] * q[j];
            }
        }
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = m;
    // Horn's symmetric matrix; its eigenvector of the largest eigenvalue is the rotation (w, x, y, z).
    let nmat = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    let [w, x, y, z] = largest_eigenvector(nmat);
    let q = [x as f32, y as f32, z as f32, w as f32];
    let t = PieceTransform { pivot: c1.map(|v| v as f32), rotation: q };
    let residual = pairs
        .map(|(a, b)| {
            let want = place_f64(&t, rest_pivot, a.to_array());
            (0..3).map(|i| (want[i] - f64::from(b[i])).powi(2)).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max);
    (t, residual)
}

/// The unit eigenvector of the largest eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi).
fn largest_eigenvector(mut a: [[f64; 4]; 4]) -> [f64; 4] {
    let mut v = [[0.0f64; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _ in 0..50 {
        let off: f64 = (0..4)
            .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..4 {
            for q in p + 1..4 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in &mut a {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (row_p, row_q) = (a[p], a[q]);
                for k in 0..4 {
                    a[p][k] = c * row_p[k] - s * row_q[k];
                    a[q][k] = s * row_p[k] + c * row_q[k];
                }
                for row in &mut v {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let best = (0..4).fold(0, |b, i| if a[i][i] > a[b][b] { i } else { b });
    let e = [v[0][best], v[1][best], v[2][best], v[3][best]];
    let len = e.iter().map(|c| c * c).sum::<f64>().sqrt();
    if len > 0.0 { e.map(|c| c / len) } else { [1.0, 0.0, 0.0, 0.0] }
}

/// The rigid transform of `relative` (rotation + translation, no scale) as a piece transform whose
/// pivot rests at `rest_pivot`; a message if it scales, shears or is not finite.
fn rigid_transform(relative: &Mat4, rest_pivot: [f32; 3]) -> std::result::Result<PieceTransform, String> {
    if !relative.is_finite() {
        return Err("the node's transform is not finite".into());
    }
    let (scale, rotation, _) = relative.to_scale_rotation_translation();
    if (scale - Vec3::ONE).abs().max_element() > RIGID_SCALE_TOLERANCE {
        return Err(format!(
            "the node scales by {:?} from its rest pose; a rigid piece only moves and turns",
            scale.to_array()
        ));
    }
    // Shear: the rotation must reproduce the matrix's axes.
    let m = Mat4::from_quat(rotation);
    for (a, b) in [(m.x_axis, relative.x_axis), (m.y_axis, relative.y_axis), (m.z_axis, relative.z_axis)] {
        if (a.truncate() - b.truncate()).abs().max_element() > 10.0 * RIGID_SCALE_TOLERANCE {
            return Err("the node shears from its rest pose; a rigid piece only moves and turns".into());
        }
    }
    let pivot = relative.transform_point3(Vec3::from(rest_pivot));
    Ok(PieceTransform { pivot: pivot.to_array(), rotation: rotation.normalize().to_array() })
}

/// `pivot + rotate(q, p - rest_pivot)` in f64: where a source vertex is at a frame.
fn place_f64(t: &PieceTransform, rest_pivot: [f32; 3], p: [f32; 3]) -> [f64; 3] {
    let q = t.rotation.map(f64::from);
    let len = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    let (u, w) = if len > 0.0 { ([q[0] / len, q[1] / len, q[2] / len], q[3] / len) } else { ([0.0; 3], 1.0) };
    let v: [f64; 3] = std::array::from_fn(|a| f64::from(p[a]) - f64::from(rest_pivot[a]));
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    };
    let c1 = cross(u, v);
    let c2 = cross(u, std::array::from_fn(|a| c1[a] + w * v[a]));
    std::array::from_fn(|a| f64::from(t.pivot[a]) + v[a] + 2.0 * c2[a])
}

/// Options of [`bake_rigid`].
#[derive(Debug, Clone, PartialEq)]
pub struct RigidBakeOptions {
    /// Largest texture width or height of the target device.
    pub max_texture_dim: u32,
    /// Largest side of a material texture layer, texels (as
    /// [`crate::prepare::BakeOptions::material_texture_size`]).
    pub material_texture_size: u32,
    /// The LOD chain (`--lods N` or `--lod-ratios ...`; default 5 levels), simplified from the rest
    /// pose: a piece keeps its shape as it moves, so one simplification serves every frame, and
    /// pieces are separate meshes, so no triangle of a coarser level joins two pieces.
    pub lods: LodOptions,
}

impl Default for RigidBakeOptions {
    fn default() -> Self {
        Self {
            max_texture_dim: 16384,
            material_texture_size: crate::textures::DEFAULT_MATERIAL_TEXTURE_SIZE,
            lods: LodOptions::default(),
        }
    }
}

/// Figures of a rigid bake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigidBakeStats {
    /// Pieces.
    pub pieces: u32,
    /// Vertices of all pieces.
    pub vertices: u32,
    /// Triangles of all pieces.
    pub triangles: u32,
    /// Frames of all clips.
    pub frames: u32,
    /// Triangles of each LOD, LOD 0 (every triangle) first.
    pub lod_triangles: Vec<u32>,
    /// Piece texture width x height, texels.
    pub piece_texture: [u32; 2],
    /// Bytes of the piece texture.
    pub piece_texture_bytes: u64,
    /// Bytes per piece per frame of the piece texture (16).
    pub bytes_per_piece_frame: u32,
    /// Bytes of the rigid vertex texture (piece index + rest pivot per vertex).
    pub vertex_texture_bytes: u64,
    /// The pivot box's quantum per axis (`extent / 65535`), millimetres.
    pub translation_quantum_mm: [f64; 3],
    /// The size of the whole file, bytes.
    pub file_bytes: u64,
    /// Materials written (0: drawn with the built-in palette).
    pub materials: u32,
    /// What the bake left out or changed of the materials' textures (e.g. a layer shrunk to
    /// `material_texture_size`), one line each; a repeated note is said once, with a count
    /// ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
}

/// Encodes `source` as a `.vat` file in the rigid mode ([`vat_core::container::VatMode::Rigid`]):
/// the piece texture (one column per piece and one row per frame when both fit
/// `max_texture_dim`, else the linear layout; each piece's quaternion track kept in one
/// hemisphere), the rigid vertex
/// texture, rest positions, normals and material ids, and the LOD chain of `options.lods` (from the
/// rest pose; a level that cannot simplify is dropped with a note). Deterministic:
/// the same source gives the same bytes.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a source without pieces, vertices or clips, pieces whose
/// streams differ in length, an index past its piece, clips whose frames do not hold one
/// transform per piece or whose frame count does not match vat-core's clip rules, or a non-finite
/// value; [`BakeError::Core`] when the textures do not fit `max_texture_dim`.
pub fn bake_rigid(source: &RigidSource, options: &RigidBakeOptions) -> Result<(Vec<u8>, RigidBakeStats)> {
    let invalid = |part: &str, problem: String| BakeError::InvalidInput { part: part.to_owned(), problem };
    let piece_count = source.pieces.len();
    if piece_count == 0 {
        return Err(invalid(&source.name, "has no pieces".into()));
    }
    let vertex_count = source.vertex_count();
    if vertex_count == 0 {
        return Err(invalid(&source.name, "has no vertices".into()));
    }
    if source.clips.is_empty() {
        return Err(invalid(&source.name, "has no clips".into()));
    }
    let mut map = ClipRowMap::new();
    for c in &source.clips {
        let mode = if c.looping { ClipMode::Looping } else { ClipMode::OneShot };
        map.push(&c.name, c.duration(), c.fps, mode, 0.0)?;
        let stored = map.clips().last().map_or(0, |k| k.frame_count) as usize;
        if stored != c.frames.len() {
            return Err(invalid(
                &format!("clip {:?}", c.name),
                format!("has {} frames, the clip rules give {stored}", c.frames.len()),
            ));
        }
        if let Some(f) = c.frames.iter().position(|f| f.len() != piece_count) {
            return Err(invalid(
                &format!("clip {:?}, frame {f}", c.name),
                format!("needs {piece_count} transforms"),
            ));
        }
    }
    let frame_count = map.total_frames();

    // Rest mesh, per vertex piece and pivot.
    let mut positions = Vec::with_capacity(vertex_count);
    let mut normals = Vec::with_capacity(vertex_count);
    let mut materials = Vec::with_capacity(vertex_count);
    let mut uvs = source.pieces.iter().any(|p| p.uvs.is_some()).then(|| Vec::with_capacity(vertex_count));
    let mut colors =
        source.pieces.iter().any(|p| p.colors.is_some()).then(|| Vec::with_capacity(vertex_count));
    let mut vertex_texels = Vec::with_capacity(vertex_count);
    let mut indices = Vec::new();
    for (k, p) in source.pieces.iter().enumerate() {
        let n = p.positions.len();
        let uv_len = p.uvs.as_ref().map_or(n, Vec::len);
        let color_len = p.colors.as_ref().map_or(n, Vec::len);
        if p.normals.len() != n
            || p.material_ids.len() != n
            || uv_len != n
            || color_len != n
            || p.indices.len() % 3 != 0
        {
            return Err(invalid(&format!("piece {:?}", p.name), "streams of different lengths".into()));
        }
        let surface = p.uvs.iter().flatten().flatten().chain(p.colors.iter().flatten().flatten());
        if p.positions
            .iter()
            .chain(&p.normals)
            .chain([&p.rest_pivot])
            .flatten()
            .chain(surface)
            .any(|v| !v.is_finite())
        {
            return Err(invalid(&format!("piece {:?}", p.name), "a value is not finite".into()));
        }
        let base = positions.len() as u32;
        if let Some(&i) = p.indices.iter().find(|&&i| i as usize >= n) {
            return Err(invalid(&format!("piece {:?}", p.name), format!("index {i} >= its {n} vertices")));
        }
        indices.extend(p.indices.iter().map(|&i| base + i));
        positions.extend_from_slice(&p.positions);
        normals.extend_from_slice(&p.normals);
        materials.extend_from_slice(&p.material_ids);
        // A piece without uvs or colours among pieces with them gets (0, 0) and opaque white, as the
        // soft bake does.
        if let Some(uvs) = &mut uvs {
            uvs.extend(p.uvs.clone().unwrap_or_else(|| vec![[0.0; 2]; n]));
        }
        if let Some(colors) = &mut colors {
            colors.extend(p.colors.clone().unwrap_or_else(|| vec![[1.0; 4]; n]));
        }
        vertex_texels.extend((0..n).map(|_| rigid::encode_vertex_texel(k as u32, p.rest_pivot)));
    }
    if indices.is_empty() {
        return Err(invalid(&source.name, "has no triangles".into()));
    }

    // Boxes: every pivot of every frame; every vertex of every frame (culling).
    let pivot_bounds = PositionBounds::from_points(
        source.clips.iter().flat_map(|c| c.frames.iter().flatten().map(|t| t.pivot)),
    )?;
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for c in &source.clips {
        for frame in &c.frames {
            for (p, t) in source.pieces.iter().zip(frame) {
                for &v in &p.positions {
                    let w = place_f64(t, p.rest_pivot, v);
                    for a in 0..3 {
                        lo[a] = lo[a].min(w[a]);
                        hi[a] = hi[a].max(w[a]);
                    }
                }
            }
        }
    }
    // Widened by 1 mm plus 0.1 % of the size on each side: decoded vertices differ from the source
    // by the format's small error, and culling must never cut them.
    let size = (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f64::max);
    let margin = 1e-3 + 1e-3 * size;
    let bounds =
        PositionBounds::from_points([lo.map(|v| (v - margin) as f32), hi.map(|v| (v + margin) as f32)])?;

    // The piece texture, each piece's quaternion track kept in one hemisphere across all frames.
    // One column per piece, one row per frame (texel `frame * pieces + piece` at `(piece, frame)`:
    // no padding), when that fits the device; otherwise the linear layout wraps rows.
    let pieces = piece_count as u32;
    let layout = if pieces <= options.max_texture_dim && frame_count <= options.max_texture_dim {
        let l = VertexTextureLayout { vertex_count: pieces, frame_count, width: pieces, height: frame_count };
        l.validate(options.max_texture_dim)?;
        l
    } else {
        VertexTextureLayout::new(pieces, frame_count, options.max_texture_dim)?
    };
    let mut tracks: Vec<Vec<[f32; 4]>> = (0..piece_count)
        .map(|k| source.clips.iter().flat_map(|c| c.frames.iter().map(move |f| f[k].rotation)).collect())
        .collect();
    for t in &mut tracks {
        make_hemisphere_continuous(t);
    }
    let mut piece_bytes = vec![0u8; layout.byte_len(rigid::RIGID_TEXEL_BYTES) as usize];
    let mut frame = 0u32;
    for c in &source.clips {
        for f in &c.frames {
            for (k, t) in f.iter().enumerate() {
                let texel = rigid::encode_piece_texel(&pivot_bounds, t.pivot, tracks[k][frame as usize])?;
                let at = layout.texel_index(frame, k as u32) as usize * 16;
                for (w, word) in texel.iter().enumerate() {
                    piece_bytes[at + 4 * w..at + 4 * w + 4].copy_from_slice(&word.to_le_bytes());
                }
            }
            frame += 1;
        }
    }
    let vertex_layout = VertexTextureLayout::new(vertex_count as u32, 1, options.max_texture_dim)?;
    let mut vertex_bytes = vec![0u8; vertex_layout.byte_len(rigid::RIGID_TEXEL_BYTES) as usize];
    for (v, texel) in vertex_texels.iter().enumerate() {
        for (w, word) in texel.iter().enumerate() {
            vertex_bytes[v * 16 + 4 * w..v * 16 + 4 * w + 4].copy_from_slice(&word.to_le_bytes());
        }
    }

    let mut writer = ContainerWriter::new();
    let f32s = |v: &[[f32; 3]]| -> Vec<u8> { v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect() };
    let pieces_blob = writer.add_blob(piece_bytes);
    let vertices_blob = writer.add_blob(vertex_bytes);
    let rest_blob = writer.add_blob(f32s(&positions));
    let normal_blob = writer.add_blob(f32s(&normals));
    let material_blob = writer.add_blob(materials);
    let triangles = indices.len() as u32 / 3;
    // LODs from the rest pose (LOD 0 = every triangle), switching by their error and the rest size.
    let rest: Vec<Vec3> = positions.iter().map(|&p| Vec3::from(p)).collect();
    // Welded by position within a piece only (pieces move apart), seams kept by the normals,
    // texture coordinates and colours.
    let groups: Vec<u32> = source
        .pieces
        .iter()
        .enumerate()
        .flat_map(|(k, p)| std::iter::repeat_n(k as u32, p.positions.len()))
        .collect();
    let normal_vecs: Vec<Vec3> = normals.iter().map(|&n| Vec3::from(n)).collect();
    let uv_vecs: Option<Vec<glam::Vec2>> =
        uvs.as_ref().map(|u| u.iter().map(|&t| glam::Vec2::from(t)).collect());
    let color_vecs: Option<Vec<glam::Vec4>> =
        colors.as_ref().map(|c| c.iter().map(|&t| glam::Vec4::from(t)).collect());
    let surface = lods::LodSurface {
        normals: Some(&normal_vecs),
        uvs: uv_vecs.as_deref(),
        colors: color_vecs.as_deref(),
        groups: Some(&groups),
    };
    let chain = lods::build_lod_chain_surface(&rest, &indices, &[], &surface, &options.lods)?;
    let rest_size =
        PositionBounds::from_points(positions.iter().copied())?.extent.into_iter().fold(0.0f32, f32::max);
    let errors: Vec<f32> = chain.levels.iter().map(|l| l.error).collect();
    let distances = vat_core::lod::lod_switch_distances(&errors, rest_size);
    let mut index_bytes = Vec::with_capacity(chain.levels.iter().map(|l| l.indices.len()).sum::<usize>() * 4);
    let mut lod_entries = Vec::with_capacity(chain.levels.len());
    for (level, &max_distance) in chain.levels.iter().zip(&distances) {
        let first_index = (index_bytes.len() / 4) as u32;
        index_bytes.extend(level.indices.iter().flat_map(|i| i.to_le_bytes()));
        lod_entries.push(Lod {
            first_index,
            index_count: level.indices.len() as u32,
            triangle_count: (level.indices.len() / 3) as u32,
            screen_error: level.error,
            max_distance,
        });
    }
    let index_blob = writer.add_blob(index_bytes);
    let mut manifest = Manifest::new(source.name.clone(), vertex_count as u32);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(index_blob);
    manifest.lods = lod_entries;
    manifest.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest_blob },
        VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: normal_blob },
    ];
    manifest.streams.extend(crate::prepare::surface_streams(
        uvs.map(Vec::into_iter),
        colors.map(Vec::into_iter),
        |bytes| writer.add_blob(bytes),
    ));
    manifest.streams.push(VertexStream {
        kind: StreamKind::MaterialId,
        element: ElementFormat::U8,
        blob: material_blob,
    });
    let mut notes: Vec<String> = chain.dropped.iter().map(ToString::to_string).collect();
    notes.extend(chain.notes());
    if let Some(materials) = &source.materials {
        if let Some(&id) = materials_past(&materials.materials, &source.pieces) {
            return Err(invalid(
                &source.name,
                format!("material id {id} is past its {} materials", materials.materials.len()),
            ));
        }
        crate::prepare::set_material_sections(
            &mut manifest,
            materials,
            options.material_texture_size,
            &mut notes,
            |bytes| writer.add_blob(bytes),
        );
    }
    manifest.rigid_animation = Some(RigidAnimation {
        layout,
        pivot_bounds,
        bounds,
        pieces: pieces_blob,
        vertex_layout,
        vertices: vertices_blob,
        piece_names: source.pieces.iter().map(|p| p.name.clone()).collect(),
    });
    let bytes = writer.finish(manifest)?;
    let stats = RigidBakeStats {
        pieces: piece_count as u32,
        vertices: vertex_count as u32,
        triangles,
        frames: frame_count,
        piece_texture: [layout.width, layout.height],
        piece_texture_bytes: layout.byte_len(rigid::RIGID_TEXEL_BYTES),
        bytes_per_piece_frame: rigid::RIGID_TEXEL_BYTES,
        vertex_texture_bytes: vertex_layout.byte_len(rigid::RIGID_TEXEL_BYTES),
        translation_quantum_mm: pivot_bounds.extent.map(|e| f64::from(e) / 65535.0 * 1e3),
        file_bytes: bytes.len() as u64,
        materials: source.materials.as_ref().map_or(0, |m| m.materials.len() as u32),
        lod_triangles: chain.triangle_counts().into_iter().map(|t| t as u32).collect(),
        notes: crate::notes::collapse(notes),
    };
    Ok((bytes, stats))
}

/// The first material id of `pieces` past `materials`, if any.
fn materials_past<'a>(
    materials: &[vat_core::container::Material],
    pieces: &'a [RigidPiece],
) -> Option<&'a u8> {
    pieces.iter().flat_map(|p| &p.material_ids).find(|&&id| usize::from(id) >= materials.len())
}

/// What [`verify_rigid`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigidVerifyReport {
    /// Whether every check passed.
    pub passed: bool,
    /// Piece-frames compared.
    pub piece_frames: u64,
    /// Vertex-frames compared.
    pub vertex_frames: u64,
    /// Largest pivot error per axis, millimetres.
    pub translation_max_error_mm: [f64; 3],
    /// The translation bound per axis: half the pivot box quantum plus f32 rounding, millimetres.
    pub translation_bound_mm: [f64; 3],
    /// Largest rotation error, degrees.
    pub rotation_max_error_deg: f64,
    /// The rotation bound, degrees ([`ROTATION_BOUND_DEG`] plus f32 rounding).
    pub rotation_bound_deg: f64,
    /// Largest vertex position error, millimetres.
    pub vertex_max_error_mm: f64,
    /// The vertex bound: `|translation bound| + rotation bound (rad) * r` with `r` the largest
    /// distance of a vertex from its pivot, plus f32 rounding, millimetres.
    pub vertex_bound_mm: f64,
    /// One line per failed check.
    pub failures: Vec<String>,
}

/// Decodes every piece at every frame of `asset` with vat-core's CPU reference (point
/// interpolation at each baked frame, the shader's arithmetic) and compares it with `source`: the
/// pivot per axis against half the pivot box's quantum, the rotation angle against
/// [`ROTATION_BOUND_RAD`], and every vertex's object-space position against the bound they imply.
/// f32 rounding of the decode is allowed for on top of each bound: 4 ulps of the largest coordinate
/// of the box (translation, vertices) and `1e-6` rad (rotation).
///
/// # Errors
/// [`BakeError::InvalidInput`] when the asset is not a rigid bake or does not match the source's
/// pieces, vertices, clips or frames; [`BakeError::Core`] from the decoder.
pub fn verify_rigid(asset: &Asset<'_>, source: &RigidSource) -> Result<RigidVerifyReport> {
    let view = RigidAnimationView::from_asset(asset)?;
    let m = asset.manifest();
    let mismatch = |what: &str, baked: usize, source: usize| BakeError::InvalidInput {
        part: m.name.clone(),
        problem: format!("the file has {baked} {what}, the source {source}"),
    };
    if view.piece_count() as usize != source.pieces.len() {
        return Err(mismatch("pieces", view.piece_count() as usize, source.pieces.len()));
    }
    if m.vertex_count as usize != source.vertex_count() {
        return Err(mismatch("vertices", m.vertex_count as usize, source.vertex_count()));
    }
    if m.clips.len() != source.clips.len() {
        return Err(mismatch("clips", m.clips.len(), source.clips.len()));
    }
    for (c, s) in m.clips.iter().zip(&source.clips) {
        if c.frame_count as usize != s.frames.len() {
            return Err(mismatch("frames in a clip", c.frame_count as usize, s.frames.len()));
        }
    }
    let pb = view.pivot_bounds;
    let ulp_slack = |b: &PositionBounds| {
        let big = (0..3).map(|a| b.min[a].abs().max((b.min[a] + b.extent[a]).abs())).fold(0.0f32, f32::max);
        4.0 * f64::from(big) * f64::from(f32::EPSILON)
    };
    let t_slack = ulp_slack(&pb);
    let t_bound = rigid::translation_bound(&pb).map(|b| b + t_slack);
    let r_bound = ROTATION_BOUND_RAD + 1e-6;
    let radius = source
        .pieces
        .iter()
        .flat_map(|p| {
            p.positions.iter().map(move |v| {
                (0..3).map(|a| (f64::from(v[a]) - f64::from(p.rest_pivot[a])).powi(2)).sum::<f64>().sqrt()
            })
        })
        .fold(0.0, f64::max);
    let v_bound = (t_bound.iter().map(|b| b * b).sum::<f64>()).sqrt()
        + r_bound * radius
        + ulp_slack(&view_bounds(asset)?);
    let mut t_max = [0.0f64; 3];
    let mut r_max = 0.0f64;
    let mut v_max = 0.0f64;
    let (mut piece_frames, mut vertex_frames) = (0u64, 0u64);
    let vertex_pieces: Vec<(u32, [f32; 3])> =
        (0..m.vertex_count).map(|v| view.vertex_piece(v)).collect::<std::result::Result<_, _>>()?;
    for (ci, (clip, sc)) in m.clips.iter().zip(&source.clips).enumerate() {
        for (f, frame) in sc.frames.iter().enumerate() {
            // Phase of frame f: looping clips place frame f at f / n, one-shot clips at f / (n - 1).
            let n = clip.frame_count as f32;
            let phase = if clip.frame_count <= 1 {
                0.0
            } else if sc.looping {
                f as f32 / n
            } else {
                f as f32 / (n - 1.0)
            };
            let record = InstanceRecord {
                clip_a: ci as u32,
                phase_offset_a: phase,
                rate_a: 0.0,
                ..Default::default()
            };
            let mut decoded = Vec::with_capacity(frame.len());
            for (k, t) in frame.iter().enumerate() {
                let (pivot, q) =
                    reference::decode_rigid_piece(&view, &record, 0.0, k as u32, Interpolation::Point)?;
                for a in 0..3 {
                    t_max[a] = t_max[a].max((f64::from(pivot[a]) - f64::from(t.pivot[a])).abs());
                }
                r_max = r_max.max(rigid::rotation_angle_between(q, t.rotation));
                decoded.push(PieceTransform { pivot, rotation: q });
                piece_frames += 1;
            }
            let mut v = 0usize;
            for (k, p) in source.pieces.iter().enumerate() {
                for &rest in &p.positions {
                    let want = place_f64(&frame[k], p.rest_pivot, rest);
                    let got =
                        reference::decode_rigid_vertex(&view, &record, 0.0, v as u32, Interpolation::Point)?;
                    debug_assert_eq!(vertex_pieces[v].0 as usize, k);
                    let e =
                        (0..3).map(|a| (f64::from(got.object_position[a]) - want[a]).powi(2)).sum::<f64>();
                    v_max = v_max.max(e.sqrt());
                    v += 1;
                    vertex_frames += 1;
                }
            }
        }
    }
    let mut failures = Vec::new();
    for a in 0..3 {
        if t_max[a] > t_bound[a] {
            failures.push(format!(
                "pivot axis {a}: {:.6} mm > bound {:.6} mm",
                t_max[a] * 1e3,
                t_bound[a] * 1e3
            ));
        }
    }
    if r_max > r_bound {
        failures.push(format!(
            "rotation {:.6} deg > bound {:.6} deg",
            r_max.to_degrees(),
            r_bound.to_degrees()
        ));
    }
    if v_max > v_bound {
        failures.push(format!("vertex {:.6} mm > bound {:.6} mm", v_max * 1e3, v_bound * 1e3));
    }
    for (k, (p, (piece, pivot))) in
        source.pieces.iter().zip(first_vertices(source, &vertex_pieces)).enumerate()
    {
        if piece as usize != k || pivot != p.rest_pivot {
            failures.push(format!("piece {k}: its vertices carry piece {piece} and pivot {pivot:?}"));
            break;
        }
    }
    Ok(RigidVerifyReport {
        passed: failures.is_empty(),
        piece_frames,
        vertex_frames,
        translation_max_error_mm: t_max.map(|e| e * 1e3),
        translation_bound_mm: t_bound.map(|e| e * 1e3),
        rotation_max_error_deg: r_max.to_degrees(),
        rotation_bound_deg: ROTATION_BOUND_DEG + 1e-6f64.to_degrees(),
        vertex_max_error_mm: v_max * 1e3,
        vertex_bound_mm: v_bound * 1e3,
        failures,
    })
}

/// The rigid vertex texel of each piece's first vertex (pieces with no vertex are skipped).
fn first_vertices<'a>(
    source: &'a RigidSource,
    vertex_pieces: &'a [(u32, [f32; 3])],
) -> impl Iterator<Item = (u32, [f32; 3])> + 'a {
    let mut start = 0usize;
    source.pieces.iter().filter_map(move |p| {
        let at = start;
        start += p.positions.len();
        vertex_pieces.get(at).copied().filter(|_| !p.positions.is_empty())
    })
}

/// The rigid animation's vertex box.
fn view_bounds(asset: &Asset<'_>) -> Result<PositionBounds> {
    asset.manifest().animation_bounds().ok_or_else(|| BakeError::InvalidInput {
        part: asset.manifest().name.clone(),
        problem: "has no rigid animation".into(),
    })
}

/// A rotation helper for sources: the unit quaternion `[x, y, z, w]` of `q`.
pub fn quat_array(q: Quat) -> [f32; 4] {
    q.normalize().to_array()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;
    use crate::rig::{AnimationClip, Channel, ChannelTarget, KeyInterpolation, Mesh, Node, Transform};

    /// Two cubes on two nodes: one spins about Y and rises, the other slides along X.
    fn two_cubes() -> Rig {
        let cube = |name: &str, node: usize| {
            let mut positions = Vec::new();
            let mut normals = Vec::new();
            for &(n, u, v) in
                &[(Vec3::X, Vec3::Y, Vec3::Z), (Vec3::Y, Vec3::Z, Vec3::X), (Vec3::Z, Vec3::X, Vec3::Y)]
            {
                for s in [1.0f32, -1.0] {
                    for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                        positions.push(0.2 * (s * n + a * u + b * v));
                        normals.push(s * n);
                    }
                }
            }
            let indices = (0..6u32).flat_map(|f| [0, 1, 2, 0, 2, 3].map(|i| f * 4 + i)).collect();
            Mesh {
                name: name.into(),
                binding: MeshBinding::Rigid { node },
                role: MeshRole::Body,
                material_ids: vec![0; positions.len()],
                joints: Vec::new(),
                weights: Vec::new(),
                positions,
                normals,
                tangents: None,
                uvs: None,
                colors: None,
                indices,
                influence_count: 0,
                full_influences: None,
                morph_targets: Vec::new(),
                default_morph_weights: Vec::new(),
            }
        };
        let node = |name: &str, x: f32| Node {
            name: name.into(),
            parent: None,
            rest: Transform { translation: Vec3::new(x, 0.5, 0.0), ..Transform::IDENTITY },
        };
        let half = std::f32::consts::FRAC_1_SQRT_2;
        Rig {
            name: "cubes".into(),
            nodes: vec![node("spinner", -1.0), node("slider", 1.0)],
            meshes: vec![cube("a", 0), cube("b", 1)],
            clips: vec![AnimationClip {
                name: "move".into(),
                channels: vec![
                    Channel {
                        target: ChannelTarget::Rotation(0),
                        interpolation: KeyInterpolation::Linear,
                        times: vec![0.0, 1.0, 2.0],
                        values: vec![0.0, 0.0, 0.0, 1.0, 0.0, half, 0.0, half, 0.0, 1.0, 0.0, 0.0],
                    },
                    Channel {
                        target: ChannelTarget::Translation(0),
                        interpolation: KeyInterpolation::Linear,
                        times: vec![0.0, 2.0],
                        values: vec![-1.0, 0.5, 0.0, -1.0, 1.5, 0.0],
                    },
                    Channel {
                        target: ChannelTarget::Translation(1),
                        interpolation: KeyInterpolation::Linear,
                        times: vec![0.0, 2.0],
                        values: vec![1.0, 0.5, 0.0, 2.5, 0.5, -0.5],
                    },
                ],
                start: 0.0,
                end: 2.0,
                looping: Some(false),
                known_stride: None,
                locomotion: false,
            }],
            ..Rig::default()
        }
    }

    #[test]
    fn node_animated_meshes_bake_and_verify_within_the_bounds() {
        let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
        assert_eq!(source.pieces.len(), 2);
        assert_eq!(source.clips[0].frames.len(), 61);
        // At 1 s the spinner has turned 90 degrees about Y.
        let t = source.clips[0].frames[30][0];
        assert!(rigid::rotation_angle_between(t.rotation, [0.0, 0.0, 0.0, 1.0]).to_degrees() > 89.9);
        let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
        assert_eq!(stats.bytes_per_piece_frame, 16);
        assert_eq!(
            stats.piece_texture_bytes,
            u64::from(stats.piece_texture[0] * stats.piece_texture[1]) * 16
        );
        let asset = Asset::parse(&bytes).unwrap();
        assert_eq!(asset.manifest().mode(), vat_core::container::VatMode::Rigid);
        let report = verify_rigid(&asset, &source).unwrap();
        assert!(report.passed, "{report:?}");
        assert_eq!(report.piece_frames, 2 * 61);
        assert!(report.rotation_max_error_deg <= ROTATION_BOUND_DEG + 1e-4, "{report:?}");
        assert!(report.rotation_max_error_deg > 0.0);
        // Deterministic.
        assert_eq!(bake_rigid(&source, &RigidBakeOptions::default()).unwrap().0, bytes);
    }

    /// A smooth UV sphere piece of `rings` x `2 * rings` quads around `centre`, radius 0.5 m.
    fn sphere_piece(name: &str, centre: [f32; 3], rings: u32) -> RigidPiece {
        let segments = 2 * rings;
        let mut positions = Vec::new();
        for r in 0..=rings {
            let theta = std::f32::consts::PI * r as f32 / rings as f32;
            for k in 0..=segments {
                let phi = std::f32::consts::TAU * k as f32 / segments as f32;
                let n = [theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()];
                positions.push([centre[0] + 0.5 * n[0], centre[1] + 0.5 * n[1], centre[2] + 0.5 * n[2]]);
            }
        }
        let normals =
            positions.iter().map(|p| (Vec3::from(*p) - Vec3::from(centre)).normalize().to_array()).collect();
        let mut indices = Vec::new();
        for r in 0..rings {
            for k in 0..segments {
                let (a, b) = (r * (segments + 1) + k, (r + 1) * (segments + 1) + k);
                indices.extend([a, b, a + 1, a + 1, b, b + 1]);
            }
        }
        let n = positions.len();
        RigidPiece {
            name: name.into(),
            positions,
            normals,
            material_ids: vec![0; n],
            uvs: None,
            colors: None,
            indices,
            rest_pivot: centre,
        }
    }

    #[test]
    fn rigid_bakes_have_lods_from_the_rest_pose_that_never_join_two_pieces() {
        let pieces = vec![sphere_piece("a", [0.0, 1.0, 0.0], 16), sphere_piece("b", [1.5, 1.0, 0.0], 16)];
        let frames = (0..10)
            .map(|f| {
                let t = f as f32 / 10.0;
                vec![
                    PieceTransform {
                        pivot: [0.0, 1.0 + t, 0.0],
                        rotation: quat_array(Quat::from_rotation_y(t)),
                    },
                    PieceTransform {
                        pivot: [1.5, 1.0, t],
                        rotation: quat_array(Quat::from_rotation_x(2.0 * t)),
                    },
                ]
            })
            .collect();
        let source = RigidSource {
            name: "spheres".into(),
            pieces,
            clips: vec![RigidClip { name: "fly".into(), fps: 10.0, looping: false, frames }],
            materials: None,
        };
        let (bytes, stats) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let lods = &asset.manifest().lods;
        println!("LOD triangles: {:?}", stats.lod_triangles);
        assert!(lods.len() >= 3, "{:?} ({:?})", stats.lod_triangles, stats.notes);
        assert_eq!(stats.lod_triangles[0], stats.triangles);
        assert!(stats.lod_triangles.windows(2).all(|w| w[1] < w[0]), "{:?}", stats.lod_triangles);
        assert!(lods.windows(2).all(|w| w[0].max_distance < w[1].max_distance));
        let first_b = source.pieces[0].positions.len() as u32;
        for lod in 0..lods.len() {
            let indices: Vec<u32> = asset
                .lod_index_bytes(lod)
                .unwrap()
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            for t in indices.chunks_exact(3) {
                let piece = |i: u32| i >= first_b;
                assert!(
                    t.iter().all(|&i| piece(i) == piece(t[0])),
                    "LOD {lod}: triangle {t:?} joins the pieces"
                );
            }
        }
        assert!(verify_rigid(&asset, &source).unwrap().passed);
        // --lods 1 keeps every triangle in one level.
        let one = RigidBakeOptions { lods: LodOptions::Count(1), ..RigidBakeOptions::default() };
        let (bytes, stats) = bake_rigid(&source, &one).unwrap();
        assert_eq!(Asset::parse(&bytes).unwrap().manifest().lods.len(), 1);
        assert_eq!(stats.lod_triangles, vec![stats.triangles]);
    }

    #[test]
    fn verification_fails_loudly_against_another_source() {
        let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
        let (bytes, _) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let mut moved = source.clone();
        moved.clips[0].frames[10][1].pivot[0] += 0.01;
        let report = verify_rigid(&asset, &moved).unwrap();
        assert!(!report.passed);
        assert!(report.failures.iter().any(|f| f.contains("pivot axis 0")), "{:?}", report.failures);
        let mut turned = source.clone();
        turned.clips[0].frames[5][0].rotation = quat_array(Quat::from_rotation_x(0.01));
        assert!(!verify_rigid(&asset, &turned).unwrap().passed);
        let mut fewer = source;
        fewer.pieces.pop();
        assert!(verify_rigid(&asset, &fewer).is_err());
    }

    #[test]
    fn bad_sources_are_refused() {
        let mut rig = two_cubes();
        rig.clips[0].channels.push(Channel {
            target: ChannelTarget::Scale(1),
            interpolation: KeyInterpolation::Linear,
            times: vec![0.0, 2.0],
            values: vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        });
        let e = RigidSource::from_rig(&rig, 30.0).unwrap_err();
        assert!(e.to_string().contains("scales"), "{e}");
        assert!(
            RigidSource::from_rig(&crate::procgen::morph_rig(false), 30.0)
                .unwrap_err()
                .to_string()
                .contains("morph targets")
        );
        let mut rig = two_cubes();
        rig.meshes[0].binding = MeshBinding::Skinned { skin: 0 };
        assert!(RigidSource::from_rig(&rig, 30.0).unwrap_err().to_string().contains("skinned"));
        assert!(RigidSource::from_rig(&two_cubes(), 0.0).is_err());
        let source = RigidSource::from_rig(&two_cubes(), 30.0).unwrap();
        let mut s = source.clone();
        s.pieces[0].indices.push(999);
        s.pieces[0].indices.extend([0, 0]);
        assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
        let mut s = source.clone();
        s.clips[0].frames[7].pop();
        assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
        let mut s = source.clone();
        s.clips[0].frames[3][0].pivot[1] = f32::NAN;
        assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
        let mut s = source;
        s.pieces.clear();
        assert!(bake_rigid(&s, &RigidBakeOptions::default()).is_err());
    }

    /// A mesh sequence made from a source: every piece's vertices placed at every frame, the
    /// pieces' vertices interleaved (so detection must regroup them).
    fn sequence_of(source: &RigidSource) -> crate::sequence::MeshSequence {
        let mut order = Vec::new();
        let longest = source.pieces.iter().map(|p| p.positions.len()).max().unwrap();
        for i in 0..longest {
            for (k, p) in source.pieces.iter().enumerate() {
                if i < p.positions.len() {
                    order.push((k, i));
                }
            }
        }
        let index_of = |k: usize, i: usize| order.iter().position(|&o| o == (k, i)).unwrap() as u32;
        let indices = source
            .pieces
            .iter()
            .enumerate()
            .flat_map(|(k, p)| p.indices.iter().map(move |&i| (k, i)))
            .collect::<Vec<_>>();
        let indices = indices.into_iter().map(|(k, i)| index_of(k, i as usize)).collect();
        let positions = source.clips[0]
            .frames
            .iter()
            .map(|f| {
                order
                    .iter()
                    .map(|&(k, i)| {
                        let p = &source.pieces[k];
                        let w = place_f64(&f[k], p.rest_pivot, p.positions[i]);
                        Vec3::new(w[0] as f32, w[1] as f32, w[2] as f32)
                    })
                    .collect()
            })
            .collect();
        crate::sequence::MeshSequence {
            name: "pieces".into(),
            positions,
            normals: None,
            uvs: None,
            indices,
            fps: 30.0,
            notes: Vec::new(),
        }
    }

    #[test]
    fn rigid_pieces_are_detected_in_a_mesh_sequence() {
        // Touching pieces (Voronoi neighbours share corners at rest) stay apart: they part later.
        let shatter = crate::procgen::shatter_with(12, 9);
        let seq = sequence_of(&shatter);
        let (source, residual) = RigidSource::from_sequence(&seq, RIGID_DETECTION_TOLERANCE).unwrap();
        assert_eq!(source.pieces.len(), shatter.pieces.len());
        assert!(residual < 1e-5, "{residual}");
        assert_eq!(source.vertex_count(), seq.vertex_count());
        // The fitted rotations are the source's (up to sign).
        for (f, frame) in source.clips[0].frames.iter().enumerate() {
            for t in frame {
                assert!(t.rotation.iter().all(|c| c.is_finite()), "frame {f}");
            }
        }
        let (bytes, _) = bake_rigid(&source, &RigidBakeOptions::default()).unwrap();
        let report = verify_rigid(&Asset::parse(&bytes).unwrap(), &source).unwrap();
        assert!(report.passed, "{report:?}");
        // A vertex that leaves its piece by 1 mm at one frame makes the sequence not rigid.
        let mut bent = seq.clone();
        bent.positions[40][3].y += 1e-3;
        let e = RigidSource::from_sequence(&bent, RIGID_DETECTION_TOLERANCE).unwrap_err().to_string();
        assert!(e.contains("frame 40") && e.contains("does not move rigidly"), "{e}");
        assert!(RigidSource::from_sequence(&seq, f32::NAN).is_err());
    }

    /// A sequence folder is detected frame by frame from its files: the same pieces and the same
    /// transforms, to the bit, as the same frames held in memory; a file bent after the check fails.
    #[test]
    fn rigid_pieces_are_detected_streaming_a_sequence_folder() {
        use crate::sequence::{SequenceFolder, SequenceOptions, read_sequence};
        let shatter = crate::procgen::shatter_with(6, 4);
        let mut seq = sequence_of(&shatter);
        seq.positions.truncate(24);
        let dir = std::env::temp_dir().join(format!("vat-rigid-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        crate::testdata::write_obj_frames(&seq, &dir, false);
        let options = SequenceOptions { fps: 30.0, ..Default::default() };
        let in_memory = read_sequence(&dir, &options).unwrap();
        let (expected, expected_residual) =
            RigidSource::from_sequence(&in_memory, RIGID_DETECTION_TOLERANCE).unwrap();
        let folder = SequenceFolder::open(&dir, &options).unwrap();
        let (streamed, residual) = RigidSource::from_folder(&folder, RIGID_DETECTION_TOLERANCE).unwrap();
        assert_eq!(streamed.pieces.len(), shatter.pieces.len());
        assert_eq!(residual.to_bits(), expected_residual.to_bits());
        assert_eq!(streamed.clips[0].frames.len(), 24);
        for (a, b) in streamed.pieces.iter().zip(&expected.pieces) {
            assert_eq!((&a.positions, &a.indices, a.rest_pivot), (&b.positions, &b.indices, b.rest_pivot));
        }
        for (fa, fb) in streamed.clips[0].frames.iter().zip(&expected.clips[0].frames) {
            for (a, b) in fa.iter().zip(fb) {
                assert_eq!((a.pivot, a.rotation), (b.pivot, b.rotation));
            }
        }
        // Frame 17's file rewritten after the check, a vertex 1 mm off its piece: the fit pass,
        // which reads it again, names the frame.
        let mut bent = seq.clone();
        bent.positions[17][5].x += 1e-3;
        let scratch = dir.join("bent");
        std::fs::create_dir_all(&scratch).unwrap();
        crate::testdata::write_obj_frames(&bent, &scratch, false);
        std::fs::copy(scratch.join("frame_17.obj"), dir.join("frame_17.obj")).unwrap();
        let e = RigidSource::from_folder(&folder, RIGID_DETECTION_TOLERANCE).unwrap_err().to_string();
        assert!(e.contains("frame 17") && e.contains("does not move rigidly"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Vertices that share a position at rest but part later are different pieces, even when
    /// they share it for most frames; vertices that share every position are one.
    #[test]
    fn shared_rest_positions_part_only_when_their_paths_do() {
        // Two triangles touching at one corner (vertices 2 and 3), a third sharing every position
        // of the first (vertices 6..9 copy 0..3: one piece with it).
        let rest = [
            Vec3::ZERO,
            Vec3::X,
            Vec3::Y,
            Vec3::Y,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(0.0, 2.0, 0.0),
            Vec3::ZERO,
            Vec3::X,
            Vec3::Y,
        ];
        let frames: Vec<Vec<Vec3>> = (0..10)
            .map(|f| {
                // The second triangle moves off only at the last frame.
                let shift = if f == 9 { Vec3::new(0.0, 0.0, 0.5) } else { Vec3::ZERO };
                rest.iter()
                    .enumerate()
                    .map(|(v, &p)| if (3..6).contains(&v) { p + shift } else { p })
                    .collect()
            })
            .collect();
        let seq = crate::sequence::MeshSequence {
            name: "corners".into(),
            positions: frames,
            normals: None,
            uvs: None,
            indices: vec![0, 1, 2, 3, 4, 5, 6, 7, 8],
            fps: 10.0,
            notes: Vec::new(),
        };
        let (source, _) = RigidSource::from_sequence(&seq, RIGID_DETECTION_TOLERANCE).unwrap();
        let sizes: Vec<usize> = source.pieces.iter().map(|p| p.positions.len()).collect();
        assert_eq!(sizes, [6, 3]);
        // Had they never parted, the touching corner would join them.
        let mut still = seq.clone();
        still.positions[9] = still.positions[0].clone();
        let (source, _) = RigidSource::from_sequence(&still, RIGID_DETECTION_TOLERANCE).unwrap();
        assert_eq!(source.pieces.len(), 1);
    }

    #[test]
    fn horn_fit_recovers_a_known_rotation() {
        let q = Quat::from_axis_angle(Vec3::new(0.3, 1.0, -0.2).normalize(), 2.1);
        let points = [Vec3::X, Vec3::Y, Vec3::Z, Vec3::new(0.3, -0.7, 0.2), Vec3::new(-1.0, 0.5, 0.5)];
        let shift = Vec3::new(1.0, 2.0, -3.0);
        let pairs: Vec<(Vec3, Vec3)> = points.iter().map(|&p| (p, q * p + shift)).collect();
        let c = centroid(points.iter().copied()).map(|v| v as f32);
        let (t, residual) = fit_rigid(pairs.iter().copied(), c);
        assert!(residual < 1e-5, "{residual}");
        assert!(rigid::rotation_angle_between(t.rotation, q.to_array()) < 1e-5);
    }
}

#[cfg(test)]
#[path = "rigid_materials_tests.rs"]
mod materials_tests;
