//! The skin-residual section's validation ([`crate::container::SkinResidualAnimation`]).

use super::{MAX_FIELD_BITS, MAX_FRAME_BITS, MAX_STREAM_WORDS, ResidualBounds, ResidualWidths};
use crate::container::reader::*;

/// The section against the manifest: present exactly with the skin-residual vertex format, beside
/// the bone section (the skin) of a soft asset; its bounds in range; its texture sized for the
/// vertices and the stream; every vertex's widths valid and its frames inside the stream (before
/// the trailing word, so the decoder's 32-bit window never reads past the stream).
pub(crate) fn check_skin_residual(
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    let is_format = m.vertex_animation.as_ref().is_some_and(|va| va.format == VertexFormat::SkinResidual);
    let section = match (&m.skin_residual, is_format) {
        (None, false) => return Ok(()),
        (None, true) => {
            return Err(Error::MissingSection {
                what: "skin residual (the residual texture of the skin-residual vertex format)",
            });
        }
        (Some(_), false) => {
            return Err(Error::OutOfRange {
                what: "skin residual section",
                value: "present".into(),
                expected: "only with the skin-residual vertex format",
            });
        }
        (Some(s), true) => s,
    };
    if m.bone_animation.is_none() {
        return Err(Error::MissingSection { what: "bone animation (the skin of the skin-residual format)" });
    }
    if m.fluid_animation.is_some() {
        return Err(Error::OutOfRange {
            what: "vertex format",
            value: "skin-residual in a fluid asset".into(),
            expected: "a soft (skeletal) asset",
        });
    }
    if let Some(va) = &m.vertex_animation
        && va.tangents.is_some()
    {
        return Err(Error::OutOfRange {
            what: "tangent texture",
            value: "present beside skin-residual".into(),
            expected: "none (the skin-residual format stores no per-frame tangents)",
        });
    }
    ResidualBounds { position_m: section.position_bound_m, normal_rad: section.normal_bound_rad }
        .validate()?;
    let words = u64::from(section.stream_words);
    if words == 0 {
        return Err(Error::ZeroCount { what: "skin residual stream words" });
    }
    within("skin residual stream words", words, MAX_STREAM_WORDS.into())?;
    let names = Grid { width: "skin residual texture width", height: "skin residual texture height" };
    let texels = check_grid(&names, section.width, section.height, vertex_count + words.div_ceil(2), limits)?;
    let len = product("skin residual texture bytes", &[texels, 8], limits)?;
    let texture = sized_blob(bytes, m, section.texture, "skin residual texture", len)?;
    // Every field of every vertex ends before the trailing word.
    let usable_bits = (words - 1) * 32;
    for (v, entry) in texture.chunks_exact(8).take(vertex_count as usize).enumerate() {
        let base = u32::from_le_bytes([entry[0], entry[1], entry[2], entry[3]]);
        let bits = u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]);
        let widths = ResidualWidths::from_bits(bits);
        if widths.to_bits() != bits
            || widths.position_bits > MAX_FIELD_BITS
            || widths.normal_bits > MAX_FIELD_BITS
            || widths.frame_bits() > MAX_FRAME_BITS
        {
            return Err(Error::OutOfRange {
                what: "skin residual widths",
                value: format!("{bits:#x} at vertex {v}"),
                expected: "position bits (0..=15) in bits 0..4, normal bits (0..=15) in 4..8, the \
                           absolute flag in bit 8, at most 64 bits a frame",
            });
        }
        let end = u64::from(base) + frame_count * u64::from(widths.frame_bits());
        if u64::from(base) > usable_bits || end > usable_bits {
            return Err(Error::IndexOutOfRange {
                what: "skin residual bit (a vertex's frames past its stream)",
                index: end.max(base.into()),
                count: usable_bits,
            });
        }
    }
    Ok(())
}
