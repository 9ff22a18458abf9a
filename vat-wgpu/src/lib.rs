//! # vat-wgpu
//!
//! The wgpu backend of vat. It will hold the crowd renderer: uploading a validated `vat_core` asset to
//! GPU textures and buffers, building bind-group layouts from `vat_core`'s binding table, and rendering
//! a `vat_core` crowd (CPU or GPU-driven culling, shadows, attachments) from `vat_core`'s one WGSL
//! source.
//!
//! What exists so far is [`conv`]: the pure mapping from `vat_core::gpu`'s binding table and texel
//! formats to wgpu's types (the counterpart of wgpu-hal's `conv.rs`), testable without a device. The
//! workspace's GPU decode test builds its pipelines from it.

pub mod conv;
