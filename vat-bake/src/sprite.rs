//! The sprite (particle) mode: bakes a sequence of particle frames into camera-facing cards, one
//! texel per slot per frame ([`vat_core::modes::sprite`] describes the texel and the sampling).
//!
//! Frames are read **twice, one at a time** ([`SpriteFrames`]): a first pass collects the particle
//! ids of every frame, the box of the centres and the largest card, and assigns slots
//! ([`assign_slots`]); a second encodes each frame's row of the particle texture and drops it.
//! Sources: in memory ([`SpriteSequence`], e.g. `vat_procgen::sprite_by_name`) or a folder of
//! per-frame CSV or PLY files ([`SpriteFolder`], read by [`read_sprite_csv`] and
//! [`read_sprite_ply`]).
//!
//! Units: metres (centres, sizes as card edge lengths), seconds, radians (rotation about the view
//! axis), linear colour.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{
    AlphaMode, Asset, ContainerWriter, Lod, Manifest, Material, MaterialTextures, SpriteAnimation,
    TextureBinding, TextureColorSpace, TextureFilter, TextureWrap,
};
use vat_core::format::encoding::PositionBounds;
use vat_core::format::layout::VertexTextureLayout;
use vat_core::modes::sprite::{
    DEAD_TEXEL, Particle, SPRITE_TEXEL_BYTES, SpriteBounds, decode_particle_texel, encode_particle_texel,
    error_bounds, texel_at, wrap_angle, wrap_delta,
};

use crate::rig::MaterialImage;
use crate::{BakeError, Result};

mod bake;
mod csv;
mod frames;
mod ply;
mod slots;
mod verify;

pub use bake::*;
pub use csv::*;
pub use frames::*;
pub use ply::*;
pub use slots::*;
pub use verify::*;
#[cfg(test)]
mod tests;
