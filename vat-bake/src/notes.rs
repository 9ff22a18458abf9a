//! Notes (`note:` lines) said once however often they repeat.
//!
//! A source with many frames or meshes can have the same thing to say about each of them: a fluid
//! folder whose every frame lacks normals, 73 primitives each with clamped colours. [`collapse`] turns
//! such lists into one line per distinct note, with a count:
//!
//! - a note repeated word for word is said once, with `(xN)`;
//! - notes that say the same thing about different frames or meshes, written `SUBJECT: TEXT` with the
//!   same `TEXT` and a subject that names a frame file (a path with an extension), a frame
//!   (`frame N`), a mesh, a primitive or a material, are said once, with the count and the first and
//!   last subjects: `TEXT (in 234 frames: a/f_0001.obj ... a/f_0234.obj)`.
//!
//! Every other note is kept as it is, in its place; a collapsed line stands where its first note was.

use std::collections::HashMap;

/// What a note's subject names, when it names one of many alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// A frame file of a sequence (`dir/frame_0001.obj`) or a frame (`frame 12`).
    Frame,
    /// A glTF primitive (`mesh "Body" primitive 3`).
    Primitive,
    /// A mesh (`mesh "Body"`, `mesh 2`).
    Mesh,
    /// A material (`material "skin"`).
    Material,
}

impl Kind {
    /// The kind of `subject`, `None` when it names nothing [`collapse`] groups by.
    fn of(subject: &str) -> Option<Self> {
        if subject.is_empty() || subject.contains('\n') {
            return None;
        }
        if subject.starts_with("mesh ") {
            return Some(if subject.contains(" primitive ") { Kind::Primitive } else { Kind::Mesh });
        }
        if subject.starts_with("material ") {
            return Some(Kind::Material);
        }
        if let Some(number) = subject.strip_prefix("frame ")
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
        {
            return Some(Kind::Frame);
        }
        // A file: no spaces after its last separator and a short alphanumeric extension.
        let file = subject.rsplit(['/', '\\']).next().unwrap_or(subject);
        match file.rsplit_once('.') {
            Some((stem, ext))
                if !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                    && !file.contains(' ') =>
            {
                Some(Kind::Frame)
            }
            _ => None,
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Frame => "frames",
            Kind::Primitive => "primitives",
            Kind::Mesh => "meshes",
            Kind::Material => "materials",
        }
    }

    fn preposition(self) -> &'static str {
        match self {
            Kind::Frame => "in",
            _ => "for",
        }
    }
}

/// One line of the output, as it is gathered.
enum Line {
    /// A note said `count` times word for word.
    Same { note: String, count: usize },
    /// The same `text` said about several subjects of one kind (distinct, in order).
    Subjects { kind: Kind, text: String, subjects: Vec<String> },
}

/// `notes` with each repeated note said once, with a count (see the module docs). Order is kept:
/// each output line stands where its first note was. A list without repeats comes back unchanged.
pub fn collapse<I, S>(notes: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut lines: Vec<Line> = Vec::new();
    // Note -> its `Line::Same`; (kind, text) -> its `Line::Subjects`.
    let mut same: HashMap<String, usize> = HashMap::new();
    let mut alike: HashMap<(Kind, String), usize> = HashMap::new();
    for note in notes {
        let note: String = note.into();
        if let Some(&at) = same.get(&note) {
            // `usize::MAX`: a subject note said again, already counted.
            if let Some(Line::Same { count, .. }) = lines.get_mut(at) {
                *count += 1;
            }
            continue;
        }
        let split = note.split_once(": ").and_then(|(subject, text)| {
            Kind::of(subject).filter(|_| !text.is_empty()).map(|kind| (kind, subject, text))
        });
        match split {
            Some((kind, subject, text)) => {
                let key = (kind, text.to_owned());
                match alike.get(&key) {
                    Some(&at) => {
                        if let Line::Subjects { subjects, .. } = &mut lines[at]
                            && !subjects.iter().any(|s| s == subject)
                        {
                            subjects.push(subject.to_owned());
                        }
                    }
                    None => {
                        alike.insert(key, lines.len());
                        lines.push(Line::Subjects {
                            kind,
                            text: text.to_owned(),
                            subjects: vec![subject.to_owned()],
                        });
                    }
                }
                // A later word-for-word repeat is the same subject again: already counted.
                same.insert(note, usize::MAX);
            }
            None => {
                same.insert(note.clone(), lines.len());
                lines.push(Line::Same { note, count: 1 });
            }
        }
    }
    lines
        .into_iter()
        .map(|line| match line {
            Line::Same { note, count: 1 } => note,
            Line::Same { note, count } => format!("{note} (x{count})"),
            Line::Subjects { subjects, text, .. } if subjects.len() == 1 => {
                format!("{}: {text}", subjects[0])
            }
            Line::Subjects { kind, text, subjects } => {
                let count = subjects.len();
                let (first, last) = (&subjects[0], &subjects[count - 1]);
                let named =
                    if count == 2 { format!("{first}, {last}") } else { format!("{first} ... {last}") };
                format!("{text} ({} {count} {}: {named})", kind.preposition(), kind.plural())
            }
        })
        .collect()
}

/// Indices for a note, runs of consecutive ones as ranges: `[0, 1, 2, 5, 7, 8]` is `"0-2, 5, 7-8"`
/// (a file with hundreds of primitives is named in a short line). Keeps the given order; a run is
/// only an ascending step of 1.
pub fn index_ranges(indices: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut k = 0;
    while k < indices.len() {
        let start = indices[k];
        let mut end = start;
        while k + 1 < indices.len() && end.checked_add(1) == Some(indices[k + 1]) {
            k += 1;
            end = indices[k];
        }
        parts.push(if end == start { start.to_string() } else { format!("{start}-{end}") });
        k += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::{collapse, index_ranges};

    #[test]
    fn consecutive_indices_are_named_as_ranges() {
        assert_eq!(index_ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
        assert_eq!(index_ranges(&[3]), "3");
        assert_eq!(index_ranges(&[]), "");
        assert_eq!(index_ranges(&[4, 3, 2]), "4, 3, 2");
        assert_eq!(index_ranges(&[usize::MAX - 1, usize::MAX]), format!("{}-{}", usize::MAX - 1, usize::MAX));
    }

    #[test]
    fn a_note_repeated_per_frame_is_said_once_with_the_frame_count() {
        let notes: Vec<String> = (1..=234)
            .map(|k| format!("fluid/frame_{k:04}.obj: normals missing or degenerate; recomputed smooth"))
            .collect();
        let out = collapse(notes);
        assert_eq!(
            out,
            vec![
                "normals missing or degenerate; recomputed smooth (in 234 frames: fluid/frame_0001.obj ... \
                 fluid/frame_0234.obj)"
                    .to_owned()
            ]
        );
    }

    #[test]
    fn word_for_word_repeats_get_a_count_and_order_is_kept() {
        let out = collapse(["first thing", "KHR_x left out: why", "first thing", "other", "first thing"]);
        assert_eq!(out, vec!["first thing (x3)", "KHR_x left out: why", "other"]);
    }

    #[test]
    fn the_same_note_about_many_meshes_or_primitives_is_one_line() {
        let mut notes: Vec<String> = (0..3)
            .map(|p| format!("mesh \"Body\" primitive {p}: COLOR_0 values outside 0..=1 are clamped"))
            .collect();
        notes.push("mesh \"Cap\": TANGENT left out".into());
        notes.push("mesh \"Hat\": TANGENT left out".into());
        // The same subject saying it twice is one subject.
        notes.push("mesh \"Hat\": TANGENT left out".into());
        let out = collapse(notes);
        assert_eq!(
            out,
            vec![
                "COLOR_0 values outside 0..=1 are clamped (for 3 primitives: mesh \"Body\" primitive 0 ... \
                 mesh \"Body\" primitive 2)",
                "TANGENT left out (for 2 meshes: mesh \"Cap\", mesh \"Hat\")",
            ]
        );
    }

    #[test]
    fn distinct_notes_and_unrecognised_subjects_are_kept_as_they_are() {
        let notes = vec![
            "mesh \"A\": 3 of 10 triangles left out".to_owned(),
            "mesh \"B\": 4 of 10 triangles left out".to_owned(),
            "KHR_materials_sheen left out: vat shades glTF's core model".to_owned(),
            "KHR_materials_clearcoat left out: vat shades glTF's core model".to_owned(),
            "a.obj: only one".to_owned(),
        ];
        assert_eq!(collapse(notes.clone()), notes);
        assert!(collapse(Vec::<String>::new()).is_empty());
    }
}
