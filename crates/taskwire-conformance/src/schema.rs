//! Validation of every message the suite receives against the JSON Schemas in
//! `schemas/`, looked up through `schemas/index.json` by protocol and message kind.
//! A kind the index (or the directory) has no schema for is counted as
//! "unvalidated", never as a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::protocol::Protocol;

/// The schemas of a `schemas/` directory, compiled on first use.
#[derive(Clone, Default)]
pub struct Schemas {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// Where the files are; `None`: the copies compiled in.
    dir: Option<PathBuf>,
    index: Value,
    compiled: BTreeMap<String, Option<Arc<jsonschema::Validator>>>,
    validated: u64,
    unvalidated: BTreeSet<String>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schemas")
    }
}

impl Schemas {
    /// Loads `DIR/index.json`; a missing or unreadable index validates nothing.
    pub fn load(dir: &Path) -> Schemas {
        let index = std::fs::read_to_string(dir.join("index.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Schemas {
            inner: Arc::new(Mutex::new(Inner {
                dir: Some(dir.to_path_buf()),
                index,
                ..Inner::default()
            })),
        }
    }

    /// The schemas compiled into this build (this tree's `schemas/` at build time).
    pub fn embedded() -> Schemas {
        let index = read_embedded("index.json")
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        Schemas {
            inner: Arc::new(Mutex::new(Inner {
                dir: None,
                index,
                ..Inner::default()
            })),
        }
    }

    /// Validates `value` as the message at `kind` (a path into the protocol's entry
    /// of the index, e.g. `["methods", "GetTask", "result"]`). Returns the
    /// violations (empty when valid or when no schema applies).
    pub fn check(&self, protocol: Protocol, kind: &[&str], value: &Value) -> Vec<String> {
        let Ok(mut inner) = self.inner.lock() else {
            return Vec::new();
        };
        let label = format!("{} {}", index_protocol(protocol), kind.join("."));
        let mut node = &inner.index["protocols"][index_protocol(protocol)];
        for k in kind {
            node = &node[*k];
        }
        let Some(name) = node.as_str().map(str::to_string) else {
            inner.unvalidated.insert(label);
            return Vec::new();
        };
        let validator = match inner.compiled.get(&name) {
            Some(v) => v.clone(),
            None => {
                let file = inner.index["protocols"][index_protocol(protocol)]["schemas"][&name]
                    .as_str()
                    .map(str::to_string);
                let v = file
                    .and_then(|f| match &inner.dir {
                        Some(d) => std::fs::read_to_string(d.join(f)).ok(),
                        None => read_embedded(&f).map(str::to_string),
                    })
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|s| jsonschema::validator_for(&s).ok())
                    .map(Arc::new);
                inner.compiled.insert(name.clone(), v.clone());
                v
            }
        };
        let Some(validator) = validator else {
            inner.unvalidated.insert(label);
            return Vec::new();
        };
        inner.validated += 1;
        validator
            .iter_errors(value)
            .take(3)
            .map(|e| format!("{label} ({name}): {} at {}", e, e.instance_path()))
            .collect()
    }

    /// (messages validated, kinds received without a schema).
    pub fn coverage(&self) -> (u64, Vec<String>) {
        match self.inner.lock() {
            Ok(i) => (i.validated, i.unvalidated.iter().cloned().collect()),
            Err(_) => (0, Vec::new()),
        }
    }
}

fn read_embedded(rel: &str) -> Option<&'static str> {
    crate::compiled::EMBEDDED_SCHEMAS
        .iter()
        .find(|(p, _)| *p == rel)
        .map(|(_, t)| *t)
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
