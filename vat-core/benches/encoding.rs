//! Encode and decode throughput of every vertex format, one core:
//! `cargo bench -p vat-core --bench encoding`.
//!
//! Input: 65,536 texels of positions spread uniformly in a humanoid-sized box (1.65 x 2.19 x 1.35 m)
//! and random unit normals (fixed seed), nearest normal rounding.
//!
//! - `encode/FORMAT`: `encode_vertex_texels` of the whole run into reused texture vectors.
//! - `decode/FORMAT`: `decode_vertex_texel` of every texel (the CPU reference decoder's texel read,
//!   normalised position + unit normal).
//!
//! Throughput is reported in texels (vertex-frames) per second.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use vat_core::format::encoding::{
    NormalRounding, PositionBounds, VertexFormat, allocate_position_bits, decode_vertex_texel,
    encode_vertex_texels,
};

const TEXELS: usize = 65_536;

const FORMATS: [(VertexFormat, &str); 6] = [
    (VertexFormat::Packed64, "packed64"),
    (VertexFormat::Unorm16, "unorm16"),
    (VertexFormat::F16, "f16"),
    (VertexFormat::F32, "f32"),
    (VertexFormat::Unorm8, "unorm8"),
    (VertexFormat::Split8, "split8"),
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }
}

fn input() -> (PositionBounds, Vec<[f32; 3]>, Vec<[f32; 3]>) {
    let bounds = PositionBounds { min: [-0.8, 0.0, -0.7], extent: [1.65, 2.19, 1.35] };
    let mut rng = Rng(7);
    let positions =
        (0..TEXELS).map(|_| std::array::from_fn(|a| bounds.min[a] + rng.next() * bounds.extent[a])).collect();
    let normals = (0..TEXELS)
        .map(|_| {
            loop {
                let v: [f32; 3] = std::array::from_fn(|_| rng.next() * 2.0 - 1.0);
                let l = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                if l > 0.1 && l <= 1.0 {
                    break v.map(|c| c / l);
                }
            }
        })
        .collect();
    (bounds, positions, normals)
}

fn encoding(c: &mut Criterion) {
    let (bounds, positions, normals) = input();
    let bits = allocate_position_bits(bounds.extent);
    let mut group = c.benchmark_group("encoding");
    group.sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    group.throughput(Throughput::Elements(TEXELS as u64));
    for (format, name) in FORMATS {
        let mut textures: Vec<Vec<u8>> = vec![Vec::new(); format.texel_formats().len()];
        group.bench_function(BenchmarkId::new("encode", name), |b| {
            b.iter(|| {
                for t in &mut textures {
                    t.clear();
                }
                let r = encode_vertex_texels(
                    format,
                    bits,
                    &bounds,
                    &positions,
                    &normals,
                    NormalRounding::Nearest,
                    &mut textures,
                );
                assert!(r.is_ok(), "encode {name}");
                black_box(&textures);
            })
        });
        // Encoded once more here, so the decode bench has its input when run alone (a filter).
        let mut encoded: Vec<Vec<u8>> = vec![Vec::new(); format.texel_formats().len()];
        let r = encode_vertex_texels(
            format,
            bits,
            &bounds,
            &positions,
            &normals,
            NormalRounding::Nearest,
            &mut encoded,
        );
        assert!(r.is_ok(), "encode {name}");
        let views: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        group.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| {
                let mut sum = 0.0f32;
                for t in 0..TEXELS as u64 {
                    match decode_vertex_texel(format, bits, &views, t) {
                        Ok(d) => sum += d.position[0] + d.normal[2],
                        Err(e) => panic!("decode {name}: {e}"),
                    }
                }
                black_box(sum)
            })
        });
    }
    group.finish();
}

// criterion's macros generate undocumented public functions.
#[allow(missing_docs)]
mod harness {
    criterion::criterion_group!(benches, super::encoding);
}
criterion_main!(harness::benches);
