//! The sprite (particle) mode: bakes a sequence of particle frames into camera-facing cards, one
//! texel per slot per frame ([`vat_core::sprite`] describes the texel and the sampling).
//!
//! Frames are read **twice, one at a time** ([`SpriteFrames`]): a first pass collects the particle
//! ids of every frame, the box of the centres and the largest card, and assigns slots
//! ([`assign_slots`]); a second encodes each frame's row of the particle texture and drops it.
//! Sources: in memory ([`SpriteSequence`], e.g. `vat_procgen::sprite_by_name`) or a folder of
//! per-frame CSV or PLY files ([`SpriteFolder`], read by [`read_sprite_csv`] and
//! [`read_sprite_ply`]).
//!
//! Units: metres (centres, sizes as card edge lengths), seconds, radians (rotation about the view
//! axis), linear colour.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{
    AlphaMode, Asset, ContainerWriter, Lod, Manifest, Material, MaterialTextures, SpriteAnimation,
    TextureBinding, TextureColorSpace, TextureFilter, TextureWrap,
};
use vat_core::encoding::PositionBounds;
use vat_core::layout::VertexTextureLayout;
use vat_core::sprite::{
    DEAD_TEXEL, Particle, SPRITE_TEXEL_BYTES, SpriteBounds, decode_particle_texel, encode_particle_texel,
    error_bounds, texel_at, wrap_angle, wrap_delta,
};

use crate::rig::MaterialImage;
use crate::{BakeError, Result};

/// One particle of a source frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceParticle {
    /// The particle's identity across frames; `None` when the file has no id column (such a
    /// particle never persists across frames, so it is never interpolated).
    pub id: Option<u64>,
    /// Centre (metres), card edge length (metres, `>= 0`), linear colour, rotation (radians).
    pub particle: Particle,
}

/// One frame of a sprite source: its particles, in the source's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpriteFrame {
    /// The particles alive at this frame (may be empty).
    pub particles: Vec<SourceParticle>,
}

/// A source of sprite frames, read one at a time (twice per bake, once per verify).
pub trait SpriteFrames {
    /// Name of the asset and of its clip.
    fn name(&self) -> &str;
    /// Frames per second, `> 0`.
    fn fps(&self) -> f32;
    /// Frames in the sequence.
    fn frame_count(&self) -> usize;
    /// Frame `k` (`k < frame_count()`), checked: finite values, sizes `>= 0`, no id twice.
    ///
    /// # Errors
    /// [`BakeError::InvalidInput`] naming the frame's file (and line or element) for bad data,
    /// [`BakeError::Io`] / [`BakeError::OverBudget`] for a file that cannot be read.
    fn frame(&self, k: usize) -> Result<SpriteFrame>;
    /// What the source leaves out or changes, one line per kind per file.
    fn notes(&self) -> Vec<String>;
}

fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Checks every particle of `frame`: finite fields, size `>= 0`, colour channels in `[0, 1]` when
/// `colour_in_unit` (readers clamp, noting it, before this), and no id twice. `label(i)` names
/// particle `i` (a line number, a vertex index).
fn check_particles(
    frame: &SpriteFrame,
    part: &str,
    colour_in_unit: bool,
    label: impl Fn(usize) -> String,
) -> Result<()> {
    let mut seen: HashMap<u64, usize> = HashMap::with_capacity(frame.particles.len());
    for (i, sp) in frame.particles.iter().enumerate() {
        let p = &sp.particle;
        let fields = p.position.iter().chain(&p.color).chain([&p.size, &p.rotation]);
        if fields.into_iter().any(|v| !v.is_finite()) {
            return Err(invalid(part, format!("{}: a value is not finite (NaN or infinite)", label(i))));
        }
        if p.size < 0.0 {
            return Err(invalid(
                part,
                format!("{}: size {} is negative (the card's edge length in metres, >= 0)", label(i), p.size),
            ));
        }
        if colour_in_unit && p.color.iter().any(|c| !(0.0..=1.0).contains(c)) {
            return Err(invalid(
                part,
                format!("{}: colour {:?} has a channel outside [0, 1] (linear RGBA)", label(i), p.color),
            ));
        }
        if let Some(id) = sp.id
            && let Some(first) = seen.insert(id, i)
        {
            return Err(invalid(part, format!("{} and {} both have id {id}", label(first), label(i))));
        }
    }
    Ok(())
}

/// Sprite frames held in memory (the built-in fountain, tests). Colours must already be in
/// `[0, 1]`: an in-memory source is refused rather than clamped.
#[derive(Debug, Clone, PartialEq)]
pub struct SpriteSequence {
    /// Name of the asset and its clip.
    pub name: String,
    /// Frames per second, `> 0`.
    pub fps: f32,
    /// The frames.
    pub frames: Vec<SpriteFrame>,
}

impl SpriteFrames for SpriteSequence {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.frames.len()
    }
    fn frame(&self, k: usize) -> Result<SpriteFrame> {
        let frame = self.frames.get(k).cloned().ok_or(invalid(&self.name, format!("has no frame {k}")))?;
        check_particles(&frame, &format!("{} frame {k}", self.name), true, |i| format!("particle {i}"))?;
        Ok(frame)
    }
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Which reader a [`SpriteFolder`]'s files take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameFormat {
    Csv,
    Ply,
}

/// Name order with runs of digits compared as numbers (`frame2` before `frame10`).
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let o = if x.0 && y.0 {
            let (tx, ty) = (x.1.trim_start_matches('0'), y.1.trim_start_matches('0'));
            tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
        } else {
            x.1.cmp(y.1)
        };
        if o.is_ne() {
            return o;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

/// A folder of per-frame particle files, all `.csv` ([`read_sprite_csv`]) or all `.ply`
/// ([`read_sprite_ply`]), in name order (numbers compared as numbers), read one at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct SpriteFolder {
    name: String,
    fps: f32,
    files: Vec<PathBuf>,
    format: FrameFormat,
    max_memory: u64,
    /// What reading the frames left out or changed, one line per kind per file.
    notes: RefCell<Vec<String>>,
}

impl SpriteFolder {
    /// Lists the frames of `dir` at `fps` frames per second; each file, decoded, must fit
    /// `max_memory` bytes (a file is charged 16 times its size: a particle takes up to 13 times the bytes of its
    /// smallest PLY encoding). Sub-folders are left out (one
    /// note).
    ///
    /// # Errors
    /// [`BakeError::InvalidOption`] (`--fps`) for a rate that is not positive and finite;
    /// [`BakeError::Io`] if the folder cannot be listed; [`BakeError::InvalidInput`] for a folder
    /// without frame files, with a file that is neither `.csv` nor `.ply`, or mixing the two.
    pub fn open(dir: &Path, fps: f32, max_memory: u64) -> Result<Self> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(BakeError::InvalidOption {
                option: "--fps",
                problem: format!("{fps} is not a positive, finite frame rate"),
            });
        }
        // Every entry but sub-folders is a frame candidate: the gate refuses one that is not a
        // regular file inside the folder, and a file of another kind is refused below.
        let listing = crate::input::list_frames(dir, |_| true)?;
        let mut files = listing.frames;
        let folders = listing.folders;
        let kind = |f: &Path| match f.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase) {
            Some(e) if e == "csv" => Some(FrameFormat::Csv),
            Some(e) if e == "ply" => Some(FrameFormat::Ply),
            _ => None,
        };
        let part = format!("sprite folder {}", dir.display());
        if let Some(f) = files.iter().find(|f| kind(f).is_none()) {
            return Err(invalid(
                format!("{}", f.display()),
                "the sprite mode reads a folder of .csv or .ply particle frames only (export one \
                 file per frame, all CSV with the header id,x,y,z,size,r,g,b,a or all PLY, and \
                 nothing else in the folder)",
            ));
        }
        let csv = files.iter().filter(|f| kind(f) == Some(FrameFormat::Csv)).count();
        if files.is_empty() {
            return Err(invalid(part, "has no frame files (.csv or .ply)"));
        }
        if csv != 0 && csv != files.len() {
            return Err(invalid(
                part,
                format!(
                    "mixes {csv} CSV files with {} PLY files (export every frame in one format)",
                    files.len() - csv
                ),
            ));
        }
        let format = if csv != 0 { FrameFormat::Csv } else { FrameFormat::Ply };
        let file_name =
            |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        files.sort_by(|a, b| natural_order(&file_name(a), &file_name(b)));
        let name = listing.name.unwrap_or_else(|| "sprite".into());
        let mut notes = Vec::new();
        if !folders.is_empty() {
            notes.push(format!("{part}: sub-folders left out: {}", folders.join(", ")));
        }
        Ok(Self { name, fps, files, format, max_memory, notes: RefCell::new(notes) })
    }
}

impl SpriteFrames for SpriteFolder {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.files.len()
    }
    fn frame(&self, k: usize) -> Result<SpriteFrame> {
        let file = self.files.get(k).ok_or(invalid(&self.name, format!("has no frame {k}")))?;
        let part = format!("{}", file.display());
        // Decoded, a frame takes up to 13 times its bytes (52-byte particles from 4-byte PLY
        // vertices): it may hold a sixteenth of the budget.
        let limit = vat_core::files::ReadLimit::new(self.max_memory / 16, "--max-memory");
        let bytes = crate::input::read_in_folder(file, limit)?;
        let (frame, notes) = match self.format {
            FrameFormat::Csv => {
                let text = std::str::from_utf8(&bytes).map_err(|e| {
                    invalid(&part, format!("is not UTF-8 text ({e}); export the CSV as UTF-8"))
                })?;
                read_sprite_csv(text, &part)?
            }
            FrameFormat::Ply => read_sprite_ply(&bytes, &part)?,
        };
        let mut all = self.notes.borrow_mut();
        for n in notes {
            if !all.contains(&n) {
                all.push(n);
            }
        }
        Ok(frame)
    }
    fn notes(&self) -> Vec<String> {
        self.notes.borrow().clone()
    }
}

/// How far past `[0, 1]` a colour channel may lie and still be clamped: half a unorm8 step, the
/// colour bound itself. 0 and 1 encode exactly, so a channel clamped from within it stays within
/// the bound of its source value, and verifying against the clamped value is verifying against the
/// source.
pub const COLOUR_CLAMP_TOLERANCE: f32 = 0.5 / 255.0;

/// Clamps colour channels within [`COLOUR_CLAMP_TOLERANCE`] of `[0, 1]` (counting them); refuses
/// channels farther out (HDR or negative colours, which an unorm8 texel cannot carry) naming `at`.
fn clamp_colour(c: [f32; 4], clamped: &mut u64, part: &str, at: &dyn Fn() -> String) -> Result<[f32; 4]> {
    if let Some(v) = c.iter().find(|v| !(-COLOUR_CLAMP_TOLERANCE..=1.0 + COLOUR_CLAMP_TOLERANCE).contains(*v))
    {
        return Err(invalid(
            part,
            format!(
                "{}: colour {c:?} has the channel {v} outside [0, 1]: sprite colours are stored as linear unorm8, \
                 so HDR and negative colours are not carried; scale the colours into [0, 1] (an HDR intensity \
                 belongs in the host's material)",
                at()
            ),
        ));
    }
    Ok(c.map(|v| {
        if (0.0..=1.0).contains(&v) {
            v
        } else {
            *clamped += 1;
            v.clamp(0.0, 1.0)
        }
    }))
}

/// The columns a sprite CSV must have (any order).
pub const SPRITE_CSV_COLUMNS: [&str; 9] = ["id", "x", "y", "z", "size", "r", "g", "b", "a"];

/// Reads one frame of particles from CSV text. `part` names the file in errors and notes.
///
/// The first non-empty line is a header naming the columns; it must include
/// [`SPRITE_CSV_COLUMNS`] (`id,x,y,z,size,r,g,b,a`, any order): `id` an unsigned 64-bit integer,
/// `x,y,z` the centre in metres, `size` the card's edge length in metres (`>= 0`), `r,g,b,a` linear
/// colour. `rotation` (radians) is optional (0 without it). Other columns are ignored (one note).
/// Fields are trimmed; empty lines are skipped; a file of only whitespace is an empty frame; a
/// header with no rows is an empty frame. Colour values within [`COLOUR_CLAMP_TOLERANCE`] outside
/// `[0, 1]` are clamped (one note counting them); farther out (HDR, negative) they are refused.
///
/// # Errors
/// [`BakeError::InvalidInput`] naming `part` and the line: a missing or repeated column, a row with
/// the wrong number of fields, a field that is not a number (or not a `u64` id), a NaN or infinite
/// value, a negative size, a colour channel outside `[0, 1]` by more than
/// [`COLOUR_CLAMP_TOLERANCE`], an id used twice (naming both lines).
pub fn read_sprite_csv(text: &str, part: &str) -> Result<(SpriteFrame, Vec<String>)> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let Some((header_line, header)) = lines.next() else {
        return Ok((SpriteFrame::default(), Vec::new()));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut column = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        if column.insert(n.to_ascii_lowercase(), i).is_some() {
            return Err(invalid(
                part,
                format!("line {header_line}: column \"{n}\" appears twice in the header"),
            ));
        }
    }
    let find = |n: &str| column.get(n).copied();
    let missing: Vec<&str> = SPRITE_CSV_COLUMNS.iter().copied().filter(|c| find(c).is_none()).collect();
    if !missing.is_empty() {
        return Err(invalid(
            part,
            format!(
                "line {header_line}: the header lacks column(s) {}; the first line must name at least \
                 id,x,y,z,size,r,g,b,a (any order; rotation optional)",
                missing.join(",")
            ),
        ));
    }
    let idx: Vec<usize> = SPRITE_CSV_COLUMNS.iter().filter_map(|c| find(c)).collect();
    let rotation = find("rotation");
    let mut notes = Vec::new();
    let ignored: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            let l = n.to_ascii_lowercase();
            !SPRITE_CSV_COLUMNS.contains(&l.as_str()) && l != "rotation"
        })
        .collect();
    if !ignored.is_empty() {
        notes.push(format!(
            "{part}: column(s) {} ignored (the sprite mode reads id,x,y,z,size,r,g,b,a,rotation)",
            ignored.join(",")
        ));
    }
    let mut frame = SpriteFrame::default();
    let mut line_numbers = Vec::new();
    let mut clamped = 0u64;
    for (n, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(invalid(
                part,
                format!("line {n}: {} fields, the header names {} columns", fields.len(), names.len()),
            ));
        }
        let number = |c: usize| -> Result<f32> {
            let s = fields[c];
            let v: f32 = s.parse().map_err(|_| {
                invalid(part, format!("line {n}, column {}: \"{s}\" is not a number", names[c]))
            })?;
            if !v.is_finite() {
                return Err(invalid(part, format!("line {n}, column {}: {s} is not finite", names[c])));
            }
            Ok(v)
        };
        let id_text = fields[idx[0]];
        let id: u64 = id_text.parse().map_err(|_| {
            invalid(
                part,
                format!("line {n}, column id: \"{id_text}\" is not an unsigned integer id (0 ..= 2^64 - 1)"),
            )
        })?;
        let size = number(idx[4])?;
        if size < 0.0 {
            return Err(invalid(
                part,
                format!("line {n}: size {size} is negative (edge length in metres, >= 0)"),
            ));
        }
        let colour = [number(idx[5])?, number(idx[6])?, number(idx[7])?, number(idx[8])?];
        let particle = Particle {
            position: [number(idx[1])?, number(idx[2])?, number(idx[3])?],
            size,
            color: clamp_colour(colour, &mut clamped, part, &|| format!("line {n}"))?,
            rotation: rotation.map(number).transpose()?.unwrap_or(0.0),
        };
        frame.particles.push(SourceParticle { id: Some(id), particle });
        line_numbers.push(n);
    }
    if clamped > 0 {
        notes.push(format!(
            "{part}: {clamped} colour value(s) within half a unorm8 step outside [0, 1] clamped (within the colour \
             bound)"
        ));
    }
    check_particles(&frame, part, true, |i| format!("line {}", line_numbers.get(i).copied().unwrap_or(0)))?;
    Ok((frame, notes))
}

/// A PLY scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
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
    fn parse(s: &str) -> Option<Self> {
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
    fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }
    fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    /// The smallest value of an integer type (0 for the unsigned ones; unused for floats).
    fn int_min(self) -> f64 {
        match self {
            Scalar::I8 => -128.0,
            Scalar::I16 => -32_768.0,
            Scalar::I32 => -2_147_483_648.0,
            _ => 0.0,
        }
    }
    /// The largest value of an integer type (what a colour of that type is scaled by).
    fn int_max(self) -> f64 {
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
enum PropKind {
    Scalar(Scalar),
    List { count: Scalar, item: Scalar },
}

#[derive(Debug, Clone)]
struct Property {
    name: String,
    kind: PropKind,
}

#[derive(Debug, Clone)]
struct Element {
    name: String,
    count: u64,
    properties: Vec<Property>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlyFormat {
    Ascii,
    Little,
    Big,
}

/// The PLY body, read value by value.
enum Body<'a> {
    Ascii { tokens: std::str::SplitAsciiWhitespace<'a> },
    Binary { data: &'a [u8], pos: usize, big: bool },
}

impl Body<'_> {
    fn read(&mut self, ty: Scalar, part: &str, at: &dyn Fn() -> String) -> Result<f64> {
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
    fn can_hold(&self, len: f64, item: Scalar, ascii_len: usize) -> bool {
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
fn min_element_bytes(e: &Element, format: PlyFormat) -> usize {
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
fn ply_header(bytes: &[u8], part: &str) -> Result<(PlyFormat, Vec<Element>, usize)> {
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

    // Counts against the bytes available, before anything is allocated or looped over.
    let mut need_bytes = 0u64;
    for e in &elements {
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

/// The slots of every particle of every frame ([`assign_slots`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTable {
    /// Slots of the bake: the most particles alive in one frame (`>= 1`).
    pub slot_count: u32,
    /// `frames[k][i]` is `(slot, continues)` for particle `i` of frame `k` (the frame's order):
    /// `continues` is true when the same id is alive in the same slot at the clip's next frame.
    pub frames: Vec<Vec<(u32, bool)>>,
}

/// Assigns each particle of each frame a slot, reading the frames' id lists once (memory: the ids
/// of every frame, 16 bytes per particle-frame, and the table).
///
/// The rule, deterministic: a particle whose id was alive at the previous frame keeps its slot;
/// the slots of particles that died are freed; a new particle (an id not alive at the previous
/// frame, or no id) takes the lowest free slot, else a new one, in the frame's order. So
/// `slot_count` is the most particles alive in one frame. A particle continues when its id is
/// alive in the same slot at the clip's next frame. A particle without an id never continues.
///
/// A `looping` clip's last frame is followed by frame 0, and a particle alive at both (the same
/// id) crosses the wrap: it must hold the same slot at both ends of the clip. Such particles take
/// slots `0, 1, ...` at frame 0 (in frame 0's order), and each slot is *reserved* from the frame
/// the particle is born again before the wrap; a new particle takes a free reserved slot only if it
/// dies before that frame (the tightest such slot first), else the lowest free unreserved slot,
/// else a new one. Every particle crossing the wrap then continues through it, at the cost of at
/// most a few more slots than the most particles alive at once.
///
/// # Errors
/// The first error of `ids`; [`BakeError::InvalidInput`] for an id twice in one frame, more than
/// `u32::MAX` particles in one frame, or no particle in any frame.
pub fn assign_slots(ids: impl Iterator<Item = Result<Vec<Option<u64>>>>, looping: bool) -> Result<SlotTable> {
    let ids: Vec<Vec<Option<u64>>> = ids.collect::<Result<_>>()?;
    for (k, frame) in ids.iter().enumerate() {
        let mut seen = std::collections::HashSet::with_capacity(frame.len());
        if let Some(id) = frame.iter().flatten().find(|&&id| !seen.insert(id)) {
            return Err(invalid(format!("frame {k}"), format!("id {id} appears twice")));
        }
        if u32::try_from(frame.len()).is_err() {
            return Err(invalid(format!("frame {k}"), "more than 2^32 - 1 particles"));
        }
    }
    let (slots, slot_count) = assign_pass(&ids, looping);
    if slot_count == 0 {
        return Err(invalid("sprite source", "has no particle in any frame"));
    }
    let n = ids.len();
    let mut frames = Vec::with_capacity(n);
    for k in 0..n {
        let next = if k + 1 < n {
            Some(k + 1)
        } else if looping {
            Some(0)
        } else {
            None
        };
        let next_slots = next.map(|j| id_slots(&ids[j], &slots[j])).unwrap_or_default();
        frames.push(
            ids[k]
                .iter()
                .zip(&slots[k])
                .map(|(id, &s)| (s, id.is_some_and(|id| next_slots.get(&id) == Some(&s))))
                .collect(),
        );
    }
    Ok(SlotTable { slot_count, frames })
}

/// The slot of each id of a frame (particles without an id left out).
fn id_slots(ids: &[Option<u64>], slots: &[u32]) -> HashMap<u64, u32> {
    ids.iter().zip(slots).filter_map(|(id, &s)| id.map(|id| (id, s))).collect()
}

/// For every particle of every frame, the frame its run of consecutive frames (the same id, in
/// clip order, no wrap) begins at (`first = true`) or ends at (`first = false`).
fn run_bounds(ids: &[Vec<Option<u64>>], first: bool) -> Vec<Vec<usize>> {
    let n = ids.len();
    let mut out: Vec<Vec<usize>> = ids.iter().map(|f| vec![0; f.len()]).collect();
    let order: Vec<usize> = if first { (0..n).collect() } else { (0..n).rev().collect() };
    let mut before: HashMap<u64, usize> = HashMap::new();
    for k in order {
        let mut here = HashMap::with_capacity(ids[k].len());
        for (i, id) in ids[k].iter().enumerate() {
            let bound = id.and_then(|id| before.get(&id).copied()).unwrap_or(k);
            out[k][i] = bound;
            if let Some(id) = id {
                here.insert(*id, bound);
            }
        }
        before = here;
    }
    out
}

/// The slot rule over every frame (see [`assign_slots`]): the slots of every particle and the
/// slot count. Ids are unique per frame (checked by the caller).
fn assign_pass(ids: &[Vec<Option<u64>>], looping: bool) -> (Vec<Vec<u32>>, u32) {
    let n = ids.len();
    let ends = run_bounds(ids, false);
    // Particles crossing the wrap: at frame 0 and at the last frame. Each gets slot w at frame 0;
    // `reborn[w]` is the frame its run reaching the last frame begins (none when that run is the
    // one from frame 0: it lives through the whole clip).
    let mut crossing: HashMap<u64, u32> = HashMap::new();
    let mut reborn: HashMap<u32, usize> = HashMap::new();
    if looping && n > 0 {
        let starts = run_bounds(ids, true);
        let last: HashMap<u64, usize> =
            ids[n - 1].iter().zip(&starts[n - 1]).filter_map(|(id, &b)| id.map(|id| (id, b))).collect();
        for id in ids[0].iter().flatten() {
            if let Some(&b) = last.get(id) {
                let w = crossing.len() as u32;
                crossing.insert(*id, w);
                if b > 0 {
                    reborn.insert(w, b);
                }
            }
        }
    }
    let mut slot_count = crossing.len() as u32;
    let mut prev: HashMap<u64, u32> = HashMap::new();
    let mut held: Vec<u32> = Vec::new();
    // Free slots: plain ones, and reserved ones by the frame their particle is born again.
    let mut free_plain: BTreeSet<u32> = BTreeSet::new();
    let mut free_reserved: BTreeSet<(usize, u32)> = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    for (k, frame) in ids.iter().enumerate() {
        let mut current: HashMap<u64, u32> = HashMap::with_capacity(frame.len());
        let mut slots = vec![u32::MAX; frame.len()];
        for (i, id) in frame.iter().enumerate() {
            let Some(id) = id else { continue };
            let s = if k == 0 { crossing.get(id) } else { prev.get(id) };
            if let Some(&s) = s {
                current.insert(*id, s);
                slots[i] = s;
            }
        }
        let kept: BTreeSet<u32> = current.values().copied().collect();
        for s in std::mem::take(&mut held) {
            if !kept.contains(&s) {
                match reborn.get(&s) {
                    // Reserved until its particle's rebirth (which may be this very frame).
                    Some(&b) if b >= k => free_reserved.insert((b, s)),
                    _ => free_plain.insert(s),
                };
            }
        }
        for (i, id) in frame.iter().enumerate() {
            if slots[i] != u32::MAX {
                continue;
            }
            // A crossing particle born again takes its slot (free: whoever held it meanwhile died
            // before this frame).
            let own = id.and_then(|id| crossing.get(&id).copied()).filter(|w| reborn.get(w) == Some(&k));
            let s = match own {
                Some(w) if free_reserved.remove(&(k, w)) => w,
                _ => {
                    let end = ends[k][i];
                    if let Some(&(b, w)) = free_reserved.range((end + 1, 0)..).next() {
                        free_reserved.remove(&(b, w));
                        w
                    } else if let Some(w) = free_plain.pop_first() {
                        w
                    } else {
                        slot_count += 1;
                        slot_count - 1
                    }
                }
            };
            if let Some(id) = id {
                current.insert(*id, s);
            }
            slots[i] = s;
        }
        held = slots.clone();
        prev = current;
        out.push(slots);
    }
    (out, slot_count)
}

/// How a sprite source is baked.
#[derive(Debug, Clone, PartialEq)]
pub struct SpriteBakeOptions {
    /// Largest texture width or height of the target device, texels.
    pub max_texture_dim: u32,
    /// Whether the clip loops: its last frame leads back to its first (the particle flags then
    /// continue across the wrap where the same id holds the same slot).
    pub looping: bool,
}

impl Default for SpriteBakeOptions {
    /// 16384 texels (as [`crate::fluid::FluidBakeOptions`]), one-shot.
    fn default() -> Self {
        Self { max_texture_dim: 16384, looping: false }
    }
}

/// Figures of a sprite bake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpriteBakeStats {
    /// Frames.
    pub frames: u32,
    /// Slots (cards drawn per instance): the most particles alive in one frame, or a few more for
    /// a looping clip ([`assign_slots`]).
    pub slots: u32,
    /// Alive texels: particles summed over all frames.
    pub particle_frames: u64,
    /// Most particles alive in one frame (`slots` unless a looping clip needed a few more to keep
    /// the particles crossing the wrap in their slots).
    pub max_alive: u32,
    /// Bytes of the particle texture.
    pub particle_texture_bytes: u64,
    /// The size of the whole file, bytes.
    pub file_bytes: u64,
    /// The centre's error bound per axis, millimetres (half a unorm16 step of the box).
    pub position_bound_mm: [f64; 3],
    /// The size's error bound, millimetres.
    pub size_bound_mm: f64,
    /// A colour channel's error bound (of 1).
    pub color_bound: f64,
    /// The rotation's error bound, degrees.
    pub rotation_bound_deg: f64,
    /// What the bake left out or changed, one line each; a note that repeats per frame is said once,
    /// with the count of frames ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
}

/// Side of the generated disc texture, texels.
pub const SPRITE_DISC_SIZE: u32 = 64;

/// Where the disc's alpha starts falling, in units of the card's half edge.
const DISC_INNER: f32 = 0.8;

/// The generated base colour texture of sprite bakes: a `SPRITE_DISC_SIZE`² sRGB image of a ball.
///
/// With `r` the distance from the card's centre over half its edge (so `r = 1` at the middle of an
/// edge), the alpha is `a(r) = 1 - smoothstep(0.8, 1, r)` (1 inside `r <= 0.8`, 0 from `r >= 1`).
/// Drawn under the material's mask cutoff 0.5, a particle of alpha `p` (which multiplies `a`)
/// shows a disc of radius `r = 0.8 + 0.2 * (1/2 - sin(asin(1/p - 1) / 3))` half-edges for
/// `p >= 0.5` (`0.9` for an opaque particle, `0.8` at `p = 0.5`), and nothing for `p < 0.5`
/// (about: texel centres, 8-bit alpha and filtering move the edge by up to a texel). The colour is
/// white shaded towards the rim (linear `1 - 0.3 r²`), so a disc reads as a ball.
pub fn sprite_disc_image() -> MaterialImage {
    let n = SPRITE_DISC_SIZE;
    let mut rgba = Vec::with_capacity((4 * n * n) as usize);
    for y in 0..n {
        for x in 0..n {
            let u = (x as f32 + 0.5) / n as f32 - 0.5;
            let v = (y as f32 + 0.5) / n as f32 - 0.5;
            let r = (u * u + v * v).sqrt() / 0.5;
            let t = ((r - DISC_INNER) / (1.0 - DISC_INNER)).clamp(0.0, 1.0);
            let alpha = 1.0 - t * t * (3.0 - 2.0 * t);
            let shade = 1.0 - 0.3 * r.min(1.0) * r.min(1.0);
            let srgb =
                if shade <= 0.003_130_8 { shade * 12.92 } else { 1.055 * shade.powf(1.0 / 2.4) - 0.055 };
            let c = (srgb.clamp(0.0, 1.0) * 255.0).round() as u8;
            rgba.extend_from_slice(&[c, c, c, (alpha * 255.0).round() as u8]);
        }
    }
    MaterialImage { name: "sprite disc".into(), width: n, height: n, rgba }
}

/// Bakes `source` into `.vat` bytes (see the module docs for the two passes): one clip named after
/// the source, a card of four corners and two triangles per slot, one material `"sprite"` (white,
/// metallic 0, roughness 1, double-sided, alpha mask 0.5, base colour [`sprite_disc_image`]).
///
/// # Errors
/// [`BakeError::InvalidInput`] without frames or particles, for a bad frame, or a frame that changed
/// between the two reads; container and layout errors (e.g. a particle texture larger than
/// `max_texture_dim` allows).
pub fn bake_sprite(
    source: &dyn SpriteFrames,
    options: &SpriteBakeOptions,
) -> Result<(Vec<u8>, SpriteBakeStats)> {
    let frame_count = source.frame_count();
    if frame_count == 0 {
        return Err(invalid(source.name(), "has no frames"));
    }
    let frames_u32 =
        u32::try_from(frame_count).map_err(|_| invalid(source.name(), "more than 2^32 - 1 frames"))?;
    // Pass 1: ids, box, largest card.
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    let mut max_size = 0.0f32;
    let mut ids = Vec::with_capacity(frame_count);
    for k in 0..frame_count {
        let frame = source.frame(k)?;
        for sp in &frame.particles {
            for a in 0..3 {
                lo[a] = lo[a].min(sp.particle.position[a]);
                hi[a] = hi[a].max(sp.particle.position[a]);
            }
            max_size = max_size.max(sp.particle.size);
        }
        ids.push(frame.particles.iter().map(|p| p.id).collect::<Vec<_>>());
    }
    let table = assign_slots(ids.into_iter().map(Ok), options.looping).map_err(|e| match e {
        BakeError::InvalidInput { problem, .. } => invalid(source.name(), problem),
        e => e,
    })?;
    let slots = table.slot_count;
    let position_bounds = PositionBounds::from_points([lo, hi])?;
    let bounds = SpriteBounds { position: position_bounds, max_size };
    let layout = VertexTextureLayout::new(slots, frames_u32, options.max_texture_dim).map_err(|e| match e {
        vat_core::Error::TextureTooLarge { texels, max_dimension, .. } => BakeError::InvalidOption {
            option: "--max-texture-dim",
            problem: format!(
                "{slots} particle slots x {frames_u32} frames = {texels} texels do not fit in a {max_dimension} x \
                 {max_dimension} texture; raise --max-texture-dim (up to 16384) if the device allows, or bake fewer \
                 frames (--fps) or particles"
            ),
        },
        other => other.into(),
    })?;
    let texture_len = usize::try_from(layout.byte_len(SPRITE_TEXEL_BYTES))
        .map_err(|_| invalid(source.name(), "particle texture too large for this machine"))?;

    // Pass 2: one row of `slots` texels per frame.
    let mut texture = Vec::with_capacity(texture_len);
    let mut row = vec![DEAD_TEXEL; slots as usize];
    let mut particle_frames = 0u64;
    for (k, assigned) in table.frames.iter().enumerate() {
        let frame = source.frame(k)?;
        if frame.particles.len() != assigned.len() {
            return Err(invalid(source.name(), format!("frame {k} changed between the two reads")));
        }
        row.fill(DEAD_TEXEL);
        for (sp, &(slot, continues)) in frame.particles.iter().zip(assigned) {
            row[slot as usize] = encode_particle_texel(&bounds, &sp.particle, continues)?;
        }
        particle_frames += assigned.len() as u64;
        texture.extend(row.iter().flatten().flat_map(|w| w.to_le_bytes()));
    }
    texture.resize(texture_len, 0);

    let mut map = ClipRowMap::new();
    let fps = source.fps();
    let (mode, duration) = if options.looping {
        (ClipMode::Looping, frame_count as f32 / fps)
    } else {
        (ClipMode::OneShot, (frame_count as f32 - 1.0).max(0.0) / fps)
    };
    map.push(source.name(), duration, fps, mode, 0.0)?;
    let stored = map.total_frames() as usize;
    if stored != frame_count {
        return Err(invalid(source.name(), format!("{frame_count} frames at {fps} fps store as {stored}")));
    }

    let corners = slots.checked_mul(4).ok_or(invalid(source.name(), "too many slots"))?;
    let index_count = slots.checked_mul(6).ok_or(invalid(source.name(), "too many slots"))?;
    let mut writer = ContainerWriter::new();
    let texture_bytes = texture.len() as u64;
    let particles = writer.add_blob(texture);
    let indices: Vec<u8> = (0..slots)
        .flat_map(|s| {
            let c = 4 * s;
            [c, c + 1, c + 2, c, c + 2, c + 3]
        })
        .flat_map(u32::to_le_bytes)
        .collect();
    let index_id = writer.add_blob(indices);
    let mut manifest = Manifest::new(source.name().to_owned(), corners);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(index_id);
    manifest.lods = vec![Lod {
        first_index: 0,
        index_count,
        triangle_count: 2 * slots,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    let mut notes = source.notes();
    let color = crate::textures::texture_array(
        &[sprite_disc_image()],
        TextureColorSpace::Srgb,
        options.max_texture_dim,
        &mut notes,
    )
    .map(|(mut array, bytes)| {
        array.texels = writer.add_blob(bytes);
        array
    });
    manifest.material_textures = Some(MaterialTextures { color, data: None });
    manifest.materials = vec![Material {
        name: "sprite".into(),
        base_color_factor: [1.0; 4],
        base_color_texture: Some(TextureBinding {
            layer: 0,
            wrap_u: TextureWrap::ClampToEdge,
            wrap_v: TextureWrap::ClampToEdge,
            mag_filter: TextureFilter::Linear,
            min_filter: TextureFilter::Linear,
        }),
        metallic_factor: 0.0,
        roughness_factor: 1.0,
        double_sided: true,
        alpha_mode: AlphaMode::Mask { cutoff: 0.5 },
        ..Material::default()
    }];
    manifest.sprite_animation = Some(SpriteAnimation { layout, position_bounds, max_size, particles });
    let bytes = writer.finish(manifest)?;
    let e = error_bounds(&bounds);
    let stats = SpriteBakeStats {
        frames: frames_u32,
        slots,
        particle_frames,
        max_alive: table.frames.iter().map(|f| f.len() as u32).max().unwrap_or(0),
        particle_texture_bytes: texture_bytes,
        file_bytes: bytes.len() as u64,
        position_bound_mm: e.position.map(|b| b * 1e3),
        size_bound_mm: e.size * 1e3,
        color_bound: e.color,
        rotation_bound_deg: e.rotation_rad.to_degrees(),
        notes: crate::notes::collapse(notes),
    };
    Ok((bytes, stats))
}

/// Whether an error is NaN or above its bound.
fn outside(err: f64, bound: f64) -> bool {
    err.is_nan() || err > bound
}

/// The most failure lines a [`SpriteVerifyReport`] lists.
pub const SPRITE_VERIFY_MAX_FAILURE_LINES: usize = 20;

/// What [`verify_sprite`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpriteVerifyReport {
    /// Whether every check passed.
    pub passed: bool,
    /// Frames compared.
    pub frames: u32,
    /// Slots of the file.
    pub slots: u32,
    /// Slot-frames decoded (alive and dead).
    pub texels: u64,
    /// Alive slot-frames compared with the source's particles.
    pub particle_frames: u64,
    /// Largest centre error per axis, millimetres.
    pub position_max_error_mm: [f64; 3],
    /// The format's centre bound per axis plus f32 rounding, millimetres.
    pub position_bound_mm: [f64; 3],
    /// Largest size error, millimetres.
    pub size_max_error_mm: f64,
    /// The format's size bound plus f32 rounding, millimetres.
    pub size_bound_mm: f64,
    /// Largest colour channel error (against the source clamped to `[0, 1]`, which the readers only
    /// do within [`COLOUR_CLAMP_TOLERANCE`], so within the bound of the source's own value).
    pub color_max_error: f64,
    /// The format's colour bound plus f32 rounding.
    pub color_bound: f64,
    /// Largest rotation error modulo 360 degrees, degrees.
    pub rotation_max_error_deg: f64,
    /// The format's rotation bound plus f32 rounding, degrees: the largest of the per-particle
    /// bounds used (at least that of a source angle of magnitude pi).
    pub rotation_bound_deg: f64,
    /// One line per failed check, at most [`SPRITE_VERIFY_MAX_FAILURE_LINES`].
    pub failures: Vec<String>,
    /// Failed checks beyond the listed lines.
    pub failures_left_off: u64,
}

/// Re-runs the slot assignment on `source` (with `looping`), then decodes every slot of every
/// frame of `asset` ([`texel_at`], [`decode_particle_texel`] against
/// [`SpriteAnimation::sprite_bounds`]) and checks: the slot is alive exactly where the source has a
/// particle; the continues flag is exactly the assigned one; each field is within
/// [`error_bounds`] plus f32 rounding derived from the magnitudes: centre `4 eps (M + extent)` per
/// axis (`M` the box's largest |coordinate|: the normalise and denormalise round twice each), size
/// `4 eps max_size`, colour `4 eps`, rotation `4 eps (pi + |source angle|)` (the wrap and the
/// decode's product), `eps = 2^-23`. Rotations are compared modulo `2 pi`, colours after the
/// bake's clamp. The clip's frame count and mode are checked too.
///
/// # Errors
/// [`BakeError::InvalidInput`] if `asset` is not a sprite bake; read errors of `source`;
/// [`BakeError::Core`] if the particle texture is shorter than its layout.
pub fn verify_sprite(
    asset: &Asset<'_>,
    source: &dyn SpriteFrames,
    looping: bool,
) -> Result<SpriteVerifyReport> {
    let m = asset.manifest();
    let sa =
        m.sprite_animation.as_ref().ok_or(invalid(&m.name, "is not a sprite bake (no sprite animation)"))?;
    let blob = asset
        .get_blob(sa.particles)
        .ok_or(invalid(&m.name, format!("the particle texture blob {} is missing", sa.particles.0)))?;
    let b = sa.sprite_bounds();
    let e = error_bounds(&b);
    let eps = f64::from(f32::EPSILON);
    let pb = b.position;
    let position_bound: [f64; 3] = std::array::from_fn(|a| {
        let mag = f64::from(pb.min[a].abs().max((pb.min[a] + pb.extent[a]).abs()));
        e.position[a] + 4.0 * eps * (mag + f64::from(pb.extent[a]))
    });
    let size_bound = e.size + 4.0 * eps * f64::from(b.max_size);
    let color_bound = e.color + 4.0 * eps;
    let pi = std::f64::consts::PI;
    let mut failures = Vec::new();
    let mut left_off = 0u64;
    let mut fail = |line: String| {
        if failures.len() < SPRITE_VERIFY_MAX_FAILURE_LINES {
            failures.push(line);
        } else {
            left_off += 1;
        }
    };
    let frames = source.frame_count();
    let table = assign_slots(
        (0..frames).map(|k| Ok(source.frame(k)?.particles.iter().map(|p| p.id).collect())),
        looping,
    )?;
    let slots = sa.layout.vertex_count;
    if table.slot_count != slots {
        fail(format!("the file has {slots} slots, the source's assignment {}", table.slot_count));
    }
    if sa.layout.frame_count as usize != frames {
        fail(format!("the file has {} frames, the source {frames}", sa.layout.frame_count));
    }
    match m.clips.first() {
        None => fail("the file has no clip".into()),
        Some(c) => {
            let mode = if looping { ClipMode::Looping } else { ClipMode::OneShot };
            if c.frame_count as usize != frames || c.mode != mode {
                fail(format!(
                    "clip \"{}\": {} frames {:?}, expected {frames} {mode:?}",
                    c.name, c.frame_count, c.mode
                ));
            }
        }
    }
    let (mut p_max, mut s_max, mut c_max, mut r_max) = ([0.0f64; 3], 0.0f64, 0.0f64, 0.0f64);
    let mut r_bound_max = e.rotation_rad + 8.0 * eps * pi;
    let (mut texels, mut particle_frames) = (0u64, 0u64);
    let frames_checked = frames.min(sa.layout.frame_count as usize);
    if table.slot_count == slots {
        let mut expected: Vec<Option<usize>> = vec![None; slots as usize];
        for k in 0..frames_checked {
            let frame = source.frame(k)?;
            let assigned = &table.frames[k];
            expected.fill(None);
            for (i, &(s, _)) in assigned.iter().enumerate() {
                expected[s as usize] = Some(i);
            }
            for s in 0..slots {
                texels += 1;
                let t = texel_at(blob, k as u64 * u64::from(slots) + u64::from(s))?;
                let decoded = decode_particle_texel(&b, t);
                let want = expected[s as usize];
                let (d, cont, i) = match (decoded, want) {
                    (None, None) => continue,
                    (Some(_), None) => {
                        fail(format!("frame {k} slot {s}: alive, the source has no particle there"));
                        continue;
                    }
                    (None, Some(i)) => {
                        fail(format!("frame {k} slot {s}: dead, the source's particle {i} is there"));
                        continue;
                    }
                    (Some((d, c)), Some(i)) => (d, c, i),
                };
                particle_frames += 1;
                let sp = &frame.particles[i];
                let p = &sp.particle;
                let mut bad = Vec::new();
                if cont != assigned[i].1 {
                    bad.push(format!("continues {cont}, assigned {}", assigned[i].1));
                }
                for a in 0..3 {
                    let err = (f64::from(d.position[a]) - f64::from(p.position[a])).abs();
                    p_max[a] = p_max[a].max(err);
                    if outside(err, position_bound[a]) {
                        bad.push(format!("centre axis {a} off by {:.4} mm", err * 1e3));
                    }
                }
                let err = (f64::from(d.size) - f64::from(p.size)).abs();
                s_max = s_max.max(err);
                if outside(err, size_bound) {
                    bad.push(format!("size off by {:.4} mm", err * 1e3));
                }
                for ch in 0..4 {
                    let err = (f64::from(d.color[ch]) - f64::from(p.color[ch].clamp(0.0, 1.0))).abs();
                    c_max = c_max.max(err);
                    if outside(err, color_bound) {
                        bad.push(format!("colour channel {ch} off by {err:.5}"));
                    }
                }
                let err = f64::from(wrap_delta(d.rotation - wrap_angle(p.rotation))).abs();
                r_max = r_max.max(err);
                let rotation_bound = e.rotation_rad + 4.0 * eps * (pi + f64::from(p.rotation.abs()));
                r_bound_max = r_bound_max.max(rotation_bound);
                if outside(err, rotation_bound) {
                    bad.push(format!("rotation off by {:.4} deg", err.to_degrees()));
                }
                if !bad.is_empty() {
                    fail(format!(
                        "frame {k} slot {s} (source particle {i}, id {:?}): {}",
                        sp.id,
                        bad.join("; ")
                    ));
                }
            }
        }
    }
    Ok(SpriteVerifyReport {
        passed: failures.is_empty(),
        frames: frames as u32,
        slots,
        texels,
        particle_frames,
        position_max_error_mm: p_max.map(|x| x * 1e3),
        position_bound_mm: position_bound.map(|x| x * 1e3),
        size_max_error_mm: s_max * 1e3,
        size_bound_mm: size_bound * 1e3,
        color_max_error: c_max,
        color_bound,
        rotation_max_error_deg: r_max.to_degrees(),
        rotation_bound_deg: r_bound_max.to_degrees(),
        failures,
        failures_left_off: left_off,
    })
}

#[cfg(test)]
#[path = "sprite_tests.rs"]
mod tests;
