//! The error type at vat-bake's boundary.

use std::path::PathBuf;

/// Every failure of import, bake, verify or export. Messages name the file and the part at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BakeError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The glTF is malformed or uses something vat does not support.
    #[error("{path}: {part}: {problem}")]
    Gltf {
        /// The file.
        path: PathBuf,
        /// Which part (e.g. "mesh 2 primitive 0 POSITION", "animation \"walk\" channel 3").
        part: String,
        /// What is wrong, and what to do about it where possible.
        problem: String,
    },
    /// A bake from another tool (OpenVAT, Houdini VAT) is malformed, inconsistent or out of scope.
    #[error("{path}: {part}: {problem}")]
    Interop {
        /// The file at fault (or the bake's folder).
        path: PathBuf,
        /// Which part (e.g. "os-remap.Frames", "texel (3, 7)", "clip \"Fall\"").
        part: String,
        /// What is wrong, and what to do about it where possible.
        problem: String,
    },
    /// Input data is unusable (NaN keyframe, weights summing to 0, joint out of range, ...).
    #[error("{part}: {problem}")]
    InvalidInput {
        /// Which part of the input.
        part: String,
        /// What is wrong.
        problem: String,
    },
    /// An option is out of range or contradicts another.
    #[error("invalid option {option}: {problem}")]
    InvalidOption {
        /// The option (as on the command line, e.g. "--fps").
        option: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The work would need more memory than the configured budget; refused before allocating it.
    #[error("{what} would need {needed} bytes ({needed_mib:.1} MiB), more than the memory budget of {limit} bytes ({limit_mib:.1} MiB); {hint}", needed_mib = *needed as f64 / 1048576.0, limit_mib = *limit as f64 / 1048576.0)]
    OverBudget {
        /// What was to be allocated (e.g. "the bake of rig \"walker\" (textures and per-frame poses)").
        what: String,
        /// The bytes it would need (an estimate of the dominant allocations, never more than needed).
        needed: u64,
        /// The budget in bytes.
        limit: u64,
        /// What to do about it (which option raises the budget, what reduces the need).
        hint: &'static str,
    },
    /// The bake does not reproduce the source within its format's bound.
    #[error("verification failed: {0}")]
    Verification(String),
    /// vat-core refused something (layout, encoding, container).
    #[error(transparent)]
    Core(#[from] vat_core::Error),
}

/// `Result` with [`BakeError`].
pub type Result<T, E = BakeError> = std::result::Result<T, E>;
