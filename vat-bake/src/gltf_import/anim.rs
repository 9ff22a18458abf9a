//! glTF animations -> rig clips.

use std::collections::HashSet;

use gltf::animation::util::ReadOutputs;
use gltf::animation::{Interpolation, Property};
use serde_json::{Map, Value};

use super::accessors::{self, F32_SCALAR, F32_VEC3, MORPH_WEIGHTS, ROTATIONS};
use super::{Ctx, Importer, extras_object, node_part};
use crate::Result;
use crate::rig::{AnimationClip, Channel, ChannelTarget, KeyInterpolation};

/// Animation `extras` keys read as the clip's looping choice, in order of precedence.
const LOOPING_KEYS: &[&str] = &["vat_looping", "looping", "loop"];

/// Names that mark a clip as locomotion when its extras do not say.
const LOCOMOTION_WORDS: &[&str] = &["walk", "jog", "run", "sprint"];

/// One clip per glTF animation (see the module docs).
pub(super) fn clips(imp: &Importer<'_, '_>) -> Result<Vec<AnimationClip>> {
    let ctx = &imp.ctx;
    let mut clips = Vec::new();
    let mut names = HashSet::new();
    for animation in imp.doc.animations() {
        let label = match animation.name() {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => format!("animation{}", animation.index()),
        };
        let part = format!("animation {label:?}");
        let mut channels = Vec::new();
        for channel in animation.channels() {
            channels.extend(channel_tracks(imp, &channel, &format!("{part} channel {}", channel.index()))?);
        }
        if channels.is_empty() {
            return Err(ctx.err(part, "has no channel that drives a node or mesh of the imported scene"));
        }
        let start = channels.iter().map(|c| c.times[0]).fold(f32::INFINITY, f32::min);
        let end = channels.iter().filter_map(|c| c.times.last().copied()).fold(f32::NEG_INFINITY, f32::max);
        // Every key at one instant (a "TPose" clip) is a pose: baked as a one-frame clip.
        let end = end.max(start);
        let extras = extras_object(animation.extras()).unwrap_or_default();
        // vat's own key first, then the generic names other exporters write (Blender custom
        // properties end up in extras); absent: the bake decides from the clip's seam.
        let mut looping = None;
        for key in LOOPING_KEYS {
            if let Some(b) = extra_bool(ctx, &part, &extras, key)? {
                looping = Some(b);
                break;
            }
        }
        let locomotion = extra_bool(ctx, &part, &extras, "vat_locomotion")?.unwrap_or_else(|| {
            let lower = label.to_lowercase();
            LOCOMOTION_WORDS.iter().any(|w| lower.contains(w))
        });
        let known_stride = match extras.get("vat_stride") {
            None => None,
            Some(v) => match v.as_f64().map(|s| s as f32) {
                Some(s) if s.is_finite() && s >= 0.0 => Some(s),
                _ => {
                    return Err(ctx.err(
                        part,
                        format!("extras.vat_stride must be a finite number >= 0 (metres), found {v}"),
                    ));
                }
            },
        };
        let mut name = label.clone();
        let mut k = 2;
        while !names.insert(name.clone()) {
            name = format!("{label}_{k}");
            k += 1;
        }
        clips.push(AnimationClip { name, channels, start, end, looping, known_stride, locomotion });
    }
    Ok(clips)
}

fn extra_bool(ctx: &Ctx<'_>, part: &str, extras: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    match extras.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ctx.err(part, format!("extras.{key} must be true or false, found {other}"))),
    }
}

/// The rig channels of one glTF channel: none when it drives nothing imported, one per primitive for
/// morph weights, else one.
fn channel_tracks(
    imp: &Importer<'_, '_>,
    channel: &gltf::animation::Channel<'_>,
    part: &str,
) -> Result<Vec<Channel>> {
    let ctx = &imp.ctx;
    let node = channel.target().node();
    let Some(rig_node) = imp.node_map[node.index()] else { return Ok(Vec::new()) };
    let property = channel.target().property();
    let (targets, components) = match property {
        Property::Translation => (vec![ChannelTarget::Translation(rig_node)], 3),
        Property::Rotation => (vec![ChannelTarget::Rotation(rig_node)], 4),
        Property::Scale => (vec![ChannelTarget::Scale(rig_node)], 3),
        Property::MorphTargetWeights => {
            if node.mesh().is_none() {
                return Err(ctx.err(
                    part,
                    format!("animates the morph weights of {}, which has no mesh", node_part(&node)),
                ));
            }
            let meshes = &imp.node_meshes[node.index()];
            let Some(&first) = meshes.first() else { return Ok(Vec::new()) }; // its primitives were skipped
            let count = imp.rig.meshes[first].morph_targets.len();
            if count == 0 {
                return Err(ctx.err(
                    part,
                    format!(
                        "animates the morph weights of {}, whose mesh has no morph targets",
                        node_part(&node)
                    ),
                ));
            }
            (meshes.iter().map(|&m| ChannelTarget::MorphWeights(m)).collect(), count)
        }
    };
    let sampler = channel.sampler();
    let interpolation = match sampler.interpolation() {
        Interpolation::Step => KeyInterpolation::Step,
        Interpolation::Linear => KeyInterpolation::Linear,
        Interpolation::CubicSpline => KeyInterpolation::CubicSpline,
    };
    let reader = channel.reader(accessors::source(imp.buffers));

    let input_part = format!("{part} input");
    let times = accessors::read(ctx, &sampler.input(), F32_SCALAR, imp.buffers, &input_part, || {
        reader.read_inputs()
    })?;
    for (k, &t) in times.iter().enumerate() {
        if !t.is_finite() {
            return Err(ctx.err(part, format!("keyframe time {k} is {t}")));
        }
        if k > 0 && t <= times[k - 1] {
            return Err(ctx.err(
                part,
                format!(
                    "keyframe times do not strictly increase: key {k} at {t} s follows {} s",
                    times[k - 1]
                ),
            ));
        }
    }
    if interpolation == KeyInterpolation::CubicSpline && times.len() < 2 {
        return Err(ctx.err(part, "a CUBICSPLINE sampler needs at least 2 keyframes"));
    }

    let output = sampler.output();
    let output_part = format!("{part} output");
    let values: Vec<f32> = match property {
        Property::Translation | Property::Scale => {
            let scale = property == Property::Scale;
            accessors::read(ctx, &output, F32_VEC3, imp.buffers, &output_part, || {
                match reader.read_outputs() {
                    Some(ReadOutputs::Translations(it)) if !scale => Some(it),
                    Some(ReadOutputs::Scales(it)) if scale => Some(it),
                    _ => None,
                }
            })?
            .into_iter()
            .flatten()
            .collect()
        }
        Property::Rotation => accessors::read(ctx, &output, ROTATIONS, imp.buffers, &output_part, || {
            match reader.read_outputs() {
                Some(ReadOutputs::Rotations(r)) => Some(r.into_f32()),
                _ => None,
            }
        })?
        .into_iter()
        .flatten()
        .collect(),
        Property::MorphTargetWeights => {
            accessors::read(ctx, &output, MORPH_WEIGHTS, imp.buffers, &output_part, || {
                match reader.read_outputs() {
                    Some(ReadOutputs::MorphTargetWeights(w)) => Some(w.into_f32()),
                    _ => None,
                }
            })?
        }
    };
    let per_key = components * if interpolation == KeyInterpolation::CubicSpline { 3 } else { 1 };
    if values.len() != times.len() * per_key {
        return Err(ctx.err(
            output_part,
            format!(
                "has {} values for {} keyframes; expected {} ({per_key} per keyframe)",
                values.len(),
                times.len(),
                times.len() * per_key
            ),
        ));
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(ctx.err(part, format!("keyframe {} has value {}", i / per_key, values[i])));
    }
    Ok(targets
        .into_iter()
        .map(|target| Channel { target, interpolation, times: times.clone(), values: values.clone() })
        .collect())
}
