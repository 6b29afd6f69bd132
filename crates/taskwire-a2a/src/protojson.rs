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

/// Encodes a message as a ProtoJSON value.
pub fn to_value<T: Serialize>(msg: &T) -> Result<Value> {
    let mut v = serde_json::to_value(msg).map_err(A2aError::internal)?;
    fix_timestamps(&mut v);
    Ok(v)
}

/// Encodes a message as a ProtoJSON string.
pub fn to_string<T: Serialize>(msg: &T) -> Result<String> {
    let v = to_value(msg)?;
    serde_json::to_string(&v).map_err(A2aError::internal)
}

/// `google.protobuf.Value` numbers are doubles; integral ones are written as
/// integers, as the client sent them.
fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                if n.is_f64()
                    && f.fract() == 0.0
                    && f.abs() < taskwire_vocab::a2a::PROTOBUF_WHOLE_NUMBER_LIMIT
                {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(m) => m.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

fn fix_timestamps(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if TIMESTAMP_KEYS.contains(&k.as_str()) {
                    if let Value::String(s) = val {
                        if let Some(base) = s.strip_suffix("+00:00") {
                            *s = format!("{base}Z");
                        }
                        continue;
                    }
                }
                if STRUCT_KEYS.contains(&k.as_str()) {
                    integral_numbers(val);
                    continue;
                }
                fix_timestamps(val);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(fix_timestamps),
        _ => {}
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
        // Known gap of pbjson: `"data": null` decodes as a part without content
        // (refused later as InvalidParams), not as a null Value.
        let p: pb::Part = from_value(serde_json::json!({"data": null})).unwrap();
        assert!(p.content.is_none());
    }
}
