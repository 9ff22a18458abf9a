//! `vat bake --mode rigid` / `vat bake --procgen shatter` and `vat verify` of a rigid-mode file
//! (the rigid-body mode, [`vat_bake::rigid`]).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use vat_bake::gltf_import::{self, ImportOptions};
use vat_bake::rigid::{RigidBakeOptions, RigidSource, RigidVerifyReport, bake_rigid, verify_rigid};
use vat_core::container::Asset;

/// Where a rigid source comes from.
pub(crate) enum RigidInput<'a> {
    /// A glTF whose animated nodes carry meshes.
    File(&'a Path),
    /// A mesh-sequence folder (at a frame rate) whose pieces are detected as rigid.
    Sequence(&'a Path, f32),
    /// A built-in source ([`vat_procgen::RIGID_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 rigid-body bake folder, with the frames baked per source frame
    /// (`None`: chosen by the import) and the files named on the command line.
    Houdini(&'a Path, Option<u32>, &'a vat_bake::interop::houdini::HoudiniFiles),
}

impl RigidInput<'_> {
    fn describe(&self) -> String {
        match self {
            RigidInput::File(p) | RigidInput::Sequence(p, _) | RigidInput::Houdini(p, _, _) => {
                p.display().to_string()
            }
            RigidInput::Procedural(name) => format!("procedural {name}"),
        }
    }
}

/// Builds the rigid source: imports the glTF and samples its node-carried meshes at `fps`, reads
/// the mesh sequence and detects its rigid pieces (printing the fit's largest residual), or
/// regenerates the built-in source.
pub(crate) fn load(
    input: &RigidInput<'_>,
    fps: f32,
    max_memory: u64,
    resource_root: Option<&Path>,
) -> Result<RigidSource> {
    match *input {
        RigidInput::Sequence(dir, fps) => {
            let options = vat_bake::sequence::SequenceOptions { fps, max_memory };
            let folder = vat_bake::sequence::SequenceFolder::open(dir, &options)
                .with_context(|| format!("{}: cannot read the mesh sequence", dir.display()))?;
            for note in folder.notes() {
                eprintln!("note: {note}");
            }
            let tolerance = vat_bake::rigid::RIGID_DETECTION_TOLERANCE;
            let (source, residual) = RigidSource::from_folder(&folder, tolerance)
                .with_context(|| format!("{}: cannot bake in the rigid mode", dir.display()))?;
            eprintln!(
                "note: {}: {} frames at {fps} fps (streamed from the files); {} rigid pieces detected, largest \
                 fit residual {:.5} mm (tolerance {:.3} mm)",
                dir.display(),
                folder.files().len(),
                source.pieces.len(),
                residual * 1e3,
                f64::from(tolerance) * 1e3
            );
            Ok(source)
        }
        RigidInput::File(path) => {
            let options =
                ImportOptions { skin: None, max_memory, resource_root: resource_root.map(Path::to_path_buf) };
            let rig = gltf_import::import_file(path, &options)?;
            for note in &rig.notes {
                eprintln!("note: {}: {note}", path.display());
            }
            RigidSource::from_rig(&rig, fps)
                .with_context(|| format!("{}: cannot bake in the rigid mode", path.display()))
        }
        RigidInput::Houdini(dir, substeps, files) => {
            use vat_bake::interop::houdini::{self, HoudiniBake, HoudiniOptions};
            let options = HoudiniOptions { max_memory, substeps, files: files.clone(), ..Default::default() };
            match houdini::read_houdini(dir, &options)
                .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?
            {
                HoudiniBake::Rigidbody(imported) => {
                    for note in &imported.notes {
                        eprintln!("note: {}: {}", dir.display(), crate::terminal_safe(note));
                    }
                    Ok(imported.source)
                }
                HoudiniBake::Softbody(_) => {
                    bail!(
                        "{}: a Softbody bake has no rigid pieces (import it with vat import-houdini)",
                        dir.display()
                    )
                }
            }
        }
        RigidInput::Procedural(name) => match vat_procgen::rigid_by_name(name) {
            Some(source) => Ok(source),
            None => bail!(
                "no built-in rigid source named {name:?} (built-in: {})",
                vat_procgen::RIGID_SOURCES.join(", ")
            ),
        },
    }
}

/// `vat bake` in the rigid mode: bake, verify the bytes against the source, write atomically only
/// if they pass, print the figures.
pub(crate) fn bake(
    input: &RigidInput<'_>,
    out: &Path,
    fps: f32,
    options: &RigidBakeOptions,
    max_memory: u64,
    resource_root: Option<&Path>,
) -> Result<()> {
    let started = Instant::now();
    let what = input.describe();
    let source = load(input, fps, max_memory, resource_root)?;
    let (bytes, stats) = bake_rigid(&source, options).with_context(|| format!("{what}: bake failed"))?;
    let baked = started.elapsed();
    let asset = Asset::parse(&bytes).with_context(|| format!("{what}: the baked file does not read back"))?;
    let report = verify_rigid(&asset, &source).with_context(|| format!("{what}: cannot verify the bake"))?;
    if !report.passed {
        bail!("{what}: verification failed, nothing written: {}", report.failures.join("; "));
    }
    vat_core::files::write_file_atomically(out, &bytes)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    writeln!(
        o,
        "baked {what} -> {} (rigid): {} pieces, {} vertices, {} triangles; {} frames; piece texture {} x {} \
         ({} bytes, {} bytes/piece/frame), vertex texture {} bytes; {} bytes in all",
        out.display(),
        stats.pieces,
        stats.vertices,
        stats.triangles,
        stats.frames,
        stats.piece_texture[0],
        stats.piece_texture[1],
        stats.piece_texture_bytes,
        stats.bytes_per_piece_frame,
        stats.vertex_texture_bytes,
        stats.file_bytes
    )?;
    if stats.materials > 0 {
        writeln!(o, "  {} materials", stats.materials)?;
    }
    for note in &stats.notes {
        writeln!(o, "  note: {note}")?;
    }
    print_report(&mut o, &report)?;
    writeln!(
        o,
        "  bake {:.1} ms; {:.1} ms in all with verification",
        baked.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    )?;
    Ok(())
}

/// The verification lines of a rigid report.
fn print_report(out: &mut dyn Write, r: &RigidVerifyReport) -> std::io::Result<()> {
    let fmt3 = |v: [f64; 3]| format!("{:.5} / {:.5} / {:.5}", v[0], v[1], v[2]);
    writeln!(
        out,
        "  verified rigid: {} piece-frames: pivot max {} mm (bound {} mm, half the box quantum); rotation max \
         {:.5} deg (bound {:.5} deg); {} vertex-frames max {:.5} mm (bound {:.5} mm): {}",
        r.piece_frames,
        fmt3(r.translation_max_error_mm),
        fmt3(r.translation_bound_mm),
        r.rotation_max_error_deg,
        r.rotation_bound_deg,
        r.vertex_frames,
        r.vertex_max_error_mm,
        r.vertex_bound_mm,
        if r.passed { "PASSED" } else { "FAILED" }
    )?;
    for f in &r.failures {
        writeln!(out, "  failure: {f}")?;
    }
    Ok(())
}

/// `vat verify` of a rigid-mode file: against `--source` (a glTF sampled at the file's clip rate,
/// or a mesh-sequence folder whose pieces are detected again), or without it against the built-in
/// source the file was baked from.
pub(crate) fn verify(
    file: &Path,
    asset: &Asset<'_>,
    source: Option<&Path>,
    json: bool,
    max_memory: u64,
    resource_root: Option<&Path>,
    houdini_files: &vat_bake::interop::houdini::HoudiniFiles,
) -> Result<()> {
    let m = asset.manifest();
    let houdini = source
        .filter(|p| p.is_dir())
        .and_then(|p| vat_bake::interop::houdini::read_data_in(p, houdini_files).ok());
    let input = match (source, houdini) {
        // The import baked `fps / Houdini FPS` frames per source frame.
        (Some(path), Some(data)) => {
            let fps = m.clips.first().map_or(data.fps, |c| c.fps);
            RigidInput::Houdini(path, Some((fps / data.fps).round().max(1.0) as u32), houdini_files)
        }
        (source, _) => match source {
            Some(path) if path.is_dir() => {
                RigidInput::Sequence(path, m.clips.first().map_or(30.0, |c| c.fps))
            }
            Some(path) => RigidInput::File(path),
            None if vat_procgen::RIGID_SOURCES.contains(&m.name.as_str()) => RigidInput::Procedural(&m.name),
            None => bail!(
                "{}: rigid asset {:?} was not baked from a built-in source; give the source it was baked from with --source",
                file.display(),
                crate::terminal_safe(&m.name)
            ),
        },
    };
    let fps = m.clips.first().map_or(30.0, |c| c.fps);
    let rigid_source = load(&input, fps, max_memory, resource_root)?;
    let report = verify_rigid(asset, &rigid_source)
        .with_context(|| format!("{}: cannot verify against its source", file.display()))?;
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    if json {
        writeln!(o, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(o, "{}: {}", file.display(), if report.passed { "PASSED" } else { "FAILED" })?;
        print_report(&mut o, &report)?;
    }
    if !report.passed {
        bail!("{}: verification failed: {}", file.display(), report.failures.join("; "));
    }
    Ok(())
}
