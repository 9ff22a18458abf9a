//! The conventional baseline of `vat bench`: **the comparator, not the product path**.
//!
//! What VAT replaces: every character's mesh skinned on the CPU every frame (vat-bake's linear
//! blend skinning over the humanoid's bones, full mesh, the pose of clip A of its record at the
//! frame's time; cross-fades are not blended), moved to world space on the CPU, uploaded, and drawn
//! by a tiny pipeline of its own ([`BASELINE_WGSL`]) that only reads the uploaded vertices and
//! shades them with one light. It skins in chunks of [`CHUNK`] characters: skin a chunk, upload it,
//! draw it, submit, next chunk (so the upload buffer is bounded whatever the crowd size).

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};
use vat_bake::rig::Rig;
use vat_bake::skin::{VertexSet, skin_frames_into};
use vat_core::crowd::{Camera, Crowd, CrowdAsset};
use vat_core::instance::InstanceRecord;
use vat_core::playback;

use super::{BenchArgs, Scenario, baseline_frames, build_crowd, median, ms};

/// Characters skinned (and uploaded and drawn) at a time.
pub(crate) const CHUNK: usize = 256;

/// Bytes uploaded per skinned vertex: position and normal, 3 x f32 each.
pub(crate) const BYTES_PER_VERTEX: u64 = 24;

/// CPU skinning of whole crowds, one thread.
pub(crate) struct Skinner<'a> {
    rig: &'a Rig,
    set: VertexSet,
    asset: CrowdAsset,
    /// Crowd clip index -> rig clip index.
    clip_map: Vec<usize>,
    samples: Vec<(usize, f32)>,
    /// World-space positions of the last chunk, `CHUNK * vertex_count`.
    pub(crate) positions: Vec<[f32; 3]>,
    /// World-space normals of the last chunk.
    pub(crate) normals: Vec<[f32; 3]>,
    pool: rayon::ThreadPool,
}

impl<'a> Skinner<'a> {
    /// Skinning state for `rig`, whose clips must include every clip of `asset` (by name).
    pub(crate) fn new(rig: &'a Rig, asset: &CrowdAsset) -> Result<Self> {
        let set = VertexSet::from_rig(rig).context("baseline: vertex set of the rig")?;
        let clip_map = asset
            .clips
            .iter()
            .map(|c| {
                rig.clips
                    .iter()
                    .position(|r| r.name == c.name)
                    .ok_or_else(|| anyhow!("baseline: the rig has no clip {:?}", c.name))
            })
            .collect::<Result<Vec<_>>>()?;
        let n = set.vertex_count();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().context("baseline: thread pool")?;
        Ok(Self {
            rig,
            set,
            asset: asset.clone(),
            clip_map,
            samples: Vec::with_capacity(CHUNK),
            positions: vec![[0.0; 3]; CHUNK * n],
            normals: vec![[0.0; 3]; CHUNK * n],
            pool,
        })
    }

    /// Vertices per character.
    pub(crate) fn vertex_count(&self) -> usize {
        self.set.vertex_count()
    }

    /// The merged triangle list of the skinned mesh.
    pub(crate) fn indices(&self) -> &[u32] {
        &self.set.indices
    }

    /// Skins `records` (at most [`CHUNK`]) at epoch-relative `time` into `positions` / `normals`
    /// (world space), on the calling thread. Returns the vertices written.
    pub(crate) fn skin_chunk(&mut self, time: f32, records: &[InstanceRecord]) -> Result<usize> {
        let n = self.set.vertex_count();
        self.samples.clear();
        for r in records {
            let ci = (r.clip_a as usize).min(self.clip_map.len().saturating_sub(1));
            let clip = &self.asset.clips[ci];
            let phase = playback::phase(r.phase_offset_a, time, r.rate_a, clip.mode);
            let rc = &self.rig.clips[self.clip_map[ci]];
            self.samples.push((self.clip_map[ci], rc.start + phase * rc.duration()));
        }
        let len = records.len() * n;
        let (rig, set, samples) = (self.rig, &self.set, &self.samples);
        let (positions, normals) = (&mut self.positions[..len], &mut self.normals[..len]);
        // One thread: rayon inside skin_frames_into runs on this one-thread pool.
        self.pool.install(|| skin_frames_into(rig, set, samples, positions, normals, None))?;
        for (k, r) in records.iter().enumerate() {
            let (s, c) = r.yaw.sin_cos();
            let range = k * n..(k + 1) * n;
            for p in &mut self.positions[range.clone()] {
                let (x, z) = (c * p[0] + s * p[2], c * p[2] - s * p[0]);
                *p = [
                    x * r.scale + r.position[0],
                    p[1] * r.scale + r.position[1],
                    z * r.scale + r.position[2],
                ];
            }
            for q in &mut self.normals[range] {
                *q = [c * q[0] + s * q[2], q[1], c * q[2] - s * q[0]];
            }
        }
        Ok(len)
    }

    /// Skins the whole crowd once; returns the bytes that would be uploaded.
    fn skin_crowd(&mut self, crowd: &Crowd) -> Result<u64> {
        let time = crowd.shader_time();
        let mut bytes = 0;
        for chunk in crowd.records().chunks(CHUNK) {
            let v = self.skin_chunk(time, chunk)?;
            black_box((&self.positions[..v], &self.normals[..v]));
            bytes += v as u64 * BYTES_PER_VERTEX;
        }
        Ok(bytes)
    }

    /// The baseline's CPU cost per frame at `n` characters (static demo crowd, no renderer).
    pub(crate) fn cpu_run(&mut self, n: u32, args: &BenchArgs) -> Result<Value> {
        let (mut crowd, _, _) = build_crowd(&self.asset, n, Scenario::Static);
        let t = Instant::now();
        crowd.advance(1.0 / 60.0);
        self.skin_crowd(&crowd)?;
        let frames = baseline_frames(args, ms(t));
        let (mut sim, mut skin, mut total) = (Vec::new(), Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..frames {
            let t0 = Instant::now();
            crowd.advance(1.0 / 60.0);
            let t_sim = ms(t0);
            let t1 = Instant::now();
            bytes = self.skin_crowd(&crowd)?;
            skin.push(ms(t1));
            sim.push(t_sim);
            total.push(ms(t0));
        }
        Ok(json!({
            "instances": n,
            "measured": true,
            "frames": frames,
            "vertices_per_frame": n as u64 * self.vertex_count() as u64,
            "simulation_ms": median(&sim),
            "skin_ms": median(&skin),
            "total_ms": median(&total),
            "upload_bytes": bytes,
        }))
    }
}

/// The comparator's shader: reads world-space skinned vertices from two storage buffers
/// (`instance_index * vertex_count + vertex_index`) and shades them with one directional light.
pub(crate) const BASELINE_WGSL: &str = r"
struct Uniforms {
    view_proj: mat4x4<f32>,
    sun: vec4<f32>,
    vertex_count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> u: Uniforms;
@group(0) @binding(1) var<storage, read> positions: array<f32>;
@group(0) @binding(2) var<storage, read> normals: array<f32>;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) ii: u32) -> VsOut {
    let v = (ii * u.vertex_count + vi) * 3u;
    let p = vec3<f32>(positions[v], positions[v + 1u], positions[v + 2u]);
    let n = vec3<f32>(normals[v], normals[v + 1u], normals[v + 2u]);
    var out: VsOut;
    out.clip = u.view_proj * vec4<f32>(p, 1.0);
    out.normal = n;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let l = max(dot(normalize(in.normal), u.sun.xyz), 0.0) * 0.7 + 0.3;
    return vec4<f32>(vec3<f32>(0.8, 0.75, 0.7) * l, 1.0);
}
";

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Uniforms {
    view_proj: [[f32; 4]; 4],
    sun: [f32; 4],
    vertex_count: u32,
    _pad: [u32; 3],
}

const _: () = assert!(std::mem::size_of::<Uniforms>() == 96);

/// The comparator pipeline with its own colour + depth target.
pub(crate) struct Comparator {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    uniforms: wgpu::Buffer,
    positions: wgpu::Buffer,
    normals: wgpu::Buffer,
    indices: wgpu::Buffer,
    index_count: u32,
    vertex_count: u32,
    color: wgpu::TextureView,
    depth: wgpu::TextureView,
}

impl Comparator {
    /// Creates the pipeline, buffers for one chunk of `skinner`'s mesh and a target of `size`.
    pub(crate) fn new(device: &wgpu::Device, size: [u32; 2], skinner: &Skinner<'_>) -> Self {
        use wgpu::util::DeviceExt;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("vat bench baseline (comparator)"),
            source: wgpu::ShaderSource::Wgsl(BASELINE_WGSL.into()),
        });
        let storage = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only: true },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("baseline"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage(1),
                storage(2),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("baseline"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let color_format = wgpu::TextureFormat::Rgba8UnormSrgb;
        let depth_format = wgpu::TextureFormat::Depth32Float;
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("baseline"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleList,
                front_face: wgpu::FrontFace::Ccw,
                cull_mode: Some(wgpu::Face::Back),
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: depth_format,
                depth_write_enabled: Some(true),
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: wgpu::StencilState::default(),
                bias: wgpu::DepthBiasState::default(),
            }),
            multisample: wgpu::MultisampleState::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[Some(color_format.into())],
            }),
            multiview_mask: None,
            cache: None,
        });
        let n = skinner.vertex_count() as u64;
        let chunk_bytes = CHUNK as u64 * n * 12;
        let buffer = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: chunk_bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let positions = buffer("baseline positions");
        let normals = buffer("baseline normals");
        let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("baseline uniforms"),
            size: std::mem::size_of::<Uniforms>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let indices = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("baseline indices"),
            contents: bytemuck::cast_slice(skinner.indices()),
            usage: wgpu::BufferUsages::INDEX,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("baseline"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniforms.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: positions.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: normals.as_entire_binding() },
            ],
        });
        let texture = |format, usage| {
            device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some("baseline target"),
                    size: wgpu::Extent3d { width: size[0], height: size[1], depth_or_array_layers: 1 },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                })
                .create_view(&wgpu::TextureViewDescriptor::default())
        };
        let color =
            texture(color_format, wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC);
        let depth = texture(depth_format, wgpu::TextureUsages::RENDER_ATTACHMENT);
        Self {
            pipeline,
            bind_group,
            uniforms,
            positions,
            normals,
            indices,
            index_count: skinner.indices().len() as u32,
            vertex_count: n as u32,
            color,
            depth,
        }
    }

    /// One frame: skins `crowd` chunk by chunk, uploads and draws each chunk (one submission per
    /// chunk). Returns the bytes uploaded. Does not wait for the GPU.
    pub(crate) fn frame(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        skinner: &mut Skinner<'_>,
        crowd: &Crowd,
        camera: &Camera,
    ) -> Result<u64> {
        let u = Uniforms {
            view_proj: camera.view_proj,
            sun: [0.37, 0.74, 0.28, 0.0],
            vertex_count: self.vertex_count,
            _pad: [0; 3],
        };
        queue.write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&u));
        let time = crowd.shader_time();
        let mut bytes = 0;
        for (k, chunk) in crowd.records().chunks(CHUNK).enumerate() {
            let v = skinner.skin_chunk(time, chunk)?;
            queue.write_buffer(&self.positions, 0, bytemuck::cast_slice(&skinner.positions[..v]));
            queue.write_buffer(&self.normals, 0, bytemuck::cast_slice(&skinner.normals[..v]));
            bytes += v as u64 * BYTES_PER_VERTEX;
            let mut encoder = device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("baseline chunk") });
            {
                let first = k == 0;
                let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("baseline"),
                    color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                        view: &self.color,
                        depth_slice: None,
                        resolve_target: None,
                        ops: wgpu::Operations {
                            load: if first {
                                wgpu::LoadOp::Clear(wgpu::Color { r: 0.55, g: 0.65, b: 0.8, a: 1.0 })
                            } else {
                                wgpu::LoadOp::Load
                            },
                            store: wgpu::StoreOp::Store,
                        },
                    })],
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &self.depth,
                        depth_ops: Some(wgpu::Operations {
                            load: if first { wgpu::LoadOp::Clear(1.0) } else { wgpu::LoadOp::Load },
                            store: wgpu::StoreOp::Store,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                });
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, &self.bind_group, &[]);
                pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..self.index_count, 0, 0..chunk.len() as u32);
            }
            queue.submit([encoder.finish()]);
        }
        Ok(bytes)
    }
}
