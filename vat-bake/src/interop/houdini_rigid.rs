//! SideFX Labs VAT 3 rigid-body bakes (`VAT Type` `Rigidbody`): each piece's transform at each
//! frame, decoded as VAT 3's shaders decode it, into a [`RigidSource`] for vat's rigid mode.
//!
//! One texel per piece per frame. A piece is the set of mesh vertices whose `TEXCOORD_1` is one
//! texel centre of the first frame's block of rows; frame `f` is `f` blocks lower (frame 0 is the
//! first scanline). HDR bakes (float EXR) hold:
//!
//! | where | holds |
//! |---|---|
//! | `_pos` RGB | the piece's pivot at the frame, object space, metres, as it is |
//! | `_pos` A | `i / 4`: which quaternion component `_rot` leaves out (0: w, 1: x, 2: y, 3: z; any other value reads as 0, as the shaders' `default`); a fraction past `i / 4` is a piece scale, which vat's rigid mode cannot hold (refused) |
//! | `_rot` RGB | the other three components ("smallest three"): `(x, y, z)`, `(w, y, z)`, `(x, w, z)` or `(x, y, w)` for `i` = 0..3; the left-out one is `sqrt(1 - r² - g² - b²)` |
//! | `_rot` A | the piece's turn to the next frame, in rotations per frame, signed |
//! | mesh `TEXCOORD_2.x`, `TEXCOORD_3.xy` | the piece's rest pivot (x; y, z) |
//!
//! A vertex at rest position `p` is at `pivot(f) + rotate(q(f), p - rest_pivot)`, its normal
//! `rotate(q(f), n)`: vat's rigid model exactly, so a key frame carries over as it is. Between
//! frames VAT 3's shaders move the pivot linearly and turn the piece along the great circle from
//! `q(f)` to `q(f + 1)` at the pace its rotations per frame give (a slerp, not the shortest-path
//! nlerp vat decodes with, and more than half a turn a frame when the piece spins that fast); they
//! hold the rotation when the rate is at most `1e-4`. So the import bakes `substeps` frames per
//! source frame, the in-between ones at VAT 3's own in-between transforms, enough for vat's decode
//! to stay within [`HOUDINI_RIGID_TURN_TOLERANCE_DEG`] of VAT 3's between frames.
//!
//! Out of scope, refused with a typed error: LDR (8/16-bit PNG) rigid bakes (no reference bake of
//! their alpha encoding was available to test against), `Two Position Textures`, piece scales.

use std::collections::BTreeMap;
use std::path::Path;

use glam::{DMat3, DQuat, DVec3, Vec2, Vec3};

use super::houdini::{HoudiniData, check_height, is_padding_vertex, texture_is_hdr};
use super::images::Texture;
use super::{Budget, LookupMesh, bad};
use crate::Result;
use crate::rigid::{PieceTransform, RigidClip, RigidPiece, RigidSource};

/// The largest angle, degrees, by which vat's decode of an imported rigid-body bake may turn a piece
/// away from where VAT 3's shaders turn it between two source frames, when the substeps are chosen
/// automatically (measured at eight points of every in-between frame; the wrap from the last frame
/// back to the first is not held to it).
pub const HOUDINI_RIGID_TURN_TOLERANCE_DEG: f64 = 0.5;

/// The most frames an automatic import bakes per source frame.
pub const HOUDINI_RIGID_MAX_SUBSTEPS: u32 = 8;

/// The rate, rotations per frame, at or below which VAT 3's shaders do not turn a piece between frames.
const STILL_RATE: f64 = 1e-4;

/// A decoded VAT 3 rigid-body bake.
///
/// The layout read: one texel per piece per frame, at the piece's `TEXCOORD_1` texel, frame `f`
/// `f` blocks of rows lower (frame 0 the first scanline). `_pos` RGB is the piece's pivot (object
/// space, metres) and A `i / 4`, the index of the quaternion component `_rot` leaves out (0: w,
/// 1: x, 2: y, 3: z); `_rot` RGB holds the other three ("smallest three") and A the turn to the next
/// frame in rotations per frame; the mesh's `TEXCOORD_2.x`, `TEXCOORD_3.xy` hold the piece's rest
/// pivot. A vertex is `pivot(f) + rotate(q(f), p - rest_pivot)`, which is vat's rigid model, so key
/// frames carry over as they are; between frames VAT 3's shaders slerp at the stored rate where vat
/// nlerps, so the bake has [`ImportedRigidBake::substeps`] frames per source frame, the in-between
/// ones at VAT 3's own in-between transforms.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRigidBake {
    /// The pieces and one looping clip (VAT 3's shaders loop) of `source_frames * substeps` frames at
    /// `source_fps * substeps`: frame `f * substeps` is source frame `f`, the others VAT 3's
    /// in-between transforms.
    pub source: RigidSource,
    /// Frames in the bake (`Frame Count`).
    pub source_frames: usize,
    /// Its rate (`Houdini FPS`).
    pub source_fps: f32,
    /// Frames baked per source frame (1: the source's frames only).
    pub substeps: u32,
    /// The largest in-between turn of a piece, degrees a frame, VAT 3's shaders make (from the
    /// rotations per frame, not counting the wrap).
    pub fastest_turn_deg: f64,
    /// The largest angle, degrees, between vat's decode and VAT 3's between source frames (vat's
    /// interpolation of the substeps against VAT 3's turn; not counting the wrap, nor pieces VAT 3
    /// holds, which `notes` counts).
    pub turn_max_deg: f64,
    /// What the import left out or chose, one line each.
    pub notes: Vec<String>,
}

/// What a rigid-body import reads, parsed and decoded.
pub struct RigidParts<'a> {
    /// The bake's name (`<name>_data.json`), for messages and the mesh's name.
    pub name: &'a str,
    /// The parsed `_data.json`.
    pub data: &'a HoudiniData,
    /// Where `_data.json` was read from, for messages.
    pub json_path: &'a Path,
    /// Where the position texture was read from, for messages.
    pub pos_path: &'a Path,
    /// The position texture (pivots), decoded.
    pub pos: &'a Texture,
    /// Where the rotation texture was read from, for messages.
    pub rot_path: &'a Path,
    /// The rotation texture, decoded.
    pub rot: &'a Texture,
    /// Where `_mesh.glb` was read from, for messages.
    pub mesh_path: &'a Path,
    /// `_mesh.glb`'s mesh.
    pub mesh: &'a LookupMesh,
    /// `TEXCOORD_2` and `TEXCOORD_3` of every mesh vertex.
    pub pivots: &'a (Vec<Vec2>, Vec<Vec2>),
    /// Whether the folder has a `_col` texture (not read).
    pub has_colour: bool,
}

/// `TEXCOORD_2` and `TEXCOORD_3` of a rigid bake's mesh (the rest pivots).
pub fn pivot_uvs(bytes: &[u8], path: &Path, budget: &Budget) -> Result<(Vec<Vec2>, Vec<Vec2>)> {
    let what = "the rest pivot of each vertex's piece: x in TEXCOORD_2.x, y and z in TEXCOORD_3";
    Ok((
        super::uv_set_from_bytes(bytes, path, budget, 2, what)?,
        super::uv_set_from_bytes(bytes, path, budget, 3, what)?,
    ))
}

/// The quaternion of a texel: the three stored components and the index of the one left out.
fn texel_quaternion(stored: DVec3, left_out: i64) -> DQuat {
    let w = (1.0f64 - stored.length_squared()).max(0.0).sqrt();
    let [a, b, c] = stored.to_array();
    match left_out {
        1 => DQuat::from_xyzw(w, b, c, a),
        2 => DQuat::from_xyzw(a, w, c, b),
        3 => DQuat::from_xyzw(a, b, w, c),
        _ => DQuat::from_xyzw(a, b, c, w),
    }
    .normalize()
}

fn fract(x: f64) -> f64 {
    x - x.floor()
}

/// VAT 3's turn between two key rotations at `alpha` in `[0, 1]` of the frame, for a rate of
/// `rate` rotations per frame: the great circle from `q0` to `q1` (taken into `q0`'s hemisphere,
/// then signed by the rate) at the rate's pace; `q0` when the rate is still.
fn vat3_turn(q0: DQuat, q1: DQuat, rate: f64, alpha: f64) -> DQuat {
    use std::f64::consts::TAU;
    if rate.abs() <= STILL_RATE {
        return q0;
    }
    let cycle = fract(rate) * 0.5;
    let at = fract(rate * alpha) * 0.5;
    let sin_cycle = (cycle * TAU).sin();
    if sin_cycle.abs() < 1e-9 {
        // A whole number of turns a frame: the shaders divide by zero here; hold.
        return q0;
    }
    let q1 = if q0.dot(q1) < 0.0 { -q1 } else { q1 };
    let q1 = if rate < 0.0 { -q1 } else { q1 };
    let q = (q0 * ((cycle - at) * TAU).sin() + q1 * (at * TAU).sin()) * (1.0 / sin_cycle);
    let len = q.length();
    if len > 1e-12 && len.is_finite() { q * (1.0 / len) } else { q0 }
}

/// vat's blend of two key rotations (normalised lerp, the second taken into the first's hemisphere).
fn nlerp(a: DQuat, b: DQuat, t: f64) -> DQuat {
    let b = if a.dot(b) < 0.0 { -b } else { b };
    (a * (1.0 - t) + b * t).normalize()
}

/// The rotation angle, radians, between two unit quaternions (either sign).
fn angle(a: DQuat, b: DQuat) -> f64 {
    2.0 * a.dot(b).abs().min(1.0).acos()
}

/// How far, radians, vat's decode of `k` substeps of one frame strays from VAT 3's turn.
fn segment_deviation(q0: DQuat, q1: DQuat, rate: f64, k: u32) -> f64 {
    if rate.abs() <= STILL_RATE {
        return 0.0;
    }
    let key = |j: u32| if j == k { q1 } else { vat3_turn(q0, q1, rate, f64::from(j) / f64::from(k)) };
    let mut worst = 0.0f64;
    let mut a = key(0);
    for j in 0..k {
        let b = key(j + 1);
        for s in 1..8 {
            let t = f64::from(s) / 8.0;
            let alpha = (f64::from(j) + t) / f64::from(k);
            worst = worst.max(angle(vat3_turn(q0, q1, rate, alpha), nlerp(a, b, t)));
        }
        a = b;
    }
    worst
}

/// A node transform's linear part as a rotation and a uniform scale, or `None` when it shears or
/// scales unevenly (pieces' rotations could not be carried into the scene).
fn orthonormal_part(linear: glam::Mat3) -> Option<DMat3> {
    let l = linear.as_dmat3();
    let s = l.determinant().abs().cbrt();
    if !(s.is_finite() && s > 0.0) {
        return None;
    }
    let o = l * (1.0 / s);
    let err =
        (o.transpose() * o - DMat3::IDENTITY).to_cols_array().iter().fold(0.0f64, |m, x| m.max(x.abs()));
    (err < 1e-4).then_some(o)
}

/// Refuses what [`decode`] cannot import: an LDR bake, an 8/16-bit rotation texture, two
/// position textures, substeps outside 1 to 64, textures of different sizes, pivot UV sets that do
/// not have the mesh's vertices.
fn check_parts(parts: &RigidParts<'_>, substeps: Option<u32>) -> Result<()> {
    let RigidParts { data, json_path, pos_path, pos, rot_path, rot, mesh_path, mesh, pivots, .. } = *parts;
    if !texture_is_hdr(data, pos_path, pos)? {
        return Err(bad(
            json_path,
            "Use HDR Textures",
            "is 0: LDR (8/16-bit) rigid-body bakes are not imported (no reference bake of their rotation \
             encoding was available to test against); re-export the bake with Use HDR Textures (float EXR)",
        ));
    }
    if matches!(rot.kind, super::images::SampleKind::Unorm(_)) {
        return Err(bad(
            rot_path,
            "the rotation texture",
            "is an 8/16-bit PNG in an HDR bake: need a float EXR",
        ));
    }
    if data.two_position_textures {
        return Err(bad(
            json_path,
            "Two Position Textures",
            "is 1: the second position texture is not read; re-export the bake with one position texture",
        ));
    }
    if let Some(k) = substeps
        && !(1..=64).contains(&k)
    {
        return Err(crate::BakeError::InvalidOption {
            option: "substeps",
            problem: format!("{k} is not in 1..=64"),
        });
    }
    let (w, h) = (pos.width, pos.height);
    if (rot.width, rot.height) != (w, h) {
        return Err(bad(
            rot_path,
            "the rotation texture",
            format!("is {} x {}, the position texture {w} x {h}: they must match", rot.width, rot.height),
        ));
    }
    let n = mesh.positions.len();
    let (uv2, uv3) = pivots;
    if uv2.len() != n || uv3.len() != n {
        return Err(bad(
            mesh_path,
            "TEXCOORD_2 / TEXCOORD_3",
            format!("do not have the mesh's {n} vertices"),
        ));
    }
    Ok(())
}

/// A rigid bake's pieces, in texel order.
struct Pieces {
    /// Each piece's texel `(column, first row)`.
    texels: Vec<(usize, usize)>,
    /// Each piece's mesh vertices.
    members: Vec<Vec<usize>>,
    /// Each piece's triangles, as indices into its own vertices.
    piece_indices: Vec<Vec<u32>>,
    /// Each piece's rest pivot, scene space.
    rest_pivots: Vec<Vec3>,
    /// Each piece's mesh (the node whose transform carries it into the scene).
    piece_mesh: Vec<usize>,
    /// Each mesh's node transform as a rotation, when it is one (see [`orthonormal_part`]).
    orthonormal: Vec<Option<DMat3>>,
    /// How far a piece's vertices' rest pivots may lie apart, and frame 0 from the rest pose.
    tolerance: f32,
}

/// Groups the mesh's vertices into pieces by the texel they read, checks their rest pivots and
/// meshes, splits the triangles among them (leaving out those of bounds extenders, with a note),
/// and charges the decoded pieces to `budget`.
fn group_pieces(
    parts: &RigidParts<'_>,
    lookup: &super::openvat::Lookup,
    substeps: Option<u32>,
    budget: &mut Budget,
    notes: &mut Vec<String>,
) -> Result<Pieces> {
    let RigidParts { data, mesh_path, mesh, pivots, .. } = *parts;
    let frames = data.frames;
    let n = mesh.positions.len();
    let (uv2, uv3) = pivots;
    // Pieces in texel order; each vertex's piece and its index within it.
    let mut piece_of_texel = BTreeMap::new();
    for v in 0..n {
        if lookup.col[v] != u32::MAX {
            piece_of_texel.insert((lookup.row[v], lookup.col[v]), 0u32);
        }
    }
    for (k, p) in piece_of_texel.values_mut().enumerate() {
        *p = k as u32;
    }
    let texels: Vec<(usize, usize)> = piece_of_texel.keys().map(|&(r, c)| (c as usize, r as usize)).collect();
    let pieces_n = texels.len();
    budget.charge(
        "the decoded pieces",
        (frames as u64).saturating_mul(pieces_n as u64).saturating_mul(
            u64::from(substeps.unwrap_or(HOUDINI_RIGID_MAX_SUBSTEPS)).saturating_mul(28).saturating_add(64),
        ),
    )?;
    let mut piece_of = vec![u32::MAX; n];
    let mut local = vec![u32::MAX; n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); pieces_n];
    for v in 0..n {
        if lookup.col[v] != u32::MAX {
            let p = piece_of_texel[&(lookup.row[v], lookup.col[v])] as usize;
            piece_of[v] = p as u32;
            local[v] = members[p].len() as u32;
            members[p].push(v);
        }
    }
    let orthonormal: Vec<Option<DMat3>> = mesh.linear.iter().map(|l| orthonormal_part(*l)).collect();
    let extent = super::openvat::bbox_extent(&mesh.positions);
    let tolerance = 1e-4 * extent.max(1e-6);
    let mut rest_pivots = Vec::with_capacity(pieces_n);
    let mut piece_mesh = Vec::with_capacity(pieces_n);
    for (p, vs) in members.iter().enumerate() {
        let u = vs[0];
        let object_pivot = |v: usize| Vec3::new(uv2[v].x, uv3[v].x, uv3[v].y);
        let m = mesh.mesh_of[u] as usize;
        for &v in vs {
            if mesh.mesh_of[v] as usize != m {
                return Err(bad(
                    mesh_path,
                    format!("vertices {u} and {v}"),
                    format!("read piece {p}'s texel but belong to different meshes"),
                ));
            }
            let d = object_pivot(u).distance(object_pivot(v));
            if d.is_nan() || d > tolerance {
                return Err(bad(
                    mesh_path,
                    format!("vertices {u} and {v}"),
                    format!(
                        "read piece {p}'s texel but their rest pivots (TEXCOORD_2.x, TEXCOORD_3) lie {d:.6} apart: \
                         the mesh does not match the texture"
                    ),
                ));
            }
        }
        if orthonormal[m].is_none() {
            return Err(bad(
                mesh_path,
                format!("mesh {m}'s node transform"),
                "shears or scales unevenly: its pieces' rotations cannot be carried into the scene",
            ));
        }
        rest_pivots.push(mesh.matrix[m].transform_point3(object_pivot(u)));
        piece_mesh.push(m);
    }

    // Triangles: those of bounds extenders are left out; a kept one lies within one piece.
    let mut piece_indices: Vec<Vec<u32>> = vec![Vec::new(); pieces_n];
    let mut dropped = 0usize;
    for (t, tri) in mesh.indices.chunks_exact(3).enumerate() {
        let ps = [piece_of[tri[0] as usize], piece_of[tri[1] as usize], piece_of[tri[2] as usize]];
        if ps.contains(&u32::MAX) {
            dropped += 1;
            continue;
        }
        if ps[1] != ps[0] || ps[2] != ps[0] {
            return Err(bad(
                mesh_path,
                format!("triangle {t}"),
                format!(
                    "joins pieces {}, {} and {}: a rigid piece's triangles read one texel",
                    ps[0], ps[1], ps[2]
                ),
            ));
        }
        piece_indices[ps[0] as usize].extend(tri.iter().map(|&i| local[i as usize]));
    }
    let left_out = n - piece_of.iter().filter(|&&p| p != u32::MAX).count();
    if left_out > 0 {
        notes.push(format!(
            "{left_out} bounds-extender vertices (TEXCOORD_1 past the frames' rows, no texel) and {dropped} triangles \
             using them left out"
        ));
    }
    Ok(Pieces { texels, members, piece_indices, rest_pivots, piece_mesh, orthonormal, tolerance })
}

/// Each piece's key transform at each source frame, scene space: `keys[f * pieces + p]` =
/// `(pivot, rotation, rate)`. Refuses texels that are not finite, carry a piece scale or hold no
/// quaternion.
fn key_transforms(
    parts: &RigidParts<'_>,
    texels: &[(usize, usize)],
    piece_mesh: &[usize],
    orthonormal: &[Option<DMat3>],
    r: usize,
) -> Result<Vec<(DVec3, DQuat, f64)>> {
    let RigidParts { data, pos_path, pos, rot_path, rot, mesh, .. } = *parts;
    let frames = data.frames;
    let pieces_n = texels.len();
    // Key transforms, scene space: keys[f * pieces + p] = (pivot, rotation, rate).
    let mut keys: Vec<(DVec3, DQuat, f64)> = Vec::with_capacity(frames * pieces_n);
    for f in 0..frames {
        for (p, &(c, r0)) in texels.iter().enumerate() {
            let row = r0 + f * r;
            let [px, py, pz, pa] = pos.at(c, row);
            let [rx, ry, rz, ra] = rot.at(c, row);
            let at = |what: &str| format!("piece {p} at frame {f} ({what} texel ({c}, {row}))");
            if ![px, py, pz, pa].iter().all(|x| x.is_finite()) {
                return Err(bad(pos_path, at("position"), "is not finite"));
            }
            if ![rx, ry, rz, ra].iter().all(|x| x.is_finite()) {
                return Err(bad(rot_path, at("rotation"), "is not finite"));
            }
            let a4 = f64::from(pa) * 4.0;
            if fract(a4) != 0.0 {
                return Err(bad(
                    pos_path,
                    at("position"),
                    format!(
                        "has alpha {pa}: past the component index {} it carries a piece scale, which vat's rigid mode \
                         cannot hold (rotations and translations only)",
                        a4.floor() / 4.0
                    ),
                ));
            }
            let stored = DVec3::new(f64::from(rx), f64::from(ry), f64::from(rz));
            if stored.length_squared() > 1.0 + 1e-3 {
                return Err(bad(
                    rot_path,
                    at("rotation"),
                    format!(
                        "holds {stored}, longer than a unit quaternion's three smallest components can be"
                    ),
                ));
            }
            let m = piece_mesh[p];
            let mut q = texel_quaternion(stored, a4.floor() as i64);
            if let Some(o) = orthonormal[m]
                && o != DMat3::IDENTITY
            {
                q = DQuat::from_mat3(&(o * DMat3::from_quat(q) * o.transpose())).normalize();
            }
            let pivot = mesh.matrix[m].as_dmat4().transform_point3(DVec3::new(
                f64::from(px),
                f64::from(py),
                f64::from(pz),
            ));
            keys.push((pivot, q, f64::from(ra)));
        }
    }
    Ok(keys)
}

/// A note when frame 0 (the first of `keys`, one per piece) is not the mesh's rest pose.
fn rest_pose_note(keys: &[(DVec3, DQuat, f64)], rest_pivots: &[Vec3], tolerance: f32) -> Option<String> {
    let pieces_n = rest_pivots.len();
    let key = |_f: usize, p: usize| keys[p];
    // VAT 3 bakes its mesh at frame 0: say where frame 0 is not that rest pose.
    let (mut off, mut off_pivot, mut off_turn) = (0usize, 0.0f64, 0.0f64);
    for (p, rest) in rest_pivots.iter().enumerate() {
        let (pivot, q, _) = key(0, p);
        let (d, a) = (pivot.distance(rest.as_dvec3()), angle(q, DQuat::IDENTITY));
        if d > f64::from(tolerance) || a > 0.01f64.to_radians() {
            off += 1;
            off_pivot = off_pivot.max(d);
            off_turn = off_turn.max(a);
        }
    }
    (off > 0).then(|| {
        format!(
            "frame 0 is not the mesh's rest pose for {off} of {pieces_n} pieces (pivot up to {off_pivot:.4} m from \
             TEXCOORD_2/3's, turned up to {:.2} deg): decoded as stored, as VAT 3's shaders do; VAT 3 bakes its mesh at \
             frame 0, so this means a mesh from another frame, or pivots encoded (its \"Very High\" pivot accuracy, \
             which is not read: re-export with High or Maximum)",
            off_turn.to_degrees()
        )
    })
}

/// How finely the turns between source frames are baked, and how far vat's decode is from VAT 3's.
struct TurnStats {
    /// Baked frames per source frame.
    k: u32,
    /// The fastest turn a frame, degrees.
    fastest_turn_deg: f64,
    /// The largest deviation of vat's decode from VAT 3's turn, radians.
    turn_max: f64,
    /// Piece-frames VAT 3 holds and then jumps.
    held: usize,
    /// The largest such jump, radians.
    held_max: f64,
}

/// The substeps (`substeps`, or the fewest that keep every segment within
/// [`HOUDINI_RIGID_TURN_TOLERANCE_DEG`]) and the turn statistics of the keys.
fn turn_stats(
    keys: &[(DVec3, DQuat, f64)],
    frames: usize,
    pieces_n: usize,
    substeps: Option<u32>,
) -> TurnStats {
    use rayon::prelude::*;
    let key = |f: usize, p: usize| keys[(f % frames) * pieces_n + p];
    // Segments f -> f + 1 (the wrap, last -> first, not held to the tolerance).
    let segments = frames.saturating_sub(1);
    let fastest_turn_deg = (0..segments * pieces_n)
        .map(|i| key(i / pieces_n, i % pieces_n).2.abs() * 360.0)
        .fold(0.0f64, f64::max);
    let turn_tolerance = HOUDINI_RIGID_TURN_TOLERANCE_DEG.to_radians();
    let k = match substeps {
        Some(k) => k,
        None => (0..segments * pieces_n)
            .into_par_iter()
            .map(|i| {
                let (f, p) = (i / pieces_n, i % pieces_n);
                let ((_, q0, rate), (_, q1, _)) = (key(f, p), key(f + 1, p));
                (1..=HOUDINI_RIGID_MAX_SUBSTEPS)
                    .find(|&k| segment_deviation(q0, q1, rate, k) <= turn_tolerance)
                    .unwrap_or(HOUDINI_RIGID_MAX_SUBSTEPS)
            })
            .max()
            .unwrap_or(1),
    };
    let turn_max = (0..segments * pieces_n)
        .into_par_iter()
        .map(|i| {
            let (f, p) = (i / pieces_n, i % pieces_n);
            let ((_, q0, rate), (_, q1, _)) = (key(f, p), key(f + 1, p));
            segment_deviation(q0, q1, rate, k)
        })
        .reduce(|| 0.0, f64::max);
    // Pieces VAT 3 holds through a frame and then jumps.
    let jump = 0.01f64.to_radians();
    let (held, held_max) = (0..segments * pieces_n)
        .map(|i| {
            let (f, p) = (i / pieces_n, i % pieces_n);
            let ((_, q0, rate), (_, q1, _)) = (key(f, p), key(f + 1, p));
            if rate.abs() <= STILL_RATE { angle(q0, q1) } else { 0.0 }
        })
        .filter(|&a| a > jump)
        .fold((0usize, 0.0f64), |(n, m), a| (n + 1, m.max(a)));
    TurnStats { k, fastest_turn_deg, turn_max, held, held_max }
}

/// Decodes a rigid-body bake (see the module docs).
pub fn decode(
    parts: &RigidParts<'_>,
    substeps: Option<u32>,
    budget: &mut Budget,
) -> Result<ImportedRigidBake> {
    use rayon::prelude::*;
    let RigidParts { name, data, pos_path, pos, mesh_path, mesh, has_colour, .. } = *parts;
    let mut notes = mesh.notes.clone();
    check_parts(parts, substeps)?;
    let (w, h) = (pos.width, pos.height);
    let frames = data.frames;
    let padding = |v: usize| is_padding_vertex(mesh.lookup[v], frames);
    let (w, h, padded) = super::houdini::active_area(data, pos_path, w, h)?;
    notes.extend(padded);
    let lookup = super::openvat::lookup_texels(mesh, mesh_path, w, h, &padding)?;
    let r = lookup.rows_per_frame;
    check_height(pos_path, h, frames, r)?;

    let Pieces { texels, members, piece_indices, rest_pivots, piece_mesh, orthonormal, tolerance } =
        group_pieces(parts, &lookup, substeps, budget, &mut notes)?;
    let pieces_n = texels.len();

    let keys = key_transforms(parts, &texels, &piece_mesh, &orthonormal, r)?;
    let key = |f: usize, p: usize| keys[(f % frames) * pieces_n + p];
    notes.extend(rest_pose_note(&keys, &rest_pivots, tolerance));

    let TurnStats { k, fastest_turn_deg, turn_max, held, held_max } =
        turn_stats(&keys, frames, pieces_n, substeps);

    let transform = |pivot: DVec3, q: DQuat| PieceTransform {
        pivot: pivot.as_vec3().to_array(),
        rotation: q.as_quat().to_array(),
    };
    let baked_frames: Vec<Vec<PieceTransform>> = (0..frames * k as usize)
        .into_par_iter()
        .map(|i| {
            let (f, j) = (i / k as usize, i % k as usize);
            let alpha = j as f64 / f64::from(k);
            (0..pieces_n)
                .map(|p| {
                    let (p0, q0, rate) = key(f, p);
                    if j == 0 {
                        return transform(p0, q0);
                    }
                    let (p1, q1, _) = key(f + 1, p);
                    transform(p0.lerp(p1, alpha), vat3_turn(q0, q1, rate, alpha))
                })
                .collect()
        })
        .collect();

    let pieces: Vec<RigidPiece> = members
        .iter()
        .zip(piece_indices)
        .enumerate()
        .map(|(p, (vs, indices))| RigidPiece {
            name: format!("piece {p}"),
            positions: vs.iter().map(|&v| mesh.positions[v].to_array()).collect(),
            normals: vs.iter().map(|&v| mesh.normals[v].to_array()).collect(),
            material_ids: vec![0; vs.len()],
            uvs: mesh.uvs.as_ref().map(|uv| vs.iter().map(|&v| uv[v].to_array()).collect()),
            colors: mesh.colors.as_ref().map(|c| vs.iter().map(|&v| c[v].to_array()).collect()),
            indices,
            rest_pivot: rest_pivots[p].to_array(),
        })
        .collect();
    let fps = data.fps * k as f32;
    notes.push(format!(
        "{pieces_n} pieces (one texel each) over {frames} frames at {} fps (Houdini FPS); one looping clip {name:?}, as \
         VAT 3's shaders loop",
        data.fps
    ));
    let turn_max_deg = turn_max.to_degrees();
    notes.push(if k == 1 {
        format!(
            "baked at the source's rate: between frames vat's decode is within {turn_max_deg:.3} deg of VAT 3's turn \
             (fastest {fastest_turn_deg:.1} deg a frame)"
        )
    } else {
        format!(
            "baked at {k} frames per source frame ({fps} fps), the in-between ones at VAT 3's own in-between \
             transforms: pieces turn up to {fastest_turn_deg:.1} deg a frame, and vat's decode between source frames \
             is within {turn_max_deg:.3} deg of VAT 3's"
        )
    });
    if held > 0 {
        notes.push(format!(
            "{held} piece-frames store a still rate (<= 1e-4 rotations per frame) but turn by up to {:.2} deg to the next \
             frame: VAT 3's shaders hold them and jump, vat blends over the {}",
            held_max.to_degrees(),
            if k == 1 { "frame" } else { "last in-between frame" }
        ));
    }
    if has_colour {
        notes.push(format!(
            "{name}_col is not read (per-frame colours, or with VAT 3's smoothly interpolated trajectories the pieces' \
             accelerations): the mesh keeps its own colours, and pivots move in straight lines between frames"
        ));
    }
    let clip = RigidClip { name: name.to_owned(), fps, looping: true, frames: baked_frames };
    let source = RigidSource { name: name.to_owned(), pieces, clips: vec![clip], materials: None };
    Ok(ImportedRigidBake {
        source,
        source_frames: frames,
        source_fps: data.fps,
        substeps: k,
        fastest_turn_deg,
        turn_max_deg,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_components_place_the_left_out_one() {
        let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 1.2);
        let [x, y, z, w] = q.to_array();
        for (i, stored) in [(0, [x, y, z]), (1, [w, y, z]), (2, [x, w, z]), (3, [x, y, w])] {
            // The left-out component is rebuilt positive, so compare up to sign.
            let sign = [w, x, y, z][i].signum();
            let d = texel_quaternion(DVec3::from(stored.map(|c| c * sign)), i as i64);
            assert!(angle(d, q) < 1e-9, "index {i}: {d} vs {q}");
        }
    }

    #[test]
    fn vat3_turn_meets_its_keys_and_follows_the_rate() {
        let q0 = DQuat::from_rotation_y(0.3);
        for turn_deg in [10.0f64, 120.0, 170.0, -45.0, -167.0] {
            let q1 = q0 * DQuat::from_rotation_y(turn_deg.to_radians());
            // The sign of the rate follows the turn's sense as the key quaternions' hemisphere sees it.
            let rate = turn_deg / 360.0;
            assert!(angle(vat3_turn(q0, q1, rate, 0.0), q0) < 1e-9);
            assert!(angle(vat3_turn(q0, q1, rate, 1.0), q1) < 1e-6);
            // Halfway, the piece has turned half the frame's turn (a slerp at the rate's pace).
            let mid = vat3_turn(q0, q1, rate, 0.5);
            let expected = q0 * DQuat::from_rotation_y((turn_deg / 2.0).to_radians());
            assert!(angle(mid, expected) < 1e-6, "{turn_deg}: {}", angle(mid, expected).to_degrees());
        }
        // A still rate holds the first key.
        let q1 = DQuat::from_rotation_x(1.0);
        assert_eq!(vat3_turn(q0, q1, 0.0, 0.5), q0);
    }

    #[test]
    fn substeps_bring_nlerp_within_the_tolerance() {
        let q0 = DQuat::IDENTITY;
        let q1 = DQuat::from_rotation_z(167f64.to_radians());
        let rate = 167.0 / 360.0;
        let one = segment_deviation(q0, q1, rate, 1).to_degrees();
        let three = segment_deviation(q0, q1, rate, 3).to_degrees();
        assert!(one > 3.0, "{one}");
        assert!(three < one / 10.0, "{three}");
        assert!(three < HOUDINI_RIGID_TURN_TOLERANCE_DEG, "{three}");
        // Small turns need none.
        let q1 = DQuat::from_rotation_z(20f64.to_radians());
        assert!(segment_deviation(q0, q1, 20.0 / 360.0, 1).to_degrees() < 0.01);
    }
}
