//! Motion vectors (`RenderOptions::motion_vectors`) on both backends, against the CPU reference's
//! two decodes of each vertex: at the previous frame (previous record, previous clock, previous
//! camera) and at this one.
//!
//! Each case renders the same two frames twice on a fresh crowd: once with a host shader whose
//! motion entry point writes the fragment's world position and instance (the probe), once with
//! vat's own `fs_lit_motion` (the motion). For every probed pixel the CPU finds the triangle of the
//! instance's current mesh (the reference decode) that holds the probed point, takes the same
//! barycentric combination of the vertices' previous positions, projects both with their cameras
//! and compares `uv_now - uv_previous` with the GPU's motion. The frames have a moving and turning
//! instance, one in the middle of a cross-fade, and one teleported with its history reset (a
//! "no history" record); the camera moves between them.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use vat_core::backend::frame::FrameError;
use vat_core::backend::pipeline::HostShader;
use vat_core::container::Asset;
use vat_core::crowd::{Camera, Crowd, CrowdAsset, CrowdConfig};
use vat_core::format::reference::{self, VertexAnimationView};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;
use vat_core::render::{CrowdRenderer, Culling, RenderOptions};
use vat_tests::humanoid_vat;

const SIZE: [u32; 2] = [128, 96];

/// Largest allowed motion error, in fractions of the screen (the bound).
const BOUND: f64 = 1e-4;

const PROBE: &str = "
@fragment
fn fs_probe_colour(in: VertexOutput) -> @location(0) vec4<f32> {
    return vec4<f32>(1.0);
}

@fragment
fn fs_probe(in: VertexOutput) -> LitMotionOutput {
    return LitMotionOutput(vec4<f32>(1.0), vec4<f32>(in.world_position, f32(in.instance) + 1.0));
}
";

fn camera(frame: usize) -> Camera {
    let eye = if frame == 0 { [0.6, 1.5, 4.2] } else { [0.9, 1.45, 4.0] };
    Camera::look_at(eye, [0.0, 0.9, 0.0], 0.9, SIZE[0] as f32 / SIZE[1] as f32, 0.1, 50.0)
}

/// The records and clock of each of the two frames.
struct Frames {
    records: [Vec<InstanceRecord>; 2],
    times: [f32; 2],
}

/// Renders the two frames on a fresh crowd; returns the second frame's motion target and each
/// frame's records and clock (as uploaded).
fn two_frames<R: CrowdRenderer>(renderer: &mut R, culling: Culling) -> (Vec<[f32; 4]>, Frames) {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = renderer.upload(&asset).unwrap();
    let config = CrowdConfig { lod_bias: -20.0, ..CrowdConfig::default() };
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), config);
    let clips = &asset.manifest().clips;
    let walk = clips.iter().position(|c| c.name == "walk").unwrap() as u32;
    let other = (0..clips.len() as u32).find(|&c| c != walk).unwrap();
    let mover = crowd.spawn_at_phase([-0.8, 0.0, 0.0], 0.4, walk, 0.1);
    let fader = crowd.spawn_at_phase([0.3, 0.0, -0.6], -0.3, walk, 0.6);
    let jumper = crowd.spawn_at_phase([1.4, 0.0, 0.2], 0.0, walk, 0.3);
    crowd.advance(0.5);
    crowd.play(fader, other, 1.0);
    crowd.advance(0.3);
    let options = RenderOptions {
        motion_vectors: true,
        culling,
        shadows: false,
        ground: false,
        ..RenderOptions::default()
    };
    let mut gpu_crowd = renderer.create_crowd(&crowd).unwrap();
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(0), &options).unwrap();
    let first = (crowd.records().to_vec(), crowd.shader_time());

    crowd.advance(1.0 / 30.0);
    crowd.set_transform(mover, [-0.7, 0.0, 0.05], 0.55);
    crowd.set_transform(jumper, [2.3, 0.0, -1.2], 1.0);
    crowd.reset_motion_history(jumper);
    renderer.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(1), &options).unwrap();
    let motion = renderer.read_motion().unwrap();
    let frames =
        Frames { records: [first.0, crowd.records().to_vec()], times: [first.1, crowd.shader_time()] };
    (motion, frames)
}

fn uv(view_proj: &[[f32; 4]; 4], p: [f64; 3]) -> [f64; 2] {
    let m = |r: usize| {
        f64::from(view_proj[0][r]) * p[0]
            + f64::from(view_proj[1][r]) * p[1]
            + f64::from(view_proj[2][r]) * p[2]
            + f64::from(view_proj[3][r])
    };
    let w = m(3);
    [0.5 + 0.5 * m(0) / w, 0.5 - 0.5 * m(1) / w]
}

/// The barycentric coordinates of `p` in triangle `t` and its distance from the triangle's plane.
fn barycentric(t: [[f64; 3]; 3], p: [f64; 3]) -> ([f64; 3], f64) {
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let (e0, e1, d) = (sub(t[1], t[0]), sub(t[2], t[0]), sub(p, t[0]));
    let n = [e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2], e0[0] * e1[1] - e0[1] * e1[0]];
    let len = dot(n, n).sqrt();
    let (d00, d01, d11, d20, d21) = (dot(e0, e0), dot(e0, e1), dot(e1, e1), dot(d, e0), dot(d, e1));
    let denom = d00 * d11 - d01 * d01;
    if len <= 0.0 || denom <= 0.0 {
        return ([-1.0; 3], f64::INFINITY);
    }
    let v = (d11 * d20 - d01 * d21) / denom;
    let w = (d00 * d21 - d01 * d20) / denom;
    ([1.0 - v - w, v, w], (dot(d, n) / len).abs())
}

/// Checks the motion of every probed pixel; returns (pixels checked, worst error, largest motion)
/// per instance.
fn check(probe: &[[f32; 4]], motion: &[[f32; 4]], frames: &Frames) -> Vec<(usize, f64, f64)> {
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let view = VertexAnimationView::from_asset(&asset).unwrap();
    let indices: Vec<u32> = asset
        .lod_index_bytes(0)
        .unwrap()
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let vertices = asset.manifest().vertex_animation.as_ref().unwrap().layout.vertex_count;
    let world = |r: &InstanceRecord, t: f32| -> Vec<[f64; 3]> {
        (0..vertices)
            .map(|v| reference::decode_vertex(&view, r, t, v, Interpolation::Linear).unwrap().world_position)
            .map(|p| p.map(f64::from))
            .collect()
    };
    let (cam_prev, cam_now) = (camera(0).view_proj, camera(1).view_proj);
    let mut out = Vec::new();
    for (k, record) in frames.records[1].iter().enumerate() {
        let now = world(record, frames.times[1]);
        // The previous record is in the record buffer's history half: the frame-1 record, or
        // the current one for an instance whose history was reset (the teleported one, k = 2).
        let previous_record = if k == 2 { record } else { &frames.records[0][k] };
        let before = world(previous_record, frames.times[0]);
        let (mut checked, mut worst, mut largest) = (0usize, 0.0f64, 0.0f64);
        let mut covered = 0usize;
        for (px, p) in probe.iter().enumerate() {
            if p[3] != k as f32 + 1.0 {
                continue;
            }
            covered += 1;
            let x = [p[0], p[1], p[2]].map(f64::from);
            let best = indices
                .chunks_exact(3)
                .map(|t| {
                    let tri = [now[t[0] as usize], now[t[1] as usize], now[t[2] as usize]];
                    let (b, d) = barycentric(tri, x);
                    (t, b, d)
                })
                .filter(|(_, b, _)| b.iter().all(|&c| c >= -1e-4))
                .min_by(|a, b| a.2.total_cmp(&b.2));
            let Some((t, b, d)) = best else { continue };
            if d > 1e-4 {
                continue;
            }
            let blend = |v: &[[f64; 3]]| {
                let mut s = [0.0; 3];
                for (c, &i) in t.iter().enumerate() {
                    for a in 0..3 {
                        s[a] += b[c] * v[i as usize][a];
                    }
                }
                s
            };
            let (u_now, u_before) = (uv(&cam_now, blend(&now)), uv(&cam_prev, blend(&before)));
            let expected = [u_now[0] - u_before[0], u_now[1] - u_before[1]];
            let got = [f64::from(motion[px][0]), f64::from(motion[px][1])];
            let error = (got[0] - expected[0]).hypot(got[1] - expected[1]);
            worst = worst.max(error);
            largest = largest.max(expected[0].hypot(expected[1]));
            checked += 1;
        }
        assert!(covered > 150, "instance {k} covers {covered} pixels");
        assert!(
            checked * 10 >= covered * 9,
            "instance {k}: {checked} of {covered} pixels matched a triangle"
        );
        out.push((checked, worst, largest));
    }
    out
}

fn case<R: CrowdRenderer>(
    renderer: &mut R,
    set_shader: impl Fn(&mut R, Option<HostShader>),
    culling: Culling,
) {
    let probe_shader = HostShader::new(PROBE, "fs_probe_colour").with_motion_entry_point("fs_probe");
    set_shader(renderer, Some(probe_shader));
    let (probe, frames) = two_frames(renderer, culling);
    set_shader(renderer, None);
    let (motion, again) = two_frames(renderer, culling);
    assert_eq!(frames.records, again.records, "the two runs are the same frames");
    let results = check(&probe, &motion, &frames);
    println!(
        "{} {culling:?}: (pixels, worst error, largest motion) per instance: {results:?}",
        renderer.adapter_name()
    );
    for (k, &(_, worst, largest)) in results.iter().enumerate() {
        assert!(worst <= BOUND, "instance {k}: motion error {worst:e} > {BOUND:e}");
        assert!(largest > 1e-3, "instance {k}: the scene barely moves ({largest:e})");
    }
    // Without the reset, the teleported instance would streak across the screen.
    let streak = {
        let r = &frames.records[1][2];
        let p = &frames.records[0][2];
        let (a, b) = (
            uv(&camera(1).view_proj, r.position.map(f64::from)),
            uv(&camera(0).view_proj, p.position.map(f64::from)),
        );
        (a[0] - b[0]).hypot(a[1] - b[1])
    };
    assert!(
        results[2].2 * 3.0 < streak,
        "the reset instance moves {} of the screen, a streak {streak}",
        results[2].2
    );
}

#[test]
fn motion_vectors_match_the_cpu_reference_on_both_backends() {
    let mut wg = vat_tests::wgpu_offscreen(SIZE, 256);
    let mut vk = vat_tests::vulkan_offscreen(SIZE, 256);
    assert!(vk.parts().0.validation_enabled(), "the validation layer is not installed (cargo xtask deps)");
    for culling in [Culling::Cpu, Culling::Gpu] {
        case(&mut wg, |r, s| r.parts().2.set_host_shader(s).unwrap(), culling);
        case(&mut vk, |r, s| r.parts().1.set_host_shader(s).unwrap(), culling);
    }
    let messages = vk.parts().0.messages();
    assert_eq!((messages.errors(), messages.warnings()), (0, 0), "Vulkan validation messages");
}

#[test]
fn motion_vectors_need_a_motion_entry_point_in_the_host_shader() {
    let mut wg = vat_tests::wgpu_offscreen(SIZE, 256);
    wg.parts().2.set_host_shader(Some(HostShader::new(PROBE, "fs_probe_colour"))).unwrap();
    let asset = Asset::parse(humanoid_vat()).unwrap();
    let gpu_asset = wg.upload(&asset).unwrap();
    let mut crowd = Crowd::new(CrowdAsset::from_manifest(asset.manifest()).unwrap(), CrowdConfig::default());
    crowd.spawn([0.0; 3], 0.0, 0);
    let mut gpu_crowd = wg.create_crowd(&crowd).unwrap();
    let options = RenderOptions { motion_vectors: true, ..RenderOptions::default() };
    let err = wg.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(0), &options).unwrap_err();
    assert!(
        matches!(err, vat_wgpu::Error::Frame(FrameError::HostShader(ref m)) if m.contains("motion entry point")),
        "{err}"
    );
    // A missing motion entry point in the source is refused when the shader is set.
    let bad = HostShader::new(PROBE, "fs_probe_colour").with_motion_entry_point("fs_missing");
    assert!(matches!(wg.parts().2.set_host_shader(Some(bad)), Err(vat_wgpu::Error::HostShader(_))));

    let mut vk = vat_tests::vulkan_offscreen(SIZE, 256);
    vk.parts().1.set_host_shader(Some(HostShader::new(PROBE, "fs_probe_colour"))).unwrap();
    let gpu_asset = vk.upload(&asset).unwrap();
    let mut gpu_crowd = vk.create_crowd(&crowd).unwrap();
    let err = vk.render_crowd(&gpu_asset, &mut gpu_crowd, &mut crowd, &camera(0), &options).unwrap_err();
    assert!(
        matches!(err, vat_vulkan::Error::Frame(FrameError::HostShader(ref m)) if m.contains("motion entry point")),
        "{err}"
    );
}
