//! Conversions between core types and the generated `lf.a2a.v1` messages, through
//! the tables of `taskwire_vocab::a2a`.

use serde_json::{Map, Value};
use taskwire_core::event::{Event, EventKind};
use taskwire_core::types::{Artifact, Message, Metadata, Part, Task, TaskState, Timestamp};
use taskwire_vocab::a2a::{self as vocab, A2aPartContent};

use crate::error::{A2aError, Result};
use crate::pb;
use taskwire_wire::wkt;

/// A JSON value as a `google.protobuf.Value`.
pub fn value_to_pb(v: &Value) -> wkt::Value {
    wkt::Value::from(v)
}

/// A `google.protobuf.Value` as JSON (integral numbers become integers).
pub fn value_from_pb(v: &wkt::Value) -> Value {
    Value::from(v)
}

/// A JSON object as a `google.protobuf.Struct`.
pub fn map_to_struct(m: &Map<String, Value>) -> wkt::Struct {
    wkt::Struct::from(m)
}

/// A `google.protobuf.Struct` as a JSON object (its fields in key order).
pub fn struct_to_map(s: &wkt::Struct) -> Map<String, Value> {
    Map::from(s)
}

fn metadata_to_pb(m: &Metadata) -> Option<wkt::Struct> {
    (!m.is_empty()).then(|| map_to_struct(m))
}

/// A core timestamp as a protobuf one.
pub fn timestamp_to_pb(t: Timestamp) -> wkt::Timestamp {
    t.into()
}

/// A protobuf timestamp as a core one.
pub fn timestamp_from_pb(t: wkt::Timestamp, field: &str) -> Result<Timestamp> {
    Timestamp::try_from(t).map_err(|e| A2aError::invalid_params(field, e))
}

/// A core part as an A2A part (losses: [`vocab::part_to_a2a`]).
pub fn part_to_pb(p: &Part) -> pb::Part {
    let (a, _losses) = vocab::part_to_a2a(p);
    let content = a.content.map(|c| match c {
        A2aPartContent::Text(t) => pb::part::Content::Text(t),
        A2aPartContent::Raw(b) => pb::part::Content::Raw(b),
        A2aPartContent::Url(u) => pb::part::Content::Url(u),
        A2aPartContent::Data(d) => pb::part::Content::Data(value_to_pb(&d)),
    });
    pb::Part {
        content,
        metadata: metadata_to_pb(&a.metadata),
        filename: a.filename,
        media_type: a.media_type,
    }
}

/// An A2A part as a core part; `index` names it in errors.
pub fn part_from_pb(p: pb::Part, index: usize) -> Result<Part> {
    let content = p.content.map(|c| match c {
        pb::part::Content::Text(t) => A2aPartContent::Text(t),
        pb::part::Content::Raw(b) => A2aPartContent::Raw(b),
        pb::part::Content::Url(u) => A2aPartContent::Url(u),
        pb::part::Content::Data(d) => A2aPartContent::Data(value_from_pb(&d)),
    });
    Ok(vocab::part_from_a2a(
        vocab::A2aPart {
            content,
            media_type: p.media_type,
            filename: p.filename,
            metadata: p.metadata.as_ref().map(struct_to_map).unwrap_or_default(),
        },
        index,
    )?)
}

/// A core message as an A2A message of a task. Loses the core's receive/commit
/// timestamps ([`vocab::LOSS_MESSAGE_TIMESTAMPS`]).
pub fn message_to_pb(m: &Message, task_id: &str, context_id: &str) -> pb::Message {
    pb::Message {
        message_id: m.message_id.clone(),
        context_id: context_id.to_string(),
        task_id: task_id.to_string(),
        role: vocab::role_to_a2a(m.role),
        parts: m.parts.iter().map(part_to_pb).collect(),
        metadata: metadata_to_pb(&m.metadata),
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

/// A direct reply (no task) as an A2A message.
pub fn direct_message_to_pb(m: &Message, context_id: &str) -> pb::Message {
    message_to_pb(m, "", context_id)
}

/// An A2A input message as a core message. Drops `extensions` and
/// `referenceTaskIds` ([`vocab::LOSS_MESSAGE_EXTENSIONS`]).
pub fn message_from_pb(m: pb::Message) -> Result<Message> {
    if m.message_id.is_empty() {
        return Err(A2aError::invalid_params("message.messageId", "is required"));
    }
    if m.parts.is_empty() {
        return Err(A2aError::invalid_params(
            "message.parts",
            "must hold at least one part",
        ));
    }
    let role = vocab::role_from_a2a(m.role)?;
    let parts = m
        .parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| part_from_pb(p, i))
        .collect::<Result<Vec<_>>>()?;
    Ok(Message {
        message_id: m.message_id,
        role,
        parts,
        metadata: m.metadata.as_ref().map(struct_to_map).unwrap_or_default(),
        received_at: None,
        committed_at: None,
    })
}

/// A core artifact (or chunk) as an A2A artifact.
pub fn artifact_to_pb(a: &Artifact) -> pb::Artifact {
    pb::Artifact {
        artifact_id: a.artifact_id.clone(),
        name: a.name.clone().unwrap_or_default(),
        description: a.description.clone().unwrap_or_default(),
        parts: a.parts.iter().map(part_to_pb).collect(),
        metadata: metadata_to_pb(&a.metadata),
        extensions: Vec::new(),
    }
}

/// The A2A status of a task.
pub fn status_to_pb(t: &Task) -> pb::TaskStatus {
    let (state, _loss) = vocab::task_state(t);
    let id = t.id.as_str();
    pb::TaskStatus {
        state: state.number(),
        message: t
            .status_message
            .as_ref()
            .map(|m| message_to_pb(m, id, &t.context_id)),
        timestamp: Some(timestamp_to_pb(t.state_changed_at)),
    }
}

/// How much of a task to show.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskView {
    /// At most this many of the most recent history messages (None: all).
    pub history_length: Option<usize>,
    /// Leave artifacts out.
    pub without_artifacts: bool,
    /// A2A 1.1: write the task's `generation` (its event-log sequence).
    pub generation: bool,
}

/// Validates an optional `historyLength`.
pub fn history_length(v: Option<i32>, field: &str) -> Result<Option<usize>> {
    match v {
        None => Ok(None),
        Some(n) if n < 0 => Err(A2aError::invalid_params(field, "must not be negative")),
        Some(n) => Ok(Some(n as usize)),
    }
}

/// A core task as an A2A task.
pub fn task_to_pb(t: &Task, view: TaskView) -> pb::Task {
    let id = t.id.as_str();
    let skip = view
        .history_length
        .map_or(0, |n| t.history.len().saturating_sub(n));
    pb::Task {
        id: id.to_string(),
        context_id: t.context_id.clone(),
        status: Some(status_to_pb(t)),
        artifacts: if view.without_artifacts {
            Vec::new()
        } else {
            t.artifacts.iter().map(artifact_to_pb).collect()
        },
        history: t
            .history
            .iter()
            .skip(skip)
            .map(|m| message_to_pb(m, id, &t.context_id))
            .collect(),
        metadata: metadata_to_pb(&t.metadata),
        generation: generation_of(t.last_seq, view.generation),
    }
}

/// A2A 1.1's `generation` of a task or an event: the sequence number of its
/// last event in the task's log (the store's, the same on every node and
/// binding); 0, so absent, when the answer is not 1.1.
fn generation_of(seq: u64, on: bool) -> i64 {
    if on {
        i64::try_from(seq).unwrap_or(i64::MAX)
    } else {
        0
    }
}

/// Tracks the state a stream has shown, to turn log events into stream frames.
#[derive(Clone, Debug)]
pub struct FrameBuilder {
    task_id: String,
    context_id: String,
    state: TaskState,
    generation: bool,
}

impl FrameBuilder {
    /// A builder for a task's frames, starting from the state the client has seen.
    pub fn new(task: &Task) -> Self {
        Self {
            task_id: task.id.as_str().to_string(),
            context_id: task.context_id.clone(),
            state: task.state,
            generation: false,
        }
    }

    /// Frames that carry A2A 1.1's `generation` (the event's sequence number).
    pub fn with_generation(mut self, on: bool) -> Self {
        self.generation = on;
        self
    }

    /// The state after the events seen so far.
    pub fn state(&self) -> TaskState {
        self.state
    }

    /// The stream frame for a log event, if A2A shows it: status changes become
    /// status updates, artifact chunks artifact updates, and agent messages a
    /// status update carrying the message. Steps, state snapshots, input bookkeeping
    /// and user messages have no A2A frame.
    pub fn frame(&mut self, ev: &Event) -> Option<pb::StreamResponse> {
        use pb::stream_response::Payload;
        use vocab::A2aFrame;
        // Which events A2A shows is `taskwire_vocab::a2a::frame_of`.
        let payload = match (vocab::frame_of(&ev.kind).0?, &ev.kind) {
            (A2aFrame::StatusUpdate, EventKind::Status { to, message, .. }) => {
                self.state = *to;
                Payload::StatusUpdate(self.status_update(*to, message.as_deref(), ev.at, ev.seq))
            }
            (A2aFrame::StatusMessage, EventKind::Message { message, .. }) => {
                Payload::StatusUpdate(self.status_update(self.state, Some(message), ev.at, ev.seq))
            }
            (
                A2aFrame::ArtifactUpdate,
                EventKind::Artifact {
                    artifact,
                    append,
                    last_chunk,
                },
            ) => Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                task_id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                artifact: Some(artifact_to_pb(artifact)),
                append: *append,
                last_chunk: *last_chunk,
                metadata: None,
                generation: generation_of(ev.seq, self.generation),
            }),
            _ => return None,
        };
        Some(pb::StreamResponse {
            payload: Some(payload),
        })
    }

    fn status_update(
        &self,
        state: TaskState,
        message: Option<&Message>,
        at: Timestamp,
        seq: u64,
    ) -> pb::TaskStatusUpdateEvent {
        pb::TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: Some(pb::TaskStatus {
                state: vocab::state_to_a2a(state).number(),
                message: message.map(|m| message_to_pb(m, &self.task_id, &self.context_id)),
                timestamp: Some(timestamp_to_pb(at)),
            }),
            metadata: None,
            generation: generation_of(seq, self.generation),
        }
    }
}

/// A stream frame holding a task snapshot.
pub fn task_frame(t: &Task, view: TaskView) -> pb::StreamResponse {
    pb::StreamResponse {
        payload: Some(pb::stream_response::Payload::Task(task_to_pb(t, view))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use taskwire_core::event::EventKind;
    use taskwire_core::TaskId;

    fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            task_id: TaskId::new(),
            seq,
            version: seq,
            at: Utc::now(),
            kind,
        }
    }

    fn task() -> Task {
        let now = Utc::now();
        serde_json::from_value(serde_json::json!({
            "id": TaskId::new(), "contextId": "ctx", "tenant": "t", "owner": "o",
            "responsibleUser": "o", "agent": "a", "state": "submitted",
            "stateChangedAt": now, "createdAt": now, "updatedAt": now, "version": 1,
            "lastSeq": 2, "turns": 0, "artifacts": [],
            "history": [
                {"messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "a"}]},
                {"messageId": "m2", "role": "agent", "parts": [{"kind": "text", "text": "b"}]},
                {"messageId": "m3", "role": "user", "parts": [{"kind": "text", "text": "c"}]}
            ]
        }))
        .unwrap()
    }

    #[test]
    fn history_length_keeps_the_most_recent() {
        let t = task();
        let v = task_to_pb(
            &t,
            TaskView {
                history_length: Some(2),
                without_artifacts: false,
                generation: false,
            },
        );
        let ids: Vec<&str> = v.history.iter().map(|m| m.message_id.as_str()).collect();
        assert_eq!(ids, ["m2", "m3"]);
        assert!(v
            .history
            .iter()
            .all(|m| m.task_id == t.id.as_str() && m.context_id == "ctx"));
        assert!(history_length(Some(-1), "x").is_err());
    }

    #[test]
    fn frames_per_event_kind() {
        use pb::stream_response::Payload;
        let t = task();
        let mut b = FrameBuilder::new(&t);
        let f = b.frame(&event(
            3,
            EventKind::Status {
                from: TaskState::Submitted,
                to: TaskState::Working,
                message: None,
                cause: None,
                error: None,
            },
        ));
        assert!(
            matches!(f.and_then(|f| f.payload), Some(Payload::StatusUpdate(u)) if u.status.as_ref().map(|s| s.state) == Some(2))
        );
        assert_eq!(b.state(), TaskState::Working);
        let agent_msg = EventKind::Message {
            message: Box::new(Message::agent_text("thinking")),
            queued: false,
        };
        match b.frame(&event(4, agent_msg)).and_then(|f| f.payload) {
            Some(Payload::StatusUpdate(u)) => {
                let st = u.status.unwrap();
                assert_eq!(st.state, 2);
                assert_eq!(st.message.unwrap().role, 2);
            }
            other => panic!("{other:?}"),
        }
        let user_msg = EventKind::Message {
            message: Box::new(Message::user_text("hi")),
            queued: true,
        };
        assert!(b.frame(&event(5, user_msg)).is_none());
        assert!(b
            .frame(&event(6, EventKind::TurnStarted { turn: 1 }))
            .is_none());
        let art = EventKind::Artifact {
            artifact: Box::new(Artifact {
                artifact_id: "a".into(),
                name: Some("n".into()),
                description: None,
                parts: vec![Part::text("x")],
                metadata: Default::default(),
                complete: false,
            }),
            append: true,
            last_chunk: false,
        };
        match b.frame(&event(7, art)).and_then(|f| f.payload) {
            Some(Payload::ArtifactUpdate(u)) => {
                assert!(u.append && !u.last_chunk);
                assert_eq!(u.artifact.unwrap().name, "n");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn values_round_trip() {
        let v = serde_json::json!({"a": [1, 2.5, null, true, "s", {"b": {}}]});
        let Value::Object(m) = &v else { panic!() };
        assert_eq!(Value::Object(struct_to_map(&map_to_struct(m))), v);
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1.0e20f64..1.0e20).prop_map(Value::from),
            (-100i32..100).prop_map(|i| Value::from(f64::from(i))),
            "[a-z]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// A part survives the real protobuf trip exactly when the vocabulary
        /// reports no loss for it (`taskwire_vocab::a2a::part_to_a2a`).
        #[test]
        fn part_trip_matches_the_named_losses(
            data in json_value(),
            meta in proptest::collection::btree_map("[a-z]{1,3}", json_value(), 0..2),
            media in proptest::option::of(proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                "[a-z]{1,4}/[a-z]{1,4}"
            ]),
        ) {
            let mut p = Part::data(data);
            p.metadata = meta.into_iter().collect();
            p.media_type = media;
            let (_, losses) = vocab::part_to_a2a(&p);
            let back = part_from_pb(part_to_pb(&p), 0).unwrap();
            proptest::prop_assert_eq!(losses.is_empty(), back == p, "{:?} -> {:?}", losses, back);
        }
    }
}
