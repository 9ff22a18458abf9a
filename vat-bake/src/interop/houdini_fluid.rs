//! SideFX Labs VAT 3 dynamic-mesh bakes (`VAT Type` `DynamicMesh`, VAT 3's "Dynamic Remeshing
//! (Fluid)" mode): a mesh whose topology changes every frame, decoded into frames for vat's fluid
//! mode ([`crate::fluid`]).
//!
//! The layout, as VAT 3's dynamic-remeshing shader (SideFX Labs' Unity `VAT_DynamicRemeshing`
//! sub-graph) reads it:
//!
//! | file | holds |
//! |---|---|
//! | `<N>_mesh.glb` | a pool of triangle corners, each its own vertex (the busiest frame's count); `TEXCOORD_0` is each corner's texel of the lookup table; its positions are not read (the shader places every corner from the textures); 6 bounds-extender vertices with `TEXCOORD_0.y` at the texture's end (the shader sends corners with `v >= 0.9`, glTF's top-down `v`, to the origin) |
//! | `<N>_lookup.png` / `.exr` | one block of rows per frame (frame 0 = the first scanline): the corner's texel of the data textures at that frame, `u = R + G / k`, `v = B + A / k` (top-down), `k` 255 for an 8/16-bit lookup table, 2048 for a float one |
//! | `<N>_pos` | one texel per point (of every frame): its position, object space, as it is (HDR) or as `Bound Min + RGB (Bound Max - Bound Min)` (LDR) |
//! | `<N>_rot` | the point's normal, as the quaternion (RGBA; LDR: `2 c - 1`) that turns +Y onto it |
//! | `<N>_col` | colour and surface UVs (not read: the fluid mode stores positions and normals) |
//!
//! Textures are sampled at texel centres (point sampling: `floor(u W)`, `floor(v H)`), the lookup
//! table at `(u s_u, (v + f / F) s_v)` where `s_u`, `s_v` are the shares of the table the bake fills
//! (1, or VAT 3's power-of-two padding encoded in the bounds' decimals, see
//! [`super::houdini::active_area`]).
//!
//! A frame's triangles are the pool triangles whose three corners read three different points; the
//! others (a frame's unused corners all read one texel, the shader's way of hiding them) have no
//! area and are not drawn. Corners that read one point are one vertex of the frame, as VAT 3 welds
//! them ("Fuse"). So a frame is an indexed mesh of its points, in pool order: what vat's fluid mode
//! bakes.

use std::cell::RefCell;
use std::collections::HashMap;

use std::path::{Path, PathBuf};

use glam::{Vec2, Vec3, Vec4};

use super::houdini::{HoudiniData, texture_is_hdr};
use super::images::{SampleKind, Texture};
use super::{Budget, bad};
use crate::Result;
use crate::fluid::{FluidFrames, FluidMesh};

/// The `v` (glTF's top-down texture coordinate) at and past which VAT 3's dynamic-remeshing shader
/// sends a corner to the origin: its bounds-extender vertices (`1 - v <= 0.1` in the shader's
/// bottom-up convention).
pub const HOUDINI_FLUID_EXTENDER_V: f32 = 0.9;

/// A decoded VAT 3 dynamic-mesh bake: its frames for vat's fluid mode, decoded one at a time
/// ([`FluidFrames`]) from the textures held here.
#[derive(Debug)]
pub struct ImportedFluidBake {
    name: String,
    fps: f32,
    frames: usize,
    /// Per pool triangle (bounds extenders left out), its corners' lookup texels at frame 0
    /// (column, row).
    triangles: Vec<[(u32, u32); 3]>,
    /// Lookup rows per frame.
    rows_per_frame: usize,
    lookup: Texture,
    lookup_path: PathBuf,
    /// `k` of the lookup's `u = R + G / k`.
    lookup_scale: f32,
    pos: Texture,
    pos_path: PathBuf,
    rot: Option<(Texture, PathBuf)>,
    hdr: bool,
    min: Vec3,
    range: Vec3,
    /// What the import left out or chose, one line each.
    pub(crate) notes: Vec<String>,
    /// Per frame read, the pool triangles left out for reading fewer than three points.
    collapsed: RefCell<Vec<Option<usize>>>,
}

/// The parts of a dynamic-mesh bake, read.
pub struct FluidParts<'a> {
    /// The bake's name (`<name>_data.json`), for messages and the mesh's name.
    pub name: &'a str,
    /// The parsed `_data.json`.
    pub data: &'a HoudiniData,
    /// Where `_data.json` was read from, for messages.
    pub json_path: &'a Path,
    /// Where `_mesh.glb` was read from, for messages.
    pub mesh_path: &'a Path,
    /// `_mesh.glb`'s bytes.
    pub mesh_bytes: &'a [u8],
    /// Where the lookup texture was read from, for messages.
    pub lookup_path: &'a Path,
    /// The lookup texture, decoded.
    pub lookup: Texture,
    /// Where the position texture was read from, for messages.
    pub pos_path: &'a Path,
    /// The position texture, decoded.
    pub pos: Texture,
    /// The rotation texture, decoded, and where it was read from; `None`: normals from the frames' triangles.
    pub rot: Option<(Texture, PathBuf)>,
    /// Whether the folder has a `_col` texture (not read).
    pub has_colour: bool,
}

/// The pool of a dynamic-mesh bake's glb: every corner's `TEXCOORD_0` and the triangles, all
/// primitives together.
fn pool(bytes: &[u8], path: &Path, budget: &Budget) -> Result<(Vec<Vec2>, Vec<u32>)> {
    let options = crate::gltf_import::ImportOptions {
        max_memory: budget.left().saturating_add(bytes.len() as u64),
        ..Default::default()
    };
    let rig = crate::gltf_import::import_slice_uv_set(bytes, path, &options, 0)?;
    let (mut uvs, mut indices) = (Vec::new(), Vec::new());
    for m in &rig.meshes {
        let Some(uv) = &m.uvs else {
            return Err(bad(
                path,
                format!("mesh \"{}\"", m.name),
                "has no TEXCOORD_0: a VAT 3 dynamic mesh carries each corner's lookup-table texel there",
            ));
        };
        let base = uvs.len() as u32;
        uvs.extend_from_slice(uv);
        indices.extend(m.indices.iter().map(|i| i + base));
    }
    if indices.is_empty() {
        return Err(bad(path, "the mesh", "has no triangles"));
    }
    Ok((uvs, indices))
}

/// Each corner's texel (column, row) in a `w x h` area, when every one is a texel centre; `None`
/// when one is not (the area does not describe the texture).
fn texels(uvs: &[Vec2], keep: &[bool], w: usize, h: usize) -> Option<Vec<(u32, u32)>> {
    let mut out = Vec::with_capacity(uvs.len());
    for (uv, &k) in uvs.iter().zip(keep) {
        if !k {
            out.push((u32::MAX, u32::MAX));
            continue;
        }
        let (x, y) = (f64::from(uv.x) * w as f64, f64::from(uv.y) * h as f64);
        if !(x >= 0.0 && x < w as f64 && y >= 0.0 && y < h as f64) {
            return None;
        }
        let (c, r) = (x.floor(), y.floor());
        if (x - c - 0.5).abs() > 0.05 || (y - r - 0.5).abs() > 0.05 {
            return None;
        }
        out.push((c as u32, r as u32));
    }
    Some(out)
}

/// Decodes a dynamic-mesh bake's parts (see the module docs).
pub fn decode(parts: FluidParts<'_>, budget: &mut Budget) -> Result<ImportedFluidBake> {
    let FluidParts {
        name,
        data,
        json_path,
        mesh_path,
        mesh_bytes,
        lookup_path,
        lookup,
        pos_path,
        pos,
        rot,
        has_colour,
    } = parts;
    let mut notes = Vec::new();
    if data.two_position_textures {
        return Err(bad(
            json_path,
            "Two Position Textures",
            "is 1: the second position texture is not read; re-export the bake with one position texture",
        ));
    }
    let hdr = texture_is_hdr(data, pos_path, &pos)?;
    let frames = data.frames;
    let (uvs, indices) = pool(mesh_bytes, mesh_path, budget)?;
    let keep: Vec<bool> = uvs.iter().map(|uv| uv.y < HOUDINI_FLUID_EXTENDER_V).collect();
    let tris = pool_triangles(&indices, &keep, mesh_path, &mut notes)?;
    let LookupArea { texel_of, rows_per_frame, note } = lookup_area(data, lookup_path, &lookup, &uvs, &keep)?;
    notes.extend(note);
    let triangles: Vec<[(u32, u32); 3]> = tris
        .iter()
        .map(|t| [texel_of[t[0] as usize], texel_of[t[1] as usize], texel_of[t[2] as usize]])
        .collect();
    let rot = check_rotation(rot, &pos)?;
    if rot.is_none() {
        notes.push(
            "no _rot texture: normals recomputed per frame from the decoded positions (smooth, area-weighted)".into(),
        );
    }
    if has_colour {
        notes.push(format!(
            "{name}_col (colours and surface UVs, and any UVs in the position alpha) is not read: the fluid mode stores \
             positions and normals"
        ));
    }
    notes.push(format!(
        "{} pool triangles (the busiest frame's) over {frames} frames at {} fps (Houdini FPS); one looping clip {name:?}, \
         as VAT 3's shaders loop; the mesh's own positions are not read (VAT 3 places every corner from the textures)",
        triangles.len(),
        data.fps
    ));
    let lookup_scale = if matches!(lookup.kind, SampleKind::Unorm(_)) { 255.0 } else { 2048.0 };
    let bake = ImportedFluidBake {
        name: name.to_owned(),
        fps: data.fps,
        frames,
        triangles,
        rows_per_frame,
        lookup,
        lookup_path: lookup_path.to_path_buf(),
        lookup_scale,
        pos,
        pos_path: pos_path.to_path_buf(),
        rot,
        hdr,
        min: Vec3::from(data.min),
        range: Vec3::from(data.max) - Vec3::from(data.min),
        notes,
        collapsed: RefCell::new(vec![None; frames]),
    };
    // Every frame decodes (a bad texel is an error now, not in the middle of the bake).
    for k in 0..frames {
        bake.frame(k)?;
    }
    Ok(bake)
}

/// The pool's triangles that read the lookup table: those of bounds extenders (corners not
/// `keep`) are left out, with a note; an error when a triangle mixes both or none is left.
fn pool_triangles(
    indices: &[u32],
    keep: &[bool],
    mesh_path: &Path,
    notes: &mut Vec<String>,
) -> Result<Vec<[u32; 3]>> {
    // Triangles: those of bounds extenders are left out; a kept one is made of kept corners only.
    let mut tris = Vec::with_capacity(indices.len() / 3);
    let mut dropped = 0usize;
    for (t, tri) in indices.chunks_exact(3).enumerate() {
        let k = tri.iter().filter(|&&v| keep[v as usize]).count();
        match k {
            3 => tris.push([tri[0], tri[1], tri[2]]),
            0 => dropped += 1,
            _ => {
                return Err(bad(
                    mesh_path,
                    format!("triangle {t}"),
                    format!(
                        "joins bounds-extender corners (TEXCOORD_0.y >= {HOUDINI_FLUID_EXTENDER_V}) with corners that read \
                         the lookup table: not a VAT 3 dynamic mesh"
                    ),
                ));
            }
        }
    }
    if tris.is_empty() {
        return Err(bad(mesh_path, "the mesh", "has no triangle that reads the lookup table"));
    }
    let extenders = keep.iter().filter(|k| !**k).count();
    if extenders > 0 {
        notes.push(format!(
            "{extenders} bounds-extender vertices (TEXCOORD_0.y >= {HOUDINI_FLUID_EXTENDER_V}, sent to the origin by VAT 3's \
             shader) and {dropped} triangles using them left out"
        ));
    }
    Ok(tris)
}

/// The part of the lookup table the bake fills: VAT 3's share in the bounds' decimals, else the
/// whole table (bakes whose bounds carry no share, with a note). Returns each kept corner's
/// texel at frame 0, the rows per frame and the note; an error when neither fits the mesh's
/// `TEXCOORD_0` and the frame count.
fn lookup_area(
    data: &HoudiniData,
    lookup_path: &Path,
    lookup: &Texture,
    uvs: &[Vec2],
    keep: &[bool],
) -> Result<LookupArea> {
    let frames = data.frames;
    let (lw, lh) = (lookup.width, lookup.height);
    let fits = |w: usize, h: usize| -> Option<(Vec<(u32, u32)>, usize)> {
        let t = texels(uvs, keep, w, h)?;
        let rows = t.iter().filter(|c| c.0 != u32::MAX).map(|c| c.1 as usize + 1).max()?;
        (h == frames * rows).then_some((t, rows))
    };
    let shared = super::houdini::active_area(data, lookup_path, lw, lh);
    let found = match &shared {
        Ok((w, h, note)) => fits(*w, *h).map(|f| (f, note.clone())),
        Err(_) => None,
    }
    .or_else(|| {
        fits(lw, lh).map(|f| {
            let said = match &shared {
                Ok((w, h, _)) if (*w, *h) != (lw, lh) => format!("say the bake fills {w} x {h} texels of it"),
                Ok(_) => return (f, None),
                Err(_) => "are no share of it".to_owned(),
            };
            let note = format!(
                "the bounds' decimals (Bound Min Z {}, Bound Max X {}), where VAT 3 encodes a padded table's filled share, \
                 {said}, but the mesh's TEXCOORD_0 and Frame Count fit the whole {lw} x {lh} lookup table: read whole (the \
                 bounds carry no share, as floating-world's VAT 3.1 writes them)",
                data.min[2], data.max[0]
            );
            (f, Some(note))
        })
    });
    let Some(((texel_of, rows_per_frame), area_note)) = found else {
        return Err(bad(
            lookup_path,
            "the lookup table",
            format!(
                "is {lw} x {lh} texels, but the mesh's TEXCOORD_0 are not its texel centres, or its rows are not Frame \
                 Count = {frames} blocks of the rows TEXCOORD_0 uses: the table and the mesh are not one bake"
            ),
        ));
    };
    Ok(LookupArea { texel_of, rows_per_frame, note: area_note })
}

/// The filled part of a lookup table, as [`lookup_area`] finds it.
struct LookupArea {
    /// Each kept corner's texel at frame 0 (`u32::MAX` columns for the others).
    texel_of: Vec<(u32, u32)>,
    /// Rows of the table per frame.
    rows_per_frame: usize,
    /// Why the whole table is read where the bounds said otherwise.
    note: Option<String>,
}

/// The rotation texture, when it has the position texture's size (an error otherwise).
fn check_rotation(rot: Option<(Texture, PathBuf)>, pos: &Texture) -> Result<Option<(Texture, PathBuf)>> {
    match rot {
        Some((t, p)) if (t.width, t.height) != (pos.width, pos.height) => Err(bad(
            &p,
            "the rotation texture",
            format!(
                "is {} x {}, the position texture {} x {}: they must match",
                t.width, t.height, pos.width, pos.height
            ),
        )),
        other => Ok(other),
    }
}

impl ImportedFluidBake {
    /// The point (position texel) a corner whose lookup texel is `(col, row0)` at frame 0 reads at
    /// frame `k`.
    fn point(&self, (col, row0): (u32, u32), k: usize) -> Result<(usize, usize)> {
        let row = row0 as usize + k * self.rows_per_frame;
        let [r, g, b, a] = self.lookup.at(col as usize, row);
        let (u, v) = (r + g / self.lookup_scale, b + a / self.lookup_scale);
        let (x, y) = ((u * self.pos.width as f32).floor(), (v * self.pos.height as f32).floor());
        if !(x >= 0.0 && y >= 0.0 && (x as usize) < self.pos.width && (y as usize) < self.pos.height) {
            return Err(bad(
                &self.lookup_path,
                format!("texel ({col}, {row})"),
                format!(
                    "points at ({u}, {v}), outside the {} x {} position texture",
                    self.pos.width, self.pos.height
                ),
            ));
        }
        Ok((x as usize, y as usize))
    }

    /// The position and normal of point `(x, y)`.
    fn decode_point(&self, x: usize, y: usize) -> Result<(Vec3, Option<Vec3>)> {
        let t = self.pos.at(x, y);
        let t3 = Vec3::new(t[0], t[1], t[2]);
        if !t3.is_finite() {
            return Err(bad(&self.pos_path, format!("texel ({x}, {y})"), format!("holds {t3}: not finite")));
        }
        let p = if self.hdr {
            t3
        } else {
            if t3.min_element() < -1e-3 || t3.max_element() > 1.0 + 1e-3 {
                return Err(bad(
                    &self.pos_path,
                    format!("texel ({x}, {y})"),
                    format!("holds {t3}, outside [0, 1]: the bounds do not hold the positions"),
                ));
            }
            self.min + t3 * self.range
        };
        let n = match &self.rot {
            None => None,
            Some((rot, path)) => {
                let q = Vec4::from(rot.at(x, y));
                let q = if self.hdr { q } else { (q - Vec4::splat(0.5)) * 2.0 };
                Some(normal_of(q).ok_or_else(|| {
                    bad(
                        path,
                        format!("texel ({x}, {y})"),
                        format!("holds {q}: it turns +Y onto no direction"),
                    )
                })?)
            }
        };
        Ok((p, n))
    }
}

/// VAT 3's normal of a rotation texel: +Y turned by the quaternion `q` (not normalised, as the
/// shader takes it: `Y + 2 q.xyz x (q.w Y + q.xyz x Y)`), normalised; `None` when that is no
/// direction.
pub(crate) fn normal_of(q: Vec4) -> Option<Vec3> {
    let (v, w) = (q.truncate(), q.w);
    let n = Vec3::Y + 2.0 * v.cross(w * Vec3::Y + v.cross(Vec3::Y));
    n.try_normalize().filter(|n| n.is_finite())
}

impl FluidFrames for ImportedFluidBake {
    fn name(&self) -> &str {
        &self.name
    }
    fn fps(&self) -> f32 {
        self.fps
    }
    fn frame_count(&self) -> usize {
        self.frames
    }
    fn frame(&self, k: usize) -> Result<FluidMesh> {
        if k >= self.frames {
            return Err(crate::BakeError::InvalidInput {
                part: self.name.clone(),
                problem: format!("has no frame {k}"),
            });
        }
        let mut vertex_of: HashMap<(usize, usize), u32> = HashMap::new();
        let mut mesh = FluidMesh::default();
        let mut collapsed = 0usize;
        let mut normals_ok = true;
        for t in &self.triangles {
            let p = [self.point(t[0], k)?, self.point(t[1], k)?, self.point(t[2], k)?];
            if p[0] == p[1] || p[1] == p[2] || p[0] == p[2] {
                collapsed += 1;
                continue;
            }
            let mut tri = [0u32; 3];
            for (j, &(x, y)) in p.iter().enumerate() {
                tri[j] = match vertex_of.get(&(x, y)) {
                    Some(&i) => i,
                    None => {
                        let (pos, n) = self.decode_point(x, y)?;
                        let i = mesh.positions.len() as u32;
                        mesh.positions.push(pos.to_array());
                        match n {
                            Some(n) => mesh.normals.push(n.to_array()),
                            None => normals_ok = false,
                        }
                        vertex_of.insert((x, y), i);
                        i
                    }
                };
            }
            mesh.triangles.push(tri);
        }
        if !normals_ok {
            let positions: Vec<Vec3> = mesh.positions.iter().map(|&p| Vec3::from(p)).collect();
            let indices: Vec<u32> = mesh.triangles.iter().flatten().copied().collect();
            mesh.normals = crate::sequence::smooth_normals(&positions, &indices)
                .into_iter()
                .map(|v| v.to_array())
                .collect();
        }
        if let Some(slot) = self.collapsed.borrow_mut().get_mut(k) {
            *slot = Some(collapsed);
        }
        Ok(mesh)
    }
    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        let counts = self.collapsed.borrow();
        let (frames, total) =
            counts.iter().flatten().fold((0usize, 0usize), |(f, n), &c| (f + usize::from(c > 0), n + c));
        if total > 0 {
            notes.push(format!(
                "{total} pool triangle-frames in {frames} frames read fewer than three points (VAT 3 hides a frame's \
                 unused corners on one texel, where they have no area): not drawn"
            ));
        }
        notes
    }
}
