//! Detecting rigid pieces in per-frame vertex positions and fitting their transforms.

use super::*;

/// Largest distance (metres) a vertex of a mesh sequence may be from where its piece's fitted
/// rigid motion puts it, for [`RigidSource::from_sequence`] to call the piece rigid: 0.1 mm.
pub const RIGID_DETECTION_TOLERANCE: f32 = 1e-4;

impl RigidSource {
    /// The pieces of a mesh sequence held in memory, detected as rigid: [`RigidSource::from_frames`]
    /// over its frames.
    ///
    /// # Errors
    /// Those of [`crate::sequence::MeshSequence::validate`] and [`RigidSource::from_frames`].
    pub fn from_sequence(seq: &crate::sequence::MeshSequence, tolerance: f32) -> Result<(Self, f64)> {
        seq.validate()?;
        let frames = crate::sequence::SequenceFrames(seq);
        Self::from_frames(&seq.name, seq.fps, &seq.indices, seq.uvs.as_deref(), &frames, tolerance)
    }

    /// The pieces of a sequence folder, detected as rigid as its files are read, a few frames at
    /// a time ([`RigidSource::from_frames`]): memory in proportion to one frame per thread, not to
    /// the sequence.
    ///
    /// # Errors
    /// Those of [`RigidSource::from_frames`], and a file that changed since it was checked.
    pub fn from_folder(folder: &crate::sequence::SequenceFolder, tolerance: f32) -> Result<(Self, f64)> {
        Self::from_frames(folder.name(), folder.fps(), folder.indices(), folder.uvs(), folder, tolerance)
    }

    /// The pieces of a mesh sequence (the same triangles `indices` in every frame of `frames`, at
    /// `fps` frames per second), detected as rigid: the connected components of its triangles,
    /// where vertices at the same position in every frame count as one (a flat-shaded piece's split
    /// vertices; pieces that only touch at rest stay apart once they move); each component's motion
    /// from frame 0 fitted as a rotation about its frame-0 centroid and a translation (Horn's closed
    /// form, in f64). Every vertex must be within `tolerance` metres of its fitted position at every
    /// frame. One one-shot clip named `name`, one baked frame per source frame at its rate. Normals
    /// and positions of the rest pieces from frame 0; texture coordinates from `uvs`; material id 0.
    /// Returns the source and the largest fit residual, metres.
    ///
    /// The frames are read as they are needed and dropped after, one per thread at a time: once to
    /// tell apart vertices that share a frame-0 position (skipped when none do), once to fit the
    /// pieces. Only frame 0 and the fitted transforms stay in memory.
    ///
    /// # Errors
    /// [`BakeError::InvalidInput`] naming the piece, frame and residual when a component does not
    /// move rigidly within `tolerance`; naming the frame for a frame of the wrong vertex count or
    /// with values that are not finite; for no frames, a triangle list that is not whole triangles
    /// of the frame's vertices, or texture coordinates that do not match them.
    /// [`BakeError::InvalidOption`] for a `tolerance` that is not finite and `>= 0` or an `fps` that
    /// is not finite and `> 0`. The errors of `frames`' reads.
    pub fn from_frames(
        name: &str,
        fps: f32,
        indices: &[u32],
        uvs: Option<&[glam::Vec2]>,
        frames: &dyn crate::rig::BodyFrames,
        tolerance: f32,
    ) -> Result<(Self, f64)> {
        check_options(fps, tolerance)?;
        let sequence = Sequence { name, frames, n: frames.vertex_count() };
        sequence.check(indices, uvs)?;
        let rest = sequence.read(0)?;
        let followed = sequence.shared_trajectories(&rest)?;
        let (piece_of, members) = components(sequence.n, indices, followed);
        let pieces = rest_pieces(&members, &piece_of, &rest, uvs, indices);
        let (clip_frames, worst) = sequence.fit(&members, &pieces, &rest, tolerance)?;
        let clip = RigidClip { name: name.to_string(), fps, looping: false, frames: clip_frames };
        Ok((Self { name: name.to_string(), pieces, clips: vec![clip], materials: None }, worst))
    }
}

/// An error for a `tolerance` that is not a finite distance `>= 0` or an `fps` that is not a
/// finite rate `> 0`.
fn check_options(fps: f32, tolerance: f32) -> Result<()> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(BakeError::InvalidOption {
            option: "rigid tolerance",
            problem: format!("{tolerance} is not a finite distance >= 0"),
        });
    }
    if !(fps.is_finite() && fps > 0.0) {
        return Err(BakeError::InvalidOption {
            option: "--fps",
            problem: format!("{fps} is not a finite rate > 0"),
        });
    }
    Ok(())
}

/// The frames of a mesh sequence whose pieces are detected, with its name and vertex count.
struct Sequence<'s> {
    name: &'s str,
    frames: &'s dyn crate::rig::BodyFrames,
    n: usize,
}

impl Sequence<'_> {
    /// An error for no frames, a triangle list that is not whole triangles of the vertices, or
    /// texture coordinates that do not match them.
    fn check(&self, indices: &[u32], uvs: Option<&[glam::Vec2]>) -> Result<()> {
        let (name, n) = (self.name, self.n);
        let part = || format!("sequence \"{name}\"");
        if self.frames.frame_count() == 0 {
            return Err(BakeError::InvalidInput { part: part(), problem: "has no frames".into() });
        }
        if !indices.len().is_multiple_of(3) || indices.iter().any(|&i| i as usize >= n) {
            return Err(BakeError::InvalidInput {
                part: part(),
                problem: format!("its {} indices are not whole triangles of its {n} vertices", indices.len()),
            });
        }
        if let Some(uv) = uvs
            && (uv.len() != n || uv.iter().any(|t| !t.is_finite()))
        {
            return Err(BakeError::InvalidInput {
                part: part(),
                problem: format!("needs {n} finite texture coordinates, has {}", uv.len()),
            });
        }
        Ok(())
    }

    /// Frame `f`, checked: every vertex with a finite position and normal.
    fn read(&self, f: usize) -> Result<crate::rig::BodyFrame> {
        let n = self.n;
        let frame = self.frames.read_frame(f)?;
        if frame.positions.len() != n
            || frame.normals.len() != n
            || frame.positions.iter().chain(&frame.normals).any(|p| !p.is_finite())
        {
            return Err(BakeError::InvalidInput {
                part: format!("sequence \"{}\" frame {f}", self.name),
                problem: format!(
                    "needs {n} finite positions and normals, has {} and {}",
                    frame.positions.len(),
                    frame.normals.len()
                ),
            });
        }
        Ok(frame)
    }

    /// Vertices with the same trajectory: one class split frame by frame by the vertices'
    /// positions there (`(vertex, class)` pairs of the vertices that still share a class). Only
    /// vertices that still share a class are followed, so a sequence without split vertices is not
    /// read for this.
    fn shared_trajectories(&self, rest: &crate::rig::BodyFrame) -> Result<Vec<(usize, u32)>> {
        use rayon::prelude::*;
        let frame_count = self.frames.frame_count();
        let mut followed: Vec<(usize, u32)> = (0..self.n).map(|v| (v, 0)).collect();
        split_by_position(&mut followed, &rest.positions);
        let threads = rayon::current_num_threads().max(1);
        let mut next_frame = 1;
        while next_frame < frame_count && !followed.is_empty() {
            let batch: Vec<usize> = (next_frame..frame_count.min(next_frame + threads)).collect();
            next_frame += batch.len();
            let read_batch: Vec<Result<crate::rig::BodyFrame>> =
                batch.par_iter().map(|&f| self.read(f)).collect();
            for frame in read_batch {
                split_by_position(&mut followed, &frame?.positions);
            }
        }
        Ok(followed)
    }

    /// Every frame's fit of every piece (`members`: each piece's vertices), a frame per task: the
    /// transforms per frame and the largest residual; the first frame in order that fails is the
    /// error.
    fn fit(
        &self,
        members: &[Vec<usize>],
        pieces: &[RigidPiece],
        rest: &crate::rig::BodyFrame,
        tolerance: f32,
    ) -> Result<(Vec<Vec<PieceTransform>>, f64)> {
        use rayon::prelude::*;
        let name = self.name;
        let fit_frame = |f: usize, frame: &[Vec3]| -> Result<(Vec<PieceTransform>, f64)> {
            let mut worst = 0.0f64;
            let mut transforms = Vec::with_capacity(members.len());
            for (k, vs) in members.iter().enumerate() {
                let (t, residual) =
                    fit_rigid(vs.iter().map(|&v| (rest.positions[v], frame[v])), pieces[k].rest_pivot);
                if residual > f64::from(tolerance) {
                    return Err(BakeError::InvalidInput {
                        part: format!("sequence \"{name}\" frame {f}, piece {k} ({} vertices)", vs.len()),
                        problem: format!(
                            "does not move rigidly: a vertex is {:.4} mm from the best rigid fit (tolerance \
                             {:.4} mm); bake the sequence in the soft mode",
                            residual * 1e3,
                            f64::from(tolerance) * 1e3
                        ),
                    });
                }
                worst = worst.max(residual);
                transforms.push(t);
            }
            Ok((transforms, worst))
        };
        let frame_count = self.frames.frame_count();
        let fits: Vec<Result<(Vec<PieceTransform>, f64)>> = (0..frame_count)
            .into_par_iter()
            .map(|f| match f {
                0 => fit_frame(0, &rest.positions),
                _ => fit_frame(f, &self.read(f)?.positions),
            })
            .collect();
        let mut worst = 0.0f64;
        let mut clip_frames = Vec::with_capacity(frame_count);
        for fit in fits {
            let (transforms, residual) = fit?;
            worst = worst.max(residual);
            clip_frames.push(transforms);
        }
        Ok((clip_frames, worst))
    }
}

/// The pieces: connected components of the triangles, where vertices with the same trajectory
/// (`followed`'s classes) count as one. Returns each vertex's piece and each piece's vertices, in
/// order of their first vertex.
fn components(n: usize, indices: &[u32], followed: Vec<(usize, u32)>) -> (Vec<usize>, Vec<Vec<usize>>) {
    // Union-find over vertices: triangles, and identical trajectories.
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(parent: &mut [usize], mut v: usize) -> usize {
        while parent[v] != v {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        v
    }
    let union = |parent: &mut Vec<usize>, a: usize, b: usize| {
        let (ra, rb) = (find(parent, a), find(parent, b));
        if ra != rb {
            parent[ra.max(rb)] = ra.min(rb);
        }
    };
    for t in indices.chunks_exact(3) {
        union(&mut parent, t[0] as usize, t[1] as usize);
        union(&mut parent, t[1] as usize, t[2] as usize);
    }
    let mut twin: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for &(v, class) in &followed {
        let w = *twin.entry(class).or_insert(v);
        union(&mut parent, v, w);
    }
    drop(followed);
    // Components in order of their first vertex.
    let mut component_of = vec![usize::MAX; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut piece_of = Vec::with_capacity(n);
    for v in 0..n {
        let r = find(&mut parent, v);
        if component_of[r] == usize::MAX {
            component_of[r] = members.len();
            members.push(Vec::new());
        }
        let c = component_of[r];
        members[c].push(v);
        piece_of.push(c);
    }
    (piece_of, members)
}

/// The pieces at rest (frame 0): each one's vertices (`members`), pivot at their centroid, and
/// the triangles of the vertices `piece_of` puts in it.
fn rest_pieces(
    members: &[Vec<usize>],
    piece_of: &[usize],
    rest: &crate::rig::BodyFrame,
    uvs: Option<&[glam::Vec2]>,
    indices: &[u32],
) -> Vec<RigidPiece> {
    let mut local_index = vec![0u32; piece_of.len()];
    let mut pieces = Vec::with_capacity(members.len());
    for (k, vs) in members.iter().enumerate() {
        for (i, &v) in vs.iter().enumerate() {
            local_index[v] = i as u32;
        }
        let c0 = centroid(vs.iter().map(|&v| rest.positions[v]));
        pieces.push(RigidPiece {
            name: format!("piece {k}"),
            positions: vs.iter().map(|&v| rest.positions[v].to_array()).collect(),
            normals: vs.iter().map(|&v| rest.normals[v].to_array()).collect(),
            material_ids: vec![0; vs.len()],
            uvs: uvs.map(|uv| vs.iter().map(|&v| uv[v].to_array()).collect()),
            colors: None,
            indices: Vec::new(),
            rest_pivot: [c0[0] as f32, c0[1] as f32, c0[2] as f32],
        });
    }
    for t in indices.chunks_exact(3) {
        let c = piece_of[t[0] as usize];
        pieces[c].indices.extend(t.iter().map(|&v| local_index[v as usize]));
    }
    pieces
}

/// Splits the classes of `followed` (`(vertex, class)` pairs) by the vertices' `positions`
/// (exact, on the bits; -0 is +0), and stops following a vertex left alone in its class: it has
/// no twin whose path it could share.
pub(super) fn split_by_position(followed: &mut Vec<(usize, u32)>, positions: &[Vec3]) {
    let bits = |p: Vec3| p.to_array().map(|x| (x + 0.0).to_bits());
    let mut split: std::collections::HashMap<(u32, [u32; 3]), (u32, u32)> = std::collections::HashMap::new();
    for (v, class) in followed.iter_mut() {
        let next = split.len() as u32;
        let entry = split.entry((*class, bits(positions[*v]))).or_insert((next, 0));
        entry.1 += 1;
        *class = entry.0;
    }
    let alone: std::collections::HashSet<u32> =
        split.values().filter(|&&(_, count)| count == 1).map(|&(c, _)| c).collect();
    followed.retain(|(_, class)| !alone.contains(class));
}

/// The mean of `points`, f64.
pub(super) fn centroid(points: impl Iterator<Item = Vec3>) -> [f64; 3] {
    let (mut sum, mut count) = ([0.0f64; 3], 0usize);
    for p in points {
        for a in 0..3 {
            sum[a] += f64::from(p[a]);
        }
        count += 1;
    }
    sum.map(|s| s / count.max(1) as f64)
}

/// The rigid motion taking each `(rest, now)` pair's rest point to its current point best (least
/// squares; Horn's quaternion method), as a piece transform whose pivot rests at `rest_pivot`,
/// and the largest distance of a current point from where the motion puts its rest point.
pub(super) fn fit_rigid(
    pairs: impl Iterator<Item = (Vec3, Vec3)> + Clone,
    rest_pivot: [f32; 3],
) -> (PieceTransform, f64) {
    let c0 = rest_pivot.map(f64::from);
    let c1 = centroid(pairs.clone().map(|(_, b)| b));
    let mut m = [[0.0f64; 3]; 3];
    for (a, b) in pairs.clone() {
        let p: [f64; 3] = std::array::from_fn(|i| f64::from(a[i]) - c0[i]);
        let q: [f64; 3] = std::array::from_fn(|i| f64::from(b[i]) - c1[i]);
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += p[i] * q[j];
            }
        }
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = m;
    // Horn's symmetric matrix; its eigenvector of the largest eigenvalue is the rotation (w, x, y, z).
    let nmat = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    let [w, x, y, z] = largest_eigenvector(nmat);
    let q = [x as f32, y as f32, z as f32, w as f32];
    let t = PieceTransform { pivot: c1.map(|v| v as f32), rotation: q };
    let residual = pairs
        .map(|(a, b)| {
            let want = place_f64(&t, rest_pivot, a.to_array());
            (0..3).map(|i| (want[i] - f64::from(b[i])).powi(2)).sum::<f64>().sqrt()
        })
        .fold(0.0, f64::max);
    (t, residual)
}

/// The unit eigenvector of the largest eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi).
pub(super) fn largest_eigenvector(mut a: [[f64; 4]; 4]) -> [f64; 4] {
    let mut v = [[0.0f64; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _ in 0..50 {
        let off: f64 = (0..4)
            .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..4 {
            for q in p + 1..4 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in &mut a {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (row_p, row_q) = (a[p], a[q]);
                for k in 0..4 {
                    a[p][k] = c * row_p[k] - s * row_q[k];
                    a[q][k] = s * row_p[k] + c * row_q[k];
                }
                for row in &mut v {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let best = (0..4).fold(0, |b, i| if a[i][i] > a[b][b] { i } else { b });
    let e = [v[0][best], v[1][best], v[2][best], v[3][best]];
    let len = e.iter().map(|c| c * c).sum::<f64>().sqrt();
    if len > 0.0 { e.map(|c| c / len) } else { [1.0, 0.0, 0.0, 0.0] }
}

/// The rigid transform of `relative` (rotation + translation, no scale) as a piece transform whose
/// pivot rests at `rest_pivot`; a message if it scales, shears or is not finite.
pub(super) fn rigid_transform(
    relative: &Mat4,
    rest_pivot: [f32; 3],
) -> std::result::Result<PieceTransform, String> {
    if !relative.is_finite() {
        return Err("the node's transform is not finite".into());
    }
    let (scale, rotation, _) = relative.to_scale_rotation_translation();
    if (scale - Vec3::ONE).abs().max_element() > RIGID_SCALE_TOLERANCE {
        return Err(format!(
            "the node scales by {:?} from its rest pose; a rigid piece only moves and turns",
            scale.to_array()
        ));
    }
    // Shear: the rotation must reproduce the matrix's axes.
    let m = Mat4::from_quat(rotation);
    for (a, b) in [(m.x_axis, relative.x_axis), (m.y_axis, relative.y_axis), (m.z_axis, relative.z_axis)] {
        if (a.truncate() - b.truncate()).abs().max_element() > 10.0 * RIGID_SCALE_TOLERANCE {
            return Err("the node shears from its rest pose; a rigid piece only moves and turns".into());
        }
    }
    let pivot = relative.transform_point3(Vec3::from(rest_pivot));
    Ok(PieceTransform { pivot: pivot.to_array(), rotation: rotation.normalize().to_array() })
}

/// `pivot + rotate(q, p - rest_pivot)` in f64: where a source vertex is at a frame.
pub(super) fn place_f64(t: &PieceTransform, rest_pivot: [f32; 3], p: [f32; 3]) -> [f64; 3] {
    let q = t.rotation.map(f64::from);
    let len = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    let (u, w) = if len > 0.0 { ([q[0] / len, q[1] / len, q[2] / len], q[3] / len) } else { ([0.0; 3], 1.0) };
    let v: [f64; 3] = std::array::from_fn(|a| f64::from(p[a]) - f64::from(rest_pivot[a]));
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    };
    let c1 = cross(u, v);
    let c2 = cross(u, std::array::from_fn(|a| c1[a] + w * v[a]));
    std::array::from_fn(|a| f64::from(t.pivot[a]) + v[a] + 2.0 * c2[a])
}
