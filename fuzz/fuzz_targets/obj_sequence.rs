//! OBJ text through the soft-body sequence reader (tobj) and a small bake, verification and reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::obj_sequence_bake(data);
});
