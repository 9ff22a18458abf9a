//! Soft-body sources: a mesh sequence (one mesh per frame, the same topology in every frame), read from
//! a folder of per-frame OBJ or glTF files or made by a simulation (`vat_procgen::cloth`).
//!
//! A sequence becomes a [`Rig`] with a streamed body ([`Rig::streamed_body`]) that bakes through the
//! VAT path: one rigid mesh whose rest pose is frame 0, and one clip that plays every frame at the
//! source's rate. The bake and `verify` read the frames from the source as they need them (a frame
//! per task), so a sequence folder is **streamed from disk**: it is read once to be checked
//! ([`SequenceFolder::open`]), once for the quantisation box, once to encode and once to verify,
//! and memory holds a few frames at a time, not the sequence. Sampled at the source's own rate, each
//! baked frame is exactly a source frame; between two frames the two are blended linearly, as VAT
//! playback does. So `verify` checks the bake against the source frames through the same code as a
//! skinned bake.
//!
//! **Normals.** Taken from the source when every frame has them; otherwise recomputed for every frame:
//! area-weighted over the triangles that use each vertex *index*, so vertices the source splits (a
//! hard edge, a UV seam) keep separate normals and hard edges stay hard (averaging by position, which
//! welds hard edges smooth, is a known defect of some VAT exporters).
//!
//! **Memory.** A folder costs the frames being read (about two per thread, each its file plus 48
//! bytes a vertex), charged to the bake's budget ([`crate::prepare::estimate_bake_bytes`]); an
//! in-memory [`MeshSequence`] holds its frames (24 bytes per vertex per frame). A sequence has at most
//! [`MAX_SEQUENCE_FRAMES`] frames, the `.vat` reader's frame limit.
//!
//! [`MeshSequence::into_morph_rig`] makes the other form, frames as morph targets under a weights
//! channel (a "mesh cache", as other tools export them), for export to glTF.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use glam::{Vec2, Vec3};
use vat_core::files::ReadLimit;

use crate::gltf_import::{self, ImportOptions};
use crate::rig::{
    AnimationClip, BodyFrame, BodyFrames, Channel, ChannelTarget, KeyInterpolation, Mesh, MeshBinding,
    MeshRole, MorphTarget, Node, Rig, StreamedBody, StreamedClip, Transform,
};
use crate::skin::VertexSet;
use crate::{BakeError, Result};

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

fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
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
fn streamed_rig(
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

/// The files of a sequence folder in frame order: every regular file whose extension is `obj`, `gltf`
/// or `glb` (any case; other files, e.g. `.mtl` or a `.bin` beside a `.gltf`, are ignored), sorted by
/// name with runs of digits compared as numbers (`f2` before `f10`).
///
/// # Errors
/// [`BakeError::Io`] if the folder cannot be listed; [`BakeError::InvalidInput`] if it has no frame
/// files or mixes OBJ with glTF.
pub fn sequence_files(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(list_frames(dir)?.0)
}

/// [`sequence_files`], and the names of the folder's other entries (not frames: left out). Frames
/// are listed through vat-core's read gate: a frame that is a link out of the folder, a FIFO or a
/// device is refused, naming it.
fn list_frames(dir: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let listing = crate::input::list_frames(dir, |p| frame_kind(p).is_some())?;
    let mut files = listing.frames;
    let mut others = listing.others;
    others.extend(listing.folders.into_iter().map(|f| format!("{f}/")));
    others.sort();
    let part = || format!("sequence folder {}", dir.display());
    if files.is_empty() {
        return Err(invalid(part(), "has no frame files (.obj, .gltf or .glb)"));
    }
    let obj = files.iter().filter(|f| frame_kind(f) == Some(FrameKind::Obj)).count();
    if obj != 0 && obj != files.len() {
        return Err(invalid(part(), format!("mixes {obj} OBJ files with {} glTF files", files.len() - obj)));
    }
    files.sort_by(|a, b| natural_order(&file_name(a), &file_name(b)));
    Ok((files, others))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Obj,
    Gltf,
}

fn frame_kind(path: &Path) -> Option<FrameKind> {
    match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "obj" => Some(FrameKind::Obj),
        "gltf" | "glb" => Some(FrameKind::Gltf),
        _ => None,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Compares names with runs of ASCII digits as numbers (then by length, so `07` and `7` are ordered),
/// everything else byte by byte.
fn natural_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let (si, sj) = (i, j);
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let (da, db) = (&a[si..i], &b[sj..j]);
            let (ta, tb) = (trim_zeros(da), trim_zeros(db));
            let by_value =
                ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb)).then_with(|| da.len().cmp(&db.len()));
            if by_value != Ordering::Equal {
                return by_value;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

/// `digits` without its leading zeros.
fn trim_zeros(digits: &[u8]) -> &[u8] {
    let first = digits.iter().position(|&c| c != b'0').unwrap_or(digits.len());
    &digits[first..]
}

/// One frame as read: positions, normals if every vertex has one, texture coordinates if any,
/// triangle list.
struct Frame {
    positions: Vec<Vec3>,
    normals: Option<Vec<Vec3>>,
    uvs: Option<Vec<Vec2>>,
    indices: Vec<u32>,
    /// What the file had that the frame leaves out, one line each.
    notes: Vec<String>,
}

/// What an OBJ file holds besides triangles, counted by [`check_obj_indices`].
#[derive(Debug, Default)]
struct ObjExtras {
    /// `p` and `l` statements (points and lines: not triangles, left out).
    points_and_lines: usize,
    /// `usemtl` and `mtllib` statements (materials are not read: every vertex has material 0).
    materials: usize,
    /// `v` statements with a colour (x y z r g b: the colour is not read).
    colours: usize,
}

impl ObjExtras {
    /// One note line per kind of content left out.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.points_and_lines > 0 {
            notes.push(format!(
                "{} point and line statements left out (not triangles)",
                self.points_and_lines
            ));
        }
        if self.materials > 0 {
            notes.push(format!(
                "{} material statements not read (every vertex gets material 0)",
                self.materials
            ));
        }
        if self.colours > 0 {
            notes.push(format!("the colours of {} vertices not read", self.colours));
        }
        notes
    }
}

/// Charges `bytes` to the read's budget.
struct Budget {
    used: u64,
    limit: u64,
}

impl Budget {
    fn charge(&mut self, what: &str, bytes: u64) -> Result<()> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            return Err(BakeError::OverBudget {
                what: format!("reading the mesh sequence ({what})"),
                needed: self.used,
                limit: self.limit,
                hint: "raise --max-memory, or bake fewer frames (a shorter sequence)",
            });
        }
        Ok(())
    }
}

/// Reads an OBJ frame: every object and group merged into one triangle list (faces triangulated as
/// fans; points and lines ignored), vertices split where the file's position, texture and normal
/// indices differ (so hard edges and seams keep their own vertices).
fn read_obj(path: &Path, bytes: &[u8]) -> Result<Frame> {
    read_obj_walked(path, bytes, None)
}

/// [`read_obj`], also following the file's points into `walk` when given.
fn read_obj_walked(path: &Path, bytes: &[u8], walk: Option<&mut ObjPointWalk>) -> Result<Frame> {
    let part = || format!("{}", path.display());
    // tobj computes offsets from face indices unchecked (an index of 0 or far past the end wraps or
    // overflows), so every face index is checked against what precedes it first.
    let extras = check_obj_indices(bytes, walk).map_err(|problem| invalid(part(), problem))?;
    let options =
        tobj::LoadOptions { single_index: true, triangulate: true, ignore_points: true, ignore_lines: true };
    // A malformed file must be a typed error even if the third-party parser panics on it.
    let loaded = std::panic::catch_unwind(|| {
        let mut reader = std::io::BufReader::new(bytes);
        tobj::load_obj_buf(&mut reader, &options, |_| Err(tobj::LoadError::OpenFileFailed))
    })
    .map_err(|_| invalid(part(), "the OBJ reader failed on this file (malformed OBJ)"))?;
    let (models, _materials) =
        loaded.map_err(|e| invalid(part(), format!("is not a readable OBJ file: {e}")))?;
    let mut frame = Frame {
        positions: Vec::new(),
        normals: Some(Vec::new()),
        uvs: Some(Vec::new()),
        indices: Vec::new(),
        notes: extras.notes(),
    };
    for model in &models {
        let m = &model.mesh;
        let base = frame.positions.len() as u32;
        let n = m.positions.len() / 3;
        if m.indices.iter().any(|&i| i as usize >= n) {
            return Err(invalid(
                part(),
                format!("object {:?} has a face index past its {n} vertices", model.name),
            ));
        }
        frame.positions.extend(m.positions.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])));
        match (&mut frame.normals, m.normals.len() == 3 * n) {
            (Some(all), true) => all.extend(m.normals.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2]))),
            (normals, _) => *normals = None,
        }
        match (&mut frame.uvs, m.texcoords.len() == 2 * n) {
            // OBJ's v grows upwards; glTF's (and vat's) downwards.
            (Some(all), true) => all.extend(m.texcoords.chunks_exact(2).map(|c| Vec2::new(c[0], 1.0 - c[1]))),
            (uvs, _) => *uvs = None,
        }
        frame.indices.extend(m.indices.iter().map(|&i| i + base));
    }
    if frame.positions.is_empty() || frame.indices.is_empty() {
        return Err(invalid(part(), "has no triangles"));
    }
    Ok(frame)
}

/// An OBJ mesh read as [`read_obj`] reads a frame, with each vertex's point: the index of the `v`
/// statement its position comes from (0-based, in file order), as tools that store one texel per
/// point (Houdini's VAT 3) number them.
pub(crate) struct ObjPoints {
    /// Rest positions per vertex.
    pub(crate) positions: Vec<Vec3>,
    /// Unit normals per vertex, when every vertex has one.
    pub(crate) normals: Option<Vec<Vec3>>,
    /// Texture coordinates per vertex (glTF convention), when every vertex has one.
    pub(crate) uvs: Option<Vec<Vec2>>,
    /// Triangle list.
    pub(crate) indices: Vec<u32>,
    /// The point of each vertex.
    pub(crate) point_of: Vec<u32>,
    /// `v` statements in the file.
    pub(crate) point_count: usize,
    /// What the file had that the mesh leaves out, one line each.
    pub(crate) notes: Vec<String>,
}

/// Reads an OBJ mesh with each vertex's point ([`ObjPoints`]). The points are followed through the
/// file's faces (fan-triangulated, as the OBJ reader does) and checked against the reader's output
/// corner by corner, position bits and all: a file where they cannot be followed is an error, never a
/// guess.
///
/// # Errors
/// Those of reading an OBJ frame; [`BakeError::InvalidInput`] when the points cannot be followed.
pub(crate) fn read_obj_points(path: &Path, bytes: &[u8]) -> Result<ObjPoints> {
    let part = || format!("{}", path.display());
    let mut walk = ObjPointWalk::default();
    let frame = read_obj_walked(path, bytes, Some(&mut walk))?;
    let ObjPointWalk { points, corners } = walk;
    let unfollowed = |why: String| {
        invalid(
            part(),
            format!("its points cannot be followed to its vertices ({why}); export triangles or quads"),
        )
    };
    if corners.len() != frame.indices.len() {
        return Err(unfollowed(format!(
            "{} triangle corners, the reader made {}",
            corners.len(),
            frame.indices.len()
        )));
    }
    let mut point_of = vec![u32::MAX; frame.positions.len()];
    for (c, (&v, &p)) in frame.indices.iter().zip(&corners).enumerate() {
        let (v, pi) = (v as usize, p as usize);
        let same = points.get(pi).is_some_and(|q| {
            q.to_array().map(f32::to_bits) == frame.positions[v].to_array().map(f32::to_bits)
        });
        if !same || (point_of[v] != u32::MAX && point_of[v] != p) {
            return Err(unfollowed(format!("corner {c} of the triangles")));
        }
        point_of[v] = p;
    }
    if point_of.contains(&u32::MAX) {
        return Err(unfollowed("a vertex no triangle uses".into()));
    }
    Ok(ObjPoints {
        positions: frame.positions,
        normals: frame.normals,
        uvs: frame.uvs,
        indices: frame.indices,
        point_of,
        point_count: points.len(),
        notes: frame.notes,
    })
}

/// An OBJ file's points (its `v` statements, in order) and the point of each corner of its faces,
/// fan-triangulated as tobj triangulates them, as [`check_obj_indices`] follows them.
#[derive(Default)]
struct ObjPointWalk {
    points: Vec<Vec3>,
    corners: Vec<u32>,
}

/// Checks that every index of every `f` and `l` statement of OBJ text names a position, texture
/// coordinate or normal defined above it (1-based, or negative: relative to the last one), as the OBJ
/// format requires, reading the lines the way tobj does; follows the points into `walk` when given.
fn check_obj_indices(
    bytes: &[u8],
    mut walk: Option<&mut ObjPointWalk>,
) -> std::result::Result<ObjExtras, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("is not UTF-8 text (byte {})", e.valid_up_to()))?;
    let mut counts = [0i64; 3]; // v, vt, vn
    let mut extras = ObjExtras::default();
    for (n, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let first = words.next();
        match first {
            Some("p") => extras.points_and_lines += 1,
            Some("usemtl" | "mtllib") => extras.materials += 1,
            Some("v") => {
                counts[0] += 1;
                if line.split_whitespace().count() >= 7 {
                    extras.colours += 1;
                }
                if let Some(walk) = walk.as_deref_mut() {
                    let xyz: Vec<f32> =
                        words.by_ref().take(3).map(|w| w.parse().unwrap_or(f32::NAN)).collect();
                    walk.points.push(if xyz.len() == 3 {
                        Vec3::new(xyz[0], xyz[1], xyz[2])
                    } else {
                        Vec3::NAN
                    });
                }
            }
            Some("vt") => counts[1] += 1,
            Some("vn") => counts[2] += 1,
            Some("f" | "l") => {
                if first == Some("l") {
                    extras.points_and_lines += 1;
                }
                let mut face = Vec::new();
                for word in words {
                    for (slot, token) in word.split('/').enumerate().take(3) {
                        if token.is_empty() {
                            continue;
                        }
                        let Ok(index) = token.parse::<i64>() else {
                            return Err(format!("line {}: {token:?} is not a face index", n + 1));
                        };
                        let count = counts[slot];
                        let resolved = if index < 0 { count + index } else { index - 1 };
                        if !(0..count).contains(&resolved) {
                            let what = ["position", "texture coordinate", "normal"][slot];
                            return Err(format!(
                                "line {}: face index {index} names no {what} ({count} defined above it)",
                                n + 1
                            ));
                        }
                        if slot == 0 {
                            face.push(resolved as u32);
                        }
                    }
                }
                if let Some(walk) = walk.as_deref_mut()
                    && first == Some("f")
                {
                    for k in 1..face.len().saturating_sub(1) {
                        walk.corners.extend([face[0], face[k], face[k + 1]]);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(extras)
}

/// Reads a glTF frame: the file's body meshes merged in their rest pose (see
/// [`VertexSet::from_rig`]; rigid meshes at their nodes' transforms).
fn read_gltf(path: &Path, max_memory: u64) -> Result<Frame> {
    let rig = gltf_import::import_file(path, &ImportOptions { max_memory, ..ImportOptions::default() })?;
    let set = VertexSet::from_rig(&rig)?;
    let rest = crate::skin::skin_pose(&rig, &set, &crate::sample::rest_pose(&rig));
    let notes = rig.notes.clone();
    Ok(Frame {
        positions: rest.positions,
        normals: Some(rest.normals),
        uvs: set.uvs,
        indices: set.indices,
        notes,
    })
}

/// A sequence folder ([`sequence_files`]), checked and ready to stream: it holds frame 0's topology and
/// texture coordinates, and reads any frame again from its file ([`BodyFrames`]).
#[derive(Debug, Clone)]
pub struct SequenceFolder {
    name: String,
    fps: f32,
    files: Vec<PathBuf>,
    indices: Vec<u32>,
    uvs: Option<Vec<Vec2>>,
    vertex_count: usize,
    /// Whether every frame has normals (else every frame's are recomputed).
    source_normals: bool,
    /// The largest file plus its decoded frame, bytes.
    frame_bytes: u64,
    max_memory: u64,
    notes: Vec<String>,
}

/// What checking one frame file found.
struct FrameCheck {
    notes: Vec<String>,
    normals: bool,
    bytes: u64,
}

impl SequenceFolder {
    /// Lists `dir`'s frame files and reads every one once to check it (in parallel, a frame per
    /// task, nothing kept but frame 0's triangles and texture coordinates): the same vertex count
    /// and triangles as frame 0, finite positions and normals. The notes say what the files had that
    /// the sequence leaves out (once per kind, with the first file and the count of frames).
    ///
    /// # Errors
    /// [`BakeError::Io`] for an unreadable folder or file; [`BakeError::InvalidInput`] naming the file
    /// for a frame that does not parse or whose topology differs from frame 0's;
    /// [`BakeError::OverBudget`] when the frames read at once would exceed `options.max_memory`;
    /// glTF import errors for glTF frames; [`BakeError::InvalidOption`] (`--fps`) for a bad rate.
    pub fn open(dir: &Path, options: &SequenceOptions) -> Result<SequenceFolder> {
        let (files, others) = list_frames(dir)?;
        if files.len() > MAX_SEQUENCE_FRAMES {
            return Err(invalid(
                format!("sequence folder {}", dir.display()),
                format!(
                    "has {} frame files; at most {MAX_SEQUENCE_FRAMES} bake as one soft-body clip",
                    files.len()
                ),
            ));
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "sequence".into());
        // Frame 0 fixes the topology; frames are read a few at a time (one per thread).
        let threads = rayon::current_num_threads().max(1) as u64;
        let per_read = options.max_memory / threads;
        let (first, first_bytes) = read_frame_file(&files[0], per_read)?;
        let mut folder = SequenceFolder {
            name,
            fps: options.fps,
            vertex_count: first.positions.len(),
            indices: first.indices,
            uvs: first.uvs,
            source_normals: first.normals.is_some(),
            frame_bytes: first_bytes,
            max_memory: per_read,
            notes: Vec::new(),
            files,
        };
        // The rate, the triangles and frame 0's values, checked as a one-frame sequence.
        MeshSequence {
            name: folder.name.clone(),
            positions: vec![first.positions],
            normals: first.normals.map(|n| vec![n]),
            uvs: folder.uvs.clone(),
            indices: folder.indices.clone(),
            fps: folder.fps,
            notes: Vec::new(),
        }
        .validate()
        .map_err(|e| match e {
            BakeError::InvalidInput { problem, .. } => {
                invalid(format!("{}", folder.files[0].display()), problem)
            }
            other => other,
        })?;
        let checks: Vec<Result<FrameCheck>> = (1..folder.files.len())
            .into_par_iter()
            .map(|k| {
                let (frame, bytes) = folder.checked_frame(k)?;
                Ok(FrameCheck { notes: frame.notes, normals: frame.normals.is_some(), bytes })
            })
            .collect();
        let mut frame_notes: Vec<(String, String, usize)> = Vec::new();
        let mut add_notes = |notes: Vec<String>, file: &Path| {
            for note in notes {
                match frame_notes.iter_mut().find(|(n, _, _)| *n == note) {
                    Some(seen) => seen.2 += 1,
                    None => frame_notes.push((note, file_name(file), 1)),
                }
            }
        };
        add_notes(first.notes, &folder.files[0]);
        let mut with_normals = usize::from(folder.source_normals);
        for (k, check) in checks.into_iter().enumerate() {
            let check = check?;
            add_notes(check.notes, &folder.files[k + 1]);
            with_normals += usize::from(check.normals);
            folder.frame_bytes = folder.frame_bytes.max(check.bytes);
        }
        let frames = folder.files.len();
        folder.source_normals = with_normals == frames;
        if !others.is_empty() {
            let shown: Vec<&str> = others.iter().take(3).map(String::as_str).collect();
            folder.notes.push(format!(
                "{}: {} entries that are not frame files left out ({}{})",
                dir.display(),
                others.len(),
                shown.join(", "),
                if others.len() > 3 { ", ..." } else { "" }
            ));
        }
        for (note, first, count) in frame_notes {
            let more = if count > 1 { format!(" (and {} more frames)", count - 1) } else { String::new() };
            folder.notes.push(format!("{first}{more}: {note}"));
        }
        if with_normals > 0 && with_normals < frames {
            folder.notes.push(format!(
                "{}: {with_normals} of {frames} frames have normals; the normals of every frame are recomputed instead",
                dir.display()
            ));
        }
        Ok(folder)
    }

    /// The sequence's name (the folder's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The frame files, in frame order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// What the files had that the sequence leaves out, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Frames per second of the source.
    pub fn fps(&self) -> f32 {
        self.fps
    }

    /// Frame 0's triangle list (every frame's), three indices per triangle.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Frame 0's texture coordinates (static), if it has them.
    pub fn uvs(&self) -> Option<&[Vec2]> {
        self.uvs.as_deref()
    }

    /// The rig that bakes this folder, streaming its frames from the files (see the module docs).
    ///
    /// # Errors
    /// Frame 0's read errors (the file changed since [`SequenceFolder::open`]).
    pub fn into_rig(self) -> Result<Rig> {
        let (name, fps, uvs, indices, notes) =
            (self.name.clone(), self.fps, self.uvs.clone(), self.indices.clone(), self.notes.clone());
        streamed_rig(name, fps, uvs, indices, notes, Arc::new(self))
    }

    /// Reads frame `k`'s file and checks it against frame 0: the same vertex count and triangles,
    /// finite positions and normals. Returns the frame and the bytes the read held.
    fn checked_frame(&self, k: usize) -> Result<(Frame, u64)> {
        let file = &self.files[k];
        let (frame, bytes) = read_frame_file(file, self.max_memory)?;
        let part = || format!("{}", file.display());
        let n = self.vertex_count;
        if frame.positions.len() != n {
            return Err(invalid(
                part(),
                format!(
                    "has {} vertices, frame 0 ({}) has {n}: a soft-body sequence needs the same topology in every frame",
                    frame.positions.len(),
                    file_name(&self.files[0])
                ),
            ));
        }
        if frame.indices != self.indices {
            let first = frame.indices.iter().zip(&self.indices).position(|(a, b)| a != b);
            return Err(invalid(
                part(),
                match first {
                    Some(i) => format!(
                        "triangle {} differs from frame 0's ({} in {}): a soft-body sequence needs the same topology \
                         in every frame",
                        i / 3,
                        file_name(file),
                        file_name(&self.files[0])
                    ),
                    None => format!(
                        "has {} triangles, frame 0 has {}: a soft-body sequence needs the same topology in every frame",
                        frame.indices.len() / 3,
                        self.indices.len() / 3
                    ),
                },
            ));
        }
        if let Some(v) = frame.positions.iter().position(|p| !p.is_finite()) {
            return Err(invalid(part(), format!("vertex {v} is not finite")));
        }
        if let Some(normals) = &frame.normals
            && normals.iter().any(|v| !v.is_finite())
        {
            return Err(invalid(part(), format!("needs {n} finite normals")));
        }
        Ok((frame, bytes))
    }
}

impl BodyFrames for SequenceFolder {
    fn frame_count(&self) -> usize {
        self.files.len()
    }

    fn vertex_count(&self) -> usize {
        self.vertex_count
    }

    fn frame_bytes(&self) -> u64 {
        self.frame_bytes
    }

    fn read_frame(&self, k: usize) -> Result<BodyFrame> {
        if k >= self.files.len() {
            return Err(invalid(
                format!("sequence \"{}\" frame {k}", self.name),
                format!("past its {} frames", self.files.len()),
            ));
        }
        let (frame, _) = self.checked_frame(k)?;
        let normals = match frame.normals {
            Some(n) if self.source_normals => {
                n.iter().map(|v| v.try_normalize().unwrap_or(Vec3::Y)).collect()
            }
            _ => smooth_normals(&frame.positions, &self.indices),
        };
        Ok(BodyFrame { positions: frame.positions, normals })
    }
}

/// Reads one frame file (OBJ within `max_memory` bytes, or glTF under that budget): the frame and
/// about the bytes the read held (the file and 48 bytes per vertex).
fn read_frame_file(file: &Path, max_memory: u64) -> Result<(Frame, u64)> {
    match frame_kind(file) {
        Some(FrameKind::Obj) => {
            let mut budget = Budget { used: 0, limit: max_memory };
            let bytes = crate::input::read_in_folder(file, ReadLimit::new(max_memory, "--max-memory"))?;
            let len = bytes.len() as u64;
            budget.charge(&file_name(file), len)?;
            let frame = read_obj(file, &bytes)?;
            let decoded = frame.positions.len() as u64 * 48;
            budget.charge(&file_name(file), decoded)?;
            Ok((frame, len + decoded))
        }
        _ => {
            let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let frame = read_gltf(file, max_memory)?;
            let decoded = frame.positions.len() as u64 * 48;
            Ok((frame, len + decoded))
        }
    }
}

/// Reads a sequence folder ([`sequence_files`]) into a [`MeshSequence`] named after the folder, every
/// frame in memory ([`SequenceFolder::open`], then each frame again); [`sequence_rig`] bakes a folder
/// without holding its frames.
///
/// # Errors
/// As [`SequenceFolder::open`]; [`BakeError::OverBudget`] when the frames exceed `options.max_memory`.
pub fn read_sequence(dir: &Path, options: &SequenceOptions) -> Result<MeshSequence> {
    let folder = SequenceFolder::open(dir, options)?;
    let mut budget = Budget { used: 0, limit: options.max_memory };
    let mut positions = Vec::with_capacity(folder.files.len());
    let mut normals = folder.source_normals.then(|| Vec::with_capacity(folder.files.len()));
    for k in 0..folder.files.len() {
        // Positions and normals: 24 bytes per vertex per frame.
        budget.charge(&file_name(&folder.files[k]), folder.vertex_count as u64 * 24)?;
        // As read (the normals unnormalised, or recomputed later from the positions), so the
        // sequence bakes exactly as the folder does.
        let (frame, _) = folder.checked_frame(k)?;
        if let (Some(all), Some(n)) = (&mut normals, frame.normals) {
            all.push(n);
        }
        positions.push(frame.positions);
    }
    Ok(MeshSequence {
        name: folder.name,
        positions,
        normals,
        uvs: folder.uvs,
        indices: folder.indices,
        fps: folder.fps,
        notes: folder.notes,
    })
}

/// The rig of a sequence folder that streams its frames from the files ([`SequenceFolder::open`],
/// then [`SequenceFolder::into_rig`]).
///
/// # Errors
/// As [`SequenceFolder::open`].
pub fn sequence_rig(dir: &Path, options: &SequenceOptions) -> Result<Rig> {
    SequenceFolder::open(dir, options)?.into_rig()
}

/// Parses `bytes` as one OBJ frame (see [`read_sequence`] for what is read) into a one-frame
/// sequence named `name`, at 30 fps. `label` names the bytes in errors.
///
/// # Errors
/// [`BakeError::InvalidInput`] naming `label` for text that is not a readable OBJ with triangles.
pub fn parse_obj_frame(bytes: &[u8], label: &Path, name: &str) -> Result<MeshSequence> {
    let frame = read_obj(label, bytes)?;
    let sequence = MeshSequence {
        name: name.to_owned(),
        positions: vec![frame.positions],
        normals: frame.normals.map(|n| vec![n]),
        uvs: frame.uvs,
        indices: frame.indices,
        fps: 30.0,
        notes: frame.notes.iter().map(|n| format!("{}: {n}", label.display())).collect(),
    };
    sequence.validate().map_err(|e| match e {
        BakeError::InvalidInput { problem, .. } => invalid(format!("{}", label.display()), problem),
        other => other,
    })?;
    Ok(sequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obj_points_are_followed_through_polygons_groups_and_relative_indices() {
        // A quad and a pentagon in two objects, the second with negative (relative) indices and
        // per-corner texture coordinates that split one point into two vertices.
        let obj =
            b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\no a\nf 1/1 2/2 3/3 4/4\n\
o b\nv 2 0 0\nv 3 0 0\nv 3 1 0\nv 2.5 2 0\nv 2 1 0\nf -5/1 -4/2 -3/3 -2/4 -1/1\nf 3/1 2/2 5/3\n";
        let p = read_obj_points(Path::new("t.obj"), obj).unwrap();
        assert_eq!(p.point_count, 9);
        for (v, &pt) in p.point_of.iter().enumerate() {
            let want = [
                [0., 0., 0.],
                [1., 0., 0.],
                [1., 1., 0.],
                [0., 1., 0.],
                [2., 0., 0.],
                [3., 0., 0.],
                [3., 1., 0.],
                [2.5, 2., 0.],
                [2., 1., 0.],
            ];
            assert_eq!(p.positions[v].to_array(), want[pt as usize], "vertex {v}");
        }
        // Point 2 (1, 1, 0) is used with two texture coordinates: two vertices, one point.
        assert_eq!(p.point_of.iter().filter(|&&q| q == 2).count(), 2);
        assert_eq!(p.indices.len(), 3 * (2 + 3 + 1));
    }
    use crate::prepare::{BakeOptions, prepare};
    use crate::verify::verify_prepared;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vat-sequence-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A "mesh cache" glTF (frames as morph targets, a STEP weights animation, as other tools export
    /// them) bakes to its frames: every baked frame decodes, independently of the rig's sampling, to
    /// the source frame within the format's bound.
    #[test]
    fn a_step_morph_mesh_cache_bakes_each_frame_onto_its_key() {
        use vat_core::container::Asset;
        use vat_core::playback::Interpolation;
        use vat_core::reference::{VertexAnimationView, decode_object_frame};
        let mut seq = crate::procgen::cloth_sequence();
        seq.positions.truncate(20);
        seq.normals.as_mut().unwrap().truncate(20);
        let mut rig = seq.clone().into_morph_rig().unwrap();
        rig.clips[0].channels[0].interpolation = KeyInterpolation::Step;
        let glb = crate::export::export_glb(&rig).unwrap();
        let imported = crate::gltf_import::import_slice(&glb, None, "cache").unwrap();
        let bake = prepare(
            &imported,
            &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() },
        )
        .unwrap();
        let bytes = bake.to_vat_bytes().unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let bound = vat_core::encoding::position_error_bound(view.format, view.position_bits, &view.bounds);
        let clip = &asset.manifest().clips[0];
        assert_eq!(clip.frame_count, 20);
        let n = seq.vertex_count();
        let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
        for k in 0..20u32 {
            let offset = crate::verify::exact_frame_offset(clip, k).unwrap();
            decode_object_frame(&view, 0, offset, Interpolation::Point, &mut p, &mut nrm).unwrap();
            for (baked, &source) in p.iter().zip(bake.vertex_order()) {
                let want = seq.positions[k as usize][source as usize];
                for a in 0..3 {
                    // The format's bound, plus the one f32 rounding of `p0 + (pk - p0)`.
                    let limit = bound[a] + f32::EPSILON * want[a].abs();
                    let e = (baked[a] - want[a]).abs();
                    assert!(e <= limit, "frame {k} vertex {source} axis {a}: {e} > {limit}");
                }
            }
        }
    }

    #[test]
    fn names_sort_with_numbers_by_value() {
        let mut names = vec!["f10.obj", "f2.obj", "f1.obj", "f02.obj", "a.obj", "f1a.obj"];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(names, ["a.obj", "f1.obj", "f1a.obj", "f2.obj", "f02.obj", "f10.obj"]);
    }

    #[test]
    fn recomputed_normals_keep_split_vertices_apart() {
        // Two triangles folded at 90 degrees along the edge x = 0: welded, the shared edge's normals
        // average both faces; split (the second triangle with its own copies), each keeps its face's.
        let p = [Vec3::ZERO, Vec3::Y, Vec3::X, Vec3::Z];
        let welded = smooth_normals(&p, &[0, 1, 2, 0, 3, 1]);
        // Faces: (0, Y, X) has normal Y x X = -Z, (0, Z, Y) has Z x Y = -X.
        assert!((welded[0] - Vec3::new(-1.0, 0.0, -1.0).normalize()).length() < 1e-6, "{welded:?}");
        let split_p = [p[0], p[1], p[2], p[0], p[3], p[1]];
        let split = smooth_normals(&split_p, &[0, 1, 2, 3, 4, 5]);
        assert_eq!(split[0], Vec3::NEG_Z);
        assert_eq!(split[3], Vec3::NEG_X);
    }

    #[test]
    fn the_cloth_bakes_loops_and_verifies_against_its_frames() {
        let seq = crate::procgen::cloth_sequence();
        assert_eq!(seq.frame_count(), 61);
        assert!(seq == crate::procgen::cloth_sequence(), "deterministic");
        // The banner moves, the pole does not.
        let moved =
            seq.positions[0].iter().zip(&seq.positions[15]).map(|(a, b)| a.distance(*b)).fold(0.0, f32::max);
        assert!(moved > 0.05, "{moved}");
        assert!(seq.positions.iter().all(|f| f[..24] == seq.positions[0][..24]));
        let rig = crate::procgen::cloth().unwrap();
        let bake = prepare(&rig, &BakeOptions::default()).unwrap();
        // 2 s at 30 fps; the last source frame, a copy of the first, is the loop's wrap.
        assert_eq!(bake.stats.frames, 60);
        assert!(bake.stats.clip_looping[0].looping, "{:?}", bake.stats.clip_looping);
        let report = verify_prepared(&bake, &rig).unwrap();
        assert!(report.passed, "{:?}", report.failures);
    }

    #[test]
    fn an_obj_folder_reads_back_the_frames_it_was_written_from() {
        let seq = crate::procgen::cloth_sequence();
        for normals in [true, false] {
            let dir = scratch(if normals { "obj-normals" } else { "obj-plain" });
            crate::testdata::write_obj_frames(&seq, &dir, normals);
            std::fs::write(dir.join("notes.txt"), "not a frame").unwrap();
            let read = read_sequence(&dir, &SequenceOptions::default()).unwrap();
            assert_eq!(read.frame_count(), 61);
            // Frame order is number order (frame_10 after frame_9), and every triangle corner has its
            // source position, bit for bit (the reader numbers vertices in its own order).
            assert_eq!(read.indices.len(), seq.indices.len());
            for (k, frame) in read.positions.iter().enumerate() {
                let same = read
                    .indices
                    .iter()
                    .zip(&seq.indices)
                    .all(|(&r, &s)| frame[r as usize] == seq.positions[k][s as usize]);
                assert!(same, "frame {k} differs");
            }
            assert_eq!(read.normals.is_some(), normals);
            let rig = read.into_rig().unwrap();
            let bake =
                prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(2), ..Default::default() })
                    .unwrap();
            let report = verify_prepared(&bake, &rig).unwrap();
            assert!(report.passed, "{report:#?}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// The folder's streamed rig bakes to exactly the bytes of the same frames held in memory, and
    /// reads every frame file again per pass instead of keeping them.
    #[test]
    fn a_streamed_folder_bakes_the_bytes_of_its_frames_in_memory() {
        let mut seq = crate::procgen::cloth_sequence();
        seq.positions.truncate(16);
        seq.normals.as_mut().unwrap().truncate(16);
        let dir = scratch("streamed");
        crate::testdata::write_obj_frames(&seq, &dir, true);
        let options = SequenceOptions::default();
        let streamed = sequence_rig(&dir, &options).unwrap();
        let in_memory = read_sequence(&dir, &options).unwrap().into_rig().unwrap();
        assert!(streamed.meshes[0].morph_targets.is_empty() && streamed.clips[0].channels.is_empty());
        let bake_options = BakeOptions { lods: crate::lods::LodOptions::Count(2), ..Default::default() };
        let a = prepare(&streamed, &bake_options).unwrap();
        let b = prepare(&in_memory, &bake_options).unwrap();
        assert!(a.to_vat_bytes().unwrap() == b.to_vat_bytes().unwrap(), "the two bakes differ");
        let report = verify_prepared(&a, &streamed).unwrap();
        assert!(report.passed, "{:?}", report.failures);
        // Options that need a skeleton or tangent frames are refused by name.
        for (flag, options) in [
            ("--bones", BakeOptions { bones: true, ..bake_options.clone() }),
            ("--tangents", BakeOptions { tangents: true, ..bake_options.clone() }),
            ("--root-motion", BakeOptions { root_motion: true, ..bake_options.clone() }),
        ] {
            let e = prepare(&streamed, &options).unwrap_err().to_string();
            assert!(e.contains(flag) && e.contains("mesh sequence"), "{flag}: {e}");
        }
        // glTF cannot carry the streamed frames; the morph-target form exports.
        let e = crate::export::export_glb(&streamed).unwrap_err().to_string();
        assert!(e.contains("into_morph_rig"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A frame file that changes between the check and the bake is an error naming it, not a
    /// silently different bake.
    #[test]
    fn a_frame_file_that_changes_after_it_was_checked_fails_the_bake_naming_it() {
        let mut seq = crate::procgen::cloth_sequence();
        seq.positions.truncate(6);
        seq.normals.as_mut().unwrap().truncate(6);
        let dir = scratch("changed");
        crate::testdata::write_obj_frames(&seq, &dir, false);
        let rig = sequence_rig(&dir, &SequenceOptions::default()).unwrap();
        let frame = dir.join("frame_3.obj");
        std::fs::write(&frame, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
        let e = prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() })
            .unwrap_err()
            .to_string();
        assert!(e.contains("frame_3.obj") && e.contains("same topology"), "{e}");
        std::fs::remove_file(&frame).unwrap();
        let e = prepare(&rig, &BakeOptions { lods: crate::lods::LodOptions::Count(1), ..Default::default() })
            .unwrap_err()
            .to_string();
        assert!(e.contains("frame_3.obj"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// More frames than the morph-target form allows bake through the streamed form; the morph form
    /// refuses them by name.
    #[test]
    fn a_sequence_past_the_morph_limit_bakes_streamed() {
        let frames = MAX_MORPH_SEQUENCE_FRAMES + 4;
        let base = [Vec3::ZERO, Vec3::X, Vec3::Y];
        let seq = MeshSequence {
            name: "long".into(),
            positions: (0..frames)
                .map(|k| base.iter().map(|p| *p + Vec3::Z * (k as f32 * 1e-3)).collect())
                .collect(),
            normals: None,
            uvs: None,
            indices: vec![0, 1, 2],
            fps: 60.0,
            notes: Vec::new(),
        };
        let e = seq.clone().into_morph_rig().unwrap_err().to_string();
        assert!(e.contains(&MAX_MORPH_SEQUENCE_FRAMES.to_string()), "{e}");
        let rig = seq.into_rig().unwrap();
        let bake = prepare(
            &rig,
            &BakeOptions { fps: 60.0, lods: crate::lods::LodOptions::Count(1), ..Default::default() },
        )
        .unwrap();
        assert_eq!(bake.stats.frames as usize, frames);
        let report = verify_prepared(&bake, &rig).unwrap();
        assert!(report.passed, "{:?}", report.failures);
    }

    #[test]
    fn what_a_folder_has_besides_frames_is_said_in_one_line_each() {
        let mut seq = crate::procgen::cloth_sequence();
        seq.positions.truncate(4);
        seq.normals.as_mut().unwrap().truncate(4);
        let dir = scratch("extras");
        crate::testdata::write_obj_frames(&seq, &dir, true);
        // Frames 1 and 2 gain a line, a point and a material; frame 3 loses its normals; a readme
        // sits beside them.
        for k in [1, 2] {
            let path = dir.join(format!("frame_{k}.obj"));
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("mtllib flag.mtl\nusemtl cloth\n{text}l 1 2\np 3\n")).unwrap();
        }
        let path = dir.join("frame_3.obj");
        let text: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("vn "))
            .map(|l| if l.starts_with("f ") { strip_normal_refs(l) } else { l.to_owned() })
            .collect();
        let text = text.join("\n");
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.join("readme.txt"), "frames of a flag").unwrap();
        let read = read_sequence(&dir, &SequenceOptions::default()).unwrap();
        let notes = read.notes.join("\n");
        for part in [
            "1 entries that are not frame files left out (readme.txt)",
            "frame_1.obj (and 1 more frames): 2 point and line statements left out (not triangles)",
            "frame_1.obj (and 1 more frames): 2 material statements not read",
            "3 of 4 frames have normals; the normals of every frame are recomputed",
        ] {
            assert!(notes.contains(part), "{notes:?} lacks {part:?}");
        }
        assert!(read.normals.is_none());
        // They reach the rig, which the bake prints.
        assert_eq!(read.into_rig().unwrap().notes.len(), 4);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `f a//a b//b c//c` as `f a b c`.
    fn strip_normal_refs(line: &str) -> String {
        line.split_whitespace().map(|w| w.split('/').next().unwrap_or(w)).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn a_frame_with_other_topology_is_refused_naming_its_file() {
        let seq = crate::procgen::cloth_sequence();
        let dir = scratch("topology");
        crate::testdata::write_obj_frames(&seq, &dir, false);
        // Frame 7 loses its last triangle.
        let path = dir.join("frame_7.obj");
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = text.trim_end().rfind('\n').unwrap();
        std::fs::write(&path, &text[..cut]).unwrap();
        let e = read_sequence(&dir, &SequenceOptions::default()).unwrap_err().to_string();
        for part in ["frame_7.obj", "same topology"] {
            assert!(e.contains(part), "{e:?} lacks {part:?}");
        }
        // A budget too small for the frames is refused with the numbers.
        let e = read_sequence(&dir, &SequenceOptions { max_memory: 100_000, ..Default::default() })
            .unwrap_err()
            .to_string();
        assert!(e.contains("memory budget") && e.contains("--max-memory"), "{e}");
        // Not an OBJ at all.
        std::fs::write(dir.join("frame_3.obj"), [0xffu8, 0xfe, 0x00, 0x41]).unwrap();
        let e = read_sequence(&dir, &SequenceOptions::default()).unwrap_err().to_string();
        assert!(e.contains("frame_3.obj"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        // An empty folder, and a bad rate.
        let empty = scratch("empty");
        assert!(
            read_sequence(&empty, &SequenceOptions::default())
                .unwrap_err()
                .to_string()
                .contains("no frame files")
        );
        let e = MeshSequence { fps: 0.0, ..seq }.into_rig().unwrap_err().to_string();
        assert!(e.contains("--fps"), "{e}");
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn a_gltf_folder_reads_each_file_as_a_frame() {
        let seq = crate::procgen::cloth_sequence();
        let dir = scratch("gltf");
        for k in [0usize, 20, 40] {
            let mut rig = MeshSequence {
                positions: vec![seq.positions[k].clone()],
                normals: seq.normals.as_ref().map(|n| vec![n[k].clone()]),
                ..seq.clone()
            }
            .into_morph_rig()
            .unwrap();
            rig.clips.clear();
            crate::export::write_glb(&rig, &dir.join(format!("f{k}.glb"))).unwrap();
        }
        let read = read_sequence(&dir, &SequenceOptions { fps: 1.5, ..Default::default() }).unwrap();
        assert_eq!(read.frame_count(), 3);
        assert!(read.positions[1] == seq.positions[20], "frame f20 is the second");
        assert_eq!(read.fps, 1.5);
        let rig = read.into_rig().unwrap();
        assert!((rig.clips[0].end - 2.0 / 1.5).abs() < 1e-6);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
