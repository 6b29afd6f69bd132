//! Regressions from fuzzing the CAS input parsing (docs/fuzzing.md).
//!
//! F6: part metadata is the caller's, but `part_to_cas` reads the keys
//! `taskwire.sizeBytes` and `taskwire.filename` in it as taskwire's own: a text
//! part sent with `{"taskwire.sizeBytes": 3}` comes back without that key and no
//! loss is reported, and a file part sent with it comes back with a `sizeBytes`
//! it never had. Keys under `taskwire.` are reserved: an input that uses them is
//! refused rather than silently rewritten.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use taskwire_vocab::cas::{part_from_cas, part_to_cas, ContentPart};

fn part(json: &str) -> ContentPart {
    serde_json::from_str(json).expect("a ContentPart")
}

#[test]
fn a_part_with_ordinary_metadata_comes_back_unchanged() {
    for json in [
        r#"{"mimeType":"text/plain","text":"x","metadata":{"k":1,"taskwire":"not reserved"}}"#,
        r#"{"mimeType":"image/png","file":"https://example.com/a.png","sizeBytes":3,"metadata":{"k":"v"}}"#,
    ] {
        let p = part(json);
        let (back, loss) = part_to_cas(&part_from_cas(0, &p).expect("accepted"));
        assert_eq!(back, p, "{json}");
        assert_eq!(loss, None, "{json}");
    }
}

#[test]
fn reserved_metadata_keys_are_refused() {
    for json in [
        r#"{"text":"x","metadata":{"taskwire.sizeBytes":3}}"#,
        r#"{"file":"f","mimeType":"a/b","metadata":{"taskwire.sizeBytes":3}}"#,
        r#"{"file":"f","mimeType":"a/b","metadata":{"taskwire.filename":"x.bin"}}"#,
    ] {
        let p = part(json);
        let r = part_from_cas(0, &p);
        assert!(r.is_err(), "{json} was accepted as {r:?}");
    }
}
