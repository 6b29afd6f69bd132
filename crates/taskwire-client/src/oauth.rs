//! The outbound OAuth 2.1 client: how a taskwire client (and so the bridge)
//! obtains, caches and renews the access tokens an OAuth-protected upstream
//! wants.
//!
//! A service client has no user: it authenticates as itself.
//! [`OAuthClient`] does
//! - the **client credentials** grant (OAuth 2.1 §4.2) with the client
//!   authentication methods `client_secret_basic`, `client_secret_post` and
//!   `private_key_jwt` (RFC 7523 §2.2: a JWT signed with the client's key by
//!   `jsonwebtoken`, `iss` = `sub` = the client id, `aud` = the authorization
//!   server's issuer as RFC 7523bis has it, else its token endpoint), or no
//!   client authentication;
//! - the **JWT bearer** grant (RFC 7523 §2.1) with an assertion read from a
//!   file on every token request (a workload identity token that a platform
//!   mounts and rotates, Kubernetes service-account style);
//! - always sends `resource` (RFC 8707) and the scopes it wants;
//! - finds the authorization server the way each protocol says: for MCP from
//!   the 401's `WWW-Authenticate: Bearer resource_metadata="…"` (else the
//!   RFC 9728 well-known URIs), whose `resource` must name the URL used, then
//!   the server's RFC 8414 / OpenID Connect metadata, whose `issuer` must be the
//!   issuer it was fetched for; for A2A from the card's security scheme
//!   ([`AuthorizationServer::MetadataUrl`]); or a configured issuer or token
//!   endpoint;
//! - caches the token and renews it before it expires; a 401 renews once and
//!   the request is sent again; a 403 `insufficient_scope` steps up (the union
//!   of the scopes held and the challenged ones, within
//!   [`OAuthConfig::allowed_scopes`]) at most [`OAuthConfig::max_step_ups`]
//!   times per request.
//!
//! Every document and token fetch is bounded in time and size, goes over https
//! unless the host is on loopback, and follows no redirect. Tokens, secrets and
//! keys never reach a log or a `Debug` output.
//!
//! The hook is [`Authorizer`], which every HTTP client of the crate asks
//! before each request (see [`crate::ClientConfigBuilder::authorizer`]).

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::error::ClientError;

/// A JWS algorithm (`ES256`, `RS256`, `PS256`, `EdDSA`, …; parse with
/// `str::parse`), as `jsonwebtoken` names it.
pub use jsonwebtoken::Algorithm as SigningAlgorithm;

/// `grant_type` of the client credentials grant.
pub const GRANT_CLIENT_CREDENTIALS: &str = "client_credentials";
/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1).
pub const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `client_assertion_type` of `private_key_jwt` (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE_JWT: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Something that authorizes the HTTP requests of a client: asked for the
/// `Authorization` value before each request, told about 401 and 403
/// `insufficient_scope` answers. [`OAuthClient`] is the implementation this
/// crate ships; an embedder may plug in their own.
#[async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The `Authorization` header value for a request to `url`, or `None` to
    /// send the request without one (nothing known yet: the server's 401
    /// tells where to get a token).
    async fn authorization(&self, url: &Url) -> Result<Option<String>, ClientError>;

    /// The request to `url` was answered 401 with `challenge`. `Ok(true)`: a
    /// new token is ready and the request is sent once more (only once per
    /// request); `Ok(false)`: the 401 stands.
    async fn unauthorized(&self, url: &Url, challenge: &Challenge) -> Result<bool, ClientError>;

    /// The request to `url` was answered 403 with `error="insufficient_scope"`.
    /// `Ok(true)`: a token with more scopes is ready and the request is sent
    /// again; `Ok(false)`: the 403 stands.
    async fn insufficient_scope(
        &self,
        url: &Url,
        challenge: &Challenge,
    ) -> Result<bool, ClientError>;

    /// How many 403 step-ups one request may make.
    fn max_step_ups(&self) -> u32;
}

/// A `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `scope`, split on spaces.
    pub scope: Vec<String>,
    /// `resource_metadata`: where the RFC 9728 metadata is.
    pub resource_metadata: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among the `WWW-Authenticate` headers (an empty one
    /// when there is none).
    pub fn from_headers(headers: &reqwest::header::HeaderMap) -> Self {
        headers
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(Self::parse)
            .unwrap_or_default()
    }

    /// Parses one `WWW-Authenticate` value; `None` if it holds no Bearer
    /// challenge. Parameters are `name=token` or `name="quoted \" string"`.
    pub fn parse(value: &str) -> Option<Self> {
        let params = bearer_params(value)?;
        let mut c = Self::default();
        for (k, v) in params {
            match k.to_ascii_lowercase().as_str() {
                "error" => c.error = Some(v),
                "scope" => c.scope = v.split_whitespace().map(str::to_string).collect(),
                "resource_metadata" => c.resource_metadata = Some(v),
                "error_description" => c.error_description = Some(v),
                _ => {}
            }
        }
        Some(c)
    }

    /// Whether this is RFC 6750's `insufficient_scope`.
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The auth-params of the `Bearer` challenge in a `WWW-Authenticate` value.
fn bearer_params(value: &str) -> Option<Vec<(String, String)>> {
    let b = value.as_bytes();
    let mut i = 0;
    let mut in_bearer = false;
    let mut found = false;
    let mut out = Vec::new();
    let is_tchar = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&c);
    while i < b.len() {
        while i < b.len() && (b[i] == b' ' || b[i] == b',' || b[i] == b'\t') {
            i += 1;
        }
        let start = i;
        while i < b.len() && is_tchar(b[i]) {
            i += 1;
        }
        if start == i {
            // Not a token: skip the character.
            i += 1;
            continue;
        }
        let name = &value[start..i];
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' && !(j + 1 < b.len() && b[j + 1] == b'=' && name.is_empty())
        {
            // name=value
            j += 1;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            let mut v = String::new();
            if j < b.len() && b[j] == b'"' {
                j += 1;
                while j < b.len() && b[j] != b'"' {
                    if b[j] == b'\\' && j + 1 < b.len() {
                        j += 1;
                    }
                    let ch_len = utf8_len(b[j]);
                    v.push_str(value.get(j..j + ch_len).unwrap_or(""));
                    j += ch_len;
                }
                j += 1;
            } else {
                let s = j;
                while j < b.len() && b[j] != b',' && b[j] != b' ' {
                    j += 1;
                }
                v.push_str(&value[s..j]);
            }
            if in_bearer {
                out.push((name.to_string(), v));
            }
            i = j;
        } else {
            // A scheme name (or a token68, which Bearer challenges do not use).
            in_bearer = name.eq_ignore_ascii_case("bearer");
            found |= in_bearer;
            i = j;
        }
    }
    found.then_some(out)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xff => 4,
        _ => 1,
    }
}

/// A secret that never shows in `Debug` output or logs.
#[derive(Clone)]
pub struct Secret(Arc<[u8]>);

impl Secret {
    /// Wraps the bytes of a secret.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Arc::from(bytes.into()))
    }

    /// Reads a secret from a file; one trailing newline (`\n` or `\r\n`) is
    /// dropped, as files written by `echo` or by secret mounts have one.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ClientError> {
        let mut bytes = std::fs::read(path)
            .map_err(|e| ClientError::Config(format!("cannot read {}: {e}", path.display())))?;
        if bytes.ends_with(b"\n") {
            bytes.pop();
            if bytes.ends_with(b"\r") {
                bytes.pop();
            }
        }
        Ok(Self::new(bytes))
    }

    /// The bytes.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    fn expose_str(&self) -> Result<&str, ClientError> {
        std::str::from_utf8(&self.0)
            .map_err(|_| ClientError::Config("a client secret must be UTF-8".into()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self::new(s.as_bytes().to_vec())
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self::new(s.into_bytes())
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ClientAuth {
    /// None (a public client): `client_id` in the body.
    None,
    /// A client secret, `client_secret_basic` or `client_secret_post`; with
    /// `method: None` the first the authorization server's metadata lists
    /// (basic when it lists neither, as RFC 8414 defaults).
    Secret {
        /// The secret.
        secret: Secret,
        /// The method, or `None` to follow the metadata.
        method: Option<SecretMethod>,
    },
    /// `private_key_jwt` (RFC 7523 §2.2): a JWT signed with this key.
    PrivateKeyJwt {
        /// The private key, PEM (PKCS#8 EC or Ed25519, PKCS#1 or PKCS#8 RSA).
        key_pem: Secret,
        /// The JWS algorithm (e.g. `ES256`, `RS256`, `PS256`, `EdDSA`).
        algorithm: jsonwebtoken::Algorithm,
        /// `kid` of the JWS header, if the server wants one.
        key_id: Option<String>,
    },
}

/// The two ways of sending a client secret (RFC 6749 §2.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretMethod {
    /// HTTP Basic with the form-encoded id and secret.
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Post,
}

impl SecretMethod {
    /// The RFC 8414 name (`client_secret_basic`, `client_secret_post`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Basic => "client_secret_basic",
            Self::Post => "client_secret_post",
        }
    }
}

/// The grant the client uses.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Grant {
    /// The client credentials grant.
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523 §2.1) with an assertion read anew for
    /// each token request.
    JwtBearer(AssertionSource),
}

/// Where a JWT bearer assertion comes from.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AssertionSource {
    /// A file read on every token request (a mounted, rotated workload token).
    File(PathBuf),
    /// A fixed assertion.
    Value(Secret),
}

impl AssertionSource {
    fn read(&self) -> Result<String, ClientError> {
        let s = match self {
            Self::File(p) => Secret::from_file(p)?,
            Self::Value(s) => s.clone(),
        };
        let s = s.expose_str()?.trim().to_string();
        if s.is_empty() {
            return Err(ClientError::Auth(
                "the JWT bearer assertion is empty".into(),
            ));
        }
        Ok(s)
    }
}

/// Where the authorization server is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizationServer {
    /// Discovered from the protected resource (MCP): the 401's
    /// `resource_metadata`, else the RFC 9728 well-known URIs of the URL.
    #[default]
    Discover,
    /// This issuer: its RFC 8414 / OpenID Connect metadata is fetched and its
    /// `issuer` checked.
    Issuer(String),
    /// The metadata document at this URL (an A2A card's
    /// `oauth2_metadata_url` or `open_id_connect_url`); when the URL is a
    /// well-known one, the `issuer` must be the URL it was derived from.
    MetadataUrl(String),
    /// This token endpoint, without metadata.
    TokenEndpoint(String),
}

/// The settings of an [`OAuthClient`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The client id (`None` only with [`ClientAuth::None`] and a JWT bearer
    /// grant whose server does not need one).
    pub client_id: Option<String>,
    /// How the client authenticates at the token endpoint.
    pub auth: ClientAuth,
    /// The grant.
    pub grant: Grant,
    /// The scopes asked for on every token request (besides those a
    /// challenge adds). Empty: the 401's `scope`, else the resource's
    /// `scopes_supported`, else none.
    pub scopes: Vec<String>,
    /// When set, the only scopes a challenge may add: a step-up to any other
    /// scope is not made (the 403 stands).
    pub allowed_scopes: Option<Vec<String>>,
    /// The `resource` sent (RFC 8707). `None`: the protected resource's own
    /// identifier (its metadata's `resource`, else the URL the request went
    /// to, canonical: lower-case scheme and host, no fragment, no query).
    pub resource: Option<String>,
    /// Where the authorization server is.
    pub authorization_server: AuthorizationServer,
    /// 403 step-ups per request (default 2, so at most three tokens are asked
    /// for on behalf of one request).
    pub max_step_ups: u32,
    /// Time limit of each metadata or token fetch (default 10 s).
    pub fetch_timeout: Duration,
    /// Largest metadata document or token response read (default 64 KiB).
    pub max_document_bytes: usize,
    /// A token is renewed this long before it expires (default 30 s; at most a
    /// fifth of its lifetime).
    pub renew_before: Duration,
    /// Certificates (PEM) trusted besides the built-in and system roots.
    pub root_certificates_pem: Vec<Vec<u8>>,
}

impl OAuthConfig {
    /// A client credentials client with this id and authentication, the
    /// authorization server discovered.
    pub fn client_credentials(client_id: impl Into<String>, auth: ClientAuth) -> Self {
        Self::new(Some(client_id.into()), auth, Grant::ClientCredentials)
    }

    /// A JWT bearer client (workload identity), public unless `auth` says
    /// otherwise.
    pub fn jwt_bearer(client_id: Option<String>, assertion: AssertionSource) -> Self {
        Self::new(client_id, ClientAuth::None, Grant::JwtBearer(assertion))
    }

    fn new(client_id: Option<String>, auth: ClientAuth, grant: Grant) -> Self {
        Self {
            client_id,
            auth,
            grant,
            scopes: Vec::new(),
            allowed_scopes: None,
            resource: None,
            authorization_server: AuthorizationServer::Discover,
            max_step_ups: 2,
            fetch_timeout: Duration::from_secs(10),
            max_document_bytes: 64 * 1024,
            renew_before: Duration::from_secs(30),
            root_certificates_pem: Vec::new(),
        }
    }

    /// The client authentication.
    pub fn with_auth(mut self, auth: ClientAuth) -> Self {
        self.auth = auth;
        self
    }

    /// The scopes asked for.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The only scopes a step-up may add.
    pub fn with_allowed_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// The `resource` sent.
    pub fn with_resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Where the authorization server is.
    pub fn with_authorization_server(mut self, server: AuthorizationServer) -> Self {
        self.authorization_server = server;
        self
    }

    /// Step-ups per request.
    pub fn with_max_step_ups(mut self, n: u32) -> Self {
        self.max_step_ups = n;
        self
    }

    /// Time limit of each fetch.
    pub fn with_fetch_timeout(mut self, d: Duration) -> Self {
        self.fetch_timeout = d;
        self
    }

    /// Renewal margin.
    pub fn with_renew_before(mut self, d: Duration) -> Self {
        self.renew_before = d;
        self
    }

    /// Trusts these certificates (PEM) for the metadata and token fetches.
    pub fn with_root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates_pem.push(pem.into());
        self
    }
}

/// What is known about the authorization server.
#[derive(Clone, Debug)]
struct Server {
    issuer: Option<String>,
    token_endpoint: Url,
    auth_methods: Vec<String>,
    /// `scopes_supported` of the protected resource.
    resource_scopes: Vec<String>,
}

/// An access token and when to renew it.
#[derive(Clone)]
struct Token {
    value: String,
    renew_at: Option<tokio::time::Instant>,
    /// The scopes it was granted (the response's `scope`, else those asked).
    granted: BTreeSet<String>,
}

#[derive(Default)]
struct State {
    /// Where the authorization server is, when learnt after the start (an
    /// A2A card's security scheme); else the configured source.
    source: Option<AuthorizationServer>,
    server: Option<Server>,
    resource: Option<String>,
    token: Option<Token>,
    /// The scopes asked for: the configured ones, plus challenges.
    scopes: BTreeSet<String>,
    /// Token requests made (for tests and metrics).
    token_requests: u64,
}

/// The outbound OAuth client of one upstream. Cheap to clone (shared state).
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    http: reqwest::Client,
    state: Mutex<State>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.inner.config.client_id)
            .field("auth", &self.inner.config.auth)
            .field("grant", &self.inner.config.grant)
            .field(
                "authorization_server",
                &self.inner.config.authorization_server,
            )
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client with these settings; nothing is fetched yet.
    pub fn new(config: OAuthConfig) -> Result<Self, ClientError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.fetch_timeout)
            .timeout(config.fetch_timeout);
        for pem in &config.root_certificates_pem {
            for c in reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ClientError::Config(format!("root certificate: {e}")))?
            {
                builder = builder.add_root_certificate(c);
            }
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Config(e.to_string()))?;
        if let ClientAuth::PrivateKeyJwt {
            key_pem, algorithm, ..
        } = &config.auth
        {
            encoding_key(key_pem, *algorithm)?;
        }
        let state = State {
            scopes: config.scopes.iter().cloned().collect(),
            resource: config.resource.clone(),
            ..State::default()
        };
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                state: Mutex::new(state),
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.inner.config
    }

    /// How many token requests this client has made.
    pub async fn token_requests(&self) -> u64 {
        self.inner.state.lock().await.token_requests
    }

    /// Drops the cached token (the next request gets a new one).
    pub async fn forget_token(&self) {
        self.inner.state.lock().await.token = None;
    }

    /// A valid access token for a request to `url`, obtained or renewed as
    /// needed; `Ok(None)` when the authorization server is still unknown (a
    /// discovering client waits for the resource's 401).
    pub async fn access_token(&self, url: &Url) -> Result<Option<String>, ClientError> {
        let mut st = self.inner.state.lock().await;
        if let Some(t) = &st.token {
            if t.renew_at.is_none_or(|at| tokio::time::Instant::now() < at) {
                return Ok(Some(t.value.clone()));
            }
        }
        if st.server.is_none() {
            let source = self.source(&st);
            if matches!(source, AuthorizationServer::Discover) {
                // Renewal of an expiring token needs no discovery: the server
                // is known once a token was had. Nothing known: wait for 401.
                return Ok(None);
            }
            let server = self.configured_server(&source).await?;
            st.server = Some(server);
        }
        if st.resource.is_none() {
            st.resource = Some(canonical_resource(url)?);
        }
        self.fetch_token(&mut st).await.map(Some)
    }

    /// Uses `server` as the authorization server's source when the
    /// configuration leaves it to discovery and none is known yet (the bridge
    /// passes the security scheme of an A2A upstream's card). Whether it was
    /// taken.
    pub async fn adopt_authorization_server(&self, server: AuthorizationServer) -> bool {
        let mut st = self.inner.state.lock().await;
        let open = matches!(
            self.inner.config.authorization_server,
            AuthorizationServer::Discover
        ) && st.source.is_none()
            && st.server.is_none();
        if open {
            st.source = Some(server);
        }
        open
    }

    fn source(&self, st: &State) -> AuthorizationServer {
        st.source
            .clone()
            .unwrap_or_else(|| self.inner.config.authorization_server.clone())
    }

    /// The server a configured [`AuthorizationServer`] names.
    async fn configured_server(&self, source: &AuthorizationServer) -> Result<Server, ClientError> {
        match source {
            AuthorizationServer::Discover => Err(ClientError::Auth(
                "the authorization server is not known yet".into(),
            )),
            AuthorizationServer::Issuer(issuer) => self.server_metadata(issuer).await,
            AuthorizationServer::MetadataUrl(url) => {
                let u = parse_fetchable(url)?;
                let doc = self.fetch_json(&u).await?;
                let expected = issuer_of_well_known(&u);
                server_from_metadata(&doc, expected.as_deref(), &u)
            }
            AuthorizationServer::TokenEndpoint(url) => Ok(Server {
                issuer: None,
                token_endpoint: parse_fetchable(url)?,
                auth_methods: Vec::new(),
                resource_scopes: Vec::new(),
            }),
        }
    }

    /// Discovery from a 401: the protected resource metadata, then the
    /// authorization server's.
    async fn discover(
        &self,
        st: &mut State,
        url: &Url,
        challenge: &Challenge,
    ) -> Result<(), ClientError> {
        let candidates: Vec<Url> = match &challenge.resource_metadata {
            Some(u) => vec![parse_fetchable(u)?],
            None => well_known_resource_metadata(url),
        };
        let mut prm = None;
        let mut last = String::from("no protected resource metadata URL");
        for u in candidates {
            match self.fetch_json(&u).await {
                Ok(doc) => {
                    prm = Some(doc);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let prm = prm.ok_or_else(|| {
            ClientError::Auth(format!("protected resource metadata not found: {last}"))
        })?;
        let resource = prm.get("resource").and_then(Value::as_str).ok_or_else(|| {
            ClientError::Auth("protected resource metadata without `resource`".into())
        })?;
        if !resource_allowed(resource, url) {
            return Err(ClientError::Auth(format!(
                "protected resource metadata names resource {resource:?}, not {url:?} (RFC 9728 §3.3)",
                url = canonical_resource(url).unwrap_or_default()
            )));
        }
        let issuer = prm
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find_map(Value::as_str))
            .ok_or_else(|| {
                ClientError::Auth(
                    "protected resource metadata names no authorization server".into(),
                )
            })?
            .to_string();
        let mut server = match self.source(st) {
            AuthorizationServer::Discover => self.server_metadata(&issuer).await?,
            other => self.configured_server(&other).await?,
        };
        server.resource_scopes = prm
            .get("scopes_supported")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if self.inner.config.resource.is_none() {
            st.resource = Some(resource.to_string());
        }
        st.server = Some(server);
        Ok(())
    }

    /// The RFC 8414 / OpenID Connect metadata of `issuer`, tried at the
    /// well-known URIs in the order MCP gives, its `issuer` checked.
    async fn server_metadata(&self, issuer: &str) -> Result<Server, ClientError> {
        let base = parse_fetchable(issuer)?;
        let mut last = String::new();
        for u in well_known_server_metadata(&base) {
            match self.fetch_json(&u).await {
                Ok(doc) => return server_from_metadata(&doc, Some(issuer), &u),
                Err(ClientError::Http { status, .. }) if (400..500).contains(&status) => {
                    last = format!("{u}: HTTP {status}");
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClientError::Auth(format!(
            "no authorization server metadata for issuer {issuer} ({last})"
        )))
    }

    /// GETs a JSON document, bounded.
    async fn fetch_json(&self, url: &Url) -> Result<Value, ClientError> {
        check_fetchable(url)?;
        let resp = self
            .inner
            .http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await?;
        let raw =
            crate::http::RawResponse::read_limited(resp, self.inner.config.max_document_bytes)
                .await?;
        if !(200..300).contains(&raw.status) {
            return Err(crate::http::http_error(&raw));
        }
        let v = raw.json()?;
        if !v.is_object() {
            return Err(ClientError::Auth(format!("{url}: not a JSON object")));
        }
        Ok(v)
    }

    /// Asks the token endpoint for a token with `st.scopes`, and caches it.
    async fn fetch_token(&self, st: &mut State) -> Result<String, ClientError> {
        let cfg = &self.inner.config;
        let server = st
            .server
            .clone()
            .ok_or_else(|| ClientError::Auth("no authorization server".into()))?;
        check_fetchable(&server.token_endpoint)?;
        let mut form: Vec<(&str, String)> = Vec::new();
        match &cfg.grant {
            Grant::ClientCredentials => form.push(("grant_type", GRANT_CLIENT_CREDENTIALS.into())),
            Grant::JwtBearer(src) => {
                form.push(("grant_type", GRANT_JWT_BEARER.into()));
                form.push(("assertion", src.read()?));
            }
        }
        if !st.scopes.is_empty() {
            form.push(("scope", join(&st.scopes)));
        }
        if let Some(r) = &st.resource {
            form.push(("resource", r.clone()));
        }
        let mut rb = self
            .inner
            .http
            .post(server.token_endpoint.clone())
            .header(reqwest::header::ACCEPT, "application/json");
        match &cfg.auth {
            ClientAuth::None => {
                if let Some(id) = &cfg.client_id {
                    form.push(("client_id", id.clone()));
                }
            }
            ClientAuth::Secret { secret, method } => {
                let id = cfg.client_id.as_deref().ok_or_else(|| {
                    ClientError::Config("a client secret needs a client id".into())
                })?;
                let method = method.unwrap_or_else(|| choose_secret_method(&server.auth_methods));
                match method {
                    SecretMethod::Basic => {
                        let pair =
                            format!("{}:{}", form_encode(id), form_encode(secret.expose_str()?));
                        let mut v = reqwest::header::HeaderValue::from_str(&format!(
                            "Basic {}",
                            base64::engine::general_purpose::STANDARD.encode(pair)
                        ))
                        .map_err(|_| ClientError::Config("client credentials".into()))?;
                        v.set_sensitive(true);
                        rb = rb.header(reqwest::header::AUTHORIZATION, v);
                    }
                    SecretMethod::Post => {
                        form.push(("client_id", id.to_string()));
                        form.push(("client_secret", secret.expose_str()?.to_string()));
                    }
                }
            }
            ClientAuth::PrivateKeyJwt {
                key_pem,
                algorithm,
                key_id,
            } => {
                let id = cfg.client_id.as_deref().ok_or_else(|| {
                    ClientError::Config("private_key_jwt needs a client id".into())
                })?;
                let audience = server
                    .issuer
                    .clone()
                    .unwrap_or_else(|| server.token_endpoint.to_string());
                let assertion =
                    client_assertion(id, &audience, key_pem, *algorithm, key_id.as_deref())?;
                form.push(("client_id", id.to_string()));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE_JWT.into()));
                form.push(("client_assertion", assertion));
            }
        }
        st.token_requests += 1;
        let resp = rb.form(&form).send().await?;
        let raw = crate::http::RawResponse::read_limited(resp, cfg.max_document_bytes).await?;
        let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
        if !(200..300).contains(&raw.status) {
            let err = body.get("error").and_then(Value::as_str).unwrap_or("");
            let desc = body
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(ClientError::Auth(format!(
                "token endpoint answered HTTP {}: {} {}",
                raw.status,
                crate::error::snippet(err.as_bytes()),
                crate::error::snippet(desc.as_bytes())
            )));
        }
        let tr: TokenResponse = serde_json::from_value(body)
            .map_err(|e| ClientError::Auth(format!("token endpoint: not a token response: {e}")))?;
        if !tr.token_type.eq_ignore_ascii_case("bearer") {
            return Err(ClientError::Auth(format!(
                "token endpoint issued a {:?} token; only Bearer is supported",
                tr.token_type
            )));
        }
        if tr.access_token.is_empty() || !tr.access_token.bytes().all(|b| (0x21..0x7f).contains(&b))
        {
            return Err(ClientError::Auth(
                "token endpoint issued an access token that is not a header value".into(),
            ));
        }
        let renew_at = tr.expires_in.map(|secs| {
            let life = Duration::from_secs(secs);
            let margin = cfg.renew_before.min(life / 5);
            crate::config::after(life.saturating_sub(margin))
        });
        let granted = match &tr.scope {
            Some(s) => s.split_whitespace().map(str::to_string).collect(),
            None => st.scopes.clone(),
        };
        st.token = Some(Token {
            value: tr.access_token.clone(),
            renew_at,
            granted,
        });
        Ok(tr.access_token)
    }
}

#[async_trait]
impl Authorizer for OAuthClient {
    async fn authorization(&self, url: &Url) -> Result<Option<String>, ClientError> {
        Ok(self.access_token(url).await?.map(|t| format!("Bearer {t}")))
    }

    async fn unauthorized(&self, url: &Url, challenge: &Challenge) -> Result<bool, ClientError> {
        let mut st = self.inner.state.lock().await;
        st.token = None;
        if st.server.is_none() {
            match self.source(&st) {
                AuthorizationServer::Discover => self.discover(&mut st, url, challenge).await?,
                other => {
                    let s = self.configured_server(&other).await?;
                    st.server = Some(s);
                }
            }
        }
        if st.resource.is_none() {
            st.resource = Some(canonical_resource(url)?);
        }
        // The scopes: configured ∪ challenged (within the allowed ones);
        // with neither, the resource's scopes_supported.
        let challenged = self.permitted(&challenge.scope);
        st.scopes.extend(challenged);
        if st.scopes.is_empty() {
            let supported = st
                .server
                .as_ref()
                .map(|s| s.resource_scopes.clone())
                .unwrap_or_default();
            st.scopes.extend(self.permitted(&supported));
        }
        self.fetch_token(&mut st).await?;
        Ok(true)
    }

    async fn insufficient_scope(
        &self,
        _url: &Url,
        challenge: &Challenge,
    ) -> Result<bool, ClientError> {
        let mut st = self.inner.state.lock().await;
        if st.server.is_none() || challenge.scope.is_empty() {
            return Ok(false);
        }
        let wanted: BTreeSet<String> = challenge.scope.iter().cloned().collect();
        let permitted: BTreeSet<String> = self.permitted(&challenge.scope).into_iter().collect();
        if permitted != wanted {
            tracing::debug!("oauth: a step-up to scopes outside the allowed ones is not made");
            return Ok(false);
        }
        if let Some(t) = &st.token {
            if wanted.is_subset(&t.granted) {
                // The token holds them already: a new one would not help.
                return Ok(false);
            }
        }
        st.scopes.extend(wanted);
        st.token = None;
        self.fetch_token(&mut st).await?;
        Ok(true)
    }

    fn max_step_ups(&self) -> u32 {
        self.inner.config.max_step_ups
    }
}

impl OAuthClient {
    /// The scopes of `scopes` that [`OAuthConfig::allowed_scopes`] permits.
    fn permitted(&self, scopes: &[String]) -> Vec<String> {
        match &self.inner.config.allowed_scopes {
            None => scopes.to_vec(),
            Some(allowed) => scopes
                .iter()
                .filter(|s| allowed.contains(s))
                .cloned()
                .collect(),
        }
    }
}

/// The authorization server an A2A agent card names for a client without a
/// user: the first OAuth 2.0 scheme's `oauth2_metadata_url` (else its client
/// credentials flow's `token_url`), else the first OpenID Connect scheme's
/// `open_id_connect_url`. `None` when the card declares neither.
pub fn authorization_server_of_card(
    card: &crate::a2a::pb::AgentCard,
) -> Option<AuthorizationServer> {
    use crate::a2a::pb::{o_auth_flows::Flow, security_scheme::Scheme};
    let mut names: Vec<&String> = card.security_schemes.keys().collect();
    names.sort();
    let schemes: Vec<&Scheme> = names
        .iter()
        .filter_map(|n| card.security_schemes.get(*n))
        .filter_map(|s| s.scheme.as_ref())
        .collect();
    for s in &schemes {
        if let Scheme::Oauth2SecurityScheme(o) = s {
            if !o.oauth2_metadata_url.is_empty() {
                return Some(AuthorizationServer::MetadataUrl(
                    o.oauth2_metadata_url.clone(),
                ));
            }
            if let Some(Flow::ClientCredentials(cc)) =
                o.flows.as_ref().and_then(|f| f.flow.as_ref())
            {
                if !cc.token_url.is_empty() {
                    return Some(AuthorizationServer::TokenEndpoint(cc.token_url.clone()));
                }
            }
        }
    }
    schemes.iter().find_map(|s| match s {
        Scheme::OpenIdConnectSecurityScheme(o) if !o.open_id_connect_url.is_empty() => Some(
            AuthorizationServer::MetadataUrl(o.open_id_connect_url.clone()),
        ),
        _ => None,
    })
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().map(String::as_str).collect::<Vec<_>>().join(" ")
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 §2.3.1 wants
/// the id and secret encoded so before Basic).
fn form_encode(s: &str) -> String {
    serde_urlencoded::to_string([("", s)])
        .map(|e| e.trim_start_matches('=').to_string())
        .unwrap_or_default()
}

/// basic unless the server lists only post (RFC 8414's default is basic).
fn choose_secret_method(supported: &[String]) -> SecretMethod {
    let has = |m: &str| supported.iter().any(|s| s == m);
    if has("client_secret_basic") || !has("client_secret_post") {
        SecretMethod::Basic
    } else {
        SecretMethod::Post
    }
}

fn encoding_key(
    pem: &Secret,
    alg: jsonwebtoken::Algorithm,
) -> Result<jsonwebtoken::EncodingKey, ClientError> {
    use jsonwebtoken::Algorithm as A;
    let pem = pem.expose();
    let key = match alg {
        A::ES256 | A::ES384 => jsonwebtoken::EncodingKey::from_ec_pem(pem),
        A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => {
            jsonwebtoken::EncodingKey::from_rsa_pem(pem)
        }
        A::EdDSA => jsonwebtoken::EncodingKey::from_ed_pem(pem),
        A::HS256 | A::HS384 | A::HS512 => {
            return Err(ClientError::Config(
                "private_key_jwt takes an asymmetric algorithm, not an HMAC".into(),
            ))
        }
    };
    key.map_err(|e| ClientError::Config(format!("private_key_jwt key: {e}")))
}

/// A `private_key_jwt` client assertion (RFC 7523 §3): `iss` = `sub` = the
/// client id, `aud`, `iat`, `exp` one minute on, a random `jti`.
fn client_assertion(
    client_id: &str,
    audience: &str,
    key_pem: &Secret,
    alg: jsonwebtoken::Algorithm,
    kid: Option<&str>,
) -> Result<String, ClientError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| ClientError::Config(format!("random: {e}")))?;
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 60,
        "jti": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jti),
    });
    let mut header = jsonwebtoken::Header::new(alg);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, &claims, &encoding_key(key_pem, alg)?)
        .map_err(|e| ClientError::Config(format!("signing the client assertion: {e}")))
}

/// `url` parsed and allowed to be fetched ([`check_fetchable`]).
fn parse_fetchable(url: &str) -> Result<Url, ClientError> {
    let u = Url::parse(url).map_err(|e| ClientError::Auth(format!("bad URL {url:?}: {e}")))?;
    check_fetchable(&u)?;
    Ok(u)
}

/// https, or http to a loopback host.
pub fn check_fetchable(url: &Url) -> Result<(), ClientError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        _ => Err(ClientError::Auth(format!(
            "{url}: authorization documents and tokens are fetched over https only (http only on loopback)"
        ))),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// The canonical resource identifier of a URL (MCP: lower-case scheme and
/// host, no fragment; the query dropped; no trailing slash on an empty path).
pub fn canonical_resource(url: &Url) -> Result<String, ClientError> {
    let mut u = url.clone();
    u.set_fragment(None);
    u.set_query(None);
    let s = u.to_string();
    Ok(if u.path() == "/" {
        s.trim_end_matches('/').to_string()
    } else {
        s
    })
}

/// Whether the metadata's `resource` may stand for `url`: the same origin and
/// a path that is `url`'s or one of its parents (segment-wise), as the MCP
/// SDKs accept when the metadata sits at the origin's root.
fn resource_allowed(resource: &str, url: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some() || r.origin() != url.origin() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let up = url.path().trim_end_matches('/');
    up == rp || up.starts_with(&format!("{rp}/"))
}

/// RFC 9728 §3.1 well-known URIs of a resource: path-inserted, then the root.
fn well_known_resource_metadata(url: &Url) -> Vec<Url> {
    let mut out = Vec::new();
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    if !path.is_empty() {
        if let Ok(u) = Url::parse(&format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        )) {
            out.push(u);
        }
    }
    if let Ok(u) = Url::parse(&format!("{origin}/.well-known/oauth-protected-resource")) {
        out.push(u);
    }
    out
}

/// The metadata URLs of an issuer in the order MCP's authorization spec
/// gives: RFC 8414 path-inserted, OpenID Connect path-inserted, OpenID
/// Connect path-appended (for an issuer without a path: RFC 8414, then OIDC).
fn well_known_server_metadata(issuer: &Url) -> Vec<Url> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    let list = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    list.iter().filter_map(|s| Url::parse(s).ok()).collect()
}

/// The issuer a well-known metadata URL was built from (`None` for a URL of
/// another shape).
fn issuer_of_well_known(u: &Url) -> Option<String> {
    let origin = u.origin().ascii_serialization();
    let path = u.path();
    for wk in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        if let Some(rest) = path.strip_prefix(wk) {
            return Some(format!("{origin}{rest}"));
        }
        if let Some(prefix) = path.strip_suffix(wk) {
            return Some(format!("{origin}{prefix}"));
        }
    }
    None
}

/// The token endpoint and methods of a metadata document, its `issuer`
/// checked against `expected` (RFC 8414 §3.3, OpenID Connect Discovery §4.3:
/// identical).
fn server_from_metadata(
    doc: &Value,
    expected: Option<&str>,
    fetched: &Url,
) -> Result<Server, ClientError> {
    let issuer = doc.get("issuer").and_then(Value::as_str);
    if let Some(expected) = expected {
        if issuer != Some(expected) {
            return Err(ClientError::Auth(format!(
                "authorization server metadata at {fetched} names issuer {issuer:?}, not {expected:?} (RFC 8414 §3.3)"
            )));
        }
    }
    let token_endpoint = doc
        .get("token_endpoint")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ClientError::Auth(format!("{fetched}: metadata without a token_endpoint"))
        })?;
    let auth_methods = doc
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Server {
        issuer: issuer.map(str::to_string),
        token_endpoint: parse_fetchable(token_endpoint)?,
        auth_methods,
        resource_scopes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" text""#,
        )
        .expect("bearer");
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope, vec!["mcp:basic", "mcp:write"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.error_description.as_deref(), Some(r#"a "quoted" text"#));
        // Another scheme first, and token values.
        let c = Challenge::parse(r#"Basic realm="x", Bearer error=invalid_token, scope="a""#)
            .expect("bearer");
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope, vec!["a"]);
        assert!(Challenge::parse(r#"Basic realm="x""#).is_none());
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
        // Hostile input does not panic.
        for s in [
            "Bearer a=\"",
            "Bearer =",
            "Bearer a=\"\\",
            "Bearer é=\"ü\"",
            ",,,",
        ] {
            let _ = Challenge::parse(s);
        }
    }

    #[test]
    fn well_known_uris() {
        let u = Url::parse("https://H.example/mcp?x=1#f").expect("url");
        assert_eq!(canonical_resource(&u).expect("c"), "https://h.example/mcp");
        let root = Url::parse("https://h.example/").expect("url");
        assert_eq!(canonical_resource(&root).expect("c"), "https://h.example");
        let prm: Vec<String> = well_known_resource_metadata(&u)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            prm,
            [
                "https://h.example/.well-known/oauth-protected-resource/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        let iss = Url::parse("https://as.example/realms/r").expect("url");
        let md: Vec<String> = well_known_server_metadata(&iss)
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            md,
            [
                "https://as.example/.well-known/oauth-authorization-server/realms/r",
                "https://as.example/.well-known/openid-configuration/realms/r",
                "https://as.example/realms/r/.well-known/openid-configuration"
            ]
        );
        for m in well_known_server_metadata(&iss) {
            assert_eq!(
                issuer_of_well_known(&m).as_deref(),
                Some("https://as.example/realms/r")
            );
        }
    }

    #[test]
    fn resources_and_schemes() {
        let u = Url::parse("http://localhost:9/mcp").expect("url");
        assert!(resource_allowed("http://localhost:9/mcp", &u));
        assert!(resource_allowed("http://localhost:9", &u));
        assert!(resource_allowed("http://localhost:9/", &u));
        assert!(!resource_allowed("https://evil.example.com/mcp", &u));
        assert!(!resource_allowed("http://localhost:9/mc", &u));
        assert!(!resource_allowed("http://localhost:9/mcp/sub", &u));
        assert!(check_fetchable(&u).is_ok());
        assert!(check_fetchable(&Url::parse("http://127.0.0.2/x").expect("u")).is_ok());
        assert!(check_fetchable(&Url::parse("http://[::1]/x").expect("u")).is_ok());
        assert!(check_fetchable(&Url::parse("http://example.com/x").expect("u")).is_err());
        assert!(check_fetchable(&Url::parse("file:///etc/passwd").expect("u")).is_err());
        assert_eq!(form_encode("a b:c"), "a+b%3Ac");
        assert_eq!(choose_secret_method(&[]), SecretMethod::Basic);
        assert_eq!(
            choose_secret_method(&["client_secret_post".into()]),
            SecretMethod::Post
        );
    }

    #[test]
    fn secrets_do_not_show() {
        let s = Secret::from("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        let cfg = OAuthConfig::client_credentials(
            "c",
            ClientAuth::Secret {
                secret: s,
                method: None,
            },
        );
        assert!(!format!("{cfg:?}").contains("hunter2"));
    }
}
