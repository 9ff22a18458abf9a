//! SideFX Labs VAT 3 particle bakes (`VAT Type` `Particles`, VAT 3's "Particle Sprites (Sprite)"
//! mode): camera-facing cards, decoded into frames of particles for vat's sprite mode
//! ([`crate::sprite`]).
//!
//! The layout, as VAT 3's particle shader (SideFX Labs' Unity `VAT_ParticleSprites` sub-graph) reads
//! it:
//!
//! | file | holds |
//! |---|---|
//! | `<N>_mesh.glb` | one card per particle: four vertices sharing the particle's texel in `TEXCOORD_1` (frame 0's rows, frame 0 = first scanline, frame `f` `f` blocks of rows lower, as the soft body), the card's corners in `TEXCOORD_0` (`(0, 0)`, `(1, 0)`, `(1, 1)`, `(0, 1)` for VAT 3's square card); the mesh's own positions are not read; 6 bounds-extender vertices |
//! | `<N>_pos` | per particle per frame: its centre (object space, as it is when HDR, `Bound Min + RGB (Bound Max - Bound Min)` when LDR) and in A its scale over the largest, `pscale = A / (1 - fract(10 Bound Max Y))` |
//! | `<N>_col` | per particle per frame: its colour (RGBA, linear) |
//!
//! The shader draws corner `uv0` of a card at `centre + (uv0.x - 1/2) w s right + (uv0.y - 1/2) h s
//! up`, `right` and `up` the view's axes, `w` and `h` the material's *Particle Width/Height Base
//! Scale* (0.2 by default, not in the files: [`HoudiniOptions::particle_size`](super::houdini::HoudiniOptions)),
//! `s = pscale` times its global multipliers (1 by default). It hides a particle whose scale is 0 or
//! whose centre lies within the material's *Origin Effective Radius* (0.02 by default) of the object
//! origin, where VAT 3 parks particles that are not alive. With its default *Interframe
//! Interpolation* off, it shows each frame as it is. So a frame's particles are its visible cards:
//! vat's particles of edge `w s`, centred there, in that colour, not turned; without ids (a column
//! need not follow one particle), so vat does not interpolate them between frames either.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use glam::{Vec2, Vec3};
use vat_core::modes::sprite::Particle;

use super::houdini::{HoudiniData, check_height, is_padding_vertex, texture_is_hdr};
use super::images::Texture;
use super::{LookupMesh, bad};
use crate::Result;
use crate::sprite::{SourceParticle, SpriteFrame, SpriteFrames};

/// VAT 3's default card edge, metres: its particle material's *Particle Width Base Scale* and
/// *Particle Height Base Scale*.
pub const HOUDINI_PARTICLE_SIZE: f32 = 0.2;

/// VAT 3's default *Origin Effective Radius*, metres: a particle centred this close to the object
/// origin is hidden.
pub const HOUDINI_ORIGIN_RADIUS: f32 = 0.02;

/// A decoded VAT 3 particle bake: its frames for vat's sprite mode, decoded one at a time
/// ([`SpriteFrames`]) from the textures held here.
#[derive(Debug)]
pub struct ImportedSpriteBake {
    name: String,
    fps: f32,
    frames: usize,
    /// Per card, its texel at frame 0 (column, row), in texel order.
    cards: Vec<(u32, u32)>,
    rows_per_frame: usize,
    pos: Texture,
    pos_path: PathBuf,
    col: Option<Texture>,
    hdr: bool,
    min: Vec3,
    range: Vec3,
    /// `1 / (1 - fract(10 Bound Max Y))`.
    pscale_max: f32,
    /// The card edge at scale 1, metres.
    card_size: f32,
    /// What the import left out or chose, one line each.
    pub(crate) notes: Vec<String>,
    /// Per frame read, the cards hidden (scale 0, or at the origin) and colour channels clamped.
    counts: RefCell<Vec<Option<(usize, usize)>>>,
}

/// The parts of a particle bake, read.
pub struct SpriteParts<'a> {
    /// The bake's name (`<name>_data.json`), for messages and the mesh's name.
    pub name: &'a str,
    /// The parsed `_data.json`.
    pub data: &'a HoudiniData,
    /// Where `_data.json` was read from, for messages.
    pub json_path: &'a Path,
    /// Where `_mesh.glb` was read from, for messages.
    pub mesh_path: &'a Path,
    /// `_mesh.glb`'s mesh (one card per particle).
    pub mesh: &'a LookupMesh,
    /// Where the position texture was read from, for messages.
    pub pos_path: &'a Path,
    /// The position texture, decoded.
    pub pos: Texture,
    /// The colour texture, decoded, and where it was read from; `None`: no per-frame colours.
    pub col: Option<(Texture, PathBuf)>,
    /// The card edge at scale 1, metres.
    pub card_size: f32,
}

/// `pscale`'s largest value as VAT 3 encodes it in `Bound Max Y`'s decimals: `1 / (1 - fract(10
/// max_y))`, 1 when the bound is on a whole tenth (to 1e-4, so that f32 rounding reads as whole).
fn pscale_max(max_y: f32) -> f64 {
    let s = f64::from(max_y) * 10.0;
    let frac = s - s.floor();
    if !(1e-4..=1.0 - 1e-4).contains(&frac) { 1.0 } else { 1.0 / (1.0 - frac) }
}

/// Whether `uv` is a corner of the unit square, and which (0: `(0, 0)`, 1: `(1, 0)`, 2: `(1, 1)`,
/// 3: `(0, 1)`).
fn square_corner(uv: Vec2) -> Option<usize> {
    let near = |a: f32, b: f32| (a - b).abs() <= 1e-3;
    [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)].iter().position(|&(x, y)| near(uv.x, x) && near(uv.y, y))
}

/// Decodes a particle bake's parts (see the module docs).
pub fn decode(parts: SpriteParts<'_>) -> Result<ImportedSpriteBake> {
    let SpriteParts { name, data, json_path, mesh_path, mesh, pos_path, pos, col, card_size } = parts;
    let mut notes = mesh.notes.clone();
    if data.two_position_textures {
        return Err(bad(
            json_path,
            "Two Position Textures",
            "is 1: the second position texture is not read; re-export the bake with one position texture",
        ));
    }
    if !(card_size.is_finite() && card_size > 0.0) {
        return Err(crate::BakeError::InvalidOption {
            option: "--particle-size",
            problem: format!("{card_size} is not a positive card edge in metres"),
        });
    }
    let hdr = texture_is_hdr(data, pos_path, &pos)?;
    let frames = data.frames;
    let padding = |v: usize| is_padding_vertex(mesh.lookup[v], frames);
    let (w, h, padded) = super::houdini::active_area(data, pos_path, pos.width, pos.height)?;
    notes.extend(padded);
    let lookup = super::openvat::lookup_texels(mesh, mesh_path, w, h, &padding)?;
    let r = lookup.rows_per_frame;
    check_height(pos_path, h, frames, r)?;
    let uv0 = mesh.uvs.as_ref().ok_or_else(|| {
        bad(mesh_path, "the mesh", "has no TEXCOORD_0: a VAT 3 particle card keeps its corners there")
    })?;
    // Cards: the vertices of one texel, the four corners of the unit square in TEXCOORD_0.
    let mut card_of = std::collections::BTreeMap::new();
    for v in 0..mesh.positions.len() {
        if lookup.col[v] != u32::MAX {
            card_of.entry((lookup.row[v], lookup.col[v])).or_insert_with(Vec::new).push(v);
        }
    }
    for ((row, col), vs) in &card_of {
        let mut seen = [false; 4];
        for &v in vs {
            match square_corner(uv0[v]) {
                Some(c) if !seen[c] => seen[c] = true,
                _ => {
                    return Err(bad(
                        mesh_path,
                        format!("the card of texel ({col}, {row})"),
                        format!(
                            "has a vertex at TEXCOORD_0 {} ({} vertices in all): VAT 3's square card has four, one at each \
                             corner of the unit square; other card shapes (triangles, hexagons, custom) are not vat's \
                             square sprites",
                            uv0[v],
                            vs.len()
                        ),
                    ));
                }
            }
        }
        if seen.iter().any(|s| !s) {
            return Err(bad(
                mesh_path,
                format!("the card of texel ({col}, {row})"),
                format!("has {} vertices, not the four corners of a square card", vs.len()),
            ));
        }
    }
    let mut dropped = 0usize;
    for (t, tri) in mesh.indices.chunks_exact(3).enumerate() {
        let texel = |v: u32| (lookup.row[v as usize], lookup.col[v as usize]);
        let k = tri.iter().filter(|&&v| lookup.col[v as usize] != u32::MAX).count();
        if k == 0 {
            dropped += 1;
        } else if k != 3 || texel(tri[1]) != texel(tri[0]) || texel(tri[2]) != texel(tri[0]) {
            return Err(bad(
                mesh_path,
                format!("triangle {t}"),
                "joins vertices of different cards (or a card and a bounds extender): not a VAT 3 particle mesh",
            ));
        }
    }
    let extenders = (0..mesh.positions.len()).filter(|&v| lookup.col[v] == u32::MAX).count();
    if extenders > 0 {
        notes.push(format!(
            "{extenders} bounds-extender vertices (TEXCOORD_1 past the frames' rows, no texel) and {dropped} triangles \
             using them left out"
        ));
    }
    let cards: Vec<(u32, u32)> = card_of.keys().map(|&(row, col)| (col, row)).collect();
    let col = match col {
        Some((t, p)) if (t.width, t.height) != (pos.width, pos.height) => {
            return Err(bad(
                &p,
                "the colour texture",
                format!(
                    "is {} x {}, the position texture {} x {}: they must match",
                    t.width, t.height, pos.width, pos.height
                ),
            ));
        }
        Some((t, _)) => Some(t),
        None => {
            notes.push("no _col texture: every particle is white".into());
            None
        }
    };
    let pscale_max = pscale_max(data.max[1]);
    notes.push(format!(
        "{} cards over {frames} frames at {} fps (Houdini FPS); one looping clip {name:?}, as VAT 3's shaders loop; a \
         card's edge is {card_size} m times its pscale (position alpha{}; VAT 3's material keeps the base scale, \
         {HOUDINI_PARTICLE_SIZE} m by default: --particle-size sets it), square and facing the camera, not turned (VAT 3's \
         spin is off by default and not imported)",
        cards.len(),
        data.fps,
        if pscale_max == 1.0 { String::new() } else { format!(" times {pscale_max:.4} from Bound Max Y") }
    ));
    notes.push(
        "particles carry no identity from frame to frame (a texel column need not follow one particle; VAT 3's material \
         shows each frame as it is): vat does not interpolate them between frames"
            .into(),
    );
    let bake = ImportedSpriteBake {
        name: name.to_owned(),
        fps: data.fps,
        frames,
        cards,
        rows_per_frame: r,
        pos,
        pos_path: pos_path.to_path_buf(),
        col,
        hdr,
        min: Vec3::from(data.min),
        range: Vec3::from(data.max) - Vec3::from(data.min),
        pscale_max: pscale_max as f32,
        card_size,
        notes,
        counts: RefCell::new(vec![None; frames]),
    };
    // Every frame decodes (a bad texel is an error now, not in the middle of the bake).
    for k in 0..frames {
        bake.frame(k)?;
    }
    Ok(bake)
}

impl SpriteFrames for ImportedSpriteBake {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.frames
    }
    fn frame(&self, k: usize) -> Result<SpriteFrame> {
        if k >= self.frames {
            return Err(crate::BakeError::InvalidInput {
                part: self.name.clone(),
                problem: format!("has no frame {k}"),
            });
        }
        let mut frame = SpriteFrame::default();
        let (mut hidden, mut clamped) = (0usize, 0usize);
        for &(c, row0) in &self.cards {
            let (c, row) = (c as usize, row0 as usize + k * self.rows_per_frame);
            let t = self.pos.at(c, row);
            if !t.iter().all(|x| x.is_finite()) {
                return Err(bad(
                    &self.pos_path,
                    format!("texel ({c}, {row})"),
                    format!("holds {t:?}: not finite"),
                ));
            }
            let t3 = Vec3::new(t[0], t[1], t[2]);
            let centre = if self.hdr {
                t3
            } else {
                if t3.min_element() < -1e-3 || t3.max_element() > 1.0 + 1e-3 {
                    return Err(bad(
                        &self.pos_path,
                        format!("texel ({c}, {row})"),
                        format!("holds {t3}, outside [0, 1]: the bounds do not hold the centres"),
                    ));
                }
                self.min + t3 * self.range
            };
            let pscale = t[3] * self.pscale_max;
            if pscale < 0.0 {
                return Err(bad(
                    &self.pos_path,
                    format!("texel ({c}, {row})"),
                    format!("holds a scale of {pscale} in alpha: negative"),
                ));
            }
            // VAT 3's shader: scale times saturate(sign(|centre| - radius)).
            if pscale == 0.0 || centre.length() <= HOUDINI_ORIGIN_RADIUS {
                hidden += 1;
                continue;
            }
            let color = match &self.col {
                Some(col) => {
                    let raw = col.at(c, row);
                    if !raw.iter().all(|x| x.is_finite()) {
                        return Err(bad(
                            &self.pos_path,
                            format!("colour texel ({c}, {row})"),
                            format!("holds {raw:?}: not finite"),
                        ));
                    }
                    clamped += raw.iter().filter(|x| !(0.0..=1.0).contains(*x)).count();
                    raw.map(|x| x.clamp(0.0, 1.0))
                }
                None => [1.0; 4],
            };
            let particle =
                Particle { position: centre.to_array(), size: self.card_size * pscale, color, rotation: 0.0 };
            frame.particles.push(SourceParticle { id: None, particle });
        }
        if let Some(slot) = self.counts.borrow_mut().get_mut(k) {
            *slot = Some((hidden, clamped));
        }
        Ok(frame)
    }
    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        let counts = self.counts.borrow();
        let (hidden, clamped) =
            counts.iter().flatten().fold((0usize, 0usize), |(h, c), &(a, b)| (h + a, c + b));
        if hidden > 0 {
            notes.push(format!(
                "{hidden} card-frames hidden by VAT 3 (scale 0 in position alpha, or parked within {HOUDINI_ORIGIN_RADIUS} m \
                 of the origin): not alive in those frames"
            ));
        }
        if clamped > 0 {
            notes.push(format!(
                "{clamped} colour values outside [0, 1] (an HDR colour texture) clamped: vat's particles store 8-bit \
                 colours"
            ));
        }
        notes
    }
}
