//! Scenarios as data: one TOML file per scenario under `conformance/scenarios/`,
//! listing the invariants it checks and the steps that check them. The runner
//! interprets the steps; nothing about a scenario is compiled in except its text.
//!
//! ```toml
//! name = "ask-answer"
//! title = "Interrupt for input and answer"
//! kind = "each"                 # each: once per protocol; cross: start on one, drive on the others
//! requires = ["scripted"]       # scripted: the target runs the reference agent
//!
//! [[invariants]]
//! id = "pauses"
//! text = "an `ask` pauses the task in input-required"
//!
//! [[steps]]
//! action = "create"
//! text = "ask What is your name?"
//! expect = { state = "input-required" }
//! checks = "pauses"
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use taskwire_core::types::TaskState;

use crate::error::Error;
use crate::protocol::Protocol;

/// How a scenario is laid over the protocols.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Run once per protocol; `on = "self"` steps use that protocol.
    #[default]
    Each,
    /// Run once per starting protocol; steps may act on the others
    /// (`on = "next"`, `"others"`, `"all"`), checking that every view agrees.
    Cross,
}

/// What a scenario needs from the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    /// The target runs taskwire's scripted reference agent (directives such as
    /// `ask`, `auth`, `sleep`, `stream`).
    Scripted,
    /// A second principal (`--token2`), to check another caller's task.
    SecondPrincipal,
    /// At least two protocols are offered (cross scenarios).
    TwoProtocols,
    /// The agent echoes plain text back as an artifact and completes (the scripted
    /// agent, or an agent card with a skill `echo`).
    Echo,
    /// The target can pause a task for input: the scripted agent, or any agent
    /// that answers `ask …` with input-required (like the a2a-sdk target).
    Ask,
}

impl Requirement {
    /// The name used in files and skip reasons.
    pub fn as_str(self) -> &'static str {
        match self {
            Requirement::Scripted => "scripted",
            Requirement::SecondPrincipal => "second_principal",
            Requirement::TwoProtocols => "two_protocols",
            Requirement::Ask => "ask",
            Requirement::Echo => "echo",
        }
    }
}

/// One invariant a scenario checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invariant {
    /// Short id, referenced by steps' `checks`.
    pub id: String,
    /// What must hold, for a person.
    pub text: String,
}

/// What a step does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Start a task with `text` (a fresh message id, or `message_id`); keeps it as `task`.
    Create,
    /// Start a task with `text` and read its stream until it ends or pauses.
    CreateStream,
    /// Repeat the create of `task` with the same message id: the same task must come back.
    CreateRetry,
    /// Read the task once (poll).
    Get,
    /// Poll until `expect.state` (or `expect.states`) is reached, within `timeout_ms`.
    Wait,
    /// Answer the pending input request with `text`.
    Answer,
    /// Grant the authorisation of `provider`.
    Authorize,
    /// Approve the pending review (as the responsible user).
    Approve,
    /// Cancel the task.
    Cancel,
    /// Send `text` as a further message to the task.
    Send,
    /// Subscribe to the task's stream and read until it ends (or `expect.state`).
    Stream,
    /// Read `frames` frames of the task's stream, drop the connection, resume from the
    /// last cursor and read to the end: no gap, no duplicate, the same end.
    StreamResume,
    /// Read a task id that does not exist.
    Unknown,
    /// As the second principal: read, answer and cancel `task` (none may succeed).
    Foreign,
    /// Send malformed requests (not JSON; a well-formed envelope with wrong params).
    Malformed,
    /// Cancel right after creating a short task: exactly one of cancel and
    /// completion wins and the task never changes again.
    CancelRace,
    /// Read the task on every protocol offered; each view must be what the
    /// vocabulary mapping gives for the expected (or the reference) state.
    ViewsAgree,
    /// Wait `ms` milliseconds.
    Sleep,
}

impl Action {
    /// The name used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::CreateStream => "create_stream",
            Action::CreateRetry => "create_retry",
            Action::Get => "get",
            Action::Wait => "wait",
            Action::Answer => "answer",
            Action::Authorize => "authorize",
            Action::Approve => "approve",
            Action::Cancel => "cancel",
            Action::Send => "send",
            Action::Stream => "stream",
            Action::StreamResume => "stream_resume",
            Action::Unknown => "unknown",
            Action::Foreign => "foreign",
            Action::Malformed => "malformed",
            Action::CancelRace => "cancel_race",
            Action::ViewsAgree => "views_agree",
            Action::Sleep => "sleep",
        }
    }
}

/// Which protocol a step acts through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum On {
    /// The protocol of the matrix column (the starting protocol of a cross scenario).
    #[default]
    Current,
    /// The next offered protocol after the column's, cyclically.
    Next,
    /// The one after `next`.
    Third,
    /// Every offered protocol but the column's, one after the other.
    Others,
    /// Every offered protocol.
    All,
    /// This protocol (skipped when it is not offered).
    Fixed(Protocol),
}

impl On {
    fn parse(s: &str) -> Result<On, String> {
        Ok(match s {
            "self" | "current" => On::Current,
            "next" => On::Next,
            "third" => On::Third,
            "others" => On::Others,
            "all" => On::All,
            other => On::Fixed(other.parse().map_err(|e: Error| e.to_string())?),
        })
    }

    /// The name used in files.
    pub fn as_string(self) -> String {
        match self {
            On::Current => "self".into(),
            On::Next => "next".into(),
            On::Third => "third".into(),
            On::Others => "others".into(),
            On::All => "all".into(),
            On::Fixed(p) => p.as_str().into(),
        }
    }
}

impl<'de> Deserialize<'de> for On {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        On::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for On {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

/// An error class a step may expect; each protocol driver maps its native
/// errors (JSON-RPC codes, gRPC statuses, HTTP statuses, AG-UI codes) onto these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The task does not exist or is not the caller's.
    NotFound,
    /// The task has ended and does not take this command.
    Terminal,
    /// The task cannot be canceled.
    NotCancelable,
    /// The request is malformed or its parameters are wrong.
    Invalid,
    /// Anything else (transport failures included).
    Other,
}

impl ErrorClass {
    /// The name used in files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::NotFound => "not_found",
            ErrorClass::Terminal => "terminal",
            ErrorClass::NotCancelable => "not_cancelable",
            ErrorClass::Invalid => "invalid",
            ErrorClass::Other => "other",
        }
    }
}

/// What a step expects; every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The core state the task must be in (kebab-case core name, e.g. `input-required`),
    /// compared with each protocol's view through the vocabulary mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Any of these core states (for races).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    /// The provider an auth-required task waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// An input-required task waits for a review by the responsible user.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub review: bool,
    /// The terminal cause of a failed task: `agent_failed` or `internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Some artifact's text must equal this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// The status message must contain this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The command must fail with this class of error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorClass>,
    /// `create_retry`: the same task id must come back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_task: Option<bool>,
}

impl Expect {
    /// The expected states, parsed.
    pub fn core_states(&self) -> Result<Vec<TaskState>, String> {
        let mut out = Vec::new();
        for s in self.state.iter().chain(self.states.iter()) {
            out.push(TaskState::parse(s).ok_or_else(|| {
                format!(
                    "unknown state `{s}` (expected one of {})",
                    TaskState::ALL.map(|s| s.as_str()).join(", ")
                )
            })?);
        }
        Ok(out)
    }
}

/// One step of a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What to do.
    pub action: Action,
    /// Through which protocol (default: the column's).
    #[serde(default)]
    pub on: On,
    /// The name of the task handle (default `t`).
    #[serde(default = "default_task")]
    pub task: String,
    /// Text of the message (create, answer, send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Provider (authorize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Frames to read before dropping the stream (stream_resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<usize>,
    /// Milliseconds (sleep), or the time limit of wait and stream (default 15 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// What must hold afterwards.
    #[serde(default)]
    pub expect: Expect,
    /// The id of the invariant this step checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
}

fn default_task() -> String {
    "t".into()
}

/// A scenario, as loaded from its file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Unique name, the matrix row (and the file name without `.toml`).
    pub name: String,
    /// One line for a person.
    pub title: String,
    /// How it is laid over the protocols.
    #[serde(default)]
    pub kind: Kind,
    /// Only these protocols (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocols: Option<Vec<Protocol>>,
    /// What it needs from the target.
    #[serde(default)]
    pub requires: Vec<Requirement>,
    /// Per protocol: why the scenario does not apply there (a skip with this reason).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub not_applicable: std::collections::BTreeMap<Protocol, String>,
    /// Per upstream protocol of a bridged target (`a2a`, `mcp`): the named loss
    /// that keeps the scenario from passing through such a bridge (a skip on
    /// every protocol, with this reason, when the run says `--upstream`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lost_upstream: std::collections::BTreeMap<String, String>,
    /// The invariants it checks.
    pub invariants: Vec<Invariant>,
    /// The steps, run in order; the first broken invariant ends the run.
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Parses one scenario file's text.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, Error> {
        let bad = |reason: String| Error::Scenario {
            file: file.to_string(),
            reason,
        };
        let s: Scenario = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        s.check().map_err(bad)?;
        let stem = Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !stem.is_empty() && stem != s.name {
            return Err(bad(format!(
                "name `{}` differs from the file name `{stem}`",
                s.name
            )));
        }
        Ok(s)
    }

    /// Internal consistency: ids unique and referenced, steps well-formed.
    fn check(&self) -> Result<(), String> {
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(format!(
                "name `{}` must be lowercase letters, digits and dashes",
                self.name
            ));
        }
        if self.invariants.is_empty() {
            return Err("no invariants".into());
        }
        if self.steps.is_empty() {
            return Err("no steps".into());
        }
        let mut ids = BTreeSet::new();
        for inv in &self.invariants {
            if !ids.insert(inv.id.as_str()) {
                return Err(format!("invariant id `{}` twice", inv.id));
            }
        }
        let mut used = BTreeSet::new();
        let mut handles: BTreeSet<&str> = BTreeSet::new();
        for (i, st) in self.steps.iter().enumerate() {
            let at = |m: String| format!("step {} ({}): {m}", i + 1, st.action.as_str());
            st.expect.core_states().map_err(at)?;
            if let Some(c) = &st.checks {
                if !ids.contains(c.as_str()) {
                    return Err(at(format!("checks unknown invariant `{c}`")));
                }
                used.insert(c.as_str());
            }
            let needs_text = matches!(
                st.action,
                Action::Create | Action::CreateStream | Action::Answer | Action::Send
            ) || (st.action == Action::StreamResume
                && !handles.contains(st.task.as_str()));
            if needs_text && st.text.is_none() {
                return Err(at("needs `text`".into()));
            }
            if st.action == Action::Authorize && st.provider.is_none() {
                return Err(at("needs `provider`".into()));
            }
            if st.action == Action::Sleep && st.ms.is_none() {
                return Err(at("needs `ms`".into()));
            }
            if st.action == Action::Wait && st.expect.core_states().map_or(true, |v| v.is_empty()) {
                return Err(at("needs `expect.state` or `expect.states`".into()));
            }
            let creates = matches!(
                st.action,
                Action::Create | Action::CreateStream | Action::CancelRace | Action::StreamResume
            );
            let uses_task = !matches!(
                st.action,
                Action::Unknown | Action::Malformed | Action::Sleep
            ) && !creates;
            if uses_task && !handles.contains(st.task.as_str()) {
                return Err(at(format!("task `{}` is not created before", st.task)));
            }
            if creates {
                handles.insert(st.task.as_str());
            }
            if self.kind == Kind::Each && !matches!(st.on, On::Current | On::Fixed(_)) {
                return Err(at(format!(
                    "`on = \"{}\"` needs kind = \"cross\"",
                    st.on.as_string()
                )));
            }
        }
        if let Some(unused) = ids.iter().find(|id| !used.contains(*id)) {
            return Err(format!("invariant `{unused}` is checked by no step"));
        }
        Ok(())
    }

    /// The invariant a step checks, or a generic one.
    pub fn invariant_of(&self, step: &Step) -> String {
        step.checks
            .as_ref()
            .and_then(|id| self.invariants.iter().find(|i| &i.id == id))
            .map(|i| format!("{}: {}", i.id, i.text))
            .unwrap_or_else(|| format!("step `{}` succeeds", step.action.as_str()))
    }

    /// True if the scenario applies to this protocol at all.
    pub fn applies_to(&self, p: Protocol) -> bool {
        self.protocols.as_ref().is_none_or(|ps| ps.contains(&p))
    }
}

/// Loads every `*.toml` in a directory, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, Error> {
    let io = |e: std::io::Error| Error::Io {
        path: dir.display().to_string(),
        source: e,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| Error::Io {
            path: f.display().to_string(),
            source: e,
        })?;
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(Scenario::parse(&name, &text)?);
    }
    check_unique(&out)?;
    Ok(out)
}

/// The scenarios compiled into this build (the files of `conformance/scenarios/`).
pub fn builtin() -> Result<Vec<Scenario>, Error> {
    let out = crate::compiled::EMBEDDED
        .iter()
        .map(|(name, text)| Scenario::parse(name, text))
        .collect::<Result<Vec<_>, _>>()?;
    check_unique(&out)?;
    Ok(out)
}

fn check_unique(all: &[Scenario]) -> Result<(), Error> {
    let mut seen = BTreeSet::new();
    for s in all {
        if !seen.insert(s.name.as_str()) {
            return Err(Error::Scenario {
                file: format!("{}.toml", s.name),
                reason: "the name is used twice".into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
name = "x"
title = "t"
[[invariants]]
id = "a"
text = "A holds"
[[steps]]
action = "create"
text = "hello"
expect = { state = "completed", artifact = "hello" }
checks = "a"
"#;

    #[test]
    fn a_minimal_scenario_parses() {
        let s = Scenario::parse("x.toml", OK).expect("parses");
        assert_eq!(s.kind, Kind::Each);
        assert_eq!(s.steps[0].task, "t");
        assert_eq!(s.steps[0].on, On::Current);
        assert_eq!(s.invariant_of(&s.steps[0]), "a: A holds");
    }

    #[test]
    fn inconsistencies_are_refused() {
        let cases = [
            (
                OK.replace("checks = \"a\"", "checks = \"b\""),
                "unknown invariant",
            ),
            (OK.replace("checks = \"a\"", ""), "checked by no step"),
            (OK.replace("\"completed\"", "\"done\""), "unknown state"),
            (OK.replace("text = \"hello\"\n", ""), "needs `text`"),
            (
                OK.replace("action = \"create\"", "action = \"get\""),
                "not created before",
            ),
            (
                OK.replace("action = \"create\"", "action = \"fly\""),
                "unknown variant",
            ),
            (format!("{OK}\nbogus = 1\n"), "unknown field"),
            (
                OK.replace("text = \"hello\"", "text = \"hello\"\non = \"next\""),
                "kind = \"cross\"",
            ),
        ];
        for (text, want) in cases {
            let err = Scenario::parse("x.toml", &text)
                .expect_err(want)
                .to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
        let err = Scenario::parse("y.toml", OK).expect_err("name").to_string();
        assert!(err.contains("differs from the file name"), "{err}");
    }

    #[test]
    fn docs_list_every_scenario() {
        let docs = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/conformance.md"),
        )
        .expect("docs/conformance.md");
        for s in builtin().expect("scenarios") {
            assert!(
                docs.contains(&format!("| `{}` |", s.name)),
                "docs/conformance.md has no row for scenario `{}`",
                s.name
            );
        }
    }

    #[test]
    fn every_shipped_scenario_parses() {
        let all = builtin().expect("the embedded scenarios parse");
        assert!(all.len() >= 10, "only {} scenarios", all.len());
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/scenarios");
        let from_disk = load_dir(&dir).expect("the scenario directory parses");
        assert_eq!(from_disk, all);
    }
}
