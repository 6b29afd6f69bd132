//! How the bridge reaches its upstreams, whatever their protocol: the
//! [`UpstreamOptions`] every upstream executor takes, their defaults, the
//! client configuration built from them, the retry of discovery, and the key
//! the upstream link is stored under. No executor imports another: what they
//! share is here or in `common`.

use std::time::Duration;

use taskwire_client::{BackoffPolicy, ClientConfig, ClientError};
use tracing::warn;

use crate::error::BridgeError;

/// The default of [`UpstreamOptions::max_open_messages`]: most text messages
/// an AG-UI upstream may stream at once (started and not yet ended).
pub const MAX_OPEN_MESSAGES: usize = 64;

/// The default of [`UpstreamOptions::max_open_calls`].
pub const DEFAULT_MAX_OPEN_CALLS: usize = 256;

/// The default of [`UpstreamOptions::max_open_calls_per_principal`].
pub const DEFAULT_MAX_OPEN_CALLS_PER_PRINCIPAL: usize = 32;

/// The default of [`UpstreamOptions::max_link_records`]: most
/// `upstream_link` records one watcher keeps track of (beyond it, linked
/// tasks are not recorded: a cancel made while no bridge runs is then not
/// sent upstream for them).
pub const DEFAULT_MAX_LINK_RECORDS: usize = 100_000;

/// The default of [`UpstreamOptions::catch_up_records`]: most
/// `upstream_link` records one watcher reads at start.
pub const DEFAULT_CATCH_UP_RECORDS: usize = 10_000;

/// How the bridge talks to an upstream.
#[derive(Clone, Debug)]
pub struct UpstreamOptions {
    /// Sent as `Authorization: Bearer …` with every upstream request.
    pub bearer_token: Option<String>,
    /// The upstream's own OAuth client (its tokens replace `bearer_token`'s):
    /// client credentials or JWT bearer, tokens cached for this upstream and
    /// renewed, a 401 renewed once, a 403 `insufficient_scope` stepped up.
    /// The downstream caller's token is never sent upstream: the bridge only
    /// ever sends this upstream's own credentials.
    pub oauth: Option<taskwire_client::oauth::OAuthClient>,
    /// Limit of one upstream request–response (for a stream: its response head).
    pub request_timeout: Duration,
    /// Limit for opening a connection to the upstream.
    pub connect_timeout: Duration,
    /// Reconnects of broken streams and retries of failed polls.
    pub backoff: BackoffPolicy,
    /// Interval between `GetTask` polls when following a task by polling.
    pub poll_interval: Duration,
    /// Call an MCP upstream's tools as tasks when it offers the tasks
    /// extension (default true); false calls them blocking, with SEP-2322
    /// repeats for input.
    pub mcp_tasks: bool,
    /// Largest upstream response body or stream event, and largest text
    /// message assembled from an AG-UI upstream's chunks (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]); beyond it the turn fails, naming the
    /// limit.
    pub max_message_bytes: usize,
    /// Certificates (PEM) trusted for `https://` and `a2a+grpcs://`
    /// upstreams besides the built-in Mozilla roots and the system's (a
    /// private CA; `--upstream-ca-file`).
    pub root_certificates_pem: Vec<Vec<u8>>,
    /// The client certificate and key presented to `https://` and
    /// `a2a+grpcs://` upstreams that ask for one (mutual TLS;
    /// `--upstream-client-cert`, `--upstream-client-key`).
    pub client_identity: Option<taskwire_client::ClientIdentityPem>,
    /// MCP 2025-11-25 upstreams: most open calls (blocking calls, and
    /// `tasks/result` streams, held while their downstream task waits for an
    /// answer) this process keeps (`--upstream-max-open-calls`); past it,
    /// one is dropped and its task fails or polls on its next turn.
    pub max_open_calls: usize,
    /// The same, per principal (tenant and owner of the downstream task;
    /// `--upstream-max-open-calls-per-principal`): past it, that principal's
    /// oldest is dropped, and when all [`UpstreamOptions::max_open_calls`]
    /// are held, the oldest of the principal holding the most.
    pub max_open_calls_per_principal: usize,
    /// AG-UI upstreams: most text messages a run may stream at once (started
    /// and not ended; `--upstream-max-open-messages`, default
    /// [`MAX_OPEN_MESSAGES`]); past it the turn fails.
    pub max_open_messages: usize,
    /// MCP upstreams: most `tools/list` pages read at discovery
    /// (`--upstream-max-list-pages`, default
    /// [`taskwire_client::mcp::MAX_TOOL_PAGES`]); past it discovery fails.
    pub max_list_pages: usize,
    /// Most `upstream_link` records (of linked tasks waiting, or running
    /// long) one executor's cancel watcher keeps track of
    /// (`--upstream-max-link-records`, default
    /// [`crate::DEFAULT_MAX_LINK_RECORDS`]); past it no record is
    /// stored, and a cancel made while no bridge runs does not reach those
    /// upstream tasks.
    pub max_link_records: usize,
    /// Most `upstream_link` records one watcher reads at start, to cancel the
    /// upstream tasks of tasks canceled while no bridge ran
    /// (`--upstream-catch-up-records`, default
    /// [`crate::DEFAULT_CATCH_UP_RECORDS`]); the rest wait for the
    /// next start.
    pub catch_up_records: usize,
}

/// The default of [`UpstreamOptions::max_message_bytes`]: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            bearer_token: None,
            oauth: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            backoff: BackoffPolicy::default(),
            poll_interval: Duration::from_millis(500),
            mcp_tasks: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            root_certificates_pem: Vec::new(),
            client_identity: None,
            max_open_calls: DEFAULT_MAX_OPEN_CALLS,
            max_open_calls_per_principal: DEFAULT_MAX_OPEN_CALLS_PER_PRINCIPAL,
            max_open_messages: MAX_OPEN_MESSAGES,
            max_list_pages: taskwire_client::mcp::MAX_TOOL_PAGES,
            max_link_records: DEFAULT_MAX_LINK_RECORDS,
            catch_up_records: DEFAULT_CATCH_UP_RECORDS,
        }
    }
}

/// The key of the agent-state object the upstream link is stored under.
pub const LINK_KEY: &str = "upstream";

/// The client configuration of an upstream at `base_url`.
pub(crate) fn client_config(base_url: &str, opts: &UpstreamOptions) -> ClientConfig {
    let mut b = ClientConfig::builder(base_url)
        .request_timeout(opts.request_timeout)
        .connect_timeout(opts.connect_timeout)
        .backoff(opts.backoff.clone())
        .poll_interval(opts.poll_interval)
        .max_message_bytes(opts.max_message_bytes)
        .max_list_pages(opts.max_list_pages);
    if let Some(t) = &opts.bearer_token {
        b = b.bearer_token(t.clone());
    }
    if let Some(o) = &opts.oauth {
        b = b.oauth(o.clone());
    }
    for pem in &opts.root_certificates_pem {
        b = b.root_certificate_pem(pem.clone());
    }
    if let Some(id) = &opts.client_identity {
        b = b.client_identity_pem(id.certificate_chain.clone(), id.private_key.clone());
    }
    b.build()
}

/// Runs `call` until it succeeds, retrying transient failures (an upstream
/// still starting) with the backoff policy's delays, at most its attempts.
pub(crate) async fn retrying<T, F, Fut>(
    url: &str,
    opts: &UpstreamOptions,
    what: &str,
    mut call: F,
) -> Result<T, BridgeError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClientError>>,
{
    let mut attempt: u32 = 0;
    loop {
        match call().await {
            Ok(v) => return Ok(v),
            Err(e) if e.is_transient() && attempt < opts.backoff.max_attempts => {
                let wait = opts.backoff.delay(attempt);
                attempt += 1;
                warn!(upstream = %url, error = %e, attempt, retry_in = ?wait,
                    "the upstream did not answer ({what}); retrying");
                tokio::time::sleep(wait).await;
            }
            Err(source) => {
                return Err(BridgeError::Discovery {
                    url: url.to_string(),
                    source: Box::new(source),
                })
            }
        }
    }
}
