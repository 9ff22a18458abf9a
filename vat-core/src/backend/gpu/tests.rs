//! The Rust side of the GPU interface checked against naga's reading of vat.wgsl: struct layouts,
//! bindings, entry points, stages and constants. Each check returns the list of mismatches so that a
//! failure names every problem at once, and so that the checks themselves can be shown to fail on a
//! deliberately broken shader.

// Tests may unwrap: the panic is the failure report (the lint guards library code).
#![allow(clippy::unwrap_used)]

use std::mem::{offset_of, size_of};

use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{
    AddressSpace, ArraySize, Expression, ImageClass, ImageDimension, Literal, Module, ScalarKind,
    StorageAccess, TypeInner,
};

use super::*;
use crate::clip::ClipRowMap;

/// Parses and validates `source`, or returns naga's report with source excerpts.
fn parse_and_validate(source: &str) -> Result<(Module, ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| format!("WGSL parse error:\n{}", e.emit_to_string(source)))?;
    // Only the capabilities every target has, so that validation proves the shader asks for nothing
    // more: SHADER_FLOAT16_IN_FLOAT32 (unpack2x16float) is core in Vulkan (GLSL.std.450
    // UnpackHalf2x16) and wgpu grants it wherever DownlevelFlags::SHADER_F16_IN_F32 holds, which every
    // WebGPU-compliant adapter has.
    let mut validator = Validator::new(ValidationFlags::all(), Capabilities::SHADER_FLOAT16_IN_FLOAT32);
    let info = validator.validate(&module).map_err(|e| {
        // emit_to_string shows the outermost error with its source excerpt; the cause chain says why.
        let mut report = format!("WGSL validation error:\n{}", e.emit_to_string(source));
        let mut cause = std::error::Error::source(e.as_inner());
        while let Some(c) = cause {
            report.push_str(&format!("\n  caused by: {c}"));
            cause = c.source();
        }
        report
    })?;
    Ok((module, info))
}

fn shader() -> (Module, ModuleInfo) {
    match parse_and_validate(SHADER_SOURCE) {
        Ok(parsed) => parsed,
        Err(report) => panic!("vat.wgsl is invalid:\n{report}"),
    }
}

fn fail_if_any(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}: {} problem(s):\n  {}", problems.len(), problems.join("\n  "));
}

// ---------------------------------------------------------------------------------------------------
// Struct layouts
// ---------------------------------------------------------------------------------------------------

/// The scalar type a Rust field is made of, to catch an `f32` declared `u32` on the other side.
/// `None` for a nested struct (its own entry in [`rust_structs`] checks its members).
trait GpuScalar {
    const KIND: Option<ScalarKind>;
}
impl GpuScalar for f32 {
    const KIND: Option<ScalarKind> = Some(ScalarKind::Float);
}
impl GpuScalar for u32 {
    const KIND: Option<ScalarKind> = Some(ScalarKind::Uint);
}
impl GpuScalar for ShadowCascadeUniforms {
    const KIND: Option<ScalarKind> = None;
}
impl GpuScalar for ShadowLookupUniforms {
    const KIND: Option<ScalarKind> = None;
}
impl<T: GpuScalar, const N: usize> GpuScalar for [T; N] {
    const KIND: Option<ScalarKind> = T::KIND;
}

struct RustField {
    name: &'static str,
    offset: usize,
    size: usize,
    kind: Option<ScalarKind>,
}

struct RustStruct {
    name: &'static str,
    size: usize,
    fields: Vec<RustField>,
}

fn field<S, T: GpuScalar>(name: &'static str, offset: usize, _get: fn(&S) -> &T) -> RustField {
    RustField { name, offset, size: size_of::<T>(), kind: T::KIND }
}

/// Describes a Rust struct from a list of all its fields. The destructuring pattern has no `..`, so
/// leaving a field out of the list does not compile.
macro_rules! rust_struct {
    ($t:ident { $($f:ident),* $(,)? }) => {
        rust_struct!(@describe $t, stringify!($t), $($f),*)
    };
    // A struct whose WGSL twin has another name (the `Vat`-prefixed structs of shadow.wgsl).
    ($t:ident as $wgsl:literal { $($f:ident),* $(,)? }) => {
        rust_struct!(@describe $t, $wgsl, $($f),*)
    };
    (@describe $t:ident, $wgsl:expr, $($f:ident),*) => {{
        fn _every_field_is_listed(v: $t) {
            let $t { $($f: _),* } = v;
        }
        RustStruct {
            name: $wgsl,
            size: size_of::<$t>(),
            fields: vec![$(field(stringify!($f), offset_of!($t, $f), |s: &$t| &s.$f)),*],
        }
    }};
}

fn rust_structs() -> Vec<RustStruct> {
    vec![
        rust_struct!(FrameUniforms {
            view_proj,
            light_view_proj,
            camera_position,
            time,
            sun_direction,
            ambient,
            frustum_planes,
            lod_distances,
            lod_bias,
            lod_count,
            cross_fade_max_lod,
            shadow_max_lod,
            sun_color,
            ground_half_extent,
            previous_view_proj,
            previous_time,
            previous_records,
            jitter,
            ambient_color,
            light_model,
            shadow,
            impostor_start,
            impostor_end,
            impostor_slot,
            impostor_far_slot,
        }),
        rust_struct!(ShadowCascadeUniforms as "VatShadowCascade" { view_proj, far_bound, normal_offset, layer, _pad }),
        rust_struct!(ShadowLookupUniforms as "VatShadowLookup" {
            cascades,
            view_depth,
            light_offset,
            count,
            overlap,
            bias,
            strength,
            reverse_z,
        }),
        rust_struct!(AssetConstants {
            bounds_min,
            vertex_count,
            bounds_extent,
            frame_count,
            position_bits,
            texture_width,
            clip_count,
            bone_count,
            vertex_format,
            bone_texture_width,
            influences,
            attachment_vertex_count,
            morph_target_count,
            morph_texture_width,
            morph_rows_per_band,
            morph_weights_width,
            piece_count,
            pivot_min,
            piece_texture_width,
            pivot_extent,
            rigid_vertex_width,
            tangents,
            material_count,
            material_variant_count,
            fluid_lookup_width,
            particle_min,
            particle_texture_width,
            particle_extent,
            particle_max_size,
            impostor_centre,
            impostor_radius,
            impostor_views_per_side,
            impostor_coverage,
            impostor_tile_size,
            impostor_mip_levels,
            impostor_layers,
            impostor_material_variants,
            residual_position_step,
            residual_normal_step,
            residual_oct_step,
            _residual_pad0,
            _residual_pad1,
            _residual_pad2
        }),
        rust_struct!(ClipRecord {
            first_frame,
            frame_count,
            flags,
            fps,
            duration,
            stride,
            impostor_first_layer,
            impostor_frames
        }),
        rust_struct!(InstanceRecord {
            position,
            yaw,
            clip_a,
            phase_offset_a,
            rate_a,
            scale,
            clip_b,
            phase_offset_b,
            rate_b,
            fade_start,
            tint,
            variant_bits,
        }),
        rust_struct!(DecodeParams { first_instance, instance_count, _pad }),
        rust_struct!(DecodedVertex { position, normal, tangent }),
        rust_struct!(RestVertex { position, material, normal, color, uv, _pad }),
        rust_struct!(MaterialRecord {
            base_color_factor,
            emissive_factor,
            metallic,
            roughness,
            normal_scale,
            alpha_cutoff,
            flags,
            base_color_layer,
            metallic_roughness_layer,
            normal_layer,
            wrap,
        }),
        rust_struct!(AttachmentVertex { position, material, normal, capture_row }),
        rust_struct!(CullParams { record_count, capacity, attachment_max_lod, attachments }),
    ]
}

/// Padding members are named `_pad...` on both sides and are not matched by name (only the total size
/// covers them).
fn is_pad(name: &str) -> bool {
    name.starts_with("_pad")
}

/// The scalar kind of a WGSL type, looking through arrays.
fn wgsl_scalar_kind(module: &Module, inner: &TypeInner) -> Option<ScalarKind> {
    match *inner {
        TypeInner::Array { base, .. } => wgsl_scalar_kind(module, &module.types[base].inner),
        ref other => other.scalar_kind(),
    }
}

fn check_struct_layouts(module: &Module, structs: &[RustStruct]) -> Vec<String> {
    let mut problems = Vec::new();
    for rust in structs {
        let Some((_, ty)) = module.types.iter().find(|(_, t)| t.name.as_deref() == Some(rust.name)) else {
            problems.push(format!("struct {} is not declared in the WGSL", rust.name));
            continue;
        };
        let TypeInner::Struct { ref members, span } = ty.inner else {
            problems.push(format!("WGSL type {} is not a struct", rust.name));
            continue;
        };
        if span as usize != rust.size {
            problems.push(format!("{}: WGSL size {span} != Rust size {}", rust.name, rust.size));
        }
        for member in members {
            let Some(name) = member.name.as_deref() else { continue };
            if is_pad(name) {
                continue;
            }
            let Some(f) = rust.fields.iter().find(|f| f.name == name) else {
                problems.push(format!("{}.{name} is in the WGSL but not in Rust", rust.name));
                continue;
            };
            let inner = &module.types[member.ty].inner;
            let size = inner.size(module.to_ctx()) as usize;
            let kind = wgsl_scalar_kind(module, inner);
            if member.offset as usize != f.offset {
                problems.push(format!(
                    "{}.{name}: WGSL offset {} != Rust offset {}",
                    rust.name, member.offset, f.offset
                ));
            }
            if size != f.size {
                problems.push(format!("{}.{name}: WGSL size {size} != Rust size {}", rust.name, f.size));
            }
            if kind != f.kind {
                problems
                    .push(format!("{}.{name}: WGSL scalar {kind:?} != Rust scalar {:?}", rust.name, f.kind));
            }
        }
        for f in rust.fields.iter().filter(|f| !is_pad(f.name)) {
            if !members.iter().any(|m| m.name.as_deref() == Some(f.name)) {
                problems.push(format!("{}.{} is in Rust but not in the WGSL", rust.name, f.name));
            }
        }
    }
    problems
}

#[test]
fn shader_parses_and_validates_with_baseline_capabilities() {
    let (module, _) = shader();
    assert!(!module.entry_points.is_empty());
}

#[test]
fn struct_sizes_and_offsets_match_the_wgsl() {
    let (module, _) = shader();
    fail_if_any("struct layouts", &check_struct_layouts(&module, &rust_structs()));
}

#[test]
fn layout_check_catches_a_moved_member() {
    // Swapping two u32 members of AssetConstants keeps the size but moves both offsets.
    let broken = SHADER_SOURCE
        .replacen("    clip_count: u32,", "    swapped: u32,", 1)
        .replacen("    bone_count: u32,", "    clip_count: u32,", 1)
        .replacen("    swapped: u32,", "    bone_count: u32,", 1);
    assert!(broken != SHADER_SOURCE, "the replaced text is no longer in vat.wgsl");
    let (module, _) = parse_and_validate(&broken).unwrap();
    let problems = check_struct_layouts(&module, &rust_structs());
    assert_eq!(problems.len(), 2, "{problems:?}");
    // A member of the wrong scalar type at the right offset is caught too.
    let broken = SHADER_SOURCE.replacen("    fps: f32,", "    fps: u32,", 1);
    let (module, _) = parse_and_validate(&broken).unwrap();
    let problems = check_struct_layouts(&module, &rust_structs());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("ClipRecord.fps"), "{problems:?}");
}

// ---------------------------------------------------------------------------------------------------
// Bindings
// ---------------------------------------------------------------------------------------------------

/// Size in bytes the shader needs at least for a buffer variable: the struct's span, or one element
/// of a runtime-sized array.
fn min_binding_size(module: &Module, inner: &TypeInner) -> u64 {
    match *inner {
        TypeInner::Array { size: ArraySize::Dynamic, stride, .. } => u64::from(stride),
        ref other => u64::from(other.size(module.to_ctx())),
    }
}

fn check_bindings(module: &Module, table: &[Binding]) -> Vec<String> {
    let mut problems = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let Some(rb) = var.binding else { continue };
        let name = var.name.as_deref().unwrap_or("<unnamed>");
        let Some(b) = table.iter().find(|b| b.group == rb.group && b.binding == rb.binding) else {
            problems.push(format!("@group({}) @binding({}) {name} is not in BINDINGS", rb.group, rb.binding));
            continue;
        };
        if b.name != name {
            problems.push(format!(
                "@group({}) @binding({}): WGSL name {name} != BINDINGS name {}",
                rb.group, rb.binding, b.name
            ));
        }
        let inner = &module.types[var.ty].inner;
        let found = match (var.space, b.kind) {
            (AddressSpace::Uniform, BindingKind::UniformBuffer { min_size }) => {
                let wgsl = min_binding_size(module, inner);
                (wgsl != min_size)
                    .then(|| format!("{name}: uniform of {wgsl} bytes, BINDINGS min_size {min_size}"))
            }
            (AddressSpace::Storage { access }, BindingKind::StorageBuffer { read_only, min_size }) => {
                let wgsl = min_binding_size(module, inner);
                let wgsl_read_only = !access.contains(StorageAccess::STORE);
                if wgsl_read_only != read_only {
                    Some(format!("{name}: WGSL storage access {access:?}, BINDINGS read_only {read_only}"))
                } else {
                    (wgsl != min_size).then(|| {
                        format!("{name}: storage element of {wgsl} bytes, BINDINGS min_size {min_size}")
                    })
                }
            }
            (
                AddressSpace::Handle,
                BindingKind::Texture { sample_type } | BindingKind::TextureArray { sample_type },
            ) => match *inner {
                TypeInner::Image { dim: ImageDimension::D2, arrayed, class }
                    if arrayed == matches!(b.kind, BindingKind::TextureArray { .. }) =>
                {
                    let compatible = matches!(
                        (class, sample_type),
                        (
                            ImageClass::Sampled { kind: ScalarKind::Float, multi: false },
                            TextureSampleType::Float { .. },
                        ) | (
                            ImageClass::Sampled { kind: ScalarKind::Uint, multi: false },
                            TextureSampleType::Uint
                        ) | (
                            ImageClass::Sampled { kind: ScalarKind::Sint, multi: false },
                            TextureSampleType::Sint
                        ) | (ImageClass::Depth { multi: false }, TextureSampleType::Depth)
                    );
                    (!compatible)
                        .then(|| format!("{name}: WGSL image class {class:?}, BINDINGS {sample_type:?}"))
                }
                ref other => {
                    Some(format!("{name}: WGSL type {other:?} is not a 2D texture (array) as {:?}", b.kind))
                }
            },
            (AddressSpace::Handle, BindingKind::Sampler { comparison }) => match *inner {
                TypeInner::Sampler { comparison: wgsl } => (wgsl != comparison)
                    .then(|| format!("{name}: WGSL sampler comparison {wgsl}, BINDINGS {comparison}")),
                ref other => Some(format!("{name}: WGSL type {other:?} is not a sampler")),
            },
            (space, kind) => Some(format!("{name}: WGSL address space {space:?}, BINDINGS kind {kind:?}")),
        };
        problems.extend(found);
    }
    for b in table {
        let declared = module.global_variables.iter().any(|(_, v)| {
            v.binding.is_some_and(|rb| rb.group == b.group && rb.binding == b.binding)
                && v.name.as_deref() == Some(b.name)
        });
        if !declared {
            problems.push(format!(
                "BINDINGS {} (group {}, binding {}) is not declared in the WGSL",
                b.name, b.group, b.binding
            ));
        }
    }
    problems
}

#[test]
fn every_wgsl_binding_is_in_the_table_and_back() {
    let (module, _) = shader();
    fail_if_any("bindings", &check_bindings(&module, BINDINGS));
}

#[test]
fn binding_check_catches_a_wrong_access_kind_or_number() {
    let (module, _) = shader();
    let mut table = BINDINGS.to_vec();
    let decoded = table.iter().position(|b| b.name == "decoded").unwrap();
    table[decoded].kind = storage::<DecodedVertex>(true);
    let texture = table.iter().position(|b| b.name == "vat_texture").unwrap();
    table[texture].kind =
        BindingKind::Texture { sample_type: TextureSampleType::Float { filterable: false } };
    let asset = table.iter().position(|b| b.name == "asset").unwrap();
    table[asset].binding = 99;
    let problems = check_bindings(&module, &table);
    // read_only, sample type, and "asset" both missing from the table at 1/2 and undeclared at 1/99
    assert_eq!(problems.len(), 4, "{problems:?}");
}

#[test]
fn binding_table_is_sorted_dense_and_grouped() {
    for pair in BINDINGS.windows(2) {
        assert!((pair[0].group, pair[0].binding) < (pair[1].group, pair[1].binding), "{pair:?}");
    }
    assert_eq!(group_count(), 3);
    for g in 0..=GROUP_SCATTER {
        let numbers: Vec<u32> = bindings_in_group(g).map(|b| b.binding).collect();
        assert_eq!(numbers, (0..numbers.len() as u32).collect::<Vec<_>>(), "group {g}");
    }
    assert_eq!(bindings_in_group(9).count(), 0);
    let render: Vec<&str> =
        bindings_for_stages(GROUP_CROWD, ShaderStages::VERTEX_FRAGMENT).map(|b| b.name).collect();
    assert_eq!(render, ["instances", "instance_list", "instance_user_data"]);
    let compute: Vec<&str> =
        bindings_for_stages(GROUP_CROWD, ShaderStages::COMPUTE).map(|b| b.name).collect();
    assert_eq!(compute, ["instances", "decode_params", "decoded", "cull_params", "visible", "draw_args"]);
    // The shadow pass renders into the shadow map: its vertex-only pipelines must not bind it.
    let depth: Vec<&str> = bindings_for_stages(GROUP_FRAME, ShaderStages::VERTEX).map(|b| b.name).collect();
    assert_eq!(depth, ["frame"]);
}

/// WebGPU's default `max_storage_buffers_per_shader_stage` is 8: no stage of any pipeline layout built
/// from the table may exceed it, so the renderer runs on devices opened with default limits. The
/// scatter pipeline's layout is group 3 alone; every other layout is groups `0..group_count()`.
#[test]
fn no_stage_binds_more_than_eight_storage_buffers() {
    let storage = |b: &&Binding| matches!(b.kind, BindingKind::StorageBuffer { .. });
    for stage in [ShaderStages::VERTEX, ShaderStages::FRAGMENT, ShaderStages::COMPUTE] {
        let n = (0..group_count()).flat_map(|g| bindings_for_stages(g, stage)).filter(storage).count();
        assert!(n <= 8, "{stage:?}: {n} storage buffers");
    }
    assert_eq!(bindings_for_stages(GROUP_SCATTER, ShaderStages::COMPUTE).filter(storage).count(), 3);
    assert_eq!(bindings_for_stages(GROUP_SCATTER, ShaderStages::VERTEX_FRAGMENT).count(), 0);
}

#[test]
fn shader_stages_set_operations() {
    let vc = ShaderStages::VERTEX | ShaderStages::COMPUTE;
    assert_eq!(vc.bits(), 0b101);
    assert!(vc.contains(ShaderStages::VERTEX) && vc.contains(ShaderStages::COMPUTE));
    assert!(!vc.contains(ShaderStages::FRAGMENT) && !vc.contains(ShaderStages::ALL));
    assert!(vc.contains(ShaderStages::NONE));
    assert!(vc.intersects(ShaderStages::VERTEX_FRAGMENT) && !vc.intersects(ShaderStages::FRAGMENT));
    assert_eq!(ShaderStage::Fragment.stages(), ShaderStages::FRAGMENT);
}

// ---------------------------------------------------------------------------------------------------
// Entry points and stages
// ---------------------------------------------------------------------------------------------------

fn stage_of(stage: naga::ShaderStage) -> Option<ShaderStage> {
    match stage {
        naga::ShaderStage::Vertex => Some(ShaderStage::Vertex),
        naga::ShaderStage::Fragment => Some(ShaderStage::Fragment),
        naga::ShaderStage::Compute => Some(ShaderStage::Compute),
        _ => None,
    }
}

#[test]
fn entry_points_match_the_table() {
    let (module, _) = shader();
    // The same entry points with the same stages; the order is not compared (each mode's file of
    // the shader brings its own, after vat.wgsl's).
    let mut wgsl: Vec<(String, Option<ShaderStage>)> =
        module.entry_points.iter().map(|ep| (ep.name.clone(), stage_of(ep.stage))).collect();
    let mut table: Vec<(String, Option<ShaderStage>)> =
        ENTRY_POINTS.iter().map(|ep| (ep.name.to_owned(), Some(ep.stage))).collect();
    wgsl.sort_by(|a, b| a.0.cmp(&b.0));
    table.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(wgsl, table);
    assert_eq!(table.windows(2).filter(|w| w[0].0 == w[1].0).count(), 0, "an entry point listed twice");
    for (name, size) in [
        (ENTRY_POINT_DECODE, DECODE_WORKGROUP_SIZE),
        (ENTRY_POINT_DECODE_BONE, DECODE_WORKGROUP_SIZE),
        (ENTRY_POINT_CULL, CULL_WORKGROUP_SIZE),
        (ENTRY_POINT_SCATTER, SCATTER_WORKGROUP_SIZE),
    ] {
        let ep = module.entry_points.iter().find(|ep| ep.name == name).unwrap();
        assert_eq!(ep.workgroup_size, [size, 1, 1], "{name}");
    }
}

/// For each entry point, naga's analysis (`ModuleInfo::get_entry_point(i)[global]`, a `GlobalUse`
/// that is empty when the entry point and everything it calls never touch the global) says which
/// bindings it uses; each must be visible to the entry point's stage. Also every binding must be used
/// by some entry point, so the table carries no dead entries.
fn check_stages(module: &Module, info: &ModuleInfo, table: &[Binding]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut used = vec![false; table.len()];
    for (i, ep) in module.entry_points.iter().enumerate() {
        let Some(stage) = stage_of(ep.stage) else {
            problems.push(format!("entry point {} has unsupported stage {:?}", ep.name, ep.stage));
            continue;
        };
        let uses = info.get_entry_point(i);
        for (handle, var) in module.global_variables.iter() {
            let Some(rb) = var.binding else { continue };
            if uses[handle].is_empty() {
                continue;
            }
            let Some(k) = table.iter().position(|b| b.group == rb.group && b.binding == rb.binding) else {
                continue; // reported by check_bindings
            };
            used[k] = true;
            if !table[k].stages.contains(stage.stages()) {
                problems.push(format!(
                    "{} ({stage:?}) uses {} but its stages are {:?}",
                    ep.name, table[k].name, table[k].stages
                ));
            }
        }
    }
    for (b, used) in table.iter().zip(used) {
        // Bindings for the host's shaders only (vat's own entry points leave them alone).
        if !used && !HOST_ONLY_BINDINGS.contains(&b.name) {
            problems.push(format!("{} is used by no entry point", b.name));
        }
    }
    problems
}

#[test]
fn every_binding_an_entry_point_uses_is_visible_to_its_stage() {
    let (module, info) = shader();
    fail_if_any("stages", &check_stages(&module, &info, BINDINGS));
}

#[test]
fn stage_check_catches_a_binding_hidden_from_its_user() {
    let (module, info) = shader();
    let mut table = BINDINGS.to_vec();
    let clips = table.iter().position(|b| b.name == "clips").unwrap();
    table[clips].stages = ShaderStages::VERTEX;
    let problems = check_stages(&module, &info, &table);
    // The five decode entry points read the clip table (cs_cull does not).
    assert_eq!(problems.len(), 5, "{problems:?}");
    assert!(problems[0].contains("cs_decode (Compute) uses clips"), "{problems:?}");
    assert!(problems[1].contains("cs_decode_bone (Compute) uses clips"), "{problems:?}");
    assert!(problems[2].contains("cs_decode_rigid (Compute) uses clips"), "{problems:?}");
    assert!(problems[3].contains("cs_decode_fluid (Compute) uses clips"), "{problems:?}");
    assert!(problems[4].contains("cs_decode_sprite (Compute) uses clips"), "{problems:?}");
}

// ---------------------------------------------------------------------------------------------------
// Constants shared by name
// ---------------------------------------------------------------------------------------------------

fn literal_u32(module: &Module, init: naga::Handle<Expression>) -> Option<u32> {
    match module.global_expressions[init] {
        Expression::Literal(Literal::U32(v)) => Some(v),
        _ => None,
    }
}

/// The impostor shader's constants are the format's: the mip level from which a card reads one view
/// (cs_cull sends those cards to a draw of their own by it) and the depth correction's steps.
#[test]
fn impostor_constants_match_the_format() {
    use crate::format::impostor::{PARALLAX_STEPS, SINGLE_VIEW_LEVEL};
    let (module, _) = shader();
    let (_, c) = module
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some("IMPOSTOR_SINGLE_VIEW_LEVEL"))
        .expect("impostor.wgsl names IMPOSTOR_SINGLE_VIEW_LEVEL");
    let level = match module.global_expressions[c.init] {
        Expression::Literal(Literal::F32(v)) => Some(v),
        _ => None,
    };
    assert_eq!(level, Some(SINGLE_VIEW_LEVEL));
    assert_eq!(wgsl_const(&module, "IMPOSTOR_PARALLAX_STEPS"), Some(PARALLAX_STEPS));
}

fn wgsl_const(module: &Module, name: &str) -> Option<u32> {
    let (_, c) = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some(name))?;
    literal_u32(module, c.init)
}

#[test]
fn override_and_constants_match_rust() {
    let (module, _) = shader();
    let (_, o) =
        module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_INTERPOLATION)).unwrap();
    assert_eq!(o.init.and_then(|init| literal_u32(&module, init)), Some(INTERPOLATION_LINEAR));
    let (_, o) =
        module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_INFLUENCES)).unwrap();
    assert_eq!(o.init.and_then(|init| literal_u32(&module, init)), Some(4));
    let (_, o) =
        module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_CROSS_FADE)).unwrap();
    let init = o.init.map(|init| &module.global_expressions[init]);
    assert!(matches!(init, Some(Expression::Literal(Literal::Bool(true)))), "{init:?}");
    let (_, o) =
        module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_VERTEX_FORMAT)).unwrap();
    assert_eq!(
        o.init.and_then(|init| literal_u32(&module, init)),
        Some(vertex_format_code(VertexFormat::Packed64))
    );
    let (_, o) =
        module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_MOTION_VECTORS)).unwrap();
    let init = o.init.map(|init| &module.global_expressions[init]);
    assert!(matches!(init, Some(Expression::Literal(Literal::Bool(false)))), "{init:?}");
    let (_, o) = module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(OVERRIDE_PROGRAM)).unwrap();
    assert_eq!(o.init.and_then(|init| literal_u32(&module, init)), Some(0));
    for name in [OVERRIDE_MATERIALS, OVERRIDE_LIGHT_MODEL, OVERRIDE_IMPOSTOR_VIEWS] {
        let (_, o) = module.overrides.iter().find(|(_, o)| o.name.as_deref() == Some(name)).unwrap();
        assert_eq!(
            o.init.and_then(|init| literal_u32(&module, init)),
            Some(0),
            "{name}: run time by default"
        );
    }
    assert_eq!(module.overrides.len(), 9, "every override needs a Rust name");
    // The codes override_constants gives: MATERIALS 0 run time, 1 palette, 2 materials;
    // LIGHT_MODEL 0 the frame's, else 1 + the LIGHT_MODEL_* constant.
    for (name, value) in [
        ("MATERIALS_RUN_TIME", 0),
        ("MATERIALS_PALETTE", 1),
        ("MATERIALS_MATERIALS", 2),
        ("LIGHT_MODEL_VAT", LIGHT_MODEL_VAT),
        ("LIGHT_MODEL_PBR", LIGHT_MODEL_PBR),
        ("IMPOSTOR_VIEWS_PER_CARD", crate::pipeline::ImpostorViews::PerCard.code()),
        ("IMPOSTOR_VIEWS_ONE", crate::pipeline::ImpostorViews::One.code()),
        ("IMPOSTOR_VIEWS_THREE", crate::pipeline::ImpostorViews::Three.code()),
    ] {
        let (_, c) = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some(name)).unwrap();
        assert_eq!(literal_u32(&module, c.init), Some(value), "{name}");
    }
    // The PROGRAM_* constants are the codes PipelineKey::program_code gives.
    use crate::pipeline::{PassKind, PipelineKey, Program, ShaderVariantKey};
    use crate::render::RenderMode;
    for (name, program) in [
        ("PROGRAM_VAT", Program::Body(RenderMode::Vat)),
        ("PROGRAM_BONE", Program::Body(RenderMode::Bone)),
        ("PROGRAM_RIGID", Program::Rigid),
        ("PROGRAM_REST", Program::Body(RenderMode::Rest)),
        ("PROGRAM_ATTACHMENT", Program::Attachment),
    ] {
        let key = PipelineKey { program, pass: PassKind::Colour, variant: ShaderVariantKey::NEUTRAL };
        let (_, c) = module.constants.iter().find(|(_, c)| c.name.as_deref() == Some(name)).unwrap();
        assert_eq!(literal_u32(&module, c.init), Some(key.program_code()), "{name}");
    }
    for (name, value) in [
        ("INTERPOLATION_POINT", INTERPOLATION_POINT),
        ("INTERPOLATION_LINEAR", INTERPOLATION_LINEAR),
        ("INTERPOLATION_CUBIC", INTERPOLATION_CUBIC),
        ("CLIP_FLAG_LOOPING", CLIP_FLAG_LOOPING),
        ("CLIP_INDEX_MASK", crate::instance::CLIP_INDEX_MASK),
        ("DECODE_WORKGROUP_SIZE", DECODE_WORKGROUP_SIZE),
        ("CULL_WORKGROUP_SIZE", CULL_WORKGROUP_SIZE),
        ("SCATTER_WORKGROUP_SIZE", SCATTER_WORKGROUP_SIZE),
        ("VARIANT_MATERIAL_MASK", crate::instance::VARIANT_MATERIAL_MASK),
        ("VARIANT_ACCESSORY", crate::instance::VARIANT_ACCESSORY),
        ("VARIANT_HIDDEN", crate::instance::VARIANT_HIDDEN),
        ("VARIANT_WRAP_A_SHIFT", crate::instance::VARIANT_WRAP_A_SHIFT),
        ("VARIANT_WRAP_B_SHIFT", crate::instance::VARIANT_WRAP_B_SHIFT),
        ("WRAP_LOOP", crate::playback::Wrap::Loop.code()),
        ("WRAP_CLAMP", crate::playback::Wrap::Clamp.code()),
        ("WRAP_PING_PONG", crate::playback::Wrap::PingPong.code()),
        ("TEXELS_PER_BONE", crate::layout::TEXELS_PER_BONE),
        ("MAX_LODS", crate::lod::MAX_LODS as u32),
        ("DRAW_ARGS_WORDS", DRAW_ARGS_WORDS),
        ("VERTEX_FORMAT_PACKED64", vertex_format_code(VertexFormat::Packed64)),
        ("VERTEX_FORMAT_UNORM16", vertex_format_code(VertexFormat::Unorm16)),
        ("VERTEX_FORMAT_F16", vertex_format_code(VertexFormat::F16)),
        ("VERTEX_FORMAT_F32", vertex_format_code(VertexFormat::F32)),
        ("VERTEX_FORMAT_UNORM8", vertex_format_code(VertexFormat::Unorm8)),
        ("VERTEX_FORMAT_SPLIT8", vertex_format_code(VertexFormat::Split8)),
    ] {
        assert_eq!(wgsl_const(&module, name), Some(value), "{name}");
    }
    // The mode values are the spec's (Point 0, Linear 1, Cubic 2) and playback's.
    assert_eq!([INTERPOLATION_POINT, INTERPOLATION_LINEAR, INTERPOLATION_CUBIC], [0, 1, 2]);
    use crate::playback::Interpolation;
    assert_eq!(Interpolation::Point.as_u32(), INTERPOLATION_POINT);
    assert_eq!(Interpolation::Linear.as_u32(), INTERPOLATION_LINEAR);
    assert_eq!(Interpolation::Cubic.as_u32(), INTERPOLATION_CUBIC);
    assert_eq!(Interpolation::default().as_u32(), INTERPOLATION_LINEAR, "the shader's default");
}

// ---------------------------------------------------------------------------------------------------
// Rust-side conversions
// ---------------------------------------------------------------------------------------------------

#[test]
fn clip_record_from_clip() {
    let mut map = ClipRowMap::new();
    map.push("walk", 1.0, 30.0, ClipMode::Looping, 1.48).unwrap();
    map.push("wave", 1.5, 30.0, ClipMode::OneShot, 0.0).unwrap();
    let walk = ClipRecord::from(&map.clips()[0]);
    let wave = ClipRecord::from(&map.clips()[1]);
    assert_eq!(
        walk,
        ClipRecord {
            first_frame: 0,
            frame_count: 30,
            flags: CLIP_FLAG_LOOPING,
            fps: 30.0,
            duration: 1.0,
            stride: 1.48,
            impostor_first_layer: 0,
            impostor_frames: 0,
        }
    );
    assert_eq!((wave.first_frame, wave.frame_count, wave.flags, wave.duration), (30, 46, 0, 1.5));
}

#[test]
fn vertex_format_codes_are_distinct_and_packed64_is_zero() {
    let formats = VertexFormat::TEXTURED;
    let codes: Vec<u32> = formats.iter().map(|&f| vertex_format_code(f)).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
}

/// Every format's textures go to distinct vertex-texture bindings whose WGSL sample type fits their
/// texel format (unsigned formats to `texture_2d<u32>`, float formats to `texture_2d<f32>`), one per
/// texture, visible to the vertex and compute stages like the rest of the decode.
#[test]
fn every_vertex_format_has_bindings_of_its_sample_type() {
    for format in VertexFormat::TEXTURED {
        let names = vertex_texture_bindings(format);
        assert_eq!(names.len(), format.texel_formats().len(), "{format:?}");
        for (i, (&name, &texel)) in names.iter().zip(format.texel_formats()).enumerate() {
            assert!(VERTEX_TEXTURE_BINDINGS.contains(&name), "{format:?}: {name}");
            assert!(!names[..i].contains(&name), "{format:?}: {name} twice");
            let b = BINDINGS.iter().find(|b| b.name == name).unwrap();
            assert_eq!(b.group, GROUP_ASSET);
            assert!(b.stages.contains(ShaderStages::VERTEX.union(ShaderStages::COMPUTE)), "{name}");
            let expected = match texel {
                TexelFormat::Rgba16Float
                | TexelFormat::Rg16Float
                | TexelFormat::Rgba32Float
                | TexelFormat::Rg32Float => TextureSampleType::Float { filterable: false },
                _ => TextureSampleType::Uint,
            };
            assert_eq!(b.kind, BindingKind::Texture { sample_type: expected }, "{format:?}: {name}");
        }
    }
    // The stand-ins' formats fit their bindings too.
    for name in VERTEX_TEXTURE_BINDINGS {
        assert!(BINDINGS.iter().any(|b| b.name == name), "{name}");
    }
}

fn numbered_records(n: u32, tag: f32) -> Vec<InstanceRecord> {
    (0..n).map(|i| InstanceRecord { position: [i as f32, tag, 0.0], ..InstanceRecord::zeroed() }).collect()
}

#[test]
fn scatter_plan_keeps_few_ranges_in_place() {
    let src = numbered_records(100, 1.0);
    let ranges: Vec<(u32, &[InstanceRecord])> = (0..SCATTER_MIN_RANGES as u32 - 1)
        .map(|k| (k * 5, &src[k as usize * 5..k as usize * 5 + 1]))
        .collect();
    let mut plan = ScatterPlan::default();
    plan.plan(&ranges);
    assert_eq!(plan.direct.len(), ranges.len());
    assert_eq!(plan.scattered(), 0);
    assert!(plan.indices.is_empty());
}

/// Many short ranges are packed, long ones stay in place, and applying the plan to a stale copy gives
/// exactly the new buffer (every record written once, by whichever route).
#[test]
fn scatter_plan_packs_short_ranges_and_reproduces_the_buffer() {
    let n = 10_000u32;
    let new = numbered_records(n, 2.0);
    let mut ranges: Vec<(u32, &[InstanceRecord])> = Vec::new();
    let mut expected_scattered = 0;
    let mut first = 3u32;
    let mut k = 0usize;
    while first < n - 100 {
        // Mostly single records, every seventh range a long run.
        let len =
            if k.is_multiple_of(7) { SCATTER_MIN_DIRECT_RECORDS as u32 + 5 } else { 1 + (k as u32 % 3) };
        ranges.push((first, &new[first as usize..(first + len) as usize]));
        if (len as usize) < SCATTER_MIN_DIRECT_RECORDS {
            expected_scattered += len;
        }
        first += len + 37;
        k += 1;
    }
    // A stale plan is replaced, not extended.
    let mut plan = ScatterPlan::default();
    plan.plan(&ranges[..3]);
    plan.plan(&ranges);
    assert_eq!(plan.scattered(), expected_scattered);
    assert_eq!(plan.indices.len(), expected_scattered as usize + 1);
    assert_eq!(plan.indices[0], expected_scattered);
    assert!(plan.direct.iter().all(|&k| ranges[k].1.len() >= SCATTER_MIN_DIRECT_RECORDS));

    let mut gpu = numbered_records(n, 1.0);
    plan.apply(&ranges, &mut gpu);
    let mut cpu = numbered_records(n, 1.0);
    for &(first, records) in &ranges {
        cpu[first as usize..first as usize + records.len()].copy_from_slice(records);
    }
    assert!(gpu == cpu, "the plan must write exactly the dirty records");
    assert!(gpu.iter().any(|r| r.position[1] == 1.0) && gpu.iter().any(|r| r.position[1] == 2.0));
}

#[test]
fn frame_uniforms_clamp_lod_limits_to_the_assets_last_lod() {
    let identity = glam::Mat4::IDENTITY.to_cols_array_2d();
    let uniforms = |thresholds: &crate::lod::LodThresholds, limit: u32| {
        uniforms_with(thresholds, limit, Some(ShadowLookup::built_in(identity, 100.0)))
    };
    let one = crate::lod::LodThresholds::default();
    let u = uniforms(&one, 1);
    assert_eq!((u.lod_count, u.shadow_max_lod, u.cross_fade_max_lod), (1, 0, 0), "1 LOD: LOD 0 casts");
    let three = crate::lod::LodThresholds::new(&[5.0, 20.0]).unwrap();
    let u = uniforms(&three, 1);
    assert_eq!((u.lod_count, u.shadow_max_lod, u.cross_fade_max_lod), (3, 1, 1), "within range: unchanged");
    let u = uniforms(&three, 8);
    assert_eq!((u.shadow_max_lod, u.cross_fade_max_lod), (2, 2));
    let offset = u.shadow.cascades[0].normal_offset;
    assert_eq!(offset, SHADOW_NORMAL_OFFSET * 100.0, "the offset follows the scene unit");
    assert_eq!(
        (sanitized_scene_unit(f32::NAN), sanitized_scene_unit(-1.0), sanitized_scene_unit(0.2)),
        (1.0, 1.0, 0.2)
    );
}

/// The uniforms of a frame at the origin with `shadow`, sun straight up.
fn uniforms_with(
    thresholds: &crate::lod::LodThresholds,
    limit: u32,
    shadow: Option<ShadowLookup>,
) -> FrameUniforms {
    FrameUniforms::new(&FrameInputs {
        view_proj: glam::Mat4::IDENTITY.to_cols_array_2d(),
        camera_position: [0.0; 3],
        time: 0.0,
        frustum_planes: [[0.0; 4]; 6],
        sun_direction: [0.0, 1.0, 0.0],
        sun_color: [1.0, 0.9, 0.8],
        ambient: 0.3,
        lod_thresholds: thresholds,
        lod_bias: 0.0,
        cross_fade_max_lod: limit,
        shadow_max_lod: limit,
        shadow,
        ground_half_extent: 10.0,
        history: None,
        impostor: None,
        jitter: [0.0; 2],
        light_model: LightModel::Vat,
    })
}

#[test]
fn frame_uniforms_carry_the_hosts_light_and_shadow_lookup() {
    let lods = crate::lod::LodThresholds::default();
    let matrix =
        glam::camera::rh::proj::directx::orthographic(-5.0, 5.0, -5.0, 5.0, 0.0, 20.0).to_cols_array_2d();
    let mut host = ShadowLookup::host(matrix);
    (host.strength, host.bias, host.cascades[0].normal_offset) = (0.5, 0.004, 0.1);
    let u = uniforms_with(&lods, 0, Some(host));
    assert_eq!(u.light_view_proj, matrix);
    let s = u.shadow;
    assert_eq!((s.count, s.strength, s.bias, s.cascades[0].normal_offset), (1, 0.5, 0.004, 0.1));
    assert_eq!(u.sun_color, [1.0, 0.9, 0.8]);
    let none = uniforms_with(&lods, 0, None);
    assert_eq!(none.shadow, ShadowLookupUniforms::zeroed(), "no lookup: all zeros");
    assert_eq!(none.light_view_proj, glam::Mat4::IDENTITY.to_cols_array_2d());
    // Hostile values: a NaN matrix means no shadows, strengths are clamped to 0..=1, NaN to 0.
    let mut nan = host;
    nan.cascades[0].view_proj[1][2] = f32::NAN;
    assert_eq!(uniforms_with(&lods, 0, Some(nan)).shadow.count, 0, "a NaN matrix reads no map");
    let mut wild = ShadowLookup { strength: 7.0, bias: f32::NAN, overlap: f32::NAN, ..host };
    wild.cascades[0].normal_offset = f32::INFINITY;
    let s = uniforms_with(&lods, 0, Some(wild)).shadow;
    assert_eq!((s.strength, s.bias, s.overlap, s.cascades[0].normal_offset), (1.0, 0.0, 0.0, 0.0));
    let built_in = ShadowLookup::built_in(matrix, f32::NAN);
    assert_eq!(
        (built_in.strength, built_in.bias, built_in.cascades[0].normal_offset, built_in.reverse_z),
        (SHADOW_STRENGTH, SHADOW_COMPARE_BIAS, SHADOW_NORMAL_OFFSET, false),
        "vat's own lookup, scene unit 1"
    );
}

/// Bevy-like cascades: 4 of them ending at 5, 12, 30 and 80 m, 20 % overlap.
fn four_cascades() -> ShadowLookup {
    let identity = glam::Mat4::IDENTITY.to_cols_array_2d();
    let cascades: Vec<ShadowCascade> = [5.0, 12.0, 30.0, 80.0]
        .iter()
        .enumerate()
        .map(|(k, &far_bound)| ShadowCascade {
            view_proj: identity,
            far_bound,
            normal_offset: 0.0,
            layer: k as u32,
        })
        .collect();
    ShadowLookup::cascaded(&cascades, [0.0, 0.0, -1.0, 0.0], 0.2, true).unwrap()
}

#[test]
fn cascades_are_chosen_by_view_distance_and_blended_over_the_overlap() {
    let lookup = four_cascades();
    assert_eq!(lookup.cascade_weights(0.0), vec![(0, 1.0)]);
    assert_eq!(lookup.cascade_weights(3.9), vec![(0, 1.0)], "before the overlap (4 m): cascade 0 alone");
    // 4.5 m is halfway through cascade 0's overlap [4, 5).
    assert_eq!(lookup.cascade_weights(4.5), vec![(0, 0.5), (1, 0.5)]);
    assert_eq!(lookup.cascade_weights(5.0), vec![(1, 1.0)], "the far bound itself is the next cascade's");
    let w = lookup.cascade_weights(78.0);
    assert_eq!(w, vec![(3, 1.0)], "the last cascade has no next one to blend with");
    assert!(lookup.cascade_weights(80.0).is_empty(), "past the last cascade: lit");
    // Weights always sum to 1 inside the cascades, and the choice is monotonic.
    let mut last = 0;
    for i in 0..800 {
        let d = i as f32 * 0.1;
        let w = lookup.cascade_weights(d);
        let sum: f32 = w.iter().map(|&(_, x)| x).sum();
        assert!((sum - 1.0).abs() <= 1e-6 && w[0].0 >= last, "{d}: {w:?}");
        last = w[0].0;
    }
    // The uniforms carry what the shader needs to make the same choice.
    let u = lookup.uniforms();
    assert_eq!((u.count, u.reverse_z, u.overlap, u.view_depth), (4, 1, 0.2, [0.0, 0.0, -1.0, 0.0]));
    let bounds: Vec<(f32, u32)> = u.cascades.iter().map(|c| (c.far_bound, c.layer)).collect();
    assert_eq!(bounds, vec![(5.0, 0), (12.0, 1), (30.0, 2), (80.0, 3)]);
}

#[test]
fn cascaded_lookups_refuse_what_the_shader_cannot_pick_from() {
    let one = four_cascades().cascades[0];
    assert_eq!(ShadowLookup::cascaded(&[], [0.0; 4], 0.2, true), Err(ShadowCascadeError::Count(0)));
    assert_eq!(ShadowLookup::cascaded(&[one; 5], [0.0; 4], 0.2, true), Err(ShadowCascadeError::Count(5)));
    let mut c = four_cascades().cascades;
    c[2].far_bound = 12.0;
    assert_eq!(ShadowLookup::cascaded(&c, [0.0; 4], 0.2, true), Err(ShadowCascadeError::Unordered(2)));
    c[2].far_bound = f32::NAN;
    assert_eq!(ShadowLookup::cascaded(&c, [0.0; 4], 0.2, true), Err(ShadowCascadeError::Unordered(2)));
    let err = ShadowLookup::cascaded(&[one; 5], [0.0; 4], 0.2, true).unwrap_err();
    assert!(err.to_string().contains("1 to 4 cascades"), "{err}");
}

#[test]
fn material_records_hold_every_variant_slot() {
    use crate::container::{Manifest, Material, MaterialVariant};
    let mut m = Manifest::new("variants", 3);
    let record = |r: f32| Material { base_color_factor: [r, 0.0, 0.0, 1.0], ..Material::default() };
    m.materials = vec![record(0.1), record(0.2), record(0.3)];
    m.material_variants = vec![
        MaterialVariant { name: "a".into(), materials: vec![2, 1, 0] },
        MaterialVariant { name: "b".into(), materials: vec![1, 1, 1] },
    ];
    let records = material_records(&m);
    let reds: Vec<f32> = records.iter().map(|r| r.base_color_factor[0]).collect();
    // Slot s of id k is record s * 3 + k.
    assert_eq!(reds, [0.1, 0.2, 0.3, 0.3, 0.2, 0.1, 0.2, 0.2, 0.2]);
    let c = AssetConstants::from_manifest(&Manifest {
        vertex_animation: None,
        rigid_animation: None,
        ..m.clone()
    });
    assert!(c.is_none(), "no animation: no constants");
    // Without materials: one neutral record.
    assert_eq!(material_records(&Manifest::new("none", 1)).len(), 1);
}

#[test]
fn the_sun_map_fits_a_reverse_z_camera_like_the_standard_one() {
    use crate::crowd::Camera;
    let (eye, target) = ([3.0, 2.0, 9.0], [0.0, 1.0, 0.0]);
    let standard = Camera::look_at(eye, target, 0.9, 1.6, 0.1, 200.0);
    let reverse = Camera::look_at_reverse_z(eye, target, 0.9, 1.6, 0.1);
    let sun = [0.4, 0.8, 0.3];
    let a = shadow_view_proj(&standard.view_proj, sun, 60.0, 30.0).unwrap();
    let b = shadow_view_proj(&reverse.view_proj, sun, 60.0, 30.0).unwrap();
    // The same first 60 m of the view: the same fit, to the rounding of two inversions.
    for (ca, cb) in a.iter().zip(&b) {
        for (x, y) in ca.iter().zip(cb) {
            assert!((x - y).abs() < 1e-4 * (1.0 + x.abs()), "{a:?}\n{b:?}");
        }
    }
    // A far plane nearer than the shadow distance still bounds the fit.
    let short = Camera::look_at(eye, target, 0.9, 1.6, 0.1, 20.0);
    let c = shadow_view_proj(&short.view_proj, sun, 60.0, 30.0).unwrap();
    assert!(c[0][0].abs() > a[0][0].abs() * 1.5, "a 20 m view fits a smaller map");
}

#[test]
fn the_pbr_light_model_carries_its_ambient_colour_and_vats_carries_none() {
    let lods = crate::lod::LodThresholds::default();
    let inputs_light = |light_model| {
        let inputs = FrameInputs {
            view_proj: glam::Mat4::IDENTITY.to_cols_array_2d(),
            camera_position: [0.0; 3],
            time: 0.0,
            frustum_planes: [[0.0; 4]; 6],
            sun_direction: [0.0, 1.0, 0.0],
            sun_color: [1.0; 3],
            ambient: 0.3,
            lod_thresholds: &lods,
            lod_bias: 0.0,
            cross_fade_max_lod: 0,
            shadow_max_lod: 0,
            shadow: None,
            ground_half_extent: 10.0,
            history: None,
            impostor: None,
            jitter: [0.0; 2],
            light_model,
        };
        let u = FrameUniforms::new(&inputs);
        (u.light_model, u.ambient_color)
    };
    assert_eq!(inputs_light(LightModel::Vat), (LIGHT_MODEL_VAT, [0.0; 3]));
    let pbr = LightModel::Pbr { ambient_color: [300.0, 250.0, f32::NAN] };
    assert_eq!(inputs_light(pbr), (LIGHT_MODEL_PBR, [300.0, 250.0, 0.0]), "NaN reads as 0");
    let negative = LightModel::Pbr { ambient_color: [-1.0, 0.5, 0.25] };
    assert_eq!(inputs_light(negative).1, [0.0, 0.5, 0.25], "negative light reads as 0");
    // The WGSL constants are the Rust ones.
    for (name, value) in [("LIGHT_MODEL_VAT", LIGHT_MODEL_VAT), ("LIGHT_MODEL_PBR", LIGHT_MODEL_PBR)] {
        assert!(SHADER_SOURCE.contains(&format!("const {name}: u32 = {value}u;")), "{name} = {value}");
    }
}

#[test]
fn stages_map_stage_by_stage() {
    // Vulkan's bits (vertex 1, fragment 0x10, compute 0x20) differ from vat's.
    let vulkan = [0x1u32, 0x10, 0x20];
    assert_eq!((ShaderStages::VERTEX | ShaderStages::COMPUTE).map(0, vulkan), 0x21);
    assert_eq!(ShaderStages::FRAGMENT.map(0, vulkan), 0x10);
    assert_eq!(ShaderStages::NONE.map(0, vulkan), 0);
}

#[test]
fn compute_pipelines_see_the_decode_bindings_and_render_pipelines_do_not() {
    let compute = bindings_for_stages(GROUP_CROWD, ShaderStages::COMPUTE).count();
    let render = bindings_for_stages(GROUP_CROWD, ShaderStages::VERTEX_FRAGMENT).count();
    assert!(compute > render && render > 0, "{compute} compute, {render} render bindings");
}

/// `vat_texel_xy` (vat.wgsl) in f32 arithmetic, its quotient moved `ulps` units in the last place
/// (WGSL allows 1 ULP on the conversion of `t` and 2.5 ULP on the division).
fn texel_xy_by_f32(t: u32, width: u32, ulps: i32) -> (u32, u32) {
    let w = width.max(1);
    let mut q = t as f32 / w as f32;
    for _ in 0..ulps.unsigned_abs() {
        q = if ulps > 0 { q.next_up() } else { q.next_down() };
    }
    // WGSL's u32(f32) truncates toward zero, as `as` does.
    let mut y = q as u32;
    let mut x = t.wrapping_sub(y.wrapping_mul(w)) as i32;
    if x < 0 {
        y -= 1;
        x += w as i32;
    } else if x >= w as i32 {
        y += 1;
        x -= w as i32;
    }
    (x as u32, y)
}

#[test]
fn texel_coordinates_without_integer_division_are_exact_for_every_row_a_device_holds() {
    // Widths of every kind the layouts make (1, odd, a row of residual words, 4095, the 4096 the
    // writers use, 16384 the limit), every row up to the 16384 limit, the texels either side of each
    // row's start and its last, the quotient off by up to 4 ULP either way.
    let widths = [1u32, 2, 3, 7, 64, 1000, 2439, 4095, 4096, 4097, 9999, 16384];
    let mut checked = 0u64;
    for &w in &widths {
        for y in 0..16384u32 {
            let start = y * w;
            for t in [start.wrapping_sub(1), start, start + 1, start + w - 1] {
                if t == u32::MAX || (t / w) >= 16384 {
                    continue;
                }
                for ulps in -4..=4 {
                    let got = texel_xy_by_f32(t, w, ulps);
                    assert_eq!(
                        got,
                        (t % w, t / w),
                        "texel {t} of a texture {w} wide, quotient off by {ulps} ULP"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1_000_000, "only {checked} texels checked");
}

#[test]
fn the_shaders_address_texels_without_integer_division() {
    // The arithmetic above is what the shaders run: every texel address goes through vat_texel_xy.
    let source = SHADER_SOURCE;
    assert!(
        source.contains("fn vat_texel_xy(t: u32, width: u32) -> vec2<i32>"),
        "vat_texel_xy is gone from vat.wgsl"
    );
    for line in source.lines().filter(|l| !l.trim_start().starts_with("//")) {
        assert!(!line.contains("textureLoad(") || !line.contains(" % "), "a texel address divides: {line}");
        assert!(
            !line.contains("% width") && !line.contains("/ width"),
            "a texel address divides by the width: {line}"
        );
    }
}
