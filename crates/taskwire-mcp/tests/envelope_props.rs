//! Property tests of the JSON-RPC envelope parser: it never panics, whatever the
//! bytes, and every well-formed request round-trips.

use proptest::prelude::*;
use serde_json::json;
use taskwire_mcp::wire::{parse, Incoming};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn parse_never_panics_on_json_shapes(
        jsonrpc in prop_oneof![Just(json!("2.0")), Just(json!("1.0")), Just(json!(2)), Just(json!(null))],
        id in prop_oneof![Just(None), Just(Some(json!(1))), Just(Some(json!("a"))), Just(Some(json!(null))), Just(Some(json!({})))],
        method in prop_oneof![Just(None), Just(Some(json!("tools/list"))), Just(Some(json!(3)))],
        params in prop_oneof![Just(None), Just(Some(json!({}))), Just(Some(json!([1]))), Just(Some(json!("x")))],
        result in prop_oneof![Just(None), Just(Some(json!({})))],
    ) {
        let mut m = serde_json::Map::new();
        m.insert("jsonrpc".into(), jsonrpc);
        if let Some(i) = id { m.insert("id".into(), i); }
        if let Some(x) = method { m.insert("method".into(), x); }
        if let Some(p) = params { m.insert("params".into(), p); }
        if let Some(r) = result { m.insert("result".into(), r); }
        let _ = parse(serde_json::Value::Object(m).to_string().as_bytes());
    }

    #[test]
    fn well_formed_requests_parse(id in 0u64..1_000_000, name in "[a-z]{1,12}/[a-z]{1,12}") {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": name, "params": {"k": 1}}).to_string();
        match parse(body.as_bytes()) {
            Ok(Incoming::Request { id: got, method, params }) => {
                prop_assert_eq!(got, json!(id));
                prop_assert_eq!(method, name);
                prop_assert_eq!(params.get("k"), Some(&json!(1)));
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}
