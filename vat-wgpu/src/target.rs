//! An offscreen colour + depth target that can be read back.

use std::sync::mpsc;

use crate::renderer::AllocScope;
use crate::{DeviceError, Error, RenderTarget, RendererConfig};

/// Bytes a texel of a colour target of `format` takes (4 when wgpu does not say).
fn target_texel_bytes(format: wgpu::TextureFormat) -> u64 {
    format.block_copy_size(None).map_or(4, u64::from)
}

/// Colour and depth textures for rendering without a window, with a readback to tightly packed RGBA8.
#[derive(Debug)]
pub struct HeadlessTarget {
    color: wgpu::Texture,
    color_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    motion: wgpu::Texture,
    motion_view: wgpu::TextureView,
    size: [u32; 2],
}

/// The format of [`HeadlessTarget`]'s motion-vector attachment: 32-bit float RGBA, so a motion is
/// read back exactly as the shader wrote it.
pub const MOTION_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba32Float;

impl HeadlessTarget {
    /// Creates the textures: colour of `config.color_format` (which must be a 4-byte RGBA or BGRA
    /// format for [`read_rgba8`](Self::read_rgba8)), depth of `config.depth_format`, motion vectors
    /// of [`MOTION_FORMAT`] (16 bytes a pixel), `size` pixels (each side at least 1).
    ///
    /// # Errors
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate them,
    /// [`DeviceError::Wgpu`](crate::DeviceError::Wgpu) if wgpu refuses them otherwise (a size over the device's
    /// `max_texture_dimension_2d`, a format that cannot be rendered to).
    pub fn new(device: &wgpu::Device, size: [u32; 2], config: RendererConfig) -> Result<Self, Error> {
        let scope = AllocScope::push(device);
        let extent =
            wgpu::Extent3d { width: size[0].max(1), height: size[1].max(1), depth_or_array_layers: 1 };
        let make = |label, format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: extent,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let color = make(
            "vat headless colour",
            config.color_format,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let depth = make("vat headless depth", config.depth_format, wgpu::TextureUsages::RENDER_ATTACHMENT);
        let motion = make(
            "vat headless motion",
            MOTION_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        );
        let color_view = color.create_view(&wgpu::TextureViewDescriptor::default());
        let depth_view = depth.create_view(&wgpu::TextureViewDescriptor::default());
        let motion_view = motion.create_view(&wgpu::TextureViewDescriptor::default());
        let texels = u64::from(extent.width) * u64::from(extent.height);
        let bytes = texels * (target_texel_bytes(config.color_format) + 4 + 16);
        let target =
            Self { color, color_view, depth_view, motion, motion_view, size: [extent.width, extent.height] };
        scope.finish("render target", bytes, Ok(target))
    }

    /// The views to render into (the motion attachment is drawn into only with motion vectors on).
    pub fn target(&self) -> RenderTarget<'_> {
        RenderTarget {
            color: &self.color_view,
            depth: &self.depth_view,
            motion: Some((&self.motion_view, MOTION_FORMAT)),
            size: self.size,
        }
    }

    /// Copies the motion-vector texture back: `width * height` RGBA `f32` texels, rows top to
    /// bottom, as the last frame with motion vectors wrote them (`.xy` the motion; see
    /// `vat_core::render::RenderOptions::motion_vectors`; 0 where nothing was drawn). Waits for the
    /// GPU.
    ///
    /// # Errors
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate the read-back buffer,
    /// [`DeviceError::Readback`](crate::DeviceError::Readback) if mapping fails.
    pub fn read_motion(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Vec<[f32; 4]>, Error> {
        let bytes = read_texture(device, queue, &self.motion, self.size, 16)?;
        Ok(bytes.chunks_exact(16).map(bytemuck::pod_read_unaligned).collect())
    }

    /// Width and height in pixels.
    pub fn size(&self) -> [u32; 2] {
        self.size
    }

    /// Copies the colour texture back: `width * height * 4` bytes, rows top to bottom, RGBA order
    /// (BGRA formats are swizzled), values as stored (sRGB-encoded for `*Srgb` formats). Waits for
    /// the GPU.
    ///
    /// # Errors
    /// [`DeviceError::Readback`](crate::DeviceError::Readback) if the format is not 4 bytes per pixel or mapping fails,
    /// [`DeviceError::OutOfDeviceMemory`](crate::DeviceError::OutOfDeviceMemory) if the device cannot allocate the read-back buffer.
    pub fn read_rgba8(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<Vec<u8>, Error> {
        let format = self.color.format();
        if format.block_copy_size(None) != Some(4) {
            return Err(
                DeviceError::Readback(format!("colour format {format:?} is not 4 bytes per pixel")).into()
            );
        }
        let bgra = matches!(format, wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb);
        let mut out = read_texture(device, queue, &self.color, self.size, 4)?;
        if bgra {
            for px in out.chunks_exact_mut(4) {
                px.swap(0, 2);
            }
        }
        Ok(out)
    }
}

/// Copies `texture` (`size` pixels of `texel` bytes) back as tightly packed rows, top to bottom.
fn read_texture(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    texture: &wgpu::Texture,
    size: [u32; 2],
    texel: u32,
) -> Result<Vec<u8>, Error> {
    let [width, height] = size;
    let row = width * texel;
    let padded = row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let scope = AllocScope::push(device);
    let staging_bytes = u64::from(padded) * u64::from(height);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("vat headless readback"),
        size: staging_bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(height),
            },
        },
        texture.size(),
    );
    let commands = scope.finish("read-back buffer", staging_bytes, Ok(encoder.finish()))?;
    queue.submit([commands]);
    let bytes = read_mapped(device, &staging)?;
    let mut out = Vec::with_capacity((row * height) as usize);
    for y in 0..height as usize {
        let start = y * padded as usize;
        out.extend_from_slice(&bytes[start..start + row as usize]);
    }
    Ok(out)
}

/// Maps a `MAP_READ` buffer, waits, and copies its contents out.
pub(crate) fn read_mapped(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, Error> {
    let (tx, rx) = mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| DeviceError::Readback(e.to_string()))?;
    rx.recv()
        .map_err(|e| DeviceError::Readback(e.to_string()))?
        .map_err(|e| DeviceError::Readback(e.to_string()))?;
    let bytes = buffer.get_mapped_range(..).map_err(|e| DeviceError::Readback(e.to_string()))?.to_vec();
    buffer.unmap();
    Ok(bytes)
}
