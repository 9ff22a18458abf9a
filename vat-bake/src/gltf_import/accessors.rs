//! Accessor checks. The `gltf` crate's readers assume valid input: a zero count underflows, an
//! undersized stride trips a debug assertion, an unexpected component type hits `unreachable!`, and a
//! range past the end of the buffer silently yields fewer items. Every accessor is checked here before
//! its reader is built, so reading cannot panic and short data is a typed error naming the accessor.

use std::borrow::Cow;

use gltf::accessor::{DataType, Dimensions};

use super::Ctx;
use crate::Result;

/// The most elements one accessor may hold (4 M). Far beyond any character or clip vat can bake: one
/// frame of 4 M vertices already fills a 4096 x 1024 vertex texture. Small enough that an accessor
/// without a buffer view (zeros plus sparse values, no bytes in the file) cannot ask for gigabytes.
pub(super) const MAX_ACCESSOR_COUNT: usize = 1 << 22;

/// Float VEC3 (translation and scale keys).
pub(super) const F32_VEC3: &[(DataType, Dimensions)] = &[(DataType::F32, Dimensions::Vec3)];
/// Float SCALAR (keyframe times).
pub(super) const F32_SCALAR: &[(DataType, Dimensions)] = &[(DataType::F32, Dimensions::Scalar)];
/// Float MAT4 (inverse bind matrices).
pub(super) const F32_MAT4: &[(DataType, Dimensions)] = &[(DataType::F32, Dimensions::Mat4)];
/// POSITION: float, or (`KHR_mesh_quantization`) signed or unsigned byte/short, normalised or not, VEC3.
pub(super) const POSITIONS: &[(DataType, Dimensions)] = &[
    (DataType::F32, Dimensions::Vec3),
    (DataType::I8, Dimensions::Vec3),
    (DataType::U8, Dimensions::Vec3),
    (DataType::I16, Dimensions::Vec3),
    (DataType::U16, Dimensions::Vec3),
];
/// NORMAL, and morph target NORMAL/TANGENT deltas: float, or (`KHR_mesh_quantization`) normalised
/// signed byte/short, VEC3.
pub(super) const UNIT_VEC3: &[(DataType, Dimensions)] =
    &[(DataType::F32, Dimensions::Vec3), (DataType::I8, Dimensions::Vec3), (DataType::I16, Dimensions::Vec3)];
/// TANGENT: float, or (`KHR_mesh_quantization`) normalised signed byte/short, VEC4.
pub(super) const UNIT_VEC4: &[(DataType, Dimensions)] =
    &[(DataType::F32, Dimensions::Vec4), (DataType::I8, Dimensions::Vec4), (DataType::I16, Dimensions::Vec4)];
/// Morph target POSITION deltas: float, or (`KHR_mesh_quantization`) signed byte/short, normalised
/// or not, VEC3.
pub(super) const DELTAS: &[(DataType, Dimensions)] =
    &[(DataType::F32, Dimensions::Vec3), (DataType::I8, Dimensions::Vec3), (DataType::I16, Dimensions::Vec3)];
/// TEXCOORD_n: float or normalised unsigned byte/short VEC2, and (`KHR_mesh_quantization`) signed
/// or unsigned byte/short, normalised or not.
pub(super) const TEXCOORDS: &[(DataType, Dimensions)] = &[
    (DataType::F32, Dimensions::Vec2),
    (DataType::I8, Dimensions::Vec2),
    (DataType::U8, Dimensions::Vec2),
    (DataType::I16, Dimensions::Vec2),
    (DataType::U16, Dimensions::Vec2),
];
/// COLOR_n: float or normalised unsigned byte/short VEC3 or VEC4.
pub(super) const COLORS: &[(DataType, Dimensions)] = &[
    (DataType::F32, Dimensions::Vec3),
    (DataType::U8, Dimensions::Vec3),
    (DataType::U16, Dimensions::Vec3),
    (DataType::F32, Dimensions::Vec4),
    (DataType::U8, Dimensions::Vec4),
    (DataType::U16, Dimensions::Vec4),
];
/// JOINTS_n: unsigned byte/short VEC4.
pub(super) const JOINTS: &[(DataType, Dimensions)] =
    &[(DataType::U8, Dimensions::Vec4), (DataType::U16, Dimensions::Vec4)];
/// WEIGHTS_n: float or normalised unsigned byte/short VEC4.
pub(super) const WEIGHTS: &[(DataType, Dimensions)] =
    &[(DataType::F32, Dimensions::Vec4), (DataType::U8, Dimensions::Vec4), (DataType::U16, Dimensions::Vec4)];
/// Indices: unsigned byte/short/int SCALAR.
pub(super) const INDICES: &[(DataType, Dimensions)] = &[
    (DataType::U8, Dimensions::Scalar),
    (DataType::U16, Dimensions::Scalar),
    (DataType::U32, Dimensions::Scalar),
];
/// `_MATERIAL_ID`: unsigned byte/short/int or float SCALAR.
pub(super) const MATERIAL_IDS: &[(DataType, Dimensions)] = &[
    (DataType::U8, Dimensions::Scalar),
    (DataType::U16, Dimensions::Scalar),
    (DataType::U32, Dimensions::Scalar),
    (DataType::F32, Dimensions::Scalar),
];
/// Rotation keys: float or normalised (un)signed byte/short VEC4.
pub(super) const ROTATIONS: &[(DataType, Dimensions)] = &[
    (DataType::F32, Dimensions::Vec4),
    (DataType::I8, Dimensions::Vec4),
    (DataType::U8, Dimensions::Vec4),
    (DataType::I16, Dimensions::Vec4),
    (DataType::U16, Dimensions::Vec4),
];
/// Morph weight keys: float or normalised (un)signed byte/short SCALAR.
pub(super) const MORPH_WEIGHTS: &[(DataType, Dimensions)] = &[
    (DataType::F32, Dimensions::Scalar),
    (DataType::I8, Dimensions::Scalar),
    (DataType::U8, Dimensions::Scalar),
    (DataType::I16, Dimensions::Scalar),
    (DataType::U16, Dimensions::Scalar),
];

/// The buffer-data callback every `gltf` reader takes.
pub(super) fn source<'s>(
    buffers: &'s [Cow<'_, [u8]>],
) -> impl Clone + Fn(gltf::Buffer<'_>) -> Option<&'s [u8]> {
    move |buffer: gltf::Buffer<'_>| buffers.get(buffer.index()).map(|b| &**b)
}

/// `"{part} (accessor N)"`.
pub(super) fn accessor_part(part: &str, accessor: &gltf::Accessor<'_>) -> String {
    format!("{part} (accessor {})", accessor.index())
}

/// Checks that `accessor` has one of the `allowed` layouts, a count in `1..=MAX_ACCESSOR_COUNT`, and
/// that all its bytes (base view and sparse indices/values) lie inside their buffer views and buffers;
/// sparse indices must strictly increase and stay below the count. Returns the element count.
pub(super) fn check(
    ctx: &Ctx<'_>,
    accessor: &gltf::Accessor<'_>,
    allowed: &[(DataType, Dimensions)],
    buffers: &[Cow<'_, [u8]>],
    part: &str,
) -> Result<usize> {
    let part = accessor_part(part, accessor);
    let layout = (accessor.data_type(), accessor.dimensions());
    if !allowed.contains(&layout) {
        let expected: Vec<String> = allowed.iter().map(|(t, d)| format!("{t:?} {d:?}")).collect();
        return Err(
            ctx.err(part, format!("is {:?} {:?}; expected {}", layout.0, layout.1, expected.join(" or ")))
        );
    }
    let count = accessor.count();
    if count == 0 || count > MAX_ACCESSOR_COUNT {
        return Err(ctx.err(part, format!("count {count} is outside 1..={MAX_ACCESSOR_COUNT}")));
    }
    let element = accessor.size();
    // Read values are expanded to 32-bit components (u8 weights to f32, u16 indices to u32, ...).
    let components = accessor.dimensions().multiplicity() as u64;
    ctx.charge(&part, (count as u64).saturating_mul(components * 4))?;
    match (accessor.view(), accessor.sparse()) {
        (Some(view), _) => {
            check_range(ctx, &part, "data", &view, accessor.offset(), count, element, buffers)?
        }
        (None, Some(_)) => {} // zeros, then the sparse values
        (None, None) => return Err(ctx.err(part, "has neither a bufferView nor sparse values")),
    }
    if let Some(sparse) = accessor.sparse() {
        let sparse_count = sparse.count();
        if sparse_count == 0 || sparse_count > count {
            return Err(ctx.err(part, format!("sparse count {sparse_count} is outside 1..={count}")));
        }
        let indices = sparse.indices();
        let index_size = indices.index_type().size();
        let view = indices.view();
        check_range(
            ctx,
            &part,
            "sparse indices",
            &view,
            indices.offset(),
            sparse_count,
            index_size,
            buffers,
        )?;
        check_sparse_indices(ctx, &part, &view, indices.offset(), sparse_count, index_size, count, buffers)?;
        let values = sparse.values();
        check_range(
            ctx,
            &part,
            "sparse values",
            &values.view(),
            values.offset(),
            sparse_count,
            element,
            buffers,
        )?;
    }
    Ok(count)
}

/// Checks that `count` elements of `element` bytes at `offset` (with the view's stride) fit in the view,
/// and the view in its buffer.
#[expect(clippy::too_many_arguments, reason = "one flat check; the arguments name what is checked")]
fn check_range(
    ctx: &Ctx<'_>,
    part: &str,
    what: &str,
    view: &gltf::buffer::View<'_>,
    offset: usize,
    count: usize,
    element: usize,
    buffers: &[Cow<'_, [u8]>],
) -> Result<()> {
    let stride = view.stride().unwrap_or(element);
    if stride < element {
        return Err(ctx.err(
            part,
            format!(
                "buffer view {} has byteStride {stride}, less than one element ({element} bytes)",
                view.index()
            ),
        ));
    }
    let buffer_len = buffers.get(view.buffer().index()).map_or(0, |b| b.len());
    let view_end = view.offset().checked_add(view.length());
    if view_end.is_none_or(|end| end > buffer_len) {
        return Err(ctx.err(
            part,
            format!(
                "buffer view {} (bytes {}..+{}) runs past the end of buffer {} ({buffer_len} bytes)",
                view.index(),
                view.offset(),
                view.length(),
                view.buffer().index()
            ),
        ));
    }
    let end = stride
        .checked_mul(count - 1)
        .and_then(|n| n.checked_add(element))
        .and_then(|n| n.checked_add(offset));
    if end.is_none_or(|end| end > view.length()) {
        let need = end.map_or_else(|| "more than usize".to_owned(), |e| e.to_string());
        return Err(ctx.err(
            part,
            format!(
                "{what} need bytes {offset}..{need} of buffer view {}, which has {} bytes \
                 (accessor past the end of its buffer view)",
                view.index(),
                view.length()
            ),
        ));
    }
    Ok(())
}

/// Sparse indices must strictly increase and stay below the accessor's count (the `gltf` reader would
/// otherwise silently drop out-of-order substitutions).
#[expect(clippy::too_many_arguments, reason = "one flat check; the arguments name what is checked")]
fn check_sparse_indices(
    ctx: &Ctx<'_>,
    part: &str,
    view: &gltf::buffer::View<'_>,
    offset: usize,
    sparse_count: usize,
    index_size: usize,
    count: usize,
    buffers: &[Cow<'_, [u8]>],
) -> Result<()> {
    let stride = view.stride().unwrap_or(index_size);
    // In range: check_range verified these bytes exist.
    let data = buffers.get(view.buffer().index()).map_or(&[][..], |b| &**b);
    let base = view.offset() + offset;
    let mut previous: Option<u64> = None;
    for k in 0..sparse_count {
        let at = base + k * stride;
        let bytes = data.get(at..at + index_size).unwrap_or(&[]);
        let index = match *bytes {
            [a] => u64::from(a),
            [a, b] => u64::from(u16::from_le_bytes([a, b])),
            [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
            _ => return Err(ctx.err(part, format!("sparse index {k} cannot be read"))),
        };
        if index >= count as u64 {
            return Err(ctx.err(part, format!("sparse index {k} is {index}, not below the count {count}")));
        }
        if previous.is_some_and(|p| index <= p) {
            return Err(
                ctx.err(part, format!("sparse indices do not strictly increase (index {k} is {index})"))
            );
        }
        previous = Some(index);
    }
    Ok(())
}

/// Checks `accessor`, then collects what `read` yields, which must be exactly `count` items.
pub(super) fn read<T, I: Iterator<Item = T>>(
    ctx: &Ctx<'_>,
    accessor: &gltf::Accessor<'_>,
    allowed: &[(DataType, Dimensions)],
    buffers: &[Cow<'_, [u8]>],
    part: &str,
    read: impl FnOnce() -> Option<I>,
) -> Result<Vec<T>> {
    let count = check(ctx, accessor, allowed, buffers, part)?;
    let items: Vec<T> =
        read().ok_or_else(|| ctx.err(accessor_part(part, accessor), "cannot be read"))?.collect();
    if items.len() != count {
        return Err(ctx.err(
            accessor_part(part, accessor),
            format!("yields {} elements, its count is {count}", items.len()),
        ));
    }
    Ok(items)
}

/// Which integer storage a dequantised accessor may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Integers {
    /// Normalised or not (POSITION, TEXCOORD_n, morph POSITION deltas).
    Any,
    /// Normalised only (unit vectors: NORMAL, TANGENT and their morph deltas).
    Normalized,
    /// Read as normalised whatever the accessor says: unsigned TEXCOORD_n in a file that does not
    /// declare `KHR_mesh_quantization`, where the core spec allows only normalised storage (and
    /// exporters have left the flag out).
    AssumeNormalized,
}

/// `c` as a float per the glTF spec: a normalised signed value is `max(c / 127, -1)` (bytes) or
/// `max(c / 32767, -1)` (shorts), a normalised unsigned one `c / 255` or `c / 65535`; a value that is
/// not normalised is the integer itself.
trait Dequantise: Copy {
    fn dequantise(self, normalized: bool) -> f32;
}

impl Dequantise for f32 {
    fn dequantise(self, _: bool) -> f32 {
        self
    }
}

impl Dequantise for i8 {
    fn dequantise(self, normalized: bool) -> f32 {
        if normalized { (f32::from(self) / 127.0).max(-1.0) } else { f32::from(self) }
    }
}

impl Dequantise for u8 {
    fn dequantise(self, normalized: bool) -> f32 {
        if normalized { f32::from(self) / 255.0 } else { f32::from(self) }
    }
}

impl Dequantise for i16 {
    fn dequantise(self, normalized: bool) -> f32 {
        if normalized { (f32::from(self) / 32767.0).max(-1.0) } else { f32::from(self) }
    }
}

impl Dequantise for u16 {
    fn dequantise(self, normalized: bool) -> f32 {
        if normalized { f32::from(self) / 65535.0 } else { f32::from(self) }
    }
}

/// Reads a float or quantised (`KHR_mesh_quantization`) accessor of one of the `allowed` layouts
/// as floats, each integer component dequantised exactly as the spec says ([`Dequantise`]); a
/// dequantisation transform the file keeps elsewhere (a node's scale and offset, a skin's inverse
/// bind matrices, a `KHR_texture_transform`) is applied where that is read. Checked as [`read`].
pub(super) fn read_dequantised<const N: usize>(
    ctx: &Ctx<'_>,
    accessor: &gltf::Accessor<'_>,
    allowed: &[(DataType, Dimensions)],
    integers: Integers,
    buffers: &[Cow<'_, [u8]>],
    part: &str,
) -> Result<Vec<[f32; N]>>
where
    [f32; N]: gltf::accessor::Item,
    [i8; N]: gltf::accessor::Item,
    [u8; N]: gltf::accessor::Item,
    [i16; N]: gltf::accessor::Item,
    [u16; N]: gltf::accessor::Item,
{
    let normalized = accessor.normalized() || integers == Integers::AssumeNormalized;
    let data_type = accessor.data_type();
    if data_type != DataType::F32 && integers == Integers::Normalized && !normalized {
        return Err(ctx.err(
            accessor_part(part, accessor),
            format!(
                "is {data_type:?} but not normalized; quantised unit vectors (KHR_mesh_quantization) are \
                 normalized BYTE or SHORT"
            ),
        ));
    }
    fn typed<T, const N: usize>(
        ctx: &Ctx<'_>,
        accessor: &gltf::Accessor<'_>,
        allowed: &[(DataType, Dimensions)],
        buffers: &[Cow<'_, [u8]>],
        part: &str,
        normalized: bool,
    ) -> Result<Vec<[f32; N]>>
    where
        T: Dequantise,
        [T; N]: gltf::accessor::Item,
    {
        let get = source(buffers);
        let raw = read(ctx, accessor, allowed, buffers, part, || {
            gltf::accessor::Iter::<[T; N]>::new(accessor.clone(), get.clone())
        })?;
        Ok(raw.into_iter().map(|v| v.map(|c| c.dequantise(normalized))).collect())
    }
    match data_type {
        DataType::I8 => typed::<i8, N>(ctx, accessor, allowed, buffers, part, normalized),
        DataType::U8 => typed::<u8, N>(ctx, accessor, allowed, buffers, part, normalized),
        DataType::I16 => typed::<i16, N>(ctx, accessor, allowed, buffers, part, normalized),
        DataType::U16 => typed::<u16, N>(ctx, accessor, allowed, buffers, part, normalized),
        // F32, and U32 (no allowed layout has it: `check` refuses it before anything is read).
        _ => typed::<f32, N>(ctx, accessor, allowed, buffers, part, normalized),
    }
}
