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
    finish(
        &mut any,
        "Event",
        Some("Any AG-UI event the adapter emits (one SSE `data:` frame)."),
    );
    kinds.push(Kind::new("Event", any));
    for (ty, name) in EVENTS {
        let mut s = tidy::select_variant(&event, "type", ty)
            .ok_or_else(|| SchemaError::Shape(format!("AG-UI Event has no variant {ty}")))?;
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
