//! cargo-fuzz target `a2a_jsonrpc`: see `taskwire_fuzz_targets::a2a::jsonrpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::a2a::jsonrpc(data));
