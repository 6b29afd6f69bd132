//! Wire constants and the JSON-RPC envelope: method names, header names, error
//! codes, parsing of incoming messages and building of outgoing ones.

use serde_json::{Map, Value};

use serde_json::value::RawValue;
use taskwire_wire::jsonrpc::{self, Body, Invalid, Rules};

use crate::error::RpcError;

/// JSON-RPC version string.
pub const JSONRPC: &str = jsonrpc::VERSION;

/// Revision 2026-07-28 (no handshake, per-request `_meta`).
pub const V_2026_07_28: &str = "2026-07-28";
/// Revision 2025-11-25 (initialize, sessions, experimental tasks).
pub const V_2025_11_25: &str = "2025-11-25";
/// Older revisions an `initialize` may ask for (served without tasks).
pub const V_OLDER: [&str; 2] = ["2025-06-18", "2025-03-26"];

/// Method, header and `_meta` names, shared with taskwire-client.
pub use taskwire_vocab::names::mcp::{header, meta, method};

/// JSON-RPC and MCP error codes.
pub mod code {
    /// The JSON-RPC codes (Invalid Params is also MCP's unknown-task error).
    pub use taskwire_wire::jsonrpc::code::{
        INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    };
    /// Session not found (2025-11-25 transport).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// A header does not match the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The client lacks a capability the request needs (2026-07-28).
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    /// The events after a `tasks/stream` cursor are no longer retained
    /// (SEP-2694 `events_gone`, in the implementation-defined range).
    pub const EVENTS_GONE: i64 = -32010;
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
        /// The params object (empty when absent).
        params: Map<String, Value>,
    },
    /// A response or error from the client to a server request.
    Response {
        /// The id.
        id: Value,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
}

/// The envelope rules of MCP: an id is a string or a number; a message
/// without a method may be the client's response to a server request.
const RULES: Rules = Rules::new(false, true);

/// Parses one JSON-RPC message from a request body (the wire layer's one-pass
/// reader, with MCP's rules). The error carries the id when it could be read.
pub fn parse(body: &[u8]) -> Result<Incoming, (Value, RpcError)> {
    let bad = |id: Value, why: &Invalid| (id, RpcError::bad_request(why.code(), why.to_string()));
    let m = match jsonrpc::parse(body) {
        Ok(Body::One(m)) => m,
        Ok(Body::Batch(_)) => {
            return Err((
                Value::Null,
                RpcError::bad_request(
                    code::INVALID_REQUEST,
                    "JSON-RPC batches are not supported: send one message per request",
                ),
            ))
        }
        Err(Invalid::NotObject) => {
            return Err((
                Value::Null,
                RpcError::bad_request(
                    code::INVALID_REQUEST,
                    "a JSON-RPC message must be an object",
                ),
            ))
        }
        Err(why) => return Err(bad(Value::Null, &why)),
    };
    let value = |raw: &RawValue| serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null);
    let object = |raw: Option<&RawValue>| match raw.map(value) {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    match m.classify(RULES) {
        Ok(jsonrpc::Incoming::Request { id, method, params }) => Ok(Incoming::Request {
            id,
            method: method.into_owned(),
            params: object(params),
        }),
        Ok(jsonrpc::Incoming::Notification { method, params }) => Ok(Incoming::Notification {
            method: method.into_owned(),
            params: object(params),
        }),
        Ok(jsonrpc::Incoming::Response { id, outcome }) => Ok(Incoming::Response {
            id,
            outcome: outcome.map(value).map_err(value),
        }),
        Err((id, why)) => Err(bad(id, &why)),
    }
}

/// A success response.
pub fn result(id: &Value, result: Value) -> Value {
    jsonrpc::result(id, result)
}

/// An error response.
pub fn error(id: &Value, err: &RpcError) -> Value {
    error_object(id, err.object())
}

/// An error response from a ready JSON-RPC error object.
pub fn error_object(id: &Value, object: Value) -> Value {
    jsonrpc::error_value(id, object)
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    jsonrpc::notification(method, params)
}

/// A request from the server to the client.
pub fn request(id: &Value, method: &str, params: Value) -> Value {
    jsonrpc::request(id, method, params)
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
    use serde_json::json;

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
