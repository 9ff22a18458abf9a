//! The fluid mode (dynamic remeshing): bakes a sequence of meshes whose vertex and triangle counts
//! change from frame to frame ([`vat_core::modes::fluid`] describes the format and the decode).
//!
//! Frames are read **twice, one at a time** ([`FluidFrames`]): a first pass finds the box, the
//! busiest frame and the counts; a second encodes each frame's vertices and lookup entries and
//! drops it. A folder of OBJ files larger than memory therefore bakes within the budget of its
//! largest frame plus the encoded output.

use std::path::{Path, PathBuf};

use glam::Vec3;
use serde::Serialize;
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{
    Asset, ContainerWriter, FluidAnimation, FluidFrame, Lod, Manifest, Material, VatMode, VertexAnimation,
};
use vat_core::format::encoding::{self, NormalRounding, PositionBounds, VertexFormat};
use vat_core::format::layout::VertexTextureLayout;
use vat_core::format::reference::{self, FluidAnimationView};
use vat_core::instance::InstanceRecord;
use vat_core::modes::fluid::{COLLAPSED, lookup_texels_per_frame};

use crate::{BakeError, Result};

/// One frame of a fluid: an indexed triangle mesh (object space, metres).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FluidMesh {
    /// Vertex positions, metres.
    pub positions: Vec<[f32; 3]>,
    /// Unit normals, one per vertex.
    pub normals: Vec<[f32; 3]>,
    /// Triangles as indices into `positions`, in the source's order.
    pub triangles: Vec<[u32; 3]>,
}

/// A source of fluid frames, read one at a time (twice per bake, once per verify).
pub trait FluidFrames {
    /// Name of the asset and of its clip.
    fn name(&self) -> &str;
    /// Frames per second, `> 0`.
    fn fps(&self) -> f32;
    /// Frames in the sequence.
    fn frame_count(&self) -> usize;
    /// Frame `k` (`k < frame_count()`), checked: finite values, indices in range.
    ///
    /// # Errors
    /// Whatever reading the frame fails with, naming the frame's file.
    fn frame(&self, k: usize) -> Result<FluidMesh>;
    /// What the source leaves out, one line each.
    fn notes(&self) -> Vec<String>;
}

fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Checks a frame (finite values, unit-able normals, indices in range) and fills in smooth
/// normals where it has none.
fn checked(mesh: FluidMesh, part: &str) -> Result<FluidMesh> {
    Ok(checked_noting(mesh, part)?.0)
}

/// [`checked`], and whether the normals were recomputed.
fn checked_noting(mut mesh: FluidMesh, part: &str) -> Result<(FluidMesh, bool)> {
    if mesh.positions.iter().flatten().any(|v| !v.is_finite()) {
        return Err(invalid(part, "a vertex position is not finite"));
    }
    let n = mesh.positions.len();
    if let Some(t) = mesh.triangles.iter().find(|t| t.iter().any(|&i| i as usize >= n)) {
        return Err(invalid(part, format!("triangle {t:?} indexes past its {n} vertices")));
    }
    let usable = mesh.normals.len() == n
        && mesh.normals.iter().all(|v| v.iter().all(|c| c.is_finite()) && Vec3::from(*v).length() > 1e-12);
    if usable {
        for v in &mut mesh.normals {
            *v = Vec3::from(*v).normalize().to_array();
        }
    } else {
        let p: Vec<Vec3> = mesh.positions.iter().map(|&v| Vec3::from(v)).collect();
        let idx: Vec<u32> = mesh.triangles.iter().flatten().copied().collect();
        mesh.normals = crate::sequence::smooth_normals(&p, &idx).into_iter().map(|v| v.to_array()).collect();
    }
    let recomputed = !usable && !mesh.positions.is_empty();
    Ok((mesh, recomputed))
}

/// Fluid frames held in memory (the built-in splash, tests). A frame whose normals are missing or
/// degenerate gets smooth area-weighted normals.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidSequence {
    /// Name of the asset and its clip.
    pub name: String,
    /// Frames per second, `> 0`.
    pub fps: f32,
    /// The frames.
    pub frames: Vec<FluidMesh>,
}

impl FluidFrames for FluidSequence {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.frames.len()
    }
    fn frame(&self, k: usize) -> Result<FluidMesh> {
        let mesh = self.frames.get(k).cloned().ok_or(invalid(&self.name, format!("has no frame {k}")))?;
        checked(mesh, &format!("{} frame {k}", self.name))
    }
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A folder of per-frame OBJ files (name order, numbers compared as numbers), read one at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidFolder {
    name: String,
    fps: f32,
    files: Vec<PathBuf>,
    max_memory: u64,
    /// What reading the frames left out or recomputed, one line each (first read only).
    notes: std::cell::RefCell<Vec<String>>,
}

impl FluidFolder {
    /// Lists the frames of `dir` (OBJ files only) at `fps` frames per second; each file must fit
    /// `max_memory` bytes.
    ///
    /// # Errors
    /// [`BakeError::Io`] if the folder cannot be listed; [`BakeError::InvalidInput`] without OBJ
    /// frames (glTF frames are refused: bake those with `--mode soft`);
    /// [`BakeError::InvalidOption`] (`--fps`) for a bad rate.
    pub fn open(dir: &Path, fps: f32, max_memory: u64) -> Result<Self> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(BakeError::InvalidOption {
                option: "--fps",
                problem: format!("{fps} is not a positive, finite frame rate"),
            });
        }
        let files = crate::sequence::sequence_files(dir)?;
        if let Some(f) = files.iter().find(|f| !f.extension().is_some_and(|e| e.eq_ignore_ascii_case("obj")))
        {
            return Err(invalid(
                format!("{}", f.display()),
                "the fluid mode reads OBJ frames only (export the frames as OBJ)",
            ));
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "fluid".into());
        Ok(Self { name, fps, files, max_memory, notes: Default::default() })
    }
}

impl FluidFrames for FluidFolder {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.files.len()
    }
    fn frame(&self, k: usize) -> Result<FluidMesh> {
        let file = self.files.get(k).ok_or(invalid(&self.name, format!("has no frame {k}")))?;
        let part = format!("{}", file.display());
        // Decoded, a frame takes several times its text: it may hold an eighth of the budget.
        let limit = vat_core::files::ReadLimit::new(self.max_memory / 8, "--max-memory");
        let bytes = crate::input::read_in_folder(file, limit)?;
        // A frame without faces is an empty frame (a fluid may vanish), not an error.
        let has_faces = bytes.split(|&b| b == b'\n').any(|l| l.trim_ascii_start().starts_with(b"f "));
        if !has_faces {
            return Ok(FluidMesh::default());
        }
        let seq = crate::sequence::parse_obj_frame(&bytes, file, &self.name)?;
        let mut notes = seq.notes.clone();
        if seq.uvs.is_some() {
            notes.push(format!(
                "{part}: texture coordinates left out (the fluid mode stores positions and normals)"
            ));
        }
        let positions = seq.positions.into_iter().next().unwrap_or_default();
        let normals = seq.normals.and_then(|n| n.into_iter().next()).unwrap_or_default();
        let mesh = FluidMesh {
            positions: positions.iter().map(|v| v.to_array()).collect(),
            normals: normals.iter().map(|v| v.to_array()).collect(),
            triangles: seq.indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect(),
        };
        let (mesh, recomputed) = checked_noting(mesh, &part)?;
        if recomputed {
            notes.push(format!("{part}: normals missing or degenerate; recomputed smooth (area-weighted)"));
        }
        let mut all = self.notes.borrow_mut();
        for n in notes {
            if !all.contains(&n) {
                all.push(n);
            }
        }
        Ok(mesh)
    }
    fn notes(&self) -> Vec<String> {
        self.notes.borrow().clone()
    }
}

/// How a fluid is baked.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidBakeOptions {
    /// Largest texture width or height of the target device.
    pub max_texture_dim: u32,
    /// Encoding of the vertices (`--format`; every [`VertexFormat`] but
    /// [`VertexFormat::SkinResidual`], which needs a skin).
    pub format: VertexFormat,
    /// Whether the clip loops (a simulation usually does not: its last frame does not lead back
    /// to its first).
    pub looping: bool,
}

impl Default for FluidBakeOptions {
    fn default() -> Self {
        Self { max_texture_dim: 16384, format: VertexFormat::Packed64, looping: false }
    }
}

/// Figures of a fluid bake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FluidBakeStats {
    /// Frames.
    pub frames: u32,
    /// Triangles of the pool (the busiest frame's).
    pub pool_triangles: u32,
    /// Vertices of all frames together (texels of the vertex texture).
    pub vertices: u64,
    /// Triangles of all frames together.
    pub triangles: u64,
    /// Most vertices of one frame.
    pub max_frame_vertices: u32,
    /// Bytes of the vertex textures.
    pub vertex_texture_bytes: u64,
    /// Bytes of the lookup texture (4 per pool corner per frame).
    pub lookup_texture_bytes: u64,
    /// The size of the whole file, bytes.
    pub file_bytes: u64,
    /// Position error bound of the format in the fluid's box, per axis, millimetres.
    pub position_bound_mm: [f64; 3],
    /// What the bake left out, one line each; a note that repeats per frame is said once, with the
    /// count of frames ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
}

/// Bakes `source` into `.vat` bytes (see the module docs for the two passes).
///
/// # Errors
/// [`BakeError::InvalidInput`] without frames, without a single triangle, or for a bad frame;
/// container and layout errors (e.g. a texture larger than `max_texture_dim` allows).
pub fn bake_fluid(source: &dyn FluidFrames, options: &FluidBakeOptions) -> Result<(Vec<u8>, FluidBakeStats)> {
    let frame_count = source.frame_count();
    if frame_count == 0 {
        return Err(invalid(source.name(), "has no frames"));
    }
    if options.format == VertexFormat::SkinResidual {
        return Err(BakeError::InvalidOption {
            option: "--format skin-residual",
            problem: "a fluid's topology changes every frame: there is no skin to correct; bake it in a \
                      format with a texel per vertex (packed64, unorm16, f16, f32, unorm8, split8)"
                .into(),
        });
    }
    // Pass 1: box and counts.
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    let mut counts = Vec::with_capacity(frame_count);
    for k in 0..frame_count {
        let mesh = source.frame(k)?;
        for p in &mesh.positions {
            for a in 0..3 {
                lo[a] = lo[a].min(p[a]);
                hi[a] = hi[a].max(p[a]);
            }
        }
        let v = u32::try_from(mesh.positions.len()).map_err(|_| invalid(source.name(), "frame too large"))?;
        let t = u32::try_from(mesh.triangles.len()).map_err(|_| invalid(source.name(), "frame too large"))?;
        counts.push((v, t));
    }
    let pool = counts.iter().map(|c| c.1).max().unwrap_or(0);
    if pool == 0 {
        return Err(invalid(source.name(), "has no triangle in any frame"));
    }
    let corners = pool.checked_mul(3).ok_or(invalid(source.name(), "pool too large"))?;
    let total: u64 = counts.iter().map(|c| u64::from(c.0)).sum();
    let total_u32 =
        u32::try_from(total).map_err(|_| invalid(source.name(), "more than 2^32 vertices in all"))?;
    let bounds = PositionBounds::from_points([lo, hi])?;
    let bits = if options.format == VertexFormat::Packed64 {
        encoding::allocate_position_bits(bounds.extent)
    } else {
        [0; 3]
    };
    let layout = VertexTextureLayout::new(total_u32, 1, options.max_texture_dim)?;
    let lookup_layout =
        VertexTextureLayout::new(lookup_texels_per_frame(pool), frame_count as u32, options.max_texture_dim)?;

    // Pass 2: encode each frame's vertices and lookup entries.
    let mut textures: Vec<Vec<u8>> = options.format.texel_formats().iter().map(|_| Vec::new()).collect();
    let mut lookup = Vec::with_capacity(usize::try_from(lookup_layout.byte_len(16)).unwrap_or(0));
    let per_frame = u64::from(lookup_layout.vertex_count) * 4;
    let mut frames = Vec::with_capacity(frame_count);
    let mut first = 0u32;
    for (k, &(v, t)) in counts.iter().enumerate() {
        let mesh = source.frame(k)?;
        if (mesh.positions.len(), mesh.triangles.len()) != (v as usize, t as usize) {
            return Err(invalid(source.name(), format!("frame {k} changed between the two reads")));
        }
        encoding::encode_vertex_texels(
            options.format,
            bits,
            &bounds,
            &mesh.positions,
            &mesh.normals,
            NormalRounding::Nearest,
            &mut textures,
        )?;
        for &i in mesh.triangles.iter().flatten() {
            lookup.extend_from_slice(&(first + i).to_le_bytes());
        }
        for _ in u64::from(t) * 3..per_frame {
            lookup.extend_from_slice(&COLLAPSED.to_le_bytes());
        }
        frames.push(FluidFrame { first_vertex: first, vertex_count: v, triangle_count: t });
        first += v;
    }
    lookup.resize(usize::try_from(lookup_layout.byte_len(16)).unwrap_or(lookup.len()), 0);
    for (tex, f) in textures.iter_mut().zip(options.format.texel_formats()) {
        tex.resize(usize::try_from(layout.byte_len(f.bytes_per_texel())).unwrap_or(tex.len()), 0);
    }

    let mut map = ClipRowMap::new();
    let fps = source.fps();
    let (mode, duration) = if options.looping {
        (ClipMode::Looping, frame_count as f32 / fps)
    } else {
        (ClipMode::OneShot, (frame_count as f32 - 1.0).max(0.0) / fps)
    };
    map.push(source.name(), duration, fps, mode, 0.0)?;
    let stored = map.total_frames() as usize;
    if stored != frame_count {
        return Err(invalid(source.name(), format!("{frame_count} frames at {fps} fps store as {stored}")));
    }

    let mut writer = ContainerWriter::new();
    let vertex_bytes: u64 = textures.iter().map(|t| t.len() as u64).sum();
    let texture_ids = textures.into_iter().map(|t| writer.add_blob(t)).collect();
    let lookup_bytes = lookup.len() as u64;
    let lookup_id = writer.add_blob(lookup);
    let index_id = writer.add_blob((0..corners).flat_map(u32::to_le_bytes).collect::<Vec<u8>>());
    let mut manifest = Manifest::new(source.name().to_owned(), corners);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(index_id);
    manifest.lods = vec![Lod {
        first_index: 0,
        index_count: corners,
        triangle_count: pool,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    manifest.vertex_animation = Some(VertexAnimation {
        layout,
        format: options.format,
        bounds,
        position_bits: bits,
        textures: texture_ids,
        tangents: None,
    });
    // One material: a liquid's blue, smooth and dielectric.
    manifest.materials = vec![Material {
        name: "fluid".into(),
        base_color_factor: [0.18, 0.42, 0.85, 1.0],
        metallic_factor: 0.0,
        roughness_factor: 0.15,
        double_sided: true,
        ..Material::default()
    }];
    manifest.fluid_animation =
        Some(FluidAnimation { pool_triangles: pool, frames, lookup_layout, lookup: lookup_id });
    let bytes = writer.finish(manifest)?;
    let bound = encoding::position_error_bound(options.format, bits, &bounds);
    let stats = FluidBakeStats {
        frames: frame_count as u32,
        pool_triangles: pool,
        vertices: total,
        triangles: counts.iter().map(|c| u64::from(c.1)).sum(),
        max_frame_vertices: counts.iter().map(|c| c.0).max().unwrap_or(0),
        vertex_texture_bytes: vertex_bytes,
        lookup_texture_bytes: lookup_bytes,
        file_bytes: bytes.len() as u64,
        position_bound_mm: bound.map(|b| f64::from(b) * 1e3),
        notes: crate::notes::collapse(source.notes()),
    };
    Ok((bytes, stats))
}

/// The angle between two non-zero vectors, degrees, in f64 (`atan2(|a x b|, a . b)`: exact near 0,
/// where `acos` of an f32 dot product is not).
fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
    let (a, b) = (a.map(f64::from), b.map(f64::from));
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let cross = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    cross.atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]).to_degrees()
}

/// What [`verify_fluid`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FluidVerifyReport {
    /// Whether every check passed.
    pub passed: bool,
    /// Frames compared.
    pub frames: u32,
    /// Corner-frames decoded (live and collapsed).
    pub corner_frames: u64,
    /// Live corner-frames compared with the source.
    pub vertex_frames: u64,
    /// Largest position error per axis, millimetres.
    pub position_max_error_mm: [f64; 3],
    /// The format's bound per axis plus f32 rounding, millimetres.
    pub position_bound_mm: [f64; 3],
    /// Largest normal error, degrees.
    pub normal_max_error_deg: f64,
    /// The format's normal bound plus f32 rounding, degrees.
    pub normal_bound_deg: f64,
    /// One line per failed check.
    pub failures: Vec<String>,
}

/// Decodes every pool corner at every frame of `asset` with vat-core's CPU reference
/// ([`reference::decode_fluid_vertex`], the shader's path, instance at the origin) and compares it
/// with `source`, frame by frame: the frame's triangle and vertex counts, each live corner's
/// position against the format's bound (plus 4 ulps of the box's largest coordinate) and its normal
/// against the format's normal bound (plus 1e-4 degrees of f32 rounding), and every other corner
/// collapsed.
///
/// # Errors
/// [`BakeError::InvalidInput`] if `asset` is not a fluid bake; read errors of `source`.
pub fn verify_fluid(asset: &Asset<'_>, source: &dyn FluidFrames) -> Result<FluidVerifyReport> {
    let view = FluidAnimationView::from_asset(asset)
        .map_err(|e| invalid(&asset.manifest().name, format!("is not a fluid bake: {e}")))?;
    let fa = view.fluid;
    let va = &view.vertices;
    let bound = encoding::position_error_bound(va.format, va.position_bits, &va.bounds);
    let magnitude = (0..3)
        .map(|a| va.bounds.min[a].abs().max((va.bounds.min[a] + va.bounds.extent[a]).abs()))
        .fold(0.0f32, f32::max);
    let slack = 4.0 * f64::from(magnitude) * f64::from(f32::EPSILON);
    let position_bound = bound.map(|b| f64::from(b) + slack);
    let normal_bound = f64::from(encoding::normal_error_bound_degrees(va.format)) + 1e-4;
    let mut failures = Vec::new();
    let mut p_max = [0.0f64; 3];
    let mut n_max = 0.0f64;
    let (mut corner_frames, mut vertex_frames) = (0u64, 0u64);
    let clip = asset.manifest().clips.first().ok_or(invalid(&asset.manifest().name, "has no clip"))?;
    let frames = source.frame_count();
    if frames != fa.frames.len() {
        failures.push(format!("the file has {} frames, the source {frames}", fa.frames.len()));
    }
    for (f, stored) in fa.frames.iter().enumerate().take(frames) {
        let mesh = source.frame(f)?;
        if (stored.vertex_count as usize, stored.triangle_count as usize)
            != (mesh.positions.len(), mesh.triangles.len())
        {
            failures.push(format!(
                "frame {f}: {} vertices / {} triangles stored, the source has {} / {}",
                stored.vertex_count,
                stored.triangle_count,
                mesh.positions.len(),
                mesh.triangles.len()
            ));
            continue;
        }
        let n = clip.frame_count as f32;
        let phase = if clip.frame_count <= 1 {
            0.0
        } else if clip.mode == ClipMode::Looping {
            f as f32 / n
        } else {
            f as f32 / (n - 1.0)
        };
        let record = InstanceRecord { clip_a: 0, phase_offset_a: phase, rate_a: 0.0, ..Default::default() };
        let shown = reference::fluid_frame(va.clips, &record, 0.0)?;
        if shown as usize != f {
            failures.push(format!("frame {f}: playback at its phase shows frame {shown}"));
            continue;
        }
        let mut bad_corners = 0u64;
        for c in 0..view.corner_count {
            corner_frames += 1;
            let decoded = reference::decode_fluid_vertex(&view, &record, 0.0, c)?;
            let source_vertex = mesh.triangles.get(c as usize / 3).map(|t| t[c as usize % 3] as usize);
            match (decoded, source_vertex) {
                (None, None) => {}
                (Some(d), Some(v)) => {
                    vertex_frames += 1;
                    let (p, nrm) = (mesh.positions[v], mesh.normals[v]);
                    let mut bad = false;
                    for a in 0..3 {
                        let e = (f64::from(d.object_position[a]) - f64::from(p[a])).abs();
                        p_max[a] = p_max[a].max(e);
                        bad |= e.is_nan() || e > position_bound[a];
                    }
                    let angle = angle_deg(d.object_normal, nrm);
                    n_max = n_max.max(angle);
                    bad |= angle.is_nan() || angle > normal_bound;
                    bad_corners += u64::from(bad);
                }
                (Some(_), None) => bad_corners += 1,
                (None, Some(_)) => bad_corners += 1,
            }
        }
        if bad_corners > 0 {
            failures.push(format!(
                "frame {f}: {bad_corners} corners outside their bound or wrongly collapsed / live"
            ));
        }
    }
    Ok(FluidVerifyReport {
        passed: failures.is_empty(),
        frames: frames as u32,
        corner_frames,
        vertex_frames,
        position_max_error_mm: p_max.map(|e| e * 1e3),
        position_bound_mm: position_bound.map(|e| e * 1e3),
        normal_max_error_deg: n_max,
        normal_bound_deg: normal_bound,
        failures,
    })
}

/// Fluid frames as a [`crate::Source`]: [`bake_fluid`] with the options that apply (the texture
/// size, `--format`, and a looping clip when `--loop` names any), [`verify_fluid`].
impl crate::Source for Box<dyn FluidFrames> {
    fn mode(&self) -> VatMode {
        VatMode::Fluid
    }

    fn bake(
        &self,
        options: &crate::prepare::BakeOptions,
        _progress: &mut dyn FnMut(crate::prepare::Progress),
    ) -> Result<crate::Baked> {
        let options = FluidBakeOptions {
            max_texture_dim: options.max_texture_dim,
            format: options.format,
            looping: !options.looping.is_empty(),
        };
        let (bytes, stats) = bake_fluid(self.as_ref(), &options)?;
        Ok(crate::Baked {
            file: crate::BakedFile::Bytes(bytes),
            figures: Box::new(FluidFigures { stats, format: options.format }),
        })
    }

    fn verify(
        &self,
        asset: &Asset<'_>,
        _options: &crate::verify::VerifyOptions,
    ) -> Result<Box<dyn crate::Report>> {
        Ok(Box::new(verify_fluid(asset, self.as_ref())?))
    }
}

/// What a fluid bake says: its figures and the vertex format.
struct FluidFigures {
    stats: FluidBakeStats,
    format: VertexFormat,
}

impl crate::Figures for FluidFigures {
    fn write_summary(&self, out: &mut dyn std::io::Write, what: &str, path: &Path) -> std::io::Result<()> {
        let stats = &self.stats;
        writeln!(
            out,
            "baked {what} -> {} (fluid, {:?}): {} frames; pool of {} triangles (the busiest frame); {} vertices and {} \
             triangles in all, at most {} vertices in a frame; vertex texture {} bytes, lookup texture {} bytes \
             (4 per pool corner per frame); {} bytes in all",
            path.display(),
            self.format,
            stats.frames,
            stats.pool_triangles,
            stats.vertices,
            stats.triangles,
            stats.max_frame_vertices,
            stats.vertex_texture_bytes,
            stats.lookup_texture_bytes,
            stats.file_bytes
        )?;
        writeln!(
            out,
            "  frames are never interpolated (each has its own topology); cross-fades do not apply"
        )?;
        for note in &stats.notes {
            writeln!(out, "  note: {note}")?;
        }
        Ok(())
    }
}

impl crate::Report for FluidVerifyReport {
    fn passed(&self) -> bool {
        self.passed
    }

    fn failures(&self) -> &[String] {
        &self.failures
    }

    fn write_lines(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let r = self;
        let fmt3 = crate::source::fmt3;
        writeln!(
            out,
            "  verified fluid: {} frames, {} corner-frames ({} live): position max {} mm (bound {} mm); normal max \
             {:.5} deg (bound {:.5} deg); every other corner collapsed: {}",
            r.frames,
            r.corner_frames,
            r.vertex_frames,
            fmt3(r.position_max_error_mm),
            fmt3(r.position_bound_mm),
            r.normal_max_error_deg,
            r.normal_bound_deg,
            if r.passed { "PASSED" } else { "FAILED" }
        )?;
        for f in &r.failures {
            writeln!(out, "  failure: {f}")?;
        }
        Ok(())
    }

    fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;

    /// A strip of `k` quads rising with the frame: vertex and triangle counts change every frame.
    fn strips(frames: usize) -> FluidSequence {
        let frames = (0..frames)
            .map(|f| {
                let k = 1 + f % 4;
                let mut m = FluidMesh::default();
                for i in 0..=k {
                    let x = i as f32 * 0.1;
                    m.positions.push([x, 0.05 * f as f32, 0.0]);
                    m.positions.push([x, 0.05 * f as f32 + 0.2, 0.0]);
                }
                for i in 0..k as u32 {
                    m.triangles.push([2 * i, 2 * i + 2, 2 * i + 1]);
                    m.triangles.push([2 * i + 1, 2 * i + 2, 2 * i + 3]);
                }
                m
            })
            .collect();
        FluidSequence { name: "strips".into(), fps: 24.0, frames }
    }

    #[test]
    fn a_fluid_bakes_reads_back_and_verifies_in_every_format() {
        let source = strips(9);
        for format in VertexFormat::TEXTURED {
            let options = FluidBakeOptions { format, ..Default::default() };
            let (bytes, stats) = bake_fluid(&source, &options).unwrap();
            assert_eq!(stats.pool_triangles, 8);
            assert_eq!(stats.frames, 9);
            let asset = Asset::parse(&bytes).unwrap();
            assert_eq!(asset.manifest().mode(), vat_core::container::VatMode::Fluid);
            let report = verify_fluid(&asset, &source).unwrap();
            assert!(report.passed, "{format:?}: {report:?}");
            assert_eq!(report.corner_frames, 9 * 24);
            assert_eq!(report.vertex_frames, (0..9).map(|f| 6 * (1 + f % 4)).sum::<u64>());
        }
    }

    #[test]
    fn verify_fails_against_a_different_source() {
        let source = strips(6);
        let (bytes, _) = bake_fluid(&source, &FluidBakeOptions::default()).unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let mut moved = source.clone();
        moved.frames[3].positions[1][1] += 0.01;
        let report = verify_fluid(&asset, &moved).unwrap();
        assert!(!report.passed);
        assert!(report.failures[0].starts_with("frame 3:"), "{:?}", report.failures);
        let mut fewer = source.clone();
        fewer.frames[2].triangles.pop();
        assert!(!verify_fluid(&asset, &fewer).unwrap().passed);
    }

    #[test]
    fn bad_frames_are_typed_errors() {
        let mut s = strips(3);
        s.frames[1].positions[0][0] = f32::NAN;
        assert!(matches!(bake_fluid(&s, &FluidBakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        let mut s = strips(3);
        s.frames[2].triangles[0][1] = 99;
        assert!(matches!(bake_fluid(&s, &FluidBakeOptions::default()), Err(BakeError::InvalidInput { .. })));
        let empty = FluidSequence { name: "e".into(), fps: 24.0, frames: vec![FluidMesh::default(); 3] };
        assert!(matches!(
            bake_fluid(&empty, &FluidBakeOptions::default()),
            Err(BakeError::InvalidInput { .. })
        ));
    }

    #[test]
    fn an_obj_folder_with_changing_topology_and_an_empty_frame_bakes() {
        let dir = std::env::temp_dir().join(format!("vat-fluid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = strips(4);
        for (k, m) in source.frames.iter().enumerate() {
            let mut text = String::new();
            for p in &m.positions {
                text += &format!("v {} {} {}\n", p[0], p[1], p[2]);
            }
            for t in &m.triangles {
                text += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
            }
            std::fs::write(dir.join(format!("frame{}.obj", k + 1)), text).unwrap();
        }
        std::fs::write(dir.join("frame10.obj"), "# nothing left\n").unwrap();
        let folder = FluidFolder::open(&dir, 24.0, 1 << 30).unwrap();
        assert_eq!(folder.frame_count(), 5);
        let (bytes, stats) = bake_fluid(&folder, &FluidBakeOptions::default()).unwrap();
        assert_eq!(stats.pool_triangles, 8);
        let asset = Asset::parse(&bytes).unwrap();
        let report = verify_fluid(&asset, &folder).unwrap();
        assert!(report.passed, "{:?}", report.failures);
        assert_eq!(asset.manifest().fluid_animation.as_ref().unwrap().frames[4].triangle_count, 0);
        // The OBJ files have no normals: the recomputation is said once, with the count of frames.
        let recomputed: Vec<&String> =
            stats.notes.iter().filter(|n| n.contains("recomputed smooth")).collect();
        assert_eq!(recomputed.len(), 1, "{:?}", stats.notes);
        assert!(recomputed[0].contains("(in 4 frames: "), "{recomputed:?}");
        assert!(
            recomputed[0].contains("frame1.obj ... ") && recomputed[0].ends_with("frame4.obj)"),
            "{recomputed:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod splash_tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn the_splash_changes_topology_is_deterministic_closed_and_verifies() {
        let a = crate::procgen::fluid_by_name("splash").unwrap();
        let b = crate::procgen::fluid_by_name("splash").unwrap();
        assert_eq!(a, b);
        let tris: Vec<usize> = a.frames.iter().map(|f| f.triangles.len()).collect();
        let distinct: std::collections::BTreeSet<usize> = tris.iter().copied().collect();
        assert!(distinct.len() > a.frames.len() / 2, "triangle counts {tris:?}");
        // Marching tetrahedra on a grid whose box holds the liquid: every edge is shared by two
        // triangles (a closed surface) except where the surface leaves the grid's box.
        for f in &a.frames {
            let mut edges = std::collections::HashMap::new();
            for t in &f.triangles {
                for k in 0..3 {
                    let (u, v) = (t[k], t[(k + 1) % 3]);
                    *edges.entry((u.min(v), u.max(v))).or_insert(0u32) += 1;
                }
            }
            let open = edges.values().filter(|&&n| n != 2).count();
            assert!(open * 20 < edges.len().max(1), "{open} of {} edges open", edges.len());
        }
        let (bytes, stats) = bake_fluid(&a, &FluidBakeOptions::default()).unwrap();
        assert_eq!(stats.pool_triangles as usize, *tris.iter().max().unwrap());
        let report = verify_fluid(&Asset::parse(&bytes).unwrap(), &a).unwrap();
        assert!(report.passed, "{:?}", report.failures);
    }
}

#[cfg(test)]
mod hostile_tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use vat_core::Error;
    use vat_core::container::BlobId;

    use super::*;

    /// Re-encodes a baked fluid with `edit` applied to its manifest and blobs: the writer runs the
    /// reader's validation, so a refusal here is the reader's typed error.
    fn rebuilt(
        bytes: &[u8],
        edit: impl FnOnce(&mut Manifest, &mut Vec<Vec<u8>>),
    ) -> vat_core::Result<Vec<u8>> {
        let asset = Asset::parse(bytes).unwrap();
        let mut manifest = asset.manifest().clone();
        let mut blobs: Vec<Vec<u8>> =
            (0..manifest.blobs.len()).map(|i| asset.blob(BlobId(i as u32)).to_vec()).collect();
        edit(&mut manifest, &mut blobs);
        let mut writer = ContainerWriter::new();
        for b in blobs {
            writer.add_blob(b);
        }
        writer.finish(manifest)
    }

    #[test]
    fn hostile_fluid_manifests_and_lookups_give_typed_errors() {
        let source = tests_source();
        let (bytes, _) = bake_fluid(&source, &FluidBakeOptions::default()).unwrap();
        // Unchanged, it rebuilds to the same bytes.
        assert_eq!(rebuilt(&bytes, |_, _| {}).unwrap(), bytes);
        fn lookup(m: &Manifest) -> usize {
            m.fluid_animation.as_ref().unwrap().lookup.0 as usize
        }
        type Edit = fn(&mut Manifest, &mut Vec<Vec<u8>>);
        type Check = fn(&Error) -> bool;
        let cases: Vec<(&str, Edit, Check)> = vec![
            (
                "live corner past its frame",
                |m, b| {
                    let at = lookup(m);
                    b[at][0..4].copy_from_slice(&9999u32.to_le_bytes());
                },
                |e| matches!(e, Error::IndexOutOfRange { .. }),
            ),
            (
                "live corner of another frame",
                |m, b| {
                    let at = lookup(m);
                    let first = m.fluid_animation.as_ref().unwrap().frames[1].first_vertex;
                    b[at][0..4].copy_from_slice(&first.to_le_bytes());
                },
                |e| matches!(e, Error::IndexOutOfRange { .. }),
            ),
            (
                "collapsed corner pointing at a vertex",
                |m, b| {
                    let at = lookup(m);
                    // Frame 0 has 2 triangles (6 live corners) of a pool of 8.
                    b[at][4 * 7..4 * 8].copy_from_slice(&0u32.to_le_bytes());
                },
                |e| matches!(e, Error::OutOfRange { what: "fluid lookup entry of a collapsed corner", .. }),
            ),
            (
                "short lookup",
                |m, b| b[lookup(m)].truncate(32),
                |e| matches!(e, Error::BlobSizeMismatch { .. }),
            ),
            (
                "frames not back to back",
                |m, _| m.fluid_animation.as_mut().unwrap().frames[2].first_vertex += 1,
                |e| matches!(e, Error::ManifestMismatch { .. }),
            ),
            (
                "more triangles than the pool",
                |m, _| m.fluid_animation.as_mut().unwrap().frames[0].triangle_count = 9,
                |e| matches!(e, Error::OutOfRange { what: "fluid frame triangle count", .. }),
            ),
            (
                "a frame entry missing",
                |m, _| {
                    m.fluid_animation.as_mut().unwrap().frames.pop();
                },
                |e| matches!(e, Error::ManifestMismatch { .. }),
            ),
            (
                "pool that does not match the corners",
                |m, _| m.fluid_animation.as_mut().unwrap().pool_triangles = 7,
                |e| matches!(e, Error::ManifestMismatch { .. }),
            ),
            (
                "zero pool",
                |m, _| m.fluid_animation.as_mut().unwrap().pool_triangles = 0,
                |e| matches!(e, Error::ZeroCount { .. }),
            ),
            (
                "no vertex animation",
                |m, _| m.vertex_animation = None,
                |e| matches!(e, Error::OutOfRange { what: "fluid animation", .. }),
            ),
            (
                "vertex texture of the wrong size",
                |m, _| m.vertex_animation.as_mut().unwrap().layout.vertex_count += 1,
                |e| matches!(e, Error::ManifestMismatch { .. } | Error::OutOfRange { .. }),
            ),
        ];
        for (what, edit, check) in cases {
            match rebuilt(&bytes, edit) {
                Err(e) => assert!(check(&e), "{what}: unexpected error {e:?}"),
                Ok(_) => panic!("{what}: accepted"),
            }
        }
    }

    fn tests_source() -> FluidSequence {
        // The strips of the bake tests: 1..=4 quads per frame, a pool of 8 triangles.
        let frames = (0..6)
            .map(|f| {
                let k = 1 + f % 4;
                let mut m = FluidMesh::default();
                for i in 0..=k {
                    m.positions.push([i as f32 * 0.1, 0.05 * f as f32, 0.0]);
                    m.positions.push([i as f32 * 0.1, 0.05 * f as f32 + 0.2, 0.0]);
                }
                for i in 0..k as u32 {
                    m.triangles.push([2 * i, 2 * i + 2, 2 * i + 1]);
                    m.triangles.push([2 * i + 1, 2 * i + 2, 2 * i + 3]);
                }
                m
            })
            .collect();
        FluidSequence { name: "strips".into(), fps: 24.0, frames }
    }
}
