//! The inbound direction for bridged tasks: what an upstream agent's protocol
//! values mean in core terms, for the bridge's upstream executors
//! (`taskwire-bridge`). The A2A view ([`crate::a2a`]) maps core → A2A for the
//! adapters; this module maps an upstream A2A task's states, parts, messages
//! and artifacts back to the core, and the core's input (messages, answers to
//! input requests) to what is sent upstream.
//!
//! Wire types are the wire layer's `lf.a2a.v1` messages (`taskwire_wire::a2a::pb`).

pub mod agui;
pub mod mcp;

use serde_json::{json, Map, Value};
use taskwire_core::types::{InputAction, InputResponse, Message, Part, Role};
use taskwire_wire::a2a::pb;
use taskwire_wire::wkt;

use crate::a2a::{part_content_to_a2a, part_from_a2a, A2aPart, A2aPartContent};
use crate::{Loss, VocabError};

/// The task metadata key an A2A caller names the upstream with, on a bridge
/// to several (`--upstream NAME=URL`): the request's `metadata`
/// `{"skill": "NAME"}` (an MCP caller names it by calling the tool `NAME`).
pub const SKILL_METADATA_KEY: &str = "skill";

/// What the state of an upstream A2A task means for the bridged downstream task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpstreamState {
    /// SUBMITTED or WORKING: the upstream is still at it; keep reading.
    Running,
    /// INPUT_REQUIRED: the downstream task asks its caller for input.
    InputRequired,
    /// AUTH_REQUIRED: the downstream task waits for a provider authorisation.
    AuthRequired,
    /// COMPLETED: the downstream turn completes.
    Completed,
    /// FAILED: the downstream task fails (an agent fault).
    Failed,
    /// CANCELED: the downstream task is canceled.
    Canceled,
    /// REJECTED: the downstream task is rejected.
    Rejected,
    /// UNSPECIFIED or a number this revision does not know: no meaning.
    Unknown,
}

impl UpstreamState {
    /// True for the states that end the upstream task.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            UpstreamState::Completed
                | UpstreamState::Failed
                | UpstreamState::Canceled
                | UpstreamState::Rejected
        )
    }

    /// True for the states in which the upstream waits for the caller.
    pub fn is_interrupted(self) -> bool {
        matches!(
            self,
            UpstreamState::InputRequired | UpstreamState::AuthRequired
        )
    }

    /// True when the downstream turn ends on this state.
    pub fn ends_turn(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

/// The meaning of an upstream A2A task state.
pub fn upstream_state_of_a2a(s: pb::TaskState) -> UpstreamState {
    match s {
        pb::TaskState::Submitted | pb::TaskState::Working => UpstreamState::Running,
        pb::TaskState::InputRequired => UpstreamState::InputRequired,
        pb::TaskState::AuthRequired => UpstreamState::AuthRequired,
        pb::TaskState::Completed => UpstreamState::Completed,
        pb::TaskState::Failed => UpstreamState::Failed,
        pb::TaskState::Canceled => UpstreamState::Canceled,
        pb::TaskState::Rejected => UpstreamState::Rejected,
        pb::TaskState::Unspecified => UpstreamState::Unknown,
    }
}

/// The meaning of an upstream A2A task state given as its wire number (numbers
/// a newer upstream may send read as [`UpstreamState::Unknown`]).
pub fn upstream_state_of_a2a_number(n: i32) -> UpstreamState {
    pb::TaskState::try_from(n)
        .map(upstream_state_of_a2a)
        .unwrap_or(UpstreamState::Unknown)
}

/// The provider name under which the downstream task waits when an A2A upstream
/// is AUTH_REQUIRED ([`LOSS_UPSTREAM_AUTH_PROVIDER`]).
pub const UPSTREAM_AUTH_PROVIDER: &str = "upstream";

/// Lost: an A2A AUTH_REQUIRED names no provider, so the downstream task waits for
/// the provider [`UPSTREAM_AUTH_PROVIDER`]; the upstream's own words are only in
/// the status message.
pub const LOSS_UPSTREAM_AUTH_PROVIDER: Loss = Loss(
    "an upstream A2A AUTH_REQUIRED names no provider: downstream it waits for the provider `upstream`, the upstream's status message says what to authorise",
);
/// Lost: an upstream INPUT_REQUIRED carries no schema, so the downstream input
/// request asks for one string `answer`.
pub const LOSS_UPSTREAM_INPUT_SCHEMA: Loss = Loss(
    "an upstream A2A INPUT_REQUIRED carries no answer schema: downstream it asks for one string `answer`",
);
/// Lost: a declined or dismissed downstream input request is sent upstream as a
/// data part naming the action; A2A has no decline.
pub const LOSS_DECLINE_AS_DATA: Loss = Loss(
    "a declined or dismissed input request is sent upstream as a data part {\"action\": …}; A2A has no decline",
);
/// Lost: the upstream's task history, extensions and task metadata are not
/// copied; only status messages, agent messages and artifacts cross.
pub const LOSS_UPSTREAM_HISTORY: Loss = Loss(
    "the upstream task's history, extensions and metadata are not copied; status messages, agent messages and artifacts are",
);

/// The schema of the answer to the input request an upstream INPUT_REQUIRED
/// becomes: one string property `answer` ([`LOSS_UPSTREAM_INPUT_SCHEMA`]).
pub fn upstream_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your answer"}},
        "required": ["answer"]
    })
}

/// A core part as an `lf.a2a.v1.Part` (losses: [`crate::a2a::part_to_a2a`]).
pub fn part_to_pb(p: &Part) -> pb::Part {
    let content = match part_content_to_a2a(p) {
        A2aPartContent::Text(t) => pb::part::Content::Text(t),
        A2aPartContent::Raw(b) => pb::part::Content::Raw(b),
        A2aPartContent::Url(u) => pb::part::Content::Url(u),
        A2aPartContent::Data(d) => pb::part::Content::Data(wkt::Value::from(&d)),
    };
    pb::Part {
        content: Some(content),
        metadata: metadata_to_pb(&p.metadata),
        filename: p.filename.clone().unwrap_or_default(),
        media_type: p.media_type.clone().unwrap_or_default(),
    }
}

/// An `lf.a2a.v1.Part` from upstream as a core part; `index` names it in errors.
pub fn part_from_pb(p: &pb::Part, index: usize) -> Result<Part, VocabError> {
    let content = p.content.as_ref().map(|c| match c {
        pb::part::Content::Text(t) => A2aPartContent::Text(t.clone()),
        pb::part::Content::Raw(b) => A2aPartContent::Raw(b.clone()),
        pb::part::Content::Url(u) => A2aPartContent::Url(u.clone()),
        pb::part::Content::Data(d) => A2aPartContent::Data(Value::from(d)),
    });
    part_from_a2a(
        A2aPart {
            content,
            media_type: p.media_type.clone(),
            filename: p.filename.clone(),
            metadata: p.metadata.as_ref().map(Map::from).unwrap_or_default(),
        },
        index,
    )
}

/// The parts of an upstream message or artifact as core parts.
pub fn parts_from_pb(parts: &[pb::Part]) -> Result<Vec<Part>, VocabError> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| part_from_pb(p, i))
        .collect()
}

fn metadata_to_pb(m: &Map<String, Value>) -> Option<wkt::Struct> {
    (!m.is_empty()).then(|| wkt::Struct::from(m))
}

/// An upstream agent message (a status message or a message event) as a core
/// agent message. Its id is kept; an empty id gets a random one.
pub fn agent_message_from_pb(m: &pb::Message) -> Result<Message, VocabError> {
    let mut out = Message::new(Role::Agent, parts_from_pb(&m.parts)?);
    if !m.message_id.is_empty() {
        out.message_id = m.message_id.clone();
    }
    out.metadata = m.metadata.as_ref().map(Map::from).unwrap_or_default();
    Ok(out)
}

/// The parts an answer to a downstream input request becomes upstream: an
/// accepted `{answer: "…"}` is its text; other accepted content is one data
/// part; a decline or dismissal is a data part naming the action
/// ([`LOSS_DECLINE_AS_DATA`]).
pub fn answer_parts(r: &InputResponse) -> Vec<Part> {
    match (r.action, &r.content) {
        (InputAction::Accept, Some(c)) => match c.get("answer") {
            Some(Value::String(s)) => vec![Part::text(s.clone())],
            _ => vec![Part::data(c.clone())],
        },
        (InputAction::Accept, None) => vec![Part::data(json!({"action": "accept"}))],
        (InputAction::Decline, _) => vec![Part::data(json!({"action": "decline"}))],
        (InputAction::Cancel, _) => vec![Part::data(json!({"action": "cancel"}))],
    }
}

/// The user message sent upstream for a downstream turn: the parts of every
/// input message and answer, in order, under `message_id`, continuing the
/// upstream task and context when given. The first input message's metadata
/// travels with it (a provider authorisation in it reaches the upstream).
/// `None` when there is nothing to send.
pub fn upstream_message(
    message_id: &str,
    input: &[Message],
    answers: &[&InputResponse],
    task_id: Option<&str>,
    context_id: Option<&str>,
) -> Option<pb::Message> {
    let mut parts: Vec<pb::Part> = Vec::new();
    let mut metadata = Map::new();
    for m in input {
        for (k, v) in &m.metadata {
            metadata.entry(k.clone()).or_insert_with(|| v.clone());
        }
        parts.extend(m.parts.iter().map(part_to_pb));
    }
    for a in answers {
        parts.extend(answer_parts(a).iter().map(part_to_pb));
    }
    if parts.is_empty() {
        return None;
    }
    Some(pb::Message {
        message_id: message_id.to_string(),
        context_id: context_id.unwrap_or_default().to_string(),
        task_id: task_id.unwrap_or_default().to_string(),
        role: pb::Role::User as i32,
        parts,
        metadata: metadata_to_pb(&metadata),
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    })
}

/// The text of an upstream status message, if it has any text.
pub fn status_text(status: Option<&pb::TaskStatus>) -> Option<String> {
    let m = status?.message.as_ref()?;
    let text: Vec<&str> = m
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_a2a_state_has_a_meaning() {
        use pb::TaskState as S;
        assert_eq!(upstream_state_of_a2a(S::Working), UpstreamState::Running);
        assert_eq!(upstream_state_of_a2a(S::Submitted), UpstreamState::Running);
        assert_eq!(
            upstream_state_of_a2a(S::InputRequired),
            UpstreamState::InputRequired
        );
        assert_eq!(
            upstream_state_of_a2a(S::AuthRequired),
            UpstreamState::AuthRequired
        );
        assert_eq!(
            upstream_state_of_a2a(S::Completed),
            UpstreamState::Completed
        );
        assert_eq!(upstream_state_of_a2a(S::Failed), UpstreamState::Failed);
        assert_eq!(upstream_state_of_a2a(S::Canceled), UpstreamState::Canceled);
        assert_eq!(upstream_state_of_a2a(S::Rejected), UpstreamState::Rejected);
        assert_eq!(
            upstream_state_of_a2a(S::Unspecified),
            UpstreamState::Unknown
        );
        assert_eq!(upstream_state_of_a2a_number(99), UpstreamState::Unknown);
        assert!(UpstreamState::Canceled.ends_turn());
        assert!(UpstreamState::AuthRequired.ends_turn());
        assert!(!UpstreamState::Running.ends_turn());
    }

    #[test]
    fn parts_cross_both_ways() {
        let mut p = Part::data(json!({"a": 1, "b": [true, "x"]}));
        p.media_type = Some("application/json".into());
        let back = part_from_pb(&part_to_pb(&p), 0).expect("part");
        assert_eq!(back, p);
        let t = Part::text("hi");
        assert_eq!(part_from_pb(&part_to_pb(&t), 0).expect("text"), t);
        assert!(part_from_pb(&pb::Part::default(), 3).is_err());
    }

    #[test]
    fn answers_and_messages_go_upstream() {
        let a = InputResponse::accept(json!({"answer": "blue"}));
        assert_eq!(answer_parts(&a), vec![Part::text("blue")]);
        let d = InputResponse {
            action: InputAction::Decline,
            content: None,
        };
        assert_eq!(
            answer_parts(&d),
            vec![Part::data(json!({"action": "decline"}))]
        );
        let mut m = Message::user_text("hello");
        m.metadata
            .insert("authorization".into(), json!({"provider": "github"}));
        let up = upstream_message("m-1", &[m], &[&a], Some("t"), Some("c")).expect("message");
        assert_eq!(up.message_id, "m-1");
        assert_eq!(up.task_id, "t");
        assert_eq!(up.context_id, "c");
        assert_eq!(up.role, pb::Role::User as i32);
        assert_eq!(up.parts.len(), 2);
        let md = up.metadata.as_ref().map(Map::from).unwrap_or_default();
        assert_eq!(md["authorization"]["provider"], "github");
        assert!(upstream_message("m-2", &[], &[], None, None).is_none());
    }

    #[test]
    fn status_text_reads_text_parts() {
        let status = pb::TaskStatus {
            state: pb::TaskState::InputRequired as i32,
            message: Some(pb::Message {
                parts: vec![part_to_pb(&Part::text("what colour?"))],
                ..Default::default()
            }),
            timestamp: None,
        };
        assert_eq!(status_text(Some(&status)).as_deref(), Some("what colour?"));
        assert_eq!(status_text(None), None);
    }
}
