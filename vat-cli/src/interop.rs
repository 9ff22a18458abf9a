//! `vat export-openvat`, `vat import-openvat` and `vat import-houdini`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use vat_bake::interop::openvat::{self, ExportTarget, NormalsExport, OpenVatExport, OpenVatOptions};
use vat_bake::interop::{ImportedBake, SourceKind, TextureFormat, detect_source, houdini};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{self, BakeOptions};
use vat_core::container::Asset;

use crate::bake::{FormatArg, parse_bytes, read_vat};
use crate::source::{FluidInput, Input, Load, RigidInput, SpriteInput};
use vat_bake::BakedFile;
use vat_bake::verify::{VerifyOptions, VerifyReport};

/// `--target` of export-openvat.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum TargetArg {
    /// What most OpenVAT decoders play: half-float EXR, packed normals, 1-based clips in texture
    /// order, offsets in Blender axes (Godot's addon and bevy_open_vat play it; see the notes).
    Default,
    /// sharpen3d's Unity package: the glb's offsets in a glTF importer's object space (centimetres).
    Unity,
    /// sharpen3d's Unreal material (not readable here: the default layout, said in a note).
    Unreal,
    /// antzGames' Godot addon: half-float EXR, packed normals, each clip closed by one more row (a
    /// loop's first frame, a one-shot's last).
    Godot,
    /// bevy_open_vat: 32-bit EXR, packed normals, 0-based clips with a boundary row.
    Bevy,
    /// The three.js OpenVAT viewer: half-float EXR, no normals, TEXCOORD_1 half a row above.
    Three,
}

/// `--format` of export-openvat.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum OpenVatFormatArg {
    /// 16-bit RGB PNG.
    Png16,
    /// Half-float RGB EXR (what Blender's OpenVAT writes).
    Exr16,
    /// 32-bit float RGB EXR.
    Exr32,
}

/// `--normals` of export-openvat.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum NormalsArg {
    /// In the position texture's second half (height 2 x frames).
    Packed,
    /// In `<name>_vnrm.<ext>`.
    Separate,
    /// None.
    None,
}

/// `vat export-openvat` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExportOpenVatArgs {
    /// The .vat file.
    file: PathBuf,
    /// Output folder (created if missing; its files appear together or not at all, and a file in it
    /// that is not a regular file is never replaced).
    #[arg(long, short)]
    out: PathBuf,
    /// Whose OpenVAT decoder the files are laid out for: texture format, normals, clip rows and
    /// base, the mesh's offset space (each target's choices and measured errors: the guide's interop
    /// chapter).
    #[arg(long, value_enum, default_value_t = TargetArg::Default)]
    target: TargetArg,
    /// Texture format [default: the target's: exr32 for bevy, else exr16].
    #[arg(long, value_enum)]
    format: Option<OpenVatFormatArg>,
    /// Where normals go [default: the target's: none for three, else packed].
    #[arg(long, value_enum)]
    normals: Option<NormalsArg>,
    /// Refuse a .vat larger than this many bytes (suffixes K, M, G: binary).
    #[arg(long, value_parser = parse_bytes, default_value = "4G")]
    max_memory: u64,
}

/// Options shared by the importers: how the import is baked.
#[derive(Debug, Args)]
pub(crate) struct ImportBakeArgs {
    /// Output .vat path (written atomically, only once verified).
    #[arg(long, short)]
    out: PathBuf,
    /// Vertex texture format of the .vat (default packed64; not for rigid-body or particle imports,
    /// whose pieces and particles are stored in their modes' own texels).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Number of LODs requested (1..=8; not for dynamic-mesh or particle imports).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    lods: Option<u32>,
    /// Memory budget of the import and bake (suffixes K, M, G: binary).
    #[arg(long, value_parser = parse_bytes, default_value = "2G")]
    max_memory: u64,
}

/// `vat import-openvat` arguments.
#[derive(Debug, Args)]
pub(crate) struct ImportOpenVatArgs {
    /// The folder of the OpenVAT bake (`<N>-remap_info.json`, `<N>_vat.exr|png` or
    /// `<N>_packed_vat.exr|png`, `<N>.glb` or `M_<N>_glTF_yUp.glb`; also looked for in its direct
    /// subfolders, such as OpenVAT's `packed/` and `mesh/`).
    dir: PathBuf,
    /// The sidecar (`*-remap_info.json`), when the folder has several or it is renamed.
    #[arg(long, visible_alias = "sidecar", value_name = "FILE")]
    json: Option<PathBuf>,
    /// The mesh, when discovery cannot find it (not `<N>.glb|gltf`, `M_<N>_glTF_yUp.glb`, or the
    /// folder's only glTF).
    #[arg(long, value_name = "FILE")]
    mesh: Option<PathBuf>,
    /// The position texture, when it is not `<N>_vat.exr|png`, `<N>_packed_vat.exr|png` or the
    /// folder's only `*_vat` texture.
    #[arg(long, value_name = "FILE")]
    texture: Option<PathBuf>,
    /// The separate normal texture, when it is not `<N>_vnrm.<ext>` or the folder's only `*_vnrm`.
    #[arg(long, value_name = "FILE")]
    normal_texture: Option<PathBuf>,
    /// The scene frame of the texture's first row (default: 0 when a clip starts at 0, else 1).
    #[arg(long)]
    first_frame: Option<i64>,
    /// Frames per second when the sidecar has no clip table.
    #[arg(long, default_value_t = 24.0, value_parser = crate::bake::parse_rate)]
    fps: f32,
    /// Recompute normals from the decoded positions (keeps hard edges hard).
    #[arg(long)]
    recompute_normals: bool,
    #[command(flatten)]
    bake: ImportBakeArgs,
}

/// `vat import-houdini` arguments.
#[derive(Debug, Args)]
pub(crate) struct ImportHoudiniArgs {
    /// The folder of the Houdini VAT 3 bake (`<N>_data.json`, `<N>_pos.exr|png`, `<N>_rot.exr` for
    /// rigid bodies, `<N>_mesh.glb`; also looked for in its direct subfolders, such as VAT 3's
    /// `geo/`, `tex/` and `data/`).
    dir: PathBuf,
    #[command(flatten)]
    files: HoudiniFileArgs,
    /// Rigid-body bakes: frames baked per source frame, 1..=64 (default: the fewest that keep vat's
    /// in-between turns within 0.5 deg of VAT 3's shaders, at most 8).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    substeps: Option<u32>,
    /// Particle bakes: the card edge at scale 1, metres (the VAT 3 material's Particle Width Base
    /// Scale times its scale multipliers; not in the files).
    #[arg(long, value_name = "METRES", default_value_t = houdini::HOUDINI_PARTICLE_SIZE, value_parser = parse_metres)]
    particle_size: f32,
    #[command(flatten)]
    bake: ImportBakeArgs,
}

/// A positive, finite length in metres.
fn parse_metres(text: &str) -> std::result::Result<f32, String> {
    let v: f32 = text.trim().parse().map_err(|e| format!("{text:?} is not a number ({e})"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a positive, finite length in metres"))
    }
}

/// The files of a Houdini VAT 3 bake, when VAT 3's naming does not find them.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct HoudiniFileArgs {
    /// The parameters (`<N>_data.json`).
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,
    /// The position texture (`<N>_pos.exr|png`).
    #[arg(long, value_name = "FILE")]
    pos: Option<PathBuf>,
    /// The rotation texture (`<N>_rot.exr|png`).
    #[arg(long, value_name = "FILE")]
    rot: Option<PathBuf>,
    /// The colour texture (`<N>_col.exr|png`).
    #[arg(long, value_name = "FILE")]
    col: Option<PathBuf>,
    /// The lookup table of a dynamic-mesh bake (`<N>_lookup.exr|png`).
    #[arg(long, value_name = "FILE")]
    lookup: Option<PathBuf>,
    /// The mesh (`<N>_mesh.glb|gltf`, or `.obj` for a soft body; for `vat verify`, an OpenVAT
    /// bake's mesh too).
    #[arg(long, value_name = "FILE")]
    mesh: Option<PathBuf>,
}

impl HoudiniFileArgs {
    /// The files as the import takes them.
    pub(crate) fn files(&self) -> houdini::HoudiniFiles {
        houdini::HoudiniFiles {
            data: self.data.clone(),
            pos: self.pos.clone(),
            rot: self.rot.clone(),
            col: self.col.clone(),
            lookup: self.lookup.clone(),
            mesh: self.mesh.clone(),
        }
    }
}

/// `vat export-openvat`.
pub(crate) fn export_openvat(args: &ExportOpenVatArgs) -> Result<()> {
    vat_core::files::PendingFolder::check(&args.out).with_context(|| "--out cannot be written".to_owned())?;
    let bytes = read_vat(&args.file, args.max_memory)?;
    let asset = Asset::parse_with_limits(&bytes, &crate::bake::load_limits(args.max_memory))
        .with_context(|| format!("{}: not a valid .vat file", args.file.display()))?;
    let target = match args.target {
        TargetArg::Default => ExportTarget::Default,
        TargetArg::Unity => ExportTarget::Unity,
        TargetArg::Unreal => ExportTarget::Unreal,
        TargetArg::Godot => ExportTarget::Godot,
        TargetArg::Bevy => ExportTarget::Bevy,
        TargetArg::Three => ExportTarget::Three,
    };
    let mut options = OpenVatExport::for_target(target);
    if let Some(format) = args.format {
        options.format = match format {
            OpenVatFormatArg::Png16 => TextureFormat::Png16,
            OpenVatFormatArg::Exr16 => TextureFormat::Exr16,
            OpenVatFormatArg::Exr32 => TextureFormat::Exr32,
        };
    }
    if let Some(normals) = args.normals {
        options.normals = match normals {
            NormalsArg::Packed => NormalsExport::Packed,
            NormalsArg::Separate => NormalsExport::Separate,
            NormalsArg::None => NormalsExport::None,
        };
    }
    let written = openvat::export_openvat(&asset, &args.out, &options)
        .with_context(|| format!("{}: cannot export as OpenVAT", args.file.display()))?;
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(
        out,
        "exported {} -> {} for {}: {} vertices x {} frames ({} x {} texels), Min {:?} Max {:?} ({})",
        args.file.display(),
        args.out.display(),
        target.name(),
        written.width,
        written.frames,
        written.width,
        written.height,
        written.min,
        written.max,
        match target.offset_space() {
            openvat::export_targets::OffsetSpace::Blender => "Blender axes, metres",
            openvat::export_targets::OffsetSpace::GltfCentimetres => "glTF axes, centimetres",
        }
    )?;
    for f in &written.files {
        writeln!(out, "  wrote {}", f.display())?;
    }
    let b = written.position_bound;
    writeln!(
        out,
        "  {}'s decoder of these files is within {:.4} / {:.4} / {:.4} mm (x / y / z) of vat's own decode",
        target.name(),
        b[0] * 1e3,
        b[1] * 1e3,
        b[2] * 1e3
    )?;
    for note in &written.notes {
        writeln!(out, "  note: {}", crate::terminal_safe(note))?;
    }
    Ok(())
}

/// `vat import-openvat`.
pub(crate) fn import_openvat(args: &ImportOpenVatArgs) -> Result<()> {
    crate::bake::check_out(&args.bake.out)?;
    let options = OpenVatOptions {
        sidecar: args.json.clone(),
        mesh: args.mesh.clone(),
        texture: args.texture.clone(),
        normal_texture: args.normal_texture.clone(),
        first_frame: args.first_frame,
        fps: args.fps,
        recompute_normals: args.recompute_normals,
        max_memory: args.bake.max_memory,
    };
    let imported = openvat::read_openvat(&args.dir, &options)
        .with_context(|| format!("{}: cannot import the OpenVAT bake", args.dir.display()))?;
    bake_import(&args.dir, imported, &args.bake)
}

/// `vat import-houdini`.
pub(crate) fn import_houdini(args: &ImportHoudiniArgs) -> Result<()> {
    crate::bake::check_out(&args.bake.out)?;
    let files = args.files.files();
    let data = houdini::read_data_in(&args.dir, &files)
        .with_context(|| format!("{}: cannot import the Houdini VAT bake", args.dir.display()))?;
    if data.vat_type == "Rigidbody" {
        if args.bake.format.is_some() {
            anyhow::bail!(
                "--format does not apply to a Rigidbody bake: its pieces are stored in the rigid mode's own 16-byte \
                 texel (unorm16 pivot, snorm16 quaternion)"
            );
        }
        // Pieces in vat's rigid mode (one texel per piece per frame), not per-vertex frames.
        let options = BakeOptions {
            lods: args.bake.lods.map_or_else(LodOptions::default, LodOptions::Count),
            ..Default::default()
        };
        let input = Input::Rigid(RigidInput::Houdini(&args.dir, args.substeps, &files));
        return bake_import_source(&input, data.fps, &options, &args.bake);
    }
    if data.vat_type == "Particles" {
        if args.substeps.is_some() || args.bake.lods.is_some() || args.bake.format.is_some() {
            anyhow::bail!(
                "--substeps, --lods and --format do not apply to a Particles bake: it imports into the sprite mode, one \
                 16-byte texel per particle per frame"
            );
        }
        // VAT 3's shaders loop: the source loops ([`Input::loops`]).
        let input = Input::Sprite(SpriteInput::Houdini(&args.dir, &files, args.particle_size));
        return bake_import_source(&input, data.fps, &BakeOptions::default(), &args.bake);
    }
    if data.vat_type == "DynamicMesh" {
        if args.substeps.is_some() || args.bake.lods.is_some() {
            anyhow::bail!(
                "--substeps and --lods do not apply to a DynamicMesh bake: it imports into the fluid mode, whose every \
                 frame has its own triangles"
            );
        }
        let options = BakeOptions {
            format: args.bake.format.unwrap_or(FormatArg::Packed64).into(),
            ..Default::default()
        };
        // VAT 3's shaders loop: the source loops ([`Input::loops`]).
        let input = Input::Fluid(FluidInput::Houdini(&args.dir, &files));
        return bake_import_source(&input, data.fps, &options, &args.bake);
    }
    if args.substeps.is_some() {
        anyhow::bail!(
            "--substeps applies to Rigidbody bakes; {} is a {} bake",
            args.dir.display(),
            data.vat_type
        );
    }
    let options = houdini::HoudiniOptions { max_memory: args.bake.max_memory, files, ..Default::default() };
    match houdini::read_houdini(&args.dir, &options)
        .with_context(|| format!("{}: cannot import the Houdini VAT bake", args.dir.display()))?
    {
        houdini::HoudiniBake::Softbody(imported) => bake_import(&args.dir, imported, &args.bake),
        houdini::HoudiniBake::Rigidbody(_) => {
            anyhow::bail!("{}: the bake's _data.json changed while it was read", args.dir.display())
        }
    }
}

/// Bakes an import that is a rigid, sprite or fluid source (`fps`: the rate its pieces are sampled
/// at) through `vat bake`'s one path.
fn bake_import_source(
    input: &Input<'_>,
    fps: f32,
    options: &BakeOptions,
    args: &ImportBakeArgs,
) -> Result<()> {
    let load = Load { max_memory: args.max_memory, fps, skin: None, resource_root: None };
    let options = BakeOptions { max_memory: args.max_memory, ..options.clone() };
    let verify = VerifyOptions { accept_influence_loss: false, mid_frames: false };
    crate::bake::bake_input(input, &load, &options, &verify, &args.out, std::time::Instant::now(), None)
}

/// Bakes an import in vat's formats, writes it to a temporary name, reads it back, verifies what is
/// on disk against the decoded source frames and only then gives it its name.
fn bake_import(dir: &Path, imported: ImportedBake, args: &ImportBakeArgs) -> Result<()> {
    let rig = imported.to_rig().with_context(|| format!("{}: cannot build the rig", dir.display()))?;
    let options = imported.at_own_rates(BakeOptions {
        lods: args.lods.map_or_else(LodOptions::default, LodOptions::Count),
        format: args.format.unwrap_or(FormatArg::Packed64).into(),
        max_memory: args.max_memory,
        ..BakeOptions::default()
    });
    let prepared =
        prepare::prepare(&rig, &options).with_context(|| format!("{}: bake failed", dir.display()))?;
    let stats = prepared.stats.clone();
    let verify = VerifyOptions { accept_influence_loss: false, mid_frames: false };
    let what = dir.display().to_string();
    let report = crate::bake::write_verified(
        &rig,
        BakedFile::Prepared(Box::new(prepared)),
        &args.out,
        &what,
        &verify,
    )?;
    let report: &dyn std::any::Any = report.as_ref();
    let report = report.downcast_ref::<VerifyReport>().context("a rig's verification report")?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let seq = &imported.sequence;
    writeln!(
        out,
        "imported {} -> {}: {} vertices, {} source frames, {} clips; baked {} frames, texture {} x {}, {} bytes/vertex/frame",
        dir.display(),
        args.out.display(),
        seq.vertex_count(),
        seq.frame_count(),
        imported.clips.len(),
        stats.frames,
        stats.texture_width,
        stats.texture_height,
        stats.animation_size_text()
    )?;
    // The import's and the bake's notes (a fitted skin, its residual), a repeated note said once.
    for note in vat_bake::notes::collapse(rig.notes.iter().chain(&stats.notes).map(String::as_str)) {
        writeln!(out, "  note: {}", crate::terminal_safe(&note))?;
    }
    for c in &imported.clips {
        writeln!(
            out,
            "  clip \"{}\": source frames {}..={} at {} fps, {}",
            crate::terminal_safe(&c.name),
            c.first,
            c.last,
            c.fps,
            if c.looping { "loops" } else { "plays once" }
        )?;
    }
    let s = imported.source_step;
    writeln!(
        out,
        "  the source's own quantisation: up to {:.4} / {:.4} / {:.4} mm (x / y / z) from what it was baked from (not checkable here)",
        s[0] * 1e3,
        s[1] * 1e3,
        s[2] * 1e3
    )?;
    writeln!(out, "  verified against the decoded source frames: {}: PASSED", report.figures_text())?;
    for w in stats.warnings.iter().chain(&report.warnings) {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

/// `vat verify --source FOLDER` where the folder is another tool's bake (OpenVAT, Houdini VAT 3):
/// the files discovery cannot find and the import options that change the decode, as given to
/// `vat import-openvat` / `vat import-houdini`.
#[derive(Debug, Clone, Default, Args)]
#[command(
    next_help_heading = "When --source is an OpenVAT or Houdini VAT 3 bake folder (as given to its import)"
)]
pub(crate) struct VerifySourceArgs {
    /// OpenVAT: the sidecar (`*-remap_info.json`; import-openvat's --json).
    #[arg(long, value_name = "FILE")]
    sidecar: Option<PathBuf>,
    /// OpenVAT: the position texture.
    #[arg(long, value_name = "FILE")]
    texture: Option<PathBuf>,
    /// OpenVAT: the separate normal texture.
    #[arg(long, value_name = "FILE")]
    normal_texture: Option<PathBuf>,
    /// OpenVAT: the scene frame of the texture's first row.
    #[arg(long)]
    first_frame: Option<i64>,
    /// OpenVAT: the import recomputed the normals.
    #[arg(long)]
    recompute_normals: bool,
    /// Houdini particles: the card edge at scale 1, metres (import-houdini's --particle-size).
    #[arg(long, value_name = "METRES", value_parser = parse_metres)]
    particle_size: Option<f32>,
    #[command(flatten)]
    houdini: HoudiniFileArgs,
}

impl VerifySourceArgs {
    /// The Houdini files named.
    pub(crate) fn houdini_files(&self) -> houdini::HoudiniFiles {
        self.houdini.files()
    }

    /// The card edge of a particle bake's import.
    pub(crate) fn particle_size(&self) -> f32 {
        self.particle_size.unwrap_or(houdini::HOUDINI_PARTICLE_SIZE)
    }

    fn openvat_options(&self, fps: f32, max_memory: u64) -> OpenVatOptions {
        OpenVatOptions {
            sidecar: self.sidecar.clone(),
            mesh: self.houdini.mesh.clone(),
            texture: self.texture.clone(),
            normal_texture: self.normal_texture.clone(),
            first_frame: self.first_frame,
            fps,
            recompute_normals: self.recompute_normals,
            max_memory,
        }
    }
}

/// What kind of other tool's bake `source` is (`None`: none, or not a folder).
pub(crate) fn detect(source: &Path, args: &VerifySourceArgs, max_memory: u64) -> Result<Option<SourceKind>> {
    detect_source(source, &args.openvat_options(24.0, max_memory), &args.houdini_files())
        .with_context(|| format!("{}: cannot read the bake's parameters", source.display()))
}

/// The rig a soft-mode asset imported from another tool's bake is verified against: the folder
/// decoded as `vat import-openvat` / `vat import-houdini` decoded it (`fps`: the rate of a bake
/// without a clip table, default the file's clip rate). `None` when `source` is not such a bake.
pub(crate) fn imported_rig(
    file: &Path,
    asset: &Asset<'_>,
    source: Option<&Path>,
    args: &VerifySourceArgs,
    fps: Option<f32>,
    max_memory: u64,
) -> Result<Option<vat_bake::rig::Rig>> {
    let Some(dir) = source else { return Ok(None) };
    let imported = match detect(dir, args, max_memory)? {
        None => return Ok(None),
        Some(SourceKind::OpenVat) => {
            let fps = fps.or_else(|| asset.manifest().clips.first().map(|c| c.fps)).unwrap_or(24.0);
            openvat::read_openvat(dir, &args.openvat_options(fps, max_memory))
                .with_context(|| format!("{}: cannot read the OpenVAT bake", dir.display()))?
        }
        Some(SourceKind::Houdini(data)) => {
            let options =
                houdini::HoudiniOptions { max_memory, files: args.houdini_files(), ..Default::default() };
            match houdini::read_houdini(dir, &options) {
                Ok(houdini::HoudiniBake::Softbody(b)) => b,
                _ => anyhow::bail!(
                    "{}: {} is a Houdini {} bake, which imports into another mode than this {}-mode file's",
                    file.display(),
                    dir.display(),
                    crate::terminal_safe(&data.vat_type),
                    mode_name(asset)
                ),
            }
        }
    };
    eprintln!(
        "note: {}: decoded as its import decodes it ({} vertices, {} frames, {} clips)",
        dir.display(),
        imported.sequence.vertex_count(),
        imported.sequence.frame_count(),
        imported.clips.len()
    );
    Ok(Some(imported.to_rig().with_context(|| format!("{}: cannot build the rig", dir.display()))?))
}

fn mode_name(asset: &Asset<'_>) -> &'static str {
    match asset.manifest().mode() {
        vat_core::container::VatMode::Soft => "soft",
        vat_core::container::VatMode::Rigid => "rigid",
        vat_core::container::VatMode::Fluid => "fluid",
        vat_core::container::VatMode::Sprite => "sprite",
    }
}
