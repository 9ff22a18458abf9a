//! What bakers and tools need of the `.vat` format beyond reading it: where each texel lives
//! ([`layout`]), how positions, normals and rotations are encoded and their error bounds
//! ([`encoding`]), LOD selection and chunk math ([`lod`]), the per-mode data of the rigid, fluid and
//! sprite modes ([`rigid`], [`fluid`], [`sprite`]) and the CPU reference decoder that computes
//! exactly what the shaders compute ([`reference`](mod@reference)). Game code rarely needs these;
//! it loads an [`Asset`](crate::Asset) and runs a [`Crowd`](crate::Crowd).

pub mod encoding;
pub mod fluid;
pub mod layout;
pub mod lod;
pub mod reference;
pub mod rigid;
pub mod sprite;
