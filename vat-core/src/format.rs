//! What bakers and tools need of the `.vat` format beyond reading it: where each texel lives
//! ([`layout`]), how positions, normals and rotations are encoded and their error bounds
//! ([`encoding`]), LOD selection and chunk math ([`lod`]), the view grid of the impostor tier
//! ([`impostor`]) and the CPU reference decoder that computes exactly what the shaders compute
//! ([`reference`](mod@reference)). Each mode's own data and decode live in its module of
//! [`crate::modes`]. Game code rarely needs these; it loads an [`Asset`](crate::Asset) and runs a
//! [`Crowd`](crate::Crowd).

pub mod encoding;
pub mod impostor;
pub mod layout;
pub mod lod;
pub mod reference;
pub mod skin_residual;
