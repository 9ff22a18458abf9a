//! `EXT_meshopt_compression` and `KHR_meshopt_compression`: buffer views compressed by
//! meshoptimizer, decoded with the `meshopt` crate (the maintained bindings of meshoptimizer's
//! own decoder) before any accessor is read.
//!
//! The two extensions share one JSON layout and one bitstream (the KHR one adds the version 1
//! attribute stream and the COLOR filter, which the decoder reads whichever name the file uses).
//! Modes ATTRIBUTES, TRIANGLES and INDICES; filters NONE, OCTAHEDRAL, QUATERNION, EXPONENTIAL and
//! COLOR. Every decoded view goes into one new buffer and its bufferView is pointed there, so the
//! accessors read plain data; a buffer that only compressed views refer to (the `fallback`
//! placeholder, often without a `uri`) is never read. Every constraint the specs put on a view is
//! checked before the decoder sees it, and a stream the decoder refuses is a [`BakeError::Gltf`]
//! naming the view, never a panic.
//!
//! [`BakeError::Gltf`]: crate::BakeError::Gltf

use std::borrow::Cow;

use gltf::json;
use serde_json::Value;

use super::Ctx;
use crate::Result;

/// The extension names, the ratified one first (a view should carry only one).
const NAMES: [&str; 2] = ["KHR_meshopt_compression", "EXT_meshopt_compression"];

/// How a compressed stream is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Attributes,
    Triangles,
    Indices,
}

impl Mode {
    /// The spec's name.
    fn name(self) -> &'static str {
        match self {
            Mode::Attributes => "ATTRIBUTES",
            Mode::Triangles => "TRIANGLES",
            Mode::Indices => "INDICES",
        }
    }
}

/// What is applied to decoded attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    None,
    Octahedral,
    Quaternion,
    Exponential,
    Color,
}

/// One compressed buffer view.
#[derive(Debug, Clone)]
pub(super) struct Compressed {
    /// The bufferView.
    view: usize,
    /// Which extension name the view uses.
    name: &'static str,
    /// The buffer holding the compressed bytes, and where.
    buffer: usize,
    offset: usize,
    length: usize,
    stride: usize,
    count: usize,
    mode: Mode,
    filter: Filter,
}

impl Compressed {
    fn part(&self) -> String {
        format!("buffer view {} ({})", self.view, self.name)
    }
}

/// The compressed buffer views of the document (`raw` is its JSON, which keeps the extension
/// objects the `gltf` crate drops), each checked against the spec's rules for its mode and
/// filter.
pub(super) fn compressed_views(
    ctx: &Ctx<'_>,
    raw: Option<&Value>,
    doc: &gltf::Document,
) -> Result<Vec<Compressed>> {
    let Some(raw) = raw else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for view in doc.views() {
        let i = view.index();
        let extensions = &raw["bufferViews"][i]["extensions"];
        let Some((name, ext)) = NAMES.iter().find_map(|&n| extensions.get(n).map(|e| (n, e))) else {
            continue;
        };
        let part = format!("buffer view {i} ({name})");
        let field = |key: &str, default: Option<u64>| -> Result<usize> {
            match (ext.get(key), default) {
                (None, Some(d)) => Ok(d as usize),
                (None, None) => Err(ctx.err(&part, format!("has no `{key}`"))),
                (Some(v), _) => v
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| ctx.err(&part, format!("`{key}` is {v}, not a non-negative integer"))),
            }
        };
        let buffer = field("buffer", None)?;
        let offset = field("byteOffset", Some(0))?;
        let length = field("byteLength", None)?;
        let stride = field("byteStride", None)?;
        let count = field("count", None)?;
        let mode = match ext.get("mode").and_then(Value::as_str) {
            Some("ATTRIBUTES") => Mode::Attributes,
            Some("TRIANGLES") => Mode::Triangles,
            Some("INDICES") => Mode::Indices,
            _ => {
                let mode = ext.get("mode").map_or_else(|| "missing".to_owned(), Value::to_string);
                return Err(ctx.err(
                    &part,
                    format!("mode {mode} is none of \"ATTRIBUTES\", \"TRIANGLES\", \"INDICES\""),
                ));
            }
        };
        let filter = match ext.get("filter").map(Value::as_str) {
            None | Some(Some("NONE")) => Filter::None,
            Some(Some("OCTAHEDRAL")) => Filter::Octahedral,
            Some(Some("QUATERNION")) => Filter::Quaternion,
            Some(Some("EXPONENTIAL")) => Filter::Exponential,
            Some(Some("COLOR")) => Filter::Color,
            Some(_) => {
                let filter = ext.get("filter").map_or_else(String::new, Value::to_string);
                return Err(ctx.err(
                    &part,
                    format!(
                        "filter {filter} is none of \"NONE\", \"OCTAHEDRAL\", \"QUATERNION\", \"EXPONENTIAL\", \
                         \"COLOR\""
                    ),
                ));
            }
        };
        let compressed = Compressed { view: i, name, buffer, offset, length, stride, count, mode, filter };
        check(ctx, &compressed, &view)?;
        out.push(compressed);
    }
    Ok(out)
}

/// The spec's rules for one compressed view (what the decoder would otherwise assert).
fn check(ctx: &Ctx<'_>, c: &Compressed, view: &gltf::buffer::View<'_>) -> Result<()> {
    let problem = |text: String| Err(ctx.err(c.part(), text));
    let (stride, count) = (c.stride, c.count);
    if count == 0 {
        return problem("count is 0".into());
    }
    let rule = match (c.mode, c.filter) {
        (Mode::Attributes, _) if stride % 4 != 0 || !(4..=256).contains(&stride) => {
            "ATTRIBUTES needs a byteStride that is a multiple of 4 in 4..=256"
        }
        (Mode::Triangles, _) if count % 3 != 0 => "TRIANGLES needs a count that is a multiple of 3",
        (Mode::Triangles | Mode::Indices, _) if stride != 2 && stride != 4 => {
            "TRIANGLES and INDICES need a byteStride of 2 or 4"
        }
        (Mode::Triangles | Mode::Indices, f) if f != Filter::None => "TRIANGLES and INDICES take no filter",
        (_, Filter::Octahedral | Filter::Color) if stride != 4 && stride != 8 => {
            "OCTAHEDRAL and COLOR need a byteStride of 4 or 8"
        }
        (_, Filter::Quaternion) if stride != 8 => "QUATERNION needs a byteStride of 8",
        _ if stride.checked_mul(count) != Some(view.length()) => {
            return problem(format!(
                "byteStride {stride} x count {count} is not the bufferView's byteLength {}",
                view.length()
            ));
        }
        _ => return Ok(()),
    };
    problem(format!("{rule} (byteStride {stride}, count {count})"))
}

/// Per buffer: whether it is to be read. A buffer that compressed views name as their parent and
/// nothing else refers to (the uncompressed fallback, or a placeholder without data) is not.
pub(super) fn needed_buffers(doc: &gltf::Document, compressed: &[Compressed]) -> Vec<bool> {
    let mut needed = vec![true; doc.buffers().len()];
    if compressed.is_empty() {
        return needed;
    }
    let mut parent_only = vec![false; needed.len()];
    let mut referenced = vec![false; needed.len()];
    for view in doc.views() {
        let b = view.buffer().index();
        match compressed.iter().find(|c| c.view == view.index()) {
            Some(c) => {
                parent_only[b] = true;
                if let Some(r) = referenced.get_mut(c.buffer) {
                    *r = true;
                }
            }
            None => referenced[b] = true,
        }
    }
    for (b, need) in needed.iter_mut().enumerate() {
        *need = referenced[b] || !parent_only[b];
    }
    needed
}

/// Decodes every compressed view into one new buffer appended to `buffers`, and returns the
/// document with those views pointing there.
pub(super) fn decode<'b>(
    ctx: &Ctx<'_>,
    doc: gltf::Document,
    buffers: &mut Vec<Cow<'b, [u8]>>,
    compressed: &[Compressed],
) -> Result<gltf::Document> {
    if compressed.is_empty() {
        return Ok(doc);
    }
    // The new buffer, charged before it is allocated (each view's size is its bufferView's
    // byteLength, checked; their sum is not).
    let total = compressed
        .iter()
        .fold(0u64, |sum, c| sum.saturating_add((c.stride * c.count).next_multiple_of(4) as u64));
    ctx.charge("the decoded meshopt buffer views", total)?;
    let mut decoded: Vec<u8> = Vec::with_capacity(total as usize);
    let mut placed = Vec::with_capacity(compressed.len());
    for c in compressed {
        let source = buffers.get(c.buffer).ok_or_else(|| {
            ctx.err(c.part(), format!("buffer {} does not exist ({} buffers)", c.buffer, buffers.len()))
        })?;
        let bytes =
            c.offset.checked_add(c.length).and_then(|end| source.get(c.offset..end)).ok_or_else(|| {
                ctx.err(
                    c.part(),
                    format!(
                        "its compressed bytes {}..+{} run past the end of buffer {} ({} bytes)",
                        c.offset,
                        c.length,
                        c.buffer,
                        source.len()
                    ),
                )
            })?;
        let size = (c.stride * c.count) as u64;
        // The decoder's output (and its copy while a filter or conversion runs), freed once it is
        // in the new buffer.
        ctx.charge(&c.part(), size.saturating_mul(2))?;
        let data = decode_view(c, bytes).map_err(|e| {
            ctx.err(
                c.part(),
                format!(
                    "the compressed {} stream does not decode ({e}): the file is corrupt or truncated; \
                     re-export it",
                    c.mode.name()
                ),
            )
        })?;
        decoded.resize(decoded.len().next_multiple_of(4), 0);
        placed.push((c.view, decoded.len()));
        decoded.extend_from_slice(&data);
        drop(data);
        ctx.release(size.saturating_mul(2));
    }
    let mut root = doc.into_json();
    let index = root.buffers.len();
    root.buffers.push(json::Buffer {
        byte_length: decoded.len().into(),
        name: Some("decoded meshopt views".into()),
        uri: None,
        extensions: None,
        extras: Default::default(),
    });
    for (view, offset) in placed {
        let view = &mut root.buffer_views[view];
        view.buffer = json::Index::new(index as u32);
        view.byte_offset = Some(offset.into());
    }
    buffers.push(Cow::Owned(decoded));
    Ok(gltf::Document::from_json_without_validation(root))
}

/// One element of `N` bytes, what the attribute decoder writes per vertex.
#[derive(Clone, Copy)]
struct Element<const N: usize>([u8; N]);

impl<const N: usize> Default for Element<N> {
    fn default() -> Self {
        Self([0; N])
    }
}

fn attributes<const N: usize>(encoded: &[u8], count: usize) -> meshopt::Result<Vec<u8>> {
    let elements: Vec<Element<N>> = meshopt::decode_vertex_buffer(encoded, count)?;
    Ok(elements.into_iter().flat_map(|e| e.0).collect())
}

/// `attributes::<stride>` for a stride checked to be a multiple of 4 in 4..=256.
macro_rules! by_stride {
    ($stride:expr, $encoded:expr, $count:expr, $($n:literal)*) => {
        match $stride {
            $($n => attributes::<$n>($encoded, $count),)*
            other => Err(meshopt::Error::Parse(format!("byteStride {other} is not decodable"))),
        }
    };
}

/// The decoded bytes of one view.
fn decode_view(c: &Compressed, encoded: &[u8]) -> meshopt::Result<Vec<u8>> {
    let mut data = match (c.mode, c.stride) {
        (Mode::Attributes, stride) => by_stride!(
            stride, encoded, c.count,
            4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 68 72 76 80 84 88 92 96 100 104 108 112 116 120
            124 128 132 136 140 144 148 152 156 160 164 168 172 176 180 184 188 192 196 200 204 208 212
            216 220 224 228 232 236 240 244 248 252 256
        )?,
        (Mode::Triangles, 2) => le16(meshopt::decode_index_buffer::<u16>(encoded, c.count)?),
        (Mode::Triangles, _) => le32(meshopt::decode_index_buffer::<u32>(encoded, c.count)?),
        (Mode::Indices, 2) => le16(meshopt::decode_index_sequence::<u16>(encoded, c.count)?),
        (Mode::Indices, _) => le32(meshopt::decode_index_sequence::<u32>(encoded, c.count)?),
    };
    match (c.filter, c.stride) {
        (Filter::None, _) => {}
        (Filter::Octahedral, 4) => filter_i8(&mut data, meshopt::decode_filter_oct::<i8>),
        (Filter::Octahedral, _) => filter_i16(&mut data, meshopt::decode_filter_oct::<i16>),
        (Filter::Color, 4) => filter_i8(&mut data, meshopt::decode_filter_color::<i8>),
        (Filter::Color, _) => filter_i16(&mut data, meshopt::decode_filter_color::<i16>),
        (Filter::Quaternion, _) => filter_i16(&mut data, meshopt::decode_filter_quat),
        (Filter::Exponential, _) => {
            // Each 32-bit value decodes on its own: one-component vectors cover any stride.
            let mut values: Vec<[u32; 1]> =
                data.chunks_exact(4).map(|b| [u32::from_le_bytes([b[0], b[1], b[2], b[3]])]).collect();
            meshopt::decode_filter_exp(&mut values);
            data = values.iter().flat_map(|v| v[0].to_le_bytes()).collect();
        }
    }
    Ok(data)
}

fn le16(values: Vec<u16>) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn le32(values: Vec<u32>) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Applies a filter over 4-byte elements of signed bytes, in place.
fn filter_i8(data: &mut [u8], filter: fn(&mut [[i8; 4]])) {
    let mut elements: Vec<[i8; 4]> =
        data.chunks_exact(4).map(|b| [b[0] as i8, b[1] as i8, b[2] as i8, b[3] as i8]).collect();
    filter(&mut elements);
    for (out, e) in data.chunks_exact_mut(4).zip(elements) {
        out.copy_from_slice(&e.map(|x| x as u8));
    }
}

/// Applies a filter over 8-byte elements of little-endian signed shorts, in place.
fn filter_i16(data: &mut [u8], filter: fn(&mut [[i16; 4]])) {
    let mut elements: Vec<[i16; 4]> = data
        .chunks_exact(8)
        .map(|b| std::array::from_fn(|k| i16::from_le_bytes([b[2 * k], b[2 * k + 1]])))
        .collect();
    filter(&mut elements);
    for (out, e) in data.chunks_exact_mut(8).zip(elements) {
        for (k, x) in e.iter().enumerate() {
            out[2 * k..2 * k + 2].copy_from_slice(&x.to_le_bytes());
        }
    }
}
