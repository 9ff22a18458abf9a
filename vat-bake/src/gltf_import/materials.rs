//! glTF materials and their textures: metallic-roughness factors, base colour, normal and
//! metallic-roughness textures (PNG and JPEG, from a `bufferView`, a `data:` URI or a file inside
//! the resource root), samplers, alpha mode and double-sidedness.
//!
//! What vat does not keep is said in one note each: occlusion and emissive textures, textures of
//! another coordinate set than the one baked, `KHR_texture_transform` and `KHR_materials_*`
//! extensions, and images that are missing or cannot be decoded (the material keeps its factors).

use std::collections::HashMap;

use base64::Engine as _;
use gltf::texture::{MagFilter, MinFilter, WrappingMode};
use vat_core::container::{AlphaMode, MAX_MATERIALS, Material, TextureBinding, TextureFilter, TextureWrap};

use super::container::{Resources, shorten};
use super::{Ctx, Importer};
use crate::Result;
use crate::rig::{MaterialImage, RigMaterials};

/// Largest image side decoded, in texels (a 16384 x 16384 RGBA8 image is 1 GiB).
const MAX_IMAGE_SIDE: u32 = 16384;

/// Where an image's bytes are.
enum ImageSource<'j> {
    /// In the bufferView of this index.
    View(usize),
    /// At this URI (a `data:` URI or a relative path).
    Uri(&'j str),
}

/// Which texture array an image goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Space {
    Color,
    Data,
}

/// The document's materials, or `None` (with no note) when it has none or when its primitives
/// carry authored `_MATERIAL_ID`s (whose ids are not material indices), plus one note per thing
/// left out. The material of id `k` is glTF material `k`; a primitive without a material uses
/// the glTF default material, appended after them.
///
/// # Errors
/// [`crate::BakeError::Gltf`] for more than 256 materials, an image `uri` escaping the resource
/// root, or an import over its memory budget.
pub(super) fn import(
    imp: &Importer<'_, '_>,
    resources: &Resources<'_>,
    variants_json: Option<&serde_json::Value>,
) -> Result<(Option<RigMaterials>, Vec<String>)> {
    let doc = imp.doc;
    let ctx = &imp.ctx;
    let mut notes = Vec::new();
    let primitives = || doc.meshes().flat_map(|m| m.primitives());
    let authored_ids =
        // `Primitive::get`, not `attributes()`, which unwraps every attribute name (an unknown,
        // invalid one is allowed through validation and would panic there).
        primitives().any(|p| p.get(&gltf::Semantic::Extras("MATERIAL_ID".into())).is_some());
    if doc.materials().len() == 0 || authored_ids {
        return Ok((None, notes));
    }
    let needs_default = primitives().any(|p| p.material().index().is_none());
    let count = doc.materials().len() + usize::from(needs_default);
    if count > MAX_MATERIALS {
        return Err(ctx.err(
            "materials",
            format!("{count} materials; at most {MAX_MATERIALS} fit (merge materials before baking)"),
        ));
    }
    for ext in doc.extensions_used() {
        if ext == "KHR_texture_transform" {
            notes.push(
                "KHR_texture_transform left out: textures are sampled with untransformed coordinates".into(),
            );
        } else if ext.starts_with("KHR_materials_") {
            notes.push(format!("{ext} left out: vat shades glTF's core metallic-roughness model"));
        }
    }
    let mut loader = ImageLoader {
        ctx,
        doc,
        buffers: imp.buffers,
        resources,
        layers: HashMap::new(),
        out: RigMaterials::default(),
        failed: HashMap::new(),
    };
    for m in doc.materials() {
        let label = match m.name() {
            Some(n) if !n.is_empty() => format!("material {:?}", n),
            _ => format!("material {}", m.index().unwrap_or(0)),
        };
        let pbr = m.pbr_metallic_roughness();
        let unit = |v: f32| if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
        let mut material = Material {
            name: m.name().unwrap_or_default().to_owned(),
            base_color_factor: pbr.base_color_factor().map(unit),
            metallic_factor: unit(pbr.metallic_factor()),
            roughness_factor: unit(pbr.roughness_factor()),
            normal_scale: 1.0,
            emissive_factor: m.emissive_factor().map(|e| if e.is_finite() { e.max(0.0) } else { 0.0 }),
            alpha_mode: match m.alpha_mode() {
                gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
                gltf::material::AlphaMode::Mask => {
                    AlphaMode::Mask { cutoff: unit(m.alpha_cutoff().unwrap_or(0.5)) }
                }
                gltf::material::AlphaMode::Blend => {
                    notes.push(format!(
                        "{label}: alpha blending is drawn as a mask with cutoff 0.5 (a crowd is not sorted)"
                    ));
                    AlphaMode::Blend
                }
            },
            double_sided: m.double_sided(),
            ..Material::default()
        };
        if let Some(info) = pbr.base_color_texture() {
            material.base_color_texture = loader.binding(
                &label,
                "base colour",
                info.texture(),
                info.tex_coord(),
                Space::Color,
                &mut notes,
            )?;
        }
        if let Some(info) = pbr.metallic_roughness_texture() {
            material.metallic_roughness_texture = loader.binding(
                &label,
                "metallic-roughness",
                info.texture(),
                info.tex_coord(),
                Space::Data,
                &mut notes,
            )?;
        }
        if let Some(normal) = m.normal_texture() {
            let scale = normal.scale();
            material.normal_scale = if scale.is_finite() { scale } else { 1.0 };
            material.normal_texture = loader.binding(
                &label,
                "normal",
                normal.texture(),
                normal.tex_coord(),
                Space::Data,
                &mut notes,
            )?;
        }
        if m.occlusion_texture().is_some() {
            notes.push(format!(
                "{label}: occlusion texture left out (vat's shading has no ambient occlusion)"
            ));
        }
        if m.emissive_texture().is_some() {
            notes.push(format!("{label}: emissive texture left out (the emissive factor is kept)"));
        }
        loader.out.materials.push(material);
    }
    if needs_default {
        // glTF's default material: white, fully metallic and rough.
        loader.out.materials.push(Material { name: "glTF default".into(), ..Material::default() });
    }
    if let Some(raw) = variants_json {
        loader.out.variants = variants(raw, doc, count, &mut notes);
    }
    Ok((Some(loader.out), notes))
}

/// The `KHR_materials_variants` of the raw document `raw`: for each variant (at most 255), the
/// material each material id is drawn with. A variant is per primitive in glTF and per material
/// id here: when primitives of one material map it to different materials under a variant, the
/// first mapping is kept and a note says so.
fn variants(
    raw: &serde_json::Value,
    doc: &gltf::Document,
    count: usize,
    notes: &mut Vec<String>,
) -> Vec<vat_core::container::MaterialVariant> {
    let names: Vec<String> = raw["extensions"]["KHR_materials_variants"]["variants"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, v)| v["name"].as_str().map_or_else(|| format!("variant {k}"), str::to_owned))
        .collect();
    if names.len() > 255 {
        notes.push(format!(
            "KHR_materials_variants: {} variants; the first 255 are kept (instances select them by an 8-bit id)",
            names.len()
        ));
    }
    let kept = names.len().min(255);
    let identity: Vec<u16> = (0..count as u16).collect();
    let mut remap = vec![identity.clone(); kept];
    let mut conflicts = 0usize;
    for mesh in doc.meshes() {
        for primitive in mesh.primitives() {
            let mappings = &raw["meshes"][mesh.index()]["primitives"][primitive.index()]["extensions"]["KHR_materials_variants"]
                ["mappings"];
            let id = primitive.material().index().unwrap_or(doc.materials().len());
            if id >= count {
                continue;
            }
            for mapping in mappings.as_array().into_iter().flatten() {
                let Some(target) = mapping["material"].as_u64().map(|k| k as usize).filter(|&k| k < count)
                else {
                    notes.push(format!(
                        "KHR_materials_variants: a mapping of mesh {} names no material of the file; left out",
                        mesh.index()
                    ));
                    continue;
                };
                for v in
                    mapping["variants"].as_array().into_iter().flatten().filter_map(serde_json::Value::as_u64)
                {
                    let Some(table) = remap.get_mut(v as usize) else { continue };
                    if table[id] != identity[id] && usize::from(table[id]) != target {
                        conflicts += 1;
                        continue;
                    }
                    table[id] = target as u16;
                }
            }
        }
    }
    if conflicts > 0 {
        notes.push(format!(
            "KHR_materials_variants: {conflicts} primitive mappings disagree with an earlier one for the same              material under the same variant; vat maps per material, so the first is kept"
        ));
    }
    names
        .into_iter()
        .take(kept)
        .zip(remap)
        .map(|(name, materials)| vat_core::container::MaterialVariant { name, materials })
        .collect()
}

/// Loads each image once per colour space and hands out its layer.
struct ImageLoader<'c, 'a, 'b> {
    ctx: &'c Ctx<'a>,
    doc: &'c gltf::Document,
    buffers: &'c [std::borrow::Cow<'b, [u8]>],
    resources: &'c Resources<'c>,
    /// (glTF image index, space) -> layer.
    layers: HashMap<(usize, Space), u32>,
    out: RigMaterials,
    /// glTF image index -> why it could not be used (reported once).
    failed: HashMap<usize, String>,
}

impl ImageLoader<'_, '_, '_> {
    /// The binding of `texture` (the material's `what` texture), or `None` with a note when it
    /// cannot be used.
    fn binding(
        &mut self,
        label: &str,
        what: &str,
        texture: gltf::Texture<'_>,
        tex_coord: u32,
        space: Space,
        notes: &mut Vec<String>,
    ) -> Result<Option<TextureBinding>> {
        if tex_coord != self.ctx.uv_set {
            notes.push(format!(
                "{label}: {what} texture left out: it uses TEXCOORD_{tex_coord}, the bake keeps TEXCOORD_{}",
                self.ctx.uv_set
            ));
            return Ok(None);
        }
        // `Texture::source` unwraps a missing `source` (allowed by the spec: Blockbench writes it,
        // and an extension may carry the image instead), read from the JSON first.
        let source = self.doc.as_json().textures.get(texture.index()).map(|t| t.source.value());
        if source.is_none_or(|s| s >= self.doc.images().len()) {
            notes.push(format!(
                "{label}: {what} texture left out: texture {} has no image source (glTF allows it); the \
                 material keeps its factors",
                texture.index()
            ));
            return Ok(None);
        }
        let image = texture.source();
        let index = image.index();
        let layer = match self.layers.get(&(index, space)) {
            Some(&layer) => layer,
            None => {
                if let Some(reason) = self.failed.get(&index) {
                    notes.push(format!("{label}: {what} texture left out: {reason}"));
                    return Ok(None);
                }
                match self.load(&image)? {
                    Ok(decoded) => {
                        let list = match space {
                            Space::Color => &mut self.out.color_images,
                            Space::Data => &mut self.out.data_images,
                        };
                        list.push(decoded);
                        let layer = list.len() as u32 - 1;
                        self.layers.insert((index, space), layer);
                        layer
                    }
                    Err(reason) => {
                        notes.push(format!("{label}: {what} texture left out: {reason}"));
                        self.failed.insert(index, reason);
                        return Ok(None);
                    }
                }
            }
        };
        let sampler = texture.sampler();
        let wrap = |mode: WrappingMode| match mode {
            WrappingMode::Repeat => TextureWrap::Repeat,
            WrappingMode::ClampToEdge => TextureWrap::ClampToEdge,
            WrappingMode::MirroredRepeat => TextureWrap::MirroredRepeat,
        };
        let mag_filter = match sampler.mag_filter() {
            Some(MagFilter::Nearest) => TextureFilter::Nearest,
            _ => TextureFilter::Linear,
        };
        let min_filter = match sampler.min_filter() {
            Some(MinFilter::Nearest | MinFilter::NearestMipmapNearest | MinFilter::NearestMipmapLinear) => {
                TextureFilter::Nearest
            }
            _ => TextureFilter::Linear,
        };
        if mag_filter == TextureFilter::Nearest || min_filter == TextureFilter::Nearest {
            notes.push(format!(
                "{label}: {what} texture asks for nearest filtering; vat samples it trilinearly"
            ));
        }
        Ok(Some(TextureBinding {
            layer,
            wrap_u: wrap(sampler.wrap_s()),
            wrap_v: wrap(sampler.wrap_t()),
            mag_filter,
            min_filter,
        }))
    }

    /// The decoded image, `Ok(Err(reason))` when it cannot be used (missing file, unsupported or
    /// corrupt data), `Err` for a hostile `uri` or the memory budget.
    fn load(&self, image: &gltf::Image<'_>) -> Result<std::result::Result<MaterialImage, String>> {
        let index = image.index();
        let part = format!("image {index}");
        // The image's JSON, not `gltf::Image::source`, which unwraps a missing `mimeType` (a
        // bufferView image without one is invalid glTF but must not panic) and a missing `uri`.
        let Some(json) = self.doc.as_json().images.get(index) else {
            return Ok(Err(format!("image {index} does not exist")));
        };
        let source = match (json.buffer_view.as_ref(), json.uri.as_deref()) {
            (Some(view), _) => ImageSource::View(view.value()),
            (None, Some(uri)) => ImageSource::Uri(uri),
            (None, None) => {
                return Ok(Err(format!("image {index}: it has neither a bufferView nor a uri")));
            }
        };
        let (name, bytes): (String, std::borrow::Cow<'_, [u8]>) = match source {
            ImageSource::View(view_index) => {
                let name = image.name().map_or_else(|| format!("image {index}"), str::to_owned);
                let Some(view) = self.doc.views().nth(view_index) else {
                    return Ok(Err(format!("{name}: its bufferView {view_index} does not exist")));
                };
                let Some(buffer) = self.buffers.get(view.buffer().index()) else {
                    return Ok(Err(format!("{name}: its bufferView's buffer does not exist")));
                };
                let range = view.offset().checked_add(view.length()).map(|end| view.offset()..end);
                match range.and_then(|r| buffer.get(r)) {
                    Some(b) => (name, std::borrow::Cow::Borrowed(b)),
                    None => return Ok(Err(format!("{name}: its bufferView lies outside its buffer"))),
                }
            }
            ImageSource::Uri(uri) => {
                let name = image.name().map_or_else(|| shorten(uri), str::to_owned);
                if let Some(rest) = uri.strip_prefix("data:") {
                    let Some((_, payload)) = rest.split_once(";base64,") else {
                        return Ok(Err(format!("{name}: data URI is not base64")));
                    };
                    self.ctx.charge(&part, (payload.len() as u64).div_ceil(4) * 3)?;
                    match base64::engine::general_purpose::STANDARD.decode(payload.trim_end()) {
                        Ok(b) => (name, std::borrow::Cow::Owned(b)),
                        Err(e) => return Ok(Err(format!("{name}: invalid base64 data URI: {e}"))),
                    }
                } else {
                    use vat_core::files::FileProblem;
                    // What the text alone decides (a scheme, an absolute path) before any folder.
                    let relative = vat_core::files::decode_uri(uri);
                    let folder = match (&relative, self.resources.folder()) {
                        (Ok(_), Ok(f)) => Some(f),
                        (Ok(_), Err(e)) => return Ok(Err(format!("{name}: {e}"))),
                        (Err(_), _) => None,
                    };
                    // Through the read gate. One missing inside the folder, or a URI that is no file
                    // path, is left out with a note; one leaving the folder is refused from its name
                    // or its links' text (never looked up outside, so the outcome does not depend on
                    // what exists there), as are special files and the budget.
                    let limit = vat_core::files::ReadLimit::new(self.ctx.remaining(), "--max-memory");
                    match relative.and_then(|rel| folder.map_or(Ok(Vec::new()), |f| f.read(&rel, limit))) {
                        Ok(bytes) => {
                            self.ctx.charge(&part, bytes.len() as u64)?;
                            (name, std::borrow::Cow::Owned(bytes))
                        }
                        Err(vat_core::Error::FileRefused { problem: FileProblem::Missing, .. }) => {
                            return Ok(Err(format!("{name}: file not found next to the glTF")));
                        }
                        Err(vat_core::Error::FileRefused {
                            problem: FileProblem::BadReference { why },
                            ..
                        }) => {
                            return Ok(Err(format!("{name}: the uri {why}")));
                        }
                        Err(e) => return Err(self.ctx.err(&part, e.to_string())),
                    }
                }
            }
        };
        self.decode(&part, name, &bytes)
    }

    /// Decodes an image's bytes to RGBA8, its size checked and its memory charged before anything
    /// is decoded: the decoder's own image, then the RGBA copy (the decoder's is given back once
    /// converted). A file that is not an image is a note; the budget is a refusal.
    fn decode(
        &self,
        part: &str,
        name: String,
        bytes: &[u8],
    ) -> Result<std::result::Result<MaterialImage, String>> {
        use image::ImageDecoder as _;
        let mut reader = match image::ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format() {
            Ok(r) => r,
            Err(e) => return Ok(Err(format!("{name}: {e}"))),
        };
        // The header is read with no allocation limit of the decoder's own (the budget below is the
        // limit), so an image over it is a budget refusal naming --max-memory, not a decoder error.
        let mut limits = image::Limits::default();
        limits.max_image_width = Some(MAX_IMAGE_SIDE);
        limits.max_image_height = Some(MAX_IMAGE_SIDE);
        limits.max_alloc = None;
        reader.limits(limits.clone());
        let mut decoder = match reader.into_decoder() {
            Ok(d) => d,
            Err(e) => return Ok(Err(format!("{name}: cannot decode it ({e}; PNG and JPEG are read)"))),
        };
        let (width, height) = decoder.dimensions();
        if width == 0 || height == 0 {
            return Ok(Err(format!("{name}: the image is empty")));
        }
        let native = decoder.total_bytes();
        let rgba = u64::from(width) * u64::from(height) * 4;
        let converted = decoder.color_type() != image::ColorType::Rgba8;
        self.ctx.charge(
            &format!("{part}: a {width}x{height} image"),
            native.saturating_add(if converted { rgba } else { 0 }),
        )?;
        // The decoder's own working memory beyond its image is bounded by what is left.
        limits.max_alloc = Some(native.saturating_add(self.ctx.remaining()).max(1));
        if let Err(e) = decoder.set_limits(limits) {
            return Ok(Err(format!("{name}: cannot decode it ({e})")));
        }
        let decoded = match image::DynamicImage::from_decoder(decoder) {
            Ok(d) => d.into_rgba8(),
            Err(e) => return Ok(Err(format!("{name}: cannot decode it ({e}; PNG and JPEG are read)"))),
        };
        if converted {
            self.ctx.release(native);
        }
        Ok(Ok(MaterialImage { name, width, height, rgba: decoded.into_raw() }))
    }
}
