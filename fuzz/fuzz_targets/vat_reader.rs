//! `.vat` bytes through the validating reader and, when valid, the loader's reads.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::load_vat(data);
});
