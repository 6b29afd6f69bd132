//! Baselines: the failures a target is known to have.
//!
//! A baseline file is a JSON array of `{"scenario", "protocol", "reason"}` objects.
//! A failure listed there does not fail the run; a listed entry whose cell now
//! passes does (the baseline is stale and must be shortened), and so does an
//! entry naming a scenario the suite does not have. Entries whose cell was
//! skipped or not run (a protocol left out with `--protocols`) are reported but
//! change nothing, and so do passing entries marked `"flaky": true` (a failure
//! that depends on timing, such as a race the target loses only sometimes).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::protocol::Protocol;
use crate::report::{Cell, Verdict};

/// One known failure.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Scenario name.
    pub scenario: String,
    /// Protocol column.
    pub protocol: Protocol,
    /// Why the target fails it (for a person).
    pub reason: String,
    /// The failure depends on timing (a race): a pass is then not stale.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
}

/// A list of known failures.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Baseline {
    /// The entries, in file order.
    pub entries: Vec<Entry>,
}

impl Baseline {
    /// Parses a baseline's JSON text.
    pub fn parse(file: &str, text: &str) -> Result<Baseline, Error> {
        let b: Baseline = serde_json::from_str(text).map_err(|e| Error::Baseline {
            file: file.to_string(),
            reason: e.to_string(),
        })?;
        let mut seen = BTreeMap::new();
        for e in &b.entries {
            if seen.insert((e.scenario.as_str(), e.protocol), ()).is_some() {
                return Err(Error::Baseline {
                    file: file.to_string(),
                    reason: format!("{} × {} is listed twice", e.scenario, e.protocol),
                });
            }
        }
        Ok(b)
    }

    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Baseline::parse(&path.display().to_string(), &text)
    }

    /// The entry for a cell, if any.
    pub fn find(&self, scenario: &str, protocol: Protocol) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.scenario == scenario && e.protocol == protocol)
    }

    /// Builds the baseline that would make `cells` pass: every failure, with its
    /// first broken invariant as the reason.
    pub fn from_cells(cells: &[Cell]) -> Baseline {
        let mut entries: Vec<Entry> = cells
            .iter()
            .filter_map(|c| match &c.verdict {
                Verdict::Fail(f) => Some(Entry {
                    scenario: c.scenario.clone(),
                    protocol: c.protocol,
                    reason: f.invariant.clone(),
                    flaky: false,
                }),
                _ => None,
            })
            .collect();
        entries.sort();
        Baseline { entries }
    }
}

/// What a run's cells mean against a baseline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// Failures not in the baseline: (scenario, protocol).
    pub new_failures: Vec<(String, Protocol)>,
    /// Failures the baseline lists.
    pub known_failures: Vec<(String, Protocol)>,
    /// Baseline entries whose cell passed.
    pub stale: Vec<Entry>,
    /// Baseline entries naming a scenario the suite does not have.
    pub unknown: Vec<Entry>,
    /// Baseline entries whose cell was skipped or not run.
    pub unverified: Vec<Entry>,
}

impl Judgement {
    /// True when the run must exit non-zero.
    pub fn failed(&self) -> bool {
        !self.new_failures.is_empty() || !self.stale.is_empty() || !self.unknown.is_empty()
    }
}

/// Judges cells against a baseline; `scenarios` are the names the suite knows.
pub fn judge(cells: &[Cell], baseline: &Baseline, scenarios: &[String]) -> Judgement {
    let mut j = Judgement::default();
    for c in cells {
        if let Verdict::Fail(_) = c.verdict {
            let key = (c.scenario.clone(), c.protocol);
            if baseline.find(&c.scenario, c.protocol).is_some() {
                j.known_failures.push(key);
            } else {
                j.new_failures.push(key);
            }
        }
    }
    for e in &baseline.entries {
        if !scenarios.iter().any(|s| s == &e.scenario) {
            j.unknown.push(e.clone());
            continue;
        }
        match cells
            .iter()
            .find(|c| c.scenario == e.scenario && c.protocol == e.protocol)
            .map(|c| &c.verdict)
        {
            Some(Verdict::Pass) if e.flaky => j.unverified.push(e.clone()),
            Some(Verdict::Pass) => j.stale.push(e.clone()),
            Some(Verdict::Fail(_)) => {}
            Some(Verdict::Skip(_)) | None => j.unverified.push(e.clone()),
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Failure;

    fn cell(s: &str, p: Protocol, v: Verdict) -> Cell {
        Cell {
            scenario: s.into(),
            protocol: p,
            verdict: v,
            millis: 0,
        }
    }

    fn fail() -> Verdict {
        Verdict::Fail(Failure {
            step: 1,
            invariant: "x: broken".into(),
            detail: "d".into(),
            exchange: Vec::new(),
        })
    }

    #[test]
    fn parse_and_duplicates() {
        let b = Baseline::parse(
            "b.json",
            r#"[{"scenario":"create","protocol":"a2a","reason":"r"}]"#,
        )
        .expect("parses");
        assert_eq!(b.entries.len(), 1);
        assert!(Baseline::parse("b.json", "[]")
            .expect("empty")
            .entries
            .is_empty());
        let twice = r#"[{"scenario":"a","protocol":"mcp","reason":"r"},{"scenario":"a","protocol":"mcp","reason":"s"}]"#;
        assert!(Baseline::parse("b.json", twice).is_err());
        assert!(Baseline::parse(
            "b.json",
            r#"[{"scenario":"a","protocol":"soap","reason":"r"}]"#
        )
        .is_err());
        assert!(Baseline::parse("b.json", r#"[{"scenario":"a","protocol":"a2a"}]"#).is_err());
    }

    #[test]
    fn new_known_stale_unknown_unverified() {
        let names: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let cells = vec![
            cell("a", Protocol::A2a, fail()),
            cell("b", Protocol::A2a, fail()),
            cell("c", Protocol::A2a, Verdict::Pass),
            cell("d", Protocol::A2a, Verdict::Skip("no".into())),
        ];
        let entry = |s: &str| Entry {
            scenario: s.into(),
            protocol: Protocol::A2a,
            reason: "r".into(),
            flaky: false,
        };
        // Empty baseline: both failures are new.
        let j = judge(&cells, &Baseline::default(), &names);
        assert_eq!(j.new_failures.len(), 2);
        assert!(j.failed());
        // Both failures listed: passes.
        let b = Baseline {
            entries: vec![entry("a"), entry("b")],
        };
        let j = judge(&cells, &b, &names);
        assert!(!j.failed(), "{j:?}");
        assert_eq!(j.known_failures.len(), 2);
        // A passing cell listed: stale, fails.
        let mut b2 = b.clone();
        b2.entries.push(entry("c"));
        let j = judge(&cells, &b2, &names);
        assert_eq!(j.stale, vec![entry("c")]);
        assert!(j.failed());
        // A skipped cell listed: unverified, does not fail.
        let mut b3 = b.clone();
        b3.entries.push(entry("d"));
        let j = judge(&cells, &b3, &names);
        assert_eq!(j.unverified, vec![entry("d")]);
        assert!(!j.failed());
        // A passing cell listed as flaky: unverified, does not fail.
        let mut flaky = b.clone();
        flaky.entries.push(Entry {
            flaky: true,
            ..entry("c")
        });
        let j = judge(&cells, &flaky, &names);
        assert!(j.stale.is_empty() && !j.failed(), "{j:?}");
        assert_eq!(j.unverified.len(), 1);
        // A scenario the suite does not have: fails.
        let mut b4 = b;
        b4.entries.push(entry("zzz"));
        let j = judge(&cells, &b4, &names);
        assert_eq!(j.unknown.len(), 1);
        assert!(j.failed());
        // from_cells makes the failing run pass.
        let made = Baseline::from_cells(&cells);
        assert!(!judge(&cells, &made, &names).failed());
    }
}
