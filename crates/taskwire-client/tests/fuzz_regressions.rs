//! Regressions from fuzzing the client's SSE framing (docs/fuzzing.md).
//!
//! The client reads every stream with the `sse-stream` crate. The fuzz target
//! `client_sse` checks that how a body is cut into reads never changes the events
//! of a stream that parses; that holds (the first tests below pin the cases the
//! fuzzer exercised most). What does not hold is the WHATWG parsing model the
//! HTML standard gives for `text/event-stream` (finding F2): `sse-stream` turns
//! several lines a conforming parser must accept into stream errors, and an A2A
//! stream ends on such an error (a `Decode` error is not retried), dropping
//! complete events that arrived in the same read. Those tests are ignored until
//! the client parses per the standard; run them with `cargo test -- --ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use bytes::Bytes;
use taskwire_client::http::parse_sse;
use taskwire_client::SseEvent;

fn parse(body: &str) -> Result<Vec<SseEvent>, String> {
    futures::executor::block_on(parse_sse(Bytes::from(body.to_string()))).map_err(|e| e.to_string())
}

fn data_of(body: &str) -> Vec<String> {
    parse(body)
        .unwrap_or_else(|e| panic!("{body:?}: {e}"))
        .into_iter()
        .map(|e| e.data)
        .collect()
}

#[test]
fn line_endings_bom_and_comments_parse_as_the_standard_says() {
    assert_eq!(
        data_of("data: a\r\n\r\ndata: b\rdata: c\r\r"),
        ["a", "b\nc"]
    );
    assert_eq!(
        data_of("\u{feff}: keep-alive\n\ndata:x\ndata: y\n\n"),
        ["x\ny"]
    );
    let evs = parse("event: status\nid: 7\nretry: 1500\ndata: {}\n\n").unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].event.as_deref(), Some("status"));
    assert_eq!(evs[0].id.as_deref(), Some("7"));
    assert_eq!(evs[0].retry, Some(1500));
    // An event without the blank line that ends it is not dispatched.
    assert_eq!(data_of("data: a\n\ndata: cut"), ["a"]);
}

#[test]
#[ignore = "finding F2 (docs/fuzzing.md): sse-stream refuses unknown fields; the standard ignores them"]
fn an_unknown_field_is_ignored() {
    assert_eq!(data_of("data: a\n\nfoo: x\ndata: b\n\n"), ["a", "b"]);
}

#[test]
#[ignore = "finding F2 (docs/fuzzing.md): sse-stream refuses a line without a colon; the standard reads it as a field with an empty value"]
fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
    // `data` alone appends an empty line to the data buffer.
    assert_eq!(data_of("data: a\ndata\n\n"), ["a\n"]);
    // Any other name alone is an unknown field: ignored.
    assert_eq!(data_of("data: a\n\nnocolon\n\ndata: b\n\n"), ["a", "b"]);
}

#[test]
#[ignore = "finding F2 (docs/fuzzing.md): sse-stream refuses a repeated id or event line; the standard keeps the last"]
fn a_repeated_id_or_event_line_keeps_the_last() {
    let evs = parse("id: 1\nid: 2\nevent: a\nevent: b\ndata: x\n\n").unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].id.as_deref(), Some("2"));
    assert_eq!(evs[0].event.as_deref(), Some("b"));
}

#[test]
#[ignore = "finding F2 (docs/fuzzing.md): sse-stream fails on a retry that is not digits (and accepts `+5`); the standard ignores anything but ASCII digits"]
fn a_retry_that_is_not_digits_is_ignored() {
    let evs = parse("retry: soon\ndata: x\n\n").unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].retry, None);
    let evs = parse("retry: +5\ndata: x\n\n").unwrap();
    assert_eq!(evs[0].retry, None);
}
