//! The `taskwire` command line: argument parsing and the `serve` command, built on
//! [`Server`] like any other embedding program.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use taskwire_core::agent::DenyPhrases;
use taskwire_core::{
    Agent, Limits, MemoryStore, RuntimeConfig, ScriptedAgent, TaskDefaults, TaskStore,
};
use tracing::info;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::EnvFilter;

use crate::auth::AuthConfig;
use crate::error::Error;
use crate::server::{check_listen_policy, Server};

/// Exit status after a second SIGTERM/Ctrl-C cut the drain short.
pub const FORCED_EXIT_CODE: i32 = 130;

/// The agents this binary can run, for `--agent`.
#[cfg(all(feature = "a2a", feature = "mcp"))]
pub const AGENTS: &str = "scripted, tck, mcp-conformance";
/// The agents this binary can run, for `--agent`.
#[cfg(all(feature = "a2a", not(feature = "mcp")))]
pub const AGENTS: &str = "scripted, tck";
/// The agents this binary can run, for `--agent`.
#[cfg(all(not(feature = "a2a"), feature = "mcp"))]
pub const AGENTS: &str = "scripted, mcp-conformance";
/// The agents this binary can run, for `--agent`.
#[cfg(not(any(feature = "a2a", feature = "mcp")))]
pub const AGENTS: &str = "scripted";

#[cfg(all(feature = "sqlite", feature = "postgres"))]
const STORE_SCHEMES: &str =
    "sqlite://PATH[?synchronous=full|normal], postgres://USER@HOST[:PORT]/DATABASE or memory://";
#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
const STORE_SCHEMES: &str =
    "sqlite://PATH[?synchronous=full|normal] or memory:// (this build has no PostgreSQL support)";
#[cfg(all(not(feature = "sqlite"), feature = "postgres"))]
const STORE_SCHEMES: &str =
    "postgres://USER@HOST[:PORT]/DATABASE or memory:// (this build has no SQLite support)";
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
const STORE_SCHEMES: &str = "memory:// (this build has no SQLite or PostgreSQL support)";

/// taskwire: one agent task, every agent protocol. Serves an agent's tasks and
/// (as adapters are compiled in) exposes them over each protocol on one listener.
#[derive(Debug, Parser)]
#[command(name = "taskwire", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing would only move the bytes"
)]
pub enum Command {
    /// Serve an agent's tasks over HTTP (health, readiness, metrics and every
    /// adapter compiled in) until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
    /// Run the conformance suite against a server: the same task lifecycle
    /// through every protocol it offers and across them (docs/conformance.md).
    /// Exit status 0 when every failure is in the baseline and no baseline
    /// entry passes, 1 otherwise, 2 when the suite could not run (including a
    /// target that offers none of the selected protocols).
    #[cfg(feature = "conformance")]
    Conformance(ConformanceArgs),
}

#[cfg(feature = "conformance")]
/// Arguments of `taskwire conformance`. Every flag can also be set through the
/// environment variable named in its help.
#[derive(Clone, Debug, Args)]
pub struct ConformanceArgs {
    /// Base url of the server under test (for example http://127.0.0.1:7420).
    /// The suite discovers the rest: the A2A agent card (JSON-RPC url, gRPC
    /// host:port), MCP server/discover at /mcp (and initialize with 2025-11-25
    /// for mcp-2025), AG-UI at /agui, CAS at /cas.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_TARGET", value_name = "URL")]
    pub target: String,

    /// Protocols to run, comma-separated: a2a, grpc, a2a-rest, mcp, mcp-2025, agui, cas (or all).
    #[arg(
        long,
        env = "TASKWIRE_CONFORMANCE_PROTOCOLS",
        value_name = "LIST",
        default_value = "all"
    )]
    pub protocols: String,

    /// Bearer token of the caller the suite acts as.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_TOKEN", value_name = "TOKEN")]
    pub token: Option<String>,

    /// Bearer token of a second principal, for the "another caller's task"
    /// scenario (skipped without it).
    #[arg(long, env = "TASKWIRE_CONFORMANCE_TOKEN2", value_name = "TOKEN")]
    pub token2: Option<String>,

    /// Write the results as JUnit XML to this file.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_JUNIT", value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Known failures: a JSON list of {"scenario", "protocol", "reason"}. Listed
    /// failures do not fail the run; a listed cell that passes does (stale).
    #[arg(long, env = "TASKWIRE_CONFORMANCE_BASELINE", value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Print the report as JSON on stdout instead of the matrix.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_JSON")]
    pub json: bool,

    /// Write a baseline listing this run's failures to FILE (to start one).
    #[arg(long, env = "TASKWIRE_CONFORMANCE_WRITE_BASELINE", value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,

    /// Read the scenarios from this directory instead of the built-in ones
    /// (conformance/scenarios/*.toml).
    #[arg(long, env = "TASKWIRE_CONFORMANCE_SCENARIOS", value_name = "DIR")]
    pub scenarios: Option<PathBuf>,

    /// Run only the scenario of this name (a file name under
    /// conformance/scenarios without .toml); repeat or comma-separate for several.
    #[arg(
        long = "only",
        env = "TASKWIRE_CONFORMANCE_ONLY",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub only: Vec<String>,

    /// A directory of JSON Schemas (schemas/index.json inside) to validate every
    /// received message against. Default: the schemas compiled into this build.
    #[arg(long, env = "TASKWIRE_SCHEMAS_DIR", value_name = "DIR")]
    pub schemas: Option<PathBuf>,

    /// Time limit of one request.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration)]
    pub timeout: Duration,

    /// Do not print progress lines on stderr.
    #[arg(long, env = "TASKWIRE_CONFORMANCE_QUIET")]
    pub quiet: bool,

    /// The target is a bridge (`taskwire serve --upstream`) to an upstream of
    /// this protocol: a2a (JSON-RPC or gRPC), mcp or agui. Scenarios that
    /// protocol cannot carry are skipped, naming the loss (docs/bridging.md).
    #[arg(long, env = "TASKWIRE_CONFORMANCE_UPSTREAM", value_name = "PROTOCOL", value_parser = ["a2a", "mcp", "agui"])]
    pub upstream: Option<String>,
}

#[cfg(feature = "conformance")]
/// The suite's configuration for these arguments.
pub fn conformance_config(
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
pub async fn conformance(args: ConformanceArgs) -> Result<ExitCode, taskwire_conformance::Error> {
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

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// How long terminal tasks are kept: a duration, or `never` to keep them forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttl(pub Option<Duration>);

/// Arguments of `taskwire serve`. Every flag can also be set through the
/// environment variable named in its help.
#[derive(Clone, Debug, Args)]
#[allow(
    rustdoc::bare_urls,
    rustdoc::invalid_html_tags,
    reason = "the field docs are the --help text, where markdown would show"
)]
pub struct ServeArgs {
    /// Address to listen on (host:port; port 0 picks a free port). Without
    /// --auth-tokens only loopback addresses are allowed.
    #[arg(
        long,
        env = "TASKWIRE_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:7420"
    )]
    pub listen: SocketAddr,

    /// Where tasks are stored: sqlite://PATH (optionally ?synchronous=full|normal);
    /// postgres://USER@HOST:PORT/DATABASE (or postgresql://…), a PostgreSQL
    /// database that several taskwire nodes may share (see --pg-pool-size,
    /// --pg-statement-timeout); or memory:// (nothing survives a restart).
    #[arg(
        long,
        env = "TASKWIRE_STORE",
        value_name = "URL",
        default_value = "sqlite://taskwire.db"
    )]
    pub store: String,

    /// The agent that runs tasks. `scripted` is the built-in reference agent driven
    /// by directives (ask, auth, review, fail, reject, crash, sleep, stream, steps,
    /// message; anything else is echoed); `tck` maps the a2a-tck messageId
    /// prefixes onto those behaviours; `mcp-conformance` offers the tools the
    /// official MCP conformance suite calls (docs/mcp.md).
    #[arg(
        long,
        env = "TASKWIRE_AGENT",
        value_name = "NAME",
        default_value = "scripted"
    )]
    pub agent: String,

    /// Bridge mode (`--upstream`, `--upstream-token`); boxed, so that
    /// `Command`'s variants stay close in size.
    #[command(flatten)]
    pub upstream: Box<UpstreamArgs>,

    /// Bearer token file: one `TOKEN PRINCIPAL [TENANT]` per line, `#` comments,
    /// tenant `default` when omitted. Without it every caller is one local principal.
    #[arg(long, env = "TASKWIRE_AUTH_TOKENS", value_name = "FILE")]
    pub auth_tokens: Option<PathBuf>,

    /// Allow listening on a non-loopback address without --auth-tokens (every
    /// caller who can reach the port acts as the local principal).
    #[arg(long, env = "TASKWIRE_INSECURE_NO_AUTH")]
    pub insecure_no_auth: bool,

    /// Log format. The level is filtered by RUST_LOG (tracing EnvFilter syntax,
    /// default `info`).
    #[arg(long, env = "TASKWIRE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// On SIGTERM or Ctrl-C, how long turns in flight may run on before they are
    /// aborted and their leases released (e.g. 10s, 500ms, 1m).
    #[arg(long, env = "TASKWIRE_DRAIN_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// Most agent turns running at once. 0 runs no turns on this node: it serves
    /// the protocols, and other nodes sharing its PostgreSQL store run the turns.
    #[arg(long, env = "TASKWIRE_MAX_CONCURRENT_TURNS", value_name = "N", default_value_t = 256, value_parser = parse_usize)]
    pub max_concurrent_turns: usize,

    /// Lease of a running turn on its task; renewed every third of it. A turn whose
    /// worker dies is re-run once its lease lapses.
    #[arg(long, env = "TASKWIRE_LEASE", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration)]
    pub lease: Duration,

    /// How long terminal tasks and their event logs are kept, or `never`. The
    /// sweeper runs every quarter of it (at least every 1 s, at most every 60 s)
    /// and deletes in batches until nothing expired is left.
    #[arg(long, env = "TASKWIRE_TASK_TTL", value_name = "DURATION|never", default_value = "7d", value_parser = parse_ttl)]
    pub task_ttl: Ttl,

    /// Inactivity lifespan: a task waiting for input, an authorisation or a review
    /// for longer than this is canceled. Unset: tasks wait forever. The sweeper
    /// then runs every quarter of it (at least every 1 s, at most every 60 s), so
    /// a task is canceled at most that much after its lifespan ends.
    #[arg(long, env = "TASKWIRE_IDLE_LIFESPAN", value_name = "DURATION", value_parser = parse_positive_duration)]
    pub idle_lifespan: Option<Duration>,

    /// Largest accepted message, all parts and metadata together, in bytes.
    #[arg(long, env = "TASKWIRE_MAX_MESSAGE_BYTES", value_name = "BYTES", default_value_t = 1024 * 1024, value_parser = parse_positive_usize)]
    pub max_message_bytes: usize,

    /// Refuse input containing this phrase (case-insensitive); repeat for several.
    /// The environment variable takes a comma-separated list.
    #[arg(
        long = "deny-phrase",
        env = "TASKWIRE_DENY_PHRASES",
        value_name = "PHRASE",
        value_delimiter = ','
    )]
    pub deny_phrases: Vec<String>,

    /// Public base url of this server (for example https://agents.example.com),
    /// used for the urls on the A2A agent card. Default: http://<listen address>.
    #[arg(long, env = "TASKWIRE_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,

    /// Allow A2A push notification urls that resolve to loopback, private or
    /// link-local addresses (for local receivers and tests).
    #[arg(long, env = "TASKWIRE_PUSH_ALLOW_PRIVATE")]
    pub push_allow_private: bool,

    /// A PEM file of certificates (a private CA) trusted for `https` A2A push
    /// notification urls besides the built-in Mozilla roots and the system's;
    /// repeatable. Read at start.
    #[arg(
        long = "push-ca-file",
        env = "TASKWIRE_PUSH_CA_FILE",
        value_name = "FILE"
    )]
    pub push_ca_file: Vec<std::path::PathBuf>,

    /// A PEM file with the certificate chain (leaf first) presented to
    /// `https` A2A push receivers that ask for a client certificate (mutual
    /// TLS); with `--push-client-key`. Read at start.
    #[arg(
        long = "push-client-cert",
        env = "TASKWIRE_PUSH_CLIENT_CERT",
        value_name = "FILE",
        requires = "push_client_key"
    )]
    pub push_client_cert: Option<std::path::PathBuf>,

    /// The PEM file of the private key of `--push-client-cert`.
    #[arg(
        long = "push-client-key",
        env = "TASKWIRE_PUSH_CLIENT_KEY",
        value_name = "FILE",
        requires = "push_client_cert"
    )]
    pub push_client_key: Option<std::path::PathBuf>,

    /// MCP: when a `tools/call` from a client with the tasks extension becomes a
    /// task: `always`, or a number of milliseconds to wait for the result first.
    #[arg(long, env = "TASKWIRE_MCP_TASK_MODE", value_name = "always|MS", value_parser = parse_mcp_task_mode)]
    pub mcp_task_mode: Option<String>,

    /// Listener limits (docs/operations.md, "Limits").
    #[command(flatten)]
    pub listener: ListenerArgs,

    /// Per-principal quotas (docs/operations.md, "Quotas").
    #[command(flatten)]
    pub quotas: QuotaArgs,

    /// The PostgreSQL store's connections (with --store postgres://…); boxed,
    /// so that `Command`'s variants stay close in size.
    #[command(flatten)]
    pub pg: Box<PgArgs>,
}

/// Bridge mode's flags: which upstream agent to serve, and how to reach it.
#[derive(Clone, Debug, Default, Args)]
pub struct UpstreamArgs {
    /// Bridge mode: serve the remote agent at URL instead of --agent, on every
    /// protocol this server speaks. `a2a+http://HOST:PORT[/PATH]` (or
    /// `a2a+https://…`) is an A2A agent over JSON-RPC, discovered at start from
    /// `http://HOST:PORT[/PATH]/.well-known/agent-card.json` (its skills become
    /// this server's); `a2a+grpc://HOST:PORT` is an A2A agent over gRPC (h2c;
    /// `a2a+grpcs://` over TLS);
    /// `mcp+http(s)://HOST:PORT/PATH[#TOOL]` is an MCP server (revision
    /// 2026-07-28, or 2025-11-25 when it refuses `server/discover`) whose tools
    /// (or its one TOOL) become this server's skills;
    /// `agui+http(s)://HOST:PORT/PATH` is an AG-UI agent's run endpoint
    /// (docs/bridging.md).
    /// Repeat as `--upstream NAME=URL` to serve several upstreams, each as one
    /// skill NAME (an MCP caller calls the tool NAME; an A2A caller sends
    /// `"metadata": {"skill": "NAME"}`).
    #[arg(
        id = "upstream",
        long = "upstream",
        env = "TASKWIRE_UPSTREAM",
        value_name = "[NAME=]URL",
        conflicts_with = "agent"
    )]
    pub url: Vec<String>,

    /// Bridge mode: bearer token sent to every upstream as `Authorization:
    /// Bearer TOKEN` (needs --upstream; an --upstream-token-file of an upstream
    /// overrides it).
    #[arg(
        long = "upstream-token",
        env = "TASKWIRE_UPSTREAM_TOKEN",
        value_name = "TOKEN",
        requires = "upstream",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Bridge mode: a file whose content (trimmed) is the bearer token of the
    /// upstream NAME, or of every upstream without NAME=; repeatable. Read at
    /// start; keeps the token out of the process list.
    #[arg(
        long = "upstream-token-file",
        env = "TASKWIRE_UPSTREAM_TOKEN_FILE",
        value_name = "[NAME=]FILE",
        requires = "upstream"
    )]
    pub token_file: Vec<String>,

    /// Bridge mode: the MCP protocol revision spoken to MCP upstreams:
    /// `auto` (the default: 2026-07-28 when the server answers
    /// `server/discover`, else 2025-11-25 when it answers `initialize`),
    /// `2025-11-25` (always `initialize`, a session and the experimental task
    /// methods, even with a server that speaks 2026-07-28) or `2026-07-28`
    /// (never 2025-11-25).
    #[arg(
        long = "upstream-mcp-version",
        env = "TASKWIRE_UPSTREAM_MCP_VERSION",
        value_name = "VERSION",
        value_parser = ["auto", "2025-11-25", "2026-07-28"],
        requires = "upstream"
    )]
    pub mcp_version: Option<String>,

    /// Bridge mode: the largest upstream response body or stream event, and
    /// the largest text an AG-UI upstream may stream in chunks (its open
    /// messages together), in bytes; beyond it the bridged turn fails, naming
    /// the limit.
    #[arg(
        id = "upstream_max_message_bytes",
        long = "upstream-max-message-bytes",
        env = "TASKWIRE_UPSTREAM_MAX_MESSAGE_BYTES",
        value_name = "BYTES",
        default_value_t = 4 * 1024 * 1024,
        value_parser = clap::value_parser!(u32).range(1024..)
    )]
    pub max_message_bytes: u32,

    /// Bridge mode, MCP 2025-11-25 upstreams: the most open upstream calls
    /// (blocking calls and `tasks/result` streams held while their downstream
    /// task waits for an answer) this process keeps; past it one is dropped,
    /// and its task fails or polls on its next turn.
    #[arg(
        long = "upstream-max-open-calls",
        env = "TASKWIRE_UPSTREAM_MAX_OPEN_CALLS",
        value_name = "N",
        default_value_t = 256,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_open_calls: u32,

    /// Bridge mode, MCP 2025-11-25 upstreams: the most open upstream calls of
    /// one principal (the downstream task's tenant and owner); past it that
    /// principal's oldest is dropped, and when --upstream-max-open-calls are
    /// held, the oldest of the principal holding the most.
    #[arg(
        long = "upstream-max-open-calls-per-principal",
        env = "TASKWIRE_UPSTREAM_MAX_OPEN_CALLS_PER_PRINCIPAL",
        value_name = "N",
        default_value_t = 32,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_open_calls_per_principal: u32,

    /// Bridge mode, AG-UI upstreams: the most text messages a run may stream
    /// at once (started and not yet ended); past it the bridged turn fails.
    #[arg(
        long = "upstream-max-open-messages",
        env = "TASKWIRE_UPSTREAM_MAX_OPEN_MESSAGES",
        value_name = "N",
        default_value_t = 64,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_open_messages: u32,

    /// Bridge mode, MCP upstreams: the most `tools/list` pages read at
    /// discovery; an upstream that pages on fails discovery.
    #[arg(
        long = "upstream-max-list-pages",
        env = "TASKWIRE_UPSTREAM_MAX_LIST_PAGES",
        value_name = "N",
        default_value_t = 100,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_list_pages: u32,

    /// Bridge mode: the most `upstream_link` records (of bridged tasks that
    /// wait for input, or whose turn runs long) each upstream's cancel
    /// watcher keeps; past it no record is stored, and a cancel made while no
    /// bridge runs does not reach those upstream tasks.
    #[arg(
        long = "upstream-max-link-records",
        env = "TASKWIRE_UPSTREAM_MAX_LINK_RECORDS",
        value_name = "N",
        default_value_t = 100_000,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_link_records: u32,

    /// Bridge mode: the most `upstream_link` records each upstream's cancel
    /// watcher reads at start, to cancel the upstream tasks of bridged tasks
    /// canceled while no bridge ran; the rest wait for the next start.
    #[arg(
        long = "upstream-catch-up-records",
        env = "TASKWIRE_UPSTREAM_CATCH_UP_RECORDS",
        value_name = "N",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub catch_up_records: u32,

    /// Bridge mode: a PEM file of certificates (a private CA) trusted for
    /// `https://` and `a2a+grpcs://` upstreams besides the built-in Mozilla
    /// roots and the system's; repeatable. Read at start.
    #[arg(
        long = "upstream-ca-file",
        env = "TASKWIRE_UPSTREAM_CA_FILE",
        value_name = "FILE",
        requires = "upstream"
    )]
    pub ca_file: Vec<std::path::PathBuf>,

    /// Bridge mode: a PEM file with the certificate chain (leaf first)
    /// presented to `https://` and `a2a+grpcs://` upstreams that ask for a
    /// client certificate (mutual TLS); with `--upstream-client-key`. Read
    /// at start.
    #[arg(
        long = "upstream-client-cert",
        env = "TASKWIRE_UPSTREAM_CLIENT_CERT",
        value_name = "FILE",
        requires_all = ["upstream", "client_key"]
    )]
    pub client_cert: Option<std::path::PathBuf>,

    /// Bridge mode: the PEM file of the private key of
    /// `--upstream-client-cert`.
    #[arg(
        long = "upstream-client-key",
        env = "TASKWIRE_UPSTREAM_CLIENT_KEY",
        value_name = "FILE",
        requires = "client_cert"
    )]
    pub client_key: Option<std::path::PathBuf>,
}

/// Most `--upstream` one server takes (the bridge's own limit,
/// `taskwire_bridge::many::MAX_UPSTREAMS`).
pub const MAX_UPSTREAMS: usize = 32;

/// `NAME=REST` when the part before the first `=` names an upstream (letters,
/// digits, `_` and `-` only, so a URL, whose scheme has `:`, never does).
pub fn split_named(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            (Some(name), rest)
        }
        _ => (None, arg),
    }
}

/// How the PostgreSQL store connects, as flags; ignored by the other stores.
#[derive(Clone, Debug, Args)]
pub struct PgArgs {
    /// Connections in this node's pool to the PostgreSQL store (one more is kept
    /// for LISTEN). Every request holds one for the length of one statement.
    #[arg(long, env = "TASKWIRE_PG_POOL_SIZE", value_name = "N", default_value_t = 16, value_parser = parse_positive_usize)]
    pub pg_pool_size: usize,

    /// `statement_timeout` of the PostgreSQL store's connections: a statement
    /// running longer is cancelled by the server and the request fails. 0 keeps
    /// the server's setting.
    #[arg(long, env = "TASKWIRE_PG_STATEMENT_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub pg_statement_timeout: Duration,

    /// Group commit: the most creates and commits this node sends to PostgreSQL
    /// as one batch (one round trip, one transaction).
    #[arg(long, env = "TASKWIRE_PG_MAX_BATCH", value_name = "N", default_value_t = 256, value_parser = parse_positive_usize)]
    pub pg_max_batch: usize,

    /// Group commit: the most write batches in flight at once. Writes that come
    /// while they are wait and form the next batch, so fewer batches in flight
    /// make larger batches (less database work per write, a little more latency).
    #[arg(long, env = "TASKWIRE_PG_WRITE_BATCHES", value_name = "N", default_value_t = 2, value_parser = parse_positive_usize)]
    pub pg_write_batches: usize,

    /// The bound of every call to PostgreSQL (waiting for a pooled connection
    /// included): a call with no answer by then fails, and the request that
    /// made it is answered "unavailable" (retrying it is safe), instead of
    /// waiting for a database that is cut off. Keep it below the listener's
    /// timeouts (--send-timeout, --header-read-timeout: 30s), the clients'
    /// timeouts and two thirds of --lease.
    #[arg(long, env = "TASKWIRE_PG_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub pg_timeout: Duration,
}

impl Default for PgArgs {
    fn default() -> Self {
        Self {
            pg_pool_size: 16,
            pg_statement_timeout: Duration::from_secs(30),
            pg_max_batch: 256,
            pg_write_batches: 2,
            pg_timeout: Duration::from_secs(10),
        }
    }
}

/// What one caller (tenant and principal) may hold at once, as flags.
#[derive(Clone, Debug, Args)]
pub struct QuotaArgs {
    /// Most A2A push notification configs one caller may hold on tasks that are
    /// not terminal; one more is refused (JSON-RPC -32602, gRPC INVALID_ARGUMENT).
    #[arg(long, env = "TASKWIRE_MAX_PUSH_CONFIGS_PER_PRINCIPAL", value_name = "N", default_value_t = 1000, value_parser = parse_positive_usize)]
    pub max_push_configs_per_principal: usize,

    /// Most MCP 2025-11-25 sessions one caller may hold open (not yet expired);
    /// one more `initialize` is refused until one ends or expires.
    #[arg(long, env = "TASKWIRE_MAX_SESSIONS_PER_PRINCIPAL", value_name = "N", default_value_t = 100, value_parser = parse_positive_usize)]
    pub max_sessions_per_principal: usize,

    /// Most AG-UI runs one caller may have open (on tasks that are not terminal);
    /// one more is answered with RUN_ERROR.
    #[arg(long, env = "TASKWIRE_MAX_RUNS_PER_PRINCIPAL", value_name = "N", default_value_t = 1000, value_parser = parse_positive_usize)]
    pub max_runs_per_principal: usize,

    /// Most event streams one caller may hold open at once in this process: A2A
    /// streams and subscriptions (every binding), MCP SSE answers and
    /// subscriptions, AG-UI runs, CAS SSE streams and long polls; one more is
    /// refused as over a limit in the protocol's own shape.
    #[arg(long, env = "TASKWIRE_MAX_STREAMS_PER_PRINCIPAL", value_name = "N", default_value_t = 100, value_parser = parse_positive_usize)]
    pub max_streams_per_principal: usize,
}

impl QuotaArgs {
    /// The quotas these flags set.
    pub fn quotas(&self) -> crate::adapters::Quotas {
        crate::adapters::Quotas {
            push_configs: self.max_push_configs_per_principal,
            mcp_sessions: self.max_sessions_per_principal,
            agui_runs: self.max_runs_per_principal,
        }
    }
}

/// The listener's limits as flags: every resource a client can hold before it is
/// authenticated is bounded (see [`crate::ListenerConfig`]).
#[derive(Clone, Debug, Args)]
pub struct ListenerArgs {
    /// Most connections open at once; beyond it the listener stops accepting until
    /// one closes. Lowered, with a warning, if the open-files limit is smaller.
    #[arg(long, env = "TASKWIRE_MAX_CONNECTIONS", value_name = "N", default_value_t = 4096, value_parser = parse_positive_usize, help_heading = "Listener limits")]
    pub max_connections: usize,

    /// How long a new connection may take to send its first complete request.
    #[arg(long, env = "TASKWIRE_HANDSHAKE_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub handshake_timeout: Duration,

    /// How long an HTTP/1.1 request head may take to arrive once the server waits
    /// for one (this also ends keep-alive connections idle for longer).
    #[arg(long, env = "TASKWIRE_HEADER_READ_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub header_read_timeout: Duration,

    /// A connection with no request in flight for this long is closed.
    #[arg(long, env = "TASKWIRE_IDLE_TIMEOUT", value_name = "DURATION", default_value = "60s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub idle_timeout: Duration,

    /// HTTP/2: send a keep-alive PING after this long without a frame from the
    /// peer (`off` for none).
    #[arg(long, env = "TASKWIRE_HTTP2_KEEPALIVE_INTERVAL", value_name = "DURATION|off", default_value = "30s", value_parser = parse_optional_duration, help_heading = "Listener limits")]
    pub http2_keepalive_interval: OptionalDuration,

    /// HTTP/2: close the connection if a keep-alive PING is not answered within this.
    #[arg(long, env = "TASKWIRE_HTTP2_KEEPALIVE_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub http2_keepalive_timeout: Duration,

    /// HTTP/2: most concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, env = "TASKWIRE_HTTP2_MAX_CONCURRENT_STREAMS", value_name = "N", default_value_t = 200, value_parser = parse_positive_u32, help_heading = "Listener limits")]
    pub http2_max_concurrent_streams: u32,

    /// Largest request head in bytes: the decoded HTTP/2 header list
    /// (SETTINGS_MAX_HEADER_LIST_SIZE) and the HTTP/1.1 head (at least 8192 there).
    #[arg(long, env = "TASKWIRE_MAX_HEADER_BYTES", value_name = "BYTES", default_value_t = 32 * 1024, value_parser = parse_positive_usize, help_heading = "Listener limits")]
    pub max_header_bytes: usize,

    /// HTTP/2: streams a client may open and reset before the server accepts them
    /// (Rapid Reset, CVE-2023-44487); more is GOAWAY ENHANCE_YOUR_CALM.
    #[arg(long, env = "TASKWIRE_HTTP2_MAX_PENDING_RESET_STREAMS", value_name = "N", default_value_t = 20, value_parser = parse_positive_usize, help_heading = "Listener limits")]
    pub http2_max_pending_reset_streams: usize,

    /// HTTP/2: streams the server may reset for a client's protocol errors (the
    /// server-provoked Rapid Reset); more is GOAWAY ENHANCE_YOUR_CALM.
    #[arg(long, env = "TASKWIRE_HTTP2_MAX_LOCAL_RESET_STREAMS", value_name = "N", default_value_t = 200, value_parser = parse_positive_usize, help_heading = "Listener limits")]
    pub http2_max_local_reset_streams: usize,

    /// HTTP/2: bytes of a response buffered per stream for a peer whose window is
    /// closed.
    #[arg(long, env = "TASKWIRE_HTTP2_MAX_SEND_BUFFER", value_name = "BYTES", default_value_t = 256 * 1024, value_parser = parse_positive_usize, help_heading = "Listener limits")]
    pub http2_max_send_buffer: usize,

    /// A request body that delivers nothing for this long is abandoned.
    #[arg(long, env = "TASKWIRE_BODY_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub body_timeout: Duration,

    /// A connection whose writes make no progress for this long (the peer does
    /// not read) is closed.
    #[arg(long, env = "TASKWIRE_SEND_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration, help_heading = "Listener limits")]
    pub send_timeout: Duration,

    /// HTTP/2: PING and SETTINGS frames a client may send per second on average
    /// (bursts of twice as many); a client over it is disconnected.
    #[arg(long, env = "TASKWIRE_HTTP2_MAX_CONTROL_FRAMES", value_name = "N", default_value_t = 100, value_parser = parse_positive_u32, help_heading = "Listener limits")]
    pub http2_max_control_frames: u32,
}

impl ListenerArgs {
    /// The listener configuration these flags describe.
    pub fn config(&self) -> crate::ListenerConfig {
        crate::ListenerConfig {
            max_connections: self.max_connections,
            handshake_timeout: self.handshake_timeout,
            header_read_timeout: self.header_read_timeout,
            idle_timeout: self.idle_timeout,
            http2_keepalive_interval: self.http2_keepalive_interval.0,
            http2_keepalive_timeout: self.http2_keepalive_timeout,
            http2_max_concurrent_streams: self.http2_max_concurrent_streams,
            max_header_bytes: self.max_header_bytes,
            http2_max_pending_reset_streams: self.http2_max_pending_reset_streams,
            http2_max_local_reset_streams: self.http2_max_local_reset_streams,
            http2_max_send_buffer: self.http2_max_send_buffer,
            body_timeout: self.body_timeout,
            send_timeout: self.send_timeout,
            http2_max_control_frames: self.http2_max_control_frames,
        }
    }
}

/// A duration, or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalDuration(pub Option<Duration>);

fn parse_optional_duration(s: &str) -> Result<OptionalDuration, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        Ok(OptionalDuration(None))
    } else {
        parse_positive_duration(s).map(|d| OptionalDuration(Some(d)))
    }
}

fn parse_positive_u32(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (expected a whole number up to 4294967295)")),
    }
}

fn parse_public_url(s: &str) -> Result<String, String> {
    let s = s.trim();
    if (s.starts_with("http://") || s.starts_with("https://")) && s.len() > "https://".len() {
        Ok(s.trim_end_matches('/').to_string())
    } else {
        Err("expected an http:// or https:// url".into())
    }
}

fn parse_mcp_task_mode(s: &str) -> Result<String, String> {
    let s = s.trim();
    let ok = s == "always" || s.strip_prefix("after:").unwrap_or(s).parse::<u64>().is_ok();
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected `always` or a number of milliseconds".into())
    }
}

/// Parses a duration such as `10s`, `500ms`, `1m 30s` or `7d`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e} (expected a duration such as 10s, 500ms, 1m or 7d)"))
}

/// How often the sweeper runs: every 60 s, or every quarter of the shorter of the
/// task TTL and the inactivity lifespan when one is set (between 1 s and 60 s), so
/// that `--idle-lifespan 2s` cancels a task within about 3 s rather than a minute
/// and `--task-ttl 10s` keeps the store near ten seconds' worth of tasks. Each
/// pass deletes in batches until nothing expired is left.
fn sweep_interval(ttl: Option<Duration>, idle_lifespan: Option<Duration>) -> Duration {
    let default = RuntimeConfig::default().sweep_interval;
    let shortest = match (ttl, idle_lifespan) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    shortest.map_or(default, |d| {
        (d / 4).clamp(Duration::from_secs(1), default.max(Duration::from_secs(1)))
    })
}

fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        Err("must be longer than zero".into())
    } else {
        Ok(d)
    }
}

fn parse_ttl(s: &str) -> Result<Ttl, String> {
    if s.trim().eq_ignore_ascii_case("never") {
        Ok(Ttl(None))
    } else {
        parse_positive_duration(s).map(|d| Ttl(Some(d)))
    }
}

fn parse_usize(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|e| format!("{e} (expected a whole number)"))
}

fn parse_positive_usize(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (expected a whole number)")),
    }
}

/// The agent named by `--agent`.
pub fn agent_by_name(name: &str) -> Result<Arc<dyn Agent>, Error> {
    match name {
        "scripted" => Ok(Arc::new(ScriptedAgent::new())),
        #[cfg(feature = "a2a")]
        "tck" => Ok(Arc::new(taskwire_a2a::tck::TckAgent::new())),
        #[cfg(feature = "mcp")]
        "mcp-conformance" => Ok(Arc::new(taskwire_mcp::fixture::McpConformanceAgent::new())),
        other => Err(Error::UnknownAgent {
            name: other.to_string(),
            available: AGENTS,
        }),
    }
}

/// One upstream of `--upstream`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamEntry {
    /// Its `NAME=` (several upstreams), or none (one).
    pub name: Option<String>,
    /// Its URL.
    pub url: String,
    /// Its bearer token (`--upstream-token`, or its `--upstream-token-file`).
    pub token: Option<String>,
}

/// The upstreams of `--upstream`, checked: one unnamed upstream, or several
/// with distinct names; token files name upstreams that exist, are readable
/// and not empty.
pub fn upstreams_of(args: &UpstreamArgs) -> Result<Vec<UpstreamEntry>, Error> {
    let list: Vec<(Option<String>, String)> = args
        .url
        .iter()
        .map(|a| {
            let (n, u) = split_named(a);
            (n.map(str::to_string), u.trim().to_string())
        })
        .collect();
    if list.len() > MAX_UPSTREAMS {
        return Err(Error::Usage(format!(
            "{} --upstream: a bridge serves at most {MAX_UPSTREAMS}",
            list.len()
        )));
    }
    if list.len() > 1 {
        for (i, (n, u)) in list.iter().enumerate() {
            let Some(n) = n else {
                return Err(Error::Usage(format!(
                    "several --upstream need a name each (--upstream NAME=URL); {u} has none"
                )));
            };
            if list[..i]
                .iter()
                .any(|(o, _)| o.as_deref() == Some(n.as_str()))
            {
                return Err(Error::Usage(format!("two --upstream are named {n}")));
            }
        }
    }
    let mut tokens: Vec<Option<String>> = vec![args.token.clone(); list.len()];
    for f in &args.token_file {
        let (name, path) = split_named(f);
        let token = std::fs::read_to_string(path)
            .map_err(|e| Error::Usage(format!("--upstream-token-file {path}: {e}")))?
            .trim()
            .to_string();
        if token.is_empty() {
            return Err(Error::Usage(format!(
                "--upstream-token-file {path} is empty"
            )));
        }
        match name {
            None => tokens.iter_mut().for_each(|t| *t = Some(token.clone())),
            Some(n) => match list.iter().position(|(o, _)| o.as_deref() == Some(n)) {
                Some(i) => tokens[i] = Some(token),
                None => {
                    return Err(Error::Usage(format!(
                        "--upstream-token-file names {n}, which no --upstream NAME=URL names"
                    )))
                }
            },
        }
    }
    Ok(list
        .into_iter()
        .zip(tokens)
        .map(|((name, url), token)| UpstreamEntry { name, url, token })
        .collect())
}

/// The bridge agent of `--upstream` (discovers the upstreams).
#[cfg(feature = "bridge")]
async fn upstream_agent(
    args: &ServeArgs,
    store: &Arc<dyn TaskStore>,
) -> Result<Arc<dyn Agent>, Error> {
    let list = upstreams_of(&args.upstream)?;
    let mcp: taskwire_bridge::McpVersion = args
        .upstream
        .mcp_version
        .as_deref()
        .unwrap_or("auto")
        .parse()
        .map_err(|e: taskwire_bridge::BridgeError| Error::Usage(e.to_string()))?;
    let max_message_bytes = usize::try_from(args.upstream.max_message_bytes).unwrap_or(usize::MAX);
    let root_certificates_pem = read_ca_files("--upstream-ca-file", &args.upstream.ca_file)?;
    let client_identity = read_identity(
        (
            "--upstream-client-cert",
            args.upstream.client_cert.as_deref(),
        ),
        ("--upstream-client-key", args.upstream.client_key.as_deref()),
    )?
    .map(|i| taskwire_bridge::ClientIdentityPem::new(i.chain, i.key));
    let options = |token: &Option<String>| taskwire_bridge::UpstreamOptions {
        bearer_token: token.clone(),
        max_message_bytes,
        root_certificates_pem: root_certificates_pem.clone(),
        client_identity: client_identity.clone(),
        max_open_calls: args.upstream.max_open_calls as usize,
        max_open_calls_per_principal: args.upstream.max_open_calls_per_principal as usize,
        max_open_messages: args.upstream.max_open_messages as usize,
        max_list_pages: args.upstream.max_list_pages as usize,
        max_link_records: args.upstream.max_link_records as usize,
        catch_up_records: args.upstream.catch_up_records as usize,
        ..taskwire_bridge::UpstreamOptions::default()
    };
    match list.as_slice() {
        [one] => {
            taskwire_bridge::connect_as(&one.url, &options(&one.token), mcp, Some(store.clone()))
                .await
                .map_err(|e| upstream_error(&one.url, &e))
        }
        _ => {
            let named: Vec<_> = list
                .iter()
                .map(|e| {
                    (
                        e.name.clone().unwrap_or_default(),
                        e.url.clone(),
                        options(&e.token),
                    )
                })
                .collect();
            let urls = list
                .iter()
                .map(|e| e.url.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            taskwire_bridge::connect_many_as(&named, mcp, Some(store.clone()))
                .await
                .map_err(|e| upstream_error(&urls, &e))
        }
    }
}

/// This build has no bridge: `--upstream` is refused.
#[cfg(not(feature = "bridge"))]
async fn upstream_agent(
    args: &ServeArgs,
    _store: &Arc<dyn TaskStore>,
) -> Result<Arc<dyn Agent>, Error> {
    Err(Error::Upstream {
        url: args.upstream.url.join(", "),
        reason: "this build has no bridge support (the `bridge` feature)".into(),
    })
}

#[cfg(feature = "bridge")]
fn upstream_error(url: &str, e: &taskwire_bridge::BridgeError) -> Error {
    Error::Upstream {
        url: url.to_string(),
        reason: e.to_string(),
    }
}

/// Whether the store at `url` can be shared by several nodes.
fn store_is_shared(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens the store named by `--store` (`pg` applies to a PostgreSQL store only).
pub async fn open_store(url: &str, pg: &PgArgs) -> Result<Arc<dyn TaskStore>, Error> {
    let scheme = url.split_once("://").map(|(s, _)| s);
    #[cfg(not(feature = "postgres"))]
    let _ = pg;
    match scheme {
        #[cfg(feature = "postgres")]
        Some("postgres" | "postgresql") => {
            let options = {
                let mut v = taskwire_store_postgres::PostgresOptions::default();
                v.pool_size = pg.pg_pool_size;
                v.statement_timeout =
                    (!pg.pg_statement_timeout.is_zero()).then_some(pg.pg_statement_timeout);
                v.max_batch = pg.pg_max_batch;
                v.write_batches = pg.pg_write_batches;
                v.timeout = pg.pg_timeout;
                v
            };
            taskwire_store_postgres::PostgresStore::open(url, options)
                .await
                .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
                .map_err(|e| Error::StoreOpen {
                    url: url.to_string(),
                    reason: e.to_string(),
                })
        }
        Some("memory") if url == "memory://" => Ok(Arc::new(MemoryStore::new())),
        #[cfg(feature = "sqlite")]
        Some("sqlite") => taskwire_store_sqlite::SqliteStore::open(url)
            .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
            .map_err(|e| Error::StoreOpen {
                url: url.to_string(),
                reason: e.to_string(),
            }),
        _ => Err(Error::UnknownStore {
            url: url.to_string(),
            expected: STORE_SCHEMES,
        }),
    }
}

/// Sets up logging to stderr: text or JSON, filtered by RUST_LOG (default `info`).
pub fn init_tracing(format: LogFormat) -> Result<(), Error> {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env()
        .map_err(|e| Error::Logging(format!("invalid RUST_LOG: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let res = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    res.map_err(|e| Error::Logging(e.to_string()))
}

/// The server `serve` would run with these arguments, bound but not running.
pub async fn build_server(args: &ServeArgs) -> Result<Server, Error> {
    let auth = match &args.auth_tokens {
        Some(path) => AuthConfig::token_file(path)?,
        None => AuthConfig::Local,
    };
    // Refuse before touching the store.
    check_listen_policy(args.listen, &auth, args.insecure_no_auth)?;
    if args.upstream.url.is_empty()
        && (args.upstream.token.is_some() || !args.upstream.token_file.is_empty())
    {
        return Err(Error::Usage(
            "--upstream-token and --upstream-token-file need --upstream".into(),
        ));
    }
    // Check the upstreams (names, token files, schemes) before touching the store.
    let upstreams = upstreams_of(&args.upstream)?;
    #[cfg(feature = "bridge")]
    for entry in &upstreams {
        let url = &entry.url;
        taskwire_bridge::UpstreamSpec::parse(url).map_err(|e| upstream_error(url, &e))?;
        if let Some(n) = &entry.name {
            if !taskwire_bridge::many::valid_name(n) {
                return Err(Error::Usage(format!(
                    "upstream name {n:?}: use 1 to 64 letters, digits, `_` or `-`"
                )));
            }
        }
    }
    let scripted = match upstreams.is_empty() {
        false => None,
        true => Some(agent_by_name(&args.agent)?),
    };
    if args.max_concurrent_turns == 0 && !store_is_shared(&args.store) {
        return Err(Error::Usage(
            "--max-concurrent-turns 0 runs no turns on this node, so it needs a store \
             that other nodes share (postgres://…); with this store no task would ever run"
                .into(),
        ));
    }
    let store = open_store(&args.store, &args.pg).await?;
    let agent = match scripted {
        Some(a) => a,
        None => upstream_agent(args, &store).await?,
    };
    let runtime_config = {
        let mut v = RuntimeConfig::default();
        v.max_concurrent_turns = args.max_concurrent_turns;
        v.lease = args.lease;
        v.sweep_interval = sweep_interval(args.task_ttl.0, args.idle_lifespan);
        v
    };
    let limits = {
        let mut v = Limits::default();
        v.max_message_bytes = args.max_message_bytes;
        v.max_streams_per_principal = args.quotas.max_streams_per_principal;
        v
    };
    let mut builder = Server::builder()
        .agent(agent)
        .store(store)
        .listen(args.listen)
        .auth(auth)
        .allow_unauthenticated_remote(args.insecure_no_auth)
        .runtime_config(runtime_config)
        .limits(limits)
        .task_defaults({
            let mut d = TaskDefaults::default();
            d.ttl = args.task_ttl.0;
            d.idle_lifespan = args.idle_lifespan;
            d
        })
        .drain_timeout(args.drain_timeout)
        .listener_config(args.listener.config());
    let phrases: Vec<&String> = args
        .deny_phrases
        .iter()
        .filter(|p| !p.trim().is_empty())
        .collect();
    if !phrases.is_empty() {
        builder = builder.guardrail(Arc::new(DenyPhrases::new(phrases)));
    }
    let opts = crate::adapters::AdapterOptions {
        public_url: args.public_url.clone(),
        push_allow_private: args.push_allow_private,
        push_root_certificates_pem: read_ca_files("--push-ca-file", &args.push_ca_file)?,
        push_client_identity_pem: read_identity(
            ("--push-client-cert", args.push_client_cert.as_deref()),
            ("--push-client-key", args.push_client_key.as_deref()),
        )?
        .map(|i| i.pem()),
        quotas: args.quotas.quotas(),
        mcp_task_mode: args.mcp_task_mode.clone(),
        push_lease: Some(args.lease),
    };
    for adapter in crate::adapters::all(&opts) {
        builder = builder.boxed_adapter(adapter);
    }
    builder.build().await
}

/// The contents of `f`, given with `flag`.
fn read_file(flag: &str, f: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(f).map_err(|e| Error::Usage(format!("{flag} {}: {e}", f.display())))
}

/// A client certificate as read from its files: the certificate chain (leaf
/// first) and the leaf's private key, PEM.
struct IdentityFiles {
    chain: Vec<u8>,
    key: Vec<u8>,
}

impl IdentityFiles {
    /// The key and the chain in one PEM buffer, as reqwest takes them.
    fn pem(&self) -> Vec<u8> {
        let mut pem = self.key.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&self.chain);
        pem
    }
}

/// A client certificate from a certificate chain file and a key file (both
/// PEM; none unless both are given), read once and checked with the parser
/// the clients use.
fn read_identity(
    cert: (&str, Option<&std::path::Path>),
    key: (&str, Option<&std::path::Path>),
) -> Result<Option<IdentityFiles>, Error> {
    let (Some(cert_file), Some(key_file)) = (cert.1, key.1) else {
        return Ok(None);
    };
    let files = IdentityFiles {
        key: read_file(key.0, key_file)?,
        chain: read_file(cert.0, cert_file)?,
    };
    reqwest::Identity::from_pem(&files.pem()).map_err(|e| {
        Error::Usage(format!(
            "{} {} with {} {}: {e}",
            cert.0,
            cert_file.display(),
            key.0,
            key_file.display()
        ))
    })?;
    Ok(Some(files))
}

/// The contents of the PEM files given with `flag`, each holding at least
/// one certificate that parses.
fn read_ca_files(flag: &str, files: &[std::path::PathBuf]) -> Result<Vec<Vec<u8>>, Error> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let pem = read_file(flag, f)?;
        match reqwest::Certificate::from_pem_bundle(&pem) {
            Ok(certs) if !certs.is_empty() => out.push(pem),
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{flag} {}: no PEM certificate in it",
                    f.display()
                )))
            }
            Err(e) => return Err(Error::Usage(format!("{flag} {}: {e}", f.display()))),
        }
    }
    Ok(out)
}

/// Runs `serve`: builds the server, prints `listening on ADDR` on stdout, and
/// serves until SIGTERM or Ctrl-C, then drains.
pub async fn serve(args: ServeArgs) -> Result<(), Error> {
    // Install the signal handlers before announcing the address, so that a signal
    // sent as soon as the address is known is never missed.
    let shutdown = shutdown_signal()?;
    let server = build_server(&args).await?;
    let addr = server.local_addr();
    // Best effort: a closed stdout must not stop the server.
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "listening on {addr}").and_then(|()| out.flush()) {
        tracing::debug!(error = %e, "could not print the address on stdout");
    }
    drop(out);
    server.run(shutdown).await
}

/// A future that resolves on the first SIGTERM or SIGINT (Ctrl-C); a second one
/// exits the process at once with [`FORCED_EXIT_CODE`]. The handlers are installed
/// when this is called, not when the future is first polled.
pub fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, Error> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => info!("SIGTERM received"),
                _ = int.recv() => info!("interrupt received"),
            }
            // A second signal while draining means "now": exit without waiting.
            // Leases of the turns cut short lapse and the reaper re-runs them.
            tokio::spawn(async move {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
                tracing::warn!("second signal: exiting without draining");
                std::process::exit(FORCED_EXIT_CODE);
            });
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                info!("Ctrl-C received");
            } else {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// The binary's main: runs the command and turns errors into a message on stderr
/// and a nonzero exit code.
pub fn main(cli: Cli) -> ExitCode {
    let result = match cli.command {
        #[cfg(feature = "conformance")]
        Command::Conformance(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build();
            let res = match rt {
                Ok(rt) => rt.block_on(conformance(args)),
                Err(e) => Err(taskwire_conformance::Error::Io {
                    path: "tokio runtime".into(),
                    source: e,
                }),
            };
            return match res {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Serve(args) => init_tracing(args.log_format).and_then(|()| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(Error::Io)?
                .block_on(serve(args))
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweeper_runs_often_enough_for_the_idle_lifespan() {
        let s = Duration::from_secs;
        assert_eq!(sweep_interval(None, None), s(60));
        assert_eq!(sweep_interval(None, Some(s(2))), s(1));
        assert_eq!(sweep_interval(None, Some(s(20))), s(5));
        assert_eq!(sweep_interval(None, Some(s(3600))), s(60));
        // The TTL counts too: a short one is swept often.
        assert_eq!(sweep_interval(Some(s(1)), None), s(1));
        assert_eq!(sweep_interval(Some(s(20)), Some(s(3600))), s(5));
        assert_eq!(sweep_interval(Some(s(7 * 86400)), None), s(60));
    }
}
