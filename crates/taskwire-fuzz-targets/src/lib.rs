//! What one fuzz input does, for every parser taskwire still owns.
//!
//! Each public function below takes the bytes of one input, runs them through the
//! same public entry points a request (or, for the client, a response) reaches, and
//! panics only when an invariant breaks: no input may make a parser panic, and
//! where an invariant exists (decode → encode → decode is stable, two paths that
//! must agree do agree) it is asserted. The cargo-fuzz targets in `fuzz/` call these
//! functions and nothing else; `tests/corpus.rs` replays every committed corpus
//! file and regression input through them under plain `cargo test`.
//!
//! | target | what it feeds |
//! |---|---|
//! | [`a2a::jsonrpc`] | `taskwire_a2a::jsonrpc::serve`: envelope, batches, params, SSE answers; single vs batch agree |
//! | [`a2a::params`] | `taskwire_a2a::protojson` decoders of every request message; fast vs general path agree, decode → encode → decode stable |
//! | [`mcp::jsonrpc`] | `taskwire_mcp::wire::parse` (parse → serialize → parse stable) and `POST /mcp` (2026-07-28 and 2025-11-25 sessions) |
//! | [`sse::client`] | the client's SSE framing (`taskwire_client::http::parse_sse`, `taskwire_client::sse`): chunking never changes the events |
//! | [`agui::proto`] | AG-UI protobuf framing: server `decode_frames`, client `decode_proto_body`/`event_json`; protobuf and SSE forms agree |
//! | [`agui::run`] | `POST /agui` (`RunAgentInput`): the answer stream passes the AG-UI verifier |
//! | [`cas::input`] | CAS create/input bodies (`/cas` routes) and `taskwire_vocab::cas` ContentPart parsing and its round trip |
//! | [`push::url`] | `taskwire_a2a::push::check_url` (without DNS): a refused address is never accepted |
//!
//! Input formats (see `docs/fuzzing.md`): HTTP targets take either a bare body, or
//! `@` + a head of `name: value` lines (optionally a first `METHOD /path` line and a
//! `?query` line) + an empty line + the body. The text `$TASK` anywhere is replaced
//! by the id of a task just created for the caller, so inputs can name a real task.

use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod a2a;
pub mod agui;
pub mod cas;
mod env;
pub mod mcp;
pub mod push;
pub mod sse;

/// One fuzz target: its name (the directory of its corpus) and what one input does.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name its cargo-fuzz binary and corpus directory have.
pub const TARGETS: &[Target] = &[
    ("a2a_jsonrpc", a2a::jsonrpc),
    ("a2a_params", a2a::params),
    ("mcp_jsonrpc", mcp::jsonrpc),
    ("client_sse", sse::client),
    ("agui_proto", agui::proto),
    ("agui_run", agui::run),
    ("cas_input", cas::input),
    ("push_url", push::url),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Runs one input through a target and returns the panic message, if it panicked.
pub fn replay(f: fn(&[u8]), data: &[u8]) -> Option<String> {
    catch_unwind(AssertUnwindSafe(|| f(data))).err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic with a non-string payload".into())
    })
}
