//! cargo-fuzz target `client_sse`: see `taskwire_fuzz_targets::sse::client`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::sse::client(data));
