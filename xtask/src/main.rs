//! Workspace build helper.
//!
//! - `cargo xtask test`: installs the system packages the tests need (when missing), then runs the
//!   workspace tests. This is the README's test command; `.ci/run` calls it too.
//! - `cargo xtask ci`: what CI runs: formatting, clippy with warnings denied, rustdoc with warnings
//!   denied, then the same steps as `cargo xtask test`.
//! - `cargo xtask deps`: only the system-package step.
//! - `cargo xtask render [ARGS...]`: the system-package step, then `vat render ARGS` in release (the
//!   README's main-job command: a crowd image on a fresh machine, software Vulkan driver included).

use std::process::Command;

use anyhow::{Context, Result, bail};

/// Debian packages the GPU tests need: Mesa's software Vulkan driver (lavapipe), the loader and the
/// Khronos validation layer.
const DEBIAN_PACKAGES: &[&str] = &["mesa-vulkan-drivers", "libvulkan1", "vulkan-validationlayers"];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("deps") => deps(),
        Some("test") => {
            deps()?;
            test()
        }
        Some("ci") => {
            deps()?;
            ci()
        }
        Some("render") => {
            deps()?;
            let mut cmd = cargo();
            cmd.args(["run", "--release", "--locked", "-p", "vat-cli", "--", "render"]).args(&args[1..]);
            run(cmd)
        }
        _ => {
            eprintln!("usage: cargo xtask <test|ci|deps|render [vat render args]>");
            std::process::exit(2);
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(mut cmd: Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().with_context(|| format!("could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Installs the missing Debian packages when running as root on a system with apt-get and dpkg;
/// elsewhere prints the command to run and carries on (tests that need a GPU will say what is missing).
fn deps() -> Result<()> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let has_apt = Command::new("apt-get").arg("--version").output().is_ok();
    if !(is_root && has_apt) {
        eprintln!(
            "xtask: missing system packages {missing:?}; install them with:\n    sudo apt-get install -y {}",
            missing.join(" ")
        );
        return Ok(());
    }
    let mut update = Command::new("apt-get");
    update.args(["update", "-qq"]);
    run(update)?;
    let mut install = Command::new("apt-get");
    install.args(["install", "-y", "-qq", "--no-install-recommends"]).args(&missing);
    install.env("DEBIAN_FRONTEND", "noninteractive");
    run(install)
}

fn test() -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["test", "--workspace", "--locked"]);
    run(cmd)
}

fn ci() -> Result<()> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    run(fmt)?;
    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]);
    run(clippy)?;
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps", "--locked"]).env("RUSTDOCFLAGS", "-D warnings");
    run(doc)?;
    test()
}
