//! `vat bake --mode fluid` / `vat bake --procgen splash` and `vat verify` of a fluid-mode file
//! (dynamic remeshing, [`vat_bake::fluid`]).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use vat_bake::fluid::{
    FluidBakeOptions, FluidFolder, FluidFrames, FluidVerifyReport, bake_fluid, verify_fluid,
};
use vat_core::container::Asset;

/// Where a fluid source comes from.
pub(crate) enum FluidInput<'a> {
    /// A folder of per-frame OBJ files at a frame rate.
    Folder(&'a Path, f32),
    /// A built-in source ([`vat_procgen::FLUID_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 dynamic-mesh bake folder, with the files named on the command line.
    Houdini(&'a Path, &'a vat_bake::interop::houdini::HoudiniFiles),
}

impl FluidInput<'_> {
    fn describe(&self) -> String {
        match self {
            FluidInput::Folder(p, _) | FluidInput::Houdini(p, _) => p.display().to_string(),
            FluidInput::Procedural(name) => format!("procedural {name}"),
        }
    }
}

/// Opens the source: lists the folder's frames (read later, one at a time) or builds the built-in
/// source.
fn load(input: &FluidInput<'_>, max_memory: u64) -> Result<Box<dyn FluidFrames>> {
    match *input {
        FluidInput::Folder(dir, fps) => Ok(Box::new(
            FluidFolder::open(dir, fps, max_memory)
                .with_context(|| format!("{}: cannot read the fluid sequence", dir.display()))?,
        )),
        FluidInput::Houdini(dir, files) => {
            use vat_bake::interop::houdini::{HoudiniOptions, read_houdini_dynamic_mesh};
            let options = HoudiniOptions { max_memory, files: files.clone(), ..Default::default() };
            Ok(Box::new(
                read_houdini_dynamic_mesh(dir, &options)
                    .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?,
            ))
        }
        FluidInput::Procedural(name) => match vat_procgen::fluid_by_name(name) {
            Some(source) => Ok(Box::new(source)),
            None => bail!(
                "no built-in fluid source named {name:?} (built-in: {})",
                vat_procgen::FLUID_SOURCES.join(", ")
            ),
        },
    }
}

/// `vat bake` in the fluid mode: bake, verify the bytes against the source, write atomically
/// only if they pass, print the figures.
pub(crate) fn bake(
    input: &FluidInput<'_>,
    out: &Path,
    options: &FluidBakeOptions,
    max_memory: u64,
) -> Result<()> {
    let started = Instant::now();
    let what = input.describe();
    let source = load(input, max_memory)?;
    let (bytes, stats) =
        bake_fluid(source.as_ref(), options).with_context(|| format!("{what}: bake failed"))?;
    let baked = started.elapsed();
    let asset = Asset::parse(&bytes).with_context(|| format!("{what}: the baked file does not read back"))?;
    let report =
        verify_fluid(&asset, source.as_ref()).with_context(|| format!("{what}: cannot verify the bake"))?;
    if !report.passed {
        bail!("{what}: verification failed, nothing written: {}", report.failures.join("; "));
    }
    vat_core::files::write_file_atomically(out, &bytes)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    writeln!(
        o,
        "baked {what} -> {} (fluid, {:?}): {} frames; pool of {} triangles (the busiest frame); {} vertices and {} \
         triangles in all, at most {} vertices in a frame; vertex texture {} bytes, lookup texture {} bytes \
         (4 per pool corner per frame); {} bytes in all",
        out.display(),
        options.format,
        stats.frames,
        stats.pool_triangles,
        stats.vertices,
        stats.triangles,
        stats.max_frame_vertices,
        stats.vertex_texture_bytes,
        stats.lookup_texture_bytes,
        stats.file_bytes
    )?;
    writeln!(o, "  frames are never interpolated (each has its own topology); cross-fades do not apply")?;
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

/// The verification lines of a fluid report.
fn print_report(out: &mut dyn Write, r: &FluidVerifyReport) -> std::io::Result<()> {
    let fmt3 = |v: [f64; 3]| format!("{:.5} / {:.5} / {:.5}", v[0], v[1], v[2]);
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

/// `vat verify` of a fluid-mode file: against `--source` (a folder of OBJ frames, read at the
/// file's clip rate), or without it against the built-in source the file was baked from.
pub(crate) fn verify(
    file: &Path,
    asset: &Asset<'_>,
    source: Option<&Path>,
    json: bool,
    max_memory: u64,
    interop: &crate::interop::VerifySourceArgs,
) -> Result<()> {
    let m = asset.manifest();
    let fps = m.clips.first().map_or(30.0, |c| c.fps);
    let files = interop.houdini_files();
    let input = match source {
        Some(path) => match crate::interop::detect(path, interop, max_memory)? {
            Some(vat_bake::interop::SourceKind::Houdini(_)) => FluidInput::Houdini(path, &files),
            _ => FluidInput::Folder(path, fps),
        },
        None if vat_procgen::FLUID_SOURCES.contains(&m.name.as_str()) => FluidInput::Procedural(&m.name),
        None => bail!(
            "{}: fluid asset {:?} was not baked from a built-in source; give the folder it was baked from with --source",
            file.display(),
            crate::terminal_safe(&m.name)
        ),
    };
    let frames = load(&input, max_memory)?;
    let report = verify_fluid(asset, frames.as_ref())
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
