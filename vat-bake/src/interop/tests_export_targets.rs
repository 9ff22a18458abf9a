//! `export-openvat --target`: each target's files, read with the image and glTF crates and decoded
//! by a transcription of that engine's published decoder (its arithmetic, written here from reading
//! the sources named in `export_targets.rs`, none of this crate's import or export code), match vat's
//! CPU reference at every vertex (the body's and the cap attachment's) of every frame of every clip,
//! within the export's stated bound; the sidecar lists clips in texture order with each target's
//! frame base; the default layout, decoded by Unity's and bevy_open_vat's decoders, is measurably off
//! (what the targets fix).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use glam::{Mat3, Vec2, Vec3};
use half::f16;
use vat_core::container::Asset;
use vat_core::format::reference::{VertexAnimationView, decode_object_frame};
use vat_core::playback::Interpolation;

use super::{ExportTarget, NormalsExport, OpenVatExport, OpenVatWritten, export_openvat};
use crate::interop::TextureFormat;
use crate::prepare::{BakeOptions, prepare};

/// The humanoid (six clips, `wave` a one-shot, a cap on the head socket), 4 frames per clip, one
/// LOD.
fn asset_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let rig = crate::procgen::humanoid();
        let options =
            BakeOptions { frames: Some(4), lods: crate::lods::LodOptions::Count(1), ..Default::default() };
        prepare(&rig, &options).unwrap().to_vat_bytes().unwrap()
    })
}

/// vat's own frames, clip after clip: the body by the CPU reference decode, then the cap placed by
/// its socket's captured transform (the file's capture track times the socket's local transform).
fn reference(asset: &Asset<'_>) -> (Vec<Vec<Vec3>>, Vec<Vec<Vec3>>) {
    let view = VertexAnimationView::from_asset(asset).unwrap();
    let n = view.layout.vertex_count as usize;
    let m = asset.manifest();
    let (mut p, mut nrm) = (vec![[0.0f32; 3]; n], vec![[0.0f32; 3]; n]);
    let (mut ps, mut ns) = (Vec::new(), Vec::new());
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    let mat = |c: &[f32]| {
        (
            Mat3::from_cols(
                Vec3::from_slice(&c[0..3]),
                Vec3::from_slice(&c[3..6]),
                Vec3::from_slice(&c[6..9]),
            ),
            Vec3::from_slice(&c[9..12]),
        )
    };
    for (c, clip) in m.clips.iter().enumerate() {
        for k in 0..clip.frame_count {
            let offset = crate::verify::exact_frame_offset(clip, k).unwrap();
            decode_object_frame(&view, c as u32, offset, Interpolation::Point, &mut p, &mut nrm).unwrap();
            let f = ps.len();
            let mut pf: Vec<Vec3> = p.iter().map(|v| Vec3::from(*v)).collect();
            let mut nf: Vec<Vec3> = nrm.iter().map(|v| Vec3::from(*v)).collect();
            for a in &m.attachments {
                let socket = &m.sockets[a.socket as usize];
                let track = floats(asset.capture_bytes(socket.bone).unwrap());
                let (bl, bt) = mat(&track[f * 12..f * 12 + 12]);
                let (sl, st) = mat(&socket.local);
                let pos = floats(asset.blob(a.positions));
                let nor = floats(asset.blob(a.normals));
                for (q, nn) in pos.chunks_exact(3).zip(nor.chunks_exact(3)) {
                    pf.push(bl * (sl * Vec3::from_slice(q) + st) + bt);
                    nf.push(((bl * sl).inverse().transpose() * Vec3::from_slice(nn)).normalize());
                }
            }
            ps.push(pf);
            ns.push(nf);
        }
    }
    (ps, ns)
}

/// Where clip `c` starts among the asset's frames.
fn first_frame(asset: &Asset<'_>, c: usize) -> usize {
    asset.manifest().clips[..c].iter().map(|x| x.frame_count as usize).sum()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vat-openvat-target-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An export's files as an engine's loaders read them.
struct Files {
    written: OpenVatWritten,
    /// The sidecar's text (for the clips' order) and value.
    text: String,
    sidecar: serde_json::Value,
    /// RGB texels, first scanline first, as the file holds them.
    width: usize,
    height: usize,
    texels: Vec<[f32; 3]>,
    /// The glb's POSITION and TEXCOORD_1.
    rest: Vec<Vec3>,
    uv1: Vec<Vec2>,
}

impl Files {
    fn min_max(&self) -> (Vec3, Vec3) {
        let v = |k: &str| {
            Vec3::from_slice(
                &self.sidecar["os-remap"][k]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect::<Vec<_>>(),
            )
        };
        (v("Min"), v("Max"))
    }

    fn frames(&self) -> usize {
        self.sidecar["os-remap"]["Frames"].as_u64().unwrap() as usize
    }

    /// The clips' names in the order the sidecar lists them.
    fn clip_order(&self) -> Vec<String> {
        let table = self.sidecar["animations"].as_object().unwrap();
        let mut names: Vec<&String> = table.keys().collect();
        names.sort_by_key(|n| self.text.find(&format!("{}:", serde_json::to_string(n).unwrap())).unwrap());
        names.into_iter().cloned().collect()
    }

    fn clip(&self, name: &str) -> (f32, f32, f32, bool) {
        let c = &self.sidecar["animations"][name];
        (
            c["startFrame"].as_f64().unwrap() as f32,
            c["endFrame"].as_f64().unwrap() as f32,
            c["framerate"].as_f64().unwrap() as f32,
            c["looping"].as_bool().unwrap(),
        )
    }
}

fn read_texture(path: &Path) -> (usize, usize, Vec<[f32; 3]>) {
    if path.extension().unwrap() == "png" {
        let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        decoder.set_transformations(png::Transformations::IDENTITY);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let texels = buf
            .chunks_exact(6)
            .map(|b| {
                let s = |i: usize| f32::from(u16::from_be_bytes([b[2 * i], b[2 * i + 1]])) / 65535.0;
                [s(0), s(1), s(2)]
            })
            .collect();
        (info.width as usize, info.height as usize, texels)
    } else {
        let image = exr::prelude::read_first_rgba_layer_from_file(
            path,
            |size, _| (size.width(), vec![[0.0f32; 3]; size.area()]),
            |(w, t): &mut (usize, Vec<[f32; 3]>), pos, (r, g, b, _a): (f32, f32, f32, f32)| {
                t[pos.y() * *w + pos.x()] = [r, g, b];
            },
        )
        .unwrap();
        let size = image.layer_data.size;
        let (_, texels) = image.layer_data.channel_data.pixels;
        (size.width(), size.height(), texels)
    }
}

fn export(target: ExportTarget, tag: &str) -> (PathBuf, Files) {
    export_with(OpenVatExport::for_target(target), tag)
}

fn export_with(options: OpenVatExport, tag: &str) -> (PathBuf, Files) {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let dir = scratch(tag);
    let written = export_openvat(&asset, &dir, &options).unwrap();
    let name = written.name.clone();
    let text = std::fs::read_to_string(dir.join(format!("{name}-remap_info.json"))).unwrap();
    let sidecar: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (width, height, texels) =
        read_texture(&dir.join(format!("{name}_vat.{}", options.format.extension())));
    let gltf = gltf::Gltf::open(dir.join(format!("{name}.glb"))).unwrap();
    let blob = gltf.blob.clone().unwrap();
    let prim = gltf.meshes().next().unwrap().primitives().next().unwrap();
    let reader = prim.reader(|_| Some(&blob));
    let rest = reader.read_positions().unwrap().map(Vec3::from).collect();
    let uv1 = reader.read_tex_coords(1).unwrap().into_f32().map(Vec2::from).collect();
    (dir, Files { written, text, sidecar, width, height, texels, rest, uv1 })
}

/// What one decoder gave for one vertex of one frame, in glTF space.
struct Decoded {
    position: Vec3,
    normal: Option<Vec3>,
}

/// Compares every vertex of `frame` (an asset frame) with the reference; returns the worst position
/// error per axis and the worst normal angle (degrees).
fn compare(
    what: &str,
    files: &Files,
    frame: usize,
    decoded: &[Decoded],
    reference: &(Vec<Vec<Vec3>>, Vec<Vec<Vec3>>),
    worst: &mut (Vec3, f32),
) {
    let bound = Vec3::from(files.written.position_bound);
    let normal_bound = (2.0 * 3.0f32.sqrt() * files.written.texel_step).to_degrees() * 1.01 + 1e-3;
    assert_eq!(decoded.len(), reference.0[frame].len(), "{what}");
    for (v, d) in decoded.iter().enumerate() {
        let e = (d.position - reference.0[frame][v]).abs();
        assert!(e.cmple(bound).all(), "{what}: frame {frame} vertex {v}: {e} > {bound}");
        worst.0 = worst.0.max(e);
        if let Some(n) = d.normal {
            let r = reference.1[frame][v];
            let deg = n.cross(r).length().atan2(n.dot(r)).to_degrees();
            assert!(
                deg <= normal_bound,
                "{what}: frame {frame} vertex {v}: normal {deg} deg > {normal_bound}"
            );
            worst.1 = worst.1.max(deg);
        }
    }
}

fn report(what: &str, files: &Files, worst: (Vec3, f32)) {
    let b = files.written.position_bound;
    eprintln!(
        "{what}: {} x {} texels, max error {:.4} / {:.4} / {:.4} mm (bound {:.4} / {:.4} / {:.4} mm), normals {:.4} deg",
        files.width,
        files.height,
        worst.0.x * 1e3,
        worst.0.y * 1e3,
        worst.0.z * 1e3,
        b[0] * 1e3,
        b[1] * 1e3,
        b[2] * 1e3,
        worst.1
    );
}

// ---------------------------------------------------------------------------------------------
// Unity: sharpen3d's package 1.1.0. OpenVATEditor imports the textures point-filtered, uncompressed,
// linear (an EXR as RGBA half), and sets _MinA/_MaxA from os-remap, _YResA to the texture's height;
// VATAnimationData lists the sidecar's clips in file order and VATController plays one by index
// (FrameStartA/EndA = startFrame/endFrame, FPSA = framerate, LoopA = looping). The glTF importers
// (glTFast, UnityGLTF) negate X and flip V. The default shader's sub-graph ov_packed_pos-nrml, track A
// (FrameInterpolation off, its default):
//   t = (time - TimeOffsetA) * FPSA; N = max(end - start + 1, 1)
//   frame = loop ? floor(t - N floor(t / N)) + start : clamp(floor(t), 0, N - 1) + start
//   uv = (uv1.x, uv1.y - (max(1, frame) - 1) / YRes)
//   position = objectPosition + Remap(tex(uv).rgb, (0,1) -> (Min, Max)) * 0.01 * (-1, 1, 1)
//   normal = normalize(Remap(tex(uv.x, uv.y - 0.5).rgb, (0,1) -> (-1,1)) * (-1, 1, 1))
// Unity's texel (i, j) counts rows from the bottom; Sample Texture 2D LOD with the texture's own
// point sampler (Repeat) reads texel (floor(frac(u) W), floor(frac(v) H)).

fn unity_half(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

fn unity_sample(files: &Files, uv: Vec2) -> Vec3 {
    let (w, h) = (files.width, files.height);
    let i = ((uv.x - uv.x.floor()) * w as f32).floor() as usize;
    let j = ((uv.y - uv.y.floor()) * h as f32).floor() as usize;
    let t = files.texels[(h - 1 - j.min(h - 1)) * w + i.min(w - 1)];
    Vec3::new(unity_half(t[0]), unity_half(t[1]), unity_half(t[2]))
}

/// Unity's decode of clip `index` (the sidecar's order) at `time` seconds, in glTF space.
fn unity_decode(files: &Files, index: usize, time: f32) -> Vec<Decoded> {
    let (min, max) = files.min_max();
    let name = &files.clip_order()[index];
    let (start, end, fps, looping) = files.clip(name);
    let y_res = files.height as f32;
    let t = time * fps;
    let n = (end - start + 1.0).max(1.0);
    let frame = if looping {
        (t - n * (t / n).floor()).floor() + start
    } else {
        t.floor().clamp(0.0, n - 1.0) + start
    };
    let remap = |c: Vec3, lo: Vec3, hi: Vec3| lo + c * (hi - lo);
    files
        .rest
        .iter()
        .zip(&files.uv1)
        .map(|(p, uv)| {
            let (object, uv1) = (Vec3::new(-p.x, p.y, p.z), Vec2::new(uv.x, 1.0 - uv.y));
            let uv = Vec2::new(uv1.x, uv1.y - (frame.max(1.0) - 1.0) / y_res);
            let position =
                object + remap(unity_sample(files, uv), min, max) * 0.01 * Vec3::new(-1.0, 1.0, 1.0);
            let normal = (remap(unity_sample(files, uv - Vec2::new(0.0, 0.5)), Vec3::NEG_ONE, Vec3::ONE)
                * Vec3::new(-1.0, 1.0, 1.0))
            .normalize();
            // Back to glTF space: X negated again.
            Decoded {
                position: Vec3::new(-position.x, position.y, position.z),
                normal: Some(Vec3::new(-normal.x, normal.y, normal.z)),
            }
        })
        .collect()
}

#[test]
fn unity_package_plays_the_unity_export_at_every_vertex_and_frame() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let reference = reference(&asset);
    let (dir, files) = export(ExportTarget::Unity, "unity");
    let mut worst = (Vec3::ZERO, 0.0f32);
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        let index = files.clip_order().iter().position(|n| *n == clip.name).unwrap();
        let fps = files.clip(&clip.name).2;
        // Mid-frame instants: frame k at t = k + 0.5 (FrameInterpolation off shows frame k).
        for k in 0..clip.frame_count as usize {
            let decoded = unity_decode(&files, index, (k as f32 + 0.5) / fps);
            compare("unity", &files, first_frame(&asset, c) + k, &decoded, &reference, &mut worst);
        }
        // A loop wraps from its last frame to its first.
        if clip.is_looping() {
            let decoded = unity_decode(&files, index, (clip.frame_count as f32 + 0.5) / fps);
            compare("unity wrap", &files, first_frame(&asset, c), &decoded, &reference, &mut worst);
        }
    }
    report("unity", &files, worst);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Godot: antzGames' OpenVAT-for-Godot addon. Godot keeps an EXR's half floats (RGBH) and reads a
// glb's TEXCOORD_1 as UV2 (no flip); `uniform sampler2D` filters linearly. openvat_singleton.gdshader:
//   frame_count = height / 2; frame_time = mod(TIME * speed, frame_count); current = floor(frame_time)
//   uv = UV2 + (0, current / height); VERTEX += (x, z, -y) of min + tex(uv) (max - min)
//   NORMAL = normalize((x, z, -y) of 2 tex(uv + (0, 0.5)) - 1)
// openvat_instanced.gdshader, with open_vat_multi_mesh_instance_3d.gd's import (start = startFrame - 1,
// end = endFrame - 1, framerate as int, tracks in the sidecar's order):
//   num = end - start; offset = num * custom.r; phase = (TIME - timestamp) speed / num
//   loop: current = start + mod(fract(phase) num + offset, num); once: current = start + phase num + offset,
//   held at end once next >= end; blend = fract(phase) (0 at the track's start)

/// A bilinear weight as texture units apply it: 8 bits of sub-texel precision (Vulkan's
/// `subTexelPrecisionBits`, 8 on common GPUs), so a coordinate a few ulps off a texel centre reads
/// that texel alone.
fn subtexel(f: f32) -> f32 {
    (f * 256.0).round() / 256.0
}

fn godot_bilinear(files: &Files, uv: Vec2) -> Vec3 {
    let (w, h) = (files.width as i64, files.height as i64);
    let x = uv.x * w as f32 - 0.5;
    let y = uv.y * h as f32 - 0.5;
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (subtexel(x - x0), subtexel(y - y0));
    let at = |i: i64, j: i64| {
        let t = files.texels[(j.rem_euclid(h) * w + i.rem_euclid(w)) as usize];
        Vec3::new(unity_half(t[0]), unity_half(t[1]), unity_half(t[2]))
    };
    let (i, j) = (x0 as i64, y0 as i64);
    let top = at(i, j).lerp(at(i + 1, j), fx);
    let bottom = at(i, j + 1).lerp(at(i + 1, j + 1), fx);
    top.lerp(bottom, fy)
}

fn blender_to_godot(v: Vec3) -> Vec3 {
    Vec3::new(v.x, v.z, -v.y)
}

/// Godot's decode at texture row `current` (a float: the instanced shader's rows need not be whole).
fn godot_decode(files: &Files, current: f32) -> Vec<Decoded> {
    let (min, max) = files.min_max();
    let step = 1.0 / files.height as f32;
    files
        .rest
        .iter()
        .zip(&files.uv1)
        .map(|(p, uv2)| {
            let uv = *uv2 + Vec2::new(0.0, current * step);
            let position = *p + blender_to_godot(min + godot_bilinear(files, uv) * (max - min));
            let normal = blender_to_godot(godot_bilinear(files, uv + Vec2::new(0.0, 0.5)) * 2.0 - Vec3::ONE)
                .normalize();
            Decoded { position, normal: Some(normal) }
        })
        .collect()
}

#[test]
fn godot_addon_plays_the_godot_export_at_every_vertex_and_frame() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let reference = reference(&asset);
    let (dir, files) = export(ExportTarget::Godot, "godot");
    let mut worst = (Vec3::ZERO, 0.0f32);
    // The singleton shader: every row in turn (speed 1, TIME = k).
    let frame_count = files.height / 2;
    assert_eq!(frame_count, files.frames());
    for k in 0..frame_count {
        let frame_time = (k as f32).rem_euclid(frame_count as f32);
        let decoded = godot_decode(&files, frame_time.floor());
        compare(
            "godot singleton",
            &files,
            files.written.row_frames[k] as usize,
            &decoded,
            &reference,
            &mut worst,
        );
    }
    // The instanced shader: each track by its index, every frame through the instance's offset at the
    // track's start (blend 0).
    let order = files.clip_order();
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        let index = order.iter().position(|n| *n == clip.name).unwrap();
        let (start, end, fps, looping) = files.clip(&order[index]);
        if fps.fract() != 0.0 {
            let note = format!("{:?} {fps} fps", clip.name);
            assert!(files.written.notes.iter().any(|n| n.contains("whole number") && n.contains(&note)));
        }
        let (start, end) = (start - 1.0, end - 1.0);
        let num = end - start;
        for k in 0..clip.frame_count as usize {
            let r = if num > 0.0 { k as f32 / num } else { 0.0 };
            let offset = num.max(1e-4) * r;
            let mut current = if looping {
                start + (0.0 * num + offset).rem_euclid(num.max(1e-4))
            } else {
                start + 0.0 * num + offset
            };
            if !looping && current + 1.0 >= end {
                current = end;
            }
            let decoded = godot_decode(&files, current);
            compare("godot instanced", &files, first_frame(&asset, c) + k, &decoded, &reference, &mut worst);
        }
        // A loop's last frame blends into endFrame, which holds its first frame.
        if looping {
            let decoded = godot_decode(&files, end);
            compare("godot loop end", &files, first_frame(&asset, c), &decoded, &reference, &mut worst);
        }
    }
    report("godot", &files, worst);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// bevy_open_vat 0.20: an EXR loads as Rgba32Float and compact_vat_image turns it into Rgba16Unorm
// (round(clamp(v, 0, 1) 65535)); clips are a map by name (startFrame, endFrame, framerate, looping),
// frame_count = end - start. openvat_common.wesl's vat_sample (progress = time rate + offset):
//   loop: local = fract(progress) count; k = min(u32(local), count - 1); curr = k == 0 ? start + count
//         : start + k; next = start + k + 1; blend = fract(local)
//   once: local = saturate(progress) (count - 1); k = min(u32(local), count - 1); curr = start + 1 + k;
//         next = min(curr + 1, start + count); blend = local - k
//   base = vec2<i32>(uv_b dims); rows base.y + curr % Frames; textureLoad (no filtering)
//   position = v_pos + (x, z, -y) of min + mix(curr, next, blend) (max - min)
//   normal = (x, z, -y) of normalize(mix(2 curr' - 1, 2 next' - 1, blend)), rows height / 2 further

fn bevy_load(files: &Files, col: i32, row: i32) -> Vec3 {
    let t = files.texels[row as usize * files.width + col as usize];
    let q = |v: f32| (v.clamp(0.0, 1.0) * 65535.0).round() / 65535.0;
    Vec3::new(q(t[0]), q(t[1]), q(t[2]))
}

/// bevy_open_vat's decode of clip `name` at `progress` (clip cycles).
fn bevy_decode(files: &Files, name: &str, progress: f32) -> Vec<Decoded> {
    let (min, max) = files.min_max();
    let (start, end, _, looping) = files.clip(name);
    let (start, count) = (start as u32, (end as u32).saturating_sub(start as u32));
    let frames = files.frames() as u32;
    let (curr, next, blend) = if looping {
        let local = progress.fract() * count as f32;
        let k = (local as u32).min(count - 1);
        (if k == 0 { start + count } else { start + k }, start + k + 1, local.fract())
    } else {
        let local = progress.clamp(0.0, 1.0) * (count - 1) as f32;
        let k = (local as u32).min(count - 1);
        let curr = start + 1 + k;
        (curr, (curr + 1).min(start + count), local - k as f32)
    };
    let half = (files.height / 2) as i32;
    let blender_to_bevy = |v: Vec3| Vec3::new(v.x, v.z, -v.y);
    files
        .rest
        .iter()
        .zip(&files.uv1)
        .map(|(p, uv)| {
            let col = (uv.x * files.width as f32) as i32;
            let base = (uv.y * files.height as f32) as i32;
            let (rc, rn) = (base + (curr % frames) as i32, base + (next % frames) as i32);
            let encoded = bevy_load(files, col, rc).lerp(bevy_load(files, col, rn), blend);
            let position = *p + blender_to_bevy(min + encoded * (max - min));
            let nc = bevy_load(files, col, rc + half) * 2.0 - Vec3::ONE;
            let nn = bevy_load(files, col, rn + half) * 2.0 - Vec3::ONE;
            Decoded { position, normal: Some(blender_to_bevy(nc.lerp(nn, blend).normalize())) }
        })
        .collect()
}

#[test]
fn bevy_open_vat_plays_the_bevy_export_at_every_vertex_and_frame() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let reference = reference(&asset);
    let (dir, files) = export(ExportTarget::Bevy, "bevy");
    let mut worst = (Vec3::ZERO, 0.0f32);
    for (c, clip) in asset.manifest().clips.iter().enumerate() {
        let (start, end, _, looping) = files.clip(&clip.name);
        assert!(end > start && end < files.frames() as f32, "the plugin's clip validation");
        let count = end - start;
        for k in 0..clip.frame_count as usize {
            let progress = if looping { k as f32 / count } else { k as f32 / (count - 1.0).max(1.0) };
            let decoded = bevy_decode(&files, &clip.name, progress);
            compare("bevy", &files, first_frame(&asset, c) + k, &decoded, &reference, &mut worst);
        }
    }
    report("bevy", &files, worst);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// The three.js viewer (meverett/openvat-threejs-viewer, three 0.179): EXRLoader returns half floats
// (HalfFloatType) with scanline y stored at data row height - 1 - y, linear filtering, clamped to the
// edge; GLTFLoader gives TEXCOORD_1 as uv1 unchanged; Y_resolution = texture height, FrameCount =
// os-remap.Frames. MeshStandardMaterialOpenVAT's vertex code (ToggleAnimated):
//   frameTime = mod(time Speed, FrameCount); current = floor(frameTime); blend = fract(frameTime)
//   uv = uv1 + (0, 1 - current / Y_resolution); transformed += (x, z, -y) of min + tex(uv) (max - min)
// Normals: not decoded (commented out).

fn three_sample(files: &Files, uv: Vec2) -> Vec3 {
    let (w, h) = (files.width as i64, files.height as i64);
    let x = uv.x * w as f32 - 0.5;
    let y = uv.y * h as f32 - 0.5;
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (subtexel(x - x0), subtexel(y - y0));
    let at = |i: i64, j: i64| {
        let (i, j) = (i.clamp(0, w - 1), j.clamp(0, h - 1));
        // Data row j is scanline h - 1 - j.
        let t = files.texels[((h - 1 - j) * w + i) as usize];
        Vec3::new(unity_half(t[0]), unity_half(t[1]), unity_half(t[2]))
    };
    let (i, j) = (x0 as i64, y0 as i64);
    at(i, j).lerp(at(i + 1, j), fx).lerp(at(i, j + 1).lerp(at(i + 1, j + 1), fx), fy)
}

fn three_decode(files: &Files, time: f32) -> Vec<Decoded> {
    let (min, max) = files.min_max();
    let frame_count = files.frames() as f32;
    let current = (time * 1.0).rem_euclid(frame_count).floor();
    let step = 1.0 / files.height as f32;
    files
        .rest
        .iter()
        .zip(&files.uv1)
        .map(|(p, uv1)| {
            let uv = *uv1 + Vec2::new(0.0, 1.0 - current * step);
            let t = three_sample(files, uv);
            let o = min + t * (max - min);
            Decoded { position: *p + Vec3::new(o.x, o.z, -o.y), normal: None }
        })
        .collect()
}

#[test]
fn three_viewer_plays_the_three_export_at_every_vertex_and_frame() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let reference = reference(&asset);
    let (dir, files) = export(ExportTarget::Three, "three");
    assert_eq!(files.height, files.frames(), "no normals: the viewer counts every row as a frame");
    let mut worst = (Vec3::ZERO, 0.0f32);
    for k in 0..files.frames() {
        let decoded = three_decode(&files, k as f32);
        compare("three", &files, files.written.row_frames[k] as usize, &decoded, &reference, &mut worst);
    }
    report("three", &files, worst);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The default layout plays in Godot's singleton shader and bevy_open_vat's texture reads; decoded
/// by Unity's package (for an FBX's object space) it sits far off, and bevy_open_vat reads its
/// 1-based clip ranges as 0-based (each loop shows the next clip's first frame): what `--target
/// unity` and `--target bevy` fix. Measured here for the guide.
#[test]
fn the_default_layout_plays_in_godot_and_is_measurably_off_in_unity_and_bevy_clips() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let reference = reference(&asset);
    let (dir, files) = export(ExportTarget::Default, "default");
    let mut worst = (Vec3::ZERO, 0.0f32);
    for k in 0..files.height / 2 {
        let decoded = godot_decode(&files, k as f32);
        compare(
            "default in godot",
            &files,
            files.written.row_frames[k] as usize,
            &decoded,
            &reference,
            &mut worst,
        );
    }
    report("default (Godot singleton)", &files, worst);
    // Unity's decode of the default files: every frame of the first clip, worst distance.
    let first = &asset.manifest().clips[0];
    let index = files.clip_order().iter().position(|n| *n == first.name).unwrap();
    let mut unity_off = 0.0f32;
    for k in 0..first.frame_count as usize {
        let decoded = unity_decode(&files, index, (k as f32 + 0.5) / files.clip(&first.name).2);
        for (v, d) in decoded.iter().enumerate() {
            unity_off = unity_off.max(d.position.distance(reference.0[k][v]));
        }
    }
    // bevy_open_vat on the default's 1-based clips: a loop's frame 0 reads endFrame (the next clip's
    // first frame).
    let mut bevy_off = 0.0f32;
    for (c, clip) in asset.manifest().clips.iter().enumerate().filter(|(_, c)| c.is_looping()) {
        let decoded = bevy_decode(&files, &clip.name, 0.0);
        for (v, d) in decoded.iter().enumerate() {
            bevy_off = bevy_off.max(d.position.distance(reference.0[first_frame(&asset, c)][v]));
        }
    }
    eprintln!(
        "default layout: Unity's decode up to {unity_off:.3} m off; bevy_open_vat's loops at frame 0 up to {bevy_off:.3} m off"
    );
    let bound = Vec3::from(files.written.position_bound).max_element();
    assert!(unity_off > 100.0 * bound && bevy_off > 100.0 * bound, "{unity_off} {bevy_off} vs {bound}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Clips are listed in texture order (not by name: Unity's and Godot's decoders pick them by index)
/// with each target's frame base, and each clip's rows hold its frames as the target's decoder
/// reads them.
#[test]
fn the_sidecar_lists_clips_in_texture_order_with_each_targets_frame_base() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let clips = &asset.manifest().clips;
    let texture_order: Vec<String> = clips.iter().map(|c| c.name.clone()).collect();
    let mut by_name = texture_order.clone();
    by_name.sort();
    assert_ne!(by_name, texture_order, "the fixture must tell the two orders apart");
    for target in ExportTarget::ALL {
        let (dir, files) = export(target, &format!("order-{}", target.name()));
        assert_eq!(files.clip_order(), texture_order, "{target:?}");
        let rows = &files.written.row_frames;
        assert_eq!(rows.len(), files.frames(), "{target:?}");
        for (c, clip) in clips.iter().enumerate() {
            let (start, end, fps, looping) = files.clip(&clip.name);
            let (start, end) = (start as usize, end as usize);
            assert_eq!((fps, looping), (clip.fps, clip.is_looping()), "{target:?} {}", clip.name);
            let frames: Vec<u32> =
                (first_frame(&asset, c) as u32..).take(clip.frame_count as usize).collect();
            match target {
                // 1-based, inclusive.
                ExportTarget::Default | ExportTarget::Unity | ExportTarget::Unreal | ExportTarget::Three => {
                    assert_eq!(rows[start - 1..end].to_vec(), frames, "{target:?} {}", clip.name);
                }
                // 1-based; a loop closes on its first frame, a one-shot on its last.
                ExportTarget::Godot => {
                    let mut expected = frames.clone();
                    expected.push(if looping { frames[0] } else { frames[frames.len() - 1] });
                    assert_eq!(rows[start - 1..end].to_vec(), expected, "{target:?} {}", clip.name);
                }
                // 0-based, one boundary row more.
                ExportTarget::Bevy => {
                    let expected: Vec<u32> = if looping {
                        frames.iter().copied().chain([frames[0]]).collect()
                    } else {
                        [frames[0]].into_iter().chain(frames.iter().copied()).collect()
                    };
                    assert_eq!(rows[start..=end].to_vec(), expected, "{target:?} {}", clip.name);
                    if c == 0 {
                        assert_eq!(start, 0, "bevy rows count from 0");
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The cap attachment is exported (its columns follow the body's) and named in a note; each target
/// says in a note what its decoder does not take, and Unreal's says it was not checked.
#[test]
fn attachments_are_exported_and_what_a_target_cannot_take_is_a_note() {
    let asset = Asset::parse(asset_bytes()).unwrap();
    let cap = asset.manifest().attachments.iter().find(|a| a.name == "cap").unwrap().vertex_count as usize;
    for target in ExportTarget::ALL {
        let (dir, files) = export(target, &format!("notes-{}", target.name()));
        let w = &files.written;
        assert_eq!(w.width, w.body_vertices + cap, "{target:?}");
        assert!(
            w.notes.iter().any(|n| n.contains("attachment \"cap\"") && n.contains("exported as columns"))
        );
        let has = |s: &str| w.notes.iter().any(|n| n.contains(s));
        match target {
            ExportTarget::Unreal => assert!(has("could not read") && has("not checked"), "{:?}", w.notes),
            ExportTarget::Three => assert!(has("normals not exported"), "{:?}", w.notes),
            ExportTarget::Unity => assert!(has("centimetres"), "{:?}", w.notes),
            _ => {}
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A format or normals layout the target's decoder cannot take is written, and said.
    let options = OpenVatExport {
        target: ExportTarget::Godot,
        format: TextureFormat::Png16,
        normals: NormalsExport::Separate,
    };
    let (dir, files) = export_with(options, "godot-png");
    let notes = &files.written.notes;
    assert!(
        notes.iter().any(|n| n.contains("8 bits")) && notes.iter().any(|n| n.contains("--normals separate"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
