//! What each vertex looks like on the cards: its material id and its unlit albedo, in the authored
//! materials or a material variant's, as the mesh shader computes them.

use super::srgb_to_linear;
use crate::{BakeError, Result};

/// The material id of every vertex of `asset` (its `MaterialId` stream; 0 without one), for the
/// normal-depth images' alpha: the card picks an asset without materials' palette colour by it at
/// run time (with the instance's variant and tint), as the mesh does.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a material id stream that is not one id per vertex.
pub fn vertex_material_ids(asset: &vat_core::container::Asset<'_>) -> Result<Vec<u32>> {
    let m = asset.manifest();
    let n = m.vertex_count as usize;
    match asset.stream(vat_core::container::StreamKind::MaterialId) {
        Some((element, bytes)) => decode_stream(element, bytes, n)
            .map(|ids| ids.iter().map(|id| id[0].clamp(0.0, 255.0) as u32).collect())
            .ok_or_else(|| BakeError::InvalidInput {
                part: m.name.clone(),
                problem: format!(
                    "its material id stream ({} bytes, {element:?}) is not one id per vertex",
                    bytes.len()
                ),
            }),
        None => Ok(vec![0; n]),
    }
}

/// The unlit albedo (linear RGBA) of every vertex of `asset`, as the mesh shader computes a
/// fragment's base colour at that vertex with no instance tint or variant: with materials, the
/// vertex's material (`MaterialId` stream, clamped to the last material as the shader does) base
/// colour factor times its base colour texture (level 0, sRGB decoded, bilinear with the binding's
/// wrap modes) at the vertex's `Uv0`; without materials, the built-in palette's colour of the
/// material id; either times the vertex colour (`Color0`) where stored. Alpha is not coverage: an
/// impostor's coverage is the rasterised area.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a material, UV or colour stream whose length is not one element
/// per vertex, or a base colour texture binding past its texture array.
pub fn vertex_albedo(asset: &vat_core::container::Asset<'_>) -> Result<Vec<[f32; 4]>> {
    vertex_albedo_in(asset, 0)
}

/// [`vertex_albedo`] with the instance's material variant `variant`: 0 (or one past the asset's
/// [`vat_core::container::Manifest::material_variants`]) the materials as authored, `v` in
/// `1..=variants` variant `v - 1`'s materials (as the mesh shader picks them). Without materials the
/// variant changes nothing here (the palette's variants are the run time's).
///
/// # Errors
/// As [`vertex_albedo`].
pub fn vertex_albedo_in(asset: &vat_core::container::Asset<'_>, variant: u32) -> Result<Vec<[f32; 4]>> {
    use vat_core::container::StreamKind;
    let m = asset.manifest();
    let n = m.vertex_count as usize;
    let input = |problem: String| BakeError::InvalidInput { part: m.name.clone(), problem };
    let ids = match asset.stream(StreamKind::MaterialId) {
        Some((element, bytes)) => decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!(
                "its material id stream ({} bytes, {element:?}) is not one id per vertex",
                bytes.len()
            ))
        })?,
        None => vec![[0.0; 4]; n],
    };
    let uvs = match asset.stream(StreamKind::Uv0) {
        Some((element, bytes)) => Some(decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!("its UV stream ({} bytes, {element:?}) is not one UV per vertex", bytes.len()))
        })?),
        None => None,
    };
    let vertex_colors = match asset.stream(StreamKind::Color0) {
        Some((element, bytes)) => Some(decode_stream(element, bytes, n).ok_or_else(|| {
            input(format!(
                "its colour stream ({} bytes, {element:?}) is not one colour per vertex",
                bytes.len()
            ))
        })?),
        None => None,
    };
    let color_array = m.material_textures.as_ref().and_then(|t| t.color.as_ref());
    let texels = match color_array {
        Some(array) => Some(
            asset
                .get_blob(array.texels)
                .ok_or_else(|| input("its base colour texture array's texels are missing".into()))?,
        ),
        None => None,
    };
    let mut out = Vec::with_capacity(n);
    for v in 0..n {
        let id = ids[v][0] as usize;
        // Without materials the palette colour is the run time's (by the stored material id).
        let mut rgba = if m.materials.is_empty() {
            [1.0; 4]
        } else {
            let id = id.min(m.materials.len() - 1);
            // The variant's material for this id (validated: every index is a material).
            let id = match (variant as usize).checked_sub(1).and_then(|v| m.material_variants.get(v)) {
                Some(v) => v.materials.get(id).map_or(id, |&i| usize::from(i).min(m.materials.len() - 1)),
                None => id,
            };
            let material = &m.materials[id];
            let mut base = material.base_color_factor;
            if let (Some(binding), Some(array), Some(texels), Some(uvs)) =
                (&material.base_color_texture, color_array, texels, &uvs)
            {
                let t = sample_layer(array, texels, binding, [uvs[v][0], uvs[v][1]]).ok_or_else(|| {
                    input(format!("base colour texture layer {} is past its texture array", binding.layer))
                })?;
                for (b, x) in base.iter_mut().zip(t) {
                    *b *= x;
                }
            }
            base
        };
        if let Some(c) = &vertex_colors {
            for (x, y) in rgba.iter_mut().zip(c[v]) {
                *x *= y;
            }
        }
        out.push(rgba);
    }
    Ok(out)
}

/// `n` elements of a vertex stream as up to four `f32` each (integers as their value, unorm
/// formats in `[0, 1]`), or `None` when `bytes` is not `n` elements long.
pub(super) fn decode_stream(
    element: vat_core::container::ElementFormat,
    bytes: &[u8],
    n: usize,
) -> Option<Vec<[f32; 4]>> {
    use vat_core::container::ElementFormat as E;
    let size = element.byte_size() as usize;
    if bytes.len() != n.checked_mul(size)? {
        return None;
    }
    let f32_at =
        |c: &[u8], i: usize| f32::from_le_bytes([c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]]);
    let u16_at = |c: &[u8], i: usize| u16::from_le_bytes([c[2 * i], c[2 * i + 1]]);
    Some(
        bytes
            .chunks_exact(size)
            .map(|c| match element {
                E::F32x2 => [f32_at(c, 0), f32_at(c, 1), 0.0, 1.0],
                E::F32x3 => [f32_at(c, 0), f32_at(c, 1), f32_at(c, 2), 1.0],
                E::F32x4 => [f32_at(c, 0), f32_at(c, 1), f32_at(c, 2), f32_at(c, 3)],
                E::Unorm8x4 => [0, 1, 2, 3].map(|i| f32::from(c[i]) / 255.0),
                E::Unorm16x2 => {
                    [f32::from(u16_at(c, 0)) / 65535.0, f32::from(u16_at(c, 1)) / 65535.0, 0.0, 1.0]
                }
                E::Unorm16x4 => [0, 1, 2, 3].map(|i| f32::from(u16_at(c, i)) / 65535.0),
                E::U8 => [f32::from(c[0]), 0.0, 0.0, 0.0],
                E::U16 => [f32::from(u16_at(c, 0)), 0.0, 0.0, 0.0],
                E::U32 => [u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32, 0.0, 0.0, 0.0],
            })
            .map(|v| v.map(|x| if x.is_finite() { x } else { 0.0 }))
            .collect(),
    )
}

/// Texel coordinate `x` (of a `size`-texel side) wrapped as `wrap` says.
pub(super) fn wrap_texel(x: i64, size: u32, wrap: vat_core::container::TextureWrap) -> usize {
    use vat_core::container::TextureWrap;
    let size = i64::from(size.max(1));
    let wrapped = match wrap {
        TextureWrap::Repeat => x.rem_euclid(size),
        TextureWrap::ClampToEdge => x.clamp(0, size - 1),
        TextureWrap::MirroredRepeat => {
            let t = x.rem_euclid(2 * size);
            if t < size { t } else { 2 * size - 1 - t }
        }
    };
    wrapped as usize
}

/// Level 0 of the base colour layer `binding` names, sampled bilinearly at `uv` with its wrap
/// modes, as linear RGBA (sRGB decoded; alpha linear); `None` when the layer is past the texels.
fn sample_layer(
    array: &vat_core::container::TextureArray,
    texels: &[u8],
    binding: &vat_core::container::TextureBinding,
    uv: [f32; 2],
) -> Option<[f32; 4]> {
    let (w, h) = (array.width as usize, array.height as usize);
    let layer_bytes = w.checked_mul(h)?.checked_mul(4)?;
    let start = (binding.layer as usize).checked_mul(layer_bytes)?;
    let layer = texels.get(start..start.checked_add(layer_bytes)?)?;
    let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
    let fx = finite(uv[0]) * w as f32 - 0.5;
    let fy = finite(uv[1]) * h as f32 - 0.5;
    let (x0, y0) = (fx.floor(), fy.floor());
    let (tx, ty) = (fx - x0, fy - y0);
    // Far outside any texture the float-to-int cast saturates; the wrap brings it back in.
    let (x0, y0) = (x0 as i64, y0 as i64);
    let mut out = [0.0f32; 4];
    for (dx, dy, weight) in
        [(0, 0, (1.0 - tx) * (1.0 - ty)), (1, 0, tx * (1.0 - ty)), (0, 1, (1.0 - tx) * ty), (1, 1, tx * ty)]
    {
        let x = wrap_texel(x0.saturating_add(dx), array.width, binding.wrap_u);
        let y = wrap_texel(y0.saturating_add(dy), array.height, binding.wrap_v);
        let at = (y * w + x) * 4;
        let c = layer.get(at..at + 4)?;
        let linear =
            [srgb_to_linear(c[0]), srgb_to_linear(c[1]), srgb_to_linear(c[2]), f32::from(c[3]) / 255.0];
        for (o, l) in out.iter_mut().zip(linear) {
            *o += l * weight;
        }
    }
    Some(out)
}
