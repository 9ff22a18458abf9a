//! The buffers of a crowd at one capacity, by role: one list for both backends' creation.

use crate::frame::CrowdCapacity;
use crate::gpu::{CullParams, DRAW_ARGS_BYTES};

use super::{CrowdBuffers, CrowdGroups, Handles};

/// One of the seven buffers of a [`CrowdBuffers`] (the scatter buffers and views' lists come later,
/// when a frame needs them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrowdBuffer {
    /// The instance records (storage, written by uploads and the scatter).
    Records,
    /// The CPU-culled instance list (storage, written by uploads).
    List,
    /// The GPU-culled visible lists (storage, written by the culling).
    Visible,
    /// The indirect draw arguments the culling writes (storage and indirect; copied from the template
    /// and to the counts' read-back).
    DrawArgs,
    /// The draw arguments' reset template (copied from).
    ArgsTemplate,
    /// The culling parameters (uniform).
    CullParams,
    /// 16 bytes of user data per record (storage).
    UserData,
}

impl CrowdBuffer {
    /// Every buffer, in the order [`CrowdBuffers::new`] takes them.
    pub const ALL: [CrowdBuffer; 7] = [
        CrowdBuffer::Records,
        CrowdBuffer::List,
        CrowdBuffer::Visible,
        CrowdBuffer::DrawArgs,
        CrowdBuffer::ArgsTemplate,
        CrowdBuffer::CullParams,
        CrowdBuffer::UserData,
    ];

    /// Its size in bytes at `capacity` (user data: at least 16, a buffer is never empty).
    pub fn bytes(self, capacity: CrowdCapacity) -> u64 {
        match self {
            CrowdBuffer::Records => capacity.record_bytes(),
            CrowdBuffer::List => capacity.list_bytes(),
            CrowdBuffer::Visible => capacity.visible_bytes(),
            CrowdBuffer::DrawArgs | CrowdBuffer::ArgsTemplate => DRAW_ARGS_BYTES,
            CrowdBuffer::CullParams => size_of::<CullParams>() as u64,
            CrowdBuffer::UserData => capacity.user_data_bytes().max(16),
        }
    }

    /// Its debug label.
    pub fn label(self) -> &'static str {
        match self {
            CrowdBuffer::Records => "instance records",
            CrowdBuffer::List => "instance list",
            CrowdBuffer::Visible => "visible lists",
            CrowdBuffer::DrawArgs => "draw args",
            CrowdBuffer::ArgsTemplate => "draw args template",
            CrowdBuffer::CullParams => "cull params",
            CrowdBuffer::UserData => "instance user data",
        }
    }
}

impl<H: Handles> CrowdBuffers<H> {
    /// The buffers of [`CrowdBuffer::ALL`], in its order, with the groups 2 over them and what keeps
    /// them alive; no scatter buffers or views' lists yet.
    pub fn new(buffers: [H::Buffer; 7], groups: CrowdGroups<H::Group>, keep: H::Keep) -> Self {
        let [records, list, visible, draw_args, args_template, cull_params, user_data] = buffers;
        Self {
            records,
            list,
            visible,
            draw_args,
            args_template,
            cull_params,
            user_data,
            groups,
            scatter: None,
            views: Vec::new(),
            keep,
        }
    }
}
