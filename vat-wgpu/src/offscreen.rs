//! [`Offscreen`]: the wgpu implementation of vat-core's backend seam.

use std::sync::{Arc, Mutex};

use vat_core::backend::frame::gpu_counts::GpuCountsResult;
use vat_core::backend::sorted_lists;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd};
use vat_core::render::{CrowdRenderer, FrameReport, RenderOptions};

use crate::{
    CrowdDraw, DeviceError, Error, GpuAsset, GpuCrowd, HeadlessTarget, RenderTarget, Renderer,
    RendererConfig, headless_device,
};

/// A [`Renderer`] with its own device, queue and offscreen target: vat-wgpu's
/// [`CrowdRenderer`](vat_core::render::CrowdRenderer). Game code written against the trait runs
/// unchanged on `vat_vulkan::Offscreen`.
///
/// The target is `Rgba8UnormSrgb` colour + `Depth32Float` depth ([`RendererConfig::default`](vat_core::backend::RendererConfig::default)
/// formats; the shadow-map size and interpolation are taken from the config given).
///
/// On a device opened with `TIMESTAMP_QUERY`, every frame is bracketed by two timestamps (written by
/// an empty compute pass before and after the frame's passes) and
/// [`last_gpu_time_ms`](CrowdRenderer::last_gpu_time_ms) reports the GPU time between them;
/// [`headless_device`] does not request the feature, so open the device yourself and use
/// [`with_device`](Self::with_device) to get GPU times.
#[derive(Debug)]
pub struct Offscreen {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    renderer: Renderer,
    target: HeadlessTarget,
    timer: Option<FrameTimer>,
    /// What the device reported and nothing caught: loss (from the device-lost callback) and errors
    /// outside error scopes (instead of wgpu's default, a panic). Checked by every call.
    faults: Arc<Mutex<Faults>>,
}

/// Device faults reported asynchronously by wgpu.
#[derive(Debug, Default)]
struct Faults {
    lost: Option<String>,
    error: Option<String>,
}

/// Two timestamps around each frame, resolved into a buffer and copied to a mappable one.
#[derive(Debug)]
struct FrameTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Whether the last submitted frame wrote timestamps not read yet.
    pending: bool,
}

impl FrameTimer {
    /// A timer when `device` has `TIMESTAMP_QUERY`.
    fn new(device: &wgpu::Device) -> Option<Self> {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("vat offscreen frame timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Self {
            queries,
            resolve: buffer(
                "vat offscreen timestamp resolve",
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            readback: buffer(
                "vat offscreen timestamp readback",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            pending: false,
        })
    }

    /// Writes timestamp `index` from an empty compute pass.
    fn stamp(&self, encoder: &mut wgpu::CommandEncoder, index: u32) {
        let _pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("vat offscreen timestamp"),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.queries,
                beginning_of_pass_write_index: Some(index),
                end_of_pass_write_index: None,
            }),
        });
    }
}

impl Offscreen {
    /// Opens a headless device ([`headless_device`]: the CPU adapter when there is one) and creates a
    /// renderer and a target of `size` pixels.
    ///
    /// # Errors
    /// Those of [`headless_device`] and [`Renderer::new`]; [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge) for a
    /// target larger than the device allows.
    pub fn new(size: [u32; 2], config: RendererConfig) -> Result<Self, Error> {
        let (device, queue, info) = headless_device()?;
        Self::with_device(device, queue, info, size, config)
    }

    /// Like [`new`](Self::new) on a device the caller opened (with `INDIRECT_FIRST_INSTANCE` and the
    /// adapter's limits).
    ///
    /// # Errors
    /// Those of [`Renderer::new`]; [`ResourceError::TextureTooLarge`](vat_core::backend::gpu::ResourceError::TextureTooLarge) for an over-limit target size.
    pub fn with_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        size: [u32; 2],
        config: RendererConfig,
    ) -> Result<Self, Error> {
        let config = RendererConfig {
            color_format: wgpu::TextureFormat::Rgba8UnormSrgb,
            depth_format: wgpu::TextureFormat::Depth32Float,
            ..config
        };
        check_target_size(&device, size)?;
        let renderer = Renderer::new(&device, &queue, config)?;
        let target = HeadlessTarget::new(&device, size, config)?;
        let timer = FrameTimer::new(&device);
        let faults = Arc::new(Mutex::new(Faults::default()));
        let lost = Arc::clone(&faults);
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut f) = lost.lock() {
                f.lost = Some(format!("{reason:?}: {message}"));
            }
        });
        let errors = Arc::clone(&faults);
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            if let Ok(mut f) = errors.lock() {
                f.error.get_or_insert_with(|| error.to_string());
            }
        }));
        Ok(Self { device, queue, info, renderer, target, timer, faults })
    }

    /// The device, queue and renderer, for what the trait does not cover (e.g. [`Renderer::decode`]).
    pub fn parts(&mut self) -> (&wgpu::Device, &wgpu::Queue, &mut Renderer) {
        (&self.device, &self.queue, &mut self.renderer)
    }

    /// Records a frame of the caller's own into a new encoder over the offscreen's target, then
    /// submits it (without waiting; [`read_rgba8`](CrowdRenderer::read_rgba8) reads the result):
    /// `record` gets the device, the renderer, the encoder and the target (`Rgba8UnormSrgb` colour
    /// and `Depth32Float` depth, contents left from the previous frame: clear or load them as the
    /// host's passes wish). This is how a host embeds vat in its own frame ([`Renderer::prepare`],
    /// its own pass with [`Renderer::draw`] inside) on the offscreen's device; the trait's `render`
    /// is `record_host_frame` of [`Renderer::render`]. The encoder is submitted even when `record`
    /// fails (the renderer's staging memory is recycled at submission).
    ///
    /// # Errors
    /// `record`'s error, or a device loss or error reported by the frame.
    pub fn record_host_frame<R>(
        &mut self,
        record: impl FnOnce(
            &wgpu::Device,
            &mut Renderer,
            &mut wgpu::CommandEncoder,
            RenderTarget<'_>,
        ) -> Result<R, Error>,
    ) -> Result<R, Error> {
        self.check_device()?;
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vat offscreen frame") });
        if let Some(timer) = &self.timer {
            timer.stamp(&mut encoder, 0);
        }
        let result = record(&self.device, &mut self.renderer, &mut encoder, self.target.target());
        if let Some(timer) = &mut self.timer {
            timer.stamp(&mut encoder, 1);
            encoder.resolve_query_set(&timer.queries, 0..2, &timer.resolve, 0);
            encoder.copy_buffer_to_buffer(&timer.resolve, 0, &timer.readback, 0, 16);
            timer.pending = result.is_ok();
        }
        // Submit even on error: the renderer's staging memory is recycled at submission.
        self.queue.submit([encoder.finish()]);
        // Non-blocking: lets wgpu report a loss or an error of this frame now rather than later.
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.check_device()?;
        result
    }
}

impl Offscreen {
    /// The device's loss, or the first error it reported outside an error scope, as a typed error
    /// (the error is cleared once returned; the loss stays).
    fn check_device(&self) -> Result<(), Error> {
        let Ok(mut faults) = self.faults.lock() else {
            return Err(DeviceError::Wgpu("the device fault record was poisoned".into()).into());
        };
        if let Some(reason) = &faults.lost {
            return Err(Error::DeviceLost(reason.clone()));
        }
        match faults.error.take() {
            Some(e) => Err(DeviceError::Wgpu(e).into()),
            None => Ok(()),
        }
    }
}

fn check_target_size(device: &wgpu::Device, size: [u32; 2]) -> Result<(), Error> {
    Ok(vat_core::backend::check_target_size(size, device.limits().max_texture_dimension_2d)?)
}

impl CrowdRenderer for Offscreen {
    type Asset = GpuAsset;
    type Crowd = GpuCrowd;
    type Error = Error;

    fn adapter_name(&self) -> String {
        format!("wgpu/{:?}: {}", self.info.backend, self.info.name)
    }

    fn upload(&mut self, asset: &Asset<'_>) -> Result<GpuAsset, Error> {
        self.check_device()?;
        self.renderer.upload(asset)
    }

    fn size(&self) -> [u32; 2] {
        self.target.size()
    }

    fn resize(&mut self, size: [u32; 2]) -> Result<(), Error> {
        self.check_device()?;
        check_target_size(&self.device, size)?;
        self.wait()?;
        self.target = HeadlessTarget::new(&self.device, size, *self.renderer.config())?;
        Ok(())
    }

    fn create_crowd(&mut self, crowd: &Crowd) -> Result<GpuCrowd, Error> {
        self.check_device()?;
        self.renderer.create_crowd(crowd)
    }

    fn render(
        &mut self,
        crowds: &mut [CrowdDraw<'_>],
        camera: &Camera,
        options: &RenderOptions,
    ) -> Result<FrameReport, Error> {
        self.record_host_frame(|_, renderer, encoder, target| {
            renderer.render(encoder, crowds, camera, target, options)
        })
    }

    fn wait(&mut self) -> Result<(), Error> {
        self.check_device()?;
        let polled = self.device.poll(wgpu::PollType::wait_indefinitely());
        // A loss is reported through the callback while polling.
        self.check_device()?;
        polled.map_err(|e| DeviceError::Wgpu(e.to_string()))?;
        Ok(())
    }

    fn read_rgba8(&mut self) -> Result<Vec<u8>, Error> {
        self.check_device()?;
        self.target.read_rgba8(&self.device, &self.queue)
    }

    fn read_motion(&mut self) -> Result<Vec<[f32; 4]>, Error> {
        self.check_device()?;
        self.target.read_motion(&self.device, &self.queue)
    }

    fn read_gpu_visible(&mut self, crowd: &GpuCrowd) -> Result<Vec<Vec<u32>>, Error> {
        self.check_device()?;
        Ok(sorted_lists(self.renderer.read_gpu_visible(crowd)?))
    }

    fn gpu_counts(&mut self, crowd: &mut GpuCrowd) -> Result<Option<GpuCountsResult>, Error> {
        self.check_device()?;
        Ok(self.renderer.gpu_counts(crowd))
    }

    fn last_gpu_time_ms(&mut self) -> Option<f64> {
        let timer = self.timer.as_mut()?;
        if !timer.pending {
            return None;
        }
        timer.pending = false;
        let bytes = crate::target::read_mapped(&self.device, &timer.readback).ok()?;
        let stamp = |o: usize| bytes.get(o..o + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
        let ticks = stamp(8)?.checked_sub(stamp(0)?)?;
        Some(ticks as f64 * f64::from(self.queue.get_timestamp_period()) * 1e-6)
    }
}
