//! Results: one cell per scenario × protocol, the matrix a person reads, JUnit XML
//! and JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::baseline::{Baseline, Judgement};
use crate::protocol::Protocol;

/// One request and what came back, trimmed for a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exchange {
    /// The protocol it went through.
    pub protocol: Protocol,
    /// What was sent (method or path and an excerpt of the body).
    pub request: String,
    /// What came back (status and an excerpt of the body), or the transport error.
    pub response: String,
}

/// Longest excerpt of a request or response body kept in a report.
pub const EXCERPT: usize = 600;

/// Cuts a text to [`EXCERPT`] characters (on a character boundary).
pub fn excerpt(s: &str) -> String {
    if s.chars().count() <= EXCERPT {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(EXCERPT).collect();
        out.push('…');
        out
    }
}

/// Why a cell failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The 1-based step that broke.
    pub step: usize,
    /// The first broken invariant (`id: text`).
    pub invariant: String,
    /// What was seen instead.
    pub detail: String,
    /// The exchanges of that step (the last few).
    pub exchange: Vec<Exchange>,
}

/// The verdict of one cell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "lowercase")]
pub enum Verdict {
    /// Every invariant held.
    Pass,
    /// An invariant broke.
    Fail(Failure),
    /// Not run, with the reason.
    Skip(String),
}

impl Verdict {
    /// `pass`, `fail` or `skip`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail(_) => "fail",
            Verdict::Skip(_) => "skip",
        }
    }
}

/// One scenario × protocol result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cell {
    /// Scenario name.
    pub scenario: String,
    /// Protocol column (for a cross scenario: the starting protocol).
    pub protocol: Protocol,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// How long it took.
    pub millis: u64,
}

/// What discovery found for one protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// The protocol.
    pub protocol: Protocol,
    /// Where it is served, if offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Why it is not used, if it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// A yes/no finding of discovery with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// The finding.
    pub detected: bool,
    /// How it was decided.
    pub reason: String,
}

/// Message kinds received that had no schema to validate against.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchemaCoverage {
    /// Messages validated against a schema.
    pub validated: u64,
    /// (protocol, kind) pairs received without a schema in `schemas/index.json`.
    pub unvalidated: Vec<String>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The target's base url.
    pub target: String,
    /// What the target offers.
    pub offers: Vec<Offer>,
    /// Whether the target runs the scripted reference agent, and how that was decided.
    pub scripted_agent: Detection,
    /// Every cell, scenario-major in file order.
    pub cells: Vec<Cell>,
    /// The cells against the baseline.
    pub judgement: Judgement,
    /// Schema validation coverage.
    pub schemas: SchemaCoverage,
}

impl Report {
    /// True when the process must exit non-zero.
    pub fn failed(&self) -> bool {
        self.judgement.failed()
    }

    /// Counts of pass, fail, skip.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for cell in &self.cells {
            match cell.verdict {
                Verdict::Pass => c.0 += 1,
                Verdict::Fail(_) => c.1 += 1,
                Verdict::Skip(_) => c.2 += 1,
            }
        }
        c
    }

    fn scenario_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !out.contains(&c.scenario.as_str()) {
                out.push(&c.scenario);
            }
        }
        out
    }

    /// The matrix and the details of every failure and skip, for a person.
    pub fn render_text(&self, baseline: &Baseline) -> String {
        let mut out = String::new();
        let names = self.scenario_names();
        let width = names.iter().map(|n| n.len()).max().unwrap_or(8).max(8);
        let _ = write!(out, "\n{:width$}", "scenario");
        // Each column is as wide as its protocol's name (at least 6).
        let col = |p: Protocol| p.as_str().len().max(6);
        for p in Protocol::ALL {
            let _ = write!(out, "  {:w$}", p.as_str(), w = col(p));
        }
        out.push('\n');
        for name in &names {
            let _ = write!(out, "{name:width$}");
            for p in Protocol::ALL {
                let word = self
                    .cells
                    .iter()
                    .find(|c| c.scenario == *name && c.protocol == p)
                    .map(|c| match &c.verdict {
                        Verdict::Fail(_) if baseline.find(name, p).is_some() => "known",
                        v => v.word(),
                    })
                    .unwrap_or("-");
                let _ = write!(out, "  {word:w$}", w = col(p));
            }
            out.push('\n');
        }
        let (pass, fail, skip) = self.counts();
        let _ = writeln!(
            out,
            "\n{pass} passed, {fail} failed ({} known from the baseline), {skip} skipped",
            self.judgement.known_failures.len()
        );
        let fails: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Fail(_)))
            .collect();
        if !fails.is_empty() {
            out.push_str("\nFailures:\n");
        }
        for c in fails {
            if let Verdict::Fail(f) = &c.verdict {
                let known = if baseline.find(&c.scenario, c.protocol).is_some() {
                    " (in baseline)"
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "- {} × {}{known}: step {}: {}\n    {}",
                    c.scenario, c.protocol, f.step, f.invariant, f.detail
                );
                for e in &f.exchange {
                    let _ = writeln!(
                        out,
                        "    [{}] > {}\n    [{}] < {}",
                        e.protocol, e.request, e.protocol, e.response
                    );
                }
            }
        }
        let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
        for c in &self.cells {
            if let Verdict::Skip(r) = &c.verdict {
                let label = format!("{} × {}", c.scenario, c.protocol);
                match reasons.iter_mut().find(|(x, _)| x == r) {
                    Some((_, v)) => v.push(label),
                    None => reasons.push((r.clone(), vec![label])),
                }
            }
        }
        if !reasons.is_empty() {
            out.push_str("\nSkipped:\n");
        }
        for (r, labels) in reasons {
            let _ = writeln!(out, "- {r}: {}", labels.join(", "));
        }
        for e in &self.judgement.stale {
            let _ = writeln!(
                out,
                "stale baseline entry: {} × {} now passes (remove it)",
                e.scenario, e.protocol
            );
        }
        for e in &self.judgement.unknown {
            let _ = writeln!(
                out,
                "baseline entry names no scenario of the suite: {} × {}",
                e.scenario, e.protocol
            );
        }
        if !self.schemas.unvalidated.is_empty() {
            let _ = writeln!(
                out,
                "\n{} messages validated against schemas/; unvalidated (no schema yet): {}",
                self.schemas.validated,
                self.schemas.unvalidated.join(", ")
            );
        } else {
            let _ = writeln!(
                out,
                "\n{} messages validated against schemas/",
                self.schemas.validated
            );
        }
        out
    }

    /// JUnit XML: one test suite per protocol, one test case per scenario.
    pub fn render_junit(&self, baseline: &Baseline) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        // A failure the baseline lists is reported as skipped, so CI stays green.
        let known = |c: &Cell| {
            matches!(c.verdict, Verdict::Fail(_))
                && baseline.find(&c.scenario, c.protocol).is_some()
        };
        let failing = |c: &Cell| matches!(c.verdict, Verdict::Fail(_)) && !known(c);
        let skipped = |c: &Cell| matches!(c.verdict, Verdict::Skip(_)) || known(c);
        let fail = self.cells.iter().filter(|c| failing(c)).count();
        let skip = self.cells.iter().filter(|c| skipped(c)).count();
        let _ = writeln!(
            out,
            "<testsuites name=\"taskwire conformance\" tests=\"{}\" failures=\"{fail}\" skipped=\"{skip}\">",
            self.cells.len()
        );
        for p in Protocol::ALL {
            let cells: Vec<&Cell> = self.cells.iter().filter(|c| c.protocol == p).collect();
            if cells.is_empty() {
                continue;
            }
            let f = cells.iter().filter(|c| failing(c)).count();
            let s = cells.iter().filter(|c| skipped(c)).count();
            let secs: f64 = cells.iter().map(|c| c.millis as f64 / 1000.0).sum();
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" skipped=\"{s}\" time=\"{secs:.3}\">",
                p.as_str(),
                cells.len()
            );
            for c in cells {
                let _ = write!(
                    out,
                    "    <testcase classname=\"conformance.{}\" name=\"{}\" time=\"{:.3}\"",
                    p.as_str(),
                    xml(&c.scenario),
                    c.millis as f64 / 1000.0
                );
                match &c.verdict {
                    Verdict::Pass => out.push_str("/>\n"),
                    Verdict::Skip(r) => {
                        let _ = writeln!(
                            out,
                            ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                            xml(r)
                        );
                    }
                    Verdict::Fail(f) => {
                        let known = known(c);
                        let mut body = format!("step {}: {}\n", f.step, f.detail);
                        for e in &f.exchange {
                            let _ = writeln!(
                                body,
                                "[{}] > {}\n[{}] < {}",
                                e.protocol, e.request, e.protocol, e.response
                            );
                        }
                        if known {
                            // A known failure is reported, but as skipped so CI stays green.
                            let _ = writeln!(
                                out,
                                ">\n      <skipped message=\"known failure (baseline): {}\"/>\n      <system-out>{}</system-out>\n    </testcase>",
                                xml(&f.invariant),
                                xml(&body)
                            );
                        } else {
                            let _ = writeln!(
                                out,
                                ">\n      <failure message=\"{}\" type=\"invariant\">{}</failure>\n    </testcase>",
                                xml(&f.invariant),
                                xml(&body)
                            );
                        }
                    }
                }
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }

    /// The report as pretty JSON.
    pub fn render_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }
}

/// Escapes text for XML attributes and content (control characters dropped).
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::judge;

    fn report() -> Report {
        let cells = vec![
            Cell {
                scenario: "create".into(),
                protocol: Protocol::A2a,
                verdict: Verdict::Pass,
                millis: 12,
            },
            Cell {
                scenario: "create".into(),
                protocol: Protocol::Mcp,
                verdict: Verdict::Fail(Failure {
                    step: 2,
                    invariant: "done: the <task> & \"ends\"".into(),
                    detail: "saw working".into(),
                    exchange: vec![Exchange {
                        protocol: Protocol::Mcp,
                        request: "tasks/get {\"taskId\":\"x\"}".into(),
                        response: "200 {}\u{1}".into(),
                    }],
                }),
                millis: 3,
            },
            Cell {
                scenario: "create".into(),
                protocol: Protocol::Cas,
                verdict: Verdict::Skip("not offered".into()),
                millis: 0,
            },
        ];
        let judgement = judge(&cells, &Baseline::default(), &["create".into()]);
        Report {
            target: "http://127.0.0.1:1".into(),
            offers: Vec::new(),
            scripted_agent: Detection {
                detected: true,
                reason: "card".into(),
            },
            cells,
            judgement,
            schemas: SchemaCoverage::default(),
        }
    }

    #[test]
    fn text_matrix_names_failures_and_skips() {
        let r = report();
        let t = r.render_text(&Baseline::default());
        assert!(t.contains("create"), "{t}");
        // Columns are as wide as their names: a2a-rest and mcp-2025 are wider
        // than the rest.
        assert!(
            t.contains("a2a     grpc    a2a-rest  mcp     mcp-2025  agui    cas"),
            "{t}"
        );
        assert!(
            t.contains("pass    -       -         fail    -         -       skip"),
            "{t}"
        );
        assert!(t.contains("create × mcp: step 2: done:"), "{t}");
        assert!(t.contains("- not offered: create × cas"), "{t}");
        assert!(r.failed());
    }

    #[test]
    fn junit_escapes_and_counts() {
        let x = report().render_junit(&Baseline::default());
        assert!(x.starts_with("<?xml"));
        assert!(
            x.contains("tests=\"3\" failures=\"1\" skipped=\"1\""),
            "{x}"
        );
        assert!(x.contains("the &lt;task&gt; &amp; &quot;ends&quot;"), "{x}");
        assert!(!x.contains('\u{1}'));
        assert_eq!(x.matches("<testsuite ").count(), 3);
        assert_eq!(x.matches("</testsuite>").count(), 3);
    }

    #[test]
    fn junit_reports_known_failures_as_skipped() {
        let b = Baseline::parse(
            "b",
            r#"[{"scenario":"create","protocol":"mcp","reason":"r"}]"#,
        )
        .expect("baseline");
        let x = report().render_junit(&b);
        assert!(
            x.contains("tests=\"3\" failures=\"0\" skipped=\"2\""),
            "{x}"
        );
        assert!(x.contains("known failure (baseline)"), "{x}");
        assert!(!x.contains("<failure"), "{x}");
    }

    #[test]
    fn json_has_cells_and_verdicts() {
        let j: serde_json::Value =
            serde_json::from_str(&report().render_json().expect("json")).expect("parses");
        assert_eq!(j["cells"][0]["verdict"], "pass");
        assert_eq!(j["cells"][1]["verdict"], "fail");
        assert_eq!(j["cells"][1]["detail"]["step"], 2);
        assert_eq!(j["cells"][2]["detail"], "not offered");
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = "é".repeat(EXCERPT * 2);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT + 1);
        assert_eq!(excerpt("short"), "short");
    }
}
