//! cargo-fuzz target `cas_input`: see `taskwire_fuzz_targets::cas::input`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::cas::input(data));
