//! # vat-tests
//!
//! Cross-crate and cross-backend tests of the workspace live in `tests/tests/`. This library holds what
//! more than one of them needs: opening a wgpu device on the software Vulkan driver, reading a buffer
//! back, the baked procedural humanoid, and saving renders for a look.

use std::ops::Deref;
use std::sync::{OnceLock, mpsc};

/// A GPU handle (a wgpu instance, device or queue) that is dropped while holding
/// [`vat_core::backend::device_lifetime_lock`]: tests run in parallel threads, and the Vulkan loader
/// crashes when one thread destroys a device while another creates one. Derefs to the handle.
pub struct LockedDrop<T>(Option<T>);

impl<T> LockedDrop<T> {
    /// Wraps `handle`.
    pub fn new(handle: T) -> Self {
        Self(Some(handle))
    }
}

impl<T> Deref for LockedDrop<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("a LockedDrop holds its handle until it is dropped")
    }
}

impl<T> Drop for LockedDrop<T> {
    fn drop(&mut self) {
        let _lifetime = vat_core::backend::device_lifetime_lock();
        drop(self.0.take());
    }
}

/// A wgpu device for tests, on a Vulkan adapter (the CPU adapter, lavapipe, when there is one).
pub struct TestGpu {
    /// The device.
    pub device: LockedDrop<wgpu::Device>,
    /// Its queue.
    pub queue: LockedDrop<wgpu::Queue>,
    /// What the adapter is (printed by tests, so figures name the driver).
    pub info: wgpu::AdapterInfo,
}

/// Opens a device on a Vulkan adapter, preferring a CPU adapter (Mesa's lavapipe, which CI always
/// installs). Panics with the install command when there is none: GPU tests never pass quietly without
/// an adapter.
pub fn test_gpu() -> TestGpu {
    // vat_wgpu::headless_device: Vulkan, CPU adapter first, instance flags without DEBUG (wgpu's DEBUG
    // flag embeds the WGSL in the SPIR-V, which bookworm's validation layer misreports), the adapter's
    // limits and INDIRECT_FIRST_INSTANCE.
    match vat_wgpu::headless_device() {
        Ok((device, queue, info)) => {
            TestGpu { device: LockedDrop::new(device), queue: LockedDrop::new(queue), info }
        }
        Err(e) => panic!("{e} (or run `cargo xtask deps` as root)"),
    }
}

/// A device on the CPU adapter (lavapipe when there is one) of a new Vulkan instance, with `features`
/// and the adapter's limits changed by `limits`; the instance is returned too, for wgpu's report of
/// live objects (`Instance::generate_report`). For tests of limits, missing features and leaks.
pub fn limited_gpu(
    features: wgpu::Features,
    limits: impl Fn(&mut wgpu::Limits),
) -> (LockedDrop<wgpu::Instance>, LockedDrop<wgpu::Device>, LockedDrop<wgpu::Queue>) {
    let _lifetime = vat_core::backend::device_lifetime_lock();
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    desc.flags = wgpu::InstanceFlags::from_build_config() - wgpu::InstanceFlags::DEBUG;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    adapters.sort_by_key(|a| a.get_info().device_type != wgpu::DeviceType::Cpu);
    let adapter =
        adapters.into_iter().next().expect("a Vulkan adapter (apt-get install mesa-vulkan-drivers)");
    let mut required_limits = adapter.limits();
    limits(&mut required_limits);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("vat-tests limited"),
        required_features: features,
        required_limits,
        ..Default::default()
    }))
    .expect("a device with the requested features and limits");
    (LockedDrop::new(instance), LockedDrop::new(device), LockedDrop::new(queue))
}

/// The procedural humanoid baked with default options plus `--bones` (Packed64, 5 LODs, a cap
/// attachment on the head socket), as `.vat` bytes. Baked once per test binary.
pub fn humanoid_vat() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let rig = vat_procgen::humanoid();
        let options = vat_bake::prepare::BakeOptions { bones: true, ..Default::default() };
        let bake = vat_bake::prepare::prepare(&rig, &options).expect("the humanoid bakes");
        bake.to_vat_bytes().expect("the bake serialises")
    })
}

/// Every vertex format of the bake, [`vat_core::format::encoding::VertexFormat::Packed64`] (the default) first.
pub const ALL_VERTEX_FORMATS: [vat_core::format::encoding::VertexFormat; 6] = {
    use vat_core::format::encoding::VertexFormat as F;
    [F::Packed64, F::Unorm16, F::F16, F::F32, F::Unorm8, F::Split8]
};

/// The procedural humanoid baked with default options in vertex format `format` (no bones), as
/// `.vat` bytes. Baked once per format per test binary.
pub fn humanoid_vat_in(format: vat_core::format::encoding::VertexFormat) -> &'static [u8] {
    static BYTES: [OnceLock<Vec<u8>>; 6] = [const { OnceLock::new() }; 6];
    let slot = ALL_VERTEX_FORMATS.iter().position(|&f| f == format).expect("a listed format");
    BYTES[slot].get_or_init(|| {
        let rig = vat_procgen::humanoid();
        let options = vat_bake::prepare::BakeOptions { format, ..Default::default() };
        let bake = vat_bake::prepare::prepare(&rig, &options).expect("the humanoid bakes");
        bake.to_vat_bytes().expect("the bake serialises")
    })
}

/// [`vat_procgen::morph_rig`] (`skinned`: the sheet on a two-joint skin, else every mesh rigid
/// on its node, a morph-only asset) baked with default options plus `--bones`, so with the live
/// morph layer (5 targets, 2,172 vertices: morph bands of 2 rows), as `.vat` bytes. Baked once per
/// test binary.
pub fn morph_vat(skinned: bool) -> &'static [u8] {
    static SKINNED: OnceLock<Vec<u8>> = OnceLock::new();
    static RIGID: OnceLock<Vec<u8>> = OnceLock::new();
    let cell = if skinned { &SKINNED } else { &RIGID };
    cell.get_or_init(|| {
        let rig = vat_procgen::morph_rig(skinned);
        let options = vat_bake::prepare::BakeOptions { bones: true, ..Default::default() };
        let bake = vat_bake::prepare::prepare(&rig, &options).expect("the morph rig bakes");
        assert!(bake.manifest().morph_animation.is_some(), "the morph rig gets a morph layer");
        bake.to_vat_bytes().expect("the bake serialises")
    })
}

/// A rigid-mode asset, as `.vat` bytes: [`vat_procgen::shatter_with`] of 48 pieces (seed 5),
/// its one-shot `shatter` clip plus a looping `rewind` clip (the same frames backwards, so the loop
/// wraps from the rubble to the standing wall: a long rotation at the seam). Baked once per test
/// binary.
pub fn rigid_vat() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut source = vat_procgen::shatter_with(48, 5);
        let mut rewind = source.clips[0].clone();
        rewind.name = "rewind".into();
        rewind.frames.reverse();
        rewind.frames.pop();
        rewind.looping = true;
        source.clips.push(rewind);
        let options = vat_bake::rigid::RigidBakeOptions::default();
        vat_bake::rigid::bake_rigid(&source, &options).expect("the shatter bakes").0
    })
}

/// The built-in splash baked in the fluid mode with `format` (memoised per format).
pub fn fluid_vat(format: vat_core::format::encoding::VertexFormat) -> &'static [u8] {
    type Baked = Vec<(vat_core::format::encoding::VertexFormat, &'static [u8])>;
    static BYTES: OnceLock<std::sync::Mutex<Baked>> = OnceLock::new();
    let cache = BYTES.get_or_init(Default::default);
    let mut cache = cache.lock().expect("no test panicked while baking");
    if let Some((_, bytes)) = cache.iter().find(|(f, _)| *f == format) {
        return bytes;
    }
    let source = vat_procgen::fluid_by_name("splash").expect("the splash is built in");
    let options = vat_bake::fluid::FluidBakeOptions { format, ..Default::default() };
    let bytes: &'static [u8] =
        Vec::leak(vat_bake::fluid::bake_fluid(&source, &options).expect("the splash bakes").0);
    cache.push((format, bytes));
    bytes
}

/// The built-in fountain baked in the sprite mode (looping, as `vat bake --procgen fountain`
/// bakes it; memoised).
pub fn sprite_vat() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let source = vat_procgen::sprite_by_name("fountain").expect("the fountain is built in");
        let options = vat_bake::sprite::SpriteBakeOptions { looping: true, ..Default::default() };
        vat_bake::sprite::bake_sprite(&source, &options).expect("the fountain bakes").0
    })
}

/// Writes tightly packed RGBA8 pixels as a binary PPM (alpha dropped) to `$VAT_TEST_IMAGES/name.ppm`
/// when that variable names a directory; does nothing otherwise. For looking at test renders.
pub fn save_image(name: &str, size: [u32; 2], rgba: &[u8]) {
    let Some(dir) = std::env::var_os("VAT_TEST_IMAGES") else { return };
    let mut out = format!("P6\n{} {}\n255\n", size[0], size[1]).into_bytes();
    for px in rgba.chunks_exact(4) {
        out.extend_from_slice(&px[..3]);
    }
    let path = std::path::Path::new(&dir).join(format!("{name}.ppm"));
    if let Err(e) = std::fs::write(&path, out) {
        eprintln!("could not write {}: {e}", path.display());
    }
}

impl TestGpu {
    /// Copies `buffer` (which needs `COPY_SRC`) into a new mappable buffer and reads it back.
    pub fn read_buffer(&self, buffer: &wgpu::Buffer) -> Vec<u8> {
        let size = buffer.size();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).expect("device poll");
        rx.recv().expect("map callback ran").expect("buffer maps");
        let bytes = staging.get_mapped_range(..).expect("mapped range").to_vec();
        staging.unmap();
        bytes
    }
}

/// Epoch-relative time (seconds) at which [`decode_test_records`] are decoded.
pub const DECODE_TEST_TIME: f32 = 3.7;

/// Instance records in several states at [`DECODE_TEST_TIME`], shared by the decode tests of both
/// backends: every clip at several phases and rates (negative too), cross-fades caught mid-way
/// (weights 0.35 and 0.8) and one that ended, then moved, rotated and scaled copies of all of them.
pub fn decode_test_records(clips: u32) -> Vec<vat_core::instance::InstanceRecord> {
    let mut out = Vec::new();
    for c in 0..clips {
        for (k, rate) in [0.37f32, 1.0, -0.8].into_iter().enumerate() {
            let mut r = vat_core::instance::InstanceRecord {
                clip_a: c,
                phase_offset_a: 0.11 * k as f32 + 0.05 * c as f32,
                rate_a: rate,
                ..Default::default()
            };
            r.set_clip_b(c, 0.0);
            out.push(r);
        }
    }
    // Cross-fades mid-way (weights 0.35 and 0.8 at DECODE_TEST_TIME) and one that ended.
    for (a, b, start, duration) in [
        (1u32, 3u32, DECODE_TEST_TIME - 0.35, 1.0f32),
        (0, 4, DECODE_TEST_TIME - 0.4, 0.5),
        (2, 5, DECODE_TEST_TIME - 9.0, 0.5),
    ] {
        let mut r = vat_core::instance::InstanceRecord {
            clip_a: a % clips,
            phase_offset_a: 0.3,
            rate_a: 1.1,
            phase_offset_b: 0.6,
            rate_b: 0.9,
            fade_start: start,
            ..Default::default()
        };
        r.set_clip_b(b % clips, duration);
        out.push(r);
    }
    let n = out.len();
    for i in 0..n {
        let mut r = out[i];
        r.position = [i as f32 * 1.7 - 9.0, 0.1 * i as f32, 4.0 - i as f32 * 0.9];
        r.yaw = -3.0 + 0.45 * i as f32;
        r.scale = 0.75 + 0.05 * (i % 9) as f32;
        out.push(r);
    }
    out
}

/// A headless wgpu renderer of `size` pixels (the software driver's CPU adapter when there is one)
/// with a `shadow_map_size`-texel shadow map, behind the backend seam.
pub fn wgpu_offscreen(size: [u32; 2], shadow_map_size: u32) -> vat_wgpu::Offscreen {
    let config = vat_wgpu::RendererConfig { shadow_map_size, ..Default::default() };
    match vat_wgpu::Offscreen::new(size, config) {
        Ok(o) => o,
        Err(e) => panic!("{e} (or run `cargo xtask deps` as root)"),
    }
}

/// A headless Vulkan (ash) renderer of `size` pixels with a `shadow_map_size`-texel shadow map,
/// behind the backend seam; the validation layer is on when installed.
pub fn vulkan_offscreen(size: [u32; 2], shadow_map_size: u32) -> vat_vulkan::Offscreen {
    let config = vat_vulkan::RendererConfig { shadow_map_size, ..Default::default() };
    match vat_vulkan::Offscreen::new(size, config) {
        Ok(o) => o,
        Err(e) => panic!("{e} (or run `cargo xtask deps` as root)"),
    }
}

/// Generates one `#[test]` per backend from a test written once against the backend seam
/// ([`vat_core::render::CrowdRenderer`]): `per_backend!(name, |size, shadow| body)` where `body` is
/// a generic function `fn(impl CrowdRenderer)` called with [`wgpu_offscreen`] and
/// [`vulkan_offscreen`] of that size and shadow map. The tests are `name::wgpu` and `name::vulkan`.
#[macro_export]
macro_rules! per_backend {
    ($name:ident, $size:expr, $shadow:expr, $test:path) => {
        mod $name {
            // The size and shadow expressions are written in the calling module.
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn wgpu() {
                $test($crate::wgpu_offscreen($size, $shadow));
            }

            #[test]
            fn vulkan() {
                $test($crate::vulkan_offscreen($size, $shadow));
            }
        }
    };
}

/// A host's render pipeline on wgpu for the tests' offscreen targets (`Rgba8UnormSrgb` colour,
/// `Depth32Float` depth, one sample): `vs` and `fs` of `wgsl`, no vertex buffers, no culling,
/// depth written and tested with `compare`, colour written where `write_colour`.
pub fn host_pipeline(
    device: &wgpu::Device,
    wgsl: &str,
    compare: wgpu::CompareFunction,
    write_colour: bool,
) -> wgpu::RenderPipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("host"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("host"),
        layout: None,
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: wgpu::PrimitiveState::default(),
        depth_stencil: Some(wgpu::DepthStencilState {
            format: wgpu::TextureFormat::Depth32Float,
            depth_write_enabled: Some(true),
            depth_compare: Some(compare),
            stencil: wgpu::StencilState::default(),
            bias: wgpu::DepthBiasState::default(),
        }),
        multisample: wgpu::MultisampleState::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(wgpu::ColorTargetState {
                format: wgpu::TextureFormat::Rgba8UnormSrgb,
                blend: None,
                write_mask: if write_colour { wgpu::ColorWrites::ALL } else { wgpu::ColorWrites::empty() },
            })],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// The host's depth fill on wgpu: a full-screen triangle writing `depth` (compare `Always`, colour
/// writes off; scissor it to the part of the screen it covers).
pub fn wgpu_depth_fill(device: &wgpu::Device, depth: f32) -> wgpu::RenderPipeline {
    let wgsl = format!(
        "@vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {{
             var p = array<vec2<f32>, 3>(vec2<f32>(-1.0, -1.0), vec2<f32>(3.0, -1.0), vec2<f32>(-1.0, 3.0));
             return vec4<f32>(p[i], {depth:?}, 1.0);
         }}
         @fragment fn fs() -> @location(0) vec4<f32> {{ return vec4<f32>(0.0); }}"
    );
    host_pipeline(device, &wgsl, wgpu::CompareFunction::Always, false)
}

/// Begins the host's colour pass over an offscreen target: colour cleared to `clear`, depth to
/// `clear_depth`, both stored.
pub fn begin_host_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    target: vat_wgpu::RenderTarget<'_>,
    clear: wgpu::Color,
    clear_depth: f32,
) -> wgpu::RenderPass<'e> {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some("host pass"),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: target.color,
            depth_slice: None,
            resolve_target: None,
            ops: wgpu::Operations { load: wgpu::LoadOp::Clear(clear), store: wgpu::StoreOp::Store },
        })],
        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
            view: target.depth,
            depth_ops: Some(wgpu::Operations {
                load: wgpu::LoadOp::Clear(clear_depth),
                store: wgpu::StoreOp::Store,
            }),
            stencil_ops: None,
        }),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask: None,
    })
}

/// `bytes` (a soft or skeletal `.vat` file) with the impostor tier `options` bakes from it
/// ([`vat_bake::impostor::bake_tier`]) and its measured bounds, as `.vat` bytes (format version 9).
pub fn with_impostor_tier(bytes: &[u8], options: &vat_bake::impostor::ImpostorOptions) -> Vec<u8> {
    let asset = vat_core::container::Asset::parse(bytes).expect("a valid file");
    let (images, _) = vat_bake::impostor::bake_measured_tier(&asset, options).expect("the tier bakes");
    vat_bake::impostor::with_tier_bytes(&asset, &images).expect("the file with its tier writes")
}

/// The textured humanoid with two material variants
/// (`vat_procgen::testdata::textured_humanoid_with_variants_glb`) baked with an impostor tier of 8 x
/// 8 hemi views of 32 pixels and 2 images per clip: a colour set for the authored materials and
/// one per variant. Baked once per test binary.
pub fn textured_variants_impostor_vat() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        use vat_core::format::impostor::{ViewCoverage, ViewGrid};
        let glb = vat_procgen::testdata::textured_humanoid_with_variants_glb();
        let rig = vat_bake::gltf_import::import_slice(&glb, None, "variants").expect("the fixture imports");
        let bytes = vat_bake::prepare::prepare(&rig, &vat_bake::prepare::BakeOptions::default())
            .expect("the fixture bakes")
            .to_vat_bytes()
            .expect("the bake writes");
        let options = vat_bake::impostor::ImpostorOptions {
            grid: ViewGrid::new(8, ViewCoverage::Hemi).expect("a valid grid"),
            tile_size: 32,
            frames_per_clip: 2,
            samples_per_side: 2,
        };
        with_impostor_tier(&bytes, &options)
    })
}

/// [`humanoid_vat`] with an impostor tier of the default views and tiles (8 x 8 hemi views of 64
/// pixels) and 4 images per clip.
/// Baked once per test binary.
pub fn humanoid_impostor_vat() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        use vat_core::format::impostor::{ViewCoverage, ViewGrid};
        let options = vat_bake::impostor::ImpostorOptions {
            grid: ViewGrid::new(8, ViewCoverage::Hemi).expect("a valid grid"),
            tile_size: 64,
            frames_per_clip: 4,
            samples_per_side: 2,
        };
        with_impostor_tier(humanoid_vat(), &options)
    })
}

/// Position of `x` on the line of f32 values (adjacent floats differ by 1; +0 and -0 are both 0).
pub fn float_ordinal(x: f32) -> i64 {
    let b = x.to_bits();
    let magnitude = i64::from(b & 0x7fff_ffff);
    if b & 0x8000_0000 != 0 { -magnitude } else { magnitude }
}

/// Two backends' decodes of the same records: (floats compared, floats bit-identical, max ULP
/// distance) over positions, normals and tangents; panics on a length mismatch or a non-finite value.
pub fn decoded_parity(
    a: &[vat_core::backend::gpu::DecodedVertex],
    b: &[vat_core::backend::gpu::DecodedVertex],
) -> (usize, usize, i64) {
    assert_eq!(a.len(), b.len());
    let (mut total, mut same, mut max_ulp) = (0, 0, 0);
    for (x, y) in a.iter().zip(b) {
        let xs = x.position.iter().chain(&x.normal).chain(&x.tangent);
        for (p, q) in xs.zip(y.position.iter().chain(&y.normal).chain(&y.tangent)) {
            total += 1;
            if p.to_bits() == q.to_bits() {
                same += 1;
            }
            assert!(p.is_finite() && q.is_finite(), "non-finite decoded value: {p} vs {q}");
            max_ulp = max_ulp.max((float_ordinal(*p) - float_ordinal(*q)).abs());
        }
    }
    (total, same, max_ulp)
}

/// A headless vat-vulkan context under the Khronos validation layer with its debug messenger;
/// panics, saying what to install, when there is no Vulkan device or no validation layer
/// (vat-vulkan tests must run under it).
pub fn validated_vulkan_context() -> std::rc::Rc<vat_vulkan::Context> {
    let ctx = std::rc::Rc::new(vat_vulkan::Context::headless().unwrap_or_else(|e| {
        panic!("no Vulkan device for vat-vulkan: {e} (run `cargo xtask deps` as root for lavapipe)")
    }));
    assert!(
        ctx.validation_enabled() && ctx.messenger_enabled(),
        "the Khronos validation layer is not installed (apt-get install vulkan-validationlayers, or \
         `cargo xtask deps`): vat-vulkan tests must run under it"
    );
    ctx
}
