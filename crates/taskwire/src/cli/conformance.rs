//! `taskwire conformance`: the suite run against a server, its report and files.

use super::args::ConformanceArgs;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(feature = "conformance")]
/// The suite's configuration for these arguments.
pub(super) fn conformance_config(
    args: &ConformanceArgs,
) -> Result<taskwire_conformance::Config, taskwire_conformance::Error> {
    let mut c = taskwire_conformance::Config::new(args.target.trim_end_matches('/'))?;
    c.protocols = taskwire_conformance::Protocol::parse_list(&args.protocols)?;
    c.token = args.token.clone().filter(|t| !t.is_empty());
    c.token2 = args.token2.clone().filter(|t| !t.is_empty());
    if let Some(b) = &args.baseline {
        c.baseline = taskwire_conformance::Baseline::load(b)?;
    }
    if let Some(d) = &args.scenarios {
        c.scenarios = taskwire_conformance::scenario::load_dir(d)?;
    }
    c.only = args
        .only
        .iter()
        .filter(|o| !o.trim().is_empty())
        .cloned()
        .collect();
    if let Some(d) = &args.schemas {
        c.schemas_dir = Some(d.clone());
    }
    c.request_timeout = args.timeout;
    c.progress = !args.quiet;
    c.upstream = args.upstream.clone();
    Ok(c)
}

#[cfg(feature = "conformance")]
/// Runs `conformance`: the report on stdout (matrix, or JSON with `--json`),
/// JUnit and a baseline to files when asked. Returns the exit status.
pub(super) async fn conformance(
    args: ConformanceArgs,
) -> Result<ExitCode, taskwire_conformance::Error> {
    let config = conformance_config(&args)?;
    let report = taskwire_conformance::run(&config).await?;
    let write = |path: &PathBuf, text: String| {
        std::fs::write(path, text).map_err(|e| taskwire_conformance::Error::Io {
            path: path.display().to_string(),
            source: e,
        })
    };
    if let Some(p) = &args.junit {
        write(p, report.render_junit(&config.baseline))?;
    }
    if let Some(p) = &args.write_baseline {
        let b = taskwire_conformance::Baseline::from_cells(&report.cells);
        write(p, serde_json::to_string_pretty(&b)? + "\n")?;
    }
    let out = if args.json {
        report.render_json()? + "\n"
    } else {
        report.render_text(&config.baseline)
    };
    let mut stdout = std::io::stdout().lock();
    // Best effort: a closed stdout must not change the verdict.
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(if report.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
