//! Reading a frame from PLY (ASCII or binary).

use super::*;

/// A PLY scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    pub(super) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "char" | "int8" => Scalar::I8,
            "uchar" | "uint8" => Scalar::U8,
            "short" | "int16" => Scalar::I16,
            "ushort" | "uint16" => Scalar::U16,
            "int" | "int32" => Scalar::I32,
            "uint" | "uint32" => Scalar::U32,
            "float" | "float32" => Scalar::F32,
            "double" | "float64" => Scalar::F64,
            _ => return None,
        })
    }
    pub(super) fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }
    pub(super) fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    /// The smallest value of an integer type (0 for the unsigned ones; unused for floats).
    pub(super) fn int_min(self) -> f64 {
        match self {
            Scalar::I8 => -128.0,
            Scalar::I16 => -32_768.0,
            Scalar::I32 => -2_147_483_648.0,
            _ => 0.0,
        }
    }
    /// The largest value of an integer type (what a colour of that type is scaled by).
    pub(super) fn int_max(self) -> f64 {
        match self {
            Scalar::I8 => 127.0,
            Scalar::U8 => 255.0,
            Scalar::I16 => 32_767.0,
            Scalar::U16 => 65_535.0,
            Scalar::I32 => 2_147_483_647.0,
            Scalar::U32 | Scalar::F32 | Scalar::F64 => 4_294_967_295.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PropKind {
    Scalar(Scalar),
    List { count: Scalar, item: Scalar },
}

#[derive(Debug, Clone)]
pub(super) struct Property {
    pub(super) name: String,
    pub(super) kind: PropKind,
}

#[derive(Debug, Clone)]
pub(super) struct Element {
    pub(super) name: String,
    pub(super) count: u64,
    pub(super) properties: Vec<Property>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PlyFormat {
    Ascii,
    Little,
    Big,
}

/// The PLY body, read value by value.
pub(super) enum Body<'a> {
    Ascii { tokens: std::str::SplitAsciiWhitespace<'a> },
    Binary { data: &'a [u8], pos: usize, big: bool },
}

impl Body<'_> {
    pub(super) fn read(&mut self, ty: Scalar, part: &str, at: &dyn Fn() -> String) -> Result<f64> {
        match self {
            Body::Ascii { tokens } => {
                let t = tokens.next().ok_or_else(|| {
                    invalid(part, format!("{}: the data ends early (truncated file)", at()))
                })?;
                let v: f64 =
                    t.parse().map_err(|_| invalid(part, format!("{}: \"{t}\" is not a number", at())))?;
                if !ty.is_float() && v.fract() != 0.0 {
                    return Err(invalid(part, format!("{}: \"{t}\" is not an integer", at())));
                }
                if !ty.is_float() && !(ty.int_min()..=ty.int_max()).contains(&v) {
                    return Err(invalid(
                        part,
                        format!("{}: {t} is outside the range of its type {ty:?}", at()),
                    ));
                }
                Ok(v)
            }
            Body::Binary { data, pos, big } => {
                let n = ty.size();
                let bytes = data.get(*pos..pos.saturating_add(n)).ok_or_else(|| {
                    invalid(part, format!("{}: the data ends early (truncated file)", at()))
                })?;
                *pos += n;
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(bytes);
                if *big {
                    b[..n].reverse();
                }
                Ok(match ty {
                    Scalar::I8 => f64::from(b[0] as i8),
                    Scalar::U8 => f64::from(b[0]),
                    Scalar::I16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
                    Scalar::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
                    Scalar::I32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::U32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    Scalar::F64 => f64::from_le_bytes(b),
                })
            }
        }
    }
    /// Whether `len` items of type `item` can still follow: binary, `len * size` bytes must be
    /// left; ASCII, at least one character per item (`ascii_len`, the whole text, bounds it).
    pub(super) fn can_hold(&self, len: f64, item: Scalar, ascii_len: usize) -> bool {
        match self {
            Body::Ascii { .. } => len <= ascii_len as f64,
            Body::Binary { data, pos, .. } => {
                len * item.size() as f64 <= data.len().saturating_sub(*pos) as f64
            }
        }
    }
}

/// The smallest number of bytes one instance of `e` takes: binary, its scalars and list counts;
/// ASCII, one character and one separator per value.
pub(super) fn min_element_bytes(e: &Element, format: PlyFormat) -> usize {
    e.properties
        .iter()
        .map(|p| match (format, p.kind) {
            (PlyFormat::Ascii, _) => 2,
            (_, PropKind::Scalar(s)) => s.size(),
            (_, PropKind::List { count, .. }) => count.size(),
        })
        .sum()
}

/// Parses the PLY header: the format, the elements, and the offset of the body.
pub(super) fn ply_header(bytes: &[u8], part: &str) -> Result<(PlyFormat, Vec<Element>, usize)> {
    let bad = |line: usize, problem: String| invalid(part, format!("header line {line}: {problem}"));
    let mut pos = 0usize;
    let mut format = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut line_no = 0usize;
    loop {
        let rest = bytes.get(pos..).unwrap_or_default();
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(invalid(part, "the PLY header has no end_header line (truncated or not a PLY file)"));
        };
        line_no += 1;
        let line = std::str::from_utf8(&rest[..end])
            .map_err(|_| bad(line_no, "the header is not ASCII text".into()))?
            .trim();
        pos += end + 1;
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        if line_no == 1 {
            if line != "ply" {
                return Err(invalid(part, "does not start with the line \"ply\" (not a PLY file)"));
            }
            continue;
        }
        match words.as_slice() {
            ["end_header"] => break,
            [] | ["comment", ..] | ["obj_info", ..] => {}
            ["format", f, "1.0"] => {
                format = Some(match *f {
                    "ascii" => PlyFormat::Ascii,
                    "binary_little_endian" => PlyFormat::Little,
                    "binary_big_endian" => PlyFormat::Big,
                    _ => {
                        return Err(bad(
                            line_no,
                            format!(
                                "unknown format \"{f}\" (ascii, binary_little_endian or binary_big_endian 1.0)"
                            ),
                        ));
                    }
                });
            }
            ["element", name, count] => {
                let count: u64 = count.parse().map_err(|_| {
                    bad(line_no, format!("element {name}: count \"{count}\" is not an unsigned integer"))
                })?;
                elements.push(Element { name: (*name).into(), count, properties: Vec::new() });
            }
            ["property", "list", c, t, name] => {
                let (Some(count), Some(item)) = (Scalar::parse(c), Scalar::parse(t)) else {
                    return Err(bad(line_no, format!("list property {name}: unknown type {c} or {t}")));
                };
                if count.is_float() {
                    return Err(bad(
                        line_no,
                        format!("list property {name}: a list count must be an integer type, not {c}"),
                    ));
                }
                let e = elements
                    .last_mut()
                    .ok_or_else(|| bad(line_no, "a property before any element".into()))?;
                e.properties.push(Property { name: (*name).into(), kind: PropKind::List { count, item } });
            }
            ["property", t, name] => {
                let ty = Scalar::parse(t)
                    .ok_or_else(|| bad(line_no, format!("property {name}: unknown type \"{t}\"")))?;
                let e = elements
                    .last_mut()
                    .ok_or_else(|| bad(line_no, "a property before any element".into()))?;
                e.properties.push(Property { name: (*name).into(), kind: PropKind::Scalar(ty) });
            }
            _ => return Err(bad(line_no, format!("\"{line}\" is not a PLY header line"))),
        }
    }
    let format = format.ok_or_else(|| invalid(part, "the PLY header has no format line"))?;
    Ok((format, elements, pos))
}

/// Reads one frame of particles from a PLY file (ASCII, binary little or big endian 1.0). `part`
/// names the file in errors and notes.
///
/// Element `vertex` holds the particles: `x,y,z` (metres, required); `id` (any integer type,
/// `>= 0`; without it no particle persists across frames, one note); the card's edge length from
/// `size`, else `pscale` or `radius` read as a radius (edge length = 2 * value, one note); colour
/// from `red,green,blue[,alpha]` or `r,g,b[,a]` (integer types scaled by their largest value, e.g.
/// `uchar / 255`; floats as they are, within [`COLOUR_CLAMP_TOLERANCE`] of `[0, 1]` clamped with one
/// note counting them, farther out refused (HDR colours are not carried); no alpha is
/// opaque; no colour at all is opaque white, one note); `rotation` (radians, optional). Other
/// vertex properties and other elements are skipped (one note each); so is data after the last
/// element (one note).
///
/// # Errors
/// [`BakeError::InvalidInput`] naming `part` and the header line or element: not a PLY file, a
/// header without `end_header` or format, an unknown type, no `vertex` element or no `x,y,z`, no
/// size property (naming the accepted ones), an element count that exceeds the bytes available
/// (checked before allocating), truncated data, a non-number, a NaN, a negative size or id, a
/// fractional or float id, a colour channel outside `[0, 1]` by more than
/// [`COLOUR_CLAMP_TOLERANCE`], an id used twice (naming both vertices).
pub fn read_sprite_ply(bytes: &[u8], part: &str) -> Result<(SpriteFrame, Vec<String>)> {
    let (format, elements, body_at) = ply_header(bytes, part)?;
    let data = bytes.get(body_at..).unwrap_or_default();
    let mut notes = Vec::new();
    let vertex = elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or_else(|| invalid(part, "has no element \"vertex\" (the particles)"))?;
    if elements.iter().filter(|e| e.name == "vertex").count() > 1 {
        return Err(invalid(
            part,
            "has more than one element \"vertex\" (write the particles as one element)",
        ));
    }
    let v = &elements[vertex];
    let Columns { xyz, id, size, size_scale, colour, rotation } =
        vertex_columns(v, &elements, part, &mut notes)?;

    check_counts(&elements, format, data, part)?;

    let ascii_text;
    let mut body = match format {
        PlyFormat::Ascii => {
            ascii_text =
                std::str::from_utf8(data).map_err(|_| invalid(part, "the ASCII PLY data is not text"))?;
            Body::Ascii { tokens: ascii_text.split_ascii_whitespace() }
        }
        PlyFormat::Little | PlyFormat::Big => Body::Binary { data, pos: 0, big: format == PlyFormat::Big },
    };
    let mut frame = SpriteFrame::default();
    let mut clamped = 0u64;
    let mut values = vec![0.0f64; v.properties.len()];
    for (ei, e) in elements.iter().enumerate() {
        if ei == vertex {
            // The count is bounded by the data (checked above); reserve modestly all the same.
            frame.particles = Vec::with_capacity(usize::try_from(e.count.min(1 << 16)).unwrap_or(0));
        }
        for n in 0..e.count {
            for (pi, p) in e.properties.iter().enumerate() {
                let at = || format!("element {} {n} property {}", e.name, p.name);
                match p.kind {
                    PropKind::Scalar(s) => {
                        let x = body.read(s, part, &at)?;
                        if ei == vertex {
                            values[pi] = x;
                        }
                    }
                    PropKind::List { count, item } => {
                        let len = body.read(count, part, &at)?;
                        if len < 0.0 {
                            return Err(invalid(part, format!("{}: negative list length {len}", at())));
                        }
                        // A length past the data is truncation (refused before looping over it).
                        if !body.can_hold(len, item, data.len()) {
                            return Err(invalid(
                                part,
                                format!("{}: list of {len} items past the end of the data", at()),
                            ));
                        }
                        for _ in 0..len as u64 {
                            body.read(item, part, &at)?;
                        }
                    }
                }
            }
            if ei != vertex {
                continue;
            }
            let at = format!("vertex {n}");
            let get = |p: (usize, Scalar)| values[p.0];
            let id = match id {
                None => None,
                Some(p) => {
                    let x = get(p);
                    if x < 0.0 {
                        return Err(invalid(part, format!("{at}: id {x} is negative (ids are >= 0)")));
                    }
                    Some(x as u64)
                }
            };
            let c = |k: usize, default: f32| -> f32 {
                match colour[k] {
                    None => default,
                    Some((i, s)) if s.is_float() => values[i] as f32,
                    Some((i, s)) => (values[i] / s.int_max()) as f32,
                }
            };
            let raw = [c(0, 1.0), c(1, 1.0), c(2, 1.0), c(3, 1.0)];
            let particle = Particle {
                position: xyz.map(|p| get(p) as f32),
                size: (get(size) * size_scale) as f32,
                color: if raw.iter().all(|x| x.is_finite()) {
                    clamp_colour(raw, &mut clamped, part, &|| at.clone())?
                } else {
                    raw
                },
                rotation: rotation.map_or(0.0, |p| get(p) as f32),
            };
            frame.particles.push(SourceParticle { id, particle });
        }
    }
    let trailing = match &mut body {
        Body::Ascii { tokens } => tokens.next().is_some(),
        Body::Binary { data, pos, .. } => *pos < data.len(),
    };
    if trailing {
        notes.push(format!("{part}: data after the last element ignored"));
    }
    if clamped > 0 {
        notes.push(format!(
            "{part}: {clamped} colour value(s) within half a unorm8 step outside [0, 1] clamped (within the colour \
             bound)"
        ));
    }
    check_particles(&frame, part, true, |i| format!("vertex {i}"))?;
    Ok((frame, notes))
}

/// Where a particle's values are among the vertex element's properties (index and type).
struct Columns {
    xyz: [(usize, Scalar); 3],
    id: Option<(usize, Scalar)>,
    /// The size property, and the factor from it to the card's edge length (2 for a radius).
    size: (usize, Scalar),
    size_scale: f64,
    colour: [Option<(usize, Scalar)>; 4],
    rotation: Option<(usize, Scalar)>,
}

/// Finds the particle properties of the vertex element `v` (see [`read_sprite_ply`]), with a note
/// for each one missing or read differently, for properties ignored and for other elements skipped.
fn vertex_columns(v: &Element, elements: &[Element], part: &str, notes: &mut Vec<String>) -> Result<Columns> {
    let prop = |n: &str| -> Result<Option<(usize, Scalar)>> {
        match v.properties.iter().position(|p| p.name == n) {
            None => Ok(None),
            Some(i) => match v.properties[i].kind {
                PropKind::Scalar(s) => Ok(Some((i, s))),
                PropKind::List { .. } => {
                    Err(invalid(part, format!("vertex property {n} is a list, not a scalar")))
                }
            },
        }
    };
    let mut used = BTreeSet::new();
    let mut need = |n: &str| -> Result<(usize, Scalar)> {
        let p = prop(n)?.ok_or_else(|| {
            invalid(part, format!("element vertex has no property {n} (x, y and z are required)"))
        })?;
        used.insert(p.0);
        Ok(p)
    };
    let xyz = [need("x")?, need("y")?, need("z")?];
    let id = prop("id")?;
    if let Some((i, ty)) = id {
        if ty.is_float() {
            return Err(invalid(part, "vertex property id is a float; the id must be an integer type"));
        }
        used.insert(i);
    } else {
        notes.push(format!(
            "{part}: no vertex property id: its particles never persist across frames (never interpolated)"
        ));
    }
    let (size, size_scale) = if let Some(p) = prop("size")? {
        (p, 1.0)
    } else if let Some((p, name)) =
        prop("pscale")?.map(|p| (p, "pscale")).or(prop("radius")?.map(|p| (p, "radius")))
    {
        notes.push(format!("{part}: card size read from {name} as a radius (edge length = 2 * {name})"));
        (p, 2.0)
    } else {
        return Err(invalid(
            part,
            "element vertex has no size property: name the card's edge length size, or its radius pscale or radius",
        ));
    };
    used.insert(size.0);
    let colour_names =
        if prop("red")?.is_some() { ["red", "green", "blue", "alpha"] } else { ["r", "g", "b", "a"] };
    let mut colour: [Option<(usize, Scalar)>; 4] = [None; 4];
    for (k, n) in colour_names.iter().enumerate() {
        colour[k] = prop(n)?;
    }
    if colour[..3].iter().any(Option::is_none) {
        if colour.iter().any(Option::is_some) {
            return Err(invalid(
                part,
                format!("vertex colour is incomplete: give all of {}", colour_names[..3].join(",")),
            ));
        }
        notes.push(format!("{part}: no vertex colour: particles are opaque white"));
    } else if colour[3].is_none() {
        notes.push(format!("{part}: no vertex {}: particles are opaque", colour_names[3]));
    }
    for (i, _) in colour.iter().flatten() {
        used.insert(*i);
    }
    let rotation = prop("rotation")?;
    if let Some((i, _)) = rotation {
        used.insert(i);
    }
    let ignored: Vec<&str> = v
        .properties
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, p)| p.name.as_str())
        .collect();
    if !ignored.is_empty() {
        notes.push(format!("{part}: vertex properties {} ignored", ignored.join(",")));
    }
    let others: Vec<String> =
        elements.iter().filter(|e| e.name != "vertex").map(|e| format!("{} ({})", e.name, e.count)).collect();
    if !others.is_empty() {
        notes.push(format!(
            "{part}: elements {} skipped (the sprite mode reads vertex only)",
            others.join(", ")
        ));
    }
    Ok(Columns { xyz, id, size, size_scale, colour, rotation })
}

/// Refuses element counts that need more bytes than `data` has (or overflow), checked before
/// anything is allocated or looped over.
fn check_counts(elements: &[Element], format: PlyFormat, data: &[u8], part: &str) -> Result<()> {
    // Counts against the bytes available, before anything is allocated or looped over.
    let mut need_bytes = 0u64;
    for e in elements {
        if e.properties.is_empty() && e.count > 0 {
            return Err(invalid(
                part,
                format!("element {} has {} instances but no property", e.name, e.count),
            ));
        }
        let per = min_element_bytes(e, format) as u64;
        let total = e
            .count
            .checked_mul(per)
            .and_then(|t| t.checked_add(need_bytes))
            .ok_or_else(|| invalid(part, format!("element {}: count {} overflows", e.name, e.count)))?;
        need_bytes = total;
    }
    // ASCII: the last value needs no separator after it.
    let slack = u64::from(format == PlyFormat::Ascii);
    if need_bytes > data.len() as u64 + slack {
        return Err(invalid(
            part,
            format!(
                "the header's element counts need at least {need_bytes} bytes of data, the file has {} after the header (truncated, or a wrong count)",
                data.len()
            ),
        ));
    }
    Ok(())
}
