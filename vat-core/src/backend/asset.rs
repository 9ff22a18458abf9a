//! An uploaded asset as both backends hold it, generic over the backend's handles.

use crate::encoding::VertexFormat;
use crate::frame::AssetDrawInfo;

use super::{AssetParts, GpuAssetParts, Handles};

/// A baked asset on the device: animation and bone textures, clip table, vertex streams, index
/// buffer (every LOD, then the attachments), attachment meshes and capture tracks, with their
/// groups 1 (one per [`super::Stage`]). Keeps no CPU copy of the payload. Made by a backend's
/// `Renderer::upload`; use it only with that renderer. Any number of crowds may draw it. The fields
/// are the backend's.
pub struct GpuAsset<H: Handles> {
    /// What the frame plan needs of it (LOD ranges, attachments, variant).
    pub info: AssetDrawInfo,
    /// Group 1, per stage.
    pub groups: Vec<H::Group>,
    /// The index buffer.
    pub index_buffer: H::Index,
    /// Bytes of device memory its textures and buffers take.
    pub gpu_bytes: u64,
    /// What keeps its handles alive (released first when it is dropped: vat-vulkan waits for the
    /// device to be idle).
    pub keep: H::Keep,
}

impl<H: Handles> GpuAsset<H> {
    /// Whether bone mode is available (the asset was baked with `--bones`).
    pub fn has_bones(&self) -> bool {
        self.info.has_bones()
    }

    /// Whether the asset has socket attachments.
    pub fn has_attachments(&self) -> bool {
        self.info.has_attachments()
    }

    /// Bone influences per vertex (4 or 8), 0 without bones.
    pub fn influences(&self) -> u32 {
        self.info.influences()
    }

    /// LOD levels of the asset's index buffer.
    pub fn lod_count(&self) -> u32 {
        self.info.lod_count()
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.info.vertex_count()
    }

    /// The vertex format of its animation textures.
    pub fn vertex_format(&self) -> VertexFormat {
        self.info.vertex_format()
    }

    /// What the frame plan knows of it.
    pub fn draw_info(&self) -> &AssetDrawInfo {
        &self.info
    }

    /// Bytes of GPU memory its textures and buffers take.
    pub fn gpu_bytes(&self) -> u64 {
        self.gpu_bytes
    }
}

impl<H: Handles> GpuAssetParts<H> for GpuAsset<H> {
    fn parts(&self) -> AssetParts<'_, H> {
        AssetParts { info: &self.info, groups: &self.groups, index: &self.index_buffer }
    }
}

impl<H: Handles> Drop for GpuAsset<H> {
    fn drop(&mut self) {
        H::release(&mut self.keep);
    }
}

impl<H: Handles> std::fmt::Debug for GpuAsset<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuAsset")
            .field("info", &self.info)
            .field("gpu_bytes", &self.gpu_bytes)
            .finish_non_exhaustive()
    }
}
