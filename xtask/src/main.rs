//! Workspace build helper.
//!
//! - `cargo xtask test`: installs the system packages the tests need (when missing), then runs the
//!   whole workspace's tests, vat-bevy included, in one cargo command with `--ignore-rust-version`
//!   (see [`WORKSPACE`]). This is the README's test command; `.ci/run` calls it too.
//! - `cargo xtask ci`: what CI runs: formatting, the documentation checks and the guide's build,
//!   clippy and rustdoc with warnings denied (one command each over the whole workspace), the same
//!   steps as `cargo xtask test`, `cargo xtask determinism`, then `cargo xtask fuzz 10` (installing
//!   cargo-fuzz first when it is missing).
//! - `cargo xtask docs`: the documentation checks (links and anchors of every Markdown file, the
//!   guide's summary, the README's length) and the guide's mdBook build (`docs/guide`); part of
//!   `cargo xtask ci`.
//! - `cargo xtask deps`: only the system-package step.
//! - `cargo xtask render [ARGS...]`: the system-package step, then `vat render ARGS` in release (the
//!   README's main-job command: a crowd image on a fresh machine, software Vulkan driver included).
//! - `cargo xtask fuzz [SECONDS]`: every fuzz target of `fuzz/` for SECONDS each (default 60) with
//!   cargo-fuzz (libFuzzer), starting from the checked-in corpus, the regression inputs and the
//!   bad-input corpus; new corpus entries go to `fuzz/target/corpus-run/`, crashes to
//!   `fuzz/artifacts/`. Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain, or
//!   stable with `RUSTC_BOOTSTRAP=1` and `--sanitizer none` (what it uses when `+nightly` is missing).
//! - `cargo xtask determinism`: the pinned-bake hashes in a release build (the test suite checks them
//!   in debug), so debug and release bakes are proven byte-identical. Part of `cargo xtask ci`.

use std::process::Command;

use anyhow::{Context, Result, bail};

mod docs;

/// Debian packages the tests need: Mesa's software Vulkan driver (lavapipe), the loader, the
/// Khronos validation layer, and Xvfb with the X libraries of the windowed demo.
const DEBIAN_PACKAGES: &[&str] = &[
    // The software Vulkan driver, its loader and the validation layers (GPU tests, `vat render`).
    "mesa-vulkan-drivers",
    "libvulkan1",
    "vulkan-validationlayers",
    // A virtual X server and the X libraries winit loads at run time (`vat demo` tests).
    "xvfb",
    "xauth",
    "libxkbcommon-x11-0",
    "libx11-xcb1",
    "libxcursor1",
    "libxi6",
];

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
        Some("fuzz") => {
            let seconds = match args.get(1) {
                Some(s) => s.parse().with_context(|| format!("fuzz: {s:?} is not a number of seconds"))?,
                None => 60,
            };
            fuzz(seconds)
        }
        Some("determinism") => determinism(),
        Some("docs") => docs::docs(&workspace_root()),
        Some("render") => {
            deps()?;
            let mut cmd = cargo();
            cmd.args(["run", "--release", "--locked", "-p", "vat-cli", "--", "render"]).args(&args[1..]);
            run(cmd)
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <test|ci|deps|docs|fuzz [seconds]|determinism|render [vat render args]>"
            );
            std::process::exit(2);
        }
    }
}

/// The workspace's root folder (xtask's parent).
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
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

/// Bevy 0.20.1 (under vat-bevy) declares a newer rust-version than the workspace's toolchain, so
/// every workspace-wide command passes `--ignore-rust-version`. Each step is one cargo command over
/// the whole workspace: Bevy turns on features of shared dependencies (wgpu, bytemuck), and separate
/// commands with and without vat-bevy would build wgpu and everything above it twice.
const WORKSPACE: &[&str] = &["--workspace", "--locked", "--ignore-rust-version"];

fn test() -> Result<()> {
    let mut cmd = cargo();
    cmd.arg("test").args(WORKSPACE);
    run(cmd)
}

fn ci() -> Result<()> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    run(fmt)?;
    docs::docs(&workspace_root())?;
    let mut clippy = cargo();
    clippy.arg("clippy").args(WORKSPACE).args(["--all-targets", "--", "-D", "warnings"]);
    run(clippy)?;
    let mut doc = cargo();
    doc.arg("doc").args(WORKSPACE).arg("--no-deps");
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run(doc)?;
    test()?;
    determinism()?;
    install_cargo_fuzz()?;
    fuzz(CI_FUZZ_SECONDS)
}

/// Seconds each fuzz target runs in `cargo xtask ci` (bounded so that CI, Bevy included, stays under
/// 45 minutes on the 2-core machine; `cargo xtask fuzz` runs longer on demand).
const CI_FUZZ_SECONDS: u64 = 10;

/// The cargo-fuzz release `cargo xtask ci` installs when `cargo fuzz` is missing.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Installs cargo-fuzz from crates.io unless `cargo fuzz` already runs.
fn install_cargo_fuzz() -> Result<()> {
    let present =
        Command::new("cargo").args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    let mut cmd = cargo();
    cmd.args(["install", "cargo-fuzz", "--locked", "--version", CARGO_FUZZ_VERSION]);
    run(cmd)
}

/// The fuzz targets of `fuzz/Cargo.toml`.
const FUZZ_TARGETS: &[&str] = &[
    "vat_reader",
    "gltf_bake",
    "bake_args",
    "obj_sequence",
    "openvat_import",
    "houdini_import",
    "houdini_dynamic_import",
    "houdini_particle_import",
    "sprite_frames",
];

/// The pinned bakes' hashes, checked in a release build (vat-bake only: no GPU crates to build).
fn determinism() -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["test", "--release", "--locked", "-p", "vat-bake", "--lib", "determinism"]);
    run(cmd)
}

/// `cargo fuzz run` of every target for `seconds` each; prints the executions of each and fails on
/// the first crash (its input is then in `fuzz/artifacts/<target>/`).
fn fuzz(seconds: u64) -> Result<()> {
    let root = workspace_root();
    let fuzz_dir = root.join("fuzz");
    let nightly =
        Command::new("cargo").args(["+nightly", "--version"]).output().is_ok_and(|o| o.status.success());
    let mut summary = Vec::new();
    for target in FUZZ_TARGETS {
        let scratch = fuzz_dir.join("target/corpus-run").join(target);
        let artifacts = fuzz_dir.join("artifacts").join(target);
        std::fs::create_dir_all(&scratch)?;
        std::fs::create_dir_all(&artifacts)?;
        std::fs::create_dir_all(fuzz_dir.join("regressions").join(target))?;
        let mut cmd = Command::new("cargo");
        if nightly {
            cmd.arg("+nightly");
        } else {
            cmd.env("RUSTC_BOOTSTRAP", "1");
        }
        cmd.current_dir(&fuzz_dir).args(["fuzz", "run", "--debug-assertions", target]);
        if !nightly {
            cmd.args(["--sanitizer", "none"]);
        }
        cmd.arg(&scratch).arg(format!("corpus/{target}")).arg(format!("regressions/{target}"));
        if !matches!(
            *target,
            "bake_args"
                | "obj_sequence"
                | "openvat_import"
                | "houdini_import"
                | "houdini_dynamic_import"
                | "houdini_particle_import"
        ) {
            cmd.arg(root.join("tests/data/bad"));
        }
        cmd.arg("--").arg(format!("-max_total_time={seconds}")).arg("-rss_limit_mb=2048").arg("-timeout=20");
        // Each target's dictionary (fuzz/<name>.dict): the formats' keywords and the hostile-input
        // classes the project has fixed, so mutations reach them quickly.
        let dict = match *target {
            "gltf_bake" => "gltf.dict",
            "vat_reader" => "vat.dict",
            "obj_sequence" => "obj.dict",
            "openvat_import" => "openvat.dict",
            "houdini_import" | "houdini_dynamic_import" | "houdini_particle_import" => "houdini.dict",
            "sprite_frames" => "sprite.dict",
            _ => "bake_args.dict",
        };
        cmd.arg(format!("-dict={dict}"));
        cmd.arg(format!("-artifact_prefix={}/", artifacts.display()));
        eprintln!("xtask: running {cmd:?}");
        let out =
            cmd.output().with_context(|| format!("could not start {cmd:?} (is cargo-fuzz installed?)"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let done = stderr.lines().find(|l| l.starts_with("Done ")).unwrap_or("no \"Done\" line").to_owned();
        if !out.status.success() {
            let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            eprintln!("{}", tail.join("\n"));
            bail!("fuzz target {target} failed ({}); the input is in {}", out.status, artifacts.display());
        }
        summary.push(format!("{target}: {done}"));
    }
    for line in &summary {
        eprintln!("xtask fuzz: {line}");
    }
    Ok(())
}
