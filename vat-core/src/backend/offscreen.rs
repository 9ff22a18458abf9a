//! What both backends' `Offscreen` (their [`crate::render::CrowdRenderer`]) decide alike.

use crate::gpu::ResourceError;

/// Checks an offscreen target of `size` pixels against the device's 2D texture `limit`.
///
/// # Errors
/// [`ResourceError::TextureTooLarge`] (`what: "target"`) for a zero side or one over `limit`.
pub fn check_target_size(size: [u32; 2], limit: u32) -> Result<(), ResourceError> {
    if size[0] == 0 || size[1] == 0 || size[0] > limit || size[1] > limit {
        return Err(ResourceError::TextureTooLarge {
            what: "target",
            width: size[0],
            height: size[1],
            limit,
        });
    }
    Ok(())
}

/// The GPU-culled visible lists of a crowd as [`crate::render::CrowdRenderer::read_gpu_visible`]
/// gives them: each list sorted (the culling writes them in any order).
pub fn sorted_lists(mut lists: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    for list in &mut lists {
        list.sort_unstable();
    }
    lists
}
