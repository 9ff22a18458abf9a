//! vat-core must stay renderer-agnostic: no GPU crate may enter its normal dependency tree.

use std::process::Command;

#[test]
fn vat_core_has_no_gpu_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--manifest-path", manifest, "-p", "vat-core", "-e", "normal", "--prefix", "none"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(crates.contains(&"vat-core"), "unexpected cargo tree output:\n{tree}");
    let forbidden = ["wgpu", "wgpu-core", "wgpu-hal", "ash", "naga", "winit", "gpu-allocator"];
    let found: Vec<&&str> = crates.iter().filter(|c| forbidden.contains(c)).collect();
    assert!(found.is_empty(), "vat-core depends on GPU crates {found:?}:\n{tree}");
}
