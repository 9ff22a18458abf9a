//! The `.vat` container: one file holding a baked asset, written by [`ContainerWriter`] and read back,
//! validated and zero-copy, by [`Asset`].
//!
//! # Byte layout (format versions 1 to 7)
//!
//! All integers are little-endian. Offsets are from the start of the file.
//!
//! ```text
//!  offset  size  field
//!       0     4  magic b"VAT\0"
//!       4     4  format version, u32 (1; 2 with a morph animation; 3 with a rigid animation;
//!                4 with materials; 5 with root motion; 6 with a fluid animation;
//!                7 with a sprite animation)
//!       8     4  manifest length M in bytes, u32
//!      12     4  CRC-32 (IEEE, as crc32fast computes it) of the M manifest bytes, u32
//!      16     M  manifest, postcard-encoded `Manifest`
//!  16 + M     p  zero padding to the next multiple of 16 (p in 0..16)
//!     ...        blobs, each at a 16-byte-aligned offset, in the order of `Manifest::blobs`,
//!                separated only by the zero padding that aligns the next one
//! ```
//!
//! Version 2 differs from version 1 only in the manifest's morph slot (after the bone animation):
//! `None` in both, `Some(MorphAnimation)` only in version 2. The writer uses the oldest version that
//! describes the file, so a file without a morph layer is byte for byte a version 1 file; the reader
//! accepts both and refuses a morph section in a version 1 file.
//!
//! Version 3 adds the rigid-body mode, [`Manifest::rigid_animation`]; version 4 the materials
//! ([`Manifest::materials`], [`Manifest::material_textures`], [`Manifest::material_variants`]);
//! version 5 root motion ([`Manifest::root_motion`]); version 6 the fluid mode
//! ([`Manifest::fluid_animation`]); version 7 the sprite mode ([`Manifest::sprite_animation`]); version 8 the impostor tier
//! ([`Manifest::impostors`]); version 9 the tier's one-view bound
//! ([`Manifest::impostor_one_view_bound`]); version 10 the tier's colour images per material
//! variant ([`Manifest::impostor_material_variants`]);
//! these are the manifest's last fields, in that
//! order. Older versions end the manifest before the fields they cannot hold; the reader decodes
//! them as if they were empty and the writer leaves them out of every file that has none, so older
//! files and files without these sections keep their bytes.
//!
//! The file ends exactly where its last blob ends (with no blobs: where the manifest ends); any byte
//! after that is an error. Each blob's offset, length and CRC-32 are listed in [`Manifest::blobs`]; the
//! rest of the manifest refers to blobs by [`BlobId`], an index into that list. Because blob
//! positions are fully determined by their lengths and the manifest length, a file has exactly one
//! valid byte representation, and writing is deterministic.
//!
//! Blob contents are raw little-endian texel or element data, tightly packed (rows of `width` texels,
//! no row padding); what each blob holds and its exact length follow from the manifest (see the
//! documentation of each manifest type).
//!
//! # Validation
//!
//! [`Asset::parse`] checks everything before it hands anything out: header, version, manifest
//! checksum, manifest decoding, the blob table (alignment, order, overlaps, padding, exact file end),
//! every blob checksum, every [`BlobId`], every size implied by a layout or stream, clip frames against
//! the layouts, LOD ranges, every stored vertex index and joint, the bone hierarchy, and every count
//! against [`Limits`]. Size arithmetic is checked `u64` arithmetic; nothing is allocated in proportion
//! to a count read from the file before that count has been checked. Every failure is a typed
//! [`crate::Error`]. The writer runs the same validation on what it produced, so it never writes a file
//! the reader would refuse (under the same limits).

mod manifest;
mod material;
pub(crate) mod reader;
mod writer;

#[cfg(test)]
mod impostor_tests;
#[cfg(test)]
mod sprite_tests;
#[cfg(test)]
mod tests;

pub use manifest::{
    Attachment, BlobEntry, BlobId, Bone, BoneAnimation, CaptureTrack, ElementFormat, FluidAnimation,
    FluidFrame, Lod, Manifest, MorphAnimation, RigidAnimation, RootMotionTrack, SkinResidualAnimation,
    Socket, SpriteAnimation, StreamKind, VatMode, VertexAnimation, VertexStream,
};
pub use material::{
    AlphaMode, MAX_MATERIALS, MAX_TEXTURE_LAYERS, Material, MaterialTextures, MaterialVariant, TextureArray,
    TextureBinding, TextureColorSpace, TextureFilter, TextureSource, TextureWrap,
};
pub use reader::{Asset, Limits, check_manifest_counts};
pub use writer::{ContainerWriter, container_bytes, write_container};

/// The first four bytes of every `.vat` file.
pub const MAGIC: [u8; 4] = *b"VAT\0";

/// The newest format version this build writes and reads (11). A file is written with the oldest
/// version that can describe it ([`Manifest::format_version`]).
pub const FORMAT_VERSION: u32 = 11;

/// The oldest format version this build reads (1): every manifest section but
/// [`Manifest::morph_animation`].
pub const MIN_FORMAT_VERSION: u32 = 1;

/// The format version that added [`Manifest::morph_animation`] (the live morph layer); the manifest
/// encoding is otherwise that of version 1, where the same field slot is always `None`.
pub const FORMAT_VERSION_MORPH: u32 = 2;

/// The format version that added [`Manifest::rigid_animation`] (the rigid-body mode), the
/// manifest's last field: a version 1 or 2 manifest is the version 3 encoding without that trailing
/// `None` (one zero byte in postcard), which the reader supplies and the writer leaves out.
pub const FORMAT_VERSION_RIGID: u32 = 3;

/// The format version that added [`Manifest::root_motion`] (root motion tracks), the manifest's
/// last field (after the version 4 materials): a manifest of an older version is the version 5
/// encoding without that trailing empty list (one zero byte in postcard), which the reader
/// supplies and the writer leaves out.
pub const FORMAT_VERSION_ROOT_MOTION: u32 = 5;

/// The format version that added [`Manifest::fluid_animation`] (the fluid mode), the manifest's
/// last field (after the version 5 root motion): older manifests end before it (one zero byte,
/// `None`, which the reader supplies and the writer leaves out).
pub const FORMAT_VERSION_FLUID: u32 = 6;

/// The format version that added [`Manifest::sprite_animation`] (the sprite mode), the manifest's
/// last field (after the version 6 fluid animation): older manifests end before it (one zero byte,
/// `None`, which the reader supplies and the writer leaves out).
pub const FORMAT_VERSION_SPRITE: u32 = 7;

/// The format version that added [`Manifest::impostors`] (the impostor tier), the manifest's last
/// field (after the version 7 sprite animation): older manifests end before it (one zero byte,
/// `None`, which the reader supplies and the writer leaves out).
pub const FORMAT_VERSION_IMPOSTORS: u32 = 8;

/// The format version that added [`Manifest::impostor_one_view_bound`] (the impostor tier's bound
/// for its far cards, drawn from one view), the manifest's last field (after the version 8 tier):
/// older manifests end before it (one zero byte, `None`, which the reader supplies and the writer
/// leaves out).
pub const FORMAT_VERSION_IMPOSTOR_ONE_VIEW: u32 = 9;

/// The format version that added [`Manifest::impostor_material_variants`] (the impostor tier's
/// colour images per material variant, after the authored materials' in its colour blob), the
/// manifest's last field (after the version 9 one-view bound): older manifests end before it (one
/// zero byte, `0`, which the reader supplies and the writer leaves out).
pub const FORMAT_VERSION_IMPOSTOR_VARIANTS: u32 = 10;

/// The format version that added [`Manifest::skin_residual`] and
/// [`crate::encoding::VertexFormat::SkinResidual`] (the compressed tier), the manifest's last
/// field (after the version 10 impostor variants): older manifests end before it (one zero byte,
/// `None`, which the reader supplies and the writer leaves out), and the reader refuses the
/// skin-residual vertex format in them.
pub const FORMAT_VERSION_SKIN_RESIDUAL: u32 = 11;

/// The format version that added [`Manifest::materials`], [`Manifest::material_textures`] and
/// [`Manifest::material_variants`], the three fields after [`Manifest::rigid_animation`]: older
/// manifests end before them (the reader supplies their empty encodings, three zero bytes, and the
/// writer leaves them out).
pub const FORMAT_VERSION_MATERIALS: u32 = 4;

/// Zero bytes a manifest of format `version` leaves out at its end: the postcard encodings of the
/// empty trailing sections that version cannot hold (`None` and empty lists are one `0` byte each).
pub(crate) fn omitted_trailing_bytes(version: u32) -> usize {
    let mut omitted = 0;
    if version < FORMAT_VERSION_RIGID {
        omitted += 1;
    }
    if version < FORMAT_VERSION_MATERIALS {
        omitted += 3;
    }
    if version < FORMAT_VERSION_ROOT_MOTION {
        omitted += 1;
    }
    if version < FORMAT_VERSION_FLUID {
        omitted += 1;
    }
    if version < FORMAT_VERSION_SPRITE {
        omitted += 1;
    }
    if version < FORMAT_VERSION_IMPOSTORS {
        omitted += 1;
    }
    if version < FORMAT_VERSION_IMPOSTOR_ONE_VIEW {
        omitted += 1;
    }
    if version < FORMAT_VERSION_IMPOSTOR_VARIANTS {
        omitted += 1;
    }
    if version < FORMAT_VERSION_SKIN_RESIDUAL {
        omitted += 1;
    }
    omitted
}

/// Bytes in the fixed header: magic, version, manifest length, manifest CRC-32.
pub const HEADER_LEN: u64 = 16;

/// Every blob starts at a file offset that is a multiple of this many bytes.
pub const BLOB_ALIGNMENT: u64 = 16;

/// `offset` rounded up to the next multiple of [`BLOB_ALIGNMENT`], or `None` on overflow.
pub(crate) fn align_up(offset: u64) -> Option<u64> {
    offset.checked_add(BLOB_ALIGNMENT - 1).map(|v| v / BLOB_ALIGNMENT * BLOB_ALIGNMENT)
}

/// Bytes from which [`blob_crc32`] splits its work over threads.
const PARALLEL_CRC_MIN_BYTES: usize = 8 << 20;

/// CRC-32 (IEEE, as `crc32fast::hash` computes it) of a blob. A large blob (at least 8 MiB) is
/// split into one piece per available core (at most 8), whose CRCs are computed on scoped threads
/// and combined (`crc32fast::Hasher::combine`): the same value, in a fraction of the time on the
/// largest files (a 290 MB animation texture is written and read back once per bake). Where a thread
/// cannot be started, that piece is hashed on the calling thread.
pub(crate) fn blob_crc32(data: &[u8]) -> u32 {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if data.len() < PARALLEL_CRC_MIN_BYTES || threads < 2 {
        return crc32fast::hash(data);
    }
    let piece = data.len().div_ceil(threads);
    let pieces: Vec<crc32fast::Hasher> = std::thread::scope(|scope| {
        let handles: Vec<_> = data
            .chunks(piece)
            .map(|chunk| {
                let hash = move || {
                    let mut h = crc32fast::Hasher::new();
                    h.update(chunk);
                    h
                };
                (chunk, std::thread::Builder::new().spawn_scoped(scope, hash))
            })
            .collect();
        handles
            .into_iter()
            .map(|(chunk, handle)| match handle.map(|h| h.join()) {
                Ok(Ok(h)) => h,
                // Not started (or, impossibly, panicked): hash the piece here.
                _ => {
                    let mut h = crc32fast::Hasher::new();
                    h.update(chunk);
                    h
                }
            })
            .collect()
    });
    let mut all = crc32fast::Hasher::new();
    for h in &pieces {
        all.combine(h);
    }
    all.finalize()
}
