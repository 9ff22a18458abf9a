//! The glTF rig and mesh sequences (soft mode) as a [`crate::Source`]: the bake is [`prepare`],
//! the verification [`crate::verify::verify_with`].

use std::io::Write;

use vat_core::container::{Asset, VatMode};

use super::*;
use crate::source::{Baked, BakedFile, Figures, Report, Source};
use crate::verify::{VerifyOptions, VerifyReport};

impl Source for Rig {
    fn mode(&self) -> VatMode {
        VatMode::Soft
    }

    fn bake(&self, options: &BakeOptions, progress: &mut dyn FnMut(Progress)) -> Result<Baked> {
        let prepared = prepare_with_progress(self, options, progress)?;
        let baked_vertices: u64 = self.meshes.iter().map(|m| m.vertex_count() as u64).sum();
        let figures = RigFigures {
            stats: prepared.stats.clone(),
            source_summary: self.source_summary(),
            baked_vertices,
            scene_vertices: baked_vertices + self.left_out_vertices,
            import_notes: self.notes.clone(),
        };
        Ok(Baked { file: BakedFile::Prepared(Box::new(prepared)), figures: Box::new(figures) })
    }

    fn verify(&self, asset: &Asset<'_>, options: &VerifyOptions) -> Result<Box<dyn Report>> {
        Ok(Box::new(crate::verify::verify_with(asset, self, options)?))
    }
}

/// What a soft-mode bake says: its [`BakeStats`] and what the rig said about its source.
struct RigFigures {
    stats: BakeStats,
    /// [`Rig::source_summary`].
    source_summary: String,
    /// Vertices of the rig's meshes, and of the scene with what the import left out.
    baked_vertices: u64,
    scene_vertices: u64,
    /// The import's notes ([`Rig::notes`]).
    import_notes: Vec<String>,
}

impl Figures for RigFigures {
    fn write_summary(&self, out: &mut dyn Write, what: &str, path: &Path) -> std::io::Result<()> {
        let s = &self.stats;
        writeln!(
            out,
            "baked {what} -> {}: {}, {} of {} scene vertices ({} in the \
             animation texture); {}, {} frames, texture {} x {}, {} bytes/vertex/frame",
            path.display(),
            self.source_summary,
            self.baked_vertices,
            self.scene_vertices,
            s.vertex_count,
            if s.clips == 1 { "1 clip".to_owned() } else { format!("{} clips", s.clips) },
            s.frames,
            s.texture_width,
            s.texture_height,
            s.animation_size_text()
        )?;
        // The import's and the bake's notes, a note repeated between them said once.
        for note in crate::notes::collapse(self.import_notes.iter().chain(&s.notes).map(String::as_str)) {
            writeln!(out, "  note: {note}")?;
        }
        for c in &s.clip_looping {
            let why = match c.decision {
                LoopDecision::Option => "chosen with --loop/--once".to_owned(),
                LoopDecision::Source => "the source says".to_owned(),
                LoopDecision::Seam { seam_mm, quantum_mm } => {
                    format!("its last pose is {seam_mm:.3} mm from its first, quantum {quantum_mm:.3} mm")
                }
                LoopDecision::Pose => "one key: a pose".to_owned(),
            };
            let mode = if c.decision == LoopDecision::Pose {
                "pose"
            } else if c.looping {
                "loops"
            } else {
                "plays once"
            };
            writeln!(out, "  clip {:?} {mode} ({why})", c.clip)?;
        }
        let tris: Vec<String> = s.triangle_counts.iter().map(u32::to_string).collect();
        writeln!(out, "  LOD triangles: {}", tris.join(" / "))
    }

    fn warnings(&self) -> &[String] {
        &self.stats.warnings
    }
}

impl Report for VerifyReport {
    fn passed(&self) -> bool {
        self.passed
    }

    fn failures(&self) -> &[String] {
        &self.failures
    }

    fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// One line per playback path checked, the influence reduction, each looping clip's seam, and
    /// one line per failure.
    fn write_lines(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let report = self;
        for p in &report.paths {
            let detail = match p.path.as_str() {
                "vat" => format!(
                    "{}; {}{}",
                    report.figures_text(),
                    match (report.tangent_max_error_deg, report.tangent_bound_deg) {
                        (Some(t), Some(b)) => format!("tangents max {t:.4} deg (bound {b:.4} deg); "),
                        _ => String::new(),
                    },
                    if report.mid_frame_vertex_samples > 0 {
                        format!(
                            "mid-frame interpolation max {:.4} mm",
                            report.mid_frame_position_max_error_mm
                        )
                    } else {
                        "mid-frame interpolation: see vat verify".to_owned()
                    }
                ),
                _ => format!("max {:.6} mm (bound {:.6} mm)", p.max_error_mm, p.bound_mm),
            };
            writeln!(out, "  verified {}: {detail}: {}", p.path, if p.passed { "PASSED" } else { "FAILED" })?;
        }
        if let Some(e) = report.influence_reduction_max_error_mm {
            writeln!(
                out,
                "  {} vertices baked with their 8 largest influences: up to {e:.4} mm from full skinning{}",
                report.reduced_influence_vertices,
                if report.influence_loss_accepted { " (accepted)" } else { "" }
            )?;
        }
        for c in report.clips.iter().filter(|c| c.looping && c.frames > 1) {
            if let Some(seam) = c.seam_mm {
                writeln!(
                    out,
                    "  loop seam of {:?}: {seam:.3} mm (largest frame-to-frame step {:.3} mm){}",
                    c.name,
                    c.max_frame_step_mm,
                    if c.seam_warning { ": WARNING, it pops at every wrap" } else { "" }
                )?;
            }
        }
        for f in &report.failures {
            writeln!(out, "  failure: {f}")?;
        }
        Ok(())
    }

    fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self)
    }
}
