//! The writing gate: regular files only, never replacing what is not one, all or nothing.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{FileKind, FileProblem, io_error, refused};
use crate::{Error, Result};

/// Checks that `path` may receive an output: it does not exist (and its folder does), or it is a
/// regular file (which the output will replace). Commands call this before they read any input, so a
/// refused target costs nothing; [`PendingFile`] checks again when it is created and right before
/// its rename.
///
/// # Errors
/// [`Error::FileRefused`] with [`FileProblem::OutputNotRegular`] for a folder, device (`/dev/null`),
/// FIFO or socket, [`FileProblem::OutputSymlink`] for a symbolic link (dangling or not),
/// [`FileProblem::OutputFolderMissing`] when the folder it would go in does not exist;
/// [`Error::Io`] when the file system cannot answer.
pub fn check_output(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) => match FileKind::of(&meta) {
            FileKind::Regular => Ok(()),
            FileKind::Symlink => {
                let target = fs::read_link(path).ok().map(|t| t.display().to_string());
                Err(refused(path, FileProblem::OutputSymlink { target }))
            }
            kind => Err(refused(path, FileProblem::OutputNotRegular { kind })),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = parent_of(path);
            match fs::metadata(&dir) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(m) => Err(refused(&dir, FileProblem::OutputNotRegular { kind: FileKind::of(&m) })),
                Err(_) => Err(refused(path, FileProblem::OutputFolderMissing)),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(refused(path, FileProblem::OutputFolderMissing))
        }
        Err(e) => Err(io_error(path, e)),
    }
}

fn check_output_folder(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => match FileKind::of(&meta) {
            FileKind::Folder => Ok(()),
            FileKind::Symlink => {
                let target = fs::read_link(dir).ok().map(|t| t.display().to_string());
                Err(refused(dir, FileProblem::OutputSymlink { target }))
            }
            kind => Err(refused(dir, FileProblem::OutputNotFolder { kind })),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = parent_of(dir);
            if fs::metadata(&parent).is_ok_and(|m| m.is_dir()) {
                Ok(())
            } else {
                Err(refused(dir, FileProblem::OutputFolderMissing))
            }
        }
        Err(e) => Err(io_error(dir, e)),
    }
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A name beside `path` that no other writer uses: `.NAME.PID-N.tmp`.
fn temporary_beside(path: &Path) -> Result<(PathBuf, PathBuf)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path.file_name().ok_or_else(|| Error::Io {
        path: path.display().to_string(),
        kind: format!("{:?}", std::io::ErrorKind::InvalidInput),
        message: "path has no file name".to_owned(),
    })?;
    let dir = parent_of(path);
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        file_name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    Ok((dir, tmp))
}

/// Writes `bytes` to `path` so that `path` holds either its old contents or all of `bytes`, never a
/// partial file: the [`check_output`] rules, a temporary file in the same folder, flushed to disk,
/// renamed over `path`, then (on Unix) the folder flushed. On failure nothing is left.
///
/// # Errors
/// As [`check_output`]; [`Error::Io`] with the path involved when writing, flushing or renaming fails
/// (a full disk, a file-size limit).
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    PendingFile::create(path, &mut |w| w.write_all(bytes))?.commit()
}

/// A file written to a temporary name beside its final path, flushed to disk, that takes its final
/// name only on [`PendingFile::commit`]: a caller can read it back and check it first (the bake
/// verifies what is on disk, not a copy). Dropped without a commit, the temporary file is removed,
/// so a failed or refused write leaves nothing behind.
#[derive(Debug)]
#[must_use = "a pending file is removed unless committed"]
pub struct PendingFile {
    tmp: PathBuf,
    path: PathBuf,
    dir: PathBuf,
    committed: bool,
    /// The flush of the file's data to disk, running while the caller reads it back and checks it;
    /// [`PendingFile::commit`] waits for it before the rename.
    sync: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl PendingFile {
    /// Checks `path` ([`check_output`]), creates the temporary file (`.NAME.PID-N.tmp` in `path`'s
    /// folder, never an existing file), lets `write` fill it (buffered; a large file's aligned chunks
    /// go to the disk without the page cache where the platform allows, see [`super::read_back`]),
    /// and starts flushing it to disk on a
    /// thread of its own (the data is readable at once; [`PendingFile::commit`] renames only once it
    /// is on disk).
    ///
    /// # Errors
    /// As [`check_output`]; [`Error::Io`] with the path involved when `path` has no file name, or
    /// creating, writing or flushing fails (the temporary file is then removed).
    pub fn create(
        path: &Path,
        write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<PendingFile> {
        check_output(path)?;
        let (dir, tmp) = temporary_beside(path)?;
        let file =
            OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| io_error(&tmp, e))?;
        // From here on, dropping `pending` removes the temporary file.
        let mut pending = PendingFile { tmp, path: path.to_path_buf(), dir, committed: false, sync: None };
        let mut out = super::large::OutputWriter::new(file, &pending.tmp);
        write(&mut out).map_err(|e| io_error(&pending.tmp, e))?;
        let file = out.finish().map_err(|e| io_error(&pending.tmp, e))?;
        // Where threads cannot be spawned, flush here instead.
        match std::thread::Builder::new().name("vat-fsync".into()).spawn({
            let file = file.try_clone().map_err(|e| io_error(&pending.tmp, e))?;
            move || file.sync_all()
        }) {
            Ok(handle) => pending.sync = Some(handle),
            Err(_) => file.sync_all().map_err(|e| io_error(&pending.tmp, e))?,
        }
        Ok(pending)
    }

    /// The temporary file's path (to read it back before committing).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// The path the file takes on [`PendingFile::commit`].
    pub fn final_path(&self) -> &Path {
        &self.path
    }

    /// Checks the final path again ([`check_output`]: something else may have appeared there since),
    /// renames the temporary file over it and (on Unix) flushes the folder.
    ///
    /// # Errors
    /// As [`check_output`]; [`Error::Io`] when flushing the data to disk, the rename or the folder
    /// flush fails (the temporary file is removed).
    pub fn commit(mut self) -> Result<()> {
        self.wait_for_flush()?;
        check_output(&self.path)?;
        fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        self.committed = true;
        // The rename is durable only once the folder entry is; Windows cannot open folders.
        #[cfg(unix)]
        fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| io_error(&self.dir, e))?;
        Ok(())
    }

    fn wait_for_flush(&mut self) -> Result<()> {
        if let Some(sync) = self.sync.take() {
            let flushed =
                sync.join().unwrap_or_else(|_| Err(std::io::Error::other("the flush thread panicked")));
            flushed.map_err(|e| io_error(&self.tmp, e))?;
        }
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if let Some(sync) = self.sync.take() {
            // Its outcome no longer matters, but the file is removed only once no thread writes it.
            let _ = sync.join();
        }
        if !self.committed {
            // Best effort: nothing else can be done about a temporary file that cannot be removed.
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// A multi-file output (an OpenVAT export: textures, a sidecar, a mesh): every file is written into
/// a temporary folder beside the target, flushed, and [`PendingFolder::commit`] makes them appear
/// together. When the target folder does not exist, the temporary folder is renamed into place
/// whole (all files or none). When it exists, each file is renamed into it only once every file has
/// been written and flushed (a failure before that leaves the folder as it was). Dropped without a
/// commit, the temporary folder and everything in it are removed.
#[derive(Debug)]
#[must_use = "a pending folder is removed unless committed"]
pub struct PendingFolder {
    tmp: PathBuf,
    dir: PathBuf,
    files: Vec<PathBuf>,
    committed: bool,
}

impl PendingFolder {
    /// Checks that `dir` may receive a multi-file output: it does not exist (and its parent does), or
    /// it is a real folder (not a link, a file or a device). Commands call this before they read any
    /// input; [`PendingFolder::create`] and [`PendingFolder::commit`] check again.
    ///
    /// # Errors
    /// As [`check_output`], for `dir` as a folder.
    pub fn check(dir: &Path) -> Result<()> {
        check_output_folder(dir)
    }

    /// Checks `dir` ([`PendingFolder::check`]) and creates the temporary folder beside it.
    ///
    /// # Errors
    /// [`Error::FileRefused`] as for [`check_output`], for `dir` as a folder; [`Error::Io`] when the
    /// temporary folder cannot be made.
    pub fn create(dir: &Path) -> Result<PendingFolder> {
        check_output_folder(dir)?;
        let (_, tmp) = temporary_beside(dir)?;
        fs::create_dir(&tmp).map_err(|e| io_error(&tmp, e))?;
        Ok(PendingFolder { tmp, dir: dir.to_path_buf(), files: Vec::new(), committed: false })
    }

    /// Checks that `name` may be written in the target folder (an existing entry of that name must
    /// be a regular file), then writes `bytes` as `name` in the temporary folder and flushes it.
    ///
    /// # Errors
    /// As [`check_output`] for the final path; [`Error::Io`] for a name with a folder part, or when
    /// writing or flushing fails.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let file_name = Path::new(name);
        if file_name.components().count() != 1 || file_name.file_name().is_none() {
            return Err(Error::Io {
                path: self.dir.join(name).display().to_string(),
                kind: format!("{:?}", std::io::ErrorKind::InvalidInput),
                message: "an output name must be a plain file name".to_owned(),
            });
        }
        if self.dir.exists() {
            check_output(&self.dir.join(name))?;
        }
        let path = self.tmp.join(name);
        let mut file =
            OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| io_error(&path, e))?;
        file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|e| io_error(&path, e))?;
        self.files.push(file_name.to_path_buf());
        Ok(())
    }

    /// The temporary folder (to read the files back before committing).
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// Makes the files appear in the target folder (see [`PendingFolder`]).
    ///
    /// # Errors
    /// As [`check_output`] for the folder and each file; [`Error::Io`] when a rename or a flush fails.
    pub fn commit(mut self) -> Result<()> {
        #[cfg(unix)]
        fs::File::open(&self.tmp).and_then(|d| d.sync_all()).map_err(|e| io_error(&self.tmp, e))?;
        check_output_folder(&self.dir)?;
        if fs::symlink_metadata(&self.dir).is_err() {
            fs::rename(&self.tmp, &self.dir).map_err(|e| io_error(&self.dir, e))?;
            self.committed = true;
        } else {
            for name in &self.files {
                check_output(&self.dir.join(name))?;
            }
            for name in &self.files {
                fs::rename(self.tmp.join(name), self.dir.join(name))
                    .map_err(|e| io_error(&self.dir.join(name), e))?;
            }
            #[cfg(unix)]
            fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| io_error(&self.dir, e))?;
        }
        #[cfg(unix)]
        fs::File::open(parent_of(&self.dir))
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error(&self.dir, e))?;
        Ok(())
    }
}

impl Drop for PendingFolder {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort; after a commit into an existing folder only the emptied folder is left.
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}
