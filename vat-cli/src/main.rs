//! The `vat` command line. Subcommands arrive with the baker and renderer work.
fn main() {
    eprintln!("vat: no subcommands yet");
    std::process::exit(2);
}
