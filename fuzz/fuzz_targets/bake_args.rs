//! `vat bake` arguments (as text) through option parsing and a small bake of the procedural
//! humanoid, its verification and a reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::bake_from_args(data);
});
