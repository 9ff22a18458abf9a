//! Bakes made here in other tools' layouts, for the import tests (vat-bake's and the CLI's): an
//! OpenVAT bake laid out as OpenVAT's tutorial folder is ([`openvat_tutorial_fixture`]). Every
//! fixture is built from known motion, so a test can compare an import with the truth.

use std::path::Path;

use glam::Vec3;

use vat_bake::interop::TextureFormat;
use vat_bake::interop::openvat::{blender_to_gltf, gltf_to_blender};
use vat_bake::interop::stages::{
    encode_rgba_exr32, encode_rgba_png8, encode_texture, lookup_glb, lookup_glb_with_sets,
};
use vat_bake::{BakeError, Result};

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
    let texture = encode_texture(TextureFormat::Png16, w, h, &rgb).unwrap_or_default();
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

/// One frame of a fixture's changing mesh: its points (positions and unit normals, object space)
/// and triangles.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FixtureFrame {
    /// Point positions.
    pub positions: Vec<Vec3>,
    /// Point normals.
    pub normals: Vec<Vec3>,
    /// Triangles, indices into the points.
    pub triangles: Vec<[u32; 3]>,
}

/// A VAT 3 dynamic-mesh bake (`VAT Type` `DynamicMesh`) made here in VAT 3's layout, with the
/// frames it encodes and the raw texels, as VAT 3's shader reads them.
#[derive(Debug, Clone)]
pub struct HoudiniDynamicFixture {
    /// `_data.json`.
    pub json: Vec<u8>,
    /// `_pos`, `_rot`, `_lookup` and `_col` files (PNG when LDR, EXR when HDR).
    pub pos: Vec<u8>,
    /// See `pos`.
    pub rot: Vec<u8>,
    /// See `pos`.
    pub lookup: Vec<u8>,
    /// See `pos`.
    pub col: Vec<u8>,
    /// `_mesh.glb`.
    pub glb: Vec<u8>,
    /// The texture file extension (`png` or `exr`).
    pub ext: &'static str,
    /// The frames encoded.
    pub frames: Vec<FixtureFrame>,
    /// Position (and rotation) texture size.
    pub pos_size: (usize, usize),
    /// Lookup table size.
    pub lookup_size: (usize, usize),
    /// The texels as the shader reads them (`code / 255` for LDR), rows top to bottom.
    pub pos_texels: Vec<[f32; 4]>,
    /// See `pos_texels`.
    pub rot_texels: Vec<[f32; 4]>,
    /// See `pos_texels`.
    pub lookup_texels: Vec<[f32; 4]>,
    /// `TEXCOORD_0` of every mesh vertex (the pool's corners, then 6 bounds extenders).
    pub uv0: Vec<[f32; 2]>,
    /// The mesh's triangles.
    pub indices: Vec<u32>,
    /// `Bound Min X/Y/Z`, `Bound Max X/Y/Z` as written.
    pub bounds: ([f32; 3], [f32; 3]),
    /// `Houdini FPS`.
    pub fps: f32,
}

impl HoudiniDynamicFixture {
    /// Writes the bake as VAT 3 groups its files by default: `data/<N>_data.json`,
    /// `tex/<N>_pos|rot|lookup|col.<ext>`, `geo/<N>_mesh.glb`.
    ///
    /// # Errors
    /// [`BakeError::Io`] when a file cannot be written.
    pub fn write(&self, dir: &Path, name: &str) -> Result<()> {
        let ext = self.ext;
        write(&dir.join("data").join(format!("{name}_data.json")), &self.json)?;
        write(&dir.join("geo").join(format!("{name}_mesh.glb")), &self.glb)?;
        for (kind, bytes) in
            [("pos", &self.pos), ("rot", &self.rot), ("lookup", &self.lookup), ("col", &self.col)]
        {
            write(&dir.join("tex").join(format!("{name}_{kind}.{ext}")), bytes)?;
        }
        Ok(())
    }
}

/// `v` in `[0, 1]` as an 8-bit code.
fn code8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// Bounds rounded outward to whole tenths (VAT 3 rounds them to 0.1 and encodes flags in further
/// decimals).
fn tenths(lo: Vec3, hi: Vec3) -> (Vec3, Vec3) {
    ((lo * 10.0 - 1e-3).floor() / 10.0, (hi * 10.0 + 1e-3).ceil() / 10.0)
}

/// A VAT 3 dynamic-mesh bake of `frames` frames: a ribbon of 1 to 3 quads (its topology changes
/// from frame to frame) waving in place, its points packed in a 7-column position texture, a pool of
/// the busiest frame's 6 triangles whose 18 corners read an 8-column lookup table (3 rows a frame),
/// each frame's unused corners on texel (0, 0), and 6 bounds-extender vertices. `hdr`: float EXR
/// textures (values as they are, `u = R + G / 2048` lookups) instead of 8-bit PNGs.
pub fn houdini_dynamic_fixture(frames: usize, hdr: bool) -> HoudiniDynamicFixture {
    let frames = frames.max(1);
    let fx_frames = ribbon_frames(frames);
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for p in fx_frames.iter().flat_map(|f| &f.positions) {
        lo = lo.min(*p);
        hi = hi.max(*p);
    }
    let (lo, hi) = tenths(lo, hi);
    // Flags in further decimals, as VAT 3's shader reads them: Bound Max Z's tenths' fraction >= 0.5
    // for HDR textures, Bound Min X's (negated) for an HDR lookup table.
    let (mut min_w, mut max_w) = (lo, hi);
    if hdr {
        max_w.z += 0.05;
        min_w.x -= 0.05;
    }
    let points = DynamicPoints::new(&fx_frames, lo, hi - lo, hdr);
    let (pw, ph) = points.size;
    let (lookup_texels, (lw, lh), corners) = dynamic_lookup(&fx_frames, &points.first_point, (pw, ph), hdr);
    let (positions, uv0, indices) = dynamic_pool(corners, (lw, lh), lo, hi);
    let normals = vec![Vec3::Y; positions.len()];
    let uv1 = vec![[0.0f32, 1.0]; positions.len()];
    let glb = lookup_glb_with_sets("dynamic", &positions, &normals, &[Some(&uv0), Some(&uv1)], &indices)
        .unwrap_or_default();
    let fps = 24.0f32;
    let json = format!(
        "[{{\"Axis System\": \"Right-Handed Y-Up\", \"Bound Max X\": {}, \"Bound Max Y\": {}, \"Bound Max Z\": {}, \
         \"Bound Min X\": {}, \"Bound Min Y\": {}, \"Bound Min Z\": {}, \"Frame Count\": {frames}, \"Houdini FPS\": {fps}, \
         \"Name\": \"dynamic\", \"Spare Color Texture\": 0, \"Two Position Textures\": 0, \"Use HDR Textures\": {}, \
         \"VAT Type\": \"DynamicMesh\", \"Vertex Count\": 8}}]",
        max_w.x,
        max_w.y,
        max_w.z,
        min_w.x,
        min_w.y,
        min_w.z,
        u8::from(hdr)
    )
    .into_bytes();
    let encode = |w: usize, h: usize, texels: &[[f32; 4]]| -> Vec<u8> {
        if hdr {
            encode_rgba_exr32(w, h, texels).unwrap_or_default()
        } else {
            let codes: Vec<[u8; 4]> = texels.iter().map(|t| t.map(code8)).collect();
            encode_rgba_png8(w, h, &codes).unwrap_or_default()
        }
    };
    let col = encode(pw, ph, &vec![[1.0f32; 4]; pw * ph]);
    HoudiniDynamicFixture {
        json,
        pos: encode(pw, ph, &points.pos_texels),
        rot: encode(pw, ph, &points.rot_texels),
        lookup: encode(lw, lh, &lookup_texels),
        col,
        glb,
        ext: if hdr { "exr" } else { "png" },
        frames: fx_frames,
        pos_size: (pw, ph),
        lookup_size: (lw, lh),
        pos_texels: points.pos_texels,
        rot_texels: points.rot_texels,
        lookup_texels,
        uv0,
        indices,
        bounds: (min_w.to_array(), max_w.to_array()),
        fps,
    }
}

/// The dynamic fixture's motion: at frame `k`, a ribbon of `1 + k % 3` quads waving in place.
fn ribbon_frames(frames: usize) -> Vec<FixtureFrame> {
    let mut fx_frames = Vec::with_capacity(frames);
    for k in 0..frames {
        let quads = 1 + k % 3;
        let mut f = FixtureFrame::default();
        for j in 0..2 {
            for i in 0..=quads {
                let (x, t) = (i as f32 * 0.3, k as f32 * 0.7 + i as f32);
                f.positions.push(Vec3::new(x, j as f32 * 0.4 + 0.1 * t.sin(), 0.2 * (t + j as f32).cos()));
                f.normals.push(Vec3::new(0.3 * t.sin(), 1.0, 0.4 * (t + j as f32).cos()).normalize());
            }
        }
        let row = quads as u32 + 1;
        for i in 0..quads as u32 {
            f.triangles.push([i, i + 1, row + i + 1]);
            f.triangles.push([i, row + i + 1, row + i]);
        }
        fx_frames.push(f);
    }
    fx_frames
}

/// The points of every frame, back to back, in a 7-column position texture and its rotation
/// texture (raw, or 8-bit codes of the box `lo + range` without `hdr`).
struct DynamicPoints {
    pos_texels: Vec<[f32; 4]>,
    rot_texels: Vec<[f32; 4]>,
    /// Each frame's first point.
    first_point: Vec<usize>,
    /// The textures' width and height.
    size: (usize, usize),
}

impl DynamicPoints {
    fn new(fx_frames: &[FixtureFrame], lo: Vec3, range: Vec3, hdr: bool) -> DynamicPoints {
        use glam::Quat;
        let points: usize = fx_frames.iter().map(|f| f.positions.len()).sum();
        let (pw, ph) = (7usize, points.div_ceil(7));
        let mut pos_texels = vec![[0.0f32; 4]; pw * ph];
        let mut rot_texels = vec![[0.5f32, 0.5, 0.5, 1.0]; pw * ph];
        let mut first_point = Vec::with_capacity(fx_frames.len());
        let mut p = 0usize;
        for f in fx_frames {
            first_point.push(p);
            for (pos, n) in f.positions.iter().zip(&f.normals) {
                let q = Quat::from_rotation_arc(Vec3::Y, *n);
                let (pv, qv) = if hdr {
                    (pos.extend(1.0).to_array(), q.to_array())
                } else {
                    let t = (*pos - lo) / range;
                    let c = |v: f32| f32::from(code8(v)) / 255.0;
                    ([c(t.x), c(t.y), c(t.z), 1.0], q.to_array().map(|x| c(x * 0.5 + 0.5)))
                };
                pos_texels[p] = pv;
                rot_texels[p] = qv;
                p += 1;
            }
        }
        DynamicPoints { pos_texels, rot_texels, first_point, size: (pw, ph) }
    }
}

/// The lookup table: the busiest frame's corners in 8 columns, 3 rows a frame, each a point's
/// texel in the `(pw, ph)` position texture (`u = R + G / 255` 8-bit pairs without `hdr`). Returns
/// the texels, the table's size and the pool's corner count.
fn dynamic_lookup(
    fx_frames: &[FixtureFrame],
    first_point: &[usize],
    (pw, ph): (usize, usize),
    hdr: bool,
) -> (Vec<[f32; 4]>, (usize, usize), usize) {
    let frames = fx_frames.len();
    let pool = fx_frames.iter().map(|f| f.triangles.len()).max().unwrap_or(1);
    let corners = 3 * pool;
    let (lw, rows) = (8usize, (3 * pool).div_ceil(8));
    let lh = rows * frames;
    let mut lookup_texels = vec![[0.0f32; 4]; lw * lh];
    for (k, f) in fx_frames.iter().enumerate() {
        for (t, tri) in f.triangles.iter().enumerate() {
            for (j, &v) in tri.iter().enumerate() {
                let c = 3 * t + j;
                let point = first_point[k] + v as usize;
                let (u, v) =
                    (((point % pw) as f32 + 0.5) / pw as f32, ((point / pw) as f32 + 0.5) / ph as f32);
                let texel = if hdr {
                    [u, 0.0, v, 0.0]
                } else {
                    // u = R + G / 255 with R, G 8-bit codes over 255.
                    let split = |x: f32| {
                        let hi8 = (x * 255.0).floor().min(255.0);
                        let lo8 = ((x - hi8 / 255.0) * 65025.0).round().clamp(0.0, 255.0);
                        (hi8 / 255.0, lo8 / 255.0)
                    };
                    let ((r, g), (b, a)) = (split(u), split(v));
                    [r, g, b, a]
                };
                lookup_texels[(k * rows + c / lw) * lw + c % lw] = texel;
            }
        }
    }
    (lookup_texels, (lw, lh), corners)
}

/// The pool mesh: each of `corners` corners its own vertex at a spot of its own (the shader does
/// not read it) with its lookup texel as `TEXCOORD_0`, then two bounds-extender triangles on the
/// box's corners (`TEXCOORD_0` = (0, 1)). Returns positions, `TEXCOORD_0` and indices.
fn dynamic_pool(
    corners: usize,
    (lw, lh): (usize, usize),
    lo: Vec3,
    hi: Vec3,
) -> (Vec<Vec3>, Vec<[f32; 2]>, Vec<u32>) {
    let mut positions = Vec::new();
    let mut uv0 = Vec::new();
    let mut indices = Vec::new();
    for c in 0..corners {
        positions.push(Vec3::new(
            (c / 3) as f32 * 0.1 + [0.0, 0.05, 0.0][c % 3],
            [0.0, 0.0, 0.05][c % 3],
            0.0,
        ));
        uv0.push([((c % lw) as f32 + 0.5) / lw as f32, ((c / lw) as f32 + 0.5) / lh as f32]);
        indices.push(c as u32);
    }
    // Bounds extenders: two triangles on the box's corners, TEXCOORD_0 = (0, 1).
    let base = positions.len() as u32;
    for p in [
        Vec3::new(hi.x, hi.y, hi.z),
        Vec3::new(hi.x, hi.y - 0.01, hi.z),
        Vec3::new(hi.x, hi.y, hi.z - 0.01),
        Vec3::new(lo.x, lo.y, lo.z),
        Vec3::new(lo.x, lo.y + 0.01, lo.z),
        Vec3::new(lo.x, lo.y, lo.z + 0.01),
    ] {
        positions.push(p);
        uv0.push([0.0, 1.0]);
    }
    indices.extend([base, base + 1, base + 2, base + 3, base + 4, base + 5]);
    (positions, uv0, indices)
}

/// A VAT 3 particle bake (`VAT Type` `Particles`) made here in VAT 3's layout, with the raw texels
/// as VAT 3's shader reads them.
#[derive(Debug, Clone)]
pub struct HoudiniParticleFixture {
    /// `_data.json`.
    pub json: Vec<u8>,
    /// `_pos` and `_col` files (PNG when LDR, EXR when HDR).
    pub pos: Vec<u8>,
    /// See `pos`.
    pub col: Vec<u8>,
    /// `_mesh.glb`.
    pub glb: Vec<u8>,
    /// The texture file extension (`png` or `exr`).
    pub ext: &'static str,
    /// Texture size.
    pub size: (usize, usize),
    /// Frames.
    pub frames: usize,
    /// Cards.
    pub cards: usize,
    /// The texels as the shader reads them (`code / 255` for LDR), rows top to bottom.
    pub pos_texels: Vec<[f32; 4]>,
    /// See `pos_texels`.
    pub col_texels: Vec<[f32; 4]>,
    /// `TEXCOORD_0` and `TEXCOORD_1` of every mesh vertex (4 per card, then 6 bounds extenders).
    pub uv0: Vec<[f32; 2]>,
    /// See `uv0`.
    pub uv1: Vec<[f32; 2]>,
    /// `Bound Min X/Y/Z`, `Bound Max X/Y/Z` as written.
    pub bounds: ([f32; 3], [f32; 3]),
}

impl HoudiniParticleFixture {
    /// Writes the bake in one folder: `<N>_data.json`, `<N>_pos|col.<ext>`, `<N>_mesh.glb`.
    ///
    /// # Errors
    /// [`BakeError::Io`] when a file cannot be written.
    pub fn write(&self, dir: &Path, name: &str) -> Result<()> {
        let ext = self.ext;
        write(&dir.join(format!("{name}_data.json")), &self.json)?;
        write(&dir.join(format!("{name}_mesh.glb")), &self.glb)?;
        write(&dir.join(format!("{name}_pos.{ext}")), &self.pos)?;
        write(&dir.join(format!("{name}_col.{ext}")), &self.col)
    }
}

/// A VAT 3 particle bake of `cards` square cards over `frames` frames in a texture of `columns`
/// columns (more cards wrap into more rows a frame). The bounds are `[-1.2, 1.8]` in x and z and
/// `[-1.2, 1.35]` in y, so that the object origin is an exact 8-bit code on every axis, and `Bound
/// Max Y`'s decimals scale pscale by 2 (`1 / (1 - fract(13.5))`). Card 1 has scale 0 at frame 1 and
/// card 2 is parked at the origin at frame 2 (both hidden by VAT 3's shader). `hdr`: float EXRs
/// (values as they are, `Bound Max Z` 1.85 flags them), one colour channel above 1.
pub fn houdini_particle_fixture(
    cards: usize,
    columns: usize,
    frames: usize,
    hdr: bool,
) -> HoudiniParticleFixture {
    let cards = cards.max(3);
    let columns = columns.clamp(1, cards);
    let frames = frames.max(3);
    let rows = cards.div_ceil(columns);
    let (w, h) = (columns, rows * frames);
    let lo = Vec3::splat(-1.2);
    let hi = Vec3::new(1.8, 1.35, if hdr { 1.85 } else { 1.8 });
    let range = hi - lo;
    let pscale_max = 2.0f32;
    let mut pos_texels = vec![[0.0f32; 4]; w * h];
    let mut col_texels = vec![[0.0f32; 4]; w * h];
    for k in 0..frames {
        for i in 0..cards {
            let t = k as f32 * 0.4 + i as f32;
            let mut centre =
                Vec3::new(0.9 * t.sin(), 0.3 + 0.1 * k as f32 - 0.05 * i as f32, 0.8 * (1.3 * t).cos());
            let mut pscale = 0.2 + 0.15 * ((i + k) % 5) as f32;
            if (i, k) == (1, 1) {
                pscale = 0.0;
            }
            if (i, k) == (2, 2) {
                centre = Vec3::ZERO;
            }
            let texel = (i / columns + k * rows) * w + i % columns;
            let alpha = pscale / pscale_max;
            let colour =
                [0.2 + 0.1 * (i % 7) as f32, 0.9 - 0.1 * (k % 8) as f32, 0.5, 0.25 + 0.05 * (i % 10) as f32];
            if hdr {
                pos_texels[texel] = centre.extend(alpha).to_array();
                col_texels[texel] =
                    if (i, k) == (0, 0) { [1.5, colour[1], colour[2], colour[3]] } else { colour };
            } else {
                let c = |v: f32| f32::from(code8(v)) / 255.0;
                let n = (centre - lo) / range;
                pos_texels[texel] = [c(n.x), c(n.y), c(n.z), c(alpha)];
                col_texels[texel] = colour.map(c);
            }
        }
    }
    let (mut positions, mut uv0, mut uv1, mut indices) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..cards {
        let base = positions.len() as u32;
        let lookup = [((i % columns) as f32 + 0.5) / w as f32, ((i / columns) as f32 + 0.5) / h as f32];
        for corner in [[0.0f32, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]] {
            positions.push(Vec3::new(i as f32 + corner[0] * 0.5, 0.0, corner[1] * 0.5));
            uv0.push(corner);
            uv1.push(lookup);
        }
        indices.extend([base, base + 2, base + 1, base + 2, base, base + 3]);
    }
    let base = positions.len() as u32;
    for p in [hi, hi - Vec3::Y * 0.01, hi - Vec3::Z * 0.01, lo, lo + Vec3::Y * 0.01, lo + Vec3::Z * 0.01] {
        positions.push(p);
        uv0.push([0.0, 1.0]);
        uv1.push([0.0, 1.0]);
    }
    indices.extend((0..6).map(|k| base + k));
    let normals = vec![Vec3::Y; positions.len()];
    let glb = lookup_glb_with_sets("particles", &positions, &normals, &[Some(&uv0), Some(&uv1)], &indices)
        .unwrap_or_default();
    let json = format!(
        "[{{\"Bound Max X\": {}, \"Bound Max Y\": {}, \"Bound Max Z\": {}, \"Bound Min X\": {}, \"Bound Min Y\": {}, \
         \"Bound Min Z\": {}, \"Frame Count\": {frames}, \"Houdini FPS\": 24.0, \"Name\": \"particles\", \
         \"Two Position Textures\": 0, \"Use HDR Textures\": {}, \"VAT Type\": \"Particles\", \"Vertex Count\": 2048}}]",
        hi.x,
        hi.y,
        hi.z,
        lo.x,
        lo.y,
        lo.z,
        u8::from(hdr)
    )
    .into_bytes();
    let encode = |texels: &[[f32; 4]]| -> Vec<u8> {
        if hdr {
            encode_rgba_exr32(w, h, texels).unwrap_or_default()
        } else {
            let codes: Vec<[u8; 4]> = texels.iter().map(|t| t.map(code8)).collect();
            encode_rgba_png8(w, h, &codes).unwrap_or_default()
        }
    };
    HoudiniParticleFixture {
        json,
        pos: encode(&pos_texels),
        col: encode(&col_texels),
        glb,
        ext: if hdr { "exr" } else { "png" },
        size: (w, h),
        frames,
        cards,
        pos_texels,
        col_texels,
        uv0,
        uv1,
        bounds: (lo.to_array(), hi.to_array()),
    }
}
