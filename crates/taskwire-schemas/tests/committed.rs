//! The committed `schemas/` equal what the code generates. `TASKWIRE_BLESS=1`
//! rewrites them (and removes generated files that are no longer produced).

use std::collections::BTreeSet;
use std::path::Path;

fn committed_files(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                let sub = p
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                if let Ok(inner) = std::fs::read_dir(&p) {
                    for f in inner.flatten() {
                        let name = f.file_name().to_string_lossy().to_string();
                        if name.ends_with(".schema.json") {
                            out.insert(format!("{sub}/{name}"));
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn committed_schemas_match_the_generated_ones() {
    let generated = taskwire_schemas::generate().expect("generate");
    let dir = taskwire_schemas::workspace_schemas_dir();
    let bless = std::env::var("TASKWIRE_BLESS").is_ok_and(|v| v == "1");
    let mut problems = Vec::new();
    for (rel, text) in &generated {
        let path = dir.join(rel);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(text.as_str()) {
            continue;
        }
        if bless {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(&path, text).expect("write");
        } else if current.is_none() {
            problems.push(format!("schemas/{rel} is missing"));
        } else {
            problems.push(format!("schemas/{rel} differs from the generated schema"));
        }
    }
    for rel in committed_files(&dir) {
        if !generated.contains_key(&rel) {
            if bless {
                std::fs::remove_file(dir.join(&rel)).expect("remove");
            } else {
                problems.push(format!("schemas/{rel} is not generated any more"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nregenerate with: TASKWIRE_BLESS=1 cargo test -p taskwire-schemas --test committed",
        problems.join("\n")
    );
}

#[test]
fn every_generated_schema_compiles() {
    for (rel, text) in taskwire_schemas::generate().expect("generate") {
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        if rel == taskwire_schemas::INDEX_FILE {
            continue;
        }
        taskwire_schemas::compile("?", &rel, &v).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
}

#[test]
fn the_index_names_every_file_and_only_generated_files() {
    let generated = taskwire_schemas::generate().expect("generate");
    let index: serde_json::Value =
        serde_json::from_str(&generated[taskwire_schemas::INDEX_FILE]).expect("index");
    let mut named = BTreeSet::new();
    for (p, entry) in index["protocols"].as_object().expect("protocols") {
        assert!(taskwire_schemas::protocol::ALL.contains(&p.as_str()), "{p}");
        for (kind, file) in entry["schemas"].as_object().expect("schemas") {
            let file = file.as_str().expect("path");
            assert_eq!(file, taskwire_schemas::file_name(p, kind));
            assert!(generated.contains_key(file), "{file}");
            named.insert(file.to_string());
        }
        // Every kind a method, endpoint or event table names has a file.
        let kinds = entry["schemas"].as_object().expect("schemas");
        let mut referenced = Vec::new();
        collect_strings(&entry["methods"], &mut referenced);
        collect_strings(&entry["endpoints"], &mut referenced);
        collect_strings(&entry["events"], &mut referenced);
        collect_strings(&entry["envelope"], &mut referenced);
        for k in referenced {
            assert!(
                kinds.contains_key(&k),
                "{p}: {k} is referenced but has no schema"
            );
        }
    }
    let files: BTreeSet<String> = generated
        .keys()
        .filter(|k| k.as_str() != taskwire_schemas::INDEX_FILE)
        .cloned()
        .collect();
    assert_eq!(named, files);
}

fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Object(m) => m.values().for_each(|x| collect_strings(x, out)),
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}
