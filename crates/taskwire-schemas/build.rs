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

/// `pub(crate) static INDEX` and `pub(crate) static FILES` (protocol, kind, text)
/// for every committed file the index names; files not written yet are left out.
fn embedded(schemas: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let index_path = schemas.join("index.json");
    let mut s = String::new();
    let index: serde_json::Value = match std::fs::read_to_string(&index_path) {
        Ok(text) => {
            writeln!(
                s,
                "pub(crate) static INDEX: Option<&str> = Some(include_str!({:?}));",
                index_path.display()
            )?;
            serde_json::from_str(&text)?
        }
        Err(_) => {
            writeln!(s, "pub(crate) static INDEX: Option<&str> = None;")?;
            serde_json::Value::Null
        }
    };
    writeln!(s, "pub(crate) static FILES: &[(&str, &str, &str)] = &[")?;
    if let Some(protocols) = index.get("protocols").and_then(|p| p.as_object()) {
        for (protocol, entry) in protocols {
            let Some(kinds) = entry.get("schemas").and_then(|k| k.as_object()) else {
                continue;
            };
            for (kind, file) in kinds {
                let Some(file) = file.as_str() else { continue };
                let path = schemas.join(file);
                if path.is_file() {
                    writeln!(
                        s,
                        "    ({protocol:?}, {kind:?}, include_str!({:?})),",
                        path.display()
                    )?;
                }
            }
        }
    }
    writeln!(s, "];")?;
    // The same files by their path below schemas/, index.json first, for the
    // wire layer's validator.
    writeln!(s, "pub(crate) static FILES_BY_PATH: &[(&str, &str)] = &[")?;
    if index_path.is_file() {
        writeln!(
            s,
            "    (\"index.json\", include_str!({:?})),",
            index_path.display()
        )?;
    }
    if let Some(protocols) = index.get("protocols").and_then(|p| p.as_object()) {
        for entry in protocols.values() {
            let Some(kinds) = entry.get("schemas").and_then(|k| k.as_object()) else {
                continue;
            };
            for file in kinds.values().filter_map(|f| f.as_str()) {
                let path = schemas.join(file);
                if path.is_file() {
                    writeln!(s, "    ({file:?}, include_str!({:?})),", path.display())?;
                }
            }
        }
    }
    writeln!(s, "];")?;
    Ok(s)
}
