//! The validating, zero-copy reader.

use std::collections::HashSet;

use crate::clip::ClipRowMap;
use crate::encoding::{TexelFormat, VertexFormat};
use crate::{Error, Result};

use super::manifest::{BlobId, ElementFormat, Manifest, StreamKind};
use super::{FORMAT_VERSION, FORMAT_VERSION_MORPH, HEADER_LEN, MAGIC, MIN_FORMAT_VERSION, align_up};

/// Upper bounds the reader enforces before it uses any count or size read from a file, so that a
/// corrupt or hostile file yields [`Error::LimitExceeded`] instead of a huge allocation or loop.
///
/// The defaults admit any asset the baker makes for real devices (16384 is the largest texture
/// dimension of current desktop GPUs) while keeping the reader's own memory small: the decoded
/// manifest takes at most about 64 bytes of memory per manifest byte (a 2-byte [`super::Bone`] decodes
/// to 32 bytes, doubled by vector growth), so at most ~64 MiB for the default 1 MiB manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest file, in bytes. Default 4 GiB (`1 << 32`).
    pub max_total_bytes: u64,
    /// Largest manifest, in bytes. Default 1 MiB (a 200-bone, 50-clip asset needs a few KiB).
    pub max_manifest_bytes: u32,
    /// Most blobs. Default 4096.
    pub max_blobs: u32,
    /// Most vertices. Default `1 << 24` (16.7 M).
    pub max_vertices: u32,
    /// Most frames of all clips together. Default `1 << 20` (9.7 hours at 30 fps).
    pub max_frames: u32,
    /// Largest texture width or height, in texels. Default 16384.
    pub max_texture_dimension: u32,
    /// Most clips. Default 4096.
    pub max_clips: u32,
    /// Most bones. Default 4096 (joints are `u16`, so never more than 65536).
    pub max_bones: u32,
    /// Most LODs. Default 16.
    pub max_lods: u32,
    /// Most vertex streams. Default 16 (there are 7 kinds).
    pub max_streams: u32,
    /// Most sockets. Default 4096.
    pub max_sockets: u32,
    /// Most morph targets. Default 1024.
    pub max_morph_targets: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_total_bytes: 1 << 32,
            max_manifest_bytes: 1 << 20,
            max_blobs: 4096,
            max_vertices: 1 << 24,
            max_frames: 1 << 20,
            max_texture_dimension: 16384,
            max_clips: 4096,
            max_bones: 4096,
            max_lods: 16,
            max_streams: 16,
            max_sockets: 4096,
            max_morph_targets: 1024,
        }
    }
}

/// A validated `.vat` file. Borrows the file's bytes; every blob accessor returns a sub-slice of
/// them (no copy). Construct with [`Asset::parse`].
#[derive(Clone)]
pub struct Asset<'a> {
    bytes: &'a [u8],
    manifest: Manifest,
    clip_map: ClipRowMap,
}

// By hand: the derived impl would print every byte of the file.
impl std::fmt::Debug for Asset<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asset")
            .field("file_len", &self.bytes.len())
            .field("manifest", &self.manifest)
            .finish()
    }
}

impl<'a> Asset<'a> {
    /// Parses and validates `bytes` under the default [`Limits`].
    ///
    /// # Errors
    /// Any of the container errors of [`Error`] (see [`Asset::parse_with_limits`]).
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        Self::parse_with_limits(bytes, &Limits::default())
    }

    /// Parses and validates `bytes`; nothing is handed out unless all of the file is valid.
    ///
    /// # Errors
    /// - [`Error::SectionNeedsVersion`] for a morph animation in a version 1 file;
    /// - [`Error::BadMagic`], [`Error::UnsupportedVersion`], [`Error::Truncated`] for a bad header or a
    ///   file shorter than its header, manifest or blob table say;
    /// - [`Error::ManifestChecksumMismatch`], [`Error::ManifestDecode`] for a bad manifest;
    /// - [`Error::BlobMisaligned`], [`Error::BlobsOutOfOrder`], [`Error::BlobsOverlap`],
    ///   [`Error::BadPadding`], [`Error::TrailingBytes`], [`Error::BlobChecksumMismatch`] for a bad blob
    ///   table or blob;
    /// - [`Error::LimitExceeded`] for a count or size above `limits` (or overflowing `u64`);
    /// - [`Error::BlobIdOutOfRange`], [`Error::BlobSizeMismatch`], [`Error::ManifestMismatch`],
    ///   [`Error::IndexOutOfRange`], [`Error::LodRangeOutOfBounds`], [`Error::BadBoneParent`],
    ///   [`Error::MissingSection`], [`Error::DuplicateName`], [`Error::ZeroCount`],
    ///   [`Error::OutOfRange`], [`Error::NotFinite`] for an inconsistent manifest.
    pub fn parse_with_limits(bytes: &'a [u8], limits: &Limits) -> Result<Self> {
        let file_len = bytes.len() as u64;
        within("file size in bytes", file_len, limits.max_total_bytes)?;
        if let Some(magic) = bytes.get(..4)
            && magic != MAGIC
        {
            return Err(Error::BadMagic { found: [magic[0], magic[1], magic[2], magic[3]] });
        }
        let header = bytes.get(..HEADER_LEN as usize).ok_or(Error::Truncated {
            section: "header",
            needed: HEADER_LEN,
            available: file_len,
        })?;
        let word = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let version = word(4);
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(Error::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
        }
        let manifest_len = word(8);
        let stored_crc = word(12);
        within("manifest length in bytes", manifest_len.into(), limits.max_manifest_bytes.into())?;
        let manifest_end = HEADER_LEN + u64::from(manifest_len);
        let manifest_bytes = usize::try_from(manifest_end)
            .ok()
            .and_then(|end| bytes.get(HEADER_LEN as usize..end))
            .ok_or(Error::Truncated { section: "manifest", needed: manifest_end, available: file_len })?;
        let computed_crc = crc32fast::hash(manifest_bytes);
        if computed_crc != stored_crc {
            return Err(Error::ManifestChecksumMismatch { stored: stored_crc, computed: computed_crc });
        }
        let manifest = decode_manifest(manifest_bytes, version)?;
        if version < FORMAT_VERSION_MORPH && manifest.morph_animation.is_some() {
            return Err(Error::SectionNeedsVersion {
                section: "morph animation",
                version,
                needed: FORMAT_VERSION_MORPH,
            });
        }
        check_blob_table(&manifest, bytes, manifest_end, limits)?;
        let clip_map = validate_manifest(&manifest, bytes, limits)?;
        Ok(Self { bytes, manifest, clip_map })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The whole file, as passed to [`Asset::parse`].
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The clips as a row map (validated: they tile `0..frame_count`).
    pub fn clip_map(&self) -> &ClipRowMap {
        &self.clip_map
    }

    /// Frames of all clips together.
    pub fn frame_count(&self) -> u32 {
        self.clip_map.total_frames()
    }

    /// The bytes of blob `id`, borrowed from the file (a sub-slice of [`Asset::bytes`], no copy).
    ///
    /// # Panics
    /// If `id` is not an index of [`Manifest::blobs`]. Every [`BlobId`] in a parsed manifest is
    /// (parse checked them), so this only panics for an id made up by the caller; use
    /// [`Asset::get_blob`] for those.
    pub fn blob(&self, id: BlobId) -> &'a [u8] {
        match self.get_blob(id) {
            Some(data) => data,
            None => {
                panic!("BlobId({}) is not one of the {} blobs of this asset", id.0, self.manifest.blobs.len())
            }
        }
    }

    /// The bytes of blob `id`, or `None` if `id` is not an index of [`Manifest::blobs`].
    pub fn get_blob(&self, id: BlobId) -> Option<&'a [u8]> {
        blob_bytes(self.bytes, &self.manifest, id, "requested blob").ok()
    }

    /// Vertex animation texture `index` (0 = positions) with its texel format, or `None` without
    /// vertex animation or past the format's texture count.
    pub fn vertex_texture(&self, index: usize) -> Option<(TexelFormat, &'a [u8])> {
        let va = self.manifest.vertex_animation.as_ref()?;
        let format = *va.format.texel_formats().get(index)?;
        Some((format, self.get_blob(*va.textures.get(index)?)?))
    }

    /// The per-frame tangent texture (`Rgba16Float` quaternions), if baked.
    pub fn tangent_texture(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.vertex_animation.as_ref()?.tangents?)
    }

    /// The bone texture (`Rgba32Float`), if baked.
    pub fn bone_texture(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.bone_animation.as_ref()?.texture)
    }

    /// The `u16` joint indices (little-endian, `influences` per vertex), if bone animation was baked.
    pub fn joint_bytes(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.bone_animation.as_ref()?.joints)
    }

    /// The `f32` skin weights (little-endian, `influences` per vertex), if bone animation was baked.
    pub fn weight_bytes(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.bone_animation.as_ref()?.weights)
    }

    /// The morph delta texture (`Rgba32Float`, see [`super::MorphAnimation`]), if the asset has a
    /// morph layer.
    pub fn morph_texture(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.morph_animation.as_ref()?.texture)
    }

    /// The morph weights track (`Rgba32Float`, see [`crate::layout::MorphWeightsLayout`]), if the
    /// asset has a morph layer.
    pub fn morph_weights(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.morph_animation.as_ref()?.weights)
    }

    /// The whole shared index blob (`u32` little-endian), if the asset has LODs.
    pub fn index_bytes(&self) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.indices?)
    }

    /// The indices of LOD `lod` (`u32` little-endian, `index_count * 4` bytes), or `None` past the
    /// last LOD.
    pub fn lod_index_bytes(&self, lod: usize) -> Option<&'a [u8]> {
        let l = self.manifest.lods.get(lod)?;
        let start = usize::try_from(l.first_index).ok()?.checked_mul(4)?;
        let end = start.checked_add(usize::try_from(l.index_count).ok()?.checked_mul(4)?)?;
        self.index_bytes()?.get(start..end)
    }

    /// The stream of `kind` with its element format, if stored.
    pub fn stream(&self, kind: StreamKind) -> Option<(ElementFormat, &'a [u8])> {
        let s = self.manifest.streams.iter().find(|s| s.kind == kind)?;
        Some((s.element, self.get_blob(s.blob)?))
    }

    /// The per-frame transforms (12 `f32` per frame) captured for `bone`, if captured.
    pub fn capture_bytes(&self, bone: u32) -> Option<&'a [u8]> {
        self.get_blob(self.manifest.captures.iter().find(|c| c.bone == bone)?.blob)
    }
}

fn decode_manifest(manifest_bytes: &[u8], version: u32) -> Result<Manifest> {
    // Older versions end before the trailing sections they cannot hold: decode them with those
    // sections' empty encodings (postcard's 0 bytes) appended, so that a newer section can never be
    // read from an older file.
    let omitted = super::omitted_trailing_bytes(version);
    let appended;
    let manifest_bytes = if omitted > 0 {
        appended = [manifest_bytes, &vec![0u8; omitted]].concat();
        &appended[..]
    } else {
        manifest_bytes
    };
    // postcard caps pre-allocation by the bytes left (a length prefix larger than the input gives no
    // capacity hint, and serde caps hints at 1 MiB), so an absurd prefix fails at end of input instead
    // of allocating; tested in `absurd_vec_length_prefix_fails_without_allocating`.
    let (manifest, rest) = postcard::take_from_bytes::<Manifest>(manifest_bytes)
        .map_err(|e| Error::ManifestDecode { message: e.to_string() })?;
    if !rest.is_empty() {
        return Err(Error::ManifestDecode {
            message: format!("{} bytes follow the manifest inside its declared length", rest.len()),
        });
    }
    Ok(manifest)
}

/// Checks the counts of `m` that [`Limits`] bounds (vertices, clips, frames of all clips, bones,
/// LODs, vertex streams, sockets, morph targets, blobs, texture sizes) without its bytes: a writer
/// calls it before writing, so that it never writes a file the reader refuses. [`Asset::parse`]
/// runs the same checks (and many more).
///
/// # Errors
/// [`Error::LimitExceeded`] naming the first count above its limit.
pub fn check_manifest_counts(m: &Manifest, limits: &Limits) -> Result<()> {
    within("vertex count", m.vertex_count.into(), limits.max_vertices.into())?;
    within("clip count", m.clips.len() as u64, limits.max_clips.into())?;
    let frames = m.clips.iter().fold(0u64, |sum, c| sum.saturating_add(c.frame_count.into()));
    within("frame count", frames, limits.max_frames.into())?;
    within("bone count", m.bones.len() as u64, limits.max_bones.into())?;
    within("LOD count", m.lods.len() as u64, limits.max_lods.into())?;
    within("vertex stream count", m.streams.len() as u64, limits.max_streams.into())?;
    within("socket count", m.sockets.len() as u64, limits.max_sockets.into())?;
    within("blob count", m.blobs.len() as u64, limits.max_blobs.into())?;
    if let Some(va) = &m.vertex_animation {
        within("vertex texture width", va.layout.width.into(), limits.max_texture_dimension.into())?;
        within("vertex texture height", va.layout.height.into(), limits.max_texture_dimension.into())?;
    }
    if let Some(b) = &m.bone_animation {
        within("bone texture width", b.layout.width.into(), limits.max_texture_dimension.into())?;
        within("bone texture height", b.layout.height.into(), limits.max_texture_dimension.into())?;
    }
    if let Some(morph) = &m.morph_animation {
        within("morph target count", morph.layout.target_count.into(), limits.max_morph_targets.into())?;
    }
    if let Some(sa) = &m.sprite_animation {
        within("sprite slot count", sa.layout.vertex_count.into(), limits.max_vertices.into())?;
        within("particle texture width", sa.layout.width.into(), limits.max_texture_dimension.into())?;
        within("particle texture height", sa.layout.height.into(), limits.max_texture_dimension.into())?;
    }
    if let Some(fa) = &m.fluid_animation {
        within(
            "fluid lookup texture width",
            fa.lookup_layout.width.into(),
            limits.max_texture_dimension.into(),
        )?;
        within(
            "fluid lookup texture height",
            fa.lookup_layout.height.into(),
            limits.max_texture_dimension.into(),
        )?;
    }
    if let Some(ra) = &m.rigid_animation {
        within("rigid piece count", ra.layout.vertex_count.into(), limits.max_vertices.into())?;
        for (what, v) in [
            ("piece texture width", ra.layout.width),
            ("piece texture height", ra.layout.height),
            ("rigid vertex texture width", ra.vertex_layout.width),
            ("rigid vertex texture height", ra.vertex_layout.height),
        ] {
            within(what, v.into(), limits.max_texture_dimension.into())?;
        }
    }
    Ok(())
}

/// `value <= limit`, else [`Error::LimitExceeded`].
fn within(what: &'static str, value: u64, limit: u64) -> Result<()> {
    if value > limit { Err(Error::LimitExceeded { what, value, limit }) } else { Ok(()) }
}

/// The product of `factors`, or [`Error::LimitExceeded`] when it overflows `u64` (nothing that large
/// can be in a file).
fn product(what: &'static str, factors: &[u64], limits: &Limits) -> Result<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f)).ok_or(Error::LimitExceeded {
        what,
        value: u64::MAX,
        limit: limits.max_total_bytes,
    })
}

/// Checks the blob table against the file: alignment, order, overlaps, exact padding, exact end,
/// zero padding bytes and checksums.
fn check_blob_table(m: &Manifest, bytes: &[u8], manifest_end: u64, limits: &Limits) -> Result<()> {
    within("blob count", m.blobs.len() as u64, limits.max_blobs.into())?;
    let file_len = bytes.len() as u64;
    let mut previous_offset: Option<u64> = None;
    let mut previous_end = manifest_end;
    for (i, b) in m.blobs.iter().enumerate() {
        let blob = i as u32;
        if b.offset % super::BLOB_ALIGNMENT != 0 {
            return Err(Error::BlobMisaligned { blob, offset: b.offset });
        }
        if let Some(p) = previous_offset
            && b.offset < p
        {
            return Err(Error::BlobsOutOfOrder { blob, offset: b.offset, previous_offset: p });
        }
        if b.offset < previous_end {
            return Err(Error::BlobsOverlap { blob, offset: b.offset, previous_end });
        }
        previous_offset = Some(b.offset);
        previous_end = b.offset.checked_add(b.length).ok_or(Error::LimitExceeded {
            what: "blob end offset",
            value: u64::MAX,
            limit: limits.max_total_bytes,
        })?;
    }
    // Offsets are fully determined by the lengths: a gap wider than the padding to the next boundary
    // is refused (checked after order and overlaps, so those get their own errors).
    let mut gap_start = manifest_end;
    for b in &m.blobs {
        if Some(b.offset) != align_up(gap_start) {
            return Err(Error::BadPadding { offset: gap_start });
        }
        gap_start = b.offset + b.length;
    }
    if file_len < previous_end {
        return Err(Error::Truncated { section: "blobs", needed: previous_end, available: file_len });
    }
    if file_len > previous_end {
        return Err(Error::TrailingBytes { expected_len: previous_end, actual_len: file_len });
    }
    // Every range below is inside the file: each blob ends at or before `previous_end == file_len`.
    let mut gap_start = manifest_end;
    for (i, b) in m.blobs.iter().enumerate() {
        let gap = range(bytes, gap_start, b.offset)?;
        if let Some(k) = gap.iter().position(|&v| v != 0) {
            return Err(Error::BadPadding { offset: gap_start + k as u64 });
        }
        let end = b.offset + b.length;
        let computed = super::blob_crc32(range(bytes, b.offset, end)?);
        if computed != b.crc32 {
            return Err(Error::BlobChecksumMismatch { blob: i as u32, stored: b.crc32, computed });
        }
        gap_start = end;
    }
    Ok(())
}

/// `bytes[start..end]`, or [`Error::Truncated`] (unreachable after [`check_blob_table`]).
fn range(bytes: &[u8], start: u64, end: u64) -> Result<&[u8]> {
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or(Error::Truncated { section: "blobs", needed: end, available: bytes.len() as u64 })
}

/// The bytes of blob `id`, or [`Error::BlobIdOutOfRange`] naming `what` referred to it.
fn blob_bytes<'a>(bytes: &'a [u8], m: &Manifest, id: BlobId, what: &'static str) -> Result<&'a [u8]> {
    let entry = m.blobs.get(id.0 as usize).ok_or(Error::BlobIdOutOfRange {
        what,
        blob: id.0,
        blob_count: m.blobs.len() as u32,
    })?;
    let end = entry.offset.checked_add(entry.length).ok_or(Error::LimitExceeded {
        what: "blob end offset",
        value: u64::MAX,
        limit: u64::MAX,
    })?;
    range(bytes, entry.offset, end)
}

/// Blob `id`'s bytes, checked to be exactly `expected` long.
fn sized_blob<'a>(
    bytes: &'a [u8],
    m: &Manifest,
    id: BlobId,
    what: &'static str,
    expected: u64,
) -> Result<&'a [u8]> {
    let data = blob_bytes(bytes, m, id, what)?;
    if data.len() as u64 != expected {
        return Err(Error::BlobSizeMismatch { what, blob: id.0, expected, actual: data.len() as u64 });
    }
    Ok(data)
}

/// Names of the checks of one linearised texture, for error messages.
struct Grid {
    width: &'static str,
    height: &'static str,
}

/// A linearised texture of `texels` texels: `width` and `height` in `1..=max_texture_dimension` and
/// `height == ceil(texels / width)` (enough rows, no empty row). Returns `width * height`.
fn check_grid(names: &Grid, width: u32, height: u32, texels: u64, limits: &Limits) -> Result<u64> {
    if width == 0 {
        return Err(Error::ZeroCount { what: names.width });
    }
    if height == 0 {
        return Err(Error::ZeroCount { what: names.height });
    }
    within(names.width, width.into(), limits.max_texture_dimension.into())?;
    within(names.height, height.into(), limits.max_texture_dimension.into())?;
    let expected = texels.div_ceil(u64::from(width));
    if u64::from(height) != expected {
        return Err(Error::ManifestMismatch { what: names.height, expected, actual: height.into() });
    }
    Ok(u64::from(width) * u64::from(height))
}

fn expect_equal(what: &'static str, expected: u64, actual: u64) -> Result<()> {
    if expected != actual { Err(Error::ManifestMismatch { what, expected, actual }) } else { Ok(()) }
}

fn check_finite(what: &'static str, values: &[f32]) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(Error::NotFinite { what }) }
}

/// Checks that `names` has no repeats.
fn unique<'n>(what: &'static str, names: impl Iterator<Item = &'n str>) -> Result<()> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(Error::DuplicateName { what, name: n.to_owned() });
        }
    }
    Ok(())
}

/// The morph layer: layouts derived from the counts, format, blob sizes, finite values.
fn validate_morph_animation(
    ma: &super::MorphAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    let l = &ma.layout;
    within("morph target count", l.target_count.into(), limits.max_morph_targets.into())?;
    if l.target_count == 0 {
        return Err(Error::ZeroCount { what: "morph target count" });
    }
    expect_equal("morph target names", l.target_count.into(), ma.target_names.len() as u64)?;
    expect_equal("morph texture vertex count", vertex_count, l.vertex_count.into())?;
    let width = vertex_count.min(u64::from(crate::layout::MORPH_TEXTURE_MAX_WIDTH));
    expect_equal("morph texture width (min(vertex count, 2048))", width, l.width.into())?;
    let rows = vertex_count.div_ceil(width);
    expect_equal("morph texture rows per band", rows, l.rows_per_band.into())?;
    let height = u64::from(l.target_count) * 2 * rows;
    expect_equal("morph texture height", height, l.height.into())?;
    within("morph texture height", height, limits.max_texture_dimension.into())?;
    within("morph texture width", width, limits.max_texture_dimension.into())?;
    if ma.format != crate::layout::MORPH_TEXEL_FORMAT {
        return Err(Error::OutOfRange {
            what: "morph texture format",
            value: format!("{:?}", ma.format),
            expected: "Rgba32Float",
        });
    }
    let texel = u64::from(ma.format.bytes_per_texel());
    let len = product("morph texture bytes", &[width, height, texel], limits)?;
    check_finite_bytes("morph delta", sized_blob(bytes, m, ma.texture, "morph texture", len)?)?;

    let w = &ma.weights_layout;
    expect_equal("morph weights target count", l.target_count.into(), w.target_count.into())?;
    expect_equal("morph weights frame count (frames of all clips)", frame_count, w.frame_count.into())?;
    if w.frame_count == 0 {
        return Err(Error::ZeroCount { what: "morph weights frame count" });
    }
    let names = Grid { width: "morph weights width", height: "morph weights height" };
    let needed = product(
        "morph weights texels",
        &[frame_count, u64::from(l.target_count.div_ceil(crate::layout::MORPH_WEIGHTS_PER_TEXEL))],
        limits,
    )?;
    let texels = check_grid(&names, w.width, w.height, needed, limits)?;
    let len = product("morph weights bytes", &[texels, 16], limits)?;
    check_finite_bytes("morph weight", sized_blob(bytes, m, ma.weights, "morph weights", len)?)
}

/// Every little-endian `f32` of `data` is finite, else [`Error::NotFinite`].
fn check_finite_bytes(what: &'static str, data: &[u8]) -> Result<()> {
    let finite = data.chunks_exact(4).all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
    if finite { Ok(()) } else { Err(Error::NotFinite { what }) }
}

/// Everything about the manifest beyond the blob table. Returns the clip row map.
fn validate_manifest(m: &Manifest, bytes: &[u8], limits: &Limits) -> Result<ClipRowMap> {
    // Counts first, so nothing below loops or multiplies over an absurd count.
    if m.vertex_count == 0 {
        return Err(Error::ZeroCount { what: "vertex count" });
    }
    check_manifest_counts(m, limits)?;
    let vertex_count = u64::from(m.vertex_count);
    let bone_count = m.bones.len() as u64;

    let clip_map = ClipRowMap::from_clips(m.clips.clone())?;
    let frame_count = u64::from(clip_map.total_frames());
    within("frame count", frame_count, limits.max_frames.into())?;
    unique("clip", m.clips.iter().map(|c| c.name.as_str()))?;

    if let Some(va) = &m.vertex_animation {
        let l = &va.layout;
        // A fluid asset's vertex texture holds every frame's vertices back to back: one "frame" of
        // all of them (checked against the fluid frames in validate_fluid_animation).
        let (texture_vertices, texture_frames) = match &m.fluid_animation {
            Some(fa) => (fluid_vertex_total(fa)?, 1),
            None => (vertex_count, frame_count),
        };
        expect_equal("vertex texture vertex count", texture_vertices, l.vertex_count.into())?;
        if m.fluid_animation.is_some() {
            expect_equal("fluid vertex texture frame count", 1, l.frame_count.into())?;
        } else {
            expect_equal(
                "vertex texture frame count (frames of all clips)",
                frame_count,
                l.frame_count.into(),
            )?;
        }
        if l.frame_count == 0 {
            return Err(Error::ZeroCount { what: "vertex texture frame count" });
        }
        let names = Grid { width: "vertex texture width", height: "vertex texture height" };
        let texels = check_grid(&names, l.width, l.height, texture_vertices * texture_frames, limits)?;
        let formats = va.format.texel_formats();
        expect_equal("vertex texture count", formats.len() as u64, va.textures.len() as u64)?;
        for (&id, &format) in va.textures.iter().zip(formats) {
            let len = product("vertex texture bytes", &[texels, format.bytes_per_texel().into()], limits)?;
            sized_blob(bytes, m, id, "vertex texture", len)?;
        }
        if let Some(id) = va.tangents {
            let len = product("tangent texture bytes", &[texels, 8], limits)?;
            sized_blob(bytes, m, id, "tangent texture", len)?;
        }
        check_finite("position bounds min", &va.bounds.min)?;
        check_finite("position bounds extent", &va.bounds.extent)?;
        if va.bounds.extent.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what: "position bounds extent",
                value: format!("{:?}", va.bounds.extent),
                expected: ">= 0 metres on each axis",
            });
        }
        // Packed64 allocates 40 bits over the axes, at most 20 each (an axis of zero extent may get
        // none); the other formats store fixed-size channels and leave the field zeroed.
        let bits = va.position_bits;
        if va.format == VertexFormat::Packed64 {
            if bits.iter().any(|&b| b > 20) || bits.iter().sum::<u32>() != 40 {
                return Err(Error::OutOfRange {
                    what: "packed64 position bits",
                    value: format!("{bits:?}"),
                    expected: "each in 0..=20, summing to 40",
                });
            }
        } else if bits != [0; 3] {
            return Err(Error::OutOfRange {
                what: "position bits",
                value: format!("{bits:?}"),
                expected: "[0, 0, 0] for formats other than packed64",
            });
        }
    }

    if let Some(ba) = &m.bone_animation {
        let l = &ba.layout;
        expect_equal("bone texture bone count (bones in the skeleton)", bone_count, l.bone_count.into())?;
        expect_equal("bone texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
        if l.bone_count == 0 {
            return Err(Error::ZeroCount { what: "bone texture bone count" });
        }
        if l.frame_count == 0 {
            return Err(Error::ZeroCount { what: "bone texture frame count" });
        }
        let names = Grid { width: "bone texture width", height: "bone texture height" };
        let needed = product("bone texture texels", &[frame_count, bone_count, 3], limits)?;
        let texels = check_grid(&names, l.width, l.height, needed, limits)?;
        let len = product("bone texture bytes", &[texels, 16], limits)?;
        sized_blob(bytes, m, ba.texture, "bone texture", len)?;
        if !matches!(ba.influences, 4 | 8) {
            return Err(Error::OutOfRange {
                what: "bone influences per vertex",
                value: ba.influences.to_string(),
                expected: "4 or 8",
            });
        }
        let slots = vertex_count * u64::from(ba.influences);
        let joints = sized_blob(bytes, m, ba.joints, "joint indices", slots * 2)?;
        for c in joints.chunks_exact(2) {
            let joint = u16::from_le_bytes([c[0], c[1]]);
            if u64::from(joint) >= bone_count {
                return Err(Error::IndexOutOfRange { what: "joint", index: joint.into(), count: bone_count });
            }
        }
        let weights = sized_blob(bytes, m, ba.weights, "skin weights", slots * 4)?;
        for c in weights.chunks_exact(4) {
            let w = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            if !(0.0..=1.0).contains(&w) {
                return Err(Error::OutOfRange {
                    what: "skin weight",
                    value: w.to_string(),
                    expected: "in [0, 1]",
                });
            }
        }
    }

    if let Some(ma) = &m.morph_animation {
        validate_morph_animation(ma, m, bytes, limits, vertex_count, frame_count)?;
    }

    match (m.indices, m.lods.is_empty()) {
        (None, true) => {}
        (None, false) => return Err(Error::MissingSection { what: "the index blob its LODs refer to" }),
        (Some(_), true) => return Err(Error::MissingSection { what: "LODs for its index blob" }),
        (Some(id), false) => {
            let data = blob_bytes(bytes, m, id, "index blob")?;
            expect_equal("index blob length modulo 4", 0, data.len() as u64 % 4)?;
            let available = data.len() as u64 / 4;
            for c in data.chunks_exact(4) {
                let index = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                if u64::from(index) >= vertex_count {
                    return Err(Error::IndexOutOfRange {
                        what: "vertex index",
                        index: index.into(),
                        count: vertex_count,
                    });
                }
            }
            let mut previous_distance = 0.0f32;
            for (i, lod) in m.lods.iter().enumerate() {
                let end = u64::from(lod.first_index) + u64::from(lod.index_count);
                if end > available {
                    return Err(Error::LodRangeOutOfBounds {
                        lod: i as u32,
                        first_index: lod.first_index,
                        index_count: lod.index_count,
                        available,
                    });
                }
                if lod.triangle_count == 0 {
                    return Err(Error::ZeroCount { what: "LOD triangle count" });
                }
                expect_equal(
                    "LOD index count (3 x triangle count)",
                    u64::from(lod.triangle_count) * 3,
                    lod.index_count.into(),
                )?;
                if !(lod.screen_error.is_finite() && lod.screen_error >= 0.0) {
                    return Err(Error::OutOfRange {
                        what: "LOD screen error",
                        value: lod.screen_error.to_string(),
                        expected: "finite and >= 0 metres",
                    });
                }
                // NaN fails both comparisons' negation below, so it is refused too.
                if !(lod.max_distance > 0.0 && lod.max_distance >= previous_distance) {
                    return Err(Error::OutOfRange {
                        what: "LOD max distance",
                        value: lod.max_distance.to_string(),
                        expected: "> 0 metres and not less than the previous LOD's",
                    });
                }
                previous_distance = lod.max_distance;
            }
        }
    }

    let mut kinds = HashSet::new();
    for s in &m.streams {
        if !kinds.insert(s.kind) {
            return Err(Error::DuplicateName { what: "vertex stream kind", name: format!("{:?}", s.kind) });
        }
        if !s.kind.accepts(s.element) {
            return Err(Error::OutOfRange {
                what: "vertex stream element format",
                value: format!("{:?} for {:?}", s.element, s.kind),
                expected: s.kind.accepted_formats(),
            });
        }
        sized_blob(bytes, m, s.blob, "vertex stream", vertex_count * u64::from(s.element.byte_size()))?;
    }

    for (i, b) in m.bones.iter().enumerate() {
        if let Some(parent) = b.parent
            && parent as usize >= i
        {
            return Err(Error::BadBoneParent { bone: i as u32, parent });
        }
    }

    for s in &m.sockets {
        if u64::from(s.bone) >= bone_count {
            return Err(Error::IndexOutOfRange {
                what: "socket bone",
                index: s.bone.into(),
                count: bone_count,
            });
        }
        check_finite("socket transform", &s.local)?;
    }
    unique("socket", m.sockets.iter().map(|s| s.name.as_str()))?;

    let mut captured = HashSet::new();
    for c in &m.captures {
        if u64::from(c.bone) >= bone_count {
            return Err(Error::IndexOutOfRange {
                what: "capture bone",
                index: c.bone.into(),
                count: bone_count,
            });
        }
        if !captured.insert(c.bone) {
            return Err(Error::DuplicateName { what: "capture track for bone", name: c.bone.to_string() });
        }
        sized_blob(bytes, m, c.blob, "capture track", frame_count * 48)?;
    }

    for a in &m.attachments {
        if a.socket as usize >= m.sockets.len() {
            return Err(Error::IndexOutOfRange {
                what: "attachment socket",
                index: a.socket.into(),
                count: m.sockets.len() as u64,
            });
        }
        if a.vertex_count == 0 {
            return Err(Error::ZeroCount { what: "attachment vertex count" });
        }
        within("attachment vertex count", a.vertex_count.into(), limits.max_vertices.into())?;
        let n = u64::from(a.vertex_count);
        sized_blob(bytes, m, a.positions, "attachment positions", n * 12)?;
        sized_blob(bytes, m, a.normals, "attachment normals", n * 12)?;
        sized_blob(bytes, m, a.material_ids, "attachment material ids", n)?;
        let indices = blob_bytes(bytes, m, a.indices, "attachment indices")?;
        if indices.is_empty() || indices.len() % 12 != 0 {
            return Err(Error::BlobSizeMismatch {
                what: "attachment indices (whole triangles of u32)",
                blob: a.indices.0,
                expected: 12 * (indices.len() as u64 / 12).max(1),
                actual: indices.len() as u64,
            });
        }
        for chunk in indices.chunks_exact(4) {
            let index = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            if index >= a.vertex_count {
                return Err(Error::IndexOutOfRange {
                    what: "attachment index",
                    index: index.into(),
                    count: n,
                });
            }
        }
    }
    unique("attachment", m.attachments.iter().map(|a| a.name.as_str()))?;

    if let Some(ra) = &m.rigid_animation {
        validate_rigid_animation(ra, m, bytes, limits, vertex_count, frame_count)?;
    }
    if let Some(fa) = &m.fluid_animation {
        validate_fluid_animation(fa, m, bytes, limits, vertex_count, frame_count)?;
    }
    if let Some(sa) = &m.sprite_animation {
        validate_sprite_animation(sa, m, bytes, limits, vertex_count, &clip_map)?;
    }
    validate_materials(m, bytes, limits)?;
    validate_root_motion(m)?;

    Ok(clip_map)
}

/// The materials and their texture arrays: counts, finite factors in range, every texture binding
/// a layer of the right array, full mip chains, exact blob sizes, and every material id of the
/// `MaterialId` stream and the attachments below the material count.
fn validate_materials(m: &Manifest, bytes: &[u8], limits: &Limits) -> Result<()> {
    within("material count", m.materials.len() as u64, super::MAX_MATERIALS as u64)?;
    let textures = m.material_textures.as_ref();
    if textures.is_some() && m.materials.is_empty() {
        return Err(Error::MissingSection { what: "materials (the asset has material textures)" });
    }
    let arrays = [
        ("colour texture array", textures.and_then(|t| t.color.as_ref()), super::TextureColorSpace::Srgb),
        ("data texture array", textures.and_then(|t| t.data.as_ref()), super::TextureColorSpace::Linear),
    ];
    for (what, array, space) in arrays {
        let Some(a) = array else { continue };
        if a.color_space != space {
            return Err(Error::OutOfRange {
                what,
                value: format!("{:?}", a.color_space),
                expected: "Srgb for the colour array, Linear for the data array",
            });
        }
        if a.width == 0 || a.height == 0 {
            return Err(Error::ZeroCount { what: "material texture layer size" });
        }
        within("material texture width", a.width.into(), limits.max_texture_dimension.into())?;
        within("material texture height", a.height.into(), limits.max_texture_dimension.into())?;
        if a.layers.is_empty() {
            return Err(Error::ZeroCount { what: "material texture layers" });
        }
        within("material texture layers", a.layers.len() as u64, super::MAX_TEXTURE_LAYERS as u64)?;
        let full = super::TextureArray::full_mip_levels(a.width, a.height);
        expect_equal("material texture mip levels (the full chain)", full.into(), a.mip_levels.into())?;
        let len = a.byte_len().ok_or(Error::LimitExceeded {
            what: "material texture bytes",
            value: u64::MAX,
            limit: limits.max_total_bytes,
        })?;
        sized_blob(bytes, m, a.texels, what, len)?;
    }
    let layers = |a: Option<&super::TextureArray>| a.map_or(0, |a| a.layers.len() as u64);
    let color_layers = layers(arrays[0].1);
    let data_layers = layers(arrays[1].1);
    for mat in &m.materials {
        check_finite("material base colour factor", &mat.base_color_factor)?;
        check_finite("material factors", &[mat.metallic_factor, mat.roughness_factor, mat.normal_scale])?;
        check_finite("material emissive factor", &mat.emissive_factor)?;
        let unit = |what: &'static str, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::OutOfRange { what, value: v.to_string(), expected: "0..=1" })
            }
        };
        for &c in &mat.base_color_factor {
            unit("material base colour factor", c)?;
        }
        unit("material metallic factor", mat.metallic_factor)?;
        unit("material roughness factor", mat.roughness_factor)?;
        if let super::AlphaMode::Mask { cutoff } = mat.alpha_mode {
            check_finite("material alpha cutoff", &[cutoff])?;
            unit("material alpha cutoff", cutoff)?;
        }
        if mat.emissive_factor.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what: "material emissive factor",
                value: format!("{:?}", mat.emissive_factor),
                expected: ">= 0",
            });
        }
        let bindings = [
            ("base colour texture layer", &mat.base_color_texture, color_layers),
            ("metallic-roughness texture layer", &mat.metallic_roughness_texture, data_layers),
            ("normal texture layer", &mat.normal_texture, data_layers),
        ];
        for (what, binding, count) in bindings {
            if let Some(b) = binding
                && u64::from(b.layer) >= count
            {
                return Err(Error::IndexOutOfRange { what, index: b.layer.into(), count });
            }
        }
    }
    within("material variant count", m.material_variants.len() as u64, 255)?;
    if !m.material_variants.is_empty() && m.materials.is_empty() {
        return Err(Error::MissingSection { what: "materials (the asset has material variants)" });
    }
    for variant in &m.material_variants {
        expect_equal(
            "material variant entries (one per material)",
            m.materials.len() as u64,
            variant.materials.len() as u64,
        )?;
        if let Some(&bad) = variant.materials.iter().find(|&&k| usize::from(k) >= m.materials.len()) {
            return Err(Error::IndexOutOfRange {
                what: "material variant material",
                index: bad.into(),
                count: m.materials.len() as u64,
            });
        }
    }
    if m.materials.is_empty() {
        return Ok(());
    }
    let count = m.materials.len() as u64;
    let check_ids = |what: &'static str, element: ElementFormat, data: &[u8]| -> Result<()> {
        let width = match element {
            ElementFormat::U8 => 1,
            ElementFormat::U16 => 2,
            _ => 4,
        };
        for chunk in data.chunks_exact(width) {
            let mut word = [0u8; 4];
            word[..width].copy_from_slice(chunk);
            let id = u32::from_le_bytes(word);
            if u64::from(id) >= count {
                return Err(Error::IndexOutOfRange { what, index: id.into(), count });
            }
        }
        Ok(())
    };
    if let Some(s) = m.streams.iter().find(|s| s.kind == StreamKind::MaterialId) {
        check_ids("material id", s.element, blob_bytes(bytes, m, s.blob, "material ids")?)?;
    }
    for a in &m.attachments {
        check_ids(
            "attachment material id",
            ElementFormat::U8,
            blob_bytes(bytes, m, a.material_ids, "attachment material ids")?,
        )?;
    }
    Ok(())
}

/// The rigid animation's checks: exclusive of the other animation kinds, rest streams present,
/// layouts consistent with the vertex and frame counts, exact blob sizes, finite boxes, every piece
/// index in range, every rest pivot finite, the unused texels zero, one name per piece.
fn validate_rigid_animation(
    ra: &crate::container::RigidAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    if m.vertex_animation.is_some() || m.bone_animation.is_some() || m.morph_animation.is_some() {
        return Err(Error::OutOfRange {
            what: "rigid animation",
            value: "alongside a vertex, bone or morph animation".into(),
            expected: "a rigid asset has no other animation",
        });
    }
    for kind in [StreamKind::RestPosition, StreamKind::RestNormal] {
        if !m.streams.iter().any(|s| s.kind == kind) {
            return Err(Error::MissingSection { what: "rest position and normal streams (rigid mode)" });
        }
    }
    let l = &ra.layout;
    let pieces = u64::from(l.vertex_count);
    if pieces == 0 {
        return Err(Error::ZeroCount { what: "rigid piece count" });
    }
    within("rigid piece count", pieces, limits.max_vertices.into())?;
    expect_equal("piece texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "piece texture width", height: "piece texture height" };
    let texels = check_grid(&names, l.width, l.height, pieces * frame_count, limits)?;
    let len = product("piece texture bytes", &[texels, 16], limits)?;
    sized_blob(bytes, m, ra.pieces, "piece texture", len)?;
    let vl = &ra.vertex_layout;
    expect_equal("rigid vertex texture vertex count", vertex_count, vl.vertex_count.into())?;
    expect_equal("rigid vertex texture frame count", 1, vl.frame_count.into())?;
    let names = Grid { width: "rigid vertex texture width", height: "rigid vertex texture height" };
    let vertex_texels = check_grid(&names, vl.width, vl.height, vertex_count, limits)?;
    let len = product("rigid vertex texture bytes", &[vertex_texels, 16], limits)?;
    let data = sized_blob(bytes, m, ra.vertices, "rigid vertex texture", len)?;
    for (v, c) in data.chunks_exact(16).enumerate() {
        let word = |k: usize| u32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
        let texel = [word(0), word(1), word(2), word(3)];
        if v as u64 >= vertex_count {
            if texel != [0; 4] {
                return Err(Error::OutOfRange {
                    what: "unused rigid vertex texel",
                    value: format!("{texel:?}"),
                    expected: "zero",
                });
            }
            continue;
        }
        let (piece, pivot) = crate::rigid::decode_vertex_texel(texel);
        if u64::from(piece) >= pieces {
            return Err(Error::IndexOutOfRange {
                what: "rigid piece index",
                index: piece.into(),
                count: pieces,
            });
        }
        check_finite("rigid rest pivot", &pivot)?;
    }
    for (what, b) in [("rigid pivot bounds", &ra.pivot_bounds), ("rigid vertex bounds", &ra.bounds)] {
        check_finite(what, &b.min)?;
        check_finite(what, &b.extent)?;
        if b.extent.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what,
                value: format!("{:?}", b.extent),
                expected: ">= 0 metres on each axis",
            });
        }
    }
    expect_equal("rigid piece name count", pieces, ra.piece_names.len() as u64)?;
    Ok(())
}

/// The vertices of all frames of a fluid animation together (checked `u64` sum; each count is a
/// `u32`, so the sum of at most `u32::MAX` frames cannot overflow `u64`).
fn fluid_vertex_total(fa: &crate::container::FluidAnimation) -> Result<u64> {
    Ok(fa.frames.iter().map(|f| u64::from(f.vertex_count)).sum())
}

/// The fluid animation's checks: a vertex animation and nothing else, `3 * pool_triangles`
/// corners, one frame entry per frame, frames back to back, triangle counts within the pool, and
/// every lookup entry: the corners of a frame's live triangles (the first `triangle_count`) index
/// that frame's vertices, every other entry is [`crate::fluid::COLLAPSED`], the unused texels zero.
fn validate_fluid_animation(
    fa: &crate::container::FluidAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    frame_count: u64,
) -> Result<()> {
    use crate::fluid::COLLAPSED;
    if m.vertex_animation.is_none()
        || m.bone_animation.is_some()
        || m.morph_animation.is_some()
        || m.rigid_animation.is_some()
    {
        return Err(Error::OutOfRange {
            what: "fluid animation",
            value: "without a vertex animation, or alongside a bone, morph or rigid animation".into(),
            expected: "a fluid asset has its vertex texture and no other animation",
        });
    }
    if !m.root_motion.is_empty() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks on a fluid asset", m.root_motion.len()),
            expected: "no root motion in fluid mode (its topology changes every frame)",
        });
    }
    if fa.pool_triangles == 0 {
        return Err(Error::ZeroCount { what: "fluid pool triangle count" });
    }
    let corners = u64::from(fa.pool_triangles) * 3;
    expect_equal("vertex count (3 corners per fluid pool triangle)", corners, vertex_count)?;
    expect_equal("fluid frame entries (frames of all clips)", frame_count, fa.frames.len() as u64)?;
    let mut next = 0u64;
    for f in &fa.frames {
        expect_equal("fluid frame first vertex (frames back to back)", next, f.first_vertex.into())?;
        next += u64::from(f.vertex_count);
        if f.triangle_count > fa.pool_triangles {
            return Err(Error::OutOfRange {
                what: "fluid frame triangle count",
                value: f.triangle_count.to_string(),
                expected: "<= the pool's triangle count",
            });
        }
        if f.triangle_count > 0 && f.vertex_count == 0 {
            return Err(Error::OutOfRange {
                what: "fluid frame vertex count",
                value: "0 with triangles".into(),
                expected: "at least one vertex in a frame with triangles",
            });
        }
    }
    let l = &fa.lookup_layout;
    let per_frame = corners.div_ceil(4);
    expect_equal("fluid lookup texels per frame (ceil(corners / 4))", per_frame, l.vertex_count.into())?;
    expect_equal("fluid lookup frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "fluid lookup texture width", height: "fluid lookup texture height" };
    let texels = check_grid(&names, l.width, l.height, per_frame * frame_count, limits)?;
    let len = product("fluid lookup texture bytes", &[texels, 16], limits)?;
    let data = sized_blob(bytes, m, fa.lookup, "fluid lookup texture", len)?;
    let entries = per_frame * 4;
    let used = per_frame * frame_count * 4;
    for (e, c) in data.chunks_exact(4).enumerate() {
        let e = e as u64;
        let value = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if e >= used {
            if value != 0 {
                return Err(Error::OutOfRange {
                    what: "unused fluid lookup texel",
                    value: value.to_string(),
                    expected: "zero",
                });
            }
            continue;
        }
        let (f, corner) = ((e / entries) as usize, e % entries);
        let frame = fa.frames[f];
        let live = corner < u64::from(frame.triangle_count) * 3;
        let (first, count) = (u64::from(frame.first_vertex), u64::from(frame.vertex_count));
        if live {
            if !(first..first + count).contains(&u64::from(value)) {
                return Err(Error::IndexOutOfRange {
                    what: "fluid lookup entry (a live corner's vertex, within its frame)",
                    index: value.into(),
                    count: first + count,
                });
            }
        } else if value != COLLAPSED {
            return Err(Error::OutOfRange {
                what: "fluid lookup entry of a collapsed corner",
                value: value.to_string(),
                expected: "COLLAPSED (0xFFFFFFFF)",
            });
        }
    }
    Ok(())
}

/// The sprite animation's checks: no other animation, `4 * slots` corners, a particle texture of one
/// texel per slot per frame, finite bounds and card size, and every texel: a dead slot all zero,
/// a live one with its reserved bits zero and [`crate::sprite::FLAG_CONTINUES`] only where the
/// clip's next frame (the first again after a looping clip's last; none after a one-shot clip's
/// last) holds a live particle in the same slot; the unused texels zero.
fn validate_sprite_animation(
    sa: &crate::container::SpriteAnimation,
    m: &Manifest,
    bytes: &[u8],
    limits: &Limits,
    vertex_count: u64,
    clip_map: &ClipRowMap,
) -> Result<()> {
    use crate::sprite::{FLAG_ALIVE, FLAG_CONTINUES, SPRITE_TEXEL_BYTES};
    if m.vertex_animation.is_some()
        || m.bone_animation.is_some()
        || m.morph_animation.is_some()
        || m.rigid_animation.is_some()
        || m.fluid_animation.is_some()
    {
        return Err(Error::OutOfRange {
            what: "sprite animation",
            value: "alongside a vertex, bone, morph, rigid or fluid animation".into(),
            expected: "a sprite asset has its particle texture and no other animation",
        });
    }
    if !m.root_motion.is_empty() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks on a sprite asset", m.root_motion.len()),
            expected: "no root motion in sprite mode",
        });
    }
    let l = &sa.layout;
    let slots = u64::from(l.vertex_count);
    if slots == 0 {
        return Err(Error::ZeroCount { what: "sprite slot count" });
    }
    expect_equal("vertex count (4 corners per sprite slot)", slots * 4, vertex_count)?;
    let frame_count = u64::from(clip_map.total_frames());
    expect_equal("particle texture frame count (frames of all clips)", frame_count, l.frame_count.into())?;
    let names = Grid { width: "particle texture width", height: "particle texture height" };
    let texels = check_grid(&names, l.width, l.height, slots * frame_count, limits)?;
    let len = product("particle texture bytes", &[texels, SPRITE_TEXEL_BYTES.into()], limits)?;
    let data = sized_blob(bytes, m, sa.particles, "particle texture", len)?;
    let b = &sa.position_bounds;
    check_finite("particle position bounds", &b.min)?;
    check_finite("particle position bounds", &b.extent)?;
    if b.extent.iter().any(|&e| e < 0.0) {
        return Err(Error::OutOfRange {
            what: "particle position bounds extent",
            value: format!("{:?}", b.extent),
            expected: ">= 0 metres on each axis",
        });
    }
    if !(sa.max_size.is_finite() && sa.max_size >= 0.0) {
        return Err(Error::OutOfRange {
            what: "sprite max size",
            value: sa.max_size.to_string(),
            expected: "finite and >= 0 metres",
        });
    }
    let texel = |t: u64| -> [u32; 4] {
        let at = (t * 16) as usize;
        let word = |k: usize| {
            u32::from_le_bytes([
                data[at + 4 * k],
                data[at + 4 * k + 1],
                data[at + 4 * k + 2],
                data[at + 4 * k + 3],
            ])
        };
        [word(0), word(1), word(2), word(3)]
    };
    let used = slots * frame_count;
    for t in used..texels {
        if texel(t) != [0; 4] {
            return Err(Error::OutOfRange {
                what: "unused particle texel",
                value: format!("{:?}", texel(t)),
                expected: "zero",
            });
        }
    }
    for clip in m.clips.iter() {
        let (first, count) = (u64::from(clip.first_frame), u64::from(clip.frame_count));
        for f in first..first + count {
            let next = if f + 1 < first + count {
                Some(f + 1)
            } else if clip.mode == crate::clip::ClipMode::Looping {
                Some(first)
            } else {
                None
            };
            for s in 0..slots {
                let w = texel(f * slots + s);
                if w[3] & FLAG_ALIVE == 0 {
                    if w != crate::sprite::DEAD_TEXEL {
                        return Err(Error::OutOfRange {
                            what: "dead particle texel",
                            value: format!("{w:?} (frame {f}, slot {s})"),
                            expected: "all zero (a slot without a particle)",
                        });
                    }
                    continue;
                }
                if w[3] >> 18 != 0 {
                    return Err(Error::OutOfRange {
                        what: "particle texel reserved bits (word 3, bits 18..32)",
                        value: format!("{:#x} (frame {f}, slot {s})", w[3]),
                        expected: "zero",
                    });
                }
                let continues_ok = next.is_some_and(|n| texel(n * slots + s)[3] & FLAG_ALIVE != 0);
                if w[3] & FLAG_CONTINUES != 0 && !continues_ok {
                    return Err(Error::OutOfRange {
                        what: "particle continuation flag",
                        value: format!("set at frame {f}, slot {s}"),
                        expected: "set only where the clip's next frame has a live particle in the same slot",
                    });
                }
            }
        }
    }
    Ok(())
}

/// The root-motion tracks' checks: soft mode only, each clip in range and tracked at most once, one
/// pose per stored frame, the first the identity, every value finite and within
/// [`crate::root_motion::ROOT_MOTION_LIMIT`], a one-shot clip's cycle its last frame. Clip frame
/// counts were checked against [`Limits::max_frames`] before, so the poses are bounded too.
fn validate_root_motion(m: &Manifest) -> Result<()> {
    use crate::root_motion::{ROOT_MOTION_LIMIT, RootPose};
    if m.root_motion.is_empty() {
        return Ok(());
    }
    if m.rigid_animation.is_some() || m.vertex_animation.is_none() {
        return Err(Error::OutOfRange {
            what: "root motion",
            value: format!("{} tracks without a vertex animation", m.root_motion.len()),
            expected: "root motion only alongside a vertex animation (soft mode)",
        });
    }
    let mut seen = HashSet::new();
    for track in &m.root_motion {
        let clip = m.clips.get(track.clip as usize).ok_or(Error::IndexOutOfRange {
            what: "root motion clip",
            index: track.clip.into(),
            count: m.clips.len() as u64,
        })?;
        if !seen.insert(track.clip) {
            return Err(Error::DuplicateName { what: "root motion track for clip", name: clip.name.clone() });
        }
        expect_equal(
            "root motion poses (stored frames of its clip)",
            clip.frame_count.into(),
            track.frames.len() as u64,
        )?;
        for pose in track.frames.iter().chain(std::iter::once(&track.cycle)) {
            if !pose.is_finite() {
                return Err(Error::NotFinite { what: "root motion pose" });
            }
            if [pose.x, pose.z, pose.yaw].iter().any(|v| v.abs() > ROOT_MOTION_LIMIT) {
                return Err(Error::OutOfRange {
                    what: "root motion pose",
                    value: format!("{pose:?}"),
                    expected: "|x|, |z| (m) and |yaw| (rad) at most ROOT_MOTION_LIMIT",
                });
            }
        }
        if track.frames.first() != Some(&RootPose::IDENTITY) {
            return Err(Error::OutOfRange {
                what: "root motion first pose",
                value: format!("{:?}", track.frames.first()),
                expected: "exactly the identity (poses are relative to the clip's first frame)",
            });
        }
        if clip.mode == crate::clip::ClipMode::OneShot && track.frames.last() != Some(&track.cycle) {
            return Err(Error::OutOfRange {
                what: "root motion cycle of a one-shot clip",
                value: format!("{:?}", track.cycle),
                expected: "equal to the pose of its last frame",
            });
        }
    }
    Ok(())
}
