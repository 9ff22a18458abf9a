//! # vat examples
//!
//! Not filled in yet. This crate will hold the crowd example, written once against `vat_core`'s API
//! plus a backend chosen by a type parameter, and a headless rendering example. The runnable programs
//! will live in `examples/examples/`.
