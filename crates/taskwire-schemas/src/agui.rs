//! AG-UI: `RunAgentInput` and every event, from the adapter's wire types. The
//! schema of one event type is the schema of `Event` with `type` fixed.

use serde_json::{json, Map, Value};
use taskwire_agui::wire::{event_type as t, Event, RunAgentInput};

use crate::cas::finish;
use crate::error::SchemaError;
use crate::{schemas_entry, tidy, Kind};

/// Every event type of `EventBody`, with its kind name.
pub(crate) const EVENTS: [(&str, &str); 20] = [
    (t::RUN_STARTED, "RunStartedEvent"),
    (t::RUN_FINISHED, "RunFinishedEvent"),
    (t::RUN_ERROR, "RunErrorEvent"),
    (t::STEP_STARTED, "StepStartedEvent"),
    (t::STEP_FINISHED, "StepFinishedEvent"),
    (t::TEXT_MESSAGE_START, "TextMessageStartEvent"),
    (t::TEXT_MESSAGE_CONTENT, "TextMessageContentEvent"),
    (t::TEXT_MESSAGE_END, "TextMessageEndEvent"),
    (t::TOOL_CALL_START, "ToolCallStartEvent"),
    (t::TOOL_CALL_ARGS, "ToolCallArgsEvent"),
    (t::TOOL_CALL_END, "ToolCallEndEvent"),
    (t::REASONING_MESSAGE_START, "ReasoningMessageStartEvent"),
    (t::REASONING_MESSAGE_CONTENT, "ReasoningMessageContentEvent"),
    (t::REASONING_MESSAGE_END, "ReasoningMessageEndEvent"),
    (t::STATE_SNAPSHOT, "StateSnapshotEvent"),
    (t::STATE_DELTA, "StateDeltaEvent"),
    (t::MESSAGES_SNAPSHOT, "MessagesSnapshotEvent"),
    (t::ACTIVITY_SNAPSHOT, "ActivitySnapshotEvent"),
    (t::ACTIVITY_DELTA, "ActivityDeltaEvent"),
    (t::CUSTOM, "CustomEvent"),
];

fn root<T: schemars::JsonSchema>(serialize: bool) -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let settings = if serialize {
        settings.for_serialize()
    } else {
        settings.for_deserialize()
    };
    let mut v = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if serialize {
        tidy::no_null_when_optional(&mut v);
    }
    v
}

/// The `value` of the `taskwire:*` CUSTOM events the renderer emits for core
/// events AG-UI has no counterpart for (names: `taskwire_agui::wire::custom`).
mod custom_values {
    use schemars::JsonSchema;
    use serde::Serialize;

    /// `taskwire:task_created`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct TaskCreated {
        /// The task.
        pub(super) task_id: String,
        /// Its context (the thread).
        pub(super) context_id: String,
    }

    /// `taskwire:status`: a status change that neither ends nor interrupts the run.
    #[derive(Serialize, JsonSchema)]
    pub(super) struct Status {
        /// The core state before.
        pub(super) from: String,
        /// The core state after.
        pub(super) to: String,
        /// Why it ended (terminal states).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) cause: Option<String>,
        /// The status message's text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) message: Option<String>,
    }

    /// `taskwire:input_received`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct InputReceived {
        /// The message.
        pub(super) message_id: String,
        /// Held for the next turn.
        pub(super) queued: bool,
    }

    /// `taskwire:input_committed`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct InputCommitted {
        /// The messages handed to the agent.
        pub(super) message_ids: Vec<String>,
    }

    /// `taskwire:turn_started`.
    #[derive(Serialize, JsonSchema)]
    pub(super) struct TurnStarted {
        /// The turn number.
        pub(super) turn: u64,
    }

    /// `taskwire:input_requested`, `taskwire:input_answered`, `taskwire:input_superseded`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Interrupts {
        /// The interrupts concerned.
        pub(super) interrupt_ids: Vec<String>,
    }

    /// `taskwire:auth_required`, `taskwire:auth_granted`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Auth {
        /// The interrupt.
        pub(super) interrupt_id: String,
        /// The provider.
        pub(super) provider: String,
        /// Where to authorise (`auth_required` only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(super) url: Option<String>,
    }

    /// `taskwire:review_requested`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct ReviewRequested {
        /// The interrupt.
        pub(super) interrupt_id: String,
        /// Who decides.
        pub(super) reviewer: String,
        /// What is to be decided.
        pub(super) summary: String,
    }

    /// `taskwire:review_decided`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct ReviewDecided {
        /// The interrupt.
        pub(super) interrupt_id: String,
        /// The decision.
        pub(super) decision: String,
        /// Who decided.
        pub(super) by: String,
    }

    /// `taskwire:step`: a step event AG-UI's balance rules cannot carry.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Step {
        /// The step.
        pub(super) step_name: String,
        /// `started` or `finished`.
        pub(super) phase: String,
    }
}

/// (custom event name, schema of its value).
fn custom_values() -> Vec<(&'static str, Value)> {
    use custom_values as c;
    use taskwire_agui::wire::custom as n;
    fn v<T: schemars::JsonSchema>() -> Value {
        let mut s = root::<T>(true);
        if let Value::Object(o) = &mut s {
            o.remove("$schema");
        }
        s
    }
    vec![
        (n::TASK_CREATED, v::<c::TaskCreated>()),
        (n::STATUS, v::<c::Status>()),
        (n::INPUT_RECEIVED, v::<c::InputReceived>()),
        (n::INPUT_COMMITTED, v::<c::InputCommitted>()),
        (n::TURN_STARTED, v::<c::TurnStarted>()),
        (n::INPUT_REQUESTED, v::<c::Interrupts>()),
        (n::INPUT_ANSWERED, v::<c::Interrupts>()),
        (n::INPUT_SUPERSEDED, v::<c::Interrupts>()),
        (n::AUTH_REQUIRED, v::<c::Auth>()),
        (n::AUTH_GRANTED, v::<c::Auth>()),
        (n::REVIEW_REQUESTED, v::<c::ReviewRequested>()),
        (n::REVIEW_DECIDED, v::<c::ReviewDecided>()),
        (n::STEP_UNBALANCED, v::<c::Step>()),
    ]
}

/// Adds to an event schema: a CUSTOM event named `taskwire:*` carries the value
/// of that name (other names are free).
fn with_custom_values(s: &mut Value) {
    let rules: Vec<Value> = custom_values()
        .into_iter()
        .map(|(name, value)| {
            json!({
                "if": {
                    "properties": {"type": {"const": t::CUSTOM}, "name": {"const": name}},
                    "required": ["type", "name"]
                },
                "then": {"properties": {"value": value}, "required": ["value"]}
            })
        })
        .collect();
    if let Value::Object(o) = s {
        let all = o.entry("allOf").or_insert_with(|| json!([]));
        if let Value::Array(a) = all {
            a.extend(rules);
        }
    }
}

pub(crate) fn generate() -> Result<(Vec<Kind>, Value), SchemaError> {
    let mut kinds = Vec::new();
    let mut input = root::<RunAgentInput>(false);
    finish(
        &mut input,
        "RunAgentInput",
        Some("What a client POSTs to run the agent (AG-UI 1.0)."),
    );
    kinds.push(Kind::new("RunAgentInput", input));
    let event = root::<Event>(true);
    let mut any = event.clone();
    with_custom_values(&mut any);
    finish(
        &mut any,
        "Event",
        Some("Any AG-UI event the adapter emits (one SSE `data:` frame)."),
    );
    kinds.push(Kind::new("Event", any));
    for (ty, name) in EVENTS {
        let mut s = tidy::select_variant(&event, "type", ty)
            .ok_or_else(|| SchemaError::Shape(format!("AG-UI Event has no variant {ty}")))?;
        if ty == t::CUSTOM {
            with_custom_values(&mut s);
        }
        finish(&mut s, name, Some(&format!("An AG-UI `{ty}` event.")));
        kinds.push(Kind::new(name, s));
    }
    let mut events = Map::new();
    for (ty, name) in EVENTS {
        events.insert(ty.to_string(), json!(name));
    }
    let entry = json!({
        "schemas": schemas_entry(crate::protocol::AGUI, &kinds),
        "events": events,
        "input": "RunAgentInput",
    });
    Ok((kinds, entry))
}
