//! JWT access tokens from an OpenID Connect / OAuth 2.0 issuer.
//!
//! At start, [`JwtAuthenticator::discover`] reads the issuer's metadata (RFC
//! 8414, then OpenID Connect Discovery; its `issuer` must equal the configured
//! one) and its JSON Web Key Set. A token is then checked without I/O:
//!
//! - its size (at most [`JwtConfig::max_token_bytes`]);
//! - its header: `alg` in the allow-list of asymmetric algorithms (never
//!   `none`, never HMAC: an HS256 token "signed" with the issuer's public key is
//!   refused before any key is touched), `typ` `at+jwt` when RFC 9068 is
//!   required, `kid` naming a key of the set whose type fits the algorithm (and
//!   whose own `alg`, if it has one, is the token's);
//! - its signature, by jsonwebtoken (ring underneath);
//! - `iss` equal to the issuer, `aud` naming one of the audiences, `exp` and
//!   `nbf` within the leeway (at most [`MAX_LEEWAY`]);
//! - the principal claim (`sub`), the tenant claim (if configured) and the
//!   scope claim (`scope`, space-separated, or an array as Okta's `scp`).
//!
//! A `kid` not in the set refetches the set at most once per
//! [`JwtConfig::jwks_min_refresh`] (all requests together), so made-up key ids
//! cannot drive fetches; the set is also refreshed in the background once older
//! than [`JwtConfig::jwks_max_age`]. An issuer that is down slows no request whose
//! key is known.

use std::collections::HashSet;
use std::str::FromStr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};
pub use jsonwebtoken::Algorithm;
use jsonwebtoken::{DecodingKey, Validation};
use reqwest::Url;
use serde_json::{Map, Value};
use taskwire_core::{Caller, Permissions};

use crate::fetch::{checked_url, metadata_urls, Fetcher};
use crate::{AuthError, Authenticator, Grant, OAuthScheme, Refusal, Scheme, Verdict};

/// The largest leeway accepted for `exp` and `nbf`.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);
/// The default tenant of a token without the tenant claim.
pub const DEFAULT_TENANT: &str = "default";

/// The asymmetric algorithms accepted by default.
pub const DEFAULT_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// How tokens are validated and what they become.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The issuer identifier (`--oauth-issuer`), compared with `iss` and the
    /// metadata's `issuer` exactly.
    pub issuer: String,
    /// Accepted `aud` values (`--oauth-audience`; the server's canonical URL and
    /// its MCP endpoint by default). At least one.
    pub audiences: Vec<String>,
    /// The allow-list of signature algorithms (asymmetric only).
    pub algorithms: Vec<Algorithm>,
    /// Require the RFC 9068 header `typ: at+jwt`.
    pub require_at_jwt: bool,
    /// Leeway for `exp` and `nbf` (at most [`MAX_LEEWAY`]).
    pub leeway: Duration,
    /// The claim naming the principal.
    pub principal_claim: String,
    /// The claim naming the tenant (None: every caller is in `default`).
    pub tenant_claim: Option<String>,
    /// The claim carrying the scopes (a space-separated string or an array).
    pub scope_claim: String,
    /// The scope that grants read.
    pub read_scope: String,
    /// The scope that grants write (and read).
    pub write_scope: String,
    /// Longest accepted token, in bytes.
    pub max_token_bytes: usize,
    /// How soon an unknown `kid` may refetch the key set again.
    pub jwks_min_refresh: Duration,
    /// How old the key set may get before a background refresh.
    pub jwks_max_age: Duration,
    /// Timeout of each metadata or key-set fetch.
    pub fetch_timeout: Duration,
    /// Largest metadata or key-set document, in bytes.
    pub max_document_bytes: usize,
}

impl JwtConfig {
    /// Defaults for `issuer` and `audiences`.
    pub fn new(issuer: impl Into<String>, audiences: Vec<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audiences,
            algorithms: DEFAULT_ALGORITHMS
                .into_iter()
                .chain([Algorithm::EdDSA])
                .collect(),
            require_at_jwt: false,
            leeway: Duration::from_secs(30),
            principal_claim: "sub".into(),
            tenant_claim: None,
            scope_claim: "scope".into(),
            read_scope: "tasks:read".into(),
            write_scope: "tasks:write".into(),
            max_token_bytes: 8 * 1024,
            jwks_min_refresh: Duration::from_secs(30),
            jwks_max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(10),
            max_document_bytes: 256 * 1024,
        }
    }

    fn check(&self) -> Result<(), AuthError> {
        if self.audiences.is_empty() {
            return Err(AuthError::Config("at least one audience is needed".into()));
        }
        if self.leeway > MAX_LEEWAY {
            return Err(AuthError::Config(format!(
                "the leeway is at most {}s",
                MAX_LEEWAY.as_secs()
            )));
        }
        if self.algorithms.is_empty() {
            return Err(AuthError::Config("no signature algorithm allowed".into()));
        }
        if let Some(a) = self.algorithms.iter().find(|a| is_hmac(**a)) {
            return Err(AuthError::Config(format!(
                "{a:?} is symmetric: only asymmetric algorithms can be allowed"
            )));
        }
        Ok(())
    }
}

fn is_hmac(a: Algorithm) -> bool {
    matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// The kind of key an algorithm needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyType {
    Rsa,
    Ec,
    Okp,
}

fn key_type(a: Algorithm) -> Option<KeyType> {
    match a {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => Some(KeyType::Rsa),
        Algorithm::ES256 | Algorithm::ES384 => Some(KeyType::Ec),
        Algorithm::EdDSA => Some(KeyType::Okp),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => None,
    }
}

/// One verification key of the set.
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    kind: KeyType,
    key: DecodingKey,
}

/// The key set, as fetched.
struct KeySet {
    keys: Vec<Key>,
    fetched: Instant,
}

impl KeySet {
    /// Parses a JWKS document, keeping the asymmetric signature keys (a key it
    /// cannot use is skipped, so one odd key does not void the set).
    fn parse(doc: &Value) -> Result<Self, String> {
        let list = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("no `keys` array")?;
        let mut keys = Vec::new();
        for k in list {
            if k.get("use")
                .and_then(Value::as_str)
                .is_some_and(|u| u != "sig")
            {
                continue;
            }
            let Ok(jwk) = serde_json::from_value::<Jwk>(k.clone()) else {
                continue;
            };
            let kind = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => KeyType::Rsa,
                AlgorithmParameters::EllipticCurve(_) => KeyType::Ec,
                AlgorithmParameters::OctetKeyPair(_) => KeyType::Okp,
                // A symmetric key is never a verification key here.
                AlgorithmParameters::OctetKey(_) => continue,
            };
            let alg = match k.get("alg").and_then(Value::as_str) {
                None => None,
                Some(a) => match Algorithm::from_str(a) {
                    Ok(a) if key_type(a) == Some(kind) => Some(a),
                    _ => continue,
                },
            };
            let Ok(key) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            keys.push(Key {
                kid: k.get("kid").and_then(Value::as_str).map(str::to_string),
                alg,
                kind,
                key,
            });
        }
        Ok(Self {
            keys,
            fetched: Instant::now(),
        })
    }

    /// The key for a token's `kid` and algorithm. A token without a `kid` is
    /// matched only when exactly one key fits its algorithm.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&Key> {
        let fits = |k: &&Key| Some(k.kind) == key_type(alg) && k.alg.is_none_or(|a| a == alg);
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(fits)
                .find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut it = self.keys.iter().filter(fits);
                let one = it.next();
                if it.next().is_some() {
                    None
                } else {
                    one
                }
            }
        }
    }
}

/// The issuer's metadata this authenticator uses.
#[derive(Clone, Debug)]
struct Issuer {
    metadata_url: Url,
    /// Its OpenID Connect discovery URL, if it is an OpenID provider (its
    /// metadata came from there, or lists the `openid` scope).
    openid: Option<String>,
    jwks_uri: Url,
    token_endpoint: Option<String>,
    client_credentials: bool,
}

/// Validates JWT access tokens of one issuer (see the [module doc](self)).
#[derive(Clone)]
pub struct JwtAuthenticator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.inner.config.issuer)
            .field("audiences", &self.inner.config.audiences)
            .finish()
    }
}

struct Inner {
    config: JwtConfig,
    issuer: Issuer,
    fetcher: Fetcher,
    keys: RwLock<Arc<KeySet>>,
    /// When the key set was last fetched or a fetch was last tried.
    last_try: Mutex<Instant>,
    /// One refetch at a time.
    refetch: tokio::sync::Mutex<()>,
    /// One validation per allowed algorithm, built once (a `Validation` holds
    /// sets: cloning one per request would allocate).
    validations: Vec<(Algorithm, Validation)>,
}

impl JwtAuthenticator {
    /// Reads the issuer's metadata and key set (see the [module doc](self)).
    pub async fn discover(config: JwtConfig) -> Result<Self, AuthError> {
        config.check()?;
        let issuer_url = checked_url("issuer", &config.issuer)?;
        let fetcher = Fetcher::new(config.fetch_timeout, config.max_document_bytes)?;
        let mut tried = Vec::new();
        let mut found = None;
        for (url, openid) in metadata_urls(&issuer_url) {
            match fetcher.json(&url).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str) == Some(config.issuer.as_str()) {
                        found = Some((url, openid, doc));
                        break;
                    }
                    tried.push(format!("{url}: its `issuer` is not {:?}", config.issuer));
                }
                Err(e) => tried.push(e.to_string()),
            }
        }
        let Some((metadata_url, openid, doc)) = found else {
            return Err(AuthError::Discovery {
                issuer: config.issuer.clone(),
                tried: tried.join("; "),
            });
        };
        let jwks =
            doc.get("jwks_uri")
                .and_then(Value::as_str)
                .ok_or_else(|| AuthError::Discovery {
                    issuer: config.issuer.clone(),
                    tried: format!("{metadata_url} names no jwks_uri"),
                })?;
        let jwks_uri = checked_url("jwks_uri", jwks)?;
        let grants = doc.get("grant_types_supported").and_then(Value::as_array);
        let lists_openid = doc
            .get("scopes_supported")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|v| v.as_str() == Some("openid")));
        let openid = if openid {
            Some(metadata_url.to_string())
        } else if lists_openid {
            Some(format!(
                "{}/.well-known/openid-configuration",
                config.issuer.trim_end_matches('/')
            ))
        } else {
            None
        };
        let issuer = Issuer {
            metadata_url,
            openid,
            jwks_uri,
            token_endpoint: doc
                .get("token_endpoint")
                .and_then(Value::as_str)
                .map(str::to_string),
            client_credentials: grants
                .is_none_or(|g| g.iter().any(|v| v.as_str() == Some("client_credentials"))),
        };
        let set = fetch_keys(&fetcher, &issuer.jwks_uri).await?;
        if set.keys.is_empty() {
            tracing::warn!(jwks_uri = %issuer.jwks_uri, "the issuer's key set has no usable signature key yet");
        }
        let validations = config
            .algorithms
            .iter()
            .map(|alg| {
                let mut v = Validation::new(*alg);
                v.set_issuer(&[config.issuer.as_str()]);
                v.set_audience(&config.audiences);
                v.set_required_spec_claims(&["exp", "iss", "aud"]);
                v.leeway = config.leeway.as_secs();
                v.validate_exp = true;
                v.validate_nbf = true;
                (*alg, v)
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                issuer,
                fetcher,
                keys: RwLock::new(Arc::new(set)),
                last_try: Mutex::new(Instant::now()),
                refetch: tokio::sync::Mutex::new(()),
                validations,
            }),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &JwtConfig {
        &self.inner.config
    }

    /// The URL of the issuer's metadata document.
    pub fn metadata_url(&self) -> &str {
        self.inner.issuer.metadata_url.as_str()
    }
}

async fn fetch_keys(fetcher: &Fetcher, url: &Url) -> Result<KeySet, AuthError> {
    let doc = fetcher.json(url).await?;
    KeySet::parse(&doc).map_err(|reason| AuthError::Fetch {
        url: url.to_string(),
        reason,
    })
}

impl Inner {
    fn keys(&self) -> Arc<KeySet> {
        match self.keys.read() {
            Ok(k) => Arc::clone(&k),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Claims a fetch slot: true (and the clock restarted) if the last fetch or
    /// try is at least `jwks_min_refresh` ago.
    fn may_fetch(&self) -> bool {
        let mut last = match self.last_try.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        if last.elapsed() >= self.config.jwks_min_refresh {
            *last = Instant::now();
            true
        } else {
            false
        }
    }

    async fn refetch(&self) {
        match fetch_keys(&self.fetcher, &self.issuer.jwks_uri).await {
            Ok(set) => {
                tracing::debug!(keys = set.keys.len(), "fetched the issuer's key set");
                match self.keys.write() {
                    Ok(mut k) => *k = Arc::new(set),
                    Err(poisoned) => *poisoned.into_inner() = Arc::new(set),
                }
            }
            Err(e) => tracing::warn!(error = %e, "refetching the issuer's key set failed"),
        }
    }

    /// The verdict on a JWT whose header is read, with the key set at hand.
    fn check(&self, token: &str, header: &jsonwebtoken::Header, key: &Key) -> Verdict {
        let Some((_, validation)) = self.validations.iter().find(|(a, _)| *a == header.alg) else {
            return refuse("the token's algorithm is not allowed");
        };
        let claims = match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, validation) {
            Ok(d) => d.claims,
            Err(e) => return refuse(describe(e.kind())),
        };
        self.grant(&claims)
    }

    fn grant(&self, claims: &Map<String, Value>) -> Verdict {
        let c = &self.config;
        let principal = match claims.get(&c.principal_claim).and_then(Value::as_str) {
            Some(p) if !p.is_empty() && !p.chars().any(char::is_control) => p,
            _ => return refuse("the token names no principal (its principal claim is missing)"),
        };
        let tenant = match &c.tenant_claim {
            None => DEFAULT_TENANT,
            Some(name) => match claims.get(name) {
                None => DEFAULT_TENANT,
                Some(Value::String(t)) if !t.is_empty() && !t.chars().any(char::is_control) => {
                    t.as_str()
                }
                Some(_) => return refuse("the token's tenant claim is not a name"),
            },
        };
        let scopes: Vec<String> = match claims.get(&c.scope_claim) {
            Some(Value::String(s)) => s.split_ascii_whitespace().map(str::to_string).collect(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let has = |s: &str| scopes.iter().any(|x| x == s);
        let permissions = Permissions::new(has(&c.read_scope), has(&c.write_scope));
        Verdict::Accept(Grant {
            caller: Caller::new(tenant, principal).with_permissions(permissions),
            scopes,
        })
    }
}

fn refuse(why: &'static str) -> Verdict {
    Verdict::Refuse(Refusal::InvalidToken(why))
}

fn describe(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidAudience => "the token is for another audience",
        ErrorKind::InvalidIssuer => "the token is from another issuer",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud)",
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key",
        _ => "the token is malformed",
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate(&self, token: &str) -> Verdict {
        let inner = &self.inner;
        // A JWS in compact form: three base64url parts. Anything else is not
        // this authenticator's kind of token.
        if token.split('.').count() != 3 {
            return Verdict::Pass;
        }
        if token.len() > inner.config.max_token_bytes {
            return refuse("the token is too large");
        }
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            // `alg: none` (and any algorithm jsonwebtoken does not know) ends here.
            Err(_) => return refuse("the token's header is malformed or its algorithm unknown"),
        };
        if !inner.config.algorithms.contains(&header.alg) {
            return refuse("the token's algorithm is not allowed");
        }
        if inner.config.require_at_jwt
            && !header.typ.as_deref().is_some_and(|t| {
                t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt")
            })
        {
            return refuse("the token is not an RFC 9068 access token (typ at+jwt)");
        }
        let keys = inner.keys();
        if keys.fetched.elapsed() >= inner.config.jwks_max_age && inner.may_fetch() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let inner = Arc::clone(&self.inner);
                rt.spawn(async move {
                    let _one = inner.refetch.lock().await;
                    inner.refetch().await;
                });
            }
        }
        if let Some(key) = keys.find(header.kid.as_deref(), header.alg) {
            return inner.check(token, &header, key);
        }
        // A key id not seen yet: the issuer may have rotated its keys. Fetch
        // (at most once per interval), or wait for a fetch under way.
        let fetch = inner.may_fetch();
        if !fetch && inner.refetch.try_lock().is_ok() {
            return refuse("the token's signing key is unknown");
        }
        let inner = Arc::clone(&self.inner);
        let token = token.to_string();
        Verdict::Pending(Box::pin(async move {
            {
                let _one = inner.refetch.lock().await;
                if fetch {
                    inner.refetch().await;
                }
            }
            let keys = inner.keys();
            match keys.find(header.kid.as_deref(), header.alg) {
                Some(key) => inner.check(&token, &header, key),
                None => refuse("the token's signing key is unknown"),
            }
        }))
    }

    fn scheme(&self) -> Scheme {
        let c = &self.inner.config;
        Scheme::OAuth(Box::new(OAuthScheme {
            issuer: c.issuer.clone(),
            metadata_url: self.inner.issuer.metadata_url.to_string(),
            openid_url: self.inner.issuer.openid.clone(),
            token_endpoint: self.inner.issuer.token_endpoint.clone(),
            client_credentials: self.inner.issuer.client_credentials,
            scopes: [c.read_scope.clone(), c.write_scope.clone()],
        }))
    }
}

/// The audiences a server at `public_url` accepts by default: the URL itself
/// and its MCP endpoint (`{public_url}/mcp`), the resource identifiers of its
/// protected resource metadata.
pub fn default_audiences(public_url: &str) -> Vec<String> {
    let base = public_url.trim_end_matches('/');
    let mut v: Vec<String> = vec![base.to_string(), format!("{base}/mcp")];
    let mut seen = HashSet::new();
    v.retain(|a| seen.insert(a.clone()));
    v
}
