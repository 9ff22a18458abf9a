//! # vat-vulkan
//!
//! Not filled in yet. This crate will hold the raw Vulkan backend on `ash`: the same WGSL source from
//! `vat_core` translated to SPIR-V by `naga`, descriptor-set layouts built from `vat_core`'s binding
//! table, and the same renderer vocabulary as `vat-wgpu`, usable on a device the caller already owns.
//!
//! It deliberately exports nothing until that work lands, so that no caller builds on a stand-in API.
