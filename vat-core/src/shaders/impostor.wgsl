
// ---------------------------------------------------------------------------------------------------
// The impostor tier (vat_core::format::impostor): far instances as camera-facing cards showing the
// tier's images. The view grid, blend, depth correction and image choice mirror the CPU reference
// in vat_core::format::impostor (ViewGrid::blend, view_direction, view_axes, card_samples,
// clip_images).
// ---------------------------------------------------------------------------------------------------

// AssetConstants.impostor_coverage (vat_core::gpu::IMPOSTOR_COVERAGE_*).
const IMPOSTOR_HEMI: u32 = 1u;
const IMPOSTOR_FULL: u32 = 2u;
// vat_core::format::impostor::PARALLAX_STEPS.
const IMPOSTOR_PARALLAX_STEPS: u32 = 2u;
// vat_core::format::impostor::SINGLE_VIEW_LEVEL.
const IMPOSTOR_SINGLE_VIEW_LEVEL: f32 = 2.0;

// What the card vertex stages output.
struct ImpostorOutput {
    @builtin(position) clip_position: vec4<f32>,
    // The card's image coordinates: u right, v down, [0, 1] over the bounding sphere's diameter.
    @location(0) card_uv: vec2<f32>,
    // World position on the card plane, metres.
    @location(1) world_position: vec3<f32>,
    // The same card point at the previous frame (the card moved with its record), metres.
    @location(2) previous_world_position: vec3<f32>,
    // The direction the card faces (towards the camera, or the sun in depth passes), object space.
    @location(3) @interpolate(flat) direction: vec3<f32>,
    // The three views blended (ViewGrid::blend) and their weights, the heaviest first.
    @location(4) @interpolate(flat) views: vec3<u32>,
    @location(5) @interpolate(flat) view_weights: vec3<f32>,
    // Texture layers: clip A's two images (x, y), clip B's two (z, w).
    @location(6) @interpolate(flat) layers: vec4<u32>,
    // Clip A's image blend, clip B's, clip B's fade weight, the switch fade.
    @location(7) @interpolate(flat) blends: vec4<f32>,
    // The drawn record (in `instances`).
    @location(8) @interpolate(flat) instance: u32,
    // Radius of the card's sphere in world space (metres) times its unit facing direction, world space.
    @location(9) @interpolate(flat) facing: vec3<f32>,
    // The heaviest view's plain reprojection of the card point (x, y: image coordinates) and the
    // point's depth in that view (z: p . d_k, radii); affine over the card, so interpolated.
    @location(10) main_view: vec3<f32>,
    // d . d_k of the heaviest view (the depth's scale).
    @location(11) @interpolate(flat) main_along: f32,
    // The card's mip level (log2 of the effective distance over the switch's, the tile's texels per
    // screen pixel across the sphere) when it is drawn from one view (at least
    // IMPOSTOR_SINGLE_VIEW_LEVEL), else -1.
    @location(12) @interpolate(flat) single_level: f32,
}

fn vat_impostor_hidden() -> ImpostorOutput {
    return ImpostorOutput(
        HIDDEN_POSITION, vec2<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0, 1.0, 0.0),
        vec3<u32>(0u), vec3<f32>(0.0), vec4<u32>(0u), vec4<f32>(0.0), 0u, vec3<f32>(0.0), vec3<f32>(0.0), 0.0,
        -1.0,
    );
}

// sign with sign(0) = 1, as the CPU reference's.
fn vat_impostor_sign(x: f32) -> f32 {
    return select(-1.0, 1.0, x >= 0.0);
}

// normalize, with the zero vector giving +Y (the CPU reference's normalize).
fn vat_impostor_normalize(v: vec3<f32>) -> vec3<f32> {
    let len = sqrt(dot(v, v));
    if len > 0.0 {
        return v / len;
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

// The octahedral square position of a direction (format::impostor::direction_to_square).
fn vat_impostor_square(direction: vec3<f32>) -> vec2<f32> {
    var d = direction;
    let hemi = asset.impostor_coverage == IMPOSTOR_HEMI;
    if hemi {
        d.y = max(d.y, 0.0);
    }
    let sum = abs(d.x) + abs(d.y) + abs(d.z);
    if !(sum > 0.0 && sum < 3.0e38) {
        return vec2<f32>(0.0);
    }
    let u = d.x / sum;
    let v = d.z / sum;
    if hemi {
        return clamp(vec2<f32>(u + v, u - v), vec2<f32>(-1.0), vec2<f32>(1.0));
    }
    if d.y >= 0.0 {
        return vec2<f32>(u, v);
    }
    return vec2<f32>((1.0 - abs(v)) * vat_impostor_sign(u), (1.0 - abs(u)) * vat_impostor_sign(v));
}

// The unit direction of octahedral square position `st` (format::impostor::square_to_direction).
fn vat_impostor_square_direction(st: vec2<f32>) -> vec3<f32> {
    let s = clamp(st.x, -1.0, 1.0);
    let t = clamp(st.y, -1.0, 1.0);
    var u: f32;
    var v: f32;
    var y: f32;
    if asset.impostor_coverage == IMPOSTOR_HEMI {
        u = (s + t) * 0.5;
        v = (s - t) * 0.5;
        y = 1.0 - abs(u) - abs(v);
    } else {
        y = 1.0 - abs(s) - abs(t);
        if y >= 0.0 {
            u = s;
            v = t;
        } else {
            u = (1.0 - abs(t)) * vat_impostor_sign(s);
            v = (1.0 - abs(s)) * vat_impostor_sign(t);
        }
    }
    return vat_impostor_normalize(vec3<f32>(u, y, v));
}

// The direction of view `index` (ViewGrid::view_direction).
fn vat_impostor_view_direction(index: u32) -> vec3<f32> {
    let n = asset.impostor_views_per_side;
    let k = index % (n * n);
    let last = f32(n - 1u);
    let s = 2.0 * f32(k % n) / last - 1.0;
    let t = 2.0 * f32(k / n) / last - 1.0;
    return vat_impostor_square_direction(vec2<f32>(s, t));
}

// Three views and their weights for a direction (ViewGrid::blend).
struct ImpostorBlend {
    views: vec3<u32>,
    weights: vec3<f32>,
}

fn vat_impostor_blend(direction: vec3<f32>) -> ImpostorBlend {
    let n = asset.impostor_views_per_side;
    let st = vat_impostor_square(direction);
    let last = f32(n - 1u);
    let gx = clamp((st.x + 1.0) * 0.5 * last, 0.0, last);
    let gy = clamp((st.y + 1.0) * 0.5 * last, 0.0, last);
    let cx = min(u32(floor(gx)), n - 2u);
    let cy = min(u32(floor(gy)), n - 2u);
    let fx = gx - f32(cx);
    let fy = gy - f32(cy);
    let base = cy * n + cx;
    if fx + fy <= 1.0 {
        return ImpostorBlend(vec3<u32>(base, base + 1u, base + n), vec3<f32>(1.0 - fx - fy, fx, fy));
    }
    return ImpostorBlend(vec3<u32>(base + n + 1u, base + n, base + 1u), vec3<f32>(fx + fy - 1.0, 1.0 - fx, 1.0 - fy));
}

// The right and up axes of the view camera looking along -d (format::impostor::view_axes).
struct ImpostorAxes {
    right: vec3<f32>,
    up: vec3<f32>,
}

fn vat_impostor_axes(d: vec3<f32>) -> ImpostorAxes {
    var up_ref = vec3<f32>(0.0, 1.0, 0.0);
    if abs(d.y) > 1.0 - 1e-4 {
        up_ref = vec3<f32>(0.0, 0.0, 1.0);
    }
    let right = vat_impostor_normalize(cross(up_ref, d));
    return ImpostorAxes(right, cross(d, right));
}

// Image coordinates of unit-sphere point `q` in the view of direction `dk` (project_to_view).
fn vat_impostor_project(q: vec3<f32>, axes: ImpostorAxes) -> vec2<f32> {
    return vec2<f32>(0.5 + dot(q, axes.right) * 0.5, 0.5 - dot(q, axes.up) * 0.5);
}

// The two images of a clip a phase shows (format::impostor::clip_images): (first, second) and the
// weight of the second.
struct ImpostorImages {
    first: u32,
    second: u32,
    t: f32,
}

fn vat_impostor_images(frames_in: u32, phase: f32, looping: bool) -> ImpostorImages {
    let frames = max(frames_in, 1u);
    var x = 0.0;
    if phase == phase && abs(phase) < 3.0e38 {
        x = clamp(phase, 0.0, 1.0) * f32(frames);
    }
    let k = min(u32(floor(x)), frames - 1u);
    let t = clamp(x - f32(k), 0.0, 1.0);
    if looping {
        return ImpostorImages(k, (k + 1u) % frames, t);
    }
    let next = min(k + 1u, frames - 1u);
    return ImpostorImages(k, next, select(t, 0.0, next == k));
}

// The layers and blend of one clip slot of a record at `time`.
fn vat_impostor_clip(clip_index: u32, wrap_code: u32, phase_offset: f32, time: f32, rate: f32) -> ImpostorImages {
    let clip = clips[min(clip_index, arrayLength(&clips) - 1u)];
    let looping = (clip.flags & CLIP_FLAG_LOOPING) != 0u;
    let wrap = vat_wrap(wrap_code, looping);
    let phase = vat_phase(phase_offset, time, rate, wrap);
    let images = vat_impostor_images(clip.impostor_frames, phase, wrap == WRAP_LOOP);
    return ImpostorImages(clip.impostor_first_layer + images.first, clip.impostor_first_layer + images.second, images.t);
}

// World position of a record's card centre (the tier's sphere centre placed by the record).
fn vat_impostor_centre(inst: InstanceRecord) -> vec3<f32> {
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let q = inst.scale * asset.impostor_centre;
    return inst.position + vec3<f32>(c * q.x + s * q.z, q.y, c * q.z - s * q.x);
}

// The rectangle of the card plane (facing d, axes `axes`) the asset's bounding box covers, in
// sphere radii from the tier's centre: (x min, x max, y min, y max), within [-1, 1]. The card is
// drawn over it alone (the rest of the sphere's square is empty whatever the view).
fn vat_impostor_rect(axes: ImpostorAxes) -> vec4<f32> {
    var rect = vec4<f32>(1.0, -1.0, 1.0, -1.0);
    for (var k = 0u; k < 8u; k++) {
        let corner = asset.bounds_min + asset.bounds_extent * vec3<f32>(f32(k & 1u), f32((k >> 1u) & 1u), f32((k >> 2u) & 1u));
        let q = (corner - asset.impostor_centre) / asset.impostor_radius;
        let x = dot(q, axes.right);
        let y = dot(q, axes.up);
        rect = vec4<f32>(min(rect.x, x), max(rect.y, x), min(rect.z, y), max(rect.w, y));
    }
    return clamp(rect, vec4<f32>(-1.0), vec4<f32>(1.0));
}

// The card of record `record` facing world direction `toward` (unit; towards the camera or the
// sun), corner `vertex` of the rectangle its bounding box covers (vat_impostor_rect: 0 top left,
// 1 top right, 2 bottom left, 3 bottom right), at `time`. The clip position is left for the caller.
fn vat_impostor_card(record: u32, inst: InstanceRecord, toward: vec3<f32>, vertex: u32, time: f32) -> ImpostorOutput {
    let d = vat_impostor_normalize(vat_object_direction(inst, toward));
    let axes = vat_impostor_axes(d);
    let rect = vat_impostor_rect(axes);
    var x = select(rect.x, rect.y, (vertex & 1u) != 0u);
    var y = select(rect.w, rect.z, (vertex & 2u) != 0u);
    // A card drawn from one view is small on screen: one triangle twice the rectangle's size
    // covers it (corners 0, 1, 2; corner 3 falls on 2, so the second triangle has no area),
    // halving the rasteriser's work per card.
    let level = vat_impostor_level_at(vat_effective_distance(inst));
    let single = vat_impostor_one_view(level);
    if single {
        let k = min(vertex, 2u);
        x = select(rect.x, 2.0 * rect.y - rect.x, k == 1u);
        y = select(rect.w, 2.0 * rect.z - rect.w, k == 2u);
    }
    let radius = inst.scale * asset.impostor_radius;
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let corner = x * axes.right + y * axes.up;
    let corner_world = vec3<f32>(c * corner.x + s * corner.z, corner.y, c * corner.z - s * corner.x);
    let world = vat_impostor_centre(inst) + radius * corner_world;
    var blend = vat_impostor_blend(d);
    // The heaviest view first (the single-view path reads it alone).
    if blend.weights.y > blend.weights.x && blend.weights.y >= blend.weights.z {
        blend = ImpostorBlend(blend.views.yxz, blend.weights.yxz);
    } else if blend.weights.z > blend.weights.x {
        blend = ImpostorBlend(blend.views.zyx, blend.weights.zyx);
    }
    let main_direction = vat_impostor_view_direction(blend.views.x);
    let main_uv = vat_impostor_project(corner, vat_impostor_axes(main_direction));
    let a = vat_impostor_clip(inst.clip_a, inst.variant_bits >> VARIANT_WRAP_A_SHIFT, inst.phase_offset_a, time, inst.rate_a);
    var b = a;
    let w = vat_instance_fade_weight(inst, time);
    if w > 0.0 {
        b = vat_impostor_clip(inst.clip_b & CLIP_INDEX_MASK, inst.variant_bits >> VARIANT_WRAP_B_SHIFT, inst.phase_offset_b, time, inst.rate_b);
    }
    let facing_world = vec3<f32>(c * d.x + s * d.z, d.y, c * d.z - s * d.x);
    return ImpostorOutput(
        vec4<f32>(0.0), vec2<f32>((x + 1.0) * 0.5, (1.0 - y) * 0.5), world, world, d,
        blend.views, blend.weights, vec4<u32>(a.first, a.second, b.first, b.second),
        vec4<f32>(a.t, b.t, w, vat_switch_fade(inst)), record, radius * facing_world,
        vec3<f32>(main_uv, dot(corner, main_direction)), dot(d, main_direction),
        select(-1.0, max(level, 0.0), single),
    );
}

// The mip level of a card at effective distance `effective` (vat_effective_distance): log2 of it
// over the switch's, the tile's texels per screen pixel across the sphere; 0 up to the switch.
// cs_cull sends the cards from IMPOSTOR_SINGLE_VIEW_LEVEL on to the far cards' draw by it.
fn vat_impostor_level_at(effective: f32) -> f32 {
    return log2(max(effective / max(frame.impostor_start, 1e-6), 1.0));
}

// Whether a card at mip level `level` is drawn from one view: fixed by the pipeline's
// IMPOSTOR_VIEWS (so the compiler drops the other path: a software rasteriser runs both sides of a
// branch), or by the level when the pipeline decides per card.
fn vat_impostor_one_view(level: f32) -> bool {
    if IMPOSTOR_VIEWS == IMPOSTOR_VIEWS_ONE {
        return true;
    }
    if IMPOSTOR_VIEWS == IMPOSTOR_VIEWS_THREE {
        return false;
    }
    return level >= IMPOSTOR_SINGLE_VIEW_LEVEL;
}

// Impostor cards, colour pass: the card facing the camera, from the switch on (vat_switch_fade > 0).
@vertex
fn vs_impostor(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> ImpostorOutput {
    let record = instance_list[instance_index];
    let inst = instances[record];
    if vat_is_hidden(inst) || asset.impostor_views_per_side < 2u || !(vat_switch_fade(inst) > 0.0) {
        return vat_impostor_hidden();
    }
    let toward = vat_impostor_normalize(frame.camera_position - vat_impostor_centre(inst));
    var out = vat_impostor_card(record, inst, toward, vertex, frame.time);
    out.clip_position = vat_jitter(frame.view_proj * vec4<f32>(out.world_position, 1.0));
    if MOTION_VECTORS {
        // The card point moves with its record's centre (its animation inside the card is not
        // tracked: far cards are a few pixels).
        let previous = vat_previous_instance(record);
        out.previous_world_position = out.world_position + vat_impostor_centre(previous) - vat_impostor_centre(inst);
    }
    return out;
}

// Impostor cards, depth passes: the card facing the sun, projected by light_view_proj, once the
// switch's fade is half way (the mesh casts before).
@vertex
fn vs_impostor_depth(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance_index: u32) -> ImpostorOutput {
    let record = instance_list[instance_index];
    let inst = instances[record];
    if vat_is_hidden(inst) || asset.impostor_views_per_side < 2u || vat_mesh_casts(inst) {
        return vat_impostor_hidden();
    }
    var out = vat_impostor_card(record, inst, vat_impostor_normalize(frame.sun_direction), vertex, frame.time);
    out.clip_position = frame.light_view_proj * vec4<f32>(out.world_position, 1.0);
    return out;
}

// The mip level of the card's images at this fragment: log2 of the texels per pixel, clamped to the
// stored levels. Call in uniform control flow (derivatives).
fn vat_impostor_level(card_uv: vec2<f32>) -> f32 {
    let tile = f32(asset.impostor_tile_size);
    let footprint = max(length(dpdx(card_uv)), length(dpdy(card_uv))) * tile;
    return clamp(log2(max(footprint, 1e-8)), 0.0, f32(max(asset.impostor_mip_levels, 1u) - 1u));
}

// Texture coordinates of image coordinates `uv` of view `view`, kept half a texel inside the view's
// tile at mip level `level` (so filtering never reads a neighbour's tile).
fn vat_impostor_coord(view: u32, uv: vec2<f32>, level: f32) -> vec2<f32> {
    let n = asset.impostor_views_per_side;
    let texels = max(f32(asset.impostor_tile_size >> u32(ceil(level))), 1.0);
    let inner = clamp(uv, vec2<f32>(0.5 / texels), vec2<f32>(1.0 - 0.5 / texels));
    return (vec2<f32>(f32(view % n), f32(view / n)) + inner) / f32(n);
}

// What the tier shows at a card fragment: linear colour (the palette or the material's, tinted)
// with coverage in alpha, the object-space normal, and how far in front of the card plane the
// surface is (radii, towards the facing direction).
// `material` is the record in `materials` the surface is lit with (the instance's variant applied)
// for an asset with materials, else the palette id (unused: the palette is in `color`).
struct ImpostorSurface {
    color: vec4<f32>,
    normal: vec3<f32>,
    depth: f32,
    material: u32,
}

// The first colour layer of the colour set record `inst` shows (AssetConstants): its material
// variant's set when the tier has one (variant v in 1..=impostor_material_variants), else the
// authored materials' (layer 0 on).
fn vat_impostor_color_set(inst: InstanceRecord) -> u32 {
    let v = inst.variant_bits & VARIANT_MATERIAL_MASK;
    return select(0u, v * asset.impostor_layers, v <= asset.impostor_material_variants);
}

// One view's sample of a card fragment: colour (linear, the palette or the material's, tinted)
// with coverage, and the normal-depth texel, at texture coordinates `coord` of images `first` and
// `second` blended by `t` (only `first` read when `t` is 0), at mip level `level`.
struct ImpostorTexel {
    color: vec4<f32>,
    normal_depth: vec4<f32>,
    // The material id of the nearest texel of the nearer image (ids do not filter).
    material: u32,
}

// The record in `materials` of material id `id` for record `inst` (its material variant applied,
// as vat_lit_output picks it); 0 for an asset without materials.
fn vat_impostor_material_record(inst: InstanceRecord, id: u32) -> u32 {
    if !vat_has_materials() {
        return 0u;
    }
    return vat_material_record(inst.variant_bits, id);
}

fn vat_impostor_texel(inst: InstanceRecord, coord: vec2<f32>, first: u32, second: u32, t: f32, level: f32) -> ImpostorTexel {
    let colors = vat_impostor_color_set(inst);
    var c = textureSampleLevel(impostor_color, material_sampler, coord, colors + first, level);
    var nd = textureSampleLevel(impostor_normal_depth, material_sampler, coord, first, level);
    if t > 0.0 {
        c = mix(c, textureSampleLevel(impostor_color, material_sampler, coord, colors + second, level), t);
        nd = mix(nd, textureSampleLevel(impostor_normal_depth, material_sampler, coord, second, level), t);
    }
    // The material id of the nearest texel of the nearer image (ids do not filter): the palette's
    // colour, or the material the card is lit with.
    let l = u32(round(level));
    let side = max(asset.impostor_views_per_side * (asset.impostor_tile_size >> l), 1u);
    let texel = min(vec2<u32>(coord * f32(side)), vec2<u32>(side - 1u));
    let nearer = select(first, second, t >= 0.5);
    let id = u32(round(textureLoad(impostor_normal_depth, texel, nearer, l).a * 255.0));
    var base = c.rgb * inst.tint;
    if !vat_has_materials() {
        base = vat_material_color(id, inst.variant_bits, inst.tint) * c.rgb;
    }
    return ImpostorTexel(vec4<f32>(base, c.a), nd, id);
}

// The card fragment `in` at mip level `level`, clip slot B taken where `use_b`: below
// IMPOSTOR_SINGLE_VIEW_LEVEL, for each of the three views, the depth correction of
// format::impostor::card_samples (stored depths read at level 0 from the nearer image), then its
// two images blended; the views blended by weight times coverage. From that level on, the view of
// the largest weight alone at the plain reprojection, from the nearer image.
fn vat_impostor_surface(in: ImpostorOutput, level: f32, use_b: bool) -> ImpostorSurface {
    let inst = instances[in.instance];
    var first = in.layers.x;
    var second = in.layers.y;
    var t = in.blends.x;
    if use_b {
        first = in.layers.z;
        second = in.layers.w;
        t = in.blends.y;
    }
    let nearer = select(first, second, t >= 0.5);
    // The pipeline's choice again (IMPOSTOR_VIEWS), so a fixed pipeline keeps one path.
    if vat_impostor_one_view(select(0.0, IMPOSTOR_SINGLE_VIEW_LEVEL, in.single_level >= 0.0)) {
        // One view: the nearest texel of the card's mip level, two reads (the material id in the
        // second); nothing outside the view's image.
        if any(in.main_view.xy < vec2<f32>(0.0)) || any(in.main_view.xy > vec2<f32>(1.0)) {
            return ImpostorSurface(vec4<f32>(0.0), vec3<f32>(0.0, 1.0, 0.0), 0.0, 0u);
        }
        let l = min(u32(round(in.single_level)), max(asset.impostor_mip_levels, 1u) - 1u);
        let tile = max(asset.impostor_tile_size >> l, 1u);
        let n = asset.impostor_views_per_side;
        let view = in.views.x;
        let inner = min(vec2<u32>(clamp(in.main_view.xy, vec2<f32>(0.0), vec2<f32>(1.0)) * f32(tile)), vec2<u32>(tile - 1u));
        let texel = vec2<u32>(view % n, view / n) * tile + inner;
        let c = textureLoad(impostor_color, texel, vat_impostor_color_set(inst) + nearer, l);
        let nd = textureLoad(impostor_normal_depth, texel, nearer, l);
        let id = u32(round(nd.a * 255.0));
        var base = c.rgb * inst.tint;
        if !vat_has_materials() {
            base = vat_material_color(id, inst.variant_bits, inst.tint) * c.rgb;
        }
        let depth = (nd.b * 2.0 - 1.0 - in.main_view.z) / max(in.main_along, 0.05);
        let normal = vat_oct_decode(nd.rg * 2.0 - 1.0);
        return ImpostorSurface(vec4<f32>(base, c.a), normal, clamp(depth, -1.0, 1.0), vat_impostor_material_record(inst, id));
    }
    let d = in.direction;
    let axes = vat_impostor_axes(d);
    let p = (2.0 * in.card_uv.x - 1.0) * axes.right + (1.0 - 2.0 * in.card_uv.y) * axes.up;
    var color = vec3<f32>(0.0);
    var alpha = 0.0;
    var normal = vec3<f32>(0.0);
    var depth = 0.0;
    // The material of the view that covers the fragment most (weight times coverage).
    var material = 0u;
    var most = 0.0;
    for (var k = 0u; k < 3u; k++) {
        let w = in.view_weights[k];
        if !(w > 0.0) {
            continue;
        }
        let view = in.views[k];
        let dk = vat_impostor_view_direction(view);
        let view_axes = vat_impostor_axes(dk);
        let along = dot(d, dk);
        var s = 0.0;
        if along > 0.05 {
            for (var step = 0u; step < IMPOSTOR_PARALLAX_STEPS; step++) {
                let uv = vat_impostor_project(p + s * d, view_axes);
                let stored = textureSampleLevel(impostor_normal_depth, material_sampler, vat_impostor_coord(view, uv, 0.0), nearer, 0.0).b * 2.0 - 1.0;
                s = clamp((stored - dot(p, dk)) / along, -1.0, 1.0);
            }
        }
        let coord = vat_impostor_coord(view, vat_impostor_project(p + s * d, view_axes), level);
        let texel = vat_impostor_texel(inst, coord, first, second, t, level);
        let nd = texel.normal_depth;
        let a = w * texel.color.a;
        if a > most {
            most = a;
            material = texel.material;
        }
        color += a * texel.color.rgb;
        alpha += a;
        normal += a * vat_oct_decode(nd.rg * 2.0 - 1.0);
        depth += a * (nd.b * 2.0 - 1.0 - dot(p, dk)) / max(along, 0.05);
    }
    if alpha > 0.0 {
        color /= alpha;
        depth /= alpha;
    }
    let record = vat_impostor_material_record(inst, material);
    return ImpostorSurface(vec4<f32>(color, alpha), vat_normalize(normal), clamp(depth, -1.0, 1.0), record);
}

// Whether the pixel at `p` shows clip B of a record fading to it by `weight` (dithered, with a
// pattern turned from the switch's so the two choices do not line up).
fn vat_impostor_uses_b(p: vec2<f32>, weight: f32) -> bool {
    return weight > 0.0 && vat_switch_dither(vec2<f32>(p.y + 2.0, p.x + 1.0)) < weight;
}

// The lit VertexOutput of a card fragment (vat_shade's input): the surface point in front of the
// card, the normal turned by the record's yaw, the colour.
fn vat_impostor_lit(in: ImpostorOutput, surface: ImpostorSurface) -> VertexOutput {
    let inst = instances[in.instance];
    let c = cos(inst.yaw);
    let s = sin(inst.yaw);
    let n = surface.normal;
    let world_normal = vec3<f32>(c * n.x + s * n.z, n.y, c * n.z - s * n.x);
    let offset = surface.depth * in.facing;
    return VertexOutput(
        in.clip_position, in.world_position + offset, world_normal, vec4<f32>(surface.color.rgb, 1.0),
        vec4<f32>(0.0), vec2<f32>(0.0), surface.material, in.instance, in.previous_world_position + offset,
    );
}

// The colour of a lit card fragment: an asset with materials in its material's light model (the
// record's metalness, roughness and emission; the images hold the base colour), as fs_lit_material
// lights the mesh (no texture of the material is sampled: the card has no texture coordinates);
// the palette's in vat_shade's.
fn vat_shade_impostor(lit: VertexOutput) -> vec4<f32> {
    if !vat_has_materials() {
        return vat_shade(lit);
    }
    let m = vat_fragment_material(lit);
    let n = vat_normalize(lit.world_normal);
    return vec4<f32>(vat_light_material(lit.color.rgb, m.metallic, m.roughness, n, lit.world_position) + m.emissive_factor, 1.0);
}

// The card fragment of the colour and prepass entry points: discarded where the mesh keeps the
// pixel (switch dither >= fade) or the coverage is under one half.
fn vat_impostor_fragment(in: ImpostorOutput, level: f32) -> VertexOutput {
    if vat_switch_dither(in.clip_position.xy) >= in.blends.w {
        discard;
    }
    let surface = vat_impostor_surface(in, level, vat_impostor_uses_b(in.clip_position.xy, in.blends.z));
    if surface.color.a < 0.5 {
        discard;
    }
    return vat_impostor_lit(in, surface);
}

// Impostor cards, colour pass: lit like the mesh (vat_shade: the light model, the sun's shadow).
@fragment
fn fs_impostor(in: ImpostorOutput) -> @location(0) vec4<f32> {
    let level = vat_impostor_level(in.card_uv);
    return vat_shade_impostor(vat_impostor_fragment(in, level));
}


// fs_impostor with the motion target.
@fragment
fn fs_impostor_motion(in: ImpostorOutput) -> LitMotionOutput {
    let level = vat_impostor_level(in.card_uv);
    let lit = vat_impostor_fragment(in, level);
    let color = vat_shade_impostor(lit);
    return LitMotionOutput(color, vec4<f32>(vat_motion_vector(lit), 0.0, 0.0));
}

// Impostor cards in depth passes and depth-only prepasses: the coverage test alone.
@fragment
fn fs_impostor_depth(in: ImpostorOutput) {
    let level = vat_impostor_level(in.card_uv);
    if vat_impostor_surface(in, level, vat_impostor_uses_b(in.clip_position.xy, in.blends.z)).color.a < 0.5 {
        discard;
    }
}

// Impostor cards, prepass with a normal target alone.
@fragment
fn fs_impostor_prepass(in: ImpostorOutput) -> @location(0) vec4<f32> {
    let level = vat_impostor_level(in.card_uv);
    return vat_encode_normal(vat_impostor_fragment(in, level).world_normal);
}

// Impostor cards, prepass with normal and motion targets.
@fragment
fn fs_impostor_prepass_motion(in: ImpostorOutput) -> PrepassOutput {
    let level = vat_impostor_level(in.card_uv);
    let lit = vat_impostor_fragment(in, level);
    return PrepassOutput(vat_encode_normal(lit.world_normal), vec4<f32>(vat_motion_vector(lit), 0.0, 0.0));
}

// Impostor cards, prepass with a motion target alone.
@fragment
fn fs_impostor_prepass_motion_only(in: ImpostorOutput) -> @location(1) vec4<f32> {
    let level = vat_impostor_level(in.card_uv);
    return vec4<f32>(vat_motion_vector(vat_impostor_fragment(in, level)), 0.0, 0.0);
}
