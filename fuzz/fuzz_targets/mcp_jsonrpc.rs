//! cargo-fuzz target `mcp_jsonrpc`: see `taskwire_fuzz_targets::mcp::jsonrpc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taskwire_fuzz_targets::mcp::jsonrpc(data));
