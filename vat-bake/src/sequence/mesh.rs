//! Mesh sequences: limits, options, smooth normals, validation and rigs built from frames.

use super::*;

/// The most frames a sequence may have: the `.vat` reader's frame limit
/// ([`vat_core::container::Limits::max_frames`]'s default).
pub const MAX_SEQUENCE_FRAMES: usize = 1 << 20;

/// The most frames [`MeshSequence::into_morph_rig`] makes morph targets of (its weights channel holds
/// `F * (F - 1)` floats: 64 MiB at this count).
pub const MAX_MORPH_SEQUENCE_FRAMES: usize = 4096;

/// A mesh sequence: the same triangles in every frame, positions (and normals) per frame.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshSequence {
    /// Name of the asset and of its one clip (e.g. the folder's name).
    pub name: String,
    /// Positions of every frame, metres (one `Vec` per frame, each `vertex_count` long).
    pub positions: Vec<Vec<Vec3>>,
    /// Unit normals of every frame, when the source has them for every frame; else recomputed.
    pub normals: Option<Vec<Vec<Vec3>>>,
    /// Texture coordinates (static), if any.
    pub uvs: Option<Vec<Vec2>>,
    /// Triangle list, three indices per triangle.
    pub indices: Vec<u32>,
    /// Frames per second of the source.
    pub fps: f32,
    /// What the source had that the sequence leaves out, one line each (OBJ points and lines,
    /// materials, files of the folder that are not frames, ...); they become the rig's
    /// [`Rig::notes`].
    pub notes: Vec<String>,
}

/// How a sequence folder is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceOptions {
    /// Frames per second of the source (`> 0`, finite).
    pub fps: f32,
    /// Memory budget of the read, in bytes (files, decoded frames and the weights channel).
    pub max_memory: u64,
}

impl Default for SequenceOptions {
    fn default() -> Self {
        Self { fps: 30.0, max_memory: crate::prepare::DEFAULT_MAX_MEMORY }
    }
}

pub(super) fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Area-weighted unit normals of `positions` over the triangle list `indices`, per vertex index
/// (split vertices keep their own normals). A vertex with no triangle of non-zero area gets +Y.
pub fn smooth_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut sum = vec![Vec3::ZERO; positions.len()];
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0] as usize, t[1] as usize, t[2] as usize];
        let (Some(&pa), Some(&pb), Some(&pc)) = (positions.get(a), positions.get(b), positions.get(c)) else {
            continue;
        };
        // The cross product's length is twice the area: area weighting for free.
        let n = (pb - pa).cross(pc - pa);
        for v in [a, b, c] {
            sum[v] += n;
        }
    }
    sum.into_iter().map(|n| n.try_normalize().unwrap_or(Vec3::Y)).collect()
}

impl MeshSequence {
    /// Frames in the sequence.
    pub fn frame_count(&self) -> usize {
        self.positions.len()
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> usize {
        self.positions.first().map_or(0, Vec::len)
    }

    /// Checks the sequence: at least one frame, at most [`MAX_SEQUENCE_FRAMES`], the same vertex count
    /// in every frame, finite positions and normals, whole triangles with indices in range, a
    /// positive finite rate.
    ///
    /// # Errors
    /// [`BakeError::InvalidInput`] naming the frame and what is wrong; [`BakeError::InvalidOption`]
    /// (`--fps`) for a bad rate.
    pub fn validate(&self) -> Result<()> {
        let part = |k: usize| format!("sequence \"{}\" frame {k}", self.name);
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return Err(BakeError::InvalidOption {
                option: "--fps",
                problem: format!("{} is not a positive, finite frame rate", self.fps),
            });
        }
        let frames = self.frame_count();
        if frames == 0 {
            return Err(invalid(format!("sequence \"{}\"", self.name), "has no frames"));
        }
        if frames > MAX_SEQUENCE_FRAMES {
            return Err(invalid(
                format!("sequence \"{}\"", self.name),
                format!(
                    "has {frames} frames; at most {MAX_SEQUENCE_FRAMES} bake as one soft-body clip (split it)"
                ),
            ));
        }
        let n = self.vertex_count();
        if n == 0 {
            return Err(invalid(part(0), "has no vertices"));
        }
        if self.indices.is_empty() || !self.indices.len().is_multiple_of(3) {
            return Err(invalid(
                part(0),
                format!("{} indices; need whole triangles, at least one", self.indices.len()),
            ));
        }
        if let Some(&i) = self.indices.iter().find(|&&i| i as usize >= n) {
            return Err(invalid(part(0), format!("index {i} is past its {n} vertices")));
        }
        for (k, p) in self.positions.iter().enumerate() {
            if p.len() != n {
                return Err(invalid(
                    part(k),
                    format!(
                        "has {} vertices, frame 0 has {n}: a soft-body sequence needs the same topology in every frame",
                        p.len()
                    ),
                ));
            }
            if let Some(v) = p.iter().position(|p| !p.is_finite()) {
                return Err(invalid(part(k), format!("vertex {v} is not finite")));
            }
        }
        if let Some(normals) = &self.normals {
            if normals.len() != frames {
                return Err(invalid(
                    format!("sequence \"{}\"", self.name),
                    "needs normals for every frame or none",
                ));
            }
            for (k, nk) in normals.iter().enumerate() {
                if nk.len() != n || nk.iter().any(|v| !v.is_finite()) {
                    return Err(invalid(part(k), format!("needs {n} finite normals, has {}", nk.len())));
                }
            }
        }
        if let Some(uv) = &self.uvs
            && (uv.len() != n || uv.iter().any(|v| !v.is_finite()))
        {
            return Err(invalid(part(0), format!("needs {n} finite texture coordinates, has {}", uv.len())));
        }
        Ok(())
    }

    /// The rig that bakes this sequence (see the module docs): one rigid mesh on one node, frame 0 as
    /// its rest pose, and one clip named after the sequence that plays every frame at the source's
    /// rate, read from the sequence (kept in memory) as the bake needs them. Whether it loops is left
    /// to the bake (its seam).
    ///
    /// # Errors
    /// As [`MeshSequence::validate`].
    pub fn into_rig(self) -> Result<Rig> {
        self.validate()?;
        let mut seq = self;
        let (name, fps, indices) = (seq.name.clone(), seq.fps, seq.indices.clone());
        let (uvs, notes) = (seq.uvs.take(), std::mem::take(&mut seq.notes));
        streamed_rig(name, fps, uvs, indices, notes, Arc::new(SequenceFrames(seq)))
    }

    /// The sequence as a morph-target rig (a "mesh cache"): one rigid mesh on one node, frame 0 as its
    /// rest pose, frame `k` as morph target `k - 1` (its position and normal deltas from frame 0), and
    /// one clip whose LINEAR morph-weights channel selects target `k - 1` alone at `k / fps` seconds:
    /// the form glTF carries a sequence in ([`crate::export`]). [`MeshSequence::into_rig`] bakes with
    /// less memory.
    ///
    /// # Errors
    /// As [`MeshSequence::validate`]; [`BakeError::InvalidInput`] past [`MAX_MORPH_SEQUENCE_FRAMES`]
    /// frames.
    pub fn into_morph_rig(self) -> Result<Rig> {
        self.validate()?;
        let frames = self.frame_count();
        if frames > MAX_MORPH_SEQUENCE_FRAMES {
            return Err(invalid(
                format!("sequence \"{}\"", self.name),
                format!(
                    "has {frames} frames; at most {MAX_MORPH_SEQUENCE_FRAMES} become morph targets (split it)"
                ),
            ));
        }
        let n = self.vertex_count();
        let normals_of = |k: usize| match &self.normals {
            Some(normals) => normals[k].iter().map(|v| v.try_normalize().unwrap_or(Vec3::Y)).collect(),
            None => smooth_normals(&self.positions[k], &self.indices),
        };
        let base_normals: Vec<Vec3> = normals_of(0);
        let base = &self.positions[0];
        let morph_targets: Vec<MorphTarget> = (1..frames)
            .map(|k| {
                let nk: Vec<Vec3> = normals_of(k);
                MorphTarget {
                    name: Some(format!("frame {k}")),
                    positions: self.positions[k].iter().zip(base).map(|(p, b)| *p - *b).collect(),
                    normals: Some(nk.iter().zip(&base_normals).map(|(a, b)| *a - *b).collect()),
                    tangents: None,
                }
            })
            .collect();
        let targets = frames - 1;
        // Exactly the times the bake samples frame `k` at (`prepare::frame_time`), so each baked
        // frame lands on its key.
        let times: Vec<f32> = (0..frames).map(|k| (k as f64 / f64::from(self.fps)) as f32).collect();
        let mut values = vec![0.0f32; frames * targets];
        for k in 1..frames {
            values[k * targets + (k - 1)] = 1.0;
        }
        let channels = if targets == 0 {
            Vec::new()
        } else {
            vec![Channel {
                target: ChannelTarget::MorphWeights(0),
                interpolation: KeyInterpolation::Linear,
                times: times.clone(),
                values,
            }]
        };
        let mesh = Mesh {
            name: self.name.clone(),
            binding: MeshBinding::Rigid { node: 0 },
            role: MeshRole::Body,
            positions: base.clone(),
            normals: base_normals,
            tangents: None,
            uvs: self.uvs,
            colors: None,
            material_ids: vec![0; n],
            indices: self.indices,
            influence_count: 0,
            joints: Vec::new(),
            weights: Vec::new(),
            full_influences: None,
            morph_targets,
            default_morph_weights: vec![0.0; targets],
        };
        let clip = AnimationClip {
            name: self.name.clone(),
            channels,
            start: 0.0,
            end: times.last().copied().unwrap_or(0.0),
            looping: None,
            known_stride: None,
            locomotion: false,
        };
        Ok(Rig {
            name: self.name,
            nodes: vec![Node { name: "sequence".into(), parent: None, rest: Transform::IDENTITY }],
            meshes: vec![mesh],
            clips: vec![clip],
            notes: self.notes,
            ..Rig::default()
        })
    }
}

/// The rig of a mesh sequence whose frames come from `frames` (see the module docs): frame 0 as the
/// rest mesh, the triangle list `indices` (into the frames' vertices) and texture coordinates `uvs`
/// (one per vertex, static), and one clip named `name` over every frame at `fps` frames per second;
/// `notes` become [`Rig::notes`]. This is how a host streams its own simulation cache into a bake:
/// implement [`BodyFrames`] over it.
///
/// # Errors
/// [`BakeError::InvalidOption`] (`--fps`) for a rate that is not positive and finite;
/// [`BakeError::InvalidInput`] for no frames, no vertices, an index out of range or a partial
/// triangle, texture coordinates of another count, or frame 0's read error.
pub fn rig_from_frames(
    name: String,
    fps: f32,
    uvs: Option<Vec<Vec2>>,
    indices: Vec<u32>,
    notes: Vec<String>,
    frames: Arc<dyn BodyFrames>,
) -> Result<Rig> {
    if frames.frame_count() == 0 {
        return Err(invalid(format!("sequence \"{name}\""), "has no frames"));
    }
    let first = frames.read_frame(0)?;
    if frames.vertex_count() != first.positions.len() {
        return Err(invalid(
            format!("sequence \"{name}\""),
            format!(
                "says it has {} vertices; its frame 0 has {}",
                frames.vertex_count(),
                first.positions.len()
            ),
        ));
    }
    // Frame 0, the triangles, the texture coordinates and the rate, checked as a one-frame sequence.
    MeshSequence {
        name: name.clone(),
        positions: vec![first.positions],
        normals: Some(vec![first.normals]),
        uvs: uvs.clone(),
        indices: indices.clone(),
        fps,
        notes: Vec::new(),
    }
    .validate()?;
    streamed_rig(name, fps, uvs, indices, notes, frames)
}

/// The streamed rig of a sequence (see the module docs): frame 0 of `frames` as the rest mesh, one clip
/// over every frame at `fps`.
pub(super) fn streamed_rig(
    name: String,
    fps: f32,
    uvs: Option<Vec<Vec2>>,
    indices: Vec<u32>,
    notes: Vec<String>,
    frames: Arc<dyn BodyFrames>,
) -> Result<Rig> {
    let count = frames.frame_count();
    let first = frames.read_frame(0)?;
    let n = first.positions.len();
    // Exactly the time the bake samples the last frame at (`prepare::frame_time`).
    let end = (count.saturating_sub(1) as f64 / f64::from(fps)) as f32;
    let mesh = Mesh {
        name: name.clone(),
        binding: MeshBinding::Rigid { node: 0 },
        role: MeshRole::Body,
        positions: first.positions,
        normals: first.normals,
        tangents: None,
        uvs,
        colors: None,
        material_ids: vec![0; n],
        indices,
        influence_count: 0,
        joints: Vec::new(),
        weights: Vec::new(),
        full_influences: None,
        morph_targets: Vec::new(),
        default_morph_weights: Vec::new(),
    };
    let clip = AnimationClip {
        name: name.clone(),
        channels: Vec::new(),
        start: 0.0,
        end,
        looping: None,
        known_stride: None,
        locomotion: false,
    };
    Ok(Rig {
        name,
        nodes: vec![Node { name: "sequence".into(), parent: None, rest: Transform::IDENTITY }],
        meshes: vec![mesh],
        clips: vec![clip],
        notes,
        streamed_body: Some(StreamedBody {
            frames,
            clips: vec![StreamedClip { first: 0, last: count.saturating_sub(1), fps, wraps: false }],
        }),
        ..Rig::default()
    })
}

/// A [`MeshSequence`] read as [`BodyFrames`], owned (`S = MeshSequence`: the rig of
/// [`MeshSequence::into_rig`]) or borrowed (`S = &MeshSequence`: what
/// [`crate::rigid::RigidSource::from_sequence`] detects pieces in). A frame's normals are the
/// source's normalised, or recomputed when it has none.
pub(crate) struct SequenceFrames<S>(pub(crate) S);

impl<S: std::borrow::Borrow<MeshSequence> + Send + Sync> BodyFrames for SequenceFrames<S> {
    fn frame_count(&self) -> usize {
        self.0.borrow().frame_count()
    }

    fn vertex_count(&self) -> usize {
        self.0.borrow().vertex_count()
    }

    fn frame_bytes(&self) -> u64 {
        self.vertex_count() as u64 * 24
    }

    fn read_frame(&self, k: usize) -> Result<BodyFrame> {
        let seq = self.0.borrow();
        let Some(frame) = seq.positions.get(k) else {
            return Err(invalid(
                format!("sequence frame {k}"),
                format!("past its {} frames", seq.positions.len()),
            ));
        };
        let normals = match &seq.normals {
            Some(all) => all[k].iter().map(|v| v.try_normalize().unwrap_or(Vec3::Y)).collect(),
            None => smooth_normals(frame, &seq.indices),
        };
        Ok(BodyFrame { positions: frame.clone(), normals })
    }
}
