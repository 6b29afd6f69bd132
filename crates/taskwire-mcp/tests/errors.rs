//! Bad input on revision 2026-07-28: envelope, `_meta`, headers, methods,
//! capabilities, params, sizes and unknown tasks, each with its HTTP status and
//! JSON-RPC error.

mod common;

use common::{golden, Server, EXT, V};
use serde_json::{json, Value};
use taskwire_mcp::McpConfig;

fn meta(tasks: bool) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": if tasks { json!({"extensions": {EXT: {}}}) } else { json!({}) },
    })
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn envelope_errors() {
    let s = Server::start().await;
    let (st, r) = s.raw("{not json", &[]).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32700)));
    golden("error_parse", &json!({"status": st, "body": r}));
    let (st, r) = s.raw("[]", &[]).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32600)));
    assert!(r["error"]["message"].as_str().unwrap().contains("batch"));
    let (st, r) = s.raw(r#"{"jsonrpc":"2.0","id":3,"method":5}"#, &[]).await;
    assert_eq!(
        (st, r["error"]["code"].clone(), r["id"].clone()),
        (400, json!(-32600), json!(3))
    );
    golden("error_invalid_request", &json!({"status": st, "body": r}));
    // A notification needs no answer.
    let (st, _) = s
        .raw(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
            &[],
        )
        .await;
    assert_eq!(st, 202);
    s.shutdown().await;
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let s = Server::with_config({
        let mut v = McpConfig::default();
        v.max_body_bytes = 1024;
        v
    })
    .await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":"{}"}}}}"#,
        "a".repeat(4096)
    );
    let (st, r) = s.raw(&big, &[]).await;
    assert_eq!((st, r["error"]["code"].clone()), (413, json!(-32600)));
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("1024 bytes"));
    s.shutdown().await;
}

#[tokio::test]
async fn meta_version_and_header_checks() {
    let s = Server::start().await;
    let std_headers = h(&[("mcp-protocol-version", V), ("mcp-method", "tools/list")]);
    // No _meta at all.
    let (st, r) = s
        .raw(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            &std_headers,
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32602)));
    golden("error_missing_meta", &json!({"status": st, "body": r}));
    // _meta without clientInfo (a SHOULD): served.
    let mut m = meta(false);
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": m}});
    let (st, r) = s.raw(&body.to_string(), &std_headers).await;
    assert_eq!(st, 200, "{r}");
    assert!(r["result"]["tools"].is_array(), "{r}");
    // _meta without clientCapabilities: refused.
    let mut m = meta(false);
    m.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": m}});
    let (st, r) = s.raw(&body.to_string(), &std_headers).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32602)));
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("clientCapabilities"));
    // An unknown version in _meta under a header that says another: the
    // mismatch is reported first (-32020), not the version (-32022).
    let mut m = meta(false);
    m["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": m}});
    let (st, r) = s.raw(&body.to_string(), &std_headers).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    // initialize under revision 2026-07-28's header: the method is gone.
    let body = json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"_meta": meta(false),
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[("mcp-protocol-version", V), ("mcp-method", "initialize")]),
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (404, json!(-32601)));
    assert_eq!(r["id"], json!(2));
    // Unsupported version.
    let mut m = meta(false);
    m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta": m}});
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[
                ("mcp-protocol-version", "2099-01-01"),
                ("mcp-method", "tools/list"),
            ]),
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32022)));
    assert_eq!(r["error"]["data"]["supported"], json!([V]));
    golden(
        "error_unsupported_version",
        &json!({"status": st, "body": r}),
    );
    // Header that does not match _meta.
    let body =
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta": meta(false)}});
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/list"),
            ]),
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    golden("error_header_mismatch", &json!({"status": st, "body": r}));
    // Missing Mcp-Method.
    let (st, r) = s
        .raw(&body.to_string(), &h(&[("mcp-protocol-version", V)]))
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    // Mcp-Method naming another method.
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[("mcp-protocol-version", V), ("mcp-method", "tools/call")]),
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    s.shutdown().await;
}

#[tokio::test]
async fn mcp_name_must_match_the_task_id_and_tool() {
    let s = Server::start().await;
    let id = "0123456789abcdef0123456789abcdef";
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"_meta": meta(true), "taskId": id}});
    let base = [("mcp-protocol-version", V), ("mcp-method", "tasks/get")];
    let (st, r) = s.raw(&body.to_string(), &h(&base)).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    let mut wrong = base.to_vec();
    wrong.push(("mcp-name", "ffffffffffffffffffffffffffffffff"));
    let (st, r) = s.raw(&body.to_string(), &h(&wrong)).await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    // The base64 form of the right id passes the header check (and then the task
    // is unknown).
    let mut ok = base.to_vec();
    ok.push((
        "mcp-name",
        "=?base64?MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=?=",
    ));
    let (st, r) = s.raw(&body.to_string(), &h(&ok)).await;
    assert_eq!(
        (st, r["error"]["code"].clone()),
        (200, json!(-32602)),
        "{r}"
    );
    // tools/call with a wrong tool name header.
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta": meta(true), "name": "run_script", "arguments": {"text": "x"}}});
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[
                ("mcp-protocol-version", V),
                ("mcp-method", "tools/call"),
                ("mcp-name", "other"),
            ]),
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32020)));
    // Leading and trailing whitespace is not part of a field value (RFC 9110).
    let (st, r) = s
        .raw(
            &body.to_string(),
            &h(&[
                ("mcp-protocol-version", V),
                ("mcp-method", "tools/call"),
                ("mcp-name", " \trun_script  "),
            ]),
        )
        .await;
    assert_eq!(st, 200, "{r}");
    assert!(r.get("error").is_none(), "{r}");
    s.shutdown().await;
}

#[tokio::test]
async fn methods_and_capabilities() {
    let s = Server::start().await;
    let (st, r) = s.call("nope/nothing", json!({}), true).await;
    assert_eq!((st, r["error"]["code"].clone()), (404, json!(-32601)));
    golden("error_method_not_found", &json!({"status": st, "body": r}));
    for m in ["tasks/result", "tasks/list"] {
        let (st, r) = s.call(m, json!({"taskId": "x"}), true).await;
        assert_eq!(
            (st, r["error"]["code"].clone()),
            (404, json!(-32601)),
            "{m}"
        );
    }
    let (st, r) = s
        .call(
            "tasks/get",
            json!({"taskId": "0123456789abcdef0123456789abcdef"}),
            false,
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (400, json!(-32021)));
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    golden("error_missing_extension", &json!({"status": st, "body": r}));
    s.shutdown().await;
}

#[tokio::test]
async fn params_and_unknown_tasks() {
    let s = Server::start().await;
    let (st, r) = s
        .call("tools/call", json!({"name": "nope", "arguments": {}}), true)
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (200, json!(-32602)));
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown tool: nope"));
    let (st, r) = s
        .call(
            "tools/call",
            json!({"name": "run_script", "arguments": {}}),
            true,
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (200, json!(-32602)));
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("arguments.text"));
    golden("error_invalid_arguments", &json!({"status": st, "body": r}));
    let (_, r) = s
        .call("tasks/get", json!({"taskId": "not-an-id"}), true)
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let (_, r) = s
        .call(
            "tasks/get",
            json!({"taskId": "0123456789abcdef0123456789abcdef"}),
            true,
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    golden("error_unknown_task", &json!({"body": r}));
    // Someone else's task is unknown too, for every task method.
    let (_, r) = s
        .call(
            "tools/call",
            json!({"name": "run_script", "arguments": {"text": "ask x?"}}),
            true,
        )
        .await;
    let id = r["result"]["taskId"].as_str().unwrap().to_string();
    for m in ["tasks/get", "tasks/cancel", "tasks/continue"] {
        let (_, r) = s.call_as("mallory", m, json!({"taskId": id}), true).await;
        assert_eq!(r["error"]["code"], -32602, "{m}");
        assert!(r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown task"));
    }
    let (_, r) = s
        .call_as(
            "mallory",
            "tasks/update",
            json!({"taskId": id, "inputResponses": {}}),
            true,
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    // Malformed input responses name the key.
    let (_, r) = s
        .call(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"ask-0": "yes"}}),
            true,
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("ask-0"));
    let (_, r) = s.call("tasks/update", json!({"taskId": id}), true).await;
    assert_eq!(r["error"]["code"], -32602);
    s.shutdown().await;
}
