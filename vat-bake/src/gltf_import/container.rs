//! The file around the scene: the GLB container, the JSON, structural validation, extensions and buffers.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine as _;
use gltf::json;
use gltf::json::validation::{Checked, Validate};

use super::Ctx;
use crate::Result;

/// GLB header: magic, version, total length (3 x u32).
const GLB_HEADER_BYTES: usize = 12;
/// GLB chunk header: chunk length, chunk type (2 x u32).
const CHUNK_HEADER_BYTES: usize = 8;
const CHUNK_JSON: u32 = 0x4E4F_534A; // "JSON" little-endian
const CHUNK_BIN: u32 = 0x004E_4942; // "BIN\0" little-endian

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Splits a GLB into its JSON chunk and optional BIN chunk; a `.gltf` (anything not starting with the
/// GLB magic) is returned whole as JSON.
///
/// Parsed here rather than by `gltf::Glb`, which subtracts the header size from the declared length
/// unchecked (a panic on a truncated or forged header).
pub(super) fn split_glb<'b>(ctx: &Ctx<'_>, bytes: &'b [u8]) -> Result<(&'b [u8], Option<&'b [u8]>)> {
    if !bytes.starts_with(b"glTF") {
        return Ok((bytes, None));
    }
    let part = "GLB header";
    let (Some(version), Some(length)) = (read_u32(bytes, 4), read_u32(bytes, 8)) else {
        return Err(ctx.err(
            part,
            format!("truncated: the header needs {GLB_HEADER_BYTES} bytes, the file has {}", bytes.len()),
        ));
    };
    if version != 2 {
        return Err(ctx.err(part, format!("GLB version {version}; only version 2 is supported")));
    }
    let length = length as usize;
    if length > bytes.len() {
        return Err(
            ctx.err(part, format!("truncated: the header says {length} bytes, the file has {}", bytes.len()))
        );
    }
    if length < GLB_HEADER_BYTES + CHUNK_HEADER_BYTES {
        return Err(ctx.err(part, format!("declared length {length} is too small to hold a JSON chunk")));
    }
    // Bytes after the declared length are not part of the GLB.
    let body = &bytes[..length];

    let (json, next) = chunk(ctx, body, GLB_HEADER_BYTES, "JSON chunk")?;
    if json.0 != CHUNK_JSON {
        return Err(ctx.err("JSON chunk", format!("the first chunk has type {:#010x}, not JSON", json.0)));
    }
    // Later chunks: the first BIN chunk is buffer 0; chunks of unknown type are skipped (per spec).
    let mut at = next;
    let mut bin = None;
    while at < body.len() {
        let ((ty, data), next) = chunk(ctx, body, at, "BIN chunk")?;
        if ty == CHUNK_BIN && bin.is_none() {
            bin = Some(data);
        }
        at = next;
    }
    Ok((json.1, bin))
}

/// Reads the chunk whose header starts at `at`: `((type, data), offset of the next chunk)`.
fn chunk<'b>(ctx: &Ctx<'_>, body: &'b [u8], at: usize, part: &str) -> Result<((u32, &'b [u8]), usize)> {
    let (Some(length), Some(ty)) = (read_u32(body, at), read_u32(body, at + 4)) else {
        return Err(ctx.err(
            part,
            format!("truncated: the chunk header at byte {at} needs {CHUNK_HEADER_BYTES} bytes"),
        ));
    };
    let start = at + CHUNK_HEADER_BYTES;
    let end = start.checked_add(length as usize).filter(|&e| e <= body.len()).ok_or_else(|| {
        ctx.err(
            part,
            format!(
                "truncated: the chunk at byte {at} declares {length} bytes, only {} remain",
                body.len() - start
            ),
        )
    })?;
    // Chunks start on 4-byte boundaries; a missing pad at the very end is tolerated.
    let next = end.div_ceil(4) * 4;
    Ok(((ty, &body[start..end]), next.min(body.len())))
}

/// Parses the glTF JSON.
pub(super) fn parse_json(ctx: &Ctx<'_>, json_bytes: &[u8]) -> Result<json::Root> {
    // A UTF-8 byte order mark is not JSON; editors add one, and readers may ignore it.
    let json_bytes = json_bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(json_bytes);
    json::deserialize::from_slice(json_bytes)
        .map_err(|e| ctx.err("JSON", format!("not valid glTF JSON: {e}")))
}

/// Rejects files that do not declare glTF 2 (`asset.version` `"2.<minor>"`, and a `minVersion`, when
/// present, of 2.0 at most): glTF 1.0 is a different format.
pub(super) fn check_version(ctx: &Ctx<'_>, root: &json::Root) -> Result<()> {
    let is_v2 = |v: &str| {
        v.split_once('.').is_some_and(|(major, minor)| major == "2" && minor.parse::<u32>().is_ok())
    };
    let version = &root.asset.version;
    if !is_v2(version) {
        return Err(ctx.err(
            "asset.version",
            format!("glTF version {version:?}; only glTF 2.x is supported (re-export as glTF 2.0)"),
        ));
    }
    if let Some(min) = root.asset.min_version.as_deref().filter(|m| *m != "2.0") {
        return Err(ctx.err(
            "asset.minVersion",
            format!("the file needs glTF {min:?}; this importer implements glTF 2.0"),
        ));
    }
    Ok(())
}

/// The name of mesh `index` for messages: `"Body"` when named, else its index.
pub(super) fn mesh_label(name: Option<&str>, index: usize) -> String {
    match name {
        Some(n) if !n.is_empty() => format!("{n:?}"),
        _ => index.to_string(),
    }
}

/// Checks every primitive has an existing POSITION accessor (before structural validation: for a message
/// that names the mesh, and because that validation indexes it unchecked).
pub(super) fn check_positions(ctx: &Ctx<'_>, root: &json::Root) -> Result<()> {
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            let part = || format!("mesh {} primitive {p}", mesh_label(mesh.name.as_deref(), m));
            match prim.attributes.get(&Checked::Valid(json::mesh::Semantic::Positions)) {
                None => return Err(ctx.err(part(), "missing POSITION")),
                // gltf-json's validation indexes the POSITION accessor unchecked.
                Some(index) if index.value() >= root.accessors.len() => {
                    return Err(ctx.err(
                        part(),
                        format!(
                            "POSITION accessor {index} does not exist ({} accessors)",
                            root.accessors.len()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Structural validation (indices in range, known enum values) so that the `gltf` crate's accessors,
/// which unwrap, cannot panic later. Ignored, because they do not affect what vat reads:
/// - POSITION `min`/`max` (required by the spec, but vat computes its own bounds);
/// - unknown required extensions (materials, textures, lights: vat bakes geometry only);
/// - attribute names outside the spec (attributes vat does not read);
/// - a texture without an image `source` (allowed by the spec; the material keeps its factors and
///   the texture is left out with a note);
/// - a missing `bufferView` on the accessors of `draco` (a Draco primitive's accessors describe the
///   decoded stream and have none).
pub(super) fn validate(ctx: &Ctx<'_>, root: &json::Root, draco: &BTreeSet<usize>) -> Result<()> {
    let mut problems: Vec<(String, json::validation::Error)> = Vec::new();
    let mut report = |path: &dyn Fn() -> json::Path, error| problems.push((path().to_string(), error));
    root.validate(root, json::Path::new, &mut report);
    // gltf-json's `Animation::validate` skips channel targets (node index, path), which the `gltf`
    // crate later unwraps.
    for (a, animation) in root.animations.iter().enumerate() {
        for (c, channel) in animation.channels.iter().enumerate() {
            let path =
                || json::Path::new().field("animations").index(a).field("channels").index(c).field("target");
            channel.target.validate(root, path, &mut report);
        }
    }
    problems.retain(|(path, error)| {
        use json::validation::Error as E;
        let position_bounds =
            path.contains("[\"POSITION\"]") && (path.ends_with(".min") || path.ends_with(".max"));
        let unknown_extension = path.starts_with("extensionsRequired") && matches!(error, E::Unsupported);
        let unknown_attribute = path.contains(".attributes[") && matches!(error, E::Invalid);
        // A texture without an image `source` is valid glTF (its image may come from an extension,
        // or there is none): the material import leaves it out with a note.
        let sourceless_texture =
            path.starts_with("textures[") && path.ends_with("].source") && matches!(error, E::Missing);
        let draco_data = matches!(error, E::Missing)
            && path
                .strip_prefix("accessors[")
                .and_then(|rest| rest.strip_suffix("].bufferView"))
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| draco.contains(&i));
        !(position_bounds || unknown_extension || unknown_attribute || sourceless_texture || draco_data)
    });
    match problems.split_first() {
        None => Ok(()),
        Some(((path, error), rest)) => {
            let more =
                if rest.is_empty() { String::new() } else { format!(" (and {} more problems)", rest.len()) };
            Err(ctx.err(path.clone(), format!("{error}{more}")))
        }
    }
}

/// Where a glTF's external files are read from: its folder (opened through vat-core's read gate
/// the first time a file is needed, so files without external resources never touch the file
/// system) and the wider folder they may lie in (`--resource-root`).
pub(super) struct Resources<'a> {
    base_dir: Option<&'a Path>,
    root: Option<&'a Path>,
    folder: std::cell::OnceCell<std::result::Result<vat_core::files::InputFolder, vat_core::Error>>,
}

impl<'a> Resources<'a> {
    pub(super) fn new(base_dir: Option<&'a Path>, root: Option<&'a Path>) -> Self {
        Self { base_dir, root, folder: std::cell::OnceCell::new() }
    }

    /// The folder, or why there is none (no base folder given, or the gate refused it).
    pub(super) fn folder(&self) -> std::result::Result<&vat_core::files::InputFolder, String> {
        let Some(dir) = self.base_dir else {
            return Err("refers to an external file but no base directory was given to resolve it".into());
        };
        let opened = self.folder.get_or_init(|| {
            let folder =
                vat_core::files::InputFolder::open(dir)?.with_hint(" or widen it with --resource-root");
            match self.root {
                Some(root) => folder.with_root(root, " or widen it with --resource-root"),
                None => Ok(folder),
            }
        });
        opened.as_ref().map_err(|e| format!("cannot open its folder: {e}"))
    }
}

/// Loads every buffer: the GLB BIN chunk, `data:` URIs (base64), or files read through vat-core's
/// read gate from the glTF's folder, confined to it or to `--resource-root` ([`Resources`]). Each
/// must hold at least its declared `byteLength`; a file is read up to that many bytes only (charged
/// first), whatever its metadata says. A buffer `needed` says no to (the fallback of compressed
/// views, see [`super::meshopt_compression::needed_buffers`]) is left empty and never read.
pub(super) fn load_buffers<'b>(
    ctx: &Ctx<'_>,
    doc: &gltf::Document,
    bin: Option<&'b [u8]>,
    resources: &Resources<'_>,
    needed: &[bool],
) -> Result<Vec<Cow<'b, [u8]>>> {
    let mut buffers = Vec::new();
    for buffer in doc.buffers() {
        let i = buffer.index();
        if !needed.get(i).copied().unwrap_or(true) {
            buffers.push(Cow::Borrowed(&[][..]));
            continue;
        }
        let data: Cow<'b, [u8]> = match buffer.source() {
            gltf::buffer::Source::Bin => match (i, bin) {
                (0, Some(bin)) => Cow::Borrowed(bin),
                _ => {
                    return Err(
                        ctx.err(format!("buffer {i}"), "has no uri and there is no GLB binary chunk for it")
                    );
                }
            },
            gltf::buffer::Source::Uri(uri) => {
                let part = format!("buffer {i} ({})", shorten(uri));
                if let Some(rest) = uri.strip_prefix("data:") {
                    let (_, payload) = rest.split_once(";base64,").ok_or_else(|| {
                        ctx.err(
                            &part,
                            "data URI is not base64; only `data:...;base64,` buffers are supported",
                        )
                    })?;
                    ctx.charge(&part, (payload.len() as u64).div_ceil(4) * 3)?;
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(payload.trim_end())
                        .map_err(|e| ctx.err(&part, format!("invalid base64 data URI: {e}")))?;
                    Cow::Owned(bytes)
                } else {
                    // What the text alone decides (a scheme, an absolute path) before any folder.
                    let relative =
                        vat_core::files::decode_uri(uri).map_err(|e| ctx.err(&part, e.to_string()))?;
                    let folder = resources.folder().map_err(|e| ctx.err(&part, e))?;
                    // Read no more than the declared length (charged before reading): the bound comes
                    // from the bytes read, never from the file's metadata.
                    let declared = buffer.length() as u64;
                    ctx.charge(&part, declared)?;
                    let bytes =
                        folder.read_prefix(&relative, declared).map_err(|e| ctx.err(&part, e.to_string()))?;
                    Cow::Owned(bytes)
                }
            }
        };
        if data.len() < buffer.length() {
            return Err(ctx.err(
                format!("buffer {i}"),
                format!("holds {} bytes but its byteLength is {}", data.len(), buffer.length()),
            ));
        }
        buffers.push(data);
    }
    Ok(buffers)
}

/// A URI for messages: data URIs cut to their header.
pub(super) fn shorten(uri: &str) -> String {
    if uri.starts_with("data:") {
        let head: String = uri.chars().take(40).collect();
        format!("{head}...")
    } else {
        format!("{uri:?}")
    }
}
