//! What the Rust wire types serialize to validates against their committed
//! schemas, with every optional member absent and with every one present: the
//! golden fixtures cover what the adapters happen to emit in their scenarios,
//! this covers the rest of each type.

use serde::Serialize;
use serde_json::{json, Map, Value};
use taskwire_agui::wire::{
    Event, EventBody, InputMessage, Interrupt, Outcome, ResumeEntry, RunAgentInput,
};
use taskwire_cas::wire::{
    Decision, DecisionBody, ErrorBody, ErrorDetail, HostBody, IoType, MessageEntry,
    NotificationWire, ReviewEntry, ReviewList, Status, StatusObject,
};
use taskwire_schemas::mcp;
use taskwire_schemas::Validators;
use taskwire_vocab::cas::{ContentPart, NotificationKind, Phase, TerminalReason};

const T: &str = "2026-07-28T12:00:00.000Z";

fn check<S: Serialize>(v: &mut Validators, protocol: &str, kind: &str, value: &S) {
    let json = serde_json::to_value(value).expect("serialize");
    if let Err(e) = v.validate(protocol, kind, &json) {
        panic!("{protocol}/{kind} refuses {json}:\n{}", e.join("\n"));
    }
}

fn agui_events() -> Vec<EventBody> {
    let s = |x: &str| x.to_string();
    let interrupt = Interrupt {
        id: s("i1"),
        reason: s("input_required"),
        message: Some(s("what colour?")),
        response_schema: Some(json!({"type": "object"})),
        expires_at: Some(s(T)),
        metadata: Some(json!({"provider": "github"})),
    };
    let bare_interrupt = Interrupt {
        id: s("i2"),
        reason: s("confirmation"),
        message: None,
        response_schema: None,
        expires_at: None,
        metadata: None,
    };
    let patch = json!([{"op": "add", "path": "/a", "value": 1}, {"op": "move", "from": "/a", "path": "/b"}]);
    vec![
        EventBody::RunStarted {
            thread_id: s("t"),
            run_id: s("r"),
            protocol_version: None,
            parent_run_id: None,
        },
        EventBody::RunStarted {
            thread_id: s("t"),
            run_id: s("r"),
            protocol_version: Some(s("1.0")),
            parent_run_id: Some(s("r0")),
        },
        EventBody::RunFinished {
            thread_id: s("t"),
            run_id: s("r"),
            result: None,
            outcome: None,
        },
        EventBody::RunFinished {
            thread_id: s("t"),
            run_id: s("r"),
            result: Some(json!({"answer": 42})),
            outcome: Some(Outcome::Success),
        },
        EventBody::RunFinished {
            thread_id: s("t"),
            run_id: s("r"),
            result: None,
            outcome: Some(Outcome::Cancelled),
        },
        EventBody::RunFinished {
            thread_id: s("t"),
            run_id: s("r"),
            result: None,
            outcome: Some(Outcome::Interrupt {
                interrupts: vec![interrupt, bare_interrupt],
            }),
        },
        EventBody::RunError {
            message: s("boom"),
            code: None,
        },
        EventBody::RunError {
            message: s("boom"),
            code: Some(s("rejected")),
        },
        EventBody::StepStarted { step_name: s("s") },
        EventBody::StepFinished { step_name: s("s") },
        EventBody::TextMessageStart {
            message_id: s("m"),
            role: None,
        },
        EventBody::TextMessageStart {
            message_id: s("m"),
            role: Some(s("assistant")),
        },
        EventBody::TextMessageContent {
            message_id: s("m"),
            delta: s("hi"),
        },
        EventBody::TextMessageEnd { message_id: s("m") },
        EventBody::ToolCallStart {
            tool_call_id: s("c"),
            tool_call_name: s("f"),
        },
        EventBody::ToolCallArgs {
            tool_call_id: s("c"),
            delta: s("{"),
        },
        EventBody::ToolCallEnd {
            tool_call_id: s("c"),
        },
        EventBody::ReasoningMessageStart { message_id: s("m") },
        EventBody::ReasoningMessageContent {
            message_id: s("m"),
            delta: s("hmm"),
        },
        EventBody::ReasoningMessageEnd { message_id: s("m") },
        EventBody::StateSnapshot {
            snapshot: json!({"scripted": {"pc": 0}}),
        },
        EventBody::StateDelta {
            delta: patch.clone(),
        },
        EventBody::MessagesSnapshot {
            messages: vec![json!({"id": "m1", "role": "user", "content": "hi"})],
        },
        EventBody::ActivitySnapshot {
            message_id: s("a"),
            activity_type: s("artifact"),
            content: json!({"text": "x"}),
            replace: None,
        },
        EventBody::ActivitySnapshot {
            message_id: s("a"),
            activity_type: s("artifact"),
            content: json!({}),
            replace: Some(true),
        },
        EventBody::ActivityDelta {
            message_id: s("a"),
            activity_type: s("artifact"),
            patch,
        },
        EventBody::Custom {
            name: s("taskwire:status"),
            value: json!({"from": "working", "to": "completed"}),
        },
    ]
}

#[test]
fn every_agui_event_variant_validates_with_and_without_optionals() {
    let index: Value =
        serde_json::from_str(taskwire_schemas::index().expect("index")).expect("json");
    let mut v = Validators::new();
    let mut types = std::collections::BTreeSet::new();
    for body in agui_events() {
        for e in [
            Event::new(body.clone()),
            Event::at(body.clone(), 1_785_000_000_000),
        ] {
            let ty = e.type_name();
            types.insert(ty);
            check(&mut v, "agui", "Event", &e);
            let kind = index["protocols"]["agui"]["events"][ty]
                .as_str()
                .expect("kind");
            check(&mut v, "agui", kind, &e);
        }
    }
    // Every event type the index lists was produced here.
    let listed = index["protocols"]["agui"]["events"]
        .as_object()
        .expect("events")
        .len();
    assert_eq!(types.len(), listed);
    // taskwire's own CUSTOM events carry the value of their name; others are free.
    let custom = |name: &str, value: Value| {
        serde_json::to_value(Event::new(EventBody::Custom {
            name: name.into(),
            value,
        }))
        .expect("json")
    };
    for kind in ["Event", "CustomEvent"] {
        assert!(v
            .validate(
                "agui",
                kind,
                &custom("taskwire:turn_started", json!({"turn": 2}))
            )
            .is_ok());
        assert!(v
            .validate(
                "agui",
                kind,
                &custom("taskwire:turn_started", json!({"turn": "two"}))
            )
            .is_err());
        assert!(v
            .validate(
                "agui",
                kind,
                &custom("taskwire:auth_required", json!({"provider": "github"}))
            )
            .is_err());
        assert!(v
            .validate("agui", kind, &custom("acme:thing", json!("anything")))
            .is_ok());
    }
    // Field rules of the producer-side verifier hold in the schemas too.
    let ev = |b: EventBody| serde_json::to_value(Event::new(b)).expect("json");
    let bad = [
        (
            "TextMessageContentEvent",
            ev(EventBody::TextMessageContent {
                message_id: "m".into(),
                delta: String::new(),
            }),
        ),
        (
            "TextMessageStartEvent",
            ev(EventBody::TextMessageStart {
                message_id: "m".into(),
                role: Some("robot".into()),
            }),
        ),
        (
            "RunStartedEvent",
            ev(EventBody::RunStarted {
                thread_id: "t".into(),
                run_id: "r".into(),
                protocol_version: Some("0.9".into()),
                parent_run_id: None,
            }),
        ),
        (
            "RunStartedEvent",
            ev(EventBody::RunStarted {
                thread_id: String::new(),
                run_id: "r".into(),
                protocol_version: None,
                parent_run_id: None,
            }),
        ),
        (
            "RunErrorEvent",
            ev(EventBody::RunError {
                message: String::new(),
                code: None,
            }),
        ),
        (
            "MessagesSnapshotEvent",
            ev(EventBody::MessagesSnapshot {
                messages: vec![json!({"id": "a", "role": "activity", "content": "text"})],
            }),
        ),
    ];
    for (kind, e) in bad {
        assert!(v.validate("agui", kind, &e).is_err(), "{kind} accepted {e}");
        assert!(
            v.validate("agui", "Event", &e).is_err(),
            "Event accepted {e}"
        );
    }
    // And a RUN_ERROR is not a RUN_FINISHED.
    let e = serde_json::to_value(Event::new(EventBody::RunError {
        message: "x".into(),
        code: None,
    }))
    .expect("json");
    assert!(v.validate("agui", "RunFinishedEvent", &e).is_err());
}

#[test]
fn run_agent_input_validates_with_and_without_optionals() {
    let mut v = Validators::new();
    let minimal = RunAgentInput {
        thread_id: "t".into(),
        run_id: "r".into(),
        protocol_version: None,
        parent_run_id: None,
        state: None,
        messages: vec![],
        tools: vec![],
        context: vec![],
        forwarded_props: None,
        resume: None,
    };
    check(&mut v, "agui", "RunAgentInput", &minimal);
    let full = RunAgentInput {
        protocol_version: Some("1.0".into()),
        parent_run_id: Some("r0".into()),
        state: Some(json!({"k": 1})),
        messages: vec![
            InputMessage {
                id: "m1".into(),
                role: "user".into(),
                content: Some(json!("hi")),
                extra: serde_json::Map::new(),
            },
            InputMessage {
                id: "m2".into(),
                role: "assistant".into(),
                content: None,
                extra: [("name".to_string(), json!("helper"))]
                    .into_iter()
                    .collect(),
            },
        ],
        tools: vec![json!({"name": "f"})],
        context: vec![json!({"description": "d", "value": "v"})],
        forwarded_props: Some(json!({})),
        resume: Some(vec![
            ResumeEntry {
                interrupt_id: "i".into(),
                status: "resolved".into(),
                payload: Some(json!({"answer": "red"})),
                metadata: Some(json!({})),
            },
            ResumeEntry {
                interrupt_id: "j".into(),
                status: "cancelled".into(),
                payload: None,
                metadata: None,
            },
        ]),
        ..minimal
    };
    check(&mut v, "agui", "RunAgentInput", &full);
}

#[test]
fn cas_objects_validate_in_every_phase() {
    let mut v = Validators::new();
    let status = |phase, reason, notifications, idle: Option<&str>| StatusObject {
        id: "0123456789abcdef0123456789abcdef".into(),
        agent: "scripted".into(),
        responsible_user: "alice".into(),
        created_at: T.into(),
        status: Status {
            phase,
            terminal_reason: reason,
            revision: "r1".into(),
            notifications,
            idle_expires_at: idle.map(str::to_string),
        },
    };
    let both = vec![
        NotificationWire {
            kind: NotificationKind::UserAuthRequired,
            since: T.into(),
            provider: Some("github".into()),
        },
        NotificationWire {
            kind: NotificationKind::ReviewRequired,
            since: T.into(),
            provider: None,
        },
    ];
    check(
        &mut v,
        "cas",
        "StatusObject",
        &status(Phase::Processing, None, both, None),
    );
    check(
        &mut v,
        "cas",
        "StatusObject",
        &status(Phase::Idle, None, vec![], Some(T)),
    );
    for r in [
        TerminalReason::Completed,
        TerminalReason::Errored,
        TerminalReason::Restricted,
    ] {
        check(
            &mut v,
            "cas",
            "StatusObject",
            &status(Phase::Terminal, Some(r), vec![], None),
        );
    }
    let text = ContentPart {
        mime_type: Some("text/plain".into()),
        text: Some("hi".into()),
        file: None,
        size_bytes: None,
        metadata: None,
    };
    let file = ContentPart {
        mime_type: Some("image/png".into()),
        text: None,
        file: Some("https://files.invalid/a.png".into()),
        size_bytes: Some(12),
        metadata: Some(Map::from_iter([("k".to_string(), json!("v"))])),
    };
    check(&mut v, "cas", "ContentPart", &text);
    check(&mut v, "cas", "ContentPart", &file);
    let mut params = Map::new();
    params.insert("ticket_id".into(), json!(7));
    let entries = vec![
        MessageEntry {
            io: IoType::Input,
            message: vec![text.clone()],
            received_at: Some(T.into()),
            committed_at: None,
            error: None,
            parameters: params,
        },
        MessageEntry {
            io: IoType::Output,
            message: vec![file],
            received_at: None,
            committed_at: Some(T.into()),
            error: Some("rejected".into()),
            parameters: Map::new(),
        },
    ];
    check(&mut v, "cas", "MessageList", &entries);
    check(&mut v, "cas", "MessageEntry", &entries[0]);
    let review = ReviewEntry {
        task_id: "t".into(),
        review_id: "r".into(),
        summary: "check".into(),
        since: T.into(),
        agent: "a".into(),
        responsible_user: "alice".into(),
    };
    check(
        &mut v,
        "cas",
        "ReviewList",
        &ReviewList {
            reviews: vec![review.clone()],
            next_cursor: Some("c".into()),
        },
    );
    check(
        &mut v,
        "cas",
        "ReviewList",
        &ReviewList {
            reviews: vec![review],
            next_cursor: None,
        },
    );
    check(
        &mut v,
        "cas",
        "DecisionBody",
        &DecisionBody {
            decision: Decision::Approve,
        },
    );
    check(
        &mut v,
        "cas",
        "DecisionBody",
        &DecisionBody {
            decision: Decision::Reject,
        },
    );
    check(
        &mut v,
        "cas",
        "HostBody",
        &HostBody {
            reason: Some("done".into()),
        },
    );
    check(&mut v, "cas", "HostBody", &HostBody::default());
    check(
        &mut v,
        "cas",
        "ErrorBody",
        &ErrorBody {
            error: ErrorDetail {
                code: "not_found".into(),
                message: "no such task".into(),
            },
        },
    );
    check(
        &mut v,
        "cas",
        "InputBody",
        &taskwire_schemas::cas::InputBody {
            message: vec![text],
            parameters: Map::new(),
        },
    );
}

#[test]
fn mcp_types_validate_against_their_own_schemas() {
    let mut v = Validators::new();
    let fields = |status, extra: fn(&mut mcp::TaskFields)| {
        let mut f = mcp::TaskFields {
            task_id: "t".into(),
            status,
            status_message: None,
            created_at: T.into(),
            last_updated_at: T.into(),
            ttl_ms: None,
            poll_interval_ms: None,
            input_requests: None,
            result: None,
            error: None,
        };
        extra(&mut f);
        f
    };
    let detailed = |task| mcp::DetailedTask {
        result_type: mcp::Complete::Complete,
        task,
        meta: None,
    };
    check(
        &mut v,
        "mcp",
        "DetailedTask",
        &detailed(fields(mcp::TaskStatus::Working, |_| {})),
    );
    check(
        &mut v,
        "mcp",
        "DetailedTask",
        &detailed(fields(mcp::TaskStatus::Cancelled, |f| {
            f.ttl_ms = Some(1000);
            f.poll_interval_ms = Some(500);
            f.status_message = Some("bye".into());
        })),
    );
    check(
        &mut v,
        "mcp",
        "DetailedTask",
        &detailed(fields(mcp::TaskStatus::InputRequired, |f| {
            let mut m = std::collections::BTreeMap::new();
            m.insert(
                "a".to_string(),
                mcp::InputRequest::Elicit(mcp::ElicitRequestParams::Url {
                    mode: mcp::UrlMode::Url,
                    message: "sign in".into(),
                    url: "https://auth.invalid".into(),
                    elicitation_id: Some("e".into()),
                    meta: None,
                }),
            );
            m.insert(
                "b".to_string(),
                mcp::InputRequest::Elicit(mcp::ElicitRequestParams::Form {
                    mode: Some(mcp::FormMode::Form),
                    message: "name?".into(),
                    requested_schema: Map::from_iter([("type".to_string(), json!("object"))]),
                    meta: None,
                }),
            );
            f.input_requests = Some(m);
        })),
    );
    check(
        &mut v,
        "mcp",
        "DetailedTask",
        &detailed(fields(mcp::TaskStatus::Completed, |f| {
            f.result = Some(mcp::CallToolResult2025_11_25 {
                content: vec![
                    mcp::ContentBlock::Text { text: "hi".into() },
                    mcp::ContentBlock::Image {
                        data: "aGk=".into(),
                        mime_type: "image/png".into(),
                    },
                    mcp::ContentBlock::Audio {
                        data: "aGk=".into(),
                        mime_type: "audio/wav".into(),
                    },
                    mcp::ContentBlock::ResourceLink {
                        uri: "https://x.invalid".into(),
                        name: "x".into(),
                        mime_type: None,
                        size: Some(3),
                    },
                    mcp::ContentBlock::Resource {
                        resource: mcp::ResourceContents {
                            uri: "taskwire:artifact/a/b".into(),
                            mime_type: Some("application/pdf".into()),
                            text: None,
                            blob: Some("aGk=".into()),
                        },
                    },
                ],
                structured_content: Some(Map::new()),
                is_error: Some(false),
                meta: None,
            });
        })),
    );
    check(
        &mut v,
        "mcp",
        "DetailedTask",
        &detailed(fields(mcp::TaskStatus::Failed, |f| {
            f.error = Some(mcp::ErrorObject {
                code: -32603,
                message: "internal error".into(),
                data: None,
            });
        })),
    );
    // The status rules have teeth.
    let bad = detailed(fields(mcp::TaskStatus::Failed, |_| {}));
    let bad = serde_json::to_value(bad).expect("json");
    assert!(v.validate("mcp", "DetailedTask", &bad).is_err());
    let task_2025 = mcp::Task2025_11_25 {
        task_id: "t".into(),
        status: mcp::TaskStatus::Working,
        status_message: None,
        created_at: T.into(),
        last_updated_at: T.into(),
        ttl: Some(60_000),
        poll_interval: Some(500),
        meta: None,
    };
    check(&mut v, "mcp", "Task2025_11_25", &task_2025);
    check(
        &mut v,
        "mcp",
        "ToolsCallResult2025_11_25",
        &mcp::CreateTaskResult2025_11_25 {
            task: task_2025,
            meta: None,
        },
    );
    check(
        &mut v,
        "mcp",
        "ElicitResult",
        &mcp::ElicitResult {
            action: mcp::ElicitAction::Accept,
            content: Some(Map::new()),
            meta: None,
        },
    );
}
