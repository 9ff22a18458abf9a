//! Bone mode's CPU reference: skinning from the bone texture, the live morph layer.

use crate::format::reference::helpers::*;

/// The live morph layer of a bone-mode asset, borrowed (see [`crate::container::MorphAnimation`]).
#[derive(Debug, Clone)]
pub struct MorphView<'a> {
    /// The tiled delta texture's layout.
    pub layout: MorphTextureLayout,
    /// The delta texture, `Rgba32Float`.
    pub texture: &'a [u8],
    /// The weights track's layout.
    pub weights_layout: MorphWeightsLayout,
    /// The weights track, `Rgba32Float`.
    pub weights: &'a [u8],
}

/// Everything the bone-mode decoder needs of an asset: bone texture, skinning streams, rest pose
/// (as the backends upload it, [`crate::gpu::rest_vertices`]) and the morph layer if baked.
#[derive(Debug, Clone)]
pub struct BoneAnimationView<'a> {
    /// The bone texture's layout.
    pub layout: BoneTextureLayout,
    /// The bone texture, `Rgba32Float`, 3 rows per bone per frame.
    pub texture: &'a [u8],
    /// Influences per vertex (4 or 8).
    pub influences: u32,
    /// `u16` bone index per influence per vertex.
    pub joints: &'a [u8],
    /// `f32` weight per influence per vertex.
    pub weights: &'a [u8],
    /// Rest position and normal per vertex (what group 1's `rest_vertices` holds).
    pub rest: Vec<crate::gpu::RestVertex>,
    /// The live morph layer, if baked.
    pub morph: Option<MorphView<'a>>,
    /// The clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> BoneAnimationView<'a> {
    /// The bone mode of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::MissingSection`] if the asset was baked without bones.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        Self::from_manifest(asset.manifest(), &|id| asset.get_blob(id))
    }

    /// [`Self::from_asset`] of a manifest whose blobs `blob` gives (a bake before its file
    /// exists). The blobs are taken as they are (validate a file with [`Asset::parse`]).
    ///
    /// # Errors
    /// [`Error::MissingSection`] without the bone section; [`Error::BlobIdOutOfRange`] for a blob
    /// `blob` does not give.
    pub fn from_manifest(
        manifest: &'a crate::container::Manifest,
        blob: &dyn Fn(crate::container::BlobId) -> Option<&'a [u8]>,
    ) -> Result<Self> {
        let ba = manifest
            .bone_animation
            .as_ref()
            .ok_or(Error::MissingSection { what: "bone animation (bake with --bones)" })?;
        let count = manifest.blobs.len() as u32;
        let get = |id: crate::container::BlobId| {
            blob(id).ok_or(Error::BlobIdOutOfRange { what: "bone section", blob: id.0, blob_count: count })
        };
        let morph = match manifest.morph_animation.as_ref() {
            Some(ma) => Some(MorphView {
                layout: ma.layout,
                texture: get(ma.texture)?,
                weights_layout: ma.weights_layout,
                weights: get(ma.weights)?,
            }),
            None => None,
        };
        Ok(Self {
            layout: ba.layout,
            texture: get(ba.texture)?,
            influences: ba.influences,
            joints: get(ba.joints)?,
            weights: get(ba.weights)?,
            rest: crate::gpu::rest_vertices_of(manifest, blob),
            morph,
            clips: &manifest.clips,
        })
    }

    /// Vertices (of the rest pose).
    pub fn vertex_count(&self) -> u32 {
        self.rest.len() as u32
    }
}

/// Little-endian f32 number `i` of `bytes`, or [`Error::Truncated`].
pub(crate) fn f32_at(bytes: &[u8], i: usize, section: &'static str) -> Result<f32> {
    // ok_or_else: the error is built only when it happens (this runs per texel channel).
    let b = i.checked_mul(4).and_then(|at| bytes.get(at..at + 4)).ok_or_else(|| Error::Truncated {
        section,
        needed: (i as u64 + 1) * 4,
        available: bytes.len() as u64,
    })?;
    Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Texel `(x, y)` (four f32) of a texture `width` texels wide.
pub(crate) fn texel4(bytes: &[u8], width: u32, [x, y]: [u32; 2], section: &'static str) -> Result<[f32; 4]> {
    let at =
        (y as usize).checked_mul(width as usize).and_then(|t| t.checked_add(x as usize)?.checked_mul(16));
    texel4_at(bytes, at, section)
}

/// Texel `t` (four f32) of a texture whose rows are stored one after another: the texel at
/// `(t % width, t / width)`, which is byte `16 t` whatever the width, read without the division
/// (this runs per bone row of every skinned vertex).
pub(crate) fn texel4_linear(bytes: &[u8], t: u32, section: &'static str) -> Result<[f32; 4]> {
    texel4_at(bytes, (t as usize).checked_mul(16), section)
}

/// The four f32 at byte `at` (`None`: an offset past `usize`), or [`Error::Truncated`]; one bounds
/// check for the texel's 16 bytes.
fn texel4_at(bytes: &[u8], at: Option<usize>, section: &'static str) -> Result<[f32; 4]> {
    let b = at.and_then(|at| bytes.get(at..at.checked_add(16)?)).ok_or_else(|| Error::Truncated {
        section,
        needed: at.map_or(u64::MAX, |at| at as u64 + 16),
        available: bytes.len() as u64,
    })?;
    Ok(std::array::from_fn(|c| f32::from_le_bytes([b[4 * c], b[4 * c + 1], b[4 * c + 2], b[4 * c + 3]])))
}

/// A 3x4 affine as its rows (`vat.wgsl`'s `Affine`).
type Affine = [[f32; 4]; 3];

/// The frames a clip samples (absolute indices) and their weights (`vat_clip_frames`).
pub(crate) fn clip_frames(
    clips: &[Clip],
    slot: PlayingSlot,
    time: f32,
    interp: Interpolation,
) -> Result<([u32; 4], [f32; 4])> {
    let last = clips.len().checked_sub(1).ok_or(Error::ZeroCount { what: "clip count" })?;
    let clip = &clips[(slot.clip as usize).min(last)];
    let wrap = playback::Wrap::from_code(slot.wrap_code, clip.mode);
    let sample = playback::wrapped_clip_sample(clip, wrap, slot.phase_offset, time, slot.rate, interp);
    Ok((playback::absolute_frames(clip, &sample), sample.weights))
}

/// Bone `joint`'s three rows at absolute frame `frame` (`vat_bone_affine`): texels
/// `(frame * bone_count + joint) * 3 + r`, in the shader's wrapping u32 arithmetic.
fn bone_affine(view: &BoneAnimationView<'_>, frame: u32, joint: u32) -> Result<Affine> {
    let first = frame
        .wrapping_mul(view.layout.bone_count)
        .wrapping_add(joint)
        .wrapping_mul(crate::layout::TEXELS_PER_BONE);
    let mut a = [[0.0f32; 4]; 3];
    for (r, row) in a.iter_mut().enumerate() {
        *row = texel4_linear(view.texture, first.wrapping_add(r as u32), "bone texture")?;
    }
    Ok(a)
}

/// Absolute frames of the bone texture and their weights (`vat.wgsl`'s `FrameSample`).
pub(crate) type FrameSample = ([u32; 4], [f32; 4]);

/// One clip sample (absolute frames and their weights, from [`clip_frames`]) and, for a whole
/// frame of vertices, the bone rows it reads: every bone's rows at each sampled frame of weight
/// other than 0, read from the texture once instead of once per influence of every vertex. The
/// rows are the texture's own values, so the sums are bit for bit those of the uncached reads.
pub(crate) struct SampledBones {
    /// Absolute frames and their weights.
    sample: FrameSample,
    /// Per sampled frame: the rows of bones `0..len` (up to the first bone the texture does not
    /// hold); empty when not cached, where a weight is 0, and for the bones past them, which are
    /// read from the texture as they are needed.
    rows: [Vec<Affine>; 4],
}

impl SampledBones {
    /// `sample` with its bones read as they are needed (one vertex).
    fn uncached(sample: FrameSample) -> Self {
        Self { sample, rows: Default::default() }
    }

    /// `sample` with every bone's rows at its frames read once (a whole frame of vertices).
    fn cached(view: &BoneAnimationView<'_>, sample: FrameSample) -> Self {
        let mut rows: [Vec<Affine>; 4] = Default::default();
        for (f, rows) in rows.iter_mut().enumerate() {
            if sample.1[f] != 0.0 {
                *rows = (0..view.layout.bone_count)
                    .map_while(|b| bone_affine(view, sample.0[f], b).ok())
                    .collect();
            }
        }
        Self { sample, rows }
    }

    /// Bone `joint`'s rows at sampled frame `f`.
    fn affine(&self, view: &BoneAnimationView<'_>, f: usize, joint: u32) -> Result<Affine> {
        match self.rows[f].get(joint as usize) {
            Some(a) => Ok(*a),
            None => bone_affine(view, self.sample.0[f], joint),
        }
    }
}

/// `vat_skin_clip`: `Σ_k Σ_f (w_k w_f) M(joint_k, f)`, zero weights skipped, `m + w * b` per entry.
fn skin_clip(view: &BoneAnimationView<'_>, bones: &SampledBones, vertex: u32) -> Result<Affine> {
    let fw = bones.sample.1;
    let mut m = [[0.0f32; 4]; 3];
    let influences = view.influences as usize;
    for k in 0..influences {
        let slot = vertex as usize * influences + k;
        let wk = f32_at(view.weights, slot, "skin weights")?;
        if wk == 0.0 {
            continue;
        }
        let j = view.joints.get(2 * slot..2 * slot + 2).ok_or_else(|| Error::Truncated {
            section: "joint indices",
            needed: 2 * slot as u64 + 2,
            available: view.joints.len() as u64,
        })?;
        let joint = u32::from(u16::from_le_bytes([j[0], j[1]]));
        for (f, &wf) in fw.iter().enumerate() {
            if wf == 0.0 {
                continue;
            }
            let w = wk * wf;
            let b = bones.affine(view, f, joint)?;
            for (row, b) in m.iter_mut().zip(&b) {
                for c in 0..4 {
                    row[c] += w * b[c];
                }
            }
        }
    }
    Ok(m)
}

/// What bone mode decodes every vertex of one instance state with: clip A's sample, clip B's
/// while a fade runs (`fade` > 0), and the live morph layer's blended target weights.
pub(crate) struct BonePlayback {
    /// Clip A's sample.
    a: SampledBones,
    /// Clip B's sample, only while a fade runs.
    b: Option<SampledBones>,
    /// Clip B's weight.
    pub(crate) fade: f32,
    /// The morph layer's blended target weights (empty without one).
    morph_weights: Vec<f32>,
}

impl BonePlayback {
    /// `instance` at epoch-relative `time` (seconds), as `vat_skin_vertex` samples it; `whole_frame`
    /// reads the bone rows once for many vertices.
    pub(crate) fn at(
        view: &BoneAnimationView<'_>,
        instance: &InstanceRecord,
        time: f32,
        interp: Interpolation,
        whole_frame: bool,
    ) -> Result<Self> {
        let sa = clip_frames(view.clips, instance.slot_a(), time, interp)?;
        let fade = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
        let sb = if fade > 0.0 { clip_frames(view.clips, instance.slot_b(), time, interp)? } else { sa };
        let morph_weights = match &view.morph {
            Some(morph) => morph_target_weights(morph, sa, sb, fade)?,
            None => Vec::new(),
        };
        let sampled = |s| if whole_frame { SampledBones::cached(view, s) } else { SampledBones::uncached(s) };
        Ok(Self { a: sampled(sa), b: (fade > 0.0).then(|| sampled(sb)), fade, morph_weights })
    }

    /// Stored frame `frame` alone (weight 1, no fade), its bone rows read once.
    fn stored(view: &BoneAnimationView<'_>, frame: u32) -> Result<Self> {
        let morph_weights = stored_frame_morph_weights(view, frame)?;
        let a = SampledBones::cached(view, ([frame; 4], [0.0, 1.0, 0.0, 0.0]));
        Ok(Self { a, b: None, fade: 0.0, morph_weights })
    }

    /// The object-space skin of `vertex`, as `vat_skin_vertex` computes it before the instance
    /// transform: the skinning matrix of clip A (cross-faded to clip B's), the rest pose plus the
    /// morph layer, `M p` and the cofactor normal.
    pub(crate) fn skin_vertex(
        &self,
        view: &BoneAnimationView<'_>,
        vertex: u32,
        rest: &crate::gpu::RestVertex,
    ) -> Result<([f32; 3], [f32; 3])> {
        let mut m = skin_clip(view, &self.a, vertex)?;
        if let Some(b) = &self.b {
            let (w, b) = (self.fade, skin_clip(view, b, vertex)?);
            for r in 0..3 {
                for c in 0..4 {
                    m[r][c] = (1.0 - w) * m[r][c] + w * b[r][c];
                }
            }
        }
        let (p, n) = match &view.morph {
            Some(morph) => morph_rest(morph, &self.morph_weights, vertex, rest.position, rest.normal)?,
            None => (rest.position, rest.normal),
        };
        Ok((affine_point(&m, p), affine_normal(&m, n)))
    }

    /// Clip A's sample, and clip B's while a fade runs.
    pub(crate) fn samples(&self) -> (FrameSample, Option<FrameSample>) {
        (self.a.sample, self.b.as_ref().map(|b| b.sample))
    }
}

/// Rest vertex `vertex` of `view`, or [`Error::OutOfRange`] with `what`.
pub(crate) fn rest_vertex<'v>(
    view: &'v BoneAnimationView<'_>,
    vertex: u32,
    (what, expected): (&'static str, &'static str),
) -> Result<&'v crate::gpu::RestVertex> {
    view.rest.get(vertex as usize).ok_or_else(|| Error::OutOfRange {
        what,
        value: vertex.to_string(),
        expected,
    })
}

/// [`rest_vertex`]'s words for a vertex index outside the asset.
pub(crate) const VERTEX_INDEX: (&str, &str) = ("vertex index", "< the asset's vertex count");

/// `vat_morph_clip_weights`: the weights of targets `4g..4g + 4` at the sampled frames,
/// `Σ_f w_f W(f)`, zero frame weights skipped.
pub(crate) fn morph_clip_weights(
    morph: &MorphView<'_>,
    (frames, fw): ([u32; 4], [f32; 4]),
    group: u32,
) -> Result<[f32; 4]> {
    let mut w = [0.0f32; 4];
    let per_frame = morph.layout.target_count.div_ceil(MORPH_WEIGHTS_PER_TEXEL);
    for f in 0..4 {
        let wf = fw[f];
        if wf == 0.0 {
            continue;
        }
        let t = frames[f].wrapping_mul(per_frame).wrapping_add(group);
        let texel = texel4_linear(morph.weights, t, "morph weights")?;
        for c in 0..4 {
            w[c] += wf * texel[c];
        }
    }
    Ok(w)
}

/// The blended weight of every morph target of `morph` for one instance state: clip A's sampled
/// frames `a`, cross-faded with clip B's `b` by `fade` (`(1 - fade) * w_a + fade * w_b`, only when
/// `fade > 0`), exactly as `vat_morph_rest` blends them.
pub(crate) fn morph_target_weights(
    morph: &MorphView<'_>,
    a: ([u32; 4], [f32; 4]),
    b: ([u32; 4], [f32; 4]),
    fade: f32,
) -> Result<Vec<f32>> {
    let count = morph.layout.target_count;
    let mut out = Vec::with_capacity(count as usize);
    for g in 0..count.div_ceil(MORPH_WEIGHTS_PER_TEXEL) {
        let mut w = morph_clip_weights(morph, a, g)?;
        if fade > 0.0 {
            let wb = morph_clip_weights(morph, b, g)?;
            w = std::array::from_fn(|c| (1.0 - fade) * w[c] + fade * wb[c]);
        }
        out.extend(w.iter().take((count - g * MORPH_WEIGHTS_PER_TEXEL).min(4) as usize));
    }
    Ok(out)
}

/// `vat_morph_rest`: `p + Σ_t w_t dp_t`, `n + Σ_t w_t dn_t` over the targets in order, weight 0
/// skipped.
pub(crate) fn morph_rest(
    morph: &MorphView<'_>,
    target_weights: &[f32],
    vertex: u32,
    mut p: [f32; 3],
    mut n: [f32; 3],
) -> Result<([f32; 3], [f32; 3])> {
    let l = &morph.layout;
    for (t, &wt) in target_weights.iter().enumerate() {
        if wt == 0.0 {
            continue;
        }
        let t = t as u32;
        let dp = texel4(
            morph.texture,
            l.width,
            l.texel_coord(t, MorphChannel::Position, vertex),
            "morph texture",
        )?;
        let dn =
            texel4(morph.texture, l.width, l.texel_coord(t, MorphChannel::Normal, vertex), "morph texture")?;
        for i in 0..3 {
            p[i] += dp[i] * wt;
            n[i] += dn[i] * wt;
        }
    }
    Ok((p, n))
}

/// `vat_affine_point`: `dot(row_r, [p, 1])`, summed left to right.
pub(crate) fn affine_point(m: &Affine, p: [f32; 3]) -> [f32; 3] {
    std::array::from_fn(|r| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3])
}

/// `vat_affine_normal`: `normalize(sign(det M3) cof(M3) n)`, cofactor columns `c1 x c2`, `c2 x c0`,
/// `c0 x c1`.
pub(crate) fn affine_normal(m: &Affine, n: [f32; 3]) -> [f32; 3] {
    let col = |j: usize| [m[0][j], m[1][j], m[2][j]];
    let cross = |a: [f32; 3], b: [f32; 3]| {
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    };
    let (c0, c1, c2) = (col(0), col(1), col(2));
    let (k0, k1, k2) = (cross(c1, c2), cross(c2, c0), cross(c0, c1));
    let det = c0[0] * k0[0] + c0[1] * k0[1] + c0[2] * k0[2];
    let v: [f32; 3] = std::array::from_fn(|i| k0[i] * n[0] + k1[i] * n[1] + k2[i] * n[2]);
    normalize3(if det < 0.0 { v.map(|x| -x) } else { v })
}

/// Decodes vertex `vertex` of `instance` at epoch-relative `time` (seconds) in bone mode, as the
/// shader's `vat_skin_vertex` does: the skinning matrix of clip A's sampled frames, cross-faded to
/// clip B's while a fade runs; the rest pose plus the live morph layer (when the view has one),
/// blended by the same frames and fade; `M p` and the cofactor normal; the instance transform.
/// `object_*` are the skinned values before the instance transform.
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex outside the asset; [`Error::ZeroCount`] without clips;
/// [`Error::Truncated`] if a texture or stream of the view is shorter than its layout says.
pub fn decode_bone_vertex(
    view: &BoneAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<DecodedVertex> {
    let rest = rest_vertex(view, vertex, VERTEX_INDEX)?;
    let playback = BonePlayback::at(view, instance, time, interp, false)?;
    let (p, n) = playback.skin_vertex(view, vertex, rest)?;
    Ok(to_world(instance, p, n))
}

/// [`decode_bone_vertex`] of every vertex at once, in object space (before the instance
/// transform): `positions[v]` and `normals[v]` are bit for bit vertex `v`'s `object_position` and
/// `object_normal`. The sample, the fade and the morph weights are computed once, and each sampled
/// frame's bone rows read once, for the whole frame.
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per vertex of the rest
/// pose; otherwise as [`decode_bone_vertex`].
pub fn decode_bone_frame_at(
    view: &BoneAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    interp: Interpolation,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    check_frame_len(view.rest.len(), positions, normals)?;
    let playback = BonePlayback::at(view, instance, time, interp, true)?;
    for (v, (rest, out)) in view.rest.iter().zip(positions.iter_mut().zip(normals.iter_mut())).enumerate() {
        (*out.0, *out.1) = playback.skin_vertex(view, v as u32, rest)?;
    }
    Ok(())
}

/// The blended weight of every morph target of `view`'s morph layer for `instance` at `time`, as
/// bone mode blends them (empty without a morph layer): for tests and tools that want the weights
/// the shader sees.
///
/// # Errors
/// As [`decode_bone_vertex`].
pub fn morph_weights_at(
    view: &BoneAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    interp: Interpolation,
) -> Result<Vec<f32>> {
    if view.morph.is_none() {
        return Ok(Vec::new());
    }
    Ok(BonePlayback::at(view, instance, time, interp, false)?.morph_weights)
}

/// Bone mode's object-space skin of every vertex at stored frame `frame` (counted over all clips):
/// what [`decode_bone_vertex`] computes before the instance transform when the playback lands on
/// that frame (weight 1, no fade), the live morph layer at that frame included. The skin the
/// skin-residual format's residual corrects ([`crate::format::skin_residual`]).
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per vertex of the rest
/// pose or `frame` is past the frames of all clips; [`Error::Truncated`] as [`decode_bone_vertex`].
pub fn decode_bone_frame(
    view: &BoneAnimationView<'_>,
    frame: u32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    check_frame_len(view.rest.len(), positions, normals)?;
    let playback = BonePlayback::stored(view, frame)?;
    for (v, (rest, out)) in view.rest.iter().zip(positions.iter_mut().zip(normals.iter_mut())).enumerate() {
        (*out.0, *out.1) = playback.skin_vertex(view, v as u32, rest)?;
    }
    Ok(())
}

/// The live morph layer's target weights at stored frame `frame` (counted over all clips), as
/// [`decode_bone_stored_vertex`] takes them: empty without a morph layer.
///
/// # Errors
/// [`Error::OutOfRange`] when `frame` is past the frames of all clips; [`Error::Truncated`] as
/// [`decode_bone_vertex`].
pub fn stored_frame_morph_weights(view: &BoneAnimationView<'_>, frame: u32) -> Result<Vec<f32>> {
    let frames: u32 = view.clips.iter().map(|c| c.frame_count).sum();
    if frame >= frames {
        return Err(Error::OutOfRange {
            what: "stored frame",
            value: frame.to_string(),
            expected: "< the frames of all clips",
        });
    }
    let sample = ([frame; 4], [0.0, 1.0, 0.0, 0.0]);
    match &view.morph {
        Some(morph) => morph_target_weights(morph, sample, sample, 0.0),
        None => Ok(Vec::new()),
    }
}

/// One vertex of [`decode_bone_frame`]: bone mode's object-space skin of `vertex` at stored frame
/// `frame`, with `morph_weights` from [`stored_frame_morph_weights`] of that frame (so a caller
/// skinning one vertex over many frames, or frames in parallel, computes them once a frame).
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex past the rest pose; [`Error::Truncated`] as
/// [`decode_bone_vertex`].
pub fn decode_bone_stored_vertex(
    view: &BoneAnimationView<'_>,
    frame: u32,
    vertex: u32,
    morph_weights: &[f32],
) -> Result<([f32; 3], [f32; 3])> {
    let rest = rest_vertex(view, vertex, ("vertex", "< the rest pose's vertices"))?;
    let m = skin_clip(view, &SampledBones::uncached(([frame; 4], [0.0, 1.0, 0.0, 0.0])), vertex)?;
    let (p, nrm) = match &view.morph {
        Some(morph) => morph_rest(morph, morph_weights, vertex, rest.position, rest.normal)?,
        None => (rest.position, rest.normal),
    };
    Ok((affine_point(&m, p), affine_normal(&m, nrm)))
}
