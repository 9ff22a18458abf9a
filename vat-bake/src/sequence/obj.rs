//! Reading OBJ frames (and their points) and glTF frames.

use super::*;

/// Reads an OBJ frame: every object and group merged into one triangle list (faces triangulated as
/// fans; points and lines ignored), vertices split where the file's position, texture and normal
/// indices differ (so hard edges and seams keep their own vertices).
pub(super) fn read_obj(path: &Path, bytes: &[u8]) -> Result<Frame> {
    read_obj_walked(path, bytes, None)
}

/// [`read_obj`], also following the file's points into `walk` when given.
pub(super) fn read_obj_walked(path: &Path, bytes: &[u8], walk: Option<&mut ObjPointWalk>) -> Result<Frame> {
    let part = || format!("{}", path.display());
    // tobj computes offsets from face indices unchecked (an index of 0 or far past the end wraps or
    // overflows), so every face index is checked against what precedes it first.
    let extras = check_obj_indices(bytes, walk).map_err(|problem| invalid(part(), problem))?;
    let options =
        tobj::LoadOptions { single_index: true, triangulate: true, ignore_points: true, ignore_lines: true };
    // A malformed file must be a typed error even if the third-party parser panics on it.
    let loaded = std::panic::catch_unwind(|| {
        let mut reader = std::io::BufReader::new(bytes);
        tobj::load_obj_buf(&mut reader, &options, |_| Err(tobj::LoadError::OpenFileFailed))
    })
    .map_err(|_| invalid(part(), "the OBJ reader failed on this file (malformed OBJ)"))?;
    let (models, _materials) =
        loaded.map_err(|e| invalid(part(), format!("is not a readable OBJ file: {e}")))?;
    let mut frame = Frame {
        positions: Vec::new(),
        normals: Some(Vec::new()),
        uvs: Some(Vec::new()),
        indices: Vec::new(),
        notes: extras.notes(),
    };
    for model in &models {
        let m = &model.mesh;
        let base = frame.positions.len() as u32;
        let n = m.positions.len() / 3;
        if m.indices.iter().any(|&i| i as usize >= n) {
            return Err(invalid(
                part(),
                format!("object {:?} has a face index past its {n} vertices", model.name),
            ));
        }
        frame.positions.extend(m.positions.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])));
        match (&mut frame.normals, m.normals.len() == 3 * n) {
            (Some(all), true) => all.extend(m.normals.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2]))),
            (normals, _) => *normals = None,
        }
        match (&mut frame.uvs, m.texcoords.len() == 2 * n) {
            // OBJ's v grows upwards; glTF's (and vat's) downwards.
            (Some(all), true) => all.extend(m.texcoords.chunks_exact(2).map(|c| Vec2::new(c[0], 1.0 - c[1]))),
            (uvs, _) => *uvs = None,
        }
        frame.indices.extend(m.indices.iter().map(|&i| i + base));
    }
    if frame.positions.is_empty() || frame.indices.is_empty() {
        return Err(invalid(part(), "has no triangles"));
    }
    Ok(frame)
}

/// An OBJ mesh read as [`read_obj`] reads a frame, with each vertex's point: the index of the `v`
/// statement its position comes from (0-based, in file order), as tools that store one texel per
/// point (Houdini's VAT 3) number them.
pub(crate) struct ObjPoints {
    /// Rest positions per vertex.
    pub(crate) positions: Vec<Vec3>,
    /// Unit normals per vertex, when every vertex has one.
    pub(crate) normals: Option<Vec<Vec3>>,
    /// Texture coordinates per vertex (glTF convention), when every vertex has one.
    pub(crate) uvs: Option<Vec<Vec2>>,
    /// Triangle list.
    pub(crate) indices: Vec<u32>,
    /// The point of each vertex.
    pub(crate) point_of: Vec<u32>,
    /// `v` statements in the file.
    pub(crate) point_count: usize,
    /// What the file had that the mesh leaves out, one line each.
    pub(crate) notes: Vec<String>,
}

/// Reads an OBJ mesh with each vertex's point ([`ObjPoints`]). The points are followed through the
/// file's faces (fan-triangulated, as the OBJ reader does) and checked against the reader's output
/// corner by corner, position bits and all: a file where they cannot be followed is an error, never a
/// guess.
///
/// # Errors
/// Those of reading an OBJ frame; [`BakeError::InvalidInput`] when the points cannot be followed.
pub(crate) fn read_obj_points(path: &Path, bytes: &[u8]) -> Result<ObjPoints> {
    let part = || format!("{}", path.display());
    let mut walk = ObjPointWalk::default();
    let frame = read_obj_walked(path, bytes, Some(&mut walk))?;
    let ObjPointWalk { points, corners } = walk;
    let unfollowed = |why: String| {
        invalid(
            part(),
            format!("its points cannot be followed to its vertices ({why}); export triangles or quads"),
        )
    };
    if corners.len() != frame.indices.len() {
        return Err(unfollowed(format!(
            "{} triangle corners, the reader made {}",
            corners.len(),
            frame.indices.len()
        )));
    }
    let mut point_of = vec![u32::MAX; frame.positions.len()];
    for (c, (&v, &p)) in frame.indices.iter().zip(&corners).enumerate() {
        let (v, pi) = (v as usize, p as usize);
        let same = points.get(pi).is_some_and(|q| {
            q.to_array().map(f32::to_bits) == frame.positions[v].to_array().map(f32::to_bits)
        });
        if !same || (point_of[v] != u32::MAX && point_of[v] != p) {
            return Err(unfollowed(format!("corner {c} of the triangles")));
        }
        point_of[v] = p;
    }
    if point_of.contains(&u32::MAX) {
        return Err(unfollowed("a vertex no triangle uses".into()));
    }
    Ok(ObjPoints {
        positions: frame.positions,
        normals: frame.normals,
        uvs: frame.uvs,
        indices: frame.indices,
        point_of,
        point_count: points.len(),
        notes: frame.notes,
    })
}

/// An OBJ file's points (its `v` statements, in order) and the point of each corner of its faces,
/// fan-triangulated as tobj triangulates them, as [`check_obj_indices`] follows them.
#[derive(Default)]
pub(super) struct ObjPointWalk {
    pub(super) points: Vec<Vec3>,
    pub(super) corners: Vec<u32>,
}

/// Checks that every index of every `f` and `l` statement of OBJ text names a position, texture
/// coordinate or normal defined above it (1-based, or negative: relative to the last one), as the OBJ
/// format requires, reading the lines the way tobj does; follows the points into `walk` when given.
pub(super) fn check_obj_indices(
    bytes: &[u8],
    mut walk: Option<&mut ObjPointWalk>,
) -> std::result::Result<ObjExtras, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| format!("is not UTF-8 text (byte {})", e.valid_up_to()))?;
    let mut counts = [0i64; 3]; // v, vt, vn
    let mut extras = ObjExtras::default();
    for (n, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let first = words.next();
        match first {
            Some("p") => extras.points_and_lines += 1,
            Some("usemtl" | "mtllib") => extras.materials += 1,
            Some("v") => {
                counts[0] += 1;
                if line.split_whitespace().count() >= 7 {
                    extras.colours += 1;
                }
                if let Some(walk) = walk.as_deref_mut() {
                    let xyz: Vec<f32> =
                        words.by_ref().take(3).map(|w| w.parse().unwrap_or(f32::NAN)).collect();
                    walk.points.push(if xyz.len() == 3 {
                        Vec3::new(xyz[0], xyz[1], xyz[2])
                    } else {
                        Vec3::NAN
                    });
                }
            }
            Some("vt") => counts[1] += 1,
            Some("vn") => counts[2] += 1,
            Some("f" | "l") => {
                if first == Some("l") {
                    extras.points_and_lines += 1;
                }
                let mut face = Vec::new();
                for word in words {
                    for (slot, token) in word.split('/').enumerate().take(3) {
                        if token.is_empty() {
                            continue;
                        }
                        let Ok(index) = token.parse::<i64>() else {
                            return Err(format!("line {}: {token:?} is not a face index", n + 1));
                        };
                        let count = counts[slot];
                        let resolved = if index < 0 { count + index } else { index - 1 };
                        if !(0..count).contains(&resolved) {
                            let what = ["position", "texture coordinate", "normal"][slot];
                            return Err(format!(
                                "line {}: face index {index} names no {what} ({count} defined above it)",
                                n + 1
                            ));
                        }
                        if slot == 0 {
                            face.push(resolved as u32);
                        }
                    }
                }
                if let Some(walk) = walk.as_deref_mut()
                    && first == Some("f")
                {
                    for k in 1..face.len().saturating_sub(1) {
                        walk.corners.extend([face[0], face[k], face[k + 1]]);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(extras)
}

/// Reads a glTF frame: the file's body meshes merged in their rest pose (see
/// [`VertexSet::from_rig`]; rigid meshes at their nodes' transforms).
pub(super) fn read_gltf(path: &Path, max_memory: u64) -> Result<Frame> {
    let rig = gltf_import::import_file(path, &ImportOptions { max_memory, ..ImportOptions::default() })?;
    let set = VertexSet::from_rig(&rig)?;
    let rest = crate::skin::skin_pose(&rig, &set, &crate::sample::rest_pose(&rig));
    let notes = rig.notes.clone();
    Ok(Frame {
        positions: rest.positions,
        normals: Some(rest.normals),
        uvs: set.uvs,
        indices: set.indices,
        notes,
    })
}
