//! Tangents for meshes that have none: MikkTSpace (what glTF asks a client to compute when a
//! primitive has a normal map but no `TANGENT`), through `bevy_mikktspace`, a maintained safe port
//! that gives the reference implementation's results.
//!
//! The generator works on triangle corners and may give two corners of one shared vertex different
//! tangents (a UV seam or mirror line that the source did not split). A baked vertex has one
//! tangent, so each vertex takes its first corner's, and the number of vertices whose corners
//! disagreed (by more than [`SPLIT_TOLERANCE_DEG`]) is reported. A mesh without texture
//! coordinates has no tangent space to speak of (no normal map can be applied to it): its vertices
//! get a tangent perpendicular to their normal, the same one for the same normal
//! ([`orthonormal_tangent`]), and that is reported too.

use glam::{Vec2, Vec3, Vec4};

use crate::rig::{MeshRole, Rig};

/// Corners of one vertex whose generated tangents differ by more than this many degrees count as a
/// disagreement (reported, not split).
pub const SPLIT_TOLERANCE_DEG: f32 = 1.0;

/// What [`generate_missing`] did to one mesh.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedTangents {
    /// The mesh's name.
    pub mesh: String,
    /// Its vertices.
    pub vertices: usize,
    /// `true`: MikkTSpace from its texture coordinates; `false`: no texture coordinates, tangents
    /// perpendicular to the normals.
    pub mikktspace: bool,
    /// Vertices whose triangle corners got tangents more than [`SPLIT_TOLERANCE_DEG`] apart (the
    /// first corner's is kept).
    pub disagreeing_vertices: usize,
    /// Vertices that MikkTSpace gave no tangent (only degenerate triangles around them), given
    /// [`orthonormal_tangent`] instead.
    pub fallback_vertices: usize,
}

impl std::fmt::Display for GeneratedTangents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.mikktspace {
            write!(f, "mesh {:?}: no TANGENT, {} MikkTSpace tangents generated", self.mesh, self.vertices)?;
            if self.disagreeing_vertices > 0 {
                write!(
                    f,
                    "; {} vertices shared by triangles whose tangents differ by more than {SPLIT_TOLERANCE_DEG} \
                     degree (an unsplit UV seam or mirror line) keep their first triangle's",
                    self.disagreeing_vertices
                )?;
            }
            if self.fallback_vertices > 0 {
                write!(
                    f,
                    "; {} vertices of degenerate triangles only get a tangent perpendicular to their normal",
                    self.fallback_vertices
                )?;
            }
            Ok(())
        } else {
            write!(
                f,
                "mesh {:?}: no TANGENT and no texture coordinates: {} tangents perpendicular to the normals \
                 (no normal map can use them)",
                self.mesh, self.vertices
            )
        }
    }
}

/// Generates the tangents of every body mesh of `rig` that has none (attachments are drawn without
/// tangents and are left alone). Returns one report per mesh it filled.
pub fn generate_missing(rig: &mut Rig) -> Vec<GeneratedTangents> {
    let mut reports = Vec::new();
    for mesh in rig.meshes.iter_mut().filter(|m| m.role == MeshRole::Body && m.tangents.is_none()) {
        let (tangents, report) = match &mesh.uvs {
            Some(uvs) if uvs.len() == mesh.positions.len() => {
                mikktspace(&mesh.name, &mesh.positions, &mesh.normals, uvs, &mesh.indices)
            }
            _ => {
                let tangents = mesh.normals.iter().map(|&n| orthonormal_tangent(n)).collect();
                let report = GeneratedTangents {
                    mesh: mesh.name.clone(),
                    vertices: mesh.positions.len(),
                    mikktspace: false,
                    disagreeing_vertices: 0,
                    fallback_vertices: 0,
                };
                (tangents, report)
            }
        };
        mesh.tangents = Some(tangents);
        reports.push(report);
    }
    reports
}

/// A unit tangent perpendicular to unit normal `n`, bitangent sign +1: Frisvad's branchless basis
/// (Duff et al. 2017), the same for the same normal. A zero or non-finite normal gets +X.
pub fn orthonormal_tangent(n: Vec3) -> Vec4 {
    if !n.is_finite() || n.length_squared() < 1e-12 {
        return Vec4::new(1.0, 0.0, 0.0, 1.0);
    }
    let n = n.normalize();
    let sign = 1f32.copysign(n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x).normalize().extend(1.0)
}

/// The mesh as MikkTSpace sees it, with one tangent slot per corner.
struct Corners<'a> {
    positions: &'a [Vec3],
    normals: &'a [Vec3],
    uvs: &'a [Vec2],
    indices: &'a [u32],
    out: Vec<Option<[f32; 4]>>,
}

impl Corners<'_> {
    fn vertex(&self, face: usize, corner: usize) -> usize {
        self.indices[face * 3 + corner] as usize
    }
}

impl bevy_mikktspace::Geometry for Corners<'_> {
    fn num_faces(&self) -> usize {
        self.indices.len() / 3
    }

    fn num_vertices_of_face(&self, _face: usize) -> usize {
        3
    }

    fn position(&self, face: usize, vert: usize) -> [f32; 3] {
        self.positions[self.vertex(face, vert)].to_array()
    }

    fn normal(&self, face: usize, vert: usize) -> [f32; 3] {
        self.normals[self.vertex(face, vert)].to_array()
    }

    fn tex_coord(&self, face: usize, vert: usize) -> [f32; 2] {
        self.uvs[self.vertex(face, vert)].to_array()
    }

    fn set_tangent(
        &mut self,
        tangent_space: Option<bevy_mikktspace::TangentSpace>,
        face: usize,
        vert: usize,
    ) {
        self.out[face * 3 + vert] = tangent_space.map(|t| t.tangent_encoded());
    }
}

/// MikkTSpace tangents of an indexed triangle mesh, per vertex (see the module docs).
fn mikktspace(
    name: &str,
    positions: &[Vec3],
    normals: &[Vec3],
    uvs: &[Vec2],
    indices: &[u32],
) -> (Vec<Vec4>, GeneratedTangents) {
    let n = positions.len();
    // Indices were checked against the vertex count at import; a stray one is left to the fallback.
    let valid: Vec<u32> =
        indices.chunks_exact(3).filter(|t| t.iter().all(|&i| (i as usize) < n)).flatten().copied().collect();
    let mut corners = Corners { positions, normals, uvs, indices: &valid, out: vec![None; valid.len()] };
    // The generator has no failure cases (its error type has no variants).
    let _ = bevy_mikktspace::generate_tangents(&mut corners);
    let mut tangents: Vec<Option<Vec4>> = vec![None; n];
    let mut disagree = vec![false; n];
    let cos_tolerance = SPLIT_TOLERANCE_DEG.to_radians().cos();
    for (corner, t) in corners.out.iter().enumerate() {
        let Some(t) = t.map(Vec4::from) else { continue };
        let v = valid[corner] as usize;
        match tangents[v] {
            None => tangents[v] = Some(t),
            Some(first) => {
                let apart = first.truncate().dot(t.truncate())
                    < cos_tolerance * first.truncate().length() * t.truncate().length();
                if apart || first.w != t.w {
                    disagree[v] = true;
                }
            }
        }
    }
    let fallback = tangents.iter().filter(|t| t.is_none()).count();
    let out = tangents
        .iter()
        .zip(normals)
        .map(|(t, &normal)| match t {
            Some(t) if t.truncate().is_finite() && t.truncate().length_squared() > 0.0 => {
                t.truncate().normalize().extend(if t.w < 0.0 { -1.0 } else { 1.0 })
            }
            _ => orthonormal_tangent(normal),
        })
        .collect();
    let report = GeneratedTangents {
        mesh: name.to_owned(),
        vertices: n,
        mikktspace: true,
        disagreeing_vertices: disagree.iter().filter(|&&d| d).count(),
        fallback_vertices: fallback,
    };
    (out, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit quad in the XY plane facing +Z, UVs along X and Y: the tangent is +X, the bitangent
    /// +Y (sign +1). Mirrored in U, the tangent is -X.
    fn quad(mirror: bool) -> (Vec<Vec3>, Vec<Vec3>, Vec<Vec2>, Vec<u32>) {
        let positions = vec![Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
        let normals = vec![Vec3::Z; 4];
        let u = |x: f32| if mirror { 1.0 - x } else { x };
        let uvs = vec![
            Vec2::new(u(0.0), 0.0),
            Vec2::new(u(1.0), 0.0),
            Vec2::new(u(1.0), 1.0),
            Vec2::new(u(0.0), 1.0),
        ];
        (positions, normals, uvs, vec![0, 1, 2, 0, 2, 3])
    }

    #[test]
    fn a_quad_gets_the_tangent_of_its_uv_axis() {
        for (mirror, want) in
            [(false, Vec4::new(1.0, 0.0, 0.0, 1.0)), (true, Vec4::new(-1.0, 0.0, 0.0, -1.0))]
        {
            let (p, n, uv, idx) = quad(mirror);
            let (t, report) = mikktspace("quad", &p, &n, &uv, &idx);
            for (v, t) in t.iter().enumerate() {
                assert!((t.truncate() - want.truncate()).length() < 1e-5, "mirror {mirror}, vertex {v}: {t}");
                // The bitangent sign: cross(n, t) * w is +V (the direction of increasing V, +Y).
                let bitangent = n[v].cross(t.truncate()) * t.w;
                assert!((bitangent - Vec3::Y).length() < 1e-5, "mirror {mirror}: bitangent {bitangent}");
            }
            assert_eq!((report.disagreeing_vertices, report.fallback_vertices), (0, 0));
        }
    }

    #[test]
    fn an_unsplit_mirror_seam_is_reported_and_degenerate_triangles_fall_back() {
        // Two quads sharing an edge (vertices 1 and 2), the second one's U mirrored: the shared
        // vertices' corners get +X on one side and -X on the other.
        let positions = vec![
            Vec3::ZERO,
            Vec3::X,
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::Y,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(2.0, 1.0, 0.0),
        ];
        let normals = vec![Vec3::Z; 6];
        let uvs = vec![
            Vec2::new(0.0, 0.0),
            Vec2::new(1.0, 0.0),
            Vec2::new(1.0, 1.0),
            Vec2::new(0.0, 1.0),
            Vec2::new(0.0, 0.0),
            Vec2::new(0.0, 1.0),
        ];
        let indices = vec![0, 1, 2, 0, 2, 3, 1, 4, 5, 1, 5, 2];
        let (t, report) = mikktspace("seam", &positions, &normals, &uvs, &indices);
        assert_eq!(report.disagreeing_vertices, 2, "{report}");
        assert!(t.iter().all(|t| t.truncate().is_normalized()));
        // A vertex of no triangle at all gets the perpendicular fallback.
        let mut p = positions.clone();
        p.push(Vec3::ONE);
        let mut n = normals.clone();
        n.push(Vec3::Z);
        let mut uv = uvs.clone();
        uv.push(Vec2::ZERO);
        let (t, report) = mikktspace("seam", &p, &n, &uv, &indices);
        assert_eq!(report.fallback_vertices, 1);
        assert_eq!(t[6], orthonormal_tangent(Vec3::Z));
    }

    #[test]
    fn the_fallback_tangent_is_perpendicular_and_unit_for_any_normal() {
        for n in [
            Vec3::Z,
            -Vec3::Z,
            Vec3::X,
            Vec3::new(0.3, -0.8, 0.1),
            Vec3::new(0.0, 0.0, -1e-7),
            Vec3::ZERO,
            Vec3::NAN,
        ] {
            let t = orthonormal_tangent(n);
            assert!(t.truncate().is_normalized(), "{n}: {t}");
            if n.is_finite() && n.length() > 1e-6 {
                assert!(t.truncate().dot(n.normalize()).abs() < 1e-5, "{n}: {t}");
            }
        }
    }
}
