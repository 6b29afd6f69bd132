//! ProtoJSON encoding and decoding of the generated messages (pbjson serde), with
//! the two fixes pbjson needs to follow ProtoJSON as A2A clients expect: timestamps
//! end in `Z`, and `null` on a non-value field means "default" (it is dropped
//! before decoding, except inside `google.protobuf.Struct`/`Value` fields, where
//! null is a value).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{A2aError, Result};

/// Keys whose values are `google.protobuf.Timestamp` in the A2A messages.
const TIMESTAMP_KEYS: [&str; 2] = ["timestamp", "statusTimestampAfter"];
/// Keys whose values are `google.protobuf.Struct` or `Value` (null is data there).
const STRUCT_KEYS: [&str; 4] = ["metadata", "data", "params", "header"];

/// Encodes a message as a ProtoJSON value (the text of [`to_string`], parsed).
pub fn to_value<T: Serialize>(msg: &T) -> Result<Value> {
    serde_json::from_str(&to_string(msg)?).map_err(A2aError::internal)
}

/// Encodes a message as a ProtoJSON string, in one pass: the `Fixer` formatter
/// makes pbjson's output ProtoJSON as the text is written, without building a
/// `serde_json::Value` tree first.
pub fn to_string<T: Serialize>(msg: &T) -> Result<String> {
    let mut out = Vec::with_capacity(512);
    write(&mut out, msg)?;
    String::from_utf8(out).map_err(A2aError::internal)
}

/// Appends a message's ProtoJSON text to `out` (see [`to_string`]).
pub fn write<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Fixer::default());
    msg.serialize(&mut ser).map_err(A2aError::internal)
}

/// What the value being written is, by the key it sits under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Slot {
    #[default]
    Plain,
    Timestamp,
    Struct,
}

/// A compact JSON formatter that makes pbjson's output ProtoJSON as clients expect
/// it: timestamps end in `Z` rather than `+00:00`, and integral numbers inside
/// `google.protobuf.Struct`/`Value` fields are written as integers. It follows the
/// key each value sits under.
#[derive(Debug, Default)]
struct Fixer {
    /// Writing an object key.
    in_key: bool,
    key: String,
    /// The slot of the value about to be written.
    next: Slot,
    /// Nesting depth inside a Struct/Value field (0: outside).
    raw_depth: usize,
    /// A timestamp string being written, held back until it ends.
    ts: Option<String>,
}

impl Fixer {
    fn enter(&mut self) {
        if self.raw_depth > 0 || self.next == Slot::Struct {
            self.raw_depth += 1;
        }
        self.next = Slot::Plain;
    }

    fn leave(&mut self) {
        self.raw_depth = self.raw_depth.saturating_sub(1);
    }
}

use serde_json::ser::CompactFormatter as Cf;

impl serde_json::ser::Formatter for Fixer {
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.in_key = true;
        self.key.clear();
        Cf.begin_object_key(w, first)
    }

    fn end_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.in_key = false;
        Cf.end_object_key(w)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.next = if self.raw_depth > 0 {
            Slot::Plain
        } else if TIMESTAMP_KEYS.contains(&self.key.as_str()) {
            Slot::Timestamp
        } else if STRUCT_KEYS.contains(&self.key.as_str()) {
            Slot::Struct
        } else {
            Slot::Plain
        };
        Cf.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.next = Slot::Plain;
        Cf.end_object_value(w)
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.enter();
        Cf.begin_object(w)
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.leave();
        Cf.end_object(w)
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.enter();
        Cf.begin_array(w)
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.leave();
        Cf.end_array(w)
    }

    fn begin_string<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if !self.in_key && self.next == Slot::Timestamp {
            self.ts = Some(String::new());
        }
        self.next = Slot::Plain;
        Cf.begin_string(w)
    }

    fn end_string<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        if let Some(ts) = self.ts.take() {
            match ts.strip_suffix("+00:00") {
                Some(base) => {
                    w.write_all(base.as_bytes())?;
                    w.write_all(b"Z")?;
                }
                None => w.write_all(ts.as_bytes())?,
            }
        }
        Cf.end_string(w)
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        if self.in_key {
            self.key.push_str(fragment);
        } else if let Some(ts) = &mut self.ts {
            ts.push_str(fragment);
            return Ok(());
        }
        w.write_all(fragment.as_bytes())
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        if self.in_key {
            // No key the fixes look for has an escape in it.
            self.key.push('\\');
        } else if let Some(ts) = self.ts.take() {
            // Not a timestamp after all: write what was held back.
            w.write_all(ts.as_bytes())?;
        }
        Cf.write_char_escape(w, escape)
    }

    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        let in_struct = self.raw_depth > 0 || self.next == Slot::Struct;
        self.next = Slot::Plain;
        if in_struct && v.fract() == 0.0 && v.abs() < 9.0e15 {
            return Cf.write_i64(w, v as i64);
        }
        Cf.write_f64(w, v)
    }
}

fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, val| !val.is_null() || STRUCT_KEYS.contains(&k.as_str()));
            for (k, val) in m.iter_mut() {
                if !STRUCT_KEYS.contains(&k.as_str()) {
                    drop_nulls(val);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Decodes a ProtoJSON value into a message. Accepts lowerCamelCase and proto field
/// names, enum names or numbers, ignores unknown fields; a wrong field is an
/// InvalidParams error whose message names the field's path.
pub fn from_value<T: DeserializeOwned>(mut v: Value) -> Result<T> {
    drop_nulls(&mut v);
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            A2aError::invalid_params("params", inner)
        } else {
            A2aError::invalid_params(&format!("params.{path}"), inner)
        }
    })
}

/// Decodes ProtoJSON text straight into a message, when that gives what
/// [`from_value`] gives for the same text: text without a `null` literal (which
/// `from_value` treats apart) that decodes. `None` otherwise: the caller then goes
/// through `from_value`, which also names the field of an error.
pub fn from_str_without_nulls<T: DeserializeOwned>(text: &str) -> Option<T> {
    if text.contains("null") {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// Decodes SendMessage params. Unlike [`from_value`] it keeps a data part whose
/// value is JSON `null` (`{"data": null}`): pbjson reads a null oneof member as
/// "absent", which would leave a part without content, while in ProtoJSON a null
/// `google.protobuf.Value` is the null value.
pub fn send_request_from_value(v: Value) -> Result<crate::pb::SendMessageRequest> {
    const CONTENT: [&str; 3] = ["text", "raw", "url"];
    let null_data: Vec<usize> = v
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    p.get("data").is_some_and(Value::is_null)
                        && CONTENT.iter().all(|k| p.get(k).is_none_or(Value::is_null))
                })
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default();
    let mut req: crate::pb::SendMessageRequest = from_value(v)?;
    if let Some(m) = req.message.as_mut() {
        for i in null_data {
            if let Some(p) = m.parts.get_mut(i) {
                if p.content.is_none() {
                    p.content = Some(crate::pb::part::Content::Data(pbjson_types::Value {
                        kind: Some(pbjson_types::value::Kind::NullValue(0)),
                    }));
                }
            }
        }
    }
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;

    #[test]
    fn timestamps_end_in_z() {
        let s = pb::TaskStatus {
            state: pb::TaskState::Working as i32,
            message: None,
            timestamp: Some(pbjson_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
        };
        let v = to_value(&s).unwrap();
        assert_eq!(v["timestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(v["state"], "TASK_STATE_WORKING");
    }

    #[test]
    fn encoding_fixes_timestamps_and_numbers_but_not_user_strings() {
        let t = pb::Task {
            id: "t".into(),
            context_id: "c".into(),
            status: Some(pb::TaskStatus {
                state: pb::TaskState::Completed as i32,
                message: None,
                timestamp: Some(pbjson_types::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 5_000_000,
                }),
            }),
            metadata: Some(pbjson_types::Struct {
                fields: [
                    (
                        "n".to_string(),
                        pbjson_types::Value {
                            kind: Some(pbjson_types::value::Kind::NumberValue(3.0)),
                        },
                    ),
                    (
                        "half".to_string(),
                        pbjson_types::Value {
                            kind: Some(pbjson_types::value::Kind::NumberValue(0.5)),
                        },
                    ),
                    (
                        // User data is never rewritten, even under a timestamp key.
                        "timestamp".to_string(),
                        pbjson_types::Value {
                            kind: Some(pbjson_types::value::Kind::StringValue(
                                "2020-01-01T00:00:00+00:00".into(),
                            )),
                        },
                    ),
                    (
                        "quote".to_string(),
                        pbjson_types::Value {
                            kind: Some(pbjson_types::value::Kind::StringValue("a\"b".into())),
                        },
                    ),
                ]
                .into_iter()
                .collect(),
            }),
            ..Default::default()
        };
        let text = to_string(&t).unwrap();
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["status"]["timestamp"], "2023-11-14T22:13:20.005Z");
        assert_eq!(parsed["metadata"]["n"], serde_json::json!(3));
        assert_eq!(parsed["metadata"]["half"], serde_json::json!(0.5));
        assert_eq!(parsed["metadata"]["timestamp"], "2020-01-01T00:00:00+00:00");
        assert_eq!(parsed["metadata"]["quote"], "a\"b");
    }

    #[test]
    fn wrong_field_is_named() {
        let e = from_value::<pb::SendMessageRequest>(serde_json::json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"historyLength": "many"}
        }))
        .unwrap_err();
        assert!(
            e.message().contains("configuration.historyLength"),
            "{}",
            e.message()
        );
    }

    #[test]
    fn snake_case_and_nulls_are_accepted() {
        let r: pb::GetTaskRequest = from_value(serde_json::json!({
            "id": "t", "history_length": 2, "tenant": null
        }))
        .unwrap();
        assert_eq!(r.history_length, Some(2));
        // pbjson alone reads `"data": null` as a part without content; the
        // SendMessage decoder keeps it as the null value.
        let p: pb::Part = from_value(serde_json::json!({"data": null})).unwrap();
        assert!(p.content.is_none());
        let r = send_request_from_value(serde_json::json!({"message": {
            "messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "x"}, {"data": null}, {"data": {"a": 1}}]
        }}))
        .unwrap();
        let parts = r.message.unwrap().parts;
        assert!(matches!(
            &parts[1].content,
            Some(pb::part::Content::Data(pbjson_types::Value {
                kind: Some(pbjson_types::value::Kind::NullValue(_))
            }))
        ));
        assert!(matches!(
            &parts[2].content,
            Some(pb::part::Content::Data(_))
        ));
    }
}
