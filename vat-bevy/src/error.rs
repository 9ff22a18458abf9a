//! The crate's one error type.

/// What can go wrong in vat-bevy: loading a `.vat` asset, building a crowd of it, or setting up and
/// using vat's renderer on Bevy's device.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VatBevyError {
    /// The asset's bytes could not be read from Bevy's asset source.
    #[error("could not read the .vat asset: {0}")]
    Read(#[from] std::io::Error),
    /// The bytes are not a valid `.vat` file (`vat_core::container::Asset::parse`), or the asset
    /// cannot be drawn as a crowd (`vat_core::crowd::CrowdAsset::from_manifest`).
    #[error("invalid .vat asset: {0}")]
    Asset(#[from] vat_core::Error),
    /// vat's wgpu renderer refused the device, the asset or a frame.
    #[error("vat renderer: {0}")]
    Render(#[from] vat_wgpu::Error),
}
