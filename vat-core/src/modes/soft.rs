//! Soft mode (and skeletal assets drawn from their vertex animation): every vertex's position and
//! normal per frame in the vertex animation texture, in one of the vertex formats of
//! [`crate::format::encoding`]. Its section is the base every other mode's checks read (the layout sets
//! the frame count): its validation (`section.rs`) and its table entry live here; its
//! CPU reference decode is the core of [`crate::format::reference`] (`decode_vertex`,
//! `decode_object_frame`), which the other modes' decodes build on; its textures are bound by vertex
//! format ([`crate::backend::gpu::vertex_textures`]); its program is the render mode's own body
//! program; its shader code is the VAT section of `src/shaders/vat.wgsl`.

mod section;

pub(crate) use section::*;

/// The soft mode's entry in the mode table ([`crate::modes::MODES`]).
pub(crate) const ENTRY: crate::modes::ModeEntry = crate::modes::ModeEntry {
    mode: crate::container::VatMode::Soft,
    present: |m| m.vertex_animation.is_some(),
    // The vertex animation is the base section every other check reads (its layout sets the
    // frame count): the reader checks it before the mode sections.
    validate: |_| Ok(()),
    // The vertex-format textures (`vat_texture` ...) are bound by format, not by mode.
    textures: |_| Vec::new(),
    program: None,
    decode_entry_point: None,
};
