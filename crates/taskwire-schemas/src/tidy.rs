//! Post-processing of schemars output so that it states the wire form exactly.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// In a schema of what taskwire *sends*: a property that may be absent is never
/// `null` (serde skips `None`), so `null` is removed from the schema of every
/// property that is not required. Required nullable properties (CAS
/// `terminal_reason`, MCP `ttlMs`) keep their `null`.
pub(crate) fn no_null_when_optional(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let required: BTreeSet<String> = o
                .get("required")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = o.get_mut("properties") {
                for (name, p) in props.iter_mut() {
                    if !required.contains(name) {
                        strip_null(p);
                    }
                }
            }
            for child in o.values_mut() {
                no_null_when_optional(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(no_null_when_optional),
        _ => {}
    }
}

fn strip_null(p: &mut Value) {
    let Value::Object(o) = p else { return };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            o.insert("type".into(), only);
        }
    }
    let mut inline = None;
    if let Some(Value::Array(any)) = o.get_mut("anyOf") {
        any.retain(|s| {
            s.get("type").and_then(Value::as_str) != Some("null")
                || s.as_object().is_some_and(|m| m.len() != 1)
        });
        if any.len() == 1 {
            inline = Some(any.remove(0));
        }
    }
    if let Some(Value::Object(inner)) = inline {
        o.remove("anyOf");
        for (k, val) in inner {
            o.entry(k).or_insert(val);
        }
    }
}

/// The schema of one variant of an internally tagged enum (a `oneOf` of objects
/// told apart by a `const` tag), merged into its root: properties and required
/// members of the root and the variant together. `None` when no variant carries
/// that tag.
pub(crate) fn select_variant(root: &Value, tag: &str, value: &str) -> Option<Value> {
    let mut out = root.as_object()?.clone();
    let variants = out.remove("oneOf")?;
    let variant = variants.as_array()?.iter().find(|s| {
        s.pointer(&format!("/properties/{tag}/const"))
            .and_then(Value::as_str)
            == Some(value)
    })?;
    let variant = variant.as_object()?;
    let mut props = match out.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    if let Some(Value::Object(vp)) = variant.get("properties") {
        for (k, v) in vp {
            props.insert(k.clone(), v.clone());
        }
    }
    out.insert("properties".into(), Value::Object(props));
    let mut required: Vec<Value> = match out.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    if let Some(Value::Array(vr)) = variant.get("required") {
        for r in vr {
            if !required.contains(r) {
                required.push(r.clone());
            }
        }
    }
    out.insert("required".into(), Value::Array(required));
    for (k, v) in variant {
        if k != "properties" && k != "required" && k != "description" {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let mut v = Value::Object(out);
    prune_defs(&mut v);
    Some(v)
}

/// Drops `$defs` that nothing outside them references (transitively).
pub(crate) fn prune_defs(v: &mut Value) {
    let Some(Value::Object(defs)) = v.get("$defs").cloned() else {
        return;
    };
    let mut keep = BTreeSet::new();
    let mut todo = Vec::new();
    if let Value::Object(o) = &*v {
        for (k, child) in o {
            if k != "$defs" {
                refs(child, &mut todo);
            }
        }
    }
    while let Some(name) = todo.pop() {
        if keep.insert(name.clone()) {
            if let Some(d) = defs.get(&name) {
                refs(d, &mut todo);
            }
        }
    }
    if let Value::Object(o) = v {
        if keep.is_empty() {
            o.remove("$defs");
        } else if let Some(Value::Object(d)) = o.get_mut("$defs") {
            d.retain(|k, _| keep.contains(k));
        }
    }
}

fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                if let Some(name) = r.strip_prefix("#/$defs/") {
                    out.push(name.to_string());
                }
            }
            o.values().for_each(|c| refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_properties_lose_null_required_ones_keep_it() {
        let mut s = json!({
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": ["string", "null"]},
                "c": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}], "description": "d"}
            }
        });
        no_null_when_optional(&mut s);
        assert_eq!(s["properties"]["a"]["type"], json!(["string", "null"]));
        assert_eq!(s["properties"]["b"]["type"], json!("string"));
        assert_eq!(
            s["properties"]["c"],
            json!({"$ref": "#/$defs/X", "description": "d"})
        );
    }

    #[test]
    fn a_variant_is_merged_and_unused_defs_dropped() {
        let root = json!({
            "type": "object",
            "properties": {"ts": {"type": "integer"}},
            "oneOf": [
                {"type": "object", "properties": {"type": {"const": "A"}, "x": {"$ref": "#/$defs/X"}}, "required": ["type", "x"]},
                {"type": "object", "properties": {"type": {"const": "B"}, "y": {"$ref": "#/$defs/Y"}}, "required": ["type"]}
            ],
            "$defs": {"X": {"type": "string"}, "Y": {"type": "number"}}
        });
        let a = select_variant(&root, "type", "A").expect("A");
        assert_eq!(a["required"], json!(["type", "x"]));
        assert!(a["properties"]["ts"].is_object() && a["properties"]["x"].is_object());
        assert!(a.get("oneOf").is_none());
        assert_eq!(a["$defs"], json!({"X": {"type": "string"}}));
        assert!(select_variant(&root, "type", "C").is_none());
    }
}
