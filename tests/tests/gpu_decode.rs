//! The WGSL decode compute shader (`cs_decode`) against vat-core's CPU reference decoder, on a real
//! wgpu device (lavapipe in CI), for every vertex format (each bound where
//! `vat_core::backend::gpu::vertex_textures` says, decoded by the `VERTEX_FORMAT` override), every
//! interpolation mode, looping and one-shot clips, cross-fades and instance transforms.

// Integration tests report failure by panicking; helpers below unwrap for the same reason.
#![allow(clippy::unwrap_used)]

use bytemuck::Zeroable;
use vat_core::backend::gpu::{
    self, AssetConstants, DecodeParams, DecodedVertex, FrameUniforms, ShaderStages,
};
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{Asset, ContainerWriter, Manifest, VertexAnimation};
use vat_core::format::encoding::{
    NormalRounding, PositionBounds, VertexFormat, allocate_position_bits, encode_vertex_texture,
};
use vat_core::format::layout::VertexTextureLayout;
use vat_core::format::reference::{VertexAnimationView, decode_vertex};
use vat_core::instance::InstanceRecord;
use vat_core::playback::{Interpolation, Wrap};
use vat_tests::{ALL_VERTEX_FORMATS, TestGpu, test_gpu};
use wgpu::util::DeviceExt;

const VERTICES: u32 = 257; // not a multiple of the workgroup size

/// An asset in `format` with a looping and a one-shot clip of a smooth analytic motion.
fn bake(format: VertexFormat) -> Vec<u8> {
    let mut clips = ClipRowMap::new();
    clips.push("loop", 0.8, 30.0, ClipMode::Looping, 1.2).unwrap();
    clips.push("once", 0.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
    let frames = clips.total_frames();
    // A narrow texture so rows wrap in the middle of a frame.
    let layout = VertexTextureLayout::new(VERTICES, frames, 1000).unwrap();
    let (mut positions, mut normals) = (Vec::new(), Vec::new());
    for f in 0..frames {
        for v in 0..VERTICES {
            let (vf, ff) = (v as f32 * 0.37, f as f32 * 0.21);
            positions.push([
                (vf + ff).sin() * 0.6,
                0.9 + (vf * 0.5).cos() * 0.8 + ff * 0.01,
                (vf * 1.7 - ff).cos() * 0.3,
            ]);
            normals.push([(vf - ff).cos(), (vf * 0.3).sin(), (vf + 2.0 * ff).sin() + 0.1]);
        }
    }
    let bounds = PositionBounds::from_points(positions.iter().copied()).unwrap();
    // Position bits are Packed64's alone; other formats record [0, 0, 0].
    let bits = if format == VertexFormat::Packed64 { allocate_position_bits(bounds.extent) } else { [0; 3] };
    let textures =
        encode_vertex_texture(&layout, format, &bounds, bits, &positions, &normals, NormalRounding::Nearest)
            .unwrap();
    // Tangent frames (--tangents): a tangent turning with the frame, both bitangent signs.
    let mut tangent_texture = vec![0u8; layout.byte_len(8) as usize];
    for f in 0..frames {
        for v in 0..VERTICES {
            let (vf, ff) = (v as f32 * 0.37, f as f32 * 0.21);
            let n = normals[(f * VERTICES + v) as usize];
            let t = [(vf + ff).cos(), 0.3, (vf - ff).sin(), if v % 3 == 0 { -1.0 } else { 1.0 }];
            let q = vat_core::format::encoding::tangent_frame_to_quat(n, t);
            let at = layout.texel_index(f, v) as usize * 8;
            for (k, c) in q.iter().enumerate() {
                let bits = vat_core::format::encoding::f32_to_f16_bits(*c).to_le_bytes();
                tangent_texture[at + 2 * k..at + 2 * k + 2].copy_from_slice(&bits);
            }
        }
    }
    let mut writer = ContainerWriter::new();
    let textures = textures.into_iter().map(|t| writer.add_blob(t)).collect();
    let tangents = Some(writer.add_blob(tangent_texture));
    let mut manifest = Manifest::new("gpu-decode-test", VERTICES);
    manifest.clips = clips.clips().to_vec();
    manifest.vertex_animation =
        Some(VertexAnimation { layout, format, bounds, position_bits: bits, textures, tangents });
    writer.finish(manifest).unwrap()
}

/// Instances covering the shader's branches. The first ones have the identity transform, so their
/// world position is the decoded object position with no trigonometry involved.
fn instances() -> Vec<InstanceRecord> {
    let mut out = vec![
        InstanceRecord { clip_a: 0, rate_a: 1.25, ..Default::default() },
        InstanceRecord { clip_a: 0, phase_offset_a: 0.93, rate_a: 0.7, ..Default::default() },
        InstanceRecord { clip_a: 1, rate_a: 2.0, ..Default::default() },
        InstanceRecord { clip_a: 1, phase_offset_a: 0.4, rate_a: 0.1, ..Default::default() },
        InstanceRecord { clip_a: 0, phase_offset_a: 0.5, rate_a: -0.9, ..Default::default() },
    ];
    // Mid-fade from the loop to the one-shot clip, and a fade that already ended.
    let mut fading =
        InstanceRecord { clip_a: 0, rate_a: 1.25, rate_b: 2.0, fade_start: 1.1, ..Default::default() };
    fading.set_clip_b(1, 0.5);
    out.push(fading);
    let mut done = fading;
    done.fade_start = -3.0;
    out.push(done);
    // Per-instance wraps (vat_core::instance::PlayMode): the one-shot clip looped and ping-ponged,
    // the looping clip clamped (held at its end: its frame 0) and ping-ponged backwards, and a fade
    // into a ping-pong slot B.
    let wrapped = |clip, offset, rate, wrap: Wrap| {
        let mut r =
            InstanceRecord { clip_a: clip, phase_offset_a: offset, rate_a: rate, ..Default::default() };
        r.set_wrap_code_a(wrap.code());
        r
    };
    out.push(wrapped(1, 0.2, 1.7, Wrap::Loop));
    out.push(wrapped(1, 0.3, 0.9, Wrap::PingPong));
    out.push(wrapped(0, 0.1, 0.6, Wrap::Clamp));
    out.push(wrapped(0, 1.6, -0.8, Wrap::PingPong));
    let mut into_ping_pong = fading;
    into_ping_pong.set_wrap_code_b(Wrap::PingPong.code());
    into_ping_pong.phase_offset_b = 1.3;
    out.push(into_ping_pong);
    // Transformed instances.
    for i in 0..6 {
        let mut r = out[i % out.len()];
        r.position = [i as f32 * 3.5 - 7.0, 0.25 * i as f32, 12.0 - i as f32 * 2.0];
        r.yaw = -2.5 + i as f32 * 1.1;
        r.scale = 0.8 + 0.1 * i as f32;
        out.push(r);
    }
    out
}

const IDENTITY_INSTANCES: usize = 12;

fn buffer(gpu: &TestGpu, label: &str, bytes: &[u8], usage: wgpu::BufferUsages) -> wgpu::Buffer {
    gpu.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytes,
        usage,
    })
}

/// Runs `cs_decode` for every instance and vertex at `time` and returns the decoded vertices.
fn gpu_decode(
    gpu: &TestGpu,
    asset: &Asset<'_>,
    records: &[InstanceRecord],
    time: f32,
    interp: Interpolation,
) -> Vec<DecodedVertex> {
    let device = &gpu.device;
    let manifest = asset.manifest();
    let va = manifest.vertex_animation.as_ref().unwrap();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("vat.wgsl"),
        source: wgpu::ShaderSource::Wgsl(gpu::SHADER_SOURCE.into()),
    });
    let layouts: Vec<wgpu::BindGroupLayout> = (0..gpu::group_count())
        .map(|g| {
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: None,
                entries: &vat_wgpu::conv::bind_group_layout_entries(g, ShaderStages::COMPUTE),
            })
        })
        .collect();
    let layout_refs: Vec<Option<&wgpu::BindGroupLayout>> = layouts.iter().map(Some).collect();
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &layout_refs,
        immediate_size: 0,
    });
    let constants = [
        (gpu::OVERRIDE_INTERPOLATION, f64::from(interp.as_u32())),
        (gpu::OVERRIDE_VERTEX_FORMAT, f64::from(gpu::vertex_format_code(va.format))),
    ];
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("cs_decode"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(gpu::ENTRY_POINT_DECODE),
        compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
        cache: None,
    });

    // Every vertex-texture binding: the format's textures, 1x1 stand-ins for the others.
    let vat_views: Vec<(&str, wgpu::TextureView)> = gpu::vertex_textures(asset)
        .unwrap()
        .iter()
        .map(|t| {
            let d = t.data;
            let size = wgpu::Extent3d { width: d.width, height: d.height, depth_or_array_layers: 1 };
            let texture = device.create_texture(&wgpu::TextureDescriptor {
                label: Some(t.name),
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: vat_wgpu::conv::map_texel_format(d.format),
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            gpu.queue.write_texture(
                texture.as_image_copy(),
                d.bytes,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(d.width * d.format.bytes_per_texel()),
                    rows_per_image: Some(d.height),
                },
                size,
            );
            (t.name, texture.create_view(&wgpu::TextureViewDescriptor::default()))
        })
        .collect();

    let mut frame = FrameUniforms::zeroed();
    frame.time = time;
    let frame_buf = buffer(gpu, "frame", bytemuck::bytes_of(&frame), wgpu::BufferUsages::UNIFORM);
    let clips = gpu::clip_records(&manifest.clips);
    let clip_buf = buffer(gpu, "clips", bytemuck::cast_slice(&clips), wgpu::BufferUsages::STORAGE);
    let constants = AssetConstants::from_manifest(manifest).unwrap();
    let asset_buf = buffer(gpu, "asset", bytemuck::bytes_of(&constants), wgpu::BufferUsages::UNIFORM);
    let inst_buf = buffer(gpu, "instances", bytemuck::cast_slice(records), wgpu::BufferUsages::STORAGE);
    let params = DecodeParams { first_instance: 0, instance_count: records.len() as u32, _pad: [0; 2] };
    let params_buf = buffer(gpu, "decode params", bytemuck::bytes_of(&params), wgpu::BufferUsages::UNIFORM);
    let count = records.len() as u64 * u64::from(VERTICES);
    let out_buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("decoded"),
        size: count * std::mem::size_of::<DecodedVertex>() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });

    // The compute layout also holds bone mode's and the culling shader's bindings, which cs_decode
    // does not read: small stand-ins.
    let bone_texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("no bone texture"),
        size: wgpu::Extent3d { width: 1, height: 1, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba32Float,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    let bone_view = bone_texture.create_view(&wgpu::TextureViewDescriptor::default());
    // The rigid mode's textures (unsigned; cs_decode never reads them).
    let rigid_texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("no rigid texture"),
        size: wgpu::Extent3d { width: 1, height: 1, depth_or_array_layers: 1 },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba32Uint,
        usage: wgpu::TextureUsages::TEXTURE_BINDING,
        view_formats: &[],
    });
    let rigid_view = rigid_texture.create_view(&wgpu::TextureViewDescriptor::default());
    let stand_in = |usage| buffer(gpu, "stand-in", &[0u8; 320], usage);
    let (storage, uniform) = (wgpu::BufferUsages::STORAGE, wgpu::BufferUsages::UNIFORM);
    let stand_ins = [stand_in(storage), stand_in(storage), stand_in(storage), stand_in(storage)];
    let (cull_params, draw_args) = (stand_in(uniform), stand_in(storage));

    // Resources by WGSL name, bound where the binding table says.
    let resource = |name: &str| -> wgpu::BindingResource<'_> {
        if let Some((_, view)) = vat_views.iter().find(|(n, _)| *n == name) {
            return wgpu::BindingResource::TextureView(view);
        }
        match name {
            "frame" => frame_buf.as_entire_binding(),
            "clips" => clip_buf.as_entire_binding(),
            "asset" => asset_buf.as_entire_binding(),
            "instances" => inst_buf.as_entire_binding(),
            "decode_params" => params_buf.as_entire_binding(),
            "decoded" => out_buf.as_entire_binding(),
            // Bone mode's textures (the morph layer's are Rgba32Float like the bone texture).
            "bone_texture" | "morph_texture" | "morph_weights" => {
                wgpu::BindingResource::TextureView(&bone_view)
            }
            "rigid_pieces" | "rigid_vertices" | "fluid_lookup" | "sprite_particles" => {
                wgpu::BindingResource::TextureView(&rigid_view)
            }
            "joints" => stand_ins[0].as_entire_binding(),
            "weights" => stand_ins[1].as_entire_binding(),
            "rest_vertices" => stand_ins[2].as_entire_binding(),
            "visible" => stand_ins[3].as_entire_binding(),
            "cull_params" => cull_params.as_entire_binding(),
            "draw_args" => draw_args.as_entire_binding(),
            other => panic!("binding {other} has no resource in this test"),
        }
    };
    let groups: Vec<wgpu::BindGroup> = layouts
        .iter()
        .enumerate()
        .map(|(g, layout)| {
            let entries: Vec<wgpu::BindGroupEntry<'_>> =
                gpu::bindings_for_stages(g as u32, ShaderStages::COMPUTE)
                    .map(|b| wgpu::BindGroupEntry { binding: b.binding, resource: resource(b.name) })
                    .collect();
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout, entries: &entries })
        })
        .collect();

    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        for (g, group) in groups.iter().enumerate() {
            pass.set_bind_group(g as u32, group, &[]);
        }
        pass.dispatch_workgroups(count.div_ceil(u64::from(gpu::DECODE_WORKGROUP_SIZE)) as u32, 1, 1);
    }
    gpu.queue.submit([encoder.finish()]);
    bytemuck::cast_slice(&gpu.read_buffer(&out_buf)).to_vec()
}

/// Angle between two vectors in degrees, as `atan2(|a x b|, a . b)` in f64 (acos of a dot product
/// near 1 would lose everything below ~0.02 degrees).
fn angle_deg(a: &[f32], b: &[f32]) -> f64 {
    let (a, b) = ([a[0], a[1], a[2]].map(f64::from), [b[0], b[1], b[2]].map(f64::from));
    let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    let cross = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    cross.atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]).to_degrees()
}

fn ulps(a: f32, b: f32) -> u32 {
    // Distance in representable f32 values (both finite; +0 and -0 are 0 apart).
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        if i < 0 { i32::MIN.wrapping_sub(i) } else { i }
    };
    key(a).abs_diff(key(b))
}

/// Largest difference per axis (metres, object space) the shader may have from the reference for an
/// identity-transform instance of an asset in `format` with `bounds`, derived from the operations they
/// share (see the test).
fn object_space_bound(format: VertexFormat, bounds: &PositionBounds, a: usize) -> f32 {
    let (min, extent) = (bounds.min[a], bounds.extent[a]);
    // Fused multiply-adds: at most 4 fused steps in the blend plus the decode's mul-add, each within
    // half an ulp of the largest term: 4 * 2^-23 * (|min| + extent).
    let fused = 4.0 * f32::EPSILON * (min.abs() + extent);
    // Quantised formats divide f32(q) / f32(max_q): Vulkan allows 2.5 ulp for a division where the
    // reference rounds correctly (0.5 ulp), so 3 ulp of a value <= 1 (<= 3 * 2^-24) per texel, times
    // the weights' absolute sum (<= 1.25, Catmull-Rom), times the extent. Float formats load their
    // values exactly (binary16 widens to f32 exactly) and divide nothing.
    let division = match format {
        VertexFormat::F16 | VertexFormat::F32 => 0.0,
        _ => 1.25 * 3.0 * 2f32.powi(-24) * extent,
    };
    fused + division
}

#[test]
fn gpu_decode_matches_the_cpu_reference_decoder() {
    let gpu = test_gpu();
    println!("adapter: {} ({:?}, driver {})", gpu.info.name, gpu.info.device_type, gpu.info.driver_info);
    for format in ALL_VERTEX_FORMATS {
        let bytes = bake(format);
        let asset = Asset::parse(&bytes).unwrap();
        check_format(&gpu, &asset, format);
    }
}

/// Decodes every instance of [`instances`] at several times in every interpolation mode on the GPU and
/// compares with the CPU reference; prints the figures and panics past the bounds.
fn check_format(gpu: &TestGpu, asset: &Asset<'_>, format: VertexFormat) {
    let view = VertexAnimationView::from_asset(asset).unwrap();
    assert_eq!(view.format, format);
    let records = instances();
    let (mut format_exact, mut format_total, mut format_max, mut format_max_bound) = (0, 0, 0f32, 0f32);
    for interp in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
        for time in [0.0f32, 0.37, 1.3, 1.6, 7.77] {
            let decoded = gpu_decode(gpu, asset, &records, time, interp);
            assert_eq!(decoded.len(), records.len() * VERTICES as usize);
            let (mut exact, mut total, mut max_ulps_identity, mut max_abs_moved) =
                (0usize, 0usize, 0u32, 0f32);
            let (mut max_normal_deg, mut max_tangent_deg) = (0f64, 0f64);
            for (i, record) in records.iter().enumerate() {
                for v in 0..VERTICES {
                    let cpu = decode_vertex(&view, record, time, v, interp).unwrap();
                    let g = decoded[i * VERTICES as usize + v as usize];
                    for a in 0..3 {
                        total += 1;
                        exact += usize::from(g.position[a].to_bits() == cpu.world_position[a].to_bits());
                        if i < IDENTITY_INSTANCES {
                            max_ulps_identity =
                                max_ulps_identity.max(ulps(g.position[a], cpu.world_position[a]));
                        } else {
                            max_abs_moved = max_abs_moved.max((g.position[a] - cpu.world_position[a]).abs());
                        }
                    }
                    max_normal_deg = max_normal_deg.max(angle_deg(&g.normal[..3], &cpu.world_normal));
                    max_tangent_deg =
                        max_tangent_deg.max(angle_deg(&g.tangent[..3], &cpu.world_tangent[..3]));
                    assert_eq!(g.tangent[3], cpu.world_tangent[3], "bitangent sign, instance {i} vertex {v}");
                    let perpendicular = (0..3).map(|a| g.tangent[a] * g.normal[a]).sum::<f32>().abs();
                    assert!(perpendicular < 1e-5, "tangent . normal = {perpendicular}");
                    assert_eq!(g.position[3], 1.0);
                }
            }
            println!(
                "{format:?} {interp:?} t={time}: {exact}/{total} position components bit-identical; identity instances max \
                 {max_ulps_identity} ulp; transformed instances max {max_abs_moved:e} m; normals max {max_normal_deg:.2e} deg; \
                 tangents max {max_tangent_deg:.2e} deg"
            );
            // Object space (identity transform): the shader and the reference perform the same f32
            // operations, but WGSL lets a driver fuse a*b+c into one rounding (the reference never does).
            // Each fused step of the blend moves its partial sum by at most half an ulp of the largest
            // term (normalised values <= 1, Catmull-Rom weights' absolute sum <= 1.25), and there are at
            // most 4 such steps plus the decode's mul-add: |d| <= 4 * 2^-23 * (|min| + extent) per axis.
            // Cancellation in the cubic sum makes a ulp count of the result meaningless near 0, so the
            // bound is absolute; the ulp figure is printed for information.
            for (i, record) in records.iter().enumerate().take(IDENTITY_INSTANCES) {
                for v in 0..VERTICES {
                    let cpu = decode_vertex(&view, record, time, v, interp).unwrap();
                    let g = decoded[i * VERTICES as usize + v as usize];
                    for a in 0..3 {
                        let bound = object_space_bound(format, &view.bounds, a);
                        let d = (g.position[a] - cpu.world_position[a]).abs();
                        format_max = format_max.max(d);
                        format_max_bound = format_max_bound.max(bound);
                        assert!(
                            d <= bound,
                            "{format:?} {interp:?} t={time} instance {i} vertex {v} axis {a}: {d} > {bound}"
                        );
                    }
                }
            }
            // Transformed: WGSL's sin/cos are only required to be within 2^-11 absolute; a GPU's are far
            // better in practice, but the honest bound is 2^-11 * |scale * p| (<= 1.3 * 1.7 m) per term,
            // plus the object-space bound: 2 * 2^-11 * 2.3 m.
            assert!(
                max_abs_moved <= 2.0 * 2f32.powi(-11) * 2.3,
                "{format:?} {interp:?} t={time}: {max_abs_moved} m"
            );
            // Normals: a few f32 roundings of a unit vector (~1e-7 rad each) plus the sin/cos difference.
            assert!(max_normal_deg < 1e-4, "{format:?} {interp:?} t={time}: normal {max_normal_deg} deg");
            // Tangents: the same quaternion decoded (a square root), made perpendicular to the
            // normal above and turned by the yaw: the normal's error twice over.
            assert!(max_tangent_deg < 2e-4, "{format:?} {interp:?} t={time}: tangent {max_tangent_deg} deg");
            format_exact += exact;
            format_total += total;
        }
    }
    println!(
        "{format:?} overall: {format_exact}/{format_total} position components bit-identical; identity instances \
         max {format_max:e} m (bound {format_max_bound:e} m)"
    );
}
