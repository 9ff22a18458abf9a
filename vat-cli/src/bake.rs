//! `vat bake`, `vat verify` and `vat export-glb`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use vat_bake::gltf_import::{self, ImportOptions};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{self, BakeOptions, Progress};
use vat_bake::rig::Rig;
use vat_bake::verify::{self, VerifyReport};
use vat_bake::{export, procgen};
use vat_core::container::{Asset, Limits};
use vat_core::encoding::{NormalRounding, VertexFormat};

/// Vertex texture formats selectable on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
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

/// `vat bake` arguments.
#[derive(Debug, Args)]
pub(crate) struct BakeArgs {
    /// glTF input (.gltf or .glb). Without it (or with --procgen) the procedural humanoid is baked.
    input: Option<PathBuf>,
    /// Bake the built-in procedural humanoid.
    #[arg(long, conflicts_with = "input")]
    procgen: bool,
    /// Output .vat path (written atomically: a temp file, then a rename).
    #[arg(long, short)]
    out: PathBuf,
    /// Samples per second of every clip.
    #[arg(long, default_value_t = 30.0)]
    fps: f32,
    /// Samples per clip instead of --fps.
    #[arg(long)]
    frames: Option<u32>,
    /// Only these clips (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    clips: Option<Vec<String>>,
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
    /// Which skin of the glTF to bake (index).
    #[arg(long)]
    skin: Option<usize>,
    /// Quantise normals to the best of the four neighbouring octahedral codes (a third smaller worst-case
    /// angle than nearest rounding, slower to bake).
    #[arg(long)]
    precise_normals: bool,
    /// Capture per-frame transforms of these bones (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    capture: Option<Vec<String>>,
    /// Memory budget of the import and the bake, in bytes (suffixes K, M, G: binary). A bake that
    /// would need more is refused before allocating, with the numbers.
    #[arg(long, value_parser = parse_bytes, default_value = "2G")]
    max_memory: u64,
}

/// `vat verify` arguments.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The .vat file.
    file: PathBuf,
    /// The source it was baked from (.gltf/.glb); the procedural humanoid when omitted.
    #[arg(long)]
    source: Option<PathBuf>,
    /// Which skin of the source (as given to bake).
    #[arg(long)]
    skin: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Refuse a .vat file (or source) larger than this many bytes (suffixes K, M, G: binary), before
    /// reading it.
    #[arg(long, value_parser = parse_bytes, default_value = "4G")]
    max_memory: u64,
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

/// The reader's limits with `max_memory` as the largest file.
pub(crate) fn load_limits(max_memory: u64) -> Limits {
    Limits { max_total_bytes: max_memory, ..Limits::default() }
}

/// Reads a `.vat` file, refusing one larger than `max_memory` bytes before reading it.
pub(crate) fn read_vat(path: &Path, max_memory: u64) -> Result<Vec<u8>> {
    let len = std::fs::metadata(path).with_context(|| format!("{}: cannot read", path.display()))?.len();
    if len > max_memory {
        bail!(
            "{}: the file is {len} bytes, more than the memory budget of {max_memory} bytes (--max-memory); \
             not read",
            path.display()
        );
    }
    std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))
}

fn load_rig(input: Option<&Path>, skin: Option<usize>, max_memory: u64) -> Result<Rig> {
    match input {
        Some(path) => Ok(gltf_import::import_file(path, &ImportOptions { skin, max_memory })?),
        None => Ok(procgen::humanoid()),
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

/// `vat bake`: import (or build) the rig, prepare, verify in memory, then write atomically. A bake that
/// fails verification writes nothing.
pub(crate) fn bake(args: &BakeArgs) -> Result<()> {
    let started = Instant::now();
    let input = if args.procgen { None } else { args.input.as_deref() };
    let rig = load_rig(input, args.skin, args.max_memory)?;
    let options = BakeOptions {
        fps: args.fps,
        frames: args.frames,
        clips: args.clips.clone(),
        lods: match (&args.lods, &args.lod_ratios) {
            (_, Some(r)) => LodOptions::Ratios(r.clone()),
            (Some(n), None) => LodOptions::Count(*n),
            (None, None) => LodOptions::default(),
        },
        bones: args.bones,
        tangents: args.tangents,
        format: args.format.into(),
        max_texture_dim: args.max_texture_dim,
        captures: args.capture.clone().unwrap_or_default(),
        normal_rounding: if args.precise_normals { NormalRounding::Precise } else { NormalRounding::Nearest },
        max_memory: args.max_memory,
        ..BakeOptions::default()
    };
    let mut bar = ProgressLine { enabled: std::io::stderr().is_terminal() };
    let source = input.map_or_else(|| "procedural humanoid".to_string(), |p| p.display().to_string());
    let prepared = prepare::prepare_with_progress(&rig, &options, &mut |p| bar.update(p))
        .with_context(|| format!("{source}: bake failed"))?;
    bar.finish();
    let report =
        verify::verify_prepared(&prepared, &rig).with_context(|| format!("{source}: verification"))?;
    if !report.passed {
        bail!(
            "{source}: verification failed: max position error {:.4} mm exceeds the {:?} bound {:.4} mm \
             (or normals {:.4} deg > {:.4} deg); nothing written",
            report.position_max_error_mm,
            options.format,
            report.quantum_mm,
            report.normal_max_error_deg,
            report.normal_bound_deg
        );
    }
    prepared.write(&args.out).with_context(|| format!("{}: cannot write", args.out.display()))?;
    let s = &prepared.stats;
    println!(
        "baked {source} -> {}: {} vertices, {} clips, {} frames, texture {} x {}, {} bytes/vertex/frame",
        args.out.display(),
        s.vertex_count,
        s.clips,
        s.frames,
        s.texture_width,
        s.texture_height,
        s.bytes_per_vertex_frame
    );
    let tris: Vec<String> = s.triangle_counts.iter().map(u32::to_string).collect();
    println!("  LOD triangles: {}", tris.join(" / "));
    println!(
        "  verified {} vertex-frames: position max {:.4} mm, mean {:.4} mm (bound {:.4} mm); normals max {:.4} deg",
        report.vertex_frames,
        report.position_max_error_mm,
        report.position_mean_error_mm,
        report.quantum_mm,
        report.normal_max_error_deg
    );
    for w in &s.warnings {
        println!("  warning: {w}");
    }
    println!("  {:.1} ms in all", started.elapsed().as_secs_f64() * 1e3);
    Ok(())
}

/// `vat verify`: decode every vertex of every frame and compare with fresh skinning of the source.
pub(crate) fn verify(args: &VerifyArgs) -> Result<()> {
    let bytes = read_vat(&args.file, args.max_memory)?;
    let asset = Asset::parse_with_limits(&bytes, &load_limits(args.max_memory))
        .with_context(|| format!("{}: not a valid .vat file", args.file.display()))?;
    let rig = load_rig(args.source.as_deref(), args.skin, args.max_memory)?;
    let report: VerifyReport = verify::verify(&asset, &rig)
        .with_context(|| format!("{}: cannot verify against its source", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {} vertex-frames; position max {:.4} mm, mean {:.4} mm (bound {:.4} mm); normals max {:.4} deg \
             (bound {:.4} deg); mid-frame interpolation max {:.4} mm: {}",
            args.file.display(),
            report.vertex_frames,
            report.position_max_error_mm,
            report.position_mean_error_mm,
            report.quantum_mm,
            report.normal_max_error_deg,
            report.normal_bound_deg,
            report.mid_frame_position_max_error_mm,
            if report.passed { "PASSED" } else { "FAILED" }
        );
    }
    if !report.passed {
        bail!("{}: verification failed", args.file.display());
    }
    Ok(())
}

/// `vat export-glb`: the procedural humanoid as an animated .glb (written atomically).
pub(crate) fn export_glb(out: &Path) -> Result<()> {
    let rig = procgen::humanoid();
    export::write_glb(&rig, out).with_context(|| format!("{}: cannot export", out.display()))?;
    println!("wrote {} ({} clips)", out.display(), rig.clips.len());
    Ok(())
}
