//! cargo-fuzz target `agui_run`: see `taskwire_fuzz_targets::agui::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::agui::run(data));
