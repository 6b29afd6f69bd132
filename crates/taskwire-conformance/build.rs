//! Embeds every scenario file under `conformance/scenarios/` so the binary runs
//! the suite from anywhere (a `--scenarios DIR` flag can still override them).

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dir = manifest.join("../../conformance/scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from("/// The scenario files compiled into the suite: (file name, contents).\npub(crate) const EMBEDDED: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            f.display().to_string()
        );
    }
    out.push_str("];\n");

    // The JSON Schemas (schemas/index.json and every file it names), so the
    // binary validates without the source tree.
    let schemas = manifest.join("../../schemas");
    println!("cargo:rerun-if-changed={}", schemas.display());
    let mut found = Vec::new();
    collect(&schemas, &schemas, &mut found);
    found.sort();
    out.push_str("/// The schemas/ files compiled into the suite: (path below schemas/, contents).\npub(crate) const EMBEDDED_SCHEMAS: &[(&str, &str)] = &[\n");
    for (rel, abs) in &found {
        println!("cargo:rerun-if-changed={}", abs.display());
        let _ = writeln!(
            out,
            "    ({rel:?}, include_str!({:?})),",
            abs.display().to_string()
        );
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::write(out_dir.join("scenarios.rs"), out) {
        panic!("writing scenarios.rs: {e}");
    }
}

fn collect(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            println!("cargo:rerun-if-changed={}", p.display());
            collect(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            if let Ok(rel) = p.strip_prefix(root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, p.clone()));
            }
        }
    }
}
