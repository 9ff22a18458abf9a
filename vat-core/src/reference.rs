//! The CPU reference decoder: what the vertex shader computes, computed on the CPU.
//!
//! Given an asset's vertex animation texture bytes, its layout and encoding, an instance record and the
//! epoch-relative clock, [`decode_vertex`] returns the vertex's object- and world-space position and
//! normal with the same f32 operations, in the same order, as `vat_decode_vertex` in
//! [`crate::gpu::SHADER_SOURCE`]. Verification (`vat verify`) compares bakes against fresh skinning
//! through it, and the GPU backends are tested against it.
//!
//! [`decode_bone_vertex`] does the same for bone mode (`vat_skin_vertex`): the skinning matrix blended
//! from the bone texture over the sampled frames and influences, the live morph layer (deltas of
//! every target whose blended weight is not 0, added to the rest pose before skinning) and the
//! cofactor normal rule.
//!
//! [`decode_rigid_vertex`] does the same for the rigid mode (`vat_rigid_vertex`, see
//! [`crate::rigid`]): the piece's pivot and quaternion blended over the sampled frames (normalised
//! lerp, hemisphere-aligned), cross-faded, then the vertex's rest offset from its piece's pivot
//! rotated and moved.
//!
//! Floating-point note: WGSL allows an implementation to fuse `a * b + c` into one rounding, which this
//! decoder never does; a GPU result may therefore differ in the last bit or two of an f32. Backend
//! tests state their tolerance in ULPs for that reason.

use crate::clip::Clip;
use crate::container::Asset;
use crate::encoding::{self, PositionBounds, VertexFormat};
use crate::instance::{InstanceRecord, PlayingSlot};
use crate::layout::{
    BoneTextureLayout, MORPH_WEIGHTS_PER_TEXEL, MorphChannel, MorphTextureLayout, MorphWeightsLayout,
    VertexTextureLayout,
};
use crate::playback::{self, Interpolation};
use crate::{Error, Result};

/// Everything the decoder needs of an asset's vertex animation, borrowed.
#[derive(Debug, Clone)]
pub struct VertexAnimationView<'a> {
    /// Where each texel lives.
    pub layout: VertexTextureLayout,
    /// How each texel is encoded.
    pub format: VertexFormat,
    /// The box positions are normalised into (metres, object space).
    pub bounds: PositionBounds,
    /// Position bits per axis of [`VertexFormat::Packed64`] (ignored by other formats).
    pub position_bits: [u32; 3],
    /// One byte slice per texture of `format` (see [`VertexFormat::texel_formats`]), each
    /// `layout.byte_len(bytes_per_texel)` long.
    pub textures: Vec<&'a [u8]>,
    /// The clips, in texture order.
    pub clips: &'a [Clip],
    /// The `Rgba16Float` tangent-frame texture (`--tangents`), laid out like `textures`, if baked.
    pub tangents: Option<&'a [u8]>,
}

impl<'a> VertexAnimationView<'a> {
    /// The vertex animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset has no vertex animation texture (e.g. a bone-only bake)
    /// or is a fluid bake (whose texture is not laid out per frame).
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        if asset.manifest().fluid_animation.is_some() {
            // Its texture holds every frame's vertices back to back, not frame-major per vertex:
            // decode it through FluidAnimationView.
            return Err(Error::OutOfRange {
                what: "vertex animation",
                value: "that of a fluid asset".into(),
                expected: "a soft asset (decode a fluid asset with FluidAnimationView)",
            });
        }
        Self::from_asset_unchecked(asset)
    }

    /// [`Self::from_asset`] without the fluid check (the fluid view's vertex texture).
    fn from_asset_unchecked(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let va = manifest.vertex_animation.as_ref().ok_or(Error::OutOfRange {
            what: "vertex animation",
            value: "none".into(),
            expected: "an asset baked with a vertex animation texture",
        })?;
        Ok(Self {
            layout: va.layout,
            format: va.format,
            bounds: va.bounds,
            position_bits: va.position_bits,
            textures: va.textures.iter().map(|&id| asset.blob(id)).collect(),
            clips: &manifest.clips,
            tangents: va.tangents.map(|id| asset.blob(id)),
        })
    }
}

/// A decoded vertex. Positions in metres, normals unit length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodedVertex {
    /// Object-space position (after interpolation and cross-fade, before the instance transform).
    pub object_position: [f32; 3],
    /// Object-space unit normal.
    pub object_normal: [f32; 3],
    /// World-space position: `instance.position + R_y(yaw) * (scale * object_position)`.
    pub world_position: [f32; 3],
    /// World-space unit normal.
    pub world_normal: [f32; 3],
    /// World-space unit tangent (perpendicular to `world_normal`) and the bitangent sign in `w`;
    /// all zero without a tangent-frame texture. [`decode_vertex`] decodes it as the shader does:
    /// the tangent frame of the sampled frame of larger weight (of clip B once its fade weight is
    /// over one half), made perpendicular to the object normal, turned by the yaw.
    pub world_tangent: [f32; 4],
}

/// Normalised position and unnormalised normal sum of one clip at one time.
struct ClipValue {
    position: [f32; 3],
    normal: [f32; 3],
}

fn decode_clip(
    view: &VertexAnimationView<'_>,
    slot: PlayingSlot,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<ClipValue> {
    let (frames, w) = clip_frames(view.clips, slot, time, interp)?;
    decode_clip_at(view, frames, w, vertex, interp)
}

/// One vertex of a clip at given frames and weights.
fn decode_clip_at(
    view: &VertexAnimationView<'_>,
    frames: [u32; 4],
    w: [f32; 4],
    vertex: u32,
    interp: Interpolation,
) -> Result<ClipValue> {
    let load = |k: usize| {
        let texel = view.layout.texel_index(frames[k], vertex);
        encoding::decode_vertex_texel(view.format, view.position_bits, &view.textures, texel)
    };
    let texels = match interp {
        Interpolation::Point => {
            let t = load(if w[1] == 1.0 { 1 } else { 2 })?;
            [t, t, t, t]
        }
        Interpolation::Linear => {
            let (b, c) = (load(1)?, load(2)?);
            [b, b, c, c]
        }
        Interpolation::Cubic => [load(0)?, load(1)?, load(2)?, load(3)?],
    };
    Ok(combine(interp, w, &texels))
}

/// The clip value of texels `t` (those of frames 0..4 of the sample; Point uses the one of weight
/// 1, at `t[1]` when `w[1] == 1`, else `t[2]`) with weights `w`: the same fetches and sums as
/// `vat_decode_clip`: Point reads the one frame of weight 1, Linear sums the two middle frames,
/// Cubic all four, left to right.
#[inline(always)]
fn combine(interp: Interpolation, w: [f32; 4], t: &[encoding::DecodedTexel; 4]) -> ClipValue {
    match interp {
        Interpolation::Point => {
            let p = if w[1] == 1.0 { &t[1] } else { &t[2] };
            ClipValue { position: p.position, normal: p.normal }
        }
        Interpolation::Linear => {
            let (b, c) = (&t[1], &t[2]);
            ClipValue {
                position: std::array::from_fn(|i| w[1] * b.position[i] + w[2] * c.position[i]),
                normal: std::array::from_fn(|i| w[1] * b.normal[i] + w[2] * c.normal[i]),
            }
        }
        Interpolation::Cubic => {
            let sum = |f: fn(&encoding::DecodedTexel) -> [f32; 3]| -> [f32; 3] {
                let (fa, fb, fc, fd) = (f(&t[0]), f(&t[1]), f(&t[2]), f(&t[3]));
                std::array::from_fn(|i| ((w[0] * fa[i] + w[1] * fb[i]) + w[2] * fc[i]) + w[3] * fd[i])
            };
            ClipValue { position: sum(|t| t.position), normal: sum(|t| t.normal) }
        }
    }
}

/// Decodes every vertex of clip `clip_index` played at phase `offset` (cycles) with rate 0, for an
/// instance at the origin with no yaw, scale 1 and no cross-fade: `positions[v]` and `normals[v]`
/// are bit for bit the `object_position` and `object_normal` [`decode_vertex`] gives vertex `v`
/// (tested), with the playback sample computed once for the frame instead of once per vertex.
/// Verification decodes whole frames with it.
///
/// # Errors
/// [`Error::OutOfRange`] when `positions` or `normals` is not one entry per vertex; otherwise as
/// [`decode_vertex`].
pub fn decode_object_frame(
    view: &VertexAnimationView<'_>,
    clip_index: u32,
    offset: f32,
    interp: Interpolation,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    let n = view.layout.vertex_count as usize;
    if positions.len() != n || normals.len() != n {
        return Err(Error::OutOfRange {
            what: "decoded frame length",
            value: format!("{} / {}", positions.len(), normals.len()),
            expected: "one position and one normal per vertex",
        });
    }
    let slot = PlayingSlot { clip: clip_index, wrap_code: 0, phase_offset: offset, rate: 0.0 };
    let (frames, w) = clip_frames(view.clips, slot, 0.0, interp)?;
    if view.format == VertexFormat::Packed64 && interp == Interpolation::Point {
        // Verification's path (every baked frame): four vertices at a time, the same IEEE
        // operations per lane as the scalar decode below.
        let frame = frames[if w[1] == 1.0 { 1 } else { 2 }];
        return packed64_frame_x4(view, frame, positions, normals);
    }
    // Which of the sample's four frames are read (as in `decode_clip_at`), each decoded for the
    // whole frame at once: a frame's texels are contiguous.
    let used: &[usize] = match interp {
        Interpolation::Point => &[if w[1] == 1.0 { 1 } else { 2 }],
        Interpolation::Linear => &[1, 2],
        Interpolation::Cubic => &[0, 1, 2, 3],
    };
    let blank = encoding::DecodedTexel { position: [0.0; 3], normal: [0.0; 3] };
    let mut decoded: [Vec<encoding::DecodedTexel>; 4] = Default::default();
    for &k in used {
        let start = view.layout.texel_index(frames[k], 0);
        let out = &mut decoded[k];
        out.reserve_exact(n);
        encoding::decode_vertex_texels(
            view.format,
            view.position_bits,
            &view.textures,
            start..start + n as u64,
            |_, t| out.push(t),
        )?;
    }
    for (v, (p, nrm)) in positions.iter_mut().zip(normals.iter_mut()).enumerate() {
        let at = |k: usize| decoded[k].get(v).copied().unwrap_or(blank);
        let value = combine(interp, w, &[at(0), at(1), at(2), at(3)]);
        *p = view.bounds.denormalize(value.position);
        *nrm = normalize3(value.normal);
    }
    Ok(())
}

/// Decodes vertex `vertex` of `instance` at epoch-relative time `time` (seconds), as the shader does.
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex or clip index outside the asset; texture-size errors from
/// [`encoding::decode_vertex_texel`] if the view's textures are shorter than its layout says.
pub fn decode_vertex(
    view: &VertexAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<DecodedVertex> {
    if vertex >= view.layout.vertex_count {
        return Err(Error::OutOfRange {
            what: "vertex index",
            value: vertex.to_string(),
            expected: "< the asset's vertex count",
        });
    }
    let a = decode_clip(view, instance.slot_a(), time, vertex, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    let (n_pos, n_sum) = if w > 0.0 {
        let b = decode_clip(view, instance.slot_b(), time, vertex, interp)?;
        (mix3(a.position, b.position, w), mix3(a.normal, b.normal, w))
    } else {
        (a.position, a.normal)
    };
    let object_position = view.bounds.denormalize(n_pos);
    let object_normal = normalize3(n_sum);
    let mut decoded = to_world(instance, object_position, object_normal);
    decoded.world_tangent = decode_tangent(view, instance, time, w, object_normal, vertex, interp)?;
    Ok(decoded)
}

/// `vat_to_world`: the instance transform of an object-space point and unit normal.
fn to_world(instance: &InstanceRecord, object_position: [f32; 3], object_normal: [f32; 3]) -> DecodedVertex {
    let (s, c) = instance.yaw.sin_cos();
    let scaled = [
        instance.scale * object_position[0],
        instance.scale * object_position[1],
        instance.scale * object_position[2],
    ];
    let rotated = rotate_y(c, s, scaled);
    let world_position = [
        instance.position[0] + rotated[0],
        instance.position[1] + rotated[1],
        instance.position[2] + rotated[2],
    ];
    let world_normal = normalize3(rotate_y(c, s, object_normal));
    DecodedVertex { object_position, object_normal, world_position, world_normal, world_tangent: [0.0; 4] }
}

/// `vat_decode_tangent`: the world tangent of `instance` at `time` for the unit object normal `n`
/// and fade weight `w` (zero without tangents).
fn decode_tangent(
    view: &VertexAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    w: f32,
    n: [f32; 3],
    vertex: u32,
    interp: Interpolation,
) -> Result<[f32; 4]> {
    let Some(tangents) = view.tangents else { return Ok([0.0; 4]) };
    let slot = if w > 0.5 { instance.slot_b() } else { instance.slot_a() };
    let (frames, weights) = clip_frames(view.clips, slot, time, interp)?;
    let frame = if weights[1] >= weights[2] { frames[1] } else { frames[2] };
    let texel = view.layout.texel_index(frame, vertex) as usize;
    let b = tangents.get(texel * 8..texel * 8 + 8).ok_or(Error::Truncated {
        section: "tangent texture",
        needed: (texel as u64 + 1) * 8,
        available: tangents.len() as u64,
    })?;
    let q = [0, 1, 2, 3].map(|k| encoding::f16_bits_to_f32(u16::from_le_bytes([b[2 * k], b[2 * k + 1]])));
    let (_, t) = encoding::quat_to_tangent_frame(q);
    let d = n[0] * t[0] + n[1] * t[1] + n[2] * t[2];
    let mut p = [t[0] - n[0] * d, t[1] - n[1] * d, t[2] - n[2] * d];
    if p[0] * p[0] + p[1] * p[1] + p[2] * p[2] <= 1e-12 {
        p = [1.0 - n[0] * n[0], -n[1] * n[0], -n[2] * n[0]];
    }
    let u = normalize3(p);
    let (s, c) = instance.yaw.sin_cos();
    let r = rotate_y(c, s, u);
    Ok([r[0], r[1], r[2], t[3]])
}

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
        let manifest = asset.manifest();
        let ba = manifest
            .bone_animation
            .as_ref()
            .ok_or(Error::MissingSection { what: "bone animation (bake with --bones)" })?;
        let morph = manifest.morph_animation.as_ref().map(|ma| MorphView {
            layout: ma.layout,
            texture: asset.blob(ma.texture),
            weights_layout: ma.weights_layout,
            weights: asset.blob(ma.weights),
        });
        Ok(Self {
            layout: ba.layout,
            texture: asset.blob(ba.texture),
            influences: ba.influences,
            joints: asset.blob(ba.joints),
            weights: asset.blob(ba.weights),
            rest: crate::gpu::rest_vertices(asset),
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
fn f32_at(bytes: &[u8], i: usize, section: &'static str) -> Result<f32> {
    let b = i.checked_mul(4).and_then(|at| bytes.get(at..at + 4)).ok_or(Error::Truncated {
        section,
        needed: (i as u64 + 1) * 4,
        available: bytes.len() as u64,
    })?;
    Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Texel `(x, y)` (four f32) of a texture `width` texels wide.
fn texel4(bytes: &[u8], width: u32, [x, y]: [u32; 2], section: &'static str) -> Result<[f32; 4]> {
    let base = (y as usize * width as usize + x as usize) * 4;
    Ok([
        f32_at(bytes, base, section)?,
        f32_at(bytes, base + 1, section)?,
        f32_at(bytes, base + 2, section)?,
        f32_at(bytes, base + 3, section)?,
    ])
}

/// A 3x4 affine as its rows (`vat.wgsl`'s `Affine`).
type Affine = [[f32; 4]; 3];

/// The frames a clip samples (absolute indices) and their weights (`vat_clip_frames`).
fn clip_frames(
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

/// `vat_skin_clip`: `Σ_k Σ_f (w_k w_f) M(joint_k, f)`, zero weights skipped, `m + w * b` per entry.
fn skin_clip(
    view: &BoneAnimationView<'_>,
    (frames, fw): ([u32; 4], [f32; 4]),
    vertex: u32,
) -> Result<Affine> {
    let mut m = [[0.0f32; 4]; 3];
    let influences = view.influences as usize;
    for k in 0..influences {
        let slot = vertex as usize * influences + k;
        let wk = f32_at(view.weights, slot, "skin weights")?;
        if wk == 0.0 {
            continue;
        }
        let j = view.joints.get(2 * slot..2 * slot + 2).ok_or(Error::Truncated {
            section: "joint indices",
            needed: 2 * slot as u64 + 2,
            available: view.joints.len() as u64,
        })?;
        let joint = u32::from(u16::from_le_bytes([j[0], j[1]]));
        for f in 0..4 {
            let wf = fw[f];
            if wf == 0.0 {
                continue;
            }
            let w = wk * wf;
            for (r, row) in m.iter_mut().enumerate() {
                // The shader's u32 texel index: (frame * bone_count + bone) * 3 + row.
                let t = (frames[f].wrapping_mul(view.layout.bone_count).wrapping_add(joint))
                    .wrapping_mul(crate::layout::TEXELS_PER_BONE)
                    .wrapping_add(r as u32);
                let width = view.layout.width.max(1);
                let b = texel4(view.texture, width, [t % width, t / width], "bone texture")?;
                for c in 0..4 {
                    row[c] += w * b[c];
                }
            }
        }
    }
    Ok(m)
}

/// `vat_morph_clip_weights`: the weights of targets `4g..4g + 4` at the sampled frames,
/// `Σ_f w_f W(f)`, zero frame weights skipped.
fn morph_clip_weights(
    morph: &MorphView<'_>,
    (frames, fw): ([u32; 4], [f32; 4]),
    group: u32,
) -> Result<[f32; 4]> {
    let mut w = [0.0f32; 4];
    let per_frame = morph.layout.target_count.div_ceil(MORPH_WEIGHTS_PER_TEXEL);
    let width = morph.weights_layout.width.max(1);
    for f in 0..4 {
        let wf = fw[f];
        if wf == 0.0 {
            continue;
        }
        let t = frames[f].wrapping_mul(per_frame).wrapping_add(group);
        let texel = texel4(morph.weights, width, [t % width, t / width], "morph weights")?;
        for c in 0..4 {
            w[c] += wf * texel[c];
        }
    }
    Ok(w)
}

/// The blended weight of every morph target of `morph` for one instance state: clip A's sampled
/// frames `a`, cross-faded with clip B's `b` by `fade` (`(1 - fade) * w_a + fade * w_b`, only when
/// `fade > 0`), exactly as `vat_morph_rest` blends them.
fn morph_target_weights(
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
fn morph_rest(
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
fn affine_point(m: &Affine, p: [f32; 3]) -> [f32; 3] {
    std::array::from_fn(|r| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3])
}

/// `vat_affine_normal`: `normalize(sign(det M3) cof(M3) n)`, cofactor columns `c1 x c2`, `c2 x c0`,
/// `c0 x c1`.
fn affine_normal(m: &Affine, n: [f32; 3]) -> [f32; 3] {
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
    let rest = view.rest.get(vertex as usize).ok_or(Error::OutOfRange {
        what: "vertex index",
        value: vertex.to_string(),
        expected: "< the asset's vertex count",
    })?;
    let sa = clip_frames(view.clips, instance.slot_a(), time, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    let mut sb = sa;
    let mut m = skin_clip(view, sa, vertex)?;
    if w > 0.0 {
        sb = clip_frames(view.clips, instance.slot_b(), time, interp)?;
        let b = skin_clip(view, sb, vertex)?;
        for r in 0..3 {
            for c in 0..4 {
                m[r][c] = (1.0 - w) * m[r][c] + w * b[r][c];
            }
        }
    }
    let (p, n) = match &view.morph {
        Some(morph) => {
            let weights = morph_target_weights(morph, sa, sb, w)?;
            morph_rest(morph, &weights, vertex, rest.position, rest.normal)?
        }
        None => (rest.position, rest.normal),
    };
    Ok(to_world(instance, affine_point(&m, p), affine_normal(&m, n)))
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
    let Some(morph) = &view.morph else { return Ok(Vec::new()) };
    let sa = clip_frames(view.clips, instance.slot_a(), time, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    let sb = if w > 0.0 { clip_frames(view.clips, instance.slot_b(), time, interp)? } else { sa };
    morph_target_weights(morph, sa, sb, w)
}

/// Everything the decoder needs of a rigid asset ([`crate::container::RigidAnimation`]), borrowed
/// (the rest positions and normals read once from the streams).
#[derive(Debug, Clone)]
pub struct RigidAnimationView<'a> {
    /// The piece texture's layout (`vertex_count` is the number of pieces).
    pub layout: VertexTextureLayout,
    /// The pivot box.
    pub pivot_bounds: PositionBounds,
    /// The piece texture, `layout.byte_len(16)` bytes.
    pub pieces: &'a [u8],
    /// The rigid vertex texture, one 16-byte texel per vertex (row padding at the end).
    pub vertices: &'a [u8],
    /// Rest positions and normals per vertex, as the shader's `rest_vertices` holds them.
    pub rest: Vec<crate::gpu::RestVertex>,
    /// The clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> RigidAnimationView<'a> {
    /// The rigid animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a rigid bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let ra = manifest.rigid_animation.as_ref().ok_or(Error::OutOfRange {
            what: "rigid animation",
            value: "none".into(),
            expected: "an asset baked in the rigid mode",
        })?;
        Ok(Self {
            layout: ra.layout,
            pivot_bounds: ra.pivot_bounds,
            pieces: asset.blob(ra.pieces),
            vertices: asset.blob(ra.vertices),
            rest: crate::gpu::rest_vertices(asset),
            clips: &manifest.clips,
        })
    }

    /// Pieces per frame.
    pub fn piece_count(&self) -> u32 {
        self.layout.vertex_count
    }

    /// The piece texel of `piece` at absolute frame `frame`, decoded (`vat_rigid_piece_texel`).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for a frame or piece outside the texture.
    pub fn piece_sample(&self, frame: u32, piece: u32) -> Result<crate::rigid::PieceSample> {
        if frame >= self.layout.frame_count || piece >= self.layout.vertex_count {
            return Err(Error::IndexOutOfRange {
                what: "rigid piece texel",
                index: u64::from(frame) * u64::from(self.layout.vertex_count) + u64::from(piece),
                count: self.layout.texel_count(),
            });
        }
        let texel = crate::rigid::texel_at(self.pieces, self.layout.texel_index(frame, piece))?;
        Ok(crate::rigid::decode_piece_texel(texel))
    }

    /// The piece index and rest pivot of `vertex`.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for a vertex outside the texture.
    pub fn vertex_piece(&self, vertex: u32) -> Result<(u32, [f32; 3])> {
        Ok(crate::rigid::decode_vertex_texel(crate::rigid::texel_at(self.vertices, vertex.into())?))
    }
}

/// One clip of a piece at given frames and weights (`vat_rigid_clip`).
fn rigid_clip(
    view: &RigidAnimationView<'_>,
    (frames, w): ([u32; 4], [f32; 4]),
    piece: u32,
    interp: Interpolation,
) -> Result<crate::rigid::PieceSample> {
    use crate::rigid::{PieceSample, quat_align};
    let load = |k: usize| view.piece_sample(frames[k], piece);
    match interp {
        Interpolation::Point => load(if w[1] == 1.0 { 1 } else { 2 }),
        Interpolation::Linear => {
            let (b, c) = (load(1)?, load(2)?);
            let qc = quat_align(c.rotation, b.rotation);
            Ok(PieceSample {
                pivot: std::array::from_fn(|i| w[1] * b.pivot[i] + w[2] * c.pivot[i]),
                rotation: std::array::from_fn(|i| w[1] * b.rotation[i] + w[2] * qc[i]),
            })
        }
        Interpolation::Cubic => {
            let (b, c) = (load(1)?, load(2)?);
            let qc = quat_align(c.rotation, b.rotation);
            let (a, d) = (load(0)?, load(3)?);
            let (qa, qd) = (quat_align(a.rotation, b.rotation), quat_align(d.rotation, b.rotation));
            Ok(PieceSample {
                pivot: std::array::from_fn(|i| {
                    ((w[0] * a.pivot[i] + w[1] * b.pivot[i]) + w[2] * c.pivot[i]) + w[3] * d.pivot[i]
                }),
                rotation: std::array::from_fn(|i| {
                    ((w[0] * qa[i] + w[1] * b.rotation[i]) + w[2] * qc[i]) + w[3] * qd[i]
                }),
            })
        }
    }
}

/// The pivot (object space, metres) and unit rotation of `piece` for `instance` at epoch-relative
/// `time`, as `vat_rigid_vertex` computes them before placing a vertex: clip A, cross-faded to clip
/// B while a fade runs (B's quaternion aligned with A's), the quaternion normalised once, the pivot
/// denormalised from the pivot box.
///
/// # Errors
/// [`Error::ZeroCount`] without clips; [`Error::IndexOutOfRange`] for a piece outside the asset.
pub fn decode_rigid_piece(
    view: &RigidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    piece: u32,
    interp: Interpolation,
) -> Result<([f32; 3], [f32; 4])> {
    let frames_a = clip_frames(view.clips, instance.slot_a(), time, interp)?;
    let mut mixed = rigid_clip(view, frames_a, piece, interp)?;
    let w = playback::fade_weight(time, instance.fade_start, instance.fade_duration());
    if w > 0.0 {
        let frames_b = clip_frames(view.clips, instance.slot_b(), time, interp)?;
        let b = rigid_clip(view, frames_b, piece, interp)?;
        let qb = crate::rigid::quat_align(b.rotation, mixed.rotation);
        let k = 1.0 - w;
        mixed.pivot = mix3(mixed.pivot, b.pivot, w);
        mixed.rotation = std::array::from_fn(|i| mixed.rotation[i] * k + qb[i] * w);
    }
    let q = crate::rigid::quat_normalize(mixed.rotation);
    Ok((view.pivot_bounds.denormalize(mixed.pivot), q))
}

/// Decodes vertex `vertex` of a rigid asset for `instance` at epoch-relative `time` (seconds), as
/// `vat_rigid_vertex` does: `pivot + rotate(q, rest_position - rest_pivot)`, the normal
/// `rotate(q, rest_normal)` normalised, then the instance transform (see
/// [`decode_rigid_piece`] for the pivot and rotation).
///
/// # Errors
/// [`Error::OutOfRange`] for a vertex outside the asset; those of [`decode_rigid_piece`].
pub fn decode_rigid_vertex(
    view: &RigidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    vertex: u32,
    interp: Interpolation,
) -> Result<DecodedVertex> {
    let rest = view.rest.get(vertex as usize).ok_or(Error::OutOfRange {
        what: "vertex index",
        value: vertex.to_string(),
        expected: "< the asset's vertex count",
    })?;
    let (piece, rest_pivot) = view.vertex_piece(vertex)?;
    let (pivot, q) = decode_rigid_piece(view, instance, time, piece, interp)?;
    let local = [
        rest.position[0] - rest_pivot[0],
        rest.position[1] - rest_pivot[1],
        rest.position[2] - rest_pivot[2],
    ];
    let r = crate::rigid::quat_rotate(q, local);
    let p = [pivot[0] + r[0], pivot[1] + r[1], pivot[2] + r[2]];
    let n = normalize3(crate::rigid::quat_rotate(q, rest.normal));
    Ok(to_world(instance, p, n))
}

/// Everything the decoder needs of a fluid asset ([`crate::container::FluidAnimation`]), borrowed.
#[derive(Debug, Clone)]
pub struct FluidAnimationView<'a> {
    /// The vertex animation holding every frame's vertices back to back (one "frame" of all of
    /// them: texel `d` is lookup entry `d`'s vertex).
    pub vertices: VertexAnimationView<'a>,
    /// The fluid's description (pool, frames, lookup layout).
    pub fluid: &'a crate::container::FluidAnimation,
    /// The lookup texture's bytes.
    pub lookup: &'a [u8],
    /// Corners of the pool (the asset's vertex count).
    pub corner_count: u32,
}

impl<'a> FluidAnimationView<'a> {
    /// The fluid animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a fluid bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let fluid = manifest.fluid_animation.as_ref().ok_or(Error::OutOfRange {
            what: "fluid animation",
            value: "none".into(),
            expected: "an asset baked in the fluid mode",
        })?;
        Ok(Self {
            vertices: VertexAnimationView::from_asset_unchecked(asset)?,
            fluid,
            lookup: asset.blob(fluid.lookup),
            corner_count: manifest.vertex_count,
        })
    }

    /// The lookup entry of `corner` at absolute frame `frame`: a vertex texel, or
    /// [`crate::fluid::COLLAPSED`].
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] outside the lookup texture.
    pub fn lookup_entry(&self, frame: u32, corner: u32) -> Result<u32> {
        crate::fluid::lookup_entry(self.lookup, self.fluid.lookup_layout.vertex_count, frame, corner)
    }

    /// The object-space position (metres) and unit normal of vertex texel `d` (a lookup entry other
    /// than [`crate::fluid::COLLAPSED`]).
    ///
    /// # Errors
    /// Texture-size errors of [`encoding::decode_vertex_texel`].
    pub fn object_vertex(&self, d: u32) -> Result<([f32; 3], [f32; 3])> {
        let v = &self.vertices;
        let t = encoding::decode_vertex_texel(v.format, v.position_bits, &v.textures, d.into())?;
        Ok((v.bounds.denormalize(t.position), normalize3(t.normal)))
    }
}

/// The absolute frame a fluid instance shows at epoch-relative `time` (`vat_fluid_frame`): clip
/// A's frame of point interpolation, whatever interpolation the renderer uses.
///
/// # Errors
/// [`Error::ZeroCount`] without clips.
pub fn fluid_frame(clips: &[Clip], instance: &InstanceRecord, time: f32) -> Result<u32> {
    let (frames, w) = clip_frames(clips, instance.slot_a(), time, Interpolation::Point)?;
    Ok(if w[1] == 1.0 { frames[1] } else { frames[2] })
}

/// Decodes pool corner `corner` of a fluid asset for `instance` at epoch-relative `time`
/// (seconds), as `vat_fluid_vertex` does: `None` for a collapsed corner, else the corner's vertex
/// at the instance's frame ([`fluid_frame`]) with the instance transform. Clip B and the
/// cross-fade are ignored (see [`crate::fluid`]).
///
/// # Errors
/// [`Error::OutOfRange`] for a corner outside the pool; those of [`fluid_frame`] and of the
/// texture reads.
pub fn decode_fluid_vertex(
    view: &FluidAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    corner: u32,
) -> Result<Option<DecodedVertex>> {
    if corner >= view.corner_count {
        return Err(Error::OutOfRange {
            what: "fluid corner index",
            value: corner.to_string(),
            expected: "< the pool's corner count (the asset's vertex count)",
        });
    }
    let frame = fluid_frame(view.vertices.clips, instance, time)?;
    let d = view.lookup_entry(frame, corner)?;
    if d == crate::fluid::COLLAPSED {
        return Ok(None);
    }
    let (p, n) = view.object_vertex(d)?;
    Ok(Some(to_world(instance, p, n)))
}

/// Everything the decoder needs of a sprite asset ([`crate::container::SpriteAnimation`]),
/// borrowed.
#[derive(Debug, Clone)]
pub struct SpriteAnimationView<'a> {
    /// The sprite's description (slots, layout, bounds).
    pub sprite: &'a crate::container::SpriteAnimation,
    /// The particle texture's bytes.
    pub particles: &'a [u8],
    /// The asset's clips, in texture order.
    pub clips: &'a [Clip],
}

impl<'a> SpriteAnimationView<'a> {
    /// The sprite animation of a validated asset, borrowing its blobs.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] if the asset is not a sprite bake.
    pub fn from_asset(asset: &'a Asset<'_>) -> Result<Self> {
        let manifest = asset.manifest();
        let sprite = manifest.sprite_animation.as_ref().ok_or(Error::OutOfRange {
            what: "sprite animation",
            value: "none".into(),
            expected: "an asset baked in the sprite mode",
        })?;
        Ok(Self { sprite, particles: asset.blob(sprite.particles), clips: &manifest.clips })
    }

    /// Particle slots of the asset (four card corners each).
    pub fn slot_count(&self) -> u32 {
        self.sprite.layout.vertex_count
    }

    /// The particle texel of `slot` at absolute frame `frame` (texel `frame * slots + slot`).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] outside the particle texture.
    pub fn texel(&self, frame: u32, slot: u32) -> Result<[u32; 4]> {
        let index = u64::from(frame) * u64::from(self.slot_count()) + u64::from(slot);
        crate::sprite::texel_at(self.particles, index)
    }
}

/// The particle slot `slot` of a sprite asset shows for `instance` at epoch-relative `time`
/// (seconds), as `vat_sprite_particle` computes it: clip A's two frames around the phase, the nearer
/// one at [`Interpolation::Point`], else [`crate::sprite::sample_particle`] between them (cubic
/// samples particles linearly too); clip B and the cross-fade are ignored. `None` where the slot is
/// dead. The centre is in object space.
///
/// # Errors
/// [`Error::OutOfRange`] for a slot past the asset's; [`Error::ZeroCount`] without clips; those of
/// the texture reads.
pub fn sprite_particle(
    view: &SpriteAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    slot: u32,
    interpolation: Interpolation,
) -> Result<Option<crate::sprite::Particle>> {
    if slot >= view.slot_count() {
        return Err(Error::OutOfRange {
            what: "sprite slot index",
            value: slot.to_string(),
            expected: "< the asset's slot count (its vertex count / 4)",
        });
    }
    let (frames, w) = clip_frames(view.clips, instance.slot_a(), time, Interpolation::Linear)?;
    let (f0, f1, t) = (frames[1], frames[2], w[2]);
    let b = view.sprite.sprite_bounds();
    if interpolation == Interpolation::Point {
        let texel = view.texel(if t < 0.5 { f0 } else { f1 }, slot)?;
        return Ok(crate::sprite::decode_particle_texel(&b, texel).map(|(p, _)| p));
    }
    Ok(crate::sprite::sample_particle(&b, view.texel(f0, slot)?, view.texel(f1, slot)?, t))
}

/// Corner `corner` (`0..4`) of the card of particle `p` (object-space centre) of `instance`, facing
/// the world point `camera`, as `vat_sprite_card` builds it (see [`crate::sprite`]): the centre
/// placed by the instance transform, `n = normalize(camera - centre)` (+Z when they coincide),
/// `right = normalize((n.z, 0, -n.x))` (+X when `n` is vertical), `up = cross(n, right)`, both
/// turned by the particle's rotation; corner offsets `(-1/2, -1/2)`, `(1/2, -1/2)`, `(1/2, 1/2)`,
/// `(-1/2, 1/2)` along them times `size * scale`. `object_position` is the particle's centre,
/// `object_normal` zero, `world_normal` `n`, `world_tangent` the turned right axis with sign +1.
pub fn sprite_card(
    p: &crate::sprite::Particle,
    instance: &InstanceRecord,
    corner: u32,
    camera: [f32; 3],
) -> DecodedVertex {
    let centre = to_world(instance, p.position, [0.0, 1.0, 0.0]).world_position;
    let n = normalize3([camera[0] - centre[0], camera[1] - centre[1], camera[2] - centre[2]]);
    let mut right = [1.0, 0.0, 0.0];
    let r2 = n[2] * n[2] + n[0] * n[0];
    if r2 > 1e-12 {
        let inv = 1.0 / r2.sqrt();
        right = [n[2] * inv, 0.0, -n[0] * inv];
    }
    let up = [
        n[1] * right[2] - n[2] * right[1],
        n[2] * right[0] - n[0] * right[2],
        n[0] * right[1] - n[1] * right[0],
    ];
    let (sr, cr) = p.rotation.sin_cos();
    let r: [f32; 3] = std::array::from_fn(|k| right[k] * cr + up[k] * sr);
    let u: [f32; 3] = std::array::from_fn(|k| up[k] * cr - right[k] * sr);
    let ox = if corner == 1 || corner == 2 { 0.5 } else { -0.5 };
    let oy = if corner >= 2 { 0.5 } else { -0.5 };
    let edge = p.size * instance.scale;
    let world_position = std::array::from_fn(|k| centre[k] + (r[k] * ox + u[k] * oy) * edge);
    DecodedVertex {
        object_position: p.position,
        object_normal: [0.0; 3],
        world_position,
        world_normal: n,
        world_tangent: [r[0], r[1], r[2], 1.0],
    }
}

/// Decodes card corner `corner` (slot `corner / 4`, corner `corner % 4`) of a sprite asset for
/// `instance` at epoch-relative `time` (seconds), facing the world point `camera`, as
/// `vat_sprite_vertex` does: [`sprite_particle`] then [`sprite_card`]; `None` for a dead slot.
///
/// # Errors
/// Those of [`sprite_particle`].
pub fn decode_sprite_corner(
    view: &SpriteAnimationView<'_>,
    instance: &InstanceRecord,
    time: f32,
    corner: u32,
    interpolation: Interpolation,
    camera: [f32; 3],
) -> Result<Option<DecodedVertex>> {
    let particle = sprite_particle(view, instance, time, corner / 4, interpolation)?;
    Ok(particle.map(|p| sprite_card(&p, instance, corner % 4, camera)))
}

/// `a * (1 - w) + b * w` per component (WGSL `mix`).
fn mix3(a: [f32; 3], b: [f32; 3], w: f32) -> [f32; 3] {
    let k = 1.0 - w;
    [a[0] * k + b[0] * w, a[1] * k + b[1] * w, a[2] * k + b[2] * w]
}

/// `x' = c x + s z`, `z' = c z - s x`.
fn rotate_y(c: f32, s: f32, v: [f32; 3]) -> [f32; 3] {
    [c * v[0] + s * v[2], v[1], c * v[2] - s * v[0]]
}

/// [`decode_object_frame`] of one whole Packed64 frame read alone (point interpolation, weight 1),
/// four vertices per step in SIMD lanes: per lane exactly the operations of
/// [`encoding::decode_packed64`], [`PositionBounds::denormalize`] and [`normalize3`] (each lane an
/// IEEE f32 operation of its own; no fused multiply-add), so every result is bit for bit the scalar
/// one (tested).
fn packed64_frame_x4(
    view: &VertexAnimationView<'_>,
    frame: u32,
    positions: &mut [[f32; 3]],
    normals: &mut [[f32; 3]],
) -> Result<()> {
    use glam::{BVec4A, Vec4};
    let n = positions.len();
    let start = view.layout.texel_index(frame, 0);
    let texture = view.textures.first().copied().unwrap_or(&[]);
    let (first, end) = (start as usize * 8, (start as usize + n) * 8);
    let bytes = texture.get(first..end).ok_or(Error::IndexOutOfRange {
        what: "texel index",
        index: start + n as u64,
        count: texture.len() as u64 / 8,
    })?;
    let b = view.position_bits.map(|b| b.min(encoding::PACKED64_MAX_AXIS_BITS));
    // dequantize_unorm's divisor per axis; 0 bits decode to 0 exactly (a flat axis).
    let max_q = b.map(|b| if b == 0 { 1.0 } else { ((1u32 << b.min(24)) - 1) as f32 });
    let zero_axis = b.map(|b| b == 0);
    let oct_max = Vec4::splat(((1u32 << encoding::PACKED64_NORMAL_BITS) - 1) as f32);
    let (min, extent) = (view.bounds.min, view.bounds.extent);
    let texel = |v: usize| {
        let t = &bytes[v * 8..v * 8 + 8];
        [u32::from_le_bytes([t[0], t[1], t[2], t[3]]), u32::from_le_bytes([t[4], t[5], t[6], t[7]])]
    };
    let normalize = |x: Vec4, y: Vec4, z: Vec4| {
        let d = x * x + y * y + z * z;
        let inv = Vec4::ONE / d.sqrt();
        let ok = d.cmpgt(Vec4::ZERO);
        (
            Vec4::select(ok, x * inv, Vec4::ZERO),
            Vec4::select(ok, y * inv, Vec4::ZERO),
            Vec4::select(ok, z * inv, Vec4::ONE),
        )
    };
    let sgn = |v: Vec4| Vec4::select(v.cmpge(Vec4::ZERO), Vec4::ONE, Vec4::NEG_ONE);
    for base in (0..n).step_by(4) {
        let lanes = (n - base).min(4);
        let mut q = [[0u32; 4]; 3];
        let mut o = [[0u32; 4]; 2];
        for l in 0..lanes {
            let (qv, ov) = encoding::unpack_texel(texel(base + l), view.position_bits);
            for a in 0..3 {
                q[a][l] = qv[a];
            }
            o[0][l] = ov[0];
            o[1][l] = ov[1];
        }
        let lane_f32 = |v: [u32; 4]| Vec4::new(v[0] as f32, v[1] as f32, v[2] as f32, v[3] as f32);
        let pos: [Vec4; 3] = std::array::from_fn(|a| {
            let nrm = if zero_axis[a] { Vec4::ZERO } else { lane_f32(q[a]) / Vec4::splat(max_q[a]) };
            Vec4::splat(min[a]) + nrm * Vec4::splat(extent[a])
        });
        let ox = lane_f32(o[0]) / oct_max * 2.0 - Vec4::ONE;
        let oy = lane_f32(o[1]) / oct_max * 2.0 - Vec4::ONE;
        let z = Vec4::ONE - ox.abs() - oy.abs();
        let folded: BVec4A = z.cmplt(Vec4::ZERO);
        let x = Vec4::select(folded, (Vec4::ONE - oy.abs()) * sgn(ox), ox);
        let y = Vec4::select(folded, (Vec4::ONE - ox.abs()) * sgn(oy), oy);
        // oct_decode_f32's normalize, then the decoder's own after the (here trivial) blend.
        let (x, y, z) = normalize(x, y, z);
        let (x, y, z) = normalize(x, y, z);
        for l in 0..lanes {
            positions[base + l] = [pos[0].to_array()[l], pos[1].to_array()[l], pos[2].to_array()[l]];
            normals[base + l] = [x.to_array()[l], y.to_array()[l], z.to_array()[l]];
        }
    }
    Ok(())
}

/// `vat_normalize` of the shader: WGSL `normalize`, with the zero vector mapped to +Z instead of NaN.
fn normalize3(v: [f32; 3]) -> [f32; 3] {
    let d = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    if d > 0.0 {
        let inv = 1.0 / d.sqrt();
        [v[0] * inv, v[1] * inv, v[2] * inv]
    } else {
        [0.0, 0.0, 1.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clip::{ClipMode, ClipRowMap};
    use crate::container::{ContainerWriter, Manifest, VertexAnimation};
    use crate::encoding::{
        NormalRounding, allocate_position_bits, encode_vertex_texture, position_error_bound,
    };
    use crate::layout::{BoneTextureLayout, MorphChannel, MorphTextureLayout, MorphWeightsLayout};

    const VERTICES: u32 = 5;

    /// The analytic animation baked by these tests: smooth in vertex and frame, ~1 m across.
    fn truth(vertex: u32, frame: u32) -> ([f32; 3], [f32; 3]) {
        let (v, f) = (vertex as f32, frame as f32);
        let p = [(v + f * 0.7).sin() * 0.5, v * 0.3 + f * 0.05, (v * 1.3 + f).cos() * 0.4];
        let n = [(v + f).cos(), 0.5, (v * 2.0 + f).sin()];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        (p, [n[0] / len, n[1] / len, n[2] / len])
    }

    /// A `.vat` with a looping clip "loop" (4 frames at 4 fps) and a one-shot clip "once" (3 frames
    /// at 2 fps), 5 vertices, in `format`.
    fn bake(format: VertexFormat) -> Vec<u8> {
        let mut clips = ClipRowMap::new();
        clips.push("loop", 1.0, 4.0, ClipMode::Looping, 0.0).unwrap();
        clips.push("once", 1.0, 2.0, ClipMode::OneShot, 0.0).unwrap();
        let frames = clips.total_frames();
        let layout = VertexTextureLayout::new(VERTICES, frames, 16384).unwrap();
        let (mut positions, mut normals) = (Vec::new(), Vec::new());
        for f in 0..frames {
            for v in 0..VERTICES {
                let (p, n) = truth(v, f);
                positions.push(p);
                normals.push(n);
            }
        }
        let bounds = PositionBounds::from_points(positions.iter().copied()).unwrap();
        let bits =
            if format == VertexFormat::Packed64 { allocate_position_bits(bounds.extent) } else { [0; 3] };
        let textures = encode_vertex_texture(
            &layout,
            format,
            &bounds,
            bits,
            &positions,
            &normals,
            NormalRounding::Nearest,
        )
        .unwrap();
        let mut writer = ContainerWriter::new();
        let textures = textures.into_iter().map(|t| writer.add_blob(t)).collect();
        let mut manifest = Manifest::new("reference-test", VERTICES);
        manifest.clips = clips.clips().to_vec();
        manifest.vertex_animation =
            Some(VertexAnimation { layout, format, bounds, position_bits: bits, textures, tangents: None });
        writer.finish(manifest).unwrap()
    }

    const FORMATS: [VertexFormat; 6] = VertexFormat::ALL;

    fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
        let dot: f64 = (0..3).map(|i| f64::from(a[i]) * f64::from(b[i])).sum();
        let la: f64 = (0..3).map(|i| f64::from(a[i]).powi(2)).sum::<f64>().sqrt();
        let lb: f64 = (0..3).map(|i| f64::from(b[i]).powi(2)).sum::<f64>().sqrt();
        (dot / (la * lb)).clamp(-1.0, 1.0).acos().to_degrees()
    }

    fn playing(clip: u32, rate: f32) -> InstanceRecord {
        InstanceRecord { clip_a: clip, rate_a: rate, ..Default::default() }
    }

    #[test]
    fn on_frame_times_decode_every_format_within_its_bound() {
        for format in FORMATS {
            let bytes = bake(format);
            let asset = Asset::parse(&bytes).unwrap();
            let view = VertexAnimationView::from_asset(&asset).unwrap();
            let bound = position_error_bound(format, view.position_bits, &view.bounds);
            // The normal passes the texel's unit vector through one more normalisation (a sum with
            // weight 1): at most a few f32 roundings, far below 1e-4 degrees.
            let normal_bound = f64::from(encoding::normal_error_bound_degrees(format)) + 1e-4;
            for interp in [Interpolation::Point, Interpolation::Linear, Interpolation::Cubic] {
                // rate 1 cycle/s over 4 frames: time k/4 is exactly frame k (t = 0).
                for k in 0..4u32 {
                    for v in 0..VERTICES {
                        let d = decode_vertex(&view, &playing(0, 1.0), k as f32 / 4.0, v, interp).unwrap();
                        let (p, n) = truth(v, k);
                        for a in 0..3 {
                            let err = (d.object_position[a] - p[a]).abs();
                            assert!(
                                err <= bound[a],
                                "{format:?} {interp:?} frame {k} vertex {v}: {err} > {}",
                                bound[a]
                            );
                        }
                        let ang = angle_deg(d.object_normal, n);
                        assert!(ang <= normal_bound, "{format:?} frame {k} vertex {v}: normal {ang} deg");
                        // Identity instance: world == object.
                        assert_eq!(d.world_position, d.object_position);
                    }
                }
            }
        }
    }

    #[test]
    fn linear_midpoints_blend_the_frame_pair_and_wrap_to_frame_zero() {
        let bytes = bake(VertexFormat::Packed64);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        for k in 0..4u32 {
            let next = (k + 1) % 4; // the looping clip wraps: no duplicated end frame
            for v in 0..VERTICES {
                let time = (k as f32 + 0.5) / 4.0;
                let d = decode_vertex(&view, &playing(0, 1.0), time, v, Interpolation::Linear).unwrap();
                let a = encoding::decode_vertex_texel(
                    view.format,
                    view.position_bits,
                    &view.textures,
                    view.layout.texel_index(k, v),
                )
                .unwrap();
                let b = encoding::decode_vertex_texel(
                    view.format,
                    view.position_bits,
                    &view.textures,
                    view.layout.texel_index(next, v),
                )
                .unwrap();
                let mid: [f32; 3] = std::array::from_fn(|i| 0.5 * a.position[i] + 0.5 * b.position[i]);
                assert_eq!(d.object_position, view.bounds.denormalize(mid), "frame {k} vertex {v}");
            }
        }
    }

    #[test]
    fn one_shot_clips_clamp_to_their_last_frame() {
        let bytes = bake(VertexFormat::F32);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let once = &view.clips[1];
        let last = once.first_frame + once.frame_count - 1;
        for time in [1.0f32, 5.0, 1000.0] {
            let d = decode_vertex(&view, &playing(1, 1.0), time, 2, Interpolation::Cubic).unwrap();
            let t = encoding::decode_vertex_texel(
                view.format,
                view.position_bits,
                &view.textures,
                view.layout.texel_index(last, 2),
            )
            .unwrap();
            assert_eq!(d.object_position, view.bounds.denormalize(t.position));
        }
        // Before the start it holds the first frame.
        let d = decode_vertex(&view, &playing(1, 1.0), -3.0, 2, Interpolation::Linear).unwrap();
        let t = encoding::decode_vertex_texel(
            view.format,
            view.position_bits,
            &view.textures,
            view.layout.texel_index(once.first_frame, 2),
        )
        .unwrap();
        assert_eq!(d.object_position, view.bounds.denormalize(t.position));
    }

    #[test]
    fn cross_fade_blends_clip_b_in_over_the_fade() {
        let bytes = bake(VertexFormat::Packed64);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let mut inst = playing(0, 0.75);
        inst.rate_b = 0.5;
        inst.fade_start = 2.0;
        inst.set_clip_b(1, 0.5);
        let only_b = InstanceRecord { clip_a: 1, rate_a: 0.5, ..Default::default() };
        let only_a = playing(0, 0.75);
        let scale =
            view.bounds.min.iter().zip(view.bounds.extent).map(|(m, e)| m.abs() + e).fold(0.0, f32::max);
        for (time, w) in [(1.9f32, 0.0f32), (2.0, 0.0), (2.125, 0.25), (2.25, 0.5), (2.5, 1.0), (9.0, 1.0)] {
            for v in 0..VERTICES {
                let d = decode_vertex(&view, &inst, time, v, Interpolation::Linear).unwrap();
                let a = decode_vertex(&view, &only_a, time, v, Interpolation::Linear).unwrap();
                let b = decode_vertex(&view, &only_b, time, v, Interpolation::Linear).unwrap();
                // The shader mixes normalised positions, then decodes (affine): mixing decoded positions
                // instead differs by the rounding of the mix and the decode, a few ulps of the box.
                let tol = 8.0 * f32::EPSILON * scale;
                for i in 0..3 {
                    let expected = a.object_position[i] * (1.0 - w) + b.object_position[i] * w;
                    assert!(
                        (d.object_position[i] - expected).abs() <= tol,
                        "t {time} v {v}: {d:?} vs {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn instance_transform_is_translate_rotate_y_scale() {
        let bytes = bake(VertexFormat::F32);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        let base = decode_vertex(&view, &playing(0, 1.0), 0.3, 3, Interpolation::Linear).unwrap();
        let inst = InstanceRecord {
            position: [10.0, 1.0, -4.0],
            yaw: std::f32::consts::FRAC_PI_2,
            scale: 2.0,
            ..playing(0, 1.0)
        };
        let d = decode_vertex(&view, &inst, 0.3, 3, Interpolation::Linear).unwrap();
        let [x, y, z] = base.object_position;
        // Yaw +90 degrees about +Y turns +Z into +X and +X into -Z.
        let expected = [10.0 + 2.0 * z, 1.0 + 2.0 * y, -4.0 - 2.0 * x];
        // f32 cos(pi/2) is -4.4e-8, not 0: that term and the roundings stay below 1e-6 m here.
        for i in 0..3 {
            assert!((d.world_position[i] - expected[i]).abs() < 1e-6, "{d:?} vs {expected:?}");
        }
        let n = base.object_normal;
        assert!(angle_deg(d.world_normal, [n[2], n[1], -n[0]]) < 1e-4);
        assert_eq!(d.object_position, base.object_position);
    }

    /// A bone-mode asset by hand: 3 vertices on one bone whose matrix at frame `f` translates by
    /// `(f, 0, 0)` and scales z by 2; 5 morph targets (two weight texels per frame) whose position
    /// delta of vertex `v` for target `t` is `(0, t + 1, v) / 8` and normal delta `(t, 0, 0) / 4`;
    /// target `t`'s weight at frame `f` is `(f + 1) * (t + 1) / 16`, except target 2, always 0. Clips
    /// "loop" (4 frames) and "once" (3 frames).
    fn bone_bake() -> Vec<u8> {
        use crate::container::{BoneAnimation, ElementFormat, MorphAnimation, StreamKind, VertexStream};
        use crate::encoding::TexelFormat;
        let mut clips = ClipRowMap::new();
        clips.push("loop", 1.0, 4.0, ClipMode::Looping, 0.0).unwrap();
        clips.push("once", 1.0, 2.0, ClipMode::OneShot, 0.0).unwrap();
        let frames = clips.total_frames();
        let n = 3u32;
        let f32s = |v: Vec<f32>| -> Vec<u8> { v.into_iter().flat_map(f32::to_le_bytes).collect() };
        let mut w = ContainerWriter::new();
        let bones = BoneTextureLayout::new(1, frames, 16384).unwrap();
        let mut bone_texels = Vec::new();
        for f in 0..frames {
            bone_texels.extend([1.0, 0.0, 0.0, f as f32, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
        }
        bone_texels.resize(bones.byte_len(4) as usize, 0.0);
        let texture = w.add_blob(f32s(bone_texels));
        let joints = w.add_blob(vec![0u8; (n * 4 * 2) as usize]);
        let weights = w.add_blob(f32s((0..n).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect()));
        let rest_p = w.add_blob(f32s((0..n).flat_map(|v| [v as f32, 1.0, 0.5]).collect()));
        let rest_n = w.add_blob(f32s((0..n).flat_map(|_| [0.0, 0.0, 1.0]).collect()));
        let targets = 5;
        let layout = MorphTextureLayout::new(n, targets).unwrap();
        let mut deltas = vec![0.0f32; layout.byte_len(4) as usize];
        for t in 0..targets {
            for v in 0..n {
                let [x, y] = layout.texel_coord(t, MorphChannel::Position, v);
                let i = ((y * layout.width + x) * 4) as usize;
                deltas[i..i + 3].copy_from_slice(&[0.0, (t + 1) as f32 / 8.0, v as f32 / 8.0]);
                let [x, y] = layout.texel_coord(t, MorphChannel::Normal, v);
                let i = ((y * layout.width + x) * 4) as usize;
                deltas[i] = t as f32 / 4.0;
            }
        }
        let texture_m = w.add_blob(f32s(deltas));
        let weights_layout = MorphWeightsLayout::new(targets, frames, 16384).unwrap();
        let mut track = vec![0.0f32; weights_layout.byte_len(4) as usize];
        for f in 0..frames {
            for t in (0..targets).filter(|&t| t != 2) {
                track[weights_layout.value_index(f, t) as usize] = ((f + 1) * (t + 1)) as f32 / 16.0;
            }
        }
        let weights_m = w.add_blob(f32s(track));
        let mut m = Manifest::new("bone-reference-test", n);
        m.clips = clips.clips().to_vec();
        m.bones = vec![crate::container::Bone { name: "root".into(), parent: None }];
        m.bone_animation = Some(BoneAnimation { layout: bones, texture, influences: 4, joints, weights });
        m.streams = vec![
            VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest_p },
            VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: rest_n },
        ];
        m.morph_animation = Some(MorphAnimation {
            layout,
            format: TexelFormat::Rgba32Float,
            texture: texture_m,
            weights_layout,
            weights: weights_m,
            target_names: (0..targets).map(|t| format!("t{t}")).collect(),
        });
        w.finish(m).unwrap()
    }

    /// What the bone bake above should give for vertex `v` with target weights `w` and matrix
    /// translation `tx` (exact in f64).
    fn bone_expected(v: u32, w: &[f64], tx: f64) -> ([f64; 3], [f64; 3]) {
        let (mut p, mut n) = ([f64::from(v), 1.0, 0.5], [0.0, 0.0, 1.0]);
        for (t, &wt) in w.iter().enumerate() {
            p[1] += wt * (t + 1) as f64 / 8.0;
            p[2] += wt * f64::from(v) / 8.0;
            n[0] += wt * t as f64 / 4.0;
        }
        // M = translate(tx, 0, 0) * scale(1, 1, 2); normal by the cofactor: z scaled by 1/2 (x, y by 1
        // after dividing by det 2).
        let p = [p[0] + tx, p[1], 2.0 * p[2]];
        let c = [2.0 * n[0], 2.0 * n[1], n[2]];
        let len = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
        (p, c.map(|x| x / len))
    }

    #[test]
    fn bone_mode_blends_morph_weights_like_bone_matrices_and_adds_deltas_before_skinning() {
        let bytes = bone_bake();
        let asset = Asset::parse(&bytes).unwrap();
        let view = BoneAnimationView::from_asset(&asset).unwrap();
        assert_eq!(view.vertex_count(), 3);
        let track = |f: u32| -> Vec<f64> {
            (0..5).map(|t| if t == 2 { 0.0 } else { f64::from((f + 1) * (t + 1)) / 16.0 }).collect()
        };
        // Every value here is a small dyadic rational: f32 computes them exactly, so the bound is
        // 1 ulp of the magnitudes (<= 8) for the one rounding the normalisation adds.
        let tol = 8.0 * f64::from(f32::EPSILON);
        let check = |d: DecodedVertex, (p, n): ([f64; 3], [f64; 3]), what: &str| {
            for i in 0..3 {
                assert!((f64::from(d.object_position[i]) - p[i]).abs() <= tol, "{what}: {d:?} vs {p:?}");
                assert!((f64::from(d.object_normal[i]) - n[i]).abs() <= tol, "{what}: {d:?} vs {n:?}");
            }
        };
        // Frame k of "loop" exactly (rate 1 cycle/s over 4 frames: time k/4), and halfway to k + 1
        // (weights and matrices both the lerp; the clip wraps from frame 3 to 0).
        for k in 0..4u32 {
            for v in 0..3 {
                let d = decode_bone_vertex(&view, &playing(0, 1.0), k as f32 / 4.0, v, Interpolation::Linear)
                    .unwrap();
                check(d, bone_expected(v, &track(k), f64::from(k)), "on frame");
                let next = (k + 1) % 4;
                let mid: Vec<f64> =
                    track(k).iter().zip(track(next)).map(|(a, b)| 0.5 * a + 0.5 * b).collect();
                let time = (k as f32 + 0.5) / 4.0;
                let d = decode_bone_vertex(&view, &playing(0, 1.0), time, v, Interpolation::Linear).unwrap();
                check(d, bone_expected(v, &mid, 0.5 * f64::from(k) + 0.5 * f64::from(next)), "mid-frame");
            }
        }
        // A cross-fade from "loop" frame 1 to "once" (frames 4..7, held at its last) at weight 1/4.
        let mut inst = InstanceRecord { clip_a: 0, phase_offset_a: 0.25, rate_a: 0.0, ..Default::default() };
        inst.set_clip_b(1, 4.0);
        inst.phase_offset_b = 1.0;
        inst.fade_start = -1.0;
        let weights = morph_weights_at(&view, &inst, 0.0, Interpolation::Linear).unwrap();
        let blended: Vec<f64> = track(1).iter().zip(track(6)).map(|(a, b)| 0.75 * a + 0.25 * b).collect();
        assert_eq!(weights.iter().map(|&w| f64::from(w)).collect::<Vec<_>>(), blended);
        assert_eq!(weights[2], 0.0, "a target of weight 0 stays 0 (and is skipped)");
        for v in 0..3 {
            let d = decode_bone_vertex(&view, &inst, 0.0, v, Interpolation::Linear).unwrap();
            check(d, bone_expected(v, &blended, 0.75 * 1.0 + 0.25 * 6.0), "cross-fade");
        }
        // Without a morph layer the rest pose is skinned as it is.
        let mut plain = view.clone();
        plain.morph = None;
        let d = decode_bone_vertex(&plain, &playing(0, 1.0), 0.5, 1, Interpolation::Linear).unwrap();
        check(d, bone_expected(1, &[], 2.0), "no morph layer");
        assert!(morph_weights_at(&plain, &playing(0, 1.0), 0.5, Interpolation::Linear).unwrap().is_empty());
        assert!(matches!(
            decode_bone_vertex(&view, &playing(0, 1.0), 0.0, 3, Interpolation::Linear),
            Err(Error::OutOfRange { what: "vertex index", .. })
        ));
        // A VAT-only asset has no bone mode.
        let vat_only = bake(VertexFormat::Packed64);
        let asset = Asset::parse(&vat_only).unwrap();
        assert!(matches!(BoneAnimationView::from_asset(&asset), Err(Error::MissingSection { .. })));
    }

    #[test]
    fn whole_frames_decode_bit_for_bit_like_single_vertices() {
        for format in [VertexFormat::Packed64, VertexFormat::F16, VertexFormat::Unorm8] {
            let bytes = bake(format);
            let asset = Asset::parse(&bytes).unwrap();
            let view = VertexAnimationView::from_asset(&asset).unwrap();
            let n = view.layout.vertex_count as usize;
            for clip in 0..view.clips.len() as u32 {
                for (offset, interp) in
                    [(0.1, Interpolation::Point), (0.37, Interpolation::Linear), (0.9, Interpolation::Cubic)]
                {
                    let (mut p, mut nrm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
                    decode_object_frame(&view, clip, offset, interp, &mut p, &mut nrm).unwrap();
                    let instance = InstanceRecord {
                        clip_a: clip,
                        phase_offset_a: offset,
                        rate_a: 0.0,
                        ..Default::default()
                    };
                    for v in 0..n {
                        let d = decode_vertex(&view, &instance, 0.0, v as u32, interp).unwrap();
                        let bits = |a: [f32; 3]| a.map(f32::to_bits);
                        assert_eq!(bits(p[v]), bits(d.object_position), "{format:?} clip {clip} vertex {v}");
                        assert_eq!(bits(nrm[v]), bits(d.object_normal), "{format:?} clip {clip} vertex {v}");
                    }
                }
            }
            let mut short = vec![[0.0; 3]; n - 1];
            let mut nrm = vec![[0.0; 3]; n];
            assert!(decode_object_frame(&view, 0, 0.0, Interpolation::Point, &mut short, &mut nrm).is_err());
        }
    }

    #[test]
    fn bad_indices_are_errors_and_clip_indices_clamp_like_the_shader() {
        let bytes = bake(VertexFormat::Unorm16);
        let asset = Asset::parse(&bytes).unwrap();
        let view = VertexAnimationView::from_asset(&asset).unwrap();
        assert!(matches!(
            decode_vertex(&view, &playing(0, 1.0), 0.0, VERTICES, Interpolation::Linear),
            Err(Error::OutOfRange { what: "vertex index", .. })
        ));
        let past = decode_vertex(&view, &playing(7, 1.0), 0.2, 1, Interpolation::Linear).unwrap();
        let last = decode_vertex(&view, &playing(1, 1.0), 0.2, 1, Interpolation::Linear).unwrap();
        assert_eq!(past, last);
        let mut no_clips = view.clone();
        no_clips.clips = &[];
        assert!(decode_vertex(&no_clips, &playing(0, 1.0), 0.0, 0, Interpolation::Linear).is_err());
    }

    /// A rigid asset of one piece (two vertices) and one looping clip of two frames: at rest, then
    /// turned 90 degrees about +Y and moved 1 m along +X, its second quaternion stored negated (the
    /// other hemisphere), so the decoder must align it before the blend.
    fn rigid_bytes() -> Vec<u8> {
        use crate::container::{ElementFormat, Lod, RigidAnimation, StreamKind, VertexStream};
        use crate::rigid::{encode_piece_texel, encode_vertex_texel};
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let pivot_bounds = PositionBounds { min: [0.0; 3], extent: [1.0, 0.0, 0.0] };
        let mut w = ContainerWriter::new();
        let texel_bytes = |t: [u32; 4]| t.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut pieces =
            texel_bytes(encode_piece_texel(&pivot_bounds, [0.0; 3], [0.0, 0.0, 0.0, 1.0]).unwrap());
        pieces.extend(texel_bytes(
            encode_piece_texel(&pivot_bounds, [1.0, 0.0, 0.0], [0.0, -h, 0.0, -h]).unwrap(),
        ));
        let pieces = w.add_blob(pieces);
        let vertices = w.add_blob(
            [encode_vertex_texel(0, [0.0; 3]), encode_vertex_texel(0, [0.0; 3])]
                .into_iter()
                .flat_map(texel_bytes)
                .collect::<Vec<u8>>(),
        );
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let rest = w.add_blob(f32s(&[0.0, 0.0, 1.0, 0.0, 1.0, 0.0]));
        let normals = w.add_blob(f32s(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]));
        let indices = w.add_blob([0u32, 1, 0].iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>());
        let mut m = Manifest::new("rigid", 2);
        let mut clips = ClipRowMap::new();
        clips.push("turn", 2.0 / 30.0, 30.0, ClipMode::Looping, 0.0).unwrap();
        m.clips = clips.clips().to_vec();
        m.streams = vec![
            VertexStream { kind: StreamKind::RestPosition, element: ElementFormat::F32x3, blob: rest },
            VertexStream { kind: StreamKind::RestNormal, element: ElementFormat::F32x3, blob: normals },
        ];
        m.indices = Some(indices);
        m.lods = vec![Lod {
            first_index: 0,
            index_count: 3,
            triangle_count: 1,
            screen_error: 0.0,
            max_distance: f32::INFINITY,
        }];
        m.rigid_animation = Some(RigidAnimation {
            layout: VertexTextureLayout { vertex_count: 1, frame_count: 2, width: 1, height: 2 },
            pivot_bounds,
            bounds: PositionBounds { min: [-1.0, -1.0, -1.0], extent: [3.0, 3.0, 3.0] },
            pieces,
            vertex_layout: VertexTextureLayout { vertex_count: 2, frame_count: 1, width: 2, height: 1 },
            vertices,
            piece_names: vec!["piece".into()],
        });
        w.finish(m).unwrap()
    }

    #[test]
    fn rigid_decode_nlerps_the_short_way_and_cross_fades() {
        let bytes = rigid_bytes();
        let asset = Asset::parse(&bytes).unwrap();
        let view = RigidAnimationView::from_asset(&asset).unwrap();
        let close = |a: [f32; 3], b: [f32; 3], tol: f32| (0..3).all(|i| (a[i] - b[i]).abs() <= tol);
        // Half-way between the frames (phase 0.25 of a 2-frame loop): turned 45 degrees (not 135:
        // the negated quaternion is aligned first), the pivot half-way.
        let at = |phase: f32| InstanceRecord { phase_offset_a: phase, ..Default::default() };
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let v = decode_rigid_vertex(&view, &at(0.25), 0.0, 0, Interpolation::Linear).unwrap();
        // Rotating +Z by 45 degrees about +Y gives (sin 45, 0, cos 45); plus the pivot (0.5, 0, 0).
        // Tolerance: the snorm16 quantum and the unorm16 pivot quantum, a few 1e-5.
        assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
        assert!(close(v.object_normal, [h, 0.0, h], 1e-4), "{:?}", v.object_normal);
        // At the frames themselves the stored transforms come back.
        let v = decode_rigid_vertex(&view, &at(0.5), 0.0, 0, Interpolation::Point).unwrap();
        assert!(close(v.object_position, [2.0, 0.0, 0.0], 1e-4), "{:?}", v.object_position);
        let v = decode_rigid_vertex(&view, &at(0.0), 0.0, 1, Interpolation::Point).unwrap();
        assert!(close(v.object_position, [0.0, 1.0, 0.0], 1e-6), "{:?}", v.object_position);
        // The loop wraps from frame 1 back to frame 0 the short way too (phase 0.75).
        let v = decode_rigid_vertex(&view, &at(0.75), 0.0, 0, Interpolation::Linear).unwrap();
        assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
        // A cross-fade half-way from frame 0 (clip A at phase 0) to frame 1 (clip B at 0.5) blends
        // like the lerp between the frames.
        let mut r = at(0.0);
        r.phase_offset_b = 0.5;
        r.fade_start = -0.5;
        r.set_clip_b(0, 1.0);
        let v = decode_rigid_vertex(&view, &r, 0.0, 0, Interpolation::Point).unwrap();
        assert!(close(v.object_position, [0.5 + h, 0.0, h], 1e-4), "{:?}", v.object_position);
        // The piece's own decode: the pivot and a unit quaternion.
        let (pivot, q) = decode_rigid_piece(&view, &at(0.25), 0.0, 0, Interpolation::Linear).unwrap();
        assert!(close(pivot, [0.5, 0.0, 0.0], 1e-4));
        assert!((crate::rigid::quat_dot(q, q) - 1.0).abs() < 1e-6);
        // Out of range: typed errors.
        assert!(decode_rigid_vertex(&view, &at(0.0), 0.0, 2, Interpolation::Point).is_err());
        assert!(view.piece_sample(2, 0).is_err());
    }
}
