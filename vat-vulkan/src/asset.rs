//! Uploaded assets: [`GpuAsset`] and [`Renderer::upload`]; the Vulkan twin of vat-wgpu's
//! `asset.rs`.

use ash::vk;
use vat_core::backend::frame::AssetDrawInfo;
use vat_core::backend::gpu::{
    self, AssetBinding, AssetResource, AssetResources, ResourceError, ResourceLimits,
};
use vat_core::container::Asset;

use crate::crowd::VkHandles;
use crate::owned::{Owned, color_range};
use crate::renderer::{Resource, StageSet, descriptor_set, storage_limit};
use crate::{DeviceError, Error, Renderer, conv};

/// A baked asset on the device, with its descriptor sets (set 1 per pipeline kind): vat-core's
/// [`vat_core::backend::GpuAsset`] over Vulkan's handles. Made by [`Renderer::upload`]; use it only
/// with that renderer. Any number of crowds ([`crate::GpuCrowd`]) may draw it. Dropping it waits for
/// the device to be idle, then destroys it.
pub type GpuAsset = vat_core::backend::GpuAsset<VkHandles>;

impl Renderer {
    /// Uploads a validated asset: every resource of [`AssetResources`] (vat-core lists each
    /// group-1 binding with what it holds and checks them against the device's limits first;
    /// textures become device-local images filled through staging buffers, left in
    /// `SHADER_READ_ONLY_OPTIMAL`), one index buffer (every LOD, then the attachments), and set 1 of
    /// every pipeline kind. Submits the texture copies to the context's queue and waits for them. On
    /// error, everything created so far is destroyed and nothing is kept.
    ///
    /// # Errors
    /// [`ResourceError::NoAnimation`](vat_core::backend::gpu::ResourceError::NoAnimation), [`ResourceError::NoLods`](vat_core::backend::gpu::ResourceError::NoLods),
    /// [`DeviceError::UnsupportedFormat`](crate::DeviceError::UnsupportedFormat) (the device cannot sample one of the vertex format's texel
    /// formats; never on a conformant device), [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge),
    /// [`DeviceError::TextureData`](crate::DeviceError::TextureData), [`ResourceError::BufferTooLarge`](vat_core::backend::gpu::ResourceError::BufferTooLarge), [`DeviceError::Vk`](crate::DeviceError::Vk),
    /// [`DeviceError::NoMemoryType`](crate::DeviceError::NoMemoryType).
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, Error> {
        if let Some(va) = &asset.manifest().vertex_animation {
            for &texel in va.format.texel_formats() {
                if !self.ctx.supports_sampled_image(conv::map_texel_format(texel)) {
                    return Err(DeviceError::UnsupportedFormat { format: va.format, texel }.into());
                }
            }
        }
        let resources = AssetResources::new(asset)?;
        let limits = &self.ctx.properties.limits;
        resources.check(&ResourceLimits {
            max_texture_dimension_2d: limits.max_image_dimension2_d,
            max_texture_array_layers: limits.max_image_array_layers,
            max_storage_buffer_bytes: storage_limit(&self.ctx),
        })?;
        let mut owned = Owned::new(&self.ctx);
        let mut gpu_bytes = 0u64;
        let mut made: Vec<(&str, Resource)> = Vec::with_capacity(resources.bindings.len());
        {
            let mut staging = Owned::new(&self.ctx);
            let mut copies = Vec::new();
            for b in &resources.bindings {
                let (resource, bytes) = self.make_asset_resource(&mut owned, &mut staging, &mut copies, b)?;
                gpu_bytes += bytes;
                made.push((b.name, resource));
            }
            staging.submit_and_wait(|device, cb| {
                for (buffer, image, regions, range) in &copies {
                    // SAFETY: recording into `cb`; the image and its staging buffer are live, the
                    // regions are the image's levels (every layer), laid out in the staging buffer
                    // one after the other, and `range` covers them.
                    unsafe { record_image_upload(device, cb, *buffer, *image, regions, *range) };
                }
            })?;
        } // The staging buffers and the command buffer are destroyed here.
        let index_buffer =
            owned.buffer_init(&resources.indices, 4, vk::BufferUsageFlags::INDEX_BUFFER, "index")?;
        gpu_bytes += index_buffer.size;
        let mut sets = Vec::new();
        for set in StageSet::ALL {
            let layout = self.set_layouts[set as usize][gpu::GROUP_ASSET as usize];
            sets.push(descriptor_set(&mut owned, layout, gpu::GROUP_ASSET, set, |name| {
                made.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
            })?);
        }
        let info = AssetDrawInfo::new(
            asset.manifest(),
            resources.attachment_first_index,
            resources.attachment_index_count,
        )
        .ok_or(Error::Resource(ResourceError::NoLods))?;
        Ok(GpuAsset { info, groups: sets, index_buffer: index_buffer.buffer, gpu_bytes, keep: owned })
    }
}

impl Renderer {
    /// Creates one asset resource in `owned` (a texture's texels staged in `staging`, its copy added
    /// to `copies`): what it binds, and the bytes of device memory it takes.
    fn make_asset_resource(
        &self,
        owned: &mut Owned,
        staging: &mut Owned,
        copies: &mut Vec<StagedCopy>,
        b: &AssetBinding<'_>,
    ) -> Result<(Resource, u64), Error> {
        Ok(match &b.resource {
            AssetResource::Texture(t) => {
                let format = conv::map_texel_format(t.format);
                let expected = u64::from(t.width)
                    * u64::from(t.height)
                    * u64::from(conv::format_texel_bytes(format).unwrap_or(4));
                if (t.bytes.len() as u64) < expected {
                    let actual = t.bytes.len() as u64;
                    return Err(DeviceError::TextureData { what: b.label, expected, actual }.into());
                }
                let usage = vk::BufferUsageFlags::TRANSFER_SRC;
                let source =
                    staging.buffer_init(&t.bytes[..expected as usize], 0, usage, "staging buffer")?;
                let (image, view) = owned.image(t.width, t.height, format, b.label)?;
                copies.push((
                    source.buffer,
                    image,
                    vec![whole_colour_image_copy(t.width, t.height)],
                    color_range(),
                ));
                (Resource::Image(view), expected)
            }
            AssetResource::TextureArray(t) => {
                let (view, copy) = array_texture(owned, staging, t, b.label)?;
                copies.push(copy);
                (Resource::Image(view), t.levels.iter().map(|l| l.bytes.len() as u64).sum())
            }
            AssetResource::Buffer { bytes, uniform } => {
                let usage = if *uniform {
                    vk::BufferUsageFlags::UNIFORM_BUFFER
                } else {
                    vk::BufferUsageFlags::STORAGE_BUFFER
                };
                let buffer = owned.buffer_init(bytes, b.min_bytes(), usage, b.label)?;
                (Resource::Buffer(buffer.buffer), buffer.size)
            }
            AssetResource::MaterialSampler => (Resource::Sampler(self.material_sampler), 0),
        })
    }
}

/// A staged copy into an image: the staging buffer, the image, its regions and the range they cover.
type StagedCopy = (vk::Buffer, vk::Image, Vec<vk::BufferImageCopy>, vk::ImageSubresourceRange);

/// A material texture array (every mip level of every layer) made in `owned`, its texels staged in
/// `staging`: its view and its copy.
fn array_texture(
    owned: &mut Owned,
    staging: &mut Owned,
    t: &gpu::MaterialTexture<'_>,
    label: &'static str,
) -> Result<(vk::ImageView, StagedCopy), Error> {
    let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
    let format = if t.srgb { vk::Format::R8G8B8A8_SRGB } else { vk::Format::R8G8B8A8_UNORM };
    let bytes: Vec<u8> = t.levels.iter().flat_map(|l| l.bytes.iter().copied()).collect();
    let source = staging.buffer_init(&bytes, 0, vk::BufferUsageFlags::TRANSFER_SRC, "staging buffer")?;
    let mips = t.levels.len() as u32;
    let (image, view) = owned.image_array(width, height, t.layers, mips, format, label)?;
    let mut offset = 0u64;
    let regions = t
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
    let range = vk::ImageSubresourceRange { level_count: mips, layer_count: t.layers, ..color_range() };
    Ok((view, (source.buffer, image, regions, range)))
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
