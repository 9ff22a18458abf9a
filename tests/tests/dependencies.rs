//! vat-core must stay renderer-agnostic: no GPU crate may enter its normal dependency tree. And no
//! library a game links may pull in vat-procgen's demo and test content.

use std::process::Command;

#[test]
fn vat_core_has_no_gpu_dependency() {
    let (tree, crates) = normal_dependencies("vat-core");
    let forbidden = ["wgpu", "wgpu-core", "wgpu-hal", "ash", "naga", "winit", "gpu-allocator"];
    let found: Vec<&String> = crates.iter().filter(|c| forbidden.contains(&c.as_str())).collect();
    assert!(found.is_empty(), "vat-core depends on GPU crates {found:?}:\n{tree}");
}

#[test]
fn no_library_links_the_demo_content() {
    for library in ["vat-core", "vat-bake", "vat-wgpu", "vat-vulkan", "vat-bevy"] {
        let (tree, crates) = normal_dependencies(library);
        assert!(!crates.contains(&"vat-procgen".to_owned()), "{library} depends on vat-procgen:\n{tree}");
    }
}

/// `cargo tree` of `package`'s normal dependencies: the text, and the crate names in it.
fn normal_dependencies(package: &str) -> (String, Vec<String>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--manifest-path", manifest, "-p", package, "-e", "normal", "--prefix", "none"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    let crates: Vec<String> =
        tree.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
    assert!(crates.contains(&package.to_owned()), "unexpected cargo tree output:\n{tree}");
    (tree, crates)
}
