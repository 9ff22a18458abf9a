//! [`Offscreen`]: the wgpu implementation of vat-core's backend seam.

use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd};
use vat_core::render::{CrowdRenderer, FrameReport, RenderOptions};

use crate::{GpuAsset, HeadlessTarget, RenderError, Renderer, RendererConfig, headless_device};

/// A [`Renderer`] with its own device, queue and offscreen target: vat-wgpu's
/// [`CrowdRenderer`](vat_core::render::CrowdRenderer). Game code written against the trait runs
/// unchanged on `vat_vulkan::Offscreen`.
///
/// The target is `Rgba8UnormSrgb` colour + `Depth32Float` depth ([`RendererConfig::default`]
/// formats; the shadow-map size and interpolation are taken from the config given).
#[derive(Debug)]
pub struct Offscreen {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    renderer: Renderer,
    target: HeadlessTarget,
}

impl Offscreen {
    /// Opens a headless device ([`headless_device`]: the CPU adapter when there is one) and creates a
    /// renderer and a target of `size` pixels.
    ///
    /// # Errors
    /// Those of [`headless_device`] and [`Renderer::new`]; [`RenderError::TextureTooLarge`] for a
    /// target larger than the device allows.
    pub fn new(size: [u32; 2], config: RendererConfig) -> Result<Self, RenderError> {
        let (device, queue, info) = headless_device()?;
        Self::with_device(device, queue, info, size, config)
    }

    /// Like [`new`](Self::new) on a device the caller opened (with `INDIRECT_FIRST_INSTANCE` and the
    /// adapter's limits).
    ///
    /// # Errors
    /// Those of [`Renderer::new`]; [`RenderError::TextureTooLarge`] for an over-limit target size.
    pub fn with_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        size: [u32; 2],
        config: RendererConfig,
    ) -> Result<Self, RenderError> {
        let config = RendererConfig {
            color_format: wgpu::TextureFormat::Rgba8UnormSrgb,
            depth_format: wgpu::TextureFormat::Depth32Float,
            ..config
        };
        check_target_size(&device, size)?;
        let renderer = Renderer::new(&device, &queue, config)?;
        let target = HeadlessTarget::new(&device, size, config);
        Ok(Self { device, queue, info, renderer, target })
    }

    /// The device, queue and renderer, for what the trait does not cover (e.g. [`Renderer::decode`]).
    pub fn parts(&mut self) -> (&wgpu::Device, &wgpu::Queue, &mut Renderer) {
        (&self.device, &self.queue, &mut self.renderer)
    }
}

fn check_target_size(device: &wgpu::Device, size: [u32; 2]) -> Result<(), RenderError> {
    let limit = device.limits().max_texture_dimension_2d;
    if size[0] == 0 || size[1] == 0 || size[0] > limit || size[1] > limit {
        return Err(RenderError::TextureTooLarge { what: "target", width: size[0], height: size[1], limit });
    }
    Ok(())
}

impl CrowdRenderer for Offscreen {
    type Asset = GpuAsset;
    type Error = RenderError;

    fn adapter_name(&self) -> String {
        format!("wgpu/{:?}: {}", self.info.backend, self.info.name)
    }

    fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, RenderError> {
        self.renderer.upload(asset)
    }

    fn size(&self) -> [u32; 2] {
        self.target.size()
    }

    fn resize(&mut self, size: [u32; 2]) -> Result<(), RenderError> {
        check_target_size(&self.device, size)?;
        self.wait()?;
        self.target = HeadlessTarget::new(&self.device, size, *self.renderer.config());
        Ok(())
    }

    fn render(
        &mut self,
        asset: &GpuAsset,
        crowd: &mut Crowd,
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<FrameReport, RenderError> {
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vat offscreen frame") });
        let report = self.renderer.render(&mut encoder, asset, crowd, camera, self.target.target(), options);
        // Submit even on error: the renderer's staging memory is recycled at submission.
        self.queue.submit([encoder.finish()]);
        report
    }

    fn wait(&mut self) -> Result<(), RenderError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Device(e.to_string()))?;
        Ok(())
    }

    fn read_rgba8(&mut self) -> Result<Vec<u8>, RenderError> {
        self.target.read_rgba8(&self.device, &self.queue)
    }

    fn read_gpu_visible(&mut self) -> Result<Vec<Vec<u32>>, RenderError> {
        let mut lists = self.renderer.read_gpu_visible()?;
        for list in &mut lists {
            list.sort_unstable();
        }
        Ok(lists)
    }

    fn forget_crowd(&mut self) {
        self.renderer.forget_crowd();
    }
}
