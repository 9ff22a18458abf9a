//! `vat bake`, `vat verify` and `vat export-glb`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use vat_bake::export;
use vat_bake::gltf_import::{self, ImportOptions};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{self, BakeOptions, LoopDecision, Progress};
use vat_bake::rig::Rig;
use vat_bake::verify::{self, VerifyOptions, VerifyReport};
use vat_core::container::{Asset, Limits};
use vat_core::format::encoding::{NormalRounding, VertexFormat};
use vat_procgen as procgen;

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
}

impl BakeArgs {
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

/// Streams `prepared` to a temporary file beside `out`, reads it back, verifies what is on disk
/// against `rig` (the checks only: the mid-frame interpolation figures are `vat verify`'s, they cost
/// more than the checks), and renames it to `out` only when it passed; otherwise nothing is written.
/// `source` names the input in messages. Returns the bake's figures and the verification report.
pub(crate) fn write_verified(
    prepared: prepare::PreparedBake,
    rig: &Rig,
    out: &Path,
    source: &str,
    accept_influence_loss: bool,
) -> Result<(prepare::BakeStats, VerifyReport)> {
    let pending = prepared.write_pending(out).with_context(|| format!("{}: cannot write", out.display()))?;
    let stats = prepared.stats.clone();
    // Only the file on disk is needed from here on: verification reads it back, into the memory of
    // the bake's largest blob (fresh memory costs a page fault per 4 KiB).
    let buffer = prepared.into_reusable_buffer();
    let bytes = vat_core::files::read_back(pending.temp_path(), buffer)
        .with_context(|| format!("{}: cannot read back", pending.temp_path().display()))?;
    let asset = Asset::parse(&bytes)
        .with_context(|| format!("{}: the written file does not read back", out.display()))?;
    let verify_options = VerifyOptions { accept_influence_loss, mid_frames: false };
    let report = verify::verify_with(&asset, rig, &verify_options)
        .with_context(|| format!("{source}: cannot verify the written file"))?;
    if !report.passed {
        bail!("{source}: verification failed, nothing written: {}", report.failures.join("; "));
    }
    drop(asset);
    drop(bytes);
    pending.commit().with_context(|| format!("{}: cannot write", out.display()))?;
    Ok((stats, report))
}

/// Where a rig comes from: a glTF file, a mesh-sequence folder (at `fps`), or a built-in source.
enum RigSource<'a> {
    File(&'a Path),
    Sequence(&'a Path, f32),
    Procedural(&'a str),
}

impl RigSource<'_> {
    fn describe(&self) -> String {
        match self {
            RigSource::File(p) | RigSource::Sequence(p, _) => p.display().to_string(),
            RigSource::Procedural(name) => format!("procedural {name}"),
        }
    }
}

fn load_rig(
    source: &RigSource<'_>,
    skin: Option<usize>,
    max_memory: u64,
    resource_root: Option<&Path>,
) -> Result<Rig> {
    match *source {
        RigSource::File(path) => Ok(gltf_import::import_file(
            path,
            &ImportOptions { skin, max_memory, resource_root: resource_root.map(Path::to_path_buf) },
        )?),
        RigSource::Sequence(dir, fps) => {
            if skin.is_some() {
                bail!("{}: --skin does not apply to a mesh sequence", dir.display());
            }
            let rig = vat_bake::sequence::sequence_rig(
                dir,
                &vat_bake::sequence::SequenceOptions { fps, max_memory },
            )
            .with_context(|| format!("{}: cannot read the mesh sequence", dir.display()))?;
            let frames = rig.streamed_body.as_ref().map_or(0, |b| b.frames.frame_count());
            eprintln!(
                "note: {}: {frames} frames at {fps} fps (soft-body, streamed from the files)",
                dir.display()
            );
            Ok(rig)
        }
        RigSource::Procedural(name) => match procgen::by_name(name) {
            Some(rig) => Ok(rig?),
            None => bail!("no built-in source named {name:?} (built-in: {})", procgen::SOURCES.join(", ")),
        },
    }
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

/// `vat bake`: import (or build) the rig, prepare, stream the file to a temporary name, read it
/// back and verify what is on disk against the full source, and only then give it its name. A bake
/// that fails verification writes nothing.
pub(crate) fn bake(args: &BakeArgs) -> Result<()> {
    let started = Instant::now();
    check_out(&args.out)?;
    // Every option that does not depend on the input, checked before any input is read (the modes'
    // own refusals of flags that do not apply follow, also before reading).
    let options = BakeOptions {
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
        ..BakeOptions::default()
    };
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
    let fluid_input = match (input, args.procgen.as_deref()) {
        (Some(path), _) if args.mode == Some(ModeArg::Fluid) => {
            if !path.is_dir() {
                bail!("{}: --mode fluid reads a folder of per-frame OBJ files", path.display());
            }
            Some(crate::fluid::FluidInput::Folder(path, args.fps))
        }
        (None, Some(name)) if procgen::FLUID_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(m) if m != ModeArg::Fluid) {
                bail!("--procgen {name} is a fluid source; bake it with --mode fluid (or no --mode)");
            }
            Some(crate::fluid::FluidInput::Procedural(name))
        }
        (None, _) if args.mode == Some(ModeArg::Fluid) => {
            bail!("--mode fluid needs a folder of OBJ frames or a fluid built-in source (--procgen splash)")
        }
        _ => None,
    };
    if let Some(fluid_input) = fluid_input {
        if let Some(flag) = args.sequence_effect_flag_given() {
            bail!(
                "{flag} does not apply to the fluid mode (one clip of every frame at --fps; the topology changes \
                 every frame, so there are no LODs, bones or tangent frames)"
            );
        }
        let options = vat_bake::fluid::FluidBakeOptions {
            max_texture_dim: args.max_texture_dim,
            format: args.format.into(),
            looping: args.loop_clips.is_some(),
        };
        return crate::fluid::bake(&fluid_input, &args.out, &options, args.max_memory);
    }
    let sprite_input = match (input, args.procgen.as_deref()) {
        (Some(path), _) if args.mode == Some(ModeArg::Sprite) => {
            if !path.is_dir() {
                bail!(
                    "{}: --mode sprite reads a folder of per-frame CSV or PLY particle files",
                    path.display()
                );
            }
            Some(crate::sprite::SpriteInput::Folder(path, args.fps))
        }
        (None, Some(name)) if procgen::SPRITE_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(m) if m != ModeArg::Sprite) {
                bail!("--procgen {name} is a sprite source; bake it with --mode sprite (or no --mode)");
            }
            Some(crate::sprite::SpriteInput::Procedural(name))
        }
        (None, _) if args.mode == Some(ModeArg::Sprite) => {
            bail!(
                "--mode sprite needs a folder of CSV or PLY frames or a sprite built-in source (--procgen fountain)"
            )
        }
        _ => None,
    };
    if let Some(sprite_input) = sprite_input {
        let format = (args.format != FormatArg::Packed64).then_some("--format");
        if let Some(flag) = args.sequence_effect_flag_given().or(format) {
            bail!(
                "{flag} does not apply to the sprite mode (one clip of every frame at --fps; particles are cards with \
                 their own 16-byte texel, so there are no LODs, bones, tangent frames or vertex formats)"
            );
        }
        // The fountain is a seamless loop; a folder loops with --loop.
        let looping =
            args.loop_clips.is_some() || matches!(sprite_input, crate::sprite::SpriteInput::Procedural(_));
        let options = vat_bake::sprite::SpriteBakeOptions { max_texture_dim: args.max_texture_dim, looping };
        return crate::sprite::bake(&sprite_input, &args.out, &options, args.max_memory);
    }
    let rigid_input = match (input, args.procgen.as_deref()) {
        (Some(path), _) if args.mode == Some(ModeArg::Rigid) && path.is_dir() => {
            Some(crate::rigid::RigidInput::Sequence(path, args.fps))
        }
        (Some(path), _) if args.mode == Some(ModeArg::Rigid) => Some(crate::rigid::RigidInput::File(path)),
        (None, Some(name)) if procgen::RIGID_SOURCES.contains(&name) => {
            if matches!(args.mode, Some(ModeArg::Skeletal | ModeArg::Soft)) {
                bail!("--procgen {name} is a rigid-body source; bake it with --mode rigid (or no --mode)");
            }
            Some(crate::rigid::RigidInput::Procedural(name))
        }
        (None, _) if args.mode == Some(ModeArg::Rigid) => {
            bail!("--mode rigid needs a glTF input or a rigid built-in source (--procgen shatter)")
        }
        _ => None,
    };
    if let Some(rigid_input) = rigid_input {
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
        let options = vat_bake::rigid::RigidBakeOptions {
            max_texture_dim: args.max_texture_dim,
            material_texture_size: args.material_texture_size,
            lods: lod_options(args),
        };
        return crate::rigid::bake(
            &rigid_input,
            &args.out,
            args.fps,
            &options,
            args.max_memory,
            args.resource_root.as_deref(),
        );
    }
    let rig_source = match (input, args.procgen.as_deref()) {
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
    let rig = load_rig(&rig_source, args.skin, args.max_memory, args.resource_root.as_deref())?;
    let mut bar = ProgressLine { enabled: std::io::stderr().is_terminal() };
    let source = rig_source.describe();
    let prepared = prepare::prepare_with_progress(&rig, &options, &mut |p| bar.update(p))
        .with_context(|| format!("{source}: bake failed"))?;
    bar.finish();
    let (stats, report) = write_verified(prepared, &rig, &args.out, &source, args.accept_influence_loss)?;
    let s = &stats;
    let out = std::io::stdout();
    let mut out = out.lock();
    let baked_vertices: u64 = rig.meshes.iter().map(|m| m.vertex_count() as u64).sum();
    writeln!(
        out,
        "baked {source} -> {}: {}, {} of {} scene vertices ({} in the \
         animation texture); {}, {} frames, texture {} x {}, {} bytes/vertex/frame",
        args.out.display(),
        rig.source_summary(),
        baked_vertices,
        baked_vertices + rig.left_out_vertices,
        s.vertex_count,
        if s.clips == 1 { "1 clip".to_owned() } else { format!("{} clips", s.clips) },
        s.frames,
        s.texture_width,
        s.texture_height,
        s.bytes_per_vertex_frame
    )?;
    // The import's and the bake's notes, a note repeated between them said once.
    for note in vat_bake::notes::collapse(rig.notes.iter().chain(&s.notes).map(String::as_str)) {
        writeln!(out, "  note: {note}")?;
    }
    for c in &s.clip_looping {
        let why = match c.decision {
            LoopDecision::Option => "chosen with --loop/--once".to_owned(),
            LoopDecision::Source => "the source says".to_owned(),
            LoopDecision::Seam { seam_mm, quantum_mm } => {
                format!("its last pose is {seam_mm:.3} mm from its first, quantum {quantum_mm:.3} mm")
            }
            LoopDecision::Pose => "one key: a pose".to_owned(),
        };
        let mode = if c.decision == LoopDecision::Pose {
            "pose"
        } else if c.looping {
            "loops"
        } else {
            "plays once"
        };
        writeln!(out, "  clip {:?} {mode} ({why})", c.clip)?;
    }
    let tris: Vec<String> = s.triangle_counts.iter().map(u32::to_string).collect();
    writeln!(out, "  LOD triangles: {}", tris.join(" / "))?;
    print_paths(&mut out, &report)?;
    for w in s.warnings.iter().chain(&report.warnings) {
        writeln!(out, "  warning: {w}")?;
    }
    match peak_rss_bytes() {
        Some(peak) => {
            writeln!(
                out,
                "  {:.1} ms in all; peak memory {:.1} MiB of the {:.1} MiB budget (--max-memory)",
                started.elapsed().as_secs_f64() * 1e3,
                peak as f64 / 1_048_576.0,
                args.max_memory as f64 / 1_048_576.0
            )?;
            if peak > args.max_memory {
                writeln!(out, "  warning: the process's peak memory exceeded --max-memory")?;
            }
        }
        None => writeln!(out, "  {:.1} ms in all", started.elapsed().as_secs_f64() * 1e3)?,
    }
    Ok(())
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

/// One line per playback path the report checked, and one per failure.
fn print_paths(out: &mut dyn Write, report: &VerifyReport) -> std::io::Result<()> {
    for p in &report.paths {
        let detail = match p.path.as_str() {
            "vat" => format!(
                "{} vertex-frames, position max {:.4} mm, mean {:.4} mm (bound {:.4} mm); normals max {:.4} deg \
                 (bound {:.4} deg); {}{}",
                report.vertex_frames,
                report.position_max_error_mm,
                report.position_mean_error_mm,
                p.bound_mm,
                report.normal_max_error_deg,
                report.normal_bound_deg,
                match (report.tangent_max_error_deg, report.tangent_bound_deg) {
                    (Some(t), Some(b)) => format!("tangents max {t:.4} deg (bound {b:.4} deg); "),
                    _ => String::new(),
                },
                if report.mid_frame_vertex_samples > 0 {
                    format!("mid-frame interpolation max {:.4} mm", report.mid_frame_position_max_error_mm)
                } else {
                    "mid-frame interpolation: see vat verify".to_owned()
                }
            ),
            _ => format!("max {:.6} mm (bound {:.6} mm)", p.max_error_mm, p.bound_mm),
        };
        writeln!(out, "  verified {}: {detail}: {}", p.path, if p.passed { "PASSED" } else { "FAILED" })?;
    }
    if let Some(e) = report.influence_reduction_max_error_mm {
        writeln!(
            out,
            "  {} vertices baked with their 8 largest influences: up to {e:.4} mm from full skinning{}",
            report.reduced_influence_vertices,
            if report.influence_loss_accepted { " (accepted)" } else { "" }
        )?;
    }
    for c in report.clips.iter().filter(|c| c.looping && c.frames > 1) {
        if let Some(seam) = c.seam_mm {
            writeln!(
                out,
                "  loop seam of {:?}: {seam:.3} mm (largest frame-to-frame step {:.3} mm){}",
                c.name,
                c.max_frame_step_mm,
                if c.seam_warning { ": WARNING, it pops at every wrap" } else { "" }
            )?;
        }
    }
    for f in &report.failures {
        writeln!(out, "  failure: {f}")?;
    }
    Ok(())
}

/// `vat verify`: every playback path of the file (VAT, bone, capture tracks) against fresh skinning
/// of the full source, each against its own bound; exits non-zero if any fails.
pub(crate) fn verify(args: &VerifyArgs) -> Result<()> {
    let bytes = read_vat(&args.file, args.max_memory)?;
    let asset = Asset::parse_with_limits(&bytes, &load_limits(args.max_memory))
        .with_context(|| format!("{}: not a valid .vat file", args.file.display()))?;
    if asset.manifest().mode() == vat_core::container::VatMode::Sprite {
        return crate::sprite::verify(
            &args.file,
            &asset,
            args.source.as_deref(),
            args.json,
            args.max_memory,
            &args.interop,
        );
    }
    if asset.manifest().mode() == vat_core::container::VatMode::Fluid {
        return crate::fluid::verify(
            &args.file,
            &asset,
            args.source.as_deref(),
            args.json,
            args.max_memory,
            &args.interop,
        );
    }
    if asset.manifest().mode() == vat_core::container::VatMode::Rigid {
        return crate::rigid::verify(
            &args.file,
            &asset,
            args.source.as_deref(),
            args.json,
            args.max_memory,
            args.resource_root.as_deref(),
            &args.interop.houdini_files(),
        );
    }
    let baked_name = asset.manifest().name.clone();
    // Another tool's bake (OpenVAT, Houdini VAT 3) is decoded as its import decoded it.
    let imported = crate::interop::imported_rig(
        &args.file,
        &asset,
        args.source.as_deref(),
        &args.interop,
        args.fps,
        args.max_memory,
    )?;
    let rig_source = match args.source.as_deref() {
        Some(path) if path.is_dir() => {
            // A sequence bakes one texture frame per source frame, so the clip's rate is the source's.
            let fps = args.fps.or_else(|| asset.manifest().clips.first().map(|c| c.fps)).unwrap_or(30.0);
            RigSource::Sequence(path, fps)
        }
        Some(path) => RigSource::File(path),
        None if procgen::SOURCES.contains(&baked_name.as_str()) => RigSource::Procedural(&baked_name),
        None => bail!(
            "{}: asset {:?} was not baked from a built-in source; give the source it was baked from with --source",
            args.file.display(),
            crate::terminal_safe(&baked_name)
        ),
    };
    let rig = match imported {
        Some(rig) => rig,
        None => load_rig(&rig_source, args.skin, args.max_memory, args.resource_root.as_deref())?,
    };
    let options =
        VerifyOptions { accept_influence_loss: args.accept_influence_loss, ..VerifyOptions::default() };
    let report: VerifyReport = verify::verify_with(&asset, &rig, &options)
        .with_context(|| format!("{}: cannot verify against its source", args.file.display()))?;
    let out = std::io::stdout();
    let mut out = out.lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(out, "{}: {}", args.file.display(), if report.passed { "PASSED" } else { "FAILED" })?;
        print_paths(&mut out, &report)?;
        for w in &report.warnings {
            writeln!(out, "  warning: {w}")?;
        }
    }
    if !report.passed {
        bail!("{}: verification failed: {}", args.file.display(), report.failures.join("; "));
    }
    Ok(())
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
