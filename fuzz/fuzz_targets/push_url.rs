//! cargo-fuzz target `push_url`: see `taskwire_fuzz_targets::push::url`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::push::url(data));
