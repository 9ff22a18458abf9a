//! The little f64 vector and quaternion math the humanoid is built with (the workspace's glam has no
//! f64 types enabled). Names and semantics follow glam's `DVec3`, `DQuat` and `DMat3`; results are
//! rounded to f32 once, when stored in the rig.

use std::ops::{Add, AddAssign, Mul, MulAssign, Neg, Sub};

use glam::{Quat, Vec3};

/// A 3-vector of f64.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct DVec3 {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) z: f64,
}

impl DVec3 {
    pub(super) const ZERO: Self = Self::new(0.0, 0.0, 0.0);
    pub(super) const X: Self = Self::new(1.0, 0.0, 0.0);
    pub(super) const Y: Self = Self::new(0.0, 1.0, 0.0);
    pub(super) const Z: Self = Self::new(0.0, 0.0, 1.0);
    pub(super) const NEG_Y: Self = Self::new(0.0, -1.0, 0.0);

    pub(super) const fn new(x: f64, y: f64, z: f64) -> Self {
        Self { x, y, z }
    }

    pub(super) fn dot(self, o: Self) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    pub(super) fn cross(self, o: Self) -> Self {
        Self::new(self.y * o.z - self.z * o.y, self.z * o.x - self.x * o.z, self.x * o.y - self.y * o.x)
    }

    pub(super) fn length(self) -> f64 {
        self.dot(self).sqrt()
    }

    /// `self / |self|`; NaN components for a zero vector (callers use [`Self::normalize_or`] where
    /// that can happen).
    pub(super) fn normalize(self) -> Self {
        self * (1.0 / self.length())
    }

    /// `self / |self|`, or `fallback` when the length is zero or not finite.
    pub(super) fn normalize_or(self, fallback: Self) -> Self {
        let len = self.length();
        if len > 0.0 && len.is_finite() { self * (1.0 / len) } else { fallback }
    }

    /// Rounded to f32 (round to nearest, per component).
    pub(super) fn as_vec3(self) -> Vec3 {
        Vec3::new(self.x as f32, self.y as f32, self.z as f32)
    }

    /// The same vector with each component rounded to the nearest f32 (and held as f64).
    pub(super) fn round_to_f32(self) -> Self {
        let v = self.as_vec3();
        Self::new(f64::from(v.x), f64::from(v.y), f64::from(v.z))
    }
}

impl Add for DVec3 {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl AddAssign for DVec3 {
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

impl Sub for DVec3 {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Neg for DVec3 {
    type Output = Self;
    fn neg(self) -> Self {
        Self::new(-self.x, -self.y, -self.z)
    }
}

impl Mul<f64> for DVec3 {
    type Output = Self;
    fn mul(self, s: f64) -> Self {
        Self::new(self.x * s, self.y * s, self.z * s)
    }
}

/// A 3x3 matrix of f64, stored as columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DMat3 {
    pub(super) x_axis: DVec3,
    pub(super) y_axis: DVec3,
    pub(super) z_axis: DVec3,
}

impl DMat3 {
    pub(super) fn from_cols(x_axis: DVec3, y_axis: DVec3, z_axis: DVec3) -> Self {
        Self { x_axis, y_axis, z_axis }
    }

    pub(super) fn transpose(&self) -> Self {
        let (a, b, c) = (self.x_axis, self.y_axis, self.z_axis);
        Self::from_cols(DVec3::new(a.x, b.x, c.x), DVec3::new(a.y, b.y, c.y), DVec3::new(a.z, b.z, c.z))
    }

    fn mul_vec3(&self, v: DVec3) -> DVec3 {
        self.x_axis * v.x + self.y_axis * v.y + self.z_axis * v.z
    }
}

impl Mul for DMat3 {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        Self::from_cols(self.mul_vec3(o.x_axis), self.mul_vec3(o.y_axis), self.mul_vec3(o.z_axis))
    }
}

/// A quaternion `(x, y, z, w)` of f64; unit quaternions are rotations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DQuat {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) z: f64,
    pub(super) w: f64,
}

impl DQuat {
    pub(super) const IDENTITY: Self = Self { x: 0.0, y: 0.0, z: 0.0, w: 1.0 };

    /// Rotation by `angle` radians about the unit vector `axis` (counter-clockwise looking down it).
    pub(super) fn from_axis_angle(axis: DVec3, angle: f64) -> Self {
        let (s, c) = (angle * 0.5).sin_cos();
        Self { x: axis.x * s, y: axis.y * s, z: axis.z * s, w: c }
    }

    pub(super) fn from_rotation_x(angle: f64) -> Self {
        Self::from_axis_angle(DVec3::X, angle)
    }

    pub(super) fn from_rotation_y(angle: f64) -> Self {
        Self::from_axis_angle(DVec3::Y, angle)
    }

    pub(super) fn from_rotation_z(angle: f64) -> Self {
        Self::from_axis_angle(DVec3::Z, angle)
    }

    /// The rotation of an orthonormal, right-handed matrix (Shepperd's method: the largest of the
    /// four candidate components is taken from the diagonal, the rest from off-diagonal sums).
    pub(super) fn from_mat3(m: &DMat3) -> Self {
        let (m00, m01, m02) = (m.x_axis.x, m.y_axis.x, m.z_axis.x);
        let (m10, m11, m12) = (m.x_axis.y, m.y_axis.y, m.z_axis.y);
        let (m20, m21, m22) = (m.x_axis.z, m.y_axis.z, m.z_axis.z);
        let trace = m00 + m11 + m22;
        if trace >= m00.max(m11).max(m22) {
            let w = (1.0 + trace).sqrt() * 0.5;
            let k = 0.25 / w;
            Self { x: (m21 - m12) * k, y: (m02 - m20) * k, z: (m10 - m01) * k, w }
        } else if m00 >= m11 && m00 >= m22 {
            let x = (1.0 + m00 - m11 - m22).sqrt() * 0.5;
            let k = 0.25 / x;
            Self { x, y: (m01 + m10) * k, z: (m02 + m20) * k, w: (m21 - m12) * k }
        } else if m11 >= m22 {
            let y = (1.0 - m00 + m11 - m22).sqrt() * 0.5;
            let k = 0.25 / y;
            Self { x: (m01 + m10) * k, y, z: (m12 + m21) * k, w: (m02 - m20) * k }
        } else {
            let z = (1.0 - m00 - m11 + m22).sqrt() * 0.5;
            let k = 0.25 / z;
            Self { x: (m02 + m20) * k, y: (m12 + m21) * k, z, w: (m10 - m01) * k }
        }
    }

    fn dot(self, o: Self) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z + self.w * o.w
    }

    fn scale(self, s: f64) -> Self {
        Self { x: self.x * s, y: self.y * s, z: self.z * s, w: self.w * s }
    }

    pub(super) fn normalize(self) -> Self {
        self.scale(1.0 / self.dot(self).sqrt())
    }

    /// The inverse of a unit quaternion (its conjugate).
    pub(super) fn inverse(self) -> Self {
        Self { x: -self.x, y: -self.y, z: -self.z, w: self.w }
    }

    /// Shortest-path spherical interpolation from `self` (`t = 0`) to `end` (`t = 1`).
    pub(super) fn slerp(self, end: Self, t: f64) -> Self {
        let mut end = end;
        let mut d = self.dot(end);
        if d < 0.0 {
            end = end.scale(-1.0);
            d = -d;
        }
        if d > 1.0 - 1e-12 {
            let q = Self {
                x: self.x + (end.x - self.x) * t,
                y: self.y + (end.y - self.y) * t,
                z: self.z + (end.z - self.z) * t,
                w: self.w + (end.w - self.w) * t,
            };
            return q.normalize();
        }
        let theta = d.clamp(-1.0, 1.0).acos();
        let s = theta.sin();
        let (a, b) = (((1.0 - t) * theta).sin() / s, (t * theta).sin() / s);
        let q = Self {
            x: self.x * a + end.x * b,
            y: self.y * a + end.y * b,
            z: self.z * a + end.z * b,
            w: self.w * a + end.w * b,
        };
        q.normalize()
    }

    /// Rounded to f32 (per component).
    pub(super) fn as_quat(self) -> Quat {
        Quat::from_xyzw(self.x as f32, self.y as f32, self.z as f32, self.w as f32)
    }
}

impl Mul for DQuat {
    type Output = Self;
    /// The Hamilton product: `(a * b) * v == a * (b * v)`.
    fn mul(self, b: Self) -> Self {
        let a = self;
        Self {
            x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
            w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
        }
    }
}

impl MulAssign for DQuat {
    fn mul_assign(&mut self, b: Self) {
        *self = *self * b;
    }
}

impl Mul<DVec3> for DQuat {
    type Output = DVec3;
    /// Rotates `v` (unit quaternions): `v + 2 w (u x v) + 2 u x (u x v)`, `u` the vector part.
    fn mul(self, v: DVec3) -> DVec3 {
        let u = DVec3::new(self.x, self.y, self.z);
        let t = u.cross(v) * 2.0;
        v + t * self.w + u.cross(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 results of a few operations on unit inputs: each op adds <= 2^-53 relative; 1e-14 is
    /// ~45 ulps, far above the handful of ops here yet far below any real mistake (>= 1e-3).
    const EPS: f64 = 1e-14;

    fn close(a: DVec3, b: DVec3) -> bool {
        (a - b).length() <= EPS
    }

    #[test]
    fn rotations_match_glam_conventions() {
        let q = DQuat::from_rotation_z(std::f64::consts::FRAC_PI_2);
        assert!(close(q * DVec3::X, DVec3::Y), "{:?}", q * DVec3::X);
        let q = DQuat::from_rotation_x(std::f64::consts::FRAC_PI_2);
        assert!(close(q * DVec3::Y, DVec3::Z));
        // Composition applies the right factor first, as glam's Quat does.
        let a = DQuat::from_rotation_x(0.3);
        let b = DQuat::from_rotation_y(-1.1);
        let v = DVec3::new(0.2, -0.7, 0.4);
        assert!(close((a * b) * v, a * (b * v)));
        let g = glam::Quat::from_rotation_x(0.3) * glam::Quat::from_rotation_y(-1.1);
        let ours = (a * b).as_quat();
        assert!(g.abs_diff_eq(ours, 1e-6), "{g:?} vs {ours:?}");
        assert!(close(a.inverse() * (a * v), v));
    }

    #[test]
    fn from_mat3_inverts_every_branch() {
        // Rotations near 0, and near 180 deg about each axis, take each of the four branches.
        for q in [
            DQuat::from_axis_angle(DVec3::new(1.0, 2.0, -0.5).normalize(), 0.4),
            DQuat::from_rotation_x(3.0),
            DQuat::from_rotation_y(3.0),
            DQuat::from_rotation_z(3.0),
        ] {
            let m = DMat3::from_cols(q * DVec3::X, q * DVec3::Y, q * DVec3::Z);
            let r = DQuat::from_mat3(&m);
            for v in [DVec3::X, DVec3::Y, DVec3::new(0.3, -0.2, 0.9)] {
                assert!(close(r * v, q * v), "{q:?} -> {r:?}");
            }
        }
    }

    #[test]
    fn slerp_takes_the_short_way_at_constant_speed() {
        let a = DQuat::IDENTITY;
        let b = DQuat::from_rotation_y(1.0).scale(-1.0);
        let m = a.slerp(b, 0.25);
        assert!(close(m * DVec3::X, DQuat::from_rotation_y(0.25) * DVec3::X));
    }
}
