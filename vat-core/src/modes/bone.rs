//! Bone mode: a skeletal asset drawn by skinning from its bone texture (per-frame bone matrices) and
//! per-vertex joints and weights, with the live morph layer, instead of reading its vertex animation.
//! It is a render mode of soft assets that carry the bone section ([`RenderMode::Bone`]), not a file
//! mode of its own, so it has no entry in [`super::MODES`]: its section's validation
//! (`section.rs`), its CPU reference decode (`reference`, re-exported by
//! [`crate::format::reference`]), its textures and buffers ([`bone_texture`], [`skin_buffers`]) and its
//! program ([`Program::Body`] with [`RenderMode::Bone`], picked by [`super::body_program`]) live here; its shader code is
//! `src/shaders/bone.wgsl`.

pub mod reference;
mod section;

pub(crate) use section::*;

use crate::backend::gpu::TextureData;
use crate::container::Asset;
#[cfg(doc)]
use crate::{backend::pipeline::Program, render::RenderMode};

/// The bone texture (group 1, `bone_texture`, `Rgba32Float`) of an asset, and whether it is a 1x1
/// stand-in (an asset without bones; its pipelines never read it).
pub fn bone_texture<'a>(asset: &Asset<'a>) -> (TextureData<'a>, bool) {
    match &asset.manifest().bone_animation {
        Some(b) => (
            TextureData {
                width: b.layout.width,
                height: b.layout.height,
                format: crate::encoding::TexelFormat::Rgba32Float,
                bytes: asset.blob(b.texture),
            },
            false,
        ),
        None => (
            TextureData {
                width: 1,
                height: 1,
                format: crate::encoding::TexelFormat::Rgba32Float,
                bytes: &crate::backend::gpu::ZERO_RGBA32F_TEXEL,
            },
            true,
        ),
    }
}

/// The joints and weights buffers (group 1, `joints`, `weights`) of an asset: its bone section's
/// blobs, or empty without one.
pub fn skin_buffers<'a>(asset: &Asset<'a>) -> (&'a [u8], &'a [u8]) {
    match &asset.manifest().bone_animation {
        Some(b) => (asset.blob(b.joints), asset.blob(b.weights)),
        None => (&[], &[]),
    }
}
