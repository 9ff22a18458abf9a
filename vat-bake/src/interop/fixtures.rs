//! Bakes made here in other tools' layouts, for the import tests (vat-bake's and the CLI's): an
//! OpenVAT bake laid out as OpenVAT's tutorial folder is ([`openvat_tutorial_fixture`]). Every
//! fixture is built from known motion, so a test can compare an import with the truth.

use std::path::Path;

use glam::Vec3;

use super::images::{self, TextureFormat};
use super::openvat::{blender_to_gltf, gltf_to_blender, lookup_glb};
use crate::{BakeError, Result};

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| BakeError::Io { path: dir.to_path_buf(), source: e })?;
    }
    std::fs::write(path, bytes).map_err(|e| BakeError::Io { path: path.to_path_buf(), source: e })
}

/// An OpenVAT bake of a wavy strip, with the motion it encodes.
#[derive(Debug, Clone)]
pub struct OpenVatFixture {
    /// Its base name `N`.
    pub name: String,
    /// The sidecar's text.
    pub json: Vec<u8>,
    /// The position texture (16-bit PNG; normals packed in its lower half).
    pub texture: Vec<u8>,
    /// The mesh (glb with `TEXCOORD_1`).
    pub glb: Vec<u8>,
    /// Texture width and height.
    pub size: (usize, usize),
    /// Frames.
    pub frames: usize,
    /// The rest positions (glTF space), one per mesh vertex.
    pub rest: Vec<Vec3>,
    /// The positions (glTF space) of every vertex at every frame, as encoded (before quantisation).
    pub positions: Vec<Vec<Vec3>>,
    /// The unit normals (glTF space) of every vertex at every frame, as encoded.
    pub normals: Vec<Vec<Vec3>>,
    /// The largest quantisation error of a decoded position per glTF axis (half a 16-bit step of
    /// the range).
    pub step: [f32; 3],
}

impl OpenVatFixture {
    /// Writes the bake as OpenVAT's tutorial folder is laid out: `packed/<N>_packed_vat.png`,
    /// `packed/<N>-remap_info.json` and `mesh/M_<N>_glTF_yUp.glb` under `dir`.
    ///
    /// # Errors
    /// [`BakeError::Io`] when a file cannot be written.
    pub fn write_tutorial_layout(&self, dir: &Path) -> Result<()> {
        let n = &self.name;
        write(&dir.join("packed").join(format!("{n}_packed_vat.png")), &self.texture)?;
        write(&dir.join("packed").join(format!("{n}-remap_info.json")), &self.json)?;
        write(&dir.join("mesh").join(format!("M_{n}_glTF_yUp.glb")), &self.glb)
    }
}

/// An OpenVAT bake named `name` of a strip of `vertices` vertices (two rows of a ribbon) over
/// `frames` frames, in a texture of `columns` columns: more vertices than columns wrap in blocks of
/// `frames` rows, one row a frame (OpenVAT's layout), and the height is rounded up to a power of
/// two with the normals packed in its lower half, as OpenVAT 1.0 writes `<N>_packed_vat.png`.
pub fn openvat_tutorial_fixture(
    name: &str,
    vertices: usize,
    columns: usize,
    frames: usize,
) -> OpenVatFixture {
    let vertices = vertices.max(4) & !1;
    let columns = columns.clamp(1, vertices);
    let frames = frames.max(1);
    let blocks = vertices.div_ceil(columns);
    let used = blocks * frames;
    let h = (2 * used).next_power_of_two();
    let w = columns;
    let half = vertices / 2;
    let rest: Vec<Vec3> =
        (0..vertices).map(|i| Vec3::new((i % half) as f32 * 0.25, (i / half) as f32 * 0.5, 0.0)).collect();
    // A wave along the strip and a slow turn: every vertex, frame and axis moves.
    let motion = |i: usize, f: usize| -> (Vec3, Vec3) {
        let t = f as f32 / frames as f32 * std::f32::consts::TAU;
        let x = rest[i].x;
        let offset =
            Vec3::new(0.1 * (t + x).sin(), 0.05 * (2.0 * t).cos() * (1.0 + x), 0.3 * (t + 2.0 * x).sin());
        let normal = Vec3::new(0.3 * (t + x).cos(), 0.2, 1.0).normalize();
        (offset, normal)
    };
    let mut offsets = Vec::new();
    for f in 0..frames {
        for i in 0..vertices {
            offsets.push(gltf_to_blender(motion(i, f).0));
        }
    }
    let (lo, hi) = offsets
        .iter()
        .fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), o| (lo.min(*o), hi.max(*o)));
    // Bounds rounded outward to 0.1, as OpenVAT writes them.
    let (lo, hi) = ((lo * 10.0).floor() / 10.0, (hi * 10.0).ceil() / 10.0);
    let range = hi - lo;
    let mut rgb = vec![[0.0f32; 3]; w * h];
    let mut positions = vec![Vec::new(); frames];
    let mut normals = vec![Vec::new(); frames];
    for f in 0..frames {
        for (i, r) in rest.iter().enumerate() {
            let (offset, normal) = motion(i, f);
            let b = gltf_to_blender(offset);
            let (col, row) = (i % w, (i / w) * frames + f);
            rgb[row * w + col] = ((b - lo) / range).to_array();
            let nb = gltf_to_blender(normal);
            rgb[(row + h / 2) * w + col] = ((nb + Vec3::ONE) * 0.5).to_array();
            positions[f].push(*r + offset);
            normals[f].push(normal);
        }
    }
    let texture = images::encode_texture(TextureFormat::Png16, w, h, &rgb).unwrap_or_default();
    let lookup: Vec<[f32; 2]> = (0..vertices)
        .map(|i| [((i % w) as f32 + 0.5) / w as f32, (((i / w) * frames) as f32 + 0.5) / h as f32])
        .collect();
    let mut indices = Vec::new();
    for k in 0..half as u32 - 1 {
        let (a, b, c, d) = (k, k + 1, k + half as u32 + 1, k + half as u32);
        indices.extend_from_slice(&[a, b, c, a, c, d]);
    }
    let rest_normals = vec![Vec3::Z; vertices];
    let glb = lookup_glb(name, &rest, &rest_normals, None, &lookup, &indices).unwrap_or_default();
    let json = format!(
        "{{\n    \"os-remap\": {{\n        \"Min\": [{}, {}, {}],\n        \"Max\": [{}, {}, {}],\n        \"Frames\": {frames}\n    }}\n}}",
        lo.x, lo.y, lo.z, hi.x, hi.y, hi.z
    )
    .into_bytes();
    let step = blender_to_gltf(range).abs() * (0.5 / 65535.0);
    OpenVatFixture {
        name: name.to_owned(),
        json,
        texture,
        glb,
        size: (w, h),
        frames,
        rest,
        positions,
        normals,
        step: step.to_array(),
    }
}
