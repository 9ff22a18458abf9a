//! Small vector helpers and the four-lane Packed64 frame decode shared by the modes.

pub(crate) use super::*;

/// `a * (1 - w) + b * w` per component (WGSL `mix`).
pub(crate) fn mix3(a: [f32; 3], b: [f32; 3], w: f32) -> [f32; 3] {
    let k = 1.0 - w;
    [a[0] * k + b[0] * w, a[1] * k + b[1] * w, a[2] * k + b[2] * w]
}

/// `x' = c x + s z`, `z' = c z - s x`.
pub(crate) fn rotate_y(c: f32, s: f32, v: [f32; 3]) -> [f32; 3] {
    [c * v[0] + s * v[2], v[1], c * v[2] - s * v[0]]
}

/// [`decode_object_frame`] of one whole Packed64 frame read alone (point interpolation, weight 1),
/// four vertices per step in SIMD lanes: per lane exactly the operations of
/// [`encoding::decode_packed64`], [`PositionBounds::denormalize`] and [`normalize3`] (each lane an
/// IEEE f32 operation of its own; no fused multiply-add), so every result is bit for bit the scalar
/// one (tested).
pub(crate) fn packed64_frame_x4(
    view: &VertexAnimationView<'_>,
    frame: u32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    use glam::{BVec4A, Vec4};
    let n = positions.len();
    let start = view.layout.texel_index(frame, 0);
    let texture = view.textures.first().copied().unwrap_or(&[]);
    let (first, end) = (start as usize * 8, (start as usize + n) * 8);
    let bytes = texture.get(first..end).ok_or(Error::IndexOutOfRange {
        what: "texel index",
        index: start + n as u64,
        count: texture.len() as u64 / 8,
    })?;
    let b = view.position_bits.map(|b| b.min(encoding::PACKED64_MAX_AXIS_BITS));
    // dequantize_unorm's divisor per axis; 0 bits decode to 0 exactly (a flat axis).
    let max_q = b.map(|b| if b == 0 { 1.0 } else { ((1u32 << b.min(24)) - 1) as f32 });
    let zero_axis = b.map(|b| b == 0);
    let oct_max = Vec4::splat(((1u32 << encoding::PACKED64_NORMAL_BITS) - 1) as f32);
    let (min, extent) = (view.bounds.min, view.bounds.extent);
    let texel = |v: usize| {
        let t = &bytes[v * 8..v * 8 + 8];
        [u32::from_le_bytes([t[0], t[1], t[2], t[3]]), u32::from_le_bytes([t[4], t[5], t[6], t[7]])]
    };
    let normalize = |x: Vec4, y: Vec4, z: Vec4| {
        let d = x * x + y * y + z * z;
        let inv = Vec4::ONE / d.sqrt();
        let ok = d.cmpgt(Vec4::ZERO);
        (
            Vec4::select(ok, x * inv, Vec4::ZERO),
            Vec4::select(ok, y * inv, Vec4::ZERO),
            Vec4::select(ok, z * inv, Vec4::ONE),
        )
    };
    let sgn = |v: Vec4| Vec4::select(v.cmpge(Vec4::ZERO), Vec4::ONE, Vec4::NEG_ONE);
    for base in (0..n).step_by(4) {
        let lanes = (n - base).min(4);
        let mut q = [[0u32; 4]; 3];
        let mut o = [[0u32; 4]; 2];
        for l in 0..lanes {
            let (qv, ov) = encoding::unpack_texel(texel(base + l), view.position_bits);
            for a in 0..3 {
                q[a][l] = qv[a];
            }
            o[0][l] = ov[0];
            o[1][l] = ov[1];
        }
        let lane_f32 = |v: [u32; 4]| Vec4::new(v[0] as f32, v[1] as f32, v[2] as f32, v[3] as f32);
        let pos: [Vec4; 3] = std::array::from_fn(|a| {
            let nrm = if zero_axis[a] { Vec4::ZERO } else { lane_f32(q[a]) / Vec4::splat(max_q[a]) };
            Vec4::splat(min[a]) + nrm * Vec4::splat(extent[a])
        });
        let ox = lane_f32(o[0]) / oct_max * 2.0 - Vec4::ONE;
        let oy = lane_f32(o[1]) / oct_max * 2.0 - Vec4::ONE;
        let z = Vec4::ONE - ox.abs() - oy.abs();
        let folded: BVec4A = z.cmplt(Vec4::ZERO);
        let x = Vec4::select(folded, (Vec4::ONE - oy.abs()) * sgn(ox), ox);
        let y = Vec4::select(folded, (Vec4::ONE - ox.abs()) * sgn(oy), oy);
        // oct_decode_f32's normalize, then the decoder's own after the (here trivial) blend.
        let (x, y, z) = normalize(x, y, z);
        let (x, y, z) = normalize(x, y, z);
        for l in 0..lanes {
            positions[base + l] = [pos[0].to_array()[l], pos[1].to_array()[l], pos[2].to_array()[l]];
            normals[base + l] = [x.to_array()[l], y.to_array()[l], z.to_array()[l]];
        }
    }
    Ok(())
}

/// `vat_normalize` of the shader: WGSL `normalize`, with the zero vector mapped to +Z instead of NaN.
pub(crate) fn normalize3(v: [f32; 3]) -> [f32; 3] {
    let d = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    if d > 0.0 {
        let inv = 1.0 / d.sqrt();
        [v[0] * inv, v[1] * inv, v[2] * inv]
    } else {
        [0.0, 0.0, 1.0]
    }
}

/// The decoded-frame buffers of the whole-frame decoders: one position and one normal per vertex
/// (`n`), or [`Error::OutOfRange`].
pub(crate) fn check_frame_len(n: usize, positions: &[[f32; 3]], normals: &[[f32; 3]]) -> Result<()> {
    if positions.len() != n || normals.len() != n {
        return Err(Error::OutOfRange {
            what: "decoded frame length",
            value: format!("{} / {}", positions.len(), normals.len()),
            expected: "one position and one normal per vertex",
        });
    }
    Ok(())
}
