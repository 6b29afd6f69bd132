//! MCP: the schemas of the task-related requests and results of both
//! generations, generated from the wire types the adapter serializes and the
//! client reads (`taskwire_wire::mcp`, with its `schema` feature); the fixture
//! test (`tests/fixtures.rs`) proves them against the adapter's golden
//! fixtures, and the index names the methods with the adapter's own constants.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use taskwire_mcp::wire::{method, V_2025_11_25, V_2026_07_28};
/// The MCP wire types the schemas are generated from.
pub use taskwire_wire::mcp::*;

use crate::cas::finish;
use crate::error::SchemaError;
use crate::{rpc, schemas_entry, Kind};

fn kind<T: JsonSchema>(name: &str, description: Option<&str>) -> Kind {
    let mut s = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    crate::tidy::no_null_when_optional(&mut s);
    finish(&mut s, name, description);
    Kind::new(name, s)
}

pub(crate) fn generate() -> Result<(Vec<Kind>, Value), SchemaError> {
    let kinds = vec![
        Kind::new("JsonRpcRequest", rpc::request("MCP JSON-RPC request.", false, &[], Map::new())),
        Kind::new("JsonRpcNotification", rpc::notification("MCP JSON-RPC notification.")),
        Kind::new("JsonRpcSuccessResponse", rpc::success("MCP JSON-RPC success response.", false)),
        Kind::new("JsonRpcError", rpc::error_object(json!({}))),
        Kind::new("JsonRpcErrorResponse", rpc::error_response("MCP JSON-RPC error response (also the body of HTTP 400/404 answers).", json!({}))),
        kind::<RequestParams>("RequestParams", Some("Params of server/discover and tools/list (2026-07-28).")),
        kind::<DiscoverResult>("DiscoverResult", None),
        kind::<ListToolsResult>("ListToolsResult", None),
        kind::<CallToolRequestParams>("CallToolRequestParams", None),
        kind::<CallToolResult>("CallToolResult", None),
        kind::<CreateTaskResult>("CreateTaskResult", None),
        kind::<InputRequiredResult>("InputRequiredResult", None),
        kind::<ToolsCallResult>("ToolsCallResult", None),
        kind::<TaskRequestParams>("TaskRequestParams", None),
        kind::<UpdateTaskRequestParams>("UpdateTaskRequestParams", None),
        kind::<ContinueTaskRequestParams>("ContinueTaskRequestParams", None),
        kind::<DetailedTask>("DetailedTask", None),
        kind::<EmptyResult>("EmptyResult", None),
        kind::<TaskNotificationParams>("TaskNotificationParams", None),
        kind::<StreamTaskRequestParams>("StreamTaskRequestParams", Some("Params of tasks/stream (SEP-2694, Resumable Task Event Streams).")),
        kind::<TaskEvent>("TaskEvent", Some("Params of notifications/tasks/event (SEP-2694): one event of a task's stream.")),
        kind::<ListenRequestParams>("ListenRequestParams", None),
        kind::<ListenResult>("ListenResult", None),
        kind::<SubscriptionsAcknowledgedParams>("SubscriptionsAcknowledgedParams", None),
        kind::<InputRequest>("ElicitRequest", Some("An input request of a task: {method, params}: elicitation/create, sampling/createMessage or roots/list.")),
        kind::<ElicitRequestParams>("ElicitRequestParams", None),
        kind::<ElicitResult>("ElicitResult", None),
        kind::<InitializeRequestParams>("InitializeRequestParams", None),
        kind::<InitializeResult>("InitializeResult", None),
        kind::<ListToolsResult2025_11_25>("ListToolsResult2025_11_25", None),
        kind::<CallToolRequestParams2025_11_25>("CallToolRequestParams2025_11_25", None),
        kind::<CallToolResult2025_11_25>("CallToolResult2025_11_25", None),
        kind::<CreateTaskResult2025_11_25>("CreateTaskResult2025_11_25", None),
        kind::<ToolsCallResult2025_11_25>("ToolsCallResult2025_11_25", None),
        kind::<Task2025_11_25>("Task2025_11_25", None),
        kind::<TaskRequestParams2025_11_25>("TaskRequestParams2025_11_25", None),
        kind::<ListTasksRequestParams2025_11_25>("ListTasksRequestParams2025_11_25", None),
        kind::<ListTasksResult2025_11_25>("ListTasksResult2025_11_25", None),
        kind::<Task2025_11_25>("TaskStatusNotificationParams2025_11_25", Some("Params of notifications/tasks/status (2025-11-25): the task, with io.modelcontextprotocol/related-task in _meta.")),
    ];
    let m = |params: Option<&str>, result: Option<&str>| {
        let mut e = Map::new();
        if let Some(p) = params {
            e.insert("params".into(), json!(p));
        }
        if let Some(r) = result {
            e.insert("result".into(), json!(r));
        }
        Value::Object(e)
    };
    let mut methods_2026_07_28 = Map::new();
    methods_2026_07_28.insert(
        method::DISCOVER.into(),
        m(Some("RequestParams"), Some("DiscoverResult")),
    );
    methods_2026_07_28.insert(
        method::TOOLS_LIST.into(),
        m(Some("RequestParams"), Some("ListToolsResult")),
    );
    methods_2026_07_28.insert(
        method::TOOLS_CALL.into(),
        m(Some("CallToolRequestParams"), Some("ToolsCallResult")),
    );
    methods_2026_07_28.insert(
        method::TASKS_GET.into(),
        m(Some("TaskRequestParams"), Some("DetailedTask")),
    );
    methods_2026_07_28.insert(
        method::TASKS_UPDATE.into(),
        m(Some("UpdateTaskRequestParams"), Some("EmptyResult")),
    );
    methods_2026_07_28.insert(
        method::TASKS_CANCEL.into(),
        m(Some("TaskRequestParams"), Some("EmptyResult")),
    );
    methods_2026_07_28.insert(
        method::TASKS_CONTINUE.into(),
        m(Some("ContinueTaskRequestParams"), Some("DetailedTask")),
    );
    methods_2026_07_28.insert(
        method::SUBSCRIPTIONS_LISTEN.into(),
        m(Some("ListenRequestParams"), Some("ListenResult")),
    );
    methods_2026_07_28.insert(
        method::NOTIFY_TASKS.into(),
        m(Some("TaskNotificationParams"), None),
    );
    methods_2026_07_28.insert(
        method::TASKS_STREAM.into(),
        m(Some("StreamTaskRequestParams"), None),
    );
    methods_2026_07_28.insert(
        method::NOTIFY_TASKS_EVENT.into(),
        m(Some("TaskEvent"), None),
    );
    methods_2026_07_28.insert(
        method::NOTIFY_SUBSCRIPTIONS_ACK.into(),
        m(Some("SubscriptionsAcknowledgedParams"), None),
    );
    let mut methods_2025_11_25 = Map::new();
    methods_2025_11_25.insert(
        method::INITIALIZE.into(),
        m(Some("InitializeRequestParams"), Some("InitializeResult")),
    );
    methods_2025_11_25.insert(
        method::TOOLS_LIST.into(),
        m(None, Some("ListToolsResult2025_11_25")),
    );
    methods_2025_11_25.insert(
        method::TOOLS_CALL.into(),
        m(
            Some("CallToolRequestParams2025_11_25"),
            Some("ToolsCallResult2025_11_25"),
        ),
    );
    methods_2025_11_25.insert(
        method::TASKS_GET.into(),
        m(Some("TaskRequestParams2025_11_25"), Some("Task2025_11_25")),
    );
    methods_2025_11_25.insert(
        method::TASKS_CANCEL.into(),
        m(Some("TaskRequestParams2025_11_25"), Some("Task2025_11_25")),
    );
    methods_2025_11_25.insert(
        method::TASKS_RESULT.into(),
        m(
            Some("TaskRequestParams2025_11_25"),
            Some("CallToolResult2025_11_25"),
        ),
    );
    methods_2025_11_25.insert(
        method::TASKS_LIST.into(),
        m(
            Some("ListTasksRequestParams2025_11_25"),
            Some("ListTasksResult2025_11_25"),
        ),
    );
    methods_2025_11_25.insert(
        method::NOTIFY_TASKS_STATUS.into(),
        m(Some("TaskStatusNotificationParams2025_11_25"), None),
    );
    methods_2025_11_25.insert(
        method::ELICITATION_CREATE.into(),
        m(Some("ElicitRequestParams"), Some("ElicitResult")),
    );
    let mut methods = Map::new();
    methods.insert(V_2026_07_28.into(), Value::Object(methods_2026_07_28));
    methods.insert(V_2025_11_25.into(), Value::Object(methods_2025_11_25));
    let entry = json!({
        "schemas": schemas_entry(crate::protocol::MCP, &kinds),
        "methods": methods,
        "envelope": {"request": "JsonRpcRequest", "notification": "JsonRpcNotification", "success": "JsonRpcSuccessResponse", "error": "JsonRpcErrorResponse"},
    });
    Ok((kinds, entry))
}

#[cfg(test)]
mod tests {
    use taskwire_mcp::wire::meta;

    use super::*;

    fn props(kind: &str) -> Value {
        let (kinds, _) = generate().expect("generate");
        kinds
            .into_iter()
            .find(|k| k.name == kind)
            .map(|k| k.schema)
            .unwrap_or_else(|| panic!("no {kind}"))
    }

    /// The `_meta` keys written as literals in the serde renames are the adapter's.
    #[test]
    fn meta_keys_are_the_adapters_constants() {
        let s = props("RequestParams");
        let m = &s["$defs"]["RequestMeta"]["properties"];
        for key in [
            meta::PROTOCOL_VERSION,
            meta::CLIENT_INFO,
            meta::CLIENT_CAPABILITIES,
        ] {
            assert!(m.get(key).is_some(), "{key} missing from {m}");
        }
        let s = props("DiscoverResult");
        assert!(s["$defs"]["ServerMeta"]["properties"]
            .get(meta::SERVER_INFO)
            .is_some());
        let s = props("ListenResult");
        assert!(s["$defs"]["SubscriptionMeta"]["properties"]
            .get(meta::SUBSCRIPTION_ID)
            .is_some());
    }
}
