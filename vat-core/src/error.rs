//! The error type at vat-core's boundary.

/// Every failure vat-core reports. Each variant names what was wrong and carries the numbers a caller
/// needs to act on it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `vertex_count * frame_count` texels cannot fit in a texture of at most `max_dimension` texels on
    /// each side. Bake fewer frames, fewer vertices, or use a device with a larger texture limit.
    #[error(
        "{vertex_count} vertices x {frame_count} frames = {texels} texels do not fit in a \
         {max_dimension} x {max_dimension} texture; bake fewer frames or vertices"
    )]
    TextureTooLarge {
        /// Vertices per frame.
        vertex_count: u32,
        /// Frames in the whole texture (all clips).
        frame_count: u32,
        /// Texels needed.
        texels: u64,
        /// The largest width or height allowed.
        max_dimension: u32,
    },
    /// `bone_count * frame_count * 3` texels (three per bone per frame) cannot fit in a texture of at
    /// most `max_dimension` texels on each side. Bake fewer frames or bones, or use a device with a
    /// larger texture limit.
    #[error(
        "{bone_count} bones x {frame_count} frames x 3 = {texels} texels do not fit in a \
         {max_dimension} x {max_dimension} texture; bake fewer frames or bones"
    )]
    BoneTextureTooLarge {
        /// Bones per frame.
        bone_count: u32,
        /// Frames in the whole texture (all clips).
        frame_count: u32,
        /// Texels needed, saturated at `u64::MAX`.
        texels: u64,
        /// The largest width or height allowed.
        max_dimension: u32,
    },
    /// A count that must be at least one was zero.
    #[error("{what} must be at least 1")]
    ZeroCount {
        /// What was zero (e.g. "vertex count").
        what: &'static str,
    },
    /// An argument was outside its documented range.
    #[error("{what} = {value} is out of range: {expected}")]
    OutOfRange {
        /// The argument.
        what: &'static str,
        /// Its value, printed.
        value: String,
        /// The allowed range, in words.
        expected: &'static str,
    },
    /// A value that must be finite was NaN or infinite.
    #[error("{what} is not finite")]
    NotFinite {
        /// What was not finite.
        what: &'static str,
    },
    /// A vertex format's texel codec was given a different number of textures than the format uses
    /// (see [`crate::encoding::VertexFormat::texel_formats`]).
    #[error("the vertex format uses {expected} textures, {actual} were given")]
    WrongTextureCount {
        /// Textures the format uses.
        expected: u32,
        /// Textures given.
        actual: u32,
    },
    // --- .vat container (reader and writer) ---
    /// The file ends before the end of its `section` (header, manifest or blobs).
    #[error(".vat file truncated in the {section}: needs {needed} bytes, has {available}")]
    Truncated {
        /// The section the file ends in: `"header"`, `"manifest"` or `"blobs"`.
        section: &'static str,
        /// Bytes the file must have for that section to be complete.
        needed: u64,
        /// Bytes it has.
        available: u64,
    },
    /// The file does not start with `b"VAT\0"`.
    #[error("not a .vat file: magic {found:02x?}, expected \"VAT\\0\"")]
    BadMagic {
        /// The first four bytes found.
        found: [u8; 4],
    },
    /// The file's format version is not one this build reads (versions
    /// [`crate::container::MIN_FORMAT_VERSION`] to `supported`).
    #[error(".vat format version {found} is not supported; this build reads versions 1 to {supported}")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Newest version this build reads and writes.
        supported: u32,
    },
    /// The manifest holds a section that its file's format version does not have.
    #[error(".vat format version {version} has no {section} section (it needs version {needed})")]
    SectionNeedsVersion {
        /// The section.
        section: &'static str,
        /// Version in the file.
        version: u32,
        /// The first version with that section.
        needed: u32,
    },
    /// The CRC-32 of the manifest bytes does not match the one in the header.
    #[error(".vat manifest checksum mismatch: header says {stored:#010x}, bytes give {computed:#010x}")]
    ManifestChecksumMismatch {
        /// CRC-32 stored in the header.
        stored: u32,
        /// CRC-32 of the manifest bytes as read.
        computed: u32,
    },
    /// The manifest bytes (with a valid checksum) are not a valid postcard-encoded manifest.
    #[error(".vat manifest does not decode: {message}")]
    ManifestDecode {
        /// The decoder's message.
        message: String,
    },
    /// A size or count is above the reader's [`crate::container::Limits`] (or would overflow).
    #[error("{what} = {value} exceeds the limit of {limit}")]
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// Its value (saturated at `u64::MAX` when it overflowed).
        value: u64,
        /// The limit.
        limit: u64,
    },
    /// Bytes follow the end of the last blob.
    #[error(".vat file has trailing bytes: ends at {actual_len}, expected {expected_len}")]
    TrailingBytes {
        /// Where the file should end (end of its last blob), in bytes.
        expected_len: u64,
        /// Its actual length in bytes.
        actual_len: u64,
    },
    /// A blob does not start at a 16-byte-aligned file offset.
    #[error(".vat blob {blob} starts at {offset}, not a multiple of 16")]
    BlobMisaligned {
        /// Blob index.
        blob: u32,
        /// Its file offset in bytes.
        offset: u64,
    },
    /// Blobs are not listed in increasing file offset order.
    #[error(".vat blob {blob} starts at {offset}, before the previous blob's start {previous_offset}")]
    BlobsOutOfOrder {
        /// Blob index.
        blob: u32,
        /// Its file offset in bytes.
        offset: u64,
        /// The previous blob's file offset.
        previous_offset: u64,
    },
    /// A blob starts before the previous blob (or the manifest) ends.
    #[error(".vat blob {blob} starts at {offset}, inside the previous section which ends at {previous_end}")]
    BlobsOverlap {
        /// Blob index.
        blob: u32,
        /// Its file offset in bytes.
        offset: u64,
        /// End of the previous blob (or of the manifest), in bytes.
        previous_end: u64,
    },
    /// Bytes between two sections are not exactly the zero padding to the next 16-byte boundary.
    #[error(".vat padding at offset {offset} is not zero padding to the next 16-byte boundary")]
    BadPadding {
        /// File offset of the first offending byte (or of the unexpected gap).
        offset: u64,
    },
    /// A blob's CRC-32 does not match the manifest.
    #[error(".vat blob {blob} checksum mismatch: manifest says {stored:#010x}, bytes give {computed:#010x}")]
    BlobChecksumMismatch {
        /// Blob index.
        blob: u32,
        /// CRC-32 in the manifest.
        stored: u32,
        /// CRC-32 of the blob bytes.
        computed: u32,
    },
    /// The manifest refers to a blob that does not exist.
    #[error("{what} refers to blob {blob}, but the file has {blob_count} blobs")]
    BlobIdOutOfRange {
        /// What referred to it.
        what: &'static str,
        /// The blob index.
        blob: u32,
        /// Blobs in the file.
        blob_count: u32,
    },
    /// A blob's length is not the one its layout, format or stream implies.
    #[error("{what} (blob {blob}) is {actual} bytes, its layout implies {expected}")]
    BlobSizeMismatch {
        /// What the blob holds.
        what: &'static str,
        /// Blob index.
        blob: u32,
        /// Length implied by the manifest, in bytes.
        expected: u64,
        /// Actual length in bytes.
        actual: u64,
    },
    /// Two values in the manifest that must agree do not.
    #[error(".vat manifest is inconsistent: {what} is {actual}, expected {expected}")]
    ManifestMismatch {
        /// The value that disagrees.
        what: &'static str,
        /// The value implied by the rest of the manifest.
        expected: u64,
        /// The value found.
        actual: u64,
    },
    /// An index stored in the file is past the end of what it indexes.
    #[error("{what} {index} is out of range (count {count})")]
    IndexOutOfRange {
        /// What kind of index (e.g. "vertex index", "joint").
        what: &'static str,
        /// The index.
        index: u64,
        /// The number of things it may index.
        count: u64,
    },
    /// A LOD's index range is not inside the index blob.
    #[error("LOD {lod} indices {first_index}..+{index_count} are outside the {available} stored indices")]
    LodRangeOutOfBounds {
        /// LOD number.
        lod: u32,
        /// First index of the LOD's range.
        first_index: u32,
        /// Indices in the LOD's range.
        index_count: u32,
        /// Indices in the index blob.
        available: u64,
    },
    /// A bone's parent is not an earlier bone (forward references and cycles are refused).
    #[error("bone {bone} has parent {parent}; parents must come before their children")]
    BadBoneParent {
        /// Bone index.
        bone: u32,
        /// Its parent index.
        parent: u32,
    },
    /// Something the manifest relies on is absent (e.g. LODs without an index blob).
    #[error(".vat manifest is missing {what}")]
    MissingSection {
        /// What is missing.
        what: &'static str,
    },
    /// A name (or kind) that must be unique appears twice.
    #[error("duplicate {what} {name:?}")]
    DuplicateName {
        /// What is named (e.g. "clip", "socket").
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A file system operation failed. Kind and message are strings so that `Error` stays `Clone`.
    #[error("{path}: {kind}: {message}")]
    Io {
        /// The path involved.
        path: String,
        /// `std::io::ErrorKind`, printed.
        kind: String,
        /// The OS message.
        message: String,
    },
    // --- end .vat container ---
    /// A file gate ([`crate::files`]) refused a path before reading or replacing it.
    #[error("{path}: {problem}")]
    FileRefused {
        /// The path as the caller named it.
        path: String,
        /// The rule it broke.
        problem: crate::files::FileProblem,
    },
}

/// `Result` with vat-core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
