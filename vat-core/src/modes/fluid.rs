//! The fluid mode (dynamic remeshing): a mesh whose vertex and triangle counts change every frame.
//!
//! A fluid asset ([`crate::container::FluidAnimation`]) is drawn as a *pool* of triangles sized
//! for its busiest frame, three unshared *corners* each ([`crate::container::Manifest::vertex_count`]
//! `== 3 * pool_triangles`). Two dependent fetches place a corner at frame `f`:
//!
//! 1. the *lookup texture* (`Rgba32Uint`, four `u32` entries per texel) gives the corner's vertex:
//!    entry `e = f * 4 * texels_per_frame + corner`, lane `e % 4` of texel `e / 4`. It is a texel
//!    index into the vertex animation texture, or [`COLLAPSED`];
//! 2. the vertex animation texture (any [`crate::encoding::VertexFormat`], with its own bounds)
//!    holds the frames' vertices back to back; that texel is decoded as a soft asset's would be.
//!
//! At frame `f` the first `triangle_count` pool triangles are the frame's triangles, in the
//! source's order; the others are *collapsed*: their corners are drawn at the shaders'
//! `HIDDEN_POSITION`, outside the clip volume, so they rasterise nothing.
//!
//! **No interpolation.** Two frames of a fluid have different vertices and triangles, so there is
//! nothing to blend: a corner shows the frame that point interpolation picks
//! ([`crate::playback::Interpolation::Point`]: the nearer of the two frames around the phase),
//! whatever the pipeline's interpolation, and an instance's cross-fade is ignored (clip A plays).
//! The error bound of every decoded vertex is that of the vertex format
//! ([`crate::encoding::VertexFormat`]) in the asset's position box.
//!
//! **Motion vectors** need the same surface point at the previous frame, which a change of
//! topology does not have: a fluid vertex's previous position is its position now moved by the
//! previous instance record (the instance's and the camera's motion, not the surface's own).

pub mod reference;
mod section;

pub(crate) use section::*;

use crate::{Error, Result};

/// The lookup entry of a collapsed corner (and of the unused lanes after a frame's last corner).
pub const COLLAPSED: u32 = u32::MAX;

/// Texel format of the lookup texture.
pub const LOOKUP_TEXEL_FORMAT: crate::encoding::TexelFormat = crate::encoding::TexelFormat::Rgba32Uint;

/// Lookup entries per texel of [`LOOKUP_TEXEL_FORMAT`].
pub const LOOKUP_ENTRIES_PER_TEXEL: u32 = 4;

/// Lookup texels per frame of a pool of `pool_triangles` triangles: `ceil(3 * pool_triangles / 4)`.
pub const fn lookup_texels_per_frame(pool_triangles: u32) -> u32 {
    (pool_triangles as u64 * 3).div_ceil(LOOKUP_ENTRIES_PER_TEXEL as u64) as u32
}

/// The lookup entry of `corner` at absolute frame `frame`: the vertex texel index, or
/// [`COLLAPSED`].
///
/// # Errors
/// [`Error::IndexOutOfRange`] when the entry lies outside `lookup` (`texels_per_frame` lookup
/// texels per frame, 16 bytes each).
pub fn lookup_entry(lookup: &[u8], texels_per_frame: u32, frame: u32, corner: u32) -> Result<u32> {
    let e = u64::from(frame) * u64::from(texels_per_frame) * u64::from(LOOKUP_ENTRIES_PER_TEXEL)
        + u64::from(corner);
    let count = lookup.len() as u64 / 4;
    let start = usize::try_from(e)
        .ok()
        .and_then(|i| i.checked_mul(4))
        .filter(|_| e < count)
        .ok_or(Error::IndexOutOfRange { what: "fluid lookup entry", index: e, count })?;
    let b = &lookup[start..start + 4];
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Builds the lookup texture bytes of a fluid bake: `frames[f]` is frame `f`'s triangles as
/// vertex indices local to the frame, `first_vertex[f]` the frame's first texel in the vertex
/// texture. The texture is `width * height` texels (the layout's), each frame
/// `lookup_texels_per_frame(pool_triangles)` texels, zero-filled past the last frame.
///
/// # Errors
/// [`Error::OutOfRange`] when a frame has more triangles than the pool or a local index plus its
/// frame's first vertex does not fit a `u32` below [`COLLAPSED`].
pub fn build_lookup(
    pool_triangles: u32,
    frames: &[&[[u32; 3]]],
    first_vertex: &[u32],
    texel_capacity: u64,
) -> Result<Vec<u8>> {
    let per_frame = u64::from(lookup_texels_per_frame(pool_triangles)) * u64::from(LOOKUP_ENTRIES_PER_TEXEL);
    let mut out = Vec::with_capacity(usize::try_from(texel_capacity * 16).unwrap_or(0));
    for (tris, &first) in frames.iter().zip(first_vertex) {
        if tris.len() as u64 > u64::from(pool_triangles) {
            return Err(Error::OutOfRange {
                what: "fluid frame triangle count",
                value: tris.len().to_string(),
                expected: "<= the pool's triangle count",
            });
        }
        let mut written = 0u64;
        for &i in tris.iter().flatten() {
            let v = first.checked_add(i).filter(|&v| v != COLLAPSED).ok_or(Error::OutOfRange {
                what: "fluid vertex index",
                value: format!("{first} + {i}"),
                expected: "below 2^32 - 1",
            })?;
            out.extend_from_slice(&v.to_le_bytes());
            written += 1;
        }
        for _ in written..per_frame {
            out.extend_from_slice(&COLLAPSED.to_le_bytes());
        }
    }
    out.resize(usize::try_from(texel_capacity * 16).unwrap_or(out.len()).max(out.len()), 0);
    Ok(out)
}

/// The fluid mode's entry in the mode table ([`crate::modes::MODES`]).
pub(crate) const ENTRY: crate::modes::ModeEntry = crate::modes::ModeEntry {
    mode: crate::container::VatMode::Fluid,
    present: |m| m.fluid_animation.is_some(),
    validate: validate_fluid_section,
    textures: |asset| vec![("fluid_lookup", "vat fluid lookup", fluid_lookup_texture(asset))],
    program: Some(crate::pipeline::Program::Fluid),
    decode_entry_point: Some(crate::gpu::ENTRY_POINT_DECODE_FLUID),
};

/// The fluid mode's lookup texture (group 1, binding 22), borrowed from a validated asset: that of
/// its [`crate::container::FluidAnimation`] ([`crate::fluid::LOOKUP_TEXEL_FORMAT`]), or a 1x1 zero
/// `Rgba32Uint` stand-in for other assets (their pipelines never read it).
pub fn fluid_lookup_texture<'a>(asset: &crate::container::Asset<'a>) -> crate::gpu::TextureData<'a> {
    let dummy = crate::gpu::TextureData {
        width: 1,
        height: 1,
        format: crate::encoding::TexelFormat::Rgba32Uint,
        bytes: &crate::gpu::ZERO_RGBA32U_TEXEL,
    };
    let Some(fa) = asset.manifest().fluid_animation.as_ref() else { return dummy };
    match asset.get_blob(fa.lookup) {
        Some(bytes) => crate::gpu::TextureData {
            width: fa.lookup_layout.width,
            height: fa.lookup_layout.height,
            format: crate::fluid::LOOKUP_TEXEL_FORMAT,
            bytes,
        },
        // A parsed asset has the blob; only a hand-made Asset could lack it.
        None => dummy,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn lookup_entries_land_where_the_format_says_and_collapse_the_rest() {
        // Pool of 3 triangles = 9 corners = 3 texels per frame (12 entries, 3 unused).
        assert_eq!(lookup_texels_per_frame(3), 3);
        let f0: &[[u32; 3]] = &[[0, 1, 2], [2, 1, 3]];
        let f1: &[[u32; 3]] = &[[0, 1, 2], [0, 2, 3], [3, 2, 4]];
        let bytes = build_lookup(3, &[f0, f1], &[0, 4], 7).unwrap();
        assert_eq!(bytes.len(), 7 * 16);
        let at = |f, c| lookup_entry(&bytes, 3, f, c).unwrap();
        assert_eq!((0..6).map(|c| at(0, c)).collect::<Vec<_>>(), [0, 1, 2, 2, 1, 3]);
        assert!((6..12).all(|c| at(0, c) == COLLAPSED));
        assert_eq!((0..9).map(|c| at(1, c)).collect::<Vec<_>>(), [4, 5, 6, 4, 6, 7, 7, 6, 8]);
        assert!((9..12).all(|c| at(1, c) == COLLAPSED));
        // Past the frames: the zero padding, then out of range.
        assert_eq!(lookup_entry(&bytes, 3, 2, 0).unwrap(), 0);
        assert!(lookup_entry(&bytes, 3, 2, 3).is_ok());
        assert!(lookup_entry(&bytes, 3, 2, 4).is_err());
        assert!(matches!(lookup_entry(&bytes, 3, 3, 0), Err(Error::IndexOutOfRange { .. })));
        assert!(lookup_entry(&bytes, 3, u32::MAX, u32::MAX).is_err());
    }

    #[test]
    fn a_frame_larger_than_the_pool_or_an_index_overflow_is_refused() {
        let f: &[[u32; 3]] = &[[0, 1, 2], [0, 1, 2]];
        assert!(build_lookup(1, &[f], &[0], 1).is_err());
        let g: &[[u32; 3]] = &[[0, 1, 2]];
        assert!(build_lookup(1, &[g], &[u32::MAX - 1], 1).is_err());
    }
}
