//! Tests of the container: round trips, zero copy, corruption (one typed error per case), fuzzing.

use proptest::prelude::*;

use super::writer::assemble;
use super::*;
use crate::Error;
use crate::clip::{ClipMode, ClipRowMap};
use crate::encoding::{PositionBounds, TexelFormat, VertexFormat};
use crate::files::{PendingFile, write_file_atomically};
use crate::layout::{BoneTextureLayout, MorphTextureLayout, MorphWeightsLayout, VertexTextureLayout};

/// Deterministic filler bytes (a 32-bit LCG), so blobs are not all zeros and checksums differ.
fn filler(len: usize, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect()
}

fn u32_bytes(values: impl IntoIterator<Item = u32>) -> Vec<u8> {
    values.into_iter().flat_map(u32::to_le_bytes).collect()
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// A manifest and its blobs, before layout: corrupt either, then [`assemble`] (which does not
/// validate) to get a file whose blob table is still consistent.
#[derive(Clone)]
pub(super) struct Fixture {
    pub(super) manifest: Manifest,
    pub(super) blobs: Vec<Vec<u8>>,
}

impl Fixture {
    pub(super) fn add(&mut self, bytes: Vec<u8>) -> BlobId {
        self.blobs.push(bytes);
        BlobId(self.blobs.len() as u32 - 1)
    }

    /// The file, laid out without validation.
    pub(super) fn bytes(&self) -> Vec<u8> {
        assemble(self.manifest.clone(), &self.blobs).unwrap()
    }

    /// The file through the validating writer.
    pub(super) fn write(&self) -> Result<Vec<u8>, Error> {
        let mut w = ContainerWriter::new();
        for b in &self.blobs {
            w.add_blob(b.as_slice());
        }
        w.finish(self.manifest.clone())
    }
}

const VERTICES: u32 = 24;

/// Two clips (idle: 0.2 s at 30 fps looping = 6 frames; wave: 0.1 s at 30 fps one-shot = 3 + 1 = 4
/// frames), 10 frames in all.
fn clips() -> ClipRowMap {
    let mut m = ClipRowMap::new();
    m.push("idle", 0.2, 30.0, ClipMode::Looping, 0.0).unwrap();
    m.push("wave", 0.1, 30.0, ClipMode::OneShot, 0.0).unwrap();
    assert_eq!(m.total_frames(), 10);
    m
}

/// Vertex texture only: 24 vertices x 10 frames = 240 texels, width 64 -> height ceil(240/64) = 4.
pub(super) fn minimal() -> Fixture {
    let mut fx = Fixture { manifest: Manifest::new("minimal", VERTICES), blobs: Vec::new() };
    fx.manifest.clips = clips().clips().to_vec();
    let layout = VertexTextureLayout { vertex_count: VERTICES, frame_count: 10, width: 64, height: 4 };
    let positions = fx.add(filler(64 * 4 * 8, 1));
    fx.manifest.vertex_animation = Some(VertexAnimation {
        layout,
        format: VertexFormat::Packed64,
        bounds: PositionBounds { min: [-0.8, 0.0, -0.7], extent: [1.65, 2.19, 1.35] },
        position_bits: [13, 14, 13],
        textures: vec![positions],
        tangents: None,
    });
    fx
}

/// Everything: packed64 + tangents, bones (3) with a bone texture, morph target, two LODs, three
/// streams, a socket and a capture track.
fn realistic() -> Fixture {
    let mut fx = minimal();
    fx.manifest.name = "realistic".to_owned();
    let tangents = fx.add(filler(64 * 4 * 8, 2));
    fx.manifest.vertex_animation.as_mut().unwrap().tangents = Some(tangents);

    fx.manifest.bones = vec![
        Bone { name: "root".into(), parent: None },
        Bone { name: "spine".into(), parent: Some(0) },
        Bone { name: "hand_r".into(), parent: Some(1) },
    ];
    // 10 frames x 3 bones x 3 rows = 90 texels, width 32 -> height ceil(90/32) = 3.
    let bone_texture = fx.add(filler(32 * 3 * 16, 3));
    let joints: Vec<u8> = (0..VERTICES * 4).flat_map(|i| ((i % 3) as u16).to_le_bytes()).collect();
    let joints = fx.add(joints);
    let weights: Vec<u8> =
        (0..VERTICES).flat_map(|_| [0.5f32, 0.25, 0.25, 0.0]).flat_map(f32::to_le_bytes).collect();
    let weights = fx.add(weights);
    fx.manifest.bone_animation = Some(BoneAnimation {
        layout: BoneTextureLayout { bone_count: 3, frame_count: 10, width: 32, height: 3 },
        texture: bone_texture,
        influences: 4,
        joints,
        weights,
    });

    // 24 vertices -> width 24, 1 row per band, 1 target x 2 bands = height 2; Rgba32Float deltas.
    let morph = fx.add(f32_bytes((0..24 * 2 * 4).map(|i| (i as f32 * 0.37).sin() * 0.01)));
    // 10 frames x 1 texel (targets 0..4) = 10 texels, one row.
    let morph_weights =
        fx.add(f32_bytes((0..10 * 4).map(|i| if i % 4 == 0 { i as f32 / 40.0 } else { 0.0 })));
    fx.manifest.morph_animation = Some(MorphAnimation {
        layout: MorphTextureLayout {
            vertex_count: VERTICES,
            target_count: 1,
            width: 24,
            rows_per_band: 1,
            height: 2,
        },
        format: TexelFormat::Rgba32Float,
        texture: morph,
        weights_layout: MorphWeightsLayout { target_count: 1, frame_count: 10, width: 10, height: 1 },
        weights: morph_weights,
        target_names: vec!["face/smile".into()],
    });

    // LOD 0: 12 triangles (indices 0..36), LOD 1: 4 triangles (36..48).
    let indices = fx.add(u32_bytes((0..48).map(|i| (i * 7) % VERTICES)));
    fx.manifest.indices = Some(indices);
    fx.manifest.lods = vec![
        Lod { first_index: 0, index_count: 36, triangle_count: 12, screen_error: 0.0, max_distance: 20.0 },
        Lod {
            first_index: 36,
            index_count: 12,
            triangle_count: 4,
            screen_error: 0.004,
            max_distance: f32::INFINITY,
        },
    ];

    let rest = fx.add(filler(VERTICES as usize * 12, 5));
    let uv = fx.add(filler(VERTICES as usize * 4, 6));
    // 24 bytes: the blob after it starts 8 bytes of zero padding later.
    let material = fx.add(vec![1; VERTICES as usize]);
    fx.manifest.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest },
        VertexStream { kind: StreamKind::Uv0, element: ElementFormat::Unorm16x2, blob: uv },
        VertexStream { kind: StreamKind::MaterialId, element: ElementFormat::U8, blob: material },
    ];
    fx.manifest.sockets = vec![Socket {
        name: "weapon".into(),
        bone: 2,
        local: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.1, 0.02],
    }];
    let capture = fx.add(filler(10 * 48, 7));
    fx.manifest.captures = vec![CaptureTrack { bone: 2, blob: capture }];
    // A one-triangle cap on the socket.
    let cap_positions = fx.add(filler(3 * 12, 8));
    let cap_normals = fx.add(filler(3 * 12, 9));
    let cap_materials = fx.add(vec![3; 3]);
    let cap_indices = fx.add([0u32, 1, 2].iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>());
    fx.manifest.attachments = vec![Attachment {
        name: "cap".into(),
        socket: 0,
        vertex_count: 3,
        positions: cap_positions,
        normals: cap_normals,
        material_ids: cap_materials,
        indices: cap_indices,
    }];
    fx
}

/// The manifest length and the offset where blob 0 starts, read from a valid file.
fn manifest_len(file: &[u8]) -> usize {
    u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize
}

fn parsed_manifest(file: &[u8]) -> Manifest {
    Asset::parse(file).unwrap().manifest().clone()
}

/// `file` with its manifest replaced by `manifest` (header length and CRC fixed), blob bytes kept in
/// place, in the file's own format version (the newer sections' empty encodings left out). Panics
/// if the new manifest would move the blob area (keep varint sizes equal).
fn with_manifest(file: &[u8], manifest: &Manifest) -> Vec<u8> {
    with_manifest_as(file, manifest, u32::from_le_bytes(file[4..8].try_into().unwrap()))
}

/// [`with_manifest`] labelled `version`.
fn with_manifest_as(file: &[u8], manifest: &Manifest, version: u32) -> Vec<u8> {
    let old_end = (HEADER_LEN as usize + manifest_len(file)).div_ceil(16) * 16;
    let mut encoded = postcard::to_stdvec(manifest).unwrap();
    let omitted = super::omitted_trailing_bytes(version);
    assert!(
        encoded[encoded.len() - omitted..].iter().all(|&b| b == 0),
        "test helper: a section newer than the file"
    );
    encoded.truncate(encoded.len() - omitted);
    let new_end = (HEADER_LEN as usize + encoded.len()).div_ceil(16) * 16;
    assert_eq!(old_end, new_end, "test helper: the edited manifest moved the blob area");
    let mut out = file[..4].to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&encoded).to_le_bytes());
    out.extend_from_slice(&encoded);
    out.resize(new_end, 0);
    out.extend_from_slice(&file[old_end..]);
    out
}

/// `file` with its blob table edited by `edit`.
fn with_table(file: &[u8], edit: impl FnOnce(&mut Vec<BlobEntry>)) -> Vec<u8> {
    let mut m = parsed_manifest(file);
    edit(&mut m.blobs);
    with_manifest(file, &m)
}

/// A fixture corrupted by `edit`, laid out with a consistent blob table.
fn corrupt(edit: impl FnOnce(&mut Fixture)) -> Vec<u8> {
    let mut fx = realistic();
    edit(&mut fx);
    fx.bytes()
}

#[test]
fn realistic_round_trip_keeps_manifest_and_blobs() {
    let fx = realistic();
    let bytes = fx.write().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let m = asset.manifest();
    // Everything but the blob table (which the writer fills in) comes back as given.
    let mut expected = fx.manifest.clone();
    expected.blobs = m.blobs.clone();
    assert_eq!(*m, expected);
    assert_eq!(m.blobs.len(), fx.blobs.len());
    for (i, data) in fx.blobs.iter().enumerate() {
        assert_eq!(asset.blob(BlobId(i as u32)), data.as_slice(), "blob {i}");
    }
    assert_eq!(asset.frame_count(), 10);
    assert_eq!(asset.clip_map().find("wave"), Some(1));
    assert_eq!(asset.vertex_texture(0).unwrap(), (TexelFormat::Rg32Uint, fx.blobs[0].as_slice()));
    assert!(asset.vertex_texture(1).is_none());
    assert_eq!(asset.tangent_texture().unwrap(), fx.blobs[1].as_slice());
    assert_eq!(asset.bone_texture().unwrap().len(), 32 * 3 * 16);
    assert_eq!(asset.joint_bytes().unwrap().len(), 24 * 4 * 2);
    assert_eq!(asset.weight_bytes().unwrap().len(), 24 * 4 * 4);
    assert_eq!(asset.morph_texture().unwrap().len(), 24 * 2 * 16);
    assert_eq!(asset.morph_weights().unwrap().len(), 10 * 16);
    assert_eq!(asset.index_bytes().unwrap().len(), 48 * 4);
    assert_eq!(asset.lod_index_bytes(1).unwrap(), &asset.index_bytes().unwrap()[36 * 4..48 * 4]);
    assert!(asset.lod_index_bytes(2).is_none());
    assert_eq!(asset.stream(StreamKind::MaterialId).unwrap(), (ElementFormat::U8, &[1u8; 24][..]));
    assert!(asset.stream(StreamKind::Color0).is_none());
    assert_eq!(asset.capture_bytes(2).unwrap().len(), 480);
    assert!(asset.capture_bytes(0).is_none());
    assert!(asset.get_blob(BlobId(fx.blobs.len() as u32)).is_none());
    assert!(format!("{asset:?}").starts_with(&format!("Asset {{ file_len: {}, manifest:", bytes.len())));
}

#[test]
fn minimal_round_trip_and_layout_bytes() {
    let fx = minimal();
    let bytes = fx.write().unwrap();
    assert_eq!(&bytes[..4], b"VAT\0");
    // No morph layer: written as version 1, byte for byte what a version 1 writer wrote.
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), MIN_FORMAT_VERSION);
    let asset = Asset::parse(&bytes).unwrap();
    let entry = asset.manifest().blobs[0];
    // Blob 0 starts at the first 16-byte boundary after the manifest, and the file ends with it.
    assert_eq!(entry.offset, (16 + manifest_len(&bytes) as u64).div_ceil(16) * 16);
    assert_eq!(entry.offset + entry.length, bytes.len() as u64);
    assert_eq!(entry.crc32, crc32fast::hash(&fx.blobs[0]));
    assert!(asset.manifest().bone_animation.is_none() && asset.bone_texture().is_none());
    assert!(asset.index_bytes().is_none() && asset.lod_index_bytes(0).is_none());
    assert_eq!(asset.vertex_texture(0).unwrap().1, fx.blobs[0].as_slice());
}

#[test]
fn files_take_the_oldest_version_that_describes_them_and_both_versions_read() {
    let with_morph = realistic().write().unwrap();
    assert_eq!(u32::from_le_bytes(with_morph[4..8].try_into().unwrap()), FORMAT_VERSION_MORPH);
    assert_eq!(FORMAT_VERSION_MORPH + 1, FORMAT_VERSION_RIGID);
    let mut without = realistic();
    without.manifest.morph_animation = None;
    let v1 = without.write().unwrap();
    assert_eq!(u32::from_le_bytes(v1[4..8].try_into().unwrap()), 1);
    // The same bytes labelled version 2 read too (a version 2 file need not use its new section).
    let mut v2 = v1.clone();
    v2[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(Asset::parse(&v2).unwrap().manifest(), Asset::parse(&v1).unwrap().manifest());
    // The morph layer is a manifest slot that version 1 always left `None`: removing it from a
    // version 2 file leaves the version 1 encoding of the rest (postcard, same field order).
    let m = Asset::parse(&with_morph).unwrap().manifest().clone();
    assert!(m.morph_animation.is_some() && Asset::parse(&v1).unwrap().manifest().morph_animation.is_none());
}

#[test]
fn empty_asset_round_trips() {
    let bytes = ContainerWriter::new().finish(Manifest::new("empty", 1)).unwrap();
    // Without blobs the file ends where the manifest ends.
    assert_eq!(bytes.len(), 16 + manifest_len(&bytes));
    assert_eq!(Asset::parse(&bytes).unwrap().manifest().name, "empty");
}

#[test]
fn writing_is_deterministic() {
    let a = realistic().write().unwrap();
    let b = realistic().write().unwrap();
    assert_eq!(a, b);
    assert_ne!(a, minimal().write().unwrap());
}

#[test]
fn blobs_are_borrowed_from_the_input_not_copied() {
    let bytes = realistic().write().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let base = bytes.as_ptr() as usize;
    for (i, entry) in asset.manifest().blobs.iter().enumerate() {
        let blob = asset.blob(BlobId(i as u32));
        // Same address as the blob's bytes inside the input buffer.
        assert_eq!(blob.as_ptr() as usize, base + entry.offset as usize, "blob {i}");
        assert_eq!(blob.len() as u64, entry.length);
    }
    assert_eq!(asset.bytes().as_ptr(), bytes.as_ptr());
}

#[test]
#[should_panic(expected = "is not one of the")]
fn blob_with_a_made_up_id_panics() {
    let bytes = minimal().write().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let _ = asset.blob(BlobId(7));
}

#[test]
fn writer_refuses_what_the_reader_refuses() {
    let mut fx = realistic();
    fx.manifest.lods[0].triangle_count = 11;
    assert!(matches!(fx.write(), Err(Error::ManifestMismatch { .. })));
    // The same manifest with tighter limits than the default is refused by `finish_with_limits`.
    let fx = realistic();
    let mut w = ContainerWriter::new();
    for b in &fx.blobs {
        w.add_blob(b.clone());
    }
    assert_eq!(w.blob_count(), fx.blobs.len());
    let limits = Limits { max_bones: 2, ..Limits::default() };
    assert!(matches!(w.finish_with_limits(fx.manifest, &limits), Err(Error::LimitExceeded { .. })));
}

#[test]
fn the_writer_ignores_a_caller_supplied_blob_table() {
    let mut fx = minimal();
    fx.manifest.blobs = vec![BlobEntry { offset: 3, length: 99, crc32: 1 }];
    let bytes = fx.write().unwrap();
    assert_eq!(parsed_manifest(&bytes).blobs[0].length, 64 * 4 * 8);
}

#[test]
fn limits_apply_to_file_and_manifest_size() {
    let bytes = realistic().write().unwrap();
    let tight = Limits { max_total_bytes: 100, ..Limits::default() };
    assert!(matches!(
        Asset::parse_with_limits(&bytes, &tight),
        Err(Error::LimitExceeded { what: "file size in bytes", .. })
    ));
    let tight = Limits { max_manifest_bytes: 10, ..Limits::default() };
    assert!(matches!(
        Asset::parse_with_limits(&bytes, &tight),
        Err(Error::LimitExceeded { what: "manifest length in bytes", .. })
    ));
}

/// postcard reads a `Vec` length prefix lazily: with more elements announced than bytes left it
/// gives no capacity hint (and serde caps hints at 1 MiB), so decoding fails at the end of the input.
/// If it pre-allocated, 2^31 clips of 48+ bytes would abort on allocation and 2^60 would panic with a
/// capacity overflow, failing this test.
#[test]
fn absurd_vec_length_prefix_fails_without_allocating() {
    for len in [1u64 << 31, 1 << 60, u64::MAX] {
        // name "" (len 0), vertex_count 1, then the clips Vec's varint length prefix.
        let mut manifest = vec![0u8, 1];
        let mut v = len;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                manifest.push(byte);
                break;
            }
            manifest.push(byte | 0x80);
        }
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        file.extend_from_slice(&(manifest.len() as u32).to_le_bytes());
        file.extend_from_slice(&crc32fast::hash(&manifest).to_le_bytes());
        file.extend_from_slice(&manifest);
        assert!(matches!(Asset::parse(&file), Err(Error::ManifestDecode { .. })), "length {len}");
    }
    // A string announcing 2^40 bytes is refused before reading (postcard checks what is left).
    let manifest = [0x80u8, 0x80, 0x80, 0x80, 0x80, 0x20];
    assert!(postcard::from_bytes::<Manifest>(&manifest).is_err());
}

type Check = fn(&Error) -> bool;

/// Every case: a name, the corrupted file, and the error variant it must produce.
fn corruption_cases() -> Vec<(String, Vec<u8>, Check)> {
    let good = realistic().bytes();
    let table = parsed_manifest(&good).blobs;
    let m_end = HEADER_LEN as usize + manifest_len(&good);
    let mut cases: Vec<(String, Vec<u8>, Check)> = Vec::new();
    macro_rules! case {
        ($name:expr, $bytes:expr, $pat:pat) => {
            cases.push(($name.into(), $bytes, |e: &Error| matches!(e, $pat)))
        };
    }

    // Truncation at and inside every section.
    case!("empty file", Vec::new(), Error::Truncated { section: "header", .. });
    case!("inside magic", good[..3].to_vec(), Error::Truncated { section: "header", .. });
    case!("inside header", good[..10].to_vec(), Error::Truncated { section: "header", .. });
    case!("header only", good[..16].to_vec(), Error::Truncated { section: "manifest", .. });
    case!("inside manifest", good[..m_end - 5].to_vec(), Error::Truncated { section: "manifest", .. });
    case!("at manifest end", good[..m_end].to_vec(), Error::Truncated { section: "blobs", .. });
    // The material stream (blob 10, 24 bytes) is followed by 8 bytes of padding.
    let gap_start = (table[10].offset + table[10].length) as usize;
    assert_eq!(table[11].offset as usize, gap_start + 8, "fixture: padding after blob 10");
    case!("inside padding", good[..gap_start + 4].to_vec(), Error::Truncated { section: "blobs", .. });
    if table[0].offset as usize > m_end {
        let b = good[..m_end + 1].to_vec();
        case!("inside padding after the manifest", b, Error::Truncated { section: "blobs", .. });
        let mut b = good.clone();
        b[m_end] = 1;
        case!("non-zero padding after the manifest", b, Error::BadPadding { .. });
    }
    for (i, b) in table.iter().enumerate() {
        let (start, mid) = (b.offset as usize, (b.offset + b.length / 2) as usize);
        case!(
            format!("at blob {i} start"),
            good[..start].to_vec(),
            Error::Truncated { section: "blobs", .. }
        );
        case!(format!("inside blob {i}"), good[..mid].to_vec(), Error::Truncated { section: "blobs", .. });
    }
    let last_end = good.len() - 1;
    case!("last byte missing", good[..last_end].to_vec(), Error::Truncated { section: "blobs", .. });

    // Header.
    let mut b = good.clone();
    b[0] = b'W';
    case!("flipped magic", b, Error::BadMagic { found: [b'W', b'A', b'T', 0] });
    let mut b = good.clone();
    b[4..8].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    const NEXT_VERSION: u32 = FORMAT_VERSION + 1;
    case!("future version", b, Error::UnsupportedVersion { found: NEXT_VERSION, supported: FORMAT_VERSION });
    let mut b = good.clone();
    b[4..8].copy_from_slice(&0u32.to_le_bytes());
    case!("version 0", b, Error::UnsupportedVersion { found: 0, supported: FORMAT_VERSION });
    let mut b = good.clone();
    b[4..8].copy_from_slice(&1u32.to_le_bytes());
    case!(
        "morph animation in a version 1 file",
        b,
        Error::SectionNeedsVersion { section: "morph animation", version: 1, needed: 2 }
    );
    let mut b = good.clone();
    b[8..12].copy_from_slice(&(1u32 << 31).to_le_bytes());
    case!("absurd manifest length", b, Error::LimitExceeded { what: "manifest length in bytes", .. });

    // Manifest.
    let mut b = good.clone();
    b[20] ^= 0x40;
    case!("manifest byte flipped", b, Error::ManifestChecksumMismatch { .. });
    let mut b = good.clone();
    b[12] ^= 1;
    case!("manifest crc flipped", b, Error::ManifestChecksumMismatch { .. });
    let mut b = good.clone();
    b[16..m_end].fill(0xff);
    let crc = crc32fast::hash(&b[16..m_end]);
    b[12..16].copy_from_slice(&crc.to_le_bytes());
    case!("garbage manifest with a valid crc", b, Error::ManifestDecode { .. });
    let mut b = good[..m_end].to_vec();
    b.push(0);
    b[8..12].copy_from_slice(&((m_end - 16 + 1) as u32).to_le_bytes());
    let crc = crc32fast::hash(&b[16..]);
    b[12..16].copy_from_slice(&crc.to_le_bytes());
    case!("byte after the manifest inside its length", b, Error::ManifestDecode { .. });

    // Blob table.
    let n = table.len();
    case!(
        "blob past the end",
        with_table(&good, |t| t[n - 1].length += 16),
        Error::Truncated { section: "blobs", .. }
    );
    case!("blob misaligned", with_table(&good, |t| t[n - 1].offset += 1), Error::BlobMisaligned { .. });
    case!("blobs overlap", with_table(&good, |t| t[1].offset = t[0].offset + 16), Error::BlobsOverlap { .. });
    case!("blob overlaps the manifest", with_table(&good, |t| t[0].offset -= 16), Error::BlobsOverlap { .. });
    case!("blobs out of order", with_table(&good, |t| t.swap(0, 1)), Error::BlobsOutOfOrder { .. });
    case!("gap before a blob", with_table(&good, |t| t[n - 1].offset += 16), Error::BadPadding { .. });
    let mut b = good.clone();
    b[gap_start + 7] = 1;
    case!("non-zero padding between blobs", b, Error::BadPadding { .. });
    let mut b = good.clone();
    b.extend_from_slice(&[0; 16]);
    case!("trailing bytes", b, Error::TrailingBytes { .. });
    let mut b = good.clone();
    b[table[3].offset as usize + 5] ^= 0x10;
    case!("blob byte flipped", b, Error::BlobChecksumMismatch { blob: 3, .. });
    case!(
        "blob crc wrong",
        with_table(&good, |t| t[2].crc32 ^= 1),
        Error::BlobChecksumMismatch { blob: 2, .. }
    );

    // Manifest contents.
    case!(
        "stream blob id out of range",
        corrupt(|f| f.manifest.streams[0].blob = BlobId(99)),
        Error::BlobIdOutOfRange { blob: 99, .. }
    );
    case!(
        "vertex texture shorter than its layout",
        corrupt(|f| {
            f.blobs[0].truncate(64 * 4 * 8 - 8);
        }),
        Error::BlobSizeMismatch { what: "vertex texture", .. }
    );
    case!(
        "vertex texture height not ceil(texels / width)",
        corrupt(|f| f.manifest.vertex_animation.as_mut().unwrap().layout.height = 5),
        Error::ManifestMismatch { what: "vertex texture height", .. }
    );
    case!(
        "vertex texture wider than the limit",
        corrupt(|f| f.manifest.vertex_animation.as_mut().unwrap().layout.width = 32768),
        Error::LimitExceeded { what: "vertex texture width", .. }
    );
    case!(
        "clip frames do not match the layout",
        corrupt(|f| f.manifest.clips[1].frame_count += 1),
        Error::ManifestMismatch { what: "vertex texture frame count (frames of all clips)", .. }
    );
    case!(
        "clips do not tile the frames",
        corrupt(|f| f.manifest.clips[1].first_frame += 1),
        Error::OutOfRange { what: "clip first frame", .. }
    );
    case!(
        "duplicate clip name",
        corrupt(|f| f.manifest.clips[1].name = "idle".into()),
        Error::DuplicateName { what: "clip", .. }
    );
    case!(
        "absurd vertex count with a tiny file",
        corrupt(|f| f.manifest.vertex_count = 1 << 31),
        Error::LimitExceeded { what: "vertex count", .. }
    );
    case!(
        "absurd frame count",
        corrupt(|f| f.manifest.clips[1].frame_count = 1 << 30),
        Error::LimitExceeded { what: "frame count", .. }
    );
    case!(
        "zero vertices",
        corrupt(|f| f.manifest.vertex_count = 0),
        Error::ZeroCount { what: "vertex count" }
    );
    case!(
        "too many textures for the format",
        corrupt(|f| f.manifest.vertex_animation.as_mut().unwrap().textures.push(BlobId(0))),
        Error::ManifestMismatch { what: "vertex texture count", .. }
    );
    case!(
        "packed64 bits not summing to 40",
        corrupt(|f| f.manifest.vertex_animation.as_mut().unwrap().position_bits = [13, 14, 14]),
        Error::OutOfRange { what: "packed64 position bits", .. }
    );
    case!(
        "non-finite bounds",
        corrupt(|f| f.manifest.vertex_animation.as_mut().unwrap().bounds.min[1] = f32::NAN),
        Error::NotFinite { what: "position bounds min" }
    );
    case!(
        "LOD range past the index blob",
        corrupt(|f| f.manifest.lods[1].first_index = 40),
        Error::LodRangeOutOfBounds { lod: 1, first_index: 40, index_count: 12, available: 48 }
    );
    case!(
        "LOD triangle count not a third of its index count",
        corrupt(|f| f.manifest.lods[0].triangle_count = 11),
        Error::ManifestMismatch { what: "LOD index count (3 x triangle count)", .. }
    );
    case!(
        "LOD distances decreasing",
        corrupt(|f| f.manifest.lods[1].max_distance = 10.0),
        Error::OutOfRange { what: "LOD max distance", .. }
    );
    case!(
        "index >= vertex count",
        corrupt(|f| f.blobs[7][4..8].copy_from_slice(&VERTICES.to_le_bytes())),
        Error::IndexOutOfRange { what: "vertex index", index: 24, count: 24 }
    );
    case!("LODs without an index blob", corrupt(|f| f.manifest.indices = None), Error::MissingSection { .. });
    case!(
        "bad influence count",
        corrupt(|f| f.manifest.bone_animation.as_mut().unwrap().influences = 5),
        Error::OutOfRange { what: "bone influences per vertex", .. }
    );
    case!(
        "joint >= bone count",
        corrupt(|f| f.blobs[3][0..2].copy_from_slice(&3u16.to_le_bytes())),
        Error::IndexOutOfRange { what: "joint", index: 3, count: 3 }
    );
    case!(
        "skin weight NaN",
        corrupt(|f| f.blobs[4][0..4].copy_from_slice(&f32::NAN.to_le_bytes())),
        Error::OutOfRange { what: "skin weight", .. }
    );
    case!(
        "bone texture bone count differs from the skeleton",
        corrupt(|f| f.manifest.bones.push(Bone { name: "extra".into(), parent: Some(0) })),
        Error::ManifestMismatch { what: "bone texture bone count (bones in the skeleton)", .. }
    );
    case!(
        "bone parent forward reference",
        corrupt(|f| f.manifest.bones[0].parent = Some(2)),
        Error::BadBoneParent { bone: 0, parent: 2 }
    );
    case!(
        "bone parent cycle (own parent)",
        corrupt(|f| f.manifest.bones[1].parent = Some(1)),
        Error::BadBoneParent { bone: 1, parent: 1 }
    );
    case!(
        "socket on a missing bone",
        corrupt(|f| f.manifest.sockets[0].bone = 3),
        Error::IndexOutOfRange { what: "socket bone", .. }
    );
    case!(
        "socket transform not finite",
        corrupt(|f| f.manifest.sockets[0].local[9] = f32::INFINITY),
        Error::NotFinite { what: "socket transform" }
    );
    case!(
        "attachment on a missing socket",
        corrupt(|f| f.manifest.attachments[0].socket = 1),
        Error::IndexOutOfRange { what: "attachment socket", .. }
    );
    case!(
        "attachment index past its vertices",
        corrupt(|f| f.manifest.attachments[0].vertex_count = 2),
        Error::BlobSizeMismatch { what: "attachment positions", .. }
    );
    case!(
        "attachment index out of range",
        corrupt(|f| {
            let last = f.blobs.len() - 1;
            f.blobs[last] = [0u32, 1, 7].iter().flat_map(|i| i.to_le_bytes()).collect();
        }),
        // The value found (7), not its position (2).
        Error::IndexOutOfRange { what: "attachment index", index: 7, .. }
    );
    case!(
        "attachment indices not whole triangles",
        corrupt(|f| {
            let last = f.blobs.len() - 1;
            f.blobs[last].truncate(8);
        }),
        Error::BlobSizeMismatch { what: "attachment indices (whole triangles of u32)", .. }
    );
    case!(
        "capture of a missing bone",
        corrupt(|f| f.manifest.captures[0].bone = 9),
        Error::IndexOutOfRange { what: "capture bone", .. }
    );
    case!(
        "capture shorter than the frames",
        corrupt(|f| {
            f.blobs[11].truncate(9 * 48);
        }),
        Error::BlobSizeMismatch { what: "capture track", .. }
    );
    case!(
        "stream element not accepted by its kind",
        corrupt(|f| f.manifest.streams[0].element = ElementFormat::F32x4),
        Error::OutOfRange { what: "vertex stream element format", .. }
    );
    case!(
        "duplicate stream kind",
        corrupt(|f| f.manifest.streams[1] = f.manifest.streams[0]),
        Error::DuplicateName { what: "vertex stream kind", .. }
    );
    case!(
        "morph width not min(vertex count, 2048)",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().layout.width = 12),
        Error::ManifestMismatch { what: "morph texture width (min(vertex count, 2048))", .. }
    );
    case!(
        "morph rows per band not ceil(vertex count / width)",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().layout.rows_per_band = 2),
        Error::ManifestMismatch { what: "morph texture rows per band", .. }
    );
    case!(
        "morph height not targets x 2 x rows per band",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().layout.height = 3),
        Error::ManifestMismatch { what: "morph texture height", .. }
    );
    case!(
        "morph vertex count differs from the asset's",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().layout.vertex_count = 23),
        Error::ManifestMismatch { what: "morph texture vertex count", .. }
    );
    case!(
        "morph target names missing",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().target_names.clear()),
        Error::ManifestMismatch { what: "morph target names", .. }
    );
    case!(
        "zero morph targets",
        corrupt(|f| {
            let ma = f.manifest.morph_animation.as_mut().unwrap();
            ma.layout.target_count = 0;
            ma.target_names.clear();
        }),
        Error::ZeroCount { what: "morph target count" }
    );
    case!(
        "more morph targets than the limit",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().layout.target_count = 1025),
        Error::LimitExceeded { what: "morph target count", .. }
    );
    case!(
        "morph deltas as binary16",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().format = TexelFormat::Rgba16Float),
        Error::OutOfRange { what: "morph texture format", .. }
    );
    case!(
        "morph texture one texel short",
        corrupt(|f| {
            f.blobs[5].truncate(24 * 2 * 16 - 16);
        }),
        Error::BlobSizeMismatch { what: "morph texture", .. }
    );
    case!(
        "morph delta NaN",
        corrupt(|f| f.blobs[5][20..24].copy_from_slice(&f32::NAN.to_le_bytes())),
        Error::NotFinite { what: "morph delta" }
    );
    case!(
        "morph weights for another target count",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().weights_layout.target_count = 2),
        Error::ManifestMismatch { what: "morph weights target count", .. }
    );
    case!(
        "morph weights for another frame count",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().weights_layout.frame_count = 9),
        Error::ManifestMismatch { what: "morph weights frame count (frames of all clips)", .. }
    );
    case!(
        "morph weights height not ceil(texels / width)",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().weights_layout.width = 5),
        Error::ManifestMismatch { what: "morph weights height", .. }
    );
    case!(
        "morph weights blob short",
        corrupt(|f| {
            f.blobs[6].truncate(9 * 16);
        }),
        Error::BlobSizeMismatch { what: "morph weights", .. }
    );
    case!(
        "morph weight infinite",
        corrupt(|f| f.blobs[6][16..20].copy_from_slice(&f32::INFINITY.to_le_bytes())),
        Error::NotFinite { what: "morph weight" }
    );
    case!(
        "morph weights blob id out of range",
        corrupt(|f| f.manifest.morph_animation.as_mut().unwrap().weights = BlobId(99)),
        Error::BlobIdOutOfRange { .. }
    );
    cases
}

#[test]
fn every_corruption_gives_its_own_typed_error() {
    assert!(Asset::parse(&realistic().bytes()).is_ok(), "the uncorrupted fixture parses");
    let cases = corruption_cases();
    assert!(cases.len() >= 20);
    for (name, bytes, check) in &cases {
        match Asset::parse(bytes) {
            Err(e) => {
                assert!(check(&e), "{name}: unexpected error {e:?}");
                assert!(!e.to_string().is_empty());
            }
            Ok(_) => panic!("{name}: parsed"),
        }
    }
}

#[test]
fn every_prefix_of_a_valid_file_is_refused() {
    let bytes = realistic().bytes();
    for len in 0..bytes.len() {
        assert!(Asset::parse(&bytes[..len]).is_err(), "prefix of {len} bytes parsed");
    }
}

/// Any single flipped bit is detected: header fields are checked, the manifest and each blob have a
/// CRC-32 (which detects every burst of up to 32 bits), and padding must be zero.
#[test]
fn every_single_bit_flip_is_refused() {
    let bytes = realistic().bytes();
    let mut copy = bytes.clone();
    for i in 0..bytes.len() {
        let bit = 1u8 << (i % 8);
        copy[i] ^= bit;
        assert!(Asset::parse(&copy).is_err(), "flip of bit {} of byte {i} parsed", i % 8);
        copy[i] ^= bit;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random byte changes and a random truncation never panic.
    #[test]
    fn random_flips_and_truncations_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = realistic().bytes();
        for (at, xor) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= xor;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let result = Asset::parse(&bytes);
        if truncate {
            prop_assert!(result.is_err());
        }
    }
}

#[test]
fn atomic_write_replaces_the_file_and_leaves_no_temporary() {
    let dir = std::env::temp_dir().join(format!("vat-container-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("asset.vat");
    let bytes = realistic().write().unwrap();
    write_file_atomically(&path, b"old").unwrap();
    write_file_atomically(&path, &bytes).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("asset.vat")]);

    // A folder is never replaced: the error names it and no temporary file is made.
    let blocked = dir.join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    let err = write_file_atomically(&blocked, &bytes).unwrap_err();
    assert!(
        matches!(&err, Error::FileRefused { path, problem: crate::files::FileProblem::OutputNotRegular { .. } } if path.ends_with("blocked")),
        "{err:?}"
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, vec![std::ffi::OsString::from("asset.vat"), std::ffi::OsString::from("blocked")]);

    let missing = dir.join("no-such-dir").join("x.vat");
    assert!(matches!(
        write_file_atomically(&missing, &bytes),
        Err(Error::FileRefused { problem: crate::files::FileProblem::OutputFolderMissing, .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pending_file_is_readable_before_its_commit_and_gone_without_one() {
    let dir = std::env::temp_dir().join(format!("vat-pending-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("asset.vat");
    let expected = realistic().write().unwrap();
    let asset = Asset::parse(&expected).unwrap();
    let blobs: Vec<&[u8]> = (0..asset.manifest().blobs.len() as u32).map(|i| asset.blob(BlobId(i))).collect();
    let write = |path: &std::path::Path| {
        PendingFile::create(path, &mut |w| {
            write_container(w, path, asset.manifest().clone(), &blobs)
                .map(|_| ())
                .map_err(std::io::Error::other)
        })
        .unwrap()
    };
    // Streamed bytes equal the in-memory image; the final name appears only on commit.
    let pending = write(&path);
    assert_eq!(std::fs::read(pending.temp_path()).unwrap(), expected);
    assert!(!path.exists());
    pending.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), expected);
    // Dropped without a commit: the temporary file is removed and the old file stays.
    let other = dir.join("other.vat");
    let pending = write(&other);
    let tmp = pending.temp_path().to_path_buf();
    assert!(tmp.exists());
    drop(pending);
    assert!(!tmp.exists() && !other.exists());
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("asset.vat")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------------
// Rigid mode (format version 3)
// ---------------------------------------------------------------------------------------------------

/// A rigid asset: 24 vertices in 3 pieces of 8, 10 frames; piece texture 3 x 10 = 30 texels in one
/// row of 30; rigid vertex texture 24 texels in one row; rest positions and normals; one LOD.
fn rigid() -> Fixture {
    use crate::rigid::{encode_piece_texel, encode_vertex_texel};
    let mut fx = Fixture { manifest: Manifest::new("rigid", VERTICES), blobs: Vec::new() };
    fx.manifest.clips = clips().clips().to_vec();
    let pivot_bounds = PositionBounds { min: [-1.0, 0.0, -1.0], extent: [2.0, 1.0, 2.0] };
    let texels: Vec<u32> = (0..10u32)
        .flat_map(|f| (0..3u32).map(move |p| (f, p)))
        .flat_map(|(f, p)| {
            let a = f as f32 * 0.1 + p as f32;
            let pivot = [a.sin() * 0.9, 0.1 * f as f32 / 10.0, a.cos() * 0.9];
            let q = [0.0, (a * 0.5).sin(), 0.0, (a * 0.5).cos()];
            encode_piece_texel(&pivot_bounds, pivot, q).unwrap()
        })
        .collect();
    let pieces = fx.add(u32_bytes(texels));
    let vertices = fx.add(u32_bytes(
        (0..VERTICES).flat_map(|v| encode_vertex_texel(v / 8, [(v / 8) as f32 * 0.5, 0.25, 0.0])),
    ));
    let rest = fx.add(f32_bytes((0..VERTICES * 3).map(|i| (i as f32 * 0.1).sin())));
    let normals = fx.add(f32_bytes((0..VERTICES).flat_map(|_| [0.0, 1.0, 0.0])));
    fx.manifest.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest },
        VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: normals },
    ];
    let indices = fx.add(u32_bytes((0..36).map(|i| (i * 5) % VERTICES)));
    fx.manifest.indices = Some(indices);
    fx.manifest.lods = vec![Lod {
        first_index: 0,
        index_count: 36,
        triangle_count: 12,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    fx.manifest.rigid_animation = Some(RigidAnimation {
        layout: VertexTextureLayout { vertex_count: 3, frame_count: 10, width: 30, height: 1 },
        pivot_bounds,
        bounds: PositionBounds { min: [-2.0, -1.0, -2.0], extent: [4.0, 3.0, 4.0] },
        pieces,
        vertex_layout: VertexTextureLayout { vertex_count: VERTICES, frame_count: 1, width: 24, height: 1 },
        vertices,
        piece_names: vec!["a".into(), "b".into(), "c".into()],
    });
    fx
}

#[test]
fn rigid_asset_round_trips_as_version_3_and_records_its_mode() {
    let fx = rigid();
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_RIGID);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest(), &Manifest { blobs: asset.manifest().blobs.clone(), ..fx.manifest.clone() });
    assert_eq!(asset.manifest().mode(), VatMode::Rigid);
    assert_eq!(asset.manifest().animation_bounds(), Some(fx.manifest.rigid_animation.unwrap().bounds));
    // Soft files keep their version and mode.
    assert_eq!(parsed_manifest(&minimal().write().unwrap()).mode(), VatMode::Soft);
    // The newest encoding of a soft manifest is the older one plus the empty trailing slots (the
    // rigid slot's `None`, the materials' empty lists and `None`, the empty root-motion list): the
    // same manifest labelled with the newest version and those bytes appended reads back equal.
    // (A name length whose padding leaves room for those bytes, so the blobs stay in place.)
    let fits = |fx: &Fixture| {
        let len = HEADER_LEN as usize + manifest_len(&fx.write().unwrap());
        len.div_ceil(16) * 16 >= len + super::omitted_trailing_bytes(1)
    };
    let mut fx = minimal();
    while !fits(&fx) {
        fx.manifest.name.push('x');
    }
    let v1 = fx.write().unwrap();
    let m = parsed_manifest(&v1);
    let relabelled = with_manifest_as(&v1, &m, FORMAT_VERSION);
    assert_eq!(u32::from_le_bytes(relabelled[4..8].try_into().unwrap()), FORMAT_VERSION);
    assert_eq!(manifest_len(&relabelled), manifest_len(&v1) + super::omitted_trailing_bytes(1));
    assert_eq!(parsed_manifest(&relabelled), m);
}

#[test]
fn a_rigid_section_needs_version_3() {
    let bytes = rigid().write().unwrap();
    // Labelled 2, the manifest gets a `None` rigid slot appended and its real slot is read as
    // trailing bytes: refused, never read as a rigid asset.
    let mut b = bytes.clone();
    b[4..8].copy_from_slice(&2u32.to_le_bytes());
    assert!(matches!(Asset::parse(&b), Err(Error::ManifestDecode { .. })), "{:?}", Asset::parse(&b).err());
    // A version 3 manifest cut before its rigid slot is refused too.
    let v1 = minimal().write().unwrap();
    let mut b = v1.clone();
    b[4..8].copy_from_slice(&3u32.to_le_bytes());
    assert!(matches!(Asset::parse(&b), Err(Error::ManifestDecode { .. })));
}

#[test]
fn hostile_rigid_manifests_give_typed_errors() {
    type Edit = fn(&mut Fixture);
    type Check = fn(&Error) -> bool;
    let cases: Vec<(&str, Edit, Check)> = vec![
        (
            "piece index out of range",
            |fx| {
                let id = fx.manifest.rigid_animation.as_ref().unwrap().vertices;
                fx.blobs[id.0 as usize][12..16].copy_from_slice(&3u32.to_le_bytes());
            },
            |e| matches!(e, Error::IndexOutOfRange { what: "rigid piece index", .. }),
        ),
        (
            "NaN rest pivot",
            |fx| {
                let id = fx.manifest.rigid_animation.as_ref().unwrap().vertices;
                fx.blobs[id.0 as usize][0..4].copy_from_slice(&f32::NAN.to_le_bytes());
            },
            |e| matches!(e, Error::NotFinite { .. }),
        ),
        (
            "short piece texture",
            |fx| {
                let id = fx.manifest.rigid_animation.as_ref().unwrap().pieces;
                fx.blobs[id.0 as usize].truncate(16 * 29);
            },
            |e| matches!(e, Error::BlobSizeMismatch { what: "piece texture", .. }),
        ),
        (
            "piece texture frames differ from the clips",
            |fx| fx.manifest.rigid_animation.as_mut().unwrap().layout.frame_count = 9,
            |e| matches!(e, Error::ManifestMismatch { .. }),
        ),
        (
            "zero pieces",
            |fx| {
                let ra = fx.manifest.rigid_animation.as_mut().unwrap();
                ra.layout.vertex_count = 0;
                ra.piece_names.clear();
            },
            |e| matches!(e, Error::ZeroCount { .. }),
        ),
        (
            "NaN pivot box",
            |fx| fx.manifest.rigid_animation.as_mut().unwrap().pivot_bounds.min[1] = f32::NAN,
            |e| matches!(e, Error::NotFinite { .. }),
        ),
        (
            "negative vertex box",
            |fx| fx.manifest.rigid_animation.as_mut().unwrap().bounds.extent[0] = -1.0,
            |e| matches!(e, Error::OutOfRange { what: "rigid vertex bounds", .. }),
        ),
        (
            "a name short",
            |fx| {
                fx.manifest.rigid_animation.as_mut().unwrap().piece_names.pop();
            },
            |e| matches!(e, Error::ManifestMismatch { .. }),
        ),
        (
            "no rest normals",
            |fx| {
                fx.manifest.streams.pop();
            },
            |e| matches!(e, Error::MissingSection { .. }),
        ),
        (
            "rigid and vertex animation together",
            |fx| {
                let va = minimal().manifest.vertex_animation;
                fx.manifest.vertex_animation = va;
            },
            |e| !e.to_string().is_empty(),
        ),
        (
            "a texel past the vertices not zero",
            |fx| {
                let ra = fx.manifest.rigid_animation.as_mut().unwrap();
                ra.vertex_layout.width = 25;
                let id = ra.vertices;
                fx.blobs[id.0 as usize].extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
            },
            |e| matches!(e, Error::OutOfRange { what: "unused rigid vertex texel", .. }),
        ),
    ];
    assert!(Asset::parse(&rigid().write().unwrap()).is_ok());
    for (name, edit, check) in cases {
        let mut fx = rigid();
        edit(&mut fx);
        match Asset::parse(&fx.bytes()) {
            Err(e) => assert!(check(&e), "{name}: unexpected error {e:?}"),
            Ok(_) => panic!("{name}: parsed"),
        }
        // The writer refuses what the reader refuses.
        assert!(fx.write().is_err(), "{name}: written");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A rigid file whose manifest bytes are changed at random, with the manifest checksum fixed so
    /// that the changes reach decoding and validation: parsing never panics, and whatever parses
    /// decodes every vertex with the CPU reference without panicking.
    #[test]
    fn rigid_manifest_mutations_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
    ) {
        let mut bytes = rigid().write().unwrap();
        let len = manifest_len(&bytes);
        for (at, xor) in &flips {
            bytes[HEADER_LEN as usize + at.index(len)] ^= xor;
        }
        let crc = crc32fast::hash(&bytes[HEADER_LEN as usize..HEADER_LEN as usize + len]);
        bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        if let Ok(asset) = Asset::parse(&bytes)
            && let Ok(view) = crate::format::reference::RigidAnimationView::from_asset(&asset)
        {
            let record = crate::instance::InstanceRecord::default();
            for v in 0..asset.manifest().vertex_count.min(64) {
                let interp = crate::playback::Interpolation::Cubic;
                let _ = crate::format::reference::decode_rigid_vertex(&view, &record, 0.7, v, interp);
            }
        }
    }
}

/// [`realistic`] with four materials (ids 1 and 3 are used) and both texture arrays: colour 2
/// layers of 4x2 (mips 4x2, 2x1, 1x1), data 1 layer of 4x2.
fn with_materials() -> Fixture {
    let mut fx = realistic();
    let texels = |layers: u32| 4 * layers as usize * (8 + 2 + 1);
    let color = fx.add(filler(texels(2), 20));
    let data = fx.add(filler(texels(1), 21));
    let source = |name: &str| TextureSource { name: name.into(), width: 1024, height: 512 };
    fx.manifest.material_textures = Some(MaterialTextures {
        color: Some(TextureArray {
            width: 4,
            height: 2,
            mip_levels: 3,
            color_space: TextureColorSpace::Srgb,
            layers: vec![source("skin.png"), source("cloth.jpg")],
            texels: color,
        }),
        data: Some(TextureArray {
            width: 4,
            height: 2,
            mip_levels: 3,
            color_space: TextureColorSpace::Linear,
            layers: vec![source("normal.png")],
            texels: data,
        }),
    });
    let binding = |layer| TextureBinding {
        layer,
        wrap_u: TextureWrap::Repeat,
        wrap_v: TextureWrap::MirroredRepeat,
        mag_filter: TextureFilter::Linear,
        min_filter: TextureFilter::Nearest,
    };
    fx.manifest.materials = vec![
        Material::default(),
        Material {
            name: "skin".into(),
            base_color_factor: [0.9, 0.7, 0.6, 1.0],
            base_color_texture: Some(binding(0)),
            normal_texture: Some(binding(0)),
            normal_scale: 0.8,
            alpha_mode: AlphaMode::Mask { cutoff: 0.3 },
            double_sided: true,
            ..Material::default()
        },
        Material { name: "cloth".into(), base_color_texture: Some(binding(1)), ..Material::default() },
        Material { name: "cap".into(), metallic_roughness_texture: Some(binding(0)), ..Material::default() },
    ];
    fx.manifest.material_variants =
        vec![MaterialVariant { name: "winter".into(), materials: vec![0, 2, 2, 3] }];
    fx
}

#[test]
fn materials_round_trip_as_version_4_and_older_files_read_without_them() {
    let fx = with_materials();
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_MATERIALS);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest(), &Manifest { blobs: asset.manifest().blobs.clone(), ..fx.manifest.clone() });
    let array = asset.manifest().material_textures.as_ref().unwrap().color.as_ref().unwrap();
    assert_eq!(array.byte_len(), Some(4 * 2 * 11));
    assert_eq!(array.mip_range(1), Some((64, 16)));
    assert_eq!(array.mip_range(3), None);
    assert_eq!(TextureArray::full_mip_levels(4, 2), 3);
    assert_eq!(TextureArray::full_mip_levels(1, 1), 1);
    assert_eq!(TextureArray::full_mip_levels(1000, 3), 10);
    // Without materials the same asset is written as before (version 2: it has a morph layer).
    let older = realistic().write().unwrap();
    assert_eq!(u32::from_le_bytes(older[4..8].try_into().unwrap()), FORMAT_VERSION_MORPH);
    assert!(parsed_manifest(&older).materials.is_empty());
    // A version 3 label on a file with materials is refused: its reader would stop before them.
    let mut relabelled = bytes.clone();
    relabelled[4..8].copy_from_slice(&FORMAT_VERSION_RIGID.to_le_bytes());
    assert!(Asset::parse(&relabelled).is_err());
}

#[test]
fn hostile_materials_give_typed_errors() {
    type Edit = fn(&mut Fixture);
    type Check = fn(&Error) -> bool;
    let cases: Vec<(&str, Edit, Check)> = vec![
        (
            "base colour layer past the array",
            |fx| fx.manifest.materials[2].base_color_texture.as_mut().unwrap().layer = 2,
            |e| matches!(e, Error::IndexOutOfRange { what: "base colour texture layer", index: 2, count: 2 }),
        ),
        (
            "normal layer without a data array",
            |fx| fx.manifest.material_textures.as_mut().unwrap().data = None,
            |e| matches!(e, Error::IndexOutOfRange { what: "normal texture layer", count: 0, .. }),
        ),
        (
            "a material id past the materials",
            |fx| {
                fx.manifest.materials.truncate(2);
                fx.manifest.material_variants.clear();
            },
            |e| matches!(e, Error::IndexOutOfRange { what: "attachment material id", index: 3, count: 2 }),
        ),
        (
            "NaN base colour",
            |fx| fx.manifest.materials[1].base_color_factor[2] = f32::NAN,
            |e| matches!(e, Error::NotFinite { what: "material base colour factor" }),
        ),
        (
            "roughness above 1",
            |fx| fx.manifest.materials[3].roughness_factor = 1.5,
            |e| matches!(e, Error::OutOfRange { what: "material roughness factor", .. }),
        ),
        (
            "negative alpha cutoff",
            |fx| fx.manifest.materials[1].alpha_mode = AlphaMode::Mask { cutoff: -0.1 },
            |e| matches!(e, Error::OutOfRange { what: "material alpha cutoff", .. }),
        ),
        (
            "negative emission",
            |fx| fx.manifest.materials[0].emissive_factor = [0.0, -1.0, 0.0],
            |e| matches!(e, Error::OutOfRange { what: "material emissive factor", .. }),
        ),
        (
            "a partial mip chain",
            |fx| fx.manifest.material_textures.as_mut().unwrap().color.as_mut().unwrap().mip_levels = 2,
            |e| matches!(e, Error::ManifestMismatch { expected: 3, actual: 2, .. }),
        ),
        (
            "a texel blob one layer short",
            |fx| {
                let id = fx.manifest.material_textures.as_ref().unwrap().color.as_ref().unwrap().texels;
                fx.blobs[id.0 as usize].truncate(44);
            },
            |e| {
                matches!(
                    e,
                    Error::BlobSizeMismatch { what: "colour texture array", expected: 88, actual: 44, .. }
                )
            },
        ),
        (
            "a linear colour array",
            |fx| {
                fx.manifest.material_textures.as_mut().unwrap().color.as_mut().unwrap().color_space =
                    TextureColorSpace::Linear;
            },
            |e| matches!(e, Error::OutOfRange { what: "colour texture array", .. }),
        ),
        (
            "an array without layers",
            |fx| fx.manifest.material_textures.as_mut().unwrap().data.as_mut().unwrap().layers.clear(),
            |e| matches!(e, Error::ZeroCount { what: "material texture layers" }),
        ),
        (
            "a zero-width layer",
            |fx| fx.manifest.material_textures.as_mut().unwrap().data.as_mut().unwrap().width = 0,
            |e| matches!(e, Error::ZeroCount { what: "material texture layer size" }),
        ),
        (
            "an absurd layer size",
            |fx| {
                let a = fx.manifest.material_textures.as_mut().unwrap().data.as_mut().unwrap();
                (a.width, a.height) = (u32::MAX, u32::MAX);
            },
            |e| matches!(e, Error::LimitExceeded { what: "material texture width", .. }),
        ),
        (
            "textures without materials",
            |fx| fx.manifest.materials.clear(),
            |e| matches!(e, Error::MissingSection { .. }),
        ),
        (
            "a variant one entry short",
            |fx| {
                fx.manifest.material_variants[0].materials.pop();
            },
            |e| matches!(e, Error::ManifestMismatch { expected: 4, actual: 3, .. }),
        ),
        (
            "a variant naming a material past the materials",
            |fx| fx.manifest.material_variants[0].materials[1] = 4,
            |e| matches!(e, Error::IndexOutOfRange { what: "material variant material", index: 4, count: 4 }),
        ),
        (
            "256 variants",
            |fx| {
                let v = fx.manifest.material_variants[0].clone();
                fx.manifest.material_variants = vec![v; 256];
            },
            |e| matches!(e, Error::LimitExceeded { what: "material variant count", .. }),
        ),
        (
            "more than 256 materials",
            |fx| fx.manifest.materials = vec![Material::default(); MAX_MATERIALS + 1],
            |e| matches!(e, Error::LimitExceeded { what: "material count", .. }),
        ),
    ];
    assert!(Asset::parse(&with_materials().bytes()).is_ok());
    for (name, edit, check) in cases {
        let mut fx = with_materials();
        edit(&mut fx);
        match Asset::parse(&fx.bytes()) {
            Err(e) => assert!(check(&e), "{name}: unexpected error {e:?}"),
            Ok(_) => panic!("{name}: parsed"),
        }
        assert!(fx.write().is_err(), "{name}: the writer wrote it");
    }
}

/// [`minimal`] with root motion on both clips: idle (looping, 6 frames) turns and drifts, wave
/// (one-shot, 4 frames) steps forward.
fn with_root_motion() -> Fixture {
    use crate::root_motion::RootPose;
    let mut fx = minimal();
    let idle =
        (0..6).map(|k| RootPose { x: 0.01 * k as f32, z: 0.2 * k as f32, yaw: 0.05 * k as f32 }).collect();
    let wave: Vec<RootPose> = (0..4).map(|k| RootPose { x: 0.0, z: 0.1 * k as f32, yaw: 0.0 }).collect();
    let wave_end = wave[3];
    fx.manifest.root_motion = vec![
        RootMotionTrack { clip: 0, frames: idle, cycle: RootPose { x: 0.06, z: 1.2, yaw: 0.3 } },
        RootMotionTrack { clip: 1, frames: wave, cycle: wave_end },
    ];
    fx
}

#[test]
fn root_motion_round_trips_as_version_5_and_older_files_read_without_it() {
    let fx = with_root_motion();
    let bytes = fx.write().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), FORMAT_VERSION_ROOT_MOTION);
    let asset = Asset::parse(&bytes).unwrap();
    assert_eq!(asset.manifest(), &Manifest { blobs: asset.manifest().blobs.clone(), ..fx.manifest.clone() });
    // Without root motion the file is what it was before version 5 (version 1 here).
    let plain = minimal().write().unwrap();
    assert_eq!(u32::from_le_bytes(plain[4..8].try_into().unwrap()), MIN_FORMAT_VERSION);
    assert!(parsed_manifest(&plain).root_motion.is_empty());
    // Labelled 3, a version 5 manifest gets an empty list appended and its real list is read as
    // trailing bytes: refused, never read as root motion of an older file.
    let mut b = bytes.clone();
    b[4..8].copy_from_slice(&FORMAT_VERSION_RIGID.to_le_bytes());
    assert!(matches!(Asset::parse(&b), Err(Error::ManifestDecode { .. })), "{:?}", Asset::parse(&b).err());
    // A version 5 label on an older manifest (cut before the list) is refused too.
    let mut b = plain.clone();
    b[4..8].copy_from_slice(&FORMAT_VERSION_ROOT_MOTION.to_le_bytes());
    assert!(matches!(Asset::parse(&b), Err(Error::ManifestDecode { .. })));
}

#[test]
fn hostile_root_motion_gives_typed_errors() {
    use crate::root_motion::{ROOT_MOTION_LIMIT, RootPose};
    type Edit = fn(&mut Fixture);
    let cases: Vec<(&str, Edit, Check)> = vec![
        (
            "clip out of range",
            |fx| fx.manifest.root_motion[1].clip = 2,
            |e| matches!(e, Error::IndexOutOfRange { what: "root motion clip", index: 2, count: 2 }),
        ),
        (
            "two tracks for one clip",
            |fx| fx.manifest.root_motion[1].clip = 0,
            |e| matches!(e, Error::DuplicateName { what: "root motion track for clip", .. }),
        ),
        (
            "a pose short",
            |fx| {
                fx.manifest.root_motion[0].frames.pop();
            },
            |e| matches!(e, Error::ManifestMismatch { expected: 6, actual: 5, .. }),
        ),
        (
            "a pose too many",
            |fx| fx.manifest.root_motion[1].frames.push(RootPose::IDENTITY),
            |e| matches!(e, Error::ManifestMismatch { expected: 4, actual: 5, .. }),
        ),
        (
            "NaN pose",
            |fx| fx.manifest.root_motion[0].frames[3].yaw = f32::NAN,
            |e| matches!(e, Error::NotFinite { what: "root motion pose" }),
        ),
        (
            "infinite cycle",
            |fx| fx.manifest.root_motion[0].cycle.x = f32::INFINITY,
            |e| matches!(e, Error::NotFinite { what: "root motion pose" }),
        ),
        (
            "pose past the limit",
            |fx| fx.manifest.root_motion[0].frames[2].z = 2.0 * ROOT_MOTION_LIMIT,
            |e| matches!(e, Error::OutOfRange { what: "root motion pose", .. }),
        ),
        (
            "first pose not the identity",
            |fx| fx.manifest.root_motion[0].frames[0].x = 0.5,
            |e| matches!(e, Error::OutOfRange { what: "root motion first pose", .. }),
        ),
        (
            "one-shot cycle not its last frame",
            |fx| fx.manifest.root_motion[1].cycle.z = 9.0,
            |e| matches!(e, Error::OutOfRange { what: "root motion cycle of a one-shot clip", .. }),
        ),
        (
            "root motion without a vertex animation",
            |fx| fx.manifest.vertex_animation = None,
            |e| matches!(e, Error::OutOfRange { what: "root motion", .. }),
        ),
    ];
    for (name, edit, check) in cases {
        let mut fx = with_root_motion();
        edit(&mut fx);
        let err = Asset::parse(&fx.bytes()).err();
        assert!(err.as_ref().is_some_and(check), "{name}: {err:?}");
        // The writer refuses what the reader refuses.
        assert!(fx.write().is_err(), "{name}");
    }
    // Rigid assets refuse root motion too.
    let mut fx = rigid();
    fx.manifest.root_motion =
        vec![RootMotionTrack { clip: 0, frames: vec![RootPose::IDENTITY], cycle: RootPose::IDENTITY }];
    let err = Asset::parse(&fx.bytes()).err();
    assert!(matches!(err, Some(Error::OutOfRange { what: "root motion", .. })), "{err:?}");
}

#[test]
fn blob_crc32_splits_large_blobs_without_changing_the_value() {
    // Around the threshold and with pieces of unequal length (the last one shorter).
    for len in [0, 1, 4095, super::PARALLEL_CRC_MIN_BYTES - 1, super::PARALLEL_CRC_MIN_BYTES + 12_345] {
        let data: Vec<u8> =
            (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]).collect();
        assert_eq!(super::blob_crc32(&data), crc32fast::hash(&data), "{len} bytes");
    }
}

#[test]
fn asset_resources_cover_group_1_of_the_binding_table_exactly_once() {
    use crate::gpu::{AssetResource, AssetResources, BINDINGS, GROUP_ASSET, ResourceError};
    let bytes = realistic().write().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let resources = AssetResources::new(&asset).unwrap();
    let mut listed: Vec<&str> = resources.bindings.iter().map(|b| b.name).collect();
    let mut table: Vec<&str> = BINDINGS.iter().filter(|b| b.group == GROUP_ASSET).map(|b| b.name).collect();
    listed.sort_unstable();
    table.sort_unstable();
    assert_eq!(listed, table, "every group-1 binding has one resource, and nothing else is listed");
    // The asset's own data where it has some, stand-ins where its mode has none.
    let m = asset.manifest();
    let bones = m.bone_animation.as_ref().unwrap();
    let bone = resources.binding("bone_texture").unwrap();
    assert!(!bone.stand_in);
    assert!(matches!(&bone.resource, AssetResource::Texture(t) if t.bytes == asset.blob(bones.texture)));
    let joints = resources.binding("joints").unwrap();
    assert!(
        matches!(&joints.resource, AssetResource::Buffer { bytes, uniform: false } if **bytes == *asset.blob(bones.joints))
    );
    assert!(resources.binding("rigid_pieces").unwrap().stand_in);
    assert!(matches!(
        resources.binding("asset").unwrap().resource,
        AssetResource::Buffer { uniform: true, .. }
    ));
    assert_eq!(
        resources.indices.len() as u32 / 4,
        resources.attachment_first_index + resources.attachment_index_count
    );
    assert_eq!(&resources.indices[..asset.index_bytes().unwrap().len()], asset.index_bytes().unwrap());
    // A buffer never binds below its table minimum (an empty stream still gets one element).
    let captures = resources.binding("captures").unwrap();
    assert!(captures.requested_bytes() >= 16 && captures.min_bytes() == 16);
    // Without LODs there is nothing to draw.
    let no_lods = minimal().write().unwrap();
    assert_eq!(AssetResources::new(&Asset::parse(&no_lods).unwrap()).unwrap_err(), ResourceError::NoLods);
}

#[test]
fn asset_resources_are_checked_against_the_device_limits() {
    use crate::gpu::{AssetResources, ResourceError, ResourceLimits};
    let bytes = realistic().write().unwrap();
    let asset = Asset::parse(&bytes).unwrap();
    let resources = AssetResources::new(&asset).unwrap();
    let roomy = ResourceLimits {
        max_texture_dimension_2d: 8192,
        max_texture_array_layers: 256,
        max_storage_buffer_bytes: 1 << 27,
    };
    resources.check(&roomy).unwrap();
    // The 64 x 4 animation texture is the widest.
    let narrow = ResourceLimits { max_texture_dimension_2d: 63, ..roomy };
    assert_eq!(
        resources.check(&narrow).unwrap_err(),
        ResourceError::TextureTooLarge { what: "vertex animation", width: 64, height: 4, limit: 63 }
    );
    // The largest buffer is refused with its name and size.
    let largest = resources
        .bindings
        .iter()
        .filter(|b| matches!(b.resource, crate::gpu::AssetResource::Buffer { uniform: false, .. }))
        .map(|b| b.requested_bytes())
        .max()
        .unwrap()
        .max(resources.indices.len() as u64);
    let small = ResourceLimits { max_storage_buffer_bytes: largest - 1, ..roomy };
    assert!(
        matches!(resources.check(&small).unwrap_err(), ResourceError::BufferTooLarge { size, .. } if size == largest)
    );
    assert!(resources.requested_bytes() >= resources.indices.len() as u64 + largest);
}

/// The realistic fixture in the skin-residual format: no vertex texture, its bone section as the
/// skin, vertex 3 with 2-bit position and 1-bit normal fields (8 bits a frame, 10 frames from bit 0
/// of a 4-word stream), every other vertex with none.
fn skin_residual() -> Fixture {
    let mut fx = realistic();
    // Bone b at frame f moves by (0.1 f, 0.2 b, 0) without turning; finite rest positions.
    let bones =
        fx.manifest.bone_animation.as_ref().expect("the realistic fixture has bones").texture.0 as usize;
    let rows: Vec<f32> = (0..30)
        .flat_map(|t| {
            let (f, b) = ((t / 3) as f32, (t % 3) as f32);
            [[1.0, 0.0, 0.0, 0.1 * f], [0.0, 1.0, 0.0, 0.2 * b], [0.0, 0.0, 1.0, 0.0]].concat()
        })
        .collect();
    fx.blobs[bones][..rows.len() * 4].copy_from_slice(&f32_bytes(rows));
    let rest = fx
        .manifest
        .streams
        .iter()
        .find(|s| s.kind == StreamKind::RestPosition)
        .expect("it has a rest position stream")
        .blob
        .0 as usize;
    fx.blobs[rest] = f32_bytes((0..VERTICES * 3).map(|i| (i as f32 * 0.1).sin()));
    let va = fx.manifest.vertex_animation.as_mut().expect("it has a vertex animation");
    (va.format, va.textures, va.tangents, va.position_bits) =
        (VertexFormat::SkinResidual, Vec::new(), None, [0; 3]);
    let widths = crate::format::skin_residual::ResidualWidths {
        position_bits: 2,
        normal_bits: 1,
        absolute_normal: false,
    };
    let mut words: Vec<u32> =
        (0..VERTICES).flat_map(|v| [0, if v == 3 { widths.to_bits() } else { 0 }]).collect();
    // Frames 0..10 of vertex 3: x = +1, y = -1, z = 0, a = -1, b = 0 (two's complement fields).
    let frame: u32 = 0b01 | 0b11 << 2 | 0b1 << 6;
    let mut stream = [0u32; 4];
    for f in 0..10 {
        stream[f * 8 / 32] |= frame << (f * 8 % 32);
    }
    words.extend(stream);
    let texture = fx.add(u32_bytes(words));
    fx.manifest.skin_residual = Some(crate::container::SkinResidualAnimation {
        position_bound_m: 0.0005,
        normal_bound_rad: 0.01,
        width: VERTICES + 2,
        height: 1,
        stream_words: 4,
        texture,
    });
    fx
}

#[test]
fn skin_residual_round_trips_as_version_11_and_decodes_its_fields() {
    use crate::format::reference::{SkinResidualView, decode_bone_frame, decode_skin_residual_frame};
    use crate::format::skin_residual::{ResidualBounds, finish_residual};
    let bytes = skin_residual().write().expect("the skin-residual fixture writes");
    assert_eq!(
        u32::from_le_bytes(bytes[4..8].try_into().expect("a 16-byte header")),
        FORMAT_VERSION_SKIN_RESIDUAL
    );
    let asset = Asset::parse(&bytes).expect("the written file reads back");
    let view = SkinResidualView::from_asset(&asset).expect("it is in skin-residual");
    let n = VERTICES as usize;
    let (mut skin_p, mut skin_n) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
    let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
    decode_bone_frame(&view.bones, 7, &mut skin_p, &mut skin_n).expect("bone mode decodes frame 7");
    decode_skin_residual_frame(&view, 7, &mut p, &mut nrm).expect("skin-residual decodes frame 7");
    let bounds = ResidualBounds { position_m: 0.0005, normal_rad: 0.01 };
    let (s, t) = (bounds.position_step(), bounds.normal_step());
    for v in 0..n {
        // Every vertex is finished (its normal renormalised in the tangent basis), the residual of
        // vertex 3 added.
        let (r, d) = if v == 3 { ([s, -s, 0.0], [-t, 0.0]) } else { ([0.0; 3], [0.0; 2]) };
        let expected = finish_residual((skin_p[v], skin_n[v]), (r, d), false);
        assert!(p[v].iter().chain(&nrm[v]).all(|c| c.is_finite()), "vertex {v}: {:?} {:?}", p[v], nrm[v]);
        let bits = |(a, b): ([f32; 3], [f32; 3])| (a.map(f32::to_bits), b.map(f32::to_bits));
        assert_eq!(bits((p[v], nrm[v])), bits(expected), "vertex {v}");
    }
    // One vertex at a time (what the bake's parallel encoder skins) is the whole frame's, bit for
    // bit; a vertex or frame past the asset is a typed error.
    use crate::format::reference::{decode_bone_stored_vertex, stored_frame_morph_weights};
    let weights = stored_frame_morph_weights(&view.bones, 7).expect("frame 7 has morph weights (or none)");
    for v in 0..VERTICES {
        let (vp, vn) = decode_bone_stored_vertex(&view.bones, 7, v, &weights).expect("each vertex decodes");
        assert_eq!((vp, vn), (skin_p[v as usize], skin_n[v as usize]), "vertex {v}");
    }
    assert!(matches!(
        decode_bone_stored_vertex(&view.bones, 7, VERTICES, &weights),
        Err(crate::Error::OutOfRange { .. })
    ));
    assert!(matches!(
        stored_frame_morph_weights(&view.bones, 1_000_000),
        Err(crate::Error::OutOfRange { .. })
    ));
    // A packed64 file stays at its older version, byte for byte what it was.
    let older = realistic().write().expect("the realistic fixture writes");
    assert!(
        u32::from_le_bytes(older[4..8].try_into().expect("a 16-byte header")) < FORMAT_VERSION_SKIN_RESIDUAL
    );
}

#[test]
fn whole_frames_at_a_time_decode_bit_for_bit_like_single_vertices_in_bone_mode_and_skin_residual() {
    use crate::format::reference::{
        SkinResidualView, decode_bone_frame_at, decode_bone_vertex, decode_skin_residual_frame_at,
        decode_skin_residual_vertex,
    };
    use crate::{instance::InstanceRecord, playback::Interpolation};
    let bytes = skin_residual().write().expect("the skin-residual fixture writes");
    let asset = Asset::parse(&bytes).expect("the written file reads back");
    let view = SkinResidualView::from_asset(&asset).expect("it is in skin-residual");
    assert!(view.bones.morph.is_some() && view.bones.layout.bone_count > 1, "bones to tell apart, morphs");
    let clips = asset.manifest().clips.len() as u32;
    // Clip A on and between frames; a cross-fade to clip B a quarter through (both samples cached).
    let mut states = Vec::new();
    for clip in 0..clips {
        for phase in [0.0, 0.05, 0.37, 0.5, 0.99] {
            let plain =
                InstanceRecord { clip_a: clip, phase_offset_a: phase, rate_a: 0.0, ..Default::default() };
            let mut fading = plain;
            fading.set_clip_b((clip + 1) % clips, 4.0);
            fading.phase_offset_b = 1.0 - phase;
            fading.fade_start = -1.0;
            states.extend([plain, fading]);
        }
    }
    let n = VERTICES as usize;
    let bits = |p: &[[f32; 3]]| -> Vec<[u32; 3]> { p.iter().map(|v| v.map(f32::to_bits)).collect() };
    let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
    for interp in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
        for inst in &states {
            let what = format!("{interp:?} {inst:?}");
            decode_bone_frame_at(&view.bones, inst, 0.0, interp, &mut p, &mut nrm)
                .expect("bone mode decodes");
            let one: Vec<_> = (0..VERTICES)
                .map(|v| decode_bone_vertex(&view.bones, inst, 0.0, v, interp).expect("a vertex decodes"))
                .collect();
            assert_eq!(bits(&p), bits(&one.iter().map(|d| d.object_position).collect::<Vec<_>>()), "{what}");
            assert_eq!(bits(&nrm), bits(&one.iter().map(|d| d.object_normal).collect::<Vec<_>>()), "{what}");
            decode_skin_residual_frame_at(&view, inst, 0.0, interp, &mut p, &mut nrm).expect("it decodes");
            let one: Vec<_> = (0..VERTICES)
                .map(|v| decode_skin_residual_vertex(&view, inst, 0.0, v, interp).expect("a vertex decodes"))
                .collect();
            assert_eq!(bits(&p), bits(&one.iter().map(|d| d.object_position).collect::<Vec<_>>()), "{what}");
            assert_eq!(bits(&nrm), bits(&one.iter().map(|d| d.object_normal).collect::<Vec<_>>()), "{what}");
        }
    }
    // Buffers of another length are refused.
    let inst = &states[0];
    let mut short = vec![[0.0; 3]; n - 1];
    assert!(matches!(
        decode_bone_frame_at(&view.bones, inst, 0.0, Interpolation::Linear, &mut short, &mut nrm),
        Err(crate::Error::OutOfRange { .. })
    ));
    assert!(matches!(
        decode_skin_residual_frame_at(&view, inst, 0.0, Interpolation::Linear, &mut p, &mut short),
        Err(crate::Error::OutOfRange { .. })
    ));
}

#[test]
fn hostile_skin_residual_sections_give_typed_errors() {
    let texture = |fx: &Fixture| {
        fx.manifest.skin_residual.as_ref().expect("the fixture has the section").texture.0 as usize
    };
    type Edit = Box<dyn Fn(&mut Fixture)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "a vertex's frames past the stream",
            Box::new(|fx| {
                fx.manifest.skin_residual.as_mut().expect("the fixture has the section").stream_words = 3
            }),
        ),
        (
            "a stray widths bit",
            Box::new(move |fx| {
                let t = texture(fx);
                fx.blobs[t][4..8].copy_from_slice(&0x200u32.to_le_bytes());
            }),
        ),
        (
            "a texture of the wrong size",
            Box::new(move |fx| {
                let t = texture(fx);
                fx.blobs[t].truncate(8);
            }),
        ),
        ("no bone section", Box::new(|fx| fx.manifest.bone_animation = None)),
        ("no section", Box::new(|fx| fx.manifest.skin_residual = None)),
        (
            "the section beside packed64",
            Box::new(|fx| {
                let positions = fx.add(filler(64 * 4 * 8, 1));
                let va = fx.manifest.vertex_animation.as_mut().expect("it has a vertex animation");
                (va.format, va.textures, va.position_bits) =
                    (VertexFormat::Packed64, vec![positions], [13, 14, 13]);
            }),
        ),
        (
            "a bound of zero",
            Box::new(|fx| {
                fx.manifest.skin_residual.as_mut().expect("the fixture has the section").position_bound_m =
                    0.0
            }),
        ),
        (
            "zero stream words",
            Box::new(|fx| {
                fx.manifest.skin_residual.as_mut().expect("the fixture has the section").stream_words = 0
            }),
        ),
    ];
    for (what, edit) in cases {
        let mut fx = skin_residual();
        edit(&mut fx);
        let err = Asset::parse(&fx.bytes()).err();
        assert!(
            matches!(
                err,
                Some(
                    Error::IndexOutOfRange { .. }
                        | Error::OutOfRange { .. }
                        | Error::BlobSizeMismatch { .. }
                        | Error::MissingSection { .. }
                        | Error::ManifestMismatch { .. }
                        | Error::ZeroCount { .. }
                )
            ),
            "{what}: {err:?}"
        );
        assert!(fx.write().is_err(), "{what}: the writer wrote what the reader refuses");
    }
}
