//! Block-parallel encoding of the vertex textures.

use super::*;

/// Texels per parallel task when encoding given arrays ([`encode_vertex_textures`]): enough to
/// amortise a task, few enough to balance two cores.
#[cfg(test)]
pub(super) const ENCODE_CHUNK_TEXELS: usize = 1 << 15;

/// The vertex textures (one per texture of the format) and the tangent texture, if baked.
pub(super) type EncodedTextures = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// One block of [`encode_by_block`]: its index, its part of each vertex texture and of the
/// tangent texture.
pub(super) type TextureBlock<'a> = (usize, Vec<&'a mut [u8]>, Option<&'a mut [u8]>);

/// One parallel task's reused buffers in [`encode_by_block`]: a block's skinned attributes and its
/// encoded texels.
#[derive(Default)]
pub(super) struct BlockScratch {
    pub(super) positions: Vec<[f32; 3]>,
    pub(super) normals: Vec<[f32; 3]>,
    pub(super) tangents: Vec<[f32; 4]>,
    pub(super) encoded: Vec<Vec<u8>>,
}

/// The vertex textures of `format` (and the `Rgba16Float` tangent texture when `with_tangents`),
/// each padded with zeros to the layout's rectangle, encoded in parallel blocks of `block` texels
/// (`block >= 1`): block `b` covers texels `b * block ..` (the last one may be shorter);
/// `fill(texels, positions, normals, tangents)` writes that block's skinned attributes, which are
/// then encoded with [`encoding::encode_vertex_texels`] (tangent frames with
/// [`encoding::tangent_frame_to_quat`] of the normal and tangent) straight into the block's part
/// of the textures. Each block is encoded by one task from its own data, so the bytes equal
/// [`encoding::encode_vertex_texture`]'s whatever the thread count (tested); the attributes of
/// only a block per task exist at a time, in reused buffers.
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_by_block<F>(
    layout: &VertexTextureLayout,
    format: VertexFormat,
    bounds: &PositionBounds,
    bits: [u32; 3],
    rounding: NormalRounding,
    with_tangents: bool,
    block: usize,
    fill: F,
) -> Result<EncodedTextures>
where
    F: Fn(std::ops::Range<usize>, &mut [[f32; 3]], &mut [[f32; 3]], Option<&mut [[f32; 4]]>) -> Result<()>
        + Sync,
{
    let texels = layout.texel_count() as usize;
    let block = block.max(1);
    let texel_formats = format.texel_formats();
    let full_len = |bytes_per_texel: u32| layout.byte_len(bytes_per_texel) as usize;
    // Zero-filled by the allocator (padding included); the texels are then written once each.
    let mut textures: Vec<Vec<u8>> =
        texel_formats.iter().map(|f| vec![0u8; full_len(f.bytes_per_texel())]).collect();
    let mut tangent_texture = with_tangents.then(|| vec![0u8; full_len(8)]);
    // Every texture cut into the same blocks of texels, block by block.
    let mut parts: Vec<std::slice::ChunksMut<'_, u8>> = textures
        .iter_mut()
        .zip(texel_formats)
        .map(|(t, f)| {
            let size = f.bytes_per_texel() as usize;
            t[..texels * size].chunks_mut(block * size)
        })
        .collect();
    let mut tangent_parts = tangent_texture.as_mut().map(|t| t[..texels * 8].chunks_mut(block * 8));
    let blocks: Vec<TextureBlock<'_>> = (0..texels.div_ceil(block))
        .map(|b| {
            let outs = parts.iter_mut().filter_map(Iterator::next).collect();
            (b, outs, tangent_parts.as_mut().and_then(Iterator::next))
        })
        .collect();
    blocks.into_par_iter().try_for_each_init(
        BlockScratch::default,
        |scratch, (b, mut outs, tangent_out)| {
            let range = b * block..((b + 1) * block).min(texels);
            let len = range.len();
            scratch.positions.resize(len, [0.0; 3]);
            scratch.normals.resize(len, [0.0; 3]);
            if with_tangents {
                scratch.tangents.resize(len, [0.0; 4]);
            }
            let tangents = if with_tangents { Some(&mut scratch.tangents[..len]) } else { None };
            fill(range, &mut scratch.positions[..len], &mut scratch.normals[..len], tangents)?;
            scratch.encoded.resize_with(texel_formats.len(), Vec::new);
            scratch.encoded.iter_mut().for_each(Vec::clear);
            encoding::encode_vertex_texels(
                format,
                bits,
                bounds,
                &scratch.positions[..len],
                &scratch.normals[..len],
                rounding,
                &mut scratch.encoded,
            )?;
            for (out, encoded) in outs.iter_mut().zip(&scratch.encoded) {
                out.copy_from_slice(encoded);
            }
            if let Some(out) = tangent_out {
                for ((texel, t), n) in out.chunks_exact_mut(8).zip(&scratch.tangents).zip(&scratch.normals) {
                    let q = encoding::tangent_frame_to_quat(*n, *t);
                    for (c, bytes) in q.iter().zip(texel.chunks_exact_mut(2)) {
                        bytes.copy_from_slice(&encoding::f32_to_f16_bits(*c).to_le_bytes());
                    }
                }
            }
            Ok::<(), BakeError>(())
        },
    )?;
    Ok((textures, tangent_texture))
}

/// [`encoding::encode_vertex_texture`] of given arrays through [`encode_by_block`], in blocks of
/// [`ENCODE_CHUNK_TEXELS`]: the test that the blocks are encoded and placed exactly.
#[cfg(test)]
pub(super) fn encode_vertex_textures(
    layout: &VertexTextureLayout,
    format: VertexFormat,
    bounds: &PositionBounds,
    bits: [u32; 3],
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    rounding: NormalRounding,
) -> Result<Vec<Vec<u8>>> {
    if positions.len() as u64 != layout.texel_count() || normals.len() != positions.len() {
        // Let vat-core report the mismatch in its own words.
        return Ok(encoding::encode_vertex_texture(
            layout, format, bounds, bits, positions, normals, rounding,
        )?);
    }
    let fill =
        |r: std::ops::Range<usize>, p: &mut [[f32; 3]], n: &mut [[f32; 3]], _: Option<&mut [[f32; 4]]>| {
            p.copy_from_slice(&positions[r.clone()]);
            n.copy_from_slice(&normals[r]);
            Ok(())
        };
    let (textures, _) =
        encode_by_block(layout, format, bounds, bits, rounding, false, ENCODE_CHUNK_TEXELS, fill)?;
    Ok(textures)
}
