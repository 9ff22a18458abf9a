//! Large files through the gate: the same bytes whichever path (direct or ordinary) each part took.

use super::*;
use crate::files::PendingFile;

/// Bytes that differ at every position of a chunk and between chunks (a misplaced chunk shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8 ^ (i >> 20) as u8)
        .collect()
}

/// Writes `bytes` through a pending file in `dir` in pieces of `piece` bytes, reads it back
/// through [`read_back`] into a buffer of capacity `reuse`, and checks both against `bytes`.
fn round_trip(dir: &Path, bytes: &[u8], piece: usize, reuse: usize) {
    let path = dir.join("large.vat");
    let pending = PendingFile::create(&path, &mut |w| {
        for part in bytes.chunks(piece) {
            w.write_all(part)?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(std::fs::metadata(pending.temp_path()).unwrap().len(), bytes.len() as u64);
    let image = read_back(pending.temp_path(), Vec::with_capacity(reuse)).unwrap();
    assert!(image[..] == bytes[..], "read back {} bytes, wrote {}", image.len(), bytes.len());
    if bytes.len() >= LARGE_READ {
        assert_eq!(image.as_ptr() as usize % ALIGN, 0, "the image starts aligned");
    }
    pending.commit().unwrap();
    assert!(std::fs::read(&path).unwrap() == bytes, "the committed file holds the bytes written");
    let buffer = image.into_buffer();
    assert!(buffer.is_empty() && buffer.capacity() >= reuse);
}

fn scratch(root: &Path, name: &str) -> Option<PathBuf> {
    let dir = root.join(format!("vat-large-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

#[test]
fn large_files_read_back_as_written_at_every_alignment() {
    let dir = scratch(&std::env::temp_dir(), "sizes").unwrap();
    // Below a chunk, whole chunks only, chunks plus an aligned and an unaligned tail, and a size
    // large enough to be read back in two halves.
    for len in [1000, CHUNK, 2 * CHUNK + 3 * ALIGN, 2 * CHUNK + 12_345, LARGE_READ + 1] {
        let bytes = pattern(len);
        round_trip(&dir, &bytes, 65_537, 0);
    }
    // One write larger than a chunk, and a reused buffer larger than the file.
    let bytes = pattern(3 * CHUNK + 7);
    round_trip(&dir, &bytes, bytes.len(), 4 * CHUNK);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn large_files_round_trip_on_a_memory_file_system() {
    // tmpfs refuses direct I/O on older kernels and accepts it on newer ones: either way the bytes
    // come back. Skipped only where the machine has no /dev/shm (then the test above covers it).
    let Some(dir) = scratch(Path::new("/dev/shm"), "tmpfs") else { return };
    let bytes = pattern(2 * CHUNK + 999);
    round_trip(&dir, &bytes, 4096 * 3 + 1, 0);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_file_is_an_error_naming_its_path() {
    let dir = scratch(&std::env::temp_dir(), "missing").unwrap();
    let missing = dir.join("absent.vat");
    match read_back(&missing, Vec::new()) {
        Err(crate::Error::Io { path, .. }) => assert_eq!(path, missing.display().to_string()),
        other => panic!("expected an I/O error naming the file, got {other:?}"),
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn where_direct_io_is_refused_the_ordinary_path_writes_and_reads_the_same_bytes() {
    let dir = scratch(&std::env::temp_dir(), "refused").unwrap();
    let path = dir.join("plain.vat");
    let bytes = pattern(2 * CHUNK + 12_345);
    // The direct handle is opened on a path that does not exist: refused, as a file system without
    // direct I/O refuses it, so every chunk takes the ordinary path.
    let mut writer = OutputWriter::new(fs::File::create(&path).unwrap(), &dir.join("absent").join("x"));
    for part in bytes.chunks(100_003) {
        writer.write_all(part).unwrap();
    }
    assert!(writer.direct.is_none() && writer.direct_refused);
    let file = writer.finish().unwrap();
    drop(file);
    assert!(fs::read(&path).unwrap() == bytes);
    // Reading without a direct handle: the ordinary reads fill both halves.
    let file = fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; bytes.len()];
    read_exact_at(&file, None, &mut buf, bytes.len(), 0).unwrap();
    assert!(buf == bytes);
    let _ = fs::remove_dir_all(&dir);
}
