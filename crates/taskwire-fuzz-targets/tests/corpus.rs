//! Replays every committed fuzz input through the same functions the cargo-fuzz
//! targets call: the hand-made seeds (`fuzz/seeds/<target>/*`), the minimised
//! corpus the fuzzer grew (`fuzz/corpus/<target>/*`) and the inputs of past
//! findings (`fuzz/regressions/<target>/*`), so plain `cargo test` (no nightly,
//! no libFuzzer) keeps every finding and every invariant honest.

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir/<target>`, sorted (none if the directory is missing).
fn inputs(dir: &str, target: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(fuzz_dir().join(dir).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn replay_all(dir: &str) -> usize {
    let mut failures = Vec::new();
    let mut n = 0;
    for (name, f) in taskwire_fuzz_targets::TARGETS {
        for path in inputs(dir, name) {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
            if let Some(msg) = taskwire_fuzz_targets::replay(*f, &data) {
                failures.push(format!("{name} {}: {msg}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} inputs fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    n
}

#[test]
fn every_seed_replays_cleanly() {
    replay_all("seeds");
    for (name, _) in taskwire_fuzz_targets::TARGETS {
        assert!(!inputs("seeds", name).is_empty(), "no seeds for {name}");
    }
}

#[test]
fn every_corpus_input_replays_cleanly() {
    replay_all("corpus");
    for (name, _) in taskwire_fuzz_targets::TARGETS {
        assert!(!inputs("corpus", name).is_empty(), "no corpus for {name}");
    }
}

#[test]
fn every_regression_input_replays_cleanly() {
    replay_all("regressions");
}

#[test]
fn every_target_has_a_fuzz_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in taskwire_fuzz_targets::TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
        let src = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert!(
            text.contains("taskwire_fuzz_targets::"),
            "{} does not call the shared target",
            src.display()
        );
    }
}

/// Every AG-UI event among the seeds (taken from the server's golden fixtures, so
/// events the server does emit) reads back the same from its protobuf frame as
/// from its SSE frame.
#[test]
fn agui_seed_events_have_one_form() {
    let mut n = 0;
    for path in inputs("seeds", "agui_proto") {
        let data = std::fs::read(&path).expect("a seed");
        if data.first() != Some(&b'{') {
            continue;
        }
        n += 1;
        if let Some((proto, sse)) = taskwire_fuzz_targets::agui::proto_and_sse_differ(&data) {
            panic!("{}: protobuf form {proto}\n SSE form {sse}", path.display());
        }
    }
    assert!(n > 10, "only {n} event seeds");
}
