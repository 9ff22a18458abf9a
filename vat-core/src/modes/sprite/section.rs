//! The sprite section's validation.

use crate::container::reader::*;

/// The sprite animation's checks: no other animation, `4 * slots` corners, a particle texture of one
/// texel per slot per frame, finite bounds and card size, and every texel: a dead slot all zero,
/// a live one with its reserved bits zero and [`crate::sprite::FLAG_CONTINUES`] only where the
/// clip's next frame (the first again after a looping clip's last; none after a one-shot clip's
/// last) holds a live particle in the same slot; the unused texels zero.
pub(super) fn validate_sprite_animation(
    sa: &crate::container::SpriteAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    clip_map: &ClipRowMap,
) -> Result<()> {
    use crate::sprite::{FLAG_ALIVE, FLAG_CONTINUES, SPRITE_TEXEL_BYTES};
    if m.vertex_animation.is_some()
        || m.bone_animation.is_some()
        || m.morph_animation.is_some()
        || m.rigid_animation.is_some()
        || m.fluid_animation.is_some()
    {
        return Err(Error::OutOfRange {
            what: "sprite animation",
            value: "alongside a vertex, bone, morph, rigid or fluid animation".into(),
            expected: "a sprite asset has its particle texture and no other animation",
        });
    }
    if !m.root_motion.is_empty() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks on a sprite asset", m.root_motion.len()),
            expected: "no root motion in sprite mode",
        });
    }
    let l = &sa.layout;
    let slots = u64::from(l.vertex_count);
    if slots == 0 {
        return Err(Error::ZeroCount { what: "sprite slot count" });
    }
    expect_equal("vertex count (4 corners per sprite slot)", slots * 4, vertex_count)?;
    let frame_count = u64::from(clip_map.total_frames());
    expect_equal("particle texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "particle texture width", height: "particle texture height" };
    let texels = check_grid(&names, l.width, l.height, slots * frame_count, limits)?;
    let len = product("particle texture bytes", &[texels, SPRITE_TEXEL_BYTES.into()], limits)?;
    let data = sized_blob(bytes, m, sa.particles, "particle texture", len)?;
    let b = &sa.position_bounds;
    check_finite("particle position bounds", &b.min)?;
    check_finite("particle position bounds", &b.extent)?;
    if b.extent.iter().any(|&e| e < 0.0) {
        return Err(Error::OutOfRange {
            what: "particle position bounds extent",
            value: format!("{:?}", b.extent),
            expected: ">= 0 metres on each axis",
        });
    }
    if !(sa.max_size.is_finite() && sa.max_size >= 0.0) {
        return Err(Error::OutOfRange {
            what: "sprite max size",
            value: sa.max_size.to_string(),
            expected: "finite and >= 0 metres",
        });
    }
    let texel = |t: u64| -> [u32; 4] {
        let at = (t * 16) as usize;
        let word = |k: usize| {
            u32::from_le_bytes([
                data[at + 4 * k],
                data[at + 4 * k + 1],
                data[at + 4 * k + 2],
                data[at + 4 * k + 3],
            ])
        };
        [word(0), word(1), word(2), word(3)]
    };
    let used = slots * frame_count;
    for t in used..texels {
        if texel(t) != [0; 4] {
            return Err(Error::OutOfRange {
                what: "unused particle texel",
                value: format!("{:?}", texel(t)),
                expected: "zero",
            });
        }
    }
    for clip in m.clips.iter() {
        let (first, count) = (u64::from(clip.first_frame), u64::from(clip.frame_count));
        for f in first..first + count {
            let next = if f + 1 < first + count {
                Some(f + 1)
            } else if clip.mode == crate::clip::ClipMode::Looping {
                Some(first)
            } else {
                None
            };
            for s in 0..slots {
                let w = texel(f * slots + s);
                if w[3] & FLAG_ALIVE == 0 {
                    if w != crate::sprite::DEAD_TEXEL {
                        return Err(Error::OutOfRange {
                            what: "dead particle texel",
                            value: format!("{w:?} (frame {f}, slot {s})"),
                            expected: "all zero (a slot without a particle)",
                        });
                    }
                    continue;
                }
                if w[3] >> 18 != 0 {
                    return Err(Error::OutOfRange {
                        what: "particle texel reserved bits (word 3, bits 18..32)",
                        value: format!("{:#x} (frame {f}, slot {s})", w[3]),
                        expected: "zero",
                    });
                }
                let continues_ok = next.is_some_and(|n| texel(n * slots + s)[3] & FLAG_ALIVE != 0);
                if w[3] & FLAG_CONTINUES != 0 && !continues_ok {
                    return Err(Error::OutOfRange {
                        what: "particle continuation flag",
                        value: format!("set at frame {f}, slot {s}"),
                        expected: "set only where the clip's next frame has a live particle in the same slot",
                    });
                }
            }
        }
    }
    Ok(())
}

/// The mode table's check of the sprite section ([`crate::modes::MODES`]).
pub(crate) fn validate_sprite_section(c: &crate::modes::SectionCheck<'_>) -> Result<()> {
    match &c.manifest.sprite_animation {
        Some(sa) => validate_sprite_animation(sa, c.manifest, c.bytes, c.limits, c.vertex_count, c.clip_map),
        None => Ok(()),
    }
}
