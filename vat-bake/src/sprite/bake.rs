//! Baking sprite frames into a `.vat`: options, statistics, the disc image and the bake.

use super::*;

/// How a sprite source is baked.
#[derive(Debug, Clone, PartialEq)]
pub struct SpriteBakeOptions {
    /// Largest texture width or height of the target device, texels.
    pub max_texture_dim: u32,
    /// Whether the clip loops: its last frame leads back to its first (the particle flags then
    /// continue across the wrap where the same id holds the same slot).
    pub looping: bool,
}

impl Default for SpriteBakeOptions {
    /// 16384 texels (as [`crate::fluid::FluidBakeOptions`]), one-shot.
    fn default() -> Self {
        Self { max_texture_dim: 16384, looping: false }
    }
}

/// Figures of a sprite bake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpriteBakeStats {
    /// Frames.
    pub frames: u32,
    /// Slots (cards drawn per instance): the most particles alive in one frame, or a few more for
    /// a looping clip ([`assign_slots`]).
    pub slots: u32,
    /// Alive texels: particles summed over all frames.
    pub particle_frames: u64,
    /// Most particles alive in one frame (`slots` unless a looping clip needed a few more to keep
    /// the particles crossing the wrap in their slots).
    pub max_alive: u32,
    /// Bytes of the particle texture.
    pub particle_texture_bytes: u64,
    /// The size of the whole file, bytes.
    pub file_bytes: u64,
    /// The centre's error bound per axis, millimetres (half a unorm16 step of the box).
    pub position_bound_mm: [f64; 3],
    /// The size's error bound, millimetres.
    pub size_bound_mm: f64,
    /// A colour channel's error bound (of 1).
    pub color_bound: f64,
    /// The rotation's error bound, degrees.
    pub rotation_bound_deg: f64,
    /// What the bake left out or changed, one line each; a note that repeats per frame is said once,
    /// with the count of frames ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
}

/// Side of the generated disc texture, texels.
pub const SPRITE_DISC_SIZE: u32 = 64;

/// Where the disc's alpha starts falling, in units of the card's half edge.
pub(super) const DISC_INNER: f32 = 0.8;

/// The generated base colour texture of sprite bakes: a `SPRITE_DISC_SIZE`² sRGB image of a ball.
///
/// With `r` the distance from the card's centre over half its edge (so `r = 1` at the middle of an
/// edge), the alpha is `a(r) = 1 - smoothstep(0.8, 1, r)` (1 inside `r <= 0.8`, 0 from `r >= 1`).
/// Drawn under the material's mask cutoff 0.5, a particle of alpha `p` (which multiplies `a`)
/// shows a disc of radius `r = 0.8 + 0.2 * (1/2 - sin(asin(1/p - 1) / 3))` half-edges for
/// `p >= 0.5` (`0.9` for an opaque particle, `0.8` at `p = 0.5`), and nothing for `p < 0.5`
/// (about: texel centres, 8-bit alpha and filtering move the edge by up to a texel). The colour is
/// white shaded towards the rim (linear `1 - 0.3 r²`), so a disc reads as a ball.
pub fn sprite_disc_image() -> MaterialImage {
    let n = SPRITE_DISC_SIZE;
    let mut rgba = Vec::with_capacity((4 * n * n) as usize);
    for y in 0..n {
        for x in 0..n {
            let u = (x as f32 + 0.5) / n as f32 - 0.5;
            let v = (y as f32 + 0.5) / n as f32 - 0.5;
            let r = (u * u + v * v).sqrt() / 0.5;
            let t = ((r - DISC_INNER) / (1.0 - DISC_INNER)).clamp(0.0, 1.0);
            let alpha = 1.0 - t * t * (3.0 - 2.0 * t);
            let shade = 1.0 - 0.3 * r.min(1.0) * r.min(1.0);
            let srgb =
                if shade <= 0.003_130_8 { shade * 12.92 } else { 1.055 * shade.powf(1.0 / 2.4) - 0.055 };
            let c = (srgb.clamp(0.0, 1.0) * 255.0).round() as u8;
            rgba.extend_from_slice(&[c, c, c, (alpha * 255.0).round() as u8]);
        }
    }
    MaterialImage { name: "sprite disc".into(), width: n, height: n, rgba }
}

/// Bakes `source` into `.vat` bytes (see the module docs for the two passes): one clip named after
/// the source, a card of four corners and two triangles per slot, one material `"sprite"` (white,
/// metallic 0, roughness 1, double-sided, alpha mask 0.5, base colour [`sprite_disc_image`]).
///
/// # Errors
/// [`BakeError::InvalidInput`] without frames or particles, for a bad frame, or a frame that changed
/// between the two reads; container and layout errors (e.g. a particle texture larger than
/// `max_texture_dim` allows).
pub fn bake_sprite(
    source: &dyn SpriteFrames,
    options: &SpriteBakeOptions,
) -> Result<(Vec<u8>, SpriteBakeStats)> {
    let frame_count = source.frame_count();
    if frame_count == 0 {
        return Err(invalid(source.name(), "has no frames"));
    }
    let frames_u32 =
        u32::try_from(frame_count).map_err(|_| invalid(source.name(), "more than 2^32 - 1 frames"))?;
    // Pass 1: ids, box, largest card.
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    let mut max_size = 0.0f32;
    let mut ids = Vec::with_capacity(frame_count);
    for k in 0..frame_count {
        let frame = source.frame(k)?;
        for sp in &frame.particles {
            for a in 0..3 {
                lo[a] = lo[a].min(sp.particle.position[a]);
                hi[a] = hi[a].max(sp.particle.position[a]);
            }
            max_size = max_size.max(sp.particle.size);
        }
        ids.push(frame.particles.iter().map(|p| p.id).collect::<Vec<_>>());
    }
    let table = assign_slots(ids.into_iter().map(Ok), options.looping).map_err(|e| match e {
        BakeError::InvalidInput { problem, .. } => invalid(source.name(), problem),
        e => e,
    })?;
    let slots = table.slot_count;
    let position_bounds = PositionBounds::from_points([lo, hi])?;
    let bounds = SpriteBounds { position: position_bounds, max_size };
    let layout = VertexTextureLayout::new(slots, frames_u32, options.max_texture_dim).map_err(|e| match e {
        vat_core::Error::TextureTooLarge { texels, max_dimension, .. } => BakeError::InvalidOption {
            option: "--max-texture-dim",
            problem: format!(
                "{slots} particle slots x {frames_u32} frames = {texels} texels do not fit in a {max_dimension} x \
                 {max_dimension} texture; raise --max-texture-dim (up to 16384) if the device allows, or bake fewer \
                 frames (--fps) or particles"
            ),
        },
        other => other.into(),
    })?;
    let texture_len = usize::try_from(layout.byte_len(SPRITE_TEXEL_BYTES))
        .map_err(|_| invalid(source.name(), "particle texture too large for this machine"))?;

    // Pass 2: one row of `slots` texels per frame.
    let mut texture = Vec::with_capacity(texture_len);
    let mut row = vec![DEAD_TEXEL; slots as usize];
    let mut particle_frames = 0u64;
    for (k, assigned) in table.frames.iter().enumerate() {
        let frame = source.frame(k)?;
        if frame.particles.len() != assigned.len() {
            return Err(invalid(source.name(), format!("frame {k} changed between the two reads")));
        }
        row.fill(DEAD_TEXEL);
        for (sp, &(slot, continues)) in frame.particles.iter().zip(assigned) {
            row[slot as usize] = encode_particle_texel(&bounds, &sp.particle, continues)?;
        }
        particle_frames += assigned.len() as u64;
        texture.extend(row.iter().flatten().flat_map(|w| w.to_le_bytes()));
    }
    texture.resize(texture_len, 0);

    let mut map = ClipRowMap::new();
    let fps = source.fps();
    let (mode, duration) = if options.looping {
        (ClipMode::Looping, frame_count as f32 / fps)
    } else {
        (ClipMode::OneShot, (frame_count as f32 - 1.0).max(0.0) / fps)
    };
    map.push(source.name(), duration, fps, mode, 0.0)?;
    let stored = map.total_frames() as usize;
    if stored != frame_count {
        return Err(invalid(source.name(), format!("{frame_count} frames at {fps} fps store as {stored}")));
    }

    let corners = slots.checked_mul(4).ok_or(invalid(source.name(), "too many slots"))?;
    let index_count = slots.checked_mul(6).ok_or(invalid(source.name(), "too many slots"))?;
    let mut writer = ContainerWriter::new();
    let texture_bytes = texture.len() as u64;
    let particles = writer.add_blob(texture);
    let indices: Vec<u8> = (0..slots)
        .flat_map(|s| {
            let c = 4 * s;
            [c, c + 1, c + 2, c, c + 2, c + 3]
        })
        .flat_map(u32::to_le_bytes)
        .collect();
    let index_id = writer.add_blob(indices);
    let mut manifest = Manifest::new(source.name().to_owned(), corners);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(index_id);
    manifest.lods = vec![Lod {
        first_index: 0,
        index_count,
        triangle_count: 2 * slots,
        screen_error: 0.0,
        max_distance: f32::INFINITY,
    }];
    let mut notes = source.notes();
    let color = crate::textures::texture_array(
        &[sprite_disc_image()],
        TextureColorSpace::Srgb,
        options.max_texture_dim,
        &mut notes,
    )
    .map(|(mut array, bytes)| {
        array.texels = writer.add_blob(bytes);
        array
    });
    manifest.material_textures = Some(MaterialTextures { color, data: None });
    manifest.materials = vec![Material {
        name: "sprite".into(),
        base_color_factor: [1.0; 4],
        base_color_texture: Some(TextureBinding {
            layer: 0,
            wrap_u: TextureWrap::ClampToEdge,
            wrap_v: TextureWrap::ClampToEdge,
            mag_filter: TextureFilter::Linear,
            min_filter: TextureFilter::Linear,
        }),
        metallic_factor: 0.0,
        roughness_factor: 1.0,
        double_sided: true,
        alpha_mode: AlphaMode::Mask { cutoff: 0.5 },
        ..Material::default()
    }];
    manifest.sprite_animation = Some(SpriteAnimation { layout, position_bounds, max_size, particles });
    let bytes = writer.finish(manifest)?;
    let e = error_bounds(&bounds);
    let stats = SpriteBakeStats {
        frames: frames_u32,
        slots,
        particle_frames,
        max_alive: table.frames.iter().map(|f| f.len() as u32).max().unwrap_or(0),
        particle_texture_bytes: texture_bytes,
        file_bytes: bytes.len() as u64,
        position_bound_mm: e.position.map(|b| b * 1e3),
        size_bound_mm: e.size * 1e3,
        color_bound: e.color,
        rotation_bound_deg: e.rotation_rad.to_degrees(),
        notes: crate::notes::collapse(notes),
    };
    Ok((bytes, stats))
}

/// Particle frames as a [`crate::Source`]: [`bake_sprite`] with the options that apply (the
/// texture size, and a looping clip when `--loop` names any), [`verify_sprite`] (looping as the
/// file's clip says).
impl crate::Source for Box<dyn SpriteFrames> {
    fn mode(&self) -> vat_core::container::VatMode {
        vat_core::container::VatMode::Sprite
    }

    fn bake(
        &self,
        options: &crate::prepare::BakeOptions,
        _progress: &mut dyn FnMut(crate::prepare::Progress),
    ) -> Result<crate::Baked> {
        let options = SpriteBakeOptions {
            max_texture_dim: options.max_texture_dim,
            looping: !options.looping.is_empty(),
        };
        let (bytes, stats) = bake_sprite(self.as_ref(), &options)?;
        Ok(crate::Baked { file: crate::BakedFile::Bytes(bytes), figures: Box::new(stats) })
    }

    fn verify(
        &self,
        asset: &Asset<'_>,
        _options: &crate::verify::VerifyOptions,
    ) -> Result<Box<dyn crate::Report>> {
        let looping = asset.manifest().clips.first().is_some_and(|c| c.is_looping());
        Ok(Box::new(verify_sprite(asset, self.as_ref(), looping)?))
    }
}

impl crate::Figures for SpriteBakeStats {
    fn write_summary(
        &self,
        out: &mut dyn std::io::Write,
        what: &str,
        path: &std::path::Path,
    ) -> std::io::Result<()> {
        let stats = self;
        writeln!(
            out,
            "baked {what} -> {} (sprite): {} frames; {} particle slots (the most alive at once: {}); {} particle-frames; \
             particle texture {} bytes (16 per slot per frame); {} bytes in all",
            path.display(),
            stats.frames,
            stats.slots,
            stats.max_alive,
            stats.particle_frames,
            stats.particle_texture_bytes,
            stats.file_bytes
        )?;
        writeln!(
            out,
            "  particles interpolate between frames where their id persists, else show the nearer frame; cross-fades \
             do not apply"
        )?;
        for note in &stats.notes {
            writeln!(out, "  note: {note}")?;
        }
        Ok(())
    }
}
