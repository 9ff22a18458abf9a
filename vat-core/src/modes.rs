//! The modes, one module each: a mode (soft, [`rigid`], [`fluid`], [`sprite`]) is one way a `.vat`
//! file animates ([`VatMode`]), and its module holds everything of it: its constants and texel
//! formats, its section's validation against the file, its CPU reference decode (re-exported by
//! [`crate::format::reference`]), the group-1 textures it binds and its entry in the table; its
//! shader code is `src/shaders/<mode>.wgsl`.
//!
//! The table [`MODES`] holds what every layer asks of a mode: whether a manifest has its section,
//! the section's validation (the reader runs it), the group-1 textures it binds (the asset's
//! resources gather them, 1x1 stand-ins when the file has no such section), and the program and
//! decode entry point that draw and decode its bodies (the frame plan and verification pick them).
//! The reader, the resource list and the plan iterate [`MODES`]; they do not name the modes one by
//! one. `ARCHITECTURE.md` lists the files a new mode touches.

pub mod bone;
pub mod fluid;
pub mod rigid;
pub mod soft;
pub mod sprite;

use crate::clip::ClipRowMap;
use crate::container::{Asset, Limits, Manifest, VatMode};
use crate::gpu::TextureData;
use crate::pipeline::Program;
use crate::render::RenderMode;

/// What a section's validation sees: the manifest, the file and the counts already checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SectionCheck<'a> {
    pub(crate) manifest: &'a Manifest,
    pub(crate) bytes: &'a [u8],
    pub(crate) limits: &'a Limits,
    /// Vertices per frame of the manifest.
    pub(crate) vertex_count: u64,
    /// Frames of every clip.
    pub(crate) frame_count: u64,
    pub(crate) clip_map: &'a ClipRowMap,
}

/// One group-1 texture of a mode: binding name, debug label, contents.
pub type ModeTexture<'a> = (&'static str, &'static str, TextureData<'a>);

/// One mode and what each layer asks of it.
#[derive(Clone, Copy)]
pub struct ModeEntry {
    /// The mode.
    pub mode: VatMode,
    /// Whether `manifest` holds this mode's section.
    pub present: fn(&Manifest) -> bool,
    /// The section's checks against the file (run by the reader when the section is present).
    pub(crate) validate: fn(&SectionCheck<'_>) -> crate::Result<()>,
    /// The group-1 textures the mode binds, from the asset (stand-ins where it has no section).
    pub textures: for<'a> fn(&Asset<'a>) -> Vec<ModeTexture<'a>>,
    /// The program that draws its bodies in [`RenderMode::Vat`] (`None`: the render mode's own,
    /// [`Program::Body`]).
    pub program: Option<Program>,
    /// The compute entry point that decodes its vertices in [`RenderMode::Vat`] for verification
    /// (`None`: the render mode's own).
    pub decode_entry_point: Option<&'static str>,
}

impl std::fmt::Debug for ModeEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModeEntry")
            .field("mode", &self.mode)
            .field("program", &self.program)
            .field("decode_entry_point", &self.decode_entry_point)
            .finish_non_exhaustive()
    }
}

/// Every mode, in [`VatMode`] order: each mode's entry lives in its module.
pub static MODES: [ModeEntry; 4] = [soft::ENTRY, rigid::ENTRY, fluid::ENTRY, sprite::ENTRY];

/// The table's entry of `mode`.
pub fn mode_entry(mode: VatMode) -> &'static ModeEntry {
    // MODES is in VatMode order (tested).
    &MODES[mode as usize]
}

/// The program that draws the bodies of an asset of `mode` in render mode `render`: the mode's own
/// in [`RenderMode::Vat`] (rigid, fluid, sprite), else [`Program::Body`]`(render)`.
pub fn body_program(mode: VatMode, render: RenderMode) -> Program {
    match (mode_entry(mode).program, render) {
        (Some(program), RenderMode::Vat) => program,
        _ => Program::Body(render),
    }
}

/// The compute entry point that decodes an asset of `mode` in render mode `render` for
/// verification: the mode's own in [`RenderMode::Vat`], else [`RenderMode::decode_entry_point`].
pub fn decode_entry_point(mode: VatMode, render: RenderMode) -> Option<&'static str> {
    match (mode_entry(mode).decode_entry_point, render) {
        (Some(entry), RenderMode::Vat) => Some(entry),
        _ => render.decode_entry_point(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_every_mode_once_in_order() {
        let all = [VatMode::Soft, VatMode::Rigid, VatMode::Fluid, VatMode::Sprite];
        assert_eq!(MODES.len(), all.len());
        for (i, mode) in all.into_iter().enumerate() {
            assert_eq!(MODES[i].mode, mode, "entry {i}");
            assert_eq!(mode_entry(mode).mode, mode);
        }
    }

    #[test]
    fn programs_and_decode_entry_points_follow_the_render_mode() {
        assert_eq!(body_program(VatMode::Rigid, RenderMode::Vat), Program::Rigid);
        assert_eq!(body_program(VatMode::Rigid, RenderMode::Bone), Program::Body(RenderMode::Bone));
        assert_eq!(body_program(VatMode::Soft, RenderMode::Vat), Program::Body(RenderMode::Vat));
        assert_eq!(
            decode_entry_point(VatMode::Fluid, RenderMode::Vat),
            Some(crate::gpu::ENTRY_POINT_DECODE_FLUID)
        );
        assert_eq!(decode_entry_point(VatMode::Soft, RenderMode::Vat), RenderMode::Vat.decode_entry_point());
        // Every mode with textures binds names of group 1 of the binding table.
        for entry in &MODES {
            assert_eq!(entry.program.is_some(), entry.decode_entry_point.is_some(), "{:?}", entry.mode);
        }
    }
}
