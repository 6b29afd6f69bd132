//! The interpreter of scenario steps.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use taskwire_core::types::{TaskState, TerminalCause};

use crate::driver::{Driver, OpError, StreamObs, TaskRef, Wire};
use crate::protocol::Protocol;
use crate::report::{Cell, Failure, Verdict};
use crate::scenario::{Action, ErrorClass, Expect, On, Requirement, Scenario, Step};
use crate::views::{self, CoreExpect, View};

/// Default time limit of a wait or a stream, in milliseconds.
pub const DEFAULT_LIMIT_MS: u64 = 15_000;
/// Interval between polls while waiting for a state.
const POLL: Duration = Duration::from_millis(50);

/// What the runner knows about the target.
#[derive(Clone)]
pub struct Suite {
    /// Drivers of the offered and selected protocols, as the first principal.
    pub drivers: BTreeMap<Protocol, Arc<dyn Driver>>,
    /// Drivers as a second principal (empty when no second token is known).
    pub second: BTreeMap<Protocol, Arc<dyn Driver>>,
    /// Why each protocol that has no driver is not run.
    pub unavailable: BTreeMap<Protocol, String>,
    /// The protocols the user selected.
    pub selected: Vec<Protocol>,
    /// Whether the target runs the scripted reference agent, and why we think so.
    pub scripted: (bool, String),
    /// Whether an `ask …` pauses a task for input on this target.
    pub ask: bool,
    /// Whether plain text is echoed back as an artifact.
    pub echo: bool,
    /// Where exchanges and schema violations are recorded.
    pub wire: Wire,
    /// Why no second principal is available (when `second` is empty).
    pub no_second_reason: String,
    /// The upstream protocol of a bridged target (`--upstream`).
    pub upstream: Option<String>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suite")
            .field("drivers", &self.drivers.keys().collect::<Vec<_>>())
            .field("selected", &self.selected)
            .field("scripted", &self.scripted)
            .finish()
    }
}

/// Runs every scenario on every selected protocol, calling `progress` with each
/// finished cell (and `start` before each scenario).
pub async fn run_all(
    suite: &Suite,
    scenarios: &[Scenario],
    start: &mut (dyn FnMut(&Scenario) + Send),
    progress: &mut (dyn FnMut(&Cell) + Send),
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for s in scenarios {
        start(s);
        for p in Protocol::ALL {
            if !suite.selected.contains(&p) {
                continue;
            }
            let t0 = Instant::now();
            let verdict = match skip_reason(suite, s, p) {
                Some(r) => Verdict::Skip(r),
                None => run_cell(suite, s, p).await,
            };
            let cell = Cell {
                scenario: s.name.clone(),
                protocol: p,
                verdict,
                millis: u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX),
            };
            progress(&cell);
            cells.push(cell);
        }
    }
    cells
}

fn skip_reason(suite: &Suite, s: &Scenario, p: Protocol) -> Option<String> {
    if let Some(r) = suite.unavailable.get(&p) {
        return Some(r.clone());
    }
    if !suite.drivers.contains_key(&p) {
        return Some(format!("{p} is not offered by the target"));
    }
    if !s.applies_to(p) {
        return Some(format!("the scenario does not apply to {p}"));
    }
    if let Some(r) = s.not_applicable.get(&p) {
        return Some(format!("not applicable: {r}"));
    }
    if let Some(u) = &suite.upstream {
        if let Some(r) = s.lost_upstream.get(u) {
            return Some(format!("lost over the bridge's {u} upstream: {r}"));
        }
    }
    for r in &s.requires {
        match r {
            Requirement::Scripted if !suite.scripted.0 => {
                return Some(format!(
                    "needs the scripted reference agent ({})",
                    suite.scripted.1
                ))
            }
            Requirement::Ask if !(suite.scripted.0 || suite.ask) => {
                return Some("needs an agent that pauses for input on `ask …`".into())
            }
            Requirement::Echo if !(suite.scripted.0 || suite.echo) => {
                return Some("needs an agent that echoes plain text as an artifact".into())
            }
            Requirement::SecondPrincipal if !suite.second.contains_key(&p) => {
                return Some(format!(
                    "needs a second principal ({})",
                    suite.no_second_reason
                ))
            }
            Requirement::TwoProtocols if suite.drivers.len() < 2 => {
                return Some("needs at least two protocols offered".into())
            }
            _ => {}
        }
    }
    for st in &s.steps {
        if let On::Fixed(q) = st.on {
            if !suite.drivers.contains_key(&q) {
                return Some(format!("needs {q}, which is not offered"));
            }
        }
    }
    None
}

/// How a step went wrong.
enum StepErr {
    /// An invariant broke.
    Fail(String),
    /// The protocol cannot express the step.
    Skip(String),
}

type StepResult = Result<(), StepErr>;

fn fail<T>(msg: impl Into<String>) -> Result<T, StepErr> {
    Err(StepErr::Fail(msg.into()))
}

struct Cx<'a> {
    suite: &'a Suite,
    column: Protocol,
    tasks: HashMap<String, TaskRef>,
    /// The last state each task was seen to settle in.
    settled: HashMap<String, CoreExpect>,
}

async fn run_cell(suite: &Suite, s: &Scenario, p: Protocol) -> Verdict {
    let _ = suite.wire.drain();
    let mut cx = Cx {
        suite,
        column: p,
        tasks: HashMap::new(),
        settled: HashMap::new(),
    };
    for (i, step) in s.steps.iter().enumerate() {
        let res = run_step(&mut cx, s, step).await;
        let (exchange, violations) = suite.wire.drain();
        let keep = |mut v: Vec<crate::report::Exchange>| {
            let n = v.len();
            v.split_off(n.saturating_sub(4))
        };
        match res {
            Err(StepErr::Skip(r)) => return Verdict::Skip(r),
            Err(StepErr::Fail(detail)) => {
                return Verdict::Fail(Failure {
                    step: i + 1,
                    invariant: s.invariant_of(step),
                    detail,
                    exchange: keep(exchange),
                })
            }
            Ok(()) if !violations.is_empty() => {
                return Verdict::Fail(Failure {
                    step: i + 1,
                    invariant:
                        "schema: every message received validates against its schema in schemas/"
                            .into(),
                    detail: violations.join("; "),
                    exchange: keep(exchange),
                })
            }
            Ok(()) => {}
        }
        // In a cross scenario every view must agree after every step that
        // settles the task in a known state, not only at `views_agree` steps.
        let settles = !matches!(step.action, Action::ViewsAgree | Action::Sleep)
            && step.expect.error.is_none()
            && step.expect.core_states().is_ok_and(|v| v.len() == 1);
        if s.kind == crate::scenario::Kind::Cross && settles {
            let check = Step {
                action: Action::ViewsAgree,
                expect: Expect {
                    artifact: None,
                    status_message: None,
                    ..step.expect.clone()
                },
                ..step.clone()
            };
            let res = views_agree(&mut cx, s, &check).await;
            let (exchange, violations) = suite.wire.drain();
            let keep = |mut v: Vec<crate::report::Exchange>| {
                let n = v.len();
                v.split_off(n.saturating_sub(4))
            };
            let detail = match res {
                Err(StepErr::Fail(d)) => Some(d),
                Ok(()) if !violations.is_empty() => Some(violations.join("; ")),
                _ => None,
            };
            if let Some(detail) = detail {
                return Verdict::Fail(Failure {
                    step: i + 1,
                    invariant: format!(
                        "{AGREE_AFTER_EACH_STEP} (after `{}`)",
                        step.action.as_str()
                    ),
                    detail,
                    exchange: keep(exchange),
                });
            }
        }
    }
    Verdict::Pass
}

/// The invariant every cross scenario checks after each settling step.
pub const AGREE_AFTER_EACH_STEP: &str =
    "views-agree: after each step of a cross scenario, every offered protocol shows the task as the mapping says";

fn targets(cx: &Cx<'_>, on: On) -> Vec<Protocol> {
    let offered: Vec<Protocol> = cx.suite.drivers.keys().copied().collect();
    let pos = offered.iter().position(|p| *p == cx.column).unwrap_or(0);
    let nth = |k: usize| offered[(pos + k) % offered.len().max(1)];
    if offered.is_empty() {
        return Vec::new();
    }
    match on {
        On::Current => vec![cx.column],
        On::Next | On::Third => {
            let start = if on == On::Next { 1 } else { 2 };
            let mut v: Vec<Protocol> = (0..offered.len())
                .map(|k| nth(start + k))
                .filter(|p| *p != cx.column || offered.len() == 1)
                .collect();
            v.dedup();
            v
        }
        On::Others => offered
            .iter()
            .copied()
            .filter(|p| *p != cx.column)
            .collect(),
        On::All => offered,
        On::Fixed(p) => vec![p],
    }
}

fn driver(cx: &Cx<'_>, p: Protocol) -> Result<Arc<dyn Driver>, StepErr> {
    cx.suite
        .drivers
        .get(&p)
        .cloned()
        .ok_or_else(|| StepErr::Skip(format!("{p} is not offered")))
}

/// A fresh message id (`conf-` and 24 hex digits).
pub(crate) fn new_message_id() -> String {
    let mut b = [0u8; 12];
    if getrandom::fill(&mut b).is_err() {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        return format!("conf-{n:x}");
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("conf-{hex}")
}

/// The core expectations of a step (one per expected state).
fn expectations(e: &Expect) -> Result<Vec<CoreExpect>, StepErr> {
    let states = e.core_states().map_err(StepErr::Fail)?;
    let cause = match e.cause.as_deref() {
        Some("internal") => Some(TerminalCause::Internal),
        Some("agent_failed") => Some(TerminalCause::AgentFailed),
        Some("rejected") => Some(TerminalCause::Rejected),
        Some("expired") => Some(TerminalCause::Expired),
        _ => None,
    };
    Ok(states
        .into_iter()
        .map(|state| CoreExpect {
            state,
            cause,
            provider: e.provider.clone(),
            review: e.review,
        })
        .collect())
}

fn words(p: Protocol, es: &[CoreExpect]) -> Vec<String> {
    es.iter().filter_map(|e| views::expected(p, e)).collect()
}

/// View words of every terminal state on a protocol (to stop waiting early).
fn terminal_words(p: Protocol) -> Vec<String> {
    let mut out = Vec::new();
    for s in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
        for cause in [None, Some(TerminalCause::Internal)] {
            if let Some(w) = views::expected(
                p,
                &CoreExpect {
                    state: s,
                    cause,
                    provider: None,
                    review: false,
                },
            ) {
                out.push(w);
            }
        }
    }
    out
}

fn describe(es: &[CoreExpect]) -> String {
    es.iter()
        .map(|e| e.state.as_str())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn op_err(p: Protocol, what: &str, e: OpError) -> StepErr {
    if e.detail.starts_with("unsupported:") {
        StepErr::Skip(format!("{p}: {what}: {}", e.detail))
    } else {
        StepErr::Fail(format!(
            "{p} {what} failed ({}): {}",
            e.class.as_str(),
            e.detail
        ))
    }
}

/// Error classes that count as the same: a refusal because the task has ended
/// may be named either way (A2A TaskNotCancelable vs UnsupportedOperation, CAS
/// `task_terminal` for a cancel, AG-UI `wrong_state`).
fn same_class(got: ErrorClass, want: ErrorClass) -> bool {
    let ended = |c| matches!(c, ErrorClass::Terminal | ErrorClass::NotCancelable);
    got == want || (ended(got) && ended(want))
}

/// Checks a command's result against `expect.error`.
fn check_result(p: Protocol, what: &str, r: Result<(), OpError>, e: &Expect) -> StepResult {
    match (r, e.error) {
        (Ok(()), None) => Ok(()),
        (Err(err), None) => Err(op_err(p, what, err)),
        (Ok(()), Some(want)) => fail(format!(
            "{p} {what} succeeded; expected a `{}` error",
            want.as_str()
        )),
        (Err(err), Some(want)) if same_class(err.class, want) => Ok(()),
        (Err(err), Some(_)) if err.detail.starts_with("unsupported:") => Err(op_err(p, what, err)),
        (Err(err), Some(want)) => fail(format!(
            "{p} {what}: expected a `{}` error, got `{}`: {}",
            want.as_str(),
            err.class.as_str(),
            err.detail
        )),
    }
}

fn check_view_extras(p: Protocol, view: &View, e: &Expect) -> StepResult {
    if let Some(a) = &e.artifact {
        if !artifact_matches(&view.artifacts, a) {
            return fail(format!(
                "{p}: expected an artifact `{a}`, saw {:?}",
                view.artifacts
            ));
        }
    }
    if let Some(m) = &e.status_message {
        if !view
            .status_message
            .as_deref()
            .is_some_and(|s| s.contains(m))
        {
            return fail(format!(
                "{p}: expected the status message to contain `{m}`, saw {:?}",
                view.status_message
            ));
        }
    }
    Ok(())
}

/// True if some artifact text, or the concatenation of consecutive ones (MCP
/// shows each part of an artifact as its own content item), equals `want`
/// (surrounding whitespace ignored).
fn artifact_matches(texts: &[String], want: &str) -> bool {
    let want = want.trim();
    for i in 0..texts.len() {
        let mut acc = String::new();
        for t in &texts[i..] {
            acc.push_str(t);
            if acc.trim() == want {
                return true;
            }
            if acc.trim().len() > want.len() + 8 {
                break;
            }
        }
    }
    false
}

/// AG-UI addresses a task by its thread (the core context id): when a task was
/// started elsewhere, read its context id over A2A (JSON-RPC, gRPC or HTTP+JSON)
/// if offered.
async fn learn_context(cx: &mut Cx<'_>, handle: &str) {
    let Some(mut t) = cx.tasks.get(handle).cloned() else {
        return;
    };
    if t.context_id.is_some() {
        return;
    }
    for q in [Protocol::A2a, Protocol::Grpc, Protocol::A2aRest] {
        if let Some(d) = cx.suite.drivers.get(&q).cloned() {
            if let Ok(v) = d.get(&mut t).await {
                if v.context_id.is_some() {
                    t.context_id = v.context_id;
                    break;
                }
            }
        }
    }
    cx.tasks.insert(handle.to_string(), t);
}

/// Polls the task on `p` until its view is one the mapping gives for `es`.
async fn settle(
    cx: &mut Cx<'_>,
    p: Protocol,
    handle: &str,
    es: &[CoreExpect],
    limit_ms: u64,
) -> Result<View, StepErr> {
    let d = driver(cx, p)?;
    if p == Protocol::Agui {
        learn_context(cx, handle).await;
    }
    let want = words(p, es);
    let terminal = terminal_words(p);
    let deadline = Instant::now() + Duration::from_millis(limit_ms);
    let mut task = cx
        .tasks
        .get(handle)
        .cloned()
        .ok_or_else(|| StepErr::Fail(format!("no task `{handle}`")))?;
    loop {
        let view = d.get(&mut task).await.map_err(|e| op_err(p, "read", e))?;
        if want.contains(&view.state) {
            if view.context_id.is_some() && task.context_id.is_none() {
                task.context_id = view.context_id.clone();
            }
            cx.tasks.insert(handle.to_string(), task);
            if let Some(e) = es
                .iter()
                .find(|e| views::expected(p, e).as_deref() == Some(&view.state))
            {
                cx.settled.insert(handle.to_string(), e.clone());
            }
            return Ok(view);
        }
        let stuck = terminal.contains(&view.state) && !want.is_empty();
        if stuck || Instant::now() >= deadline {
            cx.tasks.insert(handle.to_string(), task);
            return fail(format!(
                "{p}: expected {} (`{}` by the mapping), saw `{}`{}",
                describe(es),
                want.join("` or `"),
                view.state,
                if stuck {
                    " (terminal)"
                } else {
                    " when the time ran out"
                }
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn task_of(cx: &Cx<'_>, handle: &str) -> Result<TaskRef, StepErr> {
    cx.tasks
        .get(handle)
        .cloned()
        .ok_or_else(|| StepErr::Fail(format!("no task `{handle}`")))
}

async fn after_command(cx: &mut Cx<'_>, p: Protocol, step: &Step) -> StepResult {
    let es = expectations(&step.expect)?;
    if !es.is_empty() {
        let v = settle(cx, p, &step.task, &es, step.ms.unwrap_or(DEFAULT_LIMIT_MS)).await?;
        check_view_extras(p, &v, &step.expect)?;
    }
    Ok(())
}

fn check_stream(p: Protocol, obs: &StreamObs, e: &Expect) -> StepResult {
    let es = expectations(e)?;
    let want = words(p, &es);
    let terminal = terminal_words(p);
    if let Some(pos) = obs.states.iter().position(|w| terminal.contains(w)) {
        if pos + 1 != obs.states.len() {
            return fail(format!(
                "{p}: the stream went on after a terminal state: {:?}",
                obs.states
            ));
        }
    }
    if !want.is_empty()
        && !obs
            .last_state()
            .is_some_and(|w| want.contains(&w.to_string()))
    {
        return fail(format!(
            "{p}: expected the stream to reach {} (`{}`), it showed {:?}{}",
            describe(&es),
            want.join("` or `"),
            obs.states,
            if obs.ended {
                ""
            } else {
                " before the time ran out"
            }
        ));
    }
    if let Some(a) = &e.artifact {
        let texts: Vec<String> = obs.artifacts.values().cloned().collect();
        if !artifact_matches(&texts, a) {
            return fail(format!(
                "{p}: expected the stream to carry an artifact `{a}`, it assembled {:?}",
                obs.artifacts
            ));
        }
    }
    Ok(())
}

async fn run_step(cx: &mut Cx<'_>, s: &Scenario, step: &Step) -> StepResult {
    if step.action == Action::Sleep {
        tokio::time::sleep(Duration::from_millis(step.ms.unwrap_or(0))).await;
        return Ok(());
    }
    if step.action == Action::ViewsAgree {
        return views_agree(cx, s, step).await;
    }
    let candidates = targets(cx, step.on);
    if matches!(step.on, On::Next | On::Third) {
        // The first candidate that can express the step; a protocol that cannot
        // (e.g. AG-UI cancels only runs it started) hands over to the one after.
        let mut skipped = Vec::new();
        for p in candidates {
            match step_on(cx, step, p).await {
                Err(StepErr::Skip(r)) => skipped.push(r),
                other => return other,
            }
        }
        return Err(StepErr::Skip(skipped.join("; ")));
    }
    for p in candidates {
        step_on(cx, step, p).await?;
    }
    Ok(())
}

async fn step_on(cx: &mut Cx<'_>, step: &Step, p: Protocol) -> StepResult {
    let limit = step.ms.unwrap_or(DEFAULT_LIMIT_MS);
    if p == Protocol::Agui {
        learn_context(cx, &step.task).await;
    }
    {
        let d = driver(cx, p)?;
        match step.action {
            Action::Sleep | Action::ViewsAgree => {}
            Action::Create => {
                let text = step.text.clone().unwrap_or_default();
                let t = d
                    .create(&text, &new_message_id())
                    .await
                    .map_err(|e| op_err(p, "create", e))?;
                if t.id.is_empty() {
                    return fail(format!("{p}: create returned no task id"));
                }
                cx.tasks.insert(step.task.clone(), t);
                after_command(cx, p, step).await?;
            }
            Action::CreateStream => {
                let text = step.text.clone().unwrap_or_default();
                let (t, obs) = d
                    .create_stream(&text, &new_message_id(), limit)
                    .await
                    .map_err(|e| op_err(p, "streaming create", e))?;
                cx.tasks.insert(step.task.clone(), t);
                check_stream(p, &obs, &step.expect)?;
            }
            Action::CreateRetry => {
                let t = task_of(cx, &step.task)?;
                let again = d
                    .create_retry(&t)
                    .await
                    .map_err(|e| op_err(p, "repeated create", e))?;
                let same = again.id == t.id;
                if same != step.expect.same_task.unwrap_or(true) {
                    return fail(format!(
                        "{p}: a create repeated with message id {} gave task {} (first: {})",
                        t.message_id, again.id, t.id
                    ));
                }
                after_command(cx, p, step).await?;
            }
            Action::Get => {
                let mut t = task_of(cx, &step.task)?;
                let r = d.get(&mut t).await;
                if step.expect.error.is_some() {
                    return check_result(p, "read", r.map(|_| ()), &step.expect);
                }
                let view = r.map_err(|e| op_err(p, "read", e))?;
                let es = expectations(&step.expect)?;
                let want = words(p, &es);
                if !want.is_empty() && !want.contains(&view.state) {
                    return fail(format!(
                        "{p}: expected {} (`{}`), saw `{}`",
                        describe(&es),
                        want.join("` or `"),
                        view.state
                    ));
                }
                check_view_extras(p, &view, &step.expect)?;
                cx.tasks.insert(step.task.clone(), t);
            }
            Action::Wait => {
                after_command(cx, p, step).await?;
            }
            Action::Answer
            | Action::Authorize
            | Action::Approve
            | Action::Cancel
            | Action::Send => {
                let mut t = task_of(cx, &step.task)?;
                let text = step.text.clone().unwrap_or_default();
                let provider = step.provider.clone().unwrap_or_default();
                let (what, r) = match step.action {
                    Action::Answer => ("answer", d.answer(&mut t, &text).await),
                    Action::Authorize => ("authorize", d.authorize(&mut t, &provider).await),
                    Action::Approve => ("approve the review", d.approve(&mut t).await),
                    Action::Cancel => ("cancel", d.cancel(&mut t).await),
                    _ => ("send", d.send(&mut t, &text).await),
                };
                cx.tasks.insert(step.task.clone(), t);
                check_result(p, what, r, &step.expect)?;
                after_command(cx, p, step).await?;
            }
            Action::Stream => {
                let mut t = task_of(cx, &step.task)?;
                let es = expectations(&step.expect)?;
                let want = words(p, &es);
                let obs = d
                    .stream(&mut t, &want, limit)
                    .await
                    .map_err(|e| op_err(p, "stream", e))?;
                cx.tasks.insert(step.task.clone(), t);
                check_stream(p, &obs, &step.expect)?;
            }
            Action::StreamResume => {
                let text = step.text.clone().unwrap_or_default();
                let r = d
                    .stream_resume(&text, &new_message_id(), step.frames.unwrap_or(2), limit)
                    .await
                    .map_err(|e| op_err(p, "stream resume", e))?;
                cx.tasks.insert(step.task.clone(), r.task.clone());
                if r.first.frames == 0 {
                    return fail(format!("{p}: the stream showed no frame before the drop"));
                }
                let mut seen = std::collections::BTreeSet::new();
                for id in r
                    .first
                    .ids
                    .iter()
                    .chain(r.rest.ids.iter().filter(|i| **i != r.cursor))
                {
                    if !id.is_empty() && !seen.insert(id.clone()) {
                        return fail(format!(
                            "{p}: frame `{id}` came twice across the resume from `{}` (before: {:?}, after: {:?})",
                            r.cursor, r.first.ids, r.rest.ids
                        ));
                    }
                }
                let mut whole = r.rest.clone();
                let mut states = r.first.states.clone();
                for w in &r.rest.states {
                    if states.last() != Some(w) {
                        states.push(w.clone());
                    }
                }
                whole.states = states;
                check_stream(p, &whole, &step.expect)?;
            }
            Action::Unknown => {
                let mut ghost = TaskRef {
                    id: unknown_id(),
                    message_id: new_message_id(),
                    text: String::new(),
                    context_id: Some(format!("ctx-{}", new_message_id())),
                    agui_run: Some(format!("run-{}", new_message_id())),
                };
                let want = Expect {
                    error: Some(step.expect.error.unwrap_or(ErrorClass::NotFound)),
                    ..Expect::default()
                };
                check_result(
                    p,
                    "read of an unknown task",
                    d.get(&mut ghost).await.map(|_| ()),
                    &want,
                )?;
                check_result(
                    p,
                    "cancel of an unknown task",
                    d.cancel(&mut ghost).await,
                    &want,
                )?;
            }
            Action::Foreign => {
                let other = cx.suite.second.get(&p).cloned().ok_or_else(|| {
                    StepErr::Skip(format!(
                        "needs a second principal ({})",
                        cx.suite.no_second_reason
                    ))
                })?;
                let mut t = task_of(cx, &step.task)?;
                let want = Expect {
                    error: Some(ErrorClass::NotFound),
                    ..Expect::default()
                };
                check_result(
                    p,
                    "read by another caller",
                    other.get(&mut t.clone()).await.map(|_| ()),
                    &want,
                )?;
                check_result(
                    p,
                    "answer by another caller",
                    other.answer(&mut t.clone(), "intruder").await,
                    &want,
                )?;
                check_result(
                    p,
                    "cancel by another caller",
                    other.cancel(&mut t.clone()).await,
                    &want,
                )?;
                // The owner still sees the task as it was.
                let view = d
                    .get(&mut t)
                    .await
                    .map_err(|e| op_err(p, "read by the owner", e))?;
                if let Some(e) = cx.settled.get(&step.task) {
                    let w = views::expected(p, e).unwrap_or_default();
                    if view.state != w {
                        return fail(format!(
                            "{p}: after another caller's attempts the owner sees `{}`, expected `{w}`",
                            view.state
                        ));
                    }
                }
            }
            Action::Malformed => {
                for (label, r) in d.malformed().await {
                    let want = Expect {
                        error: Some(ErrorClass::Invalid),
                        ..Expect::default()
                    };
                    check_result(p, &label, r, &want)?;
                }
            }
            Action::CancelRace => race(cx, p, step).await?,
        }
    }
    Ok(())
}

fn unknown_id() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Create, cancel at once; exactly one of cancel and completion wins, every view
/// agrees on the winner, and the task never changes again.
async fn race(cx: &mut Cx<'_>, p: Protocol, step: &Step) -> StepResult {
    let d = driver(cx, p)?;
    let text = step.text.clone().unwrap_or_else(|| "race".into());
    for round in 0..3 {
        let mut t = d
            .create(&text, &new_message_id())
            .await
            .map_err(|e| op_err(p, "create", e))?;
        let r = d.cancel(&mut t).await;
        cx.tasks.insert(step.task.clone(), t);
        let ended = [
            CoreExpect::state(TaskState::Completed),
            CoreExpect::state(TaskState::Canceled),
        ];
        let view = settle(cx, p, &step.task, &ended, DEFAULT_LIMIT_MS).await?;
        let canceled = views::expected(p, &ended[1]).unwrap_or_default();
        let completed = views::expected(p, &ended[0]).unwrap_or_default();
        // Where the protocol shows both ends alike (CAS: a named loss), the
        // cancel's answer tells the winner.
        let cancel_won = if canceled == completed {
            r.is_ok()
        } else {
            view.state == canceled
        };
        let winner = if cancel_won {
            ended[1].clone()
        } else {
            ended[0].clone()
        };
        match &r {
            Err(e) if matches!(e.class, ErrorClass::NotCancelable | ErrorClass::Terminal) => {
                if view.state != completed {
                    return fail(format!(
                        "{p} round {round}: cancel was refused ({}) but the task shows `{}`, not `{completed}`",
                        e.detail, view.state
                    ));
                }
            }
            Err(e) => return Err(op_err(p, "cancel", e.clone())),
            // MCP acknowledges a cancel of a task that already ended.
            Ok(()) if p != Protocol::Mcp && canceled != completed && view.state != canceled => {
                return fail(format!(
                    "{p} round {round}: cancel succeeded but the task shows `{}`",
                    view.state
                ))
            }
            Ok(()) => {}
        }
        cx.settled.insert(step.task.clone(), winner.clone());
        tokio::time::sleep(Duration::from_millis(150)).await;
        // Nobody changes it afterwards, and every view names the same winner.
        let protocols: Vec<Protocol> = cx.suite.drivers.keys().copied().collect();
        for q in protocols {
            let dq = driver(cx, q)?;
            let mut t = task_of(cx, &step.task)?;
            let v = match dq.get(&mut t).await {
                Ok(v) => v,
                Err(e) if e.detail.starts_with("unsupported:") => continue,
                Err(e) => return Err(op_err(q, "read", e)),
            };
            let w = views::expected(q, &winner).unwrap_or_default();
            if v.state != w {
                return fail(format!(
                    "round {round}: {p} settled on {} but {q} shows `{}`, expected `{w}`",
                    winner.state, v.state
                ));
            }
        }
    }
    Ok(())
}

/// Reads the task on every protocol and compares each view with the mapping.
async fn views_agree(cx: &mut Cx<'_>, _s: &Scenario, step: &Step) -> StepResult {
    let mut es = expectations(&step.expect)?;
    if es.is_empty() {
        match cx.settled.get(&step.task) {
            Some(e) => es.push(e.clone()),
            None => return fail("views_agree: no expected state and the task never settled"),
        }
    }
    let protocols: Vec<Protocol> = cx.suite.drivers.keys().copied().collect();
    let mut seen = Vec::new();
    for q in protocols {
        match settle(cx, q, &step.task, &es, 3_000).await {
            Ok(v) => {
                check_view_extras(q, &v, &step.expect)?;
                seen.push(format!("{q}: {}", v.state));
            }
            Err(StepErr::Skip(_)) => {}
            Err(StepErr::Fail(m)) => {
                return fail(format!("{m} (views so far: {})", seen.join(", ")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::driver::ResumeObs;
    use async_trait::async_trait;

    /// A driver whose every task shows one fixed view word.
    struct Fixed(Protocol, &'static str);

    #[async_trait]
    impl Driver for Fixed {
        fn protocol(&self) -> Protocol {
            self.0
        }
        async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
            Ok(TaskRef {
                id: "t".into(),
                message_id: message_id.into(),
                text: text.into(),
                context_id: Some("c".into()),
                agui_run: None,
            })
        }
        async fn create_stream(
            &self,
            _: &str,
            _: &str,
            _: u64,
        ) -> Result<(TaskRef, StreamObs), OpError> {
            Err(OpError::unsupported("fake"))
        }
        async fn get(&self, _: &mut TaskRef) -> Result<View, OpError> {
            Ok(View {
                state: self.1.into(),
                ..View::default()
            })
        }
        async fn answer(&self, _: &mut TaskRef, _: &str) -> Result<(), OpError> {
            Ok(())
        }
        async fn authorize(&self, _: &mut TaskRef, _: &str) -> Result<(), OpError> {
            Ok(())
        }
        async fn cancel(&self, _: &mut TaskRef) -> Result<(), OpError> {
            Ok(())
        }
        async fn send(&self, _: &mut TaskRef, _: &str) -> Result<(), OpError> {
            Ok(())
        }
        async fn stream(
            &self,
            _: &mut TaskRef,
            _: &[String],
            _: u64,
        ) -> Result<StreamObs, OpError> {
            Err(OpError::unsupported("fake"))
        }
        async fn stream_resume(
            &self,
            _: &str,
            _: &str,
            _: usize,
            _: u64,
        ) -> Result<ResumeObs, OpError> {
            Err(OpError::unsupported("fake"))
        }
        async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
            Vec::new()
        }
    }

    fn suite(views: &[(Protocol, &'static str)]) -> Suite {
        let mut drivers: BTreeMap<Protocol, Arc<dyn Driver>> = BTreeMap::new();
        for (p, w) in views {
            drivers.insert(*p, Arc::new(Fixed(*p, w)));
        }
        Suite {
            selected: drivers.keys().copied().collect(),
            drivers,
            second: BTreeMap::new(),
            unavailable: BTreeMap::new(),
            scripted: (true, "test".into()),
            ask: true,
            echo: true,
            wire: Wire::default(),
            no_second_reason: "none".into(),
            upstream: None,
        }
    }

    const CROSS: &str = r#"
name = "cross-x"
title = "x"
kind = "cross"
requires = ["scripted", "two_protocols"]
[[invariants]]
id = "pauses"
text = "it pauses"
[[steps]]
action = "create"
text = "ask q?"
ms = 500
expect = { state = "input-required" }
checks = "pauses"
"#;

    #[tokio::test]
    async fn views_that_disagree_with_the_mapping_fail_a_cross_scenario() {
        let s = Scenario::parse("cross-x.toml", CROSS).expect("parses");
        // A2A and CAS agree with the mapping for input-required.
        let good = suite(&[
            (Protocol::A2a, "TASK_STATE_INPUT_REQUIRED"),
            (Protocol::Cas, "idle"),
        ]);
        assert_eq!(run_cell(&good, &s, Protocol::A2a).await, Verdict::Pass);
        // CAS claims `processing`: the implicit check after the step names it.
        let bad = suite(&[
            (Protocol::A2a, "TASK_STATE_INPUT_REQUIRED"),
            (Protocol::Cas, "processing"),
        ]);
        match run_cell(&bad, &s, Protocol::A2a).await {
            Verdict::Fail(f) => {
                assert!(f.invariant.starts_with("views-agree"), "{f:?}");
                assert!(
                    f.detail.contains("cas: expected input-required (`idle`"),
                    "{f:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        // Started on CAS, whose own view is wrong: the step itself fails.
        match run_cell(&bad, &s, Protocol::Cas).await {
            Verdict::Fail(f) => assert!(f.invariant.starts_with("pauses"), "{f:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_scenario_lost_over_the_bridges_upstream_is_skipped_naming_the_loss() {
        let text = format!(
            "{CROSS}\n[lost_upstream]\na2a = \"upstream::LOSS_X: the upstream cannot say it\"\n"
        );
        let s = Scenario::parse("cross-x.toml", &text).expect("parses");
        let mut bridged = suite(&[
            (Protocol::A2a, "TASK_STATE_INPUT_REQUIRED"),
            (Protocol::Cas, "idle"),
        ]);
        assert_eq!(skip_reason(&bridged, &s, Protocol::A2a), None);
        bridged.upstream = Some("a2a".into());
        assert_eq!(
            skip_reason(&bridged, &s, Protocol::A2a).as_deref(),
            Some(
                "lost over the bridge's a2a upstream: upstream::LOSS_X: the upstream cannot say it"
            )
        );
        bridged.upstream = Some("mcp".into());
        assert_eq!(skip_reason(&bridged, &s, Protocol::A2a), None);
    }

    #[test]
    fn words_for_a_race() {
        let es = [
            CoreExpect::state(TaskState::Completed),
            CoreExpect::state(TaskState::Canceled),
        ];
        assert_eq!(
            words(Protocol::A2a, &es),
            vec!["TASK_STATE_COMPLETED", "TASK_STATE_CANCELED"]
        );
        assert!(terminal_words(Protocol::Cas).contains(&"terminal/completed".to_string()));
        assert!(!terminal_words(Protocol::Mcp).contains(&"input_required".to_string()));
    }

    #[test]
    fn stream_checks() {
        let mut obs = StreamObs::default();
        obs.push_state("TASK_STATE_WORKING");
        obs.push_state("TASK_STATE_WORKING");
        obs.push_state("TASK_STATE_COMPLETED");
        obs.artifacts.insert("echo".into(), "hi".into());
        assert_eq!(obs.states.len(), 2);
        let e = Expect {
            state: Some("completed".into()),
            artifact: Some("hi".into()),
            ..Expect::default()
        };
        assert!(check_stream(Protocol::A2a, &obs, &e).is_ok());
        obs.push_state("TASK_STATE_WORKING");
        assert!(check_stream(Protocol::A2a, &obs, &e).is_err());
    }
}
