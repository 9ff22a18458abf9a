//! Bake options, the in-memory bake ([`PreparedBake`]) and writing it as a `.vat` file.
//!
//! [`prepare`] does all the work on the CPU and no I/O:
//!
//! 1. validate the options and plan the clips: each clip samples `round(d * fps)` frames at
//!    `start + k / fps` when looping (the end frame would repeat the first), `round(d * fps) + 1`
//!    frames ending exactly at `end` when one-shot ([`vat_core::clip::ClipRowMap`]); locomotion clips
//!    get their stride (known, or measured by [`crate::stride`]);
//! 2. merge the body meshes ([`VertexSet::from_rig`]), build the LOD chain on the original topology
//!    ([`crate::lods`]), then renumber the vertices so that texture neighbours are mesh neighbours
//!    ([`lods::locality_order`]) and rewrite every LOD's indices, before any texture is encoded;
//! 3. sample every frame's pose once; skin the positions of every frame to find the box positions
//!    are normalised into (over every vertex of every frame; nothing is stored), then skin each
//!    frame again (the ground truth, bit for bit [`skin::skin_frames_into`]) and encode it straight
//!    into the vertex texture in the chosen format, a frame per parallel task, so the skinned
//!    frames never exist all at once;
//! 4. optionally the bone texture (`global(node) * inverse_bind` per bone per frame) with joints and
//!    weights and, when the body has morph targets, bone mode's live morph layer ([`crate::morph`]),
//!    per-frame tangent frames, and always the sockets, capture tracks, attachments, LODs
//!    and rest-pose vertex streams.
//!
//! [`PreparedBake::to_vat_bytes`] lays the result out with [`vat_core::container::container_bytes`];
//! [`PreparedBake::write`] writes it atomically. Byte-identical blobs are stored once. Identical
//! inputs give identical bytes, whatever the number of threads.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use glam::{Mat4, Vec3, Vec4};
use rayon::prelude::*;
use serde::Serialize;
use vat_core::clip::{Clip, ClipMode, ClipRowMap};
use vat_core::container::{
    Attachment, BlobId, Bone as ManifestBone, BoneAnimation, CaptureTrack, ElementFormat, Lod, Manifest,
    Socket as ManifestSocket, StreamKind, VertexAnimation, VertexStream, container_bytes, write_container,
};
use vat_core::files::{PendingFile, write_file_atomically};
use vat_core::format::encoding::{self, NormalRounding, PositionBounds, VertexFormat};
use vat_core::format::layout::{BoneTextureLayout, VertexTextureLayout};

use crate::lods::{self, LodOptions};
use crate::rig::{AnimationClip, ChannelTarget, MeshRole, Rig};
use crate::sample::{global_matrices, sample_pose, validate_clip};
use crate::skin::{self, VertexSet};
use crate::stride::measure_stride;
use crate::{BakeError, Result};

/// The largest `--max-texture-dim` accepted: the largest texture dimension the `.vat` reader admits
/// by default ([`vat_core::container::Limits`]), that of current desktop GPUs.
pub const MAX_TEXTURE_DIM: u32 = 16384;

/// The default memory budget of a bake ([`BakeOptions::max_memory`], `--max-memory`): 2 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 2 << 30;

/// Reference poses the LOD simplifier measures collapses in (see [`crate::lods`]).
const LOD_REFERENCE_POSES: usize = 4;

mod clips;
mod encode;
mod entry;
/// Small hand-built rigs for the tests of this crate's bake stages.
#[cfg(test)]
pub(crate) mod fixtures;
mod options;
mod planned;
mod residual;
mod sampling;
mod sections;
mod source;
#[cfg(test)]
mod tests;

pub use clips::*;
use encode::*;
pub use entry::*;
pub use options::*;
pub(crate) use planned::*;
use residual::*;
pub(crate) use sampling::*;
use sections::*;
