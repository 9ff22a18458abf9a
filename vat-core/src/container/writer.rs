//! The writer: blobs in, one validated `.vat` byte vector out; and an atomic file write.

use std::io::Write;
use std::path::Path;

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
/// the result back with [`Asset::parse`] before trusting it (a [`crate::files::PendingFile`] lets a caller do
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
        // Older versions end before their missing trailing sections: drop those sections' empty
        // encodings (postcard's 0 bytes).
        for _ in 0..super::omitted_trailing_bytes(manifest.format_version()) {
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
            Ok(BlobEntry { offset, length, crc32: super::blob_crc32(data) })
        })
        .collect()
}
