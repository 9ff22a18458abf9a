//! Bake options, the in-memory bake ([`PreparedBake`]) and writing it as a `.vat` file.
//!
//! [`prepare`] does all the work on the CPU and no I/O:
//!
//! 1. validate the options and plan the clips: each clip samples `round(d * fps)` frames at
//!    `start + k / fps` when looping (the end frame would repeat the first), `round(d * fps) + 1`
//!    frames ending exactly at `end` when one-shot ([`vat_core::clip::ClipRowMap`]); locomotion clips
//!    get their stride (known, or measured by [`crate::stride`]);
//! 2. merge the body meshes ([`VertexSet::from_rig`]), build the LOD chain on the original topology
//!    ([`crate::lods`]), then renumber the vertices so that texture neighbours are mesh neighbours
//!    ([`lods::locality_order`]) and rewrite every LOD's indices, before any texture is encoded;
//! 3. sample every frame's pose once; skin the positions of every frame to find the box positions
//!    are normalised into (over every vertex of every frame; nothing is stored), then skin each
//!    frame again (the ground truth, bit for bit [`skin::skin_frames_into`]) and encode it straight
//!    into the vertex texture in the chosen format, a frame per parallel task, so the skinned
//!    frames never exist all at once;
//! 4. optionally the bone texture (`global(node) * inverse_bind` per bone per frame) with joints and
//!    weights and, when the body has morph targets, bone mode's live morph layer ([`crate::morph`]),
//!    per-frame tangent frames, and always the sockets, capture tracks, attachments, LODs
//!    and rest-pose vertex streams.
//!
//! [`PreparedBake::to_vat_bytes`] lays the result out with [`vat_core::container::container_bytes`];
//! [`PreparedBake::write`] writes it atomically. Byte-identical blobs are stored once. Identical
//! inputs give identical bytes, whatever the number of threads.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use glam::{Mat4, Vec3, Vec4};
use rayon::prelude::*;
use serde::Serialize;
use vat_core::clip::{Clip, ClipMode, ClipRowMap};
use vat_core::container::{
    Attachment, BlobId, Bone as ManifestBone, BoneAnimation, CaptureTrack, ElementFormat, Lod, Manifest,
    Socket as ManifestSocket, StreamKind, VertexAnimation, VertexStream, container_bytes, write_container,
};
use vat_core::encoding::{self, NormalRounding, PositionBounds, VertexFormat};
use vat_core::files::{PendingFile, write_file_atomically};
use vat_core::layout::{BoneTextureLayout, VertexTextureLayout};

use crate::lods::{self, LodOptions};
use crate::rig::{AnimationClip, ChannelTarget, MeshRole, Rig};
use crate::sample::{global_matrices, sample_pose, validate_clip};
use crate::skin::{self, VertexSet};
use crate::stride::measure_stride;
use crate::{BakeError, Result};

/// The largest `--max-texture-dim` accepted: the largest texture dimension the `.vat` reader admits
/// by default ([`vat_core::container::Limits`]), that of current desktop GPUs.
pub const MAX_TEXTURE_DIM: u32 = 16384;

/// The default memory budget of a bake ([`BakeOptions::max_memory`], `--max-memory`): 2 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 2 << 30;

/// Reference poses the LOD simplifier measures collapses in (see [`crate::lods`]).
const LOD_REFERENCE_POSES: usize = 4;

/// What to bake and how.
#[derive(Debug, Clone, PartialEq)]
pub struct BakeOptions {
    /// Samples per second of every clip (`--fps`, default 30). Finite, `> 0`. Ignored when `frames`
    /// is set.
    pub fps: f32,
    /// `--frames N`: `N` samples per clip instead of a rate (`N >= 1`; one-shot clips need
    /// `N >= 2`, their first and last pose). A looping clip of duration `d` is then sampled at
    /// `fps = N / d`, a one-shot clip at `(N - 1) / d`.
    pub frames: Option<u32>,
    /// `--clips a,b`: bake only these clips (by name, in the rig's order); `None` bakes every clip.
    /// Clips not selected are not validated.
    pub clips: Option<Vec<String>>,
    /// `--loop a,b`: these clips loop (stored `round(d * fps)` frames, wrapping to the first).
    ///
    /// Each baked clip loops or plays once by, in order: `--loop` / `--once`; the source's choice
    /// ([`AnimationClip::looping`], glTF `extras.vat_looping`); else its seam: it loops when its
    /// last pose returns to its first within the format's position bound (in the box of those two
    /// poses; with [`root_motion`](Self::root_motion), once the rigid ground-plane motion between
    /// them is taken out), and is one-shot otherwise. A one-key clip is a one-frame pose.
    /// [`BakeStats::clip_looping`] says which and why.
    pub looping: Vec<String>,
    /// `--once c`: these clips play once (stored `round(d * fps) + 1` frames, clamping at the end).
    pub one_shot: Vec<String>,
    /// The LOD chain (`--lods N` or `--lod-ratios ...`; default 5 levels).
    pub lods: LodOptions,
    /// `--bones`: also bake the bone texture and the joints/weights streams.
    pub bones: bool,
    /// `--tangents`: also bake per-frame tangent frames. Body meshes without tangents get
    /// MikkTSpace ones from their texture coordinates (or, without any, tangents perpendicular to
    /// the normals), each said in [`BakeStats::notes`]; see [`crate::tangents`].
    pub tangents: bool,
    /// The vertex texture format (`--format`, default [`VertexFormat::Packed64`]).
    pub format: VertexFormat,
    /// Largest texture width or height in texels (`--max-texture-dim`, default and maximum
    /// [`MAX_TEXTURE_DIM`]).
    pub max_texture_dim: u32,
    /// Names of nodes whose per-frame transforms are captured (`--capture`); sockets' nodes are
    /// always captured. A name matching several nodes means the first.
    pub captures: Vec<String>,
    /// Renumber vertices so texture neighbours are mesh neighbours (default `true`).
    pub optimize_vertex_order: bool,
    /// How normals are quantised (`--precise-normals` selects [`NormalRounding::Precise`]: a third
    /// smaller worst-case angle, about 20 times slower to encode; default nearest rounding, which
    /// already keeps 12 + 12-bit normals within 0.0596 degrees).
    pub normal_rounding: NormalRounding,
    /// The most bytes the bake may allocate for its textures, poses and output (`--max-memory`,
    /// default [`DEFAULT_MAX_MEMORY`]). [`prepare`] estimates the dominant allocations from the
    /// rig and options before allocating any of them ([`estimate_bake_bytes`]) and refuses a bake
    /// over the budget with [`BakeError::OverBudget`].
    pub max_memory: u64,
    /// Largest layer side of the material texture arrays, texels (`--material-texture-size`,
    /// default [`crate::textures::DEFAULT_MATERIAL_TEXTURE_SIZE`]): every image of an array is
    /// resampled to the largest power of two up to this that covers the array's largest image.
    pub material_texture_size: u32,
    /// `--root-motion`: extract each clip's horizontal translation and yaw from the baked vertices
    /// into a root-motion track ([`vat_core::container::Manifest::root_motion`]) and bake its
    /// frames in place (see [`crate::root_motion`]); a looping clip that travels gets its stride
    /// from the track (distance per cycle). Each clip's extraction is said in [`BakeStats::notes`].
    /// Not in a batch ([`prepare_batch`]: the rigs' vertices differ, the shared node matrices
    /// cannot be made in place for all of them).
    pub root_motion: bool,
}

impl Default for BakeOptions {
    fn default() -> Self {
        Self {
            fps: 30.0,
            frames: None,
            clips: None,
            looping: Vec::new(),
            one_shot: Vec::new(),
            lods: LodOptions::default(),
            bones: false,
            tangents: false,
            format: VertexFormat::Packed64,
            max_texture_dim: MAX_TEXTURE_DIM,
            captures: Vec::new(),
            optimize_vertex_order: true,
            normal_rounding: NormalRounding::Nearest,
            max_memory: DEFAULT_MAX_MEMORY,
            material_texture_size: crate::textures::DEFAULT_MATERIAL_TEXTURE_SIZE,
            root_motion: false,
        }
    }
}

/// The bytes the dominant allocations of a bake of `rig` with `options` and `total_frames` frames in
/// all need at once, in `u64` (saturating): the vertex textures (and tangent texture) laid out in the
/// layout [`prepare`] would use, twice (the textures, then the `.vat` bytes read back for
/// verification); the live morph layer when baked; verification's block of fresh frames; a
/// process baseline ([`PROCESS_BASELINE_BYTES`]); the bone
/// texture likewise when baked, with one bone per rig node (an upper bound); the per-frame skinning
/// matrices (64 bytes per node per frame, twice when the global matrices are kept); the vertex set
/// (128 bytes per vertex, and 40 per vertex per morph target); and LOD building (12 bytes per
/// vertex per reference pose and rest position, three copies of the index list); the rig's decoded
/// material images and the texture arrays built from them
/// ([`crate::textures::material_texture_bytes`]). `None` when the texture does not fit `options.max_texture_dim`
/// (the layout's own error says so).
pub fn estimate_bake_bytes(rig: &Rig, options: &BakeOptions, total_frames: u32) -> Option<u64> {
    let vertices = u32::try_from(rig.body_vertex_count()).ok()?.max(1);
    let layout = VertexTextureLayout::new(vertices, total_frames.max(1), options.max_texture_dim).ok()?;
    let mut texel_bytes: u64 =
        options.format.texel_formats().iter().map(|f| u64::from(f.bytes_per_texel())).sum();
    if options.tangents {
        texel_bytes += 8;
    }
    let nodes = rig.nodes.len() as u64;
    let frames = u64::from(total_frames);
    let mut bytes = layout.texel_count().saturating_mul(texel_bytes).saturating_mul(2);
    if options.bones {
        let bone_texels =
            nodes.saturating_mul(u64::from(vat_core::layout::TEXELS_PER_BONE)).saturating_mul(frames);
        bytes = bytes.saturating_add(bone_texels.saturating_mul(16).saturating_mul(2));
    }
    let kept = if options.bones || !options.captures.is_empty() || !rig.sockets.is_empty() { 2 } else { 1 };
    bytes = bytes.saturating_add(nodes.saturating_mul(64).saturating_mul(frames).saturating_mul(kept));
    // The live morph layer (bone mode): an Rgba32Float delta texel per vertex per target per band
    // (position, normal), and the weights track.
    let targets: u64 = rig
        .meshes
        .iter()
        .filter(|m| m.role == crate::rig::MeshRole::Body)
        .map(|m| m.morph_targets.len() as u64)
        .sum();
    if options.bones && targets > 0 {
        let deltas = u64::from(vertices).saturating_mul(targets).saturating_mul(2 * 16);
        bytes = bytes.saturating_add(deltas.saturating_add(targets.saturating_mul(frames).saturating_mul(4)));
    }
    // Morph targets in the vertex set (sparse, at most every vertex: a position, normal and tangent
    // delta and the vertex id), whatever the mode.
    let body = || rig.meshes.iter().filter(|m| m.role == crate::rig::MeshRole::Body);
    let morph_entries: u64 =
        body().map(|m| (m.morph_targets.len() as u64).saturating_mul(m.vertex_count() as u64)).sum();
    bytes = bytes.saturating_add(morph_entries.saturating_mul(40));
    // LOD building: the rest position and up to 8 reference poses per vertex as simplification
    // attributes, and about three copies of LOD 0's indices (its list, the simplifier's input and the
    // levels it makes, which together stay below twice LOD 0).
    let index_bytes: u64 = body().map(|m| m.indices.len() as u64 * 4).sum();
    bytes = bytes
        .saturating_add(
            u64::from(vertices).saturating_mul(12 * (1 + crate::lods::MAX_REFERENCE_POSES as u64)),
        )
        .saturating_add(index_bytes.saturating_mul(3));
    // Verification's working set: a few fresh frames (positions, normals, tangents; twice when
    // influences were reduced) and one decoded frame per thread, and two frames per chunk of a block.
    let reduced = rig.meshes.iter().any(|m| m.full_influences.is_some());
    let block =
        crate::verify::block_bytes_per_vertex(options.tangents, reduced, rayon::current_num_threads())
            .saturating_mul(u64::from(vertices));
    bytes = bytes.saturating_add(block);
    // A streamed body: the frames being read, two per thread (a blend reads two), and the decoded
    // frame each task gathers into.
    if let Some(body) = &rig.streamed_body {
        let threads = rayon::current_num_threads() as u64;
        let per_task = body.frames.frame_bytes().saturating_mul(2).saturating_add(u64::from(vertices) * 24);
        bytes = bytes.saturating_add(per_task.saturating_mul(threads));
    }
    // Material textures: the decoded images the rig holds, and the arrays built from them.
    if let Some(m) = &rig.materials {
        let held: u64 = m.color_images.iter().chain(&m.data_images).map(|i| i.rgba.len() as u64).sum();
        bytes = bytes
            .saturating_add(held)
            .saturating_add(crate::textures::material_texture_bytes(m, options.material_texture_size));
    }
    Some(bytes.saturating_add(u64::from(vertices).saturating_mul(128)).saturating_add(PROCESS_BASELINE_BYTES))
}

/// What a baking process holds besides the bake's own allocations, counted once in
/// [`estimate_bake_bytes`]: code and libraries mapped in, the runtime, the thread pool's stacks and
/// the allocator's slack (measured: about 10 MiB resident for `vat bake` of a small file).
pub const PROCESS_BASELINE_BYTES: u64 = 16 << 20;

/// Refuses a bake whose [`estimate_bake_bytes`] exceeds `options.max_memory`, with the numbers.
fn check_memory_budget(rig: &Rig, options: &BakeOptions, total_frames: u32) -> Result<()> {
    let Some(needed) = estimate_bake_bytes(rig, options, total_frames) else { return Ok(()) };
    if needed > options.max_memory {
        return Err(BakeError::OverBudget {
            what: format!(
                "baking rig \"{}\" ({} vertices x {total_frames} frames, {:?})",
                rig.name,
                rig.body_vertex_count(),
                options.format
            ),
            needed,
            limit: options.max_memory,
            hint: "raise --max-memory, or bake fewer frames (--fps, --frames, --clips) or a smaller format",
        });
    }
    Ok(())
}

/// Seconds one stage of [`prepare`] took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageTiming {
    /// The stage: "plan", "lods", "skin" (sampling every frame's pose and skinning the positions
    /// for the quantisation box), "encode" (skinning every frame again and encoding it into the
    /// textures), "bones", "assemble".
    pub stage: &'static str,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Figures about a bake, for the CLI and benchmarks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BakeStats {
    /// Vertices of the baked vertex set.
    pub vertex_count: u32,
    /// Triangles of each LOD, LOD 0 first.
    pub triangle_counts: Vec<u32>,
    /// Each LOD's estimated deviation from LOD 0, metres.
    pub lod_errors_m: Vec<f32>,
    /// Requested LOD levels (numbered as requested, `>= 1`) that were dropped because they could not
    /// simplify the last kept level below 90 % of its triangles ([`crate::lods`]); each has a line in
    /// `warnings`. The file holds `triangle_counts.len()` levels.
    pub stalled_lods: Vec<u32>,
    /// Clips baked.
    pub clips: u32,
    /// Frames of all clips together.
    pub frames: u32,
    /// Vertex texture width, texels.
    pub texture_width: u32,
    /// Vertex texture height, texels.
    pub texture_height: u32,
    /// Bytes stored per vertex per frame by the vertex format (tangents add 8 more when baked).
    pub bytes_per_vertex_frame: u32,
    /// Bytes of the vertex animation textures (tangents included).
    pub vertex_texture_bytes: u64,
    /// Bytes of the bone texture (0 without `--bones`).
    pub bone_texture_bytes: u64,
    /// Bytes of all distinct blobs.
    pub blob_bytes: u64,
    /// Blobs that were byte-identical to an earlier one and stored once.
    pub deduplicated_blobs: u32,
    /// Things the user should know (e.g. a locomotion clip whose stride could not be measured).
    pub warnings: Vec<String>,
    /// What the bake added that the source did not have (e.g. generated tangents), one line each; a
    /// note that repeats is said once, with a count ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
    /// Whether each baked clip loops, and why (see [`BakeOptions::looping`]).
    pub clip_looping: Vec<ClipLooping>,
    /// Time per stage.
    pub timings: Vec<StageTiming>,
}

/// Progress of a long bake, reported to [`prepare_with_progress`]'s callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The stage running ("skin" reports once per clip).
    pub stage: &'static str,
    /// Work done in that stage (frames for "skin").
    pub done: u64,
    /// Work of the whole stage.
    pub total: u64,
}

/// A finished bake in memory: the manifest and its blobs, ready to be written.
#[derive(Debug, Clone)]
pub struct PreparedBake {
    manifest: Manifest,
    blobs: Vec<Arc<Vec<u8>>>,
    vertex_order: Vec<u32>,
    /// Figures about the bake.
    pub stats: BakeStats,
}

impl PreparedBake {
    /// The manifest (its blob table is filled in only when written).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The bytes of blob `id`, if it exists.
    pub fn blob(&self, id: BlobId) -> Option<&[u8]> {
        self.blobs.get(id.0 as usize).map(|b| b.as_slice())
    }

    /// Number of distinct blobs (ids `0..blob_count()`).
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }

    /// The vertex animation textures (positions first), as stored.
    pub fn vertex_textures(&self) -> Vec<&[u8]> {
        let ids = self.manifest.vertex_animation.as_ref().map(|va| va.textures.as_slice()).unwrap_or(&[]);
        ids.iter().filter_map(|&id| self.blob(id)).collect()
    }

    /// The vertex order of the bake: baked vertex `i` is vertex `vertex_order()[i]` of
    /// [`VertexSet::from_rig`].
    pub fn vertex_order(&self) -> &[u32] {
        &self.vertex_order
    }

    /// The `.vat` file image. Identical bakes give identical bytes.
    ///
    /// # Errors
    /// [`BakeError::Core`] if vat-core's writer refuses the result (e.g. a count above the reader's
    /// limits).
    pub fn to_vat_bytes(&self) -> Result<Vec<u8>> {
        let blobs: Vec<&[u8]> = self.blobs.iter().map(|b| b.as_slice()).collect();
        Ok(container_bytes(self.manifest.clone(), &blobs)?)
    }

    /// Writes the `.vat` file atomically: `path` holds either its old contents or the whole new
    /// file, never a partial one (nothing is written if the file image cannot be built).
    ///
    /// # Errors
    /// As [`PreparedBake::to_vat_bytes`]; [`BakeError::Core`] with the path for an I/O failure.
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_vat_bytes()?;
        Ok(write_file_atomically(path, &bytes)?)
    }

    /// Streams the `.vat` file to a temporary file beside `path` without building it in memory
    /// (the bake's blobs are written as they are), to be read back, checked and then
    /// [`PendingFile::commit`]ted, or dropped (which removes it). The file is not validated here:
    /// parse what is read back with [`vat_core::container::Asset::parse`].
    ///
    /// # Errors
    /// [`BakeError::Core`] with the path for an I/O failure or a file too large to lay out.
    pub fn write_pending(&self, path: &Path) -> Result<PendingFile> {
        let blobs: Vec<&[u8]> = self.blobs.iter().map(|b| b.as_slice()).collect();
        let mut failed = None;
        let pending = PendingFile::create(path, &mut |w| {
            write_container(w, path, self.manifest.clone(), &blobs).map(|_| ()).map_err(|e| {
                let message = e.to_string();
                failed = Some(e);
                std::io::Error::other(message)
            })
        });
        match (pending, failed) {
            (_, Some(e)) => Err(e.into()),
            (p, None) => Ok(p?),
        }
    }
}

/// Blobs collected for one container; byte-identical blobs are stored once.
#[derive(Default)]
struct BlobTable {
    blobs: Vec<Arc<Vec<u8>>>,
    deduplicated: u32,
}

impl BlobTable {
    fn add(&mut self, bytes: Vec<u8>) -> BlobId {
        self.add_shared(Arc::new(bytes))
    }

    fn add_shared(&mut self, bytes: Arc<Vec<u8>>) -> BlobId {
        // Few blobs per asset: a length check then a byte comparison beats hashing megabytes.
        if let Some(i) = self.blobs.iter().position(|b| b.len() == bytes.len() && **b == *bytes) {
            self.deduplicated += 1;
            return BlobId(i as u32);
        }
        self.blobs.push(bytes);
        BlobId((self.blobs.len() - 1) as u32)
    }
}

/// The clips to bake and where their frames are sampled.
#[derive(Debug, Clone)]
struct ClipPlan {
    /// Rig clip index of each baked clip, in texture order.
    sources: Vec<usize>,
    /// Frames of each baked clip.
    row_map: ClipRowMap,
    warnings: Vec<String>,
    looping: Vec<ClipLooping>,
}

impl ClipPlan {
    /// `(rig clip, absolute time)` of every frame, in texture order.
    fn samples(&self, rig: &Rig) -> Vec<(usize, f32)> {
        let mut out = Vec::with_capacity(self.row_map.total_frames() as usize);
        for (clip, &source) in self.row_map.clips().iter().zip(&self.sources) {
            for k in 0..clip.frame_count {
                out.push((source, frame_time(&rig.clips[source], clip, k)));
            }
        }
        out
    }
}

/// The absolute time (seconds) at which frame `k` of baked clip `clip`, taken from `source`, is
/// sampled: `start + k / fps`, computed in f64 and rounded once (so it hits a key exactly when the
/// key rate is a multiple of `fps`); a one-shot clip's frames at or past the duration sample
/// exactly `source.end`.
pub(crate) fn frame_time(source: &AnimationClip, clip: &Clip, k: u32) -> f32 {
    let t = f64::from(k) / f64::from(clip.fps);
    if clip.mode == ClipMode::OneShot && t >= f64::from(source.duration()) {
        return source.end;
    }
    (f64::from(source.start) + t) as f32
}

fn invalid_option(option: &'static str, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidOption { option, problem: problem.into() }
}

fn invalid_input(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Checks the options that do not depend on the rig.
/// Checks the options that do not depend on the rig (rates, counts, sizes, LOD ratios), so a caller
/// can refuse them before reading any input; [`prepare`] checks them again.
///
/// # Errors
/// [`BakeError::InvalidOption`] naming the option: `--fps` not finite and positive, `--frames 0`,
/// `--max-texture-dim` or `--material-texture-size` outside 1 to 16384, an empty `--clips`, LOD
/// counts or ratios out of range.
pub fn validate_options(options: &BakeOptions) -> Result<()> {
    if !(options.fps.is_finite() && options.fps > 0.0) {
        return Err(invalid_option("--fps", format!("{}; expected a finite number > 0", options.fps)));
    }
    if options.frames == Some(0) {
        return Err(invalid_option("--frames", "0; expected at least 1 sample per clip"));
    }
    if !(1..=MAX_TEXTURE_DIM).contains(&options.max_texture_dim) {
        return Err(invalid_option(
            "--max-texture-dim",
            format!("{}; expected 1 to {MAX_TEXTURE_DIM}", options.max_texture_dim),
        ));
    }
    if !(1..=MAX_TEXTURE_DIM).contains(&options.material_texture_size) {
        return Err(invalid_option(
            "--material-texture-size",
            format!("{}; expected 1 to {MAX_TEXTURE_DIM} texels", options.material_texture_size),
        ));
    }
    if options.clips.as_ref().is_some_and(Vec::is_empty) {
        return Err(invalid_option("--clips", "an empty list; name at least one clip"));
    }
    options.lods.ratios()?;
    Ok(())
}

/// The name of the one clip a rig without animation bakes as: its rest pose, one frame.
pub const STATIC_CLIP: &str = "static";

/// `rig` itself when it has clips; else a copy with one clip [`STATIC_CLIP`] (no channels, zero
/// length: the rest pose), so a prop or a statue bakes as a one-frame asset and verifies against
/// the same clip.
pub fn with_static_clip(rig: &Rig) -> std::borrow::Cow<'_, Rig> {
    if !rig.clips.is_empty() {
        return std::borrow::Cow::Borrowed(rig);
    }
    let mut owned = rig.clone();
    owned.clips.push(AnimationClip {
        name: STATIC_CLIP.to_owned(),
        channels: Vec::new(),
        start: 0.0,
        end: 0.0,
        looping: Some(true),
        known_stride: None,
        locomotion: false,
    });
    std::borrow::Cow::Owned(owned)
}

/// Why a baked clip loops or plays once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum LoopDecision {
    /// `--loop` / `--once` named it.
    Option,
    /// The source said (glTF `extras.vat_looping`, the procedural rig).
    Source,
    /// Decided from the clip: its last pose returns to its first within the format's quantum
    /// (looping) or does not (one-shot). `seam_mm` is the largest per-axis distance between the two
    /// poses, `quantum_mm` the bound it was compared with.
    Seam {
        /// Largest per-axis distance between the first and last pose, mm.
        seam_mm: f64,
        /// The format's position bound in the box of the two poses, mm.
        quantum_mm: f64,
    },
    /// A one-key clip: one frame, a pose.
    Pose,
}

/// Looping or one-shot, and why, for each baked clip ([`BakeStats::clip_looping`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClipLooping {
    /// Clip name.
    pub clip: String,
    /// Whether it loops.
    pub looping: bool,
    /// Why.
    pub decision: LoopDecision,
}

/// Largest per-axis distance (metres) between the skinned first and last pose of `clip`, and the
/// position bound of `format` in the box of those two poses (metres, largest axis). With
/// `root_motion`, the last pose is first moved back by the rigid ground-plane motion between the
/// two ([`crate::root_motion::fit_root_pose`]): the seam of the clip baked in place.
fn clip_seam(
    rig: &Rig,
    set: &VertexSet,
    clip: usize,
    format: VertexFormat,
    root_motion: bool,
) -> Result<(f64, f64)> {
    let c = &rig.clips[clip];
    let mut frames = skin::skin_clip_frames(rig, set, &[(clip, c.start), (clip, c.end)], false)?;
    if root_motion {
        let arrays = |ps: &[Vec3]| ps.iter().map(|p| p.to_array()).collect::<Vec<_>>();
        if let Some(t) =
            crate::root_motion::fit_root_pose(&arrays(&frames[0].positions), &arrays(&frames[1].positions))
        {
            let back = t.inverse();
            for p in &mut frames[1].positions {
                *p = Vec3::from_array(back.apply_point(p.to_array()));
            }
        }
    }
    let (first, last) = (&frames[0].positions, &frames[1].positions);
    let seam = first.iter().zip(last).map(|(a, b)| (*a - *b).abs().max_element()).fold(0.0f32, f32::max);
    let bounds = PositionBounds::from_points(first.iter().chain(last).map(|p| p.to_array()))?;
    let bits = if format == VertexFormat::Packed64 {
        encoding::allocate_position_bits(bounds.extent)
    } else {
        [0; 3]
    };
    let quantum = encoding::position_error_bound(format, bits, &bounds).into_iter().fold(0.0f32, f32::max);
    Ok((f64::from(seam), f64::from(quantum)))
}

/// Chooses, validates and lays out the clips to bake, with their strides. Clips not selected by
/// `--clips` are never looked at, so a broken clip elsewhere in the file does not stop the bake.
fn plan_clips(rig: &Rig, options: &BakeOptions) -> Result<ClipPlan> {
    if rig.clips.is_empty() {
        return Err(invalid_input(format!("rig \"{}\"", rig.name), "no animation to bake: it has no clips"));
    }
    let known = |option: &'static str, names: &[String]| -> Result<()> {
        match names.iter().find(|n| !rig.clips.iter().any(|c| &c.name == *n)) {
            None => Ok(()),
            Some(unknown) => {
                let available: Vec<&str> = rig.clips.iter().map(|c| c.name.as_str()).collect();
                Err(invalid_option(
                    option,
                    format!(
                        "rig \"{}\" has no clip named \"{unknown}\"; it has: {}",
                        rig.name,
                        available.join(", ")
                    ),
                ))
            }
        }
    };
    known("--loop", &options.looping)?;
    known("--once", &options.one_shot)?;
    if let Some(both) = options.looping.iter().find(|n| options.one_shot.contains(n)) {
        return Err(invalid_option("--once", format!("clip \"{both}\" is also named by --loop; choose one")));
    }
    let sources: Vec<usize> = match &options.clips {
        None => (0..rig.clips.len()).collect(),
        Some(names) => {
            known("--clips", names)?;
            (0..rig.clips.len()).filter(|&i| names.iter().any(|n| *n == rig.clips[i].name)).collect()
        }
    };
    let mut row_map = ClipRowMap::new();
    let mut warnings = Vec::new();
    let mut looping_report = Vec::new();
    // Built only if a clip's looping has to be decided from its poses.
    let mut seam_set: Option<VertexSet> = None;
    for &ci in &sources {
        validate_clip(rig, ci)?;
        let clip = &rig.clips[ci];
        let part = || format!("rig \"{}\" clip \"{}\"", rig.name, clip.name);
        let duration = clip.duration();
        if !duration.is_finite() {
            return Err(invalid_input(part(), format!("duration {duration} s is not finite")));
        }
        let named = |list: &[String]| list.contains(&clip.name);
        let (looping, decision) = if duration == 0.0 {
            (!named(&options.one_shot), LoopDecision::Pose)
        } else if named(&options.looping) {
            (true, LoopDecision::Option)
        } else if named(&options.one_shot) {
            (false, LoopDecision::Option)
        } else if let Some(l) = clip.looping {
            (l, LoopDecision::Source)
        } else {
            if seam_set.is_none() {
                seam_set = Some(VertexSet::from_rig(rig)?);
            }
            let set = seam_set.as_ref().ok_or_else(|| invalid_input(part(), "no vertex set"))?;
            let (seam, quantum) = clip_seam(rig, set, ci, options.format, options.root_motion)?;
            (seam <= quantum, LoopDecision::Seam { seam_mm: seam * 1e3, quantum_mm: quantum * 1e3 })
        };
        looping_report.push(ClipLooping { clip: clip.name.clone(), looping, decision });
        let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
        let fps = match options.frames {
            None => options.fps,
            // A pose is one frame whatever the rate.
            Some(_) if duration == 0.0 => options.fps,
            Some(n) => {
                let intervals = match mode {
                    ClipMode::Looping => n,
                    ClipMode::OneShot if n >= 2 => n - 1,
                    ClipMode::OneShot => {
                        return Err(invalid_option(
                            "--frames",
                            format!(
                                "1 cannot sample one-shot clip \"{}\": it needs its first and last pose",
                                clip.name
                            ),
                        ));
                    }
                };
                (f64::from(intervals) / f64::from(duration)) as f32
            }
        };
        if !(fps.is_finite() && fps > 0.0) {
            return Err(invalid_option(
                "--frames",
                format!("gives {fps} samples per second for clip \"{}\"", clip.name),
            ));
        }
        let stride = if clip.locomotion && duration > 0.0 {
            match clip.known_stride {
                Some(s) if s.is_finite() && s >= 0.0 => s,
                Some(s) => {
                    return Err(invalid_input(part(), format!("known stride {s} is not finite and >= 0")));
                }
                None => {
                    let resolved = AnimationClip { looping: Some(looping), ..clip.clone() };
                    match measure_stride(rig, &resolved)? {
                        Ok(s) => s.stride,
                        Err(why) => {
                            warnings.push(format!(
                                "clip \"{}\": no stride: {why}; baked with stride 0",
                                clip.name
                            ));
                            0.0
                        }
                    }
                }
            }
        } else {
            0.0
        };
        // Frame limits, named by the option that sets the rate (never a u32 overflow).
        let max_frames = vat_core::container::Limits::default().max_frames;
        let stored = (f64::from(duration) * f64::from(fps)).round() + if looping { 0.0 } else { 1.0 };
        let total = f64::from(row_map.total_frames()) + stored.max(1.0);
        if total > f64::from(max_frames) {
            let (option, rate) = match options.frames {
                Some(n) => ("--frames", format!("{n} frames per clip")),
                None => ("--fps", format!("{fps} fps")),
            };
            return Err(invalid_option(
                option,
                format!(
                    "clip \"{}\" lasts {duration} s: at {rate} the clips would store {total} frames, and a .vat \
                     file holds at most {max_frames}; bake at a lower --fps or --frames, or fewer clips with --clips",
                    clip.name
                ),
            ));
        }
        row_map.push(clip.name.clone(), duration, fps, mode, stride)?;
    }
    Ok(ClipPlan { sources, row_map, warnings, looping: looping_report })
}

/// The baked vertex set of `rig` in its baked order, and that order (`order[new] = old`): what
/// [`prepare`] encodes and [`crate::verify`] compares against. `optimize` selects the locality order
/// (else the identity).
///
/// # Errors
/// As [`VertexSet::from_rig`].
pub(crate) fn baked_vertex_set(rig: &Rig, optimize: bool) -> Result<(VertexSet, Vec<u32>)> {
    let mut set = VertexSet::from_rig(rig)?;
    let n = set.vertex_count();
    let order = if optimize { lods::locality_order(&set.indices, n) } else { (0..n as u32).collect() };
    set.remap(&order)?;
    Ok((set, order))
}

/// Bakes `rig` with `options` in memory (no I/O). See the module docs for the steps.
///
/// # Errors
/// - [`BakeError::InvalidOption`] for an option out of range (fps, frames, LODs, texture size), an
///   unknown clip or capture name, or `--tangents` on a mesh without tangents;
/// - [`BakeError::InvalidInput`] for a rig with no clips ("no animation to bake"), a zero-length or
///   malformed clip, bad mesh data (from [`VertexSet::from_rig`]), a socket on a missing node or with
///   a non-finite transform, duplicate socket names, a malformed attachment;
/// - [`BakeError::Core`] when the frames do not fit a texture of `max_texture_dim` or a skinned
///   position is not finite.
pub fn prepare(rig: &Rig, options: &BakeOptions) -> Result<PreparedBake> {
    prepare_with_progress(rig, options, &mut |_| {})
}

/// [`prepare`], reporting progress (once per stage, and once per clip while skinning).
///
/// # Errors
/// As [`prepare`].
pub fn prepare_with_progress(
    rig: &Rig,
    options: &BakeOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<PreparedBake> {
    let start = Instant::now();
    validate_options(options)?;
    let rig = with_static_clip(rig);
    let rig = rig.as_ref();
    let plan = plan_clips(rig, options)?;
    let plan_time = start.elapsed().as_secs_f64();
    let mut bake = prepare_planned(rig, options, &plan, None, progress)?;
    bake.stats.timings.insert(0, StageTiming { stage: "plan", seconds: plan_time });
    Ok(bake)
}

/// Bakes several meshes that share one skeleton and clip set (e.g. body variants), sampling the
/// skeleton once: the clip plan, strides and per-frame node transforms are computed from the first
/// rig and reused, and a bone texture identical to an earlier rig's is shared, not rebuilt.
///
/// # Errors
/// [`BakeError::InvalidInput`] when `rigs` is empty or a rig's skeleton (node names, parents, rest
/// transforms, feet) or clips (names, spans, looping, locomotion, strides and node channels)
/// differ from the first rig's; otherwise as [`prepare`].
pub fn prepare_batch(rigs: &[Rig], options: &BakeOptions) -> Result<Vec<PreparedBake>> {
    let Some(first) = rigs.first() else {
        return Err(invalid_input("batch bake", "no rigs to bake"));
    };
    validate_options(options)?;
    if options.root_motion {
        return Err(invalid_option(
            "--root-motion",
            "a batch bake shares one set of node matrices between rigs; bake each rig with root motion on its own",
        ));
    }
    for rig in &rigs[1..] {
        check_same_skeleton_and_clips(first, rig)?;
    }
    let plan = plan_clips(first, options)?;
    // Node channels are equal across the batch, but morph channels may differ: check every rig's.
    for rig in &rigs[1..] {
        for &ci in &plan.sources {
            validate_clip(rig, ci)?;
        }
    }
    let samples = plan.samples(first);
    let globals = Arc::new(sample_globals(first, &samples));
    let mut shared = SharedSampling { globals, bone_textures: Vec::new() };
    rigs.iter().map(|rig| prepare_planned(rig, options, &plan, Some(&mut shared), &mut |_| {})).collect()
}

/// `(node, inverse bind)` of each bone of a skeleton.
type BoneList = Vec<(usize, Mat4)>;

/// What a batch computes once for all its rigs.
struct SharedSampling {
    /// Global node matrices per frame.
    globals: Arc<Vec<Vec<Mat4>>>,
    /// Bone textures built so far, keyed by their bone list.
    bone_textures: Vec<(BoneList, Arc<Vec<u8>>)>,
}

fn check_same_skeleton_and_clips(a: &Rig, b: &Rig) -> Result<()> {
    let part = || format!("batch: rig \"{}\" against rig \"{}\"", b.name, a.name);
    if a.nodes.len() != b.nodes.len() {
        return Err(invalid_input(part(), format!("{} nodes against {}", b.nodes.len(), a.nodes.len())));
    }
    for (i, (x, y)) in a.nodes.iter().zip(&b.nodes).enumerate() {
        if x != y {
            return Err(invalid_input(
                part(),
                format!("node {i} (\"{}\") differs in name, parent or rest", y.name),
            ));
        }
    }
    if a.feet != b.feet {
        return Err(invalid_input(part(), "the feet differ"));
    }
    if a.clips.len() != b.clips.len() {
        return Err(invalid_input(part(), format!("{} clips against {}", b.clips.len(), a.clips.len())));
    }
    let node_channels = |c: &AnimationClip| -> Vec<crate::rig::Channel> {
        c.channels.iter().filter(|ch| !matches!(ch.target, ChannelTarget::MorphWeights(_))).cloned().collect()
    };
    for (x, y) in a.clips.iter().zip(&b.clips) {
        let same = x.name == y.name
            && x.start == y.start
            && x.end == y.end
            && x.looping == y.looping
            && x.locomotion == y.locomotion
            && x.known_stride == y.known_stride
            && node_channels(x) == node_channels(y);
        if !same {
            return Err(invalid_input(part(), format!("clip \"{}\" differs", y.name)));
        }
    }
    Ok(())
}

/// Global node matrices at every sample (sequential: a few hundred poses of a few dozen nodes).
fn sample_globals(rig: &Rig, samples: &[(usize, f32)]) -> Vec<Vec<Mat4>> {
    samples.iter().map(|&(c, t)| global_matrices(rig, &sample_pose(rig, &rig.clips[c], t))).collect()
}

fn timed<T>(timings: &mut Vec<StageTiming>, stage: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let out = f()?;
    timings.push(StageTiming { stage, seconds: start.elapsed().as_secs_f64() });
    Ok(out)
}

/// The vertex animation section: every frame of `samples` skinned again from its `poses` (or read
/// again from a streamed sequence), encoded in `options.format` in the box `bounds` into textures
/// of `layout`, added to `blobs`; and the textures' size in bytes.
///
/// Errors: an encoding error ([`vat_core::Error`]) or a streamed frame that cannot be read.
#[allow(clippy::too_many_arguments)]
fn encode_vertex_animation(
    rig: &Rig,
    set: &VertexSet,
    skin_plan: &skin::SkinPlan,
    samples: &[(usize, f32)],
    poses: &[skin::FramePose],
    bounds: PositionBounds,
    layout: VertexTextureLayout,
    options: &BakeOptions,
    blobs: &mut BlobTable,
) -> Result<(VertexAnimation, u64)> {
    let format = options.format;
    let n = set.vertex_count();
    let bits = if format == VertexFormat::Packed64 {
        encoding::allocate_position_bits(bounds.extent)
    } else {
        [0; 3]
    };
    let (textures, tangents) = if let Some(body) = &rig.streamed_body {
        // A frame per block, read again from the source.
        let fill = |texels: std::ops::Range<usize>,
                    p: &mut [[f32; 3]],
                    nrm: &mut [[f32; 3]],
                    _: Option<&mut [[f32; 4]]>| {
            match samples.get(texels.start / n) {
                Some(&(clip, time)) => skin::streamed_frame_into(rig, body, set, clip, time, p, nrm),
                None => Ok(()),
            }
        };
        encode_by_block(&layout, format, &bounds, bits, options.normal_rounding, false, n, fill)?
    } else if format == VertexFormat::Packed64
        && options.normal_rounding == NormalRounding::Nearest
        && !options.tangents
    {
        // The default: each frame's texels straight from the skinning kernel's lanes.
        let encoder = encoding::Packed64Encoder::new(&bounds, bits)?;
        let mut texture = vec![0u8; layout.byte_len(8) as usize];
        texture[..samples.len() * n * 8]
            .par_chunks_mut(n * 8)
            .zip(poses.par_iter())
            .for_each(|(texels, pose)| skin::skin_frame_packed64(set, skin_plan, pose, &encoder, texels));
        (vec![texture], None)
    } else {
        let fill = |texels: std::ops::Range<usize>,
                    p: &mut [[f32; 3]],
                    nrm: &mut [[f32; 3]],
                    t: Option<&mut [[f32; 4]]>| {
            // Blocks are whole frames.
            if let Some(pose) = poses.get(texels.start / n) {
                skin::skin_frame_into(set, skin_plan, pose, p, nrm, t);
            }
            Ok(())
        };
        encode_by_block(&layout, format, &bounds, bits, options.normal_rounding, options.tangents, n, fill)?
    };
    let bytes: u64 = textures.iter().chain(&tangents).map(|t| t.len() as u64).sum();
    let texture_ids = textures.into_iter().map(|t| blobs.add(t)).collect();
    let tangent_id = tangents.map(|t| blobs.add(t));
    let va = VertexAnimation {
        layout,
        format,
        bounds,
        position_bits: bits,
        textures: texture_ids,
        tangents: tangent_id,
    };
    Ok((va, bytes))
}

/// The bone animation section (bone mode: the skinning matrix of every bone at every frame, from
/// `globals`, shared with the batch's other rigs of the same bone list; joints and weights per
/// vertex) and the capture tracks of `capture_nodes`, their blobs added to `blobs`; and the bone
/// texture's size in bytes.
///
/// Errors: a bone texture that does not fit `options.max_texture_dim`.
#[allow(clippy::too_many_arguments)]
fn bone_sections(
    set: &VertexSet,
    skeleton: &Skeleton,
    globals: Option<Arc<Vec<Vec<Mat4>>>>,
    capture_nodes: &[usize],
    total_frames: u32,
    options: &BakeOptions,
    mut shared: Option<&mut SharedSampling>,
    blobs: &mut BlobTable,
) -> Result<(Option<BoneAnimation>, u64, Vec<CaptureTrack>)> {
    let n = set.vertex_count();
    let mut bone_animation = None;
    let mut bone_bytes = 0u64;
    if let (true, Some(globals)) = (options.bones, &globals) {
        let bone_count = skeleton.bones.len() as u32;
        let layout = BoneTextureLayout::new(bone_count, total_frames, options.max_texture_dim)?;
        let reused = shared.as_ref().and_then(|s| {
            s.bone_textures.iter().find(|(k, _)| *k == skeleton.bones).map(|(_, t)| Arc::clone(t))
        });
        let texture = match reused {
            Some(t) => t,
            None => {
                let len = layout.byte_len(16) as usize;
                let mut out = Vec::with_capacity(len);
                for frame in globals.iter() {
                    for &(node, inverse_bind) in &skeleton.bones {
                        let m = frame.get(node).copied().unwrap_or(Mat4::IDENTITY) * inverse_bind;
                        let c = m.to_cols_array();
                        // Row r of the affine: (m[0][r], m[1][r], m[2][r], m[3][r]).
                        for r in 0..3 {
                            for col in 0..4 {
                                out.extend_from_slice(&c[col * 4 + r].to_le_bytes());
                            }
                        }
                    }
                }
                out.resize(len, 0);
                let t = Arc::new(out);
                if let Some(s) = shared.as_mut() {
                    s.bone_textures.push((skeleton.bones.clone(), Arc::clone(&t)));
                }
                t
            }
        };
        bone_bytes = texture.len() as u64;
        let influences = if set.influence_count <= 4 { 4 } else { 8 };
        let mut joints = Vec::with_capacity(n * influences * 2);
        let mut weights = Vec::with_capacity(n * influences * 4);
        for (j, w) in set.joints.iter().zip(&set.weights) {
            for s in 0..influences {
                let bone = skeleton.from_set.get(usize::from(j[s])).copied().unwrap_or(0);
                joints.extend_from_slice(&bone.to_le_bytes());
                weights.extend_from_slice(&w[s].to_le_bytes());
            }
        }
        bone_animation = Some(BoneAnimation {
            layout,
            texture: blobs.add_shared(texture),
            influences: influences as u32,
            joints: blobs.add(joints),
            weights: blobs.add(weights),
        });
    }
    let mut captures = Vec::new();
    if let Some(globals) = &globals {
        for &node in capture_nodes {
            let bone = skeleton.of_node[node].unwrap_or(0);
            let bytes = f32_bytes(globals.iter().flat_map(|frame| affine_3x4(&frame[node])));
            captures.push(CaptureTrack { bone, blob: blobs.add(bytes) });
        }
    }
    Ok((bone_animation, bone_bytes, captures))
}

/// The index bytes of every LOD (one list after the other, little-endian u32) and their entries,
/// with switch distances from each LOD's error and the asset's `size` (its box's largest extent),
/// in the asset's units, strictly increasing ([`vat_core::lod::lod_switch_distances`]).
fn lod_sections(chain: &lods::LodChain, lod_lists: &[Vec<u32>], size: f32) -> (Vec<u8>, Vec<Lod>) {
    let mut index_bytes = Vec::with_capacity(lod_lists.iter().map(Vec::len).sum::<usize>() * 4);
    let mut lod_entries = Vec::with_capacity(lod_lists.len());
    let errors: Vec<f32> = chain.levels.iter().map(|l| l.error).collect();
    let distances = vat_core::lod::lod_switch_distances(&errors, size);
    for ((list, level), &max_distance) in lod_lists.iter().zip(&chain.levels).zip(&distances) {
        let first_index = (index_bytes.len() / 4) as u32;
        for &v in list {
            index_bytes.extend_from_slice(&v.to_le_bytes());
        }
        lod_entries.push(Lod {
            first_index,
            index_count: list.len() as u32,
            triangle_count: (list.len() / 3) as u32,
            screen_error: level.error,
            max_distance,
        });
    }
    (index_bytes, lod_entries)
}

/// The per-vertex streams of the body (rest position, normal and tangent, UVs, colours, material
/// ids), their blobs added to `blobs` in that order.
fn vertex_streams(set: &VertexSet, blobs: &mut BlobTable) -> Vec<VertexStream> {
    let mut streams = vec![
        VertexStream {
            kind: StreamKind::RestPosition,
            element: ElementFormat::F32x3,
            blob: blobs.add(vec3_bytes(&set.positions)),
        },
        VertexStream {
            kind: StreamKind::RestNormal,
            element: ElementFormat::F32x3,
            blob: blobs.add(vec3_bytes(&set.normals)),
        },
    ];
    if let Some(t) = &set.tangents {
        let bytes = f32_bytes(t.iter().flat_map(|v: &Vec4| v.to_array()));
        streams.push(VertexStream {
            kind: StreamKind::RestTangent,
            element: ElementFormat::F32x4,
            blob: blobs.add(bytes),
        });
    }
    streams.extend(surface_streams(
        set.uvs.as_ref().map(|uv| uv.iter().map(|v| v.to_array())),
        set.colors.as_ref().map(|c| c.iter().map(|v| v.to_array())),
        |bytes| blobs.add(bytes),
    ));
    streams.push(VertexStream {
        kind: StreamKind::MaterialId,
        element: ElementFormat::U8,
        blob: blobs.add(set.material_ids.clone()),
    });
    streams
}

/// The attachment meshes (`(mesh index, name)`) as manifest entries, their blobs added to `blobs`
/// (positions, normals, material ids, indices of each in turn).
fn attachment_sections(
    rig: &Rig,
    attachment_meshes: &[(usize, String)],
    blobs: &mut BlobTable,
) -> Vec<Attachment> {
    attachment_meshes
        .iter()
        .map(|(mi, name)| {
            let m = &rig.meshes[*mi];
            let socket = match m.role {
                MeshRole::Attachment { socket } => socket as u32,
                MeshRole::Body => 0,
            };
            Attachment {
                name: name.clone(),
                socket,
                vertex_count: m.vertex_count() as u32,
                positions: blobs.add(vec3_bytes(&m.positions)),
                normals: blobs.add(vec3_bytes(&m.normals)),
                material_ids: blobs.add(m.material_ids.clone()),
                indices: blobs.add(m.indices.iter().flat_map(|i| i.to_le_bytes()).collect()),
            }
        })
        .collect()
}

/// Refuses the options that do not apply to a streamed mesh sequence (no skeleton, tangent frames
/// or nodes).
///
/// Errors: [`BakeError::InvalidOption`] naming the first such option given.
fn refuse_sequence_options(rig: &Rig, options: &BakeOptions) -> Result<()> {
    if rig.streamed_body.is_some() {
        // A streamed mesh sequence is positions and normals per frame: nothing to skin, no nodes.
        let refused = [
            ("--bones", options.bones),
            ("--tangents", options.tangents),
            ("--root-motion", options.root_motion),
            ("--capture", !options.captures.is_empty()),
        ];
        if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
            return Err(invalid_option(
                flag,
                format!(
                    "does not apply to mesh sequence \"{}\" (a soft-body sequence stores positions and normals per \
                 frame: no skeleton, tangent frames or nodes)",
                    rig.name
                ),
            ));
        }
    }
    Ok(())
}

/// The rig's sockets as manifest entries, each on its node's bone of `skeleton`.
fn manifest_sockets(rig: &Rig, skeleton: &Skeleton) -> Vec<ManifestSocket> {
    rig.sockets
        .iter()
        .map(|s| ManifestSocket {
            name: s.name.clone(),
            bone: skeleton.of_node[s.node].unwrap_or(0),
            local: affine_3x4(&s.local),
        })
        .collect()
}

/// Stores the root motion `tracks` in `manifest`, with a note per clip: a looping clip that travels
/// (more than 1 % of the body's width per cycle) strides by its track; one in place keeps its
/// measured stride.
fn set_root_motion(
    manifest: &mut Manifest,
    tracks: Vec<vat_core::root_motion::RootMotionTrack>,
    notes: &mut Vec<String>,
) {
    let width = vertex_animation_width(manifest);
    for track in &tracks {
        if let Some(clip) = manifest.clips.get_mut(track.clip as usize) {
            let travels = clip.mode == ClipMode::Looping && track.cycle.distance() > 0.01 * width;
            if travels {
                clip.stride = track.cycle.distance();
            }
            notes.push(crate::root_motion::note(clip, track, travels));
        }
    }
    manifest.root_motion = tracks;
}

/// The figures of a bake: `texture_bytes` are the vertex and bone textures' sizes.
fn bake_stats(
    manifest: &Manifest,
    chain: &lods::LodChain,
    plan: &ClipPlan,
    blobs: &BlobTable,
    texture_bytes: [u64; 2],
    timings: Vec<StageTiming>,
    notes: Vec<String>,
) -> BakeStats {
    let [vertex_texture_bytes, bone_texture_bytes] = texture_bytes;
    let va = manifest.vertex_animation.as_ref();
    BakeStats {
        vertex_count: manifest.vertex_count,
        triangle_counts: chain.levels.iter().map(|l| l.triangle_count() as u32).collect(),
        lod_errors_m: chain.levels.iter().map(|l| l.error).collect(),
        stalled_lods: chain.dropped.iter().map(|d| d.requested as u32).collect(),
        clips: plan.row_map.len() as u32,
        frames: plan.row_map.total_frames(),
        texture_width: va.map_or(0, |v| v.layout.width),
        texture_height: va.map_or(0, |v| v.layout.height),
        bytes_per_vertex_frame: va.map_or(0, |v| v.format.bytes_per_vertex_frame()),
        vertex_texture_bytes,
        bone_texture_bytes,
        blob_bytes: blobs.blobs.iter().map(|b| b.len() as u64).sum(),
        deduplicated_blobs: blobs.deduplicated,
        warnings: plan
            .warnings
            .iter()
            .cloned()
            .chain(chain.dropped.iter().map(ToString::to_string))
            .collect(),
        clip_looping: plan.looping.clone(),
        timings,
        notes: crate::notes::collapse(notes),
    }
}

/// A bake's LOD chain, its index lists in the final vertex order, and that order ([`build_lods`]).
type LodBuild = (lods::LodChain, Vec<Vec<u32>>, Vec<u32>);

/// A stage's result with its figure.
type Timed<T> = Result<(T, StageTiming)>;

/// [`build_lods`] on `set`, and beside it, when it can run there, `sampling` of every frame on a
/// copy of `set` before the reorder: the box does not depend on the vertex order (each vertex
/// skins alike in any order; min and max are exact). Root motion is fitted to frames in the final
/// vertex order (its sums depend on the order), and a streamed sequence's frames are read after:
/// those are not sampled here (`None`), nor is progress reported.
fn lods_beside_frames(
    rig: &Rig,
    set: &mut VertexSet,
    options: &BakeOptions,
    samples: &[(usize, f32)],
    sampling: &FrameSampling<'_>,
) -> (Timed<LodBuild>, Option<Timed<SampledFrames>>) {
    if options.root_motion || rig.streamed_body.is_some() {
        return (timed_result("lods", || build_lods(rig, set, options, samples)), None);
    }
    let unordered = set.clone();
    let (lods, frames) = rayon::join(
        || timed_result("lods", || build_lods(rig, set, options, samples)),
        || timed_result("skin", || sampling.run(&unordered, &skin::SkinPlan::new(&unordered), &mut |_| {})),
    );
    (lods, Some(frames))
}

/// `rig`, with tangents generated for its body meshes without TANGENT when `tangents` asks for
/// them (`--tangents`: MikkTSpace, or without UVs a perpendicular basis), and a note per such
/// mesh. Deterministic: verification generates the same tangents to check a bake against.
pub(crate) fn with_generated_tangents(rig: &Rig, tangents: bool) -> (std::borrow::Cow<'_, Rig>, Vec<String>) {
    let missing = rig.meshes.iter().any(|m| m.role == MeshRole::Body && m.tangents.is_none());
    if !(tangents && missing) {
        return (std::borrow::Cow::Borrowed(rig), Vec::new());
    }
    let mut owned = rig.clone();
    let notes = crate::tangents::generate_missing(&mut owned).iter().map(ToString::to_string).collect();
    (std::borrow::Cow::Owned(owned), notes)
}

/// Refuses `--tangents` when the body's vertex `set` has none (after [`with_generated_tangents`]).
fn refuse_missing_tangents(rig: &Rig, set: &VertexSet, options: &BakeOptions) -> Result<()> {
    if options.tangents && set.tangents.is_none() {
        return Err(invalid_option(
            "--tangents",
            format!("rig \"{}\" has no tangents on its body meshes", rig.name),
        ));
    }
    Ok(())
}

/// [`timed`] for a stage that may run beside another: its figure is returned, not pushed.
fn timed_result<T>(stage: &'static str, f: impl FnOnce() -> Result<T>) -> Timed<T> {
    let start = Instant::now();
    let out = f()?;
    Ok((out, StageTiming { stage, seconds: start.elapsed().as_secs_f64() }))
}

/// The LOD chain of `set` on its original topology (simplified with the rest pose and a few
/// reference poses of `samples`), then `set` put in the locality order (unless
/// [`BakeOptions::optimize_vertex_order`] is off): the chain, its index lists in the new order and
/// the order (new index -> original index).
fn build_lods(
    rig: &Rig,
    set: &mut VertexSet,
    options: &BakeOptions,
    samples: &[(usize, f32)],
) -> Result<(lods::LodChain, Vec<Vec<u32>>, Vec<u32>)> {
    let n = set.vertex_count();
    let references = LOD_REFERENCE_POSES.min(samples.len());
    let picked: Vec<(usize, f32)> =
        (0..references).map(|j| samples[(2 * j + 1) * samples.len() / (2 * references)]).collect();
    let poses = skin::skin_clip_frames(rig, set, &picked, false)?;
    let pose_refs: Vec<&[Vec3]> = poses.iter().map(|f| f.positions.as_slice()).collect();
    let surface = lods::LodSurface {
        normals: Some(&set.normals),
        uvs: set.uvs.as_deref(),
        colors: set.colors.as_deref(),
        groups: None,
    };
    let chain =
        lods::build_lod_chain_surface(&set.positions, &set.indices, &pose_refs, &surface, &options.lods)?;
    let mut lists = chain.index_lists();
    let order = if options.optimize_vertex_order {
        lods::reorder_for_locality(set, &mut lists)?
    } else {
        (0..n as u32).collect()
    };
    Ok((chain, lists, order))
}

/// What sampling every frame gives the encoder: each frame's skinning matrices and morph weights
/// (empty for a streamed sequence, whose frames are read again), the quantisation box, the root
/// motion tracks, and the global node matrices when kept.
struct SampledFrames {
    poses: Vec<skin::FramePose>,
    bounds: PositionBounds,
    root_tracks: Vec<vat_core::root_motion::RootMotionTrack>,
    globals: Option<Vec<Vec<Mat4>>>,
}

/// Sampling every frame of a bake: see [`FrameSampling::run`].
struct FrameSampling<'a> {
    rig: &'a Rig,
    plan: &'a ClipPlan,
    /// `(rig clip, absolute time)` of every frame, in texture order.
    samples: &'a [(usize, f32)],
    /// Fit and remove each clip's root motion ([`BakeOptions::root_motion`]).
    root_motion: bool,
    /// Keep every frame's global node matrices (bone texture, capture tracks).
    keep_globals: bool,
}

impl FrameSampling<'_> {
    /// Samples every frame of the plan on `set` (skinned with `skin_plan`, made from it): the poses,
    /// root motion fitted and removed (in place), and the box of every skinned position (nothing
    /// stored per vertex), one clip at a time for progress.
    ///
    /// Errors: a non-finite skinned position, a root motion fit that fails, a streamed frame that
    /// cannot be read.
    fn run(
        &self,
        set: &VertexSet,
        skin_plan: &skin::SkinPlan,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<SampledFrames> {
        let (rig, plan, samples) = (self.rig, self.plan, self.samples);
        let total_frames = plan.row_map.total_frames();
        let clip_done = |progress: &mut dyn FnMut(Progress), clip: &Clip| {
            progress(Progress {
                stage: "skin",
                done: u64::from(clip.end_frame()),
                total: u64::from(total_frames),
            })
        };
        let mut frame_bounds = Vec::with_capacity(samples.len());
        if let Some(body) = &rig.streamed_body {
            // Frames read from the source one per task (nothing kept): the box only.
            for clip in plan.row_map.clips() {
                let frames = clip.first_frame as usize..clip.end_frame() as usize;
                frame_bounds.par_extend(samples[frames].par_iter().map(|&(c, t)| {
                    skin::streamed_frame(rig, body, set, c, t, false)
                        .map(|f| skin::FrameBounds::of(&f.positions))
                }));
                clip_done(progress, clip);
            }
            let frame_bounds: Vec<skin::FrameBounds> = frame_bounds.into_iter().collect::<Result<_>>()?;
            let bounds = bounds_of(&frame_bounds)?;
            return Ok(SampledFrames { poses: Vec::new(), bounds, root_tracks: Vec::new(), globals: None });
        }
        let keep_globals = self.keep_globals;
        let sampled: Vec<(skin::FramePose, Option<Vec<Mat4>>)> = samples
            .par_iter()
            .map(|&(clip, time)| {
                let pose = sample_pose(rig, &rig.clips[clip], time);
                let globals = global_matrices(rig, &pose);
                let frame = skin::FramePose::new(rig, set, pose, &globals);
                (frame, keep_globals.then_some(globals))
            })
            .collect();
        let (mut poses, globals): (Vec<skin::FramePose>, Vec<Option<Vec<Mat4>>>) =
            sampled.into_iter().unzip();
        let mut globals: Option<Vec<Vec<Mat4>>> =
            keep_globals.then(|| globals.into_iter().flatten().collect());
        // Root motion: fitted to each clip's skinned frames, then removed from them (in place).
        let mut root_tracks = Vec::new();
        if self.root_motion {
            for (ci, (clip, &source)) in plan.row_map.clips().iter().zip(&plan.sources).enumerate() {
                let frames = clip.first_frame as usize..clip.end_frame() as usize;
                let g = globals.as_mut().map(|g| &mut g[frames.clone()]);
                root_tracks.push(crate::root_motion::extract_clip(
                    rig,
                    set,
                    skin_plan,
                    ci as u32,
                    clip,
                    source,
                    &mut poses[frames],
                    g,
                )?);
            }
        }
        for clip in plan.row_map.clips() {
            let frames = clip.first_frame as usize..clip.end_frame() as usize;
            frame_bounds
                .par_extend(poses[frames].par_iter().map(|p| Ok(skin::frame_bounds(set, skin_plan, p))));
            clip_done(progress, clip);
        }
        let frame_bounds: Vec<skin::FrameBounds> = frame_bounds.into_iter().collect::<Result<_>>()?;
        let bounds = bounds_of(&frame_bounds)?;
        Ok(SampledFrames { poses, bounds, root_tracks, globals })
    }
}

/// The quantisation box of every frame's bounds.
///
/// Errors: [`vat_core::Error::NotFinite`] when a skinned position is not finite.
fn bounds_of(frames: &[skin::FrameBounds]) -> Result<PositionBounds> {
    let all = skin::FrameBounds::merge(frames);
    if !all.finite {
        return Err(vat_core::Error::NotFinite { what: "point coordinate" }.into());
    }
    Ok(PositionBounds::from_points([all.min.to_array(), all.max.to_array()])?)
}

/// The skeleton written to the manifest: every bone of the vertex set plus one per socket or
/// captured node that is not a bone yet, sorted by node (so parents come first).
struct Skeleton {
    /// `(node, inverse bind)` per manifest bone. Added bones have the identity inverse bind, so
    /// their bone-texture matrix is the node's global transform.
    bones: BoneList,
    /// Manifest bone index of each vertex-set bone.
    from_set: Vec<u16>,
    /// Manifest bone index of each node's first bone, if it has one.
    of_node: Vec<Option<u32>>,
}

impl Skeleton {
    fn new(rig: &Rig, set: &VertexSet, extra_nodes: &[usize]) -> Result<Self> {
        let mut entries: Vec<(usize, usize, Mat4)> =
            set.bones.iter().enumerate().map(|(i, b)| (b.node, i, b.inverse_bind)).collect();
        let mut has_bone: std::collections::HashSet<usize> = entries.iter().map(|e| e.0).collect();
        for &node in extra_nodes {
            if has_bone.insert(node) {
                entries.push((node, usize::MAX - entries.len(), Mat4::IDENTITY));
            }
        }
        // Stable by (node, original index): set bones keep their relative order, added bones last.
        entries.sort_by_key(|e| (e.0, e.1));
        // Every .vat stores its skeleton (sockets, captures and bone mode use it), so the reader's
        // bone limit applies to every bake.
        let most = vat_core::container::Limits::default().max_bones as usize;
        if entries.len() > most {
            return Err(invalid_input(
                format!("rig \"{}\"", rig.name),
                format!(
                    "needs {} bones (skin joints, carrier nodes, sockets and captures); a .vat reader accepts \
                     at most {most} (vat_core::container::Limits::max_bones): remove unused joints from the \
                     skin, or split the asset",
                    entries.len()
                ),
            ));
        }
        let mut from_set = vec![0u16; set.bones.len()];
        let mut of_node = vec![None; rig.nodes.len()];
        for (new, e) in entries.iter().enumerate() {
            if e.1 < set.bones.len() {
                from_set[e.1] = new as u16;
            }
            if let Some(slot) = of_node.get_mut(e.0)
                && slot.is_none()
            {
                *slot = Some(new as u32);
            }
        }
        Ok(Self { bones: entries.into_iter().map(|e| (e.0, e.2)).collect(), from_set, of_node })
    }

    /// Manifest bones: node names, parent = the first bone of the nearest ancestor node that has one.
    fn manifest_bones(&self, rig: &Rig) -> Vec<ManifestBone> {
        self.bones
            .iter()
            .map(|&(node, _)| {
                let mut parent = None;
                let mut at = rig.nodes.get(node).and_then(|n| n.parent);
                while let Some(p) = at {
                    if let Some(b) = self.of_node.get(p).copied().flatten() {
                        parent = Some(b);
                        break;
                    }
                    at = rig.nodes.get(p).and_then(|n| n.parent).filter(|&q| q < p);
                }
                ManifestBone { name: rig.nodes.get(node).map(|n| n.name.clone()).unwrap_or_default(), parent }
            })
            .collect()
    }
}

/// Column-major 3x4 of an affine matrix: x axis, y axis, z axis, translation (xyz each).
fn affine_3x4(m: &Mat4) -> [f32; 12] {
    let c = m.to_cols_array();
    [c[0], c[1], c[2], c[4], c[5], c[6], c[8], c[9], c[10], c[12], c[13], c[14]]
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn vec3_bytes(v: &[Vec3]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 12);
    for p in v {
        for c in p.to_array() {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    out
}

/// The nodes whose per-frame transforms are captured: every socket's node and every node named in
/// `options.captures` (the first node of that name), sorted, each once. Also validates the sockets.
fn captured_nodes(rig: &Rig, options: &BakeOptions) -> Result<Vec<usize>> {
    let mut nodes = Vec::new();
    let mut socket_names = std::collections::HashSet::new();
    for (i, s) in rig.sockets.iter().enumerate() {
        let part = || format!("rig \"{}\" socket {i} \"{}\"", rig.name, s.name);
        if s.node >= rig.nodes.len() {
            return Err(invalid_input(
                part(),
                format!("is on node {}; the rig has {} nodes", s.node, rig.nodes.len()),
            ));
        }
        if !s.local.is_finite() {
            return Err(invalid_input(part(), "transform is not finite"));
        }
        if !socket_names.insert(s.name.as_str()) {
            return Err(invalid_input(part(), "the name is used by an earlier socket"));
        }
        nodes.push(s.node);
    }
    let mut node_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    if !options.captures.is_empty() {
        // The first node of each name, as a linear search would find it.
        for (i, nd) in rig.nodes.iter().enumerate().rev() {
            node_of.insert(nd.name.as_str(), i);
        }
    }
    for name in &options.captures {
        let node = node_of.get(name.as_str()).copied().ok_or_else(|| {
            invalid_option("--capture", format!("rig \"{}\" has no node named \"{name}\"", rig.name))
        })?;
        nodes.push(node);
    }
    nodes.sort_unstable();
    nodes.dedup();
    Ok(nodes)
}

/// The attachment meshes (index into `rig.meshes`) with unique names (`"name#mesh"` for a repeat,
/// `"attachment{mesh}"` for an empty name), validated.
fn attachment_meshes(rig: &Rig) -> Result<Vec<(usize, String)>> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for (mi, m) in rig.meshes.iter().enumerate() {
        let MeshRole::Attachment { socket } = m.role else { continue };
        let part = || format!("rig \"{}\" attachment mesh {mi} \"{}\"", rig.name, m.name);
        let count = m.vertex_count();
        if socket >= rig.sockets.len() {
            return Err(invalid_input(
                part(),
                format!("is on socket {socket}; the rig has {}", rig.sockets.len()),
            ));
        }
        if count == 0
            || u32::try_from(count).is_err()
            || m.indices.is_empty()
            || !m.indices.len().is_multiple_of(3)
        {
            return Err(invalid_input(part(), "needs vertices and whole triangles"));
        }
        if m.normals.len() != count || m.material_ids.len() != count {
            return Err(invalid_input(part(), "normals and material ids must have one entry per vertex"));
        }
        if let Some(i) = m.indices.iter().find(|&&i| i as usize >= count) {
            return Err(invalid_input(part(), format!("index {i} is out of range ({count} vertices)")));
        }
        if m.positions.iter().chain(&m.normals).any(|v| !v.is_finite()) {
            return Err(invalid_input(part(), "a position or normal is not finite"));
        }
        let mut name = if m.name.is_empty() { format!("attachment{mi}") } else { m.name.clone() };
        if taken.contains(&name) {
            name = format!("{name}#{mi}");
        }
        taken.insert(name.clone());
        out.push((mi, name));
    }
    Ok(out)
}

/// Texels per parallel task when encoding given arrays ([`encode_vertex_textures`]): enough to
/// amortise a task, few enough to balance two cores.
#[cfg(test)]
const ENCODE_CHUNK_TEXELS: usize = 1 << 15;

/// The vertex textures (one per texture of the format) and the tangent texture, if baked.
type EncodedTextures = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// One block of [`encode_by_block`]: its index, its part of each vertex texture and of the
/// tangent texture.
type TextureBlock<'a> = (usize, Vec<&'a mut [u8]>, Option<&'a mut [u8]>);

/// One parallel task's reused buffers in [`encode_by_block`]: a block's skinned attributes and its
/// encoded texels.
#[derive(Default)]
struct BlockScratch {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    tangents: Vec<[f32; 4]>,
    encoded: Vec<Vec<u8>>,
}

/// The vertex textures of `format` (and the `Rgba16Float` tangent texture when `with_tangents`),
/// each padded with zeros to the layout's rectangle, encoded in parallel blocks of `block` texels
/// (`block >= 1`): block `b` covers texels `b * block ..` (the last one may be shorter);
/// `fill(texels, positions, normals, tangents)` writes that block's skinned attributes, which are
/// then encoded with [`encoding::encode_vertex_texels`] (tangent frames with
/// [`encoding::tangent_frame_to_quat`] of the normal and tangent) straight into the block's part
/// of the textures. Each block is encoded by one task from its own data, so the bytes equal
/// [`encoding::encode_vertex_texture`]'s whatever the thread count (tested); the attributes of
/// only a block per task exist at a time, in reused buffers.
#[allow(clippy::too_many_arguments)]
fn encode_by_block<F>(
    layout: &VertexTextureLayout,
    format: VertexFormat,
    bounds: &PositionBounds,
    bits: [u32; 3],
    rounding: NormalRounding,
    with_tangents: bool,
    block: usize,
    fill: F,
) -> Result<EncodedTextures>
where
    F: Fn(std::ops::Range<usize>, &mut [[f32; 3]], &mut [[f32; 3]], Option<&mut [[f32; 4]]>) -> Result<()>
        + Sync,
{
    let texels = layout.texel_count() as usize;
    let block = block.max(1);
    let texel_formats = format.texel_formats();
    let full_len = |bytes_per_texel: u32| layout.byte_len(bytes_per_texel) as usize;
    // Zero-filled by the allocator (padding included); the texels are then written once each.
    let mut textures: Vec<Vec<u8>> =
        texel_formats.iter().map(|f| vec![0u8; full_len(f.bytes_per_texel())]).collect();
    let mut tangent_texture = with_tangents.then(|| vec![0u8; full_len(8)]);
    // Every texture cut into the same blocks of texels, block by block.
    let mut parts: Vec<std::slice::ChunksMut<'_, u8>> = textures
        .iter_mut()
        .zip(texel_formats)
        .map(|(t, f)| {
            let size = f.bytes_per_texel() as usize;
            t[..texels * size].chunks_mut(block * size)
        })
        .collect();
    let mut tangent_parts = tangent_texture.as_mut().map(|t| t[..texels * 8].chunks_mut(block * 8));
    let blocks: Vec<TextureBlock<'_>> = (0..texels.div_ceil(block))
        .map(|b| {
            let outs = parts.iter_mut().filter_map(Iterator::next).collect();
            (b, outs, tangent_parts.as_mut().and_then(Iterator::next))
        })
        .collect();
    blocks.into_par_iter().try_for_each_init(
        BlockScratch::default,
        |scratch, (b, mut outs, tangent_out)| {
            let range = b * block..((b + 1) * block).min(texels);
            let len = range.len();
            scratch.positions.resize(len, [0.0; 3]);
            scratch.normals.resize(len, [0.0; 3]);
            if with_tangents {
                scratch.tangents.resize(len, [0.0; 4]);
            }
            let tangents = if with_tangents { Some(&mut scratch.tangents[..len]) } else { None };
            fill(range, &mut scratch.positions[..len], &mut scratch.normals[..len], tangents)?;
            scratch.encoded.resize_with(texel_formats.len(), Vec::new);
            scratch.encoded.iter_mut().for_each(Vec::clear);
            encoding::encode_vertex_texels(
                format,
                bits,
                bounds,
                &scratch.positions[..len],
                &scratch.normals[..len],
                rounding,
                &mut scratch.encoded,
            )?;
            for (out, encoded) in outs.iter_mut().zip(&scratch.encoded) {
                out.copy_from_slice(encoded);
            }
            if let Some(out) = tangent_out {
                for ((texel, t), n) in out.chunks_exact_mut(8).zip(&scratch.tangents).zip(&scratch.normals) {
                    let q = encoding::tangent_frame_to_quat(*n, *t);
                    for (c, bytes) in q.iter().zip(texel.chunks_exact_mut(2)) {
                        bytes.copy_from_slice(&encoding::f32_to_f16_bits(*c).to_le_bytes());
                    }
                }
            }
            Ok::<(), BakeError>(())
        },
    )?;
    Ok((textures, tangent_texture))
}

/// [`encoding::encode_vertex_texture`] of given arrays through [`encode_by_block`], in blocks of
/// [`ENCODE_CHUNK_TEXELS`]: the test that the blocks are encoded and placed exactly.
#[cfg(test)]
fn encode_vertex_textures(
    layout: &VertexTextureLayout,
    format: VertexFormat,
    bounds: &PositionBounds,
    bits: [u32; 3],
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    rounding: NormalRounding,
) -> Result<Vec<Vec<u8>>> {
    if positions.len() as u64 != layout.texel_count() || normals.len() != positions.len() {
        // Let vat-core report the mismatch in its own words.
        return Ok(encoding::encode_vertex_texture(
            layout, format, bounds, bits, positions, normals, rounding,
        )?);
    }
    let fill =
        |r: std::ops::Range<usize>, p: &mut [[f32; 3]], n: &mut [[f32; 3]], _: Option<&mut [[f32; 4]]>| {
            p.copy_from_slice(&positions[r.clone()]);
            n.copy_from_slice(&normals[r]);
            Ok(())
        };
    let (textures, _) =
        encode_by_block(layout, format, bounds, bits, rounding, false, ENCODE_CHUNK_TEXELS, fill)?;
    Ok(textures)
}

/// The bake proper, given a validated plan (and, in a batch, the shared per-frame transforms).
fn prepare_planned(
    rig: &Rig,
    options: &BakeOptions,
    plan: &ClipPlan,
    shared: Option<&mut SharedSampling>,
    progress: &mut dyn FnMut(Progress),
) -> Result<PreparedBake> {
    let mut timings = Vec::new();
    let (rig, mut notes) = with_generated_tangents(rig, options.tangents);
    let rig = rig.as_ref();
    let total_frames = plan.row_map.total_frames();
    refuse_sequence_options(rig, options)?;
    // Fail on an impossible texture before allocating anything per frame (the frame limit was
    // checked per clip by `plan_clips`; an empty rig fails in VertexSet::from_rig with its own
    // message).
    let body_vertices = u32::try_from(rig.body_vertex_count()).unwrap_or(u32::MAX);
    if body_vertices > 0 {
        VertexTextureLayout::new(body_vertices, total_frames, options.max_texture_dim)?;
    }
    check_memory_budget(rig, options, total_frames)?;
    let capture_nodes = captured_nodes(rig, options)?;
    let attachment_meshes = attachment_meshes(rig)?;
    let samples = plan.samples(rig);

    // The vertex set; its LODs on the original topology, then the locality order; and every
    // frame's pose and the quantisation box.
    let mut set = VertexSet::from_rig(rig)?;
    refuse_missing_tangents(rig, &set, options)?;
    // Sample every frame once: the skinning matrices (and morph weights) of each, and the global
    // node matrices when the bone texture or capture tracks need them.
    let needs_globals = options.bones || !capture_nodes.is_empty();
    // A batch shares the first rig's node matrices.
    let keep_globals = needs_globals && shared.is_none();
    let sampling =
        FrameSampling { rig, plan, samples: &samples, root_motion: options.root_motion, keep_globals };
    let (lods, early_frames) = lods_beside_frames(rig, &mut set, options, &samples, &sampling);
    let ((chain, lod_lists, vertex_order), lods_time) = lods?;
    timings.push(lods_time);
    progress(Progress { stage: "lods", done: 1, total: 1 });
    let n = set.vertex_count();
    let n32 = n as u32;
    // The skeleton is known now: refuse a bone texture that cannot fit before any per-frame work.
    let skeleton = Skeleton::new(rig, &set, &capture_nodes)?;
    if options.bones {
        BoneTextureLayout::new(skeleton.bones.len() as u32, total_frames, options.max_texture_dim)?;
    }
    // Bone mode's live morph layer ([`crate::morph`]), when the body has morph targets.
    let morph_layer = if options.bones {
        crate::morph::bake_morph_layer(rig, &set, &samples, options.max_texture_dim)?
    } else {
        None
    };
    let skin_plan = skin::SkinPlan::new(&set);
    let mut blobs = BlobTable::default();
    let layout = VertexTextureLayout::new(n32, total_frames, options.max_texture_dim)?;
    let (frames, skin_time) = match early_frames {
        Some(frames) => {
            let frames = frames?;
            progress(Progress {
                stage: "skin",
                done: u64::from(total_frames),
                total: u64::from(total_frames),
            });
            frames
        }
        None => timed_result("skin", || sampling.run(&set, &skin_plan, progress))?,
    };
    timings.push(skin_time);
    let SampledFrames { poses, bounds, root_tracks, globals: mut sampled_globals } = frames;

    // Skin again, a frame per task into reused buffers, and encode each frame straight into the
    // textures.
    let (vertex_animation, vertex_texture_bytes) = timed(&mut timings, "encode", || {
        encode_vertex_animation(rig, &set, &skin_plan, &samples, &poses, bounds, layout, options, &mut blobs)
    })?;
    progress(Progress { stage: "encode", done: 1, total: 1 });
    drop(poses);

    // Bone texture, sockets, captures.
    let (bone_animation, bone_texture_bytes, captures) = timed(&mut timings, "bones", || {
        let globals = match (&shared, needs_globals) {
            (_, false) => None,
            (Some(s), true) => Some(Arc::clone(&s.globals)),
            (None, true) => sampled_globals.take().map(Arc::new),
        };
        bone_sections(&set, &skeleton, globals, &capture_nodes, total_frames, options, shared, &mut blobs)
    })?;
    progress(Progress { stage: "bones", done: 1, total: 1 });

    // LODs, streams, sockets, attachments, materials, manifest.
    let mut texture_notes = Vec::new();
    let manifest = timed(&mut timings, "assemble", || {
        let size = vertex_animation.bounds.extent.iter().fold(0.0f32, |a, &b| a.max(b));
        let (index_bytes, lod_entries) = lod_sections(&chain, &lod_lists, size);
        let streams = vertex_streams(&set, &mut blobs);

        let attachments = attachment_sections(rig, &attachment_meshes, &mut blobs);

        let mut manifest = Manifest::new(rig.name.clone(), n32);
        manifest.clips = plan.row_map.clips().to_vec();
        manifest.vertex_animation = Some(vertex_animation);
        manifest.bone_animation = bone_animation;
        manifest.morph_animation = morph_layer.map(|l| l.into_section(|bytes| blobs.add(bytes)));
        manifest.indices = Some(blobs.add(index_bytes));
        manifest.lods = lod_entries;
        manifest.streams = streams;
        manifest.bones = skeleton.manifest_bones(rig);
        manifest.sockets = manifest_sockets(rig, &skeleton);
        manifest.captures = captures;
        manifest.attachments = attachments;
        if let Some(materials) = &rig.materials {
            set_material_sections(
                &mut manifest,
                materials,
                options.material_texture_size,
                &mut texture_notes,
                |bytes| blobs.add(bytes),
            );
        }
        set_root_motion(&mut manifest, root_tracks, &mut notes);
        Ok(manifest)
    })?;
    notes.extend(texture_notes);
    notes.extend(chain.notes());

    let stats = bake_stats(
        &manifest,
        &chain,
        plan,
        &blobs,
        [vertex_texture_bytes, bone_texture_bytes],
        timings,
        notes,
    );
    check_readable(rig, &manifest, blobs.blobs.len())?;
    Ok(PreparedBake { manifest, blobs: blobs.blobs, vertex_order, stats })
}

/// The manifest's materials and texture arrays of `materials` (layers up to `max_side` texels),
/// their texel blobs added with `add`; notes for every resampled image.
pub(crate) fn material_sections(
    materials: &crate::rig::RigMaterials,
    max_side: u32,
    notes: &mut Vec<String>,
    mut add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) -> (Vec<vat_core::container::Material>, Option<vat_core::container::MaterialTextures>) {
    use vat_core::container::TextureColorSpace;
    let mut array = |images: &[crate::rig::MaterialImage], space| {
        crate::textures::texture_array(images, space, max_side, notes).map(|(mut array, bytes)| {
            array.texels = add(bytes);
            array
        })
    };
    let color = array(&materials.color_images, TextureColorSpace::Srgb);
    let data = array(&materials.data_images, TextureColorSpace::Linear);
    let textures =
        (color.is_some() || data.is_some()).then_some(vat_core::container::MaterialTextures { color, data });
    (materials.materials.clone(), textures)
}

/// The `Uv0` (`F32x2`) and `Color0` (`Unorm8x4`, linear RGBA packed by
/// [`vat_core::gpu::pack_unorm8x4`]) streams of a bake, for whichever of the two it has, blobs added
/// through `add`; shared by the soft and rigid bakes so both write the same element formats.
pub(crate) fn surface_streams(
    uvs: Option<impl Iterator<Item = [f32; 2]>>,
    colors: Option<impl Iterator<Item = [f32; 4]>>,
    mut add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) -> Vec<VertexStream> {
    let mut streams = Vec::new();
    if let Some(uv) = uvs {
        let bytes = f32_bytes(uv.flatten());
        streams.push(VertexStream { kind: StreamKind::Uv0, element: ElementFormat::F32x2, blob: add(bytes) });
    }
    if let Some(colors) = colors {
        let bytes = colors.flat_map(|c| vat_core::gpu::pack_unorm8x4(c).to_le_bytes()).collect();
        streams.push(VertexStream {
            kind: StreamKind::Color0,
            element: ElementFormat::Unorm8x4,
            blob: add(bytes),
        });
    }
    streams
}

/// Fills `manifest`'s `materials`, `material_textures` and `material_variants` from `materials`
/// ([`material_sections`], texture blobs added through `add`, notes on textures left out or
/// shrunk pushed to `notes`); shared by the soft and rigid bakes.
pub(crate) fn set_material_sections(
    manifest: &mut Manifest,
    materials: &crate::rig::RigMaterials,
    max_side: u32,
    notes: &mut Vec<String>,
    add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) {
    let (list, textures) = material_sections(materials, max_side, notes, add);
    manifest.materials = list;
    manifest.material_textures = textures;
    manifest.material_variants = materials.variants.clone();
}

/// The larger horizontal (x or z) extent of the vertex animation's box, metres (0 without one).
fn vertex_animation_width(manifest: &Manifest) -> f32 {
    manifest.vertex_animation.as_ref().map_or(0.0, |va| va.bounds.extent[0].max(va.bounds.extent[2]))
}

/// Refuses a bake whose file the `.vat` reader would refuse under its default
/// [`vat_core::container::Limits`] (e.g. more than 4,096 bones with `--bones`), before anything is
/// written, naming the count and the limit.
fn check_readable(rig: &Rig, manifest: &Manifest, blob_count: usize) -> Result<()> {
    let limits = vat_core::container::Limits::default();
    let counted = vat_core::container::check_manifest_counts(manifest, &limits).and_then(|()| {
        if blob_count as u64 > u64::from(limits.max_blobs) {
            Err(vat_core::Error::LimitExceeded {
                what: "blob count",
                value: blob_count as u64,
                limit: limits.max_blobs.into(),
            })
        } else {
            Ok(())
        }
    });
    counted.map_err(|e| {
        invalid_input(
            format!("rig \"{}\"", rig.name),
            format!(
                "the baked .vat would not read back ({e}, a limit of the .vat reader); bake less of it \
                 (--clips, --frames or --fps for frames and clips, no --bones for bones, --lods for LODs)"
            ),
        )
    })
}

/// Small hand-built rigs for the tests of this crate's bake stages.
#[cfg(test)]
pub(crate) mod fixtures {
    use glam::{Mat4, Quat, Vec2, Vec3, Vec4};

    use crate::rig::{
        AnimationClip, Channel, ChannelTarget, KeyInterpolation, MAX_INFLUENCES, Mesh, MeshBinding, MeshRole,
        MorphTarget, Node, Rig, Skin, Socket, Transform,
    };

    /// Rings and segments of the tube.
    pub(crate) const RINGS: usize = 10;
    pub(crate) const SEGMENTS: usize = 16;

    fn rotation_track(node: usize, times: &[f32], axis: Vec3, angles: &[f32]) -> Channel {
        Channel {
            target: ChannelTarget::Rotation(node),
            interpolation: KeyInterpolation::Linear,
            times: times.to_vec(),
            values: angles.iter().flat_map(|&a| Quat::from_axis_angle(axis, a).to_array()).collect(),
        }
    }

    /// A 1.8 m tube of radius `radius` (RINGS x SEGMENTS vertices, open ends) skinned to a chain
    /// hips -> spine -> head under a root, with tangents, uvs, two materials and a bulge morph
    /// target; a head socket carrying a small tetrahedron "cap"; clips "sway" (looping 1 s,
    /// locomotion with a known 1.25 m stride) and "nod" (one-shot 0.5 s, animates the morph).
    pub(crate) fn tube_rig(radius: f32) -> Rig {
        let node = |name: &str, parent: Option<usize>, y: f32| Node {
            name: name.into(),
            parent,
            rest: Transform { translation: Vec3::new(0.0, y, 0.0), ..Transform::IDENTITY },
        };
        let nodes = vec![
            node("root", None, 0.0),
            node("hips", Some(0), 0.0),
            node("spine", Some(1), 0.6),
            node("head", Some(2), 0.6),
        ];
        let joint_heights = [0.0f32, 0.6, 1.2];
        let mut mesh = Mesh {
            name: "tube".into(),
            binding: MeshBinding::Skinned { skin: 0 },
            role: MeshRole::Body,
            positions: Vec::new(),
            normals: Vec::new(),
            tangents: Some(Vec::new()),
            uvs: Some(Vec::new()),
            colors: None,
            material_ids: Vec::new(),
            indices: Vec::new(),
            influence_count: 4,
            joints: Vec::new(),
            weights: Vec::new(),
            full_influences: None,
            morph_targets: Vec::new(),
            default_morph_weights: vec![0.0],
        };
        let mut bulge = Vec::new();
        for r in 0..RINGS {
            let y = 1.8 * r as f32 / (RINGS - 1) as f32;
            for s in 0..SEGMENTS {
                let phi = std::f32::consts::TAU * s as f32 / SEGMENTS as f32;
                let radial = Vec3::new(phi.cos(), 0.0, phi.sin());
                mesh.positions.push(radial * radius + Vec3::Y * y);
                mesh.normals.push(radial);
                if let Some(t) = &mut mesh.tangents {
                    t.push(Vec4::new(-phi.sin(), 0.0, phi.cos(), if s % 2 == 0 { 1.0 } else { -1.0 }));
                }
                if let Some(uv) = &mut mesh.uvs {
                    uv.push(Vec2::new(s as f32 / SEGMENTS as f32, r as f32 / RINGS as f32));
                }
                mesh.material_ids.push(if y < 0.9 { 1 } else { 2 });
                // Piecewise-linear weights between the joints around height y.
                let mut w = [0.0f32; MAX_INFLUENCES];
                let mut j = [0u16; MAX_INFLUENCES];
                if y >= joint_heights[2] {
                    (j[0], w[0]) = (2, 1.0);
                } else {
                    let k = if y < joint_heights[1] { 0 } else { 1 };
                    let t = (y - joint_heights[k]) / 0.6;
                    (j[0], w[0], j[1], w[1]) = (k as u16, 1.0 - t, k as u16 + 1, t);
                }
                mesh.joints.push(j);
                mesh.weights.push(w);
                bulge.push(if (3..7).contains(&r) { radial * 0.03 } else { Vec3::ZERO });
            }
        }
        let id = |r: usize, s: usize| (r * SEGMENTS + s % SEGMENTS) as u32;
        for r in 0..RINGS - 1 {
            for s in 0..SEGMENTS {
                mesh.indices.extend([
                    id(r, s),
                    id(r + 1, s),
                    id(r, s + 1),
                    id(r, s + 1),
                    id(r + 1, s),
                    id(r + 1, s + 1),
                ]);
            }
        }
        mesh.morph_targets.push(MorphTarget {
            name: Some("bulge".into()),
            positions: bulge,
            normals: None,
            tangents: None,
        });
        let cap = Mesh {
            name: "cap".into(),
            binding: MeshBinding::Rigid { node: 3 },
            role: MeshRole::Attachment { socket: 0 },
            positions: vec![Vec3::ZERO, Vec3::X * 0.1, Vec3::Z * 0.1, Vec3::Y * 0.1],
            normals: vec![-Vec3::ONE.normalize(), Vec3::X, Vec3::Z, Vec3::Y],
            tangents: None,
            uvs: None,
            colors: None,
            material_ids: vec![3; 4],
            indices: vec![0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3],
            influence_count: 0,
            joints: Vec::new(),
            weights: Vec::new(),
            full_influences: None,
            morph_targets: Vec::new(),
            default_morph_weights: Vec::new(),
        };
        let rest = |y: f32| Mat4::from_translation(Vec3::new(0.0, y, 0.0)).inverse();
        let sway_times = [0.0, 0.25, 0.5, 0.75, 1.0];
        let sway = AnimationClip {
            name: "sway".into(),
            channels: vec![
                rotation_track(2, &sway_times, Vec3::Z, &[0.0, 0.3, 0.0, -0.3, 0.0]),
                rotation_track(3, &sway_times, Vec3::X, &[0.0, 0.2, 0.0, -0.2, 0.0]),
                Channel {
                    target: ChannelTarget::Translation(1),
                    interpolation: KeyInterpolation::Linear,
                    times: vec![0.0, 0.5, 1.0],
                    values: vec![0.0, 0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0, 0.0],
                },
            ],
            start: 0.0,
            end: 1.0,
            looping: Some(true),
            known_stride: Some(1.25),
            locomotion: true,
        };
        let nod = AnimationClip {
            name: "nod".into(),
            channels: vec![
                rotation_track(3, &[0.04, 0.3, 0.54], Vec3::X, &[0.0, 0.5, 0.2]),
                Channel {
                    target: ChannelTarget::MorphWeights(0),
                    interpolation: KeyInterpolation::Linear,
                    times: vec![0.04, 0.54],
                    values: vec![0.0, 1.0],
                },
            ],
            start: 0.04,
            end: 0.54,
            looping: Some(false),
            known_stride: None,
            locomotion: false,
        };
        Rig {
            name: "tube".into(),
            nodes,
            skins: vec![Skin { joints: vec![1, 2, 3], inverse_bind: vec![rest(0.0), rest(0.6), rest(1.2)] }],
            meshes: vec![mesh, cap],
            clips: vec![sway, nod],
            sockets: vec![Socket {
                name: "head".into(),
                node: 3,
                local: Mat4::from_translation(Vec3::Y * 0.5),
            }],
            feet: None,
            ..Rig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_out_of_range_are_typed_errors() {
        let bad = [
            BakeOptions { fps: 0.0, ..Default::default() },
            BakeOptions { fps: f32::NAN, ..Default::default() },
            BakeOptions { frames: Some(0), ..Default::default() },
            BakeOptions { max_texture_dim: 0, ..Default::default() },
            BakeOptions { max_texture_dim: MAX_TEXTURE_DIM + 1, ..Default::default() },
            BakeOptions { clips: Some(vec![]), ..Default::default() },
            BakeOptions { lods: LodOptions::Count(0), ..Default::default() },
        ];
        for o in bad {
            assert!(matches!(validate_options(&o), Err(BakeError::InvalidOption { .. })), "{o:?}");
        }
        assert!(validate_options(&BakeOptions::default()).is_ok());
    }

    #[test]
    fn blob_table_stores_identical_bytes_once() {
        let mut t = BlobTable::default();
        let a = t.add(vec![1, 2, 3]);
        let b = t.add(vec![1, 2, 4]);
        let c = t.add(vec![1, 2, 3]);
        assert_eq!((a, b, c), (BlobId(0), BlobId(1), BlobId(0)));
        assert_eq!((t.blobs.len(), t.deduplicated), (2, 1));
    }

    use super::fixtures::{RINGS, SEGMENTS, tube_rig};
    use vat_core::container::Asset;

    fn bones_options() -> BakeOptions {
        BakeOptions { bones: true, tangents: true, captures: vec!["spine".into()], ..Default::default() }
    }

    #[test]
    fn tube_bake_has_every_section() {
        let rig = tube_rig(0.15);
        let bake = prepare(&rig, &bones_options()).unwrap();
        let bytes = bake.to_vat_bytes().unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let m = asset.manifest();
        let n = (RINGS * SEGMENTS) as u32;
        assert_eq!(m.vertex_count, n);
        // sway: looping 1 s at 30 fps -> 30 frames; nod: one-shot 0.5 s -> 16 frames.
        let frames: Vec<(&str, u32, u32)> =
            m.clips.iter().map(|c| (c.name.as_str(), c.first_frame, c.frame_count)).collect();
        assert_eq!(frames, vec![("sway", 0, 30), ("nod", 30, 16)]);
        assert_eq!((m.clips[0].stride, m.clips[1].stride), (1.25, 0.0));
        assert_eq!(bake.stats.frames, 46);
        assert_eq!(bake.stats.bytes_per_vertex_frame, 8);
        let va = m.vertex_animation.as_ref().unwrap();
        assert_eq!((va.layout.vertex_count, va.layout.frame_count), (n, 46));
        assert!(va.tangents.is_some());
        // LODs: 5 levels requested over the one vertex set, each kept one with fewer triangles and a
        // later switch than the previous; the dropped ones are reported.
        assert_eq!(m.lods.len() + bake.stats.stalled_lods.len(), 5);
        assert_eq!(m.lods[0].triangle_count as usize, (RINGS - 1) * SEGMENTS * 2);
        for w in m.lods.windows(2) {
            assert!(w[1].triangle_count < w[0].triangle_count && w[1].max_distance > w[0].max_distance);
        }
        assert_eq!(
            bake.stats.warnings.iter().filter(|w| w.contains("dropped")).count(),
            bake.stats.stalled_lods.len()
        );
        assert_eq!(m.lods.last().unwrap().max_distance, f32::INFINITY);
        // Skeleton: root is not a joint; hips, spine, head are (sorted by node, parents first).
        let names: Vec<(&str, Option<u32>)> = m.bones.iter().map(|b| (b.name.as_str(), b.parent)).collect();
        assert_eq!(names, vec![("hips", None), ("spine", Some(0)), ("head", Some(1))]);
        assert_eq!(m.sockets.len(), 1);
        assert_eq!(m.sockets[0].bone, 2);
        assert_eq!(m.sockets[0].local[10], 0.5, "socket offset, column-major translation y");
        let captured: Vec<u32> = m.captures.iter().map(|c| c.bone).collect();
        assert_eq!(captured, vec![1, 2], "the spine (asked) and the head (socket)");
        assert_eq!(m.attachments.len(), 1);
        assert_eq!(
            (m.attachments[0].name.as_str(), m.attachments[0].socket, m.attachments[0].vertex_count),
            ("cap", 0, 4)
        );
        let kinds: Vec<StreamKind> = m.streams.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                StreamKind::RestPosition,
                StreamKind::RestNormal,
                StreamKind::RestTangent,
                StreamKind::Uv0,
                StreamKind::MaterialId
            ]
        );
        let ba = m.bone_animation.as_ref().unwrap();
        assert_eq!((ba.layout.bone_count, ba.influences), (3, 4));
    }

    #[test]
    fn bone_texture_and_captures_hold_fresh_matrices() {
        let rig = tube_rig(0.15);
        let bake = prepare(&rig, &bones_options()).unwrap();
        let bytes = bake.to_vat_bytes().unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let m = asset.manifest();
        let bone_texture = asset.bone_texture().unwrap();
        let layout = m.bone_animation.as_ref().unwrap().layout;
        let float =
            |b: &[u8], i: usize| f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        let nod = &m.clips[1];
        for k in [0, 7, nod.frame_count - 1] {
            let frame = nod.first_frame + k;
            let globals =
                global_matrices(&rig, &sample_pose(&rig, &rig.clips[1], frame_time(&rig.clips[1], nod, k)));
            // Bone 2 is the head joint: node 3, inverse bind of its rest at y = 1.2.
            let expected = globals[3] * Mat4::from_translation(Vec3::new(0.0, 1.2, 0.0)).inverse();
            for r in 0..3u32 {
                let t = layout.texel_index(frame, 2, r) as usize * 4;
                for c in 0..4 {
                    assert_eq!(
                        float(bone_texture, t + c),
                        expected.col(c)[r as usize],
                        "frame {frame} row {r} col {c}"
                    );
                }
            }
            let capture = asset.capture_bytes(2).unwrap();
            let want = affine_3x4(&globals[3]);
            for (i, w) in want.iter().enumerate() {
                assert_eq!(float(capture, frame as usize * 12 + i), *w);
            }
        }
        let joints = asset.joint_bytes().unwrap();
        let weights = asset.weight_bytes().unwrap();
        for v in 0..m.vertex_count as usize {
            let sum: f32 = (0..4).map(|s| float(weights, v * 4 + s)).sum();
            assert!((sum - 1.0).abs() <= 4.0 * f32::EPSILON, "vertex {v} weights sum to {sum}");
            assert!(
                (0..4)
                    .all(|s| u16::from_le_bytes([joints[(v * 4 + s) * 2], joints[(v * 4 + s) * 2 + 1]]) < 3)
            );
        }
    }

    #[test]
    fn one_shot_frames_end_exactly_at_the_clip_end() {
        let rig = tube_rig(0.15);
        let plan = plan_clips(&rig, &BakeOptions::default()).unwrap();
        let nod = &plan.row_map.clips()[1];
        assert_eq!(frame_time(&rig.clips[1], nod, 0), 0.04);
        assert_eq!(frame_time(&rig.clips[1], nod, nod.frame_count - 1), 0.54);
        // k / fps in f64, added to the start once: frame 3 of sway is exactly 0.1 s.
        assert_eq!(frame_time(&rig.clips[0], &plan.row_map.clips()[0], 3), 0.1);
        let frames = plan_clips(&rig, &BakeOptions { frames: Some(8), ..Default::default() }).unwrap();
        let counts: Vec<u32> = frames.row_map.clips().iter().map(|c| c.frame_count).collect();
        assert_eq!(counts, vec![8, 8]);
        assert!((frames.row_map.clips()[1].fps - 14.0).abs() < 1e-4, "(8 - 1) / 0.5 s");
    }

    #[test]
    fn a_bake_the_reader_would_refuse_is_refused_before_writing() {
        use crate::testdata::{LargeRigShape, large_rig};
        // 4,100 joints: the vertex set takes them (joints are u16), a .vat holds 4,096 bones, with or
        // without the bone texture (the skeleton is always stored).
        let rig = large_rig(LargeRigShape { primitives: 1, grid: 3, joints: 4100, frames: 2 });
        for bones in [true, false] {
            let options = BakeOptions { bones, lods: LodOptions::Count(1), ..BakeOptions::default() };
            let m = prepare(&rig, &options).unwrap_err().to_string();
            for part in ["needs 4100 bones", "4096", "max_bones"] {
                assert!(m.contains(part), "{m:?} lacks {part:?}");
            }
        }
        // 4,097 one-frame clips: more than the reader's 4,096, refused before writing, named.
        let mut rig = large_rig(LargeRigShape { primitives: 1, grid: 3, joints: 2, frames: 2 });
        let pose = rig.clips[0].clone();
        rig.clips = (0..4097)
            .map(|i| crate::rig::AnimationClip {
                name: format!("pose{i}"),
                channels: Vec::new(),
                end: pose.start,
                ..pose.clone()
            })
            .collect();
        let options = BakeOptions { lods: LodOptions::Count(1), ..BakeOptions::default() };
        let m = prepare(&rig, &options).unwrap_err().to_string();
        for part in ["clip count = 4097", "4096", "would not read back", "--clips"] {
            assert!(m.contains(part), "{m:?} lacks {part:?}");
        }
        // Within the limits the same rig reads back.
        rig.clips.truncate(4096);
        let vat = prepare(&rig, &options).unwrap();
        vat_core::container::Asset::parse(&vat.to_vat_bytes().unwrap()).unwrap();
    }

    /// Material textures are charged: the images the rig holds and the arrays built from them (with
    /// their mip chains), so a many-texture bake is refused before it builds them.
    #[test]
    fn the_estimate_charges_material_images_and_texture_arrays() {
        let bytes = crate::testdata::textured_humanoid_glb();
        let rig = crate::gltf_import::import_slice(&bytes, None, "textured").unwrap();
        let materials = rig.materials.clone().unwrap();
        let images: u64 =
            materials.color_images.iter().chain(&materials.data_images).map(|i| i.rgba.len() as u64).sum();
        assert!(images > 0);
        let bare = Rig { materials: None, ..rig.clone() };
        let options = BakeOptions::default();
        let frames = plan_clips(&rig, &options).unwrap().row_map.total_frames();
        let with = estimate_bake_bytes(&rig, &options, frames).unwrap();
        let without = estimate_bake_bytes(&bare, &options, frames).unwrap();
        let arrays = crate::textures::material_texture_bytes(&materials, options.material_texture_size);
        assert_eq!(with - without, images + arrays);
        // The arrays' real size: every layer's mip chain, as texture_array builds it.
        let mut notes = Vec::new();
        let built: u64 = [
            (&materials.color_images, vat_core::container::TextureColorSpace::Srgb),
            (&materials.data_images, vat_core::container::TextureColorSpace::Linear),
        ]
        .into_iter()
        .filter_map(|(i, space)| {
            crate::textures::texture_array(i, space, options.material_texture_size, &mut notes)
        })
        .map(|(_, blob)| blob.len() as u64)
        .sum();
        assert!(arrays >= 2 * built, "{arrays} < 2 x {built}");
        // Refused under a budget that holds the rest but not the textures.
        let tight = BakeOptions { max_memory: without + images, ..BakeOptions::default() };
        assert!(matches!(prepare(&rig, &tight), Err(BakeError::OverBudget { .. })));
    }

    #[test]
    fn bakes_over_the_memory_budget_are_refused_before_allocating() {
        let rig = tube_rig(0.15);
        let options = BakeOptions::default();
        let frames = plan_clips(&rig, &options).unwrap().row_map.total_frames();
        let needed = estimate_bake_bytes(&rig, &options, frames).unwrap();
        // The estimate covers at least the vertex texture written twice (texture and .vat bytes).
        let layout =
            VertexTextureLayout::new(rig.body_vertex_count() as u32, frames, MAX_TEXTURE_DIM).unwrap();
        assert!(needed >= 2 * layout.byte_len(8), "{needed}");
        let tight = BakeOptions { max_memory: needed - 1, ..BakeOptions::default() };
        match prepare(&rig, &tight) {
            Err(e @ BakeError::OverBudget { .. }) => {
                let m = e.to_string();
                for part in
                    [needed.to_string(), (needed - 1).to_string(), "--max-memory".into(), "tube".into()]
                {
                    assert!(m.contains(&part), "{m:?} lacks {part:?}");
                }
            }
            other => panic!("{other:?}"),
        }
        // Exactly the estimate is enough.
        prepare(&rig, &BakeOptions { max_memory: needed, ..BakeOptions::default() }).unwrap();
        // A frame count that cannot fit the texture limit is refused with the numbers, up front.
        let many = BakeOptions { fps: 2000.0, max_texture_dim: 256, ..BakeOptions::default() };
        match prepare(&rig, &many) {
            Err(e @ BakeError::Core(vat_core::Error::TextureTooLarge { .. })) => {
                assert!(e.to_string().contains("256"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_rigs_and_options_are_typed_errors() {
        let rig = tube_rig(0.15);
        let unknown = BakeOptions { clips: Some(vec!["dance".into()]), ..Default::default() };
        assert!(matches!(prepare(&rig, &unknown), Err(BakeError::InvalidOption { option: "--clips", .. })));
        let capture = BakeOptions { captures: vec!["tail".into()], ..Default::default() };
        assert!(matches!(prepare(&rig, &capture), Err(BakeError::InvalidOption { option: "--capture", .. })));
        let one = BakeOptions { frames: Some(1), ..Default::default() };
        assert!(matches!(prepare(&rig, &one), Err(BakeError::InvalidOption { option: "--frames", .. })));
        // --tangents on a mesh without them generates them (MikkTSpace from its UVs) and says so.
        let mut no_tangents = rig.clone();
        no_tangents.meshes[0].tangents = None;
        let tangents = BakeOptions { tangents: true, ..Default::default() };
        let generated = prepare(&no_tangents, &tangents).unwrap();
        assert!(generated.manifest.vertex_animation.as_ref().unwrap().tangents.is_some());
        assert_eq!(generated.stats.notes.len(), 1, "{:?}", generated.stats.notes);
        assert!(generated.stats.notes[0].contains("MikkTSpace"), "{:?}", generated.stats.notes);
        // Verified against the source, whose tangents are generated the same way.
        let report = crate::verify::verify_prepared(&generated, &no_tangents).unwrap();
        assert!(report.passed && report.tangent_max_error_deg.is_some(), "{:?}", report.failures);
        let mut nan = rig.clone();
        nan.clips[0].channels[0].values[5] = f32::NAN;
        assert!(matches!(prepare(&nan, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        let mut sockets = rig.clone();
        sockets.sockets.push(sockets.sockets[0].clone());
        assert!(matches!(prepare(&sockets, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        sockets.sockets[1].name = "tail".into();
        sockets.sockets[1].node = 99;
        assert!(matches!(prepare(&sockets, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        let mut cap = rig.clone();
        cap.meshes[1].role = MeshRole::Attachment { socket: 5 };
        assert!(matches!(prepare(&cap, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        cap.meshes[1].role = MeshRole::Attachment { socket: 0 };
        cap.meshes[1].indices.push(7);
        assert!(matches!(prepare(&cap, &BakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        let absurd = BakeOptions { fps: 4e8, ..Default::default() };
        assert!(matches!(prepare(&rig, &absurd), Err(BakeError::InvalidOption { option: "--fps", .. })));
        let tiny = BakeOptions { max_texture_dim: 16, ..Default::default() };
        assert!(
            matches!(prepare(&rig, &tiny), Err(BakeError::Core(_))),
            "160 x 46 texels do not fit 16 x 16"
        );
        // A subset bakes only the named clips.
        let subset =
            prepare(&rig, &BakeOptions { clips: Some(vec!["nod".into()]), ..Default::default() }).unwrap();
        assert_eq!(subset.manifest().clips.len(), 1);
    }

    #[test]
    fn batch_shares_the_sampled_skeleton_and_refuses_mismatches() {
        let (a, b) = (tube_rig(0.15), tube_rig(0.2));
        let options = bones_options();
        let bakes = prepare_batch(&[a.clone(), b.clone()], &options).unwrap();
        let texture = |bake: &PreparedBake| {
            let id = bake.manifest.bone_animation.as_ref().unwrap().texture;
            Arc::clone(&bake.blobs[id.0 as usize])
        };
        assert!(Arc::ptr_eq(&texture(&bakes[0]), &texture(&bakes[1])), "one bone texture for both");
        // The batch gives the same bytes as baking each rig alone.
        assert_eq!(bakes[1].to_vat_bytes().unwrap(), prepare(&b, &options).unwrap().to_vat_bytes().unwrap());
        let mut other = b.clone();
        other.nodes[2].rest.translation.y = 0.7;
        assert!(matches!(prepare_batch(&[a.clone(), other], &options), Err(BakeError::InvalidInput { .. })));
        let mut morph = b.clone();
        morph.clips[1].channels[1].values[1] = f32::NAN;
        assert!(matches!(prepare_batch(&[a.clone(), morph], &options), Err(BakeError::InvalidInput { .. })));
        let mut clips = b;
        clips.clips[0].end = 1.1;
        assert!(matches!(prepare_batch(&[a, clips], &options), Err(BakeError::InvalidInput { .. })));
        assert!(prepare_batch(&[], &options).is_err());
    }

    #[test]
    fn write_is_atomic_and_readable() {
        let rig = tube_rig(0.15);
        let bake = prepare(&rig, &BakeOptions::default()).unwrap();
        let dir = std::env::temp_dir().join(format!("vat-bake-prepare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tube.vat");
        bake.write(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes, bake.to_vat_bytes().unwrap());
        assert!(Asset::parse(&bytes).is_ok());
        let missing = dir.join("no-such-dir").join("tube.vat");
        assert!(bake.write(&missing).is_err());
        assert!(!missing.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn textures_equal_vat_cores_encoder_of_the_skinned_frames() {
        // The default path (each frame encoded from the skinning lanes), the block path (tangents,
        // other formats, precise rounding) and a rig with an animated morph: texel for texel what
        // vat-core encodes from `skin_frames_into`'s ground truth, in the box of every position.
        let rig = tube_rig(0.15);
        let cases = [
            BakeOptions::default(),
            BakeOptions { tangents: true, ..Default::default() },
            BakeOptions { format: VertexFormat::Unorm16, frames: Some(5), ..Default::default() },
            BakeOptions { normal_rounding: NormalRounding::Precise, frames: Some(3), ..Default::default() },
            BakeOptions { optimize_vertex_order: false, frames: Some(4), ..Default::default() },
        ];
        for options in cases {
            let bake = prepare(&rig, &options).unwrap();
            let (set, order) = baked_vertex_set(&rig, options.optimize_vertex_order).unwrap();
            assert_eq!(bake.vertex_order(), order.as_slice());
            let samples = plan_clips(&rig, &options).unwrap().samples(&rig);
            let len = samples.len() * set.vertex_count();
            let (mut p, mut n, mut t) =
                (vec![[0.0f32; 3]; len], vec![[0.0f32; 3]; len], vec![[0.0f32; 4]; len]);
            skin::skin_frames_into(&rig, &set, &samples, &mut p, &mut n, Some(&mut t)).unwrap();
            let va = bake.manifest().vertex_animation.as_ref().unwrap();
            let bounds = PositionBounds::from_points(p.iter().copied()).unwrap();
            assert_eq!(va.bounds, bounds, "{options:?}");
            let want = encoding::encode_vertex_texture(
                &va.layout,
                options.format,
                &bounds,
                va.position_bits,
                &p,
                &n,
                options.normal_rounding,
            )
            .unwrap();
            let got = bake.vertex_textures();
            assert!(got.iter().copied().eq(want.iter().map(Vec::as_slice)), "{options:?}");
            if options.tangents {
                let tangents = bake.blob(va.tangents.unwrap()).unwrap();
                assert_eq!(tangents.len() as u64, va.layout.byte_len(8));
                for (i, (t, n)) in t.iter().zip(&n).enumerate() {
                    let q = encoding::tangent_frame_to_quat(*n, *t).map(encoding::f32_to_f16_bits);
                    let texel: Vec<u16> = tangents[i * 8..i * 8 + 8]
                        .chunks(2)
                        .map(|b| u16::from_le_bytes([b[0], b[1]]))
                        .collect();
                    assert_eq!(texel, q, "tangent texel {i}");
                }
            }
        }
    }

    #[test]
    fn parallel_encode_equals_vat_cores_encoder() {
        // 3 chunks and a partial one, every format.
        let n = 3 * ENCODE_CHUNK_TEXELS + 123;
        let layout = VertexTextureLayout::new(n as u32, 1, MAX_TEXTURE_DIM).unwrap();
        let positions: Vec<[f32; 3]> =
            (0..n).map(|i| [(i % 97) as f32 * 0.01, (i % 89) as f32 * 0.02, 0.5]).collect();
        let normals: Vec<[f32; 3]> =
            (0..n).map(|i| [(i % 7) as f32 - 3.0, (i % 5) as f32 - 2.0, 1.0]).collect();
        let bounds = PositionBounds::from_points(positions.iter().copied()).unwrap();
        let formats = VertexFormat::ALL;
        for format in formats {
            let bits = if format == VertexFormat::Packed64 {
                encoding::allocate_position_bits(bounds.extent)
            } else {
                [0; 3]
            };
            for rounding in [NormalRounding::Nearest, NormalRounding::Precise] {
                let ours =
                    encode_vertex_textures(&layout, format, &bounds, bits, &positions, &normals, rounding)
                        .unwrap();
                let core = encoding::encode_vertex_texture(
                    &layout, format, &bounds, bits, &positions, &normals, rounding,
                )
                .unwrap();
                assert!(ours == core, "{format:?} {rounding:?}");
            }
        }
    }

    #[test]
    fn humanoid_lods_strictly_decrease_over_the_one_vertex_set() {
        let rig = crate::procgen::humanoid();
        // Two frames per clip: the LOD chain depends on the mesh (and four reference poses) only.
        let bake = prepare(&rig, &BakeOptions { frames: Some(2), ..Default::default() }).unwrap();
        let counts = &bake.stats.triangle_counts;
        assert_eq!(counts.len(), 5);
        assert_eq!(counts[0] as usize, VertexSet::from_rig(&rig).unwrap().indices.len() / 3);
        for w in counts.windows(2) {
            assert!(w[1] < w[0], "not strictly decreasing: {counts:?}");
        }
        assert!(bake.stats.stalled_lods.is_empty(), "{:?}", bake.stats.stalled_lods);
        // Within meshopt's tolerance of the default ratios 1, 0.316, 0.1, 0.0316, 0.01 (its last
        // collapses may overshoot a little; closed tubes never stop it early).
        let ratios = LodOptions::default().ratios().unwrap();
        for (c, r) in counts.iter().zip(&ratios) {
            let target = f64::from(*r) * f64::from(counts[0]);
            assert!(
                (f64::from(*c) - target).abs() <= 0.1 * target + 2.0,
                "{c} triangles for target {target}"
            );
        }
        let m = bake.manifest();
        let indices = bake.blob(m.indices.unwrap()).unwrap();
        assert!(
            indices.chunks_exact(4).all(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) < m.vertex_count)
        );
        assert_eq!(m.attachments.len(), 1, "the cap");
        assert_eq!(m.sockets[0].name, "head");
        // Strides of the gaits come through to the clip table.
        for clip in &m.clips {
            let source = rig.clips.iter().find(|c| c.name == clip.name).unwrap();
            let want = if source.locomotion { source.known_stride.unwrap() } else { 0.0 };
            assert_eq!(clip.stride, want, "{}", clip.name);
        }
    }
}
