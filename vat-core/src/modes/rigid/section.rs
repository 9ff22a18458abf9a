//! The rigid section's validation.

use crate::container::reader::*;

/// The rigid animation's checks: exclusive of the other animation kinds, rest streams present,
/// layouts consistent with the vertex and frame counts, exact blob sizes, finite boxes, every piece
/// index in range, every rest pivot finite, the unused texels zero, one name per piece.
pub(super) fn validate_rigid_animation(
    ra: &crate::container::RigidAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    if m.vertex_animation.is_some() || m.bone_animation.is_some() || m.morph_animation.is_some() {
        return Err(Error::OutOfRange {
            what: "rigid animation",
            value: "alongside a vertex, bone or morph animation".into(),
            expected: "a rigid asset has no other animation",
        });
    }
    for kind in [StreamKind::RestPosition, StreamKind::RestNormal] {
        if !m.streams.iter().any(|s| s.kind == kind) {
            return Err(Error::MissingSection { what: "rest position and normal streams (rigid mode)" });
        }
    }
    let l = &ra.layout;
    let pieces = u64::from(l.vertex_count);
    if pieces == 0 {
        return Err(Error::ZeroCount { what: "rigid piece count" });
    }
    within("rigid piece count", pieces, limits.max_vertices.into())?;
    expect_equal("piece texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "piece texture width", height: "piece texture height" };
    let texels = check_grid(&names, l.width, l.height, pieces * frame_count, limits)?;
    let len = product("piece texture bytes", &[texels, 16], limits)?;
    sized_blob(bytes, m, ra.pieces, "piece texture", len)?;
    let vl = &ra.vertex_layout;
    expect_equal("rigid vertex texture vertex count", vertex_count, vl.vertex_count.into())?;
    expect_equal("rigid vertex texture frame count", 1, vl.frame_count.into())?;
    let names = Grid { width: "rigid vertex texture width", height: "rigid vertex texture height" };
    let vertex_texels = check_grid(&names, vl.width, vl.height, vertex_count, limits)?;
    let len = product("rigid vertex texture bytes", &[vertex_texels, 16], limits)?;
    let data = sized_blob(bytes, m, ra.vertices, "rigid vertex texture", len)?;
    for (v, c) in data.chunks_exact(16).enumerate() {
        let word = |k: usize| u32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
        let texel = [word(0), word(1), word(2), word(3)];
        if v as u64 >= vertex_count {
            if texel != [0; 4] {
                return Err(Error::OutOfRange {
                    what: "unused rigid vertex texel",
                    value: format!("{texel:?}"),
                    expected: "zero",
                });
            }
            continue;
        }
        let (piece, pivot) = crate::rigid::decode_vertex_texel(texel);
        if u64::from(piece) >= pieces {
            return Err(Error::IndexOutOfRange {
                what: "rigid piece index",
                index: piece.into(),
                count: pieces,
            });
        }
        check_finite("rigid rest pivot", &pivot)?;
    }
    for (what, b) in [("rigid pivot bounds", &ra.pivot_bounds), ("rigid vertex bounds", &ra.bounds)] {
        check_finite(what, &b.min)?;
        check_finite(what, &b.extent)?;
        if b.extent.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what,
                value: format!("{:?}", b.extent),
                expected: ">= 0 metres on each axis",
            });
        }
    }
    expect_equal("rigid piece name count", pieces, ra.piece_names.len() as u64)?;
    Ok(())
}

/// The mode table's check of the rigid section ([`crate::modes::MODES`]).
pub(crate) fn validate_rigid_section(c: &crate::modes::SectionCheck<'_>) -> Result<()> {
    match &c.manifest.rigid_animation {
        Some(ra) => {
            validate_rigid_animation(ra, c.manifest, c.bytes, c.limits, c.vertex_count, c.frame_count)
        }
        None => Ok(()),
    }
}
