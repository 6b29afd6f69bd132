//! ProtoJSON of the `lf.a2a.v1` messages.
//!
//! Encoding is pbjson's serde of the generated messages; the well-known types in
//! them are [`crate::wkt`]'s, whose serde is ProtoJSON already (timestamps end in
//! `Z`, integral numbers inside a `Struct` or `Value` are integers). Nothing is
//! rewritten after it is written.
//!
//! Decoding has two paths that give the same message:
//! - [`from_str_without_nulls`], pbjson's generated deserializer straight from the
//!   text, for text without a `null` literal;
//! - [`from_value`] and [`from_str`], the descriptor-driven decoder of
//!   prost-reflect over [`super::DESCRIPTOR_1_1`], which follows ProtoJSON wherever
//!   pbjson does not: `null` on a field is its default, except on a
//!   `google.protobuf.Value` (a part's `"data": null` is the null value), and an
//!   error names the field's path. The decoded message is handed over as
//!   protobuf bytes.
//!
//! Both accept lowerCamelCase and proto field names, enum names or numbers, and
//! ignore unknown fields.

use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::WireError;

/// What a decodable A2A message is: a generated `lf.a2a.v1` message.
pub trait ProtoMessage: prost::Message + prost::Name + Default + DeserializeOwned {}

impl<T: prost::Message + prost::Name + Default + DeserializeOwned> ProtoMessage for T {}

/// Encodes a message as a ProtoJSON string.
pub fn to_string<T: Serialize>(msg: &T) -> Result<String, WireError> {
    let mut out = Vec::with_capacity(512);
    write(&mut out, msg)?;
    String::from_utf8(out).map_err(|e| WireError::Encode(e.to_string()))
}

/// Appends a message's ProtoJSON text to `out`.
pub fn write<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> Result<(), WireError> {
    serde_json::to_writer(out, msg).map_err(|e| WireError::Encode(e.to_string()))
}

/// Encodes a message as a ProtoJSON value.
pub fn to_value<T: Serialize>(msg: &T) -> Result<Value, WireError> {
    serde_json::to_value(msg).map_err(|e| WireError::Encode(e.to_string()))
}

/// Decodes ProtoJSON text straight into a message with pbjson, when that gives
/// what [`from_value`] gives for the same text: text without a `null` literal
/// that decodes. `None` otherwise; the caller then goes through [`from_str`] or
/// [`from_value`], which also name the field of an error.
pub fn from_str_without_nulls<T: DeserializeOwned>(text: &str) -> Option<T> {
    if text.contains("null") {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// Decodes a ProtoJSON value into a message by its descriptor (see the module
/// documentation). A wrong field is a [`WireError::Decode`] naming its path.
pub fn from_value<T: ProtoMessage>(v: Value) -> Result<T, WireError> {
    decode_with::<T, _>(v)
}

/// Decodes ProtoJSON text into a message: [`from_str_without_nulls`] when it
/// applies, else the descriptor-driven decoder of [`from_value`].
pub fn from_str<T: ProtoMessage>(text: &str) -> Result<T, WireError> {
    if let Some(t) = from_str_without_nulls(text) {
        return Ok(t);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let t = decode_with::<T, _>(&mut de)?;
    de.end().map_err(|e| WireError::decode("", e))?;
    Ok(t)
}

fn decode_with<'de, T, D>(de: D) -> Result<T, WireError>
where
    T: ProtoMessage,
    D: serde::Deserializer<'de>,
{
    let pool = super::descriptor_pool_1_1()?;
    let name = T::full_name();
    let desc = pool
        .get_message_by_name(&name)
        .ok_or_else(|| WireError::Descriptor(format!("no message {name}")))?;
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let mut track = serde_path_to_error::Track::new();
    let msg = DynamicMessage::deserialize_with_options(
        desc,
        serde_path_to_error::Deserializer::new(de, &mut track),
        &options,
    )
    .map_err(|e| {
        let path = track.path().to_string();
        let path = if path == "." { String::new() } else { path };
        WireError::decode(path, without_position(&e.to_string()))
    })?;
    known_enums(&msg, &mut String::new())?;
    T::decode(prost::Message::encode_to_vec(&msg).as_slice()).map_err(|e| WireError::decode("", e))
}

/// A decoder's message without serde_json's ` at line L column C` suffix: the
/// path names the field, and a message read from a value has no position.
fn without_position(message: &str) -> &str {
    let Some(i) = message.rfind(" at line ") else {
        return message;
    };
    let rest = &message[i + " at line ".len()..];
    let is_position = rest.split_once(" column ").is_some_and(|(l, c)| {
        !l.is_empty()
            && !c.is_empty()
            && l.bytes().all(|b| b.is_ascii_digit())
            && c.bytes().all(|b| b.is_ascii_digit())
    });
    if is_position {
        &message[..i]
    } else {
        message
    }
}

/// Refuses an enum number the proto does not name, as pbjson's decoder does:
/// the generated messages could not encode it again as ProtoJSON.
fn known_enums(msg: &DynamicMessage, path: &mut String) -> Result<(), WireError> {
    use prost_reflect::{Kind, Value as V};
    fn check(v: &V, kind: &Kind, path: &mut String) -> Result<(), WireError> {
        match (v, kind) {
            (V::EnumNumber(n), Kind::Enum(e)) if e.get_value(*n).is_none() => Err(
                WireError::decode(path.clone(), format!("unknown {} value {n}", e.full_name())),
            ),
            (V::Message(m), _) => known_enums(m, path),
            (V::List(items), _) => items.iter().try_for_each(|i| check(i, kind, path)),
            (V::Map(entries), Kind::Message(entry)) => {
                let value_kind = entry.map_entry_value_field().kind();
                entries
                    .values()
                    .try_for_each(|i| check(i, &value_kind, path))
            }
            _ => Ok(()),
        }
    }
    for (field, value) in msg.fields() {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(field.json_name());
        check(value, &field.kind(), path)?;
        path.truncate(len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::a2a::pb;
    use crate::wkt::{self, value::Kind};
    use serde_json::json;

    #[test]
    fn timestamps_end_in_z() {
        let s = pb::TaskStatus {
            state: pb::TaskState::Working as i32,
            message: None,
            timestamp: Some(wkt::Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
        };
        let v = to_value(&s).unwrap();
        assert_eq!(v["timestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(v["state"], "TASK_STATE_WORKING");
    }

    #[test]
    fn numbers_in_structs_are_integers_and_user_strings_are_kept() {
        let t = pb::Task {
            id: "t".into(),
            context_id: "c".into(),
            status: Some(pb::TaskStatus {
                state: pb::TaskState::Completed as i32,
                message: None,
                timestamp: Some(wkt::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 5_000_000,
                }),
            }),
            metadata: Some(wkt::Struct::from(
                json!({"n": 3, "half": 0.5, "timestamp": "2020-01-01T00:00:00+00:00", "quote": "a\"b"})
                    .as_object()
                    .unwrap(),
            )),
            ..Default::default()
        };
        let text = to_string(&t).unwrap();
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["status"]["timestamp"], "2023-11-14T22:13:20.005Z");
        assert_eq!(parsed["metadata"]["n"], json!(3));
        assert_eq!(parsed["metadata"]["half"], json!(0.5));
        // User data is never rewritten, even under a timestamp key.
        assert_eq!(parsed["metadata"]["timestamp"], "2020-01-01T00:00:00+00:00");
        assert_eq!(parsed["metadata"]["quote"], "a\"b");
        assert_eq!(from_str::<pb::Task>(&text).unwrap(), t);
    }

    #[test]
    fn wrong_field_is_named() {
        let e = from_value::<pb::SendMessageRequest>(json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"historyLength": "many"}
        }))
        .unwrap_err();
        match e {
            WireError::Decode { path, .. } => assert_eq!(path, "configuration.historyLength"),
            other => panic!("{other:?}"),
        }
        // The same message from text and from a value: no text position.
        let text = r#"{"id": "t", "historyLength": "x", "tenant": null}"#;
        let from_text = from_str::<pb::GetTaskRequest>(text)
            .unwrap_err()
            .to_string();
        let from_value =
            from_value::<pb::GetTaskRequest>(serde_json::from_str(text).unwrap()).unwrap_err();
        assert_eq!(from_text, from_value.to_string());
        assert!(!from_text.contains(" at line "), "{from_text}");
        assert_eq!(without_position("x at line 1 column 32"), "x");
        assert_eq!(without_position("x at line one"), "x at line one");
    }

    #[test]
    fn snake_case_nulls_and_null_data_follow_protojson() {
        let r: pb::GetTaskRequest = from_value(json!({
            "id": "t", "history_length": 2, "tenant": null
        }))
        .unwrap();
        assert_eq!(r.history_length, Some(2));
        assert_eq!(r.tenant, "");
        // A null `google.protobuf.Value` is the null value, in a oneof too.
        let r: pb::SendMessageRequest = from_str(
            r#"{"message": {"messageId": "m", "role": "ROLE_USER", "metadata": null,
                "parts": [{"text": "x"}, {"data": null}, {"data": {"a": 1}}]}}"#,
        )
        .unwrap();
        let m = r.message.unwrap();
        assert!(m.metadata.is_none());
        assert!(matches!(
            &m.parts[1].content,
            Some(pb::part::Content::Data(wkt::Value {
                kind: Some(Kind::NullValue(_))
            }))
        ));
        assert!(matches!(
            &m.parts[2].content,
            Some(pb::part::Content::Data(_))
        ));
        // Enum numbers the proto does not name are refused, as pbjson refuses them.
        let e = from_str::<pb::ListTasksRequest>(r#"{"status": 18, "tenant": null}"#).unwrap_err();
        assert!(
            matches!(e, WireError::Decode { ref path, .. } if path == "status"),
            "{e:?}"
        );
        assert!(from_str::<pb::SendMessageRequest>(
            r#"{"message": {"role": 4, "parts": [], "metadata": null}}"#
        )
        .is_err());
        // Unknown fields are ignored by both paths.
        let text = r#"{"id": "t", "whatever": {"x": 1}}"#;
        assert_eq!(
            from_str_without_nulls::<pb::GetTaskRequest>(text).unwrap(),
            from_value::<pb::GetTaskRequest>(serde_json::from_str(text).unwrap()).unwrap()
        );
    }
}

/// A `ListTasksResponse` written with all four of its fields, defaults
/// included: the proto marks each REQUIRED, and A2A 1.0 §3.1.4 says
/// `nextPageToken` MUST always be present, `""` on the last page. pbjson's
/// serde leaves default values out (an empty `tasks`, `nextPageToken` and a
/// zero `totalSize` would be missing), so this writes the same JSON keys
/// itself, each value through the generated serde.
#[derive(Clone, Copy, Debug)]
pub struct ListTasksResponseJson<'a>(pub &'a super::pb::ListTasksResponse);

impl Serialize for ListTasksResponseJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let r = self.0;
        let mut st = s.serialize_struct("ListTasksResponse", 4)?;
        st.serialize_field("tasks", &r.tasks)?;
        st.serialize_field("nextPageToken", &r.next_page_token)?;
        st.serialize_field("pageSize", &r.page_size)?;
        st.serialize_field("totalSize", &r.total_size)?;
        st.end()
    }
}
