//! Baking a rigid source into a `.vat`: options, statistics and the bake.

use super::*;

/// Options of [`bake_rigid`].
#[derive(Debug, Clone, PartialEq)]
pub struct RigidBakeOptions {
    /// Largest texture width or height of the target device.
    pub max_texture_dim: u32,
    /// Largest side of a material texture layer, texels (as
    /// [`crate::prepare::BakeOptions::material_texture_size`]).
    pub material_texture_size: u32,
    /// The LOD chain (`--lods N` or `--lod-ratios ...`; default 5 levels), simplified from the rest
    /// pose: a piece keeps its shape as it moves, so one simplification serves every frame, and
    /// pieces are separate meshes, so no triangle of a coarser level joins two pieces.
    pub lods: LodOptions,
}

impl Default for RigidBakeOptions {
    fn default() -> Self {
        Self {
            max_texture_dim: 16384,
            material_texture_size: crate::textures::DEFAULT_MATERIAL_TEXTURE_SIZE,
            lods: LodOptions::default(),
        }
    }
}

/// Figures of a rigid bake.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigidBakeStats {
    /// Pieces.
    pub pieces: u32,
    /// Vertices of all pieces.
    pub vertices: u32,
    /// Triangles of all pieces.
    pub triangles: u32,
    /// Frames of all clips.
    pub frames: u32,
    /// Triangles of each LOD, LOD 0 (every triangle) first.
    pub lod_triangles: Vec<u32>,
    /// Piece texture width x height, texels.
    pub piece_texture: [u32; 2],
    /// Bytes of the piece texture.
    pub piece_texture_bytes: u64,
    /// Bytes per piece per frame of the piece texture (16).
    pub bytes_per_piece_frame: u32,
    /// Bytes of the rigid vertex texture (piece index + rest pivot per vertex).
    pub vertex_texture_bytes: u64,
    /// The pivot box's quantum per axis (`extent / 65535`), millimetres.
    pub translation_quantum_mm: [f64; 3],
    /// The size of the whole file, bytes.
    pub file_bytes: u64,
    /// Materials written (0: drawn with the built-in palette).
    pub materials: u32,
    /// What the bake left out or changed of the materials' textures (e.g. a layer shrunk to
    /// `material_texture_size`), one line each; a repeated note is said once, with a count
    /// ([`crate::notes::collapse`]).
    pub notes: Vec<String>,
}

/// Encodes `source` as a `.vat` file in the rigid mode ([`vat_core::container::VatMode::Rigid`]):
/// the piece texture (one column per piece and one row per frame when both fit
/// `max_texture_dim`, else the linear layout; each piece's quaternion track kept in one
/// hemisphere), the rigid vertex
/// texture, rest positions, normals and material ids, and the LOD chain of `options.lods` (from the
/// rest pose; a level that cannot simplify is dropped with a note). Deterministic:
/// the same source gives the same bytes.
///
/// # Errors
/// [`BakeError::InvalidInput`] for a source without pieces, vertices or clips, pieces whose
/// streams differ in length, an index past its piece, clips whose frames do not hold one
/// transform per piece or whose frame count does not match vat-core's clip rules, or a non-finite
/// value; [`BakeError::Core`] when the textures do not fit `max_texture_dim`.
pub fn bake_rigid(source: &RigidSource, options: &RigidBakeOptions) -> Result<(Vec<u8>, RigidBakeStats)> {
    let invalid = |part: &str, problem: String| BakeError::InvalidInput { part: part.to_owned(), problem };
    let piece_count = source.pieces.len();
    let vertex_count = source.vertex_count();
    let map = clip_rows(source)?;
    let frame_count = map.total_frames();

    let RestMesh { positions, normals, materials, uvs, colors, vertex_texels, indices } = rest_mesh(source)?;

    // Boxes: every pivot of every frame; every vertex of every frame (culling).
    let pivot_bounds = PositionBounds::from_points(
        source.clips.iter().flat_map(|c| c.frames.iter().flatten().map(|t| t.pivot)),
    )?;
    let bounds = culling_bounds(source)?;

    // The piece texture, each piece's quaternion track kept in one hemisphere across all frames.
    // One column per piece, one row per frame (texel `frame * pieces + piece` at `(piece, frame)`:
    // no padding), when that fits the device; otherwise the linear layout wraps rows.
    let pieces = piece_count as u32;
    let layout = if pieces <= options.max_texture_dim && frame_count <= options.max_texture_dim {
        let l = VertexTextureLayout { vertex_count: pieces, frame_count, width: pieces, height: frame_count };
        l.validate(options.max_texture_dim)?;
        l
    } else {
        VertexTextureLayout::new(pieces, frame_count, options.max_texture_dim)?
    };
    let piece_bytes = piece_texture(source, &layout, &pivot_bounds)?;
    let vertex_layout = VertexTextureLayout::new(vertex_count as u32, 1, options.max_texture_dim)?;
    let mut vertex_bytes = vec![0u8; vertex_layout.byte_len(rigid::RIGID_TEXEL_BYTES) as usize];
    for (v, texel) in vertex_texels.iter().enumerate() {
        for (w, word) in texel.iter().enumerate() {
            vertex_bytes[v * 16 + 4 * w..v * 16 + 4 * w + 4].copy_from_slice(&word.to_le_bytes());
        }
    }

    let mut writer = ContainerWriter::new();
    let f32s = |v: &[[f32; 3]]| -> Vec<u8> { v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect() };
    let pieces_blob = writer.add_blob(piece_bytes);
    let vertices_blob = writer.add_blob(vertex_bytes);
    let rest_blob = writer.add_blob(f32s(&positions));
    let normal_blob = writer.add_blob(f32s(&normals));
    let material_blob = writer.add_blob(materials);
    let triangles = indices.len() as u32 / 3;
    let (chain, index_bytes, lod_entries) =
        rest_lods(source, &positions, &normals, uvs.as_deref(), colors.as_deref(), &indices, &options.lods)?;
    let index_blob = writer.add_blob(index_bytes);
    let mut manifest = Manifest::new(source.name.clone(), vertex_count as u32);
    manifest.clips = map.clips().to_vec();
    manifest.indices = Some(index_blob);
    manifest.lods = lod_entries;
    manifest.streams = vec![
        VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest_blob },
        VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: normal_blob },
    ];
    manifest.streams.extend(crate::prepare::surface_streams(
        uvs.map(Vec::into_iter),
        colors.map(Vec::into_iter),
        |bytes| writer.add_blob(bytes),
    ));
    manifest.streams.push(VertexStream {
        kind: StreamKind::MaterialId,
        element: ElementFormat::U8,
        blob: material_blob,
    });
    let mut notes: Vec<String> = chain.dropped.iter().map(ToString::to_string).collect();
    notes.extend(chain.notes());
    if let Some(materials) = &source.materials {
        if let Some(&id) = materials_past(&materials.materials, &source.pieces) {
            return Err(invalid(
                &source.name,
                format!("material id {id} is past its {} materials", materials.materials.len()),
            ));
        }
        crate::prepare::set_material_sections(
            &mut manifest,
            materials,
            options.material_texture_size,
            &mut notes,
            |bytes| writer.add_blob(bytes),
        );
    }
    manifest.rigid_animation = Some(RigidAnimation {
        layout,
        pivot_bounds,
        bounds,
        pieces: pieces_blob,
        vertex_layout,
        vertices: vertices_blob,
        piece_names: source.pieces.iter().map(|p| p.name.clone()).collect(),
    });
    let bytes = writer.finish(manifest)?;
    let stats = RigidBakeStats {
        pieces: piece_count as u32,
        vertices: vertex_count as u32,
        triangles,
        frames: frame_count,
        piece_texture: [layout.width, layout.height],
        piece_texture_bytes: layout.byte_len(rigid::RIGID_TEXEL_BYTES),
        bytes_per_piece_frame: rigid::RIGID_TEXEL_BYTES,
        vertex_texture_bytes: vertex_layout.byte_len(rigid::RIGID_TEXEL_BYTES),
        translation_quantum_mm: pivot_bounds.extent.map(|e| f64::from(e) / 65535.0 * 1e3),
        file_bytes: bytes.len() as u64,
        materials: source.materials.as_ref().map_or(0, |m| m.materials.len() as u32),
        lod_triangles: chain.triangle_counts().into_iter().map(|t| t as u32).collect(),
        notes: crate::notes::collapse(notes),
    };
    Ok((bytes, stats))
}

/// Refuses a source without pieces, vertices or clips, or whose clips' frames do not match
/// vat-core's clip rules or hold one transform per piece; the clips' rows.
fn clip_rows(source: &RigidSource) -> Result<ClipRowMap> {
    let invalid = |part: &str, problem: String| BakeError::InvalidInput { part: part.to_owned(), problem };
    let piece_count = source.pieces.len();
    if piece_count == 0 {
        return Err(invalid(&source.name, "has no pieces".into()));
    }
    let vertex_count = source.vertex_count();
    if vertex_count == 0 {
        return Err(invalid(&source.name, "has no vertices".into()));
    }
    if source.clips.is_empty() {
        return Err(invalid(&source.name, "has no clips".into()));
    }
    let mut map = ClipRowMap::new();
    for c in &source.clips {
        let mode = if c.looping { ClipMode::Looping } else { ClipMode::OneShot };
        map.push(&c.name, c.duration(), c.fps, mode, 0.0)?;
        let stored = map.clips().last().map_or(0, |k| k.frame_count) as usize;
        if stored != c.frames.len() {
            return Err(invalid(
                &format!("clip {:?}", c.name),
                format!("has {} frames, the clip rules give {stored}", c.frames.len()),
            ));
        }
        if let Some(f) = c.frames.iter().position(|f| f.len() != piece_count) {
            return Err(invalid(
                &format!("clip {:?}, frame {f}", c.name),
                format!("needs {piece_count} transforms"),
            ));
        }
    }
    Ok(map)
}

/// The rest mesh, all pieces in order: streams, indices, and each vertex's texel (its piece and
/// pivot).
struct RestMesh {
    positions: Vec<[f32; 3]>,
    normals: Vec<[f32; 3]>,
    materials: Vec<u8>,
    uvs: Option<Vec<[f32; 2]>>,
    colors: Option<Vec<[f32; 4]>>,
    vertex_texels: Vec<[u32; 4]>,
    indices: Vec<u32>,
}

/// Concatenates the pieces' rest meshes, refusing streams of different lengths, non-finite values,
/// indices past a piece and a mesh without triangles.
fn rest_mesh(source: &RigidSource) -> Result<RestMesh> {
    let invalid = |part: &str, problem: String| BakeError::InvalidInput { part: part.to_owned(), problem };
    let vertex_count = source.vertex_count();
    let mut positions = Vec::with_capacity(vertex_count);
    let mut normals = Vec::with_capacity(vertex_count);
    let mut materials = Vec::with_capacity(vertex_count);
    let mut uvs = source.pieces.iter().any(|p| p.uvs.is_some()).then(|| Vec::with_capacity(vertex_count));
    let mut colors =
        source.pieces.iter().any(|p| p.colors.is_some()).then(|| Vec::with_capacity(vertex_count));
    let mut vertex_texels = Vec::with_capacity(vertex_count);
    let mut indices = Vec::new();
    for (k, p) in source.pieces.iter().enumerate() {
        let n = p.positions.len();
        let uv_len = p.uvs.as_ref().map_or(n, Vec::len);
        let color_len = p.colors.as_ref().map_or(n, Vec::len);
        if p.normals.len() != n
            || p.material_ids.len() != n
            || uv_len != n
            || color_len != n
            || p.indices.len() % 3 != 0
        {
            return Err(invalid(&format!("piece {:?}", p.name), "streams of different lengths".into()));
        }
        let surface = p.uvs.iter().flatten().flatten().chain(p.colors.iter().flatten().flatten());
        if p.positions
            .iter()
            .chain(&p.normals)
            .chain([&p.rest_pivot])
            .flatten()
            .chain(surface)
            .any(|v| !v.is_finite())
        {
            return Err(invalid(&format!("piece {:?}", p.name), "a value is not finite".into()));
        }
        let base = positions.len() as u32;
        if let Some(&i) = p.indices.iter().find(|&&i| i as usize >= n) {
            return Err(invalid(&format!("piece {:?}", p.name), format!("index {i} >= its {n} vertices")));
        }
        indices.extend(p.indices.iter().map(|&i| base + i));
        positions.extend_from_slice(&p.positions);
        normals.extend_from_slice(&p.normals);
        materials.extend_from_slice(&p.material_ids);
        // A piece without uvs or colours among pieces with them gets (0, 0) and opaque white, as the
        // soft bake does.
        if let Some(uvs) = &mut uvs {
            uvs.extend(p.uvs.clone().unwrap_or_else(|| vec![[0.0; 2]; n]));
        }
        if let Some(colors) = &mut colors {
            colors.extend(p.colors.clone().unwrap_or_else(|| vec![[1.0; 4]; n]));
        }
        vertex_texels.extend((0..n).map(|_| rigid::encode_vertex_texel(k as u32, p.rest_pivot)));
    }
    if indices.is_empty() {
        return Err(invalid(&source.name, "has no triangles".into()));
    }
    Ok(RestMesh { positions, normals, materials, uvs, colors, vertex_texels, indices })
}

/// The box of every vertex of every frame (for culling), widened by a margin.
fn culling_bounds(source: &RigidSource) -> Result<PositionBounds> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for c in &source.clips {
        for frame in &c.frames {
            for (p, t) in source.pieces.iter().zip(frame) {
                for &v in &p.positions {
                    let w = place_f64(t, p.rest_pivot, v);
                    for a in 0..3 {
                        lo[a] = lo[a].min(w[a]);
                        hi[a] = hi[a].max(w[a]);
                    }
                }
            }
        }
    }
    // Widened by 1 mm plus 0.1 % of the size on each side: decoded vertices differ from the source
    // by the format's small error, and culling must never cut them.
    let size = (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f64::max);
    let margin = 1e-3 + 1e-3 * size;
    let bounds =
        PositionBounds::from_points([lo.map(|v| (v - margin) as f32), hi.map(|v| (v + margin) as f32)])?;
    Ok(bounds)
}

/// The piece texture's bytes: each piece's pivot and rotation at every frame, each piece's
/// quaternion track kept in one hemisphere across all frames.
fn piece_texture(
    source: &RigidSource,
    layout: &VertexTextureLayout,
    pivot_bounds: &PositionBounds,
) -> Result<Vec<u8>> {
    let piece_count = source.pieces.len();
    let mut tracks: Vec<Vec<[f32; 4]>> = (0..piece_count)
        .map(|k| source.clips.iter().flat_map(|c| c.frames.iter().map(move |f| f[k].rotation)).collect())
        .collect();
    for t in &mut tracks {
        make_hemisphere_continuous(t);
    }
    let mut piece_bytes = vec![0u8; layout.byte_len(rigid::RIGID_TEXEL_BYTES) as usize];
    let mut frame = 0u32;
    for c in &source.clips {
        for f in &c.frames {
            for (k, t) in f.iter().enumerate() {
                let texel = rigid::encode_piece_texel(pivot_bounds, t.pivot, tracks[k][frame as usize])?;
                let at = layout.texel_index(frame, k as u32) as usize * 16;
                for (w, word) in texel.iter().enumerate() {
                    piece_bytes[at + 4 * w..at + 4 * w + 4].copy_from_slice(&word.to_le_bytes());
                }
            }
            frame += 1;
        }
    }
    Ok(piece_bytes)
}

/// The LOD chain from the rest pose (LOD 0 = every triangle), its index bytes and its entries,
/// switching by their error and the rest size.
fn rest_lods(
    source: &RigidSource,
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    uvs: Option<&[[f32; 2]]>,
    colors: Option<&[[f32; 4]]>,
    indices: &[u32],
    lod_options: &lods::LodOptions,
) -> Result<(lods::LodChain, Vec<u8>, Vec<Lod>)> {
    // LODs from the rest pose (LOD 0 = every triangle), switching by their error and the rest size.
    let rest: Vec<Vec3> = positions.iter().map(|&p| Vec3::from(p)).collect();
    // Welded by position within a piece only (pieces move apart), seams kept by the normals,
    // texture coordinates and colours.
    let groups: Vec<u32> = source
        .pieces
        .iter()
        .enumerate()
        .flat_map(|(k, p)| std::iter::repeat_n(k as u32, p.positions.len()))
        .collect();
    let normal_vecs: Vec<Vec3> = normals.iter().map(|&n| Vec3::from(n)).collect();
    let uv_vecs: Option<Vec<glam::Vec2>> =
        uvs.as_ref().map(|u| u.iter().map(|&t| glam::Vec2::from(t)).collect());
    let color_vecs: Option<Vec<glam::Vec4>> =
        colors.as_ref().map(|c| c.iter().map(|&t| glam::Vec4::from(t)).collect());
    let surface = lods::LodSurface {
        normals: Some(&normal_vecs),
        uvs: uv_vecs.as_deref(),
        colors: color_vecs.as_deref(),
        groups: Some(&groups),
    };
    let chain = lods::build_lod_chain_surface(&rest, indices, &[], &surface, lod_options)?;
    let rest_size =
        PositionBounds::from_points(positions.iter().copied())?.extent.into_iter().fold(0.0f32, f32::max);
    let errors: Vec<f32> = chain.levels.iter().map(|l| l.error).collect();
    let distances = vat_core::format::lod::lod_switch_distances(&errors, rest_size);
    let mut index_bytes = Vec::with_capacity(chain.levels.iter().map(|l| l.indices.len()).sum::<usize>() * 4);
    let mut lod_entries = Vec::with_capacity(chain.levels.len());
    for (level, &max_distance) in chain.levels.iter().zip(&distances) {
        let first_index = (index_bytes.len() / 4) as u32;
        index_bytes.extend(level.indices.iter().flat_map(|i| i.to_le_bytes()));
        lod_entries.push(Lod {
            first_index,
            index_count: level.indices.len() as u32,
            triangle_count: (level.indices.len() / 3) as u32,
            screen_error: level.error,
            max_distance,
        });
    }
    Ok((chain, index_bytes, lod_entries))
}

/// The first material id of `pieces` past `materials`, if any.
pub(super) fn materials_past<'a>(
    materials: &[vat_core::container::Material],
    pieces: &'a [RigidPiece],
) -> Option<&'a u8> {
    pieces.iter().flat_map(|p| &p.material_ids).find(|&&id| usize::from(id) >= materials.len())
}

/// Rigid pieces as a [`crate::Source`]: [`bake_rigid`] with the options that apply (the texture
/// sizes and the LOD chain), [`verify_rigid`].
impl crate::Source for RigidSource {
    fn mode(&self) -> vat_core::container::VatMode {
        vat_core::container::VatMode::Rigid
    }

    fn bake(
        &self,
        options: &crate::prepare::BakeOptions,
        _progress: &mut dyn FnMut(crate::prepare::Progress),
    ) -> Result<crate::Baked> {
        let options = RigidBakeOptions {
            max_texture_dim: options.max_texture_dim,
            material_texture_size: options.material_texture_size,
            lods: options.lods.clone(),
        };
        let (bytes, stats) = bake_rigid(self, &options)?;
        Ok(crate::Baked { file: crate::BakedFile::Bytes(bytes), figures: Box::new(stats) })
    }

    fn verify(
        &self,
        asset: &Asset<'_>,
        _options: &crate::verify::VerifyOptions,
    ) -> Result<Box<dyn crate::Report>> {
        Ok(Box::new(verify_rigid(asset, self)?))
    }
}

impl crate::Figures for RigidBakeStats {
    fn write_summary(
        &self,
        out: &mut dyn std::io::Write,
        what: &str,
        path: &std::path::Path,
    ) -> std::io::Result<()> {
        let stats = self;
        writeln!(
            out,
            "baked {what} -> {} (rigid): {} pieces, {} vertices, {} triangles; {} frames; piece texture {} x {} \
             ({} bytes, {} bytes/piece/frame), vertex texture {} bytes; {} bytes in all",
            path.display(),
            stats.pieces,
            stats.vertices,
            stats.triangles,
            stats.frames,
            stats.piece_texture[0],
            stats.piece_texture[1],
            stats.piece_texture_bytes,
            stats.bytes_per_piece_frame,
            stats.vertex_texture_bytes,
            stats.file_bytes
        )?;
        if stats.materials > 0 {
            writeln!(out, "  {} materials", stats.materials)?;
        }
        for note in &stats.notes {
            writeln!(out, "  note: {note}")?;
        }
        Ok(())
    }
}
