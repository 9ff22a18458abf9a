//! # vat examples
//!
//! Runnable programs live in `examples/examples/` (`cargo run --release -p vat-examples --example crowd`).
//! This library holds what they share: a small crowd simulation written only against `vat_core`'s API
//! ([`sim`]), and helpers to get an asset and save an image ([`support`]).

pub mod embed;
pub mod sim;
pub mod support;
