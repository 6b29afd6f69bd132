//! Authentication: who the caller of a request is.
//!
//! Without configuration every request is made by [`Caller::local`]. Otherwise
//! every request to a mounted route must carry `Authorization: Bearer TOKEN` with
//! a token one of the configured [`Authenticator`]s accepts (the token file's
//! [`TokenTable`], the OAuth issuer's `taskwire_auth::jwt::JwtAuthenticator`, an
//! embedder's own); the grant names the principal, the tenant and the
//! permissions. Handlers read the result as the [`Caller`] request extension
//! (`axum::Extension<Caller>`).
//!
//! # Token file format
//!
//! One token per line, `TOKEN PRINCIPAL [TENANT]`, separated by spaces or tabs. The
//! tenant defaults to `default`. Blank lines and lines whose first non-blank
//! character is `#` are ignored. A malformed line, a duplicate token, a token that
//! no `Authorization: Bearer` header could carry (anything but visible ASCII; RFC
//! 6750's `b64token` characters `A-Z a-z 0-9 - . _ ~ + /` and trailing `=` are the
//! portable choice) or a file with no token at all is an error that names the line.
//!
//! ```text
//! # token                            principal   tenant
//! 3f9a0c6e2b7d41e8a5c2f0d9b8e7a6c1   alice       acme
//! 9b1d7e3c5a2f48d6b0e4c8a1f3d5e7b9   ci-bot
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use taskwire_auth::resource::{metadata_url, Challenge, ResourceMetadata, WELL_KNOWN};
pub use taskwire_auth::{
    bearer_token, Authenticator, Authenticators, Grant, OAuthScheme, Refusal, Scheme, Verdict,
};
use taskwire_core::{Caller, Permission, Permissions};

use crate::error::Error;

/// The tenant of a token line that names none.
pub const DEFAULT_TENANT: &str = "default";

/// One known bearer token.
#[derive(Clone)]
struct TokenEntry {
    token: Vec<u8>,
    caller: Caller,
}

/// Bearer tokens and the callers they stand for.
#[derive(Clone, Default)]
pub struct TokenTable {
    entries: Vec<TokenEntry>,
}

impl std::fmt::Debug for TokenTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("TokenTable")
            .field("tokens", &self.entries.len())
            .finish()
    }
}

impl TokenTable {
    /// An empty table (which authenticates nobody).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a token. Returns false (and changes nothing) if the token is already known.
    pub fn insert(&mut self, token: impl Into<String>, caller: Caller) -> bool {
        let token = token.into().into_bytes();
        if self.entries.iter().any(|e| e.token == token) {
            return false;
        }
        self.entries.push(TokenEntry { token, caller });
        true
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there is no token.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses the token file format (see the [module documentation](self)).
    /// `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        let err = |line: usize, reason: String| Error::TokenFile {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut table = Self::new();
        // A byte order mark opening the file is an encoding mark, not text.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            // Fields are separated by ASCII blanks only: other Unicode white space
            // (a no-break space, say) stays inside its field, where it makes a
            // token unusable and is refused below rather than silently splitting it.
            let line = raw.trim_matches(|c: char| c.is_ascii_whitespace());
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let (token, principal, tenant) = match fields.as_slice() {
                [token, principal] => (*token, *principal, DEFAULT_TENANT),
                [token, principal, tenant] => (*token, *principal, *tenant),
                _ => {
                    return Err(err(
                        line_no,
                        format!(
                            "expected `TOKEN PRINCIPAL [TENANT]`, found {} field{}",
                            fields.len(),
                            if fields.len() == 1 { "" } else { "s" }
                        ),
                    ))
                }
            };
            // A presented token is read from a header value as visible ASCII
            // (`HeaderValue::to_str`, then `bearer_token` splits and trims it), so a
            // token with any other character could never match: refuse it now. The
            // message names the position and code point, never the token.
            if let Some((at, c)) = token
                .chars()
                .enumerate()
                .find(|(_, c)| !c.is_ascii_graphic())
            {
                return Err(err(
                    line_no,
                    format!(
                        "the token's character {} is U+{:04X}, which no `Authorization: Bearer` \
                         header can carry: tokens are visible ASCII (RFC 6750 b64token: \
                         A-Z a-z 0-9 - . _ ~ + / and trailing =)",
                        at + 1,
                        u32::from(c)
                    ),
                ));
            }
            if let Some(c) = principal
                .chars()
                .chain(tenant.chars())
                .find(|c| c.is_control())
            {
                return Err(err(line_no, format!("control character {c:?} in the line")));
            }
            if !table.insert(token, Caller::new(tenant, principal)) {
                return Err(err(
                    line_no,
                    "duplicate token (each token may name only one principal)".into(),
                ));
            }
        }
        if table.is_empty() {
            return Err(err(0, "the file defines no token".into()));
        }
        Ok(table)
    }

    /// Reads and parses a token file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::TokenFileRead {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// The caller a presented token stands for. Every entry is compared in constant
    /// time, so the time taken does not tell how much of a token matched.
    pub fn lookup(&self, presented: &str) -> Option<&Caller> {
        let presented = presented.as_bytes();
        let mut found = None;
        for e in &self.entries {
            if constant_time_eq(&e.token, presented) && found.is_none() {
                found = Some(&e.caller);
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Authenticator for TokenTable {
    /// A known token is accepted with every permission; any other is passed on
    /// (a JWT, say, for the next authenticator).
    fn authenticate(&self, token: &str) -> Verdict {
        match self.lookup(token) {
            Some(c) => Verdict::Accept(Grant::new(c.clone())),
            None => Verdict::Pass,
        }
    }
}

/// How requests to mounted routes are authenticated.
#[derive(Clone, Debug, Default)]
pub enum AuthConfig {
    /// No authentication: every caller is [`Caller::local`]. Only safe on a loopback
    /// address; the builder refuses anything else unless told otherwise.
    #[default]
    Local,
    /// Bearer tokens: a request without a known token gets 401.
    Tokens(Arc<TokenTable>),
    /// Authenticators asked in order (a token file, an OAuth issuer, one of the
    /// embedder's own); a request none accepts gets 401.
    Chain(Authenticators),
}

impl AuthConfig {
    /// Bearer-token authentication with this table.
    pub fn tokens(table: TokenTable) -> Self {
        Self::Tokens(Arc::new(table))
    }

    /// Bearer-token authentication from a token file.
    pub fn token_file(path: impl Into<PathBuf>) -> Result<Self, Error> {
        Ok(Self::tokens(TokenTable::load(path.into())?))
    }

    /// Authentication by these authenticators, asked in order.
    pub fn chain(list: Vec<Arc<dyn Authenticator>>) -> Self {
        Self::Chain(Authenticators::new(list))
    }

    /// True if requests are authenticated.
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Self::Local)
    }

    /// The authenticators asked (None: no authentication).
    pub fn authenticators(&self) -> Option<Authenticators> {
        match self {
            Self::Local => None,
            Self::Tokens(t) => Some(Authenticators::new(vec![
                Arc::clone(t) as Arc<dyn Authenticator>
            ])),
            Self::Chain(c) => Some(c.clone()),
        }
    }

    /// How clients obtain a token, one entry per authenticator.
    pub fn schemes(&self) -> Vec<Scheme> {
        self.authenticators()
            .map(|a| a.schemes())
            .unwrap_or_default()
    }
}

/// What the edge tells clients of an OAuth-protected server: where its RFC 9728
/// metadata is and which scopes it checks.
#[derive(Clone, Debug)]
pub(crate) struct ResourceInfo {
    /// The metadata URL of the server's own resource (`/.well-known/…`).
    pub(crate) metadata: String,
    /// The metadata URL of the MCP endpoint (`/.well-known/…/mcp`).
    pub(crate) mcp_metadata: String,
    /// The read scope, then the write scope.
    pub(crate) scopes: [String; 2],
}

impl ResourceInfo {
    /// The metadata URL for a request to `path`: the MCP endpoint's under `/mcp`.
    fn metadata_for(&self, path: &str) -> &str {
        if path == "/mcp" || path.starts_with("/mcp/") {
            &self.mcp_metadata
        } else {
            &self.metadata
        }
    }

    /// The scopes a caller with `p` lacks, space-separated (None: it lacks none).
    pub(crate) fn missing_scopes(&self, p: Permissions) -> Option<String> {
        let [read, write] = &self.scopes;
        match (p.allows(Permission::Read), p.allows(Permission::Write)) {
            (_, true) => None,
            (true, false) => Some(write.clone()),
            (false, false) => Some(format!("{read} {write}")),
        }
    }

    /// The `WWW-Authenticate` value of a 403 for a caller with `p` on `path`.
    pub(crate) fn insufficient_scope(&self, p: Permissions, path: &str) -> Option<HeaderValue> {
        let scope = self.missing_scopes(p)?;
        let c = Challenge {
            error: Some("insufficient_scope"),
            scope: Some(&scope),
            resource_metadata: Some(self.metadata_for(path)),
            ..Challenge::default()
        };
        HeaderValue::from_str(&c.to_header()).ok()
    }
}

/// The route patterns of the RFC 9728 metadata.
pub(crate) const METADATA_PATTERNS: [&str; 2] =
    [WELL_KNOWN, "/.well-known/oauth-protected-resource/mcp"];

/// For a configuration with an OAuth issuer: what the edge tells clients, and
/// the public routes of the RFC 9728 metadata of the server
/// (`/.well-known/oauth-protected-resource`, resource `public_url`) and of its
/// MCP endpoint (`/.well-known/oauth-protected-resource/mcp`, resource
/// `{public_url}/mcp`, the canonical URI MCP clients use).
pub(crate) fn protected_resource(
    auth: &AuthConfig,
    public_url: &str,
    name: &str,
) -> Option<(ResourceInfo, axum::Router)> {
    let issuers: Vec<OAuthScheme> = auth
        .schemes()
        .into_iter()
        .filter_map(|s| match s {
            Scheme::OAuth(o) => Some(*o),
            _ => None,
        })
        .collect();
    let first = issuers.first()?;
    let scopes = first.scopes.clone();
    let servers: Vec<String> = issuers.iter().map(|o| o.issuer.clone()).collect();
    let mut supported: Vec<String> = Vec::new();
    for o in &issuers {
        for s in &o.scopes {
            if !supported.contains(s) {
                supported.push(s.clone());
            }
        }
    }
    let mcp = format!("{public_url}/mcp");
    let doc = |resource: &str| {
        ResourceMetadata::new(resource, servers.clone(), supported.clone()).with_name(name)
    };
    let json = |d: ResourceMetadata| bytes::Bytes::from(serde_json::to_vec(&d).unwrap_or_default());
    let (root_doc, mcp_doc) = (json(doc(public_url)), json(doc(&mcp)));
    let info = ResourceInfo {
        metadata: metadata_url(public_url)?,
        mcp_metadata: metadata_url(&mcp)?,
        scopes,
    };
    let serve = |d: bytes::Bytes| {
        axum::routing::get(move || {
            let d = d.clone();
            async move {
                (
                    [
                        (header::CONTENT_TYPE, "application/json"),
                        (header::CACHE_CONTROL, "public, max-age=3600"),
                    ],
                    d,
                )
            }
        })
    };
    let router = axum::Router::new()
        .route(METADATA_PATTERNS[0], serve(root_doc))
        .route(METADATA_PATTERNS[1], serve(mcp_doc));
    Some((info, router))
}

/// The answer to a request that failed authentication: 401 with a JSON error
/// body and an RFC 6750 challenge (naming the RFC 9728 metadata and the scopes
/// when an OAuth issuer is configured); to a gRPC request (`content-type:
/// application/grpc…`, which a gRPC client can read) the gRPC status
/// `UNAUTHENTICATED` (16) instead.
pub(crate) fn refusal_response(
    refusal: Refusal,
    request: &HeaderMap,
    path: &str,
    resource: Option<&ResourceInfo>,
) -> Response {
    let scope = resource.map(|r| format!("{} {}", r.scopes[0], r.scopes[1]));
    let challenge = Challenge {
        error: refusal.error_code(),
        description: match refusal {
            Refusal::Missing => None,
            other => Some(other.message()),
        },
        scope: scope.as_deref(),
        resource_metadata: resource.map(|r| r.metadata_for(path)),
    };
    let challenge = HeaderValue::from_str(&challenge.to_header())
        .unwrap_or(HeaderValue::from_static("Bearer realm=\"taskwire\""));
    let grpc = request
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"));
    if !grpc {
        let body = serde_json::json!({
            "error": { "code": "unauthenticated", "message": refusal.message() }
        });
        let mut res = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
        res.headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
        return res;
    }
    let mut res = StatusCode::OK.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    h.insert("grpc-status", HeaderValue::from_static("16"));
    if let Ok(v) = HeaderValue::from_str(&grpc_message(refusal.message())) {
        h.insert("grpc-message", v);
    }
    h.insert(header::WWW_AUTHENTICATE, challenge);
    res
}

/// `grpc-message` text: percent-encoded outside printable ASCII, and `%` itself.
fn grpc_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The verdict on a request's credentials (refusals are logged at debug
/// level, never with the token). The server's one authentication layer
/// (`crate::edge`) calls this.
pub(crate) fn verdict_of(auth: &Authenticators, req: &Request) -> Verdict {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or(""));
    let v = auth.authenticate_header(header);
    if let Verdict::Refuse(r) = &v {
        tracing::debug!(reason = ?r, path = %req.uri().path(), "unauthenticated request");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict of a configuration whose authenticators answer at once.
    trait AuthenticateNow {
        fn authenticate(&self, header: Option<&str>) -> Result<Caller, Refusal>;
    }

    impl AuthenticateNow for AuthConfig {
        fn authenticate(&self, header: Option<&str>) -> Result<Caller, Refusal> {
            match self.authenticators() {
                None => Ok(Caller::local()),
                Some(a) => match a.authenticate_header(header) {
                    Verdict::Accept(g) => Ok(g.caller),
                    Verdict::Refuse(r) => Err(r),
                    other => panic!("{other:?}"),
                },
            }
        }
    }

    fn parse(s: &str) -> Result<TokenTable, Error> {
        TokenTable::parse(s, Path::new("tokens.txt"))
    }

    fn line_of(e: Error) -> (usize, String) {
        match e {
            Error::TokenFile { line, reason, .. } => (line, reason),
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn parses_tokens_comments_and_default_tenant() {
        let t = parse("# comment\n\n  tok1 alice acme\ntok2\tbob\n   # indented comment\n")
            .expect("valid file");
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup("tok1"), Some(&Caller::new("acme", "alice")));
        assert_eq!(t.lookup("tok2"), Some(&Caller::new("default", "bob")));
        assert_eq!(t.lookup("tok"), None);
        assert_eq!(t.lookup(""), None);
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let (line, reason) = line_of(parse("a b c\nonlytoken\n").expect_err("bad line"));
        assert_eq!(line, 2);
        assert!(reason.contains("found 1 field"), "{reason}");
        let (line, reason) = line_of(parse("# x\na b c d\n").expect_err("bad line"));
        assert_eq!(line, 2);
        assert!(reason.contains("found 4 fields"), "{reason}");
        let (line, reason) = line_of(parse("a b\nc d\na e\n").expect_err("duplicate"));
        assert_eq!(line, 3);
        assert!(reason.contains("duplicate"), "{reason}");
        let (line, reason) = line_of(parse("# only comments\n\n").expect_err("empty"));
        assert_eq!(line, 0);
        assert!(reason.contains("no token"), "{reason}");
        let (line, _) = line_of(parse("a b\u{7} c\n").expect_err("control"));
        assert_eq!(line, 1);
    }

    #[test]
    fn tokens_no_bearer_header_can_carry_are_refused_with_their_line() {
        for (file, line, at) in [
            ("ok1 alice\ntök alice\n", 2, "character 2 is U+00F6"),
            (
                "# c\n\nok1 a\nok2 b\n\u{e9}t\u{e9} c acme\n",
                5,
                "character 1 is U+00E9",
            ),
            ("tok\u{200b}en alice\n", 1, "character 4 is U+200B"),
            // A no-break space is part of the token, not a separator.
            ("abc\u{a0}def alice\n", 1, "character 4 is U+00A0"),
            ("abc\u{7f} alice\n", 1, "character 4 is U+007F"),
            ("a\u{1}b alice\n", 1, "character 2 is U+0001"),
            (
                "\u{feff}ok alice\n\u{feff}tok bob\n",
                2,
                "character 1 is U+FEFF",
            ),
        ] {
            let (got, reason) = line_of(parse(file).expect_err(file));
            assert_eq!(got, line, "{file:?}: {reason}");
            assert!(reason.contains(at), "{file:?}: {reason}");
            assert!(reason.contains("b64token"), "{reason}");
        }
        // The reason never shows the token.
        let (_, reason) = line_of(parse("s3cr\u{e9}t alice\n").expect_err("non-ASCII"));
        assert!(!reason.contains("s3cr"), "{reason}");
        // A byte order mark opening the file is not part of the first token.
        let t = parse("\u{feff}tok1 alice\n").expect("valid file");
        assert_eq!(t.lookup("tok1"), Some(&Caller::new("default", "alice")));
        // Principals and tenants may be any printable text.
        let t = parse("tok1 jos\u{e9} \u{e9}quipe\n").expect("valid file");
        assert_eq!(
            t.lookup("tok1"),
            Some(&Caller::new("\u{e9}quipe", "jos\u{e9}"))
        );
    }

    /// Every token the parser accepts can be presented (`Bearer TOKEN` is a valid
    /// header value which, read back as the server reads it, authenticates), and
    /// every one it refuses could not have been.
    #[test]
    fn a_token_is_accepted_exactly_when_a_header_can_present_it() {
        let mut accepted = 0;
        for cp in (0u32..0x300).chain([0x2028, 0x3000, 0xfeff, 0x1f600]) {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            if c.is_ascii_whitespace() {
                continue; // ASCII blanks and line breaks separate fields and lines
            }
            let token = format!("ab{c}cd");
            let header = HeaderValue::from_str(&format!("Bearer {token}"));
            let presented = header.as_ref().ok().and_then(|h| h.to_str().ok());
            match parse(&format!("{token} alice\n")) {
                Ok(table) => {
                    accepted += 1;
                    let presented =
                        presented.unwrap_or_else(|| panic!("U+{cp:04X}: no header value"));
                    assert_eq!(
                        AuthConfig::tokens(table).authenticate(Some(presented)),
                        Ok(Caller::new("default", "alice")),
                        "U+{cp:04X}"
                    );
                }
                Err(e) => {
                    assert_eq!(line_of(e).0, 1, "U+{cp:04X}");
                    let mut t = TokenTable::new();
                    t.insert(token.clone(), Caller::new("default", "alice"));
                    let could = presented
                        .is_some_and(|p| AuthConfig::tokens(t).authenticate(Some(p)).is_ok());
                    assert!(!could, "U+{cp:04X} was refused but could authenticate");
                }
            }
        }
        // Exactly the 94 visible ASCII characters.
        assert_eq!(accepted, 94);
    }

    #[test]
    fn bearer_header_forms() {
        let mut t = TokenTable::new();
        t.insert("s3cret", Caller::new("t", "p"));
        let auth = AuthConfig::tokens(t);
        assert_eq!(
            auth.authenticate(Some("Bearer s3cret")),
            Ok(Caller::new("t", "p"))
        );
        assert_eq!(
            auth.authenticate(Some("bearer   s3cret ")),
            Ok(Caller::new("t", "p"))
        );
        assert_eq!(auth.authenticate(None), Err(Refusal::Missing));
        assert_eq!(
            auth.authenticate(Some("Basic s3cret")),
            Err(Refusal::Malformed)
        );
        assert_eq!(auth.authenticate(Some("Bearer")), Err(Refusal::Malformed));
        assert_eq!(
            auth.authenticate(Some("Bearer nope")),
            Err(Refusal::InvalidToken(taskwire_auth::UNKNOWN_TOKEN))
        );
        assert_eq!(AuthConfig::Local.authenticate(None), Ok(Caller::local()));
    }
}
