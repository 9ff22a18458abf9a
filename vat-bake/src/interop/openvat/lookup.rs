//! Lookup texels, shared-texel checks and block layouts.

use super::*;

/// Where each mesh vertex reads the texture: its column and the row of frame 0.
pub(crate) struct Lookup {
    pub(crate) col: Vec<u32>,
    pub(crate) row: Vec<u32>,
    /// Texture rows per frame.
    pub(crate) rows_per_frame: usize,
}

/// Maps every vertex's `TEXCOORD_1` to a texel of a `w x h` texture, checking it is a texel centre;
/// vertices with `skip(v)` get column and row `u32::MAX`.
pub(crate) fn lookup_texels(
    mesh: &LookupMesh,
    mesh_path: &Path,
    w: usize,
    h: usize,
    skip: &dyn Fn(usize) -> bool,
) -> Result<Lookup> {
    let n = mesh.lookup.len();
    let (mut col, mut row) = (vec![u32::MAX; n], vec![u32::MAX; n]);
    let mut rows = 0usize;
    for (v, uv) in mesh.lookup.iter().enumerate() {
        if skip(v) {
            continue;
        }
        let (x, y) = (f64::from(uv.x) * w as f64, f64::from(uv.y) * h as f64);
        if !(x >= 0.0 && x < w as f64 && y >= 0.0 && y < h as f64) {
            return Err(bad(
                mesh_path,
                format!("TEXCOORD_1 of vertex {v}"),
                format!("is ({}, {}), outside the {w} x {h} texture", uv.x, uv.y),
            ));
        }
        let (c, r) = (x.floor(), y.floor());
        if (x - c - 0.5).abs() > 0.05 || (y - r - 0.5).abs() > 0.05 {
            return Err(bad(
                mesh_path,
                format!("TEXCOORD_1 of vertex {v}"),
                format!(
                    "is ({}, {}), not a texel centre of the {w} x {h} texture: the mesh was not made for this texture",
                    uv.x, uv.y
                ),
            ));
        }
        col[v] = c as u32;
        row[v] = r as u32;
        rows = rows.max(r as usize + 1);
    }
    if rows == 0 {
        return Err(bad(mesh_path, "TEXCOORD_1", "no vertex reads the texture"));
    }
    Ok(Lookup { col, row, rows_per_frame: rows })
}

/// Checks that vertices reading one texel share their rest position (they are one vertex of the
/// source, split at a seam): a mesh whose vertices disagree was not baked with this texture.
pub(crate) fn check_shared_texels(mesh: &LookupMesh, lookup: &Lookup, mesh_path: &Path) -> Result<()> {
    let extent = bbox_extent(&mesh.positions);
    let tolerance = 1e-4 * extent.max(1e-6);
    let mut first: std::collections::HashMap<(u32, u32), usize> = std::collections::HashMap::new();
    for v in 0..mesh.positions.len() {
        if lookup.col[v] == u32::MAX {
            continue;
        }
        let u = *first.entry((lookup.col[v], lookup.row[v])).or_insert(v);
        let d = mesh.positions[u].distance(mesh.positions[v]);
        if d > tolerance {
            return Err(bad(
                mesh_path,
                format!("vertices {u} and {v}"),
                format!(
                    "read the same texel ({}, {}) but lie {d:.6} apart at rest: the mesh does not match the texture",
                    lookup.col[v], lookup.row[v]
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) fn bbox_extent(p: &[Vec3]) -> f32 {
    let (lo, hi) =
        p.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    (hi - lo).max_element().max(0.0)
}

/// Where an OpenVAT texture keeps a vertex's frames: OpenVAT wraps a bake that has more vertices
/// than columns in blocks of `F` rows (vertex `i` in column `i % W` of block `i / W`, its
/// `TEXCOORD_1` on the block's first row, frame `f` at that row plus `f`, one row a frame, as
/// OpenVAT's encoder lays the texels and its decoders step); a texture that packs its normals holds
/// them in its lower half (`H / 2` rows down, as the decoders sample at `v + 0.5`), past positions
/// that may not fill the upper half when OpenVAT rounded the height up to a power of two.
pub(crate) struct BlockLayout {
    /// The first row of the normals (packed), `None` without packed normals.
    pub(crate) normal_row: Option<usize>,
    /// A line for the notes when the texture has rows no frame uses.
    pub(crate) note: Option<String>,
}

/// Checks the rows `TEXCOORD_1` reads against OpenVAT's block layout ([`BlockLayout`]) and finds the
/// packed normals.
pub(crate) fn block_layout(
    files: &OpenVatFiles,
    lookup: &Lookup,
    mesh: &LookupMesh,
    texture: &Texture,
    frames: usize,
) -> Result<BlockLayout> {
    let h = texture.height;
    let mut blocks = 0usize;
    for v in 0..mesh.positions.len() {
        let row = lookup.row[v] as usize;
        if !row.is_multiple_of(frames) {
            return Err(bad(
                &files.mesh,
                format!("TEXCOORD_1 of vertex {v}"),
                format!(
                    "reads row {row}, which does not start a block of Frames = {frames} rows: OpenVAT wraps a bake in \
                     blocks of one row a frame, so a vertex's first frame is on row 0, {frames}, {}, ... (is Frames \
                     right, or the mesh made for another texture?)",
                    2 * frames
                ),
            ));
        }
        blocks = blocks.max(row / frames + 1);
    }
    let used = blocks * frames;
    let packed_name = named_packed(&files.texture);
    if h < used || (packed_name && h < 2 * used) {
        return Err(bad(
            &files.texture,
            "the texture's height",
            format!(
                "is {h} rows, but the sidecar says Frames = {frames} and TEXCOORD_1 uses {blocks} block(s) of rows: \
                 expected at least {used}{}",
                if packed_name {
                    format!(" twice over ({}), as the name says it packs normals", 2 * used)
                } else {
                    format!(" ({} with packed normals)", 2 * used)
                }
            ),
        ));
    }
    // Packed normals start halfway down; without them, rows past the frames are padding. A texture
    // not named packed that is tall enough for normals holds them when its lower half reads as unit
    // vectors where the vertices' normals would be (older OpenVAT versions padded plain textures).
    let unit = |v: usize, f: usize| {
        let t = texture.at(lookup.col[v] as usize, lookup.row[v] as usize + h / 2 + f);
        let n = Vec3::new(t[0], t[1], t[2]) * 2.0 - Vec3::ONE;
        n.is_finite() && (0.5..=1.5).contains(&n.length())
    };
    let packed =
        h >= 2 * used && (packed_name || (0..mesh.positions.len()).all(|v| (0..frames).all(|f| unit(v, f))));
    let spare = if packed { h - 2 * used } else { h - used };
    let note = (spare > 0).then(|| {
        format!(
            "the texture has {h} rows: {used} of positions{}, the other {spare} unused (OpenVAT rounds heights up to \
             a power of two)",
            if packed { format!(" and {used} of packed normals from row {}", h / 2) } else { String::new() }
        )
    });
    Ok(BlockLayout { normal_row: packed.then_some(h / 2), note })
}

/// How far outside `[0, 1]` a texel value may be before the bounds are called a lie (a half float's
/// step at 1, with margin).
pub(super) const RANGE_SLACK: f32 = 1e-3;
