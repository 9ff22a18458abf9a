//! `vat bake --mode sprite` / `vat bake --procgen fountain` and `vat verify` of a sprite-mode file
//! (particles drawn as camera-facing cards, [`vat_bake::sprite`]).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use vat_bake::sprite::{
    SpriteBakeOptions, SpriteFolder, SpriteFrames, SpriteVerifyReport, bake_sprite, verify_sprite,
};
use vat_core::container::Asset;

/// Where a sprite source comes from.
pub(crate) enum SpriteInput<'a> {
    /// A folder of per-frame CSV or PLY particle files at a frame rate.
    Folder(&'a Path, f32),
    /// A built-in source ([`vat_procgen::SPRITE_SOURCES`]).
    Procedural(&'a str),
    /// A SideFX Labs VAT 3 particle bake folder, with the files named on the command line and the
    /// card edge at scale 1 (metres).
    Houdini(&'a Path, &'a vat_bake::interop::houdini::HoudiniFiles, f32),
}

impl SpriteInput<'_> {
    fn describe(&self) -> String {
        match self {
            SpriteInput::Folder(p, _) | SpriteInput::Houdini(p, _, _) => p.display().to_string(),
            SpriteInput::Procedural(name) => format!("procedural {name}"),
        }
    }
}

/// Opens the source: lists the folder's frames (read later, one at a time) or builds the built-in
/// source.
fn load(input: &SpriteInput<'_>, max_memory: u64) -> Result<Box<dyn SpriteFrames>> {
    match *input {
        SpriteInput::Folder(dir, fps) => Ok(Box::new(
            SpriteFolder::open(dir, fps, max_memory)
                .with_context(|| format!("{}: cannot read the particle sequence", dir.display()))?,
        )),
        SpriteInput::Houdini(dir, files, particle_size) => {
            use vat_bake::interop::houdini::{HoudiniOptions, read_houdini_particles};
            let options =
                HoudiniOptions { max_memory, files: files.clone(), particle_size, ..Default::default() };
            Ok(Box::new(
                read_houdini_particles(dir, &options)
                    .with_context(|| format!("{}: cannot import the Houdini VAT bake", dir.display()))?,
            ))
        }
        SpriteInput::Procedural(name) => match vat_procgen::sprite_by_name(name) {
            Some(source) => Ok(Box::new(source)),
            None => bail!(
                "no built-in sprite source named {name:?} (built-in: {})",
                vat_procgen::SPRITE_SOURCES.join(", ")
            ),
        },
    }
}

/// `vat bake` in the sprite mode: bake, verify the bytes against the source, write atomically only
/// if they pass, print the figures.
pub(crate) fn bake(
    input: &SpriteInput<'_>,
    out: &Path,
    options: &SpriteBakeOptions,
    max_memory: u64,
) -> Result<()> {
    let started = Instant::now();
    let what = input.describe();
    let source = load(input, max_memory)?;
    let (bytes, stats) =
        bake_sprite(source.as_ref(), options).with_context(|| format!("{what}: bake failed"))?;
    let baked = started.elapsed();
    let asset = Asset::parse(&bytes).with_context(|| format!("{what}: the baked file does not read back"))?;
    let report = verify_sprite(&asset, source.as_ref(), options.looping)
        .with_context(|| format!("{what}: cannot verify the bake"))?;
    if !report.passed {
        bail!("{what}: verification failed, nothing written: {}", report.failures.join("; "));
    }
    vat_core::files::write_file_atomically(out, &bytes)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    writeln!(
        o,
        "baked {what} -> {} (sprite): {} frames; {} particle slots (the most alive at once: {}); {} particle-frames; \
         particle texture {} bytes (16 per slot per frame); {} bytes in all",
        out.display(),
        stats.frames,
        stats.slots,
        stats.max_alive,
        stats.particle_frames,
        stats.particle_texture_bytes,
        stats.file_bytes
    )?;
    writeln!(
        o,
        "  particles interpolate between frames where their id persists, else show the nearer frame; cross-fades \
         do not apply"
    )?;
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

/// The verification lines of a sprite report.
fn print_report(out: &mut dyn Write, r: &SpriteVerifyReport) -> std::io::Result<()> {
    let fmt3 = |v: [f64; 3]| format!("{:.5} / {:.5} / {:.5}", v[0], v[1], v[2]);
    writeln!(
        out,
        "  verified sprite: {} frames x {} slots ({} slot-frames, {} alive): centre max {} mm (bound {} mm); size \
         max {:.5} mm (bound {:.5} mm); colour max {:.5} (bound {:.5}); rotation max {:.5} deg (bound {:.5} deg); \
         alive and continuing exactly where the source's ids are: {}",
        r.frames,
        r.slots,
        r.texels,
        r.particle_frames,
        fmt3(r.position_max_error_mm),
        fmt3(r.position_bound_mm),
        r.size_max_error_mm,
        r.size_bound_mm,
        r.color_max_error,
        r.color_bound,
        r.rotation_max_error_deg,
        r.rotation_bound_deg,
        if r.passed { "PASSED" } else { "FAILED" }
    )?;
    for f in &r.failures {
        writeln!(out, "  failure: {f}")?;
    }
    if r.failures_left_off > 0 {
        writeln!(out, "  ... and {} more failures", r.failures_left_off)?;
    }
    Ok(())
}

/// `vat verify` of a sprite-mode file: against `--source` (a folder of CSV or PLY frames, read at
/// the file's clip rate), or without it against the built-in source the file was baked from.
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
    let looping = m.clips.first().is_some_and(|c| c.is_looping());
    let files = interop.houdini_files();
    let input = match source {
        Some(path) => match crate::interop::detect(path, interop, max_memory)? {
            Some(vat_bake::interop::SourceKind::Houdini(_)) => {
                SpriteInput::Houdini(path, &files, interop.particle_size())
            }
            _ => SpriteInput::Folder(path, fps),
        },
        None if vat_procgen::SPRITE_SOURCES.contains(&m.name.as_str()) => SpriteInput::Procedural(&m.name),
        None => bail!(
            "{}: sprite asset {:?} was not baked from a built-in source; give the folder it was baked from with --source",
            file.display(),
            crate::terminal_safe(&m.name)
        ),
    };
    let frames = load(&input, max_memory)?;
    let report = verify_sprite(asset, frames.as_ref(), looping)
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
