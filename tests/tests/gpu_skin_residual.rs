//! The skin-residual vertex format (`VertexFormat::SkinResidual`, the compressed tier) on the GPU:
//! bone mode's skin of the asset's bone section plus a residual read from a bit stream
//! (`vat_skin_residual_vertex` in bone.wgsl).
//!
//! The humanoid's skin reproduces its source exactly, so its skin-residual bake stores 0 residual bits
//! for every vertex and does not exercise the residual decode. These tests therefore also build a
//! synthetic asset from it with public APIs: the same file with its residual re-encoded
//! (`skin_residual::encode_residuals`, default bounds 0.5 mm and 1 degree) against a "source" that
//! differs from the skin: positions moved by a smooth wobble of up to 3 mm on x and y, normals tilted
//! by up to 0.14 rad in their tangent plane and, on every 61st vertex, reversed (so those vertices take
//! the absolute-octahedral fallback). The tests check that the encoding really spends residual bits
//! (on tangent-plane and absolute normals both) before anything else.
//!
//! - `skin_residual_decode_matches_the_reference_decoder`: vat-wgpu's `Renderer::decode` (VAT mode)
//!   of both assets for `decode_test_records` at `DECODE_TEST_TIME`, every interpolation and both
//!   cross-fade variants, against vat-core's CPU reference (`decode_skin_residual_vertex`): within
//!   1e-5 m per world coordinate and 1e-3 degrees per normal, as the other formats' decode test. Then
//!   the format's promise at every stored frame of the synthetic asset: the CPU decode
//!   (`decode_skin_residual_frame`) and the GPU decode (point interpolation, phases on the frames) are
//!   within `B_p + POSITION_SLACK_M` (Euclidean) and `B_n + NORMAL_SLACK_RAD` (angle) of the source,
//!   for every vertex of every frame.
//! - `vulkan_decodes_skin_residual_bit_identically_to_wgpu_under_validation`: vat-vulkan's decode
//!   against vat-wgpu's for both assets, every interpolation, both cross-fade variants: bit-identical
//!   (the test prints the share of bit-identical floats and the largest difference in ULPs), under
//!   the Khronos validation layer, whose errors and warnings (through device destruction) fail it.
//! - `skin_residual_crowd_renders_on_both_backends`: a crowd of the synthetic asset rendered offscreen
//!   on both backends draws a good part of the picture, with no validation error or warning on
//!   Vulkan, and the two images agree as the render parity test asks (at most 0.1 % of pixels off by
//!   more than 2/255).

use std::rc::Rc;
use std::sync::OnceLock;

use vat_core::container::{Asset, BlobId, ContainerWriter};
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::encoding::VertexFormat;
use vat_core::format::reference::{
    SkinResidualView, decode_bone_frame, decode_skin_residual_frame, decode_skin_residual_vertex,
};
use vat_core::format::skin_residual::{
    self, EncodedResiduals, NORMAL_SLACK_RAD, POSITION_SLACK_M, ResidualBounds, tangent_basis,
};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;
use vat_core::render::{CrowdRenderer, RenderOptions};
use vat_tests::{DECODE_TEST_TIME as TIME, decode_test_records as records, test_gpu};

/// The stated tolerance of GPU against CPU reference: 10 micrometres per world coordinate.
const TOLERANCE_M: f64 = 1e-5;
/// The stated tolerance of GPU against CPU reference normals, degrees.
const TOLERANCE_DEG: f64 = 1e-3;
/// Every this many vertices one has its source normals reversed (the absolute fallback).
/// Every this many vertices, one wobbles by 5 cm (frames wider than one 32-bit window).
const WIDE_EVERY: u32 = 37;

const REVERSED_EVERY: u32 = 61;

/// Every stored frame's positions and normals.
type Frames = Vec<(Vec<[f32; 3]>, Vec<[f32; 3]>)>;

/// The humanoid baked in the skin-residual format (default bounds), as `.vat` bytes. Baked once.
fn skin_residual_humanoid() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let rig = vat_procgen::humanoid();
        let options =
            vat_bake::prepare::BakeOptions { format: VertexFormat::SkinResidual, ..Default::default() };
        let bake = vat_bake::prepare::prepare(&rig, &options).expect("the humanoid bakes in skin-residual");
        bake.to_vat_bytes().expect("the skin-residual bake serialises")
    })
}

/// The synthetic asset: [`skin_residual_humanoid`] with non-zero residuals, its skin (bone mode's
/// stored frames), its source frames and its encoding.
struct Synthetic {
    bytes: Vec<u8>,
    skinned: Frames,
    source: Frames,
    encoded: EncodedResiduals,
}

fn normalize(v: [f32; 3]) -> [f32; 3] {
    let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|c| c / len)
}

/// The source of vertex `v` at stored frame `f`, from its skin `(p, m)`: a wobble of up to 3 mm on x
/// and y (5 cm on every [`WIDE_EVERY`]th vertex, whose frames then take more than 32 bits: two
/// windows), the normal tilted by up to atan(0.1 sqrt 2) = 0.14 rad, reversed on every
/// [`REVERSED_EVERY`]th vertex.
fn source_vertex(f: u32, v: u32, (p, m): ([f32; 3], [f32; 3])) -> ([f32; 3], [f32; 3]) {
    let (vf, ff) = (v as f32, f as f32);
    let reach = if v % WIDE_EVERY == 5 { 0.05 } else { 0.003 };
    let position =
        [p[0] + reach * (0.7 * vf + 0.3 * ff).sin(), p[1] + reach * (0.5 * vf - 0.2 * ff).cos(), p[2]];
    let (t1, t2) = tangent_basis(m);
    let (a, b) = (0.1 * (0.37 * vf + 0.5 * ff).sin(), 0.1 * (0.23 * vf - 0.4 * ff).cos());
    let tilted = normalize(std::array::from_fn(|i| m[i] + a * t1[i] + b * t2[i]));
    let normal = if v % REVERSED_EVERY == 3 { tilted.map(|c| -c) } else { tilted };
    (position, normal)
}

fn synthetic() -> &'static Synthetic {
    static SYNTHETIC: OnceLock<Synthetic> = OnceLock::new();
    SYNTHETIC.get_or_init(|| {
        let asset = Asset::parse(skin_residual_humanoid()).expect("the skin-residual bake parses");
        let view = SkinResidualView::from_asset(&asset).expect("the bake has a skin-residual view");
        let m = asset.manifest();
        let n = m.vertex_count;
        let frames = view.bones.layout.frame_count;
        let mut skinned: Frames = Vec::new();
        for f in 0..frames {
            let (mut p, mut nrm) = (vec![[0.0; 3]; n as usize], vec![[0.0; 3]; n as usize]);
            decode_bone_frame(&view.bones, f, &mut p, &mut nrm)
                .expect("bone mode decodes every stored frame");
            skinned.push((p, nrm));
        }
        let source: Frames = skinned
            .iter()
            .enumerate()
            .map(|(f, (p, nrm))| {
                (0..n as usize).map(|v| source_vertex(f as u32, v as u32, (p[v], nrm[v]))).unzip()
            })
            .collect();
        let bounds = ResidualBounds::default();
        let encoded = skin_residual::encode_residuals(
            n,
            frames,
            |f, v| (skinned[f as usize].0[v as usize], skinned[f as usize].1[v as usize]),
            |f, v| (source[f as usize].0[v as usize], source[f as usize].1[v as usize]),
            &bounds,
        )
        .expect("the wobbled source encodes within 64 bits a vertex a frame");
        let max_dim = vat_bake::prepare::BakeOptions::default().max_texture_dim;
        let texture = skin_residual::residual_texture(&encoded, max_dim).expect("the residual texture fits");
        // The same blobs in the same order (every BlobId stays valid), the residual texture replaced.
        let mut manifest = m.clone();
        let section = manifest.skin_residual.as_mut().expect("the bake has a skin-residual section");
        section.position_bound_m = bounds.position_m;
        section.normal_bound_rad = bounds.normal_rad;
        section.width = texture.width;
        section.height = texture.height;
        section.stream_words = texture.stream_words;
        let residual_blob = section.texture;
        let mut writer = ContainerWriter::new();
        for id in (0..m.blobs.len() as u32).map(BlobId) {
            let bytes = if id == residual_blob { texture.bytes.clone() } else { asset.blob(id).to_vec() };
            assert_eq!(writer.add_blob(bytes), id);
        }
        let bytes = writer.finish(manifest).expect("the re-encoded file writes and validates");
        Asset::parse(&bytes).expect("the synthetic asset parses back with its section validated");
        Synthetic { bytes, skinned, source, encoded }
    })
}

/// The synthetic asset after checking that its residual is not trivial.
fn checked_synthetic() -> &'static Synthetic {
    let s = synthetic();
    let w = &s.encoded.widths;
    let absolute = w.iter().filter(|w| w.absolute_normal).count();
    let tangent = w.iter().filter(|w| !w.absolute_normal && w.normal_bits > 0).count();
    let widest = w.iter().map(|w| w.frame_bits()).max().unwrap_or(0);
    println!(
        "synthetic residual: {} vertices, {} frames, {:.2} bits a vertex a frame (widest {widest}), {absolute} \
         absolute normals, {tangent} tangent-plane normals, {} stream words",
        w.len(),
        s.source.len(),
        s.encoded.mean_frame_bits(),
        s.encoded.stream.len()
    );
    assert!(s.encoded.mean_frame_bits() > 0.0, "the synthetic residual has no bits");
    assert!(w.iter().all(|w| w.position_bits > 0), "every vertex should need position bits");
    assert!(absolute > 0, "no vertex takes the absolute-octahedral fallback");
    assert!(tangent > 0, "no vertex stores tangent-plane normal residuals");
    assert!(widest > 32 && w.iter().any(|w| w.frame_bits() <= 32), "frames of one window and of two");
    s
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs()).fold(0.0, f64::max)
}

fn distance(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2)).sum::<f64>().sqrt()
}

/// Angle between two (unit) vectors, radians.
fn angle_rad(a: &[f32], b: &[f32]) -> f64 {
    let [a, b] = [a, b].map(|v| [v[0], v[1], v[2]].map(f64::from));
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt().atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
}

/// The worst (Euclidean distance, angle in radians) of decoded stored frames against the source over
/// all vertices and frames.
fn against_source(source: &Frames, decoded: impl Fn(usize, usize) -> ([f32; 3], [f32; 3])) -> (f64, f64) {
    let (mut max_p, mut max_n) = (0f64, 0f64);
    for (f, (p, n)) in source.iter().enumerate() {
        for v in 0..p.len() {
            let (dp, dn) = decoded(f, v);
            max_p = max_p.max(distance(&dp, &p[v]));
            max_n = max_n.max(angle_rad(&dn, &n[v]));
        }
    }
    (max_p, max_n)
}

#[test]
fn skin_residual_decode_matches_the_reference_decoder() {
    let gpu = test_gpu();
    let synthetic = checked_synthetic();
    let assets =
        [("humanoid (0 residual bits)", skin_residual_humanoid()), ("synthetic", &synthetic.bytes[..])];
    for (label, bytes) in assets {
        let asset = Asset::parse(bytes).expect("the asset parses");
        let view = SkinResidualView::from_asset(&asset).expect("a skin-residual view");
        let records = records(asset.manifest().clips.len() as u32);
        for interp in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
            let config = vat_wgpu::RendererConfig { interpolation: interp, ..Default::default() };
            let mut renderer =
                vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, config).expect("a wgpu renderer");
            let gpu_asset = renderer.upload(&asset).expect("the skin-residual asset uploads");
            assert_eq!(gpu_asset.vertex_format(), VertexFormat::SkinResidual);
            let n = gpu_asset.vertex_count() as usize;
            for cross_fade in [true, false] {
                let decoded = renderer
                    .decode(&gpu_asset, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade)
                    .expect("the GPU decodes");
                assert_eq!(decoded.len(), records.len() * n);
                let (mut max_p, mut max_n, mut worst) = (0f64, 0f64, (0, 0));
                for (i, record) in records.iter().enumerate() {
                    // The plain variant shows clip A only: the reference decodes the record without its fade.
                    let mut r = *record;
                    if !cross_fade {
                        r.set_clip_b(r.clip_b_index(), 0.0);
                    }
                    for v in 0..n {
                        let cpu = decode_skin_residual_vertex(&view, &r, TIME, v as u32, interp)
                            .expect("the reference decodes");
                        let g = decoded[i * n + v];
                        let dp = max_abs_diff(&g.position[..3], &cpu.world_position);
                        if dp > max_p {
                            (max_p, worst) = (dp, (i, v));
                        }
                        max_n = max_n.max(angle_rad(&g.normal[..3], &cpu.world_normal).to_degrees());
                    }
                }
                println!(
                    "{label} {interp:?} cross-fade {cross_fade}: max |GPU - reference| {max_p:.2e} m (record {}, \
                     vertex {}), normals {max_n:.2e} deg",
                    worst.0, worst.1
                );
                assert!(max_p <= TOLERANCE_M, "{label} {interp:?} cross-fade {cross_fade}: {max_p} m");
                assert!(
                    max_n <= TOLERANCE_DEG,
                    "{label} {interp:?} cross-fade {cross_fade}: normals {max_n} deg"
                );
            }
        }
    }

    // The format's promise at every stored frame of the synthetic asset, CPU and GPU.
    let asset = Asset::parse(&synthetic.bytes).expect("the synthetic asset parses");
    let view = SkinResidualView::from_asset(&asset).expect("a skin-residual view");
    let bounds = ResidualBounds::default();
    let (bound_p, bound_n) =
        (f64::from(bounds.position_m + POSITION_SLACK_M), f64::from(bounds.normal_rad + NORMAL_SLACK_RAD));
    let n = asset.manifest().vertex_count as usize;
    let cpu: Frames = (0..synthetic.source.len() as u32)
        .map(|f| {
            let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
            decode_skin_residual_frame(&view, f, &mut p, &mut nrm).expect("the reference decodes the frame");
            (p, nrm)
        })
        .collect();
    let (cpu_p, cpu_n) = against_source(&synthetic.source, |f, v| (cpu[f].0[v], cpu[f].1[v]));
    // Without the residual (bone mode's skin) the decode is millimetres off: the residual is used.
    let skinned = &synthetic.skinned;
    let (skin_p, skin_n) = against_source(&synthetic.source, |f, v| (skinned[f].0[v], skinned[f].1[v]));
    // On the GPU: every frame of every clip, point interpolation, rate 0, identity transform.
    let mut on_frames = Vec::new();
    let mut frame_of_record = Vec::new();
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        for k in 0..clip.frame_count {
            let offset = vat_bake::verify::exact_frame_offset(clip, k).expect("a phase on the frame");
            on_frames.push(InstanceRecord { clip_a: c as u32, phase_offset_a: offset, ..Default::default() });
            frame_of_record.push((clip.first_frame + k) as usize);
        }
    }
    let config = vat_wgpu::RendererConfig { interpolation: Interpolation::Point, ..Default::default() };
    let mut renderer = vat_wgpu::Renderer::new(&gpu.device, &gpu.queue, config).expect("a wgpu renderer");
    let gpu_asset = renderer.upload(&asset).expect("the synthetic asset uploads");
    let decoded = renderer
        .decode(&gpu_asset, &on_frames, TIME, vat_wgpu::RenderMode::Vat, false)
        .expect("the GPU decodes the stored frames");
    let (mut gpu_p, mut gpu_n) = (0f64, 0f64);
    for (i, &f) in frame_of_record.iter().enumerate() {
        let (p, nrm) = &synthetic.source[f];
        for v in 0..n {
            let g = decoded[i * n + v];
            gpu_p = gpu_p.max(distance(&g.position[..3], &p[v]));
            gpu_n = gpu_n.max(angle_rad(&g.normal[..3], &nrm[v]));
        }
    }
    println!(
        "stored frames against the source (bound {:.4} mm, {:.4} deg): CPU {:.4} mm, {:.4} deg; GPU ({} frames) \
         {:.4} mm, {:.4} deg; the skin alone {:.4} mm, {:.4} deg",
        bound_p * 1e3,
        bound_n.to_degrees(),
        cpu_p * 1e3,
        cpu_n.to_degrees(),
        on_frames.len(),
        gpu_p * 1e3,
        gpu_n.to_degrees(),
        skin_p * 1e3,
        skin_n.to_degrees()
    );
    assert_eq!(on_frames.len(), synthetic.source.len(), "every stored frame is decoded on the GPU");
    assert!(cpu_p <= bound_p && cpu_n <= bound_n, "CPU decode outside the bounds: {cpu_p} m, {cpu_n} rad");
    assert!(gpu_p <= bound_p && gpu_n <= bound_n, "GPU decode outside the bounds: {gpu_p} m, {gpu_n} rad");
    assert!(skin_p > 2e-3 && skin_n > 0.1, "the source should be millimetres and degrees off the skin");
}

#[test]
fn vulkan_decodes_skin_residual_bit_identically_to_wgpu_under_validation() {
    let ctx = vat_tests::validated_vulkan_context();
    let gpu = test_gpu();
    println!("vat-vulkan on {:?}; vat-wgpu on {:?}", ctx.device_name(), gpu.info.name);
    let synthetic = checked_synthetic();
    let (mut total, mut same, mut worst) = (0usize, 0usize, 0i64);
    let assets =
        [("humanoid (0 residual bits)", skin_residual_humanoid()), ("synthetic", &synthetic.bytes[..])];
    for (label, bytes) in assets {
        let asset = Asset::parse(bytes).expect("the asset parses");
        let records = records(asset.manifest().clips.len() as u32);
        for interpolation in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
            let mut wgpu_renderer = vat_wgpu::Renderer::new(
                &gpu.device,
                &gpu.queue,
                vat_wgpu::RendererConfig { interpolation, ..Default::default() },
            )
            .expect("a wgpu renderer");
            let wgpu_asset = wgpu_renderer.upload(&asset).expect("the asset uploads on wgpu");
            let mut decoder = vat_vulkan::Renderer::new(
                &ctx,
                vat_vulkan::RendererConfig { interpolation, ..Default::default() },
            )
            .expect("a Vulkan renderer");
            let vk_asset = decoder.upload(&asset).expect("the asset uploads on Vulkan");
            let format = VertexFormat::SkinResidual;
            assert_eq!((vk_asset.vertex_format(), wgpu_asset.vertex_format()), (format, format));
            assert_eq!(vk_asset.vertex_count(), wgpu_asset.vertex_count());
            for cross_fade in [true, false] {
                let w = wgpu_renderer
                    .decode(&wgpu_asset, &records, TIME, vat_wgpu::RenderMode::Vat, cross_fade)
                    .expect("wgpu decodes");
                let v = decoder
                    .decode(&vk_asset, &records, TIME, vat_vulkan::RenderMode::Vat, cross_fade)
                    .expect("Vulkan decodes");
                assert_eq!(v.len(), records.len() * vk_asset.vertex_count() as usize);
                assert!(v.iter().all(|d| d.position[3] == 1.0), "decoded positions have w = 1");
                let (t, s, u) = vat_tests::decoded_parity(&w, &v);
                println!(
                    "{label} {interpolation:?} cross_fade={cross_fade}: {s}/{t} floats bit-identical ({:.4} %), \
                     max {u} ULP",
                    100.0 * s as f64 / t as f64
                );
                total += t;
                same += s;
                worst = worst.max(u);
            }
        }
    }
    // Destroy the device too: the validation layer reports objects never destroyed as errors then.
    let messages = ctx.messages();
    drop(Rc::into_inner(ctx).expect("every renderer and asset is dropped"));
    println!(
        "skin-residual: {same}/{total} floats bit-identical ({:.4} %), max {worst} ULP; validation (through \
         device destruction): {} errors, {} warnings",
        100.0 * same as f64 / total as f64,
        messages.errors(),
        messages.warnings()
    );
    assert_eq!(same, total, "decode outputs differ between vat-wgpu and vat-vulkan (max {worst} ULP)");
    assert_eq!(messages.errors(), 0, "the validation layer reported errors (printed above)");
    assert_eq!(messages.warnings(), 0, "the validation layer reported warnings (printed above)");
}

const SIZE: [u32; 2] = [256, 192];

/// A 4 x 4 grid of the synthetic humanoid, every clip, rendered once (shadows and ground on).
fn crowd_image<R: CrowdRenderer>(renderer: &mut R, asset: &Asset<'_>) -> Vec<u8> {
    let gpu_asset = renderer.upload(asset).expect("the synthetic asset uploads");
    let crowd_asset = CrowdAsset::from_manifest(asset.manifest()).expect("a crowd asset");
    let mut crowd = Crowd::new(crowd_asset, CrowdConfig::default());
    let clips = asset.manifest().clips.len() as u32;
    for i in 0..16u32 {
        let p = [(i % 4) as f32 * 2.0 - 3.0, 0.0, (i / 4) as f32 * 2.0 - 3.0];
        crowd.spawn_at_phase(p, i as f32 * 0.7, i % clips, (i as f32 * 0.137).fract());
    }
    let mut gpu_crowd = renderer.create_crowd(&crowd).expect("the crowd's GPU copy");
    let camera =
        Camera::look_at([0.0, 5.0, 11.0], [0.0, 0.8, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 100.0);
    let options = RenderOptions { shadows: true, ground: true, ..Default::default() };
    let report = renderer
        .render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera, &options)
        .expect("the crowd renders");
    assert!(report.draws_main > 0 && report.stats.drawn == 16, "{report:?}");
    renderer.read_rgba8().expect("the image reads back")
}

#[test]
fn skin_residual_crowd_renders_on_both_backends() {
    let asset = Asset::parse(&checked_synthetic().bytes).expect("the synthetic asset parses");
    let a = crowd_image(&mut vat_tests::wgpu_offscreen(SIZE, 1024), &asset);
    let mut vk = vat_tests::vulkan_offscreen(SIZE, 1024);
    let b = crowd_image(&mut vk, &asset);
    let (ctx, _) = vk.parts();
    assert!(ctx.validation_enabled() && ctx.messenger_enabled(), "the validation layer is not installed");
    let messages = ctx.messages();
    drop(vk);
    vat_tests::save_image("skin_residual_crowd_wgpu", SIZE, &a);
    vat_tests::save_image("skin_residual_crowd_vulkan", SIZE, &b);
    let pixels = (SIZE[0] * SIZE[1]) as usize;
    let covered = a.chunks_exact(4).filter(|p| p != &&a[..4]).count();
    let differ = a
        .chunks_exact(4)
        .zip(b.chunks_exact(4))
        .filter(|(x, y)| x.iter().zip(*y).any(|(p, q)| p.abs_diff(*q) > 2))
        .count();
    println!(
        "skin-residual crowd: {covered} of {pixels} pixels drawn; {differ} differ by more than 2/255 between \
         wgpu and Vulkan; validation: {} errors, {} warnings",
        messages.errors(),
        messages.warnings()
    );
    assert!(covered > pixels / 20, "the image is nearly empty ({covered} pixels)");
    assert!(differ * 1000 <= pixels, "{differ} pixels differ between the backends");
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "the validation layer reported problems");
}
