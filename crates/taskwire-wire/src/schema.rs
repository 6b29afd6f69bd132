//! The one validator of the committed JSON Schemas (`schemas/`), shared by the
//! schema generator's tests and by `taskwire conformance`: schemas are compiled
//! as JSON Schema 2020-12 with format assertions on (`date-time`, `uri`, … are
//! checked), found through `schemas/index.json` by protocol and kind name or by
//! a path into the protocol's index entry (`["methods", "GetTask", "result"]`).
//!
//! The files come from a directory ([`Schemas::load`]) or from copies compiled
//! into the program ([`Schemas::from_files`]). A kind the index has no schema for
//! is counted as unvalidated, never as a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Compiles a schema: JSON Schema 2020-12, format assertions on.
pub fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Where the schema files are.
#[derive(Clone, Debug)]
enum Source {
    /// A `schemas/` directory.
    Dir(PathBuf),
    /// Compiled-in copies: (path below `schemas/`, contents).
    Files(&'static [(&'static str, &'static str)]),
}

/// The schemas of one `schemas/` tree, each compiled on first use.
#[derive(Clone)]
pub struct Schemas {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    source: Source,
    index: Value,
    /// By kind name (per protocol); `None`: no such file or it does not compile.
    compiled: BTreeMap<(String, String), Option<Arc<jsonschema::Validator>>>,
    validated: u64,
    unvalidated: BTreeSet<String>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schemas")
    }
}

/// Why a message could not be checked against a named kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaLookupError {
    /// The index names no schema of that protocol and kind.
    #[error("no schema for {protocol}/{kind}")]
    Unknown {
        /// The protocol (`a2a`, `mcp`, `agui`, `cas`).
        protocol: String,
        /// The kind.
        kind: String,
    },
    /// The schema file is missing, is not JSON or does not compile.
    #[error("schema {protocol}/{kind} is unusable: {message}")]
    Invalid {
        /// The protocol.
        protocol: String,
        /// The kind.
        kind: String,
        /// What is wrong.
        message: String,
    },
}

impl Schemas {
    fn new(source: Source, index: Option<String>) -> Schemas {
        let index = index
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Schemas {
            inner: Arc::new(Mutex::new(Inner {
                source,
                index,
                compiled: BTreeMap::new(),
                validated: 0,
                unvalidated: BTreeSet::new(),
            })),
        }
    }

    /// The schemas of a directory (`DIR/index.json` and the files it names); a
    /// missing or unreadable index validates nothing.
    pub fn load(dir: &Path) -> Schemas {
        let index = std::fs::read_to_string(dir.join("index.json")).ok();
        Schemas::new(Source::Dir(dir.to_path_buf()), index)
    }

    /// The schemas of compiled-in copies of a `schemas/` tree: (path below it,
    /// contents), `index.json` among them.
    pub fn from_files(files: &'static [(&'static str, &'static str)]) -> Schemas {
        let index = files
            .iter()
            .find(|(p, _)| *p == "index.json")
            .map(|(_, t)| (*t).to_string());
        Schemas::new(Source::Files(files), index)
    }

    /// Validates `value` as the message at `path` in the protocol's entry of the
    /// index (`["methods", "GetTask", "result"]`, `["events", "RUN_STARTED"]`).
    /// Returns the violations, at most three (empty when valid, or when no
    /// schema applies, which [`Schemas::coverage`] then lists).
    pub fn check(&self, protocol: &str, path: &[&str], value: &Value) -> Vec<String> {
        let Ok(mut inner) = self.inner.lock() else {
            return Vec::new();
        };
        let label = format!("{protocol} {}", path.join("."));
        let mut node = &inner.index["protocols"][protocol];
        for k in path {
            node = &node[*k];
        }
        let Some(name) = node.as_str().map(str::to_string) else {
            inner.unvalidated.insert(label);
            return Vec::new();
        };
        let Ok(validator) = inner.validator(protocol, &name) else {
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

    /// Validates `value` as the kind named `kind` of `protocol`. `Ok(Err(_))`
    /// lists every violation as `<instance path>: <message>`.
    pub fn check_kind(
        &self,
        protocol: &str,
        kind: &str,
        value: &Value,
    ) -> Result<Result<(), Vec<String>>, SchemaLookupError> {
        let validator = match self.inner.lock() {
            Ok(mut inner) => inner.validator(protocol, kind)?,
            Err(_) => {
                return Err(SchemaLookupError::Invalid {
                    protocol: protocol.to_string(),
                    kind: kind.to_string(),
                    message: "the schema cache is poisoned".into(),
                })
            }
        };
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| format!("{}: {}", e.instance_path(), e))
            .collect();
        Ok(if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        })
    }

    /// (messages validated by [`Schemas::check`], paths received without a schema).
    pub fn coverage(&self) -> (u64, Vec<String>) {
        match self.inner.lock() {
            Ok(i) => (i.validated, i.unvalidated.iter().cloned().collect()),
            Err(_) => (0, Vec::new()),
        }
    }
}

impl Inner {
    /// The compiled schema of (protocol, kind), compiled on first use.
    fn validator(
        &mut self,
        protocol: &str,
        kind: &str,
    ) -> Result<Arc<jsonschema::Validator>, SchemaLookupError> {
        let key = (protocol.to_string(), kind.to_string());
        if let Some(v) = self.compiled.get(&key) {
            return v.clone().ok_or_else(|| SchemaLookupError::Invalid {
                protocol: key.0.clone(),
                kind: key.1.clone(),
                message: "the schema did not compile".into(),
            });
        }
        let file = self.index["protocols"][protocol]["schemas"][kind]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| SchemaLookupError::Unknown {
                protocol: key.0.clone(),
                kind: key.1.clone(),
            })?;
        let invalid = |message: String| SchemaLookupError::Invalid {
            protocol: protocol.to_string(),
            kind: kind.to_string(),
            message,
        };
        let text = match &self.source {
            Source::Dir(d) => std::fs::read_to_string(d.join(&file))
                .map_err(|e| invalid(format!("{file}: {e}")))?,
            Source::Files(files) => files
                .iter()
                .find(|(p, _)| *p == file)
                .map(|(_, t)| (*t).to_string())
                .ok_or_else(|| invalid(format!("{file} is not compiled in")))?,
        };
        let compiled = serde_json::from_str::<Value>(&text)
            .map_err(|e| e.to_string())
            .and_then(|s| compile(&s))
            .map(Arc::new);
        self.compiled.insert(key, compiled.as_ref().ok().cloned());
        compiled.map_err(invalid)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use serde_json::json;

    static FILES: &[(&str, &str)] = &[
        (
            "index.json",
            r#"{"protocols": {"cas": {"error": "ErrorBody", "at": "Stamp",
                "schemas": {"ErrorBody": "cas/ErrorBody.schema.json", "Stamp": "cas/Stamp.schema.json",
                            "Broken": "cas/Broken.schema.json"}}}}"#,
        ),
        (
            "cas/ErrorBody.schema.json",
            r#"{"type": "object", "required": ["error"]}"#,
        ),
        (
            "cas/Stamp.schema.json",
            r#"{"type": "string", "format": "date-time"}"#,
        ),
        ("cas/Broken.schema.json", r#"{"type": 5}"#),
    ];

    #[test]
    fn validates_by_index_path_and_counts_unknown_paths() {
        let s = Schemas::from_files(FILES);
        assert!(s.check("cas", &["error"], &json!({"error": {}})).is_empty());
        let bad = s.check("cas", &["error"], &json!({"nope": 1}));
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("cas error (ErrorBody)"), "{bad:?}");
        // Formats are asserted.
        assert!(!s.check("cas", &["at"], &json!("yesterday")).is_empty());
        assert!(s
            .check("cas", &["at"], &json!("2026-01-01T00:00:00Z"))
            .is_empty());
        assert!(s.check("mcp", &["methods", "x"], &json!({})).is_empty());
        let (n, missing) = s.coverage();
        assert_eq!(n, 4);
        assert_eq!(missing, vec!["mcp methods.x".to_string()]);
    }

    #[test]
    fn validates_by_kind_name_and_reports_unknown_and_broken_kinds() {
        let s = Schemas::from_files(FILES);
        assert_eq!(
            s.check_kind("cas", "ErrorBody", &json!({"error": 1})),
            Ok(Ok(()))
        );
        let errors = s
            .check_kind("cas", "ErrorBody", &json!([]))
            .unwrap()
            .unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(matches!(
            s.check_kind("cas", "Nope", &json!({})),
            Err(SchemaLookupError::Unknown { .. })
        ));
        assert!(matches!(
            s.check_kind("cas", "Broken", &json!({})),
            Err(SchemaLookupError::Invalid { .. })
        ));
    }

    #[test]
    fn a_directory_serves_the_same_checks() {
        let dir = std::env::temp_dir().join(format!("taskwire-wire-schema-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("cas")).unwrap();
        for (p, t) in FILES {
            std::fs::write(dir.join(p), t).unwrap();
        }
        let s = Schemas::load(&dir);
        assert!(s.check("cas", &["error"], &json!({"error": {}})).is_empty());
        assert_eq!(s.check("cas", &["error"], &json!({})).len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
