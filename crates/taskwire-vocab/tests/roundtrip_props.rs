//! Property tests of the translation layer: core → protocol → core round trips
//! where the mapping is lossless, and a reported [`Loss`] wherever it is not.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use taskwire_core::types::{InputAction, InputKind, InputRequest, TerminalCause, Timestamp};
use taskwire_core::{CoreError, Part, PartContent, StoreError, Task, TaskState};
use taskwire_vocab::table::{blank_task, Situation};
use taskwire_vocab::{a2a, agui, cas, mcp, Loss};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e20f64..1.0e20).prop_map(Value::from),
        (-1000i32..1000).prop_map(|i| Value::from(f64::from(i))),
        "[a-z ]{0,8}".prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn metadata() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

fn content() -> impl Strategy<Value = PartContent> {
    prop_oneof![
        ".{0,20}".prop_map(|text| PartContent::Text { text }),
        prop::collection::vec(any::<u8>(), 0..32).prop_map(|bytes| PartContent::Raw { bytes }),
        "https://[a-z]{1,8}\\.example/[a-z0-9]{0,8}".prop_map(|url| PartContent::Url { url }),
        json_value().prop_map(|data| PartContent::Data { data }),
    ]
}

fn part() -> impl Strategy<Value = Part> {
    (
        content(),
        prop::option::of(prop_oneof![
            Just(String::new()),
            "[a-z]{1,6}/[a-z0-9.+-]{1,10}"
        ]),
        prop::option::of(prop_oneof![Just(String::new()), "[a-z]{1,8}\\.[a-z]{2,3}"]),
        metadata(),
    )
        .prop_map(|(content, media_type, filename, metadata)| Part {
            content,
            media_type,
            filename,
            metadata,
        })
}

fn state() -> impl Strategy<Value = TaskState> {
    prop::sample::select(TaskState::ALL.to_vec())
}

fn cause() -> impl Strategy<Value = Option<TerminalCause>> {
    prop::option::of(prop::sample::select(vec![
        TerminalCause::Completed,
        TerminalCause::AgentFailed,
        TerminalCause::Internal,
        TerminalCause::Rejected,
        TerminalCause::Restricted,
        TerminalCause::Canceled,
        TerminalCause::Expired,
    ]))
}

/// A task in any representative situation, or in any state with any cause.
fn task() -> impl Strategy<Value = Task> {
    prop_oneof![
        prop::sample::select(Situation::ALL.to_vec()).prop_map(|s| s.task()),
        (state(), cause()).prop_map(|(s, c)| {
            let mut t = blank_task(s);
            t.terminal_cause = c.filter(|_| s.is_terminal());
            t
        }),
    ]
}

/// A task as the core leaves it: a representative situation, with any number of
/// extra pending interactions where it waits.
fn real_task() -> impl Strategy<Value = Task> {
    (
        prop::sample::select(Situation::ALL.to_vec()),
        prop::collection::vec(0u8..3, 0..3),
    )
        .prop_map(|(s, extra)| {
            let mut t = s.task();
            if t.state.is_interrupted() && t.waiting_state().is_some() {
                let since = Timestamp::default();
                for (i, k) in extra.into_iter().enumerate() {
                    match k {
                        0 => {
                            let key = format!("extra-{i}");
                            t.input_requests.insert(
                                key.clone(),
                                InputRequest {
                                    key,
                                    prompt: "?".into(),
                                    schema: json!({"type": "object"}),
                                    since,
                                    kind: InputKind::Form,
                                    subject: None,
                                },
                            );
                        }
                        1 => t.pending_auth.push(taskwire_core::types::AuthWait {
                            provider: format!("p{i}"),
                            since,
                            operations: vec![],
                            url: None,
                        }),
                        _ => t.pending_reviews.push(taskwire_core::types::Review {
                            id: format!("r{i}"),
                            reviewer: t.responsible_user.clone(),
                            summary: "s".into(),
                            since,
                        }),
                    }
                }
                if let Some(w) = t.waiting_state() {
                    t.state = w;
                }
            }
            t
        })
}

proptest! {
    /// Core → protocol status → core, for every protocol: wherever the view
    /// reports no loss, reading the view back gives the task's state.
    #[test]
    fn states_round_trip_where_no_loss_is_reported(t in real_task(), old in any::<bool>()) {
        let (a, la) = a2a::task_state(&t);
        if la.is_none() {
            prop_assert_eq!(a2a::state_from_a2a(a).ok(), Some(t.state));
        }
        let g = if old { mcp::Revision::V2025_11_25 } else { mcp::Revision::V2026_07_28 };
        let (m, lm) = mcp::status(&t, g);
        prop_assert_eq!(mcp::McpStatus::parse(m.as_str()), Some(m));
        if lm.is_none() {
            prop_assert_eq!(mcp::state_from_status(m), t.state, "MCP {:?}", m);
        }
        let (p, lp) = cas::phase(&t);
        let (r, lr) = cas::terminal_reason(&t);
        let kinds: Vec<cas::NotificationKind> =
            cas::notifications(&t).into_iter().map(|n| n.kind).collect();
        if lp.is_none() && lr.is_none() {
            prop_assert_eq!(cas::state_from_status(p, r, &kinds), t.state, "CAS {:?}/{:?}", p, r);
        }
        let (end, le) = agui::run_end(t.state, t.terminal_cause, t.error.as_ref());
        let (ints, li) = agui::interrupts(&t);
        let reasons: Vec<&str> = ints.iter().map(|i| i.reason).collect();
        if le.is_none() && li.is_none() {
            prop_assert_eq!(agui::state_from_run_end(&end, &reasons), t.state, "AG-UI {:?}", end);
        }
    }

    /// A2A states are a bijection with the core states.
    #[test]
    fn a2a_states_round_trip(s in state()) {
        let a = a2a::state_to_a2a(s);
        prop_assert_eq!(a2a::state_from_a2a(a).ok(), Some(s));
        prop_assert_eq!(a2a::A2aState::from_number(a.number()), Some(a));
    }

    /// What an A2A task state does not say about the core is reported: two tasks
    /// that show the same A2A state without a loss are in the same core state and
    /// (when terminal) ended for a cause A2A tells apart.
    #[test]
    fn a2a_state_losses_are_reported(t in task()) {
        let (a, loss) = a2a::task_state(&t);
        prop_assert_eq!(a2a::state_from_a2a(a).ok(), Some(t.state));
        let review_hidden = t.state == TaskState::InputRequired && !t.pending_reviews.is_empty();
        let cause_hidden = matches!(
            t.terminal_cause,
            Some(TerminalCause::Internal | TerminalCause::Restricted | TerminalCause::Expired)
        );
        prop_assert_eq!(loss.is_some(), review_hidden || cause_hidden, "{:?}", loss);
    }

    /// MCP: wherever a status is shown without a loss, the status determines the
    /// core state (so a client may read it back); a status several situations share
    /// comes with a loss for all but one of them.
    #[test]
    fn mcp_status_losses_are_reported(t in task(), u in task(), old in any::<bool>()) {
        let g = if old { mcp::Revision::V2025_11_25 } else { mcp::Revision::V2026_07_28 };
        let (a, la) = mcp::status(&t, g);
        let (b, lb) = mcp::status(&u, g);
        if a == b && la.is_none() && lb.is_none() {
            prop_assert_eq!(t.state, u.state, "{:?} hides a difference without a loss", a);
        }
    }

    /// CAS: the same for phase and terminal reason together.
    #[test]
    fn cas_status_losses_are_reported(t in task(), u in task()) {
        let (pa, la) = cas::phase(&t);
        let (ra, lra) = cas::terminal_reason(&t);
        let (pb, lb) = cas::phase(&u);
        let (rb, lrb) = cas::terminal_reason(&u);
        let lossless = la.is_none() && lra.is_none() && lb.is_none() && lrb.is_none();
        if lossless && pa == pb && ra == rb && cas::notifications(&t) == cas::notifications(&u) {
            // A terminal task is told apart by why it ended (a guardrail lock is
            // `restricted` whichever terminal state the core recorded it under).
            let why = |t: &Task| t.terminal_cause.filter(|_| t.state.is_terminal());
            let same = match (t.state.is_terminal(), u.state.is_terminal()) {
                (false, false) => true,
                (true, true) => t.state == u.state || (why(&t).is_some() && why(&t) == why(&u)),
                _ => false,
            };
            prop_assert!(same, "{:?}/{:?} hides {} vs {}", pa, ra, t.state, u.state);
        }
    }

    /// AG-UI: runs of the same shape without a loss come from the same state.
    #[test]
    fn agui_run_end_losses_are_reported(t in task(), u in task()) {
        let (ea, la) = agui::run_end(t.state, t.terminal_cause, t.error.as_ref());
        let (eb, lb) = agui::run_end(u.state, u.terminal_cause, u.error.as_ref());
        if ea == eb && la.is_none() && lb.is_none() && ea != agui::RunEnd::Interrupted {
            prop_assert_eq!(t.state, u.state, "{:?}", ea);
        }
    }

    /// A2A parts round trip exactly unless a loss is reported, and the loss is
    /// reported exactly when the part changes.
    #[test]
    fn a2a_parts_round_trip(p in part()) {
        let (a, losses) = a2a::part_to_a2a(&p);
        let back = a2a::part_from_a2a(a, 0).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let empty_strings = p.media_type.as_deref() == Some("") || p.filename.as_deref() == Some("");
        prop_assert_eq!(losses.contains(&a2a::LOSS_EMPTY_STRING_FIELDS), empty_strings);
        if !empty_strings {
            prop_assert_eq!(&back, &p);
        } else {
            prop_assert_eq!(&back.content, &p.content);
        }
    }

    /// The numeric loss of `google.protobuf.Value` is reported exactly when a JSON
    /// value would change through the adapter's double-based encoding.
    #[test]
    fn a2a_data_number_loss_matches_the_protobuf_trip(v in json_value()) {
        prop_assert_eq!(a2a::survives_protobuf_value(&v), protobuf_trip(&v) == v);
    }

    /// CAS ContentParts: text (with or without media type and metadata) and file
    /// references with a size round trip; everything else reports a loss.
    #[test]
    fn cas_parts_round_trip_or_report(p in part()) {
        let (c, loss) = cas::part_to_cas(&p);
        match cas::part_from_cas(0, &c) {
            Ok(back) => {
                if loss.is_none() {
                    // Text parts gain the default media type text/plain.
                    let mut want = p.clone();
                    if matches!(want.content, PartContent::Text { .. }) {
                        want.media_type.get_or_insert_with(|| "text/plain".into());
                    }
                    prop_assert_eq!(back, want);
                }
            }
            Err(_) => prop_assert!(loss.is_some() || c.mime_type.as_deref() == Some("")),
        }
    }

    /// CAS input parts that are valid come back unchanged from core.
    #[test]
    fn cas_input_parts_round_trip(
        text in prop::option::of(".{0,40}"),
        file in "task://[a-z]{1,8}",
        size in prop::option::of(0u64..1_000_000),
        mime in "[a-z]{1,6}/[a-z]{1,6}",
        meta in metadata(),
    ) {
        let cp = cas::ContentPart {
            mime_type: Some(mime),
            text: text.clone(),
            file: if text.is_none() { Some(file) } else { None },
            size_bytes: if text.is_none() { size } else { None },
            metadata: (!meta.is_empty()).then_some(meta),
        };
        let p = cas::part_from_cas(0, &cp).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (back, loss) = cas::part_to_cas(&p);
        prop_assert_eq!(back, cp.clone());
        if cp.file.is_some() && cp.size_bytes.is_none() {
            prop_assert_eq!(loss, Some(cas::LOSS_URL_AS_FILE));
        } else {
            prop_assert_eq!(loss, None);
        }
    }

    /// AG-UI: a message of one plain text part comes back as that part; anything
    /// else reports a loss.
    #[test]
    fn agui_message_text_round_trips_or_reports(parts in prop::collection::vec(part(), 0..4)) {
        let (text, loss) = agui::message_text(&parts);
        let back = agui::user_parts(&Value::String(text.clone()))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        if loss.is_none() && parts.len() == 1 {
            prop_assert_eq!(&back, &parts);
        }
        if back != parts {
            prop_assert!(loss.is_some() || parts.is_empty(), "{:?} -> {:?}", parts, text);
        }
    }

    /// AG-UI artifacts (activity content and run result) carry core parts whole:
    /// every part kind, media type, file name and metadata round-trips.
    #[test]
    fn agui_artifacts_round_trip(
        parts in prop::collection::vec(part(), 0..4),
        name in prop::option::of("[a-z]{0,6}"),
        description in prop::option::of("[a-z ]{0,12}"),
        meta in metadata(),
        complete in any::<bool>(),
    ) {
        let a = taskwire_core::Artifact {
            artifact_id: "a-1".into(),
            name,
            description,
            parts,
            metadata: meta,
            complete,
        };
        let back = agui::artifact_from_activity(&taskwire_wire::agui::to_value(&agui::artifact_activity(&a)))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, a);
    }

    /// AG-UI interrupt ids round trip for any task id and key.
    #[test]
    fn agui_interrupt_ids_round_trip(
        task_id in "[0-9a-f]{32}",
        kind in 0u8..3,
        key in "[^\\x00]{1,24}",
    ) {
        let kind = match kind {
            0 => agui::InterruptKind::Input(key),
            1 => agui::InterruptKind::Auth(key),
            _ => agui::InterruptKind::Review(key),
        };
        let r = agui::InterruptRef { task_id, kind };
        prop_assert_eq!(agui::InterruptRef::parse(&r.id()).ok(), Some(r));
    }

    /// AG-UI resume payloads: objects are stored as given; anything else is
    /// wrapped with a reported loss.
    #[test]
    fn agui_resume_payloads(v in json_value()) {
        match agui::input_response(agui::ResumeStatus::Resolved, Some(&v)) {
            Ok((r, loss)) => {
                prop_assert_eq!(r.action, InputAction::Accept);
                if v.is_object() {
                    prop_assert_eq!(r.content, Some(v));
                    prop_assert_eq!(loss, None);
                } else {
                    prop_assert_eq!(r.content, Some(json!({"answer": v})));
                    prop_assert_eq!(loss, Some(agui::LOSS_PAYLOAD_WRAPPED));
                }
            }
            Err(_) => prop_assert!(v.is_null()),
        }
    }

    /// MCP input requests: every open key is offered under its own key, and an
    /// answer under that key comes back to the same key with the same content.
    #[test]
    fn mcp_input_keys_and_answers_round_trip(
        keys in prop::collection::btree_set("[a-zA-Z0-9_.:-]{1,16}", 1..4),
        content in prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..3),
        action in prop::sample::select(vec!["accept", "decline", "cancel"]),
        old in any::<bool>(),
    ) {
        let mut t = blank_task(TaskState::InputRequired);
        for k in &keys {
            t.input_requests.insert(k.clone(), InputRequest {
                key: k.clone(),
                prompt: "?".into(),
                schema: json!({"type": "object"}),
                since: Timestamp::default(),
                kind: InputKind::Form,
                subject: None,
            });
        }
        let g = if old { mcp::Revision::V2025_11_25 } else { mcp::Revision::V2026_07_28 };
        let (reqs, losses) = mcp::input_requests(&t, g, "");
        prop_assert!(losses.is_empty());
        let offered: Vec<&String> = reqs.keys().collect();
        prop_assert_eq!(offered, keys.iter().collect::<Vec<_>>());
        let content: Map<String, Value> = content.into_iter().collect();
        for k in &keys {
            let mut v = json!({"action": action});
            if action == "accept" {
                v["content"] = Value::Object(content.clone());
            }
            match mcp::input_answer(&t, k, &v).map_err(|e| TestCaseError::fail(e.to_string()))? {
                mcp::InputAnswer::Input { key, response } => {
                    prop_assert_eq!(&key, k);
                    if action == "accept" {
                        prop_assert_eq!(response.content, Some(Value::Object(content.clone())));
                    } else {
                        prop_assert_eq!(response.content, None);
                    }
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }

    /// MCP authorisation and review keys carry the provider and the review id back.
    #[test]
    fn mcp_auth_and_review_keys_round_trip(provider in "[a-z0-9_/-]{1,12}", review_id in "[a-z0-9_/-]{1,12}") {
        let mut t = Situation::AuthRequired.task();
        t.pending_auth[0].provider = provider.clone();
        let (reqs, _) = mcp::input_requests(&t, mcp::Revision::V2026_07_28, "");
        let key = reqs.keys().next().cloned().unwrap_or_default();
        prop_assert_eq!(
            mcp::input_answer(&t, &key, &json!({"action": "accept"})).ok(),
            Some(mcp::InputAnswer::Auth { provider, granted: true })
        );
        let mut t = Situation::ReviewPending.task();
        t.pending_reviews[0].id = review_id.clone();
        let (reqs, _) = mcp::input_requests(&t, mcp::Revision::V2026_07_28, "");
        let key = reqs.keys().next().cloned().unwrap_or_default();
        let ans = mcp::input_answer(&t, &key, &json!({"action": "accept", "content": {"approve": true}}));
        prop_assert_eq!(
            ans.ok(),
            Some(mcp::InputAnswer::Review { review_id, decision: taskwire_core::types::ReviewDecision::Approve })
        );
    }
}

fn core_error(i: usize) -> CoreError {
    match i % 13 {
        0 => CoreError::NotFound,
        1 => CoreError::InvalidInput {
            field: "f".into(),
            reason: "r".into(),
        },
        2 => CoreError::TooLarge {
            what: "w".into(),
            size: 2,
            limit: 1,
        },
        3 => CoreError::DeniedByGuardrail { reason: "r".into() },
        4 => CoreError::Terminal {
            state: TaskState::Completed,
        },
        5 => CoreError::NotCancelable {
            state: TaskState::Failed,
        },
        6 => CoreError::WrongState {
            what: "w".into(),
            state: TaskState::Working,
        },
        7 => CoreError::IllegalTransition {
            from: TaskState::Submitted,
            to: TaskState::Completed,
        },
        8 => CoreError::Contention,
        9 => CoreError::LeaseLost,
        10 => CoreError::Store(StoreError::Backend("secret".into())),
        11 => CoreError::Unavailable("secret".into()),
        _ => CoreError::ShuttingDown,
    }
}

proptest! {
    /// Error kinds → codes (and ErrorInfo reasons) → kinds, as a client reads them
    /// back; CAS codes → wire errors; and where several core errors share a code,
    /// all but one report a loss.
    #[test]
    fn error_codes_round_trip_and_shared_codes_report_a_loss(i in 0usize..13, j in 0usize..13) {
        let (e, f) = (core_error(i), core_error(j));
        let (k, msg) = a2a::error_from_core(&e);
        // Unavailable shares Internal's JSON-RPC code (a named loss); its
        // ErrorInfo reason tells it apart.
        if k == a2a::A2aErrorKind::Unavailable {
            prop_assert!(a2a::error_loss(&e).is_some());
            prop_assert_eq!(a2a::A2aErrorKind::from_code(k.code()), Some(a2a::A2aErrorKind::Internal));
        } else {
            prop_assert_eq!(a2a::A2aErrorKind::from_code(k.code()), Some(k));
        }
        prop_assert_eq!(a2a::A2aErrorKind::from_reason(k.reason()), Some(k));
        prop_assert!(!msg.contains("secret"));
        let w = cas::wire_error(&e);
        prop_assert_eq!(cas::WireError::from_code(w.code), Some(w));
        prop_assert!(!cas::error_message(&e).contains("secret"));
        prop_assert!(!mcp::error_from_core(&e, None).1.contains("secret"));
        prop_assert!(!agui::core_error(&e).1.contains("secret"));
        if i % 13 != j % 13 {
            let shared = |a: bool, la: Option<Loss>, lb: Option<Loss>| !a || la.is_some() || lb.is_some();
            prop_assert!(shared(
                a2a::error_from_core(&f).0 == k,
                a2a::error_loss(&e),
                a2a::error_loss(&f)
            ), "A2A {:?}: {} and {}", k, e, f);
            prop_assert!(shared(
                mcp::error_from_core(&f, None).0 == mcp::error_from_core(&e, None).0,
                mcp::error_loss(&e),
                mcp::error_loss(&f)
            ), "MCP: {} and {}", e, f);
            prop_assert!(shared(
                agui::core_error(&f).0 == agui::core_error(&e).0,
                agui::error_loss(&e),
                agui::error_loss(&f)
            ), "AG-UI: {} and {}", e, f);
            prop_assert!(shared(
                cas::wire_error(&f) == w,
                cas::error_loss(&e),
                cas::error_loss(&f)
            ), "CAS: {} and {}", e, f);
        }
    }
}

/// The A2A adapter's trip through `google.protobuf.Value` (numbers as doubles;
/// whole doubles below the limit read back as integers), for checking
/// [`a2a::survives_protobuf_value`].
fn protobuf_trip(v: &Value) -> Value {
    match v {
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < a2a::PROTOBUF_WHOLE_NUMBER_LIMIT {
                Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(protobuf_trip).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), protobuf_trip(v)))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect(),
        ),
        other => other.clone(),
    }
}
