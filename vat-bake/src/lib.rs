//! # vat-bake
//!
//! Not filled in yet. This crate will hold the baker: glTF import (through the `gltf` crate) and the
//! built-in procedural rigged humanoid, CPU linear-blend skinning as ground truth, sampling of clips,
//! encoding through `vat_core`'s encodings into an in-memory prepared payload, and writing verified
//! `.vat` files through `vat_core`'s container writer.
//!
//! It deliberately exports nothing until that work lands, so that no caller builds on a stand-in API.
