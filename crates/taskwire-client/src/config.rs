//! Settings every protocol client shares: where the server is, how to
//! authenticate, time limits, and the reconnect policy.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::error::ClientError;
use crate::oauth::Authorizer;

/// Exponential backoff with jitter, used between reconnect and poll attempts.
///
/// The delay before retry `n` (0-based) is `min(max, initial · multiplierⁿ)`,
/// then shortened by a random fraction of at most `jitter` of itself: it always
/// lies in `[base · (1 − jitter), base]`, so it never exceeds `max`.
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffPolicy {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
    /// Growth factor per attempt (values below 1 are treated as 1).
    pub multiplier: f64,
    /// Fraction of the delay that is random, in `[0, 1]` (clamped).
    pub jitter: f64,
    /// How many retries are made before giving up (0: none).
    pub max_attempts: u32,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: 0.5,
            max_attempts: 6,
        }
    }
}

impl BackoffPolicy {
    /// The delay before retry `attempt` (0-based) without jitter.
    pub fn base_delay(&self, attempt: u32) -> Duration {
        let mult = if self.multiplier.is_finite() {
            self.multiplier.max(1.0)
        } else {
            1.0
        };
        let exp = i32::try_from(attempt).unwrap_or(i32::MAX);
        let secs = self.initial.as_secs_f64() * mult.powi(exp);
        let max = self.max.as_secs_f64();
        if !secs.is_finite() || secs >= max {
            self.max
        } else {
            Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(self.max)
        }
    }

    /// The delay before retry `attempt` with jitter drawn from `unit`, a number
    /// in `[0, 1)` (values outside are clamped).
    pub fn delay_with(&self, attempt: u32, unit: f64) -> Duration {
        let base = self.base_delay(attempt);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Duration::try_from_secs_f64(base.as_secs_f64() * (1.0 - jitter * unit)).unwrap_or(base)
    }

    /// The delay before retry `attempt`, with random jitter.
    pub fn delay(&self, attempt: u32) -> Duration {
        self.delay_with(attempt, random_unit())
    }
}

/// `now + d`, saturating at about thirty years from now.
pub(crate) fn after(d: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(30 * 365 * 86_400)))
        .unwrap_or(now)
}

/// A uniformly distributed number in `[0, 1)` from the OS generator (0.5 if the
/// generator fails).
pub(crate) fn random_unit() -> f64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

/// One request and its response, reported to the [`ExchangeObserver`] of a
/// config: the conformance suite shows the exchange that broke an invariant.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The protocol client that made it: `a2a`, `grpc`, `mcp`, `agui` or `cas`.
    pub protocol: &'static str,
    /// The operation (JSON-RPC method, gRPC method, or HTTP method and path).
    pub operation: String,
    /// The request body or message as JSON (`Null` if none).
    pub request: Value,
    /// The HTTP status (`None` for gRPC or when no response arrived).
    pub status: Option<u16>,
    /// The response body or message as JSON; for streams one entry per event
    /// is reported with `operation` suffixed ` (event)`.
    pub response: Value,
}

/// Receives every exchange a client makes.
pub type ExchangeObserver = Arc<dyn Fn(&Exchange) + Send + Sync>;

/// Settings shared by all protocol clients. Build with [`ClientConfig::builder`].
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The server's base url, without a trailing slash (e.g. `http://127.0.0.1:7420`).
    pub base_url: String,
    /// A bearer token sent as `Authorization: Bearer …` (or gRPC metadata).
    pub bearer_token: Option<String>,
    /// Authorizes every HTTP request (e.g. an [`crate::oauth::OAuthClient`]):
    /// its `Authorization` replaces `bearer_token`'s, a 401 renews once and
    /// the request is sent again, a 403 `insufficient_scope` steps up.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Limit for one request–response (not for a whole stream).
    pub request_timeout: Duration,
    /// Limit for opening a connection.
    pub connect_timeout: Duration,
    /// Longest silence on an open stream before it counts as broken (`None`:
    /// no limit).
    pub stream_idle_timeout: Option<Duration>,
    /// Reconnect policy for broken streams (and polls that fail).
    pub backoff: BackoffPolicy,
    /// Interval between `GetTask` polls when a stream falls back to polling.
    pub poll_interval: Duration,
    /// Extra headers sent with every HTTP request.
    pub headers: Vec<(String, String)>,
    /// Largest response body, and largest stream event, the A2A, MCP and
    /// AG-UI clients read (default 16 MiB); beyond it the response or stream is a
    /// [`crate::ClientError::Decode`].
    pub max_message_bytes: usize,
    /// Most pages of a paged list (MCP `tools/list`) the clients follow
    /// (default [`crate::mcp::MAX_TOOL_PAGES`]); a server that pages on is a
    /// [`crate::ClientError::Protocol`].
    pub max_list_pages: usize,
    /// Receives every exchange (optional).
    pub observer: Option<ExchangeObserver>,
    /// Certificates (PEM, one or more per entry) trusted for HTTPS and gRPC
    /// over TLS besides the built-in Mozilla roots and the system's.
    pub root_certificates_pem: Vec<Vec<u8>>,
    /// The certificate and key presented to HTTPS and gRPC-over-TLS servers
    /// that ask for one (mutual TLS); none by default.
    pub client_identity: Option<ClientIdentityPem>,
}

/// A client certificate for mutual TLS, PEM.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientIdentityPem {
    /// The certificate chain, leaf first.
    pub certificate_chain: Vec<u8>,
    /// The private key of the leaf (PKCS#8, PKCS#1 or SEC1).
    pub private_key: Vec<u8>,
}

impl fmt::Debug for ClientIdentityPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentityPem")
            .field("certificate_chain", &self.certificate_chain.len())
            .field("private_key", &"…")
            .finish()
    }
}

impl ClientIdentityPem {
    /// A certificate chain (leaf first) and the leaf's private key, PEM.
    pub fn new(certificate_chain: impl Into<Vec<u8>>, private_key: impl Into<Vec<u8>>) -> Self {
        Self {
            certificate_chain: certificate_chain.into(),
            private_key: private_key.into(),
        }
    }

    /// As reqwest takes it: the key and the chain in one PEM buffer. Fails
    /// when either does not parse.
    pub fn to_reqwest(&self) -> Result<reqwest::Identity, ClientError> {
        let mut pem = self.private_key.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&self.certificate_chain);
        reqwest::Identity::from_pem(&pem)
            .map_err(|e| ClientError::Config(format!("client certificate: {e}")))
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "…"))
            .field("authorizer", &self.authorizer)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("backoff", &self.backoff)
            .field("poll_interval", &self.poll_interval)
            .field("headers", &self.headers)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_list_pages", &self.max_list_pages)
            .field("observer", &self.observer.is_some())
            .field("root_certificates", &self.root_certificates_pem.len())
            .field("client_identity", &self.client_identity)
            .finish()
    }
}

impl ClientConfig {
    /// A config for `base_url` with the defaults (30 s requests, 10 s connect,
    /// default backoff, 500 ms polls).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            bearer_token: None,
            authorizer: None,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            stream_idle_timeout: None,
            backoff: BackoffPolicy::default(),
            poll_interval: Duration::from_millis(500),
            headers: Vec::new(),
            max_message_bytes: crate::sse::DEFAULT_MAX_EVENT_BYTES,
            max_list_pages: crate::mcp::MAX_TOOL_PAGES,
            observer: None,
            root_certificates_pem: Vec::new(),
            client_identity: None,
        }
    }

    /// A builder starting from [`ClientConfig::new`].
    pub fn builder(base_url: impl Into<String>) -> ClientConfigBuilder {
        ClientConfigBuilder {
            config: Self::new(base_url),
        }
    }

    /// `base_url` joined with `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else if path.starts_with('/') {
            format!("{}{path}", self.base_url)
        } else {
            format!("{}/{path}", self.base_url)
        }
    }

    /// Sends `rb`, authorized by [`ClientConfig::authorizer`] when there is
    /// one (see [`crate::http::send_authorized`]).
    pub(crate) async fn send(
        &self,
        rb: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        crate::http::send_authorized(rb, self.authorizer.as_deref()).await
    }

    pub(crate) fn observe(&self, ex: impl FnOnce() -> Exchange) {
        if let Some(o) = &self.observer {
            o(&ex());
        }
    }

    /// The reqwest client these settings describe (no overall timeout: the
    /// request timeout is set per request, so streams can stay open).
    pub(crate) fn http_client(&self) -> Result<reqwest::Client, ClientError> {
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in &self.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| ClientError::Config(format!("header name {k:?}: {e}")))?;
            let value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|e| ClientError::Config(format!("header value of {k}: {e}")))?;
            headers.append(name, value);
        }
        if let Some(t) = &self.bearer_token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|e| ClientError::Config(format!("bearer token: {e}")))?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .default_headers(headers);
        for pem in &self.root_certificates_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ClientError::Config(format!("root certificate: {e}")))?;
            if certs.is_empty() {
                return Err(ClientError::Config(
                    "root certificate: no PEM certificate found".into(),
                ));
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        if let Some(id) = &self.client_identity {
            builder = builder.identity(id.to_reqwest()?);
        }
        if !proxy_in_env() {
            // The same as reqwest's system proxy when the environment names
            // none, without its per-request proxy lookups.
            builder = builder.no_proxy();
        }
        builder
            .build()
            .map_err(|e| ClientError::Config(e.to_string()))
    }
}

/// Whether the environment names an HTTP proxy (`HTTP_PROXY`, `HTTPS_PROXY`,
/// `ALL_PROXY`, in either case), which reqwest's default client uses.
fn proxy_in_env() -> bool {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}

/// Builder of a [`ClientConfig`].
#[derive(Clone, Debug)]
pub struct ClientConfigBuilder {
    config: ClientConfig,
}

impl ClientConfigBuilder {
    /// Sends `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.config.bearer_token = Some(token.into());
        self
    }

    /// Authorizes every HTTP request with `authorizer` (see
    /// [`ClientConfig::authorizer`]).
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.config.authorizer = Some(authorizer);
        self
    }

    /// Authorizes every HTTP request with this OAuth client.
    pub fn oauth(self, client: crate::oauth::OAuthClient) -> Self {
        self.authorizer(Arc::new(client))
    }

    /// Limit for one request–response.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.config.request_timeout = d;
        self
    }

    /// Limit for opening a connection.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.config.connect_timeout = d;
        self
    }

    /// Largest response body and stream event read (at least 1 byte).
    pub fn max_message_bytes(mut self, n: usize) -> Self {
        self.config.max_message_bytes = n.max(1);
        self
    }

    /// Most pages of a paged list followed (at least 1).
    pub fn max_list_pages(mut self, n: usize) -> Self {
        self.config.max_list_pages = n.max(1);
        self
    }

    /// Longest silence on an open stream before it counts as broken.
    pub fn stream_idle_timeout(mut self, d: Duration) -> Self {
        self.config.stream_idle_timeout = Some(d);
        self
    }

    /// The whole backoff policy.
    pub fn backoff(mut self, policy: BackoffPolicy) -> Self {
        self.config.backoff = policy;
        self
    }

    /// Interval between polls of the polling fallback.
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.config.poll_interval = d;
        self
    }

    /// An extra header for every HTTP request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.headers.push((name.into(), value.into()));
        self
    }

    /// Trusts the certificates of `pem` (one or more, PEM) for HTTPS and gRPC
    /// over TLS, besides the built-in and system roots.
    pub fn root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.config.root_certificates_pem.push(pem.into());
        self
    }

    /// Presents this certificate chain (leaf first) and key, PEM, to HTTPS
    /// and gRPC-over-TLS servers that ask for a client certificate.
    pub fn client_identity_pem(
        mut self,
        certificate_chain: impl Into<Vec<u8>>,
        private_key: impl Into<Vec<u8>>,
    ) -> Self {
        self.config.client_identity = Some(ClientIdentityPem::new(certificate_chain, private_key));
        self
    }

    /// Receives every exchange the clients make.
    pub fn observer(mut self, f: impl Fn(&Exchange) + Send + Sync + 'static) -> Self {
        self.config.observer = Some(Arc::new(f));
        self
    }

    /// The config.
    pub fn build(self) -> ClientConfig {
        self.config
    }
}

/// A typed view of a received JSON value together with the value itself, as
/// it came over the wire (the conformance suite validates the raw value).
/// Derefs to the typed view.
#[derive(Clone, Debug, PartialEq)]
pub struct Received<T> {
    /// The typed view.
    pub value: T,
    /// The JSON as received (for gRPC: the message rendered as ProtoJSON).
    pub raw: Value,
}

impl<T> Received<T> {
    /// The typed view.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// Maps the typed view, keeping the raw value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Received<U> {
        Received {
            value: f(self.value),
            raw: self.raw,
        }
    }
}

impl<T> std::ops::Deref for Received<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = BackoffPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
            multiplier: 2.0,
            jitter: 0.0,
            max_attempts: 10,
        };
        assert_eq!(p.delay(0), Duration::from_millis(100));
        assert_eq!(p.delay(1), Duration::from_millis(200));
        assert_eq!(p.delay(3), Duration::from_millis(800));
        assert_eq!(p.delay(4), Duration::from_secs(1));
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let p = BackoffPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(2),
            multiplier: 3.0,
            jitter: 0.5,
            max_attempts: 10,
        };
        for attempt in 0..8 {
            let base = p.base_delay(attempt);
            assert_eq!(p.delay_with(attempt, 0.0), base);
            assert_eq!(p.delay_with(attempt, 1.0), base.mul_f64(0.5));
            for _ in 0..200 {
                let d = p.delay(attempt);
                assert!(d <= base && d >= base.mul_f64(0.5), "{d:?} vs {base:?}");
                assert!(d <= p.max);
            }
        }
        // Randomness actually varies the delay.
        let ds: std::collections::HashSet<_> = (0..50).map(|_| p.delay(2)).collect();
        assert!(ds.len() > 1);
    }

    #[test]
    fn odd_policies_do_not_panic() {
        let p = BackoffPolicy {
            initial: Duration::from_secs(1),
            max: Duration::from_millis(10),
            multiplier: f64::NAN,
            jitter: 7.0,
            max_attempts: 0,
        };
        assert_eq!(p.base_delay(5), Duration::from_millis(10));
        assert_eq!(p.delay_with(5, 2.0), Duration::ZERO);
        let huge = BackoffPolicy {
            initial: Duration::MAX,
            max: Duration::MAX,
            multiplier: 1e300,
            jitter: 0.5,
            max_attempts: 1,
        };
        assert!(huge.delay(3) <= Duration::MAX);
        assert!(huge.delay_with(0, 0.0) > Duration::from_secs(1 << 40));
        let r = random_unit();
        assert!((0.0..1.0).contains(&r));
    }

    #[test]
    fn urls_join() {
        let c = ClientConfig::new("http://h:1/");
        assert_eq!(c.url("/a2a"), "http://h:1/a2a");
        assert_eq!(c.url("mcp"), "http://h:1/mcp");
        assert_eq!(c.url("http://x/y"), "http://x/y");
    }
}
