//! Validation of every message the suite receives against the JSON Schemas in
//! `schemas/`, looked up through `schemas/index.json` by protocol and message kind.
//! A kind the index (or the directory) has no schema for is counted as
//! "unvalidated", never as a failure.

use std::path::Path;

use serde_json::Value;

use crate::protocol::Protocol;

/// The schemas of a `schemas/` directory or the compiled-in copies, checked by
/// the wire layer's validator (`taskwire_wire::schema`, the one the schema
/// generator's tests use: JSON Schema 2020-12 with format assertions).
#[derive(Clone, Debug)]
pub struct Schemas(taskwire_wire::schema::Schemas);

impl Default for Schemas {
    /// No schemas: validates nothing.
    fn default() -> Self {
        Schemas(taskwire_wire::schema::Schemas::from_files(&[]))
    }
}

impl Schemas {
    /// Loads `DIR/index.json`; a missing or unreadable index validates nothing.
    pub fn load(dir: &Path) -> Schemas {
        Schemas(taskwire_wire::schema::Schemas::load(dir))
    }

    /// The schemas compiled into this build (this tree's `schemas/` at build time).
    pub fn embedded() -> Schemas {
        Schemas(taskwire_wire::schema::Schemas::from_files(
            crate::compiled::EMBEDDED_SCHEMAS,
        ))
    }

    /// Validates `value` as the message at `kind` (a path into the protocol's entry
    /// of the index, e.g. `["methods", "GetTask", "result"]`). Returns the
    /// violations (empty when valid or when no schema applies).
    pub fn check(&self, protocol: Protocol, kind: &[&str], value: &Value) -> Vec<String> {
        self.0.check(index_protocol(protocol), kind, value)
    }

    /// (messages validated, kinds received without a schema).
    pub fn coverage(&self) -> (u64, Vec<String>) {
        self.0.coverage()
    }
}

/// gRPC messages are the A2A messages (validated as their ProtoJSON form).
fn index_protocol(p: Protocol) -> &'static str {
    match p {
        Protocol::A2a | Protocol::Grpc | Protocol::A2aRest => "a2a",
        // Both MCP generations share one index entry, keyed by revision.
        Protocol::Mcp | Protocol::Mcp2025 => "mcp",
        other => other.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validates_known_kinds_and_counts_unknown_ones() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("cas")).expect("mkdir");
        std::fs::write(
            dir.path().join("index.json"),
            json!({"protocols": {"cas": {"error": "ErrorBody", "schemas": {"ErrorBody": "cas/ErrorBody.schema.json"}}}}).to_string(),
        )
        .expect("index");
        std::fs::write(
            dir.path().join("cas/ErrorBody.schema.json"),
            json!({"type": "object", "required": ["error"]}).to_string(),
        )
        .expect("schema");
        let s = Schemas::load(dir.path());
        assert!(s
            .check(Protocol::Cas, &["error"], &json!({"error": {}}))
            .is_empty());
        let bad = s.check(Protocol::Cas, &["error"], &json!({"nope": 1}));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("cas error (ErrorBody)"), "{bad:?}");
        assert!(s
            .check(Protocol::Mcp, &["methods", "x"], &json!({}))
            .is_empty());
        let (n, missing) = s.coverage();
        assert_eq!(n, 2);
        assert_eq!(missing, vec!["mcp methods.x".to_string()]);
    }

    #[test]
    fn mcp_2025_messages_are_validated_under_their_revision() {
        let s = Schemas::embedded();
        let kind = ["methods", "2025-11-25", "tasks/get", "result"];
        let good = json!({
            "taskId": "t", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 1000, "pollInterval": 500
        });
        let ok = s.check(Protocol::Mcp2025, &kind, &good);
        assert!(ok.is_empty(), "{ok:?}");
        let bad = s.check(Protocol::Mcp2025, &kind, &json!({"taskId": 5}));
        assert!(!bad.is_empty(), "a numeric taskId must not validate");
        let (n, missing) = s.coverage();
        assert_eq!(n, 2, "{missing:?}");
    }

    #[test]
    fn the_compiled_in_schemas_validate_an_agent_card() {
        let s = Schemas::embedded();
        let bad = s.check(Protocol::A2a, &["agent_card"], &json!({"name": 5}));
        assert!(
            !bad.is_empty(),
            "a card whose name is a number must not validate"
        );
        let (n, missing) = s.coverage();
        assert_eq!(n, 1, "{missing:?}");
    }
}
