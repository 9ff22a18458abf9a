//! What `Renderer::decode` of either backend decides before it creates anything.

use crate::frame::AssetDrawInfo;
use crate::gpu::{DecodedVertex, ResourceError};
use crate::pipeline::ShaderVariantKey;
use crate::render::RenderMode;

use super::Error;

/// One decode dispatch: what a backend's `Renderer::decode` creates and runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeJob {
    /// The compute entry point (`cs_decode`, `cs_decode_bone`, `cs_decode_rigid`).
    pub entry: &'static str,
    /// Its shader variant.
    pub variant: ShaderVariantKey,
    /// Vertices decoded: records x the asset's vertices.
    pub count: u64,
    /// Bytes of the output ([`DecodedVertex`]es).
    pub out_bytes: u64,
}

/// The decode of `records` instance records of an asset in `mode`: `Ok(None)` when there is
/// nothing to decode (no records or no vertices), else the dispatch, checked against the device's
/// storage buffer `limit` (bytes).
///
/// # Errors
/// [`Error::AssetHasNoBones`] for bone mode of an asset without bones,
/// [`ResourceError::BufferTooLarge`] for an output over `limit`, [`Error::NoDecode`] for a mode
/// that decodes nothing.
pub fn plan_decode<D>(
    info: &AssetDrawInfo,
    records: usize,
    mode: RenderMode,
    cross_fade: bool,
    limit: u64,
) -> Result<Option<DecodeJob>, Error<D>> {
    if mode == RenderMode::Bone && !info.has_bones() {
        return Err(Error::AssetHasNoBones);
    }
    let count = records as u64 * u64::from(info.vertex_count());
    let out_bytes = count * size_of::<DecodedVertex>() as u64;
    if out_bytes > limit {
        return Err(ResourceError::BufferTooLarge { what: "decoded vertex", size: out_bytes, limit }.into());
    }
    if count == 0 {
        return Ok(None);
    }
    let Some(entry) = info.decode_entry_point(mode) else {
        return Err(Error::NoDecode(mode));
    };
    Ok(Some(DecodeJob { entry, variant: info.variant(cross_fade), count, out_bytes }))
}

/// The buffer a decode's group 2 binds to the binding named `name`, as an index into the
/// backend's `[records, decode params, output, visible list, cull params, draw arguments]` (the
/// last three are placeholders: decoding reads none of them, but the compute layout has them; the
/// instance list is the visible list's placeholder too).
pub fn decode_buffer(name: &str) -> Option<usize> {
    Some(match name {
        "instances" => 0,
        "decode_params" => 1,
        "decoded" => 2,
        "instance_list" | "visible" => 3,
        "cull_params" => 4,
        "draw_args" => 5,
        _ => return None,
    })
}
