//! Bake options, validation, memory estimates and the prepared result.

use super::*;

/// What to bake and how.
#[derive(Debug, Clone, PartialEq)]
pub struct BakeOptions {
    /// Samples per second of every clip (`--fps`, default 30) not named in `clip_fps`. Finite,
    /// `> 0`. Ignored when `frames` is set.
    pub fps: f32,
    /// Samples per second of the named clips, in place of `fps`: a source whose clips are frames
    /// keyed at their own rates (an OpenVAT bake's clips at 12, 24 and 48 fps) stores each of its
    /// frames once, neither dropping the frames of a faster clip nor interpolating a slower one's
    /// ([`crate::interop::ImportedBake::at_own_rates`] sets it). Each rate finite and `> 0`; a name
    /// no clip has is refused. Ignored when `frames` is set. Default empty.
    pub clip_fps: Vec<(String, f32)>,
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
    /// The bounds of [`VertexFormat::SkinResidual`] (`--residual-mm`, `--residual-deg`; default
    /// 0.5 mm and 1 degree): every stored frame of every vertex decodes within them of the source.
    /// Ignored by the other formats.
    pub residual_bounds: vat_core::format::skin_residual::ResidualBounds,
    /// `--fit-bones`: the bones of the rigid skin fitted to a source without a skeleton (a mesh
    /// sequence) under [`VertexFormat::SkinResidual`], `1..=1024` ([`crate::fit::MAX_BONES`]; at most
    /// one a vertex). `None` (the default) tries counts from 32 and keeps the one whose file is
    /// smallest (each count tried is said in [`BakeStats::notes`]). Refused for a source with its
    /// own skin; ignored by the other formats.
    pub fit_bones: Option<u32>,
}

impl Default for BakeOptions {
    fn default() -> Self {
        Self {
            fps: 30.0,
            clip_fps: Vec::new(),
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
            residual_bounds: vat_core::format::skin_residual::ResidualBounds::default(),
            fit_bones: None,
        }
    }
}

/// The bytes the dominant allocations of a bake of `rig` with `options` and `total_frames` frames in
/// all need at once, in `u64` (saturating): the vertex textures (and tangent texture) laid out in the
/// layout [`prepare`] would use, twice (the textures, then the `.vat` bytes read back for
/// verification); with [`VertexFormat::SkinResidual`] the residual stream and texture (16 bytes a
/// vertex a frame at most), a mesh sequence's source frames (24) and the encoding's working set;
/// the live morph layer when baked; verification's block of fresh frames; a
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
    if options.format == VertexFormat::SkinResidual {
        // The residual stream and its texture (at most 64 bits a vertex a frame each); a fitted
        // skin's source frames, held (24 bytes a vertex a frame); the encoding's working set: per
        // thread one frame of the source and of the skin (48 bytes a vertex), its vertices' widths
        // so far and the fields of its frames in flight (20 bytes a vertex a frame), and the
        // merged widths.
        let extent = std::mem::size_of::<vat_core::format::skin_residual::ResidualExtent>() as u64;
        let threads = rayon::current_num_threads() as u64;
        let held = if rig.streamed_body.is_some() { layout.texel_count().saturating_mul(24) } else { 0 };
        let per_thread = 48 + extent + 20 * super::residual::RESIDUAL_FRAMES_PER_THREAD as u64;
        let working = u64::from(vertices).saturating_mul(threads.saturating_mul(per_thread) + extent);
        bytes = bytes
            .saturating_add(layout.texel_count().saturating_mul(16))
            .saturating_add(held)
            .saturating_add(working);
    }
    if options.bones {
        let bone_texels =
            nodes.saturating_mul(u64::from(vat_core::format::layout::TEXELS_PER_BONE)).saturating_mul(frames);
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
    // Bone mode's path is decoded beside the vertex texture's frame (the skin-residual format
    // decodes its skin in place).
    let bone_frame = options.bones && options.format != VertexFormat::SkinResidual;
    let block = crate::verify::block_bytes_per_vertex(
        options.tangents,
        reduced,
        bone_frame,
        rayon::current_num_threads(),
    )
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
pub(super) fn check_memory_budget(rig: &Rig, options: &BakeOptions, total_frames: u32) -> Result<()> {
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
    /// What the animation takes per vertex per frame, bytes: `bytes_per_vertex_frame` for the
    /// formats with a texel per vertex per frame, and for [`VertexFormat::SkinResidual`] its
    /// residual and skin ([`vat_core::format::skin_residual::bytes_per_vertex_frame`]).
    pub animation_bytes_per_vertex_frame: f64,
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

impl BakeStats {
    /// What the animation takes per vertex per frame, as a summary line says it: the vertex
    /// format's bytes (`"8"`), or for [`VertexFormat::SkinResidual`], which stores no texel per
    /// vertex per frame, `"0.636 (residual and skin)"`.
    pub fn animation_size_text(&self) -> String {
        if self.bytes_per_vertex_frame == 0 && self.animation_bytes_per_vertex_frame > 0.0 {
            format!("{:.3} (residual and skin)", self.animation_bytes_per_vertex_frame)
        } else {
            self.bytes_per_vertex_frame.to_string()
        }
    }
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
    pub(super) manifest: Manifest,
    pub(super) blobs: Vec<Arc<Vec<u8>>>,
    pub(super) vertex_order: Vec<u32>,
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

    /// Consumes the bake and gives back its largest blob's buffer (the vertex animation texture
    /// of a large bake), emptied but with its memory, when no other bake shares it; otherwise an
    /// empty buffer. A caller that reads the written file back can read it into this buffer:
    /// hundreds of megabytes of fresh memory would otherwise be faulted in again.
    pub fn into_reusable_buffer(self) -> Vec<u8> {
        let largest = self.blobs.into_iter().max_by_key(|b| b.capacity());
        let mut buffer = largest.and_then(|b| Arc::try_unwrap(b).ok()).unwrap_or_default();
        buffer.clear();
        buffer
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
pub(super) struct BlobTable {
    pub(super) blobs: Vec<Arc<Vec<u8>>>,
    pub(super) deduplicated: u32,
}

impl BlobTable {
    pub(super) fn add(&mut self, bytes: Vec<u8>) -> BlobId {
        self.add_shared(Arc::new(bytes))
    }

    pub(super) fn add_shared(&mut self, bytes: Arc<Vec<u8>>) -> BlobId {
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
pub(super) struct ClipPlan {
    /// Rig clip index of each baked clip, in texture order.
    pub(super) sources: Vec<usize>,
    /// Frames of each baked clip.
    pub(super) row_map: ClipRowMap,
    pub(super) warnings: Vec<String>,
    pub(super) looping: Vec<ClipLooping>,
}

impl ClipPlan {
    /// `(rig clip, absolute time)` of every frame, in texture order.
    pub(super) fn samples(&self, rig: &Rig) -> Vec<(usize, f32)> {
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

pub(super) fn invalid_option(option: &'static str, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidOption { option, problem: problem.into() }
}

pub(super) fn invalid_input(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Checks the options that do not depend on the rig.
/// Checks the options that do not depend on the rig (rates, counts, sizes, LOD ratios), so a caller
/// can refuse them before reading any input; [`prepare`] checks them again.
///
/// # Errors
/// [`BakeError::InvalidOption`] naming the option: `--fps` or a clip's rate not finite and
/// positive, `--frames 0`, `--max-texture-dim` or `--material-texture-size` outside 1 to 16384, an
/// empty `--clips`, LOD counts or ratios out of range.
pub fn validate_options(options: &BakeOptions) -> Result<()> {
    if !(options.fps.is_finite() && options.fps > 0.0) {
        return Err(invalid_option("--fps", format!("{}; expected a finite number > 0", options.fps)));
    }
    if let Some((name, fps)) = options.clip_fps.iter().find(|(_, f)| !(f.is_finite() && *f > 0.0)) {
        return Err(invalid_option(
            "clip fps",
            format!("{fps} for clip \"{name}\"; expected a finite number > 0"),
        ));
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
