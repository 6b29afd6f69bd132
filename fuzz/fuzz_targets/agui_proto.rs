//! cargo-fuzz target `agui_proto`: see `taskwire_fuzz_targets::agui::proto`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::agui::proto(data));
