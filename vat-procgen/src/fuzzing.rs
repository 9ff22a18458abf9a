//! The functions the fuzz targets in `fuzz/fuzz_targets/` call, shared with the stable-toolchain
//! replay of the checked-in corpus (`tests/tests/fuzz_corpus.rs`), so both exercise exactly the same
//! code. Not part of the supported API.
//!
//! Each takes arbitrary bytes and either succeeds or returns a typed error; any panic (or abort,
//! leak or timeout under the fuzzer) is a bug. Budgets are kept small so that one execution takes
//! milliseconds: 64 MiB of memory, textures of at most 1024 texels a side.
//!
//! | target | function | input |
//! |---|---|---|
//! | `vat_reader` | [`load_vat`] | a `.vat` file |
//! | `gltf_bake` | [`import_and_bake`] | a `.glb` or `.gltf` file |
//! | `bake_args` | [`bake_from_args`] | `vat bake` arguments as text |
//! | `openvat_import` | [`import_openvat_parts`] | an OpenVAT bake's sidecar, texture and glb, length-prefixed |
//! | `houdini_import` | [`import_houdini_parts`] | a Houdini VAT 3 bake's `_data.json`, texture(s) and glb, length-prefixed |
//! | `houdini_dynamic_import` | [`import_houdini_dynamic_parts`] | a Houdini VAT 3 `DynamicMesh` bake's `_data.json`, lookup, position and rotation textures and glb, length-prefixed |
//! | `houdini_particle_import` | [`import_houdini_particle_parts`] | a Houdini VAT 3 `Particles` bake's `_data.json`, position and colour textures and glb, length-prefixed |
//! | `sprite_frames` | [`sprite_frame_bake`] | one sprite frame, CSV or PLY |

use std::sync::OnceLock;

use vat_core::container::Asset;
use vat_core::crowd::CrowdAsset;
use vat_core::format::encoding::{NormalRounding, VertexFormat};
use vat_core::format::reference::{VertexAnimationView, decode_vertex};
use vat_core::instance::InstanceRecord;
use vat_core::playback::Interpolation;

use vat_bake::gltf_import::{ImportOptions, import_slice_with};
use vat_bake::lods::LodOptions;
use vat_bake::prepare::{BakeOptions, prepare};
use vat_bake::rig::Rig;
use vat_bake::verify::verify_prepared;
use vat_bake::{BakeError, Result};

/// The memory budget of every fuzzed import and bake: 64 MiB.
pub const FUZZ_MAX_MEMORY: u64 = 64 << 20;

/// The most frames per clip of a [`bake_from_args`] bake: the humanoid's bakes dominate that
/// target's time, and fewer frames mean more executions per second.
pub const FUZZ_MAX_FRAMES: u32 = 12;

/// The largest texture dimension of every fuzzed bake.
pub const FUZZ_MAX_TEXTURE_DIM: u32 = 1024;

/// Parses `data` as a `.vat` file; when it is valid, reads what a loader reads: every blob, the crowd
/// view of its manifest, and the first and last vertex of the CPU reference decoder (the soft or the
/// rigid one) at a few times.
///
/// A mutated manifest almost never matches its checksum, which would stop the fuzzer at the
/// checksum test; so the same bytes with the header's manifest checksum recomputed are loaded too,
/// letting mutations reach manifest decoding and validation.
///
/// # Errors
/// The reader's typed error for an invalid file (of `data` as given); a decoder error would be a
/// bug of the reader (a validated file must decode) and is returned as is for the caller to report.
pub fn load_vat(data: &[u8]) -> std::result::Result<(), vat_core::Error> {
    if let Some(fixed) = with_manifest_checksum_fixed(data) {
        let _ = load_vat_once(&fixed);
    }
    load_vat_once(data)
}

/// `data` with the header's manifest CRC-32 recomputed, when the header and manifest are there and
/// the stored checksum is wrong.
fn with_manifest_checksum_fixed(data: &[u8]) -> Option<Vec<u8>> {
    let word = |i: usize| Some(u32::from_le_bytes(data.get(i..i + 4)?.try_into().ok()?));
    let len = usize::try_from(word(8)?).ok()?;
    let manifest = data.get(16..16usize.checked_add(len)?)?;
    let crc = crc32fast::hash(manifest);
    if word(12)? == crc {
        return None;
    }
    let mut fixed = data.to_vec();
    fixed[12..16].copy_from_slice(&crc.to_le_bytes());
    Some(fixed)
}

fn load_vat_once(data: &[u8]) -> std::result::Result<(), vat_core::Error> {
    let asset = Asset::parse(data)?;
    let manifest = asset.manifest();
    for i in 0..manifest.blobs.len() {
        let _ = asset.get_blob(vat_core::container::BlobId(i as u32));
    }
    if manifest.lods.is_empty() || manifest.clips.is_empty() {
        return Ok(());
    }
    CrowdAsset::from_manifest(manifest)?;
    if let Ok(view) = VertexAnimationView::from_asset(&asset) {
        let last = view.layout.vertex_count.saturating_sub(1);
        for time in [0.0f32, 0.37, 5.0] {
            for vertex in [0, last] {
                decode_vertex(&view, &InstanceRecord::default(), time, vertex, Interpolation::Cubic)?;
            }
        }
    }
    if let Ok(view) = vat_core::format::reference::FluidAnimationView::from_asset(&asset) {
        for time in [0.0f32, 0.37, 5.0] {
            for corner in [0, manifest.vertex_count.saturating_sub(1)] {
                vat_core::format::reference::decode_fluid_vertex(
                    &view,
                    &InstanceRecord::default(),
                    time,
                    corner,
                )?;
            }
        }
    }
    if let Ok(view) = vat_core::format::reference::SpriteAnimationView::from_asset(&asset) {
        let last = manifest.vertex_count.saturating_sub(1);
        for time in [0.0f32, 0.37, 5.0] {
            for corner in [0, last] {
                for interpolation in [Interpolation::Point, Interpolation::Linear] {
                    let record = InstanceRecord::default();
                    let camera = [1.0, 2.0, 3.0];
                    vat_core::format::reference::decode_sprite_corner(
                        &view,
                        &record,
                        time,
                        corner,
                        interpolation,
                        camera,
                    )?;
                }
            }
        }
    }
    if let Ok(view) = vat_core::format::reference::RigidAnimationView::from_asset(&asset) {
        let last = manifest.vertex_count.saturating_sub(1);
        for time in [0.0f32, 0.37, 5.0] {
            for vertex in [0, last] {
                let record = InstanceRecord::default();
                vat_core::format::reference::decode_rigid_vertex(
                    &view,
                    &record,
                    time,
                    vertex,
                    Interpolation::Cubic,
                )?;
            }
        }
    }
    Ok(())
}

/// The options every fuzzed bake starts from: few frames, one LOD, small budgets.
fn small_bake_options() -> BakeOptions {
    BakeOptions {
        frames: Some(4),
        lods: LodOptions::Count(1),
        max_texture_dim: FUZZ_MAX_TEXTURE_DIM,
        max_memory: FUZZ_MAX_MEMORY,
        ..BakeOptions::default()
    }
}

/// Bakes `rig` with `options`, verifies the bake, writes it as `.vat` bytes and reads them back.
///
/// # Panics
/// When the written bytes do not parse or differ from a second write: the writer and reader must
/// agree on everything the baker produces.
fn bake_verify_reload(rig: &Rig, options: &BakeOptions) -> Result<()> {
    let bake = prepare(rig, options)?;
    verify_prepared(&bake, rig)?;
    let bytes = bake.to_vat_bytes()?;
    if let Err(e) = load_vat(&bytes) {
        panic!("the baker wrote a .vat file its reader refuses: {e}");
    }
    assert!(bake.to_vat_bytes()? == bytes, "two writes of one bake differ");
    Ok(())
}

/// Imports `data` as a `.glb` or `.gltf` file (no external files) with a 64 MiB budget, then bakes
/// the rig with 4 frames per clip and one LOD, verifies it and reloads the `.vat` bytes.
///
/// # Errors
/// The typed import or bake error.
pub fn import_and_bake(data: &[u8]) -> Result<()> {
    let options = ImportOptions { max_memory: FUZZ_MAX_MEMORY, ..ImportOptions::default() };
    let rig = import_slice_with(data, None, "fuzz.glb", &options)?;
    bake_verify_reload(&rig, &small_bake_options())
}

/// Parses `data` as an OBJ frame (the soft-body sequence reader), makes a two-frame sequence of it
/// (the second frame its positions moved by 1 cm, so the clip animates), and bakes, verifies and
/// reloads it like [`import_and_bake`]. At most 64 MiB of OBJ text is parsed.
///
/// # Errors
/// The typed parse or bake error.
pub fn obj_sequence_bake(data: &[u8]) -> Result<()> {
    if data.len() as u64 > FUZZ_MAX_MEMORY {
        return Err(BakeError::InvalidInput {
            part: "fuzz.obj".into(),
            problem: "larger than the fuzz budget".into(),
        });
    }
    let mut sequence = vat_bake::sequence::parse_obj_frame(data, std::path::Path::new("fuzz.obj"), "fuzz")?;
    let moved: Vec<glam::Vec3> = sequence.positions[0].iter().map(|p| *p + glam::Vec3::splat(0.01)).collect();
    sequence.positions.push(moved);
    if let Some(normals) = &mut sequence.normals {
        normals.push(normals[0].clone());
    }
    let rig = sequence.into_rig()?;
    bake_verify_reload(&rig, &small_bake_options())
}

/// The procedural humanoid, built once.
fn humanoid() -> &'static Rig {
    static RIG: OnceLock<Rig> = OnceLock::new();
    RIG.get_or_init(crate::procgen::humanoid)
}

/// Bakes the procedural humanoid with `vat bake` options given as text: whitespace-separated
/// arguments with the spelling of the command line (`--fps X`, `--frames N`, `--clips a,b`,
/// `--lods N`, `--lod-ratios 1,0.5`, `--bones`, `--tangents`, `--format NAME`,
/// `--max-texture-dim N`, `--precise-normals`, `--capture a,b`, `--max-memory BYTES`), then verifies
/// and reloads the result. The memory budget and texture size are capped at [`FUZZ_MAX_MEMORY`] and
/// [`FUZZ_MAX_TEXTURE_DIM`], and at most [`FUZZ_MAX_FRAMES`] frames per clip are sampled, so every
/// execution is small.
///
/// # Errors
/// [`BakeError::InvalidOption`] for text that is not such arguments (as the command line would
/// refuse it), else the bake's typed error.
pub fn bake_from_args(data: &[u8]) -> Result<()> {
    let text = std::str::from_utf8(data).map_err(|_| arg_error("arguments", "are not UTF-8"))?;
    let mut options = small_bake_options();
    options.frames = None;
    let mut args = text.split_whitespace();
    while let Some(flag) = args.next() {
        let mut value = |name: &'static str| args.next().ok_or_else(|| arg_error(name, "needs a value"));
        match flag {
            "--fps" => options.fps = parse(value("--fps")?, "--fps")?,
            "--frames" => options.frames = Some(parse(value("--frames")?, "--frames")?),
            "--clips" => options.clips = Some(list(value("--clips")?)),
            "--lods" => options.lods = LodOptions::Count(parse(value("--lods")?, "--lods")?),
            "--lod-ratios" => {
                let ratios = value("--lod-ratios")?.split(',').map(|r| parse(r, "--lod-ratios"));
                options.lods = LodOptions::Ratios(ratios.collect::<Result<_>>()?);
            }
            "--bones" => options.bones = true,
            "--tangents" => options.tangents = true,
            "--precise-normals" => options.normal_rounding = NormalRounding::Precise,
            "--format" => options.format = format(value("--format")?)?,
            "--max-texture-dim" => {
                options.max_texture_dim = parse(value("--max-texture-dim")?, "--max-texture-dim")?
            }
            "--capture" => options.captures = list(value("--capture")?),
            "--max-memory" => options.max_memory = parse(value("--max-memory")?, "--max-memory")?,
            other => return Err(arg_error("arguments", format!("unknown argument {other:?}"))),
        }
    }
    options.max_memory = options.max_memory.min(FUZZ_MAX_MEMORY);
    options.max_texture_dim = options.max_texture_dim.min(FUZZ_MAX_TEXTURE_DIM);
    options.frames = Some(options.frames.map_or_else(|| frames_at(options.fps), |n| n.min(FUZZ_MAX_FRAMES)));
    bake_verify_reload(humanoid(), &options)
}

/// Samples per clip of the humanoid at `fps` (its clips last about a second), capped at
/// [`FUZZ_MAX_FRAMES`]; an fps that is not a finite positive number is left for the bake to refuse.
fn frames_at(fps: f32) -> u32 {
    if fps.is_finite() && fps > 0.0 { (fps.ceil() as u32).clamp(2, FUZZ_MAX_FRAMES) } else { 0 }
}

fn arg_error(option: &'static str, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidOption { option, problem: problem.into() }
}

fn parse<T: std::str::FromStr>(text: &str, option: &'static str) -> Result<T> {
    text.parse().map_err(|_| arg_error(option, format!("{text:?} is not a valid value")))
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::to_owned).collect()
}

fn format(name: &str) -> Result<VertexFormat> {
    Ok(match name {
        "packed64" => VertexFormat::Packed64,
        "unorm16" => VertexFormat::Unorm16,
        "f16" => VertexFormat::F16,
        "f32" => VertexFormat::F32,
        "unorm8" => VertexFormat::Unorm8,
        "split8" => VertexFormat::Split8,
        other => return Err(arg_error("--format", format!("unknown format {other:?}"))),
    })
}

/// The most frames or texels a side of a fuzzed OpenVAT import may have before it is baked.
const FUZZ_MAX_INTEROP_FRAMES: usize = 16;

/// The most piece-frames (position texels) a fuzzed Houdini rigid-body import decodes.
const FUZZ_MAX_RIGID_TEXELS: usize = 1 << 16;

/// Joins an OpenVAT bake's sidecar JSON, texture (EXR or PNG) and glb into one
/// [`import_openvat_parts`] input: `[u32 LE length][sidecar][u32 LE length][texture][glb]`.
pub fn openvat_parts(sidecar: &[u8], texture: &[u8], glb: &[u8]) -> Vec<u8> {
    join_parts(&[sidecar, texture, glb])
}

/// Splits an [`openvat_parts`] input into (sidecar, texture, glb); `None` when it is not one.
pub fn split_openvat_parts(data: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    match split_parts(data, 3)?[..] {
        [json, texture, glb] => Some((json, texture, glb)),
        _ => None,
    }
}

/// Imports an OpenVAT bake given as bytes ([`openvat_parts`]: sidecar, texture, glb) with a
/// 64 MiB budget through the importer's checks and decoder; when it decodes (and is small), bakes
/// the import with one LOD, verifies it against the decoded frames and reloads the `.vat` bytes.
///
/// # Errors
/// The typed import or bake error; [`BakeError::InvalidInput`] when the bytes are not three parts.
pub fn import_openvat_parts(data: &[u8]) -> Result<()> {
    use std::path::{Path, PathBuf};

    use vat_bake::interop::openvat::{OpenVatFiles, OpenVatOptions, parse_remap_info};
    use vat_bake::interop::stages::{Budget, decode_exr, decode_openvat, decode_png, lookup_mesh_from_bytes};
    let (json, texture, glb) = split_openvat_parts(data).ok_or_else(|| BakeError::InvalidInput {
        part: "fuzz input".into(),
        problem: "is not three length-prefixed parts".into(),
    })?;
    let files = OpenVatFiles {
        name: "fuzz".into(),
        sidecar: PathBuf::from("fuzz-remap_info.json"),
        texture: PathBuf::from("fuzz_vat"),
        normals: None,
        mesh: PathBuf::from("fuzz.glb"),
        mesh_note: None,
    };
    let mut budget = Budget::new(FUZZ_MAX_MEMORY);
    let info = parse_remap_info(&files.sidecar, json)?;
    let texture = if texture.starts_with(&[0x76, 0x2f, 0x31, 0x01]) {
        decode_exr(texture, Path::new("fuzz_vat.exr"), &mut budget)?
    } else {
        decode_png(texture, Path::new("fuzz_vat.png"), &mut budget)?
    };
    let mesh = lookup_mesh_from_bytes(glb, &files.mesh, &mut budget)?;
    let options = OpenVatOptions { max_memory: FUZZ_MAX_MEMORY, ..Default::default() };
    let imported = decode_openvat(&files, &info, &texture, None, &mesh, &options, &mut budget)?;
    if imported.sequence.frame_count() > FUZZ_MAX_INTEROP_FRAMES || imported.sequence.vertex_count() > 4096 {
        return Ok(());
    }
    let rig = imported.to_rig()?;
    let options = imported.at_own_rates(BakeOptions { frames: None, ..small_bake_options() });
    bake_verify_reload(&rig, &options)
}

/// A small valid [`import_openvat_parts`] input: one quad (4 vertices, 2 triangles) moving over 3
/// frames in a 16-bit PNG, with a two-clip sidecar. The seed of the `openvat_import` corpus.
pub fn openvat_seed() -> Vec<u8> {
    use glam::Vec3;
    let positions = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
    let normals = [Vec3::Z; 4];
    let lookup: Vec<[f32; 2]> = (0..4).map(|c| [(c as f32 + 0.5) / 4.0, 0.5 / 3.0]).collect();
    let glb = vat_bake::interop::stages::lookup_glb(
        "fuzz",
        &positions,
        &normals,
        None,
        &lookup,
        &[0, 1, 2, 0, 2, 3],
    )
    .unwrap_or_default();
    let rgb: Vec<[f32; 3]> = (0..12).map(|i| [(i / 4) as f32 / 2.0, 0.5, (i % 4) as f32 / 3.0]).collect();
    let png = vat_bake::interop::stages::encode_texture(vat_bake::interop::TextureFormat::Png16, 4, 3, &rgb)
        .unwrap_or_default();
    let json = br#"{"os-remap": {"Min": [0, -0.5, 0], "Max": [1, 0.5, "0.3"], "Frames": 3},
 "animations": {"a": {"startFrame": 1, "endFrame": 3, "framerate": 24, "looping": true},
                "b": {"startFrame": 2, "endFrame": 3, "framerate": 24, "looping": false},}}"#;
    openvat_parts(json, &png, &glb)
}

/// Imports a SideFX Labs VAT 3 soft-body bake given as bytes ([`openvat_parts`]'s layout:
/// `_data.json`, position texture (EXR or PNG), `_mesh.glb`) with a 64 MiB budget through the
/// importer's checks and decoder; when it decodes (and is small), bakes the import with one LOD,
/// verifies it against the decoded frames and reloads the `.vat` bytes.
///
/// # Errors
/// The typed import or bake error; [`BakeError::InvalidInput`] when the bytes are not three parts.
pub fn import_houdini_parts(data: &[u8]) -> Result<()> {
    use std::path::Path;

    use vat_bake::interop::houdini::parse_data_json;
    use vat_bake::interop::stages::{
        Budget, RigidParts, check_in_scope, decode_houdini_rigid, decode_houdini_softbody,
        lookup_mesh_from_bytes, pivot_uvs,
    };
    let refuse = |n: &str| BakeError::InvalidInput {
        part: "fuzz input".into(),
        problem: format!("is not {n} length-prefixed parts"),
    };
    let (json, _, _) = split_openvat_parts(data).ok_or_else(|| refuse("three"))?;
    let mut budget = Budget::new(FUZZ_MAX_MEMORY);
    let json_path = Path::new("fuzz_data.json");
    let info = parse_data_json(json_path, json)?;
    check_in_scope(json_path, &info)?;
    let mesh_path = Path::new("fuzz_mesh.glb");
    if info.vat_type == "Rigidbody" {
        let parts = split_parts(data, 4).ok_or_else(|| refuse("four"))?;
        let (pos_path, pos) = texture_of(parts[1], "fuzz_pos", &mut budget)?;
        let (rot_path, rot) = texture_of(parts[2], "fuzz_rot", &mut budget)?;
        // The substep search costs up to a few hundred turns a piece-frame: keep executions short.
        if pos.width * pos.height > FUZZ_MAX_RIGID_TEXELS {
            return Ok(());
        }
        let mesh = lookup_mesh_from_bytes(parts[3], mesh_path, &mut budget)?;
        let pivots = pivot_uvs(parts[3], mesh_path, &budget)?;
        let rigid = RigidParts {
            name: "fuzz",
            data: &info,
            json_path,
            pos_path: &pos_path,
            pos: &pos,
            rot_path: &rot_path,
            rot: &rot,
            mesh_path,
            mesh: &mesh,
            pivots: &pivots,
            has_colour: false,
        };
        let imported = decode_houdini_rigid(&rigid, None, &mut budget)?;
        let source = &imported.source;
        if source.frame_count() > FUZZ_MAX_INTEROP_FRAMES * 8 || source.vertex_count() > 4096 {
            return Ok(());
        }
        let options = vat_bake::rigid::RigidBakeOptions {
            max_texture_dim: FUZZ_MAX_TEXTURE_DIM,
            lods: LodOptions::Count(1),
            ..Default::default()
        };
        let (bytes, _) = vat_bake::rigid::bake_rigid(source, &options)?;
        let asset = Asset::parse(&bytes)?;
        if !vat_bake::rigid::verify_rigid(&asset, source)?.passed {
            return Err(BakeError::InvalidInput {
                part: "fuzz input".into(),
                problem: "its rigid bake failed its verification".into(),
            });
        }
        return Ok(());
    }
    let (_, texture, glb) = split_openvat_parts(data).ok_or_else(|| refuse("three"))?;
    let (texture_path, texture) = texture_of(texture, "fuzz_pos", &mut budget)?;
    let mesh = lookup_mesh_from_bytes(glb, mesh_path, &mut budget)?;
    let imported =
        decode_houdini_softbody("fuzz", &info, &texture_path, &texture, mesh_path, &mesh, &mut budget)?;
    if imported.sequence.frame_count() > FUZZ_MAX_INTEROP_FRAMES || imported.sequence.vertex_count() > 4096 {
        return Ok(());
    }
    let rig = imported.to_rig()?;
    let options = imported.at_own_rates(BakeOptions { frames: None, ..small_bake_options() });
    bake_verify_reload(&rig, &options)
}

/// A fuzzed texture part: an EXR when it starts with the EXR magic, else a PNG, named
/// `<stem>.exr|png` in messages.
fn texture_of(
    bytes: &[u8],
    stem: &str,
    budget: &mut vat_bake::interop::stages::Budget,
) -> Result<(std::path::PathBuf, vat_bake::interop::stages::Texture)> {
    use vat_bake::interop::stages::{decode_exr, decode_png};
    let exr = bytes.starts_with(&[0x76, 0x2f, 0x31, 0x01]);
    let path = std::path::PathBuf::from(format!("{stem}.{}", if exr { "exr" } else { "png" }));
    let texture = if exr { decode_exr(bytes, &path, budget) } else { decode_png(bytes, &path, budget) };
    texture.map(|t| (path, t))
}

/// The most texels a fuzzed dynamic-mesh or particle import's lookup or position texture may have
/// before it is decoded into frames (larger ones are accepted unread, to keep executions short).
const FUZZ_MAX_INTEROP_TEXELS: usize = 1 << 14;

/// `_data.json` of a fuzzed Houdini input, parsed, and refused unless its `VAT Type` is `want`.
fn houdini_data_of(json: &[u8], want: &str) -> Result<vat_bake::interop::houdini::HoudiniData> {
    let json_path = std::path::Path::new("fuzz_data.json");
    let info = vat_bake::interop::houdini::parse_data_json(json_path, json)?;
    if info.vat_type != want {
        let problem = format!("is {:?}; this target reads {want:?} bakes", info.vat_type);
        return Err(vat_bake::interop::stages::bad(json_path, "VAT Type", problem));
    }
    Ok(info)
}

/// Imports a SideFX Labs VAT 3 dynamic-mesh bake (`VAT Type` `DynamicMesh`, the importer of
/// [`vat_bake::interop::houdini::read_houdini_dynamic_mesh`]) given as five [`join_parts`] parts:
/// `_data.json`, lookup table, position texture, rotation texture (empty: none) and `_mesh.glb`,
/// textures EXR or PNG, with a 64 MiB budget; when it decodes (and is small), bakes it in the
/// fluid mode (looping), verifies the bake against the decoded frames and reloads the `.vat` bytes.
///
/// # Errors
/// The typed import, bake or verify error; [`BakeError::InvalidInput`] when the bytes are not five
/// parts or the bake fails its verification.
pub fn import_houdini_dynamic_parts(data: &[u8]) -> Result<()> {
    use vat_bake::fluid::{FluidBakeOptions, FluidFrames, bake_fluid, verify_fluid};
    use vat_bake::interop::stages::{Budget, FluidParts, decode_houdini_dynamic as decode};
    let refuse =
        |problem: &str| BakeError::InvalidInput { part: "fuzz input".into(), problem: problem.into() };
    let parts = split_parts(data, 5).ok_or_else(|| refuse("is not five length-prefixed parts"))?;
    let info = houdini_data_of(parts[0], "DynamicMesh")?;
    let mut budget = Budget::new(FUZZ_MAX_MEMORY);
    let (lookup_path, lookup) = texture_of(parts[1], "fuzz_lookup", &mut budget)?;
    let (pos_path, pos) = texture_of(parts[2], "fuzz_pos", &mut budget)?;
    if lookup.width * lookup.height > FUZZ_MAX_INTEROP_TEXELS
        || pos.width * pos.height > FUZZ_MAX_INTEROP_TEXELS
    {
        return Ok(());
    }
    let rot = match parts[3] {
        [] => None,
        bytes => Some(texture_of(bytes, "fuzz_rot", &mut budget).map(|(path, t)| (t, path))?),
    };
    let parts = FluidParts {
        name: "fuzz",
        data: &info,
        json_path: std::path::Path::new("fuzz_data.json"),
        mesh_path: std::path::Path::new("fuzz_mesh.glb"),
        mesh_bytes: parts[4],
        lookup_path: &lookup_path,
        lookup,
        pos_path: &pos_path,
        pos,
        rot,
        has_colour: false,
    };
    let imported = decode(parts, &mut budget)?;
    if imported.frame_count() > FUZZ_MAX_INTEROP_FRAMES {
        return Ok(());
    }
    let options =
        FluidBakeOptions { max_texture_dim: FUZZ_MAX_TEXTURE_DIM, looping: true, ..Default::default() };
    let (bytes, _) = bake_fluid(&imported, &options)?;
    let asset = Asset::parse(&bytes)?;
    if !verify_fluid(&asset, &imported)?.passed {
        return Err(refuse("its fluid bake failed its verification"));
    }
    if let Err(e) = load_vat(&bytes) {
        panic!("the fluid baker wrote a .vat file its reader refuses: {e}");
    }
    Ok(())
}

/// Imports a SideFX Labs VAT 3 particle bake (`VAT Type` `Particles`, the importer of
/// [`vat_bake::interop::houdini::read_houdini_particles`]) given as four [`join_parts`] parts:
/// `_data.json`, position texture, colour texture (empty: none) and `_mesh.glb`, textures EXR or
/// PNG, with a 64 MiB budget and VAT 3's default card size; when it decodes (and is small), bakes it
/// in the sprite mode (looping), verifies the bake against the decoded frames and reloads the
/// `.vat` bytes.
///
/// # Errors
/// The typed import, bake or verify error; [`BakeError::InvalidInput`] when the bytes are not four
/// parts or the bake fails its verification.
pub fn import_houdini_particle_parts(data: &[u8]) -> Result<()> {
    use vat_bake::interop::houdini::HOUDINI_PARTICLE_SIZE;
    use vat_bake::interop::stages::{
        Budget, SpriteParts, decode_houdini_particles as decode, lookup_mesh_from_bytes,
    };
    use vat_bake::sprite::{SpriteBakeOptions, SpriteFrames, bake_sprite, verify_sprite};
    let refuse =
        |problem: &str| BakeError::InvalidInput { part: "fuzz input".into(), problem: problem.into() };
    let parts = split_parts(data, 4).ok_or_else(|| refuse("is not four length-prefixed parts"))?;
    let info = houdini_data_of(parts[0], "Particles")?;
    let mut budget = Budget::new(FUZZ_MAX_MEMORY);
    let (pos_path, pos) = texture_of(parts[1], "fuzz_pos", &mut budget)?;
    if pos.width * pos.height > FUZZ_MAX_INTEROP_TEXELS {
        return Ok(());
    }
    let col = match parts[2] {
        [] => None,
        bytes => Some(texture_of(bytes, "fuzz_col", &mut budget).map(|(path, t)| (t, path))?),
    };
    let mesh_path = std::path::Path::new("fuzz_mesh.glb");
    let mesh = lookup_mesh_from_bytes(parts[3], mesh_path, &mut budget)?;
    let parts = SpriteParts {
        name: "fuzz",
        data: &info,
        json_path: std::path::Path::new("fuzz_data.json"),
        mesh_path,
        mesh: &mesh,
        pos_path: &pos_path,
        pos,
        col,
        card_size: HOUDINI_PARTICLE_SIZE,
    };
    let imported = decode(parts)?;
    if imported.frame_count() > FUZZ_MAX_INTEROP_FRAMES {
        return Ok(());
    }
    let options = SpriteBakeOptions { max_texture_dim: FUZZ_MAX_TEXTURE_DIM, looping: true };
    let (bytes, _) = bake_sprite(&imported, &options)?;
    let asset = Asset::parse(&bytes)?;
    if !verify_sprite(&asset, &imported, true)?.passed {
        return Err(refuse("its sprite bake failed its verification"));
    }
    if let Err(e) = load_vat(&bytes) {
        panic!("the sprite baker wrote a .vat file its reader refuses: {e}");
    }
    Ok(())
}

/// A small valid [`import_houdini_dynamic_parts`] input: VAT 3's layout of a ribbon of 1 to 3
/// quads over 3 frames ([`crate::interop_fixtures::houdini_dynamic_fixture`]), 8-bit PNGs when
/// not `hdr`, float EXRs when it is. The seeds of the `houdini_dynamic_import` corpus.
pub fn houdini_dynamic_seed(hdr: bool) -> Vec<u8> {
    let f = crate::interop_fixtures::houdini_dynamic_fixture(3, hdr);
    join_parts(&[&f.json, &f.lookup, &f.pos, &f.rot, &f.glb])
}

/// A small valid [`import_houdini_particle_parts`] input: VAT 3's layout of 3 square cards over 3
/// frames in a 2-column texture, one card hidden by scale 0 and one parked at the origin
/// ([`crate::interop_fixtures::houdini_particle_fixture`]), 8-bit PNGs when not `hdr`, float
/// EXRs when it is. The seeds of the `houdini_particle_import` corpus.
pub fn houdini_particle_seed(hdr: bool) -> Vec<u8> {
    let f = crate::interop_fixtures::houdini_particle_fixture(3, 2, 3, hdr);
    join_parts(&[&f.json, &f.pos, &f.col, &f.glb])
}

/// Joins parts into one input: each but the last as `[u32 LE length][bytes]`, the last as it is
/// ([`openvat_parts`] is the three-part case; a Houdini rigid-body input has four: `_data.json`,
/// position texture, rotation texture, mesh).
pub fn join_parts(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 < parts.len() {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
        }
        out.extend_from_slice(part);
    }
    out
}

/// Splits a [`join_parts`] input into `n` parts; `None` when it is not one.
pub fn split_parts(data: &[u8], n: usize) -> Option<Vec<&[u8]>> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = data;
    for _ in 1..n {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        parts.push(rest.get(4..4usize.checked_add(len)?)?);
        rest = &rest[4 + len..];
    }
    parts.push(rest);
    Some(parts)
}

/// A SideFX Labs VAT 3 rigid-body bake made here, with the values it was made from: cubes tumbling
/// and falling, one texel per piece per frame (HDR: 32-bit float RGBA EXRs), written as VAT 3's ROP
/// lays it out (see [`vat_bake::interop::houdini`]). For tests, the fuzz seed and the bad-input corpus.
#[derive(Debug, Clone)]
pub struct HoudiniRigidFixture {
    /// `_data.json`.
    pub json: Vec<u8>,
    /// `_pos.exr`.
    pub pos_exr: Vec<u8>,
    /// `_rot.exr`.
    pub rot_exr: Vec<u8>,
    /// `_mesh.glb`.
    pub glb: Vec<u8>,
    /// Texture width and height.
    pub size: (usize, usize),
    /// The position and rotation texels, rows top to bottom, as in the files.
    pub pos_texels: Vec<[f32; 4]>,
    /// See `pos_texels`.
    pub rot_texels: Vec<[f32; 4]>,
    /// Mesh positions, normals and `TEXCOORD_1..=3`, as in the glb (the last 6 vertices are bounds
    /// extenders).
    pub positions: Vec<[f32; 3]>,
    /// See `positions`.
    pub normals: Vec<[f32; 3]>,
    /// See `positions`.
    pub uv1: Vec<[f32; 2]>,
    /// See `positions`.
    pub uv2: Vec<[f32; 2]>,
    /// See `positions`.
    pub uv3: Vec<[f32; 2]>,
    /// The glb's triangles.
    pub indices: Vec<u32>,
    /// Frames and rate.
    pub frames: usize,
    /// `Houdini FPS`.
    pub fps: f32,
}

impl HoudiniRigidFixture {
    /// The four [`import_houdini_parts`] parts.
    pub fn parts(&self) -> Vec<u8> {
        join_parts(&[&self.json, &self.pos_exr, &self.rot_exr, &self.glb])
    }

    /// Writes the bake as `dir/<name>_{data.json,pos.exr,rot.exr,mesh.glb}`.
    ///
    /// # Errors
    /// [`BakeError::Io`] when a file cannot be written.
    pub fn write(&self, dir: &std::path::Path, name: &str) -> Result<()> {
        for (suffix, bytes) in [
            ("data.json", &self.json),
            ("pos.exr", &self.pos_exr),
            ("rot.exr", &self.rot_exr),
            ("mesh.glb", &self.glb),
        ] {
            let path = dir.join(format!("{name}_{suffix}"));
            std::fs::write(&path, bytes).map_err(|e| BakeError::Io { path, source: e })?;
        }
        Ok(())
    }
}

/// [`HoudiniRigidFixture`] of `pieces` cubes in `columns` texture columns (rows per frame:
/// `ceil(pieces / columns)`) over `frames` frames at 24 fps. Piece 0 turns 170 degrees a frame when
/// `fast` (more than nlerp can follow at the source rate), the others 3 to 40 degrees.
pub fn houdini_rigid_fixture(
    pieces: usize,
    columns: usize,
    frames: usize,
    fast: bool,
) -> HoudiniRigidFixture {
    use glam::{Quat, Vec3};
    let columns = columns.clamp(1, pieces.max(1));
    let rows = pieces.div_ceil(columns).max(1);
    let (w, h) = (columns, frames * rows);
    let fps = 24.0f32;
    let mut f = HoudiniRigidFixture {
        json: Vec::new(),
        pos_exr: Vec::new(),
        rot_exr: Vec::new(),
        glb: Vec::new(),
        size: (w, h),
        pos_texels: vec![[0.0; 4]; w * h],
        rot_texels: vec![[0.0; 4]; w * h],
        positions: Vec::new(),
        normals: Vec::new(),
        uv1: Vec::new(),
        uv2: Vec::new(),
        uv3: Vec::new(),
        indices: Vec::new(),
        frames,
        fps,
    };
    let mut indices = Vec::new();
    let mut lo = Vec3::splat(f32::MAX);
    let mut hi = Vec3::splat(f32::MIN);
    for p in 0..pieces {
        let (col, row) = (p % columns, p / columns);
        let half = 0.1 + 0.02 * (p % 3) as f32;
        let centre = Vec3::new((p % 4) as f32 * 0.5, 1.0 + 0.3 * (p / 4) as f32, (p % 3) as f32 * 0.4 - 0.4);
        let axis = Vec3::new(1.0 + p as f32, 2.0, 0.5 - (p % 2) as f32).normalize();
        let turn_deg = if fast && p == 0 { 170.0 } else { 3.0 + (p * 7 % 38) as f32 };
        // A cube's 6 faces, 4 vertices each (flat normals).
        for (axis_i, sign) in (0..3).flat_map(|a| [(a, 1.0f32), (a, -1.0)]) {
            let n = Vec3::from(std::array::from_fn::<f32, 3, _>(|i| if i == axis_i { sign } else { 0.0 }));
            let (u, v) = (
                Vec3::from(std::array::from_fn::<f32, 3, _>(|i| f32::from(u8::from(i == (axis_i + 1) % 3)))),
                Vec3::from(std::array::from_fn::<f32, 3, _>(|i| f32::from(u8::from(i == (axis_i + 2) % 3)))),
            );
            let base = f.positions.len() as u32;
            for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                let pos = centre + (n + u * a + v * b) * half;
                lo = lo.min(pos);
                hi = hi.max(pos);
                f.positions.push(pos.to_array());
                f.normals.push(n.to_array());
                f.uv1.push([(col as f32 + 0.5) / w as f32, (row as f32 + 0.5) / h as f32]);
                f.uv2.push([centre.x, 0.0]);
                f.uv3.push([centre.y, centre.z]);
            }
            let quad = if sign > 0.0 { [0, 1, 2, 0, 2, 3] } else { [0, 2, 1, 0, 3, 2] };
            indices.extend(quad.iter().map(|i| base + i));
        }
        for fr in 0..frames {
            let t = fr as f32 / fps;
            let pivot = centre + Vec3::new(0.05 * p as f32 * t, -0.5 * 9.81 * t * t * 0.1, 0.1 * t);
            let q = Quat::from_axis_angle(axis, (turn_deg * fr as f32).to_radians());
            let q = q.normalize();
            // Smallest three: the largest component is left out (made positive), its index in alpha.
            let c = [q.w, q.x, q.y, q.z];
            let idx = (0..4).max_by(|&a, &b| c[a].abs().total_cmp(&c[b].abs())).unwrap_or(0);
            let q = if c[idx] < 0.0 { -q } else { q };
            let stored = match idx {
                1 => [q.w, q.y, q.z],
                2 => [q.x, q.w, q.z],
                3 => [q.x, q.y, q.w],
                _ => [q.x, q.y, q.z],
            };
            let texel = (row + fr * rows) * w + col;
            f.pos_texels[texel] = [pivot.x, pivot.y, pivot.z, idx as f32 / 4.0];
            f.rot_texels[texel] = [stored[0], stored[1], stored[2], turn_deg / 360.0];
            lo = lo.min(pivot - Vec3::splat(0.3));
            hi = hi.max(pivot + Vec3::splat(0.3));
        }
    }
    // Bounds extenders: two thin triangles on the bounds' corners reading no texel.
    let lo = (lo * 10.0).floor() / 10.0;
    let hi = (hi * 10.0).ceil() / 10.0;
    for corner in [hi, lo] {
        let base = f.positions.len() as u32;
        for d in [Vec3::ZERO, Vec3::new(0.0, -0.01, 0.0), Vec3::new(0.0, 0.0, -0.01)] {
            f.positions.push((corner + d * corner.signum()).to_array());
            f.normals.push([0.0, 1.0, 0.0]);
            f.uv1.push([0.0, 1.0]);
            f.uv2.push([0.0, 0.0]);
            f.uv3.push([0.0, 0.0]);
        }
        indices.extend([base, base + 1, base + 2]);
    }
    let positions: Vec<Vec3> = f.positions.iter().map(|p| Vec3::from(*p)).collect();
    let normals: Vec<Vec3> = f.normals.iter().map(|p| Vec3::from(*p)).collect();
    f.glb = vat_bake::interop::stages::lookup_glb_with_sets(
        "fuzz",
        &positions,
        &normals,
        &[None, Some(&f.uv1), Some(&f.uv2), Some(&f.uv3)],
        &indices,
    )
    .unwrap_or_default();
    f.indices = indices;
    f.pos_exr = vat_bake::interop::stages::encode_rgba_exr32(w, h, &f.pos_texels).unwrap_or_default();
    f.rot_exr = vat_bake::interop::stages::encode_rgba_exr32(w, h, &f.rot_texels).unwrap_or_default();
    f.json = format!(
        r#"[{{"Axis System": "Right-Handed Y-Up", "Bound Max X": {}, "Bound Max Y": {}, "Bound Max Z": {},
  "Bound Min X": {}, "Bound Min Y": {}, "Bound Min Z": {}, "Frame Count": {frames}, "Houdini FPS": {fps},
  "Name": "fuzz", "Spare Color Texture": 0, "Two Position Textures": 0, "Use HDR Textures": 1,
  "VAT Type": "Rigidbody", "Vertex Count": 8}}]"#,
        hi.x, hi.y, hi.z, lo.x, lo.y, lo.z
    )
    .into_bytes();
    f
}

/// A small valid rigid-body [`import_houdini_parts`] input: three cubes over 4 frames, one turning
/// fast. The seed of the `houdini_import` corpus's rigid cases.
pub fn houdini_rigid_seed() -> Vec<u8> {
    houdini_rigid_fixture(3, 3, 4, true).parts()
}

/// A small valid [`import_houdini_parts`] input: one quad (4 points, 2 triangles) moving over 3
/// frames in a 16-bit PNG, with its `_data.json`. The seed of the `houdini_import` corpus.
pub fn houdini_seed() -> Vec<u8> {
    houdini_quad(3)
}

/// [`houdini_seed`] with a position texture of `rows` rows (3 match its `Frame Count`; any other
/// count is a texture that disagrees with it).
pub fn houdini_quad(rows: usize) -> Vec<u8> {
    use glam::Vec3;
    let positions = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
    let normals = [Vec3::Z; 4];
    let lookup: Vec<[f32; 2]> = (0..4).map(|c| [(c as f32 + 0.5) / 4.0, 0.5 / rows.max(1) as f32]).collect();
    let glb = vat_bake::interop::stages::lookup_glb(
        "fuzz",
        &positions,
        &normals,
        None,
        &lookup,
        &[0, 1, 2, 0, 2, 3],
    )
    .unwrap_or_default();
    let rgb: Vec<[f32; 3]> =
        (0..4 * rows).map(|i| [(i / 4) as f32 / 2.0, 0.5, (i % 4) as f32 / 3.0]).collect();
    let png =
        vat_bake::interop::stages::encode_texture(vat_bake::interop::TextureFormat::Png16, 4, rows, &rgb)
            .unwrap_or_default();
    let json = br#"[{"VAT Type": "Softbody", "Bound Min X": 0, "Bound Min Y": -0.5, "Bound Min Z": 0,
  "Bound Max X": 1, "Bound Max Y": 0.5, "Bound Max Z": 0.3, "Frame Count": 3, "Houdini FPS": 24,
  "Use HDR Textures": 0}]"#;
    openvat_parts(json, &png, &glb)
}

/// Reads `data` as one sprite frame, PLY when it starts with `ply`, else CSV text
/// ([`vat_bake::sprite::read_sprite_ply`], [`vat_bake::sprite::read_sprite_csv`]), then bakes it as a
/// looping two-frame sequence (the frame, then the same particles 1 cm higher), reads the file back
/// and verifies it against the frames ([`vat_bake::sprite::verify_sprite`]). At most 64 MiB of input.
///
/// # Errors
/// The typed parse, bake or verify error; [`BakeError::InvalidInput`] for input that is neither
/// PLY nor UTF-8, and for a bake that fails verification.
pub fn sprite_frame_bake(data: &[u8]) -> Result<()> {
    use vat_bake::sprite::{
        SpriteBakeOptions, SpriteSequence, bake_sprite, read_sprite_csv, read_sprite_ply, verify_sprite,
    };
    let refuse =
        |problem: &str| BakeError::InvalidInput { part: "fuzz sprite frame".into(), problem: problem.into() };
    if data.len() as u64 > FUZZ_MAX_MEMORY {
        return Err(refuse("larger than the fuzz budget"));
    }
    let (frame, _notes) = if data.starts_with(b"ply") {
        read_sprite_ply(data, "fuzz.ply")?
    } else {
        let text = std::str::from_utf8(data).map_err(|_| refuse("neither PLY nor UTF-8 text"))?;
        read_sprite_csv(text, "fuzz.csv")?
    };
    let mut higher = frame.clone();
    for p in &mut higher.particles {
        p.particle.position[1] += 0.01;
    }
    let source = SpriteSequence { name: "fuzz".into(), fps: 10.0, frames: vec![frame, higher] };
    let options = SpriteBakeOptions { max_texture_dim: FUZZ_MAX_TEXTURE_DIM, looping: true };
    let (bytes, _) = bake_sprite(&source, &options)?;
    let asset = Asset::parse(&bytes)?;
    if !verify_sprite(&asset, &source, true)?.passed {
        return Err(refuse("the bake failed its verification"));
    }
    Ok(())
}
