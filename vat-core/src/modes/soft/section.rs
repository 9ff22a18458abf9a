//! The vertex animation section's validation: the base section every mode builds on.

use crate::container::reader::*;

/// The vertex animation section: texture layout and blobs against the vertex and frame counts, the position box.
pub(crate) fn check_vertex_animation(
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    if let Some(va) = &m.vertex_animation {
        let l = &va.layout;
        // A fluid asset's vertex texture holds every frame's vertices back to back: one "frame" of
        // all of them (checked against the fluid frames in validate_fluid_animation).
        let (texture_vertices, texture_frames) = match &m.fluid_animation {
            Some(fa) => (fluid_vertex_total(fa)?, 1),
            None => (vertex_count, frame_count),
        };
        expect_equal("vertex texture vertex count", texture_vertices, l.vertex_count.into())?;
        if m.fluid_animation.is_some() {
            expect_equal("fluid vertex texture frame count", 1, l.frame_count.into())?;
        } else {
            expect_equal(
                "vertex texture frame count (frames of all clips)",
                frame_count,
                l.frame_count.into(),
            )?;
        }
        if l.frame_count == 0 {
            return Err(Error::ZeroCount { what: "vertex texture frame count" });
        }
        let names = Grid { width: "vertex texture width", height: "vertex texture height" };
        let texels = check_grid(&names, l.width, l.height, texture_vertices * texture_frames, limits)?;
        let formats = va.format.texel_formats();
        expect_equal("vertex texture count", formats.len() as u64, va.textures.len() as u64)?;
        for (&id, &format) in va.textures.iter().zip(formats) {
            let len = product("vertex texture bytes", &[texels, format.bytes_per_texel().into()], limits)?;
            sized_blob(bytes, m, id, "vertex texture", len)?;
        }
        if let Some(id) = va.tangents {
            let len = product("tangent texture bytes", &[texels, 8], limits)?;
            sized_blob(bytes, m, id, "tangent texture", len)?;
        }
        check_finite("position bounds min", &va.bounds.min)?;
        check_finite("position bounds extent", &va.bounds.extent)?;
        if va.bounds.extent.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what: "position bounds extent",
                value: format!("{:?}", va.bounds.extent),
                expected: ">= 0 metres on each axis",
            });
        }
        // Packed64 allocates 40 bits over the axes, at most 20 each (an axis of zero extent may get
        // none); the other formats store fixed-size channels and leave the field zeroed.
        let bits = va.position_bits;
        if va.format == VertexFormat::Packed64 {
            if bits.iter().any(|&b| b > 20) || bits.iter().sum::<u32>() != 40 {
                return Err(Error::OutOfRange {
                    what: "packed64 position bits",
                    value: format!("{bits:?}"),
                    expected: "each in 0..=20, summing to 40",
                });
            }
        } else if bits != [0; 3] {
            return Err(Error::OutOfRange {
                what: "position bits",
                value: format!("{bits:?}"),
                expected: "[0, 0, 0] for formats other than packed64",
            });
        }
    }

    Ok(())
}
