//! `vat bake`, `vat verify` and `vat export-glb`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use vat_bake::impostor::{ImpostorImages, ImpostorOptions};
use vat_bake::interop::houdini::HoudiniFiles;
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{self, BakeOptions, Progress};
use vat_bake::verify::VerifyOptions;
use vat_bake::{BakedFile, Report, Source, export};
use vat_core::container::{Asset, Limits, VatMode};
use vat_core::format::encoding::{NormalRounding, VertexFormat};
use vat_core::format::impostor::{ViewCoverage, ViewGrid};
use vat_procgen as procgen;

use crate::source::{FluidInput, Input, Load, RigSource, RigidInput, SpriteInput};

/// Vertex texture formats selectable on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// 8 bytes per vertex per frame: 40-bit position + 24-bit octahedral normal (default).
    Packed64,
    /// RGBA16Uint positions + RG16Uint octahedral normals (12 bytes).
    Unorm16,
    /// RGBA16Float positions + RG16Float octahedral normals (12 bytes).
    F16,
    /// RGBA32Float positions + RG32Float octahedral normals (24 bytes).
    F32,
    /// RGBA8Uint positions + RG8Uint octahedral normals (6 bytes).
    Unorm8,
    /// Unorm16 split into two RGBA8 textures + RGBA8 normals (12 bytes).
    Split8,
    /// The compressed tier: the source's own skin (bone texture) plus a per-vertex residual, every
    /// frame within --residual-mm and --residual-deg (skeletal sources; about 0.3 to 1 byte).
    SkinResidual,
}

impl From<FormatArg> for VertexFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Packed64 => VertexFormat::Packed64,
            FormatArg::Unorm16 => VertexFormat::Unorm16,
            FormatArg::F16 => VertexFormat::F16,
            FormatArg::F32 => VertexFormat::F32,
            FormatArg::Unorm8 => VertexFormat::Unorm8,
            FormatArg::Split8 => VertexFormat::Split8,
            FormatArg::SkinResidual => VertexFormat::SkinResidual,
        }
    }
}

/// `vat bake --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ModeArg {
    /// A rigged or node-animated glTF.
    Skeletal,
    /// A mesh sequence (soft-body).
    Soft,
    /// Node-animated pieces (rigid-body): every node carrying a mesh is a piece that moves as a
    /// unit (one piece texel per piece per frame).
    Rigid,
    /// A folder of per-frame OBJ meshes whose topology changes from frame to frame (fluid: a
    /// triangle pool and a per-frame lookup; frames are not interpolated).
    Fluid,
    /// A folder of per-frame particle files, CSV (header `id,x,y,z,size,r,g,b,a`, optional
    /// `rotation`) or PLY (sprite: camera-facing cards, interpolated where a particle's id persists).
    Sprite,
}

/// `vat bake` arguments.
#[derive(Debug, Args)]
pub(crate) struct BakeArgs {
    /// glTF input (.gltf or .glb), or a folder of per-frame meshes (a soft-body sequence: .obj, or
    /// .gltf/.glb, one file per frame in name order, numbers by value). Without it the procedural
    /// humanoid is baked.
    input: Option<PathBuf>,
    /// Bake a built-in procedural source: `humanoid` (the default without a value), `cloth` (a
    /// banner on a pole in the wind, soft-body), `shatter` (a wall breaking into a few hundred
    /// pieces, rigid-body), `splash` (a drop falling into a pool, remeshed every frame, fluid) or
    /// `fountain` (a looping particle fountain, sprite).
    #[arg(long, conflicts_with = "input", num_args = 0..=1, default_missing_value = "humanoid",
          value_parser = clap::builder::PossibleValuesParser::new(
              procgen::SOURCES.iter().chain(&procgen::RIGID_SOURCES)
                  .chain(&procgen::FLUID_SOURCES).chain(&procgen::SPRITE_SOURCES)
                  .copied()))]
    procgen: Option<String>,
    /// What the input is: `skeletal` (a rigged or node-animated glTF; the default for a file) or
    /// `soft` (a mesh sequence: a folder of per-frame files, the default for a folder, or a glTF whose
    /// frames are morph targets driven by a weights animation) or `rigid` (a glTF whose animated
    /// nodes carry meshes: each node's mesh is a piece; or a mesh-sequence folder whose connected
    /// pieces each move rigidly within 0.1 mm; implied by `--procgen shatter`) or `fluid` (a folder
    /// of per-frame OBJ meshes whose vertex and triangle counts change; implied by `--procgen
    /// splash`) or `sprite` (a folder of per-frame CSV or PLY particle files; implied by `--procgen
    /// fountain`). A sequence plays at --fps and bakes one texture frame per source frame.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Output .vat path (written atomically: a temp file, then a rename).
    #[arg(long, short)]
    out: PathBuf,
    /// Samples per second of every clip.
    #[arg(long, default_value_t = 30.0)]
    fps: f32,
    /// Samples per clip instead of --fps.
    #[arg(long)]
    frames: Option<u32>,
    /// Only these clips (comma-separated names); the others are not even validated.
    #[arg(long, value_delimiter = ',')]
    clips: Option<Vec<String>>,
    /// These clips loop (comma-separated names). Without --loop/--once a clip loops when the source
    /// says so (glTF extras vat_looping), else when its last pose returns to its first within the
    /// format's quantum; otherwise it plays once.
    #[arg(long = "loop", value_delimiter = ',', value_name = "CLIPS")]
    loop_clips: Option<Vec<String>>,
    /// These clips play once and hold their last pose (comma-separated names).
    #[arg(long = "once", value_delimiter = ',', value_name = "CLIPS")]
    once_clips: Option<Vec<String>>,
    /// Accept the error of reducing vertices with more than 8 influences to their 8 largest
    /// (verification then compares with the baked influences and only reports the reduction).
    #[arg(long)]
    accept_influence_loss: bool,
    /// Number of LODs requested (1..=8). A level that cannot get below 90 % of the previous kept
    /// level's triangles is dropped, with one warning line each: the file may hold fewer.
    #[arg(long, conflicts_with = "lod_ratios")]
    lods: Option<u32>,
    /// Triangle ratio of each LOD, starting at 1 (comma-separated, e.g. 1,0.38,0.1,0.03,0.01).
    #[arg(long, value_delimiter = ',')]
    lod_ratios: Option<Vec<f32>>,
    /// Also bake the bone texture and joints/weights streams (bone mode).
    #[arg(long)]
    bones: bool,
    /// Also bake per-frame tangent frames.
    #[arg(long)]
    tangents: bool,
    /// Vertex texture format.
    #[arg(long, value_enum, default_value_t = FormatArg::Packed64)]
    format: FormatArg,
    /// Largest texture width or height the target device supports.
    #[arg(long, default_value_t = 16384)]
    max_texture_dim: u32,
    /// `--format skin-residual`: every decoded position of every stored frame within this many
    /// millimetres of the source (0 < mm <= 1000; default 0.5).
    #[arg(long, value_name = "MM")]
    residual_mm: Option<f32>,
    /// `--format skin-residual`: every decoded normal within this many degrees of the source's
    /// (0 < deg <= 28.6; default 1).
    #[arg(long, value_name = "DEG")]
    residual_deg: Option<f32>,
    /// `--format skin-residual` of a mesh sequence: the bones of the skin fitted to its frames
    /// (1..=1024). Default: counts from 32 are tried and the smallest file kept (each said).
    #[arg(long, value_name = "BONES")]
    fit_bones: Option<u32>,
    /// Largest side, in texels, of the material texture arrays (base colour; normal and
    /// metallic-roughness): each array's images are resampled to one power-of-two layer size up to
    /// this (each resampled image is said).
    #[arg(long, default_value_t = vat_bake::textures::DEFAULT_MATERIAL_TEXTURE_SIZE, value_name = "TEXELS")]
    material_texture_size: u32,
    /// The folder the glTF's external files (buffer `uri`s) must lie in; default: the glTF's own
    /// folder. Files outside it, links out of it, absolute paths and non-regular files are refused.
    #[arg(long, value_name = "DIR")]
    resource_root: Option<PathBuf>,
    /// Bake only this skin of the glTF (index). Without it, every skin a mesh of the scene uses is
    /// baked on one union skeleton; with it, the meshes of the other skins are left out (each said).
    #[arg(long)]
    skin: Option<usize>,
    /// Quantise normals to the best of the four neighbouring octahedral codes (a third smaller worst-case
    /// angle than nearest rounding, slower to bake).
    #[arg(long)]
    precise_normals: bool,
    /// Capture per-frame transforms of these bones (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    capture: Option<Vec<String>>,
    /// Memory budget of the whole process (import, bake, verification), in bytes (suffixes K, M,
    /// G: binary). A bake that would need more is refused before allocating, with the numbers; the
    /// bake prints its real peak.
    #[arg(long, value_parser = parse_bytes, default_value = "2G")]
    max_memory: u64,
    /// Extract each clip's root motion (horizontal translation and yaw, fitted to the vertices)
    /// into a track and bake the frames in place; a travelling loop's stride comes from its track.
    /// The crowd moves instances by it (`Crowd::set_root_motion`). Not for the rigid mode.
    #[arg(long)]
    root_motion: bool,
    /// Also bake an animated impostor tier (skeletal and soft assets): after the bake, the written
    /// file's own decode is drawn on the CPU from a grid of view directions at evenly spaced frames
    /// of every clip (colour with coverage, normal and depth per texel, with mip chains), measured
    /// against the mesh, and stored in the file with its measured bounds (format version 9: the near
    /// cards' and the far cards').
    #[arg(long)]
    impostors: bool,
    /// Impostor views per side of the octahedral grid (2 to 32; views in all: its square).
    #[arg(long, default_value_t = 8, value_name = "N", requires = "impostors")]
    impostor_views: u32,
    /// Which directions the impostor views cover: `hemi` (the upper hemisphere: characters seen
    /// from the ground or above) or `full` (the whole sphere).
    #[arg(long, value_enum, default_value_t = CoverageArg::Hemi, requires = "impostors")]
    impostor_coverage: CoverageArg,
    /// Pixels per side of one impostor view's image (a power of two from 8 to 512).
    #[arg(long, default_value_t = 64, value_name = "PIXELS", requires = "impostors")]
    impostor_tile: u32,
    /// Impostor images per clip, evenly spaced in phase (1 to 256; clips times frames at most 256).
    #[arg(long, default_value_t = 8, value_name = "N", requires = "impostors")]
    impostor_frames: u32,
}

/// `vat bake --impostor-coverage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CoverageArg {
    /// The upper hemisphere.
    Hemi,
    /// The whole sphere.
    Full,
}

impl BakeArgs {
    /// The impostor tier `--impostors` asks for (`None` without it).
    fn impostor_options(&self) -> Option<ImpostorOptions> {
        self.impostors.then(|| ImpostorOptions {
            grid: ViewGrid {
                views_per_side: self.impostor_views,
                coverage: match self.impostor_coverage {
                    CoverageArg::Hemi => ViewCoverage::Hemi,
                    CoverageArg::Full => ViewCoverage::Full,
                },
            },
            tile_size: self.impostor_tile,
            frames_per_clip: self.impostor_frames,
            ..ImpostorOptions::default()
        })
    }

    /// The first flag given that the per-frame effect modes (fluid, sprite) do not take: they bake
    /// one clip of every frame at --fps, with no LODs, bones, tangent frames or root motion.
    fn sequence_effect_flag_given(&self) -> Option<&'static str> {
        let args = self;
        [
            ("--frames", args.frames.is_some()),
            ("--clips", args.clips.is_some()),
            ("--once", args.once_clips.is_some()),
            ("--bones", args.bones),
            ("--tangents", args.tangents),
            ("--precise-normals", args.precise_normals),
            ("--capture", args.capture.is_some()),
            ("--skin", args.skin.is_some()),
            ("--accept-influence-loss", args.accept_influence_loss),
            ("--root-motion", args.root_motion),
            ("--lods", args.lods.is_some()),
            ("--lod-ratios", args.lod_ratios.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// `vat verify` arguments.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The .vat file.
    file: PathBuf,
    /// The source it was baked from (.gltf/.glb, or a mesh-sequence folder). Without it, a file
    /// baked from a built-in procedural source (`vat bake --procgen NAME`) is checked against that
    /// source, regenerated.
    #[arg(long)]
    source: Option<PathBuf>,
    /// Frame rate of a mesh-sequence source (as given to bake); default: the rate of the file's clip
    /// (a sequence bakes one texture frame per source frame).
    #[arg(long)]
    fps: Option<f32>,
    /// Which skin of the source (as given to bake).
    #[arg(long)]
    skin: Option<usize>,
    /// The folder the source's external files must lie in (as given to bake).
    #[arg(long, value_name = "DIR")]
    resource_root: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Accept the error of vertices baked with 8 of their more than 8 influences (see bake).
    #[arg(long)]
    accept_influence_loss: bool,
    /// Refuse a .vat file (or source) larger than this many bytes (suffixes K, M, G: binary), before
    /// reading it.
    #[arg(long, value_parser = parse_bytes, default_value = "4G")]
    max_memory: u64,
    #[command(flatten)]
    interop: crate::interop::VerifySourceArgs,
}

/// A byte count: digits with an optional binary suffix `K`, `M`, `G` or `T` (also `KiB`, `MB`, ...:
/// always powers of 1024), e.g. `512M`, `2G`, `1048576`.
pub(crate) fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => return Err(format!("unknown size suffix {other:?}; use K, M, G or T")),
    };
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is not a byte count like 512M or 2G"))?;
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("{text:?} does not fit in 64 bits"))
}

/// A rate in samples per second: finite and positive (checked as the command line is parsed, before
/// any input is read).
pub(crate) fn parse_rate(text: &str) -> std::result::Result<f32, String> {
    let v: f32 = text.trim().parse().map_err(|e| format!("{text:?} is not a number ({e})"))?;
    if v.is_finite() && v > 0.0 { Ok(v) } else { Err(format!("{v} is not a positive, finite rate")) }
}

/// The reader's limits with `max_memory` as the largest file.
pub(crate) fn load_limits(max_memory: u64) -> Limits {
    Limits { max_total_bytes: max_memory, ..Limits::default() }
}

/// Reads a `.vat` file through vat-core's read gate ([`vat_core::files::read_named_file`]): a regular
/// file only (a FIFO or device such as `/dev/zero` is refused from its type, never waited on or
/// read), refused when larger than `max_memory` bytes, first by its size on disk, then by the bytes
/// actually read.
pub(crate) fn read_vat(path: &Path, max_memory: u64) -> Result<Vec<u8>> {
    let limit = vat_core::files::ReadLimit::new(max_memory, "--max-memory");
    Ok(vat_core::files::read_named_file(path, limit)?)
}

/// Refuses `out` before any input is read when it cannot receive an output (a device such as
/// `/dev/null`, a FIFO, a folder, a symbolic link, a missing folder): see [`vat_core::files`].
pub(crate) fn check_out(out: &Path) -> Result<()> {
    vat_core::files::check_output(out).with_context(|| "--out cannot be written".to_owned())
}

/// Writes `file` (baked from `source`) to a temporary file beside `out`, reads it back, verifies
/// what is on disk against `source` (for a soft-mode bake with `options.mid_frames` false: the
/// checks only, the mid-frame interpolation figures are `vat verify`'s, they cost more than the
/// checks), and renames it to `out` only when it passed; otherwise nothing is written. `what` names
/// the source in messages. Returns the verification report.
pub(crate) fn write_verified(
    source: &dyn Source,
    file: BakedFile,
    out: &Path,
    what: &str,
    options: &VerifyOptions,
) -> Result<Box<dyn Report>> {
    Ok(write_verified_with_tier(source, file, out, what, options, None)?.0)
}

/// What `--impostors` asks of [`write_verified_with_tier`]: the tier's options and the memory
/// budget it must fit in.
pub(crate) struct TierRequest<'a> {
    options: &'a ImpostorOptions,
    max_memory: u64,
}

/// An impostor tier a bake added: its images' geometry, the bytes of each of its two texture
/// arrays, the images measured and the time taken.
pub(crate) struct TierBaked {
    tier: vat_core::format::impostor::ImpostorTier,
    /// The far cards' bound (one view), as measured and stated.
    one_view: Option<vat_core::format::impostor::ImpostorBound>,
    /// The asset's socket attachments (meshes the cards do not show).
    attachments: usize,
    /// The asset's material variants with a colour set of their own on the cards, and those left
    /// out (their instances' cards show the authored materials).
    material_variants: (u32, u32),
    /// Bytes of the colour and normal-depth blobs.
    blob_bytes: usize,
    samples: u32,
    seconds: f64,
}

impl TierBaked {
    /// The bake's one line about the tier.
    fn write_line(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let t = &self.tier;
        let coverage = match t.grid.coverage {
            ViewCoverage::Hemi => "hemi",
            ViewCoverage::Full => "full",
        };
        writeln!(
            out,
            "  impostors: {n} x {n} {coverage} views of {tile} px, {layers} layers ({frames} frames per clip), \
             {mips} mip levels{sets}, atlas {bytes} bytes ({mib:.1} MiB: colour + normal-depth); measured over {samples} \
             images between the views: min coverage IoU {iou:.4}, max mean colour error {err:.4} (stated as the \
             tier's bound) in {secs:.1} s",
            n = t.grid.views_per_side,
            tile = t.tile_size,
            layers = t.layer_count(),
            frames = t.frames_per_clip.first().copied().unwrap_or(0),
            mips = t.mip_levels,
            sets = match self.material_variants.0 {
                0 => String::new(),
                v => format!(", colour for the authored materials and {v} material variant(s)"),
            },
            bytes = self.blob_bytes,
            mib = self.blob_bytes as f64 / 1_048_576.0,
            samples = self.samples,
            iou = t.bound.min_coverage_iou,
            err = t.bound.max_mean_color_error,
            secs = self.seconds,
        )?;
        if let Some(b) = self.one_view {
            writeln!(
                out,
                "  impostor far cards (one view, mip level {}): min coverage IoU {:.4}, max mean colour error {:.4} \
                 (stated as their bound)",
                vat_core::format::impostor::SINGLE_VIEW_LEVEL,
                b.min_coverage_iou,
                b.max_mean_color_error,
            )?;
        }
        if self.attachments > 0 {
            writeln!(
                out,
                "  impostors leave out: {} socket attachment(s) (the cards show the body alone; an attachment is \
                 drawn only while its character is a mesh)",
                self.attachments
            )?;
        }
        let (baked, left_out) = self.material_variants;
        if left_out > 0 {
            writeln!(
                out,
                "  impostors leave out: {left_out} material variant(s) after the first {baked} (a colour set per variant \
                 would pass the tier's {} layers: an instance of those shows them only while it is a mesh; lower \
                 --impostor-frames to include them)",
                vat_core::format::impostor::MAX_IMPOSTOR_LAYERS
            )?;
        }
        Ok(())
    }
}

/// [`write_verified`], and with `impostors`, once the file on disk passed: its impostor tier baked
/// from the file's own decode ([`vat_bake::impostor::bake_measured_tier`]), the file written again
/// to a second temporary name with the tier added, read back and parsed, and only that one given
/// the final name (the first is removed). Returns the report and the tier added.
pub(crate) fn write_verified_with_tier(
    source: &dyn Source,
    file: BakedFile,
    out: &Path,
    what: &str,
    options: &VerifyOptions,
    impostors: Option<TierRequest<'_>>,
) -> Result<(Box<dyn Report>, Option<TierBaked>)> {
    let pending = file.write_pending(out).with_context(|| format!("{}: cannot write", out.display()))?;
    // Only the file on disk is needed from here on: verification reads it back, into the memory of
    // the bake's largest buffer (fresh memory costs a page fault per 4 KiB).
    let buffer = file.into_reusable_buffer();
    let bytes = vat_core::files::read_back(pending.temp_path(), buffer)
        .with_context(|| format!("{}: cannot read back", pending.temp_path().display()))?;
    let asset = Asset::parse(&bytes)
        .with_context(|| format!("{}: the written file does not read back", out.display()))?;
    let report =
        source.verify(&asset, options).with_context(|| format!("{what}: cannot verify the written file"))?;
    if !report.passed() {
        bail!("{what}: verification failed, nothing written: {}", report.failures().join("; "));
    }
    let Some(impostors) = impostors else {
        drop(asset);
        drop(bytes);
        pending.commit().with_context(|| format!("{}: cannot write", out.display()))?;
        return Ok((report, None));
    };
    let started = Instant::now();
    // Refused before the long part: too many images for a tier, or too large for the budget.
    let material_variants = vat_bake::impostor::material_variant_sets(asset.manifest(), impostors.options);
    vat_bake::impostor::check_tier_size(
        impostors.options,
        asset.manifest().clips.len(),
        material_variants.0,
        impostors.max_memory,
    )
    .with_context(|| format!("{what}: no impostor tier, nothing written"))?;
    let (images, samples) = vat_bake::impostor::bake_measured_tier(&asset, impostors.options)
        .with_context(|| format!("{what}: cannot bake the impostor tier, nothing written"))?;
    let with_tier = vat_bake::impostor::write_pending_with_tier(&asset, &images, out)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let attachments = asset.manifest().attachments.len();
    drop(asset);
    let tier = check_written_tier(&with_tier, bytes.into_buffer(), &images, out)?;
    // The file without the tier is removed; the one with it takes the name.
    drop(pending);
    with_tier.commit().with_context(|| format!("{}: cannot write", out.display()))?;
    Ok((
        report,
        Some(TierBaked {
            tier,
            one_view: images.one_view_bound,
            attachments,
            material_variants,
            blob_bytes: images.color.len() + images.normal_depth.len(),
            samples,
            seconds: started.elapsed().as_secs_f64(),
        }),
    ))
}

/// Reads the file with the tier back from `pending`'s temporary name (into `buffer`'s memory) and
/// checks that it parses and holds the tier and images that were written.
fn check_written_tier(
    pending: &vat_core::files::PendingFile,
    buffer: Vec<u8>,
    images: &ImpostorImages,
    out: &Path,
) -> Result<vat_core::format::impostor::ImpostorTier> {
    let bytes = vat_core::files::read_back(pending.temp_path(), buffer)
        .with_context(|| format!("{}: cannot read back", pending.temp_path().display()))?;
    let asset = Asset::parse(&bytes).with_context(|| {
        format!("{}: the written file with its impostor tier does not read back", out.display())
    })?;
    let tier = asset.manifest().impostors.clone().context("the written file lost its impostor tier")?;
    let same = tier.bound == images.tier.bound
        && asset.get_blob(tier.color) == Some(&images.color[..])
        && asset.get_blob(tier.normal_depth) == Some(&images.normal_depth[..]);
    if !same {
        bail!("{}: the impostor tier read back differs from the one written, nothing written", out.display());
    }
    Ok(tier)
}

/// Draws a one-line progress bar on stderr when it is a terminal.
struct ProgressLine {
    enabled: bool,
}

impl ProgressLine {
    fn update(&mut self, p: Progress) {
        if !self.enabled || p.total == 0 {
            return;
        }
        let width = 30usize;
        let filled = (p.done.min(p.total) * width as u64 / p.total) as usize;
        eprint!(
            "\r{:<8} [{}{}] {}/{}   ",
            p.stage,
            "#".repeat(filled),
            " ".repeat(width - filled),
            p.done,
            p.total
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&self) {
        if self.enabled {
            eprint!("\r{}\r", " ".repeat(60));
        }
    }
}

/// `vat bake`: picks the source from the arguments, loads it, bakes it, streams the file to a
/// temporary name, reads it back and verifies what is on disk against the full source, and only
/// then gives it its name. A bake that fails verification writes nothing. Every mode takes this one
/// path; only [`pick`] and the mode's [`Input`] know the mode.
pub(crate) fn bake(args: &BakeArgs) -> Result<()> {
    let started = Instant::now();
    check_out(&args.out)?;
    // Every option that does not depend on the input, checked before any input is read (the modes'
    // own refusals of flags that do not apply follow, also before reading).
    let options = bake_options(args);
    let input = args.input.as_deref();
    let named = input.map_or_else(
        || format!("procedural {}", args.procgen.as_deref().unwrap_or("humanoid")),
        |p| p.display().to_string(),
    );
    prepare::validate_options(&options).with_context(|| format!("{named}: not baked"))?;
    if let Some(input) = input
        && same_file(input, &args.out)
    {
        bail!("{}: --out names the input file; choose another output path", args.out.display());
    }
    let impostors = args.impostor_options();
    if let Some(impostors) = &impostors {
        vat_bake::impostor::validate_options(impostors).with_context(|| format!("{named}: not baked"))?;
    }
    let picked = pick(args)?;
    let load = Load {
        max_memory: args.max_memory,
        fps: args.fps,
        skin: args.skin,
        resource_root: args.resource_root.as_deref(),
    };
    let verify = VerifyOptions { accept_influence_loss: args.accept_influence_loss, mid_frames: false };
    bake_input(&picked, &load, &options, &verify, &args.out, started, impostors.as_ref())
}

/// The rest of every bake, once the source is picked (`vat bake`, the imports): load, bake, [`write_verified`], print the
/// bake's figures, the verification's lines, the warnings and the time and peak memory.
pub(crate) fn bake_input(
    input: &Input<'_>,
    load: &Load<'_>,
    options: &BakeOptions,
    verify: &VerifyOptions,
    out_path: &Path,
    started: Instant,
    impostors: Option<&ImpostorOptions>,
) -> Result<()> {
    let what = input.describe();
    let looping;
    let options = if input.loops() {
        // Its one clip loops, as `--loop` would make it.
        looping = BakeOptions { looping: vec![what.clone()], ..options.clone() };
        &looping
    } else {
        options
    };
    let source = input.load(load)?;
    let mut bar = ProgressLine { enabled: std::io::stderr().is_terminal() };
    let baked = vat_bake::bake(source.as_ref(), options, &mut |p| bar.update(p))
        .with_context(|| format!("{what}: bake failed"))?;
    bar.finish();
    let tier_request = impostors.map(|options| TierRequest { options, max_memory: load.max_memory });
    let (report, tier) =
        write_verified_with_tier(source.as_ref(), baked.file, out_path, &what, verify, tier_request)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    baked.figures.write_summary(&mut out, &what, out_path)?;
    report.write_lines(&mut out)?;
    if let Some(tier) = &tier {
        tier.write_line(&mut out)?;
    }
    for w in baked.figures.warnings().iter().chain(report.warnings()) {
        writeln!(out, "  warning: {w}")?;
    }
    match peak_rss_bytes() {
        Some(peak) => {
            writeln!(
                out,
                "  {:.1} ms in all; peak memory {:.1} MiB of the {:.1} MiB budget (--max-memory)",
                started.elapsed().as_secs_f64() * 1e3,
                peak as f64 / 1_048_576.0,
                load.max_memory as f64 / 1_048_576.0
            )?;
            if peak > load.max_memory {
                writeln!(out, "  warning: the process's peak memory exceeded --max-memory")?;
            }
        }
        None => writeln!(out, "  {:.1} ms in all", started.elapsed().as_secs_f64() * 1e3)?,
    }
    Ok(())
}

/// The bake options the arguments give (each mode reads those that apply to it).
fn bake_options(args: &BakeArgs) -> BakeOptions {
    BakeOptions {
        fps: args.fps,
        frames: args.frames,
        clips: args.clips.clone(),
        looping: args.loop_clips.clone().unwrap_or_default(),
        one_shot: args.once_clips.clone().unwrap_or_default(),
        lods: lod_options(args),
        bones: args.bones,
        tangents: args.tangents,
        format: args.format.into(),
        max_texture_dim: args.max_texture_dim,
        captures: args.capture.clone().unwrap_or_default(),
        normal_rounding: if args.precise_normals { NormalRounding::Precise } else { NormalRounding::Nearest },
        max_memory: args.max_memory,
        material_texture_size: args.material_texture_size,
        root_motion: args.root_motion,
        residual_bounds: {
            let default = vat_core::format::skin_residual::ResidualBounds::default();
            vat_core::format::skin_residual::ResidualBounds {
                position_m: args.residual_mm.map_or(default.position_m, |mm| mm / 1000.0),
                normal_rad: args.residual_deg.map_or(default.normal_rad, f32::to_radians),
            }
        },
        fit_bones: args.fit_bones,
        ..BakeOptions::default()
    }
}

/// The source `vat bake`'s arguments name, one line per mode; each mode refuses the flags that do
/// not apply to it before any input is read.
fn pick(args: &BakeArgs) -> Result<Input<'_>> {
    if args.format != FormatArg::SkinResidual
        && let Some(flag) = [
            ("--residual-mm", args.residual_mm.is_some()),
            ("--residual-deg", args.residual_deg.is_some()),
            ("--fit-bones", args.fit_bones.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    {
        bail!(
            "{flag} applies to --format skin-residual only (the other formats' bounds follow from their quanta and store no fitted skin)"
        );
    }
    let input = args.input.as_deref();
    let procgen = args.procgen.as_deref();
    if let Some(fluid) = pick_fluid(args, input, procgen)? {
        return Ok(Input::Fluid(fluid));
    }
    if let Some(sprite) = pick_sprite(args, input, procgen)? {
        return Ok(Input::Sprite(sprite));
    }
    if let Some(rigid) = pick_rigid(args, input, procgen)? {
        return Ok(Input::Rigid(rigid));
    }
    Ok(Input::Rig(pick_rig(args, input, procgen)?))
}

/// `--mode fluid` or a fluid built-in source.
fn pick_fluid<'a>(
    args: &BakeArgs,
    input: Option<&'a Path>,
    procgen: Option<&'a str>,
) -> Result<Option<FluidInput<'a>>> {
    let fluid = match (input, procgen) {
        (Some(path), _) if args.mode == Some(ModeArg::Fluid) => {
            if !path.is_dir() {
                bail!("{}: --mode fluid reads a folder of per-frame OBJ files", path.display());
            }
            FluidInput::Folder(path, args.fps)
        }
        (None, Some(name)) if procgen::FLUID_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(m) if m != ModeArg::Fluid) {
                bail!("--procgen {name} is a fluid source; bake it with --mode fluid (or no --mode)");
            }
            FluidInput::Procedural(name)
        }
        (None, _) if args.mode == Some(ModeArg::Fluid) => {
            bail!("--mode fluid needs a folder of OBJ frames or a fluid built-in source (--procgen splash)")
        }
        _ => return Ok(None),
    };
    if args.impostors {
        bail!(
            "--impostors does not apply to the fluid mode: its triangles change every frame, so there is no one body \
             to draw from fixed views (impostors are for skeletal and soft assets)"
        );
    }
    if let Some(flag) = args.sequence_effect_flag_given() {
        bail!(
            "{flag} does not apply to the fluid mode (one clip of every frame at --fps; the topology changes \
             every frame, so there are no LODs, bones or tangent frames)"
        );
    }
    Ok(Some(fluid))
}

/// `--mode sprite` or a sprite built-in source.
fn pick_sprite<'a>(
    args: &BakeArgs,
    input: Option<&'a Path>,
    procgen: Option<&'a str>,
) -> Result<Option<SpriteInput<'a>>> {
    let sprite = match (input, procgen) {
        (Some(path), _) if args.mode == Some(ModeArg::Sprite) => {
            if !path.is_dir() {
                bail!(
                    "{}: --mode sprite reads a folder of per-frame CSV or PLY particle files",
                    path.display()
                );
            }
            SpriteInput::Folder(path, args.fps)
        }
        (None, Some(name)) if procgen::SPRITE_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(m) if m != ModeArg::Sprite) {
                bail!("--procgen {name} is a sprite source; bake it with --mode sprite (or no --mode)");
            }
            SpriteInput::Procedural(name)
        }
        (None, _) if args.mode == Some(ModeArg::Sprite) => {
            bail!(
                "--mode sprite needs a folder of CSV or PLY frames or a sprite built-in source (--procgen fountain)"
            )
        }
        _ => return Ok(None),
    };
    if args.impostors {
        bail!(
            "--impostors does not apply to the sprite mode: its particles are camera-facing cards already \
             (impostors are for skeletal and soft assets)"
        );
    }
    let format = (args.format != FormatArg::Packed64).then_some("--format");
    if let Some(flag) = args.sequence_effect_flag_given().or(format) {
        bail!(
            "{flag} does not apply to the sprite mode (one clip of every frame at --fps; particles are cards with \
             their own 16-byte texel, so there are no LODs, bones, tangent frames or vertex formats)"
        );
    }
    Ok(Some(sprite))
}

/// `--mode rigid` or a rigid built-in source.
fn pick_rigid<'a>(
    args: &BakeArgs,
    input: Option<&'a Path>,
    procgen: Option<&'a str>,
) -> Result<Option<RigidInput<'a>>> {
    let rigid = match (input, procgen) {
        (Some(path), _) if args.mode == Some(ModeArg::Rigid) && path.is_dir() => {
            RigidInput::Sequence(path, args.fps)
        }
        (Some(path), _) if args.mode == Some(ModeArg::Rigid) => RigidInput::File(path),
        (None, Some(name)) if procgen::RIGID_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(ModeArg::Skeletal | ModeArg::Soft)) {
                bail!("--procgen {name} is a rigid-body source; bake it with --mode rigid (or no --mode)");
            }
            RigidInput::Procedural(name)
        }
        (None, _) if args.mode == Some(ModeArg::Rigid) => {
            bail!("--mode rigid needs a glTF input or a rigid built-in source (--procgen shatter)")
        }
        _ => return Ok(None),
    };
    if args.impostors {
        bail!(
            "--impostors does not apply to the rigid mode: its pieces move apart as separate bodies, not one body \
             that images from fixed views stand for (impostors are for skeletal and soft assets)"
        );
    }
    let soft_only = [
        ("--frames", args.frames.is_some()),
        ("--clips", args.clips.is_some()),
        ("--loop", args.loop_clips.is_some()),
        ("--once", args.once_clips.is_some()),
        ("--bones", args.bones),
        ("--tangents", args.tangents),
        ("--precise-normals", args.precise_normals),
        ("--capture", args.capture.is_some()),
        ("--skin", args.skin.is_some()),
        ("--accept-influence-loss", args.accept_influence_loss),
        ("--root-motion", args.root_motion),
    ];
    if let Some((flag, _)) = soft_only.iter().find(|(_, given)| *given) {
        bail!("{flag} does not apply to the rigid mode (one piece texel per piece per frame at --fps)");
    }
    if args.format != FormatArg::Packed64 {
        bail!(
            "--format does not apply to the rigid mode: pieces are stored in its own 16-byte texel \
             (unorm16 pivot, snorm16 quaternion; vat_core::modes::rigid)"
        );
    }
    Ok(Some(rigid))
}

/// A glTF file, a mesh-sequence folder or a built-in rig (the humanoid without an input).
fn pick_rig<'a>(args: &BakeArgs, input: Option<&'a Path>, procgen: Option<&'a str>) -> Result<RigSource<'a>> {
    let rig_source = match (input, procgen) {
        (Some(path), _) if path.is_dir() => {
            if args.mode == Some(ModeArg::Skeletal) {
                bail!("{}: a folder is a mesh sequence; bake it with --mode soft", path.display());
            }
            RigSource::Sequence(path, args.fps)
        }
        (Some(path), _) => RigSource::File(path),
        (None, Some(name)) => RigSource::Procedural(name),
        (None, None) => RigSource::Procedural("humanoid"),
    };
    if let RigSource::Sequence(path, _) = rig_source {
        // Refused before the folder is read (prepare refuses them again for a library caller).
        let refused = [
            ("--bones", args.bones),
            ("--tangents", args.tangents),
            ("--root-motion", args.root_motion),
            ("--capture", args.capture.is_some()),
            ("--skin", args.skin.is_some()),
        ];
        if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
            bail!(
                "{flag} does not apply to mesh sequence {} (a soft-body sequence stores positions and normals per \
                 frame: no skeleton, tangent frames or nodes)",
                path.display()
            );
        }
    }
    Ok(rig_source)
}

/// The process's peak resident set size in bytes (Linux: `VmHWM` of `/proc/self/status`); `None`
/// where it cannot be read.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Whether `a` and `b` name the same existing file: the same path once links are resolved, or
/// (on Unix) the same device and inode, so a hard link to the input counts too.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::canonicalize(a), std::fs::canonicalize(b))
        && x == y
    {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    false
}

/// `vat verify`: the file against its source, every mode the same way: each playback path (VAT,
/// bone, capture tracks; pieces; fluid frames; particles) against fresh decoding of the full source,
/// each against its own bound; exits non-zero if any fails.
pub(crate) fn verify(args: &VerifyArgs) -> Result<()> {
    let bytes = read_vat(&args.file, args.max_memory)?;
    let asset = Asset::parse_with_limits(&bytes, &load_limits(args.max_memory))
        .with_context(|| format!("{}: not a valid .vat file", args.file.display()))?;
    let files = args.interop.houdini_files();
    let source = verify_source(args, &asset, &files)?;
    let options =
        VerifyOptions { accept_influence_loss: args.accept_influence_loss, ..VerifyOptions::default() };
    let report = source
        .verify(&asset, &options)
        .with_context(|| format!("{}: cannot verify against its source", args.file.display()))?;
    // The impostor tier against the mesh: the file's own images, nothing re-baked.
    let tier = vat_bake::impostor::verify_tier(&asset)
        .with_context(|| format!("{}: cannot verify its impostor tier", args.file.display()))?;
    let passed = report.passed() && tier.as_ref().is_none_or(|t| t.passed());
    let out = std::io::stdout();
    let mut out = out.lock();
    if args.json {
        let mut json: serde_json::Value = serde_json::from_str(&report.to_json()?)?;
        if let (Some(t), Some(map)) = (&tier, json.as_object_mut()) {
            map.insert("impostors".into(), tier_json(t));
            map.insert("passed".into(), passed.into());
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        writeln!(out, "{}: {}", args.file.display(), if passed { "PASSED" } else { "FAILED" })?;
        report.write_lines(&mut out)?;
        if let Some(t) = &tier {
            write_tier_lines(&mut out, t)?;
        }
        for w in report.warnings() {
            writeln!(out, "  warning: {w}")?;
        }
    }
    if !passed {
        let mut failures: Vec<String> = report.failures().to_vec();
        failures.extend(tier.iter().flat_map(vat_bake::impostor::TierCheck::failures));
        bail!("{}: verification failed: {}", args.file.display(), failures.join("; "));
    }
    Ok(())
}

/// `vat verify`'s lines about an impostor tier: the figures measured again against those stated,
/// then one line per figure worse than stated.
fn write_tier_lines(out: &mut dyn Write, t: &vat_bake::impostor::TierCheck) -> std::io::Result<()> {
    writeln!(
        out,
        "  impostors: {} over {} images between the views: min coverage IoU {:.4} (stated {:.4}), max mean colour \
         error {:.4} (stated {:.4})",
        if t.passed() { "PASSED" } else { "FAILED" },
        t.samples,
        t.measured.min_coverage_iou,
        t.stated.min_coverage_iou,
        t.measured.max_mean_color_error,
        t.stated.max_mean_color_error,
    )?;
    let (m, stated) = (t.one_view_measured, t.one_view_stated);
    let stated = |f: fn(vat_core::format::impostor::ImpostorBound) -> f32| {
        stated.map_or_else(
            || "not stated: baked before format version 9".to_owned(),
            |s| format!("stated {:.4}", f(s)),
        )
    };
    writeln!(
        out,
        "  impostor far cards (one view, mip level {}): min coverage IoU {:.4} ({}), max mean colour error {:.4} ({})",
        vat_core::format::impostor::SINGLE_VIEW_LEVEL,
        m.min_coverage_iou,
        stated(|b| b.min_coverage_iou),
        m.max_mean_color_error,
        stated(|b| b.max_mean_color_error),
    )?;
    for f in t.failures() {
        writeln!(out, "  FAILED: {f}")?;
    }
    Ok(())
}

/// An impostor tier's check as JSON: `passed`, `samples`, the `measured` and `stated` bounds
/// (`min_coverage_iou`, `max_mean_color_error`) of the near cards, and the far cards'
/// (`one_view_measured`, `one_view_stated`: null when the file states none).
fn tier_json(t: &vat_bake::impostor::TierCheck) -> serde_json::Value {
    let bound = |b: vat_core::format::impostor::ImpostorBound| {
        serde_json::json!({
            "min_coverage_iou": b.min_coverage_iou,
            "max_mean_color_error": b.max_mean_color_error,
        })
    };
    serde_json::json!({
        "passed": t.passed(),
        "samples": t.samples,
        "measured": bound(t.measured),
        "stated": bound(t.stated),
        "one_view_measured": bound(t.one_view_measured),
        "one_view_stated": t.one_view_stated.map(bound),
        "failures": t.failures(),
    })
}

/// The source `vat verify` checks `asset` against, by the file's mode: `--source` (read as the
/// file was baked from it: at its clip rate, another tool's bake decoded as its import decodes
/// it), or without it the built-in source the file was baked from, regenerated.
fn verify_source(args: &VerifyArgs, asset: &Asset<'_>, files: &HoudiniFiles) -> Result<Box<dyn Source>> {
    let m = asset.manifest();
    let file = &args.file;
    let clip_fps = m.clips.first().map(|c| c.fps);
    let not_built_in = |mode: &str, what: &str| {
        anyhow::anyhow!(
            "{}: {mode}asset {:?} was not baked from a built-in source; give the {what} it was baked from with --source",
            file.display(),
            crate::terminal_safe(&m.name)
        )
    };
    let load = Load {
        max_memory: args.max_memory,
        fps: clip_fps.unwrap_or(30.0),
        skin: args.skin,
        resource_root: args.resource_root.as_deref(),
    };
    let source = args.source.as_deref();
    let houdini = |path: &Path| -> Result<bool> {
        Ok(matches!(
            crate::interop::detect(path, &args.interop, args.max_memory)?,
            Some(vat_bake::interop::SourceKind::Houdini(_))
        ))
    };
    let input = match m.mode() {
        VatMode::Sprite => Input::Sprite(match source {
            Some(path) if houdini(path)? => SpriteInput::Houdini(path, files, args.interop.particle_size()),
            Some(path) => SpriteInput::Folder(path, clip_fps.unwrap_or(30.0)),
            None if procgen::SPRITE_SOURCES.contains(&m.name.as_str()) => SpriteInput::Procedural(&m.name),
            None => return Err(not_built_in("sprite ", "folder")),
        }),
        VatMode::Fluid => Input::Fluid(match source {
            Some(path) if houdini(path)? => FluidInput::Houdini(path, files),
            Some(path) => FluidInput::Folder(path, clip_fps.unwrap_or(30.0)),
            None if procgen::FLUID_SOURCES.contains(&m.name.as_str()) => FluidInput::Procedural(&m.name),
            None => return Err(not_built_in("fluid ", "folder")),
        }),
        VatMode::Rigid => Input::Rigid(
            verify_rigid_input(args, asset, files).ok_or_else(|| not_built_in("rigid ", "source"))?,
        ),
        VatMode::Soft => {
            // Another tool's bake (OpenVAT, Houdini VAT 3) is decoded as its import decoded it.
            let imported =
                crate::interop::imported_rig(file, asset, source, &args.interop, args.fps, args.max_memory)?;
            if let Some(rig) = imported {
                return Ok(Box::new(rig));
            }
            Input::Rig(match source {
                Some(path) if path.is_dir() => {
                    // A sequence bakes one texture frame per source frame, so the clip's rate is the source's.
                    RigSource::Sequence(path, args.fps.or(clip_fps).unwrap_or(30.0))
                }
                Some(path) => RigSource::File(path),
                None if procgen::SOURCES.contains(&m.name.as_str()) => RigSource::Procedural(&m.name),
                None => return Err(not_built_in("", "source")),
            })
        }
    };
    input.load(&load)
}

/// A rigid-mode file's source: `--source` (a glTF sampled at the file's clip rate, a mesh-sequence
/// folder whose pieces are detected again, or a Houdini bake imported at the frames per source
/// frame the file has), or the built-in source it was baked from; `None` for none.
fn verify_rigid_input<'a>(
    args: &'a VerifyArgs,
    asset: &'a Asset<'_>,
    files: &'a HoudiniFiles,
) -> Option<RigidInput<'a>> {
    let m = asset.manifest();
    let source = args.source.as_deref();
    let houdini =
        source.filter(|p| p.is_dir()).and_then(|p| vat_bake::interop::houdini::read_data_in(p, files).ok());
    Some(match (source, houdini) {
        // The import baked `fps / Houdini FPS` frames per source frame.
        (Some(path), Some(data)) => {
            let fps = m.clips.first().map_or(data.fps, |c| c.fps);
            RigidInput::Houdini(path, Some((fps / data.fps).round().max(1.0) as u32), files)
        }
        (Some(path), _) if path.is_dir() => {
            RigidInput::Sequence(path, m.clips.first().map_or(30.0, |c| c.fps))
        }
        (Some(path), _) => RigidInput::File(path),
        (None, _) if procgen::RIGID_SOURCES.contains(&m.name.as_str()) => RigidInput::Procedural(&m.name),
        (None, _) => return None,
    })
}

/// `vat export-glb`: the procedural humanoid as an animated .glb (written atomically).
pub(crate) fn export_glb(out: &Path) -> Result<()> {
    check_out(out)?;
    let rig = procgen::humanoid();
    export::write_glb(&rig, out).with_context(|| format!("{}: cannot export", out.display()))?;
    println!("wrote {} ({} clips)", out.display(), rig.clips.len());
    Ok(())
}

/// The LOD chain `--lods` / `--lod-ratios` ask for (the default chain without either).
fn lod_options(args: &BakeArgs) -> LodOptions {
    match (&args.lods, &args.lod_ratios) {
        (_, Some(r)) => LodOptions::Ratios(r.clone()),
        (Some(n), None) => LodOptions::Count(*n),
        (None, None) => LodOptions::default(),
    }
}

/// The asset with an impostor tier: `bytes` as they are when they have one, else with the default
/// tier (`vat bake --impostors`'s defaults) baked in memory; the line saying which (`vat render`,
/// `vat demo` and `vat bench` with `--impostors`).
///
/// # Errors
/// When `bytes` are not a `.vat` file, or the asset's kind has no tier (rigid, fluid and sprite
/// assets: the reason is in the error).
pub(crate) fn with_default_tier(bytes: Vec<u8>) -> Result<(Vec<u8>, String)> {
    let asset = Asset::parse(&bytes).context("not a valid .vat file")?;
    if let Some(t) = &asset.manifest().impostors {
        let line = format!(
            "the asset's own tier: {} x {} views of {} px",
            t.grid.views_per_side, t.grid.views_per_side, t.tile_size
        );
        return Ok((bytes, line));
    }
    let options = ImpostorOptions::default();
    let t0 = Instant::now();
    let (images, _) = vat_bake::impostor::bake_measured_tier(&asset, &options)?;
    let out = vat_bake::impostor::with_tier_bytes(&asset, &images)?;
    let line = format!(
        "the default tier baked in memory in {:.1} s: {} x {} views of {} px, {} images, {} bytes of \
         atlas",
        t0.elapsed().as_secs_f64(),
        options.grid.views_per_side,
        options.grid.views_per_side,
        options.tile_size,
        images.tier.layer_count(),
        images.color.len() + images.normal_depth.len()
    );
    Ok((out, line))
}
