//! The demo's controls: held keys and the mouse, the orbit and walking camera, the title-bar
//! figures.

use super::*;

/// Held keys and the mouse.
#[derive(Debug, Default)]
pub(super) struct Input {
    pub(super) forward: bool,
    pub(super) back: bool,
    pub(super) left: bool,
    pub(super) right: bool,
    pub(super) up: bool,
    pub(super) down: bool,
    pub(super) fast: bool,
    pub(super) dragging: bool,
    pub(super) cursor: Option<(f64, f64)>,
}

impl Input {
    /// Records a movement key; returns whether `code` is one.
    pub(super) fn movement(&mut self, code: KeyCode, pressed: bool) -> bool {
        let slot = match code {
            KeyCode::KeyW | KeyCode::ArrowUp => &mut self.forward,
            KeyCode::KeyS | KeyCode::ArrowDown => &mut self.back,
            KeyCode::KeyA | KeyCode::ArrowLeft => &mut self.left,
            KeyCode::KeyD | KeyCode::ArrowRight => &mut self.right,
            KeyCode::KeyE => &mut self.up,
            KeyCode::KeyQ => &mut self.down,
            KeyCode::ShiftLeft | KeyCode::ShiftRight => &mut self.fast,
            _ => return false,
        };
        *slot = pressed;
        true
    }
}

/// Orbit and walk cameras; each keeps its own state while the other is in use.
#[derive(Debug, Clone, Copy)]
pub(super) struct CameraRig {
    pub(super) walk: bool,
    /// Orbit: the point turned around, metres.
    pub(super) target: [f32; 3],
    /// Orbit: angle around +Y of the eye from the target, radians (0: eye on +Z).
    pub(super) orbit_yaw: f32,
    /// Orbit: elevation of the eye above the target, radians.
    pub(super) orbit_pitch: f32,
    /// Orbit: distance from target to eye, metres.
    pub(super) distance: f32,
    /// Walk: eye position, metres.
    pub(super) eye: [f32; 3],
    /// Walk: heading, radians (0 looks along +Z).
    pub(super) walk_yaw: f32,
    /// Walk: look up (+) or down (-), radians.
    pub(super) walk_pitch: f32,
    /// Vertical field of view, radians.
    pub(super) fov: f32,
    /// Asset units per reference metre ([`SceneScale::unit`]): every length and speed below is
    /// tuned in reference metres and multiplied by it.
    pub(super) unit: f32,
}

/// Eye height of the walk camera, reference metres.
pub(super) const EYE_HEIGHT: f32 = 1.7;

impl CameraRig {
    /// Cameras for a crowd wandering within `half_extent` (asset units) of the origin.
    pub(super) fn new(kind: CameraArg, half_extent: f32, scale: &SceneScale) -> Self {
        let u = scale.unit;
        let orbit = Self {
            walk: false,
            target: [0.0, scale.floor + 0.8 * u, 0.0],
            orbit_yaw: 0.6,
            orbit_pitch: 0.42,
            distance: half_extent * 0.95 + 8.0 * u,
            eye: [0.0, EYE_HEIGHT * u, 0.0],
            walk_yaw: 0.0,
            walk_pitch: 0.0,
            fov: 50f32.to_radians(),
            unit: u,
        };
        // The walker starts at the crowd's edge, looking across it.
        let mut rig = Self {
            eye: [0.0, EYE_HEIGHT * u, half_extent * 0.8 + 2.0 * u],
            walk_yaw: std::f32::consts::PI,
            walk_pitch: -0.05,
            ..orbit
        };
        rig.walk = kind == CameraArg::Walk;
        rig
    }

    pub(super) fn kind_name(&self) -> &'static str {
        if self.walk { "walk" } else { "orbit" }
    }

    pub(super) fn switch(&mut self) {
        self.walk = !self.walk;
    }

    pub(super) fn orbit_eye(&self) -> [f32; 3] {
        let (sy, cy) = self.orbit_yaw.sin_cos();
        let (sp, cp) = self.orbit_pitch.sin_cos();
        let d = self.distance;
        [self.target[0] + d * cp * sy, self.target[1] + d * sp, self.target[2] + d * cp * cy]
    }

    /// Moves by the held keys over `dt` seconds.
    pub(super) fn update(&mut self, input: &Input, dt: f32) {
        let axis = |pos: bool, neg: bool| f32::from(u8::from(pos)) - f32::from(u8::from(neg));
        let (fwd, side, vertical) =
            (axis(input.forward, input.back), axis(input.right, input.left), axis(input.up, input.down));
        let boost = if input.fast { 4.0 } else { 1.0 };
        if self.walk {
            let (sy, cy) = self.walk_yaw.sin_cos();
            // Forward (sin, cos) on the ground; right is forward x up.
            let speed = 3.0 * self.unit * boost * dt;
            self.eye[0] += (sy * fwd - cy * side) * speed;
            self.eye[2] += (cy * fwd + sy * side) * speed;
            self.eye[1] = (self.eye[1] + vertical * speed).clamp(0.3 * self.unit, 200.0 * self.unit);
        } else {
            let (sy, cy) = self.orbit_yaw.sin_cos();
            // Towards the target from the eye is (-sin, -cos); right is (cos, -sin).
            let speed = (0.5 * self.distance).max(2.0 * self.unit) * boost * dt;
            self.target[0] += (-sy * fwd + cy * side) * speed;
            self.target[2] += (-cy * fwd - sy * side) * speed;
            self.zoom((-vertical * dt * 1.5 * boost).exp());
        }
    }

    pub(super) fn zoom(&mut self, factor: f32) {
        self.distance = (self.distance * factor).clamp(2.0 * self.unit, 2000.0 * self.unit);
    }

    /// Turns by a mouse drag of `dx, dy` pixels.
    pub(super) fn drag(&mut self, dx: f32, dy: f32) {
        if self.walk {
            self.walk_yaw -= dx * 0.003;
            self.walk_pitch = (self.walk_pitch - dy * 0.003).clamp(-1.4, 1.4);
        } else {
            self.orbit_yaw -= dx * 0.005;
            self.orbit_pitch = (self.orbit_pitch + dy * 0.005).clamp(0.03, 1.5);
        }
    }

    pub(super) fn camera(&self, size: [u32; 2]) -> Camera {
        let aspect = size[0] as f32 / size[1].max(1) as f32;
        let (eye, target) = if self.walk {
            let (sy, cy) = self.walk_yaw.sin_cos();
            let (sp, cp) = self.walk_pitch.sin_cos();
            (self.eye, [self.eye[0] + cp * sy, self.eye[1] + sp, self.eye[2] + cp * cy])
        } else {
            (self.orbit_eye(), self.target)
        };
        Camera::look_at(eye, target, self.fov, aspect, 0.1 * self.unit, 3000.0 * self.unit)
    }
}

/// Frame figures averaged over about a quarter of a second, for the title bar.
pub(super) struct Hud {
    pub(super) since: Instant,
    pub(super) frames: u32,
    pub(super) frame_seconds: f64,
    pub(super) cpu_seconds: f64,
}

/// How often the title bar is refreshed.
pub(super) const HUD_PERIOD: Duration = Duration::from_millis(250);

impl Hud {
    pub(super) fn new() -> Self {
        Self { since: Instant::now(), frames: 0, frame_seconds: 0.0, cpu_seconds: 0.0 }
    }
}
