//! Tangents, LOD builds, frame sampling, the skeleton and captured nodes.

use super::*;

/// `rig`, with tangents generated for its body meshes without TANGENT when `tangents` asks for
/// them (`--tangents`: MikkTSpace, or without UVs a perpendicular basis), and a note per such
/// mesh. Deterministic: verification generates the same tangents to check a bake against.
pub(crate) fn with_generated_tangents(rig: &Rig, tangents: bool) -> (std::borrow::Cow<'_, Rig>, Vec<String>) {
    let missing = rig.meshes.iter().any(|m| m.role == MeshRole::Body && m.tangents.is_none());
    if !(tangents && missing) {
        return (std::borrow::Cow::Borrowed(rig), Vec::new());
    }
    let mut owned = rig.clone();
    let notes = crate::tangents::generate_missing(&mut owned).iter().map(ToString::to_string).collect();
    (std::borrow::Cow::Owned(owned), notes)
}

/// Refuses `--tangents` when the body's vertex `set` has none (after [`with_generated_tangents`]).
pub(super) fn refuse_missing_tangents(rig: &Rig, set: &VertexSet, options: &BakeOptions) -> Result<()> {
    if options.tangents && set.tangents.is_none() {
        return Err(invalid_option(
            "--tangents",
            format!("rig \"{}\" has no tangents on its body meshes", rig.name),
        ));
    }
    Ok(())
}

/// [`timed`] for a stage that may run beside another: its figure is returned, not pushed.
pub(super) fn timed_result<T>(stage: &'static str, f: impl FnOnce() -> Result<T>) -> Timed<T> {
    let start = Instant::now();
    let out = f()?;
    Ok((out, StageTiming { stage, seconds: start.elapsed().as_secs_f64() }))
}

/// The LOD chain of `set` on its original topology (simplified with the rest pose and a few
/// reference poses of `samples`), then `set` put in the locality order (unless
/// [`BakeOptions::optimize_vertex_order`] is off): the chain, its index lists in the new order and
/// the order (new index -> original index).
pub(super) fn build_lods(
    rig: &Rig,
    set: &mut VertexSet,
    options: &BakeOptions,
    samples: &[(usize, f32)],
) -> Result<(lods::LodChain, Vec<Vec<u32>>, Vec<u32>)> {
    let n = set.vertex_count();
    let references = LOD_REFERENCE_POSES.min(samples.len());
    let picked: Vec<(usize, f32)> =
        (0..references).map(|j| samples[(2 * j + 1) * samples.len() / (2 * references)]).collect();
    let poses = skin::skin_clip_frames(rig, set, &picked, false)?;
    let pose_refs: Vec<&[Vec3]> = poses.iter().map(|f| f.positions.as_slice()).collect();
    let surface = lods::LodSurface {
        normals: Some(&set.normals),
        uvs: set.uvs.as_deref(),
        colors: set.colors.as_deref(),
        groups: None,
    };
    let chain =
        lods::build_lod_chain_surface(&set.positions, &set.indices, &pose_refs, &surface, &options.lods)?;
    let mut lists = chain.index_lists();
    let order = if options.optimize_vertex_order {
        lods::reorder_for_locality(set, &mut lists)?
    } else {
        (0..n as u32).collect()
    };
    Ok((chain, lists, order))
}

/// What sampling every frame gives the encoder: each frame's skinning matrices and morph weights
/// (empty for a streamed sequence, whose frames are read again), the quantisation box, the root
/// motion tracks, and the global node matrices when kept.
pub(super) struct SampledFrames {
    pub(super) poses: Vec<skin::FramePose>,
    pub(super) bounds: PositionBounds,
    pub(super) root_tracks: Vec<vat_core::root_motion::RootMotionTrack>,
    pub(super) globals: Option<Vec<Vec<Mat4>>>,
}

/// Sampling every frame of a bake: see [`FrameSampling::run`].
pub(super) struct FrameSampling<'a> {
    pub(super) rig: &'a Rig,
    pub(super) plan: &'a ClipPlan,
    /// `(rig clip, absolute time)` of every frame, in texture order.
    pub(super) samples: &'a [(usize, f32)],
    /// Fit and remove each clip's root motion ([`BakeOptions::root_motion`]).
    pub(super) root_motion: bool,
    /// Keep every frame's global node matrices (bone texture, capture tracks).
    pub(super) keep_globals: bool,
}

impl FrameSampling<'_> {
    /// Samples every frame of the plan on `set` (skinned with `skin_plan`, made from it): the poses,
    /// root motion fitted and removed (in place), and the box of every skinned position (nothing
    /// stored per vertex), one clip at a time for progress.
    ///
    /// Errors: a non-finite skinned position, a root motion fit that fails, a streamed frame that
    /// cannot be read.
    pub(super) fn run(
        &self,
        set: &VertexSet,
        skin_plan: &skin::SkinPlan,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<SampledFrames> {
        let (rig, plan, samples) = (self.rig, self.plan, self.samples);
        let total_frames = plan.row_map.total_frames();
        let clip_done = |progress: &mut dyn FnMut(Progress), clip: &Clip| {
            progress(Progress {
                stage: "skin",
                done: u64::from(clip.end_frame()),
                total: u64::from(total_frames),
            })
        };
        let mut frame_bounds = Vec::with_capacity(samples.len());
        if let Some(body) = &rig.streamed_body {
            // Frames read from the source one per task (nothing kept): the box only.
            for clip in plan.row_map.clips() {
                let frames = clip.first_frame as usize..clip.end_frame() as usize;
                frame_bounds.par_extend(samples[frames].par_iter().map(|&(c, t)| {
                    skin::streamed_frame(rig, body, set, c, t, false)
                        .map(|f| skin::FrameBounds::of(&f.positions))
                }));
                clip_done(progress, clip);
            }
            let frame_bounds: Vec<skin::FrameBounds> = frame_bounds.into_iter().collect::<Result<_>>()?;
            let bounds = bounds_of(&frame_bounds)?;
            return Ok(SampledFrames { poses: Vec::new(), bounds, root_tracks: Vec::new(), globals: None });
        }
        let keep_globals = self.keep_globals;
        let sampled: Vec<(skin::FramePose, Option<Vec<Mat4>>)> = samples
            .par_iter()
            .map(|&(clip, time)| {
                let pose = sample_pose(rig, &rig.clips[clip], time);
                let globals = global_matrices(rig, &pose);
                let frame = skin::FramePose::new(rig, set, pose, &globals);
                (frame, keep_globals.then_some(globals))
            })
            .collect();
        let (mut poses, globals): (Vec<skin::FramePose>, Vec<Option<Vec<Mat4>>>) =
            sampled.into_iter().unzip();
        let mut globals: Option<Vec<Vec<Mat4>>> =
            keep_globals.then(|| globals.into_iter().flatten().collect());
        // Root motion: fitted to each clip's skinned frames, then removed from them (in place).
        let mut root_tracks = Vec::new();
        if self.root_motion {
            for (ci, (clip, &source)) in plan.row_map.clips().iter().zip(&plan.sources).enumerate() {
                let frames = clip.first_frame as usize..clip.end_frame() as usize;
                let g = globals.as_mut().map(|g| &mut g[frames.clone()]);
                root_tracks.push(crate::root_motion::extract_clip(
                    rig,
                    set,
                    skin_plan,
                    ci as u32,
                    clip,
                    source,
                    &mut poses[frames],
                    g,
                )?);
            }
        }
        for clip in plan.row_map.clips() {
            let frames = clip.first_frame as usize..clip.end_frame() as usize;
            frame_bounds
                .par_extend(poses[frames].par_iter().map(|p| Ok(skin::frame_bounds(set, skin_plan, p))));
            clip_done(progress, clip);
        }
        let frame_bounds: Vec<skin::FrameBounds> = frame_bounds.into_iter().collect::<Result<_>>()?;
        let bounds = bounds_of(&frame_bounds)?;
        Ok(SampledFrames { poses, bounds, root_tracks, globals })
    }
}

/// The quantisation box of every frame's bounds.
///
/// Errors: [`vat_core::Error::NotFinite`] when a skinned position is not finite.
pub(super) fn bounds_of(frames: &[skin::FrameBounds]) -> Result<PositionBounds> {
    let all = skin::FrameBounds::merge(frames);
    if !all.finite {
        return Err(vat_core::Error::NotFinite { what: "point coordinate" }.into());
    }
    Ok(PositionBounds::from_points([all.min.to_array(), all.max.to_array()])?)
}

/// The skeleton written to the manifest: every bone of the vertex set plus one per socket or
/// captured node that is not a bone yet, sorted by node (so parents come first).
pub(super) struct Skeleton {
    /// `(node, inverse bind)` per manifest bone. Added bones have the identity inverse bind, so
    /// their bone-texture matrix is the node's global transform.
    pub(super) bones: BoneList,
    /// Manifest bone index of each vertex-set bone.
    pub(super) from_set: Vec<u16>,
    /// Manifest bone index of each node's first bone, if it has one.
    pub(super) of_node: Vec<Option<u32>>,
}

impl Skeleton {
    pub(super) fn new(rig: &Rig, set: &VertexSet, extra_nodes: &[usize]) -> Result<Self> {
        let mut entries: Vec<(usize, usize, Mat4)> =
            set.bones.iter().enumerate().map(|(i, b)| (b.node, i, b.inverse_bind)).collect();
        let mut has_bone: std::collections::HashSet<usize> = entries.iter().map(|e| e.0).collect();
        for &node in extra_nodes {
            if has_bone.insert(node) {
                entries.push((node, usize::MAX - entries.len(), Mat4::IDENTITY));
            }
        }
        // Stable by (node, original index): set bones keep their relative order, added bones last.
        entries.sort_by_key(|e| (e.0, e.1));
        // Every .vat stores its skeleton (sockets, captures and bone mode use it), so the reader's
        // bone limit applies to every bake.
        let most = vat_core::container::Limits::default().max_bones as usize;
        if entries.len() > most {
            return Err(invalid_input(
                format!("rig \"{}\"", rig.name),
                format!(
                    "needs {} bones (skin joints, carrier nodes, sockets and captures); a .vat reader accepts \
                     at most {most} (vat_core::container::Limits::max_bones): remove unused joints from the \
                     skin, or split the asset",
                    entries.len()
                ),
            ));
        }
        let mut from_set = vec![0u16; set.bones.len()];
        let mut of_node = vec![None; rig.nodes.len()];
        for (new, e) in entries.iter().enumerate() {
            if e.1 < set.bones.len() {
                from_set[e.1] = new as u16;
            }
            if let Some(slot) = of_node.get_mut(e.0)
                && slot.is_none()
            {
                *slot = Some(new as u32);
            }
        }
        Ok(Self { bones: entries.into_iter().map(|e| (e.0, e.2)).collect(), from_set, of_node })
    }

    /// Manifest bones: node names, parent = the first bone of the nearest ancestor node that has one.
    pub(super) fn manifest_bones(&self, rig: &Rig) -> Vec<ManifestBone> {
        self.bones
            .iter()
            .map(|&(node, _)| {
                let mut parent = None;
                let mut at = rig.nodes.get(node).and_then(|n| n.parent);
                while let Some(p) = at {
                    if let Some(b) = self.of_node.get(p).copied().flatten() {
                        parent = Some(b);
                        break;
                    }
                    at = rig.nodes.get(p).and_then(|n| n.parent).filter(|&q| q < p);
                }
                ManifestBone { name: rig.nodes.get(node).map(|n| n.name.clone()).unwrap_or_default(), parent }
            })
            .collect()
    }
}

/// Column-major 3x4 of an affine matrix: x axis, y axis, z axis, translation (xyz each).
pub(super) fn affine_3x4(m: &Mat4) -> [f32; 12] {
    let c = m.to_cols_array();
    [c[0], c[1], c[2], c[4], c[5], c[6], c[8], c[9], c[10], c[12], c[13], c[14]]
}

pub(super) fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

pub(super) fn vec3_bytes(v: &[Vec3]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 12);
    for p in v {
        for c in p.to_array() {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    out
}

/// The nodes whose per-frame transforms are captured: every socket's node and every node named in
/// `options.captures` (the first node of that name), sorted, each once. Also validates the sockets.
pub(super) fn captured_nodes(rig: &Rig, options: &BakeOptions) -> Result<Vec<usize>> {
    let mut nodes = Vec::new();
    let mut socket_names = std::collections::HashSet::new();
    for (i, s) in rig.sockets.iter().enumerate() {
        let part = || format!("rig \"{}\" socket {i} \"{}\"", rig.name, s.name);
        if s.node >= rig.nodes.len() {
            return Err(invalid_input(
                part(),
                format!("is on node {}; the rig has {} nodes", s.node, rig.nodes.len()),
            ));
        }
        if !s.local.is_finite() {
            return Err(invalid_input(part(), "transform is not finite"));
        }
        if !socket_names.insert(s.name.as_str()) {
            return Err(invalid_input(part(), "the name is used by an earlier socket"));
        }
        nodes.push(s.node);
    }
    let mut node_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    if !options.captures.is_empty() {
        // The first node of each name, as a linear search would find it.
        for (i, nd) in rig.nodes.iter().enumerate().rev() {
            node_of.insert(nd.name.as_str(), i);
        }
    }
    for name in &options.captures {
        let node = node_of.get(name.as_str()).copied().ok_or_else(|| {
            invalid_option("--capture", format!("rig \"{}\" has no node named \"{name}\"", rig.name))
        })?;
        nodes.push(node);
    }
    nodes.sort_unstable();
    nodes.dedup();
    Ok(nodes)
}

/// The attachment meshes (index into `rig.meshes`) with unique names (`"name#mesh"` for a repeat,
/// `"attachment{mesh}"` for an empty name), validated.
pub(super) fn attachment_meshes(rig: &Rig) -> Result<Vec<(usize, String)>> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut taken = std::collections::HashSet::new();
    for (mi, m) in rig.meshes.iter().enumerate() {
        let MeshRole::Attachment { socket } = m.role else { continue };
        let part = || format!("rig \"{}\" attachment mesh {mi} \"{}\"", rig.name, m.name);
        let count = m.vertex_count();
        if socket >= rig.sockets.len() {
            return Err(invalid_input(
                part(),
                format!("is on socket {socket}; the rig has {}", rig.sockets.len()),
            ));
        }
        if count == 0
            || u32::try_from(count).is_err()
            || m.indices.is_empty()
            || !m.indices.len().is_multiple_of(3)
        {
            return Err(invalid_input(part(), "needs vertices and whole triangles"));
        }
        if m.normals.len() != count || m.material_ids.len() != count {
            return Err(invalid_input(part(), "normals and material ids must have one entry per vertex"));
        }
        if let Some(i) = m.indices.iter().find(|&&i| i as usize >= count) {
            return Err(invalid_input(part(), format!("index {i} is out of range ({count} vertices)")));
        }
        if m.positions.iter().chain(&m.normals).any(|v| !v.is_finite()) {
            return Err(invalid_input(part(), "a position or normal is not finite"));
        }
        let mut name = if m.name.is_empty() { format!("attachment{mi}") } else { m.name.clone() };
        if taken.contains(&name) {
            name = format!("{name}#{mi}");
        }
        taken.insert(name.clone());
        out.push((mi, name));
    }
    Ok(out)
}
