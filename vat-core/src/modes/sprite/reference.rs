//! The sprite mode's CPU reference: particles and their camera-facing cards.

use crate::format::reference::helpers::*;

/// Everything the decoder needs of a sprite asset ([`crate::container::SpriteAnimation`]),
/// borrowed.
#[derive(Debug, Clone)]
pub struct SpriteAnimationView<'a> {
    /// The sprite's description (slots, layout, bounds).
    pub sprite: &'a crate::container::SpriteAnimation,
    /// The particle texture's bytes.
    pub particles: &'a [u8],
    /// The asset's clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> SpriteAnimationView<'a> {
    /// The sprite animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a sprite bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let sprite = manifest.sprite_animation.as_ref().ok_or(Error::OutOfRange {
            what: "sprite animation",
            value: "none".into(),
            expected: "an asset baked in the sprite mode",
        })?;
        Ok(Self { sprite, particles: asset.blob(sprite.particles), clips: &manifest.clips })
    }

    /// Particle slots of the asset (four card corners each).
    pub fn slot_count(&self) -> u32 {
        self.sprite.layout.vertex_count
    }

    /// The particle texel of `slot` at absolute frame `frame` (texel `frame * slots + slot`).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] outside the particle texture.
    pub fn texel(&self, frame: u32, slot: u32) -> Result<[u32; 4]> {
        let index = u64::from(frame) * u64::from(self.slot_count()) + u64::from(slot);
        crate::sprite::texel_at(self.particles, index)
    }
}

/// The particle slot `slot` of a sprite asset shows for `instance` at epoch-relative `time`
/// (seconds), as `vat_sprite_particle` computes it: clip A's two frames around the phase, the nearer
/// one at [`Interpolation::Point`], else [`crate::sprite::sample_particle`] between them (cubic
/// samples particles linearly too); clip B and the cross-fade are ignored. `None` where the slot is
/// dead. The centre is in object space.
///
/// # Errors
/// [`Error::OutOfRange`] for a slot past the asset's; [`Error::ZeroCount`] without clips; those of
/// the texture reads.
pub fn sprite_particle(
    view: &SpriteAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    slot: u32,
    interpolation: Interpolation,
) -> Result<Option<crate::sprite::Particle>> {
    if slot >= view.slot_count() {
        return Err(Error::OutOfRange {
            what: "sprite slot index",
            value: slot.to_string(),
            expected: "< the asset's slot count (its vertex count / 4)",
        });
    }
    let (frames, w) = clip_frames(view.clips, instance.slot_a(), time, Interpolation::Linear)?;
    let (f0, f1, t) = (frames[1], frames[2], w[2]);
    let b = view.sprite.sprite_bounds();
    if interpolation == Interpolation::Point {
        let texel = view.texel(if t < 0.5 { f0 } else { f1 }, slot)?;
        return Ok(crate::sprite::decode_particle_texel(&b, texel).map(|(p, _)| p));
    }
    Ok(crate::sprite::sample_particle(&b, view.texel(f0, slot)?, view.texel(f1, slot)?, t))
}

/// Corner `corner` (`0..4`) of the card of particle `p` (object-space centre) of `instance`, facing
/// the world point `camera`, as `vat_sprite_card` builds it (see [`crate::sprite`]): the centre
/// placed by the instance transform, `n = normalize(camera - centre)` (+Z when they coincide),
/// `right = normalize((n.z, 0, -n.x))` (+X when `n` is vertical), `up = cross(n, right)`, both
/// turned by the particle's rotation; corner offsets `(-1/2, -1/2)`, `(1/2, -1/2)`, `(1/2, 1/2)`,
/// `(-1/2, 1/2)` along them times `size * scale`. `object_position` is the particle's centre,
/// `object_normal` zero, `world_normal` `n`, `world_tangent` the turned right axis with sign +1.
pub fn sprite_card(
    p: &crate::sprite::Particle,
    instance: &InstanceRecord,
    corner: u32,
    camera: [f32; 3],
) -> DecodedVertex {
    let centre = to_world(instance, p.position, [0.0, 1.0, 0.0]).world_position;
    let n = normalize3([camera[0] - centre[0], camera[1] - centre[1], camera[2] - centre[2]]);
    let mut right = [1.0, 0.0, 0.0];
    let r2 = n[2] * n[2] + n[0] * n[0];
    if r2 > 1e-12 {
        let inv = 1.0 / r2.sqrt();
        right = [n[2] * inv, 0.0, -n[0] * inv];
    }
    let up = [
        n[1] * right[2] - n[2] * right[1],
        n[2] * right[0] - n[0] * right[2],
        n[0] * right[1] - n[1] * right[0],
    ];
    let (sr, cr) = p.rotation.sin_cos();
    let r: [f32; 3] = std::array::from_fn(|k| right[k] * cr + up[k] * sr);
    let u: [f32; 3] = std::array::from_fn(|k| up[k] * cr - right[k] * sr);
    let ox = if corner == 1 || corner == 2 { 0.5 } else { -0.5 };
    let oy = if corner >= 2 { 0.5 } else { -0.5 };
    let edge = p.size * instance.scale;
    let world_position = std::array::from_fn(|k| centre[k] + (r[k] * ox + u[k] * oy) * edge);
    DecodedVertex {
        object_position: p.position,
        object_normal: [0.0; 3],
        world_position,
        world_normal: n,
        world_tangent: [r[0], r[1], r[2], 1.0],
    }
}

/// Decodes card corner `corner` (slot `corner / 4`, corner `corner % 4`) of a sprite asset for
/// `instance` at epoch-relative `time` (seconds), facing the world point `camera`, as
/// `vat_sprite_vertex` does: [`sprite_particle`] then [`sprite_card`]; `None` for a dead slot.
///
/// # Errors
/// Those of [`sprite_particle`].
pub fn decode_sprite_corner(
    view: &SpriteAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    corner: u32,
    interpolation: Interpolation,
    camera: [f32; 3],
) -> Result<Option<DecodedVertex>> {
    let particle = sprite_particle(view, instance, time, corner / 4, interpolation)?;
    Ok(particle.map(|p| sprite_card(&p, instance, corner % 4, camera)))
}
