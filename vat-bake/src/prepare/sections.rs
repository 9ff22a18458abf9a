//! Container sections: vertex animation, bones, LODs, streams, attachments, sockets, stats.

use super::*;

/// The vertex animation section: every frame of `samples` skinned again from its `poses` (or read
/// again from a streamed sequence), encoded in `options.format` in the box `bounds` into textures
/// of `layout`, added to `blobs`; and the textures' size in bytes.
///
/// Errors: an encoding error ([`vat_core::Error`]) or a streamed frame that cannot be read.
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_vertex_animation(
    rig: &Rig,
    set: &VertexSet,
    skin_plan: &skin::SkinPlan,
    samples: &[(usize, f32)],
    poses: &[skin::FramePose],
    bounds: PositionBounds,
    layout: VertexTextureLayout,
    options: &BakeOptions,
    blobs: &mut BlobTable,
) -> Result<(VertexAnimation, u64)> {
    let format = options.format;
    let n = set.vertex_count();
    let bits = if format == VertexFormat::Packed64 {
        encoding::allocate_position_bits(bounds.extent)
    } else {
        [0; 3]
    };
    let (textures, tangents) = if let Some(body) = &rig.streamed_body {
        // A frame per block, read again from the source.
        let fill = |texels: std::ops::Range<usize>,
                    p: &mut [[f32; 3]],
                    nrm: &mut [[f32; 3]],
                    _: Option<&mut [[f32; 4]]>| {
            match samples.get(texels.start / n) {
                Some(&(clip, time)) => skin::streamed_frame_into(rig, body, set, clip, time, p, nrm),
                None => Ok(()),
            }
        };
        encode_by_block(&layout, format, &bounds, bits, options.normal_rounding, false, n, fill)?
    } else if format == VertexFormat::Packed64
        && options.normal_rounding == NormalRounding::Nearest
        && !options.tangents
    {
        // The default: each frame's texels straight from the skinning kernel's lanes.
        let encoder = encoding::Packed64Encoder::new(&bounds, bits)?;
        let mut texture = vec![0u8; layout.byte_len(8) as usize];
        texture[..samples.len() * n * 8]
            .par_chunks_mut(n * 8)
            .zip(poses.par_iter())
            .for_each(|(texels, pose)| skin::skin_frame_packed64(set, skin_plan, pose, &encoder, texels));
        (vec![texture], None)
    } else {
        let fill = |texels: std::ops::Range<usize>,
                    p: &mut [[f32; 3]],
                    nrm: &mut [[f32; 3]],
                    t: Option<&mut [[f32; 4]]>| {
            // Blocks are whole frames.
            if let Some(pose) = poses.get(texels.start / n) {
                skin::skin_frame_into(set, skin_plan, pose, p, nrm, t);
            }
            Ok(())
        };
        encode_by_block(&layout, format, &bounds, bits, options.normal_rounding, options.tangents, n, fill)?
    };
    let bytes: u64 = textures.iter().chain(&tangents).map(|t| t.len() as u64).sum();
    let texture_ids = textures.into_iter().map(|t| blobs.add(t)).collect();
    let tangent_id = tangents.map(|t| blobs.add(t));
    let va = VertexAnimation {
        layout,
        format,
        bounds,
        position_bits: bits,
        textures: texture_ids,
        tangents: tangent_id,
    };
    Ok((va, bytes))
}

/// The bone animation section (bone mode: the skinning matrix of every bone at every frame, from
/// `globals`, shared with the batch's other rigs of the same bone list; joints and weights per
/// vertex) and the capture tracks of `capture_nodes`, their blobs added to `blobs`; and the bone
/// texture's size in bytes.
///
/// Errors: a bone texture that does not fit `options.max_texture_dim`.
#[allow(clippy::too_many_arguments)]
pub(super) fn bone_sections(
    set: &VertexSet,
    skeleton: &Skeleton,
    globals: Option<Arc<Vec<Vec<Mat4>>>>,
    capture_nodes: &[usize],
    total_frames: u32,
    options: &BakeOptions,
    mut shared: Option<&mut SharedSampling>,
    blobs: &mut BlobTable,
) -> Result<(Option<BoneAnimation>, u64, Vec<CaptureTrack>)> {
    let n = set.vertex_count();
    let mut bone_animation = None;
    let mut bone_bytes = 0u64;
    if let (true, Some(globals)) = (options.bones, &globals) {
        let bone_count = skeleton.bones.len() as u32;
        let layout = BoneTextureLayout::new(bone_count, total_frames, options.max_texture_dim)?;
        let reused = shared.as_ref().and_then(|s| {
            s.bone_textures.iter().find(|(k, _)| *k == skeleton.bones).map(|(_, t)| Arc::clone(t))
        });
        let texture = match reused {
            Some(t) => t,
            None => {
                let len = layout.byte_len(16) as usize;
                let mut out = Vec::with_capacity(len);
                for frame in globals.iter() {
                    for &(node, inverse_bind) in &skeleton.bones {
                        let m = frame.get(node).copied().unwrap_or(Mat4::IDENTITY) * inverse_bind;
                        let c = m.to_cols_array();
                        // Row r of the affine: (m[0][r], m[1][r], m[2][r], m[3][r]).
                        for r in 0..3 {
                            for col in 0..4 {
                                out.extend_from_slice(&c[col * 4 + r].to_le_bytes());
                            }
                        }
                    }
                }
                out.resize(len, 0);
                let t = Arc::new(out);
                if let Some(s) = shared.as_mut() {
                    s.bone_textures.push((skeleton.bones.clone(), Arc::clone(&t)));
                }
                t
            }
        };
        bone_bytes = texture.len() as u64;
        let influences = if set.influence_count <= 4 { 4 } else { 8 };
        let mut joints = Vec::with_capacity(n * influences * 2);
        let mut weights = Vec::with_capacity(n * influences * 4);
        for (j, w) in set.joints.iter().zip(&set.weights) {
            for s in 0..influences {
                let bone = skeleton.from_set.get(usize::from(j[s])).copied().unwrap_or(0);
                joints.extend_from_slice(&bone.to_le_bytes());
                weights.extend_from_slice(&w[s].to_le_bytes());
            }
        }
        bone_animation = Some(BoneAnimation {
            layout,
            texture: blobs.add_shared(texture),
            influences: influences as u32,
            joints: blobs.add(joints),
            weights: blobs.add(weights),
        });
    }
    let mut captures = Vec::new();
    if let Some(globals) = &globals {
        for &node in capture_nodes {
            let bone = skeleton.of_node[node].unwrap_or(0);
            let bytes = f32_bytes(globals.iter().flat_map(|frame| affine_3x4(&frame[node])));
            captures.push(CaptureTrack { bone, blob: blobs.add(bytes) });
        }
    }
    Ok((bone_animation, bone_bytes, captures))
}

/// The index bytes of every LOD (one list after the other, little-endian u32) and their entries,
/// with switch distances from each LOD's error and the asset's `size` (its box's largest extent),
/// in the asset's units, strictly increasing ([`vat_core::format::lod::lod_switch_distances`]).
pub(super) fn lod_sections(chain: &lods::LodChain, lod_lists: &[Vec<u32>], size: f32) -> (Vec<u8>, Vec<Lod>) {
    let mut index_bytes = Vec::with_capacity(lod_lists.iter().map(Vec::len).sum::<usize>() * 4);
    let mut lod_entries = Vec::with_capacity(lod_lists.len());
    let errors: Vec<f32> = chain.levels.iter().map(|l| l.error).collect();
    let distances = vat_core::format::lod::lod_switch_distances(&errors, size);
    for ((list, level), &max_distance) in lod_lists.iter().zip(&chain.levels).zip(&distances) {
        let first_index = (index_bytes.len() / 4) as u32;
        for &v in list {
            index_bytes.extend_from_slice(&v.to_le_bytes());
        }
        lod_entries.push(Lod {
            first_index,
            index_count: list.len() as u32,
            triangle_count: (list.len() / 3) as u32,
            screen_error: level.error,
            max_distance,
        });
    }
    (index_bytes, lod_entries)
}

/// The per-vertex streams of the body (rest position, normal and tangent, UVs, colours, material
/// ids), their blobs added to `blobs` in that order.
pub(super) fn vertex_streams(set: &VertexSet, blobs: &mut BlobTable) -> Vec<VertexStream> {
    let mut streams = vec![
        VertexStream {
            kind: StreamKind::RestPosition,
            element: ElementFormat::F32x3,
            blob: blobs.add(vec3_bytes(&set.positions)),
        },
        VertexStream {
            kind: StreamKind::RestNormal,
            element: ElementFormat::F32x3,
            blob: blobs.add(vec3_bytes(&set.normals)),
        },
    ];
    if let Some(t) = &set.tangents {
        let bytes = f32_bytes(t.iter().flat_map(|v: &Vec4| v.to_array()));
        streams.push(VertexStream {
            kind: StreamKind::RestTangent,
            element: ElementFormat::F32x4,
            blob: blobs.add(bytes),
        });
    }
    streams.extend(surface_streams(
        set.uvs.as_ref().map(|uv| uv.iter().map(|v| v.to_array())),
        set.colors.as_ref().map(|c| c.iter().map(|v| v.to_array())),
        |bytes| blobs.add(bytes),
    ));
    streams.push(VertexStream {
        kind: StreamKind::MaterialId,
        element: ElementFormat::U8,
        blob: blobs.add(set.material_ids.clone()),
    });
    streams
}

/// The attachment meshes (`(mesh index, name)`) as manifest entries, their blobs added to `blobs`
/// (positions, normals, material ids, indices of each in turn).
pub(super) fn attachment_sections(
    rig: &Rig,
    attachment_meshes: &[(usize, String)],
    blobs: &mut BlobTable,
) -> Vec<Attachment> {
    attachment_meshes
        .iter()
        .map(|(mi, name)| {
            let m = &rig.meshes[*mi];
            let socket = match m.role {
                MeshRole::Attachment { socket } => socket as u32,
                MeshRole::Body => 0,
            };
            Attachment {
                name: name.clone(),
                socket,
                vertex_count: m.vertex_count() as u32,
                positions: blobs.add(vec3_bytes(&m.positions)),
                normals: blobs.add(vec3_bytes(&m.normals)),
                material_ids: blobs.add(m.material_ids.clone()),
                indices: blobs.add(m.indices.iter().flat_map(|i| i.to_le_bytes()).collect()),
            }
        })
        .collect()
}

/// Refuses the options that do not apply to a streamed mesh sequence (no skeleton, tangent frames
/// or nodes).
///
/// Errors: [`BakeError::InvalidOption`] naming the first such option given.
pub(super) fn refuse_sequence_options(rig: &Rig, options: &BakeOptions) -> Result<()> {
    if rig.streamed_body.is_some() {
        // A streamed mesh sequence is positions and normals per frame: nothing to skin, no nodes.
        let refused = [
            ("--bones", options.bones),
            ("--tangents", options.tangents),
            ("--root-motion", options.root_motion),
            ("--capture", !options.captures.is_empty()),
        ];
        if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
            return Err(invalid_option(
                flag,
                format!(
                    "does not apply to mesh sequence \"{}\" (a soft-body sequence stores positions and normals per \
                 frame: no skeleton, tangent frames or nodes)",
                    rig.name
                ),
            ));
        }
    }
    Ok(())
}

/// The rig's sockets as manifest entries, each on its node's bone of `skeleton`.
pub(super) fn manifest_sockets(rig: &Rig, skeleton: &Skeleton) -> Vec<ManifestSocket> {
    rig.sockets
        .iter()
        .map(|s| ManifestSocket {
            name: s.name.clone(),
            bone: skeleton.of_node[s.node].unwrap_or(0),
            local: affine_3x4(&s.local),
        })
        .collect()
}

/// Stores the root motion `tracks` in `manifest`, with a note per clip: a looping clip that travels
/// (more than 1 % of the body's width per cycle) strides by its track; one in place keeps its
/// measured stride.
pub(super) fn set_root_motion(
    manifest: &mut Manifest,
    tracks: Vec<vat_core::root_motion::RootMotionTrack>,
    notes: &mut Vec<String>,
) {
    let width = vertex_animation_width(manifest);
    for track in &tracks {
        if let Some(clip) = manifest.clips.get_mut(track.clip as usize) {
            let travels = clip.mode == ClipMode::Looping && track.cycle.distance() > 0.01 * width;
            if travels {
                clip.stride = track.cycle.distance();
            }
            notes.push(crate::root_motion::note(clip, track, travels));
        }
    }
    manifest.root_motion = tracks;
}

/// The figures of a bake: `texture_bytes` are the vertex and bone textures' sizes. A skin-residual
/// bake whose animation takes more bytes a vertex a frame than packed64 would is said in a note.
pub(super) fn bake_stats(
    manifest: &Manifest,
    chain: &lods::LodChain,
    plan: &ClipPlan,
    blobs: &BlobTable,
    texture_bytes: [u64; 2],
    timings: Vec<StageTiming>,
    mut notes: Vec<String>,
) -> BakeStats {
    let [vertex_texture_bytes, bone_texture_bytes] = texture_bytes;
    let va = manifest.vertex_animation.as_ref();
    let residual = manifest.skin_residual.as_ref();
    let residual_bytes = vat_core::format::skin_residual::bytes_per_vertex_frame(manifest, |id| {
        blobs.blobs.get(id.0 as usize).map_or(0, |b| b.len() as u64)
    });
    if let Some(bytes) = residual_bytes {
        let packed = VertexFormat::Packed64.bytes_per_vertex_frame();
        if bytes > f64::from(packed) {
            // The skin's tables (bones a frame, joints and weights a vertex, morph weights a frame)
            // are shared by too few vertices or frames to pay for themselves.
            notes.push(format!(
                "skin-residual: {bytes:.3} bytes a vertex a frame, more than packed64's {packed} for this asset \
                 ({} vertices, {} frames: its skin's bones, joints, weights and morph layer are shared by too few \
                 vertices or frames); --format packed64 makes a smaller file",
                manifest.vertex_count,
                plan.row_map.total_frames()
            ));
        }
    }
    BakeStats {
        vertex_count: manifest.vertex_count,
        triangle_counts: chain.levels.iter().map(|l| l.triangle_count() as u32).collect(),
        lod_errors_m: chain.levels.iter().map(|l| l.error).collect(),
        stalled_lods: chain.dropped.iter().map(|d| d.requested as u32).collect(),
        clips: plan.row_map.len() as u32,
        frames: plan.row_map.total_frames(),
        texture_width: residual.map_or(va.map_or(0, |v| v.layout.width), |r| r.width),
        texture_height: residual.map_or(va.map_or(0, |v| v.layout.height), |r| r.height),
        bytes_per_vertex_frame: va.map_or(0, |v| v.format.bytes_per_vertex_frame()),
        animation_bytes_per_vertex_frame: residual_bytes
            .unwrap_or_else(|| f64::from(va.map_or(0, |v| v.format.bytes_per_vertex_frame()))),
        vertex_texture_bytes,
        bone_texture_bytes,
        blob_bytes: blobs.blobs.iter().map(|b| b.len() as u64).sum(),
        deduplicated_blobs: blobs.deduplicated,
        warnings: plan
            .warnings
            .iter()
            .cloned()
            .chain(chain.dropped.iter().map(ToString::to_string))
            .collect(),
        clip_looping: plan.looping.clone(),
        timings,
        notes: crate::notes::collapse(notes),
    }
}

/// A bake's LOD chain, its index lists in the final vertex order, and that order ([`build_lods`]).
pub(super) type LodBuild = (lods::LodChain, Vec<Vec<u32>>, Vec<u32>);

/// A stage's result with its figure.
pub(super) type Timed<T> = Result<(T, StageTiming)>;

/// [`build_lods`] on `set`, and beside it, when it can run there, `sampling` of every frame on a
/// copy of `set` before the reorder: the box does not depend on the vertex order (each vertex
/// skins alike in any order; min and max are exact). Root motion is fitted to frames in the final
/// vertex order (its sums depend on the order), and a streamed sequence's frames are read after:
/// those are not sampled here (`None`), nor is progress reported.
pub(super) fn lods_beside_frames(
    rig: &Rig,
    set: &mut VertexSet,
    options: &BakeOptions,
    samples: &[(usize, f32)],
    sampling: &FrameSampling<'_>,
) -> (Timed<LodBuild>, Option<Timed<SampledFrames>>) {
    if options.root_motion || rig.streamed_body.is_some() {
        return (timed_result("lods", || build_lods(rig, set, options, samples)), None);
    }
    let unordered = set.clone();
    let (lods, frames) = rayon::join(
        || timed_result("lods", || build_lods(rig, set, options, samples)),
        || timed_result("skin", || sampling.run(&unordered, &skin::SkinPlan::new(&unordered), &mut |_| {})),
    );
    (lods, Some(frames))
}
