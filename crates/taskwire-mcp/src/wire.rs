//! Wire constants and the JSON-RPC envelope: method names, header names, error
//! codes, parsing of incoming messages and building of outgoing ones.

use serde_json::{json, Map, Value};

use crate::error::RpcError;

/// JSON-RPC version string.
pub const JSONRPC: &str = "2.0";

/// Revision 2026-07-28 (no handshake, per-request `_meta`).
pub const V_CURRENT: &str = "2026-07-28";
/// Revision 2025-11-25 (initialize, sessions, experimental tasks).
pub const V_LEGACY: &str = "2025-11-25";
/// Older revisions an `initialize` may ask for (served without tasks).
pub const V_OLDER: [&str; 2] = ["2025-06-18", "2025-03-26"];

/// Method, header and `_meta` names, shared with taskwire-client.
pub use taskwire_vocab::names::mcp::{header, meta, method};

/// JSON-RPC and MCP error codes.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params (also unknown task ids).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Session not found (2025-11-25 transport).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// A header does not match the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The client lacks a capability the request needs (2026-07-28).
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// One incoming JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A request (has an id).
    Request {
        /// The id (string or number).
        id: Value,
        /// The method.
        method: String,
        /// The params object (empty when absent).
        params: Map<String, Value>,
    },
    /// A notification (no id).
    Notification {
        /// The method.
        method: String,
    },
    /// A response or error from the client to a server request.
    Response {
        /// The id.
        id: Value,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
}

/// Parses one JSON-RPC message from a request body. The error carries the id when
/// it could be read.
pub fn parse(body: &[u8]) -> Result<Incoming, (Value, RpcError)> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::bad_request(code::PARSE_ERROR, format!("parse error: {e}")),
        )
    })?;
    let obj = match v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err((
                Value::Null,
                RpcError::bad_request(
                    code::INVALID_REQUEST,
                    "JSON-RPC batches are not supported: send one message per request",
                ),
            ))
        }
        _ => {
            return Err((
                Value::Null,
                RpcError::bad_request(
                    code::INVALID_REQUEST,
                    "a JSON-RPC message must be an object",
                ),
            ))
        }
    };
    let id = obj.get("id").cloned();
    let id_for_error = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    let fail = |msg: &str| {
        Err((
            id_for_error.clone(),
            RpcError::bad_request(code::INVALID_REQUEST, msg.to_string()),
        ))
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some(JSONRPC) {
        return fail("jsonrpc must be \"2.0\"");
    }
    if let Some(i) = &id {
        if !matches!(i, Value::String(_) | Value::Number(_)) {
            return fail("id must be a string or a number");
        }
    }
    match obj.get("method") {
        Some(Value::String(m)) => {
            let params = match obj.get("params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(p)) => p.clone(),
                Some(_) => return fail("params must be an object"),
            };
            match id {
                Some(id) => Ok(Incoming::Request {
                    id,
                    method: m.clone(),
                    params,
                }),
                None => Ok(Incoming::Notification { method: m.clone() }),
            }
        }
        Some(_) => fail("method must be a string"),
        None => {
            let Some(id) = id else {
                return fail("a message needs a method, or an id with a result or an error");
            };
            match (obj.get("result"), obj.get("error")) {
                (Some(r), None) => Ok(Incoming::Response {
                    id,
                    outcome: Ok(r.clone()),
                }),
                (None, Some(e)) => Ok(Incoming::Response {
                    id,
                    outcome: Err(e.clone()),
                }),
                _ => fail("a response needs exactly one of result and error"),
            }
        }
    }
}

/// A success response.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": JSONRPC, "id": id, "result": result})
}

/// An error response.
pub fn error(id: &Value, err: &RpcError) -> Value {
    json!({"jsonrpc": JSONRPC, "id": id, "error": err.object()})
}

/// An error response from a ready JSON-RPC error object.
pub fn error_object(id: &Value, object: Value) -> Value {
    json!({"jsonrpc": JSONRPC, "id": id, "error": object})
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": JSONRPC, "method": method, "params": params})
}

/// A request from the server to the client.
pub fn request(id: &Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": JSONRPC, "id": id, "method": method, "params": params})
}

/// Decodes a header value that may be in `=?base64?…?=` form.
pub fn decode_header_value(raw: &str) -> Option<String> {
    use base64::Engine;
    match raw
        .strip_prefix("=?base64?")
        .and_then(|s| s.strip_suffix("?="))
    {
        Some(inner) => base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests_notifications_and_responses() {
        let r = parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert!(matches!(r, Incoming::Request { ref method, .. } if method == "tools/list"));
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n, Incoming::Notification { .. }));
        let s = parse(br#"{"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}"#).unwrap();
        assert!(matches!(s, Incoming::Response { outcome: Ok(_), .. }));
    }

    #[test]
    fn rejects_malformed_envelopes() {
        let code_of = |b: &[u8]| parse(b).err().map(|(_, e)| e.code);
        assert_eq!(code_of(b"{"), Some(code::PARSE_ERROR));
        assert_eq!(code_of(b"[]"), Some(code::INVALID_REQUEST));
        assert_eq!(code_of(b"1"), Some(code::INVALID_REQUEST));
        assert_eq!(
            code_of(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#),
            Some(code::INVALID_REQUEST)
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            Some(code::INVALID_REQUEST)
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            Some(code::INVALID_REQUEST)
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":1}"#),
            Some(code::INVALID_REQUEST)
        );
        let (id, _) = parse(br#"{"jsonrpc":"2.0","id":7,"method":3}"#).unwrap_err();
        assert_eq!(id, json!(7));
    }

    #[test]
    fn decodes_base64_header_values() {
        assert_eq!(decode_header_value("abc").as_deref(), Some("abc"));
        assert_eq!(
            decode_header_value("=?base64?IGE=?=").as_deref(),
            Some(" a")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }
}
