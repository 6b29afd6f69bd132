//! Embeds the committed `schemas/` files listed in `schemas/index.json` (the A2A
//! descriptor the generator walks is the wire layer's, `taskwire_wire::a2a`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);

    let schemas = root.join("schemas");
    println!("cargo:rerun-if-changed={}", schemas.display());
    std::fs::write(out.join("embedded.rs"), embedded(&schemas)?)?;
    Ok(())
}

/// `pub(crate) static INDEX`, and the committed files the index names (files not
/// written yet are left out), each embedded once as a `const` and listed twice:
/// `FILES` (protocol, kind, text) and `FILES_BY_PATH` (path below schemas/, text;
/// index.json first) for the wire layer's validator.
fn embedded(schemas: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let index_path = schemas.join("index.json");
    let mut s = String::new();
    let mut by_kind = String::new();
    let mut by_path = String::new();
    let index: serde_json::Value = match std::fs::read_to_string(&index_path) {
        Ok(text) => {
            writeln!(
                s,
                "const INDEX_TEXT: &str = include_str!({:?});",
                index_path.display()
            )?;
            writeln!(
                s,
                "pub(crate) static INDEX: Option<&str> = Some(INDEX_TEXT);"
            )?;
            writeln!(by_path, "    (\"index.json\", INDEX_TEXT),")?;
            serde_json::from_str(&text)?
        }
        Err(_) => {
            writeln!(s, "pub(crate) static INDEX: Option<&str> = None;")?;
            serde_json::Value::Null
        }
    };
    let mut n = 0usize;
    if let Some(protocols) = index.get("protocols").and_then(|p| p.as_object()) {
        for (protocol, entry) in protocols {
            let Some(kinds) = entry.get("schemas").and_then(|k| k.as_object()) else {
                continue;
            };
            for (kind, file) in kinds {
                let Some(file) = file.as_str() else { continue };
                let path = schemas.join(file);
                if path.is_file() {
                    writeln!(s, "const F{n}: &str = include_str!({:?});", path.display())?;
                    writeln!(by_kind, "    ({protocol:?}, {kind:?}, F{n}),")?;
                    writeln!(by_path, "    ({file:?}, F{n}),")?;
                    n += 1;
                }
            }
        }
    }
    writeln!(
        s,
        "pub(crate) static FILES: &[(&str, &str, &str)] = &[\n{by_kind}];"
    )?;
    writeln!(
        s,
        "pub(crate) static FILES_BY_PATH: &[(&str, &str)] = &[\n{by_path}];"
    )?;
    Ok(s)
}
