//! The client's SSE framing: [`taskwire_client::http::parse_sse`] (the parser of
//! every client stream, [`taskwire_client::sse::SseParser`]) and what the A2A and
//! AG-UI clients make of each event.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use taskwire_client::a2a::pb;
use taskwire_client::sse::SseParser;
use taskwire_client::SseEvent;

/// The events of `chunks` fed one read at a time to the parser the client's
/// streams use, up to the first error.
fn parse_chunked(chunks: Vec<Bytes>) -> Result<Vec<SseEvent>, String> {
    let mut parser = SseParser::default();
    let mut out = Vec::new();
    for c in chunks {
        parser
            .feed(&c, &mut out)
            .map_err(|e| format!("over {} bytes", e.limit))?;
    }
    Ok(out)
}

/// `data` cut into pieces whose sizes cycle through `sizes`.
fn cut(data: &[u8], sizes: &[usize]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        out.push(Bytes::copy_from_slice(&rest[..n]));
        rest = &rest[n..];
        i += 1;
    }
    out
}

/// What the A2A client makes of one event's data: a JSON-RPC response whose
/// result is a `StreamResponse`.
fn a2a_frame(data: &str) {
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        return;
    };
    if let Some(r) = v.get("result") {
        if let Ok(resp) = pb::StreamResponse::deserialize(r) {
            // The client's JSON view of the same message must encode.
            serde_json::to_value(&resp).expect("a decoded StreamResponse encodes");
        }
    }
}

/// One input of `client_sse`: the input as an SSE response body. Parsed whole with
/// [`taskwire_client::http::parse_sse`]; whenever that succeeds, the same bytes cut
/// into one-byte pieces and into pieces of sizes taken from the input must give
/// exactly the same events (a `\r\n`, a UTF-8 sequence or a BOM split across reads
/// changes nothing). Each event's data then goes through what the A2A client
/// (JSON-RPC response → `StreamResponse`) and the AG-UI server's own SSE helper
/// do with it.
pub fn client(data: &[u8]) {
    let whole = futures::executor::block_on(taskwire_client::http::parse_sse(
        Bytes::copy_from_slice(data),
    ));
    let Ok(events) = whole else {
        return;
    };
    let bytewise = parse_chunked(cut(data, &[1]));
    assert_eq!(
        bytewise.as_ref(),
        Ok(&events),
        "one-byte reads parse differently"
    );
    let sizes: Vec<usize> = data
        .iter()
        .take(8)
        .map(|b| usize::from(b % 13) + 1)
        .collect();
    if !sizes.is_empty() {
        let split = parse_chunked(cut(data, &sizes));
        assert_eq!(
            split.as_ref(),
            Ok(&events),
            "reads of sizes {sizes:?} parse differently"
        );
    }
    for ev in &events {
        if !ev.data.trim().is_empty() {
            a2a_frame(&ev.data);
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = taskwire_agui::sse::decode(text);
    }
}
