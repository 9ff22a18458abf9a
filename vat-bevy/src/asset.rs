//! `.vat` files as Bevy assets: [`VatAsset`] and its [`VatAssetLoader`].

use std::sync::Arc;

use bevy::asset::io::Reader;
use bevy::asset::{Asset, AssetLoader, LoadContext};
use bevy::reflect::TypePath;
use vat_core::crowd::CrowdAsset;

use crate::VatBevyError;

/// A validated `.vat` file: its bytes (shared, never copied again) and what a crowd needs to know
/// about it.
///
/// Loaded from `*.vat` files by [`VatAssetLoader`] (hot reload included: a changed file replaces
/// the asset, every crowd of it is rebuilt and the GPU copy uploaded again), or made in memory with
/// [`VatAsset::from_bytes`] and added with `Assets::add`.
#[derive(Asset, TypePath, Debug, Clone)]
pub struct VatAsset {
    bytes: Arc<[u8]>,
    crowd_asset: CrowdAsset,
}

impl VatAsset {
    /// Parses and validates `bytes` (a whole `.vat` file) with `vat_core::container::Asset::parse`.
    ///
    /// # Errors
    /// [`VatBevyError::Asset`] when the file is invalid or cannot be drawn as a crowd.
    pub fn from_bytes(bytes: impl Into<Arc<[u8]>>) -> Result<Self, VatBevyError> {
        let bytes: Arc<[u8]> = bytes.into();
        let parsed = vat_core::container::Asset::parse(&bytes)?;
        let crowd_asset = CrowdAsset::from_manifest(parsed.manifest())?;
        Ok(Self { bytes, crowd_asset })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// The file parsed again (cheap: validation only, no copy). Never fails for an asset made by
    /// [`VatAsset::from_bytes`], which validated the same bytes.
    ///
    /// # Errors
    /// [`VatBevyError::Asset`] (not expected; see above).
    pub fn parse(&self) -> Result<vat_core::container::Asset<'_>, VatBevyError> {
        Ok(vat_core::container::Asset::parse(&self.bytes)?)
    }

    /// What a [`vat_core::crowd::Crowd`] of this asset is built from: clips, LODs, bounds.
    pub fn crowd_asset(&self) -> &CrowdAsset {
        &self.crowd_asset
    }

    /// The index of the clip named `name`, if the asset has one.
    pub fn clip_index(&self, name: &str) -> Option<u32> {
        self.crowd_asset.clips.iter().position(|c| c.name == name).map(|i| i as u32)
    }
}

/// Loads `*.vat` files as [`VatAsset`]s (registered by [`crate::VatPlugin`]).
#[derive(Debug, Default, TypePath)]
pub struct VatAssetLoader;

impl AssetLoader for VatAssetLoader {
    type Asset = VatAsset;
    type Settings = ();
    type Error = VatBevyError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        _load_context: &mut LoadContext<'_>,
    ) -> Result<VatAsset, VatBevyError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        VatAsset::from_bytes(bytes)
    }

    fn extensions(&self) -> &[&str] {
        &["vat"]
    }
}
