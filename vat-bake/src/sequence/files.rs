//! Listing frame files in natural order, and the budgets of a read.

use super::*;

/// The files of a sequence folder in frame order: every regular file whose extension is `obj`, `gltf`
/// or `glb` (any case; other files, e.g. `.mtl` or a `.bin` beside a `.gltf`, are ignored), sorted by
/// name with runs of digits compared as numbers (`f2` before `f10`).
///
/// # Errors
/// [`BakeError::Io`] if the folder cannot be listed; [`BakeError::InvalidInput`] if it has no frame
/// files or mixes OBJ with glTF.
pub fn sequence_files(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(list_frames(dir)?.0)
}

/// [`sequence_files`], and the names of the folder's other entries (not frames: left out). Frames
/// are listed through vat-core's read gate: a frame that is a link out of the folder, a FIFO or a
/// device is refused, naming it.
pub(super) fn list_frames(dir: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let listing = crate::input::list_frames(dir, |p| frame_kind(p).is_some())?;
    let mut files = listing.frames;
    let mut others = listing.others;
    others.extend(listing.folders.into_iter().map(|f| format!("{f}/")));
    others.sort();
    let part = || format!("sequence folder {}", dir.display());
    if files.is_empty() {
        return Err(invalid(part(), "has no frame files (.obj, .gltf or .glb)"));
    }
    let obj = files.iter().filter(|f| frame_kind(f) == Some(FrameKind::Obj)).count();
    if obj != 0 && obj != files.len() {
        return Err(invalid(part(), format!("mixes {obj} OBJ files with {} glTF files", files.len() - obj)));
    }
    files.sort_by(|a, b| natural_order(&file_name(a), &file_name(b)));
    Ok((files, others))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameKind {
    Obj,
    Gltf,
}

pub(super) fn frame_kind(path: &Path) -> Option<FrameKind> {
    match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "obj" => Some(FrameKind::Obj),
        "gltf" | "glb" => Some(FrameKind::Gltf),
        _ => None,
    }
}

pub(super) fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Compares names with runs of ASCII digits as numbers (then by length, so `07` and `7` are ordered),
/// everything else byte by byte.
pub(super) fn natural_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let (si, sj) = (i, j);
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let (da, db) = (&a[si..i], &b[sj..j]);
            let (ta, tb) = (trim_zeros(da), trim_zeros(db));
            let by_value =
                ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb)).then_with(|| da.len().cmp(&db.len()));
            if by_value != Ordering::Equal {
                return by_value;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

/// `digits` without its leading zeros.
pub(super) fn trim_zeros(digits: &[u8]) -> &[u8] {
    let first = digits.iter().position(|&c| c != b'0').unwrap_or(digits.len());
    &digits[first..]
}

/// One frame as read: positions, normals if every vertex has one, texture coordinates if any,
/// triangle list.
pub(super) struct Frame {
    pub(super) positions: Vec<Vec3>,
    pub(super) normals: Option<Vec<Vec3>>,
    pub(super) uvs: Option<Vec<Vec2>>,
    pub(super) indices: Vec<u32>,
    /// What the file had that the frame leaves out, one line each.
    pub(super) notes: Vec<String>,
}

/// What an OBJ file holds besides triangles, counted by [`check_obj_indices`].
#[derive(Debug, Default)]
pub(super) struct ObjExtras {
    /// `p` and `l` statements (points and lines: not triangles, left out).
    pub(super) points_and_lines: usize,
    /// `usemtl` and `mtllib` statements (materials are not read: every vertex has material 0).
    pub(super) materials: usize,
    /// `v` statements with a colour (x y z r g b: the colour is not read).
    pub(super) colours: usize,
}

impl ObjExtras {
    /// One note line per kind of content left out.
    pub(super) fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.points_and_lines > 0 {
            notes.push(format!(
                "{} point and line statements left out (not triangles)",
                self.points_and_lines
            ));
        }
        if self.materials > 0 {
            notes.push(format!(
                "{} material statements not read (every vertex gets material 0)",
                self.materials
            ));
        }
        if self.colours > 0 {
            notes.push(format!("the colours of {} vertices not read", self.colours));
        }
        notes
    }
}

/// Charges `bytes` to the read's budget.
pub(super) struct Budget {
    pub(super) used: u64,
    pub(super) limit: u64,
}

impl Budget {
    pub(super) fn charge(&mut self, what: &str, bytes: u64) -> Result<()> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            return Err(BakeError::OverBudget {
                what: format!("reading the mesh sequence ({what})"),
                needed: self.used,
                limit: self.limit,
                hint: "raise --max-memory, or bake fewer frames (a shorter sequence)",
            });
        }
        Ok(())
    }
}
