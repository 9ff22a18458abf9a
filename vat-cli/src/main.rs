//! # vat
//!
//! The `vat` command line:
//!
//! - `vat bake [INPUT.gltf|.glb] [--procgen] --out X.vat [options]`: bake a glTF rig, or the built-in
//!   procedural humanoid when no input is given, into a verified `.vat` file (written atomically);
//!   `--impostors` adds an animated impostor tier (skeletal and soft assets) with its measured bound.
//! - `vat inspect X.vat [--json]`: what a `.vat` holds.
//! - `vat verify X.vat [--source INPUT] [--json]`: decode the bake with the CPU reference decoder and
//!   compare it with the source (fresh CPU skinning of a glTF, the frames of a folder, or an OpenVAT
//!   or Houdini bake decoded as its import decoded it), and an impostor tier's cards against the mesh;
//!   non-zero exit when it exceeds the format's bound or the tier does worse than it states.
//! - `vat export-openvat X.vat --out DIR [--target default|unity|unreal|godot|bevy|three]
//!   [--format png16|exr16|exr32] [--normals packed|separate|none]`: the asset as an OpenVAT bake
//!   laid out for the target engine's published decoder (format, normals, clip rows, mesh space).
//! - `vat import-openvat DIR --out X.vat` / `vat import-houdini DIR --out X.vat`: another tool's
//!   bake, validated, decoded and baked into a verified `.vat` in vat's own formats.
//! - `vat export-glb OUT.glb`: write the procedural humanoid as an animated glTF binary.
//! - `vat render [X.vat] --instances N --out crowd.png [--mode vat|bone] [--culling cpu|gpu] [--size WxH]
//!   [--time T] [--camera ex,ey,ez,tx,ty,tz]`: a crowd rendered headless into a PNG, framed from the
//!   asset's size unless `--camera` is given.
//! - `vat demo [X.vat] [--backend wgpu|vulkan] [--instances N] [--frames N --screenshot out.png] ...`:
//!   a windowed, interactive crowd demo (keys: `vat demo --help`).
//! - `vat bench [X.vat] [--instances 1000,...] [--json]`: CPU cost per frame (simulation, culling + LOD,
//!   upload gather) in both culling modes, a CPU-skinning baseline, and offscreen GPU frames when an
//!   adapter exists (see BENCHMARKS.md).
//!
//! Every failure exits non-zero with one line on stderr naming the file and the problem.

mod bake;
mod bench;
mod demo;
mod inspect;
mod interop;
mod render;
mod source;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "vat", version, about = "Bake and inspect vertex animation textures for GPU crowds")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Bake a glTF rig (or the procedural humanoid) into a .vat file.
    Bake(bake::BakeArgs),
    /// Print what a .vat file holds.
    Inspect {
        /// The .vat file.
        file: PathBuf,
        /// Print JSON (keys: clips, lods, bytes_per_vertex_frame, ...).
        #[arg(long)]
        json: bool,
        /// Refuse a file larger than this many bytes (suffixes K, M, G: binary), before reading it.
        #[arg(long, value_parser = bake::parse_bytes, default_value = "4G")]
        max_memory: u64,
    },
    /// Compare a .vat with fresh CPU skinning of its source.
    Verify(bake::VerifyArgs),
    /// Render a crowd headless into a PNG (bakes the procedural humanoid in memory without an asset).
    Render(render::RenderArgs),
    /// Measure the CPU (and, with an adapter, GPU) cost of a crowd frame against a CPU-skinning baseline.
    Bench(bench::BenchArgs),
    /// A windowed, interactive crowd demo (keys: see below).
    Demo(demo::DemoArgs),
    /// Write a .vat as an OpenVAT bake (textures, remap_info.json, lookup .glb) for Blender/engine decoders.
    ExportOpenvat(interop::ExportOpenVatArgs),
    /// Import an OpenVAT (Blender) bake folder into a verified .vat.
    ImportOpenvat(interop::ImportOpenVatArgs),
    /// Import a SideFX Labs VAT 3 (Houdini) bake folder into a verified .vat (soft body; rigid body
    /// into the rigid mode; dynamic mesh into the fluid mode).
    ImportHoudini(interop::ImportHoudiniArgs),
    /// Write the procedural humanoid as an animated .glb.
    ExportGlb {
        /// Output path.
        out: PathBuf,
    },
}

/// The exit status of a command whose standard output was closed before it finished printing
/// (`vat inspect X | head -1`): what a process killed by SIGPIPE reports in a shell, 128 + 13.
const CLOSED_STDOUT_STATUS: u8 = 141;

/// `text` with every control character (ESC, CR, LF, BEL, C1 codes, ...) written as `\u{..}`:
/// names and messages that came from a file can neither drive the terminal nor forge a second line.
pub(crate) fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The error as one line: the context chain joined with ": ", no backtrace. A cause whose text
/// the line already ends with is left out: errors that print their source in their own message
/// (`"{path}: {source}"`) would otherwise say it twice ("out of memory: out of memory").
fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether `e` comes from writing to a closed pipe.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A closed standard output ends the process quietly with [`CLOSED_STDOUT_STATUS`] instead of
/// `println!`'s panic (Rust ignores SIGPIPE, so the write fails and the macro panics). Every other
/// panic keeps the default report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if message.is_some_and(|m| m.contains("failed printing to stdout") && m.contains("Broken pipe")) {
            std::process::exit(i32::from(CLOSED_STDOUT_STATUS));
        }
        default(info);
    }));
}

/// A write past the process's file-size limit (`ulimit -f`) fails with an error the write gate turns
/// into "nothing written" instead of killing the process with SIGXFSZ, which would leave the
/// temporary file behind.
#[allow(unsafe_code)] // One libc call, audited below: std has no safe way to ignore a signal.
fn fail_writes_past_the_file_size_limit() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler (no code runs on the
    // signal) and happens before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Without a desktop session (no `XDG_RUNTIME_DIR`, as on a server, in a container or over ssh),
/// Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` probes for a Wayland display to pick
/// the display's GPU and prints `error: XDG_RUNTIME_DIR is invalid or not set` although nothing is
/// wrong. With no session there is no display GPU to prefer, so the layer is turned off through its
/// own switch (`NODEVICE_SELECT=1`) unless the user set it either way.
#[allow(unsafe_code)] // std::env::set_var is unsafe: other threads could read the environment.
fn quiet_device_select_without_a_session() {
    let session = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir());
    if !session && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: called first thing in `main`, before any other thread exists.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn main() -> ExitCode {
    quiet_device_select_without_a_session();
    quiet_on_closed_stdout();
    fail_writes_past_the_file_size_limit();
    let cli = Cli::parse_from(render::join_camera_value(std::env::args_os()));
    let result = match cli.command {
        Command::Bake(args) => bake::bake(&args),
        Command::Inspect { file, json, max_memory } => inspect::run(&file, json, max_memory),
        Command::Verify(args) => bake::verify(&args),
        Command::ExportGlb { out } => bake::export_glb(&out),
        Command::ExportOpenvat(args) => interop::export_openvat(&args),
        Command::ImportOpenvat(args) => interop::import_openvat(&args),
        Command::ImportHoudini(args) => interop::import_houdini(&args),
        Command::Render(args) => render::render(&args),
        Command::Demo(args) => demo::demo(&args),
        Command::Bench(args) => bench::bench(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::from(CLOSED_STDOUT_STATUS),
        Err(e) => {
            eprintln!("vat: error: {}", terminal_safe(&error_line(&e)));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_line_says_each_cause_once() {
        let io = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        let bake = vat_bake::BakeError::Io { path: "a.glb".into(), source: io };
        let e = anyhow::Error::new(bake).context("a.glb: bake failed");
        let line = error_line(&e);
        assert_eq!(line.matches("out of memory").count(), 1, "{line}");
        assert!(line.starts_with("a.glb: bake failed: a.glb: "), "{line}");
        // Distinct causes are all kept, in order.
        let e = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_line(&e), "outer: middle: inner");
    }
}
