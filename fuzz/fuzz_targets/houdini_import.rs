//! A SideFX Labs VAT 3 soft-body bake (`_data.json`, position EXR or PNG, `_mesh.glb`;
//! length-prefixed) through the importer's checks and decoder, then (when it decodes) a small bake,
//! its verification and a reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::import_houdini_parts(data);
});
