//! # vat
//!
//! The `vat` command line:
//!
//! - `vat bake [INPUT.gltf|.glb] [--procgen] --out X.vat [options]`: bake a glTF rig, or the built-in
//!   procedural humanoid when no input is given, into a verified `.vat` file (written atomically).
//! - `vat inspect X.vat [--json]`: what a `.vat` holds.
//! - `vat verify X.vat [--source INPUT] [--json]`: decode the bake with the CPU reference decoder and
//!   compare it with fresh CPU skinning of the source; non-zero exit when it exceeds the format's bound.
//! - `vat export-glb OUT.glb`: write the procedural humanoid as an animated glTF binary.
//! - `vat render [X.vat] --instances N --out crowd.png [--mode vat|bone] [--culling cpu|gpu] [--size WxH]
//!   [--time T] [--camera ex,ey,ez,tx,ty,tz]`: a crowd rendered headless into a PNG.
//!
//! Every failure exits non-zero with one line on stderr naming the file and the problem.

mod bake;
mod inspect;
mod render;

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
    },
    /// Compare a .vat with fresh CPU skinning of its source.
    Verify(bake::VerifyArgs),
    /// Render a crowd headless into a PNG (bakes the procedural humanoid in memory without an asset).
    Render(render::RenderArgs),
    /// Write the procedural humanoid as an animated .glb.
    ExportGlb {
        /// Output path.
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bake(args) => bake::bake(&args),
        Command::Inspect { file, json } => inspect::run(&file, json),
        Command::Verify(args) => bake::verify(&args),
        Command::ExportGlb { out } => bake::export_glb(&out),
        Command::Render(args) => render::render(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the context chain joined, no backtrace.
            let msg: Vec<String> = e.chain().map(ToString::to_string).collect();
            eprintln!("vat: error: {}", msg.join(": "));
            ExitCode::FAILURE
        }
    }
}
