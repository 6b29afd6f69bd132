//! Property test: random core event logs (cancel and failure mid-step, interrupts,
//! artifacts in chunks, state changes, unbalanced steps) rendered as runs, as a
//! replay and as reconnects always pass the verifier.

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_json::json;
use taskwire_agui::render::{render_run, resume_after, Pos, Renderer, RunSpec};
use taskwire_agui::verify::verify_all;
use taskwire_agui::wire::{Event, EventBody, Outcome};
use taskwire_core::event::{Event as CoreEvent, EventKind, StepPhase};
use taskwire_core::types::{
    Artifact, AuthWait, InputRequest, Review, ReviewDecision, TaskError, TerminalCause,
};
use taskwire_core::{Message, Part, TaskId, TaskState};

#[derive(Clone, Debug)]
enum Op {
    Text(String),
    Chunk(u8, bool, bool),
    Step(u8, bool),
    State,
    Delta,
    AskInput(u8),
    AskAuth(u8),
    AskReview(u8),
    Interrupt,
    Resume,
    End(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        "[a-z ]{0,6}".prop_map(Op::Text),
        (0u8..3, any::<bool>(), any::<bool>()).prop_map(|(a, b, c)| Op::Chunk(a, b, c)),
        (0u8..3, any::<bool>()).prop_map(|(a, b)| Op::Step(a, b)),
        Just(Op::State),
        Just(Op::Delta),
        (0u8..3).prop_map(Op::AskInput),
        (0u8..2).prop_map(Op::AskAuth),
        (0u8..2).prop_map(Op::AskReview),
        Just(Op::Interrupt),
        Just(Op::Resume),
        (0u8..6).prop_map(Op::End),
    ]
}

/// Builds a log that follows the transition table from the ops.
fn build(ops: &[Op]) -> Vec<CoreEvent> {
    let id = TaskId::new();
    let mut kinds = vec![
        EventKind::Created {
            context_id: "thread".into(),
            agent: "a".into(),
        },
        EventKind::Message {
            message: Box::new(Message::user_text("go")),
            queued: true,
        },
        EventKind::Status {
            from: TaskState::Submitted,
            to: TaskState::Working,
            message: None,
            cause: None,
            error: None,
        },
        EventKind::TurnStarted { turn: 1 },
    ];
    let mut state = TaskState::Working;
    let now = Utc.timestamp_millis_opt(1_700_000_000_000).unwrap();
    for o in ops {
        if state.is_terminal() {
            break;
        }
        let working = state == TaskState::Working;
        match o {
            Op::Text(t) if working => kinds.push(EventKind::Message {
                message: Box::new(Message::agent_text(t.clone())),
                queued: false,
            }),
            Op::Chunk(a, append, last) if working => kinds.push(EventKind::Artifact {
                artifact: Box::new(Artifact {
                    artifact_id: format!("art-{a}"),
                    name: Some("x".into()),
                    description: None,
                    parts: vec![Part::text("chunk")],
                    metadata: Default::default(),
                    complete: *last,
                }),
                append: *append,
                last_chunk: *last,
            }),
            Op::Step(n, start) if working => kinds.push(EventKind::Step {
                name: format!("s{n}"),
                phase: if *start {
                    StepPhase::Started
                } else {
                    StepPhase::Finished
                },
            }),
            Op::State if working => kinds.push(EventKind::StateSnapshot {
                snapshot: json!({"n": 1}),
            }),
            Op::Delta if working => kinds.push(EventKind::StateDelta {
                delta: json!([{"op": "add", "path": "/k", "value": 2}]),
            }),
            Op::AskInput(k) if working => kinds.push(EventKind::InputRequested {
                requests: vec![InputRequest {
                    key: format!("k{k}"),
                    prompt: "what?".into(),
                    schema: json!({"type": "object"}),
                    since: now,
                    kind: Default::default(),
                    subject: None,
                }],
            }),
            Op::AskAuth(p) if working => kinds.push(EventKind::AuthRequired {
                auth: Box::new(AuthWait {
                    provider: format!("p{p}"),
                    since: now,
                    operations: vec!["op".into()],
                    url: None,
                }),
            }),
            Op::AskReview(r) if working => kinds.push(EventKind::ReviewRequested {
                review: Box::new(Review {
                    id: format!("r{r}"),
                    reviewer: "alice".into(),
                    summary: "ok?".into(),
                    since: now,
                }),
            }),
            Op::Interrupt if working => {
                kinds.push(EventKind::Status {
                    from: state,
                    to: TaskState::InputRequired,
                    message: Some(Box::new(Message::agent_text("waiting"))),
                    cause: None,
                    error: None,
                });
                state = TaskState::InputRequired;
            }
            Op::Resume if state.is_interrupted() => {
                kinds.push(EventKind::InputAnswered {
                    keys: vec!["k0".into(), "k1".into(), "k2".into()],
                });
                kinds.push(EventKind::AuthGranted {
                    provider: "p0".into(),
                });
                kinds.push(EventKind::ReviewDecided {
                    review_id: "r0".into(),
                    decision: ReviewDecision::Approve,
                    by: "alice".into(),
                });
                kinds.push(EventKind::Status {
                    from: state,
                    to: TaskState::Working,
                    message: None,
                    cause: None,
                    error: None,
                });
                kinds.push(EventKind::TurnStarted { turn: 2 });
                state = TaskState::Working;
            }
            Op::End(which) => {
                let (to, cause, error) = match which {
                    0 => (TaskState::Completed, TerminalCause::Completed, None),
                    1 => (
                        TaskState::Failed,
                        TerminalCause::AgentFailed,
                        Some(TaskError {
                            code: "agent_failed".into(),
                            message: "boom".into(),
                        }),
                    ),
                    2 => (TaskState::Failed, TerminalCause::Internal, None),
                    3 => (
                        TaskState::Rejected,
                        TerminalCause::Rejected,
                        Some(TaskError {
                            code: "rejected".into(),
                            message: "no".into(),
                        }),
                    ),
                    4 => (TaskState::Canceled, TerminalCause::Canceled, None),
                    _ => (TaskState::Canceled, TerminalCause::Expired, None),
                };
                if to == TaskState::Completed && !working {
                    continue;
                }
                kinds.push(EventKind::Status {
                    from: state,
                    to,
                    message: Some(Box::new(Message::agent_text("done"))),
                    cause: Some(cause),
                    error: error.map(Box::new),
                });
                state = to;
            }
            _ => {}
        }
    }
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| CoreEvent {
            task_id: id.clone(),
            seq: i as u64 + 1,
            version: i as u64 + 1,
            at: now,
            kind,
        })
        .collect()
}

fn spec(log: &[CoreEvent], run: &str) -> RunSpec {
    RunSpec {
        thread_id: "thread".into(),
        run_id: run.into(),
        parent_run_id: None,
        task_id: log[0].task_id.to_string(),
        idle_lifespan_ms: Some(60_000),
    }
}

/// Where each run starts: 0, then after every interrupting status.
fn run_starts(log: &[CoreEvent]) -> Vec<u64> {
    let mut v = vec![0];
    for e in log {
        if let EventKind::Status { to, .. } = &e.kind {
            if to.is_interrupted() {
                v.push(e.seq);
            }
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_rendering_verifies(ops in proptest::collection::vec(op(), 0..40), cut in 0usize..200) {
        let log = build(&ops);
        let terminal = log.iter().any(|e| e.kind.terminal_state().is_some());
        for (i, start) in run_starts(&log).into_iter().enumerate() {
            let mut r = Renderer::new(spec(&log, &format!("run-{i}")), vec![]);
            let frames = render_run(&mut r, start, &log, 0);
            let events: Vec<Event> = frames.iter().map(|f| f.event.clone()).collect();
            // Frame positions strictly increase, so Last-Event-ID is unambiguous.
            for w in frames.windows(2) {
                prop_assert!(w[0].pos < w[1].pos, "positions {:?} then {:?}", w[0].pos, w[1].pos);
            }
            // Nothing is silently dropped: every core event of the run renders
            // as at least one frame.
            let last_seq = frames.last().map_or(start, |f| f.pos.seq);
            for e in log.iter().filter(|e| e.seq > start && e.seq <= last_seq) {
                prop_assert!(
                    frames.iter().any(|f| f.pos.seq == e.seq),
                    "core event {} ({:?}) rendered as nothing", e.seq, e.kind
                );
            }
            if r.is_closed() {
                verify_all(&events).map_err(|v| TestCaseError::fail(format!("{v}\n{events:#?}")))?;
                // A reconnect after any frame is valid on its own.
                let last = frames[cut % frames.len()].pos;
                let resumed: Vec<Event> = resume_after(&frames, last).into_iter().map(|f| f.event).collect();
                if !resumed.is_empty() {
                    verify_all(&resumed).map_err(|v| TestCaseError::fail(format!("resume after {last}: {v}\n{resumed:#?}")))?;
                }
            } else {
                // Still open: the prefix is valid so far.
                let mut v = taskwire_agui::Verifier::new();
                for e in &events {
                    v.push(e).map_err(|v| TestCaseError::fail(format!("{v}")))?;
                }
                prop_assert!(!terminal || i > 0);
            }
        }
        // The whole log replayed as restated runs is one valid stream.
        let mut r = Renderer::new(spec(&log, "replay"), vec![]);
        let mut replay: Vec<Event> = Vec::new();
        for (n, e) in log.iter().enumerate() {
            r.set_run(format!("replay-{n}"), None);
            replay.extend(r.restate(e));
        }
        if !replay.is_empty() {
            verify_all(&replay).map_err(|v| TestCaseError::fail(format!("replay: {v}\n{replay:#?}")))?;
        }
        for e in &replay {
            prop_assert!(!matches!(e.body, EventBody::TextMessageStart { .. }), "replay restates, never streams text");
        }
    }
}

#[test]
fn cancel_mid_step_closes_the_step_first() {
    let log = build(&[Op::Step(0, true), Op::Chunk(0, false, false), Op::End(4)]);
    let mut r = Renderer::new(spec(&log, "r"), vec![]);
    let events: Vec<Event> = render_run(&mut r, 0, &log, 0)
        .into_iter()
        .map(|f| f.event)
        .collect();
    verify_all(&events).unwrap();
    let n = events.len();
    assert!(matches!(events[n - 2].body, EventBody::StepFinished { .. }));
    assert!(matches!(
        events[n - 1].body,
        EventBody::RunFinished {
            outcome: Some(Outcome::Cancelled),
            ..
        }
    ));
}

#[test]
fn failure_mid_step_ends_with_run_error() {
    let log = build(&[Op::Step(1, true), Op::Text("hi".into()), Op::End(1)]);
    let mut r = Renderer::new(spec(&log, "r"), vec![]);
    let events: Vec<Event> = render_run(&mut r, 0, &log, 0)
        .into_iter()
        .map(|f| f.event)
        .collect();
    verify_all(&events).unwrap();
    assert!(matches!(
        &events.last().unwrap().body,
        EventBody::RunError { code: Some(c), message } if c == "agent_failed" && message == "boom"
    ));
}

#[test]
fn interrupt_restates_state_and_messages_and_lists_interrupts() {
    let log = build(&[
        Op::State,
        Op::AskInput(0),
        Op::AskAuth(1),
        Op::AskReview(0),
        Op::Interrupt,
    ]);
    let mut r = Renderer::new(spec(&log, "r"), vec![]);
    let events: Vec<Event> = render_run(&mut r, 0, &log, 0)
        .into_iter()
        .map(|f| f.event)
        .collect();
    verify_all(&events).unwrap();
    let n = events.len();
    assert!(matches!(
        events[n - 3].body,
        EventBody::StateSnapshot { .. }
    ));
    assert!(matches!(
        events[n - 2].body,
        EventBody::MessagesSnapshot { .. }
    ));
    let EventBody::RunFinished {
        outcome: Some(Outcome::Interrupt { interrupts }),
        ..
    } = &events[n - 1].body
    else {
        panic!("not an interrupt: {:?}", events[n - 1]);
    };
    let reasons: Vec<&str> = interrupts.iter().map(|i| i.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["input_required", "taskwire:auth_required", "confirmation"]
    );
    assert!(interrupts.iter().all(|i| i.expires_at.is_some()));
}

#[test]
fn positions_parse_back() {
    let p = Pos { seq: 12, k: 3 };
    assert_eq!(Pos::parse(&p.to_string()), Some(p));
    assert_eq!(Pos::parse("x"), None);
}
