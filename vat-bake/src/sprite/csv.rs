//! Colour clamping and reading a frame from CSV.

use super::*;

/// How far past `[0, 1]` a colour channel may lie and still be clamped: half a unorm8 step, the
/// colour bound itself. 0 and 1 encode exactly, so a channel clamped from within it stays within
/// the bound of its source value, and verifying against the clamped value is verifying against the
/// source.
pub const COLOUR_CLAMP_TOLERANCE: f32 = 0.5 / 255.0;

/// Clamps colour channels within [`COLOUR_CLAMP_TOLERANCE`] of `[0, 1]` (counting them); refuses
/// channels farther out (HDR or negative colours, which an unorm8 texel cannot carry) naming `at`.
pub(super) fn clamp_colour(
    c: [f32; 4],
    clamped: &mut u64,
    part: &str,
    at: &dyn Fn() -> String,
) -> Result<[f32; 4]> {
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
