//! What the HTTP bindings (JSON-RPC and HTTP+JSON) and the card share: the
//! paths, the version and extension headers, and the header checks every
//! request goes through. Nothing here depends on another module of this crate
//! but `error`, so that the bindings, the card and the service can all use it.

use std::borrow::Cow;
use std::collections::HashMap;

use axum::http::{header, HeaderMap};

use crate::error::{A2aError, Result};
use taskwire_vocab::a2a::A2aErrorKind;

/// The HTTP+JSON binding's base path, as a literal for `concat!`.
macro_rules! rest_base {
    () => {
        "/a2a/rest"
    };
}
pub(crate) use rest_base;

/// The HTTP+JSON binding's base path under the public url (the card's
/// interface url).
pub const REST_PATH: &str = rest_base!();

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The HTTP header (and query parameter) carrying the requested version.
pub const VERSION_HEADER: &str = "A2A-Version";
/// The HTTP header listing requested extensions.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// What a request's `A2A-Version` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Requested {
    /// No `A2A-Version`, or an empty one, which A2A 1.0 §3.6.2 says MUST be
    /// read as 0.3. taskwire does not serve 0.3 yet: a request that is
    /// recognisably 0.3 (a 0.3 JSON-RPC method name, the 0.3 HTTP+JSON `/v1`
    /// prefix) is VersionNotSupported; one that exists only in 1.0 (a 1.0
    /// method name, the lf.a2a.v1 gRPC service) has no 0.3 reading and is
    /// served as 1.0.
    #[default]
    Unstated,
    /// `1`, `1.0` or `1.0.x`.
    V1_0,
    /// `1.1` or `1.1.x`: the A2A 1.1 draft ([`PROTOCOL_VERSION_1_1`]).
    V1_1,
}

impl Requested {
    /// Whether the answer is A2A 1.1 (with generations).
    pub fn is_1_1(self) -> bool {
        self == Requested::V1_1
    }
}

/// The draft version also served, when asked for by `A2A-Version: 1.1`: the
/// A2A repository's `dev-1.1` branch at commit 28491879 (2026-08-12, #1810).
pub const PROTOCOL_VERSION_1_1: &str = "1.1";

/// Reads a requested protocol version: absent or empty is
/// [`Requested::Unstated`]; `1`, `1.0` or any `1.0.x` is served; anything
/// else is VersionNotSupported.
pub fn negotiate(v: Option<&str>) -> Result<Requested> {
    let v = v.map(str::trim).unwrap_or("");
    if v.is_empty() {
        Ok(Requested::Unstated)
    } else if v == "1" || v == "1.0" || v.starts_with("1.0.") {
        Ok(Requested::V1_0)
    } else if v == "1.1" || v.starts_with("1.1.") {
        Ok(Requested::V1_1)
    } else {
        Err(version_not_supported(v))
    }
}

/// Checks a requested protocol version ([`negotiate`], the answer dropped).
pub fn check_version(v: Option<&str>) -> Result<()> {
    negotiate(v).map(|_| ())
}

fn version_not_supported(v: &str) -> A2aError {
    A2aError::new(
        A2aErrorKind::VersionNotSupported,
        format!(
            "A2A version {v:?} is not supported; this server speaks {PROTOCOL_VERSION} \
             (and the {PROTOCOL_VERSION_1_1} draft)"
        ),
    )
}

/// VersionNotSupported for a request without `A2A-Version` that is
/// recognisably A2A 0.3 (§3.6.2 reads the missing version as 0.3).
pub fn unstated_is_0_3(what: &str) -> A2aError {
    A2aError::new(
        A2aErrorKind::VersionNotSupported,
        format!(
            "{what} is A2A 0.3 (a request without A2A-Version is read as 0.3), which this \
             server does not serve; send A2A-Version: {PROTOCOL_VERSION} with the \
             {PROTOCOL_VERSION} methods"
        ),
    )
}

pub(crate) fn content_type_ok(headers: &HeaderMap) -> bool {
    match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        None => true,
        Some(ct) => {
            let base = ct.split(';').next().unwrap_or("").trim();
            base.eq_ignore_ascii_case("application/json")
                || base
                    .len()
                    .checked_sub(5)
                    .and_then(|i| base.get(i..))
                    .is_some_and(|end| end.eq_ignore_ascii_case("+json"))
                || base.is_empty()
        }
    }
}

/// The requested version: the `A2A-Version` header, else the query parameter (the
/// query string is only decoded when the header is absent).
pub(crate) fn requested_version<'a>(
    headers: &'a HeaderMap,
    query: Option<&str>,
) -> Option<Cow<'a, str>> {
    if let Some(v) = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(Cow::Borrowed(v));
    }
    let query = query?;
    let mut params: HashMap<String, String> = serde_urlencoded::from_str(query).ok()?;
    params.remove(VERSION_HEADER).map(Cow::Owned)
}

/// The `Last-Event-ID` header, when it is a sequence number.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
}
