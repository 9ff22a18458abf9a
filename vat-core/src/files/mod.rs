//! The two gates every file vat reads or writes passes through.
//!
//! **Reading** ([`read_named_file`], [`InputFolder`]): only regular files are read, opened without
//! blocking (a FIFO, socket or device is refused from its type, never opened for reading and waited
//! on); a file named *inside* an input (a glTF `uri`, a frame of a sequence folder, the texture of an
//! OpenVAT or Houdini bake) must resolve, after its symbolic links are followed one by one, to a file
//! inside the input's folder (or a wider folder the caller names, `--resource-root`). A reference that
//! is absolute or climbs out of the folder with `..` is refused from its name alone, before the file
//! system is asked anything, so the outcome never tells which paths exist outside the folder. Links
//! are followed without ever asking the file system about a path outside the folder either. Every
//! read is bounded by a [`ReadLimit`] taken from the bytes actually read, not from the file's
//! reported size (which `/proc` files and growing files get wrong).
//!
//! **Writing** ([`check_output`], [`PendingFile`], [`PendingFolder`], [`write_file_atomically`]): an
//! existing target that is not a regular file (a device such as `/dev/null`, a FIFO, a socket, a
//! folder) is refused, never replaced; a target that is a symbolic link is refused too (name the file
//! it points to). Data goes to a temporary file in the target's folder, is flushed to disk and renamed
//! into place; on any failure (a full disk, a file-size limit, a refused check) nothing is left
//! behind, folders included. A multi-file output is written as a temporary folder renamed into place
//! whole, so all of its files appear or none.
//!
//! Both gates report [`crate::Error::FileRefused`] with a [`FileProblem`] saying which rule was
//! broken, and [`crate::Error::Io`] for failures of the file system itself.

mod large;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use large::{FileImage, read_back};
pub use read::{FolderEntry, InputFolder, ReadLimit, decode_uri, read_named_file};
pub use write::{PendingFile, PendingFolder, check_output, write_file_atomically};

use std::path::Path;

/// What a path is on disk, as far as the gates care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: the only kind vat reads or replaces.
    Regular,
    /// A folder.
    Folder,
    /// A symbolic link (when the link itself is looked at).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device (`/dev/null`, `/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// Anything else the platform has.
    Other,
}

impl FileKind {
    /// The kind of `meta` (from `symlink_metadata` or `metadata`).
    pub fn of(meta: &std::fs::Metadata) -> FileKind {
        let t = meta.file_type();
        if t.is_file() {
            return FileKind::Regular;
        }
        if t.is_dir() {
            return FileKind::Folder;
        }
        if t.is_symlink() {
            return FileKind::Symlink;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt as _;
            if t.is_fifo() {
                return FileKind::Fifo;
            }
            if t.is_socket() {
                return FileKind::Socket;
            }
            if t.is_char_device() {
                return FileKind::CharDevice;
            }
            if t.is_block_device() {
                return FileKind::BlockDevice;
            }
        }
        FileKind::Other
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Regular => "a regular file",
            FileKind::Folder => "a folder",
            FileKind::Symlink => "a symbolic link",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "not a regular file",
        })
    }
}

/// Which rule of the file gates a path broke ([`crate::Error::FileRefused`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileProblem {
    /// An input that exists but is not a regular file; nothing was read from it.
    #[error("is {kind}, not a regular file; vat reads regular files only")]
    NotRegular {
        /// What it is.
        kind: FileKind,
    },
    /// An input that does not exist (inside the folder it was looked for in).
    #[error("does not exist")]
    Missing,
    /// A reference that resolves outside the folder inputs are confined to.
    #[error("resolves outside the folder {root} ({how}); move the file into that folder{hint}")]
    OutsideFolder {
        /// The folder (after its own links were resolved).
        root: String,
        /// `"an absolute path"`, `"a .. climbing out"` or `"a symbolic link out of it"`.
        how: &'static str,
        /// What widens the folder, when the caller has an option for it (`" or widen it with
        /// --resource-root"`), else empty.
        hint: &'static str,
    },
    /// A chain of symbolic links that does not end (or is longer than 40 links).
    #[error("is a loop of symbolic links (or a chain of more than 40)")]
    LinkLoop,
    /// A reference that is not a usable relative path (a NUL byte, a URI scheme, bad percent-encoding).
    #[error("{why}")]
    BadReference {
        /// What is wrong with it.
        why: String,
    },
    /// An input larger than the bytes it may take.
    #[error(
        "{}the {limit} bytes of its memory budget ({option})",
        if *size > *limit { format!("is {size} bytes, over ") } else { "holds more than ".to_owned() }
    )]
    TooLarge {
        /// Its size when known (the bytes found so far otherwise).
        size: u64,
        /// The limit.
        limit: u64,
        /// The option (or API field) that raises the limit.
        option: &'static str,
    },
    /// An output target that exists and is not a regular file: refused, never replaced.
    #[error("is {kind}; vat writes its outputs only to new or regular files, and refuses to replace it")]
    OutputNotRegular {
        /// What it is.
        kind: FileKind,
    },
    /// An output target that is a symbolic link: refused (name the file it points to instead).
    #[error("is a symbolic link{}; name the file it points to instead", .target.as_ref().map(|t| format!(" to {t}")).unwrap_or_default())]
    OutputSymlink {
        /// Where the link points, when it can be read.
        target: Option<String>,
    },
    /// A multi-file output's target exists and is not a folder (a regular file, a device, a FIFO):
    /// refused, never replaced.
    #[error(
        "is {kind}, not a folder; a multi-file output goes into a new or existing folder, and vat refuses to replace it"
    )]
    OutputNotFolder {
        /// What it is.
        kind: FileKind,
    },
    /// An output's folder does not exist.
    #[error("its folder does not exist; create it first")]
    OutputFolderMissing,
}

pub(crate) fn refused(path: &Path, problem: FileProblem) -> crate::Error {
    crate::Error::FileRefused { path: path.display().to_string(), problem }
}

pub(crate) fn io_error(p: &Path, e: std::io::Error) -> crate::Error {
    crate::Error::Io {
        path: p.display().to_string(),
        kind: format!("{:?}", e.kind()),
        message: e.to_string(),
    }
}
