//! Regressions from fuzzing the client's SSE framing (docs/fuzzing.md).
//!
//! The fuzz target `client_sse` checks that how a body is cut into reads never
//! changes the events of a stream (the first test below pins the cases the
//! fuzzer exercised most). Finding F2 was that the crate the client then used
//! (`sse-stream`) turned several lines the HTML standard's parsing model accepts
//! into stream errors, ending an A2A stream and dropping complete events that
//! arrived in the same read; the client now parses per the standard
//! (`taskwire_client::sse`), and the tests below hold it to it.

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
fn an_unknown_field_is_ignored() {
    assert_eq!(data_of("data: a\n\nfoo: x\ndata: b\n\n"), ["a", "b"]);
}

#[test]
fn a_line_without_a_colon_is_a_field_with_an_empty_value() {
    // `data` alone appends an empty line to the data buffer.
    assert_eq!(data_of("data: a\ndata\n\n"), ["a\n"]);
    // Any other name alone is an unknown field: ignored.
    assert_eq!(data_of("data: a\n\nnocolon\n\ndata: b\n\n"), ["a", "b"]);
}

#[test]
fn a_repeated_id_or_event_line_keeps_the_last() {
    let evs = parse("id: 1\nid: 2\nevent: a\nevent: b\ndata: x\n\n").unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].id.as_deref(), Some("2"));
    assert_eq!(evs[0].event.as_deref(), Some("b"));
}

#[test]
fn a_retry_that_is_not_digits_is_ignored() {
    let evs = parse("retry: soon\ndata: x\n\n").unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].retry, None);
    let evs = parse("retry: +5\ndata: x\n\n").unwrap();
    assert_eq!(evs[0].retry, None);
}
