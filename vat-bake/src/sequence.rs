//! Soft-body sources: a mesh sequence (one mesh per frame, the same topology in every frame), read from
//! a folder of per-frame OBJ or glTF files or made by a simulation (`vat_procgen::cloth`).
//!
//! A sequence becomes a [`Rig`] with a streamed body ([`Rig::streamed_body`]) that bakes through the
//! VAT path: one rigid mesh whose rest pose is frame 0, and one clip that plays every frame at the
//! source's rate. The bake and `verify` read the frames from the source as they need them (a frame
//! per task), so a sequence folder is **streamed from disk**: it is read once to be checked
//! ([`SequenceFolder::open`]), once for the quantisation box, once to encode and once to verify,
//! and memory holds a few frames at a time, not the sequence. Sampled at the source's own rate, each
//! baked frame is exactly a source frame; between two frames the two are blended linearly, as VAT
//! playback does. So `verify` checks the bake against the source frames through the same code as a
//! skinned bake.
//!
//! **Normals.** Taken from the source when every frame has them; otherwise recomputed for every frame:
//! area-weighted over the triangles that use each vertex *index*, so vertices the source splits (a
//! hard edge, a UV seam) keep separate normals and hard edges stay hard (averaging by position, which
//! welds hard edges smooth, is a known defect of some VAT exporters).
//!
//! **Memory.** A folder costs the frames being read (about two per thread, each its file plus 48
//! bytes a vertex), charged to the bake's budget ([`crate::prepare::estimate_bake_bytes`]); an
//! in-memory [`MeshSequence`] holds its frames (24 bytes per vertex per frame). A sequence has at most
//! [`MAX_SEQUENCE_FRAMES`] frames, the `.vat` reader's frame limit.
//!
//! [`MeshSequence::into_morph_rig`] makes the other form, frames as morph targets under a weights
//! channel (a "mesh cache", as other tools export them), for export to glTF.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use glam::{Vec2, Vec3};
use vat_core::files::ReadLimit;

use crate::gltf_import::{self, ImportOptions};
use crate::rig::{
    AnimationClip, BodyFrame, BodyFrames, Channel, ChannelTarget, KeyInterpolation, Mesh, MeshBinding,
    MeshRole, MorphTarget, Node, Rig, StreamedBody, StreamedClip, Transform,
};
use crate::skin::VertexSet;
use crate::{BakeError, Result};

mod files;
mod folder;
mod mesh;
mod obj;
#[cfg(test)]
mod tests;

pub use files::*;
pub use folder::*;
pub use mesh::*;
pub(crate) use obj::*;
