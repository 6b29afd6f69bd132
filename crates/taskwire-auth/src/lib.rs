//! Identity on every surface: the [`Authenticator`] the taskwire server asks for
//! each request (token in; caller, permissions and scopes out, or a typed
//! [`Refusal`]), and the JSON Web Token validator for access tokens from an
//! OpenID Connect / OAuth 2.0 issuer ([`jwt::JwtAuthenticator`]).
//!
//! The server asks one [`Authenticators`] chain: each authenticator in turn
//! either accepts a token, refuses it (it is its kind of token but not valid), or
//! passes (not its kind: the next one is asked). Several can be active at once
//! (a token file and an issuer, say); an embedder plugs in their own by
//! implementing [`Authenticator`].
//!
//! What a grant may do is in its caller's [`Permissions`]: the task core refuses
//! an operation the permissions do not cover with
//! [`CoreError::Forbidden`](taskwire_core::CoreError::Forbidden), which every
//! adapter answers with its protocol's own "forbidden".

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use taskwire_core::{Caller, Permission, Permissions};

mod error;
mod fetch;
pub mod jwt;
pub mod resource;

pub use error::AuthError;

/// A boxed future, for an authenticator's answer that needs I/O.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What an accepted token stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Who calls, and what the token lets them do ([`Caller::permissions`]).
    pub caller: Caller,
    /// The scopes the token was granted (empty for a credential without scopes,
    /// such as a token-file token, which grants every permission).
    pub scopes: Vec<String>,
}

impl Grant {
    /// A grant for `caller` with no scopes.
    pub fn new(caller: Caller) -> Self {
        Self {
            caller,
            scopes: Vec::new(),
        }
    }
}

/// Why a request was not authenticated. Each becomes a 401 (gRPC
/// `UNAUTHENTICATED`) with an RFC 6750 `WWW-Authenticate: Bearer` challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header (the challenge carries no error code).
    Missing,
    /// The header is not `Bearer TOKEN` (`invalid_request`).
    Malformed,
    /// The token is not valid (`invalid_token`), with a description that is safe
    /// to show: it names what was wrong, never the token or a claim's value.
    InvalidToken(&'static str),
}

impl Refusal {
    /// The RFC 6750 error code of the challenge, if any.
    pub fn error_code(self) -> Option<&'static str> {
        match self {
            Refusal::Missing => None,
            Refusal::Malformed => Some("invalid_request"),
            Refusal::InvalidToken(_) => Some("invalid_token"),
        }
    }

    /// A message for the caller.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Missing => "missing Authorization header: send `Authorization: Bearer TOKEN`",
            Refusal::Malformed => "malformed Authorization header: expected `Bearer TOKEN`",
            Refusal::InvalidToken(why) => why,
        }
    }
}

/// The description of a token no authenticator knows.
pub const UNKNOWN_TOKEN: &str = "unknown bearer token";

/// An authenticator's answer about one token.
pub enum Verdict {
    /// The token is valid.
    Accept(Grant),
    /// The token is of this authenticator's kind but not valid: no other
    /// authenticator is asked.
    Refuse(Refusal),
    /// Not this authenticator's kind of token: the next one is asked.
    Pass,
    /// The answer needs I/O first (a JSON Web Key Set refetch for a key id not
    /// seen yet). Never returned for a token whose key is known.
    Pending(BoxFuture<Verdict>),
}

impl std::fmt::Debug for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Accept(g) => f.debug_tuple("Accept").field(g).finish(),
            Verdict::Refuse(r) => f.debug_tuple("Refuse").field(r).finish(),
            Verdict::Pass => f.write_str("Pass"),
            Verdict::Pending(_) => f.write_str("Pending"),
        }
    }
}

impl Verdict {
    /// Waits for a pending verdict.
    pub async fn resolve(self) -> Verdict {
        let mut v = self;
        while let Verdict::Pending(f) = v {
            v = f.await;
        }
        v
    }
}

/// Decides who presented a bearer token.
///
/// `authenticate` is called on the request path for every request: it must
/// answer without I/O whenever it can (return [`Verdict::Pending`] only when it
/// cannot, bounded in time), and never log the token.
pub trait Authenticator: Send + Sync + 'static {
    /// The verdict on `token` (the part after `Bearer `).
    fn authenticate(&self, token: &str) -> Verdict;

    /// How clients obtain a token this authenticator accepts, for the A2A card
    /// and the protected resource metadata.
    fn scheme(&self) -> Scheme {
        Scheme::Bearer
    }
}

/// How clients obtain a token an [`Authenticator`] accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheme {
    /// A bearer token handed out by the operator (the token file).
    Bearer,
    /// An access token from an OAuth 2.0 / OpenID Connect authorization server.
    OAuth(Box<OAuthScheme>),
}

/// An OAuth 2.0 / OpenID Connect issuer an authenticator accepts tokens from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthScheme {
    /// The issuer identifier.
    pub issuer: String,
    /// The URL its metadata was read from (RFC 8414 or OpenID Connect
    /// Discovery).
    pub metadata_url: String,
    /// Its OpenID Connect discovery URL, if it is an OpenID provider.
    pub openid_url: Option<String>,
    /// Its token endpoint, if it names one.
    pub token_endpoint: Option<String>,
    /// Whether it offers the client credentials grant (its metadata lists it,
    /// or lists no grants at all).
    pub client_credentials: bool,
    /// The scopes taskwire checks: read, then write.
    pub scopes: [String; 2],
}

impl OAuthScheme {
    /// An issuer whose metadata is at `metadata_url`, for the read and write
    /// scopes `scopes`.
    pub fn new(
        issuer: impl Into<String>,
        metadata_url: impl Into<String>,
        scopes: [String; 2],
    ) -> Self {
        Self {
            issuer: issuer.into(),
            metadata_url: metadata_url.into(),
            openid_url: None,
            token_endpoint: None,
            client_credentials: false,
            scopes,
        }
    }
}

/// Authenticators asked in order (see the [crate documentation](crate)).
#[derive(Clone, Default)]
pub struct Authenticators {
    list: Arc<[Arc<dyn Authenticator>]>,
}

impl std::fmt::Debug for Authenticators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticators")
            .field("count", &self.list.len())
            .finish()
    }
}

impl Authenticators {
    /// A chain asking `list` in order.
    pub fn new(list: Vec<Arc<dyn Authenticator>>) -> Self {
        Self { list: list.into() }
    }

    /// True if there is no authenticator (nobody is authenticated).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The authenticators, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Authenticator>> {
        self.list.iter()
    }

    /// The schemes of the authenticators, in order.
    pub fn schemes(&self) -> Vec<Scheme> {
        self.list.iter().map(|a| a.scheme()).collect()
    }

    /// The verdict of the chain on `token`: the first accept or refusal; a token
    /// every authenticator passes on is refused as unknown. Never
    /// [`Verdict::Pass`].
    pub fn authenticate(&self, token: &str) -> Verdict {
        for (i, a) in self.list.iter().enumerate() {
            match a.authenticate(token) {
                Verdict::Pass => continue,
                Verdict::Pending(f) => {
                    return Verdict::Pending(self.clone().finish(i, token.to_string(), f))
                }
                done => return done,
            }
        }
        Verdict::Refuse(Refusal::InvalidToken(UNKNOWN_TOKEN))
    }

    /// Waits for authenticator `i`'s pending verdict, then goes on down the chain.
    fn finish(self, mut i: usize, token: String, first: BoxFuture<Verdict>) -> BoxFuture<Verdict> {
        Box::pin(async move {
            let mut v = first.await;
            loop {
                match v {
                    Verdict::Pending(f) => v = f.await,
                    Verdict::Pass => {
                        i += 1;
                        match self.list.get(i) {
                            Some(a) => v = a.authenticate(&token),
                            None => return Verdict::Refuse(Refusal::InvalidToken(UNKNOWN_TOKEN)),
                        }
                    }
                    done => return done,
                }
            }
        })
    }

    /// The verdict on an `Authorization` header value (None: no header):
    /// `Bearer TOKEN`, the scheme case-insensitive (RFC 6750 §2.1; never a query
    /// parameter).
    pub fn authenticate_header(&self, authorization: Option<&str>) -> Verdict {
        let Some(value) = authorization else {
            return Verdict::Refuse(Refusal::Missing);
        };
        match bearer_token(value) {
            Some(token) => self.authenticate(token),
            None => Verdict::Refuse(Refusal::Malformed),
        }
    }
}

/// Extracts the token from `Bearer TOKEN` (scheme case-insensitive).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(&'static str, Option<Caller>);

    impl Authenticator for Fixed {
        fn authenticate(&self, token: &str) -> Verdict {
            if token != self.0 {
                return Verdict::Pass;
            }
            match &self.1 {
                Some(c) => Verdict::Accept(Grant::new(c.clone())),
                None => Verdict::Refuse(Refusal::InvalidToken("bad")),
            }
        }
    }

    struct Later(Arc<dyn Authenticator>);

    impl Authenticator for Later {
        fn authenticate(&self, token: &str) -> Verdict {
            let v = self.0.authenticate(token);
            Verdict::Pending(Box::pin(async move { v }))
        }
    }

    #[tokio::test]
    async fn the_chain_asks_in_order_until_one_decides() {
        let alice = Caller::new("t", "alice");
        let bob = Caller::new("t", "bob");
        let chain = Authenticators::new(vec![
            Arc::new(Fixed("a", Some(alice.clone()))),
            Arc::new(Later(Arc::new(Fixed("b", Some(bob.clone()))))),
            Arc::new(Fixed("x", None)),
        ]);
        let caller = |v: Verdict| async move {
            match v.resolve().await {
                Verdict::Accept(g) => Ok(g.caller),
                Verdict::Refuse(r) => Err(r),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            caller(chain.authenticate_header(Some("Bearer a"))).await,
            Ok(alice)
        );
        assert_eq!(
            caller(chain.authenticate_header(Some("bearer  b "))).await,
            Ok(bob)
        );
        assert_eq!(
            caller(chain.authenticate_header(Some("Bearer x"))).await,
            Err(Refusal::InvalidToken("bad"))
        );
        assert_eq!(
            caller(chain.authenticate_header(Some("Bearer zz"))).await,
            Err(Refusal::InvalidToken(UNKNOWN_TOKEN))
        );
        assert_eq!(
            caller(chain.authenticate_header(None)).await,
            Err(Refusal::Missing)
        );
        assert_eq!(
            caller(chain.authenticate_header(Some("Basic a"))).await,
            Err(Refusal::Malformed)
        );
        assert_eq!(
            caller(Authenticators::default().authenticate("a")).await,
            Err(Refusal::InvalidToken(UNKNOWN_TOKEN))
        );
    }
}
