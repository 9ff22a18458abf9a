//! The manifest's validation against the file: every section's counts, sizes, names and blobs
//! ([`validate_manifest`]), the materials.

pub(crate) use super::*;

/// Everything about the manifest beyond the blob table. Returns the clip row map.
pub(crate) fn validate_manifest(m: &Manifest, bytes: &[u8], limits: &Limits) -> Result<ClipRowMap> {
    // Counts first, so nothing below loops or multiplies over an absurd count.
    if m.vertex_count == 0 {
        return Err(Error::ZeroCount { what: "vertex count" });
    }
    check_manifest_counts(m, limits)?;
    let vertex_count = u64::from(m.vertex_count);
    let bone_count = m.bones.len() as u64;

    let clip_map = ClipRowMap::from_clips(m.clips.clone())?;
    let frame_count = u64::from(clip_map.total_frames());
    within("frame count", frame_count, limits.max_frames.into())?;
    unique("clip", m.clips.iter().map(|c| c.name.as_str()))?;

    check_vertex_animation(m, bytes, limits, vertex_count, frame_count)?;
    check_bone_animation(m, bytes, limits, vertex_count, frame_count, bone_count)?;
    crate::format::skin_residual::check_skin_residual(m, bytes, limits, vertex_count, frame_count)?;
    if let Some(ma) = &m.morph_animation {
        validate_morph_animation(ma, m, bytes, limits, vertex_count, frame_count)?;
    }

    check_indices_and_lods(m, bytes, vertex_count)?;
    let mut kinds = HashSet::new();
    for s in &m.streams {
        if !kinds.insert(s.kind) {
            return Err(Error::DuplicateName { what: "vertex stream kind", name: format!("{:?}", s.kind) });
        }
        if !s.kind.accepts(s.element) {
            return Err(Error::OutOfRange {
                what: "vertex stream element format",
                value: format!("{:?} for {:?}", s.element, s.kind),
                expected: s.kind.accepted_formats(),
            });
        }
        sized_blob(bytes, m, s.blob, "vertex stream", vertex_count * u64::from(s.element.byte_size()))?;
    }

    for (i, b) in m.bones.iter().enumerate() {
        if let Some(parent) = b.parent
            && parent as usize >= i
        {
            return Err(Error::BadBoneParent { bone: i as u32, parent });
        }
    }

    for s in &m.sockets {
        if u64::from(s.bone) >= bone_count {
            return Err(Error::IndexOutOfRange {
                what: "socket bone",
                index: s.bone.into(),
                count: bone_count,
            });
        }
        check_finite("socket transform", &s.local)?;
    }
    unique("socket", m.sockets.iter().map(|s| s.name.as_str()))?;

    let mut captured = HashSet::new();
    for c in &m.captures {
        if u64::from(c.bone) >= bone_count {
            return Err(Error::IndexOutOfRange {
                what: "capture bone",
                index: c.bone.into(),
                count: bone_count,
            });
        }
        if !captured.insert(c.bone) {
            return Err(Error::DuplicateName { what: "capture track for bone", name: c.bone.to_string() });
        }
        sized_blob(bytes, m, c.blob, "capture track", frame_count * 48)?;
    }

    for a in &m.attachments {
        if a.socket as usize >= m.sockets.len() {
            return Err(Error::IndexOutOfRange {
                what: "attachment socket",
                index: a.socket.into(),
                count: m.sockets.len() as u64,
            });
        }
        if a.vertex_count == 0 {
            return Err(Error::ZeroCount { what: "attachment vertex count" });
        }
        within("attachment vertex count", a.vertex_count.into(), limits.max_vertices.into())?;
        let n = u64::from(a.vertex_count);
        sized_blob(bytes, m, a.positions, "attachment positions", n * 12)?;
        sized_blob(bytes, m, a.normals, "attachment normals", n * 12)?;
        sized_blob(bytes, m, a.material_ids, "attachment material ids", n)?;
        let indices = blob_bytes(bytes, m, a.indices, "attachment indices")?;
        if indices.is_empty() || indices.len() % 12 != 0 {
            return Err(Error::BlobSizeMismatch {
                what: "attachment indices (whole triangles of u32)",
                blob: a.indices.0,
                expected: 12 * (indices.len() as u64 / 12).max(1),
                actual: indices.len() as u64,
            });
        }
        for chunk in indices.chunks_exact(4) {
            let index = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            if index >= a.vertex_count {
                return Err(Error::IndexOutOfRange {
                    what: "attachment index",
                    index: index.into(),
                    count: n,
                });
            }
        }
    }
    unique("attachment", m.attachments.iter().map(|a| a.name.as_str()))?;

    // Each mode's own section, through the mode table.
    let check = crate::modes::SectionCheck {
        manifest: m,
        bytes,
        limits,
        vertex_count,
        frame_count,
        clip_map: &clip_map,
    };
    for entry in &crate::modes::MODES {
        if (entry.present)(m) {
            (entry.validate)(&check)?;
        }
    }
    validate_materials(m, bytes, limits)?;
    validate_root_motion(m)?;
    if let Some(tier) = &m.impostors {
        crate::format::impostor::validate_impostor_tier(tier, m, bytes, limits)?;
    }
    if m.impostor_material_variants > 0 && m.impostors.is_none() {
        return Err(crate::Error::MissingSection {
            what: "impostor tier (colour images per material variant are a tier's)",
        });
    }
    if let Some(bound) = m.impostor_one_view_bound {
        crate::format::impostor::validate_one_view_bound(bound, m)?;
    }

    Ok(clip_map)
}

/// The index blob and the LOD table: ranges inside the indices, every index below the vertex count.
pub(crate) fn check_indices_and_lods(m: &Manifest, bytes: &[u8], vertex_count: u64) -> Result<()> {
    match (m.indices, m.lods.is_empty()) {
        (None, true) => {}
        (None, false) => return Err(Error::MissingSection { what: "the index blob its LODs refer to" }),
        (Some(_), true) => return Err(Error::MissingSection { what: "LODs for its index blob" }),
        (Some(id), false) => {
            let data = blob_bytes(bytes, m, id, "index blob")?;
            expect_equal("index blob length modulo 4", 0, data.len() as u64 % 4)?;
            let available = data.len() as u64 / 4;
            for c in data.chunks_exact(4) {
                let index = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                if u64::from(index) >= vertex_count {
                    return Err(Error::IndexOutOfRange {
                        what: "vertex index",
                        index: index.into(),
                        count: vertex_count,
                    });
                }
            }
            let mut previous_distance = 0.0f32;
            for (i, lod) in m.lods.iter().enumerate() {
                let end = u64::from(lod.first_index) + u64::from(lod.index_count);
                if end > available {
                    return Err(Error::LodRangeOutOfBounds {
                        lod: i as u32,
                        first_index: lod.first_index,
                        index_count: lod.index_count,
                        available,
                    });
                }
                if lod.triangle_count == 0 {
                    return Err(Error::ZeroCount { what: "LOD triangle count" });
                }
                expect_equal(
                    "LOD index count (3 x triangle count)",
                    u64::from(lod.triangle_count) * 3,
                    lod.index_count.into(),
                )?;
                if !(lod.screen_error.is_finite() && lod.screen_error >= 0.0) {
                    return Err(Error::OutOfRange {
                        what: "LOD screen error",
                        value: lod.screen_error.to_string(),
                        expected: "finite and >= 0 metres",
                    });
                }
                // NaN fails both comparisons' negation below, so it is refused too.
                if !(lod.max_distance > 0.0 && lod.max_distance >= previous_distance) {
                    return Err(Error::OutOfRange {
                        what: "LOD max distance",
                        value: lod.max_distance.to_string(),
                        expected: "> 0 metres and not less than the previous LOD's",
                    });
                }
                previous_distance = lod.max_distance;
            }
        }
    }

    Ok(())
}

/// The materials and their texture arrays: counts, finite factors in range, every texture binding
/// a layer of the right array, full mip chains, exact blob sizes, and every material id of the
/// `MaterialId` stream and the attachments below the material count.
pub(crate) fn validate_materials(m: &Manifest, bytes: &[u8], limits: &Limits) -> Result<()> {
    within("material count", m.materials.len() as u64, super::super::MAX_MATERIALS as u64)?;
    let textures = m.material_textures.as_ref();
    if textures.is_some() && m.materials.is_empty() {
        return Err(Error::MissingSection { what: "materials (the asset has material textures)" });
    }
    let arrays = [
        (
            "colour texture array",
            textures.and_then(|t| t.color.as_ref()),
            super::super::TextureColorSpace::Srgb,
        ),
        (
            "data texture array",
            textures.and_then(|t| t.data.as_ref()),
            super::super::TextureColorSpace::Linear,
        ),
    ];
    for (what, array, space) in arrays {
        let Some(a) = array else { continue };
        if a.color_space != space {
            return Err(Error::OutOfRange {
                what,
                value: format!("{:?}", a.color_space),
                expected: "Srgb for the colour array, Linear for the data array",
            });
        }
        if a.width == 0 || a.height == 0 {
            return Err(Error::ZeroCount { what: "material texture layer size" });
        }
        within("material texture width", a.width.into(), limits.max_texture_dimension.into())?;
        within("material texture height", a.height.into(), limits.max_texture_dimension.into())?;
        if a.layers.is_empty() {
            return Err(Error::ZeroCount { what: "material texture layers" });
        }
        within("material texture layers", a.layers.len() as u64, super::super::MAX_TEXTURE_LAYERS as u64)?;
        let full = super::super::TextureArray::full_mip_levels(a.width, a.height);
        expect_equal("material texture mip levels (the full chain)", full.into(), a.mip_levels.into())?;
        let len = a.byte_len().ok_or(Error::LimitExceeded {
            what: "material texture bytes",
            value: u64::MAX,
            limit: limits.max_total_bytes,
        })?;
        sized_blob(bytes, m, a.texels, what, len)?;
    }
    let layers = |a: Option<&super::super::TextureArray>| a.map_or(0, |a| a.layers.len() as u64);
    let color_layers = layers(arrays[0].1);
    let data_layers = layers(arrays[1].1);
    for mat in &m.materials {
        check_finite("material base colour factor", &mat.base_color_factor)?;
        check_finite("material factors", &[mat.metallic_factor, mat.roughness_factor, mat.normal_scale])?;
        check_finite("material emissive factor", &mat.emissive_factor)?;
        let unit = |what: &'static str, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::OutOfRange { what, value: v.to_string(), expected: "0..=1" })
            }
        };
        for &c in &mat.base_color_factor {
            unit("material base colour factor", c)?;
        }
        unit("material metallic factor", mat.metallic_factor)?;
        unit("material roughness factor", mat.roughness_factor)?;
        if let super::super::AlphaMode::Mask { cutoff } = mat.alpha_mode {
            check_finite("material alpha cutoff", &[cutoff])?;
            unit("material alpha cutoff", cutoff)?;
        }
        if mat.emissive_factor.iter().any(|&e| e < 0.0) {
            return Err(Error::OutOfRange {
                what: "material emissive factor",
                value: format!("{:?}", mat.emissive_factor),
                expected: ">= 0",
            });
        }
        let bindings = [
            ("base colour texture layer", &mat.base_color_texture, color_layers),
            ("metallic-roughness texture layer", &mat.metallic_roughness_texture, data_layers),
            ("normal texture layer", &mat.normal_texture, data_layers),
        ];
        for (what, binding, count) in bindings {
            if let Some(b) = binding
                && u64::from(b.layer) >= count
            {
                return Err(Error::IndexOutOfRange { what, index: b.layer.into(), count });
            }
        }
    }
    within("material variant count", m.material_variants.len() as u64, 255)?;
    if !m.material_variants.is_empty() && m.materials.is_empty() {
        return Err(Error::MissingSection { what: "materials (the asset has material variants)" });
    }
    for variant in &m.material_variants {
        expect_equal(
            "material variant entries (one per material)",
            m.materials.len() as u64,
            variant.materials.len() as u64,
        )?;
        if let Some(&bad) = variant.materials.iter().find(|&&k| usize::from(k) >= m.materials.len()) {
            return Err(Error::IndexOutOfRange {
                what: "material variant material",
                index: bad.into(),
                count: m.materials.len() as u64,
            });
        }
    }
    if m.materials.is_empty() {
        return Ok(());
    }
    let count = m.materials.len() as u64;
    let check_ids = |what: &'static str, element: ElementFormat, data: &[u8]| -> Result<()> {
        let width = match element {
            ElementFormat::U8 => 1,
            ElementFormat::U16 => 2,
            _ => 4,
        };
        for chunk in data.chunks_exact(width) {
            let mut word = [0u8; 4];
            word[..width].copy_from_slice(chunk);
            let id = u32::from_le_bytes(word);
            if u64::from(id) >= count {
                return Err(Error::IndexOutOfRange { what, index: id.into(), count });
            }
        }
        Ok(())
    };
    if let Some(s) = m.streams.iter().find(|s| s.kind == StreamKind::MaterialId) {
        check_ids("material id", s.element, blob_bytes(bytes, m, s.blob, "material ids")?)?;
    }
    for a in &m.attachments {
        check_ids(
            "attachment material id",
            ElementFormat::U8,
            blob_bytes(bytes, m, a.material_ids, "attachment material ids")?,
        )?;
    }
    Ok(())
}
