//! CAS: the status object (no official schema exists; this is taskwire's) and the
//! requests and responses of the `/cas` surface, from the adapter's wire types.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use taskwire_cas::paths;
use taskwire_cas::wire::{
    DecisionBody, ErrorBody, HostBody, MessageEntry, ReviewList, StatusObject,
};
use taskwire_vocab::cas::ContentPart;

use crate::error::SchemaError;
use crate::{schemas_entry, Kind, DIALECT};

/// The body of `POST /cas/tasks` and `POST /cas/tasks/{id}/input`: the content
/// plus the agent's parameters at top level (the adapter reads it as JSON and
/// checks the parameters against the agent's own schema).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct InputBody {
    /// The content of the input.
    pub message: Vec<ContentPart>,
    /// Parameter keys of the agent's parameters schema.
    #[serde(flatten)]
    pub parameters: Map<String, Value>,
}

fn ser<T: JsonSchema>(name: &str, description: Option<&str>) -> Kind {
    let mut s = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    crate::tidy::no_null_when_optional(&mut s);
    finish(&mut s, name, description);
    Kind::new(name, s)
}

fn de<T: JsonSchema>(name: &str, description: Option<&str>) -> Kind {
    let mut s = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    finish(&mut s, name, description);
    Kind::new(name, s)
}

pub(crate) fn finish(s: &mut Value, name: &str, description: Option<&str>) {
    if let Value::Object(o) = s {
        o.insert("$schema".into(), json!(DIALECT));
        o.insert("title".into(), json!(name));
        if let Some(d) = description {
            o.insert("description".into(), json!(d));
        }
    }
}

pub(crate) fn generate() -> Result<(Vec<Kind>, Value), SchemaError> {
    let kinds = vec![
        ser::<StatusObject>(
            "StatusObject",
            Some("The CAS task status object (taskwire's schema: CAS publishes none)."),
        ),
        ser::<Vec<MessageEntry>>(
            "MessageList",
            Some("GET /cas/tasks/{id}/messages: inputs and outputs in commit order."),
        ),
        ser::<MessageEntry>("MessageEntry", None),
        de::<ContentPart>("ContentPart", None),
        de::<InputBody>("InputBody", None),
        ser::<ReviewList>("ReviewList", None),
        de::<DecisionBody>("DecisionBody", None),
        de::<HostBody>("HostBody", None),
        ser::<ErrorBody>(
            "ErrorBody",
            Some("The error body every CAS endpoint answers with."),
        ),
    ];
    let post = |p: &str| format!("POST {p}");
    let get = |p: &str| format!("GET {p}");
    let mut endpoints = Map::new();
    endpoints.insert(
        post(paths::TASKS),
        json!({"request": "InputBody", "response": "StatusObject"}),
    );
    endpoints.insert(get(paths::TASK), json!({"response": "StatusObject"}));
    endpoints.insert(get(paths::MESSAGES), json!({"response": "MessageList"}));
    endpoints.insert(
        post(paths::INPUT),
        json!({"request": "InputBody", "response": "StatusObject"}),
    );
    endpoints.insert(get(paths::EVENTS), json!({"stream": "StatusObject"}));
    endpoints.insert(
        post(paths::AUTHORIZATION),
        json!({"response": "StatusObject"}),
    );
    endpoints.insert(get(paths::REVIEWS), json!({"response": "ReviewList"}));
    endpoints.insert(post(paths::REVIEW), json!({"request": "DecisionBody"}));
    endpoints.insert(post(paths::HOST_COMPLETE), json!({"request": "HostBody"}));
    endpoints.insert(post(paths::HOST_INTERRUPT), json!({"request": "HostBody"}));
    let entry = json!({
        "schemas": schemas_entry(crate::protocol::CAS, &kinds),
        "endpoints": endpoints,
        "error": "ErrorBody",
        "push": "StatusObject",
    });
    Ok((kinds, entry))
}
