//! Uploaded assets: [`GpuAsset`] and [`Renderer::upload`] (the Vulkan twin is vat-vulkan's
//! `asset.rs`).

use vat_core::backend::frame::AssetDrawInfo;
use vat_core::backend::gpu::{
    self, AssetBinding, AssetResource, AssetResources, ResourceError, ResourceLimits,
};
use vat_core::container::Asset;

use crate::crowd::WgpuHandles;
use crate::renderer::{AllocScope, StageSet, bind_group, buffer_init, storage_limit};
use crate::{Error, Renderer, conv};

/// A baked asset on the GPU, with its bind groups (group 1 per pipeline kind): vat-core's
/// [`vat_core::backend::GpuAsset`] over wgpu's handles. Made by [`Renderer::upload`]; use it only
/// with that renderer. Any number of crowds ([`crate::GpuCrowd`]) may draw it.
pub type GpuAsset = vat_core::backend::GpuAsset<WgpuHandles>;

/// A created asset resource, bound by name.
enum Made {
    View(wgpu::TextureView),
    Buffer(wgpu::Buffer),
    /// The renderer's material sampler.
    Sampler,
}

impl Renderer {
    /// Uploads a validated asset: every resource of [`AssetResources`] (vat-core lists each
    /// group-1 binding with what it holds and checks them against the device's limits first), the
    /// index buffer, and group 1's bind groups. wgpu errors (out of memory, validation) are caught in
    /// error scopes; on failure, everything created so far is released (dropped) and nothing is
    /// kept. Every mode and every [`VertexFormat`](vat_core::format::encoding::VertexFormat) uploads (their texel formats are core WebGPU
    /// formats that every device can read with `textureLoad`).
    ///
    /// # Errors
    /// [`Error::Resource`] ([`ResourceError::NoAnimation`](vat_core::backend::gpu::ResourceError::NoAnimation), [`ResourceError::NoLods`](vat_core::backend::gpu::ResourceError::NoLods),
    /// [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge), [`ResourceError::BufferTooLarge`](vat_core::backend::gpu::ResourceError::BufferTooLarge), from
    /// [`AssetResources::check`]), [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) when the device cannot
    /// allocate the textures or buffers, [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) for another wgpu error.
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, Error> {
        let resources = AssetResources::new(asset)?;
        let limits = self.device.limits();
        resources.check(&ResourceLimits {
            max_texture_dimension_2d: limits.max_texture_dimension_2d,
            max_texture_array_layers: limits.max_texture_array_layers,
            max_storage_buffer_bytes: storage_limit(&limits),
        })?;
        let device = self.device.clone();
        // Every creation below is inside the scope, and so is every use of what it created (writes,
        // views, bind groups): an error caught here never reaches the device's uncaptured-error
        // handler (wgpu's default one panics). The scope is popped on every way out, early returns
        // included (the closure).
        let scope = AllocScope::push(&device);
        let created = (|| -> Result<_, Error> {
            let mut made: Vec<(&str, Made)> = Vec::with_capacity(resources.bindings.len());
            let mut gpu_bytes = 0;
            for (i, b) in resources.bindings.iter().enumerate() {
                if i == 1 {
                    self.upload_step(0)?; // the first animation texture made
                }
                if matches!(b.resource, AssetResource::Buffer { .. })
                    && !made.iter().any(|(_, m)| matches!(m, Made::Buffer(_)))
                {
                    self.upload_step(1)?; // every texture made
                }
                gpu_bytes += b.requested_bytes();
                made.push((b.name, self.make_asset_resource(&device, b)?));
            }
            self.upload_step(2)?;
            let index_buffer =
                buffer_init(&device, "vat indices", &resources.indices, 4, wgpu::BufferUsages::INDEX)?;
            gpu_bytes += index_buffer.size();
            self.upload_step(3)?;
            let groups = StageSet::ALL
                .iter()
                .map(|&set| {
                    let layout = &self.group_layouts[set as usize][1];
                    bind_group(&device, layout, gpu::GROUP_ASSET, set, "vat asset", |name| {
                        made.iter().find(|(n, _)| *n == name).map(|(_, m)| match m {
                            Made::View(v) => wgpu::BindingResource::TextureView(v),
                            Made::Buffer(b) => b.as_entire_binding(),
                            Made::Sampler => wgpu::BindingResource::Sampler(&self.material_sampler),
                        })
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((groups, index_buffer, gpu_bytes))
        })();
        // Whatever was created is dropped on the way out (wgpu frees it once nothing refers to it).
        let (groups, index_buffer, gpu_bytes) =
            scope.finish("asset upload", resources.requested_bytes(), created)?;
        self.upload_step(4)?;
        let info = AssetDrawInfo::new(
            asset.manifest(),
            resources.attachment_first_index,
            resources.attachment_index_count,
        )
        .ok_or(Error::Resource(ResourceError::NoLods))?;
        Ok(GpuAsset { info, groups, index_buffer, gpu_bytes, keep: () })
    }

    /// Creates one asset resource and uploads its contents (a texture's view, a buffer).
    fn make_asset_resource(&self, device: &wgpu::Device, b: &AssetBinding<'_>) -> Result<Made, Error> {
        let usage = wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST;
        Ok(match &b.resource {
            AssetResource::Texture(t) => {
                let size = wgpu::Extent3d { width: t.width, height: t.height, depth_or_array_layers: 1 };
                let format = conv::map_texel_format(t.format);
                let texture = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(b.label),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                });
                let texel = format.block_copy_size(None).unwrap_or(4);
                let layout = wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(t.width * texel),
                    rows_per_image: Some(t.height),
                };
                self.queue.write_texture(texture.as_image_copy(), t.bytes, layout, size);
                Made::View(texture.create_view(&wgpu::TextureViewDescriptor::default()))
            }
            AssetResource::TextureArray(t) => {
                // Every mip level of every layer, uploaded level by level.
                let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
                let format = if t.srgb {
                    wgpu::TextureFormat::Rgba8UnormSrgb
                } else {
                    wgpu::TextureFormat::Rgba8Unorm
                };
                let texture = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(b.label),
                    size: wgpu::Extent3d { width, height, depth_or_array_layers: t.layers },
                    mip_level_count: t.levels.len() as u32,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                });
                for (level, l) in t.levels.iter().enumerate() {
                    let target = wgpu::TexelCopyTextureInfo {
                        texture: &texture,
                        mip_level: level as u32,
                        origin: wgpu::Origin3d::ZERO,
                        aspect: wgpu::TextureAspect::All,
                    };
                    let layout = wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(l.width * 4),
                        rows_per_image: Some(l.height),
                    };
                    let size =
                        wgpu::Extent3d { width: l.width, height: l.height, depth_or_array_layers: t.layers };
                    self.queue.write_texture(target, l.bytes, layout, size);
                }
                Made::View(texture.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(wgpu::TextureViewDimension::D2Array),
                    ..Default::default()
                }))
            }
            AssetResource::Buffer { bytes, uniform } => {
                let usage = if *uniform { wgpu::BufferUsages::UNIFORM } else { wgpu::BufferUsages::STORAGE };
                Made::Buffer(buffer_init(device, b.label, bytes, b.min_bytes() as usize, usage)?)
            }
            AssetResource::MaterialSampler => Made::Sampler,
        })
    }

    /// Test hook (feature `fault-injection`): the next uploads fail on purpose at `step` (0: after the
    /// first animation texture, 1: after every texture, 2: after the asset buffers, 3: after the
    /// index buffer, 4: after the bind groups, i.e. just before success), with everything created so far
    /// released; `None` turns it off. [`UPLOAD_STEPS`](Self::UPLOAD_STEPS) is the number of steps.
    #[cfg(feature = "fault-injection")]
    pub fn inject_upload_fault(&mut self, step: Option<u32>) {
        self.upload_fault = step;
    }

    /// Number of fault-injection steps of [`upload`](Self::upload).
    #[cfg(feature = "fault-injection")]
    pub const UPLOAD_STEPS: u32 = 5;

    /// Fails the upload at `step` when a fault is injected there.
    #[allow(clippy::unused_self, clippy::unnecessary_wraps)] // without the feature: a no-op
    fn upload_step(&self, step: u32) -> Result<(), Error> {
        #[cfg(feature = "fault-injection")]
        if self.upload_fault == Some(step) {
            return Err(crate::DeviceError::Wgpu(format!("injected upload fault at step {step}")).into());
        }
        let _ = step;
        Ok(())
    }
}
