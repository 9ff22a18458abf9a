//! `.glb` / `.gltf` bytes through the importer, then (when they import) a small bake, its
//! verification and a reload of the written `.vat` bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::import_and_bake(data);
});
