//! The camera of a frame and its view frustum.

use crate::lod::LOD_PIXEL_ANGLE;

/// The camera a frame is culled and drawn for.
///
/// `view_proj` maps world space (metres) to clip space with WebGPU / Vulkan conventions: a point is
/// visible when `-w <= x <= w`, `-w <= y <= w` and `0 <= z <= w`. Column-major
/// (`view_proj[column][row]`, glam's `Mat4::to_cols_array_2d`). Reverse-Z and infinite far planes work
/// too (see [`Frustum::from_view_proj`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    /// World to clip space, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// Eye position in world space, metres: LOD distances are measured from here.
    pub position: [f32; 3],
    /// The angle one pixel of the view spans vertically, radians (small-angle: `2 tan(fov_y / 2) /
    /// viewport rows`). LOD switch distances, made for [`LOD_PIXEL_ANGLE`] (60 degrees over 1,080
    /// rows), are scaled by `LOD_PIXEL_ANGLE / pixel_angle` for this view ([`Camera::lod_bias`]), so a
    /// level switches where its error spans the same number of this view's pixels. Set it with
    /// [`Camera::with_viewport`]; [`Camera::look_at`] and [`Camera::look_at_reverse_z`] start at
    /// [`LOD_PIXEL_ANGLE`].
    pub pixel_angle: f32,
}

impl Camera {
    /// A right-handed perspective camera at `eye` looking at `target` (world space, metres) with +Y
    /// up, a vertical field of view of `fov_y` radians, `aspect` = width / height, and depth mapped to
    /// `0..1` between the `near` and `far` planes (metres, `0 < near < far`).
    ///
    /// If `target - eye` is parallel to +Y the up vector +Z is used instead. Degenerate arguments
    /// (`eye == target`, `near == far`, ...) give non-finite matrix entries, not a panic; such a
    /// camera culls everything.
    pub fn look_at(eye: [f32; 3], target: [f32; 3], fov_y: f32, aspect: f32, near: f32, far: f32) -> Self {
        let g = 1.0 / (fov_y * 0.5).tan();
        let proj = [
            [g / aspect, 0.0, 0.0, 0.0],
            [0.0, g, 0.0, 0.0],
            [0.0, 0.0, far / (near - far), -1.0],
            [0.0, 0.0, near * far / (near - far), 0.0],
        ];
        Self::from_view_and_projection(eye, target, &proj)
    }

    /// The camera at `eye` looking at `target` (see [`Camera::look_at`]) through `proj`.
    fn from_view_and_projection(eye: [f32; 3], target: [f32; 3], proj: &[[f32; 4]; 4]) -> Self {
        let f = normalize(sub(target, eye));
        let up = if cross(f, [0.0, 1.0, 0.0]).iter().all(|&c| c.abs() < 1e-6) {
            [0.0, 0.0, 1.0]
        } else {
            [0.0, 1.0, 0.0]
        };
        let s = normalize(cross(f, up));
        let u = cross(s, f);
        let view = [
            [s[0], u[0], -f[0], 0.0],
            [s[1], u[1], -f[1], 0.0],
            [s[2], u[2], -f[2], 0.0],
            [-dot(s, eye), -dot(u, eye), dot(f, eye), 1.0],
        ];
        Self { view_proj: mul_mat4(proj, &view), position: eye, pixel_angle: LOD_PIXEL_ANGLE as f32 }
    }

    /// [`Camera::look_at`] with a reverse-Z projection and an infinite far plane, the convention of
    /// Bevy and most modern engines: depth 1 at the `near` plane (metres, `> 0`), falling towards 0
    /// at infinity. Draw it into a pass of `vat_core::backend::pipeline::PassConventions::REVERSE_Z` (depth
    /// cleared to 0, test `GreaterEqual`). Degenerate arguments give non-finite entries, as
    /// [`Camera::look_at`]'s do.
    pub fn look_at_reverse_z(eye: [f32; 3], target: [f32; 3], fov_y: f32, aspect: f32, near: f32) -> Self {
        let g = 1.0 / (fov_y * 0.5).tan();
        // z_clip = near, w_clip = -z_view: depth near / distance along the view axis.
        let proj =
            [[g / aspect, 0.0, 0.0, 0.0], [0.0, g, 0.0, 0.0], [0.0, 0.0, 0.0, -1.0], [0.0, 0.0, near, 0.0]];
        Self::from_view_and_projection(eye, target, &proj)
    }

    /// This camera with LODs chosen for a viewport of `rows` pixel rows (at least 1) and a vertical
    /// field of view of `fov_y` radians: [`pixel_angle`](Self::pixel_angle) `= 2 tan(fov_y / 2) /
    /// rows`. A `fov_y` outside `(0, pi)` (or not finite) leaves the camera as it is.
    pub fn with_viewport(mut self, rows: u32, fov_y: f32) -> Self {
        if fov_y.is_finite() && fov_y > 0.0 && fov_y < std::f32::consts::PI {
            self.pixel_angle = 2.0 * (fov_y * 0.5).tan() / rows.max(1) as f32;
        }
        self
    }

    /// The LOD bias of this view, in doublings of distance, added to `CrowdConfig::lod_bias`:
    /// `log2(pixel_angle / LOD_PIXEL_ANGLE)`, 0 for the default 60 degrees over 1,080 rows, negative
    /// (LODs switch farther) for a finer view. A `pixel_angle` that is not finite or not `> 0`
    /// counts as [`LOD_PIXEL_ANGLE`].
    pub fn lod_bias(&self) -> f32 {
        let angle = f64::from(self.pixel_angle);
        // Against the f32 default the field holds, so the default is exactly 0.
        let default = f64::from(LOD_PIXEL_ANGLE as f32);
        if angle.is_finite() && angle > 0.0 { (angle / default).log2() as f32 } else { 0.0 }
    }

    /// Clip-space coordinates `[x, y, z, w]` of world point `p`: `view_proj * [p, 1]`.
    pub fn project(&self, p: [f32; 3]) -> [f32; 4] {
        let m = &self.view_proj;
        std::array::from_fn(|row| m[0][row] * p[0] + m[1][row] * p[1] + m[2][row] * p[2] + m[3][row])
    }
}

/// The six planes of a view frustum, `(normal.xyz, d)` with inward unit normals, in the order left,
/// right, bottom, top, near, far (the order of `FrameUniforms::frustum_planes` in [`crate::gpu`]).
///
/// A point `p` (metres) is inside when `dot(normal, p) + d >= 0` for all six; `dot(normal, p) + d` is
/// then its distance from the plane in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frustum {
    /// `[nx, ny, nz, d]` per plane: left, right, bottom, top, near, far.
    pub planes: [[f32; 4]; 6],
}

impl Frustum {
    /// The frustum of a column-major world-to-clip matrix with WebGPU / Vulkan clip conventions
    /// (`-w <= x, y <= w`, `0 <= z <= w`), by the Gribb-Hartmann extraction: with `r0..r3` the rows of
    /// the matrix, left = `r3 + r0`, right = `r3 - r0`, bottom = `r3 + r1`, top = `r3 - r1`,
    /// near = `r2`, far = `r3 - r2`, each divided by the length of its normal.
    ///
    /// Reverse-Z matrices work unchanged (near and far swap roles). A plane whose normal has zero
    /// length (the far plane of an infinite projection) becomes `[0, 0, 0, 1]`, which keeps everything.
    pub fn from_view_proj(m: &[[f32; 4]; 4]) -> Self {
        let row = |r: usize| [m[0][r], m[1][r], m[2][r], m[3][r]];
        let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
        let add = |a: [f32; 4], b: [f32; 4]| std::array::from_fn::<f32, 4, _>(|i| a[i] + b[i]);
        let subt = |a: [f32; 4], b: [f32; 4]| std::array::from_fn::<f32, 4, _>(|i| a[i] - b[i]);
        let raw = [add(r3, r0), subt(r3, r0), add(r3, r1), subt(r3, r1), r2, subt(r3, r2)];
        let planes = raw.map(|p| {
            let len = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            if len > 1e-20 && len.is_finite() {
                [p[0] / len, p[1] / len, p[2] / len, p[3] / len]
            } else if len.is_finite() {
                [0.0, 0.0, 0.0, 1.0]
            } else {
                // A non-finite matrix: keep nothing.
                [0.0, 0.0, 0.0, -1.0]
            }
        });
        Self { planes }
    }

    /// Signed distance in metres of `p` from plane `i` (positive inside):
    /// `((nx * px + ny * py) + nz * pz) + d`.
    #[inline]
    pub fn distance(&self, i: usize, p: [f32; 3]) -> f32 {
        let n = &self.planes[i];
        ((n[0] * p[0] + n[1] * p[1]) + n[2] * p[2]) + n[3]
    }

    /// Whether point `p` (metres) is inside or on every plane.
    #[inline]
    pub fn contains_point(&self, p: [f32; 3]) -> bool {
        (0..6).all(|i| self.distance(i, p) >= 0.0)
    }

    /// Whether the sphere at `centre` with `radius` (metres) is not entirely outside any plane:
    /// `distance(i, centre) >= -radius` for all six. Conservative: a sphere near a frustum corner can
    /// pass while lying outside. NaN inputs give `false`.
    #[inline]
    pub fn intersects_sphere(&self, centre: [f32; 3], radius: f32) -> bool {
        (0..6).all(|i| self.distance(i, centre) >= -radius)
    }

    /// Whether the axis-aligned box `min..max` (metres) is not entirely outside any plane (the test of
    /// each plane's most inward corner). Conservative like [`intersects_sphere`](Self::intersects_sphere).
    #[inline]
    pub fn intersects_box(&self, min: [f32; 3], max: [f32; 3]) -> bool {
        self.planes.iter().enumerate().all(|(i, n)| {
            let corner = std::array::from_fn(|a| if n[a] >= 0.0 { max[a] } else { min[a] });
            self.distance(i, corner) >= 0.0
        })
    }

    /// Whether the axis-aligned box `min..max` (metres) is inside or on every plane (the test of
    /// each plane's most outward corner). NaN inputs give `false`.
    #[inline]
    pub fn contains_box(&self, min: [f32; 3], max: [f32; 3]) -> bool {
        self.planes.iter().enumerate().all(|(i, n)| {
            let corner = std::array::from_fn(|a| if n[a] >= 0.0 { min[a] } else { max[a] });
            self.distance(i, corner) >= 0.0
        })
    }
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn normalize(a: [f32; 3]) -> [f32; 3] {
    let l = dot(a, a).sqrt();
    [a[0] / l, a[1] / l, a[2] / l]
}

/// `a * b` for column-major 4x4 matrices.
fn mul_mat4(a: &[[f32; 4]; 4], b: &[[f32; 4]; 4]) -> [[f32; 4]; 4] {
    std::array::from_fn(|col| std::array::from_fn(|row| (0..4).map(|k| a[k][row] * b[col][k]).sum()))
}
