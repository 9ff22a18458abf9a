//! The bone animation section's validation.

use crate::container::reader::*;

/// The bone animation section: texture layout against the bones and frames, joint and weight streams.
pub(crate) fn check_bone_animation(
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
    bone_count: u64,
) -> Result<()> {
    if let Some(ba) = &m.bone_animation {
        let l = &ba.layout;
        expect_equal("bone texture bone count (bones in the skeleton)", bone_count, l.bone_count.into())?;
        expect_equal("bone texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
        if l.bone_count == 0 {
            return Err(Error::ZeroCount { what: "bone texture bone count" });
        }
        if l.frame_count == 0 {
            return Err(Error::ZeroCount { what: "bone texture frame count" });
        }
        let names = Grid { width: "bone texture width", height: "bone texture height" };
        let needed = product("bone texture texels", &[frame_count, bone_count, 3], limits)?;
        let texels = check_grid(&names, l.width, l.height, needed, limits)?;
        let len = product("bone texture bytes", &[texels, 16], limits)?;
        sized_blob(bytes, m, ba.texture, "bone texture", len)?;
        if !matches!(ba.influences, 4 | 8) {
            return Err(Error::OutOfRange {
                what: "bone influences per vertex",
                value: ba.influences.to_string(),
                expected: "4 or 8",
            });
        }
        let slots = vertex_count * u64::from(ba.influences);
        let joints = sized_blob(bytes, m, ba.joints, "joint indices", slots * 2)?;
        for c in joints.chunks_exact(2) {
            let joint = u16::from_le_bytes([c[0], c[1]]);
            if u64::from(joint) >= bone_count {
                return Err(Error::IndexOutOfRange { what: "joint", index: joint.into(), count: bone_count });
            }
        }
        let weights = sized_blob(bytes, m, ba.weights, "skin weights", slots * 4)?;
        for c in weights.chunks_exact(4) {
            let w = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            if !(0.0..=1.0).contains(&w) {
                return Err(Error::OutOfRange {
                    what: "skin weight",
                    value: w.to_string(),
                    expected: "in [0, 1]",
                });
            }
        }
    }

    Ok(())
}
