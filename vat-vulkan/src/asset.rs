//! Uploaded assets: [`GpuAsset`] and [`Renderer::upload`]; the Vulkan twin of vat-wgpu's
//! `asset.rs`.

use ash::vk;
use vat_core::container::Asset;
use vat_core::encoding::VertexFormat;
use vat_core::frame::AssetDrawInfo;
use vat_core::gpu::{self, AssetConstants, AttachmentMesh};

use crate::owned::{Owned, color_range};
use crate::renderer::{Resource, StageSet, descriptor_set, storage_limit};
use crate::{Renderer, VulkanError, conv};

/// A baked asset on the device: animation and bone textures, clip table, vertex streams, index buffer
/// (every LOD, then the attachments), attachment meshes and capture tracks, with their descriptor
/// sets (set 1 per pipeline kind). Keeps no CPU copy of the payload. Made by [`Renderer::upload`];
/// use it only with that renderer. Any number of crowds ([`crate::GpuCrowd`]) may draw it. Dropping
/// it waits for the device to be idle, then destroys it.
pub struct GpuAsset {
    owned: Owned,
    /// What the frame plan needs of it (LOD ranges, attachments, variant).
    pub(crate) info: AssetDrawInfo,
    /// Set 1, per [`StageSet`].
    pub(crate) sets: Vec<vk::DescriptorSet>,
    pub(crate) index_buffer: vk::Buffer,
    gpu_bytes: u64,
}

impl std::fmt::Debug for GpuAsset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuAsset")
            .field("info", &self.info)
            .field("gpu_bytes", &self.gpu_bytes)
            .finish_non_exhaustive()
    }
}

impl Drop for GpuAsset {
    fn drop(&mut self) {
        // SAFETY: plain wait on a live device (the asset holds the context); submitted frames may
        // still read the asset's objects, which `owned` destroys next.
        let _ = unsafe { self.owned.ctx.device.device_wait_idle() };
    }
}

impl GpuAsset {
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

impl Renderer {
    /// Uploads a validated asset: the vertex animation textures of its format (one to three, in the
    /// bindings `vat_core::gpu::vertex_textures` names, 1x1 stand-ins in the others) and the bone texture (device-local
    /// images filled through a staging buffer, left in `SHADER_READ_ONLY_OPTIMAL`), clip table,
    /// asset constants, joints, weights, rest vertices, attachment meshes and captures, and one index
    /// buffer (every LOD, then the attachments); builds set 1 of every pipeline kind. Texture and
    /// buffer sizes are checked against the device's limits first. Submits the texture copies to the
    /// context's queue and waits for them. On error, everything created so far is destroyed and
    /// nothing is kept.
    ///
    /// # Errors
    /// [`VulkanError::AssetHasNoVertexAnimation`], [`VulkanError::AssetHasNoLods`],
    /// [`VulkanError::UnsupportedFormat`] (the device cannot sample one of the vertex format's texel
    /// formats; never on a conformant device), [`VulkanError::TextureTooLarge`],
    /// [`VulkanError::TextureData`], [`VulkanError::BufferTooLarge`], [`VulkanError::Vk`],
    /// [`VulkanError::NoMemoryType`].
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, VulkanError> {
        let m = asset.manifest();
        if let Some(va) = &m.vertex_animation {
            for &texel in va.format.texel_formats() {
                if !self.ctx.supports_sampled_image(conv::map_texel_format(texel)) {
                    return Err(VulkanError::UnsupportedFormat { format: va.format, texel });
                }
            }
        }
        let vertex_textures = gpu::vertex_textures(asset).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let constants = AssetConstants::from_manifest(m).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let index_bytes =
            asset.index_bytes().filter(|_| !m.lods.is_empty()).ok_or(VulkanError::AssetHasNoLods)?;
        let max_dim = self.ctx.properties.limits.max_image_dimension2_d;
        let check_texture = |what, width: u32, height: u32| {
            if width > max_dim || height > max_dim {
                Err(VulkanError::TextureTooLarge { what, width, height, limit: max_dim })
            } else {
                Ok(())
            }
        };
        for t in &vertex_textures {
            check_texture("vertex animation", t.data.width, t.data.height)?;
        }
        let rigid = gpu::rigid_textures(asset);
        check_texture("rigid piece", rigid[0].width, rigid[0].height)?;
        check_texture("rigid vertex", rigid[1].width, rigid[1].height)?;
        let fluid = gpu::fluid_lookup_texture(asset);
        check_texture("fluid lookup", fluid.width, fluid.height)?;
        let sprite = gpu::sprite_particle_texture(asset);
        check_texture("sprite particle", sprite.width, sprite.height)?;
        if let Some(b) = &m.bone_animation {
            check_texture("bone", b.layout.width, b.layout.height)?;
        }
        let morph = gpu::morph_textures(asset);
        check_texture("morph delta", morph[0].width, morph[0].height)?;
        check_texture("morph weights", morph[1].width, morph[1].height)?;
        let material_textures =
            gpu::material_textures(asset).ok_or(VulkanError::AssetHasNoVertexAnimation)?;
        let max_layers = self.ctx.properties.limits.max_image_array_layers;
        for t in &material_textures {
            let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
            check_texture("material", width, height)?;
            if t.layers > max_layers {
                return Err(VulkanError::TextureTooLarge {
                    what: "material (array layers)",
                    width: t.layers,
                    height: 1,
                    limit: max_layers,
                });
            }
        }
        let materials = gpu::material_records(m);
        let rest = gpu::rest_vertices(asset);
        let attachments = AttachmentMesh::from_asset(asset);
        let storage_limit = storage_limit(&self.ctx);
        let check_buffer = |what, size: usize| {
            let size = size as u64;
            if size > storage_limit {
                Err(VulkanError::BufferTooLarge { what, size, limit: storage_limit })
            } else {
                Ok(())
            }
        };
        check_buffer("rest vertices", rest.len() * size_of::<gpu::RestVertex>())?;
        check_buffer("attachment vertices", attachments.vertices.len() * size_of::<gpu::AttachmentVertex>())?;
        check_buffer("capture", attachments.capture_rows.len() * 16)?;
        if let Some(b) = &m.bone_animation {
            check_buffer("joints", asset.blob(b.joints).len())?;
            check_buffer("weights", asset.blob(b.weights).len())?;
        }

        let mut owned = Owned::new(&self.ctx);
        let mut gpu_bytes = 0u64;
        // Textures: (what, width, height, format, bytes): the bone texture, the morph layer's two,
        // the rigid mode's two, the fluid lookup, the sprite particles, then every vertex-texture binding (the format's textures, 1x1 stand-ins for the others).
        let zero_texel = [0u8; 16];
        let mut textures = Vec::new();
        let (joints, weights) = match &m.bone_animation {
            Some(b) => {
                textures.push((
                    "bone",
                    b.layout.width,
                    b.layout.height,
                    vk::Format::R32G32B32A32_SFLOAT,
                    asset.blob(b.texture),
                ));
                (asset.blob(b.joints), asset.blob(b.weights))
            }
            None => {
                textures.push(("bone (none)", 1, 1, vk::Format::R32G32B32A32_SFLOAT, &zero_texel[..]));
                (&[][..], &[][..])
            }
        };
        let named = [
            "morph delta",
            "morph weights",
            "rigid piece",
            "rigid vertex",
            "fluid lookup",
            "sprite particle",
        ];
        for (what, t) in named.into_iter().zip(morph.into_iter().chain(rigid).chain([fluid, sprite])) {
            textures.push((what, t.width, t.height, conv::map_texel_format(t.format), t.bytes));
        }
        for t in &vertex_textures {
            let what =
                if t.stand_in { "vertex animation (unused by this format)" } else { "vertex animation" };
            let d = t.data;
            textures.push((what, d.width, d.height, conv::map_texel_format(d.format), d.bytes));
        }
        let mut views = Vec::new();
        let mut material_views: Vec<(&str, vk::ImageView)> = Vec::new();
        {
            let mut staging_scope = Owned::new(&self.ctx);
            let mut copies = Vec::new();
            let mut array_copies = Vec::new();
            for &(what, width, height, format, bytes) in &textures {
                let texel = conv::format_texel_bytes(format).unwrap_or(4);
                let expected = u64::from(width) * u64::from(height) * u64::from(texel);
                if (bytes.len() as u64) < expected {
                    return Err(VulkanError::TextureData { what, expected, actual: bytes.len() as u64 });
                }
                gpu_bytes += expected;
                let staging = staging_scope.buffer_init(
                    &bytes[..expected as usize],
                    0,
                    vk::BufferUsageFlags::TRANSFER_SRC,
                    "staging buffer",
                )?;
                let (image, view) = owned.image(width, height, format, "texture")?;
                views.push(view);
                copies.push((staging.buffer, image, width, height));
            }
            for t in &material_textures {
                let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
                let format = if t.srgb { vk::Format::R8G8B8A8_SRGB } else { vk::Format::R8G8B8A8_UNORM };
                let bytes: Vec<u8> = t.levels.iter().flat_map(|l| l.bytes.iter().copied()).collect();
                gpu_bytes += bytes.len() as u64;
                let staging = staging_scope.buffer_init(
                    &bytes,
                    0,
                    vk::BufferUsageFlags::TRANSFER_SRC,
                    "staging buffer",
                )?;
                let mips = t.levels.len() as u32;
                let (image, view) =
                    owned.image_array(width, height, t.layers, mips, format, "material texture")?;
                material_views.push((t.name, view));
                let mut offset = 0u64;
                let regions: Vec<vk::BufferImageCopy> = t
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(level, l)| {
                        let region = vk::BufferImageCopy {
                            buffer_offset: offset,
                            buffer_row_length: 0,
                            buffer_image_height: 0,
                            image_subresource: vk::ImageSubresourceLayers {
                                aspect_mask: vk::ImageAspectFlags::COLOR,
                                mip_level: level as u32,
                                base_array_layer: 0,
                                layer_count: t.layers,
                            },
                            image_offset: vk::Offset3D::default(),
                            image_extent: vk::Extent3D { width: l.width, height: l.height, depth: 1 },
                        };
                        offset += l.bytes.len() as u64;
                        region
                    })
                    .collect();
                let range =
                    vk::ImageSubresourceRange { level_count: mips, layer_count: t.layers, ..color_range() };
                array_copies.push((staging.buffer, image, regions, range));
            }
            staging_scope.submit_and_wait(|device, cb| {
                for &(buffer, image, width, height) in &copies {
                    let region = [whole_colour_image_copy(width, height)];
                    // SAFETY: recording into `cb`; the image and staging buffer are live, the copy
                    // covers the whole one-level image and the staging buffer holds all its texels.
                    unsafe { record_image_upload(device, cb, buffer, image, &region, color_range()) };
                }
                for (buffer, image, regions, range) in &array_copies {
                    // SAFETY: as above; the regions are the levels of the array image, every layer,
                    // laid out in the staging buffer one after the other as their offsets say.
                    unsafe { record_image_upload(device, cb, *buffer, *image, regions, *range) };
                }
            })?;
        } // The staging buffers and the command buffer are destroyed here.
        let storage = vk::BufferUsageFlags::STORAGE_BUFFER;
        let clips = gpu::clip_records(&m.clips);
        let buffers = [
            owned.buffer_init(bytemuck::cast_slice(&clips), 32, storage, "clip table")?,
            owned.buffer_init(
                bytemuck::bytes_of(&constants),
                0,
                vk::BufferUsageFlags::UNIFORM_BUFFER,
                "asset constants",
            )?,
            owned.buffer_init(joints, 4, storage, "joints")?,
            owned.buffer_init(weights, 4, storage, "weights")?,
            owned.buffer_init(
                bytemuck::cast_slice(&rest),
                size_of::<gpu::RestVertex>() as u64,
                storage,
                "rest vertices",
            )?,
            owned.buffer_init(
                bytemuck::cast_slice(&materials),
                size_of::<gpu::MaterialRecord>() as u64,
                storage,
                "materials",
            )?,
            owned.buffer_init(
                bytemuck::cast_slice(&attachments.vertices),
                32,
                storage,
                "attachment vertices",
            )?,
            owned.buffer_init(bytemuck::cast_slice(&attachments.capture_rows), 16, storage, "captures")?,
        ];
        let [clip_buf, asset_buf, joint_buf, weight_buf, rest_buf, material_buf, attach_buf, capture_buf] =
            buffers;
        let mut indices = index_bytes.to_vec();
        let attachment_first_index = (index_bytes.len() / 4) as u32;
        indices.extend(attachments.indices.iter().flat_map(|i| i.to_le_bytes()));
        let index_buffer = owned.buffer_init(&indices, 4, vk::BufferUsageFlags::INDEX_BUFFER, "index")?;
        drop(indices);
        gpu_bytes += buffers.iter().map(|b| b.size).sum::<u64>() + index_buffer.size;
        let (bone_view, morph_view, morph_weights_view) = (views[0], views[1], views[2]);
        let (rigid_pieces_view, rigid_vertices_view) = (views[3], views[4]);
        let (fluid_lookup_view, sprite_particles_view) = (views[5], views[6]);
        let vat_views: Vec<(&str, vk::ImageView)> =
            vertex_textures.iter().zip(&views[7..]).map(|(t, &view)| (t.name, view)).collect();
        let material_sampler = self.material_sampler;
        let mut sets = Vec::new();
        for set in StageSet::ALL {
            let layout = self.set_layouts[set as usize][gpu::GROUP_ASSET as usize];
            sets.push(descriptor_set(&mut owned, layout, gpu::GROUP_ASSET, set, |name| {
                if let Some(&(_, view)) = vat_views.iter().chain(&material_views).find(|(n, _)| *n == name) {
                    return Some(Resource::Image(view));
                }
                Some(match name {
                    "clips" => Resource::Buffer(clip_buf.buffer),
                    "asset" => Resource::Buffer(asset_buf.buffer),
                    "bone_texture" => Resource::Image(bone_view),
                    "joints" => Resource::Buffer(joint_buf.buffer),
                    "weights" => Resource::Buffer(weight_buf.buffer),
                    "rest_vertices" => Resource::Buffer(rest_buf.buffer),
                    "attachment_vertices" => Resource::Buffer(attach_buf.buffer),
                    "captures" => Resource::Buffer(capture_buf.buffer),
                    "morph_texture" => Resource::Image(morph_view),
                    "morph_weights" => Resource::Image(morph_weights_view),
                    "rigid_pieces" => Resource::Image(rigid_pieces_view),
                    "rigid_vertices" => Resource::Image(rigid_vertices_view),
                    "fluid_lookup" => Resource::Image(fluid_lookup_view),
                    "sprite_particles" => Resource::Image(sprite_particles_view),
                    "materials" => Resource::Buffer(material_buf.buffer),
                    "material_sampler" => Resource::Sampler(material_sampler),
                    _ => return None,
                })
            })?);
        }
        let info = AssetDrawInfo::new(m, attachment_first_index, attachments.indices.len() as u32)
            .ok_or(VulkanError::AssetHasNoLods)?;
        Ok(GpuAsset { owned, info, sets, index_buffer: index_buffer.buffer, gpu_bytes })
    }
}

/// Records the copy of a staging buffer into a colour image (`regions`, covering `range`), with
/// its layout transitions (`UNDEFINED` -> `TRANSFER_DST_OPTIMAL` -> `SHADER_READ_ONLY_OPTIMAL`,
/// visible to the vertex, fragment and compute stages).
///
/// # Safety
/// `cb` must be recording outside a render pass; `buffer` must hold every texel `regions` read,
/// `range` must be within the image and cover every region; both must be live.
unsafe fn record_image_upload(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    image: vk::Image,
    regions: &[vk::BufferImageCopy],
    range: vk::ImageSubresourceRange,
) {
    let to_dst = [vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::empty())
        .dst_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .old_layout(vk::ImageLayout::UNDEFINED)
        .new_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range)];
    let to_read = [vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::SHADER_READ)
        .old_layout(vk::ImageLayout::TRANSFER_DST_OPTIMAL)
        .new_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(range)];
    // SAFETY: the caller's contract.
    unsafe {
        device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TOP_OF_PIPE,
            vk::PipelineStageFlags::TRANSFER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_dst,
        );
        device.cmd_copy_buffer_to_image(cb, buffer, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, regions);
        device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::VERTEX_SHADER
                | vk::PipelineStageFlags::FRAGMENT_SHADER
                | vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &to_read,
        );
    }
}

/// A copy of a whole single-layer, single-mip colour image of `width` x `height` texels to or from
/// the start of a tightly packed buffer.
pub(crate) fn whole_colour_image_copy(width: u32, height: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy {
        buffer_offset: 0,
        buffer_row_length: 0,
        buffer_image_height: 0,
        image_subresource: vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        },
        image_offset: vk::Offset3D::default(),
        image_extent: vk::Extent3D { width, height, depth: 1 },
    }
}
