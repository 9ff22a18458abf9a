//! One sprite particle frame (CSV text, or PLY when it starts with `ply`) through its reader and a
//! small looping bake, verification and reload.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = vat_procgen::fuzzing::sprite_frame_bake(data);
});
