//! Exporting a bake as OpenVAT files, and the lookup glb.

use super::*;

/// How normals are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormalsExport {
    /// In the position texture's rows `[F, 2F)` (height `2F`).
    Packed,
    /// In `<N>_vnrm.<ext>`, the same size and rows as `_vat`.
    Separate,
    /// Not exported (decoders keep the rest normals or recompute them).
    None,
}

/// What [`export_openvat`] writes: the engine it is for, and the texture format and normals layout
/// (by default the target's own, [`OpenVatExport::for_target`]; another choice is written as asked,
/// with a note saying what the target's decoder makes of it).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatExport {
    /// `--target`: whose decoder the files are laid out for (clip rows, offset space, lookup row).
    pub target: ExportTarget,
    /// `--format`.
    pub format: crate::interop::TextureFormat,
    /// `--normals`.
    pub normals: NormalsExport,
}

impl OpenVatExport {
    /// The texture format and normals layout `target`'s decoder reads
    /// ([`ExportTarget::format`], [`ExportTarget::normals`]).
    pub fn for_target(target: ExportTarget) -> Self {
        Self { target, format: target.format(), normals: target.normals() }
    }
}

impl Default for OpenVatExport {
    fn default() -> Self {
        Self::for_target(ExportTarget::Default)
    }
}

/// What an export wrote, and its error bound.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenVatWritten {
    /// The engine the files are laid out for.
    pub target: ExportTarget,
    /// The base name `N` of the files.
    pub name: String,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// Texture size (columns = vertices: the body's, then each exported attachment's).
    pub width: usize,
    /// Texture height (rows = `frames`, doubled with packed normals).
    pub height: usize,
    /// Rows of frames (`os-remap.Frames`): every stored frame of every clip, plus the rows the
    /// target's clip convention repeats ([`OpenVatWritten::row_frames`]).
    pub frames: usize,
    /// For each row of frames, the asset's frame it holds (frames counted clip after clip, as
    /// stored).
    pub row_frames: Vec<u32>,
    /// Vertices of the body (the first columns); the attachments' follow.
    pub body_vertices: usize,
    /// `os-remap.Min` (the target's offset axes and units: [`ExportTarget::offset_space`]).
    pub min: [f32; 3],
    /// `os-remap.Max`.
    pub max: [f32; 3],
    /// The largest error the target's decoder can see against vat's own decode, per glTF axis
    /// (metres): half the texture's step (as the engine holds it) times the range, plus f32 rounding.
    pub position_bound: [f32; 3],
    /// The step of the texture's values as the target's decoder reads them (a fraction of the
    /// range): the normals' quantum.
    pub texel_step: f32,
    /// One line for each thing the export left out or the target's decoder cannot take, with the
    /// reason.
    pub notes: Vec<String>,
}

/// The most columns (vertices) or rows an exported texture may have: the texture size every engine
/// template accepts, and vat's own [`crate::prepare::MAX_TEXTURE_DIM`].
pub const MAX_EXPORT_DIM: usize = crate::prepare::MAX_TEXTURE_DIM as usize;

/// Writes a `.vat` asset as an OpenVAT bake in `dir` (created if missing), every file atomically:
/// `<N>_vat.<ext>`, `<N>_vnrm.<ext>` (separate normals), `<N>-remap_info.json` and `<N>.glb`, `N`
/// the asset's name, laid out for `options.target` (see [`ExportTarget`] for what each engine's
/// decoder reads). Every stored frame of every clip, decoded by vat's CPU reference, becomes a row
/// (clips in texture order, listed in that order in the sidecar); each vertex a column, the rest
/// mesh's (LOD 0) and then each attachment's, placed per frame by its socket's captured transform.
/// Offsets are from the asset's rest positions (its rest stream, else frame 0; an attachment's
/// frame 0); `Min`/`Max` are their exact per-axis extremes. The glb holds that mesh with
/// `TEXCOORD_1` on each vertex's column in the first row and `TEXCOORD_0` when the asset has UVs.
/// What is left out is named in [`OpenVatWritten::notes`].
///
/// # Errors
/// [`BakeError::Interop`] when the asset has no vertex animation texture (a rigid, sprite or fluid
/// asset is named as such), or more vertices or rows than [`MAX_EXPORT_DIM`]; [`BakeError::Core`]
/// for decode failures and for the write gate's refusals ([`vat_core::files::PendingFolder`]: `dir`
/// is a link, a file or a device) and write failures, after which nothing is left.
pub fn export_openvat(
    asset: &vat_core::container::Asset<'_>,
    dir: &Path,
    options: &OpenVatExport,
) -> Result<OpenVatWritten> {
    export_targets::export(asset, dir, options)
}

/// A `.glb` with one mesh: POSITION (with min/max), NORMAL, TEXCOORD_0 when given, TEXCOORD_1 and
/// u32 indices, on one node with no transform.
pub fn lookup_glb(
    name: &str,
    positions: &[Vec3],
    normals: &[Vec3],
    uv0: Option<&[[f32; 2]]>,
    uv1: &[[f32; 2]],
    indices: &[u32],
) -> Result<Vec<u8>> {
    lookup_glb_with_sets(name, positions, normals, &[uv0, Some(uv1)], indices)
}

/// [`lookup_glb`] with any texture-coordinate sets: `sets[k]`, when given, is `TEXCOORD_k`.
pub fn lookup_glb_with_sets(
    name: &str,
    positions: &[Vec3],
    normals: &[Vec3],
    sets: &[Option<&[[f32; 2]]>],
    indices: &[u32],
) -> Result<Vec<u8>> {
    use serde_json::json;
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut push = |bytes: Vec<u8>,
                    count: usize,
                    ty: &str,
                    component: u32,
                    target: u32,
                    bounds: Option<(Vec3, Vec3)>|
     -> usize {
        let offset = bin.len();
        bin.extend_from_slice(&bytes);
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        views.push(json!({"buffer": 0, "byteOffset": offset, "byteLength": bytes.len(), "target": target}));
        let mut a =
            json!({"bufferView": views.len() - 1, "componentType": component, "count": count, "type": ty});
        if let Some((lo, hi)) = bounds {
            a["min"] = json!(lo.to_array());
            a["max"] = json!(hi.to_array());
        }
        accessors.push(a);
        accessors.len() - 1
    };
    let floats =
        |vals: &mut dyn Iterator<Item = f32>| -> Vec<u8> { vals.flat_map(f32::to_le_bytes).collect() };
    let (lo, hi) = positions
        .iter()
        .fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    const FLOAT: u32 = 5126;
    const UINT: u32 = 5125;
    const ARRAY: u32 = 34962;
    const ELEMENTS: u32 = 34963;
    let n = positions.len();
    let pos = push(
        floats(&mut positions.iter().flat_map(|p| p.to_array())),
        n,
        "VEC3",
        FLOAT,
        ARRAY,
        Some((lo, hi)),
    );
    let nrm = push(floats(&mut normals.iter().flat_map(|p| p.to_array())), n, "VEC3", FLOAT, ARRAY, None);
    let mut attributes = json!({"POSITION": pos, "NORMAL": nrm});
    for (k, uv) in sets.iter().enumerate() {
        if let Some(uv) = uv {
            attributes[format!("TEXCOORD_{k}")] =
                json!(push(floats(&mut uv.iter().flatten().copied()), n, "VEC2", FLOAT, ARRAY, None));
        }
    }
    let idx = push(
        indices.iter().flat_map(|i| i.to_le_bytes()).collect(),
        indices.len(),
        "SCALAR",
        UINT,
        ELEMENTS,
        None,
    );
    let doc = json!({
        "asset": {"version": "2.0", "generator": "vat export-openvat"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": name}],
        "meshes": [{"name": name, "primitives": [{"attributes": attributes, "indices": idx, "mode": 4}]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": views,
        "accessors": accessors,
    });
    let mut json_bytes =
        serde_json::to_vec(&doc).map_err(|e| bad(Path::new(name), "the glb", e.to_string()))?;
    while !json_bytes.len().is_multiple_of(4) {
        json_bytes.push(b' ');
    }
    let total = 12 + 8 + json_bytes.len() + 8 + bin.len();
    let total = u32::try_from(total).map_err(|_| bad(Path::new(name), "the glb", "would be over 4 GiB"))?;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&(json_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&json_bytes);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    Ok(out)
}
