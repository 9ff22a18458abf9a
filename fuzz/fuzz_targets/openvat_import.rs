//! An OpenVAT bake (sidecar JSON, EXR or PNG texture, lookup glb; length-prefixed) through the
//! importer's checks and decoder, then (when it decodes) a small bake, its verification and a reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::import_openvat_parts(data);
});
