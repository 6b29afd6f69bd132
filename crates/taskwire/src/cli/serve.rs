//! `taskwire serve`: the server built from its flags, logging, and the run with
//! graceful shutdown on SIGTERM or Ctrl-C.

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use taskwire_core::guardrail::DenyPhrases;
use taskwire_core::{Agent, Limits, RuntimeConfig, ScriptedAgent, TaskDefaults};
use tracing::info;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::EnvFilter;

use super::args::{LogFormat, ServeArgs};
use super::store::{open_store, store_is_shared};
use super::tls_files::{read_ca_files, read_identity};
#[cfg(feature = "bridge")]
use super::upstream::upstream_error;
use super::upstream::{upstream_agent, upstreams_of};
use super::{AGENTS, FORCED_EXIT_CODE};
use crate::auth::AuthConfig;
use crate::error::Error;
use crate::server::{check_listen_policy, Server};

/// How often the sweeper runs: every 60 s, or every quarter of the shorter of the
/// task TTL and the inactivity lifespan when one is set (between 1 s and 60 s), so
/// that `--idle-lifespan 2s` cancels a task within about 3 s rather than a minute
/// and `--task-ttl 10s` keeps the store near ten seconds' worth of tasks. Each
/// pass deletes in batches until nothing expired is left.
pub(crate) fn sweep_interval(ttl: Option<Duration>, idle_lifespan: Option<Duration>) -> Duration {
    let default = RuntimeConfig::default().sweep_interval;
    let shortest = match (ttl, idle_lifespan) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    shortest.map_or(default, |d| {
        (d / 4).clamp(Duration::from_secs(1), default.max(Duration::from_secs(1)))
    })
}

/// The agent named by `--agent`.
pub(crate) fn agent_by_name(name: &str) -> Result<Arc<dyn Agent>, Error> {
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

/// Sets up logging to stderr: text or JSON, filtered by RUST_LOG (default `info`).
pub(super) fn init_tracing(format: LogFormat) -> Result<(), Error> {
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

/// The canonical URL of the server: --public-url, else `http://` and --listen.
fn public_url(args: &ServeArgs) -> String {
    match &args.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => format!("http://{}", args.listen),
    }
}

/// The authenticators of --auth-tokens and --oauth-issuer, in that order (a
/// token-file token is looked up before a JWT is parsed).
async fn auth_config(args: &ServeArgs) -> Result<AuthConfig, Error> {
    let mut list: Vec<Arc<dyn crate::auth::Authenticator>> = Vec::new();
    if let Some(path) = &args.auth_tokens {
        list.push(Arc::new(crate::TokenTable::load(path)?));
    }
    let o = &args.oauth;
    if let Some(issuer) = &o.issuer {
        use taskwire_auth::jwt::{default_audiences, JwtAuthenticator, JwtConfig};
        let audiences = if o.audience.is_empty() {
            default_audiences(&public_url(args))
        } else {
            o.audience.clone()
        };
        let mut c = JwtConfig::new(issuer.trim(), audiences);
        c.algorithms = o
            .algorithms
            .iter()
            .map(|a| {
                a.trim()
                    .parse::<taskwire_auth::jwt::Algorithm>()
                    .map_err(|_| {
                        Error::Usage(format!("--oauth-algorithms: unknown algorithm {a:?}"))
                    })
            })
            .collect::<Result<_, _>>()?;
        c.require_at_jwt = o.require_at_jwt;
        c.leeway = o.leeway;
        c.principal_claim = o.principal_claim.clone();
        c.tenant_claim = o.tenant_claim.clone();
        c.scope_claim = o.scope_claim.clone();
        c.read_scope = o.read_scope.clone();
        c.write_scope = o.write_scope.clone();
        c.max_token_bytes = o.max_token_bytes;
        c.jwks_min_refresh = o.jwks_min_refresh;
        c.jwks_max_age = o.jwks_max_age;
        c.fetch_timeout = o.fetch_timeout;
        let jwt = JwtAuthenticator::discover(c)
            .await
            .map_err(|e| Error::Usage(format!("--oauth-issuer: {e}")))?;
        tracing::info!(issuer = %issuer, metadata = %jwt.metadata_url(), "accepting JWT access tokens");
        list.push(Arc::new(jwt));
    }
    Ok(match list.len() {
        0 => AuthConfig::Local,
        _ => AuthConfig::chain(list),
    })
}

/// The server `serve` would run with these arguments, bound but not running.
pub async fn build_server(args: &ServeArgs) -> Result<Server, Error> {
    let auth = auth_config(args).await?;
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
    // The outbound OAuth flags (names, files, methods), likewise.
    #[cfg(feature = "bridge")]
    super::upstream::upstream_oauth(
        &args.upstream,
        &upstreams.iter().map(|e| e.name.clone()).collect::<Vec<_>>(),
    )?;
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
        .public_url(public_url(args))
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
        #[cfg(feature = "a2a")]
        a2a_card_grpc_url: match args.a2a_card_grpc_url {
            super::args::GrpcCardUrlArg::HostPort => taskwire_a2a::GrpcCardUrl::HostPort,
            super::args::GrpcCardUrlArg::Origin => taskwire_a2a::GrpcCardUrl::Origin,
            super::args::GrpcCardUrlArg::Omit => taskwire_a2a::GrpcCardUrl::Omit,
        },
        a2a_long_poll_max: Some(args.a2a_long_poll_max),
        no_a2a_streaming: args.no_a2a_streaming,
        no_a2a_push: args.no_a2a_push,
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

/// Runs `serve`: builds the server, prints `listening on ADDR` on stdout, and
/// serves until SIGTERM or Ctrl-C, then drains.
pub(super) async fn serve(args: ServeArgs) -> Result<(), Error> {
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
pub(super) fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, Error> {
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
