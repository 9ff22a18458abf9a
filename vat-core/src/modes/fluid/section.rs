//! The fluid section's validation.

use crate::container::reader::*;

/// The vertices of all frames of a fluid animation together (checked `u64` sum; each count is a
/// `u32`, so the sum of at most `u32::MAX` frames cannot overflow `u64`).
pub(crate) fn fluid_vertex_total(fa: &crate::container::FluidAnimation) -> Result<u64> {
    Ok(fa.frames.iter().map(|f| u64::from(f.vertex_count)).sum())
}

/// The fluid animation's checks: a vertex animation and nothing else, `3 * pool_triangles`
/// corners, one frame entry per frame, frames back to back, triangle counts within the pool, and
/// every lookup entry: the corners of a frame's live triangles (the first `triangle_count`) index
/// that frame's vertices, every other entry is [`crate::fluid::COLLAPSED`], the unused texels zero.
pub(super) fn validate_fluid_animation(
    fa: &crate::container::FluidAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    use crate::fluid::COLLAPSED;
    if m.vertex_animation.is_none()
        || m.bone_animation.is_some()
        || m.morph_animation.is_some()
        || m.rigid_animation.is_some()
    {
        return Err(Error::OutOfRange {
            what: "fluid animation",
            value: "without a vertex animation, or alongside a bone, morph or rigid animation".into(),
            expected: "a fluid asset has its vertex texture and no other animation",
        });
    }
    if !m.root_motion.is_empty() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks on a fluid asset", m.root_motion.len()),
            expected: "no root motion in fluid mode (its topology changes every frame)",
        });
    }
    if fa.pool_triangles == 0 {
        return Err(Error::ZeroCount { what: "fluid pool triangle count" });
    }
    let corners = u64::from(fa.pool_triangles) * 3;
    expect_equal("vertex count (3 corners per fluid pool triangle)", corners, vertex_count)?;
    expect_equal("fluid frame entries (frames of all clips)", frame_count, fa.frames.len() as u64)?;
    let mut next = 0u64;
    for f in &fa.frames {
        expect_equal("fluid frame first vertex (frames back to back)", next, f.first_vertex.into())?;
        next += u64::from(f.vertex_count);
        if f.triangle_count > fa.pool_triangles {
            return Err(Error::OutOfRange {
                what: "fluid frame triangle count",
                value: f.triangle_count.to_string(),
                expected: "<= the pool's triangle count",
            });
        }
        if f.triangle_count > 0 && f.vertex_count == 0 {
            return Err(Error::OutOfRange {
                what: "fluid frame vertex count",
                value: "0 with triangles".into(),
                expected: "at least one vertex in a frame with triangles",
            });
        }
    }
    let l = &fa.lookup_layout;
    let per_frame = corners.div_ceil(4);
    expect_equal("fluid lookup texels per frame (ceil(corners / 4))", per_frame, l.vertex_count.into())?;
    expect_equal("fluid lookup frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "fluid lookup texture width", height: "fluid lookup texture height" };
    let texels = check_grid(&names, l.width, l.height, per_frame * frame_count, limits)?;
    let len = product("fluid lookup texture bytes", &[texels, 16], limits)?;
    let data = sized_blob(bytes, m, fa.lookup, "fluid lookup texture", len)?;
    let entries = per_frame * 4;
    let used = per_frame * frame_count * 4;
    for (e, c) in data.chunks_exact(4).enumerate() {
        let e = e as u64;
        let value = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if e >= used {
            if value != 0 {
                return Err(Error::OutOfRange {
                    what: "unused fluid lookup texel",
                    value: value.to_string(),
                    expected: "zero",
                });
            }
            continue;
        }
        let (f, corner) = ((e / entries) as usize, e % entries);
        let frame = fa.frames[f];
        let live = corner < u64::from(frame.triangle_count) * 3;
        let (first, count) = (u64::from(frame.first_vertex), u64::from(frame.vertex_count));
        if live {
            if !(first..first + count).contains(&u64::from(value)) {
                return Err(Error::IndexOutOfRange {
                    what: "fluid lookup entry (a live corner's vertex, within its frame)",
                    index: value.into(),
                    count: first + count,
                });
            }
        } else if value != COLLAPSED {
            return Err(Error::OutOfRange {
                what: "fluid lookup entry of a collapsed corner",
                value: value.to_string(),
                expected: "COLLAPSED (0xFFFFFFFF)",
            });
        }
    }
    Ok(())
}

/// The mode table's check of the fluid section ([`crate::modes::MODES`]).
pub(crate) fn validate_fluid_section(c: &crate::modes::SectionCheck<'_>) -> Result<()> {
    match &c.manifest.fluid_animation {
        Some(fa) => {
            validate_fluid_animation(fa, c.manifest, c.bytes, c.limits, c.vertex_count, c.frame_count)
        }
        None => Ok(()),
    }
}
