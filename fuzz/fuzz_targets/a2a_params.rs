//! cargo-fuzz target `a2a_params`: see `taskwire_fuzz_targets::a2a::params`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::a2a::params(data));
