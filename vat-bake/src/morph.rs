//! Bone mode's live morph layer: the body's morph targets baked as vat-core's tiled morph delta
//! texture plus a per-frame weights track ([`vat_core::container::MorphAnimation`]), so that bone
//! mode plays the morph animation the vertex texture already holds.
//!
//! - **Targets.** One global target per [`SetMorphTarget`] of the vertex set, in set order (meshes
//!   in rig order, each mesh's targets in order): meshes with different targets give the union, each
//!   target's deltas zero on the other meshes' vertices. Deltas are the set's bind-space deltas (what
//!   CPU skinning adds before skinning), stored densely: vertex `v` of target `t` at
//!   [`MorphTextureLayout::texel_coord`], xyz = delta, w = 0, `Rgba32Float`. A target without normal
//!   deltas has a zero normal band. Tangent deltas are not baked: bone mode skins no tangents.
//! - **Weights.** Target `t`'s weight at baked frame `f` is the weight CPU skinning gives it in that
//!   frame's pose (`pose.morph_weights[mesh][target]`, 0 when the mesh has fewer), at
//!   [`MorphWeightsLayout::value_index`]`(f, t)`; `f` is the global frame index of the clip row map,
//!   the frame numbering of the vertex and bone textures.
//! - **Format.** f32, not binary16: a binary16 delta of up to 1 m would be off by up to 0.24 mm, more
//!   than the default VAT's 0.1 mm; in f32 the layer adds exactly the deltas CPU skinning adds, so
//!   bone mode reproduces CPU skinning to f32 rounding.

use vat_core::container::{BlobId, Limits, MorphAnimation};
use vat_core::format::layout::{MORPH_TEXEL_FORMAT, MorphChannel, MorphTextureLayout, MorphWeightsLayout};

use crate::rig::Rig;
use crate::sample::sample_pose;
use crate::skin::{SetMorphTarget, VertexSet};
use crate::{BakeError, Result};

/// A baked morph layer, before its blobs are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct MorphLayer {
    /// The delta texture's layout.
    pub layout: MorphTextureLayout,
    /// The delta texture: `Rgba32Float`, `layout.byte_len(16)` bytes.
    pub texture: Vec<u8>,
    /// The weights track's layout.
    pub weights_layout: MorphWeightsLayout,
    /// The weights track: `Rgba32Float`, `weights_layout.byte_len(16)` bytes.
    pub weights: Vec<u8>,
    /// `"<mesh name>/<target name or index>"` per target.
    pub target_names: Vec<String>,
}

impl MorphLayer {
    /// The manifest section, storing the two blobs with `add_blob` (texture first).
    pub fn into_section(self, mut add_blob: impl FnMut(Vec<u8>) -> BlobId) -> MorphAnimation {
        let texture = add_blob(self.texture);
        let weights = add_blob(self.weights);
        MorphAnimation {
            layout: self.layout,
            format: MORPH_TEXEL_FORMAT,
            texture,
            weights_layout: self.weights_layout,
            weights,
            target_names: self.target_names,
        }
    }
}

/// The weight CPU skinning gives `target` in a pose whose weights are `morph_weights`
/// (`[mesh][target]`): the same lookup as [`crate::skin`]'s morph step, 0 when absent.
pub fn target_weight(target: &SetMorphTarget, morph_weights: &[Vec<f32>]) -> f32 {
    morph_weights.get(target.mesh).and_then(|w| w.get(target.target)).copied().unwrap_or(0.0)
}

/// The morph layer of `set` (in its baked vertex order) for the baked frames `samples`
/// (`(rig clip, absolute time)` in global frame order), or `None` when the set has no morph target.
///
/// # Errors
/// [`BakeError::InvalidInput`] for more targets than a `.vat` holds ([`Limits::max_morph_targets`])
/// or a weight that is not finite; [`BakeError::Core`] when the delta texture or the weights track
/// does not fit `max_texture_dim`, or `samples` is empty.
pub fn bake_morph_layer(
    rig: &Rig,
    set: &VertexSet,
    samples: &[(usize, f32)],
    max_texture_dim: u32,
) -> Result<Option<MorphLayer>> {
    if set.morph_targets.is_empty() {
        return Ok(None);
    }
    let limit = Limits::default().max_morph_targets;
    let count = u32::try_from(set.morph_targets.len()).unwrap_or(u32::MAX);
    if count > limit {
        return Err(BakeError::InvalidInput {
            part: format!("rig \"{}\"", rig.name),
            problem: format!("its body meshes have {count} morph targets; a .vat holds at most {limit}"),
        });
    }
    let n = u32::try_from(set.vertex_count()).unwrap_or(u32::MAX);
    let layout = MorphTextureLayout::new(n, count)?;
    layout.validate(max_texture_dim)?;
    let frames = u32::try_from(samples.len()).unwrap_or(u32::MAX);
    let weights_layout = MorphWeightsLayout::new(count, frames, max_texture_dim)?;

    let bytes_per_texel = MORPH_TEXEL_FORMAT.bytes_per_texel();
    let mut texture = vec![0u8; layout.byte_len(bytes_per_texel) as usize];
    let mut put = |[x, y]: [u32; 2], d: glam::Vec3| {
        let at = (y as usize * layout.width as usize + x as usize) * bytes_per_texel as usize;
        for (c, value) in d.to_array().into_iter().enumerate() {
            texture[at + 4 * c..at + 4 * c + 4].copy_from_slice(&value.to_le_bytes());
        }
    };
    for (t, target) in set.morph_targets.iter().enumerate() {
        let t = t as u32;
        for (&v, &d) in target.vertices.iter().zip(&target.positions) {
            put(layout.texel_coord(t, MorphChannel::Position, v), d);
        }
        if let Some(normals) = &target.normals {
            for (&v, &d) in target.vertices.iter().zip(normals) {
                put(layout.texel_coord(t, MorphChannel::Normal, v), d);
            }
        }
    }

    let mut values = vec![0.0f32; weights_layout.byte_len(4) as usize];
    for (f, &(clip, time)) in samples.iter().enumerate() {
        let Some(source) = rig.clips.get(clip) else {
            return Err(BakeError::InvalidInput {
                part: format!("sample of clip {clip}"),
                problem: format!("the rig has {} clips", rig.clips.len()),
            });
        };
        let pose = sample_pose(rig, source, time);
        for (t, target) in set.morph_targets.iter().enumerate() {
            let w = target_weight(target, &pose.morph_weights);
            if !w.is_finite() {
                return Err(BakeError::InvalidInput {
                    part: format!("rig \"{}\" clip \"{}\" at {time} s", rig.name, source.name),
                    problem: format!("morph target {} has weight {w}", target_name(rig, target)),
                });
            }
            values[weights_layout.value_index(f as u32, t as u32) as usize] = w;
        }
    }
    let weights = values.iter().flat_map(|w| w.to_le_bytes()).collect();
    let target_names = set.morph_targets.iter().map(|t| target_name(rig, t)).collect();
    Ok(Some(MorphLayer { layout, texture, weights_layout, weights, target_names }))
}

/// `"<mesh name>/<target name or index>"`.
fn target_name(rig: &Rig, target: &SetMorphTarget) -> String {
    let mesh = rig.meshes.get(target.mesh);
    let mesh_name = mesh.map_or("?", |m| m.name.as_str());
    match mesh.and_then(|m| m.morph_targets.get(target.target)).and_then(|t| t.name.as_deref()) {
        Some(name) => format!("{mesh_name}/{name}"),
        None => format!("{mesh_name}/{}", target.target),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use vat_core::container::Asset;
    use vat_core::format::reference::{BoneAnimationView, decode_bone_vertex};
    use vat_core::instance::InstanceRecord;
    use vat_core::playback::Interpolation;

    use super::*;
    use crate::gltf_import::{ImportOptions, import_file};
    use crate::prepare::{BakeOptions, PreparedBake, frame_time, prepare};
    use crate::procgen::morph_rig;
    use crate::skin::skin_frames_into;
    use crate::verify::{bone_path_errors, exact_frame_offset, verify};

    fn bones() -> BakeOptions {
        BakeOptions { bones: true, ..Default::default() }
    }

    /// The baked vertex set of `bake` (its vertex order applied to the rig's set).
    fn baked_set(rig: &Rig, bake: &PreparedBake) -> VertexSet {
        let mut set = VertexSet::from_rig(rig).unwrap();
        set.remap(bake.vertex_order()).unwrap();
        set
    }

    fn f32_at(bytes: &[u8], i: usize) -> f32 {
        f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
    }

    /// `(rig clip, time)` of every baked frame, in global frame order.
    fn samples(rig: &Rig, asset: &Asset<'_>) -> Vec<(usize, f32)> {
        let mut out = Vec::new();
        for clip in &asset.manifest().clips {
            let source = rig.clips.iter().position(|c| c.name == clip.name).unwrap();
            out.extend((0..clip.frame_count).map(|k| (source, frame_time(&rig.clips[source], clip, k))));
        }
        out
    }

    #[test]
    fn delta_texture_and_weights_track_hold_the_sets_targets_and_the_poses_weights() {
        let rig = morph_rig(true);
        let bake = prepare(&rig, &bones()).unwrap();
        let bytes = bake.to_vat_bytes().unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let set = baked_set(&rig, &bake);
        let ma = asset.manifest().morph_animation.as_ref().unwrap();
        // 2,160 sheet + 12 flag vertices: 2048 wide, 2 rows per band, 5 targets x 2 bands x 2 rows.
        assert_eq!(set.vertex_count(), 2172);
        let l = ma.layout;
        assert_eq!(
            (l.vertex_count, l.target_count, l.width, l.rows_per_band, l.height),
            (2172, 5, 2048, 2, 20)
        );
        assert_eq!(ma.format, MORPH_TEXEL_FORMAT);
        assert_eq!(
            ma.target_names,
            ["sheet/bulge", "sheet/stretch", "sheet/wave", "flag/flap", "flag/droop"].map(String::from)
        );
        let texture = asset.morph_texture().unwrap();
        assert_eq!(texture.len() as u64, l.byte_len(16));
        // Every texel: the set's delta where the target has one, else zero; w always 0.
        for (t, target) in set.morph_targets.iter().enumerate() {
            for (channel, deltas) in [
                (MorphChannel::Position, Some(&target.positions)),
                (MorphChannel::Normal, target.normals.as_ref()),
            ] {
                let mut expected = vec![glam::Vec3::ZERO; set.vertex_count()];
                for (k, &v) in target.vertices.iter().enumerate() {
                    if let Some(d) = deltas {
                        expected[v as usize] = d[k];
                    }
                }
                for v in 0..set.vertex_count() as u32 {
                    let [x, y] = l.texel_coord(t as u32, channel, v);
                    let at = (y * l.width + x) as usize * 4;
                    let texel: [f32; 4] = std::array::from_fn(|c| f32_at(texture, at + c));
                    let e = expected[v as usize];
                    assert_eq!(texel, [e.x, e.y, e.z, 0.0], "target {t} {channel:?} vertex {v}");
                }
            }
        }
        // The flag's targets are zero on the sheet and the sheet's on the flag: the union.
        let flag: Vec<u32> = set.mesh_vertices(1).map(|v| v as u32).collect();
        assert!(set.morph_targets[..3].iter().all(|t| t.vertices.iter().all(|v| !flag.contains(v))));
        assert!(set.morph_targets[3..].iter().all(|t| t.vertices.iter().all(|v| flag.contains(v))));
        // Vertex 2049 of a band sits on its second row, column 1.
        assert_eq!(l.texel_coord(1, MorphChannel::Normal, 2049), [1, 3 * 2 + 1]);

        // Weights: 30 + 19 frames, 2 texels (targets 0..4, 4..8) per frame.
        let w = ma.weights_layout;
        assert_eq!((w.target_count, w.frame_count, w.width, w.height), (5, 49, 98, 1));
        let track = asset.morph_weights().unwrap();
        for (f, &(clip, time)) in samples(&rig, &asset).iter().enumerate() {
            let pose = sample_pose(&rig, &rig.clips[clip], time);
            for (t, target) in set.morph_targets.iter().enumerate() {
                let i = w.value_index(f as u32, t as u32) as usize;
                assert_eq!(
                    f32_at(track, i),
                    target_weight(target, &pose.morph_weights),
                    "frame {f} target {t}"
                );
            }
            for c in 5..8 {
                assert_eq!(f32_at(track, 8 * f + c), 0.0, "unused channel {c} of frame {f}");
            }
        }
        // The keys show through: "flex" frame 0 is the first key (0, 0, 0.3 | 0.2, 0), "stretch"
        // stays exactly 0 for the first quarter (keys 0 and 0.25 s: frames 0..=7), and "wave" goes
        // negative (-0.4 at 0.25 s).
        let at = |f: u32, t: u32| f32_at(track, w.value_index(f, t) as usize);
        assert_eq!((0..5).map(|t| at(0, t)).collect::<Vec<_>>(), [0.0, 0.0, 0.3, 0.2, 0.0]);
        assert!((0..8).all(|f| at(f, 1) == 0.0));
        assert!(at(7, 2) < -0.3);
    }

    /// Angle between two vectors, degrees: `atan2(|a x b|, a . b)` in f64 (accurate near 0, unlike
    /// `acos`).
    fn angle_deg(a: [f32; 3], b: [f32; 3]) -> f64 {
        let (a, b) = (a.map(f64::from), b.map(f64::from));
        let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
        (c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
            .sqrt()
            .atan2(a[0] * b[0] + a[1] * b[1] + a[2] * b[2])
            .to_degrees()
    }

    /// Bone mode decoded by vat-core's CPU reference (the shader's twin) against fresh CPU skinning
    /// at every baked frame and vertex.
    ///
    /// Bound: the reference performs the skinning kernel's operations on the same matrices (the
    /// bone texture stores `global * inverse_bind`, computed as the kernel computes it), the same
    /// deltas (f32) and weights (exact at a baked frame: `0 + 1 * w`), so the two agree to within a
    /// few roundings of the magnitudes involved: coordinates under 2 m, f32 ulp there 2^-23 m; the
    /// bound is 8 ulp = 9.5e-7 m per axis, and 1e-4 degrees for normals (normalised either way).
    fn check_reference_against_skinning(rig: &Rig) -> f64 {
        let bake = prepare(rig, &bones()).unwrap();
        let bytes = bake.to_vat_bytes().unwrap();
        let asset = Asset::parse(&bytes).unwrap();
        let set = baked_set(rig, &bake);
        let view = BoneAnimationView::from_asset(&asset).unwrap();
        assert!(view.morph.is_some(), "{}: has a morph layer", rig.name);
        let n = set.vertex_count();
        let bound_m = 8.0 * 2f64.powi(-23) * 2.0;
        let mut without_morphs = view.clone();
        without_morphs.morph = None;
        let (mut max_p, mut max_n, mut max_unmorphed) = (0f64, 0f64, 0f64);
        for (ci, clip) in asset.manifest().clips.iter().enumerate() {
            let source = rig.clips.iter().position(|c| c.name == clip.name).unwrap();
            let samples: Vec<(usize, f32)> =
                (0..clip.frame_count).map(|k| (source, frame_time(&rig.clips[source], clip, k))).collect();
            let mut p = vec![[0.0f32; 3]; samples.len() * n];
            let mut nrm = vec![[0.0f32; 3]; samples.len() * n];
            skin_frames_into(rig, &set, &samples, &mut p, &mut nrm, None).unwrap();
            for k in 0..clip.frame_count {
                let fresh = &p[k as usize * n..(k as usize + 1) * n];
                let mm = bone_path_errors(&view, ci as u32, k, fresh).unwrap();
                max_p = max_p.max(mm / 1000.0);
                let inst = InstanceRecord {
                    clip_a: ci as u32,
                    phase_offset_a: exact_frame_offset(clip, k).unwrap(),
                    ..Default::default()
                };
                for v in 0..n {
                    let d = decode_bone_vertex(&view, &inst, 0.0, v as u32, Interpolation::Point).unwrap();
                    max_n = max_n.max(angle_deg(d.object_normal, nrm[k as usize * n + v]));
                    let u = decode_bone_vertex(&without_morphs, &inst, 0.0, v as u32, Interpolation::Point)
                        .unwrap();
                    let e = (0..3).map(|i| (f64::from(u.object_position[i]) - f64::from(fresh[v][i])).abs());
                    max_unmorphed = max_unmorphed.max(e.fold(0.0, f64::max));
                }
            }
        }
        println!(
            "{}: bone-mode reference vs CPU skinning: max {max_p:.2e} m per axis (bound {bound_m:.2e}), normals \
             {max_n:.2e} deg; without the morph layer {max_unmorphed:.2e} m",
            rig.name
        );
        assert!(max_p <= bound_m, "{}: {max_p} m > {bound_m} m", rig.name);
        assert!(max_n <= 1e-4, "{}: normals {max_n} deg", rig.name);
        max_unmorphed
    }

    #[test]
    fn bone_mode_reference_with_morphs_matches_cpu_skinning_within_f32_rounding() {
        for skinned in [true, false] {
            let rig = morph_rig(skinned);
            let unmorphed = check_reference_against_skinning(&rig);
            // The test can fail: without the layer the same decode is centimetres off.
            assert!(unmorphed > 0.01, "skinned {skinned}: the morphs move vertices by {unmorphed} m only");
            // verify's bone figure includes the layer (it used to be the morph deltas themselves).
            let bytes = prepare(&rig, &bones()).unwrap().to_vat_bytes().unwrap();
            let report = verify(&Asset::parse(&bytes).unwrap(), &rig).unwrap();
            assert!(report.passed, "{report:#?}");
            assert!(report.bone_max_error_mm.unwrap() <= 8.0 * 2f64.powi(-23) * 2.0 * 1000.0, "{report:#?}");
        }
    }

    /// A Khronos sample of the shared real-file corpus; `None` when it is missing (skipped, said).
    fn khronos(relative: &str) -> Option<Rig> {
        let path = crate::testdata::shared_file(&format!("gltf/{relative}"))?;
        Some(import_file(&path, &ImportOptions::default()).unwrap())
    }

    #[test]
    fn khronos_morph_samples_play_their_morphs_in_bone_mode() {
        for file in ["AnimatedMorphCube/AnimatedMorphCube.gltf", "SimpleMorph/SimpleMorph.gltf"] {
            let Some(rig) = khronos(file) else { return };
            let unmorphed = check_reference_against_skinning(&rig);
            assert!(unmorphed > 1e-3, "{file}: the morphs move vertices by {unmorphed} m only");
            // verify's bone figure includes the layer: f32 rounding, far below the VAT's quantum.
            let bytes = prepare(&rig, &bones()).unwrap().to_vat_bytes().unwrap();
            let report = verify(&Asset::parse(&bytes).unwrap(), &rig).unwrap();
            assert!(report.passed, "{file}: {report:#?}");
            let bone = report.bone_max_error_mm.unwrap();
            println!("{file}: verify bone_max_error_mm {bone:.2e}");
            assert!(bone <= 8.0 * 2f64.powi(-23) * 2.0 * 1000.0, "{file}: {bone} mm");
        }
    }

    #[test]
    fn no_layer_without_bones_or_without_targets() {
        let rig = morph_rig(true);
        let vat_only = prepare(&rig, &BakeOptions::default()).unwrap();
        assert!(vat_only.manifest().morph_animation.is_none());
        assert!(vat_only.manifest().bone_animation.is_none());
        let mut no_targets = rig.clone();
        for m in &mut no_targets.meshes {
            m.morph_targets.clear();
            m.default_morph_weights.clear();
        }
        no_targets.clips.iter_mut().for_each(|c| {
            c.channels.retain(|ch| !matches!(ch.target, crate::rig::ChannelTarget::MorphWeights(_)))
        });
        let bake = prepare(&no_targets, &bones()).unwrap();
        assert!(bake.manifest().morph_animation.is_none() && bake.manifest().bone_animation.is_some());
        // Files without the layer stay format version 1.
        assert_eq!(&bake.to_vat_bytes().unwrap()[4..8], &1u32.to_le_bytes());
        assert_eq!(&prepare(&rig, &bones()).unwrap().to_vat_bytes().unwrap()[4..8], &2u32.to_le_bytes());
    }

    #[test]
    fn oversized_layers_and_bad_weights_are_typed_errors() {
        let rig = morph_rig(true);
        let bake = prepare(&rig, &bones()).unwrap();
        let set = baked_set(&rig, &bake);
        let samples = [(0usize, 0.0f32), (0, 0.5)];
        // 5 targets x 2 bands x 2 rows = 20 rows: a 16-texel limit refuses it (and the width).
        assert!(matches!(bake_morph_layer(&rig, &set, &samples, 16), Err(BakeError::Core(_))));
        assert!(bake_morph_layer(&rig, &set, &samples, 2048).unwrap().is_some());
        assert!(matches!(bake_morph_layer(&rig, &set, &[], 2048), Err(BakeError::Core(_))));
        assert!(matches!(
            bake_morph_layer(&rig, &set, &[(7, 0.0)], 2048),
            Err(BakeError::InvalidInput { .. })
        ));
        let mut many = set.clone();
        let extra = many.morph_targets[0].clone();
        many.morph_targets.resize(1025, extra);
        assert!(matches!(
            bake_morph_layer(&rig, &many, &samples, 16384),
            Err(BakeError::InvalidInput { .. })
        ));
        let mut nan = rig.clone();
        nan.clips[0].channels[1].values[0] = f32::NAN;
        assert!(matches!(bake_morph_layer(&nan, &set, &samples, 2048), Err(BakeError::InvalidInput { .. })));
    }
}
