//! The crate's error type: configuration and discovery failures (never a
//! request's refusal, which is a [`crate::Refusal`]).

/// Why an authenticator could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A URL is not usable (not a URL, not https on a non-loopback host, …).
    #[error("{what} {url:?}: {reason}")]
    Url {
        /// Which URL (`issuer`, `jwks_uri`, …).
        what: &'static str,
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A fetch failed (network, timeout, status, size, JSON).
    #[error("fetching {url}: {reason}")]
    Fetch {
        /// The URL fetched.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// No metadata document of the issuer could be read, or none names it.
    #[error("no authorization server metadata for issuer {issuer:?} ({tried})")]
    Discovery {
        /// The configured issuer.
        issuer: String,
        /// What each attempt answered.
        tried: String,
    },
    /// The configuration is inconsistent.
    #[error("{0}")]
    Config(String),
}
