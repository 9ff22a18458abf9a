//! An asset's GPU resources as data: every binding of group 1 ([`GROUP_ASSET`]) with what to
//! create for it, and the index buffer ([`AssetResources::new`]), checked against a device's limits
//! ([`AssetResources::check`]). A backend's upload creates each resource in the list's order and
//! binds it by name; it never asks for a mode's textures one by one, so a new binding touches only
//! this list (and the binding table, whose group 1 it must cover: tested).

use std::borrow::Cow;

use super::{
    AssetConstants, AttachmentMesh, BINDINGS, Binding, BindingKind, GROUP_ASSET, MaterialTexture,
    TextureData, clip_records, impostor_textures, material_records, material_textures, morph_textures,
    rest_vertices, vertex_textures,
};
use crate::container::Asset;

/// What one binding of group 1 holds.
#[derive(Debug, Clone)]
pub enum AssetResource<'a> {
    /// A 2-D texture of one level, read with `textureLoad` (usage: sampled, copy destination).
    Texture(TextureData<'a>),
    /// A 2-D texture array with its mip chain (the material textures; RGBA8, sRGB or linear).
    TextureArray(MaterialTexture<'a>),
    /// A buffer of `bytes`; the backend makes it at least the binding's minimum size
    /// ([`AssetBinding::min_bytes`]) and a multiple of 4 bytes, the bytes past `bytes` zero.
    Buffer {
        /// Its contents.
        bytes: Cow<'a, [u8]>,
        /// A uniform buffer (else a read-only storage buffer).
        uniform: bool,
    },
    /// The backend's material sampler (trilinear, repeat: the shader wraps coordinates itself).
    MaterialSampler,
}

/// One binding of group 1 and its resource.
#[derive(Debug, Clone)]
pub struct AssetBinding<'a> {
    /// The WGSL name (the binding table's).
    pub name: &'static str,
    /// A debug label for the resource.
    pub label: &'static str,
    /// What to create.
    pub resource: AssetResource<'a>,
    /// Whether it is a 1x1 (or empty) stand-in the asset's mode or format never reads.
    pub stand_in: bool,
}

impl AssetBinding<'_> {
    /// The binding table's entry of this binding.
    pub fn table_entry(&self) -> Option<&'static Binding> {
        BINDINGS.iter().find(|b| b.group == GROUP_ASSET && b.name == self.name)
    }

    /// For a buffer: the smallest size the binding accepts, bytes (its table entry's minimum, at
    /// least 4); 0 for other resources.
    pub fn min_bytes(&self) -> u64 {
        match self.table_entry().map(|b| b.kind) {
            Some(BindingKind::UniformBuffer { min_size } | BindingKind::StorageBuffer { min_size, .. }) => {
                min_size.max(4)
            }
            _ => 0,
        }
    }

    /// Bytes the device is asked for: a buffer's size as created, every level of a texture.
    pub fn requested_bytes(&self) -> u64 {
        match &self.resource {
            AssetResource::Texture(t) => t.bytes.len() as u64,
            AssetResource::TextureArray(t) => t.levels.iter().map(|l| l.bytes.len() as u64).sum(),
            AssetResource::Buffer { bytes, .. } => {
                (bytes.len() as u64).max(self.min_bytes()).next_multiple_of(4)
            }
            AssetResource::MaterialSampler => 0,
        }
    }
}

/// A device's limits, as the resource check needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// Largest width or height of a 2-D texture, texels.
    pub max_texture_dimension_2d: u32,
    /// Most layers of a texture array.
    pub max_texture_array_layers: u32,
    /// Largest storage buffer binding, bytes; the index buffer is held to it too (one limit for
    /// every buffer of an asset).
    pub max_storage_buffer_bytes: u64,
}

/// Why an asset's resources cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// The asset has no vertex, rigid or sprite animation to draw.
    #[error("the asset has no vertex, rigid or sprite animation to draw")]
    NoAnimation,
    /// The asset has no LODs (no index buffer).
    #[error("the asset has no LODs: it has nothing to draw")]
    NoLods,
    /// A texture is larger than the device allows.
    #[error("the {what} texture is {width} x {height}, larger than the device's {limit}")]
    TextureTooLarge {
        /// Which texture (or "material (array layers)", with the layers as `width`).
        what: &'static str,
        /// Width in texels (layers for an array's layer count).
        width: u32,
        /// Height in texels.
        height: u32,
        /// The device's limit.
        limit: u32,
    },
    /// A buffer is larger than the device allows.
    #[error("the {what} buffer would take {size} bytes, more than the device's {limit}")]
    BufferTooLarge {
        /// Which buffer.
        what: &'static str,
        /// Bytes it would take.
        size: u64,
        /// The device's limit.
        limit: u64,
    },
}

/// Every resource of an uploaded asset: the group-1 bindings in upload order, and the index buffer.
#[derive(Debug, Clone)]
pub struct AssetResources<'a> {
    /// One entry per group-1 binding of [`BINDINGS`], in upload order: the animation textures first,
    /// then the other textures, then the buffers and the sampler.
    pub bindings: Vec<AssetBinding<'a>>,
    /// The index buffer: every LOD's indices, then the attachments', then with an impostor tier the
    /// card's ([`super::IMPOSTOR_CARD_INDICES`]) (`u32` little-endian).
    pub indices: Vec<u8>,
    /// Where the attachment indices start, in indices.
    pub attachment_first_index: u32,
    /// Attachment indices.
    pub attachment_index_count: u32,
}

impl<'a> AssetResources<'a> {
    /// The resources of a validated asset: for every group-1 binding the asset's data, or a stand-in
    /// where its mode or format has none (the shader never reads those).
    ///
    /// # Errors
    /// [`ResourceError::NoAnimation`] without vertex, rigid or sprite animation (or material data
    /// that does not read back); [`ResourceError::NoLods`] without LODs.
    pub fn new(asset: &Asset<'a>) -> Result<Self, ResourceError> {
        let m = asset.manifest();
        let vertex = vertex_textures(asset).ok_or(ResourceError::NoAnimation)?;
        let constants = AssetConstants::from_manifest(m).ok_or(ResourceError::NoAnimation)?;
        let lod_indices = asset.index_bytes().filter(|_| !m.lods.is_empty()).ok_or(ResourceError::NoLods)?;
        let materials = material_textures(asset).ok_or(ResourceError::NoAnimation)?;
        let mut bindings = Vec::with_capacity(26);
        let texture = |name, label, data: TextureData<'a>, stand_in| AssetBinding {
            name,
            label,
            resource: AssetResource::Texture(data),
            stand_in,
        };
        for t in vertex {
            let label = if t.stand_in { "vat texture (unused by this format)" } else { "vat texture" };
            bindings.push(texture(t.name, label, t.data, t.stand_in));
        }
        let bone = crate::modes::bone::bone_texture(asset);
        bindings.push(texture("bone_texture", "vat bone texture", bone.0, bone.1));
        let has_morphs = m.morph_animation.is_some();
        let [deltas, weights] = morph_textures(asset);
        bindings.push(texture("morph_texture", "vat morph deltas", deltas, !has_morphs));
        bindings.push(texture("morph_weights", "vat morph weights", weights, !has_morphs));
        // Each mode's own textures, through the mode table (stand-ins where the file has no section).
        for entry in &crate::modes::MODES {
            let stand_in = !(entry.present)(m);
            for (name, label, data) in (entry.textures)(asset) {
                bindings.push(texture(name, label, data, stand_in));
            }
        }
        let impostors = impostor_textures(asset).ok_or(ResourceError::NoAnimation)?;
        for t in materials.into_iter().chain(impostors) {
            let label = match (t.name.starts_with("impostor"), t.stand_in) {
                (false, false) => "vat material texture",
                (false, true) => "vat material texture (none)",
                (true, false) => "vat impostor texture",
                (true, true) => "vat impostor texture (none)",
            };
            let stand_in = t.stand_in;
            bindings.push(AssetBinding {
                name: t.name,
                label,
                resource: AssetResource::TextureArray(t),
                stand_in,
            });
        }
        let buffer = |name, label, bytes: Cow<'a, [u8]>, uniform| AssetBinding {
            name,
            label,
            stand_in: bytes.is_empty(),
            resource: AssetResource::Buffer { bytes, uniform },
        };
        let owned = |v: Vec<u8>| Cow::Owned(v);
        let mut clips = clip_records(&m.clips);
        if let Some(tier) = &m.impostors {
            for (k, clip) in clips.iter_mut().enumerate() {
                clip.impostor_first_layer = tier.first_layer(k).unwrap_or(0) as u32;
                clip.impostor_frames = tier.frames_per_clip.get(k).copied().unwrap_or(0);
            }
        }
        bindings.push(buffer("clips", "vat clips", owned(bytemuck::cast_slice(&clips).to_vec()), false));
        bindings.push(buffer("asset", "vat asset", owned(bytemuck::bytes_of(&constants).to_vec()), true));
        let (joints, weights) = crate::modes::bone::skin_buffers(asset);
        bindings.push(buffer("joints", "vat joints", Cow::Borrowed(joints), false));
        bindings.push(buffer("weights", "vat weights", Cow::Borrowed(weights), false));
        let rest = rest_vertices(asset);
        bindings.push(buffer(
            "rest_vertices",
            "vat rest vertices",
            owned(bytemuck::cast_slice(&rest).to_vec()),
            false,
        ));
        let records = material_records(m);
        bindings.push(buffer(
            "materials",
            "vat materials",
            owned(bytemuck::cast_slice(&records).to_vec()),
            false,
        ));
        let attachments = AttachmentMesh::from_asset(asset);
        bindings.push(buffer(
            "attachment_vertices",
            "vat attachment vertices",
            owned(bytemuck::cast_slice(&attachments.vertices).to_vec()),
            false,
        ));
        bindings.push(buffer(
            "captures",
            "vat captures",
            owned(bytemuck::cast_slice(&attachments.capture_rows).to_vec()),
            false,
        ));
        bindings.push(AssetBinding {
            name: "material_sampler",
            label: "vat material sampler",
            resource: AssetResource::MaterialSampler,
            stand_in: false,
        });
        let mut indices = Vec::with_capacity(lod_indices.len() + attachments.indices.len() * 4 + 24);
        indices.extend_from_slice(lod_indices);
        indices.extend(attachments.indices.iter().flat_map(|i| i.to_le_bytes()));
        // The impostor card follows the attachments (AssetDrawInfo::impostor_indices).
        if m.impostors.is_some() {
            indices.extend(super::IMPOSTOR_CARD_INDICES.iter().flat_map(|i| i.to_le_bytes()));
        }
        Ok(Self {
            bindings,
            indices,
            attachment_first_index: (lod_indices.len() / 4) as u32,
            attachment_index_count: attachments.indices.len() as u32,
        })
    }

    /// The binding named `name`.
    pub fn binding(&self, name: &str) -> Option<&AssetBinding<'a>> {
        self.bindings.iter().find(|b| b.name == name)
    }

    /// Checks every resource against the device's limits, before anything is created.
    ///
    /// # Errors
    /// [`ResourceError::TextureTooLarge`] for a texture wider or taller than
    /// `max_texture_dimension_2d` or an array of more layers than `max_texture_array_layers`;
    /// [`ResourceError::BufferTooLarge`] for a storage or index buffer over
    /// `max_storage_buffer_bytes`.
    pub fn check(&self, limits: &ResourceLimits) -> Result<(), ResourceError> {
        let max_dim = limits.max_texture_dimension_2d;
        for b in &self.bindings {
            match &b.resource {
                AssetResource::Texture(t) if t.width > max_dim || t.height > max_dim => {
                    return Err(ResourceError::TextureTooLarge {
                        what: texture_what(b.name),
                        width: t.width,
                        height: t.height,
                        limit: max_dim,
                    });
                }
                AssetResource::TextureArray(t) => {
                    let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
                    let impostor = t.name.starts_with("impostor");
                    if width > max_dim || height > max_dim {
                        return Err(ResourceError::TextureTooLarge {
                            what: if impostor { "impostor" } else { "material" },
                            width,
                            height,
                            limit: max_dim,
                        });
                    }
                    if t.layers > limits.max_texture_array_layers {
                        return Err(ResourceError::TextureTooLarge {
                            what: if impostor {
                                "impostor (array layers)"
                            } else {
                                "material (array layers)"
                            },
                            width: t.layers,
                            height: 1,
                            limit: limits.max_texture_array_layers,
                        });
                    }
                }
                AssetResource::Buffer { uniform: false, .. } => {
                    let size = b.requested_bytes();
                    if size > limits.max_storage_buffer_bytes {
                        return Err(ResourceError::BufferTooLarge {
                            what: buffer_what(b.name),
                            size,
                            limit: limits.max_storage_buffer_bytes,
                        });
                    }
                }
                _ => {}
            }
        }
        let index_bytes = self.indices.len() as u64;
        if index_bytes > limits.max_storage_buffer_bytes {
            return Err(ResourceError::BufferTooLarge {
                what: "index",
                size: index_bytes,
                limit: limits.max_storage_buffer_bytes,
            });
        }
        Ok(())
    }

    /// Bytes the device is asked for in all (every resource and the index buffer), for an
    /// out-of-memory report.
    pub fn requested_bytes(&self) -> u64 {
        self.bindings.iter().map(AssetBinding::requested_bytes).sum::<u64>()
            + self.indices.len().max(4) as u64
    }
}

/// The texture named in a size error, by binding.
fn texture_what(name: &str) -> &'static str {
    match name {
        "bone_texture" => "bone",
        "morph_texture" => "morph delta",
        "morph_weights" => "morph weights",
        "rigid_pieces" => "rigid piece",
        "rigid_vertices" => "rigid vertex",
        "fluid_lookup" => "fluid lookup",
        "sprite_particles" => "sprite particle",
        _ => "vertex animation",
    }
}

/// The buffer named in a size error, by binding.
fn buffer_what(name: &str) -> &'static str {
    match name {
        "clips" => "clips",
        "joints" => "joints",
        "weights" => "weights",
        "rest_vertices" => "rest vertices",
        "materials" => "materials",
        "attachment_vertices" => "attachment vertices",
        "captures" => "capture",
        _ => "asset",
    }
}
