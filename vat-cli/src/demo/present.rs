//! The demo's presenters: a window surface on the renderer's device, wgpu or Vulkan, that the
//! frame is drawn into and presented (or read back for a screenshot).

use super::*;

/// `--backend wgpu`: a `wgpu::Surface` on the renderer's device.
pub(super) struct WgpuPresenter {
    pub(super) instance: wgpu::Instance,
    pub(super) window: Arc<Window>,
    pub(super) surface: wgpu::Surface<'static>,
    pub(super) config: wgpu::SurfaceConfiguration,
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) depth: wgpu::TextureView,
    /// The demo's own scene on the device (made at the first frame).
    pub(super) host: Option<SceneGpu>,
}

/// The depth format of the swapchain passes (the offscreen target's).
pub(super) const WGPU_DEPTH: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

impl WgpuPresenter {
    /// The surface of `window`, a device that can present to it, and the offscreen renderer on it.
    pub(super) fn create(window: Arc<Window>, size: [u32; 2]) -> Result<(vat_wgpu::Offscreen, Self)> {
        let instance = vat_wgpu::vat_instance();
        let surface = instance
            .create_surface(Arc::clone(&window))
            .context("wgpu: cannot make a surface of the window")?;
        let (adapter, device, queue) = vat_wgpu::presenting_device(&instance, &surface)
            .context("wgpu: cannot open a device that presents to the window")?;
        let caps = surface.get_capabilities(&adapter);
        let format = [wgpu::TextureFormat::Bgra8UnormSrgb, wgpu::TextureFormat::Rgba8UnormSrgb]
            .into_iter()
            .find(|f| caps.formats.contains(f))
            .with_context(|| format!("wgpu: the surface offers no 8-bit sRGB format ({:?})", caps.formats))?;
        let alpha_mode = if caps.alpha_modes.contains(&wgpu::CompositeAlphaMode::Opaque) {
            wgpu::CompositeAlphaMode::Opaque
        } else {
            wgpu::CompositeAlphaMode::Auto
        };
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: size[0],
            height: size[1],
            desired_maximum_frame_latency: 2,
            present_mode: wgpu::PresentMode::Fifo,
            alpha_mode,
            view_formats: Vec::new(),
        };
        // The offscreen first: it installs the device's error handler, which catches configure's errors.
        let renderer = vat_wgpu::Offscreen::with_device(
            device.clone(),
            queue.clone(),
            adapter.get_info(),
            size,
            vat_wgpu::RendererConfig::default(),
        )
        .context("wgpu: cannot create the renderer")?;
        surface.configure(&device, &config);
        let depth = wgpu_depth(&device, size);
        Ok((renderer, Self { instance, window, surface, config, device, queue, depth, host: None }))
    }

    pub(super) fn configure(&mut self) {
        self.surface.configure(&self.device, &self.config);
        self.depth = wgpu_depth(&self.device, [self.config.width, self.config.height]);
    }
}

/// A depth texture of `size` pixels for the swapchain passes.
pub(super) fn wgpu_depth(device: &wgpu::Device, size: [u32; 2]) -> wgpu::TextureView {
    device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("vat demo swapchain depth"),
            size: wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: WGPU_DEPTH,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        })
        .create_view(&wgpu::TextureViewDescriptor::default())
}

impl Presenter for WgpuPresenter {
    type Renderer = vat_wgpu::Offscreen;

    fn open(window: Arc<Window>, size: [u32; 2]) -> Result<(vat_wgpu::Offscreen, Self)> {
        Self::create(window, size)
    }

    fn describe(&self) -> String {
        format!(
            "a wgpu surface ({:?}, {:?}, {}x{})",
            self.config.present_mode, self.config.format, self.config.width, self.config.height
        )
    }

    fn size(&self) -> [u32; 2] {
        [self.config.width, self.config.height]
    }

    fn resize(&mut self, size: [u32; 2]) -> Result<()> {
        self.config.width = size[0];
        self.config.height = size[1];
        self.configure();
        Ok(())
    }

    fn render(
        &mut self,
        renderer: &mut vat_wgpu::Offscreen,
        draw: CrowdFrame<'_, vat_wgpu::Offscreen>,
    ) -> Result<Option<FrameReport>> {
        let texture = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t) => t,
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                // Present this one, then configure for the window as it is now.
                let report = self.render_into(renderer, &t, draw)?;
                self.queue.present(t);
                self.configure();
                return Ok(Some(report));
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => return Ok(None),
            wgpu::CurrentSurfaceTexture::Outdated => {
                self.configure();
                return Ok(None);
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                self.surface = self
                    .instance
                    .create_surface(Arc::clone(&self.window))
                    .context("wgpu: cannot make the lost surface again")?;
                self.configure();
                return Ok(None);
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                bail!("wgpu: acquiring the next surface texture failed")
            }
        };
        let report = self.render_into(renderer, &texture, draw)?;
        self.queue.present(texture);
        Ok(Some(report))
    }

    fn screenshot(
        &mut self,
        renderer: &mut vat_wgpu::Offscreen,
        draw: CrowdFrame<'_, vat_wgpu::Offscreen>,
    ) -> Result<Vec<u8>> {
        resize_for_screenshot(renderer, self.size())?;
        let host = self.host(renderer, draw.ground);
        let CrowdFrame { asset, gpu, crowd, ground, frame } = draw;
        renderer
            .record_host_frame(|_, r, encoder, target| {
                let target = ColourTarget {
                    color: target.color,
                    resolve: None,
                    depth: target.depth,
                    formats: r.pass_formats(),
                };
                let mut crowds = [vat_wgpu::CrowdDraw { asset, gpu, crowd }];
                host.record_frame(r, encoder, &mut crowds, ground, &frame, &target)
            })
            .context("rendering the screenshot failed")?;
        renderer.read_rgba8().context("screenshot read-back failed")
    }
}

impl WgpuPresenter {
    /// The demo's scene on the device (made and given to vat as the host's shadow map at the first
    /// frame), its uniforms written from `ground` for the next submission.
    pub(super) fn host(&mut self, renderer: &mut vat_wgpu::Offscreen, ground: &HostScene) -> &mut SceneGpu {
        let host = self.host.get_or_insert_with(|| {
            let host = SceneGpu::new(&self.device, ground);
            renderer.parts().2.set_host_shadow_map(Some(host.shadow_view().clone()));
            host
        });
        host.write_uniforms(&self.queue, ground);
        host
    }

    /// Records and submits the frame into `texture` (not presented yet).
    pub(super) fn render_into(
        &mut self,
        renderer: &mut vat_wgpu::Offscreen,
        texture: &wgpu::SurfaceTexture,
        draw: CrowdFrame<'_, vat_wgpu::Offscreen>,
    ) -> Result<FrameReport> {
        let view = texture.texture.create_view(&wgpu::TextureViewDescriptor::default());
        let formats = vat_wgpu::PassFormats {
            conventions: vat_wgpu::PassConventions::STANDARD,
            color: Some(self.config.format),
            motion: None,
            depth: WGPU_DEPTH,
            samples: 1,
        };
        self.host(renderer, draw.ground);
        let (Some(host), depth) = (&mut self.host, &self.depth) else {
            bail!("the demo's scene was made above");
        };
        let CrowdFrame { asset, gpu, crowd, ground, frame } = draw;
        let report = renderer.record_host_frame(|_, r, encoder, _offscreen_target| {
            let target = ColourTarget { color: &view, resolve: None, depth, formats };
            let mut crowds = [vat_wgpu::CrowdDraw { asset, gpu, crowd }];
            host.record_frame(r, encoder, &mut crowds, ground, &frame, &target)
        });
        report.context("render failed")
    }
}

/// Makes `renderer`'s offscreen target `size` pixels (the swapchain's) for the screenshot.
pub(super) fn resize_for_screenshot<R: CrowdRenderer>(renderer: &mut R, size: [u32; 2]) -> Result<()> {
    if size[0] > 0 && size[1] > 0 && renderer.size() != size {
        renderer.resize(size).context("cannot resize the screenshot target")?;
    }
    Ok(())
}

/// `--backend vulkan`: a `VkSwapchainKHR` on a context made for the window.
pub(super) struct VulkanPresenter {
    /// The demo's own scene on the device (made at the first frame). Before the swapchain: it
    /// waits for the device when dropped.
    pub(super) host: Option<VulkanSceneGpu>,
    pub(super) swapchain: vat_vulkan::Swapchain,
    /// Whether the Khronos validation layer checks the frames (when installed).
    pub(super) validation: bool,
}

impl VulkanPresenter {
    /// A context presenting to `window` (validation layer when installed), the offscreen renderer on
    /// it and the swapchain.
    pub(super) fn create(window: Arc<Window>, size: [u32; 2]) -> Result<(vat_vulkan::Offscreen, Self)> {
        let ctx = Rc::new(
            vat_vulkan::Context::presenting(window, true)
                .context("Vulkan: cannot open a device that presents to the window")?,
        );
        let renderer = vat_vulkan::Offscreen::with_context(&ctx, size, vat_vulkan::RendererConfig::default())
            .context("Vulkan: cannot create the renderer")?;
        let swapchain =
            vat_vulkan::Swapchain::new(&ctx, size).context("Vulkan: cannot create a swapchain")?;
        Ok((renderer, Self { host: None, swapchain, validation: ctx.validation_enabled() }))
    }
}

impl Presenter for VulkanPresenter {
    type Renderer = vat_vulkan::Offscreen;

    fn open(window: Arc<Window>, size: [u32; 2]) -> Result<(vat_vulkan::Offscreen, Self)> {
        Self::create(window, size)
    }

    fn describe(&self) -> String {
        let layer = if self.validation { "; validation layer on" } else { "" };
        format!("{}{layer}", self.swapchain.describe())
    }

    fn size(&self) -> [u32; 2] {
        self.swapchain.size()
    }

    fn resize(&mut self, size: [u32; 2]) -> Result<()> {
        self.swapchain.resize(size).context("Vulkan: cannot recreate the swapchain")
    }

    fn render(
        &mut self,
        renderer: &mut vat_vulkan::Offscreen,
        draw: CrowdFrame<'_, vat_vulkan::Offscreen>,
    ) -> Result<Option<FrameReport>> {
        let host = Self::host(&mut self.host, renderer, draw.ground)?;
        let CrowdFrame { asset, gpu, crowd, ground, frame } = draw;
        let presented = self.swapchain.render_with(renderer, |_, r, cb, target| -> Result<FrameReport> {
            let target = VulkanColourTarget {
                color: target.color,
                resolve: None,
                depth: target.depth,
                area: target.area,
                formats: target.formats,
            };
            let mut crowds = [vat_vulkan::CrowdDraw { asset, gpu, crowd }];
            host.record_frame(r, cb, &mut crowds, ground, &frame, &target)
        });
        match presented.context("render failed")? {
            vat_vulkan::Presented::Shown(report) => Ok(Some(report)),
            vat_vulkan::Presented::Skipped => Ok(None),
        }
    }

    fn screenshot(
        &mut self,
        renderer: &mut vat_vulkan::Offscreen,
        draw: CrowdFrame<'_, vat_vulkan::Offscreen>,
    ) -> Result<Vec<u8>> {
        resize_for_screenshot(renderer, self.size())?;
        let host = Self::host(&mut self.host, renderer, draw.ground)?;
        let CrowdFrame { asset, gpu, crowd, ground, frame } = draw;
        let mut failure = None;
        renderer
            .record_host_frame(|_, r, cb, target| {
                let target = VulkanColourTarget {
                    color: target.color,
                    resolve: None,
                    depth: target.depth,
                    area: vat_vulkan::full_rect(target.size),
                    formats: r.pass_formats(),
                };
                let mut crowds = [vat_vulkan::CrowdDraw { asset, gpu, crowd }];
                host.record_frame(r, cb, &mut crowds, ground, &frame, &target).map(drop).map_err(|e| {
                    // Not submitted: the host's error is returned below.
                    failure = Some(e);
                    vat_vulkan::Error::from(vat_vulkan::DeviceError::Internal(
                        "the demo's frame recording failed",
                    ))
                })
            })
            .map_err(|e| failure.take().unwrap_or_else(|| e.into()))
            .context("rendering the screenshot failed")?;
        renderer.read_rgba8().context("screenshot read-back failed")
    }
}

impl VulkanPresenter {
    /// The demo's scene on the device (made and given to vat as the host's shadow map at the first
    /// frame; its uniforms are written in each frame's command buffer).
    pub(super) fn host<'a>(
        host: &'a mut Option<VulkanSceneGpu>,
        renderer: &mut vat_vulkan::Offscreen,
        ground: &HostScene,
    ) -> Result<&'a mut VulkanSceneGpu> {
        if host.is_none() {
            let (ctx, r) = renderer.parts();
            // The geometry is the ground's, the same every frame; the uniforms come per frame.
            let made = VulkanSceneGpu::new(ctx, ground)?;
            r.set_host_shadow_map(Some(made.shadow_view()));
            *host = Some(made);
        }
        host.as_mut().context("the demo's scene was made above")
    }
}
