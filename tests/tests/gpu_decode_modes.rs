//! The renderer's decode path (`Renderer::decode`, the same shader functions as the vertex paths) on
//! the baked humanoid, in several states (clips, phases, one-shot clamping, cross-fade mid-way, the
//! plain variant), against CPU references, within 1e-5 m per coordinate:
//! - VAT mode against vat-core's CPU reference decoder (`reference::decode_vertex`), for the
//!   humanoid in every vertex format too;
//! - bone mode (4 and 8 influences, linear and cubic) against CPU linear-blend skinning computed here
//!   in f64 from the asset's own bone texture, joints, weights and rest pose, with the same frames,
//!   weights and normal rule (`vat_bake::skin`: cofactor of the blended matrix) as the shader;
//! - bone mode with the live morph layer (the morph rig, skinned and morph-only) against vat-core's
//!   CPU reference of the bone path (`reference::decode_bone_vertex`), and against VAT mode at baked
//!   frames (point interpolation, plain variant), where both show the same skinned, morphed frame;
//! - bone mode against VAT mode of the same asset: they agree within the Packed64 position quantum
//!   (half a quantum per axis, 0.09 mm on the humanoid): linear interpolation of matrices gives exactly
//!   the lerp of the skinned frames the VAT stores.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::backend::gpu::DecodedVertex;
use vat_core::container::{Asset, ContainerWriter, StreamKind};
use vat_core::format::reference::{
    BoneAnimationView, VertexAnimationView, decode_bone_vertex, decode_vertex,
};
use vat_core::instance::InstanceRecord;
use vat_core::playback::{self, Interpolation};
use vat_tests::{
    ALL_VERTEX_FORMATS, DECODE_TEST_TIME as TIME, decode_test_records as records, humanoid_vat,
    humanoid_vat_in, morph_vat, test_gpu,
};
use vat_wgpu::{RenderMode, Renderer, RendererConfig};

/// The stated tolerance: 10 micrometres per coordinate.
const TOLERANCE_M: f64 = 1e-5;

fn max_abs_diff(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (f64::from(x) - y).abs()).fold(0.0, f64::max)
}

fn angle_deg(a: [f64; 3], b: [f64; 3]) -> f64 {
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    (c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
        .sqrt()
        .atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
        .to_degrees()
}

/// What the CPU skinning needs of an asset.
struct BoneData {
    bone_count: usize,
    width: usize,
    texture: Vec<f32>,
    influences: usize,
    joints: Vec<u16>,
    weights: Vec<f32>,
    rest_positions: Vec<[f32; 3]>,
    rest_normals: Vec<[f32; 3]>,
}

impl BoneData {
    fn from_asset(asset: &Asset<'_>) -> Self {
        let m = asset.manifest();
        let b = m.bone_animation.as_ref().unwrap();
        let f32s = |bytes: &[u8]| -> Vec<f32> {
            bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
        };
        let vec3s = |kind| -> Vec<[f32; 3]> {
            f32s(asset.stream(kind).unwrap().1).chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        Self {
            bone_count: b.layout.bone_count as usize,
            width: b.layout.width as usize,
            texture: f32s(asset.blob(b.texture)),
            influences: b.influences as usize,
            joints: asset.blob(b.joints).chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect(),
            weights: f32s(asset.blob(b.weights)),
            rest_positions: vec3s(StreamKind::RestPosition),
            rest_normals: vec3s(StreamKind::RestNormal),
        }
    }

    /// Row `row` of `bone` at absolute frame `frame` (the texel index is linear, so the width does not
    /// matter for a tightly packed texture).
    fn row(&self, frame: u32, bone: usize, row: usize) -> [f64; 4] {
        let t = (frame as usize * self.bone_count + bone) * 3 + row;
        let _ = self.width;
        std::array::from_fn(|c| f64::from(self.texture[t * 4 + c]))
    }

    /// The blended 3x4 matrix of `vertex` for one clip at `time`.
    fn clip_matrix(
        &self,
        clips: &[vat_core::clip::Clip],
        clip: u32,
        offset: f32,
        rate: f32,
        vertex: usize,
        interp: Interpolation,
    ) -> [[f64; 4]; 3] {
        let clip = &clips[(clip as usize).min(clips.len() - 1)];
        let sample = playback::clip_sample(clip, offset, TIME, rate, interp);
        let frames = playback::absolute_frames(clip, &sample);
        let mut m = [[0.0f64; 4]; 3];
        for k in 0..self.influences {
            let w = f64::from(self.weights[vertex * self.influences + k]);
            if w == 0.0 {
                continue;
            }
            let joint = self.joints[vertex * self.influences + k] as usize;
            for (&frame, &wf) in frames.iter().zip(&sample.weights) {
                let wf = f64::from(wf);
                if wf == 0.0 {
                    continue;
                }
                for (r, mr) in m.iter_mut().enumerate() {
                    let row = self.row(frame, joint, r);
                    for (out, value) in mr.iter_mut().zip(row) {
                        *out += w * wf * value;
                    }
                }
            }
        }
        m
    }

    /// World position and normal of `vertex` of `record` at `TIME`.
    fn skin(
        &self,
        clips: &[vat_core::clip::Clip],
        record: &InstanceRecord,
        vertex: usize,
        interp: Interpolation,
        cross_fade: bool,
    ) -> ([f64; 3], [f64; 3]) {
        let mut m =
            self.clip_matrix(clips, record.clip_a, record.phase_offset_a, record.rate_a, vertex, interp);
        let w = if cross_fade {
            f64::from(playback::fade_weight(TIME, record.fade_start, record.fade_duration()))
        } else {
            0.0
        };
        if w > 0.0 {
            let b = self.clip_matrix(
                clips,
                record.clip_b_index(),
                record.phase_offset_b,
                record.rate_b,
                vertex,
                interp,
            );
            for r in 0..3 {
                for c in 0..4 {
                    m[r][c] = m[r][c] * (1.0 - w) + b[r][c] * w;
                }
            }
        }
        let p = self.rest_positions[vertex].map(f64::from);
        let n = self.rest_normals[vertex].map(f64::from);
        let obj: [f64; 3] =
            std::array::from_fn(|r| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3]);
        // normalize(sign(det M3) * cof(M3) n), cof columns c1 x c2, c2 x c0, c0 x c1.
        let col = |j: usize| [m[0][j], m[1][j], m[2][j]];
        let cross = |a: [f64; 3], b: [f64; 3]| {
            [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
        };
        let (k0, k1, k2) = (cross(col(1), col(2)), cross(col(2), col(0)), cross(col(0), col(1)));
        let det = col(0)[0] * k0[0] + col(0)[1] * k0[1] + col(0)[2] * k0[2];
        let mut nn: [f64; 3] = std::array::from_fn(|i| k0[i] * n[0] + k1[i] * n[1] + k2[i] * n[2]);
        if det < 0.0 {
            nn = nn.map(|v| -v);
        }
        let len = (nn[0] * nn[0] + nn[1] * nn[1] + nn[2] * nn[2]).sqrt();
        let nn = nn.map(|v| v / len);
        let (s, c) = f64::from(record.yaw).sin_cos();
        let sc = f64::from(record.scale);
        let q = obj.map(|v| v * sc);
        let pos = record.position.map(f64::from);
        let world = [pos[0] + c * q[0] + s * q[2], pos[1] + q[1], pos[2] + c * q[2] - s * q[0]];
        let wn = [c * nn[0] + s * nn[2], nn[1], c * nn[2] - s * nn[0]];
        (world, wn)
    }
}

fn decode(
    renderer: &mut Renderer,
    asset: &vat_wgpu::GpuAsset,
    records: &[InstanceRecord],
    mode: RenderMode,
    cross_fade: bool,
) -> Vec<DecodedVertex> {
    let out = renderer.decode(asset, records, TIME, mode, cross_fade).unwrap();
    assert_eq!(out.len(), records.len() * asset.vertex_count() as usize);
    out
}

#[test]
fn vat_mode_decode_matches_the_reference_decoder_within_10_micrometres() {
    let gpu = test_gpu();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let clips = asset.manifest().clips.len() as u32;
    let records = records(clips);
    for interp in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
        let mut renderer = Renderer::new(
            &gpu.device,
            &gpu.queue,
            RendererConfig { interpolation: interp, ..Default::default() },
        )
        .unwrap();
        let gpu_asset = renderer.upload(&asset).unwrap();
        let n = gpu_asset.vertex_count() as usize;
        for cross_fade in [true, false] {
            let decoded = decode(&mut renderer, &gpu_asset, &records, RenderMode::Vat, cross_fade);
            let (mut max_p, mut max_n) = (0f64, 0f64);
            for (i, record) in records.iter().enumerate() {
                // The plain variant shows clip A only: the reference decodes the record without its fade.
                let mut r = *record;
                if !cross_fade {
                    r.set_clip_b(r.clip_b_index(), 0.0);
                }
                for v in 0..n {
                    let cpu = decode_vertex(&view, &r, TIME, v as u32, interp).unwrap();
                    let g = decoded[i * n + v];
                    max_p = max_p.max(max_abs_diff(&g.position[..3], &cpu.world_position.map(f64::from)));
                    let gn = [g.normal[0], g.normal[1], g.normal[2]].map(f64::from);
                    max_n = max_n.max(angle_deg(gn, cpu.world_normal.map(f64::from)));
                }
            }
            println!(
                "VAT {interp:?} cross-fade {cross_fade}: max |GPU - reference| {max_p:.2e} m, normals {max_n:.2e} deg"
            );
            assert!(max_p <= TOLERANCE_M, "{interp:?} cross-fade {cross_fade}: {max_p} m");
            assert!(max_n <= 1e-3, "{interp:?} cross-fade {cross_fade}: normals {max_n} deg");
        }
    }
}

/// VAT mode through the renderer's own upload and pipelines (`Renderer::upload`, the
/// `VERTEX_FORMAT` override of its decode pipeline) for the humanoid baked in every vertex format,
/// against the CPU reference decoder of the same asset, within the same 10 micrometres.
#[test]
fn vat_mode_decodes_every_vertex_format_like_the_reference() {
    let gpu = test_gpu();
    for format in ALL_VERTEX_FORMATS {
        let asset = Asset::parse(humanoid_vat_in(format)).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        assert_eq!(view.format, format);
        let records = records(asset.manifest().clips.len() as u32);
        for interp in [Interpolation::Linear, Interpolation::Point] {
            let config = RendererConfig { interpolation: interp, ..Default::default() };
            let mut renderer = Renderer::new(&gpu.device, &gpu.queue, config).unwrap();
            let gpu_asset = renderer.upload(&asset).unwrap();
            assert_eq!(gpu_asset.vertex_format(), format);
            let n = gpu_asset.vertex_count() as usize;
            let decoded = decode(&mut renderer, &gpu_asset, &records, RenderMode::Vat, true);
            let (mut max_p, mut max_n) = (0f64, 0f64);
            for (i, record) in records.iter().enumerate() {
                for v in 0..n {
                    let cpu = decode_vertex(&view, record, TIME, v as u32, interp).unwrap();
                    let g = decoded[i * n + v];
                    max_p = max_p.max(max_abs_diff(&g.position[..3], &cpu.world_position.map(f64::from)));
                    let gn = [g.normal[0], g.normal[1], g.normal[2]].map(f64::from);
                    max_n = max_n.max(angle_deg(gn, cpu.world_normal.map(f64::from)));
                }
            }
            println!("{format:?} {interp:?}: max |GPU - reference| {max_p:.2e} m, normals {max_n:.2e} deg");
            assert!(max_p <= TOLERANCE_M, "{format:?} {interp:?}: {max_p} m");
            assert!(max_n <= 1e-3, "{format:?} {interp:?}: normals {max_n} deg");
        }
    }
}

/// Checks bone-mode decode of `bytes` against CPU skinning; returns the decoded vertices.
fn check_bone_mode(
    gpu: &vat_tests::TestGpu,
    bytes: &[u8],
    interp: Interpolation,
    label: &str,
) -> Vec<DecodedVertex> {
    let asset = Asset::parse(bytes).unwrap();
    let bones = BoneData::from_asset(&asset);
    let m = asset.manifest();
    let records = records(m.clips.len() as u32);
    let mut renderer = Renderer::new(
        &gpu.device,
        &gpu.queue,
        RendererConfig { interpolation: interp, ..Default::default() },
    )
    .unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    assert_eq!(gpu_asset.influences() as usize, bones.influences);
    let n = gpu_asset.vertex_count() as usize;
    let mut result = Vec::new();
    for cross_fade in [true, false] {
        let decoded = decode(&mut renderer, &gpu_asset, &records, RenderMode::Bone, cross_fade);
        let (mut max_p, mut max_n) = (0f64, 0f64);
        for (i, record) in records.iter().enumerate() {
            for v in 0..n {
                let (p, nrm) = bones.skin(&m.clips, record, v, interp, cross_fade);
                let g = decoded[i * n + v];
                max_p = max_p.max(max_abs_diff(&g.position[..3], &p));
                max_n = max_n.max(angle_deg([g.normal[0], g.normal[1], g.normal[2]].map(f64::from), nrm));
            }
        }
        println!(
            "bone {label} {interp:?} cross-fade {cross_fade}: max |GPU - CPU skinning| {max_p:.2e} m, normals {max_n:.2e} deg"
        );
        assert!(max_p <= TOLERANCE_M, "{label} {interp:?} cross-fade {cross_fade}: {max_p} m");
        assert!(max_n <= 1e-2, "{label} {interp:?} cross-fade {cross_fade}: normals {max_n} deg");
        if cross_fade {
            result = decoded;
        }
    }
    result
}

#[test]
fn bone_mode_decode_matches_cpu_skinning_and_vat_mode() {
    let gpu = test_gpu();
    let bytes = humanoid_vat();
    for interp in [Interpolation::Linear, Interpolation::Cubic] {
        let bone = check_bone_mode(&gpu, bytes, interp, "4 influences");
        // Against VAT mode of the same asset and states.
        let asset = Asset::parse(bytes).unwrap();
        let va = asset.manifest().vertex_animation.as_ref().unwrap();
        let mut renderer = Renderer::new(
            &gpu.device,
            &gpu.queue,
            RendererConfig { interpolation: interp, ..Default::default() },
        )
        .unwrap();
        let gpu_asset = renderer.upload(&asset).unwrap();
        let records = records(asset.manifest().clips.len() as u32);
        let vat = decode(&mut renderer, &gpu_asset, &records, RenderMode::Vat, true);
        // Quantisation error of a stored position: at most half a quantum per axis, so half the
        // quantum's diagonal in any direction (the yaw mixes x and z); times the largest instance scale
        // (1.15); times the absolute sum of the interpolation weights (1 linear, at most 1.25
        // Catmull-Rom); plus the f32 tolerance.
        let q: Vec<f64> = (0..3)
            .map(|a| f64::from(va.bounds.extent[a]) / f64::from((1u32 << va.position_bits[a]) - 1))
            .collect();
        let diagonal = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]).sqrt();
        let weights = if interp == Interpolation::Cubic { 1.25 } else { 1.0 };
        let bound = 0.5 * diagonal * 1.15 * weights + TOLERANCE_M;
        let max = vat
            .iter()
            .zip(&bone)
            .map(|(a, b)| {
                (0..3)
                    .map(|k| (f64::from(a.position[k]) - f64::from(b.position[k])).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0, f64::max);
        println!("{interp:?}: max |bone mode - VAT mode| {max:.2e} m (bound {bound:.2e} m)");
        assert!(max <= bound, "{interp:?}: bone vs VAT mode: {max} m > {bound} m");
    }
}

/// An 8-influence variant of the humanoid: every vertex keeps its 4 joints and gains 4 more (other
/// bones), the weights split between them, so every one of the 8 slots matters.
fn humanoid_with_8_influences() -> Vec<u8> {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let m = asset.manifest();
    let b = m.bone_animation.as_ref().unwrap();
    assert_eq!(b.influences, 4);
    let bones = b.layout.bone_count as u16;
    let joints: Vec<u16> =
        asset.blob(b.joints).chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    let weights: Vec<f32> =
        asset.blob(b.weights).chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let (mut j8, mut w8) = (Vec::new(), Vec::new());
    for v in 0..m.vertex_count as usize {
        for k in 0..4 {
            j8.extend_from_slice(&joints[v * 4 + k].to_le_bytes());
            w8.extend_from_slice(&(weights[v * 4 + k] * 0.75).to_le_bytes());
        }
        for k in 0..4 {
            let extra = ((v * 7 + k * 5) % bones as usize) as u16;
            j8.extend_from_slice(&extra.to_le_bytes());
            w8.extend_from_slice(&(0.25f32 * [0.4, 0.3, 0.2, 0.1][k]).to_le_bytes());
        }
    }
    // Rewrite the file with the same blobs in the same order (so every BlobId stays valid), the
    // joints and weights replaced.
    let mut writer = ContainerWriter::new();
    for id in 0..m.blobs.len() as u32 {
        let id = vat_core::container::BlobId(id);
        let bytes = if id == b.joints {
            j8.clone()
        } else if id == b.weights {
            w8.clone()
        } else {
            asset.blob(id).to_vec()
        };
        assert_eq!(writer.add_blob(bytes), id);
    }
    let mut manifest = m.clone();
    manifest.bone_animation.as_mut().unwrap().influences = 8;
    writer.finish(manifest).unwrap()
}

#[test]
fn bone_mode_with_8_influences_matches_cpu_skinning() {
    let gpu = test_gpu();
    let bytes = humanoid_with_8_influences();
    check_bone_mode(&gpu, &bytes, Interpolation::Linear, "8 influences");
}

/// Bone mode with the live morph layer, GPU against vat-core's CPU reference of the bone path, for
/// the morph rig skinned (two joints, the flag on a node bone) and morph-only (every mesh rigid on
/// its node): every record state (cross-fades mid-way included), point/linear/cubic, plain and
/// cross-fade variants. Tolerance: the stated 10 micrometres per coordinate (world coordinates up to
/// ~10 m, where an f32 ulp is 1e-6 m: the shader may fuse multiply-adds, the reference never does),
/// normals 1e-3 degrees.
///
/// Then bone mode against VAT mode of the same asset at baked frames (point interpolation, plain
/// variant, so both show one stored frame): within the Packed64 quantum bound as for the humanoid.
/// Without the morph layer bone mode is centimetres off there; with it, it plays the morph
/// animation the VAT holds.
#[test]
fn bone_mode_plays_the_live_morph_layer_like_the_reference_and_vat_mode() {
    let gpu = test_gpu();
    for skinned in [true, false] {
        let label = if skinned { "morph + skin" } else { "morph only" };
        let bytes = morph_vat(skinned);
        let asset = Asset::parse(bytes).unwrap();
        let view = BoneAnimationView::from_asset(&asset).unwrap();
        let morph = view.morph.as_ref().unwrap();
        assert_eq!((morph.layout.target_count, morph.layout.rows_per_band), (5, 2), "{label}");
        let m = asset.manifest();
        let records = records(m.clips.len() as u32);
        for interp in [Interpolation::Linear, Interpolation::Cubic, Interpolation::Point] {
            let mut renderer = Renderer::new(
                &gpu.device,
                &gpu.queue,
                RendererConfig { interpolation: interp, ..Default::default() },
            )
            .unwrap();
            let gpu_asset = renderer.upload(&asset).unwrap();
            let n = gpu_asset.vertex_count() as usize;
            for cross_fade in [true, false] {
                let decoded = decode(&mut renderer, &gpu_asset, &records, RenderMode::Bone, cross_fade);
                let (mut max_p, mut max_n) = (0f64, 0f64);
                for (i, record) in records.iter().enumerate() {
                    let mut r = *record;
                    if !cross_fade {
                        r.set_clip_b(r.clip_b_index(), 0.0);
                    }
                    for v in 0..n {
                        let cpu = decode_bone_vertex(&view, &r, TIME, v as u32, interp).unwrap();
                        let g = decoded[i * n + v];
                        max_p = max_p.max(max_abs_diff(&g.position[..3], &cpu.world_position.map(f64::from)));
                        let gn = [g.normal[0], g.normal[1], g.normal[2]].map(f64::from);
                        max_n = max_n.max(angle_deg(gn, cpu.world_normal.map(f64::from)));
                    }
                }
                println!(
                    "bone + morph ({label}) {interp:?} cross-fade {cross_fade}: max |GPU - reference| {max_p:.2e} m, \
                     normals {max_n:.2e} deg"
                );
                assert!(max_p <= TOLERANCE_M, "{label} {interp:?} cross-fade {cross_fade}: {max_p} m");
                assert!(max_n <= 1e-3, "{label} {interp:?} cross-fade {cross_fade}: normals {max_n} deg");
            }
        }

        // Against VAT mode at baked frames: phases a quarter frame past each frame, rate 0.
        let mut renderer = Renderer::new(
            &gpu.device,
            &gpu.queue,
            RendererConfig { interpolation: Interpolation::Point, ..Default::default() },
        )
        .unwrap();
        let gpu_asset = renderer.upload(&asset).unwrap();
        let mut on_frames = Vec::new();
        for (c, clip) in m.clips.iter().enumerate() {
            for k in 0..clip.frame_count {
                let offset = vat_bake::verify::exact_frame_offset(clip, k).unwrap();
                on_frames.push(InstanceRecord {
                    clip_a: c as u32,
                    phase_offset_a: offset,
                    ..Default::default()
                });
            }
        }
        let bone = decode(&mut renderer, &gpu_asset, &on_frames, RenderMode::Bone, false);
        let vat = decode(&mut renderer, &gpu_asset, &on_frames, RenderMode::Vat, false);
        let va = m.vertex_animation.as_ref().unwrap();
        // The format's stored-position bound per axis (identity instances: no yaw mixing, scale 1)
        // plus the f32 tolerance.
        let format_bound =
            vat_core::format::encoding::position_error_bound(va.format, va.position_bits, &va.bounds);
        let bound: Vec<f64> = format_bound.iter().map(|&b| f64::from(b) + TOLERANCE_M).collect();
        let mut max = [0f64; 3];
        for (a, b) in vat.iter().zip(&bone) {
            for (k, m) in max.iter_mut().enumerate() {
                *m = m.max((f64::from(a.position[k]) - f64::from(b.position[k])).abs());
            }
        }
        // The same frames without the layer: what bone mode showed before it existed.
        let mut unmorphed = view.clone();
        unmorphed.morph = None;
        let n = gpu_asset.vertex_count() as usize;
        let mut off = 0f64;
        for (i, r) in on_frames.iter().enumerate() {
            for v in 0..n {
                let u = decode_bone_vertex(&unmorphed, r, TIME, v as u32, Interpolation::Point).unwrap();
                off = off.max(max_abs_diff(&vat[i * n + v].position[..3], &u.world_position.map(f64::from)));
            }
        }
        let e = |v: &[f64]| v.iter().map(|x| format!("{x:.2e}")).collect::<Vec<_>>().join(", ");
        println!(
            "{label}: max |bone mode - VAT mode| at baked frames [{}] m per axis (bound [{}]); without the \
             morph layer {off:.2e} m",
            e(&max),
            e(&bound)
        );
        for k in 0..3 {
            assert!(max[k] <= bound[k], "{label}: bone vs VAT mode axis {k}: {} m > {} m", max[k], bound[k]);
        }
        assert!(off > 0.01, "{label}: the morph layer should matter ({off} m)");
    }
}
