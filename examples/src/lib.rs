//! # vat examples
//!
//! Runnable programs live in `examples/examples/` (`cargo run --release -p vat-examples --example crowd`).
//! This library holds what they share: a small crowd simulation written only against `vat_core`'s API
//! ([`sim`]), and helpers to get an asset and save an image ([`support`]).

pub mod embed;

/// The toon fragment stage of `examples/examples/custom_shader.rs` (`fs_toon`), WGSL written against
/// vat's shader ([`vat_core::backend::pipeline::HostShader`]).
pub const TOON_SHADER: &str = include_str!("shaders/toon.wgsl");

/// [`TOON_SHADER`] as a host shader.
pub fn toon_shader() -> vat_core::backend::pipeline::HostShader {
    vat_core::backend::pipeline::HostShader::new(TOON_SHADER, "fs_toon")
}
pub mod scene;
pub mod sim;
pub mod support;
