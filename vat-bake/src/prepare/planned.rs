//! The bake proper given a validated plan, and the material sections.

use super::*;

/// The bake proper, given a validated plan (and, in a batch, the shared per-frame transforms).
pub(super) fn prepare_planned(
    rig: &Rig,
    options: &BakeOptions,
    plan: &ClipPlan,
    shared: Option<&mut SharedSampling>,
    progress: &mut dyn FnMut(Progress),
) -> Result<PreparedBake> {
    let mut timings = Vec::new();
    let (rig, mut notes) = with_generated_tangents(rig, options.tangents);
    let rig = rig.as_ref();
    let total_frames = plan.row_map.total_frames();
    refuse_sequence_options(rig, options)?;
    let options = &*skin_residual_options(rig, options)?;
    let skin_residual = options.format == VertexFormat::SkinResidual;
    // Fail on an impossible texture before allocating anything per frame (the frame limit was
    // checked per clip by `plan_clips`; an empty rig fails in VertexSet::from_rig with its own
    // message).
    let body_vertices = u32::try_from(rig.body_vertex_count()).unwrap_or(u32::MAX);
    if body_vertices > 0 {
        VertexTextureLayout::new(body_vertices, total_frames, options.max_texture_dim)?;
    }
    check_memory_budget(rig, options, total_frames)?;
    let capture_nodes = captured_nodes(rig, options)?;
    let attachment_meshes = attachment_meshes(rig)?;
    let samples = plan.samples(rig);

    // The vertex set; its LODs on the original topology, then the locality order; and every
    // frame's pose and the quantisation box.
    let mut set = VertexSet::from_rig(rig)?;
    refuse_missing_tangents(rig, &set, options)?;
    // Sample every frame once: the skinning matrices (and morph weights) of each, and the global
    // node matrices when the bone texture or capture tracks need them.
    let needs_globals = options.bones || !capture_nodes.is_empty();
    // A batch shares the first rig's node matrices.
    let keep_globals = needs_globals && shared.is_none();
    let sampling =
        FrameSampling { rig, plan, samples: &samples, root_motion: options.root_motion, keep_globals };
    let (lods, early_frames) = lods_beside_frames(rig, &mut set, options, &samples, &sampling);
    let ((chain, lod_lists, vertex_order), lods_time) = lods?;
    timings.push(lods_time);
    progress(Progress { stage: "lods", done: 1, total: 1 });
    let n = set.vertex_count();
    let n32 = n as u32;
    // The skeleton is known now: refuse a bone texture that cannot fit before any per-frame work.
    let skeleton = Skeleton::new(rig, &set, &capture_nodes)?;
    if skin_residual && skeleton.bones.is_empty() && rig.streamed_body.is_none() {
        return Err(invalid_option(
            "--format skin-residual",
            format!(
                "rig \"{}\" has no skin (no bones) for the skin-residual format to correct; bake another --format",
                rig.name
            ),
        ));
    }
    if options.bones {
        BoneTextureLayout::new(skeleton.bones.len() as u32, total_frames, options.max_texture_dim)?;
    }
    // Bone mode's live morph layer ([`crate::morph`]), when the body has morph targets.
    let morph_layer = if options.bones {
        crate::morph::bake_morph_layer(rig, &set, &samples, options.max_texture_dim)?
    } else {
        None
    };
    let skin_plan = skin::SkinPlan::new(&set);
    let mut blobs = BlobTable::default();
    let layout = VertexTextureLayout::new(n32, total_frames, options.max_texture_dim)?;
    let (frames, skin_time) = match early_frames {
        Some(frames) => {
            let frames = frames?;
            progress(Progress {
                stage: "skin",
                done: u64::from(total_frames),
                total: u64::from(total_frames),
            });
            frames
        }
        None => timed_result("skin", || sampling.run(&set, &skin_plan, progress))?,
    };
    timings.push(skin_time);
    let SampledFrames { mut poses, bounds, root_tracks, globals: mut sampled_globals } = frames;

    // Skin again, a frame per task into reused buffers, and encode each frame straight into the
    // textures.
    let mut sources = None;
    let (vertex_animation, mut vertex_texture_bytes) = timed(&mut timings, "encode", || {
        if skin_residual {
            // No texel per vertex per frame: the source frames wait for the skin (below).
            let (frames, note) = source_frames(
                rig,
                &set,
                &skin_plan,
                std::mem::take(&mut poses),
                &samples,
                options.root_motion,
            );
            sources = Some(frames);
            notes.extend(note);
            let textures = Vec::new();
            let va = VertexAnimation {
                layout,
                format: options.format,
                bounds,
                position_bits: [0; 3],
                textures,
                tangents: None,
            };
            return Ok((va, 0));
        }
        encode_vertex_animation(rig, &set, &skin_plan, &samples, &poses, bounds, layout, options, &mut blobs)
    })?;
    progress(Progress { stage: "encode", done: 1, total: 1 });
    drop(poses);

    // Bone texture, sockets, captures.
    let (bone_animation, bone_texture_bytes, captures) = timed(&mut timings, "bones", || {
        let globals = match (&shared, needs_globals) {
            (_, false) => None,
            (Some(s), true) => Some(Arc::clone(&s.globals)),
            (None, true) => sampled_globals.take().map(Arc::new),
        };
        bone_sections(&set, &skeleton, globals, &capture_nodes, total_frames, options, shared, &mut blobs)
    })?;
    progress(Progress { stage: "bones", done: 1, total: 1 });

    // LODs, streams, sockets, attachments, materials, manifest.
    let mut texture_notes = Vec::new();
    let manifest = timed(&mut timings, "assemble", || {
        let size = vertex_animation.bounds.extent.iter().fold(0.0f32, |a, &b| a.max(b));
        let (index_bytes, lod_entries) = lod_sections(&chain, &lod_lists, size);
        let streams = vertex_streams(&set, &mut blobs);

        let attachments = attachment_sections(rig, &attachment_meshes, &mut blobs);

        let mut manifest = Manifest::new(rig.name.clone(), n32);
        manifest.clips = plan.row_map.clips().to_vec();
        manifest.vertex_animation = Some(vertex_animation);
        manifest.bone_animation = bone_animation;
        manifest.morph_animation = morph_layer.map(|l| l.into_section(|bytes| blobs.add(bytes)));
        manifest.indices = Some(blobs.add(index_bytes));
        manifest.lods = lod_entries;
        manifest.streams = streams;
        manifest.bones = skeleton.manifest_bones(rig);
        manifest.sockets = manifest_sockets(rig, &skeleton);
        manifest.captures = captures;
        manifest.attachments = attachments;
        if let Some(materials) = &rig.materials {
            set_material_sections(
                &mut manifest,
                materials,
                options.material_texture_size,
                &mut texture_notes,
                |bytes| blobs.add(bytes),
            );
        }
        set_root_motion(&mut manifest, root_tracks, &mut notes);
        Ok(manifest)
    })?;
    let mut manifest = manifest;
    if let Some(sources) = sources {
        let (section, section_notes) = if manifest.bone_animation.is_none() {
            timed(&mut timings, "fit", || {
                let held = sources.held()?;
                fitted_skin_residual(rig, &set, &mut manifest, &mut blobs, &held, options)
            })?
        } else {
            timed(&mut timings, "residual", || {
                let frame =
                    |f: usize, p: &mut [[f32; 3]], nrm: &mut [[f32; 3]]| sources.frame_into(f, p, nrm);
                residual_section(
                    rig,
                    &manifest,
                    &mut blobs,
                    ResidualSource::FrameByFrame(sources.len(), &frame),
                    options,
                )
                .map(|(s, n)| (s, vec![n]))
            })?
        };
        vertex_texture_bytes = u64::from(section.width) * u64::from(section.height) * 8;
        manifest.skin_residual = Some(section);
        notes.extend(section_notes);
        drop(sources);
    }
    notes.extend(texture_notes);
    notes.extend(chain.notes());

    let stats = bake_stats(
        &manifest,
        &chain,
        plan,
        &blobs,
        [vertex_texture_bytes, bone_texture_bytes],
        timings,
        notes,
    );
    check_readable(rig, &manifest, blobs.blobs.len())?;
    Ok(PreparedBake { manifest, blobs: blobs.blobs, vertex_order, stats })
}

/// The manifest's materials and texture arrays of `materials` (layers up to `max_side` texels),
/// their texel blobs added with `add`; notes for every resampled image.
pub(crate) fn material_sections(
    materials: &crate::rig::RigMaterials,
    max_side: u32,
    notes: &mut Vec<String>,
    mut add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) -> (Vec<vat_core::container::Material>, Option<vat_core::container::MaterialTextures>) {
    use vat_core::container::TextureColorSpace;
    let mut array = |images: &[crate::rig::MaterialImage], space| {
        crate::textures::texture_array(images, space, max_side, notes).map(|(mut array, bytes)| {
            array.texels = add(bytes);
            array
        })
    };
    let color = array(&materials.color_images, TextureColorSpace::Srgb);
    let data = array(&materials.data_images, TextureColorSpace::Linear);
    let textures =
        (color.is_some() || data.is_some()).then_some(vat_core::container::MaterialTextures { color, data });
    (materials.materials.clone(), textures)
}

/// The `Uv0` (`F32x2`) and `Color0` (`Unorm8x4`, linear RGBA packed by
/// [`vat_core::backend::gpu::pack_unorm8x4`]) streams of a bake, for whichever of the two it has, blobs added
/// through `add`; shared by the soft and rigid bakes so both write the same element formats.
pub(crate) fn surface_streams(
    uvs: Option<impl Iterator<Item = [f32; 2]>>,
    colors: Option<impl Iterator<Item = [f32; 4]>>,
    mut add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) -> Vec<VertexStream> {
    let mut streams = Vec::new();
    if let Some(uv) = uvs {
        let bytes = f32_bytes(uv.flatten());
        streams.push(VertexStream { kind: StreamKind::Uv0, element: ElementFormat::F32x2, blob: add(bytes) });
    }
    if let Some(colors) = colors {
        let bytes = colors.flat_map(|c| vat_core::backend::gpu::pack_unorm8x4(c).to_le_bytes()).collect();
        streams.push(VertexStream {
            kind: StreamKind::Color0,
            element: ElementFormat::Unorm8x4,
            blob: add(bytes),
        });
    }
    streams
}

/// Fills `manifest`'s `materials`, `material_textures` and `material_variants` from `materials`
/// ([`material_sections`], texture blobs added through `add`, notes on textures left out or
/// shrunk pushed to `notes`); shared by the soft and rigid bakes.
pub(crate) fn set_material_sections(
    manifest: &mut Manifest,
    materials: &crate::rig::RigMaterials,
    max_side: u32,
    notes: &mut Vec<String>,
    add: impl FnMut(Vec<u8>) -> vat_core::container::BlobId,
) {
    let (list, textures) = material_sections(materials, max_side, notes, add);
    manifest.materials = list;
    manifest.material_textures = textures;
    manifest.material_variants = materials.variants.clone();
}

/// The larger horizontal (x or z) extent of the vertex animation's box, metres (0 without one).
pub(super) fn vertex_animation_width(manifest: &Manifest) -> f32 {
    manifest.vertex_animation.as_ref().map_or(0.0, |va| va.bounds.extent[0].max(va.bounds.extent[2]))
}

/// Refuses a bake whose file the `.vat` reader would refuse under its default
/// [`vat_core::container::Limits`] (e.g. more than 4,096 bones with `--bones`), before anything is
/// written, naming the count and the limit.
pub(super) fn check_readable(rig: &Rig, manifest: &Manifest, blob_count: usize) -> Result<()> {
    let limits = vat_core::container::Limits::default();
    let counted = vat_core::container::check_manifest_counts(manifest, &limits).and_then(|()| {
        if blob_count as u64 > u64::from(limits.max_blobs) {
            Err(vat_core::Error::LimitExceeded {
                what: "blob count",
                value: blob_count as u64,
                limit: limits.max_blobs.into(),
            })
        } else {
            Ok(())
        }
    });
    counted.map_err(|e| {
        invalid_input(
            format!("rig \"{}\"", rig.name),
            format!(
                "the baked .vat would not read back ({e}, a limit of the .vat reader); bake less of it \
                 (--clips, --frames or --fps for frames and clips, no --bones for bones, --lods for LODs)"
            ),
        )
    })
}
