//! The mapping tables, computed from the mapping functions of this crate.
//!
//! Each [`Situation`] is one thing the core distinguishes about a task (its state,
//! why it ended, what it waits for). [`Situation::task`] builds a representative
//! core task for it, and [`state_table`] runs the real mapping functions of every
//! protocol module on that task: the rows are what the adapters show, not a second
//! hand-written copy. [`tables`] renders these rows, and the rows for pending
//! interactions, answers, content parts and errors, as the markdown tables of
//! `docs/state-mapping.md`; a test of this crate fails when the document and the
//! code disagree.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use taskwire_core::types::{
    AuthWait, InputKind, InputRequest, Metadata, Review, TaskError, TerminalCause, Timestamp,
};
use taskwire_core::{CoreError, EventKind, Message, Part, StoreError, Task, TaskId, TaskState};

use crate::mcp::{Outcome, Revision};
use crate::{a2a, agui, cas, mcp, Loss};

/// The responsible user (and owner) of every representative task.
pub const OWNER: &str = "alice";
/// The reviewer of a review addressed to someone else.
pub const OTHER_REVIEWER: &str = "bob";
/// The key of the representative input request.
pub const INPUT_KEY: &str = "ask-0";
/// The provider of the representative authorisation.
pub const PROVIDER: &str = "github";
/// The id of the representative review.
pub const REVIEW_ID: &str = "review-0";
/// The authorisation URL base the tables use for MCP.
pub const AUTH_URL_BASE: &str = "https://auth.example/";
/// The task id the tables show in interrupt ids.
pub const TASK_PLACEHOLDER: &str = "<task>";

/// One situation the core distinguishes about a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Situation {
    /// Stored, not picked up by a worker yet.
    Submitted,
    /// A turn is running.
    Working,
    /// Waiting for answers to keyed input requests.
    InputRequired,
    /// Waiting for a provider authorisation.
    AuthRequired,
    /// Waiting for a review by the responsible user.
    ReviewPending,
    /// Waiting for a review by someone other than the responsible user.
    ReviewByOther,
    /// Waiting for the next message with nothing pending (the host interrupted the turn).
    AwaitingMessage,
    /// Ended successfully.
    Completed,
    /// Ended with a failure the agent reported.
    FailedAgent,
    /// Ended with an internal or protocol failure.
    FailedInternal,
    /// Refused by the agent or a reviewer.
    Rejected,
    /// Locked by a guardrail (the core records it as rejected with cause restricted).
    Restricted,
    /// Canceled by someone.
    Canceled,
    /// Ended by its inactivity lifespan.
    Expired,
}

impl Situation {
    /// Every situation, in table order.
    pub const ALL: [Situation; 14] = [
        Situation::Submitted,
        Situation::Working,
        Situation::InputRequired,
        Situation::AuthRequired,
        Situation::ReviewPending,
        Situation::ReviewByOther,
        Situation::AwaitingMessage,
        Situation::Completed,
        Situation::FailedAgent,
        Situation::FailedInternal,
        Situation::Rejected,
        Situation::Restricted,
        Situation::Canceled,
        Situation::Expired,
    ];

    /// The row label.
    pub fn label(self) -> &'static str {
        match self {
            Situation::Submitted => "submitted",
            Situation::Working => "working",
            Situation::InputRequired => "input-required (input requests)",
            Situation::AuthRequired => "auth-required",
            Situation::ReviewPending => "review pending (responsible user)",
            Situation::ReviewByOther => "review pending (another reviewer)",
            Situation::AwaitingMessage => "input-required (nothing pending)",
            Situation::Completed => "completed",
            Situation::FailedAgent => "failed (agent fault)",
            Situation::FailedInternal => "failed (internal)",
            Situation::Rejected => "rejected",
            Situation::Restricted => "restricted (guardrail)",
            Situation::Canceled => "canceled",
            Situation::Expired => "expired (inactivity)",
        }
    }

    /// The core state, terminal cause and error code of the situation.
    pub fn core(self) -> (TaskState, Option<TerminalCause>, Option<&'static str>) {
        use TerminalCause as C;
        match self {
            Situation::Submitted => (TaskState::Submitted, None, None),
            Situation::Working => (TaskState::Working, None, None),
            Situation::InputRequired
            | Situation::ReviewPending
            | Situation::ReviewByOther
            | Situation::AwaitingMessage => (TaskState::InputRequired, None, None),
            Situation::AuthRequired => (TaskState::AuthRequired, None, None),
            Situation::Completed => (TaskState::Completed, Some(C::Completed), None),
            Situation::FailedAgent => (
                TaskState::Failed,
                Some(C::AgentFailed),
                Some("agent_failed"),
            ),
            Situation::FailedInternal => (TaskState::Failed, Some(C::Internal), Some("internal")),
            Situation::Rejected => (TaskState::Rejected, Some(C::Rejected), Some("rejected")),
            Situation::Restricted => (TaskState::Rejected, Some(C::Restricted), Some("restricted")),
            Situation::Canceled => (TaskState::Canceled, Some(C::Canceled), None),
            Situation::Expired => (TaskState::Canceled, Some(C::Expired), None),
        }
    }

    /// A representative core task in this situation, shaped as the core leaves it
    /// (status message, error, pending interactions).
    pub fn task(self) -> Task {
        let (state, cause, code) = self.core();
        let mut t = blank_task(state);
        t.terminal_cause = cause;
        let since = Timestamp::default();
        match self {
            Situation::InputRequired => {
                t.input_requests
                    .insert(INPUT_KEY.into(), input_request(since));
                t.status_message = Some(Message::agent_text("What is your name?"));
            }
            Situation::AuthRequired => t.pending_auth.push(auth_wait(since)),
            Situation::ReviewPending => t.pending_reviews.push(review(OWNER, since)),
            Situation::ReviewByOther => t.pending_reviews.push(review(OTHER_REVIEWER, since)),
            Situation::AwaitingMessage => {}
            Situation::Completed => t.status_message = Some(Message::agent_text("done")),
            Situation::FailedInternal => {
                t.status_message = Some(Message::agent_text("internal error"));
            }
            Situation::Canceled => {
                t.status_message = Some(Message::agent_text("cancelled by the client"));
            }
            Situation::Expired => {
                t.status_message = Some(Message::agent_text("inactivity lifespan expired"));
            }
            _ => {}
        }
        if let Some(code) = code {
            let message = match self {
                Situation::FailedInternal => "the agent crashed (details for operators)",
                Situation::FailedAgent => "the agent failed",
                _ => "refused",
            };
            t.error = Some(TaskError {
                code: code.into(),
                message: message.into(),
            });
            if self != Situation::FailedInternal {
                t.status_message = Some(Message::agent_text(message));
            }
        }
        t
    }
}

/// A core task with nothing in it but `state`, owned by [`OWNER`].
pub fn blank_task(state: TaskState) -> Task {
    let t0 = Timestamp::default();
    Task {
        id: TaskId::parse("0123456789abcdef0123456789abcdef").unwrap_or_default(),
        context_id: "ctx".into(),
        tenant: "default".into(),
        owner: OWNER.into(),
        responsible_user: OWNER.into(),
        parent_task: None,
        agent: "scripted".into(),
        state,
        status_message: None,
        state_changed_at: t0,
        terminal_cause: None,
        error: None,
        created_at: t0,
        updated_at: t0,
        version: 1,
        last_seq: 1,
        history: Vec::new(),
        artifacts: Vec::new(),
        metadata: Metadata::new(),
        agent_state: None,
        input_requests: BTreeMap::new(),
        input_answers: BTreeMap::new(),
        answered_keys: Default::default(),
        superseded_keys: Default::default(),
        pending_auth: Vec::new(),
        granted_providers: Default::default(),
        pending_reviews: Vec::new(),
        review_decisions: BTreeMap::new(),
        turns: 1,
        turn_open: false,
        turn_input: Vec::new(),
        ttl_ms: Some(3_600_000),
        expires_at: None,
        idle_lifespan_ms: None,
        idle_expires_at: None,
    }
}

fn input_request(since: Timestamp) -> InputRequest {
    InputRequest {
        key: INPUT_KEY.into(),
        prompt: "What is your name?".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
        since,
        kind: InputKind::Form,
        subject: None,
    }
}

fn auth_wait(since: Timestamp) -> AuthWait {
    AuthWait {
        provider: PROVIDER.into(),
        since,
        operations: vec!["line-0".into()],
        url: None,
    }
}

fn review(reviewer: &str, since: Timestamp) -> Review {
    Review {
        id: REVIEW_ID.into(),
        reviewer: reviewer.into(),
        summary: "approve to continue".into(),
        since,
    }
}

/// One protocol's view of something, and what it loses.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// What the protocol shows.
    pub view: String,
    /// What is lost (empty: nothing).
    pub losses: Vec<Loss>,
}

impl Cell {
    fn new(view: impl Into<String>) -> Self {
        Self {
            view: view.into(),
            losses: Vec::new(),
        }
    }

    fn lose(mut self, loss: impl IntoIterator<Item = Loss>) -> Self {
        for l in loss {
            if !self.losses.contains(&l) {
                self.losses.push(l);
            }
        }
        self
    }

    /// The cell as markdown text: the view, then `lost:` and each loss.
    pub fn text(&self) -> String {
        if self.losses.is_empty() {
            self.view.clone()
        } else {
            let l: Vec<&str> = self.losses.iter().map(|l| l.0).collect();
            format!("{} — lost: {}", self.view, l.join("; "))
        }
    }
}

/// One row of the state table: a situation in every protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct StateRow {
    /// The situation.
    pub situation: Situation,
    /// A2A 1.0 task state.
    pub a2a: Cell,
    /// MCP tasks extension (SEP-2663): status and DetailedTask members.
    pub mcp_2026_07_28: Cell,
    /// MCP 2025-11-25 tasks: status and what `tasks/result` answers.
    pub mcp_2025_11_25: Cell,
    /// AG-UI: how the run ends.
    pub agui: Cell,
    /// CAS: phase / terminal_reason / notifications.
    pub cas: Cell,
}

fn code(s: impl AsRef<str>) -> String {
    format!("`{}`", s.as_ref())
}

/// The A2A view of a task.
pub fn a2a_cell(t: &Task) -> Cell {
    let (s, loss) = a2a::task_state(t);
    Cell::new(code(s.name())).lose(loss)
}

/// A typed wire value as JSON, for the table's descriptions.
fn json_map<T: serde::Serialize>(v: &T) -> serde_json::Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

fn elicitation_modes(reqs: &serde_json::Map<String, Value>) -> String {
    let v: Vec<String> = reqs
        .iter()
        .map(|(k, r)| {
            let mode = r["params"]["mode"].as_str().unwrap_or("?");
            format!("`{k}`: {mode}")
        })
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The MCP tasks-extension view of a task (`tasks/get`).
pub fn mcp_2026_07_28_cell(t: &Task) -> Cell {
    let (st, loss) = mcp::status(t, Revision::V2026_07_28);
    let d = mcp::detailed_task(t, 0, AUTH_URL_BASE);
    let mut view = code(st.as_str());
    let mut losses: Vec<Loss> = loss.into_iter().collect();
    if let Some(reqs) = &d.input_requests {
        let (_, l) = mcp::input_requests(t, Revision::V2026_07_28, AUTH_URL_BASE);
        losses.extend(l);
        view.push_str(&format!(
            " + inputRequests ({})",
            elicitation_modes(&json_map(reqs))
        ));
    }
    if let Some(r) = &d.result {
        view.push_str(if r.is_error == Some(true) {
            " + result (isError)"
        } else {
            " + result"
        });
    }
    if let Some(e) = &d.error {
        view.push_str(&format!(" + error {}", e.code));
    }
    Cell::new(view).lose(losses)
}

/// The MCP 2025-11-25 view of a task (`tasks/get` status and `tasks/result`).
pub fn mcp_2025_11_25_cell(t: &Task) -> Cell {
    let (st, loss) = mcp::status(t, Revision::V2025_11_25);
    let mut losses: Vec<Loss> = loss.into_iter().collect();
    let result = match mcp::outcome(t) {
        Outcome::Pending if t.state.is_interrupted() => {
            let (reqs, l) = mcp::input_requests(t, Revision::V2025_11_25, AUTH_URL_BASE);
            losses.extend(l);
            format!(
                "elicitation/create ({})",
                elicitation_modes(&json_map(&reqs))
            )
        }
        Outcome::Pending => "blocks".into(),
        Outcome::Result(r) if r.is_error == Some(true) => "CallToolResult (isError)".into(),
        Outcome::Result(_) => "CallToolResult".into(),
        Outcome::Error(e) => format!("error {}", e.code),
        Outcome::Cancelled => {
            let (a, l) = mcp::answer(t, mcp::Answering::TasksResult);
            losses.extend(l);
            match a {
                Err(e) => format!("error {}", e.code),
                Ok(_) => "CallToolResult".into(),
            }
        }
    };
    Cell::new(format!("{}; tasks/result: {result}", code(st.as_str()))).lose(losses)
}

/// The AG-UI view of a task: how its run ends.
pub fn agui_cell(t: &Task) -> Cell {
    let (end, loss) = agui::run_end(t.state, t.terminal_cause, t.error.as_ref());
    let mut losses: Vec<Loss> = loss.into_iter().collect();
    let view = match end {
        agui::RunEnd::Open => "run open".to_string(),
        agui::RunEnd::Completed => "`RUN_FINISHED` success + result".to_string(),
        agui::RunEnd::Cancelled => "`RUN_FINISHED` outcome cancelled".to_string(),
        agui::RunEnd::Error { code: c, .. } => format!("`RUN_ERROR` code {}", code(c)),
        agui::RunEnd::Interrupted => {
            let (ints, l) = agui::interrupts(t);
            losses.extend(l);
            let reasons: Vec<String> = ints.iter().map(|i| code(i.reason)).collect();
            format!("`RUN_FINISHED` interrupt ({})", reasons.join(", "))
        }
    };
    Cell::new(view).lose(losses)
}

/// The CAS view of a task: `phase / terminal_reason / notifications`.
pub fn cas_cell(t: &Task) -> Cell {
    let (phase, l1) = cas::phase(t);
    let (reason, l2) = cas::terminal_reason(t);
    let notes: Vec<String> = cas::notifications(t)
        .iter()
        .map(|n| match &n.provider {
            Some(p) => format!("{}({p})", n.kind.as_str()),
            None => n.kind.as_str().to_string(),
        })
        .collect();
    let view = format!(
        "{} / {} / {}",
        code(phase.as_str()),
        reason.map_or("null".to_string(), |r| code(r.as_str())),
        if notes.is_empty() {
            "none".to_string()
        } else {
            notes.join(", ")
        }
    );
    Cell::new(view).lose(l1.into_iter().chain(l2))
}

/// The state table: every situation, through every protocol's real mapping.
pub fn state_table() -> Vec<StateRow> {
    Situation::ALL
        .into_iter()
        .map(|s| {
            let t = s.task();
            StateRow {
                situation: s,
                a2a: a2a_cell(&t),
                mcp_2026_07_28: mcp_2026_07_28_cell(&t),
                mcp_2025_11_25: mcp_2025_11_25_cell(&t),
                agui: agui_cell(&t),
                cas: cas_cell(&t),
            }
        })
        .collect()
}

/// A markdown table: a name (the marker in the document), a header and rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The marker name (`<!-- generated:NAME -->`).
    pub name: &'static str,
    /// Column headers; the first column labels the row.
    pub header: Vec<String>,
    /// Rows of cells, as text.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table as GitHub-flavoured markdown (pipes in cells escaped).
    pub fn to_markdown(&self) -> String {
        let line = |cells: &[String]| {
            let c: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
            format!("| {} |\n", c.join(" | "))
        };
        let mut out = line(&self.header);
        out.push_str(&format!(
            "|{}\n",
            self.header.iter().map(|_| "---|").collect::<String>()
        ));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

fn core_text(s: Situation) -> String {
    let (state, cause, code) = s.core();
    let mut v = code_state(state);
    if let Some(c) = cause {
        v.push_str(&format!(", cause `{}`", cause_name(c)));
    }
    if let Some(c) = code {
        v.push_str(&format!(", error `{c}`"));
    }
    v
}

fn code_state(s: TaskState) -> String {
    code(s.as_str())
}

/// The kebab-case name of a terminal cause.
pub fn cause_name(c: TerminalCause) -> &'static str {
    match c {
        TerminalCause::Completed => "completed",
        TerminalCause::AgentFailed => "agent-failed",
        TerminalCause::Internal => "internal",
        TerminalCause::Rejected => "rejected",
        TerminalCause::Restricted => "restricted",
        TerminalCause::Canceled => "canceled",
        TerminalCause::Expired => "expired",
    }
}

fn states_table() -> Table {
    Table {
        name: "states",
        header: [
            "situation",
            "core",
            "A2A",
            "MCP tasks extension",
            "MCP 2025-11-25",
            "AG-UI",
            "CAS phase / reason / notifications",
        ]
        .map(String::from)
        .to_vec(),
        rows: state_table()
            .into_iter()
            .map(|r| {
                vec![
                    r.situation.label().to_string(),
                    core_text(r.situation),
                    r.a2a.text(),
                    r.mcp_2026_07_28.text(),
                    r.mcp_2025_11_25.text(),
                    r.agui.text(),
                    r.cas.text(),
                ]
            })
            .collect(),
    }
}

/// The pending-interaction situations, and how each protocol asks for them.
fn interactions_table() -> Table {
    let rows = [
        Situation::InputRequired,
        Situation::AuthRequired,
        Situation::ReviewPending,
        Situation::ReviewByOther,
        Situation::AwaitingMessage,
    ]
    .into_iter()
    .map(|s| {
        let t = s.task();
        let (reqs, l) = mcp::input_requests(&t, Revision::V2026_07_28, AUTH_URL_BASE);
        let mcp_cell = Cell::new(describe_requests(&json_map(&reqs))).lose(l);
        let (lreqs, ll) = mcp::input_requests(&t, Revision::V2025_11_25, AUTH_URL_BASE);
        let rev_2025_11_25_cell = Cell::new(describe_requests(&json_map(&lreqs))).lose(ll);
        let (ints, il) = agui::interrupts(&t);
        let agui_cell = Cell::new(
            ints.iter()
                .map(|i| {
                    let id = agui::InterruptRef {
                        task_id: TASK_PLACEHOLDER.into(),
                        kind: i.kind.clone(),
                    }
                    .id();
                    let schema = if i.response_schema.is_some() {
                        " + responseSchema"
                    } else {
                        ""
                    };
                    format!("id `{id}`, reason `{}`{schema}", i.reason)
                })
                .collect::<Vec<_>>()
                .join("; "),
        )
        .lose(il);
        vec![
            s.label().to_string(),
            a2a_cell(&t).text(),
            mcp_cell.text(),
            rev_2025_11_25_cell.text(),
            agui_cell.text(),
            cas_cell(&t).text(),
        ]
    })
    .collect();
    Table {
        name: "interactions",
        header: [
            "waiting for",
            "A2A",
            "MCP inputRequests (tasks extension)",
            "MCP elicitations (2025-11-25, over tasks/result)",
            "AG-UI interrupts",
            "CAS phase / reason / notifications",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

fn describe_requests(reqs: &serde_json::Map<String, Value>) -> String {
    if reqs.is_empty() {
        return "none".into();
    }
    reqs.iter()
        .map(|(k, r)| {
            let p = &r["params"];
            let mode = p["mode"].as_str().unwrap_or("?");
            let extra = if p.get("url").is_some() {
                format!(", url `{}`", p["url"].as_str().unwrap_or(""))
            } else if p["requestedSchema"] == mcp::review_schema() {
                ", schema `{approved: boolean}`".to_string()
            } else {
                ", the request's schema".to_string()
            };
            let id = if p.get("elicitationId").is_some() {
                ", elicitationId = key"
            } else {
                ""
            };
            format!("key `{k}`: {mode}{extra}{id}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn mcp_answer_text(a: &Result<mcp::InputAnswer, crate::VocabError>) -> String {
    match a {
        Ok(mcp::InputAnswer::Input { response, .. }) => format!(
            "answer `{}`{}",
            action_name(response.action),
            if response.content.is_some() {
                " with content"
            } else {
                ""
            }
        ),
        Ok(mcp::InputAnswer::Auth { granted: true, .. }) => "grant the provider".into(),
        Ok(mcp::InputAnswer::Auth { granted: false, .. }) => "cancel the task".into(),
        Ok(mcp::InputAnswer::Review { decision, .. }) => {
            format!("review {}", decision_name(*decision))
        }
        Ok(mcp::InputAnswer::Ignored) => "ignored (stays pending)".into(),
        Err(e) => format!("refused: {e}"),
    }
}

fn action_name(a: taskwire_core::types::InputAction) -> &'static str {
    match a {
        taskwire_core::types::InputAction::Accept => "accept",
        taskwire_core::types::InputAction::Decline => "decline",
        taskwire_core::types::InputAction::Cancel => "cancel",
    }
}

fn decision_name(d: taskwire_core::types::ReviewDecision) -> &'static str {
    match d {
        taskwire_core::types::ReviewDecision::Approve => "approve",
        taskwire_core::types::ReviewDecision::Reject => "reject",
    }
}

/// How answers come back: MCP `ElicitResult` actions and AG-UI resume entries,
/// per pending interaction, as the core command they become.
fn answers_table() -> Table {
    let mut rows = Vec::new();
    let cases: [(Situation, String); 3] = [
        (Situation::InputRequired, INPUT_KEY.to_string()),
        (
            Situation::AuthRequired,
            format!("{}{PROVIDER}", mcp::AUTH_KEY_PREFIX),
        ),
        (
            Situation::ReviewPending,
            format!("{}{REVIEW_ID}", mcp::REVIEW_KEY_PREFIX),
        ),
    ];
    for (s, key) in cases {
        let t = s.task();
        let content = match s {
            Situation::ReviewPending => json!({"approved": true}),
            _ => json!({"answer": "Ada"}),
        };
        for (action, agui_status) in [
            ("accept", agui::ResumeStatus::Resolved),
            ("decline", agui::ResumeStatus::Cancelled),
            ("cancel", agui::ResumeStatus::Cancelled),
        ] {
            let mut v = json!({ "action": action });
            if action == "accept" {
                v["content"] = content.clone();
            }
            let ans = mcp::input_answer(&t, &key, &v);
            let mut mcp_cell = Cell::new(mcp_answer_text(&ans));
            if matches!(ans, Ok(mcp::InputAnswer::Auth { granted: false, .. })) {
                mcp_cell = mcp_cell.lose([mcp::LOSS_AUTH_DECLINE_CANCELS]);
            }
            if s == Situation::AuthRequired && action == "cancel" {
                mcp_cell = mcp_cell.lose([mcp::LOSS_AUTH_CANCEL]);
            }
            let agui_text = if action == "decline" {
                "— (AG-UI has only resolved and cancelled)".to_string()
            } else {
                let status_name = match agui_status {
                    agui::ResumeStatus::Resolved => "resolved",
                    agui::ResumeStatus::Cancelled => "cancelled",
                };
                let payload = match s {
                    Situation::ReviewPending => json!({"approved": true}),
                    _ => json!({"answer": "Ada"}),
                };
                let effect = match s {
                    Situation::InputRequired => {
                        match agui::input_response(agui_status, Some(&payload)) {
                            Ok((r, l)) => Cell::new(format!(
                                "answer `{}`{}",
                                action_name(r.action),
                                if r.content.is_some() {
                                    " with content"
                                } else {
                                    ""
                                }
                            ))
                            .lose(l),
                            Err(e) => Cell::new(format!("refused: {e}")),
                        }
                    }
                    Situation::AuthRequired => {
                        let (a, l) = agui::auth_resume(agui_status);
                        Cell::new(match a {
                            agui::AuthResume::Grant => "grant the provider",
                            agui::AuthResume::CancelTask => "cancel the task",
                        })
                        .lose(l)
                    }
                    _ => Cell::new(format!(
                        "review {}",
                        decision_name(agui::review_decision(agui_status, Some(&payload)))
                    )),
                };
                format!("`{status_name}`: {}", effect.text())
            };
            rows.push(vec![
                format!("{} / `{action}`", s.label()),
                mcp_cell.text(),
                agui_text,
            ]);
        }
    }
    Table {
        name: "answers",
        header: [
            "interaction / action",
            "MCP ElicitResult (tasks/update, tasks/continue, 2025-11-25 elicitation reply)",
            "AG-UI resume entry",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Representative parts for the content table.
pub fn sample_parts() -> Vec<(&'static str, Part)> {
    let mut named = Part::raw(vec![0x25, 0x50, 0x44, 0x46], "application/pdf");
    named.filename = Some("report.pdf".into());
    let mut with_meta = Part::text("hello");
    with_meta.metadata.insert("lang".into(), json!("en"));
    let mut cas_file = Part::url("task://clip.mp4");
    cas_file.media_type = Some("video/mp4".into());
    cas_file
        .metadata
        .insert(cas::META_SIZE_BYTES.into(), json!(42));
    vec![
        ("text", Part::text("hello")),
        ("text with metadata", with_meta),
        ("raw image/png", Part::raw(vec![1, 2, 3], "image/png")),
        ("raw audio/wav", Part::raw(vec![1, 2, 3], "audio/wav")),
        ("raw application/pdf with filename", named),
        ("url", Part::url("https://example.com/a.png")),
        ("url from a CAS file (with sizeBytes)", cas_file),
        ("data object", Part::data(json!({"n": 1}))),
        ("data, not an object", Part::data(json!([1, 2]))),
        ("data with a whole float", Part::data(json!({"x": 2.0}))),
    ]
}

fn parts_table() -> Table {
    let rows = sample_parts()
        .into_iter()
        .map(|(label, p)| {
            let (a, al) = a2a::part_to_a2a(&p);
            let a2a_view = match a.content {
                Some(a2a::A2aPartContent::Text(_)) => "`text`",
                Some(a2a::A2aPartContent::Raw(_)) => "`raw`",
                Some(a2a::A2aPartContent::Url(_)) => "`url`",
                Some(a2a::A2aPartContent::Data(_)) => "`data`",
                None => "none",
            };
            let mut a2a_text = a2a_view.to_string();
            if !a.media_type.is_empty() {
                a2a_text.push_str(" + mediaType");
            }
            if !a.filename.is_empty() {
                a2a_text.push_str(" + filename");
            }
            if !a.metadata.is_empty() {
                a2a_text.push_str(" + metadata");
            }
            let a2a_cell = Cell::new(a2a_text).lose(al);
            let mcp_cell = mcp_part_cell(&p);
            let (text, gl) = agui::message_text(std::slice::from_ref(&p));
            let agui_cell = Cell::new(if text.is_empty() {
                "nothing".to_string()
            } else {
                "text".to_string()
            })
            .lose(gl);
            let art = taskwire_core::Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![p.clone()],
                metadata: Metadata::new(),
                complete: true,
            };
            let whole = agui::artifact_from_activity(&taskwire_wire::agui::to_value(
                &agui::artifact_activity(&art),
            ))
            .is_ok_and(|b| b == art);
            let agui_art = if whole {
                "the part whole".to_string()
            } else {
                "changed (a bug: artifacts must round-trip)".to_string()
            };
            let (c, cl) = cas::part_to_cas(&p);
            let mut cas_text = if c.text.is_some() {
                "`text`".to_string()
            } else if let Some(f) = &c.file {
                if f.starts_with("data:") {
                    "`file` (data: URI)".to_string()
                } else {
                    "`file`".to_string()
                }
            } else {
                "none".to_string()
            };
            if let Some(m) = &c.mime_type {
                cas_text.push_str(&format!(", mimeType `{m}`"));
            }
            if c.size_bytes.is_some() {
                cas_text.push_str(", sizeBytes");
            }
            if c.metadata.is_some() {
                cas_text.push_str(", metadata");
            }
            let cas_cell = Cell::new(cas_text).lose(cl);
            vec![
                label.to_string(),
                a2a_cell.text(),
                mcp_cell.text(),
                agui_art,
                agui_cell.text(),
                cas_cell.text(),
            ]
        })
        .collect();
    Table {
        name: "parts",
        header: [
            "core part",
            "A2A Part",
            "MCP CallToolResult",
            "AG-UI artifact (activity content, run result)",
            "AG-UI message text",
            "CAS ContentPart",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// A part as MCP content, in a completed task's result.
fn mcp_part_cell(p: &Part) -> Cell {
    let mut t = blank_task(TaskState::Completed);
    t.terminal_cause = Some(TerminalCause::Completed);
    t.artifacts.push(taskwire_core::Artifact {
        artifact_id: "a".into(),
        name: None,
        description: None,
        parts: vec![p.clone()],
        metadata: Metadata::new(),
        complete: true,
    });
    let (r, losses) = mcp::call_tool_result(&t);
    let r = json_map(&r);
    let mut kinds: Vec<String> = r["content"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| format!("`{}`", c["type"].as_str().unwrap_or("?")))
                .collect()
        })
        .unwrap_or_default();
    if r.contains_key("structuredContent") {
        kinds.push("structuredContent".into());
    }
    Cell::new(kinds.join(" + ")).lose(losses)
}

/// Representative core errors for the error table.
pub fn sample_errors() -> Vec<CoreError> {
    vec![
        CoreError::NotFound,
        CoreError::InvalidInput {
            field: "message".into(),
            reason: "is required".into(),
        },
        CoreError::TooLarge {
            what: "message".into(),
            size: 2,
            limit: 1,
        },
        CoreError::DeniedByGuardrail {
            reason: "no".into(),
        },
        CoreError::Terminal {
            state: TaskState::Completed,
        },
        CoreError::NotCancelable {
            state: TaskState::Completed,
        },
        CoreError::WrongState {
            what: "interrupting a turn".into(),
            state: TaskState::InputRequired,
        },
        CoreError::IllegalTransition {
            from: TaskState::Submitted,
            to: TaskState::InputRequired,
        },
        CoreError::Contention,
        CoreError::LeaseLost,
        CoreError::Store(StoreError::Backend("disk".into())),
        CoreError::Unavailable("no answer".into()),
        CoreError::ShuttingDown,
        CoreError::Forbidden {
            needed: taskwire_core::Permission::Write,
        },
    ]
}

/// The row label of a core error.
pub fn error_label(e: &CoreError) -> &'static str {
    match e {
        CoreError::NotFound => "NotFound (also: another caller's task)",
        CoreError::InvalidInput { .. } => "InvalidInput",
        CoreError::TooLarge { .. } => "TooLarge",
        CoreError::DeniedByGuardrail { .. } => "DeniedByGuardrail",
        CoreError::Terminal { .. } => "Terminal",
        CoreError::NotCancelable { .. } => "NotCancelable",
        CoreError::WrongState { .. } => "WrongState",
        CoreError::IllegalTransition { .. } => "IllegalTransition",
        CoreError::Contention => "Contention",
        CoreError::LeaseLost => "LeaseLost",
        CoreError::Store(_) => "Store",
        CoreError::Unavailable(_) => "Unavailable (the store did not answer)",
        CoreError::ShuttingDown => "ShuttingDown",
        CoreError::Forbidden { .. } => "Forbidden (the token lacks the scope)",
    }
}

fn errors_table() -> Table {
    let rows = sample_errors()
        .iter()
        .map(|e| {
            let (k, _) = a2a::error_from_core(e);
            let a2a_cell = Cell::new(format!(
                "{} `{}`, gRPC {}",
                k.code(),
                k.reason(),
                k.grpc_code() as i32
            ))
            .lose(a2a::error_loss(e));
            let (c, _) = mcp::error_from_core(e, Some("t"));
            let mcp_cell = Cell::new(c.to_string()).lose(mcp::error_loss(e));
            let (ac, _) = agui::core_error(e);
            let agui_cell = Cell::new(format!("`{ac}`, HTTP {}", agui::http_status(e)))
                .lose(agui::error_loss(e));
            let w = cas::wire_error(e);
            let cas_cell = Cell::new(format!("{} `{}`", w.status, w.code)).lose(cas::error_loss(e));
            vec![
                error_label(e).to_string(),
                a2a_cell.text(),
                mcp_cell.text(),
                agui_cell.text(),
                cas_cell.text(),
            ]
        })
        .collect();
    Table {
        name: "errors",
        header: [
            "core error",
            "A2A JSON-RPC code, ErrorInfo reason, gRPC status",
            "MCP JSON-RPC code",
            "AG-UI RUN_ERROR code, HTTP status (plain endpoints)",
            "CAS HTTP status, code",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// One sample of every kind of core log event, with a row label.
pub fn sample_events() -> Vec<(&'static str, EventKind)> {
    let since = Timestamp::default();
    vec![
        (
            "Created",
            EventKind::Created {
                context_id: "ctx".into(),
                agent: "scripted".into(),
            },
        ),
        (
            "Status",
            EventKind::Status {
                from: TaskState::Working,
                to: TaskState::Completed,
                message: None,
                cause: Some(TerminalCause::Completed),
                error: None,
            },
        ),
        (
            "Message (agent)",
            EventKind::Message {
                message: Box::new(Message::agent_text("hi")),
                queued: false,
            },
        ),
        (
            "Message (user)",
            EventKind::Message {
                message: Box::new(Message::user_text("hi")),
                queued: false,
            },
        ),
        (
            "InputCommitted",
            EventKind::InputCommitted {
                message_ids: vec!["m".into()],
            },
        ),
        ("TurnStarted", EventKind::TurnStarted { turn: 1 }),
        (
            "Artifact",
            EventKind::Artifact {
                artifact: Box::new(taskwire_core::Artifact {
                    artifact_id: "a".into(),
                    name: None,
                    description: None,
                    parts: vec![Part::text("x")],
                    metadata: Metadata::new(),
                    complete: true,
                }),
                append: false,
                last_chunk: true,
            },
        ),
        (
            "InputRequested",
            EventKind::InputRequested {
                requests: vec![input_request(since)],
            },
        ),
        (
            "InputAnswered",
            EventKind::InputAnswered {
                keys: vec![INPUT_KEY.into()],
            },
        ),
        (
            "InputSuperseded",
            EventKind::InputSuperseded {
                keys: vec![INPUT_KEY.into()],
            },
        ),
        (
            "AuthRequired",
            EventKind::AuthRequired {
                auth: Box::new(auth_wait(since)),
            },
        ),
        (
            "AuthGranted",
            EventKind::AuthGranted {
                provider: PROVIDER.into(),
            },
        ),
        (
            "ReviewRequested",
            EventKind::ReviewRequested {
                review: Box::new(review(OWNER, since)),
            },
        ),
        (
            "ReviewDecided",
            EventKind::ReviewDecided {
                review_id: REVIEW_ID.into(),
                decision: taskwire_core::types::ReviewDecision::Approve,
                by: OWNER.into(),
            },
        ),
        (
            "Step",
            EventKind::Step {
                name: "plan".into(),
                phase: taskwire_core::StepPhase::Started,
            },
        ),
        (
            "StateSnapshot",
            EventKind::StateSnapshot {
                snapshot: json!({}),
            },
        ),
        ("StateDelta", EventKind::StateDelta { delta: json!([]) }),
    ]
}

fn events_table() -> Table {
    let rows = sample_events()
        .into_iter()
        .map(|(label, kind)| {
            let (frame, l) = a2a::frame_of(&kind);
            let a2a_cell = Cell::new(match frame {
                Some(a2a::A2aFrame::StatusUpdate) => "`TaskStatusUpdateEvent` (new state)",
                Some(a2a::A2aFrame::StatusMessage) => {
                    "`TaskStatusUpdateEvent` (same state, carrying the message)"
                }
                Some(a2a::A2aFrame::ArtifactUpdate) => "`TaskArtifactUpdateEvent`",
                None => "nothing",
            })
            .lose(l);
            let (n, l) = mcp::notifies(&kind);
            let mcp_cell = Cell::new(if n {
                "a task notification if the task's view changed"
            } else {
                "nothing"
            })
            .lose(l);
            vec![label.to_string(), a2a_cell.text(), mcp_cell.text()]
        })
        .collect();
    Table {
        name: "events",
        header: [
            "core event",
            "A2A stream and push",
            "MCP notifications/tasks (tasks extension; 2025-11-25 notifies status changes only)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// What a client of each protocol reads a peer's task state back as (the
/// direction a bridge translates in): every A2A state, every MCP status, and
/// each CAS phase with its terminal reasons and notifications, including the
/// words a newer peer may send that this version does not name.
fn readback_table() -> Table {
    let mut rows = Vec::new();
    for s in a2a::A2aState::ALL {
        let cell = match a2a::state_from_a2a(s) {
            Ok(st) => st.as_str().to_string(),
            Err(_) => "refused: no core state".to_string(),
        };
        rows.push(vec![format!("A2A `{}`", s.name()), cell]);
    }
    for s in mcp::McpStatus::ALL {
        rows.push(vec![
            format!("MCP `{}`", s.as_str()),
            mcp::state_from_status(s).as_str().to_string(),
        ]);
    }
    rows.push(vec![
        "MCP, a status word this version does not know".to_string(),
        mcp::state_from_status(mcp::McpStatus::Unknown)
            .as_str()
            .to_string(),
    ]);
    use cas::{NotificationKind as N, Phase as P, TerminalReason as R};
    let cas_rows: [(&str, P, Option<R>, &[N]); 10] = [
        ("CAS `idle`", P::Idle, None, &[]),
        ("CAS `processing`", P::Processing, None, &[]),
        (
            "CAS `processing` with `review_required`",
            P::Processing,
            None,
            &[N::ReviewRequired],
        ),
        (
            "CAS `processing` with `user_auth_required`",
            P::Processing,
            None,
            &[N::UserAuthRequired],
        ),
        (
            "CAS `terminal` `completed`",
            P::Terminal,
            Some(R::Completed),
            &[],
        ),
        (
            "CAS `terminal` `errored`",
            P::Terminal,
            Some(R::Errored),
            &[],
        ),
        (
            "CAS `terminal` `restricted`",
            P::Terminal,
            Some(R::Restricted),
            &[],
        ),
        (
            "CAS `terminal` `abandoned` (a later revision's reason)",
            P::Terminal,
            Some(R::Abandoned),
            &[],
        ),
        (
            "CAS `terminal` with a reason this version does not know",
            P::Terminal,
            Some(R::Unknown),
            &[],
        ),
        (
            "CAS, a phase this version does not know",
            P::Unknown,
            None,
            &[],
        ),
    ];
    for (label, phase, reason, notes) in cas_rows {
        rows.push(vec![
            label.to_string(),
            cas::state_from_status(phase, reason, notes)
                .as_str()
                .to_string(),
        ]);
    }
    Table {
        name: "readback",
        header: ["read from a peer", "core state"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// Every table of `docs/state-mapping.md`, in document order.
pub fn tables() -> Vec<Table> {
    vec![
        states_table(),
        readback_table(),
        interactions_table(),
        answers_table(),
        events_table(),
        parts_table(),
        errors_table(),
    ]
}
