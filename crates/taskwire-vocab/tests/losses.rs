//! Every named loss of the translation layer, pinned: for each `Loss` constant a
//! concrete input for which the mapping function returns (or, where the adapter
//! acts on it, implies) exactly that loss. `every_loss_constant_is_pinned_here`
//! fails when a module gains a `LOSS_` constant this file does not pin.

use serde_json::json;
use taskwire_core::types::{TaskError, TerminalCause};
use taskwire_core::{CoreError, Message, Part, StoreError, TaskState};
use taskwire_vocab::table::{blank_task, Situation};
use taskwire_vocab::{a2a, agui, cas, mcp, Loss, LOSS_LEASE_LOST};

fn has(losses: &[Loss], l: Loss) -> bool {
    losses.contains(&l)
}

#[test]
fn a2a_losses() {
    let (_, l) = a2a::task_state(&Situation::ReviewPending.task());
    assert_eq!(l, Some(a2a::LOSS_REVIEW_AS_INPUT_REQUIRED));
    let (_, l) = a2a::task_state(&Situation::FailedInternal.task());
    assert_eq!(l, Some(a2a::LOSS_INTERNAL_AS_FAILED));
    let (_, l) = a2a::task_state(&Situation::Restricted.task());
    assert_eq!(l, Some(a2a::LOSS_RESTRICTED));
    let (_, l) = a2a::task_state(&Situation::Expired.task());
    assert_eq!(l, Some(a2a::LOSS_EXPIRED_AS_CANCELED));

    let mut m = Message::user_text("hi");
    assert_eq!(a2a::message_loss(&m), None);
    m.received_at = Some(Default::default());
    assert_eq!(a2a::message_loss(&m), Some(a2a::LOSS_MESSAGE_TIMESTAMPS));
    assert_eq!(a2a::input_message_loss(0, 0), None);
    assert_eq!(
        a2a::input_message_loss(1, 0),
        Some(a2a::LOSS_MESSAGE_EXTENSIONS)
    );

    let mut p = Part::text("x");
    p.filename = Some(String::new());
    let (a, l) = a2a::part_to_a2a(&p);
    assert_eq!(l, vec![a2a::LOSS_EMPTY_STRING_FIELDS]);
    assert_eq!(a2a::part_from_a2a(a, 0).unwrap().filename, None);
    let (_, l) = a2a::part_to_a2a(&Part::data(json!({"x": 2.0})));
    assert_eq!(l, vec![a2a::LOSS_DATA_NUMBERS]);
    let (_, l) = a2a::part_to_a2a(&Part::data(json!({"x": 2.5, "n": 3})));
    assert!(l.is_empty());

    let big = CoreError::TooLarge {
        what: "m".into(),
        size: 2,
        limit: 1,
    };
    assert_eq!(a2a::error_loss(&big), Some(a2a::LOSS_ERROR_REFUSALS));
    assert_eq!(
        a2a::error_loss(&CoreError::Contention),
        Some(a2a::LOSS_ERROR_RETRYABLE)
    );
    // A store that did not answer: -32603 like an internal error on JSON-RPC,
    // told apart only by its ErrorInfo.
    let gone = CoreError::Unavailable("no answer".into());
    assert_eq!(a2a::error_loss(&gone), Some(a2a::LOSS_ERROR_UNAVAILABLE));
    let (k, _) = a2a::error_from_core(&gone);
    assert_eq!(k.code(), a2a::A2aErrorKind::Internal.code());
    assert_ne!(k.reason(), a2a::A2aErrorKind::Internal.reason());
    let wrong = CoreError::WrongState {
        what: "x".into(),
        state: TaskState::Working,
    };
    assert_eq!(a2a::error_loss(&wrong), Some(a2a::LOSS_ERROR_UNSUPPORTED));
    assert_eq!(
        a2a::error_loss(&CoreError::LeaseLost),
        Some(LOSS_LEASE_LOST)
    );
    assert_eq!(a2a::error_loss(&CoreError::NotFound), None);
}

#[test]
fn event_losses() {
    use taskwire_core::EventKind;
    let user = EventKind::Message {
        message: Box::new(Message::user_text("hi")),
        queued: false,
    };
    assert_eq!(
        a2a::frame_of(&user),
        (None, Some(a2a::LOSS_USER_MESSAGES_NOT_STREAMED))
    );
    let agent = EventKind::Message {
        message: Box::new(Message::agent_text("hi")),
        queued: false,
    };
    assert_eq!(
        a2a::frame_of(&agent),
        (Some(a2a::A2aFrame::StatusMessage), None)
    );
    assert_eq!(
        mcp::notifies(&agent),
        (false, Some(mcp::LOSS_PROGRESS_NOT_NOTIFIED))
    );
    let granted = EventKind::AuthGranted {
        provider: "github".into(),
    };
    assert_eq!(
        a2a::frame_of(&granted),
        (None, Some(a2a::LOSS_INTERACTION_DETAILS))
    );
    assert_eq!(mcp::notifies(&granted), (true, None));
    let step = EventKind::Step {
        name: "s".into(),
        phase: taskwire_core::StepPhase::Started,
    };
    assert_eq!(a2a::frame_of(&step), (None, Some(a2a::LOSS_STEPS)));
    let state = EventKind::StateDelta { delta: json!([]) };
    assert_eq!(a2a::frame_of(&state), (None, Some(a2a::LOSS_AGENT_STATE)));
    assert_eq!(
        a2a::frame_of(&EventKind::TurnStarted { turn: 1 }),
        (None, None)
    );
}

#[test]
fn mcp_losses() {
    use mcp::Revision::{V2025_11_25, V2026_07_28};
    assert_eq!(
        mcp::status(&Situation::Submitted.task(), V2026_07_28).1,
        Some(mcp::LOSS_SUBMITTED)
    );
    assert_eq!(
        mcp::status(&Situation::AuthRequired.task(), V2026_07_28).1,
        Some(mcp::LOSS_AUTH_REQUIRED)
    );
    assert_eq!(
        mcp::status(&Situation::FailedAgent.task(), V2026_07_28).1,
        Some(mcp::LOSS_AGENT_FAILED)
    );
    assert_eq!(
        mcp::status(&Situation::FailedAgent.task(), V2025_11_25).1,
        Some(mcp::LOSS_2025_11_25_FAILED)
    );
    assert_eq!(
        mcp::status(&Situation::Rejected.task(), V2026_07_28).1,
        Some(mcp::LOSS_REJECTED)
    );
    assert_eq!(
        mcp::status(&Situation::Restricted.task(), V2025_11_25).1,
        Some(mcp::LOSS_RESTRICTED)
    );
    assert_eq!(
        mcp::status(&Situation::Expired.task(), V2026_07_28).1,
        Some(mcp::LOSS_EXPIRED)
    );
    assert_eq!(
        mcp::status(&Situation::AwaitingMessage.task(), V2026_07_28).1,
        Some(mcp::LOSS_NOTHING_TO_ANSWER)
    );
    assert_eq!(
        mcp::status(&Situation::InputRequired.task(), V2026_07_28).1,
        None
    );

    let t = Situation::ReviewByOther.task();
    let (reqs, l) = mcp::input_requests(&t, V2026_07_28, "");
    assert!(reqs.is_empty(), "a review of someone else is not offered");
    assert_eq!(l, vec![mcp::LOSS_REVIEW_AS_FORM]);

    // Authorisation answers: cancel leaves it pending, decline cancels the task
    // (the adapter cancels on `granted: false`).
    let t = Situation::AuthRequired.task();
    let key = format!("{}github", mcp::AUTH_KEY_PREFIX);
    assert_eq!(
        mcp::input_answer(&t, &key, &json!({"action": "cancel"})).unwrap(),
        mcp::InputAnswer::Ignored,
        "{}",
        mcp::LOSS_AUTH_CANCEL.0
    );
    assert_eq!(
        mcp::input_answer(&t, &key, &json!({"action": "decline"})).unwrap(),
        mcp::InputAnswer::Auth {
            provider: "github".into(),
            granted: false
        },
        "{}",
        mcp::LOSS_AUTH_DECLINE_CANCELS.0
    );

    let mut done = blank_task(TaskState::Completed);
    done.terminal_cause = Some(TerminalCause::Completed);
    let mut p = Part::raw(vec![1], "application/zip");
    p.metadata.insert("k".into(), json!(1));
    done.artifacts.push(taskwire_core::Artifact {
        artifact_id: "a".into(),
        name: Some("named".into()),
        description: None,
        parts: vec![p, Part::data(json!(1))],
        metadata: Default::default(),
        complete: true,
    });
    let (_, l) = mcp::call_tool_result(&done);
    for want in [
        mcp::LOSS_ARTIFACT_FRAMING,
        mcp::LOSS_RAW_AS_RESOURCE,
        mcp::LOSS_PART_METADATA,
        mcp::LOSS_DATA_WRAPPED,
    ] {
        assert!(has(&l, want), "{want:?} missing from {l:?}");
    }
    let mut named = Part::text("t");
    named.filename = Some("a.txt".into());
    assert_eq!(
        mcp::content_of_part(&named, "a").1,
        vec![mcp::LOSS_PART_METADATA]
    );
    let mut link = Part::url("https://example.com/x");
    link.filename = Some("x".into());
    assert!(
        mcp::content_of_part(&link, "a").1.is_empty(),
        "a link keeps its name"
    );

    let c = Situation::Canceled.task();
    let (a, l) = mcp::answer(&c, mcp::Answering::TasksResult);
    assert_eq!(l, Some(mcp::LOSS_CANCELLED_AS_ERROR));
    assert_eq!(a.unwrap_err().code, mcp::INVALID_PARAMS);
    let (a, _) = mcp::answer(&c, mcp::Answering::ToolCall);
    assert_eq!(a.unwrap_err().code, mcp::INTERNAL_ERROR);
    assert!(
        mcp::answer(&Situation::Completed.task(), mcp::Answering::ToolCall)
            .0
            .is_ok()
    );

    assert_eq!(mcp::ttl(&Situation::Working.task()).1, mcp::LOSS_TTL_ORIGIN);

    let nf = mcp::error_from_core(&CoreError::NotFound, Some("abc"));
    assert_eq!(nf, (mcp::INVALID_PARAMS, "unknown task: abc".to_string()));
    assert_eq!(
        mcp::error_loss(&CoreError::NotFound),
        Some(mcp::LOSS_ERROR_REFUSALS)
    );
    assert_eq!(
        mcp::error_loss(&CoreError::ShuttingDown),
        Some(mcp::LOSS_ERROR_RETRYABLE)
    );
    let gone = CoreError::Unavailable("no answer".into());
    assert_eq!(mcp::error_loss(&gone), Some(mcp::LOSS_ERROR_UNAVAILABLE));
    assert_eq!(mcp::error_from_core(&gone, None).0, mcp::INTERNAL_ERROR);
    assert_eq!(
        mcp::error_data(&gone).expect("data")["reason"],
        "unavailable"
    );
    assert_eq!(
        mcp::error_loss(&CoreError::LeaseLost),
        Some(LOSS_LEASE_LOST)
    );
    let store = CoreError::Store(StoreError::Backend("dsn=secret".into()));
    assert_eq!(
        mcp::error_from_core(&store, None),
        (mcp::INTERNAL_ERROR, "internal error".to_string())
    );
}

#[test]
fn agui_losses() {
    let run = |s: Situation| {
        let t = s.task();
        agui::run_end(t.state, t.terminal_cause, t.error.as_ref()).1
    };
    assert_eq!(run(Situation::Submitted), Some(agui::LOSS_SUBMITTED));
    assert_eq!(run(Situation::Working), None);
    assert_eq!(run(Situation::Rejected), Some(agui::LOSS_REJECTED_AS_ERROR));
    assert_eq!(
        run(Situation::Restricted),
        Some(agui::LOSS_REJECTED_AS_ERROR)
    );
    assert_eq!(
        run(Situation::Expired),
        Some(agui::LOSS_EXPIRED_AS_CANCELLED)
    );
    assert_eq!(
        agui::interrupts(&Situation::ReviewByOther.task()).1,
        Some(agui::LOSS_FOREIGN_REVIEW)
    );
    let (ints, l) = agui::interrupts(&Situation::AwaitingMessage.task());
    assert_eq!(l, Some(agui::LOSS_NOTHING_PENDING));
    assert_eq!(
        ints[0].kind,
        agui::InterruptKind::Input(agui::PLACEHOLDER_INPUT_KEY.into())
    );
    assert_eq!(
        agui::message_text(&[Part::text("a"), Part::text("b")]).1,
        Some(agui::LOSS_TEXT_JOINED)
    );
    assert_eq!(
        agui::message_text(&[Part::data(json!(1))]).1,
        Some(agui::LOSS_NON_TEXT_PARTS)
    );
    assert_eq!(
        agui::auth_resume(agui::ResumeStatus::Cancelled).1,
        Some(agui::LOSS_AUTH_DECLINE_CANCELS)
    );
    assert_eq!(
        agui::input_response(agui::ResumeStatus::Resolved, Some(&json!(3)))
            .unwrap()
            .1,
        Some(agui::LOSS_PAYLOAD_WRAPPED)
    );
    assert_eq!(
        agui::error_loss(&CoreError::NotCancelable {
            state: TaskState::Completed
        }),
        Some(agui::LOSS_ERROR_WRONG_STATE)
    );
    assert_eq!(
        agui::error_loss(&CoreError::Contention),
        Some(agui::LOSS_ERROR_UNAVAILABLE)
    );
    let gone = CoreError::Unavailable("no answer".into());
    assert_eq!(agui::error_loss(&gone), Some(agui::LOSS_ERROR_UNAVAILABLE));
    assert_eq!(agui::core_error(&gone).0, agui::codes::UNAVAILABLE);
    assert_eq!(agui::http_status(&gone), 503);
    assert_eq!(agui::error_loss(&CoreError::NotFound), None);
    // The internal failure's details stay with operators.
    let t = Situation::FailedInternal.task();
    assert_eq!(
        agui::run_end(t.state, t.terminal_cause, t.error.as_ref()).0,
        agui::RunEnd::Error {
            code: "internal".into(),
            message: "internal error".into()
        }
    );
}

#[test]
fn cas_losses() {
    assert_eq!(
        cas::phase(&Situation::Submitted.task()).1,
        Some(cas::LOSS_SUBMITTED_AS_PROCESSING)
    );
    assert_eq!(
        cas::phase(&Situation::ReviewByOther.task()).1,
        Some(cas::LOSS_FOREIGN_REVIEW)
    );
    let reason = |s: Situation| cas::terminal_reason(&s.task()).1;
    assert_eq!(reason(Situation::Canceled), Some(cas::LOSS_CANCELED));
    assert_eq!(reason(Situation::Expired), Some(cas::LOSS_EXPIRED));
    assert_eq!(reason(Situation::FailedAgent), Some(cas::LOSS_FAILED_KIND));
    assert_eq!(reason(Situation::Rejected), Some(cas::LOSS_REJECTED));
    assert_eq!(reason(Situation::Restricted), None);
    // A guardrail lock recorded as failed is still `restricted`.
    let mut t = blank_task(TaskState::Failed);
    t.terminal_cause = Some(TerminalCause::Restricted);
    t.error = Some(TaskError {
        code: "restricted".into(),
        message: "locked".into(),
    });
    assert_eq!(
        cas::terminal_reason(&t),
        (Some(cas::TerminalReason::Restricted), None)
    );

    assert_eq!(
        cas::part_to_cas(&Part::raw(vec![1], "image/png")).1,
        Some(cas::LOSS_RAW_BYTES)
    );
    assert_eq!(
        cas::part_to_cas(&Part::url("https://x.example/a")).1,
        Some(cas::LOSS_URL_AS_FILE)
    );
    assert_eq!(
        cas::part_to_cas(&Part::data(json!({}))).1,
        Some(cas::LOSS_DATA_AS_TEXT)
    );
    let mut named = Part::text("t");
    named.filename = Some("a.txt".into());
    assert_eq!(cas::part_to_cas(&named).1, Some(cas::LOSS_FILENAME));
    assert_eq!(cas::artifact_marker("a", None).1, cas::LOSS_ARTIFACT);

    assert_eq!(
        cas::error_loss(&CoreError::LeaseLost),
        Some(cas::LOSS_ERROR_UNAVAILABLE)
    );
    let gone = CoreError::Unavailable("no answer".into());
    assert_eq!(cas::error_loss(&gone), Some(cas::LOSS_ERROR_UNAVAILABLE));
    assert_eq!(cas::wire_error(&gone).status, 503);
    assert_eq!(
        cas::error_loss(&CoreError::NotCancelable {
            state: TaskState::Failed
        }),
        Some(cas::LOSS_ERROR_NOT_CANCELABLE)
    );
    assert_eq!(
        cas::error_loss(&CoreError::IllegalTransition {
            from: TaskState::Submitted,
            to: TaskState::Completed
        }),
        Some(cas::LOSS_ERROR_CONFLICT)
    );
    let store = CoreError::Store(StoreError::Backend("dsn=secret".into()));
    assert_eq!(cas::error_message(&store), "internal error");
    assert_eq!(cas::output_error(TaskState::Working, None), None);
    let e = TaskError {
        code: "agent_failed".into(),
        message: "m".into(),
    };
    assert_eq!(
        cas::output_error(TaskState::Failed, Some(&e)).as_deref(),
        Some("agent_failed")
    );
}

/// Every `pub const LOSS_*` of the crate is named in this file as
/// `<module>::<NAME>` (or bare, for the crate root), so none goes unpinned.
#[test]
fn every_loss_constant_is_pinned_here() {
    let me = include_str!("losses.rs");
    let sources = [
        ("", include_str!("../src/lib.rs")),
        ("a2a::", include_str!("../src/a2a.rs")),
        ("mcp::", include_str!("../src/mcp.rs")),
        ("agui::", include_str!("../src/agui.rs")),
        ("cas::", include_str!("../src/cas.rs")),
        ("table::", include_str!("../src/table.rs")),
    ];
    let mut missing = Vec::new();
    let mut count = 0;
    for (module, src) in sources {
        for line in src.lines() {
            let Some(rest) = line.trim().strip_prefix("pub const LOSS_") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            count += 1;
            let path = format!("{module}LOSS_{name}");
            // Used somewhere in this file as a whole identifier.
            let used = me.match_indices(path.as_str()).any(|(i, _)| {
                !me[i + path.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            });
            if !used {
                missing.push(path);
            }
        }
    }
    assert!(count > 40, "the scan found only {count} losses");
    assert!(
        missing.is_empty(),
        "losses without a pinning test: {missing:?}"
    );
}

/// Every loss of the bridge's inbound mappings (`upstream`, `upstream::mcp`)
/// is listed by name in docs/state-mapping.md.
#[test]
fn every_upstream_loss_is_listed_in_the_state_mapping() {
    let doc = include_str!("../../../docs/state-mapping.md");
    let sources = [
        ("upstream::", include_str!("../src/upstream.rs")),
        ("upstream::mcp::", include_str!("../src/upstream/mcp.rs")),
        ("upstream::agui::", include_str!("../src/upstream/agui.rs")),
    ];
    let mut count = 0;
    let mut missing = Vec::new();
    for (module, src) in sources {
        for line in src.lines() {
            let Some(rest) = line.trim().strip_prefix("pub const LOSS_") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            count += 1;
            let path = format!("`{module}LOSS_{name}`");
            if !doc.contains(&path) {
                missing.push(path);
            }
        }
    }
    assert!(count >= 15, "the scan found only {count} upstream losses");
    assert!(
        missing.is_empty(),
        "not in docs/state-mapping.md: {missing:?}"
    );
    // And each is a real constant with its text.
    use taskwire_vocab::upstream::{self, agui, mcp};
    for l in [
        upstream::LOSS_UPSTREAM_AUTH_PROVIDER,
        upstream::LOSS_UPSTREAM_INPUT_SCHEMA,
        upstream::LOSS_DECLINE_AS_DATA,
        upstream::LOSS_UPSTREAM_HISTORY,
        mcp::LOSS_MCP_RESULT_FRAMING,
        mcp::LOSS_MCP_SAMPLING_ROOTS,
        mcp::LOSS_MCP_CALL_IDEMPOTENCY,
        mcp::LOSS_MCP_TOOL_CHOICE,
        mcp::LOSS_MCP_PROGRESS,
        mcp::LOSS_MCP_BLOCKING_CANCEL,
        mcp::LOSS_MCP_2025_11_25_BLOCKING_INPUT,
        mcp::LOSS_MCP_BLOCKING_CALL_LOST,
        mcp::LOSS_MCP_2025_11_25_SESSION,
        agui::LOSS_AGUI_STATE,
        agui::LOSS_AGUI_TOOL_CALLS,
        agui::LOSS_AGUI_CANCEL_AND_RESUME,
        agui::LOSS_AGUI_CONFIRMATION_AS_INPUT,
        agui::LOSS_AGUI_TEXT_AS_MESSAGES,
    ] {
        assert!(!l.0.is_empty());
    }
}

/// A token without the scope an operation needs (issue 41): JSON-RPC has no
/// code for it, so A2A and MCP answer -32600 like an invalid request and tell it
/// apart by HTTP 403 (A2A also by its ErrorInfo); gRPC, HTTP+JSON, AG-UI and
/// CAS keep it.
#[test]
fn a_missing_scope_is_forbidden_everywhere() {
    let e = CoreError::Forbidden {
        needed: taskwire_core::Permission::Write,
    };
    assert_eq!(a2a::error_loss(&e), Some(a2a::LOSS_ERROR_FORBIDDEN));
    let (k, _) = a2a::error_from_core(&e);
    assert_eq!(k, a2a::A2aErrorKind::PermissionDenied);
    assert_eq!(k.code(), a2a::A2aErrorKind::InvalidRequest.code());
    assert_eq!(k.reason(), "PERMISSION_DENIED");
    assert_eq!(k.grpc_code() as i32, 7);
    assert_eq!(k.http_status(), 403);
    assert_eq!(mcp::error_loss(&e), Some(mcp::LOSS_ERROR_FORBIDDEN));
    assert_eq!(mcp::error_from_core(&e, None).0, mcp::INVALID_REQUEST);
    assert_eq!(agui::error_loss(&e), None);
    assert_eq!(agui::core_error(&e).0, agui::codes::FORBIDDEN);
    assert_eq!(agui::http_status(&e), 403);
    assert_eq!(cas::error_loss(&e), None);
    let w = cas::wire_error(&e);
    assert_eq!((w.status, w.code), (403, cas::ERR_FORBIDDEN));
}
