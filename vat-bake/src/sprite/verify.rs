//! Verifying a sprite bake against its frames.

use super::*;

/// Whether an error is NaN or above its bound.
pub(super) fn outside(err: f64, bound: f64) -> bool {
    err.is_nan() || err > bound
}

/// The most failure lines a [`SpriteVerifyReport`] lists.
pub const SPRITE_VERIFY_MAX_FAILURE_LINES: usize = 20;

/// What [`verify_sprite`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpriteVerifyReport {
    /// Whether every check passed.
    pub passed: bool,
    /// Frames compared.
    pub frames: u32,
    /// Slots of the file.
    pub slots: u32,
    /// Slot-frames decoded (alive and dead).
    pub texels: u64,
    /// Alive slot-frames compared with the source's particles.
    pub particle_frames: u64,
    /// Largest centre error per axis, millimetres.
    pub position_max_error_mm: [f64; 3],
    /// The format's centre bound per axis plus f32 rounding, millimetres.
    pub position_bound_mm: [f64; 3],
    /// Largest size error, millimetres.
    pub size_max_error_mm: f64,
    /// The format's size bound plus f32 rounding, millimetres.
    pub size_bound_mm: f64,
    /// Largest colour channel error (against the source clamped to `[0, 1]`, which the readers only
    /// do within [`COLOUR_CLAMP_TOLERANCE`], so within the bound of the source's own value).
    pub color_max_error: f64,
    /// The format's colour bound plus f32 rounding.
    pub color_bound: f64,
    /// Largest rotation error modulo 360 degrees, degrees.
    pub rotation_max_error_deg: f64,
    /// The format's rotation bound plus f32 rounding, degrees: the largest of the per-particle
    /// bounds used (at least that of a source angle of magnitude pi).
    pub rotation_bound_deg: f64,
    /// One line per failed check, at most [`SPRITE_VERIFY_MAX_FAILURE_LINES`].
    pub failures: Vec<String>,
    /// Failed checks beyond the listed lines.
    pub failures_left_off: u64,
}

/// Re-runs the slot assignment on `source` (with `looping`), then decodes every slot of every
/// frame of `asset` ([`texel_at`], [`decode_particle_texel`] against
/// [`SpriteAnimation::sprite_bounds`]) and checks: the slot is alive exactly where the source has a
/// particle; the continues flag is exactly the assigned one; each field is within
/// [`error_bounds`] plus f32 rounding derived from the magnitudes: centre `4 eps (M + extent)` per
/// axis (`M` the box's largest |coordinate|: the normalise and denormalise round twice each), size
/// `4 eps max_size`, colour `4 eps`, rotation `4 eps (pi + |source angle|)` (the wrap and the
/// decode's product), `eps = 2^-23`. Rotations are compared modulo `2 pi`, colours after the
/// bake's clamp. The clip's frame count and mode are checked too.
///
/// # Errors
/// [`BakeError::InvalidInput`] if `asset` is not a sprite bake; read errors of `source`;
/// [`BakeError::Core`] if the particle texture is shorter than its layout.
pub fn verify_sprite(
    asset: &Asset<'_>,
    source: &dyn SpriteFrames,
    looping: bool,
) -> Result<SpriteVerifyReport> {
    let m = asset.manifest();
    let sa =
        m.sprite_animation.as_ref().ok_or(invalid(&m.name, "is not a sprite bake (no sprite animation)"))?;
    let blob = asset
        .get_blob(sa.particles)
        .ok_or(invalid(&m.name, format!("the particle texture blob {} is missing", sa.particles.0)))?;
    let b = sa.sprite_bounds();
    let e = error_bounds(&b);
    let eps = f64::from(f32::EPSILON);
    let pb = b.position;
    let position_bound: [f64; 3] = std::array::from_fn(|a| {
        let mag = f64::from(pb.min[a].abs().max((pb.min[a] + pb.extent[a]).abs()));
        e.position[a] + 4.0 * eps * (mag + f64::from(pb.extent[a]))
    });
    let size_bound = e.size + 4.0 * eps * f64::from(b.max_size);
    let color_bound = e.color + 4.0 * eps;
    let pi = std::f64::consts::PI;
    let mut failures = Vec::new();
    let mut left_off = 0u64;
    let mut fail = |line: String| {
        if failures.len() < SPRITE_VERIFY_MAX_FAILURE_LINES {
            failures.push(line);
        } else {
            left_off += 1;
        }
    };
    let frames = source.frame_count();
    let table = assign_slots(
        (0..frames).map(|k| Ok(source.frame(k)?.particles.iter().map(|p| p.id).collect())),
        looping,
    )?;
    let slots = sa.layout.vertex_count;
    if table.slot_count != slots {
        fail(format!("the file has {slots} slots, the source's assignment {}", table.slot_count));
    }
    if sa.layout.frame_count as usize != frames {
        fail(format!("the file has {} frames, the source {frames}", sa.layout.frame_count));
    }
    match m.clips.first() {
        None => fail("the file has no clip".into()),
        Some(c) => {
            let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
            if c.frame_count as usize != frames || c.mode != mode {
                fail(format!(
                    "clip \"{}\": {} frames {:?}, expected {frames} {mode:?}",
                    c.name, c.frame_count, c.mode
                ));
            }
        }
    }
    let (mut p_max, mut s_max, mut c_max, mut r_max) = ([0.0f64; 3], 0.0f64, 0.0f64, 0.0f64);
    let mut r_bound_max = e.rotation_rad + 8.0 * eps * pi;
    let (mut texels, mut particle_frames) = (0u64, 0u64);
    let frames_checked = frames.min(sa.layout.frame_count as usize);
    if table.slot_count == slots {
        let mut expected: Vec<Option<usize>> = vec![None; slots as usize];
        for k in 0..frames_checked {
            let frame = source.frame(k)?;
            let assigned = &table.frames[k];
            expected.fill(None);
            for (i, &(s, _)) in assigned.iter().enumerate() {
                expected[s as usize] = Some(i);
            }
            for s in 0..slots {
                texels += 1;
                let t = texel_at(blob, k as u64 * u64::from(slots) + u64::from(s))?;
                let decoded = decode_particle_texel(&b, t);
                let want = expected[s as usize];
                let (d, cont, i) = match (decoded, want) {
                    (None, None) => continue,
                    (Some(_), None) => {
                        fail(format!("frame {k} slot {s}: alive, the source has no particle there"));
                        continue;
                    }
                    (None, Some(i)) => {
                        fail(format!("frame {k} slot {s}: dead, the source's particle {i} is there"));
                        continue;
                    }
                    (Some((d, c)), Some(i)) => (d, c, i),
                };
                particle_frames += 1;
                let sp = &frame.particles[i];
                let p = &sp.particle;
                let mut bad = Vec::new();
                if cont != assigned[i].1 {
                    bad.push(format!("continues {cont}, assigned {}", assigned[i].1));
                }
                for a in 0..3 {
                    let err = (f64::from(d.position[a]) - f64::from(p.position[a])).abs();
                    p_max[a] = p_max[a].max(err);
                    if outside(err, position_bound[a]) {
                        bad.push(format!("centre axis {a} off by {:.4} mm", err * 1e3));
                    }
                }
                let err = (f64::from(d.size) - f64::from(p.size)).abs();
                s_max = s_max.max(err);
                if outside(err, size_bound) {
                    bad.push(format!("size off by {:.4} mm", err * 1e3));
                }
                for ch in 0..4 {
                    let err = (f64::from(d.color[ch]) - f64::from(p.color[ch].clamp(0.0, 1.0))).abs();
                    c_max = c_max.max(err);
                    if outside(err, color_bound) {
                        bad.push(format!("colour channel {ch} off by {err:.5}"));
                    }
                }
                let err = f64::from(wrap_delta(d.rotation - wrap_angle(p.rotation))).abs();
                r_max = r_max.max(err);
                let rotation_bound = e.rotation_rad + 4.0 * eps * (pi + f64::from(p.rotation.abs()));
                r_bound_max = r_bound_max.max(rotation_bound);
                if outside(err, rotation_bound) {
                    bad.push(format!("rotation off by {:.4} deg", err.to_degrees()));
                }
                if !bad.is_empty() {
                    fail(format!(
                        "frame {k} slot {s} (source particle {i}, id {:?}): {}",
                        sp.id,
                        bad.join("; ")
                    ));
                }
            }
        }
    }
    Ok(SpriteVerifyReport {
        passed: failures.is_empty(),
        frames: frames as u32,
        slots,
        texels,
        particle_frames,
        position_max_error_mm: p_max.map(|x| x * 1e3),
        position_bound_mm: position_bound.map(|x| x * 1e3),
        size_max_error_mm: s_max * 1e3,
        size_bound_mm: size_bound * 1e3,
        color_max_error: c_max,
        color_bound,
        rotation_max_error_deg: r_max.to_degrees(),
        rotation_bound_deg: r_bound_max.to_degrees(),
        failures,
        failures_left_off: left_off,
    })
}

impl crate::Report for SpriteVerifyReport {
    fn passed(&self) -> bool {
        self.passed
    }

    fn failures(&self) -> &[String] {
        &self.failures
    }

    fn write_lines(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let r = self;
        let fmt3 = crate::source::fmt3;
        writeln!(
            out,
            "  verified sprite: {} frames x {} slots ({} slot-frames, {} alive): centre max {} mm (bound {} mm); size \
             max {:.5} mm (bound {:.5} mm); colour max {:.5} (bound {:.5}); rotation max {:.5} deg (bound {:.5} deg); \
             alive and continuing exactly where the source's ids are: {}",
            r.frames,
            r.slots,
            r.texels,
            r.particle_frames,
            fmt3(r.position_max_error_mm),
            fmt3(r.position_bound_mm),
            r.size_max_error_mm,
            r.size_bound_mm,
            r.color_max_error,
            r.color_bound,
            r.rotation_max_error_deg,
            r.rotation_bound_deg,
            if r.passed { "PASSED" } else { "FAILED" }
        )?;
        for f in &r.failures {
            writeln!(out, "  failure: {f}")?;
        }
        if r.failures_left_off > 0 {
            writeln!(out, "  ... and {} more failures", r.failures_left_off)?;
        }
        Ok(())
    }

    fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}
