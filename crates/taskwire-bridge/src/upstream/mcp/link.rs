//! What an MCP turn keeps, in both revisions: the link of a downstream task
//! to its upstream task or call ([`McpLink`], with what the turn asked,
//! [`Asked`]), the downstream answers as input responses, and a tool result
//! as the turn's end.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use taskwire_client::mcp::ElicitResult;
use taskwire_core::{Message, TurnContext, TurnOutcome};
use taskwire_vocab::upstream::mcp as vocab;

use crate::bridged::Link;
use crate::error::BridgeError;
use crate::options::LINK_KEY;

/// The link protocol name of MCP upstream tasks (both revisions; the link's
/// `version` tells them apart).
pub(crate) const PROTOCOL: &str = "mcp";

/// What a turn asked its caller on behalf of the upstream task.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    /// The upstream input request key (2025-11-25: a key of the bridge's own,
    /// `upstream-elicitation-<turn>-<n>`).
    pub key: String,
    /// For a URL elicitation: the downstream provider whose grant answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// For a form: its schema (to read a plain-text answer against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// 2025-11-25: the JSON-RPC id of the upstream's `elicitation/create`
    /// request, which the answer is the response to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Value>,
    /// 2025-11-25: the question's prompt (to ask it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// 2025-11-25: a URL elicitation's URL (to ask it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The link of a downstream task to its upstream MCP task, as stored in the
/// downstream task's agent state under [`LINK_KEY`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpLink {
    /// `mcp`.
    pub protocol: String,
    /// The upstream task id.
    pub task_id: String,
    /// The tool called.
    pub tool: String,
    /// The downstream turn that last sent something upstream.
    pub turn: u32,
    /// The upstream input requests the last turn raised downstream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// The tool answered `input_required` without a task (SEP-2322): the
    /// next turn calls it again with the answers (and this `requestState`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
    /// The `requestState` of that answer, sent back with the repeated call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The protocol revision spoken, when it is not 2026-07-28: `2025-11-25`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// 2025-11-25: the `Mcp-Session-Id` of the session the upstream task (or
    /// the call) was made in; a re-attach asks in it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// 2025-11-25: the JSON-RPC id of a blocking `tools/call` that waits for
    /// the answers to `asked` (its connection is held by the bridge process
    /// that made it, `LOSS_MCP_2025_11_25_BLOCKING_INPUT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Value>,
    /// A blocking `tools/call` (no upstream task) was made by `turn` and its
    /// answer was not read yet: committed before the call, so that a re-run
    /// of that turn knows the upstream may have run the tool ([`Plan::Lost`]).
    ///
    /// [`Plan::Lost`]: super::plan::Plan::Lost
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
}

impl McpLink {
    /// The MCP link stored in an agent state, if any.
    pub fn read(state: Option<&Value>) -> Option<Self> {
        crate::link::read_link(state, PROTOCOL)
    }

    pub(crate) fn to_state(&self) -> Value {
        json!({ LINK_KEY: self })
    }

    /// The link a turn makes to a tool call (`task_id` empty when the call
    /// made no upstream task): nothing asked, not repeated, revision 2026-07-28.
    pub(crate) fn new(task_id: String, tool: String, turn: u32) -> Self {
        Self {
            protocol: PROTOCOL.into(),
            task_id,
            tool,
            turn,
            asked: Vec::new(),
            repeat: false,
            request_state: None,
            version: None,
            session: None,
            call: None,
            blocking: false,
        }
    }

    /// As [`McpLink::new`], for a 2025-11-25 upstream: in `session`, with the
    /// open blocking call's request id `call`.
    pub(crate) fn rev_2025_11_25(
        task_id: String,
        tool: String,
        turn: u32,
        session: Option<String>,
        call: Option<Value>,
    ) -> Self {
        Self {
            version: Some(vocab::VERSION_2025_11_25.into()),
            session,
            call,
            ..Self::new(task_id, tool, turn)
        }
    }

    /// A link of a 2025-11-25 upstream.
    pub fn is_2025_11_25(&self) -> bool {
        self.version.is_some()
    }
}

impl Link for McpLink {
    fn read(state: Option<&Value>) -> Option<Self> {
        McpLink::read(state)
    }

    fn upstream_task(&self) -> Option<&str> {
        Some(&self.task_id)
    }
}

/// The downstream answers (of the turn `ctx`) to what the last turn asked, as
/// input responses by key: keyed answers, granted providers (an accepting
/// empty answer), and a plain-text answer read against the first form it fits.
pub(crate) fn responses(ctx: &TurnContext, asked: &[Asked]) -> BTreeMap<String, ElicitResult> {
    let text: String = ctx
        .input()
        .iter()
        .map(Message::text)
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeMap::new();
    let mut text_used = false;
    for a in asked {
        if let Some(provider) = &a.provider {
            if ctx.is_granted(provider) {
                out.insert(a.key.clone(), ElicitResult::accept(Map::new()));
            }
            continue;
        }
        if let Some(r) = ctx.answers().get(&a.key) {
            out.insert(a.key.clone(), vocab::elicit_result(r));
            continue;
        }
        if text_used || text.is_empty() {
            continue;
        }
        let schema = a.schema.clone().unwrap_or(Value::Null);
        if let Some(content) = vocab::content_of_text(&schema, &text) {
            out.insert(a.key.clone(), ElicitResult::accept(content));
            text_used = true;
        }
    }
    out
}

/// Ends turn `number` with an upstream tool result: a failure for `isError`
/// (with the result's text), else its content as one artifact.
pub(crate) async fn finish(
    ctx: &TurnContext,
    number: u32,
    r: &taskwire_client::mcp::CallToolResult,
) -> Result<TurnOutcome, BridgeError> {
    if r.is_error == Some(true) {
        let text = vocab::result_text(r);
        return Ok(TurnOutcome::Failed {
            message: if text.trim().is_empty() {
                "the upstream tool failed".into()
            } else {
                text
            },
        });
    }
    let parts = vocab::parts_of_result(r)?;
    if !parts.is_empty() {
        ctx.emit_artifact(
            &vocab::result_artifact_id(number),
            Some(vocab::RESULT_ARTIFACT_NAME),
            parts,
        )
        .await?;
    }
    Ok(TurnOutcome::Completed { message: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_round_trips_and_is_told_from_an_a2a_link() {
        let l = McpLink {
            protocol: PROTOCOL.into(),
            task_id: "t-1".into(),
            tool: "run_script".into(),
            turn: 2,
            asked: vec![Asked {
                key: "ask-0".into(),
                provider: None,
                schema: Some(json!({"type": "object"})),
                request_id: None,
                prompt: None,
                url: None,
            }],
            repeat: false,
            request_state: None,
            version: None,
            session: None,
            call: None,
            blocking: false,
        };
        let state = l.to_state();
        // A link stored before the blocking marker existed reads as no
        // blocking call; a marked one round-trips.
        assert!(state["upstream"].get("blocking").is_none());
        let marked = McpLink {
            blocking: true,
            ..l.clone()
        };
        assert_eq!(McpLink::read(Some(&marked.to_state())), Some(marked));
        assert_eq!(state["upstream"]["protocol"], "mcp");
        assert_eq!(McpLink::read(Some(&state)), Some(l));
        let a2a = json!({"upstream": {"protocol": "a2a", "taskId": "x", "turn": 1}});
        assert_eq!(McpLink::read(Some(&a2a)), None);
        assert_eq!(McpLink::read(None), None);
    }
}
