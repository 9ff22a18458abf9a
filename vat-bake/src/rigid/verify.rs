//! Verifying a rigid bake against its source.

use super::*;

/// What [`verify_rigid`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigidVerifyReport {
    /// Whether every check passed.
    pub passed: bool,
    /// Piece-frames compared.
    pub piece_frames: u64,
    /// Vertex-frames compared.
    pub vertex_frames: u64,
    /// Largest pivot error per axis, millimetres.
    pub translation_max_error_mm: [f64; 3],
    /// The translation bound per axis: half the pivot box quantum plus f32 rounding, millimetres.
    pub translation_bound_mm: [f64; 3],
    /// Largest rotation error, degrees.
    pub rotation_max_error_deg: f64,
    /// The rotation bound, degrees ([`ROTATION_BOUND_DEG`] plus f32 rounding).
    pub rotation_bound_deg: f64,
    /// Largest vertex position error, millimetres.
    pub vertex_max_error_mm: f64,
    /// The vertex bound: `|translation bound| + rotation bound (rad) * r` with `r` the largest
    /// distance of a vertex from its pivot, plus f32 rounding, millimetres.
    pub vertex_bound_mm: f64,
    /// One line per failed check.
    pub failures: Vec<String>,
}

/// Decodes every piece at every frame of `asset` with vat-core's CPU reference (point
/// interpolation at each baked frame, the shader's arithmetic) and compares it with `source`: the
/// pivot per axis against half the pivot box's quantum, the rotation angle against
/// [`ROTATION_BOUND_RAD`], and every vertex's object-space position against the bound they imply.
/// f32 rounding of the decode is allowed for on top of each bound: 4 ulps of the largest coordinate
/// of the box (translation, vertices) and `1e-6` rad (rotation).
///
/// # Errors
/// [`BakeError::InvalidInput`] when the asset is not a rigid bake or does not match the source's
/// pieces, vertices, clips or frames; [`BakeError::Core`] from the decoder.
pub fn verify_rigid(asset: &Asset<'_>, source: &RigidSource) -> Result<RigidVerifyReport> {
    let view = RigidAnimationView::from_asset(asset)?;
    let m = asset.manifest();
    let mismatch = |what: &str, baked: usize, source: usize| BakeError::InvalidInput {
        part: m.name.clone(),
        problem: format!("the file has {baked} {what}, the source {source}"),
    };
    if view.piece_count() as usize != source.pieces.len() {
        return Err(mismatch("pieces", view.piece_count() as usize, source.pieces.len()));
    }
    if m.vertex_count as usize != source.vertex_count() {
        return Err(mismatch("vertices", m.vertex_count as usize, source.vertex_count()));
    }
    if m.clips.len() != source.clips.len() {
        return Err(mismatch("clips", m.clips.len(), source.clips.len()));
    }
    for (c, s) in m.clips.iter().zip(&source.clips) {
        if c.frame_count as usize != s.frames.len() {
            return Err(mismatch("frames in a clip", c.frame_count as usize, s.frames.len()));
        }
    }
    let pb = view.pivot_bounds;
    let ulp_slack = |b: &PositionBounds| {
        let big = (0..3).map(|a| b.min[a].abs().max((b.min[a] + b.extent[a]).abs())).fold(0.0f32, f32::max);
        4.0 * f64::from(big) * f64::from(f32::EPSILON)
    };
    let t_slack = ulp_slack(&pb);
    let t_bound = rigid::translation_bound(&pb).map(|b| b + t_slack);
    let r_bound = ROTATION_BOUND_RAD + 1e-6;
    let radius = source
        .pieces
        .iter()
        .flat_map(|p| {
            p.positions.iter().map(move |v| {
                (0..3).map(|a| (f64::from(v[a]) - f64::from(p.rest_pivot[a])).powi(2)).sum::<f64>().sqrt()
            })
        })
        .fold(0.0, f64::max);
    let v_bound = (t_bound.iter().map(|b| b * b).sum::<f64>()).sqrt()
        + r_bound * radius
        + ulp_slack(&view_bounds(asset)?);
    let mut t_max = [0.0f64; 3];
    let mut r_max = 0.0f64;
    let mut v_max = 0.0f64;
    let (mut piece_frames, mut vertex_frames) = (0u64, 0u64);
    let vertex_pieces: Vec<(u32, [f32; 3])> =
        (0..m.vertex_count).map(|v| view.vertex_piece(v)).collect::<std::result::Result<_, _>>()?;
    for (ci, (clip, sc)) in m.clips.iter().zip(&source.clips).enumerate() {
        for (f, frame) in sc.frames.iter().enumerate() {
            // Phase of frame f: looping clips place frame f at f / n, one-shot clips at f / (n - 1).
            let n = clip.frame_count as f32;
            let phase = if clip.frame_count <= 1 {
                0.0
            } else if sc.looping {
                f as f32 / n
            } else {
                f as f32 / (n - 1.0)
            };
            let record = InstanceRecord {
                clip_a: ci as u32,
                phase_offset_a: phase,
                rate_a: 0.0,
                ..Default::default()
            };
            let mut decoded = Vec::with_capacity(frame.len());
            for (k, t) in frame.iter().enumerate() {
                let (pivot, q) =
                    reference::decode_rigid_piece(&view, &record, 0.0, k as u32, Interpolation::Point)?;
                for a in 0..3 {
                    t_max[a] = t_max[a].max((f64::from(pivot[a]) - f64::from(t.pivot[a])).abs());
                }
                r_max = r_max.max(rigid::rotation_angle_between(q, t.rotation));
                decoded.push(PieceTransform { pivot, rotation: q });
                piece_frames += 1;
            }
            let mut v = 0usize;
            for (k, p) in source.pieces.iter().enumerate() {
                for &rest in &p.positions {
                    let want = place_f64(&frame[k], p.rest_pivot, rest);
                    let got =
                        reference::decode_rigid_vertex(&view, &record, 0.0, v as u32, Interpolation::Point)?;
                    debug_assert_eq!(vertex_pieces[v].0 as usize, k);
                    let e =
                        (0..3).map(|a| (f64::from(got.object_position[a]) - want[a]).powi(2)).sum::<f64>();
                    v_max = v_max.max(e.sqrt());
                    v += 1;
                    vertex_frames += 1;
                }
            }
        }
    }
    let mut failures = Vec::new();
    for a in 0..3 {
        if t_max[a] > t_bound[a] {
            failures.push(format!(
                "pivot axis {a}: {:.6} mm > bound {:.6} mm",
                t_max[a] * 1e3,
                t_bound[a] * 1e3
            ));
        }
    }
    if r_max > r_bound {
        failures.push(format!(
            "rotation {:.6} deg > bound {:.6} deg",
            r_max.to_degrees(),
            r_bound.to_degrees()
        ));
    }
    if v_max > v_bound {
        failures.push(format!("vertex {:.6} mm > bound {:.6} mm", v_max * 1e3, v_bound * 1e3));
    }
    for (k, (p, (piece, pivot))) in
        source.pieces.iter().zip(first_vertices(source, &vertex_pieces)).enumerate()
    {
        if piece as usize != k || pivot != p.rest_pivot {
            failures.push(format!("piece {k}: its vertices carry piece {piece} and pivot {pivot:?}"));
            break;
        }
    }
    Ok(RigidVerifyReport {
        passed: failures.is_empty(),
        piece_frames,
        vertex_frames,
        translation_max_error_mm: t_max.map(|e| e * 1e3),
        translation_bound_mm: t_bound.map(|e| e * 1e3),
        rotation_max_error_deg: r_max.to_degrees(),
        rotation_bound_deg: ROTATION_BOUND_DEG + 1e-6f64.to_degrees(),
        vertex_max_error_mm: v_max * 1e3,
        vertex_bound_mm: v_bound * 1e3,
        failures,
    })
}

/// The rigid vertex texel of each piece's first vertex (pieces with no vertex are skipped).
pub(super) fn first_vertices<'a>(
    source: &'a RigidSource,
    vertex_pieces: &'a [(u32, [f32; 3])],
) -> impl Iterator<Item = (u32, [f32; 3])> + 'a {
    let mut start = 0usize;
    source.pieces.iter().filter_map(move |p| {
        let at = start;
        start += p.positions.len();
        vertex_pieces.get(at).copied().filter(|_| !p.positions.is_empty())
    })
}

/// The rigid animation's vertex box.
pub(super) fn view_bounds(asset: &Asset<'_>) -> Result<PositionBounds> {
    asset.manifest().animation_bounds().ok_or_else(|| BakeError::InvalidInput {
        part: asset.manifest().name.clone(),
        problem: "has no rigid animation".into(),
    })
}

/// A rotation helper for sources: the unit quaternion `[x, y, z, w]` of `q`.
pub fn quat_array(q: Quat) -> [f32; 4] {
    q.normalize().to_array()
}

impl crate::Report for RigidVerifyReport {
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
            "  verified rigid: {} piece-frames: pivot max {} mm (bound {} mm, half the box quantum); rotation max \
             {:.5} deg (bound {:.5} deg); {} vertex-frames max {:.5} mm (bound {:.5} mm): {}",
            r.piece_frames,
            fmt3(r.translation_max_error_mm),
            fmt3(r.translation_bound_mm),
            r.rotation_max_error_deg,
            r.rotation_bound_deg,
            r.vertex_frames,
            r.vertex_max_error_mm,
            r.vertex_bound_mm,
            if r.passed { "PASSED" } else { "FAILED" }
        )?;
        for f in &r.failures {
            writeln!(out, "  failure: {f}")?;
        }
        Ok(())
    }

    fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}
