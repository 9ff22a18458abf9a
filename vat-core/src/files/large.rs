//! Large outputs written and read back around the page cache.
//!
//! A bake writes its file once and reads it back once to verify what is on disk. Through the page
//! cache, each of those copies lands on memory the process (and, in a virtual machine, the host) has
//! not touched before: a few hundred megabytes of animation texture cost one page fault per 4 KiB,
//! twice, which takes longer than the disk does. On Linux, whole aligned chunks of a large file go
//! straight between the disk and one reused, aligned staging buffer (`O_DIRECT`), and the read-back
//! lands in the caller's own buffer; the unaligned tail and every small file take the ordinary path.
//! A file system that refuses direct I/O (`EINVAL`: tmpfs on older kernels, some network file
//! systems) gets the ordinary path for the whole file. The bytes on disk are the same either way.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Alignment of direct I/O: offsets, lengths and memory addresses. 4 KiB covers the logical block
/// size of every disk vat expects (512 B or 4 KiB).
const ALIGN: usize = 4096;
/// Bytes written per direct write; also the size below which a file is written the ordinary way.
const CHUNK: usize = 8 << 20;
/// Files below this are read back the ordinary way, in one piece.
const LARGE_READ: usize = 16 << 20;

/// Where `buf[at..]` starts at an `ALIGN`-aligned address (`buf` must have `ALIGN` bytes of slack).
fn aligned_start(buf: &[u8]) -> usize {
    buf.as_ptr().align_offset(ALIGN).min(buf.len())
}

/// The writer [`super::PendingFile::create`] hands its caller: stages the bytes in one aligned
/// chunk and writes each full chunk at its offset, directly to the disk where the platform and
/// file system allow it.
pub(super) struct OutputWriter {
    file: File,
    path: PathBuf,
    /// Opened on the first full chunk (Linux); `None` with `direct_refused` once refused.
    direct: Option<File>,
    direct_refused: bool,
    stage: Vec<u8>,
    start: usize,
    filled: usize,
    /// Bytes already in the file (a multiple of `CHUNK`).
    written: u64,
}

impl OutputWriter {
    pub(super) fn new(file: File, path: &Path) -> OutputWriter {
        OutputWriter {
            file,
            path: path.to_path_buf(),
            direct: None,
            direct_refused: !cfg!(target_os = "linux"),
            stage: Vec::new(),
            start: 0,
            filled: 0,
            written: 0,
        }
    }

    fn chunk(&mut self) -> &mut [u8] {
        if self.stage.is_empty() {
            self.stage = vec![0; CHUNK + ALIGN];
            self.start = aligned_start(&self.stage);
        }
        &mut self.stage[self.start..self.start + CHUNK]
    }

    /// Writes the staged `len` bytes (a whole chunk, or the aligned part of the last one) at
    /// `self.written`.
    fn write_staged(&mut self, len: usize) -> std::io::Result<()> {
        let at = self.written;
        let data = &self.stage[self.start..self.start + len];
        if !self.direct_refused && len.is_multiple_of(ALIGN) {
            if self.direct.is_none() {
                match open_direct_for_writing(&self.path) {
                    Ok(file) => self.direct = Some(file),
                    Err(_) => self.direct_refused = true,
                }
            }
            if let Some(direct) = &self.direct {
                match write_all_at(direct, data, at) {
                    Ok(()) => return Ok(()),
                    // Refused for this file system or device: everything from here on, this chunk
                    // included, goes the ordinary way.
                    Err(e) if e.raw_os_error() == Some(EINVAL) => {
                        self.direct = None;
                        self.direct_refused = true;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        write_all_at(&self.file, data, at)
    }

    /// Writes what is still staged and returns the file (ordinary handle) for flushing.
    pub(super) fn finish(mut self) -> std::io::Result<File> {
        if self.filled > 0 {
            // The aligned part directly (only when earlier chunks went so), the tail ordinarily.
            let aligned = if self.direct.is_some() { self.filled / ALIGN * ALIGN } else { 0 };
            if aligned > 0 {
                self.write_staged(aligned)?;
                self.written += aligned as u64;
            }
            let tail = &self.stage[self.start + aligned..self.start + self.filled];
            write_all_at(&self.file, tail, self.written)?;
        }
        Ok(self.file)
    }
}

impl Write for OutputWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let filled = self.filled;
        let chunk = self.chunk();
        let n = buf.len().min(chunk.len() - filled);
        chunk[filled..filled + n].copy_from_slice(&buf[..n]);
        self.filled += n;
        if self.filled == CHUNK {
            self.write_staged(CHUNK)?;
            self.written += CHUNK as u64;
            self.filled = 0;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Staged bytes are written by `finish`: a chunk cannot be written part-way directly.
        Ok(())
    }
}

#[cfg(unix)]
const EINVAL: i32 = libc::EINVAL;
#[cfg(not(unix))]
const EINVAL: i32 = 22;

#[cfg(target_os = "linux")]
fn open_direct_for_writing(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(path)
}

#[cfg(not(target_os = "linux"))]
fn open_direct_for_writing(_path: &Path) -> std::io::Result<File> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(target_os = "linux")]
fn open_direct_for_reading(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path)
}

#[cfg(not(target_os = "linux"))]
fn open_direct_for_reading(_path: &Path) -> std::io::Result<File> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(unix)]
fn write_all_at(file: &File, data: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, at)
}

#[cfg(not(unix))]
fn write_all_at(mut file: &File, data: &[u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.write_all(data)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(mut file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(at))?;
    file.read(buf)
}

/// The whole of a file as [`read_back`] read it: derefs to its bytes, which start at a 4 KiB-aligned
/// address (so any zero-copy view of them is aligned). [`FileImage::into_buffer`] gives the memory
/// back for reuse.
#[derive(Debug)]
pub struct FileImage {
    buffer: Vec<u8>,
    start: usize,
    len: usize,
}

impl FileImage {
    /// The buffer holding the bytes (emptied), to reuse its memory.
    pub fn into_buffer(mut self) -> Vec<u8> {
        self.buffer.clear();
        self.buffer
    }
}

impl std::ops::Deref for FileImage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buffer[self.start..self.start + self.len]
    }
}

/// Reads the whole of a file just written (a [`super::PendingFile`]'s temporary file, to verify what
/// is on disk) into `buffer`'s memory (emptied and grown as needed: a caller that has a large buffer
/// it no longer needs, such as a bake's texture, saves that much fresh memory). A large file (at
/// least 16 MiB) is read as two halves on two threads, directly from the disk where the platform
/// and file system allow it (so the check reads the disk, not a cached copy, and no page cache is
/// filled).
///
/// # Errors
/// [`crate::Error::Io`] with the path when opening or reading fails, or when the file changes length
/// while it is read.
pub fn read_back(path: &Path, buffer: Vec<u8>) -> crate::Result<FileImage> {
    read_image(path, buffer).map_err(|e| super::io_error(path, e))
}

fn read_image(path: &Path, mut buffer: Vec<u8>) -> std::io::Result<FileImage> {
    let file = File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    buffer.clear();
    if len < LARGE_READ {
        std::io::Read::read_to_end(&mut &file, &mut buffer)?;
        let len = buffer.len();
        return Ok(FileImage { buffer, start: 0, len });
    }
    let padded = len.div_ceil(ALIGN) * ALIGN;
    buffer.resize(padded + ALIGN, 0);
    let start = aligned_start(&buffer);
    let direct = open_direct_for_reading(path).ok();
    let bytes = &mut buffer[start..start + padded];
    // Two halves split at an aligned offset; each reads whole aligned blocks and stops at the end.
    let mid = (len / 2) / ALIGN * ALIGN;
    let (first, second) = bytes.split_at_mut(mid);
    let (a, b) = std::thread::scope(|scope| {
        let second_len = len - mid;
        let file = &file;
        let direct = direct.as_ref();
        let other = std::thread::Builder::new()
            .spawn_scoped(scope, move || read_exact_at(file, direct, second, second_len, mid as u64));
        let a = read_exact_at(file, direct, first, mid, 0);
        let b = match other {
            Ok(handle) => {
                handle.join().unwrap_or_else(|_| Err(std::io::Error::other("read thread panicked")))
            }
            Err(e) => Err(e),
        };
        (a, b)
    });
    a?;
    b?;
    // Nothing past the length read: the file is the one that was written.
    if read_at(&file, &mut [0u8; 1], len as u64)? != 0 {
        return Err(std::io::Error::other("the file grew while it was read back"));
    }
    Ok(FileImage { buffer, start, len })
}

/// Reads exactly `want` bytes at `at` into `buf` (`want <= buf.len()`; `buf` and `at` aligned and
/// `buf.len()` a multiple of `ALIGN` when `direct` is given): directly while whole blocks come back,
/// then the ordinary way for whatever is left (a file system may end direct reads early).
fn read_exact_at(
    file: &File,
    direct: Option<&File>,
    buf: &mut [u8],
    want: usize,
    at: u64,
) -> std::io::Result<()> {
    let mut done = 0;
    if let Some(direct) = direct {
        while done < want {
            match read_at(direct, &mut buf[done..], at + done as u64) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    if !n.is_multiple_of(ALIGN) {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(EINVAL) => break,
                Err(e) => return Err(e),
            }
        }
        // The last block reads past the end of the file: keep only what was asked.
        done = done.min(want);
    }
    while done < want {
        match read_at(file, &mut buf[done..want], at + done as u64) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "large_tests.rs"]
mod tests;
