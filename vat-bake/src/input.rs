//! vat-bake's side of vat-core's read gate ([`vat_core::files`]): frame folders listed and their files
//! read through it, so every folder reader follows the same rules (regular files inside the folder,
//! nothing waited on, every read bounded).

use std::path::{Path, PathBuf};

use vat_core::files::{FileKind, FileProblem, InputFolder, ReadLimit};

use crate::{BakeError, Result};

/// Reads the regular file `path` confined to its own folder (a link out of it, a FIFO or a device
/// is refused), at most `limit.max_bytes`.
pub(crate) fn read_in_folder(path: &Path, limit: ReadLimit) -> Result<Vec<u8>> {
    let name = path.file_name().ok_or_else(|| BakeError::InvalidInput {
        part: path.display().to_string(),
        problem: "names no file".into(),
    })?;
    InputFolder::containing(path)?.read(Path::new(name), limit).map_err(|e| over_budget(path, e))
}

/// The read gate's [`FileProblem::TooLarge`] for a budget as vat-bake reports budgets
/// ([`BakeError::OverBudget`], with the numbers); other errors as they are.
pub(crate) fn over_budget(path: &Path, e: vat_core::Error) -> BakeError {
    match e {
        vat_core::Error::FileRefused { problem: FileProblem::TooLarge { size, limit, option }, .. } => {
            BakeError::OverBudget {
                what: format!("reading {}", path.display()),
                needed: size.max(limit.saturating_add(1)),
                limit,
                hint: if option == "--max-memory" {
                    "raise --max-memory if the files are trusted"
                } else {
                    option
                },
            }
        }
        other => other.into(),
    }
}

/// A frame folder's entries, split by [`list_frames`].
#[derive(Debug, Default)]
pub(crate) struct FrameListing {
    /// Entries whose name makes them frames, each a regular file inside the folder (unsorted).
    pub(crate) frames: Vec<PathBuf>,
    /// Names of the other entries that are not folders (sorted).
    pub(crate) others: Vec<String>,
    /// Names of sub-folders (sorted).
    pub(crate) folders: Vec<String>,
    /// The folder's own name (links resolved), if it has one.
    pub(crate) name: Option<String>,
}

/// Lists `dir` through the read gate. Sub-folders are listed apart. An entry `is_frame` accepts by name must be a regular file
/// inside the folder (after its links): anything else (a link out of the folder, a loop, a FIFO, a
/// device) is refused naming the entry and the rule, never skipped silently and never read.
pub(crate) fn list_frames(dir: &Path, is_frame: impl Fn(&Path) -> bool) -> Result<FrameListing> {
    let folder = InputFolder::open(dir)?;
    let mut listing = FrameListing { name: folder.name(), ..FrameListing::default() };
    for entry in folder.entries()? {
        let shown = dir.join(&entry.name);
        if entry.kind == Ok(FileKind::Folder) {
            listing.folders.push(entry.display_name());
        } else if is_frame(&shown) {
            match entry.kind {
                Ok(FileKind::Regular) => listing.frames.push(shown),
                Ok(kind) => return Err(refused(&shown, FileProblem::NotRegular { kind })),
                Err(problem) => return Err(refused(&shown, problem)),
            }
        } else {
            listing.others.push(entry.display_name());
        }
    }
    listing.others.sort();
    listing.folders.sort();
    Ok(listing)
}

fn refused(path: &Path, problem: FileProblem) -> BakeError {
    BakeError::Core(vat_core::Error::FileRefused { path: path.display().to_string(), problem })
}
