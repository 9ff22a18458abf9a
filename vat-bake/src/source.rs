//! One source trait and one bake -> verify -> write path for every mode.
//!
//! A [`Source`] is anything vat bakes: the glTF rig and mesh sequences ([`crate::rig::Rig`], soft
//! mode, skeletal or not), rigid pieces ([`crate::rigid::RigidSource`]), fluid frames
//! (`Box<dyn `[`crate::fluid::FluidFrames`]`>`), particles (`Box<dyn
//! `[`crate::sprite::SpriteFrames`]`>`), and the importers' results, which are one of those. Each
//! mode keeps its own bake and verification ([`crate::prepare`], [`crate::rigid`],
//! [`crate::fluid`], [`crate::sprite`]); this module is the one entry to them:
//!
//! 1. [`bake`] a source with the one [`BakeOptions`] (each mode reads the options that apply to it)
//!    into a [`Baked`]: the file, not yet written, and its [`Figures`];
//! 2. [`BakedFile::write_pending`] it to a temporary file beside the output and read it back;
//! 3. [`Source::verify`] what was read back against the source: a [`Report`];
//! 4. commit the temporary file only when the report passed.
//!
//! The CLI runs 2 to 4 the same way for every mode (`vat bake`), and 3 alone for `vat verify`.

use std::io::Write;
use std::path::Path;

use vat_core::container::{Asset, VatMode};
use vat_core::files::PendingFile;

use crate::Result;
use crate::prepare::{BakeOptions, PreparedBake, Progress};
use crate::verify::VerifyOptions;

/// Something vat bakes into a `.vat` file and verifies a file against.
pub trait Source {
    /// The mode of the files it bakes.
    fn mode(&self) -> VatMode;

    /// Bakes the source with `options` (the ones that apply to its mode), reporting progress to
    /// `progress` where the bake is long.
    ///
    /// # Errors
    /// The mode's bake errors.
    fn bake(&self, options: &BakeOptions, progress: &mut dyn FnMut(Progress)) -> Result<Baked>;

    /// Verifies `asset` (a file of [`Source::mode`]) against the source.
    ///
    /// # Errors
    /// The mode's verification errors (an asset of another mode, a source that cannot be read);
    /// a file that does not match is a report that did not pass, not an error.
    fn verify(&self, asset: &Asset<'_>, options: &VerifyOptions) -> Result<Box<dyn Report>>;
}

/// The result of [`bake`]: the file, not yet written, and its figures.
pub struct Baked {
    /// The file.
    pub file: BakedFile,
    /// What the bake says about it.
    pub figures: Box<dyn Figures>,
}

/// A baked file, not yet written.
pub enum BakedFile {
    /// A soft-mode bake, whose blobs are streamed to the file as they are.
    Prepared(Box<PreparedBake>),
    /// The whole file image.
    Bytes(Vec<u8>),
}

impl BakedFile {
    /// Writes the file to a temporary file beside `path`, to be read back, checked and then
    /// [`PendingFile::commit`]ted, or dropped (which removes it).
    ///
    /// # Errors
    /// [`crate::BakeError::Core`] with the path for an I/O failure or a file too large to lay out.
    pub fn write_pending(&self, path: &Path) -> Result<PendingFile> {
        match self {
            BakedFile::Prepared(prepared) => prepared.write_pending(path),
            BakedFile::Bytes(bytes) => Ok(PendingFile::create(path, &mut |w| w.write_all(bytes))?),
        }
    }

    /// The memory of the bake's largest buffer, emptied, to read the written file back into (fresh
    /// memory costs a page fault per 4 KiB).
    pub fn into_reusable_buffer(self) -> Vec<u8> {
        match self {
            BakedFile::Prepared(prepared) => (*prepared).into_reusable_buffer(),
            BakedFile::Bytes(mut bytes) => {
                bytes.clear();
                bytes
            }
        }
    }
}

/// What a bake says about itself, printed by `vat bake` before the verification's lines.
pub trait Figures {
    /// The first line, `baked WHAT -> PATH ...` (`what` names the source, `path` the output), and
    /// the lines that follow it: notes, clips, levels.
    ///
    /// # Errors
    /// Those of `out`.
    fn write_summary(&self, out: &mut dyn Write, what: &str, path: &Path) -> std::io::Result<()>;

    /// Things the user should know, printed after the verification's lines (with its warnings).
    fn warnings(&self) -> &[String] {
        &[]
    }
}

/// A verification report of any mode (a mode's own figures: downcast it, as `&dyn Any`, to the
/// mode's report type).
pub trait Report: std::any::Any {
    /// Whether every check passed.
    fn passed(&self) -> bool;

    /// One line per failed check.
    fn failures(&self) -> &[String];

    /// Things the user should know that do not fail the file.
    fn warnings(&self) -> &[String] {
        &[]
    }

    /// The report's lines: one per playback path or figure checked, then one per failure.
    ///
    /// # Errors
    /// Those of `out`.
    fn write_lines(&self, out: &mut dyn Write) -> std::io::Result<()>;

    /// The report as pretty-printed JSON.
    ///
    /// # Errors
    /// Those of `serde_json`.
    fn to_json(&self) -> serde_json::Result<String>;
}

/// Bakes `source` with `options` (see the module docs): the one entry to every mode's bake.
///
/// # Errors
/// [`crate::BakeError::InvalidOption`] for options no bake accepts
/// ([`crate::prepare::validate_options`]); the mode's bake errors.
pub fn bake(source: &dyn Source, options: &BakeOptions, progress: &mut dyn FnMut(Progress)) -> Result<Baked> {
    crate::prepare::validate_options(options)?;
    source.bake(options, progress)
}

/// `x / y / z` of a per-axis figure, as the reports print them.
pub(crate) fn fmt3(v: [f64; 3]) -> String {
    format!("{:.5} / {:.5} / {:.5}", v[0], v[1], v[2])
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
