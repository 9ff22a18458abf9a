//! Sequence folders streamed frame by frame, and reading a whole sequence.

use super::*;

/// A sequence folder ([`sequence_files`]), checked and ready to stream: it holds frame 0's topology and
/// texture coordinates, and reads any frame again from its file ([`BodyFrames`]).
#[derive(Debug, Clone)]
pub struct SequenceFolder {
    pub(super) name: String,
    pub(super) fps: f32,
    pub(super) files: Vec<PathBuf>,
    pub(super) indices: Vec<u32>,
    pub(super) uvs: Option<Vec<Vec2>>,
    pub(super) vertex_count: usize,
    /// Whether every frame has normals (else every frame's are recomputed).
    pub(super) source_normals: bool,
    /// The largest file plus its decoded frame, bytes.
    pub(super) frame_bytes: u64,
    pub(super) max_memory: u64,
    pub(super) notes: Vec<String>,
}

/// What checking one frame file found.
pub(super) struct FrameCheck {
    pub(super) notes: Vec<String>,
    pub(super) normals: bool,
    pub(super) bytes: u64,
}

impl SequenceFolder {
    /// Lists `dir`'s frame files and reads every one once to check it (in parallel, a frame per
    /// task, nothing kept but frame 0's triangles and texture coordinates): the same vertex count
    /// and triangles as frame 0, finite positions and normals. The notes say what the files had that
    /// the sequence leaves out (once per kind, with the first file and the count of frames).
    ///
    /// # Errors
    /// [`BakeError::Io`] for an unreadable folder or file; [`BakeError::InvalidInput`] naming the file
    /// for a frame that does not parse or whose topology differs from frame 0's;
    /// [`BakeError::OverBudget`] when the frames read at once would exceed `options.max_memory`;
    /// glTF import errors for glTF frames; [`BakeError::InvalidOption`] (`--fps`) for a bad rate.
    pub fn open(dir: &Path, options: &SequenceOptions) -> Result<SequenceFolder> {
        let (files, others) = list_frames(dir)?;
        if files.len() > MAX_SEQUENCE_FRAMES {
            return Err(invalid(
                format!("sequence folder {}", dir.display()),
                format!(
                    "has {} frame files; at most {MAX_SEQUENCE_FRAMES} bake as one soft-body clip",
                    files.len()
                ),
            ));
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "sequence".into());
        // Frame 0 fixes the topology; frames are read a few at a time (one per thread).
        let threads = rayon::current_num_threads().max(1) as u64;
        let per_read = options.max_memory / threads;
        let (first, first_bytes) = read_frame_file(&files[0], per_read)?;
        let mut folder = SequenceFolder {
            name,
            fps: options.fps,
            vertex_count: first.positions.len(),
            indices: first.indices,
            uvs: first.uvs,
            source_normals: first.normals.is_some(),
            frame_bytes: first_bytes,
            max_memory: per_read,
            notes: Vec::new(),
            files,
        };
        // The rate, the triangles and frame 0's values, checked as a one-frame sequence.
        MeshSequence {
            name: folder.name.clone(),
            positions: vec![first.positions],
            normals: first.normals.map(|n| vec![n]),
            uvs: folder.uvs.clone(),
            indices: folder.indices.clone(),
            fps: folder.fps,
            notes: Vec::new(),
        }
        .validate()
        .map_err(|e| match e {
            BakeError::InvalidInput { problem, .. } => {
                invalid(format!("{}", folder.files[0].display()), problem)
            }
            other => other,
        })?;
        let checks: Vec<Result<FrameCheck>> = (1..folder.files.len())
            .into_par_iter()
            .map(|k| {
                let (frame, bytes) = folder.checked_frame(k)?;
                Ok(FrameCheck { notes: frame.notes, normals: frame.normals.is_some(), bytes })
            })
            .collect();
        let mut frame_notes: Vec<(String, String, usize)> = Vec::new();
        let mut add_notes = |notes: Vec<String>, file: &Path| {
            for note in notes {
                match frame_notes.iter_mut().find(|(n, _, _)| *n == note) {
                    Some(seen) => seen.2 += 1,
                    None => frame_notes.push((note, file_name(file), 1)),
                }
            }
        };
        add_notes(first.notes, &folder.files[0]);
        let mut with_normals = usize::from(folder.source_normals);
        for (k, check) in checks.into_iter().enumerate() {
            let check = check?;
            add_notes(check.notes, &folder.files[k + 1]);
            with_normals += usize::from(check.normals);
            folder.frame_bytes = folder.frame_bytes.max(check.bytes);
        }
        let frames = folder.files.len();
        folder.source_normals = with_normals == frames;
        if !others.is_empty() {
            let shown: Vec<&str> = others.iter().take(3).map(String::as_str).collect();
            folder.notes.push(format!(
                "{}: {} entries that are not frame files left out ({}{})",
                dir.display(),
                others.len(),
                shown.join(", "),
                if others.len() > 3 { ", ..." } else { "" }
            ));
        }
        for (note, first, count) in frame_notes {
            let more = if count > 1 { format!(" (and {} more frames)", count - 1) } else { String::new() };
            folder.notes.push(format!("{first}{more}: {note}"));
        }
        if with_normals > 0 && with_normals < frames {
            folder.notes.push(format!(
                "{}: {with_normals} of {frames} frames have normals; the normals of every frame are recomputed instead",
                dir.display()
            ));
        }
        Ok(folder)
    }

    /// The sequence's name (the folder's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The frame files, in frame order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// What the files had that the sequence leaves out, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Frames per second of the source.
    pub fn fps(&self) -> f32 {
        self.fps
    }

    /// Frame 0's triangle list (every frame's), three indices per triangle.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Frame 0's texture coordinates (static), if it has them.
    pub fn uvs(&self) -> Option<&[Vec2]> {
        self.uvs.as_deref()
    }

    /// The rig that bakes this folder, streaming its frames from the files (see the module docs).
    ///
    /// # Errors
    /// Frame 0's read errors (the file changed since [`SequenceFolder::open`]).
    pub fn into_rig(self) -> Result<Rig> {
        let (name, fps, uvs, indices, notes) =
            (self.name.clone(), self.fps, self.uvs.clone(), self.indices.clone(), self.notes.clone());
        streamed_rig(name, fps, uvs, indices, notes, Arc::new(self))
    }

    /// Reads frame `k`'s file and checks it against frame 0: the same vertex count and triangles,
    /// finite positions and normals. Returns the frame and the bytes the read held.
    pub(super) fn checked_frame(&self, k: usize) -> Result<(Frame, u64)> {
        let file = &self.files[k];
        let (frame, bytes) = read_frame_file(file, self.max_memory)?;
        let part = || format!("{}", file.display());
        let n = self.vertex_count;
        if frame.positions.len() != n {
            return Err(invalid(
                part(),
                format!(
                    "has {} vertices, frame 0 ({}) has {n}: a soft-body sequence needs the same topology in every frame",
                    frame.positions.len(),
                    file_name(&self.files[0])
                ),
            ));
        }
        if frame.indices != self.indices {
            let first = frame.indices.iter().zip(&self.indices).position(|(a, b)| a != b);
            return Err(invalid(
                part(),
                match first {
                    Some(i) => format!(
                        "triangle {} differs from frame 0's ({} in {}): a soft-body sequence needs the same topology \
                         in every frame",
                        i / 3,
                        file_name(file),
                        file_name(&self.files[0])
                    ),
                    None => format!(
                        "has {} triangles, frame 0 has {}: a soft-body sequence needs the same topology in every frame",
                        frame.indices.len() / 3,
                        self.indices.len() / 3
                    ),
                },
            ));
        }
        if let Some(v) = frame.positions.iter().position(|p| !p.is_finite()) {
            return Err(invalid(part(), format!("vertex {v} is not finite")));
        }
        if let Some(normals) = &frame.normals
            && normals.iter().any(|v| !v.is_finite())
        {
            return Err(invalid(part(), format!("needs {n} finite normals")));
        }
        Ok((frame, bytes))
    }
}

impl BodyFrames for SequenceFolder {
    fn frame_count(&self) -> usize {
        self.files.len()
    }

    fn vertex_count(&self) -> usize {
        self.vertex_count
    }

    fn frame_bytes(&self) -> u64 {
        self.frame_bytes
    }

    fn read_frame(&self, k: usize) -> Result<BodyFrame> {
        if k >= self.files.len() {
            return Err(invalid(
                format!("sequence \"{}\" frame {k}", self.name),
                format!("past its {} frames", self.files.len()),
            ));
        }
        let (frame, _) = self.checked_frame(k)?;
        let normals = match frame.normals {
            Some(n) if self.source_normals => {
                n.iter().map(|v| v.try_normalize().unwrap_or(Vec3::Y)).collect()
            }
            _ => smooth_normals(&frame.positions, &self.indices),
        };
        Ok(BodyFrame { positions: frame.positions, normals })
    }
}

/// Reads one frame file (OBJ within `max_memory` bytes, or glTF under that budget): the frame and
/// about the bytes the read held (the file and 48 bytes per vertex).
pub(super) fn read_frame_file(file: &Path, max_memory: u64) -> Result<(Frame, u64)> {
    match frame_kind(file) {
        Some(FrameKind::Obj) => {
            let mut budget = Budget { used: 0, limit: max_memory };
            let bytes = crate::input::read_in_folder(file, ReadLimit::new(max_memory, "--max-memory"))?;
            let len = bytes.len() as u64;
            budget.charge(&file_name(file), len)?;
            let frame = read_obj(file, &bytes)?;
            let decoded = frame.positions.len() as u64 * 48;
            budget.charge(&file_name(file), decoded)?;
            Ok((frame, len + decoded))
        }
        _ => {
            let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let frame = read_gltf(file, max_memory)?;
            let decoded = frame.positions.len() as u64 * 48;
            Ok((frame, len + decoded))
        }
    }
}

/// Reads a sequence folder ([`sequence_files`]) into a [`MeshSequence`] named after the folder, every
/// frame in memory ([`SequenceFolder::open`], then each frame again); [`sequence_rig`] bakes a folder
/// without holding its frames.
///
/// # Errors
/// As [`SequenceFolder::open`]; [`BakeError::OverBudget`] when the frames exceed `options.max_memory`.
pub fn read_sequence(dir: &Path, options: &SequenceOptions) -> Result<MeshSequence> {
    let folder = SequenceFolder::open(dir, options)?;
    let mut budget = Budget { used: 0, limit: options.max_memory };
    let mut positions = Vec::with_capacity(folder.files.len());
    let mut normals = folder.source_normals.then(|| Vec::with_capacity(folder.files.len()));
    for k in 0..folder.files.len() {
        // Positions and normals: 24 bytes per vertex per frame.
        budget.charge(&file_name(&folder.files[k]), folder.vertex_count as u64 * 24)?;
        // As read (the normals unnormalised, or recomputed later from the positions), so the
        // sequence bakes exactly as the folder does.
        let (frame, _) = folder.checked_frame(k)?;
        if let (Some(all), Some(n)) = (&mut normals, frame.normals) {
            all.push(n);
        }
        positions.push(frame.positions);
    }
    Ok(MeshSequence {
        name: folder.name,
        positions,
        normals,
        uvs: folder.uvs,
        indices: folder.indices,
        fps: folder.fps,
        notes: folder.notes,
    })
}

/// The rig of a sequence folder that streams its frames from the files ([`SequenceFolder::open`],
/// then [`SequenceFolder::into_rig`]).
///
/// # Errors
/// As [`SequenceFolder::open`].
pub fn sequence_rig(dir: &Path, options: &SequenceOptions) -> Result<Rig> {
    SequenceFolder::open(dir, options)?.into_rig()
}

/// Parses `bytes` as one OBJ frame (see [`read_sequence`] for what is read) into a one-frame
/// sequence named `name`, at 30 fps. `label` names the bytes in errors.
///
/// # Errors
/// [`BakeError::InvalidInput`] naming `label` for text that is not a readable OBJ with triangles.
pub fn parse_obj_frame(bytes: &[u8], label: &Path, name: &str) -> Result<MeshSequence> {
    let frame = read_obj(label, bytes)?;
    let sequence = MeshSequence {
        name: name.to_owned(),
        positions: vec![frame.positions],
        normals: frame.normals.map(|n| vec![n]),
        uvs: frame.uvs,
        indices: frame.indices,
        fps: 30.0,
        notes: frame.notes.iter().map(|n| format!("{}: {n}", label.display())).collect(),
    };
    sequence.validate().map_err(|e| match e {
        BakeError::InvalidInput { problem, .. } => invalid(format!("{}", label.display()), problem),
        other => other,
    })?;
    Ok(sequence)
}
