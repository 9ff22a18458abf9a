//! A SideFX Labs VAT 3 particle bake (`_data.json`, position and colour textures, EXR or PNG, and
//! `_mesh.glb`; length-prefixed) through the importer's checks and decoder, then (when it decodes) a
//! sprite bake, its verification and a reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::import_houdini_particle_parts(data);
});
