//! The built-in palette: the albedo an asset without materials is shaded with, per material id and
//! instance variant (`vat_material_color` of [`crate::gpu::SHADER_SOURCE`], the same tables). The
//! impostor bake measures an asset's cards in these colours, as the run time shows them.

use crate::instance::VARIANT_MATERIAL_MASK;

/// Shirt colours, linear RGB, by `variant & 7` (material 1; material 4 takes `(variant + 3) & 7`).
pub const PALETTE_SHIRT: [[f32; 3]; 8] = [
    [0.70, 0.10, 0.08],
    [0.08, 0.25, 0.70],
    [0.10, 0.50, 0.15],
    [0.80, 0.60, 0.05],
    [0.45, 0.12, 0.55],
    [0.85, 0.85, 0.82],
    [0.05, 0.45, 0.50],
    [0.80, 0.30, 0.05],
];

/// Trouser colours, linear RGB, by `(variant >> 3) & 3` (material 2).
pub const PALETTE_PANTS: [[f32; 3]; 4] =
    [[0.05, 0.07, 0.20], [0.25, 0.20, 0.12], [0.06, 0.06, 0.06], [0.30, 0.30, 0.28]];

/// Skin colours, linear RGB, by `(variant >> 5) & 3` (material 0).
pub const PALETTE_SKIN: [[f32; 3]; 4] =
    [[0.80, 0.55, 0.42], [0.55, 0.35, 0.22], [0.30, 0.17, 0.10], [0.92, 0.70, 0.58]];

/// Shoe colour, linear RGB (material 3).
pub const PALETTE_SHOES: [f32; 3] = [0.08, 0.06, 0.05];

/// Colour of any other material id, linear RGB, times the tint.
pub const PALETTE_OTHER: [f32; 3] = [0.6, 0.6, 0.6];

/// The palette's albedo (linear RGB) of material `material` for an instance with variant bits
/// `variant_bits` (only [`VARIANT_MATERIAL_MASK`] is read) and tint `tint` (linear RGB
/// multipliers; skin, trousers and shoes are not tinted).
pub fn palette_color(material: u32, variant_bits: u32, tint: [f32; 3]) -> [f32; 3] {
    let v = (variant_bits & VARIANT_MATERIAL_MASK) as usize;
    let tinted = |c: [f32; 3]| [c[0] * tint[0], c[1] * tint[1], c[2] * tint[2]];
    match material {
        0 => PALETTE_SKIN[(v >> 5) & 3],
        1 => tinted(PALETTE_SHIRT[v & 7]),
        2 => PALETTE_PANTS[(v >> 3) & 3],
        3 => PALETTE_SHOES,
        4 => tinted(PALETTE_SHIRT[(v + 3) & 7]),
        _ => tinted(PALETTE_OTHER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `return vec3<f32>(r, g, b);` values of WGSL function `name`, in source order.
    fn shader_values(name: &str) -> Vec<[f32; 3]> {
        let src = crate::gpu::SHADER_SOURCE;
        let start = src.find(&format!("fn {name}(")).unwrap_or_else(|| panic!("no {name} in the shader"));
        let body = &src[start..];
        let body = &body[..body.find("\n}\n").expect("function end")];
        body.split("vec3<f32>(")
            .skip(1) // the text before the first value
            .map(|v| {
                let inner = &v[..v.find(')').unwrap()];
                let n: Vec<f32> = inner.split(',').map(|x| x.trim().parse().unwrap()).collect();
                [n[0], n[1], n[2]]
            })
            .collect()
    }

    #[test]
    fn the_tables_are_the_shaders() {
        assert_eq!(shader_values("vat_palette_shirt"), PALETTE_SHIRT);
        assert_eq!(shader_values("vat_palette_pants"), PALETTE_PANTS);
        assert_eq!(shader_values("vat_palette_skin"), PALETTE_SKIN);
        let material = shader_values("vat_material_color");
        assert_eq!(material, [PALETTE_SHOES, PALETTE_OTHER]);
    }

    #[test]
    fn variants_pick_and_tint_as_the_shader_does() {
        let tint = [0.5, 1.0, 2.0];
        let v = 0b110_1011; // shirt 3, trousers 1, skin 3
        assert_eq!(palette_color(1, v, tint), [0.40, 0.60, 0.10]);
        assert_eq!(palette_color(4, v, tint), [0.025, 0.45, 1.0]);
        assert_eq!(palette_color(2, v, tint), PALETTE_PANTS[1]);
        assert_eq!(palette_color(0, v, tint), PALETTE_SKIN[3]);
        assert_eq!(palette_color(3, v | 0xFF00, tint), PALETTE_SHOES);
        assert_eq!(palette_color(9, v, tint), [0.3, 0.6, 1.2]);
    }
}
