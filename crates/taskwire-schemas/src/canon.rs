//! Canonical text of a schema file: keys sorted at every level, two-space
//! indentation, a final newline, whatever map order serde_json was built with.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// A view of a value whose objects serialise with sorted keys.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(m) => {
                let sorted: BTreeMap<&String, Sorted<'_>> =
                    m.iter().map(|(k, v)| (k, Sorted(v))).collect();
                sorted.serialize(s)
            }
            Value::Array(a) => {
                let items: Vec<Sorted<'_>> = a.iter().map(Sorted).collect();
                items.serialize(s)
            }
            other => other.serialize(s),
        }
    }
}

/// The canonical text of `v`.
pub(crate) fn to_text(v: &Value) -> Result<String, serde_json::Error> {
    let mut s = serde_json::to_string_pretty(&Sorted(v))?;
    s.push('\n');
    Ok(s)
}
