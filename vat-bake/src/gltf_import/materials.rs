//! glTF materials and their textures: metallic-roughness factors, base colour, normal and
//! metallic-roughness textures (PNG and JPEG, from a `bufferView`, a `data:` URI or a file inside
//! the resource root), samplers, alpha mode and double-sidedness.
//!
//! `KHR_texture_transform` (offset, rotation, scale, and its `texCoord` override) is baked into
//! the texture coordinates: vat's materials sample every texture with the vertex's one UV set, so
//! the transform of a material's textures is applied to the UVs of the vertices drawn with that
//! material ([`apply_uv_transforms`]; vertices shared by primitives of different materials are
//! already one vertex per material). When one material's baked textures (base colour,
//! metallic-roughness, normal) carry different transforms, the UVs take the base colour's (else
//! the first bound texture's) and one note names the textures sampled with it instead of their own.
//!
//! `KHR_texture_basisu` (KTX2 / Basis Universal images) is not decoded: a texture whose only image
//! is KTX2 is left out with a note naming it (the material keeps its factors) and how to get PNG
//! textures (`gltf-transform ktxdecompress`, or a re-export without KTX2); a texture that also has
//! a PNG/JPEG `source` uses that. Why not decode: the crates
//! there are do not meet the bar for a dependency of this importer. `ktx2` only parses the
//! container (the Basis payload still needs a transcoder); `basis-universal` builds Binomial's C++
//! encoder and transcoder through `cc` and its last release (0.3.1) wraps a 2023 codec; `basisu`,
//! a pure-Rust transcoder, has a single 0.1.0 release and no record of maintenance yet. None comes
//! with a Rust encoder either, so no KTX2 fixture could be built in code to test a decoder against.
//!
//! What vat does not keep is also said in one note each: occlusion and emissive textures, textures
//! of another coordinate set than the one baked, `KHR_materials_*` extensions, and images that are
//! missing or cannot be decoded (the material keeps its factors).

use std::collections::HashMap;

use base64::Engine as _;
use gltf::texture::{MagFilter, MinFilter, WrappingMode};
use serde_json::Value;
use vat_core::container::{
    AlphaMode, MAX_MATERIALS, MAX_TEXTURE_LAYERS, Material, TextureBinding, TextureFilter, TextureWrap,
};

use super::container::{Resources, shorten};
use super::{Ctx, Importer};
use crate::Result;
use crate::rig::{MaterialImage, RigMaterials};

/// What to do about a KTX2 texture (see the module docs for why it is not decoded).
const KTX2_FIX: &str = "To bake its textures, convert them to PNG (`gltf-transform ktxdecompress in.glb \
                        out.glb`, which needs KTX-Software's `ktx` tool) or re-export with PNG or JPEG textures \
                        (gltfpack without -tc)";

/// The first bytes of every KTX2 file.
const KTX2_MAGIC: &[u8] = b"\xABKTX 20\xBB\r\n\x1A\n";

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

/// A `KHR_texture_transform`: `uv' = T(offset) R(rotation) S(scale) uv`, rotation counter-clockwise
/// in UV space (`u' = sx u cos r + sy v sin r + ox`, `v' = sy v cos r - sx u sin r + oy`, which
/// the extension's example, the lower left quadrant turned clockwise, pins down).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct UvTransform {
    offset: [f64; 2],
    rotation: f64,
    scale: [f64; 2],
}

impl UvTransform {
    const IDENTITY: UvTransform = UvTransform { offset: [0.0, 0.0], rotation: 0.0, scale: [1.0, 1.0] };

    /// The transform as an affine map of UV space.
    pub(super) fn affine(&self) -> glam::DAffine2 {
        let (sin, cos) = self.rotation.sin_cos();
        let [sx, sy] = self.scale;
        glam::DAffine2::from_cols(
            glam::DVec2::new(sx * cos, -sx * sin),
            glam::DVec2::new(sy * sin, sy * cos),
            glam::DVec2::from(self.offset),
        )
    }

    fn describe(&self) -> String {
        format!(
            "offset [{}, {}], rotation {}, scale [{}, {}]",
            self.offset[0], self.offset[1], self.rotation, self.scale[0], self.scale[1]
        )
    }
}

/// The `KHR_texture_transform` of a textureInfo's JSON and its `texCoord` override: `Ok(None)`
/// when it has none, `Err` saying what is malformed.
fn texture_transform(info: &Value) -> std::result::Result<Option<(UvTransform, Option<u32>)>, String> {
    let Some(ext) = info.get("extensions").and_then(|e| e.get("KHR_texture_transform")) else {
        return Ok(None);
    };
    let pair = |key: &str, default: [f64; 2]| -> std::result::Result<[f64; 2], String> {
        match ext.get(key) {
            None => Ok(default),
            Some(v) => match v.as_array().map(|a| a.iter().map(Value::as_f64).collect::<Vec<_>>()) {
                Some(a) if a.len() == 2 && a.iter().all(|x| x.is_some_and(f64::is_finite)) => {
                    Ok([a[0].unwrap_or_default(), a[1].unwrap_or_default()])
                }
                _ => Err(format!("`{key}` is {v}, not two finite numbers")),
            },
        }
    };
    let offset = pair("offset", [0.0, 0.0])?;
    let scale = pair("scale", [1.0, 1.0])?;
    let rotation = match ext.get("rotation") {
        None => 0.0,
        Some(v) => v
            .as_f64()
            .filter(|r| r.is_finite())
            .ok_or_else(|| format!("`rotation` is {v}, not a finite number"))?,
    };
    let tex_coord = match ext.get("texCoord") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| format!("`texCoord` is {v}, not a texture coordinate set"))?,
        ),
    };
    Ok(Some((UvTransform { offset, rotation, scale }, tex_coord)))
}

/// What [`import`] gives.
pub(super) struct Imported {
    /// The document's materials, or `None` (see [`import`]).
    pub(super) materials: Option<RigMaterials>,
    /// One note per thing left out.
    pub(super) notes: Vec<String>,
    /// By material id: the `KHR_texture_transform` baked into the UVs of its vertices, `None`
    /// when none (or the identity).
    pub(super) uv_transforms: Vec<Option<UvTransform>>,
}

/// Applies each material's [`Imported::uv_transforms`] to the texture coordinates of the vertices
/// drawn with it.
pub(super) fn apply_uv_transforms(meshes: &mut [crate::rig::Mesh], transforms: &[Option<UvTransform>]) {
    if transforms.iter().all(Option::is_none) {
        return;
    }
    let affine: Vec<Option<glam::DAffine2>> = transforms.iter().map(|t| t.map(|t| t.affine())).collect();
    for mesh in meshes {
        let Some(uvs) = mesh.uvs.as_mut() else { continue };
        for (uv, &id) in uvs.iter_mut().zip(&mesh.material_ids) {
            if let Some(Some(a)) = affine.get(usize::from(id)) {
                *uv = a.transform_point2(uv.as_dvec2()).as_vec2();
            }
        }
    }
}

/// The document's materials, or `None` (with no note) when it has none or when its primitives
/// carry authored `_MATERIAL_ID`s (whose ids are not material indices), plus one note per thing
/// left out, and each material's texture transform. The materials are the material plan's
/// ([`super::material_plan`]): glTF material `k` is vat material `k` and the glTF default material
/// (for primitives without one) comes after them, unless the document has more than 256 and was
/// compacted. `raw` is the document's JSON when it names an extension read from there;
/// `has_variants` says whether it names `KHR_materials_variants`.
///
/// # Errors
/// [`crate::BakeError::Gltf`] for more than 256 materials, more than 256 distinct images of one
/// kind (base colour; normal and metallic-roughness), an image `uri` escaping the resource root,
/// or an import over its memory budget.
pub(super) fn import(
    imp: &Importer<'_, '_>,
    resources: &Resources<'_>,
    raw: Option<&Value>,
    has_variants: bool,
) -> Result<Imported> {
    let doc = imp.doc;
    let ctx = &imp.ctx;
    let mut notes = Vec::new();
    let none = |notes| Ok(Imported { materials: None, notes, uv_transforms: Vec::new() });
    let primitives = || doc.meshes().flat_map(|m| m.primitives());
    let authored_ids =
        // `Primitive::get`, not `attributes()`, which unwraps every attribute name (an unknown,
        // invalid one is allowed through validation and would panic there).
        primitives().any(|p| p.get(&gltf::Semantic::Extras("MATERIAL_ID".into())).is_some());
    if doc.materials().len() == 0 || authored_ids {
        return none(notes);
    }
    let sources = &ctx.materials.sources;
    let count = sources.len();
    if count > MAX_MATERIALS {
        // The plan refuses these; kept so that no id can wrap.
        return Err(ctx.err(
            "materials",
            format!("{count} materials; at most {MAX_MATERIALS} fit (merge materials before baking)"),
        ));
    }
    for ext in doc.extensions_used() {
        if ext.starts_with("KHR_materials_") {
            notes.push(format!("{ext} left out: vat shades glTF's core metallic-roughness model"));
        }
    }
    let mut uv_transforms = Vec::with_capacity(count);
    let mut loader = ImageLoader {
        ctx,
        doc,
        raw,
        buffers: imp.buffers,
        resources,
        layers: HashMap::new(),
        out: RigMaterials::default(),
        failed: HashMap::new(),
    };
    for source in sources {
        match source.material.and_then(|k| doc.materials().nth(k)) {
            Some(m) => {
                let (mut material, transform) = import_material(&mut loader, &m, raw, &mut notes)?;
                if source.white {
                    // Its factor and its group's are in the vertex colours.
                    material.base_color_factor = [1.0; 4];
                    material.name = format!(
                        "{} and {} more (base colours in the vertex colours)",
                        material.name,
                        source.members.saturating_sub(1)
                    );
                }
                uv_transforms.push(transform);
                loader.out.materials.push(material);
            }
            None => {
                // glTF's default material: white, fully metallic and rough.
                loader.out.materials.push(Material { name: "glTF default".into(), ..Material::default() });
                uv_transforms.push(None);
            }
        }
    }
    // Each kind of image is one texture array of the .vat, at most 256 layers (the GPU's
    // texture-array limit): refused here, naming the images, rather than by the written file's
    // read-back.
    let kinds = [
        ("base colour", loader.out.color_images.len()),
        ("normal and metallic-roughness", loader.out.data_images.len()),
    ];
    for (what, images) in kinds {
        if images > MAX_TEXTURE_LAYERS {
            return Err(ctx.err(
                "materials",
                format!(
                    "{images} distinct {what} images; a .vat holds at most {MAX_TEXTURE_LAYERS} of each kind (one \
                     texture array each, the GPU's layer limit): combine textures into atlases before baking"
                ),
            ));
        }
    }
    if let Some(raw) = raw.filter(|_| has_variants) {
        loader.out.variants = variants(raw, doc, count, &mut notes);
    }
    Ok(Imported { materials: Some(loader.out), notes, uv_transforms })
}

/// Material `m`: its factors, its bound textures loaded by `loader`, one note per thing left out;
/// with the transform baked into the UVs of its vertices ([`uv_transform`]).
fn import_material(
    loader: &mut ImageLoader<'_, '_, '_>,
    m: &gltf::Material<'_>,
    raw: Option<&Value>,
    notes: &mut Vec<String>,
) -> Result<(Material, Option<UvTransform>)> {
    let label = match m.name() {
        Some(n) if !n.is_empty() => format!("material {:?}", n),
        _ => format!("material {}", m.index().unwrap_or(0)),
    };
    let pbr = m.pbr_metallic_roughness();
    let mut material = material_factors(m, &label, notes);
    // Each baked texture's KHR_texture_transform (read from the raw JSON: the gltf crate is
    // built without it) and the coordinate set it overrides to.
    let raw_material = raw.map(|r| &r["materials"][m.index().unwrap_or(0)]);
    let mut transform_of = |info: Option<&Value>, what: &str| match info.map(texture_transform) {
        None | Some(Ok(None)) => (UvTransform::IDENTITY, None),
        Some(Ok(Some(found))) => found,
        Some(Err(why)) => {
            notes.push(format!(
                "{label}: {what} texture's KHR_texture_transform left out (it is sampled untransformed): {why}"
            ));
            (UvTransform::IDENTITY, None)
        }
    };
    let base_transform =
        transform_of(raw_material.map(|r| &r["pbrMetallicRoughness"]["baseColorTexture"]), "base colour");
    let metallic_transform = transform_of(
        raw_material.map(|r| &r["pbrMetallicRoughness"]["metallicRoughnessTexture"]),
        "metallic-roughness",
    );
    let normal_transform = transform_of(raw_material.map(|r| &r["normalTexture"]), "normal");
    // The transforms of the textures that are bound, in the order the UVs choose from.
    let mut bound: Vec<(&str, UvTransform)> = Vec::new();
    if let Some(info) = pbr.base_color_texture() {
        let (transform, tex_coord) = base_transform;
        material.base_color_texture = loader.binding(
            &label,
            "base colour",
            info.texture(),
            tex_coord.unwrap_or(info.tex_coord()),
            Space::Color,
            notes,
        )?;
        if material.base_color_texture.is_some() {
            bound.push(("base colour", transform));
        }
    }
    if let Some(info) = pbr.metallic_roughness_texture() {
        let (transform, tex_coord) = metallic_transform;
        material.metallic_roughness_texture = loader.binding(
            &label,
            "metallic-roughness",
            info.texture(),
            tex_coord.unwrap_or(info.tex_coord()),
            Space::Data,
            notes,
        )?;
        if material.metallic_roughness_texture.is_some() {
            bound.push(("metallic-roughness", transform));
        }
    }
    if let Some(normal) = m.normal_texture() {
        let (transform, tex_coord) = normal_transform;
        let scale = normal.scale();
        material.normal_scale = if scale.is_finite() { scale } else { 1.0 };
        material.normal_texture = loader.binding(
            &label,
            "normal",
            normal.texture(),
            tex_coord.unwrap_or(normal.tex_coord()),
            Space::Data,
            notes,
        )?;
        if material.normal_texture.is_some() {
            bound.push(("normal", transform));
        }
    }
    let transform = uv_transform(&label, &bound, notes);
    if m.occlusion_texture().is_some() {
        notes.push(format!("{label}: occlusion texture left out (vat's shading has no ambient occlusion)"));
    }
    if m.emissive_texture().is_some() {
        notes.push(format!("{label}: emissive texture left out (the emissive factor is kept)"));
    }
    Ok((material, transform))
}

/// Material `m`'s factors, alpha mode and sidedness (clamped to their ranges), without textures.
fn material_factors(m: &gltf::Material<'_>, label: &str, notes: &mut Vec<String>) -> Material {
    let pbr = m.pbr_metallic_roughness();
    let unit = |v: f32| if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
    Material {
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
    }
}

/// The transform baked into the UVs of a material whose bound textures carry `bound` (in the order
/// base colour, metallic-roughness, normal): the first one's, `None` when that is the identity.
/// When the others differ, one note says which textures are sampled with it instead.
fn uv_transform(label: &str, bound: &[(&str, UvTransform)], notes: &mut Vec<String>) -> Option<UvTransform> {
    let ((first_what, first), rest) = bound.split_first()?;
    let differing: Vec<&str> = rest.iter().filter(|(_, t)| t != first).map(|(what, _)| *what).collect();
    if !differing.is_empty() {
        let all: Vec<String> = bound.iter().map(|(what, t)| format!("{what}: {}", t.describe())).collect();
        notes.push(format!(
            "{label}: its textures carry different KHR_texture_transforms ({}); a vertex has one UV set, so the \
             {first_what} texture's is baked into the UVs and the {} texture{} sampled with it, not with its own",
            all.join("; "),
            differing.join(" and "),
            if differing.len() == 1 { " is" } else { "s are" },
        ));
    }
    (*first != UvTransform::IDENTITY).then_some(*first)
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
    /// The document's JSON, when parsed (for `KHR_texture_basisu`).
    raw: Option<&'c Value>,
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
            let basisu =
                self.raw.map(|r| &r["textures"][texture.index()]["extensions"]["KHR_texture_basisu"]);
            if let Some(ktx2) = basisu.filter(|b| b.is_object()) {
                let image = ktx2["source"].as_u64().map_or_else(String::new, |i| format!(", image {i}"));
                notes.push(format!(
                    "{label}: {what} texture left out: texture {}{image} is KTX2 / Basis Universal \
                     (KHR_texture_basisu), which vat does not decode; the material keeps its factors. {KTX2_FIX}",
                    texture.index()
                ));
                return Ok(None);
            }
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
        if bytes.starts_with(KTX2_MAGIC) {
            return Ok(Err(format!(
                "{name}: a KTX2 / Basis Universal image, which vat does not decode (the material keeps its \
                 factors). {KTX2_FIX}"
            )));
        }
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
