//! The validating, zero-copy reader.

pub(crate) use std::collections::HashSet;

pub(crate) use crate::clip::ClipRowMap;
pub(crate) use crate::encoding::{TexelFormat, VertexFormat};
pub(crate) use crate::{Error, Result};

pub(crate) use super::manifest::{BlobId, ElementFormat, Manifest, StreamKind};
pub(crate) use super::{
    FORMAT_VERSION, FORMAT_VERSION_MORPH, HEADER_LEN, MAGIC, MIN_FORMAT_VERSION, align_up,
};

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
        let skin_residual =
            manifest.vertex_animation.as_ref().is_some_and(|va| va.format == VertexFormat::SkinResidual);
        if version < super::FORMAT_VERSION_SKIN_RESIDUAL && skin_residual {
            return Err(Error::SectionNeedsVersion {
                section: "skin-residual vertex format",
                version,
                needed: super::FORMAT_VERSION_SKIN_RESIDUAL,
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

pub(crate) fn decode_manifest(manifest_bytes: &[u8], version: u32) -> Result<Manifest> {
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
pub(crate) fn within(what: &'static str, value: u64, limit: u64) -> Result<()> {
    if value > limit { Err(Error::LimitExceeded { what, value, limit }) } else { Ok(()) }
}

/// The product of `factors`, or [`Error::LimitExceeded`] when it overflows `u64` (nothing that large
/// can be in a file).
pub(crate) fn product(what: &'static str, factors: &[u64], limits: &Limits) -> Result<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f)).ok_or(Error::LimitExceeded {
        what,
        value: u64::MAX,
        limit: limits.max_total_bytes,
    })
}

/// Checks the blob table against the file: alignment, order, overlaps, exact padding, exact end,
/// zero padding bytes and checksums.
pub(crate) fn check_blob_table(m: &Manifest, bytes: &[u8], manifest_end: u64, limits: &Limits) -> Result<()> {
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
pub(crate) fn range(bytes: &[u8], start: u64, end: u64) -> Result<&[u8]> {
    usize::try_from(start)
        .ok()
        .zip(usize::try_from(end).ok())
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or(Error::Truncated { section: "blobs", needed: end, available: bytes.len() as u64 })
}

/// The bytes of blob `id`, or [`Error::BlobIdOutOfRange`] naming `what` referred to it.
pub(crate) fn blob_bytes<'a>(
    bytes: &'a [u8],
    m: &Manifest,
    id: BlobId,
    what: &'static str,
) -> Result<&'a [u8]> {
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
pub(crate) fn sized_blob<'a>(
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
pub(crate) struct Grid {
    pub(crate) width: &'static str,
    pub(crate) height: &'static str,
}

/// A linearised texture of `texels` texels: `width` and `height` in `1..=max_texture_dimension` and
/// `height == ceil(texels / width)` (enough rows, no empty row). Returns `width * height`.
pub(crate) fn check_grid(names: &Grid, width: u32, height: u32, texels: u64, limits: &Limits) -> Result<u64> {
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

pub(crate) fn expect_equal(what: &'static str, expected: u64, actual: u64) -> Result<()> {
    if expected != actual { Err(Error::ManifestMismatch { what, expected, actual }) } else { Ok(()) }
}

pub(crate) fn check_finite(what: &'static str, values: &[f32]) -> Result<()> {
    if values.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(Error::NotFinite { what }) }
}

/// Checks that `names` has no repeats.
pub(crate) fn unique<'n>(what: &'static str, names: impl Iterator<Item = &'n str>) -> Result<()> {
    let mut seen = HashSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(Error::DuplicateName { what, name: n.to_owned() });
        }
    }
    Ok(())
}

/// The morph layer: layouts derived from the counts, format, blob sizes, finite values.
pub(crate) fn validate_morph_animation(
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
pub(crate) fn check_finite_bytes(what: &'static str, data: &[u8]) -> Result<()> {
    let finite = data.chunks_exact(4).all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
    if finite { Ok(()) } else { Err(Error::NotFinite { what }) }
}

mod manifest_checks;
mod root_motion;

pub(crate) use crate::modes::bone::check_bone_animation;
pub(crate) use crate::modes::fluid::fluid_vertex_total;
pub(crate) use crate::modes::soft::check_vertex_animation;
pub(crate) use manifest_checks::*;
pub(crate) use root_motion::*;
