//! # vat
//!
//! Not filled in yet. This binary will be the `vat` command line: `vat bake`, `inspect`, `verify`,
//! `render`, `bench` and `export-glb`, built on vat-core, vat-bake and the backends. Until the baker
//! lands it only says so and exits with status 2, so no script can mistake it for a working tool.

fn main() {
    eprintln!("vat: no subcommands yet (the baker and renderer are not built); see README.md");
    std::process::exit(2);
}
