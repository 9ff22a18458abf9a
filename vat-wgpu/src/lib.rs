//! # vat-wgpu
//!
//! Not filled in yet. This crate will hold the wgpu backend: uploading a validated `vat_core` asset to
//! GPU textures and buffers, building bind-group layouts from `vat_core`'s binding table, and rendering a
//! `vat_core` crowd (CPU or GPU-driven culling, shadows, attachments) from `vat_core`'s one WGSL source.
//!
//! It deliberately exports nothing until that work lands, so that no caller builds on a stand-in API.
