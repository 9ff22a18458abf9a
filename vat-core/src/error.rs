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
}

/// `Result` with vat-core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
