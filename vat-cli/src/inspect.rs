//! `vat inspect X.vat [--json]`: what a `.vat` file holds.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use vat_core::container::{Asset, Manifest};
use vat_core::format::layout::TEXELS_PER_BONE;

/// Reads and validates `path` (refused before reading when larger than `max_memory` bytes), then
/// prints its summary (human-readable, or JSON with `--json`).
pub(crate) fn run(path: &Path, as_json: bool, max_memory: u64) -> Result<()> {
    let bytes = crate::bake::read_vat(path, max_memory)?;
    let asset = Asset::parse_with_limits(&bytes, &crate::bake::load_limits(max_memory))
        .with_context(|| format!("{}: not a valid .vat file", path.display()))?;
    let summary = summarize(&asset, bytes.len() as u64);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_human(path, &summary);
    }
    Ok(())
}

/// The summary as JSON. Fixed keys (a scripting interface): `clips` (array), `lods` (array),
/// `bytes_per_vertex_frame` (number), `mode` (`"soft"`, `"rigid"`, `"fluid"` or `"sprite"`), `rigid` (null, or
/// the pieces, bytes per piece per frame, pivot box and bounds), `fluid` (null, or the pool's
/// triangles, the frames' vertex and triangle counts and the lookup's bytes), `sprite` (null, or the
/// slots, bytes per slot per frame, live particles per frame, the centre box, the largest card and
/// the bounds of every field), `impostors` (null, or the impostor tier: views per side, coverage,
/// tile size, frames per clip, layers, the material variants with colour images of their own, mip
/// levels, bytes and the verified bound), and per clip
/// `root_motion` (null, or its
/// track: `cycle` with `x_m`, `z_m`, `yaw_rad`, `distance_m`, and `frames`, one `[x_m, z_m,
/// yaw_rad]` per stored frame relative to the clip's first); more are present.
pub(crate) fn summarize(asset: &Asset<'_>, file_bytes: u64) -> Value {
    let m: &Manifest = asset.manifest();
    let clips = clip_summaries(m);
    let lods: Vec<Value> = m
        .lods
        .iter()
        .enumerate()
        .map(|(i, l)| {
            json!({
                "lod": i,
                "triangles": l.triangle_count,
                "first_index": l.first_index,
                "screen_error_m": l.screen_error,
                "max_distance_m": if l.max_distance.is_finite() { json!(l.max_distance) } else { Value::Null },
            })
        })
        .collect();
    let mut textures = Vec::new();
    let mut bytes_per_vertex_frame = 0u32;
    let mut bounds = Value::Null;
    let mut format = Value::Null;
    if let Some(va) = &m.vertex_animation {
        bytes_per_vertex_frame += va.format.bytes_per_vertex_frame();
        format = json!(format!("{:?}", va.format));
        bounds = json!({ "min_m": va.bounds.min, "extent_m": va.bounds.extent, "position_bits": va.position_bits });
        for (i, f) in va.format.texel_formats().iter().enumerate() {
            textures.push(json!({
                "role": if i == 0 { "positions" } else { "normals / positions" },
                "format": format!("{f:?}"),
                "width": va.layout.width,
                "height": va.layout.height,
                "bytes": asset.blob(va.textures[i]).len(),
            }));
        }
        if let Some(sr) = &m.skin_residual {
            textures.push(json!({
                "role": "skin residual",
                "format": "Rg32Uint",
                "width": sr.width,
                "height": sr.height,
                "bytes": asset.blob(sr.texture).len(),
                "stream_words": sr.stream_words,
                "position_bound_mm": f64::from(sr.position_bound_m) * 1e3,
                "normal_bound_deg": f64::from(sr.normal_bound_rad).to_degrees(),
                "bytes_per_vertex_frame_with_skin": vat_core::format::skin_residual::bytes_per_vertex_frame(m, |id| {
                    vat_core::format::skin_residual::blob_table_length(m, id)
                }),
            }));
        }
        if let Some(t) = va.tangents {
            bytes_per_vertex_frame += 8;
            textures.push(json!({
                "role": "tangents",
                "format": "Rgba16Float",
                "width": va.layout.width,
                "height": va.layout.height,
                "bytes": asset.blob(t).len(),
            }));
        }
    }
    if let Some(ba) = &m.bone_animation {
        textures.push(json!({
            "role": "bones",
            "format": "Rgba32Float",
            "width": ba.layout.width,
            "height": ba.layout.height,
            "bytes": asset.blob(ba.texture).len(),
            "texels_per_bone": TEXELS_PER_BONE,
            "influences": ba.influences,
        }));
    }
    if let Some(ma) = &m.morph_animation {
        textures.push(json!({
            "role": "morph deltas",
            "format": format!("{:?}", ma.format),
            "width": ma.layout.width,
            "height": ma.layout.height,
            "bytes": asset.blob(ma.texture).len(),
            "targets": ma.layout.target_count,
        }));
        textures.push(json!({
            "role": "morph weights",
            "format": "Rgba32Float",
            "width": ma.weights_layout.width,
            "height": ma.weights_layout.height,
            "bytes": asset.blob(ma.weights).len(),
        }));
    }
    let rigid = m
        .rigid_animation
        .as_ref()
        .map_or(Value::Null, |ra| rigid_summary(asset, ra, &mut textures, &mut bounds));
    let fluid = m.fluid_animation.as_ref().map_or(Value::Null, |fa| fluid_summary(asset, fa, &mut textures));
    let sprite = m
        .sprite_animation
        .as_ref()
        .map_or(Value::Null, |sa| sprite_summary(asset, sa, &mut textures, &mut bounds));
    let impostors =
        m.impostors.as_ref().map_or(Value::Null, |tier| impostor_summary(asset, tier, &mut textures));
    let sockets: Vec<Value> = m
        .sockets
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "bone": m.bones.get(s.bone as usize).map_or("?", |b| b.name.as_str()),
                "offset_m": [s.local[9], s.local[10], s.local[11]],
            })
        })
        .collect();
    let attachments: Vec<Value> = m
        .attachments
        .iter()
        .map(|a| {
            json!({
                "name": a.name,
                "socket": m.sockets.get(a.socket as usize).map(|s| s.name.clone()),
                "vertices": a.vertex_count,
                "triangles": asset.blob(a.indices).len() / 12,
            })
        })
        .collect();
    let arrays = m.material_textures.as_ref();
    for (role, array) in [
        ("material colour", arrays.and_then(|t| t.color.as_ref())),
        ("material data", arrays.and_then(|t| t.data.as_ref())),
    ] {
        if let Some(a) = array {
            textures.push(json!({
                "role": role,
                "format": if role == "material colour" { "Rgba8UnormSrgb" } else { "Rgba8Unorm" },
                "width": a.width,
                "height": a.height,
                "layers": a.layers.len(),
                "mip_levels": a.mip_levels,
                "bytes": asset.blob(a.texels).len(),
            }));
        }
    }
    json!({
        "name": m.name,
        "mode": m.mode().name(),
        "rigid": rigid,
        "fluid": fluid,
        "sprite": sprite,
        "impostors": impostors,
        "file_bytes": file_bytes,
        "vertex_count": m.vertex_count,
        "frame_count": asset.frame_count(),
        "format": format,
        "bytes_per_vertex_frame": bytes_per_vertex_frame,
        "bounds": bounds,
        "clips": clips,
        "lods": lods,
        "textures": textures,
        "bones": m.bones.len(),
        "sockets": sockets,
        "captures": m.captures.iter().map(|c| m.bones.get(c.bone as usize).map_or("?", |b| b.name.as_str())).collect::<Vec<_>>(),
        "attachments": attachments,
        "streams": m.streams.iter().map(|s| format!("{:?} ({:?})", s.kind, s.element)).collect::<Vec<_>>(),
        "morph_targets": m.morph_animation.as_ref().map(|mt| mt.target_names.clone()),
        "materials": materials_json(m),
        "material_variants": m.material_variants.iter().map(|v| json!({ "name": v.name, "materials": v.materials })).collect::<Vec<_>>(),
    })
}

/// The materials, each with its factors and textures (the array, layer, source image and wrap).
fn materials_json(m: &vat_core::container::Manifest) -> Value {
    use vat_core::container::{AlphaMode, TextureArray, TextureBinding};
    let arrays = m.material_textures.as_ref();
    let texture = |b: &Option<TextureBinding>, array: Option<&TextureArray>, which: &str| -> Value {
        let Some(b) = b else { return Value::Null };
        let source = array.and_then(|a| a.layers.get(b.layer as usize));
        json!({
            "array": which,
            "layer": b.layer,
            "image": source.map(|s| s.name.clone()),
            "source_size": source.map(|s| [s.width, s.height]),
            "layer_size": array.map(|a| [a.width, a.height]),
            "wrap": [format!("{:?}", b.wrap_u), format!("{:?}", b.wrap_v)],
            "filters": [format!("{:?}", b.mag_filter), format!("{:?}", b.min_filter)],
        })
    };
    let color = arrays.and_then(|t| t.color.as_ref());
    let data = arrays.and_then(|t| t.data.as_ref());
    Value::Array(
        m.materials
            .iter()
            .enumerate()
            .map(|(id, mat)| {
                let (alpha_mode, cutoff) = match mat.alpha_mode {
                    AlphaMode::Opaque => ("opaque", None),
                    AlphaMode::Mask { cutoff } => ("mask", Some(cutoff)),
                    AlphaMode::Blend => ("blend (drawn as mask 0.5)", Some(0.5)),
                };
                json!({
                    "id": id,
                    "name": mat.name,
                    "base_color_factor": mat.base_color_factor,
                    "metallic": mat.metallic_factor,
                    "roughness": mat.roughness_factor,
                    "emissive": mat.emissive_factor,
                    "normal_scale": mat.normal_scale,
                    "alpha_mode": alpha_mode,
                    "alpha_cutoff": cutoff,
                    "double_sided": mat.double_sided,
                    "base_color_texture": texture(&mat.base_color_texture, color, "color"),
                    "metallic_roughness_texture": texture(&mat.metallic_roughness_texture, data, "data"),
                    "normal_texture": texture(&mat.normal_texture, data, "data"),
                })
            })
            .collect(),
    )
}

/// `[a, b, c]` of a JSON array of numbers with `digits` decimals (`?` for a missing one).
fn fixed3(v: &Value, digits: usize) -> String {
    let n = |k: usize| v[k].as_f64().map_or("?".into(), |x| format!("{x:.digits$}"));
    format!("[{}, {}, {}]", n(0), n(1), n(2))
}

/// One line per LOD of the summary's `lods`: `LOD 1: 971 triangles, error 0.0003 m, used from 1.50 m
/// to 32.22 m` (the last level `to any distance`), the error in the asset's units (metres for a
/// metre-scale bake) and the switch distances the runtime uses.
fn lod_lines(lods: &Value) -> Vec<String> {
    let mut from = 0.0;
    lods.as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let until = l["max_distance_m"].as_f64();
            let line = format!(
                "LOD {}: {} triangles, error {:.4} m, used from {from:.2} m to {}",
                l["lod"],
                l["triangles"],
                l["screen_error_m"].as_f64().unwrap_or(0.0),
                until.map_or_else(|| "any distance".to_string(), |d| format!("{d:.2} m"))
            );
            from = until.unwrap_or(from);
            line
        })
        .collect()
}

/// Each clip's summary: frames, rate, looping, stride and root-motion track.
fn clip_summaries(m: &Manifest) -> Vec<Value> {
    m.clips
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let root_motion = m.root_motion.iter().find(|t| t.clip == i as u32).map_or(Value::Null, |t| {
                json!({
                    "cycle": {
                        "x_m": t.cycle.x,
                        "z_m": t.cycle.z,
                        "yaw_rad": t.cycle.yaw,
                        "distance_m": t.cycle.distance(),
                    },
                    "frames": t.frames.iter().map(|p| [p.x, p.z, p.yaw]).collect::<Vec<_>>(),
                })
            });
            json!({
                "name": c.name,
                "first_frame": c.first_frame,
                "frames": c.frame_count,
                "fps": c.fps,
                "duration_s": c.duration,
                "looping": c.is_looping(),
                "stride_m": c.stride,
                "root_motion": root_motion,
            })
        })
        .collect()
}

/// The rigid section's summary: pieces, texel size, pivot box and bounds. Its textures are added to `textures`; `bounds` becomes its box when it has one.
fn rigid_summary(
    asset: &Asset<'_>,
    ra: &vat_core::container::RigidAnimation,
    textures: &mut Vec<Value>,
    bounds: &mut Value,
) -> Value {
    textures.push(json!({
        "role": "rigid pieces",
        "format": "Rgba32Uint",
        "width": ra.layout.width,
        "height": ra.layout.height,
        "bytes": asset.blob(ra.pieces).len(),
    }));
    textures.push(json!({
        "role": "rigid vertices",
        "format": "Rgba32Uint",
        "width": ra.vertex_layout.width,
        "height": ra.vertex_layout.height,
        "bytes": asset.blob(ra.vertices).len(),
    }));
    *bounds = json!({ "min_m": ra.bounds.min, "extent_m": ra.bounds.extent });
    json!({
        "pieces": ra.layout.vertex_count,
        "bytes_per_piece_frame": vat_core::modes::rigid::RIGID_TEXEL_BYTES,
        "pivot_bounds": { "min_m": ra.pivot_bounds.min, "extent_m": ra.pivot_bounds.extent },
        "translation_bound_mm": vat_core::modes::rigid::translation_bound(&ra.pivot_bounds).map(|b| b * 1e3),
        "rotation_bound_deg": vat_core::modes::rigid::ROTATION_BOUND_DEG,
    })
}

/// The fluid section's summary: the pool, each frame's vertices and triangles, the lookup. Its
/// lookup texture is added to `textures`.
fn fluid_summary(
    asset: &Asset<'_>,
    fa: &vat_core::container::FluidAnimation,
    textures: &mut Vec<Value>,
) -> Value {
    textures.push(json!({
        "role": "fluid lookup",
        "format": "Rgba32Uint",
        "width": fa.lookup_layout.width,
        "height": fa.lookup_layout.height,
        "bytes": asset.blob(fa.lookup).len(),
    }));
    json!({
        "pool_triangles": fa.pool_triangles,
        "frame_vertices": fa.frames.iter().map(|f| f.vertex_count).collect::<Vec<_>>(),
        "frame_triangles": fa.frames.iter().map(|f| f.triangle_count).collect::<Vec<_>>(),
        "vertices": fa.frames.iter().map(|f| u64::from(f.vertex_count)).sum::<u64>(),
        "lookup_bytes_per_frame": u64::from(fa.lookup_layout.vertex_count) * 16,
    })
}

/// The sprite section's summary: slots, live particles per frame, the boxes and every field's bound. Its textures are added to `textures`; `bounds` becomes its box when it has one.
/// The impostor tier: its grid, images and the bound its bake verified; its two texture arrays join
/// `textures`.
fn impostor_summary(
    asset: &Asset<'_>,
    tier: &vat_core::format::impostor::ImpostorTier,
    textures: &mut Vec<Value>,
) -> Value {
    let variants = asset.manifest().impostor_material_variants;
    for (role, format, blob, sets) in [
        ("impostor colour", "Rgba8UnormSrgb", tier.color, 1 + u64::from(variants)),
        ("impostor normal and depth", "Rgba8Unorm", tier.normal_depth, 1),
    ] {
        textures.push(json!({
            "role": role,
            "format": format,
            "width": tier.layer_side(0),
            "height": tier.layer_side(0),
            "layers": tier.layer_count() * sets,
            "mip_levels": tier.mip_levels,
            "bytes": asset.blob(blob).len(),
        }));
    }
    json!({
        "views_per_side": tier.grid.views_per_side,
        "views": tier.grid.view_count(),
        "coverage": match tier.grid.coverage {
            vat_core::format::impostor::ViewCoverage::Full => "full",
            vat_core::format::impostor::ViewCoverage::Hemi => "hemi",
        },
        "tile_size": tier.tile_size,
        "frames_per_clip": tier.frames_per_clip,
        "layers": tier.layer_count(),
        "material_variants": variants,
        "mip_levels": tier.mip_levels,
        "centre_m": tier.centre,
        "radius_m": tier.radius,
        "bytes": asset.blob(tier.color).len() + asset.blob(tier.normal_depth).len(),
        "min_coverage_iou": tier.bound.min_coverage_iou,
        "max_mean_color_error": tier.bound.max_mean_color_error,
        "one_view_min_coverage_iou": asset.manifest().impostor_one_view_bound.map(|b| b.min_coverage_iou),
        "one_view_max_mean_color_error": asset.manifest().impostor_one_view_bound.map(|b| b.max_mean_color_error),
    })
}

fn sprite_summary(
    asset: &Asset<'_>,
    sa: &vat_core::container::SpriteAnimation,
    textures: &mut Vec<Value>,
    bounds: &mut Value,
) -> Value {
    let particles = asset.blob(sa.particles);
    textures.push(json!({
        "role": "sprite particles",
        "format": "Rgba32Uint",
        "width": sa.layout.width,
        "height": sa.layout.height,
        "bytes": particles.len(),
    }));
    let slots = u64::from(sa.layout.vertex_count);
    // Live particles per frame, counted from the texels' alive flags (a validated file).
    let alive: Vec<u64> = (0..u64::from(sa.layout.frame_count))
        .map(|f| {
            (0..slots)
                .filter(|s| {
                    vat_core::modes::sprite::texel_at(particles, f * slots + s)
                        .is_ok_and(|t| t[3] & vat_core::modes::sprite::FLAG_ALIVE != 0)
                })
                .count() as u64
        })
        .collect();
    let b = vat_core::modes::sprite::error_bounds(&sa.sprite_bounds());
    *bounds = json!({ "min_m": sa.card_bounds().min, "extent_m": sa.card_bounds().extent });
    json!({
        "slots": slots,
        "bytes_per_slot_frame": vat_core::modes::sprite::SPRITE_TEXEL_BYTES,
        "alive_per_frame": alive,
        "particle_bounds": { "min_m": sa.position_bounds.min, "extent_m": sa.position_bounds.extent },
        "max_size_m": sa.max_size,
        "position_bound_mm": b.position.map(|v| v * 1e3),
        "size_bound_mm": b.size * 1e3,
        "color_bound": b.color,
        "rotation_bound_deg": b.rotation_rad.to_degrees(),
    })
}

fn print_human(path: &Path, s: &Value) {
    // Names come from the file: printed with control characters escaped.
    let name = crate::terminal_safe(s["name"].as_str().unwrap_or(""));
    println!(
        "{}: \"{name}\", {} bytes, {} mode",
        path.display(),
        s["file_bytes"],
        s["mode"].as_str().unwrap_or("soft")
    );
    print_mode_sections(s);
    if !s["bounds"].is_null() {
        let bits = &s["bounds"]["position_bits"];
        println!(
            "  bounds: min {} m, extent {} m{}",
            s["bounds"]["min_m"],
            s["bounds"]["extent_m"],
            if bits.is_null() { String::new() } else { format!(", position bits {bits}") }
        );
    }
    print_clips(s);
    let tris: Vec<String> =
        s["lods"].as_array().into_iter().flatten().map(|l| l["triangles"].to_string()).collect();
    println!("  LOD triangles: {}", if tris.is_empty() { "none".into() } else { tris.join(" / ") });
    for line in lod_lines(&s["lods"]) {
        println!("    {line}");
    }
    println!("  textures:");
    for t in s["textures"].as_array().into_iter().flatten() {
        println!(
            "    {:<20} {:<12} {} x {}{}, {} bytes",
            t["role"].as_str().unwrap_or(""),
            t["format"].as_str().unwrap_or(""),
            t["width"],
            t["height"],
            if t["layers"].is_null() {
                String::new()
            } else {
                format!(" x {} layers, {} mips", t["layers"], t["mip_levels"])
            },
            t["bytes"]
        );
    }
    println!("  bones: {}", s["bones"]);
    for so in s["sockets"].as_array().into_iter().flatten() {
        println!("  socket {} on {} at {} m", so["name"], so["bone"], so["offset_m"]);
    }
    for a in s["attachments"].as_array().into_iter().flatten() {
        println!(
            "  attachment {} on socket {}: {} vertices, {} triangles",
            a["name"], a["socket"], a["vertices"], a["triangles"]
        );
    }
    for (k, v) in s["material_variants"].as_array().into_iter().flatten().enumerate() {
        println!(
            "  material variant {} \"{}\" (instance variant {}): materials {}",
            k,
            crate::terminal_safe(v["name"].as_str().unwrap_or("")),
            k + 1,
            v["materials"]
        );
    }
    print_materials(s);
}

/// The rigid or sprite section of the summary `s`, printed.
fn print_mode_sections(s: &Value) {
    if !s["rigid"].is_null() {
        let r = &s["rigid"];
        println!(
            "  {} pieces, {} bytes per piece per frame; pivot box min {} m, extent {} m; bounds: translation {} mm \
             per axis, rotation {:.4} deg",
            r["pieces"],
            r["bytes_per_piece_frame"],
            r["pivot_bounds"]["min_m"],
            r["pivot_bounds"]["extent_m"],
            r["translation_bound_mm"],
            r["rotation_bound_deg"].as_f64().unwrap_or(0.0)
        );
    }
    if !s["impostors"].is_null() {
        let p = &s["impostors"];
        println!(
            "  impostors: {} {} views ({} per side) of {} px, frames per clip {}, {} layers, {} mip levels, {} bytes; \
             sphere centre {} m, radius {} m; verified: coverage IoU >= {}, mean colour error <= {}",
            p["views"],
            p["coverage"].as_str().unwrap_or("?"),
            p["views_per_side"],
            p["tile_size"],
            p["frames_per_clip"],
            p["layers"],
            p["mip_levels"],
            p["bytes"],
            p["centre_m"],
            p["radius_m"],
            p["min_coverage_iou"],
            p["max_mean_color_error"]
        );
        if p["material_variants"].as_u64().is_some_and(|v| v > 0) {
            println!(
                "  impostor colour: the authored materials and {} material variant(s), a set of layers each",
                p["material_variants"]
            );
        }
        if p["one_view_min_coverage_iou"].is_null() {
            println!("  impostor far cards (one view): no bound stated (baked before format version 9)");
        } else {
            println!(
                "  impostor far cards (one view): verified: coverage IoU >= {}, mean colour error <= {}",
                p["one_view_min_coverage_iou"], p["one_view_max_mean_color_error"]
            );
        }
    }
    if !s["sprite"].is_null() {
        let p = &s["sprite"];
        let alive = p["alive_per_frame"].as_array().map_or((0, 0, 0), |a| {
            let v = a.iter().filter_map(Value::as_u64);
            (v.clone().min().unwrap_or(0), v.clone().max().unwrap_or(0), v.sum::<u64>())
        });
        println!(
            "  sprite: {} particle slots ({} card corners) x {} frames, {} bytes per slot per frame; {}..{} alive per \
             frame ({} particle-frames); centre box min {} m, extent {} m; largest card {} m; bounds: centre {} mm \
             per axis, size {:.4} mm, colour {:.5}, rotation {:.4} deg; interpolated where a particle persists, \
             never cross-faded",
            p["slots"],
            s["vertex_count"],
            s["frame_count"],
            p["bytes_per_slot_frame"],
            alive.0,
            alive.1,
            alive.2,
            fixed3(&p["particle_bounds"]["min_m"], 3),
            fixed3(&p["particle_bounds"]["extent_m"], 3),
            p["max_size_m"].as_f64().map_or("?".into(), |v| format!("{v:.4}")),
            fixed3(&p["position_bound_mm"], 5),
            p["size_bound_mm"].as_f64().unwrap_or(0.0),
            p["color_bound"].as_f64().unwrap_or(0.0),
            p["rotation_bound_deg"].as_f64().unwrap_or(0.0)
        );
    } else if !s["fluid"].is_null() {
        let f = &s["fluid"];
        let counts = |k: &str| {
            f[k].as_array().map_or((0, 0), |a| {
                let v = a.iter().filter_map(Value::as_u64);
                (v.clone().min().unwrap_or(0), v.max().unwrap_or(0))
            })
        };
        let (vmin, vmax) = counts("frame_vertices");
        let (tmin, tmax) = counts("frame_triangles");
        println!(
            "  fluid: pool of {} triangles ({} corners) x {} frames; {} vertices in all ({vmin}..{vmax} per frame), \
             {tmin}..{tmax} triangles per frame; format {}; lookup {} bytes per frame; frames not interpolated",
            f["pool_triangles"],
            s["vertex_count"],
            s["frame_count"],
            f["vertices"],
            s["format"].as_str().unwrap_or("none"),
            f["lookup_bytes_per_frame"]
        );
    } else if s["rigid"].is_null() {
        let residual = s["textures"].as_array().into_iter().flatten().find(|t| t["role"] == "skin residual");
        match residual {
            Some(r) => println!(
                "  {} vertices x {} frames, format {}: {:.3} bytes per vertex per frame with its skin (bone texture, \
                 joints, weights, residual), every stored frame within {} mm and {} deg of the source",
                s["vertex_count"],
                s["frame_count"],
                s["format"].as_str().unwrap_or("none"),
                r["bytes_per_vertex_frame_with_skin"].as_f64().unwrap_or(0.0),
                r["position_bound_mm"].as_f64().map_or("?".into(), |b| format!("{b:.4}")),
                r["normal_bound_deg"].as_f64().map_or("?".into(), |b| format!("{b:.4}")),
            ),
            None => println!(
                "  {} vertices x {} frames, format {}, {} bytes per vertex per frame",
                s["vertex_count"],
                s["frame_count"],
                s["format"].as_str().unwrap_or("none"),
                s["bytes_per_vertex_frame"]
            ),
        }
    } else {
        println!("  {} vertices x {} frames", s["vertex_count"], s["frame_count"]);
    }
}

/// The clips of the summary `s`, printed one per line.
fn print_clips(s: &Value) {
    println!("  clips:");
    for c in s["clips"].as_array().into_iter().flatten() {
        println!(
            "    {:<14} {:>4} frames from {:>5} at {} fps, {:.3} s, {}, stride {:.3} m",
            crate::terminal_safe(c["name"].as_str().unwrap_or("")),
            c["frames"],
            c["first_frame"],
            c["fps"],
            c["duration_s"].as_f64().unwrap_or(0.0),
            if c["looping"].as_bool().unwrap_or(false) { "looping" } else { "one-shot" },
            c["stride_m"].as_f64().unwrap_or(0.0)
        );
        let rm = &c["root_motion"];
        if !rm.is_null() {
            let cycle = &rm["cycle"];
            let f = |v: &Value| v.as_f64().unwrap_or(0.0);
            let poses = rm["frames"].as_array().map_or(0, Vec::len);
            let mid = &rm["frames"][poses / 2];
            println!(
                "      root motion: {:.3} m and {:.2} deg of yaw {} (x {:.3} m, z {:.3} m); {poses} poses, \
                 mid-clip x {:.3} m, z {:.3} m, yaw {:.2} deg",
                f(&cycle["distance_m"]),
                f(&cycle["yaw_rad"]).to_degrees(),
                if c["looping"].as_bool().unwrap_or(false) { "per cycle" } else { "start to end" },
                f(&cycle["x_m"]),
                f(&cycle["z_m"]),
                f(&mid[0]),
                f(&mid[1]),
                f(&mid[2]).to_degrees()
            );
        }
    }
}

/// The materials of the summary `s`, printed.
fn print_materials(s: &Value) {
    let materials = s["materials"].as_array().map_or(&[][..], Vec::as_slice);
    if materials.is_empty() {
        println!("  materials: none (drawn with the built-in palette)");
    }
    for mat in materials {
        println!(
            "  material {} \"{}\": base colour {}, metallic {}, roughness {}, {}{}",
            mat["id"],
            crate::terminal_safe(mat["name"].as_str().unwrap_or("")),
            mat["base_color_factor"],
            mat["metallic"],
            mat["roughness"],
            mat["alpha_mode"].as_str().unwrap_or(""),
            if mat["double_sided"].as_bool().unwrap_or(false) { ", double-sided" } else { "" }
        );
        for (key, what) in [
            ("base_color_texture", "base colour"),
            ("normal_texture", "normal"),
            ("metallic_roughness_texture", "metallic-roughness"),
        ] {
            let t = &mat[key];
            if t.is_null() {
                continue;
            }
            println!(
                "    {what}: {} ({} x {} source, {} layer {} of {} x {}), wrap {} / {}",
                crate::terminal_safe(t["image"].as_str().unwrap_or("?")),
                t["source_size"][0],
                t["source_size"][1],
                t["array"].as_str().unwrap_or(""),
                t["layer"],
                t["layer_size"][0],
                t["layer_size"][1],
                t["wrap"][0].as_str().unwrap_or(""),
                t["wrap"][1].as_str().unwrap_or("")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vat_core::container::{BlobId, ContainerWriter};
    use vat_core::format::impostor::{ImpostorBound, ImpostorTier, ViewCoverage, ViewGrid};

    /// The summary lists an impostor tier and its texture arrays as the file holds them.
    #[test]
    fn an_impostor_tier_is_summarised() {
        let rig = vat_procgen::humanoid();
        let options = vat_bake::prepare::BakeOptions::default();
        let bytes = vat_bake::prepare::prepare(&rig, &options).expect("bake").to_vat_bytes().expect("file");
        let asset = Asset::parse(&bytes).expect("parse");
        let mut manifest = asset.manifest().clone();
        let mut writer = ContainerWriter::new();
        for i in 0..manifest.blobs.len() {
            writer.add_blob(asset.blob(BlobId(i as u32)));
        }
        let frames_per_clip = vec![1; manifest.clips.len()];
        let layers = frames_per_clip.len();
        // 2 x 2 views of 8 px, one mip: layers of 16 x 16 texels.
        let image = vec![7u8; 16 * 16 * 4 * layers];
        let color = writer.add_blob(image.clone());
        let normal_depth = writer.add_blob(image.clone());
        manifest.impostors = Some(ImpostorTier {
            grid: ViewGrid::new(2, ViewCoverage::Full).expect("grid"),
            tile_size: 8,
            frames_per_clip,
            centre: [0.0, 0.9, 0.0],
            radius: 1.1,
            mip_levels: 1,
            color,
            normal_depth,
            bound: ImpostorBound { min_coverage_iou: 0.9, max_mean_color_error: 0.02 },
        });
        let file = writer.finish(manifest).expect("write");
        let asset = Asset::parse(&file).expect("parse with a tier");
        let s = summarize(&asset, file.len() as u64);
        let p = &s["impostors"];
        assert_eq!((p["views"].as_u64(), p["coverage"].as_str()), (Some(4), Some("full")));
        assert_eq!(p["layers"].as_u64(), Some(layers as u64));
        assert_eq!(p["bytes"].as_u64(), Some(2 * image.len() as u64));
        let arrays: Vec<&Value> =
            s["textures"].as_array().expect("textures").iter().filter(|t| t["layers"].is_u64()).collect();
        assert_eq!(arrays.len(), 2);
        assert_eq!(arrays[0]["width"].as_u64(), Some(16));
        // And a file without one says so.
        assert!(summarize(&Asset::parse(&bytes).expect("parse"), bytes.len() as u64)["impostors"].is_null());
    }
}
