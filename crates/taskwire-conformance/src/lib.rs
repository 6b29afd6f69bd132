//! `taskwire conformance`: one suite that checks the same task lifecycle through
//! every protocol taskwire speaks (A2A JSON-RPC, gRPC and HTTP+JSON, MCP tasks,
//! AG-UI, CAS) and across them, against any server.
//!
//! ```
//! use taskwire_conformance::{scenario, Config, Protocol};
//!
//! # fn main() -> Result<(), taskwire_conformance::Error> {
//! // The scenarios compiled in (conformance/scenarios/*.toml) and a run's settings;
//! // `taskwire_conformance::run(&config).await` runs them against the target.
//! let scenarios = scenario::builtin()?;
//! assert!(scenarios.len() > 10);
//! let mut config = Config::new("http://127.0.0.1:7420")?;
//! config.protocols = Protocol::parse_list("a2a,mcp")?;
//! assert_eq!(config.protocols.len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! - Scenarios are data: one TOML file each under `conformance/scenarios/`
//!   ([`scenario`]), compiled in and interpreted by the [`runner`].
//! - Each protocol has a [`driver::Driver`] built on taskwire-client ([`drivers`]).
//! - What every protocol must show for a given core state comes from
//!   taskwire-vocab ([`views`]).
//! - Every message received is validated against `schemas/` ([`schema`]).
//! - Results form a scenario × protocol matrix ([`report`]) judged against a
//!   baseline of known failures ([`baseline`]).
//!
//! See docs/conformance.md.

pub mod baseline;
pub mod discovery;
pub mod driver;
pub mod drivers;
pub mod error;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod schema;
pub mod views;

/// The scenario files and schemas compiled in by build.rs.
mod compiled {
    include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));
}

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

pub use baseline::Baseline;
pub use error::Error;
pub use protocol::Protocol;
pub use report::Report;
pub use scenario::Scenario;

/// What to run against which target.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Base url of the target (`http://127.0.0.1:7420`).
    pub target: String,
    /// The protocols to run (default: all).
    pub protocols: Vec<Protocol>,
    /// Bearer token of the first principal.
    pub token: Option<String>,
    /// Bearer token of a second principal (for "another caller's task").
    pub token2: Option<String>,
    /// Known failures.
    pub baseline: Baseline,
    /// The scenarios (default: the built-in ones).
    pub scenarios: Vec<Scenario>,
    /// Only the scenarios of these names (all when empty).
    pub only: Vec<String>,
    /// Per-request time limit.
    pub request_timeout: Duration,
    /// A `schemas/` directory to validate against; `None`: the schemas compiled
    /// into this build.
    pub schemas_dir: Option<PathBuf>,
    /// Print progress (one line per cell) to stderr.
    pub progress: bool,
    /// The target is a bridge (`taskwire serve --upstream`) to an upstream of
    /// this protocol (`a2a`, `mcp` or `agui`): scenarios that protocol cannot carry
    /// (a scenario's `lost_upstream`) are skipped with the named loss.
    pub upstream: Option<String>,
}

impl Config {
    /// Defaults for a target: every protocol, the built-in scenarios, no tokens.
    pub fn new(target: impl Into<String>) -> Result<Config, Error> {
        Ok(Config {
            target: target.into(),
            protocols: Protocol::ALL.to_vec(),
            token: None,
            token2: None,
            baseline: Baseline::default(),
            scenarios: scenario::builtin()?,
            only: Vec::new(),
            request_timeout: Duration::from_secs(30),
            schemas_dir: std::env::var_os("TASKWIRE_SCHEMAS_DIR").map(PathBuf::from),
            progress: false,
            upstream: None,
        })
    }
}

/// Discovers the target, runs the scenarios and judges the result.
pub async fn run(config: &Config) -> Result<Report, Error> {
    let target = config.target.trim_end_matches('/').to_string();
    if !(target.starts_with("http://") || target.starts_with("https://")) {
        return Err(Error::Target(target));
    }
    if let Some(o) = config
        .only
        .iter()
        .find(|o| !config.scenarios.iter().any(|s| &s.name == *o))
    {
        return Err(Error::Scenario {
            file: o.clone(),
            reason: "no scenario of that name".into(),
        });
    }
    let schemas = match &config.schemas_dir {
        Some(d) => schema::Schemas::load(d),
        None => schema::Schemas::embedded(),
    };
    let wire = driver::Wire::new(schemas.clone());
    let found = discovery::discover(&target, config, &wire).await?;
    let suite = found.suite;
    if suite.drivers.is_empty() {
        let why: Vec<String> = found
            .offers
            .iter()
            .filter(|o| config.protocols.contains(&o.protocol))
            .map(|o| format!("{}: {}", o.protocol, o.skipped.clone().unwrap_or_default()))
            .collect();
        return Err(Error::NothingOffered(why.join("; ")));
    }
    if config.progress {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "taskwire conformance against {target}");
        for o in &found.offers {
            match (&o.endpoint, &o.skipped) {
                (Some(e), None) => {
                    let _ = writeln!(err, "  {:5} {e}", o.protocol.as_str());
                }
                (_, Some(r)) => {
                    let _ = writeln!(err, "  {:5} skipped: {r}", o.protocol.as_str());
                }
                _ => {}
            }
        }
        let _ = writeln!(
            err,
            "  scripted reference agent: {} ({})",
            if suite.scripted.0 { "yes" } else { "no" },
            suite.scripted.1
        );
    }
    let scenarios: Vec<Scenario> = config
        .scenarios
        .iter()
        .filter(|s| config.only.is_empty() || config.only.iter().any(|o| o == &s.name))
        .cloned()
        .collect();
    let progress = config.progress;
    let total = scenarios.len();
    let mut n = 0usize;
    let mut start = |s: &Scenario| {
        n += 1;
        if progress {
            let _ = writeln!(std::io::stderr(), "[{n}/{total}] {} — {}", s.name, s.title);
        }
    };
    let mut each = |c: &report::Cell| {
        if progress {
            let extra = match &c.verdict {
                report::Verdict::Pass => String::new(),
                report::Verdict::Skip(r) => format!(": {r}"),
                report::Verdict::Fail(f) => {
                    format!(": step {}: {} — {}", f.step, f.invariant, f.detail)
                }
            };
            let known = if matches!(c.verdict, report::Verdict::Fail(_))
                && config.baseline.find(&c.scenario, c.protocol).is_some()
            {
                " (known)"
            } else {
                ""
            };
            let _ = writeln!(
                std::io::stderr(),
                "    {:5} {}{known} ({} ms){extra}",
                c.protocol.as_str(),
                c.verdict.word(),
                c.millis
            );
        }
    };
    let cells = runner::run_all(&suite, &scenarios, &mut start, &mut each).await;
    let names: Vec<String> = config.scenarios.iter().map(|s| s.name.clone()).collect();
    let judgement = baseline::judge(&cells, &config.baseline, &names);
    let (validated, unvalidated) = schemas.coverage();
    Ok(Report {
        target,
        offers: found.offers,
        scripted_agent: report::Detection {
            detected: suite.scripted.0,
            reason: suite.scripted.1.clone(),
        },
        cells,
        judgement,
        schemas: report::SchemaCoverage {
            validated,
            unvalidated,
        },
    })
}
