//! Authentication: who the caller of a request is.
//!
//! Without configuration every request is made by [`Caller::local`]. With a token
//! table, every request to a mounted route must carry `Authorization: Bearer TOKEN`
//! with a known token; the token names the principal and the tenant. Handlers read
//! the result as the [`Caller`] request extension (`axum::Extension<Caller>`).
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
use taskwire_core::Caller;

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

/// How requests to mounted routes are authenticated.
#[derive(Clone, Debug, Default)]
pub enum AuthConfig {
    /// No authentication: every caller is [`Caller::local`]. Only safe on a loopback
    /// address; the builder refuses anything else unless told otherwise.
    #[default]
    Local,
    /// Bearer tokens: a request without a known token gets 401.
    Tokens(Arc<TokenTable>),
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

    /// True if requests are authenticated.
    pub fn is_authenticated(&self) -> bool {
        matches!(self, Self::Tokens(_))
    }

    /// Who made a request, from its `Authorization` header value (if any).
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Caller, AuthFailure> {
        match self {
            Self::Local => Ok(Caller::local()),
            Self::Tokens(table) => {
                let value = authorization.ok_or(AuthFailure::Missing)?;
                let token = bearer_token(value).ok_or(AuthFailure::Malformed)?;
                table.lookup(token).cloned().ok_or(AuthFailure::Unknown)
            }
        }
    }
}

/// Extracts the token from `Bearer TOKEN` (scheme case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Why a request was not authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization` header.
    Missing,
    /// The header is not `Bearer TOKEN`.
    Malformed,
    /// The token is not known.
    Unknown,
}

impl AuthFailure {
    fn message(self) -> &'static str {
        match self {
            Self::Missing => "missing Authorization header: send `Authorization: Bearer TOKEN`",
            Self::Malformed => "malformed Authorization header: expected `Bearer TOKEN`",
            Self::Unknown => "unknown bearer token",
        }
    }
}

impl IntoResponse for AuthFailure {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": { "code": "unauthenticated", "message": self.message() }
        });
        let mut res = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
        res.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"taskwire\""),
        );
        res
    }
}

impl AuthFailure {
    /// The answer to a request that failed authentication: a gRPC status
    /// `UNAUTHENTICATED` (16) to a gRPC request (`content-type: application/grpc…`,
    /// which a gRPC client can read), else 401 with a JSON error body.
    pub fn response_to(self, request: &HeaderMap) -> Response {
        let grpc = request
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/grpc"));
        if !grpc {
            return self.into_response();
        }
        let mut res = StatusCode::OK.into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        h.insert("grpc-status", HeaderValue::from_static("16"));
        if let Ok(v) = HeaderValue::from_str(&grpc_message(self.message())) {
            h.insert("grpc-message", v);
        }
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"taskwire\""),
        );
        res
    }
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

/// The caller of a request, or why it has none (logged at debug level; answer it
/// with [`AuthFailure::response_to`]). The server's one authentication layer
/// (`crate::edge`) calls this.
pub(crate) fn caller_of(auth: &AuthConfig, req: &Request) -> Result<Caller, AuthFailure> {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or(""));
    auth.authenticate(header).inspect_err(|f| {
        tracing::debug!(reason = ?f, path = %req.uri().path(), "unauthenticated request");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(auth.authenticate(None), Err(AuthFailure::Missing));
        assert_eq!(
            auth.authenticate(Some("Basic s3cret")),
            Err(AuthFailure::Malformed)
        );
        assert_eq!(
            auth.authenticate(Some("Bearer")),
            Err(AuthFailure::Malformed)
        );
        assert_eq!(
            auth.authenticate(Some("Bearer nope")),
            Err(AuthFailure::Unknown)
        );
        assert_eq!(AuthConfig::Local.authenticate(None), Ok(Caller::local()));
    }
}
