//! [`AssetDrawInfo`]: what the plan needs of an uploaded asset.

use super::*;

/// What the plan needs of an uploaded asset: its LOD index ranges, attachments, bone influences and
/// vertex format, and a process-wide id. Each backend's `GpuAsset` holds one.
#[derive(Debug, Clone, PartialEq)]
pub struct AssetDrawInfo {
    pub(super) id: u64,
    pub(super) lods: Vec<Lod>,
    pub(super) attachment_first_index: u32,
    pub(super) attachment_index_count: u32,
    pub(super) vertex_count: u32,
    pub(super) influences: u32,
    pub(super) vertex_format: VertexFormat,
    pub(super) mode: VatMode,
    pub(super) double_sided: bool,
    pub(super) has_materials: bool,
    pub(super) impostor: Option<ImpostorDrawInfo>,
}

/// What drawing an asset's impostor tier needs from its manifest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImpostorDrawInfo {
    /// Where the card's six indices start in the index buffer, in indices (after the attachments').
    pub first_index: u32,
    /// The tier's bounding radius, metres.
    pub radius: f32,
    /// Pixels per side of a view's image.
    pub tile_size: u32,
}

impl AssetDrawInfo {
    /// The description of an asset of manifest `m` whose index buffer holds `lod_index_count`
    /// indices of LODs, then `attachment_index_count` indices of the attachment meshes. A new id each
    /// call. `None` without vertex, rigid or sprite animation or without LODs.
    pub fn new(m: &Manifest, lod_index_count: u32, attachment_index_count: u32) -> Option<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        // A rigid or sprite asset has no vertex format; its pipelines carry the neutral one.
        let vertex_format = match (&m.vertex_animation, &m.rigid_animation, &m.sprite_animation) {
            (Some(va), _, _) => va.format,
            (None, Some(_), _) | (None, None, Some(_)) => ShaderVariantKey::NEUTRAL.vertex_format,
            (None, None, None) => return None,
        };
        if m.lods.is_empty() {
            return None;
        }
        Some(Self {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            lods: m.lods.clone(),
            attachment_first_index: lod_index_count,
            attachment_index_count,
            vertex_count: m.vertex_count,
            influences: m.bone_animation.as_ref().map_or(0, |b| b.influences),
            vertex_format,
            mode: m.mode(),
            double_sided: m.materials.iter().any(|mat| mat.double_sided),
            has_materials: !m.materials.is_empty(),
            impostor: m.impostors.as_ref().map(|t| ImpostorDrawInfo {
                first_index: lod_index_count + attachment_index_count,
                radius: t.radius,
                tile_size: t.tile_size,
            }),
        })
    }

    /// Its impostor tier's draw information, if it has a tier.
    pub fn impostor(&self) -> Option<ImpostorDrawInfo> {
        self.impostor
    }

    /// The id, unique in the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The LODs, finest first (at least one).
    pub fn lods(&self) -> &[Lod] {
        &self.lods
    }

    /// LOD levels of the index buffer.
    pub fn lod_count(&self) -> u32 {
        self.lods.len() as u32
    }

    /// Whether bone mode is available (the asset was baked with `--bones`).
    pub fn has_bones(&self) -> bool {
        self.influences > 0
    }

    /// Whether the asset has socket attachments.
    pub fn has_attachments(&self) -> bool {
        self.attachment_index_count > 0
    }

    /// Bone influences per vertex (4 or 8), 0 without bones.
    pub fn influences(&self) -> u32 {
        self.influences
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// The vertex format of its animation textures.
    pub fn vertex_format(&self) -> VertexFormat {
        self.vertex_format
    }

    /// The index range of LOD `lod` (the last LOD for a larger one), in indices.
    pub fn lod_indices(&self, lod: u32) -> Range<u32> {
        let l = &self.lods[(lod as usize).min(self.lods.len() - 1)];
        l.first_index..l.first_index + l.index_count
    }

    /// The index range of the attachment meshes, in indices (empty without attachments).
    pub fn attachment_indices(&self) -> Range<u32> {
        self.attachment_first_index..self.attachment_first_index + self.attachment_index_count
    }

    /// Where the attachment indices start in the index buffer, in indices.
    pub fn attachment_first_index(&self) -> u32 {
        self.attachment_first_index
    }

    /// The mode the asset was baked in.
    pub fn mode(&self) -> VatMode {
        self.mode
    }

    /// The program that draws its bodies in `mode`: [`Program::Rigid`] for a rigid asset,
    /// [`Program::Fluid`] for a fluid asset and [`Program::Sprite`] for a sprite asset in
    /// [`RenderMode::Vat`], else [`Program::Body`]`(mode)`.
    pub fn body_program(&self, mode: RenderMode) -> Program {
        crate::modes::body_program(self.mode, mode)
    }

    /// The compute entry point that decodes its vertices in `mode` for verification:
    /// [`gpu::ENTRY_POINT_DECODE_RIGID`] for a rigid asset and [`gpu::ENTRY_POINT_DECODE_FLUID`] for
    /// a fluid asset and [`gpu::ENTRY_POINT_DECODE_SPRITE`] for a sprite asset in
    /// [`RenderMode::Vat`], else [`RenderMode::decode_entry_point`] (the mode table,
    /// [`crate::modes::decode_entry_point`]).
    pub fn decode_entry_point(&self, mode: RenderMode) -> Option<&'static str> {
        crate::modes::decode_entry_point(self.mode, mode)
    }

    /// Whether it has materials (else it is shaded with the built-in palette).
    pub fn has_materials(&self) -> bool {
        self.has_materials
    }

    /// The shader variant of its compute pipelines (decode for verification) with cross-fade
    /// `cross_fade`: its influences, vertex format and sidedness; no motion vectors, shading chosen
    /// at run time (so the decode reads every tangent frame the asset has).
    pub fn variant(&self, cross_fade: bool) -> ShaderVariantKey {
        ShaderVariantKey {
            cross_fade,
            influences: self.influences,
            vertex_format: self.vertex_format,
            double_sided: self.double_sided,
            motion_vectors: false,
            materials: None,
            light_model: None,
            impostor_views: crate::pipeline::ImpostorViews::PerCard,
        }
    }

    /// The shader variant of its render pipelines: [`variant`](Self::variant) with its shading path
    /// fixed (materials or the palette, which decodes no tangent frames).
    pub fn render_variant(&self, cross_fade: bool) -> ShaderVariantKey {
        ShaderVariantKey { materials: Some(self.has_materials), ..self.variant(cross_fade) }
    }
}
