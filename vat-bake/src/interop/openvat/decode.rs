//! Reading and decoding an OpenVAT bake into a mesh sequence.

use super::*;

/// Reads and decodes an OpenVAT bake folder into glTF-space frames (see the module docs).
///
/// # Errors
/// [`BakeError::Interop`] for missing files, a texture whose size disagrees with the sidecar
/// (`Frames`, `2 Frames` with packed normals) or with the mesh's `TEXCOORD_1`, a separate normal
/// texture of another size, texel values that are not finite or fall outside the sidecar's bounds,
/// clips outside the baked frames, a mesh that does not match the texture; [`BakeError::OverBudget`]
/// past `options.max_memory`; glTF errors of the mesh.
pub fn read_openvat(dir: &Path, options: &OpenVatOptions) -> Result<ImportedBake> {
    let files = locate(dir, options)?;
    let mut budget = Budget::new(options.max_memory);
    let side_bytes = crate::interop::read_file_scaled(
        &files.sidecar,
        "the sidecar",
        &mut budget,
        crate::interop::JSON_BYTES_PER_TEXT_BYTE,
    )?;
    let info = parse_remap_info(&files.sidecar, &side_bytes)?;
    let texture = images::read_texture(&files.texture, "the position texture", &mut budget)?;
    let normal_texture = match (&files.normals, options.recompute_normals) {
        (Some(p), false) => Some(images::read_texture(p, "the normal texture", &mut budget)?),
        _ => None,
    };
    let mesh = crate::interop::read_lookup_mesh(&files.mesh, &mut budget)?;
    decode(&files, &info, &texture, normal_texture.as_ref(), &mesh, options, &mut budget)
}

/// Decodes parsed parts (split from [`read_openvat`] for the fuzz targets).
pub fn decode(
    files: &OpenVatFiles,
    info: &RemapInfo,
    texture: &Texture,
    normal_texture: Option<&Texture>,
    mesh: &LookupMesh,
    options: &OpenVatOptions,
    budget: &mut Budget,
) -> Result<ImportedBake> {
    let mut notes = info.notes.clone();
    notes.extend(files.mesh_note.clone());
    notes.extend(mesh.notes.iter().cloned());
    let (w, h, frames) = (texture.width, texture.height, info.frames);
    let lookup = lookup_texels(mesh, &files.mesh, w, h, &|_| false)?;
    let layout = block_layout(files, &lookup, mesh, texture, frames)?;
    notes.extend(layout.note.clone());
    let packed = layout.normal_row.is_some();
    check_shared_texels(mesh, &lookup, &files.mesh)?;
    if let Some(nt) = normal_texture
        && (nt.width != w || nt.height != h)
    {
        return Err(bad(
            files.normals.as_deref().unwrap_or(&files.texture),
            "the normal texture",
            format!("is {} x {}, the position texture {w} x {h}: they must match", nt.width, nt.height),
        ));
    }
    let n = mesh.positions.len();
    // Positions and normals per frame, the morph deltas made from them, the weights channels.
    let clip_keys = info.clips.len().max(1) as u64 * (frames as u64 + 1);
    budget.charge(
        "the decoded frames",
        (frames as u64)
            .saturating_mul(n as u64)
            .saturating_mul(48)
            .saturating_add(clip_keys.saturating_mul(frames as u64).saturating_mul(4)),
    )?;
    let min = Vec3::from(info.min);
    let range = Vec3::from(info.max) - min;
    let normal_matrices: Vec<Mat3> = mesh.linear.iter().map(|l| l.inverse().transpose()).collect();
    let normal_source = match (normal_texture, packed, options.recompute_normals) {
        (_, _, true) => None,
        (Some(nt), _, _) => Some((nt, 0usize)),
        (None, true, _) => Some((texture, layout.normal_row.unwrap_or(0))),
        (None, false, _) => None,
    };
    if packed && normal_texture.is_some() {
        notes.push(
            "the position texture also packs normals; those of the separate _vnrm texture were used".into(),
        );
    }
    let mut positions = Vec::with_capacity(frames);
    let mut normals = normal_source.map(|_| Vec::with_capacity(frames));
    for f in 0..frames {
        let mut pf = Vec::with_capacity(n);
        for v in 0..n {
            let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + f);
            let t = texture.at(c, row);
            let t3 = Vec3::new(t[0], t[1], t[2]);
            if !t3.is_finite() || t3.min_element() < -RANGE_SLACK || t3.max_element() > 1.0 + RANGE_SLACK {
                return Err(bad(
                    &files.texture,
                    format!("texel ({c}, {row})"),
                    format!(
                        "holds {t3}, outside [0, 1]: the sidecar's Min/Max do not bound the offsets (or the file is not an OpenVAT texture)"
                    ),
                ));
            }
            let offset = blender_to_gltf(min + t3 * range);
            let m = mesh.mesh_of[v] as usize;
            pf.push(mesh.positions[v] + mesh.linear[m] * offset);
        }
        positions.push(pf);
        if let (Some(all), Some((nt, base))) = (normals.as_mut(), normal_source) {
            let mut nf = Vec::with_capacity(n);
            for v in 0..n {
                let (c, row) = (lookup.col[v] as usize, lookup.row[v] as usize + base + f);
                let t = nt.at(c, row);
                let raw = Vec3::new(t[0], t[1], t[2]) * 2.0 - Vec3::ONE;
                if !(raw.is_finite() && (0.5..=1.5).contains(&raw.length())) {
                    return Err(bad(
                        files.normals.as_deref().unwrap_or(&files.texture),
                        format!("texel ({c}, {row})"),
                        format!(
                            "holds {raw} as a normal, not a unit vector: {}",
                            if base > 0 {
                                "the rows there do not hold packed normals"
                            } else {
                                "not an OpenVAT normal texture"
                            }
                        ),
                    ));
                }
                let m = mesh.mesh_of[v] as usize;
                let normal =
                    (normal_matrices[m] * blender_to_gltf(raw)).try_normalize().ok_or_else(|| {
                        bad(
                            files.normals.as_deref().unwrap_or(&files.texture),
                            format!("texel ({c}, {row})"),
                            format!("holds {raw} as a normal: not a direction"),
                        )
                    })?;
                nf.push(normal);
            }
            all.push(nf);
        }
    }
    if normals.is_none() {
        notes.push(if options.recompute_normals {
            "normals recomputed per frame from the decoded positions (--recompute-normals)".to_owned()
        } else {
            "the bake has no normals (no _vnrm texture, no packed rows): recomputed per frame from the decoded positions".to_owned()
        });
    }
    let clips = clip_table(files, info, frames, options, &mut notes)?;
    let step = texture.kind.half_step();
    let scale = mesh
        .linear
        .iter()
        .map(|l| l.x_axis.length().max(l.y_axis.length()).max(l.z_axis.length()))
        .fold(0.0f32, f32::max);
    let g = blender_to_gltf(range).abs() * step * scale;
    let fps = clips.first().map_or(options.fps, |c| c.fps);
    let sequence = MeshSequence {
        name: files.name.clone(),
        positions,
        normals,
        uvs: mesh.uvs.clone(),
        indices: mesh.indices.clone(),
        fps,
        notes: Vec::new(),
    };
    sequence.validate()?;
    Ok(ImportedBake { sequence, clips, source_step: g.to_array(), notes })
}

/// The sidecar's clips as rows of the texture (scene frame minus the first row's frame,
/// `--first-frame` or guessed), sorted; one looping clip over all frames when it has none. Notes
/// the framerates and looping assumed.
fn clip_table(
    files: &OpenVatFiles,
    info: &RemapInfo,
    frames: usize,
    options: &OpenVatOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<ImportedClip>> {
    // Clips: scene frames -> rows.
    let base = options.first_frame.unwrap_or(if info.clips.iter().any(|c| c.start == 0) { 0 } else { 1 });
    let mut clips = Vec::new();
    for c in &info.clips {
        let (first, last) = (c.start - base, c.end - base);
        if first < 0 || last >= frames as i64 {
            return Err(bad(
                &files.sidecar,
                format!("animations.{:?}", c.name),
                format!(
                    "frames {}..={} are rows {first}..={last} with the texture's first row as frame {base}, outside its {frames} frames (set the first row's frame with --first-frame)",
                    c.start, c.end
                ),
            ));
        }
        let fps = c.fps.unwrap_or(options.fps);
        if c.fps.is_none() {
            notes.push(format!("clip {:?} has no framerate: {fps} fps assumed (--fps)", c.name));
        }
        let looping = c.looping.unwrap_or(true);
        if c.looping.is_none() {
            notes.push(format!("clip {:?} does not say whether it loops: looping assumed", c.name));
        }
        clips.push(ImportedClip {
            name: c.name.clone(),
            first: first as usize,
            last: last as usize,
            fps,
            looping,
        });
    }
    if clips.is_empty() {
        notes.push(format!(
            "the sidecar has no clip table: one looping clip {:?} over all {frames} frames at {} fps (--fps)",
            files.name, options.fps
        ));
        clips.push(ImportedClip {
            name: files.name.clone(),
            first: 0,
            last: frames - 1,
            fps: options.fps,
            looping: true,
        });
    } else {
        notes.push(format!(
            "clip frames read with the texture's first row as scene frame {base} (row = frame - {base})"
        ));
        // Rows no clip plays are not baked: say which.
        let mut played = vec![false; frames];
        for c in &clips {
            played.iter_mut().take(c.last.saturating_add(1)).skip(c.first).for_each(|p| *p = true);
        }
        let left: Vec<usize> = (0..frames).filter(|&r| !played[r]).collect();
        if !left.is_empty() {
            notes.push(format!(
                "rows {} ({} of the texture's {frames} frames) are in no clip of the sidecar: not baked (add \
                 a clip over them to keep them)",
                crate::notes::index_ranges(&left),
                left.len()
            ));
        }
    }
    clips.sort_by(|a, b| (a.first, a.last, &a.name).cmp(&(b.first, b.last, &b.name)));
    Ok(clips)
}
