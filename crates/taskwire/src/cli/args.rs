//! The flags of `taskwire serve` and `taskwire conformance`, and their value parsers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

#[cfg(all(feature = "sqlite", feature = "postgres"))]
pub(crate) const STORE_SCHEMES: &str =
    "sqlite://PATH[?synchronous=full|normal], postgres://USER@HOST[:PORT]/DATABASE or memory://";

#[cfg(all(feature = "sqlite", not(feature = "postgres")))]
pub(crate) const STORE_SCHEMES: &str =
    "sqlite://PATH[?synchronous=full|normal] or memory:// (this build has no PostgreSQL support)";

#[cfg(all(not(feature = "sqlite"), feature = "postgres"))]
pub(crate) const STORE_SCHEMES: &str =
    "postgres://USER@HOST[:PORT]/DATABASE or memory:// (this build has no SQLite support)";

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
pub(crate) const STORE_SCHEMES: &str = "memory:// (this build has no SQLite or PostgreSQL support)";

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

    /// Inbound OAuth 2.0 / OpenID Connect (`--oauth-issuer`, …); boxed like
    /// `upstream`.
    #[command(flatten)]
    pub oauth: Box<OAuthArgs>,

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

    /// A2A: how the agent card writes the gRPC interface's url. `host-port`
    /// (the default) is what the official SDKs' gRPC clients dial; `origin`
    /// (`http(s)://host:port`) is what Google ADK's RemoteA2aAgent accepts
    /// from a card fetched by url, and those gRPC clients cannot dial;
    /// `omit` lists no gRPC interface (docs/a2a.md, "Agent card").
    #[arg(long, env = "TASKWIRE_A2A_CARD_GRPC_URL", value_enum, default_value_t = GrpcCardUrlArg::HostPort)]
    pub a2a_card_grpc_url: GrpcCardUrlArg,

    /// A2A 1.1: the longest a GetTask with `currentGeneration` is held
    /// waiting for the task to move, then answered as it is (e.g. 30s).
    #[arg(long, env = "TASKWIRE_A2A_LONG_POLL_MAX", value_name = "DURATION", default_value = "30s", value_parser = parse_positive_duration)]
    pub a2a_long_poll_max: Duration,

    /// A2A: declare and serve no streaming. The card says `streaming: false`,
    /// and SendStreamingMessage and SubscribeToTask answer
    /// UnsupportedOperation on every binding (A2A 1.0 §3.3.4).
    #[arg(long, env = "TASKWIRE_NO_A2A_STREAMING")]
    pub no_a2a_streaming: bool,

    /// A2A: declare and serve no push notifications. The card says
    /// `pushNotifications: false`, and the push config methods (and a push
    /// config inside SendMessage) answer PushNotificationNotSupported.
    #[arg(long, env = "TASKWIRE_NO_A2A_PUSH")]
    pub no_a2a_push: bool,

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

/// `--a2a-card-grpc-url`: how the A2A card writes the gRPC interface's url.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum GrpcCardUrlArg {
    /// `host:port`.
    #[default]
    HostPort,
    /// `http(s)://host:port`.
    Origin,
    /// No gRPC interface on the card.
    Omit,
}

/// Bridge mode's flags: which upstream agent to serve, and how to reach it.
#[derive(Clone, Debug, Default, Args)]
pub struct UpstreamArgs {
    /// Bridge mode: serve the remote agent at URL instead of --agent, on every
    /// protocol this server speaks. `a2a+http://HOST:PORT[/PATH]` (or
    /// `a2a+https://…`) is an A2A agent over JSON-RPC, discovered at start from
    /// `http://HOST:PORT[/PATH]/.well-known/agent-card.json`, else (a PATH with
    /// no card below it) `http://HOST:PORT/.well-known/agent-card.json` (its skills become
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

    /// Bridge mode, outbound OAuth: the OAuth client id of the upstream NAME
    /// (or of every upstream without NAME=); repeatable. With it the bridge
    /// obtains the upstream's access tokens itself (client credentials grant,
    /// or the JWT bearer grant with --upstream-oauth-assertion-file), always
    /// with `resource` (RFC 8707), caches them per upstream and renews them
    /// before they expire (docs/auth.md, "Outbound OAuth").
    #[arg(
        long = "upstream-oauth-client-id",
        env = "TASKWIRE_UPSTREAM_OAUTH_CLIENT_ID",
        value_name = "[NAME=]ID",
        requires = "upstream"
    )]
    pub oauth_client_id: Vec<String>,

    /// Bridge mode, outbound OAuth: a file holding the client secret
    /// (`client_secret_basic` or `client_secret_post`) of the upstream NAME,
    /// or of every upstream without NAME=; repeatable. Read at start.
    #[arg(
        long = "upstream-oauth-client-secret-file",
        env = "TASKWIRE_UPSTREAM_OAUTH_CLIENT_SECRET_FILE",
        value_name = "[NAME=]FILE",
        requires = "upstream"
    )]
    pub oauth_client_secret_file: Vec<String>,

    /// Bridge mode, outbound OAuth: a PEM file with the private key that signs
    /// the `private_key_jwt` client assertions (RFC 7523) of the upstream
    /// NAME, or of every upstream without NAME=; repeatable. Read at start.
    #[arg(
        long = "upstream-oauth-private-key-file",
        env = "TASKWIRE_UPSTREAM_OAUTH_PRIVATE_KEY_FILE",
        value_name = "[NAME=]FILE",
        requires = "upstream"
    )]
    pub oauth_private_key_file: Vec<String>,

    /// Bridge mode, outbound OAuth: the JWS algorithm of the
    /// `private_key_jwt` assertions (`ES256`, `ES384`, `RS256`, `PS256`,
    /// `EdDSA`, …) of the upstream NAME, or of every upstream without NAME=;
    /// default `ES256`.
    #[arg(
        long = "upstream-oauth-signing-alg",
        env = "TASKWIRE_UPSTREAM_OAUTH_SIGNING_ALG",
        value_name = "[NAME=]ALG",
        requires = "upstream"
    )]
    pub oauth_signing_alg: Vec<String>,

    /// Bridge mode, outbound OAuth: a file holding a JWT (a workload identity
    /// token a platform mounts and rotates, Kubernetes service-account style)
    /// exchanged for the access tokens of the upstream NAME, or of every
    /// upstream without NAME=, by the JWT bearer grant (RFC 7523 §2.1); read
    /// anew for every token request.
    #[arg(
        long = "upstream-oauth-assertion-file",
        env = "TASKWIRE_UPSTREAM_OAUTH_ASSERTION_FILE",
        value_name = "[NAME=]FILE",
        requires = "upstream"
    )]
    pub oauth_assertion_file: Vec<String>,

    /// Bridge mode, outbound OAuth: the scopes (space-separated) asked for on
    /// the token requests of the upstream NAME, or of every upstream without
    /// NAME=. A 403 `insufficient_scope` steps up only within them when they
    /// are given; without them the 401's `scope`, else the upstream's
    /// `scopes_supported`, is asked for.
    #[arg(
        long = "upstream-oauth-scopes",
        env = "TASKWIRE_UPSTREAM_OAUTH_SCOPES",
        value_name = "[NAME=]SCOPES",
        requires = "upstream"
    )]
    pub oauth_scopes: Vec<String>,

    /// Bridge mode, outbound OAuth: how the client of the upstream NAME (or of
    /// every upstream without NAME=) authenticates at the token endpoint:
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or
    /// `none`. Default: `private_key_jwt` with a key file, the one the
    /// authorization server's metadata lists (basic first) with a secret
    /// file, else `none`.
    #[arg(
        long = "upstream-oauth-token-endpoint-auth",
        env = "TASKWIRE_UPSTREAM_OAUTH_TOKEN_ENDPOINT_AUTH",
        value_name = "[NAME=]METHOD",
        requires = "upstream"
    )]
    pub oauth_token_endpoint_auth: Vec<String>,

    /// Bridge mode, outbound OAuth: the issuer of the authorization server of
    /// the upstream NAME (or of every upstream without NAME=); its RFC 8414 /
    /// OpenID Connect metadata is fetched and its `issuer` checked. Without
    /// it the server is discovered: MCP from the upstream's 401
    /// (`resource_metadata`, RFC 9728), A2A from the card's security scheme.
    #[arg(
        long = "upstream-oauth-issuer",
        env = "TASKWIRE_UPSTREAM_OAUTH_ISSUER",
        value_name = "[NAME=]URL",
        requires = "upstream"
    )]
    pub oauth_issuer: Vec<String>,

    /// Bridge mode, outbound OAuth: the `resource` (RFC 8707) sent on the
    /// token requests of the upstream NAME (or of every upstream without
    /// NAME=). Default: the upstream's own identifier (its protected resource
    /// metadata's `resource`, else its URL).
    #[arg(
        long = "upstream-oauth-resource",
        env = "TASKWIRE_UPSTREAM_OAUTH_RESOURCE",
        value_name = "[NAME=]URI",
        requires = "upstream"
    )]
    pub oauth_resource: Vec<String>,

    /// Bridge mode, outbound OAuth: the most 403 `insufficient_scope`
    /// step-ups (a new token with more scopes) one upstream request makes.
    #[arg(
        long = "upstream-oauth-max-step-ups",
        env = "TASKWIRE_UPSTREAM_OAUTH_MAX_STEP_UPS",
        value_name = "N",
        default_value_t = 2,
        value_parser = clap::value_parser!(u32).range(0..=10)
    )]
    pub oauth_max_step_ups: u32,
}

/// Inbound OAuth 2.0 / OpenID Connect: JWT access tokens from an issuer
/// (docs/auth.md).
#[derive(Debug, Clone, clap::Args)]
pub struct OAuthArgs {
    /// Accept JWT access tokens from this OpenID Connect / OAuth 2.0 issuer
    /// (its identifier, exactly as in its tokens' `iss`: Keycloak
    /// `https://HOST/realms/REALM`, Entra ID
    /// `https://login.microsoftonline.com/TENANT/v2.0`, Auth0
    /// `https://TENANT.auth0.com/`). Its metadata (RFC 8414 or OpenID Connect
    /// Discovery) and key set are read at start; https only, unless on loopback.
    /// With --auth-tokens too, both kinds of token are accepted.
    #[arg(
        long = "oauth-issuer",
        env = "TASKWIRE_OAUTH_ISSUER",
        value_name = "URL"
    )]
    pub issuer: Option<String>,

    /// An accepted `aud` of the tokens; repeatable (the environment variable
    /// takes a comma-separated list). Default: the public URL (--public-url,
    /// else `http://<listen address>`) and its MCP endpoint `<public URL>/mcp`.
    #[arg(
        long = "oauth-audience",
        env = "TASKWIRE_OAUTH_AUDIENCE",
        value_name = "URI",
        value_delimiter = ','
    )]
    pub audience: Vec<String>,

    /// The claim naming the caller's principal.
    #[arg(
        long = "oauth-principal-claim",
        env = "TASKWIRE_OAUTH_PRINCIPAL_CLAIM",
        value_name = "CLAIM",
        default_value = "sub"
    )]
    pub principal_claim: String,

    /// The claim naming the caller's tenant. Unset (or absent from a token):
    /// tenant `default`.
    #[arg(
        long = "oauth-tenant-claim",
        env = "TASKWIRE_OAUTH_TENANT_CLAIM",
        value_name = "CLAIM"
    )]
    pub tenant_claim: Option<String>,

    /// The claim carrying the granted scopes: a space-separated string
    /// (`scope`, RFC 9068) or an array (Okta's `scp`, Auth0's `permissions`).
    #[arg(
        long = "oauth-scope-claim",
        env = "TASKWIRE_OAUTH_SCOPE_CLAIM",
        value_name = "CLAIM",
        default_value = "scope"
    )]
    pub scope_claim: String,

    /// The scope that grants reading tasks (get, list, subscribe, the extended
    /// card, CAS polls).
    #[arg(
        long = "oauth-read-scope",
        env = "TASKWIRE_OAUTH_READ_SCOPE",
        value_name = "SCOPE",
        default_value = "tasks:read"
    )]
    pub read_scope: String,

    /// The scope that grants changing tasks (send, answer, cancel, push
    /// configs, host actions); it implies reading.
    #[arg(
        long = "oauth-write-scope",
        env = "TASKWIRE_OAUTH_WRITE_SCOPE",
        value_name = "SCOPE",
        default_value = "tasks:write"
    )]
    pub write_scope: String,

    /// The accepted signature algorithms, comma-separated; asymmetric only
    /// (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA).
    #[arg(
        long = "oauth-algorithms",
        env = "TASKWIRE_OAUTH_ALGORITHMS",
        value_name = "ALGS",
        value_delimiter = ',',
        default_value = "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,EdDSA"
    )]
    pub algorithms: Vec<String>,

    /// Require the RFC 9068 access-token header `typ: at+jwt`.
    #[arg(long = "oauth-require-at-jwt", env = "TASKWIRE_OAUTH_REQUIRE_AT_JWT")]
    pub require_at_jwt: bool,

    /// Clock leeway for `exp` and `nbf` (at most 5m).
    #[arg(long = "oauth-leeway", env = "TASKWIRE_OAUTH_LEEWAY", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub leeway: Duration,

    /// A token whose key id is not in the cached key set refetches the set at
    /// most this often (all requests together).
    #[arg(long = "oauth-jwks-min-refresh", env = "TASKWIRE_OAUTH_JWKS_MIN_REFRESH", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub jwks_min_refresh: Duration,

    /// The key set is refreshed in the background once this old.
    #[arg(long = "oauth-jwks-max-age", env = "TASKWIRE_OAUTH_JWKS_MAX_AGE", value_name = "DURATION", default_value = "1h", value_parser = parse_positive_duration)]
    pub jwks_max_age: Duration,

    /// Longest accepted token, in bytes.
    #[arg(long = "oauth-max-token-bytes", env = "TASKWIRE_OAUTH_MAX_TOKEN_BYTES", value_name = "BYTES", default_value_t = 8192, value_parser = parse_positive_usize)]
    pub max_token_bytes: usize,

    /// Timeout of each fetch of the issuer's metadata or key set (each is also
    /// bounded to 256 KiB).
    #[arg(long = "oauth-fetch-timeout", env = "TASKWIRE_OAUTH_FETCH_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub fetch_timeout: Duration,
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

pub(crate) fn parse_optional_duration(s: &str) -> Result<OptionalDuration, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        Ok(OptionalDuration(None))
    } else {
        parse_positive_duration(s).map(|d| OptionalDuration(Some(d)))
    }
}

pub(crate) fn parse_positive_u32(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (expected a whole number up to 4294967295)")),
    }
}

pub(crate) fn parse_public_url(s: &str) -> Result<String, String> {
    let s = s.trim();
    if (s.starts_with("http://") || s.starts_with("https://")) && s.len() > "https://".len() {
        Ok(s.trim_end_matches('/').to_string())
    } else {
        Err("expected an http:// or https:// url".into())
    }
}

pub(crate) fn parse_mcp_task_mode(s: &str) -> Result<String, String> {
    let s = s.trim();
    let ok = s == "always" || s.strip_prefix("after:").unwrap_or(s).parse::<u64>().is_ok();
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected `always` or a number of milliseconds".into())
    }
}

/// Parses a duration such as `10s`, `500ms`, `1m 30s` or `7d`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e} (expected a duration such as 10s, 500ms, 1m or 7d)"))
}

pub(crate) fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        Err("must be longer than zero".into())
    } else {
        Ok(d)
    }
}

pub(crate) fn parse_ttl(s: &str) -> Result<Ttl, String> {
    if s.trim().eq_ignore_ascii_case("never") {
        Ok(Ttl(None))
    } else {
        parse_positive_duration(s).map(|d| Ttl(Some(d)))
    }
}

pub(crate) fn parse_usize(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|e| format!("{e} (expected a whole number)"))
}

pub(crate) fn parse_positive_usize(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (expected a whole number)")),
    }
}
