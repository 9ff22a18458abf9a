//! `vat_texel_xy` (vat.wgsl), the texel address every shader uses instead of an integer division, run
//! as the shader source holds it on a real wgpu device (lavapipe in CI): for every row a device holds
//! (16,384) of textures of every kind of width the layouts make, the texels either side of each row's
//! start and its last texel map to exactly `(t % width, t / width)`, what the CPU reference computes.

use vat_core::backend::gpu::SHADER_SOURCE;
use vat_tests::test_gpu;
use wgpu::util::DeviceExt;

/// `vat_texel_xy`'s text, cut from the one shader source (so the test runs what the shaders run).
fn texel_xy_source() -> &'static str {
    let start = SHADER_SOURCE.find("fn vat_texel_xy(").expect("vat.wgsl defines vat_texel_xy");
    let len = SHADER_SOURCE[start..].find("\n}\n").expect("vat_texel_xy ends with a closing brace") + 3;
    &SHADER_SOURCE[start..start + len]
}

#[test]
fn the_shaders_texel_address_is_exact_for_every_row_a_device_holds() {
    let widths = [1u32, 2, 3, 7, 64, 1000, 2439, 4095, 4096, 4097, 9999, 16384];
    let mut inputs: Vec<[u32; 2]> = Vec::new();
    for &w in &widths {
        for y in 0..16384u32 {
            let start = y * w;
            for t in [start.wrapping_sub(1), start, start + 1, start + w - 1] {
                if t != u32::MAX && t / w < 16384 {
                    inputs.push([t, w]);
                }
            }
        }
    }
    let source = format!(
        "@group(0) @binding(0) var<storage, read> inputs: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> outputs: array<vec2<i32>>;
{}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    let i = id.x;
    if i < arrayLength(&inputs) {{
        outputs[i] = vat_texel_xy(inputs[i].x, inputs[i].y);
    }}
}}
",
        texel_xy_source()
    );
    let gpu = test_gpu();
    let device = &gpu.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("vat_texel_xy"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("vat_texel_xy"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("texel indices and widths"),
        contents: bytemuck::cast_slice(&inputs),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let output_buf = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("texel coordinates"),
        size: (inputs.len() * 8) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: input_buf.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: output_buf.as_entire_binding() },
        ],
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        let groups = (inputs.len() as u32).div_ceil(64);
        assert!(groups <= 65535, "{groups} workgroups: more than one dispatch dimension holds");
        pass.dispatch_workgroups(groups, 1, 1);
    }
    gpu.queue.submit([encoder.finish()]);
    let bytes = gpu.read_buffer(&output_buf);
    let outputs: &[[i32; 2]] = bytemuck::cast_slice(&bytes);
    assert_eq!(outputs.len(), inputs.len());
    let wrong: Vec<String> = inputs
        .iter()
        .zip(outputs)
        .filter(|([t, w], xy)| **xy != [(t % w) as i32, (t / w) as i32])
        .take(8)
        .map(|([t, w], xy)| {
            format!("texel {t} of a texture {w} wide: {xy:?}, expected [{}, {}]", t % w, t / w)
        })
        .collect();
    assert!(wrong.is_empty(), "on {}: {wrong:#?}", gpu.info.name);
    println!("{} texel addresses exact on {}", inputs.len(), gpu.info.name);
}
