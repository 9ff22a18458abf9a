//! The gates against every class of hostile path, on real folders made here.

use std::path::{Path, PathBuf};

use super::*;
use crate::Error;

/// A fresh scratch folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("vat-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const LIMIT: ReadLimit = ReadLimit::new(1 << 20, "--max-memory");

fn problem(r: crate::Result<impl std::fmt::Debug>) -> FileProblem {
    match r {
        Err(Error::FileRefused { problem, .. }) => problem,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// `outside/secret` beside `inside/` holding links of every kind.
fn layout(s: &Scratch) -> (PathBuf, PathBuf) {
    let inside = s.0.join("inside");
    let outside = s.0.join("outside");
    std::fs::create_dir_all(inside.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"secret").unwrap();
    std::fs::write(inside.join("a.bin"), b"inside").unwrap();
    std::fs::write(inside.join("sub").join("b.bin"), b"deeper").unwrap();
    (inside, outside)
}

#[cfg(unix)]
#[test]
fn folder_reads_stay_inside_the_folder_for_every_class() {
    use std::os::unix::fs::symlink;
    let s = Scratch::new("confine");
    let (inside, outside) = layout(&s);
    symlink("../outside/secret", inside.join("rel-out")).unwrap();
    symlink(outside.join("secret"), inside.join("abs-out")).unwrap();
    symlink("../outside", inside.join("dir-out")).unwrap();
    symlink("loop2", inside.join("loop1")).unwrap();
    symlink("loop1", inside.join("loop2")).unwrap();
    symlink("sub/b.bin", inside.join("rel-in")).unwrap();
    symlink(inside.canonicalize().unwrap().join("a.bin"), inside.join("abs-in")).unwrap();
    symlink("sub", inside.join("dir-in")).unwrap();
    symlink("/dev/zero", inside.join("zero")).unwrap();
    symlink("no-such", inside.join("dangling")).unwrap();
    mkfifo(&inside.join("fifo"));
    let folder = InputFolder::open(&inside).unwrap();

    // Links that stay inside are followed.
    assert_eq!(folder.read(Path::new("rel-in"), LIMIT).unwrap(), b"deeper");
    assert_eq!(folder.read(Path::new("abs-in"), LIMIT).unwrap(), b"inside");
    assert_eq!(folder.read(Path::new("dir-in/b.bin"), LIMIT).unwrap(), b"deeper");
    assert_eq!(folder.read(Path::new("sub/../a.bin"), LIMIT).unwrap(), b"inside");
    // Links out, loops, special files: refused, never read.
    for name in ["rel-out", "abs-out", "dir-out/secret", "zero"] {
        assert!(
            matches!(problem(folder.read(Path::new(name), LIMIT)), FileProblem::OutsideFolder { .. }),
            "{name}"
        );
    }
    assert_eq!(problem(folder.read(Path::new("loop1"), LIMIT)), FileProblem::LinkLoop);
    assert_eq!(problem(folder.read(Path::new("dangling"), LIMIT)), FileProblem::Missing);
    // A FIFO is refused at once (a blocking open would wait for a writer forever).
    assert_eq!(
        problem(folder.read(Path::new("fifo"), LIMIT)),
        FileProblem::NotRegular { kind: FileKind::Fifo }
    );
    assert_eq!(
        problem(folder.read(Path::new("sub"), LIMIT)),
        FileProblem::NotRegular { kind: FileKind::Folder }
    );
    // Absolute paths and `..` climbing out.
    let abs = outside.join("secret");
    assert!(matches!(
        problem(folder.read(&abs, LIMIT)),
        FileProblem::OutsideFolder { how: "an absolute path", .. }
    ));
    for rel in ["../outside/secret", "sub/../../outside/secret", "./../inside/a.bin"] {
        assert!(
            matches!(
                problem(folder.read(Path::new(rel), LIMIT)),
                FileProblem::OutsideFolder { how: "a .. climbing out", .. }
            ),
            "{rel}"
        );
    }
    // The listing says what each entry is, following no link out of the folder.
    let entries = folder.entries().unwrap();
    let kind = |n: &str| entries.iter().find(|e| e.name == n).unwrap().kind.clone();
    assert_eq!(kind("a.bin"), Ok(FileKind::Regular));
    assert_eq!(kind("rel-in"), Ok(FileKind::Regular));
    assert_eq!(kind("dir-in"), Ok(FileKind::Folder));
    assert_eq!(kind("fifo"), Ok(FileKind::Fifo));
    assert!(matches!(kind("rel-out"), Err(FileProblem::OutsideFolder { .. })));
    assert!(matches!(kind("zero"), Err(FileProblem::OutsideFolder { .. })));
    assert_eq!(kind("loop1"), Err(FileProblem::LinkLoop));
    assert_eq!(kind("dangling"), Err(FileProblem::Missing));
}

#[test]
fn absolute_and_climbing_references_are_refused_the_same_whether_or_not_they_exist() {
    let s = Scratch::new("oracle");
    let (inside, _) = layout(&s);
    let folder = InputFolder::open(&inside).unwrap();
    // One exists outside, one does not: the answers are identical (no existence oracle).
    let exists = problem(folder.read(Path::new("../outside/secret"), LIMIT));
    let missing = problem(folder.read(Path::new("../outside/no-such"), LIMIT));
    assert_eq!(exists, missing);
    let exists = problem(folder.read(&s.0.join("outside/secret"), LIMIT));
    let missing = problem(folder.read(Path::new("/nonexistent/x.png"), LIMIT));
    assert_eq!(exists, missing);
}

#[test]
fn uris_are_percent_decoded_before_the_same_rules() {
    let s = Scratch::new("uri");
    let (inside, _) = layout(&s);
    std::fs::write(inside.join("with space.bin"), b"spaced").unwrap();
    let folder = InputFolder::open(&inside).unwrap();
    let read = |uri: &str| folder.decode_uri(uri).and_then(|p| folder.read(&p, LIMIT));
    assert_eq!(read("with%20space.bin").unwrap(), b"spaced");
    assert_eq!(read("sub%2Fb.bin").unwrap(), b"deeper");
    for uri in ["%2e%2e/outside/secret", "..%2Foutside%2Fsecret", "%2Fetc%2Fpasswd", "/etc/passwd"] {
        assert!(matches!(problem(read(uri)), FileProblem::OutsideFolder { .. }), "{uri}");
    }
    for uri in ["file:///etc/passwd", "http://example.com/x.bin", "bad%zz", "nul%00byte", "trailing%2"] {
        assert!(matches!(problem(read(uri)), FileProblem::BadReference { .. }), "{uri}");
    }
}

#[cfg(unix)]
#[test]
fn names_that_are_not_utf8_are_read_and_listed() {
    use std::os::unix::ffi::OsStrExt as _;
    let s = Scratch::new("utf8");
    let name = std::ffi::OsStr::from_bytes(b"frame\xff.obj");
    std::fs::write(s.0.join(name), b"v 0 0 0").unwrap();
    let folder = InputFolder::open(&s.0).unwrap();
    assert_eq!(folder.read(Path::new(name), LIMIT).unwrap(), b"v 0 0 0");
    let entries = folder.entries().unwrap();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].is_file());
    assert_eq!(entries[0].display_name(), "frame\u{fffd}.obj");
    // Percent-encoded bytes that are not UTF-8 name the same file.
    assert_eq!(folder.decode_uri("frame%FF.obj").and_then(|p| folder.read(&p, LIMIT)).unwrap(), b"v 0 0 0");
}

#[test]
fn reads_are_bounded_by_the_bytes_read_and_name_the_option() {
    let s = Scratch::new("bound");
    std::fs::write(s.0.join("big.bin"), vec![7u8; 100]).unwrap();
    let folder = InputFolder::open(&s.0).unwrap();
    let limit = ReadLimit::new(99, "--max-memory");
    let err = folder.read(Path::new("big.bin"), limit).unwrap_err();
    assert!(err.to_string().contains("--max-memory"), "{err}");
    assert_eq!(
        problem(Err::<(), _>(err)),
        FileProblem::TooLarge { size: 100, limit: 99, option: "--max-memory" }
    );
    assert_eq!(folder.read(Path::new("big.bin"), ReadLimit::new(100, "x")).unwrap().len(), 100);
    // The same for a file named directly.
    let err = read_named_file(&s.0.join("big.bin"), limit).unwrap_err();
    assert!(err.to_string().contains("--max-memory"), "{err}");
}

#[cfg(unix)]
#[test]
fn named_files_must_be_regular_and_are_never_waited_on() {
    let s = Scratch::new("named");
    mkfifo(&s.0.join("fifo"));
    assert_eq!(
        problem(read_named_file(&s.0.join("fifo"), LIMIT)),
        FileProblem::NotRegular { kind: FileKind::Fifo }
    );
    assert_eq!(
        problem(read_named_file(Path::new("/dev/zero"), LIMIT)),
        FileProblem::NotRegular { kind: FileKind::CharDevice }
    );
    assert_eq!(problem(read_named_file(&s.0, LIMIT)), FileProblem::NotRegular { kind: FileKind::Folder });
    assert_eq!(problem(read_named_file(&s.0.join("no-such"), LIMIT)), FileProblem::Missing);
    // A device inside a folder the user named is refused from its type too.
    let dev = InputFolder::open(Path::new("/dev")).unwrap();
    assert_eq!(
        problem(dev.read(Path::new("zero"), LIMIT)),
        FileProblem::NotRegular { kind: FileKind::CharDevice }
    );
}

#[test]
fn a_resource_root_widens_the_folder_and_must_contain_it() {
    let s = Scratch::new("root");
    let (inside, _) = layout(&s);
    let sub = InputFolder::open(&inside.join("sub")).unwrap();
    assert!(matches!(problem(sub.read(Path::new("../a.bin"), LIMIT)), FileProblem::OutsideFolder { .. }));
    let wide = sub.clone().with_root(&inside, " or widen it with --resource-root").unwrap();
    assert_eq!(wide.read(Path::new("../a.bin"), LIMIT).unwrap(), b"inside");
    let err = wide.read(Path::new("../../outside/secret"), LIMIT).unwrap_err();
    assert!(err.to_string().contains("--resource-root"), "{err}");
    assert!(matches!(
        problem(InputFolder::open(&inside).unwrap().with_root(&inside.join("sub"), "")),
        FileProblem::BadReference { .. }
    ));
}

#[cfg(unix)]
#[test]
fn outputs_never_replace_what_is_not_a_regular_file() {
    use std::os::unix::fs::FileTypeExt as _;
    let s = Scratch::new("out");
    mkfifo(&s.0.join("fifo"));
    std::fs::create_dir(s.0.join("folder")).unwrap();
    std::fs::write(s.0.join("real"), b"old").unwrap();
    std::os::unix::fs::symlink("real", s.0.join("link")).unwrap();
    let kind = |p: &Path| problem(write_file_atomically(p, b"new"));
    assert_eq!(kind(Path::new("/dev/null")), FileProblem::OutputNotRegular { kind: FileKind::CharDevice });
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    assert_eq!(kind(&s.0.join("fifo")), FileProblem::OutputNotRegular { kind: FileKind::Fifo });
    assert_eq!(kind(&s.0.join("folder")), FileProblem::OutputNotRegular { kind: FileKind::Folder });
    assert_eq!(kind(&s.0.join("link")), FileProblem::OutputSymlink { target: Some("real".into()) });
    assert_eq!(kind(&s.0.join("no-such/x.vat")), FileProblem::OutputFolderMissing);
    assert_eq!(std::fs::read(s.0.join("real")).unwrap(), b"old");
    assert!(std::fs::symlink_metadata(s.0.join("fifo")).unwrap().file_type().is_fifo());
    // A regular file is replaced whole, and nothing else is left in the folder.
    write_file_atomically(&s.0.join("real"), b"new").unwrap();
    assert_eq!(std::fs::read(s.0.join("real")).unwrap(), b"new");
    let mut names: Vec<_> = std::fs::read_dir(&s.0).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["fifo", "folder", "link", "real"]);
}

#[test]
fn a_pending_folder_appears_whole_or_not_at_all() {
    let s = Scratch::new("folder");
    let target = s.0.join("bake");
    // Dropped midway: nothing is left.
    let mut pending = PendingFolder::create(&target).unwrap();
    pending.write("a.png", b"a").unwrap();
    drop(pending);
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 0);
    // Committed: every file at once.
    let mut pending = PendingFolder::create(&target).unwrap();
    pending.write("a.png", b"a").unwrap();
    pending.write("b.json", b"{}").unwrap();
    assert!(!target.exists());
    pending.commit().unwrap();
    assert_eq!(std::fs::read(target.join("b.json")).unwrap(), b"{}");
    // Into the folder that now exists: files replaced, others kept, no temporary left beside it.
    std::fs::write(target.join("keep.txt"), b"k").unwrap();
    let mut pending = PendingFolder::create(&target).unwrap();
    pending.write("a.png", b"A").unwrap();
    pending.commit().unwrap();
    assert_eq!(std::fs::read(target.join("a.png")).unwrap(), b"A");
    assert_eq!(std::fs::read(target.join("keep.txt")).unwrap(), b"k");
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 1);
    // A name with a folder part, or a non-regular entry in the way, is refused.
    let mut pending = PendingFolder::create(&target).unwrap();
    assert!(pending.write("../x", b"x").is_err());
    std::fs::create_dir(target.join("dir.png")).unwrap();
    assert!(matches!(
        problem(pending.write("dir.png", b"x")),
        FileProblem::OutputNotRegular { kind: FileKind::Folder }
    ));
    // A file where the folder should be.
    std::fs::write(s.0.join("plain"), b"p").unwrap();
    assert!(matches!(
        problem(PendingFolder::create(&s.0.join("plain"))),
        FileProblem::OutputNotFolder { kind: FileKind::Regular }
    ));
}
