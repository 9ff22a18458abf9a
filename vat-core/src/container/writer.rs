//! The writer: blobs in, one validated `.vat` byte vector out; and an atomic file write.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

use super::manifest::{BlobEntry, BlobId, Manifest};
use super::reader::{Asset, Limits};
use super::{HEADER_LEN, MAGIC, align_up};

/// Collects blobs, then lays them out with a manifest into one `.vat` file image.
///
/// ```
/// use vat_core::container::{Asset, ContainerWriter, Manifest};
/// let writer = ContainerWriter::new();
/// let bytes = writer.finish(Manifest::new("empty", 1)).unwrap();
/// assert_eq!(Asset::parse(&bytes).unwrap().manifest().name, "empty");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContainerWriter {
    blobs: Vec<Vec<u8>>,
}

impl ContainerWriter {
    /// A writer with no blobs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a blob (raw little-endian data, see the manifest types for what each holds) and returns
    /// its id, the next index of [`Manifest::blobs`]. Blobs are stored in the order they are added.
    pub fn add_blob(&mut self, bytes: impl Into<Vec<u8>>) -> BlobId {
        self.blobs.push(bytes.into());
        BlobId((self.blobs.len() - 1) as u32)
    }

    /// Blobs added so far.
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }

    /// Lays out `manifest` (its [`Manifest::blobs`] replaced by the added blobs' entries) and the blobs
    /// into a file image, then validates that image with [`Asset::parse`] under the default [`Limits`].
    /// The same inputs always give the same bytes.
    ///
    /// # Errors
    /// Any error [`Asset::parse`] would report for the result (the writer never produces a file the
    /// reader refuses), or [`Error::LimitExceeded`] for a manifest longer than `u32::MAX` bytes.
    pub fn finish(self, manifest: Manifest) -> Result<Vec<u8>> {
        self.finish_with_limits(manifest, &Limits::default())
    }

    /// [`ContainerWriter::finish`], validating under `limits` instead of the default ones.
    ///
    /// # Errors
    /// As [`ContainerWriter::finish`].
    pub fn finish_with_limits(self, manifest: Manifest, limits: &Limits) -> Result<Vec<u8>> {
        let bytes = assemble(manifest, &self.blobs)?;
        Asset::parse_with_limits(&bytes, limits)?;
        Ok(bytes)
    }
}

/// [`ContainerWriter::finish`] of borrowed blobs: the file image built with one copy of each blob
/// (the writer would take a second), validated by [`Asset::parse`] under the default [`Limits`].
///
/// # Errors
/// As [`ContainerWriter::finish`].
pub fn container_bytes(manifest: Manifest, blobs: &[&[u8]]) -> Result<Vec<u8>> {
    let bytes = assemble(manifest, blobs)?;
    Asset::parse(&bytes)?;
    Ok(bytes)
}

/// Streams the file image of `manifest` and `blobs` (laid out as [`ContainerWriter::finish`] lays
/// them) into `out`, without holding it in memory, and returns its length. Not validated: read
/// the result back with [`Asset::parse`] before trusting it (a [`PendingFile`] lets a caller do
/// that before the file takes its final name).
///
/// # Errors
/// [`Error::Io`] (naming `what`) when `out` fails; [`Error::LimitExceeded`] as for
/// [`ContainerWriter::finish`].
pub fn write_container(out: &mut dyn Write, what: &Path, manifest: Manifest, blobs: &[&[u8]]) -> Result<u64> {
    let (head, manifest) = header_and_manifest(manifest, blobs)?;
    let io = |e: std::io::Error| Error::Io {
        path: what.display().to_string(),
        kind: format!("{:?}", e.kind()),
        message: e.to_string(),
    };
    out.write_all(&head).map_err(io)?;
    let mut at = head.len() as u64;
    let zeros = [0u8; 16];
    for (entry, data) in manifest.blobs.iter().zip(blobs) {
        // Blobs start at 16-byte boundaries: at most 15 bytes of padding.
        let pad = (entry.offset - at) as usize;
        out.write_all(&zeros[..pad.min(16)]).map_err(io)?;
        out.write_all(data).map_err(io)?;
        at = entry.offset + entry.length;
    }
    out.flush().map_err(io)?;
    Ok(at)
}

/// Lays out the file without validating the manifest's contents (the tests use it to build corrupt
/// files with a consistent blob table).
pub(super) fn assemble<B: AsRef<[u8]>>(manifest: Manifest, blobs: &[B]) -> Result<Vec<u8>> {
    let (head, manifest) = header_and_manifest(manifest, blobs)?;
    let file_len = manifest.blobs.last().map_or(head.len() as u64, |b| b.offset + b.length);
    let mut out = Vec::with_capacity(usize::try_from(file_len).unwrap_or(0));
    out.extend_from_slice(&head);
    for (entry, data) in manifest.blobs.iter().zip(blobs) {
        out.resize(entry.offset as usize, 0);
        out.extend_from_slice(data.as_ref());
    }
    Ok(out)
}

/// The header and encoded manifest of the file (the bytes before the first blob's padding), and
/// the manifest with its blob table filled in.
fn header_and_manifest<B: AsRef<[u8]>>(mut manifest: Manifest, blobs: &[B]) -> Result<(Vec<u8>, Manifest)> {
    // Blob offsets depend on the manifest length, which depends on the (varint-encoded) offsets.
    // Iterate to the fixed point: the length never shrinks from one pass to the next (longer manifest
    // -> larger offsets -> varints at least as long), and is bounded, so it settles, in practice on
    // the second or third pass.
    let mut manifest_len = 0u64;
    let mut passes = 0u32;
    let encoded = loop {
        manifest.blobs = blob_entries(manifest_len, blobs)?;
        let mut encoded =
            postcard::to_stdvec(&manifest).map_err(|e| Error::ManifestDecode { message: e.to_string() })?;
        if manifest.format_version() < super::FORMAT_VERSION_ROOT_MOTION {
            // Versions before 5 end before the root-motion list: drop its empty length (a 0 byte).
            debug_assert_eq!(encoded.last(), Some(&0));
            encoded.pop();
        }
        if manifest.format_version() < super::FORMAT_VERSION_RIGID {
            // Versions 1 and 2 end before the rigid slot: drop its `None` (postcard's 0 byte).
            debug_assert_eq!(encoded.last(), Some(&0));
            encoded.pop();
        }
        if encoded.len() as u64 == manifest_len {
            break encoded;
        }
        manifest_len = encoded.len() as u64;
        passes += 1;
        if passes > 64 {
            return Err(Error::LimitExceeded {
                what: "manifest layout passes",
                value: passes.into(),
                limit: 64,
            });
        }
    };
    let encoded_len = u32::try_from(encoded.len()).map_err(|_| Error::LimitExceeded {
        what: "manifest length in bytes",
        value: encoded.len() as u64,
        limit: u32::MAX.into(),
    })?;
    let mut out = Vec::with_capacity(HEADER_LEN as usize + encoded.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&manifest.format_version().to_le_bytes());
    out.extend_from_slice(&encoded_len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&encoded).to_le_bytes());
    out.extend_from_slice(&encoded);
    Ok((out, manifest))
}

/// The blob table for a manifest of `manifest_len` bytes: each blob at the next 16-byte boundary.
fn blob_entries<B: AsRef<[u8]>>(manifest_len: u64, blobs: &[B]) -> Result<Vec<BlobEntry>> {
    let overflow = Error::LimitExceeded { what: "file size in bytes", value: u64::MAX, limit: u64::MAX };
    let mut end = HEADER_LEN + manifest_len;
    blobs
        .iter()
        .map(|data| {
            let data = data.as_ref();
            let offset = align_up(end).ok_or(overflow.clone())?;
            let length = data.len() as u64;
            end = offset.checked_add(length).ok_or(overflow.clone())?;
            Ok(BlobEntry { offset, length, crc32: crc32fast::hash(data) })
        })
        .collect()
}

/// Writes `bytes` to `path` so that `path` holds either its old contents or all of `bytes`, never a
/// partial file: write a temporary file in the same directory, flush it to disk, rename it over
/// `path`, then (on Unix) flush the directory. On failure the temporary file is removed.
///
/// # Errors
/// [`Error::Io`] with the path involved and the I/O error's kind and message.
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
    /// Creates the temporary file (`.NAME.PID-N.tmp` in `path`'s directory, never an existing
    /// file), lets `write` fill it, and starts flushing it to disk on a thread of its own (the
    /// data is readable at once; [`PendingFile::commit`] renames only once it is on disk).
    ///
    /// # Errors
    /// [`Error::Io`] with the path involved when `path` has no file name, or creating, writing or
    /// flushing fails (the temporary file is then removed).
    pub fn create(
        path: &Path,
        write: &mut dyn FnMut(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
    ) -> Result<PendingFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let file_name = path.file_name().ok_or_else(|| Error::Io {
            path: path.display().to_string(),
            kind: format!("{:?}", std::io::ErrorKind::InvalidInput),
            message: "path has no file name".to_owned(),
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Unique per process and call, so concurrent writers never share a temporary file.
        let tmp = dir.join(format!(
            ".{}.{}-{}.tmp",
            file_name.to_string_lossy(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file =
            OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| io_error(&tmp, e))?;
        // From here on, dropping `pending` removes the temporary file.
        let mut pending = PendingFile { tmp, path: path.to_path_buf(), dir, committed: false, sync: None };
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        write(&mut out).map_err(|e| io_error(&pending.tmp, e))?;
        let file = out.into_inner().map_err(|e| io_error(&pending.tmp, e.into_error()))?;
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

    /// Renames the temporary file over the final path and (on Unix) flushes the directory.
    ///
    /// # Errors
    /// [`Error::Io`] when flushing the data to disk, the rename or the directory flush fails (the
    /// temporary file is removed).
    pub fn commit(mut self) -> Result<()> {
        if let Some(sync) = self.sync.take() {
            let flushed =
                sync.join().unwrap_or_else(|_| Err(std::io::Error::other("the flush thread panicked")));
            flushed.map_err(|e| io_error(&self.tmp, e))?;
        }
        fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        self.committed = true;
        // The rename is durable only once the directory entry is; Windows cannot open directories.
        #[cfg(unix)]
        fs::File::open(&self.dir).and_then(|d| d.sync_all()).map_err(|e| io_error(&self.dir, e))?;
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

fn io_error(p: &Path, e: std::io::Error) -> Error {
    Error::Io { path: p.display().to_string(), kind: format!("{:?}", e.kind()), message: e.to_string() }
}
