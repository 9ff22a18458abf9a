//! Source particles and frames: in-memory sequences and folders of frame files.

use super::*;

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

pub(super) fn invalid(part: impl Into<String>, problem: impl Into<String>) -> BakeError {
    BakeError::InvalidInput { part: part.into(), problem: problem.into() }
}

/// Checks every particle of `frame`: finite fields, size `>= 0`, colour channels in `[0, 1]` when
/// `colour_in_unit` (readers clamp, noting it, before this), and no id twice. `label(i)` names
/// particle `i` (a line number, a vertex index).
pub(super) fn check_particles(
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
pub(super) enum FrameFormat {
    Csv,
    Ply,
}

/// Name order with runs of digits compared as numbers (`frame2` before `frame10`).
pub(super) fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
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
    pub(super) name: String,
    pub(super) fps: f32,
    pub(super) files: Vec<PathBuf>,
    pub(super) format: FrameFormat,
    pub(super) max_memory: u64,
    /// What reading the frames left out or changed, one line per kind per file.
    pub(super) notes: RefCell<Vec<String>>,
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
