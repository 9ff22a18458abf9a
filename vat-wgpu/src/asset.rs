//! Uploaded assets: [`GpuAsset`] and [`Renderer::upload`] (the Vulkan twin is vat-vulkan's
//! `asset.rs`).

use vat_core::container::Asset;
use vat_core::encoding::VertexFormat;
use vat_core::frame::AssetDrawInfo;
use vat_core::gpu::{self, AssetConstants, AttachmentMesh};

use crate::renderer::{AllocScope, StageSet, bind_group, buffer_init, storage_limit};
use crate::{RenderError, Renderer, conv};

/// A baked asset on the GPU: animation and bone textures, clip table, vertex streams, index buffer
/// (every LOD, then the attachments), attachment meshes and capture tracks, with their bind groups
/// (group 1 per pipeline kind). Keeps no CPU copy of the payload. Made by [`Renderer::upload`]; use
/// it only with that renderer. Any number of crowds ([`crate::GpuCrowd`]) may draw it.
#[derive(Debug)]
pub struct GpuAsset {
    /// What the frame plan needs of it (LOD ranges, attachments, variant).
    pub(crate) info: AssetDrawInfo,
    /// Group 1, per [`StageSet`].
    pub(crate) groups: Vec<wgpu::BindGroup>,
    pub(crate) index_buffer: wgpu::Buffer,
    gpu_bytes: u64,
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
    /// Uploads a validated asset. Texture and buffer sizes are checked against the device's limits
    /// first; wgpu errors (out of memory, validation) are caught in error scopes. On failure,
    /// everything created so far is released (dropped) and nothing is kept.
    ///
    /// # Errors
    /// [`RenderError::AssetHasNoVertexAnimation`], [`RenderError::AssetHasNoLods`],
    /// [`RenderError::TextureTooLarge`], [`RenderError::BufferTooLarge`],
    /// [`RenderError::OutOfDeviceMemory`] when the device cannot allocate the textures or buffers,
    /// [`RenderError::Device`] for another wgpu error.
    /// Rigid assets upload too (their piece and rigid vertex textures, [`gpu::rigid_textures`]).
    /// Every [`VertexFormat`] uploads: its texel formats are core WebGPU formats that every device
    /// can sample with `textureLoad`.
    pub fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, RenderError> {
        let m = asset.manifest();
        let vertex_textures = gpu::vertex_textures(asset).ok_or(RenderError::AssetHasNoVertexAnimation)?;
        let constants = AssetConstants::from_manifest(m).ok_or(RenderError::AssetHasNoVertexAnimation)?;
        let index_bytes =
            asset.index_bytes().filter(|_| !m.lods.is_empty()).ok_or(RenderError::AssetHasNoLods)?;
        let limits = self.device.limits();
        let max_dim = limits.max_texture_dimension_2d;
        let check_texture = |what, width: u32, height: u32| {
            if width > max_dim || height > max_dim {
                Err(RenderError::TextureTooLarge { what, width, height, limit: max_dim })
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
            gpu::material_textures(asset).ok_or(RenderError::AssetHasNoVertexAnimation)?;
        for t in &material_textures {
            let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
            check_texture("material", width, height)?;
            if t.layers > limits.max_texture_array_layers {
                return Err(RenderError::TextureTooLarge {
                    what: "material (array layers)",
                    width: t.layers,
                    height: 1,
                    limit: limits.max_texture_array_layers,
                });
            }
        }
        let materials = gpu::material_records(m);
        let rest = gpu::rest_vertices(asset);
        let attachments = AttachmentMesh::from_asset(asset);
        let storage_limit = storage_limit(&limits);
        let check_buffer = |what, size: usize| {
            let size = size as u64;
            if size > storage_limit {
                Err(RenderError::BufferTooLarge { what, size, limit: storage_limit })
            } else {
                Ok(())
            }
        };
        check_buffer("rest vertices", rest.len() * size_of::<gpu::RestVertex>())?;
        check_buffer("attachment vertices", attachments.vertices.len() * size_of::<gpu::AttachmentVertex>())?;
        check_buffer("capture", attachments.capture_rows.len() * 16)?;
        check_buffer("index", index_bytes.len() + attachments.indices.len() * 4)?;
        if let Some(b) = &m.bone_animation {
            check_buffer("joints", asset.blob(b.joints).len())?;
            check_buffer("weights", asset.blob(b.weights).len())?;
        }

        // What the upload asks of the device, for an out-of-memory report.
        let requested = vertex_textures.iter().map(|t| t.data.bytes.len()).sum::<usize>()
            + rigid.iter().chain(&morph).chain([&fluid, &sprite]).map(|t| t.bytes.len()).sum::<usize>()
            + material_textures.iter().flat_map(|t| &t.levels).map(|l| l.bytes.len()).sum::<usize>()
            + m.bone_animation.as_ref().map_or(0, |b| {
                asset.blob(b.texture).len() + asset.blob(b.joints).len() + asset.blob(b.weights).len()
            })
            + rest.len() * size_of::<gpu::RestVertex>()
            + attachments.vertices.len() * size_of::<gpu::AttachmentVertex>()
            + attachments.capture_rows.len() * 16
            + index_bytes.len()
            + attachments.indices.len() * 4;

        let device = self.device.clone();
        // Every creation below is inside the scope, and so is every use of what it created (writes,
        // views, bind groups): an error caught here never reaches the device's uncaptured-error
        // handler (wgpu's default one panics). The scope is popped on every way out, early returns
        // included (the closure).
        let scope = AllocScope::push(&device);
        let created = (|| -> Result<_, RenderError> {
            let mut gpu_bytes = 0u64;
            let texture = |label, width: u32, height: u32, format: wgpu::TextureFormat, bytes: &[u8]| {
                let size = wgpu::Extent3d { width, height, depth_or_array_layers: 1 };
                let t = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                });
                let texel = format.block_copy_size(None).unwrap_or(4);
                self.queue.write_texture(
                    t.as_image_copy(),
                    bytes,
                    wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(width * texel),
                        rows_per_image: Some(height),
                    },
                    size,
                );
                t
            };
            // Every vertex-texture binding: the format's textures and 1x1 stand-ins for the others.
            let vat_textures = vertex_textures.map(|t| {
                gpu_bytes += t.data.bytes.len() as u64;
                let label = if t.stand_in { "vat texture (unused by this format)" } else { "vat texture" };
                let texture = texture(
                    label,
                    t.data.width,
                    t.data.height,
                    conv::map_texel_format(t.data.format),
                    t.data.bytes,
                );
                (t.name, texture)
            });
            self.upload_step(0)?;
            let (bone_texture, joints, weights) = match &m.bone_animation {
                Some(b) => {
                    let bytes = asset.blob(b.texture);
                    gpu_bytes += bytes.len() as u64;
                    let t = texture(
                        "vat bone texture",
                        b.layout.width,
                        b.layout.height,
                        wgpu::TextureFormat::Rgba32Float,
                        bytes,
                    );
                    (t, asset.blob(b.joints), asset.blob(b.weights))
                }
                None => {
                    let t =
                        texture("vat bone texture (none)", 1, 1, wgpu::TextureFormat::Rgba32Float, &[0; 16]);
                    (t, &[][..], &[][..])
                }
            };
            let [morph_texture, morph_weights] = morph.map(|t| {
                gpu_bytes += t.bytes.len() as u64;
                texture("vat morph texture", t.width, t.height, conv::map_texel_format(t.format), t.bytes)
            });
            let [rigid_pieces, rigid_vertices] = rigid.map(|t| {
                gpu_bytes += t.bytes.len() as u64;
                texture("vat rigid texture", t.width, t.height, conv::map_texel_format(t.format), t.bytes)
            });
            gpu_bytes += fluid.bytes.len() as u64;
            let fluid_lookup = texture(
                "vat fluid lookup",
                fluid.width,
                fluid.height,
                conv::map_texel_format(fluid.format),
                fluid.bytes,
            );
            gpu_bytes += sprite.bytes.len() as u64;
            let sprite_particles = texture(
                "vat sprite particles",
                sprite.width,
                sprite.height,
                conv::map_texel_format(sprite.format),
                sprite.bytes,
            );
            // Material texture arrays: every mip level of every layer, uploaded level by level.
            let material_views = material_textures.map(|t| {
                let (width, height) = t.levels.first().map_or((1, 1), |l| (l.width, l.height));
                let format = if t.srgb {
                    wgpu::TextureFormat::Rgba8UnormSrgb
                } else {
                    wgpu::TextureFormat::Rgba8Unorm
                };
                let texture = device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(if t.stand_in {
                        "vat material texture (none)"
                    } else {
                        "vat material texture"
                    }),
                    size: wgpu::Extent3d { width, height, depth_or_array_layers: t.layers },
                    mip_level_count: t.levels.len() as u32,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                    view_formats: &[],
                });
                for (level, l) in t.levels.iter().enumerate() {
                    gpu_bytes += l.bytes.len() as u64;
                    self.queue.write_texture(
                        wgpu::TexelCopyTextureInfo {
                            texture: &texture,
                            mip_level: level as u32,
                            origin: wgpu::Origin3d::ZERO,
                            aspect: wgpu::TextureAspect::All,
                        },
                        l.bytes,
                        wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(l.width * 4),
                            rows_per_image: Some(l.height),
                        },
                        wgpu::Extent3d { width: l.width, height: l.height, depth_or_array_layers: t.layers },
                    );
                }
                let view = texture.create_view(&wgpu::TextureViewDescriptor {
                    dimension: Some(wgpu::TextureViewDimension::D2Array),
                    ..Default::default()
                });
                (t.name, view)
            });
            self.upload_step(1)?;
            let storage = wgpu::BufferUsages::STORAGE;
            let clips = gpu::clip_records(&m.clips);
            let buffers = [
                buffer_init(&device, "vat clips", bytemuck::cast_slice(&clips), 32, storage)?,
                buffer_init(
                    &device,
                    "vat asset",
                    bytemuck::bytes_of(&constants),
                    0,
                    wgpu::BufferUsages::UNIFORM,
                )?,
                buffer_init(&device, "vat joints", joints, 4, storage)?,
                buffer_init(&device, "vat weights", weights, 4, storage)?,
                buffer_init(
                    &device,
                    "vat rest vertices",
                    bytemuck::cast_slice(&rest),
                    size_of::<gpu::RestVertex>(),
                    storage,
                )?,
                buffer_init(
                    &device,
                    "vat materials",
                    bytemuck::cast_slice(&materials),
                    size_of::<gpu::MaterialRecord>(),
                    storage,
                )?,
                buffer_init(
                    &device,
                    "vat attachment vertices",
                    bytemuck::cast_slice(&attachments.vertices),
                    32,
                    storage,
                )?,
                buffer_init(
                    &device,
                    "vat captures",
                    bytemuck::cast_slice(&attachments.capture_rows),
                    16,
                    storage,
                )?,
            ];
            let [clip_buf, asset_buf, joint_buf, weight_buf, rest_buf, material_buf, attach_buf, capture_buf] =
                &buffers;
            let mut indices = index_bytes.to_vec();
            let attachment_first_index = (index_bytes.len() / 4) as u32;
            indices.extend(attachments.indices.iter().flat_map(|i| i.to_le_bytes()));
            self.upload_step(2)?;
            let index_buffer = buffer_init(&device, "vat indices", &indices, 4, wgpu::BufferUsages::INDEX)?;
            drop(indices);
            self.upload_step(3)?;
            gpu_bytes += buffers.iter().map(wgpu::Buffer::size).sum::<u64>() + index_buffer.size();
            let vat_views =
                vat_textures.map(|(name, t)| (name, t.create_view(&wgpu::TextureViewDescriptor::default())));
            let bone_view = bone_texture.create_view(&wgpu::TextureViewDescriptor::default());
            let morph_view = morph_texture.create_view(&wgpu::TextureViewDescriptor::default());
            let morph_weights_view = morph_weights.create_view(&wgpu::TextureViewDescriptor::default());
            let rigid_pieces_view = rigid_pieces.create_view(&wgpu::TextureViewDescriptor::default());
            let rigid_vertices_view = rigid_vertices.create_view(&wgpu::TextureViewDescriptor::default());
            let fluid_lookup_view = fluid_lookup.create_view(&wgpu::TextureViewDescriptor::default());
            let sprite_particles_view = sprite_particles.create_view(&wgpu::TextureViewDescriptor::default());
            let groups = StageSet::ALL
                .iter()
                .map(|&set| {
                    bind_group(
                        &device,
                        &self.group_layouts[set as usize][1],
                        gpu::GROUP_ASSET,
                        set,
                        "vat asset",
                        |name| {
                            if let Some((_, view)) =
                                vat_views.iter().chain(&material_views).find(|(n, _)| *n == name)
                            {
                                return Some(wgpu::BindingResource::TextureView(view));
                            }
                            Some(match name {
                                "clips" => clip_buf.as_entire_binding(),
                                "asset" => asset_buf.as_entire_binding(),
                                "bone_texture" => wgpu::BindingResource::TextureView(&bone_view),
                                "joints" => joint_buf.as_entire_binding(),
                                "weights" => weight_buf.as_entire_binding(),
                                "rest_vertices" => rest_buf.as_entire_binding(),
                                "attachment_vertices" => attach_buf.as_entire_binding(),
                                "captures" => capture_buf.as_entire_binding(),
                                "morph_texture" => wgpu::BindingResource::TextureView(&morph_view),
                                "morph_weights" => wgpu::BindingResource::TextureView(&morph_weights_view),
                                "rigid_pieces" => wgpu::BindingResource::TextureView(&rigid_pieces_view),
                                "rigid_vertices" => wgpu::BindingResource::TextureView(&rigid_vertices_view),
                                "fluid_lookup" => wgpu::BindingResource::TextureView(&fluid_lookup_view),
                                "sprite_particles" => {
                                    wgpu::BindingResource::TextureView(&sprite_particles_view)
                                }
                                "materials" => material_buf.as_entire_binding(),
                                "material_sampler" => wgpu::BindingResource::Sampler(&self.material_sampler),
                                _ => return None,
                            })
                        },
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok((groups, index_buffer, gpu_bytes, attachment_first_index))
        })();
        // Whatever was created is dropped on the way out (wgpu frees it once nothing refers to it).
        let (groups, index_buffer, gpu_bytes, attachment_first_index) =
            scope.finish("asset upload", requested as u64, created)?;
        self.upload_step(4)?;
        let info = AssetDrawInfo::new(m, attachment_first_index, attachments.indices.len() as u32)
            .ok_or(RenderError::AssetHasNoLods)?;
        Ok(GpuAsset { info, groups, index_buffer, gpu_bytes })
    }

    /// Test hook (feature `fault-injection`): the next uploads fail on purpose at `step` (0: after the
    /// animation texture, 1: after the bone texture, 2: after the asset buffers, 3: after the index
    /// buffer, 4: after the bind groups, i.e. just before success), with everything created so far
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
    fn upload_step(&self, step: u32) -> Result<(), RenderError> {
        #[cfg(feature = "fault-injection")]
        if self.upload_fault == Some(step) {
            return Err(RenderError::Device(format!("injected upload fault at step {step}")));
        }
        let _ = step;
        Ok(())
    }
}
