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

/// Lays out the file without validating the manifest's contents (the tests use it to build corrupt
/// files with a consistent blob table).
pub(super) fn assemble(mut manifest: Manifest, blobs: &[Vec<u8>]) -> Result<Vec<u8>> {
    // Blob offsets depend on the manifest length, which depends on the (varint-encoded) offsets.
    // Iterate to the fixed point: the length never shrinks from one pass to the next (longer manifest
    // -> larger offsets -> varints at least as long), and is bounded, so it settles, in practice on
    // the second or third pass.
    let mut manifest_len = 0u64;
    let mut passes = 0u32;
    let encoded = loop {
        manifest.blobs = blob_entries(manifest_len, blobs)?;
        let encoded =
            postcard::to_stdvec(&manifest).map_err(|e| Error::ManifestDecode { message: e.to_string() })?;
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
    let file_len = manifest.blobs.last().map_or(HEADER_LEN + manifest_len, |b| b.offset + b.length);
    let mut out = Vec::with_capacity(usize::try_from(file_len).unwrap_or(0));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&manifest.format_version().to_le_bytes());
    out.extend_from_slice(&encoded_len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&encoded).to_le_bytes());
    out.extend_from_slice(&encoded);
    for (entry, data) in manifest.blobs.iter().zip(blobs) {
        out.resize(entry.offset as usize, 0);
        out.extend_from_slice(data);
    }
    Ok(out)
}

/// The blob table for a manifest of `manifest_len` bytes: each blob at the next 16-byte boundary.
fn blob_entries(manifest_len: u64, blobs: &[Vec<u8>]) -> Result<Vec<BlobEntry>> {
    let overflow = Error::LimitExceeded { what: "file size in bytes", value: u64::MAX, limit: u64::MAX };
    let mut end = HEADER_LEN + manifest_len;
    blobs
        .iter()
        .map(|data| {
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
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path.file_name().ok_or_else(|| Error::Io {
        path: path.display().to_string(),
        kind: format!("{:?}", std::io::ErrorKind::InvalidInput),
        message: "path has no file name".to_owned(),
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Unique per process and call, so concurrent writers never share a temporary file.
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        file_name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let io = |p: &Path, e: std::io::Error| Error::Io {
        path: p.display().to_string(),
        kind: format!("{:?}", e.kind()),
        message: e.to_string(),
    };
    let written = (|| -> std::result::Result<(), (PathBuf, std::io::Error)> {
        let mut file =
            OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| (tmp.clone(), e))?;
        file.write_all(bytes).map_err(|e| (tmp.clone(), e))?;
        file.sync_all().map_err(|e| (tmp.clone(), e))?;
        drop(file);
        fs::rename(&tmp, path).map_err(|e| (path.to_path_buf(), e))
    })();
    if let Err((p, e)) = written {
        // Best effort: the temporary file may not exist (creation failed), which is fine.
        let _ = fs::remove_file(&tmp);
        return Err(io(&p, e));
    }
    // The rename is durable only once the directory entry is; Windows cannot open directories.
    #[cfg(unix)]
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io(dir, e))?;
    Ok(())
}
