//! The reading gate: regular files only, opened without blocking, confined to a folder, bounded.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use super::{FileKind, FileProblem, io_error, refused};
use crate::Result;

/// How many bytes a read may take, and the option that raises that number (named in the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimit {
    /// The most bytes the file may hold.
    pub max_bytes: u64,
    /// The command-line option (or API field) that raises `max_bytes`, e.g. `"--max-memory"`.
    pub option: &'static str,
}

impl ReadLimit {
    /// At most `max_bytes`, raised with `option`.
    pub const fn new(max_bytes: u64, option: &'static str) -> ReadLimit {
        ReadLimit { max_bytes, option }
    }
}

/// Decodes a URI reference as glTF writes them (RFC 3986 percent-encoding, `/` separators) into a
/// relative path, from the text alone: `data:` URIs are the caller's; any other scheme (`http:`,
/// `file:`), bad percent-encoding, a NUL and an absolute path are refused. The bytes need not be
/// UTF-8 (`%FF` names the file whose name holds byte 0xFF).
///
/// # Errors
/// [`crate::Error::FileRefused`] with [`FileProblem::BadReference`] for a scheme, bad
/// percent-encoding or a NUL, and [`FileProblem::OutsideFolder`] for an absolute path.
pub fn decode_uri(uri: &str) -> Result<PathBuf> {
    let shown = Path::new(uri);
    if uri.split('/').next().is_some_and(|first| first.contains(':')) {
        return Err(refused(
            shown,
            FileProblem::BadReference {
                why: "names a URI scheme; only data: URIs and relative file paths are read".into(),
            },
        ));
    }
    let decoded = percent_decode(uri).ok_or_else(|| {
        refused(shown, FileProblem::BadReference { why: "has invalid percent-encoding".into() })
    })?;
    let path = bytes_to_path(decoded);
    lexical_check(&[], &path).or_else(|p| match p {
        // Depth is the folder's to judge; only what the text alone decides is refused here.
        FileProblem::OutsideFolder { how: "a .. climbing out", .. } => Ok(()),
        other => Err(refused(shown, other)),
    })?;
    Ok(path)
}

/// Longest chain of symbolic links followed for one reference (Linux's own limit).
const MAX_LINK_HOPS: u32 = 40;

/// Reads a file the user named directly (a command-line input: it may be anywhere and may be a
/// symbolic link): it must be a regular file, is opened without blocking and read up to
/// `limit.max_bytes`.
///
/// # Errors
/// [`crate::Error::FileRefused`] with [`FileProblem::Missing`], [`FileProblem::NotRegular`] (a
/// folder, FIFO, socket or device: refused from its type before it is opened) or
/// [`FileProblem::TooLarge`] (from its size on disk, or from the bytes read when that size was
/// wrong); [`crate::Error::Io`] when the file system fails.
pub fn read_named_file(path: &Path, limit: ReadLimit) -> Result<Vec<u8>> {
    let meta = fs::metadata(path).map_err(|e| not_found_or_io(path, e))?;
    let kind = FileKind::of(&meta);
    if kind != FileKind::Regular {
        return Err(refused(path, FileProblem::NotRegular { kind }));
    }
    let file = open_regular(path, true)?;
    read_bounded(path, file, meta.len(), limit)
}

/// A folder that inputs are read from and confined to: the folder of a glTF file (for its buffers
/// and images), a sequence folder, an OpenVAT or Houdini bake folder. References are resolved from
/// [`InputFolder::path`] and must stay inside [`InputFolder::root`] (the same folder unless widened
/// with [`InputFolder::with_root`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFolder {
    /// Where references are resolved from (links resolved).
    base: PathBuf,
    /// Where they must stay (links resolved); `base` or a folder above it.
    root: PathBuf,
    /// Components of `base` below `root`.
    base_in_root: Vec<OsString>,
    /// What widens the folder, for the error (`" or widen it with --resource-root"`).
    hint: &'static str,
}

/// One entry of an [`InputFolder`], as [`InputFolder::entries`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderEntry {
    /// Its name in the folder (may not be UTF-8).
    pub name: OsString,
    /// The folder's path joined with the name (for messages and for [`InputFolder::read`]).
    pub path: PathBuf,
    /// What it is after its links were followed inside the folder, or why it cannot be read (a link
    /// out of the folder, a loop, a dangling link).
    pub kind: std::result::Result<FileKind, FileProblem>,
}

impl FolderEntry {
    /// Its name, printable (bytes that are not UTF-8 shown as U+FFFD).
    pub fn display_name(&self) -> String {
        self.name.to_string_lossy().into_owned()
    }

    /// Whether it can be read: a regular file inside the folder.
    pub fn is_file(&self) -> bool {
        self.kind == Ok(FileKind::Regular)
    }
}

impl InputFolder {
    /// The folder `dir` (its own links resolved: the user named it).
    ///
    /// # Errors
    /// [`crate::Error::FileRefused`] with [`FileProblem::Missing`], or [`FileProblem::NotRegular`]
    /// naming what it is when it is not a folder; [`crate::Error::Io`] otherwise.
    pub fn open(dir: &Path) -> Result<InputFolder> {
        let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
        let base = fs::canonicalize(dir).map_err(|e| not_found_or_io(dir, e))?;
        let meta = fs::metadata(&base).map_err(|e| not_found_or_io(dir, e))?;
        let kind = FileKind::of(&meta);
        if kind != FileKind::Folder {
            return Err(refused(dir, FileProblem::NotRegular { kind }));
        }
        Ok(InputFolder { root: base.clone(), base, base_in_root: Vec::new(), hint: "" })
    }

    /// The folder holding `file` (a file the user named), whose references are resolved from it.
    ///
    /// # Errors
    /// As [`InputFolder::open`] for the folder.
    pub fn containing(file: &Path) -> Result<InputFolder> {
        match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => InputFolder::open(p),
            _ => InputFolder::open(Path::new(".")),
        }
    }

    /// The same folder with references allowed anywhere inside `root` (`--resource-root`), which
    /// must contain this folder; `hint` is what the errors say widens it.
    ///
    /// # Errors
    /// As [`InputFolder::open`] for `root`; [`FileProblem::BadReference`] when `root` does not
    /// contain this folder.
    pub fn with_root(self, root: &Path, hint: &'static str) -> Result<InputFolder> {
        let wide = InputFolder::open(root)?;
        let Ok(rest) = self.base.strip_prefix(&wide.root) else {
            return Err(refused(
                &self.base,
                FileProblem::BadReference {
                    why: format!(
                        "is not inside the resource folder {} (it must contain the input's folder)",
                        wide.root.display()
                    ),
                },
            ));
        };
        let base_in_root = rest.components().map(|c| c.as_os_str().to_owned()).collect();
        Ok(InputFolder { base: self.base, root: wide.root, base_in_root, hint })
    }

    /// What the errors say widens the folder (`" or widen it with --resource-root"`); empty by default.
    pub fn with_hint(mut self, hint: &'static str) -> InputFolder {
        self.hint = hint;
        self
    }

    /// Where references are resolved from (links resolved).
    pub fn path(&self) -> &Path {
        &self.base
    }

    /// The folder inputs are confined to (links resolved).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder's own name (its last component, links resolved), if it has one.
    pub fn name(&self) -> Option<String> {
        self.base.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
    }

    /// The folder's entries, sorted by name (bytes), each with what it is after its links were
    /// followed inside the folder. Links out of the folder, dangling links and loops are listed with
    /// the problem, never followed outside.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the folder cannot be listed.
    pub fn entries(&self) -> Result<Vec<FolderEntry>> {
        let io = |e| io_error(&self.base, e);
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.base).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let t = entry.file_type().map_err(io)?;
            let kind = if t.is_symlink() {
                self.resolve_in(Path::new(&name)).map(|(_, kind)| kind)
            } else if t.is_file() {
                Ok(FileKind::Regular)
            } else if t.is_dir() {
                Ok(FileKind::Folder)
            } else {
                let meta = fs::symlink_metadata(entry.path()).map_err(io)?;
                Ok(FileKind::of(&meta))
            };
            out.push(FolderEntry { path: self.base.join(&name), name, kind });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Resolves `reference` (a relative path, already percent-decoded) from this folder: the path it
    /// names inside the root, with links followed, and what is there.
    ///
    /// # Errors
    /// [`crate::Error::FileRefused`]: [`FileProblem::OutsideFolder`] for an absolute path or a `..`
    /// climbing out (decided from the name alone, before the file system is asked anything) or a link
    /// out of the root (decided from the link's text, never by looking outside);
    /// [`FileProblem::LinkLoop`]; [`FileProblem::Missing`]; [`FileProblem::BadReference`] for a NUL.
    pub fn resolve(&self, reference: &Path) -> Result<(PathBuf, FileKind)> {
        self.resolve_in(reference).map_err(|p| refused(&self.shown(reference), p))
    }

    /// Reads the regular file `reference` names ([`InputFolder::resolve`]), opened without blocking
    /// and without following a link swapped in since, up to `limit.max_bytes`.
    ///
    /// # Errors
    /// As [`InputFolder::resolve`]; [`FileProblem::NotRegular`] for anything but a regular file
    /// (refused from its type before it is opened); [`FileProblem::TooLarge`];
    /// [`crate::Error::Io`] when the file system fails.
    pub fn read(&self, reference: &Path, limit: ReadLimit) -> Result<Vec<u8>> {
        let (shown, file) = self.open_file(reference)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        read_bounded(&shown, file, len, limit)
    }

    /// The regular file `reference` names, resolved and opened (see [`InputFolder::read`]), with
    /// the path errors name it by.
    fn open_file(&self, reference: &Path) -> Result<(PathBuf, File)> {
        let shown = self.shown(reference);
        let (path, kind) = self.resolve_in(reference).map_err(|p| refused(&shown, p))?;
        if kind != FileKind::Regular {
            return Err(refused(&shown, FileProblem::NotRegular { kind }));
        }
        let file = open_regular(&path, false).map_err(|e| rename_error(e, &shown))?;
        Ok((shown, file))
    }

    /// The first `n` bytes of the regular file `reference` names, or all of it when shorter (a glTF
    /// buffer file is read up to its declared `byteLength`, whatever follows): the same rules as
    /// [`InputFolder::read`], the bound being `n`.
    ///
    /// # Errors
    /// As [`InputFolder::read`], without [`FileProblem::TooLarge`].
    pub fn read_prefix(&self, reference: &Path, n: u64) -> Result<Vec<u8>> {
        let (shown, file) = self.open_file(reference)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0).min(n);
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len as usize).map_err(|e| io_error(&shown, std::io::Error::other(e)))?;
        file.take(n).read_to_end(&mut bytes).map_err(|e| io_error(&shown, e))?;
        Ok(bytes)
    }

    /// [`decode_uri`], and a `..` that climbs out of this folder refused from the name alone.
    ///
    /// # Errors
    /// As [`decode_uri`]; [`FileProblem::OutsideFolder`] for a `..` climbing out.
    pub fn decode_uri(&self, uri: &str) -> Result<PathBuf> {
        let path = decode_uri(uri)?;
        lexical_check(&self.base_in_root, &path)
            .map_err(|p| refused(Path::new(uri), self.with_root_text(p)))?;
        Ok(path)
    }

    /// The path shown in errors for `reference`: the folder joined with it, as given.
    fn shown(&self, reference: &Path) -> PathBuf {
        self.base.join(reference)
    }

    fn with_root_text(&self, p: FileProblem) -> FileProblem {
        match p {
            FileProblem::OutsideFolder { how, .. } => {
                FileProblem::OutsideFolder { root: self.root.display().to_string(), how, hint: self.hint }
            }
            other => other,
        }
    }

    /// The link-following walk: lexical checks first, then one component at a time, each link's
    /// text resolved against where it stands, never looking at a path outside the root.
    fn resolve_in(&self, reference: &Path) -> std::result::Result<(PathBuf, FileKind), FileProblem> {
        lexical_check(&self.base_in_root, reference).map_err(|p| self.with_root_text(p))?;
        let mut stack: Vec<OsString> = self.base_in_root.clone();
        let mut pending: std::collections::VecDeque<OsString> =
            reference.components().map(|c| c.as_os_str().to_owned()).collect();
        let mut hops = 0;
        let mut kind = FileKind::Folder;
        while let Some(part) = pending.pop_front() {
            match Path::new(&part).components().next() {
                None | Some(Component::CurDir) => continue,
                Some(Component::ParentDir) => {
                    if stack.pop().is_none() {
                        return Err(self.with_root_text(outside("a symbolic link out of it")));
                    }
                    kind = FileKind::Folder;
                    continue;
                }
                Some(Component::RootDir | Component::Prefix(_)) => {
                    return Err(self.with_root_text(outside("a symbolic link out of it")));
                }
                Some(Component::Normal(_)) => {}
            }
            stack.push(part);
            let here = self.root.join(stack.iter().collect::<PathBuf>());
            let meta = fs::symlink_metadata(&here).map_err(|_| FileProblem::Missing)?;
            kind = FileKind::of(&meta);
            if kind != FileKind::Symlink {
                continue;
            }
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Err(FileProblem::LinkLoop);
            }
            let target = fs::read_link(&here).map_err(|_| FileProblem::Missing)?;
            stack.pop();
            let rest: Vec<OsString> = if target.is_absolute() || target.has_root() {
                // An absolute link stays inside only when its text names a path under the root.
                match target.strip_prefix(&self.root) {
                    Ok(inside) => {
                        stack.clear();
                        inside.components().map(|c| c.as_os_str().to_owned()).collect()
                    }
                    Err(_) => return Err(self.with_root_text(outside("a symbolic link out of it"))),
                }
            } else {
                target.components().map(|c| c.as_os_str().to_owned()).collect()
            };
            for c in rest.into_iter().rev() {
                pending.push_front(c);
            }
        }
        Ok((self.root.join(stack.iter().collect::<PathBuf>()), kind))
    }
}

fn outside(how: &'static str) -> FileProblem {
    FileProblem::OutsideFolder { root: String::new(), how, hint: "" }
}

/// Refuses, from the name alone, a reference that is absolute, holds a NUL, or climbs above the
/// root with `..` (starting `depth` folders below it).
fn lexical_check(base_in_root: &[OsString], reference: &Path) -> std::result::Result<(), FileProblem> {
    let text = reference.as_os_str();
    if text.as_encoded_bytes().contains(&0) {
        return Err(FileProblem::BadReference { why: "holds a NUL byte".into() });
    }
    if text.is_empty() {
        return Err(FileProblem::BadReference { why: "is empty".into() });
    }
    // A leading backslash is a root on Windows and an odd name elsewhere: refused everywhere.
    if reference.is_absolute() || reference.has_root() || text.as_encoded_bytes().first() == Some(&b'\\') {
        return Err(outside("an absolute path"));
    }
    let mut depth = base_in_root.len();
    for c in reference.components() {
        match c {
            Component::ParentDir => {
                depth = depth.checked_sub(1).ok_or_else(|| outside("a .. climbing out"))?;
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(outside("an absolute path")),
        }
    }
    Ok(())
}

/// Opens a file known to be regular without blocking (a FIFO swapped in would not wait for a
/// writer) and, with `follow` false, without following a link swapped in for the last component;
/// the handle is checked to be a regular file again.
fn open_regular(path: &Path, follow: bool) -> Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    #[cfg(not(unix))]
    let _ = follow;
    let file = options.open(path).map_err(|e| not_found_or_io(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    let kind = FileKind::of(&meta);
    if kind != FileKind::Regular {
        return Err(refused(path, FileProblem::NotRegular { kind }));
    }
    Ok(file)
}

/// Reads at most `limit.max_bytes` from `file`, reserving its size on disk when that fits: the bound
/// is the bytes read (one past the limit is enough to know it was crossed).
fn read_bounded(shown: &Path, file: File, len: u64, limit: ReadLimit) -> Result<Vec<u8>> {
    let too_large =
        |size| refused(shown, FileProblem::TooLarge { size, limit: limit.max_bytes, option: limit.option });
    if len > limit.max_bytes {
        return Err(too_large(len));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len as usize).map_err(|_| too_large(len))?;
    file.take(limit.max_bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| io_error(shown, e))?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

fn not_found_or_io(path: &Path, e: std::io::Error) -> crate::Error {
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            refused(path, FileProblem::Missing)
        }
        _ => {
            #[cfg(unix)]
            if e.raw_os_error() == Some(libc::ELOOP) {
                return refused(path, FileProblem::LinkLoop);
            }
            io_error(path, e)
        }
    }
}

/// An error about the resolved path, restated about the path as the caller named it.
fn rename_error(e: crate::Error, shown: &Path) -> crate::Error {
    match e {
        crate::Error::FileRefused { problem, .. } => refused(shown, problem),
        other => other,
    }
}

/// RFC 3986 percent-decoding; `None` for a `%` not followed by two hex digits.
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// A path of arbitrary bytes (a decoded URI need not be UTF-8: on Unix every byte string names a file).
fn bytes_to_path(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt as _;
        PathBuf::from(OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}
