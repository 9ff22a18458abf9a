//! A SideFX Labs VAT 3 dynamic-mesh bake (`_data.json`, lookup table, position and rotation
//! textures, EXR or PNG, and `_mesh.glb`; length-prefixed) through the importer's checks and
//! decoder, then (when it decodes) a fluid bake, its verification and a reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::import_houdini_dynamic_parts(data);
});
