//! JSON-RPC 2.0 envelopes shared by A2A and MCP.

use serde_json::{json, Map, Value};

use crate::DIALECT;

fn id(null_allowed: bool) -> Value {
    if null_allowed {
        json!({"type": ["string", "number", "null"]})
    } else {
        json!({"type": ["string", "number"]})
    }
}

/// A request. With `by_method`, `params` is checked against the schema of its
/// method (`$ref`s into `defs`).
pub(crate) fn request(
    description: &str,
    null_id: bool,
    by_method: &[(&str, String)],
    defs: Map<String, Value>,
) -> Value {
    let mut s = Map::new();
    s.insert("$schema".into(), json!(DIALECT));
    s.insert("title".into(), json!("JsonRpcRequest"));
    s.insert("description".into(), json!(description));
    s.insert("type".into(), json!("object"));
    s.insert("required".into(), json!(["jsonrpc", "method", "id"]));
    let mut method = json!({"type": "string"});
    if !by_method.is_empty() {
        let names: Vec<&str> = by_method.iter().map(|(m, _)| *m).collect();
        method = json!({"type": "string", "enum": names});
    }
    s.insert(
        "properties".into(),
        json!({
            "jsonrpc": {"const": "2.0"},
            "id": id(null_id),
            "method": method,
            "params": {"type": "object"}
        }),
    );
    if !by_method.is_empty() {
        let rules: Vec<Value> = by_method
            .iter()
            .map(|(m, r)| {
                json!({
                    "if": {"properties": {"method": {"const": m}}, "required": ["method"]},
                    "then": {"properties": {"params": {"$ref": r}}}
                })
            })
            .collect();
        s.insert("allOf".into(), Value::Array(rules));
    }
    if !defs.is_empty() {
        s.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(s)
}

/// A notification (a request without id).
pub(crate) fn notification(description: &str) -> Value {
    json!({
        "$schema": DIALECT,
        "title": "JsonRpcNotification",
        "description": description,
        "type": "object",
        "required": ["jsonrpc", "method"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "method": {"type": "string"},
            "params": {"type": "object"}
        },
        "not": {"required": ["id"]}
    })
}

/// A success response; `result` depends on the method (see the index). `null_id`:
/// the binding takes requests whose id is null (A2A does), so answers carry it.
pub(crate) fn success(description: &str, null_id: bool) -> Value {
    json!({
        "$schema": DIALECT,
        "title": "JsonRpcSuccessResponse",
        "description": description,
        "type": "object",
        "required": ["jsonrpc", "id", "result"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": id(null_id),
            "result": {}
        },
        "not": {"required": ["error"]}
    })
}

fn error_def(data: Value) -> Value {
    json!({
        "title": "JsonRpcError",
        "description": "A JSON-RPC error object.",
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "integer"},
            "message": {"type": "string"},
            "data": data
        }
    })
}

/// The error object alone.
pub(crate) fn error_object(data: Value) -> Value {
    let mut v = error_def(data);
    if let Value::Object(o) = &mut v {
        o.insert("$schema".into(), json!(DIALECT));
    }
    v
}

/// An error response; `id` is null when the request's id could not be read.
pub(crate) fn error_response(description: &str, data: Value) -> Value {
    json!({
        "$schema": DIALECT,
        "title": "JsonRpcErrorResponse",
        "description": description,
        "type": "object",
        "required": ["jsonrpc", "id", "error"],
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "id": id(true),
            "error": {"$ref": "#/$defs/JsonRpcError"}
        },
        "not": {"required": ["result"]},
        "$defs": {"JsonRpcError": error_def(data)}
    })
}
