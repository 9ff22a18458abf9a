//! The rigid-body bake: pieces that move as units ([`vat_core::modes::rigid`]).
//!
//! Every source becomes a [`RigidSource`]: pieces (a rest mesh each, with its pivot) and clips that
//! give every piece's pivot and rotation (from rest) at every baked frame. Two sources produce it: a
//! glTF (or any [`Rig`]) whose animated nodes carry meshes ([`RigidSource::from_rig`], one piece per
//! mesh), and `vat_procgen::shatter`. [`bake_rigid`] encodes it into a `.vat` in the rigid
//! mode, and [`verify_rigid`] decodes the file with vat-core's CPU reference (what the shader
//! computes) and compares every piece's transform and every vertex at every frame with the source,
//! each against the bound the format gives it.

use glam::{Mat4, Quat, Vec3};
use serde::Serialize;
use vat_core::clip::{ClipMode, ClipRowMap};
use vat_core::container::{
    Asset, ContainerWriter, ElementFormat, Lod, Manifest, RigidAnimation, StreamKind, VertexStream,
};
use vat_core::format::encoding::{PositionBounds, make_hemisphere_continuous};
use vat_core::format::layout::VertexTextureLayout;
use vat_core::format::reference::{self, RigidAnimationView};
use vat_core::instance::InstanceRecord;
use vat_core::modes::rigid::{self, ROTATION_BOUND_DEG, ROTATION_BOUND_RAD};
use vat_core::playback::Interpolation;

use crate::lods::{self, LodOptions};
use crate::rig::{MeshBinding, MeshRole, Rig};
use crate::sample;
use crate::{BakeError, Result};

mod bake;
mod detect;
mod source;
#[cfg(test)]
mod tests;
mod verify;

pub use bake::*;
pub use detect::*;
pub use source::*;
pub use verify::*;
#[cfg(test)]
mod materials_tests;
