//! Protobuf framing (`application/vnd.ag-ui.event+proto`): each event is a 4-byte
//! big-endian length followed by an `ag_ui.Event` message (proto/agui/events.proto).
//!
//! Field for field this follows what `@ag-ui/proto`'s `encode()` writes: the
//! outcome of `RUN_FINISHED` is a string plus a repeated `interrupts`, JSON Patch
//! operations carry an enum `op`, activity messages in a snapshot carry
//! `activityType` and `activityContent`.

use prost::Message as _;
use serde_json::Value;
use taskwire_wire::wkt;

use crate::wire::{Event, EventBody, Interrupt, Outcome};
use crate::AguiError;

/// The generated types, from the wire layer.
pub use taskwire_wire::agui::pb;

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.ag-ui.event+proto";

/// A JSON value as a `google.protobuf.Value`.
pub fn value(v: &Value) -> wkt::Value {
    wkt::Value::from(v)
}

/// A JSON object as a `google.protobuf.Struct` (anything else is an empty struct).
pub fn structure(v: &Value) -> wkt::Struct {
    v.as_object().map(wkt::Struct::from).unwrap_or_default()
}

fn patch(v: &Value) -> Vec<pb::JsonPatchOperation> {
    use pb::JsonPatchOperationType as Op;
    v.as_array()
        .map(|ops| {
            ops.iter()
                .map(|o| {
                    let op = match o.get("op").and_then(Value::as_str).unwrap_or("") {
                        "remove" => Op::Remove,
                        "replace" => Op::Replace,
                        "move" => Op::Move,
                        "copy" => Op::Copy,
                        "test" => Op::Test,
                        _ => Op::Add,
                    };
                    pb::JsonPatchOperation {
                        op: op as i32,
                        path: o
                            .get("path")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        from: o.get("from").and_then(Value::as_str).map(str::to_string),
                        value: o.get("value").map(value),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

fn message(m: &Value) -> pb::Message {
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    let role = s("role").unwrap_or_default();
    let mut out = pb::Message {
        id: s("id").unwrap_or_default(),
        role: role.clone(),
        name: s("name"),
        ..Default::default()
    };
    if role == crate::wire::role::ACTIVITY {
        out.activity_type = s("activityType");
        out.activity_content = m.get("content").map(structure);
    } else {
        out.content = s("content");
    }
    out
}

fn interrupt(i: &Interrupt) -> pb::Interrupt {
    pb::Interrupt {
        id: i.id.clone(),
        reason: i.reason.clone(),
        message: i.message.clone(),
        tool_call_id: None,
        response_schema: i.response_schema.as_ref().map(value),
        expires_at: i.expires_at.clone(),
        metadata: i.metadata.as_ref().map(value),
        subagent_run_id: None,
    }
}

fn base(t: pb::EventType, e: &Event) -> Option<pb::BaseEvent> {
    Some(pb::BaseEvent {
        r#type: t as i32,
        timestamp: e.timestamp,
        raw_event: None,
        metadata: None,
    })
}

/// The protobuf message of an event.
pub fn to_pb(e: &Event) -> pb::Event {
    use pb::event::Event as E;
    use pb::EventType as T;
    let ev = match &e.body {
        EventBody::RunStarted {
            thread_id,
            run_id,
            protocol_version,
            parent_run_id,
        } => E::RunStarted(pb::RunStartedEvent {
            base_event: base(T::RunStarted, e),
            thread_id: thread_id.clone(),
            run_id: run_id.clone(),
            parent_run_id: parent_run_id.clone(),
            input: None,
            protocol_version: protocol_version.clone(),
        }),
        EventBody::RunFinished {
            thread_id,
            run_id,
            result,
            outcome,
        } => {
            let (outcome, interrupts) = match outcome {
                None => (String::new(), Vec::new()),
                Some(Outcome::Success) => ("success".to_string(), Vec::new()),
                Some(Outcome::Cancelled) => ("cancelled".to_string(), Vec::new()),
                Some(Outcome::Interrupt { interrupts }) => (
                    "interrupt".to_string(),
                    interrupts.iter().map(interrupt).collect(),
                ),
            };
            E::RunFinished(pb::RunFinishedEvent {
                base_event: base(T::RunFinished, e),
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                result: result.as_ref().map(value),
                outcome,
                interrupts,
                usage: Vec::new(),
                pending_tool_call_ids: Vec::new(),
            })
        }
        EventBody::RunError { message, code } => E::RunError(pb::RunErrorEvent {
            base_event: base(T::RunError, e),
            code: code.clone(),
            message: message.clone(),
            usage: Vec::new(),
        }),
        EventBody::StepStarted { step_name } => E::StepStarted(pb::StepStartedEvent {
            base_event: base(T::StepStarted, e),
            step_name: step_name.clone(),
            subagent_run_id: None,
        }),
        EventBody::StepFinished { step_name } => E::StepFinished(pb::StepFinishedEvent {
            base_event: base(T::StepFinished, e),
            step_name: step_name.clone(),
            subagent_run_id: None,
        }),
        EventBody::TextMessageStart { message_id, role } => {
            E::TextMessageStart(pb::TextMessageStartEvent {
                base_event: base(T::TextMessageStart, e),
                message_id: message_id.clone(),
                role: role.clone(),
                name: None,
                subagent_run_id: None,
            })
        }
        EventBody::TextMessageContent { message_id, delta } => {
            E::TextMessageContent(pb::TextMessageContentEvent {
                base_event: base(T::TextMessageContent, e),
                message_id: message_id.clone(),
                delta: delta.clone(),
                subagent_run_id: None,
            })
        }
        EventBody::TextMessageEnd { message_id } => E::TextMessageEnd(pb::TextMessageEndEvent {
            base_event: base(T::TextMessageEnd, e),
            message_id: message_id.clone(),
            subagent_run_id: None,
        }),
        EventBody::ToolCallStart {
            tool_call_id,
            tool_call_name,
        } => E::ToolCallStart(pb::ToolCallStartEvent {
            base_event: base(T::ToolCallStart, e),
            tool_call_id: tool_call_id.clone(),
            tool_call_name: tool_call_name.clone(),
            parent_message_id: None,
            subagent_run_id: None,
        }),
        EventBody::ToolCallArgs {
            tool_call_id,
            delta,
        } => E::ToolCallArgs(pb::ToolCallArgsEvent {
            base_event: base(T::ToolCallArgs, e),
            tool_call_id: tool_call_id.clone(),
            delta: delta.clone(),
            subagent_run_id: None,
        }),
        EventBody::ToolCallEnd { tool_call_id } => E::ToolCallEnd(pb::ToolCallEndEvent {
            base_event: base(T::ToolCallEnd, e),
            tool_call_id: tool_call_id.clone(),
            subagent_run_id: None,
        }),
        EventBody::ReasoningMessageStart { message_id } => {
            E::ReasoningMessageStart(pb::ReasoningMessageStartEvent {
                base_event: base(T::ReasoningMessageStart, e),
                subagent_run_id: None,
                message_id: message_id.clone(),
                role: "reasoning".into(),
            })
        }
        EventBody::ReasoningMessageContent { message_id, delta } => {
            E::ReasoningMessageContent(pb::ReasoningMessageContentEvent {
                base_event: base(T::ReasoningMessageContent, e),
                subagent_run_id: None,
                message_id: message_id.clone(),
                delta: delta.clone(),
            })
        }
        EventBody::ReasoningMessageEnd { message_id } => {
            E::ReasoningMessageEnd(pb::ReasoningMessageEndEvent {
                base_event: base(T::ReasoningMessageEnd, e),
                subagent_run_id: None,
                message_id: message_id.clone(),
            })
        }
        EventBody::StateSnapshot { snapshot } => E::StateSnapshot(pb::StateSnapshotEvent {
            base_event: base(T::StateSnapshot, e),
            snapshot: Some(value(snapshot)),
            subagent_run_id: None,
        }),
        EventBody::StateDelta { delta } => E::StateDelta(pb::StateDeltaEvent {
            base_event: base(T::StateDelta, e),
            delta: patch(delta),
            subagent_run_id: None,
        }),
        EventBody::MessagesSnapshot { messages } => {
            E::MessagesSnapshot(pb::MessagesSnapshotEvent {
                base_event: base(T::MessagesSnapshot, e),
                messages: messages.iter().map(message).collect(),
            })
        }
        EventBody::ActivitySnapshot {
            message_id,
            activity_type,
            content,
            replace,
        } => E::ActivitySnapshot(pb::ActivitySnapshotEvent {
            base_event: base(T::ActivitySnapshot, e),
            subagent_run_id: None,
            message_id: message_id.clone(),
            activity_type: activity_type.clone(),
            content: Some(structure(content)),
            replace: *replace,
        }),
        EventBody::ActivityDelta {
            message_id,
            activity_type,
            patch: p,
        } => E::ActivityDelta(pb::ActivityDeltaEvent {
            base_event: base(T::ActivityDelta, e),
            subagent_run_id: None,
            message_id: message_id.clone(),
            activity_type: activity_type.clone(),
            patch: patch(p),
        }),
        EventBody::Custom { name, value: v } => E::Custom(pb::CustomEvent {
            base_event: base(T::Custom, e),
            name: name.clone(),
            value: Some(value(v)),
            subagent_run_id: None,
        }),
    };
    pb::Event { event: Some(ev) }
}

/// One frame: the 4-byte big-endian length, then the encoded event.
pub fn encode_frame(e: &Event) -> Vec<u8> {
    let body = to_pb(e).encode_to_vec();
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Splits a body of frames back into events (tests and tooling). Fails on a
/// truncated frame or a message that does not decode.
pub fn decode_frames(mut body: &[u8]) -> Result<Vec<pb::Event>, AguiError> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 4 {
            return Err(AguiError::Frame("truncated length prefix"));
        }
        let len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
        let rest = &body[4..];
        if rest.len() < len {
            return Err(AguiError::Frame("truncated frame"));
        }
        out.push(pb::Event::decode(&rest[..len])?);
        body = &rest[len..];
    }
    Ok(out)
}

/// True if the `Accept` header prefers the protobuf media type over SSE.
pub fn prefers_proto(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    let mut q_proto = 0.0f32;
    let mut q_sse = 0.0f32;
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            MEDIA_TYPE => q_proto = q_proto.max(q),
            crate::sse::MEDIA_TYPE | "text/*" | "*/*" => q_sse = q_sse.max(q),
            _ => {}
        }
    }
    q_proto > 0.0 && q_proto > q_sse
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_length_prefixed_and_decode() {
        let e = Event::at(
            EventBody::RunStarted {
                thread_id: "t".into(),
                run_id: "r".into(),
                protocol_version: Some("1.0".into()),
                parent_run_id: None,
            },
            7,
        );
        let f = encode_frame(&e);
        assert_eq!(
            u32::from_be_bytes([f[0], f[1], f[2], f[3]]) as usize,
            f.len() - 4
        );
        // Oneof arm 12 (run_started), length-delimited: tag byte 0x62.
        assert_eq!(f[4], 0x62);
        let back = decode_frames(&f).unwrap();
        let Some(pb::event::Event::RunStarted(rs)) = &back[0].event else {
            panic!("{back:?}");
        };
        assert_eq!(rs.thread_id, "t");
        assert_eq!(rs.protocol_version.as_deref(), Some("1.0"));
        assert_eq!(
            rs.base_event.as_ref().unwrap().r#type,
            pb::EventType::RunStarted as i32
        );
        assert!(decode_frames(&f[..f.len() - 1]).is_err());
    }

    #[test]
    fn interrupt_outcome_is_a_string_and_a_list() {
        let e = Event::new(EventBody::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Some(Outcome::Interrupt {
                interrupts: vec![Interrupt {
                    id: "x".into(),
                    reason: "input_required".into(),
                    message: Some("?".into()),
                    response_schema: Some(json!({"type": "object"})),
                    expires_at: None,
                    metadata: None,
                }],
            }),
        });
        let Some(pb::event::Event::RunFinished(rf)) = to_pb(&e).event else {
            panic!()
        };
        assert_eq!(rf.outcome, "interrupt");
        assert_eq!(rf.interrupts[0].reason, "input_required");
    }

    #[test]
    fn accept_negotiation() {
        assert!(!prefers_proto(None));
        assert!(!prefers_proto(Some("text/event-stream")));
        assert!(prefers_proto(Some(MEDIA_TYPE)));
        assert!(prefers_proto(Some(
            "application/vnd.ag-ui.event+proto, text/event-stream;q=0.5"
        )));
        assert!(!prefers_proto(Some(
            "application/vnd.ag-ui.event+proto;q=0.5, text/event-stream"
        )));
        assert!(!prefers_proto(Some("*/*")));
    }
}
