//! The fluid mode's CPU reference: the frame an instance shows and its corners.

use crate::format::reference::helpers::*;

/// Everything the decoder needs of a fluid asset ([`crate::container::FluidAnimation`]), borrowed.
#[derive(Debug, Clone)]
pub struct FluidAnimationView<'a> {
    /// The vertex animation holding every frame's vertices back to back (one "frame" of all of
    /// them: texel `d` is lookup entry `d`'s vertex).
    pub vertices: VertexAnimationView<'a>,
    /// The fluid's description (pool, frames, lookup layout).
    pub fluid: &'a crate::container::FluidAnimation,
    /// The lookup texture's bytes.
    pub lookup: &'a [u8],
    /// Corners of the pool (the asset's vertex count).
    pub corner_count: u32,
}

impl<'a> FluidAnimationView<'a> {
    /// The fluid animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a fluid bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let fluid = manifest.fluid_animation.as_ref().ok_or(Error::OutOfRange {
            what: "fluid animation",
            value: "none".into(),
            expected: "an asset baked in the fluid mode",
        })?;
        Ok(Self {
            vertices: VertexAnimationView::from_asset_unchecked(asset)?,
            fluid,
            lookup: asset.blob(fluid.lookup),
            corner_count: manifest.vertex_count,
        })
    }

    /// The lookup entry of `corner` at absolute frame `frame`: a vertex texel, or
    /// [`crate::fluid::COLLAPSED`].
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] outside the lookup texture.
    pub fn lookup_entry(&self, frame: u32, corner: u32) -> Result<u32> {
        crate::fluid::lookup_entry(self.lookup, self.fluid.lookup_layout.vertex_count, frame, corner)
    }

    /// The object-space position (metres) and unit normal of vertex texel `d` (a lookup entry other
    /// than [`crate::fluid::COLLAPSED`]).
    ///
    /// # Errors
    /// Texture-size errors of [`encoding::decode_vertex_texel`].
    pub fn object_vertex(&self, d: u32) -> Result<([f32; 3], [f32; 3])> {
        let v = &self.vertices;
        let t = encoding::decode_vertex_texel(v.format, v.position_bits, &v.textures, d.into())?;
        Ok((v.bounds.denormalize(t.position), normalize3(t.normal)))
    }
}

/// The absolute frame a fluid instance shows at epoch-relative `time` (`vat_fluid_frame`): clip
/// A's frame of point interpolation, whatever interpolation the renderer uses.
///
/// # Errors
/// [`Error::ZeroCount`] without clips.
pub fn fluid_frame(clips: &[Clip], instance: &InstanceRecord, time: f32) -> Result<u32> {
    let (frames, w) = clip_frames(clips, instance.slot_a(), time, Interpolation::Point)?;
    Ok(if w[1] == 1.0 { frames[1] } else { frames[2] })
}

/// Decodes pool corner `corner` of a fluid asset for `instance` at epoch-relative `time`
/// (seconds), as `vat_fluid_vertex` does: `None` for a collapsed corner, else the corner's vertex
/// at the instance's frame ([`fluid_frame`]) with the instance transform. Clip B and the
/// cross-fade are ignored (see [`crate::fluid`]).
///
/// # Errors
/// [`Error::OutOfRange`] for a corner outside the pool; those of [`fluid_frame`] and of the
/// texture reads.
pub fn decode_fluid_vertex(
    view: &FluidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    corner: u32,
) -> Result<Option<DecodedVertex>> {
    if corner >= view.corner_count {
        return Err(Error::OutOfRange {
            what: "fluid corner index",
            value: corner.to_string(),
            expected: "< the pool's corner count (the asset's vertex count)",
        });
    }
    let frame = fluid_frame(view.vertices.clips, instance, time)?;
    let d = view.lookup_entry(frame, corner)?;
    if d == crate::fluid::COLLAPSED {
        return Ok(None);
    }
    let (p, n) = view.object_vertex(d)?;
    Ok(Some(to_world(instance, p, n)))
}
