//! JSON-RPC 2.0, once for every protocol that speaks it (A2A's JSON-RPC binding,
//! MCP, and the client of both): the envelope, the id rules, the error object and
//! the standard error codes.
//!
//! Incoming bodies are read in one pass ([`parse`]): the members of a message are
//! kept as raw JSON text borrowed from the body ([`Message`]), so `params` reach
//! the protocol's own decoder untouched (ProtoJSON for A2A, which names field
//! paths in its errors) and no `serde_json::Value` tree is built around them.
//! [`Message::classify`] then applies the envelope rules, with what differs
//! between protocols given as [`Rules`].
//!
//! jsonrpsee-types is not used: A2A answers a POST with SSE for its streaming
//! methods and answers batches element by element, MCP carries responses from
//! the client on the same endpoint, and both need the raw `params` text; the
//! envelope rules themselves are a page of code.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The `jsonrpc` member's only value.
pub const VERSION: &str = "2.0";

/// The error codes JSON-RPC 2.0 defines.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// What the envelope rules leave to each protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rules {
    /// A request may carry `"id": null` (A2A); otherwise an id must be a string
    /// or a number (MCP).
    pub null_id: bool,
    /// A message without a method may be a response (`result` or `error`) to a
    /// request the server sent (MCP); otherwise it is an invalid request (A2A).
    pub responses: bool,
}

impl Rules {
    /// The rules with both choices given.
    pub const fn new(null_id: bool, responses: bool) -> Self {
        Self { null_id, responses }
    }
}

/// Why a body or a message is not valid JSON-RPC.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// Not JSON.
    #[error("parse error: {0}")]
    Parse(String),
    /// JSON, but not an object (nor, where batches are read, an array).
    #[error("a request must be a JSON object")]
    NotObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    #[error("jsonrpc must be \"2.0\"")]
    Version,
    /// An id of the wrong type.
    #[error("{}", if *null_allowed { "id must be a string, a number or null" } else { "id must be a string or a number" })]
    Id {
        /// Whether null was allowed.
        null_allowed: bool,
    },
    /// `method` is missing or not a string.
    #[error("method must be a string")]
    Method,
    /// `params` is neither an object nor null.
    #[error("params must be an object")]
    Params,
    /// Neither a method nor an id with a response.
    #[error("a message needs a method, or an id with a result or an error")]
    Empty,
    /// A response with both or neither of `result` and `error`.
    #[error("a response needs exactly one of result and error")]
    Response,
}

impl Invalid {
    /// The JSON-RPC code: Parse error for text that is not JSON, Invalid
    /// Request for everything else (a protocol may answer [`Invalid::Params`]
    /// with Invalid Params instead).
    pub fn code(&self) -> i64 {
        match self {
            Invalid::Parse(_) => code::PARSE_ERROR,
            _ => code::INVALID_REQUEST,
        }
    }
}

/// One JSON-RPC object, each member as the raw JSON text the body has for it
/// (a member given twice: the last one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Message<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// A body: one message, or a batch of raw elements (each read with
/// [`parse_message`]).
#[derive(Debug)]
pub enum Body<'a> {
    /// One object.
    One(Message<'a>),
    /// An array (possibly empty).
    Batch(Vec<&'a RawValue>),
}

/// A message the envelope rules accept.
#[derive(Clone, Debug)]
pub enum Incoming<'a> {
    /// A request: it has an id and expects an answer.
    Request {
        /// The id (a string, a number, or null where the rules allow it).
        id: Value,
        /// The method.
        method: Cow<'a, str>,
        /// The params object's text; `None` when absent or null.
        params: Option<&'a RawValue>,
    },
    /// A notification: no id, no answer.
    Notification {
        /// The method.
        method: Cow<'a, str>,
        /// The params object's text; `None` when absent or null.
        params: Option<&'a RawValue>,
    },
    /// A response to a request the reader sent (where the rules allow them).
    Response {
        /// The id.
        id: Value,
        /// The `result` text, or the `error` text.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
}

/// Reads a body: one object or a batch array. Text that is not JSON is
/// [`Invalid::Parse`]; other JSON is [`Invalid::NotObject`].
pub fn parse(body: &[u8]) -> Result<Body<'_>, Invalid> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let top = Top::deserialize(&mut de)
        .and_then(|t| de.end().map(|()| t))
        .map_err(|e| Invalid::Parse(e.to_string()))?;
    match top {
        Top::One(m) => Ok(Body::One(m)),
        Top::Batch(b) => Ok(Body::Batch(b)),
        Top::Other => Err(Invalid::NotObject),
    }
}

/// Reads one element of a batch (or any raw object).
pub fn parse_message(raw: &RawValue) -> Result<Message<'_>, Invalid> {
    match serde_json::from_str::<Top<'_>>(raw.get()) {
        Ok(Top::One(m)) => Ok(m),
        Ok(_) => Err(Invalid::NotObject),
        Err(e) => Err(Invalid::Parse(e.to_string())),
    }
}

impl<'a> Message<'a> {
    /// Applies the envelope rules. On failure, the id to answer with (the
    /// message's, when it could be read and is valid; else null) and why.
    pub fn classify(&self, rules: Rules) -> Result<Incoming<'a>, (Value, Invalid)> {
        let id = match self.id {
            None => None,
            Some(raw) => {
                let id: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let ok = match &id {
                    Value::String(_) | Value::Number(_) => true,
                    Value::Null => rules.null_id,
                    _ => false,
                };
                if !ok {
                    return Err((
                        Value::Null,
                        Invalid::Id {
                            null_allowed: rules.null_id,
                        },
                    ));
                }
                Some(id)
            }
        };
        let fail = |why: Invalid| Err((id.clone().unwrap_or(Value::Null), why));
        if self.jsonrpc.and_then(str_of).as_deref() != Some(VERSION) {
            return fail(Invalid::Version);
        }
        match self.method {
            Some(raw) => {
                let Some(method) = str_of(raw) else {
                    return fail(Invalid::Method);
                };
                let params = match self.params {
                    None => None,
                    Some(p) if p.get() == "null" => None,
                    Some(p) if p.get().starts_with('{') => Some(p),
                    Some(_) => return fail(Invalid::Params),
                };
                Ok(match id {
                    Some(id) => Incoming::Request { id, method, params },
                    None => Incoming::Notification { method, params },
                })
            }
            None if !rules.responses => fail(Invalid::Method),
            None => {
                let Some(id) = id.clone() else {
                    return fail(Invalid::Empty);
                };
                match (self.result, self.error) {
                    (Some(r), None) => Ok(Incoming::Response { id, outcome: Ok(r) }),
                    (None, Some(e)) => Ok(Incoming::Response {
                        id,
                        outcome: Err(e),
                    }),
                    _ => fail(Invalid::Response),
                }
            }
        }
    }

    /// The `result` member's text, if any.
    pub fn result(&self) -> Option<&'a RawValue> {
        self.result
    }

    /// The `error` member's text, if any.
    pub fn error(&self) -> Option<&'a RawValue> {
        self.error
    }
}

/// A JSON string member's value, borrowed when it has no escapes.
fn str_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// The top level of a body.
enum Top<'a> {
    One(Message<'a>),
    Batch(Vec<&'a RawValue>),
    Other,
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC object or batch")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
        let mut m = Message::default();
        while let Some(key) = map.next_key::<Member>()? {
            let v: &'de RawValue = map.next_value()?;
            match key {
                Member::Jsonrpc => m.jsonrpc = Some(v),
                Member::Id => m.id = Some(v),
                Member::Method => m.method = Some(v),
                Member::Params => m.params = Some(v),
                Member::Result => m.result = Some(v),
                Member::Error => m.error = Some(v),
                Member::Other => {}
            }
        }
        Ok(Top::One(m))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<&'de RawValue>()? {
            items.push(v);
        }
        Ok(Top::Batch(items))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Top<'de>, E> {
        Ok(Top::Other)
    }
}

/// A member name of the envelope (any other name is ignored).
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Member, E> {
                Ok(match s {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        de.deserialize_str(V)
    }
}

/// A JSON-RPC error object (in MCP also a failed task's `error`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorObject {
    /// Code.
    pub code: i64,
    /// Message.
    pub message: String,
    /// Data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// With `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Reads an `error` member: `None` unless it is an object with an integer
    /// `code` (a missing or non-string `message` reads as empty).
    pub fn from_value(v: &Value) -> Option<Self> {
        let code = v.get("code")?.as_i64()?;
        Some(Self {
            code,
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            data: v.get("data").cloned(),
        })
    }
}

/// A request.
pub fn request(id: &Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": VERSION, "id": id, "method": method, "params": params})
}

/// The text of a request whose params are any serialisable value (the same
/// object as [`request`], encoded without a value tree).
pub fn request_text<P: serde::Serialize + ?Sized>(
    id: u64,
    method: &str,
    params: &P,
) -> serde_json::Result<String> {
    #[derive(serde::Serialize)]
    struct Request<'a, P: ?Sized> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        params: &'a P,
    }
    serde_json::to_string(&Request {
        jsonrpc: VERSION,
        id,
        method,
        params,
    })
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": VERSION, "method": method, "params": params})
}

/// A success response.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": VERSION, "id": id, "result": result})
}

/// An error response.
pub fn error(id: &Value, error: &ErrorObject) -> Value {
    json!({"jsonrpc": VERSION, "id": id, "error": error})
}

/// An error response around an error object already built as JSON (one whose
/// `data` an adapter assembled from its own typed members).
pub fn error_value(id: &Value, error: Value) -> Value {
    json!({"jsonrpc": VERSION, "id": id, "error": error})
}

/// The text of a success response around a result already encoded as JSON text
/// (the same object as [`result`], without a value tree).
pub fn result_text(id: &Value, result: &str) -> String {
    let mut out = Vec::with_capacity(result.len() + 64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    if serde_json::to_writer(&mut out, id).is_err() {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
    // Only UTF-8 went in: JSON text from serde_json and the `&str` result.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const A2A: Rules = Rules::new(true, false);
    const MCP: Rules = Rules::new(false, true);

    fn one(body: &str, rules: Rules) -> Result<Incoming<'_>, (Value, Invalid)> {
        // (Incoming holds raw text; errors are compared below.)
        match parse(body.as_bytes()) {
            Ok(Body::One(m)) => m.classify(rules),
            Ok(Body::Batch(_)) => panic!("a batch"),
            Err(e) => Err((Value::Null, e)),
        }
    }

    #[test]
    fn requests_notifications_and_responses() {
        let r = one(
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]}}"#,
            A2A,
        )
        .unwrap();
        match r {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, json!(1));
                assert!(matches!(method, Cow::Borrowed("m")));
                assert_eq!(params.unwrap().get(), r#"{"a":[1]}"#);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","method":"n","params":null}"#, MCP).unwrap(),
            Incoming::Notification { params: None, .. }
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":"e","result":{}}"#, MCP).unwrap(),
            Incoming::Response { outcome: Ok(_), .. }
        ));
        // Escaped names and values, duplicates (the last wins), unknown members.
        let r = one(
            r#"{"jsonr\u0070c":"2\u002e0","id":null,"method":"x","method":"S\u0065nd","extra":[]}"#,
            A2A,
        )
        .unwrap();
        match r {
            Incoming::Request { id, method, params } => {
                assert_eq!((id, method.as_ref()), (Value::Null, "Send"));
                assert!(params.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_envelopes_get_their_reason_and_id() {
        let why = |b: &str, r: Rules| one(b, r).unwrap_err();
        assert!(matches!(why("{", A2A).1, Invalid::Parse(_)));
        assert_eq!(why("{} x", A2A).1.code(), code::PARSE_ERROR);
        assert_eq!(why("7", A2A).1, Invalid::NotObject);
        assert_eq!(
            why(r#"{"jsonrpc":"1.0","id":3,"method":"x"}"#, A2A),
            (json!(3), Invalid::Version)
        );
        assert_eq!(
            why(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#, A2A),
            (Value::Null, Invalid::Id { null_allowed: true })
        );
        assert_eq!(
            why(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, MCP).1,
            Invalid::Id {
                null_allowed: false
            }
        );
        assert_eq!(
            why(r#"{"jsonrpc":"2.0","id":"a","method":3}"#, MCP),
            (json!("a"), Invalid::Method)
        );
        assert_eq!(
            why(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#, A2A).1,
            Invalid::Params
        );
        assert_eq!(why(r#"{"jsonrpc":"2.0","id":1}"#, A2A).1, Invalid::Method);
        assert_eq!(why(r#"{"jsonrpc":"2.0"}"#, MCP).1, Invalid::Empty);
        assert_eq!(
            why(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#, MCP).1,
            Invalid::Response
        );
        assert_eq!(Invalid::Version.code(), code::INVALID_REQUEST);
    }

    #[test]
    fn batches_are_read_element_by_element() {
        let Body::Batch(items) =
            parse(br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, 5, []]"#).unwrap()
        else {
            panic!("not a batch")
        };
        assert_eq!(items.len(), 3);
        assert!(parse_message(items[0]).unwrap().classify(A2A).is_ok());
        assert_eq!(parse_message(items[1]).unwrap_err(), Invalid::NotObject);
        assert_eq!(parse_message(items[2]).unwrap_err(), Invalid::NotObject);
    }

    #[test]
    fn answers_are_written_in_one_shape() {
        let e = ErrorObject::new(code::METHOD_NOT_FOUND, "nope").with_data(json!([1]));
        let v = error(&json!(1), &e);
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope", "data": [1]}})
        );
        assert_eq!(ErrorObject::from_value(&v["error"]), Some(e));
        assert!(ErrorObject::from_value(&json!({"message": "no code"})).is_none());
        let text = result_text(&json!("x"), r#"{"a":1}"#);
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            result(&json!("x"), json!({"a": 1}))
        );
    }
}
